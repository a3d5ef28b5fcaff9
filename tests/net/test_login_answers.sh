#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# What a refused login looks like with the default config (gateway.login_uniform = true),
# over loopback against a gateway-only sluiced in a temp dir:
#  - a wrong password, a missing account, and a login throttled by the per-account counter
#    (even with the right password) give byte-identical answers (status line, headers but
#    Date, body), none sooner than the floor, none with Retry-After;
#  - a login refused by tenant_logins, the tenant's capacity (fail closed when Redis is out),
#    is a 429 with Retry-After: it says nothing about the account, and telling a right
#    password it is wrong would be worse than saying the tenant is busy;
#  - and the tenant's capacity judges a throttled login as it judges any other (issue 14): a
#    spent pair, known or missing, gets that same 429, not the 401 that would tell it apart.
# SL_DEBUG=1 leaves the directory and the daemon's log in place.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
gw_suite la built

PORT=$(free_port)
MPORT=$(free_port)
FLOOR_MS=200
# No login_uniform key: the default is under test. tenant_logins: 8 logins, then one every
# 1000 s; login_failures: 2 per (account, prefix).
cat >"$DIR/gw.conf" <<EOF
tenants = ( { name = "default"; reservation = 5000.0; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 100.0; } );
gateway: {
  listen = "127.0.0.1:$PORT";
  credentials = "creds.txt";
  capacity = { cpu = 10000.0; };
  argon2 = { m_cost_kib = 256; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
  trusted_hops = 1;
  reject_floor_ms = $FLOOR_MS;
};
counters: {
  login_failures = { rate = 0.001; burst = 2.0; };
  tenant_logins = { rate = 0.001; burst = 8.0; };
};
daemon: { control_socket = "$DIR/ctl.sock"; metrics_listen = "127.0.0.1:$MPORT"; };
EOF
: >"$DIR/creds.txt"
chmod 600 "$DIR/creds.txt"
# From another directory: the relative credentials path is the config file's directory's.
(cd / && echo pw-alice | "$BUILD/sluicectl" -c "$DIR/gw.conf" user add default alice >/dev/null) ||
	{ echo "Bail out! user add"; exit 1; }
grep -q '^default,alice,' "$DIR/creds.txt" && tap_ok "sluicectl user add wrote the credentials next to the config" ||
	tap_not_ok "sluicectl user add wrote the credentials next to the config"

gw_start "$DIR/gw.conf" "$DIR/sluiced.log"

# login USER PASSWORD XFF -> one JSON line: status, what a client sees (but Date), ms.
login() {
	$PY - "$PORT" "$@" <<'PYEOF'
import http.client, json, sys, time
port, user, pw, xff = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
t0 = time.monotonic()
c.request("POST", "/login", body="username=%s&password=%s" % (user, pw),
          headers={"Host": "x.test", "X-Forwarded-For": xff,
                   "Content-Type": "application/x-www-form-urlencoded"})
r = c.getresponse()
body = r.read().decode()
ms = (time.monotonic() - t0) * 1000
h = sorted((k.lower(), v) for k, v in r.getheaders() if k.lower() != "date")
print(json.dumps({"status": r.status, "shape": json.dumps([r.status, r.reason, h, body]),
                  "retry_after": r.getheader("Retry-After") or "", "ms": round(ms, 1)}))
PYEOF
}
j() { $PY -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

wrong=$(login alice nope 192.0.2.1)
missing=$(login mallory nope 192.0.2.2)
wrong2=$(login alice nope2 192.0.2.1)
throttled=$(login alice nope3 192.0.2.1)
throttled_right=$(login alice pw-alice 192.0.2.1)
missing_throttled=$(login mallory nope 192.0.2.2 >/dev/null; login mallory nope 192.0.2.2)
expect_eq "a wrong password is a 401" "$(j "$wrong" status)" 401
n=$(for r in "$wrong" "$missing" "$wrong2" "$throttled" "$throttled_right" "$missing_throttled"; do
	j "$r" shape; done | sort -u | wc -l)
expect_eq "wrong password, missing account, throttled (wrong and right password, known and missing account): one answer" "$n" 1
slow=1
for r in "$wrong" "$missing" "$throttled" "$throttled_right" "$missing_throttled"; do
	$PY -c "import sys; sys.exit(0 if float(sys.argv[1]) >= $FLOOR_MS else 1)" "$(j "$r" ms)" || slow=0
done
expect_eq "  ... none sooner than the ${FLOOR_MS} ms floor" "$slow" 1
expect_eq "  ... and no Retry-After on the throttled one" "$(j "$throttled_right" retry_after)" ""
expect_eq "alice from her own prefix still signs in" "$(j "$(login alice pw-alice 198.51.100.1)" status)" 200

# The tenant's budget (8): whatever is left goes to right passwords from fresh prefixes,
# then the tenant is refused with a 429 that says when to come back.
st=""
for i in $(seq 1 12); do
	r=$(login alice pw-alice "203.0.113.$i")
	st="$st $(j "$r" status)"
	[ "$(j "$r" status)" = 429 ] && break
done
expect_match "tenant_logins spent: the tenant is refused with a 429 (statuses:$st)" "$st" " 429$"
expect_ge "  ... with a Retry-After" "$(j "$r" retry_after)" 1
m=$($PY "$ROOT/tests/lib/prom.py" "http://127.0.0.1:$MPORT/metrics" sluice_gateway_shed_total tenant=default reason=tenant_logins)
expect_ge "  ... counted as a tenant_logins shed on /metrics" "${m:-0}" 1
st=""
for r in "$(login alice nope4 192.0.2.1)" "$(login mallory nope 192.0.2.2)" "$(login alice nope 192.0.2.77)"; do
	st="$st $(j "$r" status)"
done
expect_eq "  ... and so is a throttled pair, known or missing, like a fresh one: 429 x3" "$st" " 429 429 429"
tap_done
