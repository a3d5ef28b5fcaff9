#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench/reply_rate: 429s per second, and server CPU per 429, from sluice's XDP reply against
# nginx's limit_req (limit_req_status 429) on the same veth pair, the same client (h1load: a
# new connection per request, N in flight), the same machine, one after the other.
#
# Server CPU: for sluice, the XDP program's own run time (kernel.bpf_stats_enabled); the
# server's kernel does nothing else for a shed connection. For nginx, the CPU time of its
# processes (utime + stime). The kernel's TCP work for nginx's connections runs in softirq
# and is charged to neither, so nginx's figure is a lower bound and the ratio a conservative
# one; the target is judged on it. Whole-machine busy and softirq time per request are printed
# too, client included, and from their difference an estimate of nginx's server softirq per
# 429 (the client's softirq work is the same in both runs) with the ratio it gives. (Pinning
# nginx to a CPU of its own and steering its receive processing there with RPS would measure
# it directly, but on two CPUs that triples nginx's own CPU per 429: not the nginx a user runs.)
#
# Usage: bench/reply_rate.sh [SECONDS] [CONNECTIONS]     (as root; make bench-reply)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib/tap.sh"
. "$ROOT/tests/lib/netns.sh"
SECS=${1:-5}
CONNS=${2:-64}
H1=$BUILD/bench/h1load

[ "$(id -u)" -eq 0 ] || { echo "reply_rate: needs root" >&2; exit 1; }
command -v nginx >/dev/null || { echo "reply_rate: nginx missing (scripts/deps.sh)" >&2; exit 1; }
nt_setup || exit 1
nt_client_xdp_pass || { echo "reply_rate: cannot attach XDP to the client veth" >&2; exit 1; }
nt_client_addr 198.51.100.7

. "$ROOT/bench/ticks.sh"
TCK=$(getconf CLK_TCK)

# ---- sluice -------------------------------------------------------------------------------
cat >"$NT_DIR/asn.csv" <<'CSV'
198.51.100.0/24,64500,hosting
CSV
cat >"$NT_DIR/sluice.conf" <<CONF
edge: { interfaces = ["vs"]; ports = ( { port = 80; action = "reply"; cost = 1; } );
  state_entries = 4096; asn_table = "$NT_DIR/asn.csv"; pin_path = "$PIN"; event_sample = 0; };
classes = ( { name = "hosting"; v4_prefix = 24; v4_parent = 16; rate = 0.001; burst = 1.0;
              parent_rate = 0.001; parent_burst = 1000.0; },
            { name = "unknown"; rate = 5.0; burst = 20.0; } );
daemon: { control_socket = "$SOCK"; };
CONF
nt_start_sluiced >/dev/null || { echo "reply_rate: sluiced did not start:" >&2; cat "$NT_DIR/sluiced.log" >&2; exit 1; }
chmod 755 "$NT_DIR"
for _ in $(seq 1 50); do xdp_attached && break; sleep 0.1; done
ccurl 198.51.100.7 http://10.200.0.2/ >/dev/null  # spends the /24's burst of one
prog_id=$(ip -n "$NS_S" -d link show vs | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p' | head -1)
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
# Put the statistics back however this ends: left on, they add a clock read on each side of
# every BPF program run on the machine (bench/xdp_cost's bare program: 40 -> 100 ns).
trap 'sysctl -qw kernel.bpf_stats_enabled="$old_stats"; nt_teardown' EXIT
sysctl -qw kernel.bpf_stats_enabled=1
rt() { bpftool prog show id "${1:-$prog_id}" -j | $PY -c 'import json,sys; print(json.load(sys.stdin).get("run_time_ns",0))'; }
rc() { bpftool prog show id "${1:-$prog_id}" -j | $PY -c 'import json,sys; print(json.load(sys.stdin).get("run_cnt",0))'; }
# The client veth's bare XDP_PASS, measured under the same bpf_stats: what the statistics'
# own clock reads and an empty program cost per run, for scale.
cprog=$(ip -n "$NS_C" -d link show vc | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p' | head -1)
crc0=$(rc "$cprog") crt0=$(rt "$cprog")
rc0=$(rc)
rt0=$(rt) b0=$(busy_ticks) s0=$(soft_ticks)
xdp=$(ip netns exec "$NS_C" env H1LOAD_DEBUG=${H1LOAD_DEBUG:-} "$H1" --src 198.51.100.7 --dst 10.200.0.2 --seconds "$SECS" --conns "$CONNS")
rt1=$(rt) b1=$(busy_ticks) s1=$(soft_ticks)
rc1=$(rc)
crc1=$(rc "$cprog") crt1=$(rt "$cprog")
sysctl -qw kernel.bpf_stats_enabled="$old_stats"
nt_stop_sluiced TERM

# ---- nginx limit_req ----------------------------------------------------------------------
mkdir -p "$NT_DIR/nginx/www"
echo ok >"$NT_DIR/nginx/www/index.html"
cat >"$NT_DIR/nginx/nginx.conf" <<NGX
worker_processes 1;
pid $NT_DIR/nginx/nginx.pid;
error_log $NT_DIR/nginx/error.log crit;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $NT_DIR/nginx; proxy_temp_path $NT_DIR/nginx;
  fastcgi_temp_path $NT_DIR/nginx; uwsgi_temp_path $NT_DIR/nginx; scgi_temp_path $NT_DIR/nginx;
  limit_req_zone \$binary_remote_addr zone=login:10m rate=1r/s;
  limit_req_status 429;
  server {
    listen 80 backlog=4096;
    # A static file, not "return 200": return runs in the rewrite phase, before limit_req.
    location / { limit_req zone=login; root $NT_DIR/nginx/www; try_files /index.html =404; }
  }
}
NGX
ip netns exec "$NS_S" nginx -e "$NT_DIR/nginx/error.log" -c "$NT_DIR/nginx/nginx.conf" -p "$NT_DIR/nginx"
for _ in $(seq 1 50); do [ -s "$NT_DIR/nginx/nginx.pid" ] && break; sleep 0.1; done
master=$(cat "$NT_DIR/nginx/nginx.pid")
pids="$master $(pgrep -P "$master" | tr '\n' ' ')"
n0=$(proc_ticks $pids) b0n=$(busy_ticks) s0n=$(soft_ticks)
ngx=$(ip netns exec "$NS_C" "$H1" --src 198.51.100.7 --dst 10.200.0.2 --seconds "$SECS" --conns "$CONNS")
n1=$(proc_ticks $pids) b1n=$(busy_ticks) s1n=$(soft_ticks)
kill "$master"; for _ in $(seq 1 50); do kill -0 "$master" 2>/dev/null || break; sleep 0.1; done

$PY - "$xdp" "$ngx" "$((rt1 - rt0))" "$(((n1 - n0)))" "$((b1 - b0))" "$((b1n - b0n))" "$TCK" "$SECS" "$CONNS" "$((rc1 - rc0))" "$((s1 - s0))" "$((s1n - s0n))" "$((crt1 - crt0))" "$((crc1 - crc0))" <<'PY'
import json, sys
xdp, ngx = json.loads(sys.argv[1]), json.loads(sys.argv[2])
xdp_ns, ngx_ticks, bx, bn, tck = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
secs, conns, runs = sys.argv[8], sys.argv[9], int(sys.argv[10])
sx, sn = int(sys.argv[11]), int(sys.argv[12])
bare_ns, bare_runs = int(sys.argv[13]), int(sys.argv[14])
ngx_s = ngx_ticks / tck
x429, n429 = xdp["status_429"], ngx["status_429"]
def per(v, n): return v / n if n else float("nan")
rows = [
  ("429s answered", f'{x429}', f'{n429}'),
  ("other answers / errors", f'{xdp["requests"]-x429} / {xdp["errors"]}', f'{ngx["requests"]-n429} / {ngx["errors"]}'),
  ("429s per second", f'{x429/xdp["seconds"]:.0f}', f'{n429/ngx["seconds"]:.0f}'),
  ("server CPU per 429 (us)", f'{per(xdp_ns/1e3, x429):.2f}', f'{per(ngx_s*1e6, n429):.2f}'),
  ("429s per server CPU-second", f'{per(x429, xdp_ns/1e9):.0f}', f'{per(n429, ngx_s):.0f}'),
  ("XDP runs per 429, ns per run", f'{per(runs, x429):.1f}, {per(xdp_ns, runs):.0f}', "-"),
  ("bare XDP_PASS, ns per run (scale)", f'{per(bare_ns, bare_runs):.0f}', "-"),
  ("machine busy per request (us)", f'{per(bx/tck*1e6, xdp["requests"]):.1f}', f'{per(bn/tck*1e6, ngx["requests"]):.1f}'),
  ("machine softirq per request (us)", f'{per(sx/tck*1e6, xdp["requests"]):.1f}', f'{per(sn/tck*1e6, ngx["requests"]):.1f}'),
]
# The server kernel's TCP work for nginx's connections runs in softirq, charged to no process.
# The client's own softirq work is the same in both runs (the same connections, requests and
# 429s), and sluice's server side is its XDP time, so nginx's server softirq per 429 is
# estimated as the difference of the two runs' whole-machine softirq per request, plus XDP's.
# An estimate: anything else the shared machine runs in softirq meanwhile moves it.
kern = per(sn/tck*1e6, ngx["requests"]) - per(sx/tck*1e6, xdp["requests"]) + per(xdp_ns/1e3, x429)
rows.append(("est. nginx server softirq per 429", "-", f'{kern:.2f}'))
print(f"reply_rate: {secs} s each, {conns} connections in flight, new connection per request")
print(f'{"":32} {"sluice XDP":>14} {"nginx limit_req":>16}')
for r in rows: print(f"{r[0]:32} {r[1]:>14} {r[2]:>16}")
rate = per(x429/xdp["seconds"], n429/ngx["seconds"])
eff = per(per(x429, xdp_ns/1e9), per(n429, ngx_s))
print(f"ratio, 429s per second:            {rate:.1f}x")
print(f"ratio, 429s per server CPU-second: {eff:.1f}x  (target >= 10x; nginx's processes only)")
if kern > 0:
    full = per(per(x429, xdp_ns/1e9), per(n429, ngx_s + kern * n429 / 1e6))
    print(f"ratio, nginx's estimated server softirq counted too: {full:.1f}x")
PY
