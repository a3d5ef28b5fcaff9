#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The evasion table (issue 13), played by the attacker it is for: a source under a block
# verdict sends its SYN in every shape the edge must see through (IPv4 fragments with the
# TCP header in the first fragment and without it, IPv6 atomic and real fragments, 6, 7 and
# 20 extension headers, VLAN tags, SYN|FIN, SYN|RST, a TCP Fast Open SYN with data) and
# completes every handshake it is answered (tests/lib/synprobe.py --handshake), on the
# stateless front (port 80), the SYN front (8080, a drop port) and a SYN-front reply port
# (8082). It must never get the real application's 200, nor any SYN-ACK, and the server's
# kernel must never see a segment of it. A clean source sending the same shapes is judged as
# its plain SYN is: on the stateless front a cookie SYN-ACK from XDP (the kernel sees nothing
# until the proven first request), on the SYN front the kernel's own handshake for the plain
# shapes and a drop for fragmented SYNs and SYNs with data; a shape the edge cannot judge (a
# first fragment cut inside the TCP header, more VLAN tags than it parses, an IPv6 first
# fragment whose header chain goes on into the next one) is dropped. The control: the same
# shapes from the blocked source to an unprotected port (8081) reach the application, so each
# is one the kernel takes. UDP datagrams (DNS-sized, fragmented) to ports sluice protects on
# TCP and to others reach a UDP listener in the server namespace intact.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"

nt_require
nt_setup || { echo "Bail out! cannot build the veth topology"; exit 1; }
nt_client_xdp_pass || { echo "1..0 # SKIP cannot attach XDP to the client veth"; exit 0; }
nt_http_server || { echo "Bail out! no HTTP server"; exit 1; }
PIDS=()
for port in 8080 8081 8082; do
	ip netns exec "$NS_S" $PY -m http.server $port --bind :: --directory "$NT_DIR/www" \
		>"$NT_DIR/http$port.log" 2>&1 &
	PIDS+=($!)
done
# A UDP sink on a port sluice protects on TCP on each front, and on one it does not (DNS).
cat >"$NT_DIR/udp_sink.py" <<'EOF'
import hashlib, select, socket, sys
out = open(sys.argv[1], "a", buffering=1)
socks = {}
for p in map(int, sys.argv[2:]):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.bind(("::", p))
    socks[s] = p
while True:
    for s in select.select(list(socks), [], [])[0]:
        data, addr = s.recvfrom(65535)
        src = addr[0][7:] if addr[0].startswith("::ffff:") else addr[0]
        out.write(f"{socks[s]} {src} {len(data)} {hashlib.sha256(data).hexdigest()}\n")
EOF
: >"$NT_DIR/udp.log"
ip netns exec "$NS_S" $PY "$NT_DIR/udp_sink.py" "$NT_DIR/udp.log" 53 80 8080 \
	>"$NT_DIR/udp_sink.err" 2>&1 &
PIDS+=($!)
cleanup() { kill "${PIDS[@]}" 2>/dev/null; wait "${PIDS[@]}" 2>/dev/null; nt_teardown; }
trap cleanup EXIT
for port in 8080 8081 8082; do
	for _ in $(seq 1 50); do ip netns exec "$NS_S" ss -ltn | grep -q ":$port " && break; sleep 0.1; done
done
for _ in $(seq 1 50); do ip netns exec "$NS_S" ss -lun | grep -q ':8080 ' && break; sleep 0.1; done

cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 80; front = "stateless"; action = "reply"; cost = 1; },
            { port = 8080; front = "syn"; action = "drop"; cost = 1; },
            { port = 8082; front = "syn"; action = "reply"; cost = 1; } );
  state_entries = 65536;
  pin_path = "$PIN";
  new_key_credit = 1.0;
};
classes = (
  { name = "unknown"; rate = 100.0; burst = 1000.0; parent_rate = 100.0; parent_burst = 1000.0; }
);
daemon: { control_socket = "$SOCK"; };
EOF
nt_start_sluiced || { echo "Bail out! sluiced did not start"; exit 1; }

# The attacker and a clean source; the client namespace owns neither, so its kernel never
# resets the handshakes scapy completes for them.
BAD4=203.0.113.66 BAD6=2001:db8:66::1 OK4=203.0.113.20 OK6=2001:db8:2000:1::20
sluicectl verdict add "$BAD4/32" --action block --ttl 600 --reason "evasion test" >/dev/null
sluicectl verdict add 2001:db8:66::/48 --action block --ttl 600 --reason "evasion test" >/dev/null
expect_eq "two block verdicts are live" \
	"$(sluicectl verdict list | grep -c block)" 2

# A reply carries back this many VLAN tags. The edge reads any number (the kernel strips
# priority tags one after another; how deep is the kernel's: the one of earlier runs here
# passed forty, 6.18.44 drops nine): deeper SYNs are judged, and on the stateless front
# dropped, as no cookie can go back under them.
NVLAN=$(sed -n 's/^#define SL_MAX_VLAN \([0-9]*\).*/\1/p' "$ROOT/include/sluice/abi.h")
# tags N [FIRST]: N priority tags (VLAN id 0) for synprobe --vlan, the outermost FIRST (q0).
tags() { local t=${2:-q0} i; for ((i = 1; i < $1; i++)); do t+=",q0"; done; echo "$t"; }

# The table: name, family, kind, synprobe shape options. Kinds: plain (judged as a plain SYN
# on both fronts), frag (a fragmented SYN holding the whole TCP header: the stateless front
# answers it as a plain SYN, the SYN front drops it), data (a SYN with data: the same),
# deep (under more VLAN tags than a reply carries: judged as plain on the SYN front, dropped
# on the stateless one), cut (the edge cannot judge it: dropped everywhere), bad (SYN|FIN,
# SYN|RST: dropped).
cat >"$NT_DIR/shapes.json" <<EOF
[
 {"name": "v4 plain SYN", "fam": 4, "kind": "plain", "o": {}},
 {"name": "v4 SYN with timestamps", "fam": 4, "kind": "plain", "o": {"ts": true}},
 {"name": "v4 one 802.1Q priority tag", "fam": 4, "kind": "plain", "o": {"vlan": "q0"}},
 {"name": "v4 $NVLAN VLAN tags (802.1ad, 802.1Q)", "fam": 4, "kind": "plain",
  "o": {"vlan": "$(tags "$NVLAN" ad0)"}},
 {"name": "v4 $((NVLAN + 1)) VLAN priority tags", "fam": 4, "kind": "deep",
  "o": {"vlan": "$(tags $((NVLAN + 1)))"}},
 {"name": "v4 40 VLAN priority tags", "fam": 4, "kind": "deep", "o": {"vlan": "$(tags 40)"}},
 {"name": "v4 fragments, the whole TCP header in the first", "fam": 4, "kind": "frag",
  "o": {"frag4": "header", "data": 16}},
 {"name": "v4 fragments, the whole header in the first, sent last first", "fam": 4,
  "kind": "frag", "o": {"frag4": "header", "data": 16, "reverse": true}},
 {"name": "v4 fragments, only the ports in the first", "fam": 4, "kind": "cut",
  "o": {"frag4": "ports"}},
 {"name": "v4 fragments, only the ports in the first, sent last first", "fam": 4,
  "kind": "cut", "o": {"frag4": "ports", "reverse": true}},
 {"name": "v4 fragments, only the ports in the first, an ACK-like Ethernet trailer",
  "fam": 4, "kind": "cut", "o": {"frag4": "trailer"}},
 {"name": "v4 fragments, only the ports in the first, a zero-flags Ethernet trailer",
  "fam": 4, "kind": "cut", "o": {"frag4": "trailer", "trailer_flags": "0"}},
 {"name": "v4 SYN|FIN", "fam": 4, "kind": "bad", "o": {"flags": "SF"}},
 {"name": "v4 SYN|RST", "fam": 4, "kind": "bad", "o": {"flags": "SR"}},
 {"name": "v4 TFO SYN with 32 bytes of data", "fam": 4, "kind": "data",
  "o": {"tfo": true, "data": 32}},
 {"name": "v6 plain SYN", "fam": 6, "kind": "plain", "o": {}},
 {"name": "v6 SYN with timestamps", "fam": 6, "kind": "plain", "o": {"ts": true}},
 {"name": "v6 6 extension headers", "fam": 6, "kind": "plain", "o": {"ext": 6}},
 {"name": "v6 7 extension headers", "fam": 6, "kind": "plain", "o": {"ext": 7}},
 {"name": "v6 20 extension headers", "fam": 6, "kind": "plain", "o": {"ext": 20}},
 {"name": "v6 atomic fragment", "fam": 6, "kind": "plain", "o": {"frag6": "atomic"}},
 {"name": "v6 atomic fragment behind 20 extension headers", "fam": 6, "kind": "plain",
  "o": {"frag6": "atomic", "ext": 20}},
 {"name": "v6 one 802.1Q priority tag", "fam": 6, "kind": "plain", "o": {"vlan": "q0"}},
 {"name": "v6 $NVLAN VLAN priority tags", "fam": 6, "kind": "plain",
  "o": {"vlan": "$(tags "$NVLAN")"}},
 {"name": "v6 $((NVLAN + 1)) VLAN priority tags", "fam": 6, "kind": "deep",
  "o": {"vlan": "$(tags $((NVLAN + 1)))"}},
 {"name": "v6 40 VLAN priority tags", "fam": 6, "kind": "deep", "o": {"vlan": "$(tags 40)"}},
 {"name": "v6 real fragments, TCP in the first", "fam": 6, "kind": "frag",
  "o": {"frag6": "first"}},
 {"name": "v6 real fragments, sent last first", "fam": 6, "kind": "frag",
  "o": {"frag6": "first", "reverse": true}},
 {"name": "v6 real fragments behind 7 extension headers", "fam": 6, "kind": "frag",
  "o": {"frag6": "first", "ext": 7}},
 {"name": "v6 real fragments, 6 extension headers after the fragment header", "fam": 6,
  "kind": "frag", "o": {"frag6": "first", "ext_after": 6}},
 {"name": "v6 real fragments, 8 bytes of TCP in the first", "fam": 6, "kind": "cut",
  "o": {"frag6": "cut"}},
 {"name": "v6 real fragments, the header chain goes on into the second", "fam": 6,
  "kind": "cut", "o": {"frag6": "chain"}},
 {"name": "v6 SYN|FIN", "fam": 6, "kind": "bad", "o": {"flags": "SF"}},
 {"name": "v6 SYN|RST", "fam": 6, "kind": "bad", "o": {"flags": "SR"}},
 {"name": "v6 TFO SYN with 32 bytes of data", "fam": 6, "kind": "data",
  "o": {"tfo": true, "data": 32}}
]
EOF
/usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$NT_DIR/shapes.json" ||
	{ echo "Bail out! the shape table is not JSON"; exit 1; }

# batch FILE KINDS SRC4 SRC6 PORTS...: the table's shapes of these kinds (comma-separated),
# from these sources, to each port, as a synprobe --batch file.
batch() {
	/usr/bin/python3 - "$NT_DIR/shapes.json" "$@" <<'EOF'
import json, sys
shapes, out, kinds, src4, src6 = json.load(open(sys.argv[1])), sys.argv[2], \
    sys.argv[3].split(","), sys.argv[4], sys.argv[5]
probes = []
for port in map(int, sys.argv[6:]):
    for s in shapes:
        if s["kind"] in kinds:
            probes.append({"name": f"{s['name']} :{port}", "src": src4 if s["fam"] == 4 else src6,
                           "dport": port, **s["o"]})
json.dump(probes, open(out, "w"))
print(len(probes))
EOF
}

SEED=100
# run FILE [synprobe options]: the batch through synprobe; its JSON in $NT_DIR/last.json.
run() {
	local f=$1
	shift
	SEED=$((SEED + 1))
	ip netns exec "$NS_C" $PY "$ROOT/tests/lib/synprobe.py" --iface vc --dmac "$SERVER_MAC" \
		--dst 10.200.0.2 --dst6 fd00:5::2 --seed "$SEED" --batch "$f" "$@" \
		>"$NT_DIR/last.json" 2>>"$NT_DIR/synprobe.err"
}
# each: one line per probe of the last run: answered|outcome|status|acked|name
each() {
	/usr/bin/python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["probes"]:
    print("%s|%s|%s|%s|%s" % (p["answered"], p.get("outcome"), p.get("status"), p["acked"], p["name"]))
' "$NT_DIR/last.json"
}

# The server's own view: TCP segments in and out, and datagrams reassembled.
mib() {
	ip netns exec "$NS_S" awk '
		/^Tcp:/ { if (!t) { for (i = 1; i <= NF; i++) tc[$i] = i; t = 1 }
			  else { ins = $tc["InSegs"]; outs = $tc["OutSegs"]; po = $tc["PassiveOpens"] } }
		/^Ip:/ { if (!p) { for (i = 1; i <= NF; i++) ic[$i] = i; p = 1 }
			 else r4 = $ic["ReasmOKs"] }
		END { print ins, outs, po, r4 }' /proc/net/snmp
	ip netns exec "$NS_S" awk '$1 == "Ip6ReasmOKs" { print $2 }' /proc/net/snmp6
}
# mib_delta BEFORE AFTER: "in out passive reasm4 reasm6" differences.
mib_delta() {
	/usr/bin/python3 -c 'import sys; a, b = sys.argv[1].split(), sys.argv[2].split()
print(" ".join(str(int(y) - int(x)) for x, y in zip(a, b)))' "$1" "$2"
}
stats() { sluicectl stats --json; }
# reason_delta BEFORE-JSON AFTER-JSON NAME
reason_delta() { echo $(($(jget "$2" "by_reason.$3") - $(jget "$1" "by_reason.$3"))); }

n_kind() { # KINDS: how many shapes of these kinds
	/usr/bin/python3 -c 'import json, sys
print(sum(s["kind"] in sys.argv[2].split(",") for s in json.load(open(sys.argv[1]))))' \
		"$NT_DIR/shapes.json" "$1"
}

# --- 1. The attacker, under a block verdict, on every protected port: nothing, anywhere.
for group in "plain,frag,data,bad,deep" "cut"; do
	n=$(batch "$NT_DIR/b.json" "$group" "$BAD4" "$BAD6" 80 8080 8082)
	s0=$(stats) m0=$(mib)
	run "$NT_DIR/b.json" --handshake --wait 1.2
	m1=$(mib) s1=$(stats)
	while IFS='|' read -r ans outcome status acked name; do
		expect_eq "blocked source, $name: no answer, no 200" "$ans/$status" "None/None"
	done < <(each)
	d=$(mib_delta "$m0" "$m1")
	expect_eq "blocked source, $group shapes ($n probes): the server's kernel saw no TCP segment, sent none, reassembled nothing (in out passive reasm4 reasm6)" \
		"$d" "0 0 0 0 0"
done
expect_eq "blocked source: no socket of it on the server (ss)" \
	"$(ip netns exec "$NS_S" ss -tan "( dst $BAD4 or dst [$BAD6] )" | tail -n +2 | wc -l)" 0
p=$(sluicectl prefix show "$BAD4" --json)
expect_eq "blocked source: never charged, it has no bucket" "$(jget "$p" bucket.exists)" false

# --- 2. The control: the same shapes from the same source to a port sluice does not protect
# reach the application, so every shape above is one the kernel takes. (SYN|FIN, SYN|RST and
# an IPv6 first fragment cut inside the TCP header the kernel drops itself: RFC 8200 4.5. A
# first fragment whose header chain goes on into the next one, which this kernel reassembles
# though RFC 8200 4.5 says to discard it, the edge drops whatever its port: the port cannot
# be read from it.)
# A kernel may stop stripping priority tags before forty (6.18.44 delivers 8 and drops 9):
# a stack deeper than a reply carries that the kernel itself drops unprotected is noted in
# KDROP, said as a skip here, and expected to be dropped by the kernel behind the SYN front
# too (section 4).
KDROP="|"
n=$(batch "$NT_DIR/b.json" "plain,frag,data,cut,bad,deep" "$BAD4" "$BAD6" 8081)
run "$NT_DIR/b.json" --handshake --wait 1.2
while IFS='|' read -r ans outcome status acked name; do
	depth=$(sed -n 's/^v[46] \([0-9]*\) VLAN priority tags.*/\1/p' <<<"$name")
	if [ -n "$depth" ] && [ "$depth" -gt "$NVLAN" ] && ! grep -q " 200 " <<<"$status"; then
		KDROP+="${name% :*}|"
		tap_skip "control, $name: reaches the application (200)" \
			"kernel $(uname -r) drops $depth priority tags itself"
		continue
	fi
	# Likewise a long chain of extension headers: the machine of 2026-12-03 (6.18.44 too)
	# delivered 20 destination-options headers (this suite passed there), the one of
	# 2026-12-04 delivers 12 and drops 16 and 20 with no XDP program anywhere (a bare veth
	# pair, scapy SYNs, the listener's Ip6InDiscards counting them). Past the 7 that every kernel here took,
	# the kernel's own drop is noted, not charged to the edge (section 3 shows the edge
	# judges these shapes: the stateless front proves and hands them off).
	ext=$(sed -n 's/^v6 .*\b\([0-9][0-9]*\) extension headers.*/\1/p' <<<"$name")
	if [ -n "$ext" ] && [ "$ext" -gt 7 ] && ! grep -q " 200 " <<<"$status"; then
		KDROP+="${name% :*}|"
		tap_skip "control, $name: reaches the application (200)" \
			"kernel $(uname -r) drops $ext extension headers itself"
		continue
	fi
	case "$name" in
	*"SYN|FIN"* | *"SYN|RST"* | *"8 bytes of TCP in the first"*)
		expect_eq "control, $name: the kernel drops it too" "$ans" None ;;
	*"the header chain goes on into the second"*)
		expect_eq "control, $name: the edge drops it, its port unread" "$ans" None ;;
	*)
		expect_match "control, $name: reaches the application (200)" "$status" " 200 " ;;
	esac
done < <(each)

# --- 3. A clean source on the stateless front: every shape the edge can judge gets a cookie
# SYN-ACK from XDP (the kernel sees nothing of it), and a TFO SYN's data is not acknowledged.
n=$(batch "$NT_DIR/b.json" "plain,frag,data" "$OK4" "$OK6" 80)
s0=$(stats) m0=$(mib)
run "$NT_DIR/b.json" --wait 0.8
m1=$(mib) s1=$(stats)
while IFS='|' read -r ans outcome status acked name; do
	expect_eq "clean source, stateless front, $name: a SYN-ACK acknowledging the SYN alone" \
		"$ans/$acked" "SA/0"
done < <(each)
expect_eq "clean source, stateless front: the $n SYN-ACKs came from XDP (handshake, synacks)" \
	"$(reason_delta "$s0" "$s1" handshake) $(($(jget "$s1" synacks) - $(jget "$s0" synacks)))" "$n $n"
expect_eq "clean source, stateless front: the server's kernel saw none of it (in out passive reasm4 reasm6)" \
	"$(mib_delta "$m0" "$m1" | cut -d' ' -f1-3,5)" "0 0 0 0"
# ... and each completes into the application: charged once, handed to the listener.
s0=$(stats)
run "$NT_DIR/b.json" --handshake --wait 1.2
s1=$(stats)
while IFS='|' read -r ans outcome status acked name; do
	expect_match "clean source, stateless front, $name: proven, then the application's 200" \
		"$status" " 200 "
done < <(each)
expect_eq "clean source, stateless front: $n first requests admitted and handed off" \
	"$(reason_delta "$s0" "$s1" first_admitted) $(reason_delta "$s0" "$s1" handoff)" "$n $n"

# --- 4. A clean source on the SYN front: plain shapes go to the kernel (weighed, charged on
# the ACK), fragmented SYNs and SYNs with data are dropped before the kernel sees them.
n=$(batch "$NT_DIR/b.json" plain,deep "$OK4" "$OK6" 8080)
s0=$(stats)
run "$NT_DIR/b.json" --handshake --wait 1.2
s1=$(stats)
kd=0
while IFS='|' read -r ans outcome status acked name; do
	if [[ "$KDROP" == *"|${name% :*}|"* ]]; then
		# weighed and passed like any SYN; the kernel drops it as it did unprotected
		kd=$((kd + 1))
		expect_eq "clean source, SYN front, $name: passed on, and dropped by the kernel as unprotected (no answer)" \
			"$ans" None
		continue
	fi
	expect_match "clean source, SYN front, $name: the kernel's handshake, the application's 200" \
		"$ans $status" "^SA .* 200 "
done < <(each)
expect_eq "clean source, SYN front: $n SYNs peeked, $((n - kd)) handshakes charged (the kernel answered those)" \
	"$(reason_delta "$s0" "$s1" syn_peeked) $(reason_delta "$s0" "$s1" passed)" "$n $((n - kd))"
n=$(batch "$NT_DIR/b.json" frag,data "$OK4" "$OK6" 8080)
s0=$(stats) m0=$(mib)
run "$NT_DIR/b.json" --handshake --wait 1.2
m1=$(mib) s1=$(stats)
while IFS='|' read -r ans outcome status acked name; do
	expect_eq "clean source, SYN front, $name: dropped" "$ans" None
done < <(each)
expect_eq "clean source, SYN front: counted as fragment and syn_data" \
	"$(reason_delta "$s0" "$s1" fragment) $(reason_delta "$s0" "$s1" syn_data)" \
	"$(n_kind frag) $(n_kind data)"
expect_eq "clean source, SYN front, fragmented and data SYNs: the kernel saw no TCP segment (in out passive reasm4 reasm6)" \
	"$(mib_delta "$m0" "$m1")" "0 0 0 0 0"

# --- 5. A clean source, shapes the edge cannot judge, and SYN|FIN, SYN|RST: dropped on both
# fronts, never handed to the kernel unjudged.
n=$(batch "$NT_DIR/b.json" cut,bad "$OK4" "$OK6" 80 8080)
s0=$(stats) m0=$(mib)
run "$NT_DIR/b.json" --handshake --wait 1.2
m1=$(mib) s1=$(stats)
while IFS='|' read -r ans outcome status acked name; do
	expect_eq "clean source, $name: dropped" "$ans/$status" "None/None"
done < <(each)
expect_eq "clean source, unjudgeable shapes ($n probes): the kernel saw no TCP segment (in out passive reasm4 reasm6)" \
	"$(mib_delta "$m0" "$m1")" "0 0 0 0 0"
expect_eq "clean source: SYN|FIN and SYN|RST counted as bad_flags" \
	"$(reason_delta "$s0" "$s1" bad_flags)" $((2 * $(n_kind bad)))

# --- 5b. A clean source under more VLAN tags than a reply carries, on the stateless front:
# no cookie SYN-ACK can go back, so the SYN is dropped, counted, and the kernel sees nothing.
n=$(batch "$NT_DIR/b.json" deep "$OK4" "$OK6" 80)
s0=$(stats) m0=$(mib)
run "$NT_DIR/b.json" --handshake --wait 1.2
m1=$(mib) s1=$(stats)
while IFS='|' read -r ans outcome status acked name; do
	expect_eq "clean source, stateless front, $name: dropped" "$ans/$status" "None/None"
done < <(each)
expect_eq "clean source, stateless front, deep tag stacks ($n probes): counted malformed_vlan_depth, the kernel saw no TCP segment" \
	"$(reason_delta "$s0" "$s1" malformed_vlan_depth) $(mib_delta "$m0" "$m1")" "$n 0 0 0 0 0"

# --- 6. UDP, DNS-sized and fragmented, from both sources, to ports protected on TCP (80, 8080)
# and to DNS: every datagram reaches the listener intact.
s0=$(stats) m0=$(mib)
ip netns exec "$NS_C" $PY - "$SERVER_MAC" "$OK4" "$OK6" "$BAD4" "$BAD6" >"$NT_DIR/udp_sent" \
	2>>"$NT_DIR/synprobe.err" <<'EOF'
import hashlib, random, sys
from scapy.all import (Ether, IP, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, Raw, UDP, conf,
                       fragment, fragment6, sendp)
conf.verb = 0
mac, srcs = sys.argv[1], sys.argv[2:]
rng = random.Random(7)
frames = []
for i, src in enumerate(srcs):
    for port in (53, 80, 8080):
        for variant in ("in order", "last first", "ext"):
            if variant == "ext" and ":" not in src:
                continue
            # A DNS answer past the path MTU: 12-byte header, then the records.
            data = bytes([rng.randrange(256), rng.randrange(256), 0x81, 0x80]) + \
                bytes(rng.randrange(256) for _ in range(2400))
            if ":" in src:
                ip = IPv6(src=src, dst="fd00:5::2")
                if variant == "ext":
                    ip = ip / IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt()
                pkt = ip / IPv6ExtHdrFragment(id=rng.getrandbits(32)) / \
                    UDP(sport=5353, dport=port) / Raw(data)
                fr = fragment6(pkt, 1280)
            else:
                pkt = IP(src=src, dst="10.200.0.2", id=rng.getrandbits(16)) / \
                    UDP(sport=5353, dport=port) / Raw(data)
                fr = fragment(pkt, fragsize=1000)
            if variant == "last first":
                fr = fr[::-1]
            frames += [Ether(dst=mac) / f for f in fr]
            print(port, src, len(data), hashlib.sha256(data).hexdigest())
sendp(frames, iface="vc")
EOF
want=$(wc -l <"$NT_DIR/udp_sent")
for _ in $(seq 1 40); do [ "$(wc -l <"$NT_DIR/udp.log")" -ge "$want" ] && break; sleep 0.05; done
m1=$(mib) s1=$(stats)
expect_eq "UDP: $want fragmented datagrams sent (to 53, 80 and 8080, IPv4 and IPv6)" \
	"$([ "$want" -ge 24 ] && echo yes)" yes
expect_eq "UDP: every one reached the listener intact (port, source, length, sha256)" \
	"$(sort "$NT_DIR/udp.log")" "$(sort "$NT_DIR/udp_sent")"
expect_eq "UDP: ... by reassembly in the server's kernel (reasm4 + reasm6)" \
	"$(($(mib_delta "$m0" "$m1" | cut -d' ' -f4) + $(mib_delta "$m0" "$m1" | cut -d' ' -f5)))" "$want"
expect_eq "UDP: the edge dropped no fragment of them" "$(reason_delta "$s0" "$s1" fragment)" 0

tap_done
