// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The gateway's HTTP front and its glue (see gateway.h). The order of work for a request is
 * the order of its cost: parse and route (microseconds, refused with a plain 4xx), admit
 * (microseconds, refused with a 429), queue, and only then hash. A request that will not be
 * served never gets near a worker.
 *
 * Connections: evhttp in libevent 2.1 has no connection limit and no whole-request
 * deadline, only an idle timeout that a client dripping one byte at a time keeps resetting.
 * The gateway supplies the bufferevent of every connection (evhttp_set_bevcb) and keeps a
 * reference to it, which gives it the connection count (accept pauses at
 * gateway.max_connections) and a handle to close a connection that has not delivered a
 * whole request within gateway.request_timeout_ms. evhttp's own release of a connection is
 * seen by the sweep (its callbacks are cleared) and the reference dropped then.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <sodium.h>

#include "gateway.h"
#include "gw_addr.h"
#include "gw_body.h"
#include "gw_client.h"
#include "gw_creds.h"
#include "gw_deliver.h"
#include "gw_hist.h"
#include "gw_ladder.h"
#include "gw_pool.h"
#include "gw_sched.h"
#include "gw_token.h"
#include "gw_vault.h"
#include "json.h"
#include "log.h"
#include "store.h"
#include "stream.h"

#define TICK_MS 10
#define SWEEP_EVERY 5          /* ticks: connections are swept every 50 ms */
#define CONN_BUCKETS 4096
#define MAX_HOST 255

/* One body each, whatever the cause: the reason a login failed or a request was shed is
 * for our counters, not for the client. */
static const char BODY_401[] = "{\"error\":\"invalid_credentials\"}";
static const char BODY_401_TOKEN[] = "{\"error\":\"invalid_token\"}";
static const char BODY_429[] = "{\"error\":\"throttled\",\"detail\":\"retry after the number "
			       "of seconds in Retry-After\"}";
static const char BODY_503[] = "{\"error\":\"unavailable\"}";
/* The stream job escalated this account, or flagged the password tried: the client must
 * complete a second factor elsewhere (docs/gateway.md, "Escalations"). */
static const char BODY_STEP_UP[] = "{\"error\":\"step_up_required\"}";
/*
 * Interactive endpoints beyond /login answer every failed or throttled attempt before
 * authentication with one status and one body each, behind the reject floor, with no
 * Retry-After and no RateLimit headers: whoever reads those carefully is probing the
 * thresholds (docs/endpoints.md). /login does the same with gateway.login_uniform.
 */
static const char BODY_SIGNIN[] = "{\"error\":\"invalid_credentials\",\"message\":\"We "
				  "couldn't sign you in. Please try again.\"}";
static const char BODY_MFA_FAIL[] = "{\"error\":\"invalid_code\",\"message\":\"We couldn't "
				    "verify that code. Please try again.\"}";
static const char BODY_LINK_FAIL[] = "{\"error\":\"invalid_link\",\"message\":\"We couldn't "
				     "use this link. Please ask for a new one.\"}";
static const char BODY_RESET_SENT[] = "{\"status\":\"accepted\",\"message\":\"If an account "
				      "matches, we have sent it a link to reset its password.\"}";
static const char BODY_REGISTER_SENT[] = "{\"status\":\"accepted\",\"message\":\"We have "
					 "sent a message to that address. Follow it to finish "
					 "signing up.\"}";
static const char BODY_OTP_SENT[] = "{\"status\":\"sent\"}";
static const char BODY_INVALID_CLIENT[] = "{\"error\":\"invalid_client\"}";
static const char BODY_INVALID_GRANT[] = "{\"error\":\"invalid_grant\"}";
static const char BODY_UNAUTHORIZED_CLIENT[] = "{\"error\":\"unauthorized_client\"}";

enum kind {
	K_LOGIN = 0,
	K_VALIDATE,
	K_INTROSPECT,
	K_TOKEN,
	K_MFA_SEND,
	K_MFA_VERIFY,
	K_RESET,
	K_REGISTER,
	K_MAGIC,
	K__MAX
};

/* Each handler must also be routed in the config, which gives its cost class. */
static const struct {
	const char *path;
	uint8_t method;
	uint8_t method2;  /* a second method, or 0 */
	bool prefix;      /* path + one segment: /magic/{token} */
} handlers[K__MAX] = {
	[K_LOGIN] = { "/login", SL_M_POST, 0, false },
	[K_VALIDATE] = { "/token/validate", SL_M_GET, 0, false },
	[K_INTROSPECT] = { "/introspect", SL_M_POST, 0, false },
	[K_TOKEN] = { "/token", SL_M_POST, 0, false },
	[K_MFA_SEND] = { "/mfa/send", SL_M_POST, 0, false },
	[K_MFA_VERIFY] = { "/mfa/verify", SL_M_POST, 0, false },
	[K_RESET] = { "/password-reset", SL_M_POST, 0, false },
	[K_REGISTER] = { "/register", SL_M_POST, 0, false },
	[K_MAGIC] = { "/magic/", SL_M_GET, SL_M_POST, true },
};

/* Which handler serves @path; K__MAX if none. */
static int kind_of(const char *path)
{
	int k;

	for (k = 0; k < K__MAX; k++) {
		size_t n = strlen(handlers[k].path);

		if (handlers[k].prefix ? !strncmp(path, handlers[k].path, n) && path[n] &&
						 !strchr(path + n, '/') :
					 !strcmp(path, handlers[k].path))
			return k;
	}
	return K__MAX;
}

struct gw_prepared {
	struct gw_creds *creds;
	uint8_t key[GW_TOKEN_KEY_BYTES];
	bool have_key;
	struct gw_delivery deliv;
	bool have_deliv;
};

struct gw_tstats {
	char name[SL_TENANT_NAME_LEN]; /* the scheduler slot's tenant these belong to */
	uint64_t requests, admitted_reserved, admitted_burst, ok, unauthorized;
	uint64_t hashes, dummy_hashes, shed;
	uint64_t shed_by_reason[GW_SHED__MAX];
	uint64_t shed_by_class[GW_MAX_CLASSES];
	double units_measured;
	struct gw_hist wait, service;
	uint64_t answered_2xx;         /* throughput */
	uint64_t goodput;              /* 2xx answered before the request's deadline */
};

struct gw_conn {
	struct bufferevent *bev;
	struct gw_conn *hnext;         /* bucket chain */
	struct gw_conn *prev, *next;   /* all connections */
	uint64_t deadline_ns;          /* 0: a request is being served */
};

/*
 * The counters a request asks, in order (see "counters" below): every endpoint, /login
 * included, lists its asks and runs them through one chain.
 */
#define GW_CHAIN_MAX 5 /* asks in one chain: reset and register have the most, four */

enum gw_then {
	GW_THEN_KEEP = 0, /* the outcome changes nothing: the charge stands */
	GW_THEN_CLEAR,    /* a success clears the key: it counts failures */
	GW_THEN_SPEND,    /* a success spends one: it counts successes (asked at cost 0) */
};

struct gw_ask {
	int ctr;          /* enum sl_counter_id */
	char key[33];     /* a keyed hash (counter_key), never a name */
	char shown[40];   /* the key as a refusal is recorded (wouldblock) */
	int cost;         /* 1 charges one; 0 only asks */
	double rate, burst; /* rate > 0: this principal's own limit, not the counter's */
	bool with_next;   /* sent with the next ask and answered together: one round trip */
	bool refund;      /* given back if the request is shed before its work */
	uint8_t then;     /* enum gw_then: what a success does (chain_settle) */
	bool charged;     /* the store took the charge, and nothing has settled it */
};

struct gw_req;
struct gw_chain_wait;

/* The chain has ended: @refused is the ask that refused (NULL: every counter said yes),
 * @retry_ms its wait. */
typedef void (*gw_chain_done_fn)(struct gw_req *r, const struct gw_ask *refused,
				 uint32_t retry_ms);

struct gw_chain {
	struct gw_ask ask[GW_CHAIN_MAX];
	int n;
	int next;                    /* the first ask not yet sent */
	int refused;                 /* the first refusal (an index), -1 none */
	uint32_t retry_ms;
	gw_chain_done_fn done;
	struct gw_chain_wait *wait;  /* while answers are due; NULL otherwise */
};

static void chain_detach(struct gw_req *r);

struct gw_req {
	struct gw_job job;             /* first: the scheduler hands these back */
	struct gw_work work;
	struct gateway *g;
	struct evhttp_request *req;
	struct gw_req *prev, *next;    /* every live request, for shutdown */
	struct event *hold;            /* the floor timer, while held */
	uint64_t hold_until_ns;
	uint64_t arrival_ns;
	int kind;
	int method;
	int route;
	uint64_t cpu0;                 /* endpoints: thread CPU at the handler's start */
	char tenant[SL_TENANT_NAME_LEN];
	struct gw_addr client;
	char user[GW_USER_MAX + 1];
	size_t user_len;
	bool known;
	struct gw_chain chain;         /* the counters it asks (store.h) */
	uint32_t dl_ms;
	uint32_t min_retry_s;          /* a counter's own wait, when it refused */
	uint64_t extra_ns;             /* an escalated account's delay, on top of any floor */
	uint8_t acct_hash[16];         /* for the stream job: keyed hashes, never the values */
	uint8_t pw_hash[16];
	bool hashed_ids;
	int tenant_idx;                /* in the config */
	/* the endpoints beyond /login (see "endpoints" below) */
	char grant[24];
	char client_id[SL_CLIENT_ID_LEN];
	char secret[GW_SECRET_MAX + 1];
	size_t secret_len;
	char refresh[GW_TOKEN_MAX + 1];
	uint64_t family;               /* a refresh token's chain and generation */
	uint32_t gen;
	char code6[8];
	size_t code_len;
	char link[GW_SECRET_TEXT + 8]; /* /magic/{token} */
	int client_idx;
	int tok_kind;                  /* the kind of the bearer token (enum gw_token_kind) */
	int rl_ctr;                    /* > 0: a 429 carries RateLimit headers for this */
	double rl_rate, rl_burst;
	const char *ctype;             /* NULL: JSON */
	/* the answer, kept while held */
	int code;
	const char *reason;
	const char *body;
	uint32_t retry_after;
};

struct gateway {
	struct event_base *base;
	struct evhttp *http;
	struct evhttp_bound_socket *bound;
	struct evconnlistener *listener;
	struct event *tick, *pool_ev;
	struct sl_config *cfg;         /* the running config (our copy) */
	struct sl_gateway_cfg started; /* settings fixed at start: listen, argon2, workers */
	struct gw_sched *sched;
	struct gw_pool pool;
	struct gw_creds *creds;
	struct gw_ladder *ladder;
	uint8_t key[GW_TOKEN_KEY_BYTES];
	char dummy_phc[GW_PHC_MAX];
	struct gw_tstats *ts;          /* by scheduler slot */
	struct sl_store *store;        /* login counters; NULL: none */
	struct stream *stream;         /* outcome events go there; NULL: none */
	struct evq *evq;
	struct esc *esc_acct, *esc_pw; /* the stream job's escalations, by hash */
	struct gw_req *reqs;
	uint32_t n_reqs;
	struct gw_vault *vault;        /* codes, links, refresh tokens */
	struct gw_delivery deliv;
	uint8_t tkey[GW_TOK_KEYS][GW_TOKEN_KEY_BYTES];
	struct {
		uint64_t ok, failed, throttled;
	} ep[K__MAX];
	uint64_t otp_sent, links_sent, notices_sent, refresh_reuse, outbound_failed;
	/* Each client's measured request rate (authenticated requests), for setting its
	 * per-principal limit just above it: the peak over 10 s windows since start. */
	struct {
		char id[SL_CLIENT_ID_LEN];
		int tenant;
		uint64_t win_ns, total;
		uint32_t in_win;
		double peak;
	} cm[SL_MAX_CLIENTS];
	struct gw_conn *conn_bucket[CONN_BUCKETS];
	struct gw_conn *conns;
	uint32_t n_conns;
	bool paused;
	unsigned ticks;
	uint32_t held;
	struct {
		uint64_t requests, hashes, dummy_hashes, expired_before_hash, expired_at_start;
		uint64_t client_gone, floor_held, floor_skipped, conn_timeouts, accept_pauses;
		uint64_t xff_used, xff_ignored, status[600];
		uint64_t step_ups, delayed, would_block, events, events_dropped;
	} st;
};

static inline struct gw_req *req_of_job(struct gw_job *j)
{
	return (struct gw_req *)j; /* the job is the first member */
}

static inline struct gw_req *req_of_work(struct gw_work *w)
{
	return (struct gw_req *)((char *)w - offsetof(struct gw_req, work));
}

/* ---- connections ------------------------------------------------------------------------ */

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

/* evhttp asks for a bufferevent for every accepted connection. */
static struct bufferevent *on_new_conn(struct event_base *base, void *arg)
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
	c->deadline_ns = gw_now_ns() + (uint64_t)g->cfg->gw.request_timeout_ms * 1000000ull;
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

/* Release connections evhttp has freed; close those past their request deadline. */
static void conn_sweep(struct gateway *g, uint64_t now)
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
		c->deadline_ns = gw_now_ns() + (uint64_t)g->cfg->gw.request_timeout_ms * 1000000ull;
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
			if (!strcmp(path, handlers[k].path))
				evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
						  sl_method_name(handlers[k].method));
	}
	if (detail)
		evbuffer_add_printf(b, "{\"error\":\"%s\",\"detail\":\"%s\"}", error, detail);
	else
		evbuffer_add_printf(b, "{\"error\":\"%s\"}", error);
	count_status(g, code);
	evhttp_send_reply(req, code, reason, NULL);
}

static void req_free(struct gw_req *r)
{
	struct gateway *g = r->g;

	if (r->hold) {
		event_free(r->hold);
		g->held--;
	}
	chain_detach(r);
	if (r->prev)
		r->prev->next = r->next;
	else
		g->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	g->n_reqs--;
	sodium_memzero(&r->work, sizeof(r->work));
	sodium_memzero(r->secret, sizeof(r->secret));
	free(r);
}

static void send_now(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct evhttp_request *req = r->req;
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	char ra[16];

	add_common_headers(req);
	if (r->retry_after) {
		snprintf(ra, sizeof(ra), "%u", r->retry_after);
		evhttp_add_header(h, "Retry-After", ra);
	}
	if (r->code == 401 && r->kind == K_VALIDATE)
		evhttp_add_header(h, "WWW-Authenticate", "Bearer");
	if (r->code == 401 && r->kind == K_TOKEN)
		evhttp_add_header(h, "WWW-Authenticate", "Basic realm=\"token\"");
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
	/* When the client has gone, evhttp frees the request here instead of sending. */
	evhttp_send_reply(req, r->code, r->reason, NULL);
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
	send_now(r);
}

/*
 * Answer @r with @code. Rejections (@floor) leave no sooner than arrival + reject_floor_ms,
 * so a wrong password, an unknown account and a shed request cannot be told apart by their
 * timing; they wait on a timer, never a thread. Past max_held held connections the answer
 * goes at once: holding is a courtesy to secrecy, not a reason to run out of sockets.
 */
static void respond(struct gw_req *r, int code, const char *reason, const char *body,
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
			if (g->held < g->cfg->gw.max_held) {
				struct timeval tv = tv_until(due, now);

				r->hold_until_ns = due;
				r->hold = evtimer_new(g->base, on_hold_done, r);
				if (r->hold && !evtimer_add(r->hold, &tv)) {
					g->held++;
					g->st.floor_held++;
					return;
				}
				if (r->hold)
					event_free(r->hold);
				r->hold = NULL;
			}
			g->st.floor_skipped++;
		}
	}
	send_now(r);
}

/* ---- the stream job: outcome events and its escalations -------------------------------- */

static void shed(struct gw_req *r, int reason);

#define ESC_CAP 65536u
#define ESC_PROBE 16
#define ESC_ANY_TENANT 0xffff

struct esc {
	uint8_t h[16];
	uint16_t tenant;
	uint8_t level;
	bool used;
	uint64_t expires_ns;
};

/* The entry for (@h, @tenant): made when @make (over an expired one, or the one expiring
 * soonest in the probe window); NULL when absent or expired. */
static struct esc *esc_find(struct esc *t, const uint8_t h[16], uint16_t tenant, uint64_t now,
			    bool make)
{
	uint64_t k;
	struct esc *victim = NULL, *e;
	unsigned i;

	if (!t)
		return NULL;
	memcpy(&k, h, sizeof(k));
	for (i = 0; i < ESC_PROBE; i++) {
		e = &t[(k + i) & (ESC_CAP - 1)];
		if (e->used && e->tenant == tenant && !memcmp(e->h, h, 16)) {
			if (e->expires_ns > now || make)
				return e;
			return NULL;
		}
		if (!e->used || e->expires_ns <= now) {
			if (!victim || (victim->used && victim->expires_ns > now))
				victim = e;
		} else if (!victim || (victim->used && victim->expires_ns > now &&
					e->expires_ns < victim->expires_ns)) {
			victim = e;
		}
	}
	if (!make)
		return NULL;
	memset(victim, 0, sizeof(*victim));
	victim->used = true;
	memcpy(victim->h, h, 16);
	victim->tenant = tenant;
	return victim;
}

/* Keyed hashes of the account and the password tried: the stream job and the escalation
 * tables see these, never the values. The keys derive from the session key, which every
 * node shares, so the nodes' hashes agree. */
static void stream_ids(struct gateway *g, struct gw_req *r)
{
	crypto_generichash_state st;
	uint8_t k[32];

	crypto_generichash(k, sizeof(k), (const unsigned char *)"sluice stream accounts", 22,
			   g->key, sizeof(g->key));
	crypto_generichash_init(&st, k, sizeof(k), sizeof(r->acct_hash));
	crypto_generichash_update(&st, (const unsigned char *)r->tenant, strlen(r->tenant) + 1);
	crypto_generichash_update(&st, (const unsigned char *)r->user, r->user_len);
	crypto_generichash_final(&st, r->acct_hash, sizeof(r->acct_hash));
	crypto_generichash(k, sizeof(k), (const unsigned char *)"sluice stream passwords", 23,
			   g->key, sizeof(g->key));
	crypto_generichash(r->pw_hash, sizeof(r->pw_hash), (const unsigned char *)r->work.pwd,
			   r->work.pwd_len, k, sizeof(k));
	sodium_memzero(k, sizeof(k));
	r->hashed_ids = true;
}

/* One login outcome to the stream job; never waits (a full queue drops and counts). */
static void emit(struct gw_req *r, bool success)
{
	struct gateway *g = r->g;
	struct sl_outcome_event ev;
	unsigned plen, n, i;

	if (!g->evq || !r->hashed_ids)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.ts_ns = gw_now_ns();
	memcpy(ev.account, r->acct_hash, 16);
	if (!success)
		memcpy(ev.password, r->pw_hash, 16);
	ev.family = r->client.family == 6 ? 6 : 4;
	plen = ev.family == 6 ? g->cfg->stream.prefix_v6 : g->cfg->stream.prefix_v4;
	n = ev.family == 6 ? 16 : 4;
	for (i = 0; i < n; i++) {
		unsigned bits = plen > i * 8 ? plen - i * 8 : 0;

		ev.prefix[i] = bits >= 8 ? r->client.addr[i] :
			       (uint8_t)(r->client.addr[i] & (0xff00u >> bits));
	}
	ev.plen = (uint8_t)plen;
	ev.success = success;
	ev.known = r->known;
	ev.tenant = (uint16_t)(r->tenant_idx >= 0 ? r->tenant_idx : SL_MAX_TENANTS);
	ev.class_id = 255;
	g->st.events++;
	if (!evq_push(g->evq, &ev))
		g->st.events_dropped++;
}

void gateway_set_stream(struct gateway *g, struct stream *st)
{
	g->stream = st;
	g->evq = stream_queue(st);
	if (st && !g->esc_acct) {
		g->esc_acct = calloc(ESC_CAP, sizeof(*g->esc_acct));
		g->esc_pw = calloc(ESC_CAP, sizeof(*g->esc_pw));
		if (!g->esc_acct || !g->esc_pw) {
			log_warn("gateway: out of memory for escalations; the stream job's account "
				 "and password actions are ignored");
			free(g->esc_acct);
			free(g->esc_pw);
			g->esc_acct = g->esc_pw = NULL;
		}
	}
}

void gateway_stream_action(struct gateway *g, const struct stream_action *a)
{
	struct esc *e;

	if (a->kind == STREAM_ACCOUNT_LEVEL) {
		e = esc_find(g->esc_acct, a->hash, a->tenant, gw_now_ns(), true);
		if (e && a->level >= e->level) {
			e->level = a->level;
			e->expires_ns = a->expires_ns;
			log_info("gateway: account escalated to %s by the stream job",
				 a->level >= 3 ? "block" : a->level == 2 ? "step-up" : "delay");
		}
	} else if (a->kind == STREAM_PASSWORD_STEP_UP) {
		e = esc_find(g->esc_pw, a->hash, ESC_ANY_TENANT, gw_now_ns(), true);
		if (e) {
			e->level = 1;
			e->expires_ns = a->expires_ns;
			log_info("gateway: a password tried across many accounts now answers "
				 "step_up_required");
		}
	}
}

/* Before the counters: what the stream job decided about this account or password.
 * Returns true when the login has been answered. */
static bool escalated(struct gw_req *r)
{
	struct gateway *g = r->g;
	uint64_t now = gw_now_ns();
	struct esc *e;

	if (!g->esc_acct)
		return false;
	if (esc_find(g->esc_pw, r->pw_hash, ESC_ANY_TENANT, now, false)) {
		g->st.step_ups++;
		emit(r, false);
		respond(r, 401, "Unauthorized", BODY_STEP_UP, 0, true, false);
		return true;
	}
	e = esc_find(g->esc_acct, r->acct_hash, (uint16_t)r->tenant_idx, now, false);
	if (!e)
		return false;
	if (e->level >= 3) {
		emit(r, false);
		r->min_retry_s = (uint32_t)((e->expires_ns - now) / 1000000000ull) + 1;
		shed(r, GW_SHED_ACCOUNT_BLOCKED);
		return true;
	}
	if (e->level == 2) {
		g->st.step_ups++;
		emit(r, false);
		respond(r, 401, "Unauthorized", BODY_STEP_UP, 0, true, false);
		return true;
	}
	g->st.delayed++;
	r->extra_ns = (uint64_t)g->cfg->stream.ladder_delay_ms * 1000000ull;
	return false;
}

/* ---- counters: the asks of a request, in order ------------------------------------------ */

/*
 * One mechanism asks the counter store for every endpoint, /login included. A request lists
 * its asks (counter, key, cost) and runs them: they go out in steps, an ask marked
 * with_next in one step with the next (the login's pair: one round trip), and a step waits
 * for all of its answers before the next goes. The first refusal by a counter that enforces
 * ends the chain after its step; a refusal in monitor mode is recorded (wouldblock) and let
 * through. Asks of counters that are off are skipped. Answers come back on the loop within
 * the store's timeout (an in-process store answers before the call returns); a request
 * that goes away meanwhile detaches, and the answers still due are dropped.
 *
 * Each ask also says what the request's outcome does to it: chain_refund() gives back
 * the charges marked refund (a login shed before its hash was no attempt at the password),
 * chain_settle() clears or spends the keys marked so once the request has succeeded.
 */

struct gw_chain_wait {
	struct gw_req *r; /* NULL once the request is gone: the answers are then dropped */
	int pending;
	struct gw_chain_slot {
		struct gw_chain_wait *w;
		int i;
	} slot[GW_CHAIN_MAX];
};

static struct sl_limit limit_of(const struct gateway *g, int id)
{
	static const char *const names[SL_CTR_N] = { "login_fail", "login_ok", "tenant_logins",
		"token_fail", "token_client", "tenant_tokens", "mfa_attempts", "mfa_sends",
		"outbound", "reset_acct", "reset_prefix", "reset_tenant", "reg_acct", "reg_prefix",
		"reg_tenant", "magic_prefix", "user" };
	const struct sl_counter_cfg *cc = &g->cfg->counters[id];

	return (struct sl_limit){ .name = names[id], .rate = cc->rate, .burst = cc->burst,
				  .fail = cc->fail, .static_rate = cc->static_rate,
				  .static_burst = cc->static_burst, .max_keys = cc->max_keys };
}

/* The limit @a is asked under: its counter's, or the principal's own. */
static struct sl_limit ask_limit(const struct gateway *g, const struct gw_ask *a)
{
	struct sl_limit l = limit_of(g, a->ctr);

	if (a->rate > 0) {
		l.rate = a->rate;
		l.burst = a->burst;
	}
	return l;
}

static bool counter_on(const struct gateway *g, int id)
{
	return g->store && g->cfg->counters[id].enabled;
}

static void on_ignored(void *arg, int allowed, uint32_t retry_ms, int answer)
{
	(void)arg;
	(void)allowed;
	(void)retry_ms;
	(void)answer;
}

/*
 * A counter's key: a keyed hash of @parts under @domain, never the names or addresses
 * themselves. The hash key derives from the session key, which every node shares, so the
 * nodes count the same keys and no account name or address reaches Redis.
 */
static void counter_key(const struct gateway *g, const char *domain, const char *const *parts,
			int n, char out[33])
{
	uint8_t ck[32];

	crypto_generichash(ck, sizeof(ck), (const unsigned char *)domain, strlen(domain), g->key,
			   sizeof(g->key));
	sl_store_hash(ck, parts, n, out);
	sodium_memzero(ck, sizeof(ck));
}

#define PREFIX_STR (INET6_ADDRSTRLEN + 8)

/* The client's source prefix as the counters key it ("192.0.2.0/24"). */
static void prefix_of(const struct gateway *g, const struct gw_req *r, char prefix[PREFIX_STR])
{
	uint8_t a[16] = { 0 };
	unsigned plen = r->client.family == 6 ? g->cfg->counter_v6_prefix :
						 g->cfg->counter_v4_prefix;
	unsigned i, n = r->client.family == 6 ? 16 : 4;

	for (i = 0; i < n; i++) {
		unsigned bits = plen > i * 8 ? plen - i * 8 : 0;

		a[i] = bits >= 8 ? r->client.addr[i] :
		       (uint8_t)(r->client.addr[i] & (0xff00u >> bits));
	}
	if (!r->client.family ||
	    !inet_ntop(r->client.family == 6 ? AF_INET6 : AF_INET, a, prefix, INET6_ADDRSTRLEN))
		snprintf(prefix, PREFIX_STR, "?");
	snprintf(prefix + strlen(prefix), PREFIX_STR - strlen(prefix), "/%u", plen);
}

/* Start @r's list of asks afresh. */
static void chain_begin(struct gw_req *r)
{
	r->chain.n = 0;
}

/* Append an ask of @ctr under @key: cost 1, the counter's limit, nothing on the outcome.
 * The caller adjusts the rest. At most GW_CHAIN_MAX asks. */
static struct gw_ask *chain_ask(struct gw_req *r, int ctr, const char *key)
{
	struct gw_ask *a = &r->chain.ask[r->chain.n++];

	memset(a, 0, sizeof(*a));
	a->ctr = ctr;
	a->cost = 1;
	snprintf(a->key, sizeof(a->key), "%s", key);
	snprintf(a->shown, sizeof(a->shown), "%.16s", key);
	return a;
}

static void chain_detach(struct gw_req *r)
{
	if (!r->chain.wait)
		return;
	r->chain.wait->r = NULL;
	r->chain.wait = NULL;
}

/* One answer for @a: a refusal is recorded, and let through when its counter only
 * monitors; the step's first enforced refusal ends the chain. */
static void chain_heard(struct gw_req *r, struct gw_ask *a, int allowed, uint32_t retry_ms)
{
	struct gateway *g = r->g;
	struct sl_limit l;
	bool monitor;
	char rule[48];

	if (allowed) {
		a->charged = a->cost > 0;
		return;
	}
	l = ask_limit(g, a);
	monitor = g->cfg->counter_mode[a->ctr] == SL_MODE_MONITOR;
	snprintf(rule, sizeof(rule), "counter:%s", sl_counter_name(a->ctr));
	stream_record(g->stream, rule, a->shown, (uint16_t)r->tenant_idx, 255,
		      monitor ? SL_MODE_MONITOR : SL_MODE_ENFORCE, 1, l.burst);
	if (monitor) {
		/* Counted, recorded, and let through. */
		g->st.would_block++;
		return;
	}
	if (r->chain.refused < 0) {
		r->chain.refused = (int)(a - r->chain.ask);
		r->chain.retry_ms = retry_ms;
	}
}

static void on_chain_answer(void *arg, int allowed, uint32_t retry_ms, int answer);

/* Send steps until answers are due (they continue it) or the chain ends. */
static void chain_send(struct gw_chain_wait *w)
{
	struct gw_req *r = w->r;
	struct gw_chain *k = &r->chain;
	struct gateway *g = r->g;

	while (k->refused < 0 && k->next < k->n) {
		/* Count each ask as it goes, plus one held until the step is sent: an
		 * in-process answer comes back before the call returns. */
		w->pending = 1;
		do {
			int i = k->next++;
			struct gw_ask *a = &k->ask[i];
			struct sl_limit l;

			if (!counter_on(g, a->ctr))
				continue;
			l = ask_limit(g, a);
			w->slot[i].w = w;
			w->slot[i].i = i;
			w->pending++;
			sl_store_charge(g->store, &l, r->tenant, a->key, a->cost, on_chain_answer,
					&w->slot[i]);
		} while (k->ask[k->next - 1].with_next && k->next < k->n);
		if (--w->pending > 0)
			return;
	}
	k->wait = NULL;
	free(w);
	k->done(r, k->refused >= 0 ? &k->ask[k->refused] : NULL, k->retry_ms);
}

static void on_chain_answer(void *arg, int allowed, uint32_t retry_ms, int answer)
{
	struct gw_chain_slot *s = arg;
	struct gw_chain_wait *w = s->w;

	(void)answer;
	if (w->r)
		chain_heard(w->r, &w->r->chain.ask[s->i], allowed, retry_ms);
	if (--w->pending > 0)
		return;
	if (!w->r) {
		free(w);
		return;
	}
	chain_send(w);
}

/* Ask @r's counters in order; @done hears how it ended. -ENOMEM (and @done is never
 * called) when the chain cannot start. */
static int chain_run(struct gw_req *r, gw_chain_done_fn done)
{
	struct gw_chain *k = &r->chain;
	struct gw_chain_wait *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->r = r;
	k->next = 0;
	k->refused = -1;
	k->retry_ms = 0;
	k->done = done;
	k->wait = w;
	chain_send(w);
	return 0;
}

/* @r was shed before its work: give back the charges marked refund. */
static void chain_refund(struct gw_req *r)
{
	struct gateway *g = r->g;
	int i;

	for (i = 0; i < r->chain.n; i++) {
		struct gw_ask *a = &r->chain.ask[i];
		struct sl_limit l;

		if (!a->refund || !a->charged)
			continue;
		a->charged = false;
		if (!counter_on(g, a->ctr))
			continue;
		l = ask_limit(g, a);
		sl_store_charge(g->store, &l, r->tenant, a->key, -a->cost, on_ignored, NULL);
	}
}

/* @r's outcome is known: on @success the keys marked so are cleared or spent; either way
 * the charges stand (nothing is given back any more). */
static void chain_settle(struct gw_req *r, bool success)
{
	struct gateway *g = r->g;
	int i;

	for (i = 0; i < r->chain.n; i++) {
		struct gw_ask *a = &r->chain.ask[i];
		struct sl_limit l;

		a->charged = false;
		if (!success || a->then == GW_THEN_KEEP || !counter_on(g, a->ctr))
			continue;
		l = ask_limit(g, a);
		if (a->then == GW_THEN_CLEAR)
			sl_store_clear(g->store, &l, r->tenant, a->key);
		else
			sl_store_charge(g->store, &l, r->tenant, a->key, 1, on_ignored, NULL);
	}
}

/* ---- login counters ------------------------------------------------------------------- */

static void admit(struct gw_req *r, const char *token, size_t tlen);

static void login_checked(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms)
{
	if (!refused) {
		admit(r, NULL, 0);
		return;
	}
	r->min_retry_s = (retry_ms + 999) / 1000;
	emit(r, false);
	shed(r, refused->ctr == SL_CTR_LOGIN_FAILURES ? GW_SHED_FAILURES :
		refused->ctr == SL_CTR_LOGIN_SUCCESSES ? GW_SHED_SUCCESSES :
		GW_SHED_TENANT_LOGINS);
}

/*
 * Before a login is admitted: charge one attempt to its (account, prefix) failure budget
 * and ask whether the pair may succeed again, in one step; then charge the tenant's logins.
 * An account nobody has is keyed (tenant, "", prefix): the per-source bucket, same threshold,
 * same answer, and the same calls (its success key is never charged). The attempt is given
 * back if the login is shed before its hash; a success clears the pair and spends one of
 * its successes. Without the counters (or the memory to ask them) it is admitted at once.
 */
static void login_start(struct gw_req *r)
{
	struct gateway *g = r->g;
	char prefix[PREFIX_STR], user[GW_USER_MAX + 1], key[33], shown[40];
	const char *parts[3] = { r->tenant, "", prefix };
	struct gw_ask *a;

	r->known = gw_creds_find(g->creds, r->tenant, r->user, r->user_len) != NULL;
	prefix_of(g, r, prefix);
	memcpy(user, r->user, r->user_len);
	user[r->user_len] = '\0';
	if (r->known)
		parts[1] = user;
	counter_key(g, "sluice login counters", parts, 3, key);
	snprintf(shown, sizeof(shown), "pair %.16s", key);
	chain_begin(r);
	a = chain_ask(r, SL_CTR_LOGIN_FAILURES, key);
	snprintf(a->shown, sizeof(a->shown), "%s", shown);
	a->with_next = true;
	a->refund = true;
	a->then = GW_THEN_CLEAR;
	a = chain_ask(r, SL_CTR_LOGIN_SUCCESSES, key);
	snprintf(a->shown, sizeof(a->shown), "%s", shown);
	a->cost = 0;
	a->then = GW_THEN_SPEND;
	a = chain_ask(r, SL_CTR_TENANT_LOGINS, "logins");
	snprintf(a->shown, sizeof(a->shown), "tenant %.16s", r->tenant);
	if (chain_run(r, login_checked))
		admit(r, NULL, 0);
}

void gateway_set_store(struct gateway *g, struct sl_store *s)
{
	g->store = s;
	if (s && g->cfg->redis.address[0] && !g->cfg->gw.session_key[0])
		log_warn("gateway: counters are shared through Redis but gateway.session_key is "
			 "not set: this node hashes its counter keys with a key of its own, so the "
			 "nodes do not count together");
}

static void shed(struct gw_req *r, int reason)
{
	struct gateway *g = r->g;
	struct gw_tstats *t = &g->ts[r->job.tenant];
	bool early = false;
	uint32_t ra;

	t->shed++;
	if (reason > 0 && reason < GW_SHED__MAX)
		t->shed_by_reason[reason]++;
	if (r->job.cls < GW_MAX_CLASSES)
		t->shed_by_class[r->job.cls]++;
	if (reason == GW_SHED_EXPIRED)
		g->st.expired_before_hash++;
	if (reason == GW_SHED_CLIENT_GONE)
		g->st.client_gone++;
	ra = gw_ladder_hit(g->ladder, &r->client, gw_now_ns(), randombytes_random(), &early);
	if (r->min_retry_s > ra)
		ra = r->min_retry_s;
	/* A login shed before its hash was no attempt at the password: give it back. */
	chain_refund(r);
	if (r->kind == K_LOGIN && g->cfg->gw.login_uniform &&
	    (reason == GW_SHED_FAILURES || reason == GW_SHED_SUCCESSES ||
	     reason == GW_SHED_ACCOUNT_BLOCKED)) {
		/* A throttled login looks exactly like a failed one: same status, body and
		 * floor, no Retry-After, no longer hold for an early return. tenant_logins is
		 * not about the account but the tenant's capacity (and, fail closed, refuses
		 * right passwords while Redis is out): a capacity shed, 429 like the others. */
		respond(r, 401, "Unauthorized", BODY_SIGNIN, 0, true, false);
		return;
	}
	/* Nobody is listening to a client that hung up: no floor to keep. */
	respond(r, 429, "Too Many Requests", BODY_429, ra, reason != GW_SHED_CLIENT_GONE, early);
}

/* ---- pool ------------------------------------------------------------------------------- */

static void answer_drops(struct gateway *g, struct gw_drops *d)
{
	int i;

	for (i = 0; i < d->n; i++)
		shed(req_of_job(d->job[i]), d->reason[i]);
	d->n = 0;
}

/*
 * Has the client hung up? evhttp stops reading a connection while its request is being
 * served, so a client that timed out and closed is only visible on the socket: a peek that
 * reads end-of-file (or a reset) means nobody will read the answer. A pipelined next
 * request reads as data: still there. Like nginx, a half-close counts as gone.
 */
static bool client_gone(struct evhttp_request *req)
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

/* Start queued jobs on idle workers. */
static void dispatch(struct gateway *g)
{
	struct gw_drops d = { .n = 0 };

	while (g->pool.busy < g->pool.n) {
		uint64_t now = gw_now_ns();
		struct gw_job *j = gw_sched_next(g->sched, now, &d);
		struct gw_req *r;
		const char *phc;

		answer_drops(g, &d);
		if (!j)
			break;
		r = req_of_job(j);
		/* A client that hung up is not worth a hash. */
		if (g->sched->admission && client_gone(r->req)) {
			gw_sched_release(g->sched, j, now);
			shed(r, GW_SHED_CLIENT_GONE);
			continue;
		}
		gw_hist_add(&g->ts[j->tenant].wait, now - j->admit_ns);
		r->work.deadline_ns = g->sched->admission ? j->deadline_ns : 0;
		if (r->kind == K_MAGIC) {
			/* A sign-up: make the hash with the running parameters. */
			r->work.make = true;
			r->work.m_kib = g->cfg->gw.m_cost_kib;
			r->work.t = g->cfg->gw.t_cost;
			r->work.p = g->cfg->gw.parallelism;
			gw_pool_submit(&g->pool, &r->work);
			continue;
		}
		phc = gw_creds_find(g->creds, r->tenant, r->user, r->user_len);
		r->known = phc != NULL;
		/* Unknown accounts verify against a dummy of the same cost: a miss and a wrong
		 * password take the same time and give the same answer. */
		snprintf(r->work.phc, sizeof(r->work.phc), "%s", phc ? phc : g->dummy_phc);
		r->work.deadline_ns = g->sched->admission ? j->deadline_ns : 0;
		gw_pool_submit(&g->pool, &r->work);
	}
}

static void finish_login(struct gw_req *r, uint64_t now)
{
	struct gateway *g = r->g;
	struct gw_tstats *t = &g->ts[r->job.tenant];
	struct gw_work *w = &r->work;
	double units = (double)w->cpu_ns / 100000.0;

	g->st.hashes++;
	t->hashes++;
	if (!r->known) {
		g->st.dummy_hashes++;
		t->dummy_hashes++;
	}
	t->units_measured += units;
	gw_hist_add(&t->service, w->end_ns - w->start_ns);
	gw_sched_done(g->sched, &r->job, units, w->end_ns - w->start_ns, now);
	if (w->verified && r->known) {
		char tok[GW_TOKEN_MAX + 1];
		struct evbuffer *b = evhttp_request_get_output_buffer(r->req);
		int n = gw_token_issue(g->key, r->tenant, r->user, (uint64_t)time(NULL),
				       g->cfg->gw.token_ttl_s, tok, sizeof(tok));

		if (n < 0) {
			respond(r, 503, "Service Unavailable", BODY_503, 0, false, false);
			return;
		}
		t->ok++;
		chain_settle(r, true);
		emit(r, true);
		evbuffer_add_printf(b, "{\"access_token\":\"%s\",\"token_type\":\"Bearer\","
				    "\"expires_in\":%u}", tok, g->cfg->gw.token_ttl_s);
		respond(r, 200, "OK", NULL, 0, false, false);
		return;
	}
	t->unauthorized++;
	chain_settle(r, false);
	emit(r, false);
	respond(r, 401, "Unauthorized", g->cfg->gw.login_uniform ? BODY_SIGNIN : BODY_401, 0,
		true, false);
}

static void finish_register(struct gw_req *r, uint64_t now);

static void on_pool(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *g = arg;
	struct gw_work *w = gw_pool_collect(&g->pool), *nx;

	(void)fd;
	(void)what;
	for (; w; w = nx) {
		struct gw_req *r = req_of_work(w);
		uint64_t now = gw_now_ns();

		nx = w->next;
		if (!w->ran) {
			/* The worker's own last look found the deadline passed. */
			g->st.expired_at_start++;
			gw_sched_release(g->sched, &r->job, now);
			shed(r, GW_SHED_EXPIRED);
			continue;
		}
		if (r->kind == K_MAGIC)
			finish_register(r, now);
		else
			finish_login(r, now);
	}
	dispatch(g);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *g = arg;
	struct gw_drops d = { .n = 0 };
	uint64_t now = gw_now_ns();
	int rounds = 0;

	(void)fd;
	(void)what;
	/* Bounded: at most 16 batches of drops per tick, the rest next tick. */
	while (gw_sched_maintain(g->sched, now, &d) && ++rounds < 16)
		answer_drops(g, &d);
	answer_drops(g, &d);
	dispatch(g);
	if (++g->ticks % SWEEP_EVERY == 0)
		conn_sweep(g, now);
}

/* ---- request handling ------------------------------------------------------------------- */

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

/* Host header to the form the config uses: lowercase, no port, no trailing dot. Returns
 * 1 with @out set, 0 when absent, -1 when malformed or repeated. */
static int host_of(struct evhttp_request *req, char *out, size_t n)
{
	const struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const struct evkeyval *kv;
	const char *v = NULL;
	size_t len, i;

	TAILQ_FOREACH(kv, h, next) {
		if (strcasecmp(kv->key, "Host"))
			continue;
		if (v)
			return -1; /* RFC 9112: more than one Host is a 400 */
		v = kv->value;
	}
	if (!v)
		return 0;
	len = strlen(v);
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

static void client_of(struct gateway *g, struct evhttp_request *req, struct gw_addr *out)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	const struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const struct evkeyval *kv;
	const char *xff[16];
	struct gw_addr peer;
	int n = 0, src;

	memset(&peer, 0, sizeof(peer));
	if (evcon)
		gw_addr_from_sockaddr(evhttp_connection_get_addr(evcon), &peer);
	if (!g->cfg->gw.trusted_hops) {
		*out = peer;
		return;
	}
	TAILQ_FOREACH(kv, h, next)
		if (!strcasecmp(kv->key, "X-Forwarded-For") && n < 16)
			xff[n++] = kv->value;
	src = gw_client_addr(&peer, xff, n, g->cfg->gw.trusted_hops, out);
	if (src == GW_ADDR_XFF)
		g->st.xff_used++;
	else
		g->st.xff_ignored++;
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

/* Append @s as a JSON string (names are validated UTF-8 without controls). */
static void json_escaped(struct evbuffer *b, const char *s)
{
	evbuffer_add(b, "\"", 1);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			evbuffer_add(b, "\\", 1);
		evbuffer_add(b, s, 1);
	}
	evbuffer_add(b, "\"", 1);
}

static void claims_json(struct evbuffer *b, const struct gw_token_claims *c, int kind)
{
	evbuffer_add_printf(b, "{\"active\":true,\"tenant\":");
	json_escaped(b, c->tenant);
	evbuffer_add_printf(b, ",\"sub\":");
	json_escaped(b, c->account);
	if (kind == GW_TOK_CLIENT) {
		evbuffer_add_printf(b, ",\"client_id\":");
		json_escaped(b, c->account);
	} else if (kind == GW_TOK_MFA) {
		evbuffer_add_printf(b, ",\"amr\":[\"pwd\",\"otp\"]");
	}
	evbuffer_add_printf(b, ",\"iat\":%llu,\"exp\":%llu}", (unsigned long long)c->iat,
			    (unsigned long long)c->exp);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The bearer token of @req into @token (NUL-terminated); its length, 0 if none. */
static size_t bearer_of(struct evhttp_request *req, char token[GW_TOKEN_MAX + 1])
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

/* Check @tok against every kind's key; the kind in *@kind. 0 or negative. */
static int token_any(const struct gateway *g, const char *tok, size_t len,
		     struct gw_token_claims *cl, int *kind)
{
	int k, ret = -EBADMSG;

	for (k = 0; k < GW_TOK__N; k++) {
		ret = gw_token_check(g->tkey[k], tok, len, (uint64_t)time(NULL), cl);
		if (ret != -EBADMSG)
			break;
	}
	*kind = k;
	return ret;
}

/* Cheap routes run here, on the loop, right after admission. */
static void run_inline(struct gw_req *r, const char *token, size_t tlen)
{
	struct gateway *g = r->g;
	struct gw_tstats *t = &g->ts[r->job.tenant];
	struct gw_token_claims cl;
	uint64_t c0 = thread_cpu_ns(), now;
	int bad, tk;

	bad = token_any(g, token, tlen, &cl, &tk) || strcmp(cl.tenant, r->tenant);
	/* Introspection also asks the store whether the account (or client) still exists:
	 * its database read, and the reason the route holds a db slot. */
	if (!bad && r->kind == K_INTROSPECT &&
	    (tk == GW_TOK_CLIENT ? sl_config_client(g->cfg, r->tenant_idx, cl.account) < 0 :
	     !gw_creds_find(g->creds, cl.tenant, cl.account, strlen(cl.account))))
		bad = 1;
	if (!bad)
		claims_json(evhttp_request_get_output_buffer(r->req), &cl, tk);
	now = gw_now_ns();
	gw_sched_done(g->sched, &r->job, (double)(thread_cpu_ns() - c0) / 100000.0, 0, now);
	if (!bad) {
		t->ok++;
		respond(r, 200, "OK", NULL, 0, false, false);
	} else if (r->kind == K_INTROSPECT) {
		/* RFC 7662: an unusable token is a normal answer, not an error. */
		respond(r, 200, "OK", "{\"active\":false}", 0, false, false);
	} else {
		t->unauthorized++;
		respond(r, 401, "Unauthorized", BODY_401_TOKEN, 0, true, false);
	}
}

/* ---- the endpoints beyond /login ------------------------------------------------------- */

/*
 * /token, /mfa/send and /mfa/verify, /password-reset, /register and /magic/{token} go
 * through the path /login does: route and cost class, then their counters in the store
 * (each a composite key, asked one after the other so a refusal by the first charges
 * nothing further), then admission, then a handler on the loop. docs/endpoints.md says
 * which counters each charges and what each answers.
 */

/* An endpoint's ask of @ctr, keyed by a hash of (@what, tenant, @a, @b). */
static struct gw_ask *ep_ask(struct gw_req *r, int ctr, const char *what, const char *a,
			     const char *b)
{
	const char *parts[4] = { what, r->tenant, a ? a : "", b ? b : "" };
	char key[33];

	counter_key(r->g, "sluice endpoint counters", parts, 4, key);
	return chain_ask(r, ctr, key);
}

static void ep_answer(struct gw_req *r, int code, const char *reason, const char *body,
		      bool floor);

/* Run the asks listed; 503 when they cannot be asked. */
static void ep_run_chain(struct gw_req *r, gw_chain_done_fn done)
{
	if (chain_run(r, done))
		ep_answer(r, 503, "Service Unavailable", BODY_503, false);
}

static void ep_sched_done(struct gw_req *r)
{
	if (r->cpu0) {
		gw_sched_done(r->g->sched, &r->job, (double)(thread_cpu_ns() - r->cpu0) / 100000.0,
			      0, gw_now_ns());
		r->cpu0 = 0;
	}
}

/* Answer an endpoint request. Interactive failures pass @floor. */
static void ep_answer(struct gw_req *r, int code, const char *reason, const char *body,
		      bool floor)
{
	struct gateway *g = r->g;

	ep_sched_done(r);
	if (code >= 200 && code < 300)
		g->ts[r->job.tenant].ok++;
	else if (code == 401)
		g->ts[r->job.tenant].unauthorized++;
	respond(r, code, reason, body, 0, floor, false);
}

/* A counter refused: machine-facing /token says so with 429, Retry-After and the RateLimit
 * fields; the interactive endpoints answer exactly what they answer a failure. */
static void ep_refused(struct gw_req *r, const struct gw_ask *a, uint32_t retry_ms)
{
	struct gateway *g = r->g;
	struct gw_tstats *t = &g->ts[r->job.tenant];
	uint32_t ra = (retry_ms + 999) / 1000;

	g->ep[r->kind].throttled++;
	t->shed++;
	t->shed_by_reason[GW_SHED_COUNTER]++;
	if (r->job.cls < GW_MAX_CLASSES)
		t->shed_by_class[r->job.cls]++;
	if (ra < 1)
		ra = 1;
	ep_sched_done(r);
	switch (r->kind) {
	case K_TOKEN: {
		struct sl_limit l = ask_limit(g, a);

		/* The RateLimit fields name the counter that refused. */
		r->rl_ctr = a->ctr;
		r->rl_rate = l.rate;
		r->rl_burst = l.burst;
		respond(r, 429, "Too Many Requests", BODY_429, ra, true, false);
		return;
	}
	case K_MFA_SEND:
		/* The caller holds a first factor: it may know a send was refused, not why. */
		respond(r, 429, "Too Many Requests", BODY_429, ra, true, false);
		return;
	case K_MFA_VERIFY:
		respond(r, 401, "Unauthorized", BODY_MFA_FAIL, 0, true, false);
		return;
	case K_RESET:
		respond(r, 202, "Accepted", BODY_RESET_SENT, 0, true, false);
		return;
	case K_REGISTER:
		respond(r, 202, "Accepted", BODY_REGISTER_SENT, 0, true, false);
		return;
	default:
		respond(r, 401, "Unauthorized", BODY_LINK_FAIL, 0, true, false);
		return;
	}
}

static void ep_pre_done(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms)
{
	if (refused)
		ep_refused(r, refused, retry_ms);
	else
		admit(r, NULL, 0);
}

/* Before admission: each endpoint's counters. Composite keys: a pre-authentication
 * counter is never keyed on a name alone that anybody may send. */
static void ep_start(struct gw_req *r)
{
	char prefix[PREFIX_STR];

	prefix_of(r->g, r, prefix);
	chain_begin(r);
	switch (r->kind) {
	case K_TOKEN:
		/* (client_id, prefix): garbage for someone else's client from elsewhere
		 * spends only the sender's own pair; a correct secret clears it. */
		ep_ask(r, SL_CTR_TOKEN_FAILURES, "token pair", r->client_id, prefix)->then =
			GW_THEN_CLEAR;
		break;
	case K_MFA_SEND:
		ep_ask(r, SL_CTR_MFA_SENDS, "mfa sends", r->user, NULL);
		ep_ask(r, SL_CTR_OUTBOUND, "outbound", NULL, NULL);
		break;
	case K_MFA_VERIFY:
		/* Per account, whatever the code: a resend buys no fresh guesses. */
		ep_ask(r, SL_CTR_MFA_ATTEMPTS, "mfa attempts", r->user, NULL);
		break;
	case K_RESET:
	case K_REGISTER: {
		bool reset = r->kind == K_RESET;

		ep_ask(r, reset ? SL_CTR_RESET_PREFIX : SL_CTR_REGISTER_PREFIX,
		       reset ? "reset prefix" : "register prefix", prefix, NULL);
		ep_ask(r, reset ? SL_CTR_RESET_ACCOUNT : SL_CTR_REGISTER_ACCOUNT,
		       reset ? "reset account" : "register account", r->user, NULL);
		ep_ask(r, reset ? SL_CTR_RESET_TENANT : SL_CTR_REGISTER_TENANT,
		       reset ? "reset tenant" : "register tenant", NULL, NULL);
		/* Known or not, every request sends one message: the same counters either
		 * way, so the budgets say nothing about who has an account. */
		ep_ask(r, SL_CTR_OUTBOUND, "outbound", NULL, NULL);
		break;
	}
	case K_MAGIC:
		/* A GET is a mail scanner as often as a person: it spends nothing. */
		if (r->method == SL_M_POST)
			ep_ask(r, SL_CTR_MAGIC_PREFIX, "magic prefix", prefix, NULL);
		break;
	default:
		break;
	}
	ep_run_chain(r, ep_pre_done);
}

static void ep_json_token(struct evbuffer *b, const char *tok, uint32_t ttl, const char *refresh)
{
	evbuffer_add_printf(b, "{\"access_token\":\"%s\",\"token_type\":\"Bearer\",\"expires_in\":%u",
			    tok, ttl);
	if (refresh)
		evbuffer_add_printf(b, ",\"refresh_token\":\"%s\"", refresh);
	evbuffer_add_printf(b, "}");
}

/* Issue a token of @kind for @name and answer 200 with it (and @refresh, if any). */
static void ep_issue(struct gw_req *r, int kind, const char *name, const char *refresh)
{
	struct gateway *g = r->g;
	char tok[GW_TOKEN_MAX + 1];
	int n = gw_token_issue(g->tkey[kind], r->tenant, name, (uint64_t)time(NULL),
			       g->cfg->gw.token_ttl_s, tok, sizeof(tok));

	if (n < 0) {
		ep_answer(r, 503, "Service Unavailable", BODY_503, false);
		return;
	}
	g->ep[r->kind].ok++;
	ep_json_token(evhttp_request_get_output_buffer(r->req), tok, g->cfg->gw.token_ttl_s,
		      refresh);
	ep_answer(r, 200, "OK", NULL, false);
}

/* /token after the client's own and its tenant's counters. */
static void token_post_done(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms)
{
	struct gateway *g = r->g;
	const struct sl_client_cfg *cl = &g->cfg->clients[r->client_idx];
	uint64_t now_s = (uint64_t)time(NULL), family;
	char name[GW_REFRESH_NAME_MAX], refresh[GW_TOKEN_MAX + 1];
	uint8_t id[16];
	struct gw_vault_entry *e;
	uint32_t gen = 0;

	if (refused) {
		ep_refused(r, refused, retry_ms);
		return;
	}
	if (r->client_idx >= g->cfg->n_clients || strcmp(cl->id, r->client_id)) {
		/* A reload removed the client while its counters were asked. */
		g->ep[K_TOKEN].failed++;
		ep_answer(r, 401, "Unauthorized", BODY_INVALID_CLIENT, true);
		return;
	}
	gw_vault_id_name(g->vault, GW_V_REFRESH, (uint16_t)r->tenant_idx, cl->id, id);
	e = gw_vault_get(g->vault, id, now_s);
	if (!strcmp(r->grant, "refresh_token")) {
		/* Rotation: the generation presented is spent now, and only now, so a refusal
		 * by a counter never costs the client its chain. */
		if (!e || e->kind != GW_V_REFRESH || e->family != r->family || e->gen != r->gen) {
			g->ep[K_TOKEN].failed++;
			ep_answer(r, 400, "Bad Request", BODY_INVALID_GRANT, false);
			return;
		}
		family = e->family;
		gen = ++e->gen;
		e->exp_s = now_s + g->cfg->gw.refresh_ttl_s;
	} else {
		randombytes_buf(&family, sizeof(family));
	}
	refresh[0] = '\0';
	if (cl->grants & SL_GRANT_REFRESH_TOKEN) {
		if (!gen) {
			/* A new chain: the client's previous one ends here. */
			e = gw_vault_put(g->vault, id, now_s);
			e->kind = GW_V_REFRESH;
			e->tenant = (uint16_t)r->tenant_idx;
			e->family = family;
			e->gen = 0;
			e->exp_s = now_s + g->cfg->gw.refresh_ttl_s;
			snprintf(e->name, sizeof(e->name), "%s", cl->id);
		}
		if (gw_refresh_name(name, sizeof(name), cl->id, family, gen) ||
		    gw_token_issue(g->tkey[GW_TOK_REFRESH], r->tenant, name, now_s,
				   g->cfg->gw.refresh_ttl_s, refresh, sizeof(refresh)) < 0) {
			ep_answer(r, 503, "Service Unavailable", BODY_503, false);
			return;
		}
	}
	ep_issue(r, GW_TOK_CLIENT, cl->id, refresh[0] ? refresh : NULL);
}

#define CLIENT_WINDOW_NS (10ull * 1000000000ull)

/* Count one authenticated request of client @idx (its measured rate). */
static void client_meter(struct gateway *g, int idx, uint64_t now)
{
	const struct sl_client_cfg *cl = &g->cfg->clients[idx];

	if (strcmp(g->cm[idx].id, cl->id) || g->cm[idx].tenant != cl->tenant) {
		memset(&g->cm[idx], 0, sizeof(g->cm[idx]));
		snprintf(g->cm[idx].id, sizeof(g->cm[idx].id), "%s", cl->id);
		g->cm[idx].tenant = cl->tenant;
	}
	if (!g->cm[idx].win_ns)
		g->cm[idx].win_ns = now;
	if (now - g->cm[idx].win_ns >= CLIENT_WINDOW_NS) {
		double r = g->cm[idx].in_win * 1e9 / (double)(now - g->cm[idx].win_ns);

		if (r > g->cm[idx].peak)
			g->cm[idx].peak = r;
		g->cm[idx].win_ns = now;
		g->cm[idx].in_win = 0;
	}
	g->cm[idx].in_win++;
	g->cm[idx].total++;
}

/* The client's peak rate so far, the window in progress included once it is 1 s old. */
static double client_peak(const struct gateway *g, int idx, uint64_t now)
{
	const struct sl_client_cfg *cl = &g->cfg->clients[idx];
	double peak;

	if (strcmp(g->cm[idx].id, cl->id) || g->cm[idx].tenant != cl->tenant)
		return 0;
	peak = g->cm[idx].peak;
	if (g->cm[idx].win_ns && now - g->cm[idx].win_ns >= 1000000000ull) {
		double r = g->cm[idx].in_win * 1e9 / (double)(now - g->cm[idx].win_ns);

		if (r > peak)
			peak = r;
	}
	return peak;
}

static void ep_token(struct gw_req *r)
{
	struct gateway *g = r->g;
	const struct sl_client_cfg *cl;
	struct gw_ask *a;
	int idx;
	bool ok = gw_client_auth(g->cfg, r->tenant_idx, r->client_id, r->secret, r->secret_len,
				 &idx);

	sodium_memzero(r->secret, sizeof(r->secret));
	if (!ok) {
		/* The attempt stays on (client_id, prefix). */
		g->ep[K_TOKEN].failed++;
		ep_answer(r, 401, "Unauthorized", BODY_INVALID_CLIENT, true);
		return;
	}
	/* Authenticated: its own pair is clear, nothing wider. */
	chain_settle(r, true);
	cl = &g->cfg->clients[idx];
	r->client_idx = idx;
	client_meter(g, idx, gw_now_ns());
	if (!strcmp(r->grant, "client_credentials") ?
		    !(cl->grants & SL_GRANT_CLIENT_CREDENTIALS) :
		    !(cl->grants & SL_GRANT_REFRESH_TOKEN)) {
		g->ep[K_TOKEN].failed++;
		ep_answer(r, 400, "Bad Request", BODY_UNAUTHORIZED_CLIENT, false);
		return;
	}
	if (!strcmp(r->grant, "refresh_token")) {
		struct gw_token_claims tc;
		char owner[SL_CLIENT_ID_LEN];
		uint64_t now_s = (uint64_t)time(NULL);
		uint8_t id[16];
		struct gw_vault_entry *e;

		/* Signed, so only the chain's state is kept: one entry per client. */
		if (gw_token_check(g->tkey[GW_TOK_REFRESH], r->refresh, strlen(r->refresh), now_s,
				   &tc) || strcmp(tc.tenant, r->tenant) ||
		    gw_refresh_parse(tc.account, owner, &r->family, &r->gen) ||
		    strcmp(owner, cl->id)) {
			g->ep[K_TOKEN].failed++;
			ep_answer(r, 400, "Bad Request", BODY_INVALID_GRANT, false);
			return;
		}
		gw_vault_id_name(g->vault, GW_V_REFRESH, (uint16_t)r->tenant_idx, cl->id, id);
		e = gw_vault_get(g->vault, id, now_s);
		if (e && e->family == r->family && r->gen < e->gen) {
			/* A spent refresh token came back: someone holds a copy of the chain.
			 * The chain ends (RFC 9700, 4.14.2); the client starts a new one with
			 * its secret. */
			g->refresh_reuse++;
			gw_vault_del(e);
			g->ep[K_TOKEN].failed++;
			ep_answer(r, 400, "Bad Request", BODY_INVALID_GRANT, false);
			return;
		}
		if (!e || e->family != r->family || r->gen != e->gen) {
			g->ep[K_TOKEN].failed++;
			ep_answer(r, 400, "Bad Request", BODY_INVALID_GRANT, false);
			return;
		}
	}
	ep_sched_done(r);
	/* With valid credentials, a refresh loop is a bug: the client's own limit (from its
	 * measured rate), then its tenant's share of issuance. */
	chain_begin(r);
	a = ep_ask(r, SL_CTR_TOKEN_CLIENT, "token client", cl->id, NULL);
	if (cl->rate > 0) {
		a->rate = cl->rate;
		a->burst = cl->burst > 0 ? cl->burst : g->cfg->counters[SL_CTR_TOKEN_CLIENT].burst;
	}
	ep_ask(r, SL_CTR_TENANT_TOKENS, "tenant tokens", NULL, NULL);
	ep_run_chain(r, token_post_done);
}

static void ep_deliver(struct gw_req *r, const char *kind, const char *text)
{
	struct gateway *g = r->g;

	if (gw_deliver(&g->deliv, r->tenant, r->user, kind, text)) {
		g->outbound_failed++;
		log_warn("gateway: delivery of a %s for tenant %s failed", kind, r->tenant);
	}
}

static void ep_mfa_send(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct gw_vault_entry *e;
	uint8_t id[16], check[32];
	char code[7], text[96];
	uint64_t now_s = (uint64_t)time(NULL);

	/* One code per account: this one replaces, and so invalidates, any before it. */
	gw_vault_new_code(g->vault, (uint16_t)r->tenant_idx, r->user, code, check);
	gw_vault_id_name(g->vault, GW_V_OTP, (uint16_t)r->tenant_idx, r->user, id);
	e = gw_vault_put(g->vault, id, now_s);
	e->kind = GW_V_OTP;
	e->tenant = (uint16_t)r->tenant_idx;
	e->exp_s = now_s + g->cfg->gw.otp_ttl_s;
	memcpy(e->check, check, sizeof(check));
	snprintf(e->name, sizeof(e->name), "%s", r->user);
	snprintf(text, sizeof(text), "code=%s valid_s=%u", code, g->cfg->gw.otp_ttl_s);
	ep_deliver(r, "otp", text);
	sodium_memzero(code, sizeof(code));
	sodium_memzero(text, sizeof(text));
	g->otp_sent++;
	g->ep[K_MFA_SEND].ok++;
	ep_answer(r, 202, "Accepted", BODY_OTP_SENT, false);
}

/* A verified person (a right code, a confirmed link): the account's own budget, the per-user
 * dial, is asked before anything is spent; @done hears the answer. */
static void ask_user_budget(struct gw_req *r, gw_chain_done_fn done)
{
	ep_sched_done(r);
	chain_begin(r);
	ep_ask(r, SL_CTR_USER, "user", r->user, NULL);
	ep_run_chain(r, done);
}

static void mfa_post_done(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms);

static void ep_mfa_verify(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct gw_vault_entry *e;
	uint8_t id[16];

	gw_vault_id_name(g->vault, GW_V_OTP, (uint16_t)r->tenant_idx, r->user, id);
	e = gw_vault_get(g->vault, id, (uint64_t)time(NULL));
	if (!e || !gw_vault_code_ok(g->vault, e, r->code6, r->code_len)) {
		g->ep[K_MFA_VERIFY].failed++;
		ep_answer(r, 401, "Unauthorized", BODY_MFA_FAIL, true);
		return;
	}
	/* The person is through: now the account's own budget (the per-user dial) is asked,
	 * and the code is spent only if it says yes. */
	ask_user_budget(r, mfa_post_done);
}

static void mfa_post_done(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms)
{
	struct gateway *g = r->g;
	struct gw_vault_entry *e;
	uint8_t id[16];

	if (refused) {
		ep_refused(r, refused, retry_ms);
		return;
	}
	gw_vault_id_name(g->vault, GW_V_OTP, (uint16_t)r->tenant_idx, r->user, id);
	e = gw_vault_get(g->vault, id, (uint64_t)time(NULL));
	if (!e || !gw_vault_code_ok(g->vault, e, r->code6, r->code_len)) {
		/* A newer code replaced it meanwhile. */
		g->ep[K_MFA_VERIFY].failed++;
		ep_answer(r, 401, "Unauthorized", BODY_MFA_FAIL, true);
		return;
	}
	gw_vault_del(e); /* one use */
	ep_issue(r, GW_TOK_MFA, r->user, NULL);
}

/* A magic link for @purpose to r->user, delivered as @kind. */
static void ep_link(struct gw_req *r, int purpose, const char *kind)
{
	struct gateway *g = r->g;
	struct gw_vault_entry *e;
	char secret[GW_SECRET_TEXT], text[GW_SECRET_TEXT + 192];
	uint8_t id[16];
	uint64_t now_s = (uint64_t)time(NULL);

	gw_vault_new_secret(secret);
	gw_vault_id_secret(g->vault, GW_V_MAGIC, secret, id);
	e = gw_vault_put(g->vault, id, now_s);
	e->kind = GW_V_MAGIC;
	e->purpose = (uint8_t)purpose;
	e->tenant = (uint16_t)r->tenant_idx;
	e->exp_s = now_s + g->cfg->gw.magic_ttl_s;
	snprintf(e->name, sizeof(e->name), "%s", r->user);
	snprintf(text, sizeof(text), "link=%s/magic/%s valid_s=%u", g->cfg->gw.link_base, secret,
		 g->cfg->gw.magic_ttl_s);
	ep_deliver(r, kind, text);
	sodium_memzero(secret, sizeof(secret));
	sodium_memzero(text, sizeof(text));
	g->links_sent++;
}

/* /password-reset and /register: one message either way, one answer whatever happened. */
static void ep_account(struct gw_req *r)
{
	struct gateway *g = r->g;
	bool known = gw_creds_find(g->creds, r->tenant, r->user, r->user_len) != NULL;

	if (r->kind == K_RESET) {
		if (known) {
			ep_link(r, GW_LINK_RESET, "reset_link");
		} else {
			ep_deliver(r, "notice", "reason=reset_without_account");
			g->notices_sent++;
		}
		g->ep[K_RESET].ok++;
		ep_answer(r, 202, "Accepted", BODY_RESET_SENT, true);
		return;
	}
	if (known) {
		ep_deliver(r, "notice", "reason=already_registered");
		g->notices_sent++;
	} else {
		ep_link(r, GW_LINK_REGISTER, "register_link");
	}
	g->ep[K_REGISTER].ok++;
	ep_answer(r, 202, "Accepted", BODY_REGISTER_SENT, true);
}

static const char PAGE_HEAD[] = "<!doctype html><html><head><meta charset=\"utf-8\">"
				"<meta name=\"robots\" content=\"noindex\"><title>Confirm</title>"
				"</head><body>";

static void ep_magic_page(struct gw_req *r, const struct gw_vault_entry *e)
{
	struct evbuffer *b = evhttp_request_get_output_buffer(r->req);

	/* A form, and nothing done: mail scanners fetch links, people press buttons. An
	 * unknown link gets the sign-in page too, so a GET tells nobody which links live. */
	evbuffer_add(b, PAGE_HEAD, strlen(PAGE_HEAD));
	if (e && e->purpose == GW_LINK_REGISTER)
		evbuffer_add_printf(b, "<h1>Finish signing up</h1><form method=\"post\">"
				    "<label>Choose a password <input type=\"password\" "
				    "name=\"password\" required></label>"
				    "<button type=\"submit\">Create my account</button>"
				    "</form></body></html>");
	else
		evbuffer_add_printf(b, "<h1>Continue signing in</h1><form method=\"post\">"
				    "<button type=\"submit\">Continue</button></form>"
				    "</body></html>");
	r->ctype = "text/html; charset=utf-8";
	r->g->ep[K_MAGIC].ok++;
	ep_answer(r, 200, "OK", NULL, false);
}

static void magic_post_done(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms);

static void ep_magic(struct gw_req *r)
{
	struct gateway *g = r->g;
	struct gw_vault_entry *e;
	uint8_t id[16];

	gw_vault_id_secret(g->vault, GW_V_MAGIC, r->link, id);
	e = gw_vault_get(g->vault, id, (uint64_t)time(NULL));
	if (e && (e->kind != GW_V_MAGIC || e->tenant != r->tenant_idx))
		e = NULL;
	if (r->method == SL_M_GET) {
		ep_magic_page(r, e);
		return;
	}
	if (!e) {
		g->ep[K_MAGIC].failed++;
		ep_answer(r, 401, "Unauthorized", BODY_LINK_FAIL, true);
		return;
	}
	snprintf(r->user, sizeof(r->user), "%s", e->name);
	r->user_len = strlen(r->user);
	/* The person pressed the button: now the account's own budget is spent. */
	ask_user_budget(r, magic_post_done);
}

static void magic_post_done(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms)
{
	struct gateway *g = r->g;
	struct gw_vault_entry *e;
	uint8_t id[16];

	if (refused) {
		ep_refused(r, refused, retry_ms);
		return;
	}
	gw_vault_id_secret(g->vault, GW_V_MAGIC, r->link, id);
	e = gw_vault_get(g->vault, id, (uint64_t)time(NULL));
	if (!e || e->kind != GW_V_MAGIC || e->tenant != r->tenant_idx) {
		g->ep[K_MAGIC].failed++;
		ep_answer(r, 401, "Unauthorized", BODY_LINK_FAIL, true);
		return;
	}
	if (e->purpose == GW_LINK_REGISTER) {
		/* Sign-ups are confirmed on the hash pool (finish_register), never here. */
		g->ep[K_MAGIC].failed++;
		ep_answer(r, 401, "Unauthorized", BODY_LINK_FAIL, true);
		return;
	}
	gw_vault_del(e); /* consumed: once */
	ep_issue(r, GW_TOK_PASSWORD, r->user, NULL);
}

/* After admission, on the loop. */
static void run_endpoint(struct gw_req *r)
{
	r->cpu0 = thread_cpu_ns();
	switch (r->kind) {
	case K_TOKEN:
		ep_token(r);
		break;
	case K_MFA_SEND:
		ep_mfa_send(r);
		break;
	case K_MFA_VERIFY:
		ep_mfa_verify(r);
		break;
	case K_RESET:
	case K_REGISTER:
		ep_account(r);
		break;
	default:
		ep_magic(r);
		break;
	}
}

/* A sign-up link came back with a password: the worker made its hash. Write the account,
 * re-read the store (all or nothing, as on reload), spend the link, sign the person in. */
static void finish_register(struct gw_req *r, uint64_t now)
{
	struct gateway *g = r->g;
	struct gw_tstats *t = &g->ts[r->job.tenant];
	struct gw_work *w = &r->work;
	struct gw_vault_entry *e;
	struct gw_creds *fresh = NULL;
	char err[2048];
	uint8_t id[16];

	g->st.hashes++;
	t->hashes++;
	t->units_measured += (double)w->cpu_ns / 100000.0;
	gw_hist_add(&t->service, w->end_ns - w->start_ns);
	gw_sched_done(g->sched, &r->job, (double)w->cpu_ns / 100000.0, w->end_ns - w->start_ns,
		      now);
	gw_vault_id_secret(g->vault, GW_V_MAGIC, r->link, id);
	e = gw_vault_get(g->vault, id, (uint64_t)time(NULL));
	if (!w->verified || !e || e->kind != GW_V_MAGIC || e->purpose != GW_LINK_REGISTER ||
	    e->tenant != r->tenant_idx ||
	    gw_creds_find(g->creds, r->tenant, r->user, r->user_len)) {
		g->ep[K_MAGIC].failed++;
		t->unauthorized++;
		respond(r, 401, "Unauthorized", BODY_LINK_FAIL, 0, true, false);
		return;
	}
	if (!g->cfg->gw.credentials[0] ||
	    gw_creds_append(g->cfg->gw.credentials, r->tenant, r->user, w->phc, err, sizeof(err)) ||
	    gw_creds_load(g->cfg->gw.credentials, g->cfg, &fresh, err, sizeof(err))) {
		log_error("gateway: cannot record a sign-up for tenant %s: %s", r->tenant,
			  g->cfg->gw.credentials[0] ? err : "no gateway.credentials file");
		respond(r, 503, "Service Unavailable", BODY_503, 0, false, false);
		return;
	}
	gw_creds_free(g->creds);
	g->creds = fresh;
	gw_vault_del(e);
	g->ep[K_MAGIC].ok++;
	t->ok++;
	{
		char tok[GW_TOKEN_MAX + 1];
		int n = gw_token_issue(g->tkey[GW_TOK_PASSWORD], r->tenant, r->user,
				       (uint64_t)time(NULL), g->cfg->gw.token_ttl_s, tok, sizeof(tok));

		if (n < 0) {
			respond(r, 503, "Service Unavailable", BODY_503, 0, false, false);
			return;
		}
		ep_json_token(evhttp_request_get_output_buffer(r->req), tok,
			      g->cfg->gw.token_ttl_s, NULL);
		respond(r, 201, "Created", NULL, 0, false, false);
	}
}

static int unhex(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Form-decode @in[0..n) into @out (cap bytes with the NUL); its length or -1. */
static ssize_t form_decode(const char *in, size_t n, char *out, size_t cap)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		int c = (unsigned char)in[i];

		if (c == '%') {
			int hi = i + 2 < n ? unhex(in[i + 1]) : -1;
			int lo = i + 2 < n ? unhex(in[i + 2]) : -1;

			if (hi < 0 || lo < 0)
				return -1;
			c = hi << 4 | lo;
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (!c || o + 1 >= cap)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return (ssize_t)o;
}

/*
 * RFC 6749 2.3.1: client credentials as HTTP Basic, each form-encoded. With @r NULL only
 * says whether the header is there (1) or not (0); else fills r->client_id and r->secret:
 * 1, 0 when absent, -1 with @err when malformed.
 */
static int basic_auth(struct evhttp_request *req, struct gw_req *r, char *err,
		      size_t errlen)
{
	const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req),
					      "Authorization");
	unsigned char raw[SL_CLIENT_ID_LEN * 3 + GW_SECRET_MAX * 3 + 2];
	size_t len = 0;
	const char *colon;
	ssize_t a, b;

	if (!auth || strncasecmp(auth, "Basic ", 6))
		return 0;
	if (!r)
		return 1;
	auth += 6;
	while (*auth == ' ')
		auth++;
	if (sodium_base642bin(raw, sizeof(raw) - 1, auth, strlen(auth), NULL, &len, NULL,
			      sodium_base64_VARIANT_ORIGINAL))
		goto bad;
	raw[len] = '\0';
	colon = memchr(raw, ':', len);
	if (!colon)
		goto bad;
	a = form_decode((const char *)raw, (size_t)(colon - (const char *)raw), r->client_id,
			sizeof(r->client_id));
	b = form_decode(colon + 1, len - (size_t)(colon + 1 - (const char *)raw), r->secret,
			sizeof(r->secret));
	sodium_memzero(raw, sizeof(raw));
	if (a <= 0 || b < 0)
		goto bad_zeroed;
	r->secret_len = (size_t)b;
	return 1;
bad:
	sodium_memzero(raw, sizeof(raw));
bad_zeroed:
	r->client_id[0] = '\0';
	sodium_memzero(r->secret, sizeof(r->secret));
	snprintf(err, errlen, "Authorization: Basic must be base64 of CLIENT_ID:SECRET");
	return -1;
}

/* The fields each endpoint reads from its body. Returns 0, or -EINVAL with @err. */
static int ep_fields(struct gw_req *r, int type, const char *body, size_t blen, char *err,
		     size_t errlen)
{
	struct gw_field f[5];
	int ret, n = 0;

	memset(f, 0, sizeof(f));
	switch (r->kind) {
	case K_TOKEN:
		f[n++] = (struct gw_field){ .name = "grant_type", .buf = r->grant,
					    .cap = sizeof(r->grant) };
		f[n++] = (struct gw_field){ .name = "client_id", .buf = r->client_id,
					    .cap = sizeof(r->client_id) };
		f[n++] = (struct gw_field){ .name = "client_secret", .buf = r->secret,
					    .cap = sizeof(r->secret) };
		f[n++] = (struct gw_field){ .name = "refresh_token", .buf = r->refresh,
					    .cap = sizeof(r->refresh) };
		break;
	case K_MFA_VERIFY:
		f[n++] = (struct gw_field){ .name = "code", .buf = r->code6,
					    .cap = sizeof(r->code6) };
		break;
	case K_RESET:
	case K_REGISTER:
		f[n++] = (struct gw_field){ .name = "username", .buf = r->user,
					    .cap = sizeof(r->user) };
		break;
	case K_MAGIC:
		f[n++] = (struct gw_field){ .name = "password", .buf = r->work.pwd,
					    .cap = sizeof(r->work.pwd) };
		break;
	default:
		return 0;
	}
	ret = gw_body_fields(type, body, blen, f, n, err, errlen);
	if (ret)
		return ret;
	switch (r->kind) {
	case K_TOKEN:
		if (f[2].found)
			r->secret_len = f[2].len;
		if (!f[0].found || (strcmp(r->grant, "client_credentials") &&
				    strcmp(r->grant, "refresh_token"))) {
			snprintf(err, errlen, "'grant_type' must be client_credentials or "
				 "refresh_token");
			return -EINVAL;
		}
		if (f[1].found || f[2].found) {
			if (basic_auth(r->req, NULL, NULL, 0) > 0) {
				snprintf(err, errlen, "client credentials in the body and in "
					 "Authorization: use one");
				return -EINVAL;
			}
		} else if (basic_auth(r->req, r, err, errlen) < 0) {
			return -EINVAL;
		} else if (r->client_id[0]) {
			f[1].found = f[2].found = true;
			f[1].len = strlen(r->client_id);
		}
		if (!f[1].found || !f[1].len || !f[2].found) {
			snprintf(err, errlen, "'client_id' and 'client_secret' are required (in the "
				 "body, or as Authorization: Basic)");
			return -EINVAL;
		}
		if (!strcmp(r->grant, "refresh_token") && !f[3].len) {
			snprintf(err, errlen, "'refresh_token' is required for this grant");
			return -EINVAL;
		}
		break;
	case K_MFA_VERIFY:
		r->code_len = f[0].len;
		if (!f[0].found) {
			snprintf(err, errlen, "'code' is required");
			return -EINVAL;
		}
		break;
	case K_RESET:
	case K_REGISTER:
		r->user_len = f[0].len;
		if (!f[0].found || !gw_account_valid(r->user, f[0].len)) {
			snprintf(err, errlen, "'username' must be 1..%d bytes of UTF-8 without "
				 "control characters or commas", GW_USER_MAX);
			return -EINVAL;
		}
		break;
	case K_MAGIC:
		r->work.pwd_len = (uint32_t)f[0].len;
		break;
	default:
		break;
	}
	return 0;
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct gateway *g = arg;
	const struct sl_config *c = g->cfg;
	struct gw_field f[2];
	struct gw_conn *conn = conn_of(g, req);
	struct gw_req *r;
	char host[MAX_HOST + 1], err[160], token[GW_TOKEN_MAX + 1];
	const char *path, *body = NULL;
	size_t blen = 0, tlen = 0;
	uint32_t dl_ms = c->gw.default_deadline_ms;
	uint64_t now = gw_now_ns();
	int method, ti, slot, ri, kind, hr;

	g->st.requests++;
	if (conn)
		conn->deadline_ns = 0; /* the whole request is in: no more read deadline */
	evhttp_request_set_on_complete_cb(req, on_complete, g);

	method = method_of(req);
	path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	if (!path || path[0] != '/' || strlen(path) >= 1024) {
		reply_plain(g, req, 400, "Bad Request", "bad_request", "malformed request path");
		return;
	}
	hr = host_of(req, host, sizeof(host));
	if (hr < 0) {
		reply_plain(g, req, 400, "Bad Request", "bad_request", "malformed Host header");
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
	kind = kind_of(path);
	if (kind == K__MAX) {
		reply_plain(g, req, 404, "Not Found", "no_handler", "this gateway serves /login, "
			    "/token, /token/validate, /introspect, /mfa/send, /mfa/verify, "
			    "/password-reset, /register and /magic/{token}");
		return;
	}
	if (method != handlers[kind].method &&
	    !(handlers[kind].method2 && method == handlers[kind].method2)) {
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

	r = calloc(1, sizeof(*r));
	if (!r) {
		reply_plain(g, req, 503, "Service Unavailable", "unavailable", NULL);
		return;
	}
	r->g = g;
	r->req = req;
	r->arrival_ns = now;
	r->kind = kind;
	r->method = method;
	r->route = ri;
	snprintf(r->tenant, sizeof(r->tenant), "%s", c->tenants[ti].name);
	r->tenant_idx = ti;
	client_of(g, req, &r->client);
	r->next = g->reqs;
	if (g->reqs)
		g->reqs->prev = r;
	g->reqs = r;
	g->n_reqs++;

	/* The body: parsed and checked before admission, so a malformed request costs
	 * neither budget nor hash. */
	if (kind == K_MAGIC)
		snprintf(r->link, sizeof(r->link), "%s", path + strlen(handlers[K_MAGIC].path));
	if (kind == K_MAGIC && method == SL_M_POST &&
	    !evbuffer_get_length(evhttp_request_get_input_buffer(req))) {
		/* "Continue" on a sign-in link: a form with no fields. */
	} else if (kind == K_LOGIN || kind == K_INTROSPECT || kind == K_TOKEN ||
		   kind == K_MFA_VERIFY || kind == K_RESET || kind == K_REGISTER ||
		   (kind == K_MAGIC && method == SL_M_POST)) {
		int type = gw_body_type(evhttp_find_header(evhttp_request_get_input_headers(req),
							   "Content-Type"));
		int ret;

		if (type == GW_BODY_OTHER) {
			wipe_body(req);
			req_free(r);
			reply_plain(g, req, 415, "Unsupported Media Type", "unsupported_media_type",
				    "send application/json or application/x-www-form-urlencoded");
			return;
		}
		body = body_of(req, &blen);
		if (kind == K_LOGIN) {
			f[0] = (struct gw_field){ .name = "username", .buf = r->user,
						  .cap = sizeof(r->user) };
			f[1] = (struct gw_field){ .name = "password", .buf = r->work.pwd,
						  .cap = sizeof(r->work.pwd) };
			ret = gw_body_fields(type, body, blen, f, 2, err, sizeof(err));
			if (!ret && (!f[0].found || !f[1].found)) {
				snprintf(err, sizeof(err), "'username' and 'password' are required");
				ret = -EINVAL;
			}
			if (!ret && !gw_account_valid(r->user, f[0].len)) {
				snprintf(err, sizeof(err), "the username must be 1..%d bytes of UTF-8 "
					 "without control characters or commas", GW_USER_MAX);
				ret = -EINVAL;
			}
			if (!ret && !f[1].len) {
				snprintf(err, sizeof(err), "the password is empty");
				ret = -EINVAL;
			}
			r->user_len = f[0].len;
			r->work.pwd_len = (uint32_t)f[1].len;
		} else if (kind != K_INTROSPECT) {
			ret = ep_fields(r, type, body, blen, err, sizeof(err));
		} else {
			f[0] = (struct gw_field){ .name = "token", .buf = token,
						  .cap = sizeof(token) };
			ret = gw_body_fields(type, body, blen, f, 1, err, sizeof(err));
			if (!ret && !f[0].found) {
				snprintf(err, sizeof(err), "'token' is required");
				ret = -EINVAL;
			}
			tlen = f[0].len;
		}
		wipe_body(req);
		if (ret) {
			char detail[200];
			size_t i, o = 0;

			/* Our messages are ASCII except quoted field names: escape quotes. */
			for (i = 0; err[i] && o + 2 < sizeof(detail); i++) {
				if (err[i] == '"' || err[i] == '\\')
					detail[o++] = '\\';
				detail[o++] = err[i];
			}
			detail[o] = '\0';
			req_free(r);
			reply_plain(g, req, 400, "Bad Request", "bad_request", detail);
			return;
		}
	}
	if (kind == K_VALIDATE) {
		tlen = bearer_of(req, token);
		if (!tlen) {
			/* Nothing to check: refused before it costs anything, but like any
			 * other failed check. */
			r->job.tenant = (uint16_t)slot;
			r->job.cls = (uint16_t)gw_sched_class(g->sched, ri);
			g->ts[slot].requests++;
			g->ts[slot].unauthorized++;
			respond(r, 401, "Unauthorized", BODY_401_TOKEN, 0, true, false);
			return;
		}
	}

	r->job.tenant = (uint16_t)slot;
	r->job.cls = (uint16_t)gw_sched_class(g->sched, ri);
	r->job.pooled = kind == K_LOGIN;
	r->job.db = c->routes[ri].db;
	r->job.deadline_ns = now + (uint64_t)dl_ms * 1000000ull;
	g->ts[slot].requests++;
	/* A login hears what the stream job decided, then asks the counters; admission
	 * follows their answer. */
	if (kind == K_LOGIN && g->stream) {
		stream_ids(g, r);
		if (escalated(r))
			return;
	}
	if (kind == K_LOGIN) {
		login_start(r);
		return;
	}
	if (kind == K_MFA_SEND || kind == K_MFA_VERIFY) {
		/* The second factor follows a first: a password token names the account. */
		struct gw_token_claims cl;
		int tk;

		tlen = bearer_of(req, token);
		if (!tlen || token_any(g, token, tlen, &cl, &tk) || tk != GW_TOK_PASSWORD ||
		    strcmp(cl.tenant, r->tenant)) {
			sodium_memzero(token, sizeof(token));
			g->ts[slot].unauthorized++;
			g->ep[kind].failed++;
			respond(r, 401, "Unauthorized", kind == K_MFA_SEND ? BODY_401_TOKEN :
				BODY_MFA_FAIL, 0, true, false);
			return;
		}
		snprintf(r->user, sizeof(r->user), "%s", cl.account);
		r->user_len = strlen(r->user);
	}
	if (kind == K_MAGIC && method == SL_M_POST) {
		/* A sign-up link with a password is confirmed on the hash pool. */
		uint8_t id[16];
		const struct gw_vault_entry *e;

		gw_vault_id_secret(g->vault, GW_V_MAGIC, r->link, id);
		e = gw_vault_get(g->vault, id, (uint64_t)time(NULL));
		if (e && e->kind == GW_V_MAGIC && e->purpose == GW_LINK_REGISTER &&
		    e->tenant == ti) {
			if (!r->work.pwd_len) {
				req_free(r);
				reply_plain(g, req, 400, "Bad Request", "bad_request",
					    "finishing a sign-up needs a 'password'");
				return;
			}
			snprintf(r->user, sizeof(r->user), "%s", e->name);
			r->user_len = strlen(r->user);
			r->job.pooled = true;
		}
	}
	if (kind >= K_TOKEN) {
		sodium_memzero(token, sizeof(token));
		ep_start(r);
		return;
	}
	admit(r, token, tlen);
	sodium_memzero(token, sizeof(token));
}

/* Admit @r (its job filled in) or shed it, then run it: logins on the pool, the rest here. */
static void admit(struct gw_req *r, const char *token, size_t tlen)
{
	struct gateway *g = r->g;
	struct gw_job *victim = NULL;
	uint64_t now = gw_now_ns();
	int verdict, slot = r->job.tenant;
	double ceiling = r->tenant_idx >= 0 && r->tenant_idx < g->cfg->n_tenants ?
			 g->cfg->tenants[r->tenant_idx].ceiling : 0;

	/* The ceiling (the courtesy): a tenant whose consumption over the last second has
	 * reached it gets no more, burst pool or not. It is at least the reservation, so a
	 * tenant inside its floor never meets it. */
	if (ceiling > 0 && g->sched->admission &&
	    gw_meter_value(&g->sched->t[slot].cons, now) * 1e9 / GW_METER_TAU_NS >= ceiling) {
		shed(r, GW_SHED_CEILING);
		return;
	}
	verdict = gw_sched_admit(g->sched, &r->job, now, &victim);
	if (victim)
		shed(req_of_job(victim), GW_SHED_PUSHED_OUT);
	if (verdict != GW_SHED_NONE) {
		shed(r, verdict);
		return;
	}
	if (r->job.lane == GW_LANE_RESERVED)
		g->ts[slot].admitted_reserved++;
	else
		g->ts[slot].admitted_burst++;
	if (r->job.pooled)
		dispatch(g);
	else if (r->kind >= K_TOKEN)
		run_endpoint(r);
	else
		run_inline(r, token, tlen);
}

/* ---- lifecycle -------------------------------------------------------------------------- */

void gateway_prepared_free(struct gw_prepared *p)
{
	if (!p)
		return;
	gw_creds_free(p->creds);
	if (p->have_deliv)
		gw_delivery_close(&p->deliv);
	sodium_memzero(p->key, sizeof(p->key));
	free(p);
}

struct gw_prepared *gateway_prepare(const struct sl_config *c, char *err, size_t errlen)
{
	struct gw_prepared *p;

	if (sodium_init() < 0) {
		snprintf(err, errlen, "libsodium cannot initialise");
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (c->gw.credentials[0] && gw_creds_load(c->gw.credentials, c, &p->creds, err, errlen))
		goto fail;
	if (c->gw.session_key[0]) {
		if (gw_token_key_load(c->gw.session_key, p->key, err, errlen))
			goto fail;
		p->have_key = true;
	}
	if (gw_delivery_open(&p->deliv, &c->gw, err, errlen))
		goto fail;
	p->have_deliv = true;
	return p;
fail:
	gateway_prepared_free(p);
	return NULL;
}

/* Per-slot stats follow the scheduler's slots: a slot given to another tenant starts
 * from zero. */
static void sync_stats(struct gateway *g)
{
	int i;

	for (i = 0; i < GW_MAX_TENANTS; i++) {
		const struct gw_tstate *t = &g->sched->t[i];

		if (t->used && strcmp(g->ts[i].name, t->name)) {
			memset(&g->ts[i], 0, sizeof(g->ts[i]));
			snprintf(g->ts[i].name, sizeof(g->ts[i].name), "%s", t->name);
		}
	}
}

static void set_limits(struct gateway *g)
{
	/* evhttp's inactivity timeout is the backstop for slow readers of our answers; twice
	 * the request deadline, so the deadline (conn_sweep) is what closes idle and dripping
	 * connections, and is counted. */
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

static void set_token_keys(struct gateway *g)
{
	int k;

	for (k = 0; k < GW_TOK_KEYS; k++)
		gw_token_subkey(g->key, k, g->tkey[k]);
}

struct gateway *gateway_start(struct event_base *base, const struct sl_config *c,
			      struct gw_prepared *p)
{
	struct gateway *g = calloc(1, sizeof(*g));
	uint8_t lkey[16], rnd[32];
	char host[128];
	uint16_t port;
	int ret;

	if (!g || sodium_init() < 0) {
		free(g);
		gateway_prepared_free(p);
		return NULL;
	}
	/* Take what was prepared first, so every failure below has one way out. */
	g->creds = p->creds;
	p->creds = NULL;
	if (p->have_key)
		memcpy(g->key, p->key, sizeof(g->key));
	else
		randombytes_buf(g->key, sizeof(g->key));
	set_token_keys(g);
	if (p->have_deliv) {
		g->deliv = p->deliv;
		p->have_deliv = false;
	}
	gateway_prepared_free(p);
	g->vault = gw_vault_new(g->key);
	if (!g->vault)
		goto fail;
	g->base = base;
	g->pool.efd = -1;
	g->cfg = malloc(sizeof(*g->cfg));
	g->sched = calloc(1, sizeof(*g->sched));
	g->ladder = calloc(1, sizeof(*g->ladder));
	g->ts = calloc(GW_MAX_TENANTS, sizeof(*g->ts));
	if (!g->cfg || !g->sched || !g->ladder || !g->ts)
		goto fail;
	*g->cfg = *c;
	g->started = c->gw;
	if (!c->gw.credentials[0])
		log_warn("gateway: no gateway.credentials file: every login will fail");
	if (!c->gw.session_key[0])
		log_info("gateway: no gateway.session_key: tokens are signed with a key made now "
			 "and stop validating when sluiced restarts");

	if (gw_sched_init(g->sched, g->cfg, gw_now_ns())) {
		log_error("gateway: cannot set up admission");
		goto fail;
	}
	randombytes_buf(lkey, sizeof(lkey));
	gw_ladder_init(g->ladder, c->retry_after, c->n_retry, c->streak_decay_s, lkey);
	sync_stats(g);

	/* The dummy hash for unknown accounts: made with the running parameters so it costs
	 * what a real one does. */
	randombytes_buf(rnd, sizeof(rnd));
	ret = gw_argon2_hash(&c->gw, (const char *)rnd, sizeof(rnd), g->dummy_phc,
			     sizeof(g->dummy_phc));
	sodium_memzero(rnd, sizeof(rnd));
	if (ret) {
		log_error("gateway: cannot compute the dummy hash (m_cost %u KiB): %s",
			  c->gw.m_cost_kib, strerror(-ret));
		goto fail;
	}

	ret = gw_pool_start(&g->pool, c->gw.workers);
	if (ret)
		goto fail;
	g->sched->workers = g->pool.n;
	g->pool_ev = event_new(base, g->pool.efd, EV_READ | EV_PERSIST, on_pool, g);
	if (!g->pool_ev || event_add(g->pool_ev, NULL))
		goto fail;

	g->http = evhttp_new(base);
	if (!g->http)
		goto fail;
	evhttp_set_allowed_methods(g->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
				   EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
				   EVHTTP_REQ_PATCH);
	evhttp_set_gencb(g->http, on_request, g);
	evhttp_set_bevcb(g->http, on_new_conn, g);
	set_limits(g);
	if (split_listen(c->gw.listen, host, sizeof(host), &port)) {
		log_error("gateway: cannot parse gateway.listen '%s'", c->gw.listen);
		goto fail;
	}
	g->bound = evhttp_bind_socket_with_handle(g->http, host, port);
	if (!g->bound) {
		log_error("gateway: cannot listen on %s: %s", c->gw.listen, strerror(errno));
		goto fail;
	}
	g->listener = evhttp_bound_socket_get_listener(g->bound);

	{
		struct timeval tv = { .tv_sec = 0, .tv_usec = TICK_MS * 1000 };

		g->tick = event_new(base, -1, EV_PERSIST, on_tick, g);
		if (!g->tick || event_add(g->tick, &tv))
			goto fail;
	}
	log_info("gateway listening on %s: %d tenant(s), %d route(s), %u Argon2id worker(s) "
		 "(m=%u KiB t=%u p=%u), %u account(s), admission %s", c->gw.listen, c->n_tenants,
		 c->n_routes, g->pool.n, c->gw.m_cost_kib, c->gw.t_cost, c->gw.parallelism,
		 gw_creds_count(g->creds), c->gw.admission ? "on" : "OFF (unbounded FIFO)");
	if (g->pool.n > 2 * (uint32_t)sysconf(_SC_NPROCESSORS_ONLN))
		log_warn("gateway: %u hash workers on %ld CPUs: extra workers add queueing in "
			 "the kernel, not throughput; lower memory_budget_mib", g->pool.n,
			 sysconf(_SC_NPROCESSORS_ONLN));
	return g;
fail:
	gateway_stop(g);
	return NULL;
}

void gateway_apply(struct gateway *g, const struct sl_config *c, struct gw_prepared *p)
{
	const struct sl_gateway_cfg *o = &g->started, *n = &c->gw;

	if (strcmp(o->listen, n->listen))
		log_warn("gateway.listen changes take effect at the next start");
	if (o->m_cost_kib != n->m_cost_kib || o->t_cost != n->t_cost ||
	    o->parallelism != n->parallelism || o->workers != n->workers)
		log_warn("gateway.argon2 changes take effect at the next start (the workers and "
			 "the dummy hash are sized by them)");
	*g->cfg = *c;
	/* What cannot change while running keeps its running value. */
	snprintf(g->cfg->gw.listen, sizeof(g->cfg->gw.listen), "%s", o->listen);
	g->cfg->gw.m_cost_kib = o->m_cost_kib;
	g->cfg->gw.t_cost = o->t_cost;
	g->cfg->gw.parallelism = o->parallelism;
	g->cfg->gw.memory_budget_mib = o->memory_budget_mib;
	g->cfg->gw.workers = o->workers;
	gw_creds_free(g->creds);
	g->creds = p->creds;
	p->creds = NULL;
	if (p->have_key)
		memcpy(g->key, p->key, sizeof(g->key));
	set_token_keys(g);
	if (p->have_deliv) {
		gw_delivery_close(&g->deliv);
		g->deliv = p->deliv;
		p->have_deliv = false;
	}
	gateway_prepared_free(p);
	gw_sched_configure(g->sched, g->cfg, gw_now_ns());
	g->sched->workers = g->pool.n;
	gw_ladder_set_levels(g->ladder, c->retry_after, c->n_retry, c->streak_decay_s);
	sync_stats(g);
	set_limits(g);
	log_info("gateway: config applied: %d tenant(s), %d route(s), %u account(s)",
		 c->n_tenants, c->n_routes, gw_creds_count(g->creds));
	dispatch(g);
}

void gateway_stop(struct gateway *g)
{
	struct gw_work *w;
	struct gw_req *r;

	if (!g)
		return;
	if (g->tick)
		event_free(g->tick);
	if (g->pool_ev)
		event_free(g->pool_ev);
	if (g->pool.th) {
		gw_pool_stop(&g->pool); /* never-started jobs are still on the request list */
		for (w = gw_pool_collect(&g->pool); w; w = w->next)
			; /* finished: answered below like everything else */
	}
	gw_pool_destroy(&g->pool);
	/* Everything outstanding gets an answer before evhttp frees its connections. */
	while ((r = g->reqs)) {
		if (r->hold) {
			send_now(r);
			continue;
		}
		r->code = 503;
		r->reason = "Service Unavailable";
		r->body = BODY_503;
		r->retry_after = 0;
		send_now(r);
	}
	if (g->http)
		evhttp_free(g->http);
	while (g->conns)
		conn_forget(g, g->conns);
	gw_creds_free(g->creds);
	gw_vault_free(g->vault);
	gw_delivery_close(&g->deliv);
	sodium_memzero(g->tkey, sizeof(g->tkey));
	free(g->esc_acct);
	free(g->esc_pw);
	sodium_memzero(g->key, sizeof(g->key));
	free(g->sched);
	free(g->ladder);
	free(g->ts);
	free(g->cfg);
	free(g);
}

/* ---- the tenants command ---------------------------------------------------------------- */

static double ms(uint64_t us)
{
	return (double)us / 1000.0;
}

static void tenants_json(struct gateway *g, FILE *f)
{
	struct gw_sched *s = g->sched;
	uint64_t now = gw_now_ns();
	double res_rate = gw_meter_value(&s->reserved_rate, now) * 1e9 / GW_METER_TAU_NS;
	double burst_rate = gw_meter_value(&s->burst_rate, now) * 1e9 / GW_METER_TAU_NS;
	double room = s->cap_cpu - res_rate;
	struct json j;
	int i, k, code;

	json_init(&j, f);
	json_obj_begin(&j, NULL);
	json_obj_begin(&j, "gateway");
	json_str(&j, "listen", g->started.listen);
	json_bool(&j, "admission", s->admission);
	json_u64(&j, "workers", g->pool.n);
	json_u64(&j, "busy_workers", g->pool.busy);
	json_u64(&j, "accounts", gw_creds_count(g->creds));
	json_u64(&j, "requests", g->st.requests);
	json_u64(&j, "hashes", g->st.hashes);
	json_u64(&j, "dummy_hashes", g->st.dummy_hashes);
	json_u64(&j, "expired_before_hash", g->st.expired_before_hash);
	json_u64(&j, "expired_at_worker", g->st.expired_at_start);
	json_u64(&j, "client_gone", g->st.client_gone);
	/* The endpoints beyond /login: answered, failed (bad secret, code, link, grant) and
	 * refused by one of their counters. */
	json_obj_begin(&j, "endpoints");
	for (k = K_TOKEN; k < K__MAX; k++) {
		static const char *const names[K__MAX] = { [K_TOKEN] = "token",
			[K_MFA_SEND] = "mfa_send", [K_MFA_VERIFY] = "mfa_verify",
			[K_RESET] = "password_reset", [K_REGISTER] = "register",
			[K_MAGIC] = "magic" };

		json_obj_begin(&j, names[k]);
		json_u64(&j, "ok", g->ep[k].ok);
		json_u64(&j, "failed", g->ep[k].failed);
		json_u64(&j, "throttled", g->ep[k].throttled);
		json_obj_end(&j);
	}
	json_u64(&j, "codes_sent", g->otp_sent);
	json_u64(&j, "links_sent", g->links_sent);
	json_u64(&j, "notices_sent", g->notices_sent);
	json_u64(&j, "delivery_failed", g->outbound_failed);
	json_u64(&j, "refresh_reuse", g->refresh_reuse);
	json_u64(&j, "vault_live", gw_vault_live(g->vault, (uint64_t)time(NULL)));
	json_obj_end(&j);
	json_obj_begin(&j, "queue");
	json_u64(&j, "depth", s->depth);
	json_u64(&j, "limit", gw_sched_depth_limit(s));
	json_str(&j, "mode", s->lifo ? "lifo" : "fifo");
	json_double(&j, "wait_ms", (double)gw_sched_queue_wait(s, now) / 1e6);
	json_bool(&j, "codel_dropping", s->dropping);
	json_u64(&j, "codel_episodes", s->codel_episodes);
	json_u64(&j, "lifo_switches", s->lifo_switches);
	json_double(&j, "service_rate", gw_sched_service_rate(s));
	json_double(&j, "service_ms", s->svc_ns / 1e6);
	json_obj_end(&j);
	json_obj_begin(&j, "capacity");
	json_double(&j, "cpu", s->cap_cpu);
	json_double(&j, "db", s->cap_db);
	json_double(&j, "tokens", s->pool.tokens);
	json_double(&j, "reserved_rate", res_rate);
	json_double(&j, "burst_rate", burst_rate);
	/* The share of what reservations leave free that burst work is using now. */
	json_double(&j, "burst_pool_utilization", room > 0 ? burst_rate / room : 1.0);
	json_double(&j, "db_shared_in_use", s->db_shared_used);
	json_obj_end(&j);
	json_obj_begin(&j, "floor");
	json_u64(&j, "ms", g->cfg->gw.reject_floor_ms);
	json_u64(&j, "held", g->held);
	json_u64(&j, "max_held", g->cfg->gw.max_held);
	json_u64(&j, "held_total", g->st.floor_held);
	json_u64(&j, "skipped", g->st.floor_skipped);
	json_obj_end(&j);
	json_obj_begin(&j, "connections");
	json_u64(&j, "open", g->n_conns);
	json_u64(&j, "max", g->cfg->gw.max_connections);
	json_u64(&j, "timed_out", g->st.conn_timeouts);
	json_u64(&j, "accept_pauses", g->st.accept_pauses);
	json_obj_end(&j);
	json_obj_begin(&j, "client_address");
	json_u64(&j, "trusted_hops", g->cfg->gw.trusted_hops);
	json_u64(&j, "from_xff", g->st.xff_used);
	json_u64(&j, "xff_ignored", g->st.xff_ignored);
	json_obj_end(&j);
	json_obj_begin(&j, "responses");
	for (code = 100; code < 600; code++)
		if (g->st.status[code]) {
			char key[8];

			snprintf(key, sizeof(key), "%d", code);
			json_u64(&j, key, g->st.status[code]);
		}
	json_obj_end(&j);
	json_arr_begin(&j, "classes");
	for (k = 0; k < GW_MAX_CLASSES; k++) {
		const struct gw_class *cl = &s->cls[k];

		if (!cl->used)
			continue;
		json_obj_begin(&j, NULL);
		json_str(&j, "name", cl->name);
		json_double(&j, "configured", cl->configured);
		json_double(&j, "estimate", cl->estimate);
		/* Persistent drift means the route table no longer tells the truth. */
		json_double(&j, "drift", cl->configured > 0 ?
			    cl->estimate / cl->configured - 1.0 : 0);
		json_u64(&j, "samples", cl->samples);
		json_double(&j, "mean_abs_error", cl->samples ?
			    cl->sum_abs_err / (double)cl->samples : 0);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);

	json_arr_begin(&j, "tenants");
	for (i = 0; i < GW_MAX_TENANTS; i++) {
		const struct gw_tstate *t = &s->t[i];
		const struct gw_tstats *ts = &g->ts[i];
		double cons;

		if (!t->used)
			continue;
		cons = gw_sched_consumption(s, i, now);
		json_obj_begin(&j, NULL);
		json_str(&j, "name", t->name);
		json_bool(&j, "live", t->live);
		json_double(&j, "reservation", t->reservation);
		json_double(&j, "consumption", cons);
		json_double(&j, "overage", cons > t->reservation ? cons - t->reservation : 0);
		/* No reservation, no ratio: all of its use is burst (and it is shed first). */
		if (t->reservation > 0)
			json_double(&j, "overage_ratio", gw_sched_overage(s, i, now));
		else
			json_null(&j, "overage_ratio");
		json_u64(&j, "requests", ts->requests);
		json_obj_begin(&j, "admitted");
		json_u64(&j, "reserved", ts->admitted_reserved);
		json_u64(&j, "burst", ts->admitted_burst);
		json_obj_end(&j);
		json_u64(&j, "ok", ts->ok);
		json_u64(&j, "unauthorized", ts->unauthorized);
		json_u64(&j, "hashes", ts->hashes);
		json_u64(&j, "dummy_hashes", ts->dummy_hashes);
		json_double(&j, "units_measured", ts->units_measured);
		json_u64(&j, "shed", ts->shed);
		json_obj_begin(&j, "shed_by_class");
		for (k = 0; k < GW_MAX_CLASSES; k++)
			if (s->cls[k].used)
				json_u64(&j, s->cls[k].name, ts->shed_by_class[k]);
		json_obj_end(&j);
		json_obj_begin(&j, "shed_by_reason");
		for (k = 1; k < GW_SHED__MAX; k++)
			json_u64(&j, gw_shed_name(k), ts->shed_by_reason[k]);
		json_obj_end(&j);
		json_obj_begin(&j, "queue_wait_ms");
		json_double(&j, "p50", ms(gw_hist_quantile_us(&ts->wait, 0.5)));
		json_double(&j, "p99", ms(gw_hist_quantile_us(&ts->wait, 0.99)));
		json_u64(&j, "n", ts->wait.n);
		json_obj_end(&j);
		json_obj_begin(&j, "service_ms");
		json_double(&j, "p50", ms(gw_hist_quantile_us(&ts->service, 0.5)));
		json_double(&j, "p99", ms(gw_hist_quantile_us(&ts->service, 0.99)));
		json_u64(&j, "n", ts->service.n);
		json_obj_end(&j);
		json_u64(&j, "queued", t->burst.n + t->queued_reserved);
		json_u64(&j, "inflight", t->inflight);
		json_double(&j, "db_in_use", t->db_used_share + t->db_used_shared);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	json_end(&j);
}

static void tenants_text(struct gateway *g, FILE *f)
{
	struct gw_sched *s = g->sched;
	uint64_t now = gw_now_ns();
	int i, k;

	fprintf(f, "gateway %s  admission %s  workers %u (%u busy)  queue %u/%u %s%s  "
		"service %.1f/s  hashes %llu (%llu dummy)  expired unhashed %llu\n",
		g->started.listen, s->admission ? "on" : "OFF", g->pool.n, g->pool.busy,
		s->depth, gw_sched_depth_limit(s), s->lifo ? "LIFO" : "FIFO",
		s->dropping ? " CODEL" : "", gw_sched_service_rate(s),
		(unsigned long long)g->st.hashes, (unsigned long long)g->st.dummy_hashes,
		(unsigned long long)(g->st.expired_before_hash));
	fprintf(f, "%-16s %9s %9s %6s %9s %8s %8s %17s %17s  %s\n", "TENANT", "RESERVED",
		"USING", "OVER", "ADMITTED", "SHED", "HASHES", "WAIT p50/p99 ms",
		"SERVICE p50/p99", "SHED BY CLASS");
	for (i = 0; i < GW_MAX_TENANTS; i++) {
		const struct gw_tstate *t = &s->t[i];
		const struct gw_tstats *ts = &g->ts[i];
		char wait[32], svc[32], over[24];
		bool first = true;

		if (!t->used)
			continue;
		snprintf(wait, sizeof(wait), "%.1f/%.1f", ms(gw_hist_quantile_us(&ts->wait, 0.5)),
			 ms(gw_hist_quantile_us(&ts->wait, 0.99)));
		snprintf(svc, sizeof(svc), "%.1f/%.1f", ms(gw_hist_quantile_us(&ts->service, 0.5)),
			 ms(gw_hist_quantile_us(&ts->service, 0.99)));
		if (t->reservation > 0)
			snprintf(over, sizeof(over), "%.1fx", gw_sched_overage(s, i, now));
		else
			snprintf(over, sizeof(over), "-");
		fprintf(f, "%-16s %9.0f %9.0f %6s %9llu %8llu %8llu %17s %17s  ", t->name,
			t->reservation, gw_sched_consumption(s, i, now), over,
			(unsigned long long)(ts->admitted_reserved + ts->admitted_burst),
			(unsigned long long)ts->shed, (unsigned long long)ts->hashes, wait, svc);
		for (k = 0; k < GW_MAX_CLASSES; k++)
			if (s->cls[k].used && ts->shed_by_class[k]) {
				fprintf(f, "%s%s=%llu", first ? "" : ",", s->cls[k].name,
					(unsigned long long)ts->shed_by_class[k]);
				first = false;
			}
		fprintf(f, "%s%s\n", first ? "-" : "", t->live ? "" : " (removed, draining)");
	}
	fprintf(f, "%-16s %9s %9s %7s %8s %8s\n", "CLASS", "TABLE", "ESTIMATE", "DRIFT",
		"SAMPLES", "");
	for (k = 0; k < GW_MAX_CLASSES; k++) {
		const struct gw_class *cl = &s->cls[k];

		if (cl->used)
			fprintf(f, "%-16s %9.1f %9.1f %+6.0f%% %8llu\n", cl->name, cl->configured,
				cl->estimate, cl->configured > 0 ?
				(cl->estimate / cl->configured - 1.0) * 100 : 0,
				(unsigned long long)cl->samples);
	}
}

void gateway_tenants(struct gateway *g, struct evbuffer *out, bool json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		evbuffer_add_printf(out, "error out of memory\n");
		return;
	}
	if (json)
		tenants_json(g, f);
	else
		tenants_text(g, f);
	fclose(f);
	evbuffer_add_printf(out, "ok\n");
	evbuffer_add(out, buf, len);
	free(buf);
}

/* ---- the limits document ------------------------------------------------------------------ */

/*
 * The two dials, side by side and never added together (docs/endpoints.md, "Limits"): per
 * tenant the floor (capacity / active tenants: the number a contract may quote), the
 * reservation admission holds for it, and the ceiling (the courtesy, shrinking when many
 * are busy); per principal (each user, each API client) the window that stops a runaway
 * client, set from measured client rates.
 */
static double limit_window(double rate, double burst)
{
	return rate > 0 ? burst / rate : 0;
}

static void limits_json(struct gateway *g, FILE *f)
{
	const struct sl_config *c = g->cfg;
	uint32_t active = c->gw.active_tenants ? c->gw.active_tenants : (uint32_t)c->n_tenants;
	double floor = active ? c->gw.cap_cpu / active : c->gw.cap_cpu;
	uint64_t now = gw_now_ns();
	static const int per_account[] = { SL_CTR_LOGIN_FAILURES, SL_CTR_MFA_ATTEMPTS,
		SL_CTR_MFA_SENDS, SL_CTR_RESET_ACCOUNT, SL_CTR_REGISTER_ACCOUNT };
	static const int per_tenant[] = { SL_CTR_TENANT_LOGINS, SL_CTR_TENANT_TOKENS,
		SL_CTR_OUTBOUND, SL_CTR_RESET_TENANT, SL_CTR_REGISTER_TENANT };
	struct json j;
	int i, k;

	json_init(&j, f);
	json_obj_begin(&j, NULL);
	json_str(&j, "unit", "cpu units/s (100 us of CPU per unit)");
	json_double(&j, "capacity", c->gw.cap_cpu);
	json_u64(&j, "active_tenants", active);
	json_arr_begin(&j, "tenants");
	for (i = 0; i < c->n_tenants; i++) {
		const struct sl_tenant_cfg *t = &c->tenants[i];
		int slot = gw_sched_slot(g->sched, i);

		json_obj_begin(&j, NULL);
		json_str(&j, "name", t->name);
		json_double(&j, "floor", floor);
		json_double(&j, "reservation", t->reservation);
		json_double(&j, "ceiling", t->ceiling > 0 ? t->ceiling : c->gw.cap_cpu);
		json_bool(&j, "ceiling_configured", t->ceiling > 0);
		json_double(&j, "consumption", slot < 0 ? 0 :
			    gw_meter_value(&g->sched->t[slot].cons, now) * 1e9 / GW_METER_TAU_NS);
		json_obj_begin(&j, "counters");
		for (k = 0; k < (int)(sizeof(per_tenant) / sizeof(per_tenant[0])); k++) {
			const struct sl_counter_cfg *cc = &c->counters[per_tenant[k]];

			if (!cc->enabled)
				continue;
			json_obj_begin(&j, sl_counter_name(per_tenant[k]));
			json_double(&j, "rate", cc->rate);
			json_double(&j, "burst", cc->burst);
			json_obj_end(&j);
		}
		json_obj_end(&j);
		json_obj_begin(&j, "principals");
		if (c->counters[SL_CTR_USER].enabled) {
			json_obj_begin(&j, "user");
			json_double(&j, "rate", c->counters[SL_CTR_USER].rate);
			json_double(&j, "burst", c->counters[SL_CTR_USER].burst);
			json_double(&j, "window_s", limit_window(c->counters[SL_CTR_USER].rate,
								 c->counters[SL_CTR_USER].burst));
			json_obj_end(&j);
		}
		json_arr_begin(&j, "clients");
		for (k = 0; k < c->n_clients; k++) {
			const struct sl_client_cfg *cl = &c->clients[k];
			const struct sl_counter_cfg *cc = &c->counters[SL_CTR_TOKEN_CLIENT];
			double rate = cl->rate > 0 ? cl->rate : cc->rate;
			double burst = cl->rate > 0 ? (cl->burst > 0 ? cl->burst : cc->burst) :
				       cc->burst;

			if (cl->tenant != i)
				continue;
			json_obj_begin(&j, NULL);
			json_str(&j, "id", cl->id);
			json_double(&j, "rate", rate);
			json_double(&j, "burst", burst);
			json_double(&j, "window_s", limit_window(rate, burst));
			json_str(&j, "source", cl->rate > 0 ? "client" : "counters.token_client");
			json_double(&j, "measured_peak_per_s", client_peak(g, k, now));
			json_u64(&j, "requests", !strcmp(g->cm[k].id, cl->id) &&
				 g->cm[k].tenant == cl->tenant ? g->cm[k].total : 0);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_obj_end(&j);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_begin(&j, "per_account");
	for (k = 0; k < (int)(sizeof(per_account) / sizeof(per_account[0])); k++) {
		const struct sl_counter_cfg *cc = &c->counters[per_account[k]];

		if (!cc->enabled)
			continue;
		json_obj_begin(&j, sl_counter_name(per_account[k]));
		json_double(&j, "rate", cc->rate);
		json_double(&j, "burst", cc->burst);
		json_double(&j, "window_s", limit_window(cc->rate, cc->burst));
		json_obj_end(&j);
	}
	json_obj_end(&j);
	json_obj_end(&j);
	json_end(&j);
}

static void limits_text(struct gateway *g, FILE *f)
{
	const struct sl_config *c = g->cfg;
	uint32_t active = c->gw.active_tenants ? c->gw.active_tenants : (uint32_t)c->n_tenants;
	double floor = active ? c->gw.cap_cpu / active : c->gw.cap_cpu;
	const struct sl_counter_cfg *u = &c->counters[SL_CTR_USER];
	const struct sl_counter_cfg *tc = &c->counters[SL_CTR_TOKEN_CLIENT];
	uint64_t now = gw_now_ns();
	int i, k;

	fprintf(f, "Per tenant (cpu units/s; capacity %g, %u active tenants)\n", c->gw.cap_cpu,
		active);
	fprintf(f, "  the floor is the promise (capacity / active tenants); the ceiling is a "
		"courtesy that shrinks when many are busy\n");
	fprintf(f, "  %-20s %12s %12s %12s %12s\n", "TENANT", "FLOOR", "RESERVATION", "CEILING",
		"USING");
	for (i = 0; i < c->n_tenants; i++) {
		const struct sl_tenant_cfg *t = &c->tenants[i];
		int slot = gw_sched_slot(g->sched, i);

		fprintf(f, "  %-20s %12.1f %12.1f %12.1f %12.1f\n", t->name, floor, t->reservation,
			t->ceiling > 0 ? t->ceiling : c->gw.cap_cpu, slot < 0 ? 0 :
			gw_meter_value(&g->sched->t[slot].cons, now) * 1e9 / GW_METER_TAU_NS);
	}
	fprintf(f, "\nPer principal (requests: a burst at once, then the rate; set from measured "
		"client rates)\n");
	fprintf(f, "  %-20s %-28s %12s %10s %10s %12s\n", "TENANT", "PRINCIPAL", "RATE/S",
		"BURST", "WINDOW_S", "MEASURED/S");
	for (i = 0; i < c->n_tenants; i++) {
		if (u->enabled)
			fprintf(f, "  %-20s %-28s %12.4g %10.4g %10.4g\n", c->tenants[i].name,
				"each user", u->rate, u->burst, limit_window(u->rate, u->burst));
		for (k = 0; k < c->n_clients; k++) {
			const struct sl_client_cfg *cl = &c->clients[k];
			double rate = cl->rate > 0 ? cl->rate : tc->rate;
			double burst = cl->rate > 0 ? (cl->burst > 0 ? cl->burst : tc->burst) :
				       tc->burst;
			char who[96];

			if (cl->tenant != i)
				continue;
			snprintf(who, sizeof(who), "client %s", cl->id);
			fprintf(f, "  %-20s %-28s %12.4g %10.4g %10.4g %12.4g\n", c->tenants[i].name,
				who, rate, burst, limit_window(rate, burst), client_peak(g, k, now));
		}
	}
}

void gateway_limits(struct gateway *g, struct evbuffer *out, bool json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		evbuffer_add_printf(out, "error out of memory\n");
		return;
	}
	if (json)
		limits_json(g, f);
	else
		limits_text(g, f);
	fclose(f);
	evbuffer_add_printf(out, "ok\n");
	evbuffer_add(out, buf, len);
	free(buf);
}

/* ---- /metrics ---------------------------------------------------------------------------- */

static void prom_label(struct evbuffer *out, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			evbuffer_add_printf(out, "\\%c", *v);
		else if (*v == '\n')
			evbuffer_add_printf(out, "\\n");
		else
			evbuffer_add(out, v, 1);
	}
}

static void prom_head(struct evbuffer *out, const char *name, const char *type,
		      const char *help)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A gw_hist as a Prometheus histogram in seconds: cumulative counts at fixed bounds (each
 * within the histogram's 19 % bucket resolution). */
static void prom_hist(struct evbuffer *out, const char *name, const char *tenant,
		      const struct gw_hist *h)
{
	static const double le_s[] = { 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
				       5, 10 };
	unsigned i;
	int b;

	for (i = 0; i < sizeof(le_s) / sizeof(le_s[0]); i++) {
		uint64_t cum = 0;

		for (b = 0; b < GW_HIST_BUCKETS; b++)
			if ((double)gw_hist_upper_us(b) <= le_s[i] * 1e6)
				cum += h->b[b];
		evbuffer_add_printf(out, "%s_bucket{tenant=\"", name);
		prom_label(out, tenant);
		evbuffer_add_printf(out, "\",le=\"%g\"} %llu\n", le_s[i], (unsigned long long)cum);
	}
	evbuffer_add_printf(out, "%s_bucket{tenant=\"", name);
	prom_label(out, tenant);
	evbuffer_add_printf(out, "\",le=\"+Inf\"} %llu\n", (unsigned long long)h->n);
	evbuffer_add_printf(out, "%s_sum{tenant=\"", name);
	prom_label(out, tenant);
	evbuffer_add_printf(out, "\"} %.6f\n", (double)h->sum_us / 1e6);
	evbuffer_add_printf(out, "%s_count{tenant=\"", name);
	prom_label(out, tenant);
	evbuffer_add_printf(out, "\"} %llu\n", (unsigned long long)h->n);
}

void gateway_metrics(struct gateway *g, struct evbuffer *out)
{
	struct gw_sched *s = g->sched;
	uint64_t now = gw_now_ns();
	double res_rate = gw_meter_value(&s->reserved_rate, now) * 1e9 / GW_METER_TAU_NS;
	double burst_rate = gw_meter_value(&s->burst_rate, now) * 1e9 / GW_METER_TAU_NS;
	double room = s->cap_cpu - res_rate;
	int i, k, code;

#define EACH_TENANT for (i = 0; i < GW_MAX_TENANTS; i++) if (s->t[i].used)
#define TLABEL(metric) do { evbuffer_add_printf(out, "%s{tenant=\"", metric); \
		prom_label(out, s->t[i].name); } while (0)
	prom_head(out, "sluice_gateway_requests_total", "counter", "Requests by tenant.");
	EACH_TENANT {
		TLABEL("sluice_gateway_requests_total");
		evbuffer_add_printf(out, "\"} %llu\n", (unsigned long long)g->ts[i].requests);
	}
	prom_head(out, "sluice_gateway_answered_2xx_total", "counter",
		  "Successful answers (throughput), by tenant.");
	EACH_TENANT {
		TLABEL("sluice_gateway_answered_2xx_total");
		evbuffer_add_printf(out, "\"} %llu\n", (unsigned long long)g->ts[i].answered_2xx);
	}
	prom_head(out, "sluice_gateway_goodput_total", "counter",
		  "Successful answers delivered before the request's deadline, by tenant.");
	EACH_TENANT {
		TLABEL("sluice_gateway_goodput_total");
		evbuffer_add_printf(out, "\"} %llu\n", (unsigned long long)g->ts[i].goodput);
	}
	prom_head(out, "sluice_gateway_shed_total", "counter",
		  "Requests shed (429), by tenant and reason.");
	EACH_TENANT
		for (k = 1; k < GW_SHED__MAX; k++) {
			TLABEL("sluice_gateway_shed_total");
			evbuffer_add_printf(out, "\",reason=\"%s\"} %llu\n", gw_shed_name(k),
					    (unsigned long long)g->ts[i].shed_by_reason[k]);
		}
	prom_head(out, "sluice_gateway_shed_by_class_total", "counter",
		  "Requests shed (429), by tenant and cost class.");
	EACH_TENANT
		for (k = 0; k < GW_MAX_CLASSES; k++) {
			if (!s->cls[k].used)
				continue;
			TLABEL("sluice_gateway_shed_by_class_total");
			evbuffer_add_printf(out, "\",class=\"");
			prom_label(out, s->cls[k].name);
			evbuffer_add_printf(out, "\"} %llu\n",
					    (unsigned long long)g->ts[i].shed_by_class[k]);
		}
	prom_head(out, "sluice_gateway_reservation_units", "gauge",
		  "Each tenant's reservation, cost units per second.");
	EACH_TENANT {
		TLABEL("sluice_gateway_reservation_units");
		evbuffer_add_printf(out, "\"} %g\n", s->t[i].reservation);
	}
	prom_head(out, "sluice_gateway_consumption_units", "gauge",
		  "Each tenant's recent consumption, cost units per second.");
	EACH_TENANT {
		TLABEL("sluice_gateway_consumption_units");
		evbuffer_add_printf(out, "\"} %g\n", gw_sched_consumption(s, i, now));
	}
	prom_head(out, "sluice_gateway_cost_units_total", "counter",
		  "Cost units measured on the workers, by tenant.");
	EACH_TENANT {
		TLABEL("sluice_gateway_cost_units_total");
		evbuffer_add_printf(out, "\"} %.3f\n", g->ts[i].units_measured);
	}
	prom_head(out, "sluice_gateway_queue_wait_seconds", "histogram",
		  "Time from admission to a worker, by tenant (apart from service time).");
	EACH_TENANT
		prom_hist(out, "sluice_gateway_queue_wait_seconds", s->t[i].name, &g->ts[i].wait);
	prom_head(out, "sluice_gateway_service_seconds", "histogram",
		  "Time on a worker (the hash), by tenant.");
	EACH_TENANT
		prom_hist(out, "sluice_gateway_service_seconds", s->t[i].name, &g->ts[i].service);
#undef TLABEL
#undef EACH_TENANT
	prom_head(out, "sluice_gateway_estimate_drift", "gauge",
		  "Measured cost over configured cost, minus one, by cost class.");
	for (k = 0; k < GW_MAX_CLASSES; k++)
		if (s->cls[k].used) {
			evbuffer_add_printf(out, "sluice_gateway_estimate_drift{class=\"");
			prom_label(out, s->cls[k].name);
			evbuffer_add_printf(out, "\"} %g\n", s->cls[k].configured > 0 ?
					    s->cls[k].estimate / s->cls[k].configured - 1.0 : 0);
		}
	prom_head(out, "sluice_gateway_burst_pool_utilization", "gauge",
		  "Share of the capacity reservations leave free that burst work uses now.");
	evbuffer_add_printf(out, "sluice_gateway_burst_pool_utilization %g\n",
			    room > 0 ? burst_rate / room : 1.0);
	prom_head(out, "sluice_gateway_queue_depth", "gauge", "Jobs waiting for a worker.");
	evbuffer_add_printf(out, "sluice_gateway_queue_depth %u\n", (unsigned)s->depth);
	prom_head(out, "sluice_gateway_queue_limit", "gauge",
		  "The Little's-law depth the queue may reach now.");
	evbuffer_add_printf(out, "sluice_gateway_queue_limit %llu\n",
			    (unsigned long long)gw_sched_depth_limit(s));
	prom_head(out, "sluice_gateway_queue_lifo", "gauge", "1 while the queue serves LIFO.");
	evbuffer_add_printf(out, "sluice_gateway_queue_lifo %d\n", s->lifo ? 1 : 0);
	prom_head(out, "sluice_gateway_workers_busy", "gauge", "Argon2id workers hashing now.");
	evbuffer_add_printf(out, "sluice_gateway_workers_busy %u\n", (unsigned)g->pool.busy);
	prom_head(out, "sluice_gateway_responses_total", "counter", "Responses by status code.");
	for (code = 100; code < 600; code++)
		if (g->st.status[code])
			evbuffer_add_printf(out, "sluice_gateway_responses_total{code=\"%d\"} %llu\n",
					    code, (unsigned long long)g->st.status[code]);
	prom_head(out, "sluice_gateway_escalations_total", "counter",
		  "Logins answered by the stream job's escalations: step_up, delayed.");
	evbuffer_add_printf(out, "sluice_gateway_escalations_total{kind=\"step_up\"} %llu\n"
			    "sluice_gateway_escalations_total{kind=\"delayed\"} %llu\n",
			    (unsigned long long)g->st.step_ups, (unsigned long long)g->st.delayed);
	prom_head(out, "sluice_gateway_would_block_total", "counter",
		  "Counter refusals let through because the counter is in monitor mode.");
	evbuffer_add_printf(out, "sluice_gateway_would_block_total %llu\n",
			    (unsigned long long)g->st.would_block);
	prom_head(out, "sluice_gateway_endpoint_requests_total", "counter",
		  "The endpoints beyond /login by outcome: ok, failed (secret, code, link, grant), "
		  "throttled (refused by one of their counters).");
	for (k = K_TOKEN; k < K__MAX; k++) {
		static const char *const outcome[3] = { "ok", "failed", "throttled" };
		const uint64_t v[3] = { g->ep[k].ok, g->ep[k].failed, g->ep[k].throttled };
		int o;

		for (o = 0; o < 3; o++)
			evbuffer_add_printf(out, "sluice_gateway_endpoint_requests_total{endpoint=\"%s\","
					    "outcome=\"%s\"} %llu\n", handlers[k].path, outcome[o],
					    (unsigned long long)v[o]);
	}
	prom_head(out, "sluice_gateway_outbound_total", "counter",
		  "Messages handed to the delivery: one-time codes, links, notices; failed sends.");
	evbuffer_add_printf(out, "sluice_gateway_outbound_total{kind=\"code\"} %llu\n"
			    "sluice_gateway_outbound_total{kind=\"link\"} %llu\n"
			    "sluice_gateway_outbound_total{kind=\"notice\"} %llu\n"
			    "sluice_gateway_outbound_total{kind=\"failed\"} %llu\n",
			    (unsigned long long)g->otp_sent, (unsigned long long)g->links_sent,
			    (unsigned long long)g->notices_sent,
			    (unsigned long long)g->outbound_failed);
	prom_head(out, "sluice_gateway_refresh_reuse_total", "counter",
		  "Spent refresh tokens presented again (each revoked its whole chain).");
	evbuffer_add_printf(out, "sluice_gateway_refresh_reuse_total %llu\n",
			    (unsigned long long)g->refresh_reuse);
}
