// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Table occupancy for /metrics, without walking a key. The kernel keeps, for every hash map
 * (LRU ones included), a per-CPU count of the elements inserted and removed (evictions too);
 * bpf_map_sum_elem_count() sums it. This iterator visits every BPF map on the host (a few
 * hundred at most: no keys are read) and writes one { map id, elements } record per map;
 * sluiced keeps the records of its own maps. Reading it costs O(maps x CPUs), ~0.2 ms for
 * 112 maps here, whatever the size of the tables.
 *
 * LPM tries and arrays are not counted by the kernel (they report 0): sluiced uses its own
 * counters for those (sl_vcount for verdicts) or a bounded sample (the bucket sets).
 *
 * Loaded apart from the datapath so a kernel without the kfunc (before 6.6) or without BTF
 * loses only the occupancy gauges, never the edge.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* Only the fields read here, relocated against the running kernel's BTF (CO-RE). */
struct seq_file;
struct bpf_iter_meta {
	struct seq_file *seq;
} __attribute__((preserve_access_index));
struct bpf_map {
	__u32 id;
} __attribute__((preserve_access_index));
struct bpf_iter__bpf_map {
	struct bpf_iter_meta *meta;
	struct bpf_map *map;
} __attribute__((preserve_access_index));

extern __s64 bpf_map_sum_elem_count(const struct bpf_map *map) __ksym;

SEC("iter/bpf_map")
int sl_occupancy(struct bpf_iter__bpf_map *ctx)
{
	struct bpf_map *map = ctx->map;
	__u64 rec[2];

	if (!map) /* the end of the walk */
		return 0;
	rec[0] = map->id;
	rec[1] = (__u64)bpf_map_sum_elem_count(map);
	bpf_seq_write(ctx->meta->seq, rec, sizeof(rec));
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
