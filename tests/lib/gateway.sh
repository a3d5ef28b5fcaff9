# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Starting a gateway-only sluiced for a suite (needs tap.sh and $BUILD).

# gw_start CONF LOG: sluiced in the foreground on CONF, logging to LOG; SLUICED_PID is set.
# Returns once the gateway listens; bails out with the log if it dies or never does.
gw_start() {
	"$BUILD/sluiced" -c "$1" -f >"$2" 2>&1 &
	SLUICED_PID=$!
	for _ in $(seq 1 100); do
		grep -q "gateway listening" "$2" && return 0
		kill -0 "$SLUICED_PID" 2>/dev/null || break
		sleep 0.05
	done
	grep -q "gateway listening" "$2" && return 0
	sed 's/^/# /' "$2"
	echo "Bail out! sluiced did not start the gateway"
	exit 1
}

# gw_nodes_start NODE...: a gateway node per name, each on $NT_DIR/NODE.conf logging to
# $NT_DIR/NODE.log, its pid appended to PIDS; returns once every one listens and has its
# Redis connected, and bails out with the log of one that does not ("Bail out! NODE did
# not start").
gw_nodes_start() {
	local n
	for n in "$@"; do
		"$BUILD/sluiced" -c "$NT_DIR/$n.conf" -f >"$NT_DIR/$n.log" 2>&1 &
		PIDS+=($!)
	done
	for n in "$@"; do
		for _ in $(seq 1 100); do
			grep -q "gateway listening" "$NT_DIR/$n.log" &&
				grep -q "redis .*connected" "$NT_DIR/$n.log" && break
			sleep 0.05
		done
		grep -q "gateway listening" "$NT_DIR/$n.log" || {
			tap_diag "$(cat "$NT_DIR/$n.log")"; echo "Bail out! $n did not start"; exit 1; }
	done
}
