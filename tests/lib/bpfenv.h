/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Shared by the BPF_PROG_TEST_RUN suites: TAP output, loading the real datapath object
 * unpinned, programming it through the library sluiced uses, running frames, and checking
 * that a frame moved exactly one counter.
 */
#ifndef SLUICE_TEST_BPFENV_H
#define SLUICE_TEST_BPFENV_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "addr.h"
#include "asn.h"
#include "config.h"
#include "frames.h"
#include "log.h"
#include "maps.h"
#include "reasons.h"
#include "sluice.skel.h"
#include "sluice/cookie.h"
#include "sluice/gcra.h"
#include "sluice/hash.h"

static int n_test, n_fail;

__attribute__((format(printf, 2, 3)))
static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", ok ? "" : "not ", ++n_test);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		n_fail++;
	fflush(stdout);
}

#define diag(...) (printf("# " __VA_ARGS__), printf("\n"))

/* ---- environment -------------------------------------------------------------------- */

struct env {
	struct sluice_bpf *skel;
	struct sl_maps maps;
	struct sl_config cfg;
	const char *asn_csv;
	int prog_fd;
};

/* @conf is the whole config text. */
static int env_config(struct env *e, const char *conf)
{
	char path[] = "/tmp/sluice-fixture-XXXXXX", err[2048];
	struct sl_asn_table t;
	FILE *f;
	int fd, ret;

	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	fputs(conf, f);
	fclose(f);
	ret = sl_config_load(path, NULL, &e->cfg, err, sizeof(err));
	unlink(path);
	if (ret) {
		diag("config: %s", err);
		return -EBADMSG;
	}
	if (!e->skel)
		return 0;
	ret = sl_maps_write_config(&e->maps, &e->cfg, 1);
	if (ret)
		return ret;
	ret = sl_asn_parse("fixture.csv", e->asn_csv, strlen(e->asn_csv), &e->cfg, &t, err,
			   sizeof(err));
	if (ret) {
		diag("asn: %s", err);
		return -EBADMSG;
	}
	ret = sl_maps_swap_asn(&e->maps, &t, (uint32_t)e->cfg.unknown_class);
	sl_asn_free(&t);
	if (!ret)
		ret = sl_maps_write_tenants(&e->maps, &e->cfg);
	/* A new tenant starts lapsed, on its static rate, until the lease controller grants one;
	 * sluiced without Redis grants budget / nodes at once (lease.c): so does the fixture. */
	for (int i = 0; !ret && i < e->cfg.n_tenants; i++) {
		const struct sl_tenant_cfg *tc = &e->cfg.tenants[i];
		struct sl_lease_info why = { .share = 1.0 / e->cfg.cluster.nodes, .nodes = 1 };

		if (!tc->edge_budget)
			continue;
		ret = sl_maps_grant_share(&e->maps, &e->cfg, (uint32_t)i, why.share, sl_now_ns(),
					  &why);
	}
	if (!ret)
		ret = sl_maps_write_routes(&e->maps, &e->cfg);
	if (!ret && sl_maps_cookie_keys(&e->maps, 0, 3600) < 0)
		ret = -EIO;
	return ret;
}

/*
 * The addresses the fixture's "node" serves, as sluiced would mirror them from a kernel's local
 * table: its own addresses and loopback. Frames to anything else are not the edge's to answer.
 */
static const char *const env_local_default[] = { "10.0.0.2/32", "10.0.0.3/32", "10.0.0.4/32",
	"127.0.0.0/8", "2001:db8:ffff::2/128", "2001:db8:ffff::3/128", "::1/128", NULL };

static __attribute__((unused)) int env_local(struct env *e, const char *const *prefixes)
{
	struct sl_local_prefix v[32];
	size_t n = 0;

	for (; prefixes && *prefixes && n < 32; prefixes++, n++) {
		memset(&v[n], 0, sizeof(v[n]));
		if (sl_prefix_parse(*prefixes, &v[n].p, 1, NULL, 0))
			return -EINVAL;
	}
	return sl_maps_write_local(&e->maps, v, n);
}

/* Load the object sized by @conf's state_entries and program it with @conf and @asn_csv. */
static int env_open(struct env *e, const char *conf, const char *asn_csv)
{
	struct bpf_map *m;
	uint32_t sets, state_entries;
	int ret;

	memset(e, 0, sizeof(*e));
	e->asn_csv = asn_csv;
	ret = env_config(e, conf);
	if (ret)
		return ret;
	state_entries = e->cfg.state_entries;
	sets = sl_bucket_sets(state_entries);
	e->skel = sluice_bpf__open();
	if (!e->skel)
		return -errno;
	/* Fixtures must never touch a real installation's pins. */
	bpf_object__for_each_map(m, e->skel->obj)
		bpf_map__set_pin_path(m, NULL);
	bpf_map__set_max_entries(e->skel->maps.sl_buckets, sets);
	bpf_map__set_max_entries(e->skel->maps.sl_pending, sl_state_slots(state_entries));
	e->skel->rodata->bucket_mask = sets - 1;
	e->skel->rodata->pend_mask = sl_state_slots(state_entries) - 1;
	ret = sluice_bpf__load(e->skel);
	if (ret)
		return ret;
	ret = sl_maps_from_object(&e->maps, e->skel->obj);
	if (ret)
		return ret;
	ret = env_local(e, env_local_default);
	if (ret)
		return ret;
	e->prog_fd = bpf_program__fd(e->skel->progs.sluice_xdp);
	return env_config(e, conf);
}

static void env_close(struct env *e)
{
	if (e->skel)
		sluice_bpf__destroy(e->skel);
	e->skel = NULL;
}

/*
 * Make @f the first request of a connection the datapath answered with its cookie SYN-ACK:
 * ACK|PSH carrying @f->data (a request if none), seq = the client's ISN + 1, ack = our
 * cookie + 1. The ISN is f->seq (0: 1000); with timestamps (tcp_opts 3) TSecr echoes our
 * TSval, as the client would. Returns the cookie (our ISS).
 */
/* What sl_shed_sets remembers of a shed cookie connection: SL_CONN_SHED, SL_CONN_DROPPED,
 * or 0, computed as the datapath does (the settings' hash seed, sl_shed_hash). */
static __attribute__((unused)) uint32_t env_shed_tag(struct env *e, const struct sl_conn_key *k)
{
	struct sl_settings set;
	struct sl_shed_set ss;
	uint32_t zero = 0, idx, tag;
	uint64_t h;
	int i;

	if (bpf_map_lookup_elem(e->maps.settings, &zero, &set))
		return 0;
	h = sl_shed_hash(k, set.hash_seed);
	idx = (uint32_t)h & (SL_SHED_SETS - 1);
	tag = (uint32_t)(h >> 32);
	if (bpf_map_lookup_elem(e->maps.shed_sets, &idx, &ss))
		return 0;
	for (i = 0; i < SL_SHED_WAYS; i++)
		if ((ss.way[i].tag & ~SL_SHED_TAG_DROPPED) == tag &&
		    ss.way[i].until > sl_now_ns() / 1000000000ull)
			return ss.way[i].tag & SL_SHED_TAG_DROPPED ? SL_CONN_DROPPED : SL_CONN_SHED;
	return 0;
}

/* How long sl_conn_sets remembers the admitted cookie connection @k still: its way's expiry
 * less now, in whole seconds of the datapath's clock, or -1 when no live way holds its tag. */
static __attribute__((unused)) int64_t env_conn_left(struct env *e, const struct sl_conn_key *k)
{
	struct sl_settings set;
	struct sl_shed_set ss;
	uint32_t zero = 0, idx, tag;
	uint64_t h, now_s = sl_now_ns() / 1000000000ull;
	int i;

	if (bpf_map_lookup_elem(e->maps.settings, &zero, &set))
		return -1;
	h = sl_shed_hash(k, set.hash_seed);
	idx = (uint32_t)h & (SL_CONN_SETS - 1);
	tag = (uint32_t)(h >> 32);
	if (bpf_map_lookup_elem(e->maps.conns, &idx, &ss))
		return -1;
	for (i = 0; i < SL_SHED_WAYS; i++)
		if (ss.way[i].tag == tag && ss.way[i].until > now_s)
			return (int64_t)ss.way[i].until - (int64_t)now_s;
	return -1;
}

static __attribute__((unused)) uint32_t env_make_request(struct env *e, struct fspec *f)
{
	struct sl_cookie_keys keys;
	struct sl_cookie_opts o = { 0 };
	struct sl_conn_id id = { 0 };
	uint32_t iss, tsval = 0, zero = 0;

	id.family = f->family == 6 ? SL_FAM_V6 : SL_FAM_V4;
	id.sport = f->sport ? f->sport : 40000;
	id.dport = f->dport;
	id.isn = f->seq ? f->seq : 1000;
	inet_pton(f->family == 6 ? AF_INET6 : AF_INET, f->src, id.saddr);
	inet_pton(f->family == 6 ? AF_INET6 : AF_INET, f->dst, id.daddr);
	if (f->tcp_opts == 3) {
		o.ts = 1;
		o.mss_idx = 6; /* 1460 */
	}
	bpf_map_lookup_elem(e->maps.cookie_keys, &zero, &keys);
	iss = sl_cookie_make(&id, sl_now_ns(), &o, &keys, &tsval);
	f->sport = id.sport;
	f->seq = id.isn + 1;
	f->ack = iss + 1;
	f->flags = F_ACK | 0x08;
	if (f->tcp_opts == 3)
		f->tsecr = tsval;
	if (!f->data && !f->payload)
		f->data = "GET / HTTP/1.1\r\nHost: fixture.example\r\n\r\n";
	return iss;
}

/* Run one frame; returns the XDP action or -1. The frame the program left behind goes to
 * @out (at least 1024 bytes) and its length to *@out_len, when given. */
static int run_out(struct env *e, const uint8_t *frame, size_t len, uint8_t *out,
		   size_t *out_len)
{
	uint8_t buf[1024];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (__u32)len,
		    .data_out = out ? out : buf, .data_size_out = sizeof(buf), .repeat = 1);

	if (bpf_prog_test_run_opts(e->prog_fd, &o)) {
		diag("test_run: %s", strerror(errno));
		return -1;
	}
	if (out_len)
		*out_len = o.data_size_out;
	return (int)o.retval;
}

static int run(struct env *e, const uint8_t *frame, size_t len)
{
	return run_out(e, frame, len, NULL, NULL);
}

static int class_row(const struct env *e, const char *name)
{
	if (!strcmp(name, "none"))
		return SL_CLASS_NONE;
	return sl_config_class(&e->cfg, name);
}

static const char *act_name(int a)
{
	switch (a) {
	case XDP_PASS:
		return "XDP_PASS";
	case XDP_DROP:
		return "XDP_DROP";
	case XDP_TX:
		return "XDP_TX";
	default:
		return "?";
	}
}

/* Run @frame and check its verdict and that exactly the counter (@cls, @reason) moved. */
static __attribute__((unused)) bool expect(struct env *e, const char *what, const uint8_t *frame, size_t len,
		   int want_act, const char *cls, unsigned int reason)
{
	struct sl_counters before[SL_STATS_ROWS], after[SL_STATS_ROWS];
	int row = class_row(e, cls), act, r, k;
	long moved = 0, want_moved = 0;
	bool ok;

	sl_maps_read_stats(&e->maps, before);
	act = run(e, frame, len);
	sl_maps_read_stats(&e->maps, after);
	for (r = 0; r < SL_STATS_ROWS; r++)
		for (k = 0; k < SL_REASON_SLOTS; k++) {
			long d = (long)(after[r].pkts[k] - before[r].pkts[k]);

			moved += d;
			if (r == row && (unsigned)k == reason)
				want_moved = d;
		}
	ok = act == want_act && want_moved == 1 && moved == 1;
	tap(ok, "%s -> %s, %s/%s", what, act_name(want_act), cls, sl_reason_name(reason));
	if (!ok) {
		diag("  got %s; counter %s/%s moved by %ld; %ld counters moved in all",
		     act_name(act), cls, sl_reason_name(reason), want_moved, moved);
		for (r = 0; r < SL_STATS_ROWS; r++)
			for (k = 0; k < SL_REASON_SLOTS; k++)
				if (after[r].pkts[k] != before[r].pkts[k])
					diag("  moved: row %d %s", r, sl_reason_name((unsigned)k));
	}
	return ok;
}


#endif
