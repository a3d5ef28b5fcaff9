#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# End to end on a veth pair: real SYNs from a client namespace against sluiced attached to the
# server veth. Passed SYNs are the ones the server's kernel answered (SYN-ACK or RST, counted
# on the client side); shed ones never reach it. Rates are tiny (one unit per 1000 s) so the
# bursts alone decide, whatever the machine's speed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"

nt_require
nt_setup || { echo "Bail out! cannot build the veth topology"; exit 1; }

cat >"$NT_DIR/asn.csv" <<'EOF'
prefix,asn,class
198.51.100.0/24,64500,hosting
2001:db8:1000::/36,64500,hosting
203.0.113.0/24,64501,residential
2001:db8:2000::/36,64501,residential
192.0.2.0/24,64502,business
EOF

write_conf() { # $1: residential v4_prefix (a bad value makes a broken file)
	cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 80; front = "syn"; action = "drop"; cost = 1; } );
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
EOF
}

answered() { jget "$1" answered; }

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
expect_eq "status: port 80 protected with drop" "$(jget "$st" ports.0.action)" drop
xdp_attached && tap_ok "an XDP program is on vs" || tap_not_ok "an XDP program is on vs"

# 1. A hosting /24 floods from 5 addresses; new keys start with half their burst of 10.
r=$(probe --src 198.51.100.7 --src 198.51.100.8 --src 198.51.100.9 --src 198.51.100.10 \
	--src 198.51.100.11 --count 6)
expect_eq "hosting /24: 30 SYNs from 5 addresses, 5 answered (one key)" "$(answered "$r")" 5
r=$(probe --src 203.0.113.10 --count 8)
expect_eq "residential /32 after the flood: 8 of 8 answered" "$(answered "$r")" 8
s=$(sluicectl stats --json)
expect_eq "stats: hosting shed 25" "$(jget "$s" by_class.hosting.shed)" 25
expect_eq "stats: hosting passed 5" "$(jget "$s" by_class.hosting.passed)" 5
expect_eq "stats: residential passed 8" "$(jget "$s" by_class.residential.passed)" 8
for f in passed shed would_shed malformed state_entries; do
	[ -n "$(jget "$s" $f)" ] && tap_ok "stats --json has $f" || tap_not_ok "stats --json has $f"
done
p=$(sluicectl prefix show 198.51.100.200 --json)
expect_eq "prefix show: class of a hosting address" "$(jget "$p" class)" hosting
expect_eq "prefix show: the /24 key" "$(jget "$p" bucket.key)" 198.51.100.0/24
expect_eq "prefix show: the /16 parent" "$(jget "$p" parent_bucket.key)" 198.51.0.0/16
expect_eq "prefix show: a SYN now would be dropped" "$(jget "$p" decision)" drop
p=$(sluicectl prefix show 203.0.113.10 --json)
expect_eq "prefix show: residential /32 still passes" "$(jget "$p" decision)" pass

# 2. Random /128s inside one residential /64 are one key (burst 20, credit 10).
before=$(jget "$(sluicectl stats --json)" state_entries)
r=$(probe --rotate 2001:db8:2a00:1::/64:128 --count 30 --seed 11)
expect_eq "IPv6 /128 rotation in one /64: 10 of 30 answered" "$(answered "$r")" 10
expect_eq "IPv6 /128 rotation: 30 distinct sources were used" "$(jget "$r" sources)" 30
after=$(jget "$(sluicectl stats --json)" state_entries)
expect_eq "IPv6 /128 rotation added 2 buckets (the /64 and its /48), not 30" \
	"$((after - before))" 2

# 3. A new /64 for every SYN inside one /48: the /48 parent (burst 40, credit 20) stops it.
s0=$(jget "$(sluicectl stats --json)" by_class.residential.shed)
r=$(probe --rotate 2001:db8:2b00::/48:64 --count 40 --seed 12)
expect_eq "IPv6 /64 rotation in one /48: 20 of 40 answered" "$(answered "$r")" 20
s1=$(jget "$(sluicectl stats --json)" by_class.residential.shed)
expect_eq "IPv6 /64 rotation: 20 shed" "$((s1 - s0))" 20
pp=$(sluicectl prefix show 2001:db8:2b00:ffff::1 --json)
expect_eq "prefix show: a fresh /64 in that /48 is shed by its parent" \
	"$(jget "$pp" reason)" shed_parent
expect_eq "prefix show: the IPv6 key is the /64" "$(jget "$pp" bucket.key)" 2001:db8:2b00:ffff::/64
expect_eq "prefix show: the IPv6 parent is the /48" "$(jget "$pp" parent_bucket.key)" \
	2001:db8:2b00::/48

# 4. Monitor mode: everything passes, the excess is counted as would_shed and sampled to
# the event ring like a shed, so an operator sees which prefixes it would shed.
ev="$NT_DIR/events"
sluicectl events --json --count 2000 --timeout 3 >"$ev" &
evpid=$!
sleep 0.5
r=$(probe --src 192.0.2.7 --count 10)
wait $evpid
expect_eq "monitor class: its would-be sheds are on the event ring (8 of 10)" \
	"$(grep '"reason":"would_shed_prefix"' "$ev" | grep -c '"prefix":"192.0.2.7/32"')" 8
expect_eq "monitor class: 10 of 10 answered" "$(answered "$r")" 10
s=$(sluicectl stats --json)
expect_eq "monitor class: 8 would_shed (credit 2 of burst 4)" \
	"$(jget "$s" by_class.business.would_shed)" 8
expect_eq "monitor class: nothing shed" "$(jget "$s" by_class.business.shed)" 0

# 5. A broken config on SIGHUP is reported with file:line and changes nothing.
gen=$(jget "$(sluicectl status --json)" generation)
write_conf 0
kill -HUP "$SLUICED_PID"
for _ in $(seq 1 50); do grep -q "reload rejected" "$NT_DIR/sluiced.log" && break; sleep 0.1; done
expect_match "SIGHUP with a bad file: the log names file:line and the reason" \
	"$(cat "$NT_DIR/sluiced.log")" "$NT_DIR/sluice.conf:12: .*v4_prefix.*out of range"
st=$(sluicectl status --json)
expect_eq "SIGHUP with a bad file: generation unchanged" "$(jget "$st" generation)" "$gen"
expect_eq "SIGHUP with a bad file: the failure is counted" "$(jget "$st" reload_failures)" 1
kill -0 "$SLUICED_PID" 2>/dev/null && tap_ok "sluiced still running" || tap_not_ok "sluiced still running"
r=$(probe --src 198.51.100.50 --count 3)
expect_eq "after the bad reload the hosting /24 is still shed" "$(answered "$r")" 0
out=$(sluicectl reload 2>&1); rc=$?
expect_eq "sluicectl reload with a bad file exits 1" "$rc" 1
expect_match "sluicectl reload prints file:line" "$out" "sluice.conf:12:"
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
r=$(probe --src 192.0.2.99 --count 12)
expect_eq "the datapath follows the new table: 192.0.2.99 gets residential's 10" \
	"$(answered "$r")" 10
sluicectl reload >/dev/null
expect_eq "a reload puts the config's table back" \
	"$(jget "$(sluicectl prefix show 198.51.100.9 --json)" class)" hosting

# 6. Restart keeps state: hand over (SIGQUIT), read from pins, then start again.
nt_stop_sluiced QUIT
st=$(sluicectl status --json)
expect_eq "after handover: daemon not running" "$(jget "$st" daemon_running)" false
xdp_attached && tap_ok "after handover: XDP still attached" || tap_not_ok "after handover: XDP still attached"
s=$(sluicectl stats --json)
expect_eq "stats read from the pins with no daemon" "$(jget "$s" by_class.hosting.passed)" 5
r=$(probe --src 198.51.100.51 --count 2)
expect_eq "with no daemon the datapath still sheds the /24" "$(answered "$r")" 0
nt_start_sluiced || tap_not_ok "sluiced restarts"
expect_match "restart adopts the pinned maps" "$(cat "$NT_DIR/sluiced.log")" "adopted the maps"
r=$(probe --src 198.51.100.52 --count 2)
expect_eq "after restart the /24 is still shed (bucket state kept)" "$(answered "$r")" 0
s=$(sluicectl stats --json)
expect_eq "after restart counters continue" "$(jget "$s" by_class.hosting.shed)" 32
expect_eq "stats: residential shed includes the retyped 192.0.2.99" \
	"$(jget "$s" by_class.residential.shed)" 42
r=$(probe --src 203.0.113.10 --count 1)
expect_eq "after restart the residential /32 still passes" "$(answered "$r")" 1

# 7. A crash (SIGKILL) also keeps state; SIGTERM then detaches and removes the pins.
nt_stop_sluiced KILL
nt_start_sluiced || tap_not_ok "sluiced restarts after SIGKILL"
r=$(probe --src 198.51.100.53 --count 2)
expect_eq "after a crash and restart the /24 is still shed" "$(answered "$r")" 0
nt_stop_sluiced TERM
xdp_attached && tap_not_ok "SIGTERM detaches XDP" || tap_ok "SIGTERM detaches XDP"
[ -e "$PIN/sl_buckets" ] && tap_not_ok "SIGTERM removes the pins" || tap_ok "SIGTERM removes the pins"
r=$(probe --src 198.51.100.54 --count 2)
expect_eq "detached: the server answers everything" "$(answered "$r")" 2

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

tap_done
