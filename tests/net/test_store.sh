#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The counter store against a real Redis (started here, on a private Unix socket): atomic
# admission under concurrency, composite keys, and what happens when Redis dies or hangs.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
. "$HERE/../lib/tap.sh"
NT_DIR=$(mktemp -d /tmp/sluice-store.XXXXXX)
. "$HERE/../lib/redis.sh"
SC="$BUILD/tests/bin/store_check"

redis_available || { echo "1..0 # SKIP redis-server is not installed"; exit 0; }
trap 'redis_stop; rm -rf "$NT_DIR"' EXIT
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
expect_le "and at most one answer in the whole run came from the fallback" \
	"$(/usr/bin/python3 -c 'import sys,json; print(sum(json.loads(l)["local"] for l in sys.stdin))' <"$NT_DIR/flush")" 1

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
expect_eq "no answer took longer than the 5 ms timeout plus a 5 ms scheduling tick (worst $worst ms)" \
	"$(/usr/bin/python3 -c "print(int($worst <= 10))")" 1

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
expect_eq "a hung Redis never held an answer past 5 ms plus a 5 ms tick (worst $worst ms)" \
	"$(/usr/bin/python3 -c "print(int($worst <= 10))")" 1
expect_match "after SIGCONT: exact again, breaker closed" "$(tail -3 "$NT_DIR/hung" | head -2)" \
	'"local":0,"static":0,.*"breaker":"closed"'

# 5. No Redis configured: the in-process store limits exactly, 5 at once then 10/s.
"$SC" --rate 10 --burst 5 --key solo --seconds 1 --interval-ms 5 run >"$NT_DIR/solo"
adm=$(/usr/bin/python3 -c 'import sys,json; print(sum(json.loads(l)["admitted"] for l in sys.stdin))' <"$NT_DIR/solo")
expect_ge "in-process: burst 5 + 10/s over 1 s admits at least 14 ($adm)" "$adm" 14
expect_le "in-process: and at most 16" "$adm" 16
expect_match "in-process answers are exact" "$(head -1 "$NT_DIR/solo")" '"local":0,"static":0'

tap_done
