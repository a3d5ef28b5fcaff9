#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# A Redis Cluster failover under load (issue 16: "a slot map refresh on topology change"):
# three masters on loopback, a replica for the master that serves tenant TA, two
# gateway-only sluiced nodes given one seed each. While both nodes take logins the master
# is SIGKILLed; the cluster promotes its replica (cluster-node-timeout 1000 ms). What a
# user sees is asserted:
#   - every login during the failover is answered, none slower than the store's timeout
#     plus the floor (the dead master costs a timeout at most, never a hang);
#   - the other tenant's checks stay exact throughout (no fallback);
#   - after the promotion both nodes find the new master by themselves (no restart, no
#     reload) and TA's checks are exact again: no fallback after it, /metrics names the
#     new master up, the killed one down;
#   - a victim's lockout count made before the kill survives on the replica: three wrong
#     passwords before, two after, and the sixth attempt is refused (burst 5), the same
#     on either node.
# SL_DEBUG=1 leaves the directory in place.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
gw_redis_suite rfailover
cleanup() {
	gw_nodes_stop
	redis_stop_ports
	suite_rm_dir "$NT_DIR"
}
trap cleanup EXIT
# A cluster node's bus is its port + 10000: ports under 55000.
cport() { local p; p=$(free_port); while [ "$p" -gt 55000 ]; do p=$(free_port); done; echo "$p"; }
C1=$(cport); C2=$(cport); C3=$(cport); R=$(cport)
redis_cluster_start "$C1" "$C2" "$C3" || { echo "Bail out! the Redis Cluster did not form"; exit 1; }
# Two tenants on two different masters.
TA=; TB=
for i in $(seq 1 60); do
	o=$(redis_cluster_owner "{t$i}")
	if [ -z "$TA" ]; then TA=t$i; OA=$o; elif [ "$o" != "$OA" ]; then TB=t$i; OB=$o; break; fi
done
[ -n "$TB" ] || { echo "Bail out! no two tenants on two masters"; exit 1; }
# A replica for TA's master.
redis_start_port "c$R" "$R" --cluster-enabled yes --cluster-config-file "$REDIS_DIR/c$R/nodes.conf" \
	--cluster-node-timeout 1000 --cluster-require-full-coverage no ||
	{ echo "Bail out! the replica did not start"; exit 1; }
redis-cli --cluster add-node "127.0.0.1:$R" "127.0.0.1:$OA" --cluster-slave \
	--cluster-master-id "$(redis_cluster_id "$OA")" >"$NT_DIR/add-node.log" 2>&1 ||
	{ sed 's/^/# /' "$NT_DIR/add-node.log"; echo "Bail out! add-node"; exit 1; }
for _ in $(seq 1 100); do
	redis-cli -p "$R" info replication | tr -d '\r' | grep -q '^master_link_status:up' && break
	sleep 0.1
done
redis-cli -p "$R" info replication | tr -d '\r' | grep -q '^master_link_status:up' ||
	{ echo "Bail out! the replica never synced"; exit 1; }

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$NT_DIR/session.key"
chmod 600 "$NT_DIR/session.key"
: >"$NT_DIR/creds.txt"
chmod 600 "$NT_DIR/creds.txt"
conf() { # node port metrics-port seed
	cat >"$NT_DIR/$1.conf" <<EOC
tenants = ( { name = "$TA"; hosts = ["$TA.test"]; reservation = 0.0; },
            { name = "$TB"; hosts = ["$TB.test"]; reservation = 0.0; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 10.0; } );
gateway: {
  listen = "127.0.0.1:$2";
  credentials = "$NT_DIR/creds.txt";
  session_key = "$NT_DIR/session.key";
  capacity = { cpu = 1000000.0; };
  argon2 = { m_cost_kib = 256; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
  trusted_hops = 1;
  reject_floor_ms = 0;
  login_uniform = false;
};
redis: { cluster = ["127.0.0.1:$4"]; timeout_ms = $TMO; breaker_open_ms = 300; };
cluster: { node = "$1"; nodes = 2; };
counters: {
  login_failures = { rate = 0.001; burst = 5.0; };
  login_parent = { enabled = false; };
  login_successes = { rate = 0.001; burst = 1000.0; };
  tenant_logins = { rate = 100000.0; burst = 100000.0; };
};
stream: { enabled = false; };
daemon: { control_socket = "$NT_DIR/$1.sock"; metrics_listen = "127.0.0.1:$3"; };
EOC
}
# 250 ms, as test_redis_cluster: a loaded 2-vCPU host can keep a live check past 100 ms.
TMO=250
PA=$(free_port); MA=$(free_port); PB=$(free_port); MB=$(free_port)
conf a "$PA" "$MA" "$C2"
conf b "$PB" "$MB" "$C3"
ctl() { local n=$1; shift; "$BUILD/sluicectl" -c "$NT_DIR/$n.conf" "$@"; }
echo "pw-a" | ctl a user add "$TA" victim >/dev/null || { echo "Bail out! user add"; exit 1; }
gw_nodes_start a b
metrics() { curl -s --max-time 5 "http://127.0.0.1:$1/metrics"; }
metric() { metrics "$1" | awk -v k="$2" '$1 == k { print $2 }'; }
fallbacks() { echo $(( $(metric "$MA" 'sluice_store_fallbacks_total{mode="local"}') + $(metric "$MB" 'sluice_store_fallbacks_total{mode="local"}') )); }

# login_req.py PORT,TENANT,USER,PASSWORD,XFF...: one "status ms" line per login, in order.
REQ="$ROOT/tests/lib/login_req.py"
statuses() { awk '{ printf "%s%s", (NR > 1 ? " " : ""), $1 } END { print "" }'; }
# load.py STOPFILE PORT_A PORT_B TENANT...: one login a 20 ms, each from a fresh account and
# address, round robin over the tenants and nodes, until STOPFILE exists; one line per login:
# "elapsed_s tenant node status ms".
cat >"$NT_DIR/load.py" <<'PYEOF'
import http.client, os, sys, time
stop, pa, pb, tenants = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
t0, i = time.monotonic(), 0
while not os.path.exists(stop):
    tenant, port = tenants[i % len(tenants)], (pa, pb)[(i // len(tenants)) % 2]
    s = time.monotonic()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("POST", "/login", body="username=load%d&password=w%d" % (i, i),
                  headers={"Host": tenant + ".test", "X-Forwarded-For": "10.%d.%d.1" % (i // 250 % 250, i % 250),
                           "Content-Type": "application/x-www-form-urlencoded"})
        r = c.getresponse(); r.read(); c.close(); st = r.status
    except Exception as e:
        st = "error:" + type(e).__name__
    print("%.3f %s %s %s %.1f" % (s - t0, tenant, "a" if port == pa else "b", st,
          (time.monotonic() - s) * 1000), flush=True)
    i += 1
    time.sleep(0.02)
PYEOF

# ---- before: a count on TA's master, replicated -----------------------------------------
r=$($PY "$REQ" "$PA,$TA,victim,w1,203.0.113.7" "$PB,$TA,victim,w2,203.0.113.7" \
	"$PA,$TA,victim,w3,203.0.113.7" | statuses)
expect_eq "before: the victim's three wrong passwords (401 x3), on TA's master :$OA" "$r" "401 401 401"
expect_eq "  ... replicated to :$R before the kill (WAIT)" "$(redis-cli -p "$OA" wait 1 2000)" 1
expect_eq "before: TA's counters are on :$OA, TB's on :$OB" \
	"$(redis_cluster_owner "{$TA}") $(redis_cluster_owner "{$TB}")" "$OA $OB"

# ---- the failover, under load -----------------------------------------------------------
$PY "$NT_DIR/load.py" "$NT_DIR/load.stop" "$PA" "$PB" "$TA" "$TB" >"$NT_DIR/load.out" &
LOAD=$!
PIDS+=($LOAD)
sleep 1
fbb0=$(metric "$MA" "sluice_store_fallbacks_total{mode=\"local\"}")
T_KILL=$(date +%s.%N)
redis_kill_port "c$OA"
promoted=
for _ in $(seq 1 150); do
	[ "$(redis-cli -p "$R" role 2>/dev/null | head -1)" = master ] && { promoted=$(date +%s.%N); break; }
	sleep 0.1
done
expect_eq "the cluster promoted the replica :$R" "$([ -n "$promoted" ] && echo yes)" yes
since() { awk -v a="$1" -v b="$T_KILL" 'BEGIN { printf "%.1f", a - b }'; }
tap_diag "promoted $(since "${promoted:-0}") s after the kill"
# Both nodes find the new master alone: wait until a check of TA's is exact on each.
recovered=
for _ in $(seq 1 100); do
	fb=$(fallbacks)
	r=$($PY "$REQ" "$PA,$TA,probe$RANDOM,w,198.51.100.9" "$PB,$TA,probe$RANDOM,w,198.51.100.9" | statuses)
	[ "$r" = "401 401" ] && [ "$(fallbacks)" = "$fb" ] && { recovered=$(date +%s.%N); break; }
	sleep 0.1
done
expect_eq "after the promotion, both nodes check TA exactly again (no restart, no reload)" \
	"$([ -n "$recovered" ] && echo yes)" yes
tap_diag "exact again $(since "${recovered:-0}") s after the kill"
sleep 1
fb1=$(fallbacks)
sleep 2
touch "$NT_DIR/load.stop"
wait "$LOAD" 2>/dev/null
fb2=$(fallbacks)
expect_eq "  ... and stay exact: no fallback in the 2 s of load after" "$((fb2 - fb1))" 0
n=$(wc -l <"$NT_DIR/load.out")
bad=$(awk '$4 != 401 { n++ } END { print n + 0 }' "$NT_DIR/load.out")
slow=$(awk -v b=$((TMO * 2 + 500)) '$5 > b { n++ } END { print n + 0 }' "$NT_DIR/load.out")
worst=$(awk 'BEGIN { m = 0 } $5 > m { m = $5 } END { print m }' "$NT_DIR/load.out")
tap_diag "load: $n logins, $bad not 401, worst $worst ms; fallbacks during the failover $((fb1 - fbb0))"
expect_ge "every login of the load was answered ($n, over the kill and the promotion)" "$n" 100
expect_eq "  ... each a 401 (a fresh account's wrong password), none an error or a 5xx" "$bad" 0
expect_eq "  ... none slower than twice the timeout plus 500 ms (worst $worst ms)" "$slow" 0
# TB's master never went away: its checks never fell back. Node a's fallbacks are labelled
# by counter, not tenant, so the proof is TB's count: exact across the kill.
r=$($PY "$REQ" "$PA,$TB,tbvic,x1,203.0.113.8" "$PB,$TB,tbvic,x2,203.0.113.8" \
	"$PA,$TB,tbvic,x3,203.0.113.8" "$PB,$TB,tbvic,x4,203.0.113.8" "$PA,$TB,tbvic,x5,203.0.113.8" \
	"$PB,$TB,tbvic,x6,203.0.113.8" | statuses)
expect_eq "TB (its master up throughout) stays exact: 401 x5, then 429" "$r" "401 401 401 401 401 429"

# ---- after: the count survived on the replica -------------------------------------------
r=$($PY "$REQ" "$PB,$TA,victim,w4,203.0.113.7" "$PA,$TA,victim,w5,203.0.113.7" \
	"$PB,$TA,victim,w6,203.0.113.7" "$PA,$TA,victim,w7,203.0.113.7" | statuses)
expect_eq "after: the victim's 4th and 5th wrong passwords 401, the 6th and 7th refused, on either node" \
	"$r" "401 401 429 429"
expect_eq "  ... the right password from another address still signs in" \
	"$($PY "$REQ" "$PA,$TA,victim,pw-a,198.51.100.77" | statuses)" 200
for n in a b; do
	m=$MA; [ $n = b ] && m=$MB
	tap_diag "node $n: $(metrics "$m" | grep '^sluice_store_redis_node_up' | tr '\n' ' ')"
	expect_eq "node $n /metrics: the new master :$R up, the killed :$OA not (gone from its slot map)" \
		"$(metric "$m" "sluice_store_redis_node_up{node=\"127.0.0.1:$R\"}") $(metric "$m" "sluice_store_redis_node_up{node=\"127.0.0.1:$OA\"}" | grep -c '^1$')" "1 0"
done
expect_match "node a's status names the new master connected" "$(ctl a status)" \
	"redis server 127\\.0\\.0\\.1:$R: connected, breaker closed"
tap_done
