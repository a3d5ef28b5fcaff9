// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The gateway's HTTP front. The order of work for a request is the order of its cost:
 * parse and route (microseconds, refused with a plain 4xx), the endpoint's own checks and
 * counters, admit (microseconds, refused with a 429), queue, and only then hash. A request
 * that will not be served never gets near a worker.
 *
 * Here: what the gateway serves (the endpoint table, each entry in its room), reading a
 * request (path, Host, tenant, route, deadline, client address, body) and handing it to
 * its endpoint; and every answer's bytes: the bodies, the headers, and the reject floor
 * that holds a refusal on a timer so its timing tells nothing. Connections are gw_conn.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <sodium.h>

#include "gw_internal.h"
#include "gw_pg.h"
#include "gw_upstream.h"
#include "log.h"

#define MAX_HOST 255

/* ---- the answers ------------------------------------------------------------------------ */

/* One body each, whatever the cause: the reason a login failed or a request was shed is
 * for our counters, not for the client. */
const char BODY_401[] = "{\"error\":\"invalid_credentials\"}";
const char BODY_401_TOKEN[] = "{\"error\":\"invalid_token\"}";
const char BODY_429[] = "{\"error\":\"throttled\",\"detail\":\"retry after the number of "
			"seconds in Retry-After\"}";
const char BODY_503[] = "{\"error\":\"unavailable\"}";
/* The stream job escalated this account, or flagged the password tried: the client must
 * complete a second factor elsewhere (docs/gateway.md, "Escalations"). */
const char BODY_STEP_UP[] = "{\"error\":\"step_up_required\"}";
/*
 * Interactive endpoints beyond /login answer every failed or throttled attempt before
 * authentication with one status and one body each, behind the reject floor, with no
 * Retry-After and no RateLimit headers: whoever reads those carefully is probing the
 * thresholds (docs/endpoints.md). /login does the same with gateway.login_uniform. Each
 * endpoint names its answer in its table entry (gw_endpoint.refusal).
 */
const char BODY_SIGNIN[] = "{\"error\":\"invalid_credentials\",\"message\":\"We couldn't "
			   "sign you in. Please try again.\"}";
const char BODY_MFA_FAIL[] = "{\"error\":\"invalid_code\",\"message\":\"We couldn't verify "
			     "that code. Please try again.\"}";
const char BODY_LINK_FAIL[] = "{\"error\":\"invalid_link\",\"message\":\"We couldn't use "
			      "this link. Please ask for a new one.\"}";
const char BODY_RESET_SENT[] = "{\"status\":\"accepted\",\"message\":\"If an account "
			       "matches, we have sent it a link to reset its password.\"}";
const char BODY_REGISTER_SENT[] = "{\"status\":\"accepted\",\"message\":\"We have sent a "
				  "message to that address. Follow it to finish signing up.\"}";
const char BODY_OTP_SENT[] = "{\"status\":\"sent\"}";
const char BODY_INVALID_CLIENT[] = "{\"error\":\"invalid_client\"}";
const char BODY_INVALID_GRANT[] = "{\"error\":\"invalid_grant\"}";
const char BODY_UNAUTHORIZED_CLIENT[] = "{\"error\":\"unauthorized_client\"}";

/* ---- what is served --------------------------------------------------------------------- */

const struct gw_endpoint *const gw_endpoints[K__ALL] = {
	[K_LOGIN] = &gw_endpoint_login,
	[K_VALIDATE] = &gw_endpoint_validate,
	[K_INTROSPECT] = &gw_endpoint_introspect,
	[K_TOKEN] = &gw_endpoint_token,
	[K_MFA_SEND] = &gw_endpoint_mfa_send,
	[K_MFA_VERIFY] = &gw_endpoint_mfa_verify,
	[K_RESET] = &gw_endpoint_reset,
	[K_REGISTER] = &gw_endpoint_register,
	[K_MAGIC] = &gw_endpoint_magic,
	[K_PROXY] = &gw_endpoint_proxy,
};

/* Upstream mode: admitted like any route, then forwarded when the scheduler starts it. The
 * body is not parsed: it goes upstream as it came (bounded by gateway.max_body). */
static void proxy_start(struct gw_req *r)
{
	if (r->route >= 0 && r->g->cfg->routes[r->route].login.from)
		gw_login_upstream_start(r);
	else
		gw_admit(r);
}

static void proxy_run(struct gw_req *r)
{
	/* Never: a forward is always "pooled" (it waits for a connection to the upstream). */
	gw_respond(r, 502, "Bad Gateway", BODY_503, 0, false, false);
}

const struct gw_endpoint gw_endpoint_proxy = {
	.path = "(upstream)",
	.pooled = true,
	.body_optional = true,
	.start = proxy_start,
	.run = proxy_run,
};

/* Which built-in endpoint serves @path; -1 if none. */
static int kind_of(const char *path)
{
	int k;

	for (k = 0; k < K__MAX; k++) {
		const struct gw_endpoint *e = gw_endpoints[k];
		size_t n = strlen(e->path);

		if (e->prefix ? !strncmp(path, e->path, n) && path[n] && !strchr(path + n, '/') :
				!strcmp(path, e->path))
			return k;
	}
	return -1;
}

/* ---- replies ---------------------------------------------------------------------------- */

static void add_common_headers(struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Type", "application/json");
	evhttp_add_header(h, "Cache-Control", "no-store");
}

static void count_status(struct gateway *g, int code)
{
	if (code >= 0 && code < 600)
		g->st.status[code]++;
}

/* An immediate answer for requests refused before admission: client errors with nothing
 * to hide, so no floor. @detail is JSON-escaped by the caller (ours are plain ASCII). */
static void reply_plain(struct gateway *g, struct evhttp_request *req, int code,
			const char *reason, const char *error, const char *detail)
{
	struct evbuffer *b = evhttp_request_get_output_buffer(req);

	add_common_headers(req);
	if (code == 405) {
		const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
		int k;

		for (k = 0; path && k < K__MAX; k++)
			if (!strcmp(path, gw_endpoints[k]->path))
				evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
						  sl_method_name(gw_endpoints[k]->method));
	}
	if (detail)
		evbuffer_add_printf(b, "{\"error\":\"%s\",\"detail\":\"%s\"}", error, detail);
	else
		evbuffer_add_printf(b, "{\"error\":\"%s\"}", error);
	count_status(g, code);
	evhttp_send_reply(req, code, reason, NULL);
}

static void line_leave(struct gw_req *r);

/* One request is kept when freed for the next: struct gw_req is a few KiB, past glibc's
 * tcache, and each calloc of it consolidated the fast bins (malloc_consolidate) where a
 * memset is all it needs (callgrind, docs/performance.md, "The listener's side"). Not
 * under ASan, which is to see a freed request used. */
#if defined(__SANITIZE_ADDRESS__)
#define GW_REQ_SPARE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GW_REQ_SPARE 0
#endif
#endif
#ifndef GW_REQ_SPARE
#define GW_REQ_SPARE 1
#endif

static struct gw_req *req_alloc(struct gateway *g)
{
	struct gw_req *r = g->spare;

	if (!r)
		return calloc(1, sizeof(*r));
	g->spare = NULL;
	memset(r, 0, sizeof(*r));
	return r;
}

void gw_req_spare_free(struct gateway *g)
{
	free(g->spare);
	g->spare = NULL;
}

static void req_free(struct gw_req *r)
{
	struct gateway *g = r->g;
	bool freed_hold = r->hold != NULL;

	if (r->hold) {
		event_free(r->hold);
		r->hold = NULL;
		g->held--;
	}
	if (r->in_line)
		line_leave(r);
	gw_chain_detach(r);
	gw_upstream_cancel(r);
	if (r->prev)
		r->prev->next = r->next;
	else
		g->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	g->n_reqs--;
	sodium_memzero(&r->work, sizeof(r->work));
	sodium_memzero(r->secret, sizeof(r->secret));
	sodium_memzero(r->bearer, sizeof(r->bearer));
	if (GW_REQ_SPARE && !g->spare)
		g->spare = r;
	else
		free(r);
	if (freed_hold)
		gw_hold_line(g); /* a timer came free: the oldest in line takes it */
}

void gw_reject(struct gw_req *r, int code, const char *reason, const char *error,
	       const char *detail)
{
	struct gateway *g = r->g;
	struct evhttp_request *req = r->req;

	req_free(r);
	reply_plain(g, req, code, reason, error, detail);
}

void gw_send_now(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct evhttp_request *req = r->req;
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct evhttp_connection *ec;
	char ra[16];

	if (!r->raw)
		add_common_headers(req);
	if (r->retry_after) {
		snprintf(ra, sizeof(ra), "%u", r->retry_after);
		evhttp_add_header(h, "Retry-After", ra);
	}
	if (r->code == 401 && gw_endpoints[r->kind]->www_authenticate)
		evhttp_add_header(h, "WWW-Authenticate", gw_endpoints[r->kind]->www_authenticate);
	if (r->code == 429 && r->rl_ctr > 0 && r->rl_rate > 0) {
		/* draft-ietf-httpapi-ratelimit-headers, structured fields: the policy that
		 * refused (quota q over window w seconds) and what is left of it (r, none)
		 * until t seconds from now. Machine-facing endpoints only. */
		char v[128];
		double w = r->rl_burst / r->rl_rate;

		snprintf(v, sizeof(v), "\"%s\";q=%.0f;w=%.0f", sl_counter_name(r->rl_ctr),
			 r->rl_burst, w < 1 ? 1 : w);
		evhttp_add_header(h, "RateLimit-Policy", v);
		snprintf(v, sizeof(v), "\"%s\";r=0;t=%u", sl_counter_name(r->rl_ctr),
			 r->retry_after);
		evhttp_add_header(h, "RateLimit", v);
	}
	if (r->ctype) {
		evhttp_remove_header(h, "Content-Type");
		evhttp_add_header(h, "Content-Type", r->ctype);
	}
	if (r->body)
		evbuffer_add(evhttp_request_get_output_buffer(req), r->body, strlen(r->body));
	count_status(g, r->code);
	if (r->code >= 200 && r->code < 300 && r->job.tenant < GW_MAX_TENANTS) {
		/* Goodput: answers the client was still waiting for (its deadline, stamped at
		 * admission: the header's or the default). */
		g->ts[r->job.tenant].answered_2xx++;
		if (!r->job.deadline_ns || gw_now_ns() <= r->job.deadline_ns)
			g->ts[r->job.tenant].goodput++;
	}
	/* When the client has gone, evhttp frees the request here instead of sending (it has
	 * no connection then). Sent, the answer is written at once (gw_write_now). */
	ec = evhttp_request_get_connection(req);
	evhttp_send_reply(req, r->code, r->reason, NULL);
	if (ec)
		gw_write_now(evhttp_connection_get_bufferevent(ec));
	req_free(r);
}

static struct timeval tv_until(uint64_t due, uint64_t now)
{
	uint64_t d = due > now ? due - now : 0;
	struct timeval tv = { .tv_sec = (time_t)(d / 1000000000ull),
			      .tv_usec = (suseconds_t)(d % 1000000000ull / 1000) };

	return tv;
}

static void on_hold_done(evutil_socket_t fd, short what, void *arg)
{
	struct gw_req *r = arg;
	uint64_t now = gw_now_ns();

	(void)fd;
	(void)what;
	/* libevent's timers run on a coarse clock and may fire a few ms early: the floor is a
	 * promise, so wait out the rest. */
	if (now < r->hold_until_ns) {
		struct timeval tv = tv_until(r->hold_until_ns + 1000, now);

		if (!evtimer_add(r->hold, &tv))
			return;
	}
	gw_send_now(r);
}

/* ---- the hold line ------------------------------------------------------------------------
 * At most max_held answers wait on floor timers at once. Past that an answer does not go
 * early (an answer sent at once would time what the floor hides: 1 ms for a refusal, the
 * hash for a wrong password): it waits in line, oldest first, and takes the next timer that
 * comes free, leaving at its own due time or later, never sooner. What the line holds is
 * bounded by the connections (max_connections: accepting pauses there), not by timers; a
 * timer that cannot be made (out of memory) leaves the answer in line for the tick to retry.
 */
static void line_leave(struct gw_req *r)
{
	struct gateway *g = r->g;

	if (r->line_prev)
		r->line_prev->line_next = r->line_next;
	else
		g->line_head = r->line_next;
	if (r->line_next)
		r->line_next->line_prev = r->line_prev;
	else
		g->line_tail = r->line_prev;
	r->line_prev = r->line_next = NULL;
	r->in_line = false;
	g->line_len--;
}

static void line_join(struct gw_req *r)
{
	struct gateway *g = r->g;

	r->line_next = NULL;
	r->line_prev = g->line_tail;
	if (g->line_tail)
		g->line_tail->line_next = r;
	else
		g->line_head = r;
	g->line_tail = r;
	r->in_line = true;
	g->line_len++;
	g->st.floor_queued++;
}

/* Hold @r on a timer until r->hold_until_ns; false when no timer can be made. */
static bool hold_arm(struct gw_req *r, uint64_t now)
{
	struct gateway *g = r->g;
	struct timeval tv = tv_until(r->hold_until_ns, now);

	r->hold = evtimer_new(g->base, on_hold_done, r);
	if (r->hold && !evtimer_add(r->hold, &tv)) {
		g->held++;
		g->st.floor_held++;
		return true;
	}
	if (r->hold)
		event_free(r->hold);
	r->hold = NULL;
	return false;
}

void gw_hold_line(struct gateway *g)
{
	while (g->line_head && g->held < g->cfg->gw.max_held) {
		struct gw_req *r = g->line_head;
		uint64_t now = gw_now_ns();

		if (now >= r->hold_until_ns) {
			/* Due already: its wait in line was its floor. */
			line_leave(r);
			gw_send_now(r);
			continue;
		}
		if (!hold_arm(r, now))
			return; /* stays first in line; the tick tries again */
		line_leave(r);
	}
}

/*
 * Answer @r with @code. Rejections (@floor) leave no sooner than arrival + reject_floor_ms,
 * so a wrong password, an unknown account and a shed request cannot be told apart by their
 * timing; they wait on a timer, never a thread, or in line for one (above).
 */
void gw_respond(struct gw_req *r, int code, const char *reason, const char *body,
		uint32_t retry_after, bool floor, bool longer)
{
	struct gateway *g = r->g;
	uint64_t floor_ns = (uint64_t)g->cfg->gw.reject_floor_ms * 1000000ull, now, due;

	r->code = code;
	r->reason = reason;
	r->body = body;
	r->retry_after = retry_after;
	if (!floor)
		floor_ns = 0;
	if (floor_ns || r->extra_ns) {
		/* A client back before its Retry-After is held twice as long; an escalated
		 * account, its delay longer. */
		due = r->arrival_ns + (longer ? 2 * floor_ns : floor_ns) + r->extra_ns;
		now = gw_now_ns();
		if (due > now) {
			r->hold_until_ns = due;
			if (g->held < g->cfg->gw.max_held && !g->line_head && hold_arm(r, now))
				return;
			line_join(r);
			return;
		}
	}
	gw_send_now(r);
}

void gw_respond_refusal(struct gw_req *r)
{
	const struct gw_answer *u = gw_endpoints[r->kind]->refusal;

	gw_respond(r, u->code, u->reason, u->body, 0, true, false);
}

/* ---- reading a request ------------------------------------------------------------------ */

static int method_of(struct evhttp_request *req)
{
	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_GET: return SL_M_GET;
	case EVHTTP_REQ_POST: return SL_M_POST;
	case EVHTTP_REQ_PUT: return SL_M_PUT;
	case EVHTTP_REQ_DELETE: return SL_M_DELETE;
	case EVHTTP_REQ_PATCH: return SL_M_PATCH;
	case EVHTTP_REQ_HEAD: return SL_M_HEAD;
	case EVHTTP_REQ_OPTIONS: return SL_M_OPTIONS;
	default: return -1;
	}
}

/* @v (a Host value, or an authority's host) to the form the config uses: lowercase, no
 * port, no trailing dot. 1 with @out set, -1 when malformed. */
static int host_norm(const char *v, char *out, size_t n)
{
	size_t len = strlen(v), i;

	if (!len || len > MAX_HOST || len >= n)
		return -1;
	if (v[0] == '[') {
		const char *close = strchr(v, ']');

		/* An IP literal: never a configured name, so it only needs to be sane. */
		if (!close)
			return -1;
		len = (size_t)(close - v) + 1;
	} else {
		const char *colon = strchr(v, ':');

		if (colon)
			len = (size_t)(colon - v);
	}
	for (i = 0; i < len; i++) {
		char c = v[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		      c == '[' || c == ']' || (v[0] == '[' && c == ':')))
			return -1;
		out[i] = c;
	}
	while (len && out[len - 1] == '.')
		len--;
	out[len] = '\0';
	return len ? 1 : -1;
}

/*
 * The host a request names, for its tenant. An absolute-form target's authority wins over
 * Host (RFC 9112 3.2.2: the server ignores Host then), as the edge names the tenant: a
 * request cannot be charged to one tenant at the edge and served as another here. Its
 * scheme must be http or https, without userinfo. 1 with @out set, 0 when there is none
 * (HTTP/1.0 without Host), -1 when malformed or repeated. The raw head has refused an
 * HTTP/1.1 request without Host and any with two (gw_head.h); this does not rely on it.
 */
static int host_of(struct evhttp_request *req, char *out, size_t n)
{
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
	const char *scheme = u ? evhttp_uri_get_scheme(u) : NULL;
	const struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const struct evkeyval *kv;
	const char *v = NULL;

	TAILQ_FOREACH(kv, h, next) {
		if (strcasecmp(kv->key, "Host"))
			continue;
		if (v)
			return -1; /* RFC 9112: more than one Host is a 400 */
		v = kv->value;
	}
	if (scheme) {
		const char *authority = evhttp_uri_get_host(u);

		if ((strcasecmp(scheme, "http") && strcasecmp(scheme, "https")) || !authority ||
		    evhttp_uri_get_userinfo(u))
			return -1;
		return host_norm(authority, out, n);
	}
	return v ? host_norm(v, out, n) : 0;
}

/* X-Request-Deadline-Ms: the client's remaining patience. 0 with *ms set, 1 when absent,
 * -1 when malformed. */
static int client_deadline(struct evhttp_request *req, uint32_t *ms)
{
	const char *v = evhttp_find_header(evhttp_request_get_input_headers(req),
					   "X-Request-Deadline-Ms");
	char *end;
	unsigned long x;

	if (!v)
		return 1;
	while (*v == ' ')
		v++;
	if (*v < '0' || *v > '9')
		return -1;
	errno = 0;
	x = strtoul(v, &end, 10);
	while (*end == ' ')
		end++;
	if (*end || errno || x == 0)
		return -1;
	*ms = x > 0xffffffffu ? 0xffffffffu : (uint32_t)x;
	return 0;
}

/*
 * The client's address into @out (gw_addr.h): the peer, or with trusted_hops the entry our
 * outermost proxy wrote into X-Forwarded-For, every line of it read whole. 0, or -1 when
 * that header cannot be read (fewer entries than hops, or one of our proxies' entries not
 * an address): the caller refuses it, for the peer is a proxy of ours and its bucket is
 * everybody's. No header at all: the peer (a client that came around the proxies).
 */
static int client_of(struct gateway *g, struct evhttp_request *req, struct gw_addr *out)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	const struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const struct evkeyval *kv;
	const char *some[16], **xff = some;
	struct gw_addr peer;
	int n = 0, src;

	memset(&peer, 0, sizeof(peer));
	if (evcon)
		gw_addr_from_sockaddr(evhttp_connection_get_addr(evcon), &peer);
	*out = peer;
	if (!g->cfg->gw.trusted_hops)
		return 0;
	TAILQ_FOREACH(kv, h, next)
		n += !strcasecmp(kv->key, "X-Forwarded-For");
	if (n > (int)(sizeof(some) / sizeof(some[0]))) {
		xff = malloc((size_t)n * sizeof(*xff));
		if (!xff)
			return -1;
	}
	n = 0;
	TAILQ_FOREACH(kv, h, next)
		if (!strcasecmp(kv->key, "X-Forwarded-For"))
			xff[n++] = kv->value;
	src = gw_client_addr(&peer, xff, n, g->cfg->gw.trusted_hops, out);
	if (xff != some)
		free(xff);
	if (src == GW_ADDR_XFF) {
		g->st.xff_used++;
		return 0;
	}
	if (src == GW_ADDR_XFF_MISSING) {
		g->st.xff_ignored++;
		return 0;
	}
	g->front.xff_refused++;
	return -1;
}

/* Pull the body into one piece; the password in it is wiped after parsing. */
static const char *body_of(struct evhttp_request *req, size_t *len)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);

	*len = evbuffer_get_length(in);
	if (!*len)
		return "";
	return (const char *)evbuffer_pullup(in, -1);
}

static void wipe_body(struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);

	if (len) {
		sodium_memzero(evbuffer_pullup(in, -1), len);
		evbuffer_drain(in, len);
	}
}

/* The bearer token of @req into @token (NUL-terminated); its length, 0 if none. */
size_t gw_bearer_of(struct evhttp_request *req, char token[GW_TOKEN_MAX + 1])
{
	const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req),
					      "Authorization");
	size_t tlen;

	if (!auth || strncasecmp(auth, "Bearer ", 7))
		return 0;
	auth += 7;
	while (*auth == ' ')
		auth++;
	tlen = strnlen(auth, GW_TOKEN_MAX + 1);
	if (tlen > GW_TOKEN_MAX)
		return 0;
	memcpy(token, auth, tlen);
	token[tlen] = '\0';
	return tlen;
}

/* The body's fields, for endpoints that read one. 0, or an answer has been sent. */
static int read_body(struct gw_req *r)
{
	const struct gw_endpoint *e = gw_endpoints[r->kind];
	struct evhttp_request *req = r->req;
	char err[160], detail[200];
	const char *body;
	size_t blen, i, o = 0;
	int type, ret;

	if (!e->fields || r->method != SL_M_POST)
		return 0;
	/* "Continue" on a sign-in link: a form with no fields. */
	if (e->body_optional && !evbuffer_get_length(evhttp_request_get_input_buffer(req)))
		return 0;
	type = gw_body_type(evhttp_find_header(evhttp_request_get_input_headers(req),
					       "Content-Type"));
	if (type == GW_BODY_OTHER) {
		wipe_body(req);
		gw_reject(r, 415, "Unsupported Media Type", "unsupported_media_type",
			  "send application/json or application/x-www-form-urlencoded");
		return -1;
	}
	body = body_of(req, &blen);
	ret = e->fields(r, type, body, blen, err, sizeof(err));
	wipe_body(req);
	if (!ret)
		return 0;
	/* Our messages are ASCII except quoted field names: escape quotes. */
	for (i = 0; err[i] && o + 2 < sizeof(detail); i++) {
		if (err[i] == '"' || err[i] == '\\')
			detail[o++] = '\\';
		detail[o++] = err[i];
	}
	detail[o] = '\0';
	gw_reject(r, 400, "Bad Request", "bad_request", detail);
	return -1;
}

/*
 * GET|HEAD /healthz: the loop is answering. GET|HEAD /readyz: 200 when this node should get
 * traffic, 503 when not (draining, or a daemon check failed: the edge detached, ...). Any
 * Host, before tenants and routes, and at no cost: a load balancer's probe. The body is the
 * status alone: why a node is not ready is for the operator (the daemon logs it when the
 * answer changes), not for whoever asks here.
 */
static void reply_health(struct gateway *g, struct evhttp_request *req, int method,
			 bool readiness)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct evbuffer *b = evhttp_request_get_output_buffer(req);
	const char *why = NULL;
	int code = 200;

	if (method != SL_M_GET && method != SL_M_HEAD) {
		add_common_headers(req);
		evhttp_add_header(h, "Allow", "GET, HEAD");
		evbuffer_add_printf(b, "{\"error\":\"method_not_allowed\"}");
		count_status(g, 405);
		evhttp_send_reply(req, 405, "Method Not Allowed", NULL);
		return;
	}
	if (readiness) {
		/* With credentials_db.fail = "closed" and the database unreachable every login
		 * here is a 503: the balancer should send them to a node whose database answers. */
		why = g->draining ? "draining" :
		      g->pg && g->cfg->gw.db.fail == SL_DB_FAIL_CLOSED && !gw_pg_up(g->pg) ?
		      "credentials_db" : g->ready ? g->ready(g->ready_arg) : NULL;
		if (!why)
			why = gw_upstreams_unready(g, gw_now_ns());
		code = why ? 503 : 200;
	}
	add_common_headers(req);
	evbuffer_add_printf(b, "{\"status\":\"%s\"}",
			    !readiness ? "alive" : why ? "not ready" : "ready");
	count_status(g, code);
	evhttp_send_reply(req, code, code == 200 ? "OK" : "Service Unavailable", NULL);
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct gateway *g = arg;
	const struct sl_config *c = g->cfg;
	const struct gw_endpoint *e;
	struct gw_req *r;
	struct gw_addr client;
	char host[MAX_HOST + 1];
	const char *path;
	uint32_t dl_ms = c->gw.default_deadline_ms;
	uint64_t now = gw_now_ns();
	int method, ti, slot, ri, kind, hr, up;

	g->st.requests++;
	gw_conn_request(g, req);

	method = method_of(req);
	path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	if (!path || path[0] != '/' || strlen(path) >= 1024) {
		reply_plain(g, req, 400, "Bad Request", "bad_request", "malformed request path");
		return;
	}
	if (!strcmp(path, "/healthz") || !strcmp(path, "/readyz")) {
		reply_health(g, req, method, path[1] == 'r');
		return;
	}
	hr = host_of(req, host, sizeof(host));
	if (hr < 0) {
		reply_plain(g, req, 400, "Bad Request", "bad_request",
			    "malformed Host header or request-target authority");
		return;
	}
	ti = hr ? sl_config_tenant_by_host(c, host) : c->default_tenant;
	if (ti < 0) {
		reply_plain(g, req, 421, "Misdirected Request", "unknown_host",
			    "no tenant serves this Host and there is no \\\"default\\\" tenant");
		return;
	}
	slot = gw_sched_slot(g->sched, ti);
	if (slot < 0) {
		reply_plain(g, req, 503, "Service Unavailable", "unavailable", NULL);
		return;
	}
	ri = method < 0 ? -1 : sl_config_route(c, (uint8_t)method, path);
	if (ri < 0) {
		reply_plain(g, req, 404, "Not Found", "no_route", "no route for this method and path");
		return;
	}
	up = gw_upstream_of(g, ri, ti);
	kind = up >= 0 ? K_PROXY : kind_of(path);
	if (kind < 0) {
		reply_plain(g, req, 404, "Not Found", "no_handler", "this gateway serves /login, "
			    "/token, /token/validate, /introspect, /mfa/send, /mfa/verify, "
			    "/password-reset, /register and /magic/{token}");
		return;
	}
	e = gw_endpoints[kind];
	/* A forward takes whatever method its route matched. */
	if (kind != K_PROXY && method != e->method && !(e->method2 && method == e->method2)) {
		reply_plain(g, req, 405, "Method Not Allowed", "method_not_allowed", NULL);
		return;
	}
	if (client_deadline(req, &dl_ms) < 0) {
		reply_plain(g, req, 400, "Bad Request", "bad_request",
			    "X-Request-Deadline-Ms must be a positive number of milliseconds");
		return;
	}
	if (dl_ms > c->gw.max_deadline_ms)
		dl_ms = c->gw.max_deadline_ms;
	if (client_of(g, req, &client)) {
		reply_plain(g, req, 400, "Bad Request", "bad_request", "X-Forwarded-For must end "
			    "in one address per trusted proxy (gateway.trusted_hops)");
		return;
	}

	r = req_alloc(g);
	if (!r) {
		reply_plain(g, req, 503, "Service Unavailable", "unavailable", NULL);
		return;
	}
	r->g = g;
	r->req = req;
	r->arrival_ns = now;
	r->kind = kind;
	r->up = up;
	r->route = ri;
	r->method = method;
	snprintf(r->tenant, sizeof(r->tenant), "%s", c->tenants[ti].name);
	r->tenant_idx = ti;
	r->client = client;
	r->next = g->reqs;
	if (g->reqs)
		g->reqs->prev = r;
	g->reqs = r;
	g->n_reqs++;
	if (e->prefix)
		snprintf(r->link, sizeof(r->link), "%s", path + strlen(e->path));

	/* The body: parsed and checked before admission, so a malformed request costs
	 * neither budget nor hash. */
	if (read_body(r))
		return;
	if (kind == K_PROXY && c->routes[ri].login.from) {
		char err[160], *q;

		if (gw_upstream_login_fields(r, err, sizeof(err))) {
			for (q = err; *q; q++) /* into a JSON string: no quote, no backslash */
				if (*q == '"' || *q == '\\')
					*q = '\'';
			gw_reject(r, 400, "Bad Request", "bad_request", err);
			return;
		}
	}

	r->job.tenant = (uint16_t)slot;
	r->job.cls = (uint16_t)gw_sched_class(g->sched, ri);
	r->job.pooled = e->pooled;
	r->job.db = c->routes[ri].db;
	r->job.deadline_ns = now + (uint64_t)dl_ms * 1000000ull;
	g->ts[slot].requests++;
	/* The endpoint's own checks and counters; admission follows their answer. */
	e->start(r);
}

/* ---- listening -------------------------------------------------------------------------- */

void gw_http_limits(struct gateway *g)
{
	/* evhttp's inactivity timeout is the backstop for slow readers of our answers; twice
	 * the request deadline, so the deadline (gw_conn_sweep) is what closes idle and
	 * dripping connections, and is counted. */
	uint64_t ms = 2ull * g->cfg->gw.request_timeout_ms;
	struct timeval tv = { .tv_sec = (time_t)(ms / 1000),
			      .tv_usec = (suseconds_t)(ms % 1000) * 1000 };

	evhttp_set_max_body_size(g->http, g->cfg->gw.max_body);
	evhttp_set_max_headers_size(g->http, g->cfg->gw.max_headers);
	evhttp_set_timeout_tv(g->http, &tv);
}

static int split_listen(const char *s, char *host, size_t n, uint16_t *port)
{
	const char *colon;
	long p;
	char *end;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':' || (size_t)(close - s) >= n)
			return -EINVAL;
		memcpy(host, s + 1, (size_t)(close - s - 1));
		host[close - s - 1] = '\0';
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || (size_t)(colon - s) >= n)
			return -EINVAL;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
	}
	p = strtol(colon + 1, &end, 10);
	if (*end || p < 1 || p > 65535)
		return -EINVAL;
	*port = (uint16_t)p;
	return 0;
}

int gw_http_listen(struct gateway *g)
{
	char host[128];
	uint16_t port;

	g->http = evhttp_new(g->base);
	if (!g->http)
		return -1;
	evhttp_set_allowed_methods(g->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
				   EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
				   EVHTTP_REQ_PATCH);
	evhttp_set_gencb(g->http, on_request, g);
	evhttp_set_bevcb(g->http, gw_conn_new, g);
	gw_http_limits(g);
	if (split_listen(g->cfg->gw.listen, host, sizeof(host), &port)) {
		log_error("gateway: cannot parse gateway.listen '%s'", g->cfg->gw.listen);
		return -1;
	}
	g->bound = evhttp_bind_socket_with_handle(g->http, host, port);
	if (!g->bound) {
		log_error("gateway: cannot listen on %s: %s", g->cfg->gw.listen, strerror(errno));
		return -1;
	}
	g->listener = evhttp_bound_socket_get_listener(g->bound);
	return 0;
}
