// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Log-linear latency histograms (see gw_hist.h). */
#include "gw_hist.h"

/* Values below 2^2 us get one bucket each; above, the top bit picks the power of two and
 * the next two bits the quarter within it. */
int gw_hist_bucket(uint64_t us)
{
	int msb, b;

	if (us < GW_HIST_SUB)
		return (int)us;
	msb = 63 - __builtin_clzll(us);
	b = msb * GW_HIST_SUB + (int)((us >> (msb - 2)) & (GW_HIST_SUB - 1)) - 4;
	return b < GW_HIST_BUCKETS ? b : GW_HIST_BUCKETS - 1;
}

uint64_t gw_hist_upper_us(int b)
{
	int msb, sub;

	if (b < GW_HIST_SUB)
		return (uint64_t)b;
	b += 4;
	msb = b / GW_HIST_SUB;
	sub = b % GW_HIST_SUB;
	return ((uint64_t)(GW_HIST_SUB + sub + 1) << (msb - 2)) - 1;
}

void gw_hist_add(struct gw_hist *h, uint64_t ns)
{
	uint64_t us = ns / 1000;

	h->b[gw_hist_bucket(us)]++;
	h->n++;
	h->sum_us += us;
	if (us > h->max_us)
		h->max_us = us;
}

uint64_t gw_hist_quantile_us(const struct gw_hist *h, double q)
{
	uint64_t rank, seen = 0;
	int i;

	if (!h->n)
		return 0;
	if (q < 0)
		q = 0;
	if (q > 1)
		q = 1;
	/* The smallest value with at least q of the samples at or below it. */
	rank = (uint64_t)(q * (double)h->n + 0.999999);
	if (rank < 1)
		rank = 1;
	for (i = 0; i < GW_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			uint64_t up = gw_hist_upper_us(i);

			return up < h->max_us ? up : h->max_us;
		}
	}
	return h->max_us;
}
