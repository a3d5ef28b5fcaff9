#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The stateless front end to end: real clients over IPv4 and IPv6 against a real server
# behind sluiced. Every SYN gets a cookie from XDP; the first request is decided by its route
# and tenant; admitted connections are handed to the listener from TC and arrive intact; shed
# ones get the 429. Also: a split request, a forged ACK, window scaling on a handed-off
# connection, a TLS ClientHello's SNI, and the fallback to the SYN front.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"

nt_require
nt_setup || { echo "Bail out! cannot build the veth topology"; exit 1; }
nt_client_xdp_pass || { echo "1..0 # SKIP cannot attach XDP to the client veth"; exit 0; }
nt_client_addr 198.51.100.7 203.0.113.10 203.0.113.11 2001:db8:1000::7

ip netns exec "$NS_S" $PY "$ROOT/tests/lib/echo_server.py" 80 >"$NT_DIR/echo.log" 2>&1 &
ECHO_PID=$!
for _ in $(seq 1 50); do ip netns exec "$NS_S" ss -ltn | grep -q ':80 ' && break; sleep 0.1; done

# A TLS listener for the SNI test.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=acme.example \
	-keyout "$NT_DIR/key.pem" -out "$NT_DIR/cert.pem" >/dev/null 2>&1
ip netns exec "$NS_S" openssl s_server -quiet -accept 443 -cert "$NT_DIR/cert.pem" \
	-key "$NT_DIR/key.pem" -www >/dev/null 2>&1 &
TLS_PID=$!
cleanup() { kill "$ECHO_PID" "$TLS_PID" 2>/dev/null; nt_teardown; }
trap cleanup EXIT

cat >"$NT_DIR/asn.csv" <<'EOF'
198.51.100.0/24,64500,hosting
2001:db8:1000::/36,64500,hosting
203.0.113.0/24,64501,residential
EOF
write_conf() {
	cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 80; front = "stateless"; action = "reply"; cost = 1; },
            { port = 443; front = "stateless"; protocol = "tls"; action = "drop"; cost = 1; } );
  state_entries = 4096;
  asn_table = "$NT_DIR/asn.csv";
  pin_path = "$PIN";
  new_key_credit = 1.0;
};
classes = (
  { name = "hosting"; v4_prefix = 24; v6_prefix = 48; v4_parent = 16; v6_parent = 32;
    rate = 0.001; burst = 2000.0; parent_rate = 0.001; parent_burst = 100000.0; },
  { name = "residential"; rate = 0.001; burst = 100.0; parent_burst = 1000.0; },
  { name = "unknown"; rate = 0.001; burst = 100.0; }
);
routes = (
  { name = "login"; method = "POST"; path = "/login"; cpu = 950.0; },
  { name = "validate"; method = "GET"; path = "/token/validate"; cpu = 1.0; }
);
tenants = (
  { name = "acme"; hosts = ["acme.example"]; rate = 0.001; burst = 3.0; },
  { name = "tlsco"; hosts = ["tls.example"]; rate = 0.001; burst = 100.0; }
);
daemon: { control_socket = "$SOCK"; };
EOF
}
write_conf
nt_start_sluiced || { echo "Bail out! sluiced did not start"; exit 1; }

st=$(sluicectl status --json)
expect_eq "status: port 80 runs the stateless front" "$(jget "$st" ports.0.front)" stateless

# 1. Requests reach the application intact, over IPv4 and IPv6.
head -c 2048 /dev/urandom >"$NT_DIR/b2k"
head -c 20480 /dev/urandom >"$NT_DIR/b20k"
for fam in 4 6; do
	if [ $fam = 4 ]; then src=198.51.100.7 url=http://10.200.0.2; else src=2001:db8:1000::7 url="http://[fd00:5::2]"; fi
	out=$(ip netns exec "$NS_C" curl -s -m 5 --interface "$src" "$url/hello")
	expect_eq "IPv$fam GET reaches the server" "$(jget "$out" path)" /hello
	for b in b2k b20k; do
		want=$(sha256sum "$NT_DIR/$b" | cut -d' ' -f1)
		out=$(ip netns exec "$NS_C" curl -s -m 5 --interface "$src" --data-binary "@$NT_DIR/$b" "$url/upload")
		expect_eq "IPv$fam POST $b arrives intact (sha256)" "$(jget "$out" sha256)" "$want"
	done
done
s=$(sluicectl stats --json)
[ "$(jget "$s" by_reason.handoff)" -ge 6 ] 2>/dev/null && tap_ok "the connections were handed off from TC" \
	|| tap_not_ok "the connections were handed off from TC (handoff=$(jget "$s" by_reason.handoff))"
expect_eq "no hand-off failed" "$(jget "$s" by_reason.handoff_fail)" 0

# 2. A shed route: POST /login costs 950 of the /24's 2000 units; GET costs 1.
in0=$(tcp_mib PassiveOpens)
codes=""
for i in 1 2 3; do
	codes+="$(ip netns exec "$NS_C" curl -s -m 5 -o /dev/null -w '%{http_code}' --interface 198.51.100.7 \
		-X POST -d 'username=a&password=b' http://10.200.0.2/login) "
done
expect_eq "POST /login at 950 units: two pass, the third is shed with a 429" "$codes" "200 200 429 "
expect_eq "the shed /login never reached the server's kernel" "$(($(tcp_mib PassiveOpens) - in0))" 2
out=$(ip netns exec "$NS_C" curl -s -m 5 --interface 198.51.100.7 http://10.200.0.2/token/validate)
expect_eq "a 1-unit route from the same /24 still passes" "$(jget "$out" path)" /token/validate

# 3. A shed tenant, by Host (any case, with a port): acme's edge budget is 3.
codes=""
for i in 1 2 3 4; do
	codes+="$(ip netns exec "$NS_C" curl -s -m 5 -o /dev/null -w '%{http_code}' --interface 203.0.113.10 \
		-H 'Host: ACME.example:80' http://10.200.0.2/) "
done
expect_eq "tenant acme by Host: three pass, the fourth gets the 429" "$codes" "200 200 200 429 "
out=$(ip netns exec "$NS_C" curl -s -m 5 --interface 203.0.113.10 -H 'Host: other.example' http://10.200.0.2/)
expect_eq "another Host from the same source still passes" "$(jget "$out" host)" other.example
s=$(sluicectl stats --json)
expect_match "stats: first requests by tenant show acme's 3 and 1" \
	"$(jget "$s" first_requests.by_tenant)" '"name": "acme", "admitted": 3, "shed": 1'
expect_match "stats: first requests by route show /login's shed" \
	"$(jget "$s" first_requests.by_route)" '"name": "POST /login", "admitted": 2, "shed": 1'

# 4. A request split over two segments is decided on the port's default cost, and its client
#    gets the whole answer. (The Host in the second half does not charge acme.)
r=$(ip netns exec "$NS_C" $PY - <<'PYEOF'
import socket, time, json
s = socket.create_connection(("10.200.0.2", 80), source_address=("203.0.113.11", 0), timeout=5)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.sendall(b"GET /split HTTP/1.1\r\nHo")
time.sleep(0.3)
s.sendall(b"st: acme.example\r\nConnection: close\r\n\r\n")
data = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    data += d
head, _, body = data.partition(b"\r\n\r\n")
print(json.dumps({"status": head.split(b" ")[1].decode(), "body": json.loads(body)}))
PYEOF
)
expect_eq "split request: the client gets a complete 200" "$(jget "$r" status)" 200
expect_eq "split request: the server got it whole" "$(jget "$r" body.host)" acme.example
s=$(sluicectl stats --json)
expect_match "split request: decided at the default cost, not charged to acme" \
	"$(jget "$s" first_requests.by_route)" '"name": "\(default cost\)"'
expect_match "split request: acme still at 3 admitted" \
	"$(jget "$s" first_requests.by_tenant)" '"name": "acme", "admitted": 3'

# 5. Window scaling is negotiated on a handed-off connection.
ip netns exec "$NS_C" $PY - >"$NT_DIR/ws.out" <<'PYEOF' &
import socket, time
s = socket.create_connection(("10.200.0.2", 80), source_address=("203.0.113.11", 0), timeout=5)
s.sendall(b"GET /keep HTTP/1.1\r\nHost: x\r\n\r\n")
s.recv(65536)
time.sleep(1.5)
PYEOF
wspid=$!
sleep 0.7
ws=$(ip netns exec "$NS_S" ss -tin state established '( sport = :80 )')
wait $wspid
expect_match "ss -ti on the server: the handed-off connection scales its window" "$ws" "wscale:[0-9]+,7"
out=$(ip netns exec "$NS_C" curl -s -m 5 --interface 203.0.113.11 http://10.200.0.2/tcpinfo)
expect_eq "TCP_INFO on the server: SACK and window scaling negotiated, no timestamps" \
	"$(jget "$out" tcp_options)" 6
expect_eq "TCP_INFO on the server: our window scale is the SYN-ACK's 7" "$(jget "$out" rcv_wscale)" 7

# 6. A forged ACK: no socket, no reply.
r=$(ip netns exec "$NS_C" $PY - "$SERVER_MAC" <<'PYEOF'
import json, sys, time
from scapy.all import AsyncSniffer, Ether, IP, TCP, conf, sendp, srp1
conf.verb = 0
mac = sys.argv[1]
syn = Ether(dst=mac) / IP(src="203.0.113.99", dst="10.200.0.2") / TCP(sport=34444, dport=80, flags="S", seq=5000)
ans = srp1(syn, iface="vc", timeout=2)
cookie = ans[TCP].seq if ans is not None and TCP in ans else 0
got = []
sn = AsyncSniffer(iface="vc", filter="tcp and src port 80 and dst port 34444", prn=lambda p: got.append(str(p[TCP].flags)))
sn.start(); time.sleep(0.3)
bad = Ether(dst=mac) / IP(src="203.0.113.99", dst="10.200.0.2") / TCP(sport=34444, dport=80, flags="PA", seq=5001, ack=((cookie ^ 0x10) + 1) & 0xffffffff) / b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
sendp(bad, iface="vc")
time.sleep(0.8); sn.stop()
print(json.dumps({"cookie": cookie != 0, "replies": got}))
PYEOF
)
expect_eq "forged ACK: the SYN got a cookie" "$(jget "$r" cookie)" true
expect_eq "forged ACK: no reply at all" "$(jget "$r" replies)" "[]"
expect_eq "forged ACK: no socket on the server (ss)" \
	"$(ip netns exec "$NS_S" ss -tan '( dst 203.0.113.99 )' | tail -n +2 | wc -l)" 0

# 7. TLS: the ClientHello's SNI names the tenant.
echo | ip netns exec "$NS_C" timeout 5 openssl s_client -connect 10.200.0.2:443 \
	-servername tls.example >/dev/null 2>&1
s=$(sluicectl stats --json)
expect_match "TLS ClientHello: its SNI reached tenant tlsco's bucket" \
	"$(jget "$s" first_requests.by_tenant)" '"name": "tlsco", "admitted": 1'

# 8. Without the kfunc, the stateless front falls back to the SYN front, and says so.
nt_stop_sluiced TERM
SLUICED_NO_HANDOFF=1 nt_start_sluiced || tap_not_ok "sluiced starts without the hand-off"
expect_match "fallback: the log says why" "$(cat "$NT_DIR/sluiced.log")" "stateless front is not available"
expect_eq "fallback: status shows the SYN front in force" \
	"$(jget "$(sluicectl status --json)" ports.0.front)" syn
out=$(ip netns exec "$NS_C" curl -s -m 5 --interface 203.0.113.11 http://10.200.0.2/after)
expect_eq "fallback: requests still reach the server" "$(jget "$out" path)" /after

tap_done
