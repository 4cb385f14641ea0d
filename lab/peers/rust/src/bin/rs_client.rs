//! Real MCP client built on the official Rust SDK (rmcp). Driven by the same JSON plan as
//! ts_client.mjs and py_client.py (file path in argv[1]):
//! {"transport":"streamable"|"stdio", "url":..., "command":[...], "observe":"out.json",
//!  "mode":"initialize"|"auto", "steps":[{"op":"call","tool":..,"args":{..},"timeout_ms":..,"progress":bool,
//!  "on_error":{"action":"retry"|"reconnect_retry","delay_ms":N}}, {"op":"sleep","ms":N}]}
//! It records what the SDK returned or raised per attempt into plan.observe.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    Implementation, ProgressNotificationParam, ServerResult,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, PeerRequestOptions, RunningService,
    ServiceError,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{json, Value};

#[derive(Clone)]
struct Handler {
    progress: Arc<AtomicU64>,
    obs: Obs,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        _params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.fetch_add(1, Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("lab-rs-client", "1.0.0"),
        )
    }
}

#[derive(Clone)]
struct Obs {
    t0: Instant,
    events: Arc<Mutex<Vec<Value>>>,
}

impl Obs {
    fn note(&self, mut ev: Value) {
        ev["t_ms"] = json!(self.t0.elapsed().as_millis() as u64);
        eprintln!("[rs_client] {ev}");
        self.events.lock().unwrap().push(ev);
    }
}

type Client = RunningService<RoleClient, Handler>;

async fn connect(plan: &Value, handler: Handler) -> Result<Client, String> {
    let lifecycle = match plan["mode"].as_str() {
        Some("auto") => ClientLifecycleMode::Auto {
            preferred_versions: vec![rmcp::model::ProtocolVersion::LATEST],
            legacy_version: None,
        },
        _ => ClientLifecycleMode::Initialize, // what ServiceExt::serve does
    };
    let obs = handler.obs.clone();
    let client = match plan["transport"].as_str() {
        Some("streamable") => {
            // SDK defaults throughout, reconnection policy included (ExponentialBackoff: 1 s base,
            // no limit), so the captures show what an rmcp client does out of the box.
            let config = StreamableHttpClientTransportConfig::with_uri(
                plan["url"].as_str().unwrap_or_default(),
            );
            let transport = StreamableHttpClientTransport::from_config(config);
            handler.serve_with_lifecycle(transport, lifecycle).await
        }
        Some("stdio") => {
            let cmd: Vec<String> = plan["command"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let mut command = tokio::process::Command::new(&cmd[0]);
            command.args(&cmd[1..]);
            let transport = TokioChildProcess::new(command).map_err(|e| e.to_string())?;
            handler.serve_with_lifecycle(transport, lifecycle).await
        }
        other => return Err(format!("unknown transport {other:?}")),
    }
    .map_err(|e| format!("{e:?}"))?;
    let info = client.peer_info();
    obs.note(json!({"event": "connected",
                    "protocol_version": info.as_ref().map(|i| i.protocol_version.to_string())}));
    match client.list_tools(Default::default()).await {
        Ok(t) => obs.note(json!({"event": "tools/list",
                                 "tools": t.tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>()})),
        Err(e) => obs.note(json!({"event": "tools/list", "error": describe(&e)})),
    }
    Ok(client)
}

fn describe(e: &ServiceError) -> Value {
    let kind = match e {
        ServiceError::McpError(_) => "McpError",
        ServiceError::TransportSend(_) => "TransportSend",
        ServiceError::TransportClosed => "TransportClosed",
        ServiceError::UnexpectedResponse => "UnexpectedResponse",
        ServiceError::Timeout { .. } => "Timeout",
        ServiceError::Cancelled { .. } => "Cancelled",
        _ => "other",
    };
    let code = match e {
        ServiceError::McpError(m) => json!(m.code.0),
        _ => Value::Null,
    };
    let mut msg = e.to_string();
    msg.truncate(300);
    json!({"error_name": kind, "code": code, "message": msg})
}

async fn call_once(
    client: &Client,
    progress: &AtomicU64,
    obs: &Obs,
    step: &Value,
    attempt: u32,
) -> bool {
    let tool = step["tool"].as_str().unwrap_or_default().to_owned();
    let args = step["args"].as_object().cloned().unwrap_or_default();
    let timeout = Duration::from_millis(step["timeout_ms"].as_u64().unwrap_or(10_000));
    progress.store(0, Ordering::SeqCst);
    let started = Instant::now();
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new(tool.clone()).with_arguments(args),
    ));
    // The SDK's own request timeout (it sends notifications/cancelled when it fires); Peer::call_tool
    // has none, so the plan's timeout_ms is given here as the other lab clients do.
    let result = match client
        .peer()
        .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
        .await
    {
        Ok(handle) => handle.await_response().await,
        Err(e) => Err(e),
    };
    let elapsed = started.elapsed().as_millis() as u64;
    let seen = progress.load(Ordering::SeqCst);
    match result {
        Ok(ServerResult::CallToolResult(r)) => {
            let text = r
                .content
                .first()
                .and_then(|c| c.as_text())
                .map(|t| t.text.clone());
            obs.note(json!({"event": "call", "tool": tool, "attempt": attempt, "outcome": "returned",
                            "isError": r.is_error.unwrap_or(false), "progress_seen": seen, "text": text,
                            "elapsed_ms": elapsed}));
            true
        }
        Ok(other) => {
            obs.note(json!({"event": "call", "tool": tool, "attempt": attempt, "outcome": "unexpected_result",
                            "result": format!("{other:?}").chars().take(300).collect::<String>(),
                            "elapsed_ms": elapsed}));
            false
        }
        Err(e) => {
            let mut ev = json!({"event": "call", "tool": tool, "attempt": attempt, "outcome": "threw",
                                "progress_seen": seen, "elapsed_ms": elapsed});
            if let (Value::Object(m), Value::Object(d)) = (&mut ev, describe(&e)) {
                m.extend(d);
            }
            obs.note(ev);
            false
        }
    }
}

#[tokio::main]
async fn main() {
    let path = std::env::args().nth(1).expect("plan path");
    let plan: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("plan")).expect("plan is JSON");
    let obs = Obs {
        t0: Instant::now(),
        events: Arc::new(Mutex::new(Vec::new())),
    };
    let progress = Arc::new(AtomicU64::new(0));
    let handler = Handler {
        progress: progress.clone(),
        obs: obs.clone(),
    };
    let mut client = match connect(&plan, handler.clone()).await {
        Ok(c) => Some(c),
        Err(e) => {
            obs.note(json!({"event": "fatal", "message": e}));
            None
        }
    };
    for step in plan["steps"].as_array().cloned().unwrap_or_default() {
        let Some(c) = client.as_ref() else { break };
        match step["op"].as_str() {
            Some("sleep") => {
                tokio::time::sleep(Duration::from_millis(step["ms"].as_u64().unwrap_or(0))).await
            }
            Some("call") => {
                if call_once(c, &progress, &obs, &step, 1).await {
                    continue;
                }
                let Some(oe) = step.get("on_error") else {
                    continue;
                };
                let delay = oe["delay_ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(delay)).await;
                if oe["action"] == "reconnect_retry" {
                    if let Some(old) = client.take() {
                        let _ = old.cancel().await;
                    }
                    obs.note(json!({"event": "script.reconnect"}));
                    match connect(&plan, handler.clone()).await {
                        Ok(n) => client = Some(n),
                        Err(e) => {
                            obs.note(json!({"event": "fatal", "message": e}));
                            break;
                        }
                    }
                }
                let Some(c) = client.as_ref() else { break };
                obs.note(json!({"event": "script.retry", "tool": step["tool"], "delay_ms": delay}));
                call_once(c, &progress, &obs, &step, 2).await;
            }
            _ => {}
        }
    }
    if let Some(c) = client {
        let _ = c.cancel().await;
    }
    obs.note(json!({"event": "closed"}));
    let doc = json!({"client": "rust-sdk", "transport": plan["transport"],
                     "events": *obs.events.lock().unwrap()});
    if let Some(out) = plan["observe"].as_str() {
        std::fs::write(
            out,
            format!("{}\n", serde_json::to_string_pretty(&doc).unwrap()),
        )
        .ok();
    }
}
