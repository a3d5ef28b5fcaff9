/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The stream job: the axis per-key counters cannot see. The gateway pushes one outcome event
 * per login (keyed hashes only: account, password tried, the source prefix) into a bounded
 * lock-free queue (evq.h); a thread of its own drains it and keeps, over a sliding window,
 * HyperLogLog counts of
 *   - distinct accounts failed per source prefix, and per ASN,
 *   - distinct source prefixes failed per account,
 *   - distinct accounts tried with one password,
 * and each tenant's failure ratio against its own trailing baseline. Past a threshold a
 * detector acts: an XDP verdict for a prefix or an ASN's prefixes (block or tighten, with a
 * TTL), an escalation of an account in the gateway (delay, then step-up, then block), a
 * step-up for a password; or, in monitor mode, only records what it would have done.
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
	STREAM_ACCOUNT_LEVEL = 1, /* escalate an account: level 1 delay, 2 step-up, 3 block */
	STREAM_PASSWORD_STEP_UP,  /* logins trying this password answer step_up_required */
};

struct stream_action {
	uint8_t kind;
	uint8_t level;
	uint16_t tenant;
	uint8_t hash[16];     /* account or password hash */
	uint64_t expires_ns;  /* CLOCK_MONOTONIC */
};

typedef void (*stream_action_fn)(void *arg, const struct stream_action *a);

/*
 * Start the thread. @maps: the edge's maps for ASN lookups and verdicts, or NULL (gateway
 * only: prefix and ASN detectors record what they would do). @act runs on @base's thread.
 */
struct stream *stream_start(struct event_base *base, const struct sl_config *c,
			    const struct sl_maps *maps, stream_action_fn act, void *arg,
			    char *err, size_t errlen);
/* Follow a reloaded config (thresholds, modes, TTLs; the window and the queue keep their
 * sizes until the next start). */
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
