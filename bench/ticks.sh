# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# CPU time from /proc, in clock ticks (getconf CLK_TCK a second), for the bench scripts that
# put a figure per CPU-second beside their rates (bench/reply_rate.sh, bench/proxy.sh).
# Sourced; bash.

# busy_ticks: every CPU's non-idle time so far (user, nice, system, irq, softirq, steal).
busy_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }

# soft_ticks: every CPU's irq and softirq time so far.
soft_ticks() { awk '$1 == "cpu" { print $7 + $8 }' /proc/stat; }

# proc_ticks PID...: the user + system time of these processes so far (0 without any).
proc_ticks() {
	local t=0 p
	for p in "$@"; do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat"))); done
	echo "$t"
}
