#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The audit log (issue 17, item 4), read back line by line with Python's json, as a SIEM would:
#   - a gateway (loopback, clients told apart by X-Forwarded-For): a password guesser locks an
#     account out (block lines: account_lockout, its keyed hash, never its name or a password),
#     a flood past the tenant's capacity is refused (429 lines); the token bucket (audit.rate
#     5/s, burst 30) drops most of it, and the dropped counts the lines carry add up to
#     sluice_audit_dropped_total, the lines written to sluice_audit_lines_total; a reload and
#     `user add` are operator lines; the daemon log is one record per line with an ISO date;
#     a node with no Redis never says Redis is not answering;
#   - the edge (XDP on a veth pair): a real client shed with 429s appears as the sampled edge
#     refusals; `clear prefix --reason` appears with its operator and reason; `verdict add` and
#     `verdict del` as verdict lines; logrotate (move the file, SIGHUP) loses nothing; the daemon
#     log in JSON (daemon.log_format) is one object per line;
#   - a node with both: 60 accounts failed from one /24 fire the stream job's prefix_accounts,
#     which writes a block verdict into the edge's map: a detector line and a verdict line.
# Every line of every audit file must parse and carry every field, with a dated ISO time.
# SL_DEBUG=1 leaves everything up.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"
. "$HERE/../lib/gateway.sh"

nt_require
if [ ! -x "$BUILD/sluiced" ] || [ ! -x "$BUILD/sluicectl" ]; then
	echo "Bail out! build sluiced and sluicectl first (make)"
	exit 1
fi
trap nt_teardown EXIT

# count SUMMARY PYEXPR: how many records satisfy PYEXPR (over r).
count() { $PY -c 'import json,sys; d=json.loads(sys.argv[1]); print(sum(1 for r in d["records"] if eval(sys.argv[2])))' "$1" "$2"; }
metric() { curl -s "http://127.0.0.1:$MPORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }

# ---- the gateway ---------------------------------------------------------------------------
PORT=$(free_port)
MPORT=$(free_port)
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$NT_DIR/session.key"
cat >"$NT_DIR/gw.conf" <<EOF
tenants = ( { name = "default"; reservation = 20.0; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 10.0; } );
gateway: {
  listen = "127.0.0.1:$PORT";
  credentials = "creds.txt";
  capacity = { cpu = 40.0; };
  argon2 = { m_cost_kib = 256; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
  trusted_hops = 1;
  reject_floor_ms = 5;
  login_uniform = false;
  session_key = "session.key";
};
cluster: { node = "gw-audit-1"; };
daemon: { control_socket = "$NT_DIR/gw.sock"; metrics_listen = "127.0.0.1:$MPORT"; };
audit: { output = "gw-audit.log"; rate = 5; burst = 30; };
EOF
gctl() { "$BUILD/sluicectl" -c "$NT_DIR/gw.conf" "$@"; }
# The careless operator: an audit file in a directory that is not there.
sed 's|output = "gw-audit.log"|output = "/nonexistent-sluice-audit/a.log"|' "$NT_DIR/gw.conf" >"$NT_DIR/bad.conf"
: >"$NT_DIR/creds.txt"
out=$("$BUILD/sluiced" --check-config -c "$NT_DIR/bad.conf" 2>&1)
rc=$?
expect_ne() { if [ "$2" != "$3" ]; then tap_ok "$1"; else tap_not_ok "$1"; tap_diag "  got $2"; fi; }
expect_ne "--check-config refuses an audit file it cannot create" "$rc" 0
expect_match "  ... and names it" "$out" "audit.output: cannot create /nonexistent-sluice-audit/a.log"
timeout 10 "$BUILD/sluiced" -c "$NT_DIR/bad.conf" -f >"$NT_DIR/bad.log" 2>&1
expect_eq "sluiced does not start without the audit log it was told to write" "$?" 1
expect_match "  ... and says why" "$(cat "$NT_DIR/bad.log")" "audit.output /nonexistent-sluice-audit/a.log: No such file or directory"
: >"$NT_DIR/creds.txt"
chmod 600 "$NT_DIR/creds.txt"
echo "pw-Alice-7" | gctl user add default alice.liddell >/dev/null || { echo "Bail out! user add"; exit 1; }
expect_eq "user add (no daemon yet) writes its operator line" \
	"$(grep -c '"reason":"user add"' "$NT_DIR/gw-audit.log")" 1
gw_start "$NT_DIR/gw.conf" "$NT_DIR/gw.log"

cat >"$NT_DIR/req.py" <<'PYEOF'
import concurrent.futures, http.client, sys
port, par, specs = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
def one(spec):
    user, pw, xff = spec.split(",")
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("POST", "/login", body="username=%s&password=%s" % (user, pw),
              headers={"Host": "idp.test", "X-Forwarded-For": xff,
                       "Content-Type": "application/x-www-form-urlencoded"})
    r = c.getresponse(); r.read(); c.close()
    return r.status
with concurrent.futures.ThreadPoolExecutor(par) as ex:
    print(" ".join(str(s) for s in ex.map(one, specs)))
PYEOF
# The guesser: 200 wrong passwords for one account from one /32.
specs=$(for i in $(seq 1 200); do echo "alice.liddell,Guess-$i-xyzzy,198.51.100.7"; done)
st=$($PY "$NT_DIR/req.py" "$PORT" 8 $specs)
n429=$(tr ' ' '\n' <<<"$st" | grep -c '^429$')
expect_ge "the guesser is locked out: most of 200 guesses get 429" "$n429" 150
sleep 2.5 # a second without lines: the tick writes the dropped summary
# The flood: 400 logins of 400 names from 400 /24s, 32 at a time, past a capacity of 4 a second.
specs=$(for i in $(seq 1 400); do echo "user$i,pw-$i-q,10.$((i / 250)).$((i % 250)).9"; done)
st=$($PY "$NT_DIR/req.py" "$PORT" 32 $specs)
nflood=$(tr ' ' '\n' <<<"$st" | grep -c '^429$')
expect_ge "the flood past capacity gets 429s" "$nflood" 50
sleep 1.5
# login_uniform (the shipped default): a locked-out guess is answered as a failed sign-in, and
# the audit log still says what it was. The capacity is lifted with it: what follows is about
# the counters and the stream job, and 4 logins a second let only as many of the next dozen
# through as the bucket had refilled (8 of 12 on the VM of 2026-12-04, a capacity 429 each
# for the rest), and shed the spray before the detector saw it.
sed -i 's/login_uniform = false;/login_uniform = true;/; s/capacity = { cpu = 40.0; };/capacity = { cpu = 100000.0; };/' "$NT_DIR/gw.conf"
gctl reload >/dev/null
sleep 2
specs=$(for i in $(seq 1 12); do echo "alice.liddell,Guess-u$i-xyzzy,198.51.100.8"; done)
st=$($PY "$NT_DIR/req.py" "$PORT" 1 $specs)
expect_eq "under login_uniform every guess is answered 401, the locked-out ones too" \
	"$(tr ' ' '\n' <<<"$st" | grep -c '^401$')" 12
# A spray: one password at 20 accounts, from 20 /32s; the stream job's password_accounts fires.
sleep 3 # the bucket refills (15 lines): the detector's line is not the one dropped
specs=$(for i in $(seq 1 20); do echo "spray$i,Summer2026-spray,192.0.2.$i"; done)
$PY "$NT_DIR/req.py" "$PORT" 1 $specs >/dev/null
sleep 1
# The support desk unlocks her (sluicectl clear account, where this build has it).
has_clear_account=0
gctl help clear 2>&1 | grep -q "clear account" && has_clear_account=1
if [ "$has_clear_account" = 1 ]; then
	gctl clear account default alice.liddell --from 198.51.100.7 --reason "ticket 88: locked out" >/dev/null
	expect_eq "clear account exits 0" "$?" 0
fi
sleep 0.5
A=$($PY "$ROOT/tests/lib/audit_check.py" "$NT_DIR/gw-audit.log")
expect_ge "the gateway's audit log has lines" "$(jget "$A" lines)" 40
expect_eq "every line parses as JSON" "$(jget "$A" bad_json)" 0
[ "$(jget "$A" bad_json)" = 0 ] || tap_diag "first bad line: $(jget "$A" first_bad)"
expect_eq "every line has every field" "$(jget "$A" missing)" 0
expect_eq "every time is ISO 8601 with its date, UTC, ms, and now" "$(jget "$A" bad_time)" 0
acct=$($PY -c '
import hashlib, sys
key = bytes.fromhex(open(sys.argv[1]).read().strip())
k = hashlib.blake2b(b"sluice stream accounts", key=key, digest_size=32).digest()
print(hashlib.blake2b(b"default\0alice.liddell", key=k, digest_size=16).hexdigest())' "$NT_DIR/session.key")
expect_ge "the lockout is there as blocks: account_lockout, 429, tenant, route, prefix" \
	"$(count "$A" "r['event']=='block' and r['reason']=='account_lockout' and r['decision']=='429' and r['tenant']=='default' and r['route']=='/login' and r['prefix']=='198.51.100.7/32' and r['node']=='gw-audit-1' and r['source']=='gateway'")" 10
expect_eq "  ... each with the account as its keyed hash (BLAKE2b under the session key)" \
	"$(count "$A" "r['reason']=='account_lockout' and r['account']!='$acct'")" 0
expect_ge "the flood's refusals are there: capacity reasons, 429, after the lockout" \
	"$(count "$A" "r['event']=='refusal' and r['decision']=='429' and r['reason'] in ('queue_full','pushed_out','pool_empty','codel','expired','tenant_logins','ceiling') and r['account'] is not None")" 5
expect_eq "the spray fired password_accounts: a detector line from the stream job (step_up)" \
	"$(count "$A" "r['event']=='detector' and r['source']=='stream' and r['reason']=='password_accounts' and r['decision']=='step_up' and r['tenant']=='default' and r['detail'].startswith('password ')")" 1
expect_eq "no raw account name anywhere in the file" \
	"$(grep -c -e 'alice' -e 'user17"' -e 'spray1' "$NT_DIR/gw-audit.log")" 0
expect_eq "no password anywhere in the file" \
	"$(grep -c -e 'Guess-' -e 'pw-Alice' -e 'xyzzy' -e 'pw-1' -e 'Summer2026' "$NT_DIR/gw-audit.log")" 0
drop_m=$(metric sluice_audit_dropped_total)
lines_m=$(metric sluice_audit_lines_total)
expect_ge "the rate limit dropped lines (sluice_audit_dropped_total)" "${drop_m:-0}" 100
expect_eq "  ... and the lines say how many: their dropped counts add up to it" \
	"$(jget "$A" dropped_sum)" "${drop_m:-none}"
expect_ge "  ... a summary line said it when nothing else followed" \
	"$(count "$A" "r['event']=='dropped' and r['dropped']>0 and r['decision']=='dropped'")" 1
expect_eq "sluice_audit_lines_total counts sluiced's lines (all but user add's)" \
	"${lines_m:-none}" "$(($(jget "$A" lines) - 1))"
total=$((n429 + nflood))
expect_ge "  ... written + dropped covers every 429 answered" "$((lines_m + drop_m))" "$total"
expect_ge "  ... and its lockouts are blocks with decision decoy" \
	"$(count "$A" "r['event']=='block' and r['reason']=='account_lockout' and r['decision']=='decoy' and r['prefix']=='198.51.100.8/32' and r['account']=='$acct'")" 3
expect_eq "the reload is an operator line, never dropped" \
	"$(count "$A" "r['event']=='operator' and r['reason']=='reload' and r['decision']=='applied'")" 1
expect_eq "user add's line: tenant, the account's hash, the operator, no name" \
	"$(count "$A" "r['reason']=='user add' and r['tenant']=='default' and r['account']=='$acct' and r['operator']")" 1
if [ "$has_clear_account" = 1 ]; then
	expect_eq "clear account is an operator line: tenant, the account's hash, prefix, reason, operator" \
		"$(count "$A" "r['event']=='operator' and r['decision']=='clear_account' and r['tenant']=='default' and r['account']=='$acct' and r['prefix']=='198.51.100.7/32' and r['reason']=='ticket 88: locked out' and bool(r['operator'])")" 1
else
	tap_skip "clear account is an operator line" "this build has no sluicectl clear account"
fi
bad_log=$(grep -cvE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z (error|warn |info |debug) ' "$NT_DIR/gw.log")
expect_eq "the daemon log: every line one record with an ISO date and a level" "$bad_log" 0
expect_eq "a node with no Redis never logs that Redis is not answering" \
	"$(grep -c 'not answering' "$NT_DIR/gw.log")" 0
kill -TERM "$SLUICED_PID" 2>/dev/null && wait "$SLUICED_PID" 2>/dev/null
SLUICED_PID=

# ---- the edge ------------------------------------------------------------------------------
nt_setup || { echo "Bail out! cannot build the veth topology"; exit 1; }
nt_client_xdp_pass || { echo "Bail out! cannot attach XDP to the client veth"; exit 1; }
REAL=203.0.113.10
nt_client_addr "$REAL"
nt_http_server || { echo "Bail out! no HTTP server on port 80"; exit 1; }
cat >"$NT_DIR/asn.csv" <<'EOF'
prefix,asn,class
203.0.113.0/24,64501,residential
EOF
# Every shed sampled (event_sample 1) and no audit rate limit: each 429 is a line.
cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 80; action = "reply"; cost = 1; } );
  state_entries = 4096;
  asn_table = "$NT_DIR/asn.csv";
  pin_path = "$PIN";
  event_sample = 1;
};
classes = (
  { name = "residential"; v4_prefix = 32; v6_prefix = 64; v4_parent = 24; v6_parent = 48;
    rate = 0.001; burst = 6.0; parent_rate = 0.001; parent_burst = 1000.0; mode = "enforce"; },
  { name = "unknown"; rate = 0.001; burst = 10.0; }
);
cluster: { node = "edge-audit-1"; };
daemon: { control_socket = "$SOCK"; log_format = "json"; };
audit: { output = "$NT_DIR/edge-audit.log"; rate = 0; };
EOF
nt_start_sluiced || { echo "Bail out! sluiced did not start"; exit 1; }
ok=0
for i in $(seq 1 10); do
	code=$(ip netns exec "$NS_C" curl -s -o /dev/null -w '%{http_code}' -m 3 \
		--interface "$REAL" "http://10.200.0.2:80/")
	[ "$code" = 200 ] && ok=$((ok + 1))
done
expect_eq "a new /32 gets 3 of 10 connections, 7 are shed with 429" "$ok" 3
sleep 0.5
sluicectl clear prefix "$REAL" --reason "ticket 4711: customer locked out" >/dev/null
expect_eq "clear prefix exits 0" "$?" 0
sluicectl verdict add 198.51.100.0/24 --action block --ttl 10m --reason "abuse ticket 9" >/dev/null
sluicectl verdict del 198.51.100.0/24 >/dev/null
# logrotate: move the file, HUP; what follows goes to a new file, nothing is lost.
mv "$NT_DIR/edge-audit.log" "$NT_DIR/edge-audit.log.1"
kill -HUP "$SLUICED_PID"
for _ in $(seq 1 50); do [ -s "$NT_DIR/edge-audit.log" ] && break; sleep 0.1; done
expect_eq "after the rotation's SIGHUP sluiced writes to a new file (its reload line)" \
	"$(grep -c '"reason":"reload"' "$NT_DIR/edge-audit.log" 2>/dev/null)" 1
sluicectl clear prefix "$REAL" --reason "second look" >/dev/null
sleep 0.3
E=$($PY "$ROOT/tests/lib/audit_check.py" "$NT_DIR/edge-audit.log.1" "$NT_DIR/edge-audit.log")
expect_eq "every edge audit line parses as JSON" "$(jget "$E" bad_json)" 0
expect_eq "every line has every field" "$(jget "$E" missing)" 0
expect_eq "every time is ISO 8601 with its date" "$(jget "$E" bad_time)" 0
expect_eq "the 7 sheds are there as the edge's sampled refusals (429, the /32, the node)" \
	"$(count "$E" "r['source']=='edge' and r['event']=='refusal' and r['decision']=='429' and r['prefix']=='$REAL/32' and r['node']=='edge-audit-1' and 'sampled 1 in 1' in r['detail']")" 7
expect_eq "the clear is an operator line with its operator and reason" \
	"$(count "$E" "r['event']=='operator' and r['decision']=='clear_prefix' and r['prefix']=='$REAL/32' and r['reason']=='ticket 4711: customer locked out' and bool(r['operator'])")" 1
expect_eq "  ... the second clear, after the rotation, is in the new file" \
	"$(grep -c '"reason":"second look"' "$NT_DIR/edge-audit.log")" 1
expect_eq "  ... and nothing from before the rotation is" \
	"$(grep -c 'ticket 4711' "$NT_DIR/edge-audit.log")" 0
expect_eq "verdict add is a verdict line: block, the prefix, the reason, the operator" \
	"$(count "$E" "r['event']=='verdict' and r['decision']=='block' and r['prefix']=='198.51.100.0/24' and r['reason']=='abuse ticket 9' and bool(r['operator'])")" 1
expect_eq "verdict del is one too" \
	"$(count "$E" "r['event']=='verdict' and r['decision']=='removed' and r['prefix']=='198.51.100.0/24'")" 1
badj=$($PY -c '
import json, sys
bad = 0
for l in open(sys.argv[1]):
    try:
        r = json.loads(l)
        assert set(r) >= {"time", "level", "msg"} and r["time"][10] == "T"
    except Exception:
        bad += 1
print(bad)' "$NT_DIR/sluiced.log")
expect_eq "daemon.log_format json: every daemon log line is one JSON record" "$badj" 0
expect_ge "  ... and there are some" "$(wc -l <"$NT_DIR/sluiced.log")" 3

# ---- the stream job's own verdicts (a node with both an edge and a gateway) ----------------
nt_stop_sluiced TERM
cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 8081; front = "syn"; cost = 1; } );
  state_entries = 4096;
  asn_table = "$NT_DIR/asn.csv";
  pin_path = "$PIN";
};
classes = ( { name = "residential"; rate = 100.0; burst = 100.0; },
            { name = "unknown"; rate = 100.0; burst = 100.0; } );
tenants = ( { name = "default"; reservation = 100.0; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 10.0; } );
gateway: {
  listen = "127.0.0.1:18080";
  credentials = "creds.txt";
  capacity = { cpu = 1000000.0; };
  argon2 = { m_cost_kib = 256; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
  trusted_hops = 1;
  reject_floor_ms = 5;
  session_key = "session.key";
};
cluster: { node = "both-audit-1"; };
daemon: { control_socket = "$SOCK"; };
audit: { output = "$NT_DIR/stream-audit.log"; rate = 0; };
EOF
nt_start_sluiced || { echo "Bail out! sluiced (edge and gateway) did not start"; exit 1; }
# 60 accounts failed from one /24 (one /32 each: no pair is locked): prefix_accounts (50).
specs=$(for i in $(seq 1 60); do echo "victim$i,pw-$i-zz,198.51.100.$i"; done)
ip netns exec "$NS_S" $PY "$NT_DIR/req.py" 18080 4 $specs >/dev/null
sleep 0.5
S=$($PY "$ROOT/tests/lib/audit_check.py" "$NT_DIR/stream-audit.log")
expect_eq "every line of the stream job's audit log parses, with every field" \
	"$(jget "$S" bad_json) $(jget "$S" missing) $(jget "$S" bad_time)" "0 0 0"
expect_eq "prefix_accounts fired: a detector line (block, the /24, the tenant)" \
	"$(count "$S" "r['event']=='detector' and r['source']=='stream' and r['reason']=='prefix_accounts' and r['decision']=='block' and r['prefix']=='198.51.100.0/24' and r['tenant']=='default'")" 1
expect_eq "  ... and the verdict it wrote into the edge's map is a verdict line" \
	"$(count "$S" "r['event']=='verdict' and r['source']=='stream' and r['decision']=='block' and r['prefix']=='198.51.100.0/24' and 'accounts failed' in r['reason'] and 'prefix_accounts' in r['detail'] and r['node']=='both-audit-1'")" 1
expect_match "  ... which verdict list shows" "$(sluicectl verdict list)" "198.51.100.0/24"
expect_eq "no account name or password in it" \
	"$(grep -c -e 'victim' -e 'pw-' "$NT_DIR/stream-audit.log")" 0
tap_done
