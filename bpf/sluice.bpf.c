// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * sluice edge datapath: verify, then charge, then shed.
 *
 * A source address is an assertion until the source has answered us: a bare SYN can carry
 * anyone's address, so no SYN charges a bucket here. Every charge (the source prefix, its
 * parent, the tenant, and the demand the tenant's lease follows) waits for a segment that
 * proves the source receives what we send:
 *  - stateless front (the default): every SYN gets a SYN-ACK whose sequence number is our own
 *    keyed cookie; the first request, which must carry ack = cookie + 1, is read (route,
 *    Host or SNI), charged and either handed to the listener (by the TC program in
 *    handoff.bpf.c) or answered with one `HTTP/1.1 429` segment and FIN, or dropped.
 *  - SYN front (kernels without the hand-off kfunc, or by choice): a SYN whose buckets have
 *    room is passed to the kernel, which answers it; the charge lands on the segment that
 *    completes the handshake, checked against the kernel's own request socket (its ISN) or
 *    SYN cookie. A SYN whose buckets are already empty is shed at once (dropped, or on a
 *    `reply` port answered with our cookie and then the 429): looking costs nothing, and
 *    only proven sources empty a bucket.
 * Replies go only where the kernel would answer: to unicast sources that are neither martian
 * nor our own, from an address this node serves (sl_local), never to SYN|FIN or SYN|RST.
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

#include "cookie_mac.h"
#include "sluice/gcra.h"
#include "sluice/hash.h"
#include "parse.h"
#include "maps.h"
#include "reply.h"
#include "request.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Load-time constants: bucket sets - 1 and SYN-front pending slots - 1 (powers of two). Set by
 * sluiced before load. */
const volatile __u32 bucket_mask = 16383;
const volatile __u32 pend_mask = 65535;

/* The kernel's request socket, for the two numbers the SYN front checks a handshake against
 * (CO-RE: the offsets come from the running kernel's BTF). */
struct tcp_request_sock___sl {
	__u32 rcv_isn;
	__u32 snt_isn;
} __attribute__((preserve_access_index));

/* Replies are built in a per-CPU scratch slot: on the stack they would take the frame of
 * the reply paths past the verifier's 512-byte limit for a call chain. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct reply);
} sl_scratch SEC(".maps");

static const __u16 sl_mss_tab[8] = SL_COOKIE_MSS;

#define NS_PER_S 1000000000ull

/*
 * The clock: CLOCK_MONOTONIC_COARSE in ns, as userspace reads it (TATs, expiries, cookie
 * slots), for the price of a jiffies load. The coarse clock only moves at a tick, in the same
 * kernel path that advances jiffies (tick_do_update_jiffies64, then update_wall_time), so
 * each CPU keeps the value it read at the first packet of its current jiffy and reads the
 * coarse clock again only when jiffies moves: once a tick (4 ms at HZ=250) instead of on
 * every packet (a helper call, ~20 ns here; jiffies64 is inlined by the verifier). A refresh
 * that finds the coarse time where this CPU last saw it has landed between the two updates:
 * it keeps its old jiffies, so the next packet asks again. Only a CPU whose last look is
 * older than the previous tick can take that window's value for the new tick: one tick
 * behind for one tick, never backwards (docs/design.md, "The clock").
 */
struct sl_clock {
	__u64 jiffies;
	__u64 ns;
	__u64 secs; /* ns / NS_PER_S: the division once a tick, not once a SYN */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_clock);
} sl_clock_cache SEC(".maps");

/* sl_now(), and in @secs its whole seconds (what the pending slots and tags keep). */
static __always_inline __u64 sl_now_secs(__u32 *secs)
{
	__u32 zero = 0;
	struct sl_clock *c = bpf_map_lookup_elem(&sl_clock_cache, &zero);
	__u64 j = bpf_jiffies64();

	if (!c) {
		__u64 t = bpf_ktime_get_coarse_ns();

		*secs = (__u32)(t / NS_PER_S);
		return t;
	}
	if (c->jiffies != j) {
		__u64 t = bpf_ktime_get_coarse_ns();

		if (t != c->ns)
			c->jiffies = j;
		c->ns = t;
		c->secs = t / NS_PER_S;
	}
	*secs = (__u32)c->secs;
	return c->ns;
}

static __always_inline __u64 sl_now(void)
{
	__u32 secs;

	return sl_now_secs(&secs);
}

/* What a cookie check is asked: the ack - 1, and the timestamp echo if there is one. */
struct cookie_q {
	__u32 iss;
	__u32 ts;
	__u32 tsecr;
};

/* How long a shed connection keeps absorbing its own segments, and how long an admitted one is
 * remembered: its racing segments pass until the kernel's socket takes over, and a
 * retransmission of its first request (sent only while the kernel's ACK has not arrived,
 * i.e. within a few retransmission timeouts) is passed, never judged again. */
#define SL_SHED_TTL_NS (10ull * 1000000000ull)
#define SL_SHED_TTL_S 10u
#define SL_RACE_TTL_S 10u

/*
 * The addresses 8-byte aligned: the datapath reads them as words (the keys, the pending
 * slot, the local-address cache, the martian checks), and clang reads an array it cannot
 * prove aligned one byte at a time (an 8-byte read was 8 loads and 14 shifts and ors; right
 * after the family byte every address sat at an odd offset). The family stays first: with
 * it moved after the addresses (no padding) both 429 paths ran 70-190 ns slower in
 * xdp_cost, not explained; this layout did not.
 */
struct src {
	__u8 family;
	__u8 saddr[16] __attribute__((aligned(8))); /* IPv4 in the first 4 bytes */
	__u8 daddr[16];
};

/*
 * @a, one of the addresses of a struct src, said to be 8-byte aligned (which it is): through a
 * plain `__u8 *` clang assumes nothing and copies a word out of it one byte at a time.
 */
static __always_inline const __u8 *src_addr(const __u8 *a)
{
	return __builtin_assume_aligned(a, 8);
}

/*
 * Store an address of a struct src as the two 8-byte words it is read back as (words in
 * network order, as they lay in the header). Narrower stores under a wider load stall that
 * load until the stores retire (no store-to-load forwarding).
 */
static __always_inline void put_addr(__u8 *dst, __u32 w0, __u32 w1, __u32 w2, __u32 w3)
{
	__u64 *d = __builtin_assume_aligned(dst, 8);

	d[0] = (__u64)w0 | (__u64)w1 << 32;
	d[1] = (__u64)w2 | (__u64)w3 << 32;
}

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
	__u32 ip_off;   /* offset of the IP header */
	__u32 payload;  /* TCP payload bytes, from the IP length */
	__u32 seq, ack; /* host order */
	__u32 n_vlan;
	__u16 sport, dport;
	__u8 flags;     /* TCP flags byte */
	__u8 doff;
	__u8 front;     /* the port's: enum sl_front */
	__u8 proto;     /* enum sl_proto */
	__u8 action;    /* enum sl_action */
	__u8 frag;      /* enum frag_kind */
	__u8 ts;        /* the segment carries TSopt (parsed on the paths that need it) */
	__u8 pad;
	__u32 tsval, tsecr;
	__u32 cost;     /* what this segment's decision charges (port default, or its route) */
	__u32 port_cost;/* the port's `cost` */
	__u32 unreadable_cost;
	__u32 tenant;   /* tenant id from Host/SNI; SL_TENANT_BY_DEST: by destination */
	__u32 iss;      /* our initial sequence number on this connection, once proven */
	__u32 our_tsval;/* our timestamp on it (what the client echoes) */
	__u32 stage;    /* enum stage: what sl_decide() is to decide */
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

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "key_words builds a key's first word as little-endian: family in the lowest byte"
#endif

/*
 * The key of @s at @plen, @level and @class_id, as the three words sl_key_hash reads from a
 * struct sl_bkey (kept in registers: hashing the key back from memory reloaded it byte by
 * byte, the struct being byte-aligned), and stored at @k. Keys are /64 or shorter (abi.h),
 * so the first two words of the address are all of it.
 */
static __always_inline void make_key_words(struct sl_bkey *k, __u32 *kw, const struct src *s,
					   __u8 plen, __u8 level, __u8 class_id)
{
	__u32 w[2];

	__builtin_memcpy(w, src_addr(s->saddr), sizeof(w));
	kw[0] = (__u32)s->family | (__u32)plen << 8 | (__u32)level << 16 | (__u32)class_id << 24;
	kw[1] = mask_word(w[0], plen, 0);
	kw[2] = mask_word(w[1], plen, 1);
	/* Every key built here is a struct decision's, 4-byte aligned (see there): said so,
	 * the copy is three word stores instead of twelve byte stores and their shifts. */
	__builtin_memcpy(__builtin_assume_aligned(k, 4), kw, sizeof(*k));
}

static __always_inline void lpm_key_of(struct sl_lpm_key *lk, const __u8 *addr, __u8 family)
{
	addr = src_addr(addr);
	lk->prefixlen = 128;
	if (family == SL_FAM_V4) {
		__builtin_memset(lk->addr, 0, 10);
		lk->addr[10] = 0xff;
		lk->addr[11] = 0xff;
		__builtin_memcpy(&lk->addr[12], addr, 4);
	} else {
		__builtin_memcpy(lk->addr, addr, 16);
	}
}

/*
 * The source's class: one load from the /24 table for IPv4, one to nine dependent loads from
 * the IPv6 table (abi.h) for IPv6; the LPM trie only for the IPv4 /24s and IPv6 /48s that
 * hold a longer row. Sources in no row get the unknown class.
 */
static __always_inline __u32 classify(const struct src *s, const struct sl_settings *set,
				      struct sl_lpm_key *lk)
{
	__u32 slot = set->asn_slot & 1;
	struct sl_asn_val *av;
	void *trie;

	if (s->family == SL_FAM_V4) {
		__u32 a, idx, cls;
		__u64 *w;

		__builtin_memcpy(&a, src_addr(s->saddr), 4);
		a = bpf_ntohl(a);
		idx = slot * SL_DIR_WORDS + (a >> 12);
		w = bpf_map_lookup_elem(&sl_asn_dir, &idx);
		if (!w)
			return set->unknown_class;
		cls = (*w >> (((a >> 8) & 15) * 4)) & 15;
		if (cls != SL_DIR_USE_TRIE)
			return cls;
	} else {
		__u32 base = slot * SL_V6_WORDS, idx = base + sl_v6_root(s->saddr), line, e = 0, i;
		struct sl_v6_line *w;

		line = idx / SL_V6_FANOUT;
		w = bpf_map_lookup_elem(&sl_asn6, &line);
		if (w)
			e = w->e[idx & (SL_V6_FANOUT - 1)];
		/* A fixed bound the verifier can see; a table never nests deeper than /48. */
		for (i = 0; w && i < SL_V6_LEVELS && (e & SL_V6_CHILD); i++) {
			idx = base + sl_v6_next(e, s->saddr, i);
			line = idx / SL_V6_FANOUT;
			w = bpf_map_lookup_elem(&sl_asn6, &line);
			if (w)
				e = w->e[idx & (SL_V6_FANOUT - 1)];
		}
		if (w && !(e & SL_V6_CHILD) && (e & 15) != SL_DIR_USE_TRIE)
			return e & 15;
	}
	lpm_key_of(lk, s->saddr, s->family);
	trie = bpf_map_lookup_elem(&sl_asn, &slot);
	if (!trie)
		return set->unknown_class;
	av = bpf_map_lookup_elem(trie, lk);
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
	__u32 peek; /* in: only say whether it would fit */
	__u32 pad;
};

/*
 * Charge @cost against the TAT at @tat with compare-and-swap, or with @peek only say whether
 * it would fit. Inlined once into sl_charge_key (a global function, checked once); the
 * tenant's charge calls it as the global sl_charge_tat: inlined three times into the
 * judgement, its retry loop multiplied the verifier's paths past its budget.
 */
static __always_inline int charge_tat(__u64 *tat, const struct sl_rate *r, __u64 cost,
				      __u64 now, struct charge_out *out)
{
	int i, peek;

	peek = out->peek;
	for (i = 0; i < SL_CAS_TRIES; i++) {
		__u64 old = *(volatile __u64 *)tat;
		__u64 next;

		if (!sl_gcra_charge(old, now, cost, r->emission_ns, r->tolerance_ns, &next)) {
			/* Persist a clamp after a clock step; one try, it is only a correction. */
			if (next != old && !peek)
				__sync_val_compare_and_swap(tat, old, next);
			return CHARGE_DENIED;
		}
		if (peek)
			return CHARGE_OK;
		if (__sync_val_compare_and_swap(tat, old, next) != old)
			continue;
		out->inc = next - (old > now ? old : now);
		out->next = next;
		return CHARGE_OK;
	}
	return CHARGE_BUSY;
}

__noinline int sl_charge_tat(__u64 *tat, const struct sl_rate *r, __u64 cost, __u64 now,
			     struct charge_out *out)
{
	if (!tat || !r || !out)
		return CHARGE_NOSTATE;
	return charge_tat(tat, r, cost, now, out);
}

_Static_assert(__builtin_offsetof(struct sl_bucket, last_shed_s) -
		       __builtin_offsetof(struct sl_bucket, streak) ==
		       __builtin_offsetof(struct sl_bshed, last_shed_s),
	       "sl_retry_after reads a tenant bucket's streak as a struct sl_bshed");

/* The set of @k's bucket and its tag (see struct sl_bucket_set). */
static __always_inline struct sl_bucket_set *bucket_set_of(const struct sl_bkey *k,
							   const struct sl_settings *set,
							   __u32 *tag)
{
	/* Only a struct decision's keys come here: 4-byte aligned (read as words, not bytes). */
	__u64 h = sl_key_hash(__builtin_assume_aligned(k, 4), set->hash_seed);
	__u32 idx = (__u32)h & bucket_mask;

	*tag = h >> 32;
	return bpf_map_lookup_elem(&sl_buckets, &idx);
}

/* The way whose tag is @tag, or SL_BUCKET_SPILL: the key has none. Tags are never 0. */
static __always_inline __u32 way_of(const struct sl_bucket_set *bs, __u32 tag)
{
	__u32 i;

#pragma unroll
	for (i = 0; i < SL_BUCKET_WAYS; i++)
		if (bs->way[i].tag == tag)
			return i;
	return SL_BUCKET_SPILL;
}

/*
 * The way a newcomer may take, or SL_BUCKET_SPILL for none: an empty or expired way first,
 * else the least spent of the ways whose key would lose nothing by being forgotten (its TAT
 * no further ahead of @now than the lead it would start with again). A spent key's way is
 * never given away, whoever asks.
 */
static __always_inline __u32 way_to_take(const struct sl_bucket_set *bs, __u64 now)
{
	__u64 low = ~0ull;
	__u32 i, victim = SL_BUCKET_SPILL;

#pragma unroll
	for (i = 0; i < SL_BUCKET_WAYS; i++) {
		__u64 t = bs->way[i].tat;

		if (!bs->way[i].tag || t <= now)
			return i;
		if (t - now <= (__u64)bs->way[i].lead << SL_LEAD_SHIFT && t < low) {
			low = t;
			victim = i;
		}
	}
	return victim;
}

/*
 * Give way @w of @bs (read as @old_tag and @old_tat) to the key tagged @tag, starting at
 * @fresh. Two compare-and-swaps: the tag, then the TAT; if the TAT moved in between (its owner
 * was charged on another CPU, and is no longer forgettable) the tag is put back and the
 * newcomer goes to the spill. Written one way at a time by index: the verifier wants a
 * constant offset for an atomic's address.
 */
static __always_inline int take_way(struct sl_bucket_set *bs, __u32 w, __u32 old_tag,
				    __u64 old_tat, __u32 tag, __u64 fresh, __u32 lead)
{
	__u32 i;

#pragma unroll
	for (i = 0; i < SL_BUCKET_WAYS; i++) {
		if (i != w)
			continue;
		if (__sync_val_compare_and_swap(&bs->way[i].tag, old_tag, tag) != old_tag)
			return 0;
		if (__sync_val_compare_and_swap(&bs->way[i].tat, old_tat, fresh) != old_tat) {
			__sync_val_compare_and_swap(&bs->way[i].tag, tag, old_tag);
			return 0;
		}
		bs->way[i].lead = lead;
		bs->shed[i].streak = 0;
		bs->shed[i].last_shed_s = 0;
		return 1;
	}
	return 0;
}

/* One bucket's charge, asked and answered through memory (a BPF function takes five
 * arguments, and these lived on the judgement's stack). */
struct charge_req {
	__u64 cost;
	__u64 now;
	__u64 inc;   /* out: what was charged, for a refund */
	__u32 peek;  /* only say whether it would fit; create nothing */
	__u32 cls;   /* the class row whose counters move */
};

/*
 * Charge (or with @q->peek, weigh) @q->cost against the bucket of @k: its own way; else a way
 * it may take, starting partly spent (new_key_credit); else, homeless, its set's spill bucket,
 * which every homeless key of the set shares. A global function, checked once: inlined for the
 * prefix and the parent it doubled the judgement's states and took its call chain past 512
 * bytes of stack.
 */
__noinline int sl_charge_key(const struct sl_bkey *k, const struct sl_rate *r,
			     struct charge_req *q)
{
	const struct sl_settings *set;
	struct sl_bucket_set *bs;
	struct sl_counters *cnt;
	struct charge_out co = {};
	__u32 zero = 0, cls, tag, w, lead;
	__u64 fresh, now, ahead, *tat;
	int rc;

	if (!k || !r || !q)
		return CHARGE_NOSTATE;
	set = bpf_map_lookup_elem(&sl_settings, &zero);
	if (!set)
		return CHARGE_NOSTATE;
	bs = bucket_set_of(k, set, &tag);
	if (!bs)
		return CHARGE_NOSTATE;
	now = q->now;
	q->inc = 0;
	fresh = sl_gcra_initial_tat(now, r->tolerance_ns, set->new_key_credit);
	ahead = (fresh - now) >> SL_LEAD_SHIFT;
	lead = ahead > 0xffffffffull ? 0xffffffffu : (__u32)ahead;
	w = way_of(bs, tag);
	if (w >= SL_BUCKET_WAYS) {
		__u32 v = way_to_take(bs, now);

		if (q->peek) {
			__u64 next, t = v < SL_BUCKET_WAYS ? fresh : bs->spill_tat;

			return sl_gcra_charge(t, now, q->cost, r->emission_ns, r->tolerance_ns,
					      &next) ? CHARGE_OK : CHARGE_DENIED;
		}
		cls = q->cls;
		cnt = bpf_map_lookup_elem(&sl_stats, &cls);
		if (v < SL_BUCKET_WAYS) {
			v &= SL_BUCKET_WAYS - 1;
			if (take_way(bs, v, bs->way[v].tag, bs->way[v].tat, tag, fresh, lead))
				w = v;
		}
		if (cnt) {
			if (w < SL_BUCKET_WAYS)
				cnt->key_new++;
			else
				cnt->key_homeless++;
		}
	} else if (!q->peek && bs->way[w & (SL_BUCKET_WAYS - 1)].lead != lead) {
		/* The policy changed since the way was taken: keep its lead the current one. */
		bs->way[w & (SL_BUCKET_WAYS - 1)].lead = lead;
	}
	tat = w < SL_BUCKET_WAYS ? &bs->way[w & (SL_BUCKET_WAYS - 1)].tat : &bs->spill_tat;
	co.peek = q->peek;
	rc = charge_tat(tat, r, q->cost, now, &co);
	if (q->peek)
		return rc;
	q->inc = co.inc;
	if (rc == CHARGE_BUSY) {
		cls = q->cls;
		cnt = bpf_map_lookup_elem(&sl_stats, &cls);
		if (cnt)
			cnt->cas_busy++;
	}
	return rc;
}

/* Give back what a bucket was charged, when a later bucket refused the connection: to the
 * key's way, or to the spill it was charged when it had none. */
static __always_inline void refund_key(const struct sl_bkey *k, __u64 inc)
{
	const struct sl_settings *set;
	struct sl_bucket_set *bs;
	__u32 zero = 0, tag, w;

	if (!inc)
		return;
	set = bpf_map_lookup_elem(&sl_settings, &zero);
	if (!set)
		return;
	bs = bucket_set_of(k, set, &tag);
	if (!bs)
		return;
	w = way_of(bs, tag);
	if (w < SL_BUCKET_WAYS)
		__sync_fetch_and_add(&bs->way[w & (SL_BUCKET_WAYS - 1)].tat, -inc);
	else
		__sync_fetch_and_add(&bs->spill_tat, -inc);
}

/*
 * Would @cost fit in @k's bucket now? What sl_charge_key answers with peek, inline for the
 * weighing paths (the call and return of a global function cost ~9 ns here, and a weighed SYN
 * made four): the key's own way, else what it would start with in a way it may take, else
 * the spill's. The new key's start (a division) is computed only when it has no way.
 */
static __always_inline int weigh_key(const __u32 *kw, const struct sl_rate *r,
				     __u64 cost, __u64 now, const struct sl_settings *set)
{
	struct sl_bucket_set *bs;
	__u64 t, next, h = sl_key_hash_words(kw, set->hash_seed);
	__u32 idx = (__u32)h & bucket_mask, tag = h >> 32, w;

	/* bucket_set_of, from the key's words (make_key_words). */
	bs = bpf_map_lookup_elem(&sl_buckets, &idx);
	if (!bs)
		return CHARGE_NOSTATE;
	w = way_of(bs, tag);
	if (w < SL_BUCKET_WAYS)
		t = bs->way[w & (SL_BUCKET_WAYS - 1)].tat;
	else if (way_to_take(bs, now) < SL_BUCKET_WAYS)
		t = sl_gcra_initial_tat(now, r->tolerance_ns, set->new_key_credit);
	else
		t = bs->spill_tat;
	return sl_gcra_charge(t, now, cost, r->emission_ns, r->tolerance_ns, &next) ?
		       CHARGE_OK : CHARGE_DENIED;
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

/* Which bucket a shed decision found empty: the one whose streak its Retry-After climbs. */
enum shed_level {
	LEVEL_PREFIX = 0,
	LEVEL_PARENT = 1,
	LEVEL_TENANT = 2,
};

struct decision {
	__u32 reason;
	__u32 class_id;
	__u8 action;      /* enum sl_action for a shed */
	__u8 level;       /* enum shed_level */
	__u8 pad[2];
	__u32 tenant;     /* the tenant charged; SL_MAX_TENANTS: none */
	/* the source's key; for a parent shed, the parent's. Keys are byte-aligned structs:
	 * these two are 4-byte aligned so that make_key_words and sl_charge_key can write and
	 * read them as words. */
	struct sl_bkey key __attribute__((aligned(4)));
	/* working space of the judgement, here rather than on its stack (see sl_judge) */
	struct sl_bkey qkey __attribute__((aligned(4)));
	struct sl_lpm_key lk;
	struct charge_req cq;
	__u64 pinc;
	struct sl_tenant_key tk;
	struct charge_out co;
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
	struct cookie_q q;
	struct decision d;
	struct sl_lpm_key lk;
	struct sl_conn cv;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct req_scratch);
} sl_reqbuf SEC(".maps");

/* Charge (or weigh) the destination tenant's edge bucket: its lease while it lasts, else the
 * static fallback. Returns CHARGE_OK when there is no tenant for this destination. Demand, which
 * a lease follows, is counted only for real charges, which come only from proven sources. */
static __always_inline int charge_tenant(const struct src *s, __u16 dport, __u64 cost,
					 __u64 now, const struct sl_settings *set, __u8 *mode,
					 __u32 hint, __u32 *tid_out, int peek,
					 struct sl_tenant_key *tk, struct charge_out *co)
{
	const struct sl_rate *r;
	struct sl_tenant *t;
	struct sl_bucket *st;
	__u32 *id, tid = hint;
	__u64 *demand;

	*tid_out = SL_MAX_TENANTS;
	if (!set->n_tenants)
		return CHARGE_OK;
	/* Host or SNI named the tenant (stateless front); else its address and port do. */
	if (hint >= SL_MAX_TENANTS) {
		__builtin_memset(tk, 0, sizeof(*tk));
		tk->family = s->family;
		tk->port = dport;
		__builtin_memcpy(tk->addr, s->daddr, 16);
		id = bpf_map_lookup_elem(&sl_tenant_keys, tk);
		if (!id) {
			/* No tenant listens here: the default tenant's, if there is one. */
			if (set->default_tenant >= SL_MAX_TENANTS)
				return CHARGE_OK;
			tid = set->default_tenant;
		} else {
			tid = *id;
		}
	}
	t = bpf_map_lookup_elem(&sl_tenants, &tid);
	st = bpf_map_lookup_elem(&sl_tenant_state, &tid);
	if (!t || !st || !t->valid)
		return CHARGE_OK;
	*tid_out = tid;
	*mode = t->mode;
	if (!peek) {
		demand = bpf_map_lookup_elem(&sl_tenant_demand, &tid);
		if (demand)
			*demand += cost; /* per CPU: no atomic needed */
	}
	r = now < t->lease_expires_ns ? &t->lease : &t->fallback;
	if (peek) {
		__u64 next;

		/* What sl_charge_tat answers with peek, without its call. */
		return sl_gcra_charge(st->tat, now, cost, r->emission_ns, r->tolerance_ns, &next) ?
			       CHARGE_OK : CHARGE_DENIED;
	}
	__builtin_memset(co, 0, sizeof(*co));
	return sl_charge_tat(&st->tat, r, cost, now, co);
}

/*
 * Judge one connection of a proven source (or with @peek, say how it would be judged, charging
 * nothing): verdicts, then the source prefix, its parent and the tenant. Always called with a
 * constant @peek: weighing (sl_weigh, and the SYN front's SYN) reads the buckets inline, a
 * charge calls sl_charge_key for each.
 */
static __always_inline int judge(const struct pkt *pk, const struct sl_settings *set,
				 __u64 now, struct decision *d, const int peek)
{
	const struct src *s;
	__u32 zero = 0, *vcount;
	__u16 dport;

	if (!pk || !d)
		return 0;
	d->tenant = SL_MAX_TENANTS;
	d->level = LEVEL_PREFIX;
	if (!set) {
		d->class_id = SL_CLASS_NONE;
		d->reason = SL_R_STATE_ERROR;
		return 0;
	}
	s = &pk->s;
	dport = pk->dport;
	struct sl_class_policy *pol;
	__u64 cost = pk->cost;
	__u32 cls = classify(s, set, &d->lk), tid = SL_MAX_TENANTS;
	__u8 plen, parent, tmode = SL_MODE_ENFORCE;
	__u32 kw[3];
	int rc;

	d->action = pk->action;
	pol = policy_of(&cls, set);
	if (!pol) {
		d->class_id = SL_CLASS_NONE;
		d->reason = SL_R_STATE_ERROR;
		return 0;
	}
	d->class_id = cls;
	if (s->family == SL_FAM_V4) {
		plen = pol->v4_prefix;
		parent = pol->v4_parent;
	} else {
		plen = pol->v6_prefix;
		parent = pol->v6_parent;
	}
	make_key_words(&d->key, kw, s, plen, SL_LEVEL_PREFIX, cls);

	vcount = bpf_map_lookup_elem(&sl_vcount, &zero);
	if (vcount && *vcount) {
		struct sl_verdict *v;

		lpm_key_of(&d->lk, s->saddr, s->family);
		v = bpf_map_lookup_elem(&sl_verdicts, &d->lk);
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

	d->cq.cost = cost;
	d->cq.now = now;
	d->cq.peek = peek;
	d->cq.cls = cls;
	d->cq.inc = 0;
	if (peek)
		rc = weigh_key(kw, &pol->prefix, cost, now, set);
	else
		rc = sl_charge_key(&d->key, &pol->prefix, &d->cq);
	d->pinc = d->cq.inc;
	if (rc == CHARGE_NOSTATE) {
		d->reason = SL_R_STATE_ERROR;
		return 0;
	}
	if (rc != CHARGE_OK) {
		d->reason = pol->mode == SL_MODE_MONITOR ? SL_R_WOULD_SHED_PREFIX : SL_R_SHED_PREFIX;
		return 0;
	}
	make_key_words(&d->qkey, kw, s, parent, SL_LEVEL_PARENT, cls);
	if (peek)
		rc = weigh_key(kw, &pol->parent, cost, now, set);
	else
		rc = sl_charge_key(&d->qkey, &pol->parent, &d->cq);
	if (rc != CHARGE_OK) {
		/* The prefix is not to blame for its parent's flood: give back what it paid. */
		if (!peek)
			refund_key(&d->key, d->pinc);
		if (rc == CHARGE_NOSTATE) {
			d->reason = SL_R_STATE_ERROR;
			return 0;
		}
		/* The parent was empty: its streak, not the prefix's, is the one to climb. */
		__builtin_memcpy(&d->key, &d->qkey, sizeof(d->qkey));
		d->level = LEVEL_PARENT;
		d->reason = pol->mode == SL_MODE_MONITOR ? SL_R_WOULD_SHED_PARENT : SL_R_SHED_PARENT;
		return 0;
	}
	rc = charge_tenant(s, dport, cost, now, set, &tmode, pk->tenant, &tid, peek, &d->tk,
			   &d->co);
	d->tenant = tid;
	if (rc != CHARGE_OK) {
		/* The tenant's budget ran out: the source paid for nothing. */
		if (!peek) {
			refund_key(&d->key, d->pinc);
			refund_key(&d->qkey, d->cq.inc);
		}
		d->level = LEVEL_TENANT;
		d->reason = tmode == SL_MODE_MONITOR ? SL_R_WOULD_SHED_TENANT : SL_R_SHED_TENANT;
		return 0;
	}
	d->reason = SL_R_PASSED;
	return 0;
}

/* Say how a connection would be judged, charging nothing. A global function: see struct pkt. */
__noinline int sl_weigh(const struct pkt *pk, const struct sl_settings *set, __u64 now,
			struct decision *d)
{
	return judge(pk, set, now, d, 1);
}

/* Judge a connection of a proven source, and charge it. */
__noinline int sl_judge(const struct pkt *pk, const struct sl_settings *set, __u64 now,
			struct decision *d)
{
	return judge(pk, set, now, d, 0);
}

/*
 * Retry-After for a 429 now: the streak of the bucket that was empty (the prefix, the parent or
 * the tenant: whoever drained it, the answer follows that bucket) picks the level, then +-20 %
 * jitter. A streak restarts after streak_decay_s seconds without a 429 for that bucket.
 */
__noinline int sl_retry_after(const struct sl_settings *set, __u64 now, struct decision *d)
{
	__u32 level = 0, base, secs = (__u32)(now / NS_PER_S), streak = 0, n;
	struct sl_bshed *sh = NULL;

	if (!set || !d)
		return 1;
	n = set->n_retry_levels;
	if (d->level == LEVEL_TENANT && d->tenant < SL_MAX_TENANTS) {
		__u32 tid = d->tenant;
		struct sl_bucket *b = bpf_map_lookup_elem(&sl_tenant_state, &tid);

		/* streak and last_shed_s follow tat in struct sl_bucket as in struct sl_bshed.
		 * The empty asm keeps clang from computing b + 8 before the null check, which
		 * the verifier rejects ("pointer arithmetic on map_value_or_null"). */
		if (b) {
			asm volatile("" : "+r"(b));
			sh = (struct sl_bshed *)&b->streak;
		}
	} else if (d->class_id < SL_MAX_CLASSES) {
		struct sl_bucket_set *bs;
		__u32 tag, w;

		bs = bucket_set_of(&d->key, set, &tag);
		if (bs) {
			w = way_of(bs, tag);
			sh = w < SL_BUCKET_WAYS ? &bs->shed[w & (SL_BUCKET_WAYS - 1)] :
						  &bs->spill_shed;
		}
	}
	if (sh) {
		/* Racy read-modify-write: two concurrent 429s may climb one step, not two. */
		if (secs - sh->last_shed_s <= set->streak_decay_s)
			streak = sh->streak;
		sh->streak = streak + 1;
		sh->last_shed_s = secs;
	}
	if (n == 0 || n > SL_MAX_RETRY_LEVELS)
		n = 1;
	level = streak < n ? streak : n - 1;
	base = set->retry_after[level & (SL_MAX_RETRY_LEVELS - 1)];
	if (!base)
		base = 1;
	/* 80 %..120 %: throttled clients must not come back in step. */
	base = (base * (800 + bpf_get_prandom_u32() % 401) + 500) / 1000; /* rounded */
	return base ? (__u16)(base > 65535 ? 65535 : base) : 1;
}

static __always_inline void conn_key_of(struct sl_conn_key *ck, const struct src *s,
					__u16 sport, __u16 dport, __u32 iss)
{
	__builtin_memset(ck, 0, sizeof(*ck));
	ck->family = s->family;
	ck->iss = iss;
	ck->sport = sport;
	ck->dport = dport;
	__builtin_memcpy(ck->saddr, s->saddr, 16);
	__builtin_memcpy(ck->daddr, s->daddr, 16);
}

/* The reply's Ethernet addresses and tags, from the incoming frame's. */
static __always_inline int reply_l2_from(struct reply *r, struct xdp_md *ctx,
					 const struct pkt *pk)
{
	void *data = xdp_data(ctx), *end = xdp_data_end(ctx);
	__u8 *p = data;

	if ((void *)(p + 22) > end || pk->n_vlan > SL_MAX_VLAN)
		return -1;
	__builtin_memcpy(r->dmac, p + 6, 6);
	__builtin_memcpy(r->smac, p, 6);
	r->n_vlan = pk->n_vlan;
	/* The tags as they came (TPID, TCI pairs). Their number varies, so the helper reads all
	 * SL_MAX_VLAN slots at one constant size: any frame here holds an IP and a TCP header
	 * after its tags, more than the 32 bytes, and what follows the last tag is not used. */
	if (pk->n_vlan && bpf_xdp_load_bytes(ctx, 12, r->vlan, sizeof(r->vlan)))
		return -1;
	return 0;
}

/* Fill the parts of a reply that mirror the incoming frame. */
static __always_inline int reply_from(struct reply *r, struct xdp_md *ctx,
				      const struct pkt *pk)
{
	if (reply_l2_from(r, ctx, pk))
		return -1;
	r->family = pk->s.family;
	__builtin_memcpy(r->saddr, pk->s.daddr, 16);
	__builtin_memcpy(r->daddr, pk->s.saddr, 16);
	r->sport = bpf_htons(pk->dport);
	r->dport = bpf_htons(pk->sport);
	return 0;
}

/*
 * A reset from the client, built from scratch over @pk (a segment of it) and passed up to
 * this host's kernel: it frees the request socket of a connection shed over it. RST alone at
 * the client's sequence number, which is inside that socket's window (it took the first
 * request's bytes), and no ACK bit (an ACK that is not the handshake's makes the listener
 * reset the client instead); no timestamp, so PAWS does not apply.
 */
static __always_inline int reset_inbound(struct xdp_md *ctx, const struct pkt *pk,
					 struct reply *rp)
{
	__builtin_memset(rp, 0, sizeof(*rp) - sizeof(rp->body));
	if (reply_from(rp, ctx, pk))
		return XDP_DROP;
	/* reply_from addressed it back to the client: turn it round again. */
	__builtin_memcpy(rp->saddr, pk->s.saddr, 16);
	__builtin_memcpy(rp->daddr, pk->s.daddr, 16);
	rp->sport = bpf_htons(pk->sport);
	rp->dport = bpf_htons(pk->dport);
	{
		__u8 mac[6];

		__builtin_memcpy(mac, rp->dmac, 6);
		__builtin_memcpy(rp->dmac, rp->smac, 6);
		__builtin_memcpy(rp->smac, mac, 6);
	}
	rp->kind = REPLY_RST_IN;
	rp->seq = pk->seq;
	return sl_emit_reply(ctx, rp) == XDP_TX ? XDP_PASS : XDP_DROP;
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

/* Is @addr one of this node's? The exact table first; the trie only if wider prefixes exist. */
static __always_inline int local_addr_lookup(const __u8 *addr, __u8 family)
{
	const struct sl_local_bits *bits;
	const struct sl_settings *set;
	struct sl_lpm_key lk;
	__u32 zero = 0;

	lpm_key_of(&lk, addr, family);
	/* The hash only where the filter's bit is set (struct sl_local_bits). */
	bits = bpf_map_lookup_elem(&sl_local_bits, &zero);
	if ((!bits || sl_local_maybe(bits, lk.addr)) && bpf_map_lookup_elem(&sl_local_host, &lk))
		return 1;
	set = bpf_map_lookup_elem(&sl_settings, &zero);
	if (!set || !set->local_nets)
		return family == SL_FAM_V4 ? addr[0] == 127 : 0; /* loopback, always local */
	return bpf_map_lookup_elem(&sl_local, &lk) != NULL;
}

/* The last address each CPU asked about, and the answer, while sl_local_gen stands: one slot
 * for destinations, one for sources (sl_martian asks whether a source is ours), so the two
 * do not evict each other. A node's traffic goes to a handful of addresses, and the hash
 * lookup saved is a tenth of a 429's time; a flood aimed at many addresses only misses. */
struct local_cache {
	__u64 gen;
	__u64 a0, a1;            /* the address, as two words */
	__u8 family;
	__u8 local;
	__u8 valid;
	__u8 pad[5];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct local_cache);
} sl_local_cache SEC(".maps");

static __always_inline int local_addr(const __u8 *addr, __u8 family, __u32 slot)
{
	struct local_cache *lc;
	__u64 *gen, a0, a1;
	__u32 zero = 0;
	int local;

	gen = bpf_map_lookup_elem(&sl_local_gen, &zero);
	lc = bpf_map_lookup_elem(&sl_local_cache, &slot);
	if (!gen || !lc)
		return local_addr_lookup(addr, family);
	addr = src_addr(addr);
	__builtin_memcpy(&a0, addr, 8);
	__builtin_memcpy(&a1, addr + 8, 8);
	if (lc->valid && lc->gen == *gen && lc->family == family && lc->a0 == a0 && lc->a1 == a1)
		return lc->local;
	local = local_addr_lookup(addr, family);
	lc->gen = *gen;
	lc->a0 = a0;
	lc->a1 = a1;
	lc->family = family;
	lc->local = (__u8)local;
	lc->valid = 1;
	return local;
}

/*
 * Would the kernel answer this segment at all? Not if its source is martian (unspecified,
 * loopback, multicast, class E and broadcast, IPv4-mapped on the wire) or one of our own
 * addresses, nor if it came in a multicast or broadcast frame. Returns 0 when it would.
 */
static __always_inline int martian(struct xdp_md *ctx, const struct pkt *pk)
{
	void *data, *end;
	const __u8 *a;
	__u8 *p;

	data = xdp_data(ctx);
	end = xdp_data_end(ctx);
	p = data;
	if ((void *)(p + 12) > end)
		return 1;
	if ((p[0] & 1) || (p[6] & 1))
		return 1; /* group (multicast, broadcast) destination or source MAC */
	/* Loopback destinations are local, and still never reached from a wire. */
	a = src_addr(pk->s.daddr);
	if (pk->s.family == SL_FAM_V4 && a[0] == 127)
		return 1;
	if (pk->s.family == SL_FAM_V6) {
		__u64 hi;
		__u32 w2, w3;

		__builtin_memcpy(&hi, a, 8);
		__builtin_memcpy(&w2, a + 8, 4);
		__builtin_memcpy(&w3, a + 12, 4);
		/* ::1, and IPv4-mapped (never on the wire; in sl_local's key space it would
		 * alias the IPv4 entries) */
		if (hi == 0 && ((w2 == 0 && w3 == bpf_htonl(1)) || w2 == bpf_htonl(0xffff)))
			return 1;
	}
	a = src_addr(pk->s.saddr);
	if (pk->s.family == SL_FAM_V4) {
		if (a[0] == 0 || a[0] == 127 || a[0] >= 224)
			return 1;
	} else {
		__u64 hi;
		__u32 w2, w3;

		if (a[0] == 0xff)
			return 1; /* multicast */
		__builtin_memcpy(&hi, a, 8);
		__builtin_memcpy(&w2, a + 8, 4);
		__builtin_memcpy(&w3, a + 12, 4);
		/* ::, ::1, and ::ffff:0:0/96 (IPv4-mapped, never on the wire) */
		if (hi == 0 && (w2 == 0 || w2 == bpf_htonl(0xffff)) &&
		    (w2 != 0 || w3 == 0 || w3 == bpf_htonl(1)))
			return 1;
	}
	return local_addr(pk->s.saddr, pk->s.family, 1);
}

__noinline int sl_martian(struct xdp_md *ctx, const struct pkt *pk)
{
	if (!ctx || !pk)
		return 1;
	return martian(ctx, pk);
}

/* Is the segment's destination an address this node serves? */
__noinline int sl_is_local(const struct pkt *pk)
{
	if (!pk)
		return 0;
	return local_addr(pk->s.daddr, pk->s.family, 0);
}

/*
 * Stateless front: what does this first request cost, and whose is it? Reads the request
 * line and Host (or the SNI) and looks them up. A request the edge cannot read whole (cut
 * short, split over segments, a Host past the scan window, a fragment) costs the port's
 * unreadable_cost, normally its most expensive route, and is charged to the destination's
 * tenant: nothing a client can shape lowers its price. Fills pk->cost and pk->tenant; returns
 * the route id (SL_EDGE_ROUTES when none).
 */
/* The tenant of host @hk (see sl_host_tenant): this datapath's two tables. */
static __always_inline __u32 *host_tenant(const struct sl_host_key *hk, const struct sl_settings *set)
{
	return sl_host_tenant(&sl_host_sets, &sl_hosts, hk, set->hash_seed);
}

__noinline int sl_route_request(struct xdp_md *ctx, struct pkt *pk,
				const struct sl_settings *set)
{
	struct sl_route_val *rv;
	struct req_scratch *rs;
	__u32 zero = 0, off, len, route = SL_EDGE_ROUTES, *tid, base;
	void *data = xdp_data(ctx), *end = xdp_data_end(ctx);
	int got;

	if (!ctx || !pk || !set)
		return SL_EDGE_ROUTES;
	pk->tenant = SL_TENANT_BY_DEST;
	base = pk->port_cost ? pk->port_cost : 1;
	pk->cost = pk->unreadable_cost ? pk->unreadable_cost : base;
	if (pk->frag != FRAG_NONE)
		return route;
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
	if (sl_req_copy(data, end, off, len, &rs->rb) &&
	    bpf_xdp_load_bytes(ctx, off, rs->rb.b, len))
		return route;
	__builtin_memset(&rs->rk, 0, sizeof(rs->rk));
	__builtin_memset(&rs->hk, 0, sizeof(rs->hk));
	if (pk->proto == SL_PROTO_TLS) {
		got = sl_parse_sni(&rs->rb, len, &rs->hk);
		/* A ClientHello names no route: the port's cost, once its SNI was read whole. */
		if (got & REQ_HOST)
			pk->cost = base;
	} else {
		got = sl_parse_http(&rs->rb, len, &rs->rk, &rs->hk);
		if (got & REQ_LINE) {
			pk->cost = base;
			/* Any-method routes are written under every method: one lookup. */
			rv = bpf_map_lookup_elem(&sl_routes, &rs->rk);
			if (rv) {
				pk->cost = rv->cost;
				route = rv->route_id < SL_EDGE_ROUTES ? rv->route_id :
									 SL_EDGE_ROUTES;
			}
		}
	}
	if (got & REQ_HOST) {
		tid = host_tenant(&rs->hk, set);
		pk->tenant = tid ? *tid : set->default_tenant;
	}
	if (pk->tenant >= SL_MAX_TENANTS)
		pk->tenant = SL_TENANT_BY_DEST;
	return route;
}

/* What every stack that speaks timestamps sends after the handshake: NOP NOP TS, alone (doff
 * 8), read in place when the frame's linear part holds it (a helper call per segment was a
 * tenth of a shed connection's cost). 1 when it was that; else the walk is sl_read_ts's.
 * Inline where a first request reads it: the call alone is ~9 ns here. */
static __always_inline int read_ts_fast(struct xdp_md *ctx, struct pkt *pk)
{
	const __u8 *o;

	o = (const __u8 *)xdp_data(ctx) + (pk->th_off & 0x3fff) + 20;
	if (pk->doff == 8 && (const void *)(o + 12) <= xdp_data_end(ctx) &&
	    o[0] == 1 && o[1] == 1 && o[2] == 8 && o[3] == 10) {
		pk->ts = 1;
		pk->tsval = ((__u32)o[4] << 24) | ((__u32)o[5] << 16) | ((__u32)o[6] << 8) | o[7];
		pk->tsecr = ((__u32)o[8] << 24) | ((__u32)o[9] << 16) | ((__u32)o[10] << 8) | o[11];
		return 1;
	}
	return 0;
}

/* The segment's timestamps, read only on the paths that need them. A function of its own:
 * the option walk's buffer on the callers' stacks took their call chains past 512 bytes. */
__noinline int sl_read_ts(struct xdp_md *ctx, struct pkt *pk)
{
	struct seg_opts so = {};

	if (!ctx || !pk || pk->doff <= 5)
		return 0;
	if (read_ts_fast(ctx, pk))
		return 0;
	parse_tcp_opts(ctx, pk->th_off, pk->doff, &so);
	pk->ts = so.ts;
	pk->tsval = so.tsval;
	pk->tsecr = so.tsecr;
	return 0;
}

/* The kernel's socket (of any state, a listener included) for this segment's 4-tuple, a
 * reference the caller releases; NULL when there is none. */
static __always_inline struct bpf_sock *tuple_sock(struct xdp_md *ctx, const struct pkt *pk)
{
	struct bpf_sock_tuple t = {};

	if (pk->s.family == SL_FAM_V4) {
		__builtin_memcpy(&t.ipv4.saddr, pk->s.saddr, 4);
		__builtin_memcpy(&t.ipv4.daddr, pk->s.daddr, 4);
		t.ipv4.sport = bpf_htons(pk->sport);
		t.ipv4.dport = bpf_htons(pk->dport);
		return bpf_skc_lookup_tcp(ctx, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
	}
	__builtin_memcpy(t.ipv6.saddr, pk->s.saddr, 16);
	__builtin_memcpy(t.ipv6.daddr, pk->s.daddr, 16);
	t.ipv6.sport = bpf_htons(pk->sport);
	t.ipv6.dport = bpf_htons(pk->dport);
	return bpf_skc_lookup_tcp(ctx, &t, sizeof(t.ipv6), BPF_F_CURRENT_NETNS, 0);
}

/* The kernel's socket for this segment's 4-tuple: its state, or -1 when there is none
 * (which includes "only a listener"). */
static __always_inline int sock_state(struct xdp_md *ctx, const struct pkt *pk)
{
	struct bpf_sock *sk = tuple_sock(ctx, pk);
	int state = -1;

	if (sk) {
		if (sk->state != BPF_TCP_LISTEN)
			state = sk->state;
		bpf_sk_release(sk);
	}
	return state;
}

__noinline int sl_sock_state(struct xdp_md *ctx, const struct pkt *pk)
{
	if (!ctx || !pk)
		return -1;
	return sock_state(ctx, pk);
}

/* A decided connection's entry, looked up under each ISS a segment of it can carry. */
static __always_inline struct sl_conn *shed_entry(struct sl_conn_key *ck, const struct pkt *pk,
						  __u32 iss, __u64 now)
{
	struct sl_conn *c;

	conn_key_of(ck, &pk->s, pk->sport, pk->dport, iss);
	c = bpf_map_lookup_elem(&sl_shed, ck);
	return c && now < c->expires_ns ? c : NULL;
}

/* What sl_decide() is asked to decide, set by whoever proved the source. */
enum stage {
	STAGE_FIRST_REQUEST = 1, /* stateless front: a cookie connection's first request */
	STAGE_COOKIE_SHED,       /* SYN front, reply port: a connection shed at its SYN */
	STAGE_VERIFIED,          /* SYN front: the segment that completed a kernel handshake */
};

/*
 * The tag table of shed cookie connections (struct sl_shed_set). Plain stores: a torn pair
 * from a racing CPU mismatches its tag at worst, and a mismatch only forgets a connection.
 * Returns the state remembered for @ck (SL_CONN_SHED or SL_CONN_DROPPED), or 0.
 */
/* The key's set and tag (sl_shed_hash) are computed only inside the functions of their own
 * below (cookie_tag, shed_tag_add): inlined into their callers, its eleven rounds cost those
 * stack frames more than the verifier's 512 bytes allow along their call chains. */
/* The way of @ss holding @tag (bit 0 aside) alive at @now_s: its tag, or 0. */
static __always_inline __u32 tag_find(const struct sl_shed_set *ss, __u32 tag, __u32 now_s)
{
	int i;

#pragma unroll
	for (i = 0; i < SL_SHED_WAYS; i++)
		if ((ss->way[i].tag & ~SL_SHED_TAG_DROPPED) == tag && ss->way[i].until > now_s)
			return ss->way[i].tag;
	return 0;
}

/* Put @tag (with its state bit) into @ss until @until: an empty or expired way, else the one
 * that expires first. 0 when it was there already. Expiries are whole seconds, so under a
 * flood a full set's ways often tie: a tie goes to way (tag >> 2) & 3 of the newcomer's when
 * that way is among the tied, so that the tied ways are replaced at random, not always the
 * first (which made a record written into a full set the next newcomer's victim). */
_Static_assert((SL_SHED_WAYS & (SL_SHED_WAYS - 1)) == 0, "SL_SHED_WAYS: a power of two");
static __always_inline int tag_put(struct sl_shed_set *ss, __u32 tag, __u32 now_s, __u32 until)
{
	__u32 low = ~0u, pick = (tag >> 2) & (SL_SHED_WAYS - 1);
	int i, victim = 0;

#pragma unroll
	for (i = 0; i < SL_SHED_WAYS; i++) {
		__u32 u = ss->way[i].until;

		if ((ss->way[i].tag & ~SL_SHED_TAG_DROPPED) == (tag & ~SL_SHED_TAG_DROPPED) &&
		    u > now_s)
			return 0;
		if (!ss->way[i].tag || u <= now_s)
			u = 0;
		if (u < low || (u == low && (__u32)i == pick)) {
			low = u;
			victim = i;
		}
	}
	/* Written one way at a time by index: the verifier wants a constant offset. */
#pragma unroll
	for (i = 0; i < SL_SHED_WAYS; i++) {
		if (i == victim) {
			ss->way[i].until = until;
			ss->way[i].tag = tag;
		}
	}
	return 1;
}

static __always_inline __u32 shed_tag_find(__u64 h, __u32 now_s)
{
	__u32 idx = (__u32)h & (SL_SHED_SETS - 1), tag = h >> 32;
	struct sl_shed_set *ss = bpf_map_lookup_elem(&sl_shed_sets, &idx);
	__u32 t;

	if (!ss)
		return 0;
	t = tag_find(ss, tag, now_s);
	if (!t)
		return 0;
	return t & SL_SHED_TAG_DROPPED ? SL_CONN_DROPPED : SL_CONN_SHED;
}

/* Remember the connection @ck as shed (@state SL_CONN_SHED or SL_CONN_DROPPED)
 * until @until: an empty or expired way, else the one that expires first. 0 when it was
 * remembered already. */
static __always_inline int shed_tag_put(__u64 h, __u32 now_s, __u32 until, __u32 state)
{
	__u32 idx = (__u32)h & (SL_SHED_SETS - 1), tag = (h >> 32) & ~SL_SHED_TAG_DROPPED;
	struct sl_shed_set *ss = bpf_map_lookup_elem(&sl_shed_sets, &idx);

	if (!ss)
		return 1;
	if (state == SL_CONN_DROPPED)
		tag |= SL_SHED_TAG_DROPPED;
	return tag_put(ss, tag, now_s, until);
}

static __noinline int shed_tag_add(const struct sl_conn_key *ck, __u32 seed, __u32 now_s,
				   __u32 until, __u32 state)
{
	/* The key's hash here, inline, not by a call of shed_key_hash: this is a function of
	 * its own, its frame not its callers'. */
	return shed_tag_put(ck ? sl_shed_hash(ck, seed) : 0, now_s, until, state);
}

/*
 * The tag table of admitted cookie connections (sl_conn_sets, see SL_CONN_SETS): whether
 * (tuple, @iss) of @pk was admitted and is remembered still. The same plain stores as the
 * shed tags, with the same worst case: a torn way forgets a connection. A function of its
 * own, for the same reason as shed_tag_add (the hash's rounds in its own frame). Returns the
 * key's hash (never 0), with CONN_TAG_FOUND set when a live way holds its tag: the tag's
 * bit 0, which sl_shed_hash leaves clear, so conn_tag_add can take the hash as it is.
 */
#define CONN_TAG_FOUND (1ull << 32)
static __noinline __u64 conn_tag_find(struct req_scratch *ws, const struct pkt *pk,
				      const struct sl_settings *set, __u32 iss, __u64 now)
{
	struct sl_shed_set *ss;
	__u32 idx;
	__u64 h;

	if (!ws || !pk || !set)
		return 0;
	conn_key_of(&ws->ck, &pk->s, pk->sport, pk->dport, iss);
	h = sl_shed_hash(&ws->ck, set->hash_seed);
	idx = (__u32)h & (SL_CONN_SETS - 1);
	ss = bpf_map_lookup_elem(&sl_conn_sets, &idx);
	if (ss && tag_find(ss, h >> 32, (__u32)(now / NS_PER_S)))
		h |= CONN_TAG_FOUND;
	return h;
}

/* Remember the connection whose hash conn_tag_find gave (@h, without CONN_TAG_FOUND) as
 * admitted for SL_RACE_TTL_S: the key is not hashed a second time. */
static __always_inline int conn_tag_add(__u64 h, __u64 now)
{
	struct sl_shed_set *ss;
	__u32 idx = (__u32)h & (SL_CONN_SETS - 1), now_s = (__u32)(now / NS_PER_S);

	ss = bpf_map_lookup_elem(&sl_conn_sets, &idx);
	if (!ss || !h)
		return 0;
	return tag_put(ss, (__u32)(h >> 32), now_s, now_s + SL_RACE_TTL_S);
}

/*
 * A shed cookie connection's entry, as absorb() wants it, made from its tag and the segment:
 * after our 429 and FIN our next sequence number is ISS + 97, our TSval is what the client
 * echoes, its own the one to echo. NULL when no tag speaks for (tuple, @iss).
 */
static __always_inline struct sl_conn *cookie_tag_of(struct req_scratch *ws,
						     const struct pkt *pk, __u64 h, __u32 iss,
						     __u64 now)
{
	__u32 st;

	/* The tag's bit 0 is the shed state's, clear in the key's own (CONN_TAG_FOUND). */
	st = shed_tag_find(h & ~CONN_TAG_FOUND, (__u32)(now / NS_PER_S));
	if (!st)
		return NULL;
	__builtin_memset(&ws->cv, 0, sizeof(ws->cv));
	ws->cv.state = st;
	ws->cv.our_next = st == SL_CONN_SHED ? iss + 1 + SL_429_LEN + 1 : iss + 1;
	ws->cv.their_next = pk->seq;
	ws->cv.tsval = pk->ts ? pk->tsecr : 0;
	ws->cv.ts_recent = pk->tsval;
	return &ws->cv;
}

static __noinline struct sl_conn *cookie_tag(struct req_scratch *ws, const struct pkt *pk,
					     const struct sl_settings *set, __u32 iss, __u64 now)
{
	if (!ws || !pk || !set)
		return NULL;
	conn_key_of(&ws->ck, &pk->s, pk->sport, pk->dport, iss);
	/* The hash inline: cookie_tag is a function of its own (its frame is not its
	 * callers'). A first request, whose key conn_tag_find hashed already, asks
	 * cookie_tag_of with that hash instead. */
	return cookie_tag_of(ws, pk, sl_shed_hash(&ws->ck, set->hash_seed), iss, now);
}

/* A marked segment's decided connection: a cookie connection's tag, else an entry of
 * sl_shed (a connection shed over a kernel handshake, whose ISS may carry the marker too). */
static __always_inline struct sl_conn *cookie_shed(struct req_scratch *ws, const struct pkt *pk,
						   const struct sl_settings *set, __u32 iss,
						   __u64 now)
{
	struct sl_conn *c = cookie_tag(ws, pk, set, iss, now);

	return c ? c : shed_entry(&ws->ck, pk, iss, now);
}

/* The leftovers of a shed connection: its FIN is acknowledged, anything else absorbed (the
 * kernel has no socket for it and would only reset it). */
static __always_inline int absorb(struct xdp_md *ctx, const struct pkt *pk, struct sl_conn *c,
				  struct reply *rp)
{
	/* Shed at its bare ACK, its request socket reset (owe_429): the request gets the 429
	 * now, and the connection is an answered one from here on. A FIN before any request
	 * gets the reset a closed port gives; anything else is absorbed. */
	if (c->state == SL_CONN_OWED) {
		if ((pk->flags & (TF_RST | TF_SYN)) || sl_martian(ctx, pk))
			return record(SL_CLASS_NONE, SL_R_COOKIE_DROP, XDP_DROP);
		if (!pk->payload && !(pk->flags & TF_FIN))
			return record(SL_CLASS_NONE, SL_R_COOKIE_DROP, XDP_DROP);
		if (reply_from(rp, ctx, pk))
			return record(SL_CLASS_NONE, SL_R_COOKIE_DROP, XDP_DROP);
		if (!pk->payload) {
			rp->kind = REPLY_RST;
			rp->seq = c->our_next;
			rp->ack = pk->seq + 1;
			return record(SL_CLASS_NONE, SL_R_COOKIE_FIN, sl_emit_reply(ctx, rp));
		}
		rp->kind = REPLY_429;
		rp->seq = c->our_next;
		rp->ack = pk->seq + pk->payload + (pk->flags & TF_FIN ? 1 : 0);
		rp->retry_after = c->retry_after;
		rp->ts = c->tsval != 0;
		rp->tsval = c->tsval;
		rp->tsecr = pk->ts ? pk->tsval : c->ts_recent;
		/* Answered: its FIN and retransmissions are those of any 429'd connection. A
		 * second CPU racing here sends a second, identical 429, which TCP discards. */
		c->their_next = rp->ack;
		c->our_next += SL_429_LEN + 1;
		c->ts_recent = pk->tsval;
		c->state = SL_CONN_SHED;
		return record(c->class_id, SL_R_REPLIED_429, sl_emit_reply(ctx, rp));
	}
	/* A dropped connection was sent nothing. When its client gives up and closes, it gets
	 * the reset the kernel gives a segment of no connection, so it is not left holding its
	 * tuple in FIN_WAIT1 while it retransmits the FIN. */
	if ((pk->flags & TF_FIN) && !(pk->flags & TF_RST) && c->state == SL_CONN_DROPPED &&
	    !sl_martian(ctx, pk)) {
		if (reply_from(rp, ctx, pk))
			return record(SL_CLASS_NONE, SL_R_COOKIE_DROP, XDP_DROP);
		rp->kind = REPLY_RST;
		rp->seq = pk->ack;
		rp->ack = pk->seq + pk->payload + 1;
		rp->ts = pk->ts;
		rp->tsval = pk->tsecr;
		rp->tsecr = pk->tsval;
		return record(SL_CLASS_NONE, SL_R_COOKIE_FIN, sl_emit_reply(ctx, rp));
	}
	if ((pk->flags & TF_FIN) && !(pk->flags & TF_RST) && c->state == SL_CONN_SHED &&
	    !sl_martian(ctx, pk)) {
		if (reply_from(rp, ctx, pk))
			return record(SL_CLASS_NONE, SL_R_COOKIE_DROP, XDP_DROP);
		rp->kind = REPLY_ACK;
		rp->seq = c->our_next;
		rp->ack = pk->seq + pk->payload + 1;
		rp->ts = c->tsval != 0;
		rp->tsval = c->tsval;
		rp->tsecr = pk->ts ? pk->tsval : c->ts_recent;
		return record(SL_CLASS_NONE, SL_R_COOKIE_FIN, sl_emit_reply(ctx, rp));
	}
	return record(SL_CLASS_NONE, SL_R_COOKIE_DROP, XDP_DROP);
}

/*
 * Answer a shed connection's first request (or, on the SYN front, the segment that proved its
 * handshake) with the 429 and FIN, and remember the connection under @iss so its leftovers
 * are absorbed. @our_seq is our next sequence number on it. @h is the sl_shed_hash of
 * (tuple, @iss) when the caller has it (a first request: conn_tag_find's), else 0.
 */
static __always_inline int answer_429(struct xdp_md *ctx, const struct pkt *pk,
				      const struct sl_settings *set, struct req_scratch *ws,
				      struct reply *rp, __u32 iss, __u32 our_seq, __u32 our_tsval,
				      __u64 now, __u64 h)
{
	/* The entry is built in scratch: on the stack it took the judgement's call chain past
	 * the verifier's 512 bytes. */
	struct sl_conn *c = &ws->cv;
	__u32 fin = pk->flags & TF_FIN ? 1 : 0;

	__builtin_memset(c, 0, sizeof(*c));

	c->our_next = our_seq + SL_429_LEN + 1;
	c->their_next = pk->seq + pk->payload + fin;
	c->expires_ns = now + SL_SHED_TTL_NS;
	c->state = SL_CONN_SHED;
	c->tsval = pk->ts && our_tsval ? our_tsval : 0;
	c->ts_recent = pk->tsval;
	conn_key_of(&ws->ck, &pk->s, pk->sport, pk->dport, iss);
	/* Created, never overwritten: an entry already there means this request was answered
	 * before (a retransmission), and it gets no second 429 (nor a higher streak). A cookie
	 * connection is a tag; one shed over a kernel handshake keeps its whole entry. */
	if (pk->stage != STAGE_VERIFIED) {
		__u32 now_s = (__u32)(now / NS_PER_S);
		int fresh = h ? shed_tag_put(h, now_s, now_s + SL_SHED_TTL_S, SL_CONN_SHED) :
				shed_tag_add(&ws->ck, set->hash_seed, now_s,
					     now_s + SL_SHED_TTL_S, SL_CONN_SHED);

		if (!fresh) {
			c = h ? cookie_tag_of(ws, pk, h, iss, now) : cookie_tag(ws, pk, set, iss, now);
			if (c)
				return absorb(ctx, pk, c, rp);
			return record(SL_CLASS_NONE, SL_R_COOKIE_DROP, XDP_DROP);
		}
	} else if (bpf_map_update_elem(&sl_shed, &ws->ck, c, BPF_NOEXIST)) {
		struct sl_conn *old = bpf_map_lookup_elem(&sl_shed, &ws->ck);

		if (old && now < old->expires_ns)
			return absorb(ctx, pk, old, rp);
		bpf_map_update_elem(&sl_shed, &ws->ck, c, BPF_ANY);
	}
	record(ws->d.class_id, ws->d.reason, -1); /* count the shed; the 429 follows */
	if (reply_from(rp, ctx, pk))
		return record(ws->d.class_id, ws->d.reason, XDP_DROP);
	rp->kind = REPLY_429;
	rp->seq = our_seq;
	rp->ack = c->their_next;
	rp->retry_after = (__u16)sl_retry_after(set, now, &ws->d);
	rp->ts = c->tsval != 0;
	rp->tsval = our_tsval;
	rp->tsecr = pk->tsval;
	emit_event(set, &pk->s, &ws->d.key, ws->d.class_id, SL_R_REPLIED_429, SL_ACT_REPLY,
		   pk->dport, rp->retry_after, now);
	return record(ws->d.class_id, SL_R_REPLIED_429, sl_emit_reply(ctx, rp));
}

/*
 * A kernel handshake's bare ACK, shed on a reply port (SYN front, or a stateless port's tuple
 * reused over a TIME_WAIT). A 429 needs the request it answers, and the kernel's request
 * socket, which never sees this ACK, would hold the tuple for as long as it resends its
 * SYN-ACK: a client reconnecting on the same port at once was answered from it with a reset.
 * So the ACK goes up as a reset that frees the socket, the connection is remembered as owed
 * its 429, and absorb() answers its request when it comes.
 */
static __always_inline int owe_429(struct xdp_md *ctx, const struct pkt *pk,
				   const struct sl_settings *set, struct req_scratch *ws,
				   struct reply *rp, __u64 now)
{
	struct sl_conn *c = &ws->cv;

	__builtin_memset(c, 0, sizeof(*c));
	c->our_next = pk->ack;
	c->their_next = pk->seq;
	c->expires_ns = now + SL_SHED_TTL_NS;
	c->state = SL_CONN_OWED;
	c->tsval = pk->ts && pk->our_tsval ? pk->our_tsval : 0;
	c->ts_recent = pk->tsval;
	c->retry_after = (__u16)sl_retry_after(set, now, &ws->d);
	c->class_id = (__u16)ws->d.class_id;
	conn_key_of(&ws->ck, &pk->s, pk->sport, pk->dport, pk->iss);
	if (bpf_map_update_elem(&sl_shed, &ws->ck, c, BPF_NOEXIST))
		return record(SL_CLASS_NONE, SL_R_COOKIE_DROP, XDP_DROP); /* a retransmission */
	record(ws->d.class_id, ws->d.reason, -1); /* the shed; its 429 is counted when sent */
	return record(SL_CLASS_NONE, SL_R_REQSK_RESET, reset_inbound(ctx, pk, rp));
}

/* Remember a connection that was shed by a drop, so its retransmissions are not judged again.
 * 0 when it was remembered already (this is a retransmission). @h: the key's sl_shed_hash
 * when the caller has it, else 0. */
static __always_inline int remember_drop(struct req_scratch *ws, const struct pkt *pk,
					 const struct sl_settings *set, __u32 iss, __u64 now,
					 __u64 h)
{
	__u32 now_s = (__u32)(now / NS_PER_S);

	if (h)
		return shed_tag_put(h, now_s, now_s + SL_SHED_TTL_S, SL_CONN_DROPPED);
	conn_key_of(&ws->ck, &pk->s, pk->sport, pk->dport, iss);
	return shed_tag_add(&ws->ck, set->hash_seed, now_s, now_s + SL_SHED_TTL_S,
			    SL_CONN_DROPPED);
}

/*
 * The SYN-front pending slot of a 4-tuple: a keyed hash of the source address's first and last
 * words and the ports (IPv4 addresses leave the last word zero). Keyed, so that nobody can aim
 * his tuples at another's slot; a collision only costs a socket lookup.
 */
static __always_inline __u32 *pend_slot_of(__u32 a0, __u32 a3, __u16 sport, __u16 dport,
					   const struct sl_settings *set)
{
	__u32 k = set->hash_seed, ports = ((__u32)sport << 16) | dport, idx;
	__u64 h;

	/*
	 * Multiply-shift over the three keyed words, summed: three independent multiplies
	 * instead of sl_mix3's chain of four, on every established segment of a SYN-front
	 * port. The slot is taken from bits 32 and up, where each word's product depends on
	 * all of its bits; a key the sender does not know (the seed, spread three ways) keeps
	 * him from aiming at a slot.
	 */
	h = (__u64)(a0 ^ k) * 0x9e3779b97f4a7c15ull +
	    (__u64)(a3 ^ (k * 0x85ebca6bu)) * 0xc2b2ae3d27d4eb4full +
	    (__u64)(ports ^ (k * 0x27d4eb2fu)) * 0x165667b19e3779f9ull;
	idx = (__u32)(h >> 32) & pend_mask;
	return bpf_map_lookup_elem(&sl_pending, &idx);
}

static __always_inline __u32 *pend_slot(const struct pkt *pk, const struct sl_settings *set)
{
	__u32 a0, a3;

	__builtin_memcpy(&a0, src_addr(pk->s.saddr), 4);
	__builtin_memcpy(&a3, src_addr(pk->s.saddr) + 12, 4);
	return pend_slot_of(a0, a3, pk->sport, pk->dport, set);
}

#define NOT_MINE (-1)
#define NEED_JUDGE (-2)
#define NOT_MINE_LOOKED (-3) /* not mine either, after a socket lookup found nothing */
#define NO_SOCKET (-4)       /* marked, no cookie, no socket, no decided connection */

/*
 * A non-SYN segment whose ack - 1 carries the cookie marker, on a stateless-front port or a
 * SYN-front `reply` port. Returns an XDP action; NEED_JUDGE when it is a proven connection's
 * first request (pk->stage and pk->iss say which), for sl_decide(); or NOT_MINE when the
 * segment belongs to no cookie connection (one time in sixteen, a segment of a connection
 * the kernel made).
 *
 * Under one marker the candidates are the connection's first segments (ack - 1 = ISS) and
 * its segments after our 429 and FIN (ack - 1 = ISS + 96): both end in the marker.
 */
__noinline int sl_cookie_segment(struct xdp_md *ctx, struct pkt *pk)
{
	const struct sl_settings *set;
	struct sl_cookie_keys *keys;
	struct sl_conn *conn;
	struct req_scratch *ws;
	struct reply *rp;
	__u32 zero = 0, iss;
	__u64 now;
	int st;

	if (!ctx || !pk)
		return NOT_MINE;
	keys = bpf_map_lookup_elem(&sl_cookie_keys, &zero);
	set = bpf_map_lookup_elem(&sl_settings, &zero);
	rp = bpf_map_lookup_elem(&sl_scratch, &zero);
	ws = bpf_map_lookup_elem(&sl_reqbuf, &zero);
	if (!keys || !set || !rp || !ws)
		return NOT_MINE;
	now = sl_now();
	iss = pk->ack - 1;

	if (pk->doff > 5 && !read_ts_fast(ctx, pk))
		sl_read_ts(ctx, pk);
	/* A shed connection's FIN, after our 429 + FIN: one lookup, where the cookie check below
	 * would spend two MACs to fail. */
	if ((pk->flags & TF_FIN) && !(pk->flags & TF_RST)) {
		conn = cookie_shed(ws, pk, set, pk->ack - SL_429_LEN - 2, now);
		if (conn) {
			__builtin_memset(rp, 0, sizeof(*rp) - sizeof(rp->body));
			return absorb(ctx, pk, conn, rp);
		}
	}
	/* The handshake ACK and the first request carry the cookie itself (the MAC needs the
	 * timestamp echo). */
	__builtin_memset(&ws->id, 0, sizeof(ws->id));
	ws->id.family = pk->s.family;
	ws->id.sport = pk->sport;
	ws->id.dport = pk->dport;
	ws->id.isn = pk->seq - 1;
	__builtin_memcpy(ws->id.saddr, pk->s.saddr, 16);
	__builtin_memcpy(ws->id.daddr, pk->s.daddr, 16);
	ws->q.iss = iss;
	ws->q.ts = pk->ts;
	ws->q.tsecr = pk->tsecr;
	if (!sl_cookie_check(&ws->id, ws->q.iss, ws->q.ts, ws->q.tsecr, now, keys, &ws->o)) {
		/*
		 * Not a cookie's own segment. Most often (one in sixteen of ordinary traffic) a
		 * segment of a connection the kernel holds: the socket lookup first. Else a racing
		 * segment of an admitted first burst (the kernel's socket is on its way), a shed
		 * connection's leftover, or a forgery.
		 */
		st = sl_sock_state(ctx, pk);
		if (st == BPF_TCP_NEW_SYN_RECV)
			return NOT_MINE; /* a handshake of the kernel's: sl_syn_verify's */
		if (st >= 0)
			return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);
		if (pk->front == SL_FRONT_STATELESS) {
			if (conn_tag_find(ws, pk, set, iss, now) & CONN_TAG_FOUND)
				return record(SL_CLASS_NONE, SL_R_RACE_PASS, XDP_PASS);
		}
		conn = cookie_shed(ws, pk, set, iss, now);
		if (!conn && !(pk->flags & TF_FIN))
			conn = cookie_shed(ws, pk, set, pk->ack - SL_429_LEN - 2, now);
		if (conn) {
			__builtin_memset(rp, 0, sizeof(*rp) - sizeof(rp->body));
			return absorb(ctx, pk, conn, rp);
		}
		return NO_SOCKET;
	}
	/* The handshake's own ACK: nothing to answer, nothing to look up. */
	if (!pk->payload && !(pk->flags & (TF_FIN | TF_RST)))
		return record(SL_CLASS_NONE, SL_R_COOKIE_ACK, XDP_DROP);

	/* A cookie connection's own segment: its source is proven. */
	if (pk->flags & TF_RST)
		return record(SL_CLASS_NONE, SL_R_COOKIE_DROP, XDP_DROP);
	if (martian(ctx, pk))
		return record(SL_CLASS_NONE, SL_R_MARTIAN, XDP_DROP);
	if (!pk->payload) {
		/* A FIN straight after the handshake, no request: reset, as a closed port would;
		 * that keeps no state and leaves nothing for the client to wait for. */
		__builtin_memset(rp, 0, sizeof(*rp) - sizeof(rp->body));
		if (reply_from(rp, ctx, pk))
			return record(SL_CLASS_NONE, SL_R_COOKIE_FIN, XDP_DROP);
		rp->kind = REPLY_RST;
		rp->seq = pk->ack;
		rp->ack = pk->seq + 1;
		rp->ts = pk->ts;
		rp->tsval = pk->tsecr;
		rp->tsecr = pk->tsval;
		return record(SL_CLASS_NONE, SL_R_COOKIE_FIN, sl_emit_reply(ctx, rp));
	}
	/* A first request: whether it was decided before (a retransmission) is asked where it
	 * is decided, so that a flood's requests cost one map write and no lookups. */
	pk->iss = iss;
	pk->our_tsval = pk->tsecr;
	pk->stage = pk->front == SL_FRONT_STATELESS ? STAGE_FIRST_REQUEST : STAGE_COOKIE_SHED;
	return NEED_JUDGE;
}

/*
 * Decide a proven connection (see enum stage): charge it, then pass it, or shed it with a
 * drop or a 429. Called from the entry point, not from the functions that proved the source,
 * so that the judgement's frames sit on a short call chain (512 bytes of stack in all).
 */
__noinline int sl_decide(struct xdp_md *ctx, struct pkt *pk)
{
	const struct sl_settings *set;
	struct req_scratch *ws;
	struct sl_conn *conn;
	struct reply *rp;
	__u32 zero = 0, route, tix, *slot;
	__u64 now, conn_h = 0;

	if (!ctx || !pk)
		return XDP_PASS;
	set = bpf_map_lookup_elem(&sl_settings, &zero);
	rp = bpf_map_lookup_elem(&sl_scratch, &zero);
	ws = bpf_map_lookup_elem(&sl_reqbuf, &zero);
	if (!set || !rp || !ws)
		return record(SL_CLASS_NONE, SL_R_STATE_ERROR, XDP_PASS);
	__builtin_memset(rp, 0, sizeof(*rp) - sizeof(rp->body));
	__builtin_memset(&ws->d, 0, sizeof(ws->d));
	now = sl_now();

	if (pk->stage == STAGE_FIRST_REQUEST) {
		/* Admitted before (a retransmission): the kernel's now, never judged twice. */
		conn_h = conn_tag_find(ws, pk, set, pk->iss, now);
		if (conn_h & CONN_TAG_FOUND)
			return record(SL_CLASS_NONE, SL_R_ESTABLISHED, XDP_PASS);
		/*
		 * A source whose own bucket (or its parent's) cannot pay for even the cheapest
		 * request is shed before its request is read: the reading is a third of a first
		 * request's cost, and under a flood nearly every first request is such a one.
		 * Only a shed is decided here; an admission always reads the request first.
		 */
		pk->cost = 1;
		sl_weigh(pk, set, now, &ws->d);
		if ((ws->d.reason == SL_R_SHED_PREFIX || ws->d.reason == SL_R_SHED_PARENT ||
		     ws->d.reason == SL_R_SHED_VERDICT) && ws->d.level != LEVEL_TENANT) {
			route = SL_EDGE_ROUTES;
			outcome(&sl_route_stats, route, 1);
			outcome(&sl_tenant_stats, SL_MAX_TENANTS, 1);
			goto shed;
		}
		__builtin_memset(&ws->d, 0, sizeof(ws->d));
		/* Shed before (a retransmission): absorbed, never answered twice. The key's
		 * hash is conn_tag_find's: the two tag tables are indexed by the same one. */
		conn = cookie_tag_of(ws, pk, conn_h, pk->iss, now);
		if (conn)
			return absorb(ctx, pk, conn, rp);
		route = (__u32)sl_route_request(ctx, pk, set);
		if (pk->frag != FRAG_NONE && set->fragment_action == SL_ACT_DROP)
			return record(SL_CLASS_NONE, SL_R_FRAGMENT, XDP_DROP);
		sl_judge(pk, set, now, &ws->d);
		/* The tenant the request named, even when a source bucket refused it before the
		 * tenant's was asked. */
		tix = ws->d.tenant < SL_MAX_TENANTS ? ws->d.tenant :
		      pk->tenant < SL_MAX_TENANTS ? pk->tenant : SL_MAX_TENANTS;
		if (!is_shed(ws->d.reason)) {
			conn_tag_add(conn_h, now);
			outcome(&sl_route_stats, route, 0);
			outcome(&sl_tenant_stats, tix, 0);
			/* Monitor-mode verdicts are counted too, and sampled like sheds. */
			if (ws->d.reason != SL_R_PASSED) {
				record(ws->d.class_id, ws->d.reason, XDP_PASS);
				emit_event(set, &pk->s, &ws->d.key, ws->d.class_id, ws->d.reason,
					   ws->d.action, pk->dport, 0, now);
			}
			return record(ws->d.class_id, SL_R_FIRST_ADMITTED, XDP_PASS);
		}
		outcome(&sl_route_stats, route, 1);
		outcome(&sl_tenant_stats, tix, 1);
	} else if (pk->stage == STAGE_COOKIE_SHED) {
		/* Shed at its SYN (a bucket was already empty), which is why it has our cookie.
		 * Weighed again, charging nothing, to know whose empty bucket its Retry-After
		 * follows; it cannot be admitted, there being no hand-off on this front. */
		sl_weigh(pk, set, now, &ws->d);
		if (!is_shed(ws->d.reason)) {
			ws->d.reason = SL_R_SHED_PREFIX;
			ws->d.level = LEVEL_PREFIX;
		}
		ws->d.action = SL_ACT_REPLY;
	} else {
		/* A stateless port's connection that went through the kernel (a tuple reused
		 * over a socket it holds) costs what an unreadable request costs. */
		if (pk->front == SL_FRONT_STATELESS && pk->unreadable_cost)
			pk->cost = pk->unreadable_cost;
		sl_judge(pk, set, now, &ws->d);
		if (!is_shed(ws->d.reason)) {
			/* Admitted: this tuple's handshake needs no more looking at. */
			slot = pend_slot(pk, set);
			if (slot)
				*slot = 0;
			if (ws->d.reason != SL_R_PASSED) {
				record(ws->d.class_id, ws->d.reason, XDP_PASS);
				emit_event(set, &pk->s, &ws->d.key, ws->d.class_id, ws->d.reason,
					   ws->d.action, pk->dport, 0, now);
			}
			return record(ws->d.class_id, SL_R_PASSED, XDP_PASS);
		}
		/* A 429 needs the request it answers: a bare ACK shed on a reply port frees the
		 * kernel's request socket, and the request that follows gets the 429. On a drop
		 * port the socket stays: the kernel re-sends its SYN-ACK, and each try is
		 * weighed again (the tarpit a drop port wants). */
		if (!pk->payload) {
			if (ws->d.action == SL_ACT_REPLY && !(pk->flags & (TF_FIN | TF_RST))) {
				emit_event(set, &pk->s, &ws->d.key, ws->d.class_id, ws->d.reason,
					   ws->d.action, pk->dport, 0, now);
				return owe_429(ctx, pk, set, ws, rp, now);
			}
			ws->d.action = SL_ACT_DROP;
		}
	}
shed:
	emit_event(set, &pk->s, &ws->d.key, ws->d.class_id, ws->d.reason, ws->d.action,
		   pk->dport, 0, now);
	if (ws->d.action != SL_ACT_REPLY) {
		/* Dropped. A cookie connection is remembered so its retransmissions are not
		 * judged again; on the SYN front the client retransmits, the kernel re-sends
		 * its SYN-ACK, and each try is weighed again: the tarpit a drop port wants. */
		if (pk->stage == STAGE_FIRST_REQUEST &&
		    !remember_drop(ws, pk, set, pk->iss, now, conn_h))
			return record(SL_CLASS_NONE, SL_R_COOKIE_DROP, XDP_DROP);
		return record(ws->d.class_id, ws->d.reason, XDP_DROP);
	}
	return answer_429(ctx, pk, set, ws, rp, pk->iss, pk->ack, pk->our_tsval, now, conn_h);
}

/*
 * SYN front: a non-SYN segment on a protected port whose tuple had a SYN passed to the
 * kernel recently. Does it complete that handshake? The kernel's request socket says which
 * ISNs it sent and received, or the kernel's own SYN cookie check says the ACK is one of its
 * cookies. Only then is the connection charged (NEED_JUDGE, for sl_decide()), its source
 * proven; anything else is the kernel's, or a shed connection's leftover.
 */
__noinline int sl_syn_verify(struct xdp_md *ctx, struct pkt *pk)
{
	struct tcp_request_sock___sl *rsk;
	const struct sl_settings *set;
	struct req_scratch *ws;
	struct bpf_sock *sk;
	struct sl_conn *conn;
	struct reply *rp;
	__u32 zero = 0, *slot, iss = 0, secs;
	__u64 now;
	int state, proven = 0;

	if (!ctx || !pk)
		return XDP_PASS;
	set = bpf_map_lookup_elem(&sl_settings, &zero);
	if (!set)
		return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);
	slot = pend_slot(pk, set);
	now = sl_now_secs(&secs);
	/* (A slot stamped a moment ahead by another CPU's clock reads as fresh.) */
	if (!slot || !*slot || (*slot < secs && secs - *slot > set->pend_ttl_s))
		return NOT_MINE; /* no handshake of the kernel's pending on this tuple */
	rp = bpf_map_lookup_elem(&sl_scratch, &zero);
	ws = bpf_map_lookup_elem(&sl_reqbuf, &zero);
	if (!rp || !ws)
		return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);

	sk = tuple_sock(ctx, pk);
	state = sk ? (int)sk->state : -1;
	if (state == BPF_TCP_NEW_SYN_RECV) {
		rsk = (struct tcp_request_sock___sl *)bpf_skc_to_tcp_request_sock(sk);
		if (rsk) {
			iss = rsk->snt_isn;
			proven = pk->ack - 1 == iss && pk->seq - 1 == rsk->rcv_isn;
		}
	} else if (state == BPF_TCP_LISTEN && !(pk->flags & TF_RST)) {
		/*
		 * No request socket: the kernel answered with its own SYN cookie, maybe. The
		 * helper wants the IP header and the whole TCP header (th_len = doff * 4); they
		 * are copied into scratch first, since a variable-length packet range is not one
		 * the verifier can prove.
		 */
		__u32 tl = ((__u32)pk->doff & 15) * 4, il = pk->s.family == SL_FAM_V4 ? 20 : 40;

		if (tl >= 20) {
			/* clang tests a copy and passes another: make the tested one the one the
			 * verifier sees at the call ("invalid zero-sized read" otherwise). */
			asm volatile("" : "+r"(tl));
			if (tl >= 20 && tl <= 60 &&
			    !bpf_xdp_load_bytes(ctx, pk->ip_off & 0x3ff, ws->rb.b, il) &&
			    !bpf_xdp_load_bytes(ctx, pk->th_off & 0x3fff, &ws->rb.b[64], tl) &&
			    bpf_tcp_check_syncookie(sk, ws->rb.b, il,
						    (struct tcphdr *)&ws->rb.b[64], tl) == 0) {
				iss = pk->ack - 1;
				proven = 1;
			}
		}
	}
	if (sk)
		bpf_sk_release(sk);
	if (state != BPF_TCP_NEW_SYN_RECV && state != BPF_TCP_LISTEN && state != -1)
		return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS); /* the kernel's connection */

	/* A connection shed at its handshake: its leftovers. */
	if (state == BPF_TCP_NEW_SYN_RECV) {
		conn = shed_entry(&ws->ck, pk, iss, now);
	} else {
		conn = shed_entry(&ws->ck, pk, pk->ack - 1, now);
		if (!conn)
			conn = shed_entry(&ws->ck, pk, pk->ack - SL_429_LEN - 2, now);
	}
	if (conn && (!proven || !pk->payload)) {
		/* Shed over the kernel's request socket, which would hold the tuple (a reconnect
		 * on it is answered from there) and send its SYN-ACK again for a minute: the
		 * client's reset goes to it, and so does its first ACK of the 429, turned into
		 * one. Its FIN is acknowledged as any (a client whose FIN carries that first ACK
		 * leaves the socket to the kernel's SYN-ACK retransmission, which it resets). */
		if (state == BPF_TCP_NEW_SYN_RECV) {
			if (pk->flags & TF_RST)
				return record(SL_CLASS_NONE, SL_R_REQSK_RESET, XDP_PASS);
			if (!(pk->flags & (TF_FIN | TF_SYN)) && !pk->payload)
				return record(SL_CLASS_NONE, SL_R_REQSK_RESET,
					      reset_inbound(ctx, pk, rp));
		}
		__builtin_memset(rp, 0, sizeof(*rp) - sizeof(rp->body));
		sl_read_ts(ctx, pk);
		return absorb(ctx, pk, conn, rp);
	}
	/* Not the handshake's own segment: the kernel's request socket deals with it; with no
	 * socket at all, it is the caller's (a cookie marker may make it a forgery). */
	if (!proven || (pk->flags & TF_RST))
		return state == BPF_TCP_NEW_SYN_RECV ?
			       record(SL_CLASS_NONE, SL_R_VERIFY_ACK, XDP_PASS) : NOT_MINE_LOOKED;
	sl_read_ts(ctx, pk);
	pk->iss = iss;
	pk->our_tsval = pk->tsecr;
	pk->stage = STAGE_VERIFIED;
	return NEED_JUDGE;
}

/*
 * Answer a SYN with a cookie SYN-ACK: every SYN on a stateless port, a shed one on a SYN-front
 * `reply` port. Written over the SYN where it lies when the SYN's shape allows
 * (synack_in_place), else by sl_emit_reply. Only the fields a SYN-ACK reads are set in the
 * record (the in-place path reads no L2 field, and the general one gets them below): no
 * memset of it. The MAC inline: the calls of sl_cookie_new and sl_mac were ~20 ns of it.
 * The stack: this with sluice_xdp's frame must stay within the verifier's 512 bytes for a
 * call chain (the options' walk is a function of its own for that, and the MAC reads the
 * segment's record instead of a struct sl_conn_id).
 */
static __always_inline int send_synack(struct xdp_md *ctx, const struct pkt *pk)
{
	const struct sl_settings *set;
	struct sl_cookie_keys *keys;
	struct sl_cookie_opts o = {};
	struct seg_opts so = {};
	struct reply *rp;
	__u32 zero = 0, tsval = 0;
	int i, rc;

	__u64 now = sl_now();

	set = bpf_map_lookup_elem(&sl_settings, &zero);
	keys = bpf_map_lookup_elem(&sl_cookie_keys, &zero);
	rp = bpf_map_lookup_elem(&sl_scratch, &zero);
	if (!set || !keys || !rp || (!keys->cur[0] && !keys->cur[1]))
		return XDP_DROP; /* no key yet: drop, as a drop port would */
	parse_tcp_opts(ctx, pk->th_off, pk->doff, &so);
	if (so.ts) {
		/* The largest table MSS the client can take; window scale and SACK as offered. */
#pragma unroll
		for (i = 7; i > 0; i--)
			if (sl_mss_tab[i] <= so.mss)
				break;
		o.mss_idx = i;
		o.wscale = so.ws;
		o.sack = so.sack;
		o.ts = 1;
	}

	rp->kind = REPLY_SYNACK;
	rp->family = pk->s.family;
	__builtin_memcpy(rp->saddr, pk->s.daddr, 16);
	__builtin_memcpy(rp->daddr, pk->s.saddr, 16);
	rp->sport = bpf_htons(pk->dport);
	rp->dport = bpf_htons(pk->sport);
	/* The MAC reads the addresses where the segment's record holds them (per-CPU map
	 * memory, not a stack copy). */
	rp->seq = sl_cookie_make_of(pk->s.family, pk->s.saddr, pk->s.daddr, pk->sport, pk->dport,
				    pk->seq, now, &o, keys, &tsval);
	rp->tsval = tsval;
	rp->ack = pk->seq + 1;
	rp->mss = pk->s.family == SL_FAM_V4 ? set->mss4 : set->mss6;
	if (!rp->mss)
		rp->mss = 536;
	/* Without timestamps the cookie has no room for window scale or SACK: offer neither. */
	rp->ts = o.ts;
	rp->tsecr = so.tsval;
	rp->ws = o.ts ? so.ws : 0;
	rp->sack = o.ts ? so.sack : 0;
	rc = synack_in_place(ctx, rp, pk->ip_off & 0x3ff, pk->th_off & 0x3fff);
	if (rc >= 0)
		return rc;
	if (reply_l2_from(rp, ctx, pk))
		return XDP_DROP;
	return sl_emit_reply(ctx, rp);
}

/* The SYN front's SYN-ACK for a shed SYN on a `reply` port. */
__noinline int sl_send_synack(struct xdp_md *ctx, const struct pkt *pk)
{
	if (!ctx || !pk)
		return XDP_DROP;
	return send_synack(ctx, pk);
}

#define SYN_REUSED (-1)   /* the server holds a socket on the tuple: the kernel's SYN */
#define SYN_TOO_DEEP (-2) /* more tags than a reply carries back */

/*
 * A SYN on a stateless port, its source not blocked: the reused-tuple check, then the cookie
 * SYN-ACK (XDP_TX or XDP_DROP), or SYN_REUSED or SYN_TOO_DEEP. One global function for both:
 * the call of sl_sock_state was ~10 ns of every SYN.
 */
__noinline int sl_stateless_syn(struct xdp_md *ctx, const struct pkt *pk)
{
	if (!ctx || !pk)
		return XDP_DROP;
	/*
	 * A tuple the server still holds a socket for (its TIME_WAIT, most often: the server
	 * closed first) is the kernel's to reopen by its own rules, which a cookie would bypass.
	 */
	if (sock_state(ctx, pk) >= 0)
		return SYN_REUSED;
	/* Under more tags than a reply carries back, no cookie can reach the client; the
	 * kernel would take the SYN, so it is not passed either. */
	if (pk->n_vlan > SL_MAX_VLAN)
		return SYN_TOO_DEEP;
	return send_synack(ctx, pk);
}

/*
 * A SYN to a protected port, its source not yet proven. Stateless front: a cookie SYN-ACK,
 * unless a block verdict covers the source. SYN front: weigh the buckets without charging;
 * room means the kernel takes the handshake (and the charge waits for its ACK), none means
 * shed now. Inline in the entry point, unlike the other stages (see struct pkt): its call
 * was ~9 ns of every SYN, and checked once per parse path it costs the verifier ~12k more
 * instructions of its 1M (489k in all).
 */
static __always_inline int sl_syn(struct xdp_md *ctx, struct seg_scratch *ss)
{
	const struct sl_settings *set;
	struct pkt *pk = &ss->pk;
	struct decision *d;
	__u32 zero = 0, *slot, now_s;
	__u64 now;
	int rc;

	/* Inline here, not the calls the other segments make (sl_is_local, sl_martian): a call
	 * and return of a global function is ~9 ns on this machine, and every SYN asks both. */
	if (!local_addr(pk->s.daddr, pk->s.family, 0))
		return record(SL_CLASS_NONE, SL_R_NOT_LOCAL, XDP_PASS);
	/* The segment's record is the entry point's (@ss): no second lookup of it. */
	set = bpf_map_lookup_elem(&sl_settings, &zero);
	if (!set)
		return record(SL_CLASS_NONE, SL_R_STATE_ERROR, XDP_PASS);
	d = &ss->d;
	now = sl_now_secs(&now_s);
	if (martian(ctx, pk))
		return record(SL_CLASS_NONE, SL_R_MARTIAN, XDP_DROP);

	if (pk->front == SL_FRONT_STATELESS) {
		__u32 *vcount = bpf_map_lookup_elem(&sl_vcount, &zero);

		if (vcount && *vcount) {
			struct sl_lpm_key lk;
			struct sl_verdict *v;

			lpm_key_of(&lk, pk->s.saddr, pk->s.family);
			v = bpf_map_lookup_elem(&sl_verdicts, &lk);
			if (v && now < v->expires_ns && v->action == SL_VERDICT_BLOCK)
				return record(SL_CLASS_NONE, SL_R_SHED_VERDICT, XDP_DROP);
		}
		/*
		 * A reused tuple's SYN goes to the kernel, and the connection is then proven and
		 * charged like the SYN front's: at the ACK that completes the kernel's handshake,
		 * at the port's unreadable cost, since its request is never read.
		 */
		rc = sl_stateless_syn(ctx, pk);
		if (rc == SYN_REUSED) {
			if (pk->payload)
				return record(SL_CLASS_NONE, SL_R_SYN_DATA, XDP_DROP);
			slot = pend_slot(pk, set);
			if (slot)
				*slot = now_s ?: 1; /* 0 marks a cold slot */
			return record(SL_CLASS_NONE, SL_R_TW_REUSE, XDP_PASS);
		}
		if (rc == SYN_TOO_DEEP)
			return record(SL_CLASS_NONE, SL_R_MAL_VLAN_DEPTH, XDP_DROP);
		return record(SL_CLASS_NONE, SL_R_HANDSHAKE, rc);
	}

	/* SYN front. Data in a SYN (TCP Fast Open) would be handed to a TFO listener before
	 * anything proves its source: refused, and the client retries without it. */
	if (pk->payload)
		return record(SL_CLASS_NONE, SL_R_SYN_DATA, XDP_DROP);
	/* A fragmented SYN may carry data in its later fragments, which the edge cannot see. */
	if (pk->frag != FRAG_NONE)
		return record(SL_CLASS_NONE, SL_R_FRAGMENT, XDP_DROP);
	judge(pk, set, now, d, 1); /* sl_weigh, inline: the SYN front weighs every SYN */
	switch (d->reason) {
	case SL_R_SHED_PREFIX:
	case SL_R_SHED_PARENT:
	case SL_R_SHED_TENANT:
	case SL_R_SHED_VERDICT:
		emit_event(set, &pk->s, &d->key, d->class_id, d->reason, d->action, pk->dport, 0,
			   now);
		if (d->action == SL_ACT_REPLY)
			return record(d->class_id, d->reason, sl_send_synack(ctx, pk));
		return record(d->class_id, d->reason, XDP_DROP);
	default:
		/* Room, or a monitor-mode would-shed (counted at the charge, as it happens). */
		slot = pend_slot(pk, set);
		if (slot)
			*slot = now_s ?: 1; /* 0 marks a cold slot */
		return record(d->class_id, SL_R_SYN_PEEKED, XDP_PASS);
	}
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
	__u32 zero = 0, dport, l4len, n_vlan, ip_off;
	__u8 frag = FRAG_NONE, flags;
	void *l3;
	int proto, rc, crc = NOT_MINE, marked = 0;

	proto = parse_eth(&c);
	if (proto == -SL_R_MAL_VLAN_DEPTH) {
		/* More tags than the in-line parse reads: the kernel strips priority tags one
		 * after another, so a frame under any number of them can reach a listener. */
		proto = parse_eth_deep(&c, ctx, xdp_data(ctx), 0);
		if (proto == -SL_R_MAL_VLAN_DEPTH)
			return record(SL_CLASS_NONE, SL_R_MAL_VLAN_DEPTH, XDP_DROP);
	}
	if (proto < 0)
		return record(SL_CLASS_NONE, -proto, XDP_PASS);
	l3 = c.pos;
	ip_off = (__u32)(l3 - xdp_data(ctx));
	n_vlan = (ip_off - 14) >> 2;
	if (proto == bpf_htons(ETH_P_IP))
		proto = parse_ip4(&c, &iph, &frag);
	else if (proto == bpf_htons(ETH_P_IPV6))
		proto = parse_ip6(&c, &ip6, ctx, xdp_data(ctx), 0, &frag);
	else
		return record(SL_CLASS_NONE, SL_R_NOT_PROTECTED, XDP_PASS);
	/*
	 * What cannot be parsed far enough to show a destination port is passed untouched: the
	 * kernel drops a truncated header or chain as well, and it cannot be a connection to a
	 * protected port. The malformed and fragment policies below touch only traffic whose
	 * port is visible and protected.
	 */
	if (proto < 0) {
		/* A first fragment whose extension chain goes on into a later fragment: RFC 8200
		 * section 4.5 says to discard it, and a kernel that reassembles it anyway would
		 * hand its upper layer past the edge unjudged. */
		if (frag == FRAG_FIRST)
			return record(SL_CLASS_NONE, SL_R_FRAGMENT, XDP_DROP);
		return record(SL_CLASS_NONE, -proto, XDP_PASS);
	}
	if (proto != IPPROTO_TCP)
		return record(SL_CLASS_NONE, SL_R_NOT_PROTECTED, XDP_PASS);
	/* A later fragment has no ports; without its first fragment (judged below) the kernel
	 * can never reassemble it into anything. */
	if (frag == FRAG_LATER)
		return record(SL_CLASS_NONE, SL_R_FRAG_LATER, XDP_PASS);
	th = c.pos;
	if ((void *)th + 4 > c.end)
		return record(SL_CLASS_NONE, SL_R_MAL_TCP, XDP_PASS);
	dport = bpf_ntohs(th->dest);
	port = bpf_map_lookup_elem(&sl_ports, &dport);
	if (!port || !port->protected)
		return record(SL_CLASS_NONE, SL_R_NOT_PROTECTED, XDP_PASS);
	rc = parse_tcp(&c, &th);
	if (rc < 0) {
		/* Protected, and not a TCP header the edge can judge: a first fragment cut
		 * inside the header (whose flags could make it a SYN once reassembled) is
		 * always dropped; other malformed headers follow the malformed policy. */
		set = bpf_map_lookup_elem(&sl_settings, &zero);
		if (frag != FRAG_NONE)
			return record(SL_CLASS_NONE, SL_R_FRAGMENT, XDP_DROP);
		return record(SL_CLASS_NONE, -rc,
			      !set || set->malformed_action == SL_ACT_DROP ? XDP_DROP : XDP_PASS);
	}
	/* The TCP header must lie inside the IP datagram, not in the frame's trailer: a first
	 * fragment holding 8 bytes of TCP, padded with bytes that read as the rest of a header,
	 * would otherwise pass as an ACK and be reassembled by the kernel into a SYN. */
	{
		__u32 dlen = 0, hoff = (__u32)((void *)th - l3);

		if (iph)
			dlen = bpf_ntohs(iph->tot_len);
		else if (ip6)
			dlen = bpf_ntohs(ip6->payload_len) + 40;
		if (hoff + th->doff * 4 > dlen) {
			set = bpf_map_lookup_elem(&sl_settings, &zero);
			if (frag != FRAG_NONE)
				return record(SL_CLASS_NONE, SL_R_FRAGMENT, XDP_DROP);
			return record(SL_CLASS_NONE, SL_R_MAL_TCP_DOFF,
				      !set || set->malformed_action == SL_ACT_DROP ? XDP_DROP :
										     XDP_PASS);
		}
	}
	flags = ((__u8 *)th)[13];
	if ((flags & TF_SYN) && (flags & (TF_FIN | TF_RST)))
		return record(SL_CLASS_NONE, SL_R_BAD_FLAGS, XDP_DROP);

	if (!(flags & TF_SYN) || (flags & TF_ACK)) {
		struct sl_cookie_keys *keys;
		int cookie_port = port->action == SL_ACT_REPLY || port->front == SL_FRONT_STATELESS;

		if (!(flags & TF_ACK) || (flags & TF_SYN))
			return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);
		/* Established traffic leaves here. On a cookie port: no cookie connection in any
		 * state ends in this ack (one compare, 15 of 16 segments). */
		if (cookie_port) {
			keys = bpf_map_lookup_elem(&sl_cookie_keys, &zero);
			marked = keys && sl_cookie_marked(bpf_ntohl(th->ack_seq) - 1, keys);
		}
		if (!marked) {
			/* One array load says whether a SYN on this tuple went to the kernel
			 * lately (SYN front; on a stateless port, a reused tuple). */
			set = bpf_map_lookup_elem(&sl_settings, &zero);
			if (!set)
				return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);
			{
				__u32 *slot, a0 = 0, a3 = 0;

				/* From the header, before any per-CPU scratch is touched. */
				if (iph) {
					__builtin_memcpy(&a0, &iph->saddr, 4);
				} else if (ip6) {
					__builtin_memcpy(&a0, &ip6->saddr, 4);
					a3 = ip6->saddr.in6_u.u6_addr32[3];
				}
				slot = pend_slot_of(a0, a3, bpf_ntohs(th->source), (__u16)dport, set);
				if (!slot || !*slot)
					return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);
			}
		}
	}

	/* Only segments sluice judges get this far: everything above touched no state and
	 * zeroed nothing, which is most of what keeps the fast path fast. */
	ss = bpf_map_lookup_elem(&sl_segs, &zero);
	if (!ss)
		return record(SL_CLASS_NONE, SL_R_STATE_ERROR, XDP_PASS);
	/* The segment's record only: the decision beside it (sl_syn's) is written by the
	 * judgement before anything reads it. */
	__builtin_memset(&ss->pk, 0, sizeof(ss->pk));
	pk = &ss->pk;
	sp = &pk->s;
	pk->n_vlan = n_vlan;
	pk->ip_off = ip_off;
	pk->frag = frag;
	if (iph) {
		sp->family = SL_FAM_V4;
		put_addr(sp->saddr, iph->saddr, 0, 0, 0);
		put_addr(sp->daddr, iph->daddr, 0, 0, 0);
		l4len = bpf_ntohs(iph->tot_len);
		l4len = l4len > iph->ihl * 4 ? l4len - iph->ihl * 4 : 0;
	} else if (ip6) {
		__u32 ext = (__u32)((void *)th - (void *)(ip6 + 1));

		sp->family = SL_FAM_V6;
		put_addr(sp->saddr, ip6->saddr.in6_u.u6_addr32[0], ip6->saddr.in6_u.u6_addr32[1],
			 ip6->saddr.in6_u.u6_addr32[2], ip6->saddr.in6_u.u6_addr32[3]);
		put_addr(sp->daddr, ip6->daddr.in6_u.u6_addr32[0], ip6->daddr.in6_u.u6_addr32[1],
			 ip6->daddr.in6_u.u6_addr32[2], ip6->daddr.in6_u.u6_addr32[3]);
		/* Payload length counts extension headers, which the cursor has walked. */
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
	pk->port_cost = port->cost;
	pk->unreadable_cost = port->unreadable_cost;
	pk->tenant = SL_TENANT_BY_DEST;
	/* The IP length, not the frame length: Ethernet may pad short frames. An IP length
	 * short of the TCP header is a segment the kernel drops (tcp_v4_rcv): not judged. */
	if (l4len < th->doff * 4) {
		set = bpf_map_lookup_elem(&sl_settings, &zero);
		return record(SL_CLASS_NONE, SL_R_MAL_TCP_DOFF,
			      !set || set->malformed_action == SL_ACT_DROP ? XDP_DROP : XDP_PASS);
	}
	pk->payload = l4len - th->doff * 4;

	if (!(flags & TF_SYN)) {
		/* Traffic to an address this node does not serve is routed through: not ours.
		 * (sl_syn asks the same first.) */
		if (!sl_is_local(pk))
			return record(SL_CLASS_NONE, SL_R_NOT_LOCAL, XDP_PASS);
		if (marked) {
			crc = sl_cookie_segment(ctx, pk);
			if (crc == NEED_JUDGE)
				return sl_decide(ctx, pk);
			if (crc >= 0)
				return crc;
		}
		/* A handshake of the kernel's, pending on this tuple? (SYN front, or a stateless
		 * port's reused tuple.) */
		rc = sl_syn_verify(ctx, pk);
		if (rc == NEED_JUDGE)
			return sl_decide(ctx, pk);
		if (rc != NOT_MINE && rc != NOT_MINE_LOOKED)
			return rc;
		if (!marked || (port->front == SL_FRONT_SYN && port->action != SL_ACT_REPLY))
			return record(SL_CLASS_NONE,
				      rc == NOT_MINE_LOOKED ? SL_R_VERIFY_ACK : SL_R_NOT_SYN, XDP_PASS);
		if (crc == NO_SOCKET)
			return record(SL_CLASS_NONE, SL_R_COOKIE_BAD, XDP_DROP);
		/*
		 * Marked like our cookie but not one: a forged or stale ACK, or (one time in
		 * sixteen) a segment of an established connection. Only a socket lookup tells
		 * them apart. Forgeries are dropped in silence, so the cookie space answers no
		 * questions and creates nothing.
		 */
		if (sl_sock_state(ctx, pk) < 0)
			return record(SL_CLASS_NONE, SL_R_COOKIE_BAD, XDP_DROP);
		return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);
	}
	return sl_syn(ctx, ss);
}
