/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The stream job: the axis per-key counters cannot see. The gateway pushes one outcome event
 * per login (keyed hashes only: account, password tried, the source prefix) into a bounded
 * lock-free queue (evq.h); a thread of its own drains it and keeps, over a sliding window,
 * HyperLogLog counts of
 *   - distinct accounts failed per source prefix, and per ASN,
 *   - distinct source prefixes failed per account,
 *   - distinct accounts tried with one password,
 *   - distinct key prefixes (/32, /64) failed per (account, source prefix): one account
 *     guessed from many addresses of one allocation,
 * and each tenant's failure ratio against its own trailing baseline. Only attempts checked
 * against a password count as guesses at an account or with a password; one refused
 * unchecked (throttled, stepped up) counts for its source only. Past a threshold a
 * detector acts: an XDP verdict for a prefix or an ASN's prefixes (block or tighten, with a
 * TTL), an escalation of an account in the gateway (delay, then step-up), a step-up for a
 * password or for one account from one allocation; or, in monitor mode, only records what
 * it would have done.
 * Records (would-blocks and blocks) and the attempts-per-account-per-day distribution are
 * read from the control socket.
 */
#ifndef SLUICED_STREAM_H
#define SLUICED_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "config.h"
#include "evq.h"
#include "maps.h"

struct stream;

/* What the stream job asks the gateway to do (on the daemon's loop). */
enum stream_action_kind {
	STREAM_ACCOUNT_LEVEL = 1, /* escalate an account: level 1 delay, 2 step-up, 3 step-up
				   * after the delay (the gateway applies these only from
				   * sources the account does not usually sign in from) */
	STREAM_PASSWORD_STEP_UP,  /* logins trying this password answer step_up_required */
	STREAM_ACCOUNT_SOURCE_STEP_UP, /* one account from one allocation: step_up_required
					* (hash: stream_account_source()) */
};

struct stream_action {
	uint8_t kind;
	uint8_t level;
	uint16_t tenant;
	uint8_t hash[16];     /* account, password or (account, allocation) hash */
	uint64_t expires_ns;  /* CLOCK_MONOTONIC */
};

typedef void (*stream_action_fn)(void *arg, const struct stream_action *a);

/* The (account, allocation) an account_keys step-up names: 16 bytes of BLAKE2b over the
 * account's keyed hash and the allocation as events carry it (family, length, the address
 * masked to it). The gateway computes the same to find one. */
void stream_account_source(const uint8_t account[16], uint8_t family, uint8_t plen,
			   const uint8_t prefix[16], uint8_t out[16]);

/*
 * Start the thread. @maps: the edge's maps for ASN lookups and verdicts, or NULL (gateway
 * only: prefix and ASN detectors record what they would do). @act runs on @base's thread.
 */
struct stream *stream_start(struct event_base *base, const struct sl_config *c,
			    const struct sl_maps *maps, stream_action_fn act, void *arg,
			    char *err, size_t errlen);
/* Follow a reloaded config (thresholds, modes, TTLs; the window and the queue keep their
 * sizes, and redis.* its address and key prefix, until the next start, as the counters do). */
void stream_apply(struct stream *s, const struct sl_config *c);
void stream_stop(struct stream *s);

/* The queue the gateway pushes into. */
struct evq *stream_queue(struct stream *s);

/* A would-block (monitor) or a block (enforce) from outside the job (the gateway's
 * counters). @rule: "counter:login_failures". */
void stream_record(struct stream *s, const char *rule, const char *key, uint16_t tenant,
		   uint8_t class_id, uint8_t mode, uint64_t count, double threshold);

/* Control socket: records since @since_unix (0: all kept) with a summary by rule, tenant and
 * source class; the distribution of attempts per account per day; the job's own counters. */
void stream_wouldblock(struct stream *s, struct evbuffer *out, double since_unix, bool json);
void stream_distribution(struct stream *s, struct evbuffer *out, bool json);
void stream_stats_json(struct stream *s, struct evbuffer *out);
/* Its counters in Prometheus text format, for /metrics. */
void stream_metrics(struct stream *s, struct evbuffer *out);

#endif
