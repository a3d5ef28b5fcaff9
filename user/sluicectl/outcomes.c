// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Stateless-front outcomes for `sluicectl stats`: first requests admitted and shed, by route
 * and by tenant, from the per-CPU maps. Names come from the config the daemon recorded in its
 * metadata (the maps hold only ids); a config that no longer loads leaves the ids bare.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "outcomes.h"

static struct sl_config *load_names(const struct sl_meta *meta)
{
	struct sl_config *c = calloc(1, sizeof(*c));
	char err[256];

	if (c && (!meta->config_path[0] ||
		  sl_config_load(meta->config_path, NULL, c, err, sizeof(err)))) {
		free(c);
		return NULL;
	}
	return c;
}

static void name_of(char *buf, size_t n, const struct sl_config *c, int route, uint32_t i)
{
	if (route && i == SL_EDGE_ROUTES)
		snprintf(buf, n, "(default cost)");
	else if (!route && i == SL_MAX_TENANTS)
		snprintf(buf, n, "(by destination)");
	else if (c && route && (int)i < c->n_routes)
		snprintf(buf, n, "%s %s", sl_method_name(c->routes[i].method), c->routes[i].path);
	else if (c && !route && (int)i < c->n_tenants)
		snprintf(buf, n, "%s", c->tenants[i].name);
	else
		snprintf(buf, n, "%s%u", route ? "route" : "tenant", i);
}

void sl_outcomes_print(const struct sl_maps *m, const struct sl_meta *meta, struct json *j)
{
	static struct sl_outcome routes[SL_EDGE_ROUTES + 1], tenants[SL_MAX_TENANTS + 1];
	struct sl_config *c;
	char name[96];
	uint32_t i;
	int t, any = 0;

	if (sl_maps_read_outcomes(m->route_stats, SL_EDGE_ROUTES + 1, routes) ||
	    sl_maps_read_outcomes(m->tenant_stats, SL_MAX_TENANTS + 1, tenants))
		return;
	c = load_names(meta);
	if (j) {
		json_obj_begin(j, "first_requests");
		for (t = 0; t < 2; t++) {
			struct sl_outcome *o = t ? tenants : routes;
			uint32_t n = t ? SL_MAX_TENANTS + 1 : SL_EDGE_ROUTES + 1;

			json_arr_begin(j, t ? "by_tenant" : "by_route");
			for (i = 0; i < n; i++) {
				if (!o[i].admitted && !o[i].shed)
					continue;
				name_of(name, sizeof(name), c, !t, i);
				json_obj_begin(j, NULL);
				json_str(j, "name", name);
				json_u64(j, "admitted", o[i].admitted);
				json_u64(j, "shed", o[i].shed);
				json_obj_end(j);
			}
			json_arr_end(j);
		}
		json_obj_end(j);
	} else {
		for (t = 0; t < 2; t++) {
			struct sl_outcome *o = t ? tenants : routes;
			uint32_t n = t ? SL_MAX_TENANTS + 1 : SL_EDGE_ROUTES + 1;

			for (i = 0; i < n; i++) {
				if (!o[i].admitted && !o[i].shed)
					continue;
				if (!any++)
					printf("\nfirst requests (stateless front):\n  %-34s %12s %12s\n",
					       "route / tenant", "admitted", "shed");
				name_of(name, sizeof(name), c, !t, i);
				printf("  %-6s %-27s %12llu %12llu\n", t ? "tenant" : "route", name,
				       (unsigned long long)o[i].admitted,
				       (unsigned long long)o[i].shed);
			}
		}
	}
	free(c);
}
