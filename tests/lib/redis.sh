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

# A Redis Cluster of masters on loopback: redis_cluster_start PORT... starts one
# redis-server --cluster-enabled yes per PORT (named cPORT, its bus on PORT + 10000, so PORT
# must be under 55536), joins them with `redis-cli --cluster create ... --cluster-replicas 0`
# and returns once every node says cluster_state:ok. cluster-require-full-coverage is no (a
# dead master leaves the others serving their slots, as docs/operations.md advises) and
# cluster-node-timeout 1000 ms, so a kill is noticed in about a second. Extra OPTIONs for
# every node in $REDIS_CLUSTER_OPTS. redis_cluster_ports lists the ports started.
REDIS_CLUSTER_PORTS=
redis_cluster_start() {
	local p hosts=() i ok
	for p in "$@"; do
		# shellcheck disable=SC2086
		redis_start_port "c$p" "$p" --cluster-enabled yes \
			--cluster-config-file "$REDIS_DIR/c$p/nodes.conf" --cluster-node-timeout 1000 \
			--cluster-require-full-coverage no ${REDIS_CLUSTER_OPTS:-} || return 1
		hosts+=("127.0.0.1:$p")
		REDIS_CLUSTER_PORTS="$REDIS_CLUSTER_PORTS $p"
	done
	redis-cli --cluster create "${hosts[@]}" --cluster-replicas 0 --cluster-yes \
		>"$REDIS_DIR/cluster-create.log" 2>&1 || return 1
	for i in $(seq 1 100); do
		ok=1
		for p in "$@"; do
			redis-cli -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || ok=0
		done
		[ "$ok" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}
redis_cluster_ports() { echo $REDIS_CLUSTER_PORTS; }
# redis_cluster_owner KEY: the port of the master that serves KEY's slot now (CLUSTER NODES
# as the first node started sees it).
redis_cluster_owner() {
	local p slot
	p=$(echo $REDIS_CLUSTER_PORTS | cut -d' ' -f1)
	slot=$(redis-cli -p "$p" cluster keyslot "$1")
	redis-cli -p "$p" cluster nodes | awk -v s="$slot" '$3 ~ /master/ {
		for (i = 9; i <= NF; i++) {
			if ($i ~ /^\[/) continue
			n = split($i, r, "-"); lo = r[1] + 0; hi = (n > 1 ? r[2] : r[1]) + 0
			if (lo <= s && s <= hi) { split($2, a, "[:@]"); print a[2]; exit }
		}
	}'
}
# redis_cluster_port_of NODE-ID / redis_cluster_id PORT: between a master's port and its id.
redis_cluster_id() { redis-cli -p "$1" cluster myid; }
# redis_cluster_move_slot SLOT FROM_PORT TO_PORT [PAUSE]: reshard one slot by hand, as
# `redis-cli --cluster reshard` does it: the target IMPORTING, the source MIGRATING, its keys
# MIGRATEd one at a time (PAUSE seconds between keys, default 0: the window in which a
# client meets ASK), then SETSLOT NODE on every master (a client that asks the source now
# gets MOVED).
redis_cluster_move_slot() {
	local slot=$1 from=$2 to=$3 pause=${4:-0} fid tid k p
	fid=$(redis_cluster_id "$from")
	tid=$(redis_cluster_id "$to")
	redis-cli -p "$to" cluster setslot "$slot" importing "$fid" >/dev/null || return 1
	redis-cli -p "$from" cluster setslot "$slot" migrating "$tid" >/dev/null || return 1
	while :; do
		k=$(redis-cli -p "$from" cluster getkeysinslot "$slot" 1)
		[ -n "$k" ] || break
		redis-cli -p "$from" migrate 127.0.0.1 "$to" "$k" 0 5000 >/dev/null || return 1
		[ "$pause" = 0 ] || sleep "$pause"
	done
	for p in $REDIS_CLUSTER_PORTS; do
		redis-cli -p "$p" cluster setslot "$slot" node "$tid" >/dev/null 2>&1
	done
	return 0
}
redis_cluster_stop() {
	local p
	for p in $REDIS_CLUSTER_PORTS; do redis_stop_port "c$p"; done
	REDIS_CLUSTER_PORTS=
}
