// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The admission scheduler (see gw_sched.h). Everything here runs on the event-loop thread
 * and costs microseconds: a shed decision must be far cheaper than the hash it prevents.
 * The worst case per call is O(tenants) (a DRR round sort, a push-out search), bounded by
 * GW_MAX_TENANTS.
 *
 * One file past 800 lines on purpose: its sections (buckets and meters, the DRR list, the
 * configuration, charges, admission, dequeue) all keep the invariants of one struct
 * gw_sched (queue depth, lanes, charges owed back) that every admission and every dequeue
 * must see whole; split, each part would reach into the others' state.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gw_sched.h"

/* 1 unit = 100 us of CPU. */
#define UNIT_NS 100000.0
/* Weight of a new sample in the class estimate and the service time: ~10 samples to
 * follow a real change, few enough that one slow hash does not move admission much. */
#define EWMA_ALPHA 0.2

static const char *const shed_names[GW_SHED__MAX] = {
	[GW_SHED_NONE] = "none",
	[GW_SHED_QUEUE_FULL] = "queue_full",
	[GW_SHED_PUSHED_OUT] = "pushed_out",
	[GW_SHED_POOL_EMPTY] = "pool_empty",
	[GW_SHED_CODEL] = "codel",
	[GW_SHED_EXPIRED] = "expired",
	[GW_SHED_DB_FULL] = "db_full",
	[GW_SHED_CLIENT_GONE] = "client_gone",
	[GW_SHED_FAILURES] = "login_failures",
	[GW_SHED_SUCCESSES] = "login_successes",
	[GW_SHED_TENANT_LOGINS] = "tenant_logins",
	[GW_SHED_ACCOUNT_BLOCKED] = "account_blocked",
	[GW_SHED_COUNTER] = "endpoint_counter",
	[GW_SHED_CEILING] = "ceiling",
	[GW_SHED_UPSTREAM_DOWN] = "upstream_down",
};

const char *gw_shed_name(int reason)
{
	return reason >= 0 && reason < GW_SHED__MAX ? shed_names[reason] : "?";
}

/* ---- buckets and meters ----------------------------------------------------------------- */

void gw_bucket_init(struct gw_bucket *b, double rate, double burst, uint64_t now)
{
	b->rate = rate;
	b->burst = burst;
	b->tokens = burst;
	b->t_ns = now;
}

/* Time going backwards (a test, or a clock step) refills nothing and keeps the stamp. */
void gw_bucket_refill(struct gw_bucket *b, uint64_t now)
{
	if (now <= b->t_ns)
		return;
	b->tokens += b->rate * (double)(now - b->t_ns) / (double)GW_NS;
	if (b->tokens > b->burst)
		b->tokens = b->burst;
	b->t_ns = now;
}

/* Add @x (may be negative) keeping the bucket within [-burst, burst]: a debt larger than
 * one burst would lock a tenant out for longer than any estimate error justifies. */
static void bucket_adjust(struct gw_bucket *b, double x)
{
	b->tokens += x;
	if (b->tokens > b->burst)
		b->tokens = b->burst;
	if (b->tokens < -b->burst)
		b->tokens = -b->burst;
}

double gw_meter_value(const struct gw_meter *m, uint64_t now)
{
	if (now <= m->t_ns)
		return m->acc;
	return m->acc * exp(-(double)(now - m->t_ns) / (double)GW_METER_TAU_NS);
}

void gw_meter_add(struct gw_meter *m, uint64_t now, double x)
{
	m->acc = gw_meter_value(m, now) + x;
	if (m->acc < 0)
		m->acc = 0;
	if (now > m->t_ns)
		m->t_ns = now;
}

static double meter_rate(const struct gw_meter *m, uint64_t now)
{
	return gw_meter_value(m, now) / ((double)GW_METER_TAU_NS / (double)GW_NS);
}

double gw_sched_consumption(struct gw_sched *s, int slot, uint64_t now)
{
	return meter_rate(&s->t[slot].cons, now);
}

double gw_sched_overage(struct gw_sched *s, int slot, uint64_t now)
{
	double r = s->t[slot].reservation;

	/* A tenant with no reservation has no floor: everything it uses is burst, and any
	 * use puts it ahead of tenants that merely exceed a real reservation. */
	return gw_sched_consumption(s, slot, now) / (r > 1.0 ? r : 1.0);
}

/* ---- deques ----------------------------------------------------------------------------- */

static void dq_push(struct gw_deque *q, struct gw_job *j)
{
	j->next = NULL;
	j->prev = q->tail;
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	q->n++;
}

static void dq_unlink(struct gw_deque *q, struct gw_job *j)
{
	if (j->prev)
		j->prev->next = j->next;
	else
		q->head = j->next;
	if (j->next)
		j->next->prev = j->prev;
	else
		q->tail = j->prev;
	j->prev = j->next = NULL;
	q->n--;
}

/* Jobs sit in admission order: the head is the oldest. FIFO serves it, LIFO the tail. */
static struct gw_job *dq_peek(const struct gw_deque *q, bool lifo)
{
	return lifo ? q->tail : q->head;
}

/* The first job in serving order that s->ready accepts, within GW_READY_SCAN, or NULL. */
static struct gw_job *dq_ready(const struct gw_sched *s, const struct gw_deque *q, bool lifo)
{
	struct gw_job *j = dq_peek(q, lifo);
	int k;

	if (!s->ready)
		return j;
	for (k = 0; j && k < GW_READY_SCAN; k++, j = lifo ? j->prev : j->next)
		if (s->ready(j, s->ready_arg))
			return j;
	return NULL;
}

/* The job that would be served last: the one to give up when room is needed. */
static struct gw_job *dq_last(const struct gw_deque *q, bool lifo)
{
	return lifo ? q->head : q->tail;
}

/* ---- DRR active list -------------------------------------------------------------------- */

static void unlink_queued(struct gw_sched *s, struct gw_job *j);

static void active_add(struct gw_sched *s, int slot)
{
	struct gw_tstate *t = &s->t[slot];

	if (t->in_active)
		return;
	if (!s->n_active)
		s->new_round = true; /* the first tenant of a busy period opens a round */
	t->in_active = 1;
	t->quantum_given = 0;
	t->deficit = 0;
	s->active[s->n_active++] = (uint16_t)slot;
}

static void active_remove_at(struct gw_sched *s, int i)
{
	struct gw_tstate *t = &s->t[s->active[i]];

	/* DRR: an emptied flow forfeits its deficit, or idling would bank service. */
	t->in_active = 0;
	t->quantum_given = 0;
	t->deficit = 0;
	memmove(&s->active[i], &s->active[i + 1], (size_t)(s->n_active - i - 1) *
		sizeof(s->active[0]));
	s->n_active--;
	if (i < s->rr)
		s->rr--;
}

static void active_remove(struct gw_sched *s, int slot)
{
	int i;

	for (i = 0; i < s->n_active; i++)
		if (s->active[i] == slot) {
			active_remove_at(s, i);
			return;
		}
}

/* The reserved lane's tenants: those with reserved work queued, in the order of the lane's
 * round robin. A tenant whose reserved sub-queue was empty goes in at the round robin's
 * position, so it is visited next (fq_codel's new flows): a tenant sending within its share
 * is served at the next free worker, ahead of the tenants with a backlog, and it can take
 * no more than one quantum that way before it is one of them. */
static void resv_add(struct gw_sched *s, int slot)
{
	struct gw_tstate *t = &s->t[slot];
	int at;

	if (t->in_resv)
		return;
	t->in_resv = 1;
	t->res_given = 0;
	t->res_deficit = 0;
	at = s->resv_rr < s->n_resv ? s->resv_rr : s->n_resv;
	if (at < s->n_resv)
		s->t[s->resv[at]].res_given = 0; /* its visit was cut short: a new one is due */
	memmove(&s->resv[at + 1], &s->resv[at], (size_t)(s->n_resv - at) * sizeof(s->resv[0]));
	s->resv[at] = (uint16_t)slot;
	s->n_resv++;
	s->resv_rr = at;
}

static void resv_remove(struct gw_sched *s, int slot)
{
	int i;

	for (i = 0; i < s->n_resv; i++)
		if (s->resv[i] == slot) {
			/* As in DRR: an emptied sub-queue forfeits its deficit. */
			s->t[slot].in_resv = 0;
			s->t[slot].res_given = 0;
			s->t[slot].res_deficit = 0;
			memmove(&s->resv[i], &s->resv[i + 1], (size_t)(s->n_resv - i - 1) *
				sizeof(s->resv[0]));
			s->n_resv--;
			if (i < s->resv_rr)
				s->resv_rr--;
			return;
		}
}

/* The reserved lane: deficit round robin over the tenants' reserved sub-queues, each visit
 * worth the largest job scaled by the tenant's reservation against the largest reservation
 * queued. Every tenant with reserved work is served within one round whatever backlog the
 * others hold, and when the pool delivers less than the reservations promise, each gets its
 * reservation's share of what it does deliver: the tenant sending beyond that share is the
 * one whose jobs wait (and, the lane full, are pushed out). */
static struct gw_job *resv_pop(struct gw_sched *s)
{
	double top = 1.0;
	int i, guard = 0, skipped = 0;

	if (!s->admission) {
		/* The "before" picture is one FIFO across tenants: the oldest head goes. */
		struct gw_job *h = NULL;

		for (i = 0; i < s->n_resv; i++) {
			struct gw_job *x = dq_ready(s, &s->t[s->resv[i]].resq, false);

			if (x && (!h || x->admit_ns < h->admit_ns))
				h = x;
		}
		if (h)
			unlink_queued(s, h);
		return h;
	}
	for (i = 0; i < s->n_resv; i++)
		if (s->t[s->resv[i]].reservation > top)
			top = s->t[s->resv[i]].reservation;
	while (s->n_resv > 0) {
		struct gw_tstate *t;
		struct gw_job *h;

		if (s->resv_rr >= s->n_resv)
			s->resv_rr = 0;
		t = &s->t[s->resv[s->resv_rr]];
		h = dq_ready(s, &t->resq, false);
		if (!h) {
			/* Nothing of its own can start: passed over, its deficit kept. */
			t->res_given = 0;
			s->resv_rr++;
			if (++skipped >= s->n_resv)
				return NULL;
			continue;
		}
		skipped = 0;
		if (!t->res_given) {
			t->res_deficit += s->quantum *
					  (t->reservation > 1.0 ? t->reservation : 1.0) / top;
			t->res_given = 1;
		}
		/* The guard bounds a dequeue's work when one tenant's weight is tiny next to
		 * another's: its head is served rather than spinning through more rounds. */
		if (h->cost <= t->res_deficit || ++guard > 4 * GW_MAX_TENANTS) {
			t->res_deficit -= h->cost;
			unlink_queued(s, h);
			return h;
		}
		t->res_given = 0;
		s->resv_rr++;
	}
	return NULL;
}

/* The tenant with reserved work queued furthest above its reservation, or -1. */
static int resv_most_over(struct gw_sched *s, uint64_t now, double *ratio)
{
	double best = -1.0;
	int i, slot = -1;

	for (i = 0; i < s->n_resv; i++) {
		double r = gw_sched_overage(s, s->resv[i], now);

		if (r > best) {
			best = r;
			slot = s->resv[i];
		}
	}
	*ratio = best;
	return slot;
}

/* A new DRR round visits tenants from the least to the most over their reservation: under
 * contention the ones nearest their own normal are served first. Insertion sort: n is at
 * most GW_MAX_TENANTS and usually a handful. */
static void active_sort(struct gw_sched *s, uint64_t now)
{
	double key[GW_MAX_TENANTS];
	int i, j;

	for (i = 0; i < s->n_active; i++)
		key[i] = gw_sched_overage(s, s->active[i], now);
	for (i = 1; i < s->n_active; i++) {
		uint16_t a = s->active[i];
		double k = key[i];

		for (j = i - 1; j >= 0 && key[j] > k; j--) {
			s->active[j + 1] = s->active[j];
			key[j + 1] = key[j];
		}
		s->active[j + 1] = a;
		key[j + 1] = k;
	}
}

/* The active tenant furthest above its reservation, or -1. */
static int most_over(struct gw_sched *s, uint64_t now, double *ratio)
{
	double best = -1.0;
	int i, slot = -1;

	for (i = 0; i < s->n_active; i++) {
		double r = gw_sched_overage(s, s->active[i], now);

		if (r > best) {
			best = r;
			slot = s->active[i];
		}
	}
	*ratio = best;
	return slot;
}

/* ---- configuration ---------------------------------------------------------------------- */

static int find_tenant(const struct gw_sched *s, const char *name)
{
	int i;

	for (i = 0; i < GW_MAX_TENANTS; i++)
		if (s->t[i].used && !strcmp(s->t[i].name, name))
			return i;
	return -1;
}

static void clear_tenant(struct gw_tstate *t)
{
	memset(t, 0, sizeof(*t));
}

/* A tenant removed from the config keeps its slot until its admitted work is finished. */
static void maybe_retire(struct gw_sched *s, int slot)
{
	struct gw_tstate *t = &s->t[slot];

	if (t->used && !t->live && !t->inflight && !t->burst.n && !t->queued_reserved)
		clear_tenant(t);
}

static int alloc_tenant(struct gw_sched *s)
{
	int i;

	for (i = 0; i < GW_MAX_TENANTS; i++)
		if (!s->t[i].used)
			return i;
	return -1;
}

static int find_class(const struct gw_sched *s, const char *name)
{
	int i;

	for (i = 0; i < GW_MAX_CLASSES; i++)
		if (s->cls[i].used && !strcmp(s->cls[i].name, name))
			return i;
	return -1;
}

static void configure_classes(struct gw_sched *s, const struct sl_config *c)
{
	bool referenced[GW_MAX_CLASSES] = { false };
	int r, i;

	for (r = 0; r < GW_MAX_CLASSES; r++)
		s->class_of_route[r] = -1;
	for (r = 0; r < c->n_routes && r < GW_MAX_CLASSES; r++) {
		const struct sl_route_cfg *rc = &c->routes[r];
		int k = find_class(s, rc->name);

		if (k >= 0) {
			referenced[k] = true;
			s->class_of_route[r] = (int16_t)k;
		}
	}
	for (r = 0; r < c->n_routes && r < GW_MAX_CLASSES; r++) {
		const struct sl_route_cfg *rc = &c->routes[r];
		struct gw_class *k;
		int slot = s->class_of_route[r];

		if (slot < 0) {
			/* A fresh slot; else the slot of a class no route uses any more. */
			for (i = 0; i < GW_MAX_CLASSES && slot < 0; i++)
				if (!s->cls[i].used)
					slot = i;
			for (i = 0; i < GW_MAX_CLASSES && slot < 0; i++)
				if (!referenced[i])
					slot = i;
			if (slot < 0)
				continue; /* cannot happen: routes <= classes */
			memset(&s->cls[slot], 0, sizeof(s->cls[slot]));
			s->cls[slot].used = 1;
			snprintf(s->cls[slot].name, sizeof(s->cls[slot].name), "%s", rc->name);
			s->cls[slot].configured = -1;
			referenced[slot] = true;
			s->class_of_route[r] = (int16_t)slot;
		}
		k = &s->cls[slot];
		/* A new table value is a new starting point: the old estimate was learned for
		 * different hardware or parameters, which is why someone changed the table. */
		if (k->configured != rc->cpu) {
			k->configured = rc->cpu;
			k->estimate = rc->cpu;
			k->samples = 0;
			k->sum_abs_err = 0;
		}
	}
}

void gw_sched_configure(struct gw_sched *s, const struct sl_config *c, uint64_t now)
{
	const struct sl_gateway_cfg *gw = &c->gw;
	double max_cost = 1.0, db_reserved = 0;
	int i;

	s->admission = gw->admission;
	s->cap_cpu = gw->cap_cpu;
	s->cap_db = gw->cap_db;
	s->target_wait_ns = (uint64_t)gw->target_wait_ms * 1000000ull;
	s->lifo_after_ns = (uint64_t)gw->lifo_after_ms * 1000000ull;
	s->codel_interval_ns = (uint64_t)gw->codel_interval_ms * 1000000ull;
	s->max_depth = gw->max_depth ? gw->max_depth : 1;
	s->workers = gw->workers ? gw->workers : 1;

	configure_classes(s, c);
	for (i = 0; i < c->n_routes; i++)
		if (c->routes[i].cpu > max_cost)
			max_cost = c->routes[i].cpu;
	/* A quantum of the largest cost lets every visit serve at least one job (DRR's
	 * condition for O(1) work per dequeue). */
	s->quantum = max_cost;
	if (s->svc_ns <= 0)
		s->svc_ns = max_cost * UNIT_NS;
	if (s->svc_units <= 0)
		s->svc_units = max_cost; /* until measured: a worker delivers one unit per unit */

	/* The capacity bucket holds a tenth of a second, and at least two of the largest
	 * jobs so a burst job can always start once the reservations leave room. */
	{
		double burst = s->cap_cpu * 0.1;

		if (burst < 2 * max_cost)
			burst = 2 * max_cost;
		if (!s->pool.t_ns && !s->pool.rate) {
			gw_bucket_init(&s->pool, s->cap_cpu, burst, now);
		} else {
			gw_bucket_refill(&s->pool, now);
			s->pool.rate = s->cap_cpu;
			s->pool.burst = burst;
			bucket_adjust(&s->pool, 0);
		}
	}

	for (i = 0; i < GW_MAX_TENANTS; i++) {
		s->t[i].live = 0;
		s->slot_of_cfg[i] = -1;
	}
	s->res_total = 0;
	for (i = 0; i < c->n_tenants && i < GW_MAX_TENANTS; i++) {
		const struct sl_tenant_cfg *tc = &c->tenants[i];
		int slot = find_tenant(s, tc->name);
		struct gw_tstate *t;
		double burst;
		bool fresh = slot < 0;

		if (fresh)
			slot = alloc_tenant(s);
		if (slot < 0)
			continue; /* every slot held by tenants still draining: not routable yet */
		t = &s->t[slot];
		if (fresh) {
			clear_tenant(t);
			t->used = 1;
			snprintf(t->name, sizeof(t->name), "%s", tc->name);
		}
		t->live = 1;
		t->reservation = tc->reservation;
		s->res_total += tc->reservation;
		/* One second of the reservation, and room for one of the largest jobs: a
		 * tenant reserved below one login per second still gets its login. */
		burst = tc->reservation;
		if (burst < max_cost && tc->reservation > 0)
			burst = max_cost;
		if (fresh) {
			/* Start full: the reservation is a promise from the first request on. */
			gw_bucket_init(&t->res, tc->reservation, burst, now);
		} else {
			gw_bucket_refill(&t->res, now);
			t->res.rate = tc->reservation;
			t->res.burst = burst;
			bucket_adjust(&t->res, 0);
		}
		t->db_share = s->cap_db > 0 && s->cap_cpu > 0 ?
			floor(s->cap_db * tc->reservation / s->cap_cpu) : 0;
		db_reserved += t->db_share;
		s->slot_of_cfg[i] = (int16_t)slot;
	}
	s->db_shared_cap = s->cap_db - db_reserved;
	if (s->db_shared_cap < 0)
		s->db_shared_cap = 0;
	for (i = 0; i < GW_MAX_TENANTS; i++)
		maybe_retire(s, i);
}

int gw_sched_init(struct gw_sched *s, const struct sl_config *c, uint64_t now)
{
	memset(s, 0, sizeof(*s));
	if (!c->gw.present || (c->gw.admission && !(c->gw.cap_cpu > 0)))
		return -EINVAL;
	gw_sched_configure(s, c, now);
	return 0;
}

/* ---- measurements ----------------------------------------------------------------------- */

double gw_sched_service_rate(const struct gw_sched *s)
{
	return s->svc_ns > 0 ? (double)s->workers * (double)GW_NS / s->svc_ns : 0;
}

uint32_t gw_sched_depth_limit(const struct gw_sched *s)
{
	double d;

	if (!s->admission)
		return GW_UNBOUNDED_DEPTH;
	/* Little's law: the queue that drains in target_wait at the measured rate. */
	d = gw_sched_service_rate(s) * (double)s->target_wait_ns / (double)GW_NS;
	d = ceil(d - 1e-3); /* 4.0000001 jobs is 4: the rate is a measurement, not exact */
	if (!(d >= 1))
		d = 1;
	if (d > s->max_depth)
		d = s->max_depth;
	return (uint32_t)d;
}

double gw_sched_delivered(const struct gw_sched *s)
{
	return s->svc_ns > 0 ? (double)s->workers * s->svc_units * (double)GW_NS / s->svc_ns : 0;
}

/* The reservations are a promise the pool keeps while it delivers what they add up to; below
 * that, each keeps its reservation's share of what is delivered. */
double gw_sched_reserve_scale(const struct gw_sched *s)
{
	double d = gw_sched_delivered(s);

	if (!(s->res_total > 0) || d >= s->res_total)
		return 1.0;
	/* Never below a hundredth: a stalled pool's first hash must not zero every promise. */
	return d / s->res_total > 0.01 ? d / s->res_total : 0.01;
}

/* The oldest job a tenant has queued, in either lane, or NULL. */
static const struct gw_job *tenant_oldest(const struct gw_tstate *t)
{
	const struct gw_job *a = t->resq.head, *b = t->burst.head;

	if (!a)
		return b;
	return b && b->admit_ns < a->admit_ns ? b : a;
}

static uint64_t tenant_wait(const struct gw_tstate *t, uint64_t now)
{
	const struct gw_job *o = tenant_oldest(t);

	return !o || now <= o->admit_ns ? 0 : now - o->admit_ns;
}

uint64_t gw_sched_queue_wait(const struct gw_sched *s, uint64_t now)
{
	uint64_t w = 0;
	int i;

	for (i = 0; i < s->n_resv; i++) {
		uint64_t x = tenant_wait(&s->t[s->resv[i]], now);

		w = x > w ? x : w;
	}
	for (i = 0; i < s->n_active; i++) {
		uint64_t x = tenant_wait(&s->t[s->active[i]], now);

		w = x > w ? x : w;
	}
	return w;
}

/* One tenant's burst sub-queue: FIFO while its own oldest burst job is fresh; LIFO once that
 * job has waited past lifo_after, so the job served is the one whose client is most likely
 * still there. Decided on the tenant's own jobs only: a neighbour's backlog never turns a
 * quiet tenant's queue around. The reserved lane is always FIFO: its depth is bounded (twice
 * the Little's-law depth, shared by overage), so FIFO bounds its waits well inside any
 * deadline, and LIFO there would only make a tenant inside its reservation watch its oldest
 * logins wait while newer ones are served. */
static void tenant_mode(struct gw_sched *s, int slot, uint64_t now)
{
	struct gw_tstate *t = &s->t[slot];
	const struct gw_job *h = t->burst.head;
	bool lifo = s->admission && h && now > h->admit_ns && now - h->admit_ns > s->lifo_after_ns;

	if (lifo && !t->lifo)
		s->lifo_switches++;
	t->lifo = lifo;
	s->lifo = s->lifo || lifo;
}

static void update_mode(struct gw_sched *s, uint64_t now)
{
	int i;

	s->lifo = false;
	for (i = 0; i < s->n_active; i++)
		tenant_mode(s, s->active[i], now);
}

/* The reservation bucket refills at the reservation scaled to what the workers deliver, and
 * holds at most one second of that (never less than one of the largest jobs). */
static void res_refill(struct gw_sched *s, struct gw_tstate *t, uint64_t now)
{
	double f = gw_sched_reserve_scale(s), top;

	if (now > t->res.t_ns) {
		t->res.tokens += t->res.rate * f * (double)(now - t->res.t_ns) / (double)GW_NS;
		t->res.t_ns = now;
	}
	top = t->res.burst * f;
	if (top < s->quantum)
		top = t->res.burst < s->quantum ? t->res.burst : s->quantum;
	if (t->res.tokens > top)
		t->res.tokens = top;
}

/* ---- charges ---------------------------------------------------------------------------- */

static void db_release(struct gw_sched *s, struct gw_job *j)
{
	struct gw_tstate *t = &s->t[j->tenant];

	if (j->db_from == 1) {
		t->db_used_share -= j->db;
	} else if (j->db_from == 2) {
		t->db_used_shared -= j->db;
		s->db_shared_used -= j->db;
	}
	j->db_from = 0;
}

static bool db_take(struct gw_sched *s, struct gw_job *j)
{
	struct gw_tstate *t = &s->t[j->tenant];

	j->db_from = 0;
	if (!(j->db > 0) || !(s->cap_db > 0))
		return true; /* no database budget configured: nothing to meter */
	if (t->db_used_share + j->db <= t->db_share) {
		t->db_used_share += j->db;
		j->db_from = 1;
		return true;
	}
	if (s->db_shared_used + j->db <= s->db_shared_cap) {
		s->db_shared_used += j->db;
		t->db_used_shared += j->db;
		j->db_from = 2;
		return true;
	}
	return false;
}

/* Debit the capacity bucket by @x. Reserved work may overdraw it, but never by more than
 * ten bursts (a second of capacity): a misestimate must not starve burst work for long. */
static void pool_debit(struct gw_sched *s, double x)
{
	s->pool.tokens -= x;
	if (s->pool.tokens > s->pool.burst)
		s->pool.tokens = s->pool.burst;
	if (s->pool.tokens < -s->pool.burst * 10)
		s->pool.tokens = -s->pool.burst * 10;
}

static void charge_pool(struct gw_sched *s, struct gw_job *j)
{
	pool_debit(s, j->cost);
	j->pool_charged = 1;
}

static void lane_meter(struct gw_sched *s, const struct gw_job *j, uint64_t now, double x)
{
	if (j->lane == GW_LANE_RESERVED) {
		gw_meter_add(&s->reserved_rate, now, x);
		s->reserved_units += x;
	} else {
		gw_meter_add(&s->burst_rate, now, x);
		s->burst_units += x;
	}
}

static void enqueue(struct gw_sched *s, struct gw_job *j)
{
	struct gw_tstate *t = &s->t[j->tenant];

	if (j->lane == GW_LANE_RESERVED) {
		dq_push(&t->resq, j);
		t->queued_reserved++;
		s->n_reserved++;
		resv_add(s, j->tenant);
	} else {
		dq_push(&t->burst, j);
		active_add(s, j->tenant);
	}
	s->depth++;
	j->state = GW_JOB_QUEUED;
}

static void unlink_queued(struct gw_sched *s, struct gw_job *j)
{
	struct gw_tstate *t = &s->t[j->tenant];

	if (j->lane == GW_LANE_RESERVED) {
		dq_unlink(&t->resq, j);
		t->queued_reserved--;
		s->n_reserved--;
		if (!t->resq.n)
			resv_remove(s, j->tenant);
	} else {
		dq_unlink(&t->burst, j);
		if (!t->burst.n)
			active_remove(s, j->tenant);
	}
	if (!t->burst.n)
		t->lifo = 0;
	s->depth--;
	j->state = GW_JOB_NEW;
}

void gw_sched_release(struct gw_sched *s, struct gw_job *j, uint64_t now)
{
	struct gw_tstate *t = &s->t[j->tenant];

	if (j->state == GW_JOB_DONE)
		return;
	if (j->state == GW_JOB_QUEUED)
		unlink_queued(s, j);
	if (s->admission) {
		if (j->lane == GW_LANE_RESERVED) {
			res_refill(s, t, now);
			bucket_adjust(&t->res, j->cost);
		}
		if (j->pool_charged) {
			gw_bucket_refill(&s->pool, now);
			bucket_adjust(&s->pool, j->cost);
			j->pool_charged = 0;
		}
	}
	gw_meter_add(&t->cons, now, -j->cost);
	lane_meter(s, j, now, -j->cost);
	db_release(s, j);
	t->inflight--;
	j->state = GW_JOB_DONE;
	maybe_retire(s, j->tenant);
}

/* ---- admission -------------------------------------------------------------------------- */

int gw_sched_admit(struct gw_sched *s, struct gw_job *j, uint64_t now, struct gw_job **victim)
{
	struct gw_tstate *t = &s->t[j->tenant];
	const struct gw_class *k = &s->cls[j->cls];
	uint32_t lim;

	*victim = NULL;
	j->cost = k->estimate > 0 ? k->estimate : 0;
	j->admit_ns = now;
	j->state = GW_JOB_NEW;
	j->db_from = 0;
	j->pool_charged = 0;
	j->prev = j->next = NULL;

	if (!s->admission) {
		j->lane = GW_LANE_RESERVED;
		if (j->pooled) {
			if (s->depth >= GW_UNBOUNDED_DEPTH)
				return GW_SHED_QUEUE_FULL;
			enqueue(s, j);
		} else {
			j->state = GW_JOB_RUNNING;
		}
		goto admitted;
	}

	res_refill(s, t, now);
	gw_bucket_refill(&s->pool, now);
	if (!db_take(s, j))
		return GW_SHED_DB_FULL;
	if (t->res.tokens >= j->cost && (t->reservation > 0 || j->cost == 0)) {
		t->res.tokens -= j->cost;
		j->lane = GW_LANE_RESERVED;
	} else {
		j->lane = GW_LANE_BURST;
	}

	if (!j->pooled) {
		/* Inline work runs now or never: reserved work always, burst work while the
		 * capacity the reservations leave unused has room for it. */
		if (j->lane == GW_LANE_BURST && s->pool.tokens < j->cost) {
			db_release(s, j);
			return GW_SHED_POOL_EMPTY;
		}
		charge_pool(s, j);
		j->state = GW_JOB_RUNNING;
		goto admitted;
	}

	update_mode(s, now);
	lim = gw_sched_depth_limit(s);
	if (s->depth >= lim) {
		double vr, mine = gw_sched_overage(s, j->tenant, now);
		int v = most_over(s, now, &vr);
		struct gw_job *out;

		/* Reserved work at a queue holding no burst work to push out: the reservation
		 * is a promise, so it may overfill the queue up to twice the Little's-law depth
		 * (never past max_depth; its deadline is still checked at dequeue). Reserved
		 * work past that means the reservations outrun the pool: refused. */
		if (v < 0 && j->lane == GW_LANE_RESERVED && s->depth < 2 * lim &&
		    s->depth < s->max_depth)
			goto enqueue;
		/* Past that, the reserved work of the tenant furthest above its own reservation
		 * makes room for a tenant less far above: one tenant's reserved backlog does not
		 * lock the others' reservations out. */
		if (v < 0 && j->lane == GW_LANE_RESERVED) {
			v = resv_most_over(s, now, &vr);
			if (v >= 0 && v != j->tenant && mine < vr) {
				out = s->t[v].resq.tail; /* FIFO: its newest is served last */
				gw_sched_release(s, out, now);
				*victim = out;
				goto enqueue;
			}
			v = -1;
		}
		/* Room is made only at the expense of a tenant further above its reservation
		 * than the arrival's; reserved work outranks all burst work. */
		if (v < 0 || (j->lane == GW_LANE_BURST && (v == j->tenant || mine >= vr))) {
			if (j->lane == GW_LANE_RESERVED)
				bucket_adjust(&t->res, j->cost);
			db_release(s, j);
			return GW_SHED_QUEUE_FULL;
		}
		out = dq_last(&s->t[v].burst, s->t[v].lifo);
		gw_sched_release(s, out, now);
		*victim = out;
	}
enqueue:
	enqueue(s, j);
	if (j->lane == GW_LANE_RESERVED)
		charge_pool(s, j); /* reserved work may run the capacity bucket into debt */

admitted:
	t->inflight++;
	gw_meter_add(&t->cons, now, j->cost);
	lane_meter(s, j, now, j->cost);
	return GW_SHED_NONE;
}

/* ---- dequeue ---------------------------------------------------------------------------- */

static void add_drop(struct gw_drops *d, struct gw_job *j, int reason)
{
	d->job[d->n] = j;
	d->reason[d->n] = (uint8_t)reason;
	d->n++;
}

/* Deficit round robin over the burst sub-queues. */
static struct gw_job *drr_pop(struct gw_sched *s, uint64_t now)
{
	int guard = 0, skipped = 0;

	while (s->n_active > 0) {
		struct gw_tstate *t;
		struct gw_job *h;

		if (s->rr >= s->n_active || s->new_round) {
			s->rr = 0;
			s->new_round = false;
			active_sort(s, now);
		}
		t = &s->t[s->active[s->rr]];
		h = dq_ready(s, &t->burst, t->lifo);
		if (!h) {
			t->quantum_given = 0;
			s->rr++;
			if (++skipped >= s->n_active)
				return NULL;
			continue;
		}
		skipped = 0;
		if (!t->quantum_given) {
			t->deficit += s->quantum;
			t->quantum_given = 1;
		}
		/* The guard only matters when an estimate grew past every quantum: serve the
		 * head rather than spin. */
		if (h->cost <= t->deficit || ++guard > 4 * GW_MAX_TENANTS) {
			t->deficit -= h->cost;
			unlink_queued(s, h);
			return h;
		}
		t->quantum_given = 0;
		s->rr++;
	}
	return NULL;
}

struct gw_job *gw_sched_next(struct gw_sched *s, uint64_t now, struct gw_drops *d)
{
	for (;;) {
		struct gw_job *j = NULL;

		if (d->n >= GW_DROP_BATCH)
			return NULL;
		update_mode(s, now);
		if (s->n_resv)
			j = resv_pop(s);
		/* Reserved work first; burst work when none of it is queued, or none of it can
		 * start (its resources are full: they hold back only their own work). */
		if (!j && s->n_active) {
			/* Burst work runs only while the capacity bucket has room: that room is
			 * the burst pool. */
			if (s->admission) {
				gw_bucket_refill(&s->pool, now);
				if (s->pool.tokens <= 0)
					return NULL;
			}
			j = drr_pop(s, now);
		}
		if (!j)
			return NULL;
		/* The deadline is re-checked here, before a worker spends anything on it. */
		if (s->admission && j->deadline_ns && now >= j->deadline_ns) {
			gw_sched_release(s, j, now);
			add_drop(d, j, GW_SHED_EXPIRED);
			continue;
		}
		if (s->admission && j->lane == GW_LANE_BURST)
			charge_pool(s, j);
		j->state = GW_JOB_RUNNING;
		return j;
	}
}

bool gw_sched_maintain(struct gw_sched *s, uint64_t now, struct gw_drops *d)
{
	uint64_t wait;
	struct gw_job *j, *nx;
	int i;

	if (!s->admission)
		return false;
	update_mode(s, now);
	/* CoDel on each tenant's standing wait: if even its oldest job's best moment over a
	 * whole interval was above target, that tenant's queue is not absorbing a burst, it is
	 * a backlog. Decided per tenant, so only the tenant with the backlog is shed. */
	s->dropping = false;
	for (i = 0; i < GW_MAX_TENANTS; i++) {
		struct gw_tstate *t = &s->t[i];

		if (!t->used)
			continue;
		wait = tenant_wait(t, now);
		if (wait < s->target_wait_ns) {
			t->first_above_ns = 0;
			t->dropping = 0;
		} else if (!t->first_above_ns) {
			t->first_above_ns = now + s->codel_interval_ns;
		} else if (now >= t->first_above_ns && !t->dropping) {
			t->dropping = 1;
			s->codel_episodes++;
		}
		s->dropping = s->dropping || t->dropping;
	}

	for (i = s->n_resv - 1; i >= 0; i--) {
		if (i >= s->n_resv)
			continue;
		for (j = s->t[s->resv[i]].resq.head; j; j = nx) {
			nx = j->next;
			if (j->deadline_ns && now >= j->deadline_ns) {
				if (d->n >= GW_DROP_BATCH)
					return true;
				gw_sched_release(s, j, now); /* may remove it from the list */
				add_drop(d, j, GW_SHED_EXPIRED);
			}
		}
	}
	for (i = s->n_active - 1; i >= 0; i--) {
		struct gw_tstate *t;

		if (i >= s->n_active)
			continue;
		t = &s->t[s->active[i]];
		for (j = t->burst.head; j; j = nx) {
			int why = GW_SHED_NONE;

			nx = j->next;
			if (j->deadline_ns && now >= j->deadline_ns)
				why = GW_SHED_EXPIRED;
			else if (t->dropping && now - j->admit_ns > s->target_wait_ns)
				why = GW_SHED_CODEL;
			if (why == GW_SHED_NONE)
				continue;
			if (d->n >= GW_DROP_BATCH)
				return true;
			gw_sched_release(s, j, now); /* may remove t from the active list */
			add_drop(d, j, why);
		}
	}
	return false;
}

void gw_sched_done(struct gw_sched *s, struct gw_job *j, double measured, uint64_t service_ns,
		   uint64_t now)
{
	struct gw_tstate *t = &s->t[j->tenant];
	struct gw_class *k = &s->cls[j->cls];
	double delta = measured - j->cost;

	if (j->state == GW_JOB_DONE)
		return;
	if (j->state == GW_JOB_QUEUED)
		unlink_queued(s, j);
	/* Reconcile: the estimate was charged at admission; the difference goes to whatever
	 * paid, so over a few seconds every bucket converges on what the work really cost. */
	if (s->admission) {
		if (j->lane == GW_LANE_RESERVED) {
			res_refill(s, t, now);
			bucket_adjust(&t->res, -delta);
		}
		if (j->pool_charged) {
			gw_bucket_refill(&s->pool, now);
			pool_debit(s, delta);
		}
	}
	gw_meter_add(&t->cons, now, delta);
	lane_meter(s, j, now, delta);
	if (k->used && measured >= 0) {
		k->estimate += EWMA_ALPHA * (measured - k->estimate);
		k->samples++;
		k->sum_abs_err += fabs(delta);
	}
	if (j->pooled && service_ns) {
		s->svc_ns += EWMA_ALPHA * ((double)service_ns - s->svc_ns);
		if (measured >= 0)
			s->svc_units += EWMA_ALPHA * (measured - s->svc_units);
	}
	db_release(s, j);
	t->inflight--;
	j->pool_charged = 0;
	j->state = GW_JOB_DONE;
	maybe_retire(s, j->tenant);
}
