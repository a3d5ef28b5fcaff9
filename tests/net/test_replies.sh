#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The 429 from XDP, end to end: real curl over IPv4 and IPv6 against a real HTTP server
# behind sluiced on a `reply` port. A shed client gets `HTTP/1.1 429` with a Retry-After in its
# jittered band and curl exits cleanly, while the server's own TCP counters do not move; an
# admitted client gets the real server's page; a forged ACK gets nothing at all; verdicts
# apply within a second and stop when they expire.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"

nt_require
nt_setup || { echo "Bail out! cannot build the veth topology"; exit 1; }
[ -f "$BUILD/bpf/bare_pass.bpf.o" ] || { echo "Bail out! $BUILD/bpf/bare_pass.bpf.o missing"; exit 1; }
nt_client_xdp_pass || { echo "1..0 # SKIP cannot attach XDP to the client veth"; exit 0; }
nt_client_addr 198.51.100.7 198.51.100.8 203.0.113.10 2001:db8:1000::7 2001:db8:2000::10
nt_http_server || { echo "Bail out! the HTTP server did not start"; exit 1; }

cat >"$NT_DIR/asn.csv" <<'EOF'
198.51.100.0/24,64500,hosting
2001:db8:1000::/36,64500,hosting
203.0.113.0/24,64501,residential
2001:db8:2000::/36,64501,residential
EOF
cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 80; front = "syn"; action = "reply"; cost = 1; } );
  state_entries = 4096;
  asn_table = "$NT_DIR/asn.csv";
  pin_path = "$PIN";
  new_key_credit = 1.0;
  retry_after = [1, 5, 30, 120];
  event_sample = 1;
};
classes = (
  { name = "hosting"; v4_prefix = 24; v6_prefix = 48; v4_parent = 16; v6_parent = 32;
    rate = 0.001; burst = 2.0; parent_rate = 0.001; parent_burst = 1000.0; },
  { name = "residential"; rate = 0.001; burst = 50.0; parent_rate = 0.001; parent_burst = 1000.0; },
  { name = "unknown"; rate = 0.001; burst = 50.0; }
);
daemon: { control_socket = "$SOCK"; };
EOF
nt_start_sluiced || { echo "Bail out! sluiced did not start"; exit 1; }

status_line() { head -1 <<<"$1" | tr -d '\r'; }
retry_after() { grep -i '^Retry-After:' <<<"$1" | tr -d '\r' | awk '{print $2}'; }

# 1. The hosting /24's burst of 2 reaches the real server; then XDP answers.
for i in 1 2; do
	out=$(ccurl 198.51.100.7 http://10.200.0.2/)
	expect_eq "IPv4 hosting, request $i: the real server answers" "$(status_line "$out")" \
		"HTTP/1.0 200 OK"
done
in0=$(tcp_mib InSegs) rst0=$(tcp_mib OutRsts) po0=$(tcp_mib PassiveOpens)
out=$(ccurl 198.51.100.8 http://10.200.0.2/); rc=$?
expect_eq "IPv4 shed: curl exits cleanly" "$rc" 0
expect_eq "IPv4 shed: HTTP/1.1 429 from XDP" "$(status_line "$out")" "HTTP/1.1 429 Too Many Requests"
expect_eq "IPv4 shed: first Retry-After is 1 (1 s +-20%, at least 1)" "$(retry_after "$out")" 1
expect_match "IPv4 shed: Content-Length 0 and Connection close" "$out" "Connection: close"
expect_eq "IPv4 shed: the server's kernel received no segment" "$(($(tcp_mib InSegs) - in0))" 0
expect_eq "IPv4 shed: the server's kernel sent no reset" "$(($(tcp_mib OutRsts) - rst0))" 0
expect_eq "IPv4 shed: no connection was opened on the server" "$(($(tcp_mib PassiveOpens) - po0))" 0

# 2. Retry-After climbs with the streak: 5, 30, 120, 120 (each +-20%).
lo=(4 24 96 96) hi=(6 36 144 144)
for i in 0 1 2 3; do
	out=$(ccurl 198.51.100.7 http://10.200.0.2/)
	ra=$(retry_after "$out")
	expect_ge "escalation $((i + 2)): Retry-After $ra >= ${lo[$i]}" "${ra:-0}" "${lo[$i]}"
	expect_le "escalation $((i + 2)): Retry-After $ra <= ${hi[$i]}" "${ra:-999}" "${hi[$i]}"
done
expect_eq "the server's kernel still saw nothing of the shed requests" \
	"$(($(tcp_mib InSegs) - in0))" 0

# 3. IPv6: the /48 gets its 2, then the 429.
for i in 1 2; do
	out=$(ccurl 2001:db8:1000::7 "http://[fd00:5::2]/")
	expect_eq "IPv6 hosting, request $i: the real server answers" "$(status_line "$out")" \
		"HTTP/1.0 200 OK"
done
in0=$(tcp_mib InSegs)
out=$(ccurl 2001:db8:1000::7 "http://[fd00:5::2]/"); rc=$?
expect_eq "IPv6 shed: curl exits cleanly" "$rc" 0
expect_eq "IPv6 shed: HTTP/1.1 429 from XDP" "$(status_line "$out")" "HTTP/1.1 429 Too Many Requests"
expect_eq "IPv6 shed: Retry-After 1" "$(retry_after "$out")" 1
expect_eq "IPv6 shed: the server's kernel received no segment" "$(($(tcp_mib InSegs) - in0))" 0

# 4. An admitted residential client gets the real page.
out=$(ccurl 203.0.113.10 http://10.200.0.2/)
expect_match "residential: the real server's page" "$out" "hello from the real server"
out=$(ccurl 2001:db8:2000::10 "http://[fd00:5::2]/")
expect_match "residential IPv6: the real server's page" "$out" "hello from the real server"

# 5. A forged ACK: take a real cookie from a SYN-ACK, break its MAC, send a request with it.
r=$(ip netns exec "$NS_C" $PY - "$SERVER_MAC" <<'PYEOF'
import json, sys, time
from scapy.all import AsyncSniffer, Ether, IP, TCP, conf, sendp, srp1
conf.verb = 0
mac = sys.argv[1]
syn = Ether(dst=mac) / IP(src="198.51.100.99", dst="10.200.0.2") / TCP(sport=33333, dport=80, flags="S", seq=1000)
ans = srp1(syn, iface="vc", timeout=2)
if ans is None or TCP not in ans or str(ans[TCP].flags) != "SA":
    print(json.dumps({"synack": False})); sys.exit(0)
cookie = ans[TCP].seq
got = []
sn = AsyncSniffer(iface="vc", filter="tcp and src port 80 and dst port 33333", prn=lambda p: got.append(str(p[TCP].flags)))
sn.start(); time.sleep(0.3)
req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
bad = Ether(dst=mac) / IP(src="198.51.100.99", dst="10.200.0.2") / TCP(sport=33333, dport=80, flags="PA", seq=1001, ack=((cookie ^ 0x10) + 1) & 0xffffffff) / req
sendp(bad, iface="vc")
time.sleep(1.0); sn.stop()
print(json.dumps({"synack": True, "replies": got}))
PYEOF
)
expect_eq "forged ACK: a real SYN-ACK carried a cookie" "$(jget "$r" synack)" true
expect_eq "forged ACK with a broken cookie: no reply at all" "$(jget "$r" replies)" "[]"
s=$(sluicectl stats --json)
[ "$(jget "$s" by_reason.cookie_bad)" -ge 1 ] 2>/dev/null && tap_ok "forged ACK counted as cookie_bad" \
	|| tap_not_ok "forged ACK counted as cookie_bad"
expect_eq "stats: one replied_429 per 429 curl saw" "$(jget "$s" by_reason.replied_429)" 6

# 6. Verdicts: applied within a second, gone when they expire.
out=$(sluicectl verdict add 203.0.113.0/24 --action reply --ttl 3 --reason "e2e test" --json); rc=$?
expect_eq "verdict add exits 0" "$rc" 0
t0=$(date +%s.%N)
out=$(ccurl 203.0.113.10 http://10.200.0.2/)
expect_eq "verdict reply: the residential client now gets the 429" "$(status_line "$out")" \
	"HTTP/1.1 429 Too Many Requests"
vl=$(sluicectl verdict list --json)
expect_eq "verdict list shows it" "$(jget "$vl" 0.prefix)" 203.0.113.0/24
expect_eq "verdict list shows its reason" "$(jget "$vl" 0.reason)" "e2e test"
sleep 3.2
out=$(ccurl 203.0.113.10 http://10.200.0.2/)
expect_match "verdict expired: the real page again" "$out" "hello from the real server"
for _ in $(seq 1 30); do
	[ "$(sluicectl verdict list --json)" = "[]" ] && break
	sleep 0.1
done
expect_eq "the controller swept the expired verdict" "$(sluicectl verdict list --json)" "[]"
out=$(sluicectl verdict add 203.0.113.0/24 --action block --ttl 0 --reason x 2>&1); rc=$?
expect_eq "verdict add refuses a verdict that never expires" "$rc" 2
out=$(sluicectl verdict add 203.0.113.7/24 --action block --ttl 5 --reason x 2>&1); rc=$?
expect_match "verdict add refuses host bits" "$out" "did you mean 203.0.113.0/24"

# 7. Events: a shed shows up on the ring with its prefix, class, reason and action.
ev="$NT_DIR/events"
sluicectl events --json --count 2 --timeout 5 >"$ev" &
evpid=$!
sleep 0.5
ccurl 198.51.100.8 http://10.200.0.2/ >/dev/null
wait $evpid
line=$(grep '"reason":"replied_429"' "$ev" | head -1)
expect_eq "events: the 429's prefix" "$(jget "$line" prefix)" 198.51.100.0/24
expect_eq "events: its class" "$(jget "$line" class)" hosting
expect_eq "events: its action" "$(jget "$line" action)" reply
ra=$(jget "$line" retry_after)
expect_ge "events: its Retry-After ($ra) is the escalated one" "${ra:-0}" 96
line=$(grep '"reason":"shed_prefix"' "$ev" | head -1)
expect_eq "events: the shed SYN before it" "$(jget "$line" action)" reply

tap_done
