/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The cookie's MAC as a global BPF function, for both programs that check cookies. SipHash
 * over six words kept in registers and spills took each caller's frame past what the
 * verifier allows a call chain, and inlined at the four places a check computes it (two
 * slots, two keys), it cost most of the verification budget. Include this instead of
 * sluice/cookie.h. A BPF function takes five arguments at most: the slot, the timestamp flag,
 * the option bits and which key travel packed in one word.
 */
#ifndef SLUICE_BPF_COOKIE_MAC_H
#define SLUICE_BPF_COOKIE_MAC_H

#include <linux/types.h>
#include <bpf/bpf_helpers.h>

struct sl_cookie_keys;
struct sl_conn_id;
__noinline __u64 sl_mac(const struct sl_conn_id *id, __u64 packed, const struct sl_cookie_keys *k);
#define SL_COOKIE_MAC(c, slot, ts, bits, k, use_prev)                                        \
	sl_mac(c, ((__u64)(slot) << 16) | ((__u64)((use_prev) & 1) << 9) |                  \
		      ((__u64)((ts) & 1) << 8) | ((bits) & 0xff), k)

#include "sluice/cookie.h"

__noinline __u64 sl_mac(const struct sl_conn_id *id, __u64 packed, const struct sl_cookie_keys *k)
{
	if (!id || !k)
		return 0;
	return sl_cookie_mac(id, packed >> 16, (packed >> 8) & 1, packed & 0xff,
			     (packed >> 9) & 1 ? k->prev : k->cur);
}

#endif
