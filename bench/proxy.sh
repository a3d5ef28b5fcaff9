#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Upstream mode's two figures (issue 15), each measured against its baseline in the same
# invocation on loopback (the machine is shared: only ratios within one run mean anything):
#
#   overhead  two cheap routes served by nginx: /static (a fixed 200, ~20 us) and /check
#             (HTTP Basic against SHA-512-crypt at 1,000 rounds, ~0.3 ms of CPU: the
#             cheapest authenticated request), with wrk over 1 and 16 keep-alive
#             connections: straight to nginx, through nginx as a reverse proxy (the
#             reference proxy), and through sluiced in upstream mode; interleaved, ROUNDS
#             rounds, medians compared as ratios to direct (bench/proxy_summary.py): p50,
#             p99, requests/s. Then one connection per target interleaved request by
#             request (bench/pingpong, PP_ROUNDS runs of PP_REQUESTS requests a target):
#             the p50 at one connection without the drift between wrk's runs. Goal
#             (issue 15): p50 <= 1.1x direct.
#   monday    an identity service whose logins are bounded by its Argon2id pool (a sluiced
#             gateway with admission off: one unbounded FIFO, no deadlines, which is what an
#             unprotected service is) offered 4x that capacity by bench/monday (3 s client
#             deadline, an immediate retry on anything but a 200): goodput straight at it,
#             and with a sluiced in upstream mode in front (admission on, the service's
#             workers as its connections). Goodput as a fraction of the pool's capacity,
#             measured with the same parameters before and after each run.
#
# Usage: bench/proxy.sh [overhead|monday|all]       (make bench-proxy runs all)
# Knobs: ROUNDS (3), SECONDS_EACH (5), PP_ROUNDS (3), PP_REQUESTS (4000), M_COST (16384),
#        T_COST (2), WORKERS (2), WARMUP (5), DURATION (15), SLUICED_ENV (variables for the
#        proxying sluiced, e.g. SLUICED_ENV=EVENT_EPOLL_USE_CHANGELIST=1: libevent's epoll
#        change list, see docs/performance.md), ALSO (more sluiced proxies to interleave with the others in
#        the overhead rounds, each "LABEL=BINARY[,VAR=VALUE...]", space-separated: an A/B
#        of two builds, or of one build with and without a libevent setting, in one run,
#        e.g. ALSO="before=/tmp/old/sluiced cl=build/sluiced,EVENT_EPOLL_USE_CHANGELIST=1").
#        PIN (0): 1 puts the origin nginx (master and worker) on the last CPU and wrk and
#        every proxy on the others, so that no proxy's CPU is taken from the identity
#        service (in production they are different machines); the ratios then compare
#        the hop, not the fight for two shared vCPUs.
#        Monday with PIN=1 puts the service (its workers) on the last CPU and the client and
#        the front sluiced on the others, and measures the capacity there too.
#        FRONT_CONCURRENCY (WORKERS) and FRONT_CPU (WORKERS x 10000): the front's
#        upstream.concurrency and capacity.cpu in monday, for an A/B of the two.
#        SAMPLES_RAW: a file for every sample of the front's metrics (time, limit, in flight).
#        Monday prints, beside each goodput, where the CPUs went (the service, sluice, the
#        rest) and, with sluice, the front's learned limit and forwards in flight (sampled
#        every 0.1 s by bench/metrics_sample.py), its sheds by reason, and a forward's mean
#        round trip against the service's mean hash (the hand-off's share).
#        One JSON line per run in $BUILD/bench/proxy-results.jsonl.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
PY=/usr/bin/python3
ROUNDS=${ROUNDS:-3}
SECONDS_EACH=${SECONDS_EACH:-5}
M_COST=${M_COST:-16384}
T_COST=${T_COST:-2}
WORKERS=${WORKERS:-2}
WARMUP=${WARMUP:-5}
DURATION=${DURATION:-15}
SLUICED_ENV=${SLUICED_ENV:-}
ALSO=${ALSO:-}
PIN=${PIN:-0}
PP_ROUNDS=${PP_ROUNDS:-3}
PP_REQUESTS=${PP_REQUESTS:-4000}
WHAT=${1:-all}
OUT=$BUILD/bench/proxy-results.jsonl
. "$ROOT/tests/lib/nginx.sh"

for b in sluiced sluicectl bench/monday bench/pingpong bench/hopfloor; do
	[ -x "$BUILD/$b" ] || { echo "bench/proxy.sh: build $BUILD/$b first (make bench-proxy)" >&2; exit 1; }
done
command -v wrk >/dev/null || { echo "bench/proxy.sh: wrk is missing (scripts/deps.sh demo)" >&2; exit 1; }
nginx_available || { echo "bench/proxy.sh: nginx is missing (scripts/deps.sh demo)" >&2; exit 1; }

DIR=$(mktemp -d /tmp/sluice-bench-proxy.XXXXXX)
PIDS=()
SVC_PID= FRONT_PID=
cleanup() {
	local p
	for p in "${PIDS[@]}" $SVC_PID $FRONT_PID; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	nginx_stop
	[ "${KEEP:-0}" = 1 ] && echo "bench/proxy.sh: kept $DIR" >&2 || rm -rf "$DIR"
}
trap cleanup EXIT
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
j() { $PY -c 'import json,sys; v=json.loads(sys.argv[1])
for k in sys.argv[2].split("."): v=v[int(k)] if isinstance(v,list) else v[k]
print(v)' "$1" "$2"; }
calc() { $PY -c "print($1)"; }
wait_port() {
	local i
	for i in $(seq 1 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "bench/proxy.sh: nothing listens on $1" >&2
	exit 1
}
record() { echo "$1" >>"$OUT"; }
. "$ROOT/bench/ticks.sh"
# PIN=1: the origin's CPU and the rest's (taskset lists).
NCPU=$(nproc)
ORIGIN_CPUS= REST_CPUS=
# As command prefixes ("${ON_REST[@]}" CMD...), empty without PIN: taskset execs the command,
# so a command started with & through them leaves its own PID in $! (a function run with &
# would leave its subshell's, and the command orphaned at cleanup).
ON_ORIGIN=() ON_REST=()
if [ "$PIN" = 1 ] && [ "$NCPU" -ge 2 ]; then
	ORIGIN_CPUS=$((NCPU - 1))
	REST_CPUS=0-$((NCPU - 2))
	ON_ORIGIN=(taskset -c "$ORIGIN_CPUS") ON_REST=(taskset -c "$REST_CPUS")
fi
pin() { # pin CPUS PID...: every thread of each PID (nothing without PIN)
	local c=$1 p
	shift
	[ -n "$c" ] || return 0
	for p in "$@"; do taskset -a -p -c "$c" "$p" >/dev/null; done
}
mkdir -p "$BUILD/bench"
echo "# $(date -u +%FT%TZ) bench/proxy.sh $WHAT on $NCPU CPUs at $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)${SLUICED_ENV:+, proxy with $SLUICED_ENV}${ORIGIN_CPUS:+, origin pinned to CPU $ORIGIN_CPUS, wrk and the proxies to $REST_CPUS}${FRONT_CONCURRENCY:+, front concurrency $FRONT_CONCURRENCY}${FRONT_CPU:+, front capacity.cpu $FRONT_CPU}" | tee -a "$OUT"

# ---- overhead ------------------------------------------------------------------------------------
# wrk's --latency output into JSON: p50, p99 (ms), requests/s, non-2xx.
wrk_json() {
	$PY -c '
import json, re, sys
t = sys.stdin.read()
def ms(v):
    n, u = re.match(r"([\d.]+)(us|ms|s)", v).groups()
    return float(n) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[u]
p = dict((m.group(1), ms(m.group(2))) for m in re.finditer(r"^\s+(50|99)%\s+(\S+)", t, re.M))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", t)
err = re.search(r"Socket errors: (.*)", t)
print(json.dumps({"label": sys.argv[1], "p50_ms": p["50"], "p99_ms": p["99"], "rps": rps,
                  "non_2xx": int(bad.group(1)) if bad else 0, "socket_errors": err.group(1) if err else ""}))' "$1"
}

overhead() {
	local ng np gw i r route c target port pid t0 t1
	ng=$(free_port)
	np=$(free_port)
	gw=$(free_port)
	mkdir -p "$DIR/ng"
	chmod 755 "$DIR"
	# /check: HTTP Basic against SHA-512-crypt at its minimum, 1,000 rounds (~0.3 ms of CPU
	# here): a stand-in for the platform's cheapest authenticated request.
	$PY -c 'import crypt; print("u:" + crypt.crypt("p", crypt.mksalt(crypt.METHOD_SHA512, rounds=1000)))' \
		2>/dev/null >"$DIR/ng/htpasswd"
	chmod 644 "$DIR/ng/htpasswd"
	nginx_conf "$DIR/ng" 1024 <<EOF
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$ng;
    location = /static { default_type application/json; return 200 '{"active":true}'; }
    location = /check {
      auth_basic "idp"; auth_basic_user_file $DIR/ng/htpasswd;
      try_files /nonexistent @ok;
    }
    location @ok { default_type application/json; return 200 '{"active":true}'; }
  }
EOF
	# The reference proxy: another nginx, its own process as sluiced is, keep-alive to the
	# origin (in the origin's own process a proxy would skip a process hop sluice pays).
	nginx_conf "$DIR/np" 1024 <<EOF
  keepalive_requests 1000000;
  upstream origin { server 127.0.0.1:$ng; keepalive 32; }
  server {
    listen 127.0.0.1:$np;
    location / { proxy_pass http://origin; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
EOF
	nginx_start "$DIR/ng" "$ng"
	pin "$ORIGIN_CPUS" "$NGINX_PID" $(pgrep -P "$NGINX_PID")
	nginx_start "$DIR/np" "$np"
	NP_MASTER=$NGINX_PID
	pin "$REST_CPUS" "$NGINX_PID" $(pgrep -P "$NGINX_PID")
	cat >"$DIR/proxy.conf" <<EOF
tenants = ( { name = "default"; reservation = 0.0; } );
routes = ( { name = "static"; method = "GET"; path = "/static"; cpu = 1.0; },
           { name = "check"; method = "GET"; path = "/check"; cpu = 3.0; } );
gateway: {
  listen = "127.0.0.1:$gw";
  upstream = { url = "http://127.0.0.1:$ng"; concurrency = 32; };
  capacity = { cpu = 10000000.0; };
  max_requests_per_connection = 1000000000;
  max_connections_per_prefix = 4096;
  max_connections_per_parent = 4096;
};
counters: { login_failures = { enabled = false; }; login_successes = { enabled = false; }; };
daemon: { control_socket = "$DIR/proxy.sock"; log_level = "warn"; };
EOF
	# shellcheck disable=SC2086 # SLUICED_ENV: words on purpose
	env $SLUICED_ENV "$BUILD/sluiced" -c "$DIR/proxy.conf" -f >"$DIR/proxy.log" 2>&1 &
	PIDS+=($!)
	GW_PID=$!
	pin "$REST_CPUS" "$GW_PID"
	wait_port "$gw"
	# The other proxies (ALSO): the same configuration on a port of their own.
	local a label rest bin envs targets="direct nginx sluice"
	declare -A XPORT XPID
	for a in $ALSO; do
		label=${a%%=*} rest=${a#*=}
		bin=${rest%%,*} envs=
		[ "$bin" != "$rest" ] && envs=${rest#*,} && envs=${envs//,/ }
		case "$label" in direct|nginx|sluice|*[!a-z0-9_-]*|"")
			echo "bench/proxy.sh: ALSO label '$label': a new name of [a-z0-9_-]" >&2; exit 2 ;;
		esac
		[ -x "$bin" ] || { echo "bench/proxy.sh: ALSO $label: no binary $bin" >&2; exit 2; }
		XPORT[$label]=$(free_port)
		sed -e "s/127.0.0.1:$gw\"/127.0.0.1:${XPORT[$label]}\"/" -e "s|$DIR/proxy.sock|$DIR/$label.sock|" \
			"$DIR/proxy.conf" >"$DIR/$label.conf"
		# shellcheck disable=SC2086
		env $envs "$bin" -c "$DIR/$label.conf" -f >"$DIR/$label.log" 2>&1 &
		PIDS+=($!)
		XPID[$label]=$!
		pin "$REST_CPUS" "$!"
		wait_port "${XPORT[$label]}"
		echo "  also: $label = $bin${envs:+ with $envs}"
		targets="$targets $label"
	done
	# The proxy's own CPU per request (user + system, from /proc): the figure a shared
	# machine cannot skew much. nginx's work is in its worker, the master's child.
	NP_WORKER=$(pgrep -P "$NP_MASTER" | head -1)
	AUTH="Authorization: Basic $(printf u:p | base64)"
	: >"$DIR/ov.jsonl"
	for i in $(seq 1 "$ROUNDS"); do
		for route in static check; do
			for c in 1 16; do
				for target in $targets; do
					case $target in
					direct) port=$ng pid= ;;
					nginx) port=$np pid=$NP_WORKER ;;
					sluice) port=$gw pid=$GW_PID ;;
					*) port=${XPORT[$target]} pid=${XPID[$target]} ;;
					esac
					# shellcheck disable=SC2086 # $pid unquoted: direct has none, which counts 0
					t0=$(proc_ticks $pid)
					r=$("${ON_REST[@]}" wrk -t1 -c$c -d"${SECONDS_EACH}s" --latency -H "$AUTH" \
						"http://127.0.0.1:$port/$route" | wrk_json "$route c$c $target")
					t1=$(proc_ticks $pid)
					r=$($PY -c 'import json,sys; r=json.loads(sys.argv[1]); n=r["rps"]*float(sys.argv[2])
r["proxy_cpu_us_per_req"]=round((int(sys.argv[4])-int(sys.argv[3]))*1e6/float(sys.argv[5])/n, 1) if sys.argv[6] else None
print(json.dumps(r))' "$r" "$SECONDS_EACH" "$t0" "$t1" "$(getconf CLK_TCK)" "$pid")
					record "$r"
					echo "$r" >>"$DIR/ov.jsonl"
				done
			done
		done
		echo "  round $i of $ROUNDS done"
	done
	$PY "$ROOT/bench/proxy_summary.py" "$DIR/ov.jsonl" | tee -a "$OUT"
	# One connection, interleaved request by request (bench/pingpong): wrk's five-second
	# runs above sample each target at a different moment, and this machine's speed drifts
	# between them (direct's own p50 moves by a third from one round to the next); here
	# every target's latencies come from the same milliseconds. This is the p50 that the
	# goal (<= 1.1x direct at one connection) is read on.
	# The floor (bench/hopfloor): a process that only passes the bytes on, blocking, four
	# system calls a request: what the hop itself costs here, below any real proxy.
	local pp fl spec k
	fl=$(free_port)
	"${ON_REST[@]}" "$BUILD/bench/hopfloor" "$fl" "$ng" &
	PIDS+=($!)
	wait_port "$fl"
	spec="direct=$ng floor=$fl nginx=$np sluice=$gw"
	for a in $ALSO; do spec="$spec ${a%%=*}=${XPORT[${a%%=*}]}"; done
	echo "one connection, interleaved request by request ($PP_ROUNDS runs of $PP_REQUESTS requests a target):"
	for route in static check; do
		: >"$DIR/pp-$route.jsonl"
		for i in $(seq 1 "$PP_ROUNDS"); do
			# shellcheck disable=SC2086 # spec: words on purpose
			pp=$("${ON_REST[@]}" "$BUILD/bench/pingpong" --requests "$PP_REQUESTS" --warmup 500 \
				--path "/$route" --header "$AUTH" $spec) ||
				{ echo "bench/proxy.sh: pingpong on /$route failed" >&2; exit 1; }
			echo "$pp" >>"$DIR/pp-$route.jsonl"
			record "{\"label\": \"pingpong $route\", \"run\": $pp}"
		done
		for k in ${spec}; do
			k=${k%%=*}
			[ "$k" = direct ] && continue
			$PY -c 'import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
k = sys.argv[2]
r50 = [r[k]["p50_ratio"] for r in runs]
r99 = [r[k]["p99_ratio"] for r in runs]
d50 = statistics.median(r["direct"]["p50_us"] for r in runs)
t50 = statistics.median(r[k]["p50_us"] for r in runs)
goal = ""  # the goal is read on the cheap authenticated route (/check); /static is the bare hop
if sys.argv[3] == "check":
    goal = "   goal p50 <= 1.1x: " + ("met" if statistics.median(r50) <= 1.1 else "missed")
print("%-6s  1 conn  %-6s p50 %7.1f us (direct %6.1f) = %.2fx (runs: %s)   p99 %.2fx%s" % (
    sys.argv[3], k, t50, d50, statistics.median(r50), " ".join("%.2f" % x for x in r50),
    statistics.median(r99), goal))' \
				"$DIR/pp-$route.jsonl" "$k" "$route"
		done
	done
}

# ---- monday through the proxy --------------------------------------------------------------------
capacity() { # with PIN=1 on the service's CPU, as the service's workers run
	"${ON_ORIGIN[@]}" "$BUILD/bench/monday" --capacity --m-cost "$M_COST" --t-cost "$T_COST" --threads "$WORKERS" \
		--seconds 3
}

monday_through() {
	local up fr mp c0 cap ms clients cb ca r label port pid sampler front_line sp hz
	hz=$(getconf CLK_TCK)
	up=$(free_port)
	fr=$(free_port)
	mp=$(free_port)
	sp=$(free_port)
	c0=$(capacity)
	record "$c0"
	cap=$(j "$c0" hashes_per_s)
	ms=$(j "$c0" ms_per_hash)
	clients=$(calc "int(round(4 * $cap))")
	printf 'monday: the service hashes %.1f logins/s with %d worker(s) (%.1f ms each); %d clients, think 1 s, 3 s deadline, retry at once\n' \
		"$cap" "$WORKERS" "$ms" "$clients"
	# The identity service: built-in logins, admission off (no queue bound, no deadline).
	cat >"$DIR/svc.conf" <<EOF
tenants = ( { name = "default"; reservation = 0.0; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = $(calc "round($ms * 10, 1)"); } );
gateway: {
  listen = "127.0.0.1:$up";
  credentials = "$DIR/svc.creds";
  capacity = { cpu = $((WORKERS * 10000)).0; };
  argon2 = { m_cost_kib = $M_COST; t_cost = $T_COST; parallelism = 1;
             memory_budget_mib = $((WORKERS * M_COST / 1024)); };
  admission = false;
  reject_floor_ms = 0;
  max_connections = 8192;
  max_connections_per_prefix = 8192;
  max_connections_per_parent = 8192;
};
counters: { login_failures = { enabled = false; }; login_successes = { enabled = false; }; };
daemon: { control_socket = "$DIR/svc.sock"; log_level = "warn"; metrics_listen = "127.0.0.1:$sp"; };
EOF
	: >"$DIR/svc.creds"
	chmod 600 "$DIR/svc.creds"
	echo password | "$BUILD/sluicectl" -c "$DIR/svc.conf" user add default user >/dev/null ||
		{ echo "bench/proxy.sh: user add failed" >&2; exit 1; }
	# sluice in front: upstream mode, one connection per service worker, a forward's cost
	# its measured time (a worker busy all the time is 10,000 units/s).
	cat >"$DIR/front.conf" <<EOF
tenants = ( { name = "default"; reservation = 0.0; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = $(calc "round($ms * 10, 1)"); } );
gateway: {
  listen = "127.0.0.1:$fr";
  upstream = { url = "http://127.0.0.1:$up"; concurrency = ${FRONT_CONCURRENCY:-$WORKERS}; timeout_ms = 3000; };
  capacity = { cpu = ${FRONT_CPU:-$((WORKERS * 10000))}.0; };
  reject_floor_ms = 250;
  max_connections = 8192;
  max_connections_per_prefix = 8192;
  max_connections_per_parent = 8192;
  max_held = 8192;
};
counters: { login_failures = { enabled = false; }; login_successes = { enabled = false; }; };
daemon: { control_socket = "$DIR/front.sock"; log_level = "warn"; metrics_listen = "127.0.0.1:$mp"; };
EOF
	for label in "without sluice" "with sluice"; do
		"${ON_ORIGIN[@]}" "$BUILD/sluiced" -c "$DIR/svc.conf" -f >"$DIR/svc.log" 2>&1 &
		SVC_PID=$!
		wait_port "$up"
		port=$up
		if [ "$label" = "with sluice" ]; then
			# shellcheck disable=SC2086
			"${ON_REST[@]}" env $SLUICED_ENV "$BUILD/sluiced" -c "$DIR/front.conf" -f >"$DIR/front.log" 2>&1 &
			FRONT_PID=$!
			wait_port "$fr"
			port=$fr
		fi
		cb=$(capacity)
		t0=$(date +%s.%N) b0=$(busy_ticks) s0=$(proc_ticks $SVC_PID) f0=$(proc_ticks $FRONT_PID)
		sampler=
		if [ -n "$FRONT_PID" ]; then
			# The front's upstream limit and forwards in flight, 10 times a second; at
			# the end its forwards' and the service's hashes' mean times.
			"${ON_REST[@]}" "$PY" "$ROOT/bench/metrics_sample.py" "127.0.0.1:$mp" 0.1 \
				--service "127.0.0.1:$sp" ${SAMPLES_RAW:+--raw "$SAMPLES_RAW"} >"$DIR/samples" &
			sampler=$!
		fi
		r=$("${ON_REST[@]}" nice -n 19 "$BUILD/bench/monday" --port "$port" --clients "$clients" --think 1 \
			--deadline 3 --warmup "$WARMUP" --duration "$DURATION" --label "$label")
		# Where the CPUs went during the run (warm-up included), in CPUs busy: the
		# service (its workers and loop), sluice in front, and the rest (the client,
		# the bench's own tools, the machine's neighbours).
		t1=$(date +%s.%N) b1=$(busy_ticks) s1=$(proc_ticks $SVC_PID) f1=$(proc_ticks $FRONT_PID)
		front_line=
		if [ -n "$sampler" ]; then
			kill -INT "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
			front_line=$(cat "$DIR/samples")
		fi
		cpu_line=$(calc "'service %.2f, sluice %.2f, the rest %.2f CPUs busy of $NCPU' % (($s1 - $s0) / $hz / ($t1 - $t0), ($f1 - $f0) / $hz / ($t1 - $t0), (($b1 - $b0) - ($s1 - $s0) - ($f1 - $f0)) / $hz / ($t1 - $t0))")
		for pid in $FRONT_PID $SVC_PID; do kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
		FRONT_PID= SVC_PID=
		ca=$(capacity)
		cap=$(calc "($(j "$cb" hashes_per_s) + $(j "$ca" hashes_per_s)) / 2")
		record "$cb"; record "$r"; record "$ca"
		printf '  %-15s goodput %6.1f/s = %5.1f%% of %.1f logins/s  (ok p99 %s ms, %s 429s, %s timeouts, %s attempts)\n' \
			"$label" "$(j "$r" goodput_per_s)" "$(calc "100 * $(j "$r" goodput_per_s) / $cap")" \
			"$cap" "$(j "$r" ok_p99_ms)" "$(j "$r" status_429)" "$(j "$r" timeouts)" "$(j "$r" attempts)"
		printf '  %-15s %s\n' "" "$cpu_line"
		[ -z "$front_line" ] || printf '  %-15s %s\n' "" "$front_line"
	done
}

case "$WHAT" in
overhead) overhead ;;
monday) monday_through ;;
all) overhead; monday_through ;;
*) echo "usage: bench/proxy.sh [overhead|monday|all]" >&2; exit 2 ;;
esac
