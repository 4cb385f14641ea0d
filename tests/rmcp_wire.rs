//! Where the official Rust SDK (rmcp 3.11.0) puts different bytes on the wire than the
//! TypeScript and Python SDKs, pinned on the lab's rmcp captures (`lab/captures/*_rs*`),
//! in every format each was recorded in:
//! - its transport re-initializes an expired session by itself and re-sends the call
//!   with the same JSON-RPC id on the new session;
//! - after a cut SSE stream it resumes at once with `Last-Event-ID` (ids like `3/1`),
//!   and the rmcp server answers with empty streams, so nothing completes the call,
//!   unless it has an `EventStore`, whose replay on the GET does;
//! - on a client's `notifications/cancelled` the rmcp server ends the call's SSE stream
//!   cleanly (terminating chunk) without a response;
//! - every request carries `_meta.progressToken`, `tools/list` included;
//! - `initialize` offers 2026-07-28 and settles on 2025-11-25; with `server/discover`
//!   (the Python client, or rmcp's own in `ClientLifecycleMode::Auto`) the rmcp server
//!   speaks stateless 2026-07-28, and rmcp's client adds `Mcp-Method`/`Mcp-Name` headers.
//!
//! The wire facts each test starts from are read from the captures here, not from
//! mcpsift.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const FORMATS: [&str; 4] = [
    "capture.pcap",
    "capture.pcapng",
    "capture.har",
    "exchanges.jsonl",
];

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("lab/captures")
        .join(name)
}

/// The report's records for one capture file.
fn analyse(path: &Path) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_mcpsift"))
        .args(["analyze", path.to_str().unwrap(), "--format", "jsonl"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn of_type<'a>(records: &'a [Value], kind: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["type"] == kind).collect()
}

/// The exchange records of a scenario's JSONL capture, for the wire facts.
fn exchanges(name: &str) -> Vec<Value> {
    std::fs::read_to_string(scenario(name).join("exchanges.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn request_json(x: &Value) -> Value {
    serde_json::from_str(x["request"]["body"].as_str().unwrap_or("")).unwrap_or(Value::Null)
}

fn header<'a>(headers: &'a Value, name: &str) -> Option<&'a str> {
    headers.as_array()?.iter().find_map(|h| {
        (h[0].as_str()?.eq_ignore_ascii_case(name))
            .then(|| h[1].as_str())
            .flatten()
    })
}

#[test]
fn rmcp_reinitializes_and_resends_the_same_id_on_a_new_session() {
    // Wire: two initialize requests, and delete_file sent twice with id 3 under two
    // different Mcp-Session-Id values, the first answered 404.
    let xs = exchanges("session_expired_404_rs");
    let inits = xs
        .iter()
        .filter(|x| request_json(x)["method"] == "initialize")
        .count();
    assert_eq!(inits, 2);
    let deletes: Vec<_> = xs
        .iter()
        .filter(|x| request_json(x)["params"]["name"] == "delete_file")
        .collect();
    assert_eq!(deletes.len(), 2);
    assert_eq!(request_json(deletes[0])["id"], 3);
    assert_eq!(request_json(deletes[1])["id"], 3);
    assert_eq!(deletes[0]["response"]["status"], 404);
    let sid = |x: &Value| header(&x["request"]["headers"], "mcp-session-id").map(str::to_owned);
    assert_ne!(sid(deletes[0]), sid(deletes[1]));

    for format in FORMATS {
        let r = analyse(&scenario("session_expired_404_rs").join(format));
        let calls = of_type(&r, "call");
        let del: Vec<_> = calls
            .iter()
            .filter(|c| c["tool"] == "delete_file")
            .collect();
        assert_eq!(del.len(), 2, "{format}");
        assert_eq!(del[0]["outcome"], "HTTP_ERROR", "{format}");
        assert_eq!(del[1]["outcome"], "TOOL_SUCCESS", "{format}");
        assert_ne!(
            del[0]["scope"], del[1]["scope"],
            "{format}: one scope per session"
        );
        // The re-send is the SDK's own, linked to the attempt the 404 refused.
        assert_eq!(del[1]["retry_origin"], "protocol", "{format}");
        assert_eq!(
            del[1]["previous_attempt"]["outcome"], "HTTP_ERROR",
            "{format}"
        );
        assert!(of_type(&r, "finding").is_empty(), "{format}: {r:?}");
        for c in &calls {
            assert_eq!(c["protocol_version"], "2025-11-25", "{format}");
        }
    }
}

#[test]
fn rmcp_resumes_at_once_and_empty_replays_do_not_complete_the_call() {
    // Wire: the POST's stream is cut; GETs with Last-Event-ID follow, each answered 200
    // with an empty body; the stream's priming event asked for retry: 3000.
    let xs = exchanges("sse_cut_rs");
    let post = xs
        .iter()
        .find(|x| request_json(x)["params"]["name"] == "slow_progress")
        .unwrap();
    assert!(post["response"]["body"]
        .as_str()
        .unwrap()
        .contains("retry: 3000"));
    let resumes: Vec<_> = xs
        .iter()
        .filter(|x| header(&x["request"]["headers"], "last-event-id").is_some())
        .collect();
    assert!(resumes.len() >= 2, "{} resumptions", resumes.len());
    for g in &resumes {
        assert_eq!(g["request"]["method"], "GET");
        assert_eq!(g["response"]["status"], 200);
        assert_eq!(g["response"]["body"], "");
    }

    for format in FORMATS {
        let r = analyse(&scenario("sse_cut_rs").join(format));
        let slow = of_type(&r, "call")
            .into_iter()
            .find(|c| c["tool"] == "slow_progress")
            .unwrap();
        assert_eq!(slow["outcome"], "STREAM_INCOMPLETE", "{format}");
        let findings = of_type(&r, "finding");
        let too_soon = findings
            .iter()
            .find(|f| f["kind"] == "RETRY_TOO_SOON")
            .unwrap_or_else(|| panic!("{format}: {findings:?}"));
        assert!(
            too_soon["detail"].as_str().unwrap().contains("3000 ms"),
            "{format}: {too_soon}"
        );
        // The client's cancel came after the cut: not a cancellation of a live call.
        let non_terminal = findings
            .iter()
            .find(|f| f["kind"] == "NON_TERMINAL")
            .unwrap();
        assert_ne!(non_terminal["severity"], "INFO", "{format}");
    }
}

#[test]
fn a_replay_from_the_rmcp_event_store_completes_the_cut_call() {
    // Wire: the POST's stream is cut with no response; the GET that carries
    // Last-Event-ID (ids like ev-5) holds the response for the same id.
    let xs = exchanges("sse_cut_resumed_rs");
    let post = xs
        .iter()
        .find(|x| request_json(x)["params"]["name"] == "slow_progress")
        .unwrap();
    assert_eq!(post["end"], "closed");
    assert!(!post["response"]["body"]
        .as_str()
        .unwrap()
        .contains("\"result\""));
    let resume = xs
        .iter()
        .find(|x| header(&x["request"]["headers"], "last-event-id").is_some())
        .unwrap();
    assert!(header(&resume["request"]["headers"], "last-event-id")
        .unwrap()
        .starts_with("ev-"));
    assert!(resume["response"]["body"]
        .as_str()
        .unwrap()
        .contains("\"id\":2,\"result\""));

    for format in FORMATS {
        let r = analyse(&scenario("sse_cut_resumed_rs").join(format));
        let slow = of_type(&r, "call")
            .into_iter()
            .find(|c| c["tool"] == "slow_progress")
            .unwrap();
        assert_eq!(slow["outcome"], "TOOL_SUCCESS", "{format}");
        let kinds: Vec<_> = of_type(&r, "finding")
            .iter()
            .map(|f| f["kind"].clone())
            .collect();
        assert_eq!(kinds, vec![Value::from("RETRY_TOO_SOON")], "{format}");
    }
}

#[test]
fn a_stream_the_rmcp_server_ends_after_a_cancel_is_a_cancellation() {
    // Wire: notifications/cancelled for id 3, then the id-3 stream ends with its
    // terminating chunk, holding no response for id 3.
    let xs = exchanges("cancel_timeout_rs");
    let cancel = xs
        .iter()
        .find(|x| request_json(x)["method"] == "notifications/cancelled")
        .unwrap();
    assert_eq!(request_json(cancel)["params"]["requestId"], 3);
    assert_eq!(request_json(cancel)["params"]["reason"], "request timeout");
    let call = xs.iter().find(|x| request_json(x)["id"] == 3).unwrap();
    assert_eq!(call["end"], "complete");
    assert!(!call["response"]["body"]
        .as_str()
        .unwrap()
        .contains("\"id\":3"));

    for format in FORMATS {
        let r = analyse(&scenario("cancel_timeout_rs").join(format));
        let slow = of_type(&r, "call")
            .into_iter()
            .find(|c| c["id"] == 3)
            .unwrap();
        assert_eq!(slow["outcome"], "STREAM_INCOMPLETE", "{format}");
        let findings = of_type(&r, "finding");
        assert_eq!(findings.len(), 1, "{format}: {findings:?}");
        assert_eq!(findings[0]["kind"], "NON_TERMINAL");
        assert_eq!(findings[0]["severity"], "INFO", "{format}");
        assert!(
            findings[0]["detail"]
                .as_str()
                .unwrap()
                .contains("cancelled by the client"),
            "{format}: {}",
            findings[0]
        );
    }
}

#[test]
fn rmcp_progress_tokens_on_every_request_change_nothing() {
    // Wire: tools/list and every tools/call carry _meta.progressToken, numbered from 0.
    let xs = exchanges("baseline_rs_sse");
    let tokens: Vec<_> = xs
        .iter()
        .map(request_json)
        .filter(|m| m.get("id").is_some() && m["method"] != "initialize")
        .map(|m| {
            (
                m["method"].clone(),
                m["params"]["_meta"]["progressToken"].clone(),
            )
        })
        .collect();
    assert_eq!(
        tokens,
        vec![
            ("tools/list".into(), 0.into()),
            ("tools/call".into(), 1.into()),
            ("tools/call".into(), 2.into()),
            ("tools/call".into(), 3.into()),
        ]
    );
    let init = xs
        .iter()
        .map(request_json)
        .find(|m| m["method"] == "initialize")
        .unwrap();
    assert_eq!(init["params"]["protocolVersion"], "2026-07-28");

    for format in FORMATS {
        let r = analyse(&scenario("baseline_rs_sse").join(format));
        let calls = of_type(&r, "call");
        assert_eq!(calls.len(), 3, "{format}");
        for c in &calls {
            assert_eq!(c["outcome"], "TOOL_SUCCESS", "{format}");
            assert_eq!(c["protocol_version"], "2025-11-25", "{format}");
        }
        assert!(of_type(&r, "finding").is_empty(), "{format}");
    }
}

#[test]
fn rmcp_server_speaks_stateless_2026_07_28_after_server_discover() {
    // The Python client (auto) and the rmcp client in ClientLifecycleMode::Auto both
    // probe with server/discover and then send no session id; rmcp's own client adds
    // the SEP-2243 headers Mcp-Method and Mcp-Name to each tools/call.
    for (name, rmcp_client) in [
        ("cross_py_client_rs_server", false),
        ("baseline_rs_auto", true),
    ] {
        let xs = exchanges(name);
        assert_eq!(request_json(&xs[0])["method"], "server/discover", "{name}");
        assert!(xs
            .iter()
            .all(|x| header(&x["request"]["headers"], "mcp-session-id").is_none()));
        assert!(!xs.iter().any(|x| request_json(x)["method"] == "initialize"));
        if rmcp_client {
            for x in xs
                .iter()
                .filter(|x| request_json(x)["method"] == "tools/call")
            {
                let h = &x["request"]["headers"];
                assert_eq!(header(h, "mcp-method"), Some("tools/call"), "{name}");
                assert_eq!(
                    header(h, "mcp-name"),
                    request_json(x)["params"]["name"].as_str(),
                    "{name}"
                );
            }
        }
        for format in FORMATS {
            let r = analyse(&scenario(name).join(format));
            let calls = of_type(&r, "call");
            assert_eq!(calls.len(), 3, "{name} {format}");
            for c in &calls {
                assert_eq!(c["outcome"], "TOOL_SUCCESS", "{name} {format}");
                assert_eq!(c["protocol_version"], "2026-07-28", "{name} {format}");
            }
            assert!(of_type(&r, "finding").is_empty(), "{name} {format}");
        }
    }
}
