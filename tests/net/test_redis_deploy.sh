#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Redis as people deploy it (issue 16), on a gateway-only sluiced and real redis-servers this
# suite starts on loopback ports (sentinels too); what a user sees is asserted: /login's
# statuses and how long they took, /metrics, `sluicectl status`, the log, the keys in Redis.
#   1. auth:     requirepass, then an ACL user: logins are counted in Redis (the keys are
#                there), the stream job shares its counts there too; a wrong password is one
#                clear log line (rate-limited), the fail mode (fallback, 401/429 as designed),
#                and the password is in no log line, /metrics, status or --check-config.
#   2. breaker:  an idle node's breaker closes by itself once Redis answers again (no user
#                request needed), and no user's login pays a probe's timeout while Redis is
#                paused (the probe is the store's own PING).
#   3. dns:      redis.address by name, in a network namespace whose resolver (its own
#                /etc/netns/NAME/resolv.conf) names an address that swallows UDP 53: the
#                gateway keeps answering /metrics and logins within their timeout while the
#                name cannot be resolved, and follows the name to a new address once it can.
#   4. sentinel: one master, one replica, three sentinels; logins keep being answered within
#                the timeout through `SENTINEL failover`, and counters land in the new master.
#   5. cluster:  a Redis Cluster node is refused with a clear error, never silently used.
#   6. config:   the new keys' rules, at load (--check-config).
# ONLY="auth dns" runs some parts; SL_DEBUG=1 leaves the directory in place.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
PY=/usr/bin/python3
. "$HERE/../lib/tap.sh"
NT_DIR=$(mktemp -d /tmp/sluice-deploy.XXXXXX)
. "$HERE/../lib/redis.sh"
SLUICED_PID=
NS=
DNS_PID=
ONLY=${ONLY:-auth breaker dns sentinel cluster config}
part() { grep -qw "$1" <<<"$ONLY"; }

redis_available || { echo "1..0 # SKIP redis-server is not installed"; exit 0; }
gw_stop() {
	[ -n "$SLUICED_PID" ] && kill -TERM "$SLUICED_PID" 2>/dev/null && wait "$SLUICED_PID" 2>/dev/null
	SLUICED_PID=
}
cleanup() {
	gw_stop
	redis_stop_ports
	[ -n "$DNS_PID" ] && kill "$DNS_PID" 2>/dev/null
	if [ -n "$NS" ]; then
		ip netns del "$NS" 2>/dev/null
		rm -rf "/etc/netns/$NS"
	fi
	if [ "${SL_DEBUG:-0}" = 1 ]; then echo "# SL_DEBUG=1: left $NT_DIR" >&2; else rm -rf "$NT_DIR"; fi
}
trap cleanup EXIT

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$NT_DIR/session.key"
chmod 600 "$NT_DIR/session.key"
: >"$NT_DIR/creds.txt"
chmod 600 "$NT_DIR/creds.txt"
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
MPORT=$(free_port)
CONF=$NT_DIR/gw.conf
LOG=$NT_DIR/gw.log
# write_conf 'REDIS GROUP BODY' [STREAM]: the gateway's config with that redis group.
write_conf() {
	cat >"$CONF" <<EOC
tenants = ( { name = "default"; reservation = 0.0; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 10.0; } );
gateway: {
  listen = "127.0.0.1:$PORT";
  credentials = "$NT_DIR/creds.txt";
  session_key = "$NT_DIR/session.key";
  capacity = { cpu = 1000000.0; };
  argon2 = { m_cost_kib = 256; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
  trusted_hops = 1;
  reject_floor_ms = 0;
  login_uniform = false;
  delivery = "log";
  delivery_log = "$NT_DIR/outbox.log";
};
redis: { $1 };
cluster: { node = "n1"; nodes = 2; };
counters: {
  login_failures = { rate = 0.001; burst = 5.0; };
  login_parent = { enabled = false; };
  login_successes = { rate = 0.001; burst = 1000.0; };
  tenant_logins = { rate = 100000.0; burst = 100000.0; };
};
stream: { ${2:-enabled = false;} };
daemon: { control_socket = "$NT_DIR/gw.sock"; metrics_listen = "127.0.0.1:$MPORT"; };
EOC
}
ctl() { "$BUILD/sluicectl" -c "$CONF" "$@"; }
write_conf 'address = "127.0.0.1:1";'
for who in "alice pw-a" "bob pw-b" "carol pw-c" "dave pw-d"; do
	set -- $who
	echo "$2" | ctl user add default "$1" >/dev/null || { echo "Bail out! user add $1"; exit 1; }
done
# X: the prefix of commands that reach the gateway (the namespace's, in part 3).
X=
gw_start() {
	: >"$LOG"
	$X "$BUILD/sluiced" -c "$CONF" -f >"$LOG" 2>&1 &
	SLUICED_PID=$!
	for _ in $(seq 1 100); do
		grep -q "gateway listening" "$LOG" && return 0
		kill -0 "$SLUICED_PID" 2>/dev/null || break
		sleep 0.05
	done
	sed 's/^/# /' "$LOG"
	echo "Bail out! sluiced did not start the gateway"
	exit 1
}
# wait_log REGEX [TENTHS]: until the log has a line matching REGEX.
wait_log() {
	for _ in $(seq 1 "${2:-100}"); do grep -Eq -- "$1" "$LOG" && return 0; sleep 0.1; done
	return 1
}

# req.py PORT PATH,USER,PASSWORD,XFF...: one JSON line per request ({status, ms}), in order;
# "GET /metrics" as PATH asks the metrics port (PORT2) instead.
cat >"$NT_DIR/req.py" <<'PYEOF'
import http.client, json, os, sys, time
port, mport, args = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
tmo = float(os.environ.get("REQ_TIMEOUT", "30"))
for spec in args:
    path, user, pw, xff = spec.split(",")
    t0 = time.monotonic()
    try:
        if path == "/metrics":
            c = http.client.HTTPConnection("127.0.0.1", mport, timeout=tmo)
            c.request("GET", "/metrics")
        else:
            body = "username=" + user + "&password=" + pw
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=tmo)
            c.request("POST", path, body=body, headers={"Host": "idp.test",
                      "X-Forwarded-For": xff,
                      "Content-Type": "application/x-www-form-urlencoded"})
        r = c.getresponse()
        r.read()
        c.close()
        st = r.status
    except Exception as e:
        st = "error:" + type(e).__name__
    print(json.dumps({"status": st, "ms": round((time.monotonic() - t0) * 1000, 1)}), flush=True)
PYEOF
req() { $X $PY "$NT_DIR/req.py" "$PORT" "$MPORT" "$@"; }
statuses() { req "$@" | $PY -c 'import json,sys; print(" ".join(str(json.loads(l)["status"]) for l in sys.stdin))'; }
# login USER PASSWORD XFF [COUNT]: COUNT logins one after another, their statuses.
login() { local i specs=(); for i in $(seq 1 "${4:-1}"); do specs+=("/login,$1,$2,$3"); done; statuses "${specs[@]}"; }
# slowest FILE: the largest "ms" of req.py's lines; answered FILE: how many got an HTTP status.
slowest() { $PY -c 'import json,sys; print(int(max([json.loads(l)["ms"] for l in open(sys.argv[1])] or [0])))' "$1"; }
answered() { $PY -c 'import json,sys; print(sum(isinstance(json.loads(l)["status"], int) for l in open(sys.argv[1])))' "$1"; }
# load.py SECONDS FILE [metrics]: logins every 50 ms for SECONDS (alice's right password, and
# wrong ones, each for its own account and password from its own /24, so that no stream-job
# escalation delays them; with "metrics", every other request is GET /metrics), one req.py
# line each into FILE, written as they come.
cat >"$NT_DIR/load.py" <<'PYEOF'
import json, os, subprocess, sys, time
secs, out = float(sys.argv[1]), open(sys.argv[2], "w")
py, req, port, mport = os.environ["LOAD_PY"], os.environ["LOAD_REQ"], os.environ["LOAD_PORT"], os.environ["LOAD_MPORT"]
metrics = len(sys.argv) > 3 and sys.argv[3] == "metrics"
end, i = time.monotonic() + secs, 0
while time.monotonic() < end:
    i += 1
    if metrics and i % 2:
        spec = "/metrics,-,-,-"
    elif i % 10 == 0:
        spec = "/login,alice,pw-a,198.51.100.7"
    else:
        spec = "/login,u%s-%d,bad%d,10.%d.%d.1" % (port, i, i, i // 250 % 250, i % 250)
    r = subprocess.run([py, req, port, mport, spec], capture_output=True, text=True)
    out.write(r.stdout)
    out.flush()
    time.sleep(0.05)
PYEOF
export LOAD_PY=$PY LOAD_REQ=$NT_DIR/req.py LOAD_PORT=$PORT LOAD_MPORT=$MPORT
# load SECONDS FILE [metrics]: load.py, through $X
load() { $X $PY "$NT_DIR/load.py" "$@"; }
status_json() { ctl status --json; }
store_field() { jget "$(status_json)" "store.$1"; }
metrics() { $X curl -s --max-time 5 "http://127.0.0.1:$MPORT/metrics"; }
wait_connected() {
	for _ in $(seq 1 "${1:-100}"); do
		[ "$(store_field connected)" = true ] && [ "$(store_field breaker)" = closed ] && return 0
		sleep 0.1
	done
	return 1
}
# fail_keys CLI...: the login_fail counters Redis holds.
fail_keys() { "$@" --scan --pattern 'sluice:{default}:login_fail:*' 2>/dev/null | grep -vc ':live$'; }

# ---- 1. AUTH: requirepass, an ACL user, a wrong password --------------------------------
if part auth; then
	PW='Pw-s3cret-7f3a9c'
	APW='Acl-s3cret-b81d2e'
	RP=$(free_port)
	redis_start_port auth "$RP" --requirepass "$PW" ||
		{ echo "Bail out! redis-server with requirepass did not start"; exit 1; }
	rc() { redis-cli -p "$RP" --no-auth-warning -a "$PW" "$@"; }
	write_conf "address = \"127.0.0.1:$RP\"; password = \"$PW\"; timeout_ms = 200;" \
		'window_s = 600;'
	gw_start
	wait_connected || tap_not_ok "requirepass: the store connects with redis.password"
	expect_eq "requirepass: status says connected, breaker closed" \
		"$(store_field connected) $(store_field breaker)" "true closed"
	expect_eq "requirepass: alice's wrong passwords: 401 x5, then 429 (burst 5, counted in Redis)" \
		"$(login alice bad 203.0.113.10 6)" "401 401 401 401 401 429"
	expect_ge "requirepass: Redis holds alice's login_fail counters" "$(fail_keys rc)" 1
	expect_eq "requirepass: every check was answered by Redis (no fallback)" \
		"$(store_field fallback_local)" 0
	# The stream job: its own connection, authenticated the same way.
	for _ in $(seq 1 50); do
		[ "$(metrics | grep -c 'sluice_stream_counting{mode="redis"} 1')" = 1 ] && break
		login carol bad 198.51.100.$((RANDOM % 200 + 1)) >/dev/null
		sleep 0.1
	done
	expect_eq "requirepass: the stream job counts on Redis (sluice_stream_counting mode=redis)" \
		"$(metrics | grep -c 'sluice_stream_counting{mode="redis"} 1')" 1
	expect_ge "requirepass: the stream job's HyperLogLogs are in Redis" \
		"$(rc --scan --pattern 'sluice:{hll:*' | wc -l)" 1
	# The password shows nowhere.
	{ ctl status; status_json; metrics; "$BUILD/sluiced" -c "$CONF" --check-config 2>&1; cat "$LOG"; } \
		>"$NT_DIR/shown.txt" 2>&1
	expect_eq "the password is in no log line, /metrics, status (text, JSON) or --check-config" \
		"$(grep -c -- "$PW" "$NT_DIR/shown.txt")" 0
	gw_stop

	# An ACL user that may only touch sluice's keys, and a default user it cannot be.
	rc ACL SETUSER sluiceapp on ">$APW" '~sluice:*' '+@all' >/dev/null
	rc FLUSHALL >/dev/null
	write_conf "address = \"127.0.0.1:$RP\"; user = \"sluiceapp\"; password = \"$APW\"; timeout_ms = 200;" \
		'window_s = 600;'
	gw_start
	wait_connected || tap_not_ok "ACL user: the store connects as redis.user"
	expect_eq "ACL user: bob's wrong passwords: 401 x5, then 429 (counted in Redis)" \
		"$(login bob bad 203.0.113.20 6)" "401 401 401 401 401 429"
	expect_ge "ACL user: Redis holds bob's login_fail counters" "$(fail_keys rc)" 1
	expect_ge "ACL user: sluiced's connections are sluiceapp's (CLIENT LIST: store and stream job)" \
		"$(rc CLIENT LIST | grep -c 'user=sluiceapp')" 2
	{ ctl status; status_json; metrics; cat "$LOG"; } >"$NT_DIR/shown.txt" 2>&1
	expect_eq "ACL user: its password is in no log line, /metrics or status" \
		"$(grep -c -- "$APW" "$NT_DIR/shown.txt")" 0
	gw_stop

	# A wrong password: the fail mode, one clear line, and no password in it.
	BAD='Wrong-s3cret-55aa'
	rc FLUSHALL >/dev/null
	write_conf "address = \"127.0.0.1:$RP\"; password = \"$BAD\"; timeout_ms = 200; breaker_open_ms = 300;"
	gw_start
	wait_log "AUTH refused" 30 || tap_not_ok "a wrong password is logged"
	sleep 3 # several reconnect periods (breaker_open_ms 300)
	line=$(grep "AUTH refused" "$LOG" | head -1)
	expect_match "a wrong password: the log says AUTH was refused and what to check" "$line" \
		'redis 127\.0\.0\.1:[0-9]+: AUTH refused: WRONGPASS.*counters use their fallbacks.*redis\.password'
	expect_le "  ... once, not at every reconnect (rate-limited: lines in 3 s)" \
		"$(grep -c 'AUTH refused' "$LOG")" 1
	expect_eq "  ... status: not connected" "$(store_field connected)" false
	expect_eq "a wrong password: logins fall back as designed (fail open at 5/2 per node: 401 x2, 429)" \
		"$(login dave bad 203.0.113.40 3)" "401 401 429"
	expect_eq "  ... and a right password signs in" "$(login dave pw-d 198.51.100.40)" 200
	expect_eq "  ... nothing was written to Redis" "$(fail_keys rc)" 0
	{ ctl status; status_json; metrics; cat "$LOG"; } >"$NT_DIR/shown.txt" 2>&1
	expect_eq "  ... and the wrong password is in no log line, /metrics or status" \
		"$(grep -c -- "$BAD" "$NT_DIR/shown.txt")" 0
	gw_stop
	# No password at all against requirepass: the same, said plainly.
	write_conf "address = \"127.0.0.1:$RP\"; timeout_ms = 200;"
	gw_start
	wait_log "wants a password" 30
	expect_match "no password against requirepass: the log says to set redis.password" \
		"$(grep 'wants a password' "$LOG" | head -1)" 'NOAUTH.*set redis\.password'
	gw_stop
	redis_stop_port auth
fi

# ---- 2. the breaker probes on its own -----------------------------------------------------
if part breaker; then
	RP=$(free_port)
	redis_start_port brk "$RP" || { echo "Bail out! redis-server did not start"; exit 1; }
	pid=$(redis_pid_port brk)
	write_conf "address = \"127.0.0.1:$RP\"; timeout_ms = 400; breaker_failures = 1; breaker_open_ms = 300;"
	gw_start
	wait_connected || tap_not_ok "breaker: connected"
	kill -STOP "$pid"
	login alice bad 203.0.113.50 >/dev/null # times out: the breaker opens
	expect_eq "Redis paused: one login's timeout opens the breaker" "$(store_field breaker)" open
	# Logins through several open periods: each answered at once from the fallback; before,
	# each half-open period let one user's login through to wait the whole 400 ms.
	specs=()
	for i in $(seq 1 30); do specs+=("/login,bob,bad,203.0.113.$((60 + i))"); done
	$PY - "$NT_DIR/paced.txt" "${specs[@]}" <<EOF
import subprocess, sys, time
out = open(sys.argv[1], "w")
for s in sys.argv[2:]:
    r = subprocess.run(["$PY", "$NT_DIR/req.py", "$PORT", "$MPORT", s], capture_output=True, text=True)
    out.write(r.stdout)
    time.sleep(0.1)
EOF
	expect_eq "  ... 30 logins over ~3 s (10 open periods) are all answered" \
		"$(answered "$NT_DIR/paced.txt")" 30
	expect_le "  ... and none waits on a probe (slowest, ms; the timeout is 400)" \
		"$(slowest "$NT_DIR/paced.txt")" 200
	tap_diag "  (slowest of 30: $(slowest "$NT_DIR/paced.txt") ms)"
	kill -CONT "$pid"
	# Nobody logs in now: the store's own probe must find Redis.
	t0=$(date +%s%N)
	wait_connected 50
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	expect_eq "Redis resumed, no requests: the idle node's status goes back to connected, closed" \
		"$(store_field connected) $(store_field breaker)" "true closed"
	tap_diag "  (closed ${ms} ms after Redis resumed)"
	sleep 0.5 # what the fallback charged meanwhile is handed over (the journal)
	k0=$(fail_keys redis-cli -p "$RP")
	expect_eq "  ... and the next login is counted in Redis (one more key)" \
		"$(login carol bad 203.0.113.99) $(( $(fail_keys redis-cli -p "$RP") - k0 ))" "401 1"
	# A Redis that dies and comes back, still with nobody asking.
	redis_kill_port brk
	for _ in $(seq 1 30); do [ "$(store_field connected)" = false ] && break; sleep 0.1; done
	expect_eq "Redis killed: status says not connected" "$(store_field connected)" false
	redis_start_port brk "$RP" || { echo "Bail out! redis-server did not restart"; exit 1; }
	wait_connected 50
	expect_eq "Redis restarted, no requests: connected and closed again by itself" \
		"$(store_field connected) $(store_field breaker)" "true closed"
	gw_stop
	redis_stop_port brk
fi

# ---- 3. a name whose resolver does not answer -------------------------------------------
if part dns; then
	if [ "$(id -u)" -ne 0 ] || ! ip netns add "sldns$$" 2>/dev/null; then
		tap_skip "redis.address by name with a dead resolver" "needs root and network namespaces"
	else
		NS=sldns$$
		ip -n "$NS" link set lo up
		ip -n "$NS" addr add 10.53.0.1/32 dev lo
		ip -n "$NS" addr add 127.0.0.2/8 dev lo 2>/dev/null
		mkdir -p "/etc/netns/$NS"
		echo "nameserver 10.53.0.1" >"/etc/netns/$NS/resolv.conf"
		printf '127.0.0.1 localhost\n127.0.0.1 redis.sluice-test.internal\n' >"/etc/netns/$NS/hosts"
		X="ip netns exec $NS"
		# The resolver's address takes UDP 53 and never answers (a resolver gone, as
		# a black hole: queries time out, they are not refused).
		$X $PY -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.53.0.1", 53))
t = socket.socket(socket.AF_INET, socket.SOCK_STREAM); t.bind(("10.53.0.1", 53)); t.listen(64)
while True: s.recvfrom(2048)
' &
		DNS_PID=$!
		RP=$(free_port)
		REDIS_EXEC=$X redis_start_port dns "$RP" || { echo "Bail out! redis-server (netns) did not start"; exit 1; }
		write_conf "address = \"redis.sluice-test.internal:$RP\"; timeout_ms = 100; breaker_open_ms = 300;"
		gw_start
		wait_connected || tap_not_ok "dns: the name resolves (the namespace's hosts file) and the store connects"
		expect_eq "dns: a login is counted in Redis at the name's address" \
			"$(login alice bad 203.0.113.70) $(fail_keys $X redis-cli -p "$RP")" "401 1"
		# The name leaves the hosts file: only the dead resolver can answer now; and Redis
		# goes with it.
		printf '127.0.0.1 localhost\n' >"/etc/netns/$NS/hosts"
		REDIS_EXEC=$X redis_kill_port dns
		REQ_TIMEOUT=3 load 7 "$NT_DIR/dns.txt" metrics
		n=$(wc -l <"$NT_DIR/dns.txt")
		expect_ge "dns: Redis and its resolver gone: requests were made for 7 s (/metrics, /login)" "$n" 30
		expect_eq "  ... and every one was answered ($n; with the loop blocked on the resolver: 0 of 4)" \
			"$(answered "$NT_DIR/dns.txt")" "$n"
		expect_le "  ... each within the timeout's reach (slowest, ms; timeout_ms 100)" \
			"$(slowest "$NT_DIR/dns.txt")" 500
		tap_diag "  (slowest of $n: $(slowest "$NT_DIR/dns.txt") ms)"
		expect_match "  ... the resolver's silence is an outage, in the log" "$(cat "$LOG")" \
			'redis redis\.sluice-test\.internal:[0-9]+: the resolver has not answered in 1 s'
		expect_eq "  ... and status says not connected" "$(store_field connected)" false
		# The name comes back at another address, with Redis there: followed.
		printf '127.0.0.1 localhost\n127.0.0.2 redis.sluice-test.internal\n' >"/etc/netns/$NS/hosts"
		REDIS_EXEC=$X REDIS_HOST=127.0.0.2 redis_start_port dns2 "$RP" ||
			{ echo "Bail out! redis-server on 127.0.0.2 did not start"; exit 1; }
		wait_connected 150 || tap_not_ok "dns: reconnects once the name resolves again"
		sleep 0.5 # the journal hands over what the fallback charged meanwhile
		k0=$(fail_keys $X redis-cli -h 127.0.0.2 -p "$RP")
		expect_eq "dns: the name is resolved again at the reconnect: counted at its new address" \
			"$(login carol bad 203.0.113.71) $(( $(fail_keys $X redis-cli -h 127.0.0.2 -p "$RP") - k0 ))" "401 1"
		gw_stop
		REDIS_EXEC=$X redis_stop_port dns2
		kill "$DNS_PID" 2>/dev/null; wait "$DNS_PID" 2>/dev/null; DNS_PID=
		X=
	fi
fi

# ---- 4. Sentinel: discover the master, follow a failover -------------------------------
# sentinel_master PORT: the master's port as that sentinel names it.
sentinel_master() { redis-cli -p "$1" SENTINEL get-master-addr-by-name mm 2>/dev/null | sed -n 2p; }
if part sentinel; then
	MP=$(free_port); RPP=$(free_port); S1=$(free_port); S2=$(free_port); S3=$(free_port)
	redis_start_port master "$MP" || { echo "Bail out! the master did not start"; exit 1; }
	redis_start_port replica "$RPP" --replicaof 127.0.0.1 "$MP" ||
		{ echo "Bail out! the replica did not start"; exit 1; }
	for _ in $(seq 1 100); do
		redis-cli -p "$RPP" INFO replication | grep -q 'master_link_status:up' && break
		sleep 0.1
	done
	for sp in $S1 $S2 $S3; do
		cat >"$NT_DIR/sentinel-$sp.conf" <<EOC
sentinel monitor mm 127.0.0.1 $MP 2
sentinel down-after-milliseconds mm 1000
sentinel failover-timeout mm 4000
sentinel parallel-syncs mm 1
EOC
		redis_start_port "sentinel-$sp" "$sp" "$NT_DIR/sentinel-$sp.conf" --sentinel ||
			{ echo "Bail out! sentinel $sp did not start"; exit 1; }
	done
	# Until every sentinel knows the replica and the two other sentinels.
	for _ in $(seq 1 200); do
		ok=0
		for sp in $S1 $S2 $S3; do
			r=$(redis-cli -p "$sp" SENTINEL master mm 2>/dev/null | tr '\n' ' ')
			grep -q 'num-slaves 1 .*num-other-sentinels 2' <<<"$r" && ok=$((ok + 1))
		done
		[ "$ok" = 3 ] && break
		sleep 0.1
	done
	expect_eq "sentinel: three sentinels monitor one master with one replica" "$ok" 3
	write_conf "sentinels = [\"127.0.0.1:$S1\", \"127.0.0.1:$S2\", \"127.0.0.1:$S3\"]; master_name = \"mm\"; timeout_ms = 100; breaker_open_ms = 300;" \
		'window_s = 600;'
	gw_start
	wait_connected || tap_not_ok "sentinel: the store connects to the master the sentinels name"
	expect_match "sentinel: the log names the master it found" "$(cat "$LOG")" \
		"redis sentinel:mm@.*: connected to master 127\.0\.0\.1:$MP"
	expect_match "sentinel: status shows the sentinel address" "$(ctl status)" \
		"redis sentinel:mm@127\.0\.0\.1:$S1"
	expect_eq "sentinel: a login is counted in the master" \
		"$(login carol bad 203.0.113.80) $(fail_keys redis-cli -p "$MP")" "401 1"
	# A failover under load.
	load 8 "$NT_DIR/failover.txt" &
	LOAD=$!
	sleep 1
	redis-cli -p "$S1" SENTINEL failover mm >/dev/null
	for _ in $(seq 1 200); do [ "$(sentinel_master "$S1")" = "$RPP" ] && break; sleep 0.1; done
	expect_eq "sentinel: SENTINEL failover made the replica the master" "$(sentinel_master "$S1")" "$RPP"
	wait_log "connected to master 127\.0\.0\.1:$RPP" 100
	expect_match "  ... and the store followed it" "$(cat "$LOG")" \
		"connected to master 127\.0\.0\.1:$RPP"
	wait "$LOAD"
	n=$(wc -l <"$NT_DIR/failover.txt")
	expect_eq "  ... every login during the failover was answered ($n)" \
		"$(answered "$NT_DIR/failover.txt")" "$n"
	expect_ge "  ... (and there were some)" "$n" 30
	expect_eq "  ... each as it should be: alice's right password 200, the wrong ones 401" \
		"$($PY -c 'import json,sys; print(sorted(set(str(json.loads(l)["status"]) for l in open(sys.argv[1]))))' "$NT_DIR/failover.txt")" \
		"['200', '401']"
	expect_le "  ... within the timeout's reach (slowest, ms; timeout_ms 100)" \
		"$(slowest "$NT_DIR/failover.txt")" 600
	tap_diag "  (slowest of $n: $(slowest "$NT_DIR/failover.txt") ms)"
	wait_connected 50
	sleep 0.5
	k0=$(fail_keys redis-cli -p "$RPP")
	expect_eq "  ... and counters land in the new master (one more key there)" \
		"$(login dave bad 203.0.113.81) $(( $(fail_keys redis-cli -p "$RPP") - k0 ))" "401 1"
	# The new master killed: the sentinels elect the old one back.
	load 10 "$NT_DIR/kill.txt" &
	LOAD=$!
	sleep 1
	redis_kill_port replica
	for _ in $(seq 1 200); do [ "$(sentinel_master "$S2")" = "$MP" ] && break; sleep 0.1; done
	expect_eq "sentinel: the master killed, the sentinels promote the other" "$(sentinel_master "$S2")" "$MP"
	wait_log "connected to master 127\.0\.0\.1:$MP.*" 100
	wait "$LOAD"
	n=$(wc -l <"$NT_DIR/kill.txt")
	expect_eq "  ... every login while the master was dead was answered ($n)" \
		"$(answered "$NT_DIR/kill.txt")" "$n"
	expect_le "  ... within the timeout's reach (slowest, ms)" "$(slowest "$NT_DIR/kill.txt")" 600
	tap_diag "  (slowest of $n: $(slowest "$NT_DIR/kill.txt") ms)"
	wait_connected 50
	expect_eq "  ... the store is connected again, breaker closed" \
		"$(store_field connected) $(store_field breaker)" "true closed"
	sleep 0.5
	k0=$(fail_keys redis-cli -p "$MP")
	expect_eq "  ... and counters land in the master now (one more key there)" \
		"$(login dave bad 203.0.113.82) $(( $(fail_keys redis-cli -p "$MP") - k0 ))" "401 1"
	expect_eq "  ... the stream job follows too (sluice_stream_counting mode=redis)" \
		"$(metrics | grep -c 'sluice_stream_counting{mode="redis"} 1')" 1
	# A master that hangs (SIGSTOP: its sockets stay open, nothing answers) with a replica
	# back: the sentinels promote the replica, and the store, whose connection still looks
	# alive, gives it up and asks them again.
	redis_start_port replica "$RPP" --replicaof 127.0.0.1 "$MP" ||
		{ echo "Bail out! the replica did not restart"; exit 1; }
	for _ in $(seq 1 200); do
		redis-cli -p "$RPP" INFO replication | grep -q 'master_link_status:up' &&
			redis-cli -p "$S3" SENTINEL replicas mm | grep -A1 '^flags$' | grep -q '^slave$' && break
		sleep 0.1
	done
	load 12 "$NT_DIR/hang.txt" &
	LOAD=$!
	sleep 1
	kill -STOP "$(redis_pid_port master)"
	for _ in $(seq 1 200); do [ "$(sentinel_master "$S3")" = "$RPP" ] && break; sleep 0.1; done
	expect_eq "sentinel: the master hangs, the sentinels promote the replica" "$(sentinel_master "$S3")" "$RPP"
	wait_log "answered nothing in 5 s; reconnecting" 100
	expect_match "  ... the store drops the silent connection" "$(cat "$LOG")" \
		"127\.0\.0\.1:$MP has answered nothing in 5 s; reconnecting"
	wait "$LOAD"
	n=$(wc -l <"$NT_DIR/hang.txt")
	expect_eq "  ... every login while the master hung was answered ($n)" \
		"$(answered "$NT_DIR/hang.txt")" "$n"
	expect_le "  ... within the timeout's reach (slowest, ms)" "$(slowest "$NT_DIR/hang.txt")" 600
	tap_diag "  (slowest of $n: $(slowest "$NT_DIR/hang.txt") ms)"
	wait_connected 100
	sleep 0.5
	k0=$(fail_keys redis-cli -p "$RPP")
	expect_eq "  ... and counters land in the promoted replica (one more key there)" \
		"$(login dave bad 203.0.113.83) $(( $(fail_keys redis-cli -p "$RPP") - k0 ))" "401 1"
	kill -CONT "$(redis_pid_port master)"
	gw_stop
	redis_stop_ports
fi

# ---- 5. Redis Cluster: refused, loudly ------------------------------------------------------
if part cluster; then
	# A cluster node also listens on its port + 10000 (the bus): keep that under 65536.
	CP=$(free_port)
	while [ "$CP" -gt 55000 ]; do CP=$(free_port); done
	redis_start_port cluster "$CP" --cluster-enabled yes --cluster-config-file "$NT_DIR/nodes-$CP.conf" ||
		{ echo "Bail out! a cluster node did not start"; exit 1; }
	write_conf "address = \"127.0.0.1:$CP\"; timeout_ms = 100; breaker_open_ms = 300;"
	gw_start
	wait_log "Redis Cluster" 30
	expect_match "cluster: a Cluster node is refused with a clear error" \
		"$(grep 'Redis Cluster' "$LOG" | head -1)" \
		'error redis 127\.0\.0\.1:[0-9]+ is a Redis Cluster node \(cluster_enabled:1\): Redis Cluster is not supported'
	expect_eq "  ... status: not connected (never a silent 'connected')" "$(store_field connected)" false
	expect_eq "  ... logins still answered from the fallback" "$(login alice bad 203.0.113.90)" 401
	gw_stop
	redis_stop_port cluster
fi

# ---- 6. the keys, checked at load -------------------------------------------------------------
if part config; then
	# bad_conf 'REDIS GROUP BODY' REGEX NAME: --check-config rejects it, saying REGEX.
	bad_conf() {
		write_conf "$1"
		out=$("$BUILD/sluiced" -c "$CONF" --check-config 2>&1)
		expect_match "config: $3" "$out" "$2"
	}
	bad_conf 'user = "app";' 'redis\.user: needs redis\.password' "an ACL user needs a password"
	bad_conf 'address = "127.0.0.1:6379"; sentinels = ["127.0.0.1:26379"]; master_name = "m";' \
		'address and sentinels are exclusive' "address and sentinels are exclusive"
	bad_conf 'sentinels = ["127.0.0.1:26379"];' "'master_name' is required" "sentinels need master_name"
	bad_conf 'sentinels = ["127.0.0.1"]; master_name = "m";' "redis\.sentinels: '127\.0\.0\.1' is not" \
		"a sentinel without a port is refused"
	bad_conf 'address = "127.0.0.1:6379"; password = "a"; password_file = "/nonexistent";' \
		'password and password_file are exclusive' "password and password_file are exclusive"
	bad_conf 'address = "127.0.0.1:6379"; password_file = "/nonexistent/pw";' \
		'redis\.password_file: /nonexistent/pw: No such file' "a missing password_file is named"
	printf 'from-a-file-9d1c\n' >"$NT_DIR/redis.pass"
	chmod 600 "$NT_DIR/redis.pass"
	write_conf "address = \"127.0.0.1:6379\"; password_file = \"$NT_DIR/redis.pass\";"
	out=$("$BUILD/sluiced" -c "$CONF" --check-config 2>&1)
	expect_eq "config: a password_file loads (exit 0), its secret not echoed" \
		"$? $(grep -c from-a-file <<<"$out")" "0 0"
fi

tap_done
