/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Replies XDP writes itself and sends back out of the interface they came in on (XDP_TX):
 * the cookie SYN-ACK, the single `HTTP/1.1 429` segment with FIN, and the ACK of the client's
 * FIN. Each reply is a fresh frame written over the one it answers: the Ethernet addresses
 * and VLAN tags are kept (swapped), IP is rebuilt without options or extension headers, and
 * both checksums are computed from scratch (veth and many NICs hand XDP partial checksums, so
 * an incremental update of the incoming ones would be wrong).
 *
 * Amplification: a reply is never larger than what it answers plus the fixed 429 payload.
 */
#ifndef SLUICE_REPLY_H
#define SLUICE_REPLY_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "sluice/abi.h"
#include "parse.h"

/*
 * The 429. Fixed length: the Retry-After value sits in an 8-character field, digits then
 * spaces (trailing whitespace in a field value is optional whitespace in HTTP, which every
 * parser strips). The length is 15 mod 16 on purpose: with its FIN the reply takes 96
 * sequence numbers, so the client's later ACKs end in the same cookie marker as its first
 * request (ack - 1 = ISS + 96), and one marker compare still sends 15 of 16 established
 * segments on their way.
 */
#define SL_429_TEXT                                                                    \
	"HTTP/1.1 429 Too Many Requests\r\n"                                           \
	"Retry-After: 1       \r\n"                                                    \
	"Content-Length: 0\r\n"                                                        \
	"Connection: close\r\n"                                                        \
	"\r\n"
#define SL_429_LEN 95
#define SL_429_RA_OFF 45 /* offset of the Retry-After value */
#define SL_429_RA_WIDTH 8
_Static_assert(sizeof(SL_429_TEXT) - 1 == SL_429_LEN, "the 429 text changed length");
_Static_assert(((SL_429_LEN + 1) & 15) == 0, "429 + FIN must keep the cookie marker");

/*
 * A global, not a static: clang puts a static string array in .rodata.str1.1, where libbpf
 * cannot place its BTF variable, and the kernel then refuses the object's whole BTF (and
 * with it the bpf_loop callback below). A function-local static fails the same way.
 */
const char sl_429_text[SL_429_LEN + 1] = SL_429_TEXT;
/* The ones'-complement sum of the text above with its zero pad byte, computed by the first
 * 429 sent (0 until then): each 429 then adds only what its Retry-After digits change. */
__u32 sl_429_sum;

enum reply_kind {
	REPLY_SYNACK,
	REPLY_429,
	REPLY_ACK,
	REPLY_FINACK,
	REPLY_RST,
	REPLY_RST_IN,        /* a reset from the client to this host's kernel (XDP_PASS) */
};

/* Everything a reply needs, saved before the frame is rewritten (which invalidates every
 * packet pointer). Addresses and ports are already the reply's (swapped). */
struct reply {
	__u8 dmac[6], smac[6];
	__be16 vlan[2 * SL_MAX_VLAN + 1]; /* up to SL_MAX_VLAN (TPID, TCI) pairs as they came,
					   * then room for the EtherType */
	__u8 n_vlan;
	__u8 family;
	__u8 kind;           /* enum reply_kind */
	__u8 ws;             /* SYN-ACK: announce window scaling (our shift) when nonzero */
	__u8 sack;           /* SYN-ACK: announce SACK-permitted */
	__u8 saddr[16], daddr[16];
	__be16 sport, dport;
	__u32 seq, ack;      /* host order */
	__u16 mss;           /* SYN-ACK: announced MSS */
	__u16 retry_after;   /* 429: seconds */
	__u8 ts;             /* carry a timestamp option: tsval, tsecr */
	__u8 pad[3];
	__u32 tsval, tsecr;
	__u8 body[SL_429_LEN + 1]; /* the 429 as sent, plus the zero the checksum pads with */
};

#define SL_SYNACK_WS 7 /* our window scale in SYN-ACKs: 64 KB << 7 */

/*
 * A segment's TCP options: MSS, window scale, SACK-permitted, timestamps. The options (at most
 * 40 bytes) are copied to the stack and walked by bpf_loop, one option per step: an open-coded
 * walk over packet pointers, branching on every kind, took the verifier past its 1M
 * instruction budget. Anything malformed ends the walk and keeps what was read.
 */
struct tcp_opts {
	__u8 buf[40];
	__u32 i, len;
	__u32 tsval, tsecr;
	__u16 mss;
	__u8 ws, sack, ts;
	__u8 pad[3];
};

static long tcp_opt_step(__u32 idx, struct tcp_opts *o)
{
	__u32 i = o->i;
	__u8 kind, len;

	/* Constant bounds on i, not o->len, are what lets the verifier index buf. */
	if (i >= o->len || i > 39)
		return 1;
	kind = o->buf[i];
	if (kind == 0)
		return 1;
	if (kind == 1) {
		o->i = i + 1;
		return 0;
	}
	if (i + 1 >= o->len || i > 38)
		return 1;
	len = o->buf[i + 1];
	if (len < 2 || i + len > o->len)
		return 1;
	if (kind == 2 && len == 4 && i <= 36)
		o->mss = ((__u16)o->buf[i + 2] << 8) | o->buf[i + 3];
	else if (kind == 3 && len == 3 && i <= 37)
		o->ws = (o->buf[i + 2] > 14 ? 14 : o->buf[i + 2]) + 1;
	else if (kind == 4 && len == 2)
		o->sack = 1;
	else if (kind == 8 && len == 10 && i <= 30) {
		o->ts = 1;
		o->tsval = ((__u32)o->buf[i + 2] << 24) | ((__u32)o->buf[i + 3] << 16) |
			   ((__u32)o->buf[i + 4] << 8) | o->buf[i + 5];
		o->tsecr = ((__u32)o->buf[i + 6] << 24) | ((__u32)o->buf[i + 7] << 16) |
			   ((__u32)o->buf[i + 8] << 8) | o->buf[i + 9];
	}
	o->i = i + len;
	return 0;
}

struct seg_opts {
	__u32 tsval, tsecr;
	__u16 mss;
	__u8 ws, sack, ts;
};

static __always_inline __u32 be32_at(const __u8 *p)
{
	return ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | p[3];
}

/*
 * The SYN option layouts of the stacks that send most SYNs, read in place and told apart by
 * fixed compares of whole words (the walk below costs ~18 ns an option on this machine: a
 * fixture's MSS, SACK-permitted, NOP, NOP, NOP, WS took 108 ns to read, the layout read at
 * once 35 with its copy to the stack):
 *   doff 10  Linux, Android: MSS, SACK-permitted, TS, NOP, WS
 *            FreeBSD:        MSS, NOP, WS, SACK-permitted, TS
 *   doff 11  macOS, iOS:     MSS, NOP, WS, NOP, NOP, TS, SACK-permitted, EOL, EOL
 *   doff 8   Windows:        MSS, NOP, WS, NOP, NOP, SACK-permitted
 *            Linux, no TS:   MSS, NOP, NOP, SACK-permitted, NOP, WS
 *            tests/lib/frames.h's: MSS, SACK-permitted, NOP, NOP, NOP, WS
 *   doff 6   MSS alone
 * Each gives what the walk would. 1 when the options were one of these (in @out), else 0:
 * the walk's. Only where the frame's linear part holds them.
 */
static __always_inline int syn_opts_known(struct xdp_md *ctx, __u32 th_off, __u8 doff,
					  struct seg_opts *out)
{
	const __u8 *o = (const __u8 *)xdp_data(ctx) + (th_off & 0x3fff) + 20;
	const void *end = xdp_data_end(ctx);
	__u32 w0, w1, w2, w3, w4, ws = 0, tsval = 0, tsecr = 0, sack = 1, ts = 0;

	/* Each length a constant bound of its own: the verifier proves packet reads against
	 * constant offsets from a checked pointer, not against doff. */
	if (doff == 6) {
		if ((const void *)(o + 4) > end)
			return 0;
		w0 = be32_at(o);
		if ((w0 >> 16) != 0x0204)
			return 0;
		sack = 0;
	} else if (doff == 8) {
		if ((const void *)(o + 12) > end)
			return 0;
		w0 = be32_at(o);
		w1 = be32_at(o + 4);
		w2 = be32_at(o + 8);
		if ((w0 >> 16) != 0x0204)
			return 0;
		if ((w1 == 0x01010402 || w1 == 0x04020101) && (w2 >> 8) == 0x010303)
			ws = (w2 & 0xff) + 1;
		else if ((w1 >> 8) == 0x010303 && w2 == 0x01010402)
			ws = (w1 & 0xff) + 1;
		else
			return 0;
	} else if (doff == 10) {
		if ((const void *)(o + 20) > end)
			return 0;
		w0 = be32_at(o);
		w1 = be32_at(o + 4);
		w2 = be32_at(o + 8);
		w3 = be32_at(o + 12);
		w4 = be32_at(o + 16);
		if ((w0 >> 16) != 0x0204)
			return 0;
		if (w1 == 0x0402080a && (w4 >> 8) == 0x010303) {
			ws = (w4 & 0xff) + 1;
			tsval = w2;
			tsecr = w3;
		} else if ((w1 >> 8) == 0x010303 && w2 == 0x0402080a) {
			ws = (w1 & 0xff) + 1;
			tsval = w3;
			tsecr = w4;
		} else {
			return 0;
		}
		ts = 1;
	} else if (doff == 11) {
		if ((const void *)(o + 24) > end)
			return 0;
		w0 = be32_at(o);
		w1 = be32_at(o + 4);
		w2 = be32_at(o + 8);
		if ((w0 >> 16) != 0x0204 || (w1 >> 8) != 0x010303 || w2 != 0x0101080a ||
		    be32_at(o + 20) != 0x04020000)
			return 0;
		ws = (w1 & 0xff) + 1;
		tsval = be32_at(o + 12);
		tsecr = be32_at(o + 16);
		ts = 1;
	} else {
		return 0;
	}
	out->mss = w0 & 0xffff;
	out->ws = ws > 15 ? 15 : ws; /* the walk's: a shift above 14 is taken as 14 */
	out->sack = sack;
	out->ts = ts;
	out->tsval = tsval;
	out->tsecr = tsecr;
	return 1;
}

/*
 * The options of the TCP header at @th_off (data offset @doff), when they are none of the
 * layouts syn_opts_known reads: copied and walked. A global function: its 64-byte walk state
 * on the SYN-ACK's stack took the call chain past the verifier's 512 bytes.
 */
__noinline int sl_tcp_opts_walk(struct xdp_md *ctx, __u32 th_off, __u32 doff,
				struct seg_opts *out)
{
	struct tcp_opts o = { .mss = 536 };
	__u32 off = th_off + 20;
	__u32 len = (doff & 15) * 4;

	if (!ctx || !out)
		return 0;
	len = len > 20 ? len - 20 : 0;
	if (len > 40)
		len = 40;
	if (len && off < 0xffff && !bpf_xdp_load_bytes(ctx, off, o.buf, len)) {
		o.len = len;
		/* Linux's SYN, read at once: MSS, SACK-permitted, timestamps, NOP, window scale
		 * (20 bytes, in that order). Anything else takes the walk. */
		if (len == 20 && o.buf[0] == 2 && o.buf[1] == 4 && o.buf[4] == 4 && o.buf[5] == 2 &&
		    o.buf[6] == 8 && o.buf[7] == 10 && o.buf[16] == 1 && o.buf[17] == 3 &&
		    o.buf[18] == 3) {
			o.mss = ((__u16)o.buf[2] << 8) | o.buf[3];
			o.sack = 1;
			o.ts = 1;
			o.tsval = ((__u32)o.buf[8] << 24) | ((__u32)o.buf[9] << 16) |
				  ((__u32)o.buf[10] << 8) | o.buf[11];
			o.tsecr = ((__u32)o.buf[12] << 24) | ((__u32)o.buf[13] << 16) |
				  ((__u32)o.buf[14] << 8) | o.buf[15];
			o.ws = (o.buf[19] > 14 ? 14 : o.buf[19]) + 1;
		} else {
			bpf_loop(40, tcp_opt_step, &o, 0);
		}
	}
	out->mss = o.mss;
	out->ws = o.ws;
	out->sack = o.sack;
	out->ts = o.ts;
	out->tsval = o.tsval;
	out->tsecr = o.tsecr;
	return 0;
}

/* The options of the TCP header at @th_off (data offset @doff). */
static __always_inline void parse_tcp_opts(struct xdp_md *ctx, __u32 th_off, __u8 doff,
					   struct seg_opts *out)
{
	if (!syn_opts_known(ctx, th_off, doff, out))
		sl_tcp_opts_walk(ctx, th_off, doff, out);
}

/*
 * The ones'-complement sum of @n 16-bit words at @p, as loaded (host order), unfolded: what
 * bpf_csum_diff() computes, without a helper call. @n is a constant (the loop unrolls); @p is
 * 2-byte aligned (a header in the frame, or a stack struct).
 */
static __always_inline __u64 sum16(const void *p, const int n)
{
	const __u8 *b = p;
	__u64 s = 0;
	__u16 w;
	int i;

	/* Loaded through memcpy, not a __u16 pointer: the words of a struct written field by
	 * field, read as another type, are stores clang may move past the reads. */
#pragma unroll
	for (i = 0; i < n; i++) {
		__builtin_memcpy(&w, b + 2 * i, 2);
		s += w;
	}
	return s;
}

static __always_inline __u16 csum_fold(__u64 csum)
{
	csum = (csum & 0xffffffff) + (csum >> 32);
	csum = (csum & 0xffff) + (csum >> 16);
	csum = (csum & 0xffff) + (csum >> 16);
	return (__u16)~csum;
}

struct pseudo4 {
	__u8 saddr[4], daddr[4];
	__u8 zero, proto;
	__be16 len;
};

struct pseudo6 {
	__u8 saddr[16], daddr[16];
	__be32 len;
	__u8 zero[3], proto;
};

static __always_inline void write_tcp(struct tcphdr *th, const struct reply *r, __u8 doff,
				      __u8 flags)
{
	th->source = r->sport;
	th->dest = r->dport;
	th->seq = bpf_htonl(r->seq);
	th->ack_seq = bpf_htonl(r->ack);
	((__u8 *)th)[12] = doff << 4;
	((__u8 *)th)[13] = flags;
	th->window = bpf_htons(65535);
	th->check = 0;
	th->urg_ptr = 0;
}

/* TCP flags byte */
#define TF_FIN 0x01
#define TF_SYN 0x02
#define TF_RST 0x04
#define TF_PSH 0x08
#define TF_ACK 0x10

/* Options of a reply, written as 32-bit words so one csum_diff covers the header. */
static __always_inline void put_ts(__u8 *o, const struct reply *r)
{
	o[0] = 8;
	o[1] = 10;
	o[2] = r->tsval >> 24;
	o[3] = r->tsval >> 16;
	o[4] = r->tsval >> 8;
	o[5] = r->tsval;
	o[6] = r->tsecr >> 24;
	o[7] = r->tsecr >> 16;
	o[8] = r->tsecr >> 8;
	o[9] = r->tsecr;
}

/*
 * Rewrite the frame in @ctx into the reply @r and return XDP_TX, or XDP_DROP if the frame
 * cannot be resized (the connection then simply times out on the client's side).
 * Grows at the head, where drivers (veth among them) keep room; shrinks at the tail.
 * A global function, checked once: inlined at its call sites it cost the verifier most of
 * its budget.
 *
 * TCP options: a SYN-ACK offers MSS, and with timestamps SACK-permitted, TSopt and window
 * scale, exactly what the cookie can carry (include/sluice/cookie.h); every other reply
 * carries TSopt when the connection uses timestamps (RFC 7323: a receiver may drop a segment
 * without one) and nothing else.
 */
static __always_inline int write_l3(struct reply *r, __u8 kind, __u8 *p, void *end, __u32 l4,
				    __u32 pl);

__noinline int sl_emit_reply(struct xdp_md *ctx, struct reply *r)
{
	__u32 l2, l3, l4, pl, want;
	void *data, *end;
	long have, delta;
	__u8 *p;

	if (!ctx || !r)
		return XDP_DROP;
	l2 = 14 + 4 * (r->n_vlan > SL_MAX_VLAN ? SL_MAX_VLAN : r->n_vlan);
	l3 = r->family == SL_FAM_V4 ? 20 : 40;
	if (r->kind == REPLY_SYNACK)
		l4 = r->ts ? 40 : 24;
	else
		l4 = r->ts ? 32 : 20;
	pl = r->kind == REPLY_429 ? SL_429_LEN : 0;
	want = l2 + l3 + l4 + pl;
	data = xdp_data(ctx);
	end = xdp_data_end(ctx);
	have = end - data;
	delta = (long)want - have;
	if (l2 > 14 + 4 * SL_MAX_VLAN)
		return XDP_DROP;
	if (delta > 0) {
		if (bpf_xdp_adjust_head(ctx, (int)-delta))
			return XDP_DROP;
	} else if (delta < 0) {
		if (bpf_xdp_adjust_tail(ctx, (int)delta))
			return XDP_DROP;
	}
	/* Every packet pointer died with the adjust: derive them again. */
	data = xdp_data(ctx);
	end = xdp_data_end(ctx);
	p = data;
	if ((void *)(p + 14) > end)
		return XDP_DROP;
	__builtin_memcpy(p, r->dmac, 6);
	__builtin_memcpy(p + 6, r->smac, 6);
	/* The tags, then the EtherType. The count varies, so all SL_MAX_VLAN slots go through
	 * the store helper at one constant size; what lies past the last real tag is
	 * overwritten by the EtherType and the headers below (every reply is longer). */
	if (l2 > 14) {
		/* The EtherType goes in after the last tag, and the whole array (one constant
		 * size) through the helper. */
		__u32 i = (l2 - 14) / 2;

		if (i > 2 * SL_MAX_VLAN)
			return XDP_DROP;
		r->vlan[i] = bpf_htons(r->family == SL_FAM_V4 ? ETH_P_IP : ETH_P_IPV6);
		if (bpf_xdp_store_bytes(ctx, 12, r->vlan, sizeof(r->vlan)))
			return XDP_DROP;
		data = xdp_data(ctx);
		end = xdp_data_end(ctx);
		p = data;
	} else {
		*(__be16 *)(p + 12) = bpf_htons(r->family == SL_FAM_V4 ? ETH_P_IP : ETH_P_IPV6);
	}
	if (l2 > 14 + 4 * SL_MAX_VLAN || (void *)(p + l2) > end)
		return XDP_DROP;
	return write_l3(r, r->kind, p + l2, end, l4, pl);
}

/*
 * The SYN-ACK @r written over the SYN it answers where that SYN lies, when its IP header has
 * no options (IPv4) or extension headers (IPv6): the Ethernet header and the tags stay (the
 * MACs swapped), IP and TCP are rewritten in place, and only the TCP options' length changes,
 * at the tail (a Linux SYN's 20 bytes of options are a timestamped SYN-ACK's 20: no resize at
 * all). The bytes are sl_emit_reply's for the same @r. @l2 and @th_off are the SYN's IP and
 * TCP header offsets. Returns XDP_TX or XDP_DROP; -1, the frame untouched, when it is not
 * that shape or its tail cannot grow (sl_emit_reply then grows it at the head). Inline in the
 * SYN-ACK's own function: sl_emit_reply's call, its record's L2 fields, the tags' load and
 * store, were a tenth of the SYN-ACK's time.
 */
static __always_inline int synack_in_place(struct xdp_md *ctx, struct reply *r, __u32 l2,
					   __u32 th_off)
{
	__u32 l3 = r->family == SL_FAM_V4 ? 20 : 40, l4 = r->ts ? 40 : 24;
	void *data = xdp_data(ctx), *end = xdp_data_end(ctx);
	long delta;
	__u8 mac[6], *p;

	if (l2 > 14 + 4 * SL_MAX_VLAN || th_off != l2 + l3)
		return -1;
	delta = (long)(l2 + l3 + l4) - (end - data);
	if (delta && bpf_xdp_adjust_tail(ctx, (int)delta))
		return -1;
	/* Every packet pointer died with the adjust: derive them again. */
	data = xdp_data(ctx);
	end = xdp_data_end(ctx);
	p = data;
	if ((void *)(p + 14) > end)
		return XDP_DROP;
	__builtin_memcpy(mac, p, 6);
	__builtin_memcpy(p, p + 6, 6);
	__builtin_memcpy(p + 6, mac, 6);
	/* (Re-checked for the verifier: the test above was against a value it forgot.) */
	if (l2 > 14 + 4 * SL_MAX_VLAN || (void *)(p + l2) > end)
		return XDP_DROP;
	return write_l3(r, REPLY_SYNACK, p + l2, end, l4, 0);
}

/*
 * IP and TCP of reply @r (of @kind: a constant where the caller knows it, and the compiler
 * drops the other kinds) at @p, the frame ending at @end; @l4 and @pl the TCP header's and
 * payload's lengths.
 */
static __always_inline int write_l3(struct reply *r, __u8 kind, __u8 *p, void *end, __u32 l4,
				    __u32 pl)
{
	struct tcphdr *th;
	__u8 flags;
	__u64 sum;

	switch (kind) {
	case REPLY_SYNACK:
		flags = TF_SYN | TF_ACK;
		break;
	case REPLY_429:
		flags = TF_FIN | TF_PSH | TF_ACK;
		break;
	case REPLY_FINACK:
		flags = TF_FIN | TF_ACK;
		break;
	case REPLY_RST:
		flags = TF_RST | TF_ACK;
		break;
	case REPLY_RST_IN:
		flags = TF_RST;
		break;
	default:
		flags = TF_ACK;
		break;
	}

	if (r->family == SL_FAM_V4) {
		struct iphdr *iph = (struct iphdr *)p;
		struct pseudo4 ph;

		if ((void *)(p + 20 + 20) > end)
			return XDP_DROP;
		iph->version = 4;
		iph->ihl = 5;
		iph->tos = 0;
		iph->tot_len = bpf_htons(20 + l4 + pl);
		iph->id = 0;
		iph->frag_off = bpf_htons(0x4000); /* DF */
		iph->ttl = 64;
		iph->protocol = IPPROTO_TCP;
		iph->check = 0;
		__builtin_memcpy(&iph->saddr, r->saddr, 4);
		__builtin_memcpy(&iph->daddr, r->daddr, 4);
		/* From the values just written, not read back from the frame (clang re-derives
		 * the frame pointer for the reads, and the verifier loses its bound). The words
		 * as loaded on this host: 45 00 | length | id 0 | 40 00 | 40 06 | check 0 | the
		 * addresses. */
		{
			__u16 len = 20 + l4 + pl;
			__u16 w[4];

			__builtin_memcpy(w, r->saddr, 4);
			__builtin_memcpy(w + 2, r->daddr, 4);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			iph->check = csum_fold(0x0045 + (__u16)((len >> 8) | (len << 8)) + 0x0040 +
					       0x0640 + (__u64)w[0] + w[1] + w[2] + w[3]);
#else
			iph->check = csum_fold(0x4500 + (__u64)len + 0x4000 + 0x4006 +
					       (__u64)w[0] + w[1] + w[2] + w[3]);
#endif
		}

		th = (struct tcphdr *)(p + 20);
		__builtin_memcpy(ph.saddr, r->saddr, 4);
		__builtin_memcpy(ph.daddr, r->daddr, 4);
		ph.zero = 0;
		ph.proto = IPPROTO_TCP;
		ph.len = bpf_htons(l4 + pl);
		sum = sum16(&ph, sizeof(ph) / 2);
	} else {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)p;
		struct pseudo6 ph = {};

		if ((void *)(p + 40 + 20) > end)
			return XDP_DROP;
		*(__be32 *)ip6 = bpf_htonl(0x60000000);
		ip6->payload_len = bpf_htons(l4 + pl);
		ip6->nexthdr = IPPROTO_TCP;
		ip6->hop_limit = 64;
		__builtin_memcpy(&ip6->saddr, r->saddr, 16);
		__builtin_memcpy(&ip6->daddr, r->daddr, 16);

		th = (struct tcphdr *)(p + 40);
		__builtin_memcpy(ph.saddr, r->saddr, 16);
		__builtin_memcpy(ph.daddr, r->daddr, 16);
		ph.len = bpf_htonl(l4 + pl);
		ph.proto = IPPROTO_TCP;
		sum = sum16(&ph, sizeof(ph) / 2);
	}

	if (kind == REPLY_SYNACK) {
		__u8 *o = (__u8 *)(th + 1);

		if ((void *)(o + 4) > end)
			return XDP_DROP;
		o[0] = 2;
		o[1] = 4;
		o[2] = r->mss >> 8;
		o[3] = r->mss & 0xff;
		if (r->ts) {
			if ((void *)(o + 20) > end)
				return XDP_DROP;
			/* MSS, SACK-permitted (or NOP NOP), TS, NOP window-scale (or 4 NOPs) */
			write_tcp(th, r, 10, flags);
			o[4] = r->sack ? 4 : 1;
			o[5] = r->sack ? 2 : 1;
			put_ts(o + 6, r);
			o[16] = 1;
			o[17] = r->ws ? 3 : 1;
			o[18] = r->ws ? 3 : 1;
			o[19] = r->ws ? SL_SYNACK_WS : 1;
			sum += sum16(th, 20);
		} else {
			write_tcp(th, r, 6, flags);
			sum += sum16(th, 12);
		}
	} else {
		__u8 *o = (__u8 *)(th + 1);

		if (r->ts) {
			if ((void *)(o + 12) > end)
				return XDP_DROP;
			write_tcp(th, r, 8, flags);
			o[0] = 1;
			o[1] = 1;
			put_ts(o + 2, r);
			sum += sum16(th, 16);
		} else {
			if ((void *)(th + 1) > end)
				return XDP_DROP;
			write_tcp(th, r, 5, flags);
			sum += sum16(th, 10);
		}
		if (kind == REPLY_429) {
			__u8 *body = (__u8 *)th + (r->ts ? 32 : 20);
			__u32 ra = r->retry_after, pow, i;
			__u64 field = 0;
			int n;

			if ((void *)(body + SL_429_LEN) > end)
				return XDP_DROP;
			/* The constant text's sum, once (every CPU computes the same value). */
			if (!sl_429_sum) {
				__builtin_memcpy(r->body, sl_429_text, SL_429_LEN);
				r->body[SL_429_LEN] = 0;
				sl_429_sum = (__u32)bpf_csum_diff(NULL, 0, (__be32 *)r->body,
								  SL_429_LEN + 1, 0);
			}
			__builtin_memcpy(body, sl_429_text, SL_429_LEN);
			if (ra == 0)
				ra = 1;
			if (ra > 99999)
				ra = 99999;
			/*
			 * Up to five digits, left-aligned, spaces after: built in a register byte
			 * by byte (a variable index into a stack buffer makes clang emit pointer
			 * arithmetic the verifier refuses).
			 */
			n = ra >= 10000 ? 5 : ra >= 1000 ? 4 : ra >= 100 ? 3 : ra >= 10 ? 2 : 1;
			pow = n == 5 ? 10000 : n == 4 ? 1000 : n == 3 ? 100 : n == 2 ? 10 : 1;
#pragma unroll
			for (i = 0; i < 5; i++) {
				__u64 c = ' ';

				if ((int)i < n) {
					c = '0' + (ra / pow) % 10;
					pow /= 10;
				}
				field |= c << (8 * i);
			}
			/*
			 * The digits go into the frame, and into the sum as what they add over the
			 * text's own "1    " there. The sums are of 16-bit words as loaded in
			 * host order (sum16, and bpf_csum_diff for the text), so on a little-endian host a byte at an even offset of the
			 * body (which starts at an even offset of the segment) is the low half of
			 * its word, at an odd one the high half; none is below the text's byte
			 * (the first digit is never 0, the rest at least ' '). The body's odd
			 * length is padded with zero in the sum, as TCP pads.
			 */
			sum += sl_429_sum;
#pragma unroll
			for (i = 0; i < 5; i++) {
				__u8 c = (field >> (8 * i)) & 0xff;

				body[SL_429_RA_OFF + i] = c;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
				sum += (__u64)(c - (__u8)SL_429_TEXT[SL_429_RA_OFF + i])
				       << (((SL_429_RA_OFF + i) & 1) ? 8 : 0);
#else
				sum += (__u64)(c - (__u8)SL_429_TEXT[SL_429_RA_OFF + i])
				       << (((SL_429_RA_OFF + i) & 1) ? 0 : 8);
#endif
			}
		}
	}
	th->check = csum_fold(sum);
	return XDP_TX;
}

#endif
