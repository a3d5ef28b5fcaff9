// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Argon2id PHC strings and hashes on the calling thread (see gw_phc.h): the worker pool's
 * only way to Argon2id, so the CPU its thread clock measures is all the hash cost.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <argon2.h>
#include <sodium.h>

#include "gw_phc.h"

#define PREFIX "$argon2id$v=19$m="
#define B64 sodium_base64_VARIANT_ORIGINAL_NO_PADDING

_Static_assert(GW_PHC_SALT_MIN >= ARGON2_MIN_SALT_LENGTH, "salt shorter than libargon2 takes");
_Static_assert(GW_PHC_TAG_MIN >= ARGON2_MIN_OUTLEN, "tag shorter than libargon2 takes");
_Static_assert(GW_PHC_P_MAX <= ARGON2_MAX_LANES, "more lanes than libargon2 takes");
_Static_assert(GW_PHC_M_MAX >= 8 * GW_PHC_P_MAX, "no m fits the most lanes");

/* A decimal without sign or leading zero, at most @max: the end of it, or NULL. */
static const char *decimal(const char *s, uint32_t max, uint32_t *v)
{
	const char *c = s;
	uint64_t acc = 0;

	for (; *c >= '0' && *c <= '9'; c++) {
		acc = acc * 10 + (uint64_t)(*c - '0');
		if (acc > max) /* checked per digit, so acc never overflows */
			return NULL;
	}
	if (c == s || (*s == '0' && c != s + 1))
		return NULL;
	*v = (uint32_t)acc;
	return c;
}

/* What libargon2 needs (validate_inputs) and what a worker may be asked, in one place. */
static bool params_ok(uint32_t m_kib, uint32_t t, uint32_t p)
{
	return p >= 1 && p <= GW_PHC_P_MAX && t >= 1 && t <= GW_PHC_T_MAX &&
	       m_kib <= GW_PHC_M_MAX && m_kib >= 8 * p && m_kib >= ARGON2_MIN_MEMORY;
}

static bool bounds_ok(const struct gw_phc *h)
{
	return params_ok(h->m_kib, h->t, h->p) && h->salt_len >= GW_PHC_SALT_MIN &&
	       h->salt_len <= GW_PHC_SALT_MAX && h->tag_len >= GW_PHC_TAG_MIN &&
	       h->tag_len <= GW_PHC_TAG_MAX;
}

/* Decode s[0..n) (no padding, canonical) into at most @max bytes. */
static bool b64_decode(const char *s, size_t n, uint8_t *out, uint32_t max, uint32_t *len)
{
	size_t got = 0;

	/* With no b64_end, sodium refuses anything it did not consume whole: a '=', a
	 * character outside the alphabet, a length of 1 mod 4, non-zero unused bits; and more
	 * than @max bytes. */
	if (sodium_base642bin(out, max, s, n, NULL, &got, NULL, B64) != 0)
		return false;
	*len = (uint32_t)got;
	return true;
}

int gw_phc_decode(const char *s, struct gw_phc *out)
{
	struct gw_phc h = { 0 };
	const char *c = s, *end;

	if (strncmp(c, PREFIX, sizeof(PREFIX) - 1))
		goto bad;
	c += sizeof(PREFIX) - 1;
	if (!(c = decimal(c, GW_PHC_M_MAX, &h.m_kib)) || strncmp(c, ",t=", 3))
		goto bad;
	if (!(c = decimal(c + 3, GW_PHC_T_MAX, &h.t)) || strncmp(c, ",p=", 3))
		goto bad;
	if (!(c = decimal(c + 3, GW_PHC_P_MAX, &h.p)) || *c != '$')
		goto bad;
	c++;
	end = strchr(c, '$');
	if (!end || !b64_decode(c, (size_t)(end - c), h.salt, GW_PHC_SALT_MAX, &h.salt_len))
		goto bad;
	c = end + 1;
	/* The tag runs to the end: a '$' or anything else in it fails the decode. */
	if (!b64_decode(c, strlen(c), h.tag, GW_PHC_TAG_MAX, &h.tag_len) || !bounds_ok(&h))
		goto bad;
	*out = h;
	sodium_memzero(&h, sizeof(h));
	return 0;
bad:
	sodium_memzero(&h, sizeof(h));
	memset(out, 0, sizeof(*out));
	return -EINVAL;
}

int gw_phc_encode(const struct gw_phc *in, char *out, size_t n)
{
	char salt[GW_PHC_B64_LEN(GW_PHC_SALT_MAX) + 1], tag[GW_PHC_B64_LEN(GW_PHC_TAG_MAX) + 1];
	int len;

	if (!bounds_ok(in))
		return -EINVAL;
	/* sodium_bin2base64 aborts the process when its buffer is short: these never are. */
	sodium_bin2base64(salt, sizeof(salt), in->salt, in->salt_len, B64);
	sodium_bin2base64(tag, sizeof(tag), in->tag, in->tag_len, B64);
	len = snprintf(out, n, PREFIX "%u,t=%u,p=%u$%s$%s", in->m_kib, in->t, in->p, salt, tag);
	sodium_memzero(tag, sizeof(tag));
	if (len < 0 || (size_t)len >= n) {
		if (n)
			sodium_memzero(out, n);
		return -ENOSPC;
	}
	return 0;
}

int gw_phc_compute(const struct gw_phc *h, const void *pwd, size_t len, uint8_t *tag,
		   uint32_t tag_len)
{
	argon2_context ctx = {
		.out = tag,
		.outlen = tag_len,
		.pwd = (uint8_t *)pwd, /* read only: no ARGON2_FLAG_CLEAR_PASSWORD */
		.pwdlen = (uint32_t)len,
		.salt = (uint8_t *)h->salt,
		.saltlen = h->salt_len,
		.t_cost = h->t,
		.m_cost = h->m_kib,
		.lanes = h->p,
		/* The point of this file: the lanes are filled one after another on this
		 * thread (fill_memory_blocks_st), to the same bytes p threads would make. */
		.threads = 1,
		.version = ARGON2_VERSION_13,
		.flags = ARGON2_DEFAULT_FLAGS,
	};
	int r;

	if (!params_ok(h->m_kib, h->t, h->p) || h->salt_len < GW_PHC_SALT_MIN ||
	    h->salt_len > GW_PHC_SALT_MAX || tag_len < GW_PHC_TAG_MIN ||
	    tag_len > GW_PHC_TAG_MAX || len > ARGON2_MAX_PWD_LENGTH)
		return -EINVAL;
	r = argon2_ctx(&ctx, Argon2_id);
	if (r == ARGON2_OK)
		return 0;
	sodium_memzero(tag, tag_len);
	return r == ARGON2_MEMORY_ALLOCATION_ERROR ? -ENOMEM : -EINVAL;
}

int gw_phc_verify(const char *phc, const void *pwd, size_t len)
{
	uint8_t tag[GW_PHC_TAG_MAX];
	struct gw_phc h;
	int ret;

	ret = gw_phc_decode(phc, &h);
	if (ret)
		return ret;
	ret = gw_phc_compute(&h, pwd, len, tag, h.tag_len);
	if (!ret)
		ret = sodium_memcmp(tag, h.tag, h.tag_len) == 0;
	sodium_memzero(tag, sizeof(tag));
	sodium_memzero(&h, sizeof(h));
	return ret;
}

int gw_phc_hash(uint32_t m_kib, uint32_t t, uint32_t p, const void *pwd, size_t len,
		const uint8_t *salt, uint32_t salt_len, uint32_t tag_len, char *out, size_t n)
{
	struct gw_phc h = { .m_kib = m_kib, .t = t, .p = p, .salt_len = salt_len,
			    .tag_len = tag_len };
	int ret;

	if (salt_len < GW_PHC_SALT_MIN || salt_len > GW_PHC_SALT_MAX)
		return -EINVAL;
	memcpy(h.salt, salt, salt_len);
	ret = gw_phc_compute(&h, pwd, len, h.tag, tag_len);
	if (!ret)
		ret = gw_phc_encode(&h, out, n);
	sodium_memzero(&h, sizeof(h));
	return ret;
}
