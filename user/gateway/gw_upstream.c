// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Upstream mode (gw_upstream.h): forwarding what the scheduler starts to the identity
 * service behind the gateway, over a fixed set of keep-alive connections per upstream.
 * gw_upcli does the HTTP/1.1 (over TCP or a Unix socket): one request at a time per
 * connection, so a connection is a slot, taken by a forward until its answer (or its
 * failure) comes back.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <sodium.h>

#include "gw_creds.h"
#include "gw_internal.h"
#include "gw_upcli.h"
#include "gw_upstream.h"
#include "gw_upstream_verdict.h"
#include "log.h"

/*
 * One cost class's concurrency on one upstream: the "worker pool" of upstream mode. At most
 * `cap` forwards in flight (routes[].concurrency, else the upstream's connections); with
 * gateway.upstream.adaptive, `limit` is learned from the measured service time, AIMD on
 * latency, judged on the recent service time (an EWMA over about ten answers, so that one
 * slow answer among fast ones, a host's hiccup, cuts nothing): within GW_LIM_TOLERANCE x the
 * baseline, or GW_LIM_SLACK_NS above it
 * when that is more (the baseline is the least service time of the last GW_LIM_WINDOW_NS,
 * so a lasting change is relearned within a window; the slack keeps a sub-millisecond
 * service's jitter and a few ms of queueing, harmless next to any deadline, from reading
 * as overload), each answer adds 1/limit (about one more per round of answers); above
 * it, or a timeout, each multiplies it by GW_LIM_BACKOFF. Bounded to 1..cap. What is not let through waits in the queue, where the
 * deadline check, the class estimate and CoDel shed it with a 429 instead of a late 504.
 */
#define GW_LIM_TOLERANCE 2.0
#define GW_LIM_BACKOFF 0.9
#define GW_LIM_WINDOW_NS (5ull * 1000000000ull)
#define GW_LIM_SLACK_NS (20.0 * 1e6)
#define GW_LIM_EWMA 0.1

/* The most of an answer's head (status line, fields) read from an upstream. */
#define GW_UP_MAX_HEAD 65536

struct gw_uplim {
	bool used;                     /* a route of this class goes to this upstream */
	uint32_t cap, inflight;
	double limit;
	double base_ns;                /* the baseline service time (0: none yet) */
	double recent_ns;              /* EWMA of the service time, GW_LIM_EWMA (0: none) */
	double win_min_ns;             /* this window's least (0: none yet) */
	uint64_t win_start_ns;
	uint64_t increases, decreases;
};

struct gw_upconn {
	struct gw_up *up;
	struct gw_upcli cli;           /* its HTTP/1.1 connection (cli.base NULL: not set up) */
	struct gw_req *r;              /* the forward it carries; NULL: free */
	uint32_t gen;                  /* the upstream's address cli connects to */
	uint16_t cls;                  /* the class of the forward it carries */
};

struct gw_up {
	char url[SL_UPSTREAM_URL_LEN];
	char host[SL_UPSTREAM_ADDR_LEN]; /* the address connected to (resolved at load) */
	uint16_t port;                 /* 0: host is a Unix socket's path */
	struct sockaddr_storage sa;    /* host and port */
	socklen_t salen;
	uint32_t gen;                  /* bumped when a reload resolves the name elsewhere */
	bool live;                     /* named by the running config */
	uint32_t slots, busy;
	struct gw_upconn *c;
	uint32_t timeout_ms, max_response, down_ms;
	uint64_t down_until_ns;
	bool down_logged;
	uint64_t forwarded, results[GW_UP__N];
	struct gw_hist service;
	bool adaptive;
	struct gw_uplim lim[GW_MAX_CLASSES];
	/* reachability, for /readyz: the last connect (a forward's or a probe's) */
	bool unreachable;
	char unreachable_why[96];
	uint64_t reach_ns;             /* the last reachability probe's start */
	struct gw_upcli probe;         /* the probe's connect-only client (base NULL: none yet) */
	struct gateway *g;
};

struct gw_upstreams {
	struct gw_up u[GW_MAX_UPSTREAMS];
	int n;
	/* which upstream serves (route, tenant): route > tenant > gateway; -1 built-in */
	int8_t of[SL_MAX_ROUTES][SL_MAX_TENANTS];
	/* sign-in routes: how the upstream's answers were read (gw_upstream_verdict.h) */
	uint64_t verdicts[SL_MAX_ROUTES][GW_VERDICT__N];
	/* the last probe of each class whose estimate outgrew the deadlines, and their count */
	uint64_t probe_ns[GW_MAX_CLASSES];
	uint64_t probes;
	struct evbuffer *msg;          /* a forward's request, being written */
	bool pure;                     /* every route is forwarded: the queue's workers are ours */
};

static const char *const result_names[GW_UP__N] = {
	[GW_UP_2XX] = "2xx", [GW_UP_3XX] = "3xx", [GW_UP_4XX] = "4xx", [GW_UP_5XX] = "5xx",
	[GW_UP_DOWN] = "down", [GW_UP_TIMEOUT] = "timeout", [GW_UP_BAD] = "bad_response",
	[GW_UP_TOO_BIG] = "too_big", [GW_UP_SHED_DOWN] = "shed_down",
};

const char *gw_up_result_name(int r)
{
	return r >= 0 && r < GW_UP__N ? result_names[r] : "?";
}

static const char BODY_502[] = "{\"error\":\"bad_gateway\"}";
static const char BODY_504[] = "{\"error\":\"upstream_timeout\"}";

/* ---- the table -------------------------------------------------------------------------- */

static int up_find(struct gw_upstreams *u, const char *url)
{
	int i;

	for (i = 0; i < u->n; i++)
		if (!strcmp(u->u[i].url, url))
			return i;
	return -1;
}

static void up_settings(struct gw_up *up, const struct sl_gateway_cfg *gw)
{
	up->timeout_ms = gw->up.timeout_ms;
	up->max_response = gw->up.max_response;
	up->down_ms = gw->up.down_ms;
	up->adaptive = gw->up.adaptive;
}

/* Route @ri's class on @up: its ceiling from the route (or the connections), the learned
 * limit kept across reloads but within it. Without learning the limit is the ceiling. */
static void lim_setup(struct gateway *g, struct gw_up *up, const struct sl_config *c, int ri)
{
	int k = gw_sched_class(g->sched, ri);
	struct gw_uplim *l;
	uint32_t cap;

	if (k < 0 || k >= GW_MAX_CLASSES)
		return;
	l = &up->lim[k];
	cap = c->routes[ri].concurrency ? c->routes[ri].concurrency : up->slots;
	if (cap > up->slots)
		cap = up->slots;
	if (!l->limit)
		l->limit = cap;
	l->cap = cap;
	l->used = true;
	if (!up->adaptive || l->limit > l->cap)
		l->limit = l->cap;
}

/* A measured forward of @l's class: @ns its service time, @ok false for a timeout. True
 * when the whole number of forwards the limit lets through changed. */
static bool lim_sample(struct gw_up *up, struct gw_uplim *l, uint64_t ns, bool ok, uint64_t now)
{
	uint32_t was = (uint32_t)l->limit;

	if (ok && ns) {
		l->recent_ns = l->recent_ns ? l->recent_ns + GW_LIM_EWMA * ((double)ns - l->recent_ns) :
				(double)ns;
		if (!l->win_min_ns || (double)ns < l->win_min_ns)
			l->win_min_ns = (double)ns;
		if (!l->base_ns || (double)ns < l->base_ns)
			l->base_ns = (double)ns;
	}
	if (!l->win_start_ns)
		l->win_start_ns = now;
	if (now - l->win_start_ns >= GW_LIM_WINDOW_NS) {
		/* The baseline is the last window's least: an upstream that is lastingly slower
		 * (a new release, a bigger hash) is relearned rather than throttled forever. */
		if (l->win_min_ns)
			l->base_ns = l->win_min_ns;
		l->win_min_ns = 0;
		l->win_start_ns = now;
	}
	if (!up->adaptive || !l->cap)
		return false;
	if (ok && l->base_ns &&
	    l->recent_ns <= fmax(GW_LIM_TOLERANCE * l->base_ns, l->base_ns + GW_LIM_SLACK_NS)) {
		if (l->limit < l->cap) {
			l->limit += 1.0 / (l->limit > 1.0 ? l->limit : 1.0);
			l->increases++;
		}
	} else {
		l->limit *= GW_LIM_BACKOFF;
		l->decreases++;
	}
	if (l->limit < 1.0)
		l->limit = 1.0;
	if (l->limit > l->cap)
		l->limit = l->cap;
	return (uint32_t)l->limit != was;
}

/* @up's address from what the config load resolved for its URL (names are resolved there,
 * off the loop). A new address takes effect on the next connection: idle connections to
 * the old one are closed as they are next used, busy ones after their answer. */
static int up_address(struct gw_up *up, const struct sl_config *c)
{
	const struct sl_upstream_addr *a = sl_config_upstream_addr(c, up->url);

	if (!a || !a->addr[0]) {
		log_error("gateway: upstream %s: no address from the config load", up->url);
		return -1;
	}
	if (up->host[0] && (strcmp(up->host, a->addr) || up->port != a->port)) {
		log_info("gateway: upstream %s now resolves to %s (was %s): new connections go "
			 "there", up->url, a->addr, up->host);
		up->gen++;
	}
	snprintf(up->host, sizeof(up->host), "%s", a->addr);
	up->port = a->port;
	memset(&up->sa, 0, sizeof(up->sa));
	if (!up->port) {
		struct sockaddr_un *un = (struct sockaddr_un *)&up->sa;

		un->sun_family = AF_UNIX;
		snprintf(un->sun_path, sizeof(un->sun_path), "%s", up->host);
		up->salen = (socklen_t)sizeof(*un);
	} else if (strchr(up->host, ':')) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&up->sa;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(up->port);
		if (inet_pton(AF_INET6, up->host, &in6->sin6_addr) != 1)
			return -1;
		up->salen = (socklen_t)sizeof(*in6);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&up->sa;

		in->sin_family = AF_INET;
		in->sin_port = htons(up->port);
		if (inet_pton(AF_INET, up->host, &in->sin_addr) != 1)
			return -1;
		up->salen = (socklen_t)sizeof(*in);
	}
	return 0;
}

static int up_add(struct gw_upstreams *u, const char *url, const struct sl_config *c)
{
	const struct sl_gateway_cfg *gw = &c->gw;
	struct gw_up *up;
	int i = up_find(u, url);

	if (i >= 0)
		return up_address(&u->u[i], c) ? -1 : i;
	if (u->n >= GW_MAX_UPSTREAMS) {
		log_error("gateway: more than %d upstreams; %s is not served", GW_MAX_UPSTREAMS, url);
		return -1;
	}
	up = &u->u[u->n];
	memset(up, 0, sizeof(*up));
	snprintf(up->url, sizeof(up->url), "%s", url);
	if (up_address(up, c))
		return -1;
	/* The slots are fixed at start (a reload's new concurrency waits for the next start,
	 * like the Argon2id workers): a connection may be carrying a forward. */
	up->slots = gw->up.concurrency ? gw->up.concurrency : 1;
	up->c = calloc(up->slots, sizeof(*up->c));
	if (!up->c)
		return -1;
	for (i = 0; i < (int)up->slots; i++) {
		up->c[i].up = up;
		up->c[i].cls = UINT16_MAX;
	}
	up_settings(up, gw);
	return u->n++;
}

/* Every (route, tenant)'s upstream under @c (sl_config_upstream_of: the route's, else the
 * tenant's, else the gateway's); the upstreams @c names are live. */
static int map_routes(struct gateway *g, const struct sl_config *c)
{
	struct gw_upstreams *u = g->ups;
	int i, ri, ti, ret = 0;

	for (i = 0; i < u->n; i++) {
		int k;

		u->u[i].live = false;
		for (k = 0; k < GW_MAX_CLASSES; k++)
			u->u[i].lim[k].used = false;
	}
	memset(u->of, -1, sizeof(u->of));
	for (ri = 0; ri < c->n_routes; ri++)
		for (ti = 0; ti < c->n_tenants; ti++) {
			const char *url = sl_config_upstream_of(c, ri, ti);

			if (!url)
				continue;
			i = up_add(u, url, c);
			if (i < 0) {
				ret = -1;
				continue;
			}
			u->u[i].live = true;
			up_settings(&u->u[i], &c->gw);
			u->of[ri][ti] = (int8_t)i;
			lim_setup(g, &u->u[i], c, ri);
		}
	return ret;
}

/* In pure upstream mode (every (route, tenant) forwarded, no built-in route) the queue's
 * "workers" are what the upstreams let run at once, so that its depth limit (measured
 * service rate x target wait, Little's law) is the queue they drain in the target wait:
 * each upstream's connections, or, when less, the sum of its classes' limits (learned with
 * gateway.upstream.adaptive; each counts at least 1). When an upstream slows and its limit
 * is cut, the queue in front shrinks with it, and what would only have waited to expire
 * is shed at admission. */
static void update_workers(struct gateway *g)
{
	uint32_t n = 0;
	int i, k;

	if (!g->ups->pure)
		return;
	for (i = 0; i < g->ups->n; i++) {
		const struct gw_up *up = &g->ups->u[i];
		uint32_t sum = 0, w = up->slots;
		bool any = false;

		if (!up->live)
			continue;
		for (k = 0; k < GW_MAX_CLASSES; k++)
			if (up->lim[k].used) {
				any = true;
				sum += up->lim[k].limit >= 1.0 ? (uint32_t)up->lim[k].limit : 1;
			}
		if (any && sum < w)
			w = sum;
		n += w;
	}
	if (n)
		g->sched->workers = n;
}

static void set_workers(struct gateway *g, const struct sl_config *c)
{
	int ri, ti;

	g->ups->pure = false;
	for (ri = 0; ri < c->n_routes; ri++)
		for (ti = 0; ti < c->n_tenants; ti++)
			if (g->ups->of[ri][ti] < 0)
				return; /* a built-in route: the Argon2id pool's count stays */
	g->ups->pure = true;
	update_workers(g);
}

int gw_upstreams_start(struct gateway *g, const struct sl_config *c)
{
	int i;

	g->ups = calloc(1, sizeof(*g->ups));
	if (!g->ups)
		return -1;
	g->ups->msg = evbuffer_new();
	if (!g->ups->msg || map_routes(g, c))
		return -1;
	set_workers(g, c);
	for (i = 0; i < g->ups->n; i++) {
		const struct gw_up *up = &g->ups->u[i];
		char where[SL_UPSTREAM_ADDR_LEN + 16];

		if (up->port)
			snprintf(where, sizeof(where), "%s port %u", up->host, up->port);
		else
			snprintf(where, sizeof(where), "Unix socket %s", up->host);
		log_info("gateway: upstream %s (%s): %u connections, answers within %u ms, at most "
			 "%u bytes", up->url, where, up->slots, up->timeout_ms, up->max_response);
	}
	return 0;
}

void gw_upstreams_apply(struct gateway *g, const struct sl_config *c)
{
	if (!g->ups)
		return;
	if (map_routes(g, c))
		log_error("gateway: some upstreams could not be set up (logged above); their "
			  "routes are served by the built-in endpoints");
	if (c->gw.up.concurrency != g->started.up.concurrency)
		log_warn("gateway.upstream.concurrency changes take effect at the next start");
	set_workers(g, c);
}

void gw_upstreams_stop(struct gateway *g)
{
	int i;
	uint32_t k;

	if (!g->ups)
		return;
	for (i = 0; i < g->ups->n; i++) {
		struct gw_up *up = &g->ups->u[i];

		for (k = 0; up->c && k < up->slots; k++) {
			up->c[k].r = NULL;
			if (up->c[k].cli.base)
				gw_upcli_fini(&up->c[k].cli);
		}
		free(up->c);
		if (up->probe.base)
			gw_upcli_fini(&up->probe);
	}
	if (g->ups->msg)
		evbuffer_free(g->ups->msg);
	free(g->ups);
	g->ups = NULL;
}

int gw_upstream_of(struct gateway *g, int ri, int ti)
{
	if (!g->ups || ri < 0 || ri >= SL_MAX_ROUTES || ti < 0 || ti >= SL_MAX_TENANTS)
		return -1;
	return g->ups->of[ri][ti];
}

bool gw_upstreams_room(struct gateway *g)
{
	int i;

	if (!g->ups)
		return false;
	for (i = 0; i < g->ups->n; i++)
		if (g->ups->u[i].live && g->ups->u[i].busy < g->ups->u[i].slots)
			return true;
	return false;
}

bool gw_upstream_ready(struct gateway *g, const struct gw_req *r, uint64_t now)
{
	const struct gw_up *up;
	const struct gw_uplim *l;

	if (!g->ups || r->up < 0 || r->up >= g->ups->n)
		return true; /* answered 502 at once */
	up = &g->ups->u[r->up];
	if (now < up->down_until_ns)
		return true; /* shed at once (shed_down), not left to wait */
	if (up->busy >= up->slots)
		return false;
	if (r->job.cls >= GW_MAX_CLASSES)
		return true;
	l = &up->lim[r->job.cls];
	return !l->used || l->inflight < (uint32_t)l->limit;
}

/* ---- a sign-in route (routes[].login) ------------------------------------------------------- */

int gw_upstream_login_fields(struct gw_req *r, char *err, size_t errlen)
{
	const struct sl_route_login *l = &r->g->cfg->routes[r->route].login;
	struct evkeyvalq *ih = evhttp_request_get_input_headers(r->req);
	size_t ul = 0;

	if (l->from == SL_LOGIN_BASIC) {
		const char *a = evhttp_find_header(ih, "Authorization");
		unsigned char dec[GW_USER_MAX + GW_PASS_MAX + 2];
		size_t n = 0;
		const unsigned char *colon;

		if (!a || strncasecmp(a, "Basic ", 6)) {
			snprintf(err, errlen, "this route signs in with HTTP Basic: an Authorization "
				 "header is required");
			return -1;
		}
		a += 6;
		while (*a == ' ')
			a++;
		if (sodium_base642bin(dec, sizeof(dec), a, strlen(a), NULL, &n, NULL,
				      sodium_base64_VARIANT_ORIGINAL) ||
		    !(colon = memchr(dec, ':', n))) {
			sodium_memzero(dec, sizeof(dec));
			snprintf(err, errlen, "the Authorization header is not Basic user:password");
			return -1;
		}
		ul = (size_t)(colon - dec);
		if (ul > GW_USER_MAX || n - ul - 1 > sizeof(r->work.pwd) - 1) {
			sodium_memzero(dec, sizeof(dec));
			snprintf(err, errlen, "the account name or password is too long");
			return -1;
		}
		memcpy(r->user, dec, ul);
		r->user[ul] = '\0';
		memcpy(r->work.pwd, colon + 1, n - ul - 1);
		r->work.pwd_len = (uint32_t)(n - ul - 1);
		sodium_memzero(dec, sizeof(dec));
	} else {
		struct evbuffer *in = evhttp_request_get_input_buffer(r->req);
		size_t len = evbuffer_get_length(in);
		/* The body stays as it is (it goes upstream): it is read, not consumed. */
		const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
		int type = gw_body_type(evhttp_find_header(ih, "Content-Type"));
		struct gw_field f[2] = {
			{ .name = l->user, .buf = r->user, .cap = sizeof(r->user) },
			{ .name = l->password, .buf = r->work.pwd, .cap = sizeof(r->work.pwd) },
		};

		if (type != (l->from == SL_LOGIN_JSON ? GW_BODY_JSON : GW_BODY_FORM)) {
			snprintf(err, errlen, "this route signs in with a %s body",
				 l->from == SL_LOGIN_JSON ? "JSON" : "form");
			return -1;
		}
		if (gw_body_fields(type, body, len, f, 2, err, errlen))
			return -1;
		if (!f[0].found) {
			snprintf(err, errlen, "'%s' is required", l->user);
			return -1;
		}
		ul = f[0].len;
		r->work.pwd_len = (uint32_t)f[1].len;
	}
	/* Folded as the built-in /login folds it: "Alice" and "alice" share one budget. */
	if (!ul || !gw_account_norm(r->user, ul)) {
		sodium_memzero(r->work.pwd, sizeof(r->work.pwd));
		snprintf(err, errlen, "the username must be " GW_ACCOUNT_RULE);
		return -1;
	}
	r->user_len = ul;
	return 0;
}

/* The sign-in outcome of @resp, the upstream's answer to @r on a login route: 1, 0, or -1
 * neither (counted by how it was read). Only the upstream's status, headers and body are
 * read; the body is read in place and goes to the client as it came. */
static int login_outcome(const struct gw_req *r, const struct gw_upcli_resp *resp)
{
	const struct sl_route_login *l = &r->g->cfg->routes[r->route].login;
	size_t len = l->by == SL_VERDICT_JSON ? evbuffer_get_length(resp->body) : 0;
	const char *body = len ? (const char *)evbuffer_pullup(resp->body, -1) : "";
	int v = gw_up_verdict(l, resp->code, resp->headers, body ? body : "", body ? len : 0);

	r->g->ups->verdicts[r->route][v]++;
	return gw_verdict_outcome(v);
}

static bool is_login(const struct gw_req *r)
{
	return r->route >= 0 && r->route < r->g->cfg->n_routes &&
	       r->g->cfg->routes[r->route].login.from;
}

/* ---- a forward ---------------------------------------------------------------------------- */

/*
 * libevent's socket bufferevent writes only when epoll says the socket is writable: each
 * message evhttp queues costs an epoll_ctl to arm EPOLLOUT, a trip through epoll_wait (a
 * wake-up of its own when nothing else is ready) and an epoll_ctl to disarm it, for each
 * answer to a client (gw_upcli writes the upstream's requests the same way, itself). A
 * socket with room in its send buffer takes the message at once: write it here, and run
 * evhttp's write callback as the bufferevent does after a write that empties its output
 * (deferred, so that evhttp's next step, such as reading the next request on the
 * connection, never runs inside our caller). The
 * output's start is frozen by the bufferevent against its users' drains: thawed around
 * the write. A short write or an error leaves the rest, or the error, to the bufferevent.
 */
void gw_write_now(struct bufferevent *bev)
{
	struct evbuffer *out;
	evutil_socket_t fd;
	int n;

	if (!bev || gw_tls_is(bev))
		return;
	fd = bufferevent_getfd(bev);
	out = bufferevent_get_output(bev);
	if (fd < 0 || !evbuffer_get_length(out) || !(bufferevent_get_enabled(bev) & EV_WRITE))
		return;
	evbuffer_unfreeze(out, 1);
	n = evbuffer_write(out, fd);
	evbuffer_freeze(out, 1);
	if (n > 0 && !evbuffer_get_length(out))
		bufferevent_trigger(bev, EV_WRITE, BEV_TRIG_DEFER_CALLBACKS);
}

enum { H_PASS, H_HOP, H_XFF, H_XFP, H_DEADLINE };

/* What header @k is to a forward: one strcasecmp at most, chosen by its length. RFC 9110
 * 7.6.1's hop-by-hop headers are not forwarded either way (Content-Length is evhttp's to
 * set from the body it sends); X-Forwarded-For, X-Forwarded-Proto and X-Request-Deadline-Ms
 * are the gateway's to write. */
static int hdr_kind(const char *k)
{
	switch (strlen(k)) {
	case 2:
		return !strcasecmp(k, "TE") ? H_HOP : H_PASS;
	case 7:
		return !strcasecmp(k, "Trailer") || !strcasecmp(k, "Upgrade") ? H_HOP : H_PASS;
	case 10:
		return !strcasecmp(k, "Connection") || !strcasecmp(k, "Keep-Alive") ? H_HOP :
										       H_PASS;
	case 14:
		return !strcasecmp(k, "Content-Length") ? H_HOP : H_PASS;
	case 15:
		return !strcasecmp(k, "X-Forwarded-For") ? H_XFF : H_PASS;
	case 16:
		return !strcasecmp(k, "Proxy-Connection") ? H_HOP : H_PASS;
	case 17:
		return !strcasecmp(k, "Transfer-Encoding") ? H_HOP :
		       !strcasecmp(k, "X-Forwarded-Proto") ? H_XFP : H_PASS;
	case 21:
		return !strcasecmp(k, "X-Request-Deadline-Ms") ? H_DEADLINE : H_PASS;
	default:
		return H_PASS;
	}
}

/* A field's name, or a token of a Connection field: @len bytes at @p; @i its field's place. */
struct hop_name {
	const char *p;
	size_t len, i;
};

static int hop_cmp(const void *a, const void *b)
{
	const struct hop_name *x = a, *y = b;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return strncasecmp(x->p, y->p, x->len);
}

/*
 * Which of the @n fields of @h (in order) are not passed on: RFC 9110 7.6.1's hops
 * (hdr_kind), and those that any Connection field names. The names and the tokens are sorted
 * and merged once, so a long Connection field beside many fields costs n log n comparisons,
 * not one scan of the field per field (30 requests of 4,000 fields and a Connection field of
 * 10,000 tokens, a 58 KB head that gateway.max_headers = 65536 lets in, took sluiced 1.10 s
 * of CPU that way, 0.06 s this way), and no input makes it slower (no hash to collide).
 * Every Connection field counts, not only the first. @hop: n flags, set here. 0, or -1 (no
 * memory).
 */
#define HOPS_ON_STACK 32 /* fields a forward's usual head has at most: no malloc for them */

static int mark_hops(const struct evkeyvalq *h, size_t n, bool *hop)
{
	const struct evkeyval *kv;
	struct hop_name fs[HOPS_ON_STACK], *f = fs, *t = NULL;
	size_t nt = 0, cap = 0, i = 0, a, b;

	if (n > HOPS_ON_STACK) {
		/* as many as the head has, not the most it may have */
		size_t m = 0;

		TAILQ_FOREACH(kv, h, next)
			if (++m >= n)
				break;
		if (m > HOPS_ON_STACK && !(f = malloc(m * sizeof(*f))))
			return -1;
		n = m;
	}
	TAILQ_FOREACH(kv, h, next) {
		if (i == n)
			break;
		f[i] = (struct hop_name){ kv->key, strlen(kv->key), i };
		hop[i] = hdr_kind(kv->key) == H_HOP;
		if (!strcasecmp(kv->key, "Connection")) {
			struct gw_list it = { kv->value };
			const char *p;
			size_t l;

			while (gw_list_next(&it, &p, &l)) {
				if (!gw_is_token(p, l))
					continue; /* names no field: a field's name is a token */
				if (nt == cap) {
					struct hop_name *nt2;

					cap = cap ? cap * 2 : 16;
					nt2 = realloc(t, cap * sizeof(*t));
					if (!nt2) {
						free(t);
						if (f != fs)
							free(f);
						return -1;
					}
					t = nt2;
				}
				t[nt++] = (struct hop_name){ p, l, 0 };
			}
		}
		i++;
	}
	n = i;
	if (nt) {
		qsort(f, n, sizeof(*f), hop_cmp);
		qsort(t, nt, sizeof(*t), hop_cmp);
		for (a = 0, b = 0; a < n && b < nt;) {
			int c = hop_cmp(&f[a], &t[b]);

			if (c < 0) {
				a++;
			} else if (c > 0) {
				b++;
			} else {
				hop[f[a].i] = true;
				a++; /* the next field may have the same name: b stays */
			}
		}
	}
	free(t);
	if (f != fs)
		free(f);
	return 0;
}

static void up_release(struct gw_upconn *uc)
{
	struct gw_up *up = uc->up;

	if (uc->cls < GW_MAX_CLASSES && up->lim[uc->cls].inflight)
		up->lim[uc->cls].inflight--;
	uc->cls = UINT16_MAX;
	uc->r = NULL;
	if (up->busy)
		up->busy--;
}

/* A forward that reached the upstream is over: its measured time is what it cost (1 unit =
 * 100 us of upstream time), to its class's estimate and its tenant's consumption as a hash's
 * CPU is, and to the tenant's service time and cost counters. */
static void up_charge(struct gw_req *r, uint64_t now)
{
	struct gateway *g = r->g;
	uint64_t ns = now - r->up_start_ns;
	double units = (double)ns / 100000.0;

	if (r->job.tenant < GW_MAX_TENANTS) {
		g->ts[r->job.tenant].units_measured += units;
		gw_hist_add(&g->ts[r->job.tenant].service, ns);
	}
	gw_sched_done(g->sched, &r->job, units, ns, now);
}

/* The forward of @r is over with @res: count it, and answer @r unless that is done. */
static void up_fail(struct gw_req *r, struct gw_up *up, int res, uint64_t now)
{
	struct gateway *g = r->g;

	up->results[res]++;
	r->upc = NULL;
	/* No verdict came: a sign-in route's attempt is given back. */
	if (is_login(r))
		gw_login_upstream_outcome(r, -1);
	switch (res) {
	case GW_UP_DOWN:
	case GW_UP_SHED_DOWN:
		/* Never reached the upstream: nothing was spent there. A capacity event. */
		gw_sched_release(g->sched, &r->job, now);
		gw_shed(r, GW_SHED_UPSTREAM_DOWN);
		return;
	case GW_UP_TIMEOUT:
		up_charge(r, now);
		gw_respond(r, 504, "Gateway Timeout", BODY_504, 0, false, false);
		return;
	default:
		up_charge(r, now);
		gw_respond(r, 502, "Bad Gateway", BODY_502, 0, false, false);
		return;
	}
}

static void set_reachable(struct gw_up *up, bool ok, const char *why)
{
	if (!ok && !up->unreachable)
		log_warn("not ready (GET /readyz answers 503): upstream %s is unreachable: %s",
			 up->url, why);
	else if (ok && up->unreachable)
		log_info("upstream %s is reachable again", up->url);
	up->unreachable = !ok;
	snprintf(up->unreachable_why, sizeof(up->unreachable_why), "%s", ok ? "" : why);
}

static void mark_down(struct gw_up *up, uint64_t now)
{
	set_reachable(up, false, "a forward's connect failed");
	up->down_until_ns = now + (uint64_t)up->down_ms * 1000000ull;
	if (!up->down_logged)
		log_warn("gateway: upstream %s refuses connections: its requests are shed (429) "
			 "for %u ms at a time until it answers", up->url, up->down_ms);
	up->down_logged = true;
}

/* The answer (@resp, with @err GW_UPCLI_OK) or the failure of @arg's forward. */
static void on_up_done(struct gw_upcli *cli, enum gw_upcli_err err,
		       const struct gw_upcli_resp *resp, void *arg)
{
	struct gw_upconn *uc = arg;
	struct gw_up *up = uc->up;
	struct gw_req *r = uc->r;
	struct gateway *g;
	struct evkeyvalq *out;
	struct evkeyval *kv, *nx;
	bool hop[GW_UPCLI_MAX_FIELDS], head;
	uint64_t now = gw_now_ns();
	int code, res, i;
	struct gw_uplim *l = uc->cls < GW_MAX_CLASSES ? &up->lim[uc->cls] : NULL;

	(void)cli;
	if (!r) { /* cancelled: the gateway answered it already */
		up_release(uc);
		return;
	}
	g = r->g;
	up_release(uc);
	if (err != GW_UPCLI_OK) {
		switch (err) {
		case GW_UPCLI_DOWN:
			/* refused, unreachable, or no connect within the time: nothing was sent */
			res = GW_UP_DOWN;
			mark_down(up, now);
			break;
		case GW_UPCLI_TIMEOUT:
			res = GW_UP_TIMEOUT;
			if (l && lim_sample(up, l, now - r->up_start_ns, false, now))
				update_workers(g);
			break;
		case GW_UPCLI_TOO_BIG:
			res = GW_UP_TOO_BIG;
			break;
		default:
			res = GW_UP_BAD;
			break;
		}
		up_fail(r, up, res, now);
		gw_dispatch(g);
		return;
	}
	code = resp->code;
	up->down_logged = false;
	if (up->unreachable)
		set_reachable(up, true, NULL);
	res = code < 300 ? GW_UP_2XX : code < 400 ? GW_UP_3XX : code < 500 ? GW_UP_4XX : GW_UP_5XX;
	up->results[res]++;
	gw_hist_add(&up->service, now - r->up_start_ns);
	if (l && lim_sample(up, l, now - r->up_start_ns, true, now))
		update_workers(g);
	up_charge(r, now);
	r->upc = NULL;
	if (is_login(r))
		gw_login_upstream_outcome(r, login_outcome(r, resp));

	/* The answer as it came, but for the hops. */
	out = evhttp_request_get_output_headers(r->req);
	if (mark_hops(resp->headers, GW_UPCLI_MAX_FIELDS, hop)) {
		gw_respond(r, 502, "Bad Gateway", BODY_502, 0, false, false);
		gw_dispatch(g);
		return;
	}
	/* Each field passed on is moved, not copied, from the upstream client's list to the
	 * answer's: the entry is libevent's (made and checked by evhttp_add_header in
	 * gw_upcli.c; evhttp_clear_headers frees it with the request), where a copy cost
	 * three allocations, a check and three frees a field. @resp is not read after. */
	/* A HEAD's answer has no body but says how long the GET's would be (RFC 9110 9.3.2):
	 * its Content-Length, a hop of every other answer (evhttp writes it from the body), goes
	 * on in its place. */
	head = evhttp_request_get_command(r->req) == EVHTTP_REQ_HEAD;
	i = 0;
	for (kv = TAILQ_FIRST(resp->headers); kv; kv = nx) {
		nx = TAILQ_NEXT(kv, next);
		if (i >= GW_UPCLI_MAX_FIELDS)
			continue;
		if (!hop[i++] || (head && !strcasecmp(kv->key, "Content-Length"))) {
			TAILQ_REMOVE(resp->headers, kv, next);
			TAILQ_INSERT_TAIL(out, kv, next);
		}
	}
	evbuffer_add_buffer(evhttp_request_get_output_buffer(r->req), resp->body);
	r->raw = true;
	r->body = NULL;
	r->retry_after = 0;
	r->code = code;
	/* evhttp copies the reason phrase; @resp lives until this returns. */
	r->reason = resp->reason[0] ? resp->reason : "Upstream";
	gw_send_now(r);
	gw_dispatch(g);
}

/* One line of the request to the upstream: the pieces (up to six, NULL ends them) and
 * CRLF, in one evbuffer_add when they fit on the stack. evbuffer_add_printf's vsnprintf
 * cost ~1,100 instructions a line, six lines a forward (callgrind, docs/performance.md,
 * "The listener's side"). */
static void add_line6(struct evbuffer *m, const char *a, const char *b, const char *c,
		      const char *d, const char *e, const char *f)
{
	const char *p[6] = { a, b, c, d, e, f };
	size_t len[6], total = 2;
	char buf[512];
	int i, n;

	for (n = 0; n < 6 && p[n]; n++) {
		len[n] = strlen(p[n]);
		total += len[n];
	}
	if (total > sizeof(buf)) {
		for (i = 0; i < n; i++)
			evbuffer_add(m, p[i], len[i]);
		evbuffer_add(m, "\r\n", 2);
		return;
	}
	total = 0;
	for (i = 0; i < n; i++) {
		memcpy(buf + total, p[i], len[i]);
		total += len[i];
	}
	memcpy(buf + total, "\r\n", 2);
	evbuffer_add(m, buf, total + 2);
}

static void add_line(struct evbuffer *m, const char *a, const char *b, const char *c,
		     const char *d)
{
	add_line6(m, a, b, c, d, NULL, NULL);
}

/* @v in decimal into @buf (21 bytes at least); returns @buf. */
static const char *u64_dec(char *buf, unsigned long long v)
{
	char t[21];
	int n = 0, i = 0;

	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < 20);
	while (n)
		buf[i++] = t[--n];
	buf[i] = 0;
	return buf;
}

/* X-Forwarded-For for the upstream: the client's own, when its proxies are trusted
 * (gateway.trusted_hops), then the socket's peer; without trusted hops what the client
 * wrote is dropped (anyone can write it). */
static void add_xff(struct gw_req *r, struct evbuffer *m, const char *client_xff)
{
	struct evhttp_connection *ec = evhttp_request_get_connection(r->req);
	char *peer = NULL;
	ev_uint16_t port = 0;

	if (ec)
		evhttp_connection_get_peer(ec, &peer, &port);
	if (!peer)
		return;
	if (client_xff && r->g->cfg->gw.trusted_hops && strlen(client_xff) < 1024)
		add_line(m, "X-Forwarded-For: ", client_xff, ", ", peer);
	else
		add_line(m, "X-Forwarded-For: ", peer, NULL, NULL);
}

/* The method's name on the request line. */
static const char *method_name(enum evhttp_cmd_type cmd)
{
	switch (cmd) {
	case EVHTTP_REQ_GET: return "GET";
	case EVHTTP_REQ_POST: return "POST";
	case EVHTTP_REQ_HEAD: return "HEAD";
	case EVHTTP_REQ_PUT: return "PUT";
	case EVHTTP_REQ_DELETE: return "DELETE";
	case EVHTTP_REQ_OPTIONS: return "OPTIONS";
	case EVHTTP_REQ_TRACE: return "TRACE";
	case EVHTTP_REQ_CONNECT: return "CONNECT";
	case EVHTTP_REQ_PATCH: return "PATCH";
	}
	return "GET";
}

void gw_upstream_forward(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct gw_up *up;
	struct gw_upconn *uc = NULL;
	struct evkeyvalq *ih;
	struct evkeyval *kv;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(r->req);
	const char *query, *verdict_hdr;
	struct evbuffer *m, *body;
	enum evhttp_cmd_type cmd;
	bool has_host = false;
	uint64_t now = gw_now_ns(), left_ms;
	uint32_t k, tmo;
	char num[24];
	const char *path;
	size_t blen, nf, i;
	bool *hop, hop_stack[HOPS_ON_STACK];

	if (!g->ups || r->up < 0 || r->up >= g->ups->n) {
		gw_sched_release(g->sched, &r->job, now);
		gw_respond(r, 502, "Bad Gateway", BODY_502, 0, false, false);
		return;
	}
	up = &g->ups->u[r->up];
	m = g->ups->msg;
	if (now < up->down_until_ns) {
		up_fail(r, up, GW_UP_SHED_DOWN, now);
		return;
	}
	/* A free slot: no forward, and its connection not still carrying one (a forward the
	 * gateway gave up on, gw_upstream_cancel, holds its slot until its answer comes). */
	for (k = 0; k < up->slots; k++)
		if (!up->c[k].r && !up->c[k].cli.busy) {
			uc = &up->c[k];
			break;
		}
	left_ms = r->job.deadline_ns > now ? (r->job.deadline_ns - now) / 1000000ull : 0;
	/* Not sent when what is left of the deadline is less than the upstream's measured time
	 * for this class (its estimate, 1 unit = 0.1 ms): it would spend the upstream on an
	 * answer nobody waits for. But a class whose estimate outgrew its clients' whole
	 * deadlines (a slow spell of the upstream's) would then never be sent, nor measured,
	 * again, even a request fresh in the queue: one such request a second goes anyway, a
	 * probe, and its time (cut at its deadline when the upstream is still slow) brings the
	 * estimate back down. "Whole": even a request with nine tenths of its deadline left
	 * would not be sent (fresh ones have nearly all of it). A request that merely waited
	 * too long in the queue is no probe: fresh ones of its kind would still be sent, and
	 * measure. */
	if (r->job.deadline_ns && r->job.cls < GW_MAX_CLASSES &&
	    (double)left_ms * 10.0 < g->sched->cls[r->job.cls].estimate) {
		uint64_t whole_ms = r->job.deadline_ns > r->job.admit_ns ?
				    (r->job.deadline_ns - r->job.admit_ns) / 1000000ull : 0;

		if (left_ms && (double)whole_ms * 9.0 < g->sched->cls[r->job.cls].estimate &&
		    now - g->ups->probe_ns[r->job.cls] >= 1000000000ull) {
			g->ups->probe_ns[r->job.cls] = now;
			g->ups->probes++;
		} else {
			left_ms = 0;
		}
	}
	if (!uc || (r->job.deadline_ns && !left_ms)) {
		/* No slot (the dispatcher checks first), or the deadline is as good as gone:
		 * never forwarded. */
		gw_sched_release(g->sched, &r->job, now);
		gw_shed(r, uc ? GW_SHED_EXPIRED : GW_SHED_QUEUE_FULL);
		return;
	}
	if (!uc->cli.base) {
		if (gw_upcli_init(&uc->cli, g->base, (struct sockaddr *)&up->sa, up->salen)) {
			gw_sched_release(g->sched, &r->job, now);
			gw_respond(r, 502, "Bad Gateway", BODY_502, 0, false, false);
			return;
		}
		uc->gen = up->gen;
	} else if (uc->gen != up->gen) {
		/* a reload resolved the name elsewhere: this connection goes to the old address */
		gw_upcli_set_addr(&uc->cli, (struct sockaddr *)&up->sa, up->salen);
		uc->gen = up->gen;
	}
	tmo = up->timeout_ms;
	if (r->job.deadline_ns && left_ms < tmo)
		tmo = (uint32_t)left_ms;

	/* The request: its line, the client's headers but the hops, the gateway's own. */
	cmd = evhttp_request_get_command(r->req);
	ih = evhttp_request_get_input_headers(r->req);
	nf = 0;
	TAILQ_FOREACH(kv, ih, next)
		nf++;
	hop = nf <= sizeof(hop_stack) ? hop_stack : malloc(nf);
	if (!hop || mark_hops(ih, nf, hop)) {
		if (hop != hop_stack)
			free(hop);
		gw_sched_release(g->sched, &r->job, now);
		gw_respond(r, 502, "Bad Gateway", BODY_502, 0, false, false);
		return;
	}
	/* A sign-in route's verdict header is the upstream's to write: the client's own is not
	 * passed on (an upstream, or a proxy before it, that echoes request headers must not
	 * hand a client's "X-Auth-Result: ok" back as if it were the verdict). */
	verdict_hdr = is_login(r) && g->cfg->routes[r->route].login.by == SL_VERDICT_HEADER ?
		      g->cfg->routes[r->route].login.by_name : NULL;
	query = evhttp_uri_get_query(uri);
	path = evhttp_uri_get_path(uri);
	if (!path)
		path = "";
	if (query)
		add_line6(m, method_name(cmd), " ", path, "?", query, " HTTP/1.1");
	else
		add_line6(m, method_name(cmd), " ", path, " HTTP/1.1", NULL, NULL);
	/* An absolute-form target names the host (RFC 9112 3.2.2: Host is ignored then), and
	 * named the tenant (gw_http.c, host_of): the upstream is told the same one, never the
	 * client's Host, so a request charged to one tenant is not served as another. */
	if (uri && evhttp_uri_get_scheme(uri) && evhttp_uri_get_host(uri)) {
		int port = evhttp_uri_get_port(uri);
		char pb[8];

		snprintf(pb, sizeof(pb), "%d", port);
		add_line(m, "Host: ", evhttp_uri_get_host(uri), port > 0 ? ":" : NULL,
			 port > 0 ? pb : NULL);
		has_host = true;
	}
	i = 0;
	TAILQ_FOREACH(kv, ih, next) {
		if (i >= nf || hop[i++] || hdr_kind(kv->key) != H_PASS ||
		    (verdict_hdr && !strcasecmp(kv->key, verdict_hdr)))
			continue;
		if (!strcasecmp(kv->key, "Host")) {
			if (has_host)
				continue; /* the target's authority was written above */
			has_host = true;
		}
		add_line(m, kv->key, ": ", kv->value, NULL);
	}
	if (hop != hop_stack)
		free(hop);
	if (!has_host) /* an HTTP/1.0 client's request: the upstream is given its own name */
		add_line(m, "Host: ", up->port ? up->host : "localhost", NULL, NULL);
	add_xff(r, m, evhttp_find_header(ih, "X-Forwarded-For"));
	add_line(m, "X-Forwarded-Proto: ", g->cfg->gw.tls.certificate[0] ? "https" : "http",
		 NULL, NULL);
	if (r->job.deadline_ns)
		add_line(m, "X-Request-Deadline-Ms: ", u64_dec(num, (unsigned long long)left_ms),
			 NULL, NULL);
	body = evhttp_request_get_input_buffer(r->req);
	blen = evbuffer_get_length(body);
	if (blen || cmd == EVHTTP_REQ_POST || cmd == EVHTTP_REQ_PUT || cmd == EVHTTP_REQ_PATCH)
		add_line(m, "Content-Length: ", u64_dec(num, (unsigned long long)blen), NULL, NULL);
	evbuffer_add(m, "\r\n", 2);
	evbuffer_add_buffer(m, body);

	uc->r = r;
	uc->cls = r->job.cls;
	if (uc->cls < GW_MAX_CLASSES)
		up->lim[uc->cls].inflight++;
	r->upc = uc;
	r->up_start_ns = now;
	up->busy++;
	up->forwarded++;
	if (gw_upcli_send(&uc->cli, m, cmd == EVHTTP_REQ_HEAD, tmo, GW_UP_MAX_HEAD,
			  up->max_response, on_up_done, uc)) {
		/* The connect failed at once (refused; a Unix socket missing or its backlog
		 * full): nothing was sent. */
		up_release(uc);
		mark_down(up, now);
		up_fail(r, up, GW_UP_DOWN, now);
	}
}

/* ---- reachability, for /readyz --------------------------------------------------------- */

static void probe_done(struct gw_up *up, int err)
{
	char why[96];

	if (err)
		snprintf(why, sizeof(why), "connect: %s", err == ETIMEDOUT ?
			 "no answer within 1 s" : strerror(err));
	set_reachable(up, !err, err ? why : NULL);
}

static void on_probe(struct gw_upcli *c, enum gw_upcli_err err, const struct gw_upcli_resp *resp,
		     void *arg)
{
	(void)err;
	(void)resp;
	probe_done(arg, c->conn_err);
}

/* A connect to @up, nothing sent, by the upstream client's own connect (so a probe and a
 * forward reach the same address alike and fail with the same errors): its outcome sets
 * @up's reachability (now, or when the connect completes, within a second). */
static void probe(struct gw_up *up, uint64_t now)
{
	struct gw_upcli *c = &up->probe;
	const struct sockaddr *sa = (const struct sockaddr *)&up->sa;
	int r;

	up->reach_ns = now;
	if (c->base ? gw_upcli_set_addr(c, sa, up->salen) :
		      gw_upcli_init(c, up->g->base, sa, up->salen))
		return; /* no memory: the last forward's word stands */
	r = gw_upcli_connect(c, 1000, on_probe, up);
	if (r)
		probe_done(up, r < 0 ? c->conn_err : 0);
}

const char *gw_upstreams_unready(struct gateway *g, uint64_t now)
{
	const char *why = NULL;
	int i;

	if (!g->ups)
		return NULL;
	for (i = 0; i < g->ups->n; i++) {
		struct gw_up *up = &g->ups->u[i];

		if (!up->live)
			continue;
		/* at most a probe a second, and only while someone asks */
		if (!up->probe.busy && (!up->reach_ns || now - up->reach_ns >= 1000000000ull)) {
			up->g = g;
			probe(up, now);
		}
		if (up->unreachable && !why)
			why = "upstream";
	}
	return why;
}

void gw_upstream_cancel(struct gw_req *r)
{
	if (r->upc) {
		r->upc->r = NULL;
		r->upc = NULL;
	}
}

void gw_upstreams_metrics(struct gateway *g, struct evbuffer *out)
{
	int i, k;

	if (!g->ups || !g->ups->n)
		return;
	evbuffer_add_printf(out, "# HELP sluice_gateway_upstream_requests_total Forwards to an "
			    "upstream by result: its answer's status class, or what failed "
			    "(down: connect refused, 429; timeout: 504; bad_response, too_big: "
			    "502; shed_down: never sent, the upstream being down).\n"
			    "# TYPE sluice_gateway_upstream_requests_total counter\n");
	for (i = 0; i < g->ups->n; i++)
		for (k = 0; k < GW_UP__N; k++)
			evbuffer_add_printf(out, "sluice_gateway_upstream_requests_total{upstream=\"%s\","
					    "result=\"%s\"} %llu\n", g->ups->u[i].url, result_names[k],
					    (unsigned long long)g->ups->u[i].results[k]);
	evbuffer_add_printf(out, "# HELP sluice_gateway_upstream_probes_total Requests sent although "
			    "their class's estimate was longer than their whole deadline: one a "
			    "second, so that such a class is measured again.\n"
			    "# TYPE sluice_gateway_upstream_probes_total counter\n"
			    "sluice_gateway_upstream_probes_total %llu\n",
			    (unsigned long long)g->ups->probes);
	evbuffer_add_printf(out, "# HELP sluice_gateway_upstream_in_flight Forwards waiting for "
			    "their answer, of the upstream's connections (slots).\n"
			    "# TYPE sluice_gateway_upstream_in_flight gauge\n");
	for (i = 0; i < g->ups->n; i++)
		evbuffer_add_printf(out, "sluice_gateway_upstream_in_flight{upstream=\"%s\"} %u\n",
				    g->ups->u[i].url, g->ups->u[i].busy);
	evbuffer_add_printf(out, "# HELP sluice_gateway_upstream_connects_total Connections opened "
			    "to the upstream (each slot keeps its own alive between forwards: "
			    "this grows when the upstream closes them, or an answer leaves one "
			    "untrusted).\n# TYPE sluice_gateway_upstream_connects_total counter\n");
	for (i = 0; i < g->ups->n; i++) {
		uint64_t n = 0;
		uint32_t j;

		for (j = 0; j < g->ups->u[i].slots; j++)
			n += g->ups->u[i].c[j].cli.connects;
		evbuffer_add_printf(out, "sluice_gateway_upstream_connects_total{upstream=\"%s\"} "
				    "%llu\n", g->ups->u[i].url, (unsigned long long)n);
	}
	evbuffer_add_printf(out, "# HELP sluice_gateway_upstream_slots Connections the upstream "
			    "is given (gateway.upstream.concurrency).\n"
			    "# TYPE sluice_gateway_upstream_slots gauge\n");
	for (i = 0; i < g->ups->n; i++)
		evbuffer_add_printf(out, "sluice_gateway_upstream_slots{upstream=\"%s\"} %u\n",
				    g->ups->u[i].url, g->ups->u[i].slots);
	evbuffer_add_printf(out, "# HELP sluice_gateway_upstream_limit Forwards of a route's "
			    "class allowed in flight to the upstream at once: learned from the "
			    "service time (gateway.upstream.adaptive), at most the ceiling.\n"
			    "# TYPE sluice_gateway_upstream_limit gauge\n");
	for (i = 0; i < g->ups->n; i++)
		for (k = 0; k < GW_MAX_CLASSES; k++)
			if (g->ups->u[i].lim[k].used)
				evbuffer_add_printf(out, "sluice_gateway_upstream_limit{upstream=\"%s\","
						    "route=\"%s\"} %.2f\n", g->ups->u[i].url,
						    g->sched->cls[k].name, g->ups->u[i].lim[k].limit);
	evbuffer_add_printf(out, "# HELP sluice_gateway_upstream_limit_ceiling The most the "
			    "limit may reach (routes[].concurrency, else the upstream's "
			    "connections).\n# TYPE sluice_gateway_upstream_limit_ceiling gauge\n");
	for (i = 0; i < g->ups->n; i++)
		for (k = 0; k < GW_MAX_CLASSES; k++)
			if (g->ups->u[i].lim[k].used)
				evbuffer_add_printf(out, "sluice_gateway_upstream_limit_ceiling{upstream="
						    "\"%s\",route=\"%s\"} %u\n", g->ups->u[i].url,
						    g->sched->cls[k].name, g->ups->u[i].lim[k].cap);
	evbuffer_add_printf(out, "# HELP sluice_gateway_upstream_class_in_flight Forwards of a "
			    "route's class waiting for their answer.\n"
			    "# TYPE sluice_gateway_upstream_class_in_flight gauge\n");
	for (i = 0; i < g->ups->n; i++)
		for (k = 0; k < GW_MAX_CLASSES; k++)
			if (g->ups->u[i].lim[k].used)
				evbuffer_add_printf(out, "sluice_gateway_upstream_class_in_flight{upstream="
						    "\"%s\",route=\"%s\"} %u\n", g->ups->u[i].url,
						    g->sched->cls[k].name, g->ups->u[i].lim[k].inflight);
	evbuffer_add_printf(out, "# HELP sluice_gateway_upstream_baseline_seconds The service "
			    "time the limit is judged against: the least of the last window.\n"
			    "# TYPE sluice_gateway_upstream_baseline_seconds gauge\n");
	for (i = 0; i < g->ups->n; i++)
		for (k = 0; k < GW_MAX_CLASSES; k++)
			if (g->ups->u[i].lim[k].used)
				evbuffer_add_printf(out, "sluice_gateway_upstream_baseline_seconds{"
						    "upstream=\"%s\",route=\"%s\"} %.6f\n",
						    g->ups->u[i].url, g->sched->cls[k].name,
						    g->ups->u[i].lim[k].base_ns / 1e9);
	evbuffer_add_printf(out, "# HELP sluice_gateway_upstream_limit_changes_total Times the "
			    "learned limit grew (up) or was cut (down).\n"
			    "# TYPE sluice_gateway_upstream_limit_changes_total counter\n");
	for (i = 0; i < g->ups->n; i++)
		for (k = 0; k < GW_MAX_CLASSES; k++)
			if (g->ups->u[i].lim[k].used)
				evbuffer_add_printf(out, "sluice_gateway_upstream_limit_changes_total{"
						    "upstream=\"%s\",route=\"%s\",direction=\"up\"} "
						    "%llu\nsluice_gateway_upstream_limit_changes_total{"
						    "upstream=\"%s\",route=\"%s\",direction=\"down\"} "
						    "%llu\n", g->ups->u[i].url, g->sched->cls[k].name,
						    (unsigned long long)g->ups->u[i].lim[k].increases,
						    g->ups->u[i].url, g->sched->cls[k].name,
						    (unsigned long long)g->ups->u[i].lim[k].decreases);
	for (i = 0; i < g->cfg->n_routes; i++)
		if (g->cfg->routes[i].login.from)
			break;
	if (i == g->cfg->n_routes)
		return;
	evbuffer_add_printf(out, "# HELP sluice_gateway_upstream_signin_verdicts_total Answers "
			    "to a sign-in route by how they were read: success, failure, or given "
			    "back (other_status, missing, unknown, malformed).\n"
			    "# TYPE sluice_gateway_upstream_signin_verdicts_total counter\n");
	for (i = 0; i < g->cfg->n_routes; i++) {
		if (!g->cfg->routes[i].login.from)
			continue;
		for (k = 0; k < GW_VERDICT__N; k++)
			evbuffer_add_printf(out, "sluice_gateway_upstream_signin_verdicts_total{"
					    "route=\"%s\",verdict=\"%s\"} %llu\n",
					    g->cfg->routes[i].name, gw_verdict_name(k),
					    (unsigned long long)g->ups->verdicts[i][k]);
	}
}
