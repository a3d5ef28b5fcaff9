#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# make demo: sluice on a veth pair between two namespaces this script creates, the embedded
# (single-node) default, and a short mix of traffic:
#   - a residential user on one IPv6 /64 and one on an IPv4 address, signing in at a human pace
#   - a flood of SYNs from 50 addresses of one hosting /24
#   - an IPv6 attacker rotating random /128s across one /48
# and then real curl on port 80, where sluice answers shed clients with an HTTP 429 from XDP.
# Passed SYNs are the ones the server's kernel answered; the per-class counters come from
# `sluicectl stats`. Everything is torn down at the end (SL_DEBUG=1 keeps it).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib/tap.sh"
. "$ROOT/tests/lib/netns.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "make demo needs root: it creates network namespaces and attaches XDP" >&2
	exit 1
fi
if ! $PY -c 'import scapy' 2>/dev/null; then
	echo "make demo needs python3-scapy (scripts/deps.sh installs it)" >&2
	exit 1
fi
nt_setup || { echo "demo: cannot create the veth topology" >&2; exit 1; }
# XDP_TX on a veth reaches the peer only if the peer runs XDP too; a real NIC needs nothing.
nt_client_xdp_pass || echo "demo: cannot attach XDP to the client veth; the 429 part will time out" >&2
nt_client_addr 198.51.100.7 203.0.113.10
nt_http_server || echo "demo: the HTTP server did not start" >&2

sed -e "s|interfaces = \[\"eth0\"\];|interfaces = [\"vs\"];|" \
    -e "s|asn_table = \"/etc/sluice/asn.csv\";|asn_table = \"$ROOT/examples/asn-sample.csv\";|" \
    -e "s|state_entries = 1048576;|state_entries = 65536;\n  pin_path = \"$PIN\";|" \
    -e "s|control_socket = \"/run/sluice/ctl.sock\";|control_socket = \"$SOCK\";|" \
    "$ROOT/examples/sluice.conf" >"$NT_DIR/sluice.conf"

echo "sluice demo: config examples/sluice.conf on veth 'vs' in netns $NS_S; client in $NS_C"
if ! nt_start_sluiced; then
	echo "demo: sluiced did not start; its log:" >&2
	cat "$NT_DIR/sluiced.log" >&2
	exit 1
fi
mode=$(jget "$(sluicectl status --json)" interfaces.0.attach_mode)
echo "sluiced attached to vs in $mode mode"
echo

# The SYN mix goes to port 443 (action drop): every answer there is the server's kernel.
p443() { probe --dport 443 "$@"; }

row() { # label, probe JSON
	local sent ans
	sent=$(jget "$2" sent)
	ans=$(jget "$2" answered)
	printf '  %-54s %6s %9s %6s\n' "$1" "$sent" "$ans" "$((sent - ans))"
}

echo "SYNs to port 443 (action drop):"
printf '  %-54s %6s %9s %6s\n' "traffic" "SYNs" "answered" "shed"
r=$(p443 --src 2001:db8:2c00:0:1::10 --count 8 --gap 0.25)
row "residential user on one IPv6 /64, 8 sign-ins over 2 s" "$r"
r=$(p443 --src 203.0.113.10 --count 6 --gap 0.25)
row "residential user on 203.0.113.10, 6 sign-ins" "$r"
srcs=()
for i in $(seq 1 50); do srcs+=(--src "198.51.100.$((i * 5))"); done
r=$(p443 "${srcs[@]}" --count 4)
row "hosting /24 flood: 50 addresses x 4 SYNs" "$r"
r=$(p443 --rotate 2001:db8:2d00::/48:128 --count 300 --seed 5)
row "IPv6 attacker: 300 random /128s across one /48" "$r"
r=$(p443 --src 2001:db8:2c00:0:1::10 --count 2)
row "the residential /64 user again, after all that" "$r"
echo

echo "curl to port 80 (action reply), with a real HTTP server behind sluice:"
# The flood ended seconds ago and hosting /24s refill at 2 units/s: spend them again first.
p443 --src 198.51.100.9 --count 20 >/dev/null
echo "  198.51.100.7, from the hosting /24 that flooded, 4 requests in a row:"
for i in 1 2 3 4; do
	in0=$(tcp_mib InSegs)
	out=$(ccurl 198.51.100.7 http://10.200.0.2/)
	printf '    %-32s %-22s server kernel saw %s segments\n' "$(head -1 <<<"$out" | tr -d '\r')" \
		"$(grep -i '^retry-after' <<<"$out" | tr -d '\r')" "$(($(tcp_mib InSegs) - in0))"
done
echo "    (429s come from XDP: Retry-After climbs 1, 5, 30, 120 s by streak, each +-20 %)"
out=$(ccurl 203.0.113.10 http://10.200.0.2/)
echo "  from 203.0.113.10 (the residential user): $(head -1 <<<"$out" | tr -d '\r'), $(tail -1 <<<"$out")"
echo

echo "per class, from the datapath's counters (sluicectl stats):"
sluicectl stats | sed 's/^/  /'
echo
echo "how sluice sees the attacker's /48 now (sluicectl prefix show 2001:db8:2d00:1::1):"
sluicectl prefix show 2001:db8:2d00:1::1 | sed 's/^/  /'
echo
nt_stop_sluiced TERM
echo "sluiced stopped and detached; removing the namespaces"
