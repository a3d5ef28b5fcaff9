# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# One entry point: make, make test, make demo, make bench, make install, make clean.
# BPF:  bpf/%.bpf.c -> build/bpf/%.bpf.o -> build/%.skel.h -> the binaries that embed it.
# V=1 shows the commands.

.DELETE_ON_ERROR:
# Keep the intermediate .bpf.o files between builds.
.SECONDARY:
.SUFFIXES:
SHELL := /bin/bash

V ?= 0
Q := $(if $(filter 1,$(V)),,@)
msg = $(if $(filter 1,$(V)),,@printf '  %-8s %s\n' '$(1)' '$(2)';)

BUILD   ?= build
# Plain `make` builds the binaries, whatever rule comes first below.
.DEFAULT_GOAL := all
CC      ?= gcc
CLANG   ?= clang
BPFTOOL ?= bpftool
PREFIX  ?= /usr/local
DESTDIR ?=

ARCH      := $(shell uname -m)
BPF_ARCH  := $(subst x86_64,x86,$(subst aarch64,arm64,$(ARCH)))
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)

# pkg-config runs after the deps check (below) has had its say: recursive variables, memoized.
PKGS := libbpf libxdp libevent libevent_pthreads libconfig libargon2 libsodium hiredis libevent_openssl openssl libpq
PKG_CFLAGS = $(eval PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS)))$(PKG_CFLAGS)
PKG_LIBS   = $(eval PKG_LIBS := $(shell pkg-config --libs $(PKGS)))$(PKG_LIBS)
CMOCKA_LIBS = $(eval CMOCKA_LIBS := $(shell pkg-config --libs cmocka))$(CMOCKA_LIBS)
# libmaxminddb: only `sluicectl asn import` reads .mmdb files (user/lib/asn_import.c), so only
# sluicectl and that file's unit test link it; sluiced reads the table it writes as a CSV.
MMDB_LIBS = $(eval MMDB_LIBS := $(shell pkg-config --libs libmaxminddb))$(MMDB_LIBS)
$(BUILD)/sluicectl $(BUILD)/tests/unit/test_asn_import $(BUILD)/san/tests/unit/test_asn_import: \
	LDLIBS += $(MMDB_LIBS)

# snprintf into fixed buffers truncates on purpose; -Wformat-truncation flags every such copy.
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2 -Wno-unused-parameter \
	-Wno-format-truncation
CFLAGS   ?= -O2 -g
override CFLAGS += -std=gnu11 $(WARN) -D_GNU_SOURCE -Iinclude -Iuser/lib -Iuser/gateway -I$(BUILD)
LDLIBS   = $(PKG_LIBS) -lelf -lz -lm -lpthread

SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror \
	-Iinclude -Ibpf $(if $(MULTIARCH),-I/usr/include/$(MULTIARCH))

BPF_PROGS := sluice handoff occupancy
BENCH_BPF := bare_pass
SKELS     := $(patsubst %,$(BUILD)/%.skel.h,$(BPF_PROGS))

LIB_SRCS   := $(wildcard user/lib/*.c)
LIB_OBJS   := $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRCS))
LIB_A      := $(BUILD)/libsluice.a
GW_SRCS    := $(wildcard user/gateway/*.c)
GW_A       := $(BUILD)/libgateway.a
GW_SAN_A   := $(BUILD)/san/libgateway.a
LIB_SAN_A  := $(BUILD)/san/libsluice.a
D_SRCS     := $(wildcard user/sluiced/*.c)
CTL_SRCS   := $(wildcard user/sluicectl/*.c)
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))
UNIT_SAN   := $(patsubst tests/unit/%.c,$(BUILD)/san/tests/unit/%,$(UNIT_SRCS))
HDRS       := $(wildcard include/sluice/*.h user/lib/*.h user/gateway/*.h user/sluiced/*.h)
BPF_HDRS   := $(wildcard bpf/*.h include/sluice/*.h)

BINS := $(BUILD)/sluiced $(BUILD)/sluicectl

# The commit sluiced reports in sluice_build_info (user/sluiced/metrics.c): `git describe` at
# build time, "unknown" outside a checkout; metrics.o is rebuilt whenever the index moves.
SLUICE_COMMIT := $(shell git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)
$(BUILD)/user/sluiced/metrics.o: override CFLAGS += -DSLUICE_COMMIT='"$(SLUICE_COMMIT)"'
$(BUILD)/user/sluiced/metrics.o: $(wildcard .git/index)

.PHONY: all deps test unit bpf-test net-test demo bench bench-reply install uninstall clean
all: $(BINS)

# System dependencies (scripts/deps.sh: the build, test and demo sets of Debian packages).
# A plain `make` or `make install` installs nothing and touches no service: it checks the
# build set and, if something is missing, stops naming the packages and the command that
# installs them. The goals that run suites, the demo or benchmarks install their sets (as
# root; otherwise they stop the same way); `make deps [SETS="build test"]` installs on
# request (all sets by default). deps-check is an order-only prerequisite of every build
# step: it runs once per make invocation and never forces a rebuild.
SETS ?= all
DEPS_SETS := $(sort $(if $(filter test unit bpf-test net-test,$(MAKECMDGOALS)),build test) \
	$(if $(filter demo,$(MAKECMDGOALS)),build demo) \
	$(if $(filter bench%,$(MAKECMDGOALS)),build test demo))

.PHONY: deps-check
deps-check:
	$(Q)scripts/deps.sh $(if $(DEPS_SETS),$(DEPS_SETS),--check build)

deps:
	$(Q)scripts/deps.sh $(SETS)

$(BUILD)/.dirs: | deps-check
	$(Q)mkdir -p $(BUILD)/bpf $(BUILD)/user/lib $(BUILD)/user/gateway $(BUILD)/tests/unit \
		$(BUILD)/tests/bpf $(BUILD)/san/user/lib $(BUILD)/san/user/gateway \
		$(BUILD)/san/tests/unit $(BUILD)/bench
	$(Q)touch $@

# ---- BPF ---------------------------------------------------------------------------------
$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) | $(BUILD)/.dirs
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bpf/%.bpf.o: bench/%.bpf.c $(BPF_HDRS) | $(BUILD)/.dirs
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

# ---- userspace ---------------------------------------------------------------------------
$(BUILD)/%.o: %.c $(HDRS) $(SKELS) | $(BUILD)/.dirs
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(LIB_A): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)$(AR) rcs $@ $^

# The gateway (user/gateway) is its own library: sluiced and its tests link it, sluicectl
# only where it needs the credential store.
$(GW_A): $(patsubst %.c,$(BUILD)/%.o,$(GW_SRCS))
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(GW_SAN_A): $(patsubst %.c,$(BUILD)/san/%.o,$(GW_SRCS))
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/sluiced: $(patsubst %.c,$(BUILD)/%.o,$(D_SRCS)) $(GW_A) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/sluicectl: $(patsubst %.c,$(BUILD)/%.o,$(CTL_SRCS)) $(GW_A) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# Sanitizer build of the shared library, for the unit tests.
$(BUILD)/san/%.o: %.c $(HDRS) $(SKELS) | $(BUILD)/.dirs
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) -c $< -o $@

$(LIB_SAN_A): $(patsubst %.c,$(BUILD)/san/%.o,$(LIB_SRCS))
	$(call msg,AR,$@)
	$(Q)$(AR) rcs $@ $^

# ---- tests -------------------------------------------------------------------------------
$(BUILD)/tests/unit/%: tests/unit/%.c $(GW_A) $(LIB_A) $(HDRS) | $(BUILD)/.dirs
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -Itests/lib -o $@ $< $(GW_A) $(LIB_A) $(CMOCKA_LIBS) \
		$(LDLIBS)

$(BUILD)/san/tests/unit/%: tests/unit/%.c $(GW_SAN_A) $(LIB_SAN_A) $(HDRS) | $(BUILD)/.dirs
	$(call msg,CC-SAN,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) -Itests/lib -o $@ $< $(GW_SAN_A) \
		$(LIB_SAN_A) $(CMOCKA_LIBS) $(LDLIBS)

BPF_TEST_BINS := $(patsubst tests/bpf/%.c,$(BUILD)/tests/bpf/%,$(wildcard tests/bpf/*.c))

$(BUILD)/tests/bpf/%: tests/bpf/%.c tests/lib/frames.h tests/lib/bpfenv.h $(SKELS) $(LIB_A) | $(BUILD)/.dirs
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -Itests/lib -o $@ $< $(LIB_A) $(LDLIBS)

# Drivers the shell suites run (tests/bin/*.c), linked with the libraries.
TOOL_BINS := $(patsubst tests/bin/%.c,$(BUILD)/tests/bin/%,$(wildcard tests/bin/*.c))
$(BUILD)/tests/bin/%: tests/bin/%.c $(GW_A) $(LIB_A) $(HDRS) | $(BUILD)/.dirs
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -Itests/lib -o $@ $< $(GW_A) $(LIB_A) $(LDLIBS)

TEST_BINS := $(UNIT_BINS) $(UNIT_SAN) $(BPF_TEST_BINS) $(TOOL_BINS)

# The network tests put an XDP_PASS program on the client veth (XDP_TX needs one there);
# test_demo_chart runs the demo (short), which drives the gateway with bench/monday and neighbour.
test: $(BINS) $(TEST_BINS) $(BUILD)/bpf/bare_pass.bpf.o $(BUILD)/bench/monday $(BUILD)/bench/neighbour
	$(Q)BUILD=$(BUILD) tests/run.sh

unit: $(UNIT_BINS) $(UNIT_SAN)
	$(Q)BUILD=$(BUILD) tests/run.sh unit

bpf-test: $(BPF_TEST_BINS)
	$(Q)BUILD=$(BUILD) tests/run.sh bpf

net-test: $(BINS) $(BUILD)/bpf/bare_pass.bpf.o $(BUILD)/bench/monday $(BUILD)/bench/neighbour
	$(Q)BUILD=$(BUILD) tests/run.sh net

# ---- fuzzing (not part of `make test`) -----------------------------------------------------
# tests/fuzz/fuzz_upcli.c: libFuzzer on the upstream client's answer parser, built with clang
# (libclang-rt-14-dev, in deps.sh's test set) under ASan and UBSan. FUZZ_TIME seconds (300),
# FUZZ_JOBS workers (1); new inputs go to $(BUILD)/fuzz/upcli_corpus, the seeds are read from
# tests/fuzz/upcli_seeds (which the unit suite replays: tests/unit/test_gw_upcli_seeds.c).
FUZZ_TIME ?= 300
FUZZ_JOBS ?= 1
FUZZ_FLAGS := -O1 -g -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
.PHONY: fuzz-upcli
$(BUILD)/fuzz/fuzz_upcli: tests/fuzz/fuzz_upcli.c user/gateway/gw_upcli.c user/gateway/gw_upcli.h | $(BUILD)/.dirs
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(filter-out -Wno-format-truncation,$(CFLAGS)) $(FUZZ_FLAGS) $(shell pkg-config --cflags libevent) -o $@ \
		tests/fuzz/fuzz_upcli.c user/gateway/gw_upcli.c $(shell pkg-config --libs libevent)

# The unit suite's replay of the seeds includes the harness.
$(BUILD)/tests/unit/test_gw_upcli_seeds $(BUILD)/san/tests/unit/test_gw_upcli_seeds: \
	tests/fuzz/fuzz_upcli.c

fuzz-upcli: $(BUILD)/fuzz/fuzz_upcli
	$(Q)mkdir -p $(BUILD)/fuzz/upcli_corpus $(BUILD)/fuzz/upcli_artifacts
	$(Q)$< -max_total_time=$(FUZZ_TIME) $(if $(filter-out 1,$(FUZZ_JOBS)),-jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS)) \
		-max_len=8192 -artifact_prefix=$(BUILD)/fuzz/upcli_artifacts/ \
		-dict=tests/fuzz/upcli.dict $(BUILD)/fuzz/upcli_corpus tests/fuzz/upcli_seeds

# ---- demo, bench -------------------------------------------------------------------------
demo: $(BINS) $(BUILD)/bpf/bare_pass.bpf.o $(BUILD)/bench/monday $(BUILD)/bench/neighbour
	$(Q)BUILD=$(BUILD) scripts/demo.sh

$(BUILD)/bpf/parts.bpf.o: bench/parts.h
# bench/charges.bpf.c includes the datapath whole.
$(BUILD)/bpf/charges.bpf.o: bpf/sluice.bpf.c
$(BUILD)/bench/xdp_cost: bench/xdp_cost.c bench/parts.h tests/lib/frames.h $(SKELS) $(BUILD)/bare_pass.skel.h \
		$(BUILD)/parts.skel.h $(BUILD)/restore.skel.h $(BUILD)/charges.skel.h $(LIB_A) | $(BUILD)/.dirs
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -Itests/lib -o $@ $< $(LIB_A) $(LDLIBS)

$(BUILD)/bench/h1load: bench/h1load.c | $(BUILD)/.dirs
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $<

$(BUILD)/bench/synflood: bench/synflood.c | $(BUILD)/.dirs
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $<

$(BUILD)/bench/pingpong: bench/pingpong.c bench/loopback.h | $(BUILD)/.dirs
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $<

$(BUILD)/bench/hopfloor: bench/hopfloor.c bench/loopback.h | $(BUILD)/.dirs
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $<

# Other benchmark programs: one C file each, linked with the libraries (bench/*.c that
# are not xdp_cost, h1load, synflood, pingpong or hopfloor).
BENCH_C := $(filter-out bench/xdp_cost.c bench/h1load.c bench/synflood.c bench/pingpong.c bench/hopfloor.c,$(wildcard bench/*.c))
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_C))
$(BENCH_BINS): $(BUILD)/bench/%: bench/%.c $(GW_A) $(LIB_A) $(HDRS) | $(BUILD)/.dirs
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(GW_A) $(LIB_A) $(LDLIBS)

bench: $(BUILD)/bench/xdp_cost bench-reply bench-counters bench-stream
	$(Q)$(BUILD)/bench/xdp_cost

bench-reply: $(BINS) $(BUILD)/bench/h1load $(BUILD)/bpf/bare_pass.bpf.o
	$(Q)BUILD=$(BUILD) bench/reply_rate.sh

# Packets per second on a wire (bench/wire.sh): live XDP frames pushed into a veth; sluice's
# drops, passes and replies per receiving core against bare XDP programs on the same core.
.PHONY: bench-wire
bench-wire: $(BINS) $(BUILD)/bench/wire $(BUILD)/bpf/wire_gen.bpf.o $(BUILD)/bpf/wire_bare.bpf.o
	$(Q)BUILD=$(BUILD) bench/wire.sh

# A real client's goodput while spoofed SYNs flood its port (bench/attack_goodput.sh): the
# kernel alone, sluice's stateless front and its SYN front, at several flood rates.
.PHONY: bench-attack
bench-attack: $(BINS) $(BUILD)/bench/h1load $(BUILD)/bench/synflood $(BUILD)/bpf/sink.bpf.o
	$(Q)BUILD=$(BUILD) bench/attack_goodput.sh

# The gateway's figures (bench/gateway.sh): goodput on Monday morning with admission on and
# off, and the noisy neighbour with per-tenant admission, one global budget, and none.
.PHONY: bench-gateway
bench-gateway: $(BINS) $(BUILD)/bench/monday $(BUILD)/bench/neighbour
	$(Q)BUILD=$(BUILD) bench/gateway.sh

# Upstream mode (bench/proxy.sh): a cheap route through sluice against the same nginx
# directly and through nginx as a proxy; and Monday through sluice against an unprotected
# identity service.
.PHONY: bench-proxy
bench-proxy: $(BINS) $(BUILD)/bench/monday $(BUILD)/bench/pingpong $(BUILD)/bench/hopfloor
	$(Q)BUILD=$(BUILD) bench/proxy.sh

# The counter store (bench/counters.sh): checks/s and latency in-process, by the Redis
# script, and by a naive GET + SET; and how much the naive one over-admits under concurrency.
.PHONY: bench-counters
bench-counters: $(BUILD)/bench/counters
	$(Q)BUILD=$(BUILD) bench/counters.sh

# The stream job (bench/stream.sh): events/s it absorbs in process and counting on Redis, and
# memory per million distinct keys (RSS, and Redis used_memory).
.PHONY: bench-stream
bench-stream: $(BUILD)/bench/stream
	$(Q)BUILD=$(BUILD) bench/stream.sh

# ---- install -----------------------------------------------------------------------------
# make install [PREFIX=/usr/local] [DESTDIR=/staging/root]; docs/install.md lists what goes
# where. The unit goes to $(PREFIX)/lib/systemd/system, which systemd searches for /usr and
# for /usr/local alike. The config directory is /etc/sluice whatever PREFIX is: it is the
# binaries' compiled-in default (SYSCONFDIR moves the files and the unit's --config only).
# An operator's sluice.conf and asn.csv are never overwritten; the shipped ones always land
# beside them as *.example. What ships is safe to start on a live node: the sample config
# with every class, tenant and detector in monitor mode (scripts/install_conf.sh makes it
# from examples/sluice.conf, which the tests and the demo read as it is) and an empty ASN
# table (packaging/asn.csv; examples/asn-sample.csv is documentation ranges). Installing
# runs no package manager and touches no service. The BPF objects are inside the binaries
# (skeletons).
SBINDIR        ?= $(PREFIX)/sbin
MANDIR         ?= $(PREFIX)/share/man
SYSCONFDIR     ?= /etc/sluice
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
# MANGZIP=1 installs the pages gzipped (Debian's dh_installman compresses by itself).
MANGZIP        ?= 0
INSTALL        ?= install

MAN8 := sluiced.8 sluicectl.8
MAN5 := sluice.conf.5

# sluice.conf(5) is docs/configuration.md in roff, made here so the installed page never lags
# the reference; man/sluice.conf.5 is the committed copy (`make man`), used without Python.
$(BUILD)/man/sluice.conf.5: docs/configuration.md scripts/man_conf.py man/sluice.conf.5
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)if command -v python3 >/dev/null; then \
		python3 scripts/man_conf.py docs/configuration.md >$@.tmp && mv $@.tmp $@; \
	else cp man/sluice.conf.5 $@; fi

install: $(BINS) $(BUILD)/man/sluice.conf.5
	$(call msg,INSTALL,$(if $(DESTDIR),$(DESTDIR) )$(PREFIX) $(SYSCONFDIR))
	$(Q)$(INSTALL) -d -m 0755 $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSCONFDIR)
	$(Q)$(INSTALL) -m 0755 $(BINS) $(DESTDIR)$(SBINDIR)/
	$(Q)$(INSTALL) -m 0644 $(addprefix man/,$(MAN8)) $(DESTDIR)$(MANDIR)/man8/
	$(Q)$(INSTALL) -m 0644 $(BUILD)/man/sluice.conf.5 $(DESTDIR)$(MANDIR)/man5/
	$(Q)if [ "$(MANGZIP)" = 1 ]; then \
		gzip -9nf $(addprefix $(DESTDIR)$(MANDIR)/man8/,$(MAN8)) \
			$(addprefix $(DESTDIR)$(MANDIR)/man5/,$(MAN5)); fi
	$(Q)sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
		packaging/sluiced.service >$(BUILD)/sluiced.service
	$(Q)$(INSTALL) -m 0644 $(BUILD)/sluiced.service $(DESTDIR)$(SYSTEMDUNITDIR)/sluiced.service
	$(Q)scripts/install_conf.sh $(SYSCONFDIR) <examples/sluice.conf >$(BUILD)/sluice.conf.example
	$(Q)$(INSTALL) -m 0644 $(BUILD)/sluice.conf.example $(DESTDIR)$(SYSCONFDIR)/sluice.conf.example
	$(Q)$(INSTALL) -m 0644 packaging/asn.csv $(DESTDIR)$(SYSCONFDIR)/asn.csv.example
	$(Q)for f in sluice.conf asn.csv; do \
		if [ -e $(DESTDIR)$(SYSCONFDIR)/$$f ]; then \
			echo "  kept     $(DESTDIR)$(SYSCONFDIR)/$$f (the shipped one is $$f.example)"; \
		else \
			$(INSTALL) -m 0644 $(DESTDIR)$(SYSCONFDIR)/$$f.example $(DESTDIR)$(SYSCONFDIR)/$$f; \
		fi; \
	done

# Removes what install put there. sluice.conf and asn.csv go only while they are still the
# shipped samples; an edited one stays, and so does the directory holding it.
uninstall:
	$(call msg,UNINST,$(if $(DESTDIR),$(DESTDIR) )$(PREFIX) $(SYSCONFDIR))
	$(Q)rm -f $(DESTDIR)$(SBINDIR)/sluiced $(DESTDIR)$(SBINDIR)/sluicectl \
		$(DESTDIR)$(SYSTEMDUNITDIR)/sluiced.service \
		$(foreach p,$(MAN8),$(DESTDIR)$(MANDIR)/man8/$(p) $(DESTDIR)$(MANDIR)/man8/$(p).gz) \
		$(foreach p,$(MAN5),$(DESTDIR)$(MANDIR)/man5/$(p) $(DESTDIR)$(MANDIR)/man5/$(p).gz)
	$(Q)for f in sluice.conf asn.csv; do \
		d=$(DESTDIR)$(SYSCONFDIR); \
		if [ -e $$d/$$f ] && ! cmp -s $$d/$$f $$d/$$f.example; then \
			echo "  kept     $$d/$$f (changed since it was installed)"; \
		else \
			rm -f $$d/$$f; \
		fi; \
		rm -f $$d/$$f.example; \
	done
	$(Q)rmdir $(DESTDIR)$(SYSCONFDIR) 2>/dev/null || true

# Refreshes the committed sluice.conf(5) after an edit of docs/configuration.md.
.PHONY: man
man:
	$(call msg,GEN,man/sluice.conf.5)
	$(Q)python3 scripts/man_conf.py docs/configuration.md >man/sluice.conf.5.tmp
	$(Q)mv man/sluice.conf.5.tmp man/sluice.conf.5

clean:
	rm -rf $(BUILD)
