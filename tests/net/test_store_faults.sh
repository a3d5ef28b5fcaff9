#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The login counters through real Redis faults (issue 16), on a gateway-only sluiced sharing
# a redis-server this suite starts on a private Unix socket; clients are told apart by
# X-Forwarded-For (trusted_hops = 1). What a user sees is asserted: /login's statuses, the
# guesses a pair is allowed across an outage, the values Redis holds.
#   1. A right password while the breaker is open (Redis paused) signs in, and its user is
#      not locked out once Redis answers again: the success's clear reaches Redis after the
#      attempt Redis took late, when it resumed.
#   2. An outage hands nobody a fresh allowance: a pair spent before Redis is killed stays
#      spent in the fallback (it starts from the last value Redis returned) and after Redis
#      restarts empty (the last known state is written back); a pair half spent before a
#      pause gets only its remainder during it, and the guesses charged meanwhile are neither
#      lost nor charged twice when Redis resumes.
#   3. login_successes is one atomic charge: 24 parallel right-password logins against its
#      burst of 3 get exactly 3 tokens.
#   4. A request waits on Redis at most about timeout_ms in all (its counters are asked in
#      one round trip), however many counters it asks.
# SL_DEBUG=1 leaves the directory in place.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
PY=/usr/bin/python3
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
NT_DIR=$(mktemp -d /tmp/sluice-faults.XXXXXX)
. "$HERE/../lib/redis.sh"
SLUICED_PID=

redis_available || { echo "1..0 # SKIP redis-server is not installed"; exit 0; }
gw_stop() {
	[ -n "$SLUICED_PID" ] && kill -TERM "$SLUICED_PID" 2>/dev/null && wait "$SLUICED_PID" 2>/dev/null
	SLUICED_PID=
}
cleanup() {
	gw_stop
	redis_stop
	if [ "${SL_DEBUG:-0}" = 1 ]; then echo "# SL_DEBUG=1: left $NT_DIR" >&2; else rm -rf "$NT_DIR"; fi
}
trap cleanup EXIT
redis_start || { echo "Bail out! redis-server did not start"; exit 1; }
rcli() { redis-cli -s "$REDIS_SOCK" "$@"; }
# A Redis that dies for real (SIGKILL), and one started again empty on the same socket.
redis_kill() { kill -9 "$(cat "$REDIS_PIDFILE")"; rm -f "$REDIS_PIDFILE" "$REDIS_SOCK"; }

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$NT_DIR/session.key"
chmod 600 "$NT_DIR/session.key"
: >"$NT_DIR/creds.txt"
chmod 600 "$NT_DIR/creds.txt"
PORT=$(free_port)
MPORT=$(free_port)
# write_conf FAILURE_BURST SUCCESS_BURST TIMEOUT_MS BREAKER_FAILURES
write_conf() {
	cat >"$NT_DIR/gw.conf" <<EOC
tenants = ( { name = "default"; reservation = 0.0; } );
routes = (
  { name = "login"; method = "POST"; path = "/login"; cpu = 10.0; },
  { name = "reset"; method = "POST"; path = "/password-reset"; cpu = 1.0; }
);
gateway: {
  listen = "127.0.0.1:$PORT";
  credentials = "$NT_DIR/creds.txt";
  session_key = "$NT_DIR/session.key";
  capacity = { cpu = 1000000.0; };
  argon2 = { m_cost_kib = 256; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
  trusted_hops = 1;
  reject_floor_ms = 0;
  login_uniform = false;
  delivery = "log";
  delivery_log = "$NT_DIR/outbox.log";
};
redis: { address = "unix:$REDIS_SOCK"; timeout_ms = $3; breaker_failures = $4;
         breaker_open_ms = 300; };
cluster: { node = "n1"; nodes = 1; };
counters: {
  login_failures = { rate = 0.001; burst = $1.0; };
  login_parent = { enabled = false; };
  login_successes = { rate = 0.001; burst = $2.0; };
  tenant_logins = { rate = 100000.0; burst = 100000.0; };
};
stream: { enabled = false; };
daemon: { control_socket = "$NT_DIR/gw.sock"; metrics_listen = "127.0.0.1:$MPORT"; };
EOC
}
ctl() { "$BUILD/sluicectl" -c "$NT_DIR/gw.conf" "$@"; }
write_conf 5 30 50 3
for who in "alice pw-a" "bob pw-b" "carol pw-c" "dave pw-d" "erin pw-e"; do
	set -- $who
	echo "$2" | ctl user add default "$1" >/dev/null || { echo "Bail out! user add $1"; exit 1; }
done
start() {
	gw_start "$NT_DIR/gw.conf" "$NT_DIR/gw.log"
	for _ in $(seq 1 100); do
		grep -q "redis .*connected" "$NT_DIR/gw.log" && return 0
		sleep 0.05
	done
	echo "Bail out! the gateway did not connect to Redis"
	exit 1
}
start

# req.py PORT [-j N] PATH,USER,PASSWORD,XFF...: one JSON line per request, in order.
cat >"$NT_DIR/req.py" <<'PYEOF'
import concurrent.futures, http.client, json, sys, time
port, args = int(sys.argv[1]), sys.argv[2:]
par = 1
if args and args[0] == "-j":
    par, args = int(args[1]), args[2:]
def one(spec):
    path, user, pw, xff = spec.split(",")
    body = "username=" + user + ("&password=" + pw if pw != "-" else "")
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    t0 = time.monotonic()
    c.request("POST", path, body=body, headers={"Host": "idp.test", "X-Forwarded-For": xff,
              "Content-Type": "application/x-www-form-urlencoded"})
    r = c.getresponse()
    r.read()
    c.close()
    return {"status": r.status, "ms": round((time.monotonic() - t0) * 1000, 1)}
with concurrent.futures.ThreadPoolExecutor(par) as ex:
    for r in ex.map(one, args):
        print(json.dumps(r))
PYEOF
req() { $PY "$NT_DIR/req.py" "$PORT" "$@"; }
st() { req "$@" | $PY -c 'import json,sys; print(" ".join(str(json.loads(l)["status"]) for l in sys.stdin))'; }
# login USER PASSWORD XFF [COUNT]: COUNT logins one after another, their statuses.
login() { local i specs=(); for i in $(seq 1 "${4:-1}"); do specs+=("/login,$1,$2,$3"); done; st "${specs[@]}"; }
breaker() { jget "$(ctl status --json)" store.breaker; }
# Until the breaker is open (Redis paused or gone; a login from nobody's pair asks it).
wait_open() {
	for _ in $(seq 1 100); do
		[ "$(breaker)" = open ] && return 0
		login probe x 192.0.2.250 >/dev/null
	done
	return 1
}
# Until the breaker has closed again and what the outage left has reached Redis.
wait_closed() {
	for _ in $(seq 1 100); do
		login probe x 192.0.2.251 >/dev/null
		# (the journal is handed over within ticks of the breaker closing)
		[ "$(breaker)" = closed ] && sleep 0.3 && return 0
		sleep 0.1
	done
	return 1
}
count() { tr ' ' '\n' | grep -c "^$1$"; }

# ---- 1. a right password while the breaker is open --------------------------------------
A=203.0.113.10
expect_eq "alice's four wrong passwords (burst 5): 401 x4" "$(login alice bad $A 4)" \
	"401 401 401 401"
redis_pause
wait_open || tap_not_ok "the breaker opens while Redis is paused"
expect_eq "Redis paused, breaker open: alice's right password signs in (her fifth attempt)" \
	"$(login alice pw-a $A)" 200
redis_resume
wait_closed || tap_not_ok "the breaker closes once Redis resumes"
expect_eq "Redis back: alice is not locked out (a wrong password is her first failure: 401)" \
	"$(login alice bad $A)" 401
expect_eq "  ... and her right password signs in" "$(login alice pw-a $A)" 200
expect_eq "  ... and her pair has its whole budget again: 401 x5, then 429" \
	"$(login alice bad $A 6)" "401 401 401 401 401 429"

# ---- 2. an outage is no fresh allowance -----------------------------------------------------
B=203.0.113.20
expect_eq "bob's pair: five wrong passwords, then 429" "$(login bob bad $B 6)" \
	"401 401 401 401 401 429"
redis_kill
wait_open || tap_not_ok "the breaker opens once Redis is killed"
expect_eq "Redis killed: the fallback starts from the last known state (429 x5)" \
	"$(login bob bad $B 5)" "429 429 429 429 429"
redis_start || { echo "Bail out! redis-server did not restart"; exit 1; }
wait_closed || tap_not_ok "the breaker closes once Redis is back"
expect_eq "Redis restarted empty: bob's pair is still spent (429 x5)" "$(login bob bad $B 5)" \
	"429 429 429 429 429"
expect_eq "  ... while bob from his own address signs in" "$(login bob pw-b 198.51.100.20)" 200

C=203.0.113.30
expect_eq "carol's pair: two wrong passwords (401 x2)" "$(login carol bad $C 2)" "401 401"
redis_pause
during=$(login carol bad $C 4)
expect_eq "Redis paused: carol's pair gets its remaining three guesses, then 429" "$during" \
	"401 401 401 429"
expect_ge "  ... what the fallback charged waits in the journal (sluicectl status --json)" \
	"$(jget "$(ctl status --json)" store.journal)" 1
expect_match "  ... and on /metrics" "$(curl -s "127.0.0.1:$MPORT/metrics")" \
	'sluice_store_journal_keys [1-9]'
redis_resume
wait_closed || tap_not_ok "the breaker closes once Redis resumes"
for _ in $(seq 1 50); do [ "$(jget "$(ctl status --json)" store.journal)" = 0 ] && break; sleep 0.1; done
expect_eq "  ... and is handed over once Redis answers (journal empty, nothing dropped)" \
	"$(jget "$(ctl status --json)" store.journal) $(jget "$(ctl status --json)" store.journal_dropped)" "0 0"
expect_eq "Redis resumed: the guesses of the pause are not lost (429: five in all)" \
	"$(login carol bad $C)" 429
v=$(rcli get "$(rcli --scan --pattern 'sluice:{default}:login_fail:*' | grep -v ':live$' | while read -r k; do echo "$(rcli pttl "$k") $k"; done | sort -n | tail -1 | cut -d' ' -f2)")
expect_ge "  ... and Redis holds a spent pair" "${#v}" 1
D=203.0.113.40
expect_eq "dave: one wrong password" "$(login dave bad $D)" 401
redis_pause
expect_eq "Redis paused: dave's two more (the first ones time out, Redis takes them late)" \
	"$(login dave bad $D 2)" "401 401"
redis_resume
wait_closed || tap_not_ok "the breaker closes once Redis resumes"
expect_eq "Redis resumed: nothing charged twice, dave's pair has its last two (401 x2, then 429)" \
	"$(login dave bad $D 3)" "401 401 429"

# ---- 3. login_successes is one atomic charge ----------------------------------------------
gw_stop
write_conf 100 3 50 3
start
specs=()
for i in $(seq 1 24); do specs+=("/login,erin,pw-e,198.51.100.99"); done
r=$(st -j 24 "${specs[@]}")
expect_eq "24 parallel right-password logins against login_successes' burst of 3: 3 x 200" \
	"$(echo "$r" | count 200)" 3
expect_eq "  ... and 21 x 429" "$(echo "$r" | count 429)" 21
expect_eq "wrong passwords give their success back: erin's pair from elsewhere, 2 x 401 then 3 x 200" \
	"$(st "/login,erin,bad,198.51.100.98" "/login,erin,bad,198.51.100.98" \
	      "/login,erin,pw-e,198.51.100.98" "/login,erin,pw-e,198.51.100.98" \
	      "/login,erin,pw-e,198.51.100.98" "/login,erin,pw-e,198.51.100.98")" \
	"401 401 200 200 200 429"

# ---- 4. one round trip per request --------------------------------------------------------
# A 400 ms timeout and a breaker that needs many failures: each of the requests below meets a
# paused Redis with the breaker still closed, so every counter it asks would wait in full.
gw_stop
rcli flushall >/dev/null
write_conf 5 30 400 50
start
redis_pause
r=$(req "/login,probe1,x,192.0.2.77" "/password-reset,probe2,-,192.0.2.78")
redis_resume
ms1=$(jget "$(echo "$r" | sed -n 1p)" ms)
ms2=$(jget "$(echo "$r" | sed -n 2p)" ms)
expect_le "a login against a paused Redis waits one 400 ms timeout, not two ($ms1 ms)" \
	"${ms1%.*}" 650
expect_le "a password reset (four counters) waits one timeout, not three ($ms2 ms)" \
	"${ms2%.*}" 650

tap_done
