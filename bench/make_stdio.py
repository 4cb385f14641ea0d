#!/usr/bin/env python3
"""Writes a stdio transcript (`{"ts", "dir", "msg"}` per line, what a recorder
teeing a stdio server's pipes keeps) of one long agent session: a single server
process, so every call shares one scope and ids only grow, the shape where state
kept per call would show as memory growing with the file.

    python3 bench/make_stdio.py OUT.jsonl [megabytes]

After initialize and a tools/list of six tools with schemas: calls to those tools
with results from a few bytes to a few KB of source text (newlines and quotes
escaped), two calls in flight at times (answered out of order), progress
notifications before one call in ten, a tool error in one in 25, a JSON-RPC error
in one in 200 and a tools/list again every 500 calls.
"""
import json
import sys

TOOLS = ["read_file", "search", "list_dir", "run_query", "write_file", "git_diff"]
SOURCE = 'fn main() {\n    println!("hello, {}", name);\n}\n'


def schema(tool):
    return {"name": tool, "description": f"{tool.replace('_', ' ')} in the workspace",
            "inputSchema": {"type": "object",
                            "properties": {"path": {"type": "string", "description": "a path"},
                                           "limit": {"type": "integer", "minimum": 0}},
                            "required": ["path"]}}


def line(ms, direction, msg):
    secs, ms = divmod(ms, 1000)
    ts = f"2026-12-02T{8 + secs // 3600 % 14:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}.{ms:03d}Z"
    return json.dumps({"ts": ts, "dir": direction, "msg": msg}, separators=(",", ":")) + "\n"


def result(n, tool):
    if n % 25 == 7:
        return {"content": [{"type": "text", "text": f"{tool}: no such file src/m{n}.rs"}],
                "isError": True}
    return {"content": [{"type": "text", "text": SOURCE * (n % 40)}], "isError": False}


def main():
    out = sys.argv[1]
    target = int(sys.argv[2]) * 1_000_000 if len(sys.argv) > 2 else 150_000_000
    ms = 0
    with open(out, "w") as f:
        f.write(line(ms, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "agent", "version": "2.1"}}}))
        f.write(line(ms + 40, "s2c", {"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "workspace", "version": "0.9"}}}))
        f.write(line(ms + 41, "c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}))
        n = 0
        next_id = 1
        while f.tell() < target:
            ms += 50
            if n % 500 == 0:
                f.write(line(ms, "c2s", {"jsonrpc": "2.0", "id": next_id, "method": "tools/list"}))
                f.write(line(ms + 3, "s2c", {"jsonrpc": "2.0", "id": next_id,
                                             "result": {"tools": [schema(t) for t in TOOLS]}}))
                next_id += 1
            tool = TOOLS[n % len(TOOLS)]
            a = {"jsonrpc": "2.0", "id": next_id, "method": "tools/call", "params": {
                "name": tool, "arguments": {"path": f"src/m{n % 97}.rs", "limit": n % 50}}}
            if n % 10 == 3:
                a["params"]["_meta"] = {"progressToken": f"p{next_id}"}
            f.write(line(ms, "c2s", a))
            if n % 10 == 3:
                for k in range(3):
                    f.write(line(ms + 5 + k, "s2c", {"jsonrpc": "2.0", "method": "notifications/progress",
                                                     "params": {"progressToken": f"p{next_id}",
                                                                "progress": k + 1, "total": 3}}))
            if n % 7 == 0:
                # A second call before the first is answered; answered first.
                b = {"jsonrpc": "2.0", "id": next_id + 1, "method": "tools/call", "params": {
                    "name": "search", "arguments": {"path": "src", "limit": 5}}}
                f.write(line(ms + 10, "c2s", b))
                f.write(line(ms + 20, "s2c", {"jsonrpc": "2.0", "id": next_id + 1,
                                              "result": result(n + 1, "search")}))
            if n % 200 == 99:
                reply = {"jsonrpc": "2.0", "id": next_id,
                         "error": {"code": -32602, "message": f"Unknown tool: {tool}"}}
            else:
                reply = {"jsonrpc": "2.0", "id": next_id, "result": result(n, tool)}
            f.write(line(ms + 30, "s2c", reply))
            next_id += 2 if n % 7 == 0 else 1
            n += 1
        size = f.tell()
    print(f"{out}: {n} turns, {size // 1_000_000} MB")


if __name__ == "__main__":
    main()
