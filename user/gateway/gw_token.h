/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Session tokens: "v2.<payload>.<mac>", both parts base64url without padding. The payload
 * holds the expiry (s), the issue time (ns), a random nonce, a stamp, the tenant and the
 * account; the MAC is HMAC-SHA-512-256 (libsodium crypto_auth) over "v2." and the payload
 * bytes, under a 32-byte key. Checking a token is one MAC and a clock compare: cost class
 * "1 unit". The stamp is what the issuer bound the token to (a person's tokens: their
 * credential, so a password change ends them; gw_ep_token.c) and the issue time is what a
 * revocation compares against (a password reset ends every token issued before it).
 * "v1." tokens (expiry, issue time in s, nonce, tenant, account; no stamp) still check,
 * with stamp 0: the gateway takes them only where nothing is bound (clients' tokens).
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
	uint64_t iat_ns;   /* the issue time in ns (v1: iat in ns) */
	uint64_t stamp;    /* what it is bound to; 0: nothing (every v1 token) */
	uint8_t version;   /* 1 or 2 */
};

/* Read a key file (64 hex characters, surrounding whitespace allowed). 0 or -errno with a
 * reason in @err. */
int gw_token_key_load(const char *path, uint8_t key[GW_TOKEN_KEY_BYTES], char *err,
		      size_t errlen);

/* Issue a v2 token for @tenant/@account, issued at @iat_ns (unix ns), valid for @ttl_s,
 * bound to @stamp, into @out. Returns its length, -EINVAL or -ENOSPC. */
int gw_token_issue(const uint8_t key[GW_TOKEN_KEY_BYTES], const char *tenant,
		   const char *account, uint64_t iat_ns, uint32_t ttl_s, uint64_t stamp,
		   char *out, size_t n);

/*
 * Check @tok (length @len): MAC first (constant time), then the expiry against @now_s.
 * Returns 0 with the claims filled, -EBADMSG (malformed or forged) or -ETIMEDOUT (expired).
 */
int gw_token_check(const uint8_t key[GW_TOKEN_KEY_BYTES], const char *tok, size_t len,
		   uint64_t now_s, struct gw_token_claims *c);

#endif
