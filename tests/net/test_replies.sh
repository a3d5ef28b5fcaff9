#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The 429 from XDP, end to end, on both fronts: real curl over IPv4 and IPv6 against a real
# HTTP server behind sluiced, on a stateless `reply` port (the default front: the first
# request is charged and answered) and on a SYN-front `reply` port (a SYN whose bucket is
# already empty gets our cookie SYN-ACK, and its first request the 429). A shed client gets
# the 95-byte `HTTP/1.1 429` with a Retry-After in its jittered band, curl exits cleanly,
# and the server's own TCP counters do not move; Retry-After climbs the streak of the bucket
# that was empty, whoever emptied it; on the wire the 429 is one segment with FIN, a FIN
# without a request gets RST|ACK, a forged ACK gets nothing at all; verdicts apply within a
# second and stop when they expire; sheds show up on the event ring.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"

nt_require
nt_setup || { echo "Bail out! cannot build the veth topology"; exit 1; }
[ -f "$BUILD/bpf/bare_pass.bpf.o" ] || { echo "Bail out! $BUILD/bpf/bare_pass.bpf.o missing"; exit 1; }
nt_client_xdp_pass || { echo "1..0 # SKIP cannot attach XDP to the client veth"; exit 0; }
nt_client_addr 198.51.100.7 198.51.100.8 192.0.2.7 192.0.2.8 203.0.113.10 \
	2001:db8:1000::7 2001:db8:1001::7 2001:db8:2000::10
# The echo server (it answers POST too) on both ports.
PIDS=()
for p in 80 8080; do
	ip netns exec "$NS_S" $PY "$ROOT/tests/lib/echo_server.py" $p >"$NT_DIR/echo$p.log" 2>&1 &
	PIDS+=($!)
done
cleanup() { kill "${PIDS[@]}" 2>/dev/null; nt_teardown; }
trap cleanup EXIT
for _ in $(seq 1 50); do
	[ "$(ip netns exec "$NS_S" ss -Hltn '( sport = :80 or sport = :8080 )' | wc -l)" -ge 2 ] && break
	sleep 0.1
done

cat >"$NT_DIR/asn.csv" <<'EOF'
198.51.100.0/24,64500,hosting
192.0.2.0/24,64500,hosting
2001:db8:1000::/36,64500,hosting
203.0.113.0/24,64501,residential
2001:db8:2000::/36,64501,residential
EOF
# Cost units, as in examples/sluice.conf: a login is 950. On the stateless port 80 a request
# costs its route (POST /login 950, anything else the port's 1); the SYN front reads no
# request, so port 8080 would charge a login's 950 per connection. Every burst holds that much
# (the config check refuses less), and refills are negligible (0.001 units/s):
#   hosting /24 or /48: 1900 = two logins; then a 1-unit request from the same prefix is shed.
#                       (198.51.100.0/24 for port 80, 192.0.2.0/24 for port 8080: the fronts
#                       share buckets, so each gets its own prefix.)
#   residential:        5000, room for all it does here: only acme and verdicts shed it.
#   acme (by Host):     950 = one login; the next is shed by the tenant, whoever sends it.
cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 80; action = "reply"; cost = 1; },
            { port = 8080; front = "syn"; action = "reply"; cost = 950; } );
  state_entries = 4096;
  asn_table = "$NT_DIR/asn.csv";
  pin_path = "$PIN";
  new_key_credit = 1.0;
  retry_after = [1, 5, 30, 120];
  event_sample = 1;
};
classes = (
  { name = "hosting"; v4_prefix = 24; v6_prefix = 48; v4_parent = 16; v6_parent = 32;
    rate = 0.001; burst = 1900.0; parent_rate = 0.001; parent_burst = 100000.0; },
  { name = "residential"; rate = 0.001; burst = 5000.0; parent_rate = 0.001; parent_burst = 10000.0; },
  { name = "unknown"; rate = 0.001; burst = 5000.0; }
);
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 950.0; } );
tenants = ( { name = "acme"; hosts = ["acme.example"]; rate = 0.001; burst = 950.0; } );
daemon: { control_socket = "$SOCK"; };
EOF
nt_start_sluiced || { echo "Bail out! sluiced did not start"; exit 1; }
st=$(sluicectl status --json)
expect_eq "port 80 runs the stateless front (the default), port 8080 the SYN front" \
	"$(jget "$st" ports.0.front) $(jget "$st" ports.1.front)" "stateless syn"

# req SRC URL [curl args]: one request; leaves the raw bytes curl got (headers and body) in
# $NT_DIR/resp and prints "code header-bytes body-bytes rc".
req() {
	local src=$1 url=$2 out rc
	shift 2
	out=$(ip netns exec "$NS_C" curl -s -i -m 5 -o "$NT_DIR/resp" \
		-w '%{http_code} %{size_header} %{size_download}' --interface "$src" "$@" "$url")
	rc=$?
	echo "$out $rc"
}
login() { req "$1" "$2/login" -X POST -d 'username=a&password=b' "${@:3}"; }
N429=0
# is429 NAME RESULT: the response is the edge's 429 exactly as sluice writes it, 95 bytes:
# status line, Retry-After in an 8-character field (digits, then spaces), Content-Length 0,
# Connection: close, the blank line, no body; and curl exited 0. Sets RA to its value.
is429() {
	local chk
	RA=
	chk=$(/usr/bin/python3 - "$NT_DIR/resp" <<'PYEOF'
import re, sys
b = open(sys.argv[1], "rb").read()
head = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: "
tail = b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
m = re.fullmatch(rb"([0-9]+) *", b[45:53])
if len(b) == 95 and b.startswith(head) and b[53:] == tail and m:
    print("ok", int(m.group(1)))
else:
    print("bad", repr(b))
PYEOF
)
	case "$chk" in
	ok*) RA=${chk#ok }; N429=$((N429 + 1)) ;;
	esac
	expect_eq "$1: curl got the 429, 95 bytes of headers, no body, and exited 0" \
		"$(cut -d' ' -f1-4 <<<"$2")" "429 95 0 0"
	expect_eq "$1: byte for byte the edge's 429 (Retry-After $RA)" "${chk%% *}" ok
	[ "${chk%% *}" = ok ] || tap_diag "$chk"
}
# band NAME VALUE BASE: VALUE is BASE +-20 % (the jitter), at least 1.
band() {
	local lo=$(($3 * 8 / 10)) hi=$(($3 * 12 / 10))
	[ "$lo" -lt 1 ] && lo=1
	if [ "${2:-0}" -ge "$lo" ] 2>/dev/null && [ "$2" -le "$hi" ]; then tap_ok "$1: Retry-After $2 in [$lo, $hi]"
	else tap_not_ok "$1: Retry-After ${2:-none} in [$lo, $hi]"; fi
}
counters() { echo "$(tcp_mib InSegs) $(tcp_mib OutRsts) $(tcp_mib PassiveOpens)"; }

# avail ADDR: the units ADDR's own bucket could admit now.
avail() { jget "$(sluicectl prefix show "$1" --json)" bucket.available; }
# spend NAME SRC URL URL80: two logins from SRC to URL, both answered by the real server, and both
# charged a login's 950 (on the stateless port by their route when the request is read; on
# the SYN front by the port's cost, at the ACK that completes the kernel's handshake): the
# prefix's 1900 are then spent. (Against the datapath of e43d54c a SYN-front `reply` port
# charges nothing: the handshake's ACK fails the cookie check, and the socket lookup after it
# finds the kernel's request socket and passes it as not_syn before sl_syn_verify sees it.) If they were not, the prefix is spent on port 80 after the
# failing check, so that the 429s below still test what they are for.
spend() {
	local name=$1 src=$2 url=$3 url80=$4 i r av
	for i in 1 2; do
		r=$(login "$src" "$url")
		expect_eq "$name, login $i: the real server answers" "${r%% *}" 200
	done
	av=$(avail "$src")
	/usr/bin/python3 -c "import sys; sys.exit(0 if $av < 0.5 else 1)" &&
		tap_ok "$name: each login was charged 950, the prefix's 1900 are spent ($av left)" ||
		tap_not_ok "$name: each login was charged 950, the prefix's 1900 are spent ($av left)"
	for i in 1 2; do
		/usr/bin/python3 -c "import sys; sys.exit(0 if $(avail "$src") >= 950 else 1)" || break
		tap_diag "spending what is left on port 80"
		login "$src" "$url80" >/dev/null
	done
}

# front NAME PORT SRC SRC2 SRC6: the whole 429 story on one port. SRC and SRC2 share a
# hosting /24, SRC6 is in a hosting /48; each front has its own (they share buckets).
front() {
	local name=$1 port=$2 src=$3 src2=$4 src6=$5 c0 i ras r
	local url=http://10.200.0.2:$port url6="http://[fd00:5::2]:$port"

	# The /24's 1900 units hold two logins; they reach the real server.
	spend "$name IPv4 hosting" "$src" "$url" http://10.200.0.2
	c0=$(counters)
	r=$(req "$src2" "$url/")
	is429 "$name IPv4 shed (its /24 is spent)" "$r"
	expect_eq "$name IPv4 shed: the first Retry-After is 1 (1 s +-20 %, at least 1)" "$RA" 1
	expect_eq "$name IPv4 shed: the server's kernel received, reset and opened nothing" \
		"$(counters)" "$c0"

	# Retry-After climbs the /24's streak: 5, 30, 120, 120 (each +-20 %); then at the top
	# level the jitter: four more, in the band and not all alike (all four equal by chance:
	# about 1 in 10^5).
	for i in 5 30 120 120; do
		r=$(req "$src" "$url/")
		is429 "$name escalation" "$r"
		band "$name escalation to $i" "$RA" $i
	done
	ras=""
	for i in 1 2 3 4; do
		r=$(req "$src2" "$url/")
		is429 "$name jitter $i" "$r"
		band "$name jitter $i" "$RA" 120
		ras+="$RA "
	done
	expect_ge "$name jitter: the top level's Retry-After varies ($ras)" \
		"$(tr ' ' '\n' <<<"$ras" | sort -u | grep -c .)" 2
	expect_eq "$name: the server's kernel still saw nothing of the shed requests" \
		"$(counters)" "$c0"

	# IPv6: the /48 gets its two logins, then the 429.
	spend "$name IPv6 hosting" "$src6" "$url6" "http://[fd00:5::2]"
	c0=$(counters)
	r=$(req "$src6" "$url6/")
	is429 "$name IPv6 shed" "$r"
	expect_eq "$name IPv6 shed: Retry-After 1" "$RA" 1
	expect_eq "$name IPv6 shed: the server's kernel received nothing" "$(counters)" "$c0"
}
front "stateless:80" 80 198.51.100.7 198.51.100.8 2001:db8:1000::7
front "syn:8080" 8080 192.0.2.7 192.0.2.8 2001:db8:1001::7
s=$(sluicectl stats --json)
expect_eq "stats: one replied_429 per 429 curl saw ($N429)" "$(jget "$s" by_reason.replied_429)" "$N429"

# On the wire, from a spent /24 (198.51.100.99, 192.0.2.99, sources the client's kernel does
# not own), on both ports: see tests/lib/replyprobe.py. Relative numbers: seq from our
# cookie + 1, ack from the client's ISN + 1.
for p in 80 8080; do
	case $p in 80) src=198.51.100.99 ;; *) src=192.0.2.99 ;; esac
	bad0=$(jget "$(sluicectl stats --json)" by_reason.cookie_bad)
	c0=$(counters)
	r=$(ip netns exec "$NS_C" $PY "$ROOT/tests/lib/replyprobe.py" --iface vc --dmac "$SERVER_MAC" \
		--src "$src" --dst 10.200.0.2 --dport $p)
	w=$(/usr/bin/python3 - "$r" <<'PYEOF'
import json, sys
r = json.loads(sys.argv[1])
def seg(l):
    return ";".join(f'{s["flags"]} seq {s["seq"]} ack {s["ack"]} len {s["len"]}' for s in l or [])
s = r["shed"]
print(json.dumps({
    "synacks": sum(r[k]["synack"] for k in ("shed", "fin", "forged")),
    "after_ack": seg(s.get("after_ack")),
    "request": seg(s.get("after_request")),
    "text": (s.get("after_request") or [{}])[0].get("payload", "")[:30],
    "req_len": s.get("request_len"),
    "fin": seg(s.get("after_fin")),
    "fin_only": seg(r["fin"].get("after_fin")),
    "forged": seg(r["forged"].get("after_request"))}))
PYEOF
)
	expect_eq "wire $p: three SYNs, three cookie SYN-ACKs" "$(jget "$w" synacks)" 3
	expect_eq "wire $p: the bare handshake ACK gets no answer" "$(jget "$w" after_ack)" ""
	n=$(jget "$w" req_len)
	expect_eq "wire $p: the 429 is one segment, FIN|PSH|ACK, 95 bytes, acking the request" \
		"$(jget "$w" request)" "FPA seq 0 ack $n len 95"
	expect_eq "wire $p: ... and says HTTP/1.1 429" "$(jget "$w" text)" "HTTP/1.1 429 Too Many Requests"
	expect_eq "wire $p: the client's FIN is acknowledged past the 429 and our FIN" \
		"$(jget "$w" fin)" "A seq 96 ack $((n + 1)) len 0"
	expect_eq "wire $p: a FIN straight after the handshake gets RST|ACK (seq = its ack)" \
		"$(jget "$w" fin_only)" "RA seq 0 ack 1 len 0"
	expect_eq "wire $p: a first request under a forged cookie gets nothing at all" \
		"$(jget "$w" forged)" ""
	expect_eq "wire $p: ... and is counted as cookie_bad" \
		"$(($(jget "$(sluicectl stats --json)" by_reason.cookie_bad) - bad0))" 1
	expect_eq "wire $p: the server's kernel saw none of it" "$(counters)" "$c0"
done

# Retry-After follows whichever bucket was empty: acme's 950 hold one login; the second is
# shed by the tenant (its streak 1: Retry-After 1), and a third from an unrelated source
# climbs acme's streak (5), not its own. Neither source paid for its shed login.
r=$(login 203.0.113.10 http://10.200.0.2 -H 'Host: acme.example')
expect_eq "acme: its one login passes" "${r%% *}" 200
r=$(login 203.0.113.10 http://10.200.0.2 -H 'Host: acme.example')
is429 "acme: the second login, shed by the tenant" "$r"
expect_eq "acme: Retry-After 1, the tenant's first shed" "$RA" 1
r=$(login 2001:db8:2000::10 "http://[fd00:5::2]" -H 'Host: acme.example')
is429 "acme: a login from another source" "$r"
band "acme: Retry-After climbs the tenant's streak, not the new source's" "$RA" 5
av=$(jget "$(sluicectl prefix show 2001:db8:2000::10 --json)" bucket.available)
/usr/bin/python3 -c "import sys; sys.exit(0 if abs($av - 5000) < 0.5 else 1)" &&
	tap_ok "acme: the source shed by the tenant was refunded (its /64 has $av of 5000)" ||
	tap_not_ok "acme: the source shed by the tenant was refunded (its /64 has $av of 5000)"
expect_eq "stats: two tenant sheds" "$(jget "$(sluicectl stats --json)" by_reason.shed_tenant)" 2

# An admitted residential client gets the real server's answer.
r=$(req 203.0.113.10 http://10.200.0.2/)
expect_eq "residential: the real server's answer" "${r%% *}" 200
r=$(req 2001:db8:2000::10 "http://[fd00:5::2]/")
expect_eq "residential IPv6: the real server's answer" "${r%% *}" 200

# Verdicts: applied within a second, gone when they expire (3 s).
out=$(sluicectl verdict add 203.0.113.0/24 --action reply --ttl 3 --reason "e2e test" --json); rc=$?
t0=$(date +%s.%N)
expect_eq "verdict add exits 0" "$rc" 0
r=$(req 203.0.113.10 http://10.200.0.2/)
is429 "verdict reply: the residential client" "$r"
vl=$(sluicectl verdict list --json)
expect_eq "verdict list shows it" "$(jget "$vl" 0.prefix)" 203.0.113.0/24
expect_eq "verdict list shows its reason" "$(jget "$vl" 0.reason)" "e2e test"
# Ask until the real answer comes back (at most 5 s), and see when it did.
for _ in $(seq 1 25); do
	r=$(req 203.0.113.10 http://10.200.0.2/)
	[ "${r%% *}" = 200 ] && break
	sleep 0.2
done
t1=$(date +%s.%N)
expect_eq "verdict expired: the real answer again" "${r%% *}" 200
el=$(/usr/bin/python3 -c "print(round($t1 - $t0, 1))")
/usr/bin/python3 -c "import sys; sys.exit(0 if 2.5 <= $el <= 4.5 else 1)" &&
	tap_ok "  ... about 3 s after it was added (${el} s)" ||
	tap_not_ok "  ... about 3 s after it was added (${el} s)"
for _ in $(seq 1 30); do
	[ "$(sluicectl verdict list --json)" = "[]" ] && break
	sleep 0.1
done
expect_eq "the controller swept the expired verdict" "$(sluicectl verdict list --json)" "[]"
out=$(sluicectl verdict add 203.0.113.0/24 --action block --ttl 0 --reason x 2>&1); rc=$?
expect_eq "verdict add refuses a verdict that never expires" "$rc" 2
out=$(sluicectl verdict add 203.0.113.7/24 --action block --ttl 5 --reason x 2>&1); rc=$?
expect_match "verdict add refuses host bits" "$out" "did you mean 203.0.113.0/24"

# Events: a stateless shed shows up on the ring twice, as the judgement (its reason) and as
# the 429 (its Retry-After, escalated: the /24's streak is at the top level).
ev="$NT_DIR/events"
sluicectl events --json --count 2 --timeout 5 >"$ev" &
evpid=$!
# It reads only events from after its start (the ring keeps the rest): give it that start.
sleep 0.3
req 198.51.100.8 http://10.200.0.2/ >/dev/null
wait $evpid
line=$(grep '"reason":"replied_429"' "$ev" | head -1)
expect_eq "events: the 429's prefix" "$(jget "$line" prefix)" 198.51.100.0/24
expect_eq "events: its class" "$(jget "$line" class)" hosting
expect_eq "events: its action" "$(jget "$line" action)" reply
ra=$(jget "$line" retry_after)
expect_ge "events: its Retry-After ($ra) is the escalated one" "${ra:-0}" 96
line=$(grep '"reason":"shed_prefix"' "$ev" | head -1)
expect_eq "events: the judgement before it: shed_prefix, to be answered" "$(jget "$line" action)" reply

tap_done
