#!/usr/bin/env python3
"""Run the traffic-lab scenarios and regenerate lab/captures/ (Python stdlib only).

    python3 lab/tools/run_lab.py [scenario ...]       (default: all scenarios)

For an HTTP scenario it starts, each by PID and stopped by PID:
    server (TS, Python or Rust SDK) on 127.0.0.1:18082
    faultproxy.py             on 127.0.0.1:18081  -> server      (writes exchanges.jsonl)
    mitmdump reverse proxy    on 127.0.0.1:18080  -> faultproxy  (writes capture.har)
    tcpdump  -i lo 'tcp port 18080'                               (writes capture.pcap)
    dumpcap  -i lo 'tcp port 18080'                               (writes capture.pcapng)
then the client (TS, Python or Rust SDK) against http://127.0.0.1:18080. All four captures therefore
show the same client-facing traffic of the same run. A stdio scenario runs the client, which
spawns stdio_tee.py, which spawns the server (writes transcript.jsonl).

After each run the captures are read back (JSONL, HAR, and pcap/pcapng through tshark), the
tools/call requests are listed in wire order from each of them, the lists must agree, and each
call's declared outcome is checked against the evidence in the exchange records before
expected.json is written.
"""
import datetime as dt
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

LAB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(LAB, "tools"))
from scenarios import SCENARIOS  # noqa: E402

CAPTURES = os.path.join(LAB, "captures")
WORK = os.path.join(LAB, ".work")
PY = os.path.join(LAB, ".venv-mcp", "bin", "python")
MITMDUMP = os.path.join(LAB, ".venv-mitm", "bin", "mitmdump")
RS_BIN = os.path.join(LAB, "peers", "rust", "target", "release")   # built by run.sh (cargo build --release)
MITM_PORT, PROXY_PORT, SERVER_PORT = 18080, 18081, 18082
HOST = "127.0.0.1"

started = []  # Popen objects this run started (stopped by PID in cleanup)
namespaces = []  # network namespaces this run created (deleted by name in cleanup)

# impaired_net_* scenarios: three namespaces this runner creates and deletes, joined by two veth pairs.
#   NS_C (client, lc0 10.77.0.1/24) = lc0|lc1 = NS_B (impair_bridge.py between lc1 and ls1) = ls1|ls0 = NS_S
#   (server, ls0 10.77.0.2/24). Addresses exist only inside these namespaces.
NS_C, NS_B, NS_S = "mcpsift-lab-c", "mcpsift-lab-b", "mcpsift-lab-s"
NET_CLIENT_IP, NET_SERVER_IP = "10.77.0.1", "10.77.0.2"


def log(*a):
    print("[lab]", *a, file=sys.stderr, flush=True)


def start(cmd, name, logf, **kw):
    f = open(logf, "ab")
    p = subprocess.Popen(cmd, stdout=kw.pop("stdout", f), stderr=f, cwd=LAB, start_new_session=True, **kw)
    p.lab_name = name
    started.append(p)
    return p


def stop(p, sig=signal.SIGTERM, timeout=8):
    if p.poll() is None:
        try:
            os.killpg(p.pid, sig)   # the process group this script created for p (p.pid is its id)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(3)
    if p in started:
        started.remove(p)


def cleanup(*_):
    for p in list(reversed(started)):
        stop(p, timeout=3)
    netns_down()


def sh(*cmd):
    subprocess.run(cmd, check=True, capture_output=True)


def netns_down():
    for ns in list(namespaces):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        namespaces.remove(ns)


def netns_up():
    existing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    for ns in (NS_C, NS_B, NS_S):
        if ns in existing:  # left over from an interrupted run of this lab (same fixed name)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        sh("ip", "netns", "add", ns)
        namespaces.append(ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    sh("ip", "link", "add", "lc0", "netns", NS_C, "type", "veth", "peer", "name", "lc1", "netns", NS_B)
    sh("ip", "link", "add", "ls0", "netns", NS_S, "type", "veth", "peer", "name", "ls1", "netns", NS_B)
    sh("ip", "-n", NS_C, "addr", "add", f"{NET_CLIENT_IP}/24", "dev", "lc0")
    sh("ip", "-n", NS_S, "addr", "add", f"{NET_SERVER_IP}/24", "dev", "ls0")
    for ns, dev in ((NS_C, "lc0"), (NS_B, "lc1"), (NS_B, "ls1"), (NS_S, "ls0")):
        # real MTU-sized, checksummed segments on the wire, so the bridge can drop/duplicate/reorder each one
        sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off",
           "tx", "off", "rx", "off", "sg", "off")
        sh("ip", "-n", ns, "link", "set", dev, "up")


def ns(name, cmd):
    return ["ip", "netns", "exec", name] + cmd


def ns_wait_port(name, host, port, timeout=20):
    probe = f"import socket,sys; s=socket.socket(); s.settimeout(0.3); sys.exit(s.connect_ex(({host!r},{port})))"
    end = time.time() + timeout
    while time.time() < end:
        if subprocess.run(ns(name, [sys.executable, "-c", probe]), capture_output=True).returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError(f"{host}:{port} in {name} did not open")


def wait_port(port, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        with socket.socket() as s:
            s.settimeout(0.3)
            if s.connect_ex((HOST, port)) == 0:
                return True
        time.sleep(0.1)
    raise RuntimeError(f"port {port} did not open")


def wait_free(port, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        with socket.socket() as s:
            if s.connect_ex((HOST, port)) != 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"port {port} still busy")


def wait_text(path, text, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            if text in open(path, "rb").read().decode("utf-8", "replace"):
                return
        except FileNotFoundError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"'{text}' not seen in {path}")


def server_cmd(spec, port=SERVER_PORT):
    sdk, transport, flags = spec
    if sdk == "ts":
        return ["node", "peers/ts_server.mjs", "--transport", transport, "--port", str(port)] + flags
    if sdk == "rs":
        return [os.path.join(RS_BIN, "rs_server"), "--transport", transport, "--port", str(port)] + flags
    return [PY, "peers/py_server.py", "--transport", transport, "--port", str(port)] + flags


def client_cmd(kind, plan_path):
    if kind == "ts":
        return ["node", "peers/ts_client.mjs", plan_path]
    if kind == "rs":
        return [os.path.join(RS_BIN, "rs_client"), plan_path]
    return [PY, "peers/py_client.py", plan_path]


# --------------------------------------------------------------------------- running
def run_http(sc, out, work):
    spec = sc["server"]
    for port in (MITM_PORT, PROXY_PORT, SERVER_PORT):
        wait_free(port)
    logf = os.path.join(work, "processes.log")
    srv = start(server_cmd(spec), "server", logf)
    wait_port(SERVER_PORT)
    plan_path = os.path.join(work, "faults.json")
    json.dump({"rules": sc["rules"]}, open(plan_path, "w"), indent=1)
    proxy = start([sys.executable, "tools/faultproxy.py", "--listen", f"{HOST}:{PROXY_PORT}",
                   "--upstream", f"{HOST}:{SERVER_PORT}", "--plan", plan_path,
                   "--jsonl", os.path.join(out, "exchanges.jsonl")], "faultproxy", logf)
    wait_port(PROXY_PORT)
    mitm = start([MITMDUMP, "--mode", f"reverse:http://{HOST}:{PROXY_PORT}", "--listen-host", HOST,
                  "--listen-port", str(MITM_PORT), "-s", "tools/mitm_tee.py",
                  "--set", f"hardump={os.path.join(out, 'capture.har')}", "--set", "keep_host_header=true",
                  "--set", "flow_detail=0", "--set", "connection_strategy=lazy"], "mitmdump", logf)
    wait_port(MITM_PORT)
    filt = f"tcp port {MITM_PORT}"
    tlog = os.path.join(work, "tcpdump.log")
    dlog = os.path.join(work, "dumpcap.log")
    tcpd = start(["tcpdump", "-i", "lo", "-U", "-w", os.path.join(out, "capture.pcap"), filt], "tcpdump", tlog)
    dcap = start(["dumpcap", "-i", "lo", "-f", filt, "-w", os.path.join(out, "capture.pcapng")], "dumpcap", dlog)
    wait_text(tlog, "listening on")
    wait_text(dlog, "Capturing on")
    time.sleep(0.5)
    path = "/sse" if spec[1] == "legacy-sse" else "/mcp"
    plan = {"transport": spec[1], "url": f"http://{HOST}:{MITM_PORT}{path}", "steps": sc["steps"],
            "observe": os.path.join(work, "client_observed.json")}
    if sc.get("client_mode"):
        plan["mode"] = sc["client_mode"]
    if sc.get("elicit"):
        plan["elicit"] = True
    if sc.get("quiet"):
        plan["quiet"] = True
    run_client(sc, plan, work)
    time.sleep(0.5)
    stop(mitm, signal.SIGINT, timeout=15)   # SIGINT: mitmdump writes the HAR on its way out
    patch_har(os.path.join(out, "capture.har"), compact=bool(sc.get("quiet")))
    stop(proxy)
    stop(srv)
    time.sleep(0.5)
    stop(tcpd, signal.SIGINT)
    stop(dcap, signal.SIGINT)


def run_netns(sc, out, work):
    """Client in NS_C, fault-free faultproxy (JSONL) + server in NS_S, impair_bridge.py in NS_B between them;
    tcpdump and dumpcap capture on the client's veth inside NS_C."""
    spec = sc["server"]
    logf = os.path.join(work, "processes.log")
    netns_up()
    srv = start(ns(NS_S, server_cmd(spec)), "server", logf)
    ns_wait_port(NS_S, HOST, SERVER_PORT)
    plan_path = os.path.join(work, "faults.json")
    json.dump({"rules": []}, open(plan_path, "w"))
    proxy = start(ns(NS_S, [sys.executable, "tools/faultproxy.py", "--listen", f"{NET_SERVER_IP}:{PROXY_PORT}",
                            "--upstream", f"{HOST}:{SERVER_PORT}", "--plan", plan_path,
                            "--jsonl", os.path.join(out, "exchanges.jsonl"), "--lab-netns"]), "faultproxy", logf)
    ns_wait_port(NS_S, NET_SERVER_IP, PROXY_PORT)
    imp = sc["impair"]
    bridge = start(ns(NS_B, [sys.executable, "tools/impair_bridge.py", "--a", "lc1", "--b", "ls1",
                             "--seed", str(imp["seed"]), "--drop", str(imp["drop"]), "--dup", str(imp["dup"]),
                             "--reorder", str(imp["reorder"]), "--max-events", str(imp["max_events"]),
                             "--log", os.path.join(out, "impairments.jsonl")]), "impair_bridge", logf)
    wait_text(logf, "[impair_bridge] lc1 <-> ls1")
    filt = f"tcp port {PROXY_PORT}"
    tlog = os.path.join(work, "tcpdump.log")
    dlog = os.path.join(work, "dumpcap.log")
    tcpd = start(ns(NS_C, ["tcpdump", "-i", "lc0", "-U", "-w", os.path.join(out, "capture.pcap"), filt]), "tcpdump",
                 tlog)
    dcap = start(ns(NS_C, ["dumpcap", "-i", "lc0", "-f", filt, "-w", os.path.join(out, "capture.pcapng")]),
                 "dumpcap", dlog)
    wait_text(tlog, "listening on")
    wait_text(dlog, "Capturing on")
    time.sleep(0.5)
    plan = {"transport": spec[1], "url": f"http://{NET_SERVER_IP}:{PROXY_PORT}/mcp", "steps": sc["steps"],
            "observe": os.path.join(work, "client_observed.json")}
    plan_path = os.path.join(work, "client_plan.json")
    json.dump(plan, open(plan_path, "w"), indent=1)
    c = start(ns(NS_C, client_cmd(sc["client"], plan_path)), "client", os.path.join(work, "client.log"))
    try:
        c.wait(120)
    except subprocess.TimeoutExpired:
        log("client timed out")
    stop(c)
    time.sleep(1.0)   # let the last FIN/ACK exchange (and any retransmission) reach the capture
    stop(proxy)
    stop(srv)
    time.sleep(0.5)
    stop(tcpd, signal.SIGINT)
    stop(dcap, signal.SIGINT)
    stop(bridge, signal.SIGTERM)
    netns_down()


def tcp_analysis(path):
    """Counts of tshark's TCP expert flags in a capture: what the impairment left on the wire."""
    facts = {}
    for key, flt in (("frames", "frame"), ("retransmission", "tcp.analysis.retransmission"),
                     ("fast_retransmission", "tcp.analysis.fast_retransmission"),
                     ("spurious_retransmission", "tcp.analysis.spurious_retransmission"),
                     ("out_of_order", "tcp.analysis.out_of_order"), ("duplicate_ack", "tcp.analysis.duplicate_ack"),
                     ("lost_segment", "tcp.analysis.lost_segment")):
        r = subprocess.run(["tshark", "-r", path, "-Y", flt, "-T", "fields", "-e", "frame.number"],
                           capture_output=True, text=True)
        nums = [int(x) for x in r.stdout.split()]
        facts[key] = len(nums) if key == "frames" else nums
    return facts


def patch_har(path, compact=False):
    """Add "_error" to HAR entries whose response broke after the headers (see tools/mitm_tee.py). compact
    (long sessions): rewrite the HAR without indentation, which more than halves its size."""
    side = path + ".errors.json"
    errors = {}
    if os.path.exists(side):
        errors = {(a, b, c): msg for a, b, c, msg in json.load(open(side))}
        os.remove(side)
    if not errors and not compact:
        return
    har = json.load(open(path))
    for e in har["log"]["entries"]:
        key = (e["startedDateTime"], e["request"]["method"], e["request"]["url"])
        if key in errors and e["response"].get("status"):
            e["response"]["_error"] = errors[key]
    with open(path, "w") as f:
        if compact:
            json.dump(har, f, separators=(",", ":"))
            f.write("\n")
        else:
            json.dump(har, f, indent=4)


def run_stdio(sc, out, work):
    tee = [sys.executable, os.path.join(LAB, "tools", "stdio_tee.py"), "--out", os.path.join(out, "transcript.jsonl"),
           "--"]
    server = server_cmd(sc["server"])
    if sc["server"][0] != "rs":   # node/python script paths are relative to LAB; the Rust binary's is absolute
        server[1] = os.path.join(LAB, server[1])
    plan = {"transport": "stdio", "command": tee + server, "steps": sc["steps"],
            "observe": os.path.join(work, "client_observed.json")}
    if sc.get("client_mode"):
        plan["mode"] = sc["client_mode"]
    if sc.get("quiet"):
        plan["quiet"] = True
    run_client(sc, plan, work)


def run_client(sc, plan, work):
    plan_path = os.path.join(work, "client_plan.json")
    json.dump(plan, open(plan_path, "w"), indent=1)
    logf = os.path.join(work, "client.log")
    c = start(client_cmd(sc["client"], plan_path), "client", logf)
    try:
        c.wait(90)
    except subprocess.TimeoutExpired:
        log("client timed out")
    stop(c)


# --------------------------------------------------------------------------- reading captures back
def jloads(text):
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


def sse_messages(text):
    msgs = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(ln[5:].lstrip(" ") for ln in block.split("\n") if ln.startswith("data:"))
        if data.strip():
            msgs.append(jloads(data) if jloads(data) is not None else {"_unparsed": data})
    return msgs


def hdr(headers, name):
    items = headers.items() if isinstance(headers, dict) else headers
    for k, v in items:
        if k.lower() == name.lower():
            return v
    return None


def calls_from_jsonl(path):
    recs = [json.loads(ln) for ln in open(path) if ln.strip()]
    recs.sort(key=lambda r: r["ts"])
    calls = []
    for i, r in enumerate(recs):
        body = jloads(r["request"]["body"])
        if r["request"]["method"] == "POST" and isinstance(body, dict) and body.get("method") == "tools/call":
            calls.append({"tool": body["params"]["name"], "id": body.get("id"), "args": body["params"].get("arguments"),
                          "rec": i})
    return recs, calls


def calls_from_har(path):
    har = json.load(open(path))
    entries = sorted(har["log"]["entries"], key=lambda e: e["startedDateTime"])
    calls = []
    for e in entries:
        body = jloads((e["request"].get("postData") or {}).get("text"))
        if isinstance(body, dict) and body.get("method") == "tools/call":
            calls.append({"tool": body["params"]["name"], "id": body.get("id")})
    return calls, entries


def calls_from_pcap(path):
    # tshark reassembles TCP and HTTP (including chunked and gzip) and prints each request's body.
    r = subprocess.run(["tshark", "-r", path, "-Y", 'http.request.method == "POST"', "-T", "json",
                        "-e", "frame.time_epoch", "-e", "http.file_data"], capture_output=True, text=True)
    pkts = json.loads(r.stdout or "[]")
    calls = []
    for p in pkts:
        f = p["_source"]["layers"]
        for data in f.get("http.file_data", []):
            body = jloads(data)
            if body is None:
                try:
                    body = jloads(bytes.fromhex(data.replace(":", "")).decode())
                except ValueError:
                    body = None
            if isinstance(body, dict) and body.get("method") == "tools/call":
                calls.append({"tool": body["params"]["name"], "id": body.get("id")})
    return calls


def pcap_http_summary(path):
    r = subprocess.run(["tshark", "-r", path, "-Y", "http.response", "-T", "fields", "-e", "http.response.code"],
                       capture_output=True, text=True)
    return [int(x) for x in r.stdout.split() if x.isdigit()]


def find_response(recs, call):
    """Evidence for one call: (record, message) of the response carrying the call's id, looking in the POST's own
    exchange first, then in GET streams (resumption with Last-Event-ID, or the legacy SSE stream)."""
    r = recs[call["rec"]]
    if r["response"] is None:
        return r, None
    ctype = (hdr(r["response"]["headers"], "content-type") or "").lower()
    body = r["response"]["body"]
    msgs = sse_messages(body) if ctype.startswith("text/event-stream") else [jloads(body)]
    for m in msgs:
        if isinstance(m, dict) and m.get("id") == call["id"] and type(m.get("id")) is type(call["id"]) and \
                ("result" in m or "error" in m):
            return r, m
    for g in recs:
        if g["request"]["method"] != "GET" or g["response"] is None:
            continue
        for m in sse_messages(g["response"]["body"]):
            if isinstance(m, dict) and m.get("id") == call["id"] and type(m.get("id")) is type(call["id"]) and \
                    ("result" in m or "error" in m):
                return g, m
    return r, None


def check_outcome(expected, r, m, recs, call, cancelled=False):
    """True when the evidence in the exchange records fits the declared outcome. cancelled: the client cancelled
    this call, so its stream may also have been ended cleanly by the server (rmcp) without a response."""
    resp = r["response"]
    if expected == "NO_RESPONSE":
        return resp is None
    if resp is None:
        return False
    own = recs[call["rec"]]["response"]
    status = own["status"]
    if expected == "HTTP_ERROR":
        return not 200 <= status < 300
    if expected == "MALFORMED_JSON":
        return 200 <= status < 300 and jloads(own["body"]) is None
    if expected == "STREAM_INCOMPLETE":
        return m is None and (cancelled or recs[call["rec"]]["end"] != "complete") and \
            (hdr(own["headers"], "content-type") or "").startswith("text/event-stream")
    if expected == "INVALID_ENVELOPE":
        b = jloads(own["body"])
        return m is None and isinstance(b, dict) and b.get("id") != call["id"]
    if m is None:
        return False
    if expected == "JSONRPC_ERROR":
        return "error" in m
    res = m.get("result")
    if not isinstance(res, dict):
        return False
    if expected == "INPUT_REQUIRED":
        return res.get("resultType") == "input_required" and \
            ("inputRequests" in res or "requestState" in res) and "content" not in res
    if expected == "INVALID_TOOL_RESULT":
        return not isinstance(res.get("content"), list)
    if not isinstance(res.get("content"), list) or res.get("resultType", "complete") != "complete":
        return False
    if expected == "TOOL_ERROR":
        return res.get("isError") is True
    if expected == "TOOL_SUCCESS":
        return not res.get("isError", False)
    return False


def check_mrtr(recs, calls, expect):
    """An INPUT_REQUIRED call followed by a request carrying inputResponses/requestState must be its MRTR
    follow-up: same tool and arguments, a new id, the exact requestState, and inputResponses keyed like the
    inputRequests."""
    problems = []
    for i, (c, exp) in enumerate(zip(calls, expect)):
        if exp != "INPUT_REQUIRED":
            continue
        _, m = find_response(recs, c)
        ir = m["result"]
        for later in calls[i + 1:]:
            p = jloads(recs[later["rec"]]["request"]["body"])["params"]
            if "requestState" not in p and "inputResponses" not in p:
                continue
            if later["tool"] != c["tool"] or later["args"] != c["args"] or later["id"] == c["id"] or \
                    p.get("requestState") != ir.get("requestState") or \
                    sorted(p.get("inputResponses") or {}) != sorted(ir.get("inputRequests") or {}):
                problems.append(f"call id={later['id']!r} is not a proper MRTR follow-up of id={c['id']!r}")
            break
    return problems


def tsec(iso):
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def call_key(c):
    return (c["tool"], json.dumps(c.get("args"), sort_keys=True))


def check_session(sc, calls, facts):
    """Long sessions: no two identical calls back to back except the planted pairs; each planted pair is two
    identical calls in a row, the second sent right after the first ended (double dispatch: < 0.2 s; retry after
    the cut: < 1 s). Counts of the healthy repeats go into facts."""
    planted = sc.get("planted")
    if not planted:
        return []
    problems = []
    seconds = {p["calls"][1] for p in planted}
    for i in range(1, len(calls)):
        if call_key(calls[i]) == call_key(calls[i - 1]) and i not in seconds:
            problems.append(f"calls {i - 1} and {i} are identical and back to back, but not planted")
    facts["planted"] = []
    for p in planted:
        a, b = p["calls"]
        if b != a + 1 or call_key(calls[a]) != call_key(calls[b]) or calls[a]["id"] == calls[b]["id"]:
            problems.append(f"planted calls {a}, {b} are not the same call twice in a row with new ids")
            continue
        gap = tsec(calls[b]["ts"]) - tsec(calls[a]["end_ts"] or calls[a]["ts"])
        limit = 0.2 if p["anomaly"].startswith("double") else 1.0
        if not -0.05 <= gap < limit:
            problems.append(f"planted calls {a}, {b}: second sent {gap:.3f} s after the first ended (limit {limit})")
        facts["planted"].append({"ids": [calls[a]["id"], calls[b]["id"]], "gap_ms": round(gap * 1000)})
    seen, last = {}, {}
    repeats, min_between = 0, None
    for i, c in enumerate(calls):
        k = call_key(c)
        if k in last and i not in seconds:
            repeats += 1
            d = i - last[k] - 1
            min_between = d if min_between is None else min(min_between, d)
        seen[k] = seen.get(k, 0) + 1
        last[k] = i
    top = sorted(seen.items(), key=lambda kv: -kv[1])[:3]
    facts["session"] = {"calls": len(calls), "distinct_calls": len(seen), "healthy_repeats": repeats,
                        "min_other_calls_between_healthy_repeats": min_between,
                        "most_repeated": [f"{t}{a} x{n}" for (t, a), n in top],
                        "duration_s": round(tsec(calls[-1]["ts"]) - tsec(calls[0]["ts"]), 1)}
    return problems


def pcap_close(path, call_id):
    """How the TCP connection that carried the tools/call with call_id ended, from tshark: the first FIN or RST
    on that stream, who sent it, and when relative to the POST (and to a later notifications/cancelled POST)."""
    r = subprocess.run(["tshark", "-r", path, "-Y", 'http.request.method == "POST"', "-T", "json",
                        "-e", "frame.number", "-e", "frame.time_epoch", "-e", "tcp.stream", "-e", "http.file_data"],
                       capture_output=True, text=True)
    post, cancel = None, None
    for p in json.loads(r.stdout or "[]"):
        f = p["_source"]["layers"]
        for data in f.get("http.file_data", []):
            body = jloads(data)
            if body is None:
                try:
                    body = jloads(bytes.fromhex(data.replace(":", "")).decode())
                except ValueError:
                    body = None
            if not isinstance(body, dict):
                continue
            row = (int(f["frame.number"][0]), float(f["frame.time_epoch"][0]), int(f["tcp.stream"][0]))
            if body.get("method") == "tools/call" and body.get("id") == call_id:
                post = row
            if body.get("method") == "notifications/cancelled" and (body.get("params") or {}).get("requestId") == call_id:
                cancel = row
    if post is None:
        return None
    r = subprocess.run(["tshark", "-r", path, "-Y", f"tcp.stream == {post[2]} && (tcp.flags.fin == 1 || "
                        "tcp.flags.reset == 1)", "-T", "fields", "-e", "frame.number", "-e", "frame.time_epoch",
                        "-e", "tcp.srcport", "-e", "tcp.flags.fin", "-e", "tcp.flags.reset"],
                       capture_output=True, text=True)
    ends = []
    for ln in r.stdout.splitlines():
        num, t, sport, fin, rst = ln.split("\t")
        flag = "RST" if rst in ("1", "True") else "FIN"
        ends.append({"frame": int(num), "by": "server side (mitmdump)" if int(sport) == MITM_PORT else "client",
                     "flag": flag, "after_post_ms": round((float(t) - post[1]) * 1000)})
    out = {"post_frame": post[0], "tcp_stream": post[2], "closes": ends[:3]}
    if cancel:
        out["cancel_frame"] = cancel[0]
        out["cancel_after_post_ms"] = round((cancel[1] - post[1]) * 1000)
        out["cancel_same_connection"] = cancel[2] == post[2]
    return out


def check_cancel(sc, out, recs, calls, facts):
    """A cancelled call: notifications/cancelled for its id on the wire (TS) or not at all (Python,
    2026-07-28: the client closes the POST's stream); its exchange did not complete; how the connection ended."""
    problems = []
    facts["cancel"] = []
    late = set(sc.get("late_cancel_calls") or [])   # cancelled only after the stream had already been cut
    for i in list(sc.get("cancelled_calls") or []) + sorted(late):
        c = calls[i]
        rec = recs[c["rec"]]
        cancels = [r for r in recs if (jloads(r["request"]["body"]) or {}).get("method") == "notifications/cancelled"
                   and ((jloads(r["request"]["body"]) or {}).get("params") or {}).get("requestId") == c["id"]]
        any_cancel = [r for r in recs if (jloads(r["request"]["body"]) or {}).get("method") == "notifications/cancelled"]
        want_notification = i in late or sc["cancel"]["notification"]
        if want_notification and not cancels:
            problems.append(f"no notifications/cancelled for id {c['id']!r} on the wire")
        if not want_notification and any_cancel:
            problems.append("a notifications/cancelled is on the wire")
        if i in late and cancels and tsec(cancels[0]["ts"]) <= tsec(rec["end_ts"]):
            problems.append(f"the cancel of id {c['id']!r} is not after its stream ended")
        if rec["end"] == "complete" and not (cancels and tsec(cancels[0]["ts"]) <= tsec(rec["end_ts"])):
            # a stream that ended cleanly is a cancelled call's only if the server ended it after the cancel
            # (the rmcp server does: terminating chunk, no response); ending before it, it completed
            problems.append(f"the cancelled call id={c['id']!r} completed")
        f = {"id": c["id"], "late": i in late, "cut_by_proxy": bool(rec.get("cut_by_proxy")),
             "jsonl_end": rec["end"], "closed_by": rec.get("closed_by"),
             "sse_events_before_end": len(sse_messages((rec["response"] or {}).get("body") or "")),
             "call_to_end_ms": round((tsec(rec["end_ts"]) - tsec(rec["ts"])) * 1000)}
        if cancels:
            cr = cancels[0]
            body = jloads(cr["request"]["body"])
            f["cancel_after_call_ms"] = round((tsec(cr["ts"]) - tsec(rec["ts"])) * 1000)
            f["cancel_before_stream_end"] = tsec(cr["ts"]) <= tsec(rec["end_ts"])
            f["cancel_reason"] = (body.get("params") or {}).get("reason")
            f["cancel_response_status"] = (cr["response"] or {}).get("status")
        for fmt in ("capture.pcap", "capture.pcapng"):
            f["tcp_" + fmt.split(".")[1]] = pcap_close(os.path.join(out, fmt), c["id"])
        facts["cancel"].append(f)
    return problems


def verify_http(sc, out):
    problems = []
    recs, calls = calls_from_jsonl(os.path.join(out, "exchanges.jsonl"))
    pcap_calls = calls_from_pcap(os.path.join(out, "capture.pcap"))
    pcapng_calls = calls_from_pcap(os.path.join(out, "capture.pcapng"))
    key = [(c["tool"], c["id"]) for c in calls]
    others = [("pcap", pcap_calls), ("pcapng", pcapng_calls)]
    if not sc.get("impair"):   # the impaired scenarios have no mitmdump, so no HAR
        others.insert(0, ("HAR", calls_from_har(os.path.join(out, "capture.har"))[0]))
    for nm, other in others:
        ok = [(c["tool"], c["id"]) for c in other]
        if ok != key:
            problems.append(f"tools/call list differs: JSONL {key} vs {nm} {ok}")
    if len(calls) != len(sc["expect"]):
        problems.append(f"{len(calls)} tools/call on the wire, {len(sc['expect'])} expected")
    cancelled = set(sc.get("cancelled_calls") or [])
    for i, (c, exp) in enumerate(zip(calls, sc["expect"])):
        r, m = find_response(recs, c)
        if not check_outcome(exp, r, m, recs, c, cancelled=i in cancelled):
            problems.append(f"call {c['tool']} id={c['id']!r}: evidence does not fit {exp}")
    problems += check_mrtr(recs, calls, sc["expect"])
    statuses = pcap_http_summary(os.path.join(out, "capture.pcap"))
    facts = {"pcap_http_statuses": statuses, "exchanges": len(recs)}
    for c in calls:
        c["ts"], c["end_ts"] = recs[c["rec"]]["ts"], recs[c["rec"]].get("end_ts")
    problems += check_session(sc, calls, facts)
    for p, f in zip(sc.get("planted") or [], facts.get("planted") or []):
        if p["anomaly"].startswith("retry"):
            first = calls[p["calls"][0]]
            f["cut_tcp"] = pcap_close(os.path.join(out, "capture.pcap"), first["id"])
            f["cut_tcp_pcapng_same"] = f["cut_tcp"] == pcap_close(os.path.join(out, "capture.pcapng"), first["id"])
            _, entries = calls_from_har(os.path.join(out, "capture.har"))
            for e in entries:
                b = jloads((e["request"].get("postData") or {}).get("text"))
                if isinstance(b, dict) and b.get("method") == "tools/call" and b.get("id") == first["id"]:
                    f["cut_har"] = {"status": e["response"].get("status"), "_error": e["response"].get("_error")}
            rec = recs[first["rec"]]
            f["cut_jsonl"] = {"status": (rec["response"] or {}).get("status"), "end": rec["end"],
                              "sse_events": len(sse_messages((rec["response"] or {}).get("body") or "")),
                              "fault": rec.get("fault", {}).get("type")}
    if sc.get("cancelled_calls") or sc.get("late_cancel_calls"):
        problems += check_cancel(sc, out, recs, calls, facts)
    if sc.get("impair"):
        facts["tcp_pcap"] = tcp_analysis(os.path.join(out, "capture.pcap"))
        facts["tcp_pcapng"] = tcp_analysis(os.path.join(out, "capture.pcapng"))
        evs = [json.loads(ln) for ln in open(os.path.join(out, "impairments.jsonl")) if ln.strip()]
        facts["bridge"] = next((e["summary"] for e in evs if "summary" in e), None)
        if not facts["bridge"] or not all(facts["bridge"][k] for k in ("drop", "dup", "reorder")):
            problems.append(f"the bridge did not drop, duplicate and reorder: {facts['bridge']}")
        if not facts["tcp_pcap"]["retransmission"]:
            problems.append("no retransmission in the pcap")
    return calls, problems, facts


def verify_stdio(sc, out):
    problems = []
    lines = [json.loads(ln) for ln in open(os.path.join(out, "transcript.jsonl")) if ln.strip()]
    calls = []
    for ln in lines:
        m = ln.get("msg")
        if ln["dir"] == "c2s" and isinstance(m, dict) and m.get("method") == "tools/call":
            calls.append({"tool": m["params"]["name"], "id": m["id"], "args": m["params"].get("arguments"),
                          "ts": ln["ts"]})
    if len(calls) != len(sc["expect"]):
        problems.append(f"{len(calls)} tools/call in transcript, {len(sc['expect'])} expected")
    for c, exp in zip(calls, sc["expect"]):
        resp = [ln["msg"] for ln in lines if ln["dir"] == "s2c" and isinstance(ln.get("msg"), dict)
                and ln["msg"].get("id") == c["id"] and ("result" in ln["msg"] or "error" in ln["msg"])]
        res = resp[0].get("result") if resp else None
        ok = isinstance(res, dict) and isinstance(res.get("content"), list) and \
            (res.get("isError", False) is (exp == "TOOL_ERROR"))
        if not ok:
            problems.append(f"call {c['tool']} id={c['id']!r}: evidence does not fit {exp}")
        c["end_ts"] = next((ln["ts"] for ln in lines if ln["dir"] == "s2c" and isinstance(ln.get("msg"), dict)
                            and ln["msg"].get("id") == c["id"] and ("result" in ln["msg"] or "error" in ln["msg"])),
                           None)
    facts = {"messages": len(lines)}
    problems += check_session(sc, calls, facts)
    return calls, problems, facts


def statuses_text(statuses):
    if len(statuses) <= 20:
        return str(statuses)
    counts = {}
    for st in statuses:
        counts[st] = counts.get(st, 0) + 1
    return f"{len(statuses)} responses: " + ", ".join(f"{n}x {st}" for st, n in sorted(counts.items()))


def session_note(facts):
    parts = []
    if facts.get("session"):
        s = facts["session"]
        rep = (f"{s['healthy_repeats']} healthy repeats, each with at least "
               f"{s['min_other_calls_between_healthy_repeats']} other call(s) in between; most repeated: "
               f"{', '.join(s['most_repeated'])}" if s["healthy_repeats"] else "no other repeated call")
        parts.append(f"Session read back from the captures: {s['calls']} tools/call, {s['distinct_calls']} distinct "
                     f"(tool, arguments); {rep}; {s['duration_s']} s from first to last call.")
    for p in facts.get("planted") or []:
        s = (f"Planted pair ids {p['ids'][0]!r}, {p['ids'][1]!r}: identical and back to back, the second "
             f"sent {p['gap_ms']} ms after the first ended.")
        if p.get("cut_jsonl"):
            j, h, t = p["cut_jsonl"], p.get("cut_har") or {}, p.get("cut_tcp") or {}
            closes = "; ".join(f"frame {e['frame']} {e['flag']} by the {e['by']} {e['after_post_ms']} ms after the "
                               "POST" for e in t.get("closes", [])) or "none"
            s += (f" The cut call {p['ids'][0]!r}: JSONL status {j['status']}, end '{j['end']}', {j['sse_events']} SSE "
                  f"event(s), no response, fault '{j['fault']}'; HAR status {h.get('status')} with _error "
                  f"{h.get('_error')!r}; tshark on capture.pcap, TCP stream {t.get('tcp_stream')} of its POST (frame "
                  f"{t.get('post_frame')}): {closes} (pcapng: "
                  f"{'the same' if p.get('cut_tcp_pcapng_same') else 'DIFFERENT'}).")
        parts.append(s)
    for c in facts.get("cancel") or []:
        t = c.get("tcp_pcap") or {}
        closes = "; ".join(f"frame {e['frame']} {e['flag']} by the {e['by']} {e['after_post_ms']} ms after the POST"
                           for e in t.get("closes", [])) or "none in the capture"
        s = (f"{'Call id ' + repr(c['id']) + ', cut and only then cancelled' if c.get('late') else 'Cancelled call id ' + repr(c['id'])}"
             f": its exchange ended '{c['jsonl_end']}'{' (cut by the proxy)' if c.get('cut_by_proxy') else ''}"
             f"{' (closed by the ' + c['closed_by'] + ')' if c.get('closed_by') else ''} {c['call_to_end_ms']} ms after "
             f"the POST, after {c['sse_events_before_end']} SSE event(s) and no response.")
        if "cancel_after_call_ms" in c:
            s += (f" notifications/cancelled (reason {c['cancel_reason']!r}) was POSTed {c['cancel_after_call_ms']} ms "
                  f"after the call (HTTP {c['cancel_response_status']}), "
                  f"{'before' if c['cancel_before_stream_end'] else 'after'} the call's stream ended.")
        else:
            s += " No notifications/cancelled on the wire."
        s += (f" tshark on capture.pcap, TCP stream {t.get('tcp_stream')} of the POST (frame {t.get('post_frame')}): "
              f"{closes}")
        if t.get("cancel_frame"):
            s += (f"; the cancel POST is frame {t['cancel_frame']} ({t['cancel_after_post_ms']} ms after the POST, "
                  f"{'same' if t['cancel_same_connection'] else 'another'} connection)")
        parts.append(s + ".")
    return " ".join(parts)


def write_expected(sc, out, calls, facts, http):
    how = ("Checked by reading the captures back: the tools/call requests were listed in wire order from "
           "exchanges.jsonl, from capture.har and from capture.pcap and capture.pcapng (tshark -Y "
           "'http.request.method == \"POST\"' -T json -e http.file_data) and the four lists agreed; each call's "
           "outcome was checked against the response in exchanges.jsonl (status, JSON-RPC id, result/error, "
           f"content, isError, how the exchange ended). HTTP response codes in the pcap: {statuses_text(facts['pcap_http_statuses'])}."
           if http and not sc.get("impair") else
           "Checked by reading the captures back: the tools/call requests were listed in wire order from "
           "exchanges.jsonl and from capture.pcap and capture.pcapng (tshark reassembly, -Y "
           "'http.request.method == \"POST\"' -T json -e http.file_data) and the three lists agreed (no HAR: no "
           "mitmdump in this path); each call's outcome was checked against the response in exchanges.jsonl. "
           f"HTTP response codes in the pcap: {facts['pcap_http_statuses']}. Bridge impairments (impairments.jsonl, "
           f"both directions, all TCP segments of the run): {facts.get('bridge')}. tshark TCP analysis of the pcap, "
           f"frame numbers: {json.dumps(facts.get('tcp_pcap'))}."
           if http else
           "Checked by reading transcript.jsonl back: tools/call requests (dir c2s) in order, each matched to the "
           "s2c response with the same id, its content array and isError checked.")
    doc = {
        "scenario": sc["name"],
        "description": sc["description"],
        "calls": [{"tool": c["tool"], "id": c["id"], "outcome": exp} for c, exp in zip(calls, sc["expect"])],
        "findings": sc["findings"],
        "notes": " ".join(x for x in [how, session_note(facts), sc.get("notes", ""),
                                      f"Modelled on Cakewalk: {sc['cakewalk']}." if sc.get("cakewalk") else ""] if x),
        "peers": {"server": f"{sc['server'][0]}-sdk {sc['server'][1]} {' '.join(sc['server'][2])}".strip(),
                  "client": f"{sc['client']}-sdk" + (f" mode={sc['client_mode']}" if sc.get("client_mode") else "")},
    }
    if "max_findings_above_info" in sc:
        doc["max_findings_above_info"] = sc["max_findings_above_info"]
    if sc.get("cancelled_calls"):
        doc["cancelled_calls"] = [calls[i]["id"] for i in sc["cancelled_calls"]]
    if sc.get("planted"):
        doc["planted"] = [{"anomaly": p["anomaly"], "ids": [calls[i]["id"] for i in p["calls"]]}
                          for p in sc["planted"]]
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")


def run_one(name):
    sc = SCENARIOS[name]
    out = os.path.join(CAPTURES, name)
    work = os.path.join(WORK, name)
    verify_only = os.environ.get("LAB_VERIFY_ONLY") == "1"   # re-check committed captures, rewrite expected.json
    if not verify_only:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(out)
        os.makedirs(work)
    http = sc["server"][1] != "stdio"
    log(f"=== {name}" + (" (verify only)" if verify_only else ""))
    t = time.time()
    if not verify_only:
        (run_netns if sc.get("impair") else run_http if http else run_stdio)(sc, out, work)
    calls, problems, facts = (verify_http if http else verify_stdio)(sc, out)
    obs_path = os.path.join(work, "client_observed.json")
    if os.path.exists(obs_path) and not verify_only:
        shutil.copy(obs_path, os.path.join(out, "client_observed.json"))
    write_expected(sc, out, calls, facts, http)
    for p in problems:
        log(f"  PROBLEM {name}: {p}")
    log(f"  {name}: {len(calls)} call(s), {len(problems)} problem(s), {time.time() - t:.1f}s")
    return problems


def main():
    signal.signal(signal.SIGTERM, lambda *_: (cleanup(), sys.exit(143)))
    names = sys.argv[1:] or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        sys.exit(f"unknown scenario(s): {unknown}")
    os.makedirs(CAPTURES, exist_ok=True)
    failed = {}
    try:
        for n in names:
            try:
                probs = run_one(n)
            except Exception as e:  # noqa: BLE001
                probs = [f"run failed: {e!r}"]
                log(f"  PROBLEM {n}: {e!r}")
                cleanup()
            if probs:
                failed[n] = probs
    finally:
        cleanup()
    import client_table
    client_table.main()
    log(f"done: {len(names) - len(failed)}/{len(names)} scenario(s) verified; client behaviour table: "
        f"captures/CLIENTS.md")
    if failed:
        log("not verified: " + ", ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
