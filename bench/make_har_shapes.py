#!/usr/bin/env python3
"""Writes HARs of other shapes than make_big_har.py's, for the HAR reader's speed
(docs/performance.md, issue #13):

    python3 bench/make_har_shapes.py chromium OUT.har [MB]   real Chromium entries
    python3 bench/make_har_shapes.py large OUT.har [MB]      a few entries of ~7 MB each

`chromium` repeats the entries of tests/fixtures/har/chromium/chromium-embed.har (a
DevTools export: many headers, timings, `_initiator` and other vendor fields), each
copy with its own session ids and later start times. `large` writes tool results of
~7 MB (under the 16 MiB record cap), as JSON escaped inside the HAR string.
"""
import datetime
import json
import sys


def chromium(out, target):
    src = json.load(open("tests/fixtures/har/chromium/chromium-embed.har"))
    entries = src["log"]["entries"]
    text = json.dumps(entries)
    sids = set()
    for e in entries:
        for h in e["request"]["headers"] + e["response"]["headers"]:
            if h["name"].lower() == "mcp-session-id":
                sids.add(h["value"])
    log = {k: v for k, v in src["log"].items() if k != "entries"}
    written = 0
    with open(out, "w") as f:
        head = json.dumps({"log": log})[:-2] + ',"entries":[\n'
        f.write(head)
        copy_no = 0
        while written < target:
            t = text
            for s in sids:
                t = t.replace(s, f"{s[:-6]}{copy_no:06d}")
            batch = json.loads(t)
            for e in batch:
                start = datetime.datetime.fromisoformat(e["startedDateTime"].replace("Z", "+00:00"))
                start += datetime.timedelta(minutes=copy_no)
                e["startedDateTime"] = start.isoformat().replace("+00:00", "Z")
                s = ("" if written == 0 else ",\n") + json.dumps(e, indent=2)
                f.write(s)
                written += len(s)
            copy_no += 1
        f.write("\n]}}\n")
    print(f"{out}: {copy_no} copies, {written / 1e6:.0f} MB", file=sys.stderr)


def large(out, target):
    t0 = datetime.datetime(2026, 12, 2, 10, 0, 0, tzinfo=datetime.timezone.utc)
    line = "lorem \"ipsum\" dolor\\sit amet\n"
    written = 0
    i = 0
    with open(out, "w") as f:
        f.write('{"log":{"version":"1.2","creator":{"name":"make_har_shapes.py","version":"1"},"entries":[\n')
        while written < target:
            i += 1
            result = {"content": [{"type": "text", "text": line * (7_000_000 // len(line))}], "isError": False}
            reply = json.dumps({"jsonrpc": "2.0", "id": i, "result": result})
            call = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "dump", "arguments": {}}}
            e = {"startedDateTime": (t0 + datetime.timedelta(seconds=i)).isoformat().replace("+00:00", "Z"),
                 "time": 50,
                 "request": {"method": "POST", "url": "http://127.0.0.1:8000/mcp", "httpVersion": "HTTP/1.1",
                             "headers": [{"name": "Content-Type", "value": "application/json"},
                                         {"name": "mcp-session-id", "value": "s1"}],
                             "postData": {"mimeType": "application/json", "text": json.dumps(call)}},
                 "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                              "headers": [{"name": "Content-Type", "value": "application/json"}],
                              "content": {"size": len(reply), "mimeType": "application/json", "text": reply}},
                 "timings": {"send": 1, "wait": 40, "receive": 9}}
            s = ("" if i == 1 else ",\n") + json.dumps(e)
            f.write(s)
            written += len(s)
        f.write("\n]}}\n")
    print(f"{out}: {i} entries, {written / 1e6:.0f} MB", file=sys.stderr)


if __name__ == "__main__":
    kind, out = sys.argv[1], sys.argv[2]
    mb = int(sys.argv[3]) if len(sys.argv) > 3 else 150
    {"chromium": chromium, "large": large}[kind](out, mb * 1_000_000)
