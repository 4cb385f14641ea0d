#!/usr/bin/env python3
"""User-space L2 bridge that impairs TCP (Python stdlib only). Used by the impaired_net_* scenarios.

    impair_bridge.py --a IF_A --b IF_B --seed N [--drop P] [--dup P] [--reorder P] [--max-events N]
                     --log events.jsonl

Runs inside the lab's bridge network namespace, where IF_A and IF_B are the inner ends of two veth pairs
(the outer ends live in the client and the server namespace; see tools/netns_lab.py). The kernel does not
forward between the two interfaces (they have no addresses and no kernel bridge): every frame crosses only
because this script reads it from one raw AF_PACKET socket and writes it to the other. Non-TCP frames (ARP)
are passed unchanged. Each TCP segment, independently, with a random.Random(seed) draw:

  drop     (P)  not forwarded; the sender's TCP has to retransmit it;
  dup      (P)  forwarded twice, back to back;
  reorder  (P)  held back and sent right after the next frame in the same direction
                (or after 40 ms if none comes), so the two arrive swapped;

at most --max-events impairments in all, so the damage is bounded. Every impairment is written to the
log (direction, TCP ports, seq, ack, flags, payload length): the ground truth for the capture. Offloads
(TSO/GSO/GRO/checksum) must be off on the veths so every frame is a real, checksummed <=MTU segment.
"""
import argparse
import json
import random
import select
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def tcp_info(frame):
    """(sport, dport, seq, ack, flags, payload_len) for an IPv4 TCP frame, else None."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    if ip[9] != 6:
        return None
    total = struct.unpack("!H", ip[2:4])[0]
    tcp = ip[ihl:]
    sport, dport, seq, ack, off_flags = struct.unpack("!HHIIH", tcp[:14])
    doff = (off_flags >> 12) * 4
    flags = "".join(n for b, n in ((0x02, "S"), (0x10, "A"), (0x08, "P"), (0x01, "F"), (0x04, "R"))
                    if off_flags & b)
    return sport, dport, seq, ack, flags, total - ihl - doff


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--drop", type=float, default=0.04)
    ap.add_argument("--dup", type=float, default=0.04)
    ap.add_argument("--reorder", type=float, default=0.04)
    ap.add_argument("--max-events", type=int, default=60)
    ap.add_argument("--log", required=True)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    socks = {}
    for name in (args.a, args.b):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((name, 0))
        socks[name] = s
    other = {args.a: args.b, args.b: args.a}
    held = {}  # out interface -> (frame, since, event)
    logf = open(args.log, "w", buffering=1)
    counts = {"frames": 0, "tcp": 0, "drop": 0, "dup": 0, "reorder": 0}
    events = 0
    t0 = time.time()
    running = True

    def stop(*_):
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def record(kind, src, info):
        nonlocal events
        events += 1
        counts[kind] += 1
        sport, dport, seq, ack, flags, plen = info
        logf.write(json.dumps({"t": round(time.time() - t0, 4), "event": kind, "from": src, "sport": sport,
                               "dport": dport, "seq": seq, "ack": ack, "flags": flags, "len": plen}) + "\n")

    print(f"[impair_bridge] {args.a} <-> {args.b} seed={args.seed} drop={args.drop} dup={args.dup} "
          f"reorder={args.reorder} max_events={args.max_events}", file=sys.stderr, flush=True)
    while running:
        timeout = 0.04
        if held:
            timeout = max(0.0, min(since + 0.04 for _, since, _ in held.values()) - time.time())
        try:
            ready, _, _ = select.select(list(socks.values()), [], [], timeout)
        except InterruptedError:
            continue
        now = time.time()
        for out, (frame, since, _) in list(held.items()):
            if now - since >= 0.04:  # nothing came after it: release it late
                socks[out].send(frame)
                del held[out]
        for s in ready:
            name = next(n for n, x in socks.items() if x is s)
            try:
                frame, addr = s.recvfrom(65535)
            except InterruptedError:
                continue
            if addr[2] == PACKET_OUTGOING:  # our own transmission on this interface
                continue
            out = other[name]
            counts["frames"] += 1
            info = tcp_info(frame)
            action = "pass"
            if info is not None:
                counts["tcp"] += 1
                r = rng.random()
                if events < args.max_events and out not in held:
                    if r < args.drop:
                        action = "drop"
                    elif r < args.drop + args.dup:
                        action = "dup"
                    elif r < args.drop + args.dup + args.reorder:
                        action = "reorder"
            if action == "drop":
                record("drop", name, info)
                continue
            if action == "reorder":
                record("reorder", name, info)
                held[out] = (frame, time.time(), info)
                continue
            socks[out].send(frame)
            if action == "dup":
                record("dup", name, info)
                socks[out].send(frame)
            if out in held:  # the held frame goes out after this one
                socks[out].send(held.pop(out)[0])
    for out, (frame, _, _) in held.items():
        socks[out].send(frame)
    logf.write(json.dumps({"summary": counts}) + "\n")
    logf.close()
    print(f"[impair_bridge] done {counts}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
