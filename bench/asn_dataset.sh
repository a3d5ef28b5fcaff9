#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench/asn_dataset.sh: the edge on a real public ASN table (issue 18, item 3). Fetches the
# @ip-location-db/asn CSVs (RouteViews + RIRs + DB-IP, CC BY 4.0) from the npm registry
# into $BUILD/asn-dataset/ (never committed), imports them with `sluicectl asn import` and
# bench/asn_classes.map, and reports:
#   - the table's size: source ranges, rows, IPv4/IPv6 prefixes, the /24 table (IPv4 rows
#     longer than /24 and the /24s they send to the trie), rows and IPv4 addresses per class
#   - load time: the import (read + build), writing and checking it, and a live sluiced
#     loading it (`sluicectl asn load`, parse + trie + /24 table swap), wall clock
#   - the fast shapes against the trie: every row sampled at six sources, each typed by the
#     live /24 table or IPv6 table and by the kernel's LPM trie (tests/bin/asn_check)
#   - the per-packet cost on it: bench/xdp_cost --asn-table against the bare XDP program in
#     the same run, as ratios, beside xdp_cost's default synthetic 100,000 rows
# This is the only script that touches the network (npm); the tests never do.
#
# Usage: BUILD=build bench/asn_dataset.sh [--offline] [--repeat N]
#   --offline  use the dataset already in $BUILD/asn-dataset (no npm)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
DATA=$BUILD/asn-dataset
OFFLINE=0 REPEAT=1000000
while [ $# -gt 0 ]; do
	case "$1" in
	--offline) OFFLINE=1 ;;
	--repeat) REPEAT=$2; shift ;;
	*) echo "usage: $0 [--offline] [--repeat N]" >&2; exit 2 ;;
	esac
	shift
done
for b in sluicectl sluiced bench/xdp_cost; do
	[ -x "$BUILD/$b" ] || { echo "asn_dataset: $BUILD/$b missing (make all $BUILD/bench/xdp_cost)" >&2; exit 1; }
done
mkdir -p "$DATA"

# 1. The dataset: npm pack (the registry's tarball of the package, checksummed by npm).
if [ "$OFFLINE" = 0 ]; then
	command -v npm >/dev/null || { echo "asn_dataset: npm missing (or use --offline)" >&2; exit 1; }
	ver=$(cd "$DATA" && npm view @ip-location-db/asn version 2>/dev/null) ||
		{ echo "asn_dataset: npm cannot reach the registry (or use --offline)" >&2; exit 1; }
	tgz="$DATA/ip-location-db-asn-$ver.tgz"
	if [ ! -s "$tgz" ]; then
		(cd "$DATA" && npm pack "@ip-location-db/asn@$ver" >/dev/null 2>&1) ||
			{ echo "asn_dataset: npm pack failed" >&2; exit 1; }
	fi
	rm -rf "$DATA/package"
	tar -xzf "$tgz" -C "$DATA" package/asn-ipv4.csv package/asn-ipv6.csv package/package.json
fi
V4=$DATA/package/asn-ipv4.csv V6=$DATA/package/asn-ipv6.csv
[ -s "$V4" ] && [ -s "$V6" ] || { echo "asn_dataset: no dataset in $DATA (run without --offline)" >&2; exit 1; }
ver=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' \
	"$DATA/package/package.json" 2>/dev/null || echo "?")

echo "asn_dataset: $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -r), sluice $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
echo "dataset:     @ip-location-db/asn $ver: $(wc -l <"$V4") IPv4 + $(wc -l <"$V6") IPv6 ranges" \
	"($(du -ch "$V4" "$V6" | tail -1 | cut -f1) of CSV)"

# 2. The import, offline (--no-load): sizes and the time it takes.
TABLE=$DATA/asn-table.csv
imp=$("$BUILD/sluicectl" -c "$ROOT/examples/sluice.conf" --json asn import "$V4" "$V6" \
	--map "$ROOT/bench/asn_classes.map" -o "$TABLE" --no-load) ||
	{ echo "asn_dataset: the import failed" >&2; exit 1; }
/usr/bin/python3 - "$imp" <<'EOF'
import json, sys
r = json.loads(sys.argv[1])
print("import:      %d ranges (%d overlapping, resolved) -> %d rows: %d IPv4 + %d IPv6 prefixes"
      % (r["ranges"], r["overlaps"], r["rows"], r["v4_prefixes"], r["v6_prefixes"]))
print("/24 table:   %d IPv4 rows longer than /24 send %d of the 16,777,216 /24s to the trie"
      % (r["v4_longer_than_24"], r["v4_24s_in_trie"]))
for c in r["classes"]:
    print("  class %-12s %8d rows %6.1f M IPv4 addresses" % (c["class"], c["rows"],
          c["v4_addresses"] / 1e6))
print("import time: read %.2f s, build %.2f s, write + check (sluiced's parser) %.2f s"
      % (r["read_s"], r["build_s"], r["check_s"]))
EOF
echo "table file:  $TABLE ($(du -h "$TABLE" | cut -f1))"

# 3. A live sluiced loading it: the same asn load an operator runs (parse, fill the idle
# trie, build and write the /24 table, flip). sluiced on a veth in namespaces of our own.
. "$ROOT/tests/lib/tap.sh"
. "$ROOT/tests/lib/netns.sh"
nt_setup || { echo "asn_dataset: cannot build the veth topology" >&2; exit 1; }
cat >"$NT_DIR/sluice.conf" <<EOF
edge: { interfaces = ["vs"]; ports = ( { port = 80; cost = 1; } ); pin_path = "$PIN"; };
classes = (
  { name = "hosting"; rate = 1.0; burst = 10.0; }, { name = "residential"; rate = 1.0; burst = 10.0; },
  { name = "mobile"; rate = 1.0; burst = 10.0; }, { name = "business"; rate = 1.0; burst = 10.0; },
  { name = "unknown"; rate = 1.0; burst = 10.0; }
);
daemon: { control_socket = "$SOCK"; };
EOF
nt_start_sluiced >/dev/null || { echo "asn_dataset: sluiced did not start" >&2; cat "$NT_DIR/sluiced.log" >&2; exit 1; }
for i in 1 2 3; do
	t0=$(date +%s.%N)
	out=$(sluicectl asn load "$TABLE") || { echo "asn_dataset: asn load failed: $out" >&2; exit 1; }
	t1=$(date +%s.%N)
	loads+=("$(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }")")
done
echo "asn load:    sluiced: ${out}; wall clock ${loads[*]} s (three loads)"
grep -o "asn-table.csv installed ([^)]*)" "$NT_DIR/sluiced.log" | tail -1 | sed 's/^/sluiced log: /'
# The fast shapes against the trie on the real table: six sources sampled per row (its first
# and last address, either side, two inside), each typed by the live /24 or IPv6 table and
# by the kernel's trie (tests/bin/asn_check).
if [ -x "$BUILD/tests/bin/asn_check" ]; then
	chk=$("$BUILD/tests/bin/asn_check" "$PIN" "$TABLE" 2>&1) && v=agree || v=DISAGREE
	echo "fast vs trie: $v: $(tail -1 <<<"$chk")"
else
	echo "fast vs trie: not checked ($BUILD/tests/bin/asn_check missing: make $BUILD/tests/bin/asn_check)"
fi
nt_stop_sluiced TERM
nt_teardown
trap - EXIT

# 4. Per-packet cost: the real table against the synthetic one, each against the bare
# program in its own run.
echo
echo "== xdp_cost --asn-table (the real table)"
"$BUILD/bench/xdp_cost" --repeat "$REPEAT" --asn-table "$TABLE"
echo
echo "== xdp_cost (synthetic, 100,000 rows: the default)"
"$BUILD/bench/xdp_cost" --repeat "$REPEAT"
