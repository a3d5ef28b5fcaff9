/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The raw request head, checked byte by byte before evhttp parses it. evhttp normalises what
 * it reads: it takes a bare LF for CRLF, folds an obs-fold line into the field above it,
 * keeps every copy of a repeated field and answers by the first, reads "+5" as a
 * Content-Length of 5, cuts a value at a NUL, reads no body on a GET that announces one (so
 * the body is the next request), and serves an HTTP/1.1 request without Host. Each is a way
 * for two parsers in a chain, a proxy and this gateway, to read one byte stream as different
 * requests. So every byte a connection sends goes through this checker first, in order, and
 * only heads that every RFC 9112 reader reads alike get through:
 *
 *   - the request line: METHOD SP TARGET SP HTTP/1.x CRLF, one space each, the method a
 *     token, the target visible ASCII, nothing before it (not even an empty line);
 *   - field lines: NAME ":" OWS VALUE OWS CRLF, the name a token with nothing between it and
 *     the colon, no line starting with whitespace (obs-fold);
 *   - CRLF only: no bare LF, no bare CR, no NUL or other control (HTAB in values only);
 *   - Content-Length: at most one line, 1..15 digits and nothing else (no sign, no list);
 *     not above 0 on a method evhttp reads no body for (anything but POST, PUT and PATCH);
 *   - no Transfer-Encoding at all: the gateway reads no chunked bodies (send Content-Length);
 *   - Host: exactly one on HTTP/1.1, at most one on HTTP/1.0.
 *
 * A body is counted past by its Content-Length, not read, so each pipelined request is
 * checked in its turn. The first byte that breaks a rule ends the connection: everything from
 * there on is refused (gw_conn.c makes evhttp answer 400 with Connection: close). Pure: no
 * I/O, no allocation, constant state per connection (tests/unit/test_gw_head.c).
 */
#ifndef SLUICE_GW_HEAD_H
#define SLUICE_GW_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gw_head_bad {
	GW_HEAD_OK = 0,
	GW_HEAD_REQUEST_LINE,      /* not METHOD SP TARGET SP HTTP/1.x */
	GW_HEAD_BARE_LF,           /* a line ended by LF alone */
	GW_HEAD_BARE_CR,           /* a CR not followed by LF */
	GW_HEAD_CONTROL,           /* a NUL or another control character in a line */
	GW_HEAD_OBS_FOLD,          /* a field line starting with whitespace */
	GW_HEAD_FIELD_NAME,        /* not a token, whitespace before the colon, or no colon */
	GW_HEAD_CONTENT_LENGTH,    /* repeated, a list, a sign, empty, not digits, too long */
	GW_HEAD_BODY_METHOD,       /* a Content-Length above 0 on a method without a body */
	GW_HEAD_TRANSFER_ENCODING, /* any Transfer-Encoding */
	GW_HEAD_HOST,              /* no Host on HTTP/1.1, or more than one */
	GW_HEAD__N
};

struct gw_head {
	uint8_t st;                /* where in a message (gw_head.c) */
	uint8_t bad;               /* enum gw_head_bad: once set, every byte is refused */
	uint8_t minor;             /* HTTP/1.minor of the message being read */
	uint8_t field;             /* which field the current line is (gw_head.c) */
	uint8_t vpos;              /* bytes of "HTTP/1." matched */
	uint8_t len;               /* bytes of the method, or of the field name, so far (capped) */
	uint8_t cl_digits;
	bool body_method;          /* the method may carry a body (POST, PUT, PATCH) */
	bool has_cl, cl_done;      /* a Content-Length line; its digits ended (OWS after) */
	uint8_t hosts;
	char buf[20];              /* the method, or the field name lowercased (first bytes) */
	uint64_t cl;               /* the Content-Length */
	uint64_t body;             /* body bytes still to count past */
	uint64_t heads;            /* heads passed whole */
};

void gw_head_init(struct gw_head *h);

/*
 * Check the next @n bytes of the connection. Returns how many of them may be passed on: @n,
 * or the offset of the first byte that breaks a rule (h->bad says which); every later byte,
 * in this call or another, is refused (0).
 */
size_t gw_head_feed(struct gw_head *h, const uint8_t *p, size_t n);

/* Nothing of a next request has arrived: before the first, or after a whole one. */
bool gw_head_between(const struct gw_head *h);
/* The bytes passed end inside a line of a head: not at a line's start, not in a body. */
bool gw_head_mid_line(const struct gw_head *h);
/* A name for @bad ("bare_lf", ...), for counters and logs. */
const char *gw_head_reason(int bad);

#endif
