/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Retry-After for the gateway's 429s, escalating per client prefix like the edge's: the
 * levels of edge.retry_after (1, 5, 30, 120 s by default) by how many 429s the prefix has
 * had in a row, reset after streak_decay seconds of quiet, each jittered by +-20 % so a
 * crowd told to come back does not come back at once. A client that returns before its
 * Retry-After has passed climbs two levels instead of one.
 *
 * Keys are IPv4 /32 and IPv6 /64 (never longer: every bit past /64 is the host's to pick).
 * The table is fixed size and 4-way set associative, keyed by a keyed hash, so its memory
 * is bounded and nobody can aim collisions at one set; a full set forgets its least
 * recently shed entry, which only costs that client its escalation.
 */
#ifndef SLUICE_GW_LADDER_H
#define SLUICE_GW_LADDER_H

#include <stdbool.h>
#include <stdint.h>

#include "gw_addr.h"

#define GW_LADDER_SETS 2048
#define GW_LADDER_WAYS 4
#define GW_LADDER_LEVELS 8

struct gw_ladder_entry {
	uint64_t key;       /* keyed hash of the prefix; 0 = empty */
	uint64_t last_ns;   /* last 429 */
	uint64_t until_ns;  /* its Retry-After ends */
	uint32_t streak;
};

struct gw_ladder {
	uint8_t hash_key[16];
	uint32_t levels[GW_LADDER_LEVELS];
	int n_levels;
	uint64_t decay_ns;
	uint64_t evictions;
	struct gw_ladder_entry e[GW_LADDER_SETS][GW_LADDER_WAYS];
};

/* Seconds by level (ascending), quiet time before a streak resets, and a 16-byte key. */
void gw_ladder_init(struct gw_ladder *l, const uint32_t *levels, int n, uint32_t decay_s,
		    const uint8_t key[16]);
void gw_ladder_set_levels(struct gw_ladder *l, const uint32_t *levels, int n,
			  uint32_t decay_s);

/*
 * Record a 429 for @a at @now; return the Retry-After in whole seconds (>= 1). @rnd is a
 * uniform 32-bit random number (injected so tests are exact). *@early says the client
 * came back before its previous Retry-After had passed.
 */
uint32_t gw_ladder_hit(struct gw_ladder *l, const struct gw_addr *a, uint64_t now,
		       uint32_t rnd, bool *early);

#endif
