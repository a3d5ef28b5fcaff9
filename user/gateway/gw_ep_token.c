// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The token family: POST /token (OAuth 2.0 client_credentials and rotating refresh_token
 * grants for the clients in gateway.clients), and the two cheap checks of a token already
 * issued, GET /token/validate (a bearer) and POST /introspect (RFC 7662, for a client of
 * gateway.clients that authenticates). /token and /introspect ask the (client_id, source
 * prefix) failures before the secret is checked; /token then the client's own limit (the
 * per-principal dial, beside which its measured rate is kept for sluicectl limits) and its
 * tenant's issuance. The checks run inline on the loop right after admission.
 *
 * And what every token the gateway issues is bound to (gw_token_mint): a person's token
 * carries a stamp of the account's credential, so a password change (a new PHC string in
 * the credential file) ends every token issued before it on every node that reads the
 * file; a password reset (a sign-in link consumed) revokes the account's tokens issued
 * before it on this node, and on every node when the vault is in Redis (gw_vault.h).
 * docs/endpoints.md, "POST /token", "Tokens".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <sodium.h>

#include "gw_creds.h"
#include "gw_internal.h"

/* ---- validate and introspect ------------------------------------------------------------ */

/* Append @s as a JSON string (names are validated: GW_ACCOUNT_RULE, nothing to escape). */
static void json_escaped(struct evbuffer *b, const char *s)
{
	evbuffer_add(b, "\"", 1);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			evbuffer_add(b, "\\", 1);
		evbuffer_add(b, s, 1);
	}
	evbuffer_add(b, "\"", 1);
}

static void claims_json(struct evbuffer *b, const struct gw_token_claims *c, int kind)
{
	evbuffer_add_printf(b, "{\"active\":true,\"tenant\":");
	json_escaped(b, c->tenant);
	evbuffer_add_printf(b, ",\"sub\":");
	json_escaped(b, c->account);
	if (kind == GW_TOK_CLIENT) {
		evbuffer_add_printf(b, ",\"client_id\":");
		json_escaped(b, c->account);
	} else if (kind == GW_TOK_MFA) {
		evbuffer_add_printf(b, ",\"amr\":[\"pwd\",\"otp\"]");
	}
	evbuffer_add_printf(b, ",\"iat\":%llu,\"exp\":%llu}", (unsigned long long)c->iat,
			    (unsigned long long)c->exp);
}

/* ---- what tokens are bound to ----------------------------------------------------------- */

static uint64_t now_unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A person's tokens are bound to the account's credential: a keyed hash of its PHC string,
 * which a password change (or a re-hash) replaces. 0: no such account. With
 * gateway.credentials_db the PHC string is the database's, not in memory, and a check may
 * not wait for a query: the stamp is the account's alone, and what ends its tokens is a
 * revocation (a reset through sluice) or their expiry (docs/credentials.md). */
static uint64_t account_stamp(const struct gateway *g, const char *tenant, const char *account)
{
	static const char ctx[] = "sluice account stamp";
	const char *phc = g->pg ? "credentials_db" :
			  gw_creds_find(g->creds, tenant, account, strlen(account));
	crypto_generichash_state st;
	uint8_t h[8];
	uint64_t v;

	if (!phc)
		return 0;
	crypto_generichash_init(&st, g->key, sizeof(g->key), sizeof(h));
	crypto_generichash_update(&st, (const uint8_t *)ctx, sizeof(ctx));
	crypto_generichash_update(&st, (const uint8_t *)tenant, strlen(tenant) + 1);
	crypto_generichash_update(&st, (const uint8_t *)account, strlen(account) + 1);
	crypto_generichash_update(&st, (const uint8_t *)phc, strlen(phc));
	crypto_generichash_final(&st, h, sizeof(h));
	memcpy(&v, h, sizeof(v));
	return v ? v : 1;
}

static bool account_kind(int kind)
{
	return kind == GW_TOK_PASSWORD || kind == GW_TOK_MFA;
}

int gw_token_mint(struct gateway *g, int kind, const char *tenant, const char *name,
		  uint32_t ttl_s, char *out, size_t n)
{
	uint64_t now = now_unix_ns(), stamp = 0;

	if (account_kind(kind)) {
		uint64_t since = gw_vault_valid_since(g->vault, tenant, name, now / 1000000000ull);

		stamp = account_stamp(g, tenant, name);
		if (!stamp)
			return -ENOENT;
		/* Never before a revocation of the account: this token is not one it ended. */
		if (since > now)
			now = since;
		gw_vault_note_ttl(g->vault, ttl_s);
	}
	return gw_token_issue(g->tkey[kind], tenant, name, now, ttl_s, stamp, out, n);
}

void gw_account_revoke(struct gateway *g, const char *tenant, const char *account)
{
	gw_vault_note_ttl(g->vault, g->cfg->gw.token_ttl_s);
	gw_vault_revoke(g->vault, tenant, account, now_unix_ns());
	g->tokens_revoked++;
}

/* Check @tok against every kind's key; the kind in *@kind. 0 or negative: -EKEYREVOKED for
 * a person's token its account no longer honours (its credential changed, it was revoked,
 * or it is a v1 token, which carries no stamp). */
int gw_token_any(const struct gateway *g, const char *tok, size_t len,
		 struct gw_token_claims *cl, int *kind)
{
	uint64_t now_s = (uint64_t)time(NULL);
	int k, ret = -EBADMSG;

	for (k = 0; k < GW_TOK__N; k++) {
		ret = gw_token_check(g->tkey[k], tok, len, now_s, cl);
		if (ret != -EBADMSG)
			break;
	}
	*kind = k;
	if (ret || !account_kind(k))
		return ret;
	if (cl->version < 2 || cl->stamp != account_stamp(g, cl->tenant, cl->account) ||
	    cl->iat_ns < gw_vault_valid_since(g->vault, cl->tenant, cl->account, now_s))
		return -EKEYREVOKED;
	return 0;
}

static void check_answer(struct gw_req *r, int bad, const struct gw_token_claims *cl, int tk)
{
	struct gateway *g = r->g;
	struct gw_tstats *t = &g->ts[r->job.tenant];

	if (!bad)
		claims_json(evhttp_request_get_output_buffer(r->req), cl, tk);
	gw_admit_done(r);
	if (!bad) {
		t->ok++;
		gw_respond(r, 200, "OK", NULL, 0, false, false);
	} else if (r->kind == K_INTROSPECT) {
		/* RFC 7662: an unusable token is a normal answer, not an error. */
		gw_respond(r, 200, "OK", "{\"active\":false}", 0, false, false);
	} else {
		t->unauthorized++;
		gw_respond(r, 401, "Unauthorized", BODY_401_TOKEN, 0, true, false);
	}
}

struct check_held {
	struct gw_token_claims cl;
	int tk;
};

/* Redis said whether a reset on any node ended the account's tokens before this one. */
static void check_revoked(struct gw_req *r, void *arg, int res)
{
	struct check_held *h = arg;

	if (res == GW_VR_DOWN)
		gw_vault_unavailable(r);
	else
		check_answer(r, res != GW_VR_OK, &h->cl, h->tk);
	sodium_memzero(h, sizeof(*h));
	free(h);
}

/* Validate and introspect: cheap, on the loop, right after admission. */
static void check_token(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct gw_token_claims cl;
	struct check_held *h;
	int bad, tk;

	bad = gw_token_any(g, r->bearer, r->bearer_len, &cl, &tk) ||
	      strcmp(cl.tenant, r->tenant);
	sodium_memzero(r->bearer, sizeof(r->bearer));
	/* A person's token names an account that still exists with the same credential (its
	 * stamp, gw_token_any); introspection also asks whether a client's still exists. */
	if (!bad && r->kind == K_INTROSPECT && tk == GW_TOK_CLIENT &&
	    sl_config_client(g->cfg, r->tenant_idx, cl.account) < 0)
		bad = 1;
	if (!bad && gw_vault_shared(g->vault) && (tk == GW_TOK_PASSWORD || tk == GW_TOK_MFA)) {
		/* And was not ended by a reset on another node (gw_vault_revoke_then). */
		h = malloc(sizeof(*h));
		if (!h) {
			gw_vault_unavailable(r);
			return;
		}
		h->cl = cl;
		h->tk = tk;
		gw_vault_check_revoked(r, cl.account, cl.iat_ns, check_revoked, h);
		return;
	}
	check_answer(r, bad, &cl, tk);
}

/* A bearer, or nothing to check: refused before it costs anything, like any other failed
 * check. */
static void validate_start(struct gw_req *r)
{
	r->bearer_len = gw_bearer_of(r->req, r->bearer);
	if (!r->bearer_len) {
		r->g->ts[r->job.tenant].unauthorized++;
		gw_respond(r, 401, "Unauthorized", BODY_401_TOKEN, 0, true, false);
		return;
	}
	gw_admit(r);
}

const struct gw_endpoint gw_endpoint_validate = {
	.path = "/token/validate",
	.method = SL_M_GET,
	.www_authenticate = "Bearer",
	.start = validate_start,
	.run = check_token,
};

/* ---- POST /token ------------------------------------------------------------------------ */

static int unhex(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Form-decode @in[0..n) into @out (cap bytes with the NUL); its length or -1. */
static ssize_t form_decode(const char *in, size_t n, char *out, size_t cap)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		int c = (unsigned char)in[i];

		if (c == '%') {
			int hi = i + 2 < n ? unhex(in[i + 1]) : -1;
			int lo = i + 2 < n ? unhex(in[i + 2]) : -1;

			if (hi < 0 || lo < 0)
				return -1;
			c = hi << 4 | lo;
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (!c || o + 1 >= cap)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return (ssize_t)o;
}

/*
 * RFC 6749 2.3.1: client credentials as HTTP Basic, each form-encoded. With @r NULL only
 * says whether the header is there (1) or not (0); else fills r->client_id and r->secret:
 * 1, 0 when absent, -1 with @err when malformed.
 */
static int basic_auth(struct evhttp_request *req, struct gw_req *r, char *err,
		      size_t errlen)
{
	const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req),
					      "Authorization");
	unsigned char raw[SL_CLIENT_ID_LEN * 3 + GW_SECRET_MAX * 3 + 2];
	size_t len = 0;
	const char *colon;
	ssize_t a, b;

	if (!auth || strncasecmp(auth, "Basic ", 6))
		return 0;
	if (!r)
		return 1;
	auth += 6;
	while (*auth == ' ')
		auth++;
	if (sodium_base642bin(raw, sizeof(raw) - 1, auth, strlen(auth), NULL, &len, NULL,
			      sodium_base64_VARIANT_ORIGINAL))
		goto bad;
	raw[len] = '\0';
	colon = memchr(raw, ':', len);
	if (!colon)
		goto bad;
	a = form_decode((const char *)raw, (size_t)(colon - (const char *)raw), r->client_id,
			sizeof(r->client_id));
	b = form_decode(colon + 1, len - (size_t)(colon + 1 - (const char *)raw), r->secret,
			sizeof(r->secret));
	sodium_memzero(raw, sizeof(raw));
	if (a <= 0 || b < 0)
		goto bad_zeroed;
	r->secret_len = (size_t)b;
	return 1;
bad:
	sodium_memzero(raw, sizeof(raw));
bad_zeroed:
	r->client_id[0] = '\0';
	sodium_memzero(r->secret, sizeof(r->secret));
	snprintf(err, errlen, "Authorization: Basic must be base64 of CLIENT_ID:SECRET");
	return -1;
}

/*
 * The client's credentials, from the body (@id and @secret: client_secret_post) or as HTTP
 * Basic, never both. 0 with r->client_id and r->secret filled, r->client_id empty when none
 * were given at all; -EINVAL with @err when malformed or half given.
 */
static int client_credentials(struct gw_req *r, const struct gw_field *id,
			      const struct gw_field *secret, char *err, size_t errlen)
{
	if (secret->found)
		r->secret_len = secret->len;
	if (id->found || secret->found) {
		if (basic_auth(r->req, NULL, NULL, 0) > 0) {
			snprintf(err, errlen, "client credentials in the body and in "
				 "Authorization: use one");
			return -EINVAL;
		}
		if (!id->found || !id->len || !secret->found) {
			snprintf(err, errlen, "'client_id' and 'client_secret' go together (in the "
				 "body, or as Authorization: Basic)");
			return -EINVAL;
		}
		return 0;
	}
	return basic_auth(r->req, r, err, errlen) < 0 ? -EINVAL : 0;
}

static int token_fields(struct gw_req *r, int type, const char *body, size_t len, char *err,
			size_t errlen)
{
	struct gw_field f[4] = {
		{ .name = "grant_type", .buf = r->grant, .cap = sizeof(r->grant) },
		{ .name = "client_id", .buf = r->client_id, .cap = sizeof(r->client_id) },
		{ .name = "client_secret", .buf = r->secret, .cap = sizeof(r->secret) },
		{ .name = "refresh_token", .buf = r->refresh, .cap = sizeof(r->refresh) },
	};
	int ret = gw_body_fields(type, body, len, f, 4, err, errlen);

	if (ret)
		return ret;
	if (!f[0].found || (strcmp(r->grant, "client_credentials") &&
			    strcmp(r->grant, "refresh_token"))) {
		snprintf(err, errlen, "'grant_type' must be client_credentials or refresh_token");
		return -EINVAL;
	}
	if (client_credentials(r, &f[1], &f[2], err, errlen))
		return -EINVAL;
	if (!r->client_id[0]) {
		snprintf(err, errlen, "'client_id' and 'client_secret' are required (in the body, "
			 "or as Authorization: Basic)");
		return -EINVAL;
	}
	if (!strcmp(r->grant, "refresh_token") && !f[3].len) {
		snprintf(err, errlen, "'refresh_token' is required for this grant");
		return -EINVAL;
	}
	return 0;
}

/* Before the secret is checked: the (client_id, prefix) pair's failures. Garbage for
 * someone else's client from elsewhere spends only the sender's own pair; a correct secret
 * clears it. */
static void token_start(struct gw_req *r)
{
	char prefix[GW_PREFIX_STR];

	gw_prefix_of(r->g, r, prefix);
	gw_chain_begin(r);
	gw_ep_ask(r, SL_CTR_TOKEN_FAILURES, "token pair", r->client_id, prefix)->then =
		GW_THEN_CLEAR;
	gw_ep_run(r, gw_ep_checked);
}

/* The vault in Redis: a refresh token for the chain at (r->family, @gen), and the answer. */
static void token_shared_answer(struct gw_req *r, uint32_t gen)
{
	struct gateway *g = r->g;
	const struct sl_client_cfg *cl = &g->cfg->clients[r->client_idx];
	char name[GW_REFRESH_NAME_MAX], refresh[GW_TOKEN_MAX + 1];

	if (r->client_idx >= g->cfg->n_clients || strcmp(cl->id, r->client_id)) {
		/* A reload removed the client while Redis was asked. */
		g->ep[K_TOKEN].failed++;
		gw_ep_answer(r, 401, "Unauthorized", BODY_INVALID_CLIENT, true);
		return;
	}
	if (gw_refresh_name(name, sizeof(name), cl->id, r->family, gen) ||
	    gw_token_mint(g, GW_TOK_REFRESH, r->tenant, name, g->cfg->gw.refresh_ttl_s,
			  refresh, sizeof(refresh)) < 0) {
		gw_ep_answer(r, 503, "Service Unavailable", BODY_503, false);
		return;
	}
	gw_ep_issue(r, GW_TOK_CLIENT, cl->id, refresh);
}

/* Redis compared the generation presented with the chain's and advanced it, in one step. */
static void token_rotated(void *arg, int res, const char *val)
{
	struct gw_req *r = arg;
	struct gateway *g = r->g;

	(void)val;
	if (res == GW_VR_DOWN) {
		gw_vault_unavailable(r);
		return;
	}
	if (res != GW_VR_OK) {
		/* GW_VR_REUSE: a spent refresh token came back, on this node or another: the
		 * chain has ended for every node (RFC 9700, 4.14.2). */
		if (res == GW_VR_REUSE)
			g->refresh_reuse++;
		g->ep[K_TOKEN].failed++;
		gw_ep_answer(r, 400, "Bad Request", BODY_INVALID_GRANT, false);
		return;
	}
	token_shared_answer(r, r->gen + 1);
}

/* A new chain is in Redis (the client's previous one ended with it). */
static void token_chain_put(void *arg, int res, const char *val)
{
	struct gw_req *r = arg;

	(void)val;
	if (res != GW_VR_OK) {
		gw_vault_unavailable(r);
		return;
	}
	token_shared_answer(r, 0);
}

static void token_shared(struct gw_req *r, const struct sl_client_cfg *cl)
{
	struct gateway *g = r->g;
	char val[GW_VAULT_VALUE_MAX];
	uint8_t id[16];

	gw_vault_id_name(g->vault, GW_V_REFRESH, (uint16_t)r->tenant_idx, cl->id, id);
	gw_admit_done(r);
	if (!strcmp(r->grant, "refresh_token")) {
		gw_vault_r_rotate(g->vault, r->tenant, id, r->family, r->gen,
				  g->cfg->gw.refresh_ttl_s, token_rotated, r);
		return;
	}
	randombytes_buf(&r->family, sizeof(r->family));
	gw_vault_chain_value(r->family, 0, val);
	gw_vault_r_put(g->vault, r->tenant, GW_V_REFRESH, id, val, g->cfg->gw.refresh_ttl_s,
		       token_chain_put, r);
}

/* /token after the client's own and its tenant's counters. */
static void token_post_done(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms)
{
	struct gateway *g = r->g;
	const struct sl_client_cfg *cl = &g->cfg->clients[r->client_idx];
	uint64_t now_s = (uint64_t)time(NULL), family;
	char name[GW_REFRESH_NAME_MAX], refresh[GW_TOKEN_MAX + 1];
	uint8_t id[16];
	struct gw_vault_entry *e;
	uint32_t gen = 0;

	if (refused) {
		gw_ep_refused(r, refused, retry_ms);
		return;
	}
	if (r->client_idx >= g->cfg->n_clients || strcmp(cl->id, r->client_id)) {
		/* A reload removed the client while its counters were asked. */
		g->ep[K_TOKEN].failed++;
		gw_ep_answer(r, 401, "Unauthorized", BODY_INVALID_CLIENT, true);
		return;
	}
	if (gw_vault_shared(g->vault) && (cl->grants & SL_GRANT_REFRESH_TOKEN)) {
		token_shared(r, cl);
		return;
	}
	gw_vault_id_name(g->vault, GW_V_REFRESH, (uint16_t)r->tenant_idx, cl->id, id);
	e = gw_vault_get(g->vault, id, now_s);
	if (!strcmp(r->grant, "refresh_token")) {
		/* Rotation: the generation presented is spent now, and only now, so a refusal
		 * by a counter never costs the client its chain. */
		if (!e || e->kind != GW_V_REFRESH || e->family != r->family || e->gen != r->gen) {
			g->ep[K_TOKEN].failed++;
			gw_ep_answer(r, 400, "Bad Request", BODY_INVALID_GRANT, false);
			return;
		}
		family = e->family;
		gen = ++e->gen;
		e->exp_s = now_s + g->cfg->gw.refresh_ttl_s;
	} else {
		randombytes_buf(&family, sizeof(family));
	}
	refresh[0] = '\0';
	if (cl->grants & SL_GRANT_REFRESH_TOKEN) {
		if (!gen) {
			/* A new chain: the client's previous one ends here. */
			e = gw_vault_put(g->vault, id, now_s);
			e->kind = GW_V_REFRESH;
			e->tenant = (uint16_t)r->tenant_idx;
			e->family = family;
			e->gen = 0;
			e->exp_s = now_s + g->cfg->gw.refresh_ttl_s;
			snprintf(e->name, sizeof(e->name), "%s", cl->id);
		}
		if (gw_refresh_name(name, sizeof(name), cl->id, family, gen) ||
		    gw_token_mint(g, GW_TOK_REFRESH, r->tenant, name, g->cfg->gw.refresh_ttl_s,
				  refresh, sizeof(refresh)) < 0) {
			gw_ep_answer(r, 503, "Service Unavailable", BODY_503, false);
			return;
		}
	}
	gw_ep_issue(r, GW_TOK_CLIENT, cl->id, refresh[0] ? refresh : NULL);
}

#define CLIENT_WINDOW_NS (10ull * 1000000000ull)

/* Is meter @idx counting client @idx of the running config? A reload may have put another
 * client at that index: its meter starts from zero. */
static bool meter_is(const struct gateway *g, int idx)
{
	const struct sl_client_cfg *cl = &g->cfg->clients[idx];

	return !strcmp(g->cm[idx].id, cl->id) && g->cm[idx].tenant == cl->tenant;
}

/* Requests per second in the window in progress. */
static double window_rate(const struct gw_client_meter *m, uint64_t now)
{
	return m->in_win * 1e9 / (double)(now - m->win_ns);
}

/* Count one authenticated request of client @idx (its measured rate). */
static void client_meter(struct gateway *g, int idx, uint64_t now)
{
	const struct sl_client_cfg *cl = &g->cfg->clients[idx];
	struct gw_client_meter *m = &g->cm[idx];

	if (!meter_is(g, idx)) {
		memset(m, 0, sizeof(*m));
		snprintf(m->id, sizeof(m->id), "%s", cl->id);
		m->tenant = cl->tenant;
	}
	if (!m->win_ns)
		m->win_ns = now;
	if (now - m->win_ns >= CLIENT_WINDOW_NS) {
		double r = window_rate(m, now);

		if (r > m->peak)
			m->peak = r;
		m->win_ns = now;
		m->in_win = 0;
	}
	m->in_win++;
	m->total++;
}

/* The peak so far, the window in progress included once it is 1 s old. */
double gw_client_peak(const struct gateway *g, int idx, uint64_t now)
{
	const struct gw_client_meter *m = &g->cm[idx];
	double peak;

	if (!meter_is(g, idx))
		return 0;
	peak = m->peak;
	if (m->win_ns && now - m->win_ns >= 1000000000ull) {
		double r = window_rate(m, now);

		if (r > peak)
			peak = r;
	}
	return peak;
}

uint64_t gw_client_requests(const struct gateway *g, int idx)
{
	return meter_is(g, idx) ? g->cm[idx].total : 0;
}

/* Admitted: the secret, the grant, then the client's own limit and its tenant's. */
static void ep_token(struct gw_req *r)
{
	struct gateway *g = r->g;
	const struct sl_client_cfg *cl;
	struct gw_ask *a;
	int idx;
	bool ok = gw_client_auth(g->cfg, r->tenant_idx, r->client_id, r->secret, r->secret_len,
				 &idx);

	sodium_memzero(r->secret, sizeof(r->secret));
	if (!ok) {
		/* The attempt stays on (client_id, prefix). */
		g->ep[K_TOKEN].failed++;
		gw_ep_answer(r, 401, "Unauthorized", BODY_INVALID_CLIENT, true);
		return;
	}
	/* Authenticated: its own pair is clear, nothing wider. */
	gw_chain_settle(r, true);
	cl = &g->cfg->clients[idx];
	r->client_idx = idx;
	client_meter(g, idx, gw_now_ns());
	if (!strcmp(r->grant, "client_credentials") ?
		    !(cl->grants & SL_GRANT_CLIENT_CREDENTIALS) :
		    !(cl->grants & SL_GRANT_REFRESH_TOKEN)) {
		g->ep[K_TOKEN].failed++;
		gw_ep_answer(r, 400, "Bad Request", BODY_UNAUTHORIZED_CLIENT, false);
		return;
	}
	if (!strcmp(r->grant, "refresh_token")) {
		struct gw_token_claims tc;
		char owner[SL_CLIENT_ID_LEN];
		uint64_t now_s = (uint64_t)time(NULL);
		uint8_t id[16];
		struct gw_vault_entry *e;

		/* Signed, so only the chain's state is kept: one entry per client. */
		if (gw_token_check(g->tkey[GW_TOK_REFRESH], r->refresh, strlen(r->refresh), now_s,
				   &tc) || strcmp(tc.tenant, r->tenant) ||
		    gw_refresh_parse(tc.account, owner, &r->family, &r->gen) ||
		    strcmp(owner, cl->id)) {
			g->ep[K_TOKEN].failed++;
			gw_ep_answer(r, 400, "Bad Request", BODY_INVALID_GRANT, false);
			return;
		}
		gw_vault_id_name(g->vault, GW_V_REFRESH, (uint16_t)r->tenant_idx, cl->id, id);
		e = gw_vault_get(g->vault, id, now_s);
		if (gw_vault_shared(g->vault)) {
			/* Shared through Redis: the chain is compared, and a reuse ends it, in one
			 * script once the counters have answered (token_shared). */
		} else if (e && e->family == r->family && r->gen < e->gen) {
			/* A spent refresh token came back: someone holds a copy of the chain.
			 * The chain ends (RFC 9700, 4.14.2); the client starts a new one with
			 * its secret. */
			g->refresh_reuse++;
			gw_vault_del(e);
			g->ep[K_TOKEN].failed++;
			gw_ep_answer(r, 400, "Bad Request", BODY_INVALID_GRANT, false);
			return;
		} else if (!e || e->family != r->family || r->gen != e->gen) {
			g->ep[K_TOKEN].failed++;
			gw_ep_answer(r, 400, "Bad Request", BODY_INVALID_GRANT, false);
			return;
		}
	}
	gw_admit_done(r);
	/* With valid credentials, a refresh loop is a bug: the client's own limit (from its
	 * measured rate), then its tenant's share of issuance. */
	gw_chain_begin(r);
	a = gw_ep_ask(r, SL_CTR_TOKEN_CLIENT, "token client", cl->id, NULL);
	if (cl->rate > 0) {
		a->rate = cl->rate;
		a->burst = cl->burst > 0 ? cl->burst : g->cfg->counters[SL_CTR_TOKEN_CLIENT].burst;
	}
	gw_ep_ask(r, SL_CTR_TENANT_TOKENS, "tenant tokens", NULL, NULL);
	gw_ep_run(r, token_post_done);
}

const struct gw_endpoint gw_endpoint_token = {
	.path = "/token",
	.method = SL_M_POST,
	.www_authenticate = "Basic realm=\"token\"",
	.ratelimit_fields = true,
	.fields = token_fields,
	.start = token_start,
	.run = ep_token,
};

/* ---- POST /introspect ------------------------------------------------------------------- */

/* RFC 7662 2.1: token (token_type_hint is allowed and not needed), and the caller's own
 * client credentials, in the body or as HTTP Basic, as /token takes them. */
static int introspect_fields(struct gw_req *r, int type, const char *body, size_t len,
			     char *err, size_t errlen)
{
	char hint[32];
	struct gw_field f[4] = {
		{ .name = "token", .buf = r->bearer, .cap = sizeof(r->bearer) },
		{ .name = "client_id", .buf = r->client_id, .cap = sizeof(r->client_id) },
		{ .name = "client_secret", .buf = r->secret, .cap = sizeof(r->secret) },
		{ .name = "token_type_hint", .buf = hint, .cap = sizeof(hint) },
	};
	int ret = gw_body_fields(type, body, len, f, 4, err, errlen);

	if (ret)
		return ret;
	if (!f[0].found) {
		snprintf(err, errlen, "'token' is required");
		return -EINVAL;
	}
	r->bearer_len = f[0].len;
	return client_credentials(r, &f[1], &f[2], err, errlen);
}

/* Who asks must be a client of this tenant: no credentials at all is the 401 a wrong secret
 * gets (RFC 6749 5.2), behind the floor; given ones are checked after the (client_id,
 * prefix) pair has been asked, as on /token, so guessing a client's secret through here
 * spends the same budget. */
static void introspect_start(struct gw_req *r)
{
	if (!r->client_id[0]) {
		sodium_memzero(r->bearer, sizeof(r->bearer));
		r->g->ep[K_INTROSPECT].failed++;
		r->g->ts[r->job.tenant].unauthorized++;
		gw_respond(r, 401, "Unauthorized", BODY_INVALID_CLIENT, 0, true, false);
		return;
	}
	token_start(r);
}

static void ep_introspect(struct gw_req *r)
{
	struct gateway *g = r->g;
	int idx;
	bool ok = gw_client_auth(g->cfg, r->tenant_idx, r->client_id, r->secret, r->secret_len,
				 &idx);

	sodium_memzero(r->secret, sizeof(r->secret));
	if (!ok) {
		sodium_memzero(r->bearer, sizeof(r->bearer));
		g->ep[K_INTROSPECT].failed++;
		gw_ep_answer(r, 401, "Unauthorized", BODY_INVALID_CLIENT, true);
		return;
	}
	gw_chain_settle(r, true);
	g->ep[K_INTROSPECT].ok++;
	check_token(r);
}

const struct gw_endpoint gw_endpoint_introspect = {
	.path = "/introspect",
	.method = SL_M_POST,
	.www_authenticate = "Basic realm=\"introspect\"",
	.ratelimit_fields = true,
	.fields = introspect_fields,
	.start = introspect_start,
	.run = ep_introspect,
};
