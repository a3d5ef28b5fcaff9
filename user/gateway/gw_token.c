// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Signed, expiring session tokens (see gw_token.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "gw_token.h"

#define PREFIX "v1."
#define VARIANT sodium_base64_VARIANT_URLSAFE_NO_PADDING
/* exp(8) iat(8) nonce(8) tenant_len(1) tenant account_len(1) account */
#define PAYLOAD_MAX (8 + 8 + 8 + 1 + SL_TENANT_NAME_LEN + 1 + GW_USER_MAX)

_Static_assert(GW_TOKEN_KEY_BYTES == crypto_auth_KEYBYTES, "crypto_auth key size");

int gw_token_key_load(const char *path, uint8_t key[GW_TOKEN_KEY_BYTES], char *err,
		      size_t errlen)
{
	char buf[160];
	size_t n, bin_len = 0;
	const char *end;
	FILE *f = fopen(path, "r");
	int ret = 0;

	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (sodium_hex2bin(key, GW_TOKEN_KEY_BYTES, buf, n, " \t\r\n", &bin_len, &end) ||
	    bin_len != GW_TOKEN_KEY_BYTES || strspn(end, " \t\r\n") != strlen(end)) {
		snprintf(err, errlen, "%s: expected 64 hex characters (a 32-byte key)", path);
		sodium_memzero(buf, sizeof(buf));
		return -EINVAL;
	}
	sodium_memzero(buf, sizeof(buf));
	return 0;
}

static void put_u64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void mac(const uint8_t key[GW_TOKEN_KEY_BYTES], const uint8_t *payload, size_t n,
		uint8_t out[crypto_auth_BYTES])
{
	crypto_auth_hmacsha512256_state st;

	/* The version string is part of what is signed: a v2 token can never be replayed as
	 * a v1 one with the same bytes. */
	crypto_auth_hmacsha512256_init(&st, key, GW_TOKEN_KEY_BYTES);
	crypto_auth_hmacsha512256_update(&st, (const uint8_t *)PREFIX, strlen(PREFIX));
	crypto_auth_hmacsha512256_update(&st, payload, n);
	crypto_auth_hmacsha512256_final(&st, out);
}

int gw_token_issue(const uint8_t key[GW_TOKEN_KEY_BYTES], const char *tenant,
		   const char *account, uint64_t now_s, uint32_t ttl_s, char *out, size_t n)
{
	uint8_t p[PAYLOAD_MAX], m[crypto_auth_BYTES];
	size_t tl = strlen(tenant), al = strlen(account), len = 0, need, b1, b2;

	if (tl >= SL_TENANT_NAME_LEN || al > GW_USER_MAX)
		return -EINVAL;
	put_u64(p, now_s + ttl_s);
	put_u64(p + 8, now_s);
	randombytes_buf(p + 16, 8);
	len = 24;
	p[len++] = (uint8_t)tl;
	memcpy(p + len, tenant, tl);
	len += tl;
	p[len++] = (uint8_t)al;
	memcpy(p + len, account, al);
	len += al;
	mac(key, p, len, m);
	b1 = sodium_base64_ENCODED_LEN(len, VARIANT);
	b2 = sodium_base64_ENCODED_LEN(sizeof(m), VARIANT);
	/* The encoded lengths include a NUL each; one of them becomes the '.'. */
	need = strlen(PREFIX) + b1 + b2;
	if (need > n)
		return -ENOSPC;
	memcpy(out, PREFIX, strlen(PREFIX));
	sodium_bin2base64(out + strlen(PREFIX), b1, p, len, VARIANT);
	len = strlen(out);
	out[len++] = '.';
	sodium_bin2base64(out + len, b2, m, sizeof(m), VARIANT);
	return (int)strlen(out);
}

int gw_token_check(const uint8_t key[GW_TOKEN_KEY_BYTES], const char *tok, size_t len,
		   uint64_t now_s, struct gw_token_claims *c)
{
	uint8_t p[PAYLOAD_MAX], m[crypto_auth_BYTES], want[crypto_auth_BYTES];
	const char *dot, *body;
	size_t plen = 0, mlen = 0, off, tl, al;

	memset(c, 0, sizeof(*c));
	if (len > GW_TOKEN_MAX || len < strlen(PREFIX) || memcmp(tok, PREFIX, strlen(PREFIX)))
		return -EBADMSG;
	body = tok + strlen(PREFIX);
	dot = memchr(body, '.', len - strlen(PREFIX));
	if (!dot)
		return -EBADMSG;
	if (sodium_base642bin(p, sizeof(p), body, (size_t)(dot - body), NULL, &plen, NULL,
			      VARIANT) ||
	    sodium_base642bin(m, sizeof(m), dot + 1, len - (size_t)(dot + 1 - tok), NULL, &mlen,
			      NULL, VARIANT) ||
	    mlen != sizeof(m))
		return -EBADMSG;
	mac(key, p, plen, want);
	if (sodium_memcmp(m, want, sizeof(m)))
		return -EBADMSG;
	/* Authentic from here on: the layout is ours, but check it anyway. */
	if (plen < 26)
		return -EBADMSG;
	off = 24;
	tl = p[off++];
	if (tl >= SL_TENANT_NAME_LEN || off + tl + 1 > plen)
		return -EBADMSG;
	memcpy(c->tenant, p + off, tl);
	off += tl;
	al = p[off++];
	if (al > GW_USER_MAX || off + al != plen)
		return -EBADMSG;
	memcpy(c->account, p + off, al);
	c->exp = get_u64(p);
	c->iat = get_u64(p + 8);
	if (now_s >= c->exp)
		return -ETIMEDOUT;
	return 0;
}
