"""Scenario catalogue of the mcpsift traffic lab.

Each scenario names a real server (TS, Python or Rust SDK), a real client (TS, Python or Rust SDK) driven by a
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
        client_mode=None, elicit=False, impair=None, **extra):
    """extra (optional): max_findings_above_info (int), planted ([{"anomaly", "calls": [call indexes]}]),
    cancelled_calls ([call indexes]), cancel ({"notification": bool}: whether notifications/cancelled must be on
    the wire for the cancelled calls), quiet (bool: the client script records only calls that did not return)."""
    S.append({"name": name, "description": description, "server": server, "client": client,
              "client_mode": client_mode, "elicit": elicit, "impair": impair, "steps": steps, "expect": list(expect), "findings": list(findings),
              "rules": list(rules), "cakewalk": cakewalk, "notes": notes, **extra})


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

# ---------------------------------------------------------------- long, agent-like sessions (issue 11)
# Hundreds of tools/call from one real SDK client, as an agent makes them: the same read-only call
# (read_note{groceries}, list_notes{}) re-made again and again with other calls in between, other reads with
# varied arguments, idempotent writes (write_note), non-idempotent writes (sync_notes{target:"laptop"}, also
# re-made later), a few deletions of distinct files and tool errors with distinct arguments. No two identical
# calls are ever back to back except where an anomaly is planted. The plan is generated from a fixed seed, so
# a re-run sends the same calls in the same order.
import json as _json
import random as _random

NOTE_NAMES = ["recipes", "travel", "books", "meeting", "budget", "garden", "gifts", "ideas", "health", "car"]
QUERIES = ["milk", "plumber", "flight", "chapter", "budget", "seeds", "dentist", "oil"]
WRITE_TEXTS = ["draft", "done", "v2"]
DOUBLE = {"op": "call", "tool": "delete_file", "args": {"path": "/tmp/lab/draft-v2.txt"}, "timeout_ms": 5000}
CUT = {"op": "call", "tool": "sync_notes", "args": {"target": "backup"}, "progress": True, "timeout_ms": 5000,
       "on_error": {"action": "retry", "delay_ms": 0}}


def _call(tool, args, **kw):
    d = {"op": "call", "tool": tool, "args": args, "timeout_ms": 5000}
    d.update(kw)
    return d


def _key(st):
    return (st["tool"], _json.dumps(st["args"], sort_keys=True))


def long_session(seed, healthy, cut_outcome=None):
    """Steps, expected outcomes (one per tools/call on the wire), planted anomalies (call indexes), and the
    1-based position of the cut call among sync_notes calls (for the fault rule)."""
    rnd = _random.Random(seed)
    counters = {"del": 0, "fail": 0}

    def pick():
        r = rnd.random() * 100
        if r < 22:
            return _call("read_note", {"name": "groceries"})
        if r < 30:
            return _call("read_note", {"name": "todo"})
        if r < 42:
            return _call("read_note", {"name": rnd.choice(NOTE_NAMES)})
        if r < 52:
            return _call("list_notes", {})
        if r < 60:
            return _call("search_notes", {"query": rnd.choice(QUERIES)})
        if r < 64:
            return _call("slow_progress", {"steps": 2, "delay_ms": 5}, progress=True)
        if r < 82:
            return _call("write_note", {"name": rnd.choice(["groceries", "todo"] + NOTE_NAMES[:4]),
                                        "text": rnd.choice(WRITE_TEXTS)})
        if r < 87:
            return _call("sync_notes", {"target": "laptop"}, progress=True)
        if r < 93:
            counters["del"] += 1
            return _call("delete_file", {"path": f"/tmp/lab/tmp-{counters['del']}.txt"})
        if r < 97:
            return _call("read_note", {"name": "todo"})
        counters["fail"] += 1
        return _call("fail_tool", {"reason": f"lab-{counters['fail']}"})

    calls = []
    while len(calls) < healthy:
        st = pick()
        if calls and _key(calls[-1]) == _key(st):
            continue   # never two identical calls back to back (outside the planted anomalies)
        calls.append(st)
    at_double, at_cut = int(healthy * 0.4), int(healthy * 0.7)
    seq = calls[:at_double] + [dict(DOUBLE), dict(DOUBLE)] + calls[at_double:at_cut]
    if cut_outcome:
        seq += [dict(CUT)]
    seq += calls[at_cut:]
    steps, expect, planted, wire = [], [], [], 0
    cut_nth = None
    n_sync = 0
    for i, st in enumerate(seq):
        if i and i % 17 == 0 and st is not seq[i - 1] and _key(seq[i - 1]) != _key(st) \
                and seq[i - 1].get("on_error") is None:
            steps.append({"op": "sleep", "ms": 150 + (i * 37) % 200})   # an agent "thinking" between calls
        steps.append(st)
        if st["tool"] == "sync_notes":
            n_sync += 1
        if st is seq[at_double]:
            planted.append({"anomaly": "double dispatch: the same delete_file sent twice back to back by the "
                                       "script, the second right after the first's response",
                            "calls": [wire, wire + 1]})
        if st.get("on_error"):
            cut_nth = n_sync
            planted.append({"anomaly": "retry after a cut: the proxy cut the sync_notes call before its "
                                       "response and the script re-sent it at once",
                            "calls": [wire, wire + 1]})
            expect += [cut_outcome, "TOOL_SUCCESS"]
            wire += 2
            n_sync += 1
            continue
        expect.append("TOOL_ERROR" if st["tool"] == "fail_tool" else "TOOL_SUCCESS")
        wire += 1
    return steps, expect, planted, cut_nth


LONG_NOTES = (
    "Findings: the planted anomalies alone. (1) The double dispatch: an identical delete_file sent again right "
    "after the first, no other call in between; by the repeat rules of issue 11 (a double dispatch is a retry "
    "candidate whatever the first outcome) and as in client_repeat_destructive_*, it is UNEXPLAINED_REPEAT "
    "(delete_file is annotated destructive). {cut}Everything else is healthy: every other repeated call (e.g. "
    "read_note{{name:groceries}} {groceries} times, list_notes{{}} {listn} times, sync_notes{{target:laptop}} "
    "{laptop} times, identical write_note calls) is a re-invocation made after the earlier one returned its "
    "result, with other calls in between, which raises nothing above INFO (issue 11, rule 2). Distinct "
    "fail_tool reasons mean no failed call is ever repeated. max_findings_above_info = {maxf}: one finding per "
    "planted anomaly kind listed.")
CUT_NOTE = (
    "(2) The cut: the proxy {how}; the call is {outcome} and NON_TERMINAL. The script re-sent the same sync_notes "
    "at once (same arguments, new id): a repeat after an attempt that may have run, of a tool annotated neither "
    "read-only nor idempotent, so UNSAFE_REPLAY; as in no_response_replay_*, UNEXPLAINED_REPEAT is not listed "
    "for it (the first attempt had ended without a result, the failure explains the retry). ")


def _long_add(name, desc, server, client, healthy, seed, cut=None, client_mode=None):
    steps, expect, planted, cut_nth = long_session(seed, healthy, cut and cut["outcome"])
    calls = [s for s in steps if s["op"] == "call"]
    cnt = lambda t, a: sum(1 for s in calls if _key(s) == (t, _json.dumps(a, sort_keys=True)))  # noqa: E731
    findings = ["UNEXPLAINED_REPEAT"] + (["NON_TERMINAL", "UNSAFE_REPLAY"] if cut else [])
    rules = [{"match": tc("sync_notes", cut_nth), "action": cut["action"]}] if cut else []
    notes = LONG_NOTES.format(cut=CUT_NOTE.format(how=cut["how"], outcome=cut["outcome"]) if cut else "",
                              groceries=cnt("read_note", {"name": "groceries"}), listn=cnt("list_notes", {}),
                              laptop=cnt("sync_notes", {"target": "laptop"}), maxf=len(findings))
    add(name, desc, server, client, steps, expect, findings=sorted(findings), rules=rules,
        cakewalk="(agent-like long session; issue 11)", notes=notes, client_mode=client_mode,
        max_findings_above_info=len(findings), planted=planted, quiet=True)


TS_AGENT = ("ts", "streamable", ["--agent-tools"])
PY_AGENT = ("py", "streamable", ["--agent-tools"])
_long_add("long_session_ts", "A long agent-like session: TS client -> TS server (--agent-tools), Streamable HTTP "
          "with SSE responses, one session. Re-reads of the same read-only calls throughout, other reads, writes; "
          "planted: one double dispatch of delete_file and one retry of sync_notes after the proxy closed the "
          "connection before its response.",
          TS_AGENT, "ts", 206, 1101,
          cut={"outcome": "NO_RESPONSE", "action": {"type": "close"},
               "how": "read the sync_notes POST and closed the connection without any response (the TS client "
                      "throws 'fetch failed' at once and stays usable)"})
_long_add("long_session_py", "A long agent-like session: Python client (auto -> 2026-07-28) -> Python server "
          "(--agent-tools), Streamable HTTP (SSE for calls that stream progress, JSON otherwise). Re-reads of the "
          "same read-only calls throughout, other reads, writes; planted: one double dispatch of delete_file and "
          "one retry of sync_notes after the proxy cut its SSE stream before the result.",
          PY_AGENT, "py", 206, 1102,
          cut={"outcome": "STREAM_INCOMPLETE", "action": {"type": "forward", "cut_before_response": True},
               "how": "forwarded sync_notes' SSE stream (2 progress events) and closed the connection before the "
                      "result event, without the terminating chunk (the Python client raises 'SSE stream ended "
                      "without a response' at once and stays usable)"})
_long_add("long_session_stdio_py", "A long agent-like session over stdio: Python client (2026-07-28) -> Python "
          "server (--agent-tools) through stdio_tee.py. Re-reads of the same read-only calls throughout, other "
          "reads, writes; planted: one double dispatch of delete_file.",
          ("py", "stdio", ["--agent-tools"]), "py", 210, 1103)

# ---------------------------------------------------------------- real cancellations (issue 11)
CANCEL_SLOW = {"op": "call", "tool": "slow_progress", "args": {"steps": 4, "delay_ms": 400}, "progress": True,
               "timeout_ms": 700}
add("cancel_timeout_ts", "TS client -> TS server, SSE responses. slow_progress{steps:4, delay_ms:400} is called "
    "with a request timeout of 700 ms (RequestOptions.timeout), shorter than the tool's 1.6 s: after the first "
    "progress event the SDK's timeout fires, it sends notifications/cancelled {requestId, reason} and rejects the "
    "call with McpError -32001. The script waits 1.5 s and calls read_note, which succeeds.",
    TS_SSE, "ts", [NOTE, CANCEL_SLOW, {"op": "sleep", "ms": 1500}, step(NOTE, args={"name": "todo"})],
    ["TOOL_SUCCESS", "STREAM_INCOMPLETE", "TOOL_SUCCESS"], findings=["NON_TERMINAL"],
    cakewalk="(client cancellation; not a Cakewalk scenario)", cancelled_calls=[1], cancel={"notification": True},
    max_findings_above_info=0,
    notes="Observed: the SDK POSTs notifications/cancelled on another connection when its timeout fires and does "
          "not abort the fetch of the cancelled POST: the server sends nothing more on that SSE stream (no further "
          "progress, no result), and the stream stays open until client.close() at the end of the script, when "
          "the client closes it with a FIN (so the cancel precedes the stream's end by about 1.5 s). "
          "The client chose to stop waiting: NON_TERMINAL, but as a cancellation (issue 11: INFO, with the "
          "reason), so no finding above INFO.")
add("cancel_close_stream_py", "Python client (auto -> 2026-07-28) -> Python server, SSE for the streaming call. "
    "slow_progress{steps:4, delay_ms:400} is called with read_timeout_seconds=0.7, shorter than the tool's 1.6 s: "
    "the SDK's timeout fires, and on a 2026-07-28 HTTP connection the SDK cancels by closing the POST's response "
    "stream instead of POSTing notifications/cancelled. The script waits 1.5 s and calls read_note, which "
    "succeeds.",
    PY_SSE, "py", [NOTE, CANCEL_SLOW, {"op": "sleep", "ms": 1500}, step(NOTE, args={"name": "todo"})],
    ["TOOL_SUCCESS", "STREAM_INCOMPLETE", "TOOL_SUCCESS"], findings=["NON_TERMINAL"],
    cakewalk="(client cancellation; not a Cakewalk scenario)", cancelled_calls=[1], cancel={"notification": False},
    max_findings_above_info=0,
    notes="Observed: at its read timeout the SDK turns the cancel into closing the POST's response stream "
          "(mcp/client/streamable_http.py, _consume_modern_cancellation: no notifications/cancelled is POSTed); "
          "httpx closes that keep-alive connection with a FIN, right after the timeout. The next call opens a new "
          "connection. "
          "The client chose to stop waiting: NON_TERMINAL, but as a cancellation (issue 11: in 2026-07-28 over "
          "HTTP, closing the request's stream is the cancellation; INFO, with the reason), so no finding above INFO.")

add("sse_cut_cancel_retry_ts", "TS client -> TS server (--agent-tools), SSE. The proxy cuts sync_notes' SSE stream after "
    "its 2 progress events, before the result. The TS client does not notice at the call level (onerror only); at "
    "its 600 ms request timeout it sends notifications/cancelled for the call (after the stream was already cut) and "
    "rejects with -32001; the script re-sends the same sync_notes at once, which succeeds. A read_note before and "
    "after.",
    TS_AGENT, "ts", [NOTE, step(CUT, timeout_ms=600), step(NOTE, args={"name": "todo"})],
    ["TOOL_SUCCESS", "STREAM_INCOMPLETE", "TOOL_SUCCESS", "TOOL_SUCCESS"],
    findings=["NON_TERMINAL", "UNSAFE_REPLAY"],
    rules=[{"match": tc("sync_notes", 1), "action": {"type": "forward", "cut_before_response": True}}],
    cakewalk="errors.connection_close (mid-stream variant), then a client-side timeout",
    planted=[{"anomaly": "retry after a cut: the proxy cut the sync_notes stream before its result; the TS client "
                         "cancelled at its timeout and the script re-sent the call at once", "calls": [1, 2]}],
    late_cancel_calls=[1], max_findings_above_info=2,
    notes="The notifications/cancelled comes only after the server side had cut the call's stream, so it is not "
          "a cancellation of a live call (docs/findings.md, NON_TERMINAL): the cut call is NON_TERMINAL above INFO. "
          "The re-send after that failure is an UNSAFE_REPLAY (sync_notes is annotated neither read-only nor "
          "idempotent) and, as in no_response_replay_*, not an UNEXPLAINED_REPEAT. cancelled_calls is left out on "
          "purpose. max_findings_above_info = 2.")

# ---------------------------------------------------------------- the official Rust SDK (rmcp), issue 16
# rs_server / rs_client (peers/rust, rmcp 3.11.0). The client connects with ServiceExt::serve (the SDK's default
# lifecycle: initialize, 2025-11-25) unless the plan says mode 'auto'; the server runs in the SDK's default session
# mode (Mcp-Session-Id, SSE with priming event ids) or, with --json, stateless with JSON answers.
RS_SSE = ("rs", "streamable", [])
RS_JSON = ("rs", "streamable", ["--json"])
RS_SSE_STORE = ("rs", "streamable", ["--event-store"])
add("baseline_rs_sse", "Rust client (rmcp, initialize, 2025-11-25) -> Rust server (rmcp, session mode, SSE "
    "responses with priming event ids); read_note, slow_progress (3 progress notifications), delete_file. "
    "rmcp puts a progressToken in the _meta of every request it sends, tools/call or not.",
    RS_SSE, "rs", [NOTE, SLOW, DELETE], ["TOOL_SUCCESS"] * 3, cakewalk="baseline")
add("baseline_rs_json", "Rust client -> Rust server with --json (stateless_mode + json_response): each request "
    "POST is answered application/json, except a call that sends progress first, which falls back to SSE.",
    RS_JSON, "rs", [NOTE, SLOW, DELETE], ["TOOL_SUCCESS"] * 3, cakewalk="baseline")
add("tool_error_rs", "fail_tool returns a normal result with isError:true (produced by the rmcp server); a "
    "read_note afterwards succeeds.",
    RS_SSE, "rs", [FAIL, NOTE], ["TOOL_ERROR", "TOOL_SUCCESS"], cakewalk="errors.tool_error")
add("http_503_then_200_rs", "The first tools/call POST gets 503 with an empty body and no Content-Type; the "
    "client script catches the error and calls again after 500 ms; the second POST reaches the server (200).",
    RS_SSE, "rs", [step(NOTE, on_error={"action": "retry", "delay_ms": 500})], ["HTTP_ERROR", "TOOL_SUCCESS"],
    rules=[{"match": tc(nth=1), "action": {"type": "respond", "status": 503, "headers": [], "body": ""}}],
    cakewalk="errors.http_status_sequence {statusCodes:[503,200]}")
add("jsonrpc_error_rs", "The first tools/call is answered 200 application/json with a JSON-RPC error "
    "{-32602 Invalid params} for its id instead of reaching the server; a second, different call succeeds.",
    RS_SSE, "rs", [NOTE, DELETE], ["JSONRPC_ERROR", "TOOL_SUCCESS"],
    rules=[{"match": tc(nth=1), "action": {"type": "respond", "status": 200,
                                            "headers": [["Content-Type", "application/json"]],
                                            "body": '{"jsonrpc":"2.0","id":{id},"error":{"code":-32602,'
                                                    '"message":"Invalid params"}}'}}],
    cakewalk="errors.jsonrpc_error")
add("sse_cut_rs", "slow_progress's SSE response stream is cut by the proxy after the progress notifications and "
    "before the final response (connection closed, no terminating chunk). The rmcp server gave every event an id "
    "and a priming event with retry: 3000, so the rmcp client (SDK defaults) resumes with GET + Last-Event-ID; "
    "the server answers each GET 200 with an empty stream (it keeps no events of a finished request), and the client "
    "reconnects again and again until its 5 s request timeout, then POSTs notifications/cancelled. A later read_note "
    "succeeds.",
    RS_SSE, "rs", [step(SLOW, timeout_ms=5000), NOTE], ["STREAM_INCOMPLETE", "TOOL_SUCCESS"],
    findings=["NON_TERMINAL", "RETRY_TOO_SOON"], late_cancel_calls=[0],
    rules=[{"match": tc("slow_progress", 1), "action": {"type": "forward", "cut_before_response": True}}],
    cakewalk="errors.connection_close (mid-stream variant)",
    notes="Observed: after the cut (a stream error) the client reconnects at once, about 10 ms later, not after the "
          "3 s the server's priming event asked for (RETRY_TOO_SOON); rmcp waits the server's retry only after a stream "
          "that ended cleanly, and only once (it takes the value), so after the first empty replay stream it waits 3 s "
          "and after the next ones its own backoff, 1 s. The "
          "notifications/cancelled comes after the stream was cut, so the call is NON_TERMINAL above INFO, as in "
          "sse_cut_cancel_retry_ts.")
add("sse_cut_resumed_rs", "As sse_cut_rs, but the rmcp server keeps its events in an EventStore (--event-store, "
    "in memory): after the cut the rmcp client resumes with GET + Last-Event-ID and the server replays the final "
    "response on that GET stream, so the call completes.",
    RS_SSE_STORE, "rs", [step(SLOW, timeout_ms=8000), NOTE], ["TOOL_SUCCESS", "TOOL_SUCCESS"],
    findings=["RETRY_TOO_SOON"],
    rules=[{"match": tc("slow_progress", 1), "action": {"type": "forward", "cut_before_response": True}}],
    cakewalk="(2025-11-25 resumption; not a Cakewalk scenario)",
    notes="The POST exchange itself ends 'closed' without the response; the response for the same id arrives on "
          "a later GET exchange that carries Last-Event-ID. As in sse_cut_rs, the client resumes at once after the "
          "cut although the server's priming event said retry: 3000, hence RETRY_TOO_SOON; the resumption itself "
          "works.")
add("wrong_id_rs", "The server's real JSON response to the first tools/call is passed on with its id replaced by "
    "99999. The client never gets a response for its own id and gives up after its 3 s timeout; a later "
    "read_note succeeds.",
    RS_JSON, "rs", [step(NOTE, timeout_ms=3000), step(NOTE, args={"name": "todo"})],
    ["INVALID_ENVELOPE", "TOOL_SUCCESS"], findings=["ID_MISMATCH"],
    rules=[{"match": tc(nth=1), "action": {"type": "forward", "set_id": 99999}}],
    cakewalk="errors.malformed_payload {kind:wrong_id}")
add("malformed_json_rs", "The first tools/call is answered 200 application/json with the literal body "
    "'{ not valid json'; a later read_note succeeds.",
    RS_JSON, "rs", [step(NOTE, timeout_ms=3000), step(NOTE, args={"name": "todo"})],
    ["MALFORMED_JSON", "TOOL_SUCCESS"],
    rules=[{"match": tc(nth=1), "action": {"type": "respond", "status": 200,
                                            "headers": [["Content-Type", "application/json"]],
                                            "body": "{ not valid json"}}],
    cakewalk="errors.malformed_payload {kind:invalid_json}")
add("content_not_array_rs", "The server's real result for the first tools/call is passed on with result.content "
    "turned from an array into its first object; a later read_note succeeds.",
    RS_JSON, "rs", [step(NOTE, timeout_ms=3000), step(NOTE, args={"name": "todo"})],
    ["INVALID_TOOL_RESULT", "TOOL_SUCCESS"],
    rules=[{"match": tc(nth=1), "action": {"type": "forward", "content_not_array": True}}],
    cakewalk="invalid_resource / invalid_prompt (schema-invalid result), applied to tools/call")
add("rate_limit_429_rs", "The first tools/call gets 429 Too Many Requests with Retry-After: 2. The script waits "
    "2.5 s (honours Retry-After) and calls again: 200.",
    RS_SSE, "rs", [step(NOTE, on_error={"action": "retry", "delay_ms": 2500})], ["HTTP_ERROR", "TOOL_SUCCESS"],
    rules=[{"match": tc(nth=1), "action": {"type": "respond", "status": 429,
                                            "headers": [["Retry-After", "2"], ["Content-Type", "text/plain"]],
                                            "body": "Too Many Requests"}}],
    cakewalk="errors.http_status_per_method (429 instead of 401)")
add("session_expired_404_rs", "After a first read_note, the session is terminated on the server (the proxy sends "
    "the server a DELETE for it) just before the delete_file POST, so the rmcp server answers that POST 404. The "
    "rmcp client's transport re-initializes by itself (reinit_on_expired_session, on by default) and re-sends the "
    "same delete_file (same id) on the new session; the script does nothing.",
    RS_SSE, "rs", [NOTE, DELETE], ["TOOL_SUCCESS", "HTTP_ERROR", "TOOL_SUCCESS"],
    rules=[{"match": tc("delete_file", 1), "action": {"type": "forward", "expire_session_first": True}}],
    cakewalk="(session expiry; 2025-era transports spec, not a Cakewalk scenario)")
add("client_repeat_destructive_rs", "The client script calls delete_file, gets a successful result, and then sends "
    "the same delete_file (same arguments, new id) again on its own.",
    RS_SSE, "rs", [DELETE, DELETE], ["TOOL_SUCCESS"] * 2, findings=["UNEXPLAINED_REPEAT"],
    cakewalk="(REP column of the Cakewalk table)")
add("no_response_replay_rs", "The first delete_file POST is read by the proxy and the connection is closed without "
    "any response. The script retries delete_file after 300 ms: a replay of a destructive call whose first attempt "
    "may have run.",
    RS_SSE, "rs", [step(DELETE, timeout_ms=3000, on_error={"action": "retry", "delay_ms": 300})],
    ["NO_RESPONSE", "TOOL_SUCCESS"], findings=["NON_TERMINAL", "UNSAFE_REPLAY"],
    rules=[{"match": tc("delete_file", 1), "action": {"type": "close"}}],
    cakewalk="errors.connection_close {closeOn:tool_call}")
add("stdio_rs", "stdio: the rmcp client launches stdio_tee.py, which launches the rmcp server and records every "
    "line. read_note, slow_progress, fail_tool, delete_file, then the same delete_file again (unexplained "
    "repeat).",
    ("rs", "stdio", []), "rs", [NOTE, SLOW, FAIL, DELETE, DELETE],
    ["TOOL_SUCCESS", "TOOL_SUCCESS", "TOOL_ERROR", "TOOL_SUCCESS", "TOOL_SUCCESS"],
    findings=["UNEXPLAINED_REPEAT"], cakewalk="baseline / errors.tool_error")
add("cancel_timeout_rs", "Rust client -> Rust server, SSE. slow_progress{steps:4, delay_ms:400} is called with a "
    "request timeout of 700 ms (PeerRequestOptions::with_timeout), shorter than the tool's 1.6 s: the SDK's "
    "timeout fires, it POSTs notifications/cancelled {requestId, reason:\"request timeout\"} and returns "
    "ServiceError::Timeout. The script waits 1.5 s and calls read_note, which succeeds.",
    RS_SSE, "rs", [NOTE, CANCEL_SLOW, {"op": "sleep", "ms": 1500}, step(NOTE, args={"name": "todo"})],
    ["TOOL_SUCCESS", "STREAM_INCOMPLETE", "TOOL_SUCCESS"], findings=["NON_TERMINAL"],
    cakewalk="(client cancellation; not a Cakewalk scenario)", cancelled_calls=[1], cancel={"notification": True},
    max_findings_above_info=0,
    notes="The client chose to stop waiting: NON_TERMINAL, but as a cancellation (INFO, with the reason), so no "
          "finding above INFO.")
add("baseline_rs_auto", "Rust client with ClientLifecycleMode::Auto (server/discover first) -> Rust server: the "
    "probe succeeds and both sides speak the stateless 2026-07-28 revision (no initialize, no Mcp-Session-Id, "
    "protocol metadata in every request's _meta, resultType on every result).",
    RS_SSE, "rs", [NOTE, SLOW, DELETE], ["TOOL_SUCCESS"] * 3, cakewalk="baseline", client_mode="auto")
add("cross_rs_client_py_server", "Rust client (initialize, 2025-11-25) -> Python server, SSE responses.",
    PY_SSE, "rs", [NOTE, SLOW, DELETE], ["TOOL_SUCCESS"] * 3, cakewalk="baseline")
add("cross_rs_client_ts_server", "Rust client (rmcp) -> TS server, Streamable HTTP with SSE responses.",
    TS_SSE, "rs", [NOTE, SLOW, DELETE], ["TOOL_SUCCESS"] * 3, cakewalk="baseline")
add("cross_ts_client_rs_server", "TS client -> Rust server (rmcp, session mode, SSE with event ids).",
    RS_SSE, "ts", [NOTE, SLOW, DELETE], ["TOOL_SUCCESS"] * 3, cakewalk="baseline")
add("cross_py_client_rs_server", "Python client (auto: server/discover probe) -> Rust server (rmcp 3.11 knows "
    "2026-07-28, so the probe succeeds and the session is stateless 2026-07-28).",
    RS_SSE, "py", [NOTE, SLOW, DELETE], ["TOOL_SUCCESS"] * 3, cakewalk="compat.sdk_v2")

SCENARIOS = {s["name"]: s for s in S}
