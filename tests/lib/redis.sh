# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A private redis-server for a test: Unix socket in the test's directory, no persistence.
# Needs $NT_DIR (netns.sh) or sets its own. redis_start / redis_stop / redis_pause.

REDIS_DIR=${NT_DIR:-$(mktemp -d /tmp/sluice-redis.XXXXXX)}
REDIS_SOCK=$REDIS_DIR/redis.sock
REDIS_PIDFILE=$REDIS_DIR/redis.pid

redis_available() { command -v redis-server >/dev/null 2>&1; }

redis_start() {
	redis-server --unixsocket "$REDIS_SOCK" --unixsocketperm 700 --port 0 --save '' \
		--appendonly no --daemonize yes --pidfile "$REDIS_PIDFILE" --dir "$REDIS_DIR" \
		--logfile "$REDIS_DIR/redis.log" >/dev/null || return 1
	local i
	for i in $(seq 1 50); do
		redis-cli -s "$REDIS_SOCK" ping 2>/dev/null | grep -q PONG && return 0
		sleep 0.05
	done
	return 1
}

redis_stop() {
	[ -f "$REDIS_PIDFILE" ] || return 0
	local pid
	pid=$(cat "$REDIS_PIDFILE" 2>/dev/null)
	[ -n "$pid" ] && kill -CONT "$pid" 2>/dev/null
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	rm -f "$REDIS_PIDFILE"
}

# redis_pause / redis_resume: a Redis that hangs instead of dying (SIGSTOP/SIGCONT).
redis_pause() { kill -STOP "$(cat "$REDIS_PIDFILE")"; }
redis_resume() { kill -CONT "$(cat "$REDIS_PIDFILE")"; }
