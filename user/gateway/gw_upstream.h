/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Upstream mode: the gateway in front of an identity service it did not write. A route
 * whose requests go upstream (routes[].upstream, or gateway.upstream.url for every route
 * without one) is admitted exactly as a built-in one (Host gives the tenant, the route the
 * cost class; reservations, the burst pool, the bounded queue with its deadline check at
 * dequeue, LIFO and CoDel), and when the scheduler starts it, it is forwarded instead of
 * hashed. Each upstream has a fixed number of connections (gateway.upstream.concurrency),
 * and each cost class on it a limit (routes[].concurrency, learned from the service time
 * with gateway.upstream.adaptive): together they are its "worker pool". A forward holds a
 * connection and a place in its class's limit until its answer, so the queue in front
 * governs what reaches the upstream and a request still queued at its deadline never does.
 * Which upstream: the route's, else the tenant's, else the gateway's (host names resolved
 * at config load, never here).
 *
 * What is forwarded (docs/gateway.md, "Upstream mode"): the method, the request-target,
 * the headers but the hop-by-hop ones (RFC 9110 7.6.1: Connection and every header it
 * names, Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade), the body;
 * X-Forwarded-For is the trusted part of the client's own (gateway.trusted_hops) followed
 * by the socket's peer, X-Forwarded-Proto is set, and X-Request-Deadline-Ms carries the
 * milliseconds left of the client's deadline. The answer comes back the same way, its
 * body bounded by gateway.upstream.max_response.
 *
 * Failures are answered once, each counted by its reason: a refused or timed-out connect
 * is the upstream being down, a capacity event (429 with Retry-After, and the upstream is
 * given gateway.upstream.down_ms before the next try: queued work is shed, not sent into a
 * wall); no answer within the deadline is 504; garbage, an early close or an oversized
 * answer is 502.
 */
#ifndef SLUICE_GW_UPSTREAM_H
#define SLUICE_GW_UPSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/buffer.h>

struct bufferevent;
struct gateway;
struct gw_req;
struct sl_config;

#define GW_MAX_UPSTREAMS 8

enum gw_up_result {
	GW_UP_2XX = 0,
	GW_UP_3XX,
	GW_UP_4XX,
	GW_UP_5XX,
	GW_UP_DOWN,       /* connect refused or timed out: 429 */
	GW_UP_TIMEOUT,    /* no whole answer in time: 504 */
	GW_UP_BAD,        /* garbage, early close: 502 */
	GW_UP_TOO_BIG,    /* answer over max_response: 502 */
	GW_UP_SHED_DOWN,  /* never sent: the upstream was down (429) */
	GW_UP__N
};
const char *gw_up_result_name(int r);

/* Build the upstreams of @c (one per distinct URL). 0, or -1 (logged). */
int gw_upstreams_start(struct gateway *g, const struct sl_config *c);
/* A reload: the upstreams' settings from @c (URLs new to @c get a pool; gone ones are
 * kept until their forwards end). */
void gw_upstreams_apply(struct gateway *g, const struct sl_config *c);
void gw_upstreams_stop(struct gateway *g);
/* Which upstream serves route @ri for tenant @ti under the running config (the route's,
 * else the tenant's, else gateway.upstream.url): its index, or -1 (built-in). */
int gw_upstream_of(struct gateway *g, int ri, int ti);
/* Has some upstream a free connection? (The dispatcher looks for work while the pool or
 * some upstream has room.) */
bool gw_upstreams_room(struct gateway *g);
/* Can forward @r start now: its upstream has a free connection and its class is under its
 * limit (or the upstream is down: it is shed at once)? The scheduler's readiness test. */
bool gw_upstream_ready(struct gateway *g, const struct gw_req *r, uint64_t now);
/* The scheduler started @r: forward it. Answers it (and releases its job) on every path. */
void gw_upstream_forward(struct gw_req *r);
/* A sign-in route (routes[].login): the account (folded) into r->user and the password into
 * r->work.pwd, from HTTP Basic or the body's fields, the body left as it is. 0, or -1 with
 * a reason fit for a 400 in @err (without an account name the counters could not be asked:
 * such a request is not forwarded). */
int gw_upstream_login_fields(struct gw_req *r, char *err, size_t errlen);
/* /readyz: "upstream" while some upstream of the running config is unreachable from this
 * node (its last connect, a forward's or a probe's, failed), else NULL. Starts a probe (a
 * connect, nothing sent) of each upstream at most once a second: its outcome counts from
 * the next call on. */
const char *gw_upstreams_unready(struct gateway *g, uint64_t now);
/* Cancel @r's forward (the gateway is stopping): its answer will not come. */
void gw_upstream_cancel(struct gw_req *r);
/* evhttp has just queued a message on plaintext socket @bev (an answer to a
 * client): write it now, not after the next epoll_wait, and tell evhttp its
 * write is done as the bufferevent would. Nothing on a TLS bufferevent, and nothing more
 * when the socket does not take it all (the bufferevent's own write goes on as ever). */
void gw_write_now(struct bufferevent *bev);
/* /metrics and sluicectl tenants --json. */
void gw_upstreams_metrics(struct gateway *g, struct evbuffer *out);

#endif
