#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""What the edge says, segment by segment, to a connection that got its cookie SYN-ACK (a SYN
to a stateless port, or a shed SYN on a SYN-front `reply` port). From one (spoofed) source,
three connections on three source ports, each started with a SYN and its cookie SYN-ACK:

  shed     the bare handshake ACK (expected: no answer), then the first request (expected
           from a shed source: one segment, FIN|PSH|ACK, the 95-byte 429, seq = cookie + 1,
           ack = the end of the request), then the client's FIN (expected: its ACK, seq past
           the 429 and our FIN)
  fin      a FIN straight after the handshake, no request (expected: RST|ACK, seq = the
           FIN's ack, ack = its seq + 1)
  forged   the first request with one MAC bit of the cookie flipped (expected: silence)

Prints one JSON object: per connection, whether the SYN-ACK came, and every segment that came
back after it (flags, seq and ack relative to what RFC 793 asks, payload). Used by
tests/net/test_replies.sh; run with /usr/bin/python3 (Debian's scapy).
"""
import argparse
import json
import threading
import time

from scapy.all import AsyncSniffer, Ether, IP, IPv6, TCP, conf, sendp, srp1  # noqa: E402

conf.verb = 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iface", required=True)
    ap.add_argument("--dmac", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--dport", type=int, default=80)
    ap.add_argument("--sport", type=int, default=35000, help="first of three source ports")
    ap.add_argument("--wait", type=float, default=0.5, help="seconds to wait for answers")
    a = ap.parse_args()

    def ip():
        return IPv6(src=a.src, dst=a.dst) if ":" in a.src else IP(src=a.src, dst=a.dst)

    eth = Ether(dst=a.dmac)
    got = {}
    lock = threading.Lock()

    def seen(p):
        if TCP not in p:
            return
        t = p[TCP]
        with lock:
            got.setdefault(t.dport, []).append(
                {"flags": str(t.flags), "seq": t.seq, "ack": t.ack,
                 "payload": bytes(t.payload).decode("latin-1") if t.payload else ""})

    def handshake(sport, isn):
        ans = srp1(eth / ip() / TCP(sport=sport, dport=a.dport, flags="S", seq=isn,
                                    options=[("MSS", 1460)]),
                   iface=a.iface, timeout=2)
        if ans is None or TCP not in ans or str(ans[TCP].flags) != "SA":
            return None
        return ans[TCP].seq

    def after(sport, n0):
        """Segments to sport that came after the first n0 of them."""
        time.sleep(a.wait)
        with lock:
            return got.get(sport, [])[n0:]

    def count(sport):
        with lock:
            return len(got.get(sport, []))

    def rel(segs, seq0, ack0):
        return [{"flags": s["flags"], "seq": (s["seq"] - seq0) & 0xffffffff,
                 "ack": (s["ack"] - ack0) & 0xffffffff, "len": len(s["payload"]),
                 "payload": s["payload"]} for s in segs]

    sn = AsyncSniffer(iface=a.iface, store=False,
                      filter=f"tcp and src port {a.dport} and dst portrange "
                             f"{a.sport}-{a.sport + 2}", prn=seen)
    sn.start()
    time.sleep(0.3)
    out = {}
    req = b"GET /probe HTTP/1.1\r\nHost: probe.example\r\n\r\n"

    # shed: bare ACK, then the request, then our FIN.
    sport, isn = a.sport, 100000
    c = handshake(sport, isn)
    r = {"synack": c is not None}
    if c is not None:
        # seq/ack below are relative to cookie + 1 and isn + 1
        base = (c + 1) & 0xffffffff, isn + 1
        n0 = count(sport)
        sendp(eth / ip() / TCP(sport=sport, dport=a.dport, flags="A", seq=isn + 1, ack=c + 1),
              iface=a.iface)
        r["after_ack"] = rel(after(sport, n0), *base)
        n0 = count(sport)
        sendp(eth / ip() / TCP(sport=sport, dport=a.dport, flags="PA", seq=isn + 1,
                               ack=c + 1) / req, iface=a.iface)
        r["after_request"] = rel(after(sport, n0), *base)
        r["request_len"] = len(req)
        # Our ACK of everything, and our FIN: ack past the 429 and its FIN.
        theirs = r["after_request"]
        end = (c + 1 + (theirs[0]["len"] + 1 if theirs else 0)) & 0xffffffff
        n0 = count(sport)
        sendp(eth / ip() / TCP(sport=sport, dport=a.dport, flags="FA", seq=isn + 1 + len(req),
                               ack=end), iface=a.iface)
        r["after_fin"] = rel(after(sport, n0), *base)
    out["shed"] = r

    # fin: a FIN straight after the handshake.
    sport, isn = a.sport + 1, 200000
    c = handshake(sport, isn)
    r = {"synack": c is not None}
    if c is not None:
        n0 = count(sport)
        sendp(eth / ip() / TCP(sport=sport, dport=a.dport, flags="FA", seq=isn + 1, ack=c + 1),
              iface=a.iface)
        r["after_fin"] = rel(after(sport, n0), (c + 1) & 0xffffffff, isn + 1)
    out["fin"] = r

    # forged: the first request under a cookie with one MAC bit flipped (the marker intact).
    sport, isn = a.sport + 2, 300000
    c = handshake(sport, isn)
    r = {"synack": c is not None}
    if c is not None:
        n0 = count(sport)
        sendp(eth / ip() / TCP(sport=sport, dport=a.dport, flags="PA", seq=isn + 1,
                               ack=((c ^ 0x10) + 1) & 0xffffffff) / req, iface=a.iface)
        r["after_request"] = rel(after(sport, n0), (c + 1) & 0xffffffff, isn + 1)
    out["forged"] = r
    sn.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
