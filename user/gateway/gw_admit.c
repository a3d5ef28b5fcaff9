// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Admission glue: between a request that its endpoint has checked and the work that serves
 * it. gw_admit() asks the scheduler (gw_sched.h: reservations, the burst pool, the queue)
 * and, for an admitted request, starts it: on the Argon2id pool (gw_pool.h) when it needs a
 * hash, inline on the loop otherwise. gw_shed() is every capacity refusal's one answer,
 * with the escalating Retry-After of the ladder (gw_ladder.h). The pool's results and the
 * housekeeping tick (deadlines, CoDel, the connection sweep) come back here; a finished
 * hash's measured CPU reconciles its charge before its endpoint answers.
 */
#include <time.h>

#include <sodium.h>

#include "audit.h"
#include "gw_internal.h"
#include "gw_ladder.h"

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gw_audit(struct gw_req *r, int event, const char *reason, const char *decision,
	      const char *detail)
{
	struct gateway *g = r->g;
	struct audit_rec a = { .event = (enum audit_event)event, .source = "gateway",
			       .reason = reason, .decision = decision, .detail = detail };
	char prefix[GW_PREFIX_STR];
	uint8_t h[16];

	if (!audit_enabled())
		return;
	a.tenant = r->tenant[0] ? r->tenant : NULL;
	a.route = gw_endpoints[r->kind]->path;
	gw_prefix_of(g, r, prefix);
	a.prefix = prefix;
	if (r->hashed_ids) {
		a.account = r->acct_hash;
	} else if (r->user_len) {
		sl_audit_account_hash(g->key, sizeof(g->key), r->tenant, r->user, r->user_len, h);
		a.account = h;
	}
	audit_emit(&a);
}

void gw_shed(struct gw_req *r, int reason)
{
	struct gateway *g = r->g;
	struct gw_tstats *t = &g->ts[r->job.tenant];
	bool early = false;
	uint32_t ra;

	t->shed++;
	if (reason > 0 && reason < GW_SHED__MAX)
		t->shed_by_reason[reason]++;
	if (r->job.cls < GW_MAX_CLASSES)
		t->shed_by_class[r->job.cls]++;
	if (reason == GW_SHED_EXPIRED)
		g->st.expired_before_hash++;
	if (reason == GW_SHED_CLIENT_GONE)
		g->st.client_gone++;
	ra = gw_ladder_hit(g->ladder, &r->client, gw_now_ns(), randombytes_random(), &early);
	if (r->min_retry_s > ra)
		ra = r->min_retry_s;
	/* A login shed before its hash was no attempt at the password: give it back. */
	gw_chain_refund(r);
	/* A client that hung up was refused nothing. The failure budget's refusal is the
	 * account's lockout (for this source): a block. */
	if (reason != GW_SHED_CLIENT_GONE)
		gw_audit(r, reason == GW_SHED_FAILURES ? AUDIT_BLOCK : AUDIT_REFUSAL,
			 reason == GW_SHED_FAILURES ? "account_lockout" : gw_shed_name(reason),
			 "429", NULL);
	/* Every shed here is a 429 that climbs the client's Retry-After. A login a per-account
	 * counter refused never comes here under login_uniform: it is served like a wrong
	 * password (gw_login.c), so it feeds no Retry-After a later 429 could show. */
	/* Nobody is listening to a client that hung up: no floor to keep. */
	gw_respond(r, 429, "Too Many Requests", BODY_429, ra, reason != GW_SHED_CLIENT_GONE, early);
}

static void answer_drops(struct gateway *g, struct gw_drops *d)
{
	int i;

	for (i = 0; i < d->n; i++)
		gw_shed(req_of_job(d->job[i]), d->reason[i]);
	d->n = 0;
}

/* The scheduler's readiness test (gw_sched.h): a hash needs an idle Argon2id worker, a
 * forward a free connection to its upstream and room in its class's limit. A full
 * resource holds back only its own work. */
bool gw_job_ready(struct gw_job *j, void *arg)
{
	struct gateway *g = arg;
	struct gw_req *r = req_of_job(j);

	if (r->kind == K_PROXY)
		return gw_upstream_ready(g, r, gw_now_ns());
	return g->pool.busy < g->pool.n;
}

void gw_dispatch(struct gateway *g)
{
	struct gw_drops d = { .n = 0 };

	/* Upstream mode: a forward waits for a free connection to its upstream (and room in
	 * its class's limit) as a hash waits for a worker; the queue starts whatever job's own
	 * resource has room (gw_job_ready). */
	while (g->pool.busy < g->pool.n || gw_upstreams_room(g)) {
		uint64_t now = gw_now_ns();
		struct gw_job *j = gw_sched_next(g->sched, now, &d);
		struct gw_req *r;

		answer_drops(g, &d);
		if (!j)
			break;
		r = req_of_job(j);
		/* A client that hung up is not worth a hash. */
		if (g->sched->admission && gw_conn_gone(r->req)) {
			gw_sched_release(g->sched, j, now);
			gw_shed(r, GW_SHED_CLIENT_GONE);
			continue;
		}
		gw_hist_add(&g->ts[j->tenant].wait, now - j->admit_ns);
		r->work.deadline_ns = g->sched->admission ? j->deadline_ns : 0;
		if (r->kind == K_PROXY) {
			gw_upstream_forward(r);
			continue;
		}
		gw_endpoints[r->kind]->work(r);
		gw_pool_submit(&g->pool, &r->work);
	}
}

/* A hash is done: its measured CPU and wall time go to its tenant and its class. */
static void work_done(struct gw_req *r, uint64_t now)
{
	struct gateway *g = r->g;
	struct gw_tstats *t = &g->ts[r->job.tenant];
	struct gw_work *w = &r->work;
	double units = (double)w->cpu_ns / 100000.0;

	g->st.hashes++;
	t->hashes++;
	t->units_measured += units;
	gw_hist_add(&t->service, w->end_ns - w->start_ns);
	gw_sched_done(g->sched, &r->job, units, w->end_ns - w->start_ns, now);
}

void gw_on_pool(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *g = arg;
	struct gw_work *w = gw_pool_collect(&g->pool), *nx;

	(void)fd;
	(void)what;
	for (; w; w = nx) {
		struct gw_req *r = req_of_work(w);
		uint64_t now = gw_now_ns();

		nx = w->next;
		if (!w->ran) {
			/* The worker's own last look found the deadline passed. */
			g->st.expired_at_start++;
			gw_sched_release(g->sched, &r->job, now);
			gw_shed(r, GW_SHED_EXPIRED);
			continue;
		}
		work_done(r, now);
		gw_endpoints[r->kind]->finish(r);
	}
	gw_dispatch(g);
}

void gw_on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *g = arg;
	struct gw_drops d = { .n = 0 };
	uint64_t now = gw_now_ns();
	int rounds = 0;

	(void)fd;
	(void)what;
	/* Bounded: at most 16 batches of drops per tick, the rest next tick. */
	while (gw_sched_maintain(g->sched, now, &d) && ++rounds < 16)
		answer_drops(g, &d);
	answer_drops(g, &d);
	gw_dispatch(g);
	gw_hold_line(g); /* answers in line a timer could not be made for */
	if (++g->ticks % SWEEP_EVERY == 0)
		gw_conn_sweep(g, now);
}

void gw_admit(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct gw_job *victim = NULL;
	uint64_t now = gw_now_ns();
	int verdict, slot = r->job.tenant;
	double ceiling = r->tenant_idx >= 0 && r->tenant_idx < g->cfg->n_tenants ?
			 g->cfg->tenants[r->tenant_idx].ceiling : 0;

	/* The ceiling (the courtesy): a tenant whose consumption over the last second has
	 * reached it gets no more, burst pool or not. It is at least the reservation, so a
	 * tenant inside its floor never meets it. */
	if (ceiling > 0 && g->sched->admission &&
	    gw_meter_value(&g->sched->t[slot].cons, now) * 1e9 / GW_METER_TAU_NS >= ceiling) {
		gw_shed(r, GW_SHED_CEILING);
		return;
	}
	verdict = gw_sched_admit(g->sched, &r->job, now, &victim);
	if (victim)
		gw_shed(req_of_job(victim), GW_SHED_PUSHED_OUT);
	if (verdict != GW_SHED_NONE) {
		gw_shed(r, verdict);
		return;
	}
	if (r->job.lane == GW_LANE_RESERVED)
		g->ts[slot].admitted_reserved++;
	else
		g->ts[slot].admitted_burst++;
	if (r->job.pooled) {
		gw_dispatch(g);
		return;
	}
	r->cpu0 = thread_cpu_ns();
	gw_endpoints[r->kind]->run(r);
}

void gw_admit_done(struct gw_req *r)
{
	if (r->cpu0) {
		gw_sched_done(r->g->sched, &r->job, (double)(thread_cpu_ns() - r->cpu0) / 100000.0,
			      0, gw_now_ns());
		r->cpu0 = 0;
	}
}
