/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * SipHash-2-4 over a whole number of 64-bit words, for BPF and the host: the datapath signs
 * SYN cookies with it and the tests recompute the same cookies. @n must be a compile-time
 * constant at every call site so the BPF loops unroll.
 */
#ifndef SLUICE_SIPHASH_H
#define SLUICE_SIPHASH_H

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define SL_ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define SL_SIPROUND                                                                  \
	do {                                                                         \
		v0 += v1; v1 = SL_ROTL64(v1, 13); v1 ^= v0; v0 = SL_ROTL64(v0, 32);  \
		v2 += v3; v3 = SL_ROTL64(v3, 16); v3 ^= v2;                          \
		v0 += v3; v3 = SL_ROTL64(v3, 21); v3 ^= v0;                          \
		v2 += v1; v1 = SL_ROTL64(v1, 17); v1 ^= v2; v2 = SL_ROTL64(v2, 32);  \
	} while (0)

static __always_inline __u64 sl_siphash(const __u64 *m, const int n, __u64 k0, __u64 k1)
{
	__u64 v0 = 0x736f6d6570736575ULL ^ k0;
	__u64 v1 = 0x646f72616e646f6dULL ^ k1;
	__u64 v2 = 0x6c7967656e657261ULL ^ k0;
	__u64 v3 = 0x7465646279746573ULL ^ k1;
	__u64 b = (__u64)(n * 8) << 56;
	int i;

#ifdef __bpf__
#pragma unroll
#endif
	for (i = 0; i < n; i++) {
		v3 ^= m[i];
		SL_SIPROUND;
		SL_SIPROUND;
		v0 ^= m[i];
	}
	v3 ^= b;
	SL_SIPROUND;
	SL_SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SL_SIPROUND;
	SL_SIPROUND;
	SL_SIPROUND;
	SL_SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

#endif
