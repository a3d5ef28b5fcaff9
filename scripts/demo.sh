#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# make demo: sluice on the embedded (single-node) default, end to end, in two namespaces
# this script creates and removes: the XDP edge on a veth pair, the gateway (Argon2id logins
# with per-tenant admission, the login counters, the stream job) inside the server namespace,
# listening on port 80 behind the edge. The edge runs the shipped examples/sluice.conf: its
# edge block, classes and routes, copied out of the file at start (scripts/conf_lists.py), so
# the demo shows what those numbers do. Three scenarios, a summary of each, and a chart:
#
#   1. Monday forced reset: one tenant's logins go to 6x its baseline; the others stay at
#      theirs. The flood is shed from the tenant causing it; the others keep their goodput.
#   2. The Manila office: 22,000 people behind 4 NAT addresses in a business /24 sign in at
#      09:00's pace (11 logins/s), a new connection each, through XDP on the stateless front,
#      which charges each its route (a login, 950 units). The edge sheds none, the gateway
#      answers them all, and no counter, detector or verdict fires: keys are (account,
#      prefix), not addresses. The four tenants' own people keep signing in meanwhile.
#   3. At the edge, where nothing is charged until a connection proves its source: a spoofed
#      SYN flood carrying a real user's address (she keeps every connection), a hosting /24
#      and an IPv6 attacker rotating /128s inside one /48 with real handshakes (their /24 and
#      /48 stop them), and real curl on port 80 where XDP answers shed clients with a 429.
#
# The chart (build/demo/sluice-demo.png, scripts/demo_chart.gp) is sampled from sluiced's
# /metrics every second (scripts/demo_sample.py, build/demo/demo.csv) across all three, with
# the phases this script starts (build/demo/phases.csv): offered load, goodput and each
# tenant's reservation; queue wait per tenant; the edge's passed and shed per class.
# SL_DEBUG=1 keeps everything up. DEMO_SHORT=1 runs every phase shorter and leaves out the
# household and the curl part of the edge (tests/net/test_demo_chart.sh); DEMO_OUT=DIR
# writes the chart, its samples and the phases there instead of build/demo.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib/tap.sh"
. "$ROOT/tests/lib/netns.sh"
OUT=${DEMO_OUT:-$BUILD/demo}
mkdir -p "$OUT"
SHORT=${DEMO_SHORT:-0}
# Seconds of each gateway phase: baseline, the Monday surge, after it, the Manila office.
if [ "$SHORT" = 1 ]; then
	BASE_S=4 MONDAY_S=8 AFTER_S=3 MANILA_SECONDS=8
else
	BASE_S=6 MONDAY_S=15 AFTER_S=5 MANILA_SECONDS=30
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "make demo needs root: it creates network namespaces and attaches XDP" >&2
	exit 1
fi
for need in scapy prometheus_client; do
	$PY -c "import $need" 2>/dev/null ||
		{ echo "make demo needs python3 $need (scripts/deps.sh installs it)" >&2; exit 1; }
done
for b in bench/monday bench/neighbour; do
	[ -x "$BUILD/$b" ] || { echo "make demo: build $BUILD/$b first (make demo does)" >&2; exit 1; }
done
nt_setup || { echo "demo: cannot create the veth topology" >&2; exit 1; }
# XDP_TX on a veth reaches the peer only if the peer runs XDP too; a real NIC needs nothing.
nt_client_xdp_pass || echo "demo: cannot attach XDP to the client veth; the 429 part will time out" >&2
# The Manila office's NAT egress: four addresses of 192.0.2.0/24, a business /24 in the
# sample ASN table (examples/asn-sample.csv).
MANILA=(192.0.2.11 192.0.2.12 192.0.2.13 192.0.2.14)
nt_client_addr 198.51.100.7 203.0.113.10 "${MANILA[@]}"
# The gateway has an address of its own on the server veth, GW_ADDR:80, so that a plain HTTP
# server (scenario 3's curl) keeps 10.200.0.2:80 and [fd00:5::2]:80. Added before sluiced
# starts: the edge answers for the addresses the node has then.
GW_ADDR=10.200.0.3
ip -n "$NS_S" addr add "$GW_ADDR/24" dev vs
mkdir -p "$NT_DIR/www"
echo "hello from the real server" >"$NT_DIR/www/index.html"
cat >"$NT_DIR/www.py" <<'PYEOF2'
import functools, http.server, socket, socketserver, sys, threading
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
class V4(http.server.ThreadingHTTPServer):
    def server_bind(self):
        # HTTPServer's own asks the resolver for the address's name, which waits out its
        # timeout in a namespace without DNS.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]
class V6(V4):
    address_family = socket.AF_INET6
servers = [V4((sys.argv[2], 80), handler), V6((sys.argv[3], 80), handler)]
threading.Thread(target=servers[1].serve_forever, daemon=True).start()
servers[0].serve_forever()
PYEOF2
ip netns exec "$NS_S" $PY "$NT_DIR/www.py" "$NT_DIR/www" 10.200.0.2 fd00:5::2 >"$NT_DIR/http.log" 2>&1 &
HTTP_PID=$! # nt_teardown stops it
for i in $(seq 1 50); do
	ip netns exec "$NS_S" ss -ltn 2>/dev/null | grep -q '10.200.0.2:80 ' && break
	sleep 0.1
done
ip netns exec "$NS_S" ss -ltn 2>/dev/null | grep -q '10.200.0.2:80 ' ||
	echo "demo: the HTTP server did not start" >&2

# Argon2id light enough for a demo on a laptop (1 MiB, t=1), two workers. The pool's
# capacity is measured first: the tenants' rates are set from it.
M_COST=4096
WORKERS=2
cap=$("$BUILD/bench/monday" --capacity --m-cost $M_COST --t-cost 1 --threads $WORKERS --seconds 2 |
	$PY -c 'import json,sys; print(round(json.load(sys.stdin)["hashes_per_s"], 1))')
# One login costs 10 units per ms of hashing; capacity.cpu in units/s follows.
ms=$($PY -c "print(round(1000.0 * $WORKERS / $cap, 3))")
cost=$($PY -c "print(round($ms * 10, 1))")
base=$($PY -c "print(round($cap / 8, 1))")      # each tenant's baseline: 1/8 of the pool
resv=$($PY -c "print(round($cap / 8 * 1.5 * $cost, 1))")
GW_PORT=80
METRICS=19469
# Each login's deadline, at the gateway (its default: the load generator sends no
# X-Request-Deadline-Ms) and in the load generator, which gives up after it.
DEADLINE_MS=3000
CONF_LISTS=("$PY" "$ROOT/scripts/conf_lists.py")

# The edge is the shipped one: examples/sluice.conf's edge block (our interface, ASN table
# and pin path put in), its classes and examples/gateway.conf's routes, as written there. The
# edge charges a login its route's cost (950 in the sample); the gateway admits by what its
# hashes measure (its estimate starts at the route's cost), so its capacity is this pool's,
# in those units.
{
	echo "# Built by scripts/demo.sh: edge, classes and routes from examples/, unchanged."
	"${CONF_LISTS[@]}" group "$ROOT/examples/sluice.conf" edge 'interfaces=["vs"]' \
		"asn_table=\"$ROOT/examples/asn-sample.csv\"" "pin_path=\"$PIN\""
	"${CONF_LISTS[@]}" list "$ROOT/examples/sluice.conf" classes
	"${CONF_LISTS[@]}" list "$ROOT/examples/gateway.conf" routes
} >"$NT_DIR/sluice.conf" || { echo "demo: cannot read the shipped config in examples/" >&2; exit 1; }
cat >>"$NT_DIR/sluice.conf" <<EOF
tenants = (
  { name = "acme";     hosts = ["acme.example"];     reservation = $resv; },
  { name = "globex";   hosts = ["globex.example"];   reservation = $resv; },
  { name = "initech";  hosts = ["initech.example"];  reservation = $resv; },
  { name = "umbrella"; hosts = ["umbrella.example"]; reservation = $resv; }
);
gateway: {
  listen = "$GW_ADDR:$GW_PORT";
  credentials = "$NT_DIR/creds.txt";
  delivery_log = "$NT_DIR/outbox.log";
  capacity = { cpu = $($PY -c "print(round($cap * $cost, 1))"); };
  argon2 = { m_cost_kib = $M_COST; t_cost = 1; parallelism = 1; memory_budget_mib = $((WORKERS * M_COST / 1024)); };
  trusted_hops = 1;
  reject_floor_ms = 250;
  queue = { default_deadline_ms = $DEADLINE_MS; };
  max_connections = 8192;
  max_held = 8192;
};
daemon: { control_socket = "$SOCK"; metrics_listen = "127.0.0.1:$METRICS"; };
EOF
: >"$NT_DIR/creds.txt"
chmod 600 "$NT_DIR/creds.txt"
for t in acme globex initech umbrella; do
	echo "pw-$t" | sluicectl user add "$t" "user" >/dev/null || { echo "demo: user add failed" >&2; exit 1; }
done
# Each tenant's people (user00000..., each from an address of its own behind the proxy) and
# the Manila office's 22,000 on tenant initech; one hash per tenant shared: a demo shortcut.
USERS=2000
$PY - "$NT_DIR/creds.txt" $USERS <<'PYEOF2'
import sys
path, users = sys.argv[1], int(sys.argv[2])
phc = {l.split(",")[0]: l.strip().split(",", 2)[2] for l in open(path) if ",user," in l}
with open(path, "a") as f:
    for t, h in phc.items():
        for i in range(users):
            f.write("%s,user%05d,%s\n" % (t, i, h))
    for i in range(22000):
        f.write("initech,staff%05d,%s\n" % (i, phc["initech"]))
PYEOF2

echo "sluice demo: sluiced on veth 'vs' in netns $NS_S (edge and gateway); clients in $NS_C and $NS_S"
if ! nt_start_sluiced; then
	echo "demo: sluiced did not start; its log:" >&2
	cat "$NT_DIR/sluiced.log" >&2
	exit 1
fi
mode=$(jget "$(sluicectl status --json)" interfaces.0.attach_mode)
echo "sluiced attached to vs in $mode mode"
echo

# ---- 1 and 2: the gateway ------------------------------------------------------------------
echo "pool: $cap logins/s on $WORKERS workers (Argon2id m=$M_COST KiB, t=1); a login costs $cost units"
echo
ns() { ip netns exec "$NS_S" "$@"; }
# The phases, on the sampler's clock (seconds since T0): phase NAME closes the one before
# and opens NAME; phase_end closes the last. One line each in phases.csv: start,end,name.
T0=$EPOCHREALTIME
PHASE= PHASE_AT=
echo "start,end,name" >"$OUT/phases.csv"
phase() {
	local now
	now=$($PY -c "print('%.2f' % ($EPOCHREALTIME - $T0))")
	[ -n "$PHASE" ] && echo "$PHASE_AT,$now,$PHASE" >>"$OUT/phases.csv"
	PHASE=${1:-} PHASE_AT=$now
}
phase_end() { phase ""; }
# What the load generators sent, per phase and tenant (their own counts: the chart's offered
# load is what reached the gateway, and tests/net/test_demo_chart.sh holds one to the other).
echo "phase,tenant,sent,ok" >"$OUT/sent.csv"
sent_rows() { # PHASE JSON: bench/neighbour's per-tenant counts
	$PY -c 'import json,sys
for t in json.loads(sys.argv[2])["tenants"]:
    print("%s,%s,%d,%d" % (sys.argv[1], t["name"], t["sent"], t["ok"]))' "$@" >>"$OUT/sent.csv"
}
# The edge's classes, as the config names them (the edge panel has one pair of lines each).
CLASSES=$($PY - "$ROOT/scripts" "$NT_DIR/sluice.conf" <<'PYEOF2'
import sys
sys.path.insert(0, sys.argv[1])
import conf_lists
body = conf_lists.top_level(open(sys.argv[2]).read(), "classes")[0][1:-1]
print(",".join(dict(conf_lists.settings(g))["name"].strip('"')
               for g in conf_lists.split_top(body, ",")))
PYEOF2
)
[ -n "$CLASSES" ] || { echo "demo: no classes in $NT_DIR/sluice.conf" >&2; exit 1; }
ns $PY "$ROOT/scripts/demo_sample.py" --url "http://127.0.0.1:$METRICS/metrics" --t0 "$T0" \
	--stop "$NT_DIR/stop" --out "$OUT/demo.csv" --tenants acme,globex,initech,umbrella \
	--classes "$CLASSES" --wait-bound-ms $DEADLINE_MS 2>"$NT_DIR/sample.err" &
SAMPLER=$!
sleep 1.2 # its first scrape is the reference the first second is counted from
neighbour() { # SECONDS ACME-RATE
	ns nice -n 19 "$BUILD/bench/neighbour" --addr $GW_ADDR --port $GW_PORT --deadline $((DEADLINE_MS / 1000)) --warmup 0 --duration "$1" \
		--tenant "acme:acme.example:$2:user:pw-acme" \
		--tenant "globex:globex.example:$base:user:pw-globex" \
		--tenant "initech:initech.example:$base:user:pw-initech" \
		--tenant "umbrella:umbrella.example:$base:user:pw-umbrella" --users $USERS
}
phase baseline
neighbour $BASE_S "$base" >"$NT_DIR/n0.json"
ns curl -s -m 5 "http://127.0.0.1:$METRICS/metrics" >"$NT_DIR/m0.prom"
phase "monday: acme 6x"
neighbour $MONDAY_S "$($PY -c "print($base * 6)")" >"$NT_DIR/n1.json"
ns curl -s -m 5 "http://127.0.0.1:$METRICS/metrics" >"$NT_DIR/m1.prom"
phase after
neighbour $AFTER_S "$base" >"$NT_DIR/n2.json"
sent_rows baseline "$(cat "$NT_DIR/n0.json")"
sent_rows "monday: acme 6x" "$(cat "$NT_DIR/n1.json")"
sent_rows after "$(cat "$NT_DIR/n2.json")"

echo "1. Monday forced reset: acme at 6x its baseline of $base logins/s, the others at theirs ($MONDAY_S s)"
$PY - "$NT_DIR/n1.json" "$NT_DIR/m0.prom" "$NT_DIR/m1.prom" "$NT_DIR/n0.json" <<'PYEOF2'
import json, sys
from prometheus_client.parser import text_string_to_metric_families
d = json.load(open(sys.argv[1]))
ts = d.get("tenants", d)
b = json.load(open(sys.argv[4]))
base_p99 = {t["name"]: t["p99_ms"] for t in b.get("tenants", b)}
def sheds(path):
    out = {}
    for f in text_string_to_metric_families(open(path).read()):
        for s in f.samples:
            if s.name == "sluice_gateway_shed_total" and s.value:
                k = (s.labels.get("tenant"), s.labels.get("reason"))
                out[k] = out.get(k, 0) + s.value
    return out
m0, m1 = sheds(sys.argv[2]), sheds(sys.argv[3])
why = {}
for (t, r), v in m1.items():
    n = int(v - m0.get((t, r), 0))
    if n:
        why.setdefault(t, []).append("%s %d" % (r, n))
print("   %-10s %8s %8s %8s %7s %10s %9s %9s  %s" % ("tenant", "sent", "ok", "shed", "shed %",
      "timed out", "p99 ms", "(before)", "shed by reason"))
for t in ts:
    print("   %-10s %8d %8d %8d %6.1f%% %10d %9.0f %9s  %s" % (
        t["name"], t["sent"], t["ok"], t["shed"], 100.0 * t["shed"] / max(t["sent"], 1),
        t["timeouts"], t["p99_ms"], "(%.0f)" % base_p99.get(t["name"], 0),
        ", ".join(sorted(why.get(t["name"], []))) or "-"))
PYEOF2
echo "   (acme's excess is shed with 429, the others keep their logins; p99 (before) is each"
echo "   tenant's in the $BASE_S s before the surge, on this machine's clock: the load generator"
echo "   and the Argon2id workers share its CPUs, so the others' waits grow with acme's load)"
echo

phase "manila office"
# At 09:00, 60 % of 22,000 people in 20 minutes is 11 logins/s from the office's 4 NAT
# addresses: 30 s of it, each login a new connection (every browser opens its own) from one
# of the addresses in turn, a different employee each, the right password, no proxy header.
# Every first request crosses XDP, which charges it a login's route, and is handed to the
# gateway on GW_ADDR:80. The four tenants' own people keep signing in at their baselines
# meanwhile (the office is initech's; the morning is everyone's).
MANILA_RATE=11
# edge_class STATS-JSON CLASS FIELD: one class counter of sluicectl stats --json.
edge_class() { $PY -c 'import json,sys; print(json.loads(sys.argv[1])["by_class"][sys.argv[2]][sys.argv[3]])' "$@"; }
v0=$(sluicectl verdict list --json | $PY -c 'import json,sys; print(len(json.load(sys.stdin)))')
e0=$(sluicectl stats --json)
msrc=()
for a in "${MANILA[@]}"; do msrc+=(--src "$a"); done
neighbour $MANILA_SECONDS "$base" >"$NT_DIR/n3.json" &
BACKGROUND=$!
m=$(ip netns exec "$NS_C" $PY "$ROOT/scripts/office_logins.py" --dst "$GW_ADDR" --port $GW_PORT \
	--host initech.example "${msrc[@]}" --rate $MANILA_RATE --seconds $MANILA_SECONDS \
	--account 'staff%05d' --password pw-initech)
wait $BACKGROUND
sent_rows "manila office" "$(cat "$NT_DIR/n3.json")"
echo "manila office,initech (the office),$(jget "$m" sent),$(jget "$m" ok)" >>"$OUT/sent.csv"
e1=$(sluicectl stats --json)
v1=$(sluicectl verdict list --json | $PY -c 'import json,sys; print(len(json.load(sys.stdin)))')
echo "2. The Manila office: 22,000 people behind 4 addresses of 192.0.2.0/24 (business) sign in"
echo "   at 09:00's pace, $MANILA_RATE logins/s for $MANILA_SECONDS s, a new connection each, through the edge (stateless front):"
$PY - "$m" "$(edge_class "$e1" business passed)" "$(edge_class "$e0" business passed)" \
	"$(edge_class "$e1" business shed)" "$(edge_class "$e0" business shed)" "$ROOT/scripts" \
	"$NT_DIR/sluice.conf" <<'PYEOF2'
import json, sys
sys.path.insert(0, sys.argv[6])
import conf_lists
m = json.loads(sys.argv[1])
classes = conf_lists.top_level(open(sys.argv[7]).read(), "classes")[0][1:-1]
biz = [dict(conf_lists.settings(g)) for g in conf_lists.split_top(classes, ",")]
biz = [c for c in biz if c["name"] == '"business"'][0]
routes = conf_lists.top_level(open(sys.argv[7]).read(), "routes")[0][1:-1]
login = [dict(conf_lists.settings(g)) for g in conf_lists.split_top(routes, ",")]
login = float([r for r in login if r["path"] == '"/login"'][0]["cpu"])
per = lambda k: float(biz[k]) / login
admitted, shed = int(sys.argv[2]) - int(sys.argv[3]), int(sys.argv[4]) - int(sys.argv[5])
other = {k: v for k, v in m["status"].items() if k not in ("200", "429")}
print("   %d logins: shed by the edge %d (XDP's 429s; business class admitted %d, shed %d);"
      % (m["sent"], m["edge_429"], admitted, shed))
print("   gateway answers: %d x 200, %d x 429%s%s; p99 %.0f ms" % (
      m["ok"], m["gateway_429"],
      "".join(", %d x %s" % (v, k) for k, v in sorted(other.items()) if k != "0"),
      ", %d without an answer" % m["failed"] if m["failed"] else "", m["p99_ms"]))
print("   (the shipped business class, a login at %.0f units: each /32 %.1f logins/s, %.0f at once;"
      % (login, per("rate"), per("burst")))
print("   its /24 %.1f logins/s, %.0f at once; the office asks %.2f a second of each address)"
      % (per("parent_rate"), per("parent_burst"), m["rate"] / len(m["by_src"] or [1])))
PYEOF2
echo "   new verdicts: $((v1 - v0)); would-be-blocks naming their /24: $(sluicectl wouldblock | grep -c '192\.0\.2\.')"
echo "   (counters key on (account, prefix) and the stream job counts failures: a crowd of"
echo "   real people with real passwords trips nothing)"
echo
phase_end
sleep 1

echo "3. At the edge:"
# Proven connections: scapy answers its own SYN-ACKs and sends a login, from addresses the
# client namespace does not own. Every answer is XDP's 429 or the real server's.
# --wait 3: with 300 handshakes in flight, a shorter wait ends the sniffer before the last
# answers are read (measured: at 1 s the probe saw 233 of the edge's 286 decisions).
conn80() { probe --dport 80 --handshake --wait 3 \
	--request $'POST /login HTTP/1.1\r\nHost: demo.example\r\nContent-Length: 0\r\n\r\n' "$@"; }

row() { # label, probe JSON
	printf '  %-56s %6s %9s %6s\n' "$1" "$(jget "$2" sent)" "$(jget "$2" admitted)" \
		"$(jget "$2" shed429)"
}

phase "edge: spoofed SYNs"
echo "  spoofed: 5,000 SYNs carrying 203.0.113.10's address in 2 s (no handshake completes)"
ip netns exec "$NS_C" $PY "$ROOT/tests/lib/synpace.py" --iface vc --dmac "$SERVER_MAC" \
	--dst 10.200.0.2 --dport 80 --src-net 203.0.113.10/32 --rate 2500 --seconds 2 >/dev/null &
FLOODER=$!
ok=0
for i in 1 2 3 4 5 6; do
	[ "$(ccurl 203.0.113.10 http://10.200.0.2/ | head -1 | tr -d '\r' | cut -d' ' -f2)" = 200 ] &&
		ok=$((ok + 1))
	sleep 0.3
done
wait $FLOODER
echo "    meanwhile 203.0.113.10 itself, 6 requests with curl: $ok of 6 got the server's 200"
echo "    (a SYN is charged nothing: only a connection that answered our SYN-ACK is)"
echo
phase "edge: /24 and /48 floods"
echo "  logins over proven connections to port 80 (stateless front, action reply):"
printf '  %-56s %6s %9s %6s\n' "traffic" "conns" "admitted" "429"
# The shipped residential class holds 10 logins per /64 (a new key starts with half) and
# refills 2 a minute: a household signing in three times, then twice more.
# DEMO_SHORT: fewer of each, and not the household (scapy's handshakes take most of this
# part's time).
HOSTING_N=50 ROTATE_N=300
[ "$SHORT" = 1 ] && HOSTING_N=20 ROTATE_N=120
if [ "$SHORT" != 1 ]; then
	r=$(conn80 --src 2001:db8:2c00:0:1::10 --count 3 --gap 0.5)
	row "residential user on one IPv6 /64, 3 sign-ins in 1 s" "$r"
fi
srcs=()
for i in $(seq 1 $HOSTING_N); do srcs+=(--src "198.51.100.$((i * 5))"); done
r=$(conn80 "${srcs[@]}" --count 4)
row "hosting /24: $HOSTING_N addresses x 4 logins" "$r"
r=$(conn80 --rotate 2001:db8:2d00::/48:128 --count $ROTATE_N --seed 5)
row "IPv6 attacker: $ROTATE_N random /128s across one /48" "$r"
if [ "$SHORT" != 1 ]; then
	r=$(conn80 --src 2001:db8:2c00:0:1::10 --count 2)
	row "the residential /64 user again, after all that" "$r"
fi
echo

if [ "$SHORT" != 1 ]; then
phase "edge: curl"
echo "curl to port 80 (action reply), with a real HTTP server behind sluice:"
# The /24 refills by its class's rate (the shipped hosting class: a login every ~30 s): spend
# what came back first.
conn80 --src 198.51.100.9 --count 20 >/dev/null
echo "  198.51.100.7, from the hosting /24 that flooded, 4 logins in a row:"
for i in 1 2 3 4; do
	in0=$(tcp_mib InSegs)
	out=$(ip netns exec "$NS_C" curl -s -i -m 5 --interface 198.51.100.7 -X POST \
		http://10.200.0.2/login)
	printf '    %-32s %-22s server kernel saw %s segments\n' "$(head -1 <<<"$out" | tr -d '\r')" \
		"$(grep -i '^retry-after' <<<"$out" | tr -d '\r')" "$(($(tcp_mib InSegs) - in0))"
done
echo "    (429s come from XDP. Retry-After climbs 1, 5, 30, 120 s with the /24's streak of 429s,"
echo "    each +-20 %; this /24 has been refused for a while, so it says ~2 minutes)"
out=$(ccurl 203.0.113.10 http://10.200.0.2/)
echo "  from 203.0.113.10 (the residential user): $(head -1 <<<"$out" | tr -d '\r'), $(tail -1 <<<"$out")"
echo
fi
phase_end
sleep 1.2 # the sampler's last second
touch "$NT_DIR/stop"
wait $SAMPLER
[ -s "$NT_DIR/sample.err" ] && echo "demo: the sampler said: $(head -3 "$NT_DIR/sample.err")" >&2

echo "per class, from the datapath's counters (sluicectl stats):"
sluicectl stats | sed 's/^/  /'
echo
echo "how sluice sees the attacker's /48 now (sluicectl prefix show 2001:db8:2d00:1::1):"
sluicectl prefix show 2001:db8:2d00:1::1 | sed 's/^/  /'
echo
nt_stop_sluiced TERM
echo "sluiced stopped and detached; removing the namespaces"
if command -v gnuplot >/dev/null; then
	if gnuplot -e "csv='$OUT/demo.csv'; phases='$OUT/phases.csv'; out='$OUT/sluice-demo.png'; tenants='acme globex initech umbrella'; classes='${CLASSES//,/ }'; deadline_ms=$DEADLINE_MS" \
		"$ROOT/scripts/demo_chart.gp" 2>"$OUT/gnuplot.err" && [ ! -s "$OUT/gnuplot.err" ]; then
		echo "chart: $OUT/sluice-demo.png (offered load, goodput and reservation per tenant;"
		echo "       queue wait per tenant; the edge's passed and shed per class; the phases"
		echo "       marked. The samples: $OUT/demo.csv, the phases: $OUT/phases.csv)"
	else
		echo "chart: gnuplot failed or warned: $(head -3 "$OUT/gnuplot.err")" >&2
	fi
else
	echo "chart: gnuplot is not installed (scripts/deps.sh installs gnuplot-nox); samples in $OUT/demo.csv"
fi
