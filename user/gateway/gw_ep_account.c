// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * POST /password-reset and POST /register: a username in, one message out, and always the
 * one 202 behind the floor. Whether the account exists decides only what the message says
 * (a link, or a notice to the address given): both send, so the counters, the work and the
 * answer are the same either way and nobody learns who has an account. The links made here
 * are consumed in gw_ep_magic.c. docs/endpoints.md, "POST /password-reset", "POST
 * /register".
 *
 * The per-account budget is composite with the source, so nobody can spend a victim's
 * (issue 14): a reset's is per (account, where): the allocation when the account signs in
 * from it (gw_usual.h), else one "elsewhere" every other source shares; a registration's is
 * per (name, allocation), a name nobody holds having no usual source. Three resets an hour
 * from anywhere no longer silence the links the person asks for from home.
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include <sodium.h>

#include "gw_creds.h"
#include "gw_internal.h"
#include "gw_pg.h"
#include "gw_usual.h"

static int account_fields(struct gw_req *r, int type, const char *body, size_t len, char *err,
			  size_t errlen)
{
	struct gw_field f = { .name = "username", .buf = r->user, .cap = sizeof(r->user) };
	int ret = gw_body_fields(type, body, len, &f, 1, err, errlen);

	if (ret)
		return ret;
	r->user_len = f.len;
	if (!f.found || !gw_account_norm(r->user, f.len)) {
		snprintf(err, errlen, "'username' must be " GW_ACCOUNT_RULE);
		return -EINVAL;
	}
	return 0;
}

/* Per source prefix, per (account named, where), the tenant's, and the tenant's outbound
 * messages. */
static void account_start(struct gw_req *r)
{
	bool reset = r->kind == K_RESET;
	char prefix[GW_PREFIX_STR], where[GW_PREFIX_STR];

	gw_prefix_of(r->g, r, prefix);
	if (reset)
		gw_usual_where(r, GW_USUAL_PASSWORD, where);
	else
		gw_parent_of(r->g, r, where);
	gw_chain_begin(r);
	gw_ep_ask(r, reset ? SL_CTR_RESET_PREFIX : SL_CTR_REGISTER_PREFIX,
		  reset ? "reset prefix" : "register prefix", prefix, NULL);
	gw_ep_ask(r, reset ? SL_CTR_RESET_ACCOUNT : SL_CTR_REGISTER_ACCOUNT,
		  reset ? "reset account" : "register account", r->user, where);
	gw_ep_ask(r, reset ? SL_CTR_RESET_TENANT : SL_CTR_REGISTER_TENANT,
		  reset ? "reset tenant" : "register tenant", NULL, NULL);
	/* Known or not, every request sends one message: the same counters either way, so
	 * the budgets say nothing about who has an account. */
	gw_ep_ask(r, SL_CTR_OUTBOUND, "outbound", NULL, NULL);
	gw_ep_run(r, gw_ep_checked);
}

/* A magic link for @purpose to r->user, delivered as @kind. */
static void ep_link(struct gw_req *r, int purpose, const char *kind)
{
	struct gateway *g = r->g;
	struct gw_vault_entry *e;
	char secret[GW_SECRET_TEXT], text[GW_SECRET_TEXT + 192];
	uint8_t id[16];
	uint64_t now_s = (uint64_t)time(NULL);

	gw_vault_new_secret(secret);
	gw_vault_id_secret(g->vault, GW_V_MAGIC, secret, id);
	e = gw_vault_put(g->vault, id, now_s);
	e->kind = GW_V_MAGIC;
	e->purpose = (uint8_t)purpose;
	e->tenant = (uint16_t)r->tenant_idx;
	e->exp_s = now_s + g->cfg->gw.magic_ttl_s;
	snprintf(e->name, sizeof(e->name), "%s", r->user);
	snprintf(text, sizeof(text), "link=%s/magic/%s valid_s=%u", g->cfg->gw.link_base, secret,
		 g->cfg->gw.magic_ttl_s);
	gw_ep_deliver(r, kind, text);
	sodium_memzero(secret, sizeof(secret));
	sodium_memzero(text, sizeof(text));
	g->links_sent++;
}

/* The vault in Redis answered (or not): the link it holds now goes out, or the notice. A
 * request that sends a notice made the same one round trip, so an outage answers 503 to
 * all alike and tells nobody who has an account. */
static void account_vault_done(void *arg, int res, const char *val)
{
	struct gw_req *r = arg;
	struct gateway *g = r->g;
	char text[GW_SECRET_TEXT + 192];
	bool reset = r->kind == K_RESET;

	(void)val;
	if (res == GW_VR_DOWN) {
		sodium_memzero(r->link, sizeof(r->link));
		gw_vault_unavailable(r);
		return;
	}
	if (r->link[0]) {
		snprintf(text, sizeof(text), "link=%s/magic/%s valid_s=%u", g->cfg->gw.link_base,
			 r->link, g->cfg->gw.magic_ttl_s);
		gw_ep_deliver(r, reset ? "reset_link" : "register_link", text);
		sodium_memzero(text, sizeof(text));
		sodium_memzero(r->link, sizeof(r->link));
		g->links_sent++;
	} else {
		gw_ep_deliver(r, "notice", reset ? "reason=reset_without_account" :
			      "reason=already_registered");
		g->notices_sent++;
	}
	g->ep[r->kind].ok++;
	gw_ep_uniform(r);
}

/* Shared vault: the link's sealed entry into Redis first; r->link keeps the secret until it
 * is there. Otherwise a look-up of a name nobody can hold, for the same round trip. */
static void account_vault_send(struct gw_req *r, bool known)
{
	struct gateway *g = r->g;
	bool link = r->kind == K_RESET ? known : !known;
	char val[GW_VAULT_VALUE_MAX];
	uint8_t id[16];

	gw_admit_done(r);
	gw_vault_new_secret(r->link);
	gw_vault_id_secret(g->vault, GW_V_MAGIC, r->link, id);
	if (!link) {
		sodium_memzero(r->link, sizeof(r->link));
		gw_vault_r_get(g->vault, r->tenant, GW_V_MAGIC, id, account_vault_done, r);
		return;
	}
	if (gw_vault_link_seal(g->vault, r->link, r->kind == K_RESET ? GW_LINK_RESET :
			       GW_LINK_REGISTER, r->user, val)) {
		sodium_memzero(r->link, sizeof(r->link));
		gw_ep_answer(r, 503, "Service Unavailable", BODY_503, false);
		return;
	}
	gw_vault_r_put(g->vault, r->tenant, GW_V_MAGIC, id, val, g->cfg->gw.magic_ttl_s,
		       account_vault_done, r);
}

/* /password-reset and /register: one message either way, one answer whatever happened. */
static void ep_account_known(struct gw_req *r, bool known)
{
	struct gateway *g = r->g;

	if (gw_vault_shared(g->vault)) {
		account_vault_send(r, known);
		return;
	}
	if (r->kind == K_RESET) {
		if (known) {
			ep_link(r, GW_LINK_RESET, "reset_link");
		} else {
			gw_ep_deliver(r, "notice", "reason=reset_without_account");
			g->notices_sent++;
		}
		g->ep[K_RESET].ok++;
		gw_ep_uniform(r);
		return;
	}
	if (known) {
		gw_ep_deliver(r, "notice", "reason=already_registered");
		g->notices_sent++;
	} else {
		ep_link(r, GW_LINK_REGISTER, "register_link");
	}
	g->ep[K_REGISTER].ok++;
	gw_ep_uniform(r);
}

/* gateway.credentials_db answered whether the account exists (a row, usable or not). */
static void account_looked_up(void *arg, int res, const char *phc)
{
	struct gw_req *r = arg;
	struct gateway *g = r->g;

	(void)phc;
	if (gw_pg_failed(res) && g->cfg->gw.db.fail != SL_DB_FAIL_FILE) {
		/* Nobody can be told apart while the database is away: the same 503 for all. */
		gw_admit_done(r);
		gw_respond(r, 503, "Service Unavailable", BODY_503, g->cfg->gw.db.retry_after_s,
			   false, false);
		return;
	}
	ep_account_known(r, gw_pg_failed(res) ?
			 gw_creds_find(g->creds, r->tenant, r->user, r->user_len) != NULL :
			 res == GW_PG_FOUND || res == GW_PG_MALFORMED);
}

static void ep_account(struct gw_req *r)
{
	struct gateway *g = r->g;

	if (g->pg) {
		/* The inline part's CPU now: the wait for the database is not this request's. */
		gw_admit_done(r);
		gw_pg_query(g->pg, GW_PG_LOOKUP, r->tenant, r->user, NULL, r->job.deadline_ns,
			    account_looked_up, r);
		return;
	}
	ep_account_known(r, gw_creds_find(g->creds, r->tenant, r->user, r->user_len) != NULL);
}

static const struct gw_answer reset_sent = { 202, "Accepted", BODY_RESET_SENT };
static const struct gw_answer register_sent = { 202, "Accepted", BODY_REGISTER_SENT };

const struct gw_endpoint gw_endpoint_reset = {
	.path = "/password-reset",
	.method = SL_M_POST,
	.refusal = &reset_sent,
	.fields = account_fields,
	.start = account_start,
	.run = ep_account,
};

const struct gw_endpoint gw_endpoint_register = {
	.path = "/register",
	.method = SL_M_POST,
	.refusal = &register_sent,
	.fields = account_fields,
	.start = account_start,
	.run = ep_account,
};
