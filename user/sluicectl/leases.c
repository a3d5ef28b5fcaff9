// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * sluicectl leases, from the pinned tenant map alone (it works while sluiced is down, which is
 * when an expired lease matters) plus the config the daemon recorded, for the budgets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "budget.h"
#include "config.h"
#include "json.h"
#include "leases.h"

static double rate_of(const struct sl_rate *r)
{
	return r->emission_ns ? 1e9 / (double)r->emission_ns : 0;
}

static double burst_of(const struct sl_rate *r)
{
	return r->emission_ns ? (double)r->tolerance_ns / (double)r->emission_ns : 0;
}

int sl_leases_print(const struct sl_maps *m, const struct sl_meta *meta, bool as_json)
{
	struct sl_config *c = calloc(1, sizeof(*c));
	uint64_t now = sl_now_ns();
	static uint64_t units[SL_MAX_TENANTS];
	struct json j;
	char err[256];
	uint32_t i;
	int shown = 0;

	if (c && (!meta->config_path[0] ||
		  sl_config_load(meta->config_path, NULL, c, err, sizeof(err)))) {
		free(c);
		c = NULL;
	}
	if (as_json) {
		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		if (c) {
			json_str(&j, "node", c->cluster.node);
			json_u64(&j, "nodes", c->cluster.nodes);
			json_str(&j, "coordination", c->redis.address[0] ? "redis" : "none");
			json_double(&j, "floor", c->cluster.lease_floor);
		}
		json_arr_begin(&j, "tenants");
	} else {
		if (c)
			printf("node %s of %u, leases %s, floor %.3g of each budget\n",
			       c->cluster.node, c->cluster.nodes,
			       c->redis.address[0] ? "follow demand (Redis)" :
						     "are budget / nodes (no Redis)",
			       c->cluster.lease_floor);
		printf("%-16s %10s %8s %10s %10s %7s %5s %10s %8s %9s  %s\n", "tenant", "budget",
		       "burst", "demand", "cluster", "share", "nodes", "lease", "burst",
		       "expires", "state");
	}
	if (sl_maps_read_demand(m, units))
		memset(units, 0, sizeof(units));
	for (i = 0; i < SL_MAX_TENANTS; i++) {
		struct sl_tenant t;
		double budget = -1, bburst = -1, left;
		bool live;
		int k;

		if (bpf_map_lookup_elem(m->tenants, &i, &t) || !t.valid)
			continue;
		for (k = 0; c && k < c->n_tenants; k++)
			if (!strcmp(c->tenants[k].name, t.name) && c->tenants[k].edge_budget) {
				budget = c->tenants[k].rate;
				bburst = c->tenants[k].burst;
			}
		live = now < t.lease_expires_ns;
		left = live ? (double)(t.lease_expires_ns - now) / 1e9 : 0;
		shown++;
		if (as_json) {
			json_obj_begin(&j, NULL);
			json_str(&j, "name", t.name);
			if (budget >= 0) {
				json_double(&j, "budget_rate", budget);
				json_double(&j, "budget_burst", bburst);
			} else {
				json_null(&j, "budget_rate");
				json_null(&j, "budget_burst");
			}
			json_double(&j, "demand", (double)t.demand_milli / 1000.0);
			/* Every cost unit charged to the tenant at the edge so far: the raw
			 * count the demand rate is taken from, proven connections only. */
			json_u64(&j, "demand_units", units[i]);
			json_double(&j, "cluster_demand", (double)t.cluster_milli / 1000.0);
			json_double(&j, "demand_share", t.cluster_milli ?
				    (double)t.demand_milli / (double)t.cluster_milli : 0);
			json_double(&j, "share", (double)t.share_ppm / 1e6);
			json_u64(&j, "nodes", t.nodes_seen);
			json_double(&j, "lease_rate", rate_of(&t.lease));
			json_double(&j, "lease_burst", burst_of(&t.lease));
			json_bool(&j, "lease_live", live);
			json_double(&j, "expires_in_s", left);
			json_double(&j, "static_rate", rate_of(&t.fallback));
			json_double(&j, "static_burst", burst_of(&t.fallback));
			json_double(&j, "in_force_rate", live ? rate_of(&t.lease) :
							     rate_of(&t.fallback));
			json_u64(&j, "lease_set_unix", t.lease_set_unix);
			json_obj_end(&j);
		} else {
			char b[32] = "?", bb[32] = "?", dm[32], cl[32], ls[32];

			/* Rates as a person says them (20/h, not 0.00555556): --json has the
			 * numbers. */
			if (budget >= 0) {
				sl_fmt_rate(budget, b, sizeof(b));
				snprintf(bb, sizeof(bb), "%.6g", bburst);
			}
			printf("%-16s %10s %8s %10s %10s %6.1f%% %5u %10s %8.1f %8.1fs  %s\n",
			       t.name, b, bb,
			       sl_fmt_rate((double)t.demand_milli / 1000.0, dm, sizeof(dm)),
			       sl_fmt_rate((double)t.cluster_milli / 1000.0, cl, sizeof(cl)),
			       (double)t.share_ppm / 1e4, t.nodes_seen,
			       sl_fmt_rate(rate_of(&t.lease), ls, sizeof(ls)), burst_of(&t.lease),
			       left, live ? "leased" : "EXPIRED: static rate in force");
			if (!live)
				printf("%-16s static %s burst %.6g until the controller renews\n", "",
				       sl_fmt_rate(rate_of(&t.fallback), ls, sizeof(ls)),
				       burst_of(&t.fallback));
		}
	}
	if (as_json) {
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
	} else if (!shown) {
		printf("(no tenant has an edge budget)\n");
	}
	free(c);
	return 0;
}
