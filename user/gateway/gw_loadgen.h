/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A small HTTP/1.1 load generator on libevent for the gateway benchmarks (bench/monday.c,
 * bench/neighbour.c). Not used by sluiced. Two shapes of client:
 *
 *  - closed loop (a mobile SDK without backoff): each client sends, waits at most its
 *    deadline, and on anything but a 2xx (or a timeout, after dropping the connection)
 *    sends again at once; after a 2xx it thinks for think_s and sends the next one.
 *  - open loop (a tenant's baseline): requests arrive at a fixed rate whatever happens to
 *    the earlier ones, each on an idle keep-alive connection or a new one (up to
 *    max_conns; past that the arrival is counted as not sent).
 *
 * Everything is counted after the warm-up: attempts, statuses, timeouts, and latency of
 * 2xx answers and of all answers, in gw_hist histograms.
 */
#ifndef SLUICE_GW_LOADGEN_H
#define SLUICE_GW_LOADGEN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "gw_hist.h"

struct lg_conn;

struct lg_class {
	/* what */
	const char *name;
	const char *request;     /* the whole request, sent as is */
	char **requests;         /* or these in turn, when n_requests > 0 */
	uint32_t n_requests, next_request;
	/* how */
	bool closed_loop;
	uint32_t clients;        /* closed loop: concurrent clients */
	double think_s;          /* closed loop: pause after a 2xx */
	double rate;             /* open loop: arrivals per second */
	uint32_t max_conns;      /* open loop: connection cap */
	double deadline_s;       /* the client gives up after this */
	/* results, after the warm-up */
	uint64_t attempts, answered, ok, timeouts, errors, not_sent;
	uint64_t by_status[6];   /* 1xx..5xx */
	uint64_t s429, s401;
	struct gw_hist lat_ok, lat_all;
	/* internal */
	struct lg_conn *idle;
	uint32_t open_conns;
	struct event *arrival;
	uint64_t next_ns;        /* open loop: when the next arrival is due */
	struct lg *lg;
};

/*
 * Run @n classes against @dst for @warmup_s + @duration_s on @base. Returns 0, or a
 * negative errno when nothing could be set up.
 */
int lg_run(struct event_base *base, const struct sockaddr *dst, socklen_t dlen,
	   struct lg_class *cls, int n, double warmup_s, double duration_s);

/* A POST of @body (form-encoded) to @path with Host @host. Caller frees. */
char *lg_post(const char *host, const char *path, const char *body);
/* The same from a client behind a proxy: X-Forwarded-For @xff (none if NULL). */
char *lg_post_from(const char *host, const char *path, const char *xff, const char *body);

#endif
