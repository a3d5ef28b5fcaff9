#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Upstream mode's immediate writes (gw_write_now, docs/performance.md "Upstream mode"): the
# gateway writes a forward's request and its answer on the socket at once instead of after
# the next epoll_wait, and finishes evhttp's write itself when the socket took everything.
# What a client must still see, on loopback, with an upstream this test runs (Python,
# HTTP/1.1 keep-alive, answering each request with the SHA-256 of the body it got):
#  - an 8 MiB answer to a client that reads it slowly, through a small receive window (the
#    gateway's write is short, the rest goes the bufferevent's way): every byte, its
#    SHA-256 the upstream's;
#  - a 1 MiB request body (more than one write to the upstream): the upstream saw every
#    byte (its SHA-256 comes back);
#  - five requests pipelined in one segment on one connection: five answers, in order,
#    each the upstream's for its own request;
#  - clients that send a request and reset at once, or half-close and never read a 4 MiB
#    answer: no answer goes astray (the next client on a fresh connection gets its own),
#    and the gateway keeps answering.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
gw_suite upw
UP_PID=
suite_cleanup_more() {
	[ -n "$UP_PID" ] && kill "$UP_PID" 2>/dev/null
}

free_ports GWPORT UPPORT

cat >"$DIR/up.py" <<'PYEOF'
import hashlib, http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        q = self.path.partition("?")[2]
        size = int(q[5:]) if q.startswith("size=") else 0
        out = (b"%s\n" % self.path.encode()) + bytes((i * 7 + 3) & 0xff for i in range(size))
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(out)))
        self.send_header("X-Got-Sha256", hashlib.sha256(body).hexdigest())
        self.send_header("X-Got-Len", str(len(body)))
        self.send_header("X-Sent-Sha256", hashlib.sha256(out).hexdigest())
        self.end_headers()
        self.wfile.write(out)
    do_GET = do_POST = answer
http.server.ThreadingHTTPServer.daemon_threads = True
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PYEOF
$PY "$DIR/up.py" "$UPPORT" &
UP_PID=$!

cat >"$DIR/gw.conf" <<EOF
tenants = ( { name = "default"; reservation = 0.0; } );
routes = ( { name = "get"; method = "GET"; path = "/w"; cpu = 1.0; },
           { name = "post"; method = "POST"; path = "/w"; cpu = 1.0; } );
gateway: {
  listen = "127.0.0.1:$GWPORT";
  upstream = { url = "http://127.0.0.1:$UPPORT"; concurrency = 4; timeout_ms = 10000;
               max_response = 16777216; };
  capacity = { cpu = 1000000.0; };
  max_body = 1048576;
  queue = { default_deadline_ms = 10000; max_deadline_ms = 10000; };
  reject_floor_ms = 0;
};
counters: { login_failures = { enabled = false; }; login_successes = { enabled = false; }; };
daemon: { control_socket = "$DIR/ctl.sock"; };
EOF
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$UPPORT") 2>/dev/null && break; sleep 0.05; done
gw_start "$DIR/gw.conf" "$DIR/sluiced.log"

cat >"$DIR/c.py" <<'PYEOF'
import hashlib, json, socket, sys, time
port = int(sys.argv[1]); cmd = sys.argv[2]

def read_answer(s, buf):
    """One answer off @s (buf: what was read past the last one): (status, headers, body, rest)."""
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            raise EOFError("closed before a head")
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    h = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        h[k.strip().lower()] = v.strip()
    n = int(h.get("content-length", "0"))
    while len(rest) < n:
        d = s.recv(1 << 20)
        if not d:
            raise EOFError("closed %d bytes into a %d-byte body" % (len(rest), n))
        rest += d
    return int(lines[0].split()[1]), h, rest[:n], rest[n:]

def conn(rcvbuf=0):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    return s

def one(path, body=b"", method=None, rcvbuf=0, slow=0.0):
    s = conn(rcvbuf)
    method = method or ("POST" if body else "GET")
    s.sendall(("%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
               % (method, path, len(body))).encode() + body)
    if slow:
        time.sleep(slow)  # let the answer pile up against a full window first
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += s.recv(4096)
        chunks = [buf]
        while True:  # then read it 64 KiB at a time with pauses: many short writes
            d = s.recv(65536)
            if not d:
                break
            chunks.append(d)
            time.sleep(0.002)
        st, h, b, _ = read_answer(FakeSock(b"".join(chunks)), b"")
    else:
        st, h, b, _ = read_answer(s, b"")
    s.close()
    return st, h, b

class FakeSock:
    def __init__(self, data):
        self.d = data
    def recv(self, n):
        d, self.d = self.d[:n], self.d[n:]
        return d

out = {}
if cmd == "big":
    st, h, b = one("/w?size=8388608", rcvbuf=8192, slow=0.5)
    out = {"status": st, "len": len(b), "ok": hashlib.sha256(b).hexdigest() == h.get("x-sent-sha256")}
elif cmd == "body":
    body = bytes((i * 13 + 1) & 0xff for i in range(1048576))
    st, h, b = one("/w", body=body)
    out = {"status": st, "got_len": int(h.get("x-got-len", "-1")),
           "ok": h.get("x-got-sha256") == hashlib.sha256(body).hexdigest()}
elif cmd == "pipeline":
    s = conn()
    s.sendall(b"".join(b"GET /w?n=%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(1, 6)))
    got, buf = [], b""
    for i in range(5):
        st, h, b, buf = read_answer(s, buf)
        got.append("%d:%s" % (st, b.decode().strip()))
    s.close()
    out = {"answers": " ".join(got)}
elif cmd == "rude":
    # 30 clients that send and reset at once, 5 that half-close and never read 4 MiB.
    for i in range(30):
        s = conn()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.sendall(b"GET /w?rude=%d HTTP/1.1\r\nHost: x\r\n\r\n" % i)
        s.close()
    held = []
    for i in range(5):
        s = conn(rcvbuf=4096)
        s.sendall(b"GET /w?size=4194304 HTTP/1.1\r\nHost: x\r\n\r\n")
        s.shutdown(socket.SHUT_WR)
        held.append(s)
    time.sleep(0.5)
    st, h, b = one("/w?after=1")
    for s in held:
        s.close()
    st2, h2, b2 = one("/w?after=2")
    out = {"after": "%d:%s" % (st, b.decode().strip()), "after2": "%d:%s" % (st2, b2.decode().strip())}
print(json.dumps(out))
PYEOF

r=$($PY "$DIR/c.py" "$GWPORT" big 2>&1)
tap_diag "8 MiB answer, slow reader: $r"
expect_eq "an 8 MiB answer to a slow reader with a small window: 200" "$(jget "$r" status)" 200
expect_eq "  ... every byte (its path line and 8 MiB)" "$(jget "$r" len)" $((8388608 + 16))
expect_eq "  ... the upstream's bytes (SHA-256)" "$(jget "$r" ok)" true

r=$($PY "$DIR/c.py" "$GWPORT" body 2>&1)
tap_diag "1 MiB body: $r"
expect_eq "a 1 MiB request body forwarded: 200" "$(jget "$r" status)" 200
expect_eq "  ... the upstream got all of it" "$(jget "$r" got_len)" 1048576
expect_eq "  ... byte for byte (SHA-256)" "$(jget "$r" ok)" true

r=$($PY "$DIR/c.py" "$GWPORT" pipeline 2>&1)
tap_diag "pipelined: $r"
expect_eq "five pipelined requests on one connection: five answers in order, each its own" \
	"$(jget "$r" answers)" "200:/w?n=1 200:/w?n=2 200:/w?n=3 200:/w?n=4 200:/w?n=5"

r=$($PY "$DIR/c.py" "$GWPORT" rude 2>&1)
tap_diag "after 30 resets and 5 half-closed non-readers of 4 MiB: $r"
expect_eq "clients that reset or never read: the next client gets its own answer" \
	"$(jget "$r" after)" "200:/w?after=1"
expect_eq "  ... and so does the one after them" "$(jget "$r" after2)" "200:/w?after=2"
if kill -0 "$SLUICED_PID" 2>/dev/null; then tap_ok "sluiced is still running"; else tap_not_ok "sluiced is still running"; fi
tap_done
