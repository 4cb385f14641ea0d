//! Claude Desktop's MCP logs: `mcp-server-NAME.log` (one server) with lines
//! `2025-07-23T15:09:15.427Z [NAME] [info] Message from client: {json} { metadata: undefined }`,
//! and `mcp.log` (every server) with `TIME [info] [NAME] Message from server: {json}`.
//! The client wrote them, so the evidence is a client log's. Quirks:
//!
//! - newer versions append ` { metadata: undefined }` after the JSON, so only the
//!   first JSON value on the line is read;
//! - the server's stderr and the client's own chatter ("Initializing server...",
//!   stack traces) are interleaved and skipped;
//! - `mcp.log` interleaves servers and each restart starts ids again at 0, so
//!   `tools/call` requests are paired with their answers here, per server and per
//!   `initialize`, and become client-log calls (`source: claude-desktop`);
//! - versions from mid-2026 log a summary instead of the JSON
//!   (`Message from client: method="tools/list" id=1 params`): such a line is an MCP
//!   message without a body, so a `tools/call` in that form cannot be judged and the
//!   file gets one problem saying how many there were.

use super::shallow::{self, Object};
use super::Tally;
use crate::config::Limits;
use crate::ingest::jsonl::read_line_capped;
use crate::ingest::{IngestError, Kind, Level, Problem};
use crate::model::{ClientCall, ClientResult, Exchange, Locator, Payload, Timestamp};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::BufRead;

const LEVELS: [&str; 5] = ["info", "error", "warn", "warning", "debug"];

/// What one line of such a log says.
struct Line<'a> {
    ts: Option<Timestamp>,
    server: &'a str,
    /// Everything after the `[server] [level] ` prefix.
    rest: &'a str,
}

/// `TIME [a] [b] rest`, where one of `a`, `b` is a log level and the other the server.
fn parse_line(line: &str) -> Option<Line<'_>> {
    let (ts, after) = line.split_once(' ')?;
    if !(ts.len() >= 20 && ts.as_bytes().get(10) == Some(&b'T')) {
        return None;
    }
    let after = after.strip_prefix('[')?;
    let (a, after) = after.split_once("] [")?;
    let (b, rest) = after.split_once("] ")?;
    let server = if LEVELS.contains(&a) {
        b
    } else if LEVELS.contains(&b) {
        a
    } else {
        return None;
    };
    Some(Line {
        ts: Timestamp::parse(ts),
        server,
        rest,
    })
}

const FROM_CLIENT: &str = "Message from client: ";
const FROM_SERVER: &str = "Message from server: ";

/// Lines Claude Desktop writes for every server, with or without traffic.
const MARKERS: [&str; 6] = [
    FROM_CLIENT,
    FROM_SERVER,
    "Initializing server...",
    "Server started and connected successfully",
    "Server transport closed",
    "Server disconnected",
];

pub fn looks_like(head: &str) -> bool {
    head.lines()
        .take(50)
        .any(|l| parse_line(l).is_some_and(|p| MARKERS.iter().any(|m| p.rest.starts_with(m))))
}

/// A message logged as a summary, `method="NAME" id=ID params` (requests and
/// notifications) or `id=ID result|error` (answers), with nothing of its body.
#[derive(Debug, PartialEq)]
struct Summary<'a> {
    method: Option<&'a str>,
}

/// Reads the summary form, with or without the ` { metadata: … }` suffix; `None` for
/// anything else (which is then read as JSON and reported if it is not).
fn parse_summary(text: &str) -> Option<Summary<'_>> {
    let text = text.split(" { metadata").next().unwrap_or(text).trim();
    let mut method = None;
    let mut seen = false;
    for token in text.split_ascii_whitespace() {
        if let Some(m) = token.strip_prefix("method=\"") {
            method = Some(m.strip_suffix('"')?);
        } else if let Some(id) = token.strip_prefix("id=") {
            if id.is_empty() {
                return None;
            }
        } else if !matches!(token, "params" | "result" | "error") {
            return None;
        }
        seen = true;
    }
    seen.then_some(Summary { method })
}

/// A `tools/call` seen from the client, waiting for its answer.
struct Pending {
    call: ClientCall,
    line: u64,
}

#[derive(Default)]
struct Server {
    /// `initialize` requests seen: each one starts a new connection.
    connection: u32,
    pending: HashMap<String, Pending>,
    order: Vec<String>,
}

pub fn read(
    reader: &mut dyn BufRead,
    limits: &Limits,
    tally: &mut Tally,
) -> Result<(), IngestError> {
    let mut reader = reader;
    let mut servers: HashMap<String, Server> = HashMap::new();
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    // `tools/call` lines logged as summaries: (how many, the first one's line).
    let mut summarised_calls: (u64, u64) = (0, 0);
    while let Some((total, _)) = read_line_capped(&mut reader, &mut buf, limits.max_record_bytes)? {
        line_no += 1;
        let locator = Locator::Line { line: line_no };
        let cut = total > buf.len() as u64;
        let text = String::from_utf8_lossy(&buf).into_owned();
        buf.clear();
        let Some(line) = parse_line(&text) else {
            continue;
        };
        let (from_client, json) = match (
            line.rest.strip_prefix(FROM_CLIENT),
            line.rest.strip_prefix(FROM_SERVER),
        ) {
            (Some(json), _) => (true, json),
            (None, Some(json)) => (false, json),
            (None, None) => continue,
        };
        if let Some(summary) = parse_summary(json) {
            tally.used += 1;
            if from_client && summary.method == Some("tools/call") {
                if summarised_calls.0 == 0 {
                    summarised_calls.1 = line_no;
                }
                summarised_calls.0 += 1;
            }
            continue;
        }
        if cut {
            tally.problem(Problem::cap(
                locator,
                format!(
                    "message line is {total} bytes, over the {}-byte record limit; skipped (raise --max-record-bytes to read it)",
                    limits.max_record_bytes
                ),
            ));
            continue;
        }
        // Only the first JSON value: ` { metadata: undefined }` may follow it.
        let first = serde_json::Deserializer::from_str(json)
            .into_iter::<&RawValue>()
            .next();
        let Some(msg) = first
            .and_then(Result::ok)
            .and_then(|raw| Object::of(raw, &["id", "method", "params", "result", "error"]))
        else {
            tally.problem(Problem::new(
                locator,
                "the message on this line is not a JSON object (cut by the logger?)".to_owned(),
            ));
            continue;
        };
        tally.used += 1;
        let server = servers.entry(line.server.to_owned()).or_default();
        let id = msg.get("id").map(shallow::compact);
        let method = msg.str("method");
        let params = msg.object("params", &["name", "arguments", "requestId", "reason"]);
        if from_client {
            match (method.as_deref(), id) {
                (Some("initialize"), _) => {
                    flush(server, tally);
                    server.connection += 1;
                }
                (Some("tools/call"), Some(id)) => {
                    let call = ClientCall {
                        source: "claude-desktop",
                        call_id: id.clone(),
                        session: Some(format!("{}#{}", line.server, server.connection)),
                        server: Some(line.server.to_owned()),
                        tool: params
                            .as_ref()
                            .and_then(|p| p.str("name"))
                            .unwrap_or_default()
                            .into_owned(),
                        arguments: params
                            .as_ref()
                            .and_then(|p| p.get("arguments"))
                            .map(shallow::compact),
                        result: ClientResult::Missing,
                        started: line.ts,
                        ended: None,
                        jsonrpc_code: None,
                    };
                    // The same id again before an answer: the first will never get one.
                    if let Some(prev) = server.pending.remove(&id) {
                        emit(tally, prev);
                    } else {
                        server.order.push(id.clone());
                    }
                    server.pending.insert(
                        id,
                        Pending {
                            call,
                            line: line_no,
                        },
                    );
                }
                (Some("notifications/cancelled"), _) => {
                    let rid = params
                        .as_ref()
                        .and_then(|p| p.get("requestId"))
                        .map(shallow::compact);
                    if let Some(mut p) = rid.and_then(|r| server.pending.remove(&r)) {
                        let reason = params
                            .as_ref()
                            .and_then(|p| p.str("reason"))
                            .unwrap_or(Cow::Borrowed("no reason given"));
                        p.call.result =
                            ClientResult::Error(format!("cancelled by the client: {reason}"));
                        p.call.ended = line.ts;
                        emit(tally, p);
                    }
                }
                _ => {}
            }
            continue;
        }
        // From the server: an answer to a pending call, or anything else (ignored).
        let Some(mut p) = id.and_then(|id| server.pending.remove(&id)) else {
            continue;
        };
        p.call.ended = line.ts;
        if let Some(r) = msg.get("result") {
            p.call.result = ClientResult::Result(shallow::compact(r));
        } else if let Some(e) = msg.get("error") {
            let e = Object::of(e, &["code", "message"]);
            p.call.jsonrpc_code = e.as_ref().and_then(|e| e.get("code")?.get().parse().ok());
            p.call.result = ClientResult::Error(
                e.as_ref()
                    .and_then(|e| e.str("message"))
                    .unwrap_or(Cow::Borrowed("JSON-RPC error without a message"))
                    .into_owned(),
            );
        }
        emit(tally, p);
    }
    if summarised_calls.0 > 0 {
        tally.problem(Problem::of(
            Level::Problem,
            Kind::Skipped,
            Locator::Line {
                line: summarised_calls.1,
            },
            format!(
                "{} tools/call message(s) are logged as a summary (method=\"tools/call\" id=…) without their JSON, as Claude Desktop does from mid-2026; those calls cannot be judged",
                summarised_calls.0
            ),
        ));
    }
    let mut names: Vec<_> = servers.keys().cloned().collect();
    names.sort();
    for name in names {
        if let Some(s) = servers.get_mut(&name) {
            flush(s, tally);
        }
    }
    Ok(())
}

/// Calls still waiting when their server restarts or the log ends: no answer logged.
fn flush(server: &mut Server, tally: &mut Tally) {
    for id in std::mem::take(&mut server.order) {
        if let Some(p) = server.pending.remove(&id) {
            emit(tally, p);
        }
    }
}

fn emit(tally: &mut Tally, p: Pending) {
    tally.exchange(Exchange {
        locator: Locator::Line { line: p.line },
        payload: Payload::ClientLog(p.call),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_lines_are_recognised_and_nothing_else_is() {
        let m = |t| parse_summary(t).map(|s| s.method);
        assert_eq!(
            m(r#"method="tools/list" id=1 params { metadata: undefined }"#),
            Some(Some("tools/list"))
        );
        assert_eq!(
            m(r#"method="notifications/initialized""#),
            Some(Some("notifications/initialized"))
        );
        assert_eq!(m("id=0 result { metadata: undefined }"), Some(None));
        assert_eq!(m("id=7 error"), Some(None));
        // JSON, a cut line, free text: not a summary.
        assert_eq!(m(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#), None);
        assert_eq!(m(r#"{"method":"tools/call","par"#), None);
        assert_eq!(m("hello world"), None);
        assert_eq!(m(r#"method="tools/call id=3 params"#), None);
        assert_eq!(m("id= result"), None);
        assert_eq!(m(""), None);
    }
}
