// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The chain of asks (gw_chain.h) against the in-process store, whose answers come back
 * before the call returns: a hard refusal ends the chain after its step, a soft one does not
 * (the asks after it are asked and charged, and a hard refusal among them is the one
 * reported: the login's per-account asks under login_uniform, issue 14), and a refund gives
 * back exactly the charges marked refund.
 */
#include "unit.h"

#include <event2/event.h>
#include <sodium.h>

#include "gw_internal.h"

struct fx {
	struct event_base *base;
	struct gateway *g;
	struct gw_req *r;
	int done;
	int refused;      /* index of the ask reported, -1 none */
	bool soft;
};

static struct fx *F;

static void on_done(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms)
{
	(void)retry_ms;
	F->done++;
	F->refused = refused ? (int)(refused - r->chain.ask) : -1;
	F->soft = refused && refused->soft;
}

static int setup(void **state)
{
	struct sl_store_opts o = { .timeout_ms = 5, .nodes = 1, .breaker_failures = 3,
				   .breaker_open_ms = 1000 };
	struct fx *f = calloc(1, sizeof(*f));
	char err[128];

	assert_non_null(f);
	assert_true(sodium_init() >= 0);
	f->base = event_base_new();
	f->g = calloc(1, sizeof(*f->g));
	f->g->cfg = calloc(1, sizeof(*f->g->cfg));
	assert_non_null(f->g->cfg);
	sl_config_defaults(f->g->cfg);
	/* One failure per pair and per allocation, two tenant logins, nothing refills. */
	f->g->cfg->counters[SL_CTR_LOGIN_FAILURES].burst = 1;
	f->g->cfg->counters[SL_CTR_LOGIN_FAILURES].rate = 1e-6;
	f->g->cfg->counters[SL_CTR_LOGIN_PARENT].burst = 1;
	f->g->cfg->counters[SL_CTR_LOGIN_PARENT].rate = 1e-6;
	f->g->cfg->counters[SL_CTR_TENANT_LOGINS] = (struct sl_counter_cfg){
		.enabled = 1, .rate = 1e-6, .burst = 2 };
	f->g->store = sl_store_new(f->base, &o, err, sizeof(err));
	assert_non_null(f->g->store);
	f->r = calloc(1, sizeof(*f->r));
	f->r->g = f->g;
	snprintf(f->r->tenant, sizeof(f->r->tenant), "acme");
	F = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	sl_store_free(f->g->store);
	free(f->g->cfg);
	free(f->g);
	free(f->r);
	event_base_free(f->base);
	free(f);
	return 0;
}

/* Run @r's chain; it answers at once (in process). */
static void run(struct fx *f)
{
	int before = f->done;

	assert_int_equal(gw_chain_run(f->r, on_done), 0);
	assert_int_equal(f->done, before + 1);
}

/* The login's shape: the pair (soft or not) with the next, then the tenant's. */
static void login_chain(struct fx *f, const char *pair, const char *tenant, bool soft)
{
	struct gw_ask *a;

	gw_chain_begin(f->r);
	a = gw_chain_ask(f->r, SL_CTR_LOGIN_FAILURES, pair);
	a->with_next = true;
	a->refund = true;
	a->soft = soft;
	a = gw_chain_ask(f->r, SL_CTR_LOGIN_SUCCESSES, pair);
	a->cost = 0;
	a->soft = soft;
	gw_chain_ask(f->r, SL_CTR_TENANT_LOGINS, tenant);
}

static void a_soft_refusal_lets_the_chain_go_on(void **state)
{
	struct fx *f = *state;

	login_chain(f, "pair-a", "tenant-a", true);
	run(f);
	assert_int_equal(f->refused, -1); /* one failure and one tenant login spent */
	/* The pair is spent: refused, softly; the tenant's is still asked, and charged. */
	login_chain(f, "pair-a", "tenant-a", true);
	run(f);
	assert_int_equal(f->refused, 0);
	assert_true(f->soft);
	assert_false(f->r->chain.ask[0].charged);
	assert_true(f->r->chain.ask[2].charged);
	/* Now the tenant's is spent too: its hard refusal is the one reported. */
	login_chain(f, "pair-a", "tenant-a", true);
	run(f);
	assert_int_equal(f->refused, 2);
	assert_false(f->soft);
}

static void a_hard_refusal_ends_the_chain_after_its_step(void **state)
{
	struct fx *f = *state;

	login_chain(f, "pair-b", "tenant-b", false);
	run(f);
	assert_int_equal(f->refused, -1);
	login_chain(f, "pair-b", "tenant-b", false);
	run(f);
	assert_int_equal(f->refused, 0);
	assert_false(f->soft);
	/* The tenant's was never asked: one of its two is left, then none. */
	login_chain(f, "pair-b2", "tenant-b", false);
	run(f);
	assert_int_equal(f->refused, -1);
	login_chain(f, "pair-b3", "tenant-b", false);
	run(f);
	assert_int_equal(f->refused, 2);
}

static void a_refund_gives_back_what_was_marked_and_charged(void **state)
{
	struct fx *f = *state;
	struct gw_ask *a;
	int i;

	for (i = 0; i < 3; i++) {
		gw_chain_begin(f->r);
		a = gw_chain_ask(f->r, SL_CTR_LOGIN_FAILURES, "pair-c");
		a->with_next = true;
		a->refund = true;
		a->soft = true;
		a = gw_chain_ask(f->r, SL_CTR_LOGIN_PARENT, "parent-c");
		a->refund = true;
		a->soft = true;
		run(f);
		/* Three times in a row within budgets of one: each was given back. */
		assert_int_equal(f->refused, -1);
		assert_true(f->r->chain.ask[0].charged && f->r->chain.ask[1].charged);
		gw_chain_refund(f->r);
		assert_false(f->r->chain.ask[0].charged || f->r->chain.ask[1].charged);
	}
	/* Settled as a failure, the charges stand: the next is refused by both. */
	run(f);
	gw_chain_settle(f->r, false);
	run(f);
	assert_int_equal(f->refused, 0);
	assert_true(f->soft);
	assert_false(f->r->chain.ask[1].charged);
}

/* login_successes (issue 16): charged with the attempt, so two logins at once cannot both
 * take the last success; a failure gives it back, a success keeps it. */
static void a_success_is_charged_when_asked_and_kept_only_by_a_success(void **state)
{
	struct fx *f = *state;
	struct gw_ask *a;

	f->g->cfg->counters[SL_CTR_LOGIN_SUCCESSES].burst = 1;
	f->g->cfg->counters[SL_CTR_LOGIN_SUCCESSES].rate = 1e-6;
	f->g->cfg->counters[SL_CTR_TENANT_LOGINS].burst = 100;
#define ASK_SUCCESS()                                                                 \
	do {                                                                          \
		gw_chain_begin(f->r);                                                 \
		a = gw_chain_ask(f->r, SL_CTR_LOGIN_SUCCESSES, "pair-s");             \
		a->refund = true;                                                     \
		a->then = GW_THEN_SPEND;                                              \
		gw_chain_ask(f->r, SL_CTR_TENANT_LOGINS, "tenant-s");                 \
		run(f);                                                               \
	} while (0)
	ASK_SUCCESS();
	assert_int_equal(f->refused, -1);
	assert_true(f->r->chain.ask[0].charged);
	/* The first is still hashing: a second at once finds the success taken. */
	ASK_SUCCESS();
	assert_int_equal(f->refused, 0);
	gw_chain_settle(f->r, false); /* a refused one holds nothing to give back */
	ASK_SUCCESS();
	assert_int_equal(f->refused, 0);
	/* A burst of two, one held: a login takes the other and fails, giving it back... */
	f->g->cfg->counters[SL_CTR_LOGIN_SUCCESSES].burst = 2;
	ASK_SUCCESS();
	assert_int_equal(f->refused, -1);
	gw_chain_settle(f->r, false);
	ASK_SUCCESS();
	assert_int_equal(f->refused, -1);
	/* ... and a success keeps it: the burst of two is spent. */
	gw_chain_settle(f->r, true);
	ASK_SUCCESS();
	assert_int_equal(f->refused, 0);
#undef ASK_SUCCESS
}

/* A request's asks go out together; what the steps after a hard refusal took is given
 * back, as if they had never been asked. */
static void the_steps_after_a_refusal_are_given_back(void **state)
{
	struct fx *f = *state;
	int i;

	login_chain(f, "pair-d", "tenant-d", false);
	run(f);
	assert_int_equal(f->refused, -1); /* one tenant login of two spent */
	for (i = 0; i < 5; i++) {
		login_chain(f, "pair-d", "tenant-d", false);
		run(f);
		assert_int_equal(f->refused, 0);
		assert_false(f->r->chain.ask[2].charged);
	}
	login_chain(f, "pair-d2", "tenant-d", false);
	run(f);
	assert_int_equal(f->refused, -1); /* the second, after five refused ones */
	login_chain(f, "pair-d3", "tenant-d", false);
	run(f);
	assert_int_equal(f->refused, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_soft_refusal_lets_the_chain_go_on, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_hard_refusal_ends_the_chain_after_its_step,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_refund_gives_back_what_was_marked_and_charged,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_success_is_charged_when_asked_and_kept_only_by_a_success, setup,
			teardown),
		cmocka_unit_test_setup_teardown(the_steps_after_a_refusal_are_given_back, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
