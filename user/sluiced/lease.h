/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Leases: each node's share of every tenant's edge budget, proportional to the demand it sees.
 *
 * Every cluster.lease_interval_ms the controller reads the tenant demand counters the XDP
 * program keeps (cost units that reached a tenant's bucket, passed or shed), turns them into a
 * rate over cluster.demand_window_ms, and, with Redis, runs one script per tenant that sees
 * every live report, records this node's demand and what its datapath may admit at, and
 * returns its new grant (N = cluster.nodes, n = nodes with a live report, sigma = the static
 * share a node lapses to):
 *
 *   target_i = max(floor, d_i / D)          D = the demand of the n live nodes
 *   room_i   = 1 - sum of the others' max(use_j, floor, sigma) - (N - n) x sigma
 *   grant_i  = max(sigma, min(target_i, room_i))
 *
 * so what the nodes admit at, leases and static rates of lapsed nodes together, never adds up
 * to more than the budget. A hash that has lost reports (FLUSHALL, an empty restart) holds
 * each node to the lease it has until every node has reported or the lost leases have
 * lapsed. The lease written to the tenant map is budget x grant, expiring tenants.lease_ttl
 * after it was asked for; a node that cannot reach Redis stops renewing and its datapath
 * falls back, by itself, to the tenant's static rate; reloads and starts keep the lease in the
 * map. With no Redis each node leases budget / cluster.nodes. docs/operations.md ("Leases")
 * has the arithmetic.
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
/* Start, or follow a reloaded config (tenants, budgets, intervals); the leases in force are
 * kept, and renewed from the next answer. */
void lease_apply(struct lease_ctl *l, const struct sl_config *c);
void lease_free(struct lease_ctl *l);

#endif
