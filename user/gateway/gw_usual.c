// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* An account's usual sources (see gw_usual.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "gw_usual.h"

int gw_usual_init(struct gw_usual *u, uint32_t entries, uint32_t ttl_s, const uint8_t key[16])
{
	uint32_t sets = 1;

	memset(u, 0, sizeof(*u));
	while ((uint64_t)sets * GW_USUAL_WAYS < entries && sets < (1u << 28))
		sets <<= 1;
	u->e = calloc((size_t)sets * GW_USUAL_WAYS, sizeof(*u->e));
	if (!u->e)
		return -ENOMEM;
	u->sets = sets;
	u->ttl_s = ttl_s ? ttl_s : GW_USUAL_TTL_S;
	memcpy(u->key, key, sizeof(u->key));
	return 0;
}

void gw_usual_free(struct gw_usual *u)
{
	if (!u)
		return;
	free(u->e);
	sodium_memzero(u, sizeof(*u));
}

/* The tag of (tenant, account, @a masked to @plen): never 0. */
static uint64_t tag_of(const struct gw_usual *u, const char *tenant, const char *account,
		       size_t alen, const struct gw_addr *a, unsigned plen)
{
	crypto_generichash_state st;
	uint8_t pfx[18] = { 0 }, out[16];
	unsigned i, n = a->family == 6 ? 16 : 4, max = a->family == 6 ? 128 : 32;
	uint64_t t;

	if (plen > max)
		plen = max;
	pfx[0] = a->family;
	pfx[1] = (uint8_t)plen;
	for (i = 0; i < n; i++) {
		unsigned bits = plen > i * 8 ? plen - i * 8 : 0;

		pfx[2 + i] = bits >= 8 ? a->addr[i] : (uint8_t)(a->addr[i] & (0xff00u >> bits));
	}
	crypto_generichash_init(&st, u->key, sizeof(u->key), sizeof(out));
	crypto_generichash_update(&st, (const unsigned char *)tenant, strlen(tenant) + 1);
	crypto_generichash_update(&st, (const unsigned char *)account, alen);
	crypto_generichash_update(&st, (const unsigned char *)"", 1);
	crypto_generichash_update(&st, pfx, sizeof(pfx));
	crypto_generichash_final(&st, out, sizeof(out));
	memcpy(&t, out, sizeof(t));
	return t ? t : 1;
}

static uint32_t newest(const struct gw_usual_entry *e)
{
	return e->last_s[GW_USUAL_PASSWORD] > e->last_s[GW_USUAL_MFA] ?
	       e->last_s[GW_USUAL_PASSWORD] : e->last_s[GW_USUAL_MFA];
}

void gw_usual_record(struct gw_usual *u, const char *tenant, const char *account, size_t alen,
		     const struct gw_addr *a, unsigned plen, int level, uint32_t now_s)
{
	uint64_t t;
	struct gw_usual_entry *set, *e = NULL;
	int w, l;

	if (!u || !u->e || !a->family || level < 0 || level >= GW_USUAL__N || !now_s)
		return;
	t = tag_of(u, tenant, account, alen, a, plen);
	set = &u->e[(size_t)(t & (u->sets - 1)) * GW_USUAL_WAYS];
	for (w = 0; w < GW_USUAL_WAYS && !e; w++)
		if (set[w].tag == t)
			e = &set[w];
	if (!e) {
		/* An empty way, else the one signed in from longest ago. */
		e = &set[0];
		for (w = 0; w < GW_USUAL_WAYS; w++) {
			if (!set[w].tag) {
				e = &set[w];
				break;
			}
			if (newest(&set[w]) < newest(e))
				e = &set[w];
		}
		if (e->tag)
			u->evictions++;
		memset(e, 0, sizeof(*e));
		e->tag = t;
	}
	/* A level is also every level below it. */
	for (l = 0; l <= level; l++)
		e->last_s[l] = now_s;
	u->recorded++;
}

bool gw_usual_is(const struct gw_usual *u, const char *tenant, const char *account,
		 size_t alen, const struct gw_addr *a, unsigned plen, int level, uint32_t now_s)
{
	const struct gw_usual_entry *set;
	uint64_t t;
	int w;

	if (!u || !u->e || !a->family || level < 0 || level >= GW_USUAL__N)
		return false;
	t = tag_of(u, tenant, account, alen, a, plen);
	set = &u->e[(size_t)(t & (u->sets - 1)) * GW_USUAL_WAYS];
	for (w = 0; w < GW_USUAL_WAYS; w++) {
		uint32_t last;

		if (set[w].tag != t)
			continue;
		last = set[w].last_s[level];
		return last && now_s >= last && now_s - last < u->ttl_s;
	}
	return false;
}
