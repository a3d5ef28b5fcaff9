#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench/attack_goodput: a real client's goodput while spoofed SYNs flood the port it uses.
# The client (h1load: a new connection per request, 16 in flight) asks nginx for a page from
# its own address; bench/synflood sends SYNs from random addresses of 198.18.0.0/15 at a set
# rate, or as fast as one core can. Three servers, one after the other on the same veth pair:
# the kernel alone (SYN cookies on, nginx backlog 4096), sluice's stateless front, and its
# SYN front. Prints, per flood rate, the client's 200s per second and the share of its
# no-flood rate it kept. The machine has two cores and runs client, flooder and server at
# once: read the ratios within a row, not the absolute numbers.
#
# Two paths for the flood, one table each (PATHS picks; both by default):
#   shared  the flood enters on the client's own link (vc -> vs), and the server's answers to
#           the spoofed sources (SYN-ACKs, from sluice's XDP_TX or from the kernel) come back
#           into the client's veth, where bench/sink.bpf.c drops them: they take the client's
#           ring and NAPI turns, which on a real network they never do.
#   apart   the flood enters on a link of its own (a third namespace, flc -> fls, the server
#           routing 198.18.0.0/15 back that way), sluice attached to both server links: the
#           answers go back to the flooder's side. The CPUs are still the same two; what is
#           taken away is only the client's ring and veth. A real NIC's RSS spreads a spoofed
#           flood over every queue, the client's among them, so the truth lies between the
#           two tables.
#
# Usage: bench/attack_goodput.sh [SECONDS]        (as root; make bench-attack)
#        PATHS="shared apart" (the default), or one of them
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib/tap.sh"
. "$ROOT/tests/lib/netns.sh"
SECS=${1:-4}
H1=$BUILD/bench/h1load
FLOOD=$BUILD/bench/synflood
RATES=(0 20000 60000 120000 max)

[ "$(id -u)" -eq 0 ] || { echo "attack_goodput: needs root" >&2; exit 1; }
command -v nginx >/dev/null || { echo "attack_goodput: nginx missing (scripts/deps.sh)" >&2; exit 1; }
nt_setup || exit 1
# The client's veth drops what the server sends the spoofed sources (bench/sink.bpf.c): on a
# real network those replies go elsewhere, not into the benchmark's client.
ip -n "$NS_C" link set dev vc xdpdrv obj "$BUILD/bpf/sink.bpf.o" sec xdp ||
	{ echo "attack_goodput: cannot attach XDP to the client veth" >&2; exit 1; }
nt_client_addr 203.0.113.10
CLIENT_MAC=$(ip -n "$NS_C" -o link show vc | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
# The flood's own link (PATHS=apart): namespace $NS_F, flc 10.201.0.1 <-> fls 10.201.0.2.
NS_F=slf$$
ip netns add "$NS_F" &&
	ip link add flc netns "$NS_F" type veth peer name fls netns "$NS_S" &&
	ip -n "$NS_F" addr add 10.201.0.1/24 dev flc && ip -n "$NS_S" addr add 10.201.0.2/24 dev fls &&
	ip -n "$NS_F" link set lo up && ip -n "$NS_F" link set flc up && ip -n "$NS_S" link set fls up &&
	ip -n "$NS_F" link set dev flc xdpdrv obj "$BUILD/bpf/sink.bpf.o" sec xdp ||
	{ echo "attack_goodput: cannot set up the flood's link" >&2; ip netns del "$NS_F" 2>/dev/null; exit 1; }
FLOOD_MAC=$(ip -n "$NS_F" -o link show flc | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
VSF_MAC=$(ip -n "$NS_S" -o link show fls | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')

mkdir -p "$NT_DIR/nginx/www"
chmod 755 "$NT_DIR" "$NT_DIR/nginx" "$NT_DIR/nginx/www"
echo ok >"$NT_DIR/nginx/www/index.html"
cat >"$NT_DIR/nginx/nginx.conf" <<NGX
worker_processes 1;
pid $NT_DIR/nginx/nginx.pid;
error_log $NT_DIR/nginx/error.log crit;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $NT_DIR/nginx; proxy_temp_path $NT_DIR/nginx;
  fastcgi_temp_path $NT_DIR/nginx; uwsgi_temp_path $NT_DIR/nginx; scgi_temp_path $NT_DIR/nginx;
  server { listen 80 backlog=4096; location / { root $NT_DIR/nginx/www; try_files /index.html =404; } }
}
NGX
ip netns exec "$NS_S" nginx -e "$NT_DIR/nginx/error.log" -c "$NT_DIR/nginx/nginx.conf" -p "$NT_DIR/nginx"
for _ in $(seq 1 50); do [ -s "$NT_DIR/nginx/nginx.pid" ] && break; sleep 0.1; done
NGINX=$(cat "$NT_DIR/nginx/nginx.pid")
stop_nginx() { kill "$NGINX" 2>/dev/null; for _ in $(seq 1 50); do kill -0 "$NGINX" 2>/dev/null || break; sleep 0.1; done; }
trap 'stop_nginx; ip netns del "$NS_F" 2>/dev/null; nt_teardown' EXIT

write_conf() { # FRONT
	cat >"$NT_DIR/sluice.conf" <<CONF
edge: { interfaces = ["vs", "fls"]; ports = ( { port = 80; front = "$1"; action = "reply"; cost = 1; } );
  state_entries = 262144; pin_path = "$PIN"; event_sample = 0; };
classes = ( { name = "unknown"; rate = 1e6; burst = 1e6; parent_rate = 1e6; parent_burst = 1e6; } );
daemon: { control_socket = "$SOCK"; };
CONF
}

# The client's SYN retransmissions so far (its namespace's TcpExt counters): a handshake
# whose SYN or SYN-ACK was lost costs that connection a second (the initial RTO).
syn_retrans() {
	ip netns exec "$NS_C" awk '/^TcpExt:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "TCPSynRetrans") c = i; h = 1 } else print $c }' /proc/net/netstat
}

# run_rate RATE: goodput (200/s) of the client while the flood runs at RATE.
run_rate() {
	local rate=$1 fl=() out r0
	if [ "$rate" != 0 ]; then
		[ "$rate" = max ] && fl=(--seconds "$((SECS + 1))") || fl=(--rate "$rate" --seconds "$((SECS + 1))")
		# shellcheck disable=SC2086 # FLOOD_FROM: namespace, interface, destination MAC, source MAC
		set -- $FLOOD_FROM
		ip netns exec "$1" "$FLOOD" --iface "$2" --dmac "$3" --smac "$4" \
			--dst 10.200.0.2 --dport 80 --net 198.18.0.0/15 "${fl[@]}" >"$NT_DIR/flood.json" &
		FL=$!
		sleep 0.5
	fi
	r0=$(syn_retrans)
	out=$(ip netns exec "$NS_C" "$H1" --src 203.0.113.10 --dst 10.200.0.2 --seconds "$SECS" --conns 16)
	out="${out%\}},\"syn_retrans\":$(($(syn_retrans) - r0))}"
	if [ "$rate" != 0 ]; then
		wait "$FL"
		echo "$out" "$(cat "$NT_DIR/flood.json")"
	else
		echo "$out" '{"rate": 0}'
	fi
}

for TOPO in ${PATHS:-shared apart}; do
case "$TOPO" in
shared)
	ip -n "$NS_S" route del 198.18.0.0/15 2>/dev/null
	FLOOD_FROM="$NS_C vc $SERVER_MAC $CLIENT_MAC" ;;
apart)
	ip -n "$NS_S" route replace 198.18.0.0/15 via 10.201.0.1 dev fls
	FLOOD_FROM="$NS_F flc $VSF_MAC $FLOOD_MAC" ;;
*) echo "attack_goodput: PATHS: shared or apart, not $TOPO" >&2; exit 2 ;;
esac
declare -A RES=()
for mode in kernel stateless syn; do
	if [ "$mode" != kernel ]; then
		write_conf "$mode"
		nt_start_sluiced >/dev/null || { echo "attack_goodput: sluiced did not start" >&2; cat "$NT_DIR/sluiced.log" >&2; exit 1; }
	fi
	for r in "${RATES[@]}"; do
		RES[$mode,$r]=$(run_rate "$r")
	done
	[ "$mode" != kernel ] && nt_stop_sluiced TERM
done

args=()
for mode in kernel stateless syn; do for r in "${RATES[@]}"; do args+=("$mode" "$r" "${RES[$mode,$r]}"); done; done
$PY - "$SECS" "$TOPO" "${args[@]}" <<'PY'
import json, sys
secs, topo = sys.argv[1], sys.argv[2]
it = iter(sys.argv[3:])
res = {}
for mode, rate, blob in zip(it, it, it):
    h1, fl = blob.split("} {", 1)
    h1, fl = json.loads(h1 + "}"), json.loads("{" + fl)
    ok = h1.get("status_2xx", 0)
    res[(mode, rate)] = (ok / h1["seconds"], fl.get("rate", 0), h1["errors"], h1["syn_retrans"])
rates = [r for (m, r) in res if m == "kernel"]
def label(r):
    return "none" if r == "0" else ("as fast as it can" if r == "max" else f"{int(r):,}")
print(f"attack_goodput: {secs} s per cell; a real client (16 connections in flight, a new one per request); "
      + ("the flood on the client's own link (shared)" if topo == "shared" else "the flood on a link of its own (apart)"))
print(f"{'flood (SYN/s)':>20} | {'kernel alone':>24} | {'sluice stateless':>24} | {'sluice SYN front':>24}")
for r in rates:
    cells = []
    for m in ("kernel", "stateless", "syn"):
        g, fr, _, _ = res[(m, r)]
        base = res[(m, "0")][0]
        cells.append(f"{g:6.0f}/s {100 * g / base if base else 0:5.1f}%" +
                     (f" @{fr / 1000:.0f}k" if r == "max" else ""))
    print(f"{label(r):>20} | {cells[0]:>24} | {cells[1]:>24} | {cells[2]:>24}")
print("cells: the client's 200s per second, the share of its own no-flood rate it kept, and in the")
print("last row the flood rate one core reached against that server (SYN/s, thousands)")
print("the client's SYN retransmissions per cell (its handshakes that lost a SYN or a SYN-ACK):")
for r in rates:
    print(f"{label(r):>20} | " + " | ".join(f"{res[(m, r)][3]:>24}" for m in ("kernel", "stateless", "syn")))
PY
done
