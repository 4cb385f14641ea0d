#!/usr/bin/env python3
"""Writes a gzip-compressed tar of many small session logs, one session per member:
what a log archive that collects every agent session of a day looks like, where the
cost per input (opening, sniffing, a correlator and a spool each) weighs as much as the
cost per call.

    python3 bench/make_archive.py OUT.tar.gz [megabytes]

`megabytes` counts the logs before compression. Three members in four are HTTP
exchange logs (`{ts, request, response}` per line, an initialize first), one in four a
stdio transcript (`{ts, dir, msg}` per line); a session makes 2 to 80 calls (most make
few), its results from a few bytes to a few KB, a tool error in one call in 20. Member
names, times and sizes are fixed, so the archive is the same on every run.
"""
import io
import json
import sys
import tarfile

TOOLS = ["read_file", "search", "list_dir", "run_query", "write_file"]
SOURCE = 'fn main() {\n    println!("hello, {}", name);\n}\n'


def ts(ms):
    secs, ms = divmod(ms, 1000)
    return f"2026-12-02T{8 + secs // 3600 % 14:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}.{ms:03d}Z"


def result(n, tool):
    error = n % 20 == 7
    text = f"{tool}: no such file src/m{n}.rs" if error else SOURCE * (n * 7 % 23)
    return {"content": [{"type": "text", "text": text}], "isError": error}


def call(i, n, tool):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": tool, "arguments": {"path": f"src/m{n % 97}.rs", "limit": n % 50}}}


INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "agent", "version": "2.1"}}}
INIT_OK = {"jsonrpc": "2.0", "id": 0, "result": {
    "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
    "serverInfo": {"name": "workspace", "version": "0.9"}}}


def http_session(s, calls, start):
    sid = f"5e55{s:012x}"
    json_type = ["Content-Type", "application/json"]
    out = []

    def exchange(ms, req, resp, opens):
        out.append(json.dumps({
            "ts": ts(ms),
            "request": {"method": "POST", "url": "http://127.0.0.1:3000/mcp",
                        "headers": [json_type] if opens else [json_type, ["Mcp-Session-Id", sid]],
                        "body": json.dumps(req)},
            "response": {"status": 200,
                         "headers": [json_type, ["Mcp-Session-Id", sid]] if opens else [json_type],
                         "body": json.dumps(resp)},
        }) + "\n")

    exchange(start, INIT, INIT_OK, True)
    for k in range(calls):
        n = s * 31 + k
        tool = TOOLS[n % len(TOOLS)]
        exchange(start + 200 * (k + 1), call(k + 1, n, tool),
                 {"jsonrpc": "2.0", "id": k + 1, "result": result(n, tool)}, False)
    return "".join(out)


def stdio_session(s, calls, start):
    def line(ms, direction, msg):
        return json.dumps({"ts": ts(ms), "dir": direction, "msg": msg}, separators=(",", ":")) + "\n"

    out = [line(start, "c2s", INIT), line(start + 30, "s2c", INIT_OK),
           line(start + 31, "c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"})]
    for k in range(calls):
        n = s * 31 + k
        tool = TOOLS[n % len(TOOLS)]
        ms = start + 200 * (k + 1)
        out.append(line(ms, "c2s", call(k + 1, n, tool)))
        out.append(line(ms + 40, "s2c", {"jsonrpc": "2.0", "id": k + 1, "result": result(n, tool)}))
    return "".join(out)


def main():
    out = sys.argv[1]
    target = int(sys.argv[2]) * 1_000_000 if len(sys.argv) > 2 else 150_000_000
    size = s = 0
    with tarfile.open(out, "w:gz", compresslevel=6) as tar:
        while size < target:
            # Mostly short sessions, a few long ones: 2..80 calls.
            calls = 2 + (s * 7919 % 97) ** 2 // 120
            start = s * 1500
            if s % 4 == 3:
                text, ext = stdio_session(s, calls, start), "stdio.jsonl"
            else:
                text, ext = http_session(s, calls, start), "jsonl"
            data = text.encode()
            info = tarfile.TarInfo(f"sessions/{s // 1000:03d}/s{s:06d}.{ext}")
            info.size = len(data)
            info.mtime = 1764662400
            tar.addfile(info, io.BytesIO(data))
            size += len(data)
            s += 1
    print(f"{out}: {s} sessions, {size // 1_000_000} MB of logs")


if __name__ == "__main__":
    main()
