#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Upstream mode: a tenant names its own upstream (tenants[].upstream), between the route's
# and the gateway's (route > tenant > gateway). Two nginx instances on loopback, each with
# an access log per server:
#  - tenant alpha's traffic reaches only its upstream (nginx 1), beta's only its own (nginx
#    2), in both directions, with each request's Host kept;
#  - gamma names none: gateway.upstream.url's; delta says "builtin": the gateway answers
#    itself and no nginx sees a request;
#  - a route that names its own upstream wins over every tenant's;
#  - epsilon's upstream is down: its requests are 429 with Retry-After, and alpha's keep
#    being answered 200 meanwhile;
#  - a bad tenants[].upstream is refused at load with file:line.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
. "$HERE/../lib/nginx.sh"
gw_suite upt nginx

GWPORT=$(free_port)
A=$(free_port) G=$(free_port) B=$(free_port) R=$(free_port) DEAD=$(free_port)
MPORT=$(free_port)
chmod 755 "$DIR"
# ng NAME PORT1 LOG1 PORT2 LOG2: one nginx instance with two servers, a log each
ng() {
	nginx_conf "$DIR/$1" 64 <<EOF
  log_format h '\$request_method \$uri host=\$host';
  server {
    listen 127.0.0.1:$2;
    access_log $DIR/$3.log h;
    location / { default_type text/plain; return 200 "$3\n"; }
  }
  server {
    listen 127.0.0.1:$4;
    access_log $DIR/$5.log h;
    location / { default_type text/plain; return 200 "$5\n"; }
  }
EOF
	nginx_start "$DIR/$1" "$2" "$4"
}
ng ng1 "$A" alpha "$G" gw
ng ng2 "$B" beta "$R" route

cat >"$DIR/gw.conf" <<EOF
tenants = (
  { name = "alpha"; hosts = ["alpha.test"]; reservation = 1000.0; upstream = "http://127.0.0.1:$A"; },
  { name = "beta"; hosts = ["beta.test"]; reservation = 1000.0; upstream = "http://127.0.0.1:$B"; },
  { name = "gamma"; hosts = ["gamma.test"]; reservation = 1000.0; },
  { name = "delta"; hosts = ["delta.test"]; reservation = 1000.0; upstream = "builtin"; },
  { name = "epsilon"; hosts = ["epsilon.test"]; reservation = 1000.0; upstream = "http://127.0.0.1:$DEAD"; }
);
routes = (
  { name = "validate"; method = "GET"; path = "/token/validate"; cpu = 1.0; },
  { name = "pinned"; method = "GET"; path = "/pinned"; cpu = 1.0; upstream = "http://127.0.0.1:$R"; }
);
gateway: {
  listen = "127.0.0.1:$GWPORT";
  upstream = { url = "http://127.0.0.1:$G"; concurrency = 2; timeout_ms = 2000; down_ms = 1000; };
  capacity = { cpu = 8000.0; };
  reject_floor_ms = 0;
};
daemon: { control_socket = "$DIR/ctl.sock"; metrics_listen = "127.0.0.1:$MPORT"; };
EOF
gw_start "$DIR/gw.conf" "$DIR/sluiced.log"

# get HOST PATH: the status, then the body
get() { curl -s -w ' %{http_code}' -H "Host: $1" "http://127.0.0.1:$GWPORT$2" | tr -d '\n'; }
n() { cat "$DIR/$1.log" 2>/dev/null | grep -c "$2" || true; }

for i in $(seq 1 10); do get alpha.test /token/validate >/dev/null; get beta.test /token/validate >/dev/null; done
expect_eq "alpha's 10 requests all reached its own nginx (alpha.log)" "$(n alpha 'host=alpha.test')" 10
expect_eq "  ... none reached beta's" "$(n beta 'host=alpha.test')" 0
expect_eq "beta's 10 reached beta's nginx" "$(n beta 'host=beta.test')" 10
expect_eq "  ... none reached alpha's" "$(n alpha 'host=beta.test')" 0
expect_eq "  ... nor the gateway's default upstream" "$(n gw 'host=alpha.test\|host=beta.test')" 0
expect_eq "alpha's answer is its upstream's" "$(get alpha.test /token/validate)" "alpha 200"

expect_eq "gamma names no upstream: gateway.upstream.url's answers" "$(get gamma.test /token/validate)" "gw 200"
expect_eq "  ... seen there" "$(n gw 'host=gamma.test')" 1
r=$(get delta.test /token/validate)
expect_eq "delta says builtin: the gateway's own /token/validate (401 without a token)" "${r##* }" 401
expect_eq "  ... and no nginx saw delta" "$(cat "$DIR"/*.log | grep -c 'host=delta.test')" 0

for h in alpha beta gamma delta; do get $h.test /pinned >/dev/null; done
expect_eq "a route's own upstream wins over every tenant's: /pinned from all four reached it" \
	"$(n route 'GET /pinned')" 4
expect_eq "  ... and nowhere else" "$(cat "$DIR/alpha.log" "$DIR/beta.log" "$DIR/gw.log" | grep -c '/pinned')" 0

r=$(curl -s -o /dev/null -D - -H 'Host: epsilon.test' "http://127.0.0.1:$GWPORT/token/validate")
expect_match "epsilon's upstream is down: 429" "$r" "^HTTP/1.1 429"
expect_match "  ... with Retry-After" "$r" "Retry-After: [0-9]"
ok=0
for i in $(seq 1 10); do
	get epsilon.test /token/validate >/dev/null
	[ "$(get alpha.test /token/validate)" = "alpha 200" ] && ok=$((ok + 1))
done
expect_eq "  ... alpha, between epsilon's requests, was answered every time" "$ok" 10

expect_match "config show lists each tenant's upstream" "$("$BUILD/sluicectl" -c "$DIR/gw.conf" config show 2>&1)" \
	"upstream = \"http://127.0.0.1:$A\""

sed "s|upstream = \"http://127.0.0.1:$B\"|upstream = \"ftp://idp:21\"|" "$DIR/gw.conf" >"$DIR/bad.conf"
out=$("$BUILD/sluiced" --check-config -c "$DIR/bad.conf" 2>&1)
expect_match "a bad tenants[].upstream: refused with file:line" "$out" \
	"bad.conf:[0-9]*: tenant 'beta'.upstream: 'ftp://idp:21' is not http://HOST:PORT"
sed "s|upstream = \"http://127.0.0.1:$B\"|upstream = \"http://beta-idp.invalid:80\"|" "$DIR/gw.conf" >"$DIR/bad.conf"
out=$("$BUILD/sluiced" --check-config -c "$DIR/bad.conf" 2>&1)
expect_match "  ... and one that does not resolve" "$out" \
	"bad.conf:[0-9]*: tenants\\[1\\].upstream: 'http://beta-idp.invalid:80': beta-idp.invalid does not resolve"
kill -0 "$SLUICED_PID" 2>/dev/null && tap_ok "sluiced still running" || tap_not_ok "sluiced still running"

tap_done
