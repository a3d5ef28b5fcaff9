// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The building blocks of a SYN decision, each alone in a program, so xdp_cost can show where
 * the nanoseconds of the full decision go. Each program does one thing on top of XDP_PASS.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sluice/abi.h"
#include "sluice/hash.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 20);
	__type(key, struct sl_bkey);
	__type(value, struct sl_bucket);
} part_lru SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SL_ASN_MAX_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sl_lpm_key);
	__type(value, struct sl_asn_val);
} part_trie SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_DIR_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} part_dir SEC(".maps");

/* The datapath's bucket table at edge.state_entries = 2^20: 2^18 sets of four ways. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 18);
	__type(key, __u32);
	__type(value, struct sl_bucket_set);
} part_sets SEC(".maps");

__u32 part_seed = 0x2545f491; /* in .bss-like data, so the hash is computed, not folded */

/* Keeps a value alive without a memory barrier. */
#define USE(x) asm volatile("" : : "r"(x))

SEC("xdp")
int part_clock(struct xdp_md *ctx)
{
	USE(bpf_ktime_get_coarse_ns());
	return XDP_PASS;
}

SEC("xdp")
int part_clock_precise(struct xdp_md *ctx)
{
	USE(bpf_ktime_get_ns());
	return XDP_PASS;
}

SEC("xdp")
int part_lru_lookup(struct xdp_md *ctx)
{
	struct sl_bkey k = { .family = SL_FAM_V4, .plen = 24 };
	struct sl_bucket *b = bpf_map_lookup_elem(&part_lru, &k);

	return b ? XDP_PASS : XDP_DROP;
}

SEC("xdp")
int part_lru_cas(struct xdp_md *ctx)
{
	struct sl_bkey k = { .family = SL_FAM_V4, .plen = 24 };
	struct sl_bucket *b = bpf_map_lookup_elem(&part_lru, &k);
	__u64 old;

	if (!b)
		return XDP_DROP;
	old = b->tat;
	__sync_val_compare_and_swap(&b->tat, old, old + 1);
	return XDP_PASS;
}

SEC("xdp")
int part_trie_lookup(struct xdp_md *ctx)
{
	struct sl_lpm_key k = { .prefixlen = 128,
				.addr = { [10] = 0xff, [11] = 0xff, 198, 51, 100, 9 } };

	return bpf_map_lookup_elem(&part_trie, &k) ? XDP_PASS : XDP_DROP;
}

SEC("xdp")
int part_dir_lookup(struct xdp_md *ctx)
{
	__u32 idx = (198u << 12) | (51u << 4) | 6;
	__u64 *w = bpf_map_lookup_elem(&part_dir, &idx);

	return w ? XDP_PASS : XDP_DROP;
}

/* The set-associative table's lookup as sl_charge_key does it: the keyed hash of the key, one
 * array load, four tag compares. */
static __always_inline __u64 *part_set_find(void)
{
	struct sl_bkey k = { .family = SL_FAM_V4, .plen = 24, .addr = { 198, 51, 100 } };
	__u64 h = sl_key_hash(&k, part_seed);
	__u32 idx = (__u32)h & ((1 << 18) - 1), tag = h >> 32, i;
	struct sl_bucket_set *bs = bpf_map_lookup_elem(&part_sets, &idx);

	if (!bs)
		return NULL;
#pragma unroll
	for (i = 0; i < SL_BUCKET_WAYS; i++)
		if (bs->way[i].tag == tag)
			return &bs->way[i].tat;
	return &bs->spill_tat;
}

SEC("xdp")
int part_set_lookup(struct xdp_md *ctx)
{
	__u64 *tat = part_set_find();

	return tat ? XDP_PASS : XDP_DROP;
}

SEC("xdp")
int part_set_cas(struct xdp_md *ctx)
{
	__u64 *tat = part_set_find(), old;

	if (!tat)
		return XDP_DROP;
	old = *tat;
	__sync_val_compare_and_swap(tat, old, old + 1);
	return XDP_PASS;
}
