#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The counter store against a real Redis (started here, on a private Unix socket): atomic
# admission under concurrency, composite keys, and what happens when Redis dies or hangs.
# Then a gateway on the in-process store: a spent (alice, address) pair stays spent through
# floods of fresh keys on /password-reset and on /login (each counter's table bounded by its
# max_keys), and the evictions are counted.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
NT_DIR=$(mktemp -d /tmp/sluice-store.XXXXXX)
. "$HERE/../lib/redis.sh"
SC="$BUILD/tests/bin/store_check"
PY=/usr/bin/python3
SLUICED_PID=

redis_available || { echo "1..0 # SKIP redis-server is not installed"; exit 0; }
cleanup() {
	[ -n "$SLUICED_PID" ] && kill -TERM "$SLUICED_PID" 2>/dev/null && wait "$SLUICED_PID" 2>/dev/null
	redis_stop
	rm -rf "$NT_DIR"
}
trap cleanup EXIT
redis_start || { echo "Bail out! redis-server did not start"; exit 1; }
R="unix:$REDIS_SOCK"

# 1. Atomicity: 20 clients at once, one check each, against a burst of 5.
for i in $(seq 1 20); do "$SC" --redis "$R" --rate 0.001 --burst 5 --key par once >"$NT_DIR/p$i" & done
wait
adm=$(cat "$NT_DIR"/p* | grep -c '^admitted exact')
expect_eq "20 parallel clients against a limit of 5: exactly 5 admitted" "$adm" 5
expect_eq "all 20 answers came from Redis" "$(cat "$NT_DIR"/p* | grep -c ' exact$')" 20

# 2. Composite keys: 22,000 accounts behind 4 addresses each keep their own budget; an
#    attacker hammering (alice, its prefix) does not lock alice out of her own.
out=$("$SC" --redis "$R" --rate 0.01 --burst 2 --key x composite)
expect_eq "22,000 accounts behind 4 addresses: none refused" "$(jget "$out" users_refused)" 0
expect_eq "the attacker's 50 tries at (alice, its prefix): 48 refused" "$(jget "$out" attacker_refused)" 48
expect_eq "alice from her own prefix: admitted" "$(jget "$out" alice_home_admitted)" 1
expect_eq "no key holds an account name" "$(redis-cli -s "$REDIS_SOCK" --scan --pattern '*alice*' | wc -l)" 0

# 2b. A peek (cost 0) refuses once the burst is spent and charges nothing; a refund (cost -1)
#     gives one unit back.
once() { "$SC" --redis "$R" --rate 0.001 --burst 2 --key peek --cost "$1" once | cut -d' ' -f1; }
seq3="$(once 1) $(once 1) $(once 0) $(once 1) $(once -1) $(once 0) $(once 1) $(once 1)"
expect_eq "charge, charge, peek, charge, refund, peek, charge, charge" "$seq3" \
	"admitted admitted refused refused admitted admitted admitted refused"
r=$("$SC" --rate 0.001 --burst 2 --key peekl --cost 0 once)
expect_eq "in-process: a peek at a key nobody charged is admitted" "$r" "admitted exact"

# 2c. The server forgets our script (SCRIPT FLUSH): the next call is answered from the
#     fallback, the script is loaded again, and the answers after it are exact.
"$SC" --redis "$R" --rate 1000 --burst 1000 --key flush --seconds 1.5 --interval-ms 10 \
	--timeout-ms 50 run >"$NT_DIR/flush" &
runpid=$!
sleep 0.5
redis-cli -s "$REDIS_SOCK" script flush >/dev/null
wait $runpid
expect_match "after SCRIPT FLUSH the answers are exact again, breaker closed" \
	"$(tail -3 "$NT_DIR/flush" | head -2)" '"local":0,"static":0,.*"breaker":"closed"'
# (the checks go out on a timer, not one after another: on a busy machine a stall leaves a
# few in flight when the scripts go, and each of those finds them missing)
expect_le "and only the checks in flight at the flush (a few at most) came from the fallback" \
	"$(/usr/bin/python3 -c 'import sys,json; print(sum(json.loads(l)["local"] for l in sys.stdin))' <"$NT_DIR/flush")" 3

# 3. Redis dies mid-run (fail open, N = 2): answers fall back to limit / N at once, and come
#    back from Redis, exact, once it is up again.
"$SC" --redis "$R" --rate 20 --burst 20 --nodes 2 --key died --seconds 5 --interval-ms 10 \
	--timeout-ms 5 run >"$NT_DIR/died" &
runpid=$!
sleep 1
redis_stop
sleep 1
redis_start
wait $runpid
mid=$(awk 'NR>=13 && NR<=18' "$NT_DIR/died")
end=$(tail -4 "$NT_DIR/died" | head -3)
worst=$(/usr/bin/python3 -c 'import sys,json; print(max(json.loads(l)["worst_ms"] for l in sys.stdin))' <"$NT_DIR/died")
expect_match "while Redis is down, answers are local (fail open)" "$mid" '"exact":0,"local":1[01],'
admitted_down=$(echo "$mid" | /usr/bin/python3 -c 'import sys,json; print(sum(json.loads(l)["admitted"] for l in sys.stdin))')
expect_le "while down, limit / N holds: at most 10/s x 0.6 s + a little ($admitted_down)" "$admitted_down" 8
expect_match "after Redis returns, answers are exact again and the breaker is closed" "$end" \
	'"local":0,"static":0,.*"breaker":"closed"'
# Scheduling on a shared machine can stall the whole process once (one 100 ms window over);
# a store waiting on the dead Redis would be over in every window of the second it is down.
slow=$(/usr/bin/python3 -c 'import sys,json; print(sum(json.loads(l)["worst_ms"] > 10 for l in sys.stdin))' <"$NT_DIR/died")
expect_le "no answer took longer than the 5 ms timeout plus a 5 ms scheduling tick but in one stalled window at most ($slow; worst $worst ms)" \
	"$slow" 1
expect_eq "  ... and none waited anywhere near the second Redis was down (worst $worst ms)" \
	"$(/usr/bin/python3 -c "print(int($worst <= 250))")" 1

# 4. Redis hangs (SIGSTOP), fail closed: every call times out at 5 ms, then the breaker opens
#    and the static budget answers at once; on SIGCONT exact counting resumes.
"$SC" --redis "$R" --rate 1000 --burst 1000 --fail closed --static-rate 10 --static-burst 1 \
	--key hung --seconds 3 --interval-ms 10 --timeout-ms 5 run >"$NT_DIR/hung" &
runpid=$!
sleep 1
redis_pause
sleep 1
redis_resume
wait $runpid
mid=$(awk 'NR>=13 && NR<=18' "$NT_DIR/hung")
worst=$(/usr/bin/python3 -c 'import sys,json; print(max(json.loads(l)["worst_ms"] for l in sys.stdin))' <"$NT_DIR/hung")
expect_match "while Redis hangs, answers come from the static budget (fail closed)" "$mid" '"static":1[01],'
admitted_hung=$(echo "$mid" | /usr/bin/python3 -c 'import sys,json; print(sum(json.loads(l)["admitted"] for l in sys.stdin))')
expect_le "while hung, the static 10/s holds ($admitted_hung in 0.6 s)" "$admitted_hung" 8
slow=$(/usr/bin/python3 -c 'import sys,json; print(sum(json.loads(l)["worst_ms"] > 10 for l in sys.stdin))' <"$NT_DIR/hung")
expect_le "a hung Redis never held an answer past 5 ms plus a 5 ms tick but in one stalled window at most ($slow; worst $worst ms)" \
	"$slow" 1
expect_eq "  ... and none waited anywhere near the second Redis hung (worst $worst ms)" \
	"$(/usr/bin/python3 -c "print(int($worst <= 250))")" 1
expect_match "after SIGCONT: exact again, breaker closed" "$(tail -3 "$NT_DIR/hung" | head -2)" \
	'"local":0,"static":0,.*"breaker":"closed"'

# 5. No Redis configured: the in-process store limits exactly, 5 at once then 10/s.
"$SC" --rate 10 --burst 5 --key solo --seconds 1 --interval-ms 5 run >"$NT_DIR/solo"
adm=$(/usr/bin/python3 -c 'import sys,json; print(sum(json.loads(l)["admitted"] for l in sys.stdin))' <"$NT_DIR/solo")
expect_ge "in-process: burst 5 + 10/s over 1 s admits at least 14 ($adm)" "$adm" 14
expect_le "in-process: and at most 16" "$adm" 16
expect_match "in-process answers are exact" "$(head -1 "$NT_DIR/solo")" '"local":0,"static":0'

# 6. A gateway with no Redis: its counters in process, each in a table of its own bounded by
#    its max_keys (small here). alice's pair from the attacker's address is spent; then
#    4,000 password resets from 2,000 addresses (fresh reset_prefix and reset_account keys,
#    many times those tables' 256) leave the login table alone, and 400 failed logins from
#    400 addresses (fresh login_failures keys, six times that table's 64) cannot make the
#    pair full: a full table hands new keys the debt of what they replace, so all the flood
#    can buy is the table's own 64 x 3 attempts.
GW=$(free_port)
MP=$(free_port)
: >"$NT_DIR/creds.txt"
chmod 600 "$NT_DIR/creds.txt"
cat >"$NT_DIR/gw.conf" <<EOF
tenants = ( { name = "default"; reservation = 0.0; } );
routes = (
  { name = "login"; method = "POST"; path = "/login"; cpu = 10.0; },
  { name = "reset"; method = "POST"; path = "/password-reset"; cpu = 1.0; }
);
gateway: {
  listen = "127.0.0.1:$GW";
  credentials = "$NT_DIR/creds.txt";
  capacity = { cpu = 1000000.0; };
  argon2 = { m_cost_kib = 256; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
  trusted_hops = 1;
  reject_floor_ms = 0;
  login_uniform = false;
  delivery = "log";
  delivery_log = "$NT_DIR/outbox.log";
};
counters: {
  login_failures = { rate = 0.001; burst = 3.0; max_keys = 64; };
  # The flood here is about login_failures' own table; the allocation's budget (its own
  # table, bounded the same way) would refuse some of the 400 before it.
  login_parent = { enabled = false; };
  reset_prefix = { rate = 0.001; burst = 20.0; max_keys = 256; };
  reset_account = { rate = 0.001; burst = 3.0; max_keys = 256; };
  reset_tenant = { rate = 100000.0; burst = 100000.0; };
  outbound = { rate = 100000.0; burst = 100000.0; };
};
stream: { enabled = false; };
daemon: { control_socket = "$NT_DIR/gw.sock"; metrics_listen = "127.0.0.1:$MP"; };
EOF
gctl() { "$BUILD/sluicectl" -c "$NT_DIR/gw.conf" "$@"; }
echo pw-alice | gctl user add default alice >/dev/null || { echo "Bail out! user add alice"; exit 1; }
gw_start "$NT_DIR/gw.conf" "$NT_DIR/gw.log"
# send.py PORT THREADS SPEC...: each SPEC is path,user,password,xff (or @FILE of them);
# prints the statuses in order, one per line.
cat >"$NT_DIR/send.py" <<'PYEOF'
import concurrent.futures, http.client, sys
port, threads = int(sys.argv[1]), int(sys.argv[2])
specs = []
for a in sys.argv[3:]:
    specs += open(a[1:]).read().split() if a.startswith("@") else [a]
def one(spec):
    path, user, pw, xff = spec.split(",")
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    body = "username=%s" % user + ("&password=%s" % pw if path == "/login" else "")
    c.request("POST", path, body=body, headers={"Host": "idp.test", "X-Forwarded-For": xff,
              "Content-Type": "application/x-www-form-urlencoded"})
    r = c.getresponse()
    r.read()
    c.close()
    return r.status
with concurrent.futures.ThreadPoolExecutor(threads) as ex:
    print("\n".join(str(s) for s in ex.map(one, specs)))
PYEOF
send() { $PY "$NT_DIR/send.py" "$GW" "$@"; }
tally() { sort | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' '; }
ATK=203.0.113.9
r=$(send 1 "/login,alice,bad1,$ATK" "/login,alice,bad2,$ATK" "/login,alice,bad3,$ATK" \
	"/login,alice,pw-alice,$ATK" | tr '\n' ' ')
expect_eq "in process: three wrong passwords spend (alice, attacker); the right one is then refused" \
	"$r" "401 401 401 429 "
$PY -c '
for i in range(4000):
    a = i % 2000
    print("/password-reset,u%05d,-,10.%d.%d.%d" % (i, a >> 16, (a >> 8) & 255, a & 255))' \
	>"$NT_DIR/resets"
expect_eq "4,000 password resets from 2,000 addresses: every one answered 202" \
	"$(send 8 "@$NT_DIR/resets" | tally)" "202x4000 "
st=$(gctl status --json)
ev=$(jget "$st" store.local_evictions)
expect_ge "the reset tables, full, evicted (the least spent first: $ev)" "$ev" 1000
expect_match "  ... and the log names them" "$(cat "$NT_DIR/gw.log")" \
	'counter (reset_prefix|reset_acct) of tenant default: its in-process table is full \(max_keys 256\)'
expect_eq "after the reset flood (alice, attacker) is still spent" \
	"$(send 1 "/login,alice,pw-alice,$ATK")" 429
expect_eq "  ... and the login table was not touched: alice from her own address signs in" \
	"$(send 1 "/login,alice,pw-alice,198.51.100.7")" 200
$PY -c '
for i in range(400):
    print("/login,nobody%03d,x,172.16.%d.%d" % (i, i >> 8, i & 255))' >"$NT_DIR/logins"
send 8 "@$NT_DIR/logins" >"$NT_DIR/flood"
n401=$(grep -c '^401$' "$NT_DIR/flood")
expect_eq "400 failed logins from 400 addresses: each answered 401 (charged) or 429 (refused)" \
	"$(grep -cE '^(401|429)$' "$NT_DIR/flood")" 400
expect_le "  ... charged at most the table's 64 x 3 attempts, less alice's 3 ($n401)" "$n401" 189
expect_ge "  ... and at least the free slots' worth (62)" "$n401" 62
expect_eq "after the login flood (alice, attacker) is still spent: the right password is refused" \
	"$(send 1 "/login,alice,pw-alice,$ATK")" 429
st=$(gctl status --json)
expect_eq "status: the counters are in process" "$(jget "$st" store.backend)" in-process
ev2=$(jget "$st" store.local_evictions)
expect_ge "status: the login table evicted too ($((ev2 - ev)))" "$((ev2 - ev))" 1
expect_ge "status: new keys that started spent are counted" "$(jget "$st" store.local_table_full)" 1
# (login_successes is charged with each attempt and given back by a failure: its slots are
# refilled at once and reused, so its table holds about the logins in flight, 8 here.)
expect_le "status: the tables hold at most their max_keys (256 + 256 + 64, the tenant's own, the successes in flight)" \
	"$(jget "$st" store.local_keys)" $((256 + 256 + 64 + 4 + 32))
prom() { $PY "$ROOT/tests/lib/prom.py" "http://127.0.0.1:$MP/metrics" "$@"; }
expect_eq "metrics: the evictions" "$(prom sluice_store_local_evictions_total)" "$ev2"
expect_ge "metrics: the new keys that started spent" "$(prom sluice_store_local_table_full_total)" 1

tap_done
