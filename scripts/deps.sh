#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Installs the Debian packages sluice builds, tests and demos with. Idempotent and silent when
# everything is present; `--check` only reports (exit 1 if something is missing).
# The list is the one place that names our system dependencies; docs/operations.md explains
# what each is for.
set -euo pipefail

PKGS=(
	# build
	make gcc clang llvm bpftool pkg-config libbpf-dev libxdp-dev libelf-dev zlib1g-dev
	libevent-dev libconfig-dev libhiredis-dev libargon2-dev libsodium-dev
	# tests
	libcmocka-dev iproute2 python3-scapy tcpdump curl procps util-linux ethtool
	groff-base man-db
	redis-server redis-tools python3-prometheus-client tmux
	# demo and benchmarks
	xdp-tools hping3 wrk nginx-light gnuplot-nox openssl
)

# One dpkg-query for all; it says nothing of packages it has never heard of, so compare names.
installed=" $(dpkg-query -W -f='${Package}:${db:Status-Status} ' "${PKGS[@]}" 2>/dev/null || true)"
missing=()
for p in "${PKGS[@]}"; do
	[[ "$installed" == *" $p:installed "* ]] || missing+=("$p")
done

# promtool (Prometheus's own exposition parser and linter, for the /metrics tests) comes in
# Debian's prometheus package, which would also install and start a Prometheus server. Take
# only the tool: download the package and extract promtool to $PROMTOOL_DIR.
PROMTOOL_DIR=/usr/local/lib/sluice
promtool_fetch() {
	local d
	command -v promtool >/dev/null 2>&1 && return 0
	[ -x "$PROMTOOL_DIR/promtool" ] && return 0
	[ "${1-}" = "--check" ] && { echo "missing: promtool ($PROMTOOL_DIR/promtool)"; return 1; }
	[ "$(id -u)" -eq 0 ] || return 0
	d=$(mktemp -d)
	if (cd "$d" && apt-get download -qq prometheus >/dev/null 2>&1 &&
		dpkg-deb -x prometheus_*.deb x && install -D -m 0755 x/usr/bin/promtool \
			"$PROMTOOL_DIR/promtool"); then
		echo "deps.sh: promtool from Debian's prometheus package in $PROMTOOL_DIR" >&2
	else
		echo "deps.sh: could not fetch promtool; the /metrics lint checks will skip" >&2
	fi
	rm -rf "$d"
}

if [ ${#missing[@]} -eq 0 ]; then
	promtool_fetch "${1-}"
	exit
fi
if [ "${1-}" = "--check" ]; then
	echo "missing: ${missing[*]}"
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing packages: ${missing[*]}" >&2
	echo "deps.sh: run as root (or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts these on install; our tests start their own instances on private sockets.
for svc in redis-server nginx; do
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
		systemctl stop "$svc" >/dev/null 2>&1 || true
	fi
done
promtool_fetch
