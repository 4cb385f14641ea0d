"""The lab's TLS runs: some of the lab's scenarios again, over HTTPS, with the client writing a TLS key log.

    client (TS/Py SDK) ──HTTPS──► tls_front.py :18443 ──► faultproxy.py :18081 ──► server :18082
          ▲ tcpdump -i lo 'tcp port 18443' → capture.pcap     (key log: keys.txt, written by the client)
          editcap --inject-secrets tls,keys.txt → capture-dsb.pcapng

The certificate is self-signed, made here with openssl for 127.0.0.1, and trusted by the client only
(Node: NODE_EXTRA_CA_CERTS; Python: SSL_CERT_FILE). The TS client writes its key log with
`node --tls-keylog=FILE`, the Python client through SSLKEYLOGFILE (httpx2 builds its context with
ssl.create_default_context, which honours it). The server side caps the version (TLS 1.2 runs) and
chooses TLS 1.2 suites; the TS client's `--tls-cipher-list` chooses the TLS 1.3 suite.

Each run's expected.json takes its calls and findings from the plaintext scenario's expected.json
(the verdicts of a decrypted run must be the plaintext run's) and records what tshark sees, checked
here: with the key log, the HTTP requests and responses and the tools/call ids and tools, which must
match the plaintext scenario's calls; without it, no HTTP at all.

    sudo LAB_SKIP_INSTALL=1 lab/.venv-mcp/bin/python lab/tools/run_tls.py [NAME ...]
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_lab as lab  # noqa: E402
from scenarios import SCENARIOS  # noqa: E402

TLS_DIR = os.path.join(lab.LAB, "tls")
FRONT_PORT = 18443

# name -> (plaintext scenario, max TLS version, server's TLS 1.2 cipher list, TS client's TLS 1.3 suite)
RUNS = {
    "tls13_baseline_ts_json": ("baseline_ts_json", "1.3", None, None),
    "tls13_aes128_http_503_then_200_ts": ("http_503_then_200_ts", "1.3", None, "TLS_AES_128_GCM_SHA256"),
    "tls13_chacha_sse_cut_ts": ("sse_cut_ts", "1.3", None, "TLS_CHACHA20_POLY1305_SHA256"),
    "tls12_http_503_then_200_py": ("http_503_then_200_py", "1.2", "ECDHE-ECDSA-AES256-GCM-SHA384", None),
    "tls12_chacha_baseline_py_sse": ("baseline_py_sse", "1.2", "ECDHE-ECDSA-CHACHA20-POLY1305", None),
}


def make_cert(work):
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def run(name):
    plain, max_version, ciphers, ts_suite = RUNS[name]
    sc = SCENARIOS[plain]
    out = os.path.join(TLS_DIR, name)
    work = os.path.join(lab.WORK, "tls-" + name)
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(out)
    os.makedirs(work)
    cert, key = make_cert(work)
    keylog = os.path.join(out, "keys.txt")
    spec = sc["server"]
    for port in (FRONT_PORT, lab.PROXY_PORT, lab.SERVER_PORT):
        lab.wait_free(port)
    logf = os.path.join(work, "processes.log")
    srv = lab.start(lab.server_cmd(spec), "server", logf)
    lab.wait_port(lab.SERVER_PORT)
    plan_path = os.path.join(work, "faults.json")
    json.dump({"rules": sc["rules"]}, open(plan_path, "w"), indent=1)
    proxy = lab.start([sys.executable, "tools/faultproxy.py", "--listen", f"{lab.HOST}:{lab.PROXY_PORT}",
                       "--upstream", f"{lab.HOST}:{lab.SERVER_PORT}", "--plan", plan_path,
                       "--jsonl", os.path.join(work, "exchanges.jsonl")], "faultproxy", logf)
    lab.wait_port(lab.PROXY_PORT)
    front_cmd = [sys.executable, "tools/tls_front.py", "--listen", f"{lab.HOST}:{FRONT_PORT}",
                 "--upstream", f"{lab.HOST}:{lab.PROXY_PORT}", "--cert", cert, "--key", key,
                 "--max-version", max_version]
    if ciphers:
        front_cmd += ["--ciphers", ciphers]
    front = lab.start(front_cmd, "tls_front", logf)
    lab.wait_port(FRONT_PORT)
    tlog = os.path.join(work, "tcpdump.log")
    tcpd = lab.start(["tcpdump", "-i", "lo", "-U", "-w", os.path.join(out, "capture.pcap"),
                      f"tcp port {FRONT_PORT}"], "tcpdump", tlog)
    lab.wait_text(tlog, "listening on")
    time.sleep(0.5)
    path = "/sse" if spec[1] == "legacy-sse" else "/mcp"
    plan = {"transport": spec[1], "url": f"https://{lab.HOST}:{FRONT_PORT}{path}", "steps": sc["steps"],
            "observe": os.path.join(work, "client_observed.json")}
    if sc.get("client_mode"):
        plan["mode"] = sc["client_mode"]
    plan_file = os.path.join(work, "client_plan.json")
    json.dump(plan, open(plan_file, "w"), indent=1)
    env = dict(os.environ)
    if sc["client"] == "ts":
        env["NODE_EXTRA_CA_CERTS"] = cert
        cmd = ["node", f"--tls-keylog={keylog}"]
        if ts_suite:
            cmd.append(f"--tls-cipher-list={ts_suite}")
        cmd += ["peers/ts_client.mjs", plan_file]
    else:
        env["SSL_CERT_FILE"] = cert
        env["SSLKEYLOGFILE"] = keylog
        cmd = [lab.PY, "peers/py_client.py", plan_file]
    c = lab.start(cmd, "client", os.path.join(work, "client.log"), env=env)
    try:
        c.wait(90)
    except subprocess.TimeoutExpired:
        lab.log("client timed out")
    lab.stop(c)
    time.sleep(0.5)
    lab.stop(front)
    lab.stop(proxy)
    lab.stop(srv)
    time.sleep(0.5)
    lab.stop(tcpd, signal.SIGINT)
    subprocess.run(["editcap", "--inject-secrets", f"tls,{keylog}", os.path.join(out, "capture.pcap"),
                    os.path.join(out, "capture-dsb.pcapng")], check=True)
    return verify(name)


def tshark(pcap, *args):
    r = subprocess.run(["tshark", "-r", pcap, *args], check=True, capture_output=True, text=True)
    return r.stdout


def verify(name):
    """What tshark sees in the capture, with and without the key log, against the plaintext scenario."""
    plain, *_ = RUNS[name]
    out = os.path.join(TLS_DIR, name)
    pcap = os.path.join(out, "capture.pcap")
    keylog = os.path.join(out, "keys.txt")
    want = json.load(open(os.path.join(lab.CAPTURES, plain, "expected.json")))
    problems = []
    key_opt = ["-o", f"tls.keylog_file:{keylog}"]
    # The handshake: version and suite from the ServerHello, ALPN from the server's extension.
    hello = tshark(pcap, "-Y", "tls.handshake.type == 2", "-T", "fields",
                   "-e", "tls.handshake.extensions.supported_version", "-e", "tls.handshake.ciphersuite",
                   "-e", "tls.handshake.version", *key_opt).split("\n")[0].split("\t")
    alpn = tshark(pcap, "-Y", "tls.handshake.type == 8 || tls.handshake.type == 2", "-T", "fields",
                  "-e", "tls.handshake.extensions_alpn_str", *key_opt).split()
    version = {"0x0304": "TLS 1.3", "0x0303": "TLS 1.2"}.get(hello[0] or hello[2], hello[0] or hello[2])
    suite = int(hello[1], 16)
    # Every HTTP message tshark decrypts, and the JSON-RPC tools/call requests among them.
    msgs = []
    for line in tshark(pcap, "-Y", "http", "-T", "fields", "-e", "frame.number", "-e", "tcp.stream",
                       "-e", "http.request.method", "-e", "http.response.code", *key_opt).splitlines():
        f = line.split("\t")
        msgs.append({"frame": int(f[0]), "tcp_stream": int(f[1]), "method": f[2] or None,
                     "status": int(f[3]) if f[3] else None})
    calls = []
    pkts = json.loads(tshark(pcap, "-Y", 'http.request.method == "POST"', "-T", "json",
                             "-e", "frame.number", "-e", "http.file_data", *key_opt) or "[]")
    for p in pkts:
        f = p["_source"]["layers"]
        for data in f.get("http.file_data", []):
            body = lab.jloads(data)
            if body is None:
                try:
                    body = lab.jloads(bytes.fromhex(data.replace(":", "")).decode())
                except ValueError:
                    body = None
            if isinstance(body, dict) and body.get("method") == "tools/call":
                calls.append({"frame": int(f["frame.number"][0]), "id": body.get("id"),
                              "tool": body["params"]["name"]})
    without = tshark(pcap, "-Y", "http", "-T", "fields", "-e", "frame.number")
    want_calls = [(c["tool"], c["id"]) for c in want["calls"]]
    got_calls = [(c["tool"], c["id"]) for c in calls]
    if got_calls != want_calls:
        problems.append(f"tshark's tools/call {got_calls} are not the plaintext run's {want_calls}")
    if without.strip():
        problems.append("tshark sees HTTP without the key log")
    if not msgs:
        problems.append("tshark decrypts no HTTP with the key log")
    statuses = [m["status"] for m in msgs if m["status"] is not None]
    expected = {
        "scenario": name,
        "plaintext": plain,
        "description": f"{plain} over HTTPS ({version}), self-signed certificate, client key log in keys.txt; "
                       "capture.pcap with keys.txt, or capture-dsb.pcapng (the same capture with the key log "
                       "injected by editcap) alone.",
        "calls": want["calls"],
        "findings": want["findings"],
        "tls": {"version": version, "cipher_suite": f"0x{suite:04x}", "alpn": alpn[0] if alpn else None},
        "tshark": {
            "http_messages": msgs,
            "statuses": statuses,
            "tools_call_requests": calls,
            "http_messages_without_keylog": 0 if not without.strip() else len(without.split()),
        },
        "notes": "calls and findings are the plaintext scenario's (lab/captures/" + plain + "/expected.json); "
                 "tshark -o tls.keylog_file:keys.txt -Y http sees the HTTP messages listed, whose tools/call "
                 "ids and tools match those calls; without the key log tshark sees no HTTP.",
    }
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
    for p in problems:
        lab.log(f"  PROBLEM {name}: {p}")
    return problems


def main():
    signal.signal(signal.SIGTERM, lambda *_: (lab.cleanup(), sys.exit(143)))
    names = sys.argv[1:] or list(RUNS)
    verify_only = os.environ.get("LAB_VERIFY_ONLY") == "1"
    failed = []
    try:
        for n in names:
            lab.log(f"=== {n}")
            try:
                probs = verify(n) if verify_only else run(n)
            except Exception as e:  # noqa: BLE001
                probs = [repr(e)]
                lab.log(f"  PROBLEM {n}: {e!r}")
                lab.cleanup()
            if probs:
                failed.append(n)
    finally:
        lab.cleanup()
    if failed:
        sys.exit("not verified: " + ", ".join(failed))


if __name__ == "__main__":
    main()
