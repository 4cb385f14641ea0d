//! mcp-recorder cassettes (PyPI `mcp-recorder`, cassette format `1.x`): one JSON
//! document `{version, metadata: {recorded_at, server_url, transport_type?}, interactions[]}`.
//! Each interaction is `{type, request, response, response_is_sse, response_status,
//! latency_ms, http_method, http_path}`, written by a proxy between client and server,
//! so the evidence is the wire's. Quirks the reader keeps in mind:
//!
//! - `request`/`response` are decoded JSON-RPC objects, not HTTP bodies; of an SSE
//!   answer only the first `data:` event is kept, so the reader re-frames it as a
//!   one-event stream, cut (`End::Truncated`) when that event is not the answer;
//! - no headers, no session id and no per-interaction clock (`latency_ms` only):
//!   exchanges carry no timestamps;
//! - `lifecycle` interactions are bare `GET`/`DELETE` with `http_method`/`http_path`;
//! - a `transport_type: "stdio"` cassette went through a stdio bridge (status 200
//!   written by the proxy itself): its messages are read as stdio messages.

use super::shallow::{self, Object};
use super::{each_entry, parse_document, recorded, Kind, Tally};
use crate::ingest::{IngestError, Problem};
use crate::model::{
    Body, Direction, End, Exchange, Headers, HttpExchange, HttpRequest, HttpResponse, Locator,
    Payload,
};
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The document's first bytes (whitespace dropped) show an mcp-recorder cassette.
pub fn looks_like(doc: &[u8]) -> bool {
    use super::contains;
    contains(doc, "\"interactions\":[")
        && (contains(doc, "\"response_is_sse\":")
            || contains(doc, "\"interactions\":[]")
            || contains(doc, "\"interactions\":[{\"type\":\"jsonrpc_request\"")
            || contains(doc, "\"interactions\":[{\"type\":\"notification\"")
            || contains(doc, "\"interactions\":[{\"type\":\"lifecycle\""))
}

/// The members of an interaction the reader looks at.
const INTERACTION: &[&str] = &[
    "type",
    "request",
    "response",
    "response_is_sse",
    "response_status",
    "http_method",
    "http_path",
];

pub fn read(doc: &[u8], tally: &mut Tally) -> Result<(), IngestError> {
    let root = parse_document(doc, Kind::McpRecorder, &["interactions", "metadata"])?;
    let interactions = root.get("interactions");
    let meta = root.object("metadata", &["transport_type", "server_url"]);
    let meta_str = |k: &str| meta.as_ref().and_then(|m| m.str(k));
    let stdio = meta_str("transport_type").as_deref() == Some("stdio");
    let url = meta_str("server_url").unwrap_or_default().into_owned();
    let what = "an mcp-recorder cassette whose \"interactions\"";
    each_entry(interactions, what, |entry, it| {
        let locator = Locator::Entry { entry };
        match interaction(it, &url, stdio, &locator, tally) {
            Ok(()) => tally.used += 1,
            Err(message) => tally.problem(Problem::new(locator, message)),
        }
    })
}

fn interaction(
    it: &RawValue,
    url: &str,
    stdio: bool,
    locator: &Locator,
    tally: &mut Tally,
) -> Result<(), String> {
    let Some(o) = Object::of(it, INTERACTION) else {
        return Err("interaction is not a JSON object".to_owned());
    };
    let kind = o.str("type").unwrap_or_default();
    let status = match o.get("response_status") {
        None => 200, // the model's default
        Some(v) => v
            .get()
            .parse::<u64>()
            .ok()
            .filter(|s| (100..=599).contains(s))
            .ok_or_else(|| format!("\"response_status\" is not an HTTP status: {v}"))?
            as u16,
    };
    let sse = o.bool("response_is_sse") == Some(true);
    let request = o.get("request").filter(|r| shallow::is_object(r));
    let response = o.get("response").filter(|r| shallow::is_object(r));
    if kind == "lifecycle" {
        let method = o
            .str("http_method")
            .ok_or("lifecycle interaction without \"http_method\"")?;
        let path = o.str("http_path").unwrap_or_default();
        if stdio {
            return Ok(()); // the stdio bridge answers these itself; nothing crossed
        }
        push_http(
            tally,
            locator,
            &method,
            join(url, &path),
            Vec::new(),
            status,
            sse,
            None,
        );
        return Ok(());
    }
    if !matches!(&*kind, "jsonrpc_request" | "notification" | "") {
        return Err(format!("interaction of unknown type {kind:?}"));
    }
    let request = request.ok_or(
        "interaction without a JSON-RPC \"request\" object (the recorder drops batches and non-JSON bodies)",
    )?;
    if stdio {
        for (dir, m) in [
            (Direction::ClientToServer, Some(request)),
            (Direction::ServerToClient, response),
        ] {
            if let Some(m) = m {
                tally.exchange(Exchange {
                    locator: locator.clone(),
                    payload: Payload::Stdio(recorded(dir, shallow::compact(m), None)),
                });
            }
        }
        return Ok(());
    }
    let path = o.str("http_path").unwrap_or_default();
    push_http(
        tally,
        locator,
        &o.str("http_method").unwrap_or(Cow::Borrowed("POST")),
        join(url, &path),
        shallow::compact(request).into_bytes(),
        status,
        sse,
        response,
    );
    Ok(())
}

fn join(url: &str, path: &str) -> String {
    if path.is_empty() || url.ends_with(path) {
        url.to_owned()
    } else {
        format!("{}{path}", url.trim_end_matches('/'))
    }
}

#[allow(clippy::too_many_arguments)] // one call site per interaction kind, all named
fn push_http(
    tally: &mut Tally,
    locator: &Locator,
    method: &str,
    url: String,
    body: Vec<u8>,
    status: u16,
    sse: bool,
    response: Option<&RawValue>,
) {
    let mut req_headers = Headers::default();
    if !body.is_empty() {
        req_headers.push("content-type", "application/json");
    }
    let mut headers = Headers::default();
    // The recorder keeps the first SSE event only; when that is not a response (a
    // progress notification came first), the answer was cut from the file.
    let cut = sse
        && response
            .and_then(|r| Object::of(r, &["result", "error"]))
            .is_some_and(|r| !r.has("result") && !r.has("error"));
    let body_out = if sse {
        headers.push("content-type", "text/event-stream");
        // Only the first event was kept: re-framed as the one event the file shows.
        let text = response
            .map(|r| format!("event: message\ndata: {}\n\n", shallow::compact(r)))
            .unwrap_or_default();
        // One event at most: the default budget is room enough.
        Body::Sse(crate::sse::parse_body(
            text.as_bytes(),
            crate::sse::Budget::default(),
        ))
    } else {
        match response {
            Some(r) => {
                headers.push("content-type", "application/json");
                Body::Bytes(shallow::compact(r).into_bytes())
            }
            None => Body::Bytes(Vec::new()),
        }
    };
    tally.exchange(Exchange {
        locator: locator.clone(),
        payload: Payload::Http(HttpExchange {
            request: HttpRequest {
                method: method.to_owned(),
                url,
                headers: req_headers,
                body,
                ts: None,
            },
            response: Some(HttpResponse {
                status,
                headers,
                body: body_out,
                ts: None,
            }),
            end: if cut { End::Truncated } else { End::Complete },
            end_ts: None,
            recorder_note: cut.then(|| {
                "mcp-recorder kept only the first SSE event of this stream, and it is not the answer"
                    .to_owned()
            }),
            tcp: None,
            part: None,
        }),
    });
}
