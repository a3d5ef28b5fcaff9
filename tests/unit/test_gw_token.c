// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Session tokens: round trip, expiry, forgery, truncation, v1 tokens, key files. */
#include "unit.h"

#include <errno.h>
#include <sodium.h>

#include "gw_token.h"

static uint8_t key[GW_TOKEN_KEY_BYTES];

static int setup(void **state)
{
	(void)state;
	if (sodium_init() < 0)
		return -1;
	randombytes_buf(key, sizeof(key));
	return 0;
}

static void round_trip(void **state)
{
	struct gw_token_claims c;
	char tok[GW_TOKEN_MAX + 1];
	int n;

	(void)state;
	n = gw_token_issue(key, "acme", "\xc3\xa9l\xc3\xa8ve", 1000123456789ull, 60,
			   0x0123456789abcdefull, tok, sizeof(tok));
	assert_true(n > 0 && n <= GW_TOKEN_MAX);
	assert_int_equal(strncmp(tok, "v2.", 3), 0);
	assert_int_equal(gw_token_check(key, tok, (size_t)n, 1059, &c), 0);
	assert_string_equal(c.tenant, "acme");
	assert_string_equal(c.account, "\xc3\xa9l\xc3\xa8ve");
	assert_int_equal(c.version, 2);
	assert_int_equal(c.iat, 1000);
	assert_int_equal(c.iat_ns, 1000123456789ull);
	assert_int_equal(c.exp, 1060);
	assert_int_equal(c.stamp, 0x0123456789abcdefull);
	assert_int_equal(gw_token_check(key, tok, (size_t)n, 1060, &c), -ETIMEDOUT);
	/* The longest names fit. */
	{
		char acct[GW_USER_MAX + 1];

		memset(acct, 'a', GW_USER_MAX);
		acct[GW_USER_MAX] = '\0';
		n = gw_token_issue(key, "0123456789012345678901234567890", acct, 1000000000ull, 1,
				   ~0ull, tok, sizeof(tok));
		assert_true(n > 0);
		assert_int_equal(gw_token_check(key, tok, (size_t)n, 1, &c), 0);
		assert_string_equal(c.account, acct);
	}
}

static void forgeries_fail(void **state)
{
	struct gw_token_claims c;
	char tok[GW_TOKEN_MAX + 1], bad[GW_TOKEN_MAX + 1];
	uint8_t other[GW_TOKEN_KEY_BYTES];
	int n, i;

	(void)state;
	n = gw_token_issue(key, "acme", "alice", 1000000000000ull, 60, 7, tok, sizeof(tok));
	randombytes_buf(other, sizeof(other));
	assert_int_equal(gw_token_check(other, tok, (size_t)n, 1001, &c), -EBADMSG);
	/* Any single changed character breaks it. */
	for (i = 3; i < n; i++) {
		if (tok[i] == '.')
			continue;
		memcpy(bad, tok, (size_t)n + 1);
		bad[i] = bad[i] == 'A' ? 'B' : 'A';
		if (gw_token_check(key, bad, (size_t)n, 1001, &c) == 0)
			fail_msg("token with character %d changed was accepted", i);
	}
	/* Truncations, a missing MAC, the wrong version, empty, oversized. */
	for (i = 0; i < n; i++)
		assert_int_not_equal(gw_token_check(key, tok, (size_t)i, 1001, &c), 0);
	/* Another version's prefix on these bytes: signed with the prefix, so refused. */
	memcpy(bad, tok, (size_t)n + 1);
	bad[1] = '1';
	assert_int_equal(gw_token_check(key, bad, (size_t)n, 1001, &c), -EBADMSG);
	bad[1] = '3';
	assert_int_equal(gw_token_check(key, bad, (size_t)n, 1001, &c), -EBADMSG);
	assert_int_equal(gw_token_check(key, "", 0, 1001, &c), -EBADMSG);
	memset(bad, 'A', sizeof(bad));
	assert_int_equal(gw_token_check(key, bad, sizeof(bad), 1001, &c), -EBADMSG);
}

/* A v1 token as the gateway issued them before v2: exp, iat (s), nonce, tenant, account,
 * MAC over "v1." and those. */
static int v1_token(const char *tenant, const char *account, uint64_t iat, uint64_t exp,
		    char *out, size_t n)
{
	uint8_t p[256], m[crypto_auth_BYTES];
	size_t len = 0, tl = strlen(tenant), al = strlen(account), o;
	crypto_auth_hmacsha512256_state st;
	int i;

	for (i = 7; i >= 0; i--, exp >>= 8)
		p[i] = (uint8_t)exp;
	for (i = 15; i >= 8; i--, iat >>= 8)
		p[i] = (uint8_t)iat;
	randombytes_buf(p + 16, 8);
	len = 24;
	p[len++] = (uint8_t)tl;
	memcpy(p + len, tenant, tl);
	len += tl;
	p[len++] = (uint8_t)al;
	memcpy(p + len, account, al);
	len += al;
	crypto_auth_hmacsha512256_init(&st, key, sizeof(key));
	crypto_auth_hmacsha512256_update(&st, (const uint8_t *)"v1.", 3);
	crypto_auth_hmacsha512256_update(&st, p, len);
	crypto_auth_hmacsha512256_final(&st, m);
	memcpy(out, "v1.", 3);
	sodium_bin2base64(out + 3, n - 3, p, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	o = strlen(out);
	out[o++] = '.';
	sodium_bin2base64(out + o, n - o, m, sizeof(m), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	return (int)strlen(out);
}

/* v1 tokens still check, with no stamp: the gateway decides where that is enough. */
static void v1_tokens_check_without_a_stamp(void **state)
{
	struct gw_token_claims c;
	char tok[GW_TOKEN_MAX + 1];
	int n;

	(void)state;
	n = v1_token("acme", "ci-bot", 1000, 1060, tok, sizeof(tok));
	assert_int_equal(gw_token_check(key, tok, (size_t)n, 1059, &c), 0);
	assert_int_equal(c.version, 1);
	assert_int_equal(c.stamp, 0);
	assert_int_equal(c.iat, 1000);
	assert_int_equal(c.iat_ns, 1000000000000ull);
	assert_string_equal(c.account, "ci-bot");
	assert_int_equal(gw_token_check(key, tok, (size_t)n, 1060, &c), -ETIMEDOUT);
	/* Its bytes under the v2 prefix are not a v2 token. */
	tok[1] = '2';
	assert_int_equal(gw_token_check(key, tok, (size_t)n, 1001, &c), -EBADMSG);
}

static void key_files(void **state)
{
	uint8_t k[GW_TOKEN_KEY_BYTES];
	char e[200];
	const char *p;

	(void)state;
	p = tmpfile_with("key", "00112233445566778899aabbccddeeff"
			 "00112233445566778899AABBCCDDEEFF\n");
	assert_int_equal(gw_token_key_load(p, k, e, sizeof(e)), 0);
	assert_int_equal(k[0], 0x00);
	assert_int_equal(k[31], 0xff);
	unlink(p);
	p = tmpfile_with("key", "0011\n");
	assert_int_equal(gw_token_key_load(p, k, e, sizeof(e)), -EINVAL);
	assert_contains(e, "64 hex characters");
	unlink(p);
	p = tmpfile_with("key", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeffaa");
	assert_int_equal(gw_token_key_load(p, k, e, sizeof(e)), -EINVAL);
	unlink(p);
	assert_int_equal(gw_token_key_load("/nonexistent/key", k, e, sizeof(e)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(forgeries_fail),
		cmocka_unit_test(v1_tokens_check_without_a_stamp),
		cmocka_unit_test(key_files),
	};

	return cmocka_run_group_tests_name("gw_token", tests, setup, NULL);
}
