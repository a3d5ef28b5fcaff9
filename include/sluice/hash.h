/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The ghost-slot hash, shared by the datapath and by `sluicectl prefix show` (which must
 * predict the state a returning key would start with). Not cryptographic: it spreads keys an
 * attacker can only choose within the addresses they hold, seeded per installation.
 */
#ifndef SLUICE_HASH_H
#define SLUICE_HASH_H

#include <linux/types.h>

#include "sluice/abi.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

_Static_assert(sizeof(struct sl_bkey) == 20, "sl_ghost_slot hashes the key as 5 words");

static __always_inline __u32 sl_ghost_slot(const struct sl_bkey *k, __u32 seed, __u32 mask)
{
	__u32 w[5];
	__u32 h = seed ^ 0x9e3779b9;
	int i;

	__builtin_memcpy(w, k, sizeof(w));
#ifdef __bpf__
#pragma unroll
#endif
	for (i = 0; i < 5; i++) {
		h ^= w[i];
		h *= 0x85ebca6b;
		h ^= h >> 13;
	}
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return h & mask;
}

#endif
