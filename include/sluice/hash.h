/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The bucket table's keyed hash, shared by the datapath and by the userspace that reads and
 * writes the table (sluicectl prefix show, sluiced's clear, the tests). Not cryptographic: it spreads keys an
 * attacker can only choose within the addresses they hold, seeded per installation.
 */
#ifndef SLUICE_HASH_H
#define SLUICE_HASH_H

#include <linux/types.h>

#include "sluice/abi.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

_Static_assert(sizeof(struct sl_bkey) == 12, "sl_key_hash hashes the key as 3 words");

static __always_inline __u32 sl_mix3(const __u32 *w, __u32 h)
{
	int i;

#ifdef __bpf__
#pragma unroll
#endif
	for (i = 0; i < 3; i++) {
		h ^= w[i];
		h *= 0x85ebca6b;
		h ^= h >> 13;
	}
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return h;
}

/*
 * Two independent 32-bit hashes of the key: the low word picks the bucket set, the high word
 * is the tag stored in the key's way, so that a way only speaks for the key that wrote it (two
 * keys share a bucket only when both words collide: 1 in 2^32 per way for keys of one set).
 */
static __always_inline __u64 sl_key_hash_words(const __u32 *w, __u32 seed)
{
	return ((__u64)(sl_mix3(w, seed ^ 0x5bd1e995) | 1) << 32) | sl_mix3(w, seed ^ 0x9e3779b9);
}

/* The same of a key in memory: its 12 bytes read as three words in the host's order. */
static __always_inline __u64 sl_key_hash(const struct sl_bkey *k, __u32 seed)
{
	__u32 w[3];

	__builtin_memcpy(w, k, sizeof(w));
	return sl_key_hash_words(w, seed);
}

/*
 * A decided cookie connection's set and tag (struct sl_conn_key, 11 words): the low word
 * picks the set, the high word is the tag (bit 1 set, so never 0; bit 0 left for the state).
 */
_Static_assert(sizeof(struct sl_conn_key) == 44 && _Alignof(struct sl_conn_key) == 4,
	       "sl_shed_hash reads the key as 11 aligned words");
static __always_inline __u64 sl_shed_hash(const struct sl_conn_key *k, __u32 seed)
{
	/* Read in place (the key is 4-byte aligned): a copy would cost the BPF stack 44 bytes
	 * in every caller it is inlined into. */
	const __u32 *w = (const __u32 *)k;
	__u32 a = seed ^ 0x7f4a7c15, b = seed ^ 0x165667b1;
	int i;

#ifdef __bpf__
#pragma unroll
#endif
	for (i = 0; i < 11; i++) {
		a ^= w[i];
		a *= 0x85ebca6b;
		a ^= a >> 13;
		b ^= w[i];
		b *= 0xcc9e2d51;
		b ^= b >> 15;
	}
	a *= 0xc2b2ae35;
	a ^= a >> 16;
	b *= 0x1b873593;
	b ^= b >> 16;
	return ((__u64)((b & ~3u) | 2u) << 32) | a;
}

/*
 * A host key's two set indexes and tag (struct sl_host_set): the low word picks its first
 * set, the high word (never 0) its second set and is its tag. The eight words of the
 * zero-padded name are multiplied independently and summed (no chain of dependent
 * multiplies on the request's path), then mixed. Only the writer's placement depends on its
 * quality: a lookup compares the whole name.
 */
_Static_assert(sizeof(struct sl_host_key) == 64, "sl_host_hash reads the name as 8 words");
static __always_inline __u64 sl_host_hash(const struct sl_host_key *k, __u32 seed)
{
	static const __u64 mul[8] = { 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
				      0x165667b19e3779f9ull, 0xd6e8feb86659fd93ull,
				      0xff51afd7ed558ccdull, 0xc4ceb9fe1a85ec53ull,
				      0x87c37b91114253d5ull, 0x4cf5ad432745937full };
	__u64 s = ((__u64)seed << 32 | seed) ^ 0x2545f4914f6cdd1dull, h = 0, w;
	int i;

#ifdef __bpf__
#pragma unroll
#endif
	for (i = 0; i < 8; i++) {
#ifdef __bpf__
		/* One load a word (the key may sit at any offset of a scratch record: the
		 * verifier allows unaligned loads where the CPU does); memcpy would be
		 * eight byte loads for a byte-aligned struct. */
		w = *(const __u64 *)(const void *)&k->name[8 * i];
#else
		__builtin_memcpy(&w, &k->name[8 * i], 8);
#endif
		h += (w ^ s) * mul[i];
		s = s << 7 | s >> 57;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h | 1ull << 32;
}

#endif
