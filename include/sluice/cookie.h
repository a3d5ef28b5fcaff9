/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sluice's SYN cookie: the sequence number of the SYN-ACK XDP sends for a connection it has
 * not admitted, so that the connection costs no state until its first request segment comes
 * back carrying ack = cookie + 1. Shared by BPF (make, check) and the host (tests).
 *
 *   31      parity of the time slot it was made in (slots are 2^36 ns, ~69 s); a cookie is
 *           good in its own slot and the next
 *   30..28  MSS index into SL_COOKIE_MSS
 *   27..24  window scale + 1 the client offered (0: none)
 *   23      the client offered SACK
 *   22..4   MAC: SipHash-2-4 under the cookie key over the addresses, ports, the client's
 *           ISN, the full slot and bits 31..23, truncated to 19 bits
 *   3..0    marker: 4 bits fixed per key. A segment whose ack - 1 does not end in them is
 *           not a handshake ACK or first request, and passes without a hash: 15 in 16
 *           segments of connections the kernel made (SYN front), and, once the server has
 *           sent anything, 15 in 16 segments of connections sluice handed to the kernel
 *           (stateless front, where every ISN is a cookie).
 *
 * The option bits are what a later hand-off to a real socket needs (bpf_sk_assign_tcp_reqsk
 * takes MSS, window scales and SACK); the 429 path only needs the MAC. The key rotates: the
 * previous key stays good until prev_until_ns, one slot after the rotation.
 */
#ifndef SLUICE_COOKIE_H
#define SLUICE_COOKIE_H

#include <linux/types.h>

#include "sluice/abi.h"
#include "sluice/siphash.h"

#define SL_COOKIE_SLOT_SHIFT 36
#define SL_COOKIE_MAC_BITS 19
#define SL_COOKIE_MAC_MASK ((1u << SL_COOKIE_MAC_BITS) - 1)
#define SL_COOKIE_MAC_SHIFT 4
#define SL_COOKIE_MARKER_MASK 15u
#define SL_COOKIE_MSS { 536, 1220, 1360, 1400, 1440, 1452, 1460, 8960 }

/* The connection a cookie is bound to: addresses in network order, ports and ISN in host
 * order. IPv4 addresses in the first 4 bytes. */
struct sl_conn_id {
	__u8 family;
	__u8 pad[3];
	__u16 sport, dport; /* the client's port, the protected port */
	__u32 isn;          /* the client's initial sequence number */
	__u8 saddr[16], daddr[16];
};

struct sl_cookie_opts {
	__u8 mss_idx;
	__u8 wscale;  /* 0: none; else the client's shift + 1 */
	__u8 sack;
};

static __always_inline __u64 sl_rd64(const __u8 *p)
{
	__u64 v;

	__builtin_memcpy(&v, p, 8);
	return v;
}

static __always_inline __u32 sl_cookie_mac(const struct sl_conn_id *c, __u64 slot, __u32 bits,
					   const __u64 *key)
{
	__u64 m[6];
	__u64 tail = ((__u64)c->sport << 48) | ((__u64)c->dport << 32) | c->isn;
	__u64 more = (slot << 16) ^ bits;

	if (c->family == SL_FAM_V4) {
		m[0] = sl_rd64(c->saddr) & 0xffffffffull; /* only the 4 address bytes count */
		m[0] = (m[0] << 32) | (sl_rd64(c->daddr) & 0xffffffffull);
		m[1] = tail;
		m[2] = more;
		return (__u32)sl_siphash(m, 3, key[0], key[1]) & SL_COOKIE_MAC_MASK;
	}
	m[0] = sl_rd64(c->saddr);
	m[1] = sl_rd64(c->saddr + 8);
	m[2] = sl_rd64(c->daddr);
	m[3] = sl_rd64(c->daddr + 8);
	m[4] = tail;
	m[5] = more;
	return (__u32)sl_siphash(m, 6, key[0], key[1]) & SL_COOKIE_MAC_MASK;
}

static __always_inline __u32 sl_cookie_make(const struct sl_conn_id *c, __u64 now_ns,
					    const struct sl_cookie_opts *o,
					    const struct sl_cookie_keys *k)
{
	__u64 slot = now_ns >> SL_COOKIE_SLOT_SHIFT;
	__u32 bits = ((__u32)(slot & 1) << 8) | ((__u32)(o->mss_idx & 7) << 5) |
		     ((__u32)(o->wscale & 15) << 1) | (o->sack & 1);

	return (bits << 23) | (sl_cookie_mac(c, slot, bits, k->cur) << SL_COOKIE_MAC_SHIFT) |
	       (k->cur_marker & SL_COOKIE_MARKER_MASK);
}

/*
 * Is @cookie (ack - 1) one of ours for @c at @now_ns? Returns 1 and fills *@o when it is.
 * At most two MACs are computed (current and previous key), only when the marker matches.
 */
static __always_inline int sl_cookie_check(const struct sl_conn_id *c, __u32 cookie,
					   __u64 now_ns, const struct sl_cookie_keys *k,
					   struct sl_cookie_opts *o)
{
	__u32 marker = cookie & SL_COOKIE_MARKER_MASK, bits = cookie >> 23;
	__u32 mac = (cookie >> SL_COOKIE_MAC_SHIFT) & SL_COOKIE_MAC_MASK;
	__u64 slot = now_ns >> SL_COOKIE_SLOT_SHIFT;
	int ok = 0;

	if ((slot & 1) != (bits >> 8))
		slot -= 1; /* made in the previous slot: still good */
	if (marker == (k->cur_marker & SL_COOKIE_MARKER_MASK) &&
	    sl_cookie_mac(c, slot, bits, k->cur) == mac)
		ok = 1;
	else if (now_ns < k->prev_until_ns && marker == (k->prev_marker & SL_COOKIE_MARKER_MASK) &&
		 sl_cookie_mac(c, slot, bits, k->prev) == mac)
		ok = 1;
	if (!ok)
		return 0;
	o->mss_idx = (bits >> 5) & 7;
	o->wscale = (bits >> 1) & 15;
	o->sack = bits & 1;
	return 1;
}

/* Could @cookie be ours at all, with no clock at hand? The previous key's marker counts until
 * the next rotation, a little longer than the key itself: a superset, which only costs the
 * few segments it lets through a slower check. */
static __always_inline int sl_cookie_marked_any(__u32 cookie, const struct sl_cookie_keys *k)
{
	__u32 marker = cookie & SL_COOKIE_MARKER_MASK;

	return marker == (k->cur_marker & SL_COOKIE_MARKER_MASK) ||
	       (k->prev_until_ns && marker == (k->prev_marker & SL_COOKIE_MARKER_MASK));
}

/* Could @cookie be ours at all? One compare: the marker of either live key. */
static __always_inline int sl_cookie_marked(__u32 cookie, __u64 now_ns,
					    const struct sl_cookie_keys *k)
{
	__u32 marker = cookie & SL_COOKIE_MARKER_MASK;

	return marker == (k->cur_marker & SL_COOKIE_MARKER_MASK) ||
	       (now_ns < k->prev_until_ns &&
		marker == (k->prev_marker & SL_COOKIE_MARKER_MASK));
}

#endif
