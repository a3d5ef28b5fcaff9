/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Accounts in PostgreSQL (gateway.credentials_db, docs/credentials.md): a pool of libpq
 * connections driven from the event loop, never a blocking call on it. Connections are made
 * with PQconnectStart/PQconnectPoll, queries sent with PQsendQueryParams (the operator's SQL
 * with $1 tenant, $2 account, $3 PHC string as text parameters: no value is ever spliced
 * into SQL) and read as their sockets become readable. A query waits for a free connection
 * in a bounded queue and is answered within timeout_ms of its submission, whatever the
 * server does: past it the query is answered GW_PG_TIMEOUT and its connection is closed and
 * made again (libpq 15's PQcancel would block the loop). A connection that fails is made
 * again with a backoff; while none is up and the last attempt failed, queries are answered
 * GW_PG_UNAVAILABLE at once rather than after their timeout.
 *
 * The Argon2id pool still verifies: this only finds the PHC string.
 */
#ifndef SLUICE_GW_PG_H
#define SLUICE_GW_PG_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "config.h"

/* How a query ended (sluice_gateway_credentials_db_queries_total{result}). */
enum gw_pg_result {
	GW_PG_FOUND,       /* a lookup's one row; a write that changed a row */
	GW_PG_NONE,        /* no such account; a write that changed nothing */
	GW_PG_MALFORMED,   /* a lookup's row was not one PHC string (told by the caller too) */
	GW_PG_EXISTS,      /* an insert hit a unique constraint (SQLSTATE 23505) */
	GW_PG_ERROR,       /* the server refused the query, or the connection broke under it */
	GW_PG_TIMEOUT,     /* no answer within timeout_ms */
	GW_PG_UNAVAILABLE, /* no connection up, the last attempt failed */
	GW_PG_FULL,        /* the queue was full */
	GW_PG__N
};

const char *gw_pg_result_name(int res);
/* A failure of the database, not an answer about the account. */
static inline bool gw_pg_failed(int res)
{
	return res >= GW_PG_ERROR;
}

struct gw_pg;

/*
 * Called once per query, always from the loop and never inside the call that submitted it.
 * @phc is the row's PHC string for GW_PG_FOUND from a lookup (valid during the call only),
 * else NULL.
 */
typedef void (*gw_pg_fn)(void *arg, int res, const char *phc);

/*
 * Check @db (read its conninfo_file, parse the conninfo, refuse a host name libpq would
 * resolve with a blocking call) without connecting. 0, or -errno with why in @err.
 */
int gw_pg_check(const struct sl_credentials_db *db, char *err, size_t errlen);
/* Start the pool on @base: connections are begun at once, in the background. */
int gw_pg_start(struct event_base *base, const struct sl_credentials_db *db,
		struct gw_pg **out, char *err, size_t errlen);
/* Drop everything: queries outstanding are never answered (the gateway answers their
 * requests itself as it stops). */
void gw_pg_free(struct gw_pg *p);

enum gw_pg_op_kind { GW_PG_LOOKUP, GW_PG_INSERT, GW_PG_UPDATE };
/* Run the configured @kind query for (@tenant, @account[, @phc]); @fn hears how it ended,
 * within timeout_ms and before @deadline_ns (CLOCK_MONOTONIC, the request's own deadline; 0:
 * none), whichever is sooner: a request nobody will wait for does not hold a connection.
 * Without an insert or update query configured it is answered GW_PG_ERROR. */
void gw_pg_query(struct gw_pg *p, int kind, const char *tenant, const char *account,
		 const char *phc, uint64_t deadline_ns, gw_pg_fn fn, void *arg);
bool gw_pg_can(const struct gw_pg *p, int kind);
/* The caller found a lookup's row unusable (not an Argon2id PHC string the pool can run):
 * counted as malformed instead of found. */
void gw_pg_note_malformed(struct gw_pg *p);

/* false while no connection is up and the last attempt failed (queries fail at once). */
bool gw_pg_up(const struct gw_pg *p);

/* The pool's lines for /metrics. */
void gw_pg_metrics(struct gw_pg *p, struct evbuffer *out);

#endif
