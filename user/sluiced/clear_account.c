// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Clearing an account's /login failure counters for one source (see clear_account.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "audit.h"
#include "clear_account.h"
#include "gw_creds.h"
#include "gw_internal.h"
#include "log.h"
#include "store.h"

#define CA_KEYS 3

struct clear_job {
	struct ctl_req *req;
	struct sl_store *store;
	const bool *stopping;
	int pending;
	char what[512];            /* tenant/account from where, for the answer and the log */
	char tenant[SL_TENANT_NAME_LEN + 1];
	char op[64], reason[256];
	char prefix[GW_PREFIX_STR];  /* the key prefix, for the audit line */
	uint8_t acct[16];            /* the account as the audit log writes it (audit.h) */
	struct {
		const char *name;      /* the counter */
		struct sl_limit l;
		char key[33];
		int allowed;           /* what a check would have said just before: -1 unknown */
		uint32_t retry_ms;
	} k[CA_KEYS];
	int n;
};

/* Every peek has answered: clear, then tell. The clears wait for the answers, for a peek
 * goes out with the next pipelined batch and a clear at once: sent together, Redis would
 * see the clear first. */
static void finish(struct clear_job *j)
{
	char held[512] = "";
	size_t len = 0;
	int i, refusing = 0;

	if (*j->stopping) {
		/* The store is being freed (its answers flushed): no new calls. */
		ctl_answer(j->req, "error sluiced is stopping; nothing was cleared\n");
		free(j);
		return;
	}
	for (i = 0; i < j->n; i++)
		sl_store_clear(j->store, &j->k[i].l, j->tenant, j->k[i].key);
	for (i = 0; i < j->n; i++) {
		int w;

		if (j->k[i].allowed == 0)
			refusing++;
		w = snprintf(held + len, sizeof(held) - len, "%s%s %s", i ? ", " : "",
			     j->k[i].name, j->k[i].allowed < 0 ? "(no answer)" :
			     j->k[i].allowed ? "was admitting" : "was refusing");
		if (w > 0 && (size_t)w < sizeof(held) - len)
			len += (size_t)w;
		if (j->k[i].allowed == 0) {
			w = snprintf(held + len, sizeof(held) - len, " (for %.1fs more)",
				     j->k[i].retry_ms / 1000.0);
			if (w > 0 && (size_t)w < sizeof(held) - len)
				len += (size_t)w;
		}
	}
	log_warn("clear account %s by %s: %s; all cleared; reason: %s", j->what, j->op, held,
		 j->reason);
	{
		struct audit_rec a = { .event = AUDIT_OPERATOR, .source = "sluicectl",
				       .tenant = j->tenant, .route = "/login", .account = j->acct,
				       .prefix = j->prefix, .reason = j->reason,
				       .decision = "clear_account", .operator_ = j->op,
				       .detail = held, .must = true };

		audit_emit(&a);
	}
	ctl_answer(j->req, "ok cleared %s: %s%s\n", j->what, held,
		   refusing ? "" : " (nothing was locked)");
	free(j);
}

/* The store answers through this: which job, which key. */
struct peek {
	struct clear_job *j;
	int i;
};

static void on_answer(void *arg, int allowed, uint32_t retry_ms, int answer)
{
	struct peek *p = arg;
	struct clear_job *j = p->j;

	(void)answer;
	j->k[p->i].allowed = allowed;
	j->k[p->i].retry_ms = retry_ms;
	free(p);
	if (--j->pending == 0)
		finish(j);
}

/* A client address masked to @plen, as the gateway keys it ("192.0.2.7/32"). */
static void prefix_text(const struct sl_prefix *a, uint8_t plen, char *buf, size_t n)
{
	struct sl_prefix p = *a;

	sl_prefix_mask(&p, plen);
	sl_prefix_str(&p, buf, n);
}

void clear_account(struct gateway *g, const bool *stopping, const char *line,
		   struct evbuffer *out, struct ctl_req *req)
{
	char tenant[SL_TENANT_NAME_LEN + 1], user[GW_USER_MAX + 2], addr[64], op[64], err[160];
	char key[CA_KEYS][33], pfx[GW_PREFIX_STR], par[GW_PREFIX_STR];
	const struct sl_config *c = g->cfg;
	static const int ctr[CA_KEYS] = { SL_CTR_LOGIN_FAILURES, SL_CTR_LOGIN_PARENT,
					  SL_CTR_LOGIN_SUCCESSES };
	struct clear_job *j;
	struct sl_prefix a;
	const char *reason;
	int off = 0, t, i;
	bool v6;

	if (sscanf(line, "clear-account %32s %129s %63s %63s %n", tenant, user, addr, op,
		   &off) != 4 || !off || !line[off]) {
		evbuffer_add_printf(out, "error usage: clear-account TENANT ACCOUNT ADDR OPERATOR "
				    "REASON\n");
		return;
	}
	reason = line + off;
	for (t = 0; t < c->n_tenants; t++)
		if (!strcmp(c->tenants[t].name, tenant))
			break;
	if (t == c->n_tenants) {
		evbuffer_add_printf(out, "error no tenant '%s' in the gateway's config; nothing "
				    "cleared\n", tenant);
		return;
	}
	if (!gw_account_norm(user, strlen(user))) {
		evbuffer_add_printf(out, "error '%.64s' is not an account name (" GW_ACCOUNT_RULE
				    "); nothing cleared\n", user);
		return;
	}
	if (g->creds && !gw_creds_find(g->creds, tenant, user, strlen(user))) {
		evbuffer_add_printf(out, "error no account '%s' in tenant '%s' (gateway.credentials); "
				    "nothing cleared\n", user, tenant);
		return;
	}
	if (sl_prefix_parse(addr, &a, 0, err, sizeof(err))) {
		evbuffer_add_printf(out, "error %s\n", err);
		return;
	}
	if (!g->store) {
		evbuffer_add_printf(out, "error the gateway has no counter store\n");
		return;
	}
	v6 = a.family == SL_FAM_V6;
	prefix_text(&a, v6 ? c->counter_v6_prefix : c->counter_v4_prefix, pfx, sizeof(pfx));
	prefix_text(&a, v6 ? c->counter_v6_parent : c->counter_v4_parent, par, sizeof(par));
	{
		const char *pp[3] = { tenant, user, pfx }, *pq[3] = { tenant, user, par };

		gw_counter_key(g, "sluice login counters", pp, 3, key[0]);
		gw_counter_key(g, "sluice login parent", pq, 3, key[1]);
		memcpy(key[2], key[0], sizeof(key[0]));
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		evbuffer_add_printf(out, "error out of memory\n");
		return;
	}
	j->req = req;
	j->store = g->store;
	j->stopping = stopping;
	snprintf(j->tenant, sizeof(j->tenant), "%s", tenant);
	snprintf(j->what, sizeof(j->what), "%s/%s from %s (allocation %s)", tenant, user, pfx,
		 par);
	snprintf(j->op, sizeof(j->op), "%s", op);
	snprintf(j->reason, sizeof(j->reason), "%s", reason);
	snprintf(j->prefix, sizeof(j->prefix), "%s", pfx);
	sl_audit_account_hash(g->key, sizeof(g->key), tenant, user, strlen(user), j->acct);
	/* Every peek is issued before the answer can come (an in-process store answers at
	 * once): one count held until they are all out. */
	j->pending = 1;
	ctl_defer(req);
	for (i = 0; i < CA_KEYS; i++) {
		struct gw_ask ask = { .ctr = ctr[i] };
		struct sl_limit l;
		struct peek *p;

		if (!c->counters[ctr[i]].enabled)
			continue;
		p = malloc(sizeof(*p));
		if (!p)
			continue;
		p->j = j;
		p->i = j->n;
		l = gw_ask_limit(g, &ask);
		j->k[j->n].name = sl_counter_name(ctr[i]);
		j->k[j->n].allowed = -1;
		j->k[j->n].l = l;
		memcpy(j->k[j->n].key, key[i], sizeof(key[i]));
		j->n++;
		j->pending++;
		/* A cost of 0 asks what one more attempt would get, writing nothing. */
		sl_store_charge(g->store, &l, tenant, key[i], 0, on_answer, p);
	}
	if (--j->pending == 0)
		finish(j);
}
