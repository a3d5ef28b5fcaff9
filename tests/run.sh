#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Runs the test suites and ends with one line: "N passed, N failed, N skipped".
#   unit  cmocka unit tests                    san   the same under ASan + UBSan
#   bpf   BPF_PROG_TEST_RUN fixtures           net   veth/netns end-to-end scenarios
# Every suite speaks TAP; a suite that cannot run here prints "1..0 # SKIP reason" and is
# counted as one skip; a suite that dies without saying why counts as one failure. The net
# suites run NET_JOBS (2) at a time, but for those that measure against the clock (ALONE);
# NET_JOBS=1 runs them one by one.
# Usage: tests/run.sh [unit|san|bpf|net ...]
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD

suites=("$@")
[ ${#suites[@]} -eq 0 ] && suites=(unit san bpf net)
PASS=0 FAIL=0 SKIP=0

# tally NAME RC SECS OUTFILE: echo one TAP producer's output, add up its results.
tally() {
	local name=$1 rc=$2 secs=$3 out p f s
	out=$(cat "$4")
	echo "== $name"
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
	[ "$secs" -ge 20 ] && echo "   ($name took $secs s)"
	return 0
}

TMPD=$(mktemp -d /tmp/sluice-run.XXXXXX)
trap 'rm -rf "$TMPD"' EXIT

# run_tap NAME CMD...: run one TAP producer now, then tally it.
run_tap() {
	local name=$1 t0 rc
	shift
	t0=$SECONDS
	"$@" >"$TMPD/out" 2>&1
	rc=$?
	tally "$name" "$rc" $((SECONDS - t0)) "$TMPD/out"
}

# The net suites, NET_JOBS at a time (default 2): each makes its own namespaces, veths, pins,
# ports and files, so two do not meet. The ones that measure rates, latencies or timing
# against the machine's speed run alone (ALONE). Output is printed in the suites' order.
NET_JOBS=${NET_JOBS:-2}
ALONE=" test_spoof test_redis_deploy test_demo_chart test_lease_bound test_leases test_store_faults test_store test_loop_stalls test_login_answers test_office test_health test_upstream test_oidc_upstream test_redis_cluster test_redis_memory "
run_net() {
	local t n i=0 running=0 names=()
	for t in tests/net/test_*.sh; do
		n=$(basename "$t" .sh)
		names+=("$n")
		if [[ "$ALONE" == *" $n "* ]] || [ "$NET_JOBS" -le 1 ]; then
			wait
			running=0
			net_one "$t" "$n" "$i"
		else
			if [ "$running" -ge "$NET_JOBS" ]; then
				wait -n
				running=$((running - 1))
			fi
			net_one "$t" "$n" "$i" &
			running=$((running + 1))
		fi
		i=$((i + 1))
	done
	wait
	for i in "${!names[@]}"; do
		tally "net ${names[$i]}" "$(cat "$TMPD/net.$i.rc")" "$(cat "$TMPD/net.$i.secs")" \
			"$TMPD/net.$i.out"
	done
}
net_one() { # FILE NAME INDEX
	local t0=$SECONDS rc
	bash "$1" >"$TMPD/net.$3.out" 2>&1
	rc=$?
	echo "$rc" >"$TMPD/net.$3.rc"
	echo $((SECONDS - t0)) >"$TMPD/net.$3.secs"
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
		run_net ;;
	*)
		echo "unknown suite: $suite" >&2
		FAIL=$((FAIL + 1)) ;;
	esac
done

echo "(the suites took $SECONDS s in all; CI has 20 minutes for the build and them)"
echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" -eq 0 ]
