// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Edge budgets in the routes' terms (see budget.h): what each port charges, the dearest of
 * it, and a budget written as requests per second of each route. The config loader uses the
 * first two to say which route makes a burst too small; sluicectl limits and prefix show use
 * the third, so that "4,000 units/s" reads as "4.2 logins/s".
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"

uint32_t sl_route_charge(const struct sl_route_cfg *r)
{
	double cost = r->cpu < 1.0 ? 1.0 : r->cpu;

	return cost > 1e9 ? 1000000000u : (uint32_t)(cost + 0.5);
}

bool sl_port_charges_routes(const struct sl_port_cfg *p)
{
	return p->front == SL_FRONT_STATELESS && p->proto == SL_PROTO_HTTP;
}

void sl_port_dearest(const struct sl_config *c, int port, struct sl_charge *out)
{
	const struct sl_port_cfg *p = &c->ports[port];
	int j;

	*out = (struct sl_charge){ .cost = p->cost ? p->cost : 1, .port = port, .route = -1,
				   .kind = SL_CHARGE_PORT };
	if (p->front != SL_FRONT_STATELESS)
		return; /* the SYN front sees no request: a connection costs `cost` */
	if (sl_port_charges_routes(p))
		for (j = 0; j < c->n_routes; j++) {
			uint32_t rc = sl_route_charge(&c->routes[j]);

			/* >=: at equal cost the route is what an operator recognises */
			if (rc > out->cost || (rc == out->cost && out->kind != SL_CHARGE_ROUTE)) {
				out->cost = rc;
				out->route = j;
				out->kind = SL_CHARGE_ROUTE;
			}
		}
	if (p->unreadable_cost > out->cost) {
		out->cost = p->unreadable_cost;
		out->route = -1;
		out->kind = SL_CHARGE_UNREADABLE;
	}
}

void sl_edge_dearest(const struct sl_config *c, struct sl_charge *out)
{
	int i;

	*out = (struct sl_charge){ .cost = 1, .port = -1, .route = -1, .kind = SL_CHARGE_PORT };
	for (i = 0; i < c->n_ports; i++) {
		struct sl_charge ch;

		sl_port_dearest(c, i, &ch);
		if (out->port < 0 || ch.cost > out->cost)
			*out = ch;
	}
}

const char *sl_charge_str(const struct sl_config *c, const struct sl_charge *ch, char *buf,
			  size_t n)
{
	const struct sl_port_cfg *p;

	if (ch->port < 0) {
		snprintf(buf, n, "anything (the least charge; there are no ports)");
		return buf;
	}
	p = &c->ports[ch->port];
	switch (ch->kind) {
	case SL_CHARGE_ROUTE: {
		const struct sl_route_cfg *r = &c->routes[ch->route];

		snprintf(buf, n, "route '%s' (%s %s) on port %u", r->name, sl_method_name(r->method),
			 r->path, p->port);
		break;
	}
	case SL_CHARGE_UNREADABLE:
		snprintf(buf, n, "a first request to port %u the edge cannot read whole (its "
			 "unreadable_cost)", p->port);
		break;
	default:
		if (p->front != SL_FRONT_STATELESS)
			snprintf(buf, n, "a connection to port %u (its cost, on the syn front)",
				 p->port);
		else if (p->proto == SL_PROTO_TLS)
			snprintf(buf, n, "a TLS connection to port %u (its cost)", p->port);
		else
			snprintf(buf, n, "a request to port %u that no route matches (its cost)",
				 p->port);
	}
	return buf;
}

const char *sl_charge_noun(const struct sl_config *c, const struct sl_charge *ch, char *buf,
			   size_t n)
{
	if (ch->kind == SL_CHARGE_ROUTE)
		snprintf(buf, n, "'%s'", c->routes[ch->route].name);
	else if (ch->kind == SL_CHARGE_UNREADABLE)
		snprintf(buf, n, "unreadable first requests");
	else if (ch->port >= 0 && sl_port_charges_routes(&c->ports[ch->port]) && c->n_routes)
		snprintf(buf, n, "requests no route matches");
	else if (ch->port >= 0 && sl_port_charges_routes(&c->ports[ch->port]))
		snprintf(buf, n, "requests");
	else
		snprintf(buf, n, "connections");
	return buf;
}

const char *sl_fmt_count(double v, char *buf, size_t n)
{
	char digits[32];
	size_t len, lead, i, o = 0;
	int dec;

	if (!n)
		return buf;
	if (v != v || isinf(v) || v < 0) {
		snprintf(buf, n, "%g", v);
		return buf;
	}
	if (v == 0) {
		snprintf(buf, n, "0");
		return buf;
	}
	if (v < 99.5) {
		/* Two significant digits, never an exponent. */
		dec = 1 - (int)floor(log10(v));
		if (dec < 0)
			dec = 0;
		if (dec > 12)
			dec = 12;
		snprintf(digits, sizeof(digits), "%.*f", dec, v);
		/* 9.96 with one decimal is "10.0": two digits are "10" */
		if (dec > 0 && strtod(digits, NULL) >= pow(10, 2 - dec))
			snprintf(digits, sizeof(digits), "%.*f", dec - 1, v);
		snprintf(buf, n, "%s", digits);
		return buf;
	}
	if (v >= 1e18) {
		snprintf(buf, n, "%.3g", v);
		return buf;
	}
	snprintf(digits, sizeof(digits), "%.0f", v);
	len = strlen(digits);
	lead = len % 3 ? len % 3 : 3;
	for (i = 0; i < len && o + 1 < n; i++) {
		if (i && i >= lead && (i - lead) % 3 == 0) {
			buf[o++] = ',';
			if (o + 1 >= n)
				break;
		}
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

/* Units largest first. A rate takes the first in which it is at least 0.9 rather than 1, so
 * that one event in an interval a little longer than a second (top) reads "0.95/s", not a
 * jump to "57/min" and back. */
static const struct {
	const char *name;
	double secs;
} rate_units[] = { { "s", 1 }, { "min", 60 }, { "h", 3600 }, { "d", 86400 } };

/* Is @v what a person would write whole: 20, not 20.0000000001? */
static bool rate_whole(double v)
{
	return v >= 0.9 && fabs(v - round(v)) < 1e-6 * v;
}

/* Does sl_fmt_count() write @v without rounding it (1.5, 4,000; not 1.7 for 1.6666)? */
static bool rate_exact(double v, const char *shown)
{
	return v >= 99.5 ? rate_whole(v) : fabs(strtod(shown, NULL) - v) < 1e-6 * v;
}

const char *sl_fmt_rate(double per_s, char *buf, size_t n)
{
	char num[40];
	size_t u, last = sizeof(rate_units) / sizeof(rate_units[0]) - 1;
	double v;
	bool neg = per_s < 0;

	if (!n)
		return buf;
	if (per_s != per_s) {
		snprintf(buf, n, "-");
		return buf;
	}
	if (neg)
		per_s = -per_s;
	if (isinf(per_s)) {
		snprintf(buf, n, "%sinf/s", neg ? "-" : "");
		return buf;
	}
	if (per_s == 0) {
		snprintf(buf, n, "0/s");
		return buf;
	}
	for (u = 0; u < last && per_s * rate_units[u].secs < 0.9; u++)
		;
	v = per_s * rate_units[u].secs;
	sl_fmt_count(v, num, sizeof(num));
	/* Two significant digits would round a whole number of the next unit down (100/h is
	 * 1.67/min): that unit says it exactly. */
	if (!rate_exact(v, num) && u < last && rate_whole(per_s * rate_units[u + 1].secs) &&
	    per_s * rate_units[u + 1].secs < 999.5)
		v = per_s * rate_units[++u].secs;
	/* A whole number of a unit, as configs give them (20/h is 0.0055555...), reads whole:
	 * "20/h", "2/min", not "2.0/min". */
	if (rate_whole(v))
		v = round(v);
	if (rate_whole(v) && v < 99.5)
		snprintf(num, sizeof(num), "%.0f", v);
	else
		sl_fmt_count(v, num, sizeof(num));
	snprintf(buf, n, "%s%s/%s", neg ? "-" : "", num, rate_units[u].name);
	return buf;
}

/* Append @fmt to @buf (@used of @n taken), truncating quietly. */
__attribute__((format(printf, 4, 5)))
static void add(char *buf, size_t n, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*used + 1 >= n)
		return;
	va_start(ap, fmt);
	w = vsnprintf(buf + *used, n - *used, fmt, ap);
	va_end(ap);
	if (w > 0)
		*used = *used + (size_t)w < n ? *used + (size_t)w : n - 1;
}

/* "4.2 login/s", "2 login/min", "20 login/h": the count in the unit sl_fmt_rate picks, the
 * noun between the number and its unit. */
static void add_rate(char *buf, size_t n, size_t *used, const char *sep, double per_s,
		     const char *noun)
{
	char r[48], *slash;

	sl_fmt_rate(per_s, r, sizeof(r));
	slash = strchr(r, '/');
	if (!slash) {
		add(buf, n, used, "%s%s %s", sep, r, noun);
		return;
	}
	*slash = '\0';
	add(buf, n, used, "%s%s %s/%s", sep, r, noun, slash + 1);
}

const char *sl_budget_port_str(const struct sl_config *c, int port, double rate, char *buf,
			       size_t n)
{
	const struct sl_port_cfg *p = &c->ports[port];
	size_t used = 0;
	int j;

	if (n)
		buf[0] = '\0';
	if (!sl_port_charges_routes(p) || !c->n_routes) {
		add_rate(buf, n, &used, "", rate / (p->cost ? p->cost : 1),
			 sl_port_charges_routes(p) ? "requests" : "connections");
		return buf;
	}
	for (j = 0; j < c->n_routes; j++)
		add_rate(buf, n, &used, j ? ", " : "", rate / sl_route_charge(&c->routes[j]),
			 c->routes[j].name);
	return buf;
}

#define PORT_STR_LEN 2048

const char *sl_budget_str(const struct sl_config *c, double rate, char *buf, size_t n)
{
	int i, k, np = c->n_ports < SL_MAX_PORTS ? c->n_ports : SL_MAX_PORTS;
	char (*views)[PORT_STR_LEN];
	size_t used = 0;

	if (n)
		buf[0] = '\0';
	views = np ? calloc((size_t)np, sizeof(*views)) : NULL;
	if (!views)
		return buf;
	for (i = 0; i < np; i++)
		sl_budget_port_str(c, i, rate, views[i], sizeof(views[i]));
	for (i = 0; i < np; i++) {
		int same = 0;

		for (k = 0; k < i; k++)
			if (!strcmp(views[k], views[i]))
				break;
		if (k < i)
			continue; /* written with the first port that reads the same */
		for (k = i + 1; k < np; k++)
			same += !strcmp(views[k], views[i]);
		add(buf, n, &used, "%s%s %u", used ? "; " : "", same ? "ports" : "port",
		    c->ports[i].port);
		for (k = i + 1; k < np; k++)
			if (!strcmp(views[k], views[i]))
				add(buf, n, &used, ", %u", c->ports[k].port);
		add(buf, n, &used, ": %s", views[i]);
	}
	free(views);
	return buf;
}

/* One charge's view: what a budget admits of it per second and at once. */
static void charge_json(struct json *j, uint32_t cost, double rate, double burst)
{
	json_u64(j, "cost", cost);
	json_double(j, "per_s", rate / cost);
	json_double(j, "at_once", floor(burst / cost));
}

void sl_budget_json(struct json *j, const char *key, const struct sl_config *c, double rate,
		    double burst)
{
	int i, k;

	json_arr_begin(j, key);
	for (i = 0; i < c->n_ports; i++) {
		const struct sl_port_cfg *p = &c->ports[i];
		bool routes = sl_port_charges_routes(p) && c->n_routes;

		json_obj_begin(j, NULL);
		json_u64(j, "port", p->port);
		json_str(j, "front", sl_front_name(p->front));
		json_str(j, "protocol", p->proto == SL_PROTO_TLS ? "tls" : "http");
		json_str(j, "charges", routes ? "route" :
				       sl_port_charges_routes(p) ? "request" : "connection");
		if (routes) {
			json_arr_begin(j, "routes");
			for (k = 0; k < c->n_routes; k++) {
				const struct sl_route_cfg *r = &c->routes[k];

				json_obj_begin(j, NULL);
				json_str(j, "name", r->name);
				json_str(j, "method", sl_method_name(r->method));
				json_str(j, "path", r->path);
				charge_json(j, sl_route_charge(r), rate, burst);
				json_obj_end(j);
			}
			json_arr_end(j);
		} else {
			charge_json(j, p->cost ? p->cost : 1, rate, burst);
		}
		json_obj_end(j);
	}
	json_arr_end(j);
}

static void limits_text_line(FILE *f, const struct sl_config *c, const char *who, double rate,
			     double burst)
{
	char *view = malloc(SL_MAX_PORTS * PORT_STR_LEN), r[32], b[32], *s, *semi;

	fprintf(f, "  %s: %s units/s, burst %s\n", who, sl_fmt_count(rate, r, sizeof(r)),
		sl_fmt_count(burst, b, sizeof(b)));
	if (!view)
		return;
	sl_budget_str(c, rate, view, SL_MAX_PORTS * PORT_STR_LEN);
	/* One port group a line: sl_budget_str() separates them with "; ". */
	for (s = view; *s; s = semi ? semi + 2 : s + strlen(s)) {
		semi = strstr(s, "; ");
		fprintf(f, "      %.*s\n", semi ? (int)(semi - s) : (int)strlen(s), s);
	}
	free(view);
}

void sl_edge_limits_text(FILE *f, const struct sl_config *c)
{
	int i;

	if (!c->has_edge || !c->n_classes)
		return;
	fprintf(f, "Per edge class (cost units/s, the routes' currency; and what that admits "
		"of each route, on every port)\n");
	for (i = 0; i < c->n_classes; i++) {
		const struct sl_class_cfg *cc = &c->classes[i];
		char who[96];

		snprintf(who, sizeof(who), "%s /%u (IPv6 /%u)%s", cc->name, cc->v4_prefix,
			 cc->v6_prefix, cc->mode == SL_MODE_MONITOR ? ", monitor" : "");
		limits_text_line(f, c, who, cc->rate, cc->burst);
		snprintf(who, sizeof(who), "%s /%u (IPv6 /%u), parent", cc->name, cc->v4_parent,
			 cc->v6_parent);
		limits_text_line(f, c, who, cc->parent_rate, cc->parent_burst);
	}
}

static void limits_json_budget(struct json *j, const char *key, const struct sl_config *c,
			       double rate, double burst)
{
	json_obj_begin(j, key);
	json_double(j, "rate", rate);
	json_double(j, "burst", burst);
	sl_budget_json(j, "ports", c, rate, burst);
	json_obj_end(j);
}

void sl_edge_limits_json(struct json *j, const struct sl_config *c)
{
	int i;

	if (!c->has_edge)
		return;
	json_obj_begin(j, "edge");
	json_str(j, "unit", "cost units/s (100 us of CPU per unit, as the routes)");
	json_arr_begin(j, "classes");
	for (i = 0; i < c->n_classes; i++) {
		const struct sl_class_cfg *cc = &c->classes[i];

		json_obj_begin(j, NULL);
		json_str(j, "name", cc->name);
		json_str(j, "mode", sl_mode_name(cc->mode));
		json_u64(j, "v4_prefix", cc->v4_prefix);
		json_u64(j, "v6_prefix", cc->v6_prefix);
		json_u64(j, "v4_parent", cc->v4_parent);
		json_u64(j, "v6_parent", cc->v6_parent);
		limits_json_budget(j, "key", c, cc->rate, cc->burst);
		limits_json_budget(j, "parent", c, cc->parent_rate, cc->parent_burst);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_obj_end(j);
}
