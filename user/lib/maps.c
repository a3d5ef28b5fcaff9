// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Userspace side of the datapath's maps: see maps.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "maps.h"
#include "sluice/cookie.h"
#include "sluice/gcra.h"
#include "sluice/hash.h"

static const char *const map_names[SL_N_MAPS] = SL_MAP_NAMES;

void sl_maps_init(struct sl_maps *m)
{
	int i;

	for (i = 0; i < SL_N_MAPS; i++)
		m->fd[i] = -1;
	m->owned = 0;
}

int sl_maps_from_object(struct sl_maps *m, const struct bpf_object *obj)
{
	int i;

	sl_maps_init(m);
	for (i = 0; i < SL_N_MAPS; i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(obj, map_names[i]);

		if (!map)
			return -ENOENT;
		m->fd[i] = bpf_map__fd(map);
	}
	return 0;
}

int sl_maps_open_pinned(struct sl_maps *m, const char *pin_path)
{
	char p[PATH_MAX];
	int i, ret;

	sl_maps_init(m);
	m->owned = 1;
	for (i = 0; i < SL_N_MAPS; i++) {
		snprintf(p, sizeof(p), "%s/%s", pin_path, map_names[i]);
		m->fd[i] = bpf_obj_get(p);
		if (m->fd[i] < 0) {
			ret = -errno;
			sl_maps_close(m);
			return ret;
		}
	}
	return 0;
}

void sl_maps_close(struct sl_maps *m)
{
	int i;

	if (m->owned)
		for (i = 0; i < SL_N_MAPS; i++)
			if (m->fd[i] >= 0)
				close(m->fd[i]);
	sl_maps_init(m);
}

void sl_maps_unpin(const char *pin_path)
{
	char p[PATH_MAX];
	int i;

	for (i = 0; i < SL_N_MAPS; i++) {
		snprintf(p, sizeof(p), "%s/%s", pin_path, map_names[i]);
		if (unlink(p) && errno != ENOENT)
			log_warn("cannot remove pin %s: %s", p, strerror(errno));
	}
	rmdir(pin_path);
}

uint64_t sl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t sl_wall_offset_ns(void)
{
	struct timespec rt;

	clock_gettime(CLOCK_REALTIME, &rt);
	return (int64_t)((uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec) -
	       (int64_t)sl_now_ns();
}

int sl_maps_read_settings(const struct sl_maps *m, struct sl_settings *s)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->settings, &zero, s))
		return -errno;
	return 0;
}

int sl_maps_read_class(const struct sl_maps *m, uint32_t id, struct sl_class_policy *p)
{
	if (bpf_map_lookup_elem(m->classes, &id, p))
		return -errno;
	return 0;
}

static void rate_of(struct sl_rate *r, double rate, double burst)
{
	r->emission_ns = sl_gcra_emission(rate);
	r->tolerance_ns = sl_gcra_tolerance(burst, r->emission_ns);
}

double sl_lease_burst(double share_burst, double budget_burst, const struct sl_config *c)
{
	double big = 0;
	int i;

	for (i = 0; i < c->n_ports; i++)
		if (c->ports[i].cost > big)
			big = c->ports[i].cost;
	for (i = 0; i < c->n_routes; i++)
		if (c->routes[i].cpu > big)
			big = c->routes[i].cpu;
	if (big > budget_burst)
		big = budget_burst;
	return share_burst > big ? share_burst : big;
}

/*
 * SYN front: how long after a SYN the kernel still accepts the ACK that completes it. A request
 * socket lives while the kernel re-sends its SYN-ACK: 1 s doubling tcp_synack_retries times
 * (63 s at the default 5), each wait capped at 120 s; a kernel SYN cookie is good for two
 * minute counters (up to 2 minutes). The longer of the two, plus a second.
 */
uint32_t sl_syn_pend_ttl(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_synack_retries", "r");
	uint32_t life = 0, wait = 1;
	int retries = 5, i;

	if (f) {
		if (fscanf(f, "%d", &retries) != 1)
			retries = 5;
		fclose(f);
	}
	if (retries < 0 || retries > 255)
		retries = 5;
	for (i = 0; i <= retries; i++) {
		life += wait;
		wait = wait * 2 > 120 ? 120 : wait * 2;
	}
	if (life < 120)
		life = 120;
	return life + 1;
}

int sl_maps_write_config(const struct sl_maps *m, const struct sl_config *c,
			 uint32_t generation)
{
	struct sl_settings set;
	struct sl_port *ports;
	__u32 i, zero = 0, count = 65536;
	__u32 *keys;
	int ret = 0;

	for (i = 0; i < SL_MAX_CLASSES; i++) {
		struct sl_class_policy p;

		memset(&p, 0, sizeof(p));
		if ((int)i < c->n_classes) {
			const struct sl_class_cfg *cc = &c->classes[i];

			p.valid = 1;
			p.mode = cc->mode;
			p.v4_prefix = cc->v4_prefix;
			p.v6_prefix = cc->v6_prefix;
			p.v4_parent = cc->v4_parent;
			p.v6_parent = cc->v6_parent;
			rate_of(&p.prefix, cc->rate, cc->burst);
			rate_of(&p.parent, cc->parent_rate, cc->parent_burst);
			snprintf(p.name, sizeof(p.name), "%s", cc->name);
		}
		if (bpf_map_update_elem(m->classes, &i, &p, BPF_ANY))
			return -errno;
	}

	/* Rewrite the whole port array in one call, so ports dropped from the config (by this
	 * daemon or a previous one whose pins we adopted) stop being protected. */
	ports = calloc(count, sizeof(*ports));
	keys = calloc(count, sizeof(*keys));
	if (!ports || !keys) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < count; i++)
		keys[i] = i;
	for (i = 0; i < (__u32)c->n_ports; i++) {
		struct sl_port *p = &ports[c->ports[i].port];

		p->protected = 1;
		p->front = c->ports[i].front;
		p->action = c->ports[i].action;
		p->proto = c->ports[i].proto;
		p->cost = c->ports[i].cost;
		p->unreadable_cost = c->ports[i].unreadable_cost;
	}
	if (bpf_map_update_batch(m->ports, keys, ports, &count, NULL)) {
		ret = -errno;
		goto out;
	}

	memset(&set, 0, sizeof(set));
	if (sl_maps_read_settings(m, &set))
		memset(&set, 0, sizeof(set));
	if (!set.hash_seed) {
		while (!set.hash_seed)
			if (getrandom(&set.hash_seed, sizeof(set.hash_seed), 0) < 0)
				set.hash_seed = (__u32)sl_now_ns() | 1;
	}
	set.unknown_class = (__u32)c->unknown_class;
	set.malformed_action = c->malformed_action;
	set.fragment_action = c->fragment_action;
	set.new_key_credit = (__u16)(c->new_key_credit * 1000.0 + 0.5);
	set.generation = generation;
	set.n_tenants = (__u32)c->n_tenants;
	set.event_sample = c->event_sample;
	set.streak_decay_s = c->streak_decay_s;
	set.pend_ttl_s = c->pend_ttl_s ? c->pend_ttl_s : sl_syn_pend_ttl();
	set.n_retry_levels = (__u32)c->n_retry;
	memset(set.retry_after, 0, sizeof(set.retry_after));
	for (i = 0; i < (__u32)c->n_retry && i < SL_MAX_RETRY_LEVELS; i++)
		set.retry_after[i] = c->retry_after[i];
	set.mss4 = c->mss4;
	set.mss6 = c->mss6;
	set.default_tenant = c->default_tenant >= 0 && c->tenants[c->default_tenant].edge_budget ?
			     (__u32)c->default_tenant : SL_MAX_TENANTS;
	if (bpf_map_update_elem(m->settings, &zero, &set, BPF_ANY))
		ret = -errno;
out:
	free(ports);
	free(keys);
	return ret;
}

static int cmp_plen(const void *a, const void *b)
{
	const struct sl_asn_entry *x = *(struct sl_asn_entry *const *)a;
	const struct sl_asn_entry *y = *(struct sl_asn_entry *const *)b;

	return (int)x->key.prefixlen - (int)y->key.prefixlen;
}

static bool is_v4_mapped(const struct sl_lpm_key *k)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return k->prefixlen >= SL_V4_MAPPED_PLEN && !memcmp(k->addr, pfx, sizeof(pfx));
}

/* Fill @dir (SL_DIR_WORDS words) from the IPv4 rows of @t: shorter rows first, so longer
 * ones overwrite them; rows longer than /24 send their /24 to the trie. */
static int build_dir(uint64_t *dir, const struct sl_asn_table *t, uint32_t unknown_class)
{
	const struct sl_asn_entry **v4;
	uint64_t fill = 0;
	size_t i, n = 0;
	int k;

	for (k = 0; k < 16; k++)
		fill |= (uint64_t)(unknown_class & 15) << (4 * k);
	for (i = 0; i < SL_DIR_WORDS; i++)
		dir[i] = fill;
	v4 = calloc(t->n + 1, sizeof(*v4));
	if (!v4)
		return -ENOMEM;
	for (i = 0; i < t->n; i++)
		if (is_v4_mapped(&t->rows[i].key))
			v4[n++] = &t->rows[i];
	qsort(v4, n, sizeof(*v4), cmp_plen);
	for (i = 0; i < n; i++) {
		const struct sl_asn_entry *e = v4[i];
		uint32_t plen = e->key.prefixlen - SL_V4_MAPPED_PLEN, a, first, count, j;
		uint64_t nib = e->val.class_id & 15;

		memcpy(&a, &e->key.addr[12], 4);
		a = ntohl(a);
		first = a >> 8;
		if (plen > 24) {
			nib = SL_DIR_USE_TRIE;
			count = 1;
		} else {
			count = 1u << (24 - plen);
		}
		for (j = first; j < first + count; j++) {
			int sh = (int)(j & 15) * 4;

			dir[j >> 4] = (dir[j >> 4] & ~(15ull << sh)) | (nib << sh);
		}
	}
	free(v4);
	return 0;
}

/*
 * The IPv6 table of @slot, built in place in the mapped map: the slot is idle (no packet reads
 * it: the last flip away from it was followed by an RCU grace period when its trie was
 * dropped). Nodes past those in use keep whatever an older table left, which no entry of this
 * one points at. Writing the ~2 million entries of a large table one by one through
 * BPF_MAP_UPDATE_BATCH took seconds; this is a build in memory.
 */
static int stage_v6(const struct sl_maps *m, const struct sl_asn_table *t,
		    uint32_t unknown_class, uint32_t slot, struct sl_asn6_stats *st)
{
	size_t len = (size_t)SL_ASN_SLOTS * SL_V6_LINES * sizeof(struct sl_v6_line);
	uint32_t *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, m->asn6, 0);
	int ret;

	if (mem == MAP_FAILED)
		return -errno;
	ret = sl_asn6_build(mem + (size_t)slot * SL_V6_WORDS, SL_V6_NODES, t, unknown_class, st);
	/* The table before the flip that publishes it (a syscall, after this). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	munmap(mem, len);
	return ret < 0 ? ret : 0;
}

/*
 * The ASN swap in three steps, so the slow ones can leave sluiced's event loop: staging
 * (filling a trie of up to millions of rows and writing the 8 MB /24 table: seconds at 500k
 * rows) and dropping (each change to the outer map waits out an RCU grace period) touch only
 * the idle slot, which no packet reads; the flip in between is one settings write. The steps
 * of one swap must not interleave with those of another on the same maps, and only the flip
 * writes sl_settings, so it belongs with the other settings writers (sluiced's loop).
 */
int sl_maps_stage_asn(const struct sl_maps *m, const struct sl_asn_table *t,
		      uint32_t unknown_class, struct sl_asn_staged *st)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_NO_PREALLOC);
	struct sl_settings set;
	uint64_t *dir = NULL;
	__u32 *keys = NULL, slot, i, count;
	size_t r;
	int fd, ret = 0;

	if (unknown_class >= SL_MAX_CLASSES)
		return -EINVAL;
	ret = sl_maps_read_settings(m, &set);
	if (ret)
		return ret;
	slot = (set.asn_slot & 1) ^ 1;

	fd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "sl_asn_trie", sizeof(struct sl_lpm_key),
			    sizeof(struct sl_asn_val), SL_ASN_MAX_ENTRIES, &o);
	if (fd < 0)
		return -errno;
	for (r = 0; r < t->n; r++) {
		if (bpf_map_update_elem(fd, &t->rows[r].key, &t->rows[r].val, BPF_ANY)) {
			ret = -errno;
			goto out;
		}
	}
	dir = malloc(SL_DIR_WORDS * sizeof(*dir));
	keys = malloc(SL_DIR_WORDS * sizeof(*keys));
	if (!dir || !keys) {
		ret = -ENOMEM;
		goto out;
	}
	ret = build_dir(dir, t, unknown_class);
	if (ret)
		goto out;
	for (i = 0; i < SL_DIR_WORDS; i++)
		keys[i] = slot * SL_DIR_WORDS + i;
	count = SL_DIR_WORDS;
	if (bpf_map_update_batch(m->asn_dir, keys, dir, &count, NULL)) {
		ret = -errno;
		goto out;
	}
	ret = stage_v6(m, t, unknown_class, slot, &st->v6);
	if (ret)
		goto out;
	/* Replaces (and frees) whatever an unfinished swap left in the idle slot. */
	if (bpf_map_update_elem(m->asn, &slot, &fd, BPF_ANY)) {
		ret = -errno;
		goto out;
	}
	st->slot = slot;
	st->rows = (uint32_t)t->n;
out:
	free(dir);
	free(keys);
	close(fd); /* the outer map holds its own reference */
	return ret;
}

int sl_maps_flip_asn(const struct sl_maps *m, const struct sl_asn_staged *st)
{
	struct sl_settings set;
	int ret = sl_maps_read_settings(m, &set);

	if (ret)
		return ret;
	/* Another swap flipped since this one was staged: its idle slot is now live. */
	if ((set.asn_slot & 1) == st->slot)
		return -ESTALE;
	/* The flip: one aligned word, in a settings value re-read just now so a config write
	 * made since the staging is kept. */
	set.asn_slot = st->slot;
	if (bpf_map_update_elem(m->settings, &(__u32){ 0 }, &set, BPF_ANY))
		return -errno;
	return 0;
}

int sl_maps_drop_idle_asn(const struct sl_maps *m)
{
	struct sl_settings set;
	__u32 idle;
	int ret = sl_maps_read_settings(m, &set);

	if (ret)
		return ret;
	idle = (set.asn_slot & 1) ^ 1;
	/* A packet still walking that trie holds it under RCU. */
	if (bpf_map_delete_elem(m->asn, &idle) && errno != ENOENT)
		return -errno;
	return 0;
}

int sl_maps_swap_asn(const struct sl_maps *m, const struct sl_asn_table *t,
		     uint32_t unknown_class)
{
	struct sl_asn_staged st;
	int ret = sl_maps_stage_asn(m, t, unknown_class, &st);

	if (!ret)
		ret = sl_maps_flip_asn(m, &st);
	sl_maps_drop_idle_asn(m); /* the old table, or on failure the staged one */
	return ret;
}

int sl_maps_read_stats(const struct sl_maps *m, struct sl_counters *rows)
{
	int ncpu = libbpf_num_possible_cpus();
	struct sl_counters *per;
	__u32 r;
	int c, k;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	per = calloc((size_t)ncpu, sizeof(*per));
	if (!per)
		return -ENOMEM;
	memset(rows, 0, sizeof(*rows) * SL_STATS_ROWS);
	for (r = 0; r < SL_STATS_ROWS; r++) {
		if (bpf_map_lookup_elem(m->stats, &r, per)) {
			int e = -errno;

			free(per);
			return e;
		}
		for (c = 0; c < ncpu; c++) {
			for (k = 0; k < SL_REASON_SLOTS; k++)
				rows[r].pkts[k] += per[c].pkts[k];
			rows[r].key_new += per[c].key_new;
			rows[r].key_homeless += per[c].key_homeless;
			rows[r].cas_busy += per[c].cas_busy;
			rows[r].synacks += per[c].synacks;
			rows[r].events_lost += per[c].events_lost;
		}
	}
	free(per);
	return 0;
}

/* Sets read per batch when the table is walked whole. */
#define SET_BATCH 4096u

long sl_maps_bucket_capacity(const struct sl_maps *m)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(m->buckets, &info, &len))
		return -errno;
	if (info.value_size != sizeof(struct sl_bucket_set) || !info.max_entries ||
	    (info.max_entries & (info.max_entries - 1)))
		return -EPROTO; /* not this build's table */
	return (long)info.max_entries * SL_BUCKET_WAYS;
}

long sl_maps_count_buckets(const struct sl_maps *m)
{
	long cap = sl_maps_bucket_capacity(m), n = 0;
	struct sl_bucket_set *buf;
	__u32 *keys, sets, got = 0;
	LIBBPF_OPTS(bpf_map_batch_opts, o);

	if (cap < 0)
		return cap;
	sets = (__u32)(cap / SL_BUCKET_WAYS);
	buf = calloc(SET_BATCH, sizeof(*buf));
	keys = calloc(SET_BATCH, sizeof(*keys));
	if (!buf || !keys) {
		free(buf);
		free(keys);
		return -ENOMEM;
	}
	while (got < sets) {
		/* An array's keys are 0..sets-1: the batch resumes after @in, the last one read. */
		__u32 want = sets - got < SET_BATCH ? sets - got : SET_BATCH, in = got - 1, next, i;
		int w, err = bpf_map_lookup_batch(m->buckets, got ? &in : NULL, &next, keys, buf,
						  &want, &o);

		for (i = 0; i < want; i++)
			for (w = 0; w < SL_BUCKET_WAYS; w++)
				n += buf[i].way[w].tag != 0;
		got += want;
		if ((err && errno != ENOENT) || !want) {
			if (got < sets)
				n = err ? -errno : -EIO;
			break;
		}
	}
	free(buf);
	free(keys);
	return n;
}

/* @k's set (read into @bs), its index and its tag. */
static int read_set(const struct sl_maps *m, const struct sl_bkey *k, struct sl_bucket_set *bs,
		    __u32 *idx, __u32 *tag)
{
	struct sl_settings set;
	long cap = sl_maps_bucket_capacity(m);
	__u64 h;

	if (cap < 0)
		return (int)cap;
	if (sl_maps_read_settings(m, &set))
		return -errno;
	h = sl_key_hash(k, set.hash_seed);
	*idx = (__u32)h & (__u32)(cap / SL_BUCKET_WAYS - 1);
	*tag = (__u32)(h >> 32);
	if (bpf_map_lookup_elem(m->buckets, idx, bs))
		return -errno;
	return 0;
}

static int own_way(const struct sl_bucket_set *bs, __u32 tag)
{
	int w;

	for (w = 0; w < SL_BUCKET_WAYS; w++)
		if (bs->way[w].tag == tag)
			return w;
	return -1;
}

/* The datapath's way_to_take() (bpf/sluice.bpf.c), for predictions and writes. */
static int free_way(const struct sl_bucket_set *bs, __u64 now)
{
	__u64 low = ~0ull;
	int w, victim = -1;

	for (w = 0; w < SL_BUCKET_WAYS; w++) {
		__u64 t = bs->way[w].tat;

		if (!bs->way[w].tag || t <= now)
			return w;
		if (t - now <= (__u64)bs->way[w].lead << SL_LEAD_SHIFT && t < low) {
			low = t;
			victim = w;
		}
	}
	return victim;
}

int sl_maps_lookup_bucket(const struct sl_maps *m, const struct sl_bkey *k, struct sl_bucket *b)
{
	struct sl_bucket_set bs;
	__u32 idx, tag;
	int w, ret = read_set(m, k, &bs, &idx, &tag);

	if (ret)
		return ret;
	w = own_way(&bs, tag);
	if (w < 0)
		return -ENOENT;
	b->tat = bs.way[w].tat;
	b->streak = bs.shed[w].streak;
	b->last_shed_s = bs.shed[w].last_shed_s;
	return 0;
}

int sl_maps_predict_bucket(const struct sl_maps *m, const struct sl_bkey *k, __u64 now,
			   __u64 fresh, __u64 *tat, bool *homeless)
{
	struct sl_bucket_set bs;
	__u32 idx, tag;
	int w, ret = read_set(m, k, &bs, &idx, &tag);

	if (ret)
		return ret;
	w = own_way(&bs, tag);
	if (w >= 0) {
		*tat = bs.way[w].tat;
		*homeless = false;
	} else if (free_way(&bs, now) >= 0) {
		*tat = fresh;
		*homeless = false;
	} else {
		*tat = bs.spill_tat;
		*homeless = true;
	}
	return 0;
}

int sl_maps_write_bucket(const struct sl_maps *m, const struct sl_bkey *k,
			 const struct sl_bucket *b, __u64 lead_ns)
{
	struct sl_bucket_set bs;
	__u32 idx, tag;
	__u64 lead = lead_ns >> SL_LEAD_SHIFT;
	int w, ret = read_set(m, k, &bs, &idx, &tag);

	if (ret)
		return ret;
	w = own_way(&bs, tag);
	if (w < 0)
		w = free_way(&bs, sl_now_ns());
	if (w < 0)
		return -ENOSPC; /* every way holds a spent key: none is given away, here either */
	bs.way[w].tag = tag;
	bs.way[w].tat = b->tat;
	bs.way[w].lead = lead > 0xffffffffull ? 0xffffffffu : (__u32)lead;
	bs.shed[w].streak = b->streak;
	bs.shed[w].last_shed_s = b->last_shed_s;
	if (bpf_map_update_elem(m->buckets, &idx, &bs, BPF_ANY))
		return -errno;
	return 0;
}

int sl_maps_read_meta(const struct sl_maps *m, struct sl_meta *meta)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->meta, &zero, meta))
		return -errno;
	return 0;
}

int sl_maps_write_meta(const struct sl_maps *m, const struct sl_meta *meta)
{
	__u32 zero = 0;

	if (bpf_map_update_elem(m->meta, &zero, meta, BPF_ANY))
		return -errno;
	return 0;
}

int sl_maps_lookup_asn(const struct sl_maps *m, const struct sl_prefix *a, struct sl_asn_val *v)
{
	struct sl_settings set;
	struct sl_lpm_key k;
	__u32 slot, id;
	int fd, ret = 0;

	if (sl_maps_read_settings(m, &set))
		return -errno;
	slot = set.asn_slot & 1;
	if (bpf_map_lookup_elem(m->asn, &slot, &id))
		return -ENOENT; /* no table loaded */
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return -errno;
	sl_prefix_to_lpm(a, &k);
	if (bpf_map_lookup_elem(fd, &k, v))
		ret = -errno;
	close(fd);
	return ret;
}

int sl_maps_fast_class(const struct sl_maps *m, const struct sl_prefix *a, uint32_t *cls)
{
	struct sl_settings set;
	__u32 slot, idx, i;

	if (sl_maps_read_settings(m, &set))
		return -errno;
	slot = set.asn_slot & 1;
	if (a->family == SL_FAM_V4) {
		__u64 word;
		uint32_t v4 = ((uint32_t)a->addr[0] << 24) | ((uint32_t)a->addr[1] << 16) |
			      ((uint32_t)a->addr[2] << 8) | a->addr[3];

		idx = slot * SL_DIR_WORDS + (v4 >> 12);
		if (bpf_map_lookup_elem(m->asn_dir, &idx, &word))
			return -errno;
		*cls = (uint32_t)(word >> (((v4 >> 8) & 15) * 4)) & 15;
		return 0;
	}
	/* The walk of sl_asn6_walk, one map read (a line of 16 entries) per level. */
	{
		struct sl_v6_line l;
		__u32 e, line;

		idx = slot * SL_V6_WORDS + sl_v6_root(a->addr);
		line = idx / SL_V6_FANOUT;
		if (bpf_map_lookup_elem(m->asn6, &line, &l))
			return -errno;
		e = l.e[idx % SL_V6_FANOUT];
		for (i = 0; i < SL_V6_LEVELS && (e & SL_V6_CHILD); i++) {
			idx = slot * SL_V6_WORDS + sl_v6_next(e, a->addr, i);
			line = idx / SL_V6_FANOUT;
			if (bpf_map_lookup_elem(m->asn6, &line, &l))
				return -errno;
			e = l.e[idx % SL_V6_FANOUT];
		}
		*cls = e & SL_V6_CHILD ? SL_DIR_USE_TRIE : e & 15;
	}
	return 0;
}

int sl_maps_write_tenants(const struct sl_maps *m, const struct sl_config *c)
{
	struct sl_tenant_key k, next;
	void *prev = NULL;
	__u32 i;
	int j;

	/* Drop keys that no longer map to the same tenant. */
	while (!bpf_map_get_next_key(m->tenant_keys, prev, &next)) {
		__u32 id;
		bool keep = false;

		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(m->tenant_keys, &k, &id))
			continue;
		if ((int)id < c->n_tenants)
			for (j = 0; j < c->tenants[id].n_listen; j++)
				if (c->tenants[id].listen[j].family == k.family &&
				    c->tenants[id].listen[j].port == k.port &&
				    !memcmp(c->tenants[id].listen[j].addr, k.addr, 16))
					keep = true;
		if (!keep) {
			bpf_map_delete_elem(m->tenant_keys, &k);
			prev = NULL; /* the walk restarts: deleting under it is not stable */
		}
	}
	for (i = 0; i < SL_MAX_TENANTS; i++) {
		struct sl_tenant t, was;

		memset(&t, 0, sizeof(t));
		if ((int)i < c->n_tenants && c->tenants[i].edge_budget) {
			const struct sl_tenant_cfg *tc = &c->tenants[i];

			t.valid = 1;
			t.mode = tc->mode;
			rate_of(&t.fallback, tc->static_rate, tc->static_burst);
			snprintf(t.name, sizeof(t.name), "%s", tc->name);
			/* The lease is the lease controller's (lease.c): a reload or a start on
			 * adopted pins keeps the one in force, live or lapsed, and a new tenant
			 * starts lapsed, on its static rate, until the controller grants one
			 * (issue 16: an even split written here on every reload outran the
			 * cluster's budget and, with Redis down, replaced the static rate). */
			if (!bpf_map_lookup_elem(m->tenants, &i, &was) && was.valid &&
			    !strncmp(was.name, t.name, sizeof(t.name))) {
				t.lease = was.lease;
				t.lease_expires_ns = was.lease_expires_ns;
				t.share_ppm = was.share_ppm;
				t.nodes_seen = was.nodes_seen;
				t.demand_milli = was.demand_milli;
				t.cluster_milli = was.cluster_milli;
				t.lease_set_unix = was.lease_set_unix;
			}
		}
		if (bpf_map_update_elem(m->tenants, &i, &t, BPF_ANY))
			return -errno;
		if ((int)i >= c->n_tenants || !c->tenants[i].edge_budget)
			continue;
		for (j = 0; j < c->tenants[i].n_listen; j++) {
			memset(&k, 0, sizeof(k));
			k.family = c->tenants[i].listen[j].family;
			k.port = c->tenants[i].listen[j].port;
			memcpy(k.addr, c->tenants[i].listen[j].addr, 16);
			if (bpf_map_update_elem(m->tenant_keys, &k, &i, BPF_ANY))
				return -errno;
		}
	}
	return 0;
}

int sl_maps_read_demand(const struct sl_maps *m, uint64_t *out)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *per;
	__u32 i;
	int c;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	per = calloc((size_t)ncpu, sizeof(*per));
	if (!per)
		return -ENOMEM;
	for (i = 0; i < SL_MAX_TENANTS; i++) {
		out[i] = 0;
		if (bpf_map_lookup_elem(m->tenant_demand, &i, per)) {
			int e = errno;

			free(per);
			return -e;
		}
		for (c = 0; c < ncpu; c++)
			out[i] += per[c];
	}
	free(per);
	return 0;
}

int sl_maps_set_lease(const struct sl_maps *m, uint32_t id, double rate, double burst,
		      uint64_t expires_ns, const struct sl_lease_info *why)
{
	struct sl_tenant t;

	if (bpf_map_lookup_elem(m->tenants, &id, &t))
		return -errno;
	if (!t.valid)
		return -ENOENT;
	rate_of(&t.lease, rate, burst);
	t.lease_expires_ns = expires_ns;
	if (why) {
		t.share_ppm = (__u32)(why->share * 1e6 + 0.5);
		t.nodes_seen = why->nodes;
		t.demand_milli = (__u64)(why->demand * 1000.0);
		t.cluster_milli = (__u64)(why->cluster_demand * 1000.0);
	}
	t.lease_set_unix = (__u64)time(NULL);
	if (bpf_map_update_elem(m->tenants, &id, &t, BPF_ANY))
		return -errno;
	return 0;
}

int sl_maps_grant_share(const struct sl_maps *m, const struct sl_config *c, uint32_t id,
			double share, uint64_t from_ns, const struct sl_lease_info *why)
{
	const struct sl_tenant_cfg *tc;

	if (id >= (uint32_t)c->n_tenants)
		return -ENOENT;
	tc = &c->tenants[id];
	return sl_maps_set_lease(m, id, tc->rate * share,
				 sl_lease_burst(tc->burst * share, tc->burst, c),
				 from_ns + (uint64_t)tc->lease_ttl_s * 1000000000ull, why);
}

static void random_bytes(void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom((char *)p + got, n - got, 0);

		if (r <= 0)
			continue;
		got += (size_t)r;
	}
}

int sl_maps_cookie_keys(const struct sl_maps *m, int rotate, uint32_t every_s)
{
	struct sl_cookie_keys k;
	__u32 zero = 0;
	uint8_t marker;

	if (bpf_map_lookup_elem(m->cookie_keys, &zero, &k))
		return -errno;
	if (k.cur[0] || k.cur[1]) {
		if (!rotate && (uint64_t)time(NULL) < k.rotated_unix + every_s)
			return 0;
		/* The old key stays good as long as a cookie it made can be: its own slot and
		 * the next (2 x 2^36 ns, ~137 s). */
		memcpy(k.prev, k.cur, sizeof(k.prev));
		k.prev_until_ns = sl_now_ns() + (2ull << 36);
	} else {
		/* The marker is chosen once and kept: every SYN-ACK shows it, so changing it
		 * hides nothing, and two live markers would halve the fast path. */
		random_bytes(&marker, 1);
		k.cur_marker = marker & SL_COOKIE_MARKER_MASK;
	}
	k.prev_marker = k.cur_marker;
	random_bytes(k.cur, sizeof(k.cur));
	k.rotated_unix = (uint64_t)time(NULL);
	if (bpf_map_update_elem(m->cookie_keys, &zero, &k, BPF_ANY))
		return -errno;
	return 1;
}

int sl_maps_verdict_put(const struct sl_maps *m, const struct sl_prefix *p,
			const struct sl_verdict *v)
{
	struct sl_lpm_key k;
	uint32_t live;

	sl_prefix_to_lpm(p, &k);
	if (bpf_map_update_elem(m->verdicts, &k, v, BPF_ANY))
		return -errno;
	return sl_maps_verdict_sweep(m, &live) < 0 ? -errno : 0;
}

int sl_maps_verdict_del(const struct sl_maps *m, const struct sl_prefix *p)
{
	struct sl_lpm_key k;
	uint32_t live;

	sl_prefix_to_lpm(p, &k);
	if (bpf_map_delete_elem(m->verdicts, &k))
		return -errno;
	return sl_maps_verdict_sweep(m, &live) < 0 ? -errno : 0;
}

int sl_maps_verdict_sweep(const struct sl_maps *m, uint32_t *live)
{
	struct sl_lpm_key k, next;
	struct sl_verdict v;
	uint64_t now = sl_now_ns();
	void *prev = NULL;
	__u32 zero = 0, n = 0;
	int swept = 0;

	while (!bpf_map_get_next_key(m->verdicts, prev, &next)) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(m->verdicts, &k, &v))
			continue;
		if (now >= v.expires_ns) {
			bpf_map_delete_elem(m->verdicts, &k);
			swept++;
			prev = NULL; /* restart: the trie walk is not stable under deletion */
			n = 0;
			continue;
		}
		n++;
	}
	*live = n;
	if (bpf_map_update_elem(m->vcount, &zero, &n, BPF_ANY))
		return -errno;
	return swept;
}

/* Delete every key of a hash or trie map (its walk is not stable under deletion). */
static void clear_map(int fd, size_t key_size)
{
	uint8_t key[256];

	if (key_size > sizeof(key))
		return;
	while (!bpf_map_get_next_key(fd, NULL, key))
		if (bpf_map_delete_elem(fd, key))
			break;
}

int sl_host_place(struct sl_host_set *sets, uint32_t nsets, const struct sl_host_key *hk,
		  uint32_t tid, uint32_t seed)
{
	uint64_t h = sl_host_hash(hk, seed);
	uint32_t tag = (uint32_t)(h >> 32), i[2] = { (uint32_t)h & (nsets - 1), tag & (nsets - 1) };
	int k, w, best = -1, bestn = SL_HOST_WAYS + 1;

	for (k = 0; k < 2; k++) {
		struct sl_host_set *s = &sets[i[k]];
		int used = 0, clash = 0;

		for (w = 0; w < SL_HOST_WAYS; w++) {
			used += s->tag[w] != 0;
			clash |= s->tag[w] == tag; /* a lookup reads one way per tag and set */
		}
		if (!clash && used < SL_HOST_WAYS && used < bestn) {
			best = k;
			bestn = used;
		}
	}
	if (best < 0) {
		sets[i[0]].overflow = 1;
		sets[i[1]].overflow = 1;
		return 0;
	}
	for (w = 0; w < SL_HOST_WAYS; w++) {
		struct sl_host_set *s = &sets[i[best]];

		if (s->tag[w])
			continue;
		s->tag[w] = tag;
		s->tid[w] = tid;
		s->name[w] = *hk;
		return 1;
	}
	return 0; /* not reached: the set had room */
}

int sl_maps_write_routes(const struct sl_maps *m, const struct sl_config *c)
{
	struct sl_host_set *sets;
	struct sl_settings set;
	int i, j, n, pass, ret = 0, unplaced = 0;
	__u32 si;

	/* Rewritten whole: during the rewrite a first request may see a partial table and be
	 * charged the port's default cost, which is what an unknown route costs anyway. */
	clear_map(m->routes, sizeof(struct sl_route_key));
	clear_map(m->hosts, sizeof(struct sl_host_key));
	/*
	 * One lookup per request: an any-method route is written under every method, first,
	 * so that an exact-method route of the same path overwrites it (the exact one wins at
	 * equal length; the trie's longest-prefix rule does the rest).
	 */
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < c->n_routes && i < SL_EDGE_ROUTES; i++) {
			const struct sl_route_cfg *r = &c->routes[i];
			struct sl_route_key k;
			struct sl_route_val v = { .route_id = (__u32)i };
			size_t len = strlen(r->path);
			double cost = r->cpu < 1.0 ? 1.0 : r->cpu;
			int mth;

			if ((pass == 0) != (r->method == SL_M_OTHER))
				continue;
			if (len > SL_ROUTE_KEY_PATH)
				len = SL_ROUTE_KEY_PATH;
			v.cost = cost > 1e9 ? 1000000000u : (__u32)(cost + 0.5);
			v.path_len = (__u32)len;
			for (mth = SL_M_GET; mth < SL_M__MAX; mth++) {
				if (r->method != SL_M_OTHER && r->method != mth)
					continue;
				memset(&k, 0, sizeof(k));
				k.prefixlen = (__u32)(8 * (1 + len));
				k.data[0] = (__u8)mth;
				memcpy(&k.data[1], r->path, len);
				if (bpf_map_update_elem(m->routes, &k, &v, BPF_ANY))
					return -errno;
			}
		}
	/*
	 * The hosts: every one in the hash map, and in the datapath's set table (struct
	 * sl_host_set), built whole here and written set by set, so that a first request
	 * meanwhile finds a host's old placement or its new one (or, in the set being written,
	 * neither: the destination's tenant, as in the hash map's rewrite). The sets mark the
	 * few hosts the hash map alone holds.
	 */
	if (sl_maps_read_settings(m, &set))
		return -errno;
	sets = calloc(SL_HOST_SETS, sizeof(*sets));
	if (!sets)
		return -ENOMEM;
	for (i = 0; i < c->n_tenants && !ret; i++)
		for (j = 0; j < c->tenants[i].n_hosts && !ret; j++) {
			struct sl_host_key hk;
			__u32 id = (__u32)i;

			memset(&hk, 0, sizeof(hk));
			for (n = 0; n < SL_HOST_KEY_LEN - 1 && c->tenants[i].hosts[j][n]; n++)
				hk.name[n] = c->tenants[i].hosts[j][n];
			if (bpf_map_update_elem(m->hosts, &hk, &id, BPF_ANY))
				ret = -errno;
			else if (!sl_host_place(sets, SL_HOST_SETS, &hk, id, set.hash_seed))
				unplaced++;
		}
	if (unplaced)
		log_info("edge: %d host(s) found both their sets of the host table full: the "
			 "hash map answers for them", unplaced);
	for (si = 0; si < SL_HOST_SETS && !ret; si++)
		if (bpf_map_update_elem(m->host_sets, &si, &sets[si], BPF_ANY))
			ret = -errno;
	free(sets);
	return ret;
}

int sl_maps_read_outcomes(int fd, uint32_t n, struct sl_outcome *out)
{
	int ncpu = libbpf_num_possible_cpus(), c;
	struct sl_outcome *per;
	uint32_t i;

	if (ncpu <= 0)
		return -EINVAL;
	per = calloc((size_t)ncpu, sizeof(*per));
	if (!per)
		return -ENOMEM;
	memset(out, 0, sizeof(*out) * n);
	for (i = 0; i < n; i++) {
		if (bpf_map_lookup_elem(fd, &i, per)) {
			int e = -errno;

			free(per);
			return e;
		}
		for (c = 0; c < ncpu; c++) {
			out[i].admitted += per[c].admitted;
			out[i].shed += per[c].shed;
		}
	}
	free(per);
	return 0;
}

/* Remove from @fd every key not among @keep (@n). Collected first: deleting while walking a
 * map restarts the walk. */
static int prune(int fd, const struct sl_lpm_key *keep, size_t n)
{
	struct sl_lpm_key k, next, *gone;
	size_t j, nkeys = 0, cap = 64;
	void *prev = NULL;
	int found;

	gone = calloc(cap, sizeof(*gone));
	if (!gone)
		return -ENOMEM;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		found = 0;
		for (j = 0; j < n && !found; j++)
			found = !memcmp(&next, &keep[j], sizeof(next));
		if (!found) {
			if (nkeys == cap) {
				struct sl_lpm_key *g = realloc(gone, 2 * cap * sizeof(*g));

				if (!g)
					break;
				gone = g;
				cap *= 2;
			}
			gone[nkeys++] = next;
		}
		k = next;
		prev = &k;
	}
	for (j = 0; j < nkeys; j++)
		bpf_map_delete_elem(fd, &gone[j]);
	free(gone);
	return 0;
}

/* Loopback prefixes are local and still never answered from a wire (the datapath calls them
 * martian), so they need no trie walk. */
static bool is_loopback(const struct sl_prefix *p)
{
	static const uint8_t one[16] = { [15] = 1 };

	if (p->family == SL_FAM_V4)
		return p->addr[0] == 127;
	return !memcmp(p->addr, one, 16);
}

/* One address, not a wider prefix: the host hash's and the filter's. */
static bool is_host(const struct sl_prefix *p)
{
	return p->plen == (p->family == SL_FAM_V4 ? 32 : 128);
}

int sl_maps_write_local(const struct sl_maps *m, const struct sl_local_prefix *v, size_t n)
{
	struct sl_local_bits *bits = NULL, *now = NULL;
	struct sl_lpm_key *keep, *hosts;
	struct sl_local_val val;
	struct sl_settings set;
	size_t i, nh = 0;
	uint32_t nets = 0, b;
	int ret = 0;

	keep = calloc(n ? n : 1, sizeof(*keep));
	hosts = calloc(n ? n : 1, sizeof(*hosts));
	bits = calloc(1, sizeof(*bits));
	now = calloc(1, sizeof(*now));
	if (!keep || !hosts || !bits || !now) {
		ret = -ENOMEM;
		goto out;
	}
	/* The keys, the host addresses among them, and the filter in front of the host hash
	 * (struct sl_local_bits). The filter says "maybe" for every host of old and new alike
	 * while the hash changes, and drops the old ones' bits only once they have left it: it
	 * never answers "no" for an address the hash holds. */
	for (i = 0; i < n; i++) {
		sl_prefix_to_lpm(&v[i].p, &keep[i]);
		if (is_host(&v[i].p)) {
			hosts[nh++] = keep[i];
			sl_local_mark(bits, keep[i].addr);
		} else if (!is_loopback(&v[i].p)) {
			nets++;
		}
	}
	bpf_map_lookup_elem(m->local_bits, &(__u32){ 0 }, now);
	for (b = 0; b < SL_LOCAL_BITS / 64; b++)
		now->w[b] |= bits->w[b];
	if (bpf_map_update_elem(m->local_bits, &(__u32){ 0 }, now, BPF_ANY)) {
		ret = -errno;
		goto out;
	}
	for (i = 0; i < n; i++) {
		memset(&val, 0, sizeof(val));
		val.ifindex = v[i].ifindex;
		if (bpf_map_update_elem(m->local, &keep[i], &val, BPF_ANY) ||
		    (is_host(&v[i].p) &&
		     bpf_map_update_elem(m->local_host, &keep[i], &val, BPF_ANY))) {
			ret = -errno;
			goto out;
		}
	}
	/* New prefixes are in the trie before the count says to ask it, and the count drops
	 * before old ones leave it: the trie is never skipped while it holds a live prefix. */
	if (!sl_maps_read_settings(m, &set) && set.local_nets != nets) {
		set.local_nets = nets;
		if (bpf_map_update_elem(m->settings, &(__u32){ 0 }, &set, BPF_ANY))
			ret = -errno;
	}
	if (!ret)
		ret = prune(m->local, keep, n);
	if (!ret)
		ret = prune(m->local_host, hosts, nh);
	if (!ret && bpf_map_update_elem(m->local_bits, &(__u32){ 0 }, bits, BPF_ANY))
		ret = -errno;
	/* Last, once both tables are as they will stay: what the datapath cached of them is
	 * stale from here. */
	if (!ret) {
		uint64_t gen = 0;

		bpf_map_lookup_elem(m->local_gen, &(__u32){ 0 }, &gen);
		gen++;
		if (bpf_map_update_elem(m->local_gen, &(__u32){ 0 }, &gen, BPF_ANY))
			ret = -errno;
	}
out:
	free(keep);
	free(hosts);
	free(bits);
	free(now);
	return ret;
}

long sl_maps_read_local(const struct sl_maps *m, struct sl_local_prefix *v, size_t cap)
{
	struct sl_lpm_key k, next;
	struct sl_local_val val;
	void *prev = NULL;
	long n = 0;

	while (!bpf_map_get_next_key(m->local, prev, &next)) {
		if ((size_t)n < cap && !bpf_map_lookup_elem(m->local, &next, &val)) {
			sl_lpm_to_prefix(&next, &v[n].p);
			v[n].ifindex = val.ifindex;
		}
		n++;
		k = next;
		prev = &k;
	}
	return n;
}
