// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * sluice edge datapath: admission at the SYN, and the answer to what it sheds.
 *
 * For every frame: parse Ethernet/VLAN/IPv4/IPv6/TCP; anything that is not TCP to a
 * protected port passes untouched. A SYN is typed by its source's ASN class and judged:
 * verdicts first (block, reply, or a tighter rate), then the port's cost is charged against
 * the source prefix's GCRA bucket, its parent prefix's and the destination tenant's. A shed
 * SYN is dropped, or on a `reply` port answered with a cookie SYN-ACK; the connection's first
 * request then gets one `HTTP/1.1 429` segment with an escalating, jittered Retry-After and
 * FIN, and its leftovers are absorbed, all without the kernel ever seeing the connection.
 * Every packet leaves through record(), which counts its reason and class.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "sluice/abi.h"
#include "sluice/cookie.h"
#include "sluice/gcra.h"
#include "sluice/hash.h"
#include "parse.h"
#include "maps.h"
#include "reply.h"
#include "request.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Load-time constant: ghost table size - 1 (a power of two). Set by sluiced before load. */
const volatile __u32 ghost_mask = 65535;

/* Replies are built in a per-CPU scratch slot: on the stack they would take the frame of
 * the reply paths past the verifier's 512-byte limit for a call chain. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct reply);
} sl_scratch SEC(".maps");

static const __u16 sl_mss_tab[8] = SL_COOKIE_MSS;

/*
 * The cookie, made and checked in functions of their own: SipHash over six words kept in
 * registers and spills took each caller's frame past what the verifier allows a call chain,
 * and inlined at three sites it cost most of the verification budget.
 */
__noinline int sl_cookie_new(const struct sl_conn_id *id, __u64 now,
			     const struct sl_cookie_opts *o, const struct sl_cookie_keys *k)
{
	if (!id || !o || !k)
		return 0;
	return (int)sl_cookie_make(id, now, o, k);
}

__noinline int sl_cookie_ok(const struct sl_conn_id *id, __u32 cookie, __u64 now,
			    const struct sl_cookie_keys *k, struct sl_cookie_opts *o)
{
	if (!id || !o || !k)
		return 0;
	return sl_cookie_check(id, cookie, now, k, o);
}



/* How long a cookie connection that got its 429 keeps absorbing its own segments. */
#define SL_CONN_TTL_NS (10ull * 1000000000ull)

struct src {
	__u8 family;
	__u8 saddr[16]; /* IPv4 in the first 4 bytes */
	__u8 daddr[16];
};

/*
 * What the parser learnt about a TCP segment to a protected port: plain values, no packet
 * pointers, so that the functions below can be global BPF functions. The verifier checks a
 * global function once, on its own; a static or inlined one is checked again for every parse
 * path that reaches it (VLAN depth x IP options x extension headers), which took this program
 * past the 1M-instruction budget.
 */
struct pkt {
	struct src s;
	__u32 th_off;   /* offset of the TCP header in the frame */
	__u32 payload;  /* TCP payload bytes, from the IP length */
	__u32 seq, ack; /* host order */
	__u32 n_vlan;
	__u16 sport, dport;
	__u8 flags;     /* TCP flags byte */
	__u8 doff;
	__u8 front;     /* the port's: enum sl_front */
	__u8 proto;     /* enum sl_proto */
	__u8 action;    /* enum sl_action */
	__u8 pad[3];
	__u32 cost;     /* what this segment's decision charges (port default, or its route) */
	__u32 tenant;   /* tenant id from Host/SNI; SL_TENANT_BY_DEST: by destination */
};

#define SL_TENANT_BY_DEST (SL_MAX_TENANTS + 1)

/* Zero the host bits of a 32-bit big-endian word holding bits [32*i, 32*i+32) of a prefix. */
static __always_inline __u32 mask_word(__u32 word, int plen, int i)
{
	int bits = plen - 32 * i;

	if (bits >= 32)
		return word;
	if (bits <= 0)
		return 0;
	return word & bpf_htonl(~0u << (32 - bits));
}

/* Keys are /64 or shorter (abi.h), so the first two words of the address are all of it. */
static __always_inline void make_key(struct sl_bkey *k, const struct src *s, __u8 plen,
				     __u8 level, __u8 class_id)
{
	__u32 w[2];

	__builtin_memcpy(w, s->saddr, sizeof(w));
	k->family = s->family;
	k->plen = plen;
	k->level = level;
	k->class_id = class_id;
	w[0] = mask_word(w[0], plen, 0);
	w[1] = mask_word(w[1], plen, 1);
	__builtin_memcpy(k->addr, w, sizeof(w));
}

static __always_inline void lpm_key_of(struct sl_lpm_key *lk, const struct src *s)
{
	lk->prefixlen = 128;
	if (s->family == SL_FAM_V4) {
		__builtin_memset(lk->addr, 0, 10);
		lk->addr[10] = 0xff;
		lk->addr[11] = 0xff;
		__builtin_memcpy(&lk->addr[12], s->saddr, 4);
	} else {
		__builtin_memcpy(lk->addr, s->saddr, 16);
	}
}

/*
 * The source's class: one load from the /24 table for IPv4; the LPM trie for IPv6 and for
 * the IPv4 /24s that hold a longer row. Sources in no row get the unknown class.
 */
static __always_inline __u32 classify(const struct src *s, const struct sl_settings *set)
{
	struct sl_lpm_key lk;
	__u32 slot = set->asn_slot & 1;
	struct sl_asn_val *av;
	void *trie;

	if (s->family == SL_FAM_V4) {
		__u32 a, idx, cls;
		__u64 *w;

		__builtin_memcpy(&a, s->saddr, 4);
		a = bpf_ntohl(a);
		idx = slot * SL_DIR_WORDS + (a >> 12);
		w = bpf_map_lookup_elem(&sl_asn_dir, &idx);
		if (!w)
			return set->unknown_class;
		cls = (*w >> (((a >> 8) & 15) * 4)) & 15;
		if (cls != SL_DIR_USE_TRIE)
			return cls;
	}
	lpm_key_of(&lk, s);
	trie = bpf_map_lookup_elem(&sl_asn, &slot);
	if (!trie)
		return set->unknown_class;
	av = bpf_map_lookup_elem(trie, &lk);
	return av ? av->class_id : set->unknown_class;
}

/* The class's policy, falling back to unknown for a class the config no longer has. */
static __always_inline struct sl_class_policy *policy_of(__u32 *cls, const struct sl_settings *set)
{
	struct sl_class_policy *pol;

	if (*cls >= SL_MAX_CLASSES)
		*cls = set->unknown_class;
	pol = bpf_map_lookup_elem(&sl_classes, cls);
	if (pol && pol->valid)
		return pol;
	*cls = set->unknown_class;
	pol = bpf_map_lookup_elem(&sl_classes, cls);
	return pol && pol->valid ? pol : NULL;
}

enum charge_result {
	CHARGE_OK = 0,
	CHARGE_DENIED,
	CHARGE_BUSY,
	CHARGE_NOSTATE,
};

struct charge_out {
	__u64 inc;  /* what was charged, for a refund */
	__u64 next; /* the new TAT */
};

/*
 * Charge @cost against @b with compare-and-swap. A global function: inlined three times
 * into the judgement, its retry loop multiplied the verifier's paths past its budget.
 */
__noinline int sl_charge_tat(struct sl_bucket *b, const struct sl_rate *r, __u64 cost,
			     __u64 now, struct charge_out *out)
{
	int i;

	if (!b || !r || !out)
		return CHARGE_NOSTATE;
	for (i = 0; i < SL_CAS_TRIES; i++) {
		__u64 old = *(volatile __u64 *)&b->tat;
		__u64 next;

		if (!sl_gcra_charge(old, now, cost, r->emission_ns, r->tolerance_ns, &next)) {
			/* Persist a clamp after a clock step; one try, it is only a correction. */
			if (next != old)
				__sync_val_compare_and_swap(&b->tat, old, next);
			return CHARGE_DENIED;
		}
		if (__sync_val_compare_and_swap(&b->tat, old, next) != old)
			continue;
		out->inc = next - (old > now ? old : now);
		out->next = next;
		return CHARGE_OK;
	}
	return CHARGE_BUSY;
}

/* Charge @cost against the bucket of @k, creating it (partly spent, or from its ghost). */
static __always_inline int charge(const struct sl_bkey *k, const struct sl_rate *r,
				  __u64 cost, __u64 now, const struct sl_settings *set,
				  struct sl_counters *cnt, struct sl_bucket **bucket, __u64 *inc)
{
	struct sl_bucket *b;
	struct sl_ghost *ghost;
	struct charge_out co = {};
	__u64 h, next;
	__u32 slot, tag;
	int rc;

	b = bpf_map_lookup_elem(&sl_buckets, k);
	if (!b) {
		struct sl_bucket nb = {};

		h = sl_ghost_hash(k, set->hash_seed);
		slot = (__u32)h & ghost_mask;
		tag = h >> 32;
		nb.tat = sl_gcra_initial_tat(now, r->tolerance_ns, set->new_key_credit);
		ghost = bpf_map_lookup_elem(&sl_ghosts, &slot);
		if (ghost && ghost->tag == tag && ghost->tat > nb.tat) {
			nb.tat = ghost->tat;
			if (cnt)
				cnt->key_returned++;
		} else if (cnt) {
			cnt->key_new++;
		}
		/* Another CPU may create it first (EEXIST): fine, the lookup below finds theirs. */
		bpf_map_update_elem(&sl_buckets, k, &nb, BPF_NOEXIST);
		b = bpf_map_lookup_elem(&sl_buckets, k);
		if (!b)
			return CHARGE_NOSTATE;
	}
	*bucket = b;
	rc = sl_charge_tat(b, r, cost, now, &co);
	*inc = co.inc;
	next = co.next;
	if (rc == CHARGE_BUSY && cnt)
		cnt->cas_busy++;
	/*
	 * Remember keys that are more than half spent: those are the ones whose eviction would
	 * otherwise be a gift. Keys with room to spare skip the shared store.
	 */
	if (rc == CHARGE_OK && next - now > r->tolerance_ns / 2) {
		h = sl_ghost_hash(k, set->hash_seed);
		slot = (__u32)h & ghost_mask;
		ghost = bpf_map_lookup_elem(&sl_ghosts, &slot);
		if (ghost) {
			/* Two plain stores: a torn pair from a racing CPU mismatches at worst,
			 * and a mismatch only forgets. */
			ghost->tat = next;
			ghost->tag = h >> 32;
		}
	}
	return rc;
}

static __always_inline int is_shed(__u32 reason)
{
	return reason == SL_R_SHED_PREFIX || reason == SL_R_SHED_PARENT ||
	       reason == SL_R_SHED_TENANT || reason == SL_R_SHED_VERDICT;
}

/*
 * The one exit: count the reason in the class's per-CPU row. Per-CPU values need no atomics:
 * an XDP program runs to completion on one CPU with migration disabled, and no other CPU
 * writes this CPU's copy.
 */
static __always_inline int record(__u32 class_id, __u32 reason, int action)
{
	struct sl_counters *cnt;

	cnt = bpf_map_lookup_elem(&sl_stats, &class_id);
	if (cnt && reason < SL_REASON_SLOTS) {
		cnt->pkts[reason]++;
		if (action == XDP_TX && (reason == SL_R_HANDSHAKE || is_shed(reason)))
			cnt->synacks++;
	}
	return action;
}

static __always_inline void emit_event(const struct sl_settings *set, const struct src *s,
				       const struct sl_bkey *key, __u32 cls, __u32 reason,
				       __u8 action, __u16 dport, __u16 retry_after, __u64 now)
{
	struct sl_event *ev;

	if (!set->event_sample || bpf_get_prandom_u32() % set->event_sample)
		return;
	ev = bpf_ringbuf_reserve(&sl_events, sizeof(*ev), 0);
	if (!ev) {
		__u32 none = SL_CLASS_NONE;
		struct sl_counters *cnt = bpf_map_lookup_elem(&sl_stats, &none);

		if (cnt)
			cnt->events_lost++;
		return;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->ts_ns = now;
	ev->family = s->family;
	ev->plen = key->plen;
	ev->class_id = cls;
	ev->reason = reason;
	ev->action = action;
	ev->retry_after = retry_after;
	ev->dport = dport;
	__builtin_memcpy(ev->addr, key->addr, sizeof(key->addr));
	bpf_ringbuf_submit(ev, 0);
}

struct decision {
	__u32 reason;
	__u32 class_id;
	__u8 action;      /* enum sl_action for a shed */
	struct sl_bkey key;
};

/* The record of the segment being judged, per CPU: on the stack it put the main frame plus
 * the reply path's past the verifier's 512 bytes for a call chain. */
struct seg_scratch {
	struct pkt pk;
	struct decision d;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seg_scratch);
} sl_segs SEC(".maps");

/* Working memory of the cookie and first-request paths, per CPU: the first request's bytes
 * and the keys read from them, and the cookie path's records, which on the stack took its
 * call chain past the verifier's 512 bytes. */
struct req_scratch {
	struct req_buf rb;
	struct sl_route_key rk;
	struct sl_host_key hk;
	struct sl_conn_id id;
	struct sl_conn_key ck;
	struct sl_cookie_opts o;
	struct decision d;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct req_scratch);
} sl_reqbuf SEC(".maps");

static __always_inline void refund(struct sl_bucket *b, __u64 inc)
{
	if (b && inc)
		__sync_fetch_and_add(&b->tat, -inc);
}

/* Charge the destination tenant's edge bucket: its lease while it lasts, else the static
 * fallback. Returns CHARGE_OK when there is no tenant for this destination. */
static __always_inline int charge_tenant(const struct src *s, __u16 dport, __u64 cost,
					 __u64 now, const struct sl_settings *set, __u8 *mode,
					 __u32 hint)
{
	struct sl_tenant_key tk = { .family = s->family, .port = dport };
	struct sl_tenant *t;
	struct sl_bucket *st;
	struct charge_out co;
	__u32 *id, tid = hint;
	__u64 *demand;

	if (!set->n_tenants)
		return CHARGE_OK;
	/* Host or SNI named the tenant (stateless front); else its address and port do. */
	if (hint >= SL_MAX_TENANTS) {
		__builtin_memcpy(tk.addr, s->daddr, 16);
		id = bpf_map_lookup_elem(&sl_tenant_keys, &tk);
		if (!id)
			return CHARGE_OK;
		tid = *id;
	}
	t = bpf_map_lookup_elem(&sl_tenants, &tid);
	st = bpf_map_lookup_elem(&sl_tenant_state, &tid);
	if (!t || !st || !t->valid)
		return CHARGE_OK;
	*mode = t->mode;
	demand = bpf_map_lookup_elem(&sl_tenant_demand, &tid);
	if (demand)
		*demand += cost; /* per CPU: no atomic needed */
	return sl_charge_tat(st, now < t->lease_expires_ns ? &t->lease : &t->fallback, cost, now,
			     &co);
}

/* Judge one SYN to a protected port (a global function: see struct pkt). */
__noinline int sl_judge_syn(const struct pkt *pk, const struct sl_settings *set, __u64 now,
			    struct decision *d)
{
	const struct src *s;
	__u32 zero = 0, *vcount;
	__u16 dport;

	if (!pk || !d)
		return 0;
	if (!set) {
		d->class_id = SL_CLASS_NONE;
		d->reason = SL_R_STATE_ERROR;
		return 0;
	}
	s = &pk->s;
	dport = pk->dport;
	struct sl_class_policy *pol;
	struct sl_bucket *pb = NULL, *qb = NULL;
	struct sl_counters *cnt;
	__u64 pinc = 0, qinc = 0, cost = pk->cost;
	__u32 cls = classify(s, set);
	__u8 plen, parent, tmode = SL_MODE_ENFORCE;
	int rc;

	d->action = pk->action;
	pol = policy_of(&cls, set);
	if (!pol) {
		d->class_id = SL_CLASS_NONE;
		d->reason = SL_R_STATE_ERROR;
		return 0;
	}
	d->class_id = cls;
	cnt = bpf_map_lookup_elem(&sl_stats, &cls);
	if (s->family == SL_FAM_V4) {
		plen = pol->v4_prefix;
		parent = pol->v4_parent;
	} else {
		plen = pol->v6_prefix;
		parent = pol->v6_parent;
	}
	make_key(&d->key, s, plen, SL_LEVEL_PREFIX, cls);

	vcount = bpf_map_lookup_elem(&sl_vcount, &zero);
	if (vcount && *vcount) {
		struct sl_lpm_key lk;
		struct sl_verdict *v;

		lpm_key_of(&lk, s);
		v = bpf_map_lookup_elem(&sl_verdicts, &lk);
		/* An expired verdict stops applying here, whether or not anyone swept it. */
		if (v && now < v->expires_ns) {
			if (v->action == SL_VERDICT_BLOCK) {
				d->action = SL_ACT_DROP;
				d->reason = SL_R_SHED_VERDICT;
				return 0;
			}
			if (v->action == SL_VERDICT_REPLY) {
				d->reason = SL_R_SHED_VERDICT;
				return 0;
			}
			if (v->action == SL_VERDICT_TIGHTEN && v->factor > 0 && v->factor < 1000)
				cost = cost * 1000 / v->factor; /* rate and burst x factor */
		}
	}

	rc = charge(&d->key, &pol->prefix, cost, now, set, cnt, &pb, &pinc);
	if (rc == CHARGE_NOSTATE) {
		d->reason = SL_R_STATE_ERROR;
		return 0;
	}
	if (rc != CHARGE_OK) {
		d->reason = pol->mode == SL_MODE_MONITOR ? SL_R_WOULD_SHED_PREFIX : SL_R_SHED_PREFIX;
		return 0;
	}
	{
		struct sl_bkey pk;

		make_key(&pk, s, parent, SL_LEVEL_PARENT, cls);
		rc = charge(&pk, &pol->parent, cost, now, set, cnt, &qb, &qinc);
	}
	if (rc == CHARGE_NOSTATE) {
		d->reason = SL_R_STATE_ERROR;
		return 0;
	}
	if (rc != CHARGE_OK) {
		/* The prefix is not to blame for its parent's flood: give back what it paid. */
		refund(pb, pinc);
		d->reason = pol->mode == SL_MODE_MONITOR ? SL_R_WOULD_SHED_PARENT : SL_R_SHED_PARENT;
		return 0;
	}
	if (charge_tenant(s, dport, cost, now, set, &tmode, pk->tenant) != CHARGE_OK) {
		/* The tenant's budget ran out: the source paid for nothing. */
		refund(pb, pinc);
		refund(qb, qinc);
		d->reason = tmode == SL_MODE_MONITOR ? SL_R_WOULD_SHED_TENANT : SL_R_SHED_TENANT;
		return 0;
	}
	d->reason = SL_R_PASSED;
	return 0;
}

/* Retry-After for a 429 to @s now: the prefix's streak picks the level, then +-20 % jitter. */
__noinline int sl_retry_after(const struct src *s, const struct sl_settings *set, __u64 now,
			      struct decision *d)
{
	struct sl_class_policy *pol;
	struct sl_bucket *b;
	__u32 cls, level = 0, base, ticks = now >> 30, streak = 0, n;

	if (!s || !set || !d)
		return 1;
	cls = classify(s, set);
	n = set->n_retry_levels;
	pol = policy_of(&cls, set);
	d->class_id = pol ? cls : SL_CLASS_NONE;
	if (pol) {
		make_key(&d->key, s, s->family == SL_FAM_V4 ? pol->v4_prefix : pol->v6_prefix,
			 SL_LEVEL_PREFIX, cls);
		b = bpf_map_lookup_elem(&sl_buckets, &d->key);
		if (b) {
			/* Racy read-modify-write: two concurrent 429s may climb one step, not two. */
			if (ticks - b->last_shed_s <= set->streak_decay_s)
				streak = b->streak;
			b->streak = streak + 1;
			b->last_shed_s = ticks;
		}
	}
	if (n == 0 || n > SL_MAX_RETRY_LEVELS)
		n = 1;
	level = streak < n ? streak : n - 1;
	base = set->retry_after[level & (SL_MAX_RETRY_LEVELS - 1)];
	if (!base)
		base = 1;
	/* 80 %..120 %: throttled clients must not come back in step. */
	base = base * (800 + bpf_get_prandom_u32() % 401) / 1000;
	return base ? (__u16)(base > 65535 ? 65535 : base) : 1;
}

static __always_inline void conn_key_of(struct sl_conn_key *ck, const struct src *s,
					__u16 sport, __u16 dport)
{
	__builtin_memset(ck, 0, sizeof(*ck));
	ck->family = s->family;
	ck->sport = sport;
	ck->dport = dport;
	__builtin_memcpy(ck->saddr, s->saddr, 16);
	__builtin_memcpy(ck->daddr, s->daddr, 16);
}

/* Fill the parts of a reply that mirror the incoming frame. */
static __always_inline int reply_from(struct reply *r, const struct xdp_md *ctx,
				      const struct pkt *pk)
{
	void *data = xdp_data(ctx), *end = xdp_data_end(ctx);
	__u8 *p = data;

	if ((void *)(p + 22) > end)
		return -1;
	__builtin_memcpy(r->dmac, p + 6, 6);
	__builtin_memcpy(r->smac, p, 6);
	r->n_vlan = pk->n_vlan;
	if (pk->n_vlan > 0) {
		r->vlan[0] = *(__be16 *)(p + 12);
		r->vlan[1] = *(__be16 *)(p + 14);
	}
	if (pk->n_vlan > 1) {
		r->vlan[2] = *(__be16 *)(p + 16);
		r->vlan[3] = *(__be16 *)(p + 18);
	}
	r->family = pk->s.family;
	__builtin_memcpy(r->saddr, pk->s.daddr, 16);
	__builtin_memcpy(r->daddr, pk->s.saddr, 16);
	r->sport = bpf_htons(pk->dport);
	r->dport = bpf_htons(pk->sport);
	return 0;
}

static __always_inline void outcome(void *map, __u32 idx, int shed)
{
	struct sl_outcome *o = bpf_map_lookup_elem(map, &idx);

	if (o) {
		if (shed)
			o->shed++;
		else
			o->admitted++;
	}
}

/*
 * Stateless front: what does this first request cost, and whose is it? Reads the request
 * line and Host (or the SNI) and looks them up; anything unreadable keeps the port's default
 * cost and the destination's tenant. Fills pk->cost and pk->tenant; returns the route id
 * (SL_EDGE_ROUTES when none).
 */
__noinline int sl_route_request(struct xdp_md *ctx, struct pkt *pk,
				const struct sl_settings *set)
{
	struct sl_route_val *rv;
	struct req_scratch *rs;
	__u32 zero = 0, off, len, route = SL_EDGE_ROUTES, *tid;
	void *data = xdp_data(ctx), *end = xdp_data_end(ctx);
	int got;

	if (!ctx || !pk || !set)
		return SL_EDGE_ROUTES;
	pk->cost = pk->cost ? pk->cost : 1;
	pk->tenant = SL_TENANT_BY_DEST;
	rs = bpf_map_lookup_elem(&sl_reqbuf, &zero);
	if (!rs)
		return route;
	off = pk->th_off + pk->doff * 4;
	len = pk->payload;
	if (off + len > (__u32)(end - data))
		len = (__u32)(end - data) > off ? (__u32)(end - data) - off : 0;
	if (len > SL_REQ_SCAN)
		len = SL_REQ_SCAN;
	if (len == 0 || off > 0xffff)
		return route;
	if (bpf_xdp_load_bytes(ctx, off, rs->rb.b, len))
		return route;
	__builtin_memset(&rs->rk, 0, sizeof(rs->rk));
	__builtin_memset(&rs->hk, 0, sizeof(rs->hk));
	if (pk->proto == SL_PROTO_TLS)
		got = sl_parse_sni(&rs->rb, len, &rs->hk);
	else
		got = sl_parse_http(&rs->rb, len, &rs->rk, &rs->hk);

	if (got & REQ_LINE) {
		/* Any-method routes are written under every method: one lookup. */
		rv = bpf_map_lookup_elem(&sl_routes, &rs->rk);
		if (rv) {
			pk->cost = rv->cost;
			route = rv->route_id < SL_EDGE_ROUTES ? rv->route_id : SL_EDGE_ROUTES;
		}
	}
	if (got & REQ_HOST) {
		tid = bpf_map_lookup_elem(&sl_hosts, &rs->hk);
		pk->tenant = tid ? *tid : set->default_tenant;
	}
	if (pk->tenant >= SL_MAX_TENANTS)
		pk->tenant = SL_TENANT_BY_DEST;
	return route;
}

/*
 * A non-SYN segment to a `reply` port (SYN front) or to a stateless-front port.
 *
 * SYN front: ours only if it belongs to a cookie connection (one that was shed at its SYN);
 * else the kernel's. Stateless front: every connection starts as ours; its first request is
 * decided here, and admitted ones go on to the TC program that hands them to the listener.
 * Either way the cookie's marker bits send 15 of 16 segments of established connections on
 * their way without a hash.
 */
__noinline int sl_cookie_segment(struct xdp_md *ctx, struct pkt *pk)
{
	const struct sl_settings *set;
	const struct src *s;
	__u32 payload;
	struct sl_cookie_keys *keys;
	struct sl_conn *conn = NULL;
	struct req_scratch *ws;
	struct reply *rp;
	__u32 zero = 0, ack, seq;
	__u16 sport, dport;
	__u8 fin, rst;
	__u64 now;
	int act, looked = 0, marked;

	if (!ctx || !pk)
		return XDP_PASS;
	s = &pk->s;
	payload = pk->payload;
	sport = pk->sport;
	dport = pk->dport;
	fin = pk->flags & TF_FIN;
	rst = pk->flags & 0x04;
	if (!(pk->flags & TF_ACK))
		return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);
	keys = bpf_map_lookup_elem(&sl_cookie_keys, &zero);
	if (!keys)
		return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);
	ack = pk->ack;
	seq = pk->seq;
	now = bpf_ktime_get_coarse_ns();
	marked = sl_cookie_marked(ack - 1, now, keys);
	/* The fast way out: no cookie connection in any state ends in this ack. */
	if (!marked && !sl_cookie_marked(ack - SL_429_LEN - 1, now, keys) &&
	    !sl_cookie_marked(ack - SL_429_LEN - 2, now, keys) &&
	    !sl_cookie_marked(ack - 2, now, keys))
		return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);

	set = bpf_map_lookup_elem(&sl_settings, &zero);
	rp = bpf_map_lookup_elem(&sl_scratch, &zero);
	ws = bpf_map_lookup_elem(&sl_reqbuf, &zero);
	if (!set || !rp || !ws)
		return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);
	__builtin_memset(rp, 0, sizeof(*rp));
	__builtin_memset(&ws->d, 0, sizeof(ws->d));
	conn_key_of(&ws->ck, s, sport, dport);

	if (marked) {
		__builtin_memset(&ws->id, 0, sizeof(ws->id));
		ws->id.family = s->family;
		ws->id.sport = sport;
		ws->id.dport = dport;
		ws->id.isn = seq - 1;
		__builtin_memcpy(ws->id.saddr, s->saddr, 16);
		__builtin_memcpy(ws->id.daddr, s->daddr, 16);
		if (sl_cookie_ok(&ws->id, ack - 1, now, keys, &ws->o)) {
			/* The handshake's own ACK, or a reset of it: nothing to answer. */
			if (rst)
				return record(SL_CLASS_NONE, SL_R_COOKIE_DROP, XDP_DROP);
			if (!payload && !fin)
				return record(SL_CLASS_NONE, SL_R_COOKIE_ACK, XDP_DROP);
			/* A first segment decided before (a retransmission) is never decided
			 * twice: one charge, and at most one 429, per connection. */
			conn = bpf_map_lookup_elem(&sl_conns, &ws->ck);
			looked = 1;
			if (!conn || now >= conn->expires_ns) {
				conn = NULL;
				if (reply_from(rp, ctx, pk))
					return XDP_DROP;
				if (payload && pk->front == SL_FRONT_STATELESS) {
					struct sl_conn c = { .expires_ns = now + SL_CONN_TTL_NS };
					__u32 route = (__u32)sl_route_request(ctx, pk, set);
					__u32 tix = pk->tenant < SL_MAX_TENANTS ? pk->tenant :
						    SL_MAX_TENANTS;

					sl_judge_syn(pk, set, now, &ws->d);
					if (!is_shed(ws->d.reason)) {
						c.state = SL_CONN_ADMITTED;
						bpf_map_update_elem(&sl_conns, &ws->ck, &c, BPF_ANY);
						outcome(&sl_route_stats, route, 0);
						outcome(&sl_tenant_stats, tix, 0);
						/* Monitor-mode verdicts are counted too. */
						if (ws->d.reason != SL_R_PASSED)
							record(ws->d.class_id, ws->d.reason, XDP_PASS);
						return record(ws->d.class_id, SL_R_FIRST_ADMITTED, XDP_PASS);
					}
					outcome(&sl_route_stats, route, 1);
					outcome(&sl_tenant_stats, tix, 1);
					emit_event(set, s, &ws->d.key, ws->d.class_id, ws->d.reason, ws->d.action, dport,
						   0, now);
					if (ws->d.action != SL_ACT_REPLY) {
						c.state = SL_CONN_SHED;
						bpf_map_update_elem(&sl_conns, &ws->ck, &c, BPF_ANY);
						return record(ws->d.class_id, ws->d.reason, XDP_DROP);
					}
					record(ws->d.class_id, ws->d.reason, -1); /* count; the 429 follows */
				}
				if (payload) {
					/* The first request of a shed connection: one 429 with
					 * FIN, and remember the connection so that its leftovers
					 * are absorbed. */
					struct sl_conn c = {};

					rp->kind = REPLY_429;
					rp->seq = ack;
					rp->ack = seq + payload + (fin ? 1 : 0);
					rp->retry_after = (__u16)sl_retry_after(s, set, now, &ws->d);
					c.our_next = ack + SL_429_LEN + 1;
					c.their_next = seq + payload + (fin ? 1 : 0);
					c.expires_ns = now + SL_CONN_TTL_NS;
					c.state = SL_CONN_SHED;
					bpf_map_update_elem(&sl_conns, &ws->ck, &c, BPF_ANY);
					emit_event(set, s, &ws->d.key, ws->d.class_id, SL_R_REPLIED_429,
						   SL_ACT_REPLY, dport, rp->retry_after, now);
					act = sl_emit_reply(ctx, rp);
					return record(ws->d.class_id, SL_R_REPLIED_429, act);
				}
				/* A FIN straight after the handshake: close our side too. */
				{
					struct sl_conn c = { .our_next = ack + 1,
							     .their_next = seq + 1,
							     .expires_ns = now + SL_CONN_TTL_NS,
							     .state = SL_CONN_SHED };

					bpf_map_update_elem(&sl_conns, &ws->ck, &c, BPF_ANY);
				}
				rp->kind = REPLY_FINACK;
				rp->seq = ack;
				rp->ack = seq + 1;
				act = sl_emit_reply(ctx, rp);
				return record(SL_CLASS_NONE, SL_R_COOKIE_FIN, act);
			}
		}
	}

	/* A decided connection's other segments: racing ones of an admitted first burst pass;
	 * after a 429, the client's ACKs and resets are absorbed and its FIN acknowledged. */
	if (!looked)
		conn = bpf_map_lookup_elem(&sl_conns, &ws->ck);
	if (conn && now < conn->expires_ns) {
		if (conn->state == SL_CONN_ADMITTED)
			return record(SL_CLASS_NONE, SL_R_RACE_PASS, XDP_PASS);
		if (fin && !rst) {
			if (reply_from(rp, ctx, pk))
				return XDP_DROP;
			rp->kind = REPLY_ACK;
			rp->seq = conn->our_next;
			rp->ack = seq + payload + 1;
			act = sl_emit_reply(ctx, rp);
			return record(SL_CLASS_NONE, SL_R_COOKIE_FIN, act);
		}
		return record(SL_CLASS_NONE, SL_R_COOKIE_DROP, XDP_DROP);
	}

	/*
	 * Marked like our cookie but not one: a forged or stale ACK, or (one time in sixteen) a
	 * segment of an established connection. Only a socket lookup tells them apart, and
	 * only these few segments pay for it. Forgeries are dropped in silence, so the cookie
	 * space answers no questions and creates nothing.
	 */
	if (marked) {
		struct bpf_sock_tuple t = {};
		struct bpf_sock *sk;
		int established = 0;

		if (s->family == SL_FAM_V4) {
			__builtin_memcpy(&t.ipv4.saddr, s->saddr, 4);
			__builtin_memcpy(&t.ipv4.daddr, s->daddr, 4);
			t.ipv4.sport = bpf_htons(sport);
			t.ipv4.dport = bpf_htons(dport);
			sk = bpf_skc_lookup_tcp(ctx, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
		} else {
			__builtin_memcpy(t.ipv6.saddr, s->saddr, 16);
			__builtin_memcpy(t.ipv6.daddr, s->daddr, 16);
			t.ipv6.sport = bpf_htons(sport);
			t.ipv6.dport = bpf_htons(dport);
			sk = bpf_skc_lookup_tcp(ctx, &t, sizeof(t.ipv6), BPF_F_CURRENT_NETNS, 0);
		}
		if (sk) {
			established = sk->state != BPF_TCP_LISTEN;
			bpf_sk_release(sk);
		}
		if (!established)
			return record(SL_CLASS_NONE, SL_R_COOKIE_BAD, XDP_DROP);
	}
	return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);
}

/* Answer a shed SYN on a `reply` port with a cookie SYN-ACK. */
__noinline int sl_send_synack(struct xdp_md *ctx, const struct pkt *pk)
{
	const struct sl_settings *set;
	const struct src *s;
	struct sl_cookie_keys *keys;
	struct sl_cookie_opts o = {};
	struct sl_conn_id id = {};
	struct reply *rp;
	__u16 mss;
	__u32 zero = 0;
	__u8 ws, sack;
	int i;

	__u64 now = bpf_ktime_get_coarse_ns();

	if (!ctx || !pk)
		return XDP_DROP;
	s = &pk->s;
	set = bpf_map_lookup_elem(&sl_settings, &zero);
	keys = bpf_map_lookup_elem(&sl_cookie_keys, &zero);
	rp = bpf_map_lookup_elem(&sl_scratch, &zero);
	if (!set || !keys || !rp || (!keys->cur[0] && !keys->cur[1]))
		return XDP_DROP; /* no key yet: drop, as a drop port would */
	__builtin_memset(rp, 0, sizeof(*rp));
	parse_syn_opts(ctx, pk->th_off, pk->doff, &mss, &ws, &sack);
	/* The largest table MSS the client can take. */
#pragma unroll
	for (i = 7; i > 0; i--)
		if (sl_mss_tab[i] <= mss)
			break;
	o.mss_idx = i;
	o.wscale = ws;
	o.sack = sack;

	id.family = s->family;
	id.sport = pk->sport;
	id.dport = pk->dport;
	id.isn = pk->seq;
	__builtin_memcpy(id.saddr, s->saddr, 16);
	__builtin_memcpy(id.daddr, s->daddr, 16);

	if (reply_from(rp, ctx, pk))
		return XDP_DROP;
	rp->kind = REPLY_SYNACK;
	rp->seq = (__u32)sl_cookie_new(&id, now, &o, keys);
	rp->ack = id.isn + 1;
	rp->mss = s->family == SL_FAM_V4 ? set->mss4 : set->mss6;
	if (!rp->mss)
		rp->mss = 536;
	rp->ws = ws;
	rp->sack = sack;
	return sl_emit_reply(ctx, rp);
}

static __always_inline void fill_tcp(struct pkt *pk, const struct xdp_md *ctx,
				     const struct tcphdr *th)
{
	pk->th_off = (__u32)((const void *)th - xdp_data(ctx));
	pk->seq = bpf_ntohl(th->seq);
	pk->ack = bpf_ntohl(th->ack_seq);
	pk->sport = bpf_ntohs(th->source);
	pk->dport = bpf_ntohs(th->dest);
	pk->flags = ((const __u8 *)th)[13];
	pk->doff = th->doff;
}

SEC("xdp")
int sluice_xdp(struct xdp_md *ctx)
{
	struct cursor c = { .pos = xdp_data(ctx), .end = xdp_data_end(ctx) };
	struct sl_settings *set;
	struct sl_port *port;
	struct iphdr *iph = NULL;
	struct ipv6hdr *ip6 = NULL;
	struct tcphdr *th;
	struct seg_scratch *ss;
	struct pkt *pk;
	struct src *sp;
	struct decision *d;
	__u32 zero = 0, dport, l4len, n_vlan;
	void *l3;
	int proto, reason;
	__u64 now;

	proto = parse_eth(&c);
	if (proto < 0)
		goto malformed;
	l3 = c.pos;
	n_vlan = ((__u32)(l3 - xdp_data(ctx)) - 14) >> 2;
	if (proto == bpf_htons(ETH_P_IP)) {
		proto = parse_ip4(&c, &iph);
		if (proto < 0)
			goto malformed;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		proto = parse_ip6(&c, &ip6);
		if (proto < 0)
			goto malformed;
	} else {
		return record(SL_CLASS_NONE, SL_R_NOT_PROTECTED, XDP_PASS);
	}
	if (proto != IPPROTO_TCP)
		return record(SL_CLASS_NONE, SL_R_NOT_PROTECTED, XDP_PASS);
	proto = parse_tcp(&c, &th);
	if (proto < 0)
		goto malformed;

	dport = bpf_ntohs(th->dest);
	port = bpf_map_lookup_elem(&sl_ports, &dport);
	if (!port || !port->protected)
		return record(SL_CLASS_NONE, SL_R_NOT_PROTECTED, XDP_PASS);
	if (!th->syn || th->ack) {
		struct sl_cookie_keys *keys;
		__u32 ack;

		if ((port->action != SL_ACT_REPLY && port->front != SL_FRONT_STATELESS) ||
		    th->syn || !th->ack)
			return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);
		/* Established traffic on a cookie port leaves here, on four compares: no
		 * cookie connection in any state ends in this ack. */
		keys = bpf_map_lookup_elem(&sl_cookie_keys, &zero);
		ack = bpf_ntohl(th->ack_seq);
		if (!keys || (!sl_cookie_marked_any(ack - 1, keys) &&
			      !sl_cookie_marked_any(ack - SL_429_LEN - 1, keys) &&
			      !sl_cookie_marked_any(ack - SL_429_LEN - 2, keys) &&
			      !sl_cookie_marked_any(ack - 2, keys)))
			return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);
	}

	/* Only segments sluice judges get this far: everything above touched no state and
	 * zeroed nothing, which is most of what keeps the fast path fast. */
	ss = bpf_map_lookup_elem(&sl_segs, &zero);
	if (!ss)
		return record(SL_CLASS_NONE, SL_R_STATE_ERROR, XDP_PASS);
	__builtin_memset(ss, 0, sizeof(*ss));
	pk = &ss->pk;
	d = &ss->d;
	sp = &pk->s;
	pk->n_vlan = n_vlan;
	if (iph) {
		sp->family = SL_FAM_V4;
		__builtin_memcpy(sp->saddr, &iph->saddr, 4);
		__builtin_memcpy(sp->daddr, &iph->daddr, 4);
		l4len = bpf_ntohs(iph->tot_len);
		l4len = l4len > iph->ihl * 4 ? l4len - iph->ihl * 4 : 0;
	} else if (ip6) {
		__u32 ext = (__u32)((void *)th - (void *)(ip6 + 1));

		sp->family = SL_FAM_V6;
		__builtin_memcpy(sp->saddr, &ip6->saddr, 16);
		__builtin_memcpy(sp->daddr, &ip6->daddr, 16);
		/* Payload length counts extension headers, which the cursor has walked-> */
		l4len = bpf_ntohs(ip6->payload_len);
		l4len = l4len > ext ? l4len - ext : 0;
	} else {
		return record(SL_CLASS_NONE, SL_R_STATE_ERROR, XDP_PASS);
	}
	fill_tcp(pk, ctx, th);
	pk->front = port->front;
	pk->proto = port->proto;
	pk->action = port->action;
	pk->cost = port->cost;
	pk->tenant = SL_TENANT_BY_DEST;
	if (!th->syn || th->ack) {
		/* The IP length, not the frame length: Ethernet may pad short frames. */
		pk->payload = l4len > th->doff * 4 ? l4len - th->doff * 4 : 0;
		return sl_cookie_segment(ctx, pk);
	}

	/* Settings are read only from here on: the fast path above never needs them. */
	set = bpf_map_lookup_elem(&sl_settings, &zero);
	if (!set)
		return record(SL_CLASS_NONE, SL_R_STATE_ERROR, XDP_PASS);
	now = bpf_ktime_get_coarse_ns();
	/* Stateless front: every SYN gets a cookie; the decision waits for the request. */
	if (port->front == SL_FRONT_STATELESS)
		return record(SL_CLASS_NONE, SL_R_HANDSHAKE, sl_send_synack(ctx, pk));
	sl_judge_syn(pk, set, now, d);
	switch (d->reason) {
	case SL_R_SHED_PREFIX:
	case SL_R_SHED_PARENT:
	case SL_R_SHED_TENANT:
	case SL_R_SHED_VERDICT:
		emit_event(set, sp, &d->key, d->class_id, d->reason, d->action, (__u16)dport, 0, now);
		if (d->action == SL_ACT_REPLY)
			return record(d->class_id, d->reason, sl_send_synack(ctx, pk));
		return record(d->class_id, d->reason, XDP_DROP);
	case SL_R_WOULD_SHED_PREFIX:
	case SL_R_WOULD_SHED_PARENT:
	case SL_R_WOULD_SHED_TENANT:
		/* Monitor mode: sampled like a shed, so an operator sees which prefixes it
		 * would have shed (sluicectl events, top) before enforcing. */
		emit_event(set, sp, &d->key, d->class_id, d->reason, d->action, (__u16)dport, 0, now);
		return record(d->class_id, d->reason, XDP_PASS);
	default:
		return record(d->class_id, d->reason, XDP_PASS);
	}

malformed:
	reason = -proto;
	set = bpf_map_lookup_elem(&sl_settings, &zero);
	if (!set)
		return record(SL_CLASS_NONE, reason, XDP_PASS);
	if (reason == SL_R_FRAGMENT)
		return record(SL_CLASS_NONE, reason, set->fragment_action == SL_ACT_DROP ? XDP_DROP : XDP_PASS);
	return record(SL_CLASS_NONE, reason, set->malformed_action == SL_ACT_DROP ? XDP_DROP : XDP_PASS);
}
