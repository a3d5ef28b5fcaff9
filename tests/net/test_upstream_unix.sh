#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Upstream mode over Unix sockets (issue 15, item 1): the gateway in front of nginx listening
# on a Unix socket only (auth_basic against a SHA-512-crypt file, a password verified per
# request), and in front of an upstream this test plays on another Unix socket, which answers
# in the shapes an attacker who owns (or sits in front of) the upstream would try. Checks:
#  - --check-config takes unix:/absolute/path and refuses a relative one with file:line and
#    the reason; the start log names the socket;
#  - through the socket: nginx's 200 for the right password, its 401 and WWW-Authenticate for
#    a wrong one, the forwarding headers as over TCP (X-Forwarded-For the socket's peer, the
#    forged one dropped; X-Forwarded-Proto; the client's Host; the deadline);
#  - keep-alive: 30 forwards over the upstream's 2 slots open at most 2 connections;
#  - a chunked answer reaches the client whole; an HTTP/1.0 answer delimited by its close too;
#  - an answer with bytes after it (a second, unasked answer: response smuggling) is
#    answered, and the smuggled one never reaches the next client, whose own answer comes
#    on a fresh connection; two Content-Lengths, obs-fold and garbage are 502 once each,
#    counted, and the gateway answers on; so are a CR in the reason phrase (the field it
#    would inject never reaches the client) and 101 fields; a field that a second
#    Connection field names is not passed on, nor a client's field that its second
#    Connection field names; a client's field with a bare CR, a space
#    before the colon or in its name, or a control character is a 400, never forwarded;
#  - a socket path that does not exist, and a socket file nobody listens on: 429 with
#    Retry-After (a capacity event), counted as down, logged;
#  - nginx stopped mid-run: logins are shed (429), never hung; nginx started again: logins
#    are 200 again after down_ms, not a 502 from a connection nginx closed when it stopped.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
. "$HERE/../lib/nginx.sh"
gw_suite upx nginx crypt
BAD_PID=
suite_cleanup_more() {
	[ -n "$BAD_PID" ] && kill "$BAD_PID" 2>/dev/null
	sleep 0.2
}

free_ports GWPORT MPORT
IDP="$DIR/ng/idp.sock"
BAD="$DIR/bad.sock"
STALE="$DIR/stale.sock"

# ---- nginx on Unix sockets only ------------------------------------------------------------------
mkdir -p "$DIR/ng"
chmod 755 "$DIR"
nginx_htpasswd "$DIR/ng/htpasswd" 50000 alice:pw-alice bob:pw-bob
nginx_conf "$DIR/ng" <<EOF
  log_format fwd '\$request_method \$uri xff=\$http_x_forwarded_for dl=\$http_x_request_deadline_ms '
                 'proto=\$http_x_forwarded_proto host=\$host status=\$status user=\$remote_user';
  server {
    listen unix:$IDP;
    access_log $DIR/ng/logs/access.log fwd;
    location = /login {
      auth_basic "idp";
      auth_basic_user_file $DIR/ng/htpasswd;
      add_header X-Idp "nginx-unix" always;
      proxy_set_header X-User \$remote_user;
      proxy_pass http://unix:$DIR/ng/inner.sock:/ok;
    }
    location = /token/validate { default_type application/json; return 200 '{"active":true}'; }
  }
  server {
    listen unix:$DIR/ng/inner.sock;
    location = /ok { default_type application/json; return 200 '{"signed_in":"\$http_x_user"}'; }
  }
EOF
ng_start() { # nginx_start waits for TCP ports: here, for its sockets
	rm -f "$IDP" "$DIR/ng/inner.sock"
	nginx_start "$DIR/ng"
	for _ in $(seq 1 50); do [ -S "$IDP" ] && [ -S "$DIR/ng/inner.sock" ] && break; sleep 0.1; done
}
ng_start

# ---- the upstream this test plays ------------------------------------------------------------------
cat >"$DIR/bad.py" <<'PYEOF'
import os, socket, sys, threading, time
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(64)
ANSWERS = {
    b"/chunked": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
                 b"6\r\nhello \r\n5;ext=1\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n",
    b"/smuggle": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
                 b"HTTP/1.1 200 OK\r\nX-Smuggled: yes\r\nContent-Length: 7\r\n\r\nstolen!",
    b"/plain": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nplain",
    b"/twolen": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 4\r\n\r\nhello",
    b"/fold": b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 2\r\n\r\nok",
    b"/garbage": b"HELLO THERE\r\n\r\n",
    b"/reasoncr": b"HTTP/1.1 200 OK\rX-Injected: yes\r\nContent-Length: 2\r\n\r\nok",
    b"/conn2": b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nX-Internal: secret\r\n"
               b"Connection: X-Internal\r\nX-Public: yes\r\nContent-Length: 2\r\n\r\nok",
    b"/manyfields": b"HTTP/1.1 200 OK\r\n" + b"".join(b"F%d: v\r\n" % i for i in range(101))
                    + b"Content-Length: 2\r\n\r\nok",
}
conns = [0]
def serve(c):
    conns[0] += 1
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(4096)
                if not d:
                    return
                buf += d
            head, _, buf = buf.partition(b"\r\n\r\n")
            path = head.split(b" ")[1]
            if path == b"/http10":
                c.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nto the close")
                return
            if path == b"/slow":
                time.sleep(1.0)
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nslow")
                continue
            if path == b"/echo": # the request's head as it came, escaped
                body = repr(head).encode()
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
                continue
            if path == b"/conns":
                body = str(conns[0]).encode()
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
                continue
            c.sendall(ANSWERS.get(path, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"))
    except OSError:
        pass
    finally:
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PYEOF
$PY "$DIR/bad.py" "$BAD" &
BAD_PID=$!
# a socket file nobody listens on any more
$PY -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$STALE"
for _ in $(seq 1 50); do [ -S "$BAD" ] && break; sleep 0.1; done

# ---- the gateway ------------------------------------------------------------------------------------
write_conf() { # write_conf FILE IDP-URL
	cat >"$1" <<EOF
tenants = ( { name = "quiet"; hosts = ["quiet.test"]; reservation = 1500.0; } );
routes = (
  { name = "login"; method = "POST"; path = "/login"; cpu = 40.0; },
  { name = "validate"; method = "GET"; path = "/token/validate"; cpu = 1.0; },
  { name = "chunked"; method = "GET"; path = "/chunked"; cpu = 1.0; upstream = "unix:$BAD"; },
  { name = "http10"; method = "GET"; path = "/http10"; cpu = 1.0; upstream = "unix:$BAD"; },
  { name = "smuggle"; method = "GET"; path = "/smuggle"; cpu = 1.0; upstream = "unix:$BAD"; },
  { name = "plain"; method = "GET"; path = "/plain"; cpu = 1.0; upstream = "unix:$BAD"; },
  { name = "echo"; method = "GET"; path = "/echo"; cpu = 1.0; upstream = "unix:$BAD"; },
  { name = "conns"; method = "GET"; path = "/conns"; cpu = 1.0; upstream = "unix:$BAD"; },
  { name = "slow"; method = "GET"; path = "/slow"; cpu = 1.0; upstream = "unix:$BAD"; },
  { name = "twolen"; method = "GET"; path = "/twolen"; cpu = 1.0; upstream = "unix:$BAD"; },
  { name = "fold"; method = "GET"; path = "/fold"; cpu = 1.0; upstream = "unix:$BAD"; },
  { name = "garbage"; method = "GET"; path = "/garbage"; cpu = 1.0; upstream = "unix:$BAD"; },
  { name = "reasoncr"; method = "GET"; path = "/reasoncr"; cpu = 1.0; upstream = "unix:$BAD"; },
  { name = "conn2"; method = "GET"; path = "/conn2"; cpu = 1.0; upstream = "unix:$BAD"; },
  { name = "manyfields"; method = "GET"; path = "/manyfields"; cpu = 1.0; upstream = "unix:$BAD"; },
  { name = "missing"; method = "GET"; path = "/missing"; cpu = 1.0; upstream = "unix:$DIR/nobody.sock"; },
  { name = "stale"; method = "GET"; path = "/stale"; cpu = 1.0; upstream = "unix:$STALE"; }
);
gateway: {
  listen = "127.0.0.1:$GWPORT";
  upstream = { url = "$2"; concurrency = 2; timeout_ms = 3000; max_response = 65536;
               down_ms = 500; };
  capacity = { cpu = 4000.0; };
  queue = { target_wait_ms = 2000; default_deadline_ms = 3000; max_deadline_ms = 5000; };
  reject_floor_ms = 0;
};
daemon: { control_socket = "$DIR/ctl.sock"; metrics_listen = "127.0.0.1:$MPORT"; };
EOF
}

write_conf "$DIR/rel.conf" "unix:run/idp.sock"
out=$("$BUILD/sluiced" --check-config -c "$DIR/rel.conf" 2>&1)
expect_match "a relative unix: path is refused with file:line and why" "$out" \
	"rel.conf:[0-9]*: gateway.upstream.url: 'unix:run/idp.sock' needs an absolute socket path"
write_conf "$DIR/gw.conf" "unix:$IDP"
"$BUILD/sluiced" --check-config -c "$DIR/gw.conf" >"$DIR/check.out" 2>&1
expect_eq "unix:/absolute/path passes --check-config" "$?" 0
gw_start "$DIR/gw.conf" "$DIR/sluiced.log"
expect_match "the start log names the socket" "$(cat "$DIR/sluiced.log")" \
	"upstream unix:$IDP .Unix socket $IDP.: 2 connections"

cat >"$DIR/c.py" <<'PYEOF'
import base64, json, socket, sys
port = int(sys.argv[1]); cmd = sys.argv[2]
def req(method, path, host, extra="", n=1):
    """n requests on one keep-alive connection; the last one's answer, and every byte read."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    out = []; raw = b""
    try:
        for i in range(n):
            conn = "Connection: close\r\n" if i == n - 1 else ""
            s.sendall(("%s %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: 0\r\n%s\r\n"
                       % (method, path, host, extra, conn)).encode())
            data = b""
            while True:
                d = s.recv(65536)
                if not d:
                    break
                data += d
                head, sep, rest = data.partition(b"\r\n\r\n")
                if sep:
                    cl = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
                    if cl and len(rest) >= int(cl[0].split(b":")[1]):
                        break
            raw += data
            head, _, body = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            try:
                st = int(lines[0].split(" ")[1])
            except (IndexError, ValueError):
                out.append({"status": "garbled"}); continue
            h = {}
            for l in lines[1:]:
                k, _, v = l.partition(":")
                h.setdefault(k.strip().lower(), v.strip())
            out.append({"status": st, "headers": h, "body": body.decode("utf-8", "replace")[:200]})
    except socket.timeout:
        out.append({"status": "timeout"})
    finally:
        s.close()
    r = out[-1]
    r["raw"] = raw.decode("latin-1")
    return r
def basic(u, p):
    return "Authorization: Basic %s\r\n" % base64.b64encode(("%s:%s" % (u, p)).encode()).decode()
if cmd == "login":      # login HOST USER PASS [EXTRA-HEADERS]
    extra = basic(sys.argv[4], sys.argv[5]) + (sys.argv[6].replace("|", "\r\n") + "\r\n" if len(sys.argv) > 6 else "")
    print(json.dumps(req("POST", "/login", sys.argv[3], extra)))
elif cmd == "get":      # get HOST PATH [N]
    print(json.dumps(req("GET", sys.argv[4], sys.argv[3], "", int(sys.argv[5]) if len(sys.argv) > 5 else 1)))
PYEOF
c() { $PY "$DIR/c.py" "$GWPORT" "$@"; }
metric() { gw_metric "$@"; } # metric NAME LABELS...: the value of the first sample with every label
alog() { cat "$DIR/ng/logs/access.log" 2>/dev/null; }
res() { metric sluice_gateway_upstream_requests_total "unix:$1\"" "result=\"$2\""; }

# ---- nginx through its socket -----------------------------------------------------------------------
r=$(c login quiet.test alice pw-alice)
expect_eq "right password through a Unix socket: nginx's 200" "$(jget "$r" status)" 200
expect_eq "  ... nginx's body" "$(jget "$r" body)" '{"signed_in":"alice"}'
expect_eq "  ... and its header" "$(jget "$r" headers.x-idp)" nginx-unix
r=$(c login quiet.test alice wrong)
expect_eq "wrong password: nginx's 401" "$(jget "$r" status)" 401
expect_match "  ... with its WWW-Authenticate" "$(jget "$r" headers.www-authenticate)" 'Basic realm="idp"'
r=$(c login quiet.test bob pw-bob "X-Forwarded-For: 6.6.6.6|X-Request-Deadline-Ms: 2000")
expect_eq "a login with a forged X-Forwarded-For: 200" "$(jget "$r" status)" 200
l=$(alog | grep "user=bob" | tail -1)
tap_diag "nginx saw: $l"
expect_match "  ... nginx saw the socket's peer only, proto http, the client's Host" "$l" \
	"xff=127.0.0.1 dl=[0-9]* proto=http host=quiet.test"
dl=$(sed -n 's/.* dl=\([0-9]*\) .*/\1/p' <<<"$l")
expect_ge "  ... and what was left of the 2000 ms deadline (got $dl)" "$dl" 1500

c0=$(metric sluice_gateway_upstream_connects_total "unix:$IDP\"")
for _ in $(seq 1 3); do c get quiet.test /token/validate 10 >/dev/null; done
c1=$(metric sluice_gateway_upstream_connects_total "unix:$IDP\"")
tap_diag "connections to nginx: $c0 before 30 forwards, $c1 after"
expect_le "keep-alive: 30 forwards over 2 slots opened at most 2 connections in all" "$c1" 2
expect_eq "  ... and all 30 were nginx's 200 (32 with the two logins before)" "$(res "$IDP" 2xx)" 32

# ---- answers as the wire can deliver them -----------------------------------------------------------
r=$(c get quiet.test /chunked)
expect_eq "a chunked answer: 200" "$(jget "$r" status)" 200
expect_eq "  ... its chunks joined" "$(jget "$r" body)" "hello world"
expect_eq "  ... the trailer is not passed as a header" "$(jget "$r" headers.x-trailer)" ""
r=$(c get quiet.test /http10)
expect_eq "an HTTP/1.0 answer delimited by its close: 200" "$(jget "$r" status)" 200
expect_eq "  ... its body whole" "$(jget "$r" body)" "to the close"

# ---- an upstream that tries to smuggle ------------------------------------------------------------
n0=$(c get quiet.test /conns | $PY -c 'import json,sys; print(json.load(sys.stdin)["body"])')
r=$(c get quiet.test /smuggle)
expect_eq "an answer followed by a second, unasked one: the first is answered" "$(jget "$r" body)" hello
r=$(c get quiet.test /plain 4)
expect_eq "  ... the next clients get their own answers" "$(jget "$r" body)" plain
expect_no_match() { if grep -q -- "$3" <<<"$2"; then tap_not_ok "$1"; tap_diag "found '$3'"; else tap_ok "$1"; fi; }
expect_no_match "  ... and never the smuggled one (X-Smuggled, 'stolen!')" "$(jget "$r" raw)" "stolen\|X-Smuggled"
n1=$(c get quiet.test /conns | $PY -c 'import json,sys; print(json.load(sys.stdin)["body"])')
tap_diag "connections the played upstream accepted: $n0 before, $n1 after"
expect_ge "  ... the connection it came on was dropped: the next forward came on a fresh one" \
	"$((n1 - n0))" 1
for p in twolen fold garbage; do
	r=$(c get quiet.test /$p)
	expect_eq "upstream answers $p: 502" "$(jget "$r" status)" 502
done
expect_eq "  ... counted: bad_response 3" "$(res "$BAD" bad_response)" 3
r=$(c get quiet.test /reasoncr)
expect_eq "a CR in the reason phrase (a field the client would read): 502" "$(jget "$r" status)" 502
expect_no_match "  ... and the client never sees the injected field" "$(jget "$r" raw)" "X-Injected"
r=$(c get quiet.test /manyfields)
expect_eq "an answer with 101 fields: 502" "$(jget "$r" status)" 502
expect_eq "  ... counted: bad_response 4, too_big 1" \
	"$(res "$BAD" bad_response) $(res "$BAD" too_big)" "4 1"
r=$(c get quiet.test /conn2)
expect_eq "an answer with two Connection fields: 200" "$(jget "$r" status) $(jget "$r" body)" "200 ok"
expect_eq "  ... the field the second one names is not passed on, the others are" \
	"$(jget "$r" headers.x-internal)/$(jget "$r" headers.x-public)" "/yes"
r=$(c login quiet.test alice pw-alice)
expect_eq "  ... and logins through nginx still work" "$(jget "$r" status)" 200
# The request side: a client field the upstream could read otherwise than the gateway (a bare
# CR, a space before the colon or in the name, a control character) is never forwarded.
raw_get() { # raw_get FIELD: GET /echo with FIELD (Python escapes), the status and the body
	$PY - "$GWPORT" "$1" <<'PYEOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
h = sys.argv[2].encode().decode("unicode_escape").encode("latin-1")
try:
    s.sendall(b"GET /echo HTTP/1.1\r\nHost: quiet.test\r\n" + h + b"\r\nConnection: close\r\n\r\n")
except OSError:
    pass # answered and closed before the rest was read: the answer is still there
d = b""
while True:
    try:
        x = s.recv(65536)
    except OSError:
        break
    if not x: break
    d += x
head, _, body = d.partition(b"\r\n\r\n")
print(head.split(b" ")[1].decode(), body.decode("latin-1"))
PYEOF
}
expect_match "a client field the upstream reads as it came (the control)" "$(raw_get 'X-Ok: fine')" \
	"^200 .*X-Ok: fine"
r=$(raw_get 'X-Hop1: one\r\nConnection: X-Hop1\r\nX-Hop2: two\r\nConnection: X-Hop2\r\nX-Kept: yes')
expect_match "a client's fields named by either of two Connection fields are not forwarded" \
	"$(grep -v 'X-Hop' <<<"$r")" "^200 .*X-Kept: yes"
for h in 'X-A: a\rX-Forwarded-For: 6.6.6.6' 'Content-Length : 40' 'X B: c' 'X-C: d\x01e' 'X-D: f\x00g'; do
	r=$(raw_get "$h")
	expect_eq "  ... a client field '$h': 400, not forwarded" "${r:0:3}" 400
done

# ---- clients that leave while their forward is out -------------------------------------------
# One of the upstream's two slots carries a /slow forward whose client has gone: that slot
# stays taken until the upstream answers (it is still working on it), the next requests go
# on the other one, and the late answer, with nobody to take it, frees its slot quietly.
$PY - "$GWPORT" <<'PYEOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /slow HTTP/1.1\r\nHost: quiet.test\r\n\r\n")
time.sleep(0.2)
s.close()
time.sleep(0.1)
PYEOF
d0=$(res "$BAD" down)
r=$(c get quiet.test /plain 3)
expect_eq "after a client left mid-forward, the next ones on that upstream: 200" \
	"$(jget "$r" status) $(jget "$r" body)" "200 plain"
expect_eq "  ... nothing was counted as the upstream being down" "$(res "$BAD" down)" "$d0"
sleep 1
r=$(c get quiet.test /plain 4)
expect_eq "  ... and once the abandoned answer came back, both slots serve again" \
	"$(jget "$r" status) $(metric sluice_gateway_upstream_in_flight "unix:$BAD\"")" "200 0"

# ---- sockets nobody answers on ------------------------------------------------------------------------
r=$(c get quiet.test /missing)
expect_eq "a socket path that does not exist: 429 (a capacity event)" "$(jget "$r" status)" 429
expect_ge "  ... with Retry-After" "$(jget "$r" headers.retry-after)" 1
r=$(c get quiet.test /stale)
expect_eq "a socket file nobody listens on: 429" "$(jget "$r" status)" 429
expect_eq "  ... both counted as down" "$(res "$DIR/nobody.sock" down) $(res "$STALE" down)" "1 1"
expect_match "  ... and logged" "$(cat "$DIR/sluiced.log")" "upstream unix:$STALE refuses connections"

# ---- nginx stops, and comes back ---------------------------------------------------------------------
kill -QUIT "$NGINX_PID"
wait "$NGINX_PID" 2>/dev/null
NGINX_PIDS=()
t0=$(date +%s%N)
r1=$(c login quiet.test alice pw-alice)
r2=$(c login quiet.test alice pw-alice)
t1=$(date +%s%N)
expect_eq "nginx stopped: logins are shed, 429" "$(jget "$r1" status) $(jget "$r2" status)" "429 429"
expect_le "  ... at once, not hung (ms)" "$(((t1 - t0) / 1000000))" 2000
ng_start
sleep 0.7 # past down_ms
r=$(c login quiet.test alice pw-alice)
expect_eq "nginx back: a login is 200 again (its old connections were seen closed, no 502)" \
	"$(jget "$r" status)" 200
expect_eq "  ... no bad_response from nginx in the whole run" "$(res "$IDP" bad_response)" 0
expect_eq "the gateway is still alive" "$(jget "$(c get quiet.test /healthz)" status)" 200

tap_done
