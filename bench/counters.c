// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * counters: what one counter check costs, and what an atomic check buys.
 *
 * Throughput (checks per second) and latency (p50, p99, from call to callback on
 * CLOCK_MONOTONIC, percentiles by nearest rank over the sorted samples) of:
 *   in-process  sl_store_charge() with no Redis: the baseline every ratio is taken against,
 *               measured at the start and again at the end of the run (the machine drifts);
 *   in-process, table full
 *               the same over a counter whose max_keys is a tenth of the keys cycled through:
 *               nearly every check is of a key its full table does not hold, so it looks for
 *               a move, evicts the least-spent entry and starts from its debt (the path a
 *               flood of fresh keys takes);
 *   script      sl_store_charge() against Redis: one EVALSHA of the store's GCRA script per
 *               check, at 1 check in flight (the round trip) and at --concurrency;
 *   naive       a read-modify-write built here on hiredis: GET the TAT, run the same GCRA in
 *               C (sluice/gcra.h), SET the new TAT. Two round trips, and not atomic.
 * In flight, "clients" share one libevent loop and one connection, as the store does; each
 * issues its next check when the previous one answers. Throughput keys are spread over
 * --keys keys with a limit that never refuses, so every check takes the writing path. Each
 * row also gives the CPU spent per check, in this process (getrusage) and in redis-server
 * (INFO cpu), over the whole case: what the bottleneck was on this machine.
 *
 * The table-full row prints what share of its checks evicted (from the store's counters).
 *
 * Over-admission: clients hammer ONE fresh key (burst --burst, a rate so small that nothing
 * refills during the run), each making 2 x burst checks. The store must admit exactly the
 * burst: in-process (it answers inside the call, so its "clients" take turns) and through
 * the script with --concurrency clients. The naive check admits exactly the burst with one
 * client, and more with --concurrency: a client reads a TAT that others are about to
 * overwrite.
 *
 *   counters [--redis unix:/path | HOST:PORT] [--duration S] [--warmup S] [--concurrency C]
 *            [--burst B] [--keys N] [--timeout-ms MS] [--label TEXT]
 *
 * Prints a table, then one JSON line per case ({"bench":"counters",...}). Without --redis
 * only the in-process rows run. Exit status 1 if the store did not admit exactly the burst.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "log.h"
#include "sluice/gcra.h"
#include "store.h"

#define MAX_SAMPLES (1u << 22) /* 16 MiB of latencies per case; beyond, every k-th */
#define INPROC_BATCH 1024
#define RACE_RATE 0.001        /* one unit per 1000 s: nothing refills during a run */
#define TPUT_RATE 1e6          /* a limit that never refuses at these speeds */

struct opts {
	const char *redis, *label;
	double duration, warmup;
	unsigned concurrency, burst, keys;
	uint32_t timeout_ms;
};

static struct opts o = {
	.duration = 3, .warmup = 0.3, .concurrency = 32, .burst = 100, .keys = 10000,
	.timeout_ms = 1000,
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The naive check's clock: wall time in microseconds, the unit the script keeps. */
static uint64_t now_us_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000ull + (uint64_t)ts.tv_nsec / 1000;
}

/* ---- latency samples --------------------------------------------------------------------- */

/* Every latency until the array is full; then every other one of those kept and every
 * 2nd new one, and so on: a uniform subsample of bounded size. */
struct samples {
	uint32_t *v; /* ns */
	size_t n;
	uint64_t seen, stride;
};

static void samples_add(struct samples *s, uint64_t ns)
{
	if (s->seen++ % s->stride)
		return;
	if (s->n == MAX_SAMPLES) {
		size_t i;

		for (i = 0; i < s->n / 2; i++)
			s->v[i] = s->v[2 * i];
		s->n /= 2;
		s->stride *= 2;
		return;
	}
	s->v[s->n++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

static int samples_init(struct samples *s)
{
	memset(s, 0, sizeof(*s));
	s->stride = 1;
	s->v = malloc(MAX_SAMPLES * sizeof(*s->v));
	return s->v ? 0 : -ENOMEM;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest sample with at least @p percent of them at or below it. */
static double percentile_us(const struct samples *s, double p)
{
	size_t rank;

	if (!s->n)
		return 0;
	rank = (size_t)ceil(p / 100.0 * (double)s->n);
	if (rank < 1)
		rank = 1;
	if (rank > s->n)
		rank = s->n;
	return s->v[rank - 1] / 1000.0;
}

/* ---- results --------------------------------------------------------------------------- */

struct result {
	const char *kase, *desc;
	unsigned inflight;
	uint64_t checks;     /* answered inside the measured window */
	double secs;
	uint64_t not_exact;  /* answers that were not the store's own (timeouts, errors) */
	double p50, p90, p99, max;
	double rate;         /* checks per second */
	/* CPU per check over the whole case (warm-up and drain too), in microseconds: this
	 * process (the client and the store's code) and redis-server (INFO cpu). */
	double client_cpu_us, server_cpu_us;
};

static void result_finish(struct result *r, struct samples *s)
{
	qsort(s->v, s->n, sizeof(*s->v), cmp_u32);
	r->p50 = percentile_us(s, 50);
	r->p90 = percentile_us(s, 90);
	r->p99 = percentile_us(s, 99);
	r->max = s->n ? s->v[s->n - 1] / 1000.0 : 0;
	if (!r->rate)
		r->rate = r->secs > 0 ? (double)r->checks / r->secs : 0;
}

struct race {
	const char *kase, *desc;
	int kind;                /* enum kind */
	bool remote;             /* against Redis: its key is to be deleted after the run */
	char key[64];
	unsigned clients, burst;
	uint64_t attempts, admitted, not_exact;
	double secs;
};

/* ---- shared state ---------------------------------------------------------------------- */

static struct event_base *base;
static char (*keynames)[24];
static const char *transport = "none";

static const struct sl_limit tput_lim = { .name = "tput", .rate = TPUT_RATE,
					  .burst = TPUT_RATE };
/* The full table: one unit a second and a burst of 10^9 (nothing refills or refuses during
 * a run), max_keys set in main() to a tenth of --keys. */
static struct sl_limit full_lim = { .name = "full", .rate = 1, .burst = 1e9 };
static struct sl_limit race_lim = { .name = "race", .rate = RACE_RATE };

static struct event_base *new_base(void)
{
	/* Millisecond timeouts want the precise timer, as sluiced's loop does. */
	struct event_config *cfg = event_config_new();
	struct event_base *b;

	if (!cfg)
		return NULL;
	event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
	b = event_base_new_with_config(cfg);
	event_config_free(cfg);
	return b;
}

static struct sl_store *new_store(const char *redis)
{
	struct sl_store_opts so = {
		.redis = redis, .timeout_ms = o.timeout_ms, .nodes = 1,
		/* A slow answer on a busy box is a result here, not a reason to fall back. */
		.breaker_failures = 1000000, .breaker_open_ms = 100, .prefix = "slbench",
		.local_max_keys = (size_t)o.keys * 2,
	};
	char err[256] = "";
	struct sl_store *s = sl_store_new(base, &so, err, sizeof(err));
	struct sl_store_stats st;
	uint64_t until = now_ns() + 3000000000ull;

	if (!s) {
		fprintf(stderr, "counters: %s\n", err);
		return NULL;
	}
	if (!redis)
		return s;
	do {
		struct timeval tv = { 0, 20000 };

		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
		sl_store_get_stats(s, &st);
	} while (!st.connected && now_ns() < until);
	if (!st.connected) {
		fprintf(stderr, "counters: cannot connect to redis at %s\n", redis);
		sl_store_free(s);
		return NULL;
	}
	return s;
}

/* ---- the naive check: GET, GCRA in C, SET -------------------------------------------------- */

struct naive {
	redisAsyncContext *ac;
	bool connected, failed;
};

static struct naive nv;

static void naive_on_connect(const redisAsyncContext *ac, int status)
{
	(void)ac;
	if (status == REDIS_OK)
		nv.connected = true;
	else
		nv.failed = true;
}

static void naive_on_disconnect(const redisAsyncContext *ac, int status)
{
	(void)ac;
	(void)status;
	nv.ac = NULL;
	nv.connected = false;
	nv.failed = true;
}

static void on_ignore(redisAsyncContext *ac, void *r, void *priv)
{
	(void)ac;
	(void)r;
	(void)priv;
}

static int naive_connect(const char *addr)
{
	uint64_t until = now_ns() + 3000000000ull;

	if (!strncmp(addr, "unix:", 5)) {
		nv.ac = redisAsyncConnectUnix(addr + 5);
	} else {
		char host[200];
		const char *colon = strrchr(addr, ':');
		size_t n = colon ? (size_t)(colon - addr) : strlen(addr);

		if (n >= sizeof(host))
			n = sizeof(host) - 1;
		memcpy(host, addr, n);
		host[n] = '\0';
		nv.ac = redisAsyncConnect(host, colon ? atoi(colon + 1) : 6379);
	}
	if (!nv.ac || nv.ac->err) {
		fprintf(stderr, "counters: naive client: %s\n",
			nv.ac ? nv.ac->errstr : "out of memory");
		if (nv.ac)
			redisAsyncFree(nv.ac);
		nv.ac = NULL;
		return -1;
	}
	if (redisLibeventAttach(nv.ac, base) != REDIS_OK) {
		redisAsyncFree(nv.ac);
		nv.ac = NULL;
		return -1;
	}
	redisAsyncSetConnectCallback(nv.ac, naive_on_connect);
	redisAsyncSetDisconnectCallback(nv.ac, naive_on_disconnect);
	/* hiredis 0.14 reports the connection from its write handler: give it a write. */
	redisAsyncCommand(nv.ac, on_ignore, NULL, "PING");
	while (!nv.connected && !nv.failed && now_ns() < until) {
		struct timeval tv = { 0, 20000 };

		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
	if (!nv.connected) {
		fprintf(stderr, "counters: naive client cannot connect to %s\n", addr);
		return -1;
	}
	return 0;
}

static double process_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct info_wait {
	bool done;
	double cpu;
};

static void on_info(redisAsyncContext *ac, void *r, void *priv)
{
	struct info_wait *w = priv;
	redisReply *reply = r;
	const char *u, *s;

	(void)ac;
	w->done = true;
	if (!reply || reply->type != REDIS_REPLY_STRING)
		return;
	s = strstr(reply->str, "used_cpu_sys:");
	u = strstr(reply->str, "used_cpu_user:");
	if (s && u)
		w->cpu = atof(s + 13) + atof(u + 14);
}

/* redis-server's CPU time (system + user, main and I/O threads), or -1. */
static double redis_cpu_s(void)
{
	struct info_wait w = { .cpu = -1 };
	uint64_t until = now_ns() + 2000000000ull;

	if (!nv.ac || redisAsyncCommand(nv.ac, on_info, &w, "INFO cpu") != REDIS_OK)
		return -1;
	while (!w.done && now_ns() < until) {
		struct timeval tv = { 0, 2000 };

		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
	if (!w.done) {
		/* The reply may still come: it must not land in this stack frame. */
		fprintf(stderr, "counters: redis did not answer INFO in 2 s\n");
		exit(1);
	}
	return w.cpu;
}

/* ---- the closed-loop driver --------------------------------------------------------------- */

enum kind { K_SCRIPT, K_NAIVE };

struct run;

struct client {
	struct run *r;
	const char *key;
	uint64_t seq, sent, left;
	bool in_call, again;
	/* naive: the limit's numbers in the script's units */
	uint64_t T_us, tau_us;
	char nkey[96];
};

struct run {
	enum kind kind;
	struct sl_store *store;
	const struct sl_limit *lim;
	bool race;                /* one key, a fixed number of checks per client */
	bool measuring, stopping;
	uint64_t t_start, t_stop;
	uint64_t outstanding;
	uint64_t checks, admitted, not_exact;
	uint64_t answered;        /* every answer, warm-up and drain included */
	struct samples *s;
};

static void client_issue(struct client *c);

/* One check answered: record it, and start the client's next one. */
static void client_done(struct client *c, int allowed, bool exact)
{
	struct run *r = c->r;
	uint64_t t = now_ns();

	r->outstanding--;
	r->answered++;
	if (r->race) {
		r->checks++;
		r->admitted += allowed ? 1 : 0;
		r->not_exact += exact ? 0 : 1;
	} else if (r->measuring && !r->stopping) {
		r->checks++;
		r->not_exact += exact ? 0 : 1;
		samples_add(r->s, t - c->sent);
	}
	if (r->stopping || (r->race && !c->left)) {
		if (!r->outstanding)
			event_base_loopbreak(base);
		return;
	}
	/* A fallback answer comes before sl_store_charge() returns: loop, don't recurse. */
	if (c->in_call)
		c->again = true;
	else
		client_issue(c);
}

static void store_answer(void *arg, int allowed, uint32_t retry_ms, int answer)
{
	(void)retry_ms;
	client_done(arg, allowed, answer == SL_ANS_EXACT);
}

static void naive_on_set(redisAsyncContext *ac, void *r, void *priv)
{
	redisReply *reply = r;

	(void)ac;
	client_done(priv, reply && reply->type == REDIS_REPLY_STATUS,
		    reply && reply->type == REDIS_REPLY_STATUS);
}

static void naive_on_get(redisAsyncContext *ac, void *r, void *priv)
{
	struct client *c = priv;
	redisReply *reply = r;
	__u64 now = now_us_real(), tat = now, next = 0;

	(void)ac;
	if (!reply || (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_NIL)) {
		client_done(c, 0, false);
		return;
	}
	if (reply->type == REDIS_REPLY_STRING)
		tat = strtoull(reply->str, NULL, 10);
	/* What the TAT was a round trip ago decides; another client may have moved it since. */
	if (!sl_gcra_charge(tat, now, 1, c->T_us, c->tau_us, &next)) {
		client_done(c, 0, true);
		return;
	}
	if (!nv.ac ||
	    redisAsyncCommand(nv.ac, naive_on_set, c, "SET %s %" PRIu64 " PX %" PRIu64, c->nkey,
			      (uint64_t)next, (uint64_t)(next - now) / 1000 + 1) != REDIS_OK)
		client_done(c, 0, false);
}

static void client_issue(struct client *c)
{
	struct run *r = c->r;

	do {
		c->again = false;
		c->in_call = true;
		if (!r->race)
			c->key = keynames[(c->seq++ * 2654435761u) % o.keys];
		if (c->left)
			c->left--;
		r->outstanding++;
		c->sent = now_ns();
		if (r->kind == K_SCRIPT) {
			sl_store_charge(r->store, r->lim, "bench", c->key, 1, store_answer, c);
		} else {
			if (!r->race)
				snprintf(c->nkey, sizeof(c->nkey), "slbench:naive:%s", c->key);
			if (!nv.ac || redisAsyncCommand(nv.ac, naive_on_get, c, "GET %s",
							c->nkey) != REDIS_OK)
				client_done(c, 0, false);
		}
		c->in_call = false;
	} while (c->again);
}

static void on_measure(evutil_socket_t fd, short w, void *arg)
{
	struct run *r = arg;

	(void)fd;
	(void)w;
	r->measuring = true;
	r->t_start = now_ns();
}

static void on_stop(evutil_socket_t fd, short w, void *arg)
{
	struct run *r = arg;

	(void)fd;
	(void)w;
	r->t_stop = now_ns();
	r->stopping = true;
	if (!r->outstanding)
		event_base_loopbreak(base);
}

static void on_watchdog(evutil_socket_t fd, short w, void *arg)
{
	(void)fd;
	(void)w;
	(void)arg;
	event_base_loopbreak(base);
}

static struct timeval tv_of(double s)
{
	struct timeval tv = { .tv_sec = (long)s, .tv_usec = (long)((s - (long)s) * 1e6) };

	return tv;
}

/* Run @n clients until @r says stop, then until the checks still out have answered. */
static int drive(struct run *r, unsigned n, const char *race_key)
{
	struct event *ev_measure = NULL, *ev_stop = NULL, *watchdog;
	struct client *c = calloc(n, sizeof(*c));
	uint64_t T = sl_gcra_emission(r->lim->rate);
	unsigned i;

	if (!c)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		c[i].r = r;
		c[i].seq = (uint64_t)i * 7919;
		c[i].T_us = (T + 500) / 1000;
		c[i].tau_us = (sl_gcra_tolerance(r->lim->burst, T) + 500) / 1000;
		if (r->race) {
			c[i].key = race_key;
			c[i].left = 2ull * o.burst;
			snprintf(c[i].nkey, sizeof(c[i].nkey), "slbench:naive-race:%s", race_key);
		}
	}
	if (!r->race) {
		struct timeval w = tv_of(o.warmup), d = tv_of(o.warmup + o.duration);

		ev_measure = evtimer_new(base, on_measure, r);
		ev_stop = evtimer_new(base, on_stop, r);
		if (!ev_measure || !ev_stop) {
			if (ev_measure)
				event_free(ev_measure);
			if (ev_stop)
				event_free(ev_stop);
			free(c);
			return -ENOMEM;
		}
		evtimer_add(ev_measure, &w);
		evtimer_add(ev_stop, &d);
	} else {
		r->t_start = now_ns();
	}
	/* The naive check has no timeout of its own: a watchdog, so a hung Redis ends the run. */
	watchdog = evtimer_new(base, on_watchdog, r);
	if (watchdog) {
		struct timeval tv = tv_of((r->race ? 10 : o.warmup + o.duration) +
					  o.timeout_ms / 1000.0 + 2);

		evtimer_add(watchdog, &tv);
	}
	for (i = 0; i < n; i++)
		client_issue(&c[i]);
	if (r->outstanding)
		event_base_dispatch(base);
	if (r->outstanding) {
		/* Their callbacks would find @c freed: there is no going on. */
		fprintf(stderr, "counters: %" PRIu64 " checks unanswered: is redis alive?\n",
			r->outstanding);
		exit(1);
	}
	if (r->race)
		r->t_stop = now_ns();
	if (watchdog)
		event_free(watchdog);
	if (ev_measure)
		event_free(ev_measure);
	if (ev_stop)
		event_free(ev_stop);
	free(c);
	return 0;
}

static int run_tput(enum kind kind, struct sl_store *store, unsigned n, struct result *res,
		    struct samples *s)
{
	struct run r = { .kind = kind, .store = store, .lim = &tput_lim, .s = s };
	double cpu0 = process_cpu_s(), srv0 = redis_cpu_s(), cpu1, srv1;
	int ret;

	s->n = 0;
	s->seen = 0;
	s->stride = 1;
	ret = drive(&r, n, NULL);
	cpu1 = process_cpu_s();
	srv1 = redis_cpu_s();
	if (r.answered) {
		res->client_cpu_us = (cpu1 - cpu0) * 1e6 / (double)r.answered;
		res->server_cpu_us = srv0 >= 0 && srv1 >= 0 ?
					     (srv1 - srv0) * 1e6 / (double)r.answered : -1;
	}
	res->inflight = n;
	res->checks = r.checks;
	res->not_exact = r.not_exact;
	res->secs = (double)(r.t_stop - r.t_start) / 1e9;
	res->rate = 0;
	result_finish(res, s);
	return ret;
}

/*
 * The in-process store answers inside the call, so there is nothing to have in flight: a
 * tight loop. Batches alternate between timing every call (the latencies) and timing only
 * the batch (the throughput, free of the clock reads' own cost).
 */
struct inproc {
	struct samples *s;
	uint64_t sent, checks, not_exact;
	bool timed;
};

static void inproc_answer(void *arg, int allowed, uint32_t retry_ms, int answer)
{
	struct inproc *x = arg;

	(void)allowed;
	(void)retry_ms;
	x->not_exact += answer == SL_ANS_EXACT ? 0 : 1;
	if (x->timed) {
		samples_add(x->s, now_ns() - x->sent);
		x->checks++;
	}
}

static void run_inproc(struct sl_store *store, const struct sl_limit *lim, double secs,
		       struct result *res, struct samples *s, uint64_t *untimed,
		       double *untimed_secs)
{
	struct inproc x = { .s = s };
	uint64_t t_end, seq = 0, t0, t_start;
	unsigned i, batch = 0;

	t_end = now_ns() + (uint64_t)(o.warmup * 1e9);
	while (now_ns() < t_end)
		for (i = 0; i < INPROC_BATCH; i++)
			sl_store_charge(store, lim, "bench",
					keynames[(seq++ * 2654435761u) % o.keys], 1, inproc_answer,
					&x);
	x.not_exact = 0;
	t_start = now_ns();
	t_end = t_start + (uint64_t)(secs * 1e9);
	while ((t0 = now_ns()) < t_end) {
		x.timed = !(batch++ & 1);
		if (!x.timed) {
			for (i = 0; i < INPROC_BATCH; i++)
				sl_store_charge(store, lim, "bench",
						keynames[(seq++ * 2654435761u) % o.keys], 1,
						inproc_answer, &x);
			*untimed += INPROC_BATCH;
			*untimed_secs += (double)(now_ns() - t0) / 1e9;
			continue;
		}
		for (i = 0; i < INPROC_BATCH; i++) {
			const char *key = keynames[(seq++ * 2654435761u) % o.keys];

			x.sent = now_ns();
			sl_store_charge(store, lim, "bench", key, 1, inproc_answer, &x);
		}
	}
	res->checks += x.checks;
	res->not_exact += x.not_exact;
	res->secs += (double)(now_ns() - t_start) / 1e9;
}

/* @n clients, 2 x burst checks each, on a key of their own that nobody charged before. */
static int run_race(enum kind kind, struct sl_store *store, bool remote, unsigned n,
		    const char *desc, const char *kase, const char *run_id, struct race *out)
{
	struct run r = { .kind = kind, .store = store, .lim = &race_lim, .race = true };
	int ret;

	snprintf(out->key, sizeof(out->key), "%s-%s-%u", run_id, kase, n);
	ret = drive(&r, n, out->key);
	out->kind = kind;
	out->remote = remote;
	out->kase = kase;
	out->desc = desc;
	out->clients = n;
	out->burst = o.burst;
	out->attempts = r.checks;
	out->admitted = r.admitted;
	out->not_exact = r.not_exact;
	out->secs = (double)(r.t_stop - r.t_start) / 1e9;
	return ret;
}

/* ---- output -------------------------------------------------------------------------------- */

static void print_row(const struct result *r, double base_rate, double script_rate)
{
	char cpu[32] = "      -        -";

	if (r->client_cpu_us > 0)
		snprintf(cpu, sizeof(cpu), "%7.2f  %7.2f", r->client_cpu_us, r->server_cpu_us);
	printf("%-24s %5u %10.0f %8.2f %8.2f %8.2f %s %8.1fx", r->desc, r->inflight, r->rate,
	       r->p50, r->p99, r->max, cpu, base_rate / r->rate);
	if (script_rate > 0)
		printf(" %8.2fx", script_rate / r->rate);
	if (r->not_exact)
		printf("   (%" PRIu64 " not answered by the store itself)", r->not_exact);
	printf("\n");
}

/* The naive rows are compared with the script at the same number in flight. */
static double script_rate_for(const struct result *res, int i)
{
	return i == 3 ? res[1].rate : i == 4 ? res[2].rate : 0;
}

static void print_json(const struct result *r, double base_rate, double script_rate)
{
	printf("{\"bench\":\"counters\",\"label\":\"%s\",\"transport\":\"%s\",\"case\":\"%s\","
	       "\"in_flight\":%u,\"seconds\":%.2f,\"checks\":%" PRIu64 ",\"checks_per_s\":%.0f,"
	       "\"p50_us\":%.2f,\"p90_us\":%.2f,\"p99_us\":%.2f,\"max_us\":%.2f,"
	       "\"inproc_per_s\":%.0f,\"cost_vs_inproc\":%.2f",
	       o.label, transport, r->kase, r->inflight, r->secs, r->checks, r->rate, r->p50,
	       r->p90, r->p99, r->max, base_rate, base_rate / r->rate);
	if (script_rate > 0)
		printf(",\"cost_vs_script\":%.2f", script_rate / r->rate);
	if (r->client_cpu_us > 0)
		printf(",\"client_cpu_us\":%.2f,\"server_cpu_us\":%.2f", r->client_cpu_us,
		       r->server_cpu_us);
	printf(",\"not_exact\":%" PRIu64 "}\n", r->not_exact);
}

static void print_race_json(const struct race *x)
{
	printf("{\"bench\":\"counters\",\"label\":\"%s\",\"transport\":\"%s\",\"case\":\"%s\","
	       "\"clients\":%u,\"burst\":%u,\"rate_per_s\":%g,\"attempts\":%" PRIu64 ","
	       "\"admitted\":%" PRIu64 ",\"over_admission\":%.2f,\"not_exact\":%" PRIu64
	       ",\"seconds\":%.3f}\n",
	       o.label, transport, x->kase, x->clients, x->burst, RACE_RATE, x->attempts,
	       x->admitted, (double)x->admitted / x->burst, x->not_exact, x->secs);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: counters [--redis unix:/path | HOST:PORT] [--duration S] [--warmup S]\n"
		"                [--concurrency C] [--burst B] [--keys N] [--timeout-ms MS]\n"
		"                [--label TEXT]\n"
		"  --duration     seconds measured per throughput case (3); the in-process\n"
		"                 baseline runs half of it at the start and half at the end\n"
		"  --warmup       seconds run and discarded before each case (0.3)\n"
		"  --concurrency  checks in flight, and clients in the over-admission race (32)\n"
		"  --burst        the race's burst (100); each client makes 2 x burst checks\n"
		"  --keys         distinct keys the throughput cases cycle through (10000);\n"
		"                 the full-table case's max_keys is a tenth of them\n"
		"  --timeout-ms   the store's per-call timeout (1000: slow answers are results)\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "redis", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 'd' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "concurrency", required_argument, NULL, 'c' },
		{ "burst", required_argument, NULL, 'b' },
		{ "keys", required_argument, NULL, 'k' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "label", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct result res[5] = {
		{ .kase = "inproc", .desc = "in-process" },
		{ .kase = "script", .desc = "redis script (EVALSHA)" },
		{ .kase = "script", .desc = "redis script (EVALSHA)" },
		{ .kase = "naive", .desc = "naive GET + SET" },
		{ .kase = "naive", .desc = "naive GET + SET" },
	};
	struct result full = { .kase = "inproc-full", .desc = "in-process, table full" };
	struct race races[4];
	struct result half[2] = { { 0 } };
	struct sl_store_stats st0, st1;
	uint64_t full_untimed = 0;
	double full_untimed_secs = 0;
	struct sl_store *local = NULL, *remote = NULL;
	struct samples s, sb;
	uint64_t untimed[2] = { 0 };
	double untimed_secs[2] = { 0 }, base_rate;
	char run_id[48];
	int opt, nres = 1, nraces = 0, ret = 1, i;
	bool exact_ok = true;

	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'r': o.redis = optarg; break;
		case 'd': o.duration = atof(optarg); break;
		case 'w': o.warmup = atof(optarg); break;
		case 'c': o.concurrency = (unsigned)atoi(optarg); break;
		case 'b': o.burst = (unsigned)atoi(optarg); break;
		case 'k': o.keys = (unsigned)atoi(optarg); break;
		case 'T': o.timeout_ms = (uint32_t)atoi(optarg); break;
		case 'l': o.label = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (o.duration <= 0 || o.warmup < 0 || !o.concurrency || !o.burst || !o.keys ||
	    !o.timeout_ms) {
		usage(stderr);
		return 2;
	}
	if (o.redis)
		transport = !strncmp(o.redis, "unix:", 5) ? "unix" : "tcp";
	if (!o.label)
		o.label = transport;
	race_lim.burst = o.burst;
	full_lim.max_keys = o.keys / 10 ? o.keys / 10 : 1;
	log_set_level(LOG_LVL_ERROR);

	keynames = calloc(o.keys, sizeof(*keynames));
	base = new_base();
	if (!keynames || !base || samples_init(&s) || samples_init(&sb)) {
		fprintf(stderr, "counters: out of memory\n");
		return 1;
	}
	for (i = 0; i < (int)o.keys; i++)
		snprintf(keynames[i], sizeof(keynames[i]), "k%d", i);
	snprintf(run_id, sizeof(run_id), "r%d-%" PRIu64, (int)getpid(), now_ns());

	local = new_store(NULL);
	if (!local)
		goto out;
	if (o.redis) {
		remote = new_store(o.redis);
		if (!remote || naive_connect(o.redis))
			goto out;
	}

	/* The baseline, first half. */
	run_inproc(local, &tput_lim, o.duration / 2, &half[0], &sb, &untimed[0],
		   &untimed_secs[0]);
	if (o.redis) {
		static const unsigned at[4] = { 1, 0, 1, 0 };

		for (i = 0; i < 4; i++) {
			unsigned n = at[i] ? 1 : o.concurrency;
			struct result *r = &res[1 + i];

			if (run_tput(i < 2 ? K_SCRIPT : K_NAIVE, remote, n, r, &s)) {
				fprintf(stderr, "counters: out of memory\n");
				goto out;
			}
		}
		nres = 5;
	}
	/* The baseline, second half: its latencies are those of both halves together. */
	run_inproc(local, &tput_lim, o.duration / 2, &half[1], &sb, &untimed[1],
		   &untimed_secs[1]);
	res[0].inflight = 1;
	res[0].checks = half[0].checks + half[1].checks;
	res[0].not_exact = half[0].not_exact + half[1].not_exact;
	res[0].secs = half[0].secs + half[1].secs;
	res[0].rate = (double)(untimed[0] + untimed[1]) / (untimed_secs[0] + untimed_secs[1]);
	result_finish(&res[0], &sb);
	base_rate = res[0].rate;

	/* The full table: its warm-up fills it, then nearly every check evicts. */
	sb.n = 0;
	sb.seen = 0;
	sb.stride = 1;
	sl_store_get_stats(local, &st0);
	run_inproc(local, &full_lim, o.duration / 2, &full, &sb, &full_untimed,
		   &full_untimed_secs);
	sl_store_get_stats(local, &st1);
	full.inflight = 1;
	full.rate = (double)full_untimed / full_untimed_secs;
	result_finish(&full, &sb);

	/* Over-admission: one key, the same workload for each. */
	if (run_race(K_SCRIPT, local, false, o.concurrency, "in-process", "race-inproc", run_id,
		     &races[nraces++]))
		goto out;
	/* The naive check alone admits the burst exactly when nothing races it, so what it
	 * admits beyond that with company is the race and not its arithmetic. */
	if (o.redis &&
	    (run_race(K_SCRIPT, remote, true, o.concurrency, "redis script (EVALSHA)",
		      "race-script", run_id, &races[nraces++]) ||
	     run_race(K_NAIVE, remote, true, 1, "naive GET + SET", "race-naive", run_id,
		      &races[nraces++]) ||
	     run_race(K_NAIVE, remote, true, o.concurrency, "naive GET + SET", "race-naive",
		      run_id, &races[nraces++])))
		goto out;

	printf("counters: %s%s, %u in flight, %.1f s per case (+%.1f s warm-up), %ld CPU(s)\n",
	       o.redis ? "redis " : "in-process only", o.redis ? o.redis : "", o.concurrency,
	       o.duration, o.warmup, sysconf(_SC_NPROCESSORS_ONLN));
	printf("%-24s %5s %10s %8s %8s %8s %7s  %7s %9s %9s\n", "case", "in", "checks/s",
	       "p50 us", "p99 us", "max us", "cli cpu", "srv cpu", "cost", "vs script");
	for (i = 0; i < nres; i++)
		print_row(&res[i], base_rate, script_rate_for(res, i));
	print_row(&full, base_rate, 0);
	printf("in-process baseline: %.0f checks/s at the start, %.0f at the end (drift %+.1f%%)\n"
	       "table full: max_keys %u over %u keys; it evicted on %.1f%% of its %" PRIu64
	       " checks, warm-up included\n"
	       "cost: in-process checks/s over this row's; vs script: the script's checks/s at "
	       "the same number in flight over this row's\n"
	       "cli cpu, srv cpu: microseconds of CPU per check in this process (client and "
	       "store) and in redis-server, over the whole case\n",
	       untimed[0] / untimed_secs[0], untimed[1] / untimed_secs[1],
	       100.0 * ((untimed[1] / untimed_secs[1]) / (untimed[0] / untimed_secs[0]) - 1),
	       full_lim.max_keys, o.keys,
	       100.0 * (double)(st1.local_evictions - st0.local_evictions) /
		       (double)(st1.calls - st0.calls), st1.calls - st0.calls);
	printf("\nover-admission: one fresh key each, burst %u, %g/s (no refill during the "
	       "run), every client making %u checks\n", o.burst, RACE_RATE, 2 * o.burst);
	for (i = 0; i < nraces; i++) {
		const struct race *x = &races[i];
		bool store = x->kind == K_SCRIPT, exact = x->admitted == o.burst && !x->not_exact;

		printf("  %-24s %3u client(s): admitted %6" PRIu64 " of %6" PRIu64
		       " (%.2fx the burst)%s\n", x->desc, x->clients, x->admitted, x->attempts,
		       (double)x->admitted / x->burst,
		       exact ? "  exact" : store ? "  WRONG: the store must admit the burst" : "");
		if (store && !exact)
			exact_ok = false;
	}
	printf("\n");
	for (i = 0; i < nres; i++)
		print_json(&res[i], base_rate, script_rate_for(res, i));
	print_json(&full, base_rate, 0);
	for (i = 0; i < nraces; i++)
		print_race_json(&races[i]);
	fflush(stdout);
	ret = exact_ok ? 0 : 1;

	/* The race keys live for burst / rate seconds: don't leave them behind. */
	if (nv.ac) {
		for (i = 0; i < nraces; i++) {
			if (!races[i].remote)
				continue;
			if (races[i].kind == K_NAIVE)
				redisAsyncCommand(nv.ac, on_ignore, NULL,
						  "DEL slbench:naive-race:%s", races[i].key);
			else
				redisAsyncCommand(nv.ac, on_ignore, NULL,
						  "DEL slbench:{bench}:race:%s", races[i].key);
		}
		{
			struct timeval tv = { 0, 50000 };

			event_base_loopexit(base, &tv);
			event_base_dispatch(base);
		}
	}
out:
	if (nv.ac)
		redisAsyncFree(nv.ac);
	sl_store_free(remote);
	sl_store_free(local);
	if (base)
		event_base_free(base);
	free(s.v);
	free(sb.v);
	free(keynames);
	return ret;
}
