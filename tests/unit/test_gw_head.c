// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The raw request head: what passes, what is refused and where, byte by byte or whole. */
#include "unit.h"

#include "gw_head.h"

/* Feed @s whole; the bytes passed, and the reason in *@bad. */
static size_t feed(const char *s, int *bad)
{
	struct gw_head h;
	size_t n;

	gw_head_init(&h);
	n = gw_head_feed(&h, (const uint8_t *)s, strlen(s));
	*bad = h.bad;
	return n;
}

/* The same, one byte at a time: the verdict and where it falls must not depend on how the
 * bytes arrive. */
static size_t feed_bytewise(const char *s, int *bad)
{
	struct gw_head h;
	size_t i, n = strlen(s);

	gw_head_init(&h);
	for (i = 0; i < n; i++)
		if (gw_head_feed(&h, (const uint8_t *)s + i, 1) != 1)
			break;
	*bad = h.bad;
	return i;
}

static void passes(const char *s)
{
	int bad;

	if (feed(s, &bad) != strlen(s) || bad)
		fail_msg("refused (%s): %s", gw_head_reason(bad), s);
	if (feed_bytewise(s, &bad) != strlen(s) || bad)
		fail_msg("refused byte by byte (%s): %s", gw_head_reason(bad), s);
}

/* @s is refused for @why at the first byte of @at (a substring of @s; NULL: its end). */
static void refused(const char *s, int why, const char *at)
{
	size_t want = at ? (size_t)(strstr(s, at) - s) : strlen(s) - 1, got;
	int bad;

	assert_non_null(!at || strstr(s, at));
	got = feed(s, &bad);
	if (bad != why || got != want)
		fail_msg("%s: refused for %s at %zu, expected %s at %zu", s, gw_head_reason(bad),
			 got, gw_head_reason(why), want);
	got = feed_bytewise(s, &bad);
	if (bad != why || got != want)
		fail_msg("%s byte by byte: %s at %zu, expected %s at %zu", s, gw_head_reason(bad),
			 got, gw_head_reason(why), want);
}

static void well_formed_heads_pass(void **state)
{
	(void)state;
	passes("GET /token/validate HTTP/1.1\r\nHost: acme.test\r\n\r\n");
	passes("GET / HTTP/1.0\r\n\r\n");
	passes("GET http://acme.test/login?x=%20y HTTP/1.1\r\nhost: acme.test:8080\r\n"
	       "X-Forwarded-For: 192.0.2.1,\t198.51.100.2 \r\nX-Empty:\r\n\r\n");
	passes("POST /login HTTP/1.1\r\nHost: a\r\nContent-Length:  5 \r\n\r\nab\r\nc");
	passes("POST /login HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n");
	passes("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n");
	/* Values may hold obs-text (UTF-8 bytes) and tabs; names every tchar. */
	passes("GET / HTTP/1.1\r\nHost: a\r\nX-Name: caf\xc3\xa9\tok\r\n"
	       "!#$%&'*+-.^_`|~0aZ: v\r\n\r\n");
}

static void the_smuggling_forms_are_refused(void **state)
{
	(void)state;
	/* Two Content-Lengths, even equal ones; a sign; a list; blanks inside; none at all. */
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
		GW_HEAD_CONTENT_LENGTH, ": 6");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\ncontent-LENGTH: 5\r\n\r\n",
		GW_HEAD_CONTENT_LENGTH, ": 5\r\n\r\n");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n",
		GW_HEAD_CONTENT_LENGTH, "+5");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n",
		GW_HEAD_CONTENT_LENGTH, ", 5");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5 5\r\n\r\n",
		GW_HEAD_CONTENT_LENGTH, "5\r\n\r\n");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
		GW_HEAD_CONTENT_LENGTH, "-1");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n",
		GW_HEAD_CONTENT_LENGTH, "\r\n\r\n");
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1234567890123456\r\n\r\n",
		GW_HEAD_CONTENT_LENGTH, "6\r\n");
	/* Transfer-Encoding, with or without a Content-Length beside it. */
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
		GW_HEAD_TRANSFER_ENCODING, ": chunked");
	refused("POST / HTTP/1.1\r\nHost: a\r\ntransfer-encoding: identity\r\n\r\n",
		GW_HEAD_TRANSFER_ENCODING, ": identity");
	/* A body on a method evhttp reads none for: its bytes would be the next request. */
	refused("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", GW_HEAD_BODY_METHOD, NULL);
	/* HTTP/1.1 without Host; two Hosts on either version. */
	refused("GET / HTTP/1.1\r\nX: y\r\n\r\n", GW_HEAD_HOST, NULL);
	refused("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", GW_HEAD_HOST, ": b");
	refused("GET / HTTP/1.0\r\nHost: a\r\nHOST: a\r\n\r\n", GW_HEAD_HOST, ": a\r\n\r\n");
	/* obs-fold, bare LF, bare CR, NUL, other controls. */
	refused("GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n c\r\n\r\n", GW_HEAD_OBS_FOLD, " c");
	refused("GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n\tc\r\n\r\n", GW_HEAD_OBS_FOLD, "\tc");
	refused("GET / HTTP/1.1\nHost: a\r\n\r\n", GW_HEAD_BARE_LF, "\nHost");
	refused("GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", GW_HEAD_BARE_LF, "\nX");
	refused("GET / HTTP/1.1\r\nHost: a\r\n\n", GW_HEAD_BARE_LF, NULL);
	refused("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", GW_HEAD_BARE_CR, "X: b");
	refused("GET / HTTP/1.1\r\nHost: a\r\n\rX", GW_HEAD_BARE_CR, "X");
	{
		static const char nul[] = "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 1.2.3.4\0, 5\r\n\r\n";
		struct gw_head h;

		gw_head_init(&h);
		assert_int_equal(gw_head_feed(&h, (const uint8_t *)nul, sizeof(nul) - 1),
				 strlen(nul));
		assert_int_equal(h.bad, GW_HEAD_CONTROL);
	}
	refused("GET / HTTP/1.1\r\nHost: a\r\nX: \x01\r\n\r\n", GW_HEAD_CONTROL, "\x01");
	refused("GET / HTTP/1.1\r\nHost: a\r\nX: \x7f\r\n\r\n", GW_HEAD_CONTROL, "\x7f");
	/* Field names: whitespace before the colon, no colon, not a token. */
	refused("GET / HTTP/1.1\r\nHost : a\r\n\r\n", GW_HEAD_FIELD_NAME, " : a");
	refused("GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", GW_HEAD_FIELD_NAME, "\r\n\r\n");
	refused("GET / HTTP/1.1\r\nHost: a\r\n: v\r\n\r\n", GW_HEAD_FIELD_NAME, ": v");
	refused("GET / HTTP/1.1\r\nHost: a\r\nX(y): v\r\n\r\n", GW_HEAD_FIELD_NAME, "(y)");
}

static void request_lines_are_strict(void **state)
{
	(void)state;
	refused("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", GW_HEAD_REQUEST_LINE, "\r\nGET");
	refused("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", GW_HEAD_REQUEST_LINE, " / HTTP");
	refused("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", GW_HEAD_REQUEST_LINE, " \r\nHost");
	refused("GET /\r\n\r\n", GW_HEAD_REQUEST_LINE, "\r\n\r\n");
	refused("GET / HTTP/2.0\r\n\r\n", GW_HEAD_REQUEST_LINE, "2.0");
	refused("GET / http/1.1\r\n\r\n", GW_HEAD_REQUEST_LINE, "http");
	refused("GET / HTTP/1.10\r\n\r\n", GW_HEAD_REQUEST_LINE, "0\r\n");
	refused("GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", GW_HEAD_REQUEST_LINE, "\xc3");
	refused("GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", GW_HEAD_REQUEST_LINE, "\t/");
	refused("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", GW_HEAD_REQUEST_LINE, "(T");
}

/* Bodies are counted past, so each pipelined request is checked in its turn; a refusal
 * refuses everything after it. */
static void pipelined_requests_are_each_checked(void **state)
{
	static const char two[] = "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 16\r\n\r\n"
				  "GET / HTTP/1.1\r\n" /* the body: never read as a head */
				  "GET /b HTTP/1.1\r\nHost: a\r\n\r\n"
				  "GET /c HTTP/1.1\nHost: a\r\n\r\n";
	const char *third = strstr(two, "GET /c");
	size_t at = (size_t)(strchr(third, '\n') - two);
	struct gw_head h;

	(void)state;
	assert_int_equal(feed(two, &(int){ 0 }), at);
	/* Split anywhere, the same. */
	for (size_t cut = 0; cut < sizeof(two) - 1; cut++) {
		size_t a, b;

		gw_head_init(&h);
		a = gw_head_feed(&h, (const uint8_t *)two, cut);
		b = gw_head_feed(&h, (const uint8_t *)two + cut, sizeof(two) - 1 - cut);
		if (cut <= at) {
			assert_int_equal(a, cut);
			assert_int_equal(cut + b, at);
		} else {
			assert_int_equal(a, at);
			assert_int_equal(b, 0);
		}
		assert_int_equal(h.bad, GW_HEAD_BARE_LF);
		assert_int_equal(h.heads, 2);
		assert_int_equal(gw_head_feed(&h, (const uint8_t *)"GET", 3), 0);
	}
	/* Between messages, and inside a line. */
	gw_head_init(&h);
	assert_true(gw_head_between(&h));
	assert_false(gw_head_mid_line(&h));
	gw_head_feed(&h, (const uint8_t *)two, (size_t)(third - two));
	assert_true(gw_head_between(&h));
	gw_head_feed(&h, (const uint8_t *)third, 3);
	assert_false(gw_head_between(&h));
	assert_true(gw_head_mid_line(&h));
	gw_head_init(&h);
	gw_head_feed(&h, (const uint8_t *)"POST / HTTP/1.1\r\nHost: a\r\n", 26);
	assert_false(gw_head_mid_line(&h));
	gw_head_feed(&h, (const uint8_t *)"Content-Length: 3\r\n\r\nab", 23);
	assert_false(gw_head_mid_line(&h)); /* in the body */
	assert_false(gw_head_between(&h));
	gw_head_feed(&h, (const uint8_t *)"c", 1);
	assert_true(gw_head_between(&h));
	assert_string_equal(gw_head_reason(GW_HEAD_OBS_FOLD), "obs_fold");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(well_formed_heads_pass),
		cmocka_unit_test(the_smuggling_forms_are_refused),
		cmocka_unit_test(request_lines_are_strict),
		cmocka_unit_test(pipelined_requests_are_each_checked),
	};

	return cmocka_run_group_tests_name("gw_head", tests, NULL, NULL);
}
