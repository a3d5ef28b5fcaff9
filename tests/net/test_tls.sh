#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# TLS on the gateway's listener (issue 15, item 3), over loopback against two gateway-only
# sluiced in a temp dir, one plaintext and one with gateway.tls, on the same config and the
# same credentials, with a test CA and server certificates made here by the openssl CLI:
#  - --check-config: a valid tls group passes; a missing key file, an expired certificate
#    and a key of another certificate are refused with file:line and the reason;
#  - curl --cacert gets the same statuses and bodies as over plaintext for /healthz, /login
#    (right and wrong password) and /token/validate (the login's token, and a forged one);
#    gw_head's raw-byte rules see the decrypted bytes (a smuggling head is a 400);
#  - ALPN: h2 alone is refused in the handshake, http/1.1 is chosen, curl offering h2 and
#    http/1.1 gets HTTP/1.1; TLS 1.1 is refused; each counted by reason on /metrics;
#  - the attacker's connections: TCP with nothing sent, half a ClientHello, each closed within
#    request_timeout_ms; garbage and a plaintext request on the TLS port never reach the HTTP
#    parser (no 400 counted, no answer) and the gateway keeps serving;
#  - X-Forwarded-For with trusted_hops = 1 works over TLS as over plaintext (the failure
#    counter follows the forwarded address; an unreadable header is a 400);
#  - a client that closes (close_notify, then FIN) while its login is queued is not hashed
#    (shed client_gone), one that stays is served;
#  - the per-prefix connection cap holds for connections that never begin a handshake;
#  - reload: a keep-alive connection opened before a reload to a new certificate (another
#    serial) carries a second request on the old one, a new connection sees the new serial;
#    a reload to a broken key, or to a key of another certificate, is refused with file:line
#    and the old certificate keeps serving;
#  - a stop with logins still queued answers them over TLS (503 or their answer), never bytes
#    outside the TLS layer (a client would see a protocol error).
# SL_DEBUG=1 leaves the directory and the daemons' logs in place.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
PY=/usr/bin/python3

if [ ! -x "$BUILD/sluiced" ] || [ ! -x "$BUILD/sluicectl" ]; then
	echo "Bail out! build sluiced and sluicectl first (make)"
	exit 1
fi
command -v openssl >/dev/null || { echo "1..0 # SKIP no openssl CLI"; exit 0; }
DIR=$(mktemp -d /tmp/sluice-tls.XXXXXX)
P_PID=
T_PID=
C_PID=
E_PID=
cleanup() {
	for p in $P_PID $T_PID $C_PID $E_PID; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	if [ "${SL_DEBUG:-0}" = 1 ]; then echo "# SL_DEBUG=1: left $DIR" >&2; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
cd "$DIR" || exit 1

# ---- a test CA, and server certificates for 127.0.0.1 -----------------------------------
mkcert() { # NAME KEYFILE SERIAL [extra x509 args]
	local name=$1 key=$2 serial=$3
	shift 3
	openssl req -new -key "$key" -subj "/CN=127.0.0.1" -out "$name.csr" 2>/dev/null &&
		openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -set_serial "$serial" \
			-extfile ext.cnf "$@" -out "$name.pem" 2>/dev/null
}
{
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
		-out ca.pem -days 2 -subj "/CN=sluice test CA" &&
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out k1.key &&
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out k2.key &&
		printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >ext.cnf &&
		mkcert a k1.key 0x1001 -days 1 && mkcert b k1.key 0x2002 -days 1 &&
		mkcert other k2.key 0x3003 -days 1 &&
		mkdir -p cadb && : >cadb/index.txt && echo 4004 >cadb/serial &&
		printf '[ca]\ndefault_ca = t\n[t]\ndatabase = cadb/index.txt\nserial = cadb/serial\nnew_certs_dir = cadb\ndefault_md = sha256\npolicy = p\n[p]\ncommonName = supplied\n' >ca.cnf &&
		openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in a.csr -notext \
			-startdate 20200101000000Z -enddate 20200102000000Z -out expired.pem
} >"$DIR/openssl.log" 2>&1 || { sed 's/^/# /' "$DIR/openssl.log"; echo "Bail out! openssl"; exit 1; }
cp a.pem srv.pem
cp k1.key srv.key
chmod 600 srv.key

PP=$(free_port)
TP=$(free_port)
PM=$(free_port)
TM=$(free_port)
TIMEOUT_MS=1000
# Argon2id m=4 MiB t=100 on one worker: a few hundred ms a hash, so a queue is easy to make.
write_conf() { # FILE PORT METRICS_PORT SOCK TLS_GROUP
	cat >"$1" <<EOF
tenants = ( { name = "default"; reservation = 5000.0; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 100.0; },
           { name = "validate"; method = "GET"; path = "/token/validate"; cpu = 1.0; },
           # forwarded to a server that echoes the X-Forwarded-Proto it was given
           { name = "proto"; method = "GET"; path = "/proto"; cpu = 1.0;
             upstream = "unix:$DIR/echo.sock"; } );
gateway: {
  listen = "127.0.0.1:$2";
  credentials = "creds.txt";
  session_key = "session.key";
  capacity = { cpu = 100000.0; };
  argon2 = { m_cost_kib = 4096; t_cost = 100; parallelism = 1; memory_budget_mib = 4; };
  queue = { default_deadline_ms = 20000; max_deadline_ms = 20000; target_wait_ms = 20000; };
  trusted_hops = 1;
  reject_floor_ms = 0;
  login_uniform = false;
  request_timeout_ms = $TIMEOUT_MS;
  drain_ms = 0;
$5
};
counters: { login_failures = { rate = 0.001; burst = 2.0; };
            login_successes = { enabled = false; }; login_parent = { enabled = false; }; };
daemon: { control_socket = "$4"; metrics_listen = "127.0.0.1:$3"; };
EOF
}
TLS_GROUP='  tls = {
    certificate = "srv.pem";
    key = "srv.key";
  };'
write_conf plain.conf "$PP" "$PM" "$DIR/p.sock" ""
write_conf tls.conf "$TP" "$TM" "$DIR/t.sock" "$TLS_GROUP"
KEY_LINE=$(grep -n 'key = "srv.key"' tls.conf | cut -d: -f1)
CERT_LINE=$(grep -n 'certificate = "srv.pem"' tls.conf | cut -d: -f1)
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >session.key
chmod 600 session.key
: >creds.txt
chmod 600 creds.txt
for u in alice bob carol; do
	echo "pw-$u" | "$BUILD/sluicectl" -c plain.conf user add default "$u" >/dev/null ||
		{ echo "Bail out! user add $u"; exit 1; }
done

# ---- --check-config: the careless operator --------------------------------------------
out=$("$BUILD/sluiced" -c tls.conf --check-config 2>&1)
expect_eq "--check-config accepts the tls group (exit 0)" "$?" 0
check_bad() { # NAME CONF_EDIT REGEX
	sed "$2" tls.conf >bad.conf
	out=$("$BUILD/sluiced" -c bad.conf --check-config 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ] && grep -Eq -- "$3" <<<"$out"; then tap_ok "$1"; else
		tap_not_ok "$1"; tap_diag "exit $rc, output:"; tap_diag "$out"; fi
}
check_bad "--check-config: a missing key file is refused with file:line" \
	's/"srv.key"/"nowhere.key"/' "bad.conf:$KEY_LINE: gateway.tls.key: cannot read '.*nowhere.key': No such file"
check_bad "--check-config: an expired certificate is refused with file:line" \
	's/"srv.pem"/"expired.pem"/' "bad.conf:$CERT_LINE: gateway.tls.certificate: .*expired on 2020-01-02"
check_bad "--check-config: the key of another certificate is refused with file:line" \
	's/"srv.pem"/"other.pem"/' "bad.conf:$KEY_LINE: gateway.tls.key: .* is not the key of the certificate"
check_bad "--check-config: min_version 1.1 is refused with file:line" \
	's/key = "srv.key";/key = "srv.key"; min_version = "1.1";/' \
	"bad.conf:$KEY_LINE: gateway.tls.min_version: '1.1' is not"

python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(16)
while True:
    c, _ = s.accept()
    head = b""
    while b"\r\n\r\n" not in head:
        d = c.recv(4096)
        if not d:
            break
        head += d
    v = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n")
         if l.lower().startswith(b"x-forwarded-proto:")]
    body = v[0] if v else b"none"
    c.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    c.close()
' "$DIR/echo.sock" &
E_PID=$!
"$BUILD/sluiced" -c plain.conf -f >plain.log 2>&1 &
P_PID=$!
"$BUILD/sluiced" -c tls.conf -f >tls.log 2>&1 &
T_PID=$!
for _ in $(seq 1 100); do
	grep -q "gateway listening" plain.log && grep -q "gateway listening" tls.log && break
	sleep 0.05
done
grep -q "gateway listening" tls.log && grep -q "gateway listening" plain.log ||
	{ sed 's/^/# /' plain.log tls.log; echo "Bail out! the gateways did not start"; exit 1; }
expect_match "the log names the certificate served (its serial)" "$(cat tls.log)" \
	"TLS serving certificate .*serial 1001"

expect_eq "upstream mode behind TLS: the upstream is told X-Forwarded-Proto https" \
	"$(curl -s --cacert ca.pem "https://127.0.0.1:$TP/proto")" https
expect_eq "  ... and http over plaintext" "$(curl -s "http://127.0.0.1:$PP/proto")" http

metric() { # PORT NAME_WITH_LABELS -> value (0 when absent)
	curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }'
}
# metric_ge PORT NAME MIN: the value once it reaches MIN, or after 2 s (a connection's end is
# counted when the gateway's sweep, every 50 ms, sees it released)
metric_ge() {
	local v
	for _ in $(seq 1 40); do
		v=$(metric "$1" "$2")
		[ "$v" -ge "$3" ] && break
		sleep 0.05
	done
	echo "$v"
}
PTLS="https://127.0.0.1:$TP"
PPLAIN="http://127.0.0.1:$PP"
# ask BASE ARGS...: "STATUS BODY" of one curl request
ask() {
	local base=$1 path=$2
	shift 2
	curl -s --cacert ca.pem -o body.out -w '%{http_code}' "$@" "$base$path" >code.out 2>/dev/null
	echo "$(cat code.out) $(cat body.out)"
}

# ---- the same answers as over plaintext -----------------------------------------------
for what in healthz login_ok login_bad validate_forged; do
	case $what in
	healthz) args=(/healthz) ;;
	login_ok) args=(/login -d "username=alice&password=pw-alice") ;;
	login_bad) args=(/login -d "username=alice&password=wrong") ;;
	validate_forged) args=(/token/validate -H "Authorization: Bearer v2.forged.token") ;;
	esac
	p=$(ask "$PPLAIN" "${args[@]}")
	t=$(ask "$PTLS" "${args[@]}")
	if [ "$what" = login_ok ]; then
		PTOK=$(jget "${p#* }" access_token)
		TTOK=$(jget "${t#* }" access_token)
		# tokens carry their issue time: compare everything else
		p=$(sed -E 's/"access_token":"[^"]*"/"access_token":"T"/' <<<"$p")
		t=$(sed -E 's/"access_token":"[^"]*"/"access_token":"T"/' <<<"$t")
	fi
	expect_eq "$what over TLS: the plaintext answer (${p%% *})" "$t" "$p"
done
expect_match "  ... /login over TLS answered 200 with a token" "$TTOK" '^v2\.'
p=$(ask "$PPLAIN" /token/validate -H "Authorization: Bearer $PTOK")
t=$(ask "$PTLS" /token/validate -H "Authorization: Bearer $TTOK")
expect_eq "/token/validate over TLS: the plaintext answer (${p%% *})" \
	"$(sed -E 's/"(iat|exp)":[0-9]+/"\1":N/g' <<<"$t")" "$(sed -E 's/"(iat|exp)":[0-9]+/"\1":N/g' <<<"$p")"
expect_eq "  ... and it is a 200" "${t%% *}" 200
v=$(curl -s --cacert ca.pem --http2 -o /dev/null -w '%{http_code} %{http_version}' "$PTLS/healthz")
expect_eq "curl offering h2 and http/1.1 is served HTTP/1.1" "$v" "200 1.1"

# gw_head's raw-byte rules see the decrypted bytes: a smuggling head (Transfer-Encoding with
# a Content-Length) is refused with 400 before evhttp parses it, over TLS as over plaintext.
cat >raw.py <<'PYEOF'
import socket, ssl, sys
port, tls = int(sys.argv[1]), sys.argv[2] == "tls"
s = socket.create_connection(("127.0.0.1", port), timeout=5)
if tls:
    s = ssl.create_default_context(cafile="ca.pem").wrap_socket(s, server_hostname="127.0.0.1")
s.sendall(b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
          b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
data = b""
try:
    while True:
        d = s.recv(4096)
        if not d:
            break
        data += d
except OSError:
    pass
print(data.split(b"\r\n")[0].decode("latin-1"), data.count(b"HTTP/1.1 "))
PYEOF
te0=$(metric "$TM" 'sluice_gateway_heads_refused_total{rule="transfer_encoding"}')
t=$($PY raw.py "$TP" tls)
p=$($PY raw.py "$PP" plain)
expect_eq "a smuggling head over TLS: one 400, nothing after it answered (as over plaintext)" \
	"$t" "$p"
expect_match "  ... and that is a 400" "$t" "^HTTP/1.1 400 .* 1$"
expect_eq "  ... counted by gw_head's rule (transfer_encoding)" \
	"$(metric "$TM" 'sluice_gateway_heads_refused_total{rule="transfer_encoding"}')" $((te0 + 1))

# ---- versions and ALPN -----------------------------------------------------------------
sc() { echo | timeout 5 openssl s_client -connect "127.0.0.1:$TP" -CAfile ca.pem "$@" 2>&1; }
out=$(sc -alpn h2)
if grep -q "no application protocol" <<<"$out" && ! grep -q "ALPN protocol: h2" <<<"$out"; then
	tap_ok "s_client -alpn h2 is refused in the handshake (no_application_protocol)"
else
	tap_not_ok "s_client -alpn h2 is refused in the handshake (no_application_protocol)"
	tap_diag "$out"
fi
out=$(sc -alpn http/1.1)
expect_match "s_client -alpn http/1.1 is accepted, the certificate verified" "$out" \
	"ALPN protocol: http/1.1"
expect_match "  ... verified against the test CA" "$out" "Verify return code: 0 \(ok\)"
out=$(sc -tls1_1 -cipher 'DEFAULT@SECLEVEL=0')
if grep -q "alert protocol version" <<<"$out" && grep -q "Cipher is (NONE)" <<<"$out"; then
	tap_ok "TLS 1.1 is refused (protocol_version)"
else
	tap_not_ok "TLS 1.1 is refused (protocol_version)"
	tap_diag "$out"
fi
expect_ge "handshake failures by reason: alpn" \
	"$(metric_ge "$TM" 'sluice_gateway_tls_handshake_failures_total{reason="alpn"}' 1)" 1
expect_ge "handshake failures by reason: version" \
	"$(metric_ge "$TM" 'sluice_gateway_tls_handshake_failures_total{reason="version"}' 1)" 1
expect_ge "completed handshakes are counted" "$(metric "$TM" sluice_gateway_tls_handshakes_total)" 6

# ---- the attacker's connections --------------------------------------------------------
cat >probe.py <<'PYEOF'
import json, os, socket, sys, time
port, what = int(sys.argv[1]), sys.argv[2]
payload = {
    "nothing": b"",
    # a handshake record announcing 512 bytes, then 40 of them
    "half_hello": bytes([0x16, 3, 1, 2, 0, 1, 0, 1, 0xfc, 3, 3]) + os.urandom(29),
    "garbage": os.urandom(600) + b"\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
    "plain_http": b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
}[what]
s = socket.create_connection(("127.0.0.1", port), timeout=10)
t0 = time.monotonic()
if payload:
    s.sendall(payload)
got = b""
try:
    while True:
        d = s.recv(4096)
        if not d:
            break
        got += d
    how = "closed"
except socket.timeout:
    how = "timeout"
except OSError as e:
    how = "reset"
print(json.dumps({"ms": int((time.monotonic() - t0) * 1000), "how": how,
                  "http": got.startswith(b"HTTP/"), "n": len(got)}))
PYEOF
for what in nothing half_hello; do
	r=$($PY probe.py "$TP" $what)
	ms=$(jget "$r" ms)
	if [ "$(jget "$r" how)" != timeout ] && [ "$ms" -ge $((TIMEOUT_MS - 100)) ] &&
		[ "$ms" -le $((TIMEOUT_MS + 400)) ]; then
		tap_ok "a client that sends $what is closed at request_timeout_ms ($ms ms)"
	else
		tap_not_ok "a client that sends $what is closed at request_timeout_ms"
		tap_diag "$r"
	fi
done
expect_ge "  ... counted as handshake timeouts" \
	"$(metric_ge "$TM" 'sluice_gateway_tls_handshake_failures_total{reason="timeout"}' 2)" 2
heads0=$(curl -s "http://127.0.0.1:$TM/metrics" | grep -E '^sluice_gateway_(heads_refused|responses)_total' | sort)
for what in garbage plain_http; do
	r=$($PY probe.py "$TP" $what)
	if [ "$(jget "$r" http)" = false ] && [ "$(jget "$r" how)" != timeout ]; then
		tap_ok "$what on the TLS port: closed, no HTTP answer ($r)"
	else
		tap_not_ok "$what on the TLS port: closed, no HTTP answer"
		tap_diag "$r"
	fi
done
heads1=$(curl -s "http://127.0.0.1:$TM/metrics" | grep -E '^sluice_gateway_(heads_refused|responses)_total' | sort)
expect_eq "  ... none of it reached the HTTP parser (no head refused, no answer counted)" \
	"$heads1" "$heads0"
expect_ge "  ... counted as not TLS" \
	"$(metric_ge "$TM" 'sluice_gateway_tls_handshake_failures_total{reason="not_tls"}' 2)" 2
expect_eq "  ... and the gateway still serves" "$(ask "$PTLS" /healthz)" '200 {"status":"alive"}'

# ---- X-Forwarded-For behind a trusted proxy ---------------------------------------------
xff_run() { # BASE -> the statuses of: 3 wrong from A, 1 wrong from B, 1 unreadable XFF
	local base=$1 s=""
	for x in 198.51.100.7 198.51.100.7 198.51.100.7 203.0.113.9 not-an-address; do
		s="$s $(ask "$base" /login -H "X-Forwarded-For: $x" -d "username=bob&password=no" |
			cut -d' ' -f1)"
	done
	echo $s
}
p=$(xff_run "$PPLAIN")
t=$(xff_run "$PTLS")
expect_eq "X-Forwarded-For over TLS: the failure counter follows the forwarded address" "$t" \
	"401 401 429 401 400"
expect_eq "  ... as over plaintext" "$t" "$p"

# ---- a client that hangs up while queued -------------------------------------------------
cat >queue.py <<'PYEOF'
import json, socket, ssl, sys, threading, time
port, mode = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile="ca.pem")
BODY = b"username=carol&password=pw-carol"
# each from its own forwarded address: the failure counter reserves per (account, prefix)
REQ = (b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
       b"X-Forwarded-For: 10.9.%d.1\r\nContent-Length: %d\r\n\r\n")
res = {}

def status_of(s):
    data = b""
    while b"\r\n" not in data:
        d = s.recv(4096)
        if not d:
            break
        data += d
    return int(data.split(b" ")[1]) if data.startswith(b"HTTP/") else ("bytes:%r" % data[:20])

def one(i, leave):
    try:
        raw = socket.create_connection(("127.0.0.1", port), timeout=15)
        s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        s.sendall(REQ % (i, len(BODY)) + BODY)
        if leave:
            time.sleep(0.05)  # queued behind the first one's hash (about 500 ms here)
            s.settimeout(0.1)
            try:
                s.unwrap()   # close_notify (the reply to it never comes: the server is busy)
            except OSError:
                pass
            raw.close()      # then the FIN
            res[i] = "left"
            return
        res[i] = status_of(s)
    except Exception as e:
        res[i] = "error:%s" % type(e).__name__

if mode == "gone":
    # the first takes the one worker; 4 queue and leave; the last queues and stays
    plan = [False, True, True, True, True, False]
else:
    plan = [False] * 6
ts = []
for i, leave in enumerate(plan):
    t = threading.Thread(target=one, args=(i, leave))
    t.start()
    ts.append(t)
    time.sleep(0.01 if mode == "gone" else 0.03)
if mode == "stop":
    print("queued", flush=True)
for t in ts:
    t.join()
print(json.dumps([res[i] for i in range(len(plan))]))
PYEOF
gone0=$(metric "$TM" 'sluice_gateway_shed_total{tenant="default",reason="client_gone"}')
r=$($PY queue.py "$TP" gone)
gone1=$(metric "$TM" 'sluice_gateway_shed_total{tenant="default",reason="client_gone"}')
expect_eq "queued TLS logins: the ones that stayed are served, the rest left" "$r" \
	'[200, "left", "left", "left", "left", 200]'
expect_eq "  ... the 4 that left (close_notify, then FIN) were not hashed: shed client_gone" \
	"$((gone1 - gone0))" 4

# ---- reload: a new certificate, open connections keep theirs ----------------------------
cat >keepalive.py <<'PYEOF'
import http.client, json, ssl, sys, time
port, flag = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile="ca.pem")
c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)
out = []
for step in range(2):
    c.request("GET", "/healthz")
    r = c.getresponse()
    out.append({"status": r.status, "body": r.read().decode(),
                "serial": c.sock.getpeercert()["serialNumber"],
                "local": c.sock.getsockname()[1]})
    if step == 0:
        print("first", flush=True)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                open(flag).close()
                break
            except OSError:
                time.sleep(0.02)
print(json.dumps(out), flush=True)
PYEOF
serial_now() {
	echo | timeout 5 openssl s_client -connect "127.0.0.1:$TP" -CAfile ca.pem 2>/dev/null |
		openssl x509 -noout -serial
}
rm -f reloaded.flag
coproc KA { $PY keepalive.py "$TP" reloaded.flag; }
read -r -t 5 first <&"${KA[0]}"
cp b.pem srv.pem
out=$("$BUILD/sluicectl" -c tls.conf reload 2>&1)
expect_eq "sluicectl reload to a new certificate (exit 0)" "$?" 0
touch reloaded.flag
read -r -t 10 ka <&"${KA[0]}"
wait "$KA_PID" 2>/dev/null
expect_eq "  ... the keep-alive opened before: both requests 200 on one connection, old serial" \
	"$($PY -c 'import json,sys; o=json.loads(sys.argv[1]); print(o[0]["status"], o[1]["status"], o[0]["local"] == o[1]["local"], o[1]["serial"])' "$ka")" \
	"200 200 True 1001"
expect_eq "  ... a new connection gets the new certificate" "$(serial_now)" "serial=2002"
expect_match "  ... and the log says so" "$(cat tls.log)" "TLS reloaded certificate .*serial 2002"
expect_eq "  ... and is served" "$(ask "$PTLS" /healthz)" '200 {"status":"alive"}'

printf -- '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n' >srv.key
out=$("$BUILD/sluicectl" -c tls.conf reload 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && grep -Eq "tls.conf:$KEY_LINE: gateway.tls.key: no unencrypted PEM private key" <<<"$out"; then
	tap_ok "a reload to a broken key is refused with file:line ($(grep -o 'tls.conf:[0-9]*' <<<"$out" | head -1))"
else
	tap_not_ok "a reload to a broken key is refused with file:line"
	tap_diag "exit $rc: $out"
fi
expect_eq "  ... the old certificate keeps serving" "$(serial_now)" "serial=2002"
cp k2.key srv.key
out=$("$BUILD/sluicectl" -c tls.conf reload 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && grep -Eq "tls.conf:$KEY_LINE: gateway.tls.key: .* is not the key of the certificate" <<<"$out"; then
	tap_ok "a reload to the key of another certificate is refused with file:line"
else
	tap_not_ok "a reload to the key of another certificate is refused with file:line"
	tap_diag "exit $rc: $out"
fi
expect_eq "  ... the old certificate keeps serving, and answers" \
	"$(serial_now) $(ask "$PTLS" /healthz)" 'serial=2002 200 {"status":"alive"}'
cp k1.key srv.key

# ---- the connection limits hold before any handshake ------------------------------------
# A third gateway on the same files without trusted_hops: 4 connections per source prefix
# (/32), 16 per parent (/24).
CP=$(free_port)
CM=$(free_port)
sed -e "s/127.0.0.1:$TP/127.0.0.1:$CP/" -e "s/127.0.0.1:$TM/127.0.0.1:$CM/" \
	-e "s#$DIR/t.sock#$DIR/c.sock#" \
	-e 's/trusted_hops = 1;/trusted_hops = 0; max_connections = 64; max_connections_per_prefix = 4;/' \
	tls.conf >caps.conf
"$BUILD/sluiced" -c caps.conf -f >caps.log 2>&1 &
C_PID=$!
for _ in $(seq 1 100); do grep -q "gateway listening" caps.log && break; sleep 0.05; done
cat >hold.py <<'PYEOF'
import json, socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = [socket.create_connection(("127.0.0.1", port), timeout=2) for _ in range(n)]
time.sleep(0.3)
closed = 0
for s in socks:
    s.setblocking(False)
    try:
        closed += s.recv(1) == b""
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
print(closed, flush=True)
sys.stdin.readline()   # held open (sending nothing) until told
PYEOF
coproc H { $PY hold.py "$CP" 6; }
read -r -t 5 closed <&"${H[0]}"
expect_eq "6 silent TCP connections from one source, 4 allowed: 2 closed as accepted" "$closed" 2
expect_eq "  ... counted as over the prefix's share" \
	"$(metric "$CM" 'sluice_gateway_connections_closed_total{reason="prefix"}')" 2
v=$(curl -s --interface 127.0.0.2 --cacert ca.pem -o /dev/null -w '%{http_code}' "https://127.0.0.1:$CP/healthz")
expect_eq "  ... while another source's TLS client is served" "$v" 200
echo >&"${H[1]}"
wait "$H_PID" 2>/dev/null
kill -TERM "$C_PID" 2>/dev/null
wait "$C_PID" 2>/dev/null

# ---- the stop: what is queued is answered through TLS -----------------------------------
coproc Q { $PY queue.py "$TP" stop; }
read -r -t 5 _ <&"${Q[0]}"
sleep 0.2
kill -TERM "$T_PID"
read -r -t 20 r <&"${Q[0]}"
wait "$T_PID" 2>/dev/null
T_PID=
bad=$($PY -c 'import json,sys; print(sum(1 for v in json.loads(sys.argv[1]) if v not in (200, 503)))' "${r:-[0]}")
n503=$($PY -c 'import json,sys; print(sum(1 for v in json.loads(sys.argv[1]) if v == 503))' "${r:-[]}")
expect_eq "a stop with logins queued: every TLS client reads an HTTP answer ($r)" "$bad" 0
expect_ge "  ... those not served get their 503 through TLS" "$n503" 1

tap_done
