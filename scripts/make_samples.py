#!/usr/bin/env python3
"""Writes the four synthetic samples: small JSONL inputs that cover every outcome.

They are hand-built to the shapes the official SDKs put on the wire (MCP 2025-06-18
and 2026-07-28, Transports §Streamable HTTP and stdio); the other samples are real
captures copied from lab/captures/. Kept out of samples/ so the analyser does not
walk it. Run from the repository root: python3 scripts/make_samples.py
"""
import json
import os

# The samples folder next to this script's folder.
HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "samples")
URL = "http://127.0.0.1:3000/mcp"
SESSION = "4f1c2b7e-5d7a-4a8e-9a31-1d2c3b4a5f60"
T0 = 1_796_000_000.0  # 2026-11-30T…Z


def ts(offset):
    import datetime
    t = datetime.datetime.fromtimestamp(T0 + offset, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def req_headers(session=True):
    h = [["Content-Type", "application/json"], ["Accept", "application/json, text/event-stream"]]
    if session:
        h += [["Mcp-Session-Id", SESSION], ["MCP-Protocol-Version", "2025-06-18"]]
    return h


def call(i, tool, args, **extra):
    params = {"name": tool, "arguments": args}
    params.update(extra)
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}


def ok(i, text, **result):
    r = {"content": [{"type": "text", "text": text}]}
    r.update(result)
    return {"jsonrpc": "2.0", "id": i, "result": r}


def sse(*messages, cut=False):
    out = ""
    for m in messages:
        out += "event: message\ndata: " + json.dumps(m) + "\n\n"
    if cut:
        out = out.rstrip("\n")  # the last event never saw its blank line
    return out


def record(t, body, status=None, resp_body=None, ctype="application/json", end=None, headers=None, session=True):
    rec = {"ts": ts(t), "request": {"method": "POST", "url": URL, "headers": req_headers(session), "body": json.dumps(body)}}
    if status is None:
        rec["response"] = None
    else:
        h = [["Content-Type", ctype]] if ctype else []
        h += headers or []
        rb = resp_body if isinstance(resp_body, str) else json.dumps(resp_body) if resp_body is not None else ""
        rec["response"] = {"status": status, "headers": h, "body": rb}
        rec["response_ts"] = ts(t + 0.05)
    if end:
        rec["end"] = end
    return rec


def streamable_http():
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "sample-client", "version": "1.0.0"}}}
    init_result = {"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
        "serverInfo": {"name": "sample-server", "version": "1.0.0"}}}
    tools = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [
        {"name": "read_note", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
        {"name": "delete_file", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": True, "idempotentHint": False}},
        {"name": "charge_card", "inputSchema": {"type": "object"}},
    ]}}
    recs = [
        record(0, init, 200, init_result, headers=[["Mcp-Session-Id", SESSION]], session=False),
        record(0.1, {"jsonrpc": "2.0", "method": "notifications/initialized"}, 202, None, ctype=None),
        record(0.2, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, 200, tools),
        # TOOL_SUCCESS over JSON
        record(1, call(2, "read_note", {"path": "a.txt"}), 200, ok(2, "hello")),
        # TOOL_SUCCESS over SSE with progress first
        record(2, call(3, "read_note", {"path": "b.txt"}, _meta={"progressToken": 3}), 200,
               sse({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 3, "progress": 1, "total": 2}},
                   ok(3, "world")), ctype="text/event-stream"),
        # TOOL_ERROR on SSE
        record(3, call(4, "delete_file", {"path": "/etc/hosts"}), 200,
               sse(ok(4, "permission denied", isError=True)), ctype="text/event-stream"),
        # JSONRPC_ERROR on HTTP 200
        record(4, call(5, "nope", {}), 200, {"jsonrpc": "2.0", "id": 5, "error": {"code": -32602, "message": "Unknown tool: nope"}}),
        # HTTP_ERROR 503 then the same call again: explained by the refusal
        record(5, call(6, "charge_card", {"amount": 5}), 503, "", ctype=None, headers=[["Retry-After", "2"]]),
        record(8, call(7, "charge_card", {"amount": 5}), 200, ok(7, "charged")),
        # HTTP_ERROR: 500 with a success-looking body
        record(9, call(8, "read_note", {"path": "c.txt"}), 500, ok(8, "looks fine")),
        # MALFORMED_JSON
        record(10, call(9, "read_note", {"path": "d.txt"}), 200, "{unclosed"),
        # INVALID_ENVELOPE: wrong id
        record(11, call(10, "read_note", {"path": "e.txt"}), 200, ok(99, "not yours")),
        # INVALID_TOOL_RESULT: content not an array
        record(12, call(11, "read_note", {"path": "f.txt"}), 200,
               {"jsonrpc": "2.0", "id": 11, "result": {"content": "not-an-array"}}),
        # STREAM_INCOMPLETE: SSE cut before the final response
        record(13, call(12, "delete_file", {"path": "/tmp/x"}), 200,
               sse({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 12, "progress": 1}}),
               ctype="text/event-stream", end="closed"),
        # ... and the client re-sends the destructive call: UNSAFE_REPLAY
        record(14, call(13, "delete_file", {"path": "/tmp/x"}), 200, ok(13, "deleted")),
        # NO_RESPONSE
        record(15, call(14, "read_note", {"path": "g.txt"}), None, end="reset"),
        # The same read again after success: UNEXPLAINED_REPEAT (low: read-only)
        record(16, call(15, "read_note", {"path": "a.txt"}), 200, ok(15, "hello")),
    ]
    return recs


def stateless_2026():
    """2026-07-28: no session, _meta on every request, MRTR round then follow-up."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "sample-client", "version": "2.0.0"}}

    def c(i, **extra):
        return call(i, "close_ticket", {"ticket": "T-1"}, _meta=meta, **extra)

    ir = {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required",
          "inputRequests": {"reason": {"method": "elicitation/create", "params": {"mode": "form", "message": "Why close it?",
                                                                               "requestedSchema": {"type": "object"}}}},
          "requestState": "st-7f3a"}}
    follow = c(2, inputResponses={"reason": {"action": "accept", "content": {"reason": "done"}}}, requestState="st-7f3a")
    h = [["Content-Type", "application/json"], ["Accept", "application/json, text/event-stream"],
         ["MCP-Protocol-Version", "2026-07-28"], ["Mcp-Method", "tools/call"], ["Mcp-Name", "close_ticket"]]
    out = []
    for t, body, status, resp in [
        (0, c(1), 200, ir),
        (1, follow, 200, ok(2, "closed", resultType="complete")),
        (2, call(3, "close_ticket", {"ticket": "T-2"}, _meta=meta), 400,
         {"jsonrpc": "2.0", "id": 3, "error": {"code": -32020, "message": "HeaderMismatch: Mcp-Name"}}),
        (3, call(4, "audit", {}, _meta=meta), 200, {"jsonrpc": "2.0", "id": 4, "result": {"resultType": "task", "content": []}}),
    ]:
        rec = record(t, body, status, resp)
        rec["request"]["headers"] = h
        out.append(rec)
    return out


def stdio_transcript():
    lines = []
    t = 0

    def msg(d, m):
        nonlocal t
        t += 0.1
        lines.append({"ts": ts(t), "dir": d, "msg": m})
    msg("c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                                                               "clientInfo": {"name": "stdio-client", "version": "0.1"}}})
    msg("s2c", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                                      "serverInfo": {"name": "stdio-server", "version": "0.1"}}})
    msg("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"})
    msg("c2s", call(1, "search", {"q": "mcp"}))
    msg("s2c", {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 0.5}})
    msg("s2c", ok(1, "3 results"))
    msg("c2s", call(2, "search", {"q": ""}))
    msg("s2c", ok(2, "query must not be empty", isError=True))
    msg("c2s", call(3, "slow_export", {}))
    msg("c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3, "reason": "timeout"}})
    msg("c2s", call(4, "search", {"q": "late"}))
    # the transcript ends while call 4 is in flight: NO_RESPONSE
    return lines


def stdio_tee():
    """A bare `tee` of a stdio session: no direction recorded, one message per line."""
    return [
        {"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}},
        {"jsonrpc": "2.0", "id": "a", "result": {"content": [{"type": "text", "text": "hi"}], "structuredContent": "hi"}},
        {"jsonrpc": "2.0", "id": "b", "method": "tools/call", "params": {"name": "echo", "arguments": {"text": 1}}},
        {"jsonrpc": "2.0", "id": "b", "result": {"content": [], "isError": "no"}},
        {"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "echo", "arguments": {}}},
        {"jsonrpc": "2.0", "id": "c", "result": {"content": [{"type": "text", "text": "x"}]}, "error": {"code": -1, "message": "both"}},
        {"jsonrpc": "2.0", "id": "zz", "result": {"content": []}},
    ]


def write(name, rows):
    with open(os.path.join(HERE, name), "w") as f:
        for r in rows:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")


write("streamable-http.jsonl", streamable_http())
write("stateless-2026.jsonl", stateless_2026())
write("stdio-transcript.jsonl", stdio_transcript())
write("stdio-tee.jsonl", stdio_tee())
