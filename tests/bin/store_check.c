// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * store_check: drives the counter store (user/lib/store.c) for tests/net/test_store.sh.
 *
 *   once      one charge; exit 0 admitted, 1 refused; prints the answer's source
 *   run       charges every --interval-ms for --seconds; one JSON line per 100 ms window:
 *             admitted, refused, answers by source, the slowest answer, the breaker state
 *   composite 22,000 accounts behind 4 prefixes, plus an attacker hammering one account from
 *             its own prefix: prints how many of each were refused
 *
 * Options: --redis ADDR (none: in-process) --timeout-ms N --nodes N --rate R --burst B
 *          --cost C (once: 0 asks without charging, a negative cost refunds)
 *          --fail open|closed --static-rate R --static-burst B --key K --tenant T
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "log.h"
#include "store.h"

static struct event_base *base;
static struct sl_store *store;
static struct sl_limit lim = { .name = "t", .rate = 1, .burst = 5 };
static const char *key = "k", *tenant = "acme";
static double seconds = 3, interval_ms = 10;
static int verbose;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- once ---- */

static int once_result = 2;
static double once_cost = 1; /* once: 0 peeks, < 0 refunds */

static void once_cb(void *arg, int allowed, uint32_t retry_ms, int answer)
{
	(void)arg;
	(void)retry_ms;
	once_result = allowed ? 0 : 1;
	printf("%s %s\n", allowed ? "admitted" : "refused",
	       answer == SL_ANS_EXACT ? "exact" : answer == SL_ANS_LOCAL ? "local" : "static");
	event_base_loopexit(base, NULL);
}

static void start_once(evutil_socket_t fd, short w, void *a)
{
	(void)fd;
	(void)w;
	(void)a;
	sl_store_charge(store, &lim, tenant, key, once_cost, once_cb, NULL);
}

/* ---- run ---- */

struct window {
	long admitted, refused, by[3];
	double worst_ms;
};

static struct window win;
static double t0, win_start;
static int outstanding;

struct call {
	double sent;
};

static void flush_window(double t)
{
	struct sl_store_stats st;

	sl_store_get_stats(store, &st);
	printf("{\"t_ms\":%.0f,\"admitted\":%ld,\"refused\":%ld,\"exact\":%ld,\"local\":%ld,"
	       "\"static\":%ld,\"worst_ms\":%.2f,\"breaker\":\"%s\"}\n", t - t0, win.admitted,
	       win.refused, win.by[0], win.by[1], win.by[2], win.worst_ms,
	       sl_breaker_name(st.breaker));
	fflush(stdout);
	memset(&win, 0, sizeof(win));
}

static void run_cb(void *arg, int allowed, uint32_t retry_ms, int answer)
{
	struct call *c = arg;
	double lat = now_ms() - c->sent;

	(void)retry_ms;
	if (allowed)
		win.admitted++;
	else
		win.refused++;
	if (answer >= 0 && answer < 3)
		win.by[answer]++;
	if (lat > win.worst_ms)
		win.worst_ms = lat;
	outstanding--;
	free(c);
}

static void tick(evutil_socket_t fd, short w, void *a)
{
	double t = now_ms();
	struct call *c;

	(void)fd;
	(void)w;
	(void)a;
	if (t - win_start >= 100) {
		flush_window(t);
		win_start = t;
	}
	if (t - t0 >= seconds * 1000) {
		event_base_loopexit(base, NULL);
		return;
	}
	c = malloc(sizeof(*c));
	if (!c)
		return;
	c->sent = t;
	outstanding++;
	sl_store_charge(store, &lim, tenant, key, 1, run_cb, c);
}

/* ---- composite ---- */

static long refused_users, refused_attacker, admitted_alice_home;
static int pending_calls;

static void comp_cb(void *arg, int allowed, uint32_t retry_ms, int answer)
{
	long *which = arg;

	(void)retry_ms;
	(void)answer;
	if (which == &admitted_alice_home ? allowed : !allowed)
		(*which)++;
	if (--pending_calls == 0)
		event_base_loopexit(base, NULL);
}

static void start_composite(evutil_socket_t fd, short w, void *a)
{
	static const uint8_t hkey[32] = { 1, 2, 3 };
	static const char *const prefixes[4] = { "198.51.100.1/32", "198.51.100.2/32",
						 "198.51.100.3/32", "198.51.100.4/32" };
	char h[33], acct[32];
	int i;

	(void)fd;
	(void)w;
	(void)a;
	/* 22,000 people behind 4 NAT addresses, each failing once: nobody is refused. */
	for (i = 0; i < 22000; i++) {
		const char *parts[2] = { acct, prefixes[i % 4] };

		snprintf(acct, sizeof(acct), "user%05d", i);
		sl_store_hash(hkey, parts, 2, h);
		pending_calls++;
		sl_store_charge(store, &lim, tenant, h, 1, comp_cb, &refused_users);
	}
	/* An attacker hammers alice from 203.0.113.66: its pair runs dry ... */
	for (i = 0; i < 50; i++) {
		const char *parts[2] = { "alice", "203.0.113.66/32" };

		sl_store_hash(hkey, parts, 2, h);
		pending_calls++;
		sl_store_charge(store, &lim, tenant, h, 1, comp_cb, &refused_attacker);
	}
	/* ... and alice, from her own prefix, is untouched. */
	{
		const char *parts[2] = { "alice", "192.0.2.10/32" };

		sl_store_hash(hkey, parts, 2, h);
		pending_calls++;
		sl_store_charge(store, &lim, tenant, h, 1, comp_cb, &admitted_alice_home);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "redis", required_argument, NULL, 'r' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "nodes", required_argument, NULL, 'n' },
		{ "rate", required_argument, NULL, 'R' },
		{ "burst", required_argument, NULL, 'B' },
		{ "fail", required_argument, NULL, 'f' },
		{ "static-rate", required_argument, NULL, 's' },
		{ "static-burst", required_argument, NULL, 'S' },
		{ "key", required_argument, NULL, 'k' },
		{ "tenant", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 'd' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "cost", required_argument, NULL, 'c' },
		{ 0 }
	};
	struct sl_store_opts so = { .timeout_ms = 5, .nodes = 1, .breaker_failures = 3,
				    .breaker_open_ms = 300, .local_max_keys = 1 << 16 };
	char err[256];
	const char *mode;
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'r': so.redis = optarg; break;
		case 'T': so.timeout_ms = (uint32_t)atoi(optarg); break;
		case 'n': so.nodes = (uint32_t)atoi(optarg); break;
		case 'R': lim.rate = atof(optarg); break;
		case 'B': lim.burst = atof(optarg); break;
		case 'f': lim.fail = !strcmp(optarg, "closed") ? SL_FAIL_CLOSED : SL_FAIL_OPEN; break;
		case 's': lim.static_rate = atof(optarg); break;
		case 'S': lim.static_burst = atof(optarg); break;
		case 'k': key = optarg; break;
		case 't': tenant = optarg; break;
		case 'd': seconds = atof(optarg); break;
		case 'i': interval_ms = atof(optarg); break;
		case 'v': verbose = 1; break;
		case 'c': once_cost = atof(optarg); break;
		default: return 2;
		}
	}
	if (optind >= argc)
		return 2;
	mode = argv[optind];
	log_set_level(verbose ? LOG_LVL_INFO : LOG_LVL_ERROR);
	{
		/* Millisecond timeouts want the precise timer, as sluiced's loop does. */
		struct event_config *cfg = event_config_new();

		event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
		base = event_base_new_with_config(cfg);
		event_config_free(cfg);
	}
	store = sl_store_new(base, &so, err, sizeof(err));
	if (!base || !store) {
		fprintf(stderr, "store_check: %s\n", err);
		return 2;
	}
	if (!strcmp(mode, "once")) {
		/* Give the connection a moment: a first call would find it still connecting. */
		struct timeval tv = { 0, 50000 };

		event_base_once(base, -1, EV_TIMEOUT, start_once, NULL, &tv);
		event_base_dispatch(base);
		sl_store_free(store);
		return once_result;
	}
	if (!strcmp(mode, "run")) {
		struct timeval tv = { 0, (long)(interval_ms * 1000) }, wait = { 0, 50000 };
		struct event *ev = event_new(base, -1, EV_PERSIST, tick, NULL);

		event_base_loopexit(base, &wait);
		event_base_dispatch(base); /* connect */
		t0 = win_start = now_ms();
		event_add(ev, &tv);
		event_base_dispatch(base);
		flush_window(now_ms());
		event_free(ev);
		sl_store_free(store);
		return 0;
	}
	if (!strcmp(mode, "composite")) {
		struct timeval tv = { 0, 50000 };

		event_base_once(base, -1, EV_TIMEOUT, start_composite, NULL, &tv);
		event_base_dispatch(base);
		printf("{\"users_refused\":%ld,\"attacker_refused\":%ld,\"alice_home_admitted\":%ld}\n",
		       refused_users, refused_attacker, admitted_alice_home);
		sl_store_free(store);
		return 0;
	}
	return 2;
}
