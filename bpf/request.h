/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Reading the first request of a stateless-front connection: the HTTP request line and Host
 * header, or the TLS ClientHello's SNI. The segment's first SL_REQ_SCAN bytes are copied to a
 * per-CPU buffer and read there; every index is masked to the buffer and checked against the
 * bytes actually copied. Nothing waits for more data: what the segment does not hold is
 * unknown, and the caller falls back to the port's default cost and the destination's tenant.
 * Scans that can be long run under bpf_loop, one byte per step, and stop at the first hit.
 */
#ifndef SLUICE_REQUEST_H
#define SLUICE_REQUEST_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sluice/abi.h"
#include "sluice/hash.h"

#define SL_REQ_SCAN 512
#define SL_REQ_MASK (SL_REQ_SCAN - 1)
_Static_assert((SL_REQ_SCAN & SL_REQ_MASK) == 0, "the scan buffer must be a power of two");

struct req_buf {
	__u8 b[SL_REQ_SCAN];
	__u8 slack[8]; /* a word read may start at any byte of b[] (copy_host) */
};

/*
 * Copy @len bytes (1..SL_REQ_SCAN) of the linear frame from @off into @rb by direct packet
 * access, eight bytes a step: the last word is read so that it ends at the last byte (it
 * overlaps the one before, and writes the same bytes again), a payload under eight bytes a
 * byte a step. bpf_xdp_load_bytes did the same through a helper call and its memcpy, ~35 ns
 * of a first request's (bench/xdp_cost's parts) for a request of 83 bytes. 0 when copied;
 * -1 when the frame's linear part does not hold it all (the caller clips @len to it first)
 * or @off is past SL_REQ_DIRECT_OFF.
 * Every load is checked against @end where it is made: the verifier's packet range is known
 * only after such a compare, whatever the caller checked before.
 */
#define SL_REQ_DIRECT_OFF 0x3fff
_Static_assert(SL_REQ_DIRECT_OFF + SL_REQ_SCAN + 8 <= 0xffff,
	       "the verifier marks a packet range only when offset + its bound fits MAX_PACKET_OFF");
static __always_inline int sl_req_copy(const void *data, const void *end, __u32 off, __u32 len,
				       struct req_buf *rb)
{
	const __u8 *p;
	__u32 i, o;

	/* The verifier marks no range on a compare with data_end when the pointer's largest
	 * offset can pass 0xffff (MAX_PACKET_OFF): "invalid access to packet" with off bounded
	 * by 0xffff alone. 16 KB covers any linear part of a frame on 4 KB pages; past it
	 * (larger pages), -1 and the caller's helper copy. */
	if (off > SL_REQ_DIRECT_OFF || len == 0 || len > SL_REQ_SCAN)
		return -1;
	if (len < 8) {
		for (i = 0; i < 8; i++) {
			if (i >= len)
				break;
			p = (const __u8 *)data + off + i;
			if ((const void *)(p + 1) > end)
				return -1;
			rb->b[i] = *p;
		}
		return 0;
	}
	/* A bounded loop (the verifier walks its 64 steps once each: its index is known in
	 * each), not bpf_loop: a callback's step is a call of its own, ~9 ns here. */
	for (i = 0; i < SL_REQ_SCAN / 8; i++) {
		o = i * 8;
		if (o + 8 > len)
			break;
		p = (const __u8 *)data + off + o;
		if ((const void *)(p + 8) > end)
			return -1;
		*(__u64 *)(void *)&rb->b[o] = *(const __u64 *)(const void *)p;
	}
	if (len & 7) {
		o = len - 8; /* len >= 8: 0..SL_REQ_SCAN - 8 */
		p = (const __u8 *)data + off + o;
		if ((const void *)(p + 8) > end)
			return -1;
		*(__u64 *)(void *)&rb->b[o & SL_REQ_MASK] = *(const __u64 *)(const void *)p;
	}
	return 0;
}

/* What the parser found. */
#define REQ_LINE 1 /* the request line is complete: method and path are known */
#define REQ_HOST 2 /* a Host header (or SNI) was read whole */

static __always_inline __u8 lc(__u8 c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static __always_inline int starts(const struct req_buf *rb, __u32 len, __u32 at, const char *s,
				  __u32 n)
{
	__u32 i;

	if (at + n > len)
		return 0;
#pragma unroll
	for (i = 0; i < 8; i++) {
		if (i >= n)
			break;
		if (rb->b[(at + i) & SL_REQ_MASK] != (__u8)s[i])
			return 0;
	}
	return 1;
}

struct find_ctx {
	const struct req_buf *rb;
	__u32 len;
	__u32 at;     /* in: where to start; out: the match */
	__u32 found;
	__u32 stop_blank; /* stop at the blank line that ends the headers */
};

/* bpf_loop step: is there a '\n' at ctx->at + idx? */
static long find_nl_step(__u32 idx, struct find_ctx *f)
{
	__u32 i = f->at + idx;

	if (i >= f->len)
		return 1;
	if (f->rb->b[i & SL_REQ_MASK] == '\n') {
		f->at = i;
		f->found = 1;
		return 1;
	}
	return 0;
}

/* bpf_loop step: is there a '/' (found = 1) or a blank (found = 2) at ctx->at + idx? */
static long find_path_step(__u32 idx, struct find_ctx *f)
{
	__u32 i = f->at + idx;
	__u8 c;

	if (i >= f->len)
		return 1;
	c = f->rb->b[i & SL_REQ_MASK];
	if (c == '/' || c == ' ') {
		f->at = i;
		f->found = c == '/' ? 1 : 2;
		return 1;
	}
	return 0;
}

/* bpf_loop step: does a header line "host:" start at ctx->at + idx (just after a '\n')? */
static long find_host_step(__u32 idx, struct find_ctx *f)
{
	const struct req_buf *rb = f->rb;
	__u32 i = f->at + idx;

	if (i + 5 > f->len)
		return 1;
	if (rb->b[(i - 1) & SL_REQ_MASK] != '\n')
		return 0;
	/* "\r\n\r\n": the headers ended without a Host. */
	if (rb->b[i & SL_REQ_MASK] == '\r' || rb->b[i & SL_REQ_MASK] == '\n')
		return 1;
	if (lc(rb->b[i & SL_REQ_MASK]) == 'h' && lc(rb->b[(i + 1) & SL_REQ_MASK]) == 'o' &&
	    lc(rb->b[(i + 2) & SL_REQ_MASK]) == 's' && lc(rb->b[(i + 3) & SL_REQ_MASK]) == 't' &&
	    rb->b[(i + 4) & SL_REQ_MASK] == ':') {
		f->at = i + 5;
		f->found = 1;
		return 1;
	}
	return 0;
}

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "copy_host reads words as little-endian: the lowest byte is the first"
#endif

/* The bytes of @x equal to @c, as their high bits. The lowest one flagged is exact (a borrow
 * can flag a byte only above a true match), which is all the callers use. */
static __always_inline __u64 eq_bytes(__u64 x, __u8 c)
{
	const __u64 ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	__u64 v = x ^ (ones * c);

	return (v - ones) & ~v & highs;
}

/* One word of a host name lowercased without a branch (SWAR): for each byte below 0x80,
 * 'A'..'Z' gets 0x20 added. Applied to each word as copy_host stores it: lowercasing the
 * whole 64-byte key afterwards (it was lower_key) reloaded and stored all eight words
 * through the stack, ~30 ns of a first request, for a name that is mostly one or two. */
static __always_inline __u64 lower_word(__u64 x)
{
	const __u64 ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	__u64 h = x & ~highs;
	__u64 ge_a = (h + ones * (0x80 - 'A')) & highs;
	__u64 gt_z = (h + ones * (0x80 - 'Z' - 1)) & highs;

	return x | ((ge_a & ~gt_z & ~x & highs) >> 2);
}

/*
 * Copy the host name at @at (after "Host:", or the SNI) into @hk: optional blanks, then up to
 * the end of line, a ':' (port) or a blank; or exactly @max bytes (SNI). 1 when it ended
 * inside the buffer, 0 when the buffer (@len) or the key's 63 bytes ran out first, or the name
 * is empty. Eight bytes a step (SWAR): the delimiters, the end of the data and the key's limit
 * are flags in one word, and the lowest one says how the name ends. Where two fall on the same
 * byte, a name of @max bytes has ended; a delimiter past the data or the limit has not been
 * seen. The name is stored lowercased (lower_word). @hk must be zero: bytes past the name
 * are left so.
 */
static __always_inline int copy_host(const struct req_buf *rb, __u32 len, __u32 at,
				     struct sl_host_key *hk, __u32 max)
{
	const __u64 highs = 0x8080808080808080ull;
	__u32 i, w;

	for (i = 0; i < 8 && at < len; i++) {
		__u8 c = rb->b[at & SL_REQ_MASK];

		if (c != ' ' && c != '\t')
			break;
		at++;
	}
	for (w = 0; w < SL_HOST_KEY_LEN / 8; w++) {
		__u32 off = at + w * 8, i0 = w * 8;
		__u64 x, stop = 0, bad = 0, lb;

		if (off >= len || off >= SL_REQ_SCAN)
			return 0; /* cut short */
		/* off < SL_REQ_SCAN: the word ends inside b[] and its slack. The barrier keeps
		 * clang from reading at (rb + at) + w * 8, whose bound the verifier cannot see
		 * ("invalid access to memory, off=525"); one unaligned load, which the verifier
		 * allows where the CPU does (x86, arm64), instead of eight byte loads. */
		asm volatile("" : "+r"(off));
		x = *(const __u64 *)(const void *)&rb->b[off];
		if (len - off < 8)
			bad |= highs << (8 * (len - off)); /* bytes past the data */
		if (w == SL_HOST_KEY_LEN / 8 - 1)
			bad |= 0x80ull << 56;              /* byte 63: longer than any host */
		if (max) {
			if (max >= i0 && max - i0 < 8)
				stop = 0x80ull << (8 * (max - i0));
		} else {
			stop = eq_bytes(x, '\r') | eq_bytes(x, '\n') | eq_bytes(x, ':') |
			       eq_bytes(x, ' ') | eq_bytes(x, '\t') | eq_bytes(x, '/') |
			       eq_bytes(x, '?');
		}
		if (!(stop | bad)) {
			*(__u64 *)(void *)&hk->name[i0] = lower_word(x);
			continue;
		}
		lb = (stop | bad) & -(stop | bad);
		x &= (lb >> 7) - 1; /* the bytes before it */
		*(__u64 *)(void *)&hk->name[i0] = lower_word(x);
		if (max)
			return (lb & stop) ? 1 : 0;
		if (lb & bad)
			return 0;
		return !(w == 0 && lb == 0x80); /* an empty name is no name */
	}
	return 0;
}

/* The path of the request line, from @p: copied into @rk after the method byte, up to the
 * first blank, '?' or '#', at most SL_ROUTE_KEY_PATH bytes. Its length, or -1 if the line is
 * cut short. */
__noinline int sl_http_path(const struct req_buf *rb, __u32 len, __u32 p,
			    struct sl_route_key *rk)
{
	__u32 j, n = 0;

	if (!rb || !rk || len > SL_REQ_SCAN || p > 127)
		return -1;
	for (j = 0; j < SL_ROUTE_KEY_PATH; j++) {
		__u8 c;

		if (p + j >= len)
			return -1;
		c = rb->b[(p + j) & SL_REQ_MASK];
		if (c == ' ' || c == '?' || c == '\r' || c == '\n' || c == '#')
			break;
		rk->data[(1 + j) & 63] = c;
		n++;
	}
	return (int)n;
}

/*
 * The request line and Host of a plaintext HTTP/1.x request. Fills @rk (method and path as
 * the route trie keys them; prefixlen covers the whole path read) and @hk. Returns REQ_* bits.
 * A global function: the verifier checks it once.
 */
__noinline int sl_parse_http(const struct req_buf *rb, __u32 len, struct sl_route_key *rk,
			     struct sl_host_key *hk)
{
	struct find_ctx f = {};
	__u32 p, n, line_end;
	__u8 method;
	int out = 0, ret, abs_host = 0;

	if (!rb || !rk || !hk || len > SL_REQ_SCAN)
		return 0;
	if (starts(rb, len, 0, "GET ", 4)) {
		method = SL_M_GET;
		p = 4;
	} else if (starts(rb, len, 0, "POST ", 5)) {
		method = SL_M_POST;
		p = 5;
	} else if (starts(rb, len, 0, "PUT ", 4)) {
		method = SL_M_PUT;
		p = 4;
	} else if (starts(rb, len, 0, "DELETE ", 7)) {
		method = SL_M_DELETE;
		p = 7;
	} else if (starts(rb, len, 0, "PATCH ", 6)) {
		method = SL_M_PATCH;
		p = 6;
	} else if (starts(rb, len, 0, "HEAD ", 5)) {
		method = SL_M_HEAD;
		p = 5;
	} else if (starts(rb, len, 0, "OPTIONS ", 8)) {
		method = SL_M_OPTIONS;
		p = 8;
	} else {
		return 0; /* not a request we can route: the default cost */
	}
	rk->data[0] = method;
	f.rb = rb;
	f.len = len;
	if (p < len && rb->b[p & SL_REQ_MASK] != '/') {
		/*
		 * An absolute-form target, "http://host[:port]/path": routed by its path, and its
		 * authority names the tenant ahead of any Host header (RFC 9112 section 3.2.2),
		 * as the gateway does. Anything else that is not a path is not routable.
		 */
		__u32 a;

		if (p + 8 > len || lc(rb->b[p & SL_REQ_MASK]) != 'h' ||
		    lc(rb->b[(p + 1) & SL_REQ_MASK]) != 't' || lc(rb->b[(p + 2) & SL_REQ_MASK]) != 't' ||
		    lc(rb->b[(p + 3) & SL_REQ_MASK]) != 'p')
			return 0;
		if (starts(rb, len, p + 4, "://", 3))
			a = p + 7;
		else if (lc(rb->b[(p + 4) & SL_REQ_MASK]) == 's' && starts(rb, len, p + 5, "://", 3))
			a = p + 8;
		else
			return 0;
		if (!copy_host(rb, len, a, hk, 0))
			return 0;
		abs_host = 1;
		f.at = a;
		bpf_loop(SL_HOST_KEY_LEN + 8, find_path_step, &f, 0);
		if (!f.found || f.at > 127)
			return 0;
		p = f.at;
		if (f.found == 2) {
			/* No path at all: the origin's "/" */
			rk->data[1] = '/';
			n = 0;
			rk->prefixlen = 16;
			goto line_end;
		}
		f.found = 0;
	}
	ret = sl_http_path(rb, len, p, rk);
	if (ret < 0)
		return 0; /* the request line is cut short */
	n = (__u32)ret;
	rk->prefixlen = 8 * (1 + n);

line_end:
	/* The end of the request line: where " HTTP/1.1\r\n" says it is, else scan for it. */
	f.found = 0;
	f.at = p + n;
	if ((starts(rb, len, p + n, " HTTP/1.", 8)) && p + n + 10 < len &&
	    rb->b[(p + n + 10) & SL_REQ_MASK] == '\n') {
		f.at = p + n + 10;
		f.found = 1;
	} else {
		bpf_loop(SL_REQ_SCAN, find_nl_step, &f, 0);
	}
	if (!f.found)
		return 0;
	out |= REQ_LINE;
	line_end = f.at;

	if (abs_host)
		return out | REQ_HOST;
	/* Host is the first header almost always: try there before scanning. */
	f.found = 0;
	f.at = line_end + 1;
	if (f.at < SL_REQ_SCAN) {
		__u32 i = f.at;

		/* find_host_step's first step, inline: when Host is the first header, no loop
		 * (each step is a call of its own, ~9 ns here). */
		if (i + 5 <= len && lc(rb->b[i & SL_REQ_MASK]) == 'h' &&
		    lc(rb->b[(i + 1) & SL_REQ_MASK]) == 'o' &&
		    lc(rb->b[(i + 2) & SL_REQ_MASK]) == 's' &&
		    lc(rb->b[(i + 3) & SL_REQ_MASK]) == 't' && rb->b[(i + 4) & SL_REQ_MASK] == ':') {
			f.at = i + 5;
			f.found = 1;
		} else {
			bpf_loop(SL_REQ_SCAN, find_host_step, &f, 0);
		}
	}
	if (f.found && f.at < SL_REQ_SCAN && copy_host(rb, len, f.at, hk, 0))
		out |= REQ_HOST;
	return out;
}

struct sni_ctx {
	const struct req_buf *rb;
	__u32 len;
	__u32 at;     /* the next extension */
	__u32 end;    /* the end of the extensions */
	__u32 sni_at; /* where the host name starts */
	__u32 sni_len;
};

static long sni_step(__u32 idx, struct sni_ctx *x)
{
	const struct req_buf *rb = x->rb;
	__u32 at = x->at, type, elen;

	if (at + 4 > x->end || at + 4 > x->len)
		return 1;
	type = ((__u32)rb->b[at & SL_REQ_MASK] << 8) | rb->b[(at + 1) & SL_REQ_MASK];
	elen = ((__u32)rb->b[(at + 2) & SL_REQ_MASK] << 8) | rb->b[(at + 3) & SL_REQ_MASK];
	if (type == 0) {
		/* server_name: list length (2), name type (1) = host_name, length (2), name */
		__u32 p = at + 4;

		if (p + 5 > x->len || rb->b[(p + 2) & SL_REQ_MASK] != 0)
			return 1;
		x->sni_len = ((__u32)rb->b[(p + 3) & SL_REQ_MASK] << 8) |
			     rb->b[(p + 4) & SL_REQ_MASK];
		x->sni_at = p + 5;
		return 1;
	}
	x->at = at + 4 + elen;
	return 0;
}

static __always_inline __u32 rd16(const struct req_buf *rb, __u32 at)
{
	return ((__u32)rb->b[at & SL_REQ_MASK] << 8) | rb->b[(at + 1) & SL_REQ_MASK];
}

/* The SNI of a TLS ClientHello at the start of @rb. Returns REQ_HOST when read whole. */
__noinline int sl_parse_sni(const struct req_buf *rb, __u32 len, struct sl_host_key *hk)
{
	struct sni_ctx x = {};
	__u32 p;

	if (!rb || !hk || len > SL_REQ_SCAN || len < 44)
		return 0;
	/* record: handshake (22); handshake: ClientHello (1) */
	if (rb->b[0] != 22 || rb->b[5] != 1)
		return 0;
	p = 5 + 4 + 2 + 32;                        /* headers, client version, random */
	p += 1 + rb->b[p & SL_REQ_MASK];           /* session id */
	if (p + 2 > len)
		return 0;
	p += 2 + rd16(rb, p);                      /* cipher suites */
	if (p + 1 > len)
		return 0;
	p += 1 + rb->b[p & SL_REQ_MASK];           /* compression methods */
	if (p + 2 > len)
		return 0;
	x.end = p + 2 + rd16(rb, p);
	x.at = p + 2;
	x.rb = rb;
	x.len = len;
	bpf_loop(64, sni_step, &x, 0);
	if (!x.sni_at || !x.sni_len || x.sni_len >= SL_HOST_KEY_LEN)
		return 0;
	if (x.sni_at + x.sni_len > len || x.sni_at >= SL_REQ_SCAN)
		return 0; /* the name runs past this segment */
	if (!copy_host(rb, len, x.sni_at, hk, x.sni_len))
		return 0;
	return REQ_HOST;
}

/* The way of @hs holding the host @hk tagged @tag, or SL_HOST_WAYS: the tags first, then
 * the whole name of the way whose tag matched. */
static __always_inline __u32 sl_host_way(const struct sl_host_set *hs, const struct sl_host_key *hk,
				      __u32 tag)
{
	__u32 i, j, w = SL_HOST_WAYS;

#pragma unroll
	for (i = 0; i < SL_HOST_WAYS; i++)
		if (hs->tag[i] == tag)
			w = i;
	if (w >= SL_HOST_WAYS)
		return SL_HOST_WAYS;
	{
		const __u64 *a = (const __u64 *)(const void *)hk->name;
		const __u64 *b = (const __u64 *)(const void *)hs->name[w & (SL_HOST_WAYS - 1)].name;
		__u64 d = 0;

#pragma unroll
		for (j = 0; j < SL_HOST_KEY_LEN / 8; j++)
			d |= a[j] ^ b[j];
		return d ? SL_HOST_WAYS : w;
	}
}

/*
 * The tenant of the host @hk names (Host or SNI, read by sl_parse_http or sl_parse_sni), or
 * NULL for one no tenant configured: its two sets of @sets (an array of struct sl_host_set),
 * and @all (the hash map of every host) only when both were full when the hosts were
 * written.
 */
static __always_inline __u32 *sl_host_tenant(void *sets, void *all, const struct sl_host_key *hk,
					     __u32 seed)
{
	__u64 h = sl_host_hash(hk, seed);
	__u32 tag = (__u32)(h >> 32), idx[2] = { (__u32)h & (SL_HOST_SETS - 1),
						tag & (SL_HOST_SETS - 1) };
	__u32 k, w, full = 1;
	struct sl_host_set *hs;

#pragma unroll
	for (k = 0; k < 2; k++) {
		hs = bpf_map_lookup_elem(sets, &idx[k]);
		if (!hs)
			return NULL;
		w = sl_host_way(hs, hk, tag);
		if (w < SL_HOST_WAYS)
			return &hs->tid[w & (SL_HOST_WAYS - 1)];
		full &= hs->overflow != 0;
	}
	return full ? bpf_map_lookup_elem(all, hk) : NULL;
}

#endif
