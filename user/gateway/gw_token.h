/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Session tokens: "v1.<payload>.<mac>", both parts base64url without padding. The payload
 * holds the expiry, the issue time, a random nonce, the tenant and the account; the MAC is
 * HMAC-SHA-512-256 (libsodium crypto_auth) over "v1." and the payload bytes, under a 32-byte
 * key. Checking a token is one MAC and a clock compare: cost class "1 unit".
 *
 * The key comes from gateway.session_key (64 hex characters in a file), so every node of a
 * fleet and every restart accepts the same tokens; without one, a random key is made at
 * start and tokens die with the process.
 */
#ifndef SLUICE_GW_TOKEN_H
#define SLUICE_GW_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "gw_body.h"

#define GW_TOKEN_KEY_BYTES 32
#define GW_TOKEN_MAX 512 /* characters of a token we will look at */

struct gw_token_claims {
	char tenant[SL_TENANT_NAME_LEN];
	char account[GW_USER_MAX + 1];
	uint64_t iat, exp; /* unix seconds */
};

/* Read a key file (64 hex characters, surrounding whitespace allowed). 0 or -errno with a
 * reason in @err. */
int gw_token_key_load(const char *path, uint8_t key[GW_TOKEN_KEY_BYTES], char *err,
		      size_t errlen);

/* Issue a token for @tenant/@account valid for @ttl_s from @now_s into @out. Returns its
 * length, or -ENOSPC. */
int gw_token_issue(const uint8_t key[GW_TOKEN_KEY_BYTES], const char *tenant,
		   const char *account, uint64_t now_s, uint32_t ttl_s, char *out, size_t n);

/*
 * Check @tok (length @len): MAC first (constant time), then the expiry against @now_s.
 * Returns 0 with the claims filled, -EBADMSG (malformed or forged) or -ETIMEDOUT (expired).
 */
int gw_token_check(const uint8_t key[GW_TOKEN_KEY_BYTES], const char *tok, size_t len,
		   uint64_t now_s, struct gw_token_claims *c);

#endif
