# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# TAP helpers for shell suites: ok/not ok lines with the actual and expected values.

TAP_N=0
TAP_FAIL=0

tap_ok() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $*"; }
tap_not_ok() { TAP_N=$((TAP_N + 1)); TAP_FAIL=$((TAP_FAIL + 1)); echo "not ok $TAP_N - $*"; }
tap_skip() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $1 # SKIP $2"; }
tap_diag() { sed 's/^/# /' <<<"$*"; }
tap_done() { echo "1..$TAP_N"; [ "$TAP_FAIL" -eq 0 ]; }

# expect_eq NAME ACTUAL EXPECTED
expect_eq() {
	if [ "$2" == "$3" ]; then tap_ok "$1"; else
		tap_not_ok "$1"; tap_diag "  actual:   $2"; tap_diag "  expected: $3"; fi
}

# expect_ge NAME ACTUAL MIN / expect_le NAME ACTUAL MAX
expect_ge() {
	if [ "$2" -ge "$3" ] 2>/dev/null; then tap_ok "$1"; else
		tap_not_ok "$1"; tap_diag "  actual: $2, expected at least $3"; fi
}
expect_le() {
	if [ "$2" -le "$3" ] 2>/dev/null; then tap_ok "$1"; else
		tap_not_ok "$1"; tap_diag "  actual: $2, expected at most $3"; fi
}

# expect_match NAME TEXT REGEX
expect_match() {
	if grep -Eq -- "$3" <<<"$2"; then tap_ok "$1"; else
		tap_not_ok "$1"; tap_diag "  no match for /$3/ in:"; tap_diag "$2"; fi
}

# jget JSON PATH: a field of a JSON document, path as a.b.c (numbers index arrays).
jget() {
	/usr/bin/python3 -c '
import json, sys
v = json.loads(sys.argv[1])
for k in sys.argv[2].split("."):
    # A missing key or index is empty, as a key that is absent: "tenants.0" of a daemon
    # that has no tenant yet (a poll before it is ready) is "", not a traceback.
    v = ((v[int(k)] if -len(v) <= int(k) < len(v) else None) if isinstance(v, list) else
         v.get(k) if isinstance(v, dict) else None)
    if v is None:
        break
print("" if v is None else (json.dumps(v) if isinstance(v, (dict, list)) else
      (str(v).lower() if isinstance(v, bool) else v)))' "$1" "$2"
}

# A free TCP port on loopback (the kernel's pick, released again for the caller to bind).
free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# free_ports VAR...: a free loopback TCP port in each VAR, no two the same (all held while
# they are picked, then released for the caller to bind).
free_ports() {
	local ports i=0 v
	read -r -a ports <<<"$(/usr/bin/python3 -c '
import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))' "$#")"
	for v in "$@"; do
		printf -v "$v" '%s' "${ports[$i]}"
		i=$((i + 1))
	done
}
