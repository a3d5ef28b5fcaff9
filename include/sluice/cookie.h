/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sluice's SYN cookie: the sequence number (and, where the client speaks TCP timestamps, the
 * timestamp) of the SYN-ACK XDP sends, so that a connection costs no state until it comes
 * back with ack = cookie + 1 and so proves its source address. Shared by BPF (make, check)
 * and the host (tests, benchmarks).
 *
 * The sequence number (ISS):
 *   31..4   28 bits of MAC: SipHash-2-4 under the cookie key over the addresses, ports, the
 *           client's ISN, the time slot (2^36 ns, ~69 s), whether timestamps are in use and
 *           the option bits below
 *   3..0    the marker: 4 bits fixed for the installation (not per key: it is public anyway,
 *           every SYN-ACK shows it, and a marker that changed at a key rotation would halve
 *           the fast path while both keys live). A segment whose ack - 1 does not end in it
 *           is not a handshake ACK or first request and passes without a hash: 15 of 16
 *           segments of established connections.
 *
 * With timestamps (the client's SYN carried TSopt) our TSval, which the client echoes in
 * every segment's TSecr, carries the rest:
 *   31..24  options: MSS index (3 bits), window scale + 1 (4 bits), SACK (1 bit)
 *   23..0   24 more bits of the same SipHash
 * Without timestamps there is nowhere to keep options, so such a connection gets what the
 * kernel's own cookies give it: the smallest MSS of the family, no window scaling, no SACK
 * (our SYN-ACK then offers neither).
 *
 * Forgery odds for one blind ACK (the marker is known to the attacker): a cookie is good in
 * its own slot and the next (two slots), under the current key and, for one slot after a
 * rotation, the previous one. Without timestamps 2 x 2^-28 = 2^-27 (2^-26 during the
 * rotation overlap); with them 2 x 2^-52 = 2^-51. The kernel's own SYN cookie accepts 2 of 256
 * minute counters and 4 of 2^24 MSS values: 2^-29. docs/design.md has the arithmetic and
 * tests/unit/test_cookie.c the measurement.
 */
#ifndef SLUICE_COOKIE_H
#define SLUICE_COOKIE_H

#include <linux/types.h>

#include "sluice/abi.h"
#include "sluice/siphash.h"

#define SL_COOKIE_SLOT_SHIFT 36
#define SL_COOKIE_MAC_BITS 28
#define SL_COOKIE_MAC_MASK ((1u << SL_COOKIE_MAC_BITS) - 1)
#define SL_COOKIE_MAC_SHIFT 4
#define SL_COOKIE_MARKER_MASK 15u
#define SL_COOKIE_TS_MAC_BITS 24
#define SL_COOKIE_TS_MAC_MASK ((1u << SL_COOKIE_TS_MAC_BITS) - 1)
#define SL_COOKIE_MSS { 536, 1220, 1360, 1400, 1440, 1452, 1460, 8960 }
/* The MSS index of a connection without timestamps: 536 (IPv4) and 1220 (IPv6) are the
 * smallest each family must take. */
#define SL_COOKIE_MSS_NOTS_V4 0
#define SL_COOKIE_MSS_NOTS_V6 1

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
	__u8 ts;      /* the client speaks timestamps: options and more MAC are in our TSval */
};

static __always_inline __u64 sl_rd64(const __u8 *p)
{
	__u64 v;

	__builtin_memcpy(&v, p, 8);
	return v;
}

/* Options as they sit in TSval's top byte, and back. */
static __always_inline __u32 sl_cookie_optbits(const struct sl_cookie_opts *o)
{
	return ((__u32)(o->mss_idx & 7) << 5) | ((__u32)(o->wscale & 15) << 1) | (o->sack & 1);
}

static __always_inline void sl_cookie_opts_of(__u32 bits, __u8 ts, struct sl_cookie_opts *o)
{
	o->mss_idx = (bits >> 5) & 7;
	o->wscale = (bits >> 1) & 15;
	o->sack = bits & 1;
	o->ts = ts;
}

/* The 64-bit MAC of (@c, @slot, @ts, @bits) under @key: ISS bits from the low 28, TSval
 * bits from the next 24. */
static __always_inline __u64 sl_cookie_mac_of(__u8 family, const __u8 *saddr,
					      const __u8 *daddr, __u16 sport, __u16 dport,
					      __u32 isn, __u64 slot, __u32 ts, __u32 bits,
					      const __u64 *key)
{
	__u64 m[6];
	__u64 tail = ((__u64)sport << 48) | ((__u64)dport << 32) | isn;
	__u64 more = (slot << 16) | ((__u64)(ts & 1) << 8) | (bits & 0xff);

	if (family == SL_FAM_V4) {
		m[0] = sl_rd64(saddr) & 0xffffffffull; /* only the 4 address bytes count */
		m[0] = (m[0] << 32) | (sl_rd64(daddr) & 0xffffffffull);
		m[1] = tail;
		m[2] = more;
		return sl_siphash(m, 3, key[0], key[1]);
	}
	m[0] = sl_rd64(saddr);
	m[1] = sl_rd64(saddr + 8);
	m[2] = sl_rd64(daddr);
	m[3] = sl_rd64(daddr + 8);
	m[4] = tail;
	m[5] = more;
	return sl_siphash(m, 6, key[0], key[1]);
}

/* The same over a connection record. */
static __always_inline __u64 sl_cookie_mac(const struct sl_conn_id *c, __u64 slot, __u32 ts,
					   __u32 bits, const __u64 *key)
{
	return sl_cookie_mac_of(c->family, c->saddr, c->daddr, c->sport, c->dport, c->isn, slot,
				ts, bits, key);
}

static __always_inline __u32 sl_cookie_iss_of(__u64 mac, __u8 marker)
{
	return (((__u32)mac & SL_COOKIE_MAC_MASK) << SL_COOKIE_MAC_SHIFT) |
	       (marker & SL_COOKIE_MARKER_MASK);
}

static __always_inline __u32 sl_cookie_tsval_of(__u64 mac, __u32 bits)
{
	return ((bits & 0xff) << 24) | ((__u32)(mac >> SL_COOKIE_MAC_BITS) & SL_COOKIE_TS_MAC_MASK);
}

/*
 * The BPF side computes the MAC in a global function of its own (checked once by the verifier,
 * instead of four inlined SipHashes per check): it defines SL_COOKIE_MAC before including this
 * file. @prev picks the previous key.
 */
#ifndef SL_COOKIE_MAC
#define SL_COOKIE_MAC(c, slot, ts, bits, k, use_prev)                                  \
	sl_cookie_mac(c, slot, ts, bits, (use_prev) ? (k)->prev : (k)->cur)
#endif

/* ISS and TSval of a @mac made now with options @bits: the one tail of both makers below. */
static __always_inline __u32 sl_cookie_of_mac(__u64 mac, const struct sl_cookie_opts *o,
					      __u32 bits, const struct sl_cookie_keys *k,
					      __u32 *tsval)
{
	*tsval = o->ts ? sl_cookie_tsval_of(mac, bits) : 0;
	return sl_cookie_iss_of(mac, k->cur_marker);
}

/* The cookie for @c now: returns the ISS, and our TSval in *@tsval when @o->ts. */
static __always_inline __u32 sl_cookie_make(const struct sl_conn_id *c, __u64 now_ns,
					    const struct sl_cookie_opts *o,
					    const struct sl_cookie_keys *k, __u32 *tsval)
{
	__u64 slot = now_ns >> SL_COOKIE_SLOT_SHIFT;
	__u32 bits = o->ts ? sl_cookie_optbits(o) : 0;

	return sl_cookie_of_mac(SL_COOKIE_MAC(c, slot, o->ts, bits, k, 0), o, bits, k, tsval);
}

/*
 * The same from the connection's fields, the MAC computed inline even where SL_COOKIE_MAC is
 * a call: the one MAC of a SYN-ACK, in a BPF function that can afford its registers (and
 * whose stack cannot afford a struct sl_conn_id). The same MAC as sl_cookie_make's by
 * construction: sl_cookie_mac is this over the record's fields.
 */
static __always_inline __u32 sl_cookie_make_of(__u8 family, const __u8 *saddr,
					       const __u8 *daddr, __u16 sport, __u16 dport,
					       __u32 isn, __u64 now_ns,
					       const struct sl_cookie_opts *o,
					       const struct sl_cookie_keys *k, __u32 *tsval)
{
	__u64 slot = now_ns >> SL_COOKIE_SLOT_SHIFT;
	__u32 bits = o->ts ? sl_cookie_optbits(o) : 0;

	return sl_cookie_of_mac(sl_cookie_mac_of(family, saddr, daddr, sport, dport, isn, slot,
						 o->ts, bits, k->cur),
				o, bits, k, tsval);
}

/* Does @mac, made for one (key, slot), account for @iss and (with timestamps) @tsecr? */
static __always_inline int sl_cookie_matches(__u64 mac, __u32 iss, __u32 ts, __u32 tsecr)
{
	if (((__u32)mac & SL_COOKIE_MAC_MASK) != (iss >> SL_COOKIE_MAC_SHIFT))
		return 0;
	return !ts || ((__u32)(mac >> SL_COOKIE_MAC_BITS) & SL_COOKIE_TS_MAC_MASK) ==
			      (tsecr & SL_COOKIE_TS_MAC_MASK);
}

/*
 * Is @iss (ack - 1) one of ours for @c at @now_ns? @ts says whether the segment carries a
 * timestamp, whose echo is @tsecr. Returns 1 and fills *@o when it is. The marker is
 * compared first; then at most four MACs (two slots, two keys) are computed.
 */
static __always_inline int sl_cookie_check(const struct sl_conn_id *c, __u32 iss, __u32 ts,
					   __u32 tsecr, __u64 now_ns,
					   const struct sl_cookie_keys *k, struct sl_cookie_opts *o)
{
	__u64 slot = now_ns >> SL_COOKIE_SLOT_SHIFT;
	__u32 bits = ts ? tsecr >> 24 : 0;
	int ok = 0;

	if ((iss & SL_COOKIE_MARKER_MASK) != (k->cur_marker & SL_COOKIE_MARKER_MASK))
		return 0;
	if (sl_cookie_matches(SL_COOKIE_MAC(c, slot, ts, bits, k, 0), iss, ts, tsecr) ||
	    sl_cookie_matches(SL_COOKIE_MAC(c, slot - 1, ts, bits, k, 0), iss, ts, tsecr))
		ok = 1;
	else if (now_ns < k->prev_until_ns &&
		 (sl_cookie_matches(SL_COOKIE_MAC(c, slot, ts, bits, k, 1), iss, ts, tsecr) ||
		  sl_cookie_matches(SL_COOKIE_MAC(c, slot - 1, ts, bits, k, 1), iss, ts, tsecr)))
		ok = 1;
	if (!ok)
		return 0;
	if (ts) {
		sl_cookie_opts_of(bits, 1, o);
	} else {
		o->mss_idx = c->family == SL_FAM_V4 ? SL_COOKIE_MSS_NOTS_V4 : SL_COOKIE_MSS_NOTS_V6;
		o->wscale = 0;
		o->sack = 0;
		o->ts = 0;
	}
	return 1;
}

/* Could @x (an ack - 1, or what it would be after our 429) be one of our cookies? One
 * compare: the installation's marker. */
static __always_inline int sl_cookie_marked(__u32 x, const struct sl_cookie_keys *k)
{
	return (x & SL_COOKIE_MARKER_MASK) == (k->cur_marker & SL_COOKIE_MARKER_MASK);
}

#endif
