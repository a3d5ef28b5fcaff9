#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# scripts/install_conf.sh SYSCONFDIR <examples/sluice.conf >sluice.conf
#
# The sluice.conf that `make install` ships, made from the sample so the two never drift:
# the sample's numbers (which the tests and the demo read) with every class, every tenant and
# the detectors in monitor mode, a header saying so and how to enforce, the ASN table pointing
# at the empty one installed beside it (packaging/asn.csv; the sample's table is documentation
# ranges), and /etc/sluice/ paths moved to SYSCONFDIR. A class or tenant group that sets no
# mode gets mode = "monitor" after its name; one that sets one has it turned to "monitor".
# tests/net/test_install.sh loads the result and checks every mode through the parser.
set -euo pipefail
dir=${1:?usage: install_conf.sh SYSCONFDIR <sluice.conf}

cat <<HDR
# $dir/sluice.conf as \`make install\` ships it: examples/sluice.conf from the source tree,
# made safe to start on a live node (scripts/install_conf.sh). Edit it, then check it with
# sluiced --check-config; sluice.conf.example beside it is this file as shipped.
#
#   - Every class, every tenant and the stream job's detectors are in monitor mode: sluiced
#     sheds nothing and counts what it would have shed (sluicectl wouldblock, sluicectl stats,
#     would_block_total on /metrics). To enforce, once those numbers look right
#     (docs/operations.md, "Monitor mode first"), set mode = "enforce" in a class or a tenant
#     (for the detectors, in the stream group at the end), then
#     sluiced --check-config && systemctl reload sluiced
#   - The ASN table, $dir/asn.csv, is installed empty: every source is in class
#     "unknown" until it holds your prefix,asn,class rows (docs/operations.md, "Per-prefix
#     rates, by class"). The sample table in the source tree is documentation ranges only.
#   - edge.interfaces, the ports and the tenants' listen addresses are the sample's
#     placeholders (eth0; the documentation addresses 192.0.2.80 and 2001:db8::80): set
#     yours. sluiced --check-config names an interface that does not exist.
#   - A gateway section, if you add one (examples/gateway.conf in the source tree), brings
#     per-account counters that enforce unless each is given mode = "monitor" (sluice.conf(5),
#     "counters").
#
HDR

awk -v dir="$dir" '
function flush(   b) {
	b = buf
	if (b !~ /mode[ \t]*=/)
		sub(/name[ \t]*=[ \t]*"[^"]*";/, "& mode = \"monitor\";", b)
	printf "%s", b
	buf = ""; ingroup = 0
}
{
	gsub(/\/etc\/sluice\//, dir "/")
	gsub(/mode[ \t]*=[ \t]*"enforce"/, "mode = \"monitor\"")
}
/^[ \t]*asn_table[ \t]*=/ {
	print "  # Installed empty (see the header): fill it with your own prefixes."
}
/^stream[ \t]*[:=][ \t]*\{/ {
	stream = 1
	print
	if ($0 !~ /mode[ \t]*=/)
		print "  mode = \"monitor\";   # every detector that sets no mode of its own"
	next
}
/^(classes|tenants)[ \t]*[:=][ \t]*\(/ { inlist = 1; print; next }
inlist && /^[ \t]*\);/ { if (ingroup) flush(); inlist = 0; print; next }
inlist {
	if (!ingroup && $0 ~ /\{/) ingroup = 1
	if (ingroup) {
		buf = buf $0 "\n"
		if ($0 ~ /\}/) flush()
		next
	}
}
{ print }
END {
	if (!stream) {
		print ""
		print "# The stream job (it runs with a gateway section): every detector in monitor mode,"
		print "# recording would-be blocks (sluicectl wouldblock). mode = \"enforce\" here, or in a"
		print "# detector of its own (stream: { prefix_accounts: { mode = \"enforce\"; }; }), acts."
		print "stream: { mode = \"monitor\"; };"
	}
}'
