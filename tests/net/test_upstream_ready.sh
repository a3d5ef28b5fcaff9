#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# /readyz in upstream mode (issue 15, item 5: "upstream reachable"): a load balancer should
# stop sending this node traffic while it cannot reach its upstream, and send it again when
# it can, without anyone touching the node. Against nginx on loopback:
#  - nginx up: /readyz 200;
#  - nginx stopped: /readyz 503 within 3 s although no request was forwarded (a probe, a
#    connect without a request, at most one a second while someone asks), /healthz still
#    200 (the process is fine), the reason in the log, and nothing about it in the answer;
#  - nginx started again: /readyz 200 within 3 s, "reachable again" logged;
#  - a reload that adds a route to an upstream nobody listens on: 503 (any upstream this node
#    cannot reach); a reload that takes it out again: 200;
#  - a flood of probes (/readyz as fast as a client can ask) opens at most one connection a
#    second to the upstream (nginx's access log of probes stays empty: a probe sends nothing).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
. "$HERE/../lib/nginx.sh"
gw_suite upr nginx

free_ports GWPORT NGPORT DEADPORT

mkdir -p "$DIR/ng"
chmod 755 "$DIR"
nginx_conf "$DIR/ng" <<EOF
  server {
    listen 127.0.0.1:$NGPORT;
    access_log $DIR/ng/logs/access.log;
    location = /token/validate { default_type application/json; return 200 '{"active":true}'; }
  }
EOF
nginx_start "$DIR/ng" "$NGPORT"

write_conf() { # write_conf EXTRA-ROUTE
	cat >"$DIR/gw.conf" <<EOF
tenants = ( { name = "default"; reservation = 100.0; } );
routes = (
  { name = "validate"; method = "GET"; path = "/token/validate"; cpu = 1.0; }$1
);
gateway: {
  listen = "127.0.0.1:$GWPORT";
  upstream = { url = "http://127.0.0.1:$NGPORT"; concurrency = 2; timeout_ms = 2000; };
  capacity = { cpu = 100000.0; };
  reject_floor_ms = 0;
  drain_ms = 0;
};
daemon: { control_socket = "$DIR/ctl.sock"; };
EOF
}
write_conf ""
gw_start "$DIR/gw.conf" "$DIR/sluiced.log"

code() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$GWPORT$1"; }
wait_ready() { # wait_ready CODE: poll /readyz up to 3 s for CODE; prints what it last got
	local c
	for _ in $(seq 1 30); do
		c=$(code /readyz)
		[ "$c" = "$1" ] && break
		sleep 0.1
	done
	echo "$c"
}

expect_eq "nginx up: /readyz 200" "$(wait_ready 200)" 200
expect_eq "  ... and a forward works" "$(code /token/validate)" 200
nginx_stop
expect_eq "nginx stopped, nothing forwarded since: /readyz 503 within 3 s" "$(wait_ready 503)" 503
expect_eq "  ... /healthz still 200 (the process is fine)" "$(code /healthz)" 200
expect_eq "  ... the answer says only that" "$(curl -s "http://127.0.0.1:$GWPORT/readyz")" '{"status":"not ready"}'
expect_match "  ... the log says why" "$(cat "$DIR/sluiced.log")" \
	"not ready \(GET /readyz answers 503\): upstream http://127.0.0.1:$NGPORT is unreachable: connect: Connection refused"
nginx_start "$DIR/ng" "$NGPORT"
expect_eq "nginx started again: /readyz 200 within 3 s, nothing else done" "$(wait_ready 200)" 200
expect_match "  ... logged" "$(cat "$DIR/sluiced.log")" "upstream http://127.0.0.1:$NGPORT is reachable again"

# Probes are at most one a second per upstream, however often the balancer asks; they send
# nothing, so nginx logs none of them.
n0=$(grep -c . "$DIR/ng/logs/access.log" 2>/dev/null || echo 0)
tw() { ss -Htn state time-wait "( dport = :$NGPORT )" | wc -l; } # closed probes (ours close first)
tw0=$(tw)
$PY - "$GWPORT" <<'PYEOF' >"$DIR/flood"
import http.client, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
n, end = 0, time.monotonic() + 2.0
while time.monotonic() < end:
    c.request("GET", "/readyz"); c.getresponse().read(); n += 1
print(n)
PYEOF
probes=$(($(tw) - tw0))
tap_diag "/readyz asked $(cat "$DIR/flood") times in 2 s; probe connections to nginx: $probes"
expect_ge "a balancer asking hundreds of times" "$(cat "$DIR/flood")" 100
expect_le "  ... made at most 3 probe connections in those 2 s (one a second)" "$probes" 3
expect_eq "  ... none of them a request nginx logged" "$(grep -c . "$DIR/ng/logs/access.log" 2>/dev/null || echo 0)" "$n0"

# Any upstream this node cannot reach: a reload adding one makes it unready.
write_conf ',
  { name = "dead"; method = "GET"; path = "/dead"; cpu = 1.0; upstream = "http://127.0.0.1:'"$DEADPORT"'"; }'
kill -HUP "$SLUICED_PID"
expect_eq "a reload adds a route to an upstream nobody listens on: /readyz 503" "$(wait_ready 503)" 503
expect_eq "  ... the other route still answered" "$(code /token/validate)" 200
write_conf ""
kill -HUP "$SLUICED_PID"
expect_eq "a reload takes it out again: /readyz 200" "$(wait_ready 200)" 200
kill -0 "$SLUICED_PID" 2>/dev/null && tap_ok "sluiced still running" || tap_not_ok "sluiced still running"

tap_done
