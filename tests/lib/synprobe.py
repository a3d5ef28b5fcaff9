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
  --tfo           a TCP Fast Open option (kind 34, a cookie request) in the SYN
  --ts            offer TCP timestamps (and echo them in the handshake)
  --frag4 MODE    IPv4 fragments: "ports" (the first fragment holds 8 bytes of TCP: ports
                  and sequence number, the flags come later), "header" (24 bytes: the TCP
                  header with its MSS option; the timestamps or data after it come later;
                  without either the second fragment is empty and the kernel never
                  reassembles the datagram) or "trailer" (as "ports", in a 60-byte Ethernet
                  frame whose 18 bytes after the IP datagram read as the rest of a TCP header:
                  data offset 5, flags --trailer-flags, ACK by default)
  --frag6 MODE    IPv6 fragment header: "atomic" (offset 0, M clear), "first" (a real
                  two-fragment datagram: the first fragment holds the --ext-after headers and
                  the whole TCP header, 64 bytes of zeros after the SYN's own data go to the
                  second), "cut" (the first fragment holds the --ext-after headers and 8 bytes
                  of TCP) or "chain" (the first fragment holds one 8-byte destination-options
                  header; a second one and TCP follow in the second fragment)
  --reverse       send a fragmented SYN's fragments last first
  --ext N         N destination-options extension headers before TCP (IPv6), in front of the
                  fragment header if there is one (the unfragmentable part)
  --ext-after N   N destination-options headers after the fragment header (--frag6)
  --vlan TAGS     VLAN tags, outermost first, comma-separated: N or qN an 802.1Q tag with
                  VLAN id N (0: a priority tag), adN an 802.1ad tag (e.g. 100, 0,0,0,
                  ad300,400)

Batch mode:
  --batch FILE    probes from FILE, a JSON list (or one JSON object a line) of objects whose
                  keys are the options above and --src, --dport, --dst, --dst6 (underscores
                  for dashes; a key left out takes the command line's value) and "name". All
                  are sent at once, each from its own source port (20000 + its index), and
                  the output gains "probes": per probe in file order its name, src, dport,
                  sport, "answered" (the TCP flags of the first reply, or null), "iss" (the
                  SYN-ACK's sequence number), "acked" (how much of the SYN's data the SYN-ACK
                  acknowledged) and with --handshake its "outcome" and the "status" line of
                  the answer that admitted it.
"""
import argparse
import ipaddress
import json
import random
import sys
import threading
import time

from scapy.all import (AsyncSniffer, Dot1AD, Dot1Q, Ether, IP, IPv6,  # noqa: E402
                       IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, Padding, Raw, TCP, conf, sendp)

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


def parse_vlan(spec):
    """--vlan TAGS as a list of (tpid class, id), outermost first."""
    tags = []
    if spec in (None, ""):
        return tags
    for t in str(spec).split(","):
        t = t.strip().lower()
        if t.startswith("ad"):
            tags.append((Dot1AD, int(t[2:])))
        else:
            tags.append((Dot1Q, int(t[1:] if t.startswith("q") else t)))
    return tags


def eth_of(a):
    """The Ethernet header and VLAN tags every frame of this probe carries."""
    eth = Ether(dst=a.dmac)
    for cls, vid in parse_vlan(a.vlan):
        eth = eth / cls(vlan=vid)
    return eth


def split6(ip, a, upper, k, fid):
    """@upper (the headers after the fragment header, TCP and data) as two fragments, the
    first holding its first @k bytes (a multiple of 8); @a.ext headers in front of each."""
    def unfrag():
        chain = IPv6(src=ip.src, dst=ip.dst)
        for _ in range(a.ext):
            chain = chain / IPv6ExtHdrDestOpt()
        return chain
    nh = 60 if a.ext_after or a.frag6 == "chain" else 6
    f1 = unfrag() / IPv6ExtHdrFragment(nh=nh, offset=0, m=1, id=fid) / Raw(upper[:k])
    f2 = unfrag() / IPv6ExtHdrFragment(nh=nh, offset=k // 8, m=0, id=fid) / Raw(upper[k:])
    return [f1, f2]


def syn_frames(a, ip, tcp):
    """The SYN as a list of frames, in the requested shape."""
    eth = eth_of(a)
    frames = None
    if a.frag4 and IP in ip:
        pkt = ip / tcp
        # "ports" and "trailer": fragment data of 8 bytes (ports + seq); "header": 24 bytes
        # (the header with its MSS option, and the timestamps or data after it).
        size = 24 if a.frag4 == "header" else 8
        body = bytes(pkt)[20:]
        f1 = IP(src=ip.src, dst=ip.dst, id=ip.id, flags="MF", frag=0, proto=6) / Raw(body[:size])
        f2 = IP(src=ip.src, dst=ip.dst, id=ip.id, flags=0, frag=size // 8, proto=6) / \
            Raw(body[size:])
        first = eth / f1
        if a.frag4 == "trailer":
            # Pad to the Ethernet minimum (60 bytes) as a NIC would, but with bytes chosen to
            # read as the TCP header's second half: ack 0, data offset 5, the flags, window.
            rest = bytes(4) + bytes([0x50, int(a.trailer_flags, 0)]) + b"\xff\xff" + bytes(4)
            pad = 60 - len(first)
            first = first / Padding(load=(rest + bytes(max(0, pad - len(rest))))[:max(pad, 12)])
        frames = [first, eth / f2]
    elif IPv6 in ip:
        chain = ip
        for _ in range(a.ext):
            chain = chain / IPv6ExtHdrDestOpt()
        if a.frag6 == "atomic":
            return [eth / chain / IPv6ExtHdrFragment(offset=0, m=0, id=random.getrandbits(32)) /
                    tcp]
        if a.frag6 in ("first", "cut", "chain"):
            fid = random.getrandbits(32)
            n_after = max(a.ext_after, 2) if a.frag6 == "chain" else a.ext_after
            whole = chain / IPv6ExtHdrFragment(id=fid)
            for _ in range(n_after):
                whole = whole / IPv6ExtHdrDestOpt()
            whole = whole / tcp / Raw(b"\0" * 64)
            raw = bytes(whole)
            upper = raw[40 + 8 * a.ext + 8:]
            th = bytes(whole[TCP])
            thlen = (th[12] >> 4) * 4
            if a.frag6 == "first":
                k = 8 * n_after + (thlen + 7) // 8 * 8
            elif a.frag6 == "cut":
                k = 8 * n_after + 8
            else:
                k = 8
            frames = [eth / f for f in split6(ip, a, upper, k, fid)]
        else:
            return [eth / chain / tcp]
    if frames is None:
        return [eth / ip / tcp]
    return frames[::-1] if a.reverse else frames


SHAPE_KEYS = ("src", "dport", "dst", "dst6", "flags", "data", "tfo", "ts", "frag4", "frag6",
              "reverse", "ext", "ext_after", "vlan", "trailer_flags", "name")


def load_batch(path, a):
    """The probes of --batch FILE, each an argparse namespace: the command line's options
    with the probe's own over them."""
    with open(path) as f:
        text = f.read().strip()
    items = json.loads(text) if text.startswith("[") else \
        [json.loads(line) for line in text.splitlines() if line.strip()]
    out = []
    for i, it in enumerate(items):
        bad = set(it) - set(SHAPE_KEYS)
        if bad:
            sys.exit(f"--batch: probe {i}: unknown keys {sorted(bad)}")
        p = argparse.Namespace(**vars(a))
        for k, v in it.items():
            setattr(p, k, v)
        if not p.src or isinstance(p.src, list):
            sys.exit(f"--batch: probe {i} needs one src")
        p.name = it.get("name", f"probe{i}")
        out.append(p)
    return out


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
    ap.add_argument("--tfo", action="store_true")
    ap.add_argument("--ts", action="store_true")
    ap.add_argument("--frag4", choices=["ports", "header", "trailer"])
    ap.add_argument("--trailer-flags", default="0x10")
    ap.add_argument("--frag6", choices=["atomic", "first", "cut", "chain"])
    ap.add_argument("--reverse", action="store_true")
    ap.add_argument("--ext", type=int, default=0)
    ap.add_argument("--ext-after", type=int, default=0)
    ap.add_argument("--vlan", default="")
    ap.add_argument("--batch")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    random.seed(a.seed)

    # One namespace per SYN: the command line's, or in batch mode each probe's own.
    probes = []
    if a.batch:
        probes = load_batch(a.batch, a)
    else:
        for s in a.src:
            probes += [argparse.Namespace(**{**vars(a), "src": s})] * a.count
        if a.rotate:
            probes += [argparse.Namespace(**{**vars(a), "src": s})
                       for s in rotate(a.rotate, a.count, rng)]

    conns = {}   # (src, sport) -> state
    order = []   # batch mode: the probes' states in file order
    batches = []
    ip_ids = set()
    for i, p in enumerate(probes):
        s = p.src
        port = a.sport if a.sport and not a.batch else 20000 + i % 40000
        isn = rng.getrandbits(32)
        if ":" in s:
            ip = IPv6(src=s, dst=p.dst6)
        else:
            ipid = rng.getrandbits(16)
            if a.batch:
                while ipid in ip_ids:  # fragments of two probes must never meet
                    ipid = (ipid + 1) & 0xffff
                ip_ids.add(ipid)
            ip = IP(src=s, dst=p.dst, id=ipid)
        opts = tcp_options(p, tsval=1000 + i)
        if p.tfo:
            opts = opts + [(34, b"")]
        tcp = TCP(sport=port, dport=p.dport, flags=p.flags, seq=isn, window=64240,
                  options=opts)
        if p.data:
            tcp = tcp / Raw(b"x" * p.data)
        c = {"src": s, "sport": port, "isn": isn, "state": "syn", "tsval": 1000 + i, "cfg": p}
        conns.setdefault((s, port), []).append(c)
        order.append(c)
        batches.append((s, port, syn_frames(p, ip, tcp)))

    lock = threading.Lock()

    def current(key):
        lst = conns.get(key)
        if not lst:
            return None
        for c in lst:
            if c["state"] != "done":
                return c
        return lst[-1]

    def seen(pk):
        if TCP not in pk:
            return
        t = pk[TCP]
        dst = pk[IPv6].dst if IPv6 in pk else pk[IP].dst
        key = (dst, t.dport)
        with lock:
            c = current(key)
            if c is None or t.sport != c["cfg"].dport:
                return
            p = c["cfg"]
            c.setdefault("answered", str(t.flags))
            flags = str(t.flags)
            if "S" in flags and "A" in flags:
                c.setdefault("synack_seq", t.seq)
                c.setdefault("synack_acked", (t.ack - c["isn"] - 1) & 0xffffffff)
            if not a.handshake:
                return
            if "S" in flags and "A" in flags and c["state"] == "syn":
                c["state"] = "sent"
                c["iss"] = t.seq
                tsecr = 0
                for k, v in t.options:
                    if k == "Timestamp":
                        tsecr = v[0]
                ip = IPv6(src=dst, dst=p.dst6) if ":" in dst else IP(src=dst, dst=p.dst)
                eth = eth_of(p)
                req = a.request.encode()
                # The handshake's ACK, then the request: as a real client sends them.
                ack = TCP(sport=c["sport"], dport=p.dport, flags="A", seq=c["isn"] + 1,
                          ack=t.seq + 1, window=502,
                          options=tcp_options(p, c["tsval"] + 1, tsecr, syn=False))
                data = TCP(sport=c["sport"], dport=p.dport, flags="PA", seq=c["isn"] + 1,
                           ack=t.seq + 1, window=502,
                           options=tcp_options(p, c["tsval"] + 1, tsecr, syn=False)) / Raw(req)
                c["req_len"] = len(req)
                sendp([eth / ip / ack, eth / ip / data], iface=a.iface)
                return
            if c["state"] == "sent":
                payload = bytes(t.payload) if t.payload else b""
                if payload.startswith(b"HTTP/1.1 429"):
                    c["outcome"] = "shed429"
                elif payload:
                    c["outcome"] = "admitted"
                    c.setdefault("status", payload.split(b"\r\n", 1)[0].decode("latin-1"))
                elif "A" in flags and t.ack == c["isn"] + 1 + c["req_len"] and \
                        "outcome" not in c:
                    c["outcome"] = "admitted"  # the server's kernel took the request
                # A batch waits past the kernel's bare ACK for the answer's status line.
                if "R" in flags or ("outcome" in c and (not a.batch or "status" in c or
                                                       c["outcome"] == "shed429")):
                    c["state"] = "done"
                    if "outcome" in c and c["outcome"] == "admitted" and "R" not in flags:
                        # Let the server's socket go: a reset from our side.
                        ip = IPv6(src=dst, dst=p.dst6) if ":" in dst else IP(src=dst, dst=p.dst)
                        eth = eth_of(p)
                        rst = TCP(sport=c["sport"], dport=p.dport, flags="R",
                                  seq=c["isn"] + 1 + c["req_len"])
                        sendp(eth / ip / rst, iface=a.iface)

    # A batch takes every frame and sorts them here: a kernel filter's "tcp" misses a reply
    # that still carries a VLAN tag after the receiving device took the outer one.
    flt = None if a.batch else f"tcp and src port {a.dport}"
    sn = AsyncSniffer(iface=a.iface, store=False, filter=flt, prn=seen)
    sn.start()
    time.sleep(0.3)
    for s, port, frames in batches:
        if a.sport and not a.batch:
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
    if not a.sport or a.batch:
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
    out = {"sent": len(batches), **total, "sources": len(by_source), "by_source": by_source}
    if a.batch:
        out["probes"] = []
        for c in order:
            r = {"name": c["cfg"].name, "src": c["src"], "dport": c["cfg"].dport,
                 "sport": c["sport"], "answered": c.get("answered"),
                 "iss": c.get("synack_seq"), "acked": c.get("synack_acked")}
            if a.handshake:
                r["outcome"] = c.get("outcome", "silent") if "iss" in c else None
                r["status"] = c.get("status")
            out["probes"].append(r)
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
