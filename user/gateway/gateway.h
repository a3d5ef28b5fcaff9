/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The gateway: sluiced's HTTP front for the requests the edge let through. It resolves the
 * tenant (Host) and the route (method + path prefix, hence the cost class), admits or sheds
 * the request with the scheduler (gw_sched.h), runs password logins on the Argon2id pool
 * (gw_pool.h) and cheap routes inline, and answers every rejection with one fixed body no
 * sooner than a constant floor, held on a timer rather than a thread.
 *
 * Endpoints (each must also be in the config's routes, which give their cost):
 *   POST /login            {"username","password"} or form; 200 + token, or 401
 *   GET  /token/validate   Authorization: Bearer TOKEN; 200 with its claims, or 401
 *   POST /introspect       {"token"} or form; 200 {"active": ...} (reads the store: db)
 *   POST /token            OAuth client_credentials and refresh_token grants
 *   POST /mfa/send, /mfa/verify   one-time codes after a first factor
 *   POST /password-reset, /register   one answer whoever asks; links by the delivery
 *   GET|POST /magic/{token}        a page (spends nothing) | the link, consumed once
 *
 * Everything runs on the daemon's event loop except the hashes.
 */
#ifndef SLUICE_GATEWAY_H
#define SLUICE_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "config.h"

struct gateway;
struct gw_prepared;

/*
 * The part of applying @c that can fail, done before anything changes: load the credential
 * file and the session key. NULL with the reason (file:line lines) in @err.
 */
struct gw_prepared *gateway_prepare(const struct sl_config *c, char *err, size_t errlen);
void gateway_prepared_free(struct gw_prepared *p);

/* Listen and start the workers with @c; takes @p. NULL on failure (logged). */
struct gateway *gateway_start(struct event_base *base, const struct sl_config *c,
			      struct gw_prepared *p);
/* The counter store for the login counters (config "counters"): failed logins per (account,
 * source prefix) and per prefix for unknown accounts, successes per pair, and the tenant's
 * logins across the cluster. Without one the gateway runs without them. */
struct sl_store;
void gateway_set_store(struct gateway *g, struct sl_store *s);
/* The stream job (user/sluiced/stream.h): login outcome events go to its queue, and its
 * account and password escalations come back through gateway_stream_action(). */
struct stream;
struct stream_action;
void gateway_set_stream(struct gateway *g, struct stream *st);
void gateway_stream_action(struct gateway *g, const struct stream_action *a);
/* Switch the running gateway to @c; takes @p. Cannot fail: listen address and Argon2
 * settings keep their running values until a restart (logged). */
void gateway_apply(struct gateway *g, const struct sl_config *c, struct gw_prepared *p);
/*
 * Readiness for GET /readyz (and GET /healthz: the loop answers). The gateway is not ready
 * while it drains; @fn adds the daemon's own checks (the edge attached, ...): NULL when ready,
 * else a short reason, which only the operator's listeners show (a client gets the status).
 */
typedef const char *(*gw_ready_fn)(void *arg);
void gateway_set_ready(struct gateway *g, gw_ready_fn fn, void *arg);
/*
 * Begin a drain (SIGTERM, SIGQUIT): stop accepting, close idle keep-alives, answer every
 * request still to come on an open connection with Connection: close, and keep serving
 * what is queued. gateway_drained() is true once no request is outstanding (a
 * connection part-way through one does not count); gateway_stop() answers whatever is left
 * (503 with Retry-After) and closes the rest.
 */
void gateway_drain(struct gateway *g);
bool gateway_drained(struct gateway *g);
/* Answer what is outstanding with 503, stop the workers, close everything. */
void gateway_stop(struct gateway *g);

/* The gateway's part of /metrics (Prometheus text format). */
void gateway_metrics(struct gateway *g, struct evbuffer *out);

/* The `tenants` control command: one JSON document, or a table for people. */
void gateway_tenants(struct gateway *g, struct evbuffer *out, bool json);
/* The `limits` control command: the limits document (per tenant floor, reservation and
 * ceiling; per principal limits), JSON or a table. */
void gateway_limits(struct gateway *g, struct evbuffer *out, bool json);

#endif
