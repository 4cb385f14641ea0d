//! Validated settings the library takes. The CLI turns its flags into a `Config`;
//! the library never sees clap.

/// Caps that keep memory bounded on hostile input.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest record read, in bytes: a JSONL line, a HAR entry, a JSON-array element,
    /// an HTTP body, the event data one SSE stream keeps.
    pub max_record_bytes: usize,
    /// Most bytes a compressed input may expand to.
    pub max_decompressed_bytes: u64,
    /// Largest SSE event (and SSE line).
    pub max_event_bytes: usize,
    /// Most SSE events kept per stream or body (`--max-stream-events`); later ones
    /// are counted.
    pub max_stream_events: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_record_bytes: 16 << 20,
            max_decompressed_bytes: 4 << 30,
            max_event_bytes: crate::sse::DEFAULT_EVENT_CAP,
            max_stream_events: crate::sse::DEFAULT_STREAM_EVENTS,
        }
    }
}

/// Everything one analysis run needs besides its inputs.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub limits: Limits,
    /// Worker threads; 0 lets rayon decide.
    pub threads: usize,
}
