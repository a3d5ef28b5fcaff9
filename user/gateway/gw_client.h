/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * OAuth clients of POST /token (config gateway.clients): secret checks and the keys the
 * tokens of each kind are signed with.
 *
 * Client secrets are generated, not chosen, so they need no stretching: the config holds
 * their BLAKE2b-256 and a check is one hash and a constant-time compare. An unknown
 * client_id is checked against a dummy so it takes the same time and gives the same
 * answer as a wrong secret.
 *
 * Tokens of different kinds are signed with different keys derived from the session key,
 * so a client's token can never pass for a person's, and a token that passed a second
 * factor says so by the key that verifies it (gw_token.h holds the format).
 */
#ifndef SLUICE_GW_CLIENT_H
#define SLUICE_GW_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "gw_token.h"

#define GW_SECRET_MAX 256 /* bytes of a client secret we will look at */

enum gw_token_kind {
	GW_TOK_PASSWORD = 0, /* /login, a magic link */
	GW_TOK_MFA,          /* /mfa/verify: password and a one-time code */
	GW_TOK_CLIENT,       /* /token: an OAuth client */
	GW_TOK__N,           /* the access tokens end here: a bearer is one of those */
	GW_TOK_REFRESH = GW_TOK__N, /* /token's refresh tokens: never a bearer */
	GW_TOK_KEYS,
};

/* A refresh token's account field: "CLIENT_ID,FAMILY,GENERATION" (client ids have no
 * commas). The vault keeps each client's one live chain: its family and generation. */
#define GW_REFRESH_NAME_MAX (SL_CLIENT_ID_LEN + 32)
int gw_refresh_name(char *out, size_t n, const char *client, uint64_t family, uint32_t gen);
/* Parse it back. 0 or -EINVAL. */
int gw_refresh_parse(const char *name, char client[SL_CLIENT_ID_LEN], uint64_t *family,
		     uint32_t *gen);

/* The key tokens of @kind are signed with, from the session key. */
void gw_token_subkey(const uint8_t key[GW_TOKEN_KEY_BYTES], int kind,
		     uint8_t out[GW_TOKEN_KEY_BYTES]);

/* BLAKE2b-256 of a secret (what gateway.clients[].secret_hash holds). */
void gw_client_secret_hash(const char *secret, size_t len, uint8_t out[32]);

/* Is @secret right for the client @id of @tenant? The client's index in *@idx (-1 when
 * there is no such client). Same work whether the client exists or not. */
bool gw_client_auth(const struct sl_config *c, int tenant, const char *id, const char *secret,
		    size_t len, int *idx);

#endif
