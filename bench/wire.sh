#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench/wire: sluice's drops, passes and replies per second per core on a veth, against bare
# XDP programs returning the same verdict on the same veth and core, in the same run.
#
#   generator ns: wgN  <-- veth -->  wrN :receiver ns (10.201.0.2, the real sluiced on it)
#
# build/bench/wire pushes live XDP frames into wgN (BPF_PROG_TEST_RUN with
# BPF_F_TEST_XDP_LIVE_FRAMES redirecting into the veth, as xdp-trafficgen does) from CPU 0;
# they arrive at wrN's XDP program as frames from a NIC driver would. wrN's NAPI runs
# threaded and its kthread is pinned to CPU 1, so everything the receiving side does for a
# packet (the ring, the XDP program, the verdict's work: freeing, building an skb and running
# the stack, sending a reply) is that thread's CPU time, on that core alone. RPS is off on
# wrN (rps_cpus 0), so passed packets stay on it. wgN runs bare_drop (XDP_TX on a veth
# delivers only to a peer with an XDP program) in a NAPI thread of its own on CPU 0, at
# SCHED_FIFO so that it keeps up with the replies beside the generator. The cost per frame
# is the thread's CPU time with its wake-ups priced and taken out (see bench/wire.c).
#
# The shed case also measures read_drop (bench/wire_bare.bpf.c): a drop that first reads the
# Ethernet, IPv4 and TCP headers, the floor of any filter, printed as a second reference
# beside the bare XDP_DROP the target is set against.
#
# The drop and reply cases are then measured again with the generator paced (PACED, 80 % of
# the lowest rate sluice reached; PACED=0 skips it), the same rate for every program, so that
# the veth refuses nothing: a refused frame's page is recycled by the generator's core into
# the ring the receiving core returns its drops to, and the two fight over its lock, which
# charges a slower program far more than its own cost (docs/performance.md, "Another
# machine"). A real NIC's driver recycles a dropped page on its own core, with no lock.
#
# Passed frames carry a TCP checksum of zero, wrong on purpose: the receiving stack takes
# them through IP and into TCP and discards them there (TcpInCsumErrors) instead of sending
# an RST for each, which would put reply traffic on the wire and a second cost on the core.
# Both programs' passes pay the same stack cost.
#
# Two phases, one sluiced each: the SYN front alone (port 80, action drop; no TC program),
# then with a stateless port (9090, reply), which adds sluiced's TC hand-off at ingress (it
# runs in both the sluice and the bare intervals of that phase).
#
# Usage: [PACED=PCT] bench/wire.sh [SECONDS] [ROUNDS]      (as root; make bench-wire)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib/tap.sh"
. "$ROOT/tests/lib/netns.sh"
SECS=${1:-1.5}
ROUNDS=${2:-3}
PACED=${PACED:-80}
WIRE=$BUILD/bench/wire
GEN_CPU=0
RCV_CPU=1
GIF=wg$((nt_id % 100000))
RIF=wr$((nt_id % 100000))

[ "$(id -u)" -eq 0 ] || { echo "wire: needs root" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "wire: needs two CPUs (generator and receiver)" >&2; exit 1; }
for f in "$WIRE" "$BUILD"/bpf/wire_{gen,bare}.bpf.o "$BUILD/sluiced"; do
	[ -e "$f" ] || { echo "wire: $f missing (make bench-wire)" >&2; exit 1; }
done

trap nt_teardown EXIT
ip netns add "$NS_C" && ip netns add "$NS_S" || exit 1
ip link add "$GIF" netns "$NS_C" type veth peer name "$RIF" netns "$NS_S" || exit 1
ip -n "$NS_S" addr add 10.201.0.2/24 dev "$RIF"
for ns in "$NS_C" "$NS_S"; do ip -n "$ns" link set lo up; done
ip -n "$NS_C" link set "$GIF" up
ip -n "$NS_S" link set "$RIF" up
ip -n "$NS_C" link set dev "$GIF" xdpdrv obj "$BUILD/bpf/wire_bare.bpf.o" sec xdp ||
	{ echo "wire: cannot attach XDP to $GIF" >&2; exit 1; }
# threaded NAPI needs the NAPI instance, which a veth has once XDP is on it.
ip netns exec "$NS_C" sh -c "echo 1 >/sys/class/net/$GIF/threaded" ||
	{ echo "wire: no threaded NAPI on veth here" >&2; exit 1; }
ip netns exec "$NS_S" sh -c "echo 0 >/sys/class/net/$RIF/queues/rx-0/rps_cpus" 2>/dev/null

cat >"$NT_DIR/asn.csv" <<'CSV'
203.0.113.0/24,64501,tight
198.51.100.0/24,64500,open
CSV
# A SYN-front connection costs 950: a new key of the tight class starts with half of one
# login's burst, so its SYNs are shed from the first; the open class has room for anything.
write_conf() { # PORTS
	cat >"$NT_DIR/sluice.conf" <<CONF
edge: { interfaces = ["$RIF"]; ports = ( $1 );
  state_entries = 262144; asn_table = "$NT_DIR/asn.csv"; pin_path = "$PIN"; event_sample = 0; };
classes = ( { name = "open"; rate = 1e9; burst = 1e9; parent_rate = 1e9; parent_burst = 1e9; },
            { name = "tight"; rate = 0.001; burst = 950.0; parent_rate = 0.001; parent_burst = 950.0; },
            { name = "unknown"; rate = 5.0; burst = 1000.0; } );
daemon: { control_socket = "$SOCK"; };
CONF
}

csum_errs() {
	ip netns exec "$NS_S" awk '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) c[$i] = i; h = 1 }
		else print $c["InCsumErrors"] }' /proc/net/snmp
}

# phase NAME PORTS CASE...: start sluiced on PORTS, run the cases, print sluice's reasons.
phase() {
	local name=$1 ports=$2 e0 e1 rc
	shift 2
	write_conf "$ports"
	nt_start_sluiced >/dev/null || { echo "wire: sluiced did not start:" >&2; cat "$NT_DIR/sluiced.log" >&2; exit 1; }
	taskset -p -c "$GEN_CPU" "$SLUICED_PID" >/dev/null
	for _ in $(seq 1 50); do ip -n "$NS_S" -d link show "$RIF" | grep -q prog/xdp && break; sleep 0.1; done
	ip netns exec "$NS_S" sh -c "echo 1 >/sys/class/net/$RIF/threaded" ||
		{ echo "wire: no threaded NAPI on $RIF" >&2; exit 1; }
	echo
	echo "== phase: $name (sluiced: $(grep -o 'attached in [a-z -]* mode' "$NT_DIR/sluiced.log" | tail -1))"
	e0=$(csum_errs)
	taskset -c "$GEN_CPU" "$WIRE" --gen-ns "$NS_C" --rcv-ns "$NS_S" --gen-if "$GIF" --rcv-if "$RIF" \
		--gen-obj "$BUILD/bpf/wire_gen.bpf.o" --bare-obj "$BUILD/bpf/wire_bare.bpf.o" \
		--gen-cpu "$GEN_CPU" --rcv-cpu "$RCV_CPU" --seconds "$SECS" --rounds "$ROUNDS" \
		--paced "$PACED" "$@"
	rc=$?
	e1=$(csum_errs)
	echo "  the receiving stack discarded $((e1 - e0)) passed segments at TCP (InCsumErrors)"
	echo "  sluice's own counters over the phase (sluicectl stats, by reason):"
	sluicectl stats --json | $PY -c '
import json, sys
d = json.load(sys.stdin)
r = d.get("reasons", d.get("by_reason", d))
items = r.items() if isinstance(r, dict) else [(x.get("reason"), x.get("packets", x.get("count"))) for x in r]
print("   ", ", ".join(f"{k} {v:,}" for k, v in items if isinstance(v, int) and v))' 2>/dev/null ||
		sluicectl stats | sed 's/^/    /'
	nt_stop_sluiced TERM
	[ "$rc" -eq 0 ] || { echo "wire: phase $name failed (exit $rc)" >&2; exit 1; }
}

echo "wire: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)," \
	"kernel $(uname -r), bpf_stats_enabled=$(sysctl -n kernel.bpf_stats_enabled)"
phase "SYN front (port 80, drop)" '{ port = 80; front = "syn"; cost = 950; }' \
	shed established unprotected
phase "stateless front (port 9090, reply) beside it" \
	'{ port = 80; front = "syn"; cost = 950; }, { port = 9090; front = "stateless"; action = "reply"; cost = 1; }' \
	syn-ack stateless-established
