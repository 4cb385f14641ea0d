//! Validated settings the library takes. The CLI turns its flags into a `Config`;
//! the library never sees clap.

use crate::ingest::tls::KeyLog;
use std::sync::Arc;

/// Caps that keep memory bounded on hostile input.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest record read, in bytes: a JSONL line, a HAR entry, a JSON-array element,
    /// an HTTP body, the event data one SSE stream keeps; 8 times it bounds what the
    /// bodies in flight of a capture keep together.
    pub max_record_bytes: usize,
    /// Most bytes a compressed input may expand to: one budget for the input and
    /// everything inside it (every layer, every archive member, nested archives).
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

/// How close a re-send must follow the earlier attempt to be a retry candidate
/// rather than a re-invocation (`docs/findings.md`, "What a repeat is").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryWindows {
    /// After an attempt that failed or never ended: a re-send within this long of
    /// its end (plus any `Retry-After` or SSE `retry` it asked for) is a retry.
    pub retry_ms: u64,
    /// An identical request this soon after the previous one ended, with no other
    /// call of the scope in between, is a double dispatch.
    pub double_dispatch_ms: u64,
    /// How long a client waits for a call that never ended, unless a cancellation
    /// in the input shows its real timeout.
    pub client_timeout_ms: u64,
    /// Client logs record the agent's choices: only a re-issue this soon after a
    /// failure counts as a retry.
    pub client_log_ms: u64,
}

impl Default for RetryWindows {
    fn default() -> Self {
        // The TypeScript SDK's default request timeout is 60 s, and both official
        // SDKs reconnect within about 1-30 s (1 s, x1.5 backoff, two attempts).
        RetryWindows {
            retry_ms: 60_000,
            double_dispatch_ms: 1_000,
            client_timeout_ms: 60_000,
            client_log_ms: 10_000,
        }
    }
}

/// Everything one analysis run needs besides its inputs.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub limits: Limits,
    pub windows: RetryWindows,
    /// Worker threads; 0 lets rayon decide.
    pub threads: usize,
    /// TLS secrets for captures (`--tls-keylog`), shared by every input. Captures
    /// may embed more (pcapng Decryption Secrets Blocks).
    pub tls_keys: Arc<KeyLog>,
    /// Stream each input's judged calls to a sink made for it (by input path)
    /// instead of keeping them: memory then does not grow with the calls.
    pub call_sinks: Option<SinkFactory>,
    /// Read and correlate one input on two threads (`batch` sets it when a run has
    /// one input and more than one thread).
    pub pipeline: bool,
}

/// Makes the `CallSink` of one input from its path.
pub type MakeSink = dyn Fn(&str) -> Box<dyn crate::correlate::CallSink> + Send + Sync;

/// Makes the `CallSink` of one input, given its path.
#[derive(Clone)]
pub struct SinkFactory(pub std::sync::Arc<MakeSink>);

impl std::fmt::Debug for SinkFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SinkFactory")
    }
}

/// A duration as a person writes it (`500ms`, `30s`, `2m`, `1h`; a bare number is
/// seconds), in milliseconds.
pub fn parse_duration_ms(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().ok()?;
    let ms = match unit.trim() {
        "ms" => n,
        "" | "s" => n * 1e3,
        "m" | "min" => n * 60e3,
        "h" => n * 3600e3,
        _ => return None,
    };
    (ms.is_finite() && (0.0..1e15).contains(&ms)).then(|| ms.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_duration_ms;

    #[test]
    fn durations_parse_in_the_units_people_write() {
        assert_eq!(parse_duration_ms("500ms"), Some(500));
        assert_eq!(parse_duration_ms("30s"), Some(30_000));
        assert_eq!(parse_duration_ms("1.5s"), Some(1_500));
        assert_eq!(parse_duration_ms("2m"), Some(120_000));
        assert_eq!(parse_duration_ms("45"), Some(45_000));
        assert_eq!(parse_duration_ms("soon"), None);
        assert_eq!(parse_duration_ms("5 parsecs"), None);
        assert_eq!(parse_duration_ms(""), None);
    }
}
