// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * POST /login, from its body to its answer: the username and password, what the stream job
 * decided about the account or the password tried (its escalations: a delay, a step-up, a
 * block), the login counters asked through the chain (gw_chain.h), the Argon2id job (a
 * dummy hash of equal cost for an account nobody has) and the outcome: a token, or the one
 * 401. Every outcome also goes to the stream job as an event of keyed hashes, never the
 * names or passwords themselves. gateway_set_stream() and gateway_stream_action()
 * (gateway.h) live here because only logins hear the stream job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <sodium.h>

#include "evq.h"
#include "gw_creds.h"
#include "gw_internal.h"
#include "log.h"
#include "stream.h"

/* ---- the stream job: outcome events and its escalations -------------------------------- */

#define ESC_CAP 65536u
#define ESC_PROBE 16
#define ESC_ANY_TENANT 0xffff

struct esc {
	uint8_t h[16];
	uint16_t tenant;
	uint8_t level;
	bool used;
	uint64_t expires_ns;
};

/* The entry for (@h, @tenant): made when @make (over an expired one, or the one expiring
 * soonest in the probe window); NULL when absent or expired. */
static struct esc *esc_find(struct esc *t, const uint8_t h[16], uint16_t tenant, uint64_t now,
			    bool make)
{
	uint64_t k;
	struct esc *victim = NULL, *e;
	unsigned i;

	if (!t)
		return NULL;
	memcpy(&k, h, sizeof(k));
	for (i = 0; i < ESC_PROBE; i++) {
		e = &t[(k + i) & (ESC_CAP - 1)];
		if (e->used && e->tenant == tenant && !memcmp(e->h, h, 16)) {
			if (e->expires_ns > now || make)
				return e;
			return NULL;
		}
		if (!e->used || e->expires_ns <= now) {
			if (!victim || (victim->used && victim->expires_ns > now))
				victim = e;
		} else if (!victim || (victim->used && victim->expires_ns > now &&
					e->expires_ns < victim->expires_ns)) {
			victim = e;
		}
	}
	if (!make)
		return NULL;
	memset(victim, 0, sizeof(*victim));
	victim->used = true;
	memcpy(victim->h, h, 16);
	victim->tenant = tenant;
	return victim;
}

/* Keyed hashes of the account and the password tried: the stream job and the escalation
 * tables see these, never the values. The keys derive from the session key, which every
 * node shares, so the nodes' hashes agree. */
static void stream_ids(struct gateway *g, struct gw_req *r)
{
	crypto_generichash_state st;
	uint8_t k[32];

	crypto_generichash(k, sizeof(k), (const unsigned char *)"sluice stream accounts", 22,
			   g->key, sizeof(g->key));
	crypto_generichash_init(&st, k, sizeof(k), sizeof(r->acct_hash));
	crypto_generichash_update(&st, (const unsigned char *)r->tenant, strlen(r->tenant) + 1);
	crypto_generichash_update(&st, (const unsigned char *)r->user, r->user_len);
	crypto_generichash_final(&st, r->acct_hash, sizeof(r->acct_hash));
	crypto_generichash(k, sizeof(k), (const unsigned char *)"sluice stream passwords", 23,
			   g->key, sizeof(g->key));
	crypto_generichash(r->pw_hash, sizeof(r->pw_hash), (const unsigned char *)r->work.pwd,
			   r->work.pwd_len, k, sizeof(k));
	sodium_memzero(k, sizeof(k));
	r->hashed_ids = true;
}

/* One login outcome to the stream job; never waits (a full queue drops and counts). */
static void emit(struct gw_req *r, bool success)
{
	struct gateway *g = r->g;
	struct sl_outcome_event ev;
	unsigned plen, n, i;

	if (!g->evq || !r->hashed_ids)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.ts_ns = gw_now_ns();
	memcpy(ev.account, r->acct_hash, 16);
	if (!success)
		memcpy(ev.password, r->pw_hash, 16);
	ev.family = r->client.family == 6 ? 6 : 4;
	plen = ev.family == 6 ? g->cfg->stream.prefix_v6 : g->cfg->stream.prefix_v4;
	n = ev.family == 6 ? 16 : 4;
	for (i = 0; i < n; i++) {
		unsigned bits = plen > i * 8 ? plen - i * 8 : 0;

		ev.prefix[i] = bits >= 8 ? r->client.addr[i] :
			       (uint8_t)(r->client.addr[i] & (0xff00u >> bits));
	}
	ev.plen = (uint8_t)plen;
	ev.success = success;
	ev.known = r->known;
	ev.tenant = (uint16_t)(r->tenant_idx >= 0 ? r->tenant_idx : SL_MAX_TENANTS);
	ev.class_id = 255;
	g->st.events++;
	if (!evq_push(g->evq, &ev))
		g->st.events_dropped++;
}

void gateway_set_stream(struct gateway *g, struct stream *st)
{
	g->stream = st;
	g->evq = stream_queue(st);
	if (st && !g->esc_acct) {
		g->esc_acct = calloc(ESC_CAP, sizeof(*g->esc_acct));
		g->esc_pw = calloc(ESC_CAP, sizeof(*g->esc_pw));
		if (!g->esc_acct || !g->esc_pw) {
			log_warn("gateway: out of memory for escalations; the stream job's account "
				 "and password actions are ignored");
			free(g->esc_acct);
			free(g->esc_pw);
			g->esc_acct = g->esc_pw = NULL;
		}
	}
}

void gateway_stream_action(struct gateway *g, const struct stream_action *a)
{
	struct esc *e;

	if (a->kind == STREAM_ACCOUNT_LEVEL) {
		e = esc_find(g->esc_acct, a->hash, a->tenant, gw_now_ns(), true);
		if (e && a->level >= e->level) {
			e->level = a->level;
			e->expires_ns = a->expires_ns;
			log_info("gateway: account escalated to %s by the stream job",
				 a->level >= 3 ? "block" : a->level == 2 ? "step-up" : "delay");
		}
	} else if (a->kind == STREAM_PASSWORD_STEP_UP) {
		e = esc_find(g->esc_pw, a->hash, ESC_ANY_TENANT, gw_now_ns(), true);
		if (e) {
			e->level = 1;
			e->expires_ns = a->expires_ns;
			log_info("gateway: a password tried across many accounts now answers "
				 "step_up_required");
		}
	}
}

/* Before the counters: what the stream job decided about this account or password.
 * Returns true when the login has been answered. */
static bool escalated(struct gw_req *r)
{
	struct gateway *g = r->g;
	uint64_t now = gw_now_ns();
	struct esc *e;

	if (!g->esc_acct)
		return false;
	if (esc_find(g->esc_pw, r->pw_hash, ESC_ANY_TENANT, now, false)) {
		g->st.step_ups++;
		emit(r, false);
		gw_respond(r, 401, "Unauthorized", BODY_STEP_UP, 0, true, false);
		return true;
	}
	e = esc_find(g->esc_acct, r->acct_hash, (uint16_t)r->tenant_idx, now, false);
	if (!e)
		return false;
	if (e->level >= 3) {
		emit(r, false);
		r->min_retry_s = (uint32_t)((e->expires_ns - now) / 1000000000ull) + 1;
		gw_shed(r, GW_SHED_ACCOUNT_BLOCKED);
		return true;
	}
	if (e->level == 2) {
		g->st.step_ups++;
		emit(r, false);
		gw_respond(r, 401, "Unauthorized", BODY_STEP_UP, 0, true, false);
		return true;
	}
	g->st.delayed++;
	r->extra_ns = (uint64_t)g->cfg->stream.ladder_delay_ms * 1000000ull;
	return false;
}

/* ---- the login -------------------------------------------------------------------------- */

static int login_fields(struct gw_req *r, int type, const char *body, size_t len, char *err,
			size_t errlen)
{
	struct gw_field f[2] = {
		{ .name = "username", .buf = r->user, .cap = sizeof(r->user) },
		{ .name = "password", .buf = r->work.pwd, .cap = sizeof(r->work.pwd) },
	};
	int ret = gw_body_fields(type, body, len, f, 2, err, errlen);

	if (!ret && (!f[0].found || !f[1].found)) {
		snprintf(err, errlen, "'username' and 'password' are required");
		ret = -EINVAL;
	}
	if (!ret && !gw_account_norm(r->user, f[0].len)) {
		snprintf(err, errlen, "the username must be 1..%d bytes of UTF-8 without control "
			 "characters or commas", GW_USER_MAX);
		ret = -EINVAL;
	}
	if (!ret && !f[1].len) {
		snprintf(err, errlen, "the password is empty");
		ret = -EINVAL;
	}
	r->user_len = f[0].len;
	r->work.pwd_len = (uint32_t)f[1].len;
	return ret;
}

static void login_checked(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms)
{
	if (!refused) {
		gw_admit(r);
		return;
	}
	r->min_retry_s = (retry_ms + 999) / 1000;
	emit(r, false);
	gw_shed(r, refused->ctr == SL_CTR_LOGIN_FAILURES ? GW_SHED_FAILURES :
		refused->ctr == SL_CTR_LOGIN_SUCCESSES ? GW_SHED_SUCCESSES :
		GW_SHED_TENANT_LOGINS);
}

/*
 * A login's counters: one attempt charged to its (account, prefix) failure budget, asked
 * together with whether the pair may succeed again; then the tenant's logins. An account
 * nobody has is keyed (tenant, "", prefix): the per-source bucket, same threshold, same
 * answer, and the same calls (its success key is never charged). The attempt is given
 * back if the login is shed before its hash; a success clears the pair and spends one of
 * its successes.
 */
static void login_asks(struct gw_req *r)
{
	struct gateway *g = r->g;
	char prefix[GW_PREFIX_STR], user[GW_USER_MAX + 1], key[33];
	const char *parts[3] = { r->tenant, "", prefix };
	struct gw_ask *a;

	r->known = gw_creds_find(g->creds, r->tenant, r->user, r->user_len) != NULL;
	gw_prefix_of(g, r, prefix);
	memcpy(user, r->user, r->user_len);
	user[r->user_len] = '\0';
	if (r->known)
		parts[1] = user;
	gw_counter_key(g, "sluice login counters", parts, 3, key);
	gw_chain_begin(r);
	a = gw_chain_ask(r, SL_CTR_LOGIN_FAILURES, key);
	snprintf(a->shown, sizeof(a->shown), "pair %.16s", key);
	a->with_next = true;
	a->refund = true;
	a->then = GW_THEN_CLEAR;
	a = gw_chain_ask(r, SL_CTR_LOGIN_SUCCESSES, key);
	snprintf(a->shown, sizeof(a->shown), "pair %.16s", key);
	a->cost = 0;
	a->then = GW_THEN_SPEND;
	a = gw_chain_ask(r, SL_CTR_TENANT_LOGINS, "logins");
	snprintf(a->shown, sizeof(a->shown), "tenant %.16s", r->tenant);
}

/* A login hears what the stream job decided, then asks its counters; admission follows
 * their answer. Without the memory to ask them it is admitted at once. */
static void login_start(struct gw_req *r)
{
	if (r->g->stream) {
		stream_ids(r->g, r);
		if (escalated(r))
			return;
	}
	login_asks(r);
	if (gw_chain_run(r, login_checked))
		gw_admit(r);
}

/* On a worker: the account's hash, or the dummy. */
static void login_work(struct gw_req *r)
{
	struct gateway *g = r->g;
	const char *phc = gw_creds_find(g->creds, r->tenant, r->user, r->user_len);

	r->known = phc != NULL;
	/* Unknown accounts verify against a dummy of the same cost: a miss and a wrong
	 * password take the same time and give the same answer. */
	snprintf(r->work.phc, sizeof(r->work.phc), "%s", phc ? phc : g->dummy_phc);
}

/* The hash is done (gw_admit.c has counted it): a token, or the one 401. */
static void finish_login(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct gw_tstats *t = &g->ts[r->job.tenant];

	if (!r->known) {
		g->st.dummy_hashes++;
		t->dummy_hashes++;
	}
	if (r->work.verified && r->known) {
		char tok[GW_TOKEN_MAX + 1];
		int n = gw_token_issue(g->key, r->tenant, r->user, (uint64_t)time(NULL),
				       g->cfg->gw.token_ttl_s, tok, sizeof(tok));

		if (n < 0) {
			gw_respond(r, 503, "Service Unavailable", BODY_503, 0, false, false);
			return;
		}
		t->ok++;
		gw_chain_settle(r, true);
		emit(r, true);
		gw_json_token(evhttp_request_get_output_buffer(r->req), tok,
			      g->cfg->gw.token_ttl_s, NULL);
		gw_respond(r, 200, "OK", NULL, 0, false, false);
		return;
	}
	t->unauthorized++;
	gw_chain_settle(r, false);
	emit(r, false);
	gw_respond(r, 401, "Unauthorized", g->cfg->gw.login_uniform ? BODY_SIGNIN : BODY_401, 0,
		   true, false);
}

static const struct gw_answer signin_failed = { 401, "Unauthorized", BODY_SIGNIN };

const struct gw_endpoint gw_endpoint_login = {
	.path = "/login",
	.method = SL_M_POST,
	.pooled = true,
	.refusal = &signin_failed,
	.fields = login_fields,
	.start = login_start,
	.work = login_work,
	.finish = finish_login,
};
