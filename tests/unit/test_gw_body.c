// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Login and introspection bodies: JSON and form, strict, bounded, UTF-8 only. */
#include "unit.h"

#include <errno.h>

#include "gw_body.h"

static char user[GW_USER_MAX + 1], pass[64];
static char err[160];

/* Parse @body as @type into user/pass; returns the parser's result. */
static int parse(int type, const char *body)
{
	struct gw_field f[2] = {
		{ .name = "username", .buf = user, .cap = sizeof(user) },
		{ .name = "password", .buf = pass, .cap = sizeof(pass) },
	};
	int r = gw_body_fields(type, body, strlen(body), f, 2, err, sizeof(err));

	if (!r && (!f[0].found || !f[1].found))
		return 1;
	return r;
}

static void content_types(void **state)
{
	(void)state;
	assert_int_equal(gw_body_type("application/json"), GW_BODY_JSON);
	assert_int_equal(gw_body_type("Application/JSON; charset=utf-8"), GW_BODY_JSON);
	assert_int_equal(gw_body_type("application/x-www-form-urlencoded"), GW_BODY_FORM);
	assert_int_equal(gw_body_type("application/json; charset=latin1"), GW_BODY_OTHER);
	assert_int_equal(gw_body_type("text/plain"), GW_BODY_OTHER);
	assert_int_equal(gw_body_type(NULL), GW_BODY_OTHER);
}

static void json_bodies(void **state)
{
	(void)state;
	assert_int_equal(parse(GW_BODY_JSON, "{\"username\":\"alice\",\"password\":\"s3cret\"}"),
			 0);
	assert_string_equal(user, "alice");
	assert_string_equal(pass, "s3cret");
	/* Escapes, a surrogate pair, other members of every type, whitespace. */
	assert_int_equal(parse(GW_BODY_JSON, " { \"x\": [ ] , \"username\" : \"\\u00e9l\\u00e8ve\","
			       "\"password\":\"a\\\"b\\\\c\\ud83d\\ude00\"}"), -EINVAL);
	assert_int_equal(parse(GW_BODY_JSON, " { \"n\": -1.5e3, \"t\": true, \"z\": null, "
			       "\"username\" : \"\\u00e9l\\u00e8ve\","
			       "\"password\":\"a\\\"b\\\\c\\ud83d\\ude00\"}\n"), 0);
	assert_string_equal(user, "\xc3\xa9l\xc3\xa8ve");
	assert_string_equal(pass, "a\"b\\c\xf0\x9f\x98\x80");
}

static void bad_json_is_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{\"username\":\"a\",\"password\":\"b\"",
		"{\"username\":\"a\",\"password\":\"b\"} x",
		"{\"username\":\"a\" \"password\":\"b\"}",
		"{\"username\":1,\"password\":\"b\"}",
		"{\"username\":\"a\",\"username\":\"b\",\"password\":\"c\"}",
		"{\"username\":\"a\",\"password\":{\"x\":1}}",
		"{\"username\":\"a\\x\",\"password\":\"b\"}",
		"{\"username\":\"a\\ud800\",\"password\":\"b\"}",   /* lone surrogate */
		"{\"username\":\"a\\u0000\",\"password\":\"b\"}",   /* NUL */
		"{\"username\":\"a\tb\",\"password\":\"b\"}",        /* raw control char */
		"{\"username\":\"\xff\",\"password\":\"b\"}",        /* not UTF-8 */
		"{\"username\":\"\xc0\xaf\",\"password\":\"b\"}",    /* overlong */
		"{\"username\":\"a\",\"password\":\"0123456789012345678901234567890123456789"
		"0123456789012345678901234567890123456789\"}",        /* longer than its buffer */
		"{\"n\":01,\"username\":\"a\",\"password\":\"b\"}",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(GW_BODY_JSON, bad[i]) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
		assert_true(err[0] != '\0');
	}
}

static void form_bodies(void **state)
{
	(void)state;
	assert_int_equal(parse(GW_BODY_FORM, "username=bob&password=p%40ss+word&x=1"), 0);
	assert_string_equal(user, "bob");
	assert_string_equal(pass, "p@ss word");
	assert_int_equal(parse(GW_BODY_FORM, "password=&username=%C3%A9"), 0);
	assert_string_equal(user, "\xc3\xa9");
	assert_string_equal(pass, "");
	assert_int_equal(parse(GW_BODY_FORM, "username=bob"), 1); /* missing password */
	assert_int_equal(parse(GW_BODY_FORM, "username=bob&password=%"), -EINVAL);
	assert_int_equal(parse(GW_BODY_FORM, "username=bob&password=%4"), -EINVAL);
	assert_int_equal(parse(GW_BODY_FORM, "username=%ZZ&password=x"), -EINVAL);
	assert_int_equal(parse(GW_BODY_FORM, "username=%FF&password=x"), -EINVAL);
	assert_string_equal(err, "field 'username' is not valid UTF-8");
	assert_int_equal(parse(GW_BODY_FORM, "username=a%00b&password=x"), -EINVAL);
	assert_int_equal(parse(GW_BODY_FORM, "username=a&username=b&password=x"), -EINVAL);
	assert_int_equal(parse(GW_BODY_OTHER, "username=a&password=b"), -EINVAL);
}

static void account_names(void **state)
{
	char big[GW_USER_MAX + 2];

	(void)state;
	assert_true(gw_account_valid("alice", 5));
	/* The set: ASCII letters (either case), digits, . _ - + @; first a letter or digit. */
	assert_true(gw_account_valid("Alice.Smith+tag@Example-1.test", 30));
	assert_true(gw_account_valid("0_a", 3));
	/* Not UTF-8 beyond ASCII: no homoglyphs, nothing to normalise (docs/endpoints.md).
	 * This assertion was true before issue 14 (item 7) chose the set. */
	assert_false(gw_account_valid("\xc3\xa9l\xc3\xa8ve", 7));
	assert_false(gw_account_valid("b\xd0\xbe" "b", 4));   /* Cyrillic o: looks like "bob" */
	assert_false(gw_account_valid("", 0));
	assert_false(gw_account_valid("a,b", 3));
	assert_false(gw_account_valid("a\nb", 3));
	assert_false(gw_account_valid("a\x7f", 2));
	assert_false(gw_account_valid("\xed\xa0\x80", 3)); /* encoded surrogate */
	assert_false(gw_account_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
	assert_false(gw_account_valid("\xe2\x82", 2)); /* truncated */
	/* What the issue's forged records were made of. */
	assert_false(gw_account_valid("mallory kind=reset_link to=bob", 30));
	assert_false(gw_account_valid("x\xe2\x80\xa8y", 5));   /* U+2028 */
	assert_false(gw_account_valid("x\xe2\x80\xa9y", 5));   /* U+2029 */
	assert_false(gw_account_valid("x\xc2\x85y", 4));       /* U+0085 */
	assert_false(gw_account_valid("x\ry", 3));
	assert_false(gw_account_valid("x\ty", 3));
	assert_false(gw_account_valid("x=y", 3));
	assert_false(gw_account_valid("x\"y", 3));
	assert_false(gw_account_valid("x'y", 3));
	assert_false(gw_account_valid("x\\y", 3));
	assert_false(gw_account_valid("x/y", 3));
	assert_false(gw_account_valid("x#", 2));
	/* The first character: no option-looking or dotted names. */
	assert_false(gw_account_valid("-rf", 3));
	assert_false(gw_account_valid(".a", 2));
	assert_false(gw_account_valid("@a", 2));
	assert_false(gw_account_valid("+a", 2));
	assert_false(gw_account_valid("_a", 2));
	/* The length, and the length given rather than a NUL. */
	memset(big, 'a', sizeof(big));
	assert_true(gw_account_valid(big, GW_USER_MAX));
	assert_false(gw_account_valid(big, GW_USER_MAX + 1));
	assert_false(gw_account_valid("ab\0c", 4));
	assert_true(gw_account_valid("ab\0c", 2));
}

/* Escape @in (n bytes) with @flags into a buffer of @cap and compare with @want. */
static void esc_is(const char *in, size_t n, unsigned flags, size_t cap, const char *want)
{
	char out[256];
	size_t len;

	assert_true(cap <= sizeof(out));
	memset(out, 'Z', sizeof(out));
	len = gw_esc(out, cap, in, n, flags);
	assert_string_equal(out, want);
	assert_int_equal(len, strlen(want));
	assert_true(len < cap);
}

static void escaping(void **state)
{
	static const char all_controls[] = "\x01\x02\x1f\x7f";
	char in[256], out[GW_ESC_LEN(256)];
	size_t i, len;

	(void)state;
	esc_is("alice", 5, 0, 64, "alice");
	esc_is("a b", 3, 0, 64, "a\\x20b");
	esc_is("a b", 3, GW_ESC_SPACE, 64, "a b");
	esc_is("a\nb\rc\td", 7, GW_ESC_SPACE, 64, "a\\x0ab\\x0dc\\x09d");
	esc_is(all_controls, 4, 0, 64, "\\x01\\x02\\x1f\\x7f");
	esc_is("a\0b", 3, 0, 64, "a\\x00b");
	/* The issue's line breaks beyond ASCII, and a bidi override, never survive. */
	esc_is("x\xe2\x80\xa8y", 5, GW_ESC_SPACE, 64, "x\\xe2\\x80\\xa8y");
	esc_is("x\xe2\x80\xa9y", 5, 0, 64, "x\\xe2\\x80\\xa9y");
	esc_is("x\xc2\x85y", 4, 0, 64, "x\\xc2\\x85y");
	esc_is("\xe2\x80\xae", 3, 0, 64, "\\xe2\\x80\\xae");
	/* Escapes themselves are escaped, so an escaped field reads back one way only; and the
	 * quotes messages put around a field. */
	esc_is("a\\x0ab", 6, 0, 64, "a\\x5cx0ab");
	esc_is("'\"", 2, 0, 64, "\\x27\\x22");
	/* Cut between escapes, never inside one; always NUL-terminated. */
	esc_is("abc", 3, 0, 3, "ab");
	esc_is("a\nb", 3, 0, 5, "a");
	esc_is("a\nb", 3, 0, 6, "a\\x0a");
	esc_is("\n", 1, 0, 4, "");
	esc_is("abc", 3, 0, 1, "");
	/* Every byte: the output is printable ASCII only, and exactly 4 bytes per escape. */
	for (i = 0; i < 256; i++)
		in[i] = (char)i;
	len = gw_esc(out, sizeof(out), in, sizeof(in), 0);
	for (i = 0; i < len; i++)
		assert_true(out[i] > 0x20 && out[i] < 0x7f);
	/* 0x21..0x7e are 94 bytes, 3 of them escaped: 91 plain, 165 escaped */
	assert_int_equal(len, 91 + 4 * 165);
	len = gw_esc(out, sizeof(out), in, sizeof(in), GW_ESC_SPACE);
	assert_int_equal(len, 92 + 4 * 164);
	assert_non_null(memchr(out, ' ', len));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(content_types),
		cmocka_unit_test(json_bodies),
		cmocka_unit_test(bad_json_is_refused),
		cmocka_unit_test(form_bodies),
		cmocka_unit_test(account_names),
		cmocka_unit_test(escaping),
	};

	return cmocka_run_group_tests_name("gw_body", tests, NULL, NULL);
}
