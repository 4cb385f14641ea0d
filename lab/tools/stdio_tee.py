#!/usr/bin/env python3
"""stdio tee for MCP: run a server command, pass stdin/stdout through unchanged, and record every
line as {"ts", "dir": "c2s"|"s2c", "msg": <JSON-RPC message>} (or "raw" for a line that is not JSON).

    stdio_tee.py --out transcript.jsonl -- <server command...>
"""
import datetime as dt
import json
import signal
import subprocess
import sys
import threading

args = sys.argv[1:]
out_path = args[args.index("--out") + 1]
cmd = args[args.index("--") + 1:]
lock = threading.Lock()
out = open(out_path, "w", buffering=1)


def record(direction, line):
    ts = dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    text = line.decode("utf-8", "replace").rstrip("\r\n")
    if not text:
        return
    try:
        rec = {"ts": ts, "dir": direction, "msg": json.loads(text)}
    except ValueError:
        rec = {"ts": ts, "dir": direction, "raw": text}
    with lock:
        out.write(json.dumps(rec, ensure_ascii=False) + "\n")


proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
signal.signal(signal.SIGTERM, lambda *_: proc.terminate())


def c2s():
    for line in iter(sys.stdin.buffer.readline, b""):
        record("c2s", line)
        try:
            proc.stdin.write(line)
            proc.stdin.flush()
        except BrokenPipeError:
            break
    try:
        proc.stdin.close()
    except OSError:
        pass


threading.Thread(target=c2s, daemon=True).start()
for line in iter(proc.stdout.readline, b""):
    record("s2c", line)
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
sys.exit(proc.wait())
