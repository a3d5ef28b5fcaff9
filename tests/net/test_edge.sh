#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# End to end on a veth pair: sluiced attached to the server veth, real listeners behind it on
# port 80 (the stateless front, the default, action "reply") and 8080 (the SYN front, action
# "drop"), and clients that prove their addresses before anything is charged ("verify, then
# charge"): scapy completing handshakes from addresses the client namespace does not own
# (tests/lib/edge_probe.py: each connection comes out admitted, shed429 or silent), and curl
# from an address the client owns. Spoofed SYNs (tests/lib/synpace.py) charge nothing.
# Rates are tiny (one unit per 1000 s) and every connection costs 1, so the bursts alone decide,
# whatever the machine's speed: a new key starts with half its burst (new_key_credit 0.5).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"

nt_require
nt_setup || { echo "Bail out! cannot build the veth topology"; exit 1; }
# The stateless front answers SYNs with XDP_TX, which a veth delivers only to a peer that runs
# XDP itself.
nt_client_xdp_pass || { echo "1..0 # SKIP cannot attach XDP to the client veth"; exit 0; }
REAL=203.0.113.10 # a residential client that really connects (curl)
nt_client_addr "$REAL"
nt_http_server || { echo "Bail out! no HTTP server on port 80"; exit 1; }
# The same server on the SYN-front port: there the kernel makes the request sockets.
ip netns exec "$NS_S" $PY -m http.server 8080 --bind :: --directory "$NT_DIR/www" \
	>"$NT_DIR/http8080.log" 2>&1 &
HTTP2=$!
cleanup() { kill "$HTTP2" 2>/dev/null; nt_teardown; }
trap cleanup EXIT
for _ in $(seq 1 50); do ip netns exec "$NS_S" ss -ltn | grep -q ':8080 ' && break; sleep 0.1; done

cat >"$NT_DIR/asn.csv" <<'EOF'
prefix,asn,class
198.51.100.0/24,64500,hosting
198.18.7.0/24,64500,hosting
2001:db8:1000::/36,64500,hosting
203.0.113.0/24,64501,residential
2001:db8:2000::/36,64501,residential
192.0.2.0/24,64502,business
EOF

write_conf() { # $1: residential v4_prefix (a bad value makes a broken file)
	cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 80; action = "reply"; cost = 1; },
            { port = 8080; front = "syn"; action = "drop"; cost = 1; } );
  state_entries = 4096;
  asn_table = "$NT_DIR/asn.csv";
  pin_path = "$PIN";
  event_sample = 1;
};
classes = (
  { name = "hosting"; v4_prefix = 24; v6_prefix = 48; v4_parent = 16; v6_parent = 32;
    rate = 0.001; burst = 10.0; parent_rate = 0.001; parent_burst = 1000.0; mode = "enforce"; },
  { name = "residential"; v4_prefix = $1; v6_prefix = 64; v4_parent = 24; v6_parent = 48;
    rate = 0.001; burst = 20.0; parent_rate = 0.001; parent_burst = 40.0; mode = "enforce"; },
  { name = "business"; v4_prefix = 32; v6_prefix = 56; v4_parent = 24; v6_parent = 48;
    rate = 0.001; burst = 4.0; mode = "monitor"; },
  { name = "unknown"; rate = 0.001; burst = 10.0; }
);
daemon: { control_socket = "$SOCK"; };
audit = { output = "$NT_DIR/audit.log"; rate = 100000.0; burst = 100000.0; };
EOF
}

# hs ARGS...: handshakes from spoofed sources (tests/lib/edge_probe.py, synprobe.py
# --handshake's job, ending when every connection is decided rather than after a fixed wait),
# on port 80 unless --dport says otherwise. Each run's totals go to probes.log, printed at
# the end if anything failed.
hs() {
	local r
	r=$(ip netns exec "$NS_C" $PY "$ROOT/tests/lib/edge_probe.py" --iface vc \
		--dmac "$SERVER_MAC" --dst 10.200.0.2 --dst6 fd00:5::2 "$@")
	echo "$r"
	$PY -c 'import json, sys; r = json.loads(sys.argv[1]); r.pop("by_source", None); print(json.dumps(r), sys.argv[2:])' \
		"$r" "$@" >>"$NT_DIR/probes.log" 2>&1
}
# curl_n N PORT: N real connections (curl) from $REAL; prints how many got the server's 200.
curl_n() {
	local ok=0 i code
	for i in $(seq 1 "$1"); do
		code=$(ip netns exec "$NS_C" curl -s -o /dev/null -w '%{http_code}' -m 3 \
			--interface "$REAL" "http://10.200.0.2:$2/")
		[ "$code" = 200 ] && ok=$((ok + 1))
	done
	echo "$ok"
}
# spoof NET RATE SECONDS PORT OUT: spoofed SYNs (synpace.py), its report in OUT.
spoof() {
	local dst=10.200.0.2
	case "$1" in *:*) dst=fd00:5::2 ;; esac
	ip netns exec "$NS_C" $PY "$ROOT/tests/lib/synpace.py" --iface vc --dmac "$SERVER_MAC" \
		--dst "$dst" --dport "$4" --src-net "$1" --rate "$2" --seconds "$3" --pool 400 \
		--seed "$RANDOM" >"$5"
}
stat() { jget "$(sluicectl stats --json)" "$1"; }

write_conf 32
# Without CAP_SYS_ADMIN libxdp would crash on attach: sluiced says what it needs and exits 1.
if command -v setpriv >/dev/null; then
	out=$(timeout 20 nsenter --net="/run/netns/$NS_S" setpriv --inh-caps=-sys_admin \
		--bounding-set=-sys_admin -- "$BUILD/sluiced" -c "$NT_DIR/sluice.conf" -f 2>&1); rc=$?
	expect_eq "without CAP_SYS_ADMIN: sluiced exits 1, no crash" "$rc" 1
	expect_match "  ... and names the capability" "$out" "needs CAP_SYS_ADMIN"
else
	tap_skip "without CAP_SYS_ADMIN: sluiced exits 1, no crash" "no setpriv"
fi
if ! nt_start_sluiced; then
	echo "Bail out! sluiced did not start"
	exit 1
fi

st=$(sluicectl status --json)
expect_eq "status: daemon running" "$(jget "$st" daemon_running)" true
expect_match "status: attach mode reported for vs" "$(jget "$st" interfaces.0.attach_mode)" \
	'^(native|generic|legacy-native|legacy-generic)$'
expect_eq "status: port 80 protected with reply" "$(jget "$st" ports.0.action)" reply
expect_eq "status: port 8080 protected with drop" "$(jget "$st" ports.1.action)" drop
expect_eq "status: port 80 runs the stateless front (the default: the file names none)" \
	"$(jget "$st" ports.0.front)" stateless
expect_eq "status: port 8080 runs the SYN front (as configured)" "$(jget "$st" ports.1.front)" syn
xdp_attached && tap_ok "an XDP program is on vs" || tap_not_ok "an XDP program is on vs"
log=$(cat "$NT_DIR/sluiced.log")
expect_match "sluiced logs at start that port 80 runs the stateless front" "$log" \
	'port 80 \(http, 429\): stateless front: every SYN gets a cookie'
expect_match "sluiced logs at start that port 8080 runs the SYN front, as configured" "$log" \
	'port 8080 \(http, drop\): SYN front \(configured\): SYNs weighed, not charged'
expect_eq "sluiced did not fall back from the stateless front (no 'unavailable' warning)" \
	"$(grep -c 'stateless front .*\(unavailable\|not available\)' <<<"$log")" 0
# Rates of one unit per 1000 s are this test's point, and the config loader's warning says
# what they admit (issue 19): the file loads, sluiced logs the warning with its line.
expect_match "sluiced logs the config's warnings: a rate under one request a minute, per port" \
	"$log" "sluice\.conf:[0-9]+: warning: class 'hosting'\.rate: 0\.001 cost units/s admits 0\.060 requests \(1\) per minute on port 80; 0\.060 connections \(1\) per minute on port 8080"

# 0. Spoofed SYNs charge nothing. On the stateless port each gets a cookie SYN-ACK (reason
# handshake), on the SYN port each is weighed and passed to the kernel (syn_peeked); none of
# them proves its source, so no bucket is created or charged and no class counts a decision.
spoof 203.0.113.0/24 400 1 80 "$NT_DIR/sp80" &
sp1=$!
spoof 2001:db8:2000:5::/64 400 1 80 "$NT_DIR/sp6" &
sp2=$!
spoof 203.0.113.0/24 400 1 8080 "$NT_DIR/sp8080" &
wait "$sp1" "$sp2" $!
n80=$(jget "$(cat "$NT_DIR/sp80")" sent)
n6=$(jget "$(cat "$NT_DIR/sp6")" sent)
n8080=$(jget "$(cat "$NT_DIR/sp8080")" sent)
s=$(sluicectl stats --json)
tap_diag "spoofed SYNs sent: $n80 + $n6 (IPv6) to port 80, $n8080 to port 8080"
expect_ge "spoofed SYNs: the flood was sent" "$((n80 + n6 + n8080))" 1000
expect_eq "spoofed SYNs on the stateless port: every one answered with a cookie SYN-ACK, nothing more" \
	"$(jget "$s" by_reason.handshake)/$(jget "$s" synacks)" "$((n80 + n6))/$((n80 + n6))"
expect_eq "spoofed SYNs on the SYN port: every one weighed, passed to the kernel" \
	"$(jget "$s" by_reason.syn_peeked)" "$n8080"
expect_eq "spoofed SYNs: no bucket was created" "$(jget "$s" state_entries)" 0
expect_eq "spoofed SYNs: no key was made" "$(jget "$s" keys_new)" 0
expect_eq "spoofed SYNs: residential has passed nothing" "$(jget "$s" by_class.residential.passed)" 0
expect_eq "spoofed SYNs: residential has shed nothing" "$(jget "$s" by_class.residential.shed)" 0
expect_eq "spoofed SYNs: no connection admitted or shed anywhere" \
	"$(jget "$s" passed)/$(jget "$s" shed)/$(jget "$s" by_reason.first_admitted)/$(jget "$s" replied_429)" \
	0/0/0/0
p=$(sluicectl prefix show 203.0.113.77 --json)
expect_eq "prefix show: a spoofed /32 has no bucket" "$(jget "$p" bucket.exists)" false
expect_eq "prefix show: nor has its /24" "$(jget "$p" parent_bucket.exists)" false
expect_eq "prefix show: it holds a new key's credit (10 of 20)" "$(jget "$p" bucket.available)" 10
expect_eq "prefix show: a connection from it would pass" "$(jget "$p" decision)" pass
p=$(sluicectl prefix show 2001:db8:2000:5::77 --json)
expect_eq "prefix show: a spoofed IPv6 /64 has no bucket" "$(jget "$p" bucket.exists)" false

# 1. A hosting /24 connects from 5 addresses: one key, whose new credit (5 of 10) admits 5
# first requests; the other 25 are shed with the 429 (port 80 replies).
r=$(hs --src 198.51.100.7 --src 198.51.100.8 --src 198.51.100.9 --src 198.51.100.10 \
	--src 198.51.100.11 --count 6)
expect_eq "hosting /24: 30 handshakes from 5 addresses, 5 admitted (one key)" \
	"$(jget "$r" admitted)" 5
expect_eq "hosting /24: the other 25 shed with a 429" "$(jget "$r" shed429)" 25
expect_eq "residential /32 after the flood: 8 of 8 real connections get the server's 200" \
	"$(curl_n 8 80)" 8
s=$(sluicectl stats --json)
expect_eq "stats: hosting shed 25" "$(jget "$s" by_class.hosting.shed)" 25
expect_eq "stats: hosting shed_prefix 25" "$(jget "$s" by_class.hosting.shed_prefix)" 25
expect_eq "stats: 25 replied_429" "$(jget "$s" replied_429)" 25
expect_eq "stats: 13 first requests admitted (5 hosting, 8 residential)" \
	"$(jget "$s" by_reason.first_admitted)" 13
# The class rows count what each class admitted: on the stateless front that is its first
# requests (reason first_admitted), on the SYN front the verified handshakes (passed).
expect_eq "stats: by class, passed counts the admitted first requests (hosting 5, residential 8)" \
	"$(jget "$s" by_class.hosting.passed)/$(jget "$s" by_class.residential.passed)" 5/8
expect_eq "stats: residential shed nothing" "$(jget "$s" by_class.residential.shed)" 0
for f in passed shed would_shed malformed state_entries; do
	[ -n "$(jget "$s" $f)" ] && tap_ok "stats --json has $f" || tap_not_ok "stats --json has $f"
done
p=$(sluicectl prefix show 198.51.100.200 --json)
expect_eq "prefix show: class of a hosting address" "$(jget "$p" class)" hosting
expect_eq "prefix show: the /24 key" "$(jget "$p" bucket.key)" 198.51.100.0/24
expect_eq "prefix show: the /16 parent" "$(jget "$p" parent_bucket.key)" 198.51.0.0/16
expect_eq "prefix show: the /24's bucket is empty" "$(jget "$p" reason)" shed_prefix
# Port 80 replies: a connection from this /24 now gets the 429, which is no pass.
expect_match "prefix show: on the reply port (80) the decision is a shed, not a pass" \
	"$(jget "$p" decision)" '^(reply|429|shed)$'
p=$(sluicectl prefix show 198.51.100.200 --port 8080 --json)
expect_eq "prefix show: on the drop port (8080) it would be dropped (buckets span ports)" \
	"$(jget "$p" decision)" drop
# The class's budget in requests (issue 19): port 80 has no routes, so a first request costs
# the port's 1; the SYN front charges its cost per connection. 0.001/s, a burst of 10.
expect_eq "prefix show: port 80's view of the /24's budget: per request, cost 1, 10 at once" \
	"$(jget "$p" bucket.ports.0.port)/$(jget "$p" bucket.ports.0.charges)/$(jget "$p" bucket.ports.0.cost)/$(jget "$p" bucket.ports.0.at_once)" \
	80/request/1/10
expect_eq "prefix show: port 8080 (syn front) charges per connection" \
	"$(jget "$p" bucket.ports.1.charges)/$(jget "$p" bucket.ports.1.per_s)" connection/0.001
expect_eq "prefix show: the parent's view too (1000 at once)" \
	"$(jget "$p" parent_bucket.ports.1.at_once)" 1000
t=$(sluicectl prefix show 198.51.100.200)
expect_match "prefix show: the key's rate in requests, in the unit a person says it (0.001/s)" "$t" \
	'hosting /24 +port 80: 3\.6 requests/h'
expect_match "prefix show: and in connections on the syn front" "$t" \
	'port 8080: 3\.6 connections/h'
l=$(sluicectl limits --json)
expect_eq "limits on an edge without a gateway: each class's budget" \
	"$(jget "$l" edge.classes.0.name)/$(jget "$l" edge.classes.0.key.burst)/$(jget "$l" edge.classes.0.parent.burst)" \
	hosting/10/1000
expect_match "limits: as text, per class and port" "$(sluicectl limits)" \
	'hosting /24 \(IPv6 /48\): 0\.0010 units/s, burst 10'
p=$(sluicectl prefix show "$REAL" --json)
expect_eq "prefix show: residential /32 still passes" "$(jget "$p" decision)" pass

# 1b. The SYN front (port 8080): a SYN is weighed, the handshake's ACK charged. Another hosting
# /24, 10 addresses one after another (each decided, or 0.4 s without answer, then 0.3 s):
# the credit of 5 admits the first 5; then the bucket is empty and the other 5 SYNs are shed
# at once (no SYN-ACK, nothing to prove). The 0.3 s spread the connections over more than
# one second of the clock: the edge's memory of a passed SYN is stamped in whole seconds.
s0=$(sluicectl stats --json)
r=$(hs --dport 8080 --one-by-one --quiet 0.4 --gap 0.3 \
	$(for i in $(seq 1 10); do echo --src 198.18.7.$i; done))
expect_eq "SYN front: 10 connections from a hosting /24, 5 admitted" "$(jget "$r" admitted)" 5
expect_eq "SYN front: only those 5 SYNs were answered (by the kernel)" "$(jget "$r" answered)" 5
s=$(sluicectl stats --json)
expect_eq "SYN front: hosting passed 5 more (charged at the ACK)" \
	"$(($(jget "$s" by_class.hosting.passed) - $(jget "$s0" by_class.hosting.passed)))" 5
expect_eq "SYN front: hosting shed 5 more (at their SYNs)" \
	"$(($(jget "$s" by_class.hosting.shed) - $(jget "$s0" by_class.hosting.shed)))" 5
expect_eq "SYN front: the 5 admitted SYNs were weighed (syn_peeked)" \
	"$(($(jget "$s" by_reason.syn_peeked) - $(jget "$s0" by_reason.syn_peeked)))" 5
p=$(sluicectl prefix show 198.18.7.200 --port 8080 --json)
expect_eq "prefix show: that /24 is empty now" "$(jget "$p" reason)" shed_prefix
expect_eq "prefix show: a SYN to 8080 now would be dropped" "$(jget "$p" decision)" drop

# 2. Random /128s inside one residential /64 are one key (burst 20, credit 10).
before=$(stat state_entries)
r=$(hs --rotate 2001:db8:2a00:1::/64:128 --count 30 --seed 11)
expect_eq "IPv6 /128 rotation in one /64: 10 of 30 admitted" "$(jget "$r" admitted)" 10
expect_eq "IPv6 /128 rotation: the other 20 shed with a 429" "$(jget "$r" shed429)" 20
expect_eq "IPv6 /128 rotation: 30 distinct sources were used" "$(jget "$r" sources)" 30
after=$(stat state_entries)
expect_eq "IPv6 /128 rotation added 2 buckets (the /64 and its /48), not 30" \
	"$((after - before))" 2

# 3. A new /64 for every connection inside one /48: each /64 is fresh (credit 10), the /48
# parent (burst 40, credit 20) stops it.
s0=$(stat by_class.residential.shed)
r=$(hs --rotate 2001:db8:2b00::/48:64 --count 40 --seed 12)
expect_eq "IPv6 /64 rotation in one /48: 20 of 40 admitted" "$(jget "$r" admitted)" 20
s1=$(stat by_class.residential.shed)
expect_eq "IPv6 /64 rotation: 20 shed" "$((s1 - s0))" 20
expect_eq "IPv6 /64 rotation: ... all by the parent" "$(stat by_class.residential.shed_parent)" 20
pp=$(sluicectl prefix show 2001:db8:2b00:ffff::1 --json)
expect_eq "prefix show: a fresh /64 in that /48 is shed by its parent" \
	"$(jget "$pp" reason)" shed_parent
expect_eq "prefix show: the IPv6 key is the /64" "$(jget "$pp" bucket.key)" 2001:db8:2b00:ffff::/64
expect_eq "prefix show: the IPv6 parent is the /48" "$(jget "$pp" parent_bucket.key)" \
	2001:db8:2b00::/48

# 4. Monitor mode: everything is admitted, the excess is counted as would_shed and sampled to
# the event ring like a shed, so an operator sees which prefixes it would shed.
ev="$NT_DIR/events"
sluicectl events --json --count 2000 --timeout 4 >"$ev" &
evpid=$!
# It sees events once sluiced counts it among its readers (the fan-out, user/sluiced/evhub.c);
# `sluicectl` is a function here, so $evpid is a subshell's and its fds say nothing.
for _ in $(seq 1 200); do
	[ "$(jget "$(sluicectl status --json 2>/dev/null)" events.readers)" = 1 ] && break
	sleep 0.02
done
r=$(hs --src 192.0.2.7 --count 10)
wait $evpid
expect_eq "monitor class: its would-be sheds are on the event ring (8 of 10)" \
	"$(grep '"reason":"would_shed_prefix"' "$ev" | grep -c '"prefix":"192.0.2.7/32"')" 8
expect_eq "monitor class: 10 of 10 admitted" "$(jget "$r" admitted)" 10
s=$(sluicectl stats --json)
expect_eq "monitor class: 8 would_shed (credit 2 of burst 4)" \
	"$(jget "$s" by_class.business.would_shed)" 8
expect_eq "monitor class: nothing shed" "$(jget "$s" by_class.business.shed)" 0

# 5. A broken config on SIGHUP is reported with file:line and changes nothing.
gen=$(jget "$(sluicectl status --json)" generation)
write_conf 0
line=$(grep -n 'v4_prefix = 0;' "$NT_DIR/sluice.conf" | cut -d: -f1)
kill -HUP "$SLUICED_PID"
for _ in $(seq 1 50); do grep -q "reload rejected" "$NT_DIR/sluiced.log" && break; sleep 0.1; done
expect_match "SIGHUP with a bad file: the log names file:line and the reason" \
	"$(cat "$NT_DIR/sluiced.log")" "$NT_DIR/sluice.conf:$line: .*v4_prefix.*out of range"
st=$(sluicectl status --json)
expect_eq "SIGHUP with a bad file: generation unchanged" "$(jget "$st" generation)" "$gen"
expect_eq "SIGHUP with a bad file: the failure is counted" "$(jget "$st" reload_failures)" 1
kill -0 "$SLUICED_PID" 2>/dev/null && tap_ok "sluiced still running" || tap_not_ok "sluiced still running"
r=$(hs --src 198.51.100.50 --count 3)
expect_eq "after the bad reload the hosting /24 is still shed (0 of 3 admitted)" \
	"$(jget "$r" admitted)/$(jget "$r" shed429)" 0/3
out=$(sluicectl reload 2>&1); rc=$?
expect_eq "sluicectl reload with a bad file exits 1" "$rc" 1
expect_match "sluicectl reload prints file:line" "$out" "sluice.conf:$line:"
write_conf 32
out=$(sluicectl reload --json); rc=$?
expect_eq "sluicectl reload of a good file exits 0" "$rc" 0
expect_eq "a good reload bumps the generation" "$(jget "$(sluicectl status --json)" generation)" \
	"$((gen + 1))"

# 5b. ASN tables: a bad file is refused with file:line; a good one retypes sources at once.
printf '198.51.100.0/24,64500,hosting\n203.0.113.0/24,64501,nosuchclass\n' >"$NT_DIR/bad.csv"
out=$(sluicectl asn load "$NT_DIR/bad.csv" 2>&1); rc=$?
expect_eq "asn load of a bad file exits 1" "$rc" 1
expect_match "asn load names file:line and the reason" "$out" "bad.csv:2: class 'nosuchclass'"
expect_eq "after a refused asn load the old table stands" \
	"$(jget "$(sluicectl prefix show 192.0.2.9 --json)" class)" business
printf '192.0.2.0/24,64999,residential\n' >"$NT_DIR/new.csv"
out=$(sluicectl asn load "$NT_DIR/new.csv" --json); rc=$?
expect_eq "asn load of a good file exits 0" "$rc" 0
expect_eq "asn load: 192.0.2.9 is now residential" \
	"$(jget "$(sluicectl prefix show 192.0.2.9 --json)" class)" residential
expect_eq "asn load: 198.51.100.9 is no longer in the table" \
	"$(jget "$(sluicectl prefix show 198.51.100.9 --json)" class)" unknown
r=$(hs --src 192.0.2.99 --count 12)
expect_eq "the datapath follows the new table: 192.0.2.99 gets residential's 10 (2 shed)" \
	"$(jget "$r" admitted)/$(jget "$r" shed429)" 10/2
sluicectl reload >/dev/null
expect_eq "a reload puts the config's table back" \
	"$(jget "$(sluicectl prefix show 198.51.100.9 --json)" class)" hosting

# 6. Restart keeps state: hand over (SIGQUIT), read from pins, then start again.
# hosting has shed 25 (1.) + 5 (1b.) + 3 (5.) = 33 so far; the counts below are taken from
# what the daemon showed before the handover, so they test the pins, not 1b. again.
shed0=$(stat by_class.hosting.shed)
tap_diag "hosting shed before the handover: $shed0 (33 expected)"
nt_stop_sluiced QUIT
st=$(sluicectl status --json)
expect_eq "after handover: daemon not running" "$(jget "$st" daemon_running)" false
xdp_attached && tap_ok "after handover: XDP still attached" || tap_not_ok "after handover: XDP still attached"
expect_eq "stats read from the pins with no daemon: hosting's sheds ($shed0)" \
	"$(stat by_class.hosting.shed)" "$shed0"
r=$(hs --src 198.51.100.51 --count 2)
expect_eq "with no daemon the datapath still sheds the /24 (2 of 2 with a 429)" \
	"$(jget "$r" admitted)/$(jget "$r" shed429)" 0/2
nt_start_sluiced || tap_not_ok "sluiced restarts"
expect_match "restart adopts the pinned maps" "$(cat "$NT_DIR/sluiced.log")" "adopted the maps"
r=$(hs --src 198.51.100.52 --count 2)
expect_eq "after restart the /24 is still shed (bucket state kept)" \
	"$(jget "$r" admitted)/$(jget "$r" shed429)" 0/2
s=$(sluicectl stats --json)
expect_eq "after restart counters continue ($shed0 + 2 + 2)" "$(jget "$s" by_class.hosting.shed)" \
	"$((shed0 + 4))"
# 20 (2.) + 20 (3.) + 2 (5b.)
expect_eq "stats: residential shed includes the retyped 192.0.2.99" \
	"$(jget "$s" by_class.residential.shed)" 42
expect_eq "after restart the residential /32 still passes (its 9th connection of 10)" \
	"$(curl_n 1 80)" 1

# 7. A crash (SIGKILL) also keeps state; SIGTERM then detaches and removes the pins.
nt_stop_sluiced KILL
nt_start_sluiced || tap_not_ok "sluiced restarts after SIGKILL"
r=$(hs --src 198.51.100.53 --count 2)
expect_eq "after a crash and restart the /24 is still shed" \
	"$(jget "$r" admitted)/$(jget "$r" shed429)" 0/2
nt_stop_sluiced TERM
xdp_attached && tap_not_ok "SIGTERM detaches XDP" || tap_ok "SIGTERM detaches XDP"
[ -e "$PIN/sl_buckets" ] && tap_not_ok "SIGTERM removes the pins" || tap_ok "SIGTERM removes the pins"
r=$(hs --src 198.51.100.54 --count 2)
expect_eq "detached: the server's kernel admits everything" "$(jget "$r" admitted)" 2

# 7b. An upgrade from a build whose bucket table was an LRU hash (12-byte keys, 16-byte values)
# beside a ghost array: pins of that layout are found at start. They must be recreated, not
# read as sets (libbpf would refuse the LRU pin and the load fail), and the ghost pin, which
# nothing reads now, removed.
mkdir -p "$PIN"
bpftool map create "$PIN/sl_buckets" type lru_hash key 12 value 16 entries 4096 name sl_buckets &&
	bpftool map create "$PIN/sl_ghosts" type array key 4 value 64 entries 1024 name sl_ghosts ||
	tap_not_ok "old-layout pins created with bpftool"
from=$(($(wc -l <"$NT_DIR/sluiced.log") + 1))
nt_start_sluiced || tap_not_ok "sluiced starts over old-layout pins"
newlog=$(tail -n +"$from" "$NT_DIR/sluiced.log")
expect_match "the old bucket table's layout is noticed and the map recreated" "$newlog" \
	"sl_buckets: pinned with another layout \(type 9, 16-byte values; this build: type 2, 128\).*recreating it"
expect_match "  ... the old ghost pin removed" "$newlog" "removed the ghost table an older build pinned"
[ -e "$PIN/sl_ghosts" ] && tap_not_ok "  ... sl_ghosts is gone from the pins" ||
	tap_ok "  ... sl_ghosts is gone from the pins"
expect_eq "  ... the pinned sl_buckets is the new array of 128-byte sets" \
	"$(bpftool map show pinned "$PIN/sl_buckets" -j | $PY -c 'import json,sys; d=json.load(sys.stdin); print(d["type"], d["bytes_value"])')" \
	"array 128"
expect_eq "  ... and the edge charges into it: a residential connection passes" "$(curl_n 1 80)" 1
expect_ge "  ... leaving its key and parent in the table" \
	"$(jget "$(sluicectl status --json)" state_entries)" 2
nt_stop_sluiced TERM

# 8. sluicectl detach, through the daemon.
nt_start_sluiced || tap_not_ok "sluiced starts again"
out=$(sluicectl detach --json); rc=$?
expect_eq "sluicectl detach exits 0" "$rc" 0
for _ in $(seq 1 50); do kill -0 "$SLUICED_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SLUICED_PID" 2>/dev/null && tap_not_ok "sluiced exits after detach" || tap_ok "sluiced exits after detach"
SLUICED_PID=
xdp_attached && tap_not_ok "detach removed XDP from vs" || tap_ok "detach removed XDP from vs"
[ -e "$PIN/sl_buckets" ] && tap_not_ok "detach removed the pins" || tap_ok "detach removed the pins"
out=$(sluicectl stats 2>&1); rc=$?
expect_eq "stats with nothing pinned exits 1" "$rc" 1
expect_match "stats with nothing pinned says why" "$out" "nothing pinned"

# 9. A signal during start (systemctl reload or restart a moment after start) waits for the
# loop instead of taking its default action: a HUP does not kill it, a QUIT is not lost.
from=$(($(wc -l <"$NT_DIR/sluiced.log") + 1))
nsenter --net="/run/netns/$NS_S" "$BUILD/sluiced" -c "$NT_DIR/sluice.conf" -f >>"$NT_DIR/sluiced.log" 2>&1 &
SLUICED_PID=$!
# Send it while sluiced is starting: once it blocks HUP (SigBlk), before the loop runs.
blocked=0
for _ in $(seq 1 500); do
	m=$(awk '/^SigBlk:/ { print $2 }' "/proc/$SLUICED_PID/status" 2>/dev/null)
	[ -n "$m" ] && [ $((0x$m & 1)) -eq 1 ] && { blocked=1; break; }
	sleep 0.002
done
expect_eq "sluiced holds HUP back while it starts" "$blocked" 1
grep -q "sluiced .* running" <(tail -n +"$from" "$NT_DIR/sluiced.log") &&
	tap_diag "the loop was already running when HUP was sent"
kill -HUP "$SLUICED_PID"
for _ in $(seq 1 100); do
	tail -n +"$from" "$NT_DIR/sluiced.log" | grep -q "SIGHUP: reloading" && break
	kill -0 "$SLUICED_PID" 2>/dev/null || break
	sleep 0.05
done
kill -0 "$SLUICED_PID" 2>/dev/null && tap_ok "a HUP during start does not kill sluiced" ||
	tap_not_ok "a HUP during start does not kill sluiced"
expect_match "  ... it is handled once the loop runs" "$(tail -n +"$from" "$NT_DIR/sluiced.log")" \
	"SIGHUP: reloading"
nt_stop_sluiced TERM

# ---- the audit log, line by line: the edge's sampled refusals (event_sample = 1 here) ---------
A=$($PY "$ROOT/tests/lib/audit_check.py" "$NT_DIR/audit.log")
acount() { $PY -c 'import json,sys; d=json.loads(sys.argv[1]); print(sum(1 for r in d["records"] if eval(sys.argv[2])))' "$A" "$1"; }
expect_ge "audit: the edge wrote lines" "$(jget "$A" lines)" 10
expect_eq "audit: every line parses as one JSON object" "$(jget "$A" bad_json)" 0
expect_eq "audit: every line has every field" "$(jget "$A" missing)" 0
expect_eq "audit: every time is ISO 8601 with its date, UTC, ms" "$(jget "$A" bad_time)" 0
expect_ge "audit: the hosting /24's sheds are refusals from the edge, by prefix" \
	"$(acount "r['source']=='edge' and r['event']=='refusal' and r['prefix'] is not None and r['reason'] is not None")" 10
expect_ge "audit: the monitor class's would-be sheds say so (not a refusal that happened)" \
	"$(acount "r['source']=='edge' and r['prefix']=='192.0.2.7/32' and 'would' in (r['reason'] or '') + (r['decision'] or '')")" 1

[ "$TAP_FAIL" -eq 0 ] || tap_diag "handshake runs (totals, arguments):
$(cat "$NT_DIR/probes.log")"
tap_done
