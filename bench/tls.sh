#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# What TLS on the gateway's listener costs, as a ratio against plaintext in the same run:
# two gateway-only sluiced on loopback with the same config, one with gateway.tls (an ECDSA
# P-256 certificate from a CA made here), and wrk against GET /healthz (answered on the loop,
# no hash: what is left is the connection's cost):
#
#   new        every request on a new connection (Connection: close): a full handshake each
#              (no resumption: gw_tls.c says why), against a plain TCP connect each;
#   keepalive  requests on open connections: the record layer only.
#
# Each pair runs plain, TLS, plain, TLS (the machine is shared: its speed drifts) and the
# ratio is TLS over the mean of the plain runs around it.
# Usage: bench/tls.sh   Knobs: DURATION (5 s), CONNS (16), THREADS (1).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
DURATION=${DURATION:-5}
CONNS=${CONNS:-16}
THREADS=${THREADS:-1}
for t in wrk openssl; do
	command -v $t >/dev/null || { echo "bench/tls.sh: needs $t" >&2; exit 1; }
done
[ -x "$BUILD/sluiced" ] || { echo "bench/tls.sh: build $BUILD/sluiced first" >&2; exit 1; }
DIR=$(mktemp -d /tmp/sluice-bench-tls.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	rm -rf "$DIR"
}
trap cleanup EXIT
cd "$DIR" || exit 1
free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
{
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
		-out ca.pem -days 2 -subj "/CN=bench CA" &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key \
			-out srv.csr -subj "/CN=127.0.0.1" &&
		printf 'subjectAltName=IP:127.0.0.1\n' >ext.cnf &&
		openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -set_serial 1 -days 1 \
			-extfile ext.cnf -out srv.pem
} >openssl.log 2>&1 || { cat openssl.log; exit 1; }
start() { # NAME TLS_GROUP: sets PORT (not in a subshell: the PID must reach PIDS)
	local port mport
	port=$(free_port)
	mport=$(free_port)
	cat >"$1.conf" <<EOF
tenants = ( { name = "default"; reservation = 0.0; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 100.0; } );
gateway: {
  listen = "127.0.0.1:$port";
  capacity = { cpu = 10000.0; };
  argon2 = { m_cost_kib = 64; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
  max_connections = 4096;
  max_connections_per_prefix = 4096;
  max_connections_per_parent = 4096;
  max_requests_per_connection = 1000000000;
$2
};
daemon: { control_socket = "$DIR/$1.sock"; metrics_listen = "127.0.0.1:$mport"; };
EOF
	"$BUILD/sluiced" -c "$1.conf" -f >"$1.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 1 100); do grep -q "gateway listening" "$1.log" && break; sleep 0.05; done
	grep -q "gateway listening" "$1.log" || { cat "$1.log" >&2; exit 1; }
	PORT=$port
}
start plain ""
PLAIN=$PORT
start tls '  tls = { certificate = "srv.pem"; key = "srv.key"; };'
TLS=$PORT

rps() { # URL [wrk args] -> requests/s
	wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" "$@" 2>&1 |
		awk '/^Requests\/sec/ { print $2 } /Socket errors/ { print "# " $0 > "/dev/stderr" }'
}
printf '%-10s %12s %12s %12s %12s %8s\n' mode plain_1 tls_1 plain_2 tls_2 ratio
for mode in new keepalive; do
	args=()
	[ $mode = new ] && args=(-H "Connection: close")
	p1=$(rps "http://127.0.0.1:$PLAIN/healthz" "${args[@]}")
	t1=$(rps "https://127.0.0.1:$TLS/healthz" "${args[@]}")
	p2=$(rps "http://127.0.0.1:$PLAIN/healthz" "${args[@]}")
	t2=$(rps "https://127.0.0.1:$TLS/healthz" "${args[@]}")
	awk -v m=$mode -v p1="$p1" -v t1="$t1" -v p2="$p2" -v t2="$t2" 'BEGIN {
		printf "%-10s %12.0f %12.0f %12.0f %12.0f %8.3f\n", m, p1, t1, p2, t2,
		       (t1 + t2) / (p1 + p2) }'
done
echo "# ratio: TLS requests/s over plaintext requests/s, $CONNS connections, ${DURATION}s each," \
	"wrk -t$THREADS on the same host"
