// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * GET and POST /magic/{token}: the links gw_ep_account.c sends, consumed. GET is a page
 * with a button and spends nothing (mail scanners fetch every link; a GET spent on their
 * behalf would lock out a person who has not clicked yet), and an unknown link gets the
 * same page as a sign-in link. POST is the person pressing the button: a sign-in link asks
 * the account's own budget and signs it in; a sign-up link needs a password, hashed on the
 * Argon2id pool, and makes the account: the credential writer appends its line off the
 * loop (gw_creds.h) and, once it is on disk, the account joins the running table without a
 * re-read of the file. Every failure is the one 401. docs/endpoints.md, "GET
 * /magic/{token} and POST /magic/{token}".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include <sodium.h>

#include "gw_creds.h"
#include "gw_internal.h"
#include "gw_pg.h"
#include "log.h"

/* The live link r->link names, if it is one of this tenant's. */
static struct gw_vault_entry *link_of(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct gw_vault_entry *e;
	uint8_t id[16];

	gw_vault_id_secret(g->vault, GW_V_MAGIC, r->link, id);
	e = gw_vault_get(g->vault, id, (uint64_t)time(NULL));
	return e && e->kind == GW_V_MAGIC && e->tenant == r->tenant_idx ? e : NULL;
}

static void link_failed(struct gw_req *r)
{
	r->g->ep[K_MAGIC].failed++;
	gw_ep_uniform(r);
}

/* The vault in Redis: what its entry for r->link says, as an entry of this table would
 * (@e filled in), or NULL: none, or a box this link's secret does not open. */
static struct gw_vault_entry *link_opened(struct gw_req *r, const char *val,
					  struct gw_vault_entry *e)
{
	int purpose;

	memset(e, 0, sizeof(*e));
	if (!val || gw_vault_link_open(r->g->vault, r->link, val, &purpose, e->name))
		return NULL;
	e->kind = GW_V_MAGIC;
	e->purpose = (uint8_t)purpose;
	e->tenant = (uint16_t)r->tenant_idx;
	return e;
}

/* Ask the vault in Redis for r->link's entry: @pop spends it (one caller only). */
static void link_ask(struct gw_req *r, bool pop, gw_vault_cb cb)
{
	uint8_t id[16];

	gw_vault_id_secret(r->g->vault, GW_V_MAGIC, r->link, id);
	if (pop)
		gw_vault_r_pop(r->g->vault, r->tenant, GW_V_MAGIC, id, cb, r);
	else
		gw_vault_r_get(r->g->vault, r->tenant, GW_V_MAGIC, id, cb, r);
}

static int magic_fields(struct gw_req *r, int type, const char *body, size_t len, char *err,
			size_t errlen)
{
	struct gw_field f = { .name = "password", .buf = r->work.pwd, .cap = sizeof(r->work.pwd) };
	int ret = gw_body_fields(type, body, len, &f, 1, err, errlen);

	if (ret)
		return ret;
	r->work.pwd_len = (uint32_t)f.len;
	return 0;
}

/* Can a reset link set a new password here? Only through gateway.credentials_db's update:
 * the flat file is appended to, never rewritten. */
static bool reset_sets_password(const struct gateway *g)
{
	return g->pg && gw_pg_can(g->pg, GW_PG_UPDATE);
}

/* A sign-up link with a password is confirmed on the hash pool, and so is a reset link with
 * a new one (gateway.credentials_db with an update). A GET is a mail scanner as often as a
 * person: it spends nothing; a POST, its source prefix's budget. */
static void magic_start_with(struct gw_req *r, const struct gw_vault_entry *e)
{
	char prefix[GW_PREFIX_STR];

	if (r->method == SL_M_POST) {
		if (e && e->purpose == GW_LINK_REGISTER) {
			if (!r->work.pwd_len) {
				gw_reject(r, 400, "Bad Request", "bad_request",
					  "finishing a sign-up needs a 'password'");
				return;
			}
			snprintf(r->user, sizeof(r->user), "%s", e->name);
			r->user_len = strlen(r->user);
			r->job.pooled = true;
		} else if (e && e->purpose == GW_LINK_RESET && r->work.pwd_len &&
			   reset_sets_password(r->g)) {
			snprintf(r->user, sizeof(r->user), "%s", e->name);
			r->user_len = strlen(r->user);
			r->job.pooled = true;
		}
	}
	gw_chain_begin(r);
	if (r->method == SL_M_POST) {
		gw_prefix_of(r->g, r, prefix);
		gw_ep_ask(r, SL_CTR_MAGIC_PREFIX, "magic prefix", prefix, NULL);
	}
	gw_ep_run(r, gw_ep_checked);
}

static void magic_start_peeked(void *arg, int res, const char *val)
{
	struct gw_req *r = arg;
	struct gw_vault_entry e;

	if (res == GW_VR_DOWN) {
		gw_vault_unavailable(r);
		return;
	}
	magic_start_with(r, link_opened(r, res == GW_VR_OK ? val : NULL, &e));
	sodium_memzero(&e, sizeof(e));
}

static void magic_start(struct gw_req *r)
{
	if (r->method == SL_M_POST && gw_vault_shared(r->g->vault)) {
		link_ask(r, false, magic_start_peeked);
		return;
	}
	magic_start_with(r, r->method == SL_M_POST ? link_of(r) : NULL);
}

static const char PAGE_HEAD[] = "<!doctype html><html><head><meta charset=\"utf-8\">"
				"<meta name=\"robots\" content=\"noindex\"><title>Confirm</title>"
				"</head><body>";

static void ep_magic_page(struct gw_req *r, const struct gw_vault_entry *e)
{
	struct evbuffer *b = evhttp_request_get_output_buffer(r->req);

	/* A form, and nothing done: mail scanners fetch links, people press buttons. An
	 * unknown link gets the sign-in page too, so a GET tells nobody which links live. */
	evbuffer_add(b, PAGE_HEAD, strlen(PAGE_HEAD));
	if (e && e->purpose == GW_LINK_REGISTER)
		evbuffer_add_printf(b, "<h1>Finish signing up</h1><form method=\"post\">"
				    "<label>Choose a password <input type=\"password\" "
				    "name=\"password\" required></label>"
				    "<button type=\"submit\">Create my account</button>"
				    "</form></body></html>");
	else if (e && e->purpose == GW_LINK_RESET && reset_sets_password(r->g))
		evbuffer_add_printf(b, "<h1>Choose a new password</h1><form method=\"post\">"
				    "<label>New password <input type=\"password\" "
				    "name=\"password\" required></label>"
				    "<button type=\"submit\">Set it and sign in</button>"
				    "</form></body></html>");
	else
		evbuffer_add_printf(b, "<h1>Continue signing in</h1><form method=\"post\">"
				    "<button type=\"submit\">Continue</button></form>"
				    "</body></html>");
	r->ctype = "text/html; charset=utf-8";
	r->g->ep[K_MAGIC].ok++;
	gw_ep_answer(r, 200, "OK", NULL, false);
}

/* A reset's revocation is in Redis too: the person signs in afresh. */
static void magic_reset_issue(struct gw_req *r)
{
	gw_ep_issue(r, GW_TOK_PASSWORD, r->user, NULL);
}

/* A reset link's POST, its entry found (and spent) in this table or in Redis. */
static void magic_reset_spent(struct gw_req *r, struct gw_vault_entry *e)
{
	/* Sign-ups are confirmed on the hash pool (magic_finish), never here. */
	if (!e || e->purpose == GW_LINK_REGISTER) {
		link_failed(r);
		return;
	}
	gw_vault_del(e); /* consumed: once */
	/* A password reset: whoever holds the account's tokens from before it (the reason one
	 * resets) holds nothing now, on any node; the person signs in afresh with this one. */
	if (gw_vault_shared(r->g->vault)) {
		gw_vault_revoke_then(r, magic_reset_issue);
		return;
	}
	gw_account_revoke(r->g, r->tenant, r->user);
	gw_ep_issue(r, GW_TOK_PASSWORD, r->user, NULL);
}

static void magic_popped(void *arg, int res, const char *val)
{
	struct gw_req *r = arg;
	struct gw_vault_entry e;

	if (res == GW_VR_DOWN) {
		gw_vault_unavailable(r);
		return;
	}
	magic_reset_spent(r, link_opened(r, res == GW_VR_OK ? val :
								    NULL, &e));
	sodium_memzero(&e, sizeof(e));
}

static void magic_post_done(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms)
{
	if (refused) {
		gw_ep_refused(r, refused, retry_ms);
		return;
	}
	if (gw_vault_shared(r->g->vault)) {
		link_ask(r, true, magic_popped);
		return;
	}
	magic_reset_spent(r, link_of(r));
}

static void ep_magic_with(struct gw_req *r, const struct gw_vault_entry *e);

static void ep_magic_peeked(void *arg, int res, const char *val)
{
	struct gw_req *r = arg;
	struct gw_vault_entry e;

	if (res == GW_VR_DOWN) {
		gw_vault_unavailable(r);
		return;
	}
	ep_magic_with(r, link_opened(r, res == GW_VR_OK ? val : NULL, &e));
	sodium_memzero(&e, sizeof(e));
}

/* On the loop: the page, or a sign-in link's POST. */
static void ep_magic(struct gw_req *r)
{
	if (gw_vault_shared(r->g->vault)) {
		link_ask(r, false, ep_magic_peeked);
		return;
	}
	ep_magic_with(r, link_of(r));
}

static void ep_magic_with(struct gw_req *r, const struct gw_vault_entry *e)
{
	if (r->method == SL_M_GET) {
		ep_magic_page(r, e);
		return;
	}
	if (!e) {
		link_failed(r);
		return;
	}
	snprintf(r->user, sizeof(r->user), "%s", e->name);
	r->user_len = strlen(r->user);
	/* The person pressed the button: now the account's own budget is spent. */
	gw_ep_ask_user(r, magic_post_done);
}

static void signup_done(struct gw_req *r);
static void signup_inserted(void *arg, int res, const char *phc);
static void reset_written(void *arg, int res, const char *phc);

/* A sign-up: the worker makes the hash with the running parameters. */
static void magic_work(struct gw_req *r)
{
	const struct sl_gateway_cfg *c = &r->g->cfg->gw;

	r->work.make = true;
	r->work.m_kib = c->m_cost_kib;
	r->work.t = c->t_cost;
	r->work.p = c->parallelism;
}

/* A sign-up link came back with a password and the worker made its hash (gw_admit.c has
 * counted it): hand the account's line to the credential writer. The answer waits for it
 * to be on disk (signup_stored), the loop does not. */
static void magic_finish_with(struct gw_req *r, struct gw_vault_entry *e);

/* The vault in Redis: the link is spent now, before the account is written or the password
 * set, so two presses on two nodes cannot both go through. */
static void magic_finish_popped(void *arg, int res, const char *val)
{
	struct gw_req *r = arg;
	struct gw_vault_entry e;

	if (res == GW_VR_DOWN) {
		sodium_memzero(r->work.phc, sizeof(r->work.phc));
		gw_vault_unavailable(r);
		return;
	}
	magic_finish_with(r, link_opened(r, res == GW_VR_OK ? val :
								    NULL, &e));
	sodium_memzero(&e, sizeof(e));
}

static void magic_finish(struct gw_req *r)
{
	if (gw_vault_shared(r->g->vault)) {
		link_ask(r, true, magic_finish_popped);
		return;
	}
	magic_finish_with(r, link_of(r));
}

static void magic_finish_with(struct gw_req *r, struct gw_vault_entry *e)
{
	struct gateway *g = r->g;
	struct gw_work *w = &r->work;
	struct gw_cappend *a;
	int ret;

	if (w->verified && e && e->purpose == GW_LINK_RESET && reset_sets_password(g)) {
		/* A new password: the link is spent now (a second press cannot race this one),
		 * the configured update writes the hash, and reset_written signs the person in. */
		gw_vault_del(e);
		gw_pg_query(g->pg, GW_PG_UPDATE, r->tenant, r->user, w->phc, 0, reset_written, r);
		sodium_memzero(w->phc, sizeof(w->phc));
		return;
	}
	/* A name taken meanwhile, or being written for another link, fails like a spent link. */
	if (!w->verified || !e || e->purpose != GW_LINK_REGISTER ||
	    !gw_account_canonical(r->user, r->user_len) ||
	    gw_creds_find(g->creds, r->tenant, r->user, r->user_len) ||
	    gw_cwriter_pending(g->cw, r->tenant, r->user)) {
		link_failed(r);
		return;
	}
	if (g->pg) {
		/* gateway.credentials_db: the configured insert makes the account; a name taken
		 * meanwhile is the table's unique constraint's to refuse. */
		gw_pg_query(g->pg, GW_PG_INSERT, r->tenant, r->user, w->phc, 0, signup_inserted,
			    r);
		sodium_memzero(w->phc, sizeof(w->phc));
		return;
	}
	if (!g->cfg->gw.credentials[0]) {
		log_error("gateway: cannot record a sign-up for tenant %s: no gateway.credentials "
			  "file", r->tenant);
		gw_respond(r, 503, "Service Unavailable", BODY_503, 0, false, false);
		return;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		ret = -ENOMEM;
	} else {
		snprintf(a->path, sizeof(a->path), "%s", g->cfg->gw.credentials);
		snprintf(a->tenant, sizeof(a->tenant), "%s", r->tenant);
		snprintf(a->account, sizeof(a->account), "%s", r->user);
		snprintf(a->phc, sizeof(a->phc), "%s", w->phc);
		a->origin = *gw_creds_origin(g->creds);
		a->arg = r;
		ret = gw_cwriter_submit(g->cw, a);
	}
	sodium_memzero(w->phc, sizeof(w->phc));
	if (ret) {
		free(a);
		log_error("gateway: cannot record a sign-up for tenant %s: %s", r->tenant,
			  ret == -EBUSY ? "too many sign-ups are being written" : strerror(-ret));
		gw_respond(r, 503, "Service Unavailable", BODY_503, 0, false, false);
	}
}

/* The account's line is on disk (or could not be put there): add it to the running table,
 * spend the link, sign the person in. */
static void signup_stored(struct gw_req *r, const struct gw_cappend *a)
{
	struct gateway *g = r->g;
	int ret;

	if (a->ret == -EEXIST) {
		/* sluicectl user add put the name there first: the link makes nothing now. */
		link_failed(r);
		return;
	}
	if (a->ret) {
		log_error("gateway: cannot record a sign-up for tenant %s: %s", r->tenant, a->err);
		gw_respond(r, 503, "Service Unavailable", BODY_503, 0, false, false);
		return;
	}
	/* -EEXIST: a reload read the line already. */
	ret = gw_creds_insert(g->creds, r->tenant, r->user, a->phc);
	if (ret && ret != -EEXIST)
		log_error("gateway: a sign-up for tenant %s is in %s but not in the running "
			  "table (%s): it signs in after the next reload", r->tenant, a->path,
			  strerror(-ret));
	signup_done(r);
}

/* The account is made: spend the link, sign the person in. */
static void signup_done(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct gw_tstats *t = &g->ts[r->job.tenant];
	struct gw_vault_entry *e;
	char tok[GW_TOKEN_MAX + 1];

	e = link_of(r);
	if (e && e->purpose == GW_LINK_REGISTER)
		gw_vault_del(e);
	g->ep[K_MAGIC].ok++;
	t->ok++;
	if (gw_token_mint(g, GW_TOK_PASSWORD, r->tenant, r->user, g->cfg->gw.token_ttl_s, tok,
			  sizeof(tok)) < 0) {
		gw_respond(r, 503, "Service Unavailable", BODY_503, 0, false, false);
		return;
	}
	gw_json_token(evhttp_request_get_output_buffer(r->req), tok, g->cfg->gw.token_ttl_s,
		      NULL);
	gw_respond(r, 201, "Created", NULL, 0, false, false);
}

/* gateway.credentials_db ran the insert: a row made, a name taken, or the database away. */
static void signup_inserted(void *arg, int res, const char *phc)
{
	struct gw_req *r = arg;

	(void)phc;
	if (res == GW_PG_EXISTS || res == GW_PG_NONE) {
		link_failed(r); /* taken meanwhile: like a spent link */
		return;
	}
	if (res != GW_PG_FOUND) {
		log_error("gateway: cannot record a sign-up for tenant %s: credentials_db %s",
			  r->tenant, gw_pg_result_name(res));
		gw_respond(r, 503, "Service Unavailable", BODY_503, r->g->cfg->gw.db.retry_after_s,
			   false, false);
		return;
	}
	signup_done(r);
}

/* gateway.credentials_db ran the update of a reset: the account's earlier tokens end (as a
 * reset link's always do) and the person is signed in. */
static void reset_written(void *arg, int res, const char *phc)
{
	struct gw_req *r = arg;

	(void)phc;
	if (res == GW_PG_NONE) {
		link_failed(r); /* the account is gone */
		return;
	}
	if (res != GW_PG_FOUND) {
		log_error("gateway: cannot set a new password for tenant %s: credentials_db %s (the "
			  "link is spent; a new reset sends another)", r->tenant, gw_pg_result_name(res));
		gw_respond(r, 503, "Service Unavailable", BODY_503, r->g->cfg->gw.db.retry_after_s,
			   false, false);
		return;
	}
	if (gw_vault_shared(r->g->vault)) {
		gw_vault_revoke_then(r, magic_reset_issue);
		return;
	}
	gw_account_revoke(r->g, r->tenant, r->user);
	gw_ep_issue(r, GW_TOK_PASSWORD, r->user, NULL);
}

void gw_on_signups(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *g = arg;
	struct gw_cappend *a = gw_cwriter_collect(g->cw), *nx;

	(void)fd;
	(void)what;
	for (; a; a = nx) {
		nx = a->next;
		signup_stored(a->arg, a);
		sodium_memzero(a->phc, sizeof(a->phc));
		free(a);
	}
}

static const struct gw_answer link_unusable = { 401, "Unauthorized", BODY_LINK_FAIL };

const struct gw_endpoint gw_endpoint_magic = {
	.path = "/magic/",
	.method = SL_M_GET,
	.method2 = SL_M_POST,
	.prefix = true,
	.body_optional = true,
	.refusal = &link_unusable,
	.fields = magic_fields,
	.start = magic_start,
	.run = ep_magic,
	.work = magic_work,
	.finish = magic_finish,
};
