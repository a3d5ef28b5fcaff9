// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * For bench/attack_goodput, on the client's veth (and on the flood's own link, PATHS=apart):
 * whatever the server sends to the flood's spoofed sources (198.18.0.0/15: SYN-ACKs, RSTs)
 * would leave for the Internet, not reach the benchmark's client, so it is dropped here
 * before the client's kernel spends time on it.
 * Everything else passes (an XDP program on the peer is also what lets XDP_TX on veth
 * deliver at all).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int sink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if ((bpf_ntohl(ip->daddr) & 0xfffe0000) == 0xc6120000) /* 198.18.0.0/15 */
		return XDP_DROP;
	return XDP_PASS;
}
