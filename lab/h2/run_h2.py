"""HTTP/2 captures for mcpsift: the lab's Python SDK server under hypercorn (which speaks HTTP/2) and the
Python SDK client on an httpx2 client that speaks only HTTP/2, for scenarios that also exist over
HTTP/1.1 in lab/captures/. Run from lab/ as root: `sudo .venv-mcp/bin/python h2/run_h2.py`.

Writes, per scenario S of SCENARIOS:
  captures/h2c_S/       capture.pcap (tcpdump) + capture.pcapng (dumpcap), h2c with prior knowledge;
                        expected.json (the HTTP/1.1 run's calls and findings, checked against tshark here)
  captures/h2tls_S/     (TLS_SCENARIOS only) capture.pcap + keys.txt (SSLKEYLOGFILE), ALPN h2;
                        expected.json (tests/lab.rs decrypts with keys.txt)
and captures/h2c_upgrade_curl/: one tools/call by curl --http2 over `Upgrade: h2c` (101, then stream 1).
Each directory gets tshark.json: what tshark reads from the capture (streams, methods, statuses).
Everything runs on 127.0.0.1:18083; every process is stopped by its PID.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

LAB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(LAB, "tools"))
import scenarios  # noqa: E402

PY = os.path.join(LAB, ".venv-mcp", "bin", "python")
HOST, PORT = "127.0.0.1", 18083
SCENARIOS = ["baseline_py_sse", "baseline_py_json", "tool_error_py"]
TLS_SCENARIOS = ["baseline_py_sse"]
# Runs whose HTTP/1.1 twin had proxy faults: expectations come from this run itself (check_own).
OWN = ["long_session_py"]
CAPS = os.path.join(LAB, "captures")


def wait_port(port, timeout=15):
    end = time.time() + timeout
    while time.time() < end:
        with socket.socket() as s:
            if s.connect_ex((HOST, port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"port {port} never opened")


def wait_text(path, text, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and text in open(path, "rb").read().decode("utf-8", "replace"):
            return
        time.sleep(0.1)
    raise RuntimeError(f"'{text}' not seen in {path}")


def start(cmd, log, env=None):
    return subprocess.Popen(cmd, cwd=LAB, stdout=open(log, "ab"), stderr=subprocess.STDOUT, env=env)


def stop(p, sig=signal.SIGTERM):
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def capture(out, work, pcapng=True):
    tlog, dlog = os.path.join(work, "tcpdump.log"), os.path.join(work, "dumpcap.log")
    filt = f"tcp port {PORT}"
    procs = [start(["tcpdump", "-i", "lo", "-U", "-w", os.path.join(out, "capture.pcap"), filt], tlog)]
    wait_text(tlog, "listening on")
    if pcapng:
        procs.append(start(["dumpcap", "-i", "lo", "-f", filt, "-w", os.path.join(out, "capture.pcapng")], dlog))
        wait_text(dlog, "Capturing on")
    time.sleep(0.5)
    return procs


def tshark(path, keylog=None, upgrade=False):
    """What tshark decodes as HTTP/2 in the capture: one row per HEADERS frame (stream, method, path, status).
    An Upgrade: h2c connection starts as HTTP/1.1, so the port is decoded as HTTP, which follows the 101."""
    first = ["-d", f"tcp.port=={PORT},http"] if upgrade else ["-o", f"http2.tcp.port:{PORT}"]
    cmd = ["tshark", "-r", path] + (first if keylog is None else ["-o", "tls.desegment_ssl_records:TRUE"]) + [
           "-Y", "http2.type == 1", "-T", "fields", "-e", "frame.number", "-e", "http2.streamid",
           "-e", "http2.headers.method", "-e", "http2.headers.path", "-e", "http2.headers.status"]
    if keylog:
        cmd[3:3] = ["-o", f"tls.keylog_file:{keylog}"]
    rows = []
    for line in subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines():
        f = line.split("\t")
        rows.append({"frame": int(f[0]), "stream": f[1], "method": f[2], "path": f[3], "status": f[4]})
    return rows


def data_frames(path, keylog=None, upgrade=False):
    """Every DATA frame tshark decodes: its packet's frame number and epoch time (ns), stream and length."""
    first = ["-d", f"tcp.port=={PORT},http"] if upgrade else ["-o", f"http2.tcp.port:{PORT}"]
    cmd = ["tshark", "-r", path] + (["-o", f"tls.keylog_file:{keylog}"] if keylog else first) + [
        "-Y", "http2.type == 0", "-T", "fields", "-E", "occurrence=a", "-e", "frame.number", "-e",
        "frame.time_epoch", "-e", "http2.type", "-e", "http2.streamid", "-e", "http2.length"]
    rows = []
    for line in subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines():
        num, t, types, sids, lens = line.split("\t")
        secs, _, frac = t.partition(".")
        ns = int(secs) * 10**9 + int((frac + "000000000")[:9])
        for ty, sid, ln in zip(types.split(","), sids.split(","), lens.split(",")):
            if ty == "0":
                rows.append({"frame": int(num), "ts_ns": ns, "stream": int(sid), "len": int(ln)})
    return rows


def tools_calls(path, keylog=None):
    """tools/call request bodies tshark reassembles from the h2 DATA frames, in wire order."""
    cmd = ["tshark", "-r", path, "-Y", "http2.data.data", "-T", "fields", "-e", "http2.streamid", "-e", "http2.data.data"]
    cmd[3:3] = ["-o", f"tls.keylog_file:{keylog}"] if keylog else ["-o", f"http2.tcp.port:{PORT}"]
    calls = []
    for line in subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines():
        sid, data = line.split("\t")
        for chunk in data.split(","):
            try:
                msg = json.loads(bytes.fromhex(chunk.replace(":", "")))
            except ValueError:
                continue
            # tshark lists a body both per DATA frame and reassembled: one request per stream
            if isinstance(msg, dict) and msg.get("method") == "tools/call" and sid not in {c["stream"] for c in calls}:
                calls.append({"stream": sid, "id": msg["id"], "tool": msg["params"]["name"]})
    return calls


def run(name, tls, work):
    sc = next(s for s in scenarios.S if s["name"] == name)
    sdk, transport, flags = sc["server"]
    assert sdk == "py" and transport == "streamable", name
    out = os.path.join(CAPS, ("h2tls_" if tls else "h2c_") + name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    log = os.path.join(work, f"{name}.log")
    srv_cmd = [PY, "peers/py_server.py", "--transport", "streamable", "--port", str(PORT), "--h2"] + flags
    plan = {"transport": "streamable", "url": f"http://{HOST}:{PORT}/mcp", "steps": sc["steps"],
            "observe": os.path.join(out, "client_observed.json"), "http2": "prior-knowledge"}
    env = dict(os.environ)
    keylog = None
    if tls:
        cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True)
        srv_cmd += ["--certfile", cert, "--keyfile", key]
        plan.update(url=f"https://{HOST}:{PORT}/mcp", http2="tls", cafile=cert)
        keylog = os.path.join(out, "keys.txt")
        env["SSLKEYLOGFILE"] = keylog
    if sc.get("client_mode"):
        plan["mode"] = sc["client_mode"]
    srv = start(srv_cmd, log)
    wait_port(PORT)
    procs = capture(out, work, pcapng=not tls)
    plan_path = os.path.join(work, f"{name}.plan.json")
    json.dump(plan, open(plan_path, "w"))
    subprocess.run([PY, "peers/py_client.py", plan_path], cwd=LAB, env=env, check=True, timeout=120,
                   stderr=open(log, "ab"))
    time.sleep(0.5)
    stop(srv)
    time.sleep(0.5)
    for p in procs:
        stop(p, signal.SIGINT)
    return sc, out, keylog


def check(sc, out, keylog):
    """The h2 run must show the same tools/call sequence as the HTTP/1.1 run's expected.json."""
    ref = json.load(open(os.path.join(CAPS, sc["name"], "expected.json")))
    facts = {"headers_frames": tshark(os.path.join(out, "capture.pcap"), keylog),
             "tools_calls": tools_calls(os.path.join(out, "capture.pcap"), keylog),
             "data_frames": data_frames(os.path.join(out, "capture.pcap"), keylog)}
    want = [(c["tool"], c["id"]) for c in ref["calls"]]
    got = [(c["tool"], c["id"]) for c in facts["tools_calls"]]
    if got != want:
        raise SystemExit(f"{out}: tshark sees tools/call {got}, the HTTP/1.1 run had {want}")
    statuses = [r["status"] for r in facts["headers_frames"] if r["status"]]
    if not statuses or any(s != "200" and s != "202" for s in statuses):
        raise SystemExit(f"{out}: unexpected statuses {statuses}")
    json.dump(facts, open(os.path.join(out, "tshark.json"), "w"), indent=1)
    expected = {"scenario": os.path.basename(out), "description": f"{sc['description']} Over HTTP/2 ("
                + ("TLS, ALPN h2" if keylog else "h2c, prior knowledge") + "): hypercorn serving the same app, "
                "an httpx2 client with http1=False, http2=True.",
                "calls": ref["calls"], "findings": ref["findings"],
                "notes": "Calls and findings are those of the HTTP/1.1 run " + sc["name"] + "; tshark "
                "(-Y http2) saw the same tools/call ids and tools in the same order (tshark.json), with statuses "
                + json.dumps(statuses) + ".",
                "peers": {"server": "py-sdk streamable under hypercorn (HTTP/2)", "client": "py-sdk, httpx2 http2"}}
    name = "expected.json"
    json.dump(expected, open(os.path.join(out, name), "w"), indent=2)
    open(os.path.join(out, name), "a").write("\n")
    print(f"{out}: {len(got)} tools/call, statuses {statuses}")


def check_own(sc, out):
    """The long session's HTTP/1.1 run had a proxy cut (and the script's retry after it); without the proxy
    that pair is one call. Calls: tshark's tools/call list, which must be the HTTP/1.1 run's minus that retry;
    outcomes: what the client saw (isError); findings: the script's own double dispatch, still planted."""
    ref = json.load(open(os.path.join(CAPS, sc["name"], "expected.json")))
    cut = next(p["ids"] for p in ref["planted"] if "proxy cut" in p["anomaly"])
    double = next(p for p in ref["planted"] if "double dispatch" in p["anomaly"])
    want = [c["tool"] for c in ref["calls"] if c["id"] != cut[1]]
    facts = {"headers_frames": tshark(os.path.join(out, "capture.pcap")),
             "tools_calls": tools_calls(os.path.join(out, "capture.pcap")),
             "data_frames": data_frames(os.path.join(out, "capture.pcap"))}
    got = [c["tool"] for c in facts["tools_calls"]]
    if got != want:
        raise SystemExit(f"{out}: tshark's tools/call list is not the HTTP/1.1 run's less the retry {cut[1]}")
    seen = [e for e in json.load(open(os.path.join(out, "client_observed.json")))["events"] if e["event"] == "call"]
    if [e["tool"] for e in seen] != got or any(e["outcome"] != "returned" or e["attempt"] != 1 for e in seen):
        raise SystemExit(f"{out}: the client's calls are not tshark's, or one did not return at once")
    calls = [{"tool": c["tool"], "id": c["id"], "outcome": "TOOL_ERROR" if e["isError"] else "TOOL_SUCCESS"}
             for c, e in zip(facts["tools_calls"], seen)]
    json.dump(facts, open(os.path.join(out, "tshark.json"), "w"), indent=1)
    expected = {"scenario": os.path.basename(out),
                "description": sc["description"] + " Over HTTP/2 (h2c, prior knowledge), client and server "
                "directly connected: no proxy, so no cut call and no retry after it.",
                "calls": calls, "findings": ["UNEXPLAINED_REPEAT"], "max_findings_above_info": 1,
                "planted": [double],
                "notes": f"{len(calls)} tools/call on one HTTP/2 connection (HPACK state carried across all of "
                "them). The tool list is tshark's (tshark.json), equal to the HTTP/1.1 run's less the retry "
                f"{cut[1]} after its proxy cut; each outcome is what the client saw (isError); the one finding "
                "is the script's double dispatch.",
                "peers": {"server": "py-sdk streamable --agent-tools under hypercorn (HTTP/2)",
                          "client": "py-sdk, httpx2 http2"}}
    json.dump(expected, open(os.path.join(out, "expected.json"), "w"), indent=2)
    open(os.path.join(out, "expected.json"), "a").write("\n")
    print(f"{out}: {len(calls)} tools/call")


def upgrade(work):
    """One tools/call over `Upgrade: h2c` by curl: the 2026-07-28 revision needs no initialize."""
    out = os.path.join(CAPS, "h2c_upgrade_curl")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    log = os.path.join(work, "upgrade.log")
    srv = start([PY, "peers/py_server.py", "--transport", "streamable", "--port", str(PORT), "--h2", "--json"], log)
    wait_port(PORT)
    procs = capture(out, work, pcapng=False)
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "read_note", "arguments": {"name": "groceries"},
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientInfo": {"name": "curl", "version": "1"},
                                 "io.modelcontextprotocol/clientCapabilities": {}}}}
    # hypercorn upgrades only a request without a body (it would have to read the body in HTTP/1.1 first),
    # so an OPTIONS opens the connection with `Upgrade: h2c` (its response is h2 stream 1) and the
    # tools/call follows on the same, now HTTP/2, connection (stream 3).
    r = subprocess.run(["curl", "-sS", "--http2", "-X", "OPTIONS", "-o", os.devnull, "-w", "%{http_version} %{http_code}\n",
                        f"http://{HOST}:{PORT}/mcp", "--next", "--http2",
                        "-o", os.path.join(work, "upgrade.out"), "-w", "%{http_version} %{http_code}",
                        "-H", "content-type: application/json", "-H", "accept: application/json, text/event-stream",
                        "-H", "mcp-protocol-version: 2026-07-28", "-H", "mcp-method: tools/call", "-H", "mcp-name: read_note",
                        "--data", json.dumps(body), f"http://{HOST}:{PORT}/mcp"], capture_output=True, text=True)
    time.sleep(0.5)
    stop(srv)
    time.sleep(0.5)
    for p in procs:
        stop(p, signal.SIGINT)
    facts = {"curl": r.stdout, "response": open(os.path.join(work, "upgrade.out")).read(),
             "headers_frames": tshark(os.path.join(out, "capture.pcap"), upgrade=True)}
    json.dump(facts, open(os.path.join(out, "tshark.json"), "w"), indent=1)
    resp = json.loads(facts["response"])
    assert r.stdout.split() == ["2", "204", "2", "200"] or r.stdout.split()[2:] == ["2", "200"], r.stdout
    assert resp["id"] == 7 and resp["result"]["isError"] is False, resp
    expected = {"scenario": "h2c_upgrade_curl", "description": "curl --http2: OPTIONS with Upgrade: h2c (101, then "
                "its response on HTTP/2 stream 1), then one tools/call on stream 3 of the same connection, to the "
                "Python server under hypercorn with --json (2026-07-28, no initialize).",
                "calls": [{"tool": "read_note", "id": 7, "outcome": "TOOL_SUCCESS"}], "findings": [],
                "notes": "curl reported HTTP versions and statuses " + json.dumps(r.stdout.split()) + "; the response "
                "body curl saved has id 7 and isError false; tshark.json lists the HEADERS frames tshark decodes.",
                "peers": {"server": "py-sdk streamable --json under hypercorn (HTTP/2)", "client": "curl --http2"}}
    json.dump(expected, open(os.path.join(out, "expected.json"), "w"), indent=2)
    open(os.path.join(out, "expected.json"), "a").write("\n")
    print(f"{out}: curl says {r.stdout!r}; {r.stderr.strip()}")


def facts_only():
    """Re-derive tshark.json's DATA frame list from the committed captures, without a new run."""
    for name in sorted(os.listdir(CAPS)):
        d = os.path.join(CAPS, name)
        if not name.startswith("h2") or not os.path.exists(os.path.join(d, "tshark.json")):
            continue
        keylog = os.path.join(d, "keys.txt") if os.path.exists(os.path.join(d, "keys.txt")) else None
        facts = json.load(open(os.path.join(d, "tshark.json")))
        facts["data_frames"] = data_frames(os.path.join(d, "capture.pcap"), keylog, upgrade=name.endswith("upgrade_curl"))
        json.dump(facts, open(os.path.join(d, "tshark.json"), "w"), indent=1)
        print(d, len(facts["data_frames"]), "DATA frames")


def main():
    if sys.argv[1:] == ["--facts-only"]:
        return facts_only()
    if sys.argv[1:] == ["--check-own"]:
        # Re-derive the OWN scenarios' expectations from their committed captures.
        for name in OWN:
            check_own(next(s for s in scenarios.S if s["name"] == name), os.path.join(CAPS, "h2c_" + name))
        return
    work = tempfile.mkdtemp(prefix="mcpsift-h2-")
    only = sys.argv[1:]
    for name in SCENARIOS:
        if not only or name in only:
            check(*run(name, False, work))
    for name in OWN:
        if not only or name in only:
            check_own(*run(name, False, work)[:2])
    for name in TLS_SCENARIOS:
        if not only or "tls" in only:
            check(*run(name, True, work))
    if not only or "upgrade" in only:
        upgrade(work)
    print("work files in", work)


if __name__ == "__main__":
    main()
