"""Scenario catalogue of the mcpsift traffic lab.

Each scenario names a real server (TS or Python SDK), a real client (TS or Python SDK) driven by a
step plan, and the fault rules for faultproxy.py. `expect` lists the outcome of every tools/call
request in wire order (retries included); run_lab.py checks each against the captures before it
writes expected.json. Faults are modelled on the Cakewalk MCP Test Kitchen scenarios
(shared/reference/ecosystem.md §1.3); the Cakewalk id each one follows is in `cakewalk`.
"""

NOTE = {"op": "call", "tool": "read_note", "args": {"name": "groceries"}, "timeout_ms": 5000}
DELETE = {"op": "call", "tool": "delete_file", "args": {"path": "/tmp/lab/report.txt"}, "timeout_ms": 5000}
FAIL = {"op": "call", "tool": "fail_tool", "args": {"reason": "lab"}, "timeout_ms": 5000}
SLOW = {"op": "call", "tool": "slow_progress", "args": {"steps": 3, "delay_ms": 150}, "progress": True,
        "timeout_ms": 5000}


def step(base, **kw):
    d = dict(base)
    d.update(kw)
    return d


def tc(tool=None, nth=None, http_method="POST"):
    m = {"http_method": http_method, "method": "tools/call"}
    if tool:
        m["tool"] = tool
    if nth:
        m["nth"] = nth
    return m


S = []


def add(name, description, server, client, steps, expect, findings=(), rules=(), cakewalk=None, notes="",
        client_mode=None, elicit=False, impair=None):
    S.append({"name": name, "description": description, "server": server, "client": client,
              "client_mode": client_mode, "elicit": elicit, "impair": impair, "steps": steps, "expect": list(expect), "findings": list(findings),
              "rules": list(rules), "cakewalk": cakewalk, "notes": notes})


# server specs: (sdk, transport, flags)
TS_SSE = ("ts", "streamable", [])
TS_JSON = ("ts", "streamable", ["--json"])
TS_SSE_STORE = ("ts", "streamable", ["--event-store"])
PY_SSE = ("py", "streamable", [])
PY_JSON = ("py", "streamable", ["--json"])

# ---------------------------------------------------------------- baselines
add("baseline_ts_sse", "TS client -> TS server, Streamable HTTP, SSE responses; read_note, slow_progress (3 progress "
    "notifications before the result), delete_file. Everything succeeds.",
    TS_SSE, "ts", [NOTE, SLOW, DELETE], ["TOOL_SUCCESS"] * 3, cakewalk="baseline")
add("baseline_ts_json", "TS client -> TS server with enableJsonResponse: every request POST is answered with one "
    "application/json body (the progress notifications are not sent on a JSON response).",
    TS_JSON, "ts", [NOTE, SLOW, DELETE], ["TOOL_SUCCESS"] * 3, cakewalk="baseline")
add("baseline_py_sse", "Python client (SDK default mode 'auto': server/discover probe) -> Python server, SSE "
    "responses. Negotiates the stateless 2026-07-28 revision: no initialize, no Mcp-Session-Id, every result "
    "carries resultType.",
    PY_SSE, "py", [NOTE, SLOW, DELETE], ["TOOL_SUCCESS"] * 3, cakewalk="baseline")
add("baseline_py_json", "Python client (auto, 2026-07-28) -> Python server with json_response=True.",
    PY_JSON, "py", [NOTE, SLOW, DELETE], ["TOOL_SUCCESS"] * 3, cakewalk="baseline")
add("baseline_py_legacy_mode", "Python client forced to mode='legacy' (initialize handshake, 2025-11-25, "
    "Mcp-Session-Id) -> Python server, SSE responses.",
    PY_SSE, "py", [NOTE, SLOW, DELETE], ["TOOL_SUCCESS"] * 3, cakewalk="baseline", client_mode="legacy")
add("cross_py_client_ts_server", "Python client (auto) -> TS server: the server/discover probe (no session id) is "
    "answered 400 {-32000 'Mcp-Session-Id header is required'} by the 2025-era TS server, and the client falls back "
    "to initialize (2025-11-25). Results have no resultType, which is normal for 2025-era SDKs and counts as "
    "complete.",
    TS_SSE, "py", [NOTE, DELETE], ["TOOL_SUCCESS"] * 2, cakewalk="compat.sdk_v2")
add("cross_ts_client_py_server", "TS client (2025-11-25 handshake) -> Python server, SSE responses.",
    PY_SSE, "ts", [NOTE, DELETE], ["TOOL_SUCCESS"] * 2, cakewalk="baseline")

# ---------------------------------------------------------------- tool error (real server)
for cl, srv in (("ts", TS_SSE), ("py", PY_SSE)):
    add(f"tool_error_{cl}", "fail_tool returns a normal result with isError:true (produced by the real server, "
        "not injected); a read_note afterwards succeeds.",
        srv, cl, [FAIL, NOTE], ["TOOL_ERROR", "TOOL_SUCCESS"], cakewalk="errors.tool_error")

# ---------------------------------------------------------------- 503 then 200
for cl, srv in (("ts", TS_SSE), ("py", PY_SSE)):
    add(f"http_503_then_200_{cl}", "The first tools/call POST gets 503 with an empty body and no Content-Type "
        "(Cakewalk RespondWithStatus framing); the client script catches the error and calls again after 500 ms; "
        "the second POST reaches the server (200).",
        srv, cl, [step(NOTE, on_error={"action": "retry", "delay_ms": 500})], ["HTTP_ERROR", "TOOL_SUCCESS"],
        rules=[{"match": tc(nth=1), "action": {"type": "respond", "status": 503, "headers": [], "body": ""}}],
        cakewalk="errors.http_status_sequence {statusCodes:[503,200]}",
        notes="Cakewalk applies the sequence to every POST of the session (so its 503 hits the first POST, "
              "whatever its method); here it is aimed at the first tools/call so that a call carries it.")

# ---------------------------------------------------------------- JSON-RPC error on 200
for cl, srv in (("ts", TS_SSE), ("py", PY_SSE)):
    add(f"jsonrpc_error_{cl}", "The first tools/call is answered 200 application/json with "
        "{\"jsonrpc\":\"2.0\",\"id\":<echo>,\"error\":{\"code\":-32602,\"message\":\"Invalid params\"}} instead of "
        "reaching the server; a second, different call succeeds.",
        srv, cl, [NOTE, DELETE], ["JSONRPC_ERROR", "TOOL_SUCCESS"],
        rules=[{"match": tc(nth=1), "action": {"type": "respond", "status": 200,
                                                "headers": [["Content-Type", "application/json"]],
                                                "body": '{"jsonrpc":"2.0","id":{id},"error":{"code":-32602,'
                                                        '"message":"Invalid params"}}'}}],
        cakewalk="errors.jsonrpc_error")

# ---------------------------------------------------------------- SSE stream cut
for cl, srv in (("ts", TS_SSE), ("py", PY_SSE)):
    add(f"sse_cut_{cl}", "slow_progress's SSE response stream is cut by the proxy after the progress notifications "
        "and before the final response (connection closed, no terminating chunk). No event ids, so nothing can "
        "resume; the script does not retry. A later read_note shows the client still works.",
        srv, cl, [step(SLOW, timeout_ms=3000), NOTE], ["STREAM_INCOMPLETE", "TOOL_SUCCESS"], findings=["NON_TERMINAL"],
        rules=[{"match": tc("slow_progress", 1), "action": {"type": "forward", "cut_before_response": True}}],
        cakewalk="errors.connection_close (mid-stream variant) / timeout.* client-side NOTERM")
add("sse_cut_resumed_ts", "As sse_cut_ts, but the TS server has an event store (SSE event ids + priming event). "
    "After the cut the TS client reconnects by itself with GET + Last-Event-ID and the server replays the final "
    "response on that GET stream, so the call completes.",
    TS_SSE_STORE, "ts", [step(SLOW, timeout_ms=8000), NOTE], ["TOOL_SUCCESS", "TOOL_SUCCESS"],
    rules=[{"match": tc("slow_progress", 1), "action": {"type": "forward", "cut_before_response": True}}],
    cakewalk="(2025-11-25 resumption; not a Cakewalk scenario)",
    notes="The POST exchange itself ends 'closed' without the response; the response for the same id arrives on "
          "the later GET exchange that carries Last-Event-ID.")

# ---------------------------------------------------------------- wrong id
for cl, srv in (("ts", TS_JSON), ("py", PY_JSON)):
    add(f"wrong_id_{cl}", "The server's real JSON response to the first tools/call is passed on with its id "
        "replaced by 99999 (Cakewalk malformed_payload wrong_id uses the same id). The client never gets a response "
        "for its own id and gives up after its 3 s timeout; a later read_note succeeds.",
        srv, cl, [step(NOTE, timeout_ms=3000), step(NOTE, args={"name": "todo"})],
        ["INVALID_ENVELOPE", "TOOL_SUCCESS"], findings=["ID_MISMATCH"],
        rules=[{"match": tc(nth=1), "action": {"type": "forward", "set_id": 99999}}],
        cakewalk="errors.malformed_payload {kind:wrong_id}")

# ---------------------------------------------------------------- malformed JSON
for cl, srv in (("ts", TS_JSON), ("py", PY_JSON)):
    add(f"malformed_json_{cl}", "The first tools/call is answered 200 application/json with the literal body "
        "'{ not valid json' (Cakewalk invalid_json); a later read_note succeeds.",
        srv, cl, [step(NOTE, timeout_ms=3000), step(NOTE, args={"name": "todo"})],
        ["MALFORMED_JSON", "TOOL_SUCCESS"],
        rules=[{"match": tc(nth=1), "action": {"type": "respond", "status": 200,
                                                "headers": [["Content-Type", "application/json"]],
                                                "body": "{ not valid json"}}],
        cakewalk="errors.malformed_payload {kind:invalid_json}")

# ---------------------------------------------------------------- content not an array
for cl, srv in (("ts", TS_JSON), ("py", PY_JSON)):
    add(f"content_not_array_{cl}", "The server's real result for the first tools/call is passed on with "
        "result.content turned from an array into its first object; a later read_note succeeds.",
        srv, cl, [step(NOTE, timeout_ms=3000), step(NOTE, args={"name": "todo"})],
        ["INVALID_TOOL_RESULT", "TOOL_SUCCESS"],
        rules=[{"match": tc(nth=1), "action": {"type": "forward", "content_not_array": True}}],
        cakewalk="invalid_resource / invalid_prompt (schema-invalid result), applied to tools/call")

# ---------------------------------------------------------------- resultType
add("result_type_stripped_py", "Python client and server negotiate 2026-07-28 (every result carries "
    "resultType:\"complete\"); the proxy removes resultType from the tools/call results, as an older server "
    "would send them. A result without resultType counts as complete.",
    PY_JSON, "py", [NOTE, DELETE], ["TOOL_SUCCESS"] * 2,
    rules=[{"match": tc(), "action": {"type": "forward", "strip_result_type": True}}],
    cakewalk="compat.sdk_v2 (legacy result shape)",
    notes="Observed: the Python SDK 2.3.0 client, on a 2026-07-28 connection, rejects these results with a pydantic "
          "ValidationError (CallToolResult.resultType: Field required) although the 2026-07-28 changelog says a "
          "result without resultType is treated as complete; the expected outcome follows the spec and "
          "design.md (absent = complete).")

# ---------------------------------------------------------------- 429 + Retry-After
add("rate_limit_429_ts", "The first tools/call gets 429 Too Many Requests with Retry-After: 2 (a gateway's answer; "
    "no MCP revision defines 429). The script waits 2.5 s (honours Retry-After) and calls again: 200.",
    TS_SSE, "ts", [step(NOTE, on_error={"action": "retry", "delay_ms": 2500})], ["HTTP_ERROR", "TOOL_SUCCESS"],
    rules=[{"match": tc(nth=1), "action": {"type": "respond", "status": 429,
                                            "headers": [["Retry-After", "2"], ["Content-Type", "text/plain"]],
                                            "body": "Too Many Requests"}}],
    cakewalk="errors.http_status_per_method (429 instead of 401)")
add("rate_limit_429_py", "Same 429 + Retry-After: 2, but the script retries after only 200 ms, ignoring "
    "Retry-After.",
    PY_SSE, "py", [step(NOTE, on_error={"action": "retry", "delay_ms": 200})], ["HTTP_ERROR", "TOOL_SUCCESS"],
    findings=["RETRY_TOO_SOON"],
    rules=[{"match": tc(nth=1), "action": {"type": "respond", "status": 429,
                                            "headers": [["Retry-After", "2"], ["Content-Type", "text/plain"]],
                                            "body": "Too Many Requests"}}],
    cakewalk="errors.http_status_per_method (429 instead of 401)")

# ---------------------------------------------------------------- session expiry
for cl, srv, mode in (("ts", TS_SSE, None), ("py", PY_SSE, "legacy")):
    add(f"session_expired_404_{cl}", "After a first read_note, the session is terminated on the server (the proxy "
        "sends the server a DELETE for it, invisible to the client) just before the delete_file POST, so the real "
        "server answers that POST 404 {-32001 Session not found}. The script reconnects (new initialize, new "
        "Mcp-Session-Id) and calls delete_file again.",
        srv, cl, [NOTE, step(DELETE, on_error={"action": "reconnect_retry", "delay_ms": 200})],
        ["TOOL_SUCCESS", "HTTP_ERROR", "TOOL_SUCCESS"],
        rules=[{"match": tc("delete_file", 1), "action": {"type": "forward", "expire_session_first": True}}],
        cakewalk="(session expiry; 2025-era transports spec, not a Cakewalk scenario: its host is stateless)",
        client_mode=mode,
        notes="The 404 body is a JSON-RPC error with id null (the SDK's transport-level error), not an error for "
              "the call's id, so the call is HTTP_ERROR. The retry carries a new session id: explained repeat.")

# ---------------------------------------------------------------- gzip + chunked
for cl, srv in (("ts", TS_JSON), ("py", PY_JSON)):
    add(f"gzip_chunked_{cl}", "Every tools/call JSON response is sent Content-Encoding: gzip (the client sent "
        "Accept-Encoding: gzip) with Transfer-Encoding: chunked in three chunks. Calls succeed.",
        srv, cl, [NOTE, DELETE], ["TOOL_SUCCESS"] * 2,
        rules=[{"match": tc(), "action": {"type": "forward", "gzip": True, "chunked": True}}],
        cakewalk="baseline (framing variant)")
add("gzip_sse_ts", "SSE responses to tools/call are gzip-compressed per event (Z_SYNC_FLUSH) and chunked.",
    TS_SSE, "ts", [NOTE, SLOW], ["TOOL_SUCCESS"] * 2,
    rules=[{"match": tc(), "action": {"type": "forward", "gzip": True}}], cakewalk="baseline (framing variant)")

# ---------------------------------------------------------------- client re-sends a destructive call
for cl, srv in (("ts", TS_SSE), ("py", PY_SSE)):
    add(f"client_repeat_destructive_{cl}", "The client script calls delete_file, gets a successful result, and "
        "then sends the same delete_file (same arguments, new id) again on its own: nothing on the wire explains "
        "the repeat, and the tool is annotated destructiveHint:true, idempotentHint:false.",
        srv, cl, [DELETE, DELETE], ["TOOL_SUCCESS"] * 2, findings=["UNEXPLAINED_REPEAT"],
        cakewalk="(REP column of the Cakewalk table)")

# ---------------------------------------------------------------- connection closed, no response, replay
for cl, srv in (("ts", TS_SSE), ("py", PY_SSE)):
    add(f"no_response_replay_{cl}", "The first delete_file POST is read by the proxy and the connection is closed "
        "without any response (Cakewalk CloseConnection). The script retries delete_file after 300 ms: a replay of "
        "a destructive call whose first attempt may have run.",
        srv, cl, [step(DELETE, timeout_ms=3000, on_error={"action": "retry", "delay_ms": 300})],
        ["NO_RESPONSE", "TOOL_SUCCESS"], findings=["NON_TERMINAL", "UNSAFE_REPLAY"],
        rules=[{"match": tc("delete_file", 1), "action": {"type": "close"}}],
        cakewalk="errors.connection_close {closeOn:tool_call}",
        notes="UNEXPLAINED_REPEAT is not listed: the first attempt neither completed nor was in flight "
              "(mcp-wire.md 7.4); UNSAFE_REPLAY covers the repeat.")

# ---------------------------------------------------------------- legacy HTTP+SSE
for cl, mode, sfx, extra in (("ts", None, "", ""), ("py", "legacy", "", " Python client in mode='legacy' "
                             "(initialize handshake)."),
                             ("py", None, "_auto", " Python client in its default mode 'auto': the server/discover "
                              "probe succeeds over the legacy transport, so 2026-07-28 messages (no initialize, "
                              "_meta on every request, resultType) travel over HTTP+SSE.")):
    add(f"legacy_sse_{cl}{sfx}", "Legacy HTTP+SSE (2024-11-05 transport, still offered by both SDKs): GET /sse "
        "carries the endpoint event and every response; each POST to the endpoint gets 202 Accepted." + extra,
        (cl, "legacy-sse", []), cl, [NOTE, FAIL, DELETE], ["TOOL_SUCCESS", "TOOL_ERROR", "TOOL_SUCCESS"],
        cakewalk="baseline", client_mode=mode)

# ---------------------------------------------------------------- stdio
for cl in ("ts", "py"):
    add(f"stdio_{cl}", "stdio: the client launches stdio_tee.py, which launches the server and records every line. "
        "read_note, slow_progress, fail_tool, delete_file, then the same delete_file again (unexplained repeat).",
        (cl, "stdio", []), cl, [NOTE, SLOW, FAIL, DELETE, DELETE],
        ["TOOL_SUCCESS", "TOOL_SUCCESS", "TOOL_ERROR", "TOOL_SUCCESS", "TOOL_SUCCESS"],
        findings=["UNEXPLAINED_REPEAT"], cakewalk="baseline / errors.tool_error")

# ---------------------------------------------------------------- MRTR (2026-07-28 input_required)
CONFIRM = {"op": "call", "tool": "confirm_delete", "args": {"path": "/tmp/lab/report.txt"}, "timeout_ms": 5000}
PY_MRTR = ("py", "streamable", ["--json", "--mrtr"])
add("mrtr_input_required_py", "Python client (auto, 2026-07-28, declares elicitation) -> Python server whose "
    "confirm_delete tool fills its `answer` parameter by elicitation (Resolve + Elicit). Round 1 is answered "
    "resultType:\"input_required\" with inputRequests (one elicitation/create) and a sealed requestState; the SDK "
    "client answers the elicitation (accept, confirm:true) and sends the follow-up tools/call itself: same name and "
    "arguments, a new id, inputResponses and the exact requestState. The follow-up completes. A read_note before "
    "and after.",
    PY_MRTR, "py", [NOTE, CONFIRM, step(NOTE, args={"name": "todo"})],
    ["TOOL_SUCCESS", "INPUT_REQUIRED", "TOOL_SUCCESS", "TOOL_SUCCESS"], elicit=True,
    cakewalk="(2026-07-28 MRTR, SEP-2322; not a Cakewalk scenario)",
    notes="The follow-up was checked against round 1 in exchanges.jsonl: same tool and arguments, new id, "
          "requestState byte-identical to the one returned, inputResponses keyed like inputRequests. Both are "
          "separate, complete JSON-RPC exchanges (mcp-wire.md 5.3); the follow-up is an explained repeat.")
add("mrtr_no_follow_up_py", "As mrtr_input_required_py, but the script drives MRTR by hand "
    "(session.call_tool(allow_input_required=True)) and stops after round 1: the input_required result is never "
    "followed up. A read_note afterwards succeeds.",
    PY_MRTR, "py", [step(CONFIRM, no_follow_up=True), NOTE], ["INPUT_REQUIRED", "TOOL_SUCCESS"],
    findings=["NON_TERMINAL"], elicit=True, cakewalk="(2026-07-28 MRTR, SEP-2322; not a Cakewalk scenario)",
    notes="The logical call never reaches a terminal result: an INPUT_REQUIRED without an MRTR follow-up "
          "(mcp-wire.md 5.3, 7.2), hence NON_TERMINAL.")

# ---------------------------------------------------------------- impaired network (netns + user-space bridge)
IMPAIR = {"seed": 20261202, "drop": 0.04, "dup": 0.04, "reorder": 0.04, "max_events": 60}
for sfx, srv, what in (("sse", TS_SSE, "SSE responses"), ("json", TS_JSON, "JSON responses (enableJsonResponse)")):
    add(f"impaired_net_ts_{sfx}", f"TS client in one network namespace -> TS server ({what}) in another, through "
        "tools/impair_bridge.py, a user-space bridge that drops, duplicates and reorders about 4% each of all TCP "
        "segments (both directions, fixed seed). No proxy injects anything: a fault-free faultproxy in the server's "
        "namespace only writes the JSONL. TCP retransmits, so every call completes: read_note, slow_progress (3 "
        "progress notifications), delete_file, fail_tool, read_note.",
        srv, "ts", [NOTE, SLOW, DELETE, FAIL, step(NOTE, args={"name": "todo"})],
        ["TOOL_SUCCESS", "TOOL_SUCCESS", "TOOL_SUCCESS", "TOOL_ERROR", "TOOL_SUCCESS"], impair=IMPAIR,
        cakewalk="(network impairment; not a Cakewalk scenario)",
        notes="pcap/pcapng are taken by tcpdump/dumpcap on the client's veth (lc0) inside the client namespace: "
              "client segments as sent (before the bridge; a dropped one shows up again as a retransmission), "
              "server segments as received (after the bridge: duplicates and swapped pairs are on the wire). "
              "impairments.jsonl lists every drop/dup/reorder with TCP ports, seq and flags.")

SCENARIOS = {s["name"]: s for s in S}
