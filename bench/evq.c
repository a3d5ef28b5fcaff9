// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * evq: what the gateway's loop pays per login outcome it hands to the stream job.
 *
 * Producer-side cost of evq_push() (ns per call, on CLOCK_MONOTONIC around the producer's
 * loop), against a baseline where one exists: the same ring of slots under a pthread mutex.
 *   accept     one thread, the ring never full and nobody else touching it: the floor
 *   drop       the ring full and no consumer: the drop path, paid while the stream job stalls
 *   flat out   pushes back to back while a consumer thread pops batches, spinning (yielding
 *              when empty) or as it will run: poll(2) on evq_fd(), drain, pop until empty.
 *              The consumer cannot keep up with a producer that does nothing else, so most
 *              events are dropped: Mkept/s is what got through.
 *   paced      --rate pushes per second, each timed on its own, to a consumer on the eventfd
 *              that pops at once (so sleeps between events, and every push pays the wake)
 *              or lingers --linger-us after each wake before popping (one wake per batch).
 * "wakes/1k" counts the producer's write(2)s on the eventfd per thousand pushes. Threads are
 * pinned to CPUs 0 and 1 when there are two. Each case runs --repeat times; the run with the
 * median ns/push is shown.
 *
 *   evq [--events N] [--capacity C] [--batch B] [--repeat R] [--rate PER_S]
 *       [--paced-events N] [--linger-us US]
 *
 * Prints a table, then one JSON line per case ({"bench":"evq",...}). Exit status 1 if any
 * run lost count (popped + dropped != attempts).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evq.h"

#define MAX_REPEAT 15

struct opts {
	uint64_t events, paced_events;
	uint32_t capacity, batch, rate, linger_us;
	unsigned repeat;
};

static struct opts o = {
	.events = 20000000, .paced_events = 50000, .capacity = 4096, .batch = 256,
	.rate = 100000, .linger_us = 1000, .repeat = 5,
};
static uint64_t clock_pair_ns; /* what two now_ns() calls cost, taken off paced figures */
static bool pin;
static bool miscount;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pin_to(int cpu)
{
	cpu_set_t set;

	if (!pin)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* A plausible failure event; the loop changes only ts_ns, as the gateway would per login. */
static void ev_template(struct sl_outcome_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	memset(ev->account, 0xa5, sizeof(ev->account));
	memset(ev->password, 0x5a, sizeof(ev->password));
	ev->family = 4;
	ev->plen = 24;
	ev->known = 1;
	ev->prefix[0] = 198, ev->prefix[1] = 51, ev->prefix[2] = 100;
	ev->asn = 64496;
	ev->class_id = 255;
}

/* ---- the baseline: one mutex around the same ring ------------------------------------- */

struct mring {
	pthread_mutex_t mu;
	struct sl_outcome_event *slots;
	uint64_t head, tail, mask, dropped;
};

static int mring_init(struct mring *m, uint32_t capacity)
{
	memset(m, 0, sizeof(*m));
	m->slots = calloc(capacity, sizeof(*m->slots));
	if (!m->slots)
		return -ENOMEM;
	m->mask = capacity - 1;
	pthread_mutex_init(&m->mu, NULL);
	return 0;
}

static void mring_free(struct mring *m)
{
	pthread_mutex_destroy(&m->mu);
	free(m->slots);
}

static bool mring_push(struct mring *m, const struct sl_outcome_event *ev)
{
	bool ok;

	pthread_mutex_lock(&m->mu);
	ok = m->tail - m->head <= m->mask;
	if (ok)
		m->slots[m->tail++ & m->mask] = *ev;
	else
		m->dropped++;
	pthread_mutex_unlock(&m->mu);
	return ok;
}

static size_t mring_pop(struct mring *m, struct sl_outcome_event *out, size_t n)
{
	size_t k, i;

	pthread_mutex_lock(&m->mu);
	k = m->tail - m->head < n ? (size_t)(m->tail - m->head) : n;
	for (i = 0; i < k; i++)
		out[i] = m->slots[(m->head + i) & m->mask];
	m->head += k;
	pthread_mutex_unlock(&m->mu);
	return k;
}

/* ---- cases ---------------------------------------------------------------------------- */

enum kind { K_EVQ, K_MUTEX };
enum mode { M_ACCEPT, M_DROP, M_SPIN, M_EVENTFD, M_PACED, M_LINGER, M__N };

static char mode_name[M__N][48] = {
	[M_ACCEPT] = "accept, no consumer",
	[M_DROP] = "drop, ring full",
	[M_SPIN] = "flat out, consumer spinning",
	[M_EVENTFD] = "flat out, consumer on eventfd",
};

static bool two_threads(enum mode m)
{
	return m >= M_SPIN;
}

static bool on_eventfd(enum mode m)
{
	return m == M_EVENTFD || m == M_PACED || m == M_LINGER;
}

struct run {
	enum kind kind;
	enum mode mode;
	struct evq *q;
	struct mring m;
	atomic_bool done;
	uint64_t popped;
	/* results */
	uint64_t attempts, accepted, dropped, wakes, ns;
};

static size_t pop_any(struct run *r, struct sl_outcome_event *buf)
{
	return r->kind == K_EVQ ? evq_pop_batch(r->q, buf, o.batch) : mring_pop(&r->m, buf, o.batch);
}

static void *consumer(void *arg)
{
	struct run *r = arg;
	struct sl_outcome_event *buf = calloc(o.batch, sizeof(*buf));
	struct pollfd p = { .events = POLLIN };
	uint64_t sum = 0;
	size_t n, i;

	if (!buf)
		abort();
	pin_to(1);
	for (;;) {
		bool done = atomic_load_explicit(&r->done, memory_order_acquire);

		while ((n = pop_any(r, buf)) > 0) {
			for (i = 0; i < n; i++) /* touch what was copied, as a real consumer would */
				sum += buf[i].ts_ns;
			r->popped += n;
		}
		if (done)
			break;
		if (on_eventfd(r->mode)) {
			p.fd = evq_fd(r->q);
			poll(&p, 1, 100);
			evq_drain_fd(r->q);
			/* Let events gather before popping: one wake per linger, not per event. */
			if (r->mode == M_LINGER)
				nanosleep(&(struct timespec){ .tv_nsec = o.linger_us * 1000l }, NULL);
		} else {
			sched_yield();
		}
	}
	free(buf);
	return (void *)(uintptr_t)(sum & 1); /* keep the loop */
}

static bool push_any(struct run *r, const struct sl_outcome_event *ev)
{
	return r->kind == K_EVQ ? evq_push(r->q, ev) : mring_push(&r->m, ev);
}

static int run_once(struct run *r)
{
	struct sl_outcome_event ev, *sink = NULL;
	uint64_t i, t0, refused = 0, dropped = 0, one = 1;
	pthread_t t;
	int err;

	ev_template(&ev);
	err = r->kind == K_EVQ ? evq_new(o.capacity, &r->q) : mring_init(&r->m, o.capacity);
	if (err)
		return err;
	atomic_init(&r->done, false);
	r->popped = 0;

	if (r->mode == M_DROP) /* fill it: every timed push then takes the drop path */
		for (i = 0; i < o.capacity; i++)
			push_any(r, &ev);
	if (r->mode == M_ACCEPT) {
		sink = calloc(o.capacity, sizeof(*sink));
		if (!sink)
			return -ENOMEM;
	}
	if (two_threads(r->mode)) {
		err = pthread_create(&t, NULL, consumer, r);
		if (err)
			return -err;
	}

	r->ns = 0;
	if (r->mode == M_ACCEPT) {
		/* Fill, time it, empty untimed, again: the producer alone on a ring with room. */
		for (i = 0; i < o.events; i += o.capacity) {
			uint64_t j;

			t0 = now_ns();
			for (j = 0; j < o.capacity; j++) {
				ev.ts_ns = i + j;
				push_any(r, &ev);
			}
			r->ns += now_ns() - t0;
			/* Exactly what is there: an empty pop would arm the wake. */
			if (r->kind == K_EVQ)
				evq_pop_batch(r->q, sink, o.capacity);
			else
				mring_pop(&r->m, sink, o.capacity);
		}
		r->attempts = i;
	} else if (r->mode == M_PACED || r->mode == M_LINGER) {
		/* One push every 1/rate s, each timed on its own: a login trickle. */
		uint64_t period = 1000000000ull / o.rate, next = now_ns() + period, t1;

		for (i = 0; i < o.paced_events; i++, next += period) {
			while (now_ns() < next)
				;
			ev.ts_ns = i;
			t0 = now_ns();
			refused += !push_any(r, &ev);
			t1 = now_ns();
			r->ns += t1 - t0 > clock_pair_ns ? t1 - t0 - clock_pair_ns : 0;
		}
		r->attempts = o.paced_events;
	} else {
		t0 = now_ns();
		for (i = 0; i < o.events; i++) {
			ev.ts_ns = i;
			refused += !push_any(r, &ev);
		}
		r->ns = now_ns() - t0;
		r->attempts = o.events;
	}

	if (two_threads(r->mode)) {
		atomic_store_explicit(&r->done, true, memory_order_release);
		if (r->kind == K_EVQ && write(evq_fd(r->q), &one, sizeof(one)) < 0)
			return -errno;
		pthread_join(t, NULL);
	}

	if (r->kind == K_EVQ) {
		evq_stats(r->q, &r->accepted, &dropped, NULL);
		r->wakes = evq_wakes(r->q);
		evq_free(r->q);
	} else {
		r->accepted = r->m.tail;
		dropped = r->m.dropped;
		r->wakes = 0;
		mring_free(&r->m);
	}
	free(sink);
	if (r->mode == M_DROP) { /* the untimed fill is not part of the figure */
		r->accepted -= o.capacity;
	}
	r->dropped = dropped;
	if (two_threads(r->mode) &&
	    (r->popped + dropped != r->attempts || dropped != refused)) {
		fprintf(stderr, "evq: %s lost count: popped %llu + dropped %llu != %llu\n",
			mode_name[r->mode], (unsigned long long)r->popped,
			(unsigned long long)dropped, (unsigned long long)r->attempts);
		miscount = true;
	}
	return 0;
}

static int cmp_run(const void *a, const void *b)
{
	const struct run *x = a, *y = b;
	double nx = (double)x->ns / (double)x->attempts, ny = (double)y->ns / (double)y->attempts;

	return nx < ny ? -1 : nx > ny;
}

/* The median of --repeat runs, by ns per push. */
static int run_case(enum kind kind, enum mode mode, struct run *out)
{
	struct run runs[MAX_REPEAT];
	unsigned i;
	int err;

	for (i = 0; i < o.repeat; i++) {
		memset(&runs[i], 0, sizeof(runs[i]));
		runs[i].kind = kind;
		runs[i].mode = mode;
		err = run_once(&runs[i]);
		if (err)
			return err;
	}
	qsort(runs, o.repeat, sizeof(runs[0]), cmp_run);
	*out = runs[o.repeat / 2];
	return 0;
}

static double ns_per(const struct run *r)
{
	return (double)r->ns / (double)r->attempts;
}

static bool has_baseline(int k)
{
	return k == M_ACCEPT || k == M_DROP || k == M_SPIN;
}

static void usage(void)
{
	fprintf(stderr, "usage: evq [--events N] [--capacity C] [--batch B] [--repeat R] "
		"[--rate PER_S] [--paced-events N] [--linger-us US]\n");
	exit(2);
}

static uint64_t calibrate_clock_pair(void)
{
	uint64_t t0, best = UINT64_MAX;
	int i;

	for (i = 0; i < 100000; i++) {
		t0 = now_ns();
		t0 = now_ns() - t0;
		if (t0 < best)
			best = t0;
	}
	return best;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "events", required_argument, NULL, 'n' },
		{ "capacity", required_argument, NULL, 'c' },
		{ "batch", required_argument, NULL, 'b' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "rate", required_argument, NULL, 'R' },
		{ "paced-events", required_argument, NULL, 'p' },
		{ "linger-us", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct run e[M__N], m[M__N];
	int c, err, k;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'n': o.events = strtoull(optarg, NULL, 0); break;
		case 'c': o.capacity = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'b': o.batch = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'r': o.repeat = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'R': o.rate = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'p': o.paced_events = strtoull(optarg, NULL, 0); break;
		case 'l': o.linger_us = (uint32_t)strtoul(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (!o.events || !o.paced_events || !o.batch || !o.repeat || o.repeat > MAX_REPEAT ||
	    !o.rate || o.rate > 100000000 || o.linger_us >= 1000000 || !o.capacity ||
	    (o.capacity & (o.capacity - 1)) || o.capacity > EVQ_MAX_CAPACITY)
		usage();
	pin = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
	pin_to(0);
	clock_pair_ns = calibrate_clock_pair();
	snprintf(mode_name[M_PACED], sizeof(mode_name[M_PACED]), "%u/s, consumer on eventfd",
		 o.rate);
	snprintf(mode_name[M_LINGER], sizeof(mode_name[M_LINGER]),
		 "%u/s, consumer lingers %u us", o.rate, o.linger_us);

	for (k = 0; k < M__N; k++) {
		err = run_case(K_EVQ, k, &e[k]);
		if (!err && has_baseline(k))
			err = run_case(K_MUTEX, k, &m[k]);
		if (err) {
			fprintf(stderr, "evq: %s: %s\n", mode_name[k], strerror(-err));
			return 1;
		}
	}

	printf("evq: %llu pushes per run (%llu paced), capacity %u, pop batch %u, median of %u%s\n",
	       (unsigned long long)o.events, (unsigned long long)o.paced_events, o.capacity,
	       o.batch, o.repeat, pin ? ", pinned to CPUs 0 and 1" : "");
	printf("%-34s %8s %8s %6s %9s %9s %7s %9s\n", "case", "evq ns", "mutex ns", "ratio",
	       "Mpush/s", "Mkept/s", "drop %", "wakes/1k");
	for (k = 0; k < M__N; k++) {
		char mns[16] = "-", ratio[16] = "-", rate[16] = "-", kept[16] = "-";
		double ns = ns_per(&e[k]);

		if (has_baseline(k)) {
			snprintf(mns, sizeof(mns), "%.1f", ns_per(&m[k]));
			snprintf(ratio, sizeof(ratio), "%.2f", ns_per(&m[k]) / ns);
		}
		if (k != M_PACED && k != M_LINGER) {
			snprintf(rate, sizeof(rate), "%.1f", 1e3 / ns);
			snprintf(kept, sizeof(kept), "%.1f",
				 1e3 * (double)e[k].accepted / (double)e[k].ns);
		}
		printf("%-34s %8.1f %8s %6s %9s %9s %7.1f %9.1f\n", mode_name[k], ns, mns, ratio,
		       rate, kept, 100.0 * (double)e[k].dropped / (double)e[k].attempts,
		       1e3 * (double)e[k].wakes / (double)e[k].attempts);
	}
	printf("ratio: mutex ns / evq ns (above 1: evq cheaper). Mpush/s: producer calls per "
	       "second;\nMkept/s: accepted ones per second of producer time. Paced rows time "
	       "each push alone\n(less %llu ns of clock reads): the wake's write(2) is in them.\n",
	       (unsigned long long)clock_pair_ns);
	for (k = 0; k < M__N; k++)
		printf("{\"bench\":\"evq\",\"case\":\"%s\",\"ns_per_push\":%.2f,"
		       "\"mutex_ns_per_push\":%.2f,\"attempts\":%llu,\"accepted\":%llu,"
		       "\"dropped\":%llu,\"wakes\":%llu}\n",
		       mode_name[k], ns_per(&e[k]), has_baseline(k) ? ns_per(&m[k]) : 0.0,
		       (unsigned long long)e[k].attempts, (unsigned long long)e[k].accepted,
		       (unsigned long long)e[k].dropped, (unsigned long long)e[k].wakes);
	return miscount;
}
