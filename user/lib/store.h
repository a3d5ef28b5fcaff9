/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The counter store: GCRA counters keyed by strings, shared by every node through Redis when
 * one is configured, kept in this process otherwise (the single-node default).
 *
 * Redis calls are asynchronous on the caller's libevent loop (hiredis with its libevent
 * adapter), each with its own timeout; a circuit breaker stops calling a Redis that keeps
 * failing and probes it back. Every counter says what to do when Redis cannot answer:
 *   - fail open (user-protecting counters: failed logins per account and prefix): keep
 *     limiting in this process at limit / N, N being the configured number of nodes, so the
 *     cluster as a whole stays near the limit;
 *   - fail closed (capacity counters): charge a static local budget, the platform's floor.
 * A check never waits longer than the timeout, and its callback runs exactly once. An outage
 * is not a reset (issue 16): the store keeps the last value Redis returned for each live key,
 * a fail-open fallback starts from it, and what a fallback charged and what was cleared
 * meanwhile is handed to Redis once it answers (store.c, "outages"; a late-run call is not
 * charged twice). Checks issued together go out pipelined on the one connection.
 *
 * Keys carry the tenant as a hash tag ("sluice:{acme}:login_fail:<hash>") so a Redis Cluster
 * keeps a tenant's keys together, in one slot: every key of one script call shares it (the
 * store refuses a call whose keys do not). Identifiers should be hashed with
 * sl_store_hash() first. With a Redis Cluster ("cluster:HOST:PORT,..."), each master has
 * its own connection, timeouts and breaker; a check goes to its slot's master, a MOVED or
 * ASK is followed once within the same timeout, and the slot map is read again after a
 * MOVED, a lost master, and every few seconds.
 */
#ifndef SLUICE_STORE_H
#define SLUICE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

enum sl_fail_mode {
	SL_FAIL_OPEN = 0,   /* fall back to a local limit / N */
	SL_FAIL_CLOSED = 1, /* fall back to a static local budget */
};

/* Where an answer came from. */
enum sl_answer {
	SL_ANS_EXACT = 0,  /* the shared store (or the in-process store, with no Redis) */
	SL_ANS_LOCAL = 1,  /* fail open: the local limit / N */
	SL_ANS_STATIC = 2, /* fail closed: the static budget */
};

enum sl_breaker { SL_BREAKER_CLOSED = 0, SL_BREAKER_OPEN, SL_BREAKER_HALF_OPEN };

struct sl_limit {
	const char *name;     /* part of the key: "login_fail" */
	double rate, burst;   /* units per second, units: the limit across all nodes */
	uint8_t fail;         /* enum sl_fail_mode */
	double static_rate, static_burst; /* fail closed: this node's budget meanwhile */
	uint32_t max_keys;    /* live keys per tenant; 0: no cap in Redis, in process the
			       * store's local_max_keys */
};

struct sl_store_opts {
	const char *redis;      /* "unix:/path", "HOST:PORT", "sentinel:MASTER@HOST:PORT,...",
				 * "cluster:HOST:PORT,..." (seed nodes), or NULL for
				 * in-process only */
	const char *user, *password; /* AUTH on every connection; both NULL: what
				      * sl_store_auth_register() gave for this address */
	uint32_t timeout_ms;    /* per call */
	uint32_t nodes;         /* N, for fail-open limits */
	uint32_t breaker_failures;
	uint32_t breaker_open_ms;
	const char *prefix;     /* key prefix, "sluice" */
	size_t local_max_keys;  /* in process: the bound of a counter's table when its
				 * max_keys is 0 (65536 when this is 0 too) */
};

struct sl_store_stats {
	uint64_t calls, exact, timeouts, errors, fallback_local, fallback_static;
	uint64_t short_circuits; /* answered from the fallback because the breaker was open */
	uint64_t keys_capped;    /* Redis: checks refused because a tenant had max_keys live keys */
	uint64_t oom;            /* checks Redis refused for OOM (maxmemory, noeviction), asked
				  * again read-only */
	uint64_t keys_restored;  /* Redis had lost a key (evicted, flushed, restarted empty) and
				  * this node gave it back the debt it last saw */
	uint64_t local_keys;     /* keys the in-process tables hold (refilled ones until reused) */
	uint64_t local_evictions; /* live keys an in-process table at max_keys evicted (their
				   * debt kept as their bucket's floor) */
	uint64_t local_table_full; /* checks of a key a table did not hold that started spent:
				    * its table, at max_keys, gave it the debt of what it evicts
				    * or evicted before (never a full budget) */
	uint64_t journal;        /* keys holding what Redis has not had yet (charges made in a
				  * fail-open fallback, clears), handed over as it answers */
	uint64_t journal_dropped; /* charges and clears the journal, full, could not hold */
	uint8_t breaker;         /* enum sl_breaker; a cluster's: the worst of its masters' */
	bool redis;              /* a Redis is configured */
	bool connected;          /* and its handshake (AUTH, INFO) answered; a cluster's: the
				  * slot map is known and every master in it is connected */
	bool refused_cluster;    /* the last server was a Redis Cluster node given as a plain
				  * address: refused */
	bool cluster;            /* a Redis Cluster is configured */
	uint32_t slots_covered;  /* a cluster's: slots the map gives a master */
	uint64_t moved, ask;     /* redirects followed (or not: a master down) */
	uint64_t map_reads, map_failures; /* slot map reads, and reads no node answered */
};

/* One Redis server's state (a cluster has one per master; otherwise just the one). */
struct sl_store_node {
	char name[80];           /* "IP:PORT", or redis.address */
	bool connected;
	uint8_t breaker;
	uint32_t slots;          /* a cluster's: the slots it serves */
	uint64_t calls, errors, timeouts;
};

struct sl_store;

/* @allowed: 1 admit, 0 refuse; @retry_ms: when a refused request could pass. */
typedef void (*sl_store_cb)(void *arg, int allowed, uint32_t retry_ms, int answer);

struct sl_store *sl_store_new(struct event_base *base, const struct sl_store_opts *o,
			      char *err, size_t errlen);
void sl_store_free(struct sl_store *s);

/* Charge @cost units of @l for @key in @tenant. @cb runs exactly once, maybe before this
 * returns (in-process and fallback answers). A @cost of 0 only asks whether one more unit
 * would pass now, and writes nothing; a negative @cost gives back what an earlier charge
 * took (a refund: always "allowed"). */
void sl_store_charge(struct sl_store *s, const struct sl_limit *l, const char *tenant,
		     const char *key, double cost, sl_store_cb cb, void *arg);
/* Forget @key (a success clears its own pair). Fire and forget. */
void sl_store_clear(struct sl_store *s, const struct sl_limit *l, const char *tenant,
		    const char *key);

/* A raw script call for other modules (leases): EVALSHA of a script loaded with
 * sl_store_script(); @cb gets the reply or NULL on timeout, error or an open breaker. */
struct redisReply;
typedef void (*sl_store_raw_cb)(void *arg, struct redisReply *reply);
int sl_store_script(struct sl_store *s, const char *lua);
void sl_store_eval(struct sl_store *s, int script, const char *key, int argc,
		   const char **argv, sl_store_raw_cb cb, void *arg);

void sl_store_get_stats(const struct sl_store *s, struct sl_store_stats *st);
/* A capped counter's live keys in Redis for one tenant, as its last reply said (the size of
 * its live-key set), and the checks refused because the set was full. */
#define SL_STORE_LIVE_MAX 256
struct sl_store_live {
	char tenant[64];
	char counter[32];
	uint32_t max_keys;
	uint64_t live;    /* at the last reply */
	uint64_t capped;  /* checks refused at max_keys */
};
/* Up to @max into @out; returns how many (tenant, counter) pairs are known. */
int sl_store_live_keys(const struct sl_store *s, struct sl_store_live *out, int max);
/* The servers' states into @out (at most @max); returns how many there are. */
int sl_store_nodes(const struct sl_store *s, struct sl_store_node *out, int max);
/* The same for sluicectl status: one line each ("  redis server HOST:PORT: connected, ..."),
 * or a JSON array when @json; truncated to @len. */
void sl_store_describe_nodes(const struct sl_store *s, char *buf, size_t len, bool json);

/* Redis Cluster's hash slot of @key (CRC16-XMODEM of its hash tag, "{...}", or of the whole
 * key when it has none, mod 16384). */
uint16_t sl_store_keyslot(const char *key, size_t len);

/*
 * Where Redis is, and how every connection sluiced makes gets there (the store's, the stream
 * job's; leases go through the store). An address is "unix:/path", "HOST:PORT" (a name is
 * resolved off the loop, again at each connection), "sentinel:MASTER@HOST:PORT,..." (the
 * sentinels are asked for MASTER at each connection) or "cluster:HOST:PORT,..." (seed nodes
 * of a Redis Cluster, asked for CLUSTER SLOTS). A Cluster node given as a plain address
 * (cluster_enabled:1) is refused with an error in the log: it would answer MOVED.
 */
#define SL_STORE_MAX_SENTINELS 8
struct sl_redis_target {
	bool unix_sock;          /* host is a path */
	bool sentinel;
	bool cluster;            /* sentinel_at[] holds a cluster's seed nodes */
	char host[200];
	int port;
	char master[64];
	int n_sentinels;
	struct { char host[200]; int port; } sentinel_at[SL_STORE_MAX_SENTINELS];
};
int sl_store_target_parse(const char *address, struct sl_redis_target *t);
/* Blocking (a worker thread's, the stream job's): the numeric address to connect to now:
 * the host resolved, or the master the first answering sentinel names. 0 or -errno. */
int sl_store_locate(const struct sl_redis_target *t, uint32_t timeout_ms, char *host,
		    size_t hostlen, int *port, char *err, size_t errlen);
/* Blocking: a connection to @address, located, authenticated with @user/@password (either
 * may be NULL or empty), with @timeout_ms on every call. NULL with @err set on failure
 * (never naming the password). */
struct redisContext;
struct redisContext *sl_store_connect_sync(const char *address, const char *user,
					   const char *password, uint32_t timeout_ms,
					   char *err, size_t errlen);
/*
 * Blocking, for a thread off the loop (the stream job's): a connection to @address that
 * routes each command by its key, to its slot's master on a Redis Cluster (one connection
 * per master, each with @timeout_ms), or to the one server otherwise. Commands are
 * pipelined: sl_sync_append() queues one, sl_sync_reply() reads the replies in the same
 * order. A MOVED or ASK is followed once (and a MOVED reads the slot map again before the
 * next batch); a master that does not answer gives an error reply for its commands
 * ("NODEDOWN ..."), not a broken connection, so the other masters' answers still count.
 * sl_sync_reply() fails (REDIS_ERR) only when the one server's connection broke.
 */
struct sl_sync;
struct sl_sync *sl_sync_connect(const char *address, const char *user, const char *password,
				uint32_t timeout_ms, char *err, size_t errlen);
int sl_sync_append(struct sl_sync *c, const char *key, int argc, const char **argv,
		   const size_t *lens);
int sl_sync_reply(struct sl_sync *c, struct redisReply **reply);
const char *sl_sync_errstr(const struct sl_sync *c);
void sl_sync_free(struct sl_sync *c);
/* The credentials that go with @address (the config loader registers redis.user and
 * redis.password; the store and the stream job look them up). Either may be empty. */
void sl_store_auth_register(const char *address, const char *user, const char *password);
void sl_store_auth_lookup(const char *address, const char **user, const char **password);
const char *sl_breaker_name(uint8_t b);

/* Hex of a keyed BLAKE2b-128 of @parts joined by NUL bytes: identifiers (account names,
 * client ids) never appear in a key. @key is 32 bytes. @out gets 33 bytes. */
void sl_store_hash(const uint8_t *key, const char *const *parts, int n, char *out);

#endif
