// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The counter store (see store.h): in-process GCRA tables, and a Redis client on the
 * caller's libevent loop with per-call timeouts, a circuit breaker and per-counter fallbacks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <sodium.h>

#include "log.h"
#include "store.h"
#include "sluice/gcra.h"

#define KEY_MAX 192
#define MAX_SCRIPTS 4
#define WAYS 8              /* slots per bucket of an in-process table */
#define FIRST_SLOTS 64      /* a table's first size; it doubles up to its bound */
#define UNCAPPED_KEYS 65536 /* the bound of a counter with max_keys 0, by default */
#define WARN_EVERY_NS (60ull * 1000000000ull)
#define JOURNAL_MAX 65536   /* keys with what Redis has not had yet (charges, clears) */
#define JOURNAL_BUCKETS 4096
#define FLUSH_PER_TICK 256  /* journal entries sent to Redis per tick, at most */

/*
 * GCRA in one round trip, atomically: one value per key (its TAT in microseconds of the
 * server's clock), a TTL that lets a full bucket disappear, and an optional cap on a tenant's
 * live keys kept in a sorted set scored by expiry. ARGV: T, tau, cost, cap (as before), then
 * what this node knows that Redis may not (issue 16):
 *   [5] known: the debt (us) this node last saw for the key; used only when Redis holds no
 *       value for it (a restart, FLUSHALL or an eviction lost it; a key that expired has
 *       no debt left, and a cleared or refunded key keeps its value, spent or not, until its
 *       old TTL: so a missing value with a debt known is a loss, never a clear);
 *   [6] pend: the debt (us) charged here while Redis could not be asked, added once;
 *   [7] clear: "1" when a success cleared the key meanwhile (what came before goes);
 *   [8] prior: "1" when [5] was seen before the server restarted (its run_id changed: a
 *       restore from an old snapshot, a failover to a replica that lags): a value Redis
 *       holds that is less spent than [5] is then the snapshot's, older than what this
 *       node saw, and [5] is its floor (this key's first check after the restart only).
 * Returns {allowed, retry_ms, capped, debt_us, live, restored}: debt_us is the key's debt
 * after the call; live the tenant's live keys of this counter (ZCARD of the set, pruned of
 * expired entries whenever a new key asks; -1 without a cap), for sluice_store_live_keys;
 * restored 1 when Redis had lost the key and [5] gave its debt back (an eviction under
 * maxmemory, a flush, a restart: never silent, sluice_store_keys_restored_total).
 */
static const char gcra_lua[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local T, tau, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])\n"
	"local cap = tonumber(ARGV[4])\n"
	"local known, pend = tonumber(ARGV[5] or '0'), tonumber(ARGV[6] or '0')\n"
	"local clear, prior = ARGV[7] == '1', ARGV[8] == '1'\n"
	"local raw = redis.call('GET', KEYS[1])\n"
	"local cur = raw and tonumber(raw)\n"
	"local dirty, tat, restored = false, now, 0\n"
	"if clear then\n"
	"  dirty = true\n"
	"  if pend > 0 then tat = now + pend end\n"
	"elseif cur then\n"
	"  tat = cur\n"
	"  if prior and known > 0 and cur < now + known then\n"
	"    tat = now + known; dirty = true; restored = 1\n"
	"  end\n"
	"  if pend > 0 then tat = math.max(tat, now) + pend; dirty = true end\n"
	"elseif known > 0 then\n"
	"  tat = now + math.max(known, pend); dirty = true; restored = 1\n"
	"elseif pend > 0 then\n"
	"  tat = now + pend; dirty = true\n"
	"end\n"
	"if tat > now + tau then tat = now + tau end\n"
	"local function put(v)\n"
	"  local ttl = math.ceil((v - now) / 1000) + 1\n"
	"  if cur and cur > v then ttl = math.max(ttl, math.ceil((cur - now) / 1000) + 1) end\n"
	"  if ttl < 1 then ttl = 1 end\n"
	"  redis.call('SET', KEYS[1], string.format('%.0f', v), 'PX', ttl)\n"
	"  if cap > 0 then\n"
	"    redis.call('ZADD', KEYS[2], now + ttl * 1000, KEYS[1])\n"
	"    redis.call('PEXPIRE', KEYS[2], ttl + 60000)\n"
	"  end\n"
	"end\n"
	"local function live()\n"
	"  if cap > 0 then return redis.call('ZCARD', KEYS[2]) end\n"
	"  return -1\n"
	"end\n"
	"if cost < 0 then\n"
	"  if cur or dirty then put(math.max(tat + cost * T, now)) end\n"
	"  return {1, 0, 0, math.floor(math.max(tat + cost * T - now, 0)), live(), restored}\n"
	"end\n"
	"local nxt = math.max(tat, now) + math.max(cost, 1) * T\n"
	"if nxt - now > tau then\n"
	"  if dirty then put(tat) end\n"
	"  return {0, math.ceil((nxt - now - tau) / 1000), 0, math.floor(tat - now),\n"
	"          live(), restored}\n"
	"end\n"
	"if cost == 0 then\n"
	"  if dirty then put(tat) end\n"
	"  return {1, 0, 0, math.floor(tat - now), live(), restored}\n"
	"end\n"
	"if cap > 0 and not cur then\n"
	"  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)\n"
	"  local n = redis.call('ZCARD', KEYS[2])\n"
	"  if n >= cap then\n"
	"    return {0, 1000, 1, math.floor(tat - now), n, restored}\n"
	"  end\n"
	"end\n"
	"put(nxt)\n"
	"return {1, 0, 0, math.floor(nxt - now), live(), restored}\n";

struct slot {
	uint64_t h;   /* the key's keyed hash */
	uint64_t tat; /* ns, CLOCK_MONOTONIC; 0: empty; <= now: refilled (free, still the key's) */
};

/* One counter's keys for one tenant (see "the in-process tables" below). */
struct table {
	uint8_t kind;        /* TK_*: exact, or which fallback */
	bool nogrow;         /* an allocation failed: evict from here on */
	uint32_t nb;         /* buckets of WAYS slots */
	uint64_t idh;        /* hash of (kind, tenant, name), for the directory */
	uint64_t cap;        /* the most keys it holds: max_keys */
	uint64_t used;       /* slots holding a key */
	uint64_t evictions;
	uint64_t warned;     /* ns of the last "full" warning */
	struct slot *slot;   /* nb * WAYS */
	uint64_t *floor;     /* per bucket: the largest TAT evicted from it */
	/* While it grows: the slots it grows from, whose buckets below mig have moved. */
	struct slot *oslot;
	uint64_t *ofloor;
	uint32_t onb, mig;
	char *tenant, *name;
};

struct script {
	char *lua;
	char sha[48];
};

/*
 * The journal: a key that holds what Redis has not had yet (see "outages" below). Its
 * strings, for the call that hands them over, and the counter's limit as last charged.
 */
struct jent {
	struct jent *next;
	uint64_t hash;
	uint64_t pend;      /* ns TAT, this node's clock, shared scale: charged here meanwhile */
	bool clear;         /* a success cleared the key meanwhile */
	bool inflight;      /* a call carries what it held; the reply says whether it landed */
	uint32_t unsettled; /* calls that timed out and were charged here: Redis may take them */
	double rate, burst;
	uint32_t max_keys;
	const char *tenant, *name, *key; /* into str */
	char str[];
};

/*
 * One Redis server the store talks to, with its own connection, breaker and scripts: the one
 * server (or the master the sentinels name) in node[0], or each master of a Redis Cluster.
 */
#define MAX_NODES 16        /* masters of a Redis Cluster */
#define NSLOTS 16384
#define NO_NODE 0xff

struct rnode {
	struct sl_store *s;
	char name[80];        /* in the log, the metrics and status: "IP:PORT" (a cluster's) */
	char host[200];       /* where it is, numeric (a cluster's master) */
	int port;
	bool used;            /* a cluster's: a master of the map (or named by a MOVED) */
	redisAsyncContext *ac;
	bool connected, connecting; /* connected: the handshake answered */
	bool dropping;        /* a disconnect asked for is under way */
	uint64_t connect_started; /* ns */
	uint64_t last_reply;  /* ns: the connection last answered anything */
	uint8_t breaker;
	uint32_t failures;
	uint64_t open_until;  /* ns */
	bool loaded[MAX_SCRIPTS]; /* SCRIPT LOAD answered on this connection */
	uint32_t slots;       /* a cluster's: slots the map gives it */
	uint64_t calls, errors, timeouts;
	char run_id[48];      /* the server's INFO run_id at the last handshake */
};

/* A Redis Cluster's slot map: each slot's master, an index into at[]. */
struct slotmap {
	int n;
	struct { char host[64]; int port; } at[MAX_NODES];
	uint8_t slot[NSLOTS];
	uint32_t covered;     /* slots with a master */
};

struct sl_store {
	struct event_base *base;
	struct sl_store_opts o;
	char redis_addr[256];
	char prefix[64];
	struct sl_redis_target target; /* redis_addr, parsed */
	char user[64], password[256];  /* AUTH; the password is never logged */
	char located[256];    /* where node[0]'s connection goes: "IP:PORT" */
	struct locate_job *job; /* a lookup (or a cluster's slot map) out on its thread */
	struct event *job_ev;
	struct rnode node[MAX_NODES]; /* node[0] alone unless target.cluster */
	uint8_t slot[NSLOTS]; /* a cluster's: each slot's node, NO_NODE when none */
	bool map_known;       /* a cluster's slot map has been read */
	bool map_stale;       /* a MOVED, a lost master: read it again soon */
	uint64_t map_at, map_retry_at; /* ns: read last; not to be asked before */
	char conn_msg[512];   /* the last connection problem logged, and when */
	uint64_t conn_logged;
	uint32_t conn_repeats;
	struct event *tick;
	struct script scripts[MAX_SCRIPTS];
	int n_scripts;
	int gcra;             /* index of the GCRA script */
	struct table **dir;   /* the in-process tables, open addressing by idh */
	size_t dir_cap, dir_n; /* dir_cap: a power of two */
	uint8_t hkey[crypto_shorthash_KEYBYTES]; /* keys the slots' hashes, random */
	struct sl_store_stats st;
	struct jent *jb[JOURNAL_BUCKETS];
	uint32_t jcur;        /* the bucket the next flush starts at */
	struct sl_store_live live[SL_STORE_LIVE_MAX]; /* capped counters seen, by tenant */
	int n_live;
	uint64_t epoch;       /* servers' restarts seen (a run_id that changed) */
	bool closing;
};

struct pending {
	struct sl_store *s;
	struct rnode *n;      /* where it went (last) */
	struct event *timer;
	uint8_t hops;         /* MOVED, ASK and TRYAGAIN followed (MAX_HOPS at most) */
	bool nocap;           /* a GCRA call on a slot being migrated: sent without the
			       * live-key set (send_to) */
	int script;
	int nkeys, nargs;     /* its keys, then its arguments, copied (a redirect sends them
			       * again) */
	const char *av[16];
	size_t al[16];
	char *abuf;
	bool done;
	bool raw;
	bool probe;           /* the breaker's own PING: no user waits, not counted */
	sl_store_cb cb;
	sl_store_raw_cb rcb;
	void *arg;
	struct sl_limit l;
	char tenant[64];
	char key[KEY_MAX];
	double cost;
	bool sync;            /* hands the journal's entry over; nobody waits for it */
	struct jent *j;       /* the journal's entry this call carries (inflight) */
	uint64_t pend_sent;   /* ns of debt it carries */
	bool clear_sent;
	struct jent *fell;    /* timed out and charged here under this entry (unsettled) */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *sl_breaker_name(uint8_t b)
{
	return b == SL_BREAKER_OPEN ? "open" : b == SL_BREAKER_HALF_OPEN ? "half_open" : "closed";
}

void sl_store_hash(const uint8_t *key, const char *const *parts, int n, char *out)
{
	crypto_generichash_state st;
	uint8_t h[16];
	int i;

	crypto_generichash_init(&st, key, 32, sizeof(h));
	for (i = 0; i < n; i++)
		crypto_generichash_update(&st, (const uint8_t *)parts[i], strlen(parts[i]) + 1);
	crypto_generichash_final(&st, h, sizeof(h));
	sodium_bin2hex(out, 33, h, sizeof(h));
}

/* ---- the in-process tables ----------------------------------------------------------- */

/*
 * Why the tables are built this way (issue 14): one table for every counter and tenant once
 * forgot spent budgets. A flood of fresh keys on any counter (80,000 password resets from
 * 4,000 addresses) evicted the least-spent entry of the shared table, and an evicted key
 * came back full: a spent (alice, address) pair was wiped. The rules now:
 *
 *   - One table per (counter, tenant, and which answer: exact, fail-open fallback,
 *     fail-closed fallback), holding at most the counter's max_keys keys (the store's
 *     local_max_keys, 65,536 by default, for a counter without one). A flood on
 *     /password-reset fills the reset tables and no other.
 *   - A key is a keyed SipHash-2-4 (a random key per process, so a flood cannot aim at a
 *     bucket) naming two buckets of 8 slots; the less loaded one takes a new key, and when
 *     both are full an entry of theirs may move to its own other bucket. A check reads 16
 *     slots (32 while the table grows; at most 144 to make room), so it is O(1), and a
 *     table fills to about 90 % of its slots before anything is evicted.
 *   - A refilled entry (TAT <= now) holds no information: any new key may take its slot.
 *   - Below its bound a table grows instead of evicting: it doubles (up to the bound), and
 *     the old slots move two buckets per check, so no check pays for the whole move.
 *   - At its bound, a new key whose two buckets hold only live entries replaces the one
 *     with the least debt (TAT - now) and starts where that one was: at least as spent as
 *     the least-spent resident, never full. The evicted TAT becomes its bucket's floor (the
 *     largest TAT evicted from it), and a key a table does not hold starts at max(now, the
 *     floors of its two buckets). A key only ever comes back to its own buckets, so an
 *     evicted key returns at least as spent as it left: no sequence of fresh keys turns a
 *     spent key full, and a key admitted fresh gets no more than any unseen key would.
 *     Floors decay like any TAT: one burst's refill after the last eviction they are gone.
 *   - So when a table is too small for its live keys, new keys pay (they start spent,
 *     counted as table_full) rather than spent keys being forgotten. That is the safe
 *     direction for every counter here, fail open or closed alike: the keys count attempts,
 *     and a full budget bought with a flood could be bought again and again. Refusing every
 *     new key instead (what Redis does at max_keys) would let a flood lock out everyone new
 *     even while the residents are barely spent; inheriting a debt costs a new key only what
 *     the least-spent resident has already used.
 *   - A refund reaches only a key the table holds (what a forgotten key was charged sits in
 *     a shared floor, and is outwaited); a clear marks its key refilled but keeps the slot,
 *     so the key's own record, not a floor, answers for it until the slot is reused.
 */

enum { TK_EXACT = 0, TK_LOCAL = 1, TK_STATIC = 2, TK_MIRROR = 3 };

static const char *const kind_name[] = { "", " (fail-open fallback)",
					 " (fail-closed fallback)", " (last values from Redis)" };

static uint64_t id_hash(uint8_t kind, const char *tenant, const char *name)
{
	uint64_t h = (1469598103934665603ull ^ kind) * 1099511628211ull;
	const char *p;

	for (p = tenant; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	h *= 1099511628211ull; /* the NUL between the two */
	for (p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	return h;
}

/* The most keys a table of @l may hold. */
static uint64_t bound_of(const struct sl_store *s, const struct sl_limit *l)
{
	if (l->max_keys)
		return l->max_keys;
	return s->o.local_max_keys ? s->o.local_max_keys : UNCAPPED_KEYS;
}

static void table_free(struct table *t)
{
	if (!t)
		return;
	free(t->slot);
	free(t->floor);
	free(t->oslot);
	free(t->ofloor);
	free(t->tenant);
	free(t->name);
	free(t);
}

static struct table *table_new(uint8_t kind, const char *tenant, const char *name,
			       uint64_t cap, uint64_t idh)
{
	struct table *t = calloc(1, sizeof(*t));
	uint64_t first = cap < FIRST_SLOTS ? cap : FIRST_SLOTS;

	if (!t)
		return NULL;
	t->kind = kind;
	t->idh = idh;
	t->cap = cap;
	t->nb = (uint32_t)((first + WAYS - 1) / WAYS);
	t->tenant = strdup(tenant);
	t->name = strdup(name);
	t->slot = calloc((size_t)t->nb * WAYS, sizeof(*t->slot));
	t->floor = calloc(t->nb, sizeof(*t->floor));
	if (!t->tenant || !t->name || !t->slot || !t->floor) {
		table_free(t);
		return NULL;
	}
	return t;
}

/*
 * The table of @l for @tenant, made on first use when @create (NULL: out of memory, or none
 * yet). A larger max_keys (a reload) lets the table grow to it; a smaller one applies to
 * tables made after it: a table never shrinks.
 */
static struct table *table_of(struct sl_store *s, uint8_t kind, const char *tenant,
			      const struct sl_limit *l, bool create)
{
	uint64_t idh = id_hash(kind, tenant, l->name), cap;
	size_t mask = s->dir_cap - 1, i;
	struct table *t;

	for (i = idh & mask; s->dir[i]; i = (i + 1) & mask) {
		t = s->dir[i];
		if (t->idh == idh && t->kind == kind && !strcmp(t->tenant, tenant) &&
		    !strcmp(t->name, l->name)) {
			cap = bound_of(s, l);
			if (cap > t->cap) {
				t->cap = cap;
				t->nogrow = false;
			}
			return t;
		}
	}
	if (!create)
		return NULL;
	if ((s->dir_n + 1) * 2 > s->dir_cap) {
		size_t ncap = s->dir_cap * 2, j, k;
		struct table **nd = calloc(ncap, sizeof(*nd));

		if (!nd)
			return NULL;
		for (j = 0; j < s->dir_cap; j++) {
			if (!s->dir[j])
				continue;
			for (k = s->dir[j]->idh & (ncap - 1); nd[k]; k = (k + 1) & (ncap - 1))
				;
			nd[k] = s->dir[j];
		}
		free(s->dir);
		s->dir = nd;
		s->dir_cap = ncap;
		mask = ncap - 1;
		for (i = idh & mask; s->dir[i]; i = (i + 1) & mask)
			;
	}
	t = table_new(kind, tenant, l->name, bound_of(s, l), idh);
	if (!t)
		return NULL;
	s->dir[i] = t;
	s->dir_n++;
	return t;
}

static uint64_t key_hash(const struct sl_store *s, const char *key)
{
	uint8_t out[crypto_shorthash_BYTES];
	uint64_t h;

	crypto_shorthash(out, (const uint8_t *)key, strlen(key), s->hkey);
	memcpy(&h, out, sizeof(h));
	return h;
}

/* A key's two buckets among @nb: the two halves of its hash, each mapped onto the range. */
static void buckets_of(uint32_t nb, uint64_t h, uint32_t *b1, uint32_t *b2)
{
	*b1 = (uint32_t)(((h & 0xffffffffu) * nb) >> 32);
	*b2 = (uint32_t)(((h >> 32) * nb) >> 32);
}

/* Where a key may be: two buckets of the table, and while it grows, those of its old slots
 * that have not moved yet. */
struct where {
	uint32_t b1, b2, o1, o2;
	bool old1, old2;
};

static struct slot *bucket_find(struct slot *bucket, uint64_t h)
{
	unsigned i;

	for (i = 0; i < WAYS; i++)
		if (bucket[i].tat && bucket[i].h == h)
			return &bucket[i];
	return NULL;
}

static struct slot *slot_find(struct table *t, uint64_t h, struct where *w)
{
	struct slot *e = NULL;

	buckets_of(t->nb, h, &w->b1, &w->b2);
	w->old1 = w->old2 = false;
	if (t->oslot) {
		buckets_of(t->onb, h, &w->o1, &w->o2);
		w->old1 = w->o1 >= t->mig;
		w->old2 = w->o2 >= t->mig && w->o2 != w->o1;
	}
	if (w->old1)
		e = bucket_find(&t->oslot[(size_t)w->o1 * WAYS], h);
	if (!e && w->old2)
		e = bucket_find(&t->oslot[(size_t)w->o2 * WAYS], h);
	if (!e)
		e = bucket_find(&t->slot[(size_t)w->b1 * WAYS], h);
	if (!e && w->b2 != w->b1)
		e = bucket_find(&t->slot[(size_t)w->b2 * WAYS], h);
	return e;
}

/* The TAT a key the table does not hold starts from (before now is taken into account):
 * the floors of its buckets, and of its old buckets that have not moved yet. */
static uint64_t floor_of(const struct table *t, const struct where *w)
{
	uint64_t f = t->floor[w->b1];

	if (t->floor[w->b2] > f)
		f = t->floor[w->b2];
	if (w->old1 && t->ofloor[w->o1] > f)
		f = t->ofloor[w->o1];
	if (w->old2 && t->ofloor[w->o2] > f)
		f = t->ofloor[w->o2];
	return f;
}

struct scan {
	struct slot *free;  /* refilled, or empty while the table is below its bound */
	struct slot *least; /* the live entry with the least debt */
	unsigned live;
};

static void bucket_scan(const struct table *t, uint32_t b, uint64_t now, struct scan *sc)
{
	struct slot *e = &t->slot[(size_t)b * WAYS];
	unsigned i;

	memset(sc, 0, sizeof(*sc));
	for (i = 0; i < WAYS; i++, e++) {
		if (e->tat > now) {
			sc->live++;
			if (!sc->least || e->tat < sc->least->tat)
				sc->least = e;
		} else if (e->tat) {
			if (!sc->free || !sc->free->tat)
				sc->free = e; /* a refilled slot first: it adds no key */
		} else if (!sc->free && t->used < t->cap) {
			sc->free = e;
		}
	}
}

/* The first free slot of bucket @b, if any. */
static struct slot *bucket_free(const struct table *t, uint32_t b, uint64_t now)
{
	struct slot *e = &t->slot[(size_t)b * WAYS];
	unsigned i;

	for (i = 0; i < WAYS; i++, e++)
		if (e->tat ? e->tat <= now : t->used < t->cap)
			return e;
	return NULL;
}

/* A key's two buckets: the free slot of the less loaded, the least-spent live entry. */
static void pair_scan(const struct table *t, uint32_t b1, uint32_t b2, uint64_t now,
		      struct scan *out)
{
	struct scan s2;

	bucket_scan(t, b1, now, out);
	if (b2 == b1)
		return;
	bucket_scan(t, b2, now, &s2);
	if (s2.free && (!out->free || s2.live < out->live))
		out->free = s2.free;
	if (s2.least && (!out->least || s2.least->tat < out->least->tat))
		out->least = s2.least;
	out->live += s2.live;
}

/* Forget the live entry @e of the table (not of the old slots), keeping its TAT as its
 * bucket's floor. */
static void evict(struct sl_store *s, struct table *t, struct slot *e, uint64_t now)
{
	uint32_t b = (uint32_t)((size_t)(e - t->slot) / WAYS);

	if (e->tat > t->floor[b])
		t->floor[b] = e->tat;
	s->st.local_evictions++;
	t->evictions++;
	if (!t->warned || now - t->warned >= WARN_EVERY_NS) {
		t->warned = now;
		log_warn("counter %s of tenant %s%s: its in-process table is full (max_keys %llu): "
			 "the least-spent keys are evicted and new keys start as spent as what "
			 "they replace (%llu evictions so far)", t->name, t->tenant,
			 kind_name[t->kind], (unsigned long long)t->cap,
			 (unsigned long long)t->evictions);
	}
}

/* Slot bookkeeping: @used and local_keys count the slots that hold a key. */
static void slot_put(struct sl_store *s, struct table *t, struct slot *e, uint64_t h,
		     uint64_t tat)
{
	if (!e->tat) {
		t->used++;
		s->st.local_keys++;
	}
	e->h = h;
	e->tat = tat;
}

static void slot_clear(struct sl_store *s, struct table *t, struct slot *e)
{
	if (e->tat) {
		t->used--;
		s->st.local_keys--;
	}
	e->h = 0;
	e->tat = 0;
}

/*
 * Both of a key's buckets are full: move one of their live entries to its own other
 * bucket, if that one has a free slot, and return the slot it left (NULL: none can move).
 * A move changes no key's state (an entry is found in either of its buckets), and lets a
 * table fill to over 90 % of its slots before anything is evicted.
 */
static struct slot *make_room(struct sl_store *s, struct table *t, uint32_t b1, uint32_t b2,
			      uint64_t now)
{
	uint32_t bs[2] = { b1, b2 };
	unsigned k, i;

	for (k = 0; k < (b1 == b2 ? 1u : 2u); k++) {
		struct slot *e = &t->slot[(size_t)bs[k] * WAYS];

		for (i = 0; i < WAYS; i++, e++) {
			uint32_t r1, r2, other;
			struct slot *to;

			if (e->tat <= now)
				continue; /* an empty slot (the table is at its bound) */
			buckets_of(t->nb, e->h, &r1, &r2);
			other = r1 == bs[k] ? r2 : r1;
			if (other == b1 || other == b2)
				continue;
			to = bucket_free(t, other, now);
			if (!to)
				continue;
			slot_put(s, t, to, e->h, e->tat);
			slot_clear(s, t, e);
			return e;
		}
	}
	return NULL;
}

/* Move old bucket @b into the table: its floor onto every new bucket a key of it can map
 * to (a key's bucket is a fixed fraction of the range: old bucket b of M becomes buckets
 * b*N/M up to (b+1)*N/M of N), its live entries by the rule a new key follows (both buckets
 * full and no room to be made: the lesser of the two goes to a floor), its refilled entries
 * nowhere. */
static void migrate_bucket(struct sl_store *s, struct table *t, uint32_t b, uint64_t now)
{
	struct slot *e = &t->oslot[(size_t)b * WAYS];
	unsigned i;

	if (t->ofloor[b] > now) {
		uint64_t lo = (uint64_t)b * t->nb / t->onb, n;
		uint64_t hi = ((uint64_t)(b + 1) * t->nb + t->onb - 1) / t->onb - 1;

		for (n = lo; n <= hi; n++)
			if (t->ofloor[b] > t->floor[n])
				t->floor[n] = t->ofloor[b];
	}
	for (i = 0; i < WAYS; i++, e++) {
		struct slot moving = *e;
		uint32_t b1, b2;
		struct scan sc;

		slot_clear(s, t, e); /* it leaves the old slots, for the new or for good */
		if (moving.tat <= now)
			continue;
		buckets_of(t->nb, moving.h, &b1, &b2);
		pair_scan(t, b1, b2, now, &sc);
		if (!sc.free)
			sc.free = make_room(s, t, b1, b2, now);
		if (!sc.free && sc.least && sc.least->tat < moving.tat) {
			evict(s, t, sc.least, now);
			sc.free = sc.least;
		}
		if (sc.free) {
			slot_put(s, t, sc.free, moving.h, moving.tat);
			continue;
		}
		/* The entry moving is the least spent of them: it is the one forgotten. */
		if (moving.tat > t->floor[b1])
			t->floor[b1] = moving.tat;
		s->st.local_evictions++;
		t->evictions++;
	}
}

/*
 * Move the next two old buckets, or all that are left when the table could otherwise reach
 * its bound before they have moved: a key always finds a free slot among empty buckets.
 * (Each check adds at most one key and moves two buckets, so that happens only where the
 * old slots had 16 buckets or fewer; see table_grow.) The old slots are freed once all moved.
 */
static void table_step(struct sl_store *s, struct table *t, uint64_t now)
{
	uint32_t n = 2;

	if (!t->oslot)
		return;
	if (t->cap - t->used <= (uint64_t)(t->onb - t->mig) / 2 + 1)
		n = t->onb - t->mig;
	while (t->oslot && n--) {
		migrate_bucket(s, t, t->mig++, now);
		if (t->mig == t->onb) {
			free(t->oslot);
			free(t->ofloor);
			t->oslot = NULL;
			t->ofloor = NULL;
		}
	}
}

/* Start doubling @t, up to its bound (straight to it when a last step would add less
 * than an eighth): the present slots become the old ones. */
static int table_grow(struct table *t)
{
	uint64_t want = (t->cap + WAYS - 1) / WAYS, nb64 = (uint64_t)t->nb * 2;
	uint32_t nb = (uint32_t)(nb64 >= want || (want - nb64) * 8 < nb64 ? want : nb64);
	struct slot *slot = calloc((size_t)nb * WAYS, sizeof(*slot));
	uint64_t *fl = calloc(nb, sizeof(*fl));

	if (!slot || !fl) {
		free(slot);
		free(fl);
		t->nogrow = true;
		log_warn("counter %s of tenant %s%s: cannot grow its in-process table past %llu "
			 "slots (out of memory): it evicts from here on", t->name, t->tenant,
			 kind_name[t->kind], (unsigned long long)t->nb * WAYS);
		return -1;
	}
	t->oslot = t->slot;
	t->ofloor = t->floor;
	t->onb = t->nb;
	t->mig = 0;
	t->slot = slot;
	t->floor = fl;
	t->nb = nb;
	return 0;
}

/*
 * Charge @key's bucket in its counter's table (see the why-comment above). A key the table
 * holds is charged as it stands; a new one starts at max(now, its floors), or, when the
 * table is at its bound with both its buckets live, where the least-spent of them is.
 */
static int local_charge(struct sl_store *s, uint8_t kind, const char *tenant,
			const struct sl_limit *l, const char *key, double rate, double burst,
			double cost, uint64_t seed, uint32_t *retry_ms)
{
	uint64_t T = sl_gcra_emission(rate), tau = sl_gcra_tolerance(burst, T), now = now_ns();
	struct table *t = table_of(s, kind, tenant, l, cost > 0);
	uint64_t h, start, units, over;
	struct slot *e, *victim = NULL;
	struct scan sc = { 0 };
	struct where w;
	__u64 next = 0;
	int ok;

	*retry_ms = 0;
	if (!t && cost <= 0)
		return 1; /* a peek at, or a refund to, a counter nobody charged */
	if (!t) {
		/* Out of memory for a table: nothing can be counted, so nothing passes. */
		s->st.errors++;
		*retry_ms = 1000;
		return 0;
	}
	table_step(s, t, now);
	h = key_hash(s, key);
	e = slot_find(t, h, &w);
	if (e && cost < 0) {
		uint64_t back = sl_mul_sat((uint64_t)ceil(-cost), T);

		e->tat = e->tat > sl_add_sat(now, back) ? e->tat - back : now;
		return 1;
	}
	if (!e && cost < 0)
		return 1; /* what it took has refilled, or sits in a floor: nothing to give back */
	units = cost > 0 ? (uint64_t)ceil(cost) : 1; /* a peek asks about one unit */
	if (e) {
		start = e->tat;
	} else {
		bool can_grow;

		for (;;) {
			pair_scan(t, w.b1, w.b2, now, &sc);
			can_grow = !t->nogrow && !t->oslot && (uint64_t)t->nb * WAYS < t->cap;
			if (sc.free || !can_grow || cost <= 0)
				break;
			if (!table_grow(t)) { /* a failure sets nogrow: the next turn ends */
				table_step(s, t, now);
				slot_find(t, h, &w);
			}
		}
		/* A peek is answered as the charge after it would be: from a slot that a growth
		 * would make, or a move (a peek may move: it changes no key's state). */
		if (!sc.free && !can_grow)
			sc.free = make_room(s, t, w.b1, w.b2, now);
		if (!sc.free && !can_grow)
			victim = sc.least;
		start = floor_of(t, &w);
		if (start < now)
			start = now;
		/* Full: start where the entry it would replace is. */
		if (victim && victim->tat > start)
			start = victim->tat;
		if (start > now)
			s->st.local_table_full++;
		/* A fallback starts from what Redis last said of the key (issue 16). */
		if (seed > start)
			start = seed;
	}
	ok = sl_gcra_charge(start, now, units, T, tau, &next);
	if (ok && cost > 0) {
		if (!e) {
			/* No free slot: its buckets hold only live entries, or the table is at its
			 * bound, and then fewer than WAYS of all its slots are empty (it has fewer
			 * than cap + WAYS; table_step keeps a growing table below its bound), so
			 * a bucket holds a live entry (a refilled one would be free). */
			e = sc.free ? sc.free : victim;
			if (e == victim)
				evict(s, t, e, now);
		}
		slot_put(s, t, e, h, next ? next : 1);
		return 1;
	}
	if (ok)
		return 1;
	over = sl_add_sat(start > now ? start - now : 0, sl_mul_sat(units, T));
	if (over > tau)
		*retry_ms = (over - tau) / 1000000 >= UINT32_MAX ? UINT32_MAX :
			    (uint32_t)((over - tau + 999999) / 1000000);
	return 0;
}

/* ---- outages: the last known state, and what Redis has not had yet ------------------ */

/*
 * Why (issue 16): a fallback that started empty handed an attacker a fresh allowance with
 * every outage (18 guesses instead of 6 across one kill and restart), and a success during
 * one never reached Redis (its user was locked out once Redis answered again). So:
 *
 *   - The mirror (a TK_MIRROR table per counter and tenant, bounded like the others) keeps
 *     the last TAT Redis returned for each live key, on this node's clock, raised by what
 *     this node charges in a fallback. A fail-open fallback starts a key from it, at the
 *     same debt: on limit / N it leaves the key (burst - spent) / N, so the N nodes together
 *     leave what Redis would have. Each call to Redis carries the key's mirror debt: a Redis
 *     that lost the key (restart, FLUSHALL, eviction) takes it back from there.
 *   - The journal holds, for each key, what a fail-open fallback charged and whether a
 *     success cleared it while Redis could not be asked. The key's next call to Redis
 *     carries it, applied in the same script (before the call's own charge), and a flush
 *     hands over the rest within ticks of the breaker closing. An entry is handed over by
 *     one call at a time and is dropped only once Redis says it landed.
 *   - A call that timed out may still run when Redis resumes (it was queued): its late
 *     reply says whether it did, and then the fallback's charge of the same attempt leaves
 *     the journal, so nothing is charged twice. Until then the key's journal waits.
 *   - Fail-closed counters (capacity) keep their static budget as their own and hand nothing
 *     over: their budgets refill in seconds, and a stale burst pushed into Redis would shed
 *     real users after the outage. Clears are handed over for every counter.
 */

static uint64_t jhash(const char *tenant, const char *name, const char *key)
{
	uint64_t h = 1469598103934665603ull;
	const char *parts[3] = { tenant, name, key }, *c;
	int i;

	for (i = 0; i < 3; i++) {
		for (c = parts[i]; *c; c++)
			h = (h ^ (uint8_t)*c) * 1099511628211ull;
		h *= 1099511628211ull;
	}
	return h;
}

static struct jent *journal_get(struct sl_store *s, const char *tenant,
				const struct sl_limit *l, const char *key, bool create)
{
	uint64_t h = jhash(tenant, l->name, key);
	struct jent **b = &s->jb[h & (JOURNAL_BUCKETS - 1)], *j;
	size_t lt, ln, lk;

	for (j = *b; j; j = j->next)
		if (j->hash == h && !strcmp(j->key, key) && !strcmp(j->name, l->name) &&
		    !strcmp(j->tenant, tenant))
			break;
	if (j || !create)
		goto out;
	/* A call carries copies of these (struct pending): what they cannot hold, no call
	 * would find again. */
	if (s->st.journal >= JOURNAL_MAX || strlen(tenant) >= sizeof(((struct pending *)0)->tenant) ||
	    strlen(key) >= KEY_MAX) {
		s->st.journal_dropped++;
		return NULL;
	}
	lt = strlen(tenant) + 1;
	ln = strlen(l->name) + 1;
	lk = strlen(key) + 1;
	j = calloc(1, sizeof(*j) + lt + ln + lk);
	if (!j) {
		s->st.journal_dropped++;
		return NULL;
	}
	memcpy(j->str, tenant, lt);
	memcpy(j->str + lt, l->name, ln);
	memcpy(j->str + lt + ln, key, lk);
	j->tenant = j->str;
	j->name = j->str + lt;
	j->key = j->str + lt + ln;
	j->hash = h;
	j->next = *b;
	*b = j;
	s->st.journal++;
out:
	if (j && create) {
		j->rate = l->rate;
		j->burst = l->burst;
		j->max_keys = l->max_keys;
	}
	return j;
}

/* Drop @j if it holds nothing any more and no call is about it. */
static void journal_tidy(struct sl_store *s, struct jent *j)
{
	struct jent **pp;

	if (!j || j->inflight || j->unsettled || j->clear || j->pend > now_ns())
		return;
	for (pp = &s->jb[j->hash & (JOURNAL_BUCKETS - 1)]; *pp; pp = &(*pp)->next) {
		if (*pp == j) {
			*pp = j->next;
			free(j);
			s->st.journal--;
			return;
		}
	}
}

/* A GCRA TAT moved by @ns: up from max(tat, now), or down to no less than now. */
static uint64_t tat_add(uint64_t tat, uint64_t now, uint64_t ns, bool up)
{
	if (up)
		return sl_add_sat(tat > now ? tat : now, ns);
	return tat > sl_add_sat(now, ns) ? tat - ns : 0;
}

/* A mirror TAT's lowest bit (a nanosecond) is the parity of the server epoch it was seen
 * in: an entry of the other parity was seen before the server last restarted. */
static uint64_t epoch_mark(const struct sl_store *s, uint64_t tat)
{
	return (tat & ~1ull) | (s->epoch & 1);
}

/* The mirror's TAT of @key (0: none); @prior (may be NULL) says it was seen before the
 * server's last restart. */
static uint64_t mirror_get_prior(struct sl_store *s, const char *tenant,
				 const struct sl_limit *l, const char *key, bool *prior)
{
	struct table *t = table_of(s, TK_MIRROR, tenant, l, false);
	struct slot *e;
	struct where w;

	if (prior)
		*prior = false;
	if (!t)
		return 0;
	e = slot_find(t, key_hash(s, key), &w);
	if (e && prior)
		*prior = (e->tat & 1) != (s->epoch & 1);
	return e ? e->tat : 0;
}

static uint64_t mirror_get(struct sl_store *s, const char *tenant, const struct sl_limit *l,
			   const char *key)
{
	return mirror_get_prior(s, tenant, l, key, NULL);
}

/* Set the mirror's TAT of @key to @tat (only raise it when @raise). A full table keeps its
 * most spent keys: a key less spent than all it holds is not remembered. */
static void mirror_set(struct sl_store *s, const char *tenant, const struct sl_limit *l,
		       const char *key, uint64_t tat, bool raise)
{
	uint64_t now = now_ns(), h;
	struct table *t = table_of(s, TK_MIRROR, tenant, l, tat > now);
	struct scan sc = { 0 };
	struct slot *e;
	struct where w;

	if (!t)
		return;
	table_step(s, t, now);
	h = key_hash(s, key);
	e = slot_find(t, h, &w);
	if (e) {
		if (!raise || tat > e->tat)
			e->tat = tat > now ? tat : now;
		e->tat = epoch_mark(s, e->tat);
		return;
	}
	if (tat <= now)
		return;
	for (;;) {
		bool can_grow;

		pair_scan(t, w.b1, w.b2, now, &sc);
		can_grow = !t->nogrow && !t->oslot && (uint64_t)t->nb * WAYS < t->cap;
		if (sc.free || !can_grow)
			break;
		if (!table_grow(t)) {
			table_step(s, t, now);
			slot_find(t, h, &w);
		}
	}
	if (!sc.free)
		sc.free = make_room(s, t, w.b1, w.b2, now);
	if (!sc.free) {
		if (!sc.least || sc.least->tat >= tat)
			return;
		sc.free = sc.least;
		s->st.local_evictions++;
		t->evictions++;
	}
	slot_put(s, t, sc.free, h, epoch_mark(s, tat));
}

/* A fail-open fallback took @cost of @key (a refund when negative): the mirror and the
 * journal say so. Returns the journal's entry, or NULL. */
static struct jent *fallback_took(struct sl_store *s, const struct sl_limit *l,
				  const char *tenant, const char *key, double cost)
{
	uint64_t now = now_ns(), T = sl_gcra_emission(l->rate);
	uint64_t ns = sl_mul_sat((uint64_t)ceil(fabs(cost)), T);
	struct jent *j;

	mirror_set(s, tenant, l, key, tat_add(mirror_get(s, tenant, l, key), now, ns, cost > 0),
		   false);
	j = journal_get(s, tenant, l, key, cost > 0);
	if (j)
		j->pend = tat_add(j->pend, now, ns, cost > 0);
	return j;
}

/* Answer from the fallback; returns the journal's entry of what a fail-open charge took
 * (NULL if none). */
static struct jent *answer_fallback(struct sl_store *s, const struct sl_limit *l,
				    const char *tenant, const char *key, double cost,
				    sl_store_cb cb, void *arg)
{
	struct jent *j = NULL;
	uint32_t retry = 0;
	int ok;

	if (l->fail == SL_FAIL_CLOSED) {
		ok = local_charge(s, TK_STATIC, tenant, l, key, l->static_rate, l->static_burst,
				  cost, 0, &retry);
		s->st.fallback_static++;
		if (cb)
			cb(arg, ok, retry, SL_ANS_STATIC);
	} else {
		double n = s->o.nodes ? s->o.nodes : 1;

		ok = local_charge(s, TK_LOCAL, tenant, l, key, l->rate / n,
				  l->burst / n < 1 ? 1 : l->burst / n, cost,
				  mirror_get(s, tenant, l, key), &retry);
		if (ok && cost != 0)
			j = fallback_took(s, l, tenant, key, cost);
		s->st.fallback_local++;
		if (cb)
			cb(arg, ok, retry, SL_ANS_LOCAL);
	}
	return cost > 0 ? j : NULL;
}

static uint16_t tenant_slot(const char *tenant);

/* Forget what the fail-open fallbacks of the tenants @n serves hold: @n answers again, and
 * the next outage starts from the mirror (which Redis keeps current), not from what the
 * last one left. */
static void fallbacks_reset(struct sl_store *s, const struct rnode *n)
{
	size_t i;

	for (i = 0; i < s->dir_cap; i++) {
		struct table *t = s->dir[i];

		if (!t || t->kind != TK_LOCAL)
			continue;
		if (s->target.cluster && s->slot[tenant_slot(t->tenant)] != (uint8_t)(n - s->node))
			continue;
		s->st.local_keys -= t->used;
		t->used = 0;
		memset(t->slot, 0, (size_t)t->nb * WAYS * sizeof(*t->slot));
		memset(t->floor, 0, t->nb * sizeof(*t->floor));
		free(t->oslot);
		free(t->ofloor);
		t->oslot = NULL;
		t->ofloor = NULL;
	}
}

/* ---- the breaker (one per server: a cluster's masters fail alone) ------------------ */

static void breaker_failure(struct rnode *n)
{
	struct sl_store *s = n->s;

	if (n->breaker == SL_BREAKER_HALF_OPEN ||
	    ++n->failures >= (s->o.breaker_failures ? s->o.breaker_failures : 3)) {
		/* Said once per outage: a failed probe (half-open) reopens it quietly. */
		if (n->breaker == SL_BREAKER_CLOSED)
			log_warn("redis %s: breaker open after %u failure(s); counters%s fall back "
				 "for %u ms at a time, probed in between", n->name, n->failures,
				 s->target.cluster ? " of the tenants on its slots" : "",
				 s->o.breaker_open_ms);
		else if (n->breaker == SL_BREAKER_HALF_OPEN)
			log_debug("redis %s: the probe failed; breaker open again", n->name);
		n->breaker = SL_BREAKER_OPEN;
		n->open_until = now_ns() + (uint64_t)s->o.breaker_open_ms * 1000000ull;
		if (s->target.cluster)
			s->map_stale = true; /* a failover may have moved its slots */
	}
}

static void breaker_success(struct rnode *n)
{
	if (n->breaker != SL_BREAKER_CLOSED) {
		log_info("redis %s: answering again; breaker closed", n->name);
		fallbacks_reset(n->s, n);
	}
	n->breaker = SL_BREAKER_CLOSED;
	n->failures = 0;
}

static void connect_node(struct rnode *n);

/* May a user's call go to @n now? Only with its breaker closed: the probes of an open
 * breaker are the store's own (on_tick), so no user pays a probe's timeout (issue 16), and
 * an idle node's breaker closes as soon as Redis answers. NULL (a slot no master serves,
 * a cluster's map not read yet): no. */
static bool breaker_allows(struct sl_store *s, struct rnode *n)
{
	if (!n) {
		if (s->target.cluster)
			s->map_stale = true;
		return false;
	}
	if (n->breaker != SL_BREAKER_CLOSED)
		return false;
	if (!n->connected) {
		connect_node(n);
		return false;
	}
	return true;
}

/* ---- where Redis is ------------------------------------------------------------------ */

/* "HOST:PORT" (HOST maybe "[v6]") into @host and @port; false when it is not one. */
static bool split_host_port(const char *s, size_t n, char *host, size_t hostlen, int *port)
{
	const char *colon = NULL, *p;
	size_t hl;
	char *end;
	long v;

	for (p = s; p < s + n; p++)
		if (*p == ':')
			colon = p;
	if (!colon || colon == s)
		return false;
	v = strtol(colon + 1, &end, 10);
	if (end != s + n || v < 1 || v > 65535)
		return false;
	hl = (size_t)(colon - s);
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		s++;
		hl -= 2;
	}
	if (!hl || hl >= hostlen)
		return false;
	memcpy(host, s, hl);
	host[hl] = '\0';
	*port = (int)v;
	return true;
}

int sl_store_target_parse(const char *a, struct sl_redis_target *t)
{
	memset(t, 0, sizeof(*t));
	if (!strncmp(a, "unix:", 5)) {
		if (a[5] != '/' || strlen(a + 5) >= sizeof(t->host))
			return -EINVAL;
		t->unix_sock = true;
		snprintf(t->host, sizeof(t->host), "%s", a + 5);
		return 0;
	}
	if (!strncmp(a, "cluster:", 8)) {
		const char *p, *comma;

		t->cluster = true;
		/* Every element a HOST:PORT: an empty one (a trailing comma) is refused. */
		for (p = a + 8;; p = comma + 1) {
			comma = strchr(p, ',');
			if (!comma)
				comma = p + strlen(p);
			if (t->n_sentinels >= SL_STORE_MAX_SENTINELS ||
			    !split_host_port(p, (size_t)(comma - p),
					     t->sentinel_at[t->n_sentinels].host,
					     sizeof(t->sentinel_at[0].host),
					     &t->sentinel_at[t->n_sentinels].port))
				return -EINVAL;
			t->n_sentinels++;
			if (!*comma)
				return 0;
		}
	}
	if (!strncmp(a, "sentinel:", 9)) {
		const char *at = strchr(a + 9, '@'), *p, *comma;

		if (!at || at == a + 9 || (size_t)(at - a - 9) >= sizeof(t->master))
			return -EINVAL;
		t->sentinel = true;
		memcpy(t->master, a + 9, (size_t)(at - a - 9));
		t->master[at - a - 9] = '\0';
		for (p = at + 1; *p; p = *comma ? comma + 1 : comma) {
			comma = strchr(p, ',');
			if (!comma)
				comma = p + strlen(p);
			if (t->n_sentinels >= SL_STORE_MAX_SENTINELS ||
			    !split_host_port(p, (size_t)(comma - p),
					     t->sentinel_at[t->n_sentinels].host,
					     sizeof(t->sentinel_at[0].host),
					     &t->sentinel_at[t->n_sentinels].port))
				return -EINVAL;
			t->n_sentinels++;
		}
		return t->n_sentinels ? 0 : -EINVAL;
	}
	return split_host_port(a, strlen(a), t->host, sizeof(t->host), &t->port) ? 0 : -EINVAL;
}

static bool is_numeric(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;

	return inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
}

/* Blocking: @name's first address, as text. */
static int resolve(const char *name, char *out, size_t outlen, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL, *ai;
	int rc;

	if (is_numeric(name)) {
		snprintf(out, outlen, "%s", name);
		return 0;
	}
	rc = getaddrinfo(name, NULL, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "cannot resolve %s: %s", name, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		const void *src = ai->ai_family == AF_INET ?
			(const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr :
			ai->ai_family == AF_INET6 ?
			(const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr : NULL;

		if (src && inet_ntop(ai->ai_family, src, out, (socklen_t)outlen)) {
			freeaddrinfo(res);
			return 0;
		}
	}
	freeaddrinfo(res);
	snprintf(err, errlen, "%s has no usable address", name);
	return -EHOSTUNREACH;
}

int sl_store_locate(const struct sl_redis_target *t, uint32_t timeout_ms, char *host,
		    size_t hostlen, int *port, char *err, size_t errlen)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000,
			      .tv_usec = (long)(timeout_ms % 1000) * 1000 };
	char why[200] = "";
	int i, rc;

	if (t->unix_sock) {
		snprintf(host, hostlen, "%s", t->host);
		*port = 0;
		return 0;
	}
	if (t->cluster) {
		/* A seed to start from (the slot map names the masters: cluster_fetch). */
		for (i = 0; i < t->n_sentinels; i++) {
			*port = t->sentinel_at[i].port;
			if (!resolve(t->sentinel_at[i].host, host, hostlen, err, errlen))
				return 0;
		}
		return -EHOSTUNREACH;
	}
	if (!t->sentinel) {
		*port = t->port;
		return resolve(t->host, host, hostlen, err, errlen);
	}
	/* The first sentinel that names the master wins; each gets @timeout_ms. */
	for (i = 0; i < t->n_sentinels; i++) {
		char ip[200];
		redisContext *c;
		redisReply *r;

		if (resolve(t->sentinel_at[i].host, ip, sizeof(ip), why, sizeof(why)))
			continue;
		c = redisConnectWithTimeout(ip, t->sentinel_at[i].port, tv);
		if (!c || c->err || redisSetTimeout(c, tv) != REDIS_OK) {
			snprintf(why, sizeof(why), "sentinel %s:%d: %s", t->sentinel_at[i].host,
				 t->sentinel_at[i].port, c ? c->errstr : "out of memory");
			if (c)
				redisFree(c);
			continue;
		}
		r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", t->master);
		if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
		    r->element[0]->type == REDIS_REPLY_STRING &&
		    r->element[1]->type == REDIS_REPLY_STRING) {
			*port = atoi(r->element[1]->str);
			rc = resolve(r->element[0]->str, host, hostlen, why, sizeof(why));
			freeReplyObject(r);
			redisFree(c);
			if (!rc)
				return 0;
			continue;
		}
		snprintf(why, sizeof(why), "sentinel %s:%d: %s", t->sentinel_at[i].host,
			 t->sentinel_at[i].port,
			 !r ? (c->errstr[0] ? c->errstr : "no answer") :
			 r->type == REDIS_REPLY_ERROR ? r->str : "does not know the master");
		if (r)
			freeReplyObject(r);
		redisFree(c);
	}
	snprintf(err, errlen, "no sentinel named master '%s' (last: %s)", t->master,
		 why[0] ? why : "none asked");
	return -EHOSTUNREACH;
}

/* A line "@field:VALUE" of an INFO reply, VALUE copied into @out. */
static bool info_field(const char *info, const char *field, char *out, size_t outlen)
{
	size_t n = strlen(field);
	const char *p;

	for (p = info; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, field, n) && p[n] == ':') {
			size_t l = strcspn(p + n + 1, "\r\n");

			if (l >= outlen)
				l = outlen - 1;
			memcpy(out, p + n + 1, l);
			out[l] = '\0';
			return true;
		}
	}
	return false;
}

/* The AUTH command of @user/@password into @argv (2 or 3 words); 0: none to send. */
static int auth_argv(const char *user, const char *password, const char **argv)
{
	int n = 0;

	if (!password || !password[0])
		return 0;
	argv[n++] = "AUTH";
	if (user && user[0])
		argv[n++] = user;
	argv[n++] = password;
	return n;
}

/* Blocking: a connection to @host:@port (or the Unix socket @host), authenticated, INFO
 * checked: a master, a Cluster node exactly when @cluster. NULL with @err set. */
static redisContext *connect_one(const char *host, int port, bool unix_sock, bool cluster,
				 const char *user, const char *password, uint32_t timeout_ms,
				 char *err, size_t errlen)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000,
			      .tv_usec = (long)(timeout_ms % 1000) * 1000 };
	const char *argv[3];
	redisContext *c;
	redisReply *r;
	int n;

	c = unix_sock ? redisConnectUnixWithTimeout(host, tv) :
			redisConnectWithTimeout(host, port, tv);
	if (!c || c->err || redisSetTimeout(c, tv) != REDIS_OK) {
		snprintf(err, errlen, "%s:%d: %s", host, port, c ? c->errstr : "out of memory");
		if (c)
			redisFree(c);
		return NULL;
	}
	n = auth_argv(user, password, argv);
	if (n) {
		r = redisCommandArgv(c, n, argv, NULL);
		if (!r || r->type == REDIS_REPLY_ERROR) {
			snprintf(err, errlen, "AUTH%s%s refused: %s", user && user[0] ? " as " : "",
				 user && user[0] ? user : "",
				 r ? r->str : c->errstr[0] ? c->errstr : "no answer");
			if (r)
				freeReplyObject(r);
			redisFree(c);
			return NULL;
		}
		freeReplyObject(r);
	}
	/* What the store's handshake checks (on_hello): a master, a Cluster node or not as
	 * configured. */
	r = redisCommand(c, "INFO");
	if (!r || r->type == REDIS_REPLY_ERROR || r->type != REDIS_REPLY_STRING) {
		snprintf(err, errlen, "INFO: %s", r && r->type == REDIS_REPLY_ERROR ? r->str :
			 c->errstr[0] ? c->errstr : "no answer");
	} else {
		char v[32];
		bool is_cluster = info_field(r->str, "cluster_enabled", v, sizeof(v)) &&
				  !strcmp(v, "1");

		if (is_cluster && !cluster)
			snprintf(err, errlen, "a Redis Cluster node (cluster_enabled:1): not "
				 "supported as redis.address (list the nodes in redis.cluster)");
		else if (!is_cluster && cluster)
			snprintf(err, errlen, "%s:%d is not a Redis Cluster node (no "
				 "cluster_enabled:1)", host, port);
		else if (info_field(r->str, "role", v, sizeof(v)) && strcmp(v, "master"))
			snprintf(err, errlen, "%s:%d is a replica (role:%s)", host, port, v);
		else
			err[0] = '\0';
	}
	if (r)
		freeReplyObject(r);
	if (err[0]) {
		redisFree(c);
		return NULL;
	}
	return c;
}

redisContext *sl_store_connect_sync(const char *address, const char *user,
				    const char *password, uint32_t timeout_ms,
				    char *err, size_t errlen)
{
	struct sl_redis_target t;
	char host[200];
	int port;

	if (sl_store_target_parse(address, &t)) {
		snprintf(err, errlen, "'%s' is not a Redis address", address);
		return NULL;
	}
	if (t.cluster) {
		snprintf(err, errlen, "a Redis Cluster: one connection cannot serve it");
		return NULL;
	}
	if (sl_store_locate(&t, timeout_ms, host, sizeof(host), &port, err, errlen))
		return NULL;
	return connect_one(host, port, t.unix_sock, false, user, password, timeout_ms, err,
			   errlen);
}

/* ---- Redis Cluster: slots and the slot map ----------------------------------------- */

/* CRC16-CCITT as XMODEM has it (polynomial 0x1021, initial 0, no reflection): Redis
 * Cluster's key hash. Bitwise: a key is under 200 bytes, and this is no hot loop. */
static uint16_t crc16_xmodem(const char *buf, size_t len)
{
	uint16_t crc = 0;
	size_t i;
	int b;

	for (i = 0; i < len; i++) {
		crc ^= (uint16_t)((uint8_t)buf[i] << 8);
		for (b = 0; b < 8; b++)
			crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

uint16_t sl_store_keyslot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len), *close;

	/* The hash tag: from the first '{' to the first '}' after it, if not empty. */
	if (open) {
		close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
		if (close && close > open + 1)
			return crc16_xmodem(open + 1, (size_t)(close - open - 1)) & (NSLOTS - 1);
	}
	return crc16_xmodem(key, len) & (NSLOTS - 1);
}

/* The slot of every key of @tenant ("...:{tenant}:..."). */
static uint16_t tenant_slot(const char *tenant)
{
	char k[80];
	int n = snprintf(k, sizeof(k), "{%s}", tenant);

	return sl_store_keyslot(k, n > 0 && (size_t)n < sizeof(k) ? (size_t)n : strlen(k));
}

/* A CLUSTER SLOTS reply into @m; @asked names the node that answered (a master listed with
 * an empty address is that one). 0, or -EPROTO/-E2BIG with @err set. */
static int slotmap_parse(const redisReply *r, const char *asked, int asked_port,
			 struct slotmap *m, char *err, size_t errlen)
{
	size_t i;

	memset(m, 0, sizeof(*m));
	memset(m->slot, NO_NODE, sizeof(m->slot));
	if (r->type != REDIS_REPLY_ARRAY) {
		snprintf(err, errlen, "CLUSTER SLOTS: %s", r->type == REDIS_REPLY_ERROR ?
			 r->str : "not an array");
		return -EPROTO;
	}
	for (i = 0; i < r->elements; i++) {
		const redisReply *e = r->element[i], *mr;
		const char *ip;
		long long lo, hi, k;
		int port, j;

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    e->element[0]->type != REDIS_REPLY_INTEGER ||
		    e->element[1]->type != REDIS_REPLY_INTEGER ||
		    e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
			goto bad;
		mr = e->element[2];
		if (mr->element[0]->type != REDIS_REPLY_STRING ||
		    mr->element[1]->type != REDIS_REPLY_INTEGER)
			goto bad;
		lo = e->element[0]->integer;
		hi = e->element[1]->integer;
		ip = mr->element[0]->str[0] ? mr->element[0]->str : asked;
		port = mr->element[1]->integer > 0 && mr->element[1]->integer < 65536 ?
		       (int)mr->element[1]->integer : asked_port;
		if (lo < 0 || hi >= NSLOTS || lo > hi || strlen(ip) >= sizeof(m->at[0].host))
			goto bad;
		/* The loop connects to masters by address only (hiredis would resolve a name
		 * on it: issue 16's stall). */
		if (!is_numeric(ip)) {
			snprintf(err, errlen, "CLUSTER SLOTS names '%s', not an address (set "
				 "cluster-preferred-endpoint-type ip)", ip);
			return -EPROTO;
		}
		for (j = 0; j < m->n; j++)
			if (m->at[j].port == port && !strcmp(m->at[j].host, ip))
				break;
		if (j == m->n) {
			if (m->n >= MAX_NODES) {
				snprintf(err, errlen, "CLUSTER SLOTS: more than %d masters",
					 MAX_NODES);
				return -E2BIG;
			}
			snprintf(m->at[j].host, sizeof(m->at[j].host), "%s", ip);
			m->at[j].port = port;
			m->n++;
		}
		for (k = lo; k <= hi; k++) {
			if (m->slot[k] == NO_NODE)
				m->covered++;
			m->slot[k] = (uint8_t)j;
		}
	}
	return 0;
bad:
	snprintf(err, errlen, "CLUSTER SLOTS: an entry is not [start, end, [ip, port, ...]]");
	return -EPROTO;
}

/* Blocking: the slot map, from the first node that gives one: @known's masters first (the
 * cluster as last seen), then @t's seeds. Each node gets @timeout_ms. */
static int cluster_fetch(const struct sl_redis_target *t, const struct slotmap *known,
			 const char *user, const char *password, uint32_t timeout_ms,
			 struct slotmap *out, char *err, size_t errlen)
{
	char why[256] = "", ip[200];
	int i, nk = known ? known->n : 0;

	for (i = 0; i < nk + t->n_sentinels; i++) {
		const char *h = i < nk ? known->at[i].host : t->sentinel_at[i - nk].host;
		int port = i < nk ? known->at[i].port : t->sentinel_at[i - nk].port;
		redisContext *c;
		redisReply *r;
		int rc;

		if (resolve(h, ip, sizeof(ip), why, sizeof(why)))
			continue;
		c = connect_one(ip, port, false, true, user, password, timeout_ms, why,
				sizeof(why));
		if (!c)
			continue;
		r = redisCommand(c, "CLUSTER SLOTS");
		if (!r) {
			snprintf(why, sizeof(why), "%s:%d: CLUSTER SLOTS: %s", ip, port,
				 c->errstr[0] ? c->errstr : "no answer");
			redisFree(c);
			continue;
		}
		rc = slotmap_parse(r, ip, port, out, why, sizeof(why));
		freeReplyObject(r);
		redisFree(c);
		if (!rc && out->covered)
			return 0;
		if (!rc)
			snprintf(why, sizeof(why), "%s:%d: no slot has a master yet", ip, port);
	}
	snprintf(err, errlen, "no cluster node gave its slot map (last: %s)",
		 why[0] ? why : "none asked");
	return -EHOSTUNREACH;
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK ...": the slot and where it went. */
static bool parse_redirect(const char *str, bool *moved, int *slot, char *host, size_t hostlen,
			   int *port)
{
	const char *p, *sp;
	char *end;
	long v;

	if (!strncmp(str, "MOVED ", 6)) {
		*moved = true;
		p = str + 6;
	} else if (!strncmp(str, "ASK ", 4)) {
		*moved = false;
		p = str + 4;
	} else {
		return false;
	}
	v = strtol(p, &end, 10);
	if (end == p || *end != ' ' || v < 0 || v >= NSLOTS)
		return false;
	*slot = (int)v;
	sp = end + 1;
	return split_host_port(sp, strlen(sp), host, hostlen, port);
}

static struct {
	pthread_mutex_t mu;
	char address[256], user[64], password[256];
} auth_reg = { .mu = PTHREAD_MUTEX_INITIALIZER };

void sl_store_auth_register(const char *address, const char *user, const char *password)
{
	pthread_mutex_lock(&auth_reg.mu);
	snprintf(auth_reg.address, sizeof(auth_reg.address), "%s", address ? address : "");
	snprintf(auth_reg.user, sizeof(auth_reg.user), "%s", user ? user : "");
	snprintf(auth_reg.password, sizeof(auth_reg.password), "%s", password ? password : "");
	pthread_mutex_unlock(&auth_reg.mu);
}

void sl_store_auth_lookup(const char *address, const char **user, const char **password)
{
	pthread_mutex_lock(&auth_reg.mu);
	if (address && auth_reg.address[0] && !strcmp(address, auth_reg.address)) {
		*user = auth_reg.user;
		*password = auth_reg.password;
	} else {
		*user = *password = "";
	}
	pthread_mutex_unlock(&auth_reg.mu);
}

/* ---- a blocking client that routes by key (the stream job's) ----------------------- */

#define SYNC_DOWN_NS (1ull * 1000000000ull) /* a master that failed is not asked for this long */

struct sync_cmd {
	int node;            /* an index into map.at, or -1: no master to ask */
	char *cmd;           /* formatted, for a redirect */
	int len;
};

struct sl_sync {
	redisContext *one;   /* not a cluster */
	struct sl_redis_target t;
	char user[64], password[256];
	uint32_t timeout_ms;
	struct slotmap map;
	bool stale;          /* a MOVED: read the map again before the next batch */
	struct { redisContext *c; uint64_t down_until; } node[MAX_NODES];
	struct sync_cmd *q;
	size_t qhead, qn, qcap;
	char err[256];
};

struct sl_sync *sl_sync_connect(const char *address, const char *user, const char *password,
				uint32_t timeout_ms, char *err, size_t errlen)
{
	struct sl_sync *c = calloc(1, sizeof(*c));

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (sl_store_target_parse(address, &c->t)) {
		snprintf(err, errlen, "'%s' is not a Redis address", address);
		free(c);
		return NULL;
	}
	if (!c->t.cluster) {
		c->one = sl_store_connect_sync(address, user, password, timeout_ms, err, errlen);
		if (!c->one) {
			free(c);
			return NULL;
		}
		return c;
	}
	snprintf(c->user, sizeof(c->user), "%s", user ? user : "");
	snprintf(c->password, sizeof(c->password), "%s", password ? password : "");
	c->timeout_ms = timeout_ms;
	if (cluster_fetch(&c->t, NULL, c->user, c->password, timeout_ms, &c->map, err, errlen)) {
		sl_sync_free(c);
		return NULL;
	}
	return c;
}

/* Master @i's connection, made when first needed; NULL while it is down. */
static redisContext *sync_node(struct sl_sync *c, int i)
{
	uint64_t now = now_ns();

	if (i < 0 || i >= c->map.n)
		return NULL;
	if (c->node[i].c)
		return c->node[i].c;
	if (now < c->node[i].down_until)
		return NULL;
	c->node[i].c = connect_one(c->map.at[i].host, c->map.at[i].port, false, true, c->user,
				   c->password, c->timeout_ms, c->err, sizeof(c->err));
	if (!c->node[i].c)
		c->node[i].down_until = now + SYNC_DOWN_NS;
	return c->node[i].c;
}

static void sync_node_down(struct sl_sync *c, int i)
{
	if (c->node[i].c) {
		snprintf(c->err, sizeof(c->err), "%s:%d: %s", c->map.at[i].host, c->map.at[i].port,
			 c->node[i].c->errstr[0] ? c->node[i].c->errstr : "no reply");
		redisFree(c->node[i].c);
	}
	c->node[i].c = NULL;
	c->node[i].down_until = now_ns() + SYNC_DOWN_NS;
	c->stale = true;
}

/* Read the map again (a MOVED said it changed); the masters' connections follow it. */
static void sync_refresh(struct sl_sync *c)
{
	struct slotmap m;
	char why[256];
	int i, j;

	if (cluster_fetch(&c->t, &c->map, c->user, c->password, c->timeout_ms, &m, why,
			  sizeof(why))) {
		snprintf(c->err, sizeof(c->err), "%s", why);
		return;
	}
	/* Keep the connections of masters still in the map, at their new index. */
	for (i = 0; i < c->map.n; i++) {
		for (j = 0; j < m.n; j++)
			if (m.at[j].port == c->map.at[i].port && !strcmp(m.at[j].host, c->map.at[i].host))
				break;
		if (j == m.n && c->node[i].c) {
			redisFree(c->node[i].c);
			c->node[i].c = NULL;
		}
		if (j < m.n && j != i) {
			redisContext *t = c->node[j].c;
			uint64_t d = c->node[j].down_until;

			c->node[j].c = c->node[i].c;
			c->node[j].down_until = c->node[i].down_until;
			c->node[i].c = t;
			c->node[i].down_until = d;
		}
	}
	c->map = m;
	c->stale = false;
}

/* A reply saying @why, for a command no master could be asked. */
static redisReply *sync_error(const char *why)
{
	redisReply *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->type = REDIS_REPLY_ERROR;
	r->str = strdup(why);
	if (!r->str) {
		free(r);
		return NULL;
	}
	r->len = strlen(why);
	return r;
}

int sl_sync_append(struct sl_sync *c, const char *key, int argc, const char **argv,
		   const size_t *lens)
{
	struct sync_cmd *e;
	redisContext *nc;
	char *cmd = NULL;
	int len;

	if (c->one)
		return redisAppendCommandArgv(c->one, argc, argv, lens);
	if (c->qhead == c->qn) {
		c->qhead = c->qn = 0;
		if (c->stale)
			sync_refresh(c);
	}
	if (c->qn == c->qcap) {
		size_t ncap = c->qcap ? c->qcap * 2 : 64;
		struct sync_cmd *nq = realloc(c->q, ncap * sizeof(*nq));

		if (!nq)
			return REDIS_ERR;
		c->q = nq;
		c->qcap = ncap;
	}
	len = redisFormatCommandArgv(&cmd, argc, argv, lens);
	if (len < 0 || !cmd)
		return REDIS_ERR;
	e = &c->q[c->qn++];
	e->node = c->map.slot[sl_store_keyslot(key, strlen(key))];
	if (e->node == NO_NODE)
		e->node = -1;
	e->cmd = cmd;
	e->len = len;
	nc = sync_node(c, e->node);
	if (!nc || redisAppendFormattedCommand(nc, cmd, (size_t)len) != REDIS_OK)
		e->node = -1;
	return REDIS_OK;
}

/* Follow a MOVED or ASK for @e on a connection of its own (the target's pipelined replies
 * are not this one's), once. */
static redisReply *sync_redirect(struct sl_sync *c, struct sync_cmd *e, const char *str)
{
	char host[200], why[256];
	redisReply *r = NULL, *a = NULL;
	redisContext *t;
	bool moved;
	int slot, port, i;

	if (!parse_redirect(str, &moved, &slot, host, sizeof(host), &port))
		return NULL;
	if (moved) {
		c->stale = true;
		for (i = 0; i < c->map.n; i++)
			if (c->map.at[i].port == port && !strcmp(c->map.at[i].host, host))
				c->map.slot[slot] = (uint8_t)i;
	}
	t = connect_one(host, port, false, true, c->user, c->password, c->timeout_ms, why,
			sizeof(why));
	if (!t)
		return sync_error("NODEDOWN the redirect's target does not answer");
	if (!moved)
		redisAppendCommand(t, "ASKING");
	redisAppendFormattedCommand(t, e->cmd, (size_t)e->len);
	if (!moved && redisGetReply(t, (void **)&a) == REDIS_OK)
		freeReplyObject(a);
	if (redisGetReply(t, (void **)&r) != REDIS_OK)
		r = NULL;
	redisFree(t);
	return r ? r : sync_error("NODEDOWN the redirect's target does not answer");
}

int sl_sync_reply(struct sl_sync *c, redisReply **reply)
{
	struct sync_cmd *e;
	redisReply *r = NULL;
	int i;

	*reply = NULL;
	if (c->one)
		return redisGetReply(c->one, (void **)reply);
	if (c->qhead == c->qn) {
		snprintf(c->err, sizeof(c->err), "no command to read a reply of");
		return REDIS_ERR;
	}
	e = &c->q[c->qhead++];
	i = e->node;
	if (i >= 0 && c->node[i].c) {
		if (redisGetReply(c->node[i].c, (void **)&r) != REDIS_OK || !r) {
			sync_node_down(c, i);
			r = NULL;
		}
	}
	if (r && r->type == REDIS_REPLY_ERROR &&
	    (!strncmp(r->str, "MOVED ", 6) || !strncmp(r->str, "ASK ", 4))) {
		redisReply *f = sync_redirect(c, e, r->str);

		if (f) {
			freeReplyObject(r);
			r = f;
		}
	} else if (r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "CLUSTERDOWN", 11)) {
		c->stale = true;
	}
	if (!r)
		r = sync_error("NODEDOWN the slot's master does not answer");
	free(e->cmd);
	e->cmd = NULL;
	*reply = r;
	return r ? REDIS_OK : REDIS_ERR;
}

const char *sl_sync_errstr(const struct sl_sync *c)
{
	if (c->one)
		return c->one->errstr;
	return c->err;
}

void sl_sync_free(struct sl_sync *c)
{
	size_t k;
	int i;

	if (!c)
		return;
	if (c->one)
		redisFree(c->one);
	for (i = 0; i < MAX_NODES; i++)
		if (c->node[i].c)
			redisFree(c->node[i].c);
	for (k = c->qhead; k < c->qn; k++)
		free(c->q[k].cmd);
	free(c->q);
	sodium_memzero(c->password, sizeof(c->password));
	free(c);
}

/* ---- the Redis client ------------------------------------------------------------- */

/*
 * A connection, from the loop's side (issue 16: hiredis resolves a name synchronously, and a
 * dead resolver froze the gateway ~12 s): a name or a sentinel is looked up by a worker
 * thread (struct locate_job) that posts the numeric address back through a pipe; a
 * connection is made by address only, and only ever to what was located for it, so a name
 * is resolved again at every reconnect and a failover is followed. A connection is up once
 * its handshake answered: AUTH first when a password is set, then INFO (a replica is
 * refused, and a Cluster node unless a cluster is configured). Until then every check takes
 * its fallback at once, and the tick gives a connection (locating included) one second
 * before it counts as a failure. A resolver or sentinel that does not answer is a Redis that
 * does not answer: the breaker and the fallbacks, never the loop.
 *
 * A Redis Cluster (issue 16): the same thread reads the slot map (CLUSTER SLOTS, from the
 * masters last seen, then the seeds), and each master gets a connection of its own with its
 * own breaker (struct rnode), so a master that fails sends only its slots' tenants to their
 * fallbacks. A check goes to its key's slot's master; a MOVED updates that slot, asks for
 * the map again and sends the call to the new master once; an ASK (a slot being migrated)
 * sends ASKING and the call to the target once, leaving the map alone. Either way within
 * the call's one timeout (the timer runs from the first send): a redirect costs a round
 * trip, never a second timeout. The map is read again after a MOVED, a master's breaker
 * opening, a CLUSTERDOWN, and every MAP_REFRESH_NS.
 */
#define MAP_REFRESH_NS (5ull * 1000000000ull)
#define MAP_RETRY_NS (500ull * 1000000ull) /* after a read no node answered */

struct locate_job {
	int refs;                 /* the thread's and the store's */
	int fd[2];                /* the thread writes one byte when done */
	struct sl_redis_target t;
	uint32_t timeout_ms;
	int rc, port;
	char host[200];
	char err[256];
	/* A cluster's: the map it read, from the masters last seen (known) or the seeds. */
	char user[64], password[256];
	struct slotmap known, map;
};

static void job_put(struct locate_job *j)
{
	if (__atomic_sub_fetch(&j->refs, 1, __ATOMIC_ACQ_REL))
		return;
	close(j->fd[0]);
	close(j->fd[1]);
	sodium_memzero(j->password, sizeof(j->password));
	free(j);
}

static void *locate_thread(void *arg)
{
	struct locate_job *j = arg;
	ssize_t w;

	if (j->t.cluster)
		j->rc = cluster_fetch(&j->t, &j->known, j->user, j->password, j->timeout_ms,
				      &j->map, j->err, sizeof(j->err));
	else
		j->rc = sl_store_locate(&j->t, j->timeout_ms, j->host, sizeof(j->host),
					&j->port, j->err, sizeof(j->err));
	w = write(j->fd[1], "x", 1);
	(void)w;
	job_put(j);
	return NULL;
}

/*
 * A problem with the connection, logged at most once every CONN_LOG_NS unless it is a new
 * one (so the first line of an outage, and each change of cause, is always there).
 */
#define CONN_LOG_NS (10ull * 1000000000ull)
#define STALE_NS (5ull * 1000000000ull) /* a live connection silent this long is dropped */

static void __attribute__((format(printf, 3, 4)))
conn_log(struct sl_store *s, bool error, const char *fmt, ...)
{
	char msg[512];
	uint64_t now = now_ns();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!strcmp(msg, s->conn_msg) && s->conn_logged && now - s->conn_logged < CONN_LOG_NS) {
		s->conn_repeats++;
		return;
	}
	if (s->conn_repeats && !strcmp(msg, s->conn_msg)) {
		if (error)
			log_error("%s (%u more times since the last report)", msg, s->conn_repeats);
		else
			log_warn("%s (%u more times since the last report)", msg, s->conn_repeats);
	} else if (error) {
		log_error("%s", msg);
	} else {
		log_warn("%s", msg);
	}
	snprintf(s->conn_msg, sizeof(s->conn_msg), "%s", msg);
	s->conn_logged = now;
	s->conn_repeats = 0;
}

static void on_script_loaded(redisAsyncContext *ac, void *r, void *priv)
{
	redisReply *reply = r;
	struct rnode *n = ac->data;
	struct sl_store *s = n ? n->s : NULL;
	long idx = (long)priv;

	if (!s || !reply || reply->type != REDIS_REPLY_STRING || idx < 0 || idx >= s->n_scripts)
		return;
	snprintf(s->scripts[idx].sha, sizeof(s->scripts[idx].sha), "%s", reply->str);
	n->loaded[idx] = true;
}

static void load_scripts(struct rnode *n)
{
	long i;

	for (i = 0; i < n->s->n_scripts; i++) {
		n->loaded[i] = false;
		redisAsyncCommand(n->ac, on_script_loaded, (void *)i, "SCRIPT LOAD %s",
				  n->s->scripts[i].lua);
	}
}

/* Drop a connection whose handshake or reply said it is not the one to use; on_disconnect
 * follows (the breaker is told there). */
static void drop_connection(struct rnode *n)
{
	n->connected = false;
	if (n->ac && !n->dropping) {
		n->dropping = true;
		redisAsyncDisconnect(n->ac);
	}
}

static void on_connect(const redisAsyncContext *ac, int status)
{
	struct rnode *n = ac->data;
	struct sl_store *s;

	if (!n)
		return;
	s = n->s;
	if (status != REDIS_OK) {
		if (s->target.cluster)
			conn_log(s, false, "redis cluster node %s: cannot connect: %s", n->name,
				 ac->errstr);
		else
			conn_log(s, false, "redis %s: cannot connect%s%s: %s", s->redis_addr,
				 s->target.sentinel || !s->target.unix_sock ? " to " : "",
				 s->target.unix_sock ? "" : s->located, ac->errstr);
		n->connecting = false;
		n->ac = NULL; /* hiredis frees it */
		s->st.errors++;
		n->errors++;
		breaker_failure(n);
	}
	/* Connected: up once the handshake has answered (on_hello). */
}

enum { HELLO_AUTH = 1, HELLO_INFO = 2 };

static void on_hello(redisAsyncContext *ac, void *r, void *priv)
{
	struct rnode *n = ac->data;
	struct sl_store *s = n ? n->s : NULL;
	redisReply *reply = r;
	char v[48];
	bool is_cluster;

	if (!s || s->closing || n->dropping || n->ac != ac)
		return;
	if (!reply) {
		return; /* the connection went: on_disconnect */
	}
	if ((long)priv == HELLO_AUTH) {
		if (reply->type == REDIS_REPLY_ERROR) {
			/* Redis's reply never echoes the password, nor do we. */
			conn_log(s, true, "redis %s: AUTH%s%s refused: %s; counters use their "
				 "fallbacks until it is accepted (check redis.user and "
				 "redis.password)", n->name, s->user[0] ? " as user " : "",
				 s->user, reply->str);
			s->st.errors++;
			n->errors++;
			drop_connection(n);
		}
		return;
	}
	if (reply->type == REDIS_REPLY_ERROR) {
		if (!strncmp(reply->str, "NOAUTH", 6))
			conn_log(s, true, "redis %s: the server wants a password (%s); set "
				 "redis.password (and redis.user for an ACL user); counters use "
				 "their fallbacks", n->name, reply->str);
		else
			conn_log(s, false, "redis %s: INFO: %s", n->name, reply->str);
		s->st.errors++;
		n->errors++;
		drop_connection(n);
		return;
	}
	if (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_STATUS) {
		drop_connection(n);
		return;
	}
	is_cluster = info_field(reply->str, "cluster_enabled", v, sizeof(v)) && !strcmp(v, "1");
	if (is_cluster && !s->target.cluster) {
		conn_log(s, true, "redis %s is a Redis Cluster node (cluster_enabled:1): Redis "
			 "Cluster is not supported on redis.address (it would answer MOVED); "
			 "refusing it, counters use their fallbacks. List the cluster's nodes in "
			 "redis.cluster instead", s->redis_addr);
		s->st.errors++;
		s->st.refused_cluster = true;
		drop_connection(n);
		return;
	}
	if (!is_cluster && s->target.cluster) {
		conn_log(s, true, "redis cluster node %s is not a Redis Cluster node (no "
			 "cluster_enabled:1); refusing it", n->name);
		s->st.errors++;
		n->errors++;
		drop_connection(n);
		return;
	}
	if (info_field(reply->str, "role", v, sizeof(v)) && strcmp(v, "master")) {
		conn_log(s, false, "redis %s: %s is a replica (role:%s), not the master; %s",
			 n->name, s->target.unix_sock ? s->target.host :
			 s->target.cluster ? n->name : s->located, v,
			 s->target.sentinel ? "asking the sentinels again" :
			 s->target.cluster ? "reading the slot map again" :
			 "counters use their fallbacks");
		s->st.errors++;
		n->errors++;
		s->map_stale = true;
		drop_connection(n);
		return;
	}
	/* Another run_id than last time: the server restarted (empty, from a snapshot, or a
	 * failover's new master). What this node saw before is a floor for each key's first
	 * check from now on (gcra_lua, ARGV[8]): a snapshot's older value must not undo the
	 * charges made after it. */
	if (info_field(reply->str, "run_id", v, sizeof(v))) {
		if (n->run_id[0] && strcmp(n->run_id, v)) {
			s->epoch++;
			log_warn("redis %s: the server restarted (run_id %.8s, was %.8s); each key's "
				 "first check takes this node's last known debt as its floor", n->name,
				 v, n->run_id);
		}
		snprintf(n->run_id, sizeof(n->run_id), "%s", v);
	}
	n->connecting = false;
	n->connected = true;
	n->last_reply = now_ns();
	s->conn_msg[0] = '\0';
	s->st.refused_cluster = false;
	if (s->target.cluster)
		log_info("redis cluster node %s: connected (%u slots)", n->name, n->slots);
	else if (s->target.sentinel)
		log_info("redis %s: connected to master %s", s->redis_addr, s->located);
	else
		log_info("redis %s: connected", s->redis_addr);
	load_scripts(n);
	/* The handshake answered: that is the breaker's probe. */
	breaker_success(n);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
	struct rnode *n = ac->data;
	struct sl_store *s;
	bool was_up;
	int i;

	if (!n)
		return;
	s = n->s;
	was_up = n->connected;
	if (!s->closing && was_up)
		log_warn("redis %s: disconnected%s%s", n->name, status ? ": " : "",
			 status ? ac->errstr : "");
	n->ac = NULL;
	n->connected = false;
	n->connecting = false;
	n->dropping = false;
	for (i = 0; i < MAX_SCRIPTS; i++)
		n->loaded[i] = false;
	if (!s->closing) {
		breaker_failure(n);
		if (s->target.cluster)
			s->map_stale = true;
	}
}

static void on_ignore(redisAsyncContext *ac, void *r, void *priv)
{
	(void)ac;
	(void)r;
	(void)priv;
}

/* Connect @n to @host:@port (or the Unix socket @host) and start the handshake. */
static void connect_at(struct rnode *n, const char *host, int port)
{
	struct sl_store *s = n->s;
	bool unix_sock = !s->target.cluster && s->target.unix_sock;
	redisAsyncContext *ac;
	const char *argv[3];
	int k;

	n->connecting = true;
	n->connect_started = now_ns();
	ac = unix_sock ? redisAsyncConnectUnix(host) : redisAsyncConnect(host, port);
	if (!ac || ac->err) {
		conn_log(s, false, "redis %s: cannot connect: %s", n->name,
			 ac ? ac->errstr : "out of memory");
		if (ac)
			redisAsyncFree(ac);
		n->connecting = false;
		s->st.errors++;
		n->errors++;
		breaker_failure(n);
		return;
	}
	ac->data = n;
	if (redisLibeventAttach(ac, s->base) != REDIS_OK) {
		redisAsyncFree(ac);
		n->connecting = false;
		breaker_failure(n);
		return;
	}
	redisAsyncSetConnectCallback(ac, on_connect);
	redisAsyncSetDisconnectCallback(ac, on_disconnect);
	n->ac = ac;
	n->dropping = false;
	/* AUTH before anything else, then INFO; queuing them also arms hiredis 0.14's write
	 * handler, the only place it reports a connection. */
	k = auth_argv(s->user, s->password, argv);
	if (k)
		redisAsyncCommandArgv(ac, on_hello, (void *)(long)HELLO_AUTH, k, argv, NULL);
	redisAsyncCommand(ac, on_hello, (void *)(long)HELLO_INFO, "INFO");
}

/* The node of @host:@port, made (unused, unconnected) when it is new and there is room. */
static struct rnode *node_get(struct sl_store *s, const char *host, int port, bool create)
{
	struct rnode *free_n = NULL;
	int i;

	for (i = 0; i < MAX_NODES; i++) {
		struct rnode *n = &s->node[i];

		if (n->name[0] && n->port == port && !strcmp(n->host, host))
			return n;
		if (!free_n && (!n->name[0] || (!n->used && !n->ac && !n->connecting)))
			free_n = n;
	}
	if (!create || !free_n || strlen(host) >= sizeof(free_n->host))
		return NULL;
	memset(free_n, 0, sizeof(*free_n));
	free_n->s = s;
	snprintf(free_n->host, sizeof(free_n->host), "%s", host);
	free_n->port = port;
	snprintf(free_n->name, sizeof(free_n->name), "%s%s%s:%d", strchr(host, ':') ? "[" : "",
		 host, strchr(host, ':') ? "]" : "", port);
	return free_n;
}

/* A cluster's map as read: each slot's node, masters gone from it disconnected. */
static void map_install(struct sl_store *s, const struct slotmap *m)
{
	uint8_t idx[MAX_NODES];
	bool changed = !s->map_known;
	char desc[512];
	size_t used = 0;
	int i, k;

	for (i = 0; i < m->n; i++) {
		struct rnode *n = node_get(s, m->at[i].host, m->at[i].port, true);

		idx[i] = n ? (uint8_t)(n - s->node) : NO_NODE;
		if (n && !n->used)
			changed = true;
		if (n)
			n->used = true;
	}
	for (k = 0; k < NSLOTS; k++) {
		uint8_t v = m->slot[k] == NO_NODE ? NO_NODE : idx[m->slot[k]];

		if (s->slot[k] != v)
			changed = true;
		s->slot[k] = v;
	}
	for (i = 0; i < MAX_NODES; i++)
		s->node[i].slots = 0;
	for (k = 0; k < NSLOTS; k++)
		if (s->slot[k] != NO_NODE)
			s->node[s->slot[k]].slots++;
	for (i = 0; i < MAX_NODES; i++) {
		struct rnode *n = &s->node[i];

		if (!n->used || n->slots)
			continue;
		/* No longer a master of any slot (resharded away, failed over, removed). */
		n->used = false;
		changed = true;
		if (n->ac) {
			redisAsyncContext *ac = n->ac;

			n->ac = NULL;
			n->connected = n->connecting = n->dropping = false;
			ac->data = NULL;
			redisAsyncFree(ac); /* its calls end with no reply: their fallbacks */
		}
		n->breaker = SL_BREAKER_CLOSED;
		n->failures = 0;
	}
	s->map_known = true;
	s->map_stale = false;
	s->map_at = now_ns();
	s->st.slots_covered = m->covered;
	if (!changed)
		return;
	for (i = 0; i < MAX_NODES && used < sizeof(desc); i++)
		if (s->node[i].used)
			used += (size_t)snprintf(desc + used, sizeof(desc) - used, "%s%s %u",
						 used ? ", " : "", s->node[i].name,
						 s->node[i].slots);
	log_info("redis cluster: slot map: %u of %d slots served (%s)", m->covered, NSLOTS,
		 used ? desc : "no master");
}

static void start_locate(struct sl_store *s);

static void on_located(evutil_socket_t fd, short what, void *arg)
{
	struct sl_store *s = arg;
	struct locate_job *j = s->job;
	struct rnode *n0 = &s->node[0];
	char b;
	ssize_t r;

	(void)what;
	r = read(fd, &b, 1);
	(void)r;
	event_free(s->job_ev);
	s->job_ev = NULL;
	s->job = NULL;
	if (s->target.cluster) {
		s->st.map_reads++;
		if (j->rc) {
			s->st.map_failures++;
			s->map_retry_at = now_ns() + MAP_RETRY_NS;
			conn_log(s, false, "redis cluster %s: %s", s->redis_addr, j->err);
			s->st.errors++;
		} else {
			map_install(s, &j->map);
		}
		job_put(j);
		return;
	}
	if (n0->ac || n0->connected) {
		job_put(j);
		return;
	}
	if (j->rc) {
		conn_log(s, false, "redis %s: %s", s->redis_addr, j->err);
		n0->connecting = false;
		s->st.errors++;
		breaker_failure(n0);
	} else {
		snprintf(s->located, sizeof(s->located), "%s%s%s:%d", strchr(j->host, ':') ? "[" : "",
			 j->host, strchr(j->host, ':') ? "]" : "", j->port);
		connect_at(n0, j->host, j->port);
	}
	job_put(j);
}

/* Locate Redis (or read a cluster's map) off the loop: a worker thread, its answer posted
 * back (on_located). */
static void start_locate(struct sl_store *s)
{
	struct locate_job *j = calloc(1, sizeof(*j));
	pthread_attr_t attr;
	pthread_t th;
	int rc, i;

	if (!j || pipe2(j->fd, O_CLOEXEC | O_NONBLOCK)) {
		free(j);
		goto failed;
	}
	j->refs = 2;
	j->t = s->target;
	/* Each sentinel's share of the second a connection gets. */
	j->timeout_ms = s->target.sentinel ?
		(uint32_t)(800 / (s->target.n_sentinels ? s->target.n_sentinels : 1)) : 500;
	if (s->target.cluster) {
		/* Each node asked (the masters last seen, then the seeds) gets a share. */
		j->known.n = 0;
		for (i = 0; i < MAX_NODES; i++) {
			struct rnode *n = &s->node[i];

			if (!n->used || strlen(n->host) >= sizeof(j->known.at[0].host))
				continue;
			snprintf(j->known.at[j->known.n].host, sizeof(j->known.at[0].host), "%s",
				 n->host);
			j->known.at[j->known.n++].port = n->port;
		}
		j->timeout_ms = 200;
		snprintf(j->user, sizeof(j->user), "%s", s->user);
		snprintf(j->password, sizeof(j->password), "%s", s->password);
	}
	s->job_ev = event_new(s->base, j->fd[0], EV_READ, on_located, s);
	if (!s->job_ev || event_add(s->job_ev, NULL)) {
		if (s->job_ev)
			event_free(s->job_ev);
		s->job_ev = NULL;
		j->refs = 1;
		job_put(j);
		goto failed;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	rc = pthread_create(&th, &attr, locate_thread, j);
	pthread_attr_destroy(&attr);
	if (rc) {
		event_free(s->job_ev);
		s->job_ev = NULL;
		j->refs = 1;
		job_put(j);
		goto failed;
	}
	s->job = j;
	return;
failed:
	if (s->target.cluster) {
		s->map_retry_at = now_ns() + MAP_RETRY_NS;
		return;
	}
	s->node[0].connecting = false;
	breaker_failure(&s->node[0]);
}

/* A cluster's map, read again when it is due and nothing else is out. */
static void map_refresh(struct sl_store *s, bool force)
{
	uint64_t now = now_ns();

	if (!s->target.cluster || s->job || s->closing || now < s->map_retry_at)
		return;
	if (!force && s->map_known && !s->map_stale && now - s->map_at < MAP_REFRESH_NS)
		return;
	start_locate(s);
}

static void connect_redis(struct sl_store *s)
{
	struct rnode *n = &s->node[0];

	if (n->ac || n->connecting || s->closing || !s->redis_addr[0])
		return;
	n->connecting = true;
	n->connect_started = now_ns();
	if (s->job)
		return; /* a lookup is still out (a resolver that hangs): its answer connects */
	if (s->target.unix_sock || (!s->target.sentinel && is_numeric(s->target.host))) {
		snprintf(s->located, sizeof(s->located), "%s", s->redis_addr);
		connect_at(n, s->target.host, s->target.port);
		return;
	}
	start_locate(s);
}

static void connect_node(struct rnode *n)
{
	struct sl_store *s = n->s;

	if (!s->target.cluster) {
		connect_redis(s);
		return;
	}
	if (n->ac || n->connecting || s->closing || !n->used)
		return;
	connect_at(n, n->host, n->port);
}

/* The node that serves @key now: the one server, or its slot's master (NULL: none known). */
static struct rnode *node_for(struct sl_store *s, const char *key)
{
	uint8_t i;

	if (!s->target.cluster)
		return &s->node[0];
	if (!s->map_known)
		return NULL;
	i = s->slot[sl_store_keyslot(key, strlen(key))];
	return i == NO_NODE ? NULL : &s->node[i];
}

/* Is any server answering? (A cluster's journal hands over what it can.) */
static bool any_up(const struct sl_store *s)
{
	int i;

	for (i = 0; i < MAX_NODES; i++)
		if (s->node[i].connected && s->node[i].breaker == SL_BREAKER_CLOSED)
			return true;
	return false;
}

static void finish_pending(struct pending *p)
{
	if (p->timer)
		event_free(p->timer);
	free(p->abuf);
	free(p);
}

/* Hand @j's contents to @p (one call at a time, and none while a timed-out call about the
 * key may still run: its late reply settles the journal first). */
static void journal_attach(struct sl_store *s, struct pending *p, uint64_t now)
{
	struct jent *j = journal_get(s, p->tenant, &p->l, p->key, false);

	if (!j || j->inflight || j->unsettled)
		return;
	p->j = j;
	j->inflight = true;
	p->pend_sent = j->pend > now ? j->pend - now : 0;
	p->clear_sent = j->clear;
	j->pend = 0;
	j->clear = false;
}

/* @p's reply (or its end without one): did what it carried land? */
static void journal_settle(struct sl_store *s, struct pending *p, bool landed)
{
	uint64_t now = now_ns();
	struct jent *j = p->j, *f = p->fell;

	if (j) {
		j->inflight = false;
		/* Not landed: it waits for the next hand-over, unless a clear came since (what
		 * it carried came before that clear, and goes with it). */
		if (!landed && !j->clear) {
			if (p->pend_sent)
				j->pend = tat_add(j->pend, now, p->pend_sent, true);
			j->clear = p->clear_sent;
		}
		p->j = NULL;
	}
	if (f) {
		/* The call timed out and the fallback charged its attempt here; if Redis took it
		 * after all, the journal must not hand it over again. */
		f->unsettled--;
		if (landed && p->cost > 0)
			f->pend = tat_add(f->pend, now,
					  sl_mul_sat((uint64_t)ceil(p->cost),
						     sl_gcra_emission(p->l.rate)), false);
		p->fell = NULL;
	}
	journal_tidy(s, j);
	if (f != j)
		journal_tidy(s, f);
}

static void pending_fail(struct pending *p)
{
	struct sl_store *s = p->s;

	if (p->raw)
		p->rcb(p->arg, NULL);
	else if (!p->sync)
		p->fell = answer_fallback(s, &p->l, p->tenant, p->key, p->cost, p->cb, p->arg);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct pending *p = arg;

	(void)fd;
	(void)what;
	if (p->done)
		return;
	p->done = true;
	if (!p->probe) {
		p->s->st.timeouts++;
		p->n->timeouts++;
	}
	breaker_failure(p->n);
	pending_fail(p);
	/* The reply, when it comes, frees p; until then Redis may still take the charge. */
	if (p->fell)
		p->fell->unsettled++;
}

static bool send_to(struct rnode *n, struct pending *p, bool asking);

/* A call follows at most this many redirects: a TRYAGAIN resent alone (below), then the
 * ASK that may bring. */
#define MAX_HOPS 2

/* A MOVED or ASK in reply to @p: followed once, to a master that is up, within @p's own
 * timeout. True when @p went out again (its reply comes later). */
static bool follow_redirect(struct sl_store *s, struct pending *p, const char *str)
{
	char host[200];
	struct rnode *t;
	bool moved;
	int slot, port;

	if (!s->target.cluster || !parse_redirect(str, &moved, &slot, host, sizeof(host), &port))
		return false;
	t = node_get(s, host, port, true);
	if (moved) {
		s->st.moved++;
		if (t) {
			if (s->slot[slot] != NO_NODE && s->node[s->slot[slot]].slots)
				s->node[s->slot[slot]].slots--;
			s->slot[slot] = (uint8_t)(t - s->node);
			t->slots++;
			t->used = true;
		}
		s->map_stale = true;
		map_refresh(s, true);
	} else {
		s->st.ask++;
	}
	if (!t)
		return false;
	if (!t->connected) {
		t->used = true;
		connect_node(t);
		return false;
	}
	if (p->done || p->hops >= MAX_HOPS || t->breaker != SL_BREAKER_CLOSED)
		return false;
	p->hops++;
	/* ASK: the slot is being migrated, its keys split between the two masters, and a
	 * script of two keys there gets TRYAGAIN until the move ends. A GCRA call goes with
	 * its counter's key alone, uncapped: exact and atomic, the live-key cap relaxed for
	 * new keys of this one slot while it moves (docs/operations.md, "Redis Cluster"). */
	if (!moved && !p->raw && p->script == s->gcra && p->nkeys == 2)
		p->nocap = true;
	return send_to(t, p, !moved);
}

/* What a capped counter's reply said of its tenant's live keys (and whether this check
 * was refused for them): the last count seen per (tenant, counter), for /metrics. */
static void live_note(struct sl_store *s, const struct pending *p, long long live, bool capped)
{
	struct sl_store_live *e = NULL;
	int i;

	if (live < 0 || !p->l.max_keys)
		return;
	for (i = 0; i < s->n_live; i++)
		if (!strcmp(s->live[i].tenant, p->tenant) &&
		    !strcmp(s->live[i].counter, p->l.name)) {
			e = &s->live[i];
			break;
		}
	if (!e) {
		if (s->n_live == SL_STORE_LIVE_MAX)
			return;
		e = &s->live[s->n_live++];
		snprintf(e->tenant, sizeof(e->tenant), "%s", p->tenant);
		snprintf(e->counter, sizeof(e->counter), "%s", p->l.name);
	}
	e->max_keys = p->l.max_keys;
	e->live = (uint64_t)live;
	if (capped)
		e->capped++;
}

int sl_store_live_keys(const struct sl_store *s, struct sl_store_live *out, int max)
{
	int i;

	for (i = 0; i < s->n_live && i < max; i++)
		out[i] = s->live[i];
	return s->n_live;
}

static void on_reply(redisAsyncContext *ac, void *r, void *priv)
{
	struct pending *p = priv;
	redisReply *reply = r;
	struct sl_store *s = p->s;
	struct rnode *n = p->n;
	bool landed;

	(void)ac;
	if (s->closing) {
		/* Tearing down: nobody is left to answer. */
		finish_pending(p);
		return;
	}
	if (reply)
		n->last_reply = now_ns();
	/* Before the journal is settled: a redirected call carries what it carried. */
	if (reply && reply->type == REDIS_REPLY_ERROR && !p->done &&
	    (!strncmp(reply->str, "MOVED ", 6) || !strncmp(reply->str, "ASK ", 4)) &&
	    follow_redirect(s, p, reply->str))
		return;
	/* TRYAGAIN: a slot being migrated holds some of the call's keys and not the others
	 * (Redis 7 says so on the source too). A GCRA call goes again to the same master with
	 * its counter's key alone, uncapped (as after an ASK, follow_redirect). */
	if (reply && reply->type == REDIS_REPLY_ERROR && !p->done && s->target.cluster &&
	    !strncmp(reply->str, "TRYAGAIN", 8) && !p->raw && p->script == s->gcra &&
	    p->nkeys == 2 && !p->nocap && p->hops < MAX_HOPS && n->connected) {
		p->nocap = true;
		p->hops++;
		if (send_to(n, p, false))
			return;
	}
	landed = !p->raw && reply && reply->type == REDIS_REPLY_ARRAY && reply->elements >= 4;
	if (landed) {
		long long debt = reply->element[3]->integer;
		uint64_t now = now_ns();

		/* What Redis holds now; a late reply only raises it (the fallback's charges
		 * since are in the mirror already). */
		mirror_set(s, p->tenant, &p->l, p->key,
			   debt > 0 ? now + (uint64_t)debt * 1000ull : now, p->done);
		if (reply->elements >= 6 && reply->element[5]->type == REDIS_REPLY_INTEGER &&
		    reply->element[5]->integer)
			s->st.keys_restored++;
		if (reply->elements >= 5 && reply->element[4]->type == REDIS_REPLY_INTEGER)
			live_note(s, p, reply->element[4]->integer,
				  reply->element[2]->type == REDIS_REPLY_INTEGER &&
				  reply->element[2]->integer);
	}
	/* A timed-out call's fallback has not been told yet (it is only counted once it
	 * answered), so a reply before its timer never has p->fell set. */
	if (!p->raw)
		journal_settle(s, p, landed);
	if (!p->done) {
		p->done = true;
		if (p->timer)
			event_del(p->timer);
		if (reply && reply->type == REDIS_REPLY_ERROR &&
		    !strncmp(reply->str, "NOSCRIPT", 8)) {
			/* The server lost its scripts (SCRIPT FLUSH, a restart behind a proxy, a
			 * failover): send them whole until they are loaded again. The server is
			 * fine, so the breaker is not told; this one call takes the fallback. */
			log_warn("redis %s: the server lost our scripts; loading them again",
				 n->name);
			if (n->ac)
				load_scripts(n);
			pending_fail(p);
		} else if (reply && reply->type == REDIS_REPLY_ERROR &&
			   (!strncmp(reply->str, "READONLY", 8) ||
			    !strncmp(reply->str, "NOAUTH", 6))) {
			/* A failover made our master a replica, or a restart brought a password:
			 * reconnect, which locates the master again and authenticates. */
			conn_log(s, false, "redis %s: %s from %s; reconnecting%s", n->name,
				 reply->str, s->target.cluster ? n->name : s->located,
				 s->target.sentinel ? " to the master the sentinels name" :
				 s->target.cluster ? " (and reading the slot map again)" : "");
			s->st.errors++;
			n->errors++;
			s->map_stale = true;
			drop_connection(n);
			pending_fail(p);
		} else if (reply && reply->type == REDIS_REPLY_ERROR && s->target.cluster &&
			   (!strncmp(reply->str, "MOVED ", 6) || !strncmp(reply->str, "ASK ", 4) ||
			    !strncmp(reply->str, "TRYAGAIN", 8) ||
			    !strncmp(reply->str, "CLUSTERDOWN", 11))) {
			/* A slot on the move (a redirect not followed: its target is down, or
			 * this was already one; TRYAGAIN: a migration split the call's keys),
			 * or a cluster that lost a slot's master: this call takes the fallback;
			 * the master is fine, so its breaker is not told. */
			char what[16];

			snprintf(what, sizeof(what), "%.*s", (int)strcspn(reply->str, " "),
				 reply->str);
			conn_log(s, false, "redis %s: %s for a slot on the move (or without a "
				 "master); those checks take their fallbacks", n->name, what);
			s->st.errors++;
			n->errors++;
			s->map_stale = true;
			pending_fail(p);
		} else if (reply && reply->type == REDIS_REPLY_ERROR &&
			   !strncmp(reply->str, "OOM", 3)) {
			/* Redis at maxmemory under noeviction: a script runs until it writes, so a
			 * spent key is still refused exactly (nothing to write) and only a charge
			 * that would pass fails here and takes its fallback. Redis answers: the
			 * breaker is not told, or every check of every key, spent ones included,
			 * would go to the fallbacks of nodes that never saw them (issue 16). */
			conn_log(s, false, "redis %s: %s; charges that would pass take their "
				 "fallbacks (and are handed over once Redis has room)", n->name,
				 reply->str);
			s->st.errors++;
			s->st.oom++;
			n->errors++;
			pending_fail(p);
		} else if (!reply || reply->type == REDIS_REPLY_ERROR) {
			if (reply && !s->closing)
				log_warn("redis %s: %s", n->name, reply->str);
			s->st.errors++;
			n->errors++;
			if (!s->closing)
				breaker_failure(n);
			pending_fail(p);
		} else if (p->raw) {
			breaker_success(n);
			p->rcb(p->arg, reply);
		} else if (landed) {
			breaker_success(n);
			s->st.exact++;
			if (p->sync) {
				/* a hand-over: nobody waits */
			} else {
				int ok = (int)reply->element[0]->integer;

				if (reply->element[2]->integer)
					s->st.keys_capped++;
				p->cb(p->arg, ok, (uint32_t)reply->element[1]->integer,
				      SL_ANS_EXACT);
			}
		} else {
			s->st.errors++;
			n->errors++;
			pending_fail(p);
		}
		/* A fallback charged after the reply came has no late reply to wait for. */
		p->fell = NULL;
	}
	finish_pending(p);
}

/* Send @p's script call to @n (ASKING first when @asking): EVALSHA once @n has loaded it,
 * the script itself until then. The timer runs from the first send. */
static bool send_to(struct rnode *n, struct pending *p, bool asking)
{
	struct sl_store *s = n->s;
	const char *args[16];
	size_t lens[16];
	char nk[8];
	int k = 0, i;

	if (!n->ac)
		return false;
	if (n->loaded[p->script] && s->scripts[p->script].sha[0]) {
		args[k++] = "EVALSHA";
		args[k++] = s->scripts[p->script].sha;
	} else {
		args[k++] = "EVAL";
		args[k++] = s->scripts[p->script].lua;
	}
	/* Without the cap's set: its one key only, and a cap of 0 (ARGV[4]). */
	snprintf(nk, sizeof(nk), "%d", p->nocap ? 1 : p->nkeys);
	args[k++] = nk;
	for (i = 0; i < k; i++)
		lens[i] = strlen(args[i]);
	for (i = 0; i < p->nkeys + p->nargs; i++) {
		if (p->nocap && i == 1)
			continue;
		args[k] = p->nocap && i == p->nkeys + 3 ? "0" : p->av[i];
		lens[k++] = p->nocap && i == p->nkeys + 3 ? 1 : p->al[i];
	}
	if (asking && redisAsyncCommand(n->ac, on_ignore, NULL, "ASKING") != REDIS_OK)
		return false;
	if (redisAsyncCommandArgv(n->ac, on_reply, p, k, args, lens) != REDIS_OK)
		return false;
	p->n = n;
	n->calls++;
	if (p->sync || p->timer)
		return true; /* a hand-over waits for its reply, whenever it comes */
	p->timer = evtimer_new(s->base, on_timeout, p);
	if (p->timer) {
		struct timeval tv = { .tv_sec = s->o.timeout_ms / 1000,
				      .tv_usec = (s->o.timeout_ms % 1000) * 1000 };

		evtimer_add(p->timer, &tv);
	}
	return true;
}

/* Send a script call to @n; false when it could not be sent (the caller answers). On a
 * cluster its keys must share one slot (a script runs on one master): the store's keys do,
 * by the tenant's hash tag; a call whose keys do not is refused here, loudly. */
static bool send_script(struct sl_store *s, struct rnode *n, int script, struct pending *p,
			int nkeys, const char **keys, int argc, const char **argv)
{
	size_t total = 0, off = 0;
	int i;

	if (script < 0 || script >= s->n_scripts || nkeys + argc + 3 > 16 || !n)
		return false;
	for (i = 1; s->target.cluster && i < nkeys; i++) {
		if (sl_store_keyslot(keys[i], strlen(keys[i])) !=
		    sl_store_keyslot(keys[0], strlen(keys[0]))) {
			log_error("redis: a script call's keys '%s' and '%s' are in different "
				  "slots; not sent (a bug: every key of a call carries the "
				  "tenant's hash tag)", keys[0], keys[i]);
			return false;
		}
	}
	for (i = 0; i < nkeys + argc; i++)
		total += strlen(i < nkeys ? keys[i] : argv[i - nkeys]) + 1;
	free(p->abuf);
	p->abuf = malloc(total ? total : 1);
	if (!p->abuf)
		return false;
	for (i = 0; i < nkeys + argc; i++) {
		const char *a = i < nkeys ? keys[i] : argv[i - nkeys];
		size_t l = strlen(a);

		memcpy(p->abuf + off, a, l + 1);
		p->av[i] = p->abuf + off;
		p->al[i] = l;
		off += l + 1;
	}
	p->script = script;
	p->nkeys = nkeys;
	p->nargs = argc;
	return send_to(n, p, false);
}

/* @p's GCRA call, with what this node knows of its key that Redis may not; false when
 * its server cannot be asked now (what the journal gave it is put back). */
static bool send_gcra(struct sl_store *s, struct pending *p)
{
	char k[KEY_MAX], zk[KEY_MAX], a[8][32];
	const char *keys[2] = { k, zk };
	const char *argv[8] = { a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7] };
	uint64_t T = sl_gcra_emission(p->l.rate), now = now_ns();
	bool prior;
	uint64_t known = mirror_get_prior(s, p->tenant, &p->l, p->key, &prior);
	struct rnode *n;

	snprintf(k, sizeof(k), "%s:{%s}:%s:%s", s->prefix, p->tenant, p->l.name, p->key);
	snprintf(zk, sizeof(zk), "%s:{%s}:%s:live", s->prefix, p->tenant, p->l.name);
	n = node_for(s, k);
	if (!breaker_allows(s, n))
		return false;
	journal_attach(s, p, now);
	snprintf(a[0], sizeof(a[0]), "%.3f", (double)T / 1000.0);
	snprintf(a[1], sizeof(a[1]), "%.3f",
		 (double)sl_gcra_tolerance(p->l.burst, T) / 1000.0);
	snprintf(a[2], sizeof(a[2]), "%.6g", p->cost);
	snprintf(a[3], sizeof(a[3]), "%u", p->l.max_keys);
	snprintf(a[4], sizeof(a[4]), "%llu",
		 (unsigned long long)(known > now ? (known - now) / 1000 : 0));
	snprintf(a[5], sizeof(a[5]), "%llu", (unsigned long long)(p->pend_sent / 1000));
	snprintf(a[6], sizeof(a[6]), "%d", p->clear_sent ? 1 : 0);
	snprintf(a[7], sizeof(a[7]), "%d", prior ? 1 : 0);
	/* The live-key set only when a cap uses it: a call of one key runs on a slot being
	 * migrated (ASK), where one of two keys, missing on the target, gets TRYAGAIN. */
	if (send_script(s, n, s->gcra, p, p->l.max_keys ? 2 : 1, keys, 8, argv))
		return true;
	s->st.errors++;
	n->errors++;
	breaker_failure(n);
	journal_settle(s, p, false);
	return false;
}

/* Hand @j over to Redis on its own (nobody has asked its key since the outage). */
static void journal_send(struct sl_store *s, struct jent *j)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (!p)
		return;
	p->s = s;
	p->sync = true;
	p->l = (struct sl_limit){ .name = j->name, .rate = j->rate, .burst = j->burst,
				  .max_keys = j->max_keys };
	snprintf(p->tenant, sizeof(p->tenant), "%s", j->tenant);
	snprintf(p->key, sizeof(p->key), "%s", j->key);
	/* Not sent (send_gcra has put back what it carried): it waits for the next flush. */
	if (!send_gcra(s, p))
		finish_pending(p);
}

/* Hand over what the journal holds, a few buckets a tick, while Redis answers. */
static void journal_flush(struct sl_store *s)
{
	uint32_t sent = 0, scanned = 0;

	while (s->st.journal && any_up(s) && sent < FLUSH_PER_TICK &&
	       scanned < JOURNAL_BUCKETS) {
		struct jent *j = s->jb[s->jcur], *next;

		for (; j; j = next) {
			next = j->next;
			if (j->inflight || j->unsettled)
				continue;
			if (!j->clear && j->pend <= now_ns()) {
				journal_tidy(s, j);
				continue;
			}
			if (s->target.cluster) {
				/* Only to a master that answers: the others' entries wait. */
				char k[KEY_MAX];
				struct rnode *n;

				snprintf(k, sizeof(k), "{%s}", j->tenant);
				n = node_for(s, k);
				if (!n || !n->connected || n->breaker != SL_BREAKER_CLOSED)
					continue;
			}
			journal_send(s, j);
			sent++;
		}
		s->jcur = (s->jcur + 1) & (JOURNAL_BUCKETS - 1);
		scanned++;
	}
}

void sl_store_charge(struct sl_store *s, const struct sl_limit *l, const char *tenant,
		     const char *key, double cost, sl_store_cb cb, void *arg)
{
	struct pending *p;

	s->st.calls++;
	if (!s->redis_addr[0]) {
		uint32_t retry = 0;
		int ok;

		ok = local_charge(s, TK_EXACT, tenant, l, key, l->rate, l->burst, cost, 0, &retry);
		s->st.exact++;
		cb(arg, ok, retry, SL_ANS_EXACT);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		answer_fallback(s, l, tenant, key, cost, cb, arg);
		return;
	}
	p->s = s;
	p->cb = cb;
	p->arg = arg;
	p->l = *l;
	p->cost = cost;
	snprintf(p->tenant, sizeof(p->tenant), "%s", tenant);
	snprintf(p->key, sizeof(p->key), "%s", key);
	if (!send_gcra(s, p)) {
		/* Its server's breaker is open, it is not connected, or the call could not
		 * be sent (send_gcra told the breaker). */
		s->st.short_circuits++;
		finish_pending(p);
		answer_fallback(s, l, tenant, key, cost, cb, arg);
	}
}

void sl_store_clear(struct sl_store *s, const struct sl_limit *l, const char *tenant,
		    const char *key)
{
	uint64_t now = now_ns(), h = key_hash(s, key);
	struct jent *j;
	uint8_t kind;

	/* The local tables too: a fallback answer may have charged them. The slot stays the
	 * key's, refilled: its own record answers for it, not a floor. */
	for (kind = TK_EXACT; kind <= TK_MIRROR; kind++) {
		struct table *t = table_of(s, kind, tenant, l, false);
		struct slot *e;
		struct where w;

		if (!t)
			continue;
		e = slot_find(t, h, &w);
		if (e && e->tat > now)
			e->tat = now;
	}
	if (!s->redis_addr[0])
		return;
	/* Through the journal: the clear lands after whatever Redis still has queued for the
	 * key, and is handed over later if Redis cannot take it now. */
	j = journal_get(s, tenant, l, key, true);
	if (!j) {
		char k[KEY_MAX];
		struct rnode *n;

		snprintf(k, sizeof(k), "%s:{%s}:%s:%s", s->prefix, tenant, l->name, key);
		n = node_for(s, k);
		if (n && n->connected && n->breaker == SL_BREAKER_CLOSED)
			redisAsyncCommand(n->ac, on_ignore, NULL, "DEL %s", k);
		return;
	}
	j->clear = true;
	j->pend = 0;
	if (!j->inflight && !j->unsettled) {
		char k[KEY_MAX];
		struct rnode *n;

		snprintf(k, sizeof(k), "{%s}", tenant);
		n = node_for(s, k);
		if (n && n->connected && n->breaker == SL_BREAKER_CLOSED)
			journal_send(s, j);
	}
}

int sl_store_script(struct sl_store *s, const char *lua)
{
	int i;

	if (s->n_scripts >= MAX_SCRIPTS)
		return -ENOSPC;
	s->scripts[s->n_scripts].lua = strdup(lua);
	if (!s->scripts[s->n_scripts].lua)
		return -ENOMEM;
	s->scripts[s->n_scripts].sha[0] = '\0';
	for (i = 0; i < MAX_NODES; i++) {
		struct rnode *n = &s->node[i];

		n->loaded[s->n_scripts] = false;
		if (n->connected && n->ac)
			redisAsyncCommand(n->ac, on_script_loaded, (void *)(long)s->n_scripts,
					  "SCRIPT LOAD %s", lua);
	}
	return s->n_scripts++;
}

void sl_store_eval(struct sl_store *s, int script, const char *key, int argc,
		   const char **argv, sl_store_raw_cb cb, void *arg)
{
	struct rnode *n = s->redis_addr[0] ? node_for(s, key) : NULL;
	struct pending *p;

	s->st.calls++;
	if (!s->redis_addr[0] || !breaker_allows(s, n)) {
		if (s->redis_addr[0])
			s->st.short_circuits++;
		cb(arg, NULL);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		cb(arg, NULL);
		return;
	}
	p->s = s;
	p->raw = true;
	p->rcb = cb;
	p->arg = arg;
	if (!send_script(s, n, script, p, 1, &key, argc, argv)) {
		s->st.errors++;
		n->errors++;
		breaker_failure(n);
		finish_pending(p);
		cb(arg, NULL);
	}
}

static void on_probe(void *arg, redisReply *reply)
{
	(void)arg;
	(void)reply; /* on_reply and on_timeout have told the breaker */
}

/* Half-open: one PING of the store's own, with the checks' timeout (at least 20 ms, so a
 * busy host's scheduling alone does not keep the breaker open). */
static void send_probe(struct rnode *n)
{
	struct sl_store *s = n->s;
	struct pending *p = calloc(1, sizeof(*p));
	uint32_t ms = s->o.timeout_ms < 20 ? 20 : s->o.timeout_ms;
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (long)(ms % 1000) * 1000 };

	if (!p)
		return;
	p->s = s;
	p->n = n;
	p->raw = true;
	p->probe = true;
	p->rcb = on_probe;
	n->breaker = SL_BREAKER_HALF_OPEN;
	if (redisAsyncCommand(n->ac, on_reply, p, "PING") != REDIS_OK) {
		free(p);
		breaker_failure(n);
		return;
	}
	p->timer = evtimer_new(s->base, on_timeout, p);
	if (p->timer)
		evtimer_add(p->timer, &tv);
}

/* One server's share of the tick: a connection that does not come up, one gone silent,
 * the breaker's probe, a reconnect. */
static void node_tick(struct sl_store *s, struct rnode *n)
{
	/* A connection that has not come up in a second (located, connected, authenticated,
	 * INFO answered) is given up and tried again; a lookup still out keeps its thread,
	 * and its answer serves the next try. */
	if (n->connecting && now_ns() - n->connect_started > 1000000000ull) {
		redisAsyncContext *ac = n->ac;

		if (!ac && s->job && !s->target.cluster)
			conn_log(s, false, "redis %s: %s has not answered in 1 s; counters use "
				 "their fallbacks", s->redis_addr, s->target.sentinel ?
				 "no sentinel" : "the resolver");
		else if (ac)
			conn_log(s, false, "redis %s: no connection to %s in 1 s", n->name,
				 s->target.cluster ? n->name : s->located);
		n->ac = NULL;
		n->connecting = false;
		n->dropping = false;
		if (ac) {
			ac->data = NULL;
			redisAsyncFree(ac);
		}
		s->st.errors++;
		n->errors++;
		breaker_failure(n);
	}
	/* A connection that has answered nothing for STALE_NS while the breaker is open is
	 * dropped: a master that hangs or is cut off keeps its socket open, and only a new
	 * connection asks the sentinels (or the resolver) again. Its unanswered calls end
	 * here (their fallbacks have answered; the journal hands their charges over). */
	if (n->connected && n->ac && n->breaker != SL_BREAKER_CLOSED &&
	    now_ns() - n->last_reply > STALE_NS) {
		redisAsyncContext *ac = n->ac;

		conn_log(s, false, "redis %s: %s has answered nothing in %llu s; reconnecting",
			 n->name, s->target.cluster ? n->name : s->located,
			 (unsigned long long)(STALE_NS / 1000000000ull));
		redisAsyncFree(ac); /* on_disconnect resets the state */
		if (n->ac == ac) {
			n->ac = NULL;
			n->connected = false;
		}
	}
	/* The breaker's probe, on the store's own time: a PING on a live connection, or a new
	 * connection (whose handshake is the probe). */
	if (n->breaker == SL_BREAKER_OPEN && now_ns() >= n->open_until) {
		if (n->connected)
			send_probe(n);
		else
			n->breaker = SL_BREAKER_HALF_OPEN;
	}
	if (!n->connected && !n->connecting && n->breaker != SL_BREAKER_OPEN)
		connect_node(n);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct sl_store *s = arg;
	int i;

	(void)fd;
	(void)what;
	if (!s->target.cluster) {
		node_tick(s, &s->node[0]);
	} else {
		for (i = 0; i < MAX_NODES; i++)
			if (s->node[i].used)
				node_tick(s, &s->node[i]);
		map_refresh(s, false);
	}
	journal_flush(s);
}

struct sl_store *sl_store_new(struct event_base *base, const struct sl_store_opts *o,
			      char *err, size_t errlen)
{
	struct sl_store *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (sodium_init() < 0) {
		snprintf(err, errlen, "libsodium cannot initialise");
		free(s);
		return NULL;
	}
	s->base = base;
	s->o = *o;
	if (!s->o.timeout_ms)
		s->o.timeout_ms = 5;
	if (!s->o.breaker_open_ms)
		s->o.breaker_open_ms = 1000;
	snprintf(s->prefix, sizeof(s->prefix), "%s", o->prefix ? o->prefix : "sluice");
	snprintf(s->redis_addr, sizeof(s->redis_addr), "%s", o->redis ? o->redis : "");
	memset(s->slot, NO_NODE, sizeof(s->slot));
	s->node[0].s = s;
	snprintf(s->node[0].name, sizeof(s->node[0].name), "%s", s->redis_addr);
	if (s->redis_addr[0]) {
		const char *user = o->user, *pw = o->password;

		if (sl_store_target_parse(s->redis_addr, &s->target)) {
			snprintf(err, errlen, "'%s' is not a Redis address", s->redis_addr);
			free(s);
			return NULL;
		}
		if (!user && !pw)
			sl_store_auth_lookup(s->redis_addr, &user, &pw);
		snprintf(s->user, sizeof(s->user), "%s", user ? user : "");
		snprintf(s->password, sizeof(s->password), "%s", pw ? pw : "");
		if (s->target.cluster)
			s->node[0].name[0] = '\0'; /* the map names the masters */
	}
	s->o.user = s->o.password = NULL;
	randombytes_buf(s->hkey, sizeof(s->hkey));
	s->dir_cap = 64;
	s->dir = calloc(s->dir_cap, sizeof(*s->dir));
	if (!s->dir) {
		snprintf(err, errlen, "out of memory");
		free(s);
		return NULL;
	}
	s->gcra = sl_store_script(s, gcra_lua);
	if (s->redis_addr[0]) {
		struct timeval tv = { .tv_sec = 0, .tv_usec = 100000 };

		s->tick = event_new(base, -1, EV_PERSIST, on_tick, s);
		if (s->tick)
			event_add(s->tick, &tv);
		if (s->target.cluster)
			map_refresh(s, true);
		else
			connect_redis(s);
	}
	return s;
}

void sl_store_free(struct sl_store *s)
{
	size_t j;
	int i;

	if (!s)
		return;
	s->closing = true;
	if (s->tick)
		event_free(s->tick);
	if (s->job_ev)
		event_free(s->job_ev);
	if (s->job)
		job_put(s->job); /* its thread frees it when its lookup returns */
	for (i = 0; i < MAX_NODES; i++)
		if (s->node[i].ac)
			redisAsyncFree(s->node[i].ac);
	for (i = 0; i < s->n_scripts; i++)
		free(s->scripts[i].lua);
	for (j = 0; j < s->dir_cap; j++)
		table_free(s->dir[j]);
	for (j = 0; j < JOURNAL_BUCKETS; j++) {
		while (s->jb[j]) {
			struct jent *e = s->jb[j];

			s->jb[j] = e->next;
			free(e);
		}
	}
	free(s->dir);
	sodium_memzero(s->password, sizeof(s->password));
	free(s);
}

void sl_store_get_stats(const struct sl_store *s, struct sl_store_stats *st)
{
	int i;

	*st = s->st;
	st->redis = s->redis_addr[0] != '\0';
	st->cluster = s->target.cluster;
	if (!s->target.cluster) {
		st->breaker = s->node[0].breaker;
		st->connected = s->node[0].connected;
		return;
	}
	/* A cluster is connected when every master of its map is; its breaker is the worst. */
	st->connected = s->map_known && st->slots_covered == NSLOTS;
	st->breaker = SL_BREAKER_CLOSED;
	for (i = 0; i < MAX_NODES; i++) {
		const struct rnode *n = &s->node[i];

		if (!n->used)
			continue;
		if (!n->connected)
			st->connected = false;
		if (n->breaker == SL_BREAKER_OPEN ||
		    (n->breaker == SL_BREAKER_HALF_OPEN && st->breaker == SL_BREAKER_CLOSED))
			st->breaker = n->breaker;
	}
}

int sl_store_nodes(const struct sl_store *s, struct sl_store_node *out, int max)
{
	int i, k = 0;

	for (i = 0; i < MAX_NODES; i++) {
		const struct rnode *n = &s->node[i];

		if (s->target.cluster ? !n->used : (i > 0 || !s->redis_addr[0]))
			continue;
		if (k < max) {
			snprintf(out[k].name, sizeof(out[k].name), "%s", n->name);
			out[k].connected = n->connected;
			out[k].breaker = n->breaker;
			out[k].slots = s->target.cluster ? n->slots : NSLOTS;
			out[k].calls = n->calls;
			out[k].errors = n->errors;
			out[k].timeouts = n->timeouts;
		}
		k++;
	}
	return k;
}

void sl_store_describe_nodes(const struct sl_store *s, char *buf, size_t len, bool json)
{
	struct sl_store_node nd[MAX_NODES];
	int i, n = sl_store_nodes(s, nd, MAX_NODES);
	size_t used = 0;

	if (!len)
		return;
	buf[0] = '\0';
	if (json)
		used += (size_t)snprintf(buf, len, "[");
	for (i = 0; i < n && used < len; i++) {
		if (json)
			used += (size_t)snprintf(buf + used, len - used,
						 "%s{\"server\":\"%s\",\"connected\":%s,"
						 "\"breaker\":\"%s\",\"slots\":%u,\"calls\":%llu,"
						 "\"errors\":%llu,\"timeouts\":%llu}", i ? "," : "",
						 nd[i].name, nd[i].connected ? "true" : "false",
						 sl_breaker_name(nd[i].breaker), nd[i].slots,
						 (unsigned long long)nd[i].calls,
						 (unsigned long long)nd[i].errors,
						 (unsigned long long)nd[i].timeouts);
		else
			used += (size_t)snprintf(buf + used, len - used,
						 "  redis server %s: %s, breaker %s, %u slots, %llu "
						 "calls, %llu errors, %llu timed out\n", nd[i].name,
						 nd[i].connected ? "connected" : "NOT CONNECTED",
						 sl_breaker_name(nd[i].breaker), nd[i].slots,
						 (unsigned long long)nd[i].calls,
						 (unsigned long long)nd[i].errors,
						 (unsigned long long)nd[i].timeouts);
	}
	if (json && used < len)
		snprintf(buf + used, len - used, "]");
}
