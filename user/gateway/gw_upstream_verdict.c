// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The sign-in verdict of an upstream answer (gw_upstream_verdict.h): statuses, a header,
 * or a field of a JSON body found by a one-pass, allocation-free, depth-bounded walk.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/keyvalq_struct.h>

#include "config.h"
#include "gw_body.h"
#include "gw_upstream_verdict.h"

#define JSON_DEPTH 16

static const char *const verdict_names[GW_VERDICT__N] = {
	[GW_VERDICT_SUCCESS] = "success", [GW_VERDICT_FAILURE] = "failure",
	[GW_VERDICT_OTHER_STATUS] = "other_status", [GW_VERDICT_MISSING] = "missing",
	[GW_VERDICT_UNKNOWN] = "unknown", [GW_VERDICT_MALFORMED] = "malformed",
};

const char *gw_verdict_name(int v)
{
	return v >= 0 && v < GW_VERDICT__N ? verdict_names[v] : "?";
}

int gw_verdict_outcome(int v)
{
	return v == GW_VERDICT_SUCCESS ? 1 : v == GW_VERDICT_FAILURE ? 0 : -1;
}

/* ---- the JSON walk -------------------------------------------------------------------------- */

struct seg {
	const char *s;
	size_t n;
};

struct walk {
	const char *p, *e;
	/* the target */
	char *out;
	size_t cap;
	int full;
	int found;      /* times the path's end was reached */
	bool scalar;    /* and what was there is a scalar */
};

static void ws(struct walk *w)
{
	while (w->p < w->e && (*w->p == ' ' || *w->p == '\t' || *w->p == '\n' || *w->p == '\r'))
		w->p++;
}

/* Append @n bytes to @buf (@len of @cap used); a byte that does not fit clears *@fit. */
static void put(char *buf, size_t cap, size_t *len, const char *s, size_t n, int *fit)
{
	if (!buf)
		return;
	if (*len + n + 1 > cap) {
		*fit = 0;
		return;
	}
	memcpy(buf + *len, s, n);
	*len += n;
	buf[*len] = '\0';
}

static int hex4(struct walk *w, uint32_t *v)
{
	int i;

	*v = 0;
	if (w->e - w->p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		char c = *w->p++;

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	return 0;
}

/* A string at w->p (its opening quote): decoded into @buf when given (cut at @cap, *@fit
 * cleared), checked either way. 0 or -1. */
static int jstring(struct walk *w, char *buf, size_t cap, size_t *len, int *fit)
{
	const char *start;

	*len = 0;
	*fit = 1;
	if (buf && cap)
		buf[0] = '\0';
	if (w->p >= w->e || *w->p != '"')
		return -1;
	w->p++;
	start = w->p;
	while (w->p < w->e) {
		unsigned char c = (unsigned char)*w->p;
		const char *run = w->p;

		if (c == '"') {
			/* Raw bytes >= 0x80 are checked once, over the whole string (escapes are ASCII). */
			if (!gw_utf8_valid((const unsigned char *)start, (size_t)(w->p - start)))
				return -1;
			w->p++;
			return 0;
		}
		if (c < 0x20)
			return -1;
		if (c != '\\') {
			while (w->p < w->e && *w->p != '"' && *w->p != '\\' &&
			       (unsigned char)*w->p >= 0x20)
				w->p++;
			put(buf, cap, len, run, (size_t)(w->p - run), fit);
			continue;
		}
		w->p++;
		if (w->p >= w->e)
			return -1;
		c = (unsigned char)*w->p++;
		switch (c) {
		case '"': case '\\': case '/':
			put(buf, cap, len, (const char *)&c, 1, fit);
			break;
		case 'b': put(buf, cap, len, "\b", 1, fit); break;
		case 'f': put(buf, cap, len, "\f", 1, fit); break;
		case 'n': put(buf, cap, len, "\n", 1, fit); break;
		case 'r': put(buf, cap, len, "\r", 1, fit); break;
		case 't': put(buf, cap, len, "\t", 1, fit); break;
		case 'u': {
			uint32_t cp, lo;
			char u[4];
			size_t n;

			if (hex4(w, &cp))
				return -1;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return -1; /* a lone low surrogate */
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (w->e - w->p < 6 || w->p[0] != '\\' || w->p[1] != 'u')
					return -1;
				w->p += 2;
				if (hex4(w, &lo) || lo < 0xdc00 || lo > 0xdfff)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			if (!cp)
				return -1; /* a NUL could cut a comparison short */
			if (cp < 0x80) {
				u[0] = (char)cp;
				n = 1;
			} else if (cp < 0x800) {
				u[0] = (char)(0xc0 | (cp >> 6));
				u[1] = (char)(0x80 | (cp & 0x3f));
				n = 2;
			} else if (cp < 0x10000) {
				u[0] = (char)(0xe0 | (cp >> 12));
				u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
				u[2] = (char)(0x80 | (cp & 0x3f));
				n = 3;
			} else {
				u[0] = (char)(0xf0 | (cp >> 18));
				u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
				u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
				u[3] = (char)(0x80 | (cp & 0x3f));
				n = 4;
			}
			put(buf, cap, len, u, n, fit);
			break;
		}
		default:
			return -1;
		}
	}
	return -1;
}

static bool digit(const struct walk *w)
{
	return w->p < w->e && *w->p >= '0' && *w->p <= '9';
}

/* A number, true, false or null at w->p: its literal, checked. 0 or -1. */
static int jliteral(struct walk *w, const char **s, size_t *n)
{
	static const char *const lits[] = { "true", "false", "null" };
	const char *start = w->p;
	size_t k;

	for (k = 0; k < 3; k++) {
		size_t l = strlen(lits[k]);

		if ((size_t)(w->e - w->p) >= l && !memcmp(w->p, lits[k], l)) {
			w->p += l;
			*s = start;
			*n = l;
			return 0;
		}
	}
	if (w->p < w->e && *w->p == '-')
		w->p++;
	if (!digit(w))
		return -1;
	if (*w->p == '0')
		w->p++;
	else
		while (digit(w))
			w->p++;
	if (w->p < w->e && *w->p == '.') {
		w->p++;
		if (!digit(w))
			return -1;
		while (digit(w))
			w->p++;
	}
	if (w->p < w->e && (*w->p == 'e' || *w->p == 'E')) {
		w->p++;
		if (w->p < w->e && (*w->p == '+' || *w->p == '-'))
			w->p++;
		if (!digit(w))
			return -1;
		while (digit(w))
			w->p++;
	}
	*s = start;
	*n = (size_t)(w->p - start);
	return 0;
}

/* Is @sg a decimal index, and which? */
static bool seg_index(const struct seg *sg, size_t *idx)
{
	size_t i;

	if (!sg->n || sg->n > 9 || (sg->n > 1 && sg->s[0] == '0'))
		return false;
	*idx = 0;
	for (i = 0; i < sg->n; i++) {
		if (sg->s[i] < '0' || sg->s[i] > '9')
			return false;
		*idx = *idx * 10 + (size_t)(sg->s[i] - '0');
	}
	return true;
}

/*
 * One value at w->p. @path/@n: the segments still to follow from it (@n == 0: this value is
 * the target; @path NULL: not on the path, only checked). Depth is bounded by @depth.
 */
static int jvalue(struct walk *w, const struct seg *path, int n, int depth)
{
	ws(w);
	if (w->p >= w->e)
		return -1;
	if (path && !n) { /* the target */
		w->found++;
		if (*w->p == '"') {
			size_t len;

			w->scalar = true;
			return jstring(w, w->out, w->cap, &len, &w->full);
		}
		if (*w->p != '{' && *w->p != '[') {
			const char *s;
			size_t len;

			w->scalar = true;
			if (jliteral(w, &s, &len))
				return -1;
			w->full = len < w->cap;
			len = len < w->cap ? len : w->cap - 1;
			memcpy(w->out, s, len);
			w->out[len] = '\0';
			return 0;
		}
		w->scalar = false;
		path = NULL; /* an object or an array there: checked, not a verdict */
	}
	if (*w->p == '{') {
		bool seen = false;

		if (depth >= JSON_DEPTH)
			return -1;
		w->p++;
		ws(w);
		if (w->p < w->e && *w->p == '}') {
			w->p++;
			return 0;
		}
		for (;;) {
			char key[SL_VERDICT_NAME_LEN];
			size_t kl;
			int fit;
			bool on;

			ws(w);
			if (jstring(w, key, sizeof(key), &kl, &fit))
				return -1;
			on = path && fit && kl == path[0].n && !memcmp(key, path[0].s, kl);
			if (on && seen)
				return -1; /* a duplicate member on the path: which one is meant? */
			seen = seen || on;
			ws(w);
			if (w->p >= w->e || *w->p != ':')
				return -1;
			w->p++;
			if (jvalue(w, on ? path + 1 : NULL, on ? n - 1 : 0, depth + 1))
				return -1;
			ws(w);
			if (w->p < w->e && *w->p == ',') {
				w->p++;
				continue;
			}
			if (w->p < w->e && *w->p == '}') {
				w->p++;
				return 0;
			}
			return -1;
		}
	}
	if (*w->p == '[') {
		size_t idx = 0, want = 0;
		bool indexed = path && seg_index(&path[0], &want);

		if (depth >= JSON_DEPTH)
			return -1;
		w->p++;
		ws(w);
		if (w->p < w->e && *w->p == ']') {
			w->p++;
			return 0;
		}
		for (;; idx++) {
			bool on = indexed && idx == want;

			if (jvalue(w, on ? path + 1 : NULL, on ? n - 1 : 0, depth + 1))
				return -1;
			ws(w);
			if (w->p < w->e && *w->p == ',') {
				w->p++;
				continue;
			}
			if (w->p < w->e && *w->p == ']') {
				w->p++;
				return 0;
			}
			return -1;
		}
	}
	if (*w->p == '"') {
		size_t len;
		int fit;

		return jstring(w, NULL, 0, &len, &fit);
	} else {
		const char *s;
		size_t len;

		return jliteral(w, &s, &len);
	}
}

int gw_json_path(const char *body, size_t len, const char *path, char *out, size_t cap,
		 int *full)
{
	struct seg segs[SL_VERDICT_PATH_MAX];
	struct walk w = { .p = body, .e = body + len, .out = out, .cap = cap, .full = 1 };
	const char *p = path;
	int n = 0;

	if (!cap)
		return -1;
	out[0] = '\0';
	for (;;) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		if (!l || n == SL_VERDICT_PATH_MAX)
			return -1;
		segs[n].s = p;
		segs[n++].n = l;
		if (!dot)
			break;
		p = dot + 1;
	}
	if (jvalue(&w, segs, n, 0))
		return -1;
	ws(&w);
	if (w.p != w.e)
		return -1; /* something after the document */
	if (!w.found)
		return 0;
	if (w.found > 1 || !w.scalar)
		return -1;
	*full = w.full;
	return 1;
}

/* ---- the verdict ------------------------------------------------------------------------------ */

/* Which list has @v: GW_VERDICT_SUCCESS, _FAILURE or _UNKNOWN. Exact, case-sensitive. */
static int classify(const struct sl_route_login *l, const char *v)
{
	int i;

	for (i = 0; i < l->n_ok; i++)
		if (!strcmp(l->ok[i], v))
			return GW_VERDICT_SUCCESS;
	for (i = 0; i < l->n_no; i++)
		if (!strcmp(l->no[i], v))
			return GW_VERDICT_FAILURE;
	return GW_VERDICT_UNKNOWN;
}

int gw_up_verdict(const struct sl_route_login *l, int code, const struct evkeyvalq *hdrs,
		  const char *body, size_t len)
{
	int i, v = -1;

	for (i = 0; i < l->n_failure; i++)
		if (l->failure[i] == code)
			return GW_VERDICT_FAILURE; /* a refused sign-in is one, whatever else it says */
	for (i = 0; i < l->n_success; i++)
		if (l->success[i] == code)
			break;
	if (i == l->n_success)
		return GW_VERDICT_OTHER_STATUS;
	if (l->by == SL_VERDICT_HEADER) {
		const struct evkeyval *kv;

		/* Every instance must say the same: an answer with "ok" and "denied" is read as
		 * neither. */
		TAILQ_FOREACH(kv, hdrs, next) {
			int c;

			if (strcasecmp(kv->key, l->by_name))
				continue;
			c = classify(l, kv->value);
			if (v >= 0 && c != v)
				return GW_VERDICT_MALFORMED;
			v = c;
		}
		return v < 0 ? GW_VERDICT_MISSING : v;
	}
	if (l->by == SL_VERDICT_JSON) {
		char val[SL_VERDICT_VALUE_LEN];
		int full = 1, r = gw_json_path(body, len, l->by_name, val, sizeof(val), &full);

		if (r < 0)
			return GW_VERDICT_MALFORMED;
		if (!r)
			return GW_VERDICT_MISSING;
		/* A value longer than any in the lists is in neither. */
		return full ? classify(l, val) : GW_VERDICT_UNKNOWN;
	}
	return GW_VERDICT_SUCCESS;
}
