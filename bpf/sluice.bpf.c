// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * sluice edge datapath: per-prefix admission at the SYN.
 *
 * For every frame: parse Ethernet/VLAN/IPv4/IPv6/TCP; anything that is not a SYN to a
 * protected port passes untouched. A SYN is typed by its source's ASN class (LPM trie), and
 * charged the port's cost against two GCRA buckets: the source prefix at the class's key
 * length (/24, /64, ...) and its parent prefix (/16, /48, ...), so that rotating addresses or
 * /64s inside one allocation buys nothing. Either bucket empty sheds the SYN (or, in monitor
 * mode, counts would_shed and passes it). Every packet leaves through record(), which counts
 * its reason and class.
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
#include "sluice/gcra.h"
#include "sluice/hash.h"
#include "parse.h"
#include "maps.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Load-time constant: ghost table size - 1 (a power of two). Set by sluiced before load. */
const volatile __u32 ghost_mask = 65535;

struct src {
	__u8 family;
	__u8 addr[16]; /* IPv4 in the first 4 bytes */
};

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

	__builtin_memcpy(w, s->addr, sizeof(w));
	k->family = s->family;
	k->plen = plen;
	k->level = level;
	k->class_id = class_id;
	w[0] = mask_word(w[0], plen, 0);
	w[1] = mask_word(w[1], plen, 1);
	__builtin_memcpy(k->addr, w, sizeof(w));
}

/*
 * The source's class: one load from the /24 table for IPv4; the LPM trie for IPv6 and for
 * the IPv4 /24s that hold a longer row. Sources in no row get the unknown class.
 */
static __always_inline __u32 classify(const struct src *s, const struct sl_settings *set)
{
	struct sl_lpm_key lk = { .prefixlen = 128 };
	__u32 slot = set->asn_slot & 1;
	struct sl_asn_val *av;
	void *trie;

	if (s->family == SL_FAM_V4) {
		__u32 a, idx, cls;
		__u64 *w;

		__builtin_memcpy(&a, s->addr, 4);
		a = bpf_ntohl(a);
		idx = slot * SL_DIR_WORDS + (a >> 12);
		w = bpf_map_lookup_elem(&sl_asn_dir, &idx);
		if (!w)
			return set->unknown_class;
		cls = (*w >> (((a >> 8) & 15) * 4)) & 15;
		if (cls != SL_DIR_USE_TRIE)
			return cls;
		lk.addr[10] = 0xff;
		lk.addr[11] = 0xff;
		__builtin_memcpy(&lk.addr[12], s->addr, 4);
	} else {
		__builtin_memcpy(lk.addr, s->addr, 16);
	}
	trie = bpf_map_lookup_elem(&sl_asn, &slot);
	if (!trie)
		return set->unknown_class;
	av = bpf_map_lookup_elem(trie, &lk);
	return av ? av->class_id : set->unknown_class;
}

enum charge_result {
	CHARGE_OK = 0,
	CHARGE_DENIED,
	CHARGE_BUSY,
	CHARGE_NOSTATE,
};

/*
 * Charge @cost against the bucket of @k. On CHARGE_OK, *@bucket and *@inc let the caller
 * refund the charge if a later bucket denies the packet.
 */
static __always_inline int charge(const struct sl_bkey *k, const struct sl_rate *r,
				  __u64 cost, __u64 now, const struct sl_settings *set,
				  struct sl_counters *cnt, struct sl_bucket **bucket, __u64 *inc)
{
	struct sl_bucket *b;
	struct sl_ghost *ghost;
	__u32 slot, tag;
	__u64 h;
	int i;

	b = bpf_map_lookup_elem(&sl_buckets, k);
	if (!b) {
		struct sl_bucket nb;

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
		*bucket = b;
		*inc = next - (old > now ? old : now);
		/*
		 * Remember keys that are more than half spent: those are the ones whose eviction
		 * would otherwise be a gift. Keys with room to spare skip the shared store.
		 */
		if (next - now > r->tolerance_ns / 2) {
			h = sl_ghost_hash(k, set->hash_seed);
			slot = (__u32)h & ghost_mask;
			tag = h >> 32;
			ghost = bpf_map_lookup_elem(&sl_ghosts, &slot);
			if (ghost) {
				/* Two plain stores: a torn pair from a racing CPU mismatches
				 * at worst, and a mismatch only forgets. */
				ghost->tat = next;
				ghost->tag = tag;
			}
		}
		return CHARGE_OK;
	}
	if (cnt)
		cnt->cas_busy++;
	return CHARGE_BUSY;
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
	if (cnt && reason < SL_REASON_SLOTS)
		cnt->pkts[reason]++;
	return action;
}

static __always_inline int act(__u8 action)
{
	return action == SL_ACT_DROP ? XDP_DROP : XDP_PASS;
}

/* Judge one SYN from @s to a protected @port. Sets *@class_id; returns the reason. */
static __always_inline int judge_syn(const struct src *s, const struct sl_port *port,
				     const struct sl_settings *set, __u32 *class_id)
{
	struct sl_class_policy *pol;
	struct sl_bucket *pb = NULL, *qb = NULL;
	struct sl_counters *cnt;
	struct sl_bkey key;
	__u64 now, pinc = 0, qinc = 0;
	__u32 cls = classify(s, set);
	__u8 plen, parent;
	int rc;

	if (cls >= SL_MAX_CLASSES)
		cls = set->unknown_class;
	pol = bpf_map_lookup_elem(&sl_classes, &cls);
	if (!pol || !pol->valid) {
		/* A table row naming a class the config dropped: treat the source as unknown. */
		cls = set->unknown_class;
		pol = bpf_map_lookup_elem(&sl_classes, &cls);
		if (!pol || !pol->valid) {
			*class_id = SL_CLASS_NONE;
			return SL_R_STATE_ERROR;
		}
	}
	*class_id = cls;
	cnt = bpf_map_lookup_elem(&sl_stats, &cls);

	if (s->family == SL_FAM_V4) {
		plen = pol->v4_prefix;
		parent = pol->v4_parent;
	} else {
		plen = pol->v6_prefix;
		parent = pol->v6_parent;
	}
	/*
	 * The coarse clock (CLOCK_MONOTONIC_COARSE, one tick of resolution) costs a load where
	 * the precise one reads the clocksource. A tick is 1-4 ms: buckets refill in tick-sized
	 * steps, which only matters for per-prefix rates above a few hundred units a second.
	 */
	now = bpf_ktime_get_coarse_ns();

	make_key(&key, s, plen, SL_LEVEL_PREFIX, cls);
	rc = charge(&key, &pol->prefix, port->cost, now, set, cnt, &pb, &pinc);
	if (rc == CHARGE_NOSTATE)
		return SL_R_STATE_ERROR;
	if (rc != CHARGE_OK)
		return pol->mode == SL_MODE_MONITOR ? SL_R_WOULD_SHED_PREFIX : SL_R_SHED_PREFIX;

	make_key(&key, s, parent, SL_LEVEL_PARENT, cls);
	rc = charge(&key, &pol->parent, port->cost, now, set, cnt, &qb, &qinc);
	if (rc == CHARGE_NOSTATE)
		return SL_R_STATE_ERROR;
	if (rc != CHARGE_OK) {
		/* The prefix is not to blame for its parent's flood: give back what it paid. */
		if (pb)
			__sync_fetch_and_add(&pb->tat, -pinc);
		return pol->mode == SL_MODE_MONITOR ? SL_R_WOULD_SHED_PARENT : SL_R_SHED_PARENT;
	}
	return SL_R_PASSED;
}

SEC("xdp")
int sluice_xdp(struct xdp_md *ctx)
{
	struct cursor c = { .pos = xdp_data(ctx), .end = xdp_data_end(ctx) };
	struct sl_settings *set;
	struct sl_port *port;
	struct iphdr *iph;
	struct ipv6hdr *ip6;
	struct tcphdr *th;
	struct src s = {};
	__u32 zero = 0, dport, cls = SL_CLASS_NONE;
	int proto, reason;

	proto = parse_eth(&c);
	if (proto < 0)
		goto malformed;
	if (proto == bpf_htons(ETH_P_IP)) {
		proto = parse_ip4(&c, &iph);
		if (proto < 0)
			goto malformed;
		s.family = SL_FAM_V4;
		__builtin_memcpy(s.addr, &iph->saddr, 4);
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		proto = parse_ip6(&c, &ip6);
		if (proto < 0)
			goto malformed;
		s.family = SL_FAM_V6;
		__builtin_memcpy(s.addr, &ip6->saddr, 16);
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
	if (!th->syn || th->ack)
		return record(SL_CLASS_NONE, SL_R_NOT_SYN, XDP_PASS);
	/* Settings are read only here and below: the fast path above never needs them. */
	set = bpf_map_lookup_elem(&sl_settings, &zero);
	if (!set)
		return record(SL_CLASS_NONE, SL_R_STATE_ERROR, XDP_PASS);

	reason = judge_syn(&s, port, set, &cls);
	switch (reason) {
	case SL_R_SHED_PREFIX:
	case SL_R_SHED_PARENT:
		return record(cls, reason, act(port->action));
	default:
		return record(cls, reason, XDP_PASS);
	}

malformed:
	reason = -proto;
	set = bpf_map_lookup_elem(&sl_settings, &zero);
	if (!set)
		return record(SL_CLASS_NONE, reason, XDP_PASS);
	if (reason == SL_R_FRAGMENT)
		return record(SL_CLASS_NONE, reason, act(set->fragment_action));
	return record(SL_CLASS_NONE, reason, act(set->malformed_action));
}
