// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* OAuth clients and token keys (see gw_client.h). */
#include <string.h>

#include <sodium.h>

#include "gw_client.h"

void gw_token_subkey(const uint8_t key[GW_TOKEN_KEY_BYTES], int kind,
		     uint8_t out[GW_TOKEN_KEY_BYTES])
{
	static const char *const ctx[GW_TOK__N] = { NULL, "sluice mfa tokens",
		"sluice client tokens" };

	/* Password tokens keep the session key itself: tokens issued before this existed
	 * still validate. */
	if (kind <= GW_TOK_PASSWORD || kind >= GW_TOK__N) {
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
