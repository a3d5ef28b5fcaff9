#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Runs the test suites and ends with one line: "N passed, N failed, N skipped".
#   unit  cmocka unit tests                    san   the same under ASan + UBSan
#   bpf   BPF_PROG_TEST_RUN fixtures           net   veth/netns end-to-end scenarios
# Every suite speaks TAP; a suite that cannot run here prints "1..0 # SKIP reason" and is
# counted as one skip; a suite that dies without saying why counts as one failure.
# Usage: tests/run.sh [unit|san|bpf|net ...]
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD

suites=("$@")
[ ${#suites[@]} -eq 0 ] && suites=(unit san bpf net)
PASS=0 FAIL=0 SKIP=0

# run_tap NAME CMD...: run one TAP producer, echo its output, add up its results.
run_tap() {
	local name=$1 out rc p f s t0
	shift
	echo "== $name"
	t0=$SECONDS
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed 's/^/   /'
	p=$(grep -cE '^ok [0-9]+' <<<"$out" | tr -d ' ')
	s=$(grep -cE '^ok [0-9]+.*# SKIP' <<<"$out" | tr -d ' ')
	f=$(grep -cE '^not ok [0-9]+' <<<"$out" | tr -d ' ')
	p=$((p - s))
	if grep -qE '^1\.\.0 # SKIP' <<<"$out"; then
		s=$((s + 1))
	fi
	if grep -q '^Bail out!' <<<"$out" || { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; }; then
		echo "   ($name exited with status $rc)"
		f=$((f + 1))
	fi
	PASS=$((PASS + p)) FAIL=$((FAIL + f)) SKIP=$((SKIP + s))
	# how long each suite takes: CI has 20 minutes for all of them
	[ $((SECONDS - t0)) -ge 20 ] && echo "   ($name took $((SECONDS - t0)) s)"
	return 0
}

for suite in "${suites[@]}"; do
	case "$suite" in
	unit)
		for t in "$BUILD"/tests/unit/test_*; do
			CMOCKA_MESSAGE_OUTPUT=TAP run_tap "unit $(basename "$t")" "$t"
		done ;;
	san)
		for t in "$BUILD"/san/tests/unit/test_*; do
			ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
			UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
			CMOCKA_MESSAGE_OUTPUT=TAP run_tap "asan+ubsan $(basename "$t")" "$t"
		done ;;
	bpf)
		for t in "$BUILD"/tests/bpf/*; do
			run_tap "bpf $(basename "$t")" "$t"
		done ;;
	net)
		for t in tests/net/test_*.sh; do
			run_tap "net $(basename "$t" .sh)" bash "$t"
		done ;;
	*)
		echo "unknown suite: $suite" >&2
		FAIL=$((FAIL + 1)) ;;
	esac
done

echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" -eq 0 ]
