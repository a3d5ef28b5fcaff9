#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# sluicectl as an operator meets it (issue 17, item 3): exit statuses, what stderr says and
# how many lines it takes, what --count bounds, what a duration means. Against a sluiced on
# the server veth of the netns topology, with one SYN-front port (8080, action drop) so that
# spoofed SYNs from a blocked prefix each put one event on the ring (event_sample 1) without
# a handshake. Covers:
#   1. usage errors: a specific message and one line pointing at `sluicectl help CMD`,
#      exit 2; bad numbers and durations named with their option and value; options a
#      command does not take refused; `help CMD` and `CMD --help`;
#   2. `status` exits 3 (not running) with nothing pinned, with the daemon stopped and its
#      datapath left attached, and 0 while it runs;
#   3. durations: --ttl 10m is ~600 s left in `verdict list --json`, 1h, 1d, 90s and plain
#      seconds likewise;
#   4. `events --backlog --count 5` prints 5 lines (the backlog holds hundreds), --count
#      bounds live events too, --timeout ends a quiet stream;
#   5. `reload` of a config with two errors prints both (text and --json), exits 1;
#   6. `config show`: keys from the file and defaults it does not set, text and --json; the
#      text loads back to the same config; a reloaded change shows; a Redis password is
#      redacted and appears nowhere; a bad --file names file:line; no daemon: says so.
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

BLOCKED=198.51.100.0/24
write_conf() { # $1 $2: the unknown class's rate and burst (bad values make a broken file)
	cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 8080; front = "syn"; action = "drop"; cost = 1; } );
  state_entries = 4096;
  pin_path = "$PIN";
  event_sample = 1;
};
classes = (
  { name = "unknown"; rate = $1;
    burst = $2; }
);
daemon: { control_socket = "$SOCK"; };
EOF
}
write_conf 1.0 100.0

# run NAME ARGS...: sluicectl ARGS with stdout, stderr and the status in OUT, ERR, RC.
run() {
	"$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" "${@}" >"$NT_DIR/out" 2>"$NT_DIR/err"
	RC=$?
	OUT=$(cat "$NT_DIR/out")
	ERR=$(cat "$NT_DIR/err")
}
lines() { if [ -z "$1" ]; then echo 0; else wc -l <<<"$1"; fi; }

# usage_err DESC REGEX HELP-WORD ARGS...: a usage error, exit 2, nothing on stdout, and on
# stderr exactly two lines: the problem (matching REGEX) and the pointer to help.
usage_err() {
	local desc=$1 re=$2 word=$3 hint="Run 'sluicectl help' for the commands."
	shift 3
	[ -n "$word" ] && hint="Run 'sluicectl help $word' for its usage."
	run "$@"
	if [ "$RC" = 2 ] && [ -z "$OUT" ] && [ "$(lines "$ERR")" = 2 ] &&
		grep -Eq -- "^sluicectl: $re" <<<"$(head -1 <<<"$ERR")" &&
		[ "$(tail -1 <<<"$ERR")" = "$hint" ]; then
		tap_ok "$desc"
	else
		tap_not_ok "$desc"
		tap_diag "sluicectl $*: exit $RC (expected 2)"
		tap_diag "stderr (expected 2 lines, the first matching /^sluicectl: $re/):"
		tap_diag "$ERR"
		[ -z "$OUT" ] || tap_diag "stdout: $OUT"
	fi
}

# ---- 1. usage errors (no daemon needed) -------------------------------------------------------
usage_err "no command: says so, points at help" "missing COMMAND" ""
usage_err "an unknown command is named" "unknown command 'frobnicate'" "" frobnicate
usage_err "verdict add without a prefix: 'verdict add: missing PREFIX'" \
	"verdict add: missing PREFIX$" verdict verdict add
usage_err "verdict without a subcommand lists them" \
	"verdict: missing subcommand \(add, list or del\)" verdict verdict
usage_err "an unknown subcommand is named" "verdict: unknown subcommand 'show'" verdict \
	verdict show
usage_err "user add with one argument: missing ACCOUNT" "user add: missing ACCOUNT$" user \
	user add acme
usage_err "an extra argument is named" "status: unexpected argument 'now'" status status now
usage_err "an unknown option is named" "stats: unknown option '--colour'" stats stats --colour
usage_err "an option without its value is named" "verdict add: --ttl needs a value" verdict \
	verdict add $BLOCKED --action block --reason x --ttl
usage_err "verdict add --ttl 10x: names the option and the value" \
	"verdict add: --ttl: '10x' is not a duration" verdict \
	verdict add $BLOCKED --action block --ttl 10x --reason x
usage_err "verdict add --ttl -5: a negative duration is refused" \
	"verdict add: --ttl: '-5' is not a duration" verdict \
	verdict add $BLOCKED --action block --ttl -5 --reason x
usage_err "verdict add --ttl 31d: beyond 30 days" "verdict add: --ttl: '31d' is not between 1s and 30d" \
	verdict verdict add $BLOCKED --action block --ttl 31d --reason x
usage_err "verdict add --action nuke is refused" "verdict add: --action: 'nuke' is not block, tighten or reply" \
	verdict verdict add $BLOCKED --action nuke --ttl 60 --reason x
usage_err "verdict add --factor with block is refused" \
	"verdict add: --factor applies to --action tighten only" verdict \
	verdict add $BLOCKED --action block --factor 0.5 --ttl 60 --reason x
usage_err "verdict add --code -1 is refused" "verdict add: --code: '-1' is not a whole number" \
	verdict verdict add $BLOCKED --action block --ttl 60 --reason x --code -1
usage_err "verdict add without --ttl: missing --ttl" "verdict add: missing --ttl" verdict \
	verdict add $BLOCKED --action block --reason x
usage_err "prefix show --port abc" "prefix show: --port: 'abc' is not a whole number in 1..65535" \
	prefix prefix show 198.51.100.9 --port abc
usage_err "prefix show --port 70000" "prefix show: --port: '70000' is not a whole number" prefix \
	prefix show 198.51.100.9 --port 70000
usage_err "events --count abc" "events: --count: 'abc' is not a whole number" events \
	events --count abc
usage_err "events --count -3" "events: --count: '-3' is not a whole number of 1 or more" events \
	events --count -3
usage_err "events --count 0" "events: --count: '0' is not a whole number of 1 or more" events \
	events --count 0
usage_err "top --interval abc" "top: --interval: 'abc' is not a duration" top top --interval abc
usage_err "top --interval 0" "top: --interval: '0' is not between 0.1s and 1h" top top --interval 0
usage_err "wouldblock --since 3x" "wouldblock: --since: '3x' is neither a duration" wouldblock \
	wouldblock --since 3x

# events --timeout abc used to hang (atof: 0, no timeout): now it is refused at once.
start=$(date +%s%N)
timeout 10 "$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" events --timeout abc >"$NT_DIR/out" \
	2>"$NT_DIR/err"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
expect_eq "events --timeout abc exits 2 (it hung)" "$rc" 2
expect_le "  ... at once (ms)" "$ms" 2000
expect_match "  ... naming the option and the value" "$(cat "$NT_DIR/err")" \
	"^sluicectl: events: --timeout: 'abc' is not a duration"
usage_err "events --timeout -1" "events: --timeout: '-1' is not a duration" events \
	events --timeout -1

# Options the command does not take: refused, naming the option and the command.
usage_err "verdict list --ttl 5 is refused (--ttl is verdict add's)" \
	"verdict list: --ttl does not apply here \(it is for verdict add\)" verdict \
	verdict list --ttl 5
usage_err "status --count 3 is refused" "status: --count does not apply here \(it is for events, top\)" \
	status status --count 3
usage_err "events --port 80 is refused" "events: --port does not apply here" events \
	events --port 80
usage_err "prefix show --backlog is refused" "prefix show: --backlog does not apply here" prefix \
	prefix show 198.51.100.9 --backlog
usage_err "reload --since 1h is refused" "reload: --since does not apply here" reload \
	reload --since 1h
usage_err "top --timeout 5 is refused" "top: --timeout does not apply here" top top --timeout 5

# help CMD, CMD --help.
run help verdict
expect_eq "help verdict exits 0" "$RC" 0
expect_match "help verdict: verdict add's usage" "$OUT" "^  verdict add PREFIX --action"
expect_match "help verdict: verdict list and del too" "$OUT" "^  verdict del PREFIX"
expect_match "help verdict: its options (--ttl)" "$OUT" "^      --ttl T "
expect_match "help verdict: what a duration is" "$OUT" "10m, 1.5h, 1d"
if grep -Eq '^  (events|status|top)' <<<"$OUT"; then
	tap_not_ok "help verdict: no other command"; tap_diag "$OUT"
else tap_ok "help verdict: no other command"; fi
expect_le "help verdict: short ($(lines "$OUT") lines)" "$(lines "$OUT")" 25
hv=$OUT
run verdict --help
expect_eq "verdict --help prints the same as help verdict" "$OUT" "$hv"
run verdict add --help
expect_eq "verdict add --help prints the same as help verdict" "$OUT" "$hv"
run help events
expect_match "help events: --count bounds the lines, backlog included" "$OUT" \
	"--count bounds the lines printed, backlog included"
if grep -q -- "--ttl" <<<"$OUT"; then tap_not_ok "help events: not verdict add's options"
else tap_ok "help events: not verdict add's options"; fi
usage_err "help of an unknown command" "help: unknown command 'frob'" "" help frob
usage_err "--help after an unknown command" "unknown command 'frob'" "" frob --help
run status --help
expect_eq "status --help exits 0" "$RC" 0
expect_match "  ... prints status's usage" "$(head -1 <<<"$OUT")" "^Usage: sluicectl \[OPTIONS\] status$"
run help
full=$OUT
run --help
expect_eq "help alone is --help" "$full" "$OUT"
expect_match "--help lists help CMD" "$full" "^  help \[COMMAND\]"
expect_match "--help documents the exit statuses" "$full" "3 \(status\) sluiced is not running"

# ---- 2. status without a daemon ------------------------------------------------------------------
run status
expect_eq "status with nothing pinned and no daemon exits 3" "$RC" 3
expect_match "  ... and says not running" "$OUT" "^daemon: +not running"
run status --json
expect_eq "status --json with no daemon exits 3" "$RC" 3
expect_eq "  ... daemon_running false" "$(jget "$OUT" daemon_running)" false

nt_start_sluiced || { echo "Bail out! sluiced did not start"; exit 1; }
run status
expect_eq "status with sluiced running exits 0" "$RC" 0
expect_match "  ... running" "$OUT" "^daemon: +running \(pid $SLUICED_PID\)"

# ---- 3. durations --------------------------------------------------------------------------------
# verdict_left PREFIX: the seconds left on PREFIX's verdict, from verdict list --json.
verdict_left() {
	$PY -c 'import json, sys
for v in json.loads(sys.argv[1]):
    if v["prefix"] == sys.argv[2]:
        print(v["expires_in"])' "$("$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" verdict list --json)" "$1"
}
# ttl_case TTL SECONDS PREFIX
ttl_case() {
	run verdict add "$3" --action block --ttl "$1" --reason "ttl $1"
	expect_eq "verdict add --ttl $1 exits 0" "$RC" 0
	local left
	left=$(verdict_left "$3")
	if [ -n "$left" ] && [ "$left" -le "$2" ] && [ "$left" -ge $(($2 - 5)) ]; then
		tap_ok "  ... verdict list --json: $left s left (expected ~$2)"
	else
		tap_not_ok "  ... verdict list --json: '$left' s left (expected ~$2)"
		tap_diag "$(sluicectl verdict list)"
	fi
}
ttl_case 10m 600 192.0.2.0/24
expect_match "  ... and says 600s" "$OUT" "for 600s"
ttl_case 1h 3600 192.0.2.1/32
ttl_case 1d 86400 192.0.2.2/32
ttl_case 90s 90 192.0.2.3/32
ttl_case 45 45 192.0.2.4/32
ttl_case 1.5m 90 192.0.2.5/32
run verdict add 192.0.2.6/32 --action block --ttl 2m --reason j --json
expect_eq "verdict add --json: ttl 120" "$(jget "$OUT" ttl)" 120
for p in 192.0.2.0/24 192.0.2.1/32 192.0.2.2/32 192.0.2.3/32 192.0.2.4/32 192.0.2.5/32 \
	192.0.2.6/32; do
	sluicectl verdict del "$p" >/dev/null
done
expect_eq "the test's verdicts are gone" "$(sluicectl verdict list --json)" "[]"

# ---- 4. events: --count bounds the lines printed ----------------------------------------------
# Every SYN from a blocked prefix to the SYN front is shed with an event (event_sample 1).
sluicectl verdict add $BLOCKED --action block --ttl 10m --reason "cli test" >/dev/null
spoof() { # RATE SECONDS
	ip netns exec "$NS_C" $PY "$ROOT/tests/lib/synpace.py" --iface vc --dmac "$SERVER_MAC" \
		--dst 10.200.0.2 --dport 8080 --src-net $BLOCKED --rate "$1" --seconds "$2" \
		--pool 400 --seed "$RANDOM" >"$NT_DIR/spoof.json"
}
shed() { jget "$(sluicectl stats --json)" by_reason.shed_verdict; }
s0=$(shed)
spoof 300 1
s1=$(shed)
expect_ge "spoofed SYNs from the blocked /24 were shed (the backlog: $((s1 - s0)) events)" \
	"$((s1 - s0))" 100
run events --backlog --count 5 --timeout 5
expect_eq "events --backlog --count 5 exits 0" "$RC" 0
expect_eq "events --backlog --count 5 prints 5 lines (was the whole backlog)" "$(lines "$OUT")" 5
expect_match "  ... of the blocked prefix" "$(head -1 <<<"$OUT")" "198\.51\.100\.[0-9]+/32 .*shed_verdict"
run events --backlog --count 7 --json --timeout 5
expect_eq "events --backlog --count 7 --json prints 7 lines" "$(lines "$OUT")" 7
expect_eq "  ... each a JSON document" \
	"$($PY -c 'import json,sys; print(sum(1 for l in sys.stdin if json.loads(l)["reason"] == "shed_verdict"))' <"$NT_DIR/out")" 7

# Without --backlog the old ones are skipped; --timeout ends the quiet stream.
start=$(date +%s%N)
run events --count 5 --timeout 1s
ms=$((($(date +%s%N) - start) / 1000000))
expect_eq "events --timeout 1s without --backlog: nothing old printed" "$(lines "$OUT")" 0
expect_eq "  ... exits 0" "$RC" 0
if [ "$ms" -ge 900 ] && [ "$ms" -le 3000 ]; then tap_ok "  ... after about 1 s ($ms ms)"
else tap_not_ok "  ... after about 1 s ($ms ms)"; fi

# Live events: --count 3 while a burst of hundreds arrives.
"$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" events --count 3 --timeout 10 >"$NT_DIR/live" \
	2>/dev/null &
evpid=$!
for _ in $(seq 1 100); do
	ls -l "/proc/$evpid/fd" 2>/dev/null | grep -q eventpoll && break
	sleep 0.02
done
spoof 300 1
wait $evpid
expect_eq "events --count 3 with hundreds arriving exits 0" "$?" 0
expect_eq "  ... prints 3 lines" "$(lines "$(cat "$NT_DIR/live")")" 3
sluicectl verdict del $BLOCKED >/dev/null

# ---- 5. reload shows every problem -----------------------------------------------------------------
gen=$(jget "$(sluicectl status --json)" generation)
write_conf -1.0 -5.0
l_rate=$(grep -n 'rate = -1.0;' "$NT_DIR/sluice.conf" | cut -d: -f1)
l_burst=$(grep -n 'burst = -5.0;' "$NT_DIR/sluice.conf" | cut -d: -f1)
run reload
expect_eq "reload of a config with two errors exits 1" "$RC" 1
expect_match "  ... says it was rejected, 2 problems" "$ERR" \
	"^sluicectl: reload rejected, the running config stays in force \(2 problems\):"
expect_match "  ... prints the first (rate, line $l_rate)" "$ERR" \
	"^$NT_DIR/sluice.conf:$l_rate: .*rate.*-1"
expect_match "  ... and the second (burst, line $l_burst)" "$ERR" \
	"^$NT_DIR/sluice.conf:$l_burst: .*burst.*-5"
expect_eq "  ... on 3 lines" "$(lines "$ERR")" 3
run reload --json
expect_eq "reload --json of it exits 1" "$RC" 1
expect_eq "  ... lists both problems" \
	"$($PY -c 'import json,sys; print(len(json.loads(sys.argv[1])["problems"]))' "$OUT")" 2
st=$(sluicectl status --json)
expect_eq "  ... the running config stays (generation $gen)" "$(jget "$st" generation)" "$gen"
expect_match "  ... status keeps the first problem as the last error" "$(jget "$st" last_error)" \
	"sluice.conf:$l_rate: "
write_conf 1.0 100.0
run reload
expect_eq "reload of the fixed file exits 0" "$RC" 0

# ---- 6. config show: the config in force, defaults included, secrets redacted -----------------
run config show
expect_eq "config show exits 0" "$RC" 0
expect_match "  ... a key from the file (state_entries 4096)" "$OUT" "^  state_entries = 4096;$"
expect_match "  ... a default the file does not set (new_key_credit 0.5)" "$OUT" \
	"^  new_key_credit = 0\.5;$"
expect_match "  ... another (cookie_rotate 3600)" "$OUT" "^  cookie_rotate = 3600;$"
expect_match "  ... the class's defaults (v4_parent 24)" "$OUT" "^    v4_parent = 24;$"
expect_match "  ... the counters' defaults (login_failures: burst 5)" \
	"$(sed -n '/^  login_failures = {/,/^  };/p' <<<"$OUT")" "^    burst = 5\.0;$"
expect_match "  ... the control socket" "$OUT" "control_socket = \"$SOCK\";"
run config show --json
expect_eq "config show --json: edge.state_entries" "$(jget "$OUT" edge.state_entries)" 4096
expect_eq "  ... edge.event_sample from the file" "$(jget "$OUT" edge.event_sample)" 1
expect_eq "  ... classes.0.v6_prefix by default" "$(jget "$OUT" classes.0.v6_prefix)" 64
expect_eq "  ... stream.window_s by default" "$(jget "$OUT" stream.window_s)" 600
expect_eq "  ... no redis: null" "$(jget "$OUT" redis)" ""
# The text form is a config file: shown again from that file it is the same.
run config show
sed 1d <<<"$OUT" >"$NT_DIR/shown.conf"
run config show --file "$NT_DIR/shown.conf"
expect_eq "config show's text loads back to the same config (config show --file of it)" \
	"$(sed 1d <<<"$OUT")" "$(cat "$NT_DIR/shown.conf")"
# The shipped examples too (a gateway with clients, ceilings, tenants without edge budgets).
for ex in sluice.conf gateway.conf; do
	run config show --file "$ROOT/examples/$ex"
	sed 1d <<<"$OUT" >"$NT_DIR/shown-$ex"
	run config show --file "$NT_DIR/shown-$ex"
	expect_eq "config show --file examples/$ex: its text loads back to the same config" \
		"$(sed 1d <<<"$OUT")" "$(cat "$NT_DIR/shown-$ex")"
done
# A reloaded change shows up.
write_conf 2.5 100.0
run reload
expect_eq "reload with the class's rate 2.5 exits 0" "$RC" 0
run config show --json
expect_eq "config show after the reload: the new rate" "$(jget "$OUT" classes.0.rate)" 2.5
expect_eq "  ... its parent_rate default follows (10 x rate)" "$(jget "$OUT" classes.0.parent_rate)" 25.0
write_conf 1.0 100.0
run reload
# --file: what a file would resolve to, secrets redacted.
cat >"$NT_DIR/pw.conf" <<EOF
edge: { interfaces = ["vs"]; ports = ( { port = 8080; } ); };
classes = ( { name = "unknown"; rate = 1.0; burst = 100.0; } );
redis: { address = "127.0.0.1:1"; user = "sluice"; password = "Tr0ub4dor-and-3-PW"; };
EOF
run config show --file "$NT_DIR/pw.conf"
expect_eq "config show --file with a Redis password exits 0" "$RC" 0
expect_match "  ... the password redacted" "$OUT" '^  password = "\(redacted\)";$'
expect_match "  ... the user shown" "$OUT" '^  user = "sluice";$'
run config show --file "$NT_DIR/pw.conf" --json
expect_eq "  ... --json: redacted too" "$(jget "$OUT" redis.password)" "(redacted)"
"$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" config show --file "$NT_DIR/pw.conf" >"$NT_DIR/all" 2>&1
"$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" config show --file "$NT_DIR/pw.conf" --json >>"$NT_DIR/all" 2>&1
expect_eq "  ... the password appears nowhere in either form" \
	"$(grep -c 'Tr0ub4dor' "$NT_DIR/all")" 0
echo "edge: { interfaces = [\"vs\"]; state_entries = 3; };" >"$NT_DIR/bad.conf"
run config show --file "$NT_DIR/bad.conf"
expect_eq "config show --file of a bad file exits 1" "$RC" 1
expect_match "  ... naming file and line" "$ERR" "^$NT_DIR/bad.conf:1: "
expect_eq "  ... nothing on stdout" "$OUT" ""
usage_err "config show --ttl is refused" "config show: --ttl does not apply here" config \
	config show --ttl 1m
usage_err "config without a subcommand names it" "config: missing subcommand \(show\)" config config
run help config
expect_match "help config shows config show and --file" "$OUT" "config show \[--file FILE\]"

# ---- 2 (again). status with the daemon stopped, its datapath left attached ---------------------
nt_stop_sluiced QUIT
run status
expect_eq "status after sluiced exited (datapath left attached) exits 3" "$RC" 3
expect_match "  ... says not running, datapath left attached" "$OUT" \
	"^daemon: +not running \(datapath left attached"
run status --json
expect_eq "  ... --json exits 3 too" "$RC" 3
expect_eq "  ... daemon_running false" "$(jget "$OUT" daemon_running)" false
run detach
expect_eq "detach without a daemon exits 0" "$RC" 0
run config show
expect_eq "config show without a daemon exits 1" "$RC" 1
expect_match "  ... says so and offers --file" "$ERR" \
	"sluiced is not answering on .*: no config is running here; --file FILE shows"

tap_done
