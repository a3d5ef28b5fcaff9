/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Where each account usually signs in from: its usual sources. A source becomes usual for
 * an account when the account signs in from it (a right password; a second factor
 * completed there makes it usual at the second level too), and stays usual for
 * GW_USUAL_TTL_S after the last such sign-in. Nothing else makes a source usual, so an
 * attacker who does not hold the account's password cannot make his own source usual for
 * it, and cannot see or spend what the account has from its usual sources.
 *
 * What the gateway decides with it (docs/endpoints.md, "Escalations aimed at a victim"):
 * the account-wide escalations of the stream job do not apply from a usual allocation, the
 * per-allocation ones not from a usual key prefix, and the per-account budgets of resets
 * and second factors are split by where the request comes from: one budget per usual
 * source, one shared by everywhere else.
 *
 * A source is an address masked to a prefix length: callers record both the key prefix
 * (/32, /64) and the allocation (/24, /48). The table is fixed size, 16-way set associative
 * under a keyed hash of (tenant, account, prefix), so nobody can aim entries at a set; a
 * full set forgets the way signed in from longest ago (16 ways at two entries per 16 slots
 * overflow for about one set in 10^5). Each node keeps its own.
 */
#ifndef SLUICE_GW_USUAL_H
#define SLUICE_GW_USUAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_addr.h"

#define GW_USUAL_WAYS 16
#define GW_USUAL_TTL_S (30u * 86400u) /* a source stays usual 30 days after a sign-in */

enum gw_usual_level {
	GW_USUAL_PASSWORD = 0, /* the account signed in from it */
	GW_USUAL_MFA,          /* and completed a second factor there */
	GW_USUAL__N,
};

struct gw_usual_entry {
	uint64_t tag;                 /* keyed hash of (tenant, account, prefix); 0: empty */
	uint32_t last_s[GW_USUAL__N]; /* when, by level (seconds on the caller's clock); 0 never */
};

struct gw_usual {
	uint8_t key[16];
	uint32_t sets;                /* a power of two */
	uint32_t ttl_s;
	uint64_t recorded, evictions;
	struct gw_usual_entry *e;     /* sets x GW_USUAL_WAYS */
};

/* A table of at least @entries entries (rounded up to a power of two of sets), forgetting
 * after @ttl_s, keyed by @key. 0, or -ENOMEM. */
int gw_usual_init(struct gw_usual *u, uint32_t entries, uint32_t ttl_s, const uint8_t key[16]);
void gw_usual_free(struct gw_usual *u);

/* (@tenant, @account) signed in at @level from @a masked to @plen, at @now_s (> 0). A
 * second factor also counts as a password sign-in. */
void gw_usual_record(struct gw_usual *u, const char *tenant, const char *account, size_t alen,
		     const struct gw_addr *a, unsigned plen, int level, uint32_t now_s);

/* Has (@tenant, @account) signed in at @level (or above) from @a masked to @plen within the
 * last ttl_s? */
bool gw_usual_is(const struct gw_usual *u, const char *tenant, const char *account,
		 size_t alen, const struct gw_addr *a, unsigned plen, int level, uint32_t now_s);

#endif
