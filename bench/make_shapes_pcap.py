#!/usr/bin/env python3
"""Writes pcaps of MCP traffic in shapes other than examples/gen_pcap.rs, for
bench/run.sh (docs/performance.md). Pure Python, standard library only.

    python3 bench/make_shapes_pcap.py SHAPE OUT.pcap [megabytes]

SHAPE:
  keepalive  many short keep-alive connections: initialize, a tools/list of 10 tools
             with schemas, then tools/calls answered alternately by gzip-encoded JSON
             and by chunked SSE (one event per chunk, progress events first);
             1460-byte segments, the receiver ACKs every second segment
  flows      half-open flows: a SYN and the first bytes of a request, never answered
             or closed (megabytes is ignored: 200,000 flows, or FLOWS=n)
  large      keep-alive connections whose tools/call results are 1 MB of source text
             (escapes every few bytes)
  legacy     one long session on the HTTP+SSE transport of 2024-11-05: a GET stream
             open for the whole capture carries every response, each call POSTed on
             a keep-alive connection and answered 202; two log notifications ride the
             stream before each response (megabytes is ignored: CALLS=n, 20,000;
             SESSIONS=n such sessions one after another, 1; or CONCURRENT=n
             sessions at once, their calls taking turns)
  standalone CONCURRENT=n Streamable HTTP sessions at once (200), each with its
             standalone GET stream open for the whole capture, where the server
             logs two notifications per call; each call is answered by JSON on its
             POST (megabytes is ignored: CALLS=n per session, 1,000); RESUMED=1:
             each GET resumes the session's earlier stream (`Last-Event-ID`, as a
             client reconnects after a proxy cut it), and every event has an id;
             H2=1: each session is one HTTP/2 connection (h2c with prior knowledge),
             its GET stream and its POSTs multiplexed there
"""
import gzip
import json
import os
import struct
import sys

MSS = 1460
SRV = bytes([10, 0, 0, 1])
CLI = bytes([10, 0, 0, 2])


def ip_checksum(h):
    s = sum(struct.unpack("!10H", h))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


class Pcap:
    def __init__(self, path):
        self.f = open(path, "wb")
        self.f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        self.ts = 1_796_000_000 * 1_000_000
        self.size = 24

    def packet(self, src, dst, sport, dport, seq, ack, flags, payload=b""):
        self.ts += 37
        tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                          5 << 4, flags, 65535, 0, 0)
        total = 20 + len(tcp) + len(payload)
        iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0x4000, 64, 6, 0, src, dst)
        iph = iph[:10] + struct.pack("!H", ip_checksum(iph)) + iph[12:]
        frame = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + iph + tcp + payload
        self.f.write(struct.pack("<IIII", self.ts // 1_000_000, self.ts % 1_000_000, len(frame), len(frame)))
        self.f.write(frame)
        self.size += 16 + len(frame)


SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01


class Conn:
    def __init__(self, pcap, port, n):
        self.p, self.port = pcap, port
        self.cseq, self.sseq = (n * 2654435761) & 0xFFFFFFFF, (n * 40503 + 5000) & 0xFFFFFFFF
        p = self.p
        p.packet(CLI, SRV, port, 8000, self.cseq, 0, SYN)
        self.cseq += 1
        p.packet(SRV, CLI, 8000, port, self.sseq, self.cseq, SYN | ACK)
        self.sseq += 1
        p.packet(CLI, SRV, port, 8000, self.cseq, self.sseq, ACK)

    def send(self, client, data):
        """Data in MSS segments; the other side ACKs every second one and the last."""
        p = self.p
        src, dst, sport, dport = (CLI, SRV, self.port, 8000) if client else (SRV, CLI, 8000, self.port)
        n = 0
        for off in range(0, len(data), MSS):
            seg = data[off:off + MSS]
            seq, ack = (self.cseq, self.sseq) if client else (self.sseq, self.cseq)
            p.packet(src, dst, sport, dport, seq, ack, ACK | PSH, seg)
            if client:
                self.cseq += len(seg)
            else:
                self.sseq += len(seg)
            n += 1
            if n % 2 == 0 or off + MSS >= len(data):
                seq, ack = (self.sseq, self.cseq) if client else (self.cseq, self.sseq)
                p.packet(dst, src, dport, sport, seq, ack, ACK)

    def close(self):
        p = self.p
        p.packet(CLI, SRV, self.port, 8000, self.cseq, self.sseq, FIN | ACK)
        self.cseq += 1
        p.packet(SRV, CLI, 8000, self.port, self.sseq, self.cseq, FIN | ACK)
        self.sseq += 1
        p.packet(CLI, SRV, self.port, 8000, self.cseq, self.sseq, ACK)


def request(body, session=None):
    b = json.dumps(body).encode()
    h = ("POST /mcp HTTP/1.1\r\nHost: 10.0.0.1:8000\r\nContent-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\n")
    if session:
        h += f"Mcp-Session-Id: {session}\r\n"
    return (h + f"Content-Length: {len(b)}\r\n\r\n").encode() + b


def json_response(body, session=None, gz=False):
    b = json.dumps(body).encode()
    h = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    if session:
        h += f"Mcp-Session-Id: {session}\r\n"
    if gz:
        b = gzip.compress(b, compresslevel=6, mtime=0)
        h += "Content-Encoding: gzip\r\n"
    return (h + f"Content-Length: {len(b)}\r\n\r\n").encode() + b


def sse_chunked(events):
    out = [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"]
    for e in events:
        ev = f"event: message\ndata: {json.dumps(e)}\n\n".encode()
        out.append(b"%x\r\n" % len(ev) + ev + b"\r\n")
    out.append(b"0\r\n\r\n")
    return b"".join(out)


TOOLS = [{"name": f"tool_{k}", "description": f"Does thing number {k} to a document in the workspace.",
          "inputSchema": {"type": "object",
                          "properties": {"path": {"type": "string", "description": "A workspace path"},
                                         "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
                                         "mode": {"type": "string", "enum": ["fast", "full", "dry-run"]}},
                          "required": ["path"]}} for k in range(10)]
TEXT = "line of tool output with some words in it; " * 30
# A large result as a file-reading tool returns one: source text whose newlines,
# tabs and quotes are escaped in the JSON every few bytes (1 MB of one letter would
# leave the string scanners nothing to stop at).
SOURCE = ('def handle(event):\n\t"""Reads the "payload" of an event."""\n'
          '\treturn {"status": 200, "body": event["body"], "note": "caf\u00e9"}\n\n')
LARGE_TEXT = (SOURCE * (1_000_000 // len(SOURCE) + 1))[:1_000_000]


def session_start(c, sid, rid):
    c.send(True, request({"jsonrpc": "2.0", "id": rid, "method": "initialize",
                          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "bench", "version": "1"}}}))
    c.send(False, json_response({"jsonrpc": "2.0", "id": rid, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": True}},
        "serverInfo": {"name": "bench-server", "version": "1.0"}}}, session=sid))
    c.send(True, request({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid))
    c.send(False, b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
    c.send(True, request({"jsonrpc": "2.0", "id": rid + 1, "method": "tools/list"}, sid))
    c.send(False, json_response({"jsonrpc": "2.0", "id": rid + 1, "result": {"tools": TOOLS}}, sid))


def keepalive(pcap, target, calls_per_conn=6, result_text=TEXT, large=False):
    conn = 0
    while pcap.size < target:
        conn += 1
        c = Conn(pcap, 40000 + conn % 25000, conn)
        sid = f"sess-{conn:08x}"
        session_start(c, sid, 1)
        for k in range(calls_per_conn):
            rid = 10 + k
            c.send(True, request({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                  "params": {"name": f"tool_{k % 10}", "arguments": {"path": f"d/{conn}/{k}"},
                                             "_meta": {"progressToken": f"p{rid}"}}}, sid))
            result = {"jsonrpc": "2.0", "id": rid,
                      "result": {"content": [{"type": "text", "text": f"{conn}.{k} {result_text}"}]}}
            if large or k % 2 == 0:
                c.send(False, json_response(result, sid, gz=not large))
            else:
                progress = [{"jsonrpc": "2.0", "method": "notifications/progress",
                             "params": {"progressToken": f"p{rid}", "progress": n, "total": 3}} for n in (1, 2)]
                c.send(False, sse_chunked(progress + [result]))
        c.close()
    return conn


def flows(pcap, n):
    for i in range(n):
        port = 40000 + i % 25000
        src = bytes([10, 1 + i // 25000, (i >> 8) & 0xFF, i & 0xFF])
        seq = 7 + i * 2654435761
        pcap.packet(src, SRV, port, 8000, seq, 0, SYN)
        pcap.packet(src, SRV, port, 8000, seq + 1, 0, ACK | PSH, b"POST /mcp HTTP/1.1\r\nHost: 10.0.0.1\r\n")
    return n


def legacy(pcap, calls, n=0):
    """A session on the legacy transport: responses on the GET stream, in chunks."""
    for _ in legacy_steps(pcap, calls, n):
        pass
    return 2


def legacy_steps(pcap, calls, n):
    """`legacy`, one call at a time: sessions that run at once interleave these."""
    sid = f"5f1d0c7a9e2b4c68a1d3e5f7{n:07x}"
    stream = Conn(pcap, 30000 + 2 * (n % 5000), 2 * n + 1)
    posts = Conn(pcap, 30001 + 2 * (n % 5000), 2 * n + 2)
    stream.send(True, b"GET /sse HTTP/1.1\r\nHost: 10.0.0.1:8000\r\nAccept: text/event-stream\r\n\r\n")
    stream.send(False, b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                       b"Transfer-Encoding: chunked\r\n\r\n")

    def event(name, data):
        ev = f"event: {name}\ndata: {data}\n\n".encode()
        stream.send(False, b"%x\r\n" % len(ev) + ev + b"\r\n")

    def post(body):
        b = json.dumps(body).encode()
        posts.send(True, (f"POST /messages/?session_id={sid} HTTP/1.1\r\nHost: 10.0.0.1:8000\r\n"
                          f"Content-Type: application/json\r\nContent-Length: {len(b)}\r\n\r\n").encode() + b)
        posts.send(False, b"HTTP/1.1 202 Accepted\r\nContent-Length: 8\r\n\r\nAccepted")

    event("endpoint", f"/messages/?session_id={sid}")
    post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
          "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                     "clientInfo": {"name": "bench", "version": "1"}}})
    event("message", json.dumps({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2024-11-05", "capabilities": {"tools": {}, "logging": {}},
        "serverInfo": {"name": "bench-server", "version": "1.0"}}}))
    post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for rid in range(1, calls + 1):
        post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
              "params": {"name": f"tool_{rid % 10}", "arguments": {"path": f"d/{rid}"}}})
        for step in ("started", "done"):
            event("message", json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                                         "params": {"level": "info", "data": f"call {rid} {step}"}}))
        event("message", json.dumps({"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": f"{rid} {TEXT[:200]}"}]}}))
        yield
    stream.send(False, b"0\r\n\r\n")
    posts.close()
    stream.close()


def standalone_steps(pcap, calls, n):
    """A Streamable HTTP session that opened its standalone GET stream (MCP 2025-03-26
    and later): the server logs each call there, two notifications per call, while the
    call's response comes on its POST. One call at a time; sessions run at once."""
    sid = f"sess-{n:08x}"
    posts = Conn(pcap, 20000 + 2 * (n % 5000), 3 * n + 1)
    session_start(posts, sid, 1)
    stream = Conn(pcap, 20001 + 2 * (n % 5000), 3 * n + 2)
    resumed = os.environ.get("RESUMED") == "1"
    resume = f"Last-Event-ID: {sid}-0\r\n" if resumed else ""
    stream.send(True, (f"GET /mcp HTTP/1.1\r\nHost: 10.0.0.1:8000\r\nAccept: text/event-stream\r\n"
                       f"Mcp-Session-Id: {sid}\r\n{resume}\r\n").encode())
    stream.send(False, b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                       b"Transfer-Encoding: chunked\r\n\r\n")
    for k in range(calls):
        rid = 10 + k
        posts.send(True, request({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                  "params": {"name": f"tool_{k % 10}", "arguments": {"path": f"d/{n}/{k}"}}}, sid))
        for step in ("started", "done"):
            ev = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                             "params": {"level": "info", "logger": "tools",
                                        "data": f"call {rid} {step} {TEXT[:100]}"}})
            eid = f"id: {sid}-{2 * k + (step == 'done') + 1}\n" if resumed else ""
            ev = f"{eid}event: message\ndata: {ev}\n\n".encode()
            stream.send(False, b"%x\r\n" % len(ev) + ev + b"\r\n")
        posts.send(False, json_response({"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": f"{n}.{k} {TEXT[:300]}"}]}}, sid))
        yield
    stream.send(False, b"0\r\n\r\n")
    stream.close()
    posts.close()


def h2_frame(kind, flags, stream, payload):
    return struct.pack("!I", len(payload))[1:] + bytes([kind, flags]) + struct.pack("!I", stream) + payload


def hpack_literal(index, value):
    """A header field without indexing, its name from the static table (RFC 7541
    §6.2.2), its value a plain string (values here are shorter than 127 bytes)."""
    head = bytes([index]) if index < 15 else bytes([0x0F, index - 15])
    return head + bytes([len(value)]) + value.encode()


def hpack_new(name, value):
    return b"\x00" + bytes([len(name)]) + name.encode() + bytes([len(value)]) + value.encode()


def h2_request(stream, method, sid, body=None):
    """HEADERS (and DATA) of a request: `:method` GET (2) or POST (3), `:scheme http`
    (6), `:path` (4) and `:authority` (1) literal, the session, the content type."""
    block = bytes([0x82 if method == "GET" else 0x83, 0x86])
    block += hpack_literal(4, "/mcp") + hpack_literal(1, "10.0.0.1:8000")
    if sid:
        block += hpack_new("mcp-session-id", sid)
    if body is None:
        return h2_frame(1, 0x5, stream, block)
    block += hpack_literal(31, "application/json")
    data = json.dumps(body).encode()
    return h2_frame(1, 0x4, stream, block) + h2_frame(0, 0x1, stream, data)


def h2_response(stream, content_type, sid=None, body=None):
    """`:status 200` (8) and its content type; a JSON body ends the stream."""
    block = b"\x88" + hpack_literal(31, content_type)
    if sid:
        block += hpack_new("mcp-session-id", sid)
    if body is None:
        return h2_frame(1, 0x4, stream, block)
    return h2_frame(1, 0x4, stream, block) + h2_frame(0, 0x1, stream, json.dumps(body).encode())


def h2_standalone_steps(pcap, calls, n):
    """`standalone_steps` over one HTTP/2 connection per session: `initialize` on
    stream 1, the standalone GET stream on stream 3, then each call on the next odd
    stream, its two log notifications DATA frames of stream 3."""
    sid = f"sess-{n:08x}"
    c = Conn(pcap, 20000 + (n % 10000), 3 * n + 1)
    c.send(True, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(4, 0, 0, b"") + h2_request(1, "POST", None, {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}}))
    c.send(False, h2_frame(4, 0, 0, b"") + h2_response(1, "application/json", sid, {
        "jsonrpc": "2.0", "id": 1, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "bench-server", "version": "1.0"}}}))
    c.send(True, h2_request(3, "GET", sid))
    c.send(False, h2_response(3, "text/event-stream"))
    for k in range(calls):
        rid, stream = 10 + k, 5 + 2 * k
        c.send(True, h2_request(stream, "POST", sid, {
            "jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": f"tool_{k % 10}", "arguments": {"path": f"d/{n}/{k}"}}}))
        notes = b""
        for step in ("started", "done"):
            ev = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                             "params": {"level": "info", "logger": "tools",
                                        "data": f"call {rid} {step} {TEXT[:100]}"}})
            notes += h2_frame(0, 0, 3, f"event: message\ndata: {ev}\n\n".encode())
        c.send(False, notes + h2_response(stream, "application/json", None, {
            "jsonrpc": "2.0", "id": rid, "result": {
                "content": [{"type": "text", "text": f"{n}.{k} {TEXT[:300]}"}]}}))
        yield
    c.send(False, h2_frame(0, 0x1, 3, b""))
    c.close()


def main():
    shape, out = sys.argv[1], sys.argv[2]
    target = int(sys.argv[3]) * 1_000_000 if len(sys.argv) > 3 else 200_000_000
    p = Pcap(out)
    if shape == "keepalive":
        n = keepalive(p, target)
    elif shape == "large":
        n = keepalive(p, target, calls_per_conn=4, result_text=LARGE_TEXT, large=True)
    elif shape == "legacy" and "CONCURRENT" in os.environ:
        # Sessions that run at once (a server with many clients), their calls
        # taking turns.
        calls = int(os.environ.get("CALLS", "20000"))
        going = [legacy_steps(p, calls, k) for k in range(int(os.environ["CONCURRENT"]))]
        while going:
            going = [g for g in going if next(g, StopIteration) is not StopIteration]
        n = 2 * int(os.environ["CONCURRENT"])
    elif shape == "legacy":
        n = sum(legacy(p, int(os.environ.get("CALLS", "20000")), k)
                for k in range(int(os.environ.get("SESSIONS", "1"))))
    elif shape == "standalone":
        # Sessions that run at once, each with its standalone GET stream open.
        calls = int(os.environ.get("CALLS", "1000"))
        steps = h2_standalone_steps if os.environ.get("H2") == "1" else standalone_steps
        going = [steps(p, calls, k) for k in range(int(os.environ.get("CONCURRENT", "200")))]
        while going:
            going = [g for g in going if next(g, StopIteration) is not StopIteration]
        n = (1 if steps is h2_standalone_steps else 2) * int(os.environ.get("CONCURRENT", "200"))
    elif shape == "flows":
        n = flows(p, int(os.environ.get("FLOWS", "200000")))
    else:
        sys.exit(f"unknown shape {shape}")
    p.f.close()
    print(f"{out}: {n} connections, {p.size / 1e6:.0f} MB", file=sys.stderr)


main()
