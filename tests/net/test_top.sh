#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# `sluicectl top` against a live sluiced with an edge (XDP on the server veth) and a gateway
# (on the server namespace's loopback), driven inside a detached tmux session:
#  - plain mode (stdout not a terminal): text frames with no escape bytes, --once, -n, --json;
#  - at 80x24 (COLUMNS and LINES): while a /32 of a monitor-mode class connects far past its
#    budget, one frame of at most 24 lines, none past 80 columns, keeps the shed and p99
#    columns and shows the /32's would-be sheds as would-shed (its own column and summary
#    part, not "other"); rates in the unit that reads best ("3.6/h", not 0.001/s), there and in
#    prefix show, while --json keeps the numbers;
#  - on the terminal: while a hosting /24 opens connections far past its budget and a login
#    flood runs at 8x one tenant's reservation, the captured pane has the tenant's row and the
#    prefix's row with its class and reason. The /24's connections prove their source first
#    (scapy completes each handshake, tests/lib/edge_probe.py: verify, then charge): its
#    first few are charged and admitted, and once they have emptied its bucket the SYN front
#    sheds its SYNs at once;
#  - q, Ctrl-C and SIGTERM each end it with status 0 and give the terminal back (the normal
#    screen, canonical mode and echo); a daemon that goes away ends it with status 1 and a
#    clear message, the terminal restored too.
# Traffic stays inside the namespaces the test creates. SL_DEBUG=1 leaves everything up.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"

if ! command -v tmux >/dev/null; then
	echo "1..0 # SKIP tmux not installed"
	exit 0
fi
nt_require
if [ ! -x "$BUILD/sluiced" ] || [ ! -x "$BUILD/sluicectl" ]; then
	echo "Bail out! build sluiced and sluicectl first (make)"
	exit 1
fi
nt_setup || { echo "Bail out! cannot build the veth topology"; exit 1; }
# Port 80 runs the SYN front, which passes a SYN with room to the kernel: a real listener
# makes the request sockets whose handshakes the edge then charges.
nt_http_server || { echo "Bail out! no HTTP server on port 80"; exit 1; }

# A private tmux server, gone with the rest.
TMUX_SOCK=sluice-top-$$
tm() { tmux -L "$TMUX_SOCK" "$@"; }
top_teardown() {
	[ "${SL_DEBUG:-0}" = 1 ] || tm kill-server 2>/dev/null
	nt_teardown
}
trap top_teardown EXIT

free_port() {
	ip netns exec "$NS_S" $PY -c \
		'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
GW_PORT=$(free_port)
M_PORT=$(free_port)

cat >"$NT_DIR/asn.csv" <<'EOF'
prefix,asn,class
198.51.100.0/24,64500,hosting
203.0.113.0/24,64501,residential
EOF

# The SYN front on port 80: a connection there costs the port's 1. On the stateless front
# (the default) a first request is charged its route, and the login route's 450 units would
# be more than these bursts of 10 and 20 hold (the config check refuses that).
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
  { name = "residential"; v4_prefix = 32; v6_prefix = 64; v4_parent = 24; v6_parent = 48;
    rate = 0.001; burst = 20.0; parent_rate = 0.001; parent_burst = 40.0; mode = "monitor"; },
  { name = "unknown"; rate = 0.001; burst = 10.0; }
);
tenants = (
  { name = "default"; reservation = 0.0; },
  { name = "quiet"; hosts = ["quiet.test"]; reservation = 1500.0; },
  { name = "noisy"; hosts = ["noisy.test"]; reservation = 1500.0; }
);
routes = (
  { name = "login"; method = "POST"; path = "/login"; cpu = 450.0; }
);
gateway: {
  listen = "127.0.0.1:$GW_PORT";
  credentials = "$NT_DIR/creds.txt";
  capacity = { cpu = 10000.0; db = 4.0; };
  argon2 = { m_cost_kib = 1024; t_cost = 60; parallelism = 1; memory_budget_mib = 1; };
  queue = { target_wait_ms = 500; lifo_after_ms = 100; codel_interval_ms = 100;
            default_deadline_ms = 3000; max_deadline_ms = 5000; };
  trusted_hops = 1;
  reject_floor_ms = 0;
};
counters: { login_failures = { enabled = false; }; login_successes = { enabled = false; }; };
daemon: { control_socket = "$SOCK"; metrics_listen = "127.0.0.1:$M_PORT"; };
EOF
: >"$NT_DIR/creds.txt"
chmod 600 "$NT_DIR/creds.txt"
for who in "quiet alice pw-a" "noisy bob pw-b"; do
	set -- $who
	echo "$3" | sluicectl user add "$1" "$2" >/dev/null || { echo "Bail out! user add $1"; exit 1; }
done

# The login flood: noisy at 8x its reservation (1500 units/s = 3.3 logins/s at 450) from 24
# clients, quiet at one a second, for $1 seconds, against the server namespace's loopback.
cat >"$NT_DIR/flood.py" <<'PYEOF'
import http.client, sys, threading, time
PORT, SECS = int(sys.argv[1]), float(sys.argv[2])
def paced(host, body, rate, xff):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    start, n = time.monotonic(), 0
    while True:
        due = start + n / rate
        if due > start + SECS:
            break
        if due > time.monotonic():
            time.sleep(due - time.monotonic())
        try:
            c.request("POST", "/login", body=body, headers={
                "Host": host, "X-Forwarded-For": xff,
                "Content-Type": "application/x-www-form-urlencoded"})
            c.getresponse().read()
        except Exception:
            c.close()
            c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
        n += 1
    c.close()
th = [threading.Thread(target=paced, args=("quiet.test", "username=alice&password=pw-a",
                                           1.0, "192.0.2.200"))]
th += [threading.Thread(target=paced, args=("noisy.test", "username=bob&password=pw-b",
                                            26.7 / 24, "10.9.0.%d" % (i + 1)))
       for i in range(24)]
for t in th:
    t.start()
for t in th:
    t.join()
PYEOF
flood_logins() { ip netns exec "$NS_S" $PY "$NT_DIR/flood.py" "$GW_PORT" "$1" >/dev/null 2>&1; }

if ! nt_start_sluiced; then
	echo "Bail out! sluiced did not start"
	exit 1
fi

# sluicectl in the server's network namespace (for /metrics on its loopback), in the root
# mount namespace (for the pins).
TOP=(nsenter --net="/run/netns/$NS_S" "$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" top)

# A rate on a frame: a number and and its unit ("26/s", "53/min", "12.3k/s", "0.95/s"), or 0 alone;
# NZ: one that is not 0.
RATE='(0|[1-9][0-9.,]*k?/(s|min|h|d)|0\.[0-9]+/(s|d))'
NZ='[1-9][0-9.,]*k?/(s|min|h|d)'

# ---- plain mode ------------------------------------------------------------------------
out=$("${TOP[@]}" --once --interval 0.5); rc=$?
expect_eq "top --once (not a terminal) exits 0" "$rc" 0
expect_eq "top --once prints no escape byte" "$(grep -c $'\033' <<<"$out")" 0
expect_eq "top --once prints one frame" "$(grep -c '^sluice top - ' <<<"$out")" 1
expect_match "top --once has the XDP decisions" "$out" '^XDP +passed .* shed .* would-shed '
expect_match "top --once has the tenants table" "$out" '^TENANT +SHED +ADMIT +WAIT p99 +SVC p99'
expect_match "top --once has the top shed prefixes" "$out" '^TOP SHED PREFIXES'
expect_match "top --once reads goodput from /metrics" "$out" '^GW .* goodput '
out=$("${TOP[@]}" -n 2 --interval 0.3 | cat); rc=$?
expect_eq "top -n 2 through a pipe prints two frames" "$(grep -c '^sluice top - ' <<<"$out")" 2
expect_eq "top -n 2 through a pipe prints no escape byte" "$(grep -c $'\033' <<<"$out")" 0
js=$("${TOP[@]}" --json --interval 0.3)
expect_eq "top --json: the tenant table" "$(jget "$js" tenants.0.name | grep -c .)" 1
expect_match "top --json: XDP rates by reason" "$(jget "$js" xdp_pps)" '"shed_prefix"'
expect_eq "top --json: goodput measured" "$(jget "$js" gateway.goodput_measured)" true

# ---- at 80x24, a monitor-mode class over its budget -------------------------------------
# 203.0.113.7 is residential, in monitor mode: its /32's bucket (burst 20) has a new key's
# credit of 10, so from the 11th of these connections on the edge would shed each and, being
# in monitor mode, passes it as would_shed_prefix. 250 of them, one every 40 ms: ten seconds
# and more of would-be sheds, long enough for the frames below whatever the machine's load.
ip netns exec "$NS_C" $PY "$ROOT/tests/lib/edge_probe.py" --iface vc --dmac "$SERVER_MAC" \
	--dst 10.200.0.2 --src 203.0.113.7 --count 250 --gap 0.04 >"$NT_DIR/monitor.json" 2>&1 &
MON=$!
# Until top's own --json sees them (the numbers stay numbers there).
w=0
for _ in $(seq 1 40); do
	js=$("${TOP[@]}" --json --interval 0.3)
	w=$(jget "$js" xdp_pps.would_shed_prefix)
	$PY -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)' "${w:-0}" 2>/dev/null &&
		break
done
expect_match "top --json: would-be sheds per second, as a plain number" "$w" '^[0-9]+(\.[0-9]+)?$'
small=$(COLUMNS=80 LINES=24 "${TOP[@]}" --once --interval 1); rc=$?
wide=$("${TOP[@]}" --once --interval 1)
wait "$MON"
expect_eq "80x24: top --once exits 0" "$rc" 0
widest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' <<<"$small")
expect_le "80x24: no line is wider than 80 columns (widest: $widest)" "$widest" 80
expect_le "80x24: the frame has at most 24 lines" "$(wc -l <<<"$small")" 24
expect_match "80x24: the XDP summary keeps passed, shed and would-shed" "$small" \
	"^XDP +passed $RATE +shed $RATE +would-shed $NZ( |\$)"
expect_match "80x24: the class table keeps PASSED, SHED and WOULD-SHED" "$small" \
	'^CLASS .* PASSED +SHED +WOULD-SHED( |$)'
expect_match "80x24: the monitor-mode class's would-be sheds in their own column" "$small" \
	"^residential +monitor +$RATE +0 +$NZ( |\$)"
expect_match "80x24: the tenants table keeps the shed and latency columns" "$small" \
	'^TENANT +SHED +ADMIT +WAIT p99 +SVC p99( |$)'
expect_match "80x24: each tenant's row has its shed rate and its p99s" "$small" \
	"^quiet +$RATE +$RATE +(<=|>|-)[^ ]* +(<=|>|-)[^ ]*( |\$)"
expect_match "80x24: the reasons name the would-be sheds" "$small" \
	"by reason:.* would_shed_prefix $NZ"
expect_match "80x24: the prefixes keep their heading" "$small" '^PREFIX +CLASS +REASON '
# Narrower still, what matters least goes first, whole columns at a time.
narrow=$(COLUMNS=50 LINES=30 "${TOP[@]}" --once --interval 0.5)
widest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' <<<"$narrow")
expect_le "50 columns: no line is wider (widest: $widest)" "$widest" 50
expect_match "50 columns: the tenants keep SHED, ADMIT, the p99s and GOOD, no more" "$narrow" \
	'^TENANT +SHED +ADMIT +WAIT p99 +SVC p99 +GOOD$'
expect_match "50 columns: the XDP summary keeps passed, shed and would-shed" "$narrow" \
	"^XDP +passed $RATE +shed $RATE +would-shed $RATE( |\$)"
expect_match "wide: every tenant column, SHED TOTAL last" "$wide" \
	'^TENANT +SHED +ADMIT +WAIT p99 +SVC p99 +GOOD +USING/RESERVED +THRU +SHED TOTAL$'
expect_match "wide: the class's key budget as a person says it (0.001/s is 3.6/h)" "$wide" \
	"^residential +monitor +$RATE +0 +$RATE +3\.6/h\$"
widest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' <<<"$wide")
expect_ge "wide: without COLUMNS a frame through a pipe is not cut to 80 (widest: $widest)" \
	"$widest" 81
[ "$rc" = 0 ] && grep -q '^residential ' <<<"$small" || tap_diag "$small"
tap_diag "the /32's connections: $(cat "$NT_DIR/monitor.json")"
out=$("$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" prefix show 203.0.113.7)
expect_match "prefix show: the key's refill as a person says it" "$out" '^key .* refills 3\.6/h$'
js=$("$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" prefix show 203.0.113.7 --json)
expect_eq "prefix show --json: the refill stays a number" "$(jget "$js" bucket.rate)" 0.001

# ---- on a terminal -------------------------------------------------------------------------
tm new-session -d -x 200 -y 50 -s top "env PS1='topshell\$ ' TERM=xterm bash --norc --noprofile -i"
pane() { tm capture-pane -p -t top; }
wait_pane() { # wait_pane REGEX SECONDS
	local i
	for i in $(seq 1 $(($2 * 10))); do
		pane | grep -Eq -- "$1" && return 0
		sleep 0.1
	done
	return 1
}
wait_file() { # wait_file PATH SECONDS
	local i
	for i in $(seq 1 $(($2 * 10))); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
wait_pane 'topshell\$' 5 || tap_diag "$(pane)"
# run_top N: start top in the pane; its pid in $NT_DIR/pidN, its exit status in $NT_DIR/rcN
run_top() {
	tm send-keys -t top "clear; sh -c 'echo \$\$ >$NT_DIR/pid$1; exec ${TOP[*]} --interval 0.5'; " \
		"echo rc=\$? >$NT_DIR/rc$1; stty -a >$NT_DIR/stty$1" Enter
	wait_pane '^TENANT +SHED +ADMIT' 10
}
# restored N: top N is gone and the terminal is as it was
restored() {
	local s
	wait_file "$NT_DIR/stty$1" 5
	s=$(cat "$NT_DIR/stty$1" 2>/dev/null)
	expect_match "top $1: canonical mode and echo are back" "$s" '(^| )icanon .* echo '
	wait_pane 'topshell\$ *$' 5
	expect_match "top $1: the shell's prompt is on the normal screen" "$(pane)" 'topshell\$ *$'
	if pane | grep -q 'TOP SHED PREFIXES'; then
		tap_not_ok "top $1: its frame is gone with the alternate screen"
		tap_diag "$(pane)"
	else
		tap_ok "top $1: its frame is gone with the alternate screen"
	fi
}

if run_top 1; then tap_ok "top 1 draws a frame in the pane"; else
	tap_not_ok "top 1 draws a frame in the pane"; tap_diag "$(pane)"; fi
# Both floods run while the pane is read, so the rates on it are live.
flood_logins 8 &
FLOOD=$!
# The /24's connections, 30 per round from 3 addresses, each round's outcome in syns.N.
(
	end=$((SECONDS + 8)) n=0
	while [ $SECONDS -lt $end ]; do
		n=$((n + 1))
		ip netns exec "$NS_C" $PY "$ROOT/tests/lib/edge_probe.py" --iface vc \
			--dmac "$SERVER_MAC" --dst 10.200.0.2 --src 198.51.100.7 --src 198.51.100.8 \
			--src 198.51.100.9 --count 10 --gap 0.02 --seed $n >"$NT_DIR/syns.$n"
	done
) &
SYNS=$!
ok=0
for _ in $(seq 1 50); do
	p=$(pane)
	grep -Eq '^noisy +[1-9]' <<<"$p" &&
		grep -Eq '^198\.51\.100\.0/24 +hosting +shed_prefix +drop +80 +[1-9]' <<<"$p" &&
		grep -Eq '^hosting +enforce +[^ ]+ +[1-9]' <<<"$p" && ok=1 && break
	sleep 0.2
done
expect_match "pane: the noisy tenant's row, shed now" "$p" \
	"^noisy +$NZ +$RATE +(<=|>|-)[^ ]* +(<=|>|-)[^ ]* +$RATE +[0-9]+/1500 +[0-9]+% +$RATE "
expect_match "pane: the noisy tenant's sheds so far (last column)" \
	"$(grep -E '^noisy ' <<<"$p")" ' [1-9][0-9k.]*$'
expect_match "pane: the quiet tenant's row, never shed" "$p" '^quiet +0 .* 0$'
expect_match "pane: the shed prefix row with class, reason, action, port and rate" "$p" \
	"^198\.51\.100\.0/24 +hosting +shed_prefix +drop +80 +$NZ +[1-9]"
expect_match "pane: XDP shed pps by reason" "$p" "by reason:.* shed_prefix $NZ"
expect_match "pane: the hosting class's row: enforcing, shed now, no would-be sheds" "$p" \
	"^hosting +enforce +$RATE +$NZ +0 +3\.6/h\$"
expect_match "pane: tenants come sorted by shed rate (noisy first)" \
	"$(grep -A1 '^TENANT ' <<<"$p" | tail -1)" '^noisy '
[ "$ok" = 1 ] || tap_diag "$p"
wait "$FLOOD" "$SYNS"
# What the /24 got over the whole flood: its bucket's new-key credit (5 of burst 10, the rate a
# unit per 1000 s) in admitted connections, each charged at the ACK that proved it; nothing
# after that, whatever the rounds' SYNs and handshakes raced.
sum=$(cat "$NT_DIR"/syns.* | $PY -c 'import json, sys
rs = [json.loads(l) for l in sys.stdin if l.strip()]
print(sum(r["sent"] for r in rs), sum(r["admitted"] for r in rs))')
tap_diag "the /24's rounds: $(ls "$NT_DIR"/syns.* | wc -l), connections tried and admitted: $sum"
expect_ge "the /24 tried many connections" "${sum% *}" 30
expect_eq "  ... and had its credit of 5 admitted, no more" "${sum#* }" 5
if grep -q $'\033' <<<"$p"; then tap_not_ok "capture has no stray escapes"; else
	tap_ok "capture has no stray escapes"; fi

tm send-keys -t top q
wait_file "$NT_DIR/rc1" 5
expect_eq "q: top exits with status 0" "$(cat "$NT_DIR/rc1" 2>/dev/null)" rc=0
kill -0 "$(cat "$NT_DIR/pid1")" 2>/dev/null && tap_not_ok "q: the process is gone" ||
	tap_ok "q: the process is gone"
restored 1

# The terminal at 80x24: top lays its frame out for the size the terminal reports. tmux
# wraps a line that is too long; -J joins it again, so a wrapped line shows as one past 80.
tm resize-window -t top -x 80 -y 24
run_top 2 || tap_diag "$(pane)"
wait_pane '^  by reason:' 5
p=$(tm capture-pane -p -J -t top)
widest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' <<<"$p")
expect_le "80x24 terminal: no line wraps (widest: $widest)" "$widest" 80
expect_match "80x24 terminal: the frame starts on the first row (nothing scrolled)" \
	"$(head -1 <<<"$p")" '^sluice top - '
expect_match "80x24 terminal: the tenants keep the shed and latency columns" "$p" \
	'^TENANT +SHED +ADMIT +WAIT p99 +SVC p99( |$)'
expect_match "80x24 terminal: the XDP summary has would-shed" "$p" \
	"^XDP +passed $RATE +shed $RATE +would-shed $RATE( |\$)"
tm send-keys -t top C-c
wait_file "$NT_DIR/rc2" 5
expect_eq "Ctrl-C: top exits with status 0" "$(cat "$NT_DIR/rc2" 2>/dev/null)" rc=0
restored 2

run_top 3 || tap_diag "$(pane)"
kill -TERM "$(cat "$NT_DIR/pid3")"
wait_file "$NT_DIR/rc3" 5
expect_eq "SIGTERM: top exits with status 0" "$(cat "$NT_DIR/rc3" 2>/dev/null)" rc=0
restored 3

run_top 4 || tap_diag "$(pane)"
nt_stop_sluiced TERM
wait_file "$NT_DIR/rc4" 10
expect_eq "lost daemon: top exits with status 1" "$(cat "$NT_DIR/rc4" 2>/dev/null)" rc=1
expect_match "lost daemon: it says so" "$(pane)" "sluicectl: lost sluiced on $SOCK"
restored 4

out=$("${TOP[@]}" --once 2>&1); rc=$?
expect_eq "no daemon: top exits 1" "$rc" 1
expect_match "no daemon: top says why" "$out" "sluiced is not answering on $SOCK"

tap_done
