#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Send spoofed TCP SYNs at a steady rate for a while, each from a random address inside
--src-net (a /32 or /128 is one address: a victim's own), out of one interface of the test's
own topology. Prints {"sent": N, "seconds": S, "rate": R}.

Frames are built ahead (scapy builds a few thousand a second at most) and sent from a pool
of --pool distinct ones, each with its own source address, port and ISN.

Run with /usr/bin/python3 (Debian's scapy is installed for the system interpreter only).
"""
import argparse
import ipaddress
import json
import random
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
    a = ap.parse_args()

    rng = random.Random(a.seed)
    net = ipaddress.ip_network(a.src_net, strict=False)
    six = net.version == 6

    def addr():
        if net.num_addresses <= 2:
            return str(net.network_address)
        return str(net.network_address + rng.randrange(1, net.num_addresses - 1))

    pool = []
    for _ in range(a.pool):
        ip = IPv6(src=addr(), dst=a.dst) if six else IP(src=addr(), dst=a.dst)
        pool.append(bytes(Ether(dst=a.dmac) / ip /
                          TCP(sport=rng.randrange(1024, 65535), dport=a.dport, flags="S",
                              seq=rng.randrange(0, 2**32), options=[("MSS", 1460)])))
    sock = conf.L2socket(iface=a.iface)
    start = time.monotonic()
    sent = 0
    while True:
        now = time.monotonic() - start
        if now >= a.seconds:
            break
        due = sent / a.rate
        if due > now:
            time.sleep(min(due - now, 0.01))
            continue
        sock.send(pool[sent % len(pool)])
        sent += 1
    sock.close()
    secs = time.monotonic() - start
    print(json.dumps({"sent": sent, "seconds": round(secs, 3), "rate": round(sent / secs, 1)}))


if __name__ == "__main__":
    main()
