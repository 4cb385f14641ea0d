#!/usr/bin/env python3
"""Writes the hostile inputs of issue 12's memory-budget table into DIR, to measure
peak RSS and time with `/usr/bin/time -v target/release/mcpsift analyze FILE`.

    python3 bench/hostile/make_hostile.py /tmp/hostile

Each file is small on disk (except the two 300 MB ones, which are the point) and
costs gigabytes to a reader that allocates before it applies its budgets.
"""

import base64
import gzip
import json
import os
import struct
import sys
import zlib

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {}}}


def jsonl_sse(path, body):
    rec = {"request": {"method": "POST", "url": "http://h/mcp",
                       "headers": {"content-type": "application/json"},
                       "body": json.dumps(CALL)},
           "response": {"status": 200,
                        "headers": {"content-type": "text/event-stream"},
                        "body": body}}
    with open(path, "w") as f:
        f.write(json.dumps(rec) + "\n")


class Pcap:
    """A classic pcap of Ethernet/IPv4/TCP frames (checksums left zero)."""

    def __init__(self, path):
        self.f = open(path, "wb")
        self.f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        self.t = 0

    def seg(self, src, dst, sport, dport, seq, flags, payload=b""):
        tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, 1,
                          5 << 4, flags, 65535, 0, 0)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0,
                         0, 64, 6, 0, bytes(src), bytes(dst))
        frame = b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x08\x00" + ip + tcp + payload
        self.t += 1
        self.f.write(struct.pack("<IIII", self.t // 1000, self.t % 1000, len(frame), len(frame)))
        self.f.write(frame)

    def stream(self, src, dst, sport, dport, seq, data):
        """`data` from `src` in segments of 1,400 bytes, the first at `seq`."""
        for piece in chunks(data, 1400):
            self.seg(src, dst, sport, dport, seq, ACK | PSH, piece)
            seq += len(piece)

    def close(self):
        self.f.close()


SYN, FIN, ACK, PSH = 0x02, 0x01, 0x10, 0x08
C, S = [10, 0, 0, 1], [10, 0, 0, 2]


def request():
    body = json.dumps(CALL).encode()
    return (b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


def pcap_stream(path, head, body_pieces, out_of_order=False):
    """One connection: a request, then `head` and the body pieces from the server."""
    p = Pcap(path)
    p.seg(C, S, 40000, 80, 999, SYN)
    p.seg(S, C, 80, 40000, 4999, SYN | ACK)
    req = request()
    p.seg(C, S, 40000, 80, 1000, ACK | PSH, req)
    seq = 5000
    p.seg(S, C, 80, 40000, seq, ACK | PSH, head)
    seq += len(head)
    pieces = list(body_pieces)
    offs = []
    for piece in pieces:
        offs.append(seq)
        seq += len(piece)
    order = list(range(len(pieces)))
    if out_of_order:
        # The first body segment comes last: everything waits behind it, then is
        # delivered (and decoded) in one go.
        order = order[1:] + order[:1]
    for i in order:
        p.seg(S, C, 80, 40000, offs[i], ACK | PSH, pieces[i])
    p.seg(S, C, 80, 40000, seq, FIN | ACK)
    p.seg(C, S, 40000, 80, 1000 + len(req), FIN | ACK)
    p.close()


def chunks(data, n):
    return [data[i:i + n] for i in range(0, len(data), n)]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/hostile"
    os.makedirs(out, exist_ok=True)

    # 1. SSE with long event ids: one 512 KiB id, then 60,000 tiny events.
    jsonl_sse(f"{out}/sse-long-ids.jsonl",
              "id: " + "i" * (512 << 10) + "\n" + "data: x\n\n" * 60000)

    # 2. SSE events that look like responses, 3M of them, on one captured stream.
    ev = b'data: {"result":1}\n\n'
    sse_head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
    pcap_stream(f"{out}/sse-3m-responses.pcap", sse_head, chunks(ev * 3_000_000, 60000))

    # 3. An out-of-order deflate bomb in a 1 MB pcap.
    bomb = zlib.compress(b"\0" * (1 << 30), 9)
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Encoding: deflate\r\nContent-Length: %d\r\n\r\n" % len(bomb))
    pcap_stream(f"{out}/deflate-bomb-ooo.pcap", head, chunks(bomb, 1400), out_of_order=True)

    def har(path, content, req_body=None):
        entry = {"startedDateTime": "2026-12-02T10:00:00.000Z", "time": 1,
                 "request": {"method": "POST", "url": "http://h/mcp", "headers": [],
                             "postData": {"mimeType": "application/json",
                                          "text": json.dumps(CALL)}},
                 "response": {"status": 200, "headers": [
                     {"name": "Content-Type", "value": "application/json"}],
                     "content": content}}
        with open(path, "w") as f:
            json.dump({"log": {"version": "1.2", "entries": [entry]}}, f)

    # 4. A HAR with a 300 MB base64 body.
    big = base64.b64encode(b"\0" * (225 << 20)).decode()
    har(f"{out}/har-300mb-base64.har",
        {"mimeType": "application/json", "encoding": "base64", "text": big})
    del big

    # 5. The HAR gzip bomb: 1 GiB of zeros, gzipped, base64'd.
    gz = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = gz.compress(b"\0" * (1 << 30)) + gz.flush()
    har(f"{out}/har-gzip-bomb.har",
        {"mimeType": "application/json", "encoding": "base64",
         "text": base64.b64encode(data).decode()})

    # 6. A JSON-array export with one 300 MB element.
    with open(f"{out}/array-300mb-element.json", "w") as f:
        f.write('[{"direction":"request","origin":"client","message":"')
        for _ in range(300):
            f.write("x" * (1 << 20))
        f.write('"}]')

    # 7. 200,000 half-open flows (a SYN each).
    p = Pcap(f"{out}/syn-flood-200k.pcap")
    for i in range(200_000):
        src = [10, 1 + (i >> 16), (i >> 8) & 255, i & 255]
        p.seg(src, S, 1024 + (i % 60000), 80, i * 7, SYN)
    p.close()

    # 8. 300 connections, each a response whose gzip body (15 KB) decodes to 15 MiB
    # and never ends: each body is within its own cap, together they are not.
    p = Pcap(f"{out}/gzip-bodies-in-flight.pcap")
    gz = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = gz.compress(b"\0" * (15 << 20)) + gz.flush()
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n")
    req = request()
    for i in range(300):
        port = 20000 + i
        p.seg(C, S, port, 80, 999, SYN)
        p.seg(S, C, 80, port, 4999, SYN | ACK)
        p.seg(C, S, port, 80, 1000, ACK | PSH, req)
        body = head + b"%x\r\n" % len(bomb) + bomb + b"\r\n"
        p.stream(S, C, 80, port, 5000, body)
    p.close()

    # 9. 200 connections each sending 16,000 one-byte segments with a hole before
    # each: none can be delivered or merged, so each waits as its own piece.
    p = Pcap(f"{out}/one-byte-pieces.pcap")
    for i in range(200):
        p.seg(C, S, 30000 + i, 80, 999, SYN)
    for k in range(16_000):
        for i in range(200):
            p.seg(C, S, 30000 + i, 80, 1002 + 2 * k, ACK | PSH, b"x")
    p.close()

    # 10. 1,000 connections, each an event stream of 10,000 events of one byte
    # (9 bytes each on the wire), never ended: what holding an event costs, not its
    # bytes, is what adds up.
    p = Pcap(f"{out}/tiny-events-in-flight.pcap")
    body = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
            + b"data: x\n\n" * 10_000)
    for i in range(1000):
        port = 40000 + i
        p.seg(C, S, port, 80, 999, SYN)
        p.seg(S, C, 80, port, 4999, SYN | ACK)
        p.seg(C, S, port, 80, 1000, ACK | PSH, req)
        p.stream(S, C, 80, port, 5000, body)
    p.close()

    # 11. 400 connections, each a tools/call whose arguments carry 1 MB, never
    # answered: each request is within its own cap, together they are not.
    p = Pcap(f"{out}/uploads-in-flight.pcap")
    upload = dict(CALL, params={"name": "upload", "arguments": {"data": "A" * 1_000_000}})
    body = json.dumps(upload).encode()
    req = (b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
           b"Content-Length: %d\r\n\r\n" % len(body)) + body
    for i in range(400):
        port = 50000 + i
        p.seg(C, S, port, 80, 999, SYN)
        p.stream(C, S, port, 80, 1000, req)
    p.close()

    # 12. 5,000 connections, each a request head of 68 KB that never ends (580
    # header lines): each within the head cap, together they are not.
    p = Pcap(f"{out}/partial-heads.pcap")
    head = b"POST /mcp HTTP/1.1\r\nHost: h\r\n" + b"".join(
        b"X-Pad-%d: %s\r\n" % (k, b"a" * 100) for k in range(580))
    for i in range(5000):
        port = 10000 + i
        src = [10, 1, (i >> 8) & 255, i & 255]
        p.seg(src, S, port, 80, 999, SYN)
        p.stream(src, S, port, 80, 1000, head)
    p.close()

    # 13. HPACK amplification over HTTP/2: per connection, stream 1 grows the
    # client's table to 64 KiB and adds a 65,000-byte header to it; 1,023 more
    # streams, never answered, each a block of 10 bytes naming it four times
    # (260 KB of decoded headers each, within the list cap). 381 KB on disk.
    def hint(v, bits, first):
        top = (1 << bits) - 1
        if v < top:
            return bytes([first | v])
        out = [first | top]
        v -= top
        while v >= 128:
            out.append(v % 128 + 128)
            v //= 128
        return bytes(out + [v])

    def frame(kind, flags, stream, payload):
        return (struct.pack("!I", len(payload))[1:] + bytes([kind, flags])
                + struct.pack("!I", stream) + payload)

    base = bytes([0x83, 0x86, 0x04]) + hint(4, 7, 0) + b"/mcp" + bytes([0x01]) + hint(4, 7, 0) + b"h:80"
    p = Pcap(f"{out}/hpack-amplifier.pcap")
    for c in range(4):
        port = 45000 + c
        p.seg(C, S, port, 80, 999, SYN)
        block = hint(65536, 5, 0x20) + base + b"\x40" + hint(3, 7, 0) + b"x-a" + hint(65000, 7, 0) + b"v" * 65000
        wire = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"")
        for k in range(0, len(block), 16384):
            piece = block[k:k + 16384]
            last = k + 16384 >= len(block)
            wire += frame(1 if k == 0 else 9, (0x4 if last else 0) | (0x1 if k == 0 else 0), 1, piece)
        for sid in range(3, 2048, 2):
            wire += frame(1, 0x5, sid, base + bytes([0xbe]) * 4)
        p.stream(C, S, port, 80, 1000, wire)
    p.close()

    # Partial HTTP/2 frames: 400 connections whose server allows 1 MiB frames, each
    # client sending a request and 900 KB of a 1,000,000-byte DATA frame, never ended.
    p = Pcap(f"{out}/h2-partial-frames.pcap")
    for c in range(400):
        port = 46000 + c
        p.seg(C, S, port, 80, 999, SYN)
        p.seg(S, C, 80, port, 4999, SYN | ACK)
        p.stream(S, C, 80, port, 5000, frame(4, 0, 0, bytes([0, 5, 0, 0x10, 0, 0])))
        wire = (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"")
                + frame(4, 1, 0, b"") + frame(1, 0x4, 1, base)
                + struct.pack("!I", 1_000_000)[1:] + bytes([0, 0]) + struct.pack("!I", 1)
                + b"x" * 900_000)
        p.stream(C, S, port, 80, 1000, wire)
    p.close()

    # Legacy HTTP+SSE in a log: 1,000,000 calls answered 202 whose session's GET
    # stream is never written (a log may write it after all its POSTs), gzipped.
    with gzip.open(f"{out}/legacy-202-unwritten.jsonl.gz", "wt") as f:
        for i in range(1_000_000):
            call = dict(CALL, id=i)
            f.write(json.dumps({
                "request": {"method": "POST", "url": "http://h/messages?sessionId=S",
                            "body": json.dumps(call)},
                "response": {"status": 202, "body": "Accepted"}}) + "\n")

    # Pipelined requests: 300 connections, each sending 1,000 requests of 1.2 KB
    # heads before any answer, none ever answered.
    p = Pcap(f"{out}/pipelined-heads.pcap")
    head = (b"GET /mcp HTTP/1.1\r\nHost: h\r\nX-Pad: " + b"p" * 1200 + b"\r\n\r\n") * 1000
    for c in range(300):
        port = 47000 + c
        p.seg(C, S, port, 80, 999, SYN)
        p.stream(C, S, port, 80, 1000, head)
    p.close()

    # Recorders' documents, read in one piece: dense ones (15,000,000 zeros of
    # arguments in one call, 30 MB) and one of many messages.
    zeros = ",".join(["0"] * 15_000_000)
    with open(f"{out}/recorder-dense.json", "w") as f:
        f.write('{"version":"1.0","metadata":{"recorded_at":"2026-12-03T10:53:57Z",'
                '"server_url":"http://127.0.0.1:1","transport_type":"http"},"interactions":['
                '{"type":"jsonrpc_request","request":{"jsonrpc":"2.0","id":1,"method":"tools/call",'
                '"params":{"name":"echo","arguments":{"x":[' + zeros + ']}}},'
                '"response":{"jsonrpc":"2.0","id":1,"result":{"content":[]}},'
                '"response_is_sse":false,"response_status":200,"latency_ms":1,'
                '"http_method":null,"http_path":null}]}')
    vcr_head = ('meta:\n  recorded_at: "2026-05-18T12:00:00Z"\n  session_id: abcdef12\n'
                '  version: 1\nmessages:\n')
    with open(f"{out}/vcr-dense.yaml", "w") as f:
        f.write(vcr_head + '- dir: c2s\n  payload:\n    id: 1\n    jsonrpc: "2.0"\n'
                '    method: tools/call\n    params:\n      name: echo\n      arguments:\n'
                '        x: [' + zeros + ']\n  t: 0\n')
    with open(f"{out}/vcr-many.yaml", "w") as f:
        f.write(vcr_head)
        for i in range(100_000):
            f.write('- dir: c2s\n  payload: {id: %d, jsonrpc: "2.0", method: tools/call, '
                    'params: {name: echo, arguments: {}}}\n  t: %d\n' % (i, i))
            f.write('- dir: s2c\n  payload: {id: %d, jsonrpc: "2.0", result: {content: []}}\n'
                    '  t: %d\n' % (i, i))


if __name__ == "__main__":
    main()
