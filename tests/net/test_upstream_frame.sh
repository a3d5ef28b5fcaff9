#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The wire a client sees for FORWARDED requests (routes that name an upstream), byte by byte:
# sluiced in upstream mode on loopback in front of a real nginx (and, for request bodies and
# a chunked answer full of hop-by-hop fields, a small Python upstream), driven by a raw-socket
# client that writes exact bytes and parses every answer itself (status line, fields,
# Content-Length or chunked bodies, EOF). It pins down today's framing so that a new request
# reader / answer writer for forwarded requests (coexisting with evhttp, which keeps the
# built-in endpoints) cannot change it unnoticed:
#  - pipelining: 2, then 10 forwarded GETs in one write on one connection are answered in
#    order, each with its own body; forwarded GETs pipelined with built-in /healthz
#    requests are answered in order too;
#  - a head dribbled one byte per write is answered, and the connection carries the next;
#  - HTTP/1.0 without keep-alive is answered (in HTTP/1.0, the body to the close) then
#    closed; HTTP/1.0 with "Connection: keep-alive" is answered with it and kept; HTTP/1.1
#    with "Connection: close" gets "Connection: close" and the close;
#  - HEAD: status and the GET's fields, its Content-Length too, no body bytes (the GET
#    pipelined after it parses);
#  - hop-by-hop fields (Connection and what it names, Keep-Alive, TE, Proxy-Connection) never
#    reach the upstream, a plain field does; the upstream's hop fields (Keep-Alive,
#    Transfer-Encoding, Connection and what it names, Proxy-Connection, Upgrade, Trailer)
#    never reach the client, and the client's answer is framed by a Content-Length equal to
#    its body (a chunked upstream answer is de-chunked);
#  - a forged X-Forwarded-For (trusted_hops 0) is dropped: the upstream sees 127.0.0.1;
#  - a 3000-byte POST body, in one write or two with a pause, arrives intact (the upstream's
#    SHA-256 of it comes back); a chunked POST is refused (400, close) and never forwarded
#    (today's documented rule: the gateway reads no chunked bodies);
#  - clients that send and close (FIN or RST) at once do not hurt the gateway: a fresh
#    connection is answered, /metrics answers;
#  - garbage after a good request: the good one is answered 200, then 400 and a close;
#  - a head past gateway.max_headers: 400, then the close, and others are served;
#  - max_requests_per_connection: the last answer says Connection: close, then the close
#    (one by one, and pipelined past the cap);
#  - an absolute-form target and a query string reach the upstream as path?query, as sent;
#    an absolute-form target's authority, not a differing Host, is the Host the upstream
#    sees (RFC 9112 3.2.2; this suite found it forwarded the client's Host, now mended).
# SL_DEBUG=1 leaves the directory (configs, logs, the client's JSON) in place.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
. "$HERE/../lib/nginx.sh"
gw_suite upframe nginx py built
UP_PID=
suite_cleanup_more() {
	[ -n "$UP_PID" ] && kill "$UP_PID" 2>/dev/null && wait "$UP_PID" 2>/dev/null
}

free_ports GWPORT NGPORT PYPORT MPORT
MAXREQ=20     # gateway.max_requests_per_connection
MAXHEAD=4096  # gateway.max_headers

# ---- nginx: the upstream for GETs and HEADs ------------------------------------------------
mkdir -p "$DIR/ng/www"
chmod 755 "$DIR" "$DIR/ng/www"
# /big: 5000 bytes nobody could mistake for another answer's
$PY -c 'import sys; sys.stdout.buffer.write(bytes(48 + (i * 7 + i // 97) % 75 for i in range(5000)))' \
	>"$DIR/ng/www/big"
chmod 644 "$DIR/ng/www/big"
nginx_conf "$DIR/ng" 256 <<EOF
  log_format saw '\$request_method \$request_uri hop=\$http_x_hop_secret';
  server {
    listen 127.0.0.1:$NGPORT;
    access_log $DIR/ng/logs/access.log saw;
    default_type text/plain;
    location = /n { add_header X-N "\$arg_n" always; return 200 "n=\$arg_n\n"; }
    location = /check {
      add_header X-Check "yes" always;
      add_header Keep-Alive "timeout=99" always;
      return 200 "checked\n";
    }
    location = /big { root $DIR/ng/www; }
    location /echo {
      add_header X-Echo "1" always;
      add_header Keep-Alive "timeout=99" always;
      add_header Proxy-Connection "keep-alive" always;
      return 200 "method=[\$request_method] uri=[\$request_uri] host=[\$http_host] conn=[\$http_connection] hop=[\$http_x_hop_secret] ka=[\$http_keep_alive] te=[\$http_te] pc=[\$http_proxy_connection] normal=[\$http_x_normal] xff=[\$http_x_forwarded_for] cl=[\$content_length] tenc=[\$http_transfer_encoding]\n";
    }
  }
EOF
nginx_start "$DIR/ng" "$NGPORT"

# ---- Python: the upstream for POST bodies and a chunked answer with hop fields -------------
cat >"$DIR/up.py" <<'PYEOF'
import hashlib, http.server, sys, threading
seen = {"posts": 0}
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def out(self, code, body, fields=()):
        self.send_response(code)
        for k, v in fields:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        te = self.headers.get("Transfer-Encoding")
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        with lock:
            seen["posts"] += 1
        self.out(200, ("len=%d sha=%s cl=[%s] te=[%s]\n" % (len(body), hashlib.sha256(body).hexdigest(),
                       self.headers.get("Content-Length"), te)).encode())
    def do_GET(self):
        if self.path == "/py/stats":
            with lock:
                self.out(200, ("posts=%d\n" % seen["posts"]).encode())
        elif self.path == "/py/chunked":
            # A chunked answer wearing every hop-by-hop field an upstream may send.
            self.send_response(200)
            for k, v in (("Transfer-Encoding", "chunked"), ("Connection", "keep-alive, X-Up-Hop"),
                         ("X-Up-Hop", "leak"), ("Keep-Alive", "timeout=99"),
                         ("Proxy-Connection", "keep-alive"), ("Upgrade", "h2c"),
                         ("Trailer", "X-Tail"), ("X-Up-Normal", "kept")):
                self.send_header(k, v)
            self.end_headers()
            for c in (b"alpha-", b"beta-", b"gamma\n"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(c), c))
            self.wfile.write(b"0\r\nX-Tail: t\r\n\r\n")
        else:
            self.out(404, b"no\n")
http.server.ThreadingHTTPServer.daemon_threads = True
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PYEOF
$PY "$DIR/up.py" "$PYPORT" &
UP_PID=$!
nginx_wait "$UP_PID" "$PYPORT" || { echo "Bail out! the Python upstream did not listen"; exit 1; }

# ---- the gateway: every route forwarded (to nginx; /post and /py to Python) ---------------
cat >"$DIR/gw.conf" <<EOF
tenants = ( { name = "default"; reservation = 0.0; },
            { name = "a"; hosts = ["a.test"]; reservation = 0.0; },
            { name = "b"; hosts = ["b.test"]; reservation = 0.0; } );
routes = (
  { name = "n"; method = "GET"; path = "/n"; cpu = 1.0; },
  { name = "check"; method = "*"; path = "/check"; cpu = 1.0; },
  { name = "big"; method = "*"; path = "/big"; cpu = 1.0; },
  { name = "echo"; method = "*"; path = "/echo"; cpu = 1.0; },
  { name = "post"; method = "POST"; path = "/post"; cpu = 1.0; upstream = "http://127.0.0.1:$PYPORT"; },
  { name = "py"; method = "GET"; path = "/py"; cpu = 1.0; upstream = "http://127.0.0.1:$PYPORT"; }
);
gateway: {
  listen = "127.0.0.1:$GWPORT";
  upstream = { url = "http://127.0.0.1:$NGPORT"; concurrency = 4; timeout_ms = 5000; };
  capacity = { cpu = 1000000.0; };
  queue = { default_deadline_ms = 5000; max_deadline_ms = 10000; };
  reject_floor_ms = 0;
  max_headers = $MAXHEAD;
  max_requests_per_connection = $MAXREQ;
  request_timeout_ms = 5000;
};
counters: { login_failures = { enabled = false; }; login_successes = { enabled = false; }; };
daemon: { control_socket = "$DIR/ctl.sock"; metrics_listen = "127.0.0.1:$MPORT"; };
EOF
gw_start "$DIR/gw.conf" "$DIR/sluiced.log"

# ---- the raw client ------------------------------------------------------------------------
cat >"$DIR/c.py" <<'PYEOF'
import hashlib, json, socket, sys, time
PORT, MPORT, MAXREQ, MAXHEAD = (int(a) for a in sys.argv[1:5])
BIG = open(sys.argv[5], "rb").read()

def conn(port=PORT):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s

class Reader:
    """Answers off one socket, parsed here: nothing trusted but the bytes."""
    def __init__(self, s):
        self.s, self.buf, self.eof = s, b"", False
    def more(self):
        try:
            d = self.s.recv(65536)
        except socket.timeout:
            raise EOFError("timeout")
        except ConnectionResetError:
            d = b""
        if not d:
            self.eof = True
            raise EOFError("closed")
        self.buf += d
    def line(self):
        while b"\r\n" not in self.buf:
            self.more()
        l, _, self.buf = self.buf.partition(b"\r\n")
        return l
    def take(self, n):
        while len(self.buf) < n:
            self.more()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d
    def answer(self, head=False):
        """(status, version, [(name, value)], body, framing) of the next answer."""
        sl = self.line().decode("latin-1")
        ver, st = sl.split(" ", 2)[:2]
        fields = []
        while True:
            l = self.line()
            if not l:
                break
            k, _, v = l.decode("latin-1").partition(":")
            fields.append((k, v.strip()))
        f = {k.lower(): v for k, v in fields}
        if head or st in ("204", "304"):
            return int(st), ver, fields, b"", "none"
        if "chunked" in f.get("transfer-encoding", "").lower():
            body = b""
            while True:
                n = int(self.line().split(b";")[0], 16)
                if not n:
                    while self.line():
                        pass
                    return int(st), ver, fields, body, "chunked"
                body += self.take(n)
                self.take(2)
        if "content-length" in f:
            return int(st), ver, fields, self.take(int(f["content-length"])), "length"
        while True:  # to the close
            try:
                self.more()
            except EOFError:
                break
        body, self.buf = self.buf, b""
        return int(st), ver, fields, body, "close"
    def closed(self, wait=1.0):
        """True when the peer closes (EOF or reset) within @wait s with nothing else sent."""
        if self.buf:
            return False
        self.s.settimeout(wait)
        try:
            return self.s.recv(1) == b""
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True

def hdr(fields, name):
    """Every value of field @name, joined by "|" ("" when absent)."""
    return "|".join(v for k, v in fields if k.lower() == name.lower())

def names(fields):
    return sorted({k.lower() for k, _ in fields})

def short(a):
    st, ver, fields, body, fr = a
    return "%d:%s" % (st, body.decode("latin-1").strip())

def get(target, host="x", extra="", ver="HTTP/1.1"):
    return ("GET %s %s\r\n" % (target, ver) + ("Host: %s\r\n" % host if host else "") + extra +
            "\r\n").encode()

out = {}
def check(name):
    def wrap(fn):
        try:
            out[name] = fn()
        except Exception as e:  # the check's own field stays missing: its asserts fail
            out[name] = {"error": "%s: %s" % (type(e).__name__, e)}
        return fn
    return wrap

@check("pipe2")
def _():
    s = conn(); r = Reader(s)
    s.sendall(b"".join(get("/n?n=%d" % i) for i in (1, 2)))
    a = [r.answer() for _ in range(2)]
    res = {"answers": " ".join(short(x) for x in a),
           "conn": [hdr(x[2], "Connection") for x in a], "open": not r.closed(0.2)}
    s.close(); return res

@check("pipe10")
def _():
    s = conn(); r = Reader(s)
    s.sendall(b"".join(get("/n?n=%d" % i) for i in range(1, 11)))
    a = [r.answer() for _ in range(10)]
    res = {"answers": " ".join(short(x) for x in a),
           "xn": " ".join(hdr(x[2], "X-N") for x in a),
           "open": not r.closed(0.2)}
    s.close(); return res

@check("pipe_big")
def _():
    # /big between two small ones: a long body does not shift what follows it
    s = conn(); r = Reader(s)
    s.sendall(get("/n?n=a") + get("/big") + get("/n?n=b"))
    a1, a2, a3 = r.answer(), r.answer(), r.answer()
    res = {"first": short(a1), "big": [a2[0], len(a2[3]), a2[3] == BIG, hdr(a2[2], "Content-Length")],
           "last": short(a3)}
    s.close(); return res

@check("mix")
def _():
    s = conn(); r = Reader(s)
    s.sendall(get("/n?n=1") + get("/healthz") + get("/n?n=2") + get("/healthz"))
    a = [r.answer() for _ in range(4)]
    s.close(); return {"answers": " ".join(short(x) for x in a)}

@check("dribble")
def _():
    s = conn(); r = Reader(s)
    for b in get("/n?n=drip", extra="X-Normal: d\r\n"):
        s.send(bytes([b]))
        time.sleep(0.004)
    a1 = r.answer()
    s.sendall(get("/n?n=after"))
    a2 = r.answer()
    s.close(); return {"answers": short(a1) + " " + short(a2)}

@check("http10")
def _():
    s = conn(); r = Reader(s)
    s.sendall(get("/n?n=ten", host=None, ver="HTTP/1.0"))
    a = r.answer()
    res = {"answer": short(a), "version": a[1], "conn": hdr(a[2], "Connection"),
           "framing": a[4], "closed": r.eof or r.closed()}
    s.close(); return res

@check("http10_ka")
def _():
    s = conn(); r = Reader(s)
    s.sendall(get("/n?n=ka1", host=None, ver="HTTP/1.0", extra="Connection: keep-alive\r\n"))
    a1 = r.answer()
    res = {"first": short(a1), "version": a1[1], "conn": hdr(a1[2], "Connection"),
           "framing": a1[4], "cl": hdr(a1[2], "Content-Length"), "open": not r.closed(0.3)}
    if res["open"]:
        s.sendall(get("/n?n=ka2", host=None, ver="HTTP/1.0", extra="Connection: keep-alive\r\n"))
        a2 = r.answer()
        res["second"] = short(a2)
    s.close(); return res

@check("close11")
def _():
    s = conn(); r = Reader(s)
    s.sendall(get("/n?n=bye", extra="Connection: close\r\n") + get("/n?n=never"))
    a = r.answer()
    res = {"answer": short(a), "conn": hdr(a[2], "Connection"), "closed": r.closed()}
    s.close(); return res

@check("head")
def _():
    s = conn(); r = Reader(s)
    s.sendall(get("/big"))
    g = r.answer()
    s.sendall(b"HEAD /big HTTP/1.1\r\nHost: x\r\n\r\n" + get("/n?n=afterhead"))
    a1 = r.answer(head=True)
    # Right after the HEAD's empty line must come the next status line, nothing else.
    while len(r.buf) < 12:
        r.more()
    next12 = r.buf[:12].decode("latin-1")
    a2 = r.answer()
    res = {"status": a1[0], "cl": hdr(a1[2], "Content-Length"), "ctype": hdr(a1[2], "Content-Type"),
           "etag_as_get": hdr(a1[2], "ETag") == hdr(g[2], "ETag") != "",
           "names_less_get": sorted(set(names(g[2])) - set(names(a1[2]))),
           "names_more_get": sorted(set(names(a1[2])) - set(names(g[2]))),
           "next12": next12, "next": short(a2)}
    s.close(); return res

@check("hop")
def _():
    s = conn(); r = Reader(s)
    s.sendall(get("/echo", extra="Connection: X-Hop-Secret\r\nX-Hop-Secret: s3\r\n"
                  "Keep-Alive: 5\r\nTE: trailers\r\nProxy-Connection: x\r\nX-Normal: n1\r\n"))
    a = r.answer()
    res = {"status": a[0], "saw": a[3].decode("latin-1").strip(), "framing": a[4],
           "cl": hdr(a[2], "Content-Length"), "len": len(a[3]), "names": names(a[2]),
           "echo": hdr(a[2], "X-Echo"), "conn": hdr(a[2], "Connection")}
    s.sendall(get("/check"))
    a = r.answer()
    res["check"] = {"answer": short(a), "names": names(a[2]), "x_check": hdr(a[2], "X-Check"),
                    "cl": hdr(a[2], "Content-Length"), "len": len(a[3]), "framing": a[4]}
    s.close(); return res

@check("up_chunked")
def _():
    s = conn(); r = Reader(s)
    s.sendall(get("/py/chunked"))
    a = r.answer()
    res = {"answer": short(a), "framing": a[4], "cl": hdr(a[2], "Content-Length"), "len": len(a[3]),
           "names": names(a[2]), "normal": hdr(a[2], "X-Up-Normal"), "conn": hdr(a[2], "Connection")}
    s.sendall(get("/n?n=afterchunked"))
    res["next"] = short(r.answer())
    s.close(); return res

@check("xff")
def _():
    s = conn(); r = Reader(s)
    s.sendall(get("/echo", extra="X-Forwarded-For: 6.6.6.6\r\n"))
    a = r.answer()
    s.close(); return {"status": a[0], "saw": a[3].decode("latin-1").strip()}

def post_body(n):
    return bytes((i * 31 + 7) & 0xff for i in range(n))

@check("post")
def _():
    body = post_body(3000)
    s = conn(); r = Reader(s)
    s.sendall(b"POST /post HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
              b"Content-Length: 3000\r\n\r\n" + body + get("/n?n=afterpost"))
    a = r.answer()
    res = {"answer": short(a), "want": "200:len=3000 sha=%s cl=[3000] te=[None]" %
           hashlib.sha256(body).hexdigest(), "next": short(r.answer())}
    s.close(); return res

@check("post_split")
def _():
    body = post_body(3000)[::-1]
    s = conn(); r = Reader(s)
    s.sendall(b"POST /post HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
              b"Content-Length: 3000\r\n\r\n" + body[:1111])
    time.sleep(0.3)
    s.sendall(body[1111:])
    a = r.answer()
    s.sendall(get("/n?n=aftersplit"))
    res = {"answer": short(a), "want": "200:len=3000 sha=%s cl=[3000] te=[None]" %
           hashlib.sha256(body).hexdigest(), "next": short(r.answer())}
    s.close(); return res

def py_posts():
    s = conn(); r = Reader(s)
    s.sendall(get("/py/stats", extra="Connection: close\r\n"))
    a = r.answer(); s.close()
    return a[3].decode().strip()

@check("post_chunked")
def _():
    before = py_posts()
    s = conn(); r = Reader(s)
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in (b"a" * 1000, b"b" * 500, b"c" * 7))
    s.sendall(b"POST /post HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n" + get("/n?n=never"))
    a = r.answer()
    res = {"status": a[0], "conn": hdr(a[2], "Connection"), "closed": r.closed(),
           "posts_before": before, "posts_after": py_posts()}
    s.close(); return res

@check("rude")
def _():
    for i in range(10):
        s = conn()
        if i % 2:  # a reset rather than a FIN
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.sendall(get("/big" if i % 3 else "/n?n=rude%d" % i))
        s.close()
    time.sleep(0.3)
    s = conn(); r = Reader(s)
    s.sendall(get("/n?n=fresh", extra="Connection: close\r\n"))
    a = r.answer(); s.close()
    m = conn(MPORT); mr = Reader(m)
    m.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    ma = mr.answer(); m.close()
    return {"fresh": short(a), "metrics": ma[0],
            "metrics_has": b"sluice_gateway_requests" in ma[3] or b"sluice_gateway_" in ma[3]}

@check("garbage")
def _():
    s = conn(); r = Reader(s)
    s.sendall(get("/n?n=good") + b"\x00\x01garbage\r\n\r\n")
    a1 = r.answer()
    a2 = r.answer()
    res = {"first": short(a1), "second": a2[0], "second_conn": hdr(a2[2], "Connection"),
           "closed": r.closed()}
    s.close(); return res

@check("bighead")
def _():
    s = conn(); r = Reader(s)
    s.sendall(get("/n?n=under", extra="X-Pad: %s\r\n" % ("u" * (MAXHEAD // 2))))
    under = short(r.answer())
    s.close()
    s = conn(); r = Reader(s)
    try:
        s.sendall(get("/n?n=over", extra="X-Pad: %s\r\n" % ("o" * (MAXHEAD + 2000))))
    except (BrokenPipeError, ConnectionResetError):
        pass
    try:
        a = r.answer()
        st, conn_h = a[0], hdr(a[2], "Connection")
    except EOFError as e:
        st, conn_h = "no answer (%s)" % e, ""
    closed = r.eof or r.closed()
    s.close()
    s = conn(); r = Reader(s)
    s.sendall(get("/n?n=next", extra="Connection: close\r\n"))
    nxt = short(r.answer()); s.close()
    return {"under": under, "over": st, "over_conn": conn_h, "closed": closed, "next": nxt}

@check("cap_seq")
def _():
    s = conn(); r = Reader(s)
    got, conns = [], []
    for i in range(1, MAXREQ + 1):
        s.sendall(get("/n?n=%d" % i))
        a = r.answer()
        got.append(short(a)); conns.append(hdr(a[2], "Connection"))
    res = {"all_200": all(g == "200:n=%d" % (i + 1) for i, g in enumerate(got)),
           "closes_before_last": sum(1 for c in conns[:-1] if "close" in c.lower()),
           "last_conn": conns[-1], "closed": r.closed()}
    s.close(); return res

@check("cap_pipe")
def _():
    s = conn(); r = Reader(s)
    s.sendall(b"".join(get("/n?n=%d" % i) for i in range(1, MAXREQ + 6)))
    got = []
    last = None
    while True:
        try:
            a = r.answer()
        except EOFError:
            break
        got.append(short(a)); last = hdr(a[2], "Connection")
    res = {"count": len(got), "in_order": got == ["200:n=%d" % i for i in range(1, len(got) + 1)],
           "last_conn": last, "closed": r.eof}
    s.close(); return res

@check("target")
def _():
    res = {}
    for k, raw in (("absolute", get("http://x/echo?a=1&b=2")),
                   ("query", get("/echo?a=1&b=2")),
                   ("encoded", get("/echo/%7Euser?q=a%20b&x")),
                   ("absolute_port", get("http://x:8080/echo/abs?z=9", host="x:8080")),
                   ("absolute_other_host", get("http://a.test/echo/other", host="b.test"))):
        s = conn(); r = Reader(s)
        s.sendall(raw)
        a = r.answer(); s.close()
        body = a[3].decode("latin-1")
        res[k] = "%d %s" % (a[0], body[body.find("uri="):body.find(" conn=")])
    return res

@check("alive")
def _():
    s = conn(); r = Reader(s)
    s.sendall(get("/healthz", extra="Connection: close\r\n"))
    a = r.answer(); s.close()
    return short(a)

print(json.dumps(out))
PYEOF

r=$($PY "$DIR/c.py" "$GWPORT" "$MPORT" "$MAXREQ" "$MAXHEAD" "$DIR/ng/www/big" 2>&1)
echo "$r" >"$DIR/client.json"
case "$r" in "{"*) ;; *) tap_diag "$r"; echo "Bail out! the client did not run"; exit 1 ;; esac
j() { jget "$r" "$1"; }
# Show a check's whole JSON when one of its asserts fails.
show() { tap_diag "$1: $(j "$1")"; }
F=$TAP_FAIL

# 1. pipelining
expect_eq "two pipelined forwarded GETs in one write: both answered, in order, each its own body" \
	"$(j pipe2.answers)" "200:n=1 200:n=2"
expect_eq "  ... neither says Connection: close, and the connection stays open" \
	"$(j pipe2.conn) $(j pipe2.open)" '["", ""] true'
expect_eq "ten pipelined forwarded GETs in one write: ten answers, in order, each its own body" \
	"$(j pipe10.answers)" "$(seq -s' ' -f '200:n=%g' 1 10)"
expect_eq "  ... each with its own upstream field (X-N), and the connection stays open" \
	"$(j pipe10.xn) $(j pipe10.open)" "$(seq -s' ' 1 10) true"
expect_eq "a 5000-byte answer pipelined between two small ones: every byte, nothing shifted" \
	"$(j pipe_big.first) $(j pipe_big.big) $(j pipe_big.last)" '200:n=a [200, 5000, true, "5000"] 200:n=b'
[ "$TAP_FAIL" = "$F" ] || { show pipe2; show pipe10; show pipe_big; }; F=$TAP_FAIL

# 2. forwarded and built-in, pipelined
expect_eq "forwarded, /healthz, forwarded, /healthz pipelined: four answers in order" \
	"$(j mix.answers)" '200:n=1 200:{"status":"alive"} 200:n=2 200:{"status":"alive"}'
[ "$TAP_FAIL" = "$F" ] || show mix; F=$TAP_FAIL

# 3. a dribbled head
expect_eq "a head written one byte at a time is answered, then the next request on the connection" \
	"$(j dribble.answers)" "200:n=drip 200:n=after"
[ "$TAP_FAIL" = "$F" ] || show dribble; F=$TAP_FAIL

# 4. HTTP/1.0
# Today (evhttp's writer) an HTTP/1.0 client is answered in HTTP/1.0: without keep-alive no
# Connection field and no Content-Length, the body ends at the close; with "Connection:
# keep-alive" the answer says "Connection: keep-alive", has a Content-Length, and the
# connection is kept.
expect_eq "HTTP/1.0 without keep-alive: answered (an HTTP/1.0 status line, no Connection field, the body ends at the close)" \
	"$(j http10.answer) $(j http10.version) [$(j http10.conn)] $(j http10.framing)" "200:n=ten HTTP/1.0 [] close"
expect_eq "  ... then the gateway closes the connection" "$(j http10.closed)" true
expect_eq "HTTP/1.0 with Connection: keep-alive: answered in HTTP/1.0 with Connection: keep-alive and Content-Length" \
	"$(j http10_ka.first) $(j http10_ka.version) $(j http10_ka.conn) $(j http10_ka.framing) $(j http10_ka.cl)" \
	"200:n=ka1 HTTP/1.0 keep-alive length 6"
expect_eq "  ... and the connection carries a second request" \
	"$(j http10_ka.open) $(j http10_ka.second)" "true 200:n=ka2"
[ "$TAP_FAIL" = "$F" ] || { show http10; show http10_ka; }; F=$TAP_FAIL

# 5. Connection: close
expect_eq "HTTP/1.1 with Connection: close: answered with Connection: close" \
	"$(j close11.answer) $(j close11.conn)" "200:n=bye close"
expect_eq "  ... then closed (the request pipelined after it is never answered)" "$(j close11.closed)" true
[ "$TAP_FAIL" = "$F" ] || show close11; F=$TAP_FAIL

# 6. HEAD
expect_eq "HEAD on a forwarded route: 200 with the upstream's fields (its Content-Type, the GET's ETag)" \
	"$(j head.status) $(j head.ctype) $(j head.etag_as_get)" "200 text/plain true"
# A forwarded HEAD's answer says how long the GET's would be (RFC 9110 9.3.2): the
# upstream's Content-Length, 5000, passed on (until 2026-12-04 it was dropped as the
# gateway's to write, and evhttp wrote none without a body).
expect_eq "  ... every field the GET has, Content-Length the GET's 5000" \
	"$(j head.names_more_get) $(j head.names_less_get) cl=$(j head.cl)" '[] [] cl=5000'
expect_eq "  ... and no body: the next bytes are the pipelined GET's status line, which is answered" \
	"$(j head.next12) $(j head.next)" "HTTP/1.1 200 200:n=afterhead"
[ "$TAP_FAIL" = "$F" ] || show head; F=$TAP_FAIL

# 7. hop-by-hop fields
expect_eq "hop-by-hop fields from the client never reach the upstream; a plain one does" \
	"$(j hop.saw)" \
	"method=[GET] uri=[/echo] host=[x] conn=[] hop=[] ka=[] te=[] pc=[] normal=[n1] xff=[127.0.0.1] cl=[] tenc=[]"
expect_eq "  ... the answer is framed by a Content-Length equal to its body" \
	"$(j hop.framing) $(j hop.cl)" "length $(j hop.len)"
expect_eq "  ... the upstream's own field arrives (X-Echo), its Keep-Alive and Proxy-Connection do not" \
	"$(j hop.echo) $($PY -c 'import json,sys; n=json.loads(sys.argv[1]); print(sorted(set(n) & {"keep-alive","proxy-connection","transfer-encoding","x-hop-secret","te"}))' "$(j hop.names)")" \
	"1 []"
expect_eq "  ... a second request on the connection: the upstream's X-Check arrives, its Keep-Alive does not" \
	"$(j hop.check.answer) $(j hop.check.x_check) $($PY -c 'import json,sys; print("keep-alive" in json.loads(sys.argv[1]))' "$(j hop.check.names)") $(j hop.check.framing) $(j hop.check.cl)" \
	"200:checked yes False length 8"
expect_eq "a chunked upstream answer: de-chunked, framed by Content-Length, the upstream's plain field kept" \
	"$(j up_chunked.answer) $(j up_chunked.framing) $(j up_chunked.cl) $(j up_chunked.len) $(j up_chunked.normal)" \
	"200:alpha-beta-gamma length 17 17 kept"
expect_eq "  ... none of its hop fields reach the client (Transfer-Encoding, Keep-Alive, Connection's X-Up-Hop, Proxy-Connection, Upgrade, Trailer)" \
	"$($PY -c 'import json,sys; n=json.loads(sys.argv[1]); print(sorted(set(n) & {"keep-alive","proxy-connection","transfer-encoding","x-up-hop","upgrade","trailer","x-tail"}))' "$(j up_chunked.names)") $(j up_chunked.conn)" \
	"[] "
expect_eq "  ... and the connection carries the next request" "$(j up_chunked.next)" "200:n=afterchunked"
[ "$TAP_FAIL" = "$F" ] || { show hop; show up_chunked; }; F=$TAP_FAIL

# 8. X-Forwarded-For
expect_match "a forged X-Forwarded-For (trusted_hops 0): the upstream sees the socket's peer only" \
	"$(j xff.status) $(j xff.saw)" '^200 .* xff=\[127\.0\.0\.1\] '
[ "$TAP_FAIL" = "$F" ] || show xff; F=$TAP_FAIL

# 9. POST bodies
expect_eq "a 3000-byte POST body reaches the upstream intact (its length and SHA-256 come back)" \
	"$(j post.answer)" "$(j post.want)"
expect_eq "  ... and the GET pipelined right after the body is its own request" "$(j post.next)" "200:n=afterpost"
expect_eq "a POST body in two writes 0.3 s apart reaches the upstream intact" \
	"$(j post_split.answer)" "$(j post_split.want)"
expect_eq "  ... and the connection carries the next request" "$(j post_split.next)" "200:n=aftersplit"
# docs/gateway.md, "Strict HTTP/1.1": the gateway reads no chunked bodies ("send
# Content-Length"); a chunked request is refused before anything is forwarded.
expect_eq "a chunked POST: 400 with Connection: close, then closed (the gateway reads no chunked body)" \
	"$(j post_chunked.status) $(j post_chunked.conn) $(j post_chunked.closed)" "400 close true"
expect_eq "  ... and never forwarded (the upstream's POST count did not move)" \
	"$(j post_chunked.posts_after)" "$(j post_chunked.posts_before)"
[ "$TAP_FAIL" = "$F" ] || { show post; show post_split; show post_chunked; }; F=$TAP_FAIL

# 10. clients that go away
expect_eq "after 10 clients that sent a forwarded request and closed (FIN or RST) at once: a fresh one is answered" \
	"$(j rude.fresh)" "200:n=fresh"
expect_eq "  ... and /metrics answers" "$(j rude.metrics) $(j rude.metrics_has)" "200 true"
[ "$TAP_FAIL" = "$F" ] || show rude; F=$TAP_FAIL

# 11. garbage after a good request
expect_eq "garbage after a good request: the good one answered 200 first" "$(j garbage.first)" "200:n=good"
expect_eq "  ... then 400 with Connection: close, then closed" \
	"$(j garbage.second) $(j garbage.second_conn) $(j garbage.closed)" "400 close true"
[ "$TAP_FAIL" = "$F" ] || show garbage; F=$TAP_FAIL

# 12. a head past max_headers
expect_eq "a head of half max_headers ($MAXHEAD) is forwarded" "$(j bighead.under)" "200:n=under"
# docs/gateway.md, "Bad input": evhttp's own 400 for headers above max_headers.
expect_eq "a head past max_headers: 400 with Connection: close" \
	"$(j bighead.over) $(j bighead.over_conn)" "400 close"
expect_eq "  ... then closed" "$(j bighead.closed)" true
expect_eq "  ... and the next client is served" "$(j bighead.next)" "200:n=next"
[ "$TAP_FAIL" = "$F" ] || show bighead; F=$TAP_FAIL

# 13. max_requests_per_connection
expect_eq "$MAXREQ requests one by one on a connection (max_requests_per_connection $MAXREQ): all 200, in order" \
	"$(j cap_seq.all_200)" true
expect_eq "  ... only the last says Connection: close, then the close" \
	"$(j cap_seq.closes_before_last) $(j cap_seq.last_conn) $(j cap_seq.closed)" "0 close true"
expect_eq "$((MAXREQ + 5)) pipelined: $MAXREQ answered in order, the last with Connection: close, then closed" \
	"$(j cap_pipe.count) $(j cap_pipe.in_order) $(j cap_pipe.last_conn) $(j cap_pipe.closed)" "$MAXREQ true close true"
[ "$TAP_FAIL" = "$F" ] || { show cap_seq; show cap_pipe; }; F=$TAP_FAIL

# 14. request targets
expect_eq "an absolute-form target: the upstream sees origin-form path?query" \
	"$(j target.absolute)" "200 uri=[/echo?a=1&b=2] host=[x]"
expect_eq "  ... with a port in the authority too" "$(j target.absolute_port)" "200 uri=[/echo/abs?z=9] host=[x:8080]"
expect_eq "a query string reaches the upstream as sent" "$(j target.query)" "200 uri=[/echo?a=1&b=2] host=[x]"
expect_eq "  ... and percent-encoding is passed as sent, not decoded" \
	"$(j target.encoded)" "200 uri=[/echo/%7Euser?q=a%20b&x] host=[x]"
# An absolute-form target whose authority (a.test, tenant a) is not the Host field (b.test,
# tenant b): the gateway names the tenant by the authority (docs/gateway.md, "Tenants and
# routes": "a request is never charged to one tenant and served as another"), and a proxy
# that forwards it MUST send a Host made from the target, not the one received (RFC 9112
# 3.2.2). Until 2026-12-04 the received Host (b.test) was forwarded, so the upstream served
# tenant b a request charged to tenant a.
expect_eq "absolute-form target naming a.test with Host: b.test: the upstream sees Host a.test (RFC 9112 3.2.2)" \
	"$(j target.absolute_other_host)" "200 uri=[/echo/other] host=[a.test]"
expect_eq "  ... and it was charged to tenant a, not b" \
	"$(gw_metric sluice_gateway_requests_total 'tenant="a"') $(gw_metric sluice_gateway_requests_total 'tenant="b"')" "1 0"
[ "$TAP_FAIL" = "$F" ] || show target; F=$TAP_FAIL

expect_eq "the gateway still answers /healthz at the end" "$(j alive)" '200:{"status":"alive"}'
if kill -0 "$SLUICED_PID" 2>/dev/null; then tap_ok "sluiced is still running"; else tap_not_ok "sluiced is still running"; fi
tap_done
