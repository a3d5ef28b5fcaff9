// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The GCRA header: the same code the XDP program runs, tested on the host. */
#include "unit.h"

#include "sluice/gcra.h"

#define SEC 1000000000ull

/* Charge @n requests of @cost at @now; return how many were allowed. */
static int burst_at(__u64 *tat, __u64 now, int n, __u64 cost, __u64 T, __u64 tau)
{
	int ok = 0, i;

	for (i = 0; i < n; i++) {
		__u64 next;

		/* Store whatever the header says to store, as the datapath does. */
		ok += sl_gcra_charge(*tat, now, cost, T, tau, &next);
		*tat = next;
	}
	return ok;
}

static void full_bucket_admits_exactly_its_burst(void **state)
{
	__u64 T = sl_gcra_emission(5.0), tau = sl_gcra_tolerance(20.0, T);
	__u64 now = 1000 * SEC, tat = now;

	(void)state;
	assert_int_equal(T, 200000000ull);
	assert_int_equal(burst_at(&tat, now, 100, 1, T, tau), 20);
	/* The bucket is empty: nothing more at the same instant. */
	assert_int_equal(burst_at(&tat, now, 5, 1, T, tau), 0);
}

static void steady_rate_is_the_configured_rate(void **state)
{
	__u64 T = sl_gcra_emission(5.0), tau = sl_gcra_tolerance(20.0, T);
	__u64 now = 1000 * SEC, tat = now;
	int ok = 0, ms;

	(void)state;
	burst_at(&tat, now, 20, 1, T, tau); /* drain */
	/* 100 attempts per second for 10 s: exactly 5/s get through. */
	for (ms = 10; ms <= 10000; ms += 10)
		ok += burst_at(&tat, now + (__u64)ms * 1000000ull, 1, 1, T, tau);
	assert_int_equal(ok, 50);
}

static void denied_requests_spend_nothing(void **state)
{
	__u64 T = sl_gcra_emission(1.0), tau = sl_gcra_tolerance(3.0, T);
	__u64 now = 50 * SEC, tat = now, next = 12345;

	(void)state;
	burst_at(&tat, now, 3, 1, T, tau);
	assert_false(sl_gcra_charge(tat, now, 1, T, tau, &next));
	assert_int_equal(next, tat); /* unchanged */
	/* One second later exactly one unit has refilled, however many were denied meanwhile. */
	burst_at(&tat, now + SEC / 2, 50, 1, T, tau);
	assert_int_equal(burst_at(&tat, now + SEC, 5, 1, T, tau), 1);
}

static void cost_units_are_charged_in_full(void **state)
{
	__u64 T = sl_gcra_emission(1000.0), tau = sl_gcra_tolerance(2000.0, T);
	__u64 now = 10 * SEC, tat = now;

	(void)state;
	/* Two 950-unit logins fit a 2000-unit burst; a third does not; 100 token checks do. */
	assert_int_equal(burst_at(&tat, now, 3, 950, T, tau), 2);
	assert_int_equal(burst_at(&tat, now, 200, 1, T, tau), 100);
}

static void time_going_backwards_is_clamped(void **state)
{
	__u64 T = sl_gcra_emission(1.0), tau = sl_gcra_tolerance(10.0, T);
	__u64 now = 10000 * SEC, tat = now;

	(void)state;
	burst_at(&tat, now, 10, 1, T, tau); /* empty at t = 10000 s */
	/* The clock steps back an hour: the bucket must read as empty, not as empty for an
	 * hour. One emission interval after the stepped-back time a unit is available. */
	assert_int_equal(burst_at(&tat, now - 3600 * SEC, 1, 1, T, tau), 0);
	assert_int_equal(tat, now - 3600 * SEC + tau); /* clamped and persisted */
	assert_int_equal(burst_at(&tat, now - 3600 * SEC + T, 1, 1, T, tau), 1);
}

static void huge_costs_saturate_instead_of_wrapping(void **state)
{
	__u64 T = sl_gcra_emission(0.001); /* one unit per 1000 s */
	__u64 tau = sl_gcra_tolerance(1e9, T), next = 0;
	__u64 now = 5 * SEC;

	(void)state;
	assert_int_equal(sl_mul_sat(1ull << 40, 1ull << 40), SL_U64_MAX);
	assert_int_equal(sl_mul_sat(3, 1ull << 40), 3ull << 40);
	assert_int_equal(sl_mul_sat(1ull << 40, 3), 3ull << 40);
	assert_int_equal(sl_mul_sat(0xffffffffull, 0xffffffffull), 0xfffffffe00000001ull);
	assert_int_equal(sl_add_sat(SL_U64_MAX - 1, 5), SL_U64_MAX);
	/* A cost whose product with T wraps 64 bits must be denied, never admitted cheaply. */
	assert_false(sl_gcra_charge(now, now, 0xffffffffull, T, tau, &next));
	assert_false(sl_gcra_charge(now, now, 1ull << 50, 1ull << 20, SL_U64_MAX / 4, &next));
	/* A TAT near the top of the range must not wrap to "far in the past". */
	assert_false(sl_gcra_charge(SL_U64_MAX - 10, now, 1, T, tau, &next));
}

static void new_keys_start_partly_spent(void **state)
{
	__u64 T = sl_gcra_emission(1.0), tau = sl_gcra_tolerance(10.0, T);
	__u64 now = 77 * SEC, tat;

	(void)state;
	tat = sl_gcra_initial_tat(now, tau, 500);
	assert_int_equal(burst_at(&tat, now, 100, 1, T, tau), 5);
	tat = sl_gcra_initial_tat(now, tau, 1000);
	assert_int_equal(burst_at(&tat, now, 100, 1, T, tau), 10);
	tat = sl_gcra_initial_tat(now, tau, 100);
	assert_int_equal(burst_at(&tat, now, 100, 1, T, tau), 1);
	assert_true(sl_gcra_available(sl_gcra_initial_tat(now, tau, 500), now, T, tau) > 4.99);
	assert_true(sl_gcra_available(sl_gcra_initial_tat(now, tau, 500), now, T, tau) < 5.01);
}

static void conversions(void **state)
{
	(void)state;
	assert_int_equal(sl_gcra_emission(0.0), 0);
	assert_int_equal(sl_gcra_emission(-1.0), 0);
	assert_int_equal(sl_gcra_emission(1e12), 1); /* never 0 for a positive rate */
	assert_int_equal(sl_gcra_emission(3.0), 333333333ull);
	assert_int_equal(sl_gcra_tolerance(2.5, 1000), 2500);
	assert_int_equal(sl_gcra_tolerance(1e30, 1000000), SL_U64_MAX);
	assert_true(sl_gcra_available(0, 10 * SEC, 0, 5) == 0.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(full_bucket_admits_exactly_its_burst),
		cmocka_unit_test(steady_rate_is_the_configured_rate),
		cmocka_unit_test(denied_requests_spend_nothing),
		cmocka_unit_test(cost_units_are_charged_in_full),
		cmocka_unit_test(time_going_backwards_is_clamped),
		cmocka_unit_test(huge_costs_saturate_instead_of_wrapping),
		cmocka_unit_test(new_keys_start_partly_spent),
		cmocka_unit_test(conversions),
	};

	return cmocka_run_group_tests_name("gcra", tests, NULL, NULL);
}
