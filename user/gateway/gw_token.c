// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Signed, expiring session tokens (see gw_token.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "gw_token.h"

#define PREFIX "v2."
#define PREFIX_V1 "v1."
#define PREFIX_LEN 3
#define VARIANT sodium_base64_VARIANT_URLSAFE_NO_PADDING
/* v2: exp(8, s) iat(8, ns) nonce(8) stamp(8) tenant_len(1) tenant account_len(1) account;
 * v1: exp(8, s) iat(8, s) nonce(8) tenant_len(1) tenant account_len(1) account */
#define FIXED_V2 32
#define FIXED_V1 24
#define PAYLOAD_MAX (FIXED_V2 + 1 + SL_TENANT_NAME_LEN + 1 + GW_USER_MAX)

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

static void mac(const uint8_t key[GW_TOKEN_KEY_BYTES], const char *prefix,
		const uint8_t *payload, size_t n, uint8_t out[crypto_auth_BYTES])
{
	crypto_auth_hmacsha512256_state st;

	/* The version string is part of what is signed: a v2 token can never be replayed as
	 * a v1 one with the same bytes. */
	crypto_auth_hmacsha512256_init(&st, key, GW_TOKEN_KEY_BYTES);
	crypto_auth_hmacsha512256_update(&st, (const uint8_t *)prefix, PREFIX_LEN);
	crypto_auth_hmacsha512256_update(&st, payload, n);
	crypto_auth_hmacsha512256_final(&st, out);
}

int gw_token_issue(const uint8_t key[GW_TOKEN_KEY_BYTES], const char *tenant,
		   const char *account, uint64_t iat_ns, uint32_t ttl_s, uint64_t stamp,
		   char *out, size_t n)
{
	uint8_t p[PAYLOAD_MAX], m[crypto_auth_BYTES];
	size_t tl = strlen(tenant), al = strlen(account), len = 0, need, b1, b2;

	if (tl >= SL_TENANT_NAME_LEN || al > GW_USER_MAX)
		return -EINVAL;
	put_u64(p, iat_ns / 1000000000ull + ttl_s);
	put_u64(p + 8, iat_ns);
	randombytes_buf(p + 16, 8);
	put_u64(p + 24, stamp);
	len = FIXED_V2;
	p[len++] = (uint8_t)tl;
	memcpy(p + len, tenant, tl);
	len += tl;
	p[len++] = (uint8_t)al;
	memcpy(p + len, account, al);
	len += al;
	mac(key, PREFIX, p, len, m);
	b1 = sodium_base64_ENCODED_LEN(len, VARIANT);
	b2 = sodium_base64_ENCODED_LEN(sizeof(m), VARIANT);
	/* The encoded lengths include a NUL each; one of them becomes the '.'. */
	need = PREFIX_LEN + b1 + b2;
	if (need > n)
		return -ENOSPC;
	memcpy(out, PREFIX, PREFIX_LEN);
	sodium_bin2base64(out + PREFIX_LEN, b1, p, len, VARIANT);
	len = strlen(out);
	out[len++] = '.';
	sodium_bin2base64(out + len, b2, m, sizeof(m), VARIANT);
	return (int)strlen(out);
}

int gw_token_check(const uint8_t key[GW_TOKEN_KEY_BYTES], const char *tok, size_t len,
		   uint64_t now_s, struct gw_token_claims *c)
{
	uint8_t p[PAYLOAD_MAX], m[crypto_auth_BYTES], want[crypto_auth_BYTES];
	const char *dot, *body, *prefix;
	size_t plen = 0, mlen = 0, off, tl, al, fixed;

	memset(c, 0, sizeof(*c));
	if (len > GW_TOKEN_MAX || len < PREFIX_LEN)
		return -EBADMSG;
	if (!memcmp(tok, PREFIX, PREFIX_LEN)) {
		prefix = PREFIX;
		fixed = FIXED_V2;
	} else if (!memcmp(tok, PREFIX_V1, PREFIX_LEN)) {
		prefix = PREFIX_V1;
		fixed = FIXED_V1;
	} else {
		return -EBADMSG;
	}
	body = tok + PREFIX_LEN;
	dot = memchr(body, '.', len - PREFIX_LEN);
	if (!dot)
		return -EBADMSG;
	if (sodium_base642bin(p, sizeof(p), body, (size_t)(dot - body), NULL, &plen, NULL,
			      VARIANT) ||
	    sodium_base642bin(m, sizeof(m), dot + 1, len - (size_t)(dot + 1 - tok), NULL, &mlen,
			      NULL, VARIANT) ||
	    mlen != sizeof(m))
		return -EBADMSG;
	mac(key, prefix, p, plen, want);
	if (sodium_memcmp(m, want, sizeof(m)))
		return -EBADMSG;
	/* Authentic from here on: the layout is ours, but check it anyway. */
	if (plen < fixed + 2)
		return -EBADMSG;
	off = fixed;
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
	if (fixed == FIXED_V2) {
		c->version = 2;
		c->iat_ns = get_u64(p + 8);
		c->iat = c->iat_ns / 1000000000ull;
		c->stamp = get_u64(p + 24);
	} else {
		c->version = 1;
		c->iat = get_u64(p + 8);
		c->iat_ns = c->iat * 1000000000ull;
	}
	if (now_s >= c->exp)
		return -ETIMEDOUT;
	return 0;
}
