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

/*
 * Ethernet plus up to SL_VLAN_UNROLLED tags, read in line. Returns the EtherType (network
 * order), or -SL_R_MAL_VLAN_DEPTH when more tags follow: the program walks those under
 * bpf_loop (parse_eth_deep), since the kernel strips priority tags without limit.
 */
#define SL_VLAN_UNROLLED 2
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
	for (i = 0; i < SL_VLAN_UNROLLED; i++) {
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

struct vlan_walk {
	void *ctx;       /* the program's context: struct xdp_md or struct __sk_buff */
	__u32 off;       /* offset of the next tag (TPID, TCI), then of the EtherType after it */
	__u32 len;
	__u16 proto;     /* the EtherType after the last tag read (network order) */
	__u8 done;       /* 1: past the tags; 2: cut short */
};

/* One tag: its TCI and the EtherType after it (bytes 2..3 of the 4 read at the tag's TCI).
 * @off points at a tag's TCI, so the EtherType read is the next TPID or the payload's. */
#define VLAN_WALK_STEP(name, load)                                                     \
	static long name(__u32 idx, struct vlan_walk *w)                               \
	{                                                                              \
		__u8 h[4];                                                             \
                                                                                       \
		if (w->off + 4 > w->len || w->off > 0x3fff || load(w->ctx, w->off, h, 4)) { \
			w->done = 2;                                                   \
			return 1;                                                      \
		}                                                                      \
		w->proto = (__u16)(h[2] | (__u16)h[3] << 8); /* kept in network order */ \
		w->off += 4;                                                           \
		if (!proto_is_vlan(w->proto)) {                                        \
			w->done = 1;                                                   \
			return 1;                                                      \
		}                                                                      \
		return 0;                                                              \
	}

VLAN_WALK_STEP(vlan_walk_step_xdp, bpf_xdp_load_bytes)
VLAN_WALK_STEP(vlan_walk_step_skb, bpf_skb_load_bytes)

/*
 * The rest of a deep tag stack, after parse_eth returned -SL_R_MAL_VLAN_DEPTH with the cursor
 * past its SL_VLAN_UNROLLED tags (c->pos - 2 holds the next TPID): the EtherType with the
 * cursor past every tag, or a negative reason. @skb says which kind @ctx is. The loop's
 * bound, SL_MAX_VLAN_WALK, is a 9000-byte frame's worth of tags.
 */
#define SL_MAX_VLAN_WALK 2300
static __always_inline int parse_eth_deep(struct cursor *c, void *ctx, void *data, int skb)
{
	struct vlan_walk w = {};

	w.ctx = ctx;
	w.off = (__u32)(c->pos - data); /* the next tag's TCI: its TPID was the EtherType read */
	w.len = (__u32)(c->end - data);
	if (skb)
		bpf_loop(SL_MAX_VLAN_WALK, vlan_walk_step_skb, &w, 0);
	else
		bpf_loop(SL_MAX_VLAN_WALK, vlan_walk_step_xdp, &w, 0);
	if (w.done != 1)
		return w.done == 2 ? -SL_R_MAL_VLAN : -SL_R_MAL_VLAN_DEPTH;
	if (w.off > 0x3fff || data + w.off > c->end)
		return -SL_R_MAL_VLAN;
	c->pos = data + w.off;
	return w.proto;
}

/* Where a datagram sits in its fragment train. */
enum frag_kind {
	FRAG_NONE = 0,   /* a whole datagram (an IPv6 atomic fragment counts as one: RFC 6946) */
	FRAG_FIRST = 1,  /* offset 0, more to come: the upper-layer header is here */
	FRAG_LATER = 2,  /* offset > 0: no upper-layer header; useless without its first */
};

/*
 * IPv4 with options. Returns the L4 protocol and says in *@frag where the datagram sits in
 * its fragment train: a first fragment holds the TCP header (RFC 791 fragments carry
 * multiples of 8 bytes), so it is judged like a whole segment.
 */
static __always_inline int parse_ip4(struct cursor *c, struct iphdr **out, __u8 *frag)
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
	/* What the kernel drops as not a datagram (ip_rcv_core) is never ours to answer: a
	 * wrong version, or a total length short of the header or past the frame. */
	if (iph->version != 4 || bpf_ntohs(iph->tot_len) < hlen ||
	    c->pos + bpf_ntohs(iph->tot_len) > c->end)
		return -SL_R_MAL_IP4;
	c->pos += hlen;
	*out = iph;
	if (iph->frag_off & bpf_htons(0x1fff))
		*frag = FRAG_LATER;
	else if (iph->frag_off & bpf_htons(0x2000))
		*frag = FRAG_FIRST;
	else
		*frag = FRAG_NONE;
	return iph->protocol;
}

/*
 * IPv6 extension headers are walked under bpf_loop, one header per step, reading each
 * through the program type's load helper: an unrolled walk bounded the chain at a few
 * headers, and a SYN behind one more header than the bound went unjudged. The walk ends at
 * the upper layer, at the end of the frame (the kernel drops a truncated chain, and drops a
 * first fragment whose chain does not reach the upper layer: RFC 8200 section 4.5) or after
 * SL_MAX_IP6_EXT headers, more than fit in any frame.
 */
struct ip6_walk {
	void *ctx;       /* struct xdp_md or struct __sk_buff */
	__u32 off;       /* offset of the next header in the frame */
	__u32 len;       /* frame length */
	__u8 next;       /* the next header's type */
	__u8 frag;       /* enum frag_kind */
	__u8 done;       /* 1: at the upper layer; 2: truncated */
};

/* One header of the walk; @load reads 8 bytes at w->off with the program type's helper (a
 * helper the program type lacks must not even appear in its code, hence two callbacks). */
#define IP6_WALK_STEP(name, load)                                                      \
	static long name(__u32 idx, struct ip6_walk *w)                                \
	{                                                                              \
		__u8 h[8];                                                             \
                                                                                       \
		switch (w->next) {                                                     \
		case IPPROTO_HOPOPTS:                                                  \
		case IPPROTO_ROUTING:                                                  \
		case IPPROTO_DSTOPTS:                                                  \
		case IPPROTO_AH:                                                       \
		case IPPROTO_FRAGMENT:                                                 \
			break;                                                         \
		default:                                                               \
			w->done = 1;                                                   \
			return 1;                                                      \
		}                                                                      \
		if (w->off + 8 > w->len || w->off > 0x3fff || load(w->ctx, w->off, h, 8)) { \
			w->done = 2;                                                   \
			return 1;                                                      \
		}                                                                      \
		if (w->next == IPPROTO_FRAGMENT) {                                     \
			__u16 fo = ((__u16)h[2] << 8) | h[3];                          \
                                                                                       \
			if (fo & 0xfff8)                                               \
				w->frag = FRAG_LATER;                                  \
			else if (fo & 1)                                               \
				w->frag = FRAG_FIRST;                                  \
			w->off += 8;                                                   \
		} else if (w->next == IPPROTO_AH) {                                    \
			w->off += ((__u32)h[1] + 2) * 4;                               \
		} else {                                                               \
			w->off += ((__u32)h[1] + 1) * 8;                               \
		}                                                                      \
		w->next = h[0];                                                        \
		if (w->frag == FRAG_LATER) {                                           \
			/* what follows is the middle of someone's datagram */         \
			w->done = 1;                                                   \
			return 1;                                                      \
		}                                                                      \
		return 0;                                                              \
	}

IP6_WALK_STEP(ip6_walk_step_xdp, bpf_xdp_load_bytes)
IP6_WALK_STEP(ip6_walk_step_skb, bpf_skb_load_bytes)

/*
 * IPv6 and its extension headers. Returns the upper-layer protocol with the cursor on it and
 * *@frag set, or a negative enum sl_reason. @ctx is the program's context, @skb says which
 * kind it is. An atomic fragment (offset 0, M clear) is a whole datagram.
 */
static __always_inline int parse_ip6(struct cursor *c, struct ipv6hdr **out, void *ctx,
				     void *data, int skb, __u8 *frag)
{
	struct ipv6hdr *ip6 = c->pos;
	struct ip6_walk w = {};
	__u32 off;

	if ((void *)(ip6 + 1) > c->end)
		return -SL_R_MAL_IP6;
	/* The kernel drops a wrong version and a payload past the frame (ipv6_rcv_core). */
	if ((*(__u8 *)ip6 >> 4) != 6 || (void *)(ip6 + 1) + bpf_ntohs(ip6->payload_len) > c->end)
		return -SL_R_MAL_IP6;
	*out = ip6;
	c->pos = ip6 + 1;
	*frag = FRAG_NONE;
	switch (ip6->nexthdr) {
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_DSTOPTS:
	case IPPROTO_AH:
	case IPPROTO_FRAGMENT:
		break;
	default:
		return ip6->nexthdr; /* no extension headers: the common case, no loop */
	}
	w.ctx = ctx;
	w.off = (__u32)((void *)(ip6 + 1) - data);
	w.len = (__u32)(c->end - data);
	w.next = ip6->nexthdr;
	if (skb)
		bpf_loop(SL_MAX_IP6_EXT, ip6_walk_step_skb, &w, 0);
	else
		bpf_loop(SL_MAX_IP6_EXT, ip6_walk_step_xdp, &w, 0);
	*frag = w.frag;
	if (w.frag == FRAG_LATER)
		return w.next;
	if (w.done == 2)
		return -SL_R_MAL_IP6_EXT;
	if (w.done != 1)
		return -SL_R_MAL_IP6_EXT_DEPTH;
	off = w.off;
	/* A variable offset the verifier can bound, then the usual range check. The bound is
	 * well below 0xffff: the verifier gives a range only to a packet pointer whose offset
	 * plus the header read after it stays under MAX_PACKET_OFF (0xffff). */
	if (off > 0x3fff || data + off > c->end)
		return -SL_R_MAL_IP6_EXT;
	c->pos = data + off;
	return w.next;
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
