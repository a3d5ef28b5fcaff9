// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The counter store without a Redis server: the in-process GCRA table (peek, refund, clear,
 * a full table), the fallbacks when the configured Redis cannot be reached (fail open at
 * limit / N, fail closed at the static budget, the breaker), and the keyed hash. The Redis
 * paths against a real server are in tests/net/test_store.sh and test_counters.sh.
 */
#include "unit.h"

#include <string.h>

#include <event2/event.h>

#include "log.h"
#include "store.h"

struct answers {
	int n, admitted, refused;
	int last_answer;
	uint32_t last_retry_ms;
};

static void on_answer(void *arg, int allowed, uint32_t retry_ms, int answer)
{
	struct answers *a = arg;

	a->n++;
	if (allowed)
		a->admitted++;
	else
		a->refused++;
	a->last_answer = answer;
	a->last_retry_ms = retry_ms;
}

static struct sl_store *store_new(struct event_base *base, const char *redis, uint32_t nodes)
{
	struct sl_store_opts o = { .redis = redis, .timeout_ms = 5, .nodes = nodes,
				   .breaker_failures = 3, .breaker_open_ms = 60000,
				   .local_max_keys = 16 };
	char err[128];
	struct sl_store *s = sl_store_new(base, &o, err, sizeof(err));

	assert_non_null(s);
	return s;
}

/* Charge @n times (answers come back before the call returns here: no Redis). */
static void charge(struct sl_store *s, const struct sl_limit *l, const char *tenant,
		   const char *key, double cost, int n, struct answers *a)
{
	int i, before = a->n;

	for (i = 0; i < n; i++)
		sl_store_charge(s, l, tenant, key, cost, on_answer, a);
	assert_int_equal(a->n, before + n);
}

static void in_process_limits_exactly(void **state)
{
	struct event_base *base = event_base_new();
	struct sl_store *s = store_new(base, NULL, 1);
	struct sl_limit l = { .name = "t", .rate = 10, .burst = 3 };
	struct answers a = { 0 }, b = { 0 };
	struct sl_store_stats st;

	(void)state;
	charge(s, &l, "acme", "k", 1, 5, &a);
	assert_int_equal(a.admitted, 3);
	assert_int_equal(a.refused, 2);
	assert_int_equal(a.last_answer, SL_ANS_EXACT);
	/* One unit comes back every 100 ms: the refusal says so. */
	assert_in_range(a.last_retry_ms, 90, 101);
	/* Another tenant, another key: their own budgets. */
	charge(s, &l, "other", "k", 1, 3, &b);
	charge(s, &l, "acme", "k2", 1, 3, &b);
	assert_int_equal(b.admitted, 6);
	sl_store_get_stats(s, &st);
	assert_false(st.redis);
	assert_int_equal(st.calls, 11);
	assert_int_equal(st.exact, 11);
	sl_store_free(s);
	event_base_free(base);
}

static void peek_refund_and_clear(void **state)
{
	struct event_base *base = event_base_new();
	struct sl_store *s = store_new(base, NULL, 1);
	struct sl_limit l = { .name = "t", .rate = 0.001, .burst = 2 };
	struct answers a = { 0 };

	(void)state;
	charge(s, &l, "acme", "nobody", 0, 1, &a);
	assert_int_equal(a.admitted, 1); /* a peek at an unknown key */
	charge(s, &l, "acme", "k", 1, 2, &a);
	assert_int_equal(a.admitted, 3);
	memset(&a, 0, sizeof(a));
	charge(s, &l, "acme", "k", 0, 3, &a);
	assert_int_equal(a.refused, 3); /* the burst is spent: a peek says no... */
	charge(s, &l, "acme", "k", -1, 1, &a);
	assert_int_equal(a.admitted, 1); /* a refund is always taken */
	memset(&a, 0, sizeof(a));
	charge(s, &l, "acme", "k", 0, 2, &a);
	charge(s, &l, "acme", "k", 1, 1, &a);
	assert_int_equal(a.admitted, 3); /* ...charged nothing, and the refund gave one back */
	charge(s, &l, "acme", "k", 1, 1, &a);
	assert_int_equal(a.refused, 1);
	sl_store_clear(s, &l, "acme", "k");
	memset(&a, 0, sizeof(a));
	charge(s, &l, "acme", "k", 1, 3, &a);
	assert_int_equal(a.admitted, 2); /* cleared: a full burst again */
	sl_store_free(s);
	event_base_free(base);
}

static void a_full_table_keeps_answering(void **state)
{
	struct event_base *base = event_base_new();
	struct sl_store *s = store_new(base, NULL, 1);
	struct sl_limit l = { .name = "t", .rate = 0.001, .burst = 1 };
	struct answers a = { 0 };
	char key[32];
	int i;

	(void)state;
	/* 16 slots, 200 keys: new keys evict the least spent; every key's first charge passes. */
	for (i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		charge(s, &l, "acme", key, 1, 1, &a);
	}
	assert_int_equal(a.admitted, 200);
	/* The most recent key is still remembered, spent. */
	charge(s, &l, "acme", "key-199", 1, 1, &a);
	assert_int_equal(a.refused, 1);
	sl_store_free(s);
	event_base_free(base);
}

static void unreachable_redis_fails_open_at_limit_over_n(void **state)
{
	struct event_base *base = event_base_new();
	struct sl_store *s = store_new(base, "unix:/nonexistent/sluice-test.sock", 2);
	struct sl_limit l = { .name = "login_fail", .rate = 0.001, .burst = 4,
			      .fail = SL_FAIL_OPEN };
	struct answers a = { 0 };
	struct sl_store_stats st;

	(void)state;
	charge(s, &l, "acme", "pair", 1, 5, &a);
	assert_int_equal(a.admitted, 2); /* burst 4 across N = 2 nodes: 2 here */
	assert_int_equal(a.last_answer, SL_ANS_LOCAL);
	sl_store_get_stats(s, &st);
	assert_true(st.redis);
	assert_false(st.connected);
	assert_int_equal(st.breaker, SL_BREAKER_OPEN);
	assert_int_equal(st.fallback_local, 5);
	assert_int_equal(st.exact, 0);
	assert_true(st.short_circuits >= 2); /* once open, nothing is even tried */
	sl_store_free(s);
	event_base_free(base);
}

static void unreachable_redis_fails_closed_at_the_static_budget(void **state)
{
	struct event_base *base = event_base_new();
	struct sl_store *s = store_new(base, "unix:/nonexistent/sluice-test.sock", 2);
	struct sl_limit l = { .name = "tenant_logins", .rate = 1000, .burst = 1000,
			      .fail = SL_FAIL_CLOSED, .static_rate = 0.001, .static_burst = 3 };
	struct answers a = { 0 };
	struct sl_store_stats st;

	(void)state;
	charge(s, &l, "acme", "logins", 1, 10, &a);
	assert_int_equal(a.admitted, 3);
	assert_int_equal(a.last_answer, SL_ANS_STATIC);
	sl_store_get_stats(s, &st);
	assert_int_equal(st.fallback_static, 10);
	sl_store_free(s);
	event_base_free(base);
}

static void keyed_hash_is_fixed_width_and_separates_parts(void **state)
{
	uint8_t k1[32] = { 1 }, k2[32] = { 2 };
	const char *ab_c[2] = { "ab", "c" }, *a_bc[2] = { "a", "bc" };
	char h1[33], h2[33], h3[33], h4[33];

	(void)state;
	sl_store_hash(k1, ab_c, 2, h1);
	sl_store_hash(k1, ab_c, 2, h2);
	sl_store_hash(k1, a_bc, 2, h3);
	sl_store_hash(k2, ab_c, 2, h4);
	assert_int_equal(strlen(h1), 32);
	assert_string_equal(h1, h2);
	assert_string_not_equal(h1, h3); /* ("ab","c") is not ("a","bc") */
	assert_string_not_equal(h1, h4); /* another key, another hash */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(in_process_limits_exactly),
		cmocka_unit_test(peek_refund_and_clear),
		cmocka_unit_test(a_full_table_keeps_answering),
		cmocka_unit_test(unreachable_redis_fails_open_at_limit_over_n),
		cmocka_unit_test(unreachable_redis_fails_closed_at_the_static_budget),
		cmocka_unit_test(keyed_hash_is_fixed_width_and_separates_parts),
	};

	log_set_level(LOG_LVL_ERROR);
	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
