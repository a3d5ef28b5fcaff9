#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""An office signing in: paced password logins from a few NAT addresses, as browsers send them.

Each login is a new TCP connection from one of the --src addresses in turn (what a NAT
egress carries: every browser opens its own), one `POST /login` for a different account
(--account % n, from --first), the right password, `Connection: close`. A connection per
login is what makes the edge see every one: on the stateless front XDP reads only a
connection's first request. The pace is held by the clock (login n is due at n / rate), not
by the answers, so a slow answer never slows the office down.

Prints one JSON object: how many were sent, their statuses, which 429s came from the edge
(XDP's fixed one: `Content-Length: 0`, no body) and which from the gateway (its JSON body),
connections that failed or timed out, latencies, and how late the pacer ran.
Used by tests/net/test_office.sh and scripts/demo.sh (the Manila office).
"""
import argparse
import json
import socket
import threading
import time


def login(args, src, account, out, lock):
    body = "username=%s&password=%s" % (account, args.password)
    req = ("POST /login HTTP/1.1\r\nHost: %s\r\nUser-Agent: office-logins\r\n"
           "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n"
           "Connection: close\r\n\r\n%s" % (args.host, len(body), body)).encode()
    t0 = time.monotonic()
    res = {"src": src, "status": 0}
    s = socket.socket(socket.AF_INET6 if ":" in args.dst else socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.settimeout(args.timeout)
        s.bind((src, 0))
        s.connect((args.dst, args.port))
        s.sendall(req)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            head, sep, rest = data.partition(b"\r\n\r\n")
            if sep:
                cl = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n")[1:]
                      if l.lower().startswith(b"content-length:")]
                if cl and len(rest) >= int(cl[0]):
                    break
        head, _, rest = data.partition(b"\r\n\r\n")
        if data:
            res["status"] = int(head.split(b" ", 2)[1])
            res["body"] = rest[:200].decode("utf-8", "replace")
        else:
            res["error"] = "closed without an answer"
    except OSError as e:
        res["error"] = "%s: %s" % (type(e).__name__, e)
    finally:
        s.close()
    res["ms"] = (time.monotonic() - t0) * 1000.0
    with lock:
        out.append(res)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dst", required=True)
    ap.add_argument("--port", type=int, default=80)
    ap.add_argument("--host", required=True, help="the Host header (the tenant)")
    ap.add_argument("--src", action="append", required=True, help="a NAT egress address")
    ap.add_argument("--rate", type=float, required=True, help="logins per second in all")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--account", default="staff%05d", help="account name format")
    ap.add_argument("--first", type=int, default=0, help="number of the first account")
    ap.add_argument("--password", required=True)
    ap.add_argument("--timeout", type=float, default=10.0)
    args = ap.parse_args()

    out, lock, threads = [], threading.Lock(), []
    total = int(round(args.rate * args.seconds))
    late, last = 0.0, 0.0
    start = time.monotonic()
    for n in range(total):
        due = start + n / args.rate
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        else:
            late = max(late, now - due)
        t = threading.Thread(target=login, args=(args, args.src[n % len(args.src)],
                                                 args.account % (args.first + n), out, lock))
        t.start()
        threads.append(t)
        last = time.monotonic() - start
    for t in threads:
        t.join()
    wall = time.monotonic() - start

    status = {}
    for r in out:
        status[str(r["status"])] = status.get(str(r["status"]), 0) + 1
    r429 = [r for r in out if r["status"] == 429]
    edge = sum(1 for r in r429 if not r.get("body"))
    ms = sorted(r["ms"] for r in out if r["status"])
    pct = lambda p: round(ms[min(len(ms) - 1, int(p * len(ms)))], 1) if ms else 0
    by_src = {}
    for r in out:
        b = by_src.setdefault(r["src"], {})
        b[str(r["status"])] = b.get(str(r["status"]), 0) + 1
    errors = sorted({r["error"] for r in out if "error" in r})
    print(json.dumps({
        "sent": total, "answered": sum(1 for r in out if r["status"]),
        "ok": status.get("200", 0), "status": status,
        "edge_429": edge, "gateway_429": len(r429) - edge,
        "failed": sum(1 for r in out if not r["status"]), "errors": errors[:5],
        "p50_ms": pct(0.5), "p99_ms": pct(0.99), "max_ms": round(ms[-1], 1) if ms else 0,
        "pacer_late_ms": round(late * 1000.0, 1), "wall_s": round(wall, 2),
        "rate": round((total - 1) / last, 2) if last > 0 else 0.0, "by_src": by_src,
    }))


if __name__ == "__main__":
    main()
