# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A two-namespace veth topology for end-to-end tests, created and removed by the test itself:
#
#   client ns $NS_C: vc 10.200.0.1/24 fd00:5::1/64  <-->  vs 10.200.0.2/24 fd00:5::2/64 :ns $NS_S
#
# The server routes everything back via the client, so SYNs the client sends from any
# (spoofed) source get their SYN-ACK or RST back on vc, where synprobe.py counts them.
# sluiced runs in the root mount namespace, entering only the server's network namespace
# (`ip netns exec` would remount /sys and hide bpffs). SL_DEBUG=1 leaves everything up.

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
PY=/usr/bin/python3

nt_id=$$
NS_C=slc$nt_id
NS_S=sls$nt_id
NT_DIR=$(mktemp -d /tmp/sluice-net.XXXXXX)
PIN=/sys/fs/bpf/sluice-test-$nt_id
SOCK=$NT_DIR/ctl.sock
SLUICED_PID=

# nt_require: print a TAP skip plan and exit when the host cannot run these tests.
nt_require() {
	local why=
	[ "$(id -u)" -eq 0 ] || why="needs root (network namespaces, XDP)"
	[ -z "$why" ] && ! command -v ip >/dev/null && why="iproute2 missing"
	[ -z "$why" ] && ! $PY -c 'import scapy' 2>/dev/null && why="python3-scapy missing"
	[ -z "$why" ] && ! command -v nsenter >/dev/null && why="nsenter (util-linux) missing"
	if [ -z "$why" ] && ! ip netns add "slprobe$nt_id" 2>/dev/null; then
		why="cannot create network namespaces here"
	else
		ip netns del "slprobe$nt_id" 2>/dev/null
	fi
	if [ -n "$why" ]; then
		echo "1..0 # SKIP $why"
		exit 0
	fi
}

nt_teardown() {
	if [ "${SL_DEBUG:-0}" = 1 ]; then
		echo "# SL_DEBUG=1: left up: netns $NS_C $NS_S, pins $PIN, files $NT_DIR" >&2
		return
	fi
	[ -n "$SLUICED_PID" ] && kill -TERM "$SLUICED_PID" 2>/dev/null && wait "$SLUICED_PID" 2>/dev/null
	[ -n "${HTTP_PID:-}" ] && kill "$HTTP_PID" 2>/dev/null && wait "$HTTP_PID" 2>/dev/null
	pkill -f "sluiced -c $NT_DIR/" 2>/dev/null
	ip netns del "$NS_C" 2>/dev/null
	ip netns del "$NS_S" 2>/dev/null
	rm -rf "$PIN" 2>/dev/null
	rm -rf "$NT_DIR"
}

nt_setup() {
	trap nt_teardown EXIT
	ip netns add "$NS_C" && ip netns add "$NS_S" || return 1
	ip link add vc netns "$NS_C" type veth peer name vs netns "$NS_S" || return 1
	ip -n "$NS_C" addr add 10.200.0.1/24 dev vc
	ip -n "$NS_C" addr add fd00:5::1/64 dev vc nodad
	ip -n "$NS_S" addr add 10.200.0.2/24 dev vs
	ip -n "$NS_S" addr add fd00:5::2/64 dev vs nodad
	for ns in "$NS_C" "$NS_S"; do ip -n "$ns" link set lo up; done
	ip -n "$NS_C" link set vc up
	ip -n "$NS_S" link set vs up
	ip -n "$NS_S" route add default via 10.200.0.1
	ip -n "$NS_S" -6 route add default via fd00:5::1
	SERVER_MAC=$(ip -n "$NS_S" -o link show vs | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
	[ -n "$SERVER_MAC" ]
}

sluicectl() { "$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" "$@"; }

# nt_start_sluiced: start sluiced on $NT_DIR/sluice.conf and wait until it is attached.
nt_start_sluiced() {
	local from
	from=$(($(cat "$NT_DIR/sluiced.log" 2>/dev/null | wc -l) + 1))
	nsenter --net="/run/netns/$NS_S" "$BUILD/sluiced" -c "$NT_DIR/sluice.conf" -f \
		>>"$NT_DIR/sluiced.log" 2>&1 &
	SLUICED_PID=$!
	local i
	for i in $(seq 1 100); do
		if tail -n +"$from" "$NT_DIR/sluiced.log" 2>/dev/null | grep -q "sluiced .* running"; then
			return 0
		fi
		kill -0 "$SLUICED_PID" 2>/dev/null || break
		sleep 0.1
	done
	tap_diag "$(tail -20 "$NT_DIR/sluiced.log")"
	return 1
}

# nt_stop_sluiced SIGNAL: signal the daemon and wait for it to exit.
nt_stop_sluiced() {
	[ -n "$SLUICED_PID" ] || return 0
	kill -"$1" "$SLUICED_PID" 2>/dev/null
	wait "$SLUICED_PID" 2>/dev/null
	SLUICED_PID=
}

# probe ARGS...: SYNs from the client namespace (see tests/lib/synprobe.py); prints JSON.
probe() {
	ip netns exec "$NS_C" $PY "$ROOT/tests/lib/synprobe.py" --iface vc --dmac "$SERVER_MAC" \
		--dst 10.200.0.2 --dst6 fd00:5::2 --wait 0.6 "$@"
}

# xdp_attached: is any XDP program on the server veth?
xdp_attached() { ip -n "$NS_S" -d link show vs | grep -q "prog/xdp"; }

# nt_client_addr ADDR...: give the client these source addresses (/32, /128) to really connect from.
nt_client_addr() {
	local a
	for a in "$@"; do
		case "$a" in
		*:*) ip -n "$NS_C" addr add "$a/128" dev vc nodad ;;
		*) ip -n "$NS_C" addr add "$a/32" dev vc ;;
		esac
	done
}

# nt_client_xdp_pass: XDP_TX on a veth is only delivered if the peer runs XDP too (any program,
# an XDP_PASS one will do). A real NIC has no such need.
nt_client_xdp_pass() {
	ip -n "$NS_C" link set dev vc xdpdrv obj "$BUILD/bpf/bare_pass.bpf.o" sec xdp
}

# nt_http_server: a real HTTP server on port 80 (IPv4 and IPv6) in the server namespace.
HTTP_PID=
nt_http_server() {
	mkdir -p "$NT_DIR/www"
	echo "hello from the real server" >"$NT_DIR/www/index.html"
	ip netns exec "$NS_S" $PY -m http.server 80 --bind :: --directory "$NT_DIR/www" \
		>"$NT_DIR/http.log" 2>&1 &
	HTTP_PID=$!
	local i
	for i in $(seq 1 50); do
		ip netns exec "$NS_S" ss -ltn 2>/dev/null | grep -q ':80 ' && return 0
		sleep 0.1
	done
	return 1
}

# tcp_mib NAME: a TCP counter (InSegs, OutSegs, OutRsts, PassiveOpens...) in the server netns.
tcp_mib() {
	ip netns exec "$NS_S" awk -v want="$1" '
		/^Tcp:/ { if (!hdr) { for (i = 1; i <= NF; i++) col[$i] = i; hdr = 1 }
			  else print $col[want] }' /proc/net/snmp
}

# ccurl SRC URL: curl from the client namespace, from source SRC; prints headers and body.
ccurl() {
	ip netns exec "$NS_C" curl -s -i -m 5 --interface "$1" "$2"
}
