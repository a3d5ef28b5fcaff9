// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The counter store without a Redis server: the in-process GCRA tables (peek, refund, clear;
 * one table per counter and tenant bounded by max_keys, refilled slots reused, a flood of
 * fresh keys that never makes a spent key full, a table that grows), the fallbacks when the
 * configured Redis cannot be reached (fail open at limit / N, fail closed at the static
 * budget, the breaker), the keyed hash, and Redis Cluster's key slots. The Redis paths against a real server are in
 * tests/net/test_store.sh and test_counters.sh.
 */
#include "unit.h"

#include <string.h>
#include <time.h>

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

static void a_full_table_never_forgets_a_spent_key(void **state)
{
	struct event_base *base = event_base_new();
	struct sl_store *s = store_new(base, NULL, 1);
	struct sl_limit l = { .name = "t", .rate = 0.001, .burst = 1 };
	struct answers a = { 0 }, again = { 0 };
	struct sl_store_stats st;
	char key[32];
	int i;

	(void)state;
	/* No max_keys: the table holds local_max_keys = 16. 200 keys, each spending its whole
	 * burst at once: at most 16 get one, and no later key makes an earlier one full. */
	for (i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		charge(s, &l, "acme", key, 1, 1, &a);
	}
	assert_in_range(a.admitted, 1, 16);
	for (i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		charge(s, &l, "acme", key, 1, 1, &again);
	}
	assert_int_equal(again.refused, 200);
	sl_store_get_stats(s, &st);
	assert_true(st.local_keys <= 16);
	assert_true(st.local_table_full >= 200 - 16);
	sl_store_free(s);
	event_base_free(base);
}

/* The attacker's test: a spent (alice, address) pair stays spent through a flood of fresh
 * keys several times max_keys, lightly spent (alice stays in the table) or fully spent (she
 * is evicted, and comes back no fuller than she left). */
static void a_spent_pair_survives_a_flood_of_fresh_keys(void **state)
{
	struct event_base *base = event_base_new();
	struct sl_store *s = store_new(base, NULL, 1);
	struct sl_limit l = { .name = "login_fail", .rate = 0.001, .burst = 5, .max_keys = 64 };
	struct answers a = { 0 }, flood = { 0 }, fresh = { 0 };
	struct sl_store_stats st;
	char key[32];
	int i, round;

	(void)state;
	charge(s, &l, "acme", "alice|203.0.113.9", 1, 6, &a);
	assert_int_equal(a.admitted, 5);
	for (round = 0; round < 2; round++) {
		/* Round 0: 640 fresh keys charged once each; round 1: 640 more spending all 5. */
		for (i = 0; i < 640; i++) {
			snprintf(key, sizeof(key), "flood-%d-%d", round, i);
			charge(s, &l, "acme", key, 1, round ? 5 : 1, &flood);
		}
		memset(&a, 0, sizeof(a));
		charge(s, &l, "acme", "alice|203.0.113.9", 1, 1, &a);
		assert_int_equal(a.refused, 1);
		charge(s, &l, "acme", "alice|203.0.113.9", 0, 1, &a);
		assert_int_equal(a.refused, 2); /* a peek says so too */
	}
	sl_store_get_stats(s, &st);
	assert_true(st.local_evictions > 0);
	assert_true(st.local_keys <= 64);
	/* A key admitted fresh gets no more than an unseen key: with the table full of spent
	 * keys, 100 fresh keys start spent as well (a full burst each would be 500). */
	for (i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "late-%d", i);
		charge(s, &l, "acme", key, 1, 6, &fresh);
	}
	assert_true(fresh.admitted < 100);
	sl_store_free(s);
	event_base_free(base);
}

static void counters_and_tenants_have_tables_of_their_own(void **state)
{
	struct event_base *base = event_base_new();
	struct sl_store *s = store_new(base, NULL, 1);
	struct sl_limit login = { .name = "login_fail", .rate = 0.001, .burst = 3, .max_keys = 32 };
	struct sl_limit reset = { .name = "reset_prefix", .rate = 0.001, .burst = 3,
				  .max_keys = 32 };
	struct answers a = { 0 }, b = { 0 };
	struct sl_store_stats st;
	char key[32];
	int i;

	(void)state;
	charge(s, &login, "acme", "alice", 1, 3, &a);
	/* 4,000 reset requests from 1,000 addresses spend every reset key: that table evicts;
	 * so does the login table of another tenant. */
	for (i = 0; i < 4000; i++) {
		snprintf(key, sizeof(key), "198.51.%d.%d", i / 250 % 4, i % 250);
		charge(s, &reset, "acme", key, 1, 1, &b);
		snprintf(key, sizeof(key), "k%d", i);
		charge(s, &login, "other", key, 1, 1, &b);
	}
	sl_store_get_stats(s, &st);
	assert_true(st.local_evictions > 0);
	memset(&a, 0, sizeof(a));
	charge(s, &login, "acme", "alice", 1, 1, &a);
	assert_int_equal(a.refused, 1); /* alice's pair is still spent */
	/* ... and acme's login table was not touched: a new key there has its whole burst. */
	memset(&a, 0, sizeof(a));
	charge(s, &login, "acme", "bob", 1, 4, &a);
	assert_int_equal(a.admitted, 3);
	sl_store_free(s);
	event_base_free(base);
}

static void max_keys_bounds_each_table(void **state)
{
	struct event_base *base = event_base_new();
	struct sl_store *s = store_new(base, NULL, 1);
	struct sl_limit l = { .name = "t", .rate = 0.001, .burst = 2, .max_keys = 100 };
	struct sl_limit big = { .name = "u", .rate = 0.001, .burst = 2, .max_keys = 5000 };
	struct answers a = { 0 }, b = { 0 };
	struct sl_store_stats st;
	char key[32];
	int i;

	(void)state;
	/* 1,000 keys into a table of 100 (it starts at 64 slots and grows to its bound), each
	 * spending half its burst: past 100, a new key takes the place of a half-spent one and
	 * starts half spent (so it may spend one more), until every resident is spent. */
	for (i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		charge(s, &l, "acme", key, 1, 1, &a);
	}
	sl_store_get_stats(s, &st);
	assert_int_equal(st.local_keys, 100); /* max_keys, not the store's 16 */
	assert_true(st.local_evictions > 0);
	assert_in_range(a.admitted, 100, 200);
	assert_true(st.local_table_full >= 900); /* only 100 found a free slot */
	/* Evicted or not, no key gets more than its burst of 2 in all. */
	for (i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		charge(s, &l, "acme", key, 1, 2, &a);
	}
	assert_true(a.admitted <= 2000);
	/* A table below its bound grows instead of evicting: 1,000 keys in a table of 5,000
	 * (their two buckets of 8 at a fifth of the load) keep all their budgets. */
	sl_store_get_stats(s, &st);
	for (i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		charge(s, &big, "acme", key, 1, 2, &b);
	}
	assert_int_equal(b.admitted, 2000);
	{
		struct sl_store_stats st2;

		sl_store_get_stats(s, &st2);
		assert_int_equal(st2.local_keys - st.local_keys, 1000);
		assert_int_equal(st2.local_evictions, st.local_evictions);
	}
	sl_store_free(s);
	event_base_free(base);
}

/* An evicted key returns exactly as spent as it left, through a reload that raises
 * max_keys and the growth that follows (its floor moves with its buckets). */
static void an_evicted_key_returns_as_spent_through_a_growth(void **state)
{
	struct event_base *base = event_base_new();
	struct sl_store *s = store_new(base, NULL, 1);
	struct sl_limit l = { .name = "t", .rate = 0.001, .burst = 3, .max_keys = 16 };
	struct answers a = { 0 }, b = { 0 };
	struct sl_store_stats st;
	char key[32];
	int i;

	(void)state;
	charge(s, &l, "acme", "alice", 1, 2, &a);
	/* 100 keys spending all 3: once the 16 slots are taken, a new key inherits the least
	 * debt of its buckets; it can spend 1 more only from alice's, which it evicts. */
	for (i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "spent-%d", i);
		charge(s, &l, "acme", key, 1, 3, &b);
	}
	sl_store_get_stats(s, &st);
	assert_int_equal(st.local_evictions, 1);
	/* A reload: max_keys 4,096. 2,000 fresh keys grow the table, and all get their unit. */
	l.max_keys = 4096;
	memset(&b, 0, sizeof(b));
	for (i = 0; i < 2000; i++) {
		snprintf(key, sizeof(key), "fresh-%d", i);
		charge(s, &l, "acme", key, 1, 1, &b);
	}
	assert_int_equal(b.admitted, 2000);
	sl_store_get_stats(s, &st);
	assert_true(st.local_keys > 1000);
	/* alice had one unit left when she was evicted: she gets one, not a new burst of 3. */
	memset(&a, 0, sizeof(a));
	charge(s, &l, "acme", "alice", 1, 3, &a);
	assert_int_equal(a.admitted, 1);
	sl_store_free(s);
	event_base_free(base);
}

static void refilled_entries_are_reused(void **state)
{
	struct event_base *base = event_base_new();
	struct sl_store *s = store_new(base, NULL, 1);
	/* One unit per ms, burst 1: a charged key is full again 1 ms later. */
	struct sl_limit l = { .name = "t", .rate = 1000, .burst = 1, .max_keys = 16 };
	struct timespec ms5 = { 0, 5000000 };
	struct answers a = { 0 };
	struct sl_store_stats st;
	char key[32];
	int i, round;

	(void)state;
	for (round = 0; round < 20; round++) {
		for (i = 0; i < 8; i++) {
			snprintf(key, sizeof(key), "r%d-%d", round, i);
			charge(s, &l, "acme", key, 1, 1, &a);
		}
		nanosleep(&ms5, NULL);
	}
	/* 160 keys through 16 slots, 8 at a time (a bucket's worth, so none can find both of
	 * its buckets full): every slot that came back was refilled, and reused. */
	assert_int_equal(a.admitted, 160);
	sl_store_get_stats(s, &st);
	assert_int_equal(st.local_evictions, 0);
	assert_int_equal(st.local_table_full, 0);
	assert_true(st.local_keys <= 16);
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


/* Redis Cluster's key slots: CRC16-XMODEM mod 16384 of the hash tag, as the cluster
 * specification has it ("123456789" is the CRC16's check value, 0x31C3 = 12739). The same
 * keys against a real cluster's CLUSTER KEYSLOT: tests/net/test_redis_cluster.sh. */
static void keyslot_matches_the_cluster_specification(void **state)
{
	static const struct { const char *key; uint16_t slot; } v[] = {
		{ "123456789", 12739 },
		{ "foo", 12182 },
		{ "bar", 5061 },
		{ "{123456789}", 12739 },       /* the tag alone */
		{ "x{123456789}y", 12739 },
		{ "foo{bar}{zap}", 5061 },      /* the first tag: "bar" */
		/* What redis-server 7.0's CLUSTER KEYSLOT answered for these: */
		{ "{bar", 4015 },               /* no closing brace: the whole key */
		{ "foo{}{bar}", 8363 },         /* an empty first tag: the whole key */
		{ "foo{{bar}}zap", 4015 },      /* the tag is "{bar" */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		assert_int_equal(sl_store_keyslot(v[i].key, strlen(v[i].key)), v[i].slot);
	/* Every key of one tenant shares the tenant's slot: the GCRA script's two keys. */
	assert_int_equal(sl_store_keyslot("sluice:{acme}:login_fail:00ff", 29),
			 sl_store_keyslot("sluice:{acme}:login_fail:live", 29));
	assert_int_equal(sl_store_keyslot("sluice:{acme}:lease", 19),
			 sl_store_keyslot("acme", 4));
}

static void cluster_addresses_parse(void **state)
{
	struct sl_redis_target t;

	(void)state;
	assert_int_equal(sl_store_target_parse("cluster:127.0.0.1:7000,[::1]:7001,r3:7002", &t),
			 0);
	assert_true(t.cluster);
	assert_false(t.sentinel);
	assert_int_equal(t.n_sentinels, 3);
	assert_string_equal(t.sentinel_at[1].host, "::1");
	assert_int_equal(t.sentinel_at[2].port, 7002);
	assert_int_not_equal(sl_store_target_parse("cluster:", &t), 0);
	assert_int_not_equal(sl_store_target_parse("cluster:127.0.0.1", &t), 0);
	assert_int_not_equal(sl_store_target_parse("cluster:127.0.0.1:7000,", &t), 0);
	assert_int_not_equal(sl_store_target_parse("cluster:h:0", &t), 0);
}

/* A cluster whose seeds do not answer: no slot map, so every check takes its fallback at
 * once (never waits), fail open at limit / N; status says not connected. */
static void unreachable_cluster_fails_open_at_once(void **state)
{
	struct event_base *base = event_base_new();
	struct sl_store *s = store_new(base, "cluster:127.0.0.1:1,127.0.0.1:2", 2);
	struct sl_limit l = { .name = "login_fail", .rate = 0.001, .burst = 4,
			      .fail = SL_FAIL_OPEN };
	struct answers a = { 0 };
	struct sl_store_stats st;
	struct sl_store_node nodes[4];

	(void)state;
	charge(s, &l, "acme", "pair", 1, 5, &a);
	assert_int_equal(a.admitted, 2);
	assert_int_equal(a.last_answer, SL_ANS_LOCAL);
	sl_store_get_stats(s, &st);
	assert_true(st.redis);
	assert_true(st.cluster);
	assert_false(st.connected);
	assert_int_equal(st.slots_covered, 0);
	assert_int_equal(st.short_circuits, 5);
	assert_int_equal(sl_store_nodes(s, nodes, 4), 0); /* no master known */
	sl_store_free(s);
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(in_process_limits_exactly),
		cmocka_unit_test(peek_refund_and_clear),
		cmocka_unit_test(a_full_table_never_forgets_a_spent_key),
		cmocka_unit_test(a_spent_pair_survives_a_flood_of_fresh_keys),
		cmocka_unit_test(counters_and_tenants_have_tables_of_their_own),
		cmocka_unit_test(max_keys_bounds_each_table),
		cmocka_unit_test(an_evicted_key_returns_as_spent_through_a_growth),
		cmocka_unit_test(refilled_entries_are_reused),
		cmocka_unit_test(unreachable_redis_fails_open_at_limit_over_n),
		cmocka_unit_test(unreachable_redis_fails_closed_at_the_static_budget),
		cmocka_unit_test(keyed_hash_is_fixed_width_and_separates_parts),
		cmocka_unit_test(keyslot_matches_the_cluster_specification),
		cmocka_unit_test(cluster_addresses_parse),
		cmocka_unit_test(unreachable_cluster_fails_open_at_once),
	};

	log_set_level(LOG_LVL_ERROR);
	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
