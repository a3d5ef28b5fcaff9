// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* An account's usual sources: what makes one usual, for how long, for whom, at which level. */
#include "unit.h"

#include "gw_usual.h"

#define DAY 86400u
#define T0 1000000u

static const uint8_t key[16] = { 9, 8, 7 };

static struct gw_addr ip(const char *s)
{
	struct gw_addr a;

	assert_int_equal(gw_addr_parse(s, strlen(s), &a), 0);
	return a;
}

static bool is(struct gw_usual *u, const char *tenant, const char *acct, const char *addr,
	       unsigned plen, int level, uint32_t now)
{
	struct gw_addr a = ip(addr);

	return gw_usual_is(u, tenant, acct, strlen(acct), &a, plen, level, now);
}

static void rec(struct gw_usual *u, const char *tenant, const char *acct, const char *addr,
		unsigned plen, int level, uint32_t now)
{
	struct gw_addr a = ip(addr);

	gw_usual_record(u, tenant, acct, strlen(acct), &a, plen, level, now);
}

static void a_sign_in_makes_its_prefix_usual_for_that_account_only(void **state)
{
	struct gw_usual u;

	(void)state;
	assert_int_equal(gw_usual_init(&u, 1024, 0, key), 0);
	assert_false(is(&u, "acme", "alice", "192.0.2.10", 24, GW_USUAL_PASSWORD, T0));
	rec(&u, "acme", "alice", "192.0.2.10", 24, GW_USUAL_PASSWORD, T0);
	/* The whole /24 is her usual allocation, nothing outside it. */
	assert_true(is(&u, "acme", "alice", "192.0.2.10", 24, GW_USUAL_PASSWORD, T0 + 1));
	assert_true(is(&u, "acme", "alice", "192.0.2.200", 24, GW_USUAL_PASSWORD, T0 + 1));
	assert_false(is(&u, "acme", "alice", "192.0.3.10", 24, GW_USUAL_PASSWORD, T0 + 1));
	/* The same address at another length is another source: the /32 was not recorded. */
	assert_false(is(&u, "acme", "alice", "192.0.2.10", 32, GW_USUAL_PASSWORD, T0 + 1));
	/* Another account, the same account in another tenant, a longer name: not usual. */
	assert_false(is(&u, "acme", "bob", "192.0.2.10", 24, GW_USUAL_PASSWORD, T0 + 1));
	assert_false(is(&u, "globex", "alice", "192.0.2.10", 24, GW_USUAL_PASSWORD, T0 + 1));
	assert_false(is(&u, "acme", "alice2", "192.0.2.10", 24, GW_USUAL_PASSWORD, T0 + 1));
	/* A password sign-in is not a second factor. */
	assert_false(is(&u, "acme", "alice", "192.0.2.10", 24, GW_USUAL_MFA, T0 + 1));
	assert_int_equal(u.recorded, 1);
	gw_usual_free(&u);
}

static void a_second_factor_is_both_levels(void **state)
{
	struct gw_usual u;

	(void)state;
	assert_int_equal(gw_usual_init(&u, 1024, 0, key), 0);
	rec(&u, "acme", "alice", "2001:db8:1:2::5", 48, GW_USUAL_MFA, T0);
	assert_true(is(&u, "acme", "alice", "2001:db8:1:ffff::1", 48, GW_USUAL_MFA, T0));
	assert_true(is(&u, "acme", "alice", "2001:db8:1::9", 48, GW_USUAL_PASSWORD, T0));
	assert_false(is(&u, "acme", "alice", "2001:db8:2::9", 48, GW_USUAL_PASSWORD, T0));
	/* An IPv4 address is not the IPv6 prefix with the same leading bytes. */
	assert_false(is(&u, "acme", "alice", "32.1.13.184", 24, GW_USUAL_PASSWORD, T0));
	gw_usual_free(&u);
}

static void a_source_stops_being_usual_a_ttl_after_its_last_sign_in(void **state)
{
	struct gw_usual u;

	(void)state;
	assert_int_equal(gw_usual_init(&u, 1024, 0, key), 0);
	assert_int_equal(u.ttl_s, GW_USUAL_TTL_S);
	rec(&u, "acme", "alice", "198.51.100.7", 32, GW_USUAL_PASSWORD, T0);
	assert_true(is(&u, "acme", "alice", "198.51.100.7", 32, GW_USUAL_PASSWORD,
		       T0 + GW_USUAL_TTL_S - 1));
	assert_false(is(&u, "acme", "alice", "198.51.100.7", 32, GW_USUAL_PASSWORD,
			T0 + GW_USUAL_TTL_S));
	/* Each sign-in starts the time again. */
	rec(&u, "acme", "alice", "198.51.100.7", 32, GW_USUAL_PASSWORD, T0 + 20 * DAY);
	assert_true(is(&u, "acme", "alice", "198.51.100.7", 32, GW_USUAL_PASSWORD,
		       T0 + 45 * DAY));
	/* The second factor has its own time: a later password sign-in does not extend it. */
	rec(&u, "acme", "carol", "198.51.100.8", 32, GW_USUAL_MFA, T0);
	rec(&u, "acme", "carol", "198.51.100.8", 32, GW_USUAL_PASSWORD, T0 + 29 * DAY);
	assert_false(is(&u, "acme", "carol", "198.51.100.8", 32, GW_USUAL_MFA, T0 + 31 * DAY));
	assert_true(is(&u, "acme", "carol", "198.51.100.8", 32, GW_USUAL_PASSWORD,
		       T0 + 31 * DAY));
	gw_usual_free(&u);
}

/* One set: the source after the set's last way forgets the one signed in from longest ago. */
static void a_full_set_forgets_the_oldest_sign_in(void **state)
{
	struct gw_usual u;
	char a[32];
	int i;

	(void)state;
	assert_int_equal(gw_usual_init(&u, GW_USUAL_WAYS, 0, key), 0);
	assert_int_equal(u.sets, 1);
	for (i = 0; i < GW_USUAL_WAYS; i++) {
		snprintf(a, sizeof(a), "203.0.113.%d", i + 1);
		rec(&u, "acme", "dave", a, 32, GW_USUAL_PASSWORD, T0 + 10 * (uint32_t)i);
	}
	/* The first is refreshed: the second is now the oldest. */
	rec(&u, "acme", "dave", "203.0.113.1", 32, GW_USUAL_PASSWORD, T0 + 1000);
	assert_int_equal(u.evictions, 0);
	rec(&u, "acme", "dave", "203.0.113.200", 32, GW_USUAL_PASSWORD, T0 + 1001);
	assert_int_equal(u.evictions, 1);
	assert_false(is(&u, "acme", "dave", "203.0.113.2", 32, GW_USUAL_PASSWORD, T0 + 1002));
	assert_true(is(&u, "acme", "dave", "203.0.113.1", 32, GW_USUAL_PASSWORD, T0 + 1002));
	assert_true(is(&u, "acme", "dave", "203.0.113.3", 32, GW_USUAL_PASSWORD, T0 + 1002));
	assert_true(is(&u, "acme", "dave", "203.0.113.200", 32, GW_USUAL_PASSWORD, T0 + 1002));
	gw_usual_free(&u);
}

static void nothing_is_usual_without_a_table_or_an_address(void **state)
{
	struct gw_usual u;
	struct gw_addr none = { 0 };

	(void)state;
	assert_false(gw_usual_is(NULL, "acme", "alice", 5, &none, 24, GW_USUAL_PASSWORD, T0));
	assert_int_equal(gw_usual_init(&u, 64, 0, key), 0);
	gw_usual_record(&u, "acme", "alice", 5, &none, 24, GW_USUAL_PASSWORD, T0);
	assert_int_equal(u.recorded, 0);
	assert_false(gw_usual_is(&u, "acme", "alice", 5, &none, 24, GW_USUAL_PASSWORD, T0));
	/* A table keyed otherwise knows nothing of this one's entries. */
	rec(&u, "acme", "alice", "192.0.2.1", 24, GW_USUAL_PASSWORD, T0);
	{
		static const uint8_t other[16] = { 1 };
		struct gw_usual v;

		assert_int_equal(gw_usual_init(&v, 64, 0, other), 0);
		memcpy(v.e, u.e, (size_t)u.sets * GW_USUAL_WAYS * sizeof(*u.e));
		assert_false(is(&v, "acme", "alice", "192.0.2.1", 24, GW_USUAL_PASSWORD, T0));
		gw_usual_free(&v);
	}
	gw_usual_free(&u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_sign_in_makes_its_prefix_usual_for_that_account_only),
		cmocka_unit_test(a_second_factor_is_both_levels),
		cmocka_unit_test(a_source_stops_being_usual_a_ttl_after_its_last_sign_in),
		cmocka_unit_test(a_full_set_forgets_the_oldest_sign_in),
		cmocka_unit_test(nothing_is_usual_without_a_table_or_an_address),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
