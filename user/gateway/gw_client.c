// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* OAuth clients and token keys (see gw_client.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "gw_client.h"

void gw_token_subkey(const uint8_t key[GW_TOKEN_KEY_BYTES], int kind,
		     uint8_t out[GW_TOKEN_KEY_BYTES])
{
	static const char *const ctx[GW_TOK_KEYS] = { NULL, "sluice mfa tokens",
		"sluice client tokens", "sluice refresh tokens" };

	/* Password tokens keep the session key itself: tokens issued before this existed
	 * still validate. */
	if (kind <= GW_TOK_PASSWORD || kind >= GW_TOK_KEYS) {
		memcpy(out, key, GW_TOKEN_KEY_BYTES);
		return;
	}
	crypto_generichash(out, GW_TOKEN_KEY_BYTES, (const uint8_t *)ctx[kind], strlen(ctx[kind]),
			   key, GW_TOKEN_KEY_BYTES);
}

void gw_client_secret_hash(const char *secret, size_t len, uint8_t out[32])
{
	crypto_generichash(out, 32, (const uint8_t *)secret, len, NULL, 0);
}

bool gw_client_auth(const struct sl_config *c, int tenant, const char *id, const char *secret,
		    size_t len, int *idx)
{
	static const uint8_t dummy[32] = { 0 };
	uint8_t h[32];
	int i = sl_config_client(c, tenant, id);
	bool ok;

	*idx = i;
	gw_client_secret_hash(secret, len, h);
	ok = !sodium_memcmp(h, i >= 0 ? c->clients[i].secret_hash : dummy, sizeof(h));
	sodium_memzero(h, sizeof(h));
	return ok && i >= 0;
}

int gw_refresh_name(char *out, size_t n, const char *client, uint64_t family, uint32_t gen)
{
	int w = snprintf(out, n, "%s,%016" PRIx64 ",%" PRIu32, client, family, gen);

	return w < 0 || (size_t)w >= n ? -ENOSPC : 0;
}

int gw_refresh_parse(const char *name, char client[SL_CLIENT_ID_LEN], uint64_t *family,
		     uint32_t *gen)
{
	const char *c1 = strchr(name, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
	char *end;
	unsigned long long f, g;

	if (!c1 || !c2 || c1 == name || (size_t)(c1 - name) >= SL_CLIENT_ID_LEN ||
	    c2 - c1 != 17)
		return -EINVAL;
	memcpy(client, name, (size_t)(c1 - name));
	client[c1 - name] = '\0';
	errno = 0;
	f = strtoull(c1 + 1, &end, 16);
	if (end != c2 || errno)
		return -EINVAL;
	g = strtoull(c2 + 1, &end, 10);
	if (*end || errno || c2[1] < '0' || c2[1] > '9' || g > UINT32_MAX)
		return -EINVAL;
	*family = f;
	*gen = (uint32_t)g;
	return 0;
}
