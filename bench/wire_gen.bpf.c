// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench/wire's traffic generator, in the way xdp-trafficgen does it: BPF_PROG_TEST_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES runs this program on frames the kernel builds from one template
 * and really sends whatever it redirects. Each frame leaves through the devmap's one entry
 * (the generating end of the veth pair), so it arrives at the peer's XDP program as a frame
 * from a NIC would: an xdp_frame in the peer's receive ring, no skb.
 *
 * Live frames are recycled without being rewritten from the template (a frame sluice turned
 * into a SYN-ACK would come back as one), so every run first writes the whole template over
 * the frame (bpf_xdp_store_bytes, from gen_cfg), then what varies: the source address's
 * host bits (gen_cfg.src_mask, network order) and the source port, from
 * bpf_get_prandom_u32(); the IPv4 header checksum is recomputed so the receiving stack
 * accepts the header. The TCP checksum is left as the template has it (zero, wrong on
 * purpose; see bench/wire.sh).
 *
 * Paced (gen_pace.gap_ns set): each run first waits until gap_ns after the last frame's
 * time, reading the clock in a bounded loop, so that the frames leave at most 1e9 / gap_ns a
 * second. A generator that offers more than the receiver takes has the veth refuse the rest,
 * and it recycles those pages into the pool the receiver returns its drops to, taking the
 * same ring lock (docs/performance.md, "Another machine"). A late frame does not catch up.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define GEN_MAX_FRAME 256

struct gen_cfg {
	__u32 src_mask; /* network order: source bits to randomise */
	__u32 rand_sport;
	__u32 len;      /* of the template, = the frames' length */
	__u8 frame[GEN_MAX_FRAME];
};

struct gen_pace {
	__u64 gap_ns;  /* 0: as fast as test_run goes */
	__u64 next_ns; /* the earliest time the next frame may leave */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_pace);
} gen_pace SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tx_port SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_cfg);
} gen_cfg SEC(".maps");

SEC("xdp")
int wire_gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct tcphdr *th = (void *)(ip + 1);
	struct gen_pace *pace;
	struct gen_cfg *c;
	__u32 k = 0, r, sum = 0;
	__u16 *w;
	int i;

	pace = bpf_map_lookup_elem(&gen_pace, &k);
	if (pace && pace->gap_ns) {
		__u64 now = bpf_ktime_get_ns();

		/* at most ~15 us of waiting a frame: 512 clock reads */
		for (i = 0; i < 512 && now < pace->next_ns; i++)
			now = bpf_ktime_get_ns();
		pace->next_ns = (pace->next_ns > now ? pace->next_ns : now) + pace->gap_ns;
	}

	c = bpf_map_lookup_elem(&gen_cfg, &k);
	if (!c || c->len < sizeof(*eth) + sizeof(*ip) + sizeof(*th) || c->len > GEN_MAX_FRAME ||
	    bpf_xdp_store_bytes(ctx, 0, c->frame, c->len))
		return XDP_ABORTED;
	/* The helper wrote through its own pointer: the packet's are re-derived. */
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	ip = (void *)(eth + 1);
	th = (void *)(ip + 1);
	if ((void *)(th + 1) > end || ip->ihl != 5)
		return XDP_ABORTED;
	r = bpf_get_prandom_u32();
	ip->saddr = (ip->saddr & ~c->src_mask) | (r & c->src_mask);
	if (c->rand_sport)
		th->source = (__u16)(r >> 16) | bpf_htons(1024);
	ip->check = 0;
	w = (__u16 *)ip;
#pragma unroll
	for (i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip->check = (__u16)~sum;
	return bpf_redirect_map(&tx_port, 0, 0);
}
