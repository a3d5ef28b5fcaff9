/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Request bodies for the gateway's endpoints: a flat JSON object or a form-encoded string,
 * from which named string fields are copied into caller buffers. Strict and bounded: the
 * input is at most gateway.max_body bytes, parsing is one pass with no allocation, nested
 * JSON values, duplicate fields, bad escapes and invalid UTF-8 are all refused with a
 * message fit for a 400. Nothing here is reached before the route and tenant are known,
 * and nothing is hashed unless it passed.
 */
#ifndef SLUICE_GW_BODY_H
#define SLUICE_GW_BODY_H

#include <stdbool.h>
#include <stddef.h>

#define GW_USER_MAX 128   /* bytes of an account name (gw_account_valid) */
#define GW_PASS_MAX 1024  /* bytes of password */

enum gw_body_type {
	GW_BODY_OTHER = 0,
	GW_BODY_JSON,
	GW_BODY_FORM,
};

/* From a Content-Type header value (NULL: none). Parameters such as charset are allowed
 * only as utf-8. */
int gw_body_type(const char *content_type);

struct gw_field {
	const char *name;
	char *buf;        /* receives the value, NUL-terminated */
	size_t cap;       /* buf size including the NUL */
	size_t len;       /* value length */
	bool found;
};

/*
 * Fill @f[0..nf) from @body. Values must be strings (JSON) and valid UTF-8 without NUL;
 * a value that does not fit its buffer is an error. Returns 0, or -EINVAL with a short
 * reason in @err.
 */
int gw_body_fields(int type, const char *body, size_t len, struct gw_field *f, int nf,
		   char *err, size_t errlen);

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
bool gw_utf8_valid(const unsigned char *s, size_t n);
/*
 * An account name in either case: 1..GW_USER_MAX bytes of ASCII letters, digits and
 * . _ - + @, the first a letter or a digit (docs/endpoints.md, "Account names"). Where a
 * name enters, gw_account_norm() (gw_creds.h) checks this and folds it to lowercase.
 */
bool gw_account_valid(const char *s, size_t n);

/*
 * Text from outside, made safe for one field of a log line or an outbox record: every byte
 * outside 0x21..0x7e, and the backslash and both quotes, become \xHH. Nothing non-ASCII
 * survives, so no control character, newline, U+0085, U+2028 or U+2029 (nor a bidi
 * override) can end or fake a record; with GW_ESC_SPACE a space stays a space (for the
 * key=value list an outbox record's text is). The result is NUL-terminated and cut only
 * between escapes; returns its length. @cap >= 1.
 */
#define GW_ESC_SPACE 1u
#define GW_ESC_LEN(n) (4 * (n) + 1) /* room for any @n bytes, with the NUL */
size_t gw_esc(char *out, size_t cap, const char *s, size_t n, unsigned flags);

#endif
