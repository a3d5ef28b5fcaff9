#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# 4-tuple reuse (issue 13): a client that binds one fixed source port connects ten times in a
# row, admitted and shed, on both fronts, and every connection is answered at once. Decided
# connections are keyed by tuple and ISS, so each new handshake on a reused tuple is a new
# connection, judged and charged again; none inherits the one before it. Per port (the
# stateless front and the SYN front, a reply port and a drop port of each) and per close
# (the client resets, or the server closes first and holds TIME_WAIT while the client comes
# back on the same tuple at once): ten admitted, each charged (first_admitted / passed, and
# the bucket they spent); ten shed at once (429 on a reply port; on a drop port no answer,
# as designed); after the refill the tuple is admitted again, and its next connection is
# charged again (shed). A stateless drop port's dropped connection, which had its cookie
# handshake, must not keep a client that gave up with an orderly close (as curl does) off its
# tuple once the bucket has refilled. Also real curl with --local-port and --interface, the
# kernel alone on an unprotected port as the measure of "at once", and IPv6.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"

nt_require
nt_setup || { echo "Bail out! cannot build the veth topology"; exit 1; }
nt_client_xdp_pass || { echo "1..0 # SKIP cannot attach XDP to the client veth"; exit 0; }
# Real clients from addresses the client namespace owns: one per scenario, so each has its
# own bucket (a source's bucket spans ports).
R1=203.0.113.41 R2=203.0.113.42 R3=203.0.113.43 R4=203.0.113.44
D1=198.51.100.41 D2=198.51.100.42 D3=198.51.100.43 D4=198.51.100.44
W6=2001:db8:2000:1::41
nt_client_addr $R1 $R2 $R3 $R4 $D1 $D2 $D3 $D4 $W6
# The real server: python's http.server, HTTP/1.0 with the body delimited by the close, so
# the server always closes first and its side of every connection it answered ends in
# TIME_WAIT unless the client resets (with a Content-Length, curl races the server's FIN and
# its own side may end in TIME_WAIT, which a fixed --local-port cannot bind past).
cat >"$NT_DIR/server.py" <<'EOF'
import socket, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"hello from the real server\n")
    def log_message(self, *a):
        pass
class S(ThreadingHTTPServer):
    address_family = socket.AF_INET6
    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()
S(("::", int(sys.argv[1])), H).serve_forever()
EOF
PIDS=()
for port in 80 81 8080 8081 8090; do
	ip netns exec "$NS_S" $PY "$NT_DIR/server.py" $port >"$NT_DIR/http$port.log" 2>&1 &
	PIDS+=($!)
done
cleanup() { kill "${PIDS[@]}" 2>/dev/null; wait "${PIDS[@]}" 2>/dev/null; nt_teardown; }
trap cleanup EXIT
for port in 80 81 8080 8081 8090; do
	for _ in $(seq 1 50); do ip netns exec "$NS_S" ss -ltn | grep -q ":$port " && break; sleep 0.1; done
done

# Buckets of exactly ten connections: "reply" refills one every two seconds (ten connections
# in a row on a loaded machine may take most of one), "drop" one every four
# (its shed connections wait out a timeout each, and the bucket must stay empty meanwhile),
# "roomy" never runs out.
cat >"$NT_DIR/asn.csv" <<'EOF'
203.0.113.0/24,64501,reply
198.51.100.0/24,64502,drop
2001:db8:2000::/36,64503,roomy
EOF
cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 80; front = "stateless"; action = "reply"; cost = 1; },
            { port = 81; front = "stateless"; action = "drop"; cost = 1; },
            { port = 8080; front = "syn"; action = "reply"; cost = 1; },
            { port = 8081; front = "syn"; action = "drop"; cost = 1; } );
  state_entries = 65536;
  asn_table = "$NT_DIR/asn.csv";
  pin_path = "$PIN";
  new_key_credit = 1.0;
};
classes = (
  { name = "reply"; v4_prefix = 32; v4_parent = 24; rate = 0.5; burst = 10.0;
    parent_rate = 1000.0; parent_burst = 10000.0; },
  { name = "drop"; v4_prefix = 32; v4_parent = 24; rate = 0.25; burst = 10.0;
    parent_rate = 1000.0; parent_burst = 10000.0; },
  { name = "roomy"; v6_prefix = 64; v6_parent = 48; rate = 100.0; burst = 1000.0;
    parent_rate = 1000.0; parent_burst = 10000.0; },
  { name = "unknown"; rate = 100.0; burst = 1000.0; parent_rate = 1000.0; parent_burst = 10000.0; }
);
daemon: { control_socket = "$SOCK"; };
EOF
nt_start_sluiced || { echo "Bail out! sluiced did not start"; exit 1; }

# The client: N connections in a row from SRC:SPORT to PORT, each with its own socket
# (SO_REUSEADDR, bound to the same port), an HTTP/1.0 GET, the answer read to its end or for
# TIMEOUT seconds, then closed: "rst" aborts (no TIME_WAIT on either side), "fin" closes
# after the server did (the server holds TIME_WAIT). One JSON list: status (the HTTP code,
# "timeout" or "error:ERRNO") and seconds taken, per connection.
cat >"$NT_DIR/reuse.py" <<'EOF'
import json, socket, struct, sys, time
src, dst, port, sport, n, close, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], float(sys.argv[7])
fam = socket.AF_INET6 if ":" in dst else socket.AF_INET
out = []
for i in range(n):
    t0 = time.monotonic()
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((src, sport))
        s.settimeout(timeout)
        s.connect((dst, port))
        s.sendall(b"GET / HTTP/1.0\r\nHost: reuse.example\r\n\r\n")
        data = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
        st = data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/") else "none"
    except socket.timeout:
        st = "timeout"
    except OSError as e:
        st = "error:%s" % e.errno
    if close == "rst":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    out.append({"status": st, "t": round(time.monotonic() - t0, 4)})
print(json.dumps(out))
EOF

# conns SRC PORT SPORT N CLOSE TIMEOUT: run the client; prints "statuses|slowest|total".
conns() {
	local dst=10.200.0.2
	case "$1" in *:*) dst=fd00:5::2 ;; esac
	ip netns exec "$NS_C" $PY "$NT_DIR/reuse.py" "$1" "$dst" "$2" "$3" "$4" "$5" "$6" |
		/usr/bin/python3 -c 'import json, sys
r = json.load(sys.stdin)
print("%s|%.3f|%.3f" % (" ".join(c["status"] for c in r), max(c["t"] for c in r),
                        sum(c["t"] for c in r)))'
}
rep() { local s="" i; for ((i = 0; i < $2; i++)); do s+="${s:+ }$1"; done; echo "$s"; }
stats() { sluicectl stats --json; }
# reason_delta BEFORE AFTER NAME
reason_delta() { echo $(($(jget "$2" "by_reason.$3") - $(jget "$1" "by_reason.$3"))); }
avail() { jget "$(sluicectl prefix show "$1" --json)" bucket.available; }
# wait_refill SRC UNITS SECONDS: until SRC's bucket holds UNITS again (or SECONDS pass).
wait_refill() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		/usr/bin/python3 -c 'import sys; sys.exit(float(sys.argv[1]) < float(sys.argv[2]))' \
			"$(avail "$1")" "$2" && return 0
		sleep 0.05
	done
	return 1
}
lt() { /usr/bin/python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))' "$1" "$2"; }

# scenario NAME SRC PORT SPORT CLOSE ACTION: ten admitted, ten shed, then admitted again.
scenario() {
	local name=$1 src=$2 port=$3 sport=$4 close=$5 action=$6 s0 s1 r st slow charged
	local shed_to=1.0
	[ "$action" = drop ] && shed_to=0.2
	# Ten admitted on one tuple, each answered at once and each charged.
	s0=$(stats)
	r=$(conns "$src" "$port" "$sport" 10 "$close" 1.0)
	s1=$(stats)
	IFS='|' read -r st slow _ <<<"$r"
	expect_eq "$name: ten connections in a row on one tuple, ten 200s" "$st" "$(rep 200 10)"
	lt "$slow" 1.0 && tap_ok "$name: each answered at once (slowest ${slow}s)" ||
		tap_not_ok "$name: each answered at once (slowest ${slow}s)"
	charged=$(($(reason_delta "$s0" "$s1" first_admitted) + $(reason_delta "$s0" "$s1" passed)))
	expect_eq "$name: each of the ten charged (first_admitted + passed)" "$charged" 10
	lt "$(avail "$src")" 1 && tap_ok "$name: they spent the bucket of ten ($(avail "$src") left)" ||
		tap_not_ok "$name: they spent the bucket of ten ($(avail "$src") left)"
	# Ten more at once: the bucket is empty.
	s0=$(stats)
	r=$(conns "$src" "$port" "$sport" 10 "$close" "$shed_to")
	s1=$(stats)
	IFS='|' read -r st slow _ <<<"$r"
	if [ "$action" = reply ]; then
		expect_eq "$name: then ten shed, each a 429" "$st" "$(rep 429 10)"
		lt "$slow" 1.0 && tap_ok "$name: each 429 at once (slowest ${slow}s)" ||
			tap_not_ok "$name: each 429 at once (slowest ${slow}s)"
		# A connection shed over the kernel's handshake has its request socket reset
		# (reqsk_reset), so none is left re-sending SYN-ACKs or holding the tuple.
		expect_eq "$name: no request socket of the kernel's left on the tuple (ss syn-recv)" \
			"$(ip netns exec "$NS_S" ss -Htan state syn-recv "( sport = :$port )" | wc -l)" 0
		expect_eq "$name: ten 429s counted, nothing charged" \
			"$(reason_delta "$s0" "$s1" replied_429) $(($(reason_delta "$s0" "$s1" first_admitted) + $(reason_delta "$s0" "$s1" passed)))" \
			"10 0"
	else
		expect_eq "$name: then ten shed, none answered (a drop)" "$st" "$(rep timeout 10)"
		expect_eq "$name: nothing charged" \
			"$(($(reason_delta "$s0" "$s1" first_admitted) + $(reason_delta "$s0" "$s1" passed)))" 0
	fi
	# The bucket refills one connection: the tuple is admitted again at once, and its next
	# connection, charged again, is shed.
	wait_refill "$src" 1 6 || tap_diag "$name: the bucket did not refill ($(avail "$src"))"
	r=$(conns "$src" "$port" "$sport" 1 "$close" 1.0)
	IFS='|' read -r st slow _ <<<"$r"
	expect_eq "$name: after the refill the tuple is admitted again" "$st" 200
	lt "$slow" 1.0 && tap_ok "$name: ... at once (${slow}s): the drops before it stalled nothing" ||
		tap_not_ok "$name: ... at once (${slow}s): the drops before it stalled nothing"
	r=$(conns "$src" "$port" "$sport" 1 "$close" "$shed_to")
	IFS='|' read -r st slow _ <<<"$r"
	if [ "$action" = reply ]; then
		expect_eq "$name: and its next connection is charged again: shed (429)" "$st" 429
	else
		expect_eq "$name: and its next connection is charged again: shed (dropped)" "$st" timeout
	fi
}

# tw_count SRC SPORT PORT: the server's TIME_WAIT sockets on that tuple.
tw_count() {
	local a=$1
	case "$a" in *:*) a="[$a]" ;; *) a="[::ffff:$a]" ;; esac
	ip netns exec "$NS_S" ss -Htan state time-wait "( sport = :$3 and dst $a:$2 )" | wc -l
}

# --- The kernel alone: an unprotected port, the same client, server TIME_WAIT every time.
r=$(conns "$W6" 8090 42000 10 fin 1.0)
IFS='|' read -r st slow total <<<"$r"
expect_eq "kernel alone (port 8090): ten reuses of a TIME_WAIT tuple, ten 200s" "$st" "$(rep 200 10)"
tap_diag "kernel alone: slowest ${slow}s, ten in ${total}s"

# --- Stateless front, reply port.
scenario "stateless front, reply port, client resets" "$R1" 80 41001 rst reply
# On the stateless front a SYN over the server's TIME_WAIT goes to the kernel, which ends the
# TIME_WAIT as it opens the new connection (the last one, shed, leaves none): counted instead.
s_tw=$(stats)
scenario "stateless front, reply port, server closes first (TIME_WAIT)" "$R2" 80 41002 fin reply
s_tw1=$(stats)
expect_ge "stateless front: the tuple met the server's TIME_WAIT meanwhile (time_wait_reuse)" \
	"$(reason_delta "$s_tw" "$s_tw1" time_wait_reuse)" 10
# The two shed over a TIME_WAIT (the first of the ten, and the last) went through the kernel's
# handshake: each had its request socket reset, its bare ACK passed up as a reset.
expect_eq "stateless front: the two shed over the kernel's handshake had its request socket reset (reqsk_reset)" \
	"$(reason_delta "$s_tw" "$s_tw1" reqsk_reset)" 2
# --- SYN front, reply port.
scenario "SYN front, reply port, client resets" "$R3" 8080 41003 rst reply
scenario "SYN front, reply port, server closes first (TIME_WAIT)" "$R4" 8080 41004 fin reply
expect_ge "SYN front: the server held TIME_WAIT on the tuple meanwhile (ss)" \
	"$(tw_count "$R4" 41004 8080)" 1
# --- Drop ports: a dropped connection is not answered; the client gives up and resets.
scenario "stateless front, drop port, client resets" "$D1" 81 41005 rst drop
scenario "SYN front, drop port, client resets" "$D2" 8081 41006 rst drop
# On the SYN front a shed SYN is dropped before any connection exists, so a client that
# closes in order has nothing to linger on: the server's TIME_WAIT, then the drops.
scenario "SYN front, drop port, server closes first (TIME_WAIT)" "$D3" 8081 41007 fin drop
# On the stateless front a dropped connection had its handshake (the cookie's): a client
# that gives up with an orderly close, as curl does at its timeout, sends a FIN that nobody
# answers. Its tuple must still be usable once the bucket has refilled.
r=$(conns "$D4" 81 41008 10 rst 1.0)
expect_eq "stateless front, drop port, orderly close: ten admitted (resets) spend the bucket" \
	"${r%%|*}" "$(rep 200 10)"
r=$(conns "$D4" 81 41008 1 fin 0.2)
expect_eq "stateless front, drop port, orderly close: the next one is dropped" "${r%%|*}" timeout
wait_refill "$D4" 1 6 || tap_diag "the bucket of $D4 did not refill ($(avail "$D4"))"
r=$(conns "$D4" 81 41008 1 fin 1.0)
expect_eq "stateless front, drop port, orderly close: after the refill its tuple is admitted again at once" \
	"${r%%|*}" 200
tap_diag "$(ip netns exec "$NS_C" ss -tano "( sport = :41008 )" | tail -n +2)"

# --- TIME_WAIT reuse over IPv6, with room: every reuse answered at once on both fronts, and
# on the stateless front the reused tuple's SYN goes to the kernel (time_wait_reuse).
for port in 80 8080; do
	s0=$(stats)
	r=$(conns "$W6" $port 42001 10 fin 1.0)
	s1=$(stats)
	IFS='|' read -r st slow _ <<<"$r"
	expect_eq "IPv6, port $port, server closes first: ten 200s on one tuple" "$st" "$(rep 200 10)"
	lt "$slow" 1.0 && tap_ok "IPv6, port $port: each at once (slowest ${slow}s)" ||
		tap_not_ok "IPv6, port $port: each at once (slowest ${slow}s)"
	expect_eq "IPv6, port $port: each charged once (first_admitted + passed)" \
		$(($(reason_delta "$s0" "$s1" first_admitted) + $(reason_delta "$s0" "$s1" passed))) 10
	[ $port = 80 ] && expect_eq "IPv6, stateless front: nine SYNs on a TIME_WAIT tuple went to the kernel" \
		"$(reason_delta "$s0" "$s1" time_wait_reuse)" 9
done

# --- Real curl, --local-port and --interface, ten in a row on each front (the server closes
# first: TIME_WAIT reuse), each 200 within a second.
for port in 80 8080; do
	codes="" slow=0
	for i in $(seq 1 10); do
		out=$(ip netns exec "$NS_C" curl -s -o /dev/null -m 3 -w '%{http_code} %{time_total}' \
			--interface "$W6" --local-port 42002 "http://[fd00:5::2]:$port/")
		codes+="${codes:+ }${out% *}"
		lt "$slow" "${out#* }" && slow=${out#* }
	done
	expect_eq "curl --local-port 42002, port $port: ten 200s" "$codes" "$(rep 200 10)"
	lt "$slow" 1.0 && tap_ok "curl, port $port: each within a second (slowest ${slow}s)" ||
		tap_not_ok "curl, port $port: each within a second (slowest ${slow}s)"
done

tap_done
