#!/usr/bin/env python3
"""Writes a JSONL file of HTTP exchange records of many small tools/call exchanges
(an agent's session: short arguments, short text results, one call in twenty a tool
error), so that the cost per call, not per byte, dominates.

    python3 bench/make_small_calls.py OUT.jsonl [megabytes]

Sessions of 20 calls, each opened by an initialize exchange; four tools in turn.
"""
import json
import sys

TOOLS = ["read_file", "search", "list_dir", "run_query"]


def record(ts, sid, req, resp, opens):
    """One exchange; `opens`: the initialize that gives the session id (in its
    response), else a call that sends it (in its request)."""
    json_type = ["Content-Type", "application/json"]
    session = ["Mcp-Session-Id", sid]
    return json.dumps({
        "ts": ts,
        "request": {"method": "POST", "url": "http://127.0.0.1:3000/mcp",
                    "headers": [json_type] if opens else [json_type, session],
                    "body": json.dumps(req)},
        "response": {"status": 200,
                     "headers": [json_type, session] if opens else [json_type],
                     "body": json.dumps(resp)},
    }) + "\n"


def main():
    out = sys.argv[1]
    target = int(sys.argv[2]) * 1_000_000 if len(sys.argv) > 2 else 150_000_000
    n = size = 0
    with open(out, "w") as f:
        while size < target:
            sid = f"sess-{n // 20:08d}"
            secs = n // 10
            ts = f"2026-12-02T{10 + secs // 3600 % 10:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}.{n % 10}00Z"
            if n % 20 == 0:
                init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "agent", "version": "1"}}}
                ok = {"jsonrpc": "2.0", "id": 0, "result": {
                    "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "files", "version": "1.0"}}}
                line = record(ts, sid, init, ok, True)
                f.write(line)
                size += len(line)
            tool = TOOLS[n % len(TOOLS)]
            req = {"jsonrpc": "2.0", "id": n % 20 + 1, "method": "tools/call",
                   "params": {"name": tool, "arguments": {"path": f"src/m{n % 97}.rs", "limit": n % 50}}}
            error = n % 20 == 7
            resp = {"jsonrpc": "2.0", "id": n % 20 + 1, "result": {
                "content": [{"type": "text", "text": "not found" if error else f"{tool}: {n % 13} matches"}],
                "isError": error}}
            line = record(ts, sid, req, resp, False)
            f.write(line)
            size += len(line)
            n += 1
    print(f"{out}: {n} calls, {size // 1_000_000} MB")


if __name__ == "__main__":
    main()
