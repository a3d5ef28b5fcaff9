/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Leases: each node's share of every tenant's edge budget, proportional to the demand it sees.
 *
 * Every cluster.lease_interval_ms the controller reads the tenant demand counters the XDP
 * program keeps (cost units that reached a tenant's bucket, passed or shed), turns them into a
 * rate over cluster.demand_window_ms, and, with Redis, runs one script per tenant that records
 * this node's demand and grant and returns its new grant:
 *
 *   target_i = max(floor, d_i / D)          D = the demand of every node with a live report
 *   grant_i  = max(floor, min(target_i, 1 - sum of the other nodes' live grants))
 *
 * so grants never add up to more than the budget except by the floors (at most N x floor),
 * and a node whose demand grows takes what others gave back on their own next refresh. The
 * lease written to the tenant map is budget x grant with an expiry of tenants.lease_ttl; a
 * node that cannot reach Redis stops renewing and its datapath falls back, by itself, to the
 * tenant's static rate. With no Redis each node leases budget / cluster.nodes.
 * docs/operations.md ("Leases") has the overshoot arithmetic.
 */
#ifndef SLUICED_LEASE_H
#define SLUICED_LEASE_H

#include <stdio.h>

#include <event2/event.h>

#include "config.h"
#include "edge.h"
#include "store.h"

struct lease_ctl;

struct lease_ctl *lease_new(struct event_base *base, struct sl_store *store, struct edge *e);
/* Start, or follow a reloaded config (tenants, budgets, intervals). */
void lease_apply(struct lease_ctl *l, const struct sl_config *c);
void lease_free(struct lease_ctl *l);

#endif
