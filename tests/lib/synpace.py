#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Send spoofed TCP SYNs at a steady rate for a while, each from a random address inside
--src-net (a /32 or /128 is one address: a victim's own), out of one interface of the test's
own topology. Prints {"sent": N, "seconds": S, "rate": R}.

Frames are built ahead and sent from a pool
of --pool distinct ones, each with its own source address, port and ISN. --ready names a
file made once the first frame is out; SIGTERM ends the flood early (the report still prints).

Run with /usr/bin/python3 (Debian's scapy is installed for the system interpreter only).
"""
import argparse
import ipaddress
import json
import random
import signal
import struct
import time

from scapy.all import Ether, IP, IPv6, TCP, conf  # noqa: E402

conf.verb = 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iface", required=True)
    ap.add_argument("--dmac", required=True)
    ap.add_argument("--dst", required=True, help="destination (IPv4 or IPv6)")
    ap.add_argument("--dport", type=int, default=80)
    ap.add_argument("--src-net", required=True)
    ap.add_argument("--rate", type=float, required=True, help="SYNs per second")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--pool", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ready", help="create this file once the first frame is sent")
    a = ap.parse_args()
    # SIGTERM ends the flood early and still prints what was sent.
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))

    rng = random.Random(a.seed)
    net = ipaddress.ip_network(a.src_net, strict=False)
    six = net.version == 6

    def addr():
        if net.num_addresses <= 2:
            return str(net.network_address)
        return str(net.network_address + rng.randrange(1, net.num_addresses - 1))

    # scapy builds one frame; the rest are that frame with the source address, port and ISN
    # patched in and both checksums recomputed (scapy builds a few hundred frames a second
    # on a slow machine, which was most of a short flood's time).
    ip = IPv6(src=addr(), dst=a.dst) if six else IP(src=addr(), dst=a.dst)
    tmpl = bytes(Ether(dst=a.dmac) / ip /
                 TCP(sport=1024, dport=a.dport, flags="S", seq=0, options=[("MSS", 1460)]))
    l3 = 14
    l4 = l3 + (40 if six else 20)
    alen = 16 if six else 4
    aoff = l3 + (8 if six else 12)
    dst = ipaddress.ip_address(a.dst).packed
    tcplen = len(tmpl) - l4

    def csum(b):
        if len(b) & 1:
            b += b"\0"
        t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
        while t >> 16:
            t = (t & 0xFFFF) + (t >> 16)
        return ~t & 0xFFFF

    pool = []
    for _ in range(a.pool):
        f = bytearray(tmpl)
        src = ipaddress.ip_address(addr()).packed
        f[aoff:aoff + alen] = src
        struct.pack_into("!H", f, l4, rng.randrange(1024, 65535))
        struct.pack_into("!I", f, l4 + 4, rng.randrange(0, 2**32))
        if not six:
            struct.pack_into("!H", f, l3 + 10, 0)
            struct.pack_into("!H", f, l3 + 10, csum(bytes(f[l3:l4])))
        struct.pack_into("!H", f, l4 + 16, 0)
        pseudo = (src + dst + struct.pack("!IxxxB", tcplen, 6) if six else
                  src + dst + struct.pack("!xBH", 6, tcplen))
        struct.pack_into("!H", f, l4 + 16, csum(pseudo + bytes(f[l4:])))
        pool.append(bytes(f))
    sock = conf.L2socket(iface=a.iface)
    start = time.monotonic()
    sent = 0
    while True:
        now = time.monotonic() - start
        if now >= a.seconds or stop:
            break
        due = sent / a.rate
        if due > now:
            time.sleep(min(due - now, 0.01))
            continue
        sock.send(pool[sent % len(pool)])
        sent += 1
        if sent == 1 and a.ready:
            open(a.ready, "w").close()
    sock.close()
    secs = time.monotonic() - start
    print(json.dumps({"sent": sent, "seconds": round(secs, 3), "rate": round(sent / secs, 1)}))


if __name__ == "__main__":
    main()
