// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * What the endpoints beyond /login share. /token, /mfa/send and /mfa/verify,
 * /password-reset, /register and /magic/{token} go through the path /login does: route and
 * cost class, then their counters in the store (each a composite key, asked one after the
 * other so a refusal by the first charges nothing further), then admission, then a handler
 * on the loop. Each lives in its own room (gw_ep_*.c) with the counters it asks and what it
 * answers (docs/endpoints.md); here are the pieces they have in common: their keys, the
 * refusal of one of their counters, counting and sending an answer, issuing a token, and
 * handing a message to the delivery.
 */
#include <stdio.h>
#include <time.h>

#include <event2/buffer.h>

#include "audit.h"
#include "gw_internal.h"
#include "log.h"

struct gw_ask *gw_ep_ask(struct gw_req *r, int ctr, const char *what, const char *a,
			 const char *b)
{
	const char *parts[4] = { what, r->tenant, a ? a : "", b ? b : "" };
	char key[33];

	gw_counter_key(r->g, "sluice endpoint counters", parts, 4, key);
	return gw_chain_ask(r, ctr, key);
}

void gw_ep_run(struct gw_req *r, gw_chain_done_fn done)
{
	if (gw_chain_run(r, done))
		gw_ep_answer(r, 503, "Service Unavailable", BODY_503, false);
}

/*
 * A counter refused: machine-facing /token says so with 429, Retry-After and the RateLimit
 * fields; /mfa/send (the caller holds a first factor: it may know a send was refused, not
 * why) with 429 and Retry-After; the interactive endpoints answer exactly what they answer
 * a failure. Whatever the answer, it is a shed of the tenant (endpoint_counter).
 */
void gw_ep_refused(struct gw_req *r, const struct gw_ask *a, uint32_t retry_ms)
{
	const struct gw_endpoint *e = gw_endpoints[r->kind];
	struct gateway *g = r->g;
	struct gw_tstats *t = &g->ts[r->job.tenant];
	uint32_t ra = (retry_ms + 999) / 1000;

	g->ep[r->kind].throttled++;
	t->shed++;
	t->shed_by_reason[GW_SHED_COUNTER]++;
	if (r->job.cls < GW_MAX_CLASSES)
		t->shed_by_class[r->job.cls]++;
	if (ra < 1)
		ra = 1;
	gw_audit(r, AUDIT_REFUSAL, sl_counter_name(a->ctr),
		 e->refusal ? "refused_as_failure" : "429", NULL);
	gw_admit_done(r);
	if (e->refusal) {
		gw_respond_refusal(r);
		return;
	}
	if (e->ratelimit_fields) {
		struct sl_limit l = gw_ask_limit(g, a);

		r->rl_ctr = a->ctr;
		r->rl_rate = l.rate;
		r->rl_burst = l.burst;
	}
	gw_respond(r, 429, "Too Many Requests", BODY_429, ra, true, false);
}

void gw_ep_checked(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms)
{
	if (refused)
		gw_ep_refused(r, refused, retry_ms);
	else
		gw_admit(r);
}

void gw_ep_ask_user(struct gw_req *r, gw_chain_done_fn done)
{
	gw_admit_done(r);
	gw_chain_begin(r);
	gw_ep_ask(r, SL_CTR_USER, "user", r->user, NULL);
	gw_ep_run(r, done);
}

/* Answer an endpoint request. Interactive failures pass @floor. */
void gw_ep_answer(struct gw_req *r, int code, const char *reason, const char *body,
		  bool floor)
{
	struct gateway *g = r->g;

	gw_admit_done(r);
	if (code >= 200 && code < 300)
		g->ts[r->job.tenant].ok++;
	else if (code == 401)
		g->ts[r->job.tenant].unauthorized++;
	gw_respond(r, code, reason, body, 0, floor, false);
}

void gw_ep_uniform(struct gw_req *r)
{
	const struct gw_answer *u = gw_endpoints[r->kind]->refusal;

	gw_ep_answer(r, u->code, u->reason, u->body, true);
}

void gw_json_token(struct evbuffer *b, const char *tok, uint32_t ttl, const char *refresh)
{
	evbuffer_add_printf(b, "{\"access_token\":\"%s\",\"token_type\":\"Bearer\",\"expires_in\":%u",
			    tok, ttl);
	if (refresh)
		evbuffer_add_printf(b, ",\"refresh_token\":\"%s\"", refresh);
	evbuffer_add_printf(b, "}");
}

/* Issue a token of @kind for @name and answer 200 with it (and @refresh, if any). */
void gw_ep_issue(struct gw_req *r, int kind, const char *name, const char *refresh)
{
	struct gateway *g = r->g;
	char tok[GW_TOKEN_MAX + 1];
	int n = gw_token_mint(g, kind, r->tenant, name, g->cfg->gw.token_ttl_s, tok, sizeof(tok));

	if (n < 0) {
		gw_ep_answer(r, 503, "Service Unavailable", BODY_503, false);
		return;
	}
	g->ep[r->kind].ok++;
	gw_json_token(evhttp_request_get_output_buffer(r->req), tok, g->cfg->gw.token_ttl_s,
		      refresh);
	gw_ep_answer(r, 200, "OK", NULL, false);
}

void gw_ep_deliver(struct gw_req *r, const char *kind, const char *text)
{
	struct gateway *g = r->g;

	if (gw_deliver(&g->deliv, r->tenant, r->user, kind, text)) {
		g->outbound_failed++;
		log_warn("gateway: delivery of a %s for tenant %s failed", kind, r->tenant);
	}
}
