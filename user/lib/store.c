// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The counter store (see store.h): an in-process GCRA table, and a Redis client on the
 * caller's libevent loop with per-call timeouts, a circuit breaker and per-counter fallbacks.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <sodium.h>

#include "log.h"
#include "store.h"
#include "sluice/gcra.h"

#define KEY_MAX 192
#define MAX_SCRIPTS 4
#define PROBE 16 /* slots looked at before the in-process table evicts */

/*
 * GCRA in one round trip, atomically: one value per key (its TAT in microseconds of the
 * server's clock), a TTL that lets a full bucket disappear, and an optional cap on a tenant's
 * live keys kept in a sorted set scored by expiry. Returns {allowed, retry_ms, capped}.
 */
static const char gcra_lua[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local T, tau, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])\n"
	"local cap = tonumber(ARGV[4])\n"
	"local cur = redis.call('GET', KEYS[1])\n"
	"if cost < 0 then\n"
	"  if cur then\n"
	"    local back = tonumber(cur) + cost * T\n"
	"    if back > now then\n"
	"      redis.call('SET', KEYS[1], string.format('%.0f', back), 'PX',\n"
	"                 math.ceil((back - now) / 1000) + 1)\n"
	"    else\n"
	"      redis.call('DEL', KEYS[1])\n"
	"      if cap > 0 then redis.call('ZREM', KEYS[2], KEYS[1]) end\n"
	"    end\n"
	"  end\n"
	"  return {1, 0, 0}\n"
	"end\n"
	"local tat = now\n"
	"if cur then tat = tonumber(cur) end\n"
	"if tat > now + tau then tat = now + tau end\n"
	"local base = tat\n"
	"if base < now then base = now end\n"
	"local nxt = base + math.max(cost, 1) * T\n"
	"if nxt - now > tau then\n"
	"  return {0, math.ceil((nxt - now - tau) / 1000), 0}\n"
	"end\n"
	"if cost == 0 then return {1, 0, 0} end\n"
	"if cap > 0 and not cur then\n"
	"  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)\n"
	"  if redis.call('ZCARD', KEYS[2]) >= cap then return {0, 1000, 1} end\n"
	"end\n"
	"local ttl = math.ceil((nxt - now) / 1000) + 1\n"
	"redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', ttl)\n"
	"if cap > 0 then\n"
	"  redis.call('ZADD', KEYS[2], nxt, KEYS[1])\n"
	"  redis.call('PEXPIRE', KEYS[2], ttl + 60000)\n"
	"end\n"
	"return {1, 0, 0}\n";

struct entry {
	char key[KEY_MAX];
	uint64_t tat; /* ns, CLOCK_MONOTONIC; 0: empty */
};

struct script {
	char *lua;
	char sha[48];
};

struct sl_store {
	struct event_base *base;
	struct sl_store_opts o;
	char redis_addr[256];
	char prefix[64];
	redisAsyncContext *ac;
	bool connected, connecting;
	uint64_t connect_started; /* ns */
	uint8_t breaker;
	uint32_t failures;
	uint64_t open_until;  /* ns */
	bool probing;         /* half-open: one call is out */
	struct event *tick;
	struct script scripts[MAX_SCRIPTS];
	int n_scripts;
	int gcra;             /* index of the GCRA script */
	struct entry *tab;
	size_t cap;           /* power of two */
	struct sl_store_stats st;
	bool closing;
};

struct pending {
	struct sl_store *s;
	struct event *timer;
	bool done;
	bool raw;
	sl_store_cb cb;
	sl_store_raw_cb rcb;
	void *arg;
	struct sl_limit l;
	char tenant[64];
	char key[KEY_MAX];
	double cost;
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

/* ---- the in-process table ------------------------------------------------------------ */

static uint64_t fnv(const char *k)
{
	uint64_t h = 1469598103934665603ull;

	for (; *k; k++)
		h = (h ^ (uint8_t)*k) * 1099511628211ull;
	return h;
}

/*
 * Charge the in-process bucket of @key. The table is bounded: a new key takes an empty slot
 * in its probe window, or one whose bucket has refilled (nothing lost), or else the least
 * spent one (it forgets the least).
 */
static int local_charge(struct sl_store *s, const char *key, double rate, double burst,
			double cost, uint32_t *retry_ms)
{
	uint64_t T = sl_gcra_emission(rate), tau = sl_gcra_tolerance(burst, T), now = now_ns();
	uint64_t h = fnv(key);
	__u64 next = 0;
	size_t i, victim = SIZE_MAX, empty = SIZE_MAX;
	uint64_t victim_tat = UINT64_MAX;
	struct entry *e = NULL;
	uint64_t units;
	int ok;

	for (i = 0; i < PROBE; i++) {
		struct entry *c = &s->tab[(h + i) & (s->cap - 1)];

		if (c->tat && !strcmp(c->key, key)) {
			e = c;
			break;
		}
		if (!c->tat || c->tat <= now) {
			if (empty == SIZE_MAX)
				empty = (h + i) & (s->cap - 1);
		} else if (c->tat < victim_tat) {
			victim_tat = c->tat;
			victim = (h + i) & (s->cap - 1);
		}
	}
	if (!e && cost <= 0) {
		*retry_ms = 0; /* a peek at, or a refund to, a key nobody charged */
		return 1;
	}
	if (cost < 0) {
		uint64_t back = (uint64_t)ceil(-cost) * T;

		e->tat = e->tat > now + back ? e->tat - back : now;
		*retry_ms = 0;
		return 1;
	}
	if (!e) {
		size_t slot = empty != SIZE_MAX ? empty : victim;

		e = &s->tab[slot];
		if (!e->tat || e->tat <= now)
			s->st.local_keys += e->tat ? 0 : 1;
		snprintf(e->key, sizeof(e->key), "%s", key);
		e->tat = now;
	}
	/* A peek (cost 0) asks about one unit and writes nothing. */
	units = cost > 0 ? (uint64_t)ceil(cost) : 1;
	ok = sl_gcra_charge(e->tat, now, units, T, tau, &next);
	if (ok && cost > 0)
		e->tat = next ? next : 1;
	if (ok) {
		*retry_ms = 0;
	} else {
		uint64_t over = (e->tat > now ? e->tat : now) + units * T - now;

		*retry_ms = over > tau ? (uint32_t)((over - tau + 999999) / 1000000) : 0;
	}
	return ok;
}

static void answer_fallback(struct sl_store *s, const struct sl_limit *l, const char *tenant,
			    const char *key, double cost, sl_store_cb cb, void *arg)
{
	char k[KEY_MAX];
	uint32_t retry = 0;
	int ok;

	if (l->fail == SL_FAIL_CLOSED) {
		snprintf(k, sizeof(k), "S|%s|%s|%s", tenant, l->name, key);
		ok = local_charge(s, k, l->static_rate, l->static_burst, cost, &retry);
		s->st.fallback_static++;
		cb(arg, ok, retry, SL_ANS_STATIC);
	} else {
		double n = s->o.nodes ? s->o.nodes : 1;

		snprintf(k, sizeof(k), "L|%s|%s|%s", tenant, l->name, key);
		ok = local_charge(s, k, l->rate / n, l->burst / n < 1 ? 1 : l->burst / n, cost,
				  &retry);
		s->st.fallback_local++;
		cb(arg, ok, retry, SL_ANS_LOCAL);
	}
}

/* ---- the breaker ------------------------------------------------------------------- */

static void breaker_failure(struct sl_store *s)
{
	s->probing = false;
	if (s->breaker == SL_BREAKER_HALF_OPEN ||
	    ++s->failures >= (s->o.breaker_failures ? s->o.breaker_failures : 3)) {
		if (s->breaker != SL_BREAKER_OPEN)
			log_warn("redis %s: breaker open after %u failure(s); counters fall back "
				 "for %u ms", s->redis_addr, s->failures, s->o.breaker_open_ms);
		s->breaker = SL_BREAKER_OPEN;
		s->open_until = now_ns() + (uint64_t)s->o.breaker_open_ms * 1000000ull;
	}
}

static void breaker_success(struct sl_store *s)
{
	if (s->breaker != SL_BREAKER_CLOSED)
		log_info("redis %s: answering again; breaker closed", s->redis_addr);
	s->breaker = SL_BREAKER_CLOSED;
	s->failures = 0;
	s->probing = false;
}

static void connect_redis(struct sl_store *s);

/* May a call go to Redis now? Half-open lets exactly one through. */
static bool breaker_allows(struct sl_store *s)
{
	if (s->breaker == SL_BREAKER_OPEN) {
		if (now_ns() < s->open_until)
			return false;
		s->breaker = SL_BREAKER_HALF_OPEN;
	}
	if (!s->connected) {
		connect_redis(s);
		return false;
	}
	if (s->breaker == SL_BREAKER_HALF_OPEN) {
		if (s->probing)
			return false;
		s->probing = true;
	}
	return true;
}

/* ---- the Redis client ------------------------------------------------------------- */

static void on_script_loaded(redisAsyncContext *ac, void *r, void *priv)
{
	redisReply *reply = r;
	struct sl_store *s = ac->data;
	long idx = (long)priv;

	if (!s || !reply || reply->type != REDIS_REPLY_STRING || idx < 0 || idx >= s->n_scripts)
		return;
	snprintf(s->scripts[idx].sha, sizeof(s->scripts[idx].sha), "%s", reply->str);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
	struct sl_store *s = ac->data;
	long i;

	if (!s)
		return;
	s->connecting = false;
	if (status != REDIS_OK) {
		log_warn("redis %s: cannot connect: %s", s->redis_addr, ac->errstr);
		s->ac = NULL; /* hiredis frees it */
		s->st.errors++;
		breaker_failure(s);
		return;
	}
	s->connected = true;
	log_info("redis %s: connected", s->redis_addr);
	for (i = 0; i < s->n_scripts; i++)
		redisAsyncCommand((redisAsyncContext *)ac, on_script_loaded, (void *)i,
				  "SCRIPT LOAD %s", s->scripts[i].lua);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
	struct sl_store *s = ac->data;
	int i;

	if (!s)
		return;
	if (!s->closing)
		log_warn("redis %s: disconnected%s%s", s->redis_addr, status ? ": " : "",
			 status ? ac->errstr : "");
	s->ac = NULL;
	s->connected = false;
	s->connecting = false;
	for (i = 0; i < s->n_scripts; i++)
		s->scripts[i].sha[0] = '\0';
	if (!s->closing)
		breaker_failure(s);
}

static void on_ignore(redisAsyncContext *ac, void *r, void *priv)
{
	(void)ac;
	(void)r;
	(void)priv;
}

static void connect_redis(struct sl_store *s)
{
	redisAsyncContext *ac;

	if (s->ac || s->connecting || s->closing)
		return;
	if (!strncmp(s->redis_addr, "unix:", 5)) {
		ac = redisAsyncConnectUnix(s->redis_addr + 5);
	} else {
		char host[200];
		const char *colon = strrchr(s->redis_addr, ':');
		int port = colon ? atoi(colon + 1) : 6379;
		size_t n = colon ? (size_t)(colon - s->redis_addr) : strlen(s->redis_addr);

		if (n >= sizeof(host))
			n = sizeof(host) - 1;
		memcpy(host, s->redis_addr, n);
		host[n] = '\0';
		ac = redisAsyncConnect(host, port);
	}
	if (!ac || ac->err) {
		if (s->breaker != SL_BREAKER_OPEN)
			log_warn("redis %s: cannot connect: %s", s->redis_addr,
				 ac ? ac->errstr : "out of memory");
		if (ac)
			redisAsyncFree(ac);
		s->st.errors++;
		breaker_failure(s);
		return;
	}
	ac->data = s;
	if (redisLibeventAttach(ac, s->base) != REDIS_OK) {
		redisAsyncFree(ac);
		breaker_failure(s);
		return;
	}
	redisAsyncSetConnectCallback(ac, on_connect);
	redisAsyncSetDisconnectCallback(ac, on_disconnect);
	s->ac = ac;
	s->connecting = true;
	s->connect_started = now_ns();
	/* hiredis 0.14 reports a connection only from its write handler, which nothing arms
	 * until a command is queued: queue one. */
	redisAsyncCommand(ac, on_ignore, NULL, "PING");
}

static void finish_pending(struct pending *p)
{
	if (p->timer)
		event_free(p->timer);
	free(p);
}

static void pending_fail(struct pending *p)
{
	struct sl_store *s = p->s;

	if (p->raw)
		p->rcb(p->arg, NULL);
	else
		answer_fallback(s, &p->l, p->tenant, p->key, p->cost, p->cb, p->arg);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct pending *p = arg;

	(void)fd;
	(void)what;
	if (p->done)
		return;
	p->done = true;
	p->s->st.timeouts++;
	breaker_failure(p->s);
	pending_fail(p);
	/* The reply, when it comes, frees p. */
}

static void on_reply(redisAsyncContext *ac, void *r, void *priv)
{
	struct pending *p = priv;
	redisReply *reply = r;
	struct sl_store *s = p->s;

	(void)ac;
	if (s->closing) {
		/* Tearing down: nobody is left to answer. */
		finish_pending(p);
		return;
	}
	if (!p->done) {
		p->done = true;
		if (p->timer)
			event_del(p->timer);
		if (reply && reply->type == REDIS_REPLY_ERROR &&
		    !strncmp(reply->str, "NOSCRIPT", 8)) {
			/* The server lost its scripts (SCRIPT FLUSH, a restart behind a proxy, a
			 * failover): send them whole until they are loaded again. The server is
			 * fine, so the breaker is not told; this one call takes the fallback. */
			long i;

			log_warn("redis %s: the server lost our scripts; loading them again",
				 s->redis_addr);
			for (i = 0; i < s->n_scripts; i++) {
				s->scripts[i].sha[0] = '\0';
				redisAsyncCommand(s->ac, on_script_loaded, (void *)i,
						  "SCRIPT LOAD %s", s->scripts[i].lua);
			}
			pending_fail(p);
		} else if (!reply || reply->type == REDIS_REPLY_ERROR) {
			if (reply && !s->closing)
				log_warn("redis %s: %s", s->redis_addr, reply->str);
			s->st.errors++;
			if (!s->closing)
				breaker_failure(s);
			pending_fail(p);
		} else if (p->raw) {
			breaker_success(s);
			p->rcb(p->arg, reply);
		} else if (reply->type == REDIS_REPLY_ARRAY && reply->elements >= 3) {
			int ok = (int)reply->element[0]->integer;

			breaker_success(s);
			s->st.exact++;
			if (reply->element[2]->integer)
				s->st.keys_capped++;
			p->cb(p->arg, ok, (uint32_t)reply->element[1]->integer, SL_ANS_EXACT);
		} else {
			s->st.errors++;
			pending_fail(p);
		}
	}
	finish_pending(p);
}

/* Send a script call; false when it could not be sent (the caller answers). */
static bool send_script(struct sl_store *s, int script, struct pending *p, int nkeys,
			const char **keys, int argc, const char **argv)
{
	const char *args[16];
	size_t lens[16];
	char nk[8];
	int n = 0, i;

	if (script < 0 || script >= s->n_scripts || nkeys + argc + 3 > 16)
		return false;
	/* Until SCRIPT LOAD has answered, send the script itself. */
	if (s->scripts[script].sha[0]) {
		args[n++] = "EVALSHA";
		args[n++] = s->scripts[script].sha;
	} else {
		args[n++] = "EVAL";
		args[n++] = s->scripts[script].lua;
	}
	snprintf(nk, sizeof(nk), "%d", nkeys);
	args[n++] = nk;
	for (i = 0; i < nkeys; i++)
		args[n++] = keys[i];
	for (i = 0; i < argc; i++)
		args[n++] = argv[i];
	for (i = 0; i < n; i++)
		lens[i] = strlen(args[i]);
	if (redisAsyncCommandArgv(s->ac, on_reply, p, n, args, lens) != REDIS_OK)
		return false;
	p->timer = evtimer_new(s->base, on_timeout, p);
	if (p->timer) {
		struct timeval tv = { .tv_sec = s->o.timeout_ms / 1000,
				      .tv_usec = (s->o.timeout_ms % 1000) * 1000 };

		evtimer_add(p->timer, &tv);
	}
	return true;
}

void sl_store_charge(struct sl_store *s, const struct sl_limit *l, const char *tenant,
		     const char *key, double cost, sl_store_cb cb, void *arg)
{
	char k[KEY_MAX], zk[KEY_MAX], a[4][32];
	const char *keys[2] = { k, zk }, *argv[4] = { a[0], a[1], a[2], a[3] };
	struct pending *p;
	uint64_t T;

	s->st.calls++;
	if (!s->redis_addr[0]) {
		uint32_t retry = 0;
		int ok;

		snprintf(k, sizeof(k), "%s|%s|%s", tenant, l->name, key);
		ok = local_charge(s, k, l->rate, l->burst, cost, &retry);
		s->st.exact++;
		cb(arg, ok, retry, SL_ANS_EXACT);
		return;
	}
	if (!breaker_allows(s)) {
		s->st.short_circuits++;
		answer_fallback(s, l, tenant, key, cost, cb, arg);
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
	snprintf(k, sizeof(k), "%s:{%s}:%s:%s", s->prefix, tenant, l->name, key);
	snprintf(zk, sizeof(zk), "%s:{%s}:%s:live", s->prefix, tenant, l->name);
	T = sl_gcra_emission(l->rate);
	snprintf(a[0], sizeof(a[0]), "%.3f", (double)T / 1000.0);
	snprintf(a[1], sizeof(a[1]), "%.3f", (double)sl_gcra_tolerance(l->burst, T) / 1000.0);
	snprintf(a[2], sizeof(a[2]), "%.6g", cost);
	snprintf(a[3], sizeof(a[3]), "%u", l->max_keys);
	if (!send_script(s, s->gcra, p, 2, keys, 4, argv)) {
		s->st.errors++;
		breaker_failure(s);
		free(p);
		answer_fallback(s, l, tenant, key, cost, cb, arg);
	}
}

void sl_store_clear(struct sl_store *s, const struct sl_limit *l, const char *tenant,
		    const char *key)
{
	char k[KEY_MAX];
	size_t i;

	/* The local tables too: a fallback answer may have charged them. */
	for (i = 0; i < 3; i++) {
		static const char *const pre[] = { "", "L|", "S|" };
		uint64_t h;
		size_t j;

		snprintf(k, sizeof(k), "%s%s|%s|%s", pre[i], tenant, l->name, key);
		h = fnv(k);
		for (j = 0; j < PROBE; j++) {
			struct entry *e = &s->tab[(h + j) & (s->cap - 1)];

			if (e->tat && !strcmp(e->key, k)) {
				e->tat = 0;
				if (s->st.local_keys)
					s->st.local_keys--;
				break;
			}
		}
	}
	if (s->redis_addr[0] && s->connected && s->breaker == SL_BREAKER_CLOSED) {
		char zk[KEY_MAX];

		snprintf(k, sizeof(k), "%s:{%s}:%s:%s", s->prefix, tenant, l->name, key);
		snprintf(zk, sizeof(zk), "%s:{%s}:%s:live", s->prefix, tenant, l->name);
		redisAsyncCommand(s->ac, on_ignore, NULL, "DEL %s", k);
		if (l->max_keys)
			redisAsyncCommand(s->ac, on_ignore, NULL, "ZREM %s %s", zk, k);
	}
}

int sl_store_script(struct sl_store *s, const char *lua)
{
	if (s->n_scripts >= MAX_SCRIPTS)
		return -ENOSPC;
	s->scripts[s->n_scripts].lua = strdup(lua);
	if (!s->scripts[s->n_scripts].lua)
		return -ENOMEM;
	s->scripts[s->n_scripts].sha[0] = '\0';
	if (s->connected)
		redisAsyncCommand(s->ac, on_script_loaded, (void *)(long)s->n_scripts,
				  "SCRIPT LOAD %s", lua);
	return s->n_scripts++;
}

void sl_store_eval(struct sl_store *s, int script, const char *key, int argc,
		   const char **argv, sl_store_raw_cb cb, void *arg)
{
	struct pending *p;

	s->st.calls++;
	if (!s->redis_addr[0] || !breaker_allows(s)) {
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
	if (!send_script(s, script, p, 1, &key, argc, argv)) {
		s->st.errors++;
		breaker_failure(s);
		free(p);
		cb(arg, NULL);
	}
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct sl_store *s = arg;

	(void)fd;
	(void)what;
	/* A connection that has not come up in a second is given up and tried again. */
	if (s->connecting && now_ns() - s->connect_started > 1000000000ull && s->ac) {
		redisAsyncContext *ac = s->ac;

		s->ac = NULL;
		s->connecting = false;
		ac->data = NULL;
		redisAsyncFree(ac);
		breaker_failure(s);
	}
	/* Reconnect in the background once the breaker lets a probe through. */
	if (!s->connected && !s->connecting &&
	    (s->breaker != SL_BREAKER_OPEN || now_ns() >= s->open_until))
		connect_redis(s);
}

struct sl_store *sl_store_new(struct event_base *base, const struct sl_store_opts *o,
			      char *err, size_t errlen)
{
	struct sl_store *s = calloc(1, sizeof(*s));
	size_t cap = 1024;

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
	while (cap < (o->local_max_keys ? o->local_max_keys : 65536))
		cap <<= 1;
	s->cap = cap;
	s->tab = calloc(cap, sizeof(*s->tab));
	if (!s->tab) {
		snprintf(err, errlen, "cannot allocate %zu counter slots", cap);
		free(s);
		return NULL;
	}
	s->gcra = sl_store_script(s, gcra_lua);
	if (s->redis_addr[0]) {
		struct timeval tv = { .tv_sec = 0, .tv_usec = 100000 };

		s->tick = event_new(base, -1, EV_PERSIST, on_tick, s);
		if (s->tick)
			event_add(s->tick, &tv);
		connect_redis(s);
	}
	return s;
}

void sl_store_free(struct sl_store *s)
{
	int i;

	if (!s)
		return;
	s->closing = true;
	if (s->tick)
		event_free(s->tick);
	if (s->ac)
		redisAsyncFree(s->ac);
	for (i = 0; i < s->n_scripts; i++)
		free(s->scripts[i].lua);
	free(s->tab);
	free(s);
}

void sl_store_get_stats(const struct sl_store *s, struct sl_store_stats *st)
{
	*st = s->st;
	st->breaker = s->breaker;
	st->redis = s->redis_addr[0] != '\0';
	st->connected = s->connected;
}
