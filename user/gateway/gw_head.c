// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The raw request head, byte by byte (see gw_head.h). */
#include <string.h>

#include "gw_head.h"

enum st {
	S_START = 0,  /* the first byte of a request line */
	S_METHOD,
	S_TARGET0,    /* the target's first byte */
	S_TARGET,
	S_VERSION,    /* "HTTP/1." */
	S_MINOR,      /* its digit */
	S_RL_CR,      /* the request line's CR */
	S_RL_LF,      /* and its LF */
	S_LINE,       /* the first byte of a field line, or the CR of the empty line */
	S_NAME,
	S_VALUE,
	S_VALUE_LF,   /* a field line's LF */
	S_END_LF,     /* the empty line's LF: the head is whole */
	S_BODY,       /* h->body bytes to count past */
};

enum field { F_OTHER = 0, F_HOST, F_CL };

#define CL_DIGITS_MAX 15

static const char version[] = "HTTP/1.";

static bool is_tchar(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_ctl(uint8_t c)
{
	return c < 0x20 || c == 0x7f;
}

/* Why byte @c, which the state does not take, breaks the head: the controls have a reason
 * of their own wherever they are; anything else is the state's. */
static int bad_byte(uint8_t c, int fallback)
{
	if (c == '\n')
		return GW_HEAD_BARE_LF;
	if (is_ctl(c) && c != '\r' && c != '\t')
		return GW_HEAD_CONTROL;
	return fallback;
}

static bool buf_is(const struct gw_head *h, const char *s)
{
	size_t n = strlen(s);

	return h->len == n && n < sizeof(h->buf) && !memcmp(h->buf, s, n);
}

static void buf_add(struct gw_head *h, uint8_t c)
{
	if (h->len < sizeof(h->buf))
		h->buf[h->len] = (char)c;
	if (h->len < 255)
		h->len++;
}

void gw_head_init(struct gw_head *h)
{
	memset(h, 0, sizeof(*h));
}

/* A new message: forget the last one's fields. */
static void message_start(struct gw_head *h)
{
	h->minor = 0;
	h->hosts = 0;
	h->has_cl = h->cl_done = false;
	h->cl = 0;
	h->cl_digits = 0;
	h->body_method = false;
	h->len = 0;
}

/* The colon of a field line: which field it is, and whether it may be there. */
static int field_named(struct gw_head *h)
{
	h->field = F_OTHER;
	if (buf_is(h, "host")) {
		h->field = F_HOST;
		if (++h->hosts > 1)
			return GW_HEAD_HOST;
	} else if (buf_is(h, "content-length")) {
		if (h->has_cl)
			return GW_HEAD_CONTENT_LENGTH;
		h->has_cl = true;
		h->field = F_CL;
	} else if (buf_is(h, "transfer-encoding")) {
		return GW_HEAD_TRANSFER_ENCODING;
	}
	return GW_HEAD_OK;
}

/* One byte of a Content-Length value (not CR, LF or a control): digits, OWS around them. */
static int cl_byte(struct gw_head *h, uint8_t c)
{
	if (c == ' ' || c == '\t') {
		if (h->cl_digits)
			h->cl_done = true;
		return GW_HEAD_OK;
	}
	if (c < '0' || c > '9' || h->cl_done || h->cl_digits >= CL_DIGITS_MAX)
		return GW_HEAD_CONTENT_LENGTH;
	h->cl = h->cl * 10 + (uint64_t)(c - '0');
	h->cl_digits++;
	return GW_HEAD_OK;
}

/* The empty line's LF: the rules that need the whole head. */
static int head_done(struct gw_head *h)
{
	if (h->minor >= 1 && h->hosts != 1)
		return GW_HEAD_HOST;
	if (h->cl && !h->body_method)
		return GW_HEAD_BODY_METHOD;
	h->heads++;
	h->body = h->body_method ? h->cl : 0;
	h->st = h->body ? S_BODY : S_START;
	return GW_HEAD_OK;
}

/* One byte of a head (h->st is not S_BODY): GW_HEAD_OK or why it breaks the head. */
static int head_byte(struct gw_head *h, uint8_t c)
{
	switch (h->st) {
	case S_START:
		if (!is_tchar(c))
			return bad_byte(c, GW_HEAD_REQUEST_LINE);
		message_start(h);
		buf_add(h, c);
		h->st = S_METHOD;
		return GW_HEAD_OK;
	case S_METHOD:
		if (is_tchar(c)) {
			buf_add(h, c);
			return GW_HEAD_OK;
		}
		if (c != ' ')
			return bad_byte(c, GW_HEAD_REQUEST_LINE);
		/* evhttp reads a body for these alone (evhttp_method_may_have_body). */
		h->body_method = buf_is(h, "POST") || buf_is(h, "PUT") || buf_is(h, "PATCH");
		h->st = S_TARGET0;
		return GW_HEAD_OK;
	case S_TARGET0:
	case S_TARGET:
		if (c > ' ' && c < 0x7f) {
			h->st = S_TARGET;
			return GW_HEAD_OK;
		}
		if (c == ' ' && h->st == S_TARGET) {
			h->st = S_VERSION;
			h->vpos = 0;
			return GW_HEAD_OK;
		}
		return bad_byte(c, GW_HEAD_REQUEST_LINE);
	case S_VERSION:
		if ((char)c != version[h->vpos])
			return bad_byte(c, GW_HEAD_REQUEST_LINE);
		if (++h->vpos == sizeof(version) - 1)
			h->st = S_MINOR;
		return GW_HEAD_OK;
	case S_MINOR:
		if (c < '0' || c > '9')
			return bad_byte(c, GW_HEAD_REQUEST_LINE);
		h->minor = (uint8_t)(c - '0');
		h->st = S_RL_CR;
		return GW_HEAD_OK;
	case S_RL_CR:
		if (c != '\r')
			return bad_byte(c, GW_HEAD_REQUEST_LINE);
		h->st = S_RL_LF;
		return GW_HEAD_OK;
	case S_RL_LF:
	case S_VALUE_LF:
		if (c != '\n')
			return GW_HEAD_BARE_CR;
		h->st = S_LINE;
		return GW_HEAD_OK;
	case S_LINE:
		if (c == '\r') {
			h->st = S_END_LF;
			return GW_HEAD_OK;
		}
		if (c == ' ' || c == '\t')
			return GW_HEAD_OBS_FOLD;
		if (!is_tchar(c))
			return bad_byte(c, GW_HEAD_FIELD_NAME);
		h->len = 0;
		buf_add(h, (uint8_t)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
		h->st = S_NAME;
		return GW_HEAD_OK;
	case S_NAME:
		if (is_tchar(c)) {
			buf_add(h, (uint8_t)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
			return GW_HEAD_OK;
		}
		if (c != ':')
			return bad_byte(c, GW_HEAD_FIELD_NAME);
		h->st = S_VALUE;
		return field_named(h);
	case S_VALUE:
		if (c == '\r') {
			if (h->field == F_CL && !h->cl_digits)
				return GW_HEAD_CONTENT_LENGTH;
			h->st = S_VALUE_LF;
			return GW_HEAD_OK;
		}
		if (c != '\t' && is_ctl(c))
			return bad_byte(c, GW_HEAD_CONTROL);
		return h->field == F_CL ? cl_byte(h, c) : GW_HEAD_OK;
	case S_END_LF:
		if (c != '\n')
			return GW_HEAD_BARE_CR;
		return head_done(h);
	default:
		return GW_HEAD_REQUEST_LINE;
	}
}

size_t gw_head_feed(struct gw_head *h, const uint8_t *p, size_t n)
{
	size_t i = 0;

	if (h->bad)
		return 0;
	while (i < n) {
		int bad;

		if (h->st == S_BODY) {
			size_t take = n - i < h->body ? n - i : (size_t)h->body;

			i += take;
			h->body -= take;
			if (!h->body)
				h->st = S_START;
			continue;
		}
		bad = head_byte(h, p[i]);
		if (bad) {
			h->bad = (uint8_t)bad;
			return i;
		}
		i++;
	}
	return n;
}

bool gw_head_between(const struct gw_head *h)
{
	return !h->bad && h->st == S_START;
}

bool gw_head_mid_line(const struct gw_head *h)
{
	return h->st != S_START && h->st != S_LINE && h->st != S_BODY;
}

const char *gw_head_reason(int bad)
{
	static const char *const names[GW_HEAD__N] = {
		[GW_HEAD_OK] = "ok",
		[GW_HEAD_REQUEST_LINE] = "request_line",
		[GW_HEAD_BARE_LF] = "bare_lf",
		[GW_HEAD_BARE_CR] = "bare_cr",
		[GW_HEAD_CONTROL] = "control",
		[GW_HEAD_OBS_FOLD] = "obs_fold",
		[GW_HEAD_FIELD_NAME] = "field_name",
		[GW_HEAD_CONTENT_LENGTH] = "content_length",
		[GW_HEAD_BODY_METHOD] = "body_method",
		[GW_HEAD_TRANSFER_ENCODING] = "transfer_encoding",
		[GW_HEAD_HOST] = "host",
	};

	return bad >= 0 && bad < GW_HEAD__N ? names[bad] : "?";
}
