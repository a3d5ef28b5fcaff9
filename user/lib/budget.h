/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Edge budgets in the routes' terms. Class, parent and tenant budgets are cost units, the
 * currency the routes are priced in; what a budget means to an operator is how many logins or
 * token checks a second it lets through. This module knows what each port charges (a route's
 * cost on a stateless HTTP port; the port's cost per connection on a TLS port or the SYN
 * front; unreadable_cost for a first request the edge cannot read whole), finds the dearest
 * charge (what every burst must hold, and what the config loader names when one does not),
 * and writes a budget as requests per second of each route, for sluicectl limits and
 * prefix show. Nothing here touches maps or the daemon: pure arithmetic on a loaded config.
 */
#ifndef SLUICE_BUDGET_H
#define SLUICE_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "json.h"

enum sl_charge_kind {
	SL_CHARGE_ROUTE = 0,  /* a first request that matched a route (stateless HTTP) */
	SL_CHARGE_PORT,       /* the port's cost: per connection (SYN front, TLS), or a request
			       * no route matches (stateless HTTP) */
	SL_CHARGE_UNREADABLE, /* unreadable_cost: a first request the edge cannot read whole */
};

/* One thing the edge charges, and where. */
struct sl_charge {
	uint32_t cost;   /* cost units */
	int port;        /* index in c->ports; -1 when the config has no ports */
	int route;       /* index in c->routes for SL_CHARGE_ROUTE, else -1 */
	uint8_t kind;    /* enum sl_charge_kind */
};

/* What the edge charges for a request of route @r: its cpu, rounded, at least 1 (the
 * rounding sl_maps_write_routes() writes into the datapath's table). */
uint32_t sl_route_charge(const struct sl_route_cfg *r);

/* Does port @p charge each first request its route (the stateless front on HTTP)? Otherwise
 * it charges its cost per connection. */
bool sl_port_charges_routes(const struct sl_port_cfg *p);

/* The dearest charge on port @port (an index). On ties a route is named before the port's
 * cost, and the cost before unreadable_cost: the default unreadable_cost is derived from the
 * other two, so naming it would hide the setting to change. */
void sl_port_dearest(const struct sl_config *c, int port, struct sl_charge *out);

/* The dearest charge on any port: the most the edge charges one connection. Every class and
 * tenant burst must hold it. With no ports: cost 1, port -1. */
void sl_edge_dearest(const struct sl_config *c, struct sl_charge *out);

/* What @ch is charged for, to follow "950 for": "route 'login' (POST /login) on port 80",
 * "a TLS connection to port 443 (its cost)", "a first request to port 81 the edge cannot read
 * whole (its unreadable_cost)". Returns @buf. */
const char *sl_charge_str(const struct sl_config *c, const struct sl_charge *ch, char *buf,
			  size_t n);

/* What @ch counts, as a plural noun for "N ... per minute": "'login'", "connections",
 * "unreadable first requests", "requests no route matches". Returns @buf. */
const char *sl_charge_noun(const struct sl_config *c, const struct sl_charge *ch, char *buf,
			   size_t n);

/* @v for a person: two significant digits below 100 ("4.2", "0.63", "0.0034"), a whole number
 * with thousands separators from 100 ("4,000", "285,000"). Returns @buf. */
const char *sl_fmt_count(double v, char *buf, size_t n);

/* A rate of @per_s a second for a person, in the largest unit of s, min, h, d in which it is
 * at least 0.9, its number as sl_fmt_count() writes it, whole numbers without a decimal:
 * "4.2/s", "4,000/s", "0.95/s", "2/min", "20/h", "3.6/h", "0.50/d"; "0/s"; "-" for NaN.
 * When two digits would round it and the next unit holds it whole, that unit: "100/h", not
 * "1.7/min".
 * For text only: --json keeps the number. Returns @buf. */
const char *sl_fmt_rate(double per_s, char *buf, size_t n);

/* Port @port's view of a budget of @rate units/s: "4.2 login/s, 4,000 validate/s" on a port
 * that charges routes (in the order of the routes; "4,000 requests/s" when there are none),
 * "4.2 connections/s" on one that charges its cost. Returns @buf. */
const char *sl_budget_port_str(const struct sl_config *c, int port, double rate, char *buf,
			       size_t n);

/* Every port's view, ports that read alike merged: "port 80: 4.2 login/s, 4,000 validate/s;
 * port 443: 4.2 connections/s" ("ports 80, 8080: ..."). Empty when there are no ports.
 * Returns @buf. */
const char *sl_budget_str(const struct sl_config *c, double rate, char *buf, size_t n);

/* The same as a JSON array member @key of the open object: per port { port, front, protocol,
 * charges, and routes: [ { name, method, path, cost, per_s, at_once } ] when charges is
 * "route", else cost, per_s, at_once ("request": a stateless HTTP port without routes;
 * "connection": TLS, the SYN front) }, where per_s is @rate / cost and at_once the whole
 * requests @burst holds. */
void sl_budget_json(struct json *j, const char *key, const struct sl_config *c, double rate,
		    double burst);

/* The edge's part of the limits document: each class's key and parent budget in cost units
 * and as requests per second of each route. Text: a heading and two lines a class, each
 * followed by one line per port group. Nothing when the config has no edge. */
void sl_edge_limits_text(FILE *f, const struct sl_config *c);
/* As the member "edge" of the open object: { unit, classes: [ { name, mode, v4_prefix,
 * v6_prefix, v4_parent, v6_parent, key: { rate, burst, ports }, parent: { ... } } ] }. */
void sl_edge_limits_json(struct json *j, const struct sl_config *c);

#endif
