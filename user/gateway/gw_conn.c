// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The gateway's connections. evhttp in libevent 2.1 has no connection limit and no
 * whole-request deadline, only an idle timeout that a client dripping one byte at a time
 * keeps resetting. The gateway supplies the bufferevent of every connection
 * (evhttp_set_bevcb) and keeps a reference to it, which gives it the connection count
 * (accept pauses at gateway.max_connections) and a handle to close a connection that has
 * not delivered a whole request within gateway.request_timeout_ms. evhttp's own release of
 * a connection is seen by the sweep (its callbacks are cleared) and the reference dropped
 * then. Whatever decides about connections (how many, how long, whose) belongs here.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "gw_internal.h"
#include "log.h"

struct gw_conn {
	struct bufferevent *bev;
	struct gw_conn *hnext;         /* bucket chain */
	struct gw_conn *prev, *next;   /* all connections */
	uint64_t deadline_ns;          /* 0: a request is being served */
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
	bufferevent_decref(c->bev); /* evhttp has let go: this frees it and its socket */
	free(c);
}

static void listener_pause(struct gateway *g, bool pause)
{
	if (!g->listener || pause == g->paused)
		return;
	if (pause) {
		evconnlistener_disable(g->listener);
		g->st.accept_pauses++;
		log_warn("gateway: %u connections open, the limit: accepting paused",
			 g->n_conns);
	} else {
		evconnlistener_enable(g->listener);
	}
	g->paused = pause;
}

/* When a connection's next request must be in, from now. */
static uint64_t next_deadline(const struct gateway *g)
{
	return gw_now_ns() + (uint64_t)g->cfg->gw.request_timeout_ms * 1000000ull;
}

/* evhttp asks for a bufferevent for every accepted connection. */
struct bufferevent *gw_conn_new(struct event_base *base, void *arg)
{
	struct gateway *g = arg;
	struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	struct gw_conn *c;

	if (!bev)
		return NULL; /* evhttp then fails the connection */
	c = calloc(1, sizeof(*c));
	if (!c) {
		/* Untracked but still served; the limit is counted a little low. */
		return bev;
	}
	bufferevent_incref(bev);
	c->bev = bev;
	c->deadline_ns = next_deadline(g);
	c->hnext = g->conn_bucket[conn_hash(bev)];
	g->conn_bucket[conn_hash(bev)] = c;
	c->next = g->conns;
	if (g->conns)
		g->conns->prev = c;
	g->conns = c;
	g->n_conns++;
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
		bufferevent_event_cb ecb = NULL;

		nx = c->next;
		bufferevent_getcb(c->bev, NULL, NULL, &ecb, NULL);
		if (!ecb) {
			conn_forget(g, c);
			continue;
		}
		if (c->deadline_ns && now >= c->deadline_ns) {
			/* As if the socket had timed out: evhttp closes it its own way. */
			c->deadline_ns = 0;
			g->st.conn_timeouts++;
			bufferevent_trigger_event(c->bev, BEV_EVENT_TIMEOUT | BEV_EVENT_READING, 0);
		}
	}
	if (g->paused && g->n_conns < g->cfg->gw.max_connections)
		listener_pause(g, false);
}

/* A response went out: the connection's next request must arrive in time. */
static void on_complete(struct evhttp_request *req, void *arg)
{
	struct gateway *g = arg;
	struct gw_conn *c = conn_of(g, req);

	if (c)
		c->deadline_ns = next_deadline(g);
}

void gw_conn_request(struct gateway *g, struct evhttp_request *req)
{
	struct gw_conn *conn = conn_of(g, req);

	if (conn)
		conn->deadline_ns = 0; /* the whole request is in: no more read deadline */
	evhttp_request_set_on_complete_cb(req, on_complete, g);
}

void gw_conn_close_all(struct gateway *g)
{
	while (g->conns)
		conn_forget(g, g->conns);
}

/*
 * Has the client hung up? evhttp stops reading a connection while its request is being
 * served, so a client that timed out and closed is only visible on the socket: a peek that
 * reads end-of-file (or a reset) means nobody will read the answer. A pipelined next
 * request reads as data: still there. Like nginx, a half-close counts as gone.
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
	n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}
