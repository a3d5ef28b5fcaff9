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

# More servers on loopback TCP ports, for suites that need several (a master and a replica,
# sentinels, one with requirepass): redis_start_port NAME PORT [FILE.conf] [OPTION...]
# starts one with its files under $REDIS_DIR/NAME (a FILE.conf first is its config file,
# as redis-server wants it: a sentinel's); $REDIS_EXEC, if set, prefixes the command (e.g.
# "ip netns exec NS"), $REDIS_HOST the address it binds (127.0.0.1). It is up once it answers
# PING (NOAUTH counts: a password is set).
# redis_stop_port NAME stops it; redis_kill_port NAME kills it (SIGKILL); redis_stop_ports
# stops every one started so.
REDIS_PORTS_STARTED=
redis_start_port() {
	local name=$1 port=$2 d=$REDIS_DIR/$1 conf=() i
	shift 2
	case "${1:-}" in *.conf) conf=("$1"); shift ;; esac
	mkdir -p "$d"
	${REDIS_EXEC:-} redis-server "${conf[@]}" --bind "${REDIS_HOST:-127.0.0.1}" --port "$port" --save '' \
		--appendonly no --daemonize yes --pidfile "$d/redis.pid" --dir "$d" \
		--logfile "$d/redis.log" "$@" >/dev/null || return 1
	REDIS_PORTS_STARTED="$REDIS_PORTS_STARTED $name"
	for i in $(seq 1 100); do
		${REDIS_EXEC:-} redis-cli -h "${REDIS_HOST:-127.0.0.1}" -p "$port" ping 2>/dev/null | grep -qE 'PONG|NOAUTH' &&
			[ -s "$d/redis.pid" ] && return 0
		sleep 0.05
	done
	return 1
}
redis_pid_port() { cat "$REDIS_DIR/$1/redis.pid" 2>/dev/null; }
redis_stop_port() {
	local pid
	pid=$(redis_pid_port "$1")
	[ -n "$pid" ] || return 0
	kill -CONT "$pid" 2>/dev/null
	kill "$pid" 2>/dev/null
	for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	kill -9 "$pid" 2>/dev/null
	rm -f "$REDIS_DIR/$1/redis.pid"
}
redis_kill_port() {
	local pid
	pid=$(redis_pid_port "$1")
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	rm -f "$REDIS_DIR/$1/redis.pid"
}
redis_stop_ports() {
	local n
	for n in $REDIS_PORTS_STARTED; do redis_stop_port "$n"; done
	REDIS_PORTS_STARTED=
}
