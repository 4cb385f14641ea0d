//! Machine-readable records (the contract in `docs/output.md`): the wire types are built here, apart
//! from the internal model, so a refactor cannot change the contract by accident.
//! `jsonl` writes one record per line; `json` writes the same records as one document.

use crate::batch::{InputReport, Report};
use crate::correlate::{Call, Finding};
use crate::model::{Locator, Outcome};
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

/// Wire form of a `call` record, borrowed from the `Call`: the record as a `Value`
/// (`--format json`) and its nested parts come from it; JSON Lines are written by
/// `write_call`, which a test holds to it byte for byte. Field order is the order
/// written.
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
        timeline: c.timeline.as_deref().map(timeline_rec),
    }
}

/// The record of a call's timeline (`call.timeline`).
fn timeline_rec(t: &crate::correlate::timeline::Timeline) -> TimelineRecord<'_> {
    let ts = |t: Option<crate::model::Timestamp>| t.map(Ts);
    TimelineRecord {
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
    }
}

/// Writes one `call` record, the one `call_rec` serializes, byte for byte (a test
/// holds the two alike on every call of the samples and fixtures): the members are
/// written here in the same order, names and fixed words as they are, only text from
/// the input escaped. serde_json escaped every member name and dispatched every
/// member through its traits, the larger part of the cost of a record.
/// `input` is the input's name already quoted as a JSON string (`quoted`), as it is
/// the same on every call of the input.
fn write_call(out: &mut Vec<u8>, input: &[u8], c: &Call) -> serde_json::Result<()> {
    let ev = &c.verdict.evidence;
    out.extend_from_slice(br#"{"type":"call","input":"#);
    out.extend_from_slice(input);
    out.extend_from_slice(br#","scope":"#);
    json_str(out, &c.scope);
    out.extend_from_slice(br#","id":"#);
    write_id(out, &c.id)?;
    out.extend_from_slice(br#","method":"#);
    json_str(out, c.method);
    out.extend_from_slice(br#","tool":"#);
    opt_str(out, c.tool.as_deref());
    out.extend_from_slice(br#","outcome":""#);
    out.extend_from_slice(c.verdict.outcome.as_str().as_bytes());
    out.extend_from_slice(br#"","layer":""#);
    out.extend_from_slice(c.verdict.layer.as_str().as_bytes());
    out.extend_from_slice(br#"","http_statuses":["#);
    for (i, s) in ev.http_statuses.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(itoa::Buffer::new().format(*s).as_bytes());
    }
    out.extend_from_slice(br#"],"content_type":"#);
    opt_str(out, ev.content_type.as_deref());
    if let Some(code) = ev.jsonrpc_code {
        out.extend_from_slice(br#","jsonrpc_code":"#);
        out.extend_from_slice(itoa::Buffer::new().format(code).as_bytes());
    }
    if let Some(t) = &ev.result_type {
        out.extend_from_slice(br#","result_type":"#);
        json_str(out, t);
    }
    out.extend_from_slice(br#","post_count":"#);
    out.extend_from_slice(itoa::Buffer::new().format(c.post_count).as_bytes());
    out.extend_from_slice(br#","retry_origin":""#);
    out.extend_from_slice(c.retry_origin.as_str().as_bytes());
    out.push(b'"');
    for (name, v) in [
        (&br#","protocol_version":"#[..], &c.protocol_version),
        (br#","client":"#, &c.client),
        (br#","server":"#, &c.server),
    ] {
        if let Some(v) = v {
            out.extend_from_slice(name);
            json_str(out, v);
        }
    }
    for (name, t) in [
        (&br#","started_at":"#[..], c.started_at),
        (br#","ended_at":"#, c.ended_at),
    ] {
        if t.is_some() {
            out.extend_from_slice(name);
            write_ts(out, t)?;
        }
    }
    out.extend_from_slice(br#","transport":""#);
    out.extend_from_slice(c.transport.as_str().as_bytes());
    out.extend_from_slice(br#"","evidence":"#);
    json_str(out, c.evidence);
    out.extend_from_slice(br#","location":"#);
    write_locator(out, &c.locator);
    if let Some(m) = &ev.error_message {
        out.extend_from_slice(br#","error_message":"#);
        json_str(out, m);
    }
    if let Some(e) = ev.is_error {
        out.extend_from_slice(if e {
            br#","is_error":true"#
        } else {
            br#","is_error":false"#
        });
    }
    out.extend_from_slice(br#","sse_events":"#);
    out.extend_from_slice(itoa::Buffer::new().format(ev.sse_events).as_bytes());
    out.extend_from_slice(br#","end":""#);
    out.extend_from_slice(ev.end.as_str().as_bytes());
    out.push(b'"');
    if c.cancelled {
        out.extend_from_slice(br#","cancelled":true"#);
    }
    if let Some(p) = c.previous.as_deref() {
        // Most calls of an agent's session name one: written here, as the rest.
        out.extend_from_slice(br#","previous_attempt":{"id":"#);
        write_id(out, &p.id)?;
        out.extend_from_slice(br#","location":"#);
        write_locator(out, &p.locator);
        out.extend_from_slice(br#","outcome":""#);
        out.extend_from_slice(p.outcome.as_str().as_bytes());
        out.extend_from_slice(br#""}"#);
    }
    if !ev.notes.is_empty() {
        out.extend_from_slice(br#","notes":"#);
        write_list(out, &ev.notes, |out, n| {
            json_str(out, n);
            Ok(())
        })?;
    }
    if let Some(t) = c.timeline.as_deref() {
        out.extend_from_slice(br#","timeline":"#);
        write_timeline(out, t)?;
    }
    out.push(b'}');
    Ok(())
}

/// A time as `Ts` serializes it: its text as a JSON string, or `null`.
fn write_ts(out: &mut Vec<u8>, t: Option<crate::model::Timestamp>) -> serde_json::Result<()> {
    let Some(t) = t else {
        out.extend_from_slice(b"null");
        return Ok(());
    };
    // A time prints as digits and punctuation only: nothing to escape.
    out.push(b'"');
    match t.rfc3339() {
        Some((buf, len)) => out.extend_from_slice(&buf[..len]),
        None => write!(out, "{t}").map_err(serde_json::Error::io)?,
    }
    out.push(b'"');
    Ok(())
}

/// The record `timeline_rec` serializes, by hand: every call that is not a success
/// keeps its timeline, so a capture of a server that is down writes one per call,
/// and serde's dispatch was a tenth of such a run. The call test holds the two to
/// the same bytes.
fn write_timeline(
    out: &mut Vec<u8>,
    t: &crate::correlate::timeline::Timeline,
) -> serde_json::Result<()> {
    let num = write_named_number;
    out.extend_from_slice(br#"{"request_line":"#);
    json_str(out, &t.request_line);
    out.extend_from_slice(br#","request_ts":"#);
    write_ts(out, t.request_ts)?;
    match t.status {
        Some(s) => num(out, br#","status":"#, u64::from(s)),
        None => out.extend_from_slice(br#","status":null"#),
    }
    out.extend_from_slice(br#","content_type":"#);
    opt_str(out, t.content_type.as_deref());
    out.extend_from_slice(br#","response_ts":"#);
    write_ts(out, t.response_ts)?;
    out.extend_from_slice(br#","events":"#);
    write_list(out, &t.events, |out, e| {
        out.extend_from_slice(br#"{"event":"#);
        json_str(out, &e.event);
        out.extend_from_slice(br#","id":"#);
        opt_str(out, e.id.as_deref());
        out.extend_from_slice(br#","ts":"#);
        write_ts(out, e.ts)?;
        out.extend_from_slice(br#","what":"#);
        json_str(out, &e.what);
        out.push(b'}');
        Ok(())
    })?;
    num(out, br#","events_total":"#, t.events_total as u64);
    out.extend_from_slice(br#","end":"#);
    json_str(out, t.end.as_str());
    out.extend_from_slice(br#","end_ts":"#);
    write_ts(out, t.end_ts)?;
    out.extend_from_slice(br#","recorder_note":"#);
    opt_str(out, t.recorder_note.as_deref());
    if let Some(w) = t.tcp {
        num(out, br#","tcp_stream":"#, w.stream);
        num(out, br#","end_frame":"#, w.end_frame);
        if let Some(h2) = w.h2_stream {
            num(out, br#","h2_stream":"#, u64::from(h2));
        }
        out.extend_from_slice(br#","wireshark_filter":"#);
        json_str(out, &wireshark_filter(w));
        if let Some(tls) = w.tls {
            out.extend_from_slice(br#","tls":{"version":"#);
            json_str(out, tls.version.as_str());
            out.extend_from_slice(br#","cipher_suite":"#);
            json_str(out, tls.cipher_suite);
            out.extend_from_slice(br#","alpn":"#);
            opt_str(out, tls.alpn);
            out.push(b'}');
        }
    }
    out.push(b'}');
    Ok(())
}

/// An id as `Id::to_value` prints it: its text when that is what printing gives (a
/// string id is kept in serde_json's form; a small integer; `null`), else through
/// the value.
fn write_id(out: &mut Vec<u8>, id: &crate::jsonrpc::Id) -> serde_json::Result<()> {
    let raw = id.raw();
    let b = raw.as_bytes();
    // A string with nothing to escape up to its closing quote.
    let plain_string = b.len() >= 2
        && b[0] == b'"'
        && b[b.len() - 1] == b'"'
        && crate::text::json_special(b, 1) == b.len() - 1;
    let small_integer = crate::json::plain_integer(b, 0) == Some(b.len());
    if plain_string || small_integer || raw == "null" {
        out.extend_from_slice(b);
        return Ok(());
    }
    serde_json::to_writer(&mut *out, &id.to_value())
}

fn opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => json_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

/// `name` (a member's name and colon, with the comma before it) and the number `n`.
fn write_named_number(out: &mut Vec<u8>, name: &[u8], n: u64) {
    out.extend_from_slice(name);
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// `items` as a JSON array, each written by `each`.
fn write_list<T>(
    out: &mut Vec<u8>,
    items: &[T],
    mut each: impl FnMut(&mut Vec<u8>, &T) -> serde_json::Result<()>,
) -> serde_json::Result<()> {
    out.push(b'[');
    for (k, x) in items.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        each(out, x)?;
    }
    out.push(b']');
    Ok(())
}

/// `s` as a JSON string, quotes included.
fn quoted(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    json_str(&mut out, s);
    out
}

/// A call's location as its serde form writes it (`Locator` is tagged by `kind`),
/// by hand: serde_json's enum dispatch was about 500 instructions a call.
fn write_locator(out: &mut Vec<u8>, l: &Locator) {
    let num = write_named_number;
    match *l {
        Locator::Line { line } => num(out, br#"{"kind":"line","line":"#, line),
        Locator::Entry { entry } => num(out, br#"{"kind":"entry","entry":"#, entry),
        Locator::Frames { request, response } => {
            num(out, br#"{"kind":"frames","request":"#, request);
            if let Some(r) = response {
                num(out, br#","response":"#, r);
            }
        }
        Locator::TlsFrames {
            request,
            response,
            tcp_stream,
        } => {
            num(out, br#"{"kind":"tls_frames","request":"#, request);
            if let Some(r) = response {
                num(out, br#","response":"#, r);
            }
            num(out, br#","tcp_stream":"#, tcp_stream);
        }
        Locator::Input => out.extend_from_slice(br#"{"kind":"input""#),
    }
    out.push(b'}');
}

/// `s` as a JSON string, escaped as serde_json escapes it (the two-character forms
/// it uses, `\u00xx` with lower-case hex for the other control characters, and
/// nothing else), so records read the same whichever wrote them.
fn json_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = s.as_bytes();
    out.push(b'"');
    // The run with nothing to escape, most text, is passed over in bulk.
    let clean = crate::text::json_special(b, 0);
    let mut start = 0;
    for (i, &c) in b.iter().enumerate().skip(clean) {
        let short: &[u8] = match c {
            b'"' => br#"\""#,
            b'\\' => br"\\",
            b'\n' => br"\n",
            b'\r' => br"\r",
            b'\t' => br"\t",
            0x08 => br"\b",
            0x0c => br"\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&b[start..i]);
        if short.is_empty() {
            out.extend_from_slice(br"\u00");
            out.push(HEX[usize::from(c >> 4)]);
            out.push(HEX[usize::from(c & 0xf)]);
        } else {
            out.extend_from_slice(short);
        }
        start = i + 1;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
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

/// `finding_record` written by hand, as `write_call` writes a call: a capture of a
/// server that is down has a finding per call, and building each as a `Value` tree
/// was a quarter of such a run. A test holds the two to the same bytes.
fn write_finding(out: &mut Vec<u8>, input: &[u8], f: &Finding) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"type":"finding","kind":"#);
    json_str(out, f.kind.as_str());
    out.extend_from_slice(br#","severity":"#);
    json_str(out, f.severity.as_str());
    out.extend_from_slice(br#","input":"#);
    out.extend_from_slice(input);
    out.extend_from_slice(br#","scope":"#);
    json_str(out, f.scope.as_str());
    out.extend_from_slice(br#","ids":"#);
    write_list(out, &f.ids, write_id)?;
    out.extend_from_slice(br#","detail":"#);
    json_str(out, &f.detail);
    out.extend_from_slice(br#","locations":"#);
    write_list(out, &f.locators, |out, l| {
        write_locator(out, l);
        Ok(())
    })?;
    out.push(b'}');
    Ok(())
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
        ir.analysis
            .for_each_finding(|fi| f(finding_record(&ir.path, fi)))?;
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
        write_input(ir, w)?;
    }
    write_summary(report, w)
}

/// The spool a streaming run wrote `ir`'s calls to.
fn spool_of(ir: &InputReport) -> Option<&Spool> {
    let product = &ir.analysis.streamed.as_ref()?.product;
    product.downcast_ref::<Spool>().or_else(|| {
        product
            .downcast_ref::<super::kept::Teed>()
            .map(|t| &t.spool)
    })
}

/// One input's records: the `input` record, its calls (spooled or kept), its findings.
fn write_input(ir: &InputReport, w: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer(&mut *w, &input_record(ir))?;
    w.write_all(b"\n")?;
    if let Some(spool) = spool_of(ir) {
        // With `--finding`, only the calls still matched once the input's findings
        // are known.
        spool.copy_chosen(w, &|seq| super::kept::was_listed(&ir.analysis, seq))?;
    }
    let mut line = Vec::new();
    let input = quoted(&ir.path);
    for c in &ir.analysis.calls {
        // The bulk of any large report: written by hand, one line at a time.
        line.clear();
        write_call(&mut line, &input, c)?;
        line.push(b'\n');
        w.write_all(&line)?;
    }
    ir.analysis.for_each_finding(|f| {
        line.clear();
        write_finding(&mut line, &input, f)?;
        line.push(b'\n');
        w.write_all(&line)
    })
}

fn write_summary(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer(&mut *w, &summary_record(report))?;
    w.write_all(b"\n")
}

/// Writes a streaming run's records while it runs (`batch::run_emitting`): each
/// input's records when the batch hands the input over, in input order, then the
/// summary. The same records as `write_jsonl`, but no input's calls are kept past
/// its turn. The first write error stops the writing and is returned by `finish`.
pub struct Streamer<W: Write> {
    w: Framed<W>,
    redactor: Redactor,
    error: Option<io::Error>,
    /// Inputs whose spools had no temporary file, and the first reason why.
    in_memory: (usize, Option<String>),
}

impl<W: Write> Streamer<W> {
    pub fn new(w: W, redactor: Redactor) -> Self {
        Streamer {
            w: Framed { w, document: None },
            redactor,
            error: None,
            in_memory: (0, None),
        }
    }

    /// A streamer of the `--format json` document: the same records, written as
    /// `write_json` writes them, byte for byte.
    pub fn document(w: W, redactor: Redactor) -> Self {
        let mut s = Streamer::new(w, redactor);
        s.w.document = Some(Between::Head);
        s
    }

    /// Redacts one input's report (as `Redactor::report` would) and writes its
    /// records; a write error is returned once, and nothing is written after it.
    /// Records a spool had to drop are the input's problem (exit code 2).
    pub fn input(&mut self, ir: &mut InputReport) -> io::Result<()> {
        if let Some(spool) = spool_of(ir) {
            if let Some(e) = spool.kept_in_memory() {
                self.in_memory.0 += 1;
                self.in_memory.1.get_or_insert_with(|| e.to_string());
            }
            if let Some(p) = spool.problem() {
                ir.analysis.problems.push(p);
            }
        }
        self.redactor.input(ir);
        if self.error.is_some() {
            return Ok(());
        }
        write_input(ir, &mut self.w).inspect_err(|e| {
            self.error = Some(io::Error::new(e.kind(), e.to_string()));
        })
    }

    /// A warning for stderr when any input's records were kept in memory because
    /// no temporary file could be written.
    pub fn warning(&self) -> Option<String> {
        let (n, Some(e)) = &self.in_memory else {
            return None;
        };
        Some(format!(
            "no temporary file could be written in {} ({e}): the call records of {n} input{} were kept in memory until printed (at most {} MiB each); set TMPDIR to a writable directory to keep memory flat",
            std::env::temp_dir().display(),
            if *n == 1 { "" } else { "s" },
            SPOOL_MEMORY_AT_MOST >> 20
        ))
    }

    /// Writes the summary of the run (`report`, redacted) and flushes.
    pub fn finish(mut self, report: &Report) -> io::Result<()> {
        if let Some(e) = self.error {
            return Err(e);
        }
        write_summary(report, &mut self.w)?;
        if self.w.document.is_some() {
            self.w.w.write_all(JSON_TAIL)?;
        }
        self.w.flush()
    }
}

/// Where a document's writing stands between records.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Between {
    /// Nothing written yet: the head comes first.
    Head,
    /// Inside a record.
    Record,
    /// After a record's line: a comma comes before the next one.
    Records,
}

/// The records of a streaming run as lines, or (`document`) as the elements of the
/// `--format json` array: each line's newline becomes the comma before the next.
/// Records never hold a raw newline (JSON escapes it), so a newline ends a record.
struct Framed<W: Write> {
    w: W,
    document: Option<Between>,
}

const JSON_HEAD: &[u8] = b"{\n  \"schema\": 1,\n  \"records\": [\n";
const JSON_TAIL: &[u8] = b"\n  ]\n}\n";

impl<W: Write> Write for Framed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        let Some(at) = &mut self.document else {
            return self.w.write_all(buf);
        };
        while !buf.is_empty() {
            let (line, ends) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], i + 1),
                None => (buf, buf.len()),
            };
            if !line.is_empty() {
                match *at {
                    Between::Head => {
                        self.w.write_all(JSON_HEAD)?;
                        self.w.write_all(b"    ")?
                    }
                    Between::Records => self.w.write_all(b",\n    ")?,
                    Between::Record => {}
                }
                self.w.write_all(line)?;
                *at = Between::Record;
            }
            if ends > line.len() && *at == Between::Record {
                *at = Between::Records;
            }
            buf = &buf[ends..];
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

/// The same records as one document, `{"schema": 1, "records": [...]}`, written
/// record by record.
pub fn write_json(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    w.write_all(JSON_HEAD)?;
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
    w.write_all(JSON_TAIL)
}

/// Call records of one input written as its calls are judged (`--format jsonl`
/// without filters or a baseline), kept in memory up to `SPOOL_MEMORY` and in an
/// unlinked temporary file past it, until the input's turn to be printed: output
/// stays in input order while memory stays flat. Where no temporary file can be
/// written (no writable `TMPDIR`, a full disk), the records stay in memory, up to
/// `SPOOL_MEMORY_AT_MOST`; past that they are counted and dropped, and the input
/// gets a problem that says how to fix it, rather than the run losing every record.
pub struct Spool {
    input: String,
    /// `input` as a JSON string, for each record.
    quoted_input: Vec<u8>,
    redactor: Redactor,
    memo: crate::report::redact::Memo,
    memory: Vec<u8>,
    file: Option<std::fs::File>,
    /// Bytes of whole records in `file`: a write that failed half way is not read.
    filed: u64,
    /// Why the records stay in memory: the temporary file could not be written.
    no_file: Option<io::Error>,
    /// Records dropped past `memory_at_most` once `no_file` was set.
    dropped: u64,
    /// `SPOOL_MEMORY_AT_MOST`, but for tests.
    memory_at_most: usize,
    /// The `seq` of each record, in order, when the records printed are chosen at
    /// the input's end (`note_seqs`).
    seqs: Option<Vec<u32>>,
}

/// Bytes of call records a spool keeps in memory before it moves to a file.
pub const SPOOL_MEMORY: usize = 4 << 20;

/// Bytes of call records a spool keeps in memory when it has no file: about the
/// records of a 3 GB capture, so that a run without a temporary directory still
/// prints most inputs whole, and a hostile one cannot take all memory.
pub const SPOOL_MEMORY_AT_MOST: usize = 1 << 30;

impl Spool {
    pub fn new(input: &str, redactor: Redactor) -> Spool {
        let input = redactor.text(input).into_owned();
        Spool {
            quoted_input: quoted(&input),
            input,
            redactor,
            memo: Default::default(),
            memory: Vec::new(),
            file: None,
            filed: 0,
            no_file: None,
            dropped: 0,
            memory_at_most: SPOOL_MEMORY_AT_MOST,
            seqs: None,
        }
    }

    /// Notes the `seq` of each record from now on (four bytes a call), so that
    /// `copy_to` can leave out those of calls let go at the input's end.
    pub fn note_seqs(&mut self) {
        self.seqs.get_or_insert_with(Vec::new);
    }

    /// A spool that has found no temporary file, keeping `memory_at_most` bytes.
    #[cfg(test)]
    fn without_file(input: &str, memory_at_most: usize) -> Spool {
        Spool {
            no_file: Some(io::Error::new(io::ErrorKind::NotFound, "no such directory")),
            memory_at_most,
            ..Spool::new(input, Redactor::default())
        }
    }

    /// Moves the records in memory to the file, or keeps them where that fails.
    fn spill(&mut self) {
        if self.no_file.is_some() {
            return;
        }
        match self.write_file() {
            Ok(()) => self.memory.clear(),
            Err(e) => self.no_file = Some(e),
        }
    }

    fn write_file(&mut self) -> io::Result<()> {
        use std::io::{Seek, SeekFrom};
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(tempfile::tempfile()?),
        };
        if let Err(e) = file.write_all(&self.memory) {
            // The part of this piece that was written is cut off again (or, where
            // that fails too, never read: `copy_to` reads `filed` bytes).
            let _ = file.set_len(self.filed);
            let _ = file.seek(SeekFrom::Start(self.filed));
            return Err(e);
        }
        self.filed += self.memory.len() as u64;
        Ok(())
    }

    /// Why this spool kept its records in memory, when it did: no temporary file
    /// could be written.
    pub fn kept_in_memory(&self) -> Option<&io::Error> {
        self.no_file.as_ref()
    }

    /// The input's problem when records were dropped (no file, and more than
    /// `SPOOL_MEMORY_AT_MOST` of them), to be reported with the input.
    pub fn problem(&self) -> Option<crate::ingest::Problem> {
        let e = self.no_file.as_ref().filter(|_| self.dropped > 0)?;
        Some(crate::ingest::Problem::of(
            crate::ingest::Level::Problem,
            crate::ingest::Kind::Cap,
            Locator::Input,
            format!(
                "{} call records are not printed: no temporary file could be written in {} ({e}), and {} MiB of records were kept in memory already; set TMPDIR to a writable directory with room",
                self.dropped,
                std::env::temp_dir().display(),
                self.memory_at_most >> 20
            ),
        ))
    }

    /// `copy_to`, but when the spool noted the records' `seq`s (`note_seqs`) only
    /// those of the calls `keep` says.
    pub fn copy_chosen(&self, w: &mut dyn Write, keep: &dyn Fn(usize) -> bool) -> io::Result<()> {
        match &self.seqs {
            None => self.copy_to(w),
            Some(seqs) => self.copy_to(&mut Chosen {
                w,
                seqs,
                keep,
                line: 0,
            }),
        }
    }

    /// Writes every record spooled, in order.
    pub fn copy_to(&self, w: &mut dyn Write) -> io::Result<()> {
        if let Some(f) = &self.file {
            use std::io::{Read, Seek, SeekFrom};
            let mut f = f;
            f.seek(SeekFrom::Start(0))?;
            let mut f = f.take(self.filed);
            // In large pieces: `io::copy` into a `dyn Write` moves 8 KiB per read and
            // write, tens of thousands of system calls for a large input's records.
            let mut piece = vec![0u8; 1 << 20];
            loop {
                match f.read(&mut piece) {
                    Ok(0) => break,
                    Ok(n) => w.write_all(&piece[..n])?,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(io::Error::new(
                            e.kind(),
                            format!("reading back the calls of {}: {e}", self.input),
                        ))
                    }
                }
            }
        }
        w.write_all(&self.memory)
    }
}

/// A writer that passes on the lines (records) of the calls `keep` says, the `seq`
/// of line `n` being `seqs[n]`.
struct Chosen<'a> {
    w: &'a mut dyn Write,
    seqs: &'a [u32],
    keep: &'a dyn Fn(usize) -> bool,
    line: usize,
}

impl Write for Chosen<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            let (end, ends) = match memchr::memchr(b'\n', buf) {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            let seq = self.seqs.get(self.line).map_or(usize::MAX, |&s| s as usize);
            if (self.keep)(seq) {
                self.w.write_all(&buf[..end])?;
            }
            self.line += usize::from(ends);
            buf = &buf[end..];
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

impl crate::correlate::CallSink for Spool {
    fn call(&mut self, call: Call) {
        drop(self.call_returning(call));
    }

    fn call_returning(&mut self, mut call: Call) -> Option<Call> {
        if self.no_file.is_some() && self.memory.len() >= self.memory_at_most {
            self.dropped += 1;
            return Some(call);
        }
        drop_unprinted(&mut call);
        self.redactor.call(&mut call, &mut self.memo);
        if self.memory.capacity() == 0 {
            // Sized once, so that it never grows by doubling past the spill mark: each
            // such step left the allocator holding the smaller buffer too.
            self.memory.reserve_exact(SPOOL_MEMORY + (64 << 10));
        }
        // Writing to a Vec cannot fail; a record that cannot serialize is a bug.
        let _ = write_call(&mut self.memory, &self.quoted_input, &call);
        self.memory.push(b'\n');
        if let Some(seqs) = &mut self.seqs {
            seqs.push(u32::try_from(call.seq).unwrap_or(u32::MAX));
        }
        if self.memory.len() >= SPOOL_MEMORY {
            self.spill();
        }
        Some(call)
    }

    fn finish(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{analyse_input, Input};
    use crate::config::Config;

    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else if p
                .extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| matches!(x, "pcap" | "pcapng" | "har" | "jsonl" | "json"))
            {
                out.push(p);
            }
        }
    }

    /// The analysis of every input under `dirs` of the repository that reads.
    fn analysed(dirs: &[&str]) -> Vec<(std::path::PathBuf, crate::correlate::Analysis)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut paths = Vec::new();
        for dir in dirs {
            files(&root.join(dir), &mut paths);
        }
        paths
            .into_iter()
            .filter_map(|p| {
                let (_, a) = analyse_input(&Input::Path(p.clone()), &Config::default()).ok()?;
                Some((p, a))
            })
            .collect()
    }

    /// A spool hands back every call it renders (for the two-thread pipeline, which
    /// frees it where it was made), and renders it as `call` does.
    #[test]
    fn a_spool_hands_back_the_calls_it_renders() {
        use crate::correlate::CallSink;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let input = Input::Path(root.join("samples/streamable-http.jsonl"));
        let (_, a) = analyse_input(&input, &Config::default()).expect("the sample reads");
        assert!(a.calls.len() > 2);
        let (mut kept, mut handed) = (
            Spool::new("in", Redactor::default()),
            Spool::new("in", Redactor::default()),
        );
        for c in &a.calls {
            kept.call(c.clone());
            let back = handed.call_returning(c.clone()).expect("handed back");
            assert_eq!((&back.id, back.seq), (&c.id, c.seq));
        }
        let (mut x, mut y) = (Vec::new(), Vec::new());
        kept.copy_to(&mut x).unwrap();
        handed.copy_to(&mut y).unwrap();
        assert!(!x.is_empty());
        assert_eq!(x, y);
    }

    /// Without a temporary file a spool keeps its records in memory, whole, up to
    /// its bound; past it the records are counted, not kept, and the input gets a
    /// problem that says how many and how to fix it.
    #[test]
    fn a_spool_without_a_file_keeps_whole_records_up_to_its_bound() {
        use crate::correlate::CallSink;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let input = Input::Path(root.join("samples/streamable-http.jsonl"));
        let (_, a) = analyse_input(&input, &Config::default()).expect("the sample reads");
        let calls: Vec<Call> = (0..20_000)
            .map(|k| a.calls[k % a.calls.len()].clone())
            .collect();
        let (mut filed, mut roomy) = (
            Spool::new("in", Redactor::default()),
            Spool::without_file("in", usize::MAX),
        );
        let mut tight = Spool::without_file("in", 1 << 20);
        for c in &calls {
            filed.call(c.clone());
            roomy.call(c.clone());
            tight.call(c.clone());
        }
        let (mut x, mut y, mut z) = (Vec::new(), Vec::new(), Vec::new());
        filed.copy_to(&mut x).unwrap();
        roomy.copy_to(&mut y).unwrap();
        tight.copy_to(&mut z).unwrap();
        assert!(x.len() > SPOOL_MEMORY, "{}", x.len());
        assert_eq!(x, y);
        assert!(roomy.kept_in_memory().is_some() && roomy.problem().is_none());
        assert!(filed.kept_in_memory().is_none() && filed.problem().is_none());
        // The records kept are the first ones, whole lines.
        assert!(
            z.len() >= 1 << 20 && z.len() < (1 << 20) + 4096,
            "{}",
            z.len()
        );
        assert!(x.starts_with(&z) && z.ends_with(b"\n"));
        let kept = z.iter().filter(|&&c| c == b'\n').count();
        let p = tight.problem().expect("records were dropped");
        assert_eq!(p.level, crate::ingest::Level::Problem);
        assert!(
            p.message
                .starts_with(&format!("{} call records are not printed", 20_000 - kept))
                && p.message.contains("TMPDIR"),
            "{}",
            p.message
        );
    }

    /// A spool that dropped records makes its input's problem when the input is
    /// written: on the `input` record, with the count and the fix, and the
    /// streamer's warning names the missing temporary directory.
    #[test]
    fn a_streamed_input_whose_spool_dropped_records_says_so() {
        use crate::correlate::{CallSink, Streamed};
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let input = Input::Path(root.join("samples/streamable-http.jsonl"));
        let (format, a) = analyse_input(&input, &Config::default()).expect("the sample reads");
        let mut spool = Spool::without_file("in", 1 << 16);
        for k in 0..2_000 {
            spool.call(a.calls[k % a.calls.len()].clone());
        }
        let mut ir = InputReport {
            path: "in".to_owned(),
            format,
            status: crate::batch::Status::Ok,
            error: None,
            analysis: crate::correlate::Analysis {
                streamed: Some(Streamed {
                    tally: Default::default(),
                    product: Box::new(spool),
                    findings: None,
                    findings_let_go: Default::default(),
                }),
                ..Default::default()
            },
            stable_path: "in".to_owned(),
        };
        let mut out = Vec::new();
        let mut streamer = Streamer::new(&mut out, Redactor::default());
        streamer.input(&mut ir).unwrap();
        let warning = streamer.warning().expect("a warning");
        assert!(
            warning.starts_with("no temporary file could be written in "),
            "{warning}"
        );
        assert!(warning.contains("the call records of 1 input were kept in memory"));
        assert!(ir.has_errors());
        let first: Value =
            serde_json::from_slice(out.split(|&c| c == b'\n').next().unwrap()).unwrap();
        let problems = first["problems"]
            .as_array()
            .expect("the input record lists it");
        assert_eq!(problems.len(), 1);
        let message = problems[0]["message"].as_str().unwrap();
        assert_eq!(problems[0]["kind"], "cap");
        let (dropped, rest) = message.split_once(' ').unwrap();
        assert!(
            dropped.parse::<u64>().is_ok_and(|n| n > 0 && n < 2_000),
            "{message}"
        );
        assert!(
            rest.starts_with(
                "call records are not printed: no temporary file could be written in "
            ),
            "{message}"
        );
        assert!(
            message.contains("set TMPDIR to a writable directory with room"),
            "{message}"
        );
    }

    /// The records chosen by `seq` (with `--finding`) are whole lines, however the
    /// writes that carry them are cut (a spool read back from its file comes in 1 MiB
    /// pieces that cut records anywhere).
    #[test]
    fn records_chosen_by_seq_are_whole_lines_however_they_are_cut() {
        let lines: Vec<String> = (0..50)
            .map(|i| {
                format!(
                    "{{\"seq\":{},\"pad\":\"{}\"}}\n",
                    i * 3,
                    "x".repeat(i * 7 % 23)
                )
            })
            .collect();
        let seqs: Vec<u32> = (0..50).map(|i| i * 3).collect();
        let keep = |seq: usize| seq % 2 == 0 || seq == 147;
        let want: String = lines
            .iter()
            .zip(&seqs)
            .filter(|(_, &s)| keep(s as usize))
            .map(|(l, _)| l.as_str())
            .collect();
        assert!(want.len() > 100 && want.len() < lines.concat().len());
        let all = lines.concat().into_bytes();
        for cut in [1, 7, 30, 4096] {
            let mut out = Vec::new();
            let mut chosen = Chosen {
                w: &mut out,
                seqs: &seqs,
                keep: &keep,
                line: 0,
            };
            for piece in all.chunks(cut) {
                chosen.write_all(piece).unwrap();
            }
            assert_eq!(String::from_utf8(out).unwrap(), want, "cut at {cut}");
        }
    }

    /// A streamed `--format json` run frames the JSONL records into the document
    /// `write_json` writes, byte for byte, however its writes are cut (a spool copies
    /// back in large pieces, a record is written in one; here also a byte at a time).
    #[test]
    fn the_json_document_framed_from_records_is_the_one_written_whole() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let report = crate::batch::run(
            &[crate::batch::Input::Path(root.join("samples"))],
            &Config::default(),
        );
        let mut whole = Vec::new();
        write_json(&report, &mut whole).unwrap();
        let mut lines = Vec::new();
        write_jsonl(&report, &mut lines).unwrap();
        assert!(lines.iter().filter(|&&b| b == b'\n').count() > 50);
        for cut in [1, 7, 4096, lines.len()] {
            let mut framed = Framed {
                w: Vec::new(),
                document: Some(Between::Head),
            };
            for piece in lines.chunks(cut) {
                framed.write_all(piece).unwrap();
            }
            framed.w.extend_from_slice(JSON_TAIL);
            assert!(framed.w == whole, "cut every {cut} bytes");
        }
        let doc: Value = serde_json::from_slice(&whole).unwrap();
        assert_eq!(
            doc["records"].as_array().unwrap().len(),
            lines
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .count()
        );
    }

    /// Every kind of location, with and without its optional member, as serde writes it.
    #[test]
    fn locations_written_by_hand_are_the_serialized_ones() {
        for l in [
            Locator::Line { line: 1 },
            Locator::Entry { entry: u64::MAX },
            Locator::Frames {
                request: 12,
                response: Some(40),
            },
            Locator::Frames {
                request: 7,
                response: None,
            },
            Locator::TlsFrames {
                request: 3,
                response: Some(9),
                tcp_stream: 0,
            },
            Locator::TlsFrames {
                request: 3,
                response: None,
                tcp_stream: 81,
            },
            Locator::Input,
        ] {
            let mut fast = Vec::new();
            write_locator(&mut fast, &l);
            assert_eq!(
                String::from_utf8(fast).unwrap(),
                serde_json::to_string(&l).unwrap()
            );
        }
    }

    /// The hand-written finding record is the serde one, byte for byte, on every
    /// finding of the samples, the test fixtures and the lab's captures: every kind,
    /// ids of each JSON type, several locations.
    /// What `write` writes by hand, held to serde_json's form of `record` byte for
    /// byte (`case` names it when they differ).
    fn written_as_serialized<E: std::fmt::Debug>(
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
        record: &impl serde::Serialize,
        case: &str,
    ) -> Vec<u8> {
        let mut fast = Vec::new();
        write(&mut fast).unwrap();
        let serde = serde_json::to_vec(record).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&fast),
            String::from_utf8_lossy(&serde),
            "{case}"
        );
        fast
    }

    #[test]
    fn findings_written_by_hand_are_the_serialized_ones() {
        let (mut kinds, mut most_ids) = (std::collections::BTreeSet::new(), 0);
        for (p, a) in analysed(&["samples", "tests/fixtures", "lab/captures"]) {
            for f in &a.findings {
                written_as_serialized(
                    |out| write_finding(out, &quoted("in\"put\u{1}"), f),
                    &finding_record("in\"put\u{1}", f),
                    &p.display().to_string(),
                );
                kinds.insert(f.kind);
                most_ids = most_ids.max(f.ids.len());
            }
        }
        assert!(kinds.len() >= 6, "{kinds:?}");
        assert!(most_ids >= 2);
        // And a finding made here, with what no capture gave: a string id to escape,
        // no id and no location, control characters in the detail.
        let f = Finding {
            kind: crate::model::FindingKind::IdMismatch,
            severity: crate::model::Severity::High,
            scope: crate::correlate::Scope::stdio(3),
            ids: vec![
                crate::jsonrpc::Id::from_raw(r#""a\u0001\"b""#),
                crate::jsonrpc::Id::from_raw("1.5e3"),
                crate::jsonrpc::Id::from_raw("null"),
            ],
            calls: vec![1],
            locators: vec![Locator::Input, Locator::Entry { entry: 7 }],
            detail: "tab\there, \u{7f} and \u{1f}".to_owned(),
        };
        for f in [
            f.clone(),
            Finding {
                ids: vec![],
                locators: vec![],
                ..f
            },
        ] {
            written_as_serialized(
                |out| write_finding(out, &quoted("x"), &f),
                &finding_record("x", &f),
                "",
            );
        }
    }

    /// The hand-written timeline is the serde one, byte for byte, with every member
    /// a capture can give it (TLS, HTTP/2, events with and without id and time) and
    /// none of them.
    #[test]
    fn timelines_written_by_hand_are_the_serialized_ones() {
        use crate::correlate::timeline::{EventMark, Timeline};
        use crate::model::{End, TcpTrail, Timestamp, TlsTrail, TlsVersion};
        let ts = Timestamp::parse("2026-12-02T08:00:00.123Z");
        assert!(ts.is_some());
        let full = Timeline {
            request_line: "POST http://h/mcp?q=\"x\"\u{1}".to_owned(),
            request_ts: ts,
            status: Some(502),
            content_type: Some("text/event-stream; charset=utf-8".to_owned()),
            response_ts: ts,
            events: vec![
                EventMark {
                    event: "message".to_owned(),
                    id: Some("e\t1".to_owned()),
                    ts,
                    what: "response id 3 (result)".to_owned(),
                },
                EventMark {
                    event: "ping".to_owned(),
                    id: None,
                    ts: None,
                    what: "not JSON".to_owned(),
                },
            ],
            events_total: 40,
            end: End::Reset,
            end_ts: ts,
            recorder_note: Some("cut \"short\"".to_owned()),
            tcp: Some(TcpTrail {
                stream: 12,
                end_frame: 9_000_000_001,
                h2_stream: Some(7),
                tls: Some(TlsTrail {
                    version: TlsVersion::Tls13,
                    cipher_suite: "TLS_AES_128_GCM_SHA256",
                    alpn: Some("h2"),
                }),
            }),
            resumptions: Vec::new(),
            session_id: Some("not printed".to_owned()),
        };
        let mut bare = full.clone();
        bare.request_ts = None;
        bare.status = None;
        bare.content_type = None;
        bare.response_ts = None;
        bare.events.clear();
        bare.end_ts = None;
        bare.recorder_note = None;
        bare.tcp = None;
        let mut h1 = full.clone();
        h1.tcp = Some(TcpTrail {
            stream: 0,
            end_frame: 3,
            h2_stream: None,
            tls: Some(TlsTrail {
                version: TlsVersion::Tls12,
                cipher_suite: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                alpn: None,
            }),
        });
        let mut plain = full.clone();
        plain.tcp = Some(TcpTrail {
            stream: 4,
            end_frame: 5,
            h2_stream: None,
            tls: None,
        });
        for t in [full, bare, h1, plain] {
            written_as_serialized(|out| write_timeline(out, &t), &timeline_rec(&t), "");
        }
    }

    /// The hand-written record is the serde one, byte for byte, on every call of the
    /// samples and the test fixtures, among them calls with each optional member.
    #[test]
    fn records_written_by_hand_are_the_serialized_ones() {
        let (mut calls, mut seen) = (0, std::collections::BTreeSet::new());
        for (p, a) in analysed(&["samples", "tests/fixtures"]) {
            for c in &a.calls {
                let fast = written_as_serialized(
                    |out| write_call(out, &quoted("in\"put\u{1}"), c),
                    &call_rec("in\"put\u{1}", c),
                    &p.display().to_string(),
                );
                calls += 1;
                let v: Value = serde_json::from_slice(&fast).unwrap();
                seen.extend(v.as_object().into_iter().flat_map(|o| o.keys().cloned()));
            }
        }
        assert!(calls > 500, "{calls} calls");
        for member in [
            "jsonrpc_code",
            "result_type",
            "protocol_version",
            "client",
            "server",
            "error_message",
            "is_error",
            "cancelled",
            "previous_attempt",
            "notes",
            "timeline",
        ] {
            assert!(seen.contains(member), "no call with {member}: {seen:?}");
        }
    }

    /// Ids print as `Id::to_value` prints them, whatever their wire form (checked
    /// to fail with `-0` or a string with a quote inside written as they are).
    #[test]
    fn ids_are_written_as_their_value_prints() {
        let raws = [
            "1",
            "0",
            "-5",
            "-0",
            "007",
            "1.0",
            "1e3",
            "12345678901234567890",
            "123456789012345678",
            "\"a\"",
            "\"a\\\"b\"",
            "\"\\u0041\"",
            "\"é\"",
            "\"\"",
            "\"abc",
            "abc\"",
            "\"a\"b\"",
            "null",
            "true",
            "[1, 2]",
            "{ \"a\" : 1 }",
            " 7 ",
            "",
        ];
        for raw in raws {
            let id = crate::jsonrpc::Id::from_raw(raw);
            written_as_serialized(
                |out| write_id(out, &id),
                &id.to_value(),
                &format!("{raw:?}"),
            );
        }
    }

    proptest::proptest! {
        /// Strings are escaped as serde_json escapes them, control characters,
        /// quotes, backslashes and non-ASCII text among them.
        #[test]
        fn strings_are_escaped_as_serde_json_escapes_them(s in "[\\x00-\\x20\"\\\\a-z\\x7fé€😀]{0,24}") {
            let mut out = Vec::new();
            json_str(&mut out, &s);
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&s).unwrap());
        }
    }
}
