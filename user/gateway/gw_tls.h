/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * TLS on the gateway's listener (gateway.tls): one OpenSSL context built from the
 * certificate and key files, and libevent's OpenSSL bufferevents on the accepted sockets.
 * The context is built off the loop (gateway_prepare, on the reload worker), checked whole
 * (files readable, the key the certificate's, inside its validity) before anything changes,
 * and swapped in on the loop: new connections take the new one, open connections keep the
 * one they began with (each SSL holds a reference to its context).
 *
 * Everything the gateway does on a connection's bytes (gw_conn.c: gw_head, the deadline, the
 * table) works on the decrypted input buffer the bufferevent hands evhttp; this file adds
 * only what differs with TLS: making the bufferevent, the handshake's outcome by reason, a
 * peer that hung up, and writing the last answers at a stop through the TLS layer.
 */
#ifndef SLUICE_GW_TLS_H
#define SLUICE_GW_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "config.h"

struct ssl_ctx_st; /* SSL_CTX: callers need not include OpenSSL */
struct gateway;

/* Why a handshake did not complete (sluice_gateway_tls_handshake_failures_total{reason}). */
enum gw_tls_fail {
	GW_TLS_FAIL_VERSION,   /* the client offers no version we accept (below min_version) */
	GW_TLS_FAIL_ALPN,      /* it offers ALPN without http/1.1 (h2 only, say) */
	GW_TLS_FAIL_CIPHER,    /* no cipher suite, group or signature algorithm in common */
	GW_TLS_FAIL_NOT_TLS,   /* the first bytes are not a TLS record (plain HTTP, noise) */
	GW_TLS_FAIL_PROTOCOL,  /* a malformed or unexpected handshake message */
	GW_TLS_FAIL_PEER,      /* the client sent an alert: it refused our certificate, ... */
	GW_TLS_FAIL_TIMEOUT,   /* not done within gateway.request_timeout_ms */
	GW_TLS_FAIL_EOF,       /* the client closed the connection part-way */
	GW_TLS_FAIL__N
};

struct gw_tls_stats {
	uint64_t ok;                        /* handshakes completed */
	uint64_t failed[GW_TLS_FAIL__N];
};

/*
 * Build the context c->gw.tls describes: 0 with *@out set (NULL when TLS is not configured),
 * or -EINVAL with "FILE:LINE: gateway.tls.KEY: reason" lines in @err. Reads files; safe off
 * the loop.
 */
int gw_tls_build(const struct sl_config *c, struct ssl_ctx_st **out, char *err, size_t errlen);
void gw_tls_ctx_free(struct ssl_ctx_st *ctx);
/* One log line about @ctx's certificate (subject, serial, expiry); a warning when it
 * expires within 14 days. @what: "serving", "reloaded", ... */
void gw_tls_log(struct ssl_ctx_st *ctx, const char *what);

/* A server-side TLS bufferevent on @g's context for evhttp (its socket comes later). */
struct bufferevent *gw_tls_bev(struct gateway *g, struct event_base *base);
/* @bev's socket @fd was just accepted: a TLS one sends its records without waiting for
 * ACKs (a response is several records; Nagle against delayed ACKs would hold the last). */
void gw_tls_accepted(struct bufferevent *bev, int fd);
/* Is @bev a TLS one? */
bool gw_tls_is(struct bufferevent *bev);
/* @bev's connection ends: a handshake that never completed is counted by reason.
 * @timed_out: the gateway closed it at its deadline; @closed: the gateway closed it for
 * another reason (room, a prefix's share, the drain), counted there, not here. */
void gw_tls_conn_end(struct gateway *g, struct bufferevent *bev, bool timed_out, bool closed);
/* Has the peer of TLS connection @bev (socket @fd) hung up? */
bool gw_tls_gone(struct bufferevent *bev, int fd);
/* The loop has ended: write what is in @bev's output through TLS, as far as the socket
 * takes it, then a close_notify. */
void gw_tls_flush(struct bufferevent *bev);

/* sluice_gateway_tls_* for /metrics (nothing when the listener is plaintext). */
void gw_tls_metrics(struct gateway *g, struct evbuffer *out);

#endif
