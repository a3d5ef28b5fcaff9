// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The credentials database's pool (gw_pg.h): libpq connections as state machines on the
 * event loop. A connection is down (waiting out its backoff), connecting (PQconnectPoll on
 * whatever its socket is ready for, within a deadline of its own), idle (watched for the
 * server closing it) or busy with one query (flushed, then read until libpq has every
 * result). A query is an op with one timer, armed at submission for timeout_ms: whichever
 * comes first, the answer or the timer, ends it, once. Ops that cannot be served at all
 * (queue full, database down) are answered through the same timer made active at once, so
 * no caller ever hears back inside its own call.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <sodium.h>

#include "gw_body.h"
#include "gw_creds.h"
#include "gw_pg.h"
#include "log.h"

#define TEXT_OID 25             /* every parameter goes as text: the server casts */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define CONNECT_MIN_MS 1000     /* a connection attempt's own deadline, at least */
#define LOG_EVERY_NS 5000000000ull

static const double le_s[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
			       2.5, 5 };
#define N_LE (sizeof(le_s) / sizeof(le_s[0]))

enum cstate { C_DOWN, C_CONNECTING, C_IDLE, C_BUSY };

struct gw_pg;
struct conn;

struct op {
	struct op *next, *prev;        /* the queue */
	struct op *anext, *aprev;      /* every op not answered yet */
	struct gw_pg *p;
	struct conn *c;                /* the connection it runs on, or NULL */
	int kind;
	int immediate;                 /* >= 0: the result its timer gives */
	char tenant[SL_TENANT_NAME_LEN];
	char account[GW_USER_MAX + 1];
	char phc[GW_PHC_MAX];
	gw_pg_fn fn;
	void *arg;
	struct event *tmo;
	uint64_t t0_ns;
};

struct conn {
	struct gw_pg *p;
	unsigned idx;
	PGconn *pg;
	enum cstate st;
	struct event *ev;              /* its socket */
	struct event *timer;           /* the backoff, or the connection attempt's deadline */
	bool flushing;                 /* PQflush has more to send */
	uint32_t backoff_ms;
	struct op *op;
	int res;                       /* the op's result so far, -1: none yet */
	char phc[GW_PHC_MAX];
};

struct gw_pg {
	struct event_base *base;
	struct sl_credentials_db db;
	char *conninfo;
	struct conn *conns;
	unsigned n;
	struct op *qhead, *qtail, *all;
	uint32_t qlen;
	bool down;                     /* none up, and the last attempt failed */
	bool was_up;                   /* for the "reachable again" line */
	uint64_t results[GW_PG__N];
	uint64_t le[N_LE], lat_n;
	double lat_sum;
	uint64_t connects, connect_failures, resets;
	uint64_t last_log_ns;
};

static const char *const result_names[GW_PG__N] = {
	[GW_PG_FOUND] = "found", [GW_PG_NONE] = "none", [GW_PG_MALFORMED] = "malformed",
	[GW_PG_EXISTS] = "exists", [GW_PG_ERROR] = "error", [GW_PG_TIMEOUT] = "timeout",
	[GW_PG_UNAVAILABLE] = "unavailable", [GW_PG_FULL] = "queue_full",
};

const char *gw_pg_result_name(int res)
{
	return res >= 0 && res < GW_PG__N ? result_names[res] : "?";
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct timeval tv_ms(uint32_t ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (suseconds_t)(ms % 1000) * 1000 };

	return tv;
}

/* At most one line per LOG_EVERY_NS about the database being away: a dead server under load
 * would otherwise write one per query. */
static bool log_due(struct gw_pg *p)
{
	uint64_t now = now_ns();

	if (p->last_log_ns && now - p->last_log_ns < LOG_EVERY_NS)
		return false;
	p->last_log_ns = now;
	return true;
}

/* libpq's message without its trailing newline. */
static const char *pq_msg(PGconn *pg, char *buf, size_t cap)
{
	size_t n;

	snprintf(buf, cap, "%s", pg ? PQerrorMessage(pg) : "out of memory");
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	return buf;
}

/* ---- ops ------------------------------------------------------------------------------- */

static void unqueue(struct gw_pg *p, struct op *o)
{
	if (o->prev)
		o->prev->next = o->next;
	else
		p->qhead = o->next;
	if (o->next)
		o->next->prev = o->prev;
	else
		p->qtail = o->prev;
	o->next = o->prev = NULL;
	p->qlen--;
}

static void op_free(struct op *o)
{
	struct gw_pg *p = o->p;

	if (o->aprev)
		o->aprev->anext = o->anext;
	else
		p->all = o->anext;
	if (o->anext)
		o->anext->aprev = o->aprev;
	if (o->tmo)
		event_free(o->tmo);
	sodium_memzero(o, sizeof(*o));
	free(o);
}

/* The op is no longer queued nor running: count it, tell its caller, free it. */
static void answer(struct op *o, int res, const char *phc)
{
	struct gw_pg *p = o->p;
	double s = (double)(now_ns() - o->t0_ns) / 1e9;
	unsigned i;

	p->results[res]++;
	for (i = 0; i < N_LE; i++)
		if (s <= le_s[i])
			p->le[i]++;
	p->lat_n++;
	p->lat_sum += s;
	o->fn(o->arg, res, res == GW_PG_FOUND && o->kind == GW_PG_LOOKUP ? phc : NULL);
	op_free(o);
}

/* ---- connections ----------------------------------------------------------------------- */

static void on_sock(evutil_socket_t fd, short what, void *arg);
static void on_conn_timer(evutil_socket_t fd, short what, void *arg);
static void pump(struct gw_pg *p);

static bool any_up(const struct gw_pg *p)
{
	unsigned i;

	for (i = 0; i < p->n; i++)
		if (p->conns[i].st == C_IDLE || p->conns[i].st == C_BUSY)
			return true;
	return false;
}

/* Watch the connection's socket for @what (its socket may change between attempts). */
static int arm(struct conn *c, short what)
{
	int fd = PQsocket(c->pg);

	if (c->ev) {
		event_free(c->ev);
		c->ev = NULL;
	}
	if (fd < 0)
		return -1;
	c->ev = event_new(c->p->base, fd, what | EV_PERSIST, on_sock, c);
	return c->ev && !event_add(c->ev, NULL) ? 0 : -1;
}

static void close_conn(struct conn *c)
{
	if (c->ev) {
		event_free(c->ev);
		c->ev = NULL;
	}
	if (c->pg) {
		/* Non-blocking: PQfinish's goodbye is one write attempt, never a wait. */
		PQfinish(c->pg);
		c->pg = NULL;
	}
	c->flushing = false;
}

/* Down, and made again after the backoff (with jitter: the pool's connections do not all
 * knock at once). */
static void schedule(struct conn *c, uint32_t ms)
{
	struct timeval tv;

	c->st = C_DOWN;
	ms = ms / 2 + randombytes_uniform(ms / 2 + 1);
	tv = tv_ms(ms);
	evtimer_add(c->timer, &tv);
}

/* Every queued op, answered @res now: with the database down none would be served before
 * its timeout. */
static void flush_queue(struct gw_pg *p, int res)
{
	struct op *o;

	while ((o = p->qhead)) {
		unqueue(p, o);
		answer(o, res, NULL);
	}
}

/* The connection broke, or could not be made: its op (if any) is answered @res. */
static void conn_fail(struct conn *c, int res, const char *why)
{
	struct gw_pg *p = c->p;
	bool connecting = c->st == C_CONNECTING;
	struct op *o = c->op;

	evtimer_del(c->timer);
	close_conn(c);
	c->op = NULL;
	c->st = C_DOWN;
	if (connecting)
		p->connect_failures++;
	if (log_due(p))
		log_warn("gateway: credentials_db: %s: %s", connecting ? "cannot connect" :
			 "connection lost", why);
	if (o) {
		o->c = NULL;
		answer(o, res, NULL);
	}
	if (!any_up(p) && connecting) {
		if (!p->down && p->was_up)
			log_error("gateway: credentials_db: no connection to the database: sign-ins "
				  "answer as fail = \"%s\" says", p->db.fail == SL_DB_FAIL_FILE ?
				  "file" : "closed");
		p->down = true;
		flush_queue(p, GW_PG_UNAVAILABLE);
	}
	schedule(c, c->backoff_ms);
	c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
}

static void conn_start(struct conn *c)
{
	struct gw_pg *p = c->p;
	uint32_t ms = p->db.timeout_ms > CONNECT_MIN_MS ? p->db.timeout_ms : CONNECT_MIN_MS;
	struct timeval tv = tv_ms(ms);
	char m[256];

	c->st = C_CONNECTING;
	c->pg = PQconnectStart(p->conninfo);
	if (!c->pg || PQstatus(c->pg) == CONNECTION_BAD) {
		conn_fail(c, GW_PG_ERROR, pq_msg(c->pg, m, sizeof(m)));
		return;
	}
	/* PQconnectStart has begun the connect(): the first poll waits for writability. */
	if (arm(c, EV_WRITE)) {
		conn_fail(c, GW_PG_ERROR, "cannot watch its socket");
		return;
	}
	evtimer_add(c->timer, &tv);
}

static void on_conn_timer(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	if (c->st == C_DOWN)
		conn_start(c);
	else if (c->st == C_CONNECTING)
		conn_fail(c, GW_PG_ERROR, "no answer to the connection within its deadline");
}

static void connected(struct conn *c)
{
	struct gw_pg *p = c->p;

	evtimer_del(c->timer);
	if (PQsetnonblocking(c->pg, 1) || arm(c, EV_READ)) {
		char m[256];

		conn_fail(c, GW_PG_ERROR, pq_msg(c->pg, m, sizeof(m)));
		return;
	}
	c->st = C_IDLE;
	c->backoff_ms = BACKOFF_MIN_MS;
	p->connects++;
	if (p->down || !p->was_up)
		log_info("gateway: credentials_db: connected (a pool of %u)", p->n);
	p->down = false;
	p->was_up = true;
	pump(p);
}

/* One result of the op in flight. */
static void take_result(struct conn *c, PGresult *res)
{
	struct gw_pg *p = c->p;
	ExecStatusType st = PQresultStatus(res);
	struct op *o = c->op;

	if (c->res >= 0 || !o)
		return; /* a second statement's result: the first decided */
	if (st == PGRES_TUPLES_OK && o->kind == GW_PG_LOOKUP) {
		int rows = PQntuples(res);

		if (!rows) {
			c->res = GW_PG_NONE;
		} else if (rows > 1 || PQnfields(res) != 1 || PQgetisnull(res, 0, 0) ||
			   PQgetlength(res, 0, 0) >= GW_PHC_MAX) {
			/* Two rows for one account, or not one text column: the row is not one
			 * PHC string, whatever it holds. */
			c->res = GW_PG_MALFORMED;
		} else {
			snprintf(c->phc, sizeof(c->phc), "%s", PQgetvalue(res, 0, 0));
			c->res = GW_PG_FOUND;
		}
	} else if (st == PGRES_TUPLES_OK) {
		c->res = PQntuples(res) > 0 ? GW_PG_FOUND : GW_PG_NONE; /* INSERT ... RETURNING */
	} else if (st == PGRES_COMMAND_OK) {
		const char *n = PQcmdTuples(res);

		c->res = o->kind == GW_PG_LOOKUP ? GW_PG_MALFORMED :
			 n[0] && atol(n) > 0 ? GW_PG_FOUND : GW_PG_NONE;
	} else {
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

		if (state && !strcmp(state, "23505")) {
			c->res = GW_PG_EXISTS;
			return;
		}
		c->res = GW_PG_ERROR;
		/* A message can quote a parameter (an account name): only errors about the
		 * query itself (class 42: syntax, names, rights) are quoted. */
		if (log_due(p))
			log_warn("gateway: credentials_db: the %s query failed: SQLSTATE %s%s%s",
				 o->kind == GW_PG_LOOKUP ? "lookup" : o->kind == GW_PG_INSERT ?
				 "insert" : "update", state ? state : "?",
				 state && !strncmp(state, "42", 2) && msg ? ": " : "",
				 state && !strncmp(state, "42", 2) && msg ? msg : "");
	}
}

/* Read what the server sent; when libpq has the op's every result, answer it. */
static void busy_read(struct conn *c)
{
	PGresult *res;
	char m[256];

	if (!PQconsumeInput(c->pg)) {
		conn_fail(c, GW_PG_ERROR, pq_msg(c->pg, m, sizeof(m)));
		return;
	}
	while (!PQisBusy(c->pg)) {
		struct op *o;
		int r;

		res = PQgetResult(c->pg);
		if (res) {
			take_result(c, res);
			PQclear(res);
			continue;
		}
		/* Done: the connection is free before the caller hears (it may query again). */
		o = c->op;
		r = c->res < 0 ? GW_PG_ERROR : c->res;
		c->op = NULL;
		c->st = C_IDLE;
		if (o) {
			o->c = NULL;
			answer(o, r, c->phc);
		}
		sodium_memzero(c->phc, sizeof(c->phc));
		pump(c->p);
		return;
	}
}

static void on_sock(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	char m[256];

	(void)fd;
	if (c->st == C_CONNECTING) {
		switch (PQconnectPoll(c->pg)) {
		case PGRES_POLLING_READING:
			if (arm(c, EV_READ))
				conn_fail(c, GW_PG_ERROR, "cannot watch its socket");
			return;
		case PGRES_POLLING_WRITING:
			if (arm(c, EV_WRITE))
				conn_fail(c, GW_PG_ERROR, "cannot watch its socket");
			return;
		case PGRES_POLLING_OK:
			connected(c);
			return;
		default:
			conn_fail(c, GW_PG_ERROR, pq_msg(c->pg, m, sizeof(m)));
			return;
		}
	}
	if (c->st == C_IDLE) {
		PGnotify *n;

		/* Nothing is asked: this is the server closing, or a notice. */
		if (!PQconsumeInput(c->pg) || PQstatus(c->pg) != CONNECTION_OK) {
			conn_fail(c, GW_PG_ERROR, pq_msg(c->pg, m, sizeof(m)));
			return;
		}
		while ((n = PQnotifies(c->pg)))
			PQfreemem(n);
		return;
	}
	if (c->st != C_BUSY)
		return;
	if (c->flushing) {
		int f;

		if ((what & EV_READ) && !PQconsumeInput(c->pg)) {
			conn_fail(c, GW_PG_ERROR, pq_msg(c->pg, m, sizeof(m)));
			return;
		}
		f = PQflush(c->pg);
		if (f < 0) {
			conn_fail(c, GW_PG_ERROR, pq_msg(c->pg, m, sizeof(m)));
			return;
		}
		if (f == 0) {
			c->flushing = false;
			if (arm(c, EV_READ)) {
				conn_fail(c, GW_PG_ERROR, "cannot watch its socket");
				return;
			}
		}
		if (!(what & EV_READ))
			return;
	}
	busy_read(c);
}

/* Send @o on the idle @c. */
static void send_op(struct conn *c, struct op *o)
{
	struct gw_pg *p = c->p;
	const char *sql = o->kind == GW_PG_LOOKUP ? p->db.lookup :
			  o->kind == GW_PG_INSERT ? p->db.insert : p->db.update;
	const char *vals[3] = { o->tenant, o->account, o->phc };
	static const Oid types[3] = { TEXT_OID, TEXT_OID, TEXT_OID };
	int n = o->kind == GW_PG_LOOKUP ? 2 : 3, f;
	char m[256];

	c->op = o;
	o->c = c;
	c->res = -1;
	c->st = C_BUSY;
	/* Parameters, never SQL text: the values travel apart from the statement. */
	if (!PQsendQueryParams(c->pg, sql, n, types, vals, NULL, NULL, 0)) {
		conn_fail(c, GW_PG_ERROR, pq_msg(c->pg, m, sizeof(m)));
		return;
	}
	f = PQflush(c->pg);
	if (f < 0) {
		conn_fail(c, GW_PG_ERROR, pq_msg(c->pg, m, sizeof(m)));
		return;
	}
	c->flushing = f == 1;
	if (arm(c, c->flushing ? EV_READ | EV_WRITE : EV_READ))
		conn_fail(c, GW_PG_ERROR, "cannot watch its socket");
}

/* Queued ops onto idle connections, oldest first. */
static void pump(struct gw_pg *p)
{
	unsigned i;

	for (i = 0; i < p->n && p->qhead; i++) {
		struct conn *c = &p->conns[i];

		if (c->st == C_IDLE) {
			struct op *o = p->qhead;

			unqueue(p, o);
			send_op(c, o);
		}
	}
}

/* ---- the op's timer ------------------------------------------------------------------- */

static void on_op_timer(evutil_socket_t fd, short what, void *arg)
{
	struct op *o = arg;
	struct gw_pg *p = o->p;
	struct conn *c = o->c;

	(void)fd;
	(void)what;
	if (o->immediate >= 0) {
		answer(o, o->immediate, NULL);
		return;
	}
	if (c) {
		/* Its connection is still in the query: there is no cancelling it without a
		 * blocking call, so it is closed and made again (the server's backend ends
		 * the query when it finds its client gone). */
		c->op = NULL;
		o->c = NULL;
		p->resets++;
		close_conn(c);
		evtimer_del(c->timer);
		schedule(c, c->backoff_ms);
		answer(o, GW_PG_TIMEOUT, NULL);
		return;
	}
	unqueue(p, o);
	answer(o, GW_PG_TIMEOUT, NULL);
}

void gw_pg_query(struct gw_pg *p, int kind, const char *tenant, const char *account,
		 const char *phc, uint64_t deadline_ns, gw_pg_fn fn, void *arg)
{
	struct op *o = calloc(1, sizeof(*o));
	uint64_t now = now_ns();
	uint64_t ms = p->db.timeout_ms;
	struct timeval tv;

	if (deadline_ns && (deadline_ns <= now || (deadline_ns - now) / 1000000ull < ms))
		ms = deadline_ns > now ? (deadline_ns - now) / 1000000ull : 0;
	tv = tv_ms((uint32_t)ms);

	if (!o || !(o->tmo = evtimer_new(p->base, on_op_timer, o))) {
		/* Nothing to answer through: the caller hears at once, the one exception. */
		free(o);
		fn(arg, GW_PG_ERROR, NULL);
		return;
	}
	o->p = p;
	o->kind = kind;
	o->immediate = -1;
	o->fn = fn;
	o->arg = arg;
	o->t0_ns = now;
	snprintf(o->tenant, sizeof(o->tenant), "%s", tenant);
	snprintf(o->account, sizeof(o->account), "%s", account);
	snprintf(o->phc, sizeof(o->phc), "%s", phc ? phc : "");
	o->anext = p->all;
	if (p->all)
		p->all->aprev = o;
	p->all = o;
	if (!gw_pg_can(p, kind)) {
		o->immediate = GW_PG_ERROR;
	} else if (!ms) {
		o->immediate = GW_PG_TIMEOUT; /* its deadline has passed */
	} else if (p->down) {
		o->immediate = GW_PG_UNAVAILABLE;
	} else if (p->qlen >= p->db.queue) {
		o->immediate = GW_PG_FULL;
	}
	if (o->immediate >= 0) {
		event_active(o->tmo, EV_TIMEOUT, 1);
		return;
	}
	evtimer_add(o->tmo, &tv);
	o->prev = p->qtail;
	if (p->qtail)
		p->qtail->next = o;
	else
		p->qhead = o;
	p->qtail = o;
	p->qlen++;
	pump(p);
}

bool gw_pg_can(const struct gw_pg *p, int kind)
{
	return kind == GW_PG_LOOKUP || (kind == GW_PG_INSERT ? p->db.insert[0] : p->db.update[0]);
}

bool gw_pg_up(const struct gw_pg *p)
{
	return !p->down;
}

void gw_pg_note_malformed(struct gw_pg *p)
{
	if (p->results[GW_PG_FOUND])
		p->results[GW_PG_FOUND]--;
	p->results[GW_PG_MALFORMED]++;
}

/* ---- setup ----------------------------------------------------------------------------- */

/* The conninfo, from the config or its file (one line; trailing whitespace dropped). */
static char *conninfo_of(const struct sl_credentials_db *db, char *err, size_t errlen)
{
	char buf[4096];
	struct stat st;
	ssize_t n;
	int fd;

	if (!db->conninfo_file[0])
		return strdup(db->conninfo);
	fd = open(db->conninfo_file, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "gateway.credentials_db.conninfo_file %s: %s",
			 db->conninfo_file, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (st.st_mode & 077)
		log_warn("%s is readable by group or others (mode %03o): it holds the database "
			 "password", db->conninfo_file, (unsigned)(st.st_mode & 0777));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0 || (size_t)n >= sizeof(buf) - 1) {
		snprintf(err, errlen, "gateway.credentials_db.conninfo_file %s: %s",
			 db->conninfo_file, n < 0 ? strerror(errno) : "longer than 4 KiB");
		return NULL;
	}
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
		     buf[n - 1] == '\t'))
		n--;
	buf[n] = '\0';
	if (!n || memchr(buf, '\n', (size_t)n)) {
		snprintf(err, errlen, "gateway.credentials_db.conninfo_file %s: expected one line "
			 "(a libpq connection string or URI)", db->conninfo_file);
		sodium_memzero(buf, sizeof(buf));
		return NULL;
	}
	{
		char *s = strdup(buf);

		sodium_memzero(buf, sizeof(buf));
		return s;
	}
}

/* A host libpq would look up with getaddrinfo() on the loop: not an address, not a
 * socket directory, and no hostaddr beside it. */
static bool blocking_host(const char *host, const char *hostaddr)
{
	struct in6_addr a6;
	struct in_addr a4;
	char one[256];
	const char *p = host;

	if (hostaddr && hostaddr[0])
		return false;
	while (p && *p) {
		size_t n = strcspn(p, ",");

		snprintf(one, sizeof(one), "%.*s", (int)(n < sizeof(one) ? n : sizeof(one) - 1), p);
		if (one[0] && one[0] != '/' && one[0] != '@' && inet_pton(AF_INET, one, &a4) != 1 &&
		    inet_pton(AF_INET6, one, &a6) != 1)
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

static int check_conninfo(const char *ci, char *err, size_t errlen)
{
	PQconninfoOption *opts, *o;
	const char *host = NULL, *hostaddr = NULL;
	char *perr = NULL;
	int ret = 0;

	opts = PQconninfoParse(ci, &perr);
	if (!opts) {
		size_t n;

		snprintf(err, errlen, "gateway.credentials_db: the conninfo does not parse: %s",
			 perr ? perr : "out of memory");
		n = strlen(err);
		while (n && err[n - 1] == '\n')
			err[--n] = '\0';
		PQfreemem(perr);
		return -EINVAL;
	}
	for (o = opts; o->keyword; o++) {
		if (!strcmp(o->keyword, "host"))
			host = o->val;
		else if (!strcmp(o->keyword, "hostaddr"))
			hostaddr = o->val;
	}
	if (!host)
		host = getenv("PGHOST");
	if (blocking_host(host, hostaddr)) {
		snprintf(err, errlen, "gateway.credentials_db: host '%s' is a name: libpq would "
			 "resolve it with a blocking call on the event loop; give an address "
			 "(host=127.0.0.1), a socket directory (host=/run/postgresql) or hostaddr "
			 "beside the name", host);
		ret = -EINVAL;
	}
	PQconninfoFree(opts);
	return ret;
}

int gw_pg_check(const struct sl_credentials_db *db, char *err, size_t errlen)
{
	char *ci = conninfo_of(db, err, errlen);
	int ret;

	if (!ci)
		return -EINVAL;
	ret = check_conninfo(ci, err, errlen);
	sodium_memzero(ci, strlen(ci));
	free(ci);
	return ret;
}

int gw_pg_start(struct event_base *base, const struct sl_credentials_db *db,
		struct gw_pg **out, char *err, size_t errlen)
{
	struct gw_pg *p = calloc(1, sizeof(*p));
	unsigned i;

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->base = base;
	p->db = *db;
	sodium_memzero(p->db.conninfo, sizeof(p->db.conninfo));
	p->conninfo = conninfo_of(db, err, errlen);
	if (!p->conninfo || check_conninfo(p->conninfo, err, errlen)) {
		gw_pg_free(p);
		return -EINVAL;
	}
	p->n = db->pool;
	p->conns = calloc(p->n, sizeof(*p->conns));
	if (!p->conns) {
		gw_pg_free(p);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < p->n; i++) {
		struct conn *c = &p->conns[i];

		c->p = p;
		c->idx = i;
		c->backoff_ms = BACKOFF_MIN_MS;
		c->timer = evtimer_new(base, on_conn_timer, c);
		if (!c->timer) {
			gw_pg_free(p);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		conn_start(c);
	}
	*out = p;
	return 0;
}

void gw_pg_free(struct gw_pg *p)
{
	unsigned i;

	if (!p)
		return;
	while (p->all)
		op_free(p->all);
	for (i = 0; p->conns && i < p->n; i++) {
		close_conn(&p->conns[i]);
		if (p->conns[i].timer)
			event_free(p->conns[i].timer);
	}
	free(p->conns);
	if (p->conninfo) {
		sodium_memzero(p->conninfo, strlen(p->conninfo));
		free(p->conninfo);
	}
	free(p);
}

void gw_pg_metrics(struct gw_pg *p, struct evbuffer *out)
{
	static const char *const states[] = { "down", "connecting", "idle", "busy" };
	unsigned n[4] = { 0 }, i;
	int k;

	if (!p)
		return;
	for (i = 0; i < p->n; i++)
		n[p->conns[i].st]++;
	evbuffer_add_printf(out, "# HELP sluice_gateway_credentials_db_queries_total Queries to "
			    "the credentials database, by kind of end (found, none, malformed, "
			    "exists, error, timeout, unavailable, queue_full).\n"
			    "# TYPE sluice_gateway_credentials_db_queries_total counter\n");
	for (k = 0; k < GW_PG__N; k++)
		evbuffer_add_printf(out, "sluice_gateway_credentials_db_queries_total{result=\"%s\"}"
				    " %llu\n", result_names[k], (unsigned long long)p->results[k]);
	evbuffer_add_printf(out, "# HELP sluice_gateway_credentials_db_connections The pool's "
			    "connections, by state.\n"
			    "# TYPE sluice_gateway_credentials_db_connections gauge\n");
	for (k = 0; k < 4; k++)
		evbuffer_add_printf(out, "sluice_gateway_credentials_db_connections{state=\"%s\"} "
				    "%u\n", states[k], n[k]);
	evbuffer_add_printf(out, "# HELP sluice_gateway_credentials_db_queue_depth Queries "
			    "waiting for a free connection.\n"
			    "# TYPE sluice_gateway_credentials_db_queue_depth gauge\n"
			    "sluice_gateway_credentials_db_queue_depth %u\n", p->qlen);
	evbuffer_add_printf(out, "# HELP sluice_gateway_credentials_db_resets_total Connections "
			    "closed and made again because a query outlived timeout_ms.\n"
			    "# TYPE sluice_gateway_credentials_db_resets_total counter\n"
			    "sluice_gateway_credentials_db_resets_total %llu\n",
			    (unsigned long long)p->resets);
	evbuffer_add_printf(out, "# HELP sluice_gateway_credentials_db_connect_failures_total "
			    "Connection attempts that failed or timed out.\n"
			    "# TYPE sluice_gateway_credentials_db_connect_failures_total counter\n"
			    "sluice_gateway_credentials_db_connect_failures_total %llu\n",
			    (unsigned long long)p->connect_failures);
	evbuffer_add_printf(out, "# HELP sluice_gateway_credentials_db_query_seconds Time from a "
			    "query's submission to its end, queue wait included.\n"
			    "# TYPE sluice_gateway_credentials_db_query_seconds histogram\n");
	for (i = 0; i < N_LE; i++)
		evbuffer_add_printf(out, "sluice_gateway_credentials_db_query_seconds_bucket"
				    "{le=\"%g\"} %llu\n", le_s[i], (unsigned long long)p->le[i]);
	evbuffer_add_printf(out, "sluice_gateway_credentials_db_query_seconds_bucket{le=\"+Inf\"}"
			    " %llu\nsluice_gateway_credentials_db_query_seconds_sum %.6f\n"
			    "sluice_gateway_credentials_db_query_seconds_count %llu\n",
			    (unsigned long long)p->lat_n, p->lat_sum, (unsigned long long)p->lat_n);
}
