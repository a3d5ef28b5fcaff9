// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The Retry-After ladder (see gw_ladder.h). */
#include <math.h>
#include <string.h>

#include <sodium.h>

#include "gw_ladder.h"

void gw_ladder_set_levels(struct gw_ladder *l, const uint32_t *levels, int n, uint32_t decay_s)
{
	int i;

	if (n > GW_LADDER_LEVELS)
		n = GW_LADDER_LEVELS;
	for (i = 0; i < n; i++)
		l->levels[i] = levels[i] ? levels[i] : 1;
	if (n < 1) {
		l->levels[0] = 1;
		n = 1;
	}
	l->n_levels = n;
	l->decay_ns = (uint64_t)(decay_s ? decay_s : 60) * 1000000000ull;
}

void gw_ladder_init(struct gw_ladder *l, const uint32_t *levels, int n, uint32_t decay_s,
		    const uint8_t key[16])
{
	memset(l, 0, sizeof(*l));
	memcpy(l->hash_key, key, sizeof(l->hash_key));
	gw_ladder_set_levels(l, levels, n, decay_s);
}

static uint64_t prefix_key(const struct gw_ladder *l, const struct gw_addr *a)
{
	uint8_t in[10], out[crypto_shorthash_BYTES];
	uint64_t k;

	memset(in, 0, sizeof(in));
	in[0] = a->family;
	/* IPv4 /32, IPv6 /64. */
	memcpy(in + 1, a->addr, a->family == 4 ? 4 : 8);
	crypto_shorthash(out, in, sizeof(in), l->hash_key);
	memcpy(&k, out, sizeof(k));
	return k ? k : 1; /* 0 marks an empty way */
}

uint32_t gw_ladder_hit(struct gw_ladder *l, const struct gw_addr *a, uint64_t now,
		       uint32_t rnd, bool *early)
{
	uint64_t k = prefix_key(l, a);
	struct gw_ladder_entry *set = l->e[k % GW_LADDER_SETS], *e = NULL;
	double secs, jitter;
	uint32_t level;
	int w;

	for (w = 0; w < GW_LADDER_WAYS; w++)
		if (set[w].key == k) {
			e = &set[w];
			break;
		}
	if (!e) {
		/* Empty way, else the one shed longest ago. */
		e = &set[0];
		for (w = 0; w < GW_LADDER_WAYS; w++) {
			if (!set[w].key) {
				e = &set[w];
				break;
			}
			if (set[w].last_ns < e->last_ns)
				e = &set[w];
		}
		if (e->key)
			l->evictions++;
		memset(e, 0, sizeof(*e));
		e->key = k;
	}
	*early = e->streak && now < e->until_ns;
	if (e->streak && now > e->last_ns + l->decay_ns)
		e->streak = 0;
	e->streak += *early ? 2 : 1;
	if (e->streak > 1000)
		e->streak = 1000;
	level = e->streak > (uint32_t)l->n_levels ? (uint32_t)l->n_levels - 1 : e->streak - 1;
	/* +-20 %, uniform. */
	jitter = 0.8 + 0.4 * ((double)rnd / 4294967296.0);
	secs = floor((double)l->levels[level] * jitter + 0.5);
	if (secs < 1)
		secs = 1;
	e->last_ns = now;
	e->until_ns = now + (uint64_t)secs * 1000000000ull;
	return (uint32_t)secs;
}
