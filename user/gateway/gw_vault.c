// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Codes, links and refresh tokens by keyed hash (see gw_vault.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "gw_vault.h"

_Static_assert((GW_VAULT_SLOTS & (GW_VAULT_SLOTS - 1)) == 0, "a power of two");

struct gw_vault *gw_vault_new(const uint8_t key[32])
{
	struct gw_vault *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	/* Its own key, derived: the table's hashes never equal the counters' or a token's. */
	crypto_generichash(v->key, sizeof(v->key), (const uint8_t *)"sluice vault", 12, key, 32);
	return v;
}

void gw_vault_free(struct gw_vault *v)
{
	if (!v)
		return;
	sodium_memzero(v, sizeof(*v));
	free(v);
}

static void hash_parts(const struct gw_vault *v, uint8_t *out, size_t outlen, int kind,
		       uint16_t tenant, const char *a, const char *b)
{
	crypto_generichash_state st;
	uint8_t hdr[3] = { (uint8_t)kind, (uint8_t)(tenant >> 8), (uint8_t)tenant };

	crypto_generichash_init(&st, v->key, sizeof(v->key), outlen);
	crypto_generichash_update(&st, hdr, sizeof(hdr));
	/* Lengths and NULs keep ("ab","c") apart from ("a","bc"). */
	crypto_generichash_update(&st, (const uint8_t *)a, strlen(a) + 1);
	if (b)
		crypto_generichash_update(&st, (const uint8_t *)b, strlen(b) + 1);
	crypto_generichash_final(&st, out, outlen);
}

void gw_vault_id_name(const struct gw_vault *v, int kind, uint16_t tenant, const char *name,
		      uint8_t id[16])
{
	hash_parts(v, id, 16, kind, tenant, name, NULL);
}

void gw_vault_id_secret(const struct gw_vault *v, int kind, const char *secret,
			uint8_t id[16])
{
	hash_parts(v, id, 16, kind, 0xffff, secret, NULL);
}

static uint32_t slot_of(const uint8_t id[16])
{
	uint32_t h;

	memcpy(&h, id, sizeof(h));
	return h & (GW_VAULT_SLOTS - 1);
}

struct gw_vault_entry *gw_vault_get(struct gw_vault *v, const uint8_t id[16], uint64_t now_s)
{
	uint32_t s = slot_of(id), i;

	for (i = 0; i < GW_VAULT_PROBE; i++) {
		struct gw_vault_entry *e = &v->e[(s + i) & (GW_VAULT_SLOTS - 1)];

		if (e->exp_s && e->exp_s > now_s && !memcmp(e->id, id, 16))
			return e;
	}
	return NULL;
}

struct gw_vault_entry *gw_vault_put(struct gw_vault *v, const uint8_t id[16], uint64_t now_s)
{
	uint32_t s = slot_of(id), i;
	struct gw_vault_entry *free_e = NULL, *oldest = NULL;

	for (i = 0; i < GW_VAULT_PROBE; i++) {
		struct gw_vault_entry *e = &v->e[(s + i) & (GW_VAULT_SLOTS - 1)];

		if (e->exp_s && !memcmp(e->id, id, 16)) {
			free_e = e;
			break;
		}
		if (!e->exp_s || e->exp_s <= now_s) {
			if (!free_e)
				free_e = e;
			continue;
		}
		if (!oldest || e->exp_s < oldest->exp_s)
			oldest = e;
	}
	if (!free_e) {
		free_e = oldest;
		v->evicted++;
	}
	memset(free_e, 0, sizeof(*free_e));
	memcpy(free_e->id, id, 16);
	return free_e;
}

void gw_vault_del(struct gw_vault_entry *e)
{
	sodium_memzero(e, sizeof(*e));
}

static void code_hash(const struct gw_vault *v, uint16_t tenant, const char *name,
		      const char *code, uint8_t out[32])
{
	hash_parts(v, out, 32, GW_V_OTP, tenant, name, code);
}

void gw_vault_new_code(const struct gw_vault *v, uint16_t tenant, const char *name,
		       char out[7], uint8_t check[32])
{
	snprintf(out, 7, "%06u", (unsigned)randombytes_uniform(1000000));
	code_hash(v, tenant, name, out, check);
}

bool gw_vault_code_hash(const struct gw_vault *v, uint16_t tenant, const char *name,
			const char *code, size_t len, uint8_t out[32])
{
	char c[7];
	size_t i;

	/* The shape is public (six digits); only the value is compared, by its hash. */
	if (len != 6)
		return false;
	for (i = 0; i < 6; i++)
		if (code[i] < '0' || code[i] > '9')
			return false;
	memcpy(c, code, 6);
	c[6] = '\0';
	code_hash(v, tenant, name, c, out);
	sodium_memzero(c, sizeof(c));
	return true;
}

bool gw_vault_code_ok(const struct gw_vault *v, const struct gw_vault_entry *e,
		      const char *code, size_t len)
{
	uint8_t h[32];
	bool ok;

	if (!gw_vault_code_hash(v, e->tenant, e->name, code, len, h))
		return false;
	ok = !sodium_memcmp(h, e->check, sizeof(h));
	sodium_memzero(h, sizeof(h));
	return ok;
}

void gw_vault_new_secret(char out[GW_SECRET_TEXT])
{
	uint8_t b[GW_SECRET_BYTES];

	randombytes_buf(b, sizeof(b));
	sodium_bin2base64(out, GW_SECRET_TEXT, b, sizeof(b),
			  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	sodium_memzero(b, sizeof(b));
}

unsigned gw_vault_live(const struct gw_vault *v, uint64_t now_s)
{
	unsigned i, n = 0;

	for (i = 0; i < GW_VAULT_SLOTS; i++)
		n += v->e[i].exp_s > now_s;
	return n;
}

/* ---- revocations ------------------------------------------------------------------------ */

static void revoke_id(const struct gw_vault *v, const char *tenant, const char *account,
		      uint8_t id[16])
{
	/* By tenant name: a reload that reorders the tenants keeps every revocation. */
	hash_parts(v, id, 16, GW_V_REVOKED, 0xfffe, tenant, account);
}

void gw_vault_id_revoke(const struct gw_vault *v, const char *tenant, const char *account,
			uint8_t id[16])
{
	revoke_id(v, tenant, account, id);
}

void gw_vault_note_ttl(struct gw_vault *v, uint32_t ttl_s)
{
	if (ttl_s > v->ttl_max_s)
		v->ttl_max_s = ttl_s;
}

void gw_vault_revoke(struct gw_vault *v, const char *tenant, const char *account,
		     uint64_t now_ns)
{
	uint8_t id[16];
	uint64_t now_s = now_ns / 1000000000ull;
	uint32_t s, i;
	struct gw_revocation *slot = NULL, *oldest = NULL;

	revoke_id(v, tenant, account, id);
	s = slot_of(id) & (GW_REVOKE_SLOTS - 1);
	for (i = 0; i < GW_REVOKE_PROBE; i++) {
		struct gw_revocation *e = &v->rv[(s + i) & (GW_REVOKE_SLOTS - 1)];

		if (e->exp_s > now_s && !memcmp(e->id, id, 16)) {
			slot = e;
			break;
		}
		if (e->exp_s <= now_s) {
			if (!slot)
				slot = e;
			continue;
		}
		if (!oldest || e->since_ns < oldest->since_ns)
			oldest = e;
	}
	if (!slot) {
		/* Forgetting a revocation would bring its tokens back: what it revoked, every
		 * account's tokens of that age are now. */
		slot = oldest;
		if (slot->since_ns > v->rv_floor_ns)
			v->rv_floor_ns = slot->since_ns;
		v->rv_evicted++;
	}
	memcpy(slot->id, id, 16);
	/* Strictly after every token issued so far; one issued from now on is issued at it or
	 * later (gw_vault_valid_since). */
	slot->since_ns = now_ns + 1;
	/* Kept until the last token it revokes has expired by itself. */
	slot->exp_s = now_s + v->ttl_max_s + 1;
}

uint64_t gw_vault_valid_since(const struct gw_vault *v, const char *tenant,
			      const char *account, uint64_t now_s)
{
	uint8_t id[16];
	uint32_t s, i;

	revoke_id(v, tenant, account, id);
	s = slot_of(id) & (GW_REVOKE_SLOTS - 1);
	for (i = 0; i < GW_REVOKE_PROBE; i++) {
		const struct gw_revocation *e = &v->rv[(s + i) & (GW_REVOKE_SLOTS - 1)];

		if (e->exp_s > now_s && !memcmp(e->id, id, 16))
			return e->since_ns > v->rv_floor_ns ? e->since_ns : v->rv_floor_ns;
	}
	return v->rv_floor_ns;
}
