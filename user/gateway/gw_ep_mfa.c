// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A second factor after a first: POST /mfa/send makes a 6-digit code for the account a
 * first-factor token names and hands it to the delivery; POST /mfa/verify checks it. Both
 * need `Authorization: Bearer` with a password token (from /login or a sign-in link) of the
 * same tenant. The verify's attempts are counted per account before the code is looked
 * at, whatever the code and however many were sent, so a resend buys no fresh guesses; a
 * right code then asks the account's own budget before it is spent. docs/endpoints.md,
 * "POST /mfa/send and POST /mfa/verify".
 *
 * Both budgets are per (account, where): the allocation when the account has completed a
 * second factor from it (gw_usual.h), else one "elsewhere" every other source shares. Who
 * holds the password and guesses codes from elsewhere spends that one, at the same bound
 * per account as before, and not the one the person uses at home (issue 14).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "gw_internal.h"
#include "gw_usual.h"

static void mfa_counters(struct gw_req *r);

static void mfa_unauthorized(struct gw_req *r)
{
	struct gateway *g = r->g;

	g->ts[r->job.tenant].unauthorized++;
	g->ep[r->kind].failed++;
	gw_respond(r, 401, "Unauthorized", r->kind == K_MFA_SEND ? BODY_401_TOKEN :
		   BODY_MFA_FAIL, 0, true, false);
}

/* Redis said whether a reset on any node ended the first factor's account tokens. */
static void mfa_revoked(struct gw_req *r, void *arg, int res)
{
	(void)arg;
	if (res == GW_VR_DOWN)
		gw_vault_unavailable(r);
	else if (res != GW_VR_OK)
		mfa_unauthorized(r);
	else
		mfa_counters(r);
}

/* The second factor follows a first: a password token names the account. */
static void mfa_start(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct gw_token_claims cl;
	char token[GW_TOKEN_MAX + 1];
	size_t tlen = gw_bearer_of(r->req, token);
	int tk;

	if (!tlen || gw_token_any(g, token, tlen, &cl, &tk) || tk != GW_TOK_PASSWORD ||
	    strcmp(cl.tenant, r->tenant) || !gw_account_canonical(cl.account, strlen(cl.account))) {
		sodium_memzero(token, sizeof(token));
		mfa_unauthorized(r);
		return;
	}
	sodium_memzero(token, sizeof(token));
	snprintf(r->user, sizeof(r->user), "%s", cl.account);
	r->user_len = strlen(r->user);
	if (gw_vault_shared(g->vault)) {
		/* And not ended by a reset on another node (gw_vault_revoke_then). */
		gw_vault_check_revoked(r, r->user, cl.iat_ns, mfa_revoked, NULL);
		return;
	}
	mfa_counters(r);
}

/* Then the counters: sends per account and the tenant's outbound messages, or the attempts
 * per account. */
static void mfa_counters(struct gw_req *r)
{
	char where[GW_PREFIX_STR];

	gw_usual_where(r, GW_USUAL_MFA, where);
	gw_chain_begin(r);
	if (r->kind == K_MFA_SEND) {
		gw_ep_ask(r, SL_CTR_MFA_SENDS, "mfa sends", r->user, where);
		gw_ep_ask(r, SL_CTR_OUTBOUND, "outbound", NULL, NULL);
	} else {
		/* Per account and where, whatever the code: a resend buys no fresh guesses. */
		gw_ep_ask(r, SL_CTR_MFA_ATTEMPTS, "mfa attempts", r->user, where);
	}
	gw_ep_run(r, gw_ep_checked);
}

static void mfa_deliver(struct gw_req *r, const char *code)
{
	struct gateway *g = r->g;
	char text[96];

	snprintf(text, sizeof(text), "code=%s valid_s=%u", code, g->cfg->gw.otp_ttl_s);
	gw_ep_deliver(r, "otp", text);
	sodium_memzero(text, sizeof(text));
	g->otp_sent++;
	g->ep[K_MFA_SEND].ok++;
	gw_ep_answer(r, 202, "Accepted", BODY_OTP_SENT, false);
}

/* Redis holds the code's hash: only now is the code sent (r->code6 kept it meanwhile). */
static void mfa_stored(void *arg, int res, const char *val)
{
	struct gw_req *r = arg;
	char code[7];

	(void)val;
	snprintf(code, sizeof(code), "%s", r->code6);
	sodium_memzero(r->code6, sizeof(r->code6));
	if (res != GW_VR_OK)
		gw_vault_unavailable(r);
	else
		mfa_deliver(r, code);
	sodium_memzero(code, sizeof(code));
}

static void ep_mfa_send(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct gw_vault_entry *e;
	uint8_t id[16], check[32];
	char code[7], text[96];
	uint64_t now_s = (uint64_t)time(NULL);

	/* One code per account: this one replaces, and so invalidates, any before it. */
	gw_vault_new_code(g->vault, (uint16_t)r->tenant_idx, r->user, code, check);
	gw_vault_id_name(g->vault, GW_V_OTP, (uint16_t)r->tenant_idx, r->user, id);
	if (gw_vault_shared(g->vault)) {
		char val[GW_VAULT_VALUE_MAX];

		gw_vault_code_value(check, val);
		memcpy(r->code6, code, sizeof(code));
		sodium_memzero(code, sizeof(code));
		gw_vault_r_put(g->vault, r->tenant, GW_V_OTP, id, val, g->cfg->gw.otp_ttl_s,
			       mfa_stored, r);
		return;
	}
	e = gw_vault_put(g->vault, id, now_s);
	e->kind = GW_V_OTP;
	e->tenant = (uint16_t)r->tenant_idx;
	e->exp_s = now_s + g->cfg->gw.otp_ttl_s;
	memcpy(e->check, check, sizeof(check));
	snprintf(e->name, sizeof(e->name), "%s", r->user);
	snprintf(text, sizeof(text), "code=%s valid_s=%u", code, g->cfg->gw.otp_ttl_s);
	gw_ep_deliver(r, "otp", text);
	sodium_memzero(code, sizeof(code));
	sodium_memzero(text, sizeof(text));
	g->otp_sent++;
	g->ep[K_MFA_SEND].ok++;
	gw_ep_answer(r, 202, "Accepted", BODY_OTP_SENT, false);
}

static int mfa_verify_fields(struct gw_req *r, int type, const char *body, size_t len,
			     char *err, size_t errlen)
{
	struct gw_field f = { .name = "code", .buf = r->code6, .cap = sizeof(r->code6) };
	int ret = gw_body_fields(type, body, len, &f, 1, err, errlen);

	if (ret)
		return ret;
	r->code_len = f.len;
	if (!f.found) {
		snprintf(err, errlen, "'code' is required");
		return -EINVAL;
	}
	return 0;
}

/* The account's live code, if the one presented is it. */
static struct gw_vault_entry *code_of(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct gw_vault_entry *e;
	uint8_t id[16];

	gw_vault_id_name(g->vault, GW_V_OTP, (uint16_t)r->tenant_idx, r->user, id);
	e = gw_vault_get(g->vault, id, (uint64_t)time(NULL));
	return e && gw_vault_code_ok(g->vault, e, r->code6, r->code_len) ? e : NULL;
}

static void mfa_failed(struct gw_req *r)
{
	r->g->ep[K_MFA_VERIFY].failed++;
	gw_ep_uniform(r);
}

/* r's code as Redis holds it, and the id it is under; false: no 6-digit code. */
static bool shared_code(struct gw_req *r, uint8_t id[16], char val[GW_VAULT_VALUE_MAX])
{
	struct gateway *g = r->g;

	gw_vault_id_name(g->vault, GW_V_OTP, (uint16_t)r->tenant_idx, r->user, id);
	return gw_vault_code_check(g->vault, (uint16_t)r->tenant_idx, r->user, r->code6,
				   r->code_len, val);
}

/* Redis spent the code (one use: one caller on any node gets OK), or it was not there. */
static void mfa_taken(void *arg, int res, const char *val)
{
	struct gw_req *r = arg;

	(void)val;
	if (res == GW_VR_DOWN) {
		gw_vault_unavailable(r);
		return;
	}
	if (res != GW_VR_OK) {
		mfa_failed(r);
		return;
	}
	gw_usual_signed_in(r, GW_USUAL_MFA);
	gw_ep_issue(r, GW_TOK_MFA, r->user, NULL);
}

static void mfa_post_done(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms)
{
	struct gw_vault_entry *e;

	if (refused) {
		gw_ep_refused(r, refused, retry_ms);
		return;
	}
	if (gw_vault_shared(r->g->vault)) {
		uint8_t id[16];
		char val[GW_VAULT_VALUE_MAX];

		if (!shared_code(r, id, val)) {
			mfa_failed(r);
			return;
		}
		gw_vault_r_take(r->g->vault, r->tenant, GW_V_OTP, id, val, mfa_taken, r);
		return;
	}
	e = code_of(r);
	if (!e) {
		/* A newer code replaced it meanwhile. */
		mfa_failed(r);
		return;
	}
	gw_vault_del(e); /* one use */
	gw_usual_signed_in(r, GW_USUAL_MFA); /* before the answer frees r */
	gw_ep_issue(r, GW_TOK_MFA, r->user, NULL);
}

/* Redis's entry for the account: is the code presented its code? Nothing is spent yet. */
static void mfa_peeked(void *arg, int res, const char *have)
{
	struct gw_req *r = arg;
	uint8_t id[16];
	char val[GW_VAULT_VALUE_MAX];

	if (res == GW_VR_DOWN) {
		gw_vault_unavailable(r);
		return;
	}
	if (res != GW_VR_OK || !shared_code(r, id, val) || strlen(have) != strlen(val) ||
	    sodium_memcmp(have, val, strlen(val))) {
		mfa_failed(r);
		return;
	}
	gw_ep_ask_user(r, mfa_post_done);
}

static void ep_mfa_verify(struct gw_req *r)
{
	if (gw_vault_shared(r->g->vault)) {
		uint8_t id[16];
		char val[GW_VAULT_VALUE_MAX];

		if (!shared_code(r, id, val)) {
			mfa_failed(r);
			return;
		}
		gw_vault_r_get(r->g->vault, r->tenant, GW_V_OTP, id, mfa_peeked, r);
		return;
	}
	if (!code_of(r)) {
		mfa_failed(r);
		return;
	}
	/* The person is through: now the account's own budget (the per-user dial) is asked,
	 * and the code is spent only if it says yes. */
	gw_ep_ask_user(r, mfa_post_done);
}

const struct gw_endpoint gw_endpoint_mfa_send = {
	.path = "/mfa/send",
	.method = SL_M_POST,
	.start = mfa_start,
	.run = ep_mfa_send,
};

static const struct gw_answer mfa_verify_failed = { 401, "Unauthorized", BODY_MFA_FAIL };

const struct gw_endpoint gw_endpoint_mfa_verify = {
	.path = "/mfa/verify",
	.method = SL_M_POST,
	.refusal = &mfa_verify_failed,
	.fields = mfa_verify_fields,
	.start = mfa_start,
	.run = ep_mfa_verify,
};
