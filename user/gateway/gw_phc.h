/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Argon2id PHC strings, read and written here, and hashes computed on the calling thread.
 *
 * The worker pool meters a login by its thread's CPU clock around the hash. libargon2's
 * argon2id_verify() and argon2id_hash_encoded() take their thread count from the lanes
 * (p) and run the lanes on threads of their own, whose CPU that clock never sees: at p = 2
 * a worker saw a fifth of what a verify cost. So the worker never calls them: it decodes the
 * string here and runs argon2_ctx() with lanes = p, which decide the result, and threads =
 * 1, which only decide how it is computed (the tag is the same bytes). libargon2 exports no
 * PHC encoder or decoder, hence this one.
 *
 * The one format read and written:
 *
 *     $argon2id$v=19$m=M,t=T,p=P$SALT$TAG
 *
 * SALT and TAG in standard base64 without padding (canonical: unused low bits zero), M, T, P
 * decimal without sign or leading zero. Decoding is strict: anything else, or a value outside
 * the bounds below, is refused, so whatever decodes is something libargon2 computes.
 */
#ifndef SLUICE_GW_PHC_H
#define SLUICE_GW_PHC_H

#include <stddef.h>
#include <stdint.h>

/* libargon2 accepts wider ranges; these are what a stored hash may ask of a worker. m is
 * also at least 8 KiB per lane (libargon2's ARGON2_MIN_MEMORY per lane). */
#define GW_PHC_M_MAX    (1u << 24)  /* KiB: 16 GiB (the loader caps it at m_cost_kib) */
#define GW_PHC_T_MAX    1000u
#define GW_PHC_P_MAX    255u
#define GW_PHC_SALT_MIN 8u          /* libargon2's ARGON2_MIN_SALT_LENGTH */
#define GW_PHC_SALT_MAX 64u
#define GW_PHC_TAG_MIN  4u          /* libargon2's ARGON2_MIN_OUTLEN */
#define GW_PHC_TAG_MAX  64u

/* Characters of @n bytes in unpadded base64. */
#define GW_PHC_B64_LEN(n) ((4 * (size_t)(n) + 2) / 3)
/* The longest string gw_phc_encode() writes, with its NUL. */
#define GW_PHC_ENC_MAX (sizeof("$argon2id$v=19$m=16777216,t=1000,p=255$$") + \
			GW_PHC_B64_LEN(GW_PHC_SALT_MAX) + GW_PHC_B64_LEN(GW_PHC_TAG_MAX))

struct gw_phc {
	uint32_t m_kib, t, p;
	uint32_t salt_len, tag_len;
	uint8_t salt[GW_PHC_SALT_MAX];
	uint8_t tag[GW_PHC_TAG_MAX];
};

/* Parse @s (NUL-terminated) into @out. 0, or -EINVAL for anything but the format above
 * within the bounds above (@out is then zeroed). */
int gw_phc_decode(const char *s, struct gw_phc *out);

/* Write @in as a PHC string into @out[0..@n). 0; -EINVAL when @in is out of bounds;
 * -ENOSPC when @n is too small (GW_PHC_ENC_MAX always fits). */
int gw_phc_encode(const struct gw_phc *in, char *out, size_t n);

/* Argon2id of @pwd with @h's m, t, p and salt, on the calling thread, into
 * @tag[0..@tag_len). 0, -EINVAL (bounds), -ENOMEM. */
int gw_phc_compute(const struct gw_phc *h, const void *pwd, size_t len, uint8_t *tag,
		   uint32_t tag_len);

/* Does @pwd match the PHC string @phc? 1 yes, 0 no, -EINVAL for a string that does not
 * decode, -ENOMEM. The tags are compared in constant time. */
int gw_phc_verify(const char *phc, const void *pwd, size_t len);

/* Hash @pwd with (@m_kib, @t, @p), @salt and a tag of @tag_len bytes, on the calling thread,
 * into the PHC string @out[0..@n): the bytes argon2id_hash_encoded() writes. 0, -EINVAL,
 * -ENOMEM, -ENOSPC. */
int gw_phc_hash(uint32_t m_kib, uint32_t t, uint32_t p, const void *pwd, size_t len,
		const uint8_t *salt, uint32_t salt_len, uint32_t tag_len, char *out, size_t n);

#endif
