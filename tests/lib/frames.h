/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Frame builder for BPF_PROG_TEST_RUN fixtures and benchmarks: Ethernet, 0-3 VLAN tags,
 * IPv4 (with options, fragments) or IPv6 (with extension headers), then TCP or UDP. Each
 * knob exists to build one malformed variant the datapath must survive. Checksums are left
 * zero: the datapath never validates them (veth hands it partial checksums anyway).
 */
#ifndef SLUICE_TEST_FRAMES_H
#define SLUICE_TEST_FRAMES_H

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <stdint.h>
#include <string.h>

#define F_SYN 0x02
#define F_ACK 0x10
#define F_RST 0x04
#define F_FIN 0x01

struct fspec {
	int family;         /* 4 or 6 */
	const char *src, *dst;
	uint16_t sport, dport;
	uint8_t flags;      /* TCP flags; 0 means SYN */
	uint8_t l4;         /* IPPROTO_TCP (default) or IPPROTO_UDP */
	uint16_t ethertype; /* override (e.g. ETH_P_ARP); 0 = from family */
	int vlans;          /* VLAN tags (first is 802.1ad when there are two or more) */
	int ip4_opt_words;  /* 4-byte words of IPv4 options (NOPs) */
	int ihl;            /* override IHL (0 = computed) */
	int ip4_mf;         /* set More Fragments */
	int ip4_frag_off;   /* fragment offset, in 8-byte units */
	int ip6_ext;        /* destination-options headers before TCP */
	int ip6_frag;       /* add a fragment header: 1 first (M), 2 atomic, 3 a later one */
	int doff;           /* override TCP data offset (0 = 5, or 7 with options) */
	int tcp_opts;       /* 1: MSS 1460 + SACK-permitted (8 bytes); 2: also window scale 7;
			     * 3: NOP NOP TS(tsval, tsecr) (12 bytes); 4: a Linux SYN's, MSS 1460,
			     * SACK-permitted, TS(tsval, tsecr), NOP, window scale 7 (20 bytes) */
	uint32_t tsval, tsecr;
	int payload;        /* bytes of payload after the L4 header ('x') */
	const char *data;   /* payload text (overrides payload) */
	uint32_t seq, ack;  /* 0: seq 0x01020304, ack 0 */
	const uint8_t *smac;/* 0: 02:00:00:00:00:01 */
};

struct fbuilt {
	size_t len;
	size_t l3, l4; /* offsets: for truncating at a header boundary */
};

static inline size_t put16(uint8_t *p, uint16_t v)
{
	v = htons(v);
	memcpy(p, &v, 2);
	return 2;
}

/* Build @s into @out (at least 512 bytes). */
static inline struct fbuilt build_frame(const struct fspec *s, uint8_t *out)
{
	static const uint8_t dmac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
	static const uint8_t smac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	struct fbuilt b = { 0 };
	uint8_t l4 = s->l4 ? s->l4 : IPPROTO_TCP;
	int payload = s->data ? (int)strlen(s->data) : s->payload;
	size_t off = 12, l4len, iplen;
	uint16_t et = s->ethertype ? s->ethertype : (s->family == 6 ? ETH_P_IPV6 : ETH_P_IP);
	int i;

	memset(out, 0, 512);
	memcpy(out, dmac, 6);
	memcpy(out + 6, s->smac ? s->smac : smac, 6);
	for (i = 0; i < s->vlans; i++) {
		off += put16(out + off, (s->vlans > 1 && i == 0) ? ETH_P_8021AD : ETH_P_8021Q);
		off += put16(out + off, (uint16_t)(100 + i));
	}
	off += put16(out + off, et);
	b.l3 = off;
	if (s->ethertype && s->ethertype != ETH_P_IP && s->ethertype != ETH_P_IPV6) {
		memset(out + off, 0xab, 28); /* an ARP-sized body */
		b.l4 = b.len = off + 28;
		return b;
	}

	l4len = l4 == IPPROTO_TCP ? 20 + (s->tcp_opts == 4 ? 20 : s->tcp_opts >= 2 ? 12 : s->tcp_opts ? 8 : 0) : 8;
	if (s->family == 6) {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)(out + off);
		uint8_t *next = &ip6->nexthdr;
		size_t ext = 0;

		ip6->version = 6;
		ip6->hop_limit = 64;
		inet_pton(AF_INET6, s->src, &ip6->saddr);
		inet_pton(AF_INET6, s->dst, &ip6->daddr);
		off += sizeof(*ip6);
		for (i = 0; i < s->ip6_ext; i++) {
			*next = IPPROTO_DSTOPTS;
			next = out + off;   /* nexthdr of this extension header */
			out[off + 1] = 0;   /* hdrlen 0: 8 bytes */
			out[off + 2] = 1;   /* PadN, 4 bytes of padding */
			out[off + 3] = 4;
			off += 8;
			ext += 8;
		}
		if (s->ip6_frag) {
			*next = IPPROTO_FRAGMENT;
			next = out + off;
			if (s->ip6_frag == 2) {
				out[off + 3] = 0;         /* offset 0, M = 0: atomic */
			} else if (s->ip6_frag == 3) {
				out[off + 2] = 0;         /* offset 1 (8 bytes), M = 1 */
				out[off + 3] = 8 | 1;
			} else {
				out[off + 3] = 1;         /* offset 0, M = 1 */
			}
			off += 8;
			ext += 8;
		}
		*next = l4;
		iplen = ext + l4len + (size_t)payload;
		ip6->payload_len = htons((uint16_t)iplen);
	} else {
		struct iphdr *ip = (struct iphdr *)(out + off);
		size_t hl = 20 + 4 * (size_t)s->ip4_opt_words;

		ip->version = 4;
		ip->ihl = s->ihl ? (unsigned)s->ihl : (unsigned)(hl / 4);
		ip->ttl = 64;
		ip->protocol = l4;
		ip->frag_off = htons((uint16_t)((s->ip4_mf ? 0x2000 : 0) | (s->ip4_frag_off & 0x1fff)));
		inet_pton(AF_INET, s->src, &ip->saddr);
		inet_pton(AF_INET, s->dst, &ip->daddr);
		memset(out + off + 20, 1, hl - 20); /* NOP options */
		ip->tot_len = htons((uint16_t)(hl + l4len + (size_t)payload));
		off += hl;
	}
	b.l4 = off;
	if (l4 == IPPROTO_TCP) {
		struct tcphdr *th = (struct tcphdr *)(out + off);
		uint8_t flags = s->flags ? s->flags : F_SYN;

		th->source = htons(s->sport ? s->sport : 40000);
		th->dest = htons(s->dport);
		th->seq = htonl(s->seq ? s->seq : 0x01020304);
		th->ack_seq = htonl(s->ack);
		th->doff = s->doff ? (unsigned)s->doff : (unsigned)(l4len / 4);
		out[off + 13] = flags;
		th->window = htons(64240);
		if (s->tcp_opts == 4) {
			uint8_t *o = out + off + 20;
			uint32_t v = htonl(s->tsval), e = htonl(s->tsecr);

			o[0] = 2; o[1] = 4; o[2] = 0x05; o[3] = 0xb4; /* MSS 1460 */
			o[4] = 4; o[5] = 2; o[6] = 8; o[7] = 10;      /* SACK ok, TS */
			memcpy(o + 8, &v, 4);
			memcpy(o + 12, &e, 4);
			o[16] = 1; o[17] = 3; o[18] = 3; o[19] = 7;   /* NOP, WS 7 */
		} else if (s->tcp_opts == 3) {
			uint8_t *o = out + off + 20;
			uint32_t v = htonl(s->tsval), e = htonl(s->tsecr);

			o[0] = 1; o[1] = 1; o[2] = 8; o[3] = 10;
			memcpy(o + 4, &v, 4);
			memcpy(o + 8, &e, 4);
		} else if (s->tcp_opts) {
			uint8_t *o = out + off + 20;

			o[0] = 2; o[1] = 4; o[2] = 0x05; o[3] = 0xb4; /* MSS 1460 */
			o[4] = 4; o[5] = 2; o[6] = 1; o[7] = 1;       /* SACK ok, NOP, NOP */
			if (s->tcp_opts == 2) {
				o[8] = 1; o[9] = 3; o[10] = 3; o[11] = 7; /* NOP, WS 7 */
			}
		}
	} else {
		put16(out + off, 5353);
		put16(out + off + 2, s->dport);
		put16(out + off + 4, (uint16_t)(8 + payload));
	}
	off += l4len;
	if (s->data)
		memcpy(out + off, s->data, (size_t)payload);
	else
		memset(out + off, 'x', (size_t)payload);
	off += (size_t)payload;
	b.len = off;
	return b;
}

#endif
