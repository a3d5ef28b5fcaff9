# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Starting a gateway-only sluiced for a suite (needs tap.sh and $BUILD).

# gw_start CONF LOG: sluiced in the foreground on CONF, logging to LOG; SLUICED_PID is set.
# Returns once the gateway listens; bails out with the log if it dies or never does.
gw_start() {
	"$BUILD/sluiced" -c "$1" -f >"$2" 2>&1 &
	SLUICED_PID=$!
	for _ in $(seq 1 100); do
		grep -q "gateway listening" "$2" && return 0
		kill -0 "$SLUICED_PID" 2>/dev/null || break
		sleep 0.05
	done
	grep -q "gateway listening" "$2" && return 0
	sed 's/^/# /' "$2"
	echo "Bail out! sluiced did not start the gateway"
	exit 1
}

# gw_nodes_start NODE...: a gateway node per name, each on $NT_DIR/NODE.conf logging to
# $NT_DIR/NODE.log, its pid appended to PIDS; returns once every one listens and has its
# Redis connected, and bails out with the log of one that does not ("Bail out! NODE did
# not start").
gw_nodes_start() {
	local n
	for n in "$@"; do
		"$BUILD/sluiced" -c "$NT_DIR/$n.conf" -f >"$NT_DIR/$n.log" 2>&1 &
		PIDS+=($!)
	done
	for n in "$@"; do
		for _ in $(seq 1 100); do
			grep -q "gateway listening" "$NT_DIR/$n.log" &&
				grep -q "redis .*connected" "$NT_DIR/$n.log" && break
			sleep 0.05
		done
		grep -q "gateway listening" "$NT_DIR/$n.log" || {
			tap_diag "$(cat "$NT_DIR/$n.log")"; echo "Bail out! $n did not start"; exit 1; }
	done
}

# ---- what every gateway suite starts and ends with ------------------------------------------

# gw_suite_env: ROOT the checkout, BUILD (default build) made absolute from it, PY Debian's
# python3 (the one whose modules the suites import). For a suite that needs them before
# gw_suite (which sets them too).
gw_suite_env() {
	ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	BUILD=${BUILD:-build}
	case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
	PY=/usr/bin/python3
}

# gw_suite TAG [NEED...]: a suite's start. gw_suite_env; the suite is skipped ("1..0 # SKIP
# why") without a NEED: nginx (nginx.sh loaded first), crypt (Python's crypt module, for
# htpasswd files), py (PY with http.client, threading, hashlib), or bails out without
# built: sluiced and sluicectl in BUILD; then DIR a fresh /tmp/sluice-TAG.XXXXXX,
# SLUICED_PID empty, and gw_suite_cleanup on EXIT. Call it from the suite's top level (it
# sets the suite's variables).
gw_suite() {
	local tag=$1 need
	shift
	gw_suite_env
	for need in "$@"; do
		case "$need" in
		nginx) nginx_available ||
			{ echo "1..0 # SKIP nginx is not installed (scripts/deps.sh test)"; exit 0; } ;;
		crypt) $PY -c 'import crypt' 2>/dev/null ||
			{ echo "1..0 # SKIP python3 has no crypt module"; exit 0; } ;;
		py) $PY -c 'import http.client, threading, hashlib' 2>/dev/null ||
			{ echo "1..0 # SKIP /usr/bin/python3 missing"; exit 0; } ;;
		built) [ -x "$BUILD/sluiced" ] && [ -x "$BUILD/sluicectl" ] ||
			{ echo "Bail out! build sluiced and sluicectl first (make)"; exit 1; } ;;
		*) echo "Bail out! gw_suite: no such need: $need"; exit 1 ;;
		esac
	done
	DIR=$(mktemp -d "/tmp/sluice-$tag.XXXXXX")
	SLUICED_PID=
	trap gw_suite_cleanup EXIT
}

# gw_redis_suite TAG: a Redis suite's start: gw_suite_env, NT_DIR a fresh
# /tmp/sluice-TAG.XXXXXX with redis.sh loaded on it, PIDS empty (gw_nodes_start's), and the
# suite skipped (NT_DIR removed) without redis-server. What a Redis suite stops at its end
# differs: it writes its own cleanup, from gw_nodes_stop, redis.sh's stops and suite_rm_dir.
gw_redis_suite() {
	gw_suite_env
	NT_DIR=$(mktemp -d "/tmp/sluice-$1.XXXXXX")
	. "$ROOT/tests/lib/redis.sh"
	PIDS=()
	redis_available || { rm -rf "$NT_DIR"; echo "1..0 # SKIP redis-server is not installed"; exit 0; }
}

# gw_nodes_stop: every pid in PIDS (the nodes gw_nodes_start started, and what else the suite
# put there) terminated, all at once, then each waited for.
gw_nodes_stop() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
}

# suite_rm_dir DIR: a suite's directory removed at its end, or kept and named with SL_DEBUG=1.
suite_rm_dir() {
	[ "${SL_DEBUG:-0}" = 1 ] && echo "# SL_DEBUG=1: left $1" >&2 || rm -rf "$1"
}

# gw_stop: the suite's sluiced (SLUICED_PID, if any) terminated and waited for.
gw_stop() {
	[ -n "${SLUICED_PID:-}" ] && kill -TERM "$SLUICED_PID" 2>/dev/null && wait "$SLUICED_PID" 2>/dev/null
	SLUICED_PID=
}

# gw_suite_cleanup: the suite's end, on EXIT: gw_stop, every nginx nginx_start started (when
# nginx.sh is loaded), then the suite's own suite_cleanup_more (its helper servers) if it
# defines one, then DIR removed, or kept and named with SL_DEBUG=1.
gw_suite_cleanup() {
	gw_stop
	declare -F nginx_stop >/dev/null && nginx_stop
	declare -F suite_cleanup_more >/dev/null && suite_cleanup_more
	suite_rm_dir "$DIR"
}

# gw_metric [--absent V] NAME TEXT...: from the gateway's /metrics on MPORT, the value of the
# first sample of NAME with labels ("NAME{") whose line holds every TEXT (a label as written,
# 'route="slow"'); V (0) when there is none.
gw_metric() {
	local absent=0
	if [ "$1" = --absent ]; then absent=$2; shift 2; fi
	curl -s "http://127.0.0.1:$MPORT/metrics" | /usr/bin/python3 -c '
import sys
absent, name, want = sys.argv[1], sys.argv[2], sys.argv[3:]
for l in sys.stdin:
    if l.startswith(name + "{") and all(w in l for w in want):
        print(l.split()[-1]); break
else:
    print(absent)' "$absent" "$@"
}
