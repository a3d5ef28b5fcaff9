#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The counter store's figures (bench/counters.c) against a private redis-server: once over
# its Unix socket, once over TCP on a loopback port. Nothing outside this script's own
# temporary directory and its two redis-servers is touched; both stop on exit.
#
# Usage: bench/counters.sh [unix|tcp|all]     (make bench-counters runs all)
# Knobs: DURATION (seconds per case, 2), CONCURRENCY (32), BURST (100); KEEP=1 keeps the
#        directory (redis logs).
# Results: the tables on stdout, the JSON lines appended to $BUILD/bench/counters-results.jsonl.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
DURATION=${DURATION:-2}
CONCURRENCY=${CONCURRENCY:-32}
BURST=${BURST:-100}
WHAT=${1:-all}
BIN=$BUILD/bench/counters
OUT=$BUILD/bench/counters-results.jsonl

[ -x "$BIN" ] || { echo "bench/counters.sh: build $BIN first (make bench-counters)" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "bench/counters.sh: no redis-server" >&2; exit 1; }

NT_DIR=$(mktemp -d /tmp/sluice-bench-counters.XXXXXX)
# shellcheck source=../tests/lib/redis.sh
. "$ROOT/tests/lib/redis.sh"
TCP_PIDFILE=$NT_DIR/redis-tcp.pid
cleanup() {
	redis_stop
	if [ -f "$TCP_PIDFILE" ]; then
		local pid
		pid=$(cat "$TCP_PIDFILE")
		kill "$pid" 2>/dev/null
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	fi
	if [ "${KEEP:-0}" = 1 ]; then echo "bench/counters.sh: kept $NT_DIR" >&2; else rm -rf "$NT_DIR"; fi
}
trap cleanup EXIT

# A second server for TCP, bound to loopback only, on a port the kernel says is free.
tcp_start() {
	TCP_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
	redis-server --bind 127.0.0.1 --port "$TCP_PORT" --protected-mode yes --save '' \
		--appendonly no --daemonize yes --pidfile "$TCP_PIDFILE" --dir "$NT_DIR" \
		--logfile "$NT_DIR/redis-tcp.log" >/dev/null || return 1
	for _ in $(seq 1 50); do
		redis-cli -h 127.0.0.1 -p "$TCP_PORT" ping 2>/dev/null | grep -q PONG && return 0
		sleep 0.05
	done
	return 1
}

run() { # LABEL ADDR REDIS-CLI-ARGS...
	echo "== $1: redis $(redis-server --version | cut -d' ' -f3), $(nproc) CPU(s)," \
		"load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
	"$BIN" --redis "$2" --label "$1" --duration "$DURATION" --concurrency "$CONCURRENCY" \
		--burst "$BURST" | tee "$NT_DIR/$1.out"
	local rc=${PIPESTATUS[0]}
	# Proof of what ran on the server: the script by EVALSHA (EVAL only before SCRIPT LOAD
	# has answered), the naive check as GET and SET.
	"${@:3}" info commandstats | tr -d '\r' |
		awk -F'[:=,]' '/^cmdstat_(evalsha|eval|get|set):/ {
				sub("cmdstat_", "", $1); printf "%s%s=%s", sep, $1, $3; sep = " " }
			END { print "  (redis commands this run)" }'
	grep '^{' "$NT_DIR/$1.out" >>"$OUT"
	echo
	return "$rc"
}

mkdir -p "$(dirname "$OUT")"
rc=0
if [ "$WHAT" = unix ] || [ "$WHAT" = all ]; then
	redis_start || { echo "bench/counters.sh: redis-server did not start" >&2; exit 1; }
	run unix "unix:$REDIS_SOCK" redis-cli -s "$REDIS_SOCK" || rc=1
	redis_stop
fi
if [ "$WHAT" = tcp ] || [ "$WHAT" = all ]; then
	tcp_start || { echo "bench/counters.sh: redis-server on 127.0.0.1 did not start" >&2; exit 1; }
	run tcp "127.0.0.1:$TCP_PORT" redis-cli -h 127.0.0.1 -p "$TCP_PORT" || rc=1
fi
exit "$rc"
