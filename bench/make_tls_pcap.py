#!/usr/bin/env python3
"""Makes a TLS capture for the throughput figure of docs/performance.md, and the same traffic in
plaintext for comparison: an HTTPS server (Python's http.server behind ssl, self-signed certificate
made here) answers MCP `tools/call` POSTs with ~4 KiB JSON results on keep-alive connections; the
client (http.client, same process) writes a key log; tcpdump records loopback.

    sudo python3 bench/make_tls_pcap.py OUT_DIR [CALLS] [--tls1.2]
    # OUT_DIR/tls.pcap + OUT_DIR/keys.txt, OUT_DIR/plain.pcap
    mcpsift analyze OUT_DIR/tls.pcap --tls-keylog OUT_DIR/keys.txt --format jsonl >/dev/null

Only 127.0.0.1 is used (ports 18444 and 18445).
"""
import http.client
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
import time

RESULT = "x" * 4000


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body are two writes: without this, Nagle and delayed ACKs add 40 ms per call.
    disable_nagle_algorithm = True

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        out = json.dumps({"jsonrpc": "2.0", "id": body["id"],
                          "result": {"content": [{"type": "text", "text": RESULT}], "isError": False}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


def serve(port, ctx):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    if ctx:
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def run(port, calls, ctx, pcap):
    dump = subprocess.Popen(["tcpdump", "-i", "lo", "-U", "-w", pcap, f"tcp port {port}"],
                            stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    per_conn = 1000
    n = 0
    while n < calls:
        conn = (http.client.HTTPSConnection("127.0.0.1", port, context=ctx) if ctx
                else http.client.HTTPConnection("127.0.0.1", port))
        for _ in range(min(per_conn, calls - n)):
            n += 1
            req = json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                              "params": {"name": "read_note", "arguments": {"n": n}}})
            conn.request("POST", "/mcp", req, {"Content-Type": "application/json",
                                               "Accept": "application/json, text/event-stream"})
            conn.getresponse().read()
        conn.close()
    time.sleep(1.0)
    dump.terminate()
    dump.wait()


def main():
    out = sys.argv[1]
    calls = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 10000
    os.makedirs(out, exist_ok=True)
    cert, key = os.path.join(out, "cert.pem"), os.path.join(out, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(cert, key)
    if "--tls1.2" in sys.argv:
        sctx.maximum_version = ssl.TLSVersion.TLSv1_2
    cctx = ssl.create_default_context(cafile=cert)
    cctx.keylog_filename = os.path.join(out, "keys.txt")
    serve(18444, sctx)
    serve(18445, None)
    run(18444, calls, cctx, os.path.join(out, "tls.pcap"))
    run(18445, calls, None, os.path.join(out, "plain.pcap"))


if __name__ == "__main__":
    main()
