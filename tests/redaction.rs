//! Redaction end to end: secrets planted in every input format mcpsift reads must
//! not appear in any output format (table, Markdown, json, jsonl, the `--report`
//! file, the baseline file, stderr), and `--no-redact` must bring them back (so the
//! plants do reach the output and the test is not vacuous).
//!
//! Adding an input format (HAR, pcap) is one line in `inputs()`: a file name and
//! the bytes of a capture that carries the same `SECRETS`.

mod common;

use common::{Capture, Link, Side};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

/// Every planted secret. Each is unique, so a hit names the leak.
const SECRETS: &[&str] = &[
    "authz-hdr-9f8e7d6c5b4a",
    "cookie-val-1a2b3c4d5e",
    "setcookie-val-6f7a8b9c",
    "proxyauth-val-0d1e2f3a",
    "xapikey-val-4b5c6d7e8f",
    "qs-access-token-2468ace",
    "qs-code-13579bdf",
    "body-refresh-token-1122",
    "body-client-secret-3344",
    "body-password-5566",
    "body-code-verifier-7788",
    "body-id-token-9900",
    "oauth-code-abcdef12",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJsZWFrIn0.c2lnbmF0dXJlLWxlYWs",
    "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm",
    "ghp_Qw3Er4Ty5Ui6Op7As8Df9Gh0Jk",
    "bearer-in-error-msg-777888999",
    "5e55-10n-1d-f00d-cafe-babe",
    "stdio-password-24680",
    "stdio-api-key-sk_live_abcdefghij0123456789",
    "tee-token-eyJzdGRpbyI6InRlZSJ9eyJ4IjoxfQ",
    "skipped-file-bearer-31415926",
];

fn s(i: usize) -> &'static str {
    SECRETS[i]
}

fn http_record(ts: &str, body: Value, response: Value, extra: Value) -> String {
    let mut rec = json!({
        "ts": ts,
        "request": {
            "method": "POST",
            "url": format!("https://mcp.example/mcp?access_token={}&code={}&x=1", s(5), s(6)),
            "headers": [
                ["Content-Type", "application/json"],
                ["Authorization", format!("Bearer {}", s(0))],
                ["Cookie", format!("sid={}; theme=dark", s(1))],
                ["Proxy-Authorization", format!("Basic {}", s(3))],
                ["X-Api-Key", s(4)],
                ["Mcp-Session-Id", s(17)],
            ],
            "body": body.to_string(),
        },
        "response": response,
    });
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            rec[k] = v;
        }
    }
    rec.to_string()
}

fn call(id: i64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
}

/// JSONL HTTP exchange records: secrets in headers, query strings, request and
/// response bodies, error messages and data, SSE tails and recorder notes.
fn jsonl_http() -> Vec<u8> {
    let oauth_args = json!({
        "refresh_token": s(7), "client_secret": s(8), "password": s(9),
        "code_verifier": s(10), "id_token": s(11), "code": s(12)
    });
    let set_cookie = json!([
        ["Content-Type", "application/json"],
        ["Set-Cookie", format!("sid={}; HttpOnly", s(2))]
    ]);
    let lines = [
        // HTTP 500 whose body echoes every secret.
        http_record(
            "2026-12-01T10:00:00.000Z",
            call(1, "login", oauth_args.clone()),
            json!({"status": 500, "headers": set_cookie, "body": json!({
                "jsonrpc": "2.0", "id": 1,
                "result": {"content": [{"type": "text", "text": format!(
                    "token {} key {} gh {} args {}", s(13), s(14), s(15), oauth_args)}]}
            }).to_string()}),
            json!({}),
        ),
        // A JSON-RPC error with a bearer token in its message and secrets in data.
        http_record(
            "2026-12-01T10:00:01.000Z",
            call(2, "login", json!({"user": "bob"})),
            json!({"status": 200, "headers": [["Content-Type", "application/json"]], "body": json!({
                "jsonrpc": "2.0", "id": 2,
                "error": {"code": -32602, "message": format!("rejected Authorization: Bearer {} in session {}", s(18), s(17)),
                          "data": {"refresh_token": s(7), "echo": format!("access_token={}", s(5))}}
            }).to_string()}),
            json!({}),
        ),
        // A tool error whose text carries a password and a JWT.
        http_record(
            "2026-12-01T10:00:02.000Z",
            call(3, "login", json!({"user": "bob"})),
            json!({"status": 200, "headers": [["Content-Type", "application/json"]], "body": json!({
                "jsonrpc": "2.0", "id": 3,
                "result": {"isError": true, "content": [{"type": "text", "text": format!(
                    "bad login password={} id_token={}", s(9), s(13))}]}
            }).to_string()}),
            json!({}),
        ),
        // Malformed JSON carrying a client secret.
        http_record(
            "2026-12-01T10:00:03.000Z",
            call(4, "login", json!({})),
            json!({"status": 200, "headers": [["Content-Type", "application/json"]],
                   "body": format!("{{oops client_secret={} \"password\": \"{}\"", s(8), s(9))}),
            json!({}),
        ),
        // An SSE stream cut inside an event that carries secrets.
        http_record(
            "2026-12-01T10:00:04.000Z",
            call(5, "login", json!({})),
            json!({"status": 200, "headers": [["Content-Type", "text/event-stream"]],
                   "body": format!("event: message\nid: {}\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"data\":\"{}\"}}}}\n\ndata: {{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{{\"access_token\":\"{}\"", s(14), s(15), s(11))}),
            json!({"end": "closed"}),
        ),
        // No response; the recorder's note names a token.
        http_record(
            "2026-12-01T10:00:05.000Z",
            call(6, "login", json!({"password": s(9)})),
            Value::Null,
            json!({"error": format!("upstream said Bearer {}", s(18))}),
        ),
    ];
    (lines.join("\n") + "\n").into_bytes()
}

/// A stdio message transcript with secrets in arguments and results.
fn jsonl_stdio() -> Vec<u8> {
    let lines = [
        json!({"ts": "2026-12-01T10:00:00Z", "dir": "c2s", "msg": call(1, "db", json!({"password": s(19), "api_key": s(20)}))}),
        json!({"ts": "2026-12-01T10:00:01Z", "dir": "s2c", "msg": {"jsonrpc": "2.0", "id": 1, "result": {
            "isError": true, "content": [{"type": "text", "text": format!("connect failed for password: {} with {}", s(19), s(20))}]}}}),
        json!({"ts": "2026-12-01T10:00:02Z", "dir": "c2s", "msg": call(2, "db", json!({"token": s(20)}))}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    (text.join("\n") + "\n").into_bytes()
}

/// Bare JSON-RPC lines (a `tee` of stdio).
fn jsonl_tee() -> Vec<u8> {
    let lines = [
        call(7, "echo", json!({"text": s(21 - 1)})).to_string(),
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32603, "message": format!("leaked {}", s(20))}}).to_string(),
        call(8, "echo", json!({"text": format!("Bearer {}", s(20))})).to_string(),
        format!("{{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{{\"content\":\"{}\"}}}}", s(20)),
    ];
    (lines.join("\n") + "\n").into_bytes()
}

/// Every input format, as (file name, bytes). HAR and pcap join here.
fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("http.jsonl", jsonl_http()),
        ("stdio.jsonl", jsonl_stdio()),
        ("tee.jsonl", jsonl_tee()),
        ("capture.har", har()),
        ("capture.pcap", pcap()),
        ("claude.jsonl", claude_code()),
        ("inspector-network.json", inspector_network()),
        ("cassette.json", mcp_recorder()),
        ("mcp-server-x.log", claude_desktop()),
    ]
}

/// An mcp-recorder cassette: secrets in the server URL, the arguments and the answer.
fn mcp_recorder() -> Vec<u8> {
    let doc = json!({
        "version": "1.0",
        "metadata": {"server_url": format!("https://mcp.example/mcp?access_token={}", s(5))},
        "interactions": [{
            "type": "jsonrpc_request",
            "request": call(31, "echo", json!({"text": format!("Bearer {}", s(20))})),
            "response": leaky_result(31),
            "response_is_sse": true, "response_status": 200, "latency_ms": 3,
            "http_method": null, "http_path": null
        }]
    });
    serde_json::to_vec_pretty(&doc).unwrap()
}

/// A Claude Desktop server log: secrets in the arguments and the answer.
fn claude_desktop() -> Vec<u8> {
    format!(
        "2026-12-01T10:00:00.000Z [x] [info] Message from client: {} {{ metadata: undefined }}\n\
         2026-12-01T10:00:00.100Z [x] [info] Message from server: {} {{ metadata: undefined }}\n",
        call(32, "echo", json!({"text": format!("Bearer {}", s(20))})),
        leaky_result(32)
    )
    .into_bytes()
}

/// The request headers every HTTP-level plant carries.
fn secret_headers() -> Vec<(&'static str, String)> {
    vec![
        ("Authorization", format!("Bearer {}", s(0))),
        ("Cookie", format!("sid={}; theme=dark", s(1))),
        ("Proxy-Authorization", format!("Basic {}", s(3))),
        ("X-Api-Key", s(4).to_owned()),
        ("Mcp-Session-Id", s(17).to_owned()),
    ]
}

fn leaky_result(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": format!(
        "token {} key {} gh {} refresh_token={} password: {}", s(13), s(14), s(15), s(7), s(9))}]}})
}

/// A HAR with secrets in the URL, headers, postData and the response text.
fn har() -> Vec<u8> {
    let headers: Vec<Value> = secret_headers()
        .into_iter()
        .map(|(n, v)| json!({"name": n, "value": v}))
        .collect();
    let entry = |id: i64, status: i64, text: String| {
        json!({
            "startedDateTime": format!("2026-12-01T10:00:0{id}.000Z"), "time": 12,
            "request": {"method": "POST", "httpVersion": "HTTP/1.1",
                "url": format!("https://mcp.example/mcp?access_token={}&code={}", s(5), s(6)),
                "headers": headers, "queryString": [], "cookies": [], "headersSize": -1, "bodySize": -1,
                "postData": {"mimeType": "application/json", "text": call(id, "login", json!({"client_secret": s(8), "password": s(9)})).to_string()}},
            "response": {"status": status, "statusText": "", "httpVersion": "HTTP/1.1",
                "headers": [{"name": "Content-Type", "value": "application/json"}, {"name": "Set-Cookie", "value": format!("sid={}", s(2))}],
                "cookies": [], "content": {"size": text.len(), "mimeType": "application/json", "text": text},
                "redirectURL": "", "headersSize": -1, "bodySize": -1},
            "cache": {}, "timings": {"send": 1, "wait": 10, "receive": 1}
        })
    };
    let doc = json!({"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": [
        entry(1, 500, leaky_result(1).to_string()),
        entry(2, 200, json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602,
            "message": format!("rejected Authorization: Bearer {}", s(18))}}).to_string()),
    ]}});
    doc.to_string().into_bytes()
}

/// A pcap of one HTTP/1.1 exchange with the same plants.
fn pcap() -> Vec<u8> {
    let body = call(1, "login", json!({"client_secret": s(8), "password": s(9)})).to_string();
    let mut head = format!(
        "POST /mcp?access_token={}&code={} HTTP/1.1\r\nHost: mcp.example\r\nContent-Type: application/json\r\n",
        s(5),
        s(6)
    );
    for (n, v) in secret_headers() {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    let request = format!("{head}Content-Length: {}\r\n\r\n{body}", body.len());
    let rbody = leaky_result(1).to_string();
    let response = format!(
        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nSet-Cookie: sid={}\r\nContent-Length: {}\r\n\r\n{rbody}",
        s(2),
        rbody.len()
    );
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40100, (7, 9));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, request.as_bytes());
    cap.send(&mut c, Side::Server, response.as_bytes());
    cap.fin(&mut c, Side::Client);
    cap.fin(&mut c, Side::Server);
    cap.pcap(Link::Ethernet, false, false)
}

/// A Claude Code transcript: secrets in MCP tool arguments and results.
fn claude_code() -> Vec<u8> {
    let lines = [
        json!({"type": "assistant", "uuid": "a1", "sessionId": "sess", "timestamp": "2026-12-01T10:00:00Z",
               "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                   "name": "mcp__db__query", "input": {"password": s(19), "sql": "select 1"}}]}}),
        json!({"type": "user", "uuid": "u1", "sessionId": "sess", "timestamp": "2026-12-01T10:00:01Z",
               "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
                   "content": [{"type": "text", "text": format!("auth failed: Authorization: Bearer {} api_key={}", s(18), s(20))}]}]}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    (text.join("\n") + "\n").into_bytes()
}

/// An MCP Inspector network export whose headers were not redacted by the Inspector.
fn inspector_network() -> Vec<u8> {
    let headers: serde_json::Map<String, Value> = secret_headers()
        .into_iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), Value::String(v)))
        .collect();
    json!([{"id": "1", "timestamp": "2026-12-01T10:00:00.000Z", "method": "POST",
        "url": format!("https://mcp.example/mcp?access_token={}", s(5)),
        "requestHeaders": headers,
        "requestBody": call(1, "login", json!({"refresh_token": s(7)})).to_string(),
        "responseStatus": 200, "responseHeaders": {"content-type": "application/json"},
        "responseBody": leaky_result(1).to_string(), "duration": 5, "category": "transport"}])
    .to_string()
    .into_bytes()
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcpsift"))
        .arg("analyze")
        .arg(dir)
        .args(args)
        .output()
        .expect("run mcpsift")
}

/// Everything one run let out: stdout, stderr and any files it wrote.
fn all_output(dir: &Path, out: &Output, files: &[&Path]) -> String {
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    for f in files {
        text.push_str(&std::fs::read_to_string(f).unwrap_or_default());
    }
    let _ = dir;
    text
}

fn outputs(dir: &Path, extra: &[&str]) -> Vec<(String, String)> {
    let tmp = tempfile::tempdir().unwrap();
    let md = tmp.path().join("report.md");
    let base = tmp.path().join("baseline.json");
    let mut res = Vec::new();
    for format in ["table", "markdown", "json", "jsonl"] {
        for all in [false, true] {
            let mut args = vec!["--format", format, "--width", "80"];
            if all {
                args.push("--all");
            }
            let md_s = md.to_str().unwrap();
            let base_s = base.to_str().unwrap();
            args.extend(["--report", md_s, "--write-baseline", base_s]);
            args.extend(extra);
            let out = run(dir, &args);
            assert_ne!(
                out.status.code(),
                Some(2),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            res.push((
                format!("{format} all={all}"),
                all_output(dir, &out, &[&md, &base]),
            ));
        }
    }
    res
}

#[test]
fn no_planted_secret_leaves_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in inputs() {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    // A file that is no input: its skip reason quotes its first line.
    std::fs::write(
        dir.path().join("notes.txt"),
        format!("curl -H 'Authorization: Bearer {}' https://x/\n", s(21)),
    )
    .unwrap();
    let redacted = outputs(dir.path(), &[]);
    for (what, text) in &redacted {
        for secret in SECRETS {
            assert!(!text.contains(secret), "{what} leaks {secret}:\n{text}");
        }
        assert!(text.contains("[REDACTED]"), "{what} redacted nothing");
    }
    // The session id is followed by its stable hash instead.
    let jsonl = &redacted
        .iter()
        .find(|(w, _)| w == "jsonl all=false")
        .unwrap()
        .1;
    assert!(jsonl.contains("\"scope\":\"session:"), "{jsonl}");

    // Unredacted, the plants do reach the output: the test above is not vacuous.
    let raw = outputs(dir.path(), &["--no-redact"]);
    let everything: String = raw.iter().map(|(_, t)| t.as_str()).collect();
    // The recorder and Claude Desktop plants were read as calls, not skipped.
    for read in [
        "\"format\":\"mcp-recorder\"",
        "\"format\":\"claude-desktop-log\"",
    ] {
        assert!(everything.contains(read), "{read} missing:\n{everything}");
    }
    let reached: Vec<&&str> = SECRETS
        .iter()
        .filter(|s| everything.contains(**s))
        .collect();
    // Request headers are never printed, redacted or not.
    for must in [5, 6, 7, 8, 9, 11, 13, 14, 15, 17, 18, 19, 20, 21] {
        assert!(
            reached.contains(&&SECRETS[must]),
            "{} never reaches any output",
            SECRETS[must]
        );
    }
    assert!(everything.contains("--no-redact: tokens, cookies and session ids are printed"));
}

/// Every credential shape of the redaction table (`RULES` and a made-up key of each
/// `PREFIXED` format): (text that carries it, the part that must not leave).
fn patterns() -> Vec<(String, String)> {
    use mcpsift::report::redact::{PREFIXED, RULES};
    let body = "A1b2C3d4E5f6G7h8J9k0L1m2N3p4Q5r6S7t8U9v0W1x2";
    let mut out: Vec<(String, String)> = RULES
        .iter()
        .map(|r| (r.example.to_owned(), r.secret.to_owned()))
        .collect();
    for p in PREFIXED {
        let key = format!("{}{}", p.prefix, &body[..p.min_rest + 6]);
        out.push((format!("{}: {key}", p.what), key));
    }
    out
}

/// The password in the URL of every HTTP request (scope, endpoint, request line).
const URL_PASSWORD: &str = "url-pass-S3cret-4711";

fn mcp_url() -> String {
    format!("https://alice:{URL_PASSWORD}@mcp.example/mcp")
}

/// A tool error whose text carries `text`: a call that needs attention, so its
/// excerpt reaches every output format.
fn tool_error(id: usize, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"isError": true,
        "content": [{"type": "text", "text": format!("failed: {text}")}]}})
}

fn call_with(id: usize, text: &str) -> Value {
    call(id as i64, "query", json!({"dsn": text}))
}

/// One input per format (JSONL exchange records, stdio transcript, bare JSON-RPC,
/// HAR, pcap, pcapng, Claude Code, Codex, VS Code output, MCP Inspector export),
/// each a call per pattern with the pattern in its arguments and its failed result.
fn pattern_inputs() -> Vec<(&'static str, Vec<u8>)> {
    let pats = patterns();
    let mut http_lines = Vec::new();
    let mut stdio_lines = Vec::new();
    let mut claude_lines = Vec::new();
    let mut entries = Vec::new();
    let mut tee_lines = Vec::new();
    let mut vscode_lines = Vec::new();
    let mut codex_lines = Vec::new();
    let mut inspector = Vec::new();
    let mut cap = Capture::new();
    for (i, (text, _)) in pats.iter().enumerate() {
        let id = i + 1;
        let req = call_with(id, text).to_string();
        let resp = tool_error(id, text).to_string();
        http_lines.push(
            json!({"ts": format!("2026-12-01T10:00:{:02}.000Z", i % 60),
                "request": {"method": "POST", "url": mcp_url(),
                    "headers": [["Content-Type", "application/json"]], "body": req},
                "response": {"status": 200, "headers": [["Content-Type", "application/json"]], "body": resp}})
            .to_string(),
        );
        stdio_lines.push(json!({"dir": "c2s", "msg": call_with(id, text)}).to_string());
        stdio_lines.push(json!({"dir": "s2c", "msg": tool_error(id, text)}).to_string());
        claude_lines.push(json!({"type": "assistant", "uuid": format!("a{id}"), "sessionId": "sess",
            "timestamp": "2026-12-01T10:00:00Z", "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": format!("toolu_{id}"), "name": "mcp__db__query", "input": {"dsn": text}}]}})
        .to_string());
        claude_lines.push(
            json!({"type": "user", "uuid": format!("u{id}"), "sessionId": "sess",
            "timestamp": "2026-12-01T10:00:01Z", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("toolu_{id}"), "is_error": true,
                 "content": [{"type": "text", "text": format!("failed: {text}")}]}]}})
            .to_string(),
        );
        tee_lines.push(call_with(id, text).to_string());
        tee_lines.push(tool_error(id, text).to_string());
        vscode_lines.push(format!(
            "2026-08-10 09:31:00.{i:03} [info] [Client Says] {}",
            call_with(id, text)
        ));
        vscode_lines.push(format!(
            "2026-08-10 09:31:01.{i:03} [info] [Server Says] {}",
            tool_error(id, text)
        ));
        codex_lines.push(
            json!({"timestamp": "2026-08-10T09:20:01.000Z", "type": "response_item",
            "payload": {"type": "function_call", "name": "query", "namespace": "mcp__db",
                "arguments": json!({"dsn": text}).to_string(), "call_id": format!("call_{id}")}})
            .to_string(),
        );
        codex_lines.push(json!({"timestamp": "2026-08-10T09:20:02.000Z", "type": "event_msg",
            "payload": {"type": "mcp_tool_call_end", "call_id": format!("call_{id}"),
                "invocation": {"server": "db", "tool": "query", "arguments": {"dsn": text}},
                "duration": {"secs": 0, "nanos": 0},
                "result": {"Ok": {"content": [{"type": "text", "text": format!("failed: {text}")}], "isError": true}}}}).to_string());
        inspector.push(json!({"id": id.to_string(), "timestamp": "2026-12-01T10:00:00.000Z", "method": "POST",
            "url": mcp_url(), "requestHeaders": {"content-type": "application/json"}, "requestBody": req,
            "responseStatus": 200, "responseHeaders": {"content-type": "application/json"},
            "responseBody": resp, "duration": 5, "category": "transport"}));
        entries.push(json!({
            "startedDateTime": format!("2026-12-01T10:{:02}:00.000Z", i % 60), "time": 12,
            "request": {"method": "POST", "httpVersion": "HTTP/1.1", "url": mcp_url(),
                "headers": [{"name": "Content-Type", "value": "application/json"}], "queryString": [],
                "cookies": [], "headersSize": -1, "bodySize": -1,
                "postData": {"mimeType": "application/json", "text": req}},
            "response": {"status": 200, "statusText": "", "httpVersion": "HTTP/1.1",
                "headers": [{"name": "Content-Type", "value": "application/json"}], "cookies": [],
                "content": {"size": resp.len(), "mimeType": "application/json", "text": resp},
                "redirectURL": "", "headersSize": -1, "bodySize": -1},
            "cache": {}, "timings": {"send": 1, "wait": 10, "receive": 1}
        }));
        let request = format!(
            "POST {} HTTP/1.1\r\nHost: mcp.example\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{req}",
            mcp_url(),
            req.len()
        );
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{resp}",
            resp.len()
        );
        let mut c = cap.conn(Link::Ethernet, 41000 + i as u16, (7, 9));
        cap.handshake(&mut c);
        cap.send(&mut c, Side::Client, request.as_bytes());
        cap.send(&mut c, Side::Server, response.as_bytes());
        cap.fin(&mut c, Side::Client);
        cap.fin(&mut c, Side::Server);
    }
    let har = json!({"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": entries}});
    vec![
        ("http.jsonl", (http_lines.join("\n") + "\n").into_bytes()),
        ("stdio.jsonl", (stdio_lines.join("\n") + "\n").into_bytes()),
        (
            "claude.jsonl",
            (claude_lines.join("\n") + "\n").into_bytes(),
        ),
        ("capture.har", har.to_string().into_bytes()),
        ("capture.pcap", cap.pcap(Link::Ethernet, false, false)),
        (
            "capture.pcapng",
            cap.pcapng(&[(Link::Ethernet, 6)], false, false),
        ),
        ("tee.jsonl", (tee_lines.join("\n") + "\n").into_bytes()),
        (
            "vscode-mcp-output.log",
            (vscode_lines.join("\n") + "\n").into_bytes(),
        ),
        (
            "codex-rollout.jsonl",
            (codex_lines.join("\n") + "\n").into_bytes(),
        ),
        (
            "inspector-network.json",
            Value::Array(inspector).to_string().into_bytes(),
        ),
    ]
}

/// Each pattern, planted in every input format, leaves in no output format; and
/// unredacted, each one does reach the output of every input format.
#[test]
fn no_pattern_of_the_table_leaves_the_tool() {
    let pats = patterns();
    for (name, bytes) in pattern_inputs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(name), bytes).unwrap();
        for (what, text) in outputs(dir.path(), &[]) {
            for (_, secret) in &pats {
                assert!(
                    !text.contains(secret.as_str()),
                    "{name}, {what} leaks {secret}"
                );
            }
            assert!(
                !text.contains(URL_PASSWORD),
                "{name}, {what} leaks the URL password"
            );
        }
        let raw: String = outputs(dir.path(), &["--no-redact"])
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        for (_, secret) in &pats {
            assert!(
                raw.contains(secret.as_str()),
                "{name}: {secret} never reaches any output"
            );
        }
        if name.starts_with("capture") || name.starts_with("http") || name.starts_with("inspector")
        {
            assert!(
                raw.contains(URL_PASSWORD),
                "{name}: the URL never reaches any output"
            );
        }
    }
}
