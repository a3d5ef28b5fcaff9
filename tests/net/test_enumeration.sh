#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Issue 14, item 1: the attacker of the issue against a gateway-only sluiced on loopback
# (tests/lib/oracle.py plays it; every trial from its own /24 through X-Forwarded-For). Two
# questions, each asked by a classifier trained on half the trials and scored on the other
# half, which must do no better than chance (a one-sided 99.95 % binomial bound of 50 %):
#   exists:    after five junk names from an address, is a candidate a real account?
#   throttled: is this attempt's (name, prefix) pair spent (known and unknown names alike)?
# Its features: everything the answer carries (status line, headers but Date, body), its
# time, and, under load, a 429 the client provokes right after (X-Request-Deadline-Ms: 1):
# that 429's status, Retry-After and hold.
#   1. idle: every refused login was hashed (the hash counter counts every login sent);
#   2. the pool busy (background clients), with the provoked 429;
#   3. the floor's timers capped (max_held = 2, the floor longer than a hash): no answer
#      leaves before the floor, and answers did wait in line for a timer.
# SL_DEBUG=1 leaves the directory in place.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
gw_suite_env
ORACLE="$ROOT/tests/lib/oracle.py"
gw_suite enum built

PORT=$(free_port)
SEED=${SL_SEED:-$RANDOM}
tap_diag "seed $SEED (SL_SEED=$SEED repeats the trials' order)"
# A hash of about 10 ms on two workers (more on a loaded machine), a floor shorter than it
# (phases 1 and 2): a login refused without a hash would leave at the floor and a hashed
# one after it. The default
# login counters (login_failures 5, login_parent 10) and login_uniform, as in the example
# config; the reservation covers everything, so nothing is shed but the provoked 429s.
write_conf() { # FLOOR_MS MAX_HELD
	cat >"$DIR/gw.conf" <<EOF
tenants = ( { name = "default"; reservation = 500000.0; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 400.0; } );
gateway: {
  listen = "127.0.0.1:$PORT";
  credentials = "creds.txt";
  capacity = { cpu = 1000000.0; };
  argon2 = { m_cost_kib = 4096; t_cost = 2; parallelism = 1; memory_budget_mib = 16; };
  queue = { target_wait_ms = 5000; max_depth = 4096; };
  trusted_hops = 1;
  reject_floor_ms = $1;
  max_held = $2;
};
daemon: { control_socket = "$DIR/ctl.sock"; };
EOF
}
ctl() { "$BUILD/sluicectl" -c "$DIR/gw.conf" "$@"; }
write_conf 4 1024
: >"$DIR/creds.txt"
chmod 600 "$DIR/creds.txt"
echo pw-mallory | ctl user add default mallory >/dev/null || { echo "Bail out! user add"; exit 1; }
$PY - "$DIR/creds.txt" <<'PYEOF'
import sys
path = sys.argv[1]
phc = open(path).read().strip().split(",", 2)[2]
with open(path, "a") as f:
    for i in range(1000):
        f.write("default,k%04d,%s\n" % (i, phc))
PYEOF
gw_start "$DIR/gw.conf" "$DIR/sluiced.log"
gw() { jget "$(ctl tenants --json)" "gateway.$1"; }

# judge NAME FILE: both questions no better than chance.
judge() {
	local s
	s=$($PY "$ORACLE" score "$2")
	tap_diag "$1: $s"
	for exp in exists throttled; do
		a=$(jget "$s" "$exp.accuracy") b=$(jget "$s" "$exp.bound")
		if $PY -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)" "$a" "$b"; then
			tap_ok "$1, $exp: the attacker's guesses are no better than chance ($a <= $b of $(jget "$s" "$exp.n_test"), by $(jget "$s" "$exp.feature"))"
		else
			tap_not_ok "$1, $exp: the attacker's guesses are no better than chance ($a > $b of $(jget "$s" "$exp.n_test"), by $(jget "$s" "$exp.feature"))"
		fi
	done
}

# ---- 1. idle ------------------------------------------------------------------------------
h0=$(gw hashes)
$PY "$ORACLE" attack "$PORT" 1 100 "$SEED" >"$DIR/idle.json" || { echo "Bail out! attack"; exit 1; }
judge "idle" "$DIR/idle.json"
expect_eq "every login was hashed, the refused ones too (200 trials of six)" "$(( $(gw hashes) - h0 ))" 1200

# ---- 2. the pool busy, and the 429 the client provokes ------------------------------------
$PY "$ORACLE" attack "$PORT" 2 100 "$((SEED + 1))" --probe --load 8 >"$DIR/busy.json" ||
	{ echo "Bail out! attack"; exit 1; }
judge "pool busy" "$DIR/busy.json"
n429=$($PY -c 'import json,sys; print(sum(s["feat"]["probe_status"] == "429" for s in json.load(open(sys.argv[1]))))' "$DIR/busy.json")
expect_ge "  ... the provoked logins were 429s for their deadline ($n429 of 200)" "$n429" 100

# ---- 3. the floor's timers capped ---------------------------------------------------------
# The floor must be longer than a hash, or no answer is held and none waits for a timer: 60 ms,
# or three times the idle phase's median answer where the machine is slower than that (a
# loaded CI machine: 0-8 waits seen with 60 ms at a load of 3 on two vCPUs).
med=$($PY -c 'import json,sys,statistics; print(int(statistics.median(s["feat"]["ms"] for s in json.load(open(sys.argv[1])))))' "$DIR/idle.json")
FLOOR=$(( 3 * med > 60 ? 3 * med : 60 ))
tap_diag "the idle phase's median answer: $med ms; the floor: $FLOOR ms"
write_conf $FLOOR 2
ctl reload >/dev/null || { echo "Bail out! reload"; exit 1; }
q0=$(gw floor.queued_total)
$PY "$ORACLE" attack "$PORT" 3 60 "$((SEED + 2))" --load 4 >"$DIR/capped.json" ||
	{ echo "Bail out! attack"; exit 1; }
judge "holds capped" "$DIR/capped.json"
expect_ge "  ... the cap was reached: answers waited in line for a timer" "$(( $(gw floor.queued_total) - q0 ))" 20
lo=$($PY -c 'import json,sys; print(int(min(s["feat"]["ms"] for s in json.load(open(sys.argv[1])))))' "$DIR/capped.json")
expect_ge "  ... and none left before the ${FLOOR} ms floor (the fastest: $lo ms)" "$lo" $FLOOR
kill -0 "$SLUICED_PID" 2>/dev/null && tap_ok "sluiced is still running" || tap_not_ok "sluiced is still running"
tap_done
