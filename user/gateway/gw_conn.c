// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The gateway's connections. evhttp in libevent 2.1 has no connection limit and no
 * whole-request deadline, only an idle timeout that a client dripping one byte at a time
 * keeps resetting, and it parses whatever bytes arrive with the leniency gw_head.h lists.
 * The gateway supplies the bufferevent of every connection (evhttp_set_bevcb) and keeps a
 * reference to it, which gives it:
 *
 *   - the raw bytes first: a callback on the connection's input buffer runs as each read
 *     lands, before evhttp's read callback, and puts every byte through gw_head. At the
 *     first byte that breaks a rule the rest is cut off and a line evhttp cannot parse put
 *     in its place, so evhttp answers 400 with Connection: close (after any request before
 *     it on the connection) and closes; nothing after the cut is ever parsed;
 *   - the count: accept pauses at gateway.max_connections;
 *   - fairness: right after the accept the peer is looked at, and a connection past its
 *     source prefix's share (max_connections_per_prefix, counters.prefix_v4/v6) or its
 *     parent's (max_connections_per_parent, counters.parent_v4/v6) is closed at once (not
 *     with trusted_hops: the peers are then our proxies). When the table is full, an idle
 *     keep-alive (answered, nothing of a next request yet) is closed to make room, from the
 *     source holding the most connections, longest idle first; failing that, a connection
 *     that has sent nothing for a second (or a quarter of request_timeout_ms). A connection
 *     carries at most max_requests_per_connection requests: the last answer says
 *     Connection: close;
 *   - the deadline: a connection that has not delivered a whole request within
 *     gateway.request_timeout_ms is closed.
 *
 * With gateway.tls the bufferevent is an OpenSSL one (gw_tls.c) and all of the above works
 * on its decrypted input; the handshake counts against the deadline (a client that never
 * completes one is closed at request_timeout_ms) and takes a place in the table (a flood of
 * handshakes is bounded by max_connections and the prefix shares like any other).
 *
 * evhttp's own release of a connection is seen by the sweep (its callbacks are cleared) and
 * the reference dropped then. Whatever decides about connections (how many, how long, whose)
 * belongs here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <sodium.h>

#include "gw_internal.h"
#include "log.h"

#define EVICT_SCAN 64          /* idle connections looked at to choose one to close */
#define STALE_NS_MAX 1000000000ull

/* Open connections of one source prefix, or of one parent prefix. */
struct gw_pfx {
	struct gw_pfx *next;
	struct gw_conn *members; /* its connections (gw_conn.mnext[@which]) */
	struct gw_addr key;    /* masked to @plen */
	uint8_t plen;
	uint8_t which;         /* 0: a source prefix, 1: a parent */
	uint32_t n;
};

struct gw_conn {
	struct gateway *g;
	struct bufferevent *bev;
	struct evbuffer_cb_entry *watch; /* on the input buffer: gw_head */
	struct gw_conn *hnext;         /* bucket chain */
	struct gw_conn *prev, *next;   /* all connections */
	struct gw_conn *iprev, *inext; /* the idle list */
	struct gw_conn *pnext;         /* the pending list (peer not looked at yet) */
	struct gw_pfx *pfx, *parent;   /* NULL until looked at */
	struct gw_conn *mnext[2], *mprev[2]; /* among pfx's and parent's members */
	uint64_t deadline_ns;          /* 0: a request is being served */
	uint64_t idle_ns;              /* on the idle list since */
	uint32_t requests;
	bool idle, pending, answered, in_watch, refused;
	bool closed, timed_out;        /* the gateway closed it (at its deadline) */
	struct gw_head head;
};

static unsigned conn_hash(const struct bufferevent *bev)
{
	uintptr_t v = (uintptr_t)bev;

	return (unsigned)((v >> 4) ^ (v >> 16)) & (CONN_BUCKETS - 1);
}

static struct gw_conn *conn_find(struct gateway *g, const struct bufferevent *bev)
{
	struct gw_conn *c;

	for (c = g->conn_bucket[conn_hash(bev)]; c; c = c->hnext)
		if (c->bev == bev)
			return c;
	return NULL;
}

/* ---- prefixes ------------------------------------------------------------------------- */

static unsigned pfx_hash(const struct gateway *g, const struct gw_addr *a, uint8_t plen)
{
	uint8_t in[18], out[crypto_shorthash_BYTES];
	uint64_t h;

	in[0] = a->family;
	in[1] = plen;
	memcpy(in + 2, a->addr, 16);
	/* Keyed: the sources choose their addresses, not their chains. */
	crypto_shorthash(out, in, sizeof(in), g->front.pfx_key);
	memcpy(&h, out, sizeof(h));
	return (unsigned)h & (CONN_BUCKETS - 1);
}

static struct gw_addr masked(const struct gw_addr *a, unsigned plen)
{
	struct gw_addr m = { .family = a->family };
	unsigned i, n = a->family == 6 ? 16 : 4;

	for (i = 0; i < n; i++) {
		unsigned bits = plen > i * 8 ? plen - i * 8 : 0;

		m.addr[i] = bits >= 8 ? a->addr[i] : (uint8_t)(a->addr[i] & (0xff00u >> bits));
	}
	return m;
}

/* Count @c as one more connection of @a masked to @plen (a source prefix, @which 0, or a
 * parent, 1); NULL when out of memory. */
static struct gw_pfx *pfx_get(struct gateway *g, struct gw_conn *c, const struct gw_addr *a,
			      unsigned plen, int which)
{
	struct gw_addr k = masked(a, plen);
	unsigned b = pfx_hash(g, &k, (uint8_t)(plen | which << 7));
	struct gw_pfx *p;

	for (p = g->front.pfx[b]; p; p = p->next)
		if (p->plen == plen && p->which == which && !memcmp(&p->key, &k, sizeof(k)))
			break;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		p->key = k;
		p->plen = (uint8_t)plen;
		p->which = (uint8_t)which;
		p->next = g->front.pfx[b];
		g->front.pfx[b] = p;
	}
	p->n++;
	c->mprev[which] = NULL;
	c->mnext[which] = p->members;
	if (p->members)
		p->members->mprev[which] = c;
	p->members = c;
	return p;
}

static void pfx_put(struct gateway *g, struct gw_pfx *p, struct gw_conn *c)
{
	struct gw_pfx **pp;
	int w;

	if (!p)
		return;
	w = p->which;
	if (c->mprev[w])
		c->mprev[w]->mnext[w] = c->mnext[w];
	else
		p->members = c->mnext[w];
	if (c->mnext[w])
		c->mnext[w]->mprev[w] = c->mprev[w];
	c->mnext[w] = c->mprev[w] = NULL;
	if (--p->n)
		return;
	pp = &g->front.pfx[pfx_hash(g, &p->key, (uint8_t)(p->plen | w << 7))];
	while (*pp != p)
		pp = &(*pp)->next;
	*pp = p->next;
	free(p);
}

/* ---- the idle list ---------------------------------------------------------------------- */

static void idle_leave(struct gw_conn *c)
{
	struct gw_front *f = &c->g->front;

	if (!c->idle)
		return;
	if (c->iprev)
		c->iprev->inext = c->inext;
	else
		f->idle_head = c->inext;
	if (c->inext)
		c->inext->iprev = c->iprev;
	else
		f->idle_tail = c->iprev;
	c->iprev = c->inext = NULL;
	c->idle = false;
}

static void idle_join(struct gw_conn *c)
{
	struct gw_front *f = &c->g->front;

	idle_leave(c);
	c->idle = true;
	c->idle_ns = gw_now_ns();
	c->iprev = f->idle_tail;
	if (f->idle_tail)
		f->idle_tail->inext = c;
	else
		f->idle_head = c;
	f->idle_tail = c;
}

/* ---- the table -------------------------------------------------------------------------- */

static void pending_leave(struct gw_conn *c)
{
	struct gw_conn **pp = &c->g->front.pending;

	if (!c->pending)
		return;
	while (*pp != c)
		pp = &(*pp)->pnext;
	*pp = c->pnext;
	c->pending = false;
}

static void conn_forget(struct gateway *g, struct gw_conn *c)
{
	struct gw_conn **pp = &g->conn_bucket[conn_hash(c->bev)];

	while (*pp != c)
		pp = &(*pp)->hnext;
	*pp = c->hnext;
	if (c->prev)
		c->prev->next = c->next;
	else
		g->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	g->n_conns--;
	idle_leave(c);
	pending_leave(c);
	pfx_put(g, c->pfx, c);
	pfx_put(g, c->parent, c);
	if (c->watch)
		evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->watch);
	gw_tls_conn_end(g, c->bev, c->timed_out, c->closed);
	bufferevent_decref(c->bev); /* evhttp has let go: this frees it and its socket */
	free(c);
}

/* Has evhttp let go of @c? Then forget it; true. */
static bool conn_released(struct gateway *g, struct gw_conn *c)
{
	bufferevent_event_cb ecb = NULL;

	bufferevent_getcb(c->bev, NULL, NULL, &ecb, NULL);
	if (ecb)
		return false;
	conn_forget(g, c);
	return true;
}

/*
 * @p is over its share: first forget its members evhttp has already let go of (a client
 * that closed, a connection answered and closed), which the sweep would only see within
 * 50 ms, so a source that opens connections one after another is not refused for ones
 * that are gone. The members are at most its cap and one, each a pointer compare: bounded
 * work per refused connection, a few microseconds at the default caps. True when @p is
 * still over @cap.
 */
static bool over_share(struct gateway *g, struct gw_pfx *p, uint32_t cap)
{
	struct gw_conn *m, *nx;
	int w;

	if (!p || !cap || p->n <= cap)
		return false;
	w = p->which;
	/* The new connection is a member and not released: @p outlives the loop. */
	for (m = p->members; m; m = nx) {
		nx = m->mnext[w];
		conn_released(g, m);
	}
	return p->n > cap;
}

/* Close @c as if its socket had timed out: evhttp closes it its own way, without an
 * answer (there is no request on it to answer). */
static void conn_close(struct gateway *g, struct gw_conn *c)
{
	c->deadline_ns = 0;
	c->closed = true;
	idle_leave(c);
	bufferevent_trigger_event(c->bev, BEV_EVENT_TIMEOUT | BEV_EVENT_READING, 0);
	conn_released(g, c);
}

static void listener_pause(struct gateway *g, bool pause)
{
	if (!g->listener || pause == g->paused || g->draining)
		return;
	if (pause) {
		evconnlistener_disable(g->listener);
		g->st.accept_pauses++;
	} else {
		evconnlistener_enable(g->listener);
		g->front.full_logged = false;
	}
	g->paused = pause;
}

/* When a connection's next request must be in, from now. */
static uint64_t next_deadline(const struct gateway *g)
{
	return gw_now_ns() + (uint64_t)g->cfg->gw.request_timeout_ms * 1000000ull;
}

/* How long a connection that has sent nothing waits before it may be closed to make room. */
static uint64_t stale_ns(const struct gateway *g)
{
	uint64_t q = (uint64_t)g->cfg->gw.request_timeout_ms * 1000000ull / 4;

	return q < STALE_NS_MAX ? q : STALE_NS_MAX;
}

/*
 * The table is full: close one idle connection. Keep-alives first (they were answered and
 * have sent nothing of a next request), from the source prefix holding the most
 * connections, the longest idle among equals; then a connection that has sent nothing for
 * stale_ns(). Only the EVICT_SCAN longest idle are looked at: the choice is bounded, the
 * heaviest source is likely among them. True when one was closed.
 */
static bool conn_evict(struct gateway *g)
{
	struct gw_conn *c, *best = NULL;
	uint64_t now = gw_now_ns(), best_score = 0;
	int seen = 0;

	for (c = g->front.idle_head; c && seen < EVICT_SCAN; c = c->inext, seen++) {
		uint64_t score;

		if (!c->answered && now - c->idle_ns < stale_ns(g))
			continue;
		score = (c->answered ? 1ull << 40 : 1) + (c->pfx ? c->pfx->n : 0);
		if (score > best_score) {
			best = c;
			best_score = score;
		}
	}
	if (!best)
		return false;
	g->front.evicted++;
	conn_close(g, best);
	return true;
}

/* Accepting is paused at the limit: resume when there is room, or when an idle connection
 * could be closed for the next one. */
static void conn_make_room(struct gateway *g)
{
	if (!g->paused)
		return;
	if (g->n_conns < g->cfg->gw.max_connections || conn_evict(g)) {
		listener_pause(g, false);
	} else if (!g->front.full_logged) {
		g->front.full_logged = true;
		log_warn("gateway: %u connections open, the limit, none of them idle: accepting "
			 "paused", g->n_conns);
	}
}

/* Right after the accepts: whose each new connection is, and whether its source has room
 * for it. */
static void on_classify(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *g = arg;
	const struct sl_config *cfg = g->cfg;
	struct gw_conn *c;

	(void)fd;
	(void)what;
	while ((c = g->front.pending)) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct gw_addr peer;
		evutil_socket_t s = bufferevent_getfd(c->bev);

		pending_leave(c);
		gw_tls_accepted(c->bev, s);
		if (s < 0 || getpeername(s, (struct sockaddr *)&ss, &sl) ||
		    gw_addr_from_sockaddr((struct sockaddr *)&ss, &peer))
			continue; /* counted in no prefix: still served, still limited in all */
		c->pfx = pfx_get(g, c, &peer, peer.family == 6 ? cfg->counter_v6_prefix :
						 cfg->counter_v4_prefix, 0);
		c->parent = pfx_get(g, c, &peer, peer.family == 6 ? cfg->counter_v6_parent :
						    cfg->counter_v4_parent, 1);
		if (cfg->gw.trusted_hops)
			continue; /* the peers are our proxies: they keep their clients apart */
		if (over_share(g, c->pfx, cfg->gw.max_conns_prefix)) {
			g->front.prefix_refused++;
			conn_close(g, c);
		} else if (over_share(g, c->parent, cfg->gw.max_conns_parent)) {
			g->front.parent_refused++;
			conn_close(g, c);
		}
	}
	conn_make_room(g);
}

/* ---- the raw bytes ---------------------------------------------------------------------- */

/* Keep the first @keep bytes of @in, drop the rest. */
static void cut(struct evbuffer *in, size_t keep)
{
	size_t len = evbuffer_get_length(in);
	struct evbuffer *t;

	if (keep >= len)
		return;
	t = keep ? evbuffer_new() : NULL;
	if (t)
		evbuffer_remove_buffer(in, t, keep);
	evbuffer_drain(in, evbuffer_get_length(in));
	if (t) {
		evbuffer_add_buffer(in, t);
		evbuffer_free(t);
	}
}

/* Put bytes [@from, end) of @in through @c's checker; how many passed. */
static size_t check_range(struct gw_conn *c, struct evbuffer *in, size_t from)
{
	size_t want = evbuffer_get_length(in) - from, done = 0;
	struct evbuffer_ptr ptr;
	struct evbuffer_iovec v[8];

	while (done < want) {
		int n, i;

		if (evbuffer_ptr_set(in, &ptr, from + done, EVBUFFER_PTR_SET))
			break;
		n = evbuffer_peek(in, (ev_ssize_t)(want - done), &ptr, v, 8);
		if (n <= 0)
			break;
		for (i = 0; i < n && i < 8 && done < want; i++) {
			size_t l = v[i].iov_len < want - done ? v[i].iov_len : want - done;
			size_t ok = gw_head_feed(&c->head, v[i].iov_base, l);

			done += ok;
			if (ok < l)
				return done;
		}
	}
	return done;
}

/*
 * A read landed on @c's input buffer, evhttp has not seen it yet. Bytes that break a rule
 * end the connection: they and everything after are cut, and in their place goes a line
 * evhttp refuses in any state ("X", after a CRLF ending the line in progress), so it answers
 * the requests before it, then 400 with Connection: close, and closes.
 */
static void on_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
	struct gw_conn *c = arg;
	size_t len, from, ok;
	const char *term;

	if (!info->n_added || c->in_watch)
		return;
	c->in_watch = true; /* our own cuts call us again */
	len = evbuffer_get_length(in);
	from = len > info->n_added ? len - info->n_added : 0;
	idle_leave(c);
	if (c->refused) {
		cut(in, from);
		goto out;
	}
	ok = check_range(c, in, from);
	if (from + ok < len) {
		c->refused = true;
		c->g->front.head_refused[c->head.bad]++;
		term = gw_head_mid_line(&c->head) ? "\r\nX\r\n" : "X\r\n";
		cut(in, from + ok);
		if (evbuffer_add(in, term, strlen(term))) {
			/* Cannot hand evhttp its 400: close without one. */
			evbuffer_drain(in, evbuffer_get_length(in));
			bufferevent_trigger_event(c->bev, BEV_EVENT_ERROR | BEV_EVENT_READING, 0);
		}
	}
out:
	c->in_watch = false;
}

/* A connection the table could not take: every byte of it is refused. */
static void on_input_untracked(struct evbuffer *in, const struct evbuffer_cb_info *info,
			       void *arg)
{
	(void)arg;
	if (!info->n_added || evbuffer_get_length(in) == 3)
		return;
	evbuffer_drain(in, evbuffer_get_length(in));
	evbuffer_add(in, "X\r\n", 3);
}

/* ---- evhttp's side ---------------------------------------------------------------------- */

/* evhttp asks for a bufferevent for every accepted connection (its socket comes after). */
struct bufferevent *gw_conn_new(struct event_base *base, void *arg)
{
	struct gateway *g = arg;
	struct bufferevent *bev = g->tls ? gw_tls_bev(g, base) : NULL;
	struct gw_conn *c;

	if (!bev && g->tls) {
		/* No TLS state to be had: never NULL (evhttp would make a plaintext one of its
		 * own), a plain one whose every byte is refused. */
		bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
		if (bev)
			evbuffer_add_cb(bufferevent_get_input(bev), on_input_untracked, NULL);
		return bev;
	}
	if (!bev)
		bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!bev)
		return NULL;
	if (!g->front.classify) {
		randombytes_buf(g->front.pfx_key, sizeof(g->front.pfx_key));
		g->front.classify = event_new(base, -1, 0, on_classify, g);
	}
	c = calloc(1, sizeof(*c));
	if (c)
		c->watch = evbuffer_add_cb(bufferevent_get_input(bev), on_input, c);
	if (!c || !c->watch || !g->front.classify) {
		/* Served without a place in the table (the limit is counted a little low), and
		 * never parsed: evhttp answers its first bytes with 400. */
		free(c);
		evbuffer_add_cb(bufferevent_get_input(bev), on_input_untracked, NULL);
		return bev;
	}
	bufferevent_incref(bev);
	c->g = g;
	c->bev = bev;
	gw_head_init(&c->head);
	c->deadline_ns = next_deadline(g);
	c->hnext = g->conn_bucket[conn_hash(bev)];
	g->conn_bucket[conn_hash(bev)] = c;
	c->next = g->conns;
	if (g->conns)
		g->conns->prev = c;
	g->conns = c;
	g->n_conns++;
	idle_join(c);
	/* The peer is looked at once evhttp has given the bufferevent its socket: right after
	 * this returns, before anything is read from it. */
	c->pending = true;
	c->pnext = g->front.pending;
	g->front.pending = c;
	event_active(g->front.classify, EV_TIMEOUT, 0);
	if (g->n_conns >= g->cfg->gw.max_connections)
		listener_pause(g, true);
	return bev;
}

static struct gw_conn *conn_of(struct gateway *g, struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);

	return evcon ? conn_find(g, evhttp_connection_get_bufferevent(evcon)) : NULL;
}

void gw_conn_sweep(struct gateway *g, uint64_t now)
{
	struct gw_conn *c = g->conns, *nx;

	for (; c; c = nx) {
		nx = c->next;
		if (conn_released(g, c))
			continue;
		if (c->deadline_ns && now >= c->deadline_ns) {
			g->st.conn_timeouts++;
			c->timed_out = true;
			conn_close(g, c);
		}
	}
	conn_make_room(g);
}

/* A response went out: the connection's next request must arrive in time. With nothing of
 * it here yet, the connection is an idle keep-alive. */
static void on_complete(struct evhttp_request *req, void *arg)
{
	struct gateway *g = arg;
	struct gw_conn *c = conn_of(g, req);

	if (!c)
		return;
	c->deadline_ns = next_deadline(g);
	c->answered = true;
	if (gw_head_between(&c->head))
		idle_join(c);
}

void gw_conn_request(struct gateway *g, struct evhttp_request *req)
{
	struct gw_conn *conn = conn_of(g, req);

	if (g->draining)
		/* Draining: this answer is the connection's last. */
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
	if (conn) {
		conn->deadline_ns = 0; /* the whole request is in: no more read deadline */
		if (g->draining) {
			/* its Connection: close is above */
		} else if (++conn->requests >= g->cfg->gw.max_requests_conn &&
		    g->cfg->gw.max_requests_conn) {
			/* Its last: evhttp closes the connection once this answer is sent. */
			evhttp_add_header(evhttp_request_get_output_headers(req), "Connection",
					  "close");
			g->front.request_capped++;
		}
	}
	evhttp_request_set_on_complete_cb(req, on_complete, g);
}

/*
 * The drain begins: no more accepts (for good: listener_pause no longer resumes), and every
 * connection with no request in service and nothing of a next one is closed now (idle
 * keep-alives, and connections that never sent a byte), so that a client parked on a
 * connection cannot hold the drain. One in service gets Connection: close on its answer
 * (gw_conn_request, and gateway_drain for requests already in); one part-way through a
 * request finishes it within request_timeout_ms or is closed by the sweep.
 */
void gw_conn_drain(struct gateway *g)
{
	struct gw_conn *c, *nx;

	/* Closed, not just paused: a paused listener still completes handshakes into its
	 * backlog, and a client there would wait for an accept that never comes. Closing it
	 * refuses new connections (RST) and resets those in the backlog, so a load balancer
	 * or client retries elsewhere at once. */
	if (g->bound)
		evhttp_del_accept_socket(g->http, g->bound);
	g->bound = NULL;
	g->listener = NULL;
	g->paused = true;
	g->draining = true;
	for (c = g->conns; c; c = nx) {
		nx = c->next;
		if (conn_released(g, c))
			continue;
		if (c->deadline_ns && gw_head_between(&c->head) &&
		    !evbuffer_get_length(bufferevent_get_input(c->bev)))
			conn_close(g, c);
	}
}

/*
 * At the stop, once everything outstanding has been answered (gateway_stop): those answers
 * are in the connections' output buffers, and the loop that would write them has ended. Write
 * them now, as far as each socket takes (an answer is a few hundred bytes: all of it), so the
 * client reads its 503 before evhttp closes the socket rather than a bare reset. A TLS
 * connection's output is plaintext: it goes through its TLS layer (gw_tls_flush), never
 * onto the socket as it is.
 */
void gw_conn_flush_all(struct gateway *g)
{
	struct gw_conn *c;

	for (c = g->conns; c; c = c->next) {
		evutil_socket_t fd = bufferevent_getfd(c->bev);
		struct evbuffer *out = bufferevent_get_output(c->bev);

		if (gw_tls_is(c->bev)) {
			gw_tls_flush(c->bev);
			continue;
		}
		while (fd >= 0 && evbuffer_get_length(out) && evbuffer_write(out, fd) > 0)
			;
	}
}

void gw_conn_close_all(struct gateway *g)
{
	while (g->conns)
		conn_forget(g, g->conns);
	if (g->front.classify) {
		event_free(g->front.classify);
		g->front.classify = NULL;
	}
}

/*
 * Has the client hung up? evhttp stops reading a connection while its request is being
 * served, so a client that timed out and closed is only visible on the socket: a peek that
 * reads end-of-file (or a reset) means nobody will read the answer. A pipelined next
 * request reads as data: still there. Like nginx, a half-close counts as gone. TLS
 * connections are gw_tls_gone's: their goodbye is a close_notify record, data to a peek.
 */
bool gw_conn_gone(struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
	char c;
	ssize_t n;

	if (fd < 0)
		return true;
	if (gw_tls_is(bev))
		return gw_tls_gone(bev, fd);
	n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}
