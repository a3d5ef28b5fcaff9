/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The upstream's HTTP/1.1 client (upstream mode, gw_upstream.c): one keep-alive connection
 * to an upstream over TCP (IPv4, IPv6) or a Unix stream socket, carrying one request at a
 * time. Written on libevent's socket bufferevents because Debian 12's libevent 2.1 evhttp
 * client connects over TCP only (docs/gateway.md, "Upstream mode").
 *
 * What it reads of an answer (RFC 9112): the status line (HTTP/1.0 or 1.1), interim 1xx
 * answers skipped, header fields (no obs-fold, no space before the colon, no control
 * character but a tab in a value or the reason phrase: each is a bad answer, 502; at
 * most GW_UPCLI_MAX_FIELDS of them), the body by Transfer-Encoding: chunked (trailers read and dropped), else by
 * Content-Length (several that differ are a bad answer), else to the connection's close;
 * none after HEAD, 1xx, 204 and 304. The head is bounded by max_head, the body by max_body.
 * A connection is kept for the next request only when the answer allows it (HTTP/1.1
 * without "Connection: close", its body delimited, nothing after it); an idle connection
 * watches for the upstream's close, so the next request goes on a fresh one.
 *
 * A connect that fails at once (refused, no such socket, a full backlog) is said by
 * gw_upcli_send's return; everything else by the callback, never from inside
 * gw_upcli_send. The callback may send the next request on the same connection.
 */
#ifndef SLUICE_GW_UPCLI_H
#define SLUICE_GW_UPCLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/keyvalq_struct.h>

struct bufferevent;
struct evbuffer;

enum gw_upcli_err {
	GW_UPCLI_OK = 0,
	GW_UPCLI_DOWN,        /* the connect failed (refused, unreachable) or timed out */
	GW_UPCLI_TIMEOUT,     /* connected, but no whole answer in time */
	GW_UPCLI_BAD,         /* not HTTP/1.x, a malformed head or chunk, a close before the end */
	GW_UPCLI_TOO_BIG,     /* the head over max_head, or the body over max_body */
};

/* The most header fields an answer may have (Apache httpd's default LimitRequestFields,
 * which it applies to proxied answers too): more is GW_UPCLI_TOO_BIG. What reads the fields
 * (hop-by-hop removal against the Connection header, the verdict header) then costs at most
 * this many times a field's length. */
#define GW_UPCLI_MAX_FIELDS 100

struct gw_upcli_resp {
	int code;
	const char *reason;            /* the reason phrase, maybe "" */
	struct evkeyvalq *headers;     /* as received, in order */
	struct evbuffer *body;         /* decoded (chunks joined): the callback may take it */
};

struct gw_upcli;
typedef void (*gw_upcli_cb)(struct gw_upcli *c, enum gw_upcli_err err,
			    const struct gw_upcli_resp *resp, void *arg);

struct gw_upcli {
	struct event_base *base;
	struct sockaddr_storage sa;
	socklen_t salen;
	struct bufferevent *bev;       /* NULL: not connected */
	struct event *connect_ev;      /* waiting for a connect in progress */
	struct event *timer;
	int fd;                        /* while connecting */
	bool busy, head_only, keep, in_cb;
	bool connect_only;             /* a gw_upcli_connect is out */
	int conn_err;                  /* the last connect's errno: 0, ECONNREFUSED, ETIMEDOUT... */
	uint8_t state;
	size_t head_bytes, body_left, max_head, max_body, fields;
	int code;
	char reason[128];
	struct evkeyvalq hdrs;
	struct evbuffer *body, *msg;   /* the answer's body; the request waiting for a connect */
	gw_upcli_cb cb;
	void *arg;
	uint64_t requests, connects;
};

/* A connection to @sa (AF_INET, AF_INET6 or AF_UNIX), not yet connected. 0, or -1. */
int gw_upcli_init(struct gw_upcli *c, struct event_base *base, const struct sockaddr *sa,
		  socklen_t salen);
/* Close the connection (its request, if one is out, is dropped without its callback) and
 * free what it holds. @c may be gw_upcli_init'ed again. */
void gw_upcli_fini(struct gw_upcli *c);
/* Close the connection if one is open; the next send connects again. Not while busy. */
void gw_upcli_close(struct gw_upcli *c);
/* Connect to @sa from the next send on (the open connection, if any, is closed). Not while
 * busy. 0, or -1 (@salen too long). */
int gw_upcli_set_addr(struct gw_upcli *c, const struct sockaddr *sa, socklen_t salen);
/* Send @msg (a whole request: its head and body; drained) and call @cb with its answer or
 * its failure within @timeout_ms. @head_only: the request was HEAD (no body comes back).
 * 0, or -1: the connect failed at once (GW_UPCLI_DOWN, @cb is not called) or @c is busy. */
int gw_upcli_send(struct gw_upcli *c, struct evbuffer *msg, bool head_only, uint32_t timeout_ms,
		  size_t max_head, size_t max_body, gw_upcli_cb cb, void *arg);

/* Connect to the address and send nothing (a reachability probe): the same socket, options and
 * errors as gw_upcli_send's connect. 1: connected at once (and closed again), -1: failed at
 * once or @c is busy; neither calls @cb. 0: connecting; @cb then comes with GW_UPCLI_OK or
 * GW_UPCLI_DOWN (resp NULL) within @timeout_ms, the connection closed before it. Each way
 * c->conn_err says what the connect got (0, or an errno: ETIMEDOUT at the deadline). A
 * connection that was open is closed first. */
int gw_upcli_connect(struct gw_upcli *c, uint32_t timeout_ms, gw_upcli_cb cb, void *arg);

/*
 * The elements of an RFC 9110 5.6.1 list (Connection, Transfer-Encoding, ...): "a, b",
 * ", a,,b ,\t" and "a,b" all hold a and b. One element at a time, OWS (SP, HTAB) trimmed off
 * both ends, empty elements skipped. A comma inside a quoted-string (RFC 9110 5.6.4, backslash
 * escapes included) does not end an element, so a parameter's value cannot pass for an
 * element ('gzip;p="x, chunked"' is one); an unclosed quote runs to the end. Nothing is copied:
 * no element is too long. The one reader of these lists for the upstream client (the answer's
 * Connection and Transfer-Encoding) and for the forward (the request's and the answer's
 * Connection, gw_upstream.c), so the two cannot read one field differently.
 */
struct gw_list {
	const char *p; /* what is left of the value (NUL-terminated) */
};

/* The next element of @it: true with its first byte in @el and its length (>= 1) in @len, or
 * false at the end. */
bool gw_list_next(struct gw_list *it, const char **el, size_t *len);
/* Is @p (@n bytes) one token (RFC 9110 5.6.2: 1 or more tchar)? A quoted string is not. */
bool gw_is_token(const char *p, size_t n);
/* Is the token @tok an element of the list @v (case-insensitive), or with @last_only its last
 * element (Transfer-Encoding's chunked must be last)? An element with parameters ("chunked;x")
 * or in quotes is not @tok. */
bool gw_list_has(const char *v, const char *tok, bool last_only);

/*
 * For tests only (tests/fuzz/fuzz_upcli.c, tests/unit/test_gw_upcli.c): the answer parser
 * itself, without a socket. gw_upcli_test_start readies @c (gw_upcli_init'ed, never sent on)
 * for an answer as gw_upcli_send does; gw_upcli_test_feed reads what @in holds of it as the
 * connection's read callback does (@eof: as its close does, @in being what was left unread):
 * 0 more is needed, 1 the answer is whole (c->code, c->reason, c->hdrs, c->body; what is
 * left in @in was not part of it; c->keep without leftovers: the connection would be kept),
 * or a negated gw_upcli_err.
 */
void gw_upcli_test_start(struct gw_upcli *c, bool head_only, size_t max_head, size_t max_body);
int gw_upcli_test_feed(struct gw_upcli *c, struct evbuffer *in, bool eof);

#endif
