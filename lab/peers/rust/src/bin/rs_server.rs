//! Real MCP server built on the official Rust SDK (rmcp, pinned in lab/peers/rust/Cargo.toml).
//!
//! Usage: rs_server --transport streamable|stdio [--port N] [--json] [--event-store]
//! Loopback only (127.0.0.1). Tools: read_note, delete_file, fail_tool, slow_progress, the same
//! names, schemas, annotations and texts as ts_server.mjs and py_server.py. Streamable HTTP runs in
//! the SDK's default session mode (Mcp-Session-Id, SSE responses with priming event ids); --json
//! turns session mode off and asks for application/json answers (the SDK ties JSON responses to
//! its stateless mode). --event-store keeps every SSE event in memory (rmcp's EventStore trait,
//! like ts_server.mjs's InMemoryEventStore), so a GET with Last-Event-ID replays what a cut stream
//! missed. rmcp 3.11 has no legacy HTTP+SSE server, so there is no legacy-sse here.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{
    EventStore, EventStoreError, EventStream, ServerSseMessage,
};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};

#[derive(Clone)]
struct Lab {
    // shared by every session of the process, like the other lab servers' module-level counter
    deletions: Arc<AtomicU64>,
}

fn text(t: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t)])
}

fn tools() -> Vec<Tool> {
    let defs = json!([
        {"name": "read_note", "description": "Read a note by name (read-only).",
         "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
         "annotations": {"readOnlyHint": true, "idempotentHint": true, "destructiveHint": false}},
        {"name": "delete_file", "description": "Delete a file (destructive, not idempotent). Simulated: nothing is deleted.",
         "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
         "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false}},
        {"name": "fail_tool", "description": "Always fails with a tool-level error (isError: true).",
         "inputSchema": {"type": "object", "properties": {"reason": {"type": "string"}}},
         "annotations": {"readOnlyHint": true}},
        {"name": "slow_progress",
         "description": "Sends notifications/progress (when the caller gave a progressToken) before its result.",
         "inputSchema": {"type": "object", "properties": {
             "steps": {"type": "integer", "minimum": 1, "maximum": 10},
             "delay_ms": {"type": "integer", "minimum": 0, "maximum": 2000}}, "required": ["steps", "delay_ms"]},
         "annotations": {"readOnlyHint": true, "idempotentHint": true, "destructiveHint": false}}
    ]);
    serde_json::from_value(defs).expect("tool definitions match rmcp's Tool")
}

fn arg<'a>(req: &'a CallToolRequestParams, key: &str) -> Option<&'a Value> {
    req.arguments.as_ref().and_then(|a| a.get(key))
}

fn str_arg(req: &CallToolRequestParams, key: &str) -> Result<String, ErrorData> {
    arg(req, key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ErrorData::invalid_params(format!("{key}: string required"), None))
}

fn int_arg(req: &CallToolRequestParams, key: &str, max: u64) -> Result<u64, ErrorData> {
    arg(req, key)
        .and_then(Value::as_u64)
        .filter(|n| *n <= max)
        .ok_or_else(|| {
            ErrorData::invalid_params(format!("{key}: integer 0..={max} required"), None)
        })
}

impl ServerHandler for Lab {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("lab-rs-server", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        req: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = match req.name.as_ref() {
            "read_note" => text(format!(
                "note {}: remember the milk",
                str_arg(&req, "name")?
            )),
            "delete_file" => {
                let path = str_arg(&req, "path")?;
                let n = self.deletions.fetch_add(1, Ordering::SeqCst) + 1;
                text(format!(
                    "deleted {path} (deletion #{n} in this server process)"
                ))
            }
            "fail_tool" => {
                let reason = arg(&req, "reason")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason");
                CallToolResult::error(vec![ContentBlock::text(format!(
                    "fail_tool failed: {reason}"
                ))])
            }
            "slow_progress" => {
                let steps = int_arg(&req, "steps", 10)?.max(1);
                let delay = int_arg(&req, "delay_ms", 2000)?;
                let token = ctx.meta.get_progress_token();
                for i in 1..=steps {
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                    if let Some(token) = token.clone() {
                        let p = ProgressNotificationParam::new(token, i as f64)
                            .with_total(steps as f64)
                            .with_message(format!("step {i}/{steps}"));
                        // a peer that went away is not the tool's failure: the result is still produced
                        let _ = ctx.peer.notify_progress(p).await;
                    }
                }
                text(format!("slow_progress done after {steps} steps"))
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool {other}"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}

/// Every event of every stream, in the order stored; ids are this process's own counter.
#[derive(Default)]
struct MemoryEvents {
    events: tokio::sync::Mutex<Vec<(String, ServerSseMessage)>>,
    next: AtomicU64,
}

#[async_trait::async_trait]
impl EventStore for MemoryEvents {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<String, EventStoreError> {
        let id = format!("ev-{}", self.next.fetch_add(1, Ordering::SeqCst));
        let mut event = event.clone();
        event.event_id = Some(id.clone());
        self.events.lock().await.push((stream_id.to_owned(), event));
        Ok(id)
    }

    async fn replay_events_after(
        &self,
        last_event_id: &str,
    ) -> Result<EventStream, EventStoreError> {
        let events = self.events.lock().await;
        let at = events
            .iter()
            .position(|(_, e)| e.event_id.as_deref() == Some(last_event_id))
            .ok_or_else(|| std::io::Error::other(format!("no event {last_event_id}")))?;
        let stream = events[at].0.clone();
        let later: Vec<_> = events[at + 1..]
            .iter()
            .filter(|(s, _)| *s == stream)
            .map(|(_, e)| e.clone())
            .collect();
        Ok(Box::pin(futures::stream::iter(later)))
    }
}

fn opt(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let transport = opt(&args, "--transport").unwrap_or_else(|| "streamable".into());
    let port: u16 = opt(&args, "--port")
        .map(|p| p.parse())
        .transpose()?
        .unwrap_or(18082);
    let json_mode = args.iter().any(|a| a == "--json");
    let event_store = args.iter().any(|a| a == "--event-store");
    let lab = Lab {
        deletions: Arc::new(AtomicU64::new(0)),
    };
    match transport.as_str() {
        "stdio" => {
            eprintln!("[rs_server] stdio ready");
            let running = lab.serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
        }
        "streamable" => {
            let config = StreamableHttpServerConfig::default()
                .with_legacy_session_mode(!json_mode)
                .with_json_response(json_mode);
            let mut sessions = LocalSessionManager::default();
            if event_store {
                sessions = sessions.with_event_store(Arc::new(MemoryEvents::default()));
            }
            let service = TowerToHyperService::new(StreamableHttpService::new(
                move || Ok(lab.clone()),
                sessions.into(),
                config,
            ));
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
            eprintln!(
                "[rs_server] streamable http on 127.0.0.1:{port} json={json_mode} eventStore={event_store}"
            );
            loop {
                let io = tokio::select! {
                    _ = tokio::signal::ctrl_c() => break,
                    accept = listener.accept() => TokioIo::new(accept?.0),
                };
                let service = service.clone();
                tokio::spawn(async move {
                    let _ = Builder::new(TokioExecutor::default())
                        .serve_connection(io, service)
                        .await;
                });
            }
        }
        other => {
            eprintln!("[rs_server] unknown transport {other}");
            std::process::exit(2);
        }
    }
    Ok(())
}
