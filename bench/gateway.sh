#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The gateway's two figures, measured in one invocation against sluiced on loopback:
#
#   monday     a crowd of closed-loop clients (3 s deadline, immediate retry on anything
#              but a 200) logging in at 4x the Argon2id pool's capacity, against sluiced
#              with admission on and with admission off (one unbounded FIFO, no deadline
#              check). Goodput = 200s within the deadline per second, as a fraction of the
#              pool's capacity, measured with the same parameters just before and after each
#              run (the machine is shared: its speed drifts).
#   neighbour  five tenants: one at 8x its baseline, four at baseline (each baseline a
#              tenth of capacity, 1.2x capacity in all); shed rate and p99 per tenant with
#              per-tenant admission, with one global budget, and with admission off.
#
# Usage: bench/gateway.sh [monday|neighbour|all]      (make bench-gateway runs all)
# Knobs: M_COST (KiB, 16384), T_COST (2), WORKERS (2), WARMUP (5 s), DURATION (15 s).
# Results: a table on stdout, one JSON line per run in $BUILD/bench/gateway-results.jsonl.
#
# The load generator runs at nice 19: it stands in for clients on other machines, and on a
# small box it would otherwise take CPU from the pool it is measuring.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
PY=/usr/bin/python3
M_COST=${M_COST:-16384}
T_COST=${T_COST:-2}
WORKERS=${WORKERS:-2}
WARMUP=${WARMUP:-5}
DURATION=${DURATION:-15}
WHAT=${1:-all}
OUT=$BUILD/bench/gateway-results.jsonl

for b in sluiced sluicectl bench/monday bench/neighbour; do
	[ -x "$BUILD/$b" ] || { echo "bench/gateway.sh: build $BUILD/$b first (make bench-gateway)" >&2; exit 1; }
done
DIR=$(mktemp -d /tmp/sluice-bench-gw.XXXXXX)
PID=
cleanup() {
	[ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	[ "${KEEP:-0}" = 1 ] && echo "bench/gateway.sh: kept $DIR" >&2 || rm -rf "$DIR"
}
trap cleanup EXIT
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

j() { $PY -c 'import json,sys; v=json.loads(sys.argv[1])
for k in sys.argv[2].split("."): v=v[int(k)] if isinstance(v,list) else v[k]
print(v)' "$1" "$2"; }
calc() { $PY -c "print($1)"; }

capacity() {
	"$BUILD/bench/monday" --capacity --m-cost "$M_COST" --t-cost "$T_COST" --threads "$WORKERS" \
		--seconds 3
}

# conf NAME ADMISSION TENANTS-BLOCK LOGIN-COST
conf() {
	cat >"$DIR/$1.conf" <<EOF
tenants = ( $3 );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = $4; } );
gateway: {
  listen = "127.0.0.1:$PORT";
  credentials = "$DIR/$1.creds";
  capacity = { cpu = $((WORKERS * 10000)).0; };
  argon2 = { m_cost_kib = $M_COST; t_cost = $T_COST; parallelism = 1;
             memory_budget_mib = $((WORKERS * M_COST / 1024)); };
  admission = $2;
  reject_floor_ms = 250;
  max_connections = 8192;
  # The crowd is one address, 127.0.0.1, standing in for clients everywhere: its share of the
  # connection table (a sixteenth by default) would stop it at 512.
  max_connections_per_prefix = 8192;
  max_connections_per_parent = 8192;
  max_held = 8192;
};
# The crowd signs one account in from one address, over and over: the per-account counters
# would rightly throttle that (and did, unnoticed, once they existed). This bench measures
# the pool's admission and scheduling, so they are off here; the counters have their own
# suites and bench/counters.
counters: { login_failures = { enabled = false; }; login_successes = { enabled = false; }; };
daemon: { control_socket = "$DIR/ctl.sock"; log_level = "warn"; };
EOF
	: >"$DIR/$1.creds"
	chmod 600 "$DIR/$1.creds"
}

adduser() { # CONF TENANT
	echo password | "$BUILD/sluicectl" -c "$DIR/$1.conf" user add "$2" user >/dev/null ||
		{ echo "bench/gateway.sh: user add failed" >&2; exit 1; }
}

start() {
	"$BUILD/sluiced" -c "$DIR/$1.conf" -f >"$DIR/$1.log" 2>&1 &
	PID=$!
	for _ in $(seq 1 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0
		sleep 0.05
	done
	cat "$DIR/$1.log" >&2
	echo "bench/gateway.sh: sluiced did not start" >&2
	exit 1
}

stop() {
	kill -TERM "$PID" 2>/dev/null
	wait "$PID" 2>/dev/null
	PID=
}

record() { echo "$1" >>"$OUT"; }

mkdir -p "$BUILD/bench"
echo "# $(date -u +%FT%TZ) bench/gateway.sh $WHAT: m=$M_COST KiB t=$T_COST workers=$WORKERS" \
	"$(nproc) CPUs, warmup ${WARMUP}s, measured ${DURATION}s" | tee -a "$OUT"
c0=$(capacity)
record "$c0"
CAP=$(j "$c0" hashes_per_s)
MS=$(j "$c0" ms_per_hash)
COST=$(calc "round($MS * 10, 1)") # cost units: 1 unit = 100 us
printf 'pool capacity: %.1f hashes/s with %d worker(s), %.1f ms a hash (%s units)\n' \
	"$CAP" "$WORKERS" "$MS" "$COST"

# ---- monday -----------------------------------------------------------------------------
monday() { # LABEL CONF
	local cb ca cap r clients
	clients=$(calc "int(round(4 * $CAP))")
	cb=$(capacity)
	start "$2"
	r=$(nice -n 19 "$BUILD/bench/monday" --port "$PORT" --clients "$clients" --think 1 \
		--deadline 3 --warmup "$WARMUP" --duration "$DURATION" --label "$1")
	"$BUILD/sluicectl" -c "$DIR/$2.conf" tenants >"$DIR/$2.tenants" 2>&1
	stop
	ca=$(capacity)
	cap=$(calc "($(j "$cb" hashes_per_s) + $(j "$ca" hashes_per_s)) / 2")
	record "$cb"
	record "$r"
	record "$ca"
	printf '  %-14s goodput %6.1f/s = %5.1f%% of %.1f hashes/s  (ok p99 %s ms, %s 429s, %s timeouts, %s attempts)\n' \
		"$1" "$(j "$r" goodput_per_s)" "$(calc "100 * $(j "$r" goodput_per_s) / $cap")" \
		"$cap" "$(j "$r" ok_p99_ms)" "$(j "$r" status_429)" "$(j "$r" timeouts)" \
		"$(j "$r" attempts)"
	# The capacity above is measured with the machine otherwise idle, before and after; on a
	# shared VM whose speed drifts it can read below what the pool did in the run (goodput
	# past 100 %). The gateway's own service rate (its scheduler's measure of hashes
	# finished, read by sluicectl tenants as the run ends), beside it, is the same pool
	# measured in the same seconds.
	svc=$(sed -n 's/.* service \([0-9.]*\)\/s .*/\1/p' "$DIR/$2.tenants" | head -1)
	[ -n "$svc" ] && printf '  %-14s service rate of the pool as the run ends: %.1f hashes/s (sluicectl tenants), goodput = %.1f%% of it\n' \
		"" "$svc" "$(calc "100 * $(j "$r" goodput_per_s) / max($svc, 0.001)")"
}

if [ "$WHAT" = monday ] || [ "$WHAT" = all ]; then
	conf mon_on true '{ name = "default"; reservation = 0.0; }' "$COST"
	conf mon_off false '{ name = "default"; reservation = 0.0; }' "$COST"
	adduser mon_on default
	adduser mon_off default
	echo "monday: $(calc "int(round(4 * $CAP))") clients, think 1 s after a 200 (fresh demand 4x" \
		"capacity), 3 s deadline, retry at once on anything else"
	monday "admission on" mon_on
	monday "admission off" mon_off
fi

# ---- neighbour --------------------------------------------------------------------------
neighbour() { # LABEL CONF
	local label=$1 cf=$2 r n
	start "$cf"
	r=$(nice -n 19 "$BUILD/bench/neighbour" --port "$PORT" --deadline 3 --warmup "$WARMUP" \
		--duration "$DURATION" --label "$label" \
		--tenant "noisy:noisy.example:$(calc "8 * $BASE"):user:password" \
		--tenant "q1:q1.example:$BASE:user:password" \
		--tenant "q2:q2.example:$BASE:user:password" \
		--tenant "q3:q3.example:$BASE:user:password" \
		--tenant "q4:q4.example:$BASE:user:password")
	"$BUILD/sluicectl" -c "$DIR/$cf.conf" tenants >"$DIR/$cf.tenants" 2>&1
	stop
	record "$r"
	# The four quiet tenants together: shed fraction, and the worst of their p99s.
	n=$($PY -c 'import json,sys; d=json.loads(sys.argv[1])["tenants"][1:]
sent=sum(t["sent"] for t in d); print(sent, sum(t["shed"] for t in d),
sum(t["timeouts"] for t in d), max(t["p99_ms"] for t in d))' "$r")
	set -- $n
	printf '  %-11s quiet x4: %5.1f%% shed (%d of %d) %4.1f%% timed out, p99 %6.0f ms | noisy: %5.1f%% shed (%d of %d) %4.1f%% timed out, p99 %6.0f ms\n' \
		"$label" "$(calc "100 * $2 / max($1, 1)")" "$2" "$1" \
		"$(calc "100 * $3 / max($1, 1)")" "$4" \
		"$(calc "100 * $(j "$r" tenants.0.shed_rate)")" "$(j "$r" tenants.0.shed)" \
		"$(j "$r" tenants.0.sent)" \
		"$(calc "100 * $(j "$r" tenants.0.timeouts) / max($(j "$r" tenants.0.sent), 1)")" \
		"$(j "$r" tenants.0.p99_ms)"
}

if [ "$WHAT" = neighbour ] || [ "$WHAT" = all ]; then
	BASE=$(calc "round($CAP / 10, 2)")
	# Reservations: 1.5x each tenant's baseline in cost units (room for a Poisson p95),
	# 75 % of capacity in all; the noisy tenant's is sized from its normal, not its flood.
	RES=$(calc "round(1.5 * $BASE * $COST, 1)")
	t="{ name = \"default\"; reservation = 0.0; }"
	for name in noisy q1 q2 q3 q4; do
		t="$t, { name = \"$name\"; hosts = [\"$name.example\"]; reservation = $RES; }"
	done
	conf nb_tenant true "$t" "$COST"
	conf nb_global true '{ name = "default"; reservation = 0.0; }' "$COST"
	conf nb_off false '{ name = "default"; reservation = 0.0; }' "$COST"
	for name in noisy q1 q2 q3 q4; do adduser nb_tenant "$name"; done
	adduser nb_global default
	adduser nb_off default
	echo "neighbour: baseline $BASE logins/s per tenant; noisy at 8x ($(calc "8 * $BASE")/s);" \
		"$(calc "round(12 * $BASE / $CAP, 2)")x capacity in all; reservations $RES units/s each"
	neighbour "per-tenant" nb_tenant
	neighbour "global" nb_global
	neighbour "off" nb_off
fi
c1=$(capacity)
record "$c1"
printf 'pool capacity at the end: %.1f hashes/s\n' "$(j "$c1" hashes_per_s)"
