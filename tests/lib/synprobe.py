#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Open TCP connections from chosen (spoofed) source addresses out of one interface and count
what comes back for each, so a test can tell what the edge and the server really did.
Prints one JSON object.

Run with /usr/bin/python3: Debian's scapy is installed for the system interpreter only.

The server side routes everything back through this interface, so replies to addresses the
client namespace does not own arrive here and are seen by the sniffer; the client's kernel,
which owns none of them, stays out of the way.

Modes:
  (default)    SYNs only: a source's SYN is "answered" when a SYN-ACK or RST comes back.
  --handshake  complete every handshake that gets a SYN-ACK: send the ACK with --request
               (an HTTP request by default) and record what the server says to it:
               "admitted" (data that is not a 429, or an ACK of the request from the
               server's kernel), "shed429" (the edge's 429), or nothing ("silent").

Sources:
  --src ADDR            one address (repeatable)
  --rotate PREFIX:LEN   random addresses inside PREFIX, each in a different /LEN
                        (e.g. 2001:db8:2a00::/48:64 = a new /64 per SYN; 2001:db8::/64:128
                        = a new address per SYN inside one /64)
  --count N             SYNs per --src, or in total for --rotate

Shapes of the SYN (the evasion table):
  --flags F       TCP flags of the SYN (scapy letters: S, SF, SR...)
  --data N        N bytes of data in the SYN (TCP Fast Open style)
  --ts            offer TCP timestamps (and echo them in the handshake)
  --frag4 MODE    IPv4 fragments: "ports" (the first fragment holds 8 bytes of TCP: ports
                  and sequence number, the flags come later) or "header" (the whole TCP
                  header in the first fragment)
  --frag6 MODE    IPv6 fragment header: "atomic" (offset 0, M clear) or "first" (a real
                  two-fragment datagram)
  --ext N         N destination-options extension headers before TCP (IPv6)
  --vlan ID       an 802.1Q tag
"""
import argparse
import ipaddress
import json
import random
import sys
import threading
import time

from scapy.all import (AsyncSniffer, Dot1Q, Ether, IP, IPv6, IPv6ExtHdrDestOpt,  # noqa: E402
                       IPv6ExtHdrFragment, Raw, TCP, conf, fragment6, sendp)

conf.verb = 0


def rotate(spec, n, rng):
    prefix, _, length = spec.rpartition(":")
    net = ipaddress.ip_network(prefix, strict=True)
    length = int(length)
    if not net.prefixlen <= length <= net.max_prefixlen:
        sys.exit(f"--rotate {spec}: /{length} must lie within {net}")
    seen = set()
    out = []
    while len(out) < n:
        sub = rng.getrandbits(length - net.prefixlen) if length > net.prefixlen else 0
        if sub in seen and len(seen) < 2 ** (length - net.prefixlen):
            continue
        seen.add(sub)
        host = rng.getrandbits(net.max_prefixlen - length) if length < net.max_prefixlen else 0
        addr = int(net.network_address) | (sub << (net.max_prefixlen - length)) | host
        out.append(str(ipaddress.ip_address(addr)))
    return out


def tcp_options(a, tsval=0, tsecr=0, syn=True):
    opts = [("MSS", 1460)] if syn else []
    if a.ts:
        opts += [("NOP", None), ("NOP", None), ("Timestamp", (tsval, tsecr))]
    return opts


def syn_frames(a, ip, tcp, vlan):
    """The SYN as a list of frames, in the requested shape."""
    eth = Ether(dst=a.dmac)
    if vlan:
        eth = eth / Dot1Q(vlan=vlan)
    if a.frag4 and IP in ip:
        pkt = ip / tcp
        # "ports": fragment data of 8 bytes (ports + seq); "header": 24 bytes (the header
        # with its MSS option, and the timestamps or data after it).
        size = 8 if a.frag4 == "ports" else 24
        body = bytes(pkt)[20:]
        f1 = IP(src=ip.src, dst=ip.dst, id=ip.id, flags="MF", frag=0, proto=6) / Raw(body[:size])
        f2 = IP(src=ip.src, dst=ip.dst, id=ip.id, flags=0, frag=size // 8, proto=6) / \
            Raw(body[size:])
        return [eth / f1, eth / f2]
    if IPv6 in ip:
        chain = ip
        for _ in range(a.ext):
            chain = chain / IPv6ExtHdrDestOpt()
        if a.frag6 == "atomic":
            return [eth / chain / IPv6ExtHdrFragment(offset=0, m=0, id=random.getrandbits(32)) /
                    tcp]
        if a.frag6 == "first":
            whole = chain / IPv6ExtHdrFragment(id=random.getrandbits(32)) / tcp / Raw(b"\0" * 64)
            return [eth / f for f in fragment6(whole, 1280 if len(whole) > 1280 else 120)]
        return [eth / chain / tcp]
    return [eth / ip / tcp]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iface", required=True)
    ap.add_argument("--dmac", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--dst6")
    ap.add_argument("--dport", type=int, default=80)
    ap.add_argument("--src", action="append", default=[])
    ap.add_argument("--rotate")
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--gap", type=float, default=0.0, help="seconds between SYNs")
    ap.add_argument("--wait", type=float, default=1.0, help="seconds to wait for replies")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--handshake", action="store_true")
    ap.add_argument("--request", default="GET / HTTP/1.1\r\nHost: probe.example\r\n\r\n")
    ap.add_argument("--sport", type=int, default=0, help="one fixed source port")
    ap.add_argument("--flags", default="S")
    ap.add_argument("--data", type=int, default=0)
    ap.add_argument("--ts", action="store_true")
    ap.add_argument("--frag4", choices=["ports", "header"])
    ap.add_argument("--frag6", choices=["atomic", "first"])
    ap.add_argument("--ext", type=int, default=0)
    ap.add_argument("--vlan", type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    random.seed(a.seed)

    sources = []
    for s in a.src:
        sources += [s] * a.count
    if a.rotate:
        sources += rotate(a.rotate, a.count, rng)

    conns = {}   # (src, sport) -> state
    batches = []
    for i, s in enumerate(sources):
        port = a.sport if a.sport else 20000 + i % 40000
        isn = rng.getrandbits(32)
        ip = IPv6(src=s, dst=a.dst6) if ":" in s else IP(src=s, dst=a.dst, id=rng.getrandbits(16))
        tcp = TCP(sport=port, dport=a.dport, flags=a.flags, seq=isn, window=64240,
                  options=tcp_options(a, tsval=1000 + i))
        if a.data:
            tcp = tcp / Raw(b"x" * a.data)
        conns.setdefault((s, port), []).append({"src": s, "sport": port, "isn": isn,
                                                "state": "syn", "tsval": 1000 + i})
        batches.append((s, port, syn_frames(a, ip, tcp, a.vlan)))

    lock = threading.Lock()

    def current(key):
        lst = conns.get(key)
        if not lst:
            return None
        for c in lst:
            if c["state"] != "done":
                return c
        return lst[-1]

    def seen(p):
        if TCP not in p:
            return
        t = p[TCP]
        dst = p[IPv6].dst if IPv6 in p else p[IP].dst
        key = (dst, t.dport)
        with lock:
            c = current(key)
            if c is None:
                return
            c.setdefault("answered", str(t.flags))
            if not a.handshake:
                return
            flags = str(t.flags)
            if "S" in flags and "A" in flags and c["state"] == "syn":
                c["state"] = "sent"
                c["iss"] = t.seq
                tsecr = 0
                for k, v in t.options:
                    if k == "Timestamp":
                        tsecr = v[0]
                ip = IPv6(src=dst, dst=a.dst6) if ":" in dst else IP(src=dst, dst=a.dst)
                eth = Ether(dst=a.dmac)
                if a.vlan:
                    eth = eth / Dot1Q(vlan=a.vlan)
                req = a.request.encode()
                # The handshake's ACK, then the request: as a real client sends them.
                ack = TCP(sport=c["sport"], dport=a.dport, flags="A", seq=c["isn"] + 1,
                          ack=t.seq + 1, window=502,
                          options=tcp_options(a, c["tsval"] + 1, tsecr, syn=False))
                data = TCP(sport=c["sport"], dport=a.dport, flags="PA", seq=c["isn"] + 1,
                           ack=t.seq + 1, window=502,
                           options=tcp_options(a, c["tsval"] + 1, tsecr, syn=False)) / Raw(req)
                c["req_len"] = len(req)
                sendp([eth / ip / ack, eth / ip / data], iface=a.iface)
                return
            if c["state"] == "sent":
                payload = bytes(t.payload) if t.payload else b""
                if payload.startswith(b"HTTP/1.1 429"):
                    c["outcome"] = "shed429"
                elif payload:
                    c["outcome"] = "admitted"
                elif "A" in flags and t.ack == c["isn"] + 1 + c["req_len"] and \
                        "outcome" not in c:
                    c["outcome"] = "admitted"  # the server's kernel took the request
                if "outcome" in c or "R" in flags:
                    c["state"] = "done"
                    if "outcome" in c and c["outcome"] == "admitted" and "R" not in flags:
                        # Let the server's socket go: a reset from our side.
                        ip = IPv6(src=dst, dst=a.dst6) if ":" in dst else IP(src=dst, dst=a.dst)
                        eth = Ether(dst=a.dmac)
                        if a.vlan:
                            eth = eth / Dot1Q(vlan=a.vlan)
                        rst = TCP(sport=c["sport"], dport=a.dport, flags="R",
                                  seq=c["isn"] + 1 + c["req_len"])
                        sendp(eth / ip / rst, iface=a.iface)

    sn = AsyncSniffer(iface=a.iface, store=False, filter=f"tcp and src port {a.dport}", prn=seen)
    sn.start()
    time.sleep(0.3)
    for s, port, frames in batches:
        if a.sport:
            # One tuple reused: each connection waits for the one before it to end.
            key = (s, port)
            sendp(frames, iface=a.iface)
            deadline = time.time() + a.wait
            while time.time() < deadline:
                with lock:
                    c = current(key)
                    if c and (c["state"] == "done" or (not a.handshake and "answered" in c)):
                        break
                time.sleep(0.005)
            with lock:
                c = current(key)
                if c:
                    c["state"] = "done"
        else:
            sendp(frames, iface=a.iface)
        if a.gap > 0:
            time.sleep(a.gap)
    if not a.sport:
        time.sleep(a.wait)
    sn.stop()

    by_source = {}
    total = {"answered": 0, "admitted": 0, "shed429": 0, "silent": 0}
    for lst in conns.values():
        for c in lst:
            d = by_source.setdefault(c["src"], {"sent": 0, "answered": 0, "admitted": 0,
                                                "shed429": 0, "silent": 0})
            d["sent"] += 1
            if "answered" in c:
                d["answered"] += 1
                total["answered"] += 1
            if a.handshake and "iss" in c:
                o = c.get("outcome", "silent")
                d[o] += 1
                total[o] += 1
    json.dump({"sent": len(batches), **total, "sources": len(by_source),
               "by_source": by_source}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
