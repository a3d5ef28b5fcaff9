#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Send TCP SYNs from chosen (spoofed) source addresses out of one interface and count the
replies (SYN-ACK or RST) that come back for each, so a test can tell passed SYNs from shed
ones by what the server actually answered. Prints one JSON object.

Run with /usr/bin/python3: Debian's scapy is installed for the system interpreter only.

Sources:
  --src ADDR            one address (repeatable)
  --rotate PREFIX:LEN   random addresses inside PREFIX, each in a different /LEN
                        (e.g. 2001:db8:2a00::/48:64 = a new /64 per SYN; 2001:db8::/64:128
                        = a new address per SYN inside one /64)
  --count N             SYNs per --src, or in total for --rotate
"""
import argparse
import ipaddress
import json
import random
import sys
import time

from scapy.all import AsyncSniffer, Ether, IP, IPv6, TCP, conf, sendp  # noqa: E402

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
    a = ap.parse_args()
    rng = random.Random(a.seed)

    sources = []
    for s in a.src:
        sources += [s] * a.count
    if a.rotate:
        sources += rotate(a.rotate, a.count, rng)

    frames = []
    sport = {}
    for i, s in enumerate(sources):
        port = 20000 + i % 40000
        sport[(s, port)] = s
        if ":" in s:
            ip = IPv6(src=s, dst=a.dst6)
        else:
            ip = IP(src=s, dst=a.dst)
        frames.append(Ether(dst=a.dmac) / ip / TCP(sport=port, dport=a.dport, flags="S",
                                                   seq=rng.getrandbits(32)))

    replies = {}

    def seen(p):
        dst = p[IPv6].dst if IPv6 in p else p[IP].dst
        replies.setdefault((dst, p[TCP].dport), str(p[TCP].flags))

    sn = AsyncSniffer(iface=a.iface, store=False, filter=f"tcp and src port {a.dport}", prn=seen)
    sn.start()
    time.sleep(0.3)
    if a.gap > 0:
        for f in frames:
            sendp(f, iface=a.iface)
            time.sleep(a.gap)
    else:
        sendp(frames, iface=a.iface)
    time.sleep(a.wait)
    sn.stop()

    by_source = {}
    for (s, port), src in sport.items():
        d = by_source.setdefault(src, {"sent": 0, "answered": 0})
        d["sent"] += 1
        if (s, port) in replies:
            d["answered"] += 1
    json.dump({
        "sent": len(frames),
        "answered": sum(d["answered"] for d in by_source.values()),
        "sources": len(by_source),
        "by_source": by_source,
    }, sys.stdout)
    print()


if __name__ == "__main__":
    main()
