// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The stream job, run for real: its thread, its queue, its actions delivered on an event
 * base this test runs. No edge (maps NULL), so the prefix detector records what it would
 * have done and blocks nothing; the account ladder and the password step-up post actions
 * to the callback, on the base's thread, once the test runs the loop.
 *
 * Thresholds are small (prefix 10 accounts, account ladder 3/6/12 prefixes, password 4
 * accounts) and the counts in process are exact at these sizes (a sparse HLL), so each
 * test checks the exact edge: one below the threshold does nothing, the threshold fires
 * once. A positive check polls the job's output (stream_wouldblock's JSON) until what it
 * looks for appears, for at most WAIT_MS; a negative one waits until the job's own counter
 * says it has processed every event pushed (it records and posts in the same locked
 * section that counts them), so "nothing yet" is never mistaken for "nothing".
 */
#include "unit.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "config.h"
#include "evq.h"
#include "log.h"
#include "stream.h"

#define WAIT_MS 3000
#define MAX_ACTS 64
#define TENANT 0

struct fx {
	struct sl_config *c;
	struct event_base *base;
	struct stream *s;
	uint64_t pushed;
	struct stream_action acts[MAX_ACTS];
	int n_acts;
};

static uint64_t mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void on_act(void *arg, const struct stream_action *a)
{
	struct fx *f = arg;

	assert_true(f->n_acts < MAX_ACTS);
	f->acts[f->n_acts++] = *a;
}

/* Small tables and a small queue: a test feeds a few dozen events. */
static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->c = calloc(1, sizeof(*f->c));
	assert_non_null(f->c);
	sl_config_defaults(f->c);
	snprintf(f->c->tenants[TENANT].name, sizeof(f->c->tenants[TENANT].name), "acme");
	f->c->n_tenants = 1;
	f->c->stream.max_keys = 1024;
	f->c->stream.queue = 1024;
	f->c->stream.records = 64;
	f->c->stream.det[SL_DET_PREFIX_ACCOUNTS].threshold = 10;
	f->c->stream.det[SL_DET_ACCOUNT_SOURCES].threshold = 3;
	f->c->stream.det[SL_DET_PASSWORD_ACCOUNTS].threshold = 4;
	f->base = event_base_new();
	assert_non_null(f->base);
	log_set_level(LOG_LVL_ERROR);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	stream_stop(f->s);
	event_base_free(f->base);
	free(f->c);
	free(f);
	return 0;
}

static void start(struct fx *f)
{
	char err[256] = "";

	f->s = stream_start(f->base, f->c, NULL, on_act, f, err, sizeof(err));
	if (!f->s)
		fail_msg("stream_start: %s", err);
}

/* 16 bytes standing for a keyed hash: @id in every byte pair, @dom apart. */
static void hash16(uint8_t dom, uint16_t id, uint8_t out[16])
{
	int i;

	for (i = 0; i < 16; i += 2) {
		out[i] = (uint8_t)(id >> 8) ^ dom;
		out[i + 1] = (uint8_t)id ^ (uint8_t)(i * 17);
	}
}

/* A login from 198.51.@net.0/24 (@net < 256) or, when @net >= 256, 2001:db8:@net::/48.
 * @password 0: none (successes carry none). @key: the key prefix's hash (0: not given);
 * @unchecked: refused before any password was checked. */
static void push_full(struct fx *f, bool success, uint16_t account, uint16_t net,
		      uint16_t password, uint32_t key, bool unchecked)
{
	struct sl_outcome_event ev = { 0 };

	hash16(0xa0, account, ev.account);
	if (password)
		hash16(0x50, password, ev.password);
	if (net < 256) {
		ev.family = 4;
		ev.plen = 24;
		ev.prefix[0] = 198, ev.prefix[1] = 51, ev.prefix[2] = (uint8_t)net;
	} else {
		ev.family = 6;
		ev.plen = 48;
		ev.prefix[0] = 0x20, ev.prefix[1] = 0x01, ev.prefix[2] = 0x0d, ev.prefix[3] = 0xb8;
		ev.prefix[4] = (uint8_t)(net >> 8), ev.prefix[5] = (uint8_t)net;
	}
	ev.success = success;
	ev.known = 1;
	ev.tenant = TENANT;
	ev.class_id = 255;
	memcpy(ev.key, &key, sizeof(ev.key));
	ev.unchecked = unchecked;
	assert_true(evq_push(stream_queue(f->s), &ev));
	f->pushed++;
}

static void push(struct fx *f, bool success, uint16_t account, uint16_t net, uint16_t password)
{
	push_full(f, success, account, net, password, 0, false);
}

static void fail_from(struct fx *f, uint16_t account, uint16_t net, uint16_t password)
{
	push(f, false, account, net, password);
}

/* What one of the job's outputs prints, as a string the caller frees. */
enum out { OUT_WOULDBLOCK, OUT_DISTRIBUTION, OUT_STATS };

static char *output(struct fx *f, enum out which)
{
	struct evbuffer *b = evbuffer_new();
	size_t n;
	char *s;

	assert_non_null(b);
	if (which == OUT_WOULDBLOCK)
		stream_wouldblock(f->s, b, 0, true);
	else if (which == OUT_DISTRIBUTION)
		stream_distribution(f->s, b, true);
	else
		stream_stats_json(f->s, b);
	n = evbuffer_get_length(b);
	s = malloc(n + 1);
	assert_non_null(s);
	evbuffer_remove(b, s, n);
	s[n] = '\0';
	evbuffer_free(b);
	return s;
}

static unsigned long long stat_events(struct fx *f)
{
	char *s = output(f, OUT_STATS);
	const char *p = strstr(s, "\"events\":");
	unsigned long long v;

	if (!p)
		fail_msg("no \"events\" in %s", s);
	v = strtoull(p + 9, NULL, 10);
	free(s);
	return v;
}

/* Run the loop (actions arrive there) and nap a millisecond. */
static void turn(struct fx *f)
{
	event_base_loop(f->base, EVLOOP_NONBLOCK);
	usleep(1000);
}

/* Until the job has processed every event pushed so far, then the loop once more: what it
 * posted for them has been delivered. */
static void settle(struct fx *f)
{
	uint64_t until = mono_ms() + WAIT_MS;

	while (stat_events(f) < f->pushed) {
		if (mono_ms() > until)
			fail_msg("the job processed %llu of %llu events in %d ms", stat_events(f),
				 (unsigned long long)f->pushed, WAIT_MS);
		turn(f);
	}
	event_base_loop(f->base, EVLOOP_NONBLOCK);
}

/* Poll stream_wouldblock until it mentions @needle; returns the output (caller frees). */
static char *wait_record(struct fx *f, const char *needle)
{
	uint64_t until = mono_ms() + WAIT_MS;
	char *s;

	for (;;) {
		s = output(f, OUT_WOULDBLOCK);
		if (strstr(s, needle))
			return s;
		if (mono_ms() > until)
			fail_msg("no %s in %d ms; the job said:\n%s", needle, WAIT_MS, s);
		free(s);
		turn(f);
	}
}

/* Poll the loop until @n actions have arrived. */
static void wait_actions(struct fx *f, int n)
{
	uint64_t until = mono_ms() + WAIT_MS;

	while (f->n_acts < n) {
		if (mono_ms() > until)
			fail_msg("%d of %d actions in %d ms", f->n_acts, n, WAIT_MS);
		turn(f);
	}
}

static int count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay += strlen(needle))
		n++;
	return n;
}

#define assert_lacks(hay, needle)                                                           \
	do {                                                                                \
		const char *h_ = (hay), *n_ = (needle);                                     \
		if (strstr(h_, n_))                                                         \
			fail_msg("did not expect \"%s\" in:\n%s", n_, h_);                    \
	} while (0)

/* ---- prefix_accounts ------------------------------------------------------------------ */

static void ten_accounts_from_one_prefix_are_recorded_once(void **state)
{
	struct fx *f = *state;
	char *out;
	int i;

	start(f);
	/* Each account its own password: the password detector stays quiet. */
	for (i = 1; i <= 12; i++)
		fail_from(f, (uint16_t)i, 7, (uint16_t)(100 + i));
	out = wait_record(f, "\"rule\":\"prefix_accounts\"");
	settle(f);
	free(out);
	out = output(f, OUT_WOULDBLOCK);
	assert_contains(out, "\"key\":\"198.51.7.0/24\"");
	/* No edge here: recorded as what it would have done, blocking nothing. */
	assert_contains(out, "\"mode\":\"monitor\",\"enforced\":false,\"rule\":\"prefix_accounts\"");
	assert_contains(out, "\"action\":\"block\",\"count\":10,\"threshold\":10}");
	assert_contains(out, "\"tenant\":\"acme\"");
	/* Flagged at the 10th account: the 11th and 12th add nothing. */
	assert_int_equal(count_of(out, "\"rule\":"), 2); /* the record and its summary row */
	assert_int_equal(count_of(out, "\"rule\":\"prefix_accounts\""), 2);
	assert_int_equal(f->n_acts, 0);
	free(out);
}

static void nine_accounts_from_one_prefix_are_not(void **state)
{
	struct fx *f = *state;
	char *out;
	int i;

	start(f);
	for (i = 1; i <= 9; i++)
		fail_from(f, (uint16_t)i, 300, (uint16_t)(100 + i));
	/* The same account again and again adds nothing distinct. */
	for (i = 0; i < 20; i++)
		fail_from(f, 9, 300, 109);
	settle(f);
	out = output(f, OUT_WOULDBLOCK);
	assert_contains(out, "\"records\":[]");
	free(out);
	/* The tenth distinct account tips it, for the /48 too. */
	fail_from(f, 10, 300, 110);
	out = wait_record(f, "\"key\":\"2001:db8:12c::/48\"");
	assert_contains(out, "\"count\":10,");
	free(out);
}

static void monitor_mode_records_and_acts_on_nothing(void **state)
{
	struct fx *f = *state;
	char *out;
	int i;

	f->c->stream.det[SL_DET_PREFIX_ACCOUNTS].mode = SL_MODE_MONITOR;
	f->c->stream.det[SL_DET_PASSWORD_ACCOUNTS].mode = SL_MODE_MONITOR;
	start(f);
	/* Ten accounts from one prefix, all with the same password: both detectors fire. */
	for (i = 1; i <= 10; i++)
		fail_from(f, (uint16_t)i, 9, 42);
	out = wait_record(f, "\"rule\":\"prefix_accounts\"");
	free(out);
	out = wait_record(f, "\"rule\":\"password_accounts\"");
	settle(f);
	free(out);
	out = output(f, OUT_WOULDBLOCK);
	assert_contains(out, "\"mode\":\"monitor\",\"enforced\":false,\"rule\":\"password_accounts\"");
	assert_contains(out, "\"action\":\"step_up\",\"count\":4,\"threshold\":4}");
	assert_lacks(out, "\"enforced\":true");
	/* Would have stepped up: nothing reached the gateway. */
	assert_int_equal(f->n_acts, 0);
	free(out);
}

/* ---- account_sources: the ladder ------------------------------------------------------- */

static void an_account_failing_from_many_prefixes_climbs_the_ladder(void **state)
{
	struct fx *f = *state;
	uint8_t want[16];
	char *out;
	int i;

	start(f);
	hash16(0xa0, 77, want);
	/* Two prefixes: below the threshold of three. */
	fail_from(f, 77, 1, 5);
	fail_from(f, 77, 2, 5);
	fail_from(f, 77, 2, 5);
	settle(f);
	assert_int_equal(f->n_acts, 0);
	/* The third: level 1 (delay), through the loop. */
	fail_from(f, 77, 3, 5);
	wait_actions(f, 1);
	assert_int_equal(f->acts[0].kind, STREAM_ACCOUNT_LEVEL);
	assert_int_equal(f->acts[0].level, 1);
	assert_int_equal(f->acts[0].tenant, TENANT);
	assert_memory_equal(f->acts[0].hash, want, 16);
	assert_true(f->acts[0].expires_ns > 0);
	/* Twice the threshold: step-up; four times: the step-up after the delay. Nothing in
	 * between. */
	for (i = 4; i <= 5; i++)
		fail_from(f, 77, (uint16_t)i, 5);
	settle(f);
	assert_int_equal(f->n_acts, 1);
	fail_from(f, 77, 6, 5);
	wait_actions(f, 2);
	assert_int_equal(f->acts[1].level, 2);
	for (i = 7; i <= 11; i++)
		fail_from(f, 77, (uint16_t)i, 5);
	settle(f);
	assert_int_equal(f->n_acts, 2);
	fail_from(f, 77, 12, 5);
	wait_actions(f, 3);
	assert_int_equal(f->acts[2].kind, STREAM_ACCOUNT_LEVEL);
	assert_int_equal(f->acts[2].level, 3);
	assert_memory_equal(f->acts[2].hash, want, 16);
	/* The top of the ladder: more prefixes post nothing more. */
	for (i = 13; i <= 20; i++)
		fail_from(f, 77, (uint16_t)i, 5);
	settle(f);
	assert_int_equal(f->n_acts, 3);
	out = output(f, OUT_WOULDBLOCK);
	assert_int_equal(count_of(out, "\"enforced\":true,\"rule\":\"account_sources\""), 3);
	assert_contains(out, "\"action\":\"ladder\",\"count\":12,\"threshold\":3}");
	free(out);
}

/* ---- password_accounts ----------------------------------------------------------------- */

static void one_password_across_accounts_posts_a_step_up(void **state)
{
	struct fx *f = *state;
	uint8_t want[16];
	char *out;
	int i;

	start(f);
	hash16(0x50, 999, want);
	/* Three accounts, each from its own prefix: one short. Another password alongside. */
	for (i = 1; i <= 3; i++) {
		fail_from(f, (uint16_t)i, (uint16_t)(20 + i), 999);
		fail_from(f, (uint16_t)(50 + i), (uint16_t)(20 + i), 998);
	}
	settle(f);
	assert_int_equal(f->n_acts, 0);
	out = output(f, OUT_WOULDBLOCK);
	assert_contains(out, "\"records\":[]");
	free(out);
	/* The fourth account: one step-up for that password, and only that one. */
	fail_from(f, 4, 24, 999);
	wait_actions(f, 1);
	assert_int_equal(f->acts[0].kind, STREAM_PASSWORD_STEP_UP);
	assert_int_equal(f->acts[0].tenant, TENANT);
	assert_memory_equal(f->acts[0].hash, want, 16);
	/* More accounts with it while it stands: no second one. */
	for (i = 5; i <= 8; i++)
		fail_from(f, (uint16_t)i, (uint16_t)(20 + i), 999);
	settle(f);
	assert_int_equal(f->n_acts, 1);
	out = output(f, OUT_WOULDBLOCK);
	assert_contains(out, "\"enforced\":true,\"rule\":\"password_accounts\"");
	assert_int_equal(count_of(out, "\"rule\":\"password_accounts\""), 2); /* + summary */
	free(out);
}

/* ---- account_keys ---------------------------------------------------------------------- */

static void one_account_from_many_keys_of_one_allocation_is_stepped_up_there(void **state)
{
	struct fx *f = *state;
	struct sl_outcome_event ev = { 0 };
	uint8_t want[16];
	char *out;
	uint32_t k;

	f->c->stream.det[SL_DET_ACCOUNT_KEYS].threshold = 5;
	/* The ladder and the prefix detector stay out of it. */
	f->c->stream.det[SL_DET_ACCOUNT_SOURCES].threshold = 100;
	start(f);
	hash16(0xa0, 33, ev.account);
	ev.prefix[0] = 198, ev.prefix[1] = 51, ev.prefix[2] = 7;
	stream_account_source(ev.account, 4, 24, ev.prefix, want);
	/* Four addresses of 198.51.7.0/24, one of them twice; four of another /24; four of
	 * this /24 for another account: nobody has five. */
	for (k = 1; k <= 4; k++) {
		push_full(f, false, 33, 7, (uint16_t)(100 + k), k, false);
		push_full(f, false, 33, 8, (uint16_t)(100 + k), k, false);
		push_full(f, false, 34, 7, (uint16_t)(100 + k), k, false);
	}
	push_full(f, false, 33, 7, 200, 2, false);
	/* A fifth address refused unchecked is nobody's guess. */
	push_full(f, false, 33, 7, 201, 5, true);
	settle(f);
	assert_int_equal(f->n_acts, 0);
	/* The fifth guessing address: a step-up for that account from that /24, nothing wider. */
	push_full(f, false, 33, 7, 202, 6, false);
	wait_actions(f, 1);
	assert_int_equal(f->acts[0].kind, STREAM_ACCOUNT_SOURCE_STEP_UP);
	assert_int_equal(f->acts[0].tenant, TENANT);
	assert_memory_equal(f->acts[0].hash, want, 16);
	assert_true(f->acts[0].expires_ns > 0);
	/* While it stands, more addresses post nothing more. */
	for (k = 10; k <= 14; k++)
		push_full(f, false, 33, 7, (uint16_t)(100 + k), k, false);
	settle(f);
	assert_int_equal(f->n_acts, 1);
	out = output(f, OUT_WOULDBLOCK);
	assert_contains(out, "\"enforced\":true,\"rule\":\"account_keys\"");
	assert_contains(out, " in 198.51.7.0/24\"");
	assert_contains(out, "\"action\":\"step_up\",\"count\":5,\"threshold\":5}");
	free(out);
}

/* A login refused before any check counts for its source, never against its account or
 * with its password: it cannot climb a ladder or flag a password. */
static void unchecked_attempts_count_for_their_source_only(void **state)
{
	struct fx *f = *state;
	char *out;
	int i;

	start(f);
	/* One account from twelve prefixes (four times the ladder's three), one password over
	 * ten accounts (past its four), all refused unchecked. */
	for (i = 1; i <= 12; i++)
		push_full(f, false, 88, (uint16_t)(100 + i), 777, (uint32_t)i, true);
	for (i = 1; i <= 10; i++)
		push_full(f, false, (uint16_t)(300 + i), 60, 777, 1, true);
	settle(f);
	assert_int_equal(f->n_acts, 0);
	/* Ten accounts from one prefix: the source's own detector still sees them. */
	out = wait_record(f, "\"rule\":\"prefix_accounts\"");
	assert_contains(out, "198.51.60.0/24");
	assert_lacks(out, "account_sources");
	assert_lacks(out, "password_accounts");
	free(out);
}

/* ---- the distribution ------------------------------------------------------------------ */

static void successes_feed_the_distribution_and_fire_nothing(void **state)
{
	struct fx *f = *state;
	char *out, hx[17], want[96];
	uint8_t h[16];
	int i;

	f->c->stream.tail_per_day = 4;
	start(f);
	/* Account 1 three times, 2 once, 3 five times (above the tail of 4), from one prefix. */
	for (i = 0; i < 3; i++)
		push(f, true, 1, 40, 0);
	push(f, true, 2, 40, 0);
	for (i = 0; i < 5; i++)
		push(f, true, 3, 40, 0);
	/* Eleven more accounts from the same prefix: well past the prefix threshold, but they
	 * succeeded. */
	for (i = 10; i < 21; i++)
		push(f, true, (uint16_t)i, 40, 0);
	settle(f);
	out = output(f, OUT_DISTRIBUTION);
	assert_contains(out, "{\"tenant\":\"acme\",\"accounts\":14,");
	assert_contains(out, "\"p50\":1,");
	assert_contains(out, "\"max\":5,");
	/* Only account 3 is in the non-human tail, by its hash's first 8 bytes in hex. */
	hash16(0xa0, 3, h);
	for (i = 0; i < 8; i++)
		snprintf(hx + 2 * i, 3, "%02x", h[i]);
	snprintf(want, sizeof(want), "\"tail\":[{\"account\":\"%s\",\"attempts\":5}]", hx);
	assert_contains(out, want);
	free(out);
	out = output(f, OUT_WOULDBLOCK);
	assert_contains(out, "\"records\":[]");
	free(out);
	out = output(f, OUT_STATS);
	assert_contains(out, "\"events\":20,\"failures\":0,");
	free(out);
	assert_int_equal(f->n_acts, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(ten_accounts_from_one_prefix_are_recorded_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(nine_accounts_from_one_prefix_are_not, setup,
						teardown),
		cmocka_unit_test_setup_teardown(monitor_mode_records_and_acts_on_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(an_account_failing_from_many_prefixes_climbs_the_ladder,
						setup, teardown),
		cmocka_unit_test_setup_teardown(one_password_across_accounts_posts_a_step_up, setup,
						teardown),
		cmocka_unit_test_setup_teardown(successes_feed_the_distribution_and_fire_nothing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			one_account_from_many_keys_of_one_allocation_is_stepped_up_there, setup,
			teardown),
		cmocka_unit_test_setup_teardown(unchecked_attempts_count_for_their_source_only,
						setup, teardown),
	};

	return cmocka_run_group_tests_name("stream", tests, NULL, NULL);
}
