#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Bounded Redis memory (issue 16, item 3), against a real redis-server this suite starts on a
# Unix socket with a small maxmemory (4 MB), under each eviction policy in turn: noeviction,
# allkeys-lru and volatile-ttl. Two gateway nodes on loopback share it; clients are told
# apart by X-Forwarded-For (trusted_hops = 1). For each policy, with Redis emptied first:
#
#   1. a victim's lockout: five wrong guesses at (victim, 10.9.P.9) through node n1, the sixth
#      refused (429, login_uniform off so the refusal can be seen);
#   2. the per-tenant cap: a flood of fresh (account, /32) pairs, each a wrong password, with
#      max_keys 1000 on the login counters: the live-key set stops at the cap, the checks
#      past it are refused (429) and counted (sluice_store_keys_capped_total, and per tenant
#      and counter sluice_store_live_keys_capped_total), /metrics' sluice_store_live_keys is
#      the cap, DBSIZE stays bounded and used_memory under maxmemory;
#   3. the careless operator: the caps lifted (max_keys 0, a reload) and the flood goes on
#      until Redis is full: what docs/operations.md ("Redis memory") says of the policy:
#        noeviction   writes refused (OOM): counted as errors, the checks take their
#                     fallbacks; nothing evicted;
#        allkeys-lru  keys evicted; a lost key this node had seen is given back its debt and
#                     counted (sluice_store_keys_restored_total);
#        volatile-ttl keys evicted, the least spent (shortest TTL) first;
#      and under every policy the victim's lockout holds on both nodes (n1 first: it is the
#      node that saw it), used_memory stays under maxmemory, and a user with the right
#      password from a clean address still signs in.
#   4. `sluicectl user add` reloads (issue 16: "every reload or start rewrites leases to
#      budget/N for lease_ttl; sluicectl user add reloads too"): an edge node (XDP on a veth
#      pair in a namespace of the suite's own, with a gateway) leases a tenant's 100/s
#      (2 nodes configured, static 10/s): with Redis up a `user add` keeps the live lease
#      (90/s: the budget less the silent node's static rate), with Redis down it keeps the
#      static 10/s; never budget / nodes (50/s). Skipped without network namespaces.
#   5. Redis restored from an old snapshot (an RDB saved, then more guesses, then a restart
#      that loads it): a lockout made after the snapshot, of a pair the snapshot does not
#      hold, is given back by the node that saw it and holds on both nodes; so does a pair
#      half spent in the snapshot and locked out after it (the store sees the new run_id
#      and takes what it saw as each key's floor at its first check: before, the
#      snapshot's older value won and the pair could guess again on both nodes).
#   6. TLS to Redis through a local tunnel (docs/operations.md, "Encryption"): a
#      redis-server that listens on a TLS port only (no plaintext port), Debian's stunnel4
#      in client mode on loopback verifying its certificate, a third gateway node pointed at
#      the tunnel: its lockout counts in that Redis (five 401s, then 429), the keys are
#      there (redis-cli --tls), and a plaintext client gets nothing from the TLS port.
#      Skipped without stunnel4 or openssl.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
PY=/usr/bin/python3
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
NT_DIR=$(mktemp -d /tmp/sluice-redis-mem.XXXXXX)
. "$HERE/../lib/redis.sh"

redis_available || { echo "1..0 # SKIP redis-server is not installed"; exit 0; }
MAXMEM=$((4 * 1024 * 1024))
PIDS=()
EDGE_NS=
STUNNEL_PID=
TLS_REDIS_PID=
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	redis_stop
	[ -n "$STUNNEL_PID" ] && kill "$STUNNEL_PID" 2>/dev/null
	[ -n "$TLS_REDIS_PID" ] && kill "$TLS_REDIS_PID" 2>/dev/null
	[ -n "$EDGE_NS" ] && ip netns del "$EDGE_NS" 2>/dev/null
	rm -rf "/sys/fs/bpf/sluice-test-rm$$" 2>/dev/null
	[ -n "${KEEP:-}" ] && { echo "# kept $NT_DIR"; return; }
	rm -rf "$NT_DIR"
}
trap cleanup EXIT
redis_start || { echo "Bail out! redis-server did not start"; exit 1; }
rcli() { redis-cli -s "$REDIS_SOCK" "$@"; }
used() { rcli info memory | tr -d '\r' | sed -n 's/^used_memory:\([0-9]*\)/\1/p'; }
# What the clients' buffers hold (query and reply buffers of the nodes' connections): Redis
# counts them in used_memory, but they come and go with the traffic, not with the keys.
clients_mem() { rcli info memory | tr -d '\r' | sed -n 's/^mem_clients_normal:\([0-9]*\)/\1/p'; }
info_stat() { rcli info stats | tr -d '\r' | sed -n "s/^$1:\([0-9]*\)/\1/p"; }

P1=$(free_port)
P2=$(free_port)
M1=$(free_port)
M2=$(free_port)
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$NT_DIR/session.key"
chmod 600 "$NT_DIR/session.key"
: >"$NT_DIR/creds.txt"
chmod 600 "$NT_DIR/creds.txt"

write_conf() { # node port metrics-port max_keys
	cat >"$NT_DIR/$1.conf" <<CONF
tenants = ( { name = "default"; reservation = 0.0; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 1.0; } );
gateway: {
  listen = "127.0.0.1:$2";
  credentials = "$NT_DIR/creds.txt";
  session_key = "$NT_DIR/session.key";
  capacity = { cpu = 1000000.0; };
  argon2 = { m_cost_kib = 64; t_cost = 1; parallelism = 1; memory_budget_mib = 2; };
  trusted_hops = 1;
  reject_floor_ms = 0;
  login_uniform = false;
  queue = { target_wait_ms = 5000; max_depth = 4096; };
};
redis: { address = "unix:$REDIS_SOCK"; timeout_ms = 100; breaker_open_ms = 300; };
cluster: { node = "$1"; nodes = 2; };
counters: {
  login_failures = { burst = 5.0; max_keys = $4; };
  login_parent = { burst = 10.0; max_keys = $4; };
  login_successes = { max_keys = $4; };
};
stream: { enabled = false; };
daemon: { control_socket = "$NT_DIR/$1.sock"; metrics_listen = "127.0.0.1:$3"; };
CONF
}
CAP=1000
write_conf n1 "$P1" "$M1" $CAP
write_conf n2 "$P2" "$M2" $CAP
ctl() { "$BUILD/sluicectl" -c "$NT_DIR/$1.conf" "${@:2}"; }
prom() { # node name labels...
	local m=$M1
	[ "$1" = n2 ] && m=$M2
	$PY "$ROOT/tests/lib/prom.py" "http://127.0.0.1:$m/metrics" "${@:2}"
}
echo "right-password" | ctl n1 user add default alice >/dev/null || { echo "Bail out! user add"; exit 1; }
gw_nodes_start n1 n2

# logins PORT,USER,PASSWORD,XFF ... -> the statuses, space-separated.
cat >"$NT_DIR/login.py" <<'PYEOF'
import http.client, sys
out = []
for spec in sys.argv[1:]:
    port, user, pw, xff = spec.split(",")
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
    c.request("POST", "/login", body="username=%s&password=%s" % (user, pw), headers={
        "Host": "idp.test", "Content-Type": "application/x-www-form-urlencoded",
        "X-Forwarded-For": xff})
    r = c.getresponse()
    r.read()
    out.append(str(r.status))
    c.close()
print(" ".join(out))
PYEOF
logins() { $PY "$NT_DIR/login.py" "$@"; }
# flood.py P1 P2 TAG FROM COUNT: COUNT wrong-password logins of fresh accounts from fresh
# addresses (11.x.y.z), half on each node, 8 keep-alive clients; prints {status: count}.
cat >"$NT_DIR/flood.py" <<'PYEOF'
import http.client, json, sys, threading
p1, p2, tag, first, count = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
lock, status = threading.Lock(), {}
def worker(w):
    conns = {}
    for i in range(first + w, first + count, 8):
        port = p1 if i % 2 else p2
        body = "username=%s%d&password=wrong" % (tag, i)
        hdr = {"Host": "idp.test", "Content-Type": "application/x-www-form-urlencoded",
               "X-Forwarded-For": "11.%d.%d.%d" % (i >> 16 & 255, i >> 8 & 255, i & 255)}
        for attempt in range(3):
            c = conns.get(port)
            if c is None:
                c = conns[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                c.request("POST", "/login", body=body, headers=hdr)
                r = c.getresponse(); r.read(); code = str(r.status)
                if r.getheader("Connection", "").lower() == "close":
                    c.close(); conns.pop(port, None)
                break
            except (http.client.HTTPException, OSError):
                c.close(); conns.pop(port, None); code = "error"
        with lock:
            status[code] = status.get(code, 0) + 1
ts = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
for t in ts: t.start()
for t in ts: t.join()
print(json.dumps(status))
PYEOF
flood() { $PY "$NT_DIR/flood.py" "$P1" "$P2" "$@"; }
num() { $PY -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2], 0))' "$1" "$2"; }
reload_caps() { # max_keys
	write_conf n1 "$P1" "$M1" "$1"
	write_conf n2 "$P2" "$M2" "$1"
	ctl n1 reload >/dev/null && ctl n2 reload >/dev/null
}
sum_live() { # node: the live keys /metrics reports for the three capped login counters
	local n=$1 t=0 c v
	for c in login_fail login_parent login_ok; do
		v=$(prom "$n" sluice_store_live_keys tenant=default counter=$c)
		t=$((t + ${v:-0}))
	done
	echo $t
}

T0=$(date +%s)
FROM=0
round=0
for POLICY in noeviction allkeys-lru volatile-ttl; do
	round=$((round + 1))
	reload_caps $CAP
	# What the last round's fallbacks charged is handed to Redis once it has room: let the
	# journals drain before emptying it, so that each round starts from nothing.
	rcli config set maxmemory 0 >/dev/null
	for _ in $(seq 1 100); do
		[ "$(prom n1 sluice_store_journal_keys)" = 0 ] && [ "$(prom n2 sluice_store_journal_keys)" = 0 ] && break
		sleep 0.1
	done
	rcli flushall >/dev/null
	ERR1=$(prom n1 sluice_store_checks_total outcome=error)
	rcli config resetstat >/dev/null
	rcli config set maxmemory-policy "$POLICY" >/dev/null
	rcli config set maxmemory $MAXMEM >/dev/null
	tap_diag "---- maxmemory $MAXMEM, maxmemory-policy $POLICY; used_memory $(used) at the start"
	V="victim$round" VX="10.9.$round.9"
	# 1. the victim's lockout, through n1
	r=$(logins "$P1,$V,bad,$VX" "$P1,$V,bad,$VX" "$P1,$V,bad,$VX" "$P1,$V,bad,$VX" "$P1,$V,bad,$VX" "$P1,$V,bad,$VX")
	expect_eq "$POLICY: the victim's five wrong guesses (401 x5), the sixth refused" "$r" "401 401 401 401 401 429"

	# 2. the cap: 2,000 fresh pairs against max_keys 1,000
	c1=$(prom n1 sluice_store_keys_capped_total); c2=$(prom n2 sluice_store_keys_capped_total)
	f=$(flood "f$round-" $FROM 2000)
	FROM=$((FROM + 2000))
	tap_diag "$POLICY capped flood: $f; DBSIZE $(rcli dbsize); used_memory $(used)"
	capped=$(( $(prom n1 sluice_store_keys_capped_total) - c1 + $(prom n2 sluice_store_keys_capped_total) - c2 ))
	expect_ge "$POLICY: 2,000 fresh pairs against max_keys 1,000: about half refused (429)" "$(num "$f" 429)" 900
	expect_ge "  ... and about half admitted (401: wrong password)" "$(num "$f" 401)" 900
	expect_ge "  ... the refusals counted on /metrics (keys_capped_total +$capped across both nodes)" "$capped" 900
	expect_ge "  ... per tenant and counter (live_keys_capped_total{counter=login_fail})" \
		"$(( $(prom n1 sluice_store_live_keys_capped_total tenant=default counter=login_fail) + $(prom n2 sluice_store_live_keys_capped_total tenant=default counter=login_fail) ))" 1
	expect_eq "  ... /metrics: the tenant's live login_fail keys are the cap" \
		"$(prom n1 sluice_store_live_keys tenant=default counter=login_fail)" $CAP
	expect_eq "  ... and the cap is on /metrics (live_keys_max)" \
		"$(prom n1 sluice_store_live_keys_max tenant=default counter=login_fail)" $CAP
	zc=$(rcli zcard 'sluice:{default}:login_fail:live')
	expect_le "  ... Redis: the live-key set holds at most the cap ($zc)" "$zc" $CAP
	d=$(rcli dbsize)
	expect_le "  ... DBSIZE bounded by the caps: 3 counters x 1,000 + their sets + the victim ($d)" "$d" $((3 * CAP + 3 + 3))
	u=$(used)
	expect_le "  ... used_memory $u under maxmemory $MAXMEM" "$u" $MAXMEM
	expect_eq "  ... no check failed under the caps (errors on n1)" "$(prom n1 sluice_store_checks_total outcome=error)" "$ERR1"

	# 3. the careless operator: no cap, and the flood goes on until Redis is full.
	reload_caps 0
	e1=$(prom n1 sluice_store_checks_total outcome=error)
	fb1=$(prom n1 sluice_store_fallbacks_total mode=local)
	rs1=$(prom n1 sluice_store_keys_restored_total)
	ev0=$(info_stat evicted_keys)
	f=$(flood "g$round-" $FROM 9000)
	FROM=$((FROM + 9000))
	u=$(used)
	cm=$(clients_mem)
	ev=$(( $(info_stat evicted_keys) - ev0 ))
	e=$(( $(prom n1 sluice_store_checks_total outcome=error) - e1 ))
	fb=$(( $(prom n1 sluice_store_fallbacks_total mode=local) - fb1 ))
	tap_diag "$POLICY uncapped flood: $f; DBSIZE $(rcli dbsize); used_memory $u (clients' buffers $cm); evicted $ev; n1 errors +$e, local fallbacks +$fb"
	# Under noeviction a script begun under the limit may finish past it, and the clients'
	# buffers swing with the traffic (a run measured 4,262,208 with 4,194,304 set): the keys
	# are what must stop, so the clients' buffers are not counted against the bound.
	expect_le "$POLICY: used_memory $u less the clients' buffers ($cm) stays under maxmemory $MAXMEM (+64 KiB of Redis's own slack)" \
		"$((u - cm))" $((MAXMEM + 65536))
	expect_eq "  ... every flood login answered (no 5xx, no error)" \
		"$(( $(num "$f" 401) + $(num "$f" 429) ))" 9000
	case $POLICY in
	noeviction)
		expect_eq "  ... noeviction: nothing evicted" "$ev" 0
		expect_ge "  ... noeviction: Redis refused writes (OOM): counted as errors on /metrics" "$e" 1
		expect_ge "  ... noeviction: and the charges that would pass took the fail-open fallback (local)" "$fb" 1
		expect_eq "  ... noeviction: Redis answers, so the breaker stayed closed" \
			"$(prom n1 sluice_store_breaker_state state=closed)" 1
		expect_ge "  ... the log says so (OOM)" "$(grep -c 'OOM' "$NT_DIR/n1.log")" 1
		;;
	*)
		expect_ge "  ... $POLICY: Redis evicted keys ($ev)" "$ev" 1
		expect_eq "  ... $POLICY: no write refused (errors on n1)" "$e" 0
		;;
	esac
	# The victim, n1 first (the node that saw the lockout), then n2 (what Redis holds).
	r=$(logins "$P1,$V,bad,$VX" "$P2,$V,bad,$VX")
	rs=$(( $(prom n1 sluice_store_keys_restored_total) - rs1 ))
	tap_diag "$POLICY: the victim after the flood: $r; keys restored by n1 +$rs"
	expect_eq "  ... $POLICY: the victim's lockout survived the flood, on both nodes" "$r" "429 429"
	r=$(logins "$P2,alice,right-password,10.7.$round.7")
	expect_eq "  ... $POLICY: alice signs in from a clean address (right password)" "$r" 200
done
tap_diag "the floods took $(( $(date +%s) - T0 )) s"

# ---- 4. sluicectl user add, with Redis up and down, on an edge node's leases -------------
rcli config set maxmemory 0 >/dev/null
rcli flushall >/dev/null
EDGE_NS=slrm$$
if [ "$(id -u)" -ne 0 ] || ! ip netns add "$EDGE_NS" 2>/dev/null; then
	EDGE_NS=
	tap_skip "sluicectl user add keeps the lease (Redis up) and the static rate (Redis down)" \
		"needs root and network namespaces"
	tap_done
	exit $?
fi
ip -n "$EDGE_NS" link set lo up
ip -n "$EDGE_NS" link add ve0 type veth peer name ve1
ip -n "$EDGE_NS" addr add 10.219.0.2/24 dev ve0
ip -n "$EDGE_NS" addr add 10.219.0.1/24 dev ve1
ip -n "$EDGE_NS" link set ve0 up
ip -n "$EDGE_NS" link set ve1 up
EP=$(free_port)
cat >"$NT_DIR/e.conf" <<CONF
edge: {
  interfaces = ["ve0"];
  xdp_mode = "generic";
  ports = ( { port = 80; action = "reply"; cost = 1; } );
  state_entries = 4096;
  pin_path = "/sys/fs/bpf/sluice-test-rm$$";
};
classes = ( { name = "unknown"; rate = 100.0; burst = 100.0; parent_rate = 1000.0;
              parent_burst = 1000.0; } );
tenants = ( { name = "acme"; listen = [ "10.219.0.2:80" ]; rate = 100.0; burst = 20.0;
              static_rate = 10.0; static_burst = 5.0; lease_ttl = 1; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 1.0; } );
gateway: {
  listen = "127.0.0.1:$EP";
  credentials = "$NT_DIR/e-creds.txt";
  session_key = "$NT_DIR/session.key";
  capacity = { cpu = 1000000.0; };
  argon2 = { m_cost_kib = 64; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
};
redis: { address = "unix:$REDIS_SOCK"; timeout_ms = 20; breaker_open_ms = 300; };
cluster: { node = "e"; nodes = 2; lease_interval_ms = 200; };
daemon: { control_socket = "$NT_DIR/e.sock"; };
CONF
: >"$NT_DIR/e-creds.txt"
chmod 600 "$NT_DIR/e-creds.txt"
nsenter --net="/run/netns/$EDGE_NS" "$BUILD/sluiced" -c "$NT_DIR/e.conf" -f >"$NT_DIR/e.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do grep -q "sluiced .* running" "$NT_DIR/e.log" && break; sleep 0.1; done
elease() { jget "$(ctl e leases --json)" "tenants.0.$1"; }
wait_lease() { # live rate: up to 5 s
	local i
	for i in $(seq 1 50); do
		[ "$(elease lease_live) $(elease in_force_rate)" = "$1 $2" ] && return 0
		sleep 0.1
	done
	return 1
}
if ! grep -q "sluiced .* running" "$NT_DIR/e.log"; then
	tap_diag "$(tail -20 "$NT_DIR/e.log")"
	tap_not_ok "the edge node started"
	tap_done
	exit $?
fi
wait_lease true 90
expect_eq "edge node, Redis up: the lease is live at the budget less the silent node's static rate" \
	"$(elease lease_live) $(elease in_force_rate)" "true 90"
r0=$(grep -c "reloaded" "$NT_DIR/e.log")
bad=0 seen=
echo "pw-one" | ctl e user add acme bob1 >/dev/null || tap_diag "user add failed"
for _ in $(seq 1 8); do
	r=$(elease in_force_rate); seen="$seen $r"
	[ "$r" = 90 ] || bad=$((bad + 1))
	sleep 0.1
done
tap_diag "in force after user add (Redis up):$seen"
expect_ge "  ... sluicectl user add reloaded sluiced" "$(grep -c "reloaded" "$NT_DIR/e.log")" $((r0 + 1))
expect_eq "  ... and the lease stayed in force, never budget / nodes (50)" "$bad" 0
expect_eq "  ... the lease is still live after it" "$(elease lease_live)" true
redis_stop
wait_lease false 10
expect_eq "Redis down: the lease lapsed, the static 10/s in force" \
	"$(elease lease_live) $(elease in_force_rate)" "false 10"
r0=$(grep -c "reloaded" "$NT_DIR/e.log")
echo "pw-two" | ctl e user add acme bob2 >/dev/null || tap_diag "user add failed"
bad=0 seen=
for _ in $(seq 1 15); do
	r=$(elease in_force_rate); seen="$seen $r"
	[ "$r" = 10 ] || bad=$((bad + 1))
	sleep 0.1
done
tap_diag "in force after user add (Redis down):$seen"
expect_ge "  ... sluicectl user add reloaded sluiced" "$(grep -c "reloaded" "$NT_DIR/e.log")" $((r0 + 1))
expect_eq "  ... and the static 10/s stayed in force for 1.5 s after it (lease_ttl 1 s), never 50" "$bad" 0
expect_eq "  ... both users are in the credentials file" "$(grep -c '^acme,bob[12],' "$NT_DIR/e-creds.txt")" 2

# ---- 5. Redis restored from an old snapshot ------------------------------------------------
connected_both() {
	local i
	for i in $(seq 1 100); do
		[ "$(prom n1 sluice_store_redis_connected)" = 1 ] && [ "$(prom n2 sluice_store_redis_connected)" = 1 ] &&
			[ "$(prom n1 sluice_store_breaker_state state=closed)" = 1 ] &&
			[ "$(prom n2 sluice_store_breaker_state state=closed)" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}
redis_start || { tap_not_ok "redis-server started again"; tap_done; exit 1; }
connected_both || tap_diag "the gateways did not reconnect"
A=(); B=()
for _ in 1 2; do A+=("$P1,snapa,bad,10.5.5.5"); done
r=$(logins "${A[@]}")
expect_eq "snapshot: pair A charged twice (401 x2) before the snapshot" "$r" "401 401"
rcli save >/dev/null
r=$(logins "$P1,snapa,bad,10.5.5.5" "$P1,snapa,bad,10.5.5.5" "$P1,snapa,bad,10.5.5.5" "$P1,snapa,bad,10.5.5.5")
expect_eq "  ... then three more and the sixth refused, after it" "$r" "401 401 401 429"
r=$(logins "$P1,snapb,bad,10.5.6.6" "$P1,snapb,bad,10.5.6.6" "$P1,snapb,bad,10.5.6.6" "$P1,snapb,bad,10.5.6.6" "$P1,snapb,bad,10.5.6.6" "$P1,snapb,bad,10.5.6.6")
expect_eq "  ... pair B locked out after the snapshot (401 x5, 429)" "$r" "401 401 401 401 401 429"
rs1=$(prom n1 sluice_store_keys_restored_total)
l0=$(grep -c 'the server restarted (run_id' "$NT_DIR/n1.log")
redis_stop
redis_start || { tap_not_ok "redis-server restarted from the snapshot"; tap_done; exit 1; }
expect_ge "Redis restarted from the snapshot (it holds its keys: DBSIZE $(rcli dbsize))" "$(rcli dbsize)" 2
connected_both || tap_diag "the gateways did not reconnect"
r=$(logins "$P1,snapb,bad,10.5.6.6" "$P2,snapb,bad,10.5.6.6")
expect_eq "  ... pair B (not in the snapshot): still locked out, n1 (which saw it) then n2" "$r" "429 429"
expect_ge "  ... n1 gave its debt back, counted (keys_restored_total)" \
	"$(( $(prom n1 sluice_store_keys_restored_total) - rs1 ))" 1
r=$(logins "$P1,snapa,bad,10.5.5.5" "$P2,snapa,bad,10.5.5.5")
expect_eq "  ... pair A (two charges in the snapshot, five before the restart): still locked out, n1 then n2" \
	"$r" "429 429"
expect_eq "  ... n1 logged the restart (a new run_id)" "$(grep -c 'the server restarted (run_id' "$NT_DIR/n1.log")" $((l0 + 1))
# After its first check the key is what Redis says again: a success clears it (on n2, which
# never saw the lockout: the floor is n1's, once), and the next failure starts from there.
r=$(logins "$P2,alice,right-password,10.5.7.7")
expect_eq "  ... and a right password still signs in" "$r" 200

# ---- 6. TLS to Redis through stunnel -------------------------------------------------------
if ! command -v stunnel4 >/dev/null || ! command -v openssl >/dev/null; then
	tap_skip "TLS to Redis through a local stunnel" "stunnel4 or openssl is not installed"
	tap_diag "took $(( $(date +%s) - T0 )) s"
	tap_done
	exit $?
fi
T=$NT_DIR/tls
mkdir -p "$T"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=redis.test" \
	-addext "subjectAltName=DNS:redis.test" -keyout "$T/key.pem" -out "$T/cert.pem" \
	>/dev/null 2>&1 || tap_diag "openssl failed"
TP=$(free_port)
LP=$(free_port)
redis-server --port 0 --tls-port "$TP" --bind 127.0.0.1 --tls-cert-file "$T/cert.pem" \
	--tls-key-file "$T/key.pem" --tls-ca-cert-file "$T/cert.pem" --tls-auth-clients no \
	--save '' --appendonly no --dir "$T" --logfile "$T/redis.log" >/dev/null &
TLS_REDIS_PID=$!
cat >"$T/stunnel.conf" <<CONF
foreground = yes
pid =
output = $T/stunnel.log
[redis]
client = yes
accept = 127.0.0.1:$LP
connect = 127.0.0.1:$TP
verifyChain = yes
CAfile = $T/cert.pem
checkHost = redis.test
CONF
stunnel4 "$T/stunnel.conf" >/dev/null 2>&1 &
STUNNEL_PID=$!
tcli() { redis-cli -p "$TP" --tls --cacert "$T/cert.pem" --sni redis.test "$@"; }
for _ in $(seq 1 50); do
	tcli ping 2>/dev/null | grep -q PONG && ss -Hltn "( sport = :$LP )" | grep -q . && break
	sleep 0.1
done
expect_eq "TLS: redis-server answers on its TLS port" "$(tcli ping 2>/dev/null)" PONG
plain=$(timeout 2 redis-cli -p "$TP" ping 2>&1 | head -c 80)
[ "$plain" != PONG ] && tap_ok "  ... and a plaintext client gets no answer there (${plain:-nothing})" ||
	tap_not_ok "  ... and a plaintext client gets no answer there"
expect_eq "  ... the tunnel's local end answers PING in plaintext" "$(timeout 2 redis-cli -p "$LP" ping 2>/dev/null)" PONG
P3=$(free_port)
M3=$(free_port)
write_conf n3 "$P3" "$M3" $CAP
sed -i "s|address = \"unix:$REDIS_SOCK\"|address = \"127.0.0.1:$LP\"|" "$NT_DIR/n3.conf"
"$BUILD/sluiced" -c "$NT_DIR/n3.conf" -f >"$NT_DIR/n3.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do
	grep -q "gateway listening" "$NT_DIR/n3.log" && grep -q "redis .*connected" "$NT_DIR/n3.log" && break
	sleep 0.05
done
expect_ge "  ... a gateway pointed at the tunnel connects" "$(grep -c "redis 127.0.0.1:$LP: connected" "$NT_DIR/n3.log")" 1
r=$(logins "$P3,tlsv,bad,10.6.6.6" "$P3,tlsv,bad,10.6.6.6" "$P3,tlsv,bad,10.6.6.6" "$P3,tlsv,bad,10.6.6.6" "$P3,tlsv,bad,10.6.6.6" "$P3,tlsv,bad,10.6.6.6")
expect_eq "  ... its lockout counts through it (401 x5, 429)" "$r" "401 401 401 401 401 429"
expect_eq "  ... every check answered exactly (no fallback)" \
	"$($PY "$ROOT/tests/lib/prom.py" "http://127.0.0.1:$M3/metrics" sluice_store_fallbacks_total mode=local)" 0
expect_ge "  ... and the keys are in the TLS Redis (login_fail keys)" \
	"$(tcli --scan --pattern 'sluice:{default}:login_fail:*' 2>/dev/null | grep -vc ':live$')" 1
tap_diag "took $(( $(date +%s) - T0 )) s"
tap_done
