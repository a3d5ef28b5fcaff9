#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# An office signs in through the edge, on the numbers a new user gets (issue 19): the shipped
# examples/sluice.conf classes and edge block, its tenant budgets, and the shipped routes, read
# from the files at test time (scripts/conf_lists.py), so a change to a shipped number is what
# this tests. Only interfaces, listen addresses, the ASN table and paths are this suite's own.
# The gateway (the built-in Argon2id login, kept light: 1 MiB, t=1, capacity far above the
# load, so it is not what limits) listens on port 80 behind XDP on the stateless front (the
# default), which charges each first request its route: a login is 950 units.
#
#   - an office: four NAT egress addresses in a business /24, ~11 logins/s in all for 30 s (330 logins), a
#     new TCP connection per login (as browsers behind NAT open them), each a different
#     employee with the right password: every login answered 200; 0 429s from the edge, 0
#     from the gateway; the edge charged them (business first requests admitted rose by the
#     number of logins, none shed);
#   - a hosting /24 at the same rate: shed by the edge (XDP's 429s, counted as the hosting
#     class's sheds), with only what its burst holds let through.
# SL_DEBUG=1 leaves everything up. SL_EXAMPLES=DIR reads sluice.conf and gateway.conf from DIR
# instead of examples/ (to try other numbers on the same office).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"
nt_require
for b in sluiced sluicectl bpf/bare_pass.bpf.o; do
	[ -e "$BUILD/$b" ] || { echo "Bail out! build $BUILD/$b first (make; make net-test)"; exit 1; }
done

RATE=11        # logins per second, the whole office (22,000 people, 60 % in 20 minutes)
SECONDS_OFFICE=30
SECONDS_HOSTING=10
OFFICE=(192.0.2.11 192.0.2.12 192.0.2.13 192.0.2.14)
HOSTING=(198.51.100.21 198.51.100.22 198.51.100.23 198.51.100.24)
GW_ADDR=10.200.0.2
HOST=login.acme.example   # tenant acme (examples/gateway.conf's hosts)
PASSWORD=pw-office
CONF_LISTS=("$PY" "$ROOT/scripts/conf_lists.py")
EX=${SL_EXAMPLES:-$ROOT/examples}

nt_setup || { echo "Bail out! cannot create the veth topology"; exit 1; }
nt_client_xdp_pass || { echo "Bail out! cannot attach XDP_PASS to the client veth"; exit 1; }
nt_client_addr "${OFFICE[@]}" "${HOSTING[@]}"

# ---- the config: shipped pieces, our interfaces and paths ----------------------------------
cat >"$NT_DIR/asn.csv" <<EOF
prefix,asn,class
192.0.2.0/24,64502,business
198.51.100.0/24,64500,hosting
EOF
if "${CONF_LISTS[@]}" same "$EX/sluice.conf" "$EX/gateway.conf" routes; then
	tap_ok "examples/sluice.conf and examples/gateway.conf price the routes alike"
else
	tap_not_ok "examples/sluice.conf and examples/gateway.conf price the routes alike"
	tap_diag "the edge and the gateway of one node read one routes list; this suite uses gateway.conf's"
fi
{
	echo "# Built by tests/net/test_office.sh from $EX/sluice.conf and $EX/gateway.conf."
	"${CONF_LISTS[@]}" group "$EX/sluice.conf" edge 'interfaces=["vs"]' \
		"asn_table=\"$NT_DIR/asn.csv\"" "pin_path=\"$PIN\""
	"${CONF_LISTS[@]}" list "$EX/sluice.conf" classes
	"${CONF_LISTS[@]}" tenants "$EX/sluice.conf" "$EX/gateway.conf" \
		"[\"$GW_ADDR:80\"]"
	"${CONF_LISTS[@]}" list "$EX/gateway.conf" routes
	"${CONF_LISTS[@]}" group "$EX/gateway.conf" counters
	cat <<EOF
gateway: {
  listen = "$GW_ADDR:80";
  credentials = "$NT_DIR/creds.txt";
  delivery_log = "$NT_DIR/outbox.log";   # POST /mfa/send and the like are routed
  capacity = { cpu = 400000.0; };
  argon2 = { m_cost_kib = 1024; t_cost = 1; parallelism = 1; memory_budget_mib = 2; };
};
daemon: { control_socket = "$SOCK"; };
EOF
} >"$NT_DIR/sluice.conf" || { echo "Bail out! cannot assemble the config from examples/"; exit 1; }

# One hash, one password for every employee (the staff are many, the hash is the same work).
: >"$NT_DIR/creds.txt"
chmod 600 "$NT_DIR/creds.txt"
echo "$PASSWORD" | sluicectl user add acme staff00000 >/dev/null 2>&1 ||
	{ echo "Bail out! sluicectl user add"; tap_diag "$(sluicectl check 2>&1 | head)"; exit 1; }
ACCOUNTS=$((RATE * (SECONDS_OFFICE + SECONDS_HOSTING) + 10))
$PY - "$NT_DIR/creds.txt" "$ACCOUNTS" <<'PYEOF'
import sys
path, n = sys.argv[1], int(sys.argv[2])
phc = open(path).read().strip().split(",", 2)[2]
with open(path, "a") as f:
    for i in range(1, n):
        f.write("acme,staff%05d,%s\n" % (i, phc))
PYEOF

if ! nt_start_sluiced; then
	echo "Bail out! sluiced did not start (config: $NT_DIR/sluice.conf)"
	exit 1
fi
xdp_attached && tap_ok "sluiced attached XDP to the server veth" ||
	tap_not_ok "sluiced attached XDP to the server veth"
expect_match "port 80 runs the stateless front (the default): first requests charged their route" \
	"$(grep 'port 80 ' "$NT_DIR/sluiced.log")" 'port 80 .*stateless front'
for i in $(seq 1 50); do
	ip netns exec "$NS_S" ss -ltn 2>/dev/null | grep -q "$GW_ADDR:80 " && break
	sleep 0.1
done
expect_match "the gateway listens on $GW_ADDR:80, behind the edge" \
	"$(grep 'gateway listening' "$NT_DIR/sluiced.log")" "listening on $GW_ADDR:80"
expect_eq "the office's address is typed business" \
	"$(jget "$(sluicectl prefix show "${OFFICE[0]}" --json)" class)" business
expect_eq "the hosting source is typed hosting" \
	"$(jget "$(sluicectl prefix show "${HOSTING[0]}" --json)" class)" hosting

# edge COUNTER CLASS-OR-ROUTE: one number from sluicectl stats --json.
edge() {
	$PY -c '
import json, sys
d = json.loads(sys.argv[1])
what, name = sys.argv[2], sys.argv[3]
if what == "route":
    r = [x for x in d.get("first_requests", {}).get("by_route", []) if x["name"] == name]
    print(r[0]["admitted"] if r else 0)
elif what == "route_shed":
    r = [x for x in d.get("first_requests", {}).get("by_route", []) if x["name"] == name]
    print(r[0]["shed"] if r else 0)
elif what == "reason":
    print(d["by_reason"].get(name, 0))
else:
    print(d["by_class"][name][what])' "$1" "$2" "$3"
}
# gw JSON FIELD: acme's shed count or a gateway total from sluicectl tenants --json.
gw() {
	$PY -c '
import json, sys
d = json.loads(sys.argv[1])
if sys.argv[2] == "acme_shed":
    print([t for t in d["tenants"] if t["name"] == "acme"][0]["shed"])
else:
    print(d["gateway"][sys.argv[2]])' "$1" "$2"
}
office() { # NAME RATE SECONDS FIRST SRC...
	local out=$1 rate=$2 secs=$3 first=$4
	shift 4
	local srcs=() a
	for a in "$@"; do srcs+=(--src "$a"); done
	ip netns exec "$NS_C" $PY "$ROOT/scripts/office_logins.py" --dst "$GW_ADDR" --port 80 \
		--host "$HOST" "${srcs[@]}" --rate "$rate" --seconds "$secs" --first "$first" \
		--password "$PASSWORD" >"$NT_DIR/$out.json"
}

# ---- the office -------------------------------------------------------------------------------
e0=$(sluicectl stats --json)
g0=$(sluicectl tenants --json)
office office "$RATE" "$SECONDS_OFFICE" 0 "${OFFICE[@]}"
r=$(cat "$NT_DIR/office.json")
e1=$(sluicectl stats --json)
g1=$(sluicectl tenants --json)
tap_diag "office: $r"
sent=$(jget "$r" sent)
expect_eq "the office sent $((RATE * SECONDS_OFFICE)) logins from ${#OFFICE[@]} addresses" "$sent" \
	$((RATE * SECONDS_OFFICE))
expect_ge "  ... at ~$RATE a second (x100)" "$($PY -c "print(int(100 * $(jget "$r" rate)))")" \
	$((RATE * 100 - 50))
expect_eq "every login answered 200" "$(jget "$r" ok)" "$sent"
expect_eq "  ... 0 answered 429 by the edge" "$(jget "$r" edge_429)" 0
expect_eq "  ... 0 answered 429 by the gateway" "$(jget "$r" gateway_429)" 0
expect_eq "  ... no connection failed or timed out" "$(jget "$r" failed)" 0
d=$(($(edge "$e1" passed business) - $(edge "$e0" passed business)))
expect_ge "the edge admitted the business class's first requests: +$d for $sent logins" "$d" "$sent"
expect_le "  ... and no more than the logins (+5 for stray retransmissions)" "$d" $((sent + 5))
expect_eq "  ... shed none of them (sluicectl stats: business shed)" \
	"$(($(edge "$e1" shed business) - $(edge "$e0" shed business)))" 0
# A client port that lands on a tuple the gateway still holds in TIME_WAIT (it closed the last
# connection there: Connection: close) is reopened by the kernel and charged at its ACK, the
# port's unreadable cost (a login's), without its request being read: a few a run.
tw=$(($(edge "$e1" reason time_wait_reuse) - $(edge "$e0" reason time_wait_reuse)))
d=$(($(edge "$e1" route "POST /login") - $(edge "$e0" route "POST /login")))
expect_ge "  ... each charged at XDP as a login (first_requests POST /login +$d, TIME_WAIT reopened +$tw)" \
	$((d + tw)) "$sent"
expect_eq "  ... the route's sheds did not move" \
	"$(($(edge "$e1" route_shed "POST /login") - $(edge "$e0" route_shed "POST /login")))" 0
d=$(($(edge "$e1" reason handoff) - $(edge "$e0" reason handoff)))
expect_ge "  ... and the read ones handed to the gateway's listener by TC (handoff +$d)" \
	$((d + tw)) "$sent"
expect_eq "the gateway shed none of acme's logins" \
	"$(($(gw "$g1" acme_shed) - $(gw "$g0" acme_shed)))" 0
d=$(($(gw "$g1" hashes) - $(gw "$g0" hashes)))
expect_ge "  ... and hashed each password (+$d hashes)" "$d" "$sent"

# ---- a hosting /24 at the office's rate ---------------------------------------------------------
e1=$(sluicectl stats --json)
office hosting "$RATE" "$SECONDS_HOSTING" $((RATE * SECONDS_OFFICE + 5)) "${HOSTING[@]}"
r=$(cat "$NT_DIR/hosting.json")
e2=$(sluicectl stats --json)
tap_diag "hosting: $r"
sent=$(jget "$r" sent)
shed=$(jget "$r" edge_429)
expect_ge "a hosting /24 at $RATE logins/s is shed by the edge: $shed of $sent answered XDP's 429" \
	"$shed" $((sent - 5))
expect_le "  ... only what its burst holds got through ($(jget "$r" ok))" "$(jget "$r" ok)" 5
expect_eq "  ... every login answered (200 or 429, no timeout)" "$(jget "$r" answered)" "$sent"
expect_eq "  ... none of them by the gateway's 429" "$(jget "$r" gateway_429)" 0
d=$(($(edge "$e2" shed hosting) - $(edge "$e1" shed hosting)))
expect_ge "sluicectl stats: the hosting class shed +$d" "$d" "$shed"
d=$(($(edge "$e2" reason replied_429) - $(edge "$e1" reason replied_429)))
expect_ge "  ... and XDP replied 429 +$d times" "$d" "$shed"
expect_eq "  ... while the business class shed nothing" \
	"$(($(edge "$e2" shed business) - $(edge "$e0" shed business)))" 0

kill -0 "$SLUICED_PID" 2>/dev/null && tap_ok "sluiced is still running" || tap_not_ok "sluiced is still running"
tap_done
