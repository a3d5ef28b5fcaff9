// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The baselines of bench/wire: one program per verdict, each doing nothing but saying it, so
 * that sluice's drops, passes and replies per core on the receiving veth are divided by what
 * the same veth, core and verdict cost with no work at all. bare_drop also sits on the
 * generating veth, where it absorbs the replies sent back to it (XDP_TX on a veth delivers
 * only when the peer runs an XDP program).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int bare_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

SEC("xdp")
int bare_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

/* The frame goes back out unchanged: what a reply costs the veth without building one. */
SEC("xdp")
int bare_tx(struct xdp_md *ctx)
{
	return XDP_TX;
}
