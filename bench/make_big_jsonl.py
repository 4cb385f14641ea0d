#!/usr/bin/env python3
"""Writes a large JSONL file of HTTP exchange records (Streamable HTTP tools/call,
JSON and SSE responses alternating, ~2 KB results) for measuring mcpsift.

    python3 bench/make_big_jsonl.py OUT.jsonl [megabytes] [calls-per-session]

With calls-per-session, each group of that many calls gets its own session id,
opened by an initialize exchange (distinct sessions, as a recorder of many clients
writes); without it, every call is in session s-1.
"""
import json
import sys


def main():
    out = sys.argv[1]
    target = int(sys.argv[2]) * 1_000_000 if len(sys.argv) > 2 else 300_000_000
    pad = "lorem ipsum " * 150
    per = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    n = size = 0
    with open(out, "w") as f:
        while size < target:
            n += 1
            sid = f"s-{n // per}" if per else "s-1"
            if per and (n == 1 or n % per == 0):  # the first call of a session
                init = {"jsonrpc": "2.0", "id": f"i{n}", "method": "initialize",
                        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "bench", "version": "1"}}}
                ok = {"jsonrpc": "2.0", "id": f"i{n}", "result": {
                    "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "bench-server", "version": "1.0"}}}
                rec = {"ts": "2026-12-02T10:00:00Z",
                       "request": {"method": "POST", "url": "http://127.0.0.1:3000/mcp",
                                   "headers": [["Content-Type", "application/json"]], "body": json.dumps(init)},
                       "response": {"status": 200, "headers": [["Content-Type", "application/json"],
                                                               ["Mcp-Session-Id", sid]], "body": json.dumps(ok)}}
                line = json.dumps(rec) + "\n"
                f.write(line)
                size += len(line)
            req = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                   "params": {"name": "read_note", "arguments": {"path": f"n{n}.txt"}}}
            body = {"jsonrpc": "2.0", "id": n, "result": {"content": [{"type": "text", "text": pad}]}}
            if n % 2:
                resp = {"status": 200, "headers": [["Content-Type", "application/json"]], "body": json.dumps(body)}
            else:
                progress = {"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": n, "progress": 1}}
                resp = {"status": 200, "headers": [["Content-Type", "text/event-stream"]],
                        "body": f"event: message\ndata: {json.dumps(progress)}\n\nevent: message\ndata: {json.dumps(body)}\n\n"}
            rec = {"ts": "2026-12-02T10:00:00Z",
                   "request": {"method": "POST", "url": "http://127.0.0.1:3000/mcp",
                               "headers": [["Content-Type", "application/json"], ["Mcp-Session-Id", sid]],
                               "body": json.dumps(req)},
                   "response": resp}
            line = json.dumps(rec) + "\n"
            f.write(line)
            size += len(line)
    print(f"{out}: {n} records, {size // 1_000_000} MB")


main()
