// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * What the gateway tells about itself: the `tenants` control command (sluicectl tenants,
 * a JSON document or a table), the `limits` document (the two dials: per tenant and per
 * principal, docs/endpoints.md "Limits"; then the edge's class budgets, budget.h) and the
 * gateway's part of Prometheus /metrics.
 * Everything here reads the gateway's counters and the scheduler's state; nothing here
 * changes them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "budget.h"
#include "gw_creds.h"
#include "gw_pg.h"
#include "gw_internal.h"
#include "json.h"

/* A control command's answer: "ok" and the document @fn writes. */
static void report(struct gateway *g, struct evbuffer *out,
		   void (*fn)(struct gateway *g, FILE *f))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		evbuffer_add_printf(out, "error out of memory\n");
		return;
	}
	fn(g, f);
	fclose(f);
	evbuffer_add_printf(out, "ok\n");
	evbuffer_add(out, buf, len);
	free(buf);
}

/* ---- the tenants command ---------------------------------------------------------------- */

static double ms(uint64_t us)
{
	return (double)us / 1000.0;
}

static void tenants_json(struct gateway *g, FILE *f)
{
	struct gw_sched *s = g->sched;
	uint64_t now = gw_now_ns();
	double res_rate = gw_meter_value(&s->reserved_rate, now) * 1e9 / GW_METER_TAU_NS;
	double burst_rate = gw_meter_value(&s->burst_rate, now) * 1e9 / GW_METER_TAU_NS;
	double room = s->cap_cpu - res_rate;
	struct json j;
	int i, k, code;

	json_init(&j, f);
	json_obj_begin(&j, NULL);
	json_obj_begin(&j, "gateway");
	json_str(&j, "listen", g->started.listen);
	json_bool(&j, "admission", s->admission);
	json_u64(&j, "workers", g->pool.n);
	json_u64(&j, "busy_workers", g->pool.busy);
	json_u64(&j, "accounts", gw_creds_count(g->creds));
	json_u64(&j, "requests", g->st.requests);
	json_u64(&j, "hashes", g->st.hashes);
	json_u64(&j, "dummy_hashes", g->st.dummy_hashes);
	json_u64(&j, "expired_before_hash", g->st.expired_before_hash);
	json_u64(&j, "expired_at_worker", g->st.expired_at_start);
	json_u64(&j, "client_gone", g->st.client_gone);
	/* The endpoints beyond /login: answered, failed (bad secret, code, link, grant) and
	 * refused by one of their counters. */
	json_obj_begin(&j, "endpoints");
	for (k = K_TOKEN; k < K__MAX; k++) {
		static const char *const names[K__MAX] = { [K_TOKEN] = "token",
			[K_MFA_SEND] = "mfa_send", [K_MFA_VERIFY] = "mfa_verify",
			[K_RESET] = "password_reset", [K_REGISTER] = "register",
			[K_MAGIC] = "magic" };

		json_obj_begin(&j, names[k]);
		json_u64(&j, "ok", g->ep[k].ok);
		json_u64(&j, "failed", g->ep[k].failed);
		json_u64(&j, "throttled", g->ep[k].throttled);
		json_obj_end(&j);
	}
	json_u64(&j, "codes_sent", g->otp_sent);
	json_u64(&j, "links_sent", g->links_sent);
	json_u64(&j, "notices_sent", g->notices_sent);
	json_u64(&j, "delivery_failed", g->outbound_failed);
	json_u64(&j, "refresh_reuse", g->refresh_reuse);
	json_u64(&j, "tokens_revoked", g->tokens_revoked);
	json_u64(&j, "revocations_evicted", g->vault->rv_evicted);
	json_u64(&j, "vault_live", gw_vault_live(g->vault, (uint64_t)time(NULL)));
	json_obj_end(&j);
	json_obj_begin(&j, "queue");
	json_u64(&j, "depth", s->depth);
	json_u64(&j, "limit", gw_sched_depth_limit(s));
	json_str(&j, "mode", s->lifo ? "lifo" : "fifo");
	json_double(&j, "wait_ms", (double)gw_sched_queue_wait(s, now) / 1e6);
	json_bool(&j, "codel_dropping", s->dropping);
	json_u64(&j, "codel_episodes", s->codel_episodes);
	json_u64(&j, "lifo_switches", s->lifo_switches);
	json_double(&j, "service_rate", gw_sched_service_rate(s));
	json_double(&j, "service_ms", s->svc_ns / 1e6);
	json_obj_end(&j);
	json_obj_begin(&j, "capacity");
	json_double(&j, "cpu", s->cap_cpu);
	json_double(&j, "db", s->cap_db);
	json_double(&j, "tokens", s->pool.tokens);
	json_double(&j, "reserved_rate", res_rate);
	json_double(&j, "burst_rate", burst_rate);
	/* The share of what reservations leave free that burst work is using now. */
	json_double(&j, "burst_pool_utilization", room > 0 ? burst_rate / room : 1.0);
	json_double(&j, "db_shared_in_use", s->db_shared_used);
	json_obj_end(&j);
	json_obj_begin(&j, "floor");
	json_u64(&j, "ms", g->cfg->gw.reject_floor_ms);
	json_u64(&j, "held", g->held);
	json_u64(&j, "max_held", g->cfg->gw.max_held);
	json_u64(&j, "held_total", g->st.floor_held);
	json_u64(&j, "queued_total", g->st.floor_queued);
	json_u64(&j, "in_line", g->line_len);
	json_obj_end(&j);
	json_obj_begin(&j, "connections");
	json_u64(&j, "open", g->n_conns);
	json_u64(&j, "max", g->cfg->gw.max_connections);
	json_u64(&j, "timed_out", g->st.conn_timeouts);
	json_u64(&j, "accept_pauses", g->st.accept_pauses);
	json_u64(&j, "max_per_prefix", g->cfg->gw.max_conns_prefix);
	json_u64(&j, "max_per_parent", g->cfg->gw.max_conns_parent);
	json_u64(&j, "refused_prefix", g->front.prefix_refused);
	json_u64(&j, "refused_parent", g->front.parent_refused);
	json_u64(&j, "evicted_idle", g->front.evicted);
	json_u64(&j, "closed_at_max_requests", g->front.request_capped);
	json_obj_end(&j);
	json_obj_begin(&j, "heads_refused");
	for (code = 1; code < GW_HEAD__N; code++)
		json_u64(&j, gw_head_reason(code), g->front.head_refused[code]);
	json_obj_end(&j);
	json_obj_begin(&j, "client_address");
	json_u64(&j, "trusted_hops", g->cfg->gw.trusted_hops);
	json_u64(&j, "from_xff", g->st.xff_used);
	json_u64(&j, "xff_ignored", g->st.xff_ignored);
	json_u64(&j, "xff_refused", g->front.xff_refused);
	json_obj_end(&j);
	json_obj_begin(&j, "responses");
	for (code = 100; code < 600; code++)
		if (g->st.status[code]) {
			char key[8];

			snprintf(key, sizeof(key), "%d", code);
			json_u64(&j, key, g->st.status[code]);
		}
	json_obj_end(&j);
	json_arr_begin(&j, "classes");
	for (k = 0; k < GW_MAX_CLASSES; k++) {
		const struct gw_class *cl = &s->cls[k];

		if (!cl->used)
			continue;
		json_obj_begin(&j, NULL);
		json_str(&j, "name", cl->name);
		json_double(&j, "configured", cl->configured);
		json_double(&j, "estimate", cl->estimate);
		/* Persistent drift means the route table no longer tells the truth. */
		json_double(&j, "drift", cl->configured > 0 ?
			    cl->estimate / cl->configured - 1.0 : 0);
		json_u64(&j, "samples", cl->samples);
		json_double(&j, "mean_abs_error", cl->samples ?
			    cl->sum_abs_err / (double)cl->samples : 0);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);

	json_arr_begin(&j, "tenants");
	for (i = 0; i < GW_MAX_TENANTS; i++) {
		const struct gw_tstate *t = &s->t[i];
		const struct gw_tstats *ts = &g->ts[i];
		double cons;

		if (!t->used)
			continue;
		cons = gw_sched_consumption(s, i, now);
		json_obj_begin(&j, NULL);
		json_str(&j, "name", t->name);
		json_bool(&j, "live", t->live);
		json_double(&j, "reservation", t->reservation);
		json_double(&j, "consumption", cons);
		json_double(&j, "overage", cons > t->reservation ? cons - t->reservation : 0);
		/* No reservation, no ratio: all of its use is burst (and it is shed first). */
		if (t->reservation > 0)
			json_double(&j, "overage_ratio", gw_sched_overage(s, i, now));
		else
			json_null(&j, "overage_ratio");
		json_u64(&j, "requests", ts->requests);
		json_obj_begin(&j, "admitted");
		json_u64(&j, "reserved", ts->admitted_reserved);
		json_u64(&j, "burst", ts->admitted_burst);
		json_obj_end(&j);
		json_u64(&j, "ok", ts->ok);
		json_u64(&j, "unauthorized", ts->unauthorized);
		json_u64(&j, "hashes", ts->hashes);
		json_u64(&j, "dummy_hashes", ts->dummy_hashes);
		json_double(&j, "units_measured", ts->units_measured);
		json_u64(&j, "shed", ts->shed);
		json_obj_begin(&j, "shed_by_class");
		for (k = 0; k < GW_MAX_CLASSES; k++)
			if (s->cls[k].used)
				json_u64(&j, s->cls[k].name, ts->shed_by_class[k]);
		json_obj_end(&j);
		json_obj_begin(&j, "shed_by_reason");
		for (k = 1; k < GW_SHED__MAX; k++)
			json_u64(&j, gw_shed_name(k), ts->shed_by_reason[k]);
		json_obj_end(&j);
		json_obj_begin(&j, "queue_wait_ms");
		json_double(&j, "p50", ms(gw_hist_quantile_us(&ts->wait, 0.5)));
		json_double(&j, "p99", ms(gw_hist_quantile_us(&ts->wait, 0.99)));
		json_u64(&j, "n", ts->wait.n);
		json_obj_end(&j);
		json_obj_begin(&j, "service_ms");
		json_double(&j, "p50", ms(gw_hist_quantile_us(&ts->service, 0.5)));
		json_double(&j, "p99", ms(gw_hist_quantile_us(&ts->service, 0.99)));
		json_u64(&j, "n", ts->service.n);
		json_obj_end(&j);
		json_u64(&j, "queued", t->burst.n + t->queued_reserved);
		json_u64(&j, "inflight", t->inflight);
		json_double(&j, "db_in_use", t->db_used_share + t->db_used_shared);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	json_end(&j);
}

static void tenants_text(struct gateway *g, FILE *f)
{
	struct gw_sched *s = g->sched;
	uint64_t now = gw_now_ns();
	int i, k;

	fprintf(f, "gateway %s  admission %s  workers %u (%u busy)  queue %u/%u %s%s  "
		"service %.1f/s  hashes %llu (%llu dummy)  expired unhashed %llu\n",
		g->started.listen, s->admission ? "on" : "OFF", g->pool.n, g->pool.busy,
		s->depth, gw_sched_depth_limit(s), s->lifo ? "LIFO" : "FIFO",
		s->dropping ? " CODEL" : "", gw_sched_service_rate(s),
		(unsigned long long)g->st.hashes, (unsigned long long)g->st.dummy_hashes,
		(unsigned long long)(g->st.expired_before_hash));
	fprintf(f, "%-16s %9s %9s %6s %9s %8s %8s %17s %17s  %s\n", "TENANT", "RESERVED",
		"USING", "OVER", "ADMITTED", "SHED", "HASHES", "WAIT p50/p99 ms",
		"SERVICE p50/p99", "SHED BY CLASS");
	for (i = 0; i < GW_MAX_TENANTS; i++) {
		const struct gw_tstate *t = &s->t[i];
		const struct gw_tstats *ts = &g->ts[i];
		char wait[32], svc[32], over[24];
		bool first = true;

		if (!t->used)
			continue;
		snprintf(wait, sizeof(wait), "%.1f/%.1f", ms(gw_hist_quantile_us(&ts->wait, 0.5)),
			 ms(gw_hist_quantile_us(&ts->wait, 0.99)));
		snprintf(svc, sizeof(svc), "%.1f/%.1f", ms(gw_hist_quantile_us(&ts->service, 0.5)),
			 ms(gw_hist_quantile_us(&ts->service, 0.99)));
		if (t->reservation > 0)
			snprintf(over, sizeof(over), "%.1fx", gw_sched_overage(s, i, now));
		else
			snprintf(over, sizeof(over), "-");
		fprintf(f, "%-16s %9.0f %9.0f %6s %9llu %8llu %8llu %17s %17s  ", t->name,
			t->reservation, gw_sched_consumption(s, i, now), over,
			(unsigned long long)(ts->admitted_reserved + ts->admitted_burst),
			(unsigned long long)ts->shed, (unsigned long long)ts->hashes, wait, svc);
		for (k = 0; k < GW_MAX_CLASSES; k++)
			if (s->cls[k].used && ts->shed_by_class[k]) {
				fprintf(f, "%s%s=%llu", first ? "" : ",", s->cls[k].name,
					(unsigned long long)ts->shed_by_class[k]);
				first = false;
			}
		fprintf(f, "%s%s\n", first ? "-" : "", t->live ? "" : " (removed, draining)");
	}
	fprintf(f, "%-16s %9s %9s %7s %8s %8s\n", "CLASS", "TABLE", "ESTIMATE", "DRIFT",
		"SAMPLES", "");
	for (k = 0; k < GW_MAX_CLASSES; k++) {
		const struct gw_class *cl = &s->cls[k];

		if (cl->used)
			fprintf(f, "%-16s %9.1f %9.1f %+6.0f%% %8llu\n", cl->name, cl->configured,
				cl->estimate, cl->configured > 0 ?
				(cl->estimate / cl->configured - 1.0) * 100 : 0,
				(unsigned long long)cl->samples);
	}
}

void gateway_tenants(struct gateway *g, struct evbuffer *out, bool json)
{
	report(g, out, json ? tenants_json : tenants_text);
}

/* ---- the limits document ---------------------------------------------------------------- */

/*
 * The two dials, side by side and never added together (docs/endpoints.md, "Limits"): per
 * tenant the floor (capacity / active tenants: the number a contract may quote), the
 * reservation admission holds for it, and the ceiling (the courtesy, shrinking when many
 * are busy); per principal (each user, each API client) the window that stops a runaway
 * client, set from measured client rates.
 */
static double limit_window(double rate, double burst)
{
	return rate > 0 ? burst / rate : 0;
}

/* The floor, the promise: the capacity shared by the active tenants (*@active of them). */
static double tenant_floor(const struct sl_config *c, uint32_t *active)
{
	*active = c->gw.active_tenants ? c->gw.active_tenants : (uint32_t)c->n_tenants;
	return *active ? c->gw.cap_cpu / *active : c->gw.cap_cpu;
}

static double tenant_ceiling(const struct sl_config *c, int i)
{
	return c->tenants[i].ceiling > 0 ? c->tenants[i].ceiling : c->gw.cap_cpu;
}

/* What tenant @i used over the last second, in cpu units/s. */
static double tenant_using(struct gateway *g, int i, uint64_t now)
{
	int slot = gw_sched_slot(g->sched, i);

	return slot < 0 ? 0 : gw_meter_value(&g->sched->t[slot].cons, now) * 1e9 / GW_METER_TAU_NS;
}

/* Client @k's limit: its own (clients[].rate/burst), else counters.token_client's. */
static void client_limit(const struct sl_config *c, int k, double *rate, double *burst)
{
	const struct sl_client_cfg *cl = &c->clients[k];
	const struct sl_counter_cfg *tc = &c->counters[SL_CTR_TOKEN_CLIENT];

	*rate = cl->rate > 0 ? cl->rate : tc->rate;
	*burst = cl->rate > 0 ? (cl->burst > 0 ? cl->burst : tc->burst) : tc->burst;
}

/* One limit as an object: rate, burst and, with @window, burst / rate in seconds. */
static void limit_json(struct json *j, const char *name, double rate, double burst,
		       bool window)
{
	json_obj_begin(j, name);
	json_double(j, "rate", rate);
	json_double(j, "burst", burst);
	if (window)
		json_double(j, "window_s", limit_window(rate, burst));
	json_obj_end(j);
}

/* The enabled counters among @ids[0..n), an object each. */
static void counters_json(struct json *j, const struct sl_config *c, const int *ids, int n,
			  bool window)
{
	int k;

	for (k = 0; k < n; k++) {
		const struct sl_counter_cfg *cc = &c->counters[ids[k]];

		if (cc->enabled)
			limit_json(j, sl_counter_name(ids[k]), cc->rate, cc->burst, window);
	}
}

static void limits_json(struct gateway *g, FILE *f)
{
	const struct sl_config *c = g->cfg;
	const struct sl_counter_cfg *u = &c->counters[SL_CTR_USER];
	uint32_t active;
	double floor = tenant_floor(c, &active);
	uint64_t now = gw_now_ns();
	static const int per_account[] = { SL_CTR_LOGIN_FAILURES, SL_CTR_LOGIN_PARENT,
		SL_CTR_MFA_ATTEMPTS, SL_CTR_MFA_SENDS, SL_CTR_RESET_ACCOUNT,
		SL_CTR_REGISTER_ACCOUNT };
	static const int per_tenant[] = { SL_CTR_TENANT_LOGINS, SL_CTR_TENANT_TOKENS,
		SL_CTR_OUTBOUND, SL_CTR_RESET_TENANT, SL_CTR_REGISTER_TENANT };
	struct json j;
	int i, k;

	json_init(&j, f);
	json_obj_begin(&j, NULL);
	json_str(&j, "unit", "cpu units/s (100 us of CPU per unit)");
	json_double(&j, "capacity", c->gw.cap_cpu);
	json_u64(&j, "active_tenants", active);
	json_arr_begin(&j, "tenants");
	for (i = 0; i < c->n_tenants; i++) {
		const struct sl_tenant_cfg *t = &c->tenants[i];

		json_obj_begin(&j, NULL);
		json_str(&j, "name", t->name);
		json_double(&j, "floor", floor);
		json_double(&j, "reservation", t->reservation);
		json_double(&j, "ceiling", tenant_ceiling(c, i));
		json_bool(&j, "ceiling_configured", t->ceiling > 0);
		json_double(&j, "consumption", tenant_using(g, i, now));
		json_obj_begin(&j, "counters");
		counters_json(&j, c, per_tenant, (int)(sizeof(per_tenant) / sizeof(per_tenant[0])),
			      false);
		json_obj_end(&j);
		json_obj_begin(&j, "principals");
		if (u->enabled)
			limit_json(&j, "user", u->rate, u->burst, true);
		json_arr_begin(&j, "clients");
		for (k = 0; k < c->n_clients; k++) {
			const struct sl_client_cfg *cl = &c->clients[k];
			double rate, burst;

			if (cl->tenant != i)
				continue;
			client_limit(c, k, &rate, &burst);
			json_obj_begin(&j, NULL);
			json_str(&j, "id", cl->id);
			json_double(&j, "rate", rate);
			json_double(&j, "burst", burst);
			json_double(&j, "window_s", limit_window(rate, burst));
			json_str(&j, "source", cl->rate > 0 ? "client" : "counters.token_client");
			json_double(&j, "measured_peak_per_s", gw_client_peak(g, k, now));
			json_u64(&j, "requests", gw_client_requests(g, k));
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_obj_end(&j);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_begin(&j, "per_account");
	counters_json(&j, c, per_account, (int)(sizeof(per_account) / sizeof(per_account[0])),
		      true);
	json_obj_end(&j);
	sl_edge_limits_json(&j, c); /* "edge": the classes' budgets, when there is an edge */
	json_obj_end(&j);
	json_end(&j);
}

static void limits_text(struct gateway *g, FILE *f)
{
	const struct sl_config *c = g->cfg;
	uint32_t active;
	double floor = tenant_floor(c, &active);
	const struct sl_counter_cfg *u = &c->counters[SL_CTR_USER];
	uint64_t now = gw_now_ns();
	int i, k;

	fprintf(f, "Per tenant (cpu units/s; capacity %g, %u active tenants)\n", c->gw.cap_cpu,
		active);
	fprintf(f, "  the floor is the promise (capacity / active tenants); the ceiling is a "
		"courtesy that shrinks when many are busy\n");
	fprintf(f, "  %-20s %12s %12s %12s %12s\n", "TENANT", "FLOOR", "RESERVATION", "CEILING",
		"USING");
	for (i = 0; i < c->n_tenants; i++)
		fprintf(f, "  %-20s %12.1f %12.1f %12.1f %12.1f\n", c->tenants[i].name, floor,
			c->tenants[i].reservation, tenant_ceiling(c, i), tenant_using(g, i, now));
	fprintf(f, "\nPer principal (requests: a burst at once, then the rate; set from measured "
		"client rates)\n");
	fprintf(f, "  %-20s %-28s %12s %10s %10s %12s\n", "TENANT", "PRINCIPAL", "RATE",
		"BURST", "WINDOW_S", "MEASURED");
	for (i = 0; i < c->n_tenants; i++) {
		char rb[32], mb[32];

		if (u->enabled)
			fprintf(f, "  %-20s %-28s %12s %10.4g %10.4g\n", c->tenants[i].name,
				"each user", sl_fmt_rate(u->rate, rb, sizeof(rb)), u->burst,
				limit_window(u->rate, u->burst));
		for (k = 0; k < c->n_clients; k++) {
			const struct sl_client_cfg *cl = &c->clients[k];
			double rate, burst;
			char who[96];

			if (cl->tenant != i)
				continue;
			client_limit(c, k, &rate, &burst);
			snprintf(who, sizeof(who), "client %s", cl->id);
			fprintf(f, "  %-20s %-28s %12s %10.4g %10.4g %12s\n", c->tenants[i].name,
				who, sl_fmt_rate(rate, rb, sizeof(rb)), burst, limit_window(rate, burst),
				sl_fmt_rate(gw_client_peak(g, k, now), mb, sizeof(mb)));
		}
	}
	if (c->has_edge && c->n_classes) {
		fprintf(f, "\n");
		sl_edge_limits_text(f, c);
	}
}

void gateway_limits(struct gateway *g, struct evbuffer *out, bool json)
{
	report(g, out, json ? limits_json : limits_text);
}

/* ---- /metrics --------------------------------------------------------------------------- */

static void prom_label(struct evbuffer *out, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			evbuffer_add_printf(out, "\\%c", *v);
		else if (*v == '\n')
			evbuffer_add_printf(out, "\\n");
		else
			evbuffer_add(out, v, 1);
	}
}

static void prom_head(struct evbuffer *out, const char *name, const char *type,
		      const char *help)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A gw_hist as a Prometheus histogram in seconds: cumulative counts at fixed bounds (each
 * within the histogram's 19 % bucket resolution). */
static void prom_hist(struct evbuffer *out, const char *name, const char *tenant,
		      const struct gw_hist *h)
{
	static const double le_s[] = { 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
				       5, 10 };
	unsigned i;
	int b;

	for (i = 0; i < sizeof(le_s) / sizeof(le_s[0]); i++) {
		uint64_t cum = 0;

		for (b = 0; b < GW_HIST_BUCKETS; b++)
			if ((double)gw_hist_upper_us(b) <= le_s[i] * 1e6)
				cum += h->b[b];
		evbuffer_add_printf(out, "%s_bucket{tenant=\"", name);
		prom_label(out, tenant);
		evbuffer_add_printf(out, "\",le=\"%g\"} %llu\n", le_s[i], (unsigned long long)cum);
	}
	evbuffer_add_printf(out, "%s_bucket{tenant=\"", name);
	prom_label(out, tenant);
	evbuffer_add_printf(out, "\",le=\"+Inf\"} %llu\n", (unsigned long long)h->n);
	evbuffer_add_printf(out, "%s_sum{tenant=\"", name);
	prom_label(out, tenant);
	evbuffer_add_printf(out, "\"} %.6f\n", (double)h->sum_us / 1e6);
	evbuffer_add_printf(out, "%s_count{tenant=\"", name);
	prom_label(out, tenant);
	evbuffer_add_printf(out, "\"} %llu\n", (unsigned long long)h->n);
}

void gateway_metrics(struct gateway *g, struct evbuffer *out)
{
	struct gw_sched *s = g->sched;
	uint64_t now = gw_now_ns();
	double res_rate = gw_meter_value(&s->reserved_rate, now) * 1e9 / GW_METER_TAU_NS;
	double burst_rate = gw_meter_value(&s->burst_rate, now) * 1e9 / GW_METER_TAU_NS;
	double room = s->cap_cpu - res_rate;
	int i, k, code;

	gw_upstreams_metrics(g, out);
#define EACH_TENANT for (i = 0; i < GW_MAX_TENANTS; i++) if (s->t[i].used)
#define TLABEL(metric) do { evbuffer_add_printf(out, "%s{tenant=\"", metric); \
		prom_label(out, s->t[i].name); } while (0)
/* A family with one sample per tenant (slot i): @value printed with @fmt. */
#define TENANT_FAMILY(metric, type, help, fmt, value) do { \
		prom_head(out, metric, type, help); \
		EACH_TENANT { \
			TLABEL(metric); \
			evbuffer_add_printf(out, "\"} " fmt "\n", value); \
		} \
	} while (0)
	TENANT_FAMILY("sluice_gateway_requests_total", "counter", "Requests by tenant.", "%llu",
		      (unsigned long long)g->ts[i].requests);
	TENANT_FAMILY("sluice_gateway_answered_2xx_total", "counter",
		      "Successful answers (throughput), by tenant.", "%llu",
		      (unsigned long long)g->ts[i].answered_2xx);
	TENANT_FAMILY("sluice_gateway_goodput_total", "counter",
		      "Successful answers delivered before the request's deadline, by tenant.",
		      "%llu", (unsigned long long)g->ts[i].goodput);
	prom_head(out, "sluice_gateway_shed_total", "counter",
		  "Requests shed (429), by tenant and reason.");
	EACH_TENANT
		for (k = 1; k < GW_SHED__MAX; k++) {
			TLABEL("sluice_gateway_shed_total");
			evbuffer_add_printf(out, "\",reason=\"%s\"} %llu\n", gw_shed_name(k),
					    (unsigned long long)g->ts[i].shed_by_reason[k]);
		}
	prom_head(out, "sluice_gateway_shed_by_class_total", "counter",
		  "Requests shed (429), by tenant and cost class.");
	EACH_TENANT
		for (k = 0; k < GW_MAX_CLASSES; k++) {
			if (!s->cls[k].used)
				continue;
			TLABEL("sluice_gateway_shed_by_class_total");
			evbuffer_add_printf(out, "\",cost_class=\"");
			prom_label(out, s->cls[k].name);
			evbuffer_add_printf(out, "\"} %llu\n",
					    (unsigned long long)g->ts[i].shed_by_class[k]);
		}
	prom_head(out, "sluice_gateway_logins_total", "counter",
		  "Sign-ins /login decided, by tenant and outcome: ok, failed (a wrong password or "
		  "an unknown account), throttled (refused by a login counter, unchecked), step_up "
		  "(the stream job's ladder asked for a second factor).");
	EACH_TENANT
		for (k = 0; k < GW_LOGIN__N; k++) {
			static const char *const res[GW_LOGIN__N] = {
				[GW_LOGIN_SUCCESS] = "ok", [GW_LOGIN_FAILURE] = "failed",
				[GW_LOGIN_THROTTLED] = "throttled", [GW_LOGIN_STEP_UP] = "step_up",
			};

			TLABEL("sluice_gateway_logins_total");
			evbuffer_add_printf(out, "\",outcome=\"%s\"} %llu\n", res[k],
					    (unsigned long long)g->ts[i].logins[k]);
		}
	prom_head(out, "sluice_gateway_would_block_total", "counter",
		  "Counter refusals let through because the counter is in monitor mode, by tenant "
		  "and counter (every counter in monitor mode, and any other that counted one).");
	EACH_TENANT
		for (k = 0; k < SL_CTR_N; k++) {
			if (!g->ts[i].would_block[k] && (!g->cfg->counters[k].enabled ||
			    g->cfg->counter_mode[k] != SL_MODE_MONITOR))
				continue;
			TLABEL("sluice_gateway_would_block_total");
			evbuffer_add_printf(out, "\",counter=\"%s\"} %llu\n", sl_counter_name(k),
					    (unsigned long long)g->ts[i].would_block[k]);
		}
	prom_head(out, "sluice_gateway_would_block_by_class_total", "counter",
		  "The same refusals let through, by tenant and cost class (the route's class).");
	EACH_TENANT
		for (k = 0; k < GW_MAX_CLASSES; k++) {
			if (!s->cls[k].used)
				continue;
			TLABEL("sluice_gateway_would_block_by_class_total");
			evbuffer_add_printf(out, "\",cost_class=\"");
			prom_label(out, s->cls[k].name);
			evbuffer_add_printf(out, "\"} %llu\n",
					    (unsigned long long)g->ts[i].would_block_by_class[k]);
		}
	TENANT_FAMILY("sluice_gateway_reservation_units", "gauge",
		      "Each tenant's reservation, cost units per second.", "%g",
		      s->t[i].reservation);
	TENANT_FAMILY("sluice_gateway_consumption_units", "gauge",
		      "Each tenant's recent consumption, cost units per second.", "%g",
		      gw_sched_consumption(s, i, now));
	TENANT_FAMILY("sluice_gateway_cost_units_total", "counter",
		      "Cost units measured on the workers, by tenant.", "%.3f",
		      g->ts[i].units_measured);
	prom_head(out, "sluice_gateway_queue_wait_seconds", "histogram",
		  "Time from admission to a worker, by tenant (apart from service time).");
	EACH_TENANT
		prom_hist(out, "sluice_gateway_queue_wait_seconds", s->t[i].name, &g->ts[i].wait);
	prom_head(out, "sluice_gateway_service_seconds", "histogram",
		  "Time on a worker (the hash), by tenant.");
	EACH_TENANT
		prom_hist(out, "sluice_gateway_service_seconds", s->t[i].name, &g->ts[i].service);
#undef TENANT_FAMILY
#undef TLABEL
#undef EACH_TENANT
	prom_head(out, "sluice_gateway_estimate_drift", "gauge",
		  "Measured cost over configured cost, minus one, by cost class.");
	for (k = 0; k < GW_MAX_CLASSES; k++)
		if (s->cls[k].used) {
			evbuffer_add_printf(out, "sluice_gateway_estimate_drift{cost_class=\"");
			prom_label(out, s->cls[k].name);
			evbuffer_add_printf(out, "\"} %g\n", s->cls[k].configured > 0 ?
					    s->cls[k].estimate / s->cls[k].configured - 1.0 : 0);
		}
	prom_head(out, "sluice_gateway_burst_pool_utilization", "gauge",
		  "Share of the capacity reservations leave free that burst work uses now.");
	evbuffer_add_printf(out, "sluice_gateway_burst_pool_utilization %g\n",
			    room > 0 ? burst_rate / room : 1.0);
	prom_head(out, "sluice_gateway_queue_depth", "gauge", "Jobs waiting for a worker.");
	evbuffer_add_printf(out, "sluice_gateway_queue_depth %u\n", (unsigned)s->depth);
	prom_head(out, "sluice_gateway_queue_limit", "gauge",
		  "The Little's-law depth the queue may reach now.");
	evbuffer_add_printf(out, "sluice_gateway_queue_limit %llu\n",
			    (unsigned long long)gw_sched_depth_limit(s));
	prom_head(out, "sluice_gateway_queue_workers", "gauge",
		  "The workers the depth limit counts: the Argon2id pool's, or in pure upstream "
		  "mode what the upstreams let run at once (their connections, or their classes' "
		  "learned limits when less).");
	evbuffer_add_printf(out, "sluice_gateway_queue_workers %u\n", (unsigned)s->workers);
	prom_head(out, "sluice_gateway_queue_lifo", "gauge", "1 while some tenant's burst queue serves LIFO (decided per tenant; the reserved lane never is).");
	evbuffer_add_printf(out, "sluice_gateway_queue_lifo %d\n", s->lifo ? 1 : 0);
	prom_head(out, "sluice_gateway_workers_busy", "gauge", "Argon2id workers hashing now.");
	evbuffer_add_printf(out, "sluice_gateway_workers_busy %u\n", (unsigned)g->pool.busy);
	prom_head(out, "sluice_gateway_responses_total", "counter", "Responses by status code.");
	for (code = 100; code < 600; code++)
		if (g->st.status[code])
			evbuffer_add_printf(out, "sluice_gateway_responses_total{code=\"%d\"} %llu\n",
					    code, (unsigned long long)g->st.status[code]);
	prom_head(out, "sluice_gateway_escalations_total", "counter",
		  "Logins answered by the stream job's escalations: step_up, delayed.");
	evbuffer_add_printf(out, "sluice_gateway_escalations_total{kind=\"step_up\"} %llu\n"
			    "sluice_gateway_escalations_total{kind=\"delayed\"} %llu\n",
			    (unsigned long long)g->st.step_ups, (unsigned long long)g->st.delayed);
	prom_head(out, "sluice_gateway_endpoint_requests_total", "counter",
		  "The endpoints beyond /login by outcome: ok, failed (secret, code, link, grant), "
		  "throttled (refused by one of their counters).");
	for (k = K_TOKEN; k < K__MAX; k++) {
		static const char *const outcome[3] = { "ok", "failed", "throttled" };
		const uint64_t v[3] = { g->ep[k].ok, g->ep[k].failed, g->ep[k].throttled };
		int o;

		for (o = 0; o < 3; o++)
			evbuffer_add_printf(out, "sluice_gateway_endpoint_requests_total{endpoint=\"%s\","
					    "outcome=\"%s\"} %llu\n", gw_endpoints[k]->path, outcome[o],
					    (unsigned long long)v[o]);
	}
	prom_head(out, "sluice_gateway_outbound_total", "counter",
		  "Messages handed to the delivery: one-time codes, links, notices; failed sends.");
	evbuffer_add_printf(out, "sluice_gateway_outbound_total{kind=\"code\"} %llu\n"
			    "sluice_gateway_outbound_total{kind=\"link\"} %llu\n"
			    "sluice_gateway_outbound_total{kind=\"notice\"} %llu\n"
			    "sluice_gateway_outbound_total{kind=\"failed\"} %llu\n",
			    (unsigned long long)g->otp_sent, (unsigned long long)g->links_sent,
			    (unsigned long long)g->notices_sent,
			    (unsigned long long)g->outbound_failed);
	prom_head(out, "sluice_gateway_refresh_reuse_total", "counter",
		  "Spent refresh tokens presented again (each revoked its whole chain).");
	evbuffer_add_printf(out, "sluice_gateway_refresh_reuse_total %llu\n",
			    (unsigned long long)g->refresh_reuse);
	prom_head(out, "sluice_gateway_tokens_revoked_total", "counter",
		  "Password resets that ended every token of their account issued before them.");
	evbuffer_add_printf(out, "sluice_gateway_tokens_revoked_total %llu\n",
			    (unsigned long long)g->tokens_revoked);
	prom_head(out, "sluice_gateway_heads_refused_total", "counter",
		  "Request heads answered 400 before evhttp parsed them, by the rule they broke.");
	for (k = 1; k < GW_HEAD__N; k++)
		evbuffer_add_printf(out, "sluice_gateway_heads_refused_total{rule=\"%s\"} %llu\n",
				    gw_head_reason(k),
				    (unsigned long long)g->front.head_refused[k]);
	prom_head(out, "sluice_gateway_connections_closed_total", "counter",
		  "Connections the gateway closed: over their prefix's or parent's share as "
		  "accepted, idle to make room, after their last request, past the deadline.");
	evbuffer_add_printf(out, "sluice_gateway_connections_closed_total{reason=\"prefix\"} %llu\n"
			    "sluice_gateway_connections_closed_total{reason=\"parent\"} %llu\n"
			    "sluice_gateway_connections_closed_total{reason=\"idle\"} %llu\n"
			    "sluice_gateway_connections_closed_total{reason=\"max_requests\"} %llu\n"
			    "sluice_gateway_connections_closed_total{reason=\"deadline\"} %llu\n",
			    (unsigned long long)g->front.prefix_refused,
			    (unsigned long long)g->front.parent_refused,
			    (unsigned long long)g->front.evicted,
			    (unsigned long long)g->front.request_capped,
			    (unsigned long long)g->st.conn_timeouts);
	prom_head(out, "sluice_gateway_xff_refused_total", "counter",
		  "Requests refused because X-Forwarded-For did not end in one address per "
		  "trusted proxy.");
	evbuffer_add_printf(out, "sluice_gateway_xff_refused_total %llu\n",
			    (unsigned long long)g->front.xff_refused);
	gw_pg_metrics(g->pg, out); /* gateway.credentials_db's, when configured */
}
