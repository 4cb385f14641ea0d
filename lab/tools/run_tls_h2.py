"""HTTP/2 inside TLS: curl (SSLKEYLOGFILE) posts one
MCP tools/call over HTTPS with ALPN h2 to a Node http2 server on 127.0.0.1:18446 that answers with a
JSON-RPC result; tcpdump records loopback. Writes lab/tls/h2_curl/{capture.pcap,keys.txt,expected.json};
expected.json records what tshark decrypts (HTTP/2 with the key log, nothing without).

    sudo python3 lab/tools/run_tls_h2.py
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_lab as lab  # noqa: E402
import run_tls  # noqa: E402

PORT = 18446
SERVER = r"""
const http2 = require('node:http2');
const fs = require('node:fs');
const [cert, key, port] = process.argv.slice(1);
const srv = http2.createSecureServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    const id = JSON.parse(body).id;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'note 1' }], isError: false } }));
  });
});
srv.listen(Number(port), '127.0.0.1', () => console.log('listening'));
"""


def main():
    name = "h2_curl"
    out = os.path.join(run_tls.TLS_DIR, name)
    work = os.path.join(lab.WORK, "tls-" + name)
    for d in (out, work):
        os.makedirs(d, exist_ok=True)
    for f in ("capture.pcap", "keys.txt"):
        if os.path.exists(os.path.join(out, f)):
            os.remove(os.path.join(out, f))
    cert, key = run_tls.make_cert(work)
    keylog = os.path.join(out, "keys.txt")
    logf = os.path.join(work, "processes.log")
    lab.wait_free(PORT)
    srv = lab.start(["node", "-e", SERVER, cert, key, str(PORT)], "h2-server", logf)
    lab.wait_port(PORT)
    tlog = os.path.join(work, "tcpdump.log")
    pcap = os.path.join(out, "capture.pcap")
    tcpd = lab.start(["tcpdump", "-i", "lo", "-U", "-w", pcap, f"tcp port {PORT}"], "tcpdump", tlog)
    lab.wait_text(tlog, "listening on")
    time.sleep(0.5)
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "read_note", "arguments": {}}}
    env = dict(os.environ, SSLKEYLOGFILE=keylog)
    subprocess.run(["curl", "-sS", "--http2", "--cacert", cert, "-H", "content-type: application/json",
                    "-H", "accept: application/json, text/event-stream", "--data", json.dumps(call),
                    f"https://127.0.0.1:{PORT}/mcp"], env=env, check=True, capture_output=True)
    time.sleep(0.5)
    lab.stop(srv)
    lab.stop(tcpd, __import__("signal").SIGINT)
    key_opt = ["-o", f"tls.keylog_file:{keylog}"]
    alpn = run_tls.tshark(pcap, "-Y", "tls.handshake.type == 8", "-T", "fields",
                          "-e", "tls.handshake.extensions_alpn_str", *key_opt).split()
    h2 = run_tls.tshark(pcap, "-Y", "http2.header", "-T", "fields", "-e", "frame.number", *key_opt).split()
    without = run_tls.tshark(pcap, "-Y", "http2", "-T", "fields", "-e", "frame.number").split()
    expected = {
        "scenario": name,
        "description": "curl --http2 (SSLKEYLOGFILE) posts one tools/call to a Node http2 server over TLS 1.3 "
                       "with ALPN h2: decrypted, the HTTP/2 inside must read as one TOOL_SUCCESS call (id 7).",
        "tls": {"alpn": alpn[0] if alpn else None},
        "tshark": {"http2_header_frames": [int(x) for x in h2], "http2_frames_without_keylog": len(without)},
    }
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
    if not h2 or without or expected["tls"]["alpn"] != "h2":
        sys.exit(f"not verified: {expected}")


if __name__ == "__main__":
    try:
        main()
    finally:
        lab.cleanup()
