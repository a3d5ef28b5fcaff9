#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# `sluicectl config show` writes every key the parser accepts, and what it writes reads back
# as the same config:
#  - statically: every key of the parser's tables is named by the writer
#    (tests/lib/config_show_check.py);
#  - an upstream-mode config (gateway.upstream, a route's own upstream, a sign-in route's
#    login group) and one with gateway.tls and gateway.credentials_db: `config show --file`
#    passes --check-config, shows each key with its value, and shown again is identical;
#  - secrets stay out: the credentials database's conninfo (it may hold a password) is
#    "(redacted)".
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/tap.sh"
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
DIR=$(mktemp -d /tmp/sluice-show.XXXXXX)
trap 'rm -rf "$DIR"' EXIT

out=$(cd "$ROOT" && python3 tests/lib/config_show_check.py 2>&1)
expect_eq "config show names every key the parser accepts (missing: ${out:-none})" "$?" 0

show() { "$BUILD/sluicectl" -c "$1" config show --file "$1"; }
roundtrip() { # NAME CONF: shown, checked, shown again
	show "$2" >"$DIR/$1.1" 2>&1
	expect_eq "$1: config show --file exits 0" "$?" 0
	"$BUILD/sluiced" --check-config -c "$DIR/$1.1" >"$DIR/$1.chk" 2>&1
	expect_eq "$1: what it wrote passes --check-config" "$?" 0 || tap_diag "$(cat "$DIR/$1.chk")"
	show "$DIR/$1.1" >"$DIR/$1.2" 2>&1
	expect_eq "$1: shown again, the same (but the file name in the header)" \
		"$(tail -n +3 "$DIR/$1.1" | md5sum)" "$(tail -n +3 "$DIR/$1.2" | md5sum)"
}

cat >"$DIR/up.conf" <<'CONF'
tenants = ( { name = "quiet"; hosts = ["quiet.test"]; reservation = 100.0; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 40.0; },
  { name = "signin"; method = "POST"; path = "/signin"; cpu = 40.0;
    upstream = "http://127.0.0.1:9999";
    login = { account = "form"; username = "email"; success = [200, 204]; failure = [401, 403]; }; },
  { name = "own"; method = "GET"; path = "/own"; cpu = 1.0; upstream = "builtin"; } );
gateway: { listen = "127.0.0.1:18080"; drain_ms = 1234;
  upstream = { url = "http://[::1]:8081"; concurrency = 4; timeout_ms = 2500; max_response = 4096;
               down_ms = 750; };
  capacity = { cpu = 1000.0; }; };
daemon: { control_socket = "/tmp/sluice-show-unused.sock"; };
CONF
roundtrip upstream "$DIR/up.conf"
t=$(cat "$DIR/upstream.1")
expect_match "upstream: gateway.upstream's url and settings" "$t" 'url = "http://\[::1\]:8081";'
expect_match "  ... concurrency 4, timeout 2500, max_response 4096, down_ms 750" \
	"$(echo "$t" | tr -d '\n ')" 'concurrency=4;timeout_ms=2500;max_response=4096;down_ms=750;'
expect_match "  ... the route's own upstream" "$t" 'upstream = "http://127.0.0.1:9999";'
expect_match "  ... and \"builtin\"" "$t" 'upstream = "builtin";'
expect_match "  ... the sign-in route's login group" "$(echo "$t" | tr -d '\n ')" \
	'login={account="form";username="email";password="password";success=\[200,204\];failure=\[401,403\];};'
expect_match "  ... drain_ms" "$t" "drain_ms = 1234;"

# TLS and the credentials database: files the check opens, made here.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$DIR/key.pem" -out "$DIR/cert.pem" \
	-days 2 -subj "/CN=show.test" >/dev/null 2>&1
cat >"$DIR/db.conf" <<CONF
tenants = ( { name = "quiet"; hosts = ["quiet.test"]; reservation = 100.0; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 40.0; } );
gateway: { listen = "127.0.0.1:18081"; capacity = { cpu = 1000.0; };
  tls = { certificate = "$DIR/cert.pem"; key = "$DIR/key.pem"; min_version = "1.3"; };
  credentials_db = { conninfo = "host=/tmp dbname=idp user=sluice password=hunter2-secret";
                     lookup = "SELECT phc FROM users WHERE tenant = \$1 AND name = \$2"; };
};
daemon: { control_socket = "/tmp/sluice-show-unused.sock"; };
CONF
show "$DIR/db.conf" >"$DIR/db.1" 2>&1
expect_eq "tls and credentials_db: config show --file exits 0" "$?" 0
t=$(cat "$DIR/db.1")
expect_match "  ... the certificate and key paths, TLS 1.3 at least" "$(echo "$t" | tr -d '\n ')" \
	"tls={certificate=\"$DIR/cert.pem\";key=\"$DIR/key.pem\";min_version=\"1.3\";};"
expect_match "  ... the lookup query" "$t" 'lookup = "SELECT phc FROM users WHERE tenant = \$1 AND name = \$2";'
expect_match "  ... the conninfo redacted" "$t" 'conninfo = "\(redacted\)";'
if grep -q hunter2 "$DIR/db.1"; then
	tap_not_ok "  ... and its password nowhere in the output"
else
	tap_ok "  ... and its password nowhere in the output"
fi
tap_done
