// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The baselines of bench/wire: one program per verdict, each doing nothing but saying it, so
 * that sluice's drops, passes and replies per core on the receiving veth are divided by what
 * the same veth, core and verdict cost with no work at all. bare_drop also sits on the
 * generating veth, where it absorbs the replies sent back to it (XDP_TX on a veth delivers
 * only when the peer runs an XDP program).
 *
 * read_drop is the floor of any filter that drops: it reads what every one must before it can
 * decide (the Ethernet type, the IPv4 header, the TCP port and flags) and drops a SYN, with no
 * map and no helper. Between bare_drop and it lies the frame's first touch on the receiving
 * core, which bare_drop never pays.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <bpf/bpf_endian.h>
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

SEC("xdp")
int read_drop(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph = (void *)(eth + 1);
	struct tcphdr *th;

	if ((void *)(iph + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    iph->protocol != IPPROTO_TCP || iph->ihl < 5)
		return XDP_PASS;
	th = (void *)iph + iph->ihl * 4;
	if ((void *)(th + 1) > end)
		return XDP_PASS;
	return th->syn && !th->ack && th->dest != 0 ? XDP_DROP : XDP_PASS;
}
