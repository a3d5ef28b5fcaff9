#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Upstream mode: an upstream named by a host name, resolved at load (start, reload,
# --check-config), never on the event loop. Against nginx on loopback:
#  - gateway.upstream.url = "http://localhost:PORT": the start log names the address it
#    resolved to, requests reach nginx with the client's Host kept;
#  - a reload that names a host that does not resolve is rejected with file:line, and the
#    running config (and its address) keeps serving;
#  - a reload that moves a route to another upstream reaches the other nginx, the first
#    keeps the rest;
#  - a Unix-socket upstream whose path does not fit a sockaddr_un is refused at load (the
#    message says the limit).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
. "$HERE/../lib/nginx.sh"
getent hosts localhost | grep -q '^127\.0\.0\.1' ||
	{ echo "1..0 # SKIP localhost does not resolve to 127.0.0.1 here"; exit 0; }
gw_suite upn nginx

free_ports GWPORT NGPORT NG2PORT MPORT
chmod 755 "$DIR"
nginx_conf "$DIR/ng" 64 <<EOF
  log_format h '\$server_port \$request_method \$uri host=\$host';
  server {
    listen 127.0.0.1:$NGPORT;
    access_log $DIR/ng/logs/a.log h;
    location / { default_type text/plain; return 200 "a\n"; }
  }
  server {
    listen 127.0.0.2:$NG2PORT;
    access_log $DIR/ng/logs/b.log h;
    location / { default_type text/plain; return 200 "b\n"; }
  }
EOF
nginx_start "$DIR/ng" "$NGPORT" "$NG2PORT"

# write_conf URL-OF-ROUTE-B: the gateway's file, route /b on its own upstream
write_conf() {
	cat >"$DIR/gw.conf" <<EOF
tenants = ( { name = "t"; hosts = ["idp.test"]; reservation = 1000.0; } );
routes = (
  { name = "a"; method = "GET"; path = "/a"; cpu = 1.0; },
  { name = "b"; method = "GET"; path = "/b"; cpu = 1.0; upstream = "$1"; }
);
gateway: {
  listen = "127.0.0.1:$GWPORT";
  upstream = { url = "http://localhost:$NGPORT"; concurrency = 2; timeout_ms = 2000; };
  capacity = { cpu = 4000.0; };
  reject_floor_ms = 0;
};
daemon: { control_socket = "$DIR/ctl.sock"; metrics_listen = "127.0.0.1:$MPORT"; };
EOF
}
write_conf "http://localhost:$NGPORT"
gw_start "$DIR/gw.conf" "$DIR/sluiced.log"
get() { curl -s -o /dev/null -w '%{http_code}' -H 'Host: idp.test' "http://127.0.0.1:$GWPORT$1"; }
ctl() { "$BUILD/sluicectl" -c "$DIR/gw.conf" "$@"; }

expect_match "the start log names the address localhost resolved to" "$(cat "$DIR/sluiced.log")" \
	"upstream http://localhost:$NGPORT \\(127.0.0.1 port $NGPORT\\)"
expect_eq "a request through the named upstream: nginx's 200" "$(get /a)" 200
expect_match "  ... nginx saw it with the client's Host" "$(cat "$DIR/ng/logs/a.log")" "GET /a host=idp.test"

# ---- a reload naming a host that does not resolve ------------------------------------------------
cp "$DIR/gw.conf" "$DIR/good.conf"
write_conf "http://no-such-idp.invalid:$NG2PORT"
out=$(ctl reload 2>&1); rc=$?
expect_eq "a reload naming a host that does not resolve: rejected (exit 1)" "$rc" 1
expect_match "  ... with file:line and the reason" "$out" \
	"gw.conf:[0-9]*: routes\\[1\\].upstream: 'http://no-such-idp.invalid:$NG2PORT': no-such-idp.invalid does not resolve"
expect_eq "  ... and the running config keeps serving /b on its old upstream" "$(get /b)" 200
expect_eq "  ... (nginx a saw it)" "$(grep -c 'GET /b' "$DIR/ng/logs/a.log")" 1

# ---- a reload that moves /b to another address ---------------------------------------------------
write_conf "http://127.0.0.2:$NG2PORT"
out=$(ctl reload 2>&1); rc=$?
expect_eq "a reload moving /b to another upstream: accepted" "$rc" 0
expect_eq "  ... /b answered" "$(get /b)" 200
expect_eq "  ... by the other nginx" "$(grep -c 'GET /b' "$DIR/ng/logs/b.log" 2>/dev/null)" 1
expect_eq "  ... and /a still by the first" "$(get /a) $(grep -c 'GET /a' "$DIR/ng/logs/a.log")" "200 2"

# ---- what is refused at load -----------------------------------------------------------------------
write_conf "unix:/run/$(printf 'x%.0s' $(seq 1 110)).sock"
out=$("$BUILD/sluiced" --check-config -c "$DIR/gw.conf" 2>&1); rc=$?
expect_eq "a unix: socket path longer than sun_path: refused by --check-config" "$rc" 1
expect_match "  ... saying why" "$out" "gw.conf:[0-9]*: routes\\[1\\].upstream: 'unix:/run/xxx*' needs an absolute socket path of at most 107 bytes"
write_conf "http://bad_name!:80"
out=$("$BUILD/sluiced" --check-config -c "$DIR/gw.conf" 2>&1)
expect_match "a host that is no DNS name: refused" "$out" "routes\\[1\\].upstream: 'http://bad_name!:80' needs an IPv4 address, \\[IPv6\\], or a DNS name"
kill -0 "$SLUICED_PID" 2>/dev/null && tap_ok "sluiced still running" || tap_not_ok "sluiced still running"

tap_done
