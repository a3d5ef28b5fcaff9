#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Two edge nodes sharing one Redis. A client namespace has a veth to each of two server
# namespaces; each server runs its own sluiced with XDP on its veth in front of a real HTTP
# server, and both lease the budget of one tenant ("acme", 100 units/s) through a
# redis-server on a Unix socket (reachable from every network namespace: it is a file).
#
#   client ns: va 10.201.0.1 <--> 10.201.0.2 vsa :ns A (sluiced, node "a")
#              vb 10.202.0.1 <--> 10.202.0.2 vsb :ns B (sluiced, node "b")
#
# Verify, then charge: a lease follows demand, and demand is what proven connections charged
# the tenant. So the tenant's traffic here is real clients (tests/lib/realpace.py: the
# client's own TCP, one request each, 1 unit each), split 80/20 between the nodes; and a
# spoofed SYN flood at one node, at 10 and 100 times the tenant's rate, must neither move that
# node's demand or share nor cost the other node's real clients a single connection.
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

# A real server behind each node: what a node admits is handed to it.
mkdir -p "$NT_DIR/www"
echo "hello from the real server" >"$NT_DIR/www/index.html"
for ns in "$NS_A" "$NS_B"; do
	ip netns exec "$ns" $PY -m http.server 80 --bind 0.0.0.0 --directory "$NT_DIR/www" \
		>"$NT_DIR/http-$ns.log" 2>&1 &
	PIDS+=($!)
done
for ns in "$NS_A" "$NS_B"; do
	for _ in $(seq 1 50); do
		ip netns exec "$ns" ss -Hltn '( sport = :80 )' | grep -q . && break
		sleep 0.1
	done
done

# The stateless front (every port's default) on a `reply` port: a real client shed by the
# tenant gets its 429 at once instead of waiting out a drop. No routes, so a connection costs
# the port's 1 unit and the tenant's 100 units/s are 100 connections a second; its burst of
# 20 holds the most the edge charges one connection (1), as every burst must. The source's
# own bucket (100/s a /32) leaves the tenant's the only one to shed.
write_conf() { # node iface addr metrics-port
	cat >"$NT_DIR/$1.conf" <<EOF
edge: {
  interfaces = ["$2"];
  xdp_mode = "generic";
  ports = ( { port = 80; action = "reply"; cost = 1; } );
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
MB=$(free_port)
write_conf b vsb 10.202.0.2 "$MB"
# sluiced enters only the server's network namespace, so node a's metrics listen on the
# loopback of namespace A: scrape from there.
prom() { ip netns exec "$NS_A" $PY "$ROOT/tests/lib/prom.py" "http://127.0.0.1:$MA/metrics" "$@"; }
prom_b() { ip netns exec "$NS_B" $PY "$ROOT/tests/lib/prom.py" "http://127.0.0.1:$MB/metrics" "$@"; }
start_node a "$NS_A" && start_node b "$NS_B" || { echo "Bail out! sluiced did not start"; exit 1; }

lease() { jget "$(ctl "$1" leases --json)" "tenants.0.$2"; }
stat_of() { jget "$(ctl "$1" stats --json)" "by_reason.$2"; }
in_range() { /usr/bin/python3 -c "import sys; sys.exit(0 if $2 <= $1 <= $3 else 1)"; }
# wait_for SECONDS CONDITION...: poll CONDITION every 0.1 s until it holds or time is up.
wait_for() {
	local n=$(($1 * 10)) i
	shift
	for i in $(seq 1 "$n"); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# With no demand anywhere, the live nodes split the budget evenly (a first node alone holds no
# more than its static share until the second reports, or Redis may have lost its report: a
# refresh or two later they hold half each).
even() { [ "$(lease a lease_rate)" = 50 ] && [ "$(lease b lease_rate)" = 50 ]; }
wait_for 3 even
l=$(ctl a leases --json)
expect_eq "before any traffic: an even split (node a leases 50 of 100/s)" \
	"$(jget "$l" tenants.0.lease_rate)" 50
expect_eq "  ... and node b the other 50" "$(lease b lease_rate)" 50
expect_eq "the lease says it is coordinated through Redis" "$(jget "$l" coordination)" redis

# clients SRC DST RATE SECONDS: real connections from the client namespace, one request each.
# They end with a reset, leaving the server no TIME_WAIT: a later client port that collides
# with one (a few in a few hundred connections) is a tuple the kernel reopens, charged at
# its handshake's ACK at the port's unreadable cost (test_stateless, section 5), not as a
# first request; against e43d54c not charged at all. Either would blur the counts below.
clients() { # SRC DST RATE SECONDS [MARK: also count what began once this file exists]
	ip netns exec "$NS_C" $PY "$ROOT/tests/lib/realpace.py" --src "$1" --dst "$2" \
		--rate "$3" --seconds "$4" --timeout 2 ${5:+--mark "$5"}
}
# flood DMAC-IFACE DST RATE SECONDS SEED: spoofed SYNs toward the tenant (random sources).
flood() {
	ip netns exec "$NS_C" $PY "$ROOT/tests/lib/synpace.py" --iface "$1" --dmac "$2" --dst "$3" \
		--src-net 198.18.0.0/15 --rate "$4" --seconds "$5" --seed "$6"
}

# 1. The tenant sends 90 units/s, within its 100: 72 real connections a second to node a, 18
#    to node b, for 6 s. Demand (units charged by proven connections) splits 80/20, and so do
#    the leases.
clients 10.201.0.1 10.201.0.2 72 6 >"$NT_DIR/ca" &
pa=$!
clients 10.202.0.1 10.202.0.2 18 6 >"$NT_DIR/cb" &
pb=$!
sleep 2.6 # the clients take ~0.1 s to start; then 2 s to converge (the demand window is 1 s)
la=$(ctl a leases --json)
lb=$(ctl b leases --json)
sa=$(jget "$la" tenants.0.share)
sb=$(jget "$lb" tenants.0.share)
tap_diag "after 2 s: a share $sa lease $(jget "$la" tenants.0.lease_rate)/s demand $(jget "$la" tenants.0.demand)/s; b share $sb lease $(jget "$lb" tenants.0.lease_rate)/s demand $(jget "$lb" tenants.0.demand)/s"
in_range "$sa" 0.7 0.9 && tap_ok "node a's share converged to about 80 % within 2 s ($sa)" ||
	tap_not_ok "node a's share converged to about 80 % within 2 s ($sa)"
in_range "$sb" 0.1 0.3 && tap_ok "node b's share converged to about 20 % within 2 s ($sb)" ||
	tap_not_ok "node b's share converged to about 20 % within 2 s ($sb)"
expect_eq "both nodes see two live reports" "$(jget "$la" tenants.0.nodes)$(jget "$lb" tenants.0.nodes)" 22

# The share on /metrics while the traffic runs (after it, demand decays and so does the
# 80/20 split); checked below with the other metrics.
ms=$(prom sluice_lease_share tenant=acme)
# From here to the end of the run, neither node sheds the tenant: it is within its budget.
a0=$(stat_of a shed_tenant)
b0=$(stat_of b shed_tenant)
sum_max=0
for _ in 1 2 3 4 5 6 7 8; do
	s=$(/usr/bin/python3 -c "import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); print(round(a['tenants'][0]['lease_rate'] + b['tenants'][0]['lease_rate'], 2))" \
		"$(ctl a leases --json)" "$(ctl b leases --json)")
	sum_max=$(/usr/bin/python3 -c "print(max($sum_max, $s))")
	sleep 0.3
done
wait $pa $pb
a1=$(stat_of a shed_tenant)
b1=$(stat_of b shed_tenant)
ca=$(cat "$NT_DIR/ca")
cb=$(cat "$NT_DIR/cb")
tap_diag "clients: a $ca; b $cb; shed after convergence: a $((a1 - a0)), b $((b1 - b0))"
expect_le "node a (72/s against its lease) shed none of the tenant after convergence" "$((a1 - a0))" 2
expect_le "node b (18/s) shed none either" "$((b1 - b0))" 2
expect_eq "every real client got an answer (200 or 429) from a" \
	"$(($(jget "$ca" ok) + $(jget "$ca" shed429)))" "$(jget "$ca" attempted)"
expect_eq "  ... and from b" "$(($(jget "$cb" ok) + $(jget "$cb" shed429)))" "$(jget "$cb" attempted)"
in_range "$sum_max" 0 100.01 && tap_ok "the two leases never summed past the 100/s budget (max $sum_max)" ||
	tap_not_ok "the two leases never summed past the 100/s budget (max $sum_max)"

expect_ge "metrics parse as Prometheus text" "$(prom --check)" 10
pt=$(prom --promtool)
if [ "$pt" = "no promtool" ]; then
	tap_skip "metrics pass promtool check metrics" "no promtool (scripts/deps.sh fetches it)"
else
	expect_eq "metrics pass promtool check metrics (Prometheus's parser and linter)" "$pt" ok
fi
in_range "$ms" 0.7 0.9 && tap_ok "metrics: node a's lease share ($ms)" ||
	tap_not_ok "metrics: node a's lease share ($ms)"
# Every 200 node a's clients got was one first request admitted there, and nothing else was.
expect_eq "metrics: first requests admitted at node a, by class: one per 200 its clients got" \
	"$(prom sluice_xdp_decisions_total reason=first_admitted class=unknown)" "$(jget "$ca" ok)"
expect_ge "metrics: the datapath created the clients' prefix and parent buckets" \
	"$(prom sluice_xdp_keys_created_total kind=new)" 2
expect_eq "metrics: the lease is live" "$(prom sluice_lease_live tenant=acme)" 1
# Two nodes, one tenant: each /metrics names its node, for the dashboard's join on instance.
expect_eq "metrics: node a says it is node a, node b that it is b (sluice_node_info)" \
	"$(prom sluice_node_info node=a) $(prom_b sluice_node_info node=b)" "1 1"
expect_eq "metrics: node a's bucket table holds edge.state_entries" \
	"$(prom sluice_bpf_table_capacity table=buckets)" 16384
expect_ge "metrics: node a's buckets in use: its clients' prefix and parent at least" \
	"$(prom sluice_bpf_table_entries table=buckets)" 2
st=$(ctl a status --json)
expect_eq "status: the counter store is Redis, breaker closed" \
	"$(jget "$st" store.backend) $(jget "$st" store.breaker)" "redis closed"

# 2. A spoofed flood at one node does not steal the tenant's lease from the other (issue 13:
#    lease demand counts verified demand only). Node b serves real clients at 40/s, inside the
#    90 % it holds once node a is idle (node a keeps its static share, 10 %, the least a node
#    is counted at; and b's 40/s are far above the 10/s a's flood would leave b if it counted:
#    a's demand would be 1,000 or 10,000 units/s against b's 40). Node a
#    gets spoofed SYNs toward the tenant at 10x (1,000/s) and 100x (10,000/s) its rate.
idle() { [ "$(lease a demand)" = 0 ] && [ "$(lease b demand)" = 0 ]; }
wait_for 3 idle
expect_eq "after the 80/20 run, demand decays to nothing on both nodes" "$(lease a demand) $(lease b demand)" "0 0"
bu0=$(lease b demand_units)
# The clients' connections begun once the floods start are counted apart (the mark file): before
# that, b's lease is still moving toward its clients' demand and a 429 or two there is the
# lease's lag, not the flood's doing.
rm -f "$NT_DIR/flooding"
clients 10.202.0.1 10.202.0.2 40 10 "$NT_DIR/flooding" >"$NT_DIR/cb2" &
pb=$!
b_holds() { in_range "$(lease b share)" 0.85 1; }
wait_for 3 b_holds
sb=$(lease b share)
in_range "$sb" 0.85 1 && tap_ok "node b's real clients alone: b holds the lease ($sb), a its static share ($(lease a share))" ||
	tap_not_ok "node b's real clients alone: b holds the lease ($sb), a its static share ($(lease a share))"
au0=$(lease a demand_units)
b0=$(stat_of b shed_tenant)
touch "$NT_DIR/flooding"
total=0
for x in 10 100; do
	h0=$(stat_of a handshake)
	flood va "$MAC_A" 10.201.0.2 $((x * 100)) 3 $x >"$NT_DIR/flood$x" &
	fp=$!
	# a's share is judged where the cluster had demand (b's clients): with none anywhere the
	# script splits the budget evenly (1/n), which is no theft. On a starved machine b's
	# clients can stall for a report or two (seen: a 0.5 share beside a cluster demand of 0,
	# at 068706d too); a's own demand, which a flood would raise, is checked every sample.
	smax=0 dmax=0 nsamp=0 nidle=0
	while kill -0 $fp 2>/dev/null; do
		l=$(ctl a leases --json)
		if /usr/bin/python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" \
			"$(jget "$l" tenants.0.cluster_demand)"; then
			smax=$(/usr/bin/python3 -c "print(max($smax, $(jget "$l" tenants.0.share)))")
			nsamp=$((nsamp + 1))
		else
			nidle=$((nidle + 1))
		fi
		dmax=$(/usr/bin/python3 -c "print(max($dmax, $(jget "$l" tenants.0.demand)))")
		sleep 0.2
	done
	tap_diag "${x}x flood: $nsamp samples with cluster demand, $nidle with none"
	wait $fp
	sent=$(jget "$(cat "$NT_DIR/flood$x")" sent)
	total=$((total + sent))
	h=$(($(stat_of a handshake) - h0))
	tap_diag "flood at ${x}x: $(cat "$NT_DIR/flood$x"); node a answered $h with a cookie"
	expect_ge "${x}x flood: node a's XDP saw it and answered at least 90 % (of $sent SYNs)" \
		"$((h * 10))" "$((sent * 9))"
	# Enough samples with demand for the share check to mean something. Not "most": on the
	# 2-vCPU EPYC VM of 2026-12-04 the 100x flood and its XDP took both CPUs from b's clients
	# for 10-13 of 16-19 samples (5-8 with demand) in three runs; b's clients are
	# judged on their own answers above, and a's demand in every sample below.
	expect_ge "${x}x flood: the cluster had demand (b's clients) in at least 3 samples (of $((nsamp + nidle)))" "$nsamp" 3
	in_range "$smax" 0 0.1 && tap_ok "${x}x flood: node a's share never rose above its static 10 % (max $smax)" ||
		tap_not_ok "${x}x flood: node a's share never rose above its static 10 % (max $smax)"
	expect_eq "${x}x flood: node a's demand stayed at 0 units/s" "$dmax" 0
done
expect_eq "$total spoofed SYNs moved node a's demand_units by nothing" \
	"$(($(lease a demand_units) - au0))" 0
wait $pb
cb2=$(cat "$NT_DIR/cb2")
tap_diag "node b's clients (whole run; 'marked': begun during or after the floods): $cb2"
expect_eq "node b's real clients: every connection got an answer, 200 or 429" \
	"$(($(jget "$cb2" ok) + $(jget "$cb2" shed429)))" "$(jget "$cb2" attempted)"
expect_ge "node b's real clients ran through the floods (connections begun then)" \
	"$(jget "$cb2" marked.attempted)" 100
expect_eq "node b's real clients kept 100 % of their connections during the floods" \
	"$(jget "$cb2" marked.ok)" "$(jget "$cb2" marked.attempted)"
expect_eq "  ... no 429 among them, no timeout" \
	"$(jget "$cb2" marked.shed429) $(jget "$cb2" marked.timeout)" "0 0"
expect_eq "  ... node b shed none of the tenant while a was flooded" "$(($(stat_of b shed_tenant) - b0))" 0
expect_eq "node b's demand_units moved by exactly its real connections, 1 unit each" \
	"$(($(lease b demand_units) - bu0))" "$(jget "$cb2" attempted)"
# The control: the same counter at node a does move, by one unit for every connection that
# proves its source, whether the tenant then admits it or sheds it (node a holds only its
# static share now: 10/s, so most of these get the 429). That is the demand its lease should follow.
au1=$(lease a demand_units)
c=$(clients 10.201.0.1 10.201.0.2 20 0.5)
tap_diag "control at node a: $c"
n=$(jget "$c" attempted)
expect_ge "control: 10 real connections to node a" "$n" 8
expect_eq "control: every one answered, 200 or 429" "$(($(jget "$c" ok) + $(jget "$c" shed429)))" "$n"
expect_eq "control: node a's demand_units moved by one unit for each of them" \
	"$(($(lease a demand_units) - au1))" "$n"

# 3. Redis goes away: leases are not renewed and expire (1 s) to the static rate by themselves.
redis_stop
expired() { [ "$(lease a lease_live)" = false ]; }
wait_for 3 expired
la=$(ctl a leases --json)
expect_eq "without Redis, node a's lease expired" "$(jget "$la" tenants.0.lease_live)" false
expect_eq "  ... and the datapath's static rate is in force" "$(jget "$la" tenants.0.in_force_rate)" 10
expect_eq "metrics: the lease is no longer live" "$(prom sluice_lease_live tenant=acme)" 0
expect_eq "metrics: the rate in force is the static 10/s" "$(prom sluice_tenant_rate_in_force tenant=acme)" 10
st=$(ctl a status --json)
expect_match "status shows the breaker open or probing" "$(jget "$st" store.breaker)" '^(open|half_open)$'
grep -q "leases: no answer from Redis" "$NT_DIR/a.log" && tap_ok "the lost lease is logged" ||
	tap_not_ok "the lost lease is logged"
# 40 real connections a second for 2 s: the static burst (5) and rate (10/s) let 5 + 20 of
# them through (a little slack either way for the pacing); the rest get the 429.
c=$(clients 10.201.0.1 10.201.0.2 40 2)
tap_diag "with the static rate in force: $c"
expect_le "with the static 10/s in force, 40/s for 2 s passes at most 5 + 10 x 2 + slack" "$(jget "$c" ok)" 30
expect_ge "  ... and at least the rate's 10 x 2 - slack" "$(jget "$c" ok)" 15
expect_eq "  ... the others got the 429" "$(($(jget "$c" ok) + $(jget "$c" shed429)))" "$(jget "$c" attempted)"

redis_start || { echo "Bail out! redis-server did not restart"; exit 1; }
live() { [ "$(lease a lease_live)" = true ]; }
wait_for 6 live
expect_eq "Redis back: the lease is renewed" "$(lease a lease_live)" true
grep -q "leases: Redis answers again" "$NT_DIR/a.log" && tap_ok "the recovery is logged" ||
	tap_not_ok "the recovery is logged"

tap_done
