// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Ask these counters in order (gw_chain.h): the one mechanism every endpoint of the gateway,
 * /login included, asks the counter store through, and the keys it asks under. What each
 * endpoint asks is its own room's business (docs/endpoints.md lists them); how the asks go
 * out, how a refusal is recorded or let through in monitor mode, and what a request's
 * outcome gives back or spends afterwards is decided here, once.
 *
 * Answers come back on the loop within the store's timeout; an in-process store answers
 * before the call returns, so each step holds one count of its own until it is sent. A
 * request that goes away meanwhile detaches: its wait outlives it until the last answer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <sodium.h>

#include "gw_internal.h"
#include "stream.h"

struct gw_chain_wait {
	struct gw_req *r; /* NULL once the request is gone: the answers are then dropped */
	int pending;
	struct gw_chain_slot {
		struct gw_chain_wait *w;
		int i;
	} slot[GW_CHAIN_MAX];
};

static struct sl_limit limit_of(const struct gateway *g, int id)
{
	static const char *const names[SL_CTR_N] = { "login_fail", "login_ok", "tenant_logins",
		"token_fail", "token_client", "tenant_tokens", "mfa_attempts", "mfa_sends",
		"outbound", "reset_acct", "reset_prefix", "reset_tenant", "reg_acct", "reg_prefix",
		"reg_tenant", "magic_prefix", "user", "login_parent" };
	const struct sl_counter_cfg *cc = &g->cfg->counters[id];

	return (struct sl_limit){ .name = names[id], .rate = cc->rate, .burst = cc->burst,
				  .fail = cc->fail, .static_rate = cc->static_rate,
				  .static_burst = cc->static_burst, .max_keys = cc->max_keys };
}

/* The limit @a is asked under: its counter's, or the principal's own. */
struct sl_limit gw_ask_limit(const struct gateway *g, const struct gw_ask *a)
{
	struct sl_limit l = limit_of(g, a->ctr);

	if (a->rate > 0) {
		l.rate = a->rate;
		l.burst = a->burst;
	}
	return l;
}

static bool counter_on(const struct gateway *g, int id)
{
	return g->store && g->cfg->counters[id].enabled;
}

static void on_ignored(void *arg, int allowed, uint32_t retry_ms, int answer)
{
	(void)arg;
	(void)allowed;
	(void)retry_ms;
	(void)answer;
}

/*
 * A counter's key: a keyed hash of @parts under @domain, never the names or addresses
 * themselves. The hash key derives from the session key, which every node shares, so the
 * nodes count the same keys and no account name or address reaches Redis.
 */
void gw_counter_key(const struct gateway *g, const char *domain, const char *const *parts,
		    int n, char out[33])
{
	uint8_t ck[32];

	crypto_generichash(ck, sizeof(ck), (const unsigned char *)domain, strlen(domain), g->key,
			   sizeof(g->key));
	sl_store_hash(ck, parts, n, out);
	sodium_memzero(ck, sizeof(ck));
}

void gw_prefix_text(const struct gw_req *r, unsigned plen, char prefix[GW_PREFIX_STR])
{
	uint8_t a[16] = { 0 };
	unsigned i, n = r->client.family == 6 ? 16 : 4;

	for (i = 0; i < n; i++) {
		unsigned bits = plen > i * 8 ? plen - i * 8 : 0;

		a[i] = bits >= 8 ? r->client.addr[i] :
		       (uint8_t)(r->client.addr[i] & (0xff00u >> bits));
	}
	if (!r->client.family ||
	    !inet_ntop(r->client.family == 6 ? AF_INET6 : AF_INET, a, prefix, INET6_ADDRSTRLEN))
		snprintf(prefix, GW_PREFIX_STR, "?");
	snprintf(prefix + strlen(prefix), GW_PREFIX_STR - strlen(prefix), "/%u", plen);
}

/* The client's source prefix as the counters key it ("192.0.2.7/32"). */
void gw_prefix_of(const struct gateway *g, const struct gw_req *r, char prefix[GW_PREFIX_STR])
{
	gw_prefix_text(r, r->client.family == 6 ? g->cfg->counter_v6_prefix :
						    g->cfg->counter_v4_prefix, prefix);
}

void gw_parent_of(const struct gateway *g, const struct gw_req *r, char prefix[GW_PREFIX_STR])
{
	gw_prefix_text(r, r->client.family == 6 ? g->cfg->counter_v6_parent :
						    g->cfg->counter_v4_parent, prefix);
}

void gw_chain_begin(struct gw_req *r)
{
	r->chain.n = 0;
}

struct gw_ask *gw_chain_ask(struct gw_req *r, int ctr, const char *key)
{
	struct gw_ask *a = &r->chain.ask[r->chain.n++];

	memset(a, 0, sizeof(*a));
	a->ctr = ctr;
	a->cost = 1;
	snprintf(a->key, sizeof(a->key), "%s", key);
	snprintf(a->shown, sizeof(a->shown), "%.16s", key);
	return a;
}

void gw_chain_detach(struct gw_req *r)
{
	if (!r->chain.wait)
		return;
	r->chain.wait->r = NULL;
	r->chain.wait = NULL;
}

/* One answer for @a: a refusal is recorded, and let through when its counter only
 * monitors; the step's first enforced refusal ends the chain. */
static void chain_heard(struct gw_req *r, struct gw_ask *a, int allowed, uint32_t retry_ms)
{
	struct gateway *g = r->g;
	struct sl_limit l;
	bool monitor;
	char rule[48];

	if (allowed) {
		a->charged = a->cost > 0;
		return;
	}
	l = gw_ask_limit(g, a);
	monitor = g->cfg->counter_mode[a->ctr] == SL_MODE_MONITOR;
	snprintf(rule, sizeof(rule), "counter:%s", sl_counter_name(a->ctr));
	stream_record(g->stream, rule, a->shown, (uint16_t)r->tenant_idx, 255,
		      monitor ? SL_MODE_MONITOR : SL_MODE_ENFORCE, 1, l.burst);
	if (monitor) {
		/* Counted, recorded, and let through. */
		g->st.would_block++;
		g->ts[r->job.tenant].would_block[a->ctr]++;
		if (r->job.cls < GW_MAX_CLASSES)
			g->ts[r->job.tenant].would_block_by_class[r->job.cls]++;
		return;
	}
	if (a->soft) {
		if (r->chain.soft_refused < 0) {
			r->chain.soft_refused = (int)(a - r->chain.ask);
			r->chain.soft_retry_ms = retry_ms;
		}
		return;
	}
	if (r->chain.refused < 0) {
		r->chain.refused = (int)(a - r->chain.ask);
		r->chain.retry_ms = retry_ms;
	}
}

static void on_chain_answer(void *arg, int allowed, uint32_t retry_ms, int answer);

/* Every answer is in: judge them step by step, in order, as if each step had waited for
 * the one before; what the steps after the one that ended the chain were charged is given
 * back (they were asked in the same round trip, not after). */
static void chain_judge(struct gw_chain_wait *w)
{
	struct gw_req *r = w->r;
	struct gw_chain *k = &r->chain;
	struct gateway *g = r->g;
	bool ended = false;
	int i;

	for (i = 0; i < k->n; i++) {
		struct gw_ask *a = &k->ask[i];

		if (ended) {
			if (a->heard == 1 && a->cost > 0 && counter_on(g, a->ctr)) {
				struct sl_limit l = gw_ask_limit(g, a);

				sl_store_charge(g->store, &l, r->tenant, a->key, -a->cost,
						on_ignored, NULL);
			}
			a->charged = false;
			continue;
		}
		if (a->heard >= 0)
			chain_heard(r, a, a->heard, a->heard_retry_ms);
		if (!a->with_next && k->refused >= 0)
			ended = true;
	}
	k->next = k->n;
	k->wait = NULL;
	free(w);
	if (k->refused < 0 && k->soft_refused >= 0) {
		k->refused = k->soft_refused;
		k->retry_ms = k->soft_retry_ms;
	}
	k->done(r, k->refused >= 0 ? &k->ask[k->refused] : NULL, k->retry_ms);
}

/* Send every ask; the answers judge the chain once all are in. */
static void chain_send(struct gw_chain_wait *w)
{
	struct gw_req *r = w->r;
	struct gw_chain *k = &r->chain;
	struct gateway *g = r->g;
	int i;

	/* Count each ask as it goes, plus one held until all are sent: an in-process answer
	 * comes back before the call returns. */
	w->pending = 1;
	for (i = 0; i < k->n; i++) {
		struct gw_ask *a = &k->ask[i];
		struct sl_limit l;

		a->heard = -1;
		if (!counter_on(g, a->ctr))
			continue;
		l = gw_ask_limit(g, a);
		w->slot[i].w = w;
		w->slot[i].i = i;
		w->pending++;
		sl_store_charge(g->store, &l, r->tenant, a->key, a->cost, on_chain_answer,
				&w->slot[i]);
	}
	if (--w->pending > 0)
		return;
	chain_judge(w);
}

static void on_chain_answer(void *arg, int allowed, uint32_t retry_ms, int answer)
{
	struct gw_chain_slot *s = arg;
	struct gw_chain_wait *w = s->w;

	if (w->r) {
		struct gw_ask *a = &w->r->chain.ask[s->i];

		if (answer != SL_ANS_EXACT)
			w->r->chain.redis_missed = true;
		a->heard = allowed ? 1 : 0;
		a->heard_retry_ms = retry_ms;
	}
	if (--w->pending > 0)
		return;
	if (!w->r) {
		free(w);
		return;
	}
	chain_judge(w);
}

int gw_chain_run(struct gw_req *r, gw_chain_done_fn done)
{
	struct gw_chain *k = &r->chain;
	struct gw_chain_wait *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->r = r;
	k->next = 0;
	k->refused = -1;
	k->retry_ms = 0;
	k->soft_refused = -1;
	k->soft_retry_ms = 0;
	k->done = done;
	k->wait = w;
	chain_send(w);
	return 0;
}

void gw_chain_refund(struct gw_req *r)
{
	struct gateway *g = r->g;
	int i;

	for (i = 0; i < r->chain.n; i++) {
		struct gw_ask *a = &r->chain.ask[i];
		struct sl_limit l;

		if (!a->refund || !a->charged)
			continue;
		a->charged = false;
		if (!counter_on(g, a->ctr))
			continue;
		l = gw_ask_limit(g, a);
		sl_store_charge(g->store, &l, r->tenant, a->key, -a->cost, on_ignored, NULL);
	}
}

void gw_chain_settle(struct gw_req *r, bool success)
{
	struct gateway *g = r->g;
	int i;

	for (i = 0; i < r->chain.n; i++) {
		struct gw_ask *a = &r->chain.ask[i];
		bool charged = a->charged;
		struct sl_limit l;

		a->charged = false;
		if (a->then == GW_THEN_KEEP || !counter_on(g, a->ctr))
			continue;
		l = gw_ask_limit(g, a);
		if (a->then == GW_THEN_CLEAR && success)
			sl_store_clear(g->store, &l, r->tenant, a->key);
		else if (a->then == GW_THEN_SPEND && !success && charged)
			/* The success it held for this request did not happen: give it back. */
			sl_store_charge(g->store, &l, r->tenant, a->key, -a->cost, on_ignored,
					NULL);
	}
}
