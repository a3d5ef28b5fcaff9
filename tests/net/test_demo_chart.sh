#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The demo's chart (issue 17, item 7): scripts/demo.sh in its short mode (DEMO_SHORT=1: every
# phase shorter, the edge's curl part left out), then what its sampler wrote and gnuplot drew.
#
#   - every series scripts/demo_chart.gp plots is a column of demo.csv, for every tenant and
#     every class (the list is read from the chart script, so a new series is checked too);
#   - the phases demo.sh started are in phases.csv, in order, each with a start before its end;
#   - the values are what the demo's users caused: at every sample no tenant's goodput so far
#     exceeds what it offered so far; the offered load adds up to what the load generators say
#     they sent (sent.csv, their own counts); acme offers at least three times as much in the
#     Monday phase as in the baseline; every quiet tenant has goodput in every gateway phase;
#     the edge passed the Manila office (business), shed the hosting /24 and the IPv6 /48
#     (hosting, residential) and answered the spoofed SYNs with cookies;
#   - gnuplot renders the PNG with nothing on stderr, and the same chart on a CSV without one
#     of its series warns (what the render check exists to catch: a careless edit to the
#     sampler); the sampler pointed at a port nobody listens on exits non-zero, saying so.
# Needs bench/monday and bench/neighbour (make net-test builds them) and gnuplot (the demo set
# of scripts/deps.sh); without gnuplot the rendering checks are skipped.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/tap.sh"
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
PY=/usr/bin/python3
if [ "$(id -u)" -ne 0 ]; then echo "1..0 # SKIP needs root (network namespaces, XDP)"; exit 0; fi
for need in scapy prometheus_client; do
	$PY -c "import $need" 2>/dev/null || { echo "1..0 # SKIP python3 $need missing"; exit 0; }
done
for b in sluiced sluicectl bpf/bare_pass.bpf.o bench/monday bench/neighbour; do
	[ -e "$BUILD/$b" ] || { echo "Bail out! build $BUILD/$b first (make net-test)"; exit 1; }
done
OUT=$(mktemp -d /tmp/sluice-demo-chart.XXXXXX)
trap '[ "${SL_DEBUG:-0}" = 1 ] && echo "# SL_DEBUG=1: left $OUT" >&2 || rm -rf "$OUT"' EXIT

t0=$EPOCHREALTIME
BUILD=$BUILD DEMO_SHORT=1 DEMO_OUT="$OUT" bash "$ROOT/scripts/demo.sh" >"$OUT/demo.log" 2>&1
rc=$?
expect_eq "the short demo runs to its end (exit status)" "$rc" 0
[ "$rc" = 0 ] || tap_diag "$(tail -20 "$OUT/demo.log")"
tap_diag "the short demo took $($PY -c "print('%.0f' % ($EPOCHREALTIME - $t0))") s"

# One line per check: "ok|not ok NAME: DETAIL".
$PY - "$OUT" "$ROOT/scripts/demo_chart.gp" >"$OUT/checks" 2>&1 <<'PYEOF'
import csv, os, re, sys
out, gp = sys.argv[1], sys.argv[2]
TENANTS = ["acme", "globex", "initech", "umbrella"]
QUIET = TENANTS[1:]
CLASSES = ["hosting", "residential", "mobile", "business", "unknown"]
def check(name, ok, detail=""):
    print("%s %s%s" % ("ok" if ok else "not ok", name, (": " + detail) if detail else ""))
try:
    rows = list(csv.DictReader(open(os.path.join(out, "demo.csv"))))
    phases = list(csv.DictReader(open(os.path.join(out, "phases.csv"))))
    sent = list(csv.DictReader(open(os.path.join(out, "sent.csv"))))
except OSError as e:
    check("the demo wrote demo.csv, phases.csv and sent.csv", False, str(e))
    sys.exit(0)
check("the sampler wrote rows", len(rows) >= 20, "%d rows" % len(rows))
cols = set(rows[0].keys()) if rows else set()
text = open(gp).read()
per = re.findall(r'column\("([a-z0-9_]+_)"\.word\((tenants|classes)', text)
plain = re.findall(r'using 1:"([a-z0-9_]+)"', text)
want = [p + x for p, kind in per for x in (TENANTS if kind == "tenants" else CLASSES)] + plain
missing = [c for c in want if c not in cols]
check("every series the chart plots is in demo.csv (%d series)" % len(want),
      len(per) >= 5 and not missing, "missing: %s" % " ".join(missing) if missing else "")

names = [p["name"] for p in phases]
expect = ["baseline", "monday: acme 6x", "after", "manila office", "edge: spoofed SYNs",
          "edge: /24 and /48 floods"]
check("phases.csv holds the demo's phases in order", names == expect, " | ".join(names))
bounds = [(float(p["start"]), float(p["end"])) for p in phases]
check("each phase starts before it ends and after the one before",
      all(a < b for a, b in bounds) and all(bounds[i][1] <= bounds[i + 1][0]
                                             for i in range(len(bounds) - 1)))

num = lambda r, k: float(r[k]) if r.get(k) not in (None, "") else 0.0
def total(phase, key):
    a, b = [(float(p["start"]), float(p["end"])) for p in phases if p["name"] == phase][0]
    # A row counts the second before its time: it belongs to the phase it ends in.
    return sum(num(r, key) for r in rows if a < float(r["t"]) <= b + 0.5)

bad = []
for x in TENANTS:
    off = good = 0.0
    for r in rows:
        off += num(r, "offered_" + x)
        good += num(r, "goodput_" + x)
        if good > off:
            bad.append("%s at t=%s: goodput %d > offered %d" % (x, r["t"], good, off))
            break
check("at every sample no tenant's goodput so far exceeds its offered load so far",
      not bad, "; ".join(bad))

gen = {}
for s in sent:
    t = s["tenant"].split(" ")[0]
    gen[t] = gen.get(t, 0) + int(s["sent"])
for x in TENANTS:
    off = sum(num(r, "offered_" + x) for r in rows)
    g = gen.get(x, 0)
    check("%s: the offered load adds up to what the generators sent" % x,
          g > 0 and 0.97 * g <= off <= g, "offered %d, sent %d" % (off, g))

base = total("baseline", "offered_acme") / max(bounds[0][1] - bounds[0][0], 1)
mon = [p for p in phases if p["name"].startswith("monday")][0]
surge = total(mon["name"], "offered_acme") / max(float(mon["end"]) - float(mon["start"]), 1)
check("acme offers at least 3x its baseline in the Monday phase", surge >= 3 * base > 0,
      "%.1f/s against %.1f/s" % (surge, base))
for ph in ("baseline", mon["name"], "after", "manila office"):
    for x in QUIET:
        g = total(ph, "goodput_" + x)
        check("%s has goodput in phase '%s'" % (x, ph), g > 0, "%d logins" % g)
check("the edge passed the Manila office (business)",
      total("manila office", "edge_pass_business") > 0,
      "%d" % total("manila office", "edge_pass_business"))
for c in ("hosting", "residential"):
    check("the edge shed the %s flood" % c, total("edge: /24 and /48 floods", "edge_shed_" + c) > 0,
          "%d" % total("edge: /24 and /48 floods", "edge_shed_" + c))
check("the edge answered the spoofed SYNs with cookies",
      total("edge: spoofed SYNs", "edge_syn") >= 1000, "%d" % total("edge: spoofed SYNs", "edge_syn"))
PYEOF
while IFS= read -r line; do
	case "$line" in
	"ok "*) tap_ok "${line#ok }" ;;
	"not ok "*) tap_not_ok "${line#not ok }" ;;
	*) tap_not_ok "checker: $line" ;;
	esac
done <"$OUT/checks"

if command -v gnuplot >/dev/null; then
	expect_eq "the demo drew a PNG" "$(head -c 8 "$OUT/sluice-demo.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" \
		"89504e470d0a1a0a"
	gpv=(-e "csv='$OUT/demo.csv'; phases='$OUT/phases.csv'; out='$OUT/again.png'; tenants='acme globex initech umbrella'; classes='hosting residential mobile business unknown'")
	err=$(gnuplot "${gpv[@]}" "$ROOT/scripts/demo_chart.gp" 2>&1)
	expect_eq "gnuplot renders the chart with nothing on stderr" "$err" ""
	# A careless edit: the sampler stops writing one series.
	$PY -c 'import csv,sys
r = list(csv.reader(open(sys.argv[1])))
i = r[0].index("wait_p99_globex")
csv.writer(open(sys.argv[2], "w")).writerows([x[:i] + x[i + 1:] for x in r])' \
		"$OUT/demo.csv" "$OUT/cut.csv"
	err=$(gnuplot -e "csv='$OUT/cut.csv'; phases='$OUT/phases.csv'; out='$OUT/cut.png'; tenants='acme globex initech umbrella'; classes='hosting residential mobile business unknown'" \
		"$ROOT/scripts/demo_chart.gp" 2>&1)
	expect_match "a CSV without a series the chart plots makes gnuplot warn, naming it" "$err" \
		'no column with header "wait_p99_globex"'
else
	tap_skip "the demo drew a PNG" "gnuplot missing (scripts/deps.sh demo)"
	tap_skip "gnuplot renders the chart with nothing on stderr" "gnuplot missing"
	tap_skip "a CSV without a series makes gnuplot warn" "gnuplot missing"
fi

port=$(free_port)
err=$(timeout 30 $PY "$ROOT/scripts/demo_sample.py" --url "http://127.0.0.1:$port/metrics" --t0 0 \
	--stop "$OUT/never" --out "$OUT/none.csv" --tenants acme --classes hosting 2>&1)
rc=$?
expect_eq "the sampler exits non-zero when /metrics does not answer" "$rc" 1
expect_match "and says which URL" "$err" "127.0.0.1:$port/metrics does not answer"
tap_done
