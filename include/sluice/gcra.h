/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * GCRA (the generic cell rate algorithm) in cost units: the rate math of every bucket in
 * sluice. A bucket is one number, its theoretical arrival time (TAT); a request of cost c is
 * allowed when  max(TAT, now) + c*T - now <= tau,  and then TAT moves to that value.
 *   T   = emission interval: ns per cost unit (1e9 / rate)
 *   tau = tolerance: burst * T, how far ahead of now the TAT may run
 * A full bucket is TAT <= now; an empty one is TAT = now + tau.
 *
 * This header compiles for BPF (bpf/) and for the host (user/, tests/unit/), so one
 * implementation is tested by cmocka and by BPF_PROG_TEST_RUN. No floating point, no loops,
 * no division on the datapath side.
 */
#ifndef SLUICE_GCRA_H
#define SLUICE_GCRA_H

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define SL_U64_MAX (~(__u64)0)

/* a * b, saturating at U64_MAX: a rate of 0.001/s times a large cost must not wrap. */
static __always_inline __u64 sl_mul_sat(__u64 a, __u64 b)
{
	__u64 hi, lo, t;

	/* Both factors below 2^32 cannot overflow: the common case is one multiply. */
	if (!((a | b) >> 32))
		return a * b;
	if ((a >> 32) && (b >> 32))
		return SL_U64_MAX;
	if (a >> 32) {
		t = a;
		a = b;
		b = t;
	}
	/* a < 2^32 <= b: split b into 32-bit halves. A division here would make clang emit a
	 * 128-bit overflow check (__multi3), which the BPF backend cannot call. */
	hi = a * (b >> 32);
	if (hi >> 32)
		return SL_U64_MAX;
	lo = a * (b & 0xffffffffULL);
	t = (hi << 32) + lo;
	return t < lo ? SL_U64_MAX : t;
}

static __always_inline __u64 sl_add_sat(__u64 a, __u64 b)
{
	__u64 r = a + b;

	return r < a ? SL_U64_MAX : r;
}

/*
 * Decide a request of @cost units at time @now against a bucket whose TAT is @tat.
 * Returns 1 when allowed, 0 when not. Either way *@new_tat is the TAT to store: on an allowed
 * request the charged one; on a denied request the old one (a denial spends nothing), unless
 * the guard below moved it.
 *
 * Time going backwards (a clock step, or CPUs whose clocks disagree by a little) can leave
 * TAT - now above tau, which no allowed request can produce. The TAT is then clamped to
 * now + tau: the bucket reads as exactly empty instead of empty for the length of the step.
 * The clamp is reported through *@new_tat even on denial so that callers persist it.
 */
static __always_inline int sl_gcra_charge(__u64 tat, __u64 now, __u64 cost,
					  __u64 emission_ns, __u64 tolerance_ns, __u64 *new_tat)
{
	__u64 limit = sl_add_sat(now, tolerance_ns);
	__u64 base, next;

	if (tat > limit)
		tat = limit;
	*new_tat = tat;
	base = tat > now ? tat : now;
	next = sl_add_sat(base, sl_mul_sat(cost, emission_ns));
	if (next > limit || next == SL_U64_MAX)
		return 0;
	*new_tat = next;
	return 1;
}

/* TAT for a key seen for the first time: @credit_permille of the burst still available. */
static __always_inline __u64 sl_gcra_initial_tat(__u64 now, __u64 tolerance_ns,
						 __u32 credit_permille)
{
	__u64 spent;

	if (credit_permille >= 1000)
		return now;
	/* tolerance / 1000 * (1000 - credit): divide first so the product cannot overflow. */
	spent = sl_mul_sat(tolerance_ns / 1000, 1000 - credit_permille);
	return sl_add_sat(now, spent);
}

#ifndef __bpf__
/* Host-only helpers: conversions from the config's floating-point rates, and read-outs. */

/* ns per unit for @rate units/s; 0 for a rate that is not positive. */
static inline __u64 sl_gcra_emission(double rate)
{
	double t;

	if (!(rate > 0.0))
		return 0;
	t = 1e9 / rate;
	if (t < 1.0)
		return 1;
	if (t >= 1.8e19)
		return SL_U64_MAX;
	return (__u64)(t + 0.5);
}

static inline __u64 sl_gcra_tolerance(double burst, __u64 emission_ns)
{
	double t = burst * (double)emission_ns;

	if (!(t > 0.0))
		return 0;
	if (t >= 1.8e19)
		return SL_U64_MAX;
	return (__u64)(t + 0.5);
}

/* Cost units a bucket could admit right now (its remaining burst), as a real number. */
static inline double sl_gcra_available(__u64 tat, __u64 now, __u64 emission_ns,
				       __u64 tolerance_ns)
{
	__u64 limit = sl_add_sat(now, tolerance_ns);

	if (!emission_ns)
		return 0.0;
	if (tat < now)
		tat = now;
	if (tat >= limit)
		return 0.0;
	return (double)(limit - tat) / (double)emission_ns;
}
#endif

#endif /* SLUICE_GCRA_H */
