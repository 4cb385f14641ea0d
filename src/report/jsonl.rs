//! Machine-readable records (the contract in `docs/output.md`): the wire types are built here, apart
//! from the internal model, so a refactor cannot change the contract by accident.
//! `jsonl` writes one record per line; `json` writes the same records as one document.

use crate::batch::{InputReport, Report};
use crate::correlate::{Call, Finding};
use crate::model::Outcome;
use crate::report::redact::Redactor;
use crate::report::summary::Summary;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::io::{self, Write};
use std::sync::Arc;

/// The `input` record of one input.
pub fn input_record(ir: &InputReport) -> Value {
    let mut o = Map::new();
    o.insert("type".into(), json!("input"));
    o.insert("path".into(), json!(ir.path));
    o.insert("format".into(), json!(ir.format.as_str()));
    o.insert("status".into(), json!(ir.status));
    if let Some(e) = &ir.error {
        o.insert("error".into(), json!(e));
    }
    o.insert("exchanges".into(), json!(ir.analysis.exchanges));
    o.insert("calls".into(), json!(ir.analysis.call_count()));
    for (key, list) in [
        ("problems", &ir.analysis.problems),
        ("notices", &ir.analysis.notices),
    ] {
        if !list.is_empty() {
            let items: Vec<Value> = list
                .iter()
                .map(|p| json!({"location": p.locator, "kind": p.kind, "message": p.message}))
                .collect();
            o.insert(key.into(), Value::Array(items));
        }
    }
    Value::Object(o)
}

/// Wire form of a `call` record, borrowed from the `Call` and serialized straight to
/// the writer: no intermediate `Value` per call, which matters on captures with
/// hundreds of thousands of calls. Field order is the order written.
#[derive(Serialize)]
struct CallRecord<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    input: &'a str,
    scope: &'a str,
    id: Value,
    method: &'a str,
    tool: &'a Option<Arc<str>>,
    outcome: Outcome,
    layer: crate::model::Layer,
    http_statuses: &'a [u16],
    content_type: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    jsonrpc_code: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: &'a Option<String>,
    post_count: u32,
    retry_origin: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    protocol_version: &'a Option<Arc<str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client: &'a Option<Arc<str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server: &'a Option<Arc<str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    started_at: Option<Ts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ended_at: Option<Ts>,
    // Extensions beyond the contract's minimum.
    transport: crate::correlate::Transport,
    evidence: &'static str,
    location: &'a crate::model::Locator,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_message: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_error: Option<bool>,
    sse_events: usize,
    end: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    cancelled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_attempt: Option<PreviousAttempt<'a>>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    notes: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    timeline: Option<TimelineRecord<'a>>,
}

#[derive(Serialize)]
struct PreviousAttempt<'a> {
    id: Value,
    location: &'a crate::model::Locator,
    outcome: Outcome,
}

#[derive(Serialize)]
struct EventRecord<'a> {
    event: &'a str,
    id: &'a Option<String>,
    ts: Option<Ts>,
    what: &'a str,
}

/// A Wireshark display filter for the HTTP of one TCP conversation.
pub(crate) fn wireshark_filter(t: crate::model::TcpTrail) -> String {
    match t.h2_stream {
        Some(h2) => format!("tcp.stream == {} && http2.streamid == {h2}", t.stream),
        None => format!("tcp.stream == {} && http", t.stream),
    }
}

/// The wire story of an HTTP call (`call.timeline`).
#[derive(Serialize)]
struct TimelineRecord<'a> {
    request_line: &'a str,
    request_ts: Option<Ts>,
    status: Option<u16>,
    content_type: &'a Option<String>,
    response_ts: Option<Ts>,
    events: Vec<EventRecord<'a>>,
    events_total: usize,
    end: &'static str,
    end_ts: Option<Ts>,
    recorder_note: &'a Option<String>,
    /// Captures only: Wireshark's `tcp.stream`, the frame that ended the response,
    /// and a display filter for the conversation.
    #[serde(skip_serializing_if = "Option::is_none")]
    tcp_stream: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_frame: Option<u64>,
    /// The HTTP/2 stream id, for an exchange read from HTTP/2.
    #[serde(skip_serializing_if = "Option::is_none")]
    h2_stream: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    wireshark_filter: Option<String>,
    /// Captures of a decrypted TLS connection: its version, cipher suite and ALPN.
    #[serde(skip_serializing_if = "Option::is_none")]
    tls: Option<TlsRecord>,
}

#[derive(Serialize)]
struct TlsRecord {
    version: &'static str,
    cipher_suite: &'static str,
    alpn: Option<&'static str>,
}

/// A time written straight into its record, as `Display` prints it (no string
/// is made for it: a record carries two to a dozen).
struct Ts(crate::model::Timestamp);

impl Serialize for Ts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

fn call_rec<'a>(input: &'a str, c: &'a Call) -> CallRecord<'a> {
    let ev = &c.verdict.evidence;
    let ts = |t: Option<crate::model::Timestamp>| t.map(Ts);
    let previous_attempt = c.previous.as_deref().map(|p| PreviousAttempt {
        id: p.id.to_value(),
        location: &p.locator,
        outcome: p.outcome,
    });
    CallRecord {
        ty: "call",
        input,
        scope: &c.scope,
        id: c.id.to_value(),
        method: c.method,
        tool: &c.tool,
        outcome: c.verdict.outcome,
        layer: c.verdict.layer,
        http_statuses: &ev.http_statuses,
        content_type: &ev.content_type,
        jsonrpc_code: ev.jsonrpc_code,
        result_type: &ev.result_type,
        post_count: c.post_count,
        retry_origin: c.retry_origin.as_str(),
        protocol_version: &c.protocol_version,
        client: &c.client,
        server: &c.server,
        started_at: ts(c.started_at),
        ended_at: ts(c.ended_at),
        transport: c.transport,
        evidence: c.evidence,
        location: &c.locator,
        error_message: &ev.error_message,
        is_error: ev.is_error,
        sse_events: ev.sse_events,
        end: ev.end.as_str(),
        cancelled: c.cancelled,
        previous_attempt,
        notes: &ev.notes,
        timeline: c.timeline.as_ref().map(|t| TimelineRecord {
            request_line: &t.request_line,
            request_ts: ts(t.request_ts),
            status: t.status,
            content_type: &t.content_type,
            response_ts: ts(t.response_ts),
            events: t
                .events
                .iter()
                .map(|e| EventRecord {
                    event: &e.event,
                    id: &e.id,
                    ts: ts(e.ts),
                    what: &e.what,
                })
                .collect(),
            events_total: t.events_total,
            end: t.end.as_str(),
            end_ts: ts(t.end_ts),
            tcp_stream: t.tcp.map(|w| w.stream),
            end_frame: t.tcp.map(|w| w.end_frame),
            h2_stream: t.tcp.and_then(|w| w.h2_stream),
            wireshark_filter: t.tcp.map(wireshark_filter),
            tls: t.tcp.and_then(|w| w.tls).map(|s| TlsRecord {
                version: s.version.as_str(),
                cipher_suite: s.cipher_suite,
                alpn: s.alpn,
            }),
            recorder_note: &t.recorder_note,
        }),
    }
}

/// Empties the text a `call` record does not print (excerpts, result text, states,
/// notification names), so a spool does not redact what it then throws away: that
/// redaction was the largest single cost of writing a record. Keep in step with
/// `call_rec`.
fn drop_unprinted(c: &mut Call) {
    c.request_state = None;
    c.returned_state = None;
    let ev = &mut c.verdict.evidence;
    ev.excerpt = None;
    ev.result_text = None;
    ev.request_state = None;
    ev.error_data = None;
    ev.notifications = Vec::new();
}

/// One `call` record as a JSON value; `all` gives the input's calls, to name a
/// previous attempt.
pub fn call_record(input: &str, c: &Call) -> Value {
    serde_json::to_value(call_rec(input, c)).unwrap_or(Value::Null)
}

/// The `finding` record of one finding of `input`.
pub fn finding_record(input: &str, f: &Finding) -> Value {
    json!({
        "type": "finding",
        "kind": f.kind,
        "severity": f.severity,
        "input": input,
        "scope": f.scope,
        "ids": f.ids.iter().map(|i| i.to_value()).collect::<Vec<_>>(),
        "detail": f.detail,
        "locations": f.locators,
    })
}

fn summary_record(report: &Report) -> Value {
    let mut summary = Summary::of_report(report).to_record();
    // Present only when used, so unfiltered output keeps its shape.
    if !report.filters.is_empty() {
        summary["filters"] = json!(report.filters);
    }
    if report.baseline_accepted > 0 {
        summary["baseline_accepted"] = json!(report.baseline_accepted);
    }
    summary
}

/// Every record of the report, in output order.
/// Calls `f` with every record of the report, in output order, one at a time, so
/// writing a large report never holds all its records at once.
pub fn for_each_record(
    report: &Report,
    mut f: impl FnMut(Value) -> io::Result<()>,
) -> io::Result<()> {
    for ir in &report.inputs {
        f(input_record(ir))?;
        for c in &ir.analysis.calls {
            f(call_record(&ir.path, c))?;
        }
        for fi in &ir.analysis.findings {
            f(finding_record(&ir.path, fi))?;
        }
    }
    f(summary_record(report))
}

/// Every record of the report, in output order.
pub fn records(report: &Report) -> Vec<Value> {
    let mut out = Vec::new();
    let _ = for_each_record(report, |r| {
        out.push(r);
        Ok(())
    });
    out
}

pub fn write_jsonl(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    for ir in &report.inputs {
        serde_json::to_writer(&mut *w, &input_record(ir))?;
        w.write_all(b"\n")?;
        if let Some(spool) = ir
            .analysis
            .streamed
            .as_ref()
            .and_then(|s| s.product.downcast_ref::<Spool>())
        {
            spool.copy_to(w)?;
        }
        for c in &ir.analysis.calls {
            // Straight to the writer: the bulk of any large report.
            serde_json::to_writer(&mut *w, &call_rec(&ir.path, c))?;
            w.write_all(b"\n")?;
        }
        for f in &ir.analysis.findings {
            serde_json::to_writer(&mut *w, &finding_record(&ir.path, f))?;
            w.write_all(b"\n")?;
        }
    }
    serde_json::to_writer(&mut *w, &summary_record(report))?;
    w.write_all(b"\n")
}

/// The same records as one document, `{"schema": 1, "records": [...]}`, written
/// record by record.
pub fn write_json(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    w.write_all(b"{\n  \"schema\": 1,\n  \"records\": [\n")?;
    let mut first = true;
    for_each_record(report, |r| {
        if !first {
            w.write_all(b",\n")?;
        }
        first = false;
        w.write_all(b"    ")?;
        serde_json::to_writer(&mut *w, &r)?;
        Ok(())
    })?;
    w.write_all(b"\n  ]\n}\n")
}

/// Call records of one input written as its calls are judged (`--format jsonl`
/// without filters or a baseline), kept in memory up to `SPOOL_MEMORY` and in an
/// unlinked temporary file past it, until the input's turn to be printed: output
/// stays in input order while memory stays flat.
pub struct Spool {
    input: String,
    redactor: Redactor,
    memo: crate::report::redact::Memo,
    memory: Vec<u8>,
    file: Option<std::fs::File>,
    /// The first error writing the file, reported when the spool is read.
    error: Option<io::Error>,
}

/// Bytes of call records a spool keeps in memory before it moves to a file.
pub const SPOOL_MEMORY: usize = 4 << 20;

impl Spool {
    pub fn new(input: &str, redactor: Redactor) -> Spool {
        Spool {
            input: redactor.text(input).into_owned(),
            redactor,
            memo: Default::default(),
            memory: Vec::new(),
            file: None,
            error: None,
        }
    }

    fn spill(&mut self) -> io::Result<()> {
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(tempfile::tempfile()?),
        };
        file.write_all(&self.memory)?;
        self.memory.clear();
        Ok(())
    }

    /// Writes every record spooled, in order.
    pub fn copy_to(&self, w: &mut dyn Write) -> io::Result<()> {
        if let Some(e) = &self.error {
            return Err(io::Error::new(
                e.kind(),
                format!("spooling the calls of {}: {e}", self.input),
            ));
        }
        if let Some(f) = &self.file {
            use std::io::{Read, Seek, SeekFrom};
            let mut f = f;
            f.seek(SeekFrom::Start(0))?;
            // In large pieces: `io::copy` into a `dyn Write` moves 8 KiB per read and
            // write, tens of thousands of system calls for a large input's records.
            let mut piece = vec![0u8; 1 << 20];
            loop {
                match f.read(&mut piece) {
                    Ok(0) => break,
                    Ok(n) => w.write_all(&piece[..n])?,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        w.write_all(&self.memory)
    }
}

impl crate::correlate::CallSink for Spool {
    fn call(&mut self, mut call: Call) {
        drop_unprinted(&mut call);
        self.redactor.call(&mut call, &mut self.memo);
        // Writing to a Vec cannot fail; a record that cannot serialize is a bug.
        let _ = serde_json::to_writer(&mut self.memory, &call_rec(&self.input, &call));
        self.memory.push(b'\n');
        if self.memory.len() >= SPOOL_MEMORY && self.error.is_none() {
            if let Err(e) = self.spill() {
                self.error = Some(e);
            }
        }
    }

    fn finish(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}
