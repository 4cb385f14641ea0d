#!/usr/bin/env python3
"""Fault-injecting HTTP/1.1 reverse proxy for the mcpsift traffic lab (Python stdlib only).

    faultproxy.py --listen 127.0.0.1:18081 --upstream 127.0.0.1:18082 \
                  --plan faults.json --jsonl exchanges.jsonl [--public-base http://127.0.0.1:18080]

It sits between an MCP client (or mitmdump) and a real MCP server on loopback, forwards
every request, applies the fault rules of the plan to matching requests, and writes one
JSONL exchange record per HTTP exchange in the format mcpsift reads:

    {"ts", "request": {method, url, headers, body}, "response": {status, headers, body} | null,
     "end": "complete"|"closed"|"reset"|"capture_ended"|"truncated", "response_ts", "end_ts"}

Headers are written as a list of [name, value] pairs in the order they were sent. Response
bodies are the text the client received after removing transfer and content encodings; an
SSE response keeps its raw event-stream text.

Plan format: {"rules": [{"match": {...}, "action": {...}}, ...]}; the first rule whose match
fits wins. match keys (all optional): "http_method", "method" (JSON-RPC method),
"tool" (params.name of tools/call), "nth" (1-based: only the nth request matching the
other keys). Actions:
  {"type": "respond", "status": 503, "headers": [[k, v]], "body": "..."}  "{id}" in body -> request id
  {"type": "close"}   read the request, close the connection without any response
  {"type": "forward", "expire_session_first": bool, "set_id": X, "strip_result_type": bool,
   "content_not_array": bool, "cut_before_response": bool, "gzip": bool, "chunked": bool}
The transforms apply to the JSON-RPC response message (an object with "id" and "result" or
"error") in a JSON body or in an SSE event's data.
"""

import argparse
import asyncio
import datetime as dt
import gzip
import json
import signal
import sys
import zlib

HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
       "upgrade", "content-length"}


def now_iso():
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def log(*a):
    print("[faultproxy]", *a, file=sys.stderr, flush=True)


class Closed(Exception):
    pass


async def read_head(reader):
    try:
        data = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        raise Closed()
    lines = data.decode("latin-1").split("\r\n")
    start = lines[0]
    headers = []
    for ln in lines[1:]:
        if not ln:
            continue
        k, _, v = ln.partition(":")
        headers.append([k.strip(), v.strip()])
    return start, headers


def hget(headers, name, default=None):
    name = name.lower()
    for k, v in headers:
        if k.lower() == name:
            return v
    return default


async def read_chunked(reader, on_chunk=None):
    """Read a chunked body; returns (bytes, complete)."""
    out = bytearray()
    while True:
        try:
            line = await reader.readuntil(b"\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return bytes(out), False
        size = int(line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            try:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            return bytes(out), True
        try:
            chunk = await reader.readexactly(size)
            await reader.readexactly(2)
        except asyncio.IncompleteReadError as e:
            out += e.partial
            if on_chunk and e.partial:
                await on_chunk(e.partial)
            return bytes(out), False
        except ConnectionError:
            return bytes(out), False
        out += chunk
        if on_chunk:
            await on_chunk(chunk)


async def read_body(reader, headers, on_chunk=None, until_eof=False):
    if (hget(headers, "transfer-encoding") or "").lower().find("chunked") >= 0:
        return await read_chunked(reader, on_chunk)
    cl = hget(headers, "content-length")
    if cl is not None:
        n = int(cl)
        try:
            body = await reader.readexactly(n) if n else b""
        except asyncio.IncompleteReadError as e:
            if on_chunk and e.partial:
                await on_chunk(e.partial)
            return e.partial, False
        if on_chunk and body:
            await on_chunk(body)
        return body, True
    if not until_eof:
        return b"", True
    out = bytearray()
    while True:
        try:
            chunk = await reader.read(65536)
        except ConnectionError:
            return bytes(out), False
        if not chunk:
            return bytes(out), True
        out += chunk
        if on_chunk:
            await on_chunk(chunk)


def rpc_info(body_text):
    try:
        msg = json.loads(body_text)
    except Exception:
        return None
    if isinstance(msg, dict):
        tool = None
        if msg.get("method") == "tools/call" and isinstance(msg.get("params"), dict):
            tool = msg["params"].get("name")
        return {"method": msg.get("method"), "id": msg.get("id"), "has_id": "id" in msg, "tool": tool}
    return None


def is_response(msg):
    return isinstance(msg, dict) and "id" in msg and ("result" in msg or "error" in msg) and "method" not in msg


def transform_message(msg, action):
    """Apply the response transforms of a forward action to one JSON-RPC message (in place)."""
    if not is_response(msg):
        return False
    changed = False
    if "set_id" in action:
        msg["id"] = action["set_id"]
        changed = True
    res = msg.get("result")
    if isinstance(res, dict):
        if action.get("strip_result_type") and "resultType" in res:
            del res["resultType"]
            changed = True
        if action.get("content_not_array") and isinstance(res.get("content"), list) and res["content"]:
            res["content"] = res["content"][0]
            changed = True
    return changed


class Proxy:
    def __init__(self, args):
        self.up_host, up_port = args.upstream.rsplit(":", 1)
        self.up_port = int(up_port)
        self.public_base = args.public_base
        self.jsonl = args.jsonl
        plan = json.load(open(args.plan)) if args.plan else {}
        self.rules = plan.get("rules", [])
        self.counts = [0] * len(self.rules)
        self.records = []   # finished records
        self.open = {}      # id(record) -> record still in flight
        self.writers = set()

    # ---- records -------------------------------------------------------------------------
    def flush(self):
        recs = sorted(self.records, key=lambda r: r["ts"])
        with open(self.jsonl, "w") as f:
            for r in recs:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")

    def finish(self, rec, end):
        rec["end"] = end
        rec["end_ts"] = now_iso()
        self.open.pop(id(rec), None)
        self.records.append(rec)
        self.flush()

    def shutdown(self):
        for rec in list(self.open.values()):
            body = rec.pop("_body", None)
            if rec.get("response") is not None and body is not None:
                rec["response"]["body"] = body.decode("utf-8", "replace")
            rec.pop("_sse", None)
            self.finish(rec, "capture_ended")
        self.flush()

    # ---- rules ---------------------------------------------------------------------------
    def pick(self, http_method, info):
        for i, rule in enumerate(self.rules):
            m = rule.get("match", {})
            if "http_method" in m and m["http_method"] != http_method:
                continue
            if "method" in m and (not info or info["method"] != m["method"]):
                continue
            if "tool" in m and (not info or info["tool"] != m["tool"]):
                continue
            self.counts[i] += 1
            if "nth" in m and self.counts[i] != m["nth"]:
                continue
            return rule["action"]
        return {"type": "forward"}

    # ---- connection handling -------------------------------------------------------------
    async def handle(self, reader, writer):
        self.writers.add(writer)
        try:
            while True:
                try:
                    start, headers = await read_head(reader)
                except Closed:
                    return
                method, target, _ = start.split(" ", 2)
                body, _ok = await read_body(reader, headers)
                keep = await self.exchange(method, target, headers, body, writer, reader)
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self.writers.discard(writer)
            try:
                writer.close()
            except Exception:
                pass

    async def exchange(self, method, target, headers, body, cw, cr=None):
        body_text = body.decode("utf-8", "replace")
        host = hget(headers, "host", f"{self.up_host}:{self.up_port}")
        base = self.public_base or f"http://{host}"
        rec = {"ts": now_iso(),
               "request": {"method": method, "url": base + target, "headers": headers, "body": body_text},
               "response": None}
        self.open[id(rec)] = rec
        info = rpc_info(body_text) if body_text else None
        action = self.pick(method, info)
        if action["type"] != "forward" or len(action) > 1:
            log(method, target, (info or {}).get("method"), (info or {}).get("tool"), "->", action)
            rec["fault"] = action   # extra field: which fault the proxy injected (ground truth)

        if action["type"] == "close":
            self.finish(rec, "closed")
            cw.transport.abort() if hasattr(cw, "transport") else cw.close()
            return False

        if action["type"] == "respond":
            rbody = action.get("body", "")
            if "{id}" in rbody:
                rbody = rbody.replace("{id}", json.dumps(info["id"] if info else None))
            rheaders = [list(h) for h in action.get("headers", [])]
            await self.send_full(cw, rec, action["status"], rheaders, rbody.encode(), action)
            return True

        # forward --------------------------------------------------------------------------
        if action.get("expire_session_first"):
            sid = hget(headers, "mcp-session-id")
            if sid:
                await self.upstream_delete(target, headers, sid)
        try:
            ur, uw = await asyncio.open_connection(self.up_host, self.up_port)
        except OSError as e:
            log("upstream connect failed", e)
            self.finish(rec, "reset")
            return False
        up_headers = [[k, v] for k, v in headers if k.lower() not in HOP and k.lower() != "accept-encoding"]
        up_headers.append(["Content-Length", str(len(body))])
        up_headers.append(["Connection", "close"])
        head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in up_headers) + "\r\n"
        uw.write(head.encode("latin-1") + body)
        await uw.drain()
        try:
            try:
                status_line, rh = await read_head(ur)
            except Closed:
                self.finish(rec, "closed")
                cw.close()
                return False
            status = int(status_line.split(" ")[1])
            ctype = (hget(rh, "content-type") or "").lower()
            no_body = method == "HEAD" or status in (204, 304) or 100 <= status < 200
            if ctype.startswith("text/event-stream") and not no_body:
                return await self.stream_sse(ur, cw, rec, status, rh, action, cr)
            if no_body:
                ubody, complete = b"", True
            else:
                ubody, complete = await read_body(ur, rh, until_eof=True)
            if not complete:
                # upstream broke mid-body: pass the breakage on
                rec["response"] = {"status": status, "headers": rh, "body": ubody.decode("utf-8", "replace")}
                rec["response_ts"] = now_iso()
                self.finish(rec, "closed")
                cw.close()
                return False
            if ctype.startswith("application/json") and ubody:
                try:
                    msg = json.loads(ubody)
                    if transform_message(msg, action):
                        ubody = json.dumps(msg, separators=(",", ":")).encode()
                except ValueError:
                    pass
            rheaders = [[k, v] for k, v in rh if k.lower() not in HOP]
            await self.send_full(cw, rec, status, rheaders, ubody, action, no_body=no_body)
            return True
        finally:
            uw.close()

    async def upstream_delete(self, target, headers, sid):
        try:
            ur, uw = await asyncio.open_connection(self.up_host, self.up_port)
            hs = [["Host", hget(headers, "host", "127.0.0.1")], ["Mcp-Session-Id", sid]]
            pv = hget(headers, "mcp-protocol-version")
            if pv:
                hs.append(["MCP-Protocol-Version", pv])
            hs += [["Content-Length", "0"], ["Connection", "close"]]
            uw.write((f"DELETE {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hs) + "\r\n").encode())
            await uw.drain()
            st, rh = await read_head(ur)
            await read_body(ur, rh, until_eof=True)
            uw.close()
            log("expired session", sid, "upstream DELETE ->", st)
        except Exception as e:  # noqa: BLE001
            log("upstream DELETE failed", e)

    async def send_full(self, cw, rec, status, rheaders, body, action, no_body=False):
        reason = {200: "OK", 202: "Accepted", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
                  429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"}.get(status, "Status")
        decoded = body
        accept = (hget(rec["request"]["headers"], "accept-encoding") or "").lower()
        if action.get("gzip") and body and "gzip" in accept:
            body = gzip.compress(body, mtime=0)
            rheaders.append(["Content-Encoding", "gzip"])
        chunked = bool(action.get("chunked")) and not no_body
        if chunked:
            rheaders.append(["Transfer-Encoding", "chunked"])
        elif not no_body:
            rheaders.append(["Content-Length", str(len(body))])
        head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in rheaders) + "\r\n"
        rec["response"] = {"status": status, "headers": rheaders, "body": decoded.decode("utf-8", "replace")}
        rec["response_ts"] = now_iso()
        out = head.encode("latin-1")
        if chunked:
            # deliberately several chunks so the chunked framing is visible on the wire
            step = max(1, (len(body) + 2) // 3)
            for i in range(0, len(body), step):
                part = body[i:i + step]
                out += f"{len(part):x}\r\n".encode() + part + b"\r\n"
            out += b"0\r\n\r\n"
        else:
            out += body
        cw.write(out)
        await cw.drain()
        self.finish(rec, "complete")

    async def stream_sse(self, ur, cw, rec, status, rh, action, cr=None):
        rheaders = [[k, v] for k, v in rh if k.lower() not in HOP]
        rheaders.append(["Transfer-Encoding", "chunked"])
        use_gzip = bool(action.get("gzip")) and "gzip" in (hget(rec["request"]["headers"], "accept-encoding") or "").lower()
        comp = None
        if use_gzip:
            rheaders.append(["Content-Encoding", "gzip"])
            comp = zlib.compressobj(6, zlib.DEFLATED, 31)
        head = f"HTTP/1.1 {status} OK\r\n" + "".join(f"{k}: {v}\r\n" for k, v in rheaders) + "\r\n"
        cw.write(head.encode("latin-1"))
        await cw.drain()
        rec["response"] = {"status": status, "headers": rheaders, "body": ""}
        rec["response_ts"] = now_iso()
        sent = bytearray()
        rec["_body"] = sent
        buf = bytearray()
        cut = False

        async def emit(block: bytes):
            data = comp.compress(block) + comp.flush(zlib.Z_SYNC_FLUSH) if comp else block
            cw.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await cw.drain()
            sent.extend(block)

        async def on_chunk(chunk):
            nonlocal cut
            if cut:
                return
            buf.extend(chunk)
            while True:
                norm = bytes(buf).replace(b"\r\n", b"\n")
                idx = norm.find(b"\n\n")
                if idx < 0:
                    break
                block = norm[: idx + 2]
                del buf[:]
                buf.extend(norm[idx + 2:])
                data_lines = [ln[5:].lstrip(b" ") if ln.startswith(b"data:") else None
                              for ln in block.split(b"\n")]
                data = b"\n".join(d for d in data_lines if d is not None)
                msg = None
                if data.strip():
                    try:
                        msg = json.loads(data)
                    except ValueError:
                        msg = None
                if msg is not None and is_response(msg):
                    if action.get("cut_before_response"):
                        cut = True
                        raise Closed()
                    if transform_message(msg, action):
                        new = json.dumps(msg, separators=(",", ":")).encode()
                        lines = block.split(b"\n")
                        first = True
                        out_lines = []
                        for ln in lines:
                            if ln.startswith(b"data:"):
                                if first:
                                    out_lines.append(b"data: " + new)
                                    first = False
                                continue
                            out_lines.append(ln)
                        block = b"\n".join(out_lines)
                await emit(block)

        end = "complete"
        body_task = asyncio.ensure_future(read_body(ur, rh, on_chunk=on_chunk, until_eof=True))
        # watch the client side too: a client that closes its (GET) stream must end the record now
        watch = asyncio.ensure_future(cr.read(1)) if cr is not None else None
        try:
            done, _ = await asyncio.wait({t for t in (body_task, watch) if t}, return_when=asyncio.FIRST_COMPLETED)
            if body_task in done:
                _, complete = body_task.result()
                if not complete:
                    end = "closed"
            else:
                body_task.cancel()
                end = "closed"
                rec["closed_by"] = "client"
        except Closed:
            end = "closed"
        except (ConnectionError, OSError):
            end = "closed"   # the client went away (e.g. it closed its GET stream)
            rec["closed_by"] = "client"
        finally:
            if watch is not None:
                if not watch.done():
                    watch.cancel()
                try:
                    extra = await watch
                except (asyncio.CancelledError, ConnectionError, OSError):
                    extra = b""
                if extra and end == "complete":
                    cr._buffer[0:0] = extra   # a byte of the client's next request: give it back
        rec["response"]["body"] = bytes(sent).decode("utf-8", "replace")
        rec.pop("_body", None)
        if end == "complete":
            try:
                if comp:
                    tail = comp.flush()
                    cw.write(f"{len(tail):x}\r\n".encode() + tail + b"\r\n")
                cw.write(b"0\r\n\r\n")
                await cw.drain()
            except (ConnectionError, OSError):
                end = "closed"
        if cut:
            rec["cut_by_proxy"] = True
        self.finish(rec, end)
        if end != "complete":
            # close abruptly: no terminating chunk, so the client sees the stream break
            cw.transport.abort()
            return False
        return True


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", default="127.0.0.1:18081")
    ap.add_argument("--upstream", default="127.0.0.1:18082")
    ap.add_argument("--plan")
    ap.add_argument("--jsonl", required=True)
    ap.add_argument("--public-base")
    ap.add_argument("--lab-netns", action="store_true",
                    help="allow listening on 10.77.0.x: only inside the impaired_net_* scenarios' own namespace")
    args = ap.parse_args()
    proxy = Proxy(args)
    host, port = args.listen.rsplit(":", 1)
    assert host in ("127.0.0.1", "::1", "localhost") or (args.lab_netns and host.startswith("10.77.0.")), \
        "loopback only (or the lab's own namespace with --lab-netns)"
    server = await asyncio.start_server(proxy.handle, host, int(port), reuse_address=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    proxy.flush()
    log(f"listening on {args.listen} -> {args.upstream}, {len(proxy.rules)} rule(s)")
    await stop.wait()
    server.close()
    proxy.shutdown()
    log(f"wrote {len(proxy.records)} record(s) to {args.jsonl}")


if __name__ == "__main__":
    asyncio.run(main())
