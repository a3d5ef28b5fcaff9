#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Upstream mode: a sign-in's verdict from a header or a JSON field (routes[].login.header,
# routes[].login.json), against nginx verifying a password per request (auth_basic,
# SHA-512-crypt) that answers 200 either way and says which in a header and a JSON body
# (its 401 turned into a 200 by error_page). Checks:
#  - the header's "denied" is a failure: five of them and the right password from the same
#    address is 429 and never reaches nginx; "ok" is a success; the body comes back as nginx
#    wrote it;
#  - the same for a JSON field ("result.status");
#  - a client that sends the verdict header itself is not believed: its wrong password is
#    still a failure, and the header is not passed to the upstream (an upstream that echoes
#    request headers cannot be used to forge the verdict: its answer has no verdict, the
#    attempt is given back);
#  - a JSON field that is missing, and an answer that is not JSON, give the attempt back:
#    never a success, never a failure; counted by verdict on /metrics;
#  - bad verdict config is refused at load with file:line and a reason.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
. "$HERE/../lib/nginx.sh"
gw_suite upv nginx crypt

free_ports GWPORT NGPORT NG2PORT MPORT

mkdir -p "$DIR/ng"
chmod 755 "$DIR"
nginx_htpasswd "$DIR/ng/htpasswd" 50000 $(for u in alice bob carol dave erin frank gina; do echo "$u:pw-$u"; done)
# Every sign-in location answers 200: a right password with "ok", a wrong one (auth_basic's
# 401, turned into a 200 by error_page) with "denied", in a header and in the JSON body.
nginx_conf "$DIR/ng" 256 <<EOF
  log_format v '\$request_method \$uri user=\$remote_user verdict_hdr=\$http_x_auth_result status=\$status';
  server {
    listen 127.0.0.1:$NGPORT;
    access_log $DIR/ng/logs/access.log v;
    location = /hsignin {
      auth_basic "idp"; auth_basic_user_file $DIR/ng/htpasswd;
      error_page 401 = @denied;
      proxy_set_header X-User \$remote_user;
      proxy_pass http://127.0.0.1:$NG2PORT/ok;
    }
    location = /jsignin {
      auth_basic "idp"; auth_basic_user_file $DIR/ng/htpasswd;
      error_page 401 = @denied;
      proxy_set_header X-User \$remote_user;
      proxy_pass http://127.0.0.1:$NG2PORT/ok;
    }
    location = /jmissing {
      auth_basic "idp"; auth_basic_user_file $DIR/ng/htpasswd;
      error_page 401 = @denied;
      proxy_set_header X-User \$remote_user;
      proxy_pass http://127.0.0.1:$NG2PORT/ok;
    }
    location = /jhtml {
      auth_basic "idp"; auth_basic_user_file $DIR/ng/htpasswd;
      default_type text/html;
      return 200 '<html><body>signed in</body></html>';
    }
    # a careless upstream that echoes a request header into its answer
    location = /echo {
      add_header X-Auth-Result \$http_x_auth_result always;
      default_type application/json;
      return 200 '{"echo":true}';
    }
    location @denied {
      add_header X-Auth-Result denied always;
      default_type application/json;
      return 200 '{"result":{"status":"denied"}}';
    }
  }
  server {
    listen 127.0.0.1:$NG2PORT;
    location = /ok {
      add_header X-Auth-Result ok always;
      default_type application/json;
      return 200 '{"user":"\$http_x_user","result":{"status":"ok"}}';
    }
  }
EOF
nginx_start "$DIR/ng" "$NGPORT" "$NG2PORT"

cat >"$DIR/gw.conf" <<EOF
tenants = ( { name = "t"; hosts = ["t.test"]; reservation = 1500.0; } );
routes = (
  { name = "hsignin"; method = "POST"; path = "/hsignin"; cpu = 40.0;
    login = { account = "basic";
              header = { name = "X-Auth-Result"; success = ["ok"]; failure = ["denied"]; }; }; },
  { name = "jsignin"; method = "POST"; path = "/jsignin"; cpu = 40.0;
    login = { account = "basic";
              json = { field = "result.status"; success = ["ok"]; failure = ["denied"]; }; }; },
  { name = "jmissing"; method = "POST"; path = "/jmissing"; cpu = 40.0;
    login = { account = "basic";
              json = { field = "result.code"; success = ["ok"]; failure = ["denied"]; }; }; },
  { name = "jhtml"; method = "POST"; path = "/jhtml"; cpu = 40.0;
    login = { account = "basic";
              json = { field = "result.status"; success = ["ok"]; failure = ["denied"]; }; }; },
  { name = "echo"; method = "POST"; path = "/echo"; cpu = 1.0;
    login = { account = "basic";
              header = { name = "X-Auth-Result"; success = ["ok"]; failure = ["denied"]; }; }; }
);
gateway: {
  listen = "127.0.0.1:$GWPORT";
  upstream = { url = "http://127.0.0.1:$NGPORT"; concurrency = 2; timeout_ms = 3000; };
  capacity = { cpu = 4000.0; };
  reject_floor_ms = 0;
};
daemon: { control_socket = "$DIR/ctl.sock"; metrics_listen = "127.0.0.1:$MPORT"; };
EOF
gw_start "$DIR/gw.conf" "$DIR/sluiced.log"

cat >"$DIR/c.py" <<'PYEOF'
import base64, json, socket, sys
port = int(sys.argv[1]); path = sys.argv[2]; u, p = sys.argv[3], sys.argv[4]
extra = "".join(h + "\r\n" for h in sys.argv[5:])
s = socket.create_connection(("127.0.0.1", port), timeout=10)
auth = base64.b64encode(("%s:%s" % (u, p)).encode()).decode()
s.sendall(("POST %s HTTP/1.1\r\nHost: t.test\r\nAuthorization: Basic %s\r\n%sContent-Length: 0\r\n"
           "Connection: close\r\n\r\n" % (path, auth, extra)).encode())
data = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    data += d
head, _, body = data.partition(b"\r\n\r\n")
lines = head.decode("latin-1").split("\r\n")
h = {}
for l in lines[1:]:
    k, _, v = l.partition(":")
    h.setdefault(k.strip().lower(), v.strip())
print(json.dumps({"status": int(lines[0].split(" ")[1]), "headers": h, "body": body.decode()}))
PYEOF
c() { $PY "$DIR/c.py" "$GWPORT" "$@"; }
metric() { gw_metric "$@"; }
verdict() { metric sluice_gateway_upstream_signin_verdicts_total "route=\"$1\"" "verdict=\"$2\""; }
logins() { metric sluice_gateway_logins_total 'tenant="t"' "outcome=\"$1\""; }
seen() { grep -c "POST $1 " "$DIR/ng/logs/access.log" 2>/dev/null || echo 0; }

# ---- a header --------------------------------------------------------------------------------
r=$(c /hsignin alice pw-alice)
expect_eq "header route, right password: nginx's 200" "$(jget "$r" status)" 200
expect_eq "  ... its X-Auth-Result ok" "$(jget "$r" headers.x-auth-result)" ok
expect_eq "  ... and its body, unchanged" "$(jget "$r" body)" '{"user":"alice","result":{"status":"ok"}}'
expect_eq "  ... read as a success" "$(verdict hsignin success)" 1
r=$(c /hsignin bob wrong)
expect_eq "header route, wrong password: nginx answers 200 too" "$(jget "$r" status)" 200
expect_eq "  ... saying denied" "$(jget "$r" headers.x-auth-result)" denied
expect_eq "  ... read as a failure" "$(verdict hsignin failure)" 1
# The attacker: wrong passwords with the verdict header written by the client.
for i in 2 3 4 5; do
	r=$(c /hsignin bob "wrong-$i" "X-Auth-Result: ok")
	[ "$(jget "$r" headers.x-auth-result)" = denied ] || tap_diag "$r"
done
expect_eq "a client's own 'X-Auth-Result: ok' beside a wrong password: still failures (5 in all)" \
	"$(verdict hsignin failure)" 5
expect_eq "  ... the client's header never reached nginx" \
	"$(grep -c 'verdict_hdr=ok' "$DIR/ng/logs/access.log")" 0
s0=$(seen /hsignin)
r=$(c /hsignin bob pw-bob)
expect_eq "after 5 read failures, bob's right password from the same address: 429" "$(jget "$r" status)" 429
expect_eq "  ... and it never reached nginx" "$(seen /hsignin)" "$s0"
r=$(c /hsignin carol pw-carol "X-Auth-Result: denied")
expect_eq "a client's 'X-Auth-Result: denied' cannot fail a right password either" \
	"$(verdict hsignin success)" 2

# An upstream that echoes request headers into its answer: the client's header is not sent,
# so the echo has no verdict: given back, never a success.
ok0=$(logins ok)
r=$(c /echo dave anything "X-Auth-Result: ok")
expect_eq "an echoing upstream: 200" "$(jget "$r" status)" 200
expect_eq "  ... echoes nothing (the client's X-Auth-Result was not forwarded)" \
	"$(jget "$r" headers.x-auth-result)" ""
expect_eq "  ... read as missing (given back)" "$(verdict echo missing)" 1
expect_eq "  ... and no success counted" "$(verdict echo success) $(logins ok)" "0 $ok0"

# ---- a JSON field ------------------------------------------------------------------------------
r=$(c /jsignin erin pw-erin)
expect_eq "JSON route, right password: 200 with the body unchanged" "$(jget "$r" status) $(jget "$r" body)" \
	'200 {"user":"erin","result":{"status":"ok"}}'
expect_eq "  ... read as a success" "$(verdict jsignin success)" 1
for i in 1 2 3 4 5; do c /jsignin frank "wrong-$i" >/dev/null; done
expect_eq "five wrong passwords, each a 200 saying denied in the body: 5 failures" \
	"$(verdict jsignin failure)" 5
s0=$(seen /jsignin)
r=$(c /jsignin frank pw-frank)
expect_eq "  ... then frank's right password: 429, not forwarded" "$(jget "$r" status) $(seen /jsignin)" "429 $s0"

# ---- what cannot be read gives the attempt back -----------------------------------------------
ok0=$(logins ok)
f0=$(logins failed)
for i in 1 2 3 4 5 6 7; do r=$(c /jmissing gina "wrong-$i"); done
expect_eq "the field missing (result.code): 7 wrong passwords, all forwarded (200)" \
	"$(jget "$r" status) $(seen /jmissing)" "200 7"
r=$(c /jmissing gina pw-gina)
expect_eq "  ... and the right one: 200, but never read as a success" "$(verdict jmissing success)" 0
expect_eq "  ... 8 read as missing" "$(verdict jmissing missing)" 8
r=$(c /jhtml alice pw-alice)
expect_eq "an answer that is not JSON: the client still gets it" "$(jget "$r" status) $(jget "$r" body)" \
	"200 <html><body>signed in</body></html>"
expect_eq "  ... read as malformed, not a success" "$(verdict jhtml malformed) $(verdict jhtml success)" "1 0"
expect_eq "none of those moved the tenant's ok or failed sign-ins" "$(logins ok) $(logins failed)" "$ok0 $f0"
expect_eq "the gateway is still alive" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: t.test' "http://127.0.0.1:$GWPORT/healthz")" 200

# ---- bad verdict config, refused at load ---------------------------------------------------------
chk() { # chk NAME LOGIN-LINE PATTERN
	sed "0,/header = { name = \"X-Auth-Result\"; success = \[\"ok\"\]; failure = \[\"denied\"\]; };/s//$2/" \
		"$DIR/gw.conf" >"$DIR/bad.conf"
	out=$("$BUILD/sluiced" --check-config -c "$DIR/bad.conf" 2>&1)
	rc=$?
	expect_eq "$1: refused" "$rc" 1
	expect_match "  ... $3" "$out" "$3"
}
chk "header and json both" 'header = { name = "X-A"; success = ["ok"]; failure = ["no"]; }; json = { field = "a"; success = ["ok"]; failure = ["no"]; };' \
	'bad.conf:[0-9]*: routes\[0\].login: header or json, not both'
chk "no failure values" 'header = { name = "X-A"; success = ["ok"]; };' \
	'bad.conf:[0-9]*: routes\[0\].login.header.failure: required'
chk "a hop-by-hop name" 'header = { name = "Connection"; success = ["ok"]; failure = ["no"]; };' \
	'bad.conf:[0-9]*: routes\[0\].login.header.name: Connection is a hop-by-hop header'
chk "a name that is no header" 'header = { name = "X Auth"; success = ["ok"]; failure = ["no"]; };' \
	"bad.conf:[0-9]*: routes\\[0\\].login.header.name: 'X Auth' is not a header name"
chk "an empty path segment" 'json = { field = "result..status"; success = ["ok"]; failure = ["no"]; };' \
	"bad.conf:[0-9]*: routes\\[0\\].login.json.field: 'result..status' is not a dotted path"
chk "a value in both lists" 'header = { name = "X-A"; success = ["ok"]; failure = ["ok"]; };' \
	"bad.conf:[0-9]*: routes\\[0\\].login.header: 'ok' is both a success and a failure"
chk "a number for a value" 'json = { field = "ok"; success = [1]; failure = ["0"]; };' \
	'bad.conf:[0-9]*: routes\[0\].login.json.success: expected a string'
out=$("$BUILD/sluiced" --check-config -c "$DIR/gw.conf" 2>&1)
expect_eq "the good config passes --check-config" "$?" 0

tap_done
