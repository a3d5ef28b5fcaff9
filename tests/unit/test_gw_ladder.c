// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Retry-After escalation and jitter; latency histograms. */
#include "unit.h"

#include "gw_hist.h"
#include "gw_ladder.h"

#define SEC 1000000000ull
#define MID 0x80000000u /* jitter factor 1.0 */

static const uint32_t levels[4] = { 1, 5, 30, 120 };

static struct gw_ladder *mk(void)
{
	static const uint8_t key[16] = { 1, 2, 3 };
	struct gw_ladder *l = calloc(1, sizeof(*l));

	assert_non_null(l);
	gw_ladder_init(l, levels, 4, 60, key);
	return l;
}

static struct gw_addr ip(const char *s)
{
	struct gw_addr a;

	assert_int_equal(gw_addr_parse(s, strlen(s), &a), 0);
	return a;
}

static void escalates_and_decays(void **state)
{
	struct gw_ladder *l = mk();
	struct gw_addr a = ip("192.0.2.1");
	uint64_t t = 1000 * SEC;
	bool early;

	(void)state;
	/* Each 429 after the previous Retry-After has passed climbs one level. */
	assert_int_equal(gw_ladder_hit(l, &a, t, MID, &early), 1);
	assert_false(early);
	t += 2 * SEC;
	assert_int_equal(gw_ladder_hit(l, &a, t, MID, &early), 5);
	t += 6 * SEC;
	assert_int_equal(gw_ladder_hit(l, &a, t, MID, &early), 30);
	t += 31 * SEC;
	assert_int_equal(gw_ladder_hit(l, &a, t, MID, &early), 120);
	t += 59 * SEC; /* within the 60 s decay: still climbing, capped at the top */
	assert_int_equal(gw_ladder_hit(l, &a, t, MID, &early), 120);
	assert_true(early);
	/* A minute of quiet after the last 429 starts it over. */
	t += 181 * SEC;
	assert_int_equal(gw_ladder_hit(l, &a, t, MID, &early), 1);
	/* Another client is its own ladder. */
	assert_int_equal(gw_ladder_hit(l, &(struct gw_addr){ 0 }, t, MID, &early), 1);
	free(l);
}

/* A client back before its Retry-After climbs two levels at once. */
static void early_returns_climb_faster(void **state)
{
	struct gw_ladder *l = mk();
	struct gw_addr a = ip("2001:db8:1:2::5"), same64 = ip("2001:db8:1:2::99");
	struct gw_addr other64 = ip("2001:db8:1:3::5");
	uint64_t t = 1000 * SEC;
	bool early;

	(void)state;
	assert_int_equal(gw_ladder_hit(l, &a, t, MID, &early), 1);
	/* Back 100 ms later, from another address in the same /64: same key, early. */
	assert_int_equal(gw_ladder_hit(l, &same64, t + SEC / 10, MID, &early), 30);
	assert_true(early);
	assert_int_equal(gw_ladder_hit(l, &other64, t + SEC / 10, MID, &early), 1);
	assert_false(early);
	free(l);
}

static void jitter_is_twenty_percent(void **state)
{
	struct gw_ladder *l = mk();
	uint64_t t = 1000 * SEC;
	uint32_t lo = 1000, hi = 0;
	bool early;
	int i;

	(void)state;
	for (i = 0; i < 200; i++) {
		char s[32];
		struct gw_addr a;
		uint32_t r;

		snprintf(s, sizeof(s), "198.51.%d.%d", i / 250, i % 250 + 1);
		a = ip(s);
		gw_ladder_hit(l, &a, t, 0, &early);               /* level 1 */
		gw_ladder_hit(l, &a, t + 2 * SEC, 0, &early);     /* level 2 */
		gw_ladder_hit(l, &a, t + 10 * SEC, 0, &early);    /* level 3 (30 s) */
		r = gw_ladder_hit(l, &a, t + 50 * SEC, (uint32_t)i * 21474836u, &early);
		lo = r < lo ? r : lo;
		hi = r > hi ? r : hi;
		assert_true(r >= 96 && r <= 144); /* 120 s +- 20 % */
	}
	assert_true(lo <= 100 && hi >= 140); /* the spread is really used */
	free(l);
}

/* A full set forgets its least recent entry; memory never grows. */
static void the_table_is_bounded(void **state)
{
	struct gw_ladder *l = mk();
	uint64_t t = 1000 * SEC;
	bool early;
	int i;

	(void)state;
	for (i = 0; i < 50000; i++) {
		struct gw_addr a = { .family = 4 };

		memcpy(a.addr, &i, sizeof(i));
		gw_ladder_hit(l, &a, t + (uint64_t)i, MID, &early);
	}
	assert_true(l->evictions >= 50000 - GW_LADDER_SETS * GW_LADDER_WAYS);
	free(l);
}

static void histogram_quantiles(void **state)
{
	struct gw_hist h;
	uint64_t us;
	int i;

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_int_equal(gw_hist_quantile_us(&h, 0.5), 0);
	for (us = 0; us < 100000; us++)
		assert_true(gw_hist_upper_us(gw_hist_bucket(us)) >= us);
	/* 1..1000 ms, uniformly. */
	for (i = 1; i <= 1000; i++)
		gw_hist_add(&h, (uint64_t)i * 1000000ull);
	us = gw_hist_quantile_us(&h, 0.5);
	assert_true(us >= 500000 && us <= 500000 * 1.19 + 1);
	us = gw_hist_quantile_us(&h, 0.99);
	assert_true(us >= 990000 && us <= 1000000);
	assert_int_equal(gw_hist_quantile_us(&h, 1.0), 1000000);
	assert_int_equal(h.n, 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(escalates_and_decays),
		cmocka_unit_test(early_returns_climb_faster),
		cmocka_unit_test(jitter_is_twenty_percent),
		cmocka_unit_test(the_table_is_bounded),
		cmocka_unit_test(histogram_quantiles),
	};

	return cmocka_run_group_tests_name("gw_ladder", tests, NULL, NULL);
}
