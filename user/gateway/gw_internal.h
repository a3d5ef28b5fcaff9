/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The gateway's own header, for its rooms only (gateway.h is what sluiced sees): the two
 * structs every room works on, the gateway and one request; the table of endpoints the
 * front dispatches by; and what the rooms call of each other. The rooms, in the order a
 * request meets them:
 *
 *   gw_conn.c        connections: the table, max_connections, the whole-request deadline,
 *                    a client that hung up
 *   gw_tls.c         TLS on the listener: the context, the handshake's counters
 *   gw_http.c        the HTTP front: parse, tenant, route, endpoint; every answer's bytes
 *                    and the reject floor
 *   gw_chain.c       the counters a request asks, in order (gw_chain.h)
 *   gw_admit.c       admission glue: admit or shed, the hash pool, the housekeeping tick
 *   gw_login.c       POST /login, and the stream job's events and escalations
 *   gw_ep.c          what the endpoints beyond /login share: answers, tokens, messages
 *   gw_ep_token.c    POST /token, GET /token/validate, POST /introspect
 *   gw_ep_mfa.c      POST /mfa/send and /mfa/verify
 *   gw_ep_account.c  POST /password-reset and /register
 *   gw_ep_magic.c    GET and POST /magic/{token}
 *   gw_report.c      the tenants and limits documents, /metrics
 *   gateway.c        lifecycle: prepare, start, apply a config, stop
 *
 * Everything here runs on the daemon's event loop except the hashes (gw_pool.h) and
 * the appends of sign-ups to the credential file (gw_creds.h, its writer thread in
 * gw_creds_write.c).
 */
#ifndef SLUICE_GW_INTERNAL_H
#define SLUICE_GW_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/http.h>

#include "config.h"
#include "gateway.h"
#include "gw_addr.h"
#include "gw_body.h"
#include "gw_chain.h"
#include "gw_client.h"
#include "gw_deliver.h"
#include "gw_head.h"
#include "gw_hist.h"
#include "gw_pool.h"
#include "gw_sched.h"
#include "gw_tls.h"
#include "gw_token.h"
#include "gw_upstream.h"
#include "gw_vault.h"

#define TICK_MS 10
#define SWEEP_EVERY 5          /* ticks: connections are swept every 50 ms */
#define CONN_BUCKETS 4096

/* ---- endpoints -------------------------------------------------------------------------- */

enum gw_kind {
	K_LOGIN = 0,
	K_VALIDATE,
	K_INTROSPECT,
	K_TOKEN,
	K_MFA_SEND,
	K_MFA_VERIFY,
	K_RESET,
	K_REGISTER,
	K_MAGIC,
	K__MAX,                /* the built-in endpoints end here */
	K_PROXY = K__MAX,      /* upstream mode: forwarded (gw_upstream.h) */
	K__ALL
};

/* One answer: status, reason phrase, body. */
struct gw_answer {
	int code;
	const char *reason;
	const char *body;
};

/*
 * What an endpoint is to the front: where it is served and what it does at each stage of
 * a request's path (docs/gateway.md): parse (@fields), its own checks and counters before
 * admission (@start, which ends in gw_admit() or an answer), then either served on the
 * loop (@run) or, when r->job.pooled, hashed on the pool (@work fills the job, @finish
 * hears it is done). Each must also be routed in the config, which gives its cost class.
 */
struct gw_endpoint {
	const char *path;
	uint8_t method;
	uint8_t method2;        /* a second method, or 0 */
	bool prefix;            /* path + one segment, in r->link: /magic/{token} */
	bool pooled;            /* always hashed on the pool (a start may also decide so) */
	bool body_optional;     /* an empty POST has no body to parse, nor a Content-Type */
	const char *www_authenticate; /* the header its 401s carry, or NULL */
	/* The one answer to a failed or throttled attempt (docs/endpoints.md; /login's with
	 * gateway.login_uniform); NULL: a counter's refusal is a 429 with Retry-After. */
	const struct gw_answer *refusal;
	bool ratelimit_fields;  /* that 429 names the counter (RateLimit-Policy, RateLimit) */
	/* A POST body's fields into @r: 0, or -EINVAL with a reason fit for a 400. NULL: no
	 * body is read. */
	int (*fields)(struct gw_req *r, int type, const char *body, size_t len, char *err,
		      size_t errlen);
	void (*start)(struct gw_req *r);
	void (*run)(struct gw_req *r);
	void (*work)(struct gw_req *r);
	void (*finish)(struct gw_req *r);
};

/* By enum gw_kind (gw_http.c); each entry lives in its room. */
extern const struct gw_endpoint *const gw_endpoints[K__ALL];
extern const struct gw_endpoint gw_endpoint_login, gw_endpoint_validate,
	gw_endpoint_introspect, gw_endpoint_token, gw_endpoint_mfa_send,
	gw_endpoint_mfa_verify, gw_endpoint_reset, gw_endpoint_register, gw_endpoint_magic,
	gw_endpoint_proxy;

/* The bodies (gw_http.c): one per outcome, whatever the cause. */
extern const char BODY_401[], BODY_401_TOKEN[], BODY_429[], BODY_503[], BODY_STEP_UP[];
extern const char BODY_SIGNIN[], BODY_MFA_FAIL[], BODY_LINK_FAIL[], BODY_RESET_SENT[];
extern const char BODY_REGISTER_SENT[], BODY_OTP_SENT[], BODY_INVALID_CLIENT[];
extern const char BODY_INVALID_GRANT[], BODY_UNAUTHORIZED_CLIENT[];

/* ---- the gateway and a request ---------------------------------------------------------- */

/* How /login decided a sign-in (sluice_gateway_logins_total{outcome}): the password was right,
 * wrong (or the account unknown), refused by a login counter (login_uniform's decoys
 * included), or stepped up by the stream job's ladder. */
enum gw_login_result {
	GW_LOGIN_SUCCESS,
	GW_LOGIN_FAILURE,
	GW_LOGIN_THROTTLED,
	GW_LOGIN_STEP_UP,
	GW_LOGIN__N
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
	uint64_t logins[GW_LOGIN__N];  /* by enum gw_login_result */
	uint64_t would_block[SL_CTR_N];/* monitor-mode refusals let through, by counter */
	uint64_t would_block_by_class[GW_MAX_CLASSES]; /* ... and by cost class */
};

struct gw_conn;
struct gw_usual;
struct gw_pfx;
struct esc;

/* The HTTP front's connection state (gw_conn.c) and what it refused (gw_conn.c, gw_http.c). */
struct gw_front {
	struct gw_pfx *pfx[CONN_BUCKETS];      /* open connections per source prefix and parent */
	uint8_t pfx_key[16];                    /* their table's SipHash key */
	struct gw_conn *idle_head, *idle_tail;  /* waiting for a request, longest first */
	struct gw_conn *pending;                /* accepted, their peer not yet looked at */
	struct event *classify;                 /* looks at them right after the accept */
	bool full_logged;                       /* "full, nothing idle" said for this pause */
	uint64_t prefix_refused, parent_refused;/* closed as accepted: over the prefix's share */
	uint64_t evicted;                       /* idle ones closed to make room */
	uint64_t request_capped;                /* closed after max_requests_per_connection */
	uint64_t head_refused[GW_HEAD__N];      /* request heads answered 400, by rule */
	uint64_t xff_refused;                   /* X-Forwarded-For that could not be read: 400 */
};

struct gw_req {
	struct gw_job job;             /* first: the scheduler hands these back */
	struct gw_work work;
	struct gateway *g;
	struct evhttp_request *req;
	struct gw_req *prev, *next;    /* every live request, for shutdown */
	struct event *hold;            /* the floor timer, while held */
	struct gw_req *line_prev, *line_next; /* waiting for a hold past max_held */
	bool in_line;
	uint64_t hold_until_ns;
	uint64_t arrival_ns;
	int kind;                      /* enum gw_kind */
	int method;
	uint64_t cpu0;                 /* thread CPU at an inline handler's start */
	char tenant[SL_TENANT_NAME_LEN];
	int tenant_idx;                /* in the config */
	struct gw_addr client;
	char user[GW_USER_MAX + 1];
	size_t user_len;
	bool known;
	struct gw_chain chain;         /* the counters it asks (gw_chain.h) */
	uint32_t min_retry_s;          /* a counter's own wait, when it refused */
	/* the login (gw_login.c) */
	uint64_t extra_ns;             /* an escalated account's delay, on top of any floor */
	bool decoy;                    /* refused by a per-account counter (login_uniform):
					* served like a wrong password, on the dummy hash */
	uint8_t acct_hash[16];         /* for the stream job: keyed hashes, never the values */
	uint8_t pw_hash[16];
	bool hashed_ids;
	/* gateway.credentials_db (gw_pg.h): what its lookup found before admission */
	uint8_t db_state;              /* enum gw_db_state */
	char db_phc[GW_PHC_MAX];
	/* the token to check: validate's bearer, introspect's body (wiped after use) */
	char bearer[GW_TOKEN_MAX + 1];
	size_t bearer_len;
	/* the endpoints beyond /login (gw_ep*.c) */
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
	int rl_ctr;                    /* > 0: a 429 carries RateLimit headers for this */
	double rl_rate, rl_burst;
	const char *ctype;             /* NULL: JSON */
	/* upstream mode (gw_upstream.c) */
	int up;                        /* the upstream that serves it */
	int route;                     /* its route in the running config */
	struct gw_upconn *upc;         /* its forward, while one is out */
	uint64_t up_start_ns;
	bool raw;                      /* the answer is the upstream's: headers and body as set */
	/* the answer, kept while held */
	int code;
	const char *reason;
	const char *body;
	uint32_t retry_after;
};

struct gateway {
	struct event_base *base;
	struct gw_req *spare;          /* the last request freed, zeroed, for the next one
					* (gw_http.c, req_alloc) */
	struct evhttp *http;
	struct evhttp_bound_socket *bound;
	struct evconnlistener *listener;
	struct event *tick, *pool_ev;
	struct sl_config *cfg;         /* the running config (our copy) */
	struct sl_gateway_cfg started; /* settings fixed at start: listen, argon2, workers */
	struct gw_sched *sched;
	struct gw_pool pool;
	struct gw_creds *creds;
	struct gw_cwriter *cw;          /* sign-ups, appended off the loop */
	struct gw_pg *pg;              /* gateway.credentials_db; NULL: the file alone */
	struct event *cw_ev;
	struct gw_ladder *ladder;
	struct gw_upstreams *ups;      /* upstream mode (gw_upstream.c); NULL: none */
	uint8_t key[GW_TOKEN_KEY_BYTES];
	char dummy_phc[GW_PHC_MAX];
	struct gw_tstats *ts;          /* by scheduler slot */
	struct sl_store *store;        /* the counters (gw_chain.h); NULL: none */
	struct stream *stream;         /* outcome events go there; NULL: none */
	struct evq *evq;
	struct esc *esc_acct, *esc_pw; /* the stream job's escalations, by hash */
	struct gw_usual *usual;        /* where accounts sign in from (gw_login.c); lazily */
	struct gw_req *reqs;
	uint32_t n_reqs;
	struct gw_vault *vault;        /* codes, links, refresh tokens */
	struct gw_delivery deliv;
	uint8_t tkey[GW_TOK_KEYS][GW_TOKEN_KEY_BYTES];
	struct {
		uint64_t ok, failed, throttled;
	} ep[K__MAX];
	uint64_t otp_sent, links_sent, notices_sent, refresh_reuse, outbound_failed;
	uint64_t tokens_revoked;       /* accounts whose tokens a password reset ended */
	/* Each client's measured request rate (authenticated requests), for setting its
	 * per-principal limit just above it: the peak over 10 s windows since start. */
	struct gw_client_meter {
		char id[SL_CLIENT_ID_LEN];
		int tenant;
		uint64_t win_ns, total;
		uint32_t in_win;
		double peak;
	} cm[SL_MAX_CLIENTS];
	struct gw_conn *conn_bucket[CONN_BUCKETS];
	struct gw_conn *conns;
	uint32_t n_conns;
	struct gw_front front;
	struct ssl_ctx_st *tls;        /* gateway.tls: new connections' context; NULL: plaintext */
	struct gw_tls_stats tls_st;
	bool paused;
	bool draining;                 /* gateway_drain(): not accepting, closing as answered */
	gw_ready_fn ready;             /* the daemon's readiness checks (gateway_set_ready) */
	void *ready_arg;
	unsigned ticks;
	uint32_t held;                 /* answers on their floor timers (at most max_held) */
	struct gw_req *line_head, *line_tail; /* and those waiting for one, oldest first */
	uint32_t line_len;
	struct {
		uint64_t requests, hashes, dummy_hashes, expired_before_hash, expired_at_start;
		uint64_t client_gone, floor_held, floor_queued, conn_timeouts, accept_pauses;
		uint64_t xff_used, xff_ignored, status[600];
		uint64_t step_ups, delayed, would_block, events, events_dropped;
	} st;
};

/* A request's account as gateway.credentials_db told it (gw_req.db_state). */
enum gw_db_state {
	GW_DB_NOT_ASKED = 0,           /* no database, or not asked yet */
	GW_DB_FOUND,                   /* db_phc holds its PHC string */
	GW_DB_NONE,                    /* no such account */
	GW_DB_MALFORMED,               /* its row is no usable PHC string: a failed sign-in */
	GW_DB_FILE,                    /* the database failed; fail = "file": the file answers */
};

static inline struct gw_req *req_of_job(struct gw_job *j)
{
	return (struct gw_req *)j; /* the job is the first member */
}

static inline struct gw_req *req_of_work(struct gw_work *w)
{
	return (struct gw_req *)((char *)w - offsetof(struct gw_req, work));
}

/* ---- what the rooms call of each other -------------------------------------------------- */

/* gw_conn.c */
struct bufferevent *gw_conn_new(struct event_base *base, void *arg); /* evhttp's bevcb */
/* @req arrived whole: its connection has no read deadline until the answer is out, and
 * its answer closes it when it is the connection's last (max_requests_per_connection). */
void gw_conn_request(struct gateway *g, struct evhttp_request *req);
/* Release connections evhttp has freed; close those past their request deadline. */
void gw_conn_sweep(struct gateway *g, uint64_t now);
void gw_conn_close_all(struct gateway *g);
void gw_conn_drain(struct gateway *g);
void gw_conn_flush_all(struct gateway *g);
/* Has the client of @req hung up (or half-closed)? */
bool gw_conn_gone(struct evhttp_request *req);

/* gw_http.c */
/* Listen on gateway.listen with evhttp and the connection table; -1 (logged) if not. */
int gw_http_listen(struct gateway *g);
/* evhttp's limits from the running config. */
void gw_http_limits(struct gateway *g);
/*
 * Answer @r with @code. Rejections (@floor) leave no sooner than arrival + reject_floor_ms
 * (twice that when @longer), held on a timer; past max_held timers, in line for one (later,
 * never sooner). @r is gone afterwards.
 */
void gw_respond(struct gw_req *r, int code, const char *reason, const char *body,
		uint32_t retry_after, bool floor, bool longer);
/* The endpoint's one answer to a failed or throttled attempt, behind the floor. */
void gw_respond_refusal(struct gw_req *r);
/* Send @r's answer now, held or not. */
void gw_send_now(struct gw_req *r);
void gw_req_spare_free(struct gateway *g); /* at the gateway's end */
/* Give answers waiting in line the hold timers that have come free (the tick calls it). */
void gw_hold_line(struct gateway *g);
/* A client error found once @r was made: forget @r, answer at once (no floor). */
void gw_reject(struct gw_req *r, int code, const char *reason, const char *error,
	       const char *detail);
/* The bearer token of @req into @token (NUL-terminated); its length, 0 if none. */
size_t gw_bearer_of(struct evhttp_request *req, char token[GW_TOKEN_MAX + 1]);

/* gw_admit.c */
/* Admit @r (its job filled in) or shed it, then serve it: on the pool or its @run. */
void gw_admit(struct gw_req *r);
/* Refuse @r for @reason (GW_SHED_*): 429 with an escalating Retry-After, behind the floor. */
void gw_shed(struct gw_req *r, int reason);
/* One audit line (user/lib/audit.h) for @r: its tenant, route, prefix and account (as its
 * keyed hash, never the name), @event (enum audit_event), @reason and @decision. */
void gw_audit(struct gw_req *r, int event, const char *reason, const char *decision,
	      const char *detail);
/* Start queued jobs on idle workers. */
void gw_dispatch(struct gateway *g);
/* Can @j start now (gw_sched.h's readiness test; @arg is the gateway)? */
bool gw_job_ready(struct gw_job *j, void *arg);

/* gw_login.c, for upstream mode: a route that signs people in (routes[].login) asks the
 * login counters and hears the stream job as /login does (r->user and r->work.pwd read from
 * the request), then is admitted; its upstream's answer settles them: @outcome 1 a success,
 * 0 a failed sign-in, -1 neither (an error, another status: the attempt is given back). */
void gw_login_upstream_start(struct gw_req *r);
void gw_login_upstream_outcome(struct gw_req *r, int outcome);
/* An inline handler is done: its thread CPU since admission reconciles the charge; once. */
void gw_admit_done(struct gw_req *r);
void gw_on_pool(evutil_socket_t fd, short what, void *arg);
void gw_on_tick(evutil_socket_t fd, short what, void *arg);

/* gw_login.c: gateway_set_stream() and gateway_stream_action() (gateway.h), and where
 * r->user usually signs in from (gw_usual.h), for every endpoint. */
/* Does r->user sign in from r's key prefix (or, @parent, its allocation) at @level? */
bool gw_usual_here(struct gw_req *r, bool parent, int level);
/* r->user signed in from r's source at @level: its key prefix and allocation are usual. */
void gw_usual_signed_in(struct gw_req *r, int level);
/* The "where" of a per-account budget: r's allocation when r->user signs in from it at
 * @level, else "elsewhere", the one budget every other source shares. */
void gw_usual_where(struct gw_req *r, int level, char out[GW_PREFIX_STR]);

/* gw_ep.c */
/* An endpoint's ask of @ctr, keyed by a hash of (@what, tenant, @a, @b). */
struct gw_ask *gw_ep_ask(struct gw_req *r, int ctr, const char *what, const char *a,
			 const char *b);
/* Run the asks listed; 503 when they cannot be asked. */
void gw_ep_run(struct gw_req *r, gw_chain_done_fn done);
/* The counters before admission have answered: admit, or answer the refusal. */
void gw_ep_checked(struct gw_req *r, const struct gw_ask *refused, uint32_t retry_ms);
/* A counter refused: the endpoint's refusal (gw_endpoint.refusal), counted as a shed. */
void gw_ep_refused(struct gw_req *r, const struct gw_ask *a, uint32_t retry_ms);
/* A verified person: the account's own budget (the per-user dial), then @done. */
void gw_ep_ask_user(struct gw_req *r, gw_chain_done_fn done);
/* Answer an endpoint request and count it. Interactive failures pass @floor. */
void gw_ep_answer(struct gw_req *r, int code, const char *reason, const char *body,
		  bool floor);
/* The endpoint's one answer (gw_endpoint.refusal), counted, behind the floor. */
void gw_ep_uniform(struct gw_req *r);
/* Issue a token of @kind for @name and answer 200 with it (and @refresh, if any). */
void gw_ep_issue(struct gw_req *r, int kind, const char *name, const char *refresh);
void gw_json_token(struct evbuffer *b, const char *tok, uint32_t ttl, const char *refresh);
/* A message of @kind to r->user through the delivery. */
void gw_ep_deliver(struct gw_req *r, const char *kind, const char *text);

/* gw_ep_magic.c */
/* The credential writer has finished appends: finish their sign-ups. */
void gw_on_signups(evutil_socket_t fd, short what, void *arg);

/* gw_ep_token.c */
/* Check @tok against every kind's key; the kind in *@kind. 0 or negative (-EKEYREVOKED: a
 * person's token whose account no longer honours it). */
int gw_token_any(const struct gateway *g, const char *tok, size_t len,
		 struct gw_token_claims *cl, int *kind);
/* Issue a token of @kind for @tenant/@name, valid @ttl_s, into @out: a person's bound to
 * the account's credential and issued after its last revocation. Its length, -ENOENT (no
 * such account), -EINVAL or -ENOSPC. */
int gw_token_mint(struct gateway *g, int kind, const char *tenant, const char *name,
		  uint32_t ttl_s, char *out, size_t n);
/* Every token of (@tenant, @account) issued so far no longer counts (a password reset). */
void gw_account_revoke(struct gateway *g, const char *tenant, const char *account);
/* Client @idx's measured peak rate, and its authenticated requests, since start. */
double gw_client_peak(const struct gateway *g, int idx, uint64_t now);
uint64_t gw_client_requests(const struct gateway *g, int idx);

#endif
