#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Real clients at a steady rate: connections through the kernel's own TCP (so every one
completes a real handshake and proves its source) from addresses the caller's namespace owns,
each sending one HTTP request and reading the answer. Prints one JSON object:

  {"attempted": N, "ok": 200s, "shed429": the edge's 429s, "other": other answers,
   "timeout": no answer in --timeout, "error": refused/reset, "seconds": S, "rate": R}

Sources take turns (--src repeatable). Each connection ends with a reset (SO_LINGER 0) once
its answer's status line is read, so that it leaves no TIME_WAIT on the server: a later
connection that happens to reuse the port would otherwise land on it and be the kernel's to
reopen, not a first request the edge reads (--fin: close normally, the server closing first
as HTTP/1.0 servers do). --mark PATH also counts, under "marked", the connections begun
once PATH exists: a test creates it when the phase it asserts on starts (a flood, say), so
that what the clients saw before (a lease still moving toward them) is reported apart.
Used by tests/net/test_leases.sh.
"""
import argparse
import json
import os
import socket
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor


def one(src, dst, port, request, timeout, fin):
    fam = socket.AF_INET6 if ":" in dst else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if not fin:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    try:
        s.bind((src, 0))
        s.connect((dst, port))
        s.sendall(request)
        data = b""
        while b"\r\n" not in data:
            d = s.recv(4096)
            if not d:
                break
            data += d
        line = data.split(b"\r\n", 1)[0].split(b" ")
        code = line[1] if len(line) > 1 else b""
        return {b"200": "ok", b"429": "shed429"}.get(code, "other")
    except socket.timeout:
        return "timeout"
    except OSError:
        return "error"
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dst", required=True)
    ap.add_argument("--port", type=int, default=80)
    ap.add_argument("--src", action="append", required=True)
    ap.add_argument("--rate", type=float, required=True, help="connections per second")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--timeout", type=float, default=2.0)
    ap.add_argument("--path", default="/")
    ap.add_argument("--host", default="")
    ap.add_argument("--fin", action="store_true", help="close with FIN, not a reset")
    ap.add_argument("--mark", default="", help="also count connections begun once this file exists")
    a = ap.parse_args()
    host = a.host or (f"[{a.dst}]" if ":" in a.dst else a.dst)
    request = (f"GET {a.path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").encode()

    counts = {"attempted": 0, "ok": 0, "shed429": 0, "other": 0, "timeout": 0, "error": 0}
    marked = dict(counts)
    lock = threading.Lock()

    def run(src, after_mark):
        r = one(src, a.dst, a.port, request, a.timeout, a.fin)
        with lock:
            counts[r] += 1
            if after_mark:
                marked[r] += 1

    start = time.monotonic()
    n = 0
    with ThreadPoolExecutor(max_workers=128) as pool:
        while True:
            now = time.monotonic() - start
            if now >= a.seconds:
                break
            due = n / a.rate
            if due > now:
                time.sleep(min(due - now, 0.01))
                continue
            after = bool(a.mark) and os.path.exists(a.mark)
            pool.submit(run, a.src[n % len(a.src)], after)
            n += 1
            marked["attempted"] += after
        secs = time.monotonic() - start  # the pacing's, not the last answer's
    counts["attempted"] = n
    out = {**counts, "seconds": round(secs, 3), "rate": round(n / secs, 1)}
    if a.mark:
        out["marked"] = marked
    print(json.dumps(out))


if __name__ == "__main__":
    main()
