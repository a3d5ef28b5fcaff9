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
	(void)state;
	assert_true(gw_account_valid("alice", 5));
	assert_true(gw_account_valid("\xc3\xa9l\xc3\xa8ve", 7));
	assert_false(gw_account_valid("", 0));
	assert_false(gw_account_valid("a,b", 3));
	assert_false(gw_account_valid("a\nb", 3));
	assert_false(gw_account_valid("a\x7f", 2));
	assert_false(gw_account_valid("\xed\xa0\x80", 3)); /* encoded surrogate */
	assert_false(gw_account_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
	assert_false(gw_account_valid("\xe2\x82", 2)); /* truncated */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(content_types),
		cmocka_unit_test(json_bodies),
		cmocka_unit_test(bad_json_is_refused),
		cmocka_unit_test(form_bodies),
		cmocka_unit_test(account_names),
	};

	return cmocka_run_group_tests_name("gw_body", tests, NULL, NULL);
}
