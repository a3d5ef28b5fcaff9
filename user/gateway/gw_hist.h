/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Latency histograms for queue wait and service time, kept apart because they have
 * opposite fixes (wait: admit less; service: hash cheaper or buy cores). Log-linear
 * buckets, four per power of two of microseconds: a percentile is within 19 % of the
 * truth, in a fixed 1 KiB, with O(1) recording.
 */
#ifndef SLUICE_GW_HIST_H
#define SLUICE_GW_HIST_H

#include <stdint.h>

#define GW_HIST_SUB 4
#define GW_HIST_BUCKETS (28 * GW_HIST_SUB) /* up to 2^28 us, ~4.5 minutes */

struct gw_hist {
	uint64_t n;
	uint64_t sum_us;
	uint64_t max_us;
	uint64_t b[GW_HIST_BUCKETS];
};

void gw_hist_add(struct gw_hist *h, uint64_t ns);
/* The @q quantile (0..1) in microseconds: the upper bound of its bucket; 0 when empty. */
uint64_t gw_hist_quantile_us(const struct gw_hist *h, double q);
/* Bucket index and its upper bound, exposed for the tests. */
int gw_hist_bucket(uint64_t us);
uint64_t gw_hist_upper_us(int bucket);

#endif
