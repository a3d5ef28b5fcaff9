#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# /metrics as an SRE reads it (issue 17, item 5): one sluiced with the edge on a veth (a real
# HTTP server behind it) and the gateway on the server namespace's loopback, scraped there.
# Each new family is asserted with a value a user caused:
#   - sluice_build_info and sluice_node_info: the version, the commit, the running kernel,
#     the node name of the config;
#   - sluice_bpf_table_entries/_capacity: the prefix buckets the clients' handshakes made,
#     as many as `sluicectl status` counts walking the table's ways; the capacities the
#     config set;
#   - sluice_gateway_logins_total{tenant,outcome}: two wrong passwords, one right, a counter's
#     refusal, each under its tenant;
#   - sluice_gateway_would_block_total{tenant,counter} and _by_class_total{cost_class}: a
#     counter in monitor mode lets logins through and counts them;
#   - sluice_config_reloads_total{outcome}, the last reload's success and its timestamps: a
#     broken file reloaded, then a good one;
# and the attacker: a flood of fresh Host names and account names in requests must mint no
# label value (tenants on /metrics stay the configured ones). The exposition passes
# `promtool check metrics` where promtool is installed, operations.md's alert rules pass
# `promtool check rules`, and docs/grafana-dashboard.json is checked against the exposition
# (tests/lib/dashboard_check.py: every metric it uses exists here, every query joined to its
# node and filtered by the node and tenant variables, every label it groups by exists, every
# query parses), as is a copy of it broken on purpose.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"

nt_require
nt_setup || { echo "Bail out! cannot build the veth topology"; exit 1; }
nt_client_xdp_pass || { echo "1..0 # SKIP cannot attach XDP to the client veth"; exit 0; }
nt_http_server || { echo "Bail out! no HTTP server on port 80"; exit 1; }

GWP=$(free_port)
MP=$(free_port)
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$NT_DIR/session.key"
chmod 600 "$NT_DIR/session.key"
: >"$NT_DIR/creds.txt"
chmod 600 "$NT_DIR/creds.txt"
cat >"$NT_DIR/asn.csv" <<'EOF'
prefix,asn,class
203.0.113.0/24,64501,residential
198.51.100.0/24,64500,hosting
EOF

write_conf() { # $1: the residential class's v4_prefix (a bad value makes a broken file)
	# $2: edge.state_entries (4096)
	cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 80; action = "reply"; cost = 1; } );
  state_entries = ${2:-4096};
  asn_table = "$NT_DIR/asn.csv";
  pin_path = "$PIN";
};
classes = (
  { name = "hosting"; v4_prefix = 32; v6_prefix = 64; v4_parent = 24; v6_parent = 48;
    rate = 0.001; burst = 20.0; parent_rate = 1000.0; parent_burst = 1000.0; },
  { name = "residential"; v4_prefix = $1; v6_prefix = 64; v4_parent = 24; v6_parent = 48;
    rate = 100.0; burst = 100.0; parent_rate = 1000.0; parent_burst = 1000.0; },
  { name = "unknown"; rate = 100.0; burst = 100.0; }
);
tenants = (
  { name = "default"; reservation = 0.0; },
  { name = "acme"; hosts = ["acme.test"]; reservation = 0.0; }
);
routes = ( { name = "signin"; method = "POST"; path = "/login"; cpu = 10.0; } );
gateway: {
  listen = "127.0.0.1:$GWP";
  credentials = "$NT_DIR/creds.txt";
  session_key = "$NT_DIR/session.key";
  capacity = { cpu = 100000.0; db = 4.0; };
  argon2 = { m_cost_kib = 256; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
  trusted_hops = 1;
  reject_floor_ms = 10;
  login_uniform = false;
};
cluster: { node = "edge-m1"; };
counters: {
  login_failures = { rate = 0.001; burst = 3.0; };
  tenant_logins = { rate = 0.001; burst = 2.0; mode = "monitor"; };
};
daemon: { control_socket = "$SOCK"; metrics_listen = "127.0.0.1:$MP"; };
EOF
}
write_conf 32
echo pw-alice | sluicectl user add acme alice >/dev/null || { echo "Bail out! user add"; exit 1; }
nt_start_sluiced || { echo "Bail out! sluiced did not start"; exit 1; }
for _ in $(seq 1 50); do grep -q "gateway listening" "$NT_DIR/sluiced.log" && break; sleep 0.1; done

URL="http://127.0.0.1:$MP/metrics"
prom() { ip netns exec "$NS_S" $PY "$ROOT/tests/lib/prom.py" "$URL" "$@"; }
scrape() { ip netns exec "$NS_S" curl -s -m 5 "$URL"; }

# login HOST USER PASSWORD... -> the statuses, space separated (one connection each)
cat >"$NT_DIR/login.py" <<'PYEOF'
import http.client, sys
port, host, user = int(sys.argv[1]), sys.argv[2], sys.argv[3]
out = []
for pw in sys.argv[4:]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("POST", "/login", body="username=%s&password=%s" % (user, pw), headers={
        "Host": host, "Content-Type": "application/x-www-form-urlencoded",
        "X-Forwarded-For": "192.0.2.50"})
    r = c.getresponse()
    r.read()
    out.append(str(r.status))
    c.close()
print(" ".join(out))
PYEOF
login() { ip netns exec "$NS_S" $PY "$NT_DIR/login.py" "$GWP" "$@"; }

# ---- 1. the build and the node ------------------------------------------------------------
expect_ge "metrics parse as Prometheus text ($(prom --check) samples)" "$(prom --check)" 50
expect_eq "build_info: the version sluiced -V prints" \
	"$(prom sluice_build_info "version=$("$BUILD/sluiced" -V | awk '{print $2}')")" 1
expect_eq "build_info: the kernel it runs on (uname -r)" \
	"$(prom sluice_build_info "kernel=$(uname -r)")" 1
commit=$(scrape | sed -n 's/^sluice_build_info{.*commit="\([^"]*\)".*/\1/p')
if [ "$commit" = unknown ]; then
	tap_skip "build_info: the commit is one of this repository's" "built outside a git checkout"
else
	c=${commit%-dirty}
	git -C "$ROOT" cat-file -e "${c##*-g}^{commit}" 2>/dev/null &&
		tap_ok "build_info: the commit is one of this repository's ($commit)" ||
		tap_not_ok "build_info: the commit is one of this repository's ($commit)"
fi
expect_eq "node_info: the config's cluster.node" "$(prom sluice_node_info node=edge-m1)" 1
now=$(date +%s)
st=$(prom sluice_start_time_seconds)
expect_ge "start time: within the last minute ($st)" "$st" $((now - 60))
expect_eq "no reload yet: the running config is the start's" \
	"$(prom sluice_config_last_reload_successful) $(prom sluice_config_reloads_total outcome=ok) $(prom sluice_config_reloads_total outcome=failed)" "1 0 0"
expect_eq "  ... applied when sluiced started" \
	"$(prom sluice_config_last_reload_success_timestamp_seconds)" "$st"

# ---- 2. table occupancy -------------------------------------------------------------------
expect_eq "capacity: buckets are 4 ways of state_entries / 4 sets (a power of two)" \
	"$(prom sluice_bpf_table_capacity table=buckets)" 4096
expect_eq "  ... and no ghost table any more: the bucket table keeps spent keys itself" \
	"$(scrape | grep -c 'table="ghosts"')" 0
expect_eq "an idle edge: no bucket yet" "$(prom sluice_bpf_table_entries table=buckets)" 0
# 40 clients, each from its own /32 of one residential /24: 40 prefix keys and one parent.
r=$(ip netns exec "$NS_C" $PY "$ROOT/tests/lib/edge_probe.py" --iface vc --dmac "$SERVER_MAC" \
	--dst 10.200.0.2 --rotate 203.0.113.0/24:32 --count 40 --seed 7)
tap_diag "handshakes: admitted $(jget "$r" admitted), shed $(jget "$r" shed429)"
expect_eq "40 handshakes from 40 addresses: all admitted" "$(jget "$r" admitted)" 40
walk=$(jget "$(sluicectl status --json)" state_entries)
occ=$(prom sluice_bpf_table_entries table=buckets)
expect_eq "buckets in use: 41 (40 /32 keys and their /24), as sluicectl's key walk counts ($walk)" \
	"$occ" 41
expect_eq "  ... the same number the walk finds" "$occ" "$walk"
expect_ge "conns: the admitted first requests are remembered" \
	"$(prom sluice_bpf_table_entries table=conns)" 1
expect_eq "tenant_keys, hosts, local_host and verdicts are there too" \
	"$(scrape | grep -cE '^sluice_bpf_table_entries\{table="(tenant_keys|hosts|local_host|verdicts)"\}')" 4

# ---- 3. sign-ins by tenant and outcome ------------------------------------------------------
expect_eq "two wrong passwords for alice at acme: 401 401" "$(login acme.test alice x1 x2)" "401 401"
expect_eq "logins: failed 2 for acme" "$(prom sluice_gateway_logins_total tenant=acme outcome=failed)" 2
expect_eq "  ... none for the default tenant" \
	"$(prom sluice_gateway_logins_total tenant=default outcome=failed)" 0
expect_eq "her right password: 200" "$(login acme.test alice pw-alice)" 200
expect_eq "logins: ok 1 for acme" "$(prom sluice_gateway_logins_total tenant=acme outcome=ok)" 1
# login_failures (burst 3) for (bob, this prefix): three failures, then refused unchecked.
expect_eq "bob at acme: three wrong passwords, the fourth refused by login_failures" \
	"$(login acme.test bob y1 y2 y3 y4)" "401 401 401 429"
expect_eq "logins: throttled 1 for acme" \
	"$(prom sluice_gateway_logins_total tenant=acme outcome=throttled)" 1
expect_eq "logins: failed 5 for acme (alice's 2, bob's 3)" \
	"$(prom sluice_gateway_logins_total tenant=acme outcome=failed)" 5

# ---- 4. would-block, labelled ---------------------------------------------------------------
# tenant_logins (burst 2, monitor): every acme login past the second was one it would refuse.
wb=$(prom sluice_gateway_would_block_total tenant=acme counter=tenant_logins)
expect_ge "would_block: tenant_logins (monitor) let acme's logins through past its burst ($wb)" "$wb" 4
expect_eq "  ... by cost class: the route's" \
	"$(prom sluice_gateway_would_block_by_class_total tenant=acme cost_class=signin)" "$wb"
expect_eq "  ... nothing for the default tenant" \
	"$(prom sluice_gateway_would_block_total tenant=default counter=tenant_logins)" 0
expect_eq "one label, one meaning: the gateway's cost class is cost_class, never class" \
	"$(scrape | grep -E '^sluice_gateway_[a-z_]+\{' | grep -c '[{,]class=')" 0
expect_ge "  ... and the edge's class is the ASN class" \
	"$(prom sluice_xdp_decisions_total reason=first_admitted class=residential)" 40

# ---- 5. reloads ---------------------------------------------------------------------------
write_conf 33
out=$(sluicectl reload 2>&1)
rc=$?
expect_eq "a broken file: reload fails (exit 1)" "$rc" 1
expect_eq "reloads: failed 1, ok 0" \
	"$(prom sluice_config_reloads_total outcome=failed) $(prom sluice_config_reloads_total outcome=ok)" "1 0"
expect_eq "last reload successful: 0 (the file on disk is not what runs)" \
	"$(prom sluice_config_last_reload_successful)" 0
ft=$(prom sluice_config_last_reload_failure_timestamp_seconds)
expect_ge "the failure's timestamp is now ($ft)" "$ft" "$now"
expect_eq "the config in force is still the start's (generation 1)" "$(prom sluice_config_generation)" 1
write_conf 32
sleep 1.1 # a later second for the success's timestamp
expect_match "the file fixed: reload applies" "$(sluicectl reload 2>&1)" "reloaded"
expect_eq "reloads: ok 1, failed 1; last successful 1" \
	"$(prom sluice_config_reloads_total outcome=ok) $(prom sluice_config_reloads_total outcome=failed) $(prom sluice_config_last_reload_successful)" "1 1 1"
ot=$(prom sluice_config_last_reload_success_timestamp_seconds)
expect_ge "the success's timestamp is after the failure's ($ot > $ft)" "$ot" $((ft + 1))
expect_eq "generation 2" "$(prom sluice_config_generation)" 2

# ---- 6. the attacker: fresh tenant and account names mint no label value --------------------
scrape >"$NT_DIR/before.txt"
cat >"$NT_DIR/flood.py" <<'PYEOF'
import http.client, random, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
rnd = random.Random(17)
names, codes = [], {}
for i in range(n):
    host = "t%08x.attacker.test" % rnd.getrandbits(32)
    user = "u%08x" % rnd.getrandbits(32)
    names += [host, user]
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("POST", "/login", body="username=%s&password=x" % user, headers={
        "Host": host, "Content-Type": "application/x-www-form-urlencoded",
        "X-Forwarded-For": "198.18.%d.%d" % (i // 250, i % 250 + 1)})
    r = c.getresponse()
    r.read()
    c.close()
    codes[r.status] = codes.get(r.status, 0) + 1
open(sys.argv[3], "w").write("\n".join(names) + "\n")
print(" ".join("%d:%d" % kv for kv in sorted(codes.items())))
PYEOF
codes=$(ip netns exec "$NS_S" $PY "$NT_DIR/flood.py" "$GWP" 300 "$NT_DIR/names.txt")
tap_diag "the flood's answers (status:count): $codes"
scrape >"$NT_DIR/after.txt"
tenants=$(grep -o 'tenant="[^"]*"' "$NT_DIR/after.txt" | sort -u | tr '\n' ' ')
expect_eq "after 300 logins under fresh Host and account names: tenants on /metrics are the configured two" \
	"$tenants" 'tenant="acme" tenant="default" '
expect_eq "  ... no name from the requests appears anywhere on /metrics" \
	"$(grep -cFf "$NT_DIR/names.txt" "$NT_DIR/after.txt")" 0
series() { grep -v '^#' "$1" | sed 's/ [^ ]*$//' | sort -u | wc -l; }
expect_eq "  ... and the number of series is what it was ($(series "$NT_DIR/before.txt"))" \
	"$(series "$NT_DIR/after.txt")" "$(series "$NT_DIR/before.txt")"
# One password sprayed over 300 names: the stream job's ladder steps most of them up.
sum=0 seen=
for res in ok failed throttled step_up; do
	v=$(prom sluice_gateway_logins_total tenant=default outcome=$res)
	seen="$seen $res $v"
	sum=$((sum + v))
done
expect_eq "  ... every one of the flood's logins counted once under the default tenant ($seen)" \
	"$sum" 300

# ---- 7. linters and the dashboard ----------------------------------------------------------
pt=$(prom --promtool)
if [ "$pt" = "no promtool" ]; then
	tap_skip "metrics pass promtool check metrics" "no promtool (scripts/deps.sh fetches it)"
else
	expect_eq "metrics pass promtool check metrics (Prometheus's parser and linter)" "$pt" ok
fi
out=$(ip netns exec "$NS_S" $PY "$ROOT/tests/lib/dashboard_check.py" "$ROOT/docs/grafana-dashboard.json" "$URL" 2>&1)
rc=$?
expect_eq "the dashboard uses only metrics this /metrics has, every query filtered by node and tenant" \
	"$rc" 0
[ "$rc" = 0 ] || tap_diag "$out"
# The alert rules operations.md gives parse as Prometheus rules.
awk '/^### Alerts worth having/ {a = 1} a && /^```yaml$/ {f = 1; next} f && /^```$/ {exit} f' \
	"$ROOT/docs/operations.md" >"$NT_DIR/alerts.yml"
PT=${PROMTOOL:-$(command -v promtool || echo /usr/local/lib/sluice/promtool)}
if [ -x "$PT" ]; then
	out=$("$PT" check rules "$NT_DIR/alerts.yml" 2>&1)
	expect_match "operations.md's alert rules pass promtool check rules" "$out" "SUCCESS: [1-9][0-9]* rules found"
else
	tap_skip "operations.md's alert rules pass promtool check rules" "no promtool"
fi
# The checker itself: a query that lost its node join, one that groups by the old `class`.
$PY - "$ROOT/docs/grafana-dashboard.json" "$NT_DIR/broken.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
ts = [t for p in d["panels"] for t in p.get("targets", [])]
for t in ts:
    if "sluice_gateway_shed_by_class_total" in t["expr"]:
        t["expr"] = t["expr"].replace("cost_class", "class")
    if "sluice_gateway_goodput_total" in t["expr"]:
        t["expr"] = 'sum by (tenant) (rate(sluice_gateway_goodput_total{tenant=~"$tenant"}[1m]))'
json.dump(d, open(sys.argv[2], "w"))
PYEOF
out=$(ip netns exec "$NS_S" $PY "$ROOT/tests/lib/dashboard_check.py" "$NT_DIR/broken.json" "$URL" 2>&1)
rc=$?
expect_eq "a dashboard with a query not joined to its node fails the check" "$rc" 1
expect_match "  ... naming the query" "$out" "sluice_gateway_goodput_total.*0 joins|0 joins.*sluice_gateway_goodput_total"
expect_match "  ... and the label no metric has" "$out" "label 'class' is on none of its metrics"

# ---- 8. a bucket table too large to read at each scrape ------------------------------------
# state_entries 65,536: 16,384 sets, read 4,096 at a time, each window scaled by 4. Four
# scrapes in a row read every set once, so their sum is exactly four times the ways in use,
# which sluicectl's walk of the whole table counts.
nt_stop_sluiced TERM
rm -rf "$PIN"
write_conf 32 65536
nt_start_sluiced || { echo "Bail out! sluiced did not restart"; exit 1; }
expect_eq "capacity: 65,536 bucket ways" "$(prom sluice_bpf_table_capacity table=buckets)" 65536
r=$(ip netns exec "$NS_C" $PY "$ROOT/tests/lib/edge_probe.py" --iface vc --dmac "$SERVER_MAC" \
	--dst 10.200.0.2 --rotate 198.51.100.0/24:32 --count 20 --seed 12)
expect_eq "20 more hosting addresses admitted" "$(jget "$r" admitted)" 20
walk=$(jget "$(sluicectl status --json)" state_entries)
expect_ge "  ... in at least 21 ways (20 keys and their parent): $walk" "$walk" 21
sum=0 seen=
for _ in 1 2 3 4; do
	v=$(prom sluice_bpf_table_entries table=buckets)
	seen="$seen $v"
	sum=$((sum + v))
done
expect_eq "buckets sampled 4,096 sets a scrape: four scrapes sum to 4 x $walk ($seen)" "$sum" \
	$((4 * walk))

tap_done
