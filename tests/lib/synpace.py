#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Send TCP SYNs at a steady rate for a while, each from a random address inside --src-net,
out of one interface of the test's own topology. Prints {"sent": N, "seconds": S}.

Run with /usr/bin/python3 (Debian's scapy is installed for the system interpreter only).
"""
import argparse
import ipaddress
import json
import random
import time

from scapy.all import Ether, IP, TCP, conf  # noqa: E402

conf.verb = 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iface", required=True)
    ap.add_argument("--dmac", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--dport", type=int, default=80)
    ap.add_argument("--src-net", required=True)
    ap.add_argument("--rate", type=float, required=True, help="SYNs per second")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    rng = random.Random(a.seed)
    net = ipaddress.ip_network(a.src_net)
    sock = conf.L2socket(iface=a.iface)
    start = time.monotonic()
    sent = 0
    while True:
        now = time.monotonic() - start
        if now >= a.seconds:
            break
        due = sent / a.rate
        if due > now:
            time.sleep(due - now)
            continue
        src = str(net.network_address + rng.randrange(1, net.num_addresses - 1))
        pkt = (Ether(dst=a.dmac) / IP(src=src, dst=a.dst) /
               TCP(sport=rng.randrange(1024, 65535), dport=a.dport, flags="S",
                   seq=rng.randrange(0, 2**32)))
        sock.send(pkt)
        sent += 1
    sock.close()
    print(json.dumps({"sent": sent, "seconds": round(time.monotonic() - start, 3)}))


if __name__ == "__main__":
    main()
