"""Real MCP client built on the official Python SDK. Driven by the same JSON plan as ts_client.mjs.

Extra plan key: "mode": "auto" (SDK default: probes server/discover, may negotiate 2026-07-28) or "legacy"
(initialize handshake). Records what the SDK did per attempt into plan["observe"].
"""
import asyncio
import json
import sys
import time

import anyio
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.types import ElicitResult, Implementation, InputRequiredResult

plan = json.load(open(sys.argv[1]))
obs = {"client": "python-sdk", "transport": plan["transport"], "mode": plan.get("mode", "auto"), "events": []}
T0 = time.monotonic()


def note(ev):
    ev["t_ms"] = int((time.monotonic() - T0) * 1000)
    print("[py_client]", json.dumps(ev), file=sys.stderr, flush=True)
    # plan["quiet"] (long sessions): count first attempts that returned, record everything else in full
    if plan.get("quiet") and ev.get("event") == "call" and ev.get("outcome") == "returned" and ev.get("attempt") == 1:
        k = ev["tool"] + (" (isError)" if ev.get("isError") else "")
        obs.setdefault("returned", {})
        obs["returned"][k] = obs["returned"].get(k, 0) + 1
        return
    obs["events"].append(ev)


def target():
    if plan["transport"] == "streamable" and plan.get("http2"):
        # HTTP/2 only: "prior-knowledge" (h2c, preface without Upgrade) or "tls" (ALPN h2; SSLKEYLOGFILE is
        # honoured by the ssl context httpx2 builds). The SDK takes a ready client in place of its factory's.
        import httpx2
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
        verify = plan.get("cafile", True)
        http = httpx2.AsyncClient(http1=False, http2=True, verify=verify,
                                  timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT))
        return streamable_http_client(plan["url"], http_client=http)
    if plan["transport"] == "streamable":
        return plan["url"]
    if plan["transport"] == "legacy-sse":
        return sse_client(plan["url"])
    if plan["transport"] == "stdio":
        return StdioServerParameters(command=plan["command"][0], args=plan["command"][1:])
    raise SystemExit("unknown transport")


def describe(e):
    d = {"error_name": type(e).__name__, "message": str(e)[:300]}
    code = getattr(e, "code", None)
    if isinstance(code, int):
        d["code"] = code
    if isinstance(e, BaseExceptionGroup):
        d["inner"] = [describe(x) for x in e.exceptions][:3]
    return d


async def call_once(client, step, attempt):
    progress = []

    async def on_progress(p, total, message):
        progress.append(p)

    started = time.monotonic()
    try:
        timeout = step.get("timeout_ms", 10000) / 1000
        if step.get("no_follow_up"):
            # Drive MRTR by hand and stop after round 1: the client never sends the follow-up.
            res = await client.session.call_tool(step["tool"], step.get("args", {}), read_timeout_seconds=timeout,
                                                 allow_input_required=True)
            if isinstance(res, InputRequiredResult):
                note({"event": "call", "tool": step["tool"], "attempt": attempt, "outcome": "input_required",
                      "input_requests": sorted((res.input_requests or {}).keys()),
                      "has_request_state": res.request_state is not None, "follow_up": "not sent (script)",
                      "elapsed_ms": int((time.monotonic() - started) * 1000)})
                return True
        with anyio.fail_after(timeout + 5):  # safety net only; the SDK's own read timeout comes first
            res = await client.call_tool(step["tool"], step.get("args", {}), read_timeout_seconds=timeout,
                                         progress_callback=on_progress if step.get("progress") else None)
        text = res.content[0].text if res.content and hasattr(res.content[0], "text") else None
        note({"event": "call", "tool": step["tool"], "attempt": attempt, "outcome": "returned",
              "isError": bool(res.is_error), "progress_seen": len(progress), "text": text,
              "elapsed_ms": int((time.monotonic() - started) * 1000)})
        return True
    except Exception as e:  # noqa: BLE001
        note({"event": "call", "tool": step["tool"], "attempt": attempt, "outcome": "threw",
              "progress_seen": len(progress), "elapsed_ms": int((time.monotonic() - started) * 1000), **describe(e)})
        return False


CURRENT = {"steps": []}


ELICITED = []


async def on_elicit(context, params):
    """Answer every elicitation with accept + confirm:true (the lab's stand-in for a user)."""
    ELICITED.append(params.message)
    note({"event": "elicitation", "message": params.message})
    return ElicitResult(action="accept", content={"confirm": True})


async def session(steps):
    """Run steps in one client session; returns the remaining steps if a reconnect is needed."""
    async with Client(target(), mode=plan.get("mode", "auto"),
                      elicitation_callback=on_elicit if plan.get("elicit") else None,
                      client_info=Implementation(name="lab-py-client", version="1.0.0")) as client:
        note({"event": "connected", "protocol_version": client.protocol_version})
        tools = await client.list_tools()
        note({"event": "tools/list", "tools": [t.name for t in tools.tools]})
        for i, step in enumerate(steps):
            CURRENT["steps"] = steps[i:]
            if step["op"] == "sleep":
                await asyncio.sleep(step["ms"] / 1000)
                continue
            ok = await call_once(client, step, step.get("_attempt", 1))
            oe = step.get("on_error")
            if not ok and oe and step.get("_attempt", 1) == 1:
                await asyncio.sleep(oe.get("delay_ms", 0) / 1000)
                if oe["action"] == "reconnect_retry":
                    note({"event": "script.reconnect"})
                    return [dict(step, _attempt=2)] + steps[i + 1:]
                note({"event": "script.retry", "tool": step["tool"], "delay_ms": oe.get("delay_ms", 0)})
                await call_once(client, step, 2)
    return []


async def main():
    steps = plan["steps"]
    while steps:
        try:
            steps = await session(steps)
            if steps:
                note({"event": "script.retry", "tool": steps[0].get("tool"), "after": "reconnect"})
        except BaseException as e:  # noqa: BLE001
            # e.g. httpx2 RemoteProtocolError escaping the transport's task group: the whole Client dies
            note({"event": "fatal", **describe(e)})
            rest = CURRENT["steps"]
            oe = rest[0].get("on_error") if rest else None
            if not oe or rest[0].get("_attempt", 1) != 1:
                break
            await asyncio.sleep(oe.get("delay_ms", 0) / 1000)
            note({"event": "script.reconnect", "after": "fatal"})
            steps = [dict(rest[0], _attempt=2)] + rest[1:]
            note({"event": "script.retry", "tool": rest[0].get("tool"), "after": "reconnect"})
    note({"event": "closed"})
    with open(plan["observe"], "w") as f:
        json.dump(obs, f, indent=2)
        f.write("\n")


asyncio.run(main())
