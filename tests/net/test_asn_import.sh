#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# sluicectl asn import, as an operator runs it against a live sluiced (attached to a veth in
# a namespace the test made): a MaxMind-format .mmdb written by tests/lib/mmdb_write.py (an
# IPv6 database with IPv4 at ::/96 and its aliases, fields from the ASN, Connection-Type,
# Enterprise and Anonymous-IP databases), an iptoasn TSV and an @ip-location-db/asn CSV go
# through a class map into a table that sluiced swaps in; `prefix show` then reports the
# classes the map gave. Bad input is refused naming file:line, and the running table stays.
# No network: every source is written here.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"

nt_require
nt_setup || { echo "Bail out! cannot build the veth topology"; exit 1; }

cat >"$NT_DIR/asn.csv" <<'EOF'
prefix,asn,class
198.18.0.0/15,64510,business
EOF
cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  ports = ( { port = 80; action = "reply"; cost = 1; } );
  state_entries = 4096;
  asn_table = "$NT_DIR/asn.csv";
  pin_path = "$PIN";
};
classes = (
  { name = "hosting"; rate = 1.0; burst = 10.0; },
  { name = "residential"; rate = 1.0; burst = 10.0; },
  { name = "mobile"; rate = 1.0; burst = 10.0; },
  { name = "business"; rate = 1.0; burst = 10.0; },
  { name = "unknown"; rate = 1.0; burst = 10.0; }
);
daemon: { control_socket = "$SOCK"; };
EOF

# The class map an operator would write: their own ASNs first, then the database's fields.
cat >"$NT_DIR/classes.map" <<'EOF'
# asn,class lines and rules (docs/operations.md, "Where a class table comes from")
21928,mobile                         # T-Mobile US
AS64999,business
flag:is_hosting_provider,hosting
user_type:business,business
connection_type:Cellular,mobile
connection_type:Cable/DSL,residential
org:*hosting*,hosting
EOF

# The .mmdb: what MaxMind's databases say of a network, one kind of field per network.
cat >"$NT_DIR/nets.json" <<'EOF'
[{"network": "198.51.100.0/24", "data": {"autonomous_system_number": 64500,
   "autonomous_system_organization": "Example Hosting GmbH"}},
 {"network": "198.51.100.128/25", "data": {"connection_type": "Cellular"}},
 {"network": "203.0.113.0/24", "data": {"connection_type": "Cable/DSL"}},
 {"network": "192.0.2.0/24", "data": {"traits": {"user_type": "business"}}},
 {"network": "2001:db8:1::/48", "data": {"is_anonymous": true, "is_hosting_provider": true}},
 {"network": "2001:db8:2::/48", "data": {"autonomous_system_number": 21928,
   "autonomous_system_organization": "T-Mobile USA, Inc."}},
 {"network": "2001:db8:3::/48", "data": {"autonomous_system_number": 64501,
   "autonomous_system_organization": "Some ISP"}}]
EOF
$PY "$ROOT/tests/lib/mmdb_write.py" --ipv4-aliases --type GeoIP2-Test "$NT_DIR/t.mmdb" \
	<"$NT_DIR/nets.json"
expect_eq "mmdb_write.py wrote a database" "$?" 0

# 1. Offline (--no-load): the table the map makes.
out=$(sluicectl asn import "$NT_DIR/t.mmdb" --map "$NT_DIR/classes.map" \
	-o "$NT_DIR/mmdb.csv" --no-load 2>&1); rc=$?
expect_eq "import --no-load: exit 0" "$rc" 0
expect_match "  ... says what it read (7 networks, the 2 IPv4 aliases left out)" "$out" \
	"7 records, 7 ranges, 2 aliases of IPv4 left out"
expect_match "  ... and what it made" "$out" "7 rows \(4 IPv4, 3 IPv6\)"
rows=$(grep -v '^#' "$NT_DIR/mmdb.csv" | tr '\n' ' ')
expect_eq "  ... the written table" "$rows" "prefix,asn,class 192.0.2.0/24,0,business \
198.51.100.0/25,64500,hosting 198.51.100.128/25,0,mobile 203.0.113.0/24,0,residential \
2001:db8:1::/48,0,hosting 2001:db8:2::/48,21928,mobile 2001:db8:3::/48,64501,unknown "

# The same networks in an IPv4-only database with 24-bit records.
$PY -c 'import json, sys; print(json.dumps([n for n in json.load(sys.stdin) if ":" not in n["network"]]))' \
	<"$NT_DIR/nets.json" >"$NT_DIR/nets4.json"
$PY "$ROOT/tests/lib/mmdb_write.py" --ip-version 4 --record-size 24 "$NT_DIR/t4.mmdb" \
	<"$NT_DIR/nets4.json"
sluicectl asn import "$NT_DIR/t4.mmdb" --map "$NT_DIR/classes.map" -o "$NT_DIR/mmdb4.csv" \
	--no-load >/dev/null 2>&1
v4rows=$(grep -E '^[0-9]+\.' "$NT_DIR/mmdb.csv" | tr '\n' ' ')
expect_eq "an IPv4 database (24-bit records) gives the same 4 IPv4 rows" \
	"$(grep -E '^[0-9]+\.' "$NT_DIR/mmdb4.csv" | tr '\n' ' ')" "$v4rows"
expect_eq "  ... (4 of them)" "$(wc -w <<<"$v4rows")" 4

# 2. With sluiced running: the import is swapped in, prefix show reports the map's classes.
if ! nt_start_sluiced; then
	echo "Bail out! sluiced did not start"
	exit 1
fi
expect_eq "before: the config's table (1 row)" "$(jget "$(sluicectl status --json)" \
	asn_entries)" 1
out=$(sluicectl asn import "$NT_DIR/t.mmdb" --map "$NT_DIR/classes.map" \
	-o "$NT_DIR/mmdb.csv" 2>&1); rc=$?
expect_eq "import: exit 0 once sluiced has the table" "$rc" 0
expect_match "  ... and says so" "$out" "load +sluiced: installed 7 rows from $NT_DIR/mmdb.csv"
st=$(sluicectl status --json)
expect_eq "status: 7 rows" "$(jget "$st" asn_entries)" 7
expect_eq "status: from the imported file" "$(jget "$st" asn_source)" "$NT_DIR/mmdb.csv"

# show ADDR: "class asn in_asn_table" as prefix show --json reports them.
show() {
	local p
	p=$(sluicectl prefix show "$1" --json)
	echo "$(jget "$p" class) $(jget "$p" asn) $(jget "$p" in_asn_table)"
}
expect_eq "prefix show 198.51.100.9: hosting (org:*hosting*), AS64500" \
	"$(show 198.51.100.9)" "hosting 64500 true"
expect_eq "prefix show 198.51.100.200: mobile (connection_type Cellular; the /25 wins)" \
	"$(show 198.51.100.200)" "mobile 0 true"
expect_eq "prefix show 203.0.113.5: residential (connection_type Cable/DSL)" \
	"$(show 203.0.113.5)" "residential 0 true"
expect_eq "prefix show 192.0.2.77: business (traits.user_type)" "$(show 192.0.2.77)" \
	"business 0 true"
expect_eq "prefix show 2001:db8:1::5: hosting (is_hosting_provider)" \
	"$(show 2001:db8:1::5)" "hosting 0 true"
expect_eq "prefix show 2001:db8:2:ff::1: mobile (AS21928 in the map)" \
	"$(show 2001:db8:2:ff::1)" "mobile 21928 true"
expect_eq "prefix show 2001:db8:3::1: unknown (nothing maps AS64501), AS kept" \
	"$(show 2001:db8:3::1)" "unknown 64501 true"
expect_eq "prefix show 2002:c633:6409::1 (6to4 alias of 198.51.100.9): not in the table" \
	"$(show 2002:c633:6409::1)" "unknown  false"
expect_eq "prefix show 198.18.0.1: the old table's row is gone (a whole swap)" \
	"$(show 198.18.0.1)" "unknown  false"

# 3. iptoasn TSV and an ASN CSV in one table; --default for what the map does not name.
printf '%s\n' \
	"0.0.0.0	0.255.255.255	0	None	Not routed" \
	"198.51.100.0	198.51.100.255	64500	DE	EXAMPLE-HOSTING" \
	"203.0.113.0	203.0.113.127	21928	US	T-MOBILE-AS21928" \
	"203.0.113.128	203.0.113.255	64777	US	SOMEBODY" >"$NT_DIR/ip2asn-v4.tsv"
printf '%s\n' \
	'ip_range_start,ip_range_end,autonomous_system_number,autonomous_system_organization' \
	'2001:db8:5::,2001:db8:5:ffff:ffff:ffff:ffff:ffff,64999,"Office, Inc."' \
	'192.0.2.10,192.0.2.20,64600,"Big Hosting, Ltd"' >"$NT_DIR/asn-ipv6.csv"
out=$(sluicectl asn import "$NT_DIR/ip2asn-v4.tsv" "$NT_DIR/asn-ipv6.csv" \
	--map "$NT_DIR/classes.map" --default residential -o "$NT_DIR/text.csv" --json 2>&1)
rc=$?
expect_eq "import TSV + CSV: exit 0" "$rc" 0
expect_eq "  ... JSON: ok" "$(jget "$out" ok)" true
expect_eq "  ... JSON: loaded" "$(jget "$out" loaded)" true
expect_eq "  ... JSON: AS 0 (not routed) left out" "$(jget "$out" skipped_as0)" 1
expect_eq "  ... JSON: rows (1 + 2 + 1, and 4 for 192.0.2.10-20)" "$(jget "$out" rows)" 8
expect_eq "prefix show 198.51.100.9: hosting (the TSV's description)" \
	"$(show 198.51.100.9)" "hosting 64500 true"
expect_eq "prefix show 203.0.113.9: mobile (AS21928)" "$(show 203.0.113.9)" \
	"mobile 21928 true"
expect_eq "prefix show 203.0.113.200: residential (--default)" "$(show 203.0.113.200)" \
	"residential 64777 true"
expect_eq "prefix show 192.0.2.16: hosting (10-20 cut into .10/31 .12/30 .16/30 .20/32)" \
	"$(show 192.0.2.16)" "hosting 64600 true"
expect_eq "prefix show 192.0.2.21: past the range's end, not in the table" \
	"$(show 192.0.2.21)" "unknown  false"
expect_eq "prefix show 2001:db8:5:1::1: business (AS64999 in the map)" \
	"$(show 2001:db8:5:1::1)" "business 64999 true"

# 4. Bad input: file:line, nothing written, the running table stays.
before=$(cat "$NT_DIR/text.csv")
printf '%s\n' "198.51.100.0	198.51.100.255	64500	DE	X" "198.51.100.0 198.51.100.255 1 DE X" \
	"10.0.0.9	10.0.0.1	5	US	backwards" >"$NT_DIR/bad.tsv"
out=$(sluicectl asn import "$NT_DIR/bad.tsv" --map "$NT_DIR/classes.map" \
	-o "$NT_DIR/text.csv" 2>&1); rc=$?
expect_eq "a bad TSV: exit 1" "$rc" 1
expect_match "  ... names line 2" "$out" "bad.tsv:2: expected 5 tab-separated fields"
expect_match "  ... and line 3" "$out" "bad.tsv:3: the range ends \(10.0.0.1\) before it starts"
expect_match "  ... and says nothing was written" "$out" "nothing was written"
expect_eq "  ... the output file is untouched" "$(cat "$NT_DIR/text.csv")" "$before"
expect_eq "  ... the running table stays" "$(show 192.0.2.16)" "hosting 64600 true"

printf '%s\n' "64500,hosting" "64501,cloud" "org:,mobile" >"$NT_DIR/bad.map"
out=$(sluicectl asn import "$NT_DIR/ip2asn-v4.tsv" --map "$NT_DIR/bad.map" \
	-o "$NT_DIR/x.csv" 2>&1); rc=$?
expect_eq "a map with an undefined class: exit 1" "$rc" 1
expect_match "  ... names the map's line 2" "$out" "bad.map:2: class 'cloud' is not defined"
expect_match "  ... and line 3" "$out" "bad.map:3: 'org:' needs a value"

head -c 300 "$NT_DIR/t.mmdb" >"$NT_DIR/cut.mmdb"
out=$(sluicectl asn import "$NT_DIR/cut.mmdb" --map "$NT_DIR/classes.map" \
	-o "$NT_DIR/x.csv" 2>&1); rc=$?
expect_eq "a truncated .mmdb: exit 1" "$rc" 1
expect_match "  ... names the file and what libmaxminddb says" "$out" \
	"cut.mmdb: .*MaxMind DB"
expect_eq "  ... the running table stays" "$(jget "$(sluicectl status --json)" asn_entries)" 8

out=$(sluicectl asn import "$NT_DIR/t.mmdb" -o "$NT_DIR/x.csv" 2>&1); rc=$?
expect_eq "no --map: a usage error (exit 2)" "$rc" 2
expect_match "  ... that says what is missing" "$out" "missing --map FILE"
out=$(sluicectl asn import "$NT_DIR/t.mmdb" --map "$NT_DIR/classes.map" -o "$NT_DIR/x.csv" \
	--format xml 2>&1); rc=$?
expect_eq "--format xml: a usage error (exit 2)" "$rc" 2
out=$(sluicectl asn load "$NT_DIR/t.mmdb" --map "$NT_DIR/classes.map" 2>&1); rc=$?
expect_match "asn load refuses --map (it is for asn import)" "$out" \
	"--map does not apply here \(it is for asn import\)"

# 4b. The fast shapes of the live table (the /24 table, the IPv6 table) type every sampled
# source as the kernel's trie does: rows nested from /12 to /128, IPv6 /48s holding longer
# rows, IPv4 /24s holding longer rows; then a careless operator's table of 90,000 scattered
# IPv6 /48s, more than the IPv6 table has nodes for: slower where it ran out, never wrong.
/usr/bin/python3 - "$NT_DIR/nest.csv" "$NT_DIR/wide.csv" <<'PYEOF'
import ipaddress, random, sys
random.seed(18)
cls = ["hosting", "residential", "mobile", "business", "unknown"]
rows = set()
for base in ("2001:db8::/32", "2400::/12", "2a02:1200::/28", "2600:1f00::/24"):
    rows.add(ipaddress.ip_network(base))
    net = ipaddress.ip_network(base)
    for _ in range(150):
        plen = random.choice([33, 36, 40, 44, 47, 48, 49, 56, 64, 100, 128])
        plen = max(plen, net.prefixlen + 1)
        addr = int(net.network_address) | random.getrandbits(128 - net.prefixlen)
        rows.add(ipaddress.ip_network((addr >> (128 - plen) << (128 - plen), plen)))
for _ in range(200):
    plen = random.choice([12, 16, 20, 24, 25, 28, 32])
    addr = random.getrandbits(32)
    rows.add(ipaddress.ip_network((addr >> (32 - plen) << (32 - plen), plen)))
with open(sys.argv[1], "w") as f:
    f.write("prefix,asn,class\n")
    for i, r in enumerate(sorted(rows, key=lambda n: (n.version, n))):
        f.write("%s,%d,%s\n" % (r, 64512 + i, cls[i % 5]))
with open(sys.argv[2], "w") as f:
    f.write("prefix,asn,class\n")
    seen = set()
    while len(seen) < 90000:
        seen.add((0x2000 << 112 | random.getrandbits(125)) >> 80 << 80)
    for i, a in enumerate(sorted(seen)):
        f.write("%s/48,%d,%s\n" % (ipaddress.IPv6Address(a), 64512 + i % 1000, cls[i % 4]))
PYEOF
out=$(sluicectl asn load "$NT_DIR/nest.csv" 2>&1); rc=$?
expect_eq "a nested table loads" "$rc" 0
out=$("$BUILD/tests/bin/asn_check" "$PIN" "$NT_DIR/nest.csv" 2>&1); rc=$?
expect_eq "every sampled source typed by the fast tables as by the trie" "$rc" 0
tap_diag "$out"
expect_eq "  ... none disagree" "$(jget "$(tail -1 <<<"$out")" disagree)" 0
expect_ge "  ... the IPv6 table answered most IPv6 sources" \
	"$(( $(jget "$(tail -1 <<<"$out")" v6_sources) - 2 * $(jget "$(tail -1 <<<"$out")" v6_trie) ))" 1
expect_ge "  ... and left the /48s with longer rows to the trie" \
	"$(jget "$(tail -1 <<<"$out")" v6_trie)" 1
expect_match "  ... sluiced's log says what the IPv6 table holds" "$(cat "$NT_DIR/sluiced.log")" \
	"nest.csv installed \([0-9]+ rows; the IPv6 table: [0-9]+ nodes of 262144, [0-9]+ /48s"
out=$(sluicectl asn load "$NT_DIR/wide.csv" 2>&1); rc=$?
expect_eq "90,000 scattered IPv6 /48s load" "$rc" 0
expect_match "  ... sluiced's log says the IPv6 table ran out of nodes" \
	"$(cat "$NT_DIR/sluiced.log")" "wide.csv installed .*for want of nodes"
out=$("$BUILD/tests/bin/asn_check" "$PIN" "$NT_DIR/wide.csv" --every 7 2>&1); rc=$?
expect_eq "  ... every sampled source still typed as by the trie" "$rc" 0
tap_diag "$out"
expect_ge "  ... the sources it had no room for go to the trie" \
	"$(jget "$(tail -1 <<<"$out")" v6_trie)" 1
expect_ge "  ... the rest it still answers" \
	"$(( $(jget "$(tail -1 <<<"$out")" v6_sources) - $(jget "$(tail -1 <<<"$out")" v6_trie) ))" 1
sluicectl asn load "$NT_DIR/mmdb.csv" >/dev/null 2>&1

# 5. sluiced down: the table is written, and the operator is told how to load it.
nt_stop_sluiced TERM
out=$(sluicectl asn import "$NT_DIR/t.mmdb" --map "$NT_DIR/classes.map" \
	-o "$NT_DIR/later.csv" 2>&1); rc=$?
expect_eq "sluiced not running: exit 1" "$rc" 1
expect_match "  ... says it is not answering and how to load the file" "$out" \
	"not answering on .*sluicectl asn load $NT_DIR/later.csv"
expect_eq "  ... the table is written all the same" \
	"$(grep -c '^[0-9a-f]' "$NT_DIR/later.csv")" 7

tap_done
