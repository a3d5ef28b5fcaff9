/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The audit log: one JSON object per line for every refusal, block, verdict change, detector
 * firing and operator action, for a SIEM to ingest (docs/operations.md, "Audit log"). Every
 * line carries the same fields (null where one does not apply): time (ISO 8601, UTC, ms),
 * node, event, source, tenant, route, account, prefix, reason, decision, operator, detail,
 * dropped. An account is only ever its keyed hash (sl_audit_account_hash); no name or
 * password is written.
 *
 * Output: a file (opened O_APPEND, reopened by audit_reopen for logrotate), "stderr" (the
 * journal, under the systemd unit, which runs sluiced in the foreground) or "syslog"
 * (syslog(3), facility authpriv: journald or rsyslog). Refusals, blocks, detector firings and
 * the edge's sampled events share a token bucket (audit.rate lines per second, audit.burst at
 * once); what it refuses is dropped and counted, and the next line written says how many
 * were dropped before it ("dropped": N); when nothing else follows, audit_tick writes one
 * "dropped" summary line. Operator actions and verdicts an operator changed are never
 * dropped. Thread safe: the loop, the stream job's thread and the hash pool may all call in.
 */
#ifndef SLUICE_AUDIT_H
#define SLUICE_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

enum audit_event {
	AUDIT_REFUSAL = 0, /* a request answered 429 (capacity, deadline, a counter, the edge) */
	AUDIT_BLOCK,       /* an account locked out, a step-up, a verdict applied to a request */
	AUDIT_VERDICT,     /* a verdict written or removed (the stream job, an operator) */
	AUDIT_DETECTOR,    /* a stream detector fired (enforced or, in monitor mode, would have) */
	AUDIT_OPERATOR,    /* clear, reload, user add, ... */
	AUDIT_DROPPED,     /* the summary of lines the rate limit dropped */
	AUDIT__MAX
};

/* One record. NULL strings are written as null. */
struct audit_rec {
	enum audit_event event;
	const char *source;     /* "gateway", "edge", "stream", "sluiced", "sluicectl" */
	const char *tenant;
	const char *route;
	const uint8_t *account; /* a 16-byte keyed hash (sl_audit_account_hash), or NULL */
	const char *account_hex;/* or one already in hex (the stream job's keys) */
	const char *prefix;
	const char *reason;
	const char *decision;
	const char *operator_;
	const char *detail;
	bool must;              /* never dropped by the rate limit (operators' actions) */
};

const char *audit_event_name(enum audit_event e);

/* Validate an audit.output value: "", "stderr", "syslog" or a path. NULL, or why not. */
const char *audit_output_problem(const char *output);

/*
 * Start or re-point the process's audit log at @c->audit (output, rate, burst), with @c's
 * cluster.node as the node field. A changed output is opened before the old one is closed;
 * on failure the old one stays and @err says why. Returns 0 or a negative errno.
 */
int audit_configure(const struct sl_config *c, char *err, size_t errlen);
/* Reopen the file (logrotate's postrotate: SIGHUP). 0 or a negative errno (the old fd stays). */
int audit_reopen(void);
/* Close it (the process ends, or audit.output was emptied). */
void audit_close(void);
/* Whether lines go anywhere: callers skip building a record when not. */
bool audit_enabled(void);

/* Write @r (or drop it, counted, when the bucket is empty and !@r->must). */
void audit_emit(const struct audit_rec *r);
/* Once a second: a "dropped" line when lines were dropped and nothing has carried the count. */
void audit_tick(void);

struct sl_event;
/* One of the edge's sampled events (the ring: 1 in edge.event_sample sheds): a refusal
 * (a shed, a 429 sent), or a block when a verdict covers the source; monitor mode's
 * would-be sheds are refusals with decision "would_shed". @c names the class. */
void audit_edge_event(const struct sl_event *e, const struct sl_config *c);

struct audit_stats {
	uint64_t written, dropped, errors;
};
void audit_get_stats(struct audit_stats *s);
struct evbuffer;
/* sluice_audit_lines_total, sluice_audit_dropped_total, sluice_audit_write_errors_total. */
void audit_metrics(struct evbuffer *out);

/*
 * The keyed hash an account is written as: BLAKE2b-128 of (tenant, NUL, account) under a key
 * derived from @key (the gateway's session key, shared by every node), the same hash the
 * stream job's events carry, so its lines and the gateway's join.
 */
void sl_audit_account_hash(const uint8_t *key, size_t keylen, const char *tenant,
			   const char *account, size_t alen, uint8_t out[16]);

/* Render one line (no trailing newline) into @buf; its length, or -1 if @n is too small. For
 * the tests and for one-shot writers. @now_unix_ms is the record's time. */
int audit_format(char *buf, size_t n, const char *node, const struct audit_rec *r,
		 uint64_t dropped, uint64_t now_unix_ms);

/* One line from a short-lived process (sluicectl): @c's audit output, opened, written,
 * closed; no rate limit. 0, 1 when @c has no audit output, or a negative errno. */
int audit_oneshot(const struct sl_config *c, const struct audit_rec *r);

/* @s as a JSON string, quotes included, into @buf (NUL-terminated): control characters
 * escaped, invalid UTF-8 as U+FFFD, at most @max bytes of @s. The length, or -1 if @n is too
 * small (log.c's JSON records use it too). */
int sl_json_quote(char *buf, size_t n, const char *s, size_t max);

/* The operator for an audit line: SUDO_USER (uid N), or the user name of uid N. */
void audit_operator(char *buf, size_t n);

#endif
