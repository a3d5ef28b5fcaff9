#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The Debian packages sluice builds, tests and demos with, in three sets:
#   build  the toolchain and the libraries the binaries link
#   test   what `make test` runs beyond the build (cmocka, scapy, redis-server, man, ...)
#   demo   what `make demo` and the benchmarks run (nginx, gnuplot, ...)
#   all    the three
#
#   scripts/deps.sh [SET...]          install what is missing (root), silent when nothing is
#   scripts/deps.sh --check [SET...]  only report; exit 1, naming the packages, if any is missing
#
# No SET means all. Plain `make` and `make install` never run the installing form: they run
# `--check build`, which looks for the tools and the pkg-config modules themselves (a libbpf
# built from source counts) and names the packages to install. `make test`, `make demo`,
# `make bench*`, `make deps` and .ci/run install. This file is the one place that names our
# system dependencies; docs/operations.md ("Debian packages") says what each set is for.
#
# Services: Debian starts a daemon when its package is installed (the postinst runs
# deb-systemd-invoke / invoke-rc.d start). The tests and the demo start their own redis-server
# and nginx on private sockets and never use the system's. So when this script has just
# installed redis-server, nginx-light or postgresql and that started a service which was not running
# before, it stops that service again and says so. A service that was running before it ran,
# or whose package was already there, is never touched.
set -euo pipefail

# libclang-rt-14-dev (test): the runtime of clang -fsanitize=fuzzer, for `make fuzz-upcli`.
declare -A SET=(
	[build]="make gcc clang bpftool pkg-config libbpf-dev libxdp-dev libelf-dev zlib1g-dev
		libevent-dev libconfig-dev libhiredis-dev libargon2-dev libsodium-dev libmaxminddb-dev libpq-dev
		libssl-dev"
	[test]="libcmocka-dev iproute2 python3 python3-scapy python3-prometheus-client curl procps
		util-linux openssl tcpdump ethtool groff-base man-db redis-server redis-tools tmux postgresql
		nginx-light stunnel4 libclang-rt-14-dev"
	[demo]="iproute2 python3 python3-scapy python3-prometheus-client curl procps util-linux
		openssl gnuplot-nox nginx-light redis-server redis-tools xdp-tools wrk"
)
# The services the packages above start on install: package -> unit.
declare -A SERVICE_OF=([redis-server]=redis-server [nginx-light]=nginx [postgresql]=postgresql)

check=0
sets=()
for a in "$@"; do
	case "$a" in
	--check) check=1 ;;
	build | test | demo) sets+=("$a") ;;
	all) sets+=(build test demo) ;;
	-h | --help) sed -n '3,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "deps.sh: unknown set '$a' (build, test, demo or all)" >&2; exit 2 ;;
	esac
done
[ ${#sets[@]} -eq 0 ] && sets=(build test demo)

# The packages of the chosen sets, each once, in order.
pkgs=()
declare -A seen=()
for s in "${sets[@]}"; do
	for p in ${SET[$s]}; do
		[ -n "${seen[$p]-}" ] || { pkgs+=("$p"); seen[$p]=1; }
	done
done

# `--check build` looks for what the build uses rather than for packages: probe;package.
# A tool is a command name, a library its pkg-config module.
build_probes=(
	"cmd:make;make" "cmd:${CC:-gcc};gcc" "cmd:${CLANG:-clang};clang"
	"cmd:${BPFTOOL:-bpftool};bpftool" "cmd:pkg-config;pkg-config"
	"pc:libbpf;libbpf-dev" "pc:libxdp;libxdp-dev" "pc:libelf;libelf-dev" "pc:zlib;zlib1g-dev"
	"pc:libevent;libevent-dev" "pc:libevent_pthreads;libevent-dev"
	"pc:libevent_openssl;libevent-dev" "pc:openssl;libssl-dev"
	"pc:libconfig;libconfig-dev" "pc:hiredis;libhiredis-dev" "pc:libargon2;libargon2-dev"
	"pc:libsodium;libsodium-dev" "pc:libmaxminddb;libmaxminddb-dev"
	"pc:libpq;libpq-dev"
)

missing=()
add_missing() { [[ " ${missing[*]-} " == *" $1 "* ]] || missing+=("$1"); }

if [ "$check" = 1 ] && [ "${sets[*]}" = build ]; then
	have_pc=0
	command -v pkg-config >/dev/null 2>&1 && have_pc=1
	for pr in "${build_probes[@]}"; do
		what=${pr%%;*} pkg=${pr#*;}
		case "$what" in
		cmd:*) command -v "${what#cmd:}" >/dev/null 2>&1 || add_missing "$pkg" ;;
		pc:*) [ "$have_pc" = 1 ] && pkg-config --exists "${what#pc:}" 2>/dev/null ||
			add_missing "$pkg" ;;
		esac
	done
	[ ${#missing[@]} -eq 0 ] && exit 0
	echo "sluice: cannot build: missing ${missing[*]}" >&2
	echo "sluice: install them with: sudo apt-get install ${missing[*]}" >&2
	echo "sluice:   (or sudo scripts/deps.sh build; make never installs anything itself)" >&2
	exit 1
fi

# One dpkg-query for all; it says nothing of packages it has never heard of, so compare names.
installed=" $(dpkg-query -W -f='${Package}:${db:Status-Status} ' "${pkgs[@]}" 2>/dev/null || true)"
for p in "${pkgs[@]}"; do
	[[ "$installed" == *" $p:installed "* ]] || missing+=("$p")
done

# promtool (Prometheus's own exposition parser and linter, for the /metrics tests) comes in
# Debian's prometheus package, which would also install and start a Prometheus server. Take
# only the tool: download the package and extract promtool to $PROMTOOL_DIR.
PROMTOOL_DIR=/usr/local/lib/sluice
promtool_fetch() {
	local d
	[[ " ${sets[*]} " == *" test "* ]] || return 0
	command -v promtool >/dev/null 2>&1 && return 0
	[ -x "$PROMTOOL_DIR/promtool" ] && return 0
	[ "$check" = 1 ] && { echo "missing: promtool ($PROMTOOL_DIR/promtool)"; return 1; }
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
	promtool_fetch
	exit
fi
if [ "$check" = 1 ]; then
	echo "missing: ${missing[*]}"
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing packages (${sets[*]}): ${missing[*]}" >&2
	echo "deps.sh: run as root (or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi

# service UNIT status|stop, through service(8), which asks systemd when it runs and the
# init script otherwise; without either there is no service to speak of.
svc() {
	if command -v service >/dev/null 2>&1; then
		service "$1" "$2" >/dev/null 2>&1
	elif [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
		case "$2" in
		status) systemctl is-active --quiet "$1" ;;
		*) systemctl "$2" "$1" >/dev/null 2>&1 ;;
		esac
	else
		return 3
	fi
}
# The services this install may start: those of packages it is about to install, unless
# already running (then they are someone's, and stay as they are).
may_stop=()
for p in "${missing[@]}"; do
	u=${SERVICE_OF[$p]-}
	[ -n "$u" ] || continue
	if svc "$u" status; then
		echo "deps.sh: $u is running already; it is left alone" >&2
	else
		may_stop+=("$u")
	fi
done

echo "deps.sh: installing (${sets[*]}) ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
for u in "${may_stop[@]}"; do
	svc "$u" status || continue
	if svc "$u" stop; then
		echo "deps.sh: stopped $u, which apt started when it installed it (it was not" \
			"running before; sluice's tests start their own). It is still enabled at" \
			"boot: systemctl disable $u keeps it off." >&2
	else
		echo "deps.sh: apt started $u when it installed it, and it could not be stopped" >&2
	fi
done
promtool_fetch
