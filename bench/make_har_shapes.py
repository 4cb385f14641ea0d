#!/usr/bin/env python3
"""Writes HARs of other shapes than make_big_har.py's, for the HAR reader's speed
(docs/performance.md, issue #13):

    python3 bench/make_har_shapes.py chromium OUT.har [MB]   real Chromium entries
    python3 bench/make_har_shapes.py large OUT.har [MB]      a few entries of ~7 MB each
    python3 bench/make_har_shapes.py browser OUT.har [MB]    an MCP web client's page

`chromium` repeats the entries of tests/fixtures/har/chromium/chromium-embed.har (a
DevTools export: many headers, timings, `_initiator` and other vendor fields), each
copy with its own session ids and later start times. `large` writes tool results of
~7 MB (under the 16 MiB record cap), as JSON escaped inside the HAR string.
`browser` is what DevTools exports for a web page that talks MCP: the `tools/call`
POSTs of a session among the page's own requests, most of the bytes being the page's
images and fonts (base64, as browsers store binary content) and script bundles.
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


def browser(out, target):
    import base64
    import random
    rnd = random.Random(7)
    t0 = datetime.datetime(2026, 12, 2, 10, 0, 0, tzinfo=datetime.timezone.utc)
    # Incompressible bytes, as images and fonts are; a few of each, reused.
    images = [base64.b64encode(rnd.randbytes(n)).decode() for n in (40_000, 120_000, 300_000)]
    font = base64.b64encode(rnd.randbytes(60_000)).decode()
    bundle = "export function render(el,props){return el.append(props.title)}\n" * 6000
    html = "<!doctype html><html><head><title>Agent</title></head><body>" + "<div>x</div>" * 2000 + "</body></html>"
    json_type = [{"name": "Content-Type", "value": "application/json"}]

    def entry(i, method, url, req_headers, post, status, mime, text, encoding=None):
        content = {"size": len(text), "mimeType": mime, "text": text}
        if encoding:
            content["encoding"] = encoding
        e = {"startedDateTime": (t0 + datetime.timedelta(milliseconds=250 * i)).isoformat().replace("+00:00", "Z"),
             "time": 30,
             "request": {"method": method, "url": url, "httpVersion": "HTTP/2", "headers": req_headers,
                         "queryString": [], "cookies": [], "headersSize": -1, "bodySize": -1},
             "response": {"status": status, "statusText": "", "httpVersion": "HTTP/2",
                          "headers": [{"name": "content-type", "value": mime}], "cookies": [],
                          "content": content, "redirectURL": "", "headersSize": -1, "bodySize": -1},
             "cache": {}, "timings": {"send": 1, "wait": 20, "receive": 9}}
        if post is not None:
            e["request"]["postData"] = {"mimeType": "application/json", "text": post}
        return e

    written = i = calls = 0
    with open(out, "w") as f:
        f.write('{"log":{"version":"1.2","creator":{"name":"WebInspector","version":"537.36"},"pages":[],"entries":[\n')
        while written < target:
            k = i % 24
            sid = f"9f3c{i // 2400:012x}"
            if k == 0:
                e = entry(i, "GET", f"https://app.example/agent?v={i}", [], None, 200, "text/html", html)
            elif k in (1, 2):
                e = entry(i, "GET", f"https://app.example/assets/app{k}.js", [], None, 200,
                          "application/javascript", bundle)
            elif k in (3, 9, 15):
                e = entry(i, "GET", f"https://cdn.example/img/{i}.png", [], None, 200, "image/png",
                          images[k % 3], "base64")
            elif k == 4:
                e = entry(i, "GET", "https://cdn.example/font.woff2", [], None, 200, "font/woff2", font, "base64")
            else:
                calls += 1
                call = {"jsonrpc": "2.0", "id": calls, "method": "tools/call",
                        "params": {"name": "search", "arguments": {"q": f"term {calls}"}}}
                error = calls % 20 == 7
                reply = {"jsonrpc": "2.0", "id": calls, "result": {
                    "content": [{"type": "text", "text": "no match" if error else f"{calls % 9} matches"}],
                    "isError": error}}
                e = entry(i, "POST", "https://app.example/mcp",
                          json_type + [{"name": "mcp-session-id", "value": sid}],
                          json.dumps(call), 200, "application/json", json.dumps(reply))
            s = ("" if i == 0 else ",\n") + json.dumps(e)
            f.write(s)
            written += len(s)
            i += 1
        f.write("\n]}}\n")
    print(f"{out}: {i} entries, {calls} calls, {written / 1e6:.0f} MB", file=sys.stderr)


if __name__ == "__main__":
    kind, out = sys.argv[1], sys.argv[2]
    mb = int(sys.argv[3]) if len(sys.argv) > 3 else 150
    {"chromium": chromium, "large": large, "browser": browser}[kind](out, mb * 1_000_000)
