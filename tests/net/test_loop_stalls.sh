#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Heavy control work never stalls the event loop (issue 16, "loop stalls"). One sluiced runs
# an edge (XDP on the server veth) and a gateway (on the server namespace's loopback) in the
# same loop. A poller asks the gateway GET /token/validate every 10 ms and records the
# longest wait between two answers while:
#  - `sluicectl asn load` installs a 500,000-row table (it used to block the loop ~1.8 s);
#  - a 500,000-row file with one bad line is refused (file:line, the table in force stays);
#  - a burst of 20 SIGHUPs reloads a config whose asn_table is that big table (each reload
#    re-read it on the loop: the burst stalled it for tens of seconds) - and the burst is
#    coalesced: one reload in flight and one pending, never 20;
#  - `sluicectl reload` answers with the outcome of a reload that began after it asked, and
#    a broken file is still refused with file:line, changing nothing.
#  - three `sluicectl reload`s with a 3-row table (each used to stall the loop ~250 ms);
#  - a stop during an ASN load answers the asker that nothing changed.
# The bounds (LOOP_GAP_MS 300 ms, RELOAD_GAP_MS 150 ms for the small reloads) are the
# poller's own 10 ms pace plus scheduling on a small machine; the stalls they catch were
# 1.3 s (the asn load), 25 s (the SIGHUPs) and 250 ms (each small reload).
# SL_DEBUG=1 leaves everything up.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"

nt_require
if [ ! -x "$BUILD/sluiced" ] || [ ! -x "$BUILD/sluicectl" ]; then
	echo "Bail out! build sluiced and sluicectl first (make)"
	exit 1
fi
nt_setup || { echo "Bail out! cannot build the veth topology"; exit 1; }

LOOP_GAP_MS=${LOOP_GAP_MS:-300}
RELOAD_GAP_MS=${RELOAD_GAP_MS:-150}
ROWS=${ROWS:-500000}
GW_PORT=$(ip netns exec "$NS_S" $PY -c \
	'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# The table in force at the start: 198.18.7.0/24 is hosting here, business in the big one.
cat >"$NT_DIR/small.csv" <<'EOF'
prefix,asn,class
198.51.100.0/24,64500,hosting
198.18.7.0/24,64500,hosting
203.0.113.0/24,64501,residential
EOF

# gen_asn FILE ROWS [BAD_LINE]: ROWS random rows (IPv4 /12../24 and IPv6 /32../48, every
# class), 198.18.7.0/24 as business last; with BAD_LINE, that line names no class there is.
gen_asn() {
	$PY - "$@" <<'PYEOF'
import random, sys
path, rows = sys.argv[1], int(sys.argv[2])
bad = int(sys.argv[3]) if len(sys.argv) > 3 else 0
rnd = random.Random(16)
classes = ("hosting", "residential", "business")
with open(path, "w") as f:
    f.write("prefix,asn,class\n")
    line = 1
    for i in range(rows - 1):
        line += 1
        if line == bad:
            f.write("203.0.113.0/24,64501,nosuchclass\n")
            continue
        if i % 8:
            plen = rnd.randint(12, 24)
            a = rnd.getrandbits(32) & ~((1 << (32 - plen)) - 1)
            pfx = "%d.%d.%d.%d/%d" % (a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255, plen)
        else:
            plen = rnd.randint(32, 48)
            a = (0x2a00 << 112 | rnd.getrandbits(112)) & ~((1 << (128 - plen)) - 1)
            pfx = ":".join("%x" % ((a >> (112 - 16 * k)) & 0xffff) for k in range(8)) + "/%d" % plen
        f.write("%s,%d,%s\n" % (pfx, 64512 + rnd.randrange(100000), rnd.choice(classes)))
    f.write("198.18.7.0/24,64999,business\n")
PYEOF
}

write_conf() { # $1: the ASN table; $2: residential v4_prefix (0 makes a broken file)
	cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 80; front = "syn"; action = "drop"; cost = 1; } );
  state_entries = 4096;
  asn_table = "$1";
  pin_path = "$PIN";
};
classes = (
  { name = "hosting"; v4_prefix = 24; v6_prefix = 48; v4_parent = 16; v6_parent = 32;
    rate = 1000.0; burst = 1000.0; parent_rate = 1000.0; parent_burst = 1000.0; },
  { name = "residential"; v4_prefix = $2; v6_prefix = 64; v4_parent = 24; v6_parent = 48;
    rate = 1000.0; burst = 1000.0; parent_rate = 1000.0; parent_burst = 1000.0; },
  { name = "business"; v4_prefix = 32; v6_prefix = 56; v4_parent = 24; v6_parent = 48;
    rate = 1000.0; burst = 1000.0; },
  { name = "unknown"; rate = 1000.0; burst = 1000.0; }
);
tenants = ( { name = "default"; reservation = 0.0; },
            { name = "quiet"; hosts = ["quiet.test"]; reservation = 1500.0; } );
routes = (
  { name = "login"; method = "POST"; path = "/login"; cpu = 450.0; },
  { name = "validate"; method = "GET"; path = "/token/validate"; cpu = 1.0; }
);
gateway: {
  listen = "127.0.0.1:$GW_PORT";
  credentials = "$NT_DIR/creds.txt";
  capacity = { cpu = 100000.0; db = 4.0; };
  argon2 = { m_cost_kib = 1024; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
  trusted_hops = 1;
  reject_floor_ms = 0;
};
counters: { login_failures = { enabled = false; }; login_successes = { enabled = false; };
            login_parent = { enabled = false; }; };
daemon: { control_socket = "$SOCK"; };
EOF
}

# The poller: GET /token/validate every 10 ms on one keep-alive connection (a new one after
# an error) until the stop file appears; prints the answers, errors and the longest time
# without an answer (between two, or from the last to the end), in ms.
cat >"$NT_DIR/poll.py" <<'PYEOF'
import http.client, json, os, sys, time
port, token, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]
hdr = {"Host": "quiet.test", "Authorization": "Bearer " + token}
conn, n, errors, bad, gap = None, 0, 0, 0, 0.0
last = time.monotonic()
end = last + 120
while not os.path.exists(stop) and time.monotonic() < end:
    try:
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/token/validate", headers=hdr)
        r = conn.getresponse()
        r.read()
        now = time.monotonic()
        gap = max(gap, now - last)
        last = now
        n += 1
        bad += r.status != 200
    except Exception:
        errors += 1
        if conn is not None:
            conn.close()
        conn = None
    time.sleep(0.01)
# A stall still going on when told to stop counts too.
gap = max(gap, time.monotonic() - last)
print(json.dumps({"answers": n, "not_200": bad, "errors": errors, "max_gap_ms": int(gap * 1000)}))
PYEOF

# poll_start / poll_stop: run the poller around an operation; poll_stop leaves its report in
# $r (not in a subshell: it waits for the poller, a child of this shell).
POLL_PID=
poll_start() {
	rm -f "$NT_DIR/stop"
	ip netns exec "$NS_S" $PY "$NT_DIR/poll.py" "$GW_PORT" "$TOKEN" "$NT_DIR/stop" \
		>"$NT_DIR/poll.out" 2>&1 &
	POLL_PID=$!
	sleep 0.5 # answers flowing before the operation starts
}
poll_stop() {
	sleep 0.3
	touch "$NT_DIR/stop"
	wait "$POLL_PID"
	POLL_PID=
	r=$(cat "$NT_DIR/poll.out")
}
cleanup() {
	[ -n "$POLL_PID" ] && touch "$NT_DIR/stop" && wait "$POLL_PID" 2>/dev/null
	nt_teardown
}
trap cleanup EXIT

gen_asn "$NT_DIR/big.csv" "$ROWS"
BAD_LINE=$((ROWS / 2))
gen_asn "$NT_DIR/bad.csv" "$ROWS" "$BAD_LINE"
write_conf "$NT_DIR/small.csv" 32
: >"$NT_DIR/creds.txt"
chmod 600 "$NT_DIR/creds.txt"
echo pw-a | sluicectl user add quiet alice >/dev/null || { echo "Bail out! user add"; exit 1; }
if ! nt_start_sluiced; then
	echo "Bail out! sluiced did not start"
	exit 1
fi
for _ in $(seq 1 50); do grep -q "gateway listening" "$NT_DIR/sluiced.log" && break; sleep 0.1; done
TOKEN=$(ip netns exec "$NS_S" curl -s -m 5 -H "Host: quiet.test" \
	--data "username=alice&password=pw-a" "http://127.0.0.1:$GW_PORT/login" |
	$PY -c 'import json, sys; print(json.load(sys.stdin)["access_token"])' 2>/dev/null)
[ -n "$TOKEN" ] || { echo "Bail out! no token from the gateway"; exit 1; }
expect_eq "before: 198.18.7.9 is hosting (the small table)" \
	"$(jget "$(sluicectl prefix show 198.18.7.9 --json)" class)" hosting

# 1. asn load of the big table.
poll_start
t0=$(date +%s%N)
out=$(sluicectl asn load "$NT_DIR/big.csv" 2>&1); rc=$?
t1=$(date +%s%N)
poll_stop
tap_diag "asn load of $ROWS rows: $(((t1 - t0) / 1000000)) ms; poller: $r"
expect_eq "asn load of $ROWS rows exits 0" "$rc" 0
expect_match "  ... and answers with the rows installed" "$out" "installed [0-9]+ rows from $NT_DIR/big.csv"
expect_le "  ... the loop answered throughout: longest gap (ms)" "$(jget "$r" max_gap_ms)" "$LOOP_GAP_MS"
expect_eq "  ... every validate answered 200, no error" "$(jget "$r" not_200)/$(jget "$r" errors)" 0/0
expect_eq "  ... the new table is in force: 198.18.7.9 is business" \
	"$(jget "$(sluicectl prefix show 198.18.7.9 --json)" class)" business
expect_eq "  ... status counts its rows" "$(jget "$(sluicectl status --json)" asn_entries)" \
	"$(grep -o 'installed [0-9]*' <<<"$out" | cut -d' ' -f2)"

# 2. A bad table: refused with file:line, the big one stays.
poll_start
out=$(sluicectl asn load "$NT_DIR/bad.csv" 2>&1); rc=$?
poll_stop
tap_diag "asn load of a bad file; poller: $r"
expect_eq "asn load of a bad $ROWS-row file exits 1" "$rc" 1
expect_match "  ... naming file:line and the reason" "$out" "bad.csv:$BAD_LINE: class 'nosuchclass'"
expect_le "  ... the loop answered throughout: longest gap (ms)" "$(jget "$r" max_gap_ms)" "$LOOP_GAP_MS"
expect_eq "  ... the table in force stays: 198.18.7.9 is still business" \
	"$(jget "$(sluicectl prefix show 198.18.7.9 --json)" class)" business

# 3. A SIGHUP storm with the big table in the config.
write_conf "$NT_DIR/big.csv" 32
gen=$(jget "$(sluicectl status --json)" generation)
from=$(($(wc -l <"$NT_DIR/sluiced.log") + 1))
poll_start
t0=$(date +%s%N)
for _ in $(seq 1 20); do kill -HUP "$SLUICED_PID"; sleep 0.005; done
# Done when every reload the SIGHUPs queued (each logs "SIGHUP: reloading FILE", at once or
# "once the ... in progress is done") has ended, reloaded or rejected, and nothing new was
# queued for 1 s (or after 120 s). Not "quiet for 3 s": under load one reload of the big
# table took longer than that, and the count was read while the second still ran.
nrel() { tail -n +"$from" "$NT_DIR/sluiced.log" | grep -c "reloaded $NT_DIR/sluice.conf"; }
nqueued() { tail -n +"$from" "$NT_DIR/sluiced.log" | grep -c "SIGHUP: reloading $NT_DIR/sluice.conf"; }
nended() { echo $(($(nrel) + $(tail -n +"$from" "$NT_DIR/sluiced.log" | grep -c "reload rejected"))); }
lastq=-1 still=0
for _ in $(seq 1 1200); do
	q=$(nqueued)
	if [ "$q" = "$lastq" ]; then still=$((still + 1)); else still=0; fi
	lastq=$q
	[ "$q" -ge 1 ] && [ "$still" -ge 10 ] && [ "$(nended)" -ge "$q" ] && break
	sleep 0.1
done
t1=$(date +%s%N)
poll_stop
reloads=$(nrel)
tap_diag "20 SIGHUPs: $reloads reload(s) in $(((t1 - t0) / 1000000)) ms; poller: $r"
expect_le "20 SIGHUPs: the loop answered throughout: longest gap (ms)" \
	"$(jget "$r" max_gap_ms)" "$LOOP_GAP_MS"
expect_eq "  ... every validate answered 200, no error" "$(jget "$r" not_200)/$(jget "$r" errors)" 0/0
expect_ge "  ... at least one reload ran" "$reloads" 1
expect_le "  ... coalesced: one in flight plus one pending, not 20" "$reloads" 2
st=$(sluicectl status --json)
expect_eq "  ... the generation moved by the reloads that ran" "$(jget "$st" generation)" \
	"$((gen + reloads))"
expect_eq "  ... the config's table is in force (198.18.7.9 business)" \
	"$(jget "$(sluicectl prefix show 198.18.7.9 --json)" class)" business

# 4. sluicectl reload answers with the outcome, and the loop keeps answering meanwhile, even
# with a small table: every reload used to write the 8 MB /24 table on the loop (~250 ms).
write_conf "$NT_DIR/small.csv" 32
poll_start
out=$(sluicectl reload 2>&1); rc=$?
out2=$(sluicectl reload 2>&1)
out3=$(sluicectl reload 2>&1)
poll_stop
tap_diag "three reloads with the small table: $out / $out2 / $out3; poller: $r"
expect_eq "sluicectl reload exits 0" "$rc" 0
expect_match "  ... answering with the new generation and rows" "$out" "reloaded .*generation $((gen + reloads + 1)), 3 ASN rows"
expect_match "  ... each reload its own generation" "$out3" "generation $((gen + reloads + 3)),"
expect_le "  ... the loop answered throughout: longest gap (ms)" "$(jget "$r" max_gap_ms)" "$RELOAD_GAP_MS"
expect_eq "  ... 198.18.7.9 is hosting again" \
	"$(jget "$(sluicectl prefix show 198.18.7.9 --json)" class)" hosting

# 5. A broken file: refused with file:line, nothing changes.
write_conf "$NT_DIR/big.csv" 0
line=$(grep -n 'v4_prefix = 0;' "$NT_DIR/sluice.conf" | cut -d: -f1)
gen=$(jget "$(sluicectl status --json)" generation)
out=$(sluicectl reload 2>&1); rc=$?
expect_eq "sluicectl reload of a broken file exits 1" "$rc" 1
expect_match "  ... printing file:line" "$out" "sluice.conf:$line: .*v4_prefix"
st=$(sluicectl status --json)
expect_eq "  ... the generation stays" "$(jget "$st" generation)" "$gen"
expect_eq "  ... and the table (198.18.7.9 hosting)" \
	"$(jget "$(sluicectl prefix show 198.18.7.9 --json)" class)" hosting
kill -0 "$SLUICED_PID" 2>/dev/null && tap_ok "sluiced still running" || tap_not_ok "sluiced still running"

# 6. A stop while the worker builds: the stop waits for it, applies nothing, and the asker
# is told so (not left with a closed socket).
sluicectl asn load "$NT_DIR/big.csv" >"$NT_DIR/inflight.out" 2>&1 &
asker=$!
sleep 0.5
nt_stop_sluiced TERM
wait "$asker"; rc=$?
expect_eq "an asn load cut short by a stop exits 1" "$rc" 1
expect_match "  ... saying nothing changed" "$(cat "$NT_DIR/inflight.out")" \
	"stopped before it was done; nothing changed"

[ "$TAP_FAIL" -eq 0 ] || tap_diag "$(tail -40 "$NT_DIR/sluiced.log")"
tap_done
