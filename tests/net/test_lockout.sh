#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Issue 14, items 2 and 3, over loopback against a gateway-only sluiced (clients told apart
# by X-Forwarded-For, trusted_hops = 1), with the default counters and detectors:
#   - brute force at one account from 40 /32s of one /24, and from 40 /64s of one /48, is
#     checked against the password at most login_parent's 10 (+ its refill) times, the
#     documented bound (docs/endpoints.md, "POST /login"); account_keys steps that account
#     up from that allocation, and the account, from its own /32 or /64 inside it, signs in;
#   - a victim on her own prefix signs in throughout a lockout attempt from 80 /24s (one
#     wrong password each), which steps the account up everywhere else and never blocks it;
#   - a reset flood for her from 30 /24s spends the one "elsewhere" budget: she still gets
#     the link she asks for from home, and the flood's later requests send nothing;
#   - a name claimed at registration from one /24 does not stop its registrant's link;
#   - whoever holds a password and guesses its second factor from elsewhere spends the
#     elsewhere attempts, not those of the person who completes it at home.
# SL_DEBUG=1 leaves the directory in place.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
gw_suite lock built

PORT=$(free_port)
MPORT=$(free_port)
cat >"$DIR/gw.conf" <<EOF
tenants = ( { name = "default"; reservation = 100000.0; } );
routes = (
  { name = "login"; method = "POST"; path = "/login"; cpu = 10.0; },
  { name = "mfa_send"; method = "POST"; path = "/mfa/send"; cpu = 1.0; },
  { name = "mfa_verify"; method = "POST"; path = "/mfa/verify"; cpu = 1.0; },
  { name = "reset"; method = "POST"; path = "/password-reset"; cpu = 1.0; },
  { name = "register"; method = "POST"; path = "/register"; cpu = 1.0; }
);
gateway: {
  listen = "127.0.0.1:$PORT";
  credentials = "creds.txt";
  capacity = { cpu = 1000000.0; };
  argon2 = { m_cost_kib = 256; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
  trusted_hops = 1;
  reject_floor_ms = 5;
  delivery = "log";
  delivery_log = "$DIR/outbox.log";
};
stream: { ladder_delay_ms = 300; };
daemon: { control_socket = "$DIR/ctl.sock"; metrics_listen = "127.0.0.1:$MPORT"; };
EOF
ctl() { "$BUILD/sluicectl" -c "$DIR/gw.conf" "$@"; }
: >"$DIR/creds.txt"
chmod 600 "$DIR/creds.txt"
for who in "alice pw-alice" "bob pw-bob" "dave pw-dave" "erin pw-erin"; do
	set -- $who
	echo "$2" | ctl user add default "$1" >/dev/null || { echo "Bail out! user add $1"; exit 1; }
done
gw_start "$DIR/gw.conf" "$DIR/sluiced.log"

# req.py: one JSON line per request. Each argument is PATH,USER,PASSWORD,XFF[,BEARER[,CODE]];
# "-" leaves a field out. -j N sends them N at a time, in order of the arguments.
cat >"$DIR/req.py" <<'PYEOF'
import concurrent.futures, http.client, json, sys, time
port, args = int(sys.argv[1]), sys.argv[2:]
par = 1
if args and args[0] == "-j":
    par, args = int(args[1]), args[2:]
def one(spec):
    f = spec.split(",") + ["-"] * 6
    path, user, pw, xff, bearer, code = f[:6]
    form = []
    if user != "-": form.append("username=" + user)
    if pw != "-": form.append("password=" + pw)
    if code != "-": form.append("code=" + code)
    h = {"Host": "idp.test", "X-Forwarded-For": xff,
         "Content-Type": "application/x-www-form-urlencoded"}
    if bearer != "-": h["Authorization"] = "Bearer " + bearer
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    t0 = time.monotonic()
    c.request("POST", path, body="&".join(form), headers=h)
    r = c.getresponse()
    body = r.read().decode()
    c.close()
    tok = ""
    try:
        tok = json.loads(body).get("access_token", "")
    except ValueError:
        pass
    return {"status": r.status, "body": body, "token": tok,
            "ms": round((time.monotonic() - t0) * 1000, 1)}
with concurrent.futures.ThreadPoolExecutor(par) as ex:
    for r in ex.map(one, args):
        print(json.dumps(r))
PYEOF
req() { $PY "$DIR/req.py" "$PORT" "$@"; }
st() { req "$@" | $PY -c 'import json,sys; print(" ".join(str(json.loads(l)["status"]) for l in sys.stdin))'; }
body() { req "$@" | $PY -c 'import json,sys; print(json.loads(sys.stdin.readline())["body"])'; }
gw() { jget "$(ctl tenants --json)" "gateway.$1"; }
checked() { echo $(( $(gw hashes) - $(gw dummy_hashes) )); } # real passwords checked
prom() { $PY "$ROOT/tests/lib/prom.py" "http://127.0.0.1:$MPORT/metrics" "$@"; }
STEP_UP='{"error":"step_up_required"}'

# ---- brute force from one allocation ---------------------------------------------------------
# bound FAMILY VICTIM_ADDR ATTACKER_ADDRS... (40 of them, one wrong password each)
bound() {
	local fam=$1 own=$2 c0 c1 t0 t1 specs=() a
	shift 2
	expect_eq "$fam: dave signs in from his own address in the allocation first" \
		"$(st "/login,dave,pw-dave,$own")" 200
	for a in "$@"; do specs+=("/login,dave,guess-$a,$a"); done
	c0=$(checked) t0=$(date +%s)
	req -j 4 "${specs[@]}" >"$DIR/bf.json"
	c1=$(checked) t1=$(date +%s)
	expect_eq "$fam: 40 guesses at dave from 40 addresses of one allocation, every one answered the same 401" \
		"$($PY -c 'import json,sys; print(sorted(set((j["status"], j["body"]) for j in map(json.loads, open(sys.argv[1])) if "step_up" not in j["body"])).__len__())' "$DIR/bf.json")" 1
	expect_le "$fam: ... checked against his password at most login_parent's 10 + its refill ($((c1 - c0)))" \
		"$((c1 - c0))" $((10 + (t1 - t0) / 180 + 1))
	expect_ge "$fam: ... and the budget was reached: at least the five before account_keys" "$((c1 - c0))" 5
	sleep 0.5
	expect_eq "$fam: account_keys steps dave up from that allocation, his right password included" \
		"$(body "/login,dave,pw-dave,$3")" "$STEP_UP"
	expect_eq "$fam: ... while from his own address in it he signs in" \
		"$(st "/login,dave,pw-dave,$own")" 200
}
v4=() v6=()
for i in $(seq 1 40); do v4+=("198.51.100.$i"); v6+=("2001:db8:77:$(printf %x "$i")::1"); done
bound IPv4 198.51.100.200 "${v4[@]}"
bound IPv6 2001:db8:77:ffff::5 "${v6[@]}"
rec=$(ctl wouldblock --json)
expect_match "the detector recorded both: account_keys in 198.51.100.0/24" "$rec" '"rule":"account_keys","key":"account [0-9a-f]+ in 198\.51\.100\.0/24"'
expect_match "  ... and in 2001:db8:77::/48" "$rec" '"rule":"account_keys","key":"account [0-9a-f]+ in 2001:db8:77::/48"'
expect_eq "dave from anywhere else: unaffected" "$(st "/login,dave,pw-dave,203.0.113.250")" 200

# ---- a lockout attempt from 80 /24s, the victim at home ------------------------------------
HOME4=192.0.2.10
expect_eq "alice signs in from home" "$(st "/login,alice,pw-alice,$HOME4")" 200
atk=()
for i in $(seq 0 79); do atk+=("/login,alice,nope$i,100.$((64 + i / 250)).$((i % 250)).1"); done
# Her logins, one every 200 ms, while the 80 wrong passwords arrive four at a time (15
# successes stay inside login_successes' burst of 30).
( for i in $(seq 1 15); do st "/login,alice,pw-alice,$HOME4"; sleep 0.2; done ) >"$DIR/home" &
HOME_PID=$!
req -j 4 "${atk[@]}" >"$DIR/atk.json"
wait "$HOME_PID"
expect_eq "80 wrong passwords from 80 /24s: alice from home signed in every time (15 of 15)" \
	"$(grep -c '^200$' "$DIR/home")" 15
sleep 1
expect_eq "the account is stepped up from everywhere else, her right password included" \
	"$(body "/login,alice,pw-alice,100.99.0.7")" "$STEP_UP"
d0=$(prom sluice_gateway_escalations_total kind=delayed) s0=$(prom sluice_gateway_escalations_total kind=step_up)
expect_eq "  ... and never blocked: from home, and from another address of her /24, she signs in" \
	"$(st "/login,alice,pw-alice,$HOME4" "/login,alice,pw-alice,192.0.2.99")" "200 200"
expect_eq "  ... neither delayed nor stepped up there" \
	"$(prom sluice_gateway_escalations_total kind=delayed) $(prom sluice_gateway_escalations_total kind=step_up)" "$d0 $s0"
rec=$(ctl wouldblock --json)
expect_match "the ladder was climbed (account_sources, step-up at twice 20)" "$rec" '"rule":"account_sources"'

# ---- a reset flood, the victim's own request -----------------------------------------------
links() { grep -c "to=$1 kind=$2" "$DIR/outbox.log"; }
flood=()
for i in $(seq 0 29); do flood+=("/password-reset,alice,-,100.70.$i.1"); done
expect_eq "30 reset requests for alice from 30 /24s: all answered 202" \
	"$(st -j 4 "${flood[@]}" | tr ' ' '\n' | sort -u | tr '\n' ' ')" "202 "
expect_eq "  ... which sent the elsewhere budget's three links, no more" "$(links alice reset_link)" 3
expect_eq "alice asks from home: 202" "$(st "/password-reset,alice,-,$HOME4")" 202
expect_eq "  ... and she gets her link" "$(links alice reset_link)" 4
st "/password-reset,alice,-,100.71.0.1" >/dev/null
expect_eq "the flood's next request sends nothing: it spent its own budget" "$(links alice reset_link)" 4

# ---- a name claimed at registration ---------------------------------------------------------
st -j 5 /register,newbie,-,203.0.113.7 /register,newbie,-,203.0.113.8 /register,newbie,-,203.0.113.9 \
	/register,newbie,-,203.0.113.10 /register,newbie,-,203.0.113.11 >/dev/null
expect_eq "five claims of a free name from one /24: three links, no more" "$(links newbie register_link)" 3
expect_eq "its registrant, from her own /24: 202" "$(st "/register,newbie,-,192.0.2.50")" 202
expect_eq "  ... and she gets her link" "$(links newbie register_link)" 4

# ---- the second factor, guessed from elsewhere ----------------------------------------------
code_of() { grep "to=$1 kind=otp" "$DIR/outbox.log" | tail -1 | sed -n 's/.*code=\([0-9]\{6\}\).*/\1/p'; }
tok_of() { req "/login,$1,$2,$3" | $PY -c 'import json,sys; print(json.loads(sys.stdin.readline())["token"])'; }
BOBHOME=192.0.2.20
t=$(tok_of bob pw-bob $BOBHOME)
expect_eq "bob sends himself a code from home" "$(st "/mfa/send,-,-,$BOBHOME,$t")" 202
expect_eq "  ... and completes the second factor there" "$(st "/mfa/verify,-,-,$BOBHOME,$t,$(code_of bob)")" 200
ta=$(tok_of bob pw-bob 100.80.0.9)
expect_match "the attacker holds bob's password: a token from elsewhere" "$ta" '^v[0-9]\.'
st "/mfa/send,-,-,100.80.0.9,$ta" >/dev/null
bad=()
for i in 1 2 3 4 5; do bad+=("/mfa/verify,-,-,100.80.0.9,$ta,00000$i"); done
expect_eq "  ... five wrong codes: 401 x5" "$(st "${bad[@]}")" "401 401 401 401 401"
expect_eq "  ... and then even the right code is refused: the elsewhere attempts are spent" \
	"$(st "/mfa/verify,-,-,100.80.0.9,$ta,$(code_of bob)")" 401
t=$(tok_of bob pw-bob $BOBHOME)
expect_eq "bob at home: a new code" "$(st "/mfa/send,-,-,$BOBHOME,$t")" 202
expect_eq "  ... which he completes: his attempts were not the attacker's" \
	"$(st "/mfa/verify,-,-,$BOBHOME,$t,$(code_of bob)")" 200

kill -0 "$SLUICED_PID" 2>/dev/null && tap_ok "sluiced is still running" || tap_not_ok "sluiced is still running"
tap_done
