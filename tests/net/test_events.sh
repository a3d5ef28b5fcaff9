#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The edge's events fanned out by sluiced (issue 17, item 3: `sluicectl events` lost 44-56 %
# of its events whenever `sluicectl top` had run, both consuming the one ring). sluiced is the
# ring's only reader and hands every event to each of its readers, each with its own bounded
# queue. Against a sluiced on the server veth of the netns topology, one SYN-front port (8080,
# drop) and a block verdict on 198.51.100.0/24, so that every spoofed SYN from it (hping3) is
# shed with one event (event_sample 1). Covers:
#   1. two `events --json` and a `top --json` at once see the same events of a flood from
#      four addresses (10000 SYNs): each reader every one of them (what the ring had no room
#      for, events_lost, aside: none, here), per address, and top's window the same counts;
#   2. a reader stopped (SIGSTOP) through a flood costs the others nothing: they get every
#      event while it sleeps; once it runs again it is told what it lost ("dropped" lines),
#      and what it printed plus what it lost is the whole flood;
#   3. a reader killed while stopped, with its queue full, leaves nothing: sluiced's fd count
#      is back where it was, its memory does not grow over repeated stalls and kills;
#   (status counts the readers and what they lost;)
#   4. a careless or hostile client: `events bogus` refused; readers past the cap refused,
#      the daemon and the readers it has unaffected; no daemon: `events` says it reads the
#      pinned ring itself.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"

nt_require
if [ ! -x "$BUILD/sluiced" ] || [ ! -x "$BUILD/sluicectl" ]; then
	echo "Bail out! build sluiced and sluicectl first (make)"
	exit 1
fi
command -v hping3 >/dev/null || { echo "1..0 # SKIP hping3 missing"; exit 0; }
nt_setup || { echo "Bail out! cannot build the veth topology"; exit 1; }

BLOCKED=198.51.100.0/24
cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 8080; front = "syn"; action = "drop"; cost = 1; } );
  state_entries = 4096;
  pin_path = "$PIN";
  event_sample = 1;
};
classes = ( { name = "unknown"; rate = 1.0; burst = 100.0; } );
daemon: { control_socket = "$SOCK"; };
EOF
nt_start_sluiced || { echo "Bail out! sluiced did not start"; exit 1; }
sluicectl verdict add $BLOCKED --action block --ttl 10m --reason "events test" >/dev/null

stat_of() { jget "$(sluicectl stats --json)" "$1"; }
# flood N ADDR: N spoofed SYNs from ADDR to the SYN front, 20000 a second.
flood() {
	ip netns exec "$NS_C" hping3 -q -S -p 8080 -a "$2" -c "$1" -i u50 10.200.0.2 \
		>/dev/null 2>&1
}
# The four addresses and how many SYNs each sends: 10000 in all.
FLOOD="198.51.100.1:4000 198.51.100.2:3000 198.51.100.3:2000 198.51.100.4:1000"
flood_all() { local x; for x in $FLOOD; do flood "${x#*:}" "${x%:*}"; done; }
# wait_stream PID: until the reader PID has its epoll fd (made once sluiced said ok).
wait_stream() {
	local i
	for i in $(seq 1 150); do
		ls -l "/proc/$1/fd" 2>/dev/null | grep -q eventpoll && return 0
		sleep 0.02
	done
	return 1
}
# per_addr FILE: "ADDR COUNT" lines, sorted, of the shed_verdict events in FILE (JSON lines).
per_addr() {
	$PY -c 'import json, sys, collections
c = collections.Counter()
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d.get("reason") == "shed_verdict":
        c[d["prefix"]] += 1
for k in sorted(c): print(k, c[k])' "$1"
}
nfd() { ls "/proc/$SLUICED_PID/fd" | wc -l; }
# cpu_ms: sluiced's CPU time so far (user + system), in ms.
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{print int(($14 + $15) * 1000 / hz)}' "/proc/$SLUICED_PID/stat"; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$SLUICED_PID/status"; }
expected="198.51.100.1/32 4000
198.51.100.2/32 3000
198.51.100.3/32 2000
198.51.100.4/32 1000"

# ---- 1. three readers at once see the same events ----------------------------------------------
# What the flood costs sluiced with nobody reading (the hub drains the ring all the same).
c0=$(cpu_ms)
flood_all
cpu_none=$(($(cpu_ms) - c0))
fd0=$(nfd)
lost0=$(stat_of events_lost)
s0=$(stat_of by_reason.shed_verdict)
"$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" events --json --timeout 60 >"$NT_DIR/a" \
	2>"$NT_DIR/a.err" &
pa=$!
"$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" events --json --timeout 60 >"$NT_DIR/b" \
	2>"$NT_DIR/b.err" &
pb=$!
wait_stream $pa && wait_stream $pb
expect_eq "two readers streaming: sluiced holds two more fds" "$(nfd)" $((fd0 + 2))
expect_eq "  ... and status --json counts 2 readers" \
	"$(jget "$(sluicectl status --json)" events.readers)" 2
# top asks for the top shed prefixes every 0.5 s throughout (it used to drain the ring).
"$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" top --json --interval 0.5 -n 40 >"$NT_DIR/top" \
	2>"$NT_DIR/top.err" &
pt=$!
sleep 0.7
c0=$(cpu_ms)
flood_all
cpu_three=$(($(cpu_ms) - c0))
s1=$(stat_of by_reason.shed_verdict)
lost1=$(stat_of events_lost)
shed=$((s1 - s0))
lost=$((lost1 - lost0))
expect_eq "the flood: 10000 SYNs shed by the verdict" "$shed" 10000
expect_eq "  ... the ring had room for every event (events_lost +$lost)" "$lost" 0
# Each reader has had every event once its count stops moving.
for _ in $(seq 1 50); do
	[ "$(wc -l <"$NT_DIR/a")" -ge $((shed - lost)) ] &&
		[ "$(wc -l <"$NT_DIR/b")" -ge $((shed - lost)) ] && break
	sleep 0.1
done
sleep 1.2 # two more top frames
kill -INT $pa $pb $pt
wait $pa $pb $pt
expect_eq "reader A: every event ($((shed - lost)) lines)" "$(wc -l <"$NT_DIR/a")" $((shed - lost))
expect_eq "reader B: every event" "$(wc -l <"$NT_DIR/b")" $((shed - lost))
expect_eq "reader A: per address, what each sent" "$(per_addr "$NT_DIR/a")" "$expected"
expect_eq "reader B: the same" "$(per_addr "$NT_DIR/b")" "$expected"
expect_eq "  ... A and B identical, line for line" "$(cmp -s "$NT_DIR/a" "$NT_DIR/b" && echo same)" same
expect_eq "  ... neither was told it lost any" \
	"$(cat "$NT_DIR/a" "$NT_DIR/b" | grep -c '"dropped"')" 0
top_counts=$(tail -1 "$NT_DIR/top" | $PY -c 'import json, sys
d = json.loads(sys.stdin.read())
for p in sorted(d["top_shed_prefixes"] or [], key=lambda p: p["prefix"]):
    if p["reason"] == "shed_verdict":
        print(p["prefix"], int(p["shed_in_window"]))')
expect_eq "top, asking all along: its window has the same counts per address" "$top_counts" \
	"$expected"
expect_eq "the readers gone: sluiced's fds are back to $fd0" "$(nfd)" "$fd0"
tap_diag "sluiced's CPU for a flood of 10000 events: ${cpu_none} ms with no reader, ${cpu_three} ms with two events readers and top"

# ---- 2. a stopped reader costs the others nothing ----------------------------------------------
"$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" events --json --timeout 60 >"$NT_DIR/a" 2>/dev/null &
pa=$!
"$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" events --timeout 60 >"$NT_DIR/c" 2>"$NT_DIR/c.err" &
pc=$!
wait_stream $pa && wait_stream $pc
kill -STOP $pc
s0=$(stat_of by_reason.shed_verdict)
lost0=$(stat_of events_lost)
flood_all
t0=$(date +%s%N)
s1=$(stat_of by_reason.shed_verdict)
lost1=$(stat_of events_lost)
n=$(((s1 - s0) - (lost1 - lost0)))
for _ in $(seq 1 50); do
	[ "$(wc -l <"$NT_DIR/a")" -ge "$n" ] && break
	sleep 0.1
done
ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "while C is stopped, A gets every event of the flood ($n)" "$(wc -l <"$NT_DIR/a")" "$n"
expect_eq "  ... per address" "$(per_addr "$NT_DIR/a")" "$expected"
expect_le "  ... within 1 s of its end ($ms ms after)" "$ms" 1000
kill -CONT $pc
sleep 1
kill -INT $pa $pc
wait $pa $pc
ev_c=$(grep -c 'shed_verdict' "$NT_DIR/c")
lost_c=$(sed -n 's/.* dropped \([0-9]*\) events: this reader fell behind.*/\1/p' "$NT_DIR/c" |
	awk '{s += $1} END {print s + 0}')
expect_ge "C, stopped, was told it lost events ($lost_c)" "$lost_c" 1
expect_eq "  ... what it printed ($ev_c) and what it lost add up to the flood" \
	$((ev_c + lost_c)) "$n"
expect_match "  ... and says so on stderr at the end" "$(cat "$NT_DIR/c.err")" \
	"this reader fell behind and lost $lost_c events"
expect_eq "  ... A lost none" "$(grep -c '"dropped"' "$NT_DIR/a")" 0
st=$(sluicectl status --json)
expect_eq "status --json: events.dropped is what C lost ($lost_c)" "$(jget "$st" events.dropped)" \
	"$lost_c"
expect_eq "  ... no readers left" "$(jget "$st" events.readers)" 0
expect_match "  ... the text says so too" "$(sluicectl status)" \
	"^events: +[0-9]+ read off the ring, 0 readers now, $lost_c lost by readers that fell behind$"

# ---- 3. a reader killed while stopped leaves nothing behind ----------------------------------------
stall_and_kill() {
	"$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" events --timeout 60 >/dev/null 2>&1 &
	local p=$!
	wait_stream $p
	kill -STOP $p
	flood_all
	kill -KILL $p
	wait $p 2>/dev/null
	sleep 0.3
}
fd0=$(nfd)
stall_and_kill
expect_eq "a reader killed while stopped, its queue full: sluiced's fds are back to $fd0" \
	"$(nfd)" "$fd0"
rss1=$(rss_kib)
stall_and_kill
stall_and_kill
stall_and_kill
rss4=$(rss_kib)
expect_eq "  ... and after three more: $fd0" "$(nfd)" "$fd0"
expect_le "  ... its memory did not grow with them (RSS ${rss1} -> ${rss4} KiB, at most +1024)" \
	"$rss4" $((rss1 + 1024))
kill -0 "$SLUICED_PID" && tap_ok "sluiced is still running" || tap_not_ok "sluiced is still running"

# ---- 4. careless and hostile clients ---------------------------------------------------------------
ans=$($PY - "$SOCK" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"events bogus\n")
print(s.recv(200).decode().strip())
EOF
)
expect_eq "'events bogus' on the control socket is refused" "$ans" "error usage: events [json] [backlog]"
# 32 readers that never read (the cap), then one more.
out=$($PY - "$SOCK" <<'EOF'
import socket, sys, time
held = []
for i in range(32):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(b"events\n")
    held.append(s)
    assert s.recv(100).startswith(b"ok"), i
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"events\n")
print(s.recv(200).decode().strip())
EOF
)
expect_eq "the 33rd reader at once is refused" "$out" "error 32 event readers already; close one first"
sleep 0.3
expect_eq "  ... once they close, sluiced's fds are back to $fd0" "$(nfd)" "$fd0"
run_json() { "$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" "$@" 2>&1; }
expect_match "  ... and it answers as before" "$(run_json status)" "daemon: +running"

nt_stop_sluiced QUIT
out=$("$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" events --timeout 0.5 2>&1 >/dev/null)
expect_match "no sluiced: events says it reads the pinned ring itself" "$out" \
	"sluiced is not answering on .*: reading the pinned event ring directly"

tap_done
