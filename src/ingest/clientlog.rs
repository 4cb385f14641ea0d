//! Client logs as they are found on disk (field names confirmed against each
//! client's source where noted in `docs/input-formats.md`):
//!
//! - Claude Code session transcripts: `tool_use` blocks named `mcp__<server>__<tool>`
//!   paired with their `tool_result` by `tool_use_id`;
//! - Codex CLI rollouts: `mcp_tool_call_end` events (`invocation`, `duration`,
//!   `result` as `Ok`/`Err`), with `function_call`/`function_call_output` as fallback;
//! - OpenTelemetry spans (OTLP/JSON lines) with the MCP semantic conventions;
//! - text logs with one JSON-RPC message per line (VS Code's MCP output channel).
//!
//! Each MCP call becomes a `ClientCall`; what the log cannot show (ids on the wire,
//! HTTP status, SSE) is left empty rather than invented.

use super::{Problem, Sink};
use crate::model::{
    ClientCall, ClientResult, Direction, Exchange, Locator, Payload, StdioMessage, Timestamp,
};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Which client log a JSONL line belongs to.
pub fn kind_of(obj: &Map<String, Value>) -> Option<&'static str> {
    let ty = obj.get("type").and_then(Value::as_str).unwrap_or("");
    let claude_ids = ["sessionId", "leafUuid", "messageId", "uuid"]
        .iter()
        .any(|k| obj.contains_key(*k));
    if claude_ids
        && matches!(
            ty,
            "user"
                | "assistant"
                | "system"
                | "summary"
                | "progress"
                | "queue-operation"
                | "file-history-snapshot"
        )
    {
        return Some("claude-code");
    }
    if obj.contains_key("payload")
        && matches!(
            ty,
            "response_item" | "event_msg" | "session_meta" | "turn_context" | "compacted"
        )
    {
        return Some("codex");
    }
    if obj.contains_key("resourceSpans") {
        return Some("opentelemetry");
    }
    None
}

fn ts_of(v: Option<&Value>) -> Option<Timestamp> {
    match v? {
        Value::String(s) => Timestamp::parse(s),
        Value::Number(n) => Timestamp::parse(&n.to_string()),
        _ => None,
    }
}

/// `mcp__<server>__<tool>` → (server, tool). Server names may hold single underscores.
pub fn split_mcp_name(name: &str) -> Option<(String, String)> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then(|| (server.to_owned(), tool.to_owned()))
}

/// Text of a `tool_result` content: a string or a list of blocks.
fn content_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

#[derive(Debug)]
struct Pending {
    call: ClientCall,
    line: u64,
    /// Codex: an end event (authoritative) has been seen.
    ended_by_event: bool,
}

impl Pending {
    /// A call seen at `line` with no result yet; readers fill in what their log has.
    fn new(source: &'static str, call_id: &str, line: u64) -> Pending {
        Pending {
            call: ClientCall {
                source,
                call_id: call_id.to_owned(),
                session: None,
                server: None,
                tool: String::new(),
                arguments: None,
                result: ClientResult::Missing,
                started: None,
                ended: None,
                jsonrpc_code: None,
            },
            line,
            ended_by_event: false,
        }
    }
}

/// State across the lines of one input.
#[derive(Debug, Default)]
pub struct ClientLogs {
    claude: HashMap<String, Pending>,
    claude_order: Vec<String>,
    codex: HashMap<String, Pending>,
    codex_order: Vec<String>,
    codex_session: Option<String>,
}

impl ClientLogs {
    pub fn line(
        &mut self,
        kind: &'static str,
        obj: &Map<String, Value>,
        line: u64,
        sink: &mut dyn Sink,
    ) {
        match kind {
            "claude-code" => self.claude_line(obj, line, sink),
            "codex" => self.codex_line(obj, line),
            "opentelemetry" => otlp_line(obj, line, sink),
            _ => {}
        }
    }

    fn claude_line(&mut self, obj: &Map<String, Value>, line: u64, sink: &mut dyn Sink) {
        let ts = ts_of(obj.get("timestamp"));
        let session = obj
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let Some(content) = obj
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
        else {
            return;
        };
        for block in content {
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                    // Only MCP tools; built-in tools (Bash, Read, …) are skipped quietly.
                    let Some((server, tool)) = split_mcp_name(name) else {
                        continue;
                    };
                    let Some(id) = block.get("id").and_then(Value::as_str) else {
                        continue;
                    };
                    self.claude_order.push(id.to_owned());
                    let mut p = Pending::new("claude-code", id, line);
                    p.call.session = session.clone();
                    p.call.server = Some(server);
                    p.call.tool = tool;
                    p.call.arguments = Some(
                        block
                            .get("input")
                            .map(Value::to_string)
                            .unwrap_or_else(|| "{}".into()),
                    );
                    p.call.started = ts;
                    self.claude.insert(id.to_owned(), p);
                }
                Some("tool_result") => {
                    let Some(id) = block.get("tool_use_id").and_then(Value::as_str) else {
                        continue;
                    };
                    let Some(mut p) = self.claude.remove(id) else {
                        continue;
                    };
                    p.call.result = ClientResult::Text {
                        text: content_text(block.get("content")),
                        is_error: block
                            .get("is_error")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    };
                    p.call.ended = ts;
                    emit(sink, p);
                }
                _ => {}
            }
        }
    }

    fn codex_line(&mut self, obj: &Map<String, Value>, line: u64) {
        let ts = ts_of(obj.get("timestamp"));
        let Some(payload) = obj.get("payload").and_then(Value::as_object) else {
            return;
        };
        let ty = obj.get("type").and_then(Value::as_str).unwrap_or("");
        let pty = payload.get("type").and_then(Value::as_str).unwrap_or("");
        match (ty, pty) {
            ("session_meta", _) => {
                self.codex_session = payload.get("id").and_then(Value::as_str).map(str::to_owned);
            }
            ("response_item", "function_call") => {
                let name = payload.get("name").and_then(Value::as_str).unwrap_or("");
                let namespace = payload
                    .get("namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let (server, tool) = match (namespace.strip_prefix("mcp__"), split_mcp_name(name)) {
                    (Some(server), _) => (server.trim_end_matches('_').to_owned(), name.to_owned()),
                    (None, Some(st)) => st,
                    // Not an MCP tool by its name; an end event may still claim it.
                    _ => (String::new(), name.to_owned()),
                };
                let Some(id) = payload.get("call_id").and_then(Value::as_str) else {
                    return;
                };
                let args = payload.get("arguments").map(|a| match a {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
                self.codex_order.push(id.to_owned());
                let mut p = Pending::new("codex", id, line);
                p.call.session = self.codex_session.clone();
                p.call.server = (!server.is_empty()).then_some(server);
                p.call.tool = tool;
                p.call.arguments = Some(args.unwrap_or_else(|| "{}".into()));
                p.call.started = ts;
                self.codex.insert(id.to_owned(), p);
            }
            ("response_item", "function_call_output") => {
                let Some(id) = payload.get("call_id").and_then(Value::as_str) else {
                    return;
                };
                let Some(p) = self.codex.get_mut(id) else {
                    return;
                };
                if p.ended_by_event {
                    return;
                }
                let output = payload.get("output");
                let (text, failed) = match output {
                    Some(Value::String(s)) => (s.clone(), false),
                    Some(Value::Object(o)) => (
                        content_text(o.get("content")),
                        o.get("success").and_then(Value::as_bool) == Some(false),
                    ),
                    _ => (String::new(), false),
                };
                p.call.result = ClientResult::Text {
                    text,
                    is_error: failed,
                };
                p.call.ended = ts;
            }
            ("event_msg", "mcp_tool_call_end") => {
                let Some(id) = payload.get("call_id").and_then(Value::as_str) else {
                    return;
                };
                let inv = payload.get("invocation");
                let server = inv
                    .and_then(|i| i.get("server"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let tool = inv
                    .and_then(|i| i.get("tool"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let args = inv.and_then(|i| i.get("arguments")).map(Value::to_string);
                let duration_ms = payload.get("duration").and_then(|d| {
                    let secs = d.get("secs").and_then(Value::as_f64)?;
                    let nanos = d.get("nanos").and_then(Value::as_f64).unwrap_or(0.0);
                    Some(secs * 1000.0 + nanos / 1e6)
                });
                let result = match payload.get("result") {
                    Some(Value::Object(r)) if r.contains_key("Ok") => {
                        ClientResult::Result(r["Ok"].to_string())
                    }
                    Some(Value::Object(r)) if r.contains_key("Err") => {
                        ClientResult::Error(match &r["Err"] {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                    }
                    _ => ClientResult::Missing,
                };
                if !self.codex.contains_key(id) {
                    self.codex_order.push(id.to_owned());
                }
                let p = self
                    .codex
                    .entry(id.to_owned())
                    .or_insert_with(|| Pending::new("codex", id, line));
                p.ended_by_event = true;
                p.call.session = p.call.session.take().or_else(|| self.codex_session.clone());
                p.call.server = server.or(p.call.server.take());
                if !tool.is_empty() {
                    p.call.tool = tool;
                }
                if let Some(a) = args {
                    p.call.arguments = Some(a);
                }
                p.call.result = result;
                p.call.ended = ts;
                if p.call.started.is_none() {
                    p.call.started = match (ts, duration_ms) {
                        (Some(t), Some(ms)) => Some(t.plus_millis(-ms)),
                        _ => None,
                    };
                }
            }
            _ => {}
        }
    }

    /// Emits what is left: Claude Code calls without a result, and every Codex MCP
    /// call (held to the end because its end event and its output may come in either order).
    pub fn finish(mut self, sink: &mut dyn Sink) {
        for id in std::mem::take(&mut self.claude_order) {
            if let Some(p) = self.claude.remove(&id) {
                emit(sink, p);
            }
        }
        for id in std::mem::take(&mut self.codex_order) {
            if let Some(p) = self.codex.remove(&id) {
                // Only MCP calls: those an end event claimed or whose name says MCP.
                if p.ended_by_event || p.call.server.is_some() {
                    emit(sink, p);
                }
            }
        }
    }
}

fn emit(sink: &mut dyn Sink, p: Pending) {
    sink.exchange(Exchange {
        locator: Locator::Line { line: p.line },
        payload: Payload::ClientLog(p.call),
    });
}

/// OTLP attribute value as text.
fn attr_text(v: &Value) -> Option<String> {
    let v = v.get("value")?;
    for k in ["stringValue", "intValue", "doubleValue", "boolValue"] {
        if let Some(x) = v.get(k) {
            return Some(match x {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        }
    }
    None
}

fn attrs(v: Option<&Value>) -> HashMap<String, String> {
    v.and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|a| Some((a.get("key")?.as_str()?.to_owned(), attr_text(a)?)))
                .collect()
        })
        .unwrap_or_default()
}

fn nanos(v: Option<&Value>) -> Option<Timestamp> {
    let n: i64 = match v? {
        Value::String(s) => s.parse().ok()?,
        Value::Number(n) => n.as_i64()?,
        _ => return None,
    };
    Some(Timestamp(n))
}

/// One OTLP/JSON line: every `tools/call` span in it becomes a call.
fn otlp_line(obj: &Map<String, Value>, line: u64, sink: &mut dyn Sink) {
    let Some(resources) = obj.get("resourceSpans").and_then(Value::as_array) else {
        return;
    };
    for rs in resources {
        let resource = attrs(rs.get("resource").and_then(|r| r.get("attributes")));
        let service = resource.get("service.name").cloned();
        let scopes = rs
            .get("scopeSpans")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for span in scopes.iter().flat_map(|s| {
            s.get("spans")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
        }) {
            let a = attrs(span.get("attributes"));
            if a.get("mcp.method.name").map(String::as_str) != Some("tools/call") {
                continue;
            }
            let name = span.get("name").and_then(Value::as_str).unwrap_or("");
            let tool = a
                .get("gen_ai.tool.name")
                .or_else(|| a.get("mcp.tool.name"))
                .cloned()
                .or_else(|| name.strip_prefix("tools/call ").map(str::to_owned))
                .unwrap_or_default();
            // Client and server spans of the same call are kept apart by their side.
            let side = match span.get("kind").and_then(Value::as_i64) {
                Some(2) => "server",
                _ => "client",
            };
            let status_error = span
                .get("status")
                .and_then(|s| s.get("code"))
                .and_then(Value::as_i64)
                == Some(2);
            let message = span
                .get("status")
                .and_then(|s| s.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let code = a
                .get("rpc.response.status_code")
                .or_else(|| a.get("rpc.jsonrpc.error_code"))
                .and_then(|c| c.parse::<i64>().ok());
            let error_type = a.get("error.type").cloned();
            let result = match (&error_type, code) {
                (_, Some(c)) => {
                    ClientResult::Error(format!("JSON-RPC error {c} {message}").trim().to_owned())
                }
                (Some(t), None) if t == "tool_error" => ClientResult::Text {
                    text: message.clone(),
                    is_error: true,
                },
                (Some(t), None) => ClientResult::Error(format!("{t} {message}").trim().to_owned()),
                (None, None) if status_error => ClientResult::Error(message.clone()),
                (None, None) => ClientResult::Text {
                    text: String::new(),
                    is_error: false,
                },
            };
            let call_id = a
                .get("jsonrpc.request.id")
                .cloned()
                .or_else(|| {
                    span.get("spanId")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .unwrap_or_default();
            sink.exchange(Exchange {
                locator: Locator::Line { line },
                payload: Payload::ClientLog(ClientCall {
                    source: if side == "server" {
                        "opentelemetry-server"
                    } else {
                        "opentelemetry"
                    },
                    call_id,
                    session: a.get("mcp.session.id").cloned(),
                    server: a.get("server.address").cloned().or_else(|| service.clone()),
                    tool,
                    arguments: a.get("gen_ai.tool.call.arguments").cloned(),
                    result,
                    started: nanos(span.get("startTimeUnixNano")),
                    ended: nanos(span.get("endTimeUnixNano")),
                    jsonrpc_code: code,
                }),
            });
        }
    }
}

/// True when a text line looks like a one-message-per-line log (VS Code's output
/// channel writes `… [Client Says] {json}` and `… [Server Says] {json}`).
pub fn looks_like_message_log(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    text.lines().take(20).any(|l| message_in_line(l).is_some())
}

/// (direction, JSON text, timestamp) of a message log line.
fn message_in_line(line: &str) -> Option<(Option<Direction>, &str, Option<Timestamp>)> {
    let brace = line.find('{')?;
    let (prefix, json) = line.split_at(brace);
    if !json.contains("\"jsonrpc\"") {
        return None;
    }
    let p = prefix.to_ascii_lowercase();
    let dir = if p.contains("client says")
        || p.contains("-->")
        || p.contains(" send")
        || p.contains(">>")
    {
        Some(Direction::ClientToServer)
    } else if p.contains("server says")
        || p.contains("<--")
        || p.contains(" recv")
        || p.contains("<<")
    {
        Some(Direction::ServerToClient)
    } else {
        None
    };
    let ts = prefix
        .get(..23)
        .and_then(Timestamp::parse)
        .or_else(|| prefix.get(..19).and_then(Timestamp::parse));
    Some((dir, json.trim_end(), ts))
}

/// Reads a text message log; lines without a JSON-RPC message are skipped quietly
/// (such logs interleave connection chatter), lines whose JSON is cut are problems.
pub fn read_message_log(
    reader: &mut impl std::io::BufRead,
    max_line: usize,
    sink: &mut dyn Sink,
) -> std::io::Result<()> {
    let mut line_no = 0u64;
    let mut buf = Vec::new();
    while let Some((total, _)) = super::jsonl::read_line_capped(reader, &mut buf, max_line)? {
        line_no += 1;
        let locator = Locator::Line { line: line_no };
        if total > buf.len() as u64 {
            sink.problem(Problem::cap(locator, format!(
                    "line is {total} bytes, over the {max_line}-byte record limit; skipped (raise --max-record-bytes to read it)"
                )));
            buf.clear();
            continue;
        }
        let text = String::from_utf8_lossy(&buf).into_owned();
        buf.clear();
        let Some((dir, json, ts)) = message_in_line(&text) else {
            continue;
        };
        if serde_json::from_str::<serde::de::IgnoredAny>(json).is_err() {
            sink.problem(Problem::new(
                locator,
                "the JSON-RPC message on this line is not valid JSON (cut by the logger?)"
                    .to_owned(),
            ));
            continue;
        }
        sink.exchange(Exchange {
            locator,
            payload: Payload::Stdio(StdioMessage {
                dir,
                json: json.to_owned(),
                ts,
                checked: false,
                logged_by_client: true,
            }),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_mcp_tool_names() {
        assert_eq!(
            split_mcp_name("mcp__kitchen__run"),
            Some(("kitchen".into(), "run".into()))
        );
        assert_eq!(
            split_mcp_name("mcp__claude_ai_Gmail__search_threads"),
            Some(("claude_ai_Gmail".into(), "search_threads".into()))
        );
        assert_eq!(split_mcp_name("Bash"), None);
        assert_eq!(split_mcp_name("mcp__x"), None);
    }

    #[test]
    fn message_log_lines() {
        let (d, j, t) = message_in_line(
            "2026-08-10 09:31:00.970 [info] [Client Says] {\"jsonrpc\":\"2.0\",\"id\":4}",
        )
        .unwrap();
        assert_eq!(d, Some(Direction::ClientToServer));
        assert_eq!(j, "{\"jsonrpc\":\"2.0\",\"id\":4}");
        assert_eq!(t.unwrap().to_string(), "2026-08-10T09:31:00.970Z");
        assert!(message_in_line("2026-08-10 [info] Connection state: Running").is_none());
    }
}
