#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The stream job's figures (bench/stream.c) against a private redis-server on a Unix socket:
# events per second absorbed in process and on Redis, and memory per million prefix keys.
# Nothing outside this script's own temporary directory and its redis-server is touched;
# the server stops on exit. Without redis-server only the in-process rows run.
#
# Usage: bench/stream.sh [ARGS...]     (make bench-stream; ARGS go to build/bench/stream,
#                                       e.g. --duration 5 --keys 2000000)
# Knobs: KEEP=1 keeps the directory (the redis log).
# Results: the table on stdout, the JSON lines appended to $BUILD/bench/stream-results.jsonl.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
BIN=$BUILD/bench/stream
OUT=$BUILD/bench/stream-results.jsonl

[ -x "$BIN" ] || { echo "bench/stream.sh: build $BIN first (make bench-stream)" >&2; exit 1; }

NT_DIR=$(mktemp -d /tmp/sluice-bench-stream.XXXXXX)
# shellcheck source=../tests/lib/redis.sh
. "$ROOT/tests/lib/redis.sh"
cleanup() {
	redis_stop
	if [ "${KEEP:-0}" = 1 ]; then echo "bench/stream.sh: kept $NT_DIR" >&2; else rm -rf "$NT_DIR"; fi
}
trap cleanup EXIT

args=()
if redis_available; then
	redis_start || { echo "bench/stream.sh: redis-server did not start" >&2; exit 1; }
	args=(--redis "unix:$REDIS_SOCK")
	ver="redis $(redis-server --version | cut -d' ' -f3)"
else
	echo "bench/stream.sh: no redis-server: in-process rows only" >&2
	ver="no redis"
fi

mkdir -p "$(dirname "$OUT")"
echo "== $ver, $(nproc) CPU(s), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
"$BIN" "${args[@]}" "$@" | tee "$NT_DIR/stream.out"
rc=${PIPESTATUS[0]}
if [ ${#args[@]} -gt 0 ]; then
	# What ran on the server: the job's pipeline is PFADD, PEXPIRE and PFCOUNT per probe.
	redis-cli -s "$REDIS_SOCK" info commandstats | tr -d '\r' |
		awk -F'[:=,]' '/^cmdstat_(pfadd|pexpire|pfcount):/ {
				sub("cmdstat_", "", $1)
				printf "%s%s=%s (%s us each)", sep, $1, $3, $7; sep = " " }
			END { print "  (redis commands this run)" }'
fi
grep '^{' "$NT_DIR/stream.out" >>"$OUT"
exit "$rc"
