#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Upstream mode in front of a real OpenID provider nobody in this project wrote:
# node-oidc-provider (tests/lib/oidc: npm, pinned), its client_credentials token endpoint and
# its introspection behind sluiced on loopback. Checks:
#  - a token issued through sluice introspects as active, through sluice and straight at
#    the provider; a wrong client secret gets the provider's own 401 invalid_client;
#  - the provider sees X-Forwarded-For as the socket's peer (a forged one dropped), the time
#    left of the client's deadline, and no hop-by-hop header;
#  - per-tenant admission on proxied /token: a tenant flooding it is shed (429) while a
#    quiet tenant inside its reservation gets every token it asks for;
#  - with one connection to the provider and 200 requests at once under a 25 ms deadline,
#    what is still queued at its deadline is answered 429 and never reaches the provider.
# Needs node and npm, and the npm registry for the first run (the packages are installed
# under $BUILD/node/oidc); skipped with the reason when any is missing.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
gw_suite_env
command -v node >/dev/null && command -v npm >/dev/null ||
	{ echo "1..0 # SKIP node and npm are needed for node-oidc-provider"; exit 0; }

# The provider's packages, once per build directory, exactly as package-lock.json says.
NODE_DIR=$BUILD/node/oidc
if [ ! -f "$NODE_DIR/node_modules/oidc-provider/package.json" ] ||
	! cmp -s "$ROOT/tests/lib/oidc/package-lock.json" "$NODE_DIR/package-lock.json"; then
	mkdir -p "$NODE_DIR"
	cp "$ROOT/tests/lib/oidc/package.json" "$ROOT/tests/lib/oidc/package-lock.json" "$NODE_DIR/"
	if ! (cd "$NODE_DIR" && timeout 180 npm ci --no-audit --no-fund --loglevel=error) \
		>"$NODE_DIR/npm.log" 2>&1; then
		echo "1..0 # SKIP npm ci of node-oidc-provider failed (no registry?): $(tail -1 "$NODE_DIR/npm.log")"
		exit 0
	fi
fi
cp "$ROOT/tests/lib/oidc/server.js" "$NODE_DIR/server.js"

gw_suite oidc
OIDC_PID=
suite_cleanup_more() {
	[ -n "$OIDC_PID" ] && kill "$OIDC_PID" 2>/dev/null && wait "$OIDC_PID" 2>/dev/null
}

OPORT=$(free_port)
GWPORT=$(free_port)
node "$NODE_DIR/server.js" "$OPORT" "$DIR/oidc.log" >"$DIR/oidc.out" 2>&1 &
OIDC_PID=$!
for _ in $(seq 1 150); do grep -q listening "$DIR/oidc.out" 2>/dev/null && break; sleep 0.1; done
grep -q listening "$DIR/oidc.out" || { sed 's/^/# /' "$DIR/oidc.out"; echo "Bail out! the provider did not start"; exit 1; }

cat >"$DIR/gw.conf" <<EOF
tenants = (
  { name = "quiet"; hosts = ["quiet.test"]; reservation = 300.0; },
  { name = "noisy"; hosts = ["noisy.test"]; reservation = 50.0; }
);
routes = (
  { name = "token"; method = "POST"; path = "/token"; cpu = 20.0; },
  { name = "introspect"; method = "POST"; path = "/token/introspection"; cpu = 10.0; }
);
gateway: {
  listen = "127.0.0.1:$GWPORT";
  upstream = { url = "http://127.0.0.1:$OPORT"; concurrency = 1; timeout_ms = 3000; };
  # the provider's time these tenants may use: 50 ms of its one connection a second, well
  # below what a token costs it at any speed this machine runs at (0.4 to 4 ms each: the
  # flooding tenant is over it either way, the quiet one's 4 a second inside its reservation)
  capacity = { cpu = 500.0; };
  queue = { default_deadline_ms = 3000; max_deadline_ms = 5000; };
  reject_floor_ms = 0;
};
daemon: { control_socket = "$DIR/ctl.sock"; };
EOF
gw_start "$DIR/gw.conf" "$DIR/sluiced.log"

cat >"$DIR/c.py" <<'PYEOF'
import base64, json, socket, sys, threading, time, urllib.parse
port = int(sys.argv[1]); cmd = sys.argv[2]
BASIC = "Authorization: Basic %s\r\n" % base64.b64encode(b"rs:rs-secret").decode()
def post(path, host, form, extra="", p=port, barrier=None):
    body = urllib.parse.urlencode(form).encode()
    s = socket.create_connection(("127.0.0.1", p), timeout=10)
    if barrier:
        barrier.wait()   # every connection open first: the requests arrive together
    try:
        conn = "" if "Connection:" in extra else "Connection: close\r\n"
        s.sendall(("POST %s HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/x-www-form-urlencoded\r\n"
                   "Content-Length: %d\r\n%s\r\n" % (path, host, extra, len(body), conn)).encode() + body)
        data = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
            h, sep, rest = data.partition(b"\r\n\r\n")
            cl = [l for l in h.split(b"\r\n") if l.lower().startswith(b"content-length:")]
            if sep and cl and len(rest) >= int(cl[0].split(b":")[1]):
                break
    except OSError as e:
        return {"status": "error", "why": str(e)}
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    try:
        st = int(head.split(b" ")[1])
    except (IndexError, ValueError):
        return {"status": "garbled"}
    try:
        b = json.loads(body)
    except ValueError:
        b = body.decode("utf-8", "replace")[:200]
    return {"status": st, "body": b}
if cmd == "token":         # token HOST [SECRET [EXTRA]]
    sec = sys.argv[4] if len(sys.argv) > 4 else "rs-secret"
    extra = "Authorization: Basic %s\r\n" % base64.b64encode(("rs:" + sec).encode()).decode()
    if len(sys.argv) > 5:
        extra += sys.argv[5].replace("|", "\r\n") + "\r\n"
    print(json.dumps(post("/token", sys.argv[3], {"grant_type": "client_credentials"}, extra)))
elif cmd == "introspect":  # introspect HOST TOKEN [PORT]
    p = int(sys.argv[5]) if len(sys.argv) > 5 else port
    print(json.dumps(post("/token/introspection", sys.argv[3], {"token": sys.argv[4]}, BASIC, p)))
elif cmd == "burst":       # burst HOST N DEADLINE_MS: N requests sent together
    n = int(sys.argv[4]); out = [None] * n
    bar = threading.Barrier(n)
    def one(i):
        out[i] = post("/token", sys.argv[3], {"grant_type": "client_credentials"},
                      BASIC + "X-Request-Deadline-Ms: %s\r\n" % sys.argv[5], barrier=bar)["status"]
    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    [t.start() for t in ts]; [t.join() for t in ts]
    print(json.dumps(out))
elif cmd == "pace":        # pace HOST RATE SECONDS THREADS
    host, rate, secs, nth = sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
    counts = {}; lock = threading.Lock(); stop = time.monotonic() + secs
    def worker():
        nxt = time.monotonic()
        while time.monotonic() < stop:
            r = post("/token", host, {"grant_type": "client_credentials"}, BASIC)
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
seen() { wc -l <"$DIR/oidc.log"; }

# ---- tokens through sluice ------------------------------------------------------------------
# The provider's first tokens are its slowest (node compiles the code, the provider makes
# its keys): on a slow machine one took more than the quiet tenant's whole second of
# reservation (300 units), its measured time was charged, and the introspection right
# after it was shed (429) although nothing was wrong. Warm it up straight, not through
# sluice: the checks below are about sluice's steady state.
for _ in 1 2 3; do $PY "$DIR/c.py" "$OPORT" token quiet.test >/dev/null; done
r=$(c token quiet.test)
expect_eq "client_credentials through sluice: the provider's 200" "$(jget "$r" status)" 200
tok=$(jget "$r" body.access_token)
expect_ge "  ... with an access token" "${#tok}" 20
expect_eq "  ... a Bearer token" "$(jget "$r" body.token_type)" Bearer
r=$(c introspect quiet.test "$tok")
expect_eq "introspected through sluice: active" "$(jget "$r" body.active)" true
expect_eq "  ... issued to client rs" "$(jget "$r" body.client_id)" rs
r=$(c introspect quiet.test "$tok" "$OPORT")
expect_eq "  ... and straight at the provider too (one token store behind both)" "$(jget "$r" body.active)" true
r=$(c introspect quiet.test "not-a-token")
expect_eq "a token the provider never issued: active false" "$(jget "$r" body.active)" false
r=$(c token quiet.test wrong-secret)
expect_eq "a wrong client secret: the provider's 401" "$(jget "$r" status)" 401
expect_eq "  ... its own invalid_client" "$(jget "$r" body.error)" invalid_client

r=$(c token quiet.test rs-secret "X-Forwarded-For: 6.6.6.6|Connection: X-Hop-Secret|X-Hop-Secret: leak|TE: trailers|X-Request-Deadline-Ms: 2000")
expect_eq "a token request with forged and hop-by-hop headers: 200" "$(jget "$r" status)" 200
l=$(grep '"/token"' "$DIR/oidc.log" | tail -1)
tap_diag "the provider saw: $l"
expect_eq "  ... the provider saw X-Forwarded-For = the peer (6.6.6.6 dropped)" "$(jget "$l" xff)" 127.0.0.1
expect_eq "  ... no X-Hop-Secret (named by Connection), no TE" "$(jget "$l" hop) $(jget "$l" te)" " "
expect_eq "  ... the client's Host" "$(jget "$l" host)" quiet.test
dl=$(jget "$l" deadline)
expect_ge "  ... X-Request-Deadline-Ms: what was left of 2000 ms ($dl)" "$dl" 1500
expect_le "  ... no more" "$dl" 2000

# ---- admission on proxied traffic --------------------------------------------------------------
c pace noisy.test 0 4 12 >"$DIR/noisy" &
NOISY=$!
sleep 0.5
q=$(c pace quiet.test 4 3 1)
wait "$NOISY"
tap_diag "noisy (12 clients, as fast as answered, 4 s): $(cat "$DIR/noisy"); quiet (4/s, 3 s): $q"
expect_eq "the quiet tenant got a token for every request" \
	"$($PY -c 'import json,sys; d=json.loads(sys.argv[1]); print(sum(v for k,v in d.items() if k!="200"))' "$q")" 0
expect_ge "  ... at least 8 of them" "$(jget "$q" 200)" 8
expect_ge "the noisy tenant was shed (429)" "$(jget "$(cat "$DIR/noisy")" 429)" 1

# ---- the deadline ------------------------------------------------------------------------------------
n0=$(seen)
res=$(c burst quiet.test 200 25)
n1=$(seen)
got=$($PY -c 'import json,sys; r=json.loads(sys.argv[1]); print(sum(1 for x in r if x==200), sum(1 for x in r if x==429), sum(1 for x in r if x==504), len(r))' "$res")
set -- $got
tap_diag "200 at once, 25 ms deadline, one connection: 200 x $1, 429 x $2, 504 x $3; the provider saw $((n1 - n0))"
expect_ge "some were served" "$1" 1
expect_ge "some were still queued at their deadline: 429" "$2" 1
expect_eq "every answer 200, 429 or 504" "$(($1 + $2 + $3))" "$4"
expect_eq "the provider saw exactly the ones sent (200 or 504), none that expired in the queue" \
	"$((n1 - n0))" "$(($1 + $3))"

tap_done
