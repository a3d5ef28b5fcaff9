/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Header parsers for the edge datapath. Each parse_*() takes a cursor, proves to the verifier
 * that the header it reads lies inside the frame (ptr + 1 > data_end), advances the cursor and
 * returns the next protocol, or a negative enum sl_reason saying what was malformed. Every
 * loop has a named bound (include/sluice/abi.h).
 */
#ifndef SLUICE_PARSE_H
#define SLUICE_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "sluice/abi.h"

struct cursor {
	void *pos;
	void *end;
};

/* Not in the UAPI headers. */
struct vlan_hdr {
	__be16 tci;
	__be16 encap_proto;
};

struct ip6_ext {
	__u8 nexthdr;
	__u8 hdrlen;
};

struct ip6_frag {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off; /* offset << 3 | M */
	__be32 id;
};

/*
 * clang 14 may fold the two loads of ctx->data and ctx->data_end into one base register plus
 * offsets, which the verifier rejects as "dereference of modified ctx ptr". Loading each
 * field through its own asm statement keeps the exact ctx + const access it wants.
 */
static __always_inline void *xdp_data(const struct xdp_md *ctx)
{
	void *p;

	asm volatile("%0 = *(u32 *)(%1 + 0)" : "=r"(p) : "r"(ctx));
	return p;
}

static __always_inline void *xdp_data_end(const struct xdp_md *ctx)
{
	void *p;

	asm volatile("%0 = *(u32 *)(%1 + 4)" : "=r"(p) : "r"(ctx));
	return p;
}

static __always_inline int proto_is_vlan(__u16 h_proto)
{
	return h_proto == bpf_htons(ETH_P_8021Q) || h_proto == bpf_htons(ETH_P_8021AD);
}

/* Ethernet plus up to SL_MAX_VLAN tags. Returns the EtherType (network order). */
static __always_inline int parse_eth(struct cursor *c)
{
	struct ethhdr *eth = c->pos;
	struct vlan_hdr *vh;
	__u16 proto;
	int i;

	if ((void *)(eth + 1) > c->end)
		return -SL_R_MAL_ETH;
	proto = eth->h_proto;
	c->pos = eth + 1;

#pragma unroll
	for (i = 0; i < SL_MAX_VLAN; i++) {
		if (!proto_is_vlan(proto))
			break;
		vh = c->pos;
		if ((void *)(vh + 1) > c->end)
			return -SL_R_MAL_VLAN;
		proto = vh->encap_proto;
		c->pos = vh + 1;
	}
	if (proto_is_vlan(proto))
		return -SL_R_MAL_VLAN_DEPTH;
	return proto;
}

/* IPv4 with options. Returns the L4 protocol, or -SL_R_FRAGMENT for any TCP fragment. */
static __always_inline int parse_ip4(struct cursor *c, struct iphdr **out)
{
	struct iphdr *iph = c->pos;
	__u32 hlen;

	if ((void *)(iph + 1) > c->end)
		return -SL_R_MAL_IP4;
	hlen = iph->ihl * 4;
	if (hlen < sizeof(*iph))
		return -SL_R_MAL_IP4_IHL;
	if (c->pos + hlen > c->end)
		return -SL_R_MAL_IP4_IHL;
	c->pos += hlen;
	*out = iph;
	/* MF set or a non-zero offset: either way this frame is not a whole TCP segment. */
	if (iph->protocol == IPPROTO_TCP && (iph->frag_off & bpf_htons(0x3fff)))
		return -SL_R_FRAGMENT;
	return iph->protocol;
}

/*
 * IPv6 with a bounded walk over extension headers. Returns the upper-layer protocol (TCP,
 * UDP, ...), or -SL_R_FRAGMENT when a fragment header is present: its upper layer is either
 * split or absent, and a legitimate SYN is never fragmented.
 */
static __always_inline int parse_ip6(struct cursor *c, struct ipv6hdr **out)
{
	struct ipv6hdr *ip6 = c->pos;
	struct ip6_ext *eh;
	__u8 next;
	int i;

	if ((void *)(ip6 + 1) > c->end)
		return -SL_R_MAL_IP6;
	*out = ip6;
	next = ip6->nexthdr;
	c->pos = ip6 + 1;

#pragma unroll
	for (i = 0; i < SL_MAX_IP6_EXT; i++) {
		switch (next) {
		case IPPROTO_HOPOPTS:
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS:
			eh = c->pos;
			if ((void *)(eh + 1) > c->end)
				return -SL_R_MAL_IP6_EXT;
			next = eh->nexthdr;
			c->pos += ((__u32)eh->hdrlen + 1) * 8;
			break;
		case IPPROTO_AH:
			eh = c->pos;
			if ((void *)(eh + 1) > c->end)
				return -SL_R_MAL_IP6_EXT;
			next = eh->nexthdr;
			c->pos += ((__u32)eh->hdrlen + 2) * 4;
			break;
		case IPPROTO_FRAGMENT:
			if (c->pos + sizeof(struct ip6_frag) > c->end)
				return -SL_R_MAL_IP6_EXT;
			return -SL_R_FRAGMENT;
		default:
			return next;
		}
	}
	switch (next) {
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_DSTOPTS:
	case IPPROTO_AH:
	case IPPROTO_FRAGMENT:
		return -SL_R_MAL_IP6_EXT_DEPTH;
	}
	return next;
}

static __always_inline int parse_tcp(struct cursor *c, struct tcphdr **out)
{
	struct tcphdr *th = c->pos;
	__u32 hlen;

	if ((void *)(th + 1) > c->end)
		return -SL_R_MAL_TCP;
	hlen = th->doff * 4;
	if (hlen < sizeof(*th) || c->pos + hlen > c->end)
		return -SL_R_MAL_TCP_DOFF;
	*out = th;
	c->pos += hlen;
	return 0;
}

#endif /* SLUICE_PARSE_H */
