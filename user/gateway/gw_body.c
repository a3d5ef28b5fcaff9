// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Request body parsing (see gw_body.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gw_body.h"

bool gw_utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i];
		uint32_t cp;
		int extra, k;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			extra = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			extra = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			extra = 3;
			cp = c & 0x07;
		} else {
			return false; /* continuation byte first, overlong 0xc0/0xc1, or > 0xf4 */
		}
		if ((size_t)extra >= n - i)
			return false; /* truncated sequence */
		for (k = 1; k <= extra; k++) {
			if ((s[i + (size_t)k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + (size_t)k] & 0x3f);
		}
		if ((extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return false;
		i += (size_t)extra + 1;
	}
	return true;
}

static bool is_alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool gw_account_valid(const char *s, size_t n)
{
	size_t i;

	if (!n || n > GW_USER_MAX || !is_alnum((unsigned char)s[0]))
		return false;
	for (i = 1; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		/* No space, comma, '=', quote or anything beyond ASCII: a name is one token in
		 * every format it is written to (the credential file, outbox records, logs). */
		if (!is_alnum(c) && c != '.' && c != '_' && c != '-' && c != '+' && c != '@')
			return false;
	}
	return true;
}

size_t gw_esc(char *out, size_t cap, const char *s, size_t n, unsigned flags)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		bool plain = (c > 0x20 && c < 0x7f && c != '\\' && c != '\'' && c != '"') ||
			     (c == ' ' && (flags & GW_ESC_SPACE));

		if (plain) {
			if (o + 1 >= cap)
				break;
			out[o++] = (char)c;
			continue;
		}
		if (o + 4 >= cap)
			break;
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[c >> 4];
		out[o++] = hex[c & 15];
	}
	out[o] = '\0';
	return o;
}

int gw_body_type(const char *ct)
{
	const char *semi;
	size_t n;

	if (!ct)
		return GW_BODY_OTHER;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	semi = strchr(ct, ';');
	n = semi ? (size_t)(semi - ct) : strlen(ct);
	while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
		n--;
	if (semi) {
		const char *p = semi + 1;

		while (*p == ' ' || *p == '\t')
			p++;
		if (strncasecmp(p, "charset=", 8) ||
		    (strcasecmp(p + 8, "utf-8") && strcasecmp(p + 8, "\"utf-8\"")))
			return GW_BODY_OTHER;
	}
	if (n == 16 && !strncasecmp(ct, "application/json", n))
		return GW_BODY_JSON;
	if (n == 33 && !strncasecmp(ct, "application/x-www-form-urlencoded", n))
		return GW_BODY_FORM;
	return GW_BODY_OTHER;
}

static void set_err(char *err, size_t n, const char *msg)
{
	if (err && n)
		snprintf(err, n, "%s", msg);
}

/* Bounded output buffer for decoded values; overflow is remembered, not written. */
struct out {
	char *buf;
	size_t cap, len;
	bool over;
};

static void out_put(struct out *o, char c)
{
	if (!o->buf)
		return;
	if (o->len + 1 >= o->cap) {
		o->over = true;
		return;
	}
	o->buf[o->len++] = c;
}

static void out_utf8(struct out *o, uint32_t cp)
{
	if (cp < 0x80) {
		out_put(o, (char)cp);
	} else if (cp < 0x800) {
		out_put(o, (char)(0xc0 | (cp >> 6)));
		out_put(o, (char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		out_put(o, (char)(0xe0 | (cp >> 12)));
		out_put(o, (char)(0x80 | ((cp >> 6) & 0x3f)));
		out_put(o, (char)(0x80 | (cp & 0x3f)));
	} else {
		out_put(o, (char)(0xf0 | (cp >> 18)));
		out_put(o, (char)(0x80 | ((cp >> 12) & 0x3f)));
		out_put(o, (char)(0x80 | ((cp >> 6) & 0x3f)));
		out_put(o, (char)(0x80 | (cp & 0x3f)));
	}
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static struct gw_field *field_named(struct gw_field *f, int nf, const char *name, size_t n)
{
	int i;

	for (i = 0; i < nf; i++)
		if (strlen(f[i].name) == n && !memcmp(f[i].name, name, n))
			return &f[i];
	return NULL;
}

/* Store a decoded value in its field, with the checks every field gets. */
static int finish_field(struct gw_field *fd, struct out *o, char *err, size_t errlen)
{
	if (fd->found) {
		snprintf(err, errlen, "field '%s' is given twice", fd->name);
		return -EINVAL;
	}
	if (o->over) {
		snprintf(err, errlen, "field '%s' is longer than %zu bytes", fd->name, fd->cap - 1);
		return -EINVAL;
	}
	if (!gw_utf8_valid((const unsigned char *)o->buf, o->len)) {
		snprintf(err, errlen, "field '%s' is not valid UTF-8", fd->name);
		return -EINVAL;
	}
	if (memchr(o->buf, '\0', o->len)) {
		snprintf(err, errlen, "field '%s' contains a NUL character", fd->name);
		return -EINVAL;
	}
	o->buf[o->len] = '\0';
	fd->len = o->len;
	fd->found = true;
	return 0;
}

/* ---- JSON ------------------------------------------------------------------------------- */

struct js {
	const char *p, *end;
};

static void ws(struct js *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int hex4(struct js *j, uint32_t *v)
{
	int i;

	*v = 0;
	if (j->end - j->p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		int h = hexval(j->p[i]);

		if (h < 0)
			return -1;
		*v = (*v << 4) | (uint32_t)h;
	}
	j->p += 4;
	return 0;
}

/* A JSON string at j->p (the opening quote); decoded into @o (which may have no buffer). */
static int json_string(struct js *j, struct out *o)
{
	if (j->p >= j->end || *j->p != '"')
		return -1;
	j->p++;
	while (j->p < j->end) {
		unsigned char c = (unsigned char)*j->p++;

		if (c == '"')
			return 0;
		if (c < 0x20)
			return -1; /* raw control characters must be escaped */
		if (c != '\\') {
			out_put(o, (char)c);
			continue;
		}
		if (j->p >= j->end)
			return -1;
		c = (unsigned char)*j->p++;
		switch (c) {
		case '"': out_put(o, '"'); break;
		case '\\': out_put(o, '\\'); break;
		case '/': out_put(o, '/'); break;
		case 'b': out_put(o, '\b'); break;
		case 'f': out_put(o, '\f'); break;
		case 'n': out_put(o, '\n'); break;
		case 'r': out_put(o, '\r'); break;
		case 't': out_put(o, '\t'); break;
		case 'u': {
			uint32_t cp, lo;

			if (hex4(j, &cp))
				return -1;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return -1; /* a lone low surrogate */
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u')
					return -1;
				j->p += 2;
				if (hex4(j, &lo) || lo < 0xdc00 || lo > 0xdfff)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			out_utf8(o, cp);
			break;
		}
		default:
			return -1;
		}
	}
	return -1;
}

/* Skip a number, true, false or null. Objects and arrays are refused by the caller. */
static int json_scalar(struct js *j)
{
	static const char *const lits[] = { "true", "false", "null" };
	const char *start = j->p;
	size_t i;

	for (i = 0; i < 3; i++) {
		size_t n = strlen(lits[i]);

		if ((size_t)(j->end - j->p) >= n && !memcmp(j->p, lits[i], n)) {
			j->p += n;
			return 0;
		}
	}
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return -1;
	if (*j->p == '0')
		j->p++;
	else
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return -1;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return -1;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	return j->p > start ? 0 : -1;
}

static int parse_json(const char *body, size_t len, struct gw_field *f, int nf, char *err,
		      size_t errlen)
{
	struct js j = { body, body + len };
	char key[64];

	if (!gw_utf8_valid((const unsigned char *)body, len)) {
		set_err(err, errlen, "the body is not valid UTF-8");
		return -EINVAL;
	}
	ws(&j);
	if (j.p >= j.end || *j.p != '{') {
		set_err(err, errlen, "expected a JSON object");
		return -EINVAL;
	}
	j.p++;
	ws(&j);
	if (j.p < j.end && *j.p == '}') {
		j.p++;
		goto tail;
	}
	for (;;) {
		struct out ko = { key, sizeof(key), 0, false };
		struct gw_field *fd;

		ws(&j);
		if (json_string(&j, &ko)) {
			set_err(err, errlen, "malformed JSON: expected a member name");
			return -EINVAL;
		}
		ws(&j);
		if (j.p >= j.end || *j.p != ':') {
			set_err(err, errlen, "malformed JSON: expected ':'");
			return -EINVAL;
		}
		j.p++;
		ws(&j);
		fd = ko.over ? NULL : field_named(f, nf, key, ko.len);
		if (j.p < j.end && *j.p == '"') {
			struct out vo = { fd ? fd->buf : NULL, fd ? fd->cap : 0, 0, false };

			if (json_string(&j, &vo)) {
				set_err(err, errlen, "malformed JSON string");
				return -EINVAL;
			}
			if (fd && finish_field(fd, &vo, err, errlen))
				return -EINVAL;
		} else if (j.p < j.end && (*j.p == '{' || *j.p == '[')) {
			set_err(err, errlen, "nested JSON values are not accepted");
			return -EINVAL;
		} else {
			if (json_scalar(&j)) {
				set_err(err, errlen, "malformed JSON value");
				return -EINVAL;
			}
			if (fd) {
				snprintf(err, errlen, "field '%s' must be a string", fd->name);
				return -EINVAL;
			}
		}
		ws(&j);
		if (j.p < j.end && *j.p == ',') {
			j.p++;
			continue;
		}
		if (j.p < j.end && *j.p == '}') {
			j.p++;
			break;
		}
		set_err(err, errlen, "malformed JSON: expected ',' or '}'");
		return -EINVAL;
	}
tail:
	ws(&j);
	if (j.p != j.end) {
		set_err(err, errlen, "trailing data after the JSON object");
		return -EINVAL;
	}
	return 0;
}

/* ---- form ------------------------------------------------------------------------------- */

/* Percent-decode s[0..n) into @o ('+' is a space). -1 on a bad escape. */
static int form_decode(const char *s, size_t n, struct out *o)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] == '+') {
			out_put(o, ' ');
		} else if (s[i] == '%') {
			int hi, lo;

			if (n - i < 3)
				return -1;
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			out_put(o, (char)(hi << 4 | lo));
			i += 2;
		} else {
			out_put(o, s[i]);
		}
	}
	return 0;
}

static int parse_form(const char *body, size_t len, struct gw_field *f, int nf, char *err,
		      size_t errlen)
{
	size_t pos = 0;

	while (pos <= len) {
		const char *pair = body + pos;
		const char *amp = memchr(pair, '&', len - pos);
		size_t plen = amp ? (size_t)(amp - pair) : len - pos;
		const char *eq = memchr(pair, '=', plen);
		size_t klen = eq ? (size_t)(eq - pair) : plen;
		char key[64];
		struct out ko = { key, sizeof(key), 0, false };
		struct gw_field *fd;

		if (plen) {
			if (form_decode(pair, klen, &ko)) {
				set_err(err, errlen, "malformed percent-encoding in a form name");
				return -EINVAL;
			}
			fd = ko.over ? NULL : field_named(f, nf, key, ko.len);
			if (fd) {
				struct out vo = { fd->buf, fd->cap, 0, false };
				const char *v = eq ? eq + 1 : pair + plen;
				size_t vlen = eq ? plen - klen - 1 : 0;

				if (form_decode(v, vlen, &vo)) {
					snprintf(err, errlen, "malformed percent-encoding in '%s'",
						 fd->name);
					return -EINVAL;
				}
				if (finish_field(fd, &vo, err, errlen))
					return -EINVAL;
			}
		}
		if (!amp)
			break;
		pos += plen + 1;
	}
	return 0;
}

int gw_body_fields(int type, const char *body, size_t len, struct gw_field *f, int nf,
		   char *err, size_t errlen)
{
	int i;

	for (i = 0; i < nf; i++) {
		f[i].found = false;
		f[i].len = 0;
		if (f[i].cap)
			f[i].buf[0] = '\0';
	}
	switch (type) {
	case GW_BODY_JSON:
		return parse_json(body, len, f, nf, err, errlen);
	case GW_BODY_FORM:
		return parse_form(body, len, f, nf, err, errlen);
	default:
		set_err(err, errlen, "expected Content-Type application/json or "
			"application/x-www-form-urlencoded");
		return -EINVAL;
	}
}
