// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The stream job: see stream.h. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <sodium.h>

#include "addr.h"
#include "audit.h"
#include "hll.h"
#include "log.h"
#include "store.h"
#include "stream.h"

#define BATCH 256
#define PROBE 16
#define WINDOW_BUCKETS 6
#define MAX_ASN_PREFIXES 4096
#define MAX_ACTIONS 4096
#define TENANT_SLOTS (SL_MAX_TENANTS + 1)

/* One key of one detector: a prefix, an ASN, an account or a password (hashed). */
struct dkey {
	uint8_t kind;   /* enum sl_detector_id */
	uint8_t len;
	uint8_t b[18];
};

struct dent {
	struct dkey k;
	bool used;
	uint8_t level;           /* what was done to it (account ladder: 1..3) */
	uint8_t class_id;
	uint16_t tenant;
	uint64_t last_ns;
	uint64_t flagged_until;  /* acted (or recorded) until then: not again before */
	struct hll_window w;
};

struct table {
	struct dent *e;
	uint32_t cap;            /* power of two */
	uint64_t evicted;
};

struct rec {
	double ts;
	char rule[40];
	char key[64];
	uint16_t tenant;
	uint8_t class_id;
	uint8_t mode;            /* SL_MODE_ENFORCE: done; SL_MODE_MONITOR: would have been */
	char action[16];
	uint64_t count;
	double threshold;
};

/* Attempts per account today, for the distribution. */
struct dcount {
	uint8_t account[16];
	uint16_t tenant;
	bool used;
	uint32_t n;
};

struct tstat {
	/* attempts and failures in WINDOW_BUCKETS buckets of window / WINDOW_BUCKETS */
	uint64_t att[WINDOW_BUCKETS], fail[WINDOW_BUCKETS];
	uint64_t head;           /* bucket epoch of the newest */
	double baseline;         /* trailing failure ratio (EWMA, per bucket) */
	bool have_baseline;
	uint64_t alerted_until;
	/* With Redis: the tenant's live HyperLogLog keys the last grant saw, and its guesses
	 * refused a new key at stream.redis_max_keys. */
	uint64_t redis_keys, redis_capped;
};

struct probe;

struct stream {
	struct event_base *base;
	const struct sl_maps *maps;
	struct evq *q;
	pthread_t th;
	bool running;
	bool stopping;           /* set by stream_stop(): leave without draining the queue */
	int stop_fd;             /* eventfd: stop the thread */
	int act_fd;              /* eventfd: actions waiting for the loop */
	struct event *act_ev;
	stream_action_fn act;
	void *act_arg;

	unsigned readers;        /* threads waiting for mu: the job lets them in first */
	pthread_mutex_t mu;      /* everything below but the job's own Redis state */
	struct sl_config *c;     /* our copy */
	char tenant_names[TENANT_SLOTS][SL_TENANT_NAME_LEN];
	char class_names[SL_STATS_ROWS][SL_CLASS_NAME_LEN];
	uint64_t window_ns;
	struct table t[SL_DET_N];
	struct rec *recs;
	uint32_t n_recs, rec_head, rec_cap;
	struct dcount *dist;
	uint32_t dist_cap;
	uint64_t dist_day;       /* unix day of the counts */
	uint64_t dist_dropped;   /* accounts not counted: the table was full */
	struct tstat ts[TENANT_SLOTS];
	uint64_t events, failures, verdicts, verdict_errors, actions_dropped;
	uint64_t recorded[2];    /* records by mode: [SL_MODE_ENFORCE] done, [MONITOR] would */
	unsigned stall_ms;       /* SLUICED_STREAM_STALL_MS: a slow job, for game days */
	/* The job's own, used outside mu: the connection and a copy of its settings. */
	struct sl_sync *rc;      /* shared counts, this thread's own connection(s): one per
				  * master of a Redis Cluster (store.h) */
	char raddr[sizeof(((struct sl_config *)0)->redis.address)];
	char rprefix[sizeof(((struct sl_config *)0)->redis.key_prefix)];
	char ruser[sizeof(((struct sl_config *)0)->redis.user)];
	char rpass[sizeof(((struct sl_config *)0)->redis.password)];
	bool rdrop;              /* a reply said this connection is not the master's */
	bool evals;              /* send the scripts whole (a new connection, a NOSCRIPT) */
	struct probe *probes;    /* a batch's, BATCH x (SL_DET_N - 1) */
	int8_t *pstate;          /* each probe's round in redis_pipeline() */
	int64_t *shared;
	int first[BATCH + 1];
	bool redis_down;
	uint64_t redis_retry_at;
	uint32_t redis_timeout_ms;
	uint64_t redis_counts, redis_errors;
	uint64_t write_errors;   /* HLL writes Redis refused (an error reply: OOM, ...) */
	uint64_t write_errors_logged, write_logged_at;
	struct stream_action pending[MAX_ACTIONS];
	uint32_t n_pending;
};

/*
 * Every reader of the job's state (the gateway's loop posting a record or taking actions,
 * the control socket, /metrics) runs on the daemon's event loop, so it must never wait long
 * for the job. The job holds mu only for its in-process work on a batch (no Redis round
 * trip inside), and before taking mu again it lets waiting readers in first: a mutex is not
 * fair, and the job's thread, already running, would otherwise win it back batch after
 * batch while a reader starves (bench/stream measured waits of up to 1.5 s that way).
 */
static void lock_reader(struct stream *s)
{
	__atomic_add_fetch(&s->readers, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&s->mu);
	__atomic_sub_fetch(&s->readers, 1, __ATOMIC_SEQ_CST);
}

static void lock_job(struct stream *s)
{
	int i;

	for (i = 0; i < 1000 && __atomic_load_n(&s->readers, __ATOMIC_SEQ_CST); i++)
		sched_yield();
	pthread_mutex_lock(&s->mu);
}

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static double unix_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t c = 1024;

	while (c < n && c < (1u << 26))
		c <<= 1;
	return c;
}

/* FNV-1a over the key: the tables are ours, their keys are already hashes or prefixes. */
static uint64_t key_hash(const struct dkey *k)
{
	uint64_t h = 1469598103934665603ull;
	unsigned i;

	h = (h ^ k->kind) * 1099511628211ull;
	for (i = 0; i < k->len && i < sizeof(k->b); i++)
		h = (h ^ k->b[i]) * 1099511628211ull;
	return h;
}

static void dent_clear(struct dent *e)
{
	hll_window_free(&e->w);
	memset(e, 0, sizeof(*e));
}

/* The entry for @k, made if need be: a free slot in the probe window, else the one seen
 * longest ago (its counts are forgotten). NULL only when memory runs out. */
static struct dent *table_get(struct stream *s, struct table *t, const struct dkey *k,
			      uint64_t now)
{
	uint64_t h = key_hash(k);
	struct dent *victim = NULL, *e;
	uint32_t i;

	for (i = 0; i < PROBE; i++) {
		e = &t->e[(h + i) & (t->cap - 1)];
		if (e->used && e->k.kind == k->kind && e->k.len == k->len &&
		    !memcmp(e->k.b, k->b, k->len)) {
			e->last_ns = now;
			return e;
		}
		if (!e->used) {
			if (!victim || victim->used)
				victim = e;
		} else if (victim && !victim->used) {
			continue;
		} else if (!victim || e->last_ns < victim->last_ns) {
			victim = e;
		}
	}
	if (victim->used) {
		t->evicted++;
		dent_clear(victim);
	}
	if (hll_window_init(&victim->w, s->window_ns, WINDOW_BUCKETS))
		return NULL;
	victim->used = true;
	victim->k = *k;
	victim->last_ns = now;
	return victim;
}

static void record(struct stream *s, const char *rule, const char *key, uint16_t tenant,
		   uint8_t class_id, uint8_t mode, const char *action, uint64_t count,
		   double threshold)
{
	struct rec *r;

	if (mode <= SL_MODE_MONITOR)
		s->recorded[mode]++;
	if (!s->rec_cap)
		return;
	r = &s->recs[s->rec_head];
	s->rec_head = (s->rec_head + 1) % s->rec_cap;
	if (s->n_recs < s->rec_cap)
		s->n_recs++;
	memset(r, 0, sizeof(*r));
	r->ts = unix_now();
	snprintf(r->rule, sizeof(r->rule), "%s", rule);
	snprintf(r->key, sizeof(r->key), "%s", key);
	r->tenant = tenant;
	r->class_id = class_id;
	r->mode = mode;
	snprintf(r->action, sizeof(r->action), "%s", action);
	r->count = count;
	r->threshold = threshold;
}

static void hex(const uint8_t *b, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = d[b[i] >> 4];
		out[2 * i + 1] = d[b[i] & 15];
	}
	out[2 * n] = '\0';
}

static void prefix_text(const struct sl_outcome_event *ev, char *out, size_t n)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(ev->family == 6 ? AF_INET6 : AF_INET, ev->prefix, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	snprintf(out, n, "%s/%u", a, ev->plen);
}

/* Post an action for the loop's thread (the gateway lives there). */
static void post(struct stream *s, const struct stream_action *a)
{
	uint64_t one = 1;

	if (s->n_pending >= MAX_ACTIONS) {
		s->actions_dropped++;
		return;
	}
	s->pending[s->n_pending++] = *a;
	if (write(s->act_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("stream: cannot wake the loop: %s", strerror(errno));
}

static void put_verdict(struct stream *s, const struct sl_prefix *p, const struct sl_detector_cfg *d,
			const char *why)
{
	struct sl_verdict v = { 0 };

	v.action = d->action == SL_DET_BLOCK ? SL_VERDICT_BLOCK : SL_VERDICT_TIGHTEN;
	v.factor = (uint16_t)(d->factor * 1000.0 + 0.5);
	if (!v.factor)
		v.factor = 1;
	v.reason_code = 9000;
	v.expires_ns = sl_now_ns() + (uint64_t)d->ttl_s * 1000000000ull;
	v.created_unix = (uint64_t)time(NULL);
	snprintf(v.reason, sizeof(v.reason), "%s", why);
	if (sl_maps_verdict_put(s->maps, p, &v)) {
		s->verdict_errors++;
	} else {
		char pfx[64], detail[96];
		struct audit_rec r = { .event = AUDIT_VERDICT, .source = "stream", .prefix = pfx,
				       .reason = why, .detail = detail };

		s->verdicts++;
		r.decision = v.action == SL_VERDICT_BLOCK ? "block" : "tighten";
		sl_prefix_str(p, pfx, sizeof(pfx));
		if (v.action == SL_VERDICT_BLOCK)
			snprintf(detail, sizeof(detail), "added by %s, for %us",
				 sl_detector_name((int)(d - s->c->stream.det)), d->ttl_s);
		else
			snprintf(detail, sizeof(detail), "added by %s, for %us, factor %.3g",
				 sl_detector_name((int)(d - s->c->stream.det)), d->ttl_s,
				 d->factor);
		audit_emit(&r);
	}
}

/* Every prefix the ASN table gives @asn, bounded. */
static int asn_prefixes(const struct stream *s, uint32_t asn, struct sl_prefix *out, int max)
{
	struct sl_settings set;
	struct sl_lpm_key k, next;
	struct sl_asn_val v;
	__u32 slot, id;
	void *prev = NULL;
	int fd, n = 0;
	long scanned = 0;

	if (sl_maps_read_settings(s->maps, &set))
		return 0;
	slot = set.asn_slot & 1;
	if (bpf_map_lookup_elem(s->maps->asn, &slot, &id))
		return 0;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return 0;
	while (n < max && scanned++ < 4000000 && !bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &v) || v.asn != asn)
			continue;
		sl_lpm_to_prefix(&k, &out[n]);
		n++;
	}
	close(fd);
	return n;
}

/* @d fired on entry @e (count @n): act, or record what it would have done. */
static void fire(struct stream *s, int det, struct dent *e, const struct sl_outcome_event *ev,
		 uint64_t n, const char *key, uint64_t now)
{
	const struct sl_detector_cfg *d = &s->c->stream.det[det];
	bool enforce = d->mode == SL_MODE_ENFORCE && d->action != SL_DET_ALERT;
	char why[SL_VERDICT_REASON_LEN];
	const char *action = sl_det_action_name(d->action);

	e->flagged_until = now + (uint64_t)d->ttl_s * 1000000000ull;
	if (enforce && (det == SL_DET_PREFIX_ACCOUNTS || det == SL_DET_ASN_ACCOUNTS) &&
	    !s->maps)
		enforce = false; /* no datapath here: recorded only */
	record(s, sl_detector_name(det), key, ev->tenant, ev->class_id,
	       enforce ? SL_MODE_ENFORCE : SL_MODE_MONITOR, action, n, d->threshold);
	if (audit_enabled()) {
		char pfx[INET6_ADDRSTRLEN + 8], detail[160], dec[24];
		bool acct = det == SL_DET_ACCOUNT_SOURCES || det == SL_DET_ACCOUNT_KEYS;
		struct audit_rec r = { .event = AUDIT_DETECTOR, .source = "stream",
				       .reason = sl_detector_name(det), .decision = dec,
				       .prefix = pfx, .detail = detail,
				       .account = acct ? ev->account : NULL };

		r.tenant = s->tenant_names[ev->tenant < TENANT_SLOTS ? ev->tenant : SL_MAX_TENANTS];
		prefix_text(ev, pfx, sizeof(pfx));
		snprintf(dec, sizeof(dec), "%s%s", enforce ? "" : "would_", action);
		snprintf(detail, sizeof(detail), "%s: %llu against threshold %g", key,
			 (unsigned long long)n, d->threshold);
		audit_emit(&r);
	}
	if (!enforce)
		return;
	switch (det) {
	case SL_DET_PREFIX_ACCOUNTS: {
		struct sl_prefix p = { .family = ev->family == 6 ? SL_FAM_V6 : SL_FAM_V4,
				       .plen = ev->plen };

		memcpy(p.addr, ev->prefix, 16);
		snprintf(why, sizeof(why), "stream: %llu accounts failed from it",
			 (unsigned long long)n);
		put_verdict(s, &p, d, why);
		break;
	}
	case SL_DET_ASN_ACCOUNTS: {
		static struct sl_prefix ps[MAX_ASN_PREFIXES];
		int i, np = asn_prefixes(s, ev->asn, ps, MAX_ASN_PREFIXES);

		snprintf(why, sizeof(why), "stream: AS%u, %llu accounts failed", ev->asn,
			 (unsigned long long)n);
		for (i = 0; i < np; i++)
			put_verdict(s, &ps[i], d, why);
		if (np == MAX_ASN_PREFIXES)
			log_warn("stream: AS%u has more than %d prefixes; the first %d have a verdict",
				 ev->asn, MAX_ASN_PREFIXES, MAX_ASN_PREFIXES);
		break;
	}
	case SL_DET_ACCOUNT_SOURCES:
	case SL_DET_PASSWORD_ACCOUNTS:
	case SL_DET_ACCOUNT_KEYS: {
		struct stream_action a = { 0 };

		a.kind = det == SL_DET_ACCOUNT_SOURCES ? STREAM_ACCOUNT_LEVEL :
			 det == SL_DET_PASSWORD_ACCOUNTS ? STREAM_PASSWORD_STEP_UP :
			 STREAM_ACCOUNT_SOURCE_STEP_UP;
		a.level = e->level;
		a.tenant = ev->tenant;
		memcpy(a.hash, e->k.b, 16);
		a.expires_ns = e->flagged_until;
		post(s, &a);
		break;
	}
	default:
		break;
	}
}

static void tenant_roll(struct stream *s, struct tstat *t, uint64_t now)
{
	uint64_t span = s->window_ns / WINDOW_BUCKETS, epoch = now / span, i;
	double a = 1.0 - exp(-(double)span / ((double)s->c->stream.baseline_s * 1e9));

	if (!t->head) {
		t->head = epoch;
		return;
	}
	for (i = 0; t->head < epoch && i < WINDOW_BUCKETS + 1; i++) {
		uint64_t b = t->head % WINDOW_BUCKETS;

		/* The bucket leaving feeds the baseline. */
		if (t->att[b]) {
			double r = (double)t->fail[b] / (double)t->att[b];

			t->baseline = t->have_baseline ? t->baseline + a * (r - t->baseline) : r;
			t->have_baseline = true;
		}
		t->head++;
		t->att[t->head % WINDOW_BUCKETS] = 0;
		t->fail[t->head % WINDOW_BUCKETS] = 0;
	}
	if (t->head < epoch)
		t->head = epoch; /* idle for longer than a window: everything above was cleared */
}

static void tenant_check(struct stream *s, const struct sl_outcome_event *ev, uint64_t now)
{
	const struct sl_detector_cfg *d = &s->c->stream.det[SL_DET_TENANT_RATIO];
	struct tstat *t = &s->ts[ev->tenant < TENANT_SLOTS ? ev->tenant : SL_MAX_TENANTS];
	uint64_t att = 0, fail = 0;
	double ratio, base;
	unsigned i;

	tenant_roll(s, t, now);
	t->att[t->head % WINDOW_BUCKETS]++;
	if (!ev->success)
		t->fail[t->head % WINDOW_BUCKETS]++;
	if (!d->enabled || !t->have_baseline || now < t->alerted_until)
		return;
	for (i = 0; i < WINDOW_BUCKETS; i++) {
		att += t->att[i];
		fail += t->fail[i];
	}
	if (att < s->c->stream.min_attempts)
		return;
	ratio = (double)fail / (double)att;
	base = t->baseline > 0.01 ? t->baseline : 0.01;
	if (ratio >= d->threshold * base) {
		char key[96];

		t->alerted_until = now + (uint64_t)d->ttl_s * 1000000000ull;
		snprintf(key, sizeof(key), "%s: %.1f%% failed against %.1f%%",
			 s->tenant_names[ev->tenant < TENANT_SLOTS ? ev->tenant : SL_MAX_TENANTS],
			 ratio * 100, t->baseline * 100);
		record(s, sl_detector_name(SL_DET_TENANT_RATIO), key, ev->tenant, ev->class_id,
		       SL_MODE_MONITOR, "alert", fail, d->threshold);
		{
			struct audit_rec r = { .event = AUDIT_DETECTOR, .source = "stream",
					       .reason = sl_detector_name(SL_DET_TENANT_RATIO),
					       .decision = "alert", .detail = key };

			r.tenant = s->tenant_names[ev->tenant < TENANT_SLOTS ? ev->tenant :
						   SL_MAX_TENANTS];
			audit_emit(&r);
		}
	}
}

static void dist_count(struct stream *s, const struct sl_outcome_event *ev)
{
	uint64_t day = (uint64_t)time(NULL) / 86400, h = 1469598103934665603ull;
	uint32_t i;

	if (day != s->dist_day) {
		memset(s->dist, 0, sizeof(*s->dist) * s->dist_cap);
		s->dist_day = day;
		s->dist_dropped = 0;
	}
	for (i = 0; i < 16; i++)
		h = (h ^ ev->account[i]) * 1099511628211ull;
	h = (h ^ ev->tenant) * 1099511628211ull;
	for (i = 0; i < PROBE; i++) {
		struct dcount *d = &s->dist[(h + i) & (s->dist_cap - 1)];

		if (!d->used) {
			d->used = true;
			memcpy(d->account, ev->account, 16);
			d->tenant = ev->tenant;
			d->n = 1;
			return;
		}
		if (d->tenant == ev->tenant && !memcmp(d->account, ev->account, 16)) {
			d->n++;
			return;
		}
	}
	s->dist_dropped++;
}

/* One probe of one event: a detector, its key, the member to count under it. */
struct probe {
	int det;
	struct dkey k;
	uint64_t member;
	bool mint;          /* may make the key on Redis: a guess (checked against a password) */
	char text[80];      /* the key for people: "2001:db8::/48", "AS64500", ... */
	/* Set with the batch (under mu), for the round trip outside it: */
	uint16_t tenant;
	uint32_t cap;       /* stream.redis_max_keys then; 0: no cap */
	char tname[SL_TENANT_NAME_LEN];
	/* What the round trip found: */
	bool capped;        /* its key was new and the tenant's live-key set was full */
	bool unshared;      /* its member is not in Redis: no key, and this probe made none */
	int64_t live;       /* the tenant's live keys the grant saw; -1: not asked */
};

/*
 * One distinct-count detector: add the member to the key's window; fire past the threshold.
 * @shared: the cluster's count from Redis for this probe, or -1 (in process only).
 */
static void detect(struct stream *s, const struct probe *p, const struct sl_outcome_event *ev,
		   int64_t shared, uint64_t now)
{
	const struct sl_detector_cfg *d = &s->c->stream.det[p->det];
	struct dent *e;
	uint64_t n;
	int changed;

	if (!d->enabled)
		return;
	e = table_get(s, &s->t[p->det], &p->k, now);
	if (!e)
		return;
	e->tenant = ev->tenant;
	e->class_id = ev->class_id;
	/* The window in process is kept either way: it answers when Redis cannot. */
	changed = hll_window_add(&e->w, now, p->member);
	/* A member already counted changes nothing here; a flagged key has nothing to decide
	 * (a dense window costs ~0.1 ms to count). */
	if (shared < 0 && changed <= 0)
		return;
	if (p->det != SL_DET_ACCOUNT_SOURCES && now < e->flagged_until)
		return;
	n = shared >= 0 ? (uint64_t)shared : hll_window_count(&e->w, now);
	if (p->unshared) {
		/* Its key was not there and this probe did not make it (a refused attempt, the
		 * tenant at its cap, a write Redis refused): Redis's count lacks this node's
		 * members, so the node's own window counts too. */
		uint64_t mine = hll_window_count(&e->w, now);

		n = mine > n ? mine : n;
	}
	if (p->det == SL_DET_ACCOUNT_SOURCES) {
		/* The ladder: delay at the threshold, step-up at twice it, and at four times
		 * (a burst already in flight) the step-up held for the delay too. */
		uint8_t want = n >= 4 * d->threshold ? 3 : n >= 2 * d->threshold ? 2 :
			       n >= d->threshold ? 1 : 0;

		if (now >= e->flagged_until)
			e->level = 0;
		if (want > e->level) {
			e->level = want;
			fire(s, p->det, e, ev, n, p->text, now);
		}
		return;
	}
	if (n >= d->threshold && now >= e->flagged_until)
		fire(s, p->det, e, ev, n, p->text, now);
}

static uint64_t h64(const uint8_t *b, size_t n)
{
	uint64_t v = 0;

	memcpy(&v, b, n < 8 ? n : 8);
	return v;
}

/* The ASN and class of the event's source, from the edge's table. */
static void classify(struct stream *s, struct sl_outcome_event *ev)
{
	struct sl_prefix p = { .family = ev->family == 6 ? SL_FAM_V6 : SL_FAM_V4,
			       .plen = ev->family == 6 ? 128 : 32 };
	struct sl_asn_val v;

	if (!s->maps || ev->asn)
		return;
	memcpy(p.addr, ev->prefix, 16);
	if (!sl_maps_lookup_asn(s->maps, &p, &v)) {
		ev->asn = v.asn;
		ev->class_id = (uint8_t)v.class_id;
	}
}

void stream_account_source(const uint8_t account[16], uint8_t family, uint8_t plen,
			   const uint8_t prefix[16], uint8_t out[16])
{
	crypto_generichash_state st;
	uint8_t fp[2] = { family, plen };

	crypto_generichash_init(&st, (const unsigned char *)"sluice account source", 21, 16);
	crypto_generichash_update(&st, account, 16);
	crypto_generichash_update(&st, fp, sizeof(fp));
	crypto_generichash_update(&st, prefix, 16);
	crypto_generichash_final(&st, out, 16);
}

/*
 * The distinct-count probes of a failed login (up to SL_DET_N - 1). Only a guess, an
 * attempt checked against a password, is counted for its account or its password: a
 * login refused unchecked (throttled, stepped up) was nobody's guess, and counting it would
 * let whoever can send one climb an account's ladder without being checked once. It still
 * counts for its source, and on Redis only into a key a guess has made (mint false).
 */
static int probes_of(const struct stream *s, const struct sl_outcome_event *ev,
		     struct probe *out)
{
	static const uint8_t no_key[4];
	bool guess = !ev->unchecked;
	char hx[33], pt[INET6_ADDRSTRLEN + 8];
	int n = 0;

	memset(out, 0, sizeof(*out) * (SL_DET_N - 1));
	for (n = 0; n < SL_DET_N - 1; n++)
		out[n].mint = guess;
	n = 0;
	if (s->c->stream.det[SL_DET_PREFIX_ACCOUNTS].enabled) {
		out[n].det = SL_DET_PREFIX_ACCOUNTS;
		out[n].k.kind = SL_DET_PREFIX_ACCOUNTS;
		out[n].k.len = 18;
		out[n].k.b[0] = ev->family;
		out[n].k.b[1] = ev->plen;
		memcpy(out[n].k.b + 2, ev->prefix, 16);
		out[n].member = h64(ev->account, 16);
		prefix_text(ev, out[n].text, sizeof(out[n].text));
		n++;
	}
	if (ev->asn && s->c->stream.det[SL_DET_ASN_ACCOUNTS].enabled) {
		out[n].det = SL_DET_ASN_ACCOUNTS;
		out[n].k.kind = SL_DET_ASN_ACCOUNTS;
		out[n].k.len = 4;
		memcpy(out[n].k.b, &ev->asn, 4);
		out[n].member = h64(ev->account, 16);
		snprintf(out[n].text, sizeof(out[n].text), "AS%u", ev->asn);
		n++;
	}
	if (guess && s->c->stream.det[SL_DET_ACCOUNT_SOURCES].enabled) {
		out[n].det = SL_DET_ACCOUNT_SOURCES;
		out[n].k.kind = SL_DET_ACCOUNT_SOURCES;
		out[n].k.len = 16;
		memcpy(out[n].k.b, ev->account, 16);
		out[n].member = hll_hash(ev->prefix, 16) ^ ev->plen;
		hex(ev->account, 8, hx);
		snprintf(out[n].text, sizeof(out[n].text), "account %s", hx);
		n++;
	}
	if (guess && (h64(ev->password, 16) || h64(ev->password + 8, 8)) &&
	    s->c->stream.det[SL_DET_PASSWORD_ACCOUNTS].enabled) {
		out[n].det = SL_DET_PASSWORD_ACCOUNTS;
		out[n].k.kind = SL_DET_PASSWORD_ACCOUNTS;
		out[n].k.len = 16;
		memcpy(out[n].k.b, ev->password, 16);
		out[n].member = h64(ev->account, 16);
		hex(ev->password, 8, hx);
		snprintf(out[n].text, sizeof(out[n].text), "password %s", hx);
		n++;
	}
	/* One account, one allocation (the event's prefix), the distinct key prefixes in it. */
	if (guess && memcmp(ev->key, no_key, sizeof(no_key)) &&
	    s->c->stream.det[SL_DET_ACCOUNT_KEYS].enabled) {
		out[n].det = SL_DET_ACCOUNT_KEYS;
		out[n].k.kind = SL_DET_ACCOUNT_KEYS;
		out[n].k.len = 16;
		stream_account_source(ev->account, ev->family, ev->plen, ev->prefix, out[n].k.b);
		out[n].member = hll_hash(ev->key, sizeof(ev->key));
		hex(ev->account, 8, hx);
		prefix_text(ev, pt, sizeof(pt));
		snprintf(out[n].text, sizeof(out[n].text), "account %s in %s", hx, pt);
		n++;
	}
	return n;
}

/* ---- shared counts on Redis ---------------------------------------------------------- */

/*
 * With Redis, every node PFADDs into per-bucket HyperLogLogs and PFCOUNTs the live buckets
 * together (Redis merges them on the fly), so a spray spread over many nodes is counted
 * once. The connection is this thread's own and synchronous: it is off the request path. A
 * batch is one pipeline. When Redis fails, the job counts in process (it always does too)
 * and tries Redis again after RETRY_NS: a second, so that a restarted Redis shares the
 * counts again about as soon as the counters' store reconnects (0.5-0.7 s), and a spray
 * right after it is counted once across nodes. A try costs a connect on this thread only
 * (at most the pipeline timeout against an unreachable host), never the loop.
 */
#define RETRY_NS (1ull * 1000000000ull)

static void redis_close(struct stream *s)
{
	sl_sync_free(s->rc);
	s->rc = NULL;
}

/* A connection as the store makes one (store.h): located (a name resolved, or the master
 * the sentinels name: on this thread, never the loop), then AUTH with redis.user and
 * redis.password before anything else. */
static bool redis_ready(struct stream *s, uint64_t now)
{
	const char *a = s->raddr;
	char err[320];

	if (s->rc)
		return true;
	if (!a[0] || now < s->redis_retry_at)
		return false;
	s->rdrop = false;
	s->rc = sl_sync_connect(a, s->ruser, s->rpass, s->redis_timeout_ms, err,
				      sizeof(err));
	if (!s->rc) {
		if (!s->redis_down)
			log_warn("stream: Redis %s: %s; counting in process", a, err);
		__atomic_store_n(&s->redis_down, true, __ATOMIC_RELAXED);
		s->redis_retry_at = now + RETRY_NS;
		return false;
	}
	s->evals = true;
	if (s->redis_down)
		log_info("stream: Redis %s answers again; counts are shared", a);
	__atomic_store_n(&s->redis_down, false, __ATOMIC_RELAXED);
	return true;
}

/*
 * Three rounds, each one pipeline (the later two only when there is something to ask):
 *
 *  1. Every probe, one EVAL of known_lua: add the member if the newest bucket's key exists,
 *     and read the window's count. A refused attempt (nobody's password checked: a 429, a
 *     step-up, a decoy) never goes further, so whoever can send refused requests from fresh
 *     prefixes cannot mint keys (issue 16: each 429 from a fresh prefix made a ~270-byte key
 *     living 700 s, 100k of them 45 MB). An existing key's TTL is never extended: a
 *     bucket's key lives its window from its making, whoever adds to it.
 *  2. A guess whose key did not exist asks its tenant for room (grant_lua, in the tenant's
 *     slot). A tenant counts the keys its guesses made in each bucket span
 *     (PREFIX:{TENANT}:hll:made:BUCKET, living as long as a key made in that span does);
 *     the live keys are the sum over the spans a key can still be alive in (MADE_BUCKETS),
 *     and past stream.redis_max_keys a guess is refused room: counted (capped), it counts
 *     in process only. The cap bounds what one tenant's checked attempts (a credential-
 *     stuffing run, a forced reset) can make Redis hold, whatever the counters allow, at a
 *     handful of small keys a tenant rather than an entry per key. Two nodes making the
 *     same key at once both count it, and a key Redis evicted counts again when remade:
 *     the sum errs high, so the cap only ever binds early. Skipped when the cap is 0.
 *  3. A guess granted room (or any, with no cap) makes the key: PFADD, PEXPIRE, PFCOUNT.
 *
 * All keys of one probe share one hash tag, so one slot; the counts are in the tenant's.
 * That is why it takes rounds on a Redis Cluster. On one Redis (an address, or the master
 * the sentinels name) one_lua does all three in one script, one round trip a batch as
 * before the cap (the rounds cost ~45 % of the job's events/s on Redis: bench/stream).
 */
#define MADE_BUCKETS (WINDOW_BUCKETS + 2)

static const char known_lua[] =
	"local failed, existed = 0, redis.call('EXISTS', KEYS[1])\n"
	"if existed == 1 then\n"
	"  local r = redis.pcall('PFADD', KEYS[1], ARGV[1])\n"
	"  if type(r) == 'table' and r.err then failed = r.err end\n"
	"end\n"
	"return {redis.call('PFCOUNT', unpack(KEYS)), failed, existed}\n";

/* The room check: KEYS[first..last] the tenant's made counts, newest first; the cap and
 * the counts' TTL in ms. Sets made_n (the live keys, one more when granted) and returns
 * 1 granted, 0 full, or Redis's error. Shared by both scripts. */
#define ROOM_LUA \
	"local function room(first, last, cap, ttl)\n" \
	"  local n = 0\n" \
	"  for _, v in ipairs(redis.call('MGET', unpack(KEYS, first, last))) do\n" \
	"    n = n + (tonumber(v) or 0)\n" \
	"  end\n" \
	"  made_n = n\n" \
	"  if n >= cap then return 0 end\n" \
	"  local r = redis.pcall('INCR', KEYS[first])\n" \
	"  if type(r) == 'table' and r.err then return r.err end\n" \
	"  if r == 1 then redis.call('PEXPIRE', KEYS[first], ttl) end\n" \
	"  made_n = n + 1\n" \
	"  return 1\n" \
	"end\n"

/* The three rounds in one script, for one Redis. KEYS: the window's WINDOW_BUCKETS HLL
 * keys, newest first, then the tenant's MADE_BUCKETS counts; ARGV: the member, "1" if the
 * probe may make its key, the key's TTL in ms, the cap (0: none), the counts' TTL in ms.
 * Returns {count, Redis's error or 0, existed, made, capped, the tenant's live keys or
 * -1}. */
static const char one_lua[] =
	"local made_n = -1\n"
	ROOM_LUA
	"local nb = 6\n"
	"local failed, made, capped = 0, 0, 0\n"
	"local existed = redis.call('EXISTS', KEYS[1])\n"
	"if existed == 1 then\n"
	"  local r = redis.pcall('PFADD', KEYS[1], ARGV[1])\n"
	"  if type(r) == 'table' and r.err then failed = r.err end\n"
	"elseif ARGV[2] == '1' then\n"
	"  local ok = 1\n"
	"  if tonumber(ARGV[4]) > 0 then\n"
	"    ok = room(nb + 1, #KEYS, tonumber(ARGV[4]), ARGV[5])\n"
	"    if ok == 0 then capped = 1 elseif ok ~= 1 then failed = ok end\n"
	"  end\n"
	"  if ok == 1 then\n"
	"    local r = redis.pcall('PFADD', KEYS[1], ARGV[1])\n"
	"    if type(r) == 'table' and r.err then failed = r.err\n"
	"    else redis.call('PEXPIRE', KEYS[1], ARGV[3]); made = 1 end\n"
	"  end\n"
	"end\n"
	"return {redis.call('PFCOUNT', unpack(KEYS, 1, nb)), failed, existed, made, capped, "
	"made_n}\n";
_Static_assert(WINDOW_BUCKETS == 6, "one_lua's nb is WINDOW_BUCKETS");

/* Round 2 on a Cluster. KEYS: the tenant's MADE_BUCKETS counts, newest first; ARGV: the
 * counts' TTL in ms, the cap. Returns {1 granted | 0 full | -1 refused by Redis, live keys,
 * Redis's error or 0}. */
static const char grant_lua[] =
	"local made_n = -1\n"
	ROOM_LUA
	"local ok = room(1, #KEYS, tonumber(ARGV[2]), ARGV[1])\n"
	"if ok == 1 or ok == 0 then return {ok, made_n, 0} end\n"
	"return {-1, made_n, ok}\n";

/*
 * The scripts go by EVALSHA, their SHA-1 computed here: sent whole with every probe they
 * were a kilobyte a call for Redis to read and hash (bench/stream: the job's CPU per event
 * 1.8x). A connection's first batch sends them whole (EVAL caches them on that server),
 * and so does the batch after a NOSCRIPT (a restarted Redis, a failover, a Cluster master
 * that had not seen them yet): that batch's probes lost count in process only.
 */
enum { SC_KNOWN, SC_ONE, SC_GRANT, SC_N };
static const char *const script_lua[SC_N] = { known_lua, one_lua, grant_lua };
static char script_sha[SC_N][41];
static pthread_once_t script_once = PTHREAD_ONCE_INIT;

static void script_shas(void)
{
	static const char hx[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len, i;
	int k;

	for (k = 0; k < SC_N; k++) {
		if (!EVP_Digest(script_lua[k], strlen(script_lua[k]), md, &len, EVP_sha1(), NULL) ||
		    len != 20)
			continue; /* left empty: sent whole every time */
		for (i = 0; i < 20; i++) {
			script_sha[k][2 * i] = hx[md[i] >> 4];
			script_sha[k][2 * i + 1] = hx[md[i] & 15];
		}
		script_sha[k][40] = 0;
	}
}

/* argv[0..1] and lens[0..1] for script @sc; returns 2. */
static int script_args(const struct stream *s, int sc, const char **argv, size_t *lens)
{
	if (s->evals || !script_sha[sc][0]) {
		argv[0] = "EVAL";
		argv[1] = script_lua[sc];
		lens[0] = 4;
	} else {
		argv[0] = "EVALSHA";
		argv[1] = script_sha[sc];
		lens[0] = 7;
	}
	lens[1] = strlen(argv[1]);
	return 2;
}

/* The tenant's made counts of @p's tenant, newest first. */
static void made_keys(const struct stream *s, const struct probe *p, uint64_t b,
		      char keys[MADE_BUCKETS][160])
{
	int j;

	for (j = 0; j < MADE_BUCKETS; j++)
		snprintf(keys[j], sizeof(keys[0]), "%s:{%s}:hll:made:%llu", s->rprefix, p->tname,
			 (unsigned long long)(b - (uint64_t)j));
}

/* A write Redis refused (an error reply to PFADD or PEXPIRE, or the script's PFADD):
 * counted, and logged at most once per WRITE_LOG_NS with the count since the last line. */
#define WRITE_LOG_NS (10ull * 1000000000ull)

static void write_failed(struct stream *s, const char *why, uint64_t now)
{
	uint64_t n = __atomic_add_fetch(&s->write_errors, 1, __ATOMIC_RELAXED);

	if (s->write_logged_at && now - s->write_logged_at < WRITE_LOG_NS)
		return;
	log_warn("stream: Redis refused %llu HyperLogLog write(s)%s: %s; those members are "
		 "counted in process only",
		 (unsigned long long)(n - s->write_errors_logged),
		 s->write_logged_at ? " since the last report" : "", why);
	s->write_errors_logged = n;
	s->write_logged_at = now ? now : 1;
}

/* The window's bucket keys of @p, newest first. */
static void bucket_keys(const struct stream *s, const struct probe *p, uint64_t b,
			char keys[WINDOW_BUCKETS][160])
{
	char kh[2 * sizeof(p->k.b) + 1];
	int j;

	hex(p->k.b, p->k.len, kh);
	for (j = 0; j < WINDOW_BUCKETS; j++)
		snprintf(keys[j], sizeof(keys[0]), "%s:{hll:%s:%s}:%llu", s->rprefix,
			 sl_detector_name(p->det), kh, (unsigned long long)(b - (uint64_t)j));
}

/* One reply; false when the connection broke. A reply that says this is not the master
 * (a failover made it a replica) or that AUTH is now needed marks the connection to be
 * made again next batch, and the write as failed. */
static bool read_reply(struct stream *s, redisReply **out, uint64_t now)
{
	redisReply *r = NULL;

	*out = NULL;
	if (sl_sync_reply(s->rc, &r) != REDIS_OK || !r) {
		const char *e = sl_sync_errstr(s->rc);

		log_warn("stream: Redis: %s", e[0] ? e : "no reply");
		return false;
	}
	if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", 8)) {
		s->evals = true; /* the next batch sends them whole; no write was refused */
	} else if (r->type == REDIS_REPLY_ERROR) {
		if (!strncmp(r->str, "READONLY", 8) || !strncmp(r->str, "NOAUTH", 6))
			s->rdrop = true;
		write_failed(s, r->str, now);
	}
	*out = r;
	return true;
}

static bool int_elem(const redisReply *r, size_t i, long long *v)
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements <= i ||
	    r->element[i]->type != REDIS_REPLY_INTEGER)
		return false;
	*v = r->element[i]->integer;
	return true;
}

/* One Redis: each probe one EVAL of one_lua, the batch one pipeline. */
static bool redis_one_round(struct stream *s, struct probe *p, int n, int64_t *out,
			    uint64_t b, const char *ttl, const char *ttl_made, uint64_t now)
{
	char keys[WINDOW_BUCKETS][160], made[MADE_BUCKETS][160], cap[16], nkeys[8], nshort[8];
	const char *argv[3 + WINDOW_BUCKETS + MADE_BUCKETS + 5];
	size_t lens[3 + WINDOW_BUCKETS + MADE_BUCKETS + 5];
	int i, j;

	snprintf(nkeys, sizeof(nkeys), "%d", WINDOW_BUCKETS + MADE_BUCKETS);
	snprintf(nshort, sizeof(nshort), "%d", WINDOW_BUCKETS);
	for (i = 0; i < n; i++) {
		/* A probe that may not make its key never asks for room: no counts to pass. */
		bool room = p[i].mint && p[i].cap;
		int a = 0;

		bucket_keys(s, &p[i], b, keys);
		snprintf(cap, sizeof(cap), "%u", room ? p[i].cap : 0);
		a = script_args(s, SC_ONE, argv, lens);
		argv[a++] = room ? nkeys : nshort;
		for (j = 0; j < WINDOW_BUCKETS; j++)
			argv[a++] = keys[j];
		if (room) {
			made_keys(s, &p[i], b, made);
			for (j = 0; j < MADE_BUCKETS; j++)
				argv[a++] = made[j];
		}
		for (j = 2; j < a; j++)
			lens[j] = strlen(argv[j]);
		argv[a] = (const char *)&p[i].member;
		lens[a++] = sizeof(p[i].member);
		argv[a] = p[i].mint ? "1" : "0";
		lens[a++] = 1;
		argv[a] = ttl;
		lens[a++] = strlen(ttl);
		argv[a] = cap;
		lens[a++] = strlen(cap);
		argv[a] = ttl_made;
		lens[a++] = strlen(ttl_made);
		sl_sync_append(s->rc, keys[0], a, argv, lens);
	}
	for (i = 0; i < n; i++) {
		redisReply *r;
		long long v, existed = 1, mk = 0, capped = 0, lv = -1;

		if (!read_reply(s, &r, now))
			return false;
		if (r->type != REDIS_REPLY_ERROR && int_elem(r, 0, &v) && int_elem(r, 2, &existed) &&
		    int_elem(r, 3, &mk) && int_elem(r, 4, &capped) && int_elem(r, 5, &lv)) {
			out[i] = v;
			if (r->element[1]->type == REDIS_REPLY_STRING)
				write_failed(s, r->element[1]->str, now);
			p[i].unshared = !existed && !mk;
			p[i].capped = capped;
			p[i].live = lv;
		}
		freeReplyObject(r);
	}
	return !s->rdrop;
}

/* Send the batch's rounds and read its counts; false when the connection failed. */
static bool redis_pipeline(struct stream *s, struct probe *p, int n, int64_t *out,
			   uint64_t now)
{
	enum { KNOWN, ASK, MAKE };
	uint64_t span = s->window_ns / WINDOW_BUCKETS, b = now / span;
	char keys[WINDOW_BUCKETS][160], made[MADE_BUCKETS][160], ttl[24], ttl_made[24], nkeys[8];
	const char *argv[4 + MADE_BUCKETS + WINDOW_BUCKETS];
	size_t lens[4 + MADE_BUCKETS + WINDOW_BUCKETS];
	int i, j, k, round, sent;

	snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long)((s->window_ns + span) / 1000000));
	snprintf(ttl_made, sizeof(ttl_made), "%llu",
		 (unsigned long long)((s->window_ns + 2 * span) / 1000000));
	snprintf(nkeys, sizeof(nkeys), "%d", WINDOW_BUCKETS);
	for (i = 0; i < n; i++) {
		p[i].capped = p[i].unshared = false;
		p[i].live = -1;
		s->pstate[i] = KNOWN;
	}
	if (strncmp(s->raddr, "cluster:", 8))
		return redis_one_round(s, p, n, out, b, ttl, ttl_made, now);
	for (round = KNOWN; round <= MAKE; round++) {
		sent = 0;
		for (i = 0; i < n; i++) {
			if (s->pstate[i] != round)
				continue;
			bucket_keys(s, &p[i], b, keys);
			if (round == KNOWN) {
				script_args(s, SC_KNOWN, argv, lens);
				argv[2] = nkeys;
				lens[2] = strlen(nkeys);
				for (j = 0; j < WINDOW_BUCKETS; j++) {
					argv[3 + j] = keys[j];
					lens[3 + j] = strlen(keys[j]);
				}
				argv[3 + WINDOW_BUCKETS] = (const char *)&p[i].member;
				lens[3 + WINDOW_BUCKETS] = sizeof(p[i].member);
				sl_sync_append(s->rc, keys[0], 4 + WINDOW_BUCKETS, argv, lens);
			} else if (round == ASK) {
				char cap[16], nm[8];
				int a = 0;

				made_keys(s, &p[i], b, made);
				snprintf(cap, sizeof(cap), "%u", p[i].cap);
				snprintf(nm, sizeof(nm), "%d", MADE_BUCKETS);
				a = script_args(s, SC_GRANT, argv, lens);
				argv[a++] = nm;
				for (j = 0; j < MADE_BUCKETS; j++)
					argv[a++] = made[j];
				argv[a++] = ttl_made;
				argv[a++] = cap;
				for (j = 2; j < a; j++)
					lens[j] = strlen(argv[j]);
				sl_sync_append(s->rc, made[0], a, argv, lens);
			} else {
				argv[0] = "PFADD";
				argv[1] = keys[0];
				argv[2] = (const char *)&p[i].member;
				lens[0] = 5;
				lens[1] = strlen(keys[0]);
				lens[2] = sizeof(p[i].member);
				sl_sync_append(s->rc, keys[0], 3, argv, lens);
				argv[0] = "PEXPIRE";
				argv[2] = ttl;
				lens[0] = 7;
				lens[2] = strlen(ttl);
				sl_sync_append(s->rc, keys[0], 3, argv, lens);
				argv[0] = "PFCOUNT";
				lens[0] = 7;
				for (j = 0; j < WINDOW_BUCKETS; j++) {
					argv[1 + j] = keys[j];
					lens[1 + j] = strlen(keys[j]);
				}
				sl_sync_append(s->rc, keys[0], 1 + WINDOW_BUCKETS, argv, lens);
			}
			sent++;
		}
		if (!sent)
			continue;
		for (i = 0; i < n; i++) {
			int replies = round == MAKE ? 3 : 1;

			if (s->pstate[i] != round)
				continue;
			s->pstate[i] = -1; /* done, unless the reply says otherwise */
			for (k = 0; k < replies; k++) {
				redisReply *r;
				long long v, w;

				if (!read_reply(s, &r, now))
					return false;
				if (r->type == REDIS_REPLY_ERROR) {
					freeReplyObject(r);
					continue;
				}
				if (round == KNOWN && int_elem(r, 0, &v)) {
					out[i] = v;
					if (r->elements > 1 &&
					    r->element[1]->type == REDIS_REPLY_STRING)
						write_failed(s, r->element[1]->str, now);
					if (int_elem(r, 2, &w) && !w) {
						p[i].unshared = true;
						if (p[i].mint)
							s->pstate[i] = p[i].cap ? ASK : MAKE;
					}
				} else if (round == ASK && int_elem(r, 0, &v) &&
					   int_elem(r, 1, &w)) {
					p[i].live = w;
					if (v == 1)
						s->pstate[i] = MAKE;
					else if (v == 0)
						p[i].capped = true;
					else if (r->elements > 2 &&
						 r->element[2]->type == REDIS_REPLY_STRING)
						write_failed(s, r->element[2]->str, now);
				} else if (round == MAKE && k == 2 &&
					   r->type == REDIS_REPLY_INTEGER) {
					out[i] = r->integer;
					p[i].unshared = false;
				}
				freeReplyObject(r);
			}
		}
	}
	return !s->rdrop;
}

/* Counts for @n probes (@out[i] = -1 where Redis did not answer). A broken connection (a
 * restarted Redis) is made again once at once; failing that, the job counts in process
 * and tries again after RETRY_NS. A batch with nothing to ask (successes only) says
 * nothing about Redis: it neither marks Redis down nor delays the next try (issue 16: it
 * did both, and background logins kept the job off Redis for good). */
static void redis_counts(struct stream *s, struct probe *p, int n, int64_t *out,
			 uint64_t now)
{
	int i, attempt;

	for (i = 0; i < n; i++)
		out[i] = -1;
	/* No redis.address: in process by design, nothing is "not answering" (issue 17: a
	 * node without Redis logged that it was). */
	if (!n || !s->raddr[0])
		return;
	for (attempt = 0; attempt < 2; attempt++) {
		bool whole;

		if (!redis_ready(s, now))
			return;
		whole = s->evals;
		if (redis_pipeline(s, p, n, out, now)) {
			/* Sent whole, the scripts are now cached there: by SHA from now on. */
			if (whole)
				s->evals = false;
			__atomic_fetch_add(&s->redis_counts, (uint64_t)n, __ATOMIC_RELAXED);
			return;
		}
		for (i = 0; i < n; i++)
			out[i] = -1;
		__atomic_fetch_add(&s->redis_errors, 1, __ATOMIC_RELAXED);
		redis_close(s);
	}
	if (!s->redis_down)
		log_warn("stream: Redis %s is not answering; counting in process", s->raddr);
	__atomic_store_n(&s->redis_down, true, __ATOMIC_RELAXED);
	s->redis_retry_at = now + RETRY_NS;
}

/* Under mu: classify the batch and lay out its probes. */
static int batch_probes(struct stream *s, struct sl_outcome_event *evs, size_t n)
{
	struct probe *p = s->probes;
	int *first = s->first;
	size_t i;
	int np = 0;

	for (i = 0; i < n; i++) {
		int j, k;

		classify(s, &evs[i]);
		first[i] = np;
		if (evs[i].success)
			continue;
		k = probes_of(s, &evs[i], &p[np]);
		for (j = np; j < np + k; j++) {
			uint16_t t = evs[i].tenant < TENANT_SLOTS ? evs[i].tenant : SL_MAX_TENANTS;

			p[j].tenant = t;
			p[j].cap = s->c->stream.redis_max_keys;
			snprintf(p[j].tname, sizeof(p[j].tname), "%s",
				 s->tenant_names[t][0] ? s->tenant_names[t] : "(none)");
		}
		np += k;
	}
	first[n] = np;
	return np;
}

/* Under mu: count and judge the batch with the shared counts the round trip brought. */
static void batch_detect(struct stream *s, struct sl_outcome_event *evs, size_t n,
			 uint64_t now)
{
	struct probe *p = s->probes;
	int64_t *shared = s->shared;
	int *first = s->first;
	size_t i;
	int j;

	for (i = 0; i < n; i++) {
		struct sl_outcome_event *ev = &evs[i];

		s->events++;
		dist_count(s, ev);
		tenant_check(s, ev, now);
		if (ev->success)
			continue;
		s->failures++;
		for (j = first[i]; j < first[i + 1]; j++) {
			struct tstat *t = &s->ts[p[j].tenant];

			if (p[j].live >= 0)
				t->redis_keys = (uint64_t)p[j].live;
			t->redis_capped += p[j].capped;
			detect(s, &p[j], ev, shared[j], now);
		}
	}
}

static void *run(void *arg)
{
	struct stream *s = arg;
	static struct sl_outcome_event batch[BATCH];
	struct pollfd p[2] = { { .fd = evq_fd(s->q), .events = POLLIN },
			       { .fd = s->stop_fd, .events = POLLIN } };

	for (;;) {
		size_t n;

		if (poll(p, 2, 500) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		/* Linger a millisecond before draining: events arriving meanwhile ride the same
		 * wake, and the gateway's producer pays an eventfd write (~6 us on a VM) per wake
		 * rather than per event at trickle rates (bench/evq). */
		if (p[0].revents)
			usleep(1000);
		evq_drain_fd(s->q);
		while (!__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE) &&
		       (n = evq_pop_batch(s->q, batch, BATCH)) > 0) {
			uint64_t now = mono_ns();

			int np;

			lock_job(s);
			np = batch_probes(s, batch, n);
			pthread_mutex_unlock(&s->mu);
			/* The round trip, if any, holds no lock: readers never wait on Redis. */
			redis_counts(s, s->probes, np, s->shared, now);
			lock_job(s);
			batch_detect(s, batch, n, now);
			pthread_mutex_unlock(&s->mu);
			if (s->stall_ms)
				usleep(s->stall_ms * 1000);
		}
	}
	return NULL;
}

static void on_actions(evutil_socket_t fd, short what, void *arg)
{
	struct stream *s = arg;
	struct stream_action a[64];
	uint64_t v;
	uint32_t n, i;

	(void)what;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	for (;;) {
		lock_reader(s);
		n = s->n_pending < 64 ? s->n_pending : 64;
		memcpy(a, s->pending, n * sizeof(a[0]));
		memmove(s->pending, s->pending + n, (s->n_pending - n) * sizeof(a[0]));
		s->n_pending -= n;
		pthread_mutex_unlock(&s->mu);
		if (!n)
			break;
		for (i = 0; i < n; i++)
			s->act(s->act_arg, &a[i]);
	}
}

static void copy_names(struct stream *s, const struct sl_config *c)
{
	int i;

	memset(s->tenant_names, 0, sizeof(s->tenant_names));
	memset(s->class_names, 0, sizeof(s->class_names));
	for (i = 0; i < c->n_tenants && i < SL_MAX_TENANTS; i++)
		snprintf(s->tenant_names[i], SL_TENANT_NAME_LEN, "%s", c->tenants[i].name);
	snprintf(s->tenant_names[SL_MAX_TENANTS], SL_TENANT_NAME_LEN, "(none)");
	for (i = 0; i < c->n_classes && i < SL_STATS_ROWS; i++)
		snprintf(s->class_names[i], SL_CLASS_NAME_LEN, "%s", c->classes[i].name);
}

struct stream *stream_start(struct event_base *base, const struct sl_config *c,
			    const struct sl_maps *maps, stream_action_fn act, void *arg,
			    char *err, size_t errlen)
{
	struct stream *s = calloc(1, sizeof(*s));
	int i, ret;

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->base = base;
	s->maps = maps;
	s->act = act;
	s->act_arg = arg;
	s->stop_fd = s->act_fd = -1;
	pthread_mutex_init(&s->mu, NULL);
	s->c = malloc(sizeof(*s->c));
	if (!s->c)
		goto nomem;
	*s->c = *c;
	copy_names(s, c);
	s->window_ns = (uint64_t)c->stream.window_s * 1000000000ull;
	for (i = 0; i < SL_DET_N; i++) {
		s->t[i].cap = pow2_at_least(c->stream.max_keys);
		s->t[i].e = calloc(s->t[i].cap, sizeof(*s->t[i].e));
		if (!s->t[i].e)
			goto nomem;
	}
	pthread_once(&script_once, script_shas);
	s->probes = calloc(BATCH * (SL_DET_N - 1), sizeof(*s->probes));
	s->pstate = calloc(BATCH * (SL_DET_N - 1), sizeof(*s->pstate));
	s->shared = calloc(BATCH * (SL_DET_N - 1), sizeof(*s->shared));
	if (!s->probes || !s->shared || !s->pstate)
		goto nomem;
	s->rec_cap = c->stream.records;
	s->recs = calloc(s->rec_cap, sizeof(*s->recs));
	s->dist_cap = pow2_at_least(c->stream.max_keys * 2);
	s->dist = calloc(s->dist_cap, sizeof(*s->dist));
	if (!s->recs || !s->dist)
		goto nomem;
	ret = evq_new(c->stream.queue, &s->q);
	if (ret) {
		snprintf(err, errlen, "event queue: %s", strerror(-ret));
		goto fail;
	}
	s->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->act_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->stop_fd < 0 || s->act_fd < 0) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		goto fail;
	}
	s->act_ev = event_new(base, s->act_fd, EV_READ | EV_PERSIST, on_actions, s);
	if (!s->act_ev || event_add(s->act_ev, NULL)) {
		snprintf(err, errlen, "cannot watch the action queue");
		goto fail;
	}
	/* Redis as the daemon started: its counters keep theirs until the next start, and so
	 * does the job (issue 16: it switched at a reload, counters and HLLs on different
	 * instances). A pipeline of a batch's counts is more than one check: ten times a
	 * check's timeout, at least 100 ms. */
	snprintf(s->raddr, sizeof(s->raddr), "%s", c->redis.address);
	snprintf(s->rprefix, sizeof(s->rprefix), "%s", c->redis.key_prefix);
	snprintf(s->ruser, sizeof(s->ruser), "%s", c->redis.user);
	snprintf(s->rpass, sizeof(s->rpass), "%s", c->redis.password);
	s->redis_timeout_ms = c->redis.timeout_ms * 10 < 100 ? 100 : c->redis.timeout_ms * 10;
	if (getenv("SLUICED_STREAM_STALL_MS")) {
		s->stall_ms = (unsigned)strtoul(getenv("SLUICED_STREAM_STALL_MS"), NULL, 10);
		log_warn("stream: SLUICED_STREAM_STALL_MS=%u: the job sleeps after every batch "
			 "(fault injection)", s->stall_ms);
	}
	ret = pthread_create(&s->th, NULL, run, s);
	if (ret) {
		snprintf(err, errlen, "cannot start the thread: %s", strerror(ret));
		goto fail;
	}
	s->running = true;
	return s;
nomem:
	snprintf(err, errlen, "out of memory (stream.max_keys %u)", c->stream.max_keys);
fail:
	stream_stop(s);
	return NULL;
}

void stream_apply(struct stream *s, const struct sl_config *c)
{
	uint32_t window = s->c->stream.window_s, max_keys = s->c->stream.max_keys;
	uint32_t queue = s->c->stream.queue, records = s->c->stream.records;
	struct sl_redis_cfg redis = s->c->redis;

	lock_reader(s);
	*s->c = *c;
	/* Sizes stay as they started, and so does Redis (the daemon logs that redis.* changes
	 * take effect at the next start). */
	s->c->redis = redis;
	s->c->stream.window_s = window;
	s->c->stream.max_keys = max_keys;
	s->c->stream.queue = queue;
	s->c->stream.records = records;
	copy_names(s, c);
	pthread_mutex_unlock(&s->mu);
	if (c->stream.window_s != window || c->stream.max_keys != max_keys ||
	    c->stream.queue != queue || c->stream.records != records)
		log_warn("stream.window_s, max_keys, queue and records changes take effect at the "
			 "next start");
}

void stream_stop(struct stream *s)
{
	uint64_t one = 1;
	uint32_t i, j;

	if (!s)
		return;
	if (s->running) {
		/* Events still queued are dropped: on Redis a full queue would take seconds. */
		__atomic_store_n(&s->stopping, true, __ATOMIC_RELEASE);
		if (write(s->stop_fd, &one, sizeof(one)) < 0)
			log_warn("stream: cannot signal the thread: %s", strerror(errno));
		pthread_join(s->th, NULL);
	}
	if (s->act_ev)
		event_free(s->act_ev);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	if (s->act_fd >= 0)
		close(s->act_fd);
	redis_close(s);
	free(s->probes);
	free(s->pstate);
	free(s->shared);
	evq_free(s->q);
	for (i = 0; i < SL_DET_N; i++) {
		for (j = 0; s->t[i].e && j < s->t[i].cap; j++)
			if (s->t[i].e[j].used)
				dent_clear(&s->t[i].e[j]);
		free(s->t[i].e);
	}
	free(s->recs);
	free(s->dist);
	free(s->c);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

struct evq *stream_queue(struct stream *s)
{
	return s ? s->q : NULL;
}

void stream_record(struct stream *s, const char *rule, const char *key, uint16_t tenant,
		   uint8_t class_id, uint8_t mode, uint64_t count, double threshold)
{
	if (!s)
		return;
	lock_reader(s);
	record(s, rule, key, tenant, class_id, mode, mode == SL_MODE_MONITOR ? "shed" : "shed",
	       count, threshold);
	pthread_mutex_unlock(&s->mu);
}

/* ---- control socket ------------------------------------------------------------------ */

static void json_str_out(struct evbuffer *out, const char *v)
{
	evbuffer_add(out, "\"", 1);
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			evbuffer_add_printf(out, "\\%c", *v);
		else if ((unsigned char)*v < 0x20)
			evbuffer_add_printf(out, "\\u%04x", *v);
		else
			evbuffer_add(out, v, 1);
	}
	evbuffer_add(out, "\"", 1);
}

static const char *class_of(const struct stream *s, uint8_t id)
{
	return id < SL_STATS_ROWS && s->class_names[id][0] ? s->class_names[id] : "unknown";
}

static const char *tenant_of(const struct stream *s, uint16_t id)
{
	return id < TENANT_SLOTS && s->tenant_names[id][0] ? s->tenant_names[id] : "?";
}

struct group {
	char rule[40];
	uint16_t tenant;
	uint8_t class_id;
	uint8_t mode;
	uint32_t n;
};

void stream_wouldblock(struct stream *s, struct evbuffer *out, double since, bool json)
{
	struct group *g;
	uint32_t i, ng = 0, j, shown = 0;

	lock_reader(s);
	g = calloc(s->n_recs ? s->n_recs : 1, sizeof(*g));
	if (!g) {
		pthread_mutex_unlock(&s->mu);
		evbuffer_add_printf(out, "error out of memory\n");
		return;
	}
	evbuffer_add_printf(out, json ? "ok {\"records\":[" : "ok\n");
	if (!json)
		evbuffer_add_printf(out, "%-20s %-8s %-22s %-10s %-12s %-40s %8s %9s\n", "time",
				    "mode", "rule", "tenant", "class", "key", "count", "threshold");
	for (i = 0; i < s->n_recs; i++) {
		/* Oldest first. */
		const struct rec *r = &s->recs[(s->rec_head + s->rec_cap - s->n_recs + i) %
					       s->rec_cap];

		if (r->ts < since)
			continue;
		for (j = 0; j < ng; j++)
			if (!strcmp(g[j].rule, r->rule) && g[j].tenant == r->tenant &&
			    g[j].class_id == r->class_id && g[j].mode == r->mode)
				break;
		if (j == ng) {
			snprintf(g[ng].rule, sizeof(g[ng].rule), "%s", r->rule);
			g[ng].tenant = r->tenant;
			g[ng].class_id = r->class_id;
			g[ng].mode = r->mode;
			ng++;
		}
		g[j].n++;
		if (json) {
			evbuffer_add_printf(out, "%s{\"ts\":%.3f,\"mode\":\"%s\",\"enforced\":%s,"
					    "\"rule\":", shown++ ? "," : "", r->ts,
					    r->mode == SL_MODE_MONITOR ? "monitor" : "enforce",
					    r->mode == SL_MODE_MONITOR ? "false" : "true");
			json_str_out(out, r->rule);
			evbuffer_add_printf(out, ",\"key\":");
			json_str_out(out, r->key);
			evbuffer_add_printf(out, ",\"tenant\":");
			json_str_out(out, tenant_of(s, r->tenant));
			evbuffer_add_printf(out, ",\"class\":");
			json_str_out(out, class_of(s, r->class_id));
			evbuffer_add_printf(out, ",\"action\":");
			json_str_out(out, r->action);
			evbuffer_add_printf(out, ",\"count\":%llu,\"threshold\":%g}",
					    (unsigned long long)r->count, r->threshold);
		} else {
			char when[32];
			time_t t = (time_t)r->ts;
			struct tm tm;

			gmtime_r(&t, &tm);
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
			evbuffer_add_printf(out, "%-20s %-8s %-22s %-10s %-12s %-40s %8llu %9g\n",
					    when, r->mode == SL_MODE_MONITOR ? "would" : "did",
					    r->rule, tenant_of(s, r->tenant), class_of(s, r->class_id),
					    r->key, (unsigned long long)r->count, r->threshold);
		}
	}
	if (json) {
		evbuffer_add_printf(out, "],\"summary\":[");
		for (j = 0; j < ng; j++) {
			evbuffer_add_printf(out, "%s{\"rule\":", j ? "," : "");
			json_str_out(out, g[j].rule);
			evbuffer_add_printf(out, ",\"tenant\":");
			json_str_out(out, tenant_of(s, g[j].tenant));
			evbuffer_add_printf(out, ",\"class\":");
			json_str_out(out, class_of(s, g[j].class_id));
			evbuffer_add_printf(out, ",\"mode\":\"%s\",\"records\":%u}",
					    g[j].mode == SL_MODE_MONITOR ? "monitor" : "enforce",
					    g[j].n);
		}
		evbuffer_add_printf(out, "]}\n");
	} else {
		evbuffer_add_printf(out, "\nsummary (records by rule, tenant, source class):\n");
		for (j = 0; j < ng; j++)
			evbuffer_add_printf(out, "  %-22s %-10s %-12s %-8s %6u\n", g[j].rule,
					    tenant_of(s, g[j].tenant), class_of(s, g[j].class_id),
					    g[j].mode == SL_MODE_MONITOR ? "would" : "did", g[j].n);
		if (!ng)
			evbuffer_add_printf(out, "  (none)\n");
	}
	pthread_mutex_unlock(&s->mu);
	free(g);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static uint32_t pct(const uint32_t *v, uint32_t n, double p)
{
	uint32_t i;

	if (!n)
		return 0;
	i = (uint32_t)ceil(p * (double)n) - 1;
	return v[i < n ? i : n - 1];
}

void stream_distribution(struct stream *s, struct evbuffer *out, bool json)
{
	uint32_t *v, i, t, n, tail, first = 1;

	lock_reader(s);
	v = malloc(sizeof(*v) * s->dist_cap);
	if (!v) {
		pthread_mutex_unlock(&s->mu);
		evbuffer_add_printf(out, "error out of memory\n");
		return;
	}
	tail = s->c->stream.tail_per_day;
	if (json)
		evbuffer_add_printf(out, "ok {\"day_unix\":%llu,\"tail_per_day\":%u,"
				    "\"uncounted\":%llu,\"tenants\":[",
				    (unsigned long long)s->dist_day * 86400, tail,
				    (unsigned long long)s->dist_dropped);
	else
		evbuffer_add_printf(out, "ok attempts per account today (UTC), by tenant; accounts "
				    "above %u a day are listed as the non-human tail\n"
				    "%-16s %9s %6s %6s %6s %6s %8s\n", tail, "tenant", "accounts",
				    "p50", "p90", "p99", "p99.9", "max");
	for (t = 0; t < TENANT_SLOTS; t++) {
		uint32_t ntail = 0;

		n = 0;
		for (i = 0; i < s->dist_cap; i++)
			if (s->dist[i].used && s->dist[i].tenant == t)
				v[n++] = s->dist[i].n;
		if (!n)
			continue;
		qsort(v, n, sizeof(*v), cmp_u32);
		if (json) {
			evbuffer_add_printf(out, "%s{\"tenant\":", first ? "" : ",");
			json_str_out(out, tenant_of(s, (uint16_t)t));
			evbuffer_add_printf(out, ",\"accounts\":%u,\"p50\":%u,\"p90\":%u,\"p99\":%u,"
					    "\"p999\":%u,\"max\":%u,\"tail\":[", n, pct(v, n, 0.5),
					    pct(v, n, 0.9), pct(v, n, 0.99), pct(v, n, 0.999),
					    v[n - 1]);
		} else {
			evbuffer_add_printf(out, "%-16s %9u %6u %6u %6u %6u %8u\n",
					    tenant_of(s, (uint16_t)t), n, pct(v, n, 0.5),
					    pct(v, n, 0.9), pct(v, n, 0.99), pct(v, n, 0.999),
					    v[n - 1]);
		}
		first = 0;
		for (i = 0; i < s->dist_cap && ntail < 100; i++) {
			char hx[33];

			if (!s->dist[i].used || s->dist[i].tenant != t || s->dist[i].n <= tail)
				continue;
			hex(s->dist[i].account, 8, hx);
			if (json)
				evbuffer_add_printf(out, "%s{\"account\":\"%s\",\"attempts\":%u}",
						    ntail ? "," : "", hx, s->dist[i].n);
			else
				evbuffer_add_printf(out, "  non-human tail: account %s, %u attempts\n",
						    hx, s->dist[i].n);
			ntail++;
		}
		if (json)
			evbuffer_add_printf(out, "]}");
	}
	if (json)
		evbuffer_add_printf(out, "]}\n");
	else if (first)
		evbuffer_add_printf(out, "(no login attempts today)\n");
	pthread_mutex_unlock(&s->mu);
	free(v);
}

void stream_stats_json(struct stream *s, struct evbuffer *out)
{
	uint64_t pushed, dropped, depth, evicted = 0;
	int i;

	evq_stats(s->q, &pushed, &dropped, &depth);
	lock_reader(s);
	for (i = 0; i < SL_DET_N; i++)
		evicted += s->t[i].evicted;
	evbuffer_add_printf(out, "ok {\"events\":%llu,\"failures\":%llu,\"queued\":%llu,"
			    "\"dropped\":%llu,\"depth\":%llu,\"verdicts\":%llu,"
			    "\"verdict_errors\":%llu,\"actions_dropped\":%llu,\"evicted\":%llu,"
			    "\"records\":%u,\"counting\":\"%s\",\"redis_counts\":%llu,"
			    "\"redis_errors\":%llu,\"redis_write_errors\":%llu}\n",
			    (unsigned long long)s->events, (unsigned long long)s->failures,
			    (unsigned long long)pushed, (unsigned long long)dropped,
			    (unsigned long long)depth, (unsigned long long)s->verdicts,
			    (unsigned long long)s->verdict_errors,
			    (unsigned long long)s->actions_dropped, (unsigned long long)evicted,
			    s->n_recs, !s->c->redis.address[0] ? "in-process" :
			    __atomic_load_n(&s->redis_down, __ATOMIC_RELAXED) ?
			    "in-process (Redis down)" : "redis",
			    (unsigned long long)__atomic_load_n(&s->redis_counts, __ATOMIC_RELAXED),
			    (unsigned long long)__atomic_load_n(&s->redis_errors, __ATOMIC_RELAXED),
			    (unsigned long long)__atomic_load_n(&s->write_errors, __ATOMIC_RELAXED));
	pthread_mutex_unlock(&s->mu);
}

void stream_metrics(struct stream *s, struct evbuffer *out)
{
	uint64_t pushed, dropped, depth;

	evq_stats(s->q, &pushed, &dropped, &depth);
	lock_reader(s);
	evbuffer_add_printf(out,
			    "# HELP sluice_stream_events_total Login outcome events the stream job "
			    "processed.\n# TYPE sluice_stream_events_total counter\n"
			    "sluice_stream_events_total %llu\n"
			    "# HELP sluice_stream_events_dropped_total Events dropped because the "
			    "queue was full (the job fell behind).\n"
			    "# TYPE sluice_stream_events_dropped_total counter\n"
			    "sluice_stream_events_dropped_total %llu\n"
			    "# HELP sluice_stream_queue_depth Events waiting for the job.\n"
			    "# TYPE sluice_stream_queue_depth gauge\nsluice_stream_queue_depth %llu\n"
			    "# HELP sluice_stream_verdicts_total XDP verdicts the job wrote.\n"
			    "# TYPE sluice_stream_verdicts_total counter\n"
			    "sluice_stream_verdicts_total %llu\n"
			    "# HELP sluice_stream_records_total Detector and counter firings: "
			    "enforce (done) or monitor (would-be-blocks).\n"
			    "# TYPE sluice_stream_records_total counter\n"
			    "sluice_stream_records_total{enforcement=\"enforce\"} %llu\n"
			    "sluice_stream_records_total{enforcement=\"monitor\"} %llu\n",
			    (unsigned long long)s->events, (unsigned long long)dropped,
			    (unsigned long long)depth, (unsigned long long)s->verdicts,
			    (unsigned long long)s->recorded[SL_MODE_ENFORCE],
			    (unsigned long long)s->recorded[SL_MODE_MONITOR]);
	{
		/* Where the windows are counted: 1 for the mode in force. */
		bool redis = s->c->redis.address[0];
		bool down = redis && __atomic_load_n(&s->redis_down, __ATOMIC_RELAXED);

		evbuffer_add_printf(out,
				    "# HELP sluice_stream_counting Where the stream job counts now (1 "
				    "for the mode in force): redis (shared by the nodes), in_process, "
				    "or redis_down (in process until Redis answers again).\n"
				    "# TYPE sluice_stream_counting gauge\n"
				    "sluice_stream_counting{mode=\"redis\"} %d\n"
				    "sluice_stream_counting{mode=\"in_process\"} %d\n"
				    "sluice_stream_counting{mode=\"redis_down\"} %d\n",
				    redis && !down, !redis, down);
		evbuffer_add_printf(out,
				    "# HELP sluice_stream_redis_errors_total Redis pipelines of the "
				    "stream job that failed.\n"
				    "# TYPE sluice_stream_redis_errors_total counter\n"
				    "sluice_stream_redis_errors_total %llu\n",
				    (unsigned long long)__atomic_load_n(&s->redis_errors,
									 __ATOMIC_RELAXED));
		evbuffer_add_printf(out,
				    "# HELP sluice_stream_redis_write_errors_total HyperLogLog writes "
				    "Redis refused (an error reply: OOM under maxmemory with "
				    "noeviction, ...); their members count in process only.\n"
				    "# TYPE sluice_stream_redis_write_errors_total counter\n"
				    "sluice_stream_redis_write_errors_total %llu\n",
				    (unsigned long long)__atomic_load_n(&s->write_errors,
									 __ATOMIC_RELAXED));
		if (redis) {
			int i;

			evbuffer_add_printf(out,
					    "# HELP sluice_stream_redis_keys The HyperLogLog keys the "
					    "tenant's guesses made in Redis within the window, as this "
					    "node last asked for room, against stream.redis_max_keys.\n"
					    "# TYPE sluice_stream_redis_keys gauge\n");
			for (i = 0; i < TENANT_SLOTS; i++)
				if (s->tenant_names[i][0])
					evbuffer_add_printf(out,
							    "sluice_stream_redis_keys{tenant=\"%s\"} "
							    "%llu\n", s->tenant_names[i],
							    (unsigned long long)s->ts[i].redis_keys);
			evbuffer_add_printf(out,
					    "# HELP sluice_stream_redis_keys_max stream.redis_max_keys: "
					    "the most live HyperLogLog keys per tenant (0: no cap).\n"
					    "# TYPE sluice_stream_redis_keys_max gauge\n"
					    "sluice_stream_redis_keys_max %u\n"
					    "# HELP sluice_stream_redis_keys_capped_total Guesses whose "
					    "HyperLogLog key would have been new while the tenant held "
					    "stream.redis_max_keys; they counted in process only.\n"
					    "# TYPE sluice_stream_redis_keys_capped_total counter\n",
					    s->c->stream.redis_max_keys);
			for (i = 0; i < TENANT_SLOTS; i++)
				if (s->tenant_names[i][0])
					evbuffer_add_printf(out,
							    "sluice_stream_redis_keys_capped_total{"
							    "tenant=\"%s\"} %llu\n", s->tenant_names[i],
							    (unsigned long long)s->ts[i].redis_capped);
		}
	}
	pthread_mutex_unlock(&s->mu);
}
