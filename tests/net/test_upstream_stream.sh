#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The stream job on proxied sign-ins (issue 15): nginx verifies each password (auth_basic,
# SHA-512-crypt), sluice forwards a sign-in route to it and feeds nginx's verdicts to the
# stream job exactly as it feeds its built-in /login's. Checks:
#  - a password spray (one password against 10 accounts, each from its own /24, so no pair
#    or prefix counter ever trips) is forwarded and answered 401 by nginx, and then the job
#    flags the password (password_accounts, threshold 10); from then on that password is
#    stepped up for every account and never reaches nginx: the attacker cannot even tell a
#    right guess from a wrong one (a real account's right password, sprayed, is stepped up
#    too), while the same account's own password still signs in (200 from nginx);
#  - one /24 trying 14 accounts, each with its own wrong password (prefix_accounts,
#    threshold 12) is recorded against that /24, and the spraying /24s of the first part
#    are not;
#  - the sign-ins the job saw are the ones nginx answered: sluice_gateway_logins_total by
#    outcome adds up with nginx's access log.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
. "$HERE/../lib/nginx.sh"
gw_suite ups nginx crypt

free_ports GWPORT NGPORT NG2PORT MPORT

# ---- nginx: 30 accounts, the password verified per request -----------------------------------
mkdir -p "$DIR/ng"
chmod 755 "$DIR"
nginx_htpasswd "$DIR/ng/htpasswd" 1000 'alice:Winter2026!' $(for i in $(seq -w 1 29); do echo "u$i:own-$i"; done)
nginx_conf "$DIR/ng" <<EOF
  log_format who '\$remote_user \$status';
  server {
    listen 127.0.0.1:$NGPORT;
    access_log $DIR/ng/logs/access.log who;
    location = /signin {
      auth_basic "idp";
      auth_basic_user_file $DIR/ng/htpasswd;
      proxy_pass http://127.0.0.1:$NG2PORT/ok;
    }
  }
  server {
    listen 127.0.0.1:$NG2PORT;
    location = /ok { default_type application/json; return 200 '{"signed_in":true}'; }
  }
EOF
nginx_start "$DIR/ng" "$NGPORT" "$NG2PORT"

# alice's password is the one the spray uses: a real account whose password is on the
# attacker's list. Her own sign-ins come from her usual /24.
cat >"$DIR/gw.conf" <<EOF
tenants = ( { name = "default"; hosts = ["idp.test"]; reservation = 1000.0; } );
routes = (
  { name = "signin"; method = "POST"; path = "/signin"; cpu = 10.0;
    login = { account = "basic"; success = [200]; failure = [401]; }; }
);
gateway: {
  listen = "127.0.0.1:$GWPORT";
  upstream = { url = "http://127.0.0.1:$NGPORT"; concurrency = 4; timeout_ms = 3000; };
  capacity = { cpu = 100000.0; };
  trusted_hops = 1;
  reject_floor_ms = 0;
};
counters: { login_parent = { enabled = false; }; };
stream: { window_s = 600; ladder_delay_ms = 100;
          password_accounts = { threshold = 10; };
          prefix_accounts = { threshold = 12; }; };
daemon: { control_socket = "$DIR/ctl.sock"; metrics_listen = "127.0.0.1:$MPORT"; };
EOF
gw_start "$DIR/gw.conf" "$DIR/sluiced.log"

cat >"$DIR/s.py" <<'PYEOF'
import base64, http.client, json, sys
port = int(sys.argv[1])
def signin(user, pw, xff):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    auth = base64.b64encode(("%s:%s" % (user, pw)).encode()).decode()
    c.request("POST", "/signin", body="", headers={"Host": "idp.test", "X-Forwarded-For": xff,
                                                  "Authorization": "Basic " + auth})
    r = c.getresponse()
    body = r.read().decode()
    c.close()
    return "%d%s" % (r.status, "su" if "step_up" in body else "")  # 401su: a step-up
out = [signin(*a.split(",")) for a in sys.argv[2:]]
print(" ".join(out))
PYEOF
s() { $PY "$DIR/s.py" "$GWPORT" "$@"; }
seen() { grep -c . "$DIR/ng/logs/access.log" 2>/dev/null || echo 0; }
metric() { gw_metric "$@"; } # metric NAME LABELS...
records() {
	"$BUILD/sluicectl" -c "$DIR/gw.conf" wouldblock --json | $PY -c 'import json,sys
print(" ".join(sorted(set("%s:%s" % (r["rule"], r["key"]) for r in json.load(sys.stdin)["records"]))))'
}

r=$(s alice,Winter2026!,192.0.2.10)
expect_eq "alice signs in from home through nginx: 200" "$r" 200

# ---- 1. a password spray ------------------------------------------------------------------------
args=()
for i in $(seq 1 10); do args+=("u$(printf %02d "$i"),Winter2026!,100.64.$i.7"); done
r=$(s "${args[@]}")
tap_diag "10 accounts, one password, 10 /24s: $r"
expect_eq "the spray's first 10 sign-ins reach nginx and are its 401s (no counter trips)" \
	"$(tr ' ' '\n' <<<"$r" | grep -c '^401$') $(seen)" "10 11"
# The job flags the password once it has seen 10 accounts fail with it; it works on its
# own thread, so the next attempts are tried until the escalation is in force (at most 5 s).
n=0 got=
for i in $(seq 11 28); do
	before=$(seen)
	got=$(s "u$i,Winter2026!,100.64.$i.7")
	n=$((n + 1))
	[ "$got" = 401su ] && break
	sleep 0.3
done
tap_diag "the spray's attempt $((10 + n)) was answered '$got'"
expect_eq "the sprayed password is flagged: the next attempt gets a step-up" "$got" 401su
expect_eq "  ... which never reached nginx" "$(seen)" "$before"
b=$(seen)
r=$(s "u29,Winter2026!,100.64.99.7" "alice,Winter2026!,100.64.98.7")
expect_eq "  ... for every account: an unknown guess and a real account's right password alike" \
	"$r" "401su 401su"
expect_eq "  ... neither reached nginx" "$(seen)" "$b"
r=$(s "u05,own-05,100.64.5.7")
expect_eq "an account hit by the spray still signs in with its own password: nginx's 200" "$r" 200

# ---- 2. one /24 against many accounts -----------------------------------------------------------
args=()
for i in $(seq 1 14); do args+=("u$(printf %02d "$((i + 15))"),guess-$i,203.0.113.$((i + 10))"); done
r=$(s "${args[@]}")
expect_eq "14 accounts from one /24, each its own wrong password: nginx's 401s" \
	"$(tr ' ' '\n' <<<"$r" | grep -c '^401$')" 14
rec=
for _ in $(seq 1 25); do
	rec=$(records)
	grep -q "prefix_accounts:203.0.113.0/24" <<<"$rec" && break
	sleep 0.2
done
tap_diag "records: $rec"
expect_match "the /24 is recorded by prefix_accounts (threshold 12)" "$rec" "prefix_accounts:203.0.113.0/24"
expect_match "  ... and the spray's password by password_accounts" "$rec" "password_accounts:"
if grep -q "prefix_accounts:100.64" <<<"$rec"; then tap_not_ok "none of the spray's /24s (one attempt each) is"
else tap_ok "none of the spray's /24s (one attempt each) is"; fi

# ---- what the job saw is what nginx answered -------------------------------------------------------
ok=$(metric sluice_gateway_logins_total 'outcome="ok"')
failed=$(metric sluice_gateway_logins_total 'outcome="failed"')
ng200=$(grep -c ' 200$' "$DIR/ng/logs/access.log")
ng401=$(grep -c ' 401$' "$DIR/ng/logs/access.log")
tap_diag "sluice: ok $ok, failed $failed; nginx: 200 x $ng200, 401 x $ng401"
expect_eq "the sign-ins counted ok and failed are nginx's 200s and 401s" "$ok $failed" "$ng200 $ng401"
expect_ge "  ... and the step-ups are counted apart" "$(metric sluice_gateway_logins_total 'outcome="step_up"')" 3

tap_done
