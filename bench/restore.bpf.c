// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * For benchmarking programs that rewrite their frame (the SYN-ACK, the 429): BPF_PROG_TEST_RUN
 * runs every repeat on the same buffer, so without this the second repeat would see the first
 * one's reply. restore_then puts the original frame back (size, then bytes) and tail-calls the
 * program under test. xdp_cost runs it in front of a bare XDP_PASS too, and subtracts.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sluice/abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct bench_frame {
	__u32 len;
	__u32 forget;             /* delete conn_key from sl_shed before each run, and empty
				   * its sets of sl_shed_sets and sl_conn_sets */
	__u8 data[512];
	struct sl_conn_key conn_key;
	__u32 shed_set;           /* conn_key's set in sl_shed_sets (the caller hashes it) */
	__u32 conn_set;           /* and in sl_conn_sets */
};

/* The datapath's admitted-connection tags (xdp_cost reuses its fd): a first request decided
 * once is remembered there, and the next repeat would measure the retransmission path. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_CONN_SETS);
	__type(key, __u32);
	__type(value, struct sl_shed_set);
} sl_conn_sets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct sl_conn_key);
	__type(value, struct sl_conn);
} sl_shed SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_SHED_SETS);
	__type(key, __u32);
	__type(value, struct sl_shed_set);
} sl_shed_sets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_frame);
} bench_frame SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} bench_next SEC(".maps");

SEC("xdp")
int restore_then(struct xdp_md *ctx)
{
	struct bench_frame *f;
	__u32 zero = 0, len;
	long cur;

	f = bpf_map_lookup_elem(&bench_frame, &zero);
	if (!f)
		return XDP_ABORTED;
	cur = (long)ctx->data_end - (long)ctx->data;
	/* The programs under test grow frames at the head and shrink them at the tail: undo
	 * exactly that, so the head stays where it started. */
	if (cur > f->len) {
		if (bpf_xdp_adjust_head(ctx, (int)(cur - f->len)))
			return XDP_ABORTED;
	} else if (cur < f->len) {
		if (bpf_xdp_adjust_tail(ctx, (int)(f->len - cur)))
			return XDP_ABORTED;
	}
	len = f->len;
	if (len < 14 || len > sizeof(f->data))
		return XDP_ABORTED;
	if (bpf_xdp_store_bytes(ctx, 0, f->data, len))
		return XDP_ABORTED;
	/* Done in front of the bare program too, so the subtraction removes it. */
	if (f->forget) {
		struct sl_shed_set *ss = bpf_map_lookup_elem(&sl_shed_sets, &f->shed_set);
		struct sl_shed_set *cs = bpf_map_lookup_elem(&sl_conn_sets, &f->conn_set);

		bpf_map_delete_elem(&sl_shed, &f->conn_key);
		if (ss)
			__builtin_memset(ss, 0, sizeof(*ss));
		if (cs)
			__builtin_memset(cs, 0, sizeof(*cs));
	}
	bpf_tail_call(ctx, &bench_next, 0);
	return XDP_ABORTED;
}
