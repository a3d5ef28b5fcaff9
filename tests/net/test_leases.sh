#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Two edge nodes sharing one Redis. A client namespace has a veth to each of two server
# namespaces; each server runs its own sluiced with XDP on its veth, and both lease the budget
# of one tenant ("acme", 100 units/s) through a redis-server on a Unix socket (reachable from
# every network namespace: it is a file). The client splits the tenant's traffic 80/20:
#
#   client ns: va 10.201.0.1 <--> 10.201.0.2 vsa :ns A (sluiced, node "a")
#              vb 10.202.0.1 <--> 10.202.0.2 vsb :ns B (sluiced, node "b")
#
# Every SYN costs one unit and comes from a fresh address, so only the tenant's bucket sheds.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"
. "$HERE/../lib/redis.sh"

nt_require
redis_available || { echo "1..0 # SKIP redis-server is not installed"; exit 0; }

NS_A=sla$nt_id
NS_B=slb$nt_id
PIDS=()
teardown() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	redis_stop
	ip netns del "$NS_C" 2>/dev/null
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	rm -rf "$PIN-a" "$PIN-b" 2>/dev/null
	rm -rf "$NT_DIR"
}
trap teardown EXIT

ip netns add "$NS_C" && ip netns add "$NS_A" && ip netns add "$NS_B" ||
	{ echo "Bail out! cannot create namespaces"; exit 1; }
ip link add va netns "$NS_C" type veth peer name vsa netns "$NS_A"
ip link add vb netns "$NS_C" type veth peer name vsb netns "$NS_B"
ip -n "$NS_C" addr add 10.201.0.1/24 dev va
ip -n "$NS_C" addr add 10.202.0.1/24 dev vb
ip -n "$NS_A" addr add 10.201.0.2/24 dev vsa
ip -n "$NS_B" addr add 10.202.0.2/24 dev vsb
for ns in "$NS_C" "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
ip -n "$NS_C" link set va up
ip -n "$NS_C" link set vb up
ip -n "$NS_A" link set vsa up
ip -n "$NS_B" link set vsb up
ip -n "$NS_A" route add default via 10.201.0.1
ip -n "$NS_B" route add default via 10.202.0.1
MAC_A=$(ip -n "$NS_A" -o link show vsa | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
MAC_B=$(ip -n "$NS_B" -o link show vsb | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')

redis_start || { echo "Bail out! redis-server did not start"; exit 1; }

write_conf() { # node iface addr
	cat >"$NT_DIR/$1.conf" <<EOF
edge: {
  interfaces = ["$2"];
  xdp_mode = "generic";
  ports = ( { port = 80; action = "drop"; cost = 1; } );
  state_entries = 16384;
  pin_path = "$PIN-$1";
};
classes = ( { name = "unknown"; rate = 100.0; burst = 100.0; parent_rate = 1000.0;
              parent_burst = 1000.0; } );
tenants = ( { name = "acme"; listen = [ "$3:80" ]; rate = 100.0; burst = 20.0;
              static_rate = 10.0; static_burst = 5.0; lease_ttl = 1; } );
redis: { address = "unix:$REDIS_SOCK"; timeout_ms = 20; breaker_open_ms = 300; };
cluster: { node = "$1"; nodes = 2; lease_interval_ms = 200; demand_window_ms = 1000;
           lease_floor = 0.05; };
daemon: { control_socket = "$NT_DIR/$1.sock"; metrics_listen = "127.0.0.1:$4"; };
EOF
}
ctl() { "$BUILD/sluicectl" -c "$NT_DIR/$1.conf" "${@:2}"; }

start_node() { # node netns
	nsenter --net="/run/netns/$2" "$BUILD/sluiced" -c "$NT_DIR/$1.conf" -f \
		>"$NT_DIR/$1.log" 2>&1 &
	PIDS+=($!)
	local i
	for i in $(seq 1 100); do
		grep -q "sluiced .* running" "$NT_DIR/$1.log" 2>/dev/null && return 0
		sleep 0.1
	done
	tap_diag "$(tail -20 "$NT_DIR/$1.log")"
	return 1
}

MA=$(free_port)
write_conf a vsa 10.201.0.2 "$MA"
write_conf b vsb 10.202.0.2 "$(free_port)"
# sluiced enters only the server's network namespace, so node a's metrics listen on the
# loopback of namespace A: scrape from there.
prom() { ip netns exec "$NS_A" $PY "$ROOT/tests/lib/prom.py" "http://127.0.0.1:$MA/metrics" "$@"; }
start_node a "$NS_A" && start_node b "$NS_B" || { echo "Bail out! sluiced did not start"; exit 1; }

# With no demand anywhere, the live nodes split the budget evenly (a first node alone holds it
# all until the second reports; a refresh or two later they hold half each).
sleep 0.8
l=$(ctl a leases --json)
expect_eq "before any traffic: an even split (node a leases 50 of 100/s)" \
	"$(jget "$l" tenants.0.lease_rate)" 50
expect_eq "  ... and node b the other 50" "$(jget "$(ctl b leases --json)" tenants.0.lease_rate)" 50
expect_eq "the lease says it is coordinated through Redis" "$(jget "$l" coordination)" redis

pace() { # iface dmac dst rate seconds seed
	ip netns exec "$NS_C" $PY "$ROOT/tests/lib/synpace.py" --iface "$1" --dmac "$2" --dst "$3" \
		--src-net 198.18.0.0/15 --rate "$4" --seconds "$5" --seed "$6"
}
shed_of() { jget "$(ctl "$1" stats --json)" by_reason.shed_tenant; }
passed_of() { jget "$(ctl "$1" stats --json)" by_reason.passed; }

# The tenant sends 90 units/s, within its 100: 72 to node a, 18 to node b, for 6 s.
pace va "$MAC_A" 10.201.0.2 72 6 1 >"$NT_DIR/pa" &
pa=$!
pace vb "$MAC_B" 10.202.0.2 18 6 2 >"$NT_DIR/pb" &
pb=$!
sleep 2.6 # scapy takes ~0.5 s to start; then 2 s to converge
la=$(ctl a leases --json)
lb=$(ctl b leases --json)
sa=$(jget "$la" tenants.0.share)
sb=$(jget "$lb" tenants.0.share)
tap_diag "after 2 s: a share $sa lease $(jget "$la" tenants.0.lease_rate)/s demand $(jget "$la" tenants.0.demand)/s; b share $sb lease $(jget "$lb" tenants.0.lease_rate)/s demand $(jget "$lb" tenants.0.demand)/s"
in_range() { /usr/bin/python3 -c "import sys; sys.exit(0 if $2 <= $1 <= $3 else 1)"; }
in_range "$sa" 0.7 0.9 && tap_ok "node a's share converged to about 80 % within 2 s ($sa)" ||
	tap_not_ok "node a's share converged to about 80 % within 2 s ($sa)"
in_range "$sb" 0.1 0.3 && tap_ok "node b's share converged to about 20 % within 2 s ($sb)" ||
	tap_not_ok "node b's share converged to about 20 % within 2 s ($sb)"
expect_eq "both nodes see two live reports" "$(jget "$la" tenants.0.nodes)$(jget "$lb" tenants.0.nodes)" 22

# The share on /metrics while the traffic runs (after it, demand decays and so does the
# 80/20 split); checked below with the other metrics.
ms=$(prom sluice_lease_share tenant=acme)
# From here to the end of the run, neither node sheds the tenant: it is within its budget.
a0=$(shed_of a)
b0=$(shed_of b)
sum_max=0
for _ in 1 2 3 4 5 6 7 8; do
	s=$(/usr/bin/python3 -c "import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); print(round(a['tenants'][0]['lease_rate'] + b['tenants'][0]['lease_rate'], 2))" \
		"$(ctl a leases --json)" "$(ctl b leases --json)")
	sum_max=$(/usr/bin/python3 -c "print(max($sum_max, $s))")
	sleep 0.3
done
wait $pa $pb
a1=$(shed_of a)
b1=$(shed_of b)
tap_diag "sent: a $(cat "$NT_DIR/pa"), b $(cat "$NT_DIR/pb"); shed after convergence: a $((a1 - a0)), b $((b1 - b0))"
expect_le "node a (72/s against its lease) shed none of the tenant after convergence" "$((a1 - a0))" 2
expect_le "node b (18/s) shed none either" "$((b1 - b0))" 2
in_range "$sum_max" 0 110 && tap_ok "the two leases never summed past budget x (1 + 2 x floor) = 110/s (max $sum_max)" ||
	tap_not_ok "the two leases never summed past budget x (1 + 2 x floor) = 110/s (max $sum_max)"

expect_ge "metrics parse as Prometheus text" "$(prom --check)" 10
pt=$(prom --promtool)
if [ "$pt" = "no promtool" ]; then
	tap_skip "metrics pass promtool check metrics" "no promtool (scripts/deps.sh fetches it)"
else
	expect_eq "metrics pass promtool check metrics (Prometheus's parser and linter)" "$pt" ok
fi
in_range "$ms" 0.7 0.9 && tap_ok "metrics: node a's lease share ($ms)" ||
	tap_not_ok "metrics: node a's lease share ($ms)"
expect_ge "metrics: XDP decisions by reason and class move with traffic" \
	"$(prom sluice_xdp_decisions_total reason=passed class=unknown)" 400
expect_ge "metrics: the datapath created prefix buckets for the traffic" \
	"$(prom sluice_xdp_keys_created_total kind=new)" 1
expect_eq "metrics: the lease is live" "$(prom sluice_lease_live tenant=acme)" 1
st=$(ctl a status --json)
expect_eq "status: the counter store is Redis, breaker closed" \
	"$(jget "$st" store.backend) $(jget "$st" store.breaker)" "redis closed"

# Redis goes away: leases are not renewed and expire (1 s) to the static rate by themselves.
redis_stop
sleep 1.6
la=$(ctl a leases --json)
expect_eq "without Redis, node a's lease expired" "$(jget "$la" tenants.0.lease_live)" false
expect_eq "  ... and the datapath's static rate is in force" "$(jget "$la" tenants.0.in_force_rate)" 10
expect_eq "metrics: the lease is no longer live" "$(prom sluice_lease_live tenant=acme)" 0
expect_eq "metrics: the rate in force is the static 10/s" "$(prom sluice_tenant_rate_in_force tenant=acme)" 10
st=$(ctl a status --json)
expect_match "status shows the breaker open or probing" "$(jget "$st" store.breaker)" '^(open|half_open)$'
grep -q "leases: no answer from Redis" "$NT_DIR/a.log" && tap_ok "the lost lease is logged" ||
	tap_not_ok "the lost lease is logged"
pace va "$MAC_A" 10.201.0.2 40 2 3 >/dev/null
p0=$(passed_of a)
pace va "$MAC_A" 10.201.0.2 40 2 4 >/dev/null
p1=$(passed_of a)
tap_diag "with the static rate in force: $((p1 - p0)) of 80 SYNs passed"
expect_le "with the static 10/s in force, 40/s for 2 s passes at most 5 + 10 x 2 + slack" "$((p1 - p0))" 30

redis_start || { echo "Bail out! redis-server did not restart"; exit 1; }
for _ in $(seq 1 30); do
	[ "$(jget "$(ctl a leases --json)" tenants.0.lease_live)" = true ] && break
	sleep 0.2
done
expect_eq "Redis back: the lease is renewed" "$(jget "$(ctl a leases --json)" tenants.0.lease_live)" true
grep -q "leases: Redis answers again" "$NT_DIR/a.log" && tap_ok "the recovery is logged" ||
	tap_not_ok "the recovery is logged"

tap_done
