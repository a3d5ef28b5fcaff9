#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# sluicectl clear prefix (issue 17, item 3: the support desk unblocking a customer, HAProxy's
# `clear table`). A residential /32 spends its bucket with real connections (curl) until XDP
# sheds it with a 429; `clear prefix` with a reason gives it its full burst again (not a new
# key's half), a real connection passes again, and sluiced's log has one warn line with the
# reason, the address, the keys, their previous state and the operator. Without --reason it is
# refused (exit 2); --parent clears the parent bucket too.
#
# sluicectl clear account: a user who locked herself out with wrong passwords through a real
# gateway (her right password then answered as a failure, login_uniform) signs in again at
# once after `clear account TENANT ACCOUNT --from ADDR --reason TEXT`; another account's
# counters from the same address are untouched (its own failures still lock it at the same
# count); the audit line is in sluiced's log; no --reason, no --from, an unknown account or
# tenant are refused and clear nothing. With the embedded store, then with Redis.
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
# Untouched: what it held then, plus its refill since (0.001 a second).
pav=$(jget "$p" parent_bucket.available)
expect_eq "  ... the parent is not touched without --parent ($parent_before, now $pav)" \
	"$($PY -c 'import sys; print(0 <= float(sys.argv[2]) - float(sys.argv[1]) < 0.1)' \
	"$parent_before" "$pav")" True
sleep 0.3
log=$(cat "$NT_DIR/sluiced.log")
expect_match "sluiced's log has the audit line, at warn level, with the reason" "$log" \
	"warn.*clear prefix $REAL/32 \(class residential\) by (uid=0|[^ ]+\(uid=0\)): key $REAL/32 \(was live, [0-9.]+s ahead, streak [0-9]+\); reason: ticket 4711: customer locked out"
expect_eq "  ... one line" "$(grep -c "clear prefix $REAL/32" "$NT_DIR/sluiced.log")" 1
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

# ---- clear account -------------------------------------------------------------------------
. "$HERE/../lib/gateway.sh"
. "$HERE/../lib/redis.sh"
GWDIR=$NT_DIR/gw
mkdir -p "$GWDIR"
GW_PID=
trap '[ -n "$GW_PID" ] && kill -TERM "$GW_PID" 2>/dev/null && wait "$GW_PID" 2>/dev/null; redis_stop; nt_teardown' EXIT
write_gw() { # $1: the redis group, or nothing
	cat >"$GWDIR/gw.conf" <<EOF
tenants = ( { name = "default"; reservation = 100000.0; }, { name = "acme"; hosts = ["acme.test"]; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 10.0; } );
gateway: {
  listen = "127.0.0.1:$GWPORT";
  credentials = "creds.txt";
  capacity = { cpu = 1000000.0; };
  argon2 = { m_cost_kib = 256; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
  trusted_hops = 1;
  reject_floor_ms = 5;
};
$1
daemon: { control_socket = "$GWDIR/ctl.sock"; };
EOF
}
gctl() { "$BUILD/sluicectl" -c "$GWDIR/gw.conf" "$@"; }
grun() {
	"$BUILD/sluicectl" -c "$GWDIR/gw.conf" "${@}" >"$NT_DIR/out" 2>"$NT_DIR/err"
	RC=$?
	OUT=$(cat "$NT_DIR/out")
	ERR=$(cat "$NT_DIR/err")
}
# login USER PASSWORD XFF: the status of one POST /login.
login() {
	curl -s -o /dev/null -w '%{http_code}' -m 10 -H 'Host: idp.test' -H "X-Forwarded-For: $3" \
		--data-urlencode "username=$1" --data-urlencode "password=$2" \
		"http://127.0.0.1:$GWPORT/login"
}
# logins N USER PASSWORD XFF: the statuses of N of them, space separated.
logins() {
	local i out=
	for i in $(seq 1 "$1"); do out="$out${out:+ }$(login "$2" "$3" "$4")"; done
	echo "$out"
}
HOME_IP=192.0.2.10

# account_case STORE: lock alice out, clear her, check bob and the refusals.
account_case() {
	local store=$1 r
	gw_start "$GWDIR/gw.conf" "$GWDIR/sluiced.log"
	GW_PID=$SLUICED_PID
	SLUICED_PID=
	expect_eq "$store: alice signs in from elsewhere" "$(login alice pw-alice 198.51.100.99)" 200
	r=$(logins 5 alice wrong $HOME_IP)
	expect_eq "$store: five wrong passwords for alice from $HOME_IP: 401 each" "$r" \
		"401 401 401 401 401"
	expect_eq "$store: then her right password is refused too (locked out, as a failure)" \
		"$(login alice pw-alice $HOME_IP)" 401
	expect_eq "$store: bob, from the same address: one wrong password" \
		"$(login bob wrong $HOME_IP)" 401

	grun clear account default alice --from $HOME_IP
	expect_eq "$store: clear account without --reason exits 2" "$RC" 2
	expect_match "  ... says why" "$ERR" "clear account: --reason is required"
	grun clear account default alice --reason "ticket 5"
	expect_eq "$store: without --from exits 2" "$RC" 2
	expect_match "  ... says the counters are kept per source" "$ERR" "--from ADDR is required"
	grun clear account default alice --from 192.0.2.0/24 --reason x
	expect_eq "$store: --from a prefix, not an address, exits 2" "$RC" 2
	grun clear account default alice --from $HOME_IP --reason x --parent
	expect_eq "$store: --parent (clear prefix's) is refused" "$RC" 2
	expect_match "  ... naming it" "$ERR" "--parent does not apply here"
	grun clear account default carol --from $HOME_IP --reason "ticket 6"
	expect_eq "$store: an unknown account exits 1" "$RC" 1
	expect_match "  ... and says so, nothing cleared" "$ERR" \
		"no account 'carol' in tenant 'default'.*nothing cleared"
	grun clear account nosuch alice --from $HOME_IP --reason "ticket 6"
	expect_eq "$store: an unknown tenant exits 1" "$RC" 1
	expect_match "  ... and says so" "$ERR" "no tenant 'nosuch'"
	expect_eq "$store: after the refusals alice is still locked out" \
		"$(login alice pw-alice $HOME_IP)" 401

	grun clear account default Alice --from $HOME_IP --reason "ticket 4712: locked herself out" \
		--operator helpdesk-7
	expect_eq "$store: clear account default Alice --from $HOME_IP exits 0" "$RC" 0
	expect_match "  ... says what it cleared and that login_failures was refusing" "$OUT" \
		"^cleared default/alice from $HOME_IP/32 \(allocation 192\.0\.2\.0/24\): login_failures was refusing \(for [0-9.]+s more\), login_parent was admitting"
	expect_eq "$store: alice's right password from $HOME_IP: 200 at once" \
		"$(login alice pw-alice $HOME_IP)" 200
	sleep 0.2
	expect_match "$store: sluiced's log has the audit line (warn, operator, reason)" \
		"$(grep 'clear account' "$GWDIR/sluiced.log")" \
		"warn.*clear account default/alice from $HOME_IP/32 \(allocation 192\.0\.2\.0/24\) by helpdesk-7\(uid=[0-9]+\): login_failures was refusing .*; reason: ticket 4712: locked herself out"
	# bob's pair was not touched: his one failure stands, four more lock him.
	r=$(logins 4 bob wrong $HOME_IP)
	expect_eq "$store: bob's counters untouched: four more wrong passwords, 401" "$r" \
		"401 401 401 401"
	expect_eq "  ... and his right password is now refused (his five were his own)" \
		"$(login bob pw-bob $HOME_IP)" 401
	grun clear account default bob --from $HOME_IP --reason "ticket 4713" --json
	expect_eq "$store: clear account --json exits 0" "$RC" 0
	expect_eq "  ... ok" "$(jget "$OUT" ok)" true
	expect_match "  ... the operator, with the uid" "$(jget "$OUT" operator)" "uid=[0-9]+"
	expect_eq "$store: bob signs in" "$(login bob pw-bob $HOME_IP)" 200
	[ -n "${AFTER:-}" ] && $AFTER
	kill -TERM "$GW_PID"
	wait "$GW_PID" 2>/dev/null
	GW_PID=
}

GWPORT=$(free_port)
: >"$GWDIR/creds.txt"
chmod 600 "$GWDIR/creds.txt"
write_gw ""
for who in "alice pw-alice" "bob pw-bob"; do
	set -- $who
	echo "$2" | gctl user add default "$1" >/dev/null || { echo "Bail out! user add $1"; exit 1; }
done
account_case embedded
grun clear account default alice --from $HOME_IP --reason "down"
expect_eq "clear account with sluiced down exits 1" "$RC" 1
expect_match "  ... nothing was cleared" "$ERR" "not answering.*nothing was cleared"

# With Redis behind a password: the clears go through AUTH, and `config show` (asked of the
# running sluiced) never shows the password.
RPW=Corr3ct-h0rse-b4ttery
redis_checks() {
	local t j
	t=$(gctl config show 2>&1)
	j=$(gctl config show --json 2>&1)
	expect_match "redis: config show (of the running sluiced) names the Redis" "$t" \
		"address = \"unix:$REDIS_SOCK\";"
	expect_match "  ... and redacts its password" "$t" '^  password = "\(redacted\)";$'
	expect_eq "  ... --json too" "$(jget "$j" redis.password)" "(redacted)"
	expect_eq "  ... the password is in neither form, nor in sluiced's log" \
		"$(printf '%s\n%s\n' "$t" "$j" | cat - "$GWDIR/sluiced.log" | grep -c "$RPW")" 0
}
if redis_available && redis_start; then
	redis-cli -s "$REDIS_SOCK" config set requirepass "$RPW" >/dev/null
	write_gw "redis: { address = \"unix:$REDIS_SOCK\"; password = \"$RPW\"; };"
	AFTER=redis_checks account_case redis
	rcli() { redis-cli -s "$REDIS_SOCK" -a "$RPW" --no-auth-warning "$@"; }
	n=$(rcli --scan --pattern '*login_fail*' | wc -l)
	expect_ge "redis: the counters lived in Redis ($n login_fail keys)" "$n" 1
	expect_eq "  ... under keyed hashes: no account name or address in a key" \
		"$(rcli --scan --pattern '*' | grep -c -e alice -e bob -e 192.0.2)" 0
	redis_stop
else
	tap_skip "clear account on Redis" "no redis-server"
fi

tap_done
