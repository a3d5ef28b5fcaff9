/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The Argon2id worker pool: gateway.argon2 memory_budget / m_cost threads that do nothing
 * but verify passwords. The event loop hands a worker one job at a time, only when one is
 * idle, so nothing queues here: the admission queue is the only queue. Results go back
 * through a list and an eventfd the loop watches, so no loop callback ever blocks on a
 * worker and no worker ever touches libevent.
 *
 * A job carries its own copy of the PHC string and the password: a reload can replace the
 * credential store while hashes run, and the password is wiped as soon as it is used.
 *
 * A worker computes every hash on its own thread (gw_phc.h), whatever parallelism the
 * stored string carries, so its thread CPU clock is the whole cost admission reconciles.
 */
#ifndef SLUICE_GW_POOL_H
#define SLUICE_GW_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gw_body.h"
#include "gw_creds.h"

struct gw_work {
	struct gw_work *next;
	/* in */
	char phc[GW_PHC_MAX];
	char pwd[GW_PASS_MAX];
	uint32_t pwd_len;
	uint64_t deadline_ns;   /* 0: none; checked again as the worker picks it up */
	bool make;              /* hash pwd into phc (a sign-up) instead of verifying */
	uint32_t m_kib, t, p;   /* make: the Argon2id parameters */
	/* out */
	bool ran;               /* false: its deadline had passed, nothing was hashed */
	bool verified;          /* make: the hash was made */
	uint64_t cpu_ns;        /* thread CPU time of the hash: all of its cost */
	uint64_t start_ns, end_ns;
};

struct gw_pool {
	pthread_t *th;
	uint32_t n, started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct gw_work *in_head, *in_tail;
	struct gw_work *out_head, *out_tail;
	bool stop;
	int efd;                /* readable when results are waiting */
	uint32_t busy;          /* loop side: handed out, not yet collected */
};

/* Start @n workers. Returns 0 or a negative errno (nothing left running). */
int gw_pool_start(struct gw_pool *p, uint32_t n);
/* Loop side: give @w to an idle worker (the caller keeps busy < n). */
void gw_pool_submit(struct gw_pool *p, struct gw_work *w);
/* Loop side: drain the eventfd and take every finished job (a list via ->next). */
struct gw_work *gw_pool_collect(struct gw_pool *p);
/* Stop: workers finish the hash in hand and exit; jobs never started are returned.
 * gw_pool_collect() still returns the finished ones until gw_pool_destroy(). */
struct gw_work *gw_pool_stop(struct gw_pool *p);
void gw_pool_destroy(struct gw_pool *p);

uint64_t gw_now_ns(void); /* CLOCK_MONOTONIC */

#endif
