// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The outcome queue: order, drops and their count, wraparound, the eventfd wake, and two
 * threads racing three ways: pushing as fast as possible at a spinning consumer (order, every
 * byte, popped + dropped == attempts); pushing bursts at a consumer that sleeps on the fd
 * between them (a lost wake leaves it asleep: caught by a poll timeout); and pushing one
 * event the moment the last is taken, at a consumer checking the fd after every empty pop
 * (the arming race, a few hundred thousand times; it catches a release store in place of
 * the seq_cst one on x86). Worker threads count what they saw; only the main thread asserts.
 *
 * EVQ_STRESS_N sets the first stress test's event count (default 10 million, 2 million under
 * ASan, whose shadow checks make every copy several times dearer).
 */
#include "unit.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "evq.h"

#if defined(__SANITIZE_ADDRESS__)
#define STRESS_N_DEFAULT 2000000ull
#else
#define STRESS_N_DEFAULT 10000000ull
#endif
#define STRESS_CAP 1024
#define BATCH 64
#define BURSTS 20000
#define HANDSHAKES 300000
#define LOST_WAKE_MS 2000 /* a sleeping consumer not woken in 2 s was not woken at all */

/* An event whose every byte follows from @seq, so a torn or stale slot shows. */
static void ev_make(struct sl_outcome_event *ev, uint64_t seq)
{
	int i;

	memset(ev, 0, sizeof(*ev));
	ev->ts_ns = seq;
	for (i = 0; i < 16; i++) {
		ev->account[i] = (uint8_t)((seq >> (i % 8 * 8)) ^ (uint64_t)i);
		ev->password[i] = (uint8_t)~ev->account[i];
		ev->prefix[i] = (uint8_t)(seq * 31 + (uint64_t)i);
	}
	ev->family = seq & 1 ? 6 : 4;
	ev->plen = (uint8_t)(seq % 129);
	ev->success = (uint8_t)(seq % 3 == 0);
	ev->known = (uint8_t)(seq % 5 != 0);
	ev->asn = (uint32_t)(seq * 2654435761u);
	ev->tenant = (uint16_t)seq;
	ev->class_id = (uint8_t)(seq % 7);
}

static bool ev_intact(const struct sl_outcome_event *ev)
{
	struct sl_outcome_event want;

	ev_make(&want, ev->ts_ns);
	return memcmp(ev, &want, sizeof(want)) == 0;
}

static bool push_seq(struct evq *q, uint64_t seq)
{
	struct sl_outcome_event ev;

	ev_make(&ev, seq);
	return evq_push(q, &ev);
}

static bool fd_readable(struct evq *q)
{
	struct pollfd p = { .fd = evq_fd(q), .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void assert_stats(struct evq *q, uint64_t pushed, uint64_t dropped, uint64_t depth)
{
	uint64_t p, d, n;

	evq_stats(q, &p, &d, &n);
	if (p != pushed || d != dropped || n != depth)
		fail_msg("stats: pushed %llu dropped %llu depth %llu, expected %llu %llu %llu",
			 (unsigned long long)p, (unsigned long long)d, (unsigned long long)n,
			 (unsigned long long)pushed, (unsigned long long)dropped,
			 (unsigned long long)depth);
}

static void capacity_must_be_a_power_of_two(void **state)
{
	static const uint32_t bad[] = { 0, 3, 6, 1000, EVQ_MAX_CAPACITY + 1, EVQ_MAX_CAPACITY * 2,
					UINT32_MAX };
	struct evq *q = (struct evq *)(uintptr_t)1; /* must come back NULL */
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(evq_new(bad[i], &q), -EINVAL);
		assert_null(q);
	}
	assert_int_equal(evq_new(1, &q), 0);
	assert_int_equal(evq_capacity(q), 1);
	assert_true(push_seq(q, 0));
	assert_false(push_seq(q, 1));
	assert_stats(q, 1, 1, 1);
	evq_free(q);
	assert_int_equal(evq_new(4096, &q), 0);
	assert_int_equal(evq_capacity(q), 4096);
	assert_true(evq_fd(q) >= 0);
	evq_free(q);
	evq_free(NULL);
}

static void events_come_out_in_push_order(void **state)
{
	struct sl_outcome_event out[16];
	uint64_t seq, next = 0;
	struct evq *q;
	size_t n, i;

	(void)state;
	assert_int_equal(evq_new(16, &q), 0);
	for (seq = 0; seq < 10; seq++)
		assert_true(push_seq(q, seq));
	assert_stats(q, 10, 0, 10);
	/* Batches of 3: 3, 3, 3, 1, then nothing. */
	while ((n = evq_pop_batch(q, out, 3)) > 0) {
		assert_true(n <= 3);
		for (i = 0; i < n; i++) {
			assert_int_equal(out[i].ts_ns, next++);
			assert_true(ev_intact(&out[i]));
		}
	}
	assert_int_equal(next, 10);
	assert_stats(q, 10, 0, 0);
	assert_int_equal(evq_pop_batch(q, out, 16), 0);
	/* Asking for none takes none and leaves events queued. */
	assert_true(push_seq(q, 10));
	assert_int_equal(evq_pop_batch(q, out, 0), 0);
	assert_stats(q, 11, 0, 1);
	assert_int_equal(evq_pop_batch(q, out, 16), 1);
	assert_int_equal(out[0].ts_ns, 10);
	evq_free(q);
}

static void a_full_queue_drops_the_newest_and_counts_each(void **state)
{
	struct sl_outcome_event out[8];
	struct evq *q;
	uint64_t seq;
	size_t i;

	(void)state;
	assert_int_equal(evq_new(8, &q), 0);
	for (seq = 0; seq < 20; seq++)
		assert_int_equal(push_seq(q, seq), seq < 8);
	assert_stats(q, 8, 12, 8);

	/* Room for three: three of five go in, the later two are dropped. */
	assert_int_equal(evq_pop_batch(q, out, 3), 3);
	for (i = 0; i < 3; i++)
		assert_int_equal(out[i].ts_ns, i);
	for (seq = 100; seq < 105; seq++)
		assert_int_equal(push_seq(q, seq), seq < 103);
	assert_stats(q, 11, 14, 8);

	assert_int_equal(evq_pop_batch(q, out, 8), 8);
	for (i = 0; i < 5; i++)
		assert_int_equal(out[i].ts_ns, 3 + i);
	for (i = 5; i < 8; i++)
		assert_int_equal(out[i].ts_ns, 100 + i - 5);
	assert_stats(q, 11, 14, 0);
	assert_true(push_seq(q, 200));
	assert_stats(q, 12, 14, 1);
	evq_free(q);
}

/* Capacity 8 and uneven pushes and pops: the ring wraps more than 10^5 times, and batches
 * straddle the end of the array (the two-part copy) at every offset. */
static void wraparound_many_times(void **state)
{
	struct sl_outcome_event out[8];
	uint64_t pushed = 0, popped = 0, round;
	struct evq *q;
	size_t n, i;

	(void)state;
	assert_int_equal(evq_new(8, &q), 0);
	for (round = 0; round < 300000; round++) {
		size_t k = round % 7 + 1, want = (round * 5) % 8 + 1;

		for (i = 0; i < k; i++)
			if (push_seq(q, pushed))
				pushed++;
		n = evq_pop_batch(q, out, want);
		for (i = 0; i < n; i++) {
			if (out[i].ts_ns != popped || !ev_intact(&out[i]))
				fail_msg("round %llu: got seq %llu, expected %llu",
					 (unsigned long long)round,
					 (unsigned long long)out[i].ts_ns,
					 (unsigned long long)popped);
			popped++;
		}
	}
	while ((n = evq_pop_batch(q, out, 8)) > 0)
		for (i = 0; i < n; i++)
			assert_int_equal(out[i].ts_ns, popped++);
	assert_int_equal(popped, pushed);
	assert_true(pushed / 8 > 100000);
	evq_free(q);
}

static void the_fd_wakes_on_the_first_event_after_an_empty_pop(void **state)
{
	struct sl_outcome_event out[128];
	struct evq *q;
	uint64_t seq;

	(void)state;
	assert_int_equal(evq_new(128, &q), 0);
	assert_false(fd_readable(q));
	assert_int_equal(evq_drain_fd(q), 0);

	/* A fresh queue is armed: its first event signals, the next 99 do not. */
	assert_true(push_seq(q, 0));
	assert_true(fd_readable(q));
	for (seq = 1; seq < 100; seq++)
		assert_true(push_seq(q, seq));
	assert_int_equal(evq_wakes(q), 1);
	assert_int_equal(evq_drain_fd(q), 1);
	assert_false(fd_readable(q));
	assert_int_equal(evq_drain_fd(q), 0);

	/* A pop that returns events, even the last ones, does not arm: the consumer is awake. */
	assert_int_equal(evq_pop_batch(q, out, 128), 100);
	assert_true(push_seq(q, 100));
	assert_false(fd_readable(q));
	assert_int_equal(evq_wakes(q), 1);
	assert_int_equal(evq_pop_batch(q, out, 128), 1);

	/* An empty pop arms; nothing signals until an event comes. */
	assert_int_equal(evq_pop_batch(q, out, 128), 0);
	assert_false(fd_readable(q));
	assert_true(push_seq(q, 101));
	assert_true(fd_readable(q));
	assert_int_equal(evq_wakes(q), 2);
	assert_int_equal(evq_drain_fd(q), 1);

	/* Filling up and dropping signal nothing more: the consumer was told at the first. */
	for (seq = 102; seq < 1000; seq++)
		push_seq(q, seq);
	assert_stats(q, 102 + 127, 898 - 127, 128);
	assert_int_equal(evq_wakes(q), 2);
	assert_false(fd_readable(q));
	evq_free(q);
}

/* ---- two threads ---------------------------------------------------------------------- */

struct consumer {
	struct evq *q;
	atomic_bool done;       /* the producer has made its last push */
	atomic_bool failed;     /* the consumer has seen enough: stop pushing */
	_Atomic uint64_t pushes; /* evq_push() calls that have returned */
	uint64_t popped, disorder, corrupt, lost_wakes, sleeps;
};

/* Checks strict order (drops leave gaps, never reversals) and every byte of every event. */
static void consume(struct consumer *c, const struct sl_outcome_event *ev, size_t n,
		    uint64_t *last)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (c->popped + i > 0 && ev[i].ts_ns <= *last)
			c->disorder++;
		if (!ev_intact(&ev[i]))
			c->corrupt++;
		*last = ev[i].ts_ns;
	}
	c->popped += n;
}

static void *spinning_consumer(void *arg)
{
	struct sl_outcome_event buf[BATCH];
	struct consumer *c = arg;
	uint64_t last = 0, batches = 0;
	size_t n;

	for (;;) {
		n = evq_pop_batch(c->q, buf, BATCH);
		if (n) {
			consume(c, buf, n, &last);
			/* Fall behind now and then so the producer meets a full ring. */
			if (++batches % 512 == 0)
				nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
			continue;
		}
		if (atomic_load_explicit(&c->done, memory_order_acquire)) {
			/* done was set after the last push: one more look sees everything. */
			while ((n = evq_pop_batch(c->q, buf, BATCH)) > 0)
				consume(c, buf, n, &last);
			return NULL;
		}
		sched_yield();
	}
}

static uint64_t stress_n(void)
{
	const char *s = getenv("EVQ_STRESS_N");

	return s && *s ? strtoull(s, NULL, 0) : STRESS_N_DEFAULT;
}

static void two_threads_lose_and_reorder_nothing(void **state)
{
	struct consumer c = { 0 };
	uint64_t n = stress_n(), seq, refused = 0, pushed, dropped, depth;
	struct sl_outcome_event ev;
	pthread_t t;

	(void)state;
	assert_int_equal(evq_new(STRESS_CAP, &c.q), 0);
	assert_int_equal(pthread_create(&t, NULL, spinning_consumer, &c), 0);
	for (seq = 0; seq < n; seq++) {
		ev_make(&ev, seq);
		if (!evq_push(c.q, &ev))
			refused++;
	}
	atomic_store_explicit(&c.done, true, memory_order_release);
	assert_int_equal(pthread_join(t, NULL), 0);

	evq_stats(c.q, &pushed, &dropped, &depth);
	print_message("%llu attempts: %llu popped, %llu dropped, %llu wakes\n",
		      (unsigned long long)n, (unsigned long long)c.popped,
		      (unsigned long long)dropped, (unsigned long long)evq_wakes(c.q));
	assert_int_equal(c.disorder, 0);
	assert_int_equal(c.corrupt, 0);
	assert_int_equal(c.popped + dropped, n);
	assert_int_equal(pushed, c.popped);
	assert_int_equal(dropped, refused);
	assert_int_equal(depth, 0);
	evq_free(c.q);
}

/* The documented consumer loop: poll, drain, pop until empty. A poll that times out with
 * events waiting is a lost wake. */
static void *sleeping_consumer(void *arg)
{
	struct sl_outcome_event buf[BATCH];
	struct consumer *c = arg;
	struct pollfd p = { .fd = evq_fd(c->q), .events = POLLIN };
	uint64_t last = 0;
	size_t n;
	int r;

	for (;;) {
		c->sleeps++;
		r = poll(&p, 1, LOST_WAKE_MS);
		if (r < 0 && errno == EINTR)
			continue;
		evq_drain_fd(c->q);
		n = evq_pop_batch(c->q, buf, BATCH);
		if (r == 0 && n > 0) {
			c->lost_wakes++;
			atomic_store(&c->failed, true);
		}
		while (n > 0) {
			consume(c, buf, n, &last);
			n = evq_pop_batch(c->q, buf, BATCH);
		}
		if (atomic_load_explicit(&c->done, memory_order_acquire))
			return NULL;
	}
}

static void wait_drained(struct consumer *c, bool yield)
{
	uint64_t depth;

	for (;;) {
		evq_stats(c->q, NULL, NULL, &depth);
		if (!depth || atomic_load(&c->failed))
			return;
		if (yield)
			sched_yield();
	}
}

/* Bursts of 1 to 64 events, each pushed once the last is consumed, so every burst meets a
 * consumer on its way to sleep or asleep: the race the wake handshake exists for. */
static void a_sleeping_consumer_is_always_woken(void **state)
{
	struct consumer c = { 0 };
	uint64_t seq = 0, pushed, dropped, depth, one = 1, burst, i, rng = 88172645463325252ull;
	pthread_t t;

	(void)state;
	assert_int_equal(evq_new(STRESS_CAP, &c.q), 0);
	assert_int_equal(pthread_create(&t, NULL, sleeping_consumer, &c), 0);
	for (burst = 0; burst < BURSTS && !atomic_load(&c.failed); burst++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17; /* xorshift64 */
		for (i = 0; i < rng % 64 + 1; i++)
			assert_true(push_seq(c.q, seq++));
		wait_drained(&c, true);
		/* Half the time give the consumer a moment to reach poll() before the next one. */
		if (rng & (1ull << 40))
			nanosleep(&(struct timespec){ .tv_nsec = 2000 }, NULL);
	}
	atomic_store_explicit(&c.done, true, memory_order_release);
	/* Everything was consumed; this only stops the consumer's last poll. */
	assert_int_equal(write(evq_fd(c.q), &one, sizeof(one)), sizeof(one));
	assert_int_equal(pthread_join(t, NULL), 0);

	evq_stats(c.q, &pushed, &dropped, &depth);
	print_message("%llu events in %d bursts: %llu wakes, %llu polls\n",
		      (unsigned long long)seq, BURSTS, (unsigned long long)evq_wakes(c.q),
		      (unsigned long long)c.sleeps);
	assert_int_equal(c.lost_wakes, 0);
	assert_int_equal(c.disorder, 0);
	assert_int_equal(c.corrupt, 0);
	assert_int_equal(c.popped, seq);
	assert_int_equal(pushed, seq);
	assert_int_equal(dropped, 0);
	assert_int_equal(depth, 0);
	/* At most one signal per event, and some: the consumer did sleep. */
	assert_true(evq_wakes(c.q) > 0);
	assert_true(evq_wakes(c.q) <= seq);
	evq_free(c.q);
}

/* Spin, but let the other thread have the CPU now and then on a busy machine. */
static void relax(unsigned *spins)
{
	if (++*spins % 1024 == 0)
		sched_yield();
}

/* The handshake alone, raced without sleeping so it runs a few hundred thousand times a
 * second: after each empty pop (armed) the consumer waits for an event and for the push
 * that made it to return, and then the fd must be readable. */
static void *arming_consumer(void *arg)
{
	struct sl_outcome_event buf[BATCH];
	struct consumer *c = arg;
	uint64_t last = 0, tail, depth;
	unsigned spins = 0;
	size_t n;

	for (;;) {
		n = evq_pop_batch(c->q, buf, BATCH);
		if (n) {
			consume(c, buf, n, &last);
			continue;
		}
		do {
			if (atomic_load_explicit(&c->done, memory_order_acquire))
				return NULL;
			evq_stats(c->q, &tail, NULL, &depth);
			relax(&spins);
		} while (!depth);
		while (atomic_load_explicit(&c->pushes, memory_order_acquire) < tail)
			relax(&spins);
		c->sleeps++;
		if (evq_drain_fd(c->q) != 1) {
			c->lost_wakes++;
			atomic_store(&c->failed, true);
		}
	}
}

static void the_wake_handshake_never_misses(void **state)
{
	struct consumer c = { 0 };
	uint64_t seq, pushed, dropped, depth;
	unsigned spins = 0;
	pthread_t t;

	(void)state;
	assert_int_equal(evq_new(STRESS_CAP, &c.q), 0);
	assert_int_equal(pthread_create(&t, NULL, arming_consumer, &c), 0);
	for (seq = 0; seq < HANDSHAKES && !atomic_load(&c.failed); seq++) {
		assert_true(push_seq(c.q, seq));
		atomic_fetch_add_explicit(&c.pushes, 1, memory_order_release);
		/* Push the next one the moment the consumer takes this one: mid-arming. */
		for (;;) {
			evq_stats(c.q, NULL, NULL, &depth);
			if (!depth || atomic_load(&c.failed))
				break;
			relax(&spins);
		}
	}
	atomic_store_explicit(&c.done, true, memory_order_release);
	assert_int_equal(pthread_join(t, NULL), 0);

	evq_stats(c.q, &pushed, &dropped, &depth);
	print_message("%llu events one at a time: %llu wakes, %llu seen armed\n",
		      (unsigned long long)seq, (unsigned long long)evq_wakes(c.q),
		      (unsigned long long)c.sleeps);
	assert_int_equal(c.lost_wakes, 0);
	assert_int_equal(c.disorder, 0);
	assert_int_equal(c.corrupt, 0);
	assert_int_equal(c.popped, seq);
	assert_int_equal(seq, HANDSHAKES);
	evq_free(c.q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(capacity_must_be_a_power_of_two),
		cmocka_unit_test(events_come_out_in_push_order),
		cmocka_unit_test(a_full_queue_drops_the_newest_and_counts_each),
		cmocka_unit_test(wraparound_many_times),
		cmocka_unit_test(the_fd_wakes_on_the_first_event_after_an_empty_pop),
		cmocka_unit_test(two_threads_lose_and_reorder_nothing),
		cmocka_unit_test(a_sleeping_consumer_is_always_woken),
		cmocka_unit_test(the_wake_handshake_never_misses),
	};

	return cmocka_run_group_tests_name("evq", tests, NULL, NULL);
}
