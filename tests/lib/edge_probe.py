#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Complete TCP handshakes from chosen (spoofed) source addresses out of one interface, send
an HTTP request on each, and say what became of every connection. Prints one JSON object:
{"sent", "answered", "admitted", "shed429", "silent", "reset", "sources", "by_source"}.

  answered  the SYN got a SYN-ACK (or a RST)
  admitted  the server answered the request with data that is not the edge's 429, or its
            kernel acknowledged the request (the connection is then reset from our side)
  shed429   the edge answered the request with its 429
  reset     the connection was reset after the request
  silent    a SYN-ACK, then nothing (a drop port's shed)

The same job as synprobe.py --handshake, written for exact counts on a busy machine:
synprobe.py answers SYN-ACKs from its sniffer thread, one new socket per send, and stops a
fixed --wait after its last SYN, so under load its last connections can end undecided. Here
one loop answers from one packet socket, sends an unanswered request again as a client's
TCP would (--rto, doubling, --retries times: a listener whose accept queue was full drops it),
and ends when every connection is decided, or when nothing has arrived or been sent again for
--quiet seconds while some still wait (those are silent, or their SYN went unanswered);
--timeout caps it all. Run with /usr/bin/python3 (Debian's scapy).

Sources:
  --src ADDR            one address (repeatable)
  --rotate PREFIX:LEN   random addresses inside PREFIX, each in a different /LEN
  --count N             connections per --src, or in total for --rotate
  --one-by-one          each connection decided (or quiet) before the next SYN
  --gap S               seconds between SYNs (after --one-by-one's wait; answering all
                        the while)
"""
import argparse
import ipaddress
import json
import random
import select
import socket
import sys
import time

from scapy.all import Ether, IP, IPv6, Raw, TCP, conf  # noqa: E402

conf.verb = 0
ETH_P_ALL = 3
PACKET_OUTGOING = 4


def rotate(spec, n, rng):
    prefix, _, length = spec.rpartition(":")
    net = ipaddress.ip_network(prefix, strict=True)
    length = int(length)
    if not net.prefixlen <= length <= net.max_prefixlen:
        sys.exit(f"--rotate {spec}: /{length} must lie within {net}")
    if 2 ** (length - net.prefixlen) < n:
        sys.exit(f"--rotate {spec}: fewer than {n} /{length}s in {net}")
    seen, out = set(), []
    while len(out) < n:
        sub = rng.getrandbits(length - net.prefixlen) if length > net.prefixlen else 0
        if sub in seen:
            continue
        seen.add(sub)
        host = rng.getrandbits(net.max_prefixlen - length) if length < net.max_prefixlen else 0
        addr = int(net.network_address) | (sub << (net.max_prefixlen - length)) | host
        out.append(str(ipaddress.ip_address(addr)))
    return out


class Conn:
    def __init__(self, src, sport, isn):
        self.src, self.sport, self.isn = src, sport, isn
        self.state = "syn"      # syn -> sent (request out) -> done
        self.answered = False
        self.synack = False
        self.outcome = None
        self.req_len = 0
        self.ack = 0            # our ack number: their ISN + 1
        self.sent_at = 0.0      # when the request last went out
        self.rto = 0.0
        self.retx = 0


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
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gap", type=float, default=0.0)
    ap.add_argument("--one-by-one", action="store_true")
    ap.add_argument("--quiet", type=float, default=0.5)
    ap.add_argument("--rto", type=float, default=0.2, help="first retransmission timeout")
    ap.add_argument("--retries", type=int, default=3, help="request retransmissions")
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--request", default="GET / HTTP/1.1\r\nHost: probe.example\r\n\r\n")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    req = a.request.encode()

    sources = []
    for s in a.src:
        sources += [s] * a.count
    if a.rotate:
        sources += rotate(a.rotate, a.count, rng)
    base = rng.randrange(20000, 40000)
    conns, order = {}, []
    for i, s in enumerate(sources):
        c = Conn(s, base + i, rng.getrandbits(32))
        conns[(s, c.sport)] = c
        order.append(c)

    def ip_of(src):
        return IPv6(src=src, dst=a.dst6) if ":" in src else IP(src=src, dst=a.dst)

    def frame(c, **tcp):
        return Ether(dst=a.dmac) / ip_of(c.src) / TCP(sport=c.sport, dport=a.dport, **tcp)

    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind((a.iface, 0))

    def send(f):
        sock.send(bytes(f))

    def send_request(c):
        send(frame(c, flags="PA", seq=c.isn + 1, ack=c.ack, window=502) / Raw(req))
        c.sent_at = time.monotonic()

    def retransmit(now):
        """Send again the requests that had no answer for their RTO (doubling each time, as
        a real client would: a listener whose accept queue was full dropped the first).
        Returns when the next one is due (or None) and whether any went out."""
        nxt, sent = None, False
        for c in order:
            if c.state != "sent" or c.retx >= a.retries:
                continue
            if c.sent_at + c.rto <= now:
                send_request(c)
                c.retx += 1
                c.rto *= 2
                sent = True
            due = c.sent_at + c.rto
            nxt = due if nxt is None else min(nxt, due)
        return nxt, sent

    def handle(data):
        """One frame seen on the interface; True when it moved a connection on."""
        p = Ether(data)
        if TCP not in p or p[TCP].sport != a.dport:
            return False
        dst = p[IPv6].dst if IPv6 in p else (p[IP].dst if IP in p else None)
        c = conns.get((dst, p[TCP].dport))
        if c is None or c.state == "done":
            return False
        t, flags = p[TCP], str(p[TCP].flags)
        c.answered = True
        if "R" in flags:
            if c.state == "sent":
                c.outcome = "reset"
            c.state = "done"
            return True
        if "S" in flags and "A" in flags:
            if c.state != "syn":
                return False  # a retransmitted SYN-ACK: our answer is out already
            c.state = "sent"
            c.synack = True
            c.req_len = len(req)
            c.ack = (t.seq + 1) & 0xffffffff
            send(frame(c, flags="A", seq=c.isn + 1, ack=c.ack, window=502))
            send_request(c)
            c.rto = a.rto
            return True
        if c.state != "sent":
            return False
        payload = bytes(t.payload) if t.payload else b""
        if payload.startswith(b"HTTP/1.1 429"):
            c.outcome = "shed429"
        elif payload or ("A" in flags and t.ack == (c.isn + 1 + c.req_len) & 0xffffffff):
            c.outcome = "admitted"
            # Let the server's socket go.
            send(frame(c, flags="R", seq=c.isn + 1 + c.req_len))
        else:
            return False
        c.state = "done"
        return True

    deadline = time.monotonic() + a.timeout

    def pump(wait_for, until=None):
        """Answer what arrives until the connections in @wait_for are done, nothing came for
        --quiet seconds, or (with @until) that moment has passed."""
        last = time.monotonic()
        while True:
            now = time.monotonic()
            nxt, sent = retransmit(now)
            if sent:
                last = now
            if until is None:
                if all(c.state == "done" for c in wait_for) or now - last >= a.quiet:
                    return
                left = a.quiet - (now - last)
            else:
                if now >= until:
                    return
                left = until - now
            if now >= deadline:
                return
            if nxt is not None:
                left = min(left, nxt - now)
            r, _, _ = select.select([sock], [], [], max(0.0, min(left, deadline - now)))
            if not r:
                continue
            data, addr = sock.recvfrom(65535)
            if addr[2] == PACKET_OUTGOING:
                continue
            if handle(data):
                last = time.monotonic()

    syns = [bytes(frame(c, flags="S", seq=c.isn, window=64240, options=[("MSS", 1460)]))
            for c in order]
    for c, syn in zip(order, syns):
        sock.send(syn)
        if a.one_by_one:
            pump([c])
        if a.gap > 0:
            pump([], until=time.monotonic() + a.gap)
    pump(order)
    sock.close()

    by_source = {}
    total = {"answered": 0, "admitted": 0, "shed429": 0, "silent": 0, "reset": 0}
    for c in order:
        d = by_source.setdefault(c.src, {"sent": 0, "answered": 0, "admitted": 0,
                                         "shed429": 0, "silent": 0, "reset": 0})
        d["sent"] += 1
        if c.answered:
            d["answered"] += 1
            total["answered"] += 1
        if c.synack:
            o = c.outcome or "silent"
            d[o] += 1
            total[o] += 1
    json.dump({"sent": len(order), **total, "sources": len(by_source),
               "by_source": by_source}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
