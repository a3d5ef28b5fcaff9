/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Ask these counters in order: the one way a request of the gateway asks the counter store
 * (store.h), whatever its endpoint. A request lists its asks (counter, key, cost) and runs
 * them; they are judged in steps, an ask marked with_next in one step with the next (the
 * login's pair), but all go out at once, in one round trip (pipelined on the store's one
 * connection, each within the store's timeout, so the request waits one timeout at most, not
 * one per step: issue 16), and the asks of the steps after a refusal are given back.
 * The first refusal by a counter that enforces ends the chain after its step; a refusal by
 * one in monitor mode is recorded (sluicectl wouldblock) and let through. An ask marked soft
 * refuses without ending the chain: the asks after it are asked and charged as if it had
 * said yes, and a refusal among them is the one reported (the login's per-account counters
 * under login_uniform: a throttled login must meet the tenant's capacity exactly as an
 * unthrottled one does, or a 429 would tell them apart). Asks of counters that are off are
 * skipped, so a chain of nothing but those ends at once.
 *
 * Each ask also says what the request's outcome does to it: gw_chain_refund() gives back
 * the charges marked refund (a login shed before its hash was no attempt at the password),
 * gw_chain_settle() clears the keys marked so once the request has succeeded and gives back
 * the successes it held otherwise (a right password clears its failures and keeps the one of
 * its successes it was charged; a wrong one gives that back; a right client secret clears its
 * failures).
 *
 * The keys are keyed hashes (gw_counter_key): no account name, client id or address
 * reaches the store, and every node, sharing the session key, counts the same keys.
 */
#ifndef SLUICE_GW_CHAIN_H
#define SLUICE_GW_CHAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <arpa/inet.h>

#include "store.h"

struct gateway;
struct gw_req;
struct gw_chain_wait;

#define GW_CHAIN_MAX 5 /* asks in one chain: reset and register have the most, four */

enum gw_then {
	GW_THEN_KEEP = 0, /* the outcome changes nothing: the charge stands */
	GW_THEN_CLEAR,    /* a success clears the key: it counts failures */
	GW_THEN_SPEND,    /* it counts successes: charged when asked, in the same atomic
			   * call as any other ask (a peek then a charge after the hash let 24
			   * parallel logins through a burst of 3, issue 16), kept by a success
			   * and given back by any other outcome */
};

struct gw_ask {
	int ctr;            /* enum sl_counter_id */
	char key[33];       /* a keyed hash (gw_counter_key), never a name */
	char shown[40];     /* the key as a refusal is recorded (wouldblock) */
	int cost;           /* 1 charges one; 0 only asks */
	double rate, burst; /* rate > 0: this principal's own limit, not the counter's */
	bool with_next;     /* sent with the next ask and answered together: one round trip */
	bool soft;          /* its refusal does not end the chain (reported only if alone) */
	bool refund;        /* given back if the request is shed before its work */
	uint8_t then;       /* enum gw_then: what a success does (gw_chain_settle) */
	bool charged;       /* the store took the charge, and nothing has settled it */
	int8_t heard;       /* its answer while the chain runs: -1 none yet, 0 refused, 1 yes */
	uint32_t heard_retry_ms;
};

/* The chain has ended: @refused is the ask that refused (NULL: every counter said yes; the
 * first that is not soft, else the first soft one), @retry_ms its wait. @refused stays valid
 * until the request's next gw_chain_begin(). */
typedef void (*gw_chain_done_fn)(struct gw_req *r, const struct gw_ask *refused,
				 uint32_t retry_ms);

/* A request's asks (in struct gw_req). */
struct gw_chain {
	struct gw_ask ask[GW_CHAIN_MAX];
	int n;
	int next;                   /* the first ask not yet sent */
	int refused;                /* the first refusal (an index), -1 none */
	uint32_t retry_ms;
	int soft_refused;           /* the first refusal by a soft ask, -1 none */
	bool redis_missed;          /* a fallback answered one of its asks: Redis did not */
	uint32_t soft_retry_ms;
	gw_chain_done_fn done;
	struct gw_chain_wait *wait; /* while answers are due; NULL otherwise */
};

/* Start @r's list of asks afresh. */
void gw_chain_begin(struct gw_req *r);
/* Append an ask of @ctr under @key: cost 1, the counter's own limit, nothing done on the
 * outcome; the caller sets the rest. At most GW_CHAIN_MAX asks. */
struct gw_ask *gw_chain_ask(struct gw_req *r, int ctr, const char *key);
/* Ask them in order; @done hears how it ended, perhaps before this returns. -ENOMEM, and
 * @done is never called, when the chain cannot start. */
int gw_chain_run(struct gw_req *r, gw_chain_done_fn done);
/* @r is going away: the answers still due are dropped. */
void gw_chain_detach(struct gw_req *r);
/* @r was shed before its work: give back the charges marked refund. */
void gw_chain_refund(struct gw_req *r);
/* @r's outcome is known: on @success the keys marked so are cleared or spent; either way
 * the charges now stand (nothing is given back any more). */
void gw_chain_settle(struct gw_req *r, bool success);

/* The limit @a is asked under: its counter's, or the principal's own. */
struct sl_limit gw_ask_limit(const struct gateway *g, const struct gw_ask *a);

/* A counter key: a keyed hash of @parts[0..n) under @domain (the hash key derives from the
 * session key). */
void gw_counter_key(const struct gateway *g, const char *domain, const char *const *parts,
		    int n, char out[33]);

#define GW_PREFIX_STR (INET6_ADDRSTRLEN + 8)
/* The client's source prefix as the counters key it ("192.0.2.7/32"). */
void gw_prefix_of(const struct gateway *g, const struct gw_req *r, char prefix[GW_PREFIX_STR]);
/* Its allocation, counters.parent_v4/parent_v6 ("192.0.2.0/24"). */
void gw_parent_of(const struct gateway *g, const struct gw_req *r, char prefix[GW_PREFIX_STR]);
/* The client's address masked to @plen bits, as text ("192.0.2.0/24"). */
void gw_prefix_text(const struct gw_req *r, unsigned plen, char prefix[GW_PREFIX_STR]);

#endif
