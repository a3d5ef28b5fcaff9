#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# sluicectl clear prefix (issue 17, item 3: the support desk unblocking a customer, HAProxy's
# `clear table`). A residential /32 spends its bucket with real connections (curl) until XDP
# sheds it with a 429; `clear prefix` with a reason gives it its full burst again (not a new
# key's half), a real connection passes again, and sluiced's log has one warn line with the
# reason, the address, the keys, their previous state and the operator. Without --reason it is
# refused (exit 2); --parent clears the parent bucket too.
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
nt_client_xdp_pass || { echo "1..0 # SKIP cannot attach XDP to the client veth"; exit 0; }
REAL=203.0.113.10
nt_client_addr "$REAL"
nt_http_server || { echo "Bail out! no HTTP server on port 80"; exit 1; }
trap nt_teardown EXIT

cat >"$NT_DIR/asn.csv" <<'EOF'
prefix,asn,class
203.0.113.0/24,64501,residential
EOF
# One unit per 1000 s: the bursts alone decide. A new key starts with half (3 of 6).
cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 80; action = "reply"; cost = 1; } );
  state_entries = 4096;
  asn_table = "$NT_DIR/asn.csv";
  pin_path = "$PIN";
};
classes = (
  { name = "residential"; v4_prefix = 32; v6_prefix = 64; v4_parent = 24; v6_parent = 48;
    rate = 0.001; burst = 6.0; parent_rate = 0.001; parent_burst = 1000.0; mode = "enforce"; },
  { name = "unknown"; rate = 0.001; burst = 10.0; }
);
daemon: { control_socket = "$SOCK"; };
EOF

run() {
	"$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" "${@}" >"$NT_DIR/out" 2>"$NT_DIR/err"
	RC=$?
	OUT=$(cat "$NT_DIR/out")
	ERR=$(cat "$NT_DIR/err")
}
# curl_n N: N real connections from $REAL; prints how many got the server's 200.
curl_n() {
	local ok=0 i code
	for i in $(seq 1 "$1"); do
		code=$(ip netns exec "$NS_C" curl -s -o /dev/null -w '%{http_code}' -m 3 \
			--interface "$REAL" "http://10.200.0.2:80/")
		[ "$code" = 200 ] && ok=$((ok + 1))
	done
	echo "$ok"
}

# Refused before anything is opened: no daemon needed.
run clear prefix "$REAL"
expect_eq "clear prefix without --reason exits 2" "$RC" 2
expect_match "  ... and says the reason is required" "$(head -1 <<<"$ERR")" \
	"^sluicectl: clear prefix: --reason is required: say why, it goes to the log$"
expect_eq "  ... prints nothing on stdout" "$OUT" ""
run clear prefix "$REAL" --reason "x" --ttl 1m
expect_eq "clear prefix refuses an option it does not take (--ttl)" "$RC" 2
expect_match "  ... naming it" "$ERR" "--ttl does not apply here"
run clear prefix --reason "x"
expect_eq "clear prefix without ADDR exits 2" "$RC" 2
run help clear
expect_match "help clear shows clear prefix and --parent" "$OUT" "clear prefix ADDR --reason TEXT \[--parent\]"

nt_start_sluiced || { echo "Bail out! sluiced did not start"; exit 1; }

expect_eq "a fresh /32 gets its new key's credit: 3 of 6 connections" "$(curl_n 6)" 3
p=$(sluicectl prefix show "$REAL" --json)
expect_eq "prefix show: the /32 is spent (shed_prefix)" "$(jget "$p" reason)" shed_prefix
expect_eq "  ... its key is the /32" "$(jget "$p" bucket.key)" "$REAL/32"
expect_eq "a real connection from it is shed" "$(curl_n 1)" 0
parent_before=$(jget "$p" parent_bucket.available)

run clear prefix "$REAL"
expect_eq "clear prefix without --reason is refused with the daemon up too (exit 2)" "$RC" 2
p=$(sluicectl prefix show "$REAL" --json)
expect_eq "  ... and clears nothing" "$(jget "$p" reason)" shed_prefix

run clear prefix "$REAL" --reason "ticket 4711: customer locked out" --json
expect_eq "clear prefix --reason exits 0" "$RC" 0
expect_eq "  ... --json: the address" "$(jget "$OUT" address)" "$REAL/32"
expect_eq "  ... --json: one key cleared, the /32" \
	"$($PY -c 'import json,sys; d=json.loads(sys.argv[1]); print(len(d["cleared"]), d["cleared"][0]["key"], d["cleared"][0]["level"])' "$OUT")" \
	"1 $REAL/32 key"
expect_eq "  ... --json: its previous state (0 of 6 available)" \
	"$($PY -c 'import json,sys; d=json.loads(sys.argv[1]); print(round(d["cleared"][0]["previous_available"]), d["cleared"][0]["burst"])' "$OUT")" \
	"0 6"
expect_eq "  ... --json: the reason" "$(jget "$OUT" reason)" "ticket 4711: customer locked out"
p=$(sluicectl prefix show "$REAL" --json)
expect_eq "prefix show after clear: the full burst (6, not a new key's 3)" \
	"$(jget "$p" bucket.available)" 6
expect_eq "  ... the bucket is live (written, not deleted)" "$(jget "$p" bucket.exists)" true
expect_eq "  ... a connection would pass" "$(jget "$p" decision)" pass
expect_eq "  ... the parent is not touched without --parent" \
	"$(jget "$p" parent_bucket.available)" "$parent_before"
sleep 0.3
log=$(cat "$NT_DIR/sluiced.log")
expect_match "sluiced's log has the audit line, at warn level, with the reason" "$log" \
	"warn.*clear prefix $REAL/32 \(class residential\) by (uid=0|[^ ]+\(uid=0\)): key $REAL/32 \(was live, [0-9.]+s ahead(, ghost forgotten)?, streak [0-9]+\); reason: ticket 4711: customer locked out"
expect_eq "  ... one line" "$(grep -c "clear prefix $REAL/32" "$NT_DIR/sluiced.log")" 1
# The spent /32 was more spent than a new key starts, so the datapath remembered it in
# sl_ghosts: that memory is forgotten too, or an eviction would bring the debt back.
expect_match "  ... the spent key's ghost is forgotten with it" "$log" \
	"clear prefix $REAL/32 .*ghost forgotten.*reason: ticket 4711"
expect_eq "real connections pass again: all 6 of the full burst" "$(curl_n 6)" 6
expect_eq "  ... and the 7th is shed" "$(curl_n 1)" 0

# The operator named by sudo.
SUDO_USER=alice "$BUILD/sluicectl" -c "$NT_DIR/sluice.conf" clear prefix "$REAL" --parent \
	--reason "parent too" >"$NT_DIR/out" 2>"$NT_DIR/err"
RC=$?
OUT=$(cat "$NT_DIR/out")
expect_eq "clear prefix --parent exits 0" "$RC" 0
expect_match "  ... the text names both keys' previous state" "$OUT" "was parent +203\.0\.113\.0/24"
p=$(sluicectl prefix show "$REAL" --json)
expect_eq "  ... the parent has its full burst (1000)" "$(jget "$p" parent_bucket.available)" 1000
expect_eq "  ... the key too (6)" "$(jget "$p" bucket.available)" 6
sleep 0.3
expect_match "  ... logged with the sudo user and both keys" "$(cat "$NT_DIR/sluiced.log")" \
	"clear prefix $REAL/32 \(class residential\) by alice\(uid=0\): key $REAL/32 .*; parent 203\.0\.113\.0/24 .*reason: parent too"

nt_stop_sluiced TERM
run clear prefix "$REAL" --reason "daemon down"
expect_eq "clear prefix with sluiced down exits 1 (nothing cleared, no unaudited write)" "$RC" 1
expect_match "  ... and says so" "$ERR" "(not answering.*nothing was cleared|nothing pinned)"

tap_done
