// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The gateway's lifecycle (gateway.h): prepare what a config needs that can fail (the
 * credential file, the session key, the delivery), start (the scheduler, the dummy hash,
 * the Argon2id workers, the listener and the housekeeping tick), apply a new config while
 * running, and stop, answering whatever is outstanding. The rooms that serve requests are
 * listed in gw_internal.h, in the order a request meets them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "gw_creds.h"
#include "gw_internal.h"
#include "gw_ladder.h"
#include "gw_pg.h"
#include "gw_usual.h"
#include "log.h"

struct gw_prepared {
	struct gw_creds *creds;
	uint8_t key[GW_TOKEN_KEY_BYTES];
	bool have_key;
	struct gw_delivery deliv;
	bool have_deliv;
	struct ssl_ctx_st *tls;        /* gateway.tls's context, built here off the loop */
};

void gateway_prepared_free(struct gw_prepared *p)
{
	if (!p)
		return;
	gw_creds_free(p->creds);
	if (p->have_deliv)
		gw_delivery_close(&p->deliv);
	gw_tls_ctx_free(p->tls);
	sodium_memzero(p->key, sizeof(p->key));
	free(p);
}

struct gw_prepared *gateway_prepare(const struct sl_config *c, char *err, size_t errlen)
{
	struct gw_prepared *p;

	if (sodium_init() < 0) {
		snprintf(err, errlen, "libsodium cannot initialise");
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (c->gw.credentials[0] && gw_creds_load(c->gw.credentials, c, &p->creds, err, errlen))
		goto fail;
	/* The database is only checked here (its conninfo readable and usable without a
	 * blocking lookup): connecting is the pool's, in the background. */
	if (c->gw.db.present && gw_pg_check(&c->gw.db, err, errlen))
		goto fail;
	if (c->gw.session_key[0]) {
		if (gw_token_key_load(c->gw.session_key, p->key, err, errlen))
			goto fail;
		p->have_key = true;
	}
	if (gw_delivery_open(&p->deliv, c, err, errlen))
		goto fail;
	p->have_deliv = true;
	if (gw_tls_build(c, &p->tls, err, errlen))
		goto fail;
	return p;
fail:
	gateway_prepared_free(p);
	return NULL;
}

/* Per-slot stats follow the scheduler's slots: a slot given to another tenant starts
 * from zero. */
static void sync_stats(struct gateway *g)
{
	int i;

	for (i = 0; i < GW_MAX_TENANTS; i++) {
		const struct gw_tstate *t = &g->sched->t[i];

		if (t->used && strcmp(g->ts[i].name, t->name)) {
			memset(&g->ts[i], 0, sizeof(g->ts[i]));
			snprintf(g->ts[i].name, sizeof(g->ts[i].name), "%s", t->name);
		}
	}
}

static void set_token_keys(struct gateway *g)
{
	int k;

	for (k = 0; k < GW_TOK_KEYS; k++)
		gw_token_subkey(g->key, k, g->tkey[k]);
}

void gateway_set_store(struct gateway *g, struct sl_store *s)
{
	int ret;

	g->store = s;
	/* Codes, links and refresh chains go where the counters go (gw_vault_redis.c). */
	if (s && g->cfg->redis.address[0] && !gw_vault_shared(g->vault)) {
		ret = gw_vault_attach(g->vault, s, g->cfg->redis.key_prefix);
		if (ret)
			log_error("gateway: the vault's script could not be loaded (%s): every "
				  "code, link and refresh operation answers 503", strerror(-ret));
	}
	if (s && g->cfg->redis.address[0] && !g->cfg->gw.session_key[0])
		log_warn("gateway: counters are shared through Redis but gateway.session_key is "
			 "not set: this node hashes its counter keys with a key of its own, so the "
			 "nodes do not count together");
}

struct gateway *gateway_start(struct event_base *base, const struct sl_config *c,
			      struct gw_prepared *p)
{
	struct gateway *g = calloc(1, sizeof(*g));
	struct timeval tick = { .tv_sec = 0, .tv_usec = TICK_MS * 1000 };
	uint8_t lkey[16], rnd[32];
	int ret;

	if (!g || sodium_init() < 0) {
		free(g);
		gateway_prepared_free(p);
		return NULL;
	}
	/* Take what was prepared first, so every failure below has one way out. */
	g->creds = p->creds;
	p->creds = NULL;
	if (p->have_key)
		memcpy(g->key, p->key, sizeof(g->key));
	else
		randombytes_buf(g->key, sizeof(g->key));
	set_token_keys(g);
	if (p->have_deliv) {
		g->deliv = p->deliv;
		p->have_deliv = false;
	}
	g->tls = p->tls;
	p->tls = NULL;
	gateway_prepared_free(p);
	g->vault = gw_vault_new(g->key);
	if (!g->vault)
		goto fail;
	g->base = base;
	g->pool.efd = -1;
	g->cfg = malloc(sizeof(*g->cfg));
	g->sched = calloc(1, sizeof(*g->sched));
	g->ladder = calloc(1, sizeof(*g->ladder));
	g->ts = calloc(GW_MAX_TENANTS, sizeof(*g->ts));
	if (!g->cfg || !g->sched || !g->ladder || !g->ts)
		goto fail;
	*g->cfg = *c;
	g->started = c->gw;
	if (!c->gw.credentials[0] && !c->gw.db.present)
		log_warn("gateway: no gateway.credentials file: every login will fail");
	if (!c->gw.session_key[0])
		log_info("gateway: no gateway.session_key: tokens are signed with a key made now "
			 "and stop validating when sluiced restarts");

	if (gw_sched_init(g->sched, g->cfg, gw_now_ns())) {
		log_error("gateway: cannot set up admission");
		goto fail;
	}
	g->sched->ready = gw_job_ready;
	g->sched->ready_arg = g;
	randombytes_buf(lkey, sizeof(lkey));
	gw_ladder_init(g->ladder, c->retry_after, c->n_retry, c->streak_decay_s, lkey);
	sync_stats(g);

	/* The dummy hash for unknown accounts: made with the running parameters so it costs
	 * what a real one does. */
	randombytes_buf(rnd, sizeof(rnd));
	ret = gw_argon2_hash(&c->gw, (const char *)rnd, sizeof(rnd), g->dummy_phc,
			     sizeof(g->dummy_phc));
	sodium_memzero(rnd, sizeof(rnd));
	if (ret) {
		log_error("gateway: cannot compute the dummy hash (m_cost %u KiB): %s",
			  c->gw.m_cost_kib, strerror(-ret));
		goto fail;
	}

	ret = gw_pool_start(&g->pool, c->gw.workers);
	if (ret)
		goto fail;
	g->sched->workers = g->pool.n;
	g->pool_ev = event_new(base, g->pool.efd, EV_READ | EV_PERSIST, gw_on_pool, g);
	if (!g->pool_ev || event_add(g->pool_ev, NULL))
		goto fail;
	/* Sign-ups are appended to the credential file by a thread of their own. */
	ret = gw_cwriter_start(&g->cw);
	if (ret) {
		log_error("gateway: cannot start the credential writer: %s", strerror(-ret));
		goto fail;
	}
	g->cw_ev = event_new(base, gw_cwriter_fd(g->cw), EV_READ | EV_PERSIST, gw_on_signups, g);
	if (!g->cw_ev || event_add(g->cw_ev, NULL))
		goto fail;

	if (gw_upstreams_start(g, c))
		goto fail;
	if (c->gw.db.present) {
		char perr[512];

		ret = gw_pg_start(base, &c->gw.db, &g->pg, perr, sizeof(perr));
		if (ret) {
			log_error("gateway: %s", perr);
			goto fail;
		}
	}
	if (gw_http_listen(g))
		goto fail;
	gw_tls_log(g->tls, "serving");
	g->tick = event_new(base, -1, EV_PERSIST, gw_on_tick, g);
	if (!g->tick || event_add(g->tick, &tick))
		goto fail;
	log_info("gateway listening on %s: %d tenant(s), %d route(s), %u Argon2id worker(s) "
		 "(m=%u KiB t=%u p=%u), %u account(s), admission %s", c->gw.listen, c->n_tenants,
		 c->n_routes, g->pool.n, c->gw.m_cost_kib, c->gw.t_cost, c->gw.parallelism,
		 gw_creds_count(g->creds), c->gw.admission ? "on" : "OFF (unbounded FIFO)");
	if (g->pool.n > 2 * (uint32_t)sysconf(_SC_NPROCESSORS_ONLN))
		log_warn("gateway: %u hash workers on %ld CPUs: extra workers add queueing in "
			 "the kernel, not throughput; lower memory_budget_mib", g->pool.n,
			 sysconf(_SC_NPROCESSORS_ONLN));
	return g;
fail:
	gateway_stop(g);
	return NULL;
}

void gateway_apply(struct gateway *g, const struct sl_config *c, struct gw_prepared *p)
{
	const struct sl_gateway_cfg *o = &g->started, *n = &c->gw;

	if (strcmp(o->listen, n->listen))
		log_warn("gateway.listen changes take effect at the next start");
	if (o->m_cost_kib != n->m_cost_kib || o->t_cost != n->t_cost ||
	    o->parallelism != n->parallelism || o->workers != n->workers)
		log_warn("gateway.argon2 changes take effect at the next start (the workers and "
			 "the dummy hash are sized by them)");
	if (memcmp(&o->db, &n->db, sizeof(o->db)))
		log_warn("gateway.credentials_db changes take effect at the next start (its pool "
			 "is made from them)");
	*g->cfg = *c;
	/* What cannot change while running keeps its running value. */
	snprintf(g->cfg->gw.listen, sizeof(g->cfg->gw.listen), "%s", o->listen);
	g->cfg->gw.m_cost_kib = o->m_cost_kib;
	g->cfg->gw.t_cost = o->t_cost;
	g->cfg->gw.parallelism = o->parallelism;
	g->cfg->gw.memory_budget_mib = o->memory_budget_mib;
	g->cfg->gw.workers = o->workers;
	g->cfg->gw.db = o->db;
	gw_creds_free(g->creds);
	g->creds = p->creds;
	p->creds = NULL;
	if (p->have_key)
		memcpy(g->key, p->key, sizeof(g->key));
	set_token_keys(g);
	if (p->have_deliv) {
		gw_delivery_close(&g->deliv);
		g->deliv = p->deliv;
		p->have_deliv = false;
	}
	/* TLS on or off is the listener's protocol: like listen, fixed at start. A new
	 * context (a renewed certificate) serves new connections; open ones keep theirs. */
	if (!g->tls != !p->tls) {
		log_warn("gateway.tls %s takes effect at the next start: the listener stays %s",
			 p->tls ? "being set" : "being removed", g->tls ? "TLS" : "plaintext");
	} else if (p->tls) {
		gw_tls_ctx_free(g->tls);
		g->tls = p->tls;
		p->tls = NULL;
		gw_tls_log(g->tls, "reloaded");
	}
	gateway_prepared_free(p);
	gw_sched_configure(g->sched, g->cfg, gw_now_ns());
	g->sched->workers = g->pool.n;
	gw_upstreams_apply(g, g->cfg);
	gw_ladder_set_levels(g->ladder, c->retry_after, c->n_retry, c->streak_decay_s);
	sync_stats(g);
	gw_http_limits(g);
	log_info("gateway: config applied: %d tenant(s), %d route(s), %u account(s)",
		 c->n_tenants, c->n_routes, gw_creds_count(g->creds));
	gw_dispatch(g);
}

void gateway_set_ready(struct gateway *g, gw_ready_fn fn, void *arg)
{
	if (!g)
		return;
	g->ready = fn;
	g->ready_arg = arg;
}

void gateway_drain(struct gateway *g)
{
	struct gw_req *r;

	if (!g || g->draining)
		return;
	/* Requests already in: their answers close their connections. */
	for (r = g->reqs; r; r = r->next)
		if (r->req)
			evhttp_add_header(evhttp_request_get_output_headers(r->req), "Connection",
					  "close");
	gw_conn_drain(g);
	log_info("gateway: draining: not accepting; %u requests outstanding, %u connections "
		 "open", g->n_reqs, g->n_conns);
}

bool gateway_drained(struct gateway *g)
{
	/* Requests, not connections: one part-way through a request (a slow upload, or a
	 * client dripping bytes to hold the drain) is closed with the rest at the stop; what
	 * it sent was never served, so a retry elsewhere is safe. */
	return !g || !g->n_reqs;
}

void gateway_stop(struct gateway *g)
{
	struct gw_work *w;
	struct gw_req *r;

	if (!g)
		return;
	if (g->tick)
		event_free(g->tick);
	if (g->pool_ev)
		event_free(g->pool_ev);
	if (g->pool.th) {
		gw_pool_stop(&g->pool); /* never-started jobs are still on the request list */
		for (w = gw_pool_collect(&g->pool); w; w = w->next)
			; /* finished: answered below like everything else */
	}
	gw_pool_destroy(&g->pool);
	/* Sign-ups being written are finished (their lines reach the disk, their answers go
	 * out) before the rest is answered. */
	if (g->cw_ev)
		event_free(g->cw_ev);
	if (g->cw) {
		gw_cwriter_stop(g->cw);
		gw_on_signups(-1, 0, g);
		gw_cwriter_free(g->cw);
	}
	/* Queries outstanding are dropped: their requests are answered below. */
	gw_pg_free(g->pg);
	g->pg = NULL;
	/* Everything outstanding gets an answer before evhttp frees its connections. */
	while ((r = g->reqs)) {
		if (r->hold || r->in_line) {
			gw_send_now(r);
			continue;
		}
		r->code = 503;
		r->reason = "Service Unavailable";
		r->body = BODY_503;
		/* Stopping (after a drain's bound): try again, elsewhere or on the next us. */
		r->retry_after = 1;
		gw_send_now(r);
	}
	gw_conn_flush_all(g);
	gw_upstreams_stop(g);
	if (g->http)
		evhttp_free(g->http);
	gw_conn_close_all(g);
	gw_tls_ctx_free(g->tls);
	gw_creds_free(g->creds);
	gw_vault_free(g->vault);
	gw_delivery_close(&g->deliv);
	sodium_memzero(g->tkey, sizeof(g->tkey));
	free(g->esc_acct);
	free(g->esc_pw);
	gw_usual_free(g->usual);
	free(g->usual);
	sodium_memzero(g->key, sizeof(g->key));
	gw_req_spare_free(g);
	free(g->sched);
	free(g->ladder);
	free(g->ts);
	free(g->cfg);
	free(g);
}
