#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The docs against the code (no network, no root; it lives with the shell suites):
#   1. every key the config parser accepts is in docs/configuration.md
#      (tests/lib/config_keys_check.py reads the parser's key tables);
#   2. the checker notices a key taken out of the reference;
#   3. every sluice_* metric a doc names is one the source exports;
#   4. every `sluicectl COMMAND` the docs and the README name is in `sluicectl --help`
#      (skipped when build/sluicectl is not built).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/tap.sh"
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# 1
if out=$(python3 tests/lib/config_keys_check.py user/lib/config.c docs/configuration.md 2>&1); then
	tap_ok "every config key is documented"
else
	tap_not_ok "every config key is documented"
	tap_diag "$out"
fi

# 2: take `mss_v6` out of a copy of the reference; the checker must name it.
sed 's/`mss_v6`//g; s/`mss_v4`, //g' docs/configuration.md >"$TMP/configuration.md"
out=$(python3 tests/lib/config_keys_check.py user/lib/config.c "$TMP/configuration.md" 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && grep -q '^edge: mss_v6$' <<<"$out"; then
	tap_ok "the checker names a key missing from the reference"
else
	tap_not_ok "the checker names a key missing from the reference"
	tap_diag "exit status $rc, output:"
	tap_diag "$out"
fi

# 3: names in the docs; a histogram's _bucket/_sum/_count counts when its base is exported.
grep -rhoE '\bsluice_[a-z0-9_]+' user/ | sort -u >"$TMP/source"
missing=""
for name in $(grep -hoE '\bsluice_[a-z0-9_]+' docs/*.md README.md | sort -u); do
	base=$(sed -E 's/_(bucket|sum|count)$//' <<<"$name")
	grep -qxF "$name" "$TMP/source" || grep -qxF "$base" "$TMP/source" ||
		missing="$missing $name"
done
if [ -z "$missing" ]; then
	tap_ok "every metric the docs name exists in the source"
else
	tap_not_ok "every metric the docs name exists in the source"
	tap_diag "not in user/:$missing"
fi

# 4
if [ -x "$BUILD/sluicectl" ]; then
	help=$("$BUILD/sluicectl" --help 2>&1)
	missing=""
	for cmd in $(grep -ohE 'sluicectl [a-z]+' docs/*.md README.md | awk '{print $2}' | sort -u); do
		grep -qE "^  $cmd( |$)" <<<"$help" || missing="$missing $cmd"
	done
	if [ -z "$missing" ]; then
		tap_ok "every sluicectl command the docs name is in --help"
	else
		tap_not_ok "every sluicectl command the docs name is in --help"
		tap_diag "not in sluicectl --help:$missing"
	fi
else
	tap_skip "every sluicectl command the docs name is in --help" \
		"$BUILD/sluicectl is not built"
fi

tap_done
