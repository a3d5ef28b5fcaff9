#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Upstream mode (issue 15, item 1) on loopback: the gateway in front of a real server it did
# not write, nginx, which verifies a password on every request (auth_basic against a
# SHA-512-crypt file at 50,000 rounds: ~15-30 ms of CPU each, like an Argon2id), plus a
# misbehaving upstream this test runs (garbage, an early close, an oversized answer, silence)
# and a port nobody listens on. Checks:
#  - a right password gets nginx's 200, a wrong one its 401, through the gateway, with the
#    upstream's own headers; hop-by-hop headers (and the ones Connection names) never reach
#    nginx; X-Forwarded-For is the socket's peer (a forged one is dropped), X-Request-Deadline-Ms
#    what was left of the client's deadline;
#  - with one connection to nginx and 24 logins at once under a 250 ms deadline, what is still
#    queued at its deadline is answered 429 and never reaches nginx (its access log counts
#    the forwards, each with deadline left);
#  - a noisy tenant flooding its route cannot take the quiet tenant's reservation: every one
#    of the quiet tenant's logins is answered 200, the noisy one gets 429s;
#  - garbage, an early close, an oversized answer: 502 once each; silence past the deadline:
#    504; a port nobody listens on: 429 with Retry-After (a capacity event), then the
#    upstream is left alone for down_ms; each counted by reason on /metrics, and the gateway
#    keeps answering.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
. "$HERE/../lib/nginx.sh"
gw_suite up nginx crypt
BAD_PID=
suite_cleanup_more() {
	[ -n "$BAD_PID" ] && kill "$BAD_PID" 2>/dev/null
	sleep 0.2
}

free_ports GWPORT NGPORT NG2PORT BADPORT DEADPORT MPORT

# ---- nginx: the identity service, verifying a password per request --------------------------
mkdir -p "$DIR/ng"
# nginx's worker is not root: it must be able to read these.
chmod 755 "$DIR"
nginx_htpasswd "$DIR/ng/htpasswd" 50000 alice:pw-alice bob:pw-bob quinn:pw-quinn carol:pw-carol \
	dave:pw-dave
nginx_conf "$DIR/ng" 256 <<EOF
  log_format fwd '\$request_method \$uri xff=\$http_x_forwarded_for dl=\$http_x_request_deadline_ms '
                 'hop=\$http_x_hop_secret te=\$http_te proto=\$http_x_forwarded_proto host=\$host '
                 'status=\$status user=\$remote_user';
  server {
    listen 127.0.0.1:$NGPORT;
    access_log $DIR/ng/logs/access.log fwd;
    # auth_basic runs in the access phase, so the answer must come from a content handler
    # (a "return" would answer in the rewrite phase, before any password is checked).
    location = /login {
      auth_basic "idp";
      auth_basic_user_file $DIR/ng/htpasswd;
      add_header X-Idp "nginx" always;
      proxy_set_header X-User \$remote_user;
      proxy_pass http://127.0.0.1:$NG2PORT/ok;
    }
    location = /signin {
      auth_basic "idp";
      auth_basic_user_file $DIR/ng/htpasswd;
      proxy_set_header X-User \$remote_user;
      proxy_pass http://127.0.0.1:$NG2PORT/ok;
    }
    location = /token/validate { default_type application/json; return 200 '{"active":true}'; }
  }
  server {
    listen 127.0.0.1:$NG2PORT;
    location = /ok { default_type application/json; return 200 '{"signed_in":"\$http_x_user"}'; }
  }
EOF
nginx_start "$DIR/ng" "$NGPORT" "$NG2PORT"

# ---- the misbehaving upstream ------------------------------------------------------------------
cat >"$DIR/bad.py" <<'PYEOF'
import socket, sys, threading, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(64)
def serve(c):
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            d = c.recv(4096)
            if not d:
                return
            data += d
        path = data.split(b" ")[1]
        if path == b"/garbage":
            c.sendall(b"HELLO THERE\r\n\r\n")
        elif path == b"/close":
            pass
        elif path == b"/big":
            body = b"x" * (2 << 20)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        elif path == b"/silent":
            time.sleep(5)
        time.sleep(0.05)
    except OSError:
        pass
    finally:
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PYEOF
$PY "$DIR/bad.py" "$BADPORT" &
BAD_PID=$!
nginx_wait "$BAD_PID" "$BADPORT"

# ---- the gateway in upstream mode ----------------------------------------------------------------
cat >"$DIR/gw.conf" <<EOF
tenants = (
  { name = "quiet"; hosts = ["quiet.test"]; reservation = 1500.0; },
  { name = "noisy"; hosts = ["noisy.test"]; reservation = 200.0; }
);
routes = (
  { name = "login"; method = "POST"; path = "/login"; cpu = 40.0; },
  { name = "validate"; method = "GET"; path = "/token/validate"; cpu = 1.0; },
  # a sign-in route: the login counters and the stream job see it as they see /login
  { name = "signin"; method = "POST"; path = "/signin"; cpu = 40.0;
    login = { account = "basic"; success = [200]; failure = [401]; }; },
  { name = "garbage"; method = "GET"; path = "/garbage"; cpu = 1.0; upstream = "http://127.0.0.1:$BADPORT"; },
  { name = "close"; method = "GET"; path = "/close"; cpu = 1.0; upstream = "http://127.0.0.1:$BADPORT"; },
  { name = "big"; method = "GET"; path = "/big"; cpu = 1.0; upstream = "http://127.0.0.1:$BADPORT"; },
  { name = "silent"; method = "GET"; path = "/silent"; cpu = 1.0; upstream = "http://127.0.0.1:$BADPORT"; },
  { name = "dead"; method = "GET"; path = "/dead"; cpu = 1.0; upstream = "http://127.0.0.1:$DEADPORT"; }
);
gateway: {
  listen = "127.0.0.1:$GWPORT";
  upstream = { url = "http://127.0.0.1:$NGPORT"; concurrency = 1; timeout_ms = 3000;
               max_response = 65536; down_ms = 1000; };
  # The budget the operator gives this upstream: 2,000 units (0.2 s of its one connection)
  # a second; measured upstream time is what a forward costs (1 unit = 100 us).
  capacity = { cpu = 2000.0; };
  queue = { target_wait_ms = 2000; lifo_after_ms = 2000; codel_interval_ms = 2000;
            default_deadline_ms = 3000; max_deadline_ms = 5000; };
  reject_floor_ms = 0;
};
daemon: { control_socket = "$DIR/ctl.sock"; metrics_listen = "127.0.0.1:$MPORT"; };
EOF
gw_start "$DIR/gw.conf" "$DIR/sluiced.log"

cat >"$DIR/c.py" <<'PYEOF'
import base64, json, socket, sys, threading, time
port = int(sys.argv[1]); cmd = sys.argv[2]
def req(method, path, host, extra="", body=b"", timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        conn = "" if "Connection:" in extra else "Connection: close\r\n"
        s.sendall(("%s %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %d\r\n%s\r\n"
                   % (method, path, host, extra, len(body), conn)).encode() + body)
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
    except socket.timeout:
        return {"status": "timeout"}
    except OSError as e:
        return {"status": "error", "why": str(e)}
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        st = int(lines[0].split(" ")[1])
    except (IndexError, ValueError):
        return {"status": "garbled", "raw": head[:80].decode("latin-1")}
    h = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        h.setdefault(k.strip().lower(), v.strip())
    return {"status": st, "headers": h, "body": body.decode("utf-8", "replace")[:200]}
def basic(u, p):
    return "Authorization: Basic %s\r\n" % base64.b64encode(("%s:%s" % (u, p)).encode()).decode()
if cmd in ("login", "signin"):  # login|signin HOST USER PASS [EXTRA-HEADERS]
    extra = basic(sys.argv[4], sys.argv[5]) + (sys.argv[6].replace("|", "\r\n") + "\r\n" if len(sys.argv) > 6 else "")
    print(json.dumps(req("POST", "/" + cmd, sys.argv[3], extra)))
elif cmd == "raw":      # raw HOST PATH EXTRA-HEADERS: a POST with just these headers
    print(json.dumps(req("POST", sys.argv[4], sys.argv[3], sys.argv[5].replace("|", "\r\n") + "\r\n" if sys.argv[5] else "")))
elif cmd == "get":      # get HOST PATH
    print(json.dumps(req("GET", sys.argv[4], sys.argv[3])))
elif cmd == "burst":    # burst HOST N DEADLINE_MS: N logins at once
    n = int(sys.argv[4]); out = [None] * n
    extra = basic("alice", "pw-alice") + "X-Request-Deadline-Ms: %s\r\n" % sys.argv[5]
    def one(i):
        out[i] = req("POST", "/login", sys.argv[3], extra)
    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    [t.start() for t in ts]; [t.join() for t in ts]
    print(json.dumps([o["status"] for o in out]))
elif cmd == "pace":     # pace HOST USER PASS RATE SECONDS THREADS: logins, counted by status
    host, u, p, rate, secs, nth = sys.argv[3], sys.argv[4], sys.argv[5], float(sys.argv[6]), float(sys.argv[7]), int(sys.argv[8])
    counts = {}; lock = threading.Lock(); stop = time.monotonic() + secs
    def worker():
        nxt = time.monotonic()
        while time.monotonic() < stop:
            r = req("POST", "/login", host, basic(u, p))
            with lock:
                counts[str(r["status"])] = counts.get(str(r["status"]), 0) + 1
            if rate > 0:
                nxt += nth / rate
                time.sleep(max(0, nxt - time.monotonic()))
    ts = [threading.Thread(target=worker) for _ in range(nth)]
    [t.start() for t in ts]; [t.join() for t in ts]
    print(json.dumps(counts))
PYEOF
c() { $PY "$DIR/c.py" "$GWPORT" "$@"; }
metric() { gw_metric "$@"; } # metric NAME LABELS...: the value of the first sample with every label
alog() { cat "$DIR/ng/logs/access.log" 2>/dev/null; }

# ---- a login through the proxy ------------------------------------------------------------------
r=$(c login quiet.test alice pw-alice)
expect_eq "right password through the gateway: nginx's 200" "$(jget "$r" status)" 200
expect_eq "  ... nginx's body" "$(jget "$r" body)" '{"signed_in":"alice"}'
expect_eq "  ... and its own header (X-Idp)" "$(jget "$r" headers.x-idp)" nginx
r=$(c login quiet.test alice wrong)
expect_eq "wrong password: nginx's 401" "$(jget "$r" status)" 401
expect_match "  ... with its WWW-Authenticate" "$(jget "$r" headers.www-authenticate)" 'Basic realm="idp"'
r=$(c login quiet.test bob pw-bob "X-Forwarded-For: 6.6.6.6|Connection: X-Hop-Secret|X-Hop-Secret: leak|TE: trailers|X-Request-Deadline-Ms: 2000")
[ "$(jget "$r" status)" = 200 ] || tap_diag "$r"
expect_eq "a login with forged and hop-by-hop headers: 200" "$(jget "$r" status)" 200
l=$(alog | grep "user=bob" | tail -1)
tap_diag "nginx saw: $l"
expect_match "  ... nginx saw X-Forwarded-For = the socket's peer only (the forged 6.6.6.6 dropped)" "$l" "xff=127.0.0.1 "
expect_match "  ... no header that Connection named (X-Hop-Secret)" "$l" "hop=- "
expect_match "  ... no TE" "$l" "te=- "
expect_match "  ... X-Forwarded-Proto http, the client's Host" "$l" "proto=http host=quiet.test"
dl=$(sed -n 's/.* dl=\([0-9]*\) .*/\1/p' <<<"$l")
expect_ge "  ... X-Request-Deadline-Ms: what was left of the client's 2000 ms (got $dl)" "$dl" 1500
expect_le "  ... and no more than it" "$dl" 2000

# ---- the deadline: queued past it never reaches the upstream -----------------------------------
n0=$(alog | wc -l)
res=$(c burst quiet.test 24 250)
n1=$(alog | wc -l)
sent=$((n1 - n0))
got=$($PY -c 'import json,sys; r=json.loads(sys.argv[1]); print(sum(1 for x in r if x==200), sum(1 for x in r if x==429), sum(1 for x in r if x==504), len(r))' "$res")
set -- $got
tap_diag "24 logins at once, 250 ms deadline, one connection to nginx: 200 x $1, 429 x $2, 504 x $3; nginx saw $sent"
expect_ge "some were served" "$1" 1
expect_ge "some were still queued at their deadline: 429" "$2" 1
expect_eq "every answer was 200, 429, or 504 (sent, then past its deadline upstream)" "$(($1 + $2 + $3))" "$4"
expect_eq "nginx saw exactly the ones sent (200 or 504): none that expired in the queue" "$sent" "$(($1 + $3))"
neg=$(alog | tail -n "$sent" | sed -n 's/.* dl=\([0-9-]*\) .*/\1/p' | awk '$1 < 1' | wc -l)
expect_eq "  ... and every one it saw still had deadline left" "$neg" 0

# ---- per-tenant admission on proxied traffic -----------------------------------------------------
# 32 clients, each sending its next login as soon as the last is answered: with nginx's one
# connection serving ~12 a second, their waits pass the 2 s CoDel target and the 3 s
# deadline, so the noisy tenant is shed. (With 12, the waits sat at 1-2 s, on the line: a
# faster forward path was enough to stop shedding them, and the check flapped.)
c pace noisy.test alice pw-alice 0 4 32 >"$DIR/noisy" &
NOISY=$!
sleep 0.5
q=$(c pace quiet.test quinn pw-quinn 4 3 1)
wait "$NOISY"
tap_diag "noisy (32 clients, as fast as answered, 4 s): $(cat "$DIR/noisy"); quiet (4/s, 3 s): $q"
expect_eq "the quiet tenant (4 logins/s, inside its reservation) got 200 for every one" \
	"$($PY -c 'import json,sys; d=json.loads(sys.argv[1]); print(sum(v for k,v in d.items() if k!="200"))' "$q")" 0
expect_ge "  ... and made at least 8" "$(jget "$q" 200)" 8
expect_ge "the noisy tenant was shed (429) while it flooded" "$(jget "$(cat "$DIR/noisy")" 429)" 1
# What the forwards cost is measured upstream time (1 unit = 100 us): each of the quiet
# tenant's 12 logins took nginx's SHA-512-crypt (tens of ms), so hundreds of units in all.
qu=$(metric sluice_gateway_cost_units_total 'tenant="quiet"')
tap_diag "cost units measured: quiet $qu, noisy $(metric sluice_gateway_cost_units_total 'tenant="noisy"')"
expect_ge "each tenant's forwards are charged their measured upstream time (quiet: units > 100)" "${qu%.*}" 100
expect_ge "  ... and counted as its service time" \
	"$(metric sluice_gateway_service_seconds_count 'tenant="quiet"')" 12

# ---- a sign-in route: the login counters on the upstream's verdict ----------------------------
signins() { alog | grep -c "POST /signin"; }
for i in 1 2 3 4 5; do
	r=$(c signin quiet.test carol "wrong-$i")
	expect_eq "carol's wrong password $i: nginx's 401" "$(jget "$r" status)" 401
done
s0=$(signins)
r=$(c signin quiet.test carol pw-carol)
expect_eq "after 5 failures (login_failures' burst) her right password from the same address: 429" \
	"$(jget "$r" status)" 429
expect_ge "  ... with Retry-After" "$(jget "$r" headers.retry-after)" 1
r=$(c signin quiet.test CaRoL pw-carol)
expect_eq "  ... and as CaRoL: one budget whatever the case" "$(jget "$r" status)" 429
expect_eq "  ... neither reached nginx" "$(signins)" "$s0"
r=$(c signin quiet.test alice pw-alice)
expect_eq "another account from the same address: nginx's 200 (its own budget)" "$(jget "$r" status)" 200
for i in 1 2 3; do c signin quiet.test dave "no-$i" >/dev/null; done
r=$(c signin quiet.test dave pw-dave)
expect_eq "dave: 3 wrong then right: 200" "$(jget "$r" status)" 200
for i in 1 2 3 4 5; do r=$(c signin quiet.test dave "again-$i"); done
expect_eq "  ... his success cleared the pair: 5 more wrong ones still reach nginx (401)" "$(jget "$r" status)" 401
s0=$(signins)
r=$(c raw quiet.test /signin "")
expect_eq "a sign-in without Authorization: 400, the counters cannot be asked" "$(jget "$r" status)" 400
r=$(c raw quiet.test /signin "Authorization: Basic !!!notbase64")
expect_eq "  ... nor with a Basic that is not base64 user:password" "$(jget "$r" status)" 400
r=$(c raw quiet.test /signin "Authorization: Basic $(printf 'bad name:x' | base64)")
expect_eq "  ... nor with an account name outside the rule" "$(jget "$r" status)" 400
expect_eq "  ... none of them forwarded" "$(signins)" "$s0"
expect_eq "metrics: the tenant's sign-ins by outcome (ok 2, failed 13, throttled 2)" \
	"$(metric sluice_gateway_logins_total 'tenant="quiet"' 'outcome="ok"') $(metric sluice_gateway_logins_total 'tenant="quiet"' 'outcome="failed"') $(metric sluice_gateway_logins_total 'tenant="quiet"' 'outcome="throttled"')" \
	"2 13 2"

# ---- a misbehaving upstream --------------------------------------------------------------------
for p in garbage close big; do
	r=$(c get quiet.test /$p)
	expect_eq "upstream answers $p: 502" "$(jget "$r" status)" 502
done
expect_eq "  ... counted: bad_response 2 (garbage, early close)" \
	"$(metric sluice_gateway_upstream_requests_total "127.0.0.1:$BADPORT" 'result="bad_response"')" 2
expect_eq "  ... too_big 1" "$(metric sluice_gateway_upstream_requests_total "127.0.0.1:$BADPORT" 'result="too_big"')" 1
t0=$(date +%s%N)
r=$($PY "$DIR/c.py" "$GWPORT" get quiet.test /silent)
t1=$(date +%s%N)
expect_eq "an upstream that says nothing: 504" "$(jget "$r" status)" 504
expect_le "  ... at the client's 3 s deadline, not later (ms)" "$(((t1 - t0) / 1000000))" 3600
expect_eq "  ... counted: timeout 1" "$(metric sluice_gateway_upstream_requests_total "127.0.0.1:$BADPORT" 'result="timeout"')" 1
r=$(c get quiet.test /dead)
expect_eq "an upstream nobody listens on: 429 (a capacity event)" "$(jget "$r" status)" 429
expect_ge "  ... with Retry-After" "$(jget "$r" headers.retry-after)" 1
r=$(c get quiet.test /dead)
expect_eq "  ... and within down_ms the next is shed without a try" "$(jget "$r" status)" 429
expect_eq "  ... counted: down 1, shed_down 1" \
	"$(metric sluice_gateway_upstream_requests_total "127.0.0.1:$DEADPORT" 'result="down"') $(metric sluice_gateway_upstream_requests_total "127.0.0.1:$DEADPORT" 'result="shed_down"')" "1 1"
expect_match "  ... and logged" "$(cat "$DIR/sluiced.log")" "upstream http://127.0.0.1:$DEADPORT refuses connections"
r=$(c login quiet.test alice pw-alice)
expect_eq "after all that, a login through nginx still works" "$(jget "$r" status)" 200
expect_eq "the gateway is still alive" "$(jget "$(c get quiet.test /healthz)" status)" 200

# ---- config errors ---------------------------------------------------------------------------------
sed 's|url = "http://127.0.0.1:[0-9]*"|url = "http://idp.invalid:80"|' "$DIR/gw.conf" >"$DIR/bad.conf"
out=$("$BUILD/sluiced" --check-config -c "$DIR/bad.conf" 2>&1)
expect_match "an upstream name that does not resolve is refused at load with file:line" \
	"$out" "bad.conf:[0-9]*: gateway.upstream.url: 'http://idp.invalid:80': idp.invalid does not resolve"

tap_done
