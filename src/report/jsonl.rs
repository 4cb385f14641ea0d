//! Machine-readable records (`design.md` §4): the wire types are built here, apart
//! from the internal model, so a refactor cannot change the contract by accident.
//! `jsonl` writes one record per line; `json` writes the same records as one document.

use crate::batch::{InputReport, Report};
use crate::correlate::{Call, Finding};
use crate::model::{FindingKind, Outcome};
use serde_json::{json, Map, Value};
use std::io::{self, Write};

fn input_record(ir: &InputReport) -> Value {
    let mut o = Map::new();
    o.insert("type".into(), json!("input"));
    o.insert("path".into(), json!(ir.path));
    o.insert("format".into(), json!(ir.format.as_str()));
    o.insert("status".into(), json!(ir.status));
    if let Some(e) = &ir.error {
        o.insert("error".into(), json!(e));
    }
    o.insert("exchanges".into(), json!(ir.analysis.exchanges));
    o.insert("calls".into(), json!(ir.analysis.calls.len()));
    if !ir.analysis.problems.is_empty() {
        let problems: Vec<Value> = ir
            .analysis
            .problems
            .iter()
            .map(|p| json!({"location": p.locator, "message": p.message}))
            .collect();
        o.insert("problems".into(), Value::Array(problems));
    }
    Value::Object(o)
}

/// One `call` record; `all` gives the input's calls, to name a previous attempt.
pub fn call_record(input: &str, c: &Call, all: &[Call]) -> Value {
    let ev = &c.verdict.evidence;
    let mut o = Map::new();
    o.insert("type".into(), json!("call"));
    o.insert("input".into(), json!(input));
    o.insert("scope".into(), json!(c.scope));
    o.insert("id".into(), c.id.to_value());
    o.insert("method".into(), json!(c.method));
    o.insert("tool".into(), json!(c.tool));
    o.insert("outcome".into(), json!(c.verdict.outcome));
    o.insert("layer".into(), json!(c.verdict.layer));
    o.insert("http_statuses".into(), json!(ev.http_statuses));
    o.insert("content_type".into(), json!(ev.content_type));
    if let Some(code) = ev.jsonrpc_code {
        o.insert("jsonrpc_code".into(), json!(code));
    }
    if let Some(rt) = &ev.result_type {
        o.insert("result_type".into(), json!(rt));
    }
    o.insert("post_count".into(), json!(c.post_count));
    o.insert("retry_origin".into(), json!(c.retry_origin.as_str()));
    if let Some(v) = &c.protocol_version {
        o.insert("protocol_version".into(), json!(v));
    }
    if let Some(v) = &c.client {
        o.insert("client".into(), json!(v));
    }
    if let Some(v) = &c.server {
        o.insert("server".into(), json!(v));
    }
    if let Some(t) = c.started_at {
        o.insert("started_at".into(), json!(t.to_string()));
    }
    if let Some(t) = c.ended_at {
        o.insert("ended_at".into(), json!(t.to_string()));
    }
    // Extensions beyond the contract's minimum.
    o.insert("transport".into(), json!(c.transport));
    o.insert("evidence".into(), json!(c.evidence));
    o.insert("location".into(), json!(c.locator));
    if let Some(m) = &ev.error_message {
        o.insert("error_message".into(), json!(m));
    }
    if let Some(b) = ev.is_error {
        o.insert("is_error".into(), json!(b));
    }
    o.insert("sse_events".into(), json!(ev.sse_events));
    o.insert("end".into(), json!(ev.end.as_str()));
    if c.cancelled {
        o.insert("cancelled".into(), json!(true));
    }
    // Calls are kept sorted by `seq` (filters only remove), so a binary search finds it.
    let prev = c.previous.and_then(|seq| {
        all.binary_search_by_key(&seq, |p| p.seq)
            .ok()
            .and_then(|i| all.get(i))
    });
    if let Some(prev) = prev {
        o.insert(
            "previous_attempt".into(),
            json!({"id": prev.id.to_value(), "location": prev.locator, "outcome": prev.verdict.outcome}),
        );
    }
    if !ev.notes.is_empty() {
        o.insert("notes".into(), json!(ev.notes));
    }
    if let Some(t) = &c.timeline {
        o.insert("timeline".into(), timeline_record(t));
    }
    Value::Object(o)
}

/// The wire story of an HTTP call (`call.timeline`).
fn timeline_record(t: &crate::correlate::timeline::Timeline) -> Value {
    let ts = |t: Option<crate::model::Timestamp>| t.map(|t| t.to_string());
    let events: Vec<Value> = t
        .events
        .iter()
        .map(|e| json!({"event": e.event, "id": e.id, "ts": ts(e.ts), "what": e.what}))
        .collect();
    json!({
        "request_line": t.request_line,
        "request_ts": ts(t.request_ts),
        "status": t.status,
        "content_type": t.content_type,
        "response_ts": ts(t.response_ts),
        "events": events,
        "events_total": t.events_total,
        "end": t.end.as_str(),
        "end_ts": ts(t.end_ts),
        "recorder_note": t.recorder_note,
    })
}

fn finding_record(input: &str, f: &Finding) -> Value {
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
    let mut outcomes = Map::new();
    for o in Outcome::ALL {
        let n = report
            .inputs
            .iter()
            .flat_map(|i| &i.analysis.calls)
            .filter(|c| c.verdict.outcome == *o)
            .count();
        outcomes.insert(o.as_str().into(), json!(n));
    }
    let mut findings = Map::new();
    for k in FindingKind::ALL {
        let n = report
            .inputs
            .iter()
            .flat_map(|i| &i.analysis.findings)
            .filter(|f| f.kind == *k)
            .count();
        findings.insert(k.as_str().into(), json!(n));
    }
    let mut summary = json!({
        "type": "summary",
        "inputs": report.inputs.len(),
        "inputs_with_errors": report.inputs.iter().filter(|i| i.has_errors()).count(),
        "skipped": report.skipped.iter().map(|(p, why)| json!({"path": p, "reason": why})).collect::<Vec<_>>(),
        "exchanges": report.inputs.iter().map(|i| i.analysis.exchanges).sum::<u64>(),
        "calls": report.inputs.iter().map(|i| i.analysis.calls.len()).sum::<usize>(),
        "outcomes": outcomes,
        "findings": findings,
    });
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
            f(call_record(&ir.path, c, &ir.analysis.calls))?;
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
    for_each_record(report, |r| {
        serde_json::to_writer(&mut *w, &r)?;
        w.write_all(b"\n")
    })
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
