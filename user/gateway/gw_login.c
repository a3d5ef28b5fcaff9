// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * POST /login, from its body to its answer: the username and password, what the stream job
 * decided about the account or the password tried (its escalations: a delay, a step-up),
 * the login counters asked through the chain (gw_chain.h), the Argon2id job (a dummy hash
 * of equal cost for an account nobody has, and for a login a per-account counter refused)
 * and the outcome: a token, or the one 401. Every outcome also goes to the stream job as an
 * event of keyed hashes, never the names or passwords themselves. gateway_set_stream() and
 * gateway_stream_action() (gateway.h) live here because only logins hear the stream job.
 *
 * No answer tells who has an account, or that a login was throttled (issue 14): every name
 * is counted the same way, under its own (name, prefix) keys whether anybody holds it or
 * not; with gateway.login_uniform a login a per-account counter refused takes the path of a
 * wrong password (admission, the queue, a hash, the floor, the same answer) and only its
 * hash is the dummy's; and nothing it does is seen afterwards (it feeds no Retry-After, its
 * event says it was checked by nobody). Escalations cannot be aimed at a victim: the
 * account-wide ones skip the allocations the account signs in from, the per-allocation
 * ones its key prefixes (gw_usual.h), and the top of the ladder is a step-up, not a block.
 * docs/endpoints.md, "POST /login".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <sodium.h>

#include "audit.h"
#include "evq.h"
#include "gw_creds.h"
#include "gw_internal.h"
#include "gw_phc.h"
#include "gw_pg.h"
#include "gw_usual.h"
#include "log.h"
#include "stream.h"

/* ---- where the account usually signs in from (gw_usual.h) -------------------------------- */

/* The table, made at its first use: eight slots an account (its key prefix and its
 * allocation, a quarter full), at least 65,536, at most 4M (64 MiB). Out of memory: nothing
 * is usual, which only costs the accounts the protections that need it. */
static struct gw_usual *usual_of(struct gateway *g)
{
	uint8_t k[16];
	uint64_t n;

	if (g->usual)
		return g->usual;
	g->usual = calloc(1, sizeof(*g->usual));
	if (!g->usual)
		return NULL;
	n = 8ull * gw_creds_count(g->creds);
	if (n < 65536)
		n = 65536;
	if (n > (4u << 20))
		n = 4u << 20;
	crypto_generichash(k, sizeof(k), (const unsigned char *)"sluice usual sources", 20,
			   g->key, sizeof(g->key));
	if (gw_usual_init(g->usual, (uint32_t)n, 0, k))
		log_warn("gateway: out of memory for the usual sources of accounts; escalations "
			 "and per-account budgets apply from everywhere alike");
	sodium_memzero(k, sizeof(k));
	return g->usual;
}

static uint32_t usual_now(void)
{
	return (uint32_t)(gw_now_ns() / 1000000000ull) + 1;
}

bool gw_usual_here(struct gw_req *r, bool parent, int level)
{
	const struct sl_config *c = r->g->cfg;
	unsigned plen = r->client.family == 6 ? (parent ? c->counter_v6_parent : c->counter_v6_prefix) :
				     (parent ? c->counter_v4_parent : c->counter_v4_prefix);

	return gw_usual_is(usual_of(r->g), r->tenant, r->user, r->user_len, &r->client, plen,
			   level, usual_now());
}

void gw_usual_signed_in(struct gw_req *r, int level)
{
	const struct sl_config *c = r->g->cfg;
	struct gw_usual *u = usual_of(r->g);
	bool v6 = r->client.family == 6;
	uint32_t now = usual_now();

	gw_usual_record(u, r->tenant, r->user, r->user_len, &r->client,
			v6 ? c->counter_v6_prefix : c->counter_v4_prefix, level, now);
	gw_usual_record(u, r->tenant, r->user, r->user_len, &r->client,
			v6 ? c->counter_v6_parent : c->counter_v4_parent, level, now);
}

void gw_usual_where(struct gw_req *r, int level, char out[GW_PREFIX_STR])
{
	if (gw_usual_here(r, true, level))
		gw_parent_of(r->g, r, out);
	else
		snprintf(out, GW_PREFIX_STR, "elsewhere");
}

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
	uint8_t k[32];

	/* The audit log writes an account as this same hash (audit.h). */
	sl_audit_account_hash(g->key, sizeof(g->key), r->tenant, r->user, r->user_len,
			      r->acct_hash);
	crypto_generichash(k, sizeof(k), (const unsigned char *)"sluice stream passwords", 23,
			   g->key, sizeof(g->key));
	crypto_generichash(r->pw_hash, sizeof(r->pw_hash), (const unsigned char *)r->work.pwd,
			   r->work.pwd_len, k, sizeof(k));
	sodium_memzero(k, sizeof(k));
	r->hashed_ids = true;
}

/* The client's address masked to @plen, as events and the stream job carry it. */
static void mask(const struct gw_req *r, unsigned plen, uint8_t out[16])
{
	unsigned i, n = r->client.family == 6 ? 16 : 4;

	memset(out, 0, 16);
	for (i = 0; i < n; i++) {
		unsigned bits = plen > i * 8 ? plen - i * 8 : 0;

		out[i] = bits >= 8 ? r->client.addr[i] :
			 (uint8_t)(r->client.addr[i] & (0xff00u >> bits));
	}
}

static unsigned stream_plen(const struct gateway *g, const struct gw_req *r)
{
	return r->client.family == 6 ? g->cfg->stream.prefix_v6 : g->cfg->stream.prefix_v4;
}

/*
 * One login outcome, counted for /metrics and sent to the stream job; never waits (a full
 * queue drops and counts). Throttled and stepped up are unchecked: refused before any
 * password was checked, nobody's guess. The key prefix goes as a keyed hash, for
 * account_keys.
 */
static void emit(struct gw_req *r, enum gw_login_result res)
{
	struct gateway *g = r->g;
	struct sl_outcome_event ev;
	uint8_t k[32], kp[18];
	unsigned plen;
	bool success = res == GW_LOGIN_SUCCESS;
	bool unchecked = res == GW_LOGIN_THROTTLED || res == GW_LOGIN_STEP_UP;

	/* Every sign-in /login decides passes here once, stream job or not: /metrics counts
	 * them by the tenant's slot (a configured tenant: no request can add a label value). */
	g->ts[r->job.tenant].logins[res]++;
	if (!g->evq || !r->hashed_ids)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.ts_ns = gw_now_ns();
	memcpy(ev.account, r->acct_hash, 16);
	if (!success)
		memcpy(ev.password, r->pw_hash, 16);
	ev.family = r->client.family == 6 ? 6 : 4;
	plen = stream_plen(g, r);
	mask(r, plen, ev.prefix);
	ev.plen = (uint8_t)plen;
	ev.success = success;
	ev.known = r->known;
	ev.tenant = (uint16_t)(r->tenant_idx >= 0 ? r->tenant_idx : SL_MAX_TENANTS);
	ev.class_id = 255;
	ev.unchecked = unchecked;
	kp[0] = ev.family;
	kp[1] = ev.family == 6 ? g->cfg->counter_v6_prefix : g->cfg->counter_v4_prefix;
	mask(r, kp[1], kp + 2);
	crypto_generichash(k, sizeof(k), (const unsigned char *)"sluice stream key prefixes", 26,
			   g->key, sizeof(g->key));
	crypto_generichash(ev.key, sizeof(ev.key), kp, sizeof(kp), k, sizeof(k));
	sodium_memzero(k, sizeof(k));
	if (!(ev.key[0] | ev.key[1] | ev.key[2] | ev.key[3]))
		ev.key[0] = 1; /* all zero says "not given" */
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
	} else if (a->kind == STREAM_ACCOUNT_SOURCE_STEP_UP) {
		/* The same table as accounts: an (account, allocation) hash is no account's. */
		e = esc_find(g->esc_acct, a->hash, a->tenant, gw_now_ns(), true);
		if (e) {
			e->level = 2;
			e->expires_ns = a->expires_ns;
			log_info("gateway: an account guessed from many addresses of one allocation "
				 "now answers step_up_required from there");
		}
	}
}

/* The client's allocation as the stream job names an (account, allocation) step-up. */
static void account_source(struct gateway *g, const struct gw_req *r, uint8_t out[16])
{
	uint8_t p[16];
	unsigned plen = stream_plen(g, r);

	mask(r, plen, p);
	stream_account_source(r->acct_hash, r->client.family == 6 ? 6 : 4, (uint8_t)plen, p, out);
}

/*
 * Before the counters: what the stream job decided about this account or password. Returns
 * true when the login has been answered. An account's ladder (the account from many
 * allocations) does not apply from an allocation it signs in from, an (account, allocation)
 * step-up not from a key prefix it signs in from: a victim at home keeps signing in while
 * the attacker's sources are stepped up. Nothing blocks: the top of the ladder is a step-up
 * after the delay, a second factor the person can give and the guesser cannot.
 */
static bool escalated(struct gw_req *r)
{
	struct gateway *g = r->g;
	uint64_t now = gw_now_ns();
	uint64_t delay = (uint64_t)g->cfg->stream.ladder_delay_ms * 1000000ull;
	uint8_t src[16];
	struct esc *e;
	int level = 0;

	if (!g->esc_acct)
		return false;
	if (esc_find(g->esc_pw, r->pw_hash, ESC_ANY_TENANT, now, false))
		level = 2;
	e = esc_find(g->esc_acct, r->acct_hash, (uint16_t)r->tenant_idx, now, false);
	if (e && e->level > level && !gw_usual_here(r, true, GW_USUAL_PASSWORD))
		level = e->level;
	if (level < 2) {
		account_source(g, r, src);
		e = esc_find(g->esc_acct, src, (uint16_t)r->tenant_idx, now, false);
		if (e && !gw_usual_here(r, false, GW_USUAL_PASSWORD))
			level = 2;
	}
	if (!level)
		return false;
	if (level == 1) {
		g->st.delayed++;
		r->extra_ns = delay;
		return false;
	}
	if (level >= 3)
		r->extra_ns = delay;
	g->st.step_ups++;
	emit(r, GW_LOGIN_STEP_UP);
	gw_audit(r, AUDIT_BLOCK, level >= 3 ? "stream_ladder_top" : "stream_step_up", "step_up",
		 NULL);
	gw_respond(r, 401, "Unauthorized", BODY_STEP_UP, 0, true, false);
	return true;
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
		snprintf(err, errlen, "the username must be " GW_ACCOUNT_RULE);
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

/* ---- gateway.credentials_db: the account's row, asked before admission ----------------- */

/*
 * The row is usable when it is an Argon2id PHC string the pool can run within its memory
 * budget; anything else is a failed sign-in (against the dummy, like every other), logged
 * with the account as its keyed hash (the audit log's), never its name.
 */
static bool db_row_usable(struct gw_req *r, const char *phc)
{
	struct gateway *g = r->g;
	struct gw_phc h;
	uint8_t ah[16];
	char hex[33];

	if (!gw_phc_decode(phc, &h) && h.m_kib <= g->cfg->gw.m_cost_kib)
		return true;
	sl_audit_account_hash(g->key, sizeof(g->key), r->tenant, r->user, r->user_len, ah);
	sodium_bin2hex(hex, sizeof(hex), ah, sizeof(ah));
	log_warn("gateway: credentials_db: the row of account %s (tenant %s, keyed hash) is %s: "
		 "its sign-ins fail", hex, r->tenant, gw_phc_decode(phc, &h) ?
		 "not an Argon2id PHC string" : "a hash above gateway.argon2.m_cost_kib");
	return false;
}

static void db_looked_up(void *arg, int res, const char *phc)
{
	struct gw_req *r = arg;
	struct gateway *g = r->g;

	if (res == GW_PG_FOUND && phc && db_row_usable(r, phc)) {
		snprintf(r->db_phc, sizeof(r->db_phc), "%s", phc);
		r->db_state = GW_DB_FOUND;
	} else if (res == GW_PG_FOUND || res == GW_PG_MALFORMED) {
		if (res == GW_PG_FOUND)
			gw_pg_note_malformed(g->pg);
		else
			db_row_usable(r, ""); /* two rows, or not one text column: logged alike */
		r->db_state = GW_DB_MALFORMED;
	} else if (res == GW_PG_NONE || res == GW_PG_EXISTS) {
		r->db_state = GW_DB_NONE;
	} else if (g->cfg->gw.db.fail == SL_DB_FAIL_FILE) {
		r->db_state = GW_DB_FILE;
	} else {
		/* fail = "closed": nobody's password is checked while the database cannot say
		 * whose it is. The same 503 for every name, so it tells nobody who exists. */
		gw_chain_refund(r);
		gw_respond(r, 503, "Service Unavailable", BODY_503, g->cfg->gw.db.retry_after_s,
			   false, false);
		return;
	}
	gw_admit(r);
}

/* Admit, after the database's lookup when there is one: every login asks it, whoever it
 * names and whatever the counters said (a decoy's row is asked and not used), so an unknown
 * name, a known one and a throttled one take the same path and the same time. */
static void login_lookup(struct gw_req *r)
{
	if (!r->g->pg) {
		gw_admit(r);
		return;
	}
	gw_pg_query(r->g->pg, GW_PG_LOOKUP, r->tenant, r->user, NULL, r->job.deadline_ns,
		    db_looked_up, r);
}

static void login_checked(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms)
{
	int reason;

	if (!refused) {
		login_lookup(r);
		return;
	}
	reason = refused->ctr == SL_CTR_LOGIN_FAILURES || refused->ctr == SL_CTR_LOGIN_PARENT ?
		 GW_SHED_FAILURES : refused->ctr == SL_CTR_LOGIN_SUCCESSES ? GW_SHED_SUCCESSES :
		 GW_SHED_TENANT_LOGINS;
	if (refused->soft) {
		/*
		 * login_uniform, and a per-account counter refused (the tenant's capacity said
		 * yes, as it would have to an unthrottled login). Counted as the refusal it is,
		 * then served like a wrong password: admitted, queued, shed under load like any
		 * other, and hashed, against the dummy: its right password cannot pass, and its
		 * answer, time and afterwards are those of every failed sign-in. Its charges are
		 * given back (nobody's password was checked); the tenant's stands, as for a hash.
		 */
		struct gw_tstats *t = &r->g->ts[r->job.tenant];

		t->shed++;
		t->shed_by_reason[reason]++;
		if (r->job.cls < GW_MAX_CLASSES)
			t->shed_by_class[r->job.cls]++;
		r->decoy = true;
		gw_audit(r, reason == GW_SHED_FAILURES ? AUDIT_BLOCK : AUDIT_REFUSAL,
			 reason == GW_SHED_FAILURES ? "account_lockout" : gw_shed_name(reason),
			 "decoy", "login_uniform: answered as a failed sign-in");
		gw_chain_refund(r);
		login_lookup(r);
		return;
	}
	r->min_retry_s = (retry_ms + 999) / 1000;
	emit(r, GW_LOGIN_THROTTLED);
	gw_shed(r, reason);
}

/*
 * A login's counters: one attempt charged to its (account, prefix) failure budget and to its
 * (account, allocation) one, asked together with whether the pair may succeed again; then
 * the tenant's logins. Every name is keyed the same way whether anybody holds it or not:
 * a name's budget says nothing about whether it exists (issue 14: a bucket shared by the
 * names nobody has was spent after five junk names, and from then on only real names were
 * hashed). The allocation's budget is not asked from a key prefix the account signs in
 * from: whoever shares her /24 spends his own (account, allocation) budget, not hers.
 * Under login_uniform the per-account asks are soft: their refusal does not spare the
 * tenant's ask, which must judge a throttled login as it judges any other. The attempt is
 * given back if the login is shed before its hash; a success clears the pair and the
 * allocation (only the account's password can). One of the pair's successes is charged with
 * the attempt, atomically (issue 16: a peek before the hash and a charge after it was
 * check-then-act), and given back unless the login succeeds.
 */
static void login_asks(struct gw_req *r)
{
	struct gateway *g = r->g;
	char prefix[GW_PREFIX_STR], parent[GW_PREFIX_STR], user[GW_USER_MAX + 1], key[33];
	const char *parts[3] = { r->tenant, user, prefix };
	bool soft = g->cfg->gw.login_uniform;
	struct gw_ask *a;

	r->known = gw_creds_find(g->creds, r->tenant, r->user, r->user_len) != NULL;
	gw_prefix_of(g, r, prefix);
	gw_parent_of(g, r, parent);
	memcpy(user, r->user, r->user_len);
	user[r->user_len] = '\0';
	gw_counter_key(g, "sluice login counters", parts, 3, key);
	gw_chain_begin(r);
	a = gw_chain_ask(r, SL_CTR_LOGIN_FAILURES, key);
	snprintf(a->shown, sizeof(a->shown), "pair %.16s", key);
	a->with_next = true;
	a->refund = true;
	a->soft = soft;
	a->then = GW_THEN_CLEAR;
	if (!gw_usual_here(r, false, GW_USUAL_PASSWORD)) {
		char pkey[33];

		parts[2] = parent;
		gw_counter_key(g, "sluice login parent", parts, 3, pkey);
		a = gw_chain_ask(r, SL_CTR_LOGIN_PARENT, pkey);
		snprintf(a->shown, sizeof(a->shown), "parent %.16s", pkey);
		a->with_next = true;
		a->refund = true;
		a->soft = soft;
		a->then = GW_THEN_CLEAR;
	}
	a = gw_chain_ask(r, SL_CTR_LOGIN_SUCCESSES, key);
	snprintf(a->shown, sizeof(a->shown), "pair %.16s", key);
	a->refund = true;
	a->soft = soft;
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
	const char *phc = !g->pg || r->db_state == GW_DB_FILE ?
			  gw_creds_find(g->creds, r->tenant, r->user, r->user_len) :
			  r->db_state == GW_DB_FOUND ? r->db_phc : NULL;

	r->known = phc != NULL;
	/* Unknown accounts, and refused logins, verify against a dummy of the same cost: a
	 * miss, a refusal and a wrong password take the same time and give the same answer,
	 * and a refused right password is never checked. */
	snprintf(r->work.phc, sizeof(r->work.phc), "%s", phc && !r->decoy ? phc : g->dummy_phc);
}

/* The hash is done (gw_admit.c has counted it): a token, or the one 401. */
static void finish_login(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct gw_tstats *t = &g->ts[r->job.tenant];

	if (!r->known || r->decoy) {
		g->st.dummy_hashes++;
		t->dummy_hashes++;
	}
	if (r->work.verified && r->known && !r->decoy) {
		char tok[GW_TOKEN_MAX + 1];
		int n = gw_token_mint(g, GW_TOK_PASSWORD, r->tenant, r->user,
				      g->cfg->gw.token_ttl_s, tok, sizeof(tok));

		if (n < 0) {
			gw_respond(r, 503, "Service Unavailable", BODY_503, 0, false, false);
			return;
		}
		t->ok++;
		gw_chain_settle(r, true);
		gw_usual_signed_in(r, GW_USUAL_PASSWORD);
		emit(r, GW_LOGIN_SUCCESS);
		gw_json_token(evhttp_request_get_output_buffer(r->req), tok,
			      g->cfg->gw.token_ttl_s, NULL);
		gw_respond(r, 200, "OK", NULL, 0, false, false);
		return;
	}
	t->unauthorized++;
	gw_chain_settle(r, false);
	emit(r, r->decoy ? GW_LOGIN_THROTTLED : GW_LOGIN_FAILURE);
	gw_respond(r, 401, "Unauthorized", g->cfg->gw.login_uniform ? BODY_SIGNIN : BODY_401, 0,
		   true, false);
}

/* ---- upstream mode: the same counters, the upstream's verdict ---------------------------- */

static void upstream_checked(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms)
{
	int reason;

	if (!refused) {
		gw_admit(r);
		return;
	}
	/* No decoy here, login_uniform or not: serving one would mean forwarding a refused
	 * login. The refusal is the 429 every other capacity refusal gets. */
	reason = refused->ctr == SL_CTR_LOGIN_FAILURES || refused->ctr == SL_CTR_LOGIN_PARENT ?
		 GW_SHED_FAILURES : refused->ctr == SL_CTR_LOGIN_SUCCESSES ? GW_SHED_SUCCESSES :
		 GW_SHED_TENANT_LOGINS;
	r->min_retry_s = (retry_ms + 999) / 1000;
	emit(r, GW_LOGIN_THROTTLED);
	gw_shed(r, reason);
}

void gw_login_upstream_start(struct gw_req *r)
{
	if (r->g->stream) {
		stream_ids(r->g, r);
		if (escalated(r)) {
			sodium_memzero(r->work.pwd, sizeof(r->work.pwd));
			return;
		}
	}
	/* The password went into the stream job's keyed hash; the upstream gets it from the
	 * body as it came. */
	sodium_memzero(r->work.pwd, sizeof(r->work.pwd));
	r->work.pwd_len = 0;
	login_asks(r);
	r->known = true; /* the gateway has no account table here: the upstream decides */
	for (int i = 0; i < r->chain.n; i++)
		r->chain.ask[i].soft = false;
	if (gw_chain_run(r, upstream_checked))
		gw_admit(r);
}

void gw_login_upstream_outcome(struct gw_req *r, int outcome)
{
	struct gw_tstats *t = &r->g->ts[r->job.tenant];

	if (outcome > 0) {
		t->ok++;
		gw_chain_settle(r, true);
		gw_usual_signed_in(r, GW_USUAL_PASSWORD);
		emit(r, GW_LOGIN_SUCCESS);
	} else if (outcome == 0) {
		t->unauthorized++;
		gw_chain_settle(r, false);
		emit(r, GW_LOGIN_FAILURE);
	} else {
		gw_chain_refund(r);
	}
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
