#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The gateway's HTTP front against what issue 14 sent it, over real sockets on loopback (a
# raw client, tests/lib/rawhttp.py, for the malformed forms; loopback sources 127.0.X.Y for
# different clients). Two gateway-only sluiced:
#
#   X (trusted_hops = 1, we play the proxy and append its entry): X-Forwarded-For forgeries
#     cannot choose a bucket: a header past 4 KiB, 20 header lines, garbage entries; the
#     attacker's failures stay on its own address while the real clients, whose addresses
#     it forged, get their tokens and sign in; an unreadable chain is a 400 that charges
#     nothing (not the proxy's bucket, which is everybody's);
#   C (trusted_hops = 0, max_connections 64, 8 per source, 16 per /24): one source holding
#     connections with a cheap 404 every 0.5 s keeps 8 and the others are answered; sixteen
#     sources filling every slot with idle keep-alives cannot stop others from being
#     answered either (an idle one is closed to make room); a connection carries 5 requests;
#     the smuggling forms are answered 400 with Connection: close, and nothing after them is
#     answered; an absolute-form target's authority names the tenant, not Host.
# SL_DEBUG=1 leaves the directory and the daemons' logs in place.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
PY=/usr/bin/python3

if ! $PY -c 'import socket, selectors, hashlib' 2>/dev/null; then
	echo "1..0 # SKIP /usr/bin/python3 missing"
	exit 0
fi
if [ ! -x "$BUILD/sluiced" ] || [ ! -x "$BUILD/sluicectl" ]; then
	echo "Bail out! build sluiced and sluicectl first (make)"
	exit 1
fi
if ! $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.9.1", 0))' 2>/dev/null; then
	echo "1..0 # SKIP loopback sources other than 127.0.0.1 cannot be bound here"
	exit 0
fi

DIR=$(mktemp -d /tmp/sluice-front.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	if [ "${SL_DEBUG:-0}" = 1 ]; then
		echo "# SL_DEBUG=1: left $DIR" >&2
	else
		rm -rf "$DIR"
	fi
}
trap cleanup EXIT

PORT_X=$(free_port)
PORT_C=$(free_port)
hash_of() { $PY -c 'import hashlib,sys; print("blake2b256:" + hashlib.blake2b(sys.argv[1].encode(), digest_size=32).hexdigest())' "$1"; }

cat >"$DIR/x.conf" <<EOF
tenants = ( { name = "acme"; hosts = ["acme.test"]; reservation = 0.0; } );
routes = (
  { name = "login"; method = "POST"; path = "/login"; cpu = 450.0; },
  { name = "token"; method = "POST"; path = "/token"; cpu = 40.0; }
);
gateway: {
  listen = "127.0.0.1:$PORT_X";
  credentials = "$DIR/creds.txt";
  capacity = { cpu = 10000.0; };
  argon2 = { m_cost_kib = 1024; t_cost = 2; parallelism = 1; memory_budget_mib = 2; };
  trusted_hops = 1;
  max_headers = 65536;
  reject_floor_ms = 0;
  login_uniform = false;
  clients = ( { id = "ci-bot"; tenant = "acme"; secret_hash = "$(hash_of ci-bot-secret)";
                grants = ["client_credentials"]; } );
};
counters: {
  token_failures = { rate = 0.001; burst = 3.0; };
  login_failures = { rate = 0.001; burst = 3.0; };
};
stream: { enabled = false; };
daemon: { control_socket = "$DIR/x.sock"; };
EOF

cat >"$DIR/c.conf" <<EOF
tenants = (
  { name = "default"; reservation = 0.0; },
  { name = "acme"; hosts = ["acme.test"]; reservation = 0.0; },
  { name = "other"; hosts = ["other.test"]; reservation = 0.0; }
);
routes = (
  { name = "validate"; method = "GET"; path = "/token/validate"; cpu = 1.0; },
  { name = "token"; method = "POST"; path = "/token"; cpu = 40.0; }
);
gateway: {
  listen = "127.0.0.1:$PORT_C";
  capacity = { cpu = 10000.0; };
  argon2 = { m_cost_kib = 1024; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
  reject_floor_ms = 0;
  max_connections = 64;
  max_connections_per_prefix = 8;
  max_connections_per_parent = 16;
  max_requests_per_connection = 5;
  request_timeout_ms = 3000;
  clients = ( { id = "ci-bot"; tenant = "acme"; secret_hash = "$(hash_of ci-bot-secret)";
                grants = ["client_credentials"]; } );
};
stream: { enabled = false; };
daemon: { control_socket = "$DIR/c.sock"; };
EOF

ctlx() { "$BUILD/sluicectl" -c "$DIR/x.conf" "$@"; }
ctlc() { "$BUILD/sluicectl" -c "$DIR/c.conf" "$@"; }

cat >"$DIR/probe.py" <<'PYEOF'
import json, socket, sys, threading, time
sys.path.insert(0, sys.argv[1])
import rawhttp

PORT = int(sys.argv[2])
CMD = sys.argv[3]
ARGS = sys.argv[4:]
out = {}


def form_post(path, body, xff=None, host="acme.test", extra=""):
    h = "POST %s HTTP/1.1\r\nHost: %s\r\n" % (path, host)
    if xff is not None:
        for line in (xff if isinstance(xff, list) else [xff]):
            h += "X-Forwarded-For: %s\r\n" % line
    h += extra
    h += ("Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n"
          "Connection: close\r\n\r\n%s" % (len(body), body))
    return h.encode()


def status(raw):
    r = rawhttp.exchange(PORT, raw, timeout=5, want=1)
    return r["responses"][0]["status"] if r["responses"] else 0


def token(secret, xff):
    return status(form_post("/token", "grant_type=client_credentials&client_id=ci-bot&"
                            "client_secret=" + secret, xff))


PROXY = "203.0.113.9"  # what our proxy saw: the attacker's real address

if CMD == "xff":
    # The attacker forges a chain ending in a real client's address; our proxy appends the
    # attacker's own. A reader that stops at 4 KiB, or after 16 lines, would take the
    # forged one.
    real_long, real_lines, real_junk = "198.51.100.7", "198.51.100.8", "198.51.100.9"
    # The forged address ends exactly at byte 4096 of the value.
    longv = ("192.0.2.1, " * 400)[:4096 - 2 - len(real_long)] + ", " + real_long
    out["long_len"] = len(longv + ", " + PROXY)
    out["long"] = [token("guess-%d" % i, longv + ", " + PROXY) for i in range(5)]
    out["long_real"] = token("ci-bot-secret", real_long)
    # 20 lines of the forged address, then the proxy's own line.
    lines = [real_lines] * 20 + ["203.0.113.10"]
    out["lines"] = [token("guess-%d" % i, lines) for i in range(5)]
    out["lines_real"] = token("ci-bot-secret", real_lines)
    # Garbage around the forged entry: never read, the proxy's entry is.
    junk = "not-an-ip, <script>, %s, ::zz, 999.1.1.1" % real_junk
    out["junk"] = [token("guess-%d" % i, junk + ", 203.0.113.11") for i in range(5)]
    out["junk_real"] = token("ci-bot-secret", real_junk)
    # An entry in our proxy's place that is not an address: the chain cannot be read. It
    # is refused, and charged to nobody: not to the proxy's address (127.0.0.1), whose
    # pair a client that comes without the header (straight to us) is then still using.
    out["unreadable"] = [token("guess-%d" % i, real_junk + ", junk") for i in range(5)]
    out["unreadable_body"] = rawhttp.exchange(PORT, form_post("/token", "grant_type=client_"
        "credentials&client_id=ci-bot&client_secret=x", "1.2.3.4, nope"),
        want=1)["responses"][0]["body"]
    out["direct"] = token("ci-bot-secret", None)

elif CMD == "lock":
    # One address (the proxy saw 203.0.113.12) tries alice's password from 12 forged /24s,
    # each pushed where a reader keeping 16 lines would take it for the client.
    att = []
    for i in range(12):
        forged = ["10.%d.0.1" % (i + 1)] * 20 + ["203.0.113.12"]
        att.append(status(form_post("/login", "username=alice&password=wrong-%d" % i,
                                    forged)))
    out["attacker"] = att
    out["alice"] = status(form_post("/login", "username=alice&password=pw-alice",
                                    "198.51.100.20"))

elif CMD == "forms":
    GET = "GET /token/validate HTTP/1.1\r\nHost: acme.test\r\n"
    SMUGGLED = b"GET /token/validate HTTP/1.1\r\nHost: acme.test\r\n\r\n"
    post = lambda hdrs, body=b"a=b&c": (
        b"POST /token HTTP/1.1\r\nHost: acme.test\r\nContent-Type: "
        b"application/x-www-form-urlencoded\r\n" + hdrs + b"\r\n" + body + SMUGGLED)
    forms = {
        "two_content_lengths": post(b"Content-Length: 5\r\nContent-Length: %d\r\n" %
                                    (5 + len(SMUGGLED))),
        "same_content_length_twice": post(b"Content-Length: 5\r\nContent-Length: 5\r\n"),
        "content_length_plus": post(b"Content-Length: +5\r\n"),
        "content_length_list": post(b"Content-Length: 5, 5\r\n"),
        "transfer_encoding_and_length": post(b"Transfer-Encoding: chunked\r\n"
                                             b"Content-Length: 5\r\n"),
        "transfer_encoding": post(b"Transfer-Encoding: chunked\r\n", b"5\r\na=b&c\r\n0\r\n\r\n"),
        "http11_without_host": b"GET /token/validate HTTP/1.1\r\n\r\n" + SMUGGLED,
        "two_hosts": (GET + "Host: other.test\r\n\r\n").encode() + SMUGGLED,
        "obs_fold": (GET + "X-A: a\r\n folded\r\n\r\n").encode() + SMUGGLED,
        "bare_lf": b"GET /token/validate HTTP/1.1\nHost: acme.test\n\n" + SMUGGLED,
        "bare_cr": (GET + "X-A: a\rX-B: b\r\n\r\n").encode() + SMUGGLED,
        "nul_in_value": (GET + "X-Forwarded-For: 1.2.3.4\0, 5.6.7.8\r\n\r\n").encode() + SMUGGLED,
        "space_before_colon": b"GET /token/validate HTTP/1.1\r\nHost : acme.test\r\n\r\n" + SMUGGLED,
        "get_with_a_body": (GET + "Content-Length: %d\r\n\r\n" % len(SMUGGLED)).encode() + SMUGGLED,
        "leading_empty_line": b"\r\n" + SMUGGLED,
        "http09": b"GET /token/validate\r\n\r\n",
    }
    res = {}
    for name, raw in forms.items():
        r = rawhttp.exchange(PORT, raw, timeout=3)
        res[name] = {"statuses": [x["status"] for x in r["responses"]],
                     "connection": [x["headers"].get("connection", "") for x in r["responses"]],
                     "closed": r["closed"]}
    out["forms"] = res
    # A good request, then a bad one, pipelined: the first is answered, then the 400.
    r = rawhttp.exchange(PORT, (GET + "\r\n").encode() + b"GET /token/validate HTTP/1.1\n\n"
                         + SMUGGLED, timeout=3)
    out["pipelined"] = [x["status"] for x in r["responses"]] + [r["closed"]]
    # The same heads, well formed, are served: HTTP/1.0 needs no Host (the default tenant).
    ok = {
        "http11": (GET + "\r\n").encode(),
        "http10_no_host": b"GET /token/validate HTTP/1.0\r\n\r\n",
        "post_with_length": post(b"Content-Length: 5\r\n")[:-len(SMUGGLED)],
        "get_length_0": (GET + "Content-Length: 0\r\n\r\n").encode(),
    }
    out["good"] = {k: [x["status"] for x in rawhttp.exchange(PORT, v, timeout=1)["responses"]]
                   for k, v in ok.items()}

elif CMD == "authority":
    r = rawhttp.exchange(PORT, form_post("/token", "grant_type=client_credentials&"
                                         "client_id=ci-bot&client_secret=ci-bot-secret"),
                         want=1)
    tok = json.loads(r["responses"][0]["body"])["access_token"]
    def v(target, host):
        raw = ("GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n" %
               (target, host, tok)).encode()
        return rawhttp.exchange(PORT, raw, want=1)["responses"][0]["status"]
    out["origin_form"] = v("/token/validate", "acme.test")
    out["authority_acme_host_other"] = v("http://acme.test/token/validate", "other.test")
    out["authority_other_host_acme"] = v("http://other.test/token/validate", "acme.test")
    out["authority_with_port"] = v("HTTP://ACME.test:8080/token/validate", "other.test")
    out["ftp"] = v("ftp://acme.test/token/validate", "acme.test")
    out["userinfo"] = v("http://x@acme.test/token/validate", "acme.test")

elif CMD == "max_requests":
    one = b"GET /token/validate HTTP/1.1\r\nHost: acme.test\r\n\r\n"
    r = rawhttp.exchange(PORT, one * 7, timeout=3)
    out["statuses"] = [x["status"] for x in r["responses"]]
    out["last_connection"] = r["responses"][-1]["headers"].get("connection", "")
    out["first_connection"] = r["responses"][0]["headers"].get("connection", "")
    out["closed"] = r["closed"]

elif CMD == "hold":
    # ARGS: sources (comma list), connections per source, seconds, reconnect (0/1), out file.
    # Each connection sends a cheap 404 every 0.5 s; a closed one is opened again when
    # reconnect says so. Writes what it saw when done.
    import selectors
    sources, per, secs, again, path = (ARGS[0].split(","), int(ARGS[1]), float(ARGS[2]),
                                       ARGS[3] == "1", ARGS[4])
    sel = selectors.DefaultSelector()
    st = {"opened": 0, "closed_by_server": 0, "answers": 0, "connect_failed": 0}
    conns = {}
    def open_one(src):
        try:
            s = rawhttp.connect(PORT, src, timeout=2)
        except OSError:
            st["connect_failed"] += 1
            return
        s.setblocking(False)
        conns[s] = [src, 0.0]
        sel.register(s, selectors.EVENT_READ)
        st["opened"] += 1
    for src in sources:
        for _ in range(per):
            open_one(src)
    st["alive_after_open"] = len(conns)
    t_end = time.monotonic() + secs
    sample_at = time.monotonic() + 1.0
    while time.monotonic() < t_end:
        now = time.monotonic()
        for s, c in list(conns.items()):
            if now - c[1] >= 0.5:
                c[1] = now
                try:
                    s.send(b"GET /nope HTTP/1.1\r\nHost: acme.test\r\n\r\n")
                except OSError:
                    pass
        for key, _ in sel.select(0.05):
            s = key.fileobj
            try:
                d = s.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                d = b""
            if d:
                st["answers"] += d.count(b"HTTP/1.1 404")
                continue
            sel.unregister(s)
            src = conns.pop(s)[0]
            s.close()
            st["closed_by_server"] += 1
            if again:
                open_one(src)
        if sample_at and time.monotonic() >= sample_at:
            st["alive_after_1s"] = len(conns)
            sample_at = 0
    st["alive_at_end"] = len(conns)
    json.dump(st, open(path, "w"))
    sys.exit(0)

elif CMD == "probes":
    # ARGS: source prefix ("127.0.2."), count. One fresh connection each, sequential.
    res = []
    for i in range(int(ARGS[1])):
        t0 = time.monotonic()
        try:
            r = rawhttp.exchange(PORT, b"GET /token/validate HTTP/1.1\r\nHost: acme.test\r\n"
                                 b"Connection: close\r\n\r\n", src=ARGS[0] + str(i + 1),
                                 timeout=5, want=1)
            st = r["responses"][0]["status"] if r["responses"] else 0
        except OSError:
            st = 0
        res.append({"status": st, "ms": int((time.monotonic() - t0) * 1000)})
    out = {"answered": sum(x["status"] == 401 for x in res), "max_ms": max(x["ms"] for x in res),
           "statuses": [x["status"] for x in res]}

print(json.dumps(out))
PYEOF
probe() { local port=$1; shift; $PY "$DIR/probe.py" "$ROOT/tests/lib" "$port" "$@"; }

# ---- start --------------------------------------------------------------------------------
: >"$DIR/creds.txt"
chmod 600 "$DIR/creds.txt"
echo pw-alice | ctlx user add acme alice >/dev/null || { echo "Bail out! user add"; exit 1; }
gw_start "$DIR/x.conf" "$DIR/x.log"
PIDS+=("$SLUICED_PID")
gw_start "$DIR/c.conf" "$DIR/c.log"
PIDS+=("$SLUICED_PID")

# ---- X-Forwarded-For forgeries cannot choose a bucket --------------------------------------
r=$(probe "$PORT_X" xff)
tap_diag "xff: $r"
expect_ge "a forged chain past 4 KiB ($(jget "$r" long_len) bytes) is read whole" "$(jget "$r" long_len)" 4100
expect_eq "  ... the attacker's garbage for ci-bot stays on its own address: 401 x3, then 429" \
	"$(jget "$r" long)" "[401, 401, 401, 429, 429]"
expect_eq "  ... while the client whose address it forged at byte 4096 gets its token" \
	"$(jget "$r" long_real)" 200
expect_eq "20 forged header lines before the proxy's: the proxy's line counts" \
	"$(jget "$r" lines)" "[401, 401, 401, 429, 429]"
expect_eq "  ... and the forged client gets its token" "$(jget "$r" lines_real)" 200
expect_eq "garbage entries around a forged one: never read" "$(jget "$r" junk)" \
	"[401, 401, 401, 429, 429]"
expect_eq "  ... the forged client gets its token" "$(jget "$r" junk_real)" 200
expect_eq "an entry in our proxy's place that is not an address: 400, every time" \
	"$(jget "$r" unreadable)" "[400, 400, 400, 400, 400]"
expect_match "  ... saying why" "$(jget "$r" unreadable_body)" "X-Forwarded-For"
expect_eq "  ... and charged to nobody: a client straight to us (the peer's pair) gets its token" \
	"$(jget "$r" direct)" 200
st=$(ctlx tenants --json)
expect_ge "sluicectl: the refusals are counted (client_address.xff_refused)" \
	"$(jget "$st" gateway.client_address.xff_refused)" 6

r=$(probe "$PORT_X" lock)
expect_eq "12 wrong passwords for alice from 12 forged /24s are one source: 401 x3, then 429" \
	"$(jget "$r" attacker)" "[401, 401, 401, 429, 429, 429, 429, 429, 429, 429, 429, 429]"
expect_eq "  ... and alice, from her own address, signs in" "$(jget "$r" alice)" 200

# ---- the smuggling forms get 400 ----------------------------------------------------------
r=$(probe "$PORT_C" forms)
forms=$($PY -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])["forms"]))' "$r")
for f in $forms; do
	expect_eq "$f: one answer, 400 with Connection: close, then closed; nothing after it answered" \
		"$(jget "$r" "forms.$f.statuses") $(jget "$r" "forms.$f.connection") $(jget "$r" "forms.$f.closed")" \
		'[400] ["close"] true'
done
expect_eq "a good request, then a bare-LF one, pipelined: the first answered, then 400, closed" \
	"$(jget "$r" pipelined)" "[401, 400, true]"
expect_eq "well-formed heads are served (HTTP/1.1, HTTP/1.0 without Host, POST with one length, GET with length 0)" \
	"$(jget "$r" good.http11) $(jget "$r" good.http10_no_host) $(jget "$r" good.post_with_length) $(jget "$r" good.get_length_0)" \
	"[401] [401] [400] [401]"
st=$(ctlc tenants --json)
for rule in content_length transfer_encoding host obs_fold bare_lf bare_cr control field_name body_method request_line; do
	expect_ge "sluicectl: heads refused for $rule are counted" "$(jget "$st" "gateway.heads_refused.$rule")" 1
done

r=$(probe "$PORT_C" authority)
expect_eq "an absolute-form target's authority names the tenant, not Host (RFC 9112 3.2.2)" \
	"$(jget "$r" origin_form) $(jget "$r" authority_acme_host_other) $(jget "$r" authority_other_host_acme) $(jget "$r" authority_with_port)" \
	"200 200 401 200"
expect_eq "  ... a scheme other than http(s), or userinfo: 400" \
	"$(jget "$r" ftp) $(jget "$r" userinfo)" "400 400"

r=$(probe "$PORT_C" max_requests)
expect_eq "a connection carries max_requests_per_connection (5): 7 pipelined, 5 answered, then closed" \
	"$(jget "$r" statuses) $(jget "$r" closed)" "[401, 401, 401, 401, 401] true"
expect_eq "  ... the 5th answer says Connection: close, the first does not" \
	"$(jget "$r" last_connection)/$(jget "$r" first_connection)" "close/"

# ---- one source holding connections cannot stop others from being answered ---------------
# From here on a connection carries 1000 requests: only the shares and the idle keep-alives
# closed to make room keep the slots apart.
sed -i 's/max_requests_per_connection = 5;/max_requests_per_connection = 1000;/' "$DIR/c.conf"
expect_match "reload: max_requests_per_connection 1000" "$(ctlc reload 2>&1)" "reload"
probe "$PORT_C" hold 127.0.1.1 64 4 0 "$DIR/hold1.json" &
HOLD=$!
sleep 1.2
r=$(probe "$PORT_C" probes 127.0.2. 10)
wait "$HOLD"
h=$(cat "$DIR/hold1.json")
tap_diag "one source: $h; probes: $r"
expect_eq "one source opening 64 connections keeps 8 (max_connections_per_prefix)" \
	"$(jget "$h" alive_after_1s)" 8
expect_ge "  ... the rest were closed as they were accepted" "$(jget "$h" closed_by_server)" 56
expect_ge "  ... its 8 are served (a 404 every 0.5 s on each)" "$(jget "$h" answers)" 48
expect_eq "  ... and keep their slots to the end" "$(jget "$h" alive_at_end)" 8
expect_eq "  ... and 10 of 10 probes from elsewhere are answered" "$(jget "$r" answered)" 10
expect_le "  ... each within a second" "$(jget "$r" max_ms)" 1000
st=$(ctlc tenants --json)
expect_ge "sluicectl: connections.refused_prefix counts them" \
	"$(jget "$st" gateway.connections.refused_prefix)" 56

# Sixteen sources in sixteen /24s, 8 connections each, reopening whatever is closed: 128
# for 64 slots, every one an idle keep-alive between its 404s.
srcs=$(seq -s, -f '127.0.%g.1' 10 25)
probe "$PORT_C" hold "$srcs" 8 5 1 "$DIR/hold2.json" &
HOLD=$!
sleep 1.5
st=$(ctlc tenants --json)
expect_ge "sixteen sources fill the slots (one is kept free while another is idle)" \
	"$(jget "$st" gateway.connections.open)" 62
r=$(probe "$PORT_C" probes 127.0.3. 10)
wait "$HOLD"
h=$(cat "$DIR/hold2.json")
tap_diag "sixteen sources: $h; probes: $r"
expect_eq "  ... yet 10 of 10 probes from elsewhere are answered" "$(jget "$r" answered)" 10
expect_le "  ... each within a second" "$(jget "$r" max_ms)" 1000
st=$(ctlc tenants --json)
expect_ge "  ... an idle keep-alive was closed to make room for each (connections.evicted_idle)" \
	"$(jget "$st" gateway.connections.evicted_idle)" 10
expect_le "  ... and the table never held more than max_connections" \
	"$(jget "$st" gateway.connections.open)" 64

for p in "${PIDS[@]}"; do
	kill -0 "$p" 2>/dev/null && tap_ok "sluiced $p is still running" || tap_not_ok "sluiced $p is still running"
done
tap_done
