/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The gateway's admission scheduler: who gets the Argon2id pool, in what order, and who is
 * told "429" instead. Pure logic with an injected clock (every call takes @now in ns), no
 * I/O and no threads, so the unit tests drive it through overload second by second.
 *
 * Budgets (cost units: 1 unit = 100 us of CPU):
 *  - cpu: each tenant has a reservation bucket (units/s). A request that fits it is
 *    "reserved" and is always admitted, capacity permitting. Anything else is "burst".
 *    One capacity bucket (gateway.capacity.cpu) is charged by every admitted request;
 *    reserved work may push it into debt, burst work only runs while it is positive, so the
 *    burst pool is exactly the capacity the reservations leave unused.
 *  - db: concurrent slots; each tenant owns a share in proportion to its reservation, the
 *    rest is shared first come.
 *
 * The queue in front of the pool has two lanes, each one sub-queue per tenant, so that no
 * tenant's backlog sits in front of another's. The reserved lane is served first, the tenant
 * least above its own reservation first. The burst lane is served by deficit round robin
 * with the job's cost as the packet size, each round visiting tenants from the least to the
 * most over their own reservation. Depth is bounded by Little's law (measured service rate x
 * target wait). When full, the job that would be served last of the tenant furthest above
 * its reservation is pushed out (or the arrival is refused when that tenant is the
 * arrival's own).
 * Each tenant's queue is FIFO while its own oldest job is fresh and LIFO once that job has
 * waited lifo_after; CoDel-style shedding of a tenant's burst work once its own oldest job's
 * wait has stayed above target for a whole interval. One tenant's backlog never changes the
 * order in which another's work is served. Every job carries a deadline, re-checked when it
 * is dequeued: expired work is dropped unhashed.
 *
 * Delivered capacity: the workers' measured rate (workers x measured units per second of a
 * hash's wall time) may fall below capacity.cpu (the CPUs are shared, the pool slows), and
 * below what the reservations add up to. The reservations then shrink in proportion, so that
 * together they fit what the pool really does; what a tenant sends beyond its scaled share
 * is burst work, the first shed.
 *
 * admission = false turns all of it off: one FIFO, no deadline check (the benchmark's
 * "before" picture), bounded only by GW_UNBOUNDED_DEPTH so memory stays finite.
 */
#ifndef SLUICE_GW_SCHED_H
#define SLUICE_GW_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

#define GW_MAX_TENANTS SL_MAX_TENANTS
#define GW_MAX_CLASSES SL_MAX_ROUTES
#define GW_UNBOUNDED_DEPTH (1u << 16)
#define GW_NS 1000000000ull
/* Consumption is a decaying sum over this horizon: long enough to span a few login
 * bursts, short enough that a tenant that stops flooding stops being "over" within
 * seconds. */
#define GW_METER_TAU_NS (1000000000ull)

enum gw_lane {
	GW_LANE_RESERVED = 0,
	GW_LANE_BURST = 1,
};

/* Why a request was refused, or dropped after admission. Stable: stats are keyed by it. */
enum gw_shed {
	GW_SHED_NONE = 0,
	GW_SHED_QUEUE_FULL,   /* no room, and nobody further above their reservation to push */
	GW_SHED_PUSHED_OUT,   /* made room for a tenant less far above its reservation */
	GW_SHED_POOL_EMPTY,   /* inline burst work while the capacity bucket is empty */
	GW_SHED_CODEL,        /* burst work older than target while the queue stood above it */
	GW_SHED_EXPIRED,      /* its deadline passed before a worker could start it */
	GW_SHED_DB_FULL,      /* no database slot */
	GW_SHED_CLIENT_GONE,  /* the connection closed while it waited */
	/* Counters (user/lib/store.h), checked before a login is admitted: */
	GW_SHED_FAILURES,     /* the (account, prefix) pair, or its (account, allocation), has
			       * used its failed-login budget */
	GW_SHED_SUCCESSES,    /* the pair logged in successfully too often (a token mill) */
	GW_SHED_TENANT_LOGINS,/* the tenant's password logins across the cluster (capacity) */
	GW_SHED_ACCOUNT_BLOCKED, /* no longer given: the ladder's top is a step-up (issue 14) */
	GW_SHED_COUNTER,      /* an endpoint's counter (token, MFA, reset, register, magic) */
	GW_SHED_CEILING,      /* the tenant is at its ceiling (tenants[].ceiling) */
	GW_SHED_UPSTREAM_DOWN,/* upstream mode: the upstream refuses connections */
	GW_SHED__MAX
};

const char *gw_shed_name(int reason);

enum gw_job_state {
	GW_JOB_NEW = 0,
	GW_JOB_QUEUED,
	GW_JOB_RUNNING,
	GW_JOB_DONE,
};

/* The scheduler's part of a request; the gateway embeds it in its request context. */
struct gw_job {
	struct gw_job *prev, *next; /* lane links while queued */
	uint64_t admit_ns;          /* queue wait is measured from here */
	uint64_t deadline_ns;       /* 0: none */
	double cost;                /* cpu units charged at admission (class estimate) */
	double db;                  /* db slots wanted/held */
	uint16_t tenant;            /* scheduler slot (gw_sched_slot) */
	uint16_t cls;               /* class slot (gw_sched_class) */
	uint8_t lane;               /* enum gw_lane, set by admission */
	uint8_t state;              /* enum gw_job_state */
	uint8_t pooled;             /* 1: waits for the worker pool; 0: runs inline at once */
	uint8_t db_from;            /* 0 none, 1 the tenant's share, 2 the shared slots */
	uint8_t pool_charged;       /* the capacity bucket holds its cost */
};

struct gw_deque {
	struct gw_job *head, *tail;
	uint32_t n;
};

/* Token bucket in cost units; tokens may go negative (debt) after reconciliation. */
struct gw_bucket {
	double tokens, rate, burst;
	uint64_t t_ns;
};

/* Exponentially decaying sum: rate() is units per second over ~GW_METER_TAU_NS. */
struct gw_meter {
	double acc;
	uint64_t t_ns;
};

struct gw_tstate {
	char name[SL_TENANT_NAME_LEN];
	uint8_t used;              /* slot holds a tenant, live or retiring */
	uint8_t live;              /* in the running config */
	uint8_t in_active;         /* in the DRR active list */
	uint8_t quantum_given;     /* got its quantum this visit */
	double reservation;        /* units/s */
	struct gw_bucket res;
	struct gw_meter cons;      /* everything admitted, reconciled to measured cost */
	struct gw_deque burst;     /* its burst-lane sub-queue */
	struct gw_deque resq;      /* its reserved-lane sub-queue */
	double deficit;            /* DRR deficit, units */
	uint32_t queued_reserved;  /* its jobs in the reserved lane (resq.n) */
	uint8_t in_resv;           /* in the reserved lane's list */
	uint8_t res_given;         /* reserved lane: got its quantum this visit */
	double res_deficit;        /* reserved lane: DRR deficit, units */
	uint8_t lifo;              /* its own oldest job waited past lifo_after */
	uint8_t dropping;          /* CoDel: its own wait stood above target an interval */
	uint64_t first_above_ns;   /* CoDel: when its wait first stood above */
	uint32_t inflight;         /* admitted, not yet finished or released */
	double db_share;           /* slots reserved for it */
	double db_used_share, db_used_shared;
};

struct gw_class {
	char name[SL_ROUTE_NAME_LEN];
	uint8_t used;
	double configured;         /* cpu units from the route table */
	double estimate;           /* EWMA of measured cost: what admission charges */
	uint64_t samples;
	double sum_abs_err;        /* |measured - charged|, summed */
};

struct gw_sched {
	/* settings (gw_sched_configure) */
	int admission;
	double cap_cpu, cap_db;
	double res_total;                      /* the live tenants' reservations, units/s */
	uint64_t target_wait_ns, lifo_after_ns, codel_interval_ns;
	uint32_t max_depth, workers;
	double quantum;
	/* Per-resource readiness: can @j start now (its resource, the Argon2id pool or its
	 * upstream and class, has room)? NULL: always. A job that cannot is passed over for
	 * one that can, so one full resource holds back only its own work. */
	bool (*ready)(struct gw_job *j, void *arg);
	void *ready_arg;

	struct gw_tstate t[GW_MAX_TENANTS];
	int16_t slot_of_cfg[GW_MAX_TENANTS];   /* config tenant index -> slot */
	struct gw_class cls[GW_MAX_CLASSES];
	int16_t class_of_route[GW_MAX_CLASSES]; /* config route index -> class slot */

	uint16_t resv[GW_MAX_TENANTS];         /* tenants with reserved work queued */
	int n_resv, resv_rr;
	uint32_t n_reserved;                   /* queued jobs, reserved lane */
	uint32_t depth;                        /* queued jobs, both lanes */
	struct gw_bucket pool;                 /* the cpu capacity */
	double db_shared_cap, db_shared_used;

	uint16_t active[GW_MAX_TENANTS];       /* DRR: tenants with burst work, in visit order */
	int n_active, rr;
	bool new_round;                        /* sort before the next visit */

	double svc_ns;                         /* EWMA wall time of one pooled job */
	double svc_units;                      /* EWMA measured units of one pooled job */
	bool dropping;                         /* CoDel: some tenant's stale burst work */
	bool lifo;                             /* some tenant's queue is LIFO */
	uint64_t codel_episodes, lifo_switches;
	uint64_t reserved_units, burst_units;  /* charged, cumulative (for utilization) */
	struct gw_meter reserved_rate, burst_rate;
};

/* Jobs dropped after admission (expired, CoDel), handed back for the caller to answer. */
#define GW_DROP_BATCH 64
struct gw_drops {
	struct gw_job *job[GW_DROP_BATCH];
	uint8_t reason[GW_DROP_BATCH];
	int n;
};

/* Set up @s for config @c. Returns 0 or -EINVAL (nothing to schedule with). */
int gw_sched_init(struct gw_sched *s, const struct sl_config *c, uint64_t now);
/*
 * Apply a new config: tenants and classes are matched by name so their buckets, meters,
 * queues and estimates carry over; tenants that left stay (not routable) until their
 * queued work drains.
 */
void gw_sched_configure(struct gw_sched *s, const struct sl_config *c, uint64_t now);

/* Scheduler slot for config tenant index @i, class slot for route index @r. */
static inline int gw_sched_slot(const struct gw_sched *s, int i)
{
	return i >= 0 && i < GW_MAX_TENANTS ? s->slot_of_cfg[i] : -1;
}
static inline int gw_sched_class(const struct gw_sched *s, int r)
{
	return r >= 0 && r < GW_MAX_CLASSES ? s->class_of_route[r] : -1;
}

/*
 * Decide on @j (tenant, cls, db, pooled and deadline_ns set; cost is filled in from the
 * class estimate). Returns GW_SHED_NONE when admitted (queued when pooled), else the
 * reason. When a queued job had to make room, it is unlinked and returned in *victim
 * (reason GW_SHED_PUSHED_OUT); the caller answers it.
 */
int gw_sched_admit(struct gw_sched *s, struct gw_job *j, uint64_t now, struct gw_job **victim);

/*
 * The next pooled job to start, or NULL. Jobs found expired on the way are unlinked and
 * added to @d; stops early (NULL) when @d is full so the caller can answer them first.
 * With s->ready set, only a job it accepts is started: in each tenant's sub-queue the
 * first ready one of the GW_READY_SCAN next in serving order (FIFO or LIFO), and a tenant
 * with none is passed over this round without spending or earning deficit. NULL when no
 * queued job is ready.
 */
#define GW_READY_SCAN 16
struct gw_job *gw_sched_next(struct gw_sched *s, uint64_t now, struct gw_drops *d);

/*
 * Housekeeping between dequeues: CoDel state, and dropping work that can no longer be
 * useful (expired deadlines; burst work older than target while CoDel is shedding).
 * Returns true when it stopped because @d filled up (call again after answering).
 */
bool gw_sched_maintain(struct gw_sched *s, uint64_t now, struct gw_drops *d);

/* @j ran: reconcile the estimate with @measured units, learn the class estimate and (for
 * pooled work) the service time @service_ns. */
void gw_sched_done(struct gw_sched *s, struct gw_job *j, double measured, uint64_t service_ns,
		   uint64_t now);

/* @j was admitted but never ran (dropped, or the client vanished): refund its charges.
 * Unlinks it when still queued. */
void gw_sched_release(struct gw_sched *s, struct gw_job *j, uint64_t now);

/* Queue depth allowed now: measured service rate x target wait, 1..max_depth. */
uint32_t gw_sched_depth_limit(const struct gw_sched *s);
/* Pooled jobs per second the workers sustain, from the measured service time. */
double gw_sched_service_rate(const struct gw_sched *s);
/* Age of the oldest queued job (0 when empty). */
uint64_t gw_sched_queue_wait(const struct gw_sched *s, uint64_t now);
/* Units/s the workers deliver at the measured rate (workers x measured units per second of
 * wall time of a pooled job), and the factor (0..1] the reservations are scaled by: what is
 * delivered over what the reservations add up to, 1 while the workers deliver that much. */
double gw_sched_delivered(const struct gw_sched *s);
double gw_sched_reserve_scale(const struct gw_sched *s);

/* Tenant slot's consumption (units/s) and how far above its reservation it is, as a ratio
 * (consumption / max(reservation, 1)): the order in which tenants are shed. */
double gw_sched_consumption(struct gw_sched *s, int slot, uint64_t now);
double gw_sched_overage(struct gw_sched *s, int slot, uint64_t now);

/* Building blocks, exposed for the tests. */
void gw_bucket_init(struct gw_bucket *b, double rate, double burst, uint64_t now);
void gw_bucket_refill(struct gw_bucket *b, uint64_t now);
double gw_meter_value(const struct gw_meter *m, uint64_t now); /* decayed sum */
void gw_meter_add(struct gw_meter *m, uint64_t now, double x);

#endif
