// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * sluiced: the sluice controller. Loads the config and ASN table, loads and attaches the edge
 * datapath, and keeps it in step with the config: SIGHUP or `sluicectl reload` re-reads and
 * validates the file, and only a file that is entirely valid replaces the running config.
 *
 * Reloads and ASN loads are jobs: parsing, the gateway's files and building the ASN table
 * into the maps' idle slot run on the control worker (worker.h), and the loop, which also
 * serves the gateway, only applies the result. One job at a time, in the order asked; a
 * reload asked while another waits to start joins it (a burst of SIGHUPs is one reload in
 * flight and one pending), and every control request waiting on a job is answered when it
 * is applied.
 *
 * Signals: SIGHUP reload; SIGTERM/SIGINT detach, remove the pins and exit; SIGQUIT exit
 * leaving the datapath attached and its maps pinned, for the next sluiced to adopt with its
 * bucket state (an upgrade without a gap).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <bpf/bpf.h>

#include "asn.h"
#include "audit.h"
#include "budget.h"
#include "config.h"
#include "config_show.h"
#include "clear_account.h"
#include "ctl.h"
#include "edge.h"
#include "evhub.h"
#include "gateway.h"
#include "gw_tls.h"
#include "json.h"
#include "lease.h"
#include "log.h"
#include "notify.h"
#include "metrics.h"
#include "store.h"
#include "stream.h"
#include "topk.h"
#include "worker.h"
#include "addr.h"
#include "maps.h"
#include "sluice/hash.h"

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.1.0"
#endif

struct job;

struct daemon {
	struct event_base *base;
	struct event *tick;
	struct ctl_server *ctl;
	struct worker *worker;   /* reloads and ASN loads, off the loop */
	struct job *job;         /* the one the worker has, or is being applied */
	struct job *queue, *queue_tail; /* asked for, not started */
	int queued_asn;
	struct edge edge;
	struct gateway *gw;
	struct sl_store *store;  /* counters: in-process, or Redis when redis.address is set */
	struct lease_ctl *lease; /* the edge's tenant leases */
	struct metrics_server *metrics;
	struct metrics_tables *tables; /* table occupancy for /metrics, with an edge */
	struct metrics_daemon md;      /* build, node and reloads for /metrics */
	struct stream *stream;   /* the stream job, when the gateway runs */
	struct topk *topk;       /* top shed prefixes (sluicectl top), with an edge */
	struct evhub *evhub;     /* the edge's event ring, read once for every reader */
	struct sl_config cfg;
	char config_path[PATH_MAX];
	char base_dir[PATH_MAX];
	int log_override;
	int log_format_override; /* --log-format given: daemon.log_format is not read */
	bool handover;
	bool stopping;
	/* SIGTERM/SIGQUIT with a gateway: its drain, bounded by gateway.drain_ms */
	bool draining, drain_handover;
	struct event *drain_ev;
	uint64_t drain_start_ns, drain_until_ns;
	struct event *watchdog; /* WATCHDOG=1 to systemd, when it asked for them */
	/* readiness: the edge's attachment, checked at most once a second */
	uint64_t ready_checked_ns;
	bool ready_bad;
	char ready_why[160];
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: sluiced [--config FILE] [--foreground] [--log-level LEVEL] [--log-format FMT]\n"
		"       sluiced --check-config [--config FILE]\n"
		"\n"
		"The sluice controller: attaches the XDP admission datapath to the interfaces in\n"
		"the config and keeps its maps in step with the config.\n"
		"\n"
		"  -c, --config FILE      config file (default %s)\n"
		"  -f, --foreground       stay in the foreground and log to stderr\n"
		"  -l, --log-level LEVEL  error, warn, info or debug (overrides the config)\n"
		"  -F, --log-format FMT   text or json records (overrides daemon.log_format)\n"
		"  -t, --check-config     check the config file, its ASN table, the gateway's\n"
		"                         files and what a start needs of this host (the\n"
		"                         interfaces exist, pin_path is on a bpf filesystem, the\n"
		"                         control socket's directory exists or can be made),\n"
		"                         print every problem as file:line and exit: 0 if valid\n"
		"                         (warnings, file:line: warning: ..., included), 1 if\n"
		"                         not; attaches and creates nothing\n"
		"  -V, --version          print the version\n"
		"  -h, --help             this text\n"
		"\n"
		"Signals: HUP reloads the config (a bad file is reported and the running config\n"
		"stays); TERM or INT detaches, removes the pins and exits; QUIT exits leaving the\n"
		"datapath attached and its state pinned for the next sluiced to adopt.\n",
		SL_DEFAULT_CONFIG);
}

static int parse_level(const char *s)
{
	static const char *const n[] = { "error", "warn", "info", "debug" };
	int i;

	for (i = 0; i < 4; i++)
		if (!strcmp(s, n[i]))
			return i;
	return -1;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* What the config loader found valid but likely wrong, one log line each, at start and at
 * every reload (a file that loads with warnings still loads). */
static void log_config_warnings(const struct sl_config *c)
{
	const char *l, *nl;

	for (l = c->warnings; *l; l = nl ? nl + 1 : l + strlen(l)) {
		nl = strchr(l, '\n');
		log_warn("%.*s", nl ? (int)(nl - l) : (int)strlen(l), l);
	}
	if (c->n_warnings > count_lines(c->warnings))
		log_warn("%s: %d more warning(s) not shown", c->path,
			 c->n_warnings - count_lines(c->warnings));
}

static void strip_trailing_nl(char *s)
{
	size_t len = strlen(s);

	while (len && s[len - 1] == '\n')
		s[--len] = '\0';
}

/* Load config and ASN table into @c/@asn; on failure log every problem, leave them all in
 * @errs (one per line, no trailing newline: a reload's answer lists each) and return < 0. */
static int load_all(struct daemon *d, struct sl_config *c, struct sl_asn_table *asn,
		    char *errs, size_t n)
{
	char err[4096];
	int ret;

	memset(asn, 0, sizeof(*asn));
	ret = sl_config_load(d->config_path, NULL, c, err, sizeof(err));
	if (!ret && c->asn_table[0])
		ret = sl_asn_load_csv(c->asn_table, c, asn, err, sizeof(err));
	if (ret) {
		log_error("%s", err);
		snprintf(errs, n, "%s", err);
		strip_trailing_nl(errs);
	} else {
		/* The file's own log format, from its first lines on (the warnings). */
		if (!d->log_format_override)
			log_set_json(c->log_json);
		log_config_warnings(c);
	}
	return ret;
}

/* Print @err, a "file:line: reason" line or several, ending it with a newline. */
static void put_problems(const char *err)
{
	if (err[0])
		fprintf(stderr, "%s%s", err, err[strlen(err) - 1] == '\n' ? "" : "\n");
}

/* --check-config: the checks a reload makes before it applies anything, on their own, and
 * those of the host a start would meet (sl_config_check_host: interfaces, pins' filesystem,
 * control socket), without attaching or creating anything. Problems go to stderr as they
 * are (file:line: reason), without log prefixes, so an editor or a packaging script can read
 * them: all of them once the file parses. Returns the exit status. */
static int check_config(struct daemon *d)
{
	struct sl_config *c = malloc(sizeof(*c));
	struct sl_asn_table asn = { 0 };
	struct gw_prepared *gp;
	char err[4096] = "";
	int ret = 1, bad = 0;

	if (!c) {
		fprintf(stderr, "sluiced: out of memory\n");
		return 1;
	}
	if (sl_config_load(d->config_path, NULL, c, err, sizeof(err))) {
		put_problems(err);
		goto out;
	}
	if (sl_config_check_host(c, err, sizeof(err))) {
		put_problems(err);
		bad = 1;
	}
	/* An unreadable table is one of the host's problems above; a readable one must parse. */
	if (c->asn_table[0] && !access(c->asn_table, R_OK) &&
	    sl_asn_load_csv(c->asn_table, c, &asn, err, sizeof(err))) {
		put_problems(err);
		bad = 1;
	}
	if (c->gw.present) {
		gp = gateway_prepare(c, err, sizeof(err));
		if (!gp) {
			put_problems(err);
			bad = 1;
		}
		gateway_prepared_free(gp);
	}
	if (bad)
		goto out;
	/* Warnings first, as the compiler prints them: the file is valid all the same. */
	fputs(c->warnings, stderr);
	if (c->n_warnings > count_lines(c->warnings))
		fprintf(stderr, "%s: %d more warning(s) not shown\n", d->config_path,
			c->n_warnings - count_lines(c->warnings));
	printf("%s: valid (%d interface(s), %d port(s), %d class(es), %d tenant(s), %zu ASN "
	       "row(s)%s%s)\n", d->config_path, c->has_edge ? c->n_ifaces : 0, c->n_ports,
	       c->n_classes, c->n_tenants, asn.n, c->gw.present ? ", gateway" : "",
	       c->n_warnings ? ", with warnings" : "");
	ret = 0;
out:
	sl_asn_free(&asn);
	free(c);
	return ret;
}

/* ---- jobs: reloads and ASN loads -------------------------------------------------------- */

/* ASN loads waiting to start, at most: more are refused (reloads coalesce instead). */
#define MAX_QUEUED_ASN 4

enum job_kind { JOB_RELOAD, JOB_ASN };
/* Where a job failed: what the answer and the log say depends on it. */
enum job_fail { FAIL_NONE, FAIL_LOAD, FAIL_GATEWAY, FAIL_STAGE };

/* A control request waiting for a job's outcome. */
struct waiter {
	struct ctl_req *req;
	struct waiter *next;
};

struct job {
	struct job *next;
	struct daemon *d;
	enum job_kind kind;
	struct waiter *waiters;
	int asked;              /* requests it answers (SIGHUPs included) */
	char path[PATH_MAX];    /* the config (reload) or the table (ASN load) */
	/* In, set on the loop when it starts. */
	struct sl_maps maps;    /* the edge's, for staging */
	bool stage;             /* this sluiced runs an edge: build the table into its idle slot */
	bool want_gw;           /* this sluiced runs a gateway: prepare its files */
	/* The running config (ASN load: class names) or, out, the new one (reload). */
	struct sl_config *cfg;
	/* Out, from the worker. */
	int ret;
	enum job_fail fail;
	char err[4096];
	struct gw_prepared *gp;
	struct sl_asn_staged staged;
	bool stage_tried;       /* the idle slot may hold what this job built */
	size_t rows;
	uint64_t start_ns, built_ns;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void job_answer(struct job *j, bool ok, const char *msg)
{
	struct waiter *w, *next;

	for (w = j->waiters; w; w = next) {
		next = w->next;
		ctl_answer(w->req, "%s %s%s", ok ? "ok" : "error", msg,
			   msg[0] && msg[strlen(msg) - 1] == '\n' ? "" : "\n");
		free(w);
	}
	j->waiters = NULL;
}

/* Free @j; anyone still waiting on it is told @why nothing changed. */
static void job_free(struct job *j, const char *why)
{
	if (!j)
		return;
	job_answer(j, false, why);
	gateway_prepared_free(j->gp);
	free(j->cfg);
	free(j);
}

/* On the worker: the parts of a reload that read files and build tables. Changes nothing
 * the datapath or the loop reads: the table goes into the idle slot. */
static void reload_build(void *arg)
{
	struct job *j = arg;
	struct sl_asn_table asn = { 0 };

	j->cfg = malloc(sizeof(*j->cfg));
	if (!j->cfg) {
		j->ret = -ENOMEM;
		j->fail = FAIL_LOAD;
		snprintf(j->err, sizeof(j->err), "%s: out of memory", j->path);
		return;
	}
	j->ret = sl_config_load(j->path, NULL, j->cfg, j->err, sizeof(j->err));
	if (!j->ret && j->cfg->asn_table[0])
		j->ret = sl_asn_load_csv(j->cfg->asn_table, j->cfg, &asn, j->err, sizeof(j->err));
	if (j->ret) {
		j->fail = FAIL_LOAD;
		goto out;
	}
	/* The gateway's files (credentials, session key) are read before anything changes:
	 * a bad one rejects the whole reload. */
	if (j->want_gw && j->cfg->gw.present) {
		j->gp = gateway_prepare(j->cfg, j->err, sizeof(j->err));
		if (!j->gp) {
			j->ret = -EINVAL;
			j->fail = FAIL_GATEWAY;
			goto out;
		}
	}
	j->rows = asn.n;
	if (j->stage && j->cfg->has_edge) {
		j->stage_tried = true;
		j->ret = sl_maps_stage_asn(&j->maps, &asn, (uint32_t)j->cfg->unknown_class,
					   &j->staged);
		if (j->ret) {
			j->fail = FAIL_STAGE;
			snprintf(j->err, sizeof(j->err), "cannot build the ASN table: %s",
				 strerror(-j->ret));
		}
	}
out:
	sl_asn_free(&asn);
	j->built_ns = mono_ns();
}

/* On the worker: parse an ASN table against the running classes and stage it. */
static void asn_build(void *arg)
{
	struct job *j = arg;
	struct sl_asn_table asn;

	j->ret = sl_asn_load_csv(j->path, j->cfg, &asn, j->err, sizeof(j->err));
	if (j->ret) {
		j->fail = FAIL_LOAD;
	} else {
		j->rows = asn.n;
		j->stage_tried = true;
		j->ret = sl_maps_stage_asn(&j->maps, &asn, (uint32_t)j->cfg->unknown_class,
					   &j->staged);
		if (j->ret) {
			j->fail = FAIL_STAGE;
			snprintf(j->err, sizeof(j->err), "cannot build the ASN table: %s",
				 strerror(-j->ret));
		}
	}
	sl_asn_free(&asn);
	j->built_ns = mono_ns();
}

/* A reload, applied or refused, in the audit log (an operator's action: a SIGHUP or
 * `sluicectl reload`; which of them is not known here). */
static void audit_reload(const char *msg, bool ok)
{
	char first[256];
	struct audit_rec a = { .event = AUDIT_OPERATOR, .source = "sluiced", .reason = "reload",
			       .decision = ok ? "applied" : "rejected", .detail = first,
			       .must = true };

	snprintf(first, sizeof(first), "%.*s", (int)strcspn(msg, "\n"), msg);
	audit_emit(&a);
}

/* On the loop: a reload the worker built, applied (or refused, changing nothing). The
 * answer goes to @msg. */
static int reload_apply(struct daemon *d, struct job *j, char *msg, size_t n)
{
	struct sl_config *nc = j->cfg;
	int ret;

	if (j->fail == FAIL_LOAD || j->fail == FAIL_GATEWAY) {
		char first[256];

		log_error("%s", j->err);
		snprintf(msg, n, "%s", j->err);
		strip_trailing_nl(msg);
		log_error("reload rejected; the running config (generation %u) stays in force",
			  d->edge.generation);
		audit_reload(msg, false);
		/* status shows the first problem; the answer (@msg) carries them all. */
		snprintf(first, sizeof(first), "%.*s", (int)strcspn(msg, "\n"), msg);
		edge_note_failure(&d->edge, first);
		return j->ret;
	}
	if (j->fail == FAIL_STAGE) {
		snprintf(msg, n, "cannot apply the config: %s", j->err);
		log_error("%s", msg);
		edge_note_failure(&d->edge, "cannot program the maps");
		return j->ret;
	}
	log_config_warnings(nc);
	if (nc->has_edge != d->cfg.has_edge)
		log_warn("adding or removing the edge section takes effect at the next start");
	if (nc->gw.present != d->cfg.gw.present)
		log_warn("adding or removing the gateway section takes effect at the next start");
	ret = d->cfg.has_edge && nc->has_edge ? edge_apply(&d->edge, nc, &j->staged) : 0;
	if (ret) {
		snprintf(msg, n, "cannot apply the config: %s", strerror(-ret));
		log_error("%s", msg);
		return ret;
	}
	if (j->gp) {
		gateway_apply(d->gw, nc, j->gp);
		j->gp = NULL;
	}
	if (strcmp(nc->redis.address, d->cfg.redis.address) ||
	    strcmp(nc->redis.user, d->cfg.redis.user) ||
	    strcmp(nc->redis.password, d->cfg.redis.password) ||
	    nc->redis.timeout_ms != d->cfg.redis.timeout_ms ||
	    nc->redis.breaker_failures != d->cfg.redis.breaker_failures ||
	    nc->redis.breaker_open_ms != d->cfg.redis.breaker_open_ms ||
	    strcmp(nc->redis.key_prefix, d->cfg.redis.key_prefix) ||
	    nc->cluster.nodes != d->cfg.cluster.nodes)
		log_warn("redis.* and cluster.nodes changes take effect at the next start");
	if (strcmp(nc->metrics_listen, d->cfg.metrics_listen))
		log_warn("daemon.metrics_listen changes take effect at the next start");
	if (strcmp(nc->ctl_socket, d->cfg.ctl_socket))
		log_warn("daemon.control_socket changes take effect at the next start");
	if (nc->state_entries != d->cfg.state_entries)
		log_warn("edge.state_entries changes take effect at the next start (the state "
			 "table is recreated then, losing bucket state)");
	d->cfg = *nc;
	if (d->lease)
		lease_apply(d->lease, &d->cfg);
	if (d->stream)
		stream_apply(d->stream, &d->cfg);
	if (!d->log_override)
		log_set_level((enum log_level)d->cfg.log_level);
	if (!d->log_format_override)
		log_set_json(d->cfg.log_json);
	{
		char aerr[PATH_MAX + 64];

		if (audit_configure(&d->cfg, aerr, sizeof(aerr)))
			log_error("%s; the audit log keeps its previous output", aerr);
	}
	snprintf(msg, n, "reloaded %s (generation %u, %u ASN rows%s)", d->config_path,
		 d->edge.generation, d->edge.asn_entries,
		 d->cfg.n_warnings ? "; with warnings, logged" : "");
	log_info("%s", msg);
	audit_reload(msg, true);
	return 0;
}

/* On the loop: an ASN load the worker built, flipped in (or refused). */
static int asn_apply(struct daemon *d, struct job *j, char *msg, size_t n)
{
	if (j->fail == FAIL_LOAD) {
		log_error("asn load rejected; the running table stays:\n%s", j->err);
		snprintf(msg, n, "%s", j->err);
		return j->ret;
	}
	if (j->fail != FAIL_NONE || edge_flip_asn(&d->edge, &j->staged, j->path)) {
		if (j->fail != FAIL_NONE)
			log_error("asn load of %s: %s", j->path, j->err);
		snprintf(msg, n, "cannot install the table");
		return -EIO;
	}
	log_info("ASN table %s installed (%zu rows; the IPv6 table: %u nodes of %u, %u /48s with "
		 "longer rows left to the trie%s)", j->path, j->rows, j->staged.v6.nodes,
		 SL_V6_NODES, j->staged.v6.trie_48s,
		 j->staged.v6.overflow ? ", and subtrees for want of nodes (SL_V6_NODES)" : "");
	snprintf(msg, n, "installed %zu rows from %s", j->rows, j->path);
	return 0;
}

static void jobs_kick(struct daemon *d);

/* On the worker: free the trie of the slot not in force (the old table, or a staged one
 * that was not applied): each change to the outer map waits out an RCU grace period. */
static void job_drop(void *arg)
{
	struct job *j = arg;

	sl_maps_drop_idle_asn(&j->maps);
}

static void job_dropped(void *arg)
{
	struct job *j = arg;
	struct daemon *d = j->d;

	d->job = NULL;
	job_free(j, "");
	jobs_kick(d);
}

static void job_built(void *arg)
{
	struct job *j = arg;
	struct daemon *d = j->d;
	char msg[4096];
	int ret;

	ret = j->kind == JOB_RELOAD ? reload_apply(d, j, msg, sizeof(msg)) :
	      asn_apply(d, j, msg, sizeof(msg));
	if (j->kind == JOB_RELOAD) {
		/* Every reload asked ends here, applied or refused (several asks joined in one
		 * job are one reload). */
		d->md.last_ok = !ret;
		if (ret) {
			d->md.reloads_failed++;
			d->md.last_failed_unix = (uint64_t)time(NULL);
		} else {
			d->md.reloads_ok++;
			d->md.last_ok_unix = (uint64_t)time(NULL);
		}
	}
	log_debug("%s of %s: built in %llu ms, applied in %llu ms",
		  j->kind == JOB_RELOAD ? "reload" : "asn load", j->path,
		  (unsigned long long)((j->built_ns - j->start_ns) / 1000000),
		  (unsigned long long)((mono_ns() - j->built_ns) / 1000000));
	job_answer(j, !ret, msg);
	if (j->kind == JOB_RELOAD)
		sl_notify("READY=1\nSTATUS=%s", ret ? "the last reload failed; the running config "
			  "stays (see the log)" : "running (reloaded)");
	if (j->stage_tried && !worker_post(d->worker, job_drop, job_dropped, j))
		return;
	job_dropped(j);
}

/* Start the next job if the worker is free. */
static void jobs_kick(struct daemon *d)
{
	struct job *j = d->queue;

	if (!j || d->job)
		return;
	d->queue = j->next;
	if (!d->queue)
		d->queue_tail = NULL;
	j->next = NULL;
	if (j->kind == JOB_ASN)
		d->queued_asn--;
	/* What it reads of the running daemon, as of now: every job before it is applied. */
	j->stage = d->cfg.has_edge && d->edge.skel;
	j->maps = d->edge.maps;
	j->maps.owned = 0;
	j->want_gw = d->gw != NULL;
	if (j->kind == JOB_ASN) {
		j->cfg = malloc(sizeof(*j->cfg));
		if (!j->cfg) {
			job_free(j, "out of memory; nothing changed");
			jobs_kick(d);
			return;
		}
		*j->cfg = d->cfg;
	} else if (j->asked > 1) {
		log_info("reloading %s: one reload for the %d requests made while the last one ran",
			 j->path, j->asked);
	}
	j->start_ns = mono_ns();
	d->job = j;
	if (j->kind == JOB_RELOAD)
		sl_notify("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading %s",
			  (unsigned long long)(j->start_ns / 1000), j->path);
	if (worker_post(d->worker, j->kind == JOB_RELOAD ? reload_build : asn_build, job_built,
			j)) {
		/* Cannot happen (the worker is free whenever d->job is NULL). */
		log_error("the control worker is busy: %s dropped", j->path);
		d->job = NULL;
		job_free(j, "the control worker is busy; nothing changed");
	}
}

static int job_wait(struct job *j, struct ctl_req *req)
{
	struct waiter *w;

	j->asked++;
	if (!req)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->req = req;
	w->next = j->waiters;
	j->waiters = w;
	ctl_defer(req);
	return 0;
}

static void job_enqueue(struct daemon *d, struct job *j)
{
	if (d->queue_tail)
		d->queue_tail->next = j;
	else
		d->queue = j;
	d->queue_tail = j;
}

/* A reload, for a SIGHUP (@req NULL) or a control request (answered when it is applied).
 * One asked while a reload waits at the end of the queue joins it: that one has not read
 * the file yet, so it reads what this asker wrote. Returns 0, or -ENOMEM (then @req is
 * not deferred and the caller answers it). */
static int queue_reload(struct daemon *d, struct ctl_req *req, const char *why)
{
	struct job *j = d->queue_tail;

	if (j && j->kind == JOB_RELOAD) {
		log_debug("%s: joins the reload of %s already queued", why, d->config_path);
		return job_wait(j, req);
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->d = d;
	j->kind = JOB_RELOAD;
	snprintf(j->path, sizeof(j->path), "%s", d->config_path);
	if (job_wait(j, req)) {
		free(j);
		return -ENOMEM;
	}
	job_enqueue(d, j);
	if (d->job)
		log_info("%s: reloading %s once the %s in progress is done", why, d->config_path,
			 d->job->kind == JOB_RELOAD ? "reload" : "ASN load");
	else
		log_info("%s: reloading %s", why, d->config_path);
	jobs_kick(d);
	return 0;
}

/* An ASN load of @path, answered on @req when it is applied. Returns 0, -EBUSY (too many
 * queued) or -ENOMEM; on error @req is not deferred. */
static int queue_asn(struct daemon *d, const char *path, struct ctl_req *req)
{
	struct job *j;

	if (d->queued_asn >= MAX_QUEUED_ASN)
		return -EBUSY;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->d = d;
	j->kind = JOB_ASN;
	snprintf(j->path, sizeof(j->path), "%s", path);
	if (job_wait(j, req)) {
		free(j);
		return -ENOMEM;
	}
	job_enqueue(d, j);
	d->queued_asn++;
	jobs_kick(d);
	return 0;
}

/* At exit, after the loop: wait for the job on the worker (a build runs to its end: seconds
 * at most), answer everyone still waiting, and leave no staged table in the idle slot. */
static void jobs_stop(struct daemon *d)
{
	static const char stopped[] = "sluiced stopped before it was done; nothing changed";
	struct job *j, *next;

	worker_free(d->worker); /* what it returns, if anything, is d->job */
	d->worker = NULL;
	if (d->job) {
		if (d->job->stage_tried)
			sl_maps_drop_idle_asn(&d->job->maps);
		job_free(d->job, stopped);
		d->job = NULL;
	}
	for (j = d->queue; j; j = next) {
		next = j->next;
		job_free(j, stopped);
	}
	d->queue = d->queue_tail = NULL;
	d->queued_asn = 0;
}

/* Leave the event loop after @delay_ms, long enough for a pending answer to be written. */
static void stop(struct daemon *d, bool handover, int delay_ms)
{
	struct timeval tv = { .tv_sec = 0, .tv_usec = delay_ms * 1000 };

	d->handover = handover;
	d->stopping = true;
	event_base_loopexit(d->base, delay_ms ? &tv : NULL);
}

/* The gateway's GET /readyz asks this (and the operator's listener): NULL when this node
 * should get traffic, else why not. */
static const char *daemon_ready(void *arg)
{
	struct daemon *d = arg;
	uint64_t now = mono_ns();

	if (d->stopping || d->draining)
		return "stopping";
	if (d->cfg.has_edge && d->edge.skel) {
		if (!d->ready_checked_ns || now - d->ready_checked_ns >= 1000000000ull) {
			bool was = d->ready_bad;

			d->ready_checked_ns = now;
			d->ready_bad = edge_check_attached(&d->edge, d->ready_why,
							   sizeof(d->ready_why)) != 0;
			/* The reason is for the operator, here: a client is told the status. */
			if (d->ready_bad && !was)
				log_warn("not ready (GET /readyz answers 503): %s", d->ready_why);
			else if (!d->ready_bad && was)
				log_info("ready again (GET /readyz answers 200)");
		}
		if (d->ready_bad)
			return d->ready_why;
	}
	return NULL;
}

static void on_drain_tick(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	uint64_t now = mono_ns();

	(void)fd;
	(void)what;
	if (gateway_drained(d->gw)) {
		log_info("drained in %llu ms: every request answered",
			 (unsigned long long)((now - d->drain_start_ns) / 1000000));
		stop(d, d->drain_handover, 0);
	} else if (now >= d->drain_until_ns) {
		log_warn("drain: gateway.drain_ms (%u) is up; what is still outstanding gets 503 "
			 "with Retry-After", d->cfg.gw.drain_ms);
		stop(d, d->drain_handover, 0);
	}
}

/*
 * SIGTERM, SIGINT or SIGQUIT. With a gateway and gateway.drain_ms, drain first: stop
 * accepting, finish what is queued and in service, then stop (a bound, so a stuck request
 * cannot hold a restart). A second signal stops at once. The edge keeps deciding all along.
 */
static void begin_stop(struct daemon *d, bool handover)
{
	struct timeval tick = { .tv_sec = 0, .tv_usec = 20000 };

	if (d->stopping)
		return;
	if (d->draining) {
		log_info("a second signal: stopping now, without waiting for the drain");
		stop(d, handover, 0);
		return;
	}
	sl_notify("STOPPING=1\nSTATUS=%s", d->gw && d->cfg.gw.drain_ms ? "draining" : "stopping");
	if (!d->gw || !d->cfg.gw.drain_ms) {
		stop(d, handover, 0);
		return;
	}
	d->drain_ev = event_new(d->base, -1, EV_PERSIST, on_drain_tick, d);
	if (!d->drain_ev || event_add(d->drain_ev, &tick)) {
		log_error("cannot start the drain's timer: stopping now");
		stop(d, handover, 0);
		return;
	}
	d->draining = true;
	d->drain_handover = handover;
	d->drain_start_ns = mono_ns();
	d->drain_until_ns = d->drain_start_ns + (uint64_t)d->cfg.gw.drain_ms * 1000000ull;
	gateway_drain(d->gw);
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	sl_notify("WATCHDOG=1");
}

static void on_stream_action(void *arg, const struct stream_action *a)
{
	struct daemon *d = arg;

	if (d->gw)
		gateway_stream_action(d->gw, a);
}

static void render_metrics(void *arg, struct evbuffer *out)
{
	struct daemon *d = arg;

	d->md.node = d->cfg.cluster.node;
	d->md.generation = d->cfg.has_edge && d->edge.skel ? d->edge.generation : 0;
	metrics_daemon(out, &d->md);
	if (d->cfg.has_edge && d->edge.skel) {
		metrics_edge(out, &d->edge.maps, &d->cfg);
		metrics_leases(out, &d->edge.maps, &d->cfg);
		metrics_tables(out, d->tables, &d->edge.maps);
	}
	metrics_store(out, d->store, &d->cfg);
	if (d->gw)
		gateway_metrics(d->gw, out);
	if (d->gw)
		gw_tls_metrics(d->gw, out); /* sluice_gateway_tls_*, with gateway.tls only */
	if (d->stream)
		stream_metrics(d->stream, out);
	audit_metrics(out);
}

/* The counter store for sluicectl status: backend, breaker, what fell back, each counter's
 * fail mode. */
static void store_report(struct daemon *d, struct evbuffer *out, bool as_json)
{
	struct sl_store_stats st;
	char servers[4096];
	bool degraded;
	int i;

	sl_store_get_stats(d->store, &st);
	/* What answers a check right now: the store, or each counter's fallback. */
	degraded = st.redis && (st.breaker != SL_BREAKER_CLOSED || !st.connected);
	if (!as_json) {
		evbuffer_add_printf(out, "ok %s%s%s", st.redis ? "redis " : "in-process",
				    d->cfg.redis.address, !st.redis ? "" : st.connected ?
				    ", connected" : ", NOT CONNECTED");
		if (st.redis)
			evbuffer_add_printf(out, ", breaker %s, timeout %u ms",
					    sl_breaker_name(st.breaker), d->cfg.redis.timeout_ms);
		evbuffer_add_printf(out, "\n  %llu checks: %llu exact, %llu timed out, %llu "
				    "errors, %llu short-circuited by the breaker\n"
				    "  fallbacks: %llu fail-open (local limit / %u), %llu fail-closed "
				    "(static budget); %llu refused for the live-key cap\n"
				    "  in-process tables: %llu keys, %llu evicted at max_keys, "
				    "%llu new keys started spent (table full)\n"
				    "  journal: %llu keys of charges Redis has not had yet, %llu "
				    "dropped (full)\n",
				    (unsigned long long)st.calls, (unsigned long long)st.exact,
				    (unsigned long long)st.timeouts, (unsigned long long)st.errors,
				    (unsigned long long)st.short_circuits,
				    (unsigned long long)st.fallback_local, d->cfg.cluster.nodes,
				    (unsigned long long)st.fallback_static,
				    (unsigned long long)st.keys_capped,
				    (unsigned long long)st.local_keys,
				    (unsigned long long)st.local_evictions,
				    (unsigned long long)st.local_table_full,
				    (unsigned long long)st.journal,
				    (unsigned long long)st.journal_dropped);
		for (i = 0; i < SL_CTR_N; i++) {
			const struct sl_counter_cfg *cc = &d->cfg.counters[i];

			if (!cc->enabled) {
				evbuffer_add_printf(out, "  %-16s off\n", sl_counter_name(i));
				continue;
			}
			evbuffer_add_printf(out, "  %-16s %g/s burst %g, fails %s%s", sl_counter_name(i),
					    cc->rate, cc->burst, cc->fail ? "closed" : "open",
					    degraded ? " (NOW IN FORCE: the fallback)" : "");
			if (cc->fail)
				evbuffer_add_printf(out, " to %g/s burst %g on this node\n",
						    cc->static_rate, cc->static_burst);
			else
				evbuffer_add_printf(out, " to %g/s on this node\n",
						    cc->rate / d->cfg.cluster.nodes);
		}
		sl_store_describe_nodes(d->store, servers, sizeof(servers), false);
		evbuffer_add_printf(out, "%s", servers);
		return;
	}
	evbuffer_add_printf(out, "ok {\"backend\":\"%s\",\"address\":\"%s\","
			    "\"connected\":%s,\"breaker\":\"%s\",\"timeout_ms\":%u,"
			    "\"nodes\":%u,\"calls\":%llu,\"exact\":%llu,"
			    "\"timeouts\":%llu,\"errors\":%llu,\"fallback_local\":%llu,"
			    "\"fallback_static\":%llu,\"short_circuits\":%llu,"
			    "\"keys_capped\":%llu,\"local_keys\":%llu,\"local_evictions\":%llu,"
			    "\"local_table_full\":%llu,\"journal\":%llu,\"journal_dropped\":%llu,"
			    "\"counters\":{",
			    st.redis ? "redis" : "in-process", d->cfg.redis.address,
			    st.connected ? "true" : "false", sl_breaker_name(st.breaker),
			    d->cfg.redis.timeout_ms, d->cfg.cluster.nodes,
			    (unsigned long long)st.calls, (unsigned long long)st.exact,
			    (unsigned long long)st.timeouts, (unsigned long long)st.errors,
			    (unsigned long long)st.fallback_local,
			    (unsigned long long)st.fallback_static,
			    (unsigned long long)st.short_circuits,
			    (unsigned long long)st.keys_capped,
			    (unsigned long long)st.local_keys,
			    (unsigned long long)st.local_evictions,
			    (unsigned long long)st.local_table_full,
			    (unsigned long long)st.journal,
			    (unsigned long long)st.journal_dropped);
	for (i = 0; i < SL_CTR_N; i++) {
		const struct sl_counter_cfg *cc = &d->cfg.counters[i];

		evbuffer_add_printf(out, "%s\"%s\":{\"enabled\":%s,\"rate\":%g,"
				    "\"burst\":%g,\"fail\":\"%s\",\"in_force\":\"%s\"",
				    i ? "," : "", sl_counter_name(i),
				    cc->enabled ? "true" : "false", cc->rate, cc->burst,
				    cc->fail ? "closed" : "open",
				    !degraded ? "exact" : cc->fail ? "static" : "local");
		if (cc->fail)
			evbuffer_add_printf(out, ",\"static_rate\":%g,\"static_burst\":%g",
					    cc->static_rate, cc->static_burst);
		else
			evbuffer_add_printf(out, ",\"fallback_rate\":%g",
					    cc->rate / d->cfg.cluster.nodes);
		evbuffer_add_printf(out, "}");
	}
	/* Each Redis server (a cluster's masters): its own connection and breaker. */
	sl_store_describe_nodes(d->store, servers, sizeof(servers), true);
	evbuffer_add_printf(out, "},\"servers\":%s}\n", servers);
}

/* `limits` on an edge without a gateway: the edge's part of the document alone. */
static void edge_limits(const struct sl_config *c, struct evbuffer *out, bool json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		evbuffer_add_printf(out, "error out of memory\n");
		return;
	}
	if (json) {
		struct json j;

		json_init(&j, f);
		json_obj_begin(&j, NULL);
		sl_edge_limits_json(&j, c);
		json_obj_end(&j);
		json_end(&j);
	} else {
		sl_edge_limits_text(f, c);
	}
	fclose(f);
	evbuffer_add_printf(out, "ok\n");
	evbuffer_add(out, buf, len);
	free(buf);
}


/* "clear ADDR CLASS OPERATOR KEYHEX[,KEYHEX] REASON...": sluicectl clear prefix. Each key's
 * bucket gets TAT 0 (a full bucket is TAT <= now: 0 is full whatever the clocks say) in its
 * own way of the bucket table, which remembers spent keys nowhere else; one warn line is the
 * audit trail. */
static void ctl_clear(struct daemon *d, const char *line, struct evbuffer *out)
{
	char addr[64], cls[40], op[64], keys[64], prev[256] = "", *tok, *save = NULL;
	const struct sl_maps *m = &d->edge.maps;
	struct sl_settings set;
	const char *reason;
	size_t plen = 0;
	int n = 0, off = 0, nk = 0;

	if (sscanf(line, "clear %63s %39s %63s %63s %n", addr, cls, op, keys, &off) != 4 || !off ||
	    !line[off]) {
		evbuffer_add_printf(out, "error usage: clear ADDR CLASS OPERATOR KEY[,KEY] REASON\n");
		return;
	}
	reason = line + off;
	if (sl_maps_read_settings(m, &set)) {
		evbuffer_add_printf(out, "error cannot read settings: %s\n", strerror(errno));
		return;
	}
	for (tok = strtok_r(keys, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct sl_bkey k;
		struct sl_bucket b, nb = { 0 };
		struct sl_prefix p;
		unsigned char *kb = (unsigned char *)&k;
		char kbuf[64];
		size_t i;
		int had, ret;
		unsigned int v;
		__u64 now = sl_now_ns();

		if (strlen(tok) != 2 * sizeof(k) || nk >= 2) {
			evbuffer_add_printf(out, "error bad key '%.40s'\n", tok);
			return;
		}
		for (i = 0; i < sizeof(k); i++) {
			if (sscanf(tok + 2 * i, "%2x", &v) != 1) {
				evbuffer_add_printf(out, "error bad key '%.40s'\n", tok);
				return;
			}
			kb[i] = (unsigned char)v;
		}
		nk++;
		had = sl_maps_lookup_bucket(m, &k, &b) == 0;
		/* A full bucket in the key's own way (or one it may take): the table forgets
		 * nothing else, so there is no other memory of its debt to clear. */
		ret = sl_maps_write_bucket(m, &k, &nb, 0);
		if (ret == -ENOSPC) {
			evbuffer_add_printf(out, "error every way of the key's bucket set holds a spent "
					    "key: it is charged to the set's shared spill bucket, "
					    "which cannot be cleared for one key\n");
			return;
		}
		if (ret) {
			evbuffer_add_printf(out, "error cannot write the bucket: %s\n", strerror(-ret));
			return;
		}
		memset(&p, 0, sizeof(p));
		p.family = k.family;
		p.plen = k.plen;
		memcpy(p.addr, k.addr, sizeof(k.addr));
		n = snprintf(prev + plen, sizeof(prev) - plen,
			     "%s%s %s (was %s, %.3fs ahead, streak %u)", plen ? "; " : "",
			     k.level == SL_LEVEL_PARENT ? "parent" : "key",
			     sl_prefix_str(&p, kbuf, sizeof(kbuf)), had ? "live" : "no state",
			     had && b.tat > now ? (double)(b.tat - now) / 1e9 : 0.0,
			     had ? b.streak : 0);
		if (n > 0 && (size_t)n < sizeof(prev) - plen)
			plen += (size_t)n;
	}
	log_warn("clear prefix %s (class %s) by %s: %s; reason: %s", addr, cls, op, prev, reason);
	{
		struct audit_rec a = { .event = AUDIT_OPERATOR, .source = "sluicectl",
				       .prefix = addr, .reason = reason, .decision = "clear_prefix",
				       .operator_ = op, .detail = prev, .must = true };

		audit_emit(&a);
	}
	evbuffer_add_printf(out, "ok %s\n", prev);
}

/* `config [json]`: the config in force, defaults included, secrets redacted. */
static void config_report(struct daemon *d, struct evbuffer *out, bool json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		evbuffer_add_printf(out, "error out of memory\n");
		return;
	}
	sl_config_show(&d->cfg, f, json);
	fclose(f);
	evbuffer_add_printf(out, "ok generation %u\n", d->edge.generation);
	evbuffer_add(out, buf, len);
	free(buf);
}

/* The top shed prefixes, with what the ring holds now counted. */
static void topk_report_now(struct daemon *d, struct evbuffer *out, bool json, int n)
{
	evhub_drain(d->evhub);
	topk_report(d->topk, out, json, n, d->cfg.event_sample);
}

static void on_ctl(void *arg, const char *line, struct evbuffer *out, struct ctl_req *req)
{
	struct daemon *d = arg;

	if (!strcmp(line, "ping")) {
		evbuffer_add_printf(out, "ok pid %d generation %u\n", getpid(), d->edge.generation);
	} else if (!strcmp(line, "reload")) {
		/* Answered when the worker's result is applied (or refused). */
		if (d->stopping)
			evbuffer_add_printf(out, "error sluiced is stopping\n");
		else if (queue_reload(d, req, "reload requested"))
			evbuffer_add_printf(out, "error out of memory\n");
	} else if (!d->cfg.has_edge && (!strncmp(line, "asn-load ", 9) || !strcmp(line, "detach"))) {
		evbuffer_add_printf(out, "error this sluiced runs no edge (no 'edge' section)\n");
	} else if (!strncmp(line, "asn-load ", 9)) {
		int ret = d->stopping ? -ESHUTDOWN : queue_asn(d, line + 9, req);

		if (ret == -EBUSY)
			evbuffer_add_printf(out, "error %d ASN loads are already waiting; try again "
					    "once they are done\n", MAX_QUEUED_ASN);
		else if (ret == -ESHUTDOWN)
			evbuffer_add_printf(out, "error sluiced is stopping\n");
		else if (ret)
			evbuffer_add_printf(out, "error out of memory\n");
	} else if (!strcmp(line, "limits") || !strcmp(line, "limits json")) {
		if (d->gw)
			gateway_limits(d->gw, out, !strcmp(line, "limits json"));
		else if (d->cfg.has_edge)
			edge_limits(&d->cfg, out, !strcmp(line, "limits json"));
		else
			evbuffer_add_printf(out, "error this sluiced runs neither an edge nor a "
					    "gateway\n");
	} else if (!strcmp(line, "tenants") || !strcmp(line, "tenants text")) {
		if (!d->gw)
			evbuffer_add_printf(out, "error this sluiced runs no gateway (no 'gateway' "
					    "section)\n");
		else
			gateway_tenants(d->gw, out, !strcmp(line, "tenants"));
	} else if (!strncmp(line, "wouldblock", 10) || !strncmp(line, "distribution", 12) ||
		   !strcmp(line, "stream")) {
		if (!d->stream) {
			evbuffer_add_printf(out, "error the stream job is not running (it needs a "
					    "'gateway' section and stream.enabled)\n");
		} else if (!strncmp(line, "wouldblock", 10)) {
			double since = 0;
			char fmt[8] = "";

			sscanf(line + 10, " %lf %7s", &since, fmt);
			stream_wouldblock(d->stream, out, since, !strcmp(fmt, "json"));
		} else if (!strncmp(line, "distribution", 12)) {
			stream_distribution(d->stream, out, !strcmp(line, "distribution json"));
		} else {
			stream_stats_json(d->stream, out);
		}
	} else if (!strncmp(line, "topshed", 7) && (!line[7] || line[7] == ' ')) {
		char fmt[8] = "";
		int n = 0;

		if (!d->topk)
			evbuffer_add_printf(out, "error this sluiced runs no edge (no 'edge' section)\n");
		else if (sscanf(line + 7, " %7s %d", fmt, &n) >= 1 && strcmp(fmt, "json") &&
			 strcmp(fmt, "text"))
			evbuffer_add_printf(out, "error usage: topshed [json|text] [N]\n");
		else
			topk_report_now(d, out, !strcmp(fmt, "json"), n);
	} else if (!strcmp(line, "config") || !strcmp(line, "config json")) {
		config_report(d, out, !strcmp(line, "config json"));
	} else if (!strcmp(line, "events-stats")) {
		struct evhub_stats es;

		evhub_get_stats(d->evhub, &es);
		evbuffer_add_printf(out, "ok {\"read\":%llu,\"readers\":%u,\"dropped\":%llu}\n",
				    (unsigned long long)es.events, es.readers,
				    (unsigned long long)es.dropped);
	} else if (!strcmp(line, "events") || !strncmp(line, "events ", 7)) {
		evhub_subscribe(d->evhub, line + 6, out, req, d->cfg.event_sample);
	} else if (!strcmp(line, "store") || !strcmp(line, "store text")) {
		store_report(d, out, !strcmp(line, "store"));
	} else if (!strncmp(line, "clear-account ", 14)) {
		if (!d->gw)
			evbuffer_add_printf(out, "error this sluiced runs no gateway (no 'gateway' "
					    "section): its sign-in counters are another node's\n");
		else
			clear_account(d->gw, &d->stopping, line, out, req);
	} else if (!strncmp(line, "clear ", 6)) {
		if (!d->cfg.has_edge)
			evbuffer_add_printf(out, "error this sluiced runs no edge (no 'edge' section)\n");
		else
			ctl_clear(d, line, out);
	} else if (!strcmp(line, "detach")) {
		log_info("detach requested over the control socket");
		evbuffer_add_printf(out, "ok detaching from %d interface(s); sluiced exits\n",
				    d->edge.n_ifaces);
		stop(d, false, 200);
	} else {
		evbuffer_add_printf(out, "error unknown command '%.64s'\n", line);
	}
}

/* The event hub's tap: every sampled edge event to the top shed prefixes and the audit log
 * (which therefore has the edge's refusals at edge.event_sample, then its own rate). */
static void on_edge_event(void *arg, const struct sl_event *e)
{
	struct daemon *d = arg;

	topk_feed(d->topk, e);
	audit_edge_event(e, &d->cfg);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;

	(void)fd;
	(void)what;
	if (d->cfg.has_edge)
		edge_tick(&d->edge, &d->cfg);
	audit_tick();
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;
	int ret;

	(void)what;
	switch (sig) {
	case SIGHUP:
		/* logrotate's postrotate: the audit file is reopened now, whether or not the
		 * reload that follows applies. */
		if ((ret = audit_reopen()))
			log_error("SIGHUP: cannot reopen the audit log: %s; it keeps the old file",
				  strerror(-ret));
		if (!d->stopping && queue_reload(d, NULL, "SIGHUP"))
			log_error("SIGHUP: out of memory; %s not reloaded", d->config_path);
		break;
	case SIGQUIT:
		log_info("SIGQUIT: exiting, leaving the datapath attached");
		begin_stop(d, true);
		break;
	default:
		log_info("%s: detaching and exiting", strsignal((int)sig));
		begin_stop(d, false);
		break;
	}
}

static int daemonize(void)
{
	pid_t pid = fork();
	int fd;

	if (pid < 0)
		return -errno;
	if (pid > 0)
		_exit(0);
	if (setsid() < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0)
		_exit(0);
	if (chdir("/"))
		return -errno;
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	log_use_syslog("sluiced");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "log-format", required_argument, NULL, 'F' },
		{ "check-config", no_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	static struct daemon d;
	struct event *sigs[4] = { 0 };
	static const int signums[4] = { SIGHUP, SIGTERM, SIGINT, SIGQUIT };
	struct sl_asn_table asn;
	sigset_t startup_sigs;
	bool foreground = false, check = false;
	char msg[1024];
	int opt, i, ret = 1;

	snprintf(d.config_path, sizeof(d.config_path), "%s", SL_DEFAULT_CONFIG);
	d.log_override = 0;
	while ((opt = getopt_long(argc, argv, "c:fl:F:tVh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			snprintf(d.config_path, sizeof(d.config_path), "%s", optarg);
			break;
		case 'f':
			foreground = true;
			break;
		case 'l':
			if (parse_level(optarg) < 0) {
				fprintf(stderr, "sluiced: unknown log level '%s'\n", optarg);
				return 2;
			}
			log_set_level((enum log_level)parse_level(optarg));
			d.log_override = 1;
			break;
		case 'F':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "sluiced: --log-format: '%s' is neither text nor "
					"json\n", optarg);
				return 2;
			}
			log_set_json(!strcmp(optarg, "json"));
			d.log_format_override = 1;
			break;
		case 't':
			check = true;
			break;
		case 'V':
			printf("sluiced %s\n", SLUICE_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!getcwd(d.base_dir, sizeof(d.base_dir)))
		snprintf(d.base_dir, sizeof(d.base_dir), "/");
	/* Relative config paths must survive the chdir("/") of daemonizing. */
	if (d.config_path[0] != '/') {
		char abs[PATH_MAX + 2];

		snprintf(abs, sizeof(abs), "%s/%s", d.base_dir, d.config_path);
		snprintf(d.config_path, sizeof(d.config_path), "%s", abs);
	}
	if (check)
		return check_config(&d);
	/* Until the event loop's handlers are in place (below), a HUP, TERM, INT or QUIT
	 * would take its default action mid-start (a HUP killed the daemon; a systemctl
	 * restart's QUIT was lost). Block them: they wait, pending, and are handled once the
	 * loop can. Threads started meanwhile (the hash pool, the stream job) inherit the
	 * block, so the signals always reach the loop's thread. */
	sigemptyset(&startup_sigs);
	for (i = 0; i < 4; i++)
		sigaddset(&startup_sigs, signums[i]);
	sigprocmask(SIG_BLOCK, &startup_sigs, NULL);
	log_hook_libbpf();
	if (load_all(&d, &d.cfg, &asn, msg, sizeof(msg)))
		return 1;
	if (!d.log_override)
		log_set_level((enum log_level)d.cfg.log_level);
	if (!d.log_format_override)
		log_set_json(d.cfg.log_json);
	if (!foreground && daemonize()) {
		log_error("cannot daemonize: %s", strerror(errno));
		goto out_asn;
	}
	/* An audit log that was asked for and cannot be written is a reason not to start. */
	if (audit_configure(&d.cfg, msg, sizeof(msg))) {
		log_error("%s", msg);
		goto out_asn;
	}
	signal(SIGPIPE, SIG_IGN);

	{
		/* Redis timeouts are a few milliseconds: they want the precise timer, and only
		 * they do (every other timeout is 10 ms or more, and the floor timers wait out
		 * what a coarse clock fires early, gw_http.c). On Linux the precise timer is a
		 * timerfd, re-armed with a timerfd_settime before every epoll_wait: two system
		 * calls a proxied request (docs/performance.md, "The listener's side"). Without
		 * Redis the loop runs on the coarse monotonic clock and epoll_wait's own
		 * millisecond timeout. redis.address changes take effect at the next start,
		 * as this choice does. The epoll
		 * change list applies each descriptor's event changes once per loop iteration:
		 * evhttp turns a connection's read event off after each request's head and on
		 * again for the next, and most such pairs fall within one iteration and cost no
		 * epoll_ctl (docs/performance.md, "Cutting the proxy's cost"). Its one hazard,
		 * descriptors dup()ed behind libevent's back, does not arise: sluiced dups only
		 * /dev/null onto 0-2, before the loop exists. */
		struct event_config *ec = event_config_new();

		if (ec)
			event_config_set_flag(ec, (d.cfg.redis.address[0] ?
						   EVENT_BASE_FLAG_PRECISE_TIMER : 0) |
						  EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
		d.base = ec ? event_base_new_with_config(ec) : NULL;
		if (ec)
			event_config_free(ec);
	}
	if (!d.base) {
		log_error("cannot create the event loop");
		goto out_asn;
	}
	/* The socket first: it is how a second daemon learns it must not take over. */
	d.ctl = ctl_listen(d.base, d.cfg.ctl_socket, on_ctl, &d);
	if (!d.ctl) {
		log_error("control socket %s: %s", d.cfg.ctl_socket, strerror(errno));
		goto out_base;
	}
	ret = d.cfg.has_edge ? edge_start(&d.edge, &d.cfg, &asn) : 0;
	sl_asn_free(&asn);
	if (ret) {
		log_error("sluiced could not start the edge datapath");
		ret = 1;
		goto out_ctl;
	}
	ret = 1;
	{
		struct sl_store_opts so = {
			.redis = d.cfg.redis.address[0] ? d.cfg.redis.address : NULL,
			.timeout_ms = d.cfg.redis.timeout_ms,
			.nodes = d.cfg.cluster.nodes,
			.breaker_failures = d.cfg.redis.breaker_failures,
			.breaker_open_ms = d.cfg.redis.breaker_open_ms,
			.prefix = d.cfg.redis.key_prefix,
			.user = d.cfg.redis.user,
			.password = d.cfg.redis.password,
		};

		d.store = sl_store_new(d.base, &so, msg, sizeof(msg));
		if (!d.store) {
			log_error("counter store: %s", msg);
			goto out_edge;
		}
	}
	d.md.version = SLUICE_VERSION;
	d.md.started_unix = d.md.last_ok_unix = (uint64_t)time(NULL);
	d.md.last_ok = true;
	if (d.cfg.metrics_listen[0] && d.cfg.has_edge && d.edge.skel) {
		d.tables = metrics_tables_open(msg, sizeof(msg));
		if (msg[0])
			log_warn("metrics: hash tables' occupancy not shown: %s", msg);
	}
	if (d.cfg.metrics_listen[0]) {
		d.metrics = metrics_listen(d.base, d.cfg.metrics_listen, render_metrics, &d, msg,
					   sizeof(msg));
		if (!d.metrics) {
			log_error("metrics: %s", msg);
			goto out_edge;
		}
		log_info("metrics on http://%s/metrics", d.cfg.metrics_listen);
	}
	if (d.cfg.has_edge) {
		d.lease = lease_new(d.base, d.store, &d.edge);
		if (!d.lease) {
			log_error("cannot start the lease controller");
			goto out_edge;
		}
		lease_apply(d.lease, &d.cfg);
		d.topk = topk_new(d.base, &d.edge.maps);
		if (!d.topk) {
			log_error("cannot allocate the top shed prefixes table");
			goto out_edge;
		}
		d.evhub = evhub_new(d.base, &d.edge.maps);
		if (!d.evhub) {
			log_error("cannot read the edge's event ring: %s", strerror(errno));
			goto out_edge;
		}
		evhub_set_tap(d.evhub, on_edge_event, &d);
	}
	if (d.cfg.gw.present) {
		struct gw_prepared *gp = gateway_prepare(&d.cfg, msg, sizeof(msg));

		if (!gp)
			log_error("%s", msg);
		else
			d.gw = gateway_start(d.base, &d.cfg, gp);
		if (!d.gw) {
			log_error("sluiced could not start the gateway");
			goto out_edge;
		}
		gateway_set_store(d.gw, d.store);
		if (d.cfg.stream.enabled) {
			d.stream = stream_start(d.base, &d.cfg, d.cfg.has_edge ? &d.edge.maps : NULL,
						on_stream_action, &d, msg, sizeof(msg));
			if (!d.stream) {
				log_error("stream job: %s", msg);
				goto out_edge;
			}
			gateway_set_stream(d.gw, d.stream);
		}
	}
	d.worker = worker_new(d.base);
	if (!d.worker) {
		log_error("cannot start the control worker: %s", strerror(errno));
		goto out_edge;
	}
	for (i = 0; i < 4; i++) {
		sigs[i] = evsignal_new(d.base, signums[i], on_signal, &d);
		if (!sigs[i] || evsignal_add(sigs[i], NULL)) {
			log_error("cannot handle signal %d", signums[i]);
			goto out_edge;
		}
	}
	sigprocmask(SIG_UNBLOCK, &startup_sigs, NULL);
	{
		struct timeval one = { .tv_sec = 1 };

		d.tick = event_new(d.base, -1, EV_PERSIST, on_tick, &d);
		if (!d.tick || event_add(d.tick, &one)) {
			log_error("cannot start the timer");
			goto out_edge;
		}
	}
	{
		uint64_t wd = sl_notify_watchdog_usec();
		struct timeval half = { .tv_sec = (time_t)(wd / 2000000),
					.tv_usec = (suseconds_t)(wd / 2 % 1000000) };

		if (wd) {
			d.watchdog = event_new(d.base, -1, EV_PERSIST, on_watchdog, &d);
			if (!d.watchdog || event_add(d.watchdog, &half))
				log_warn("cannot start the watchdog timer: systemd will see none");
			else
				log_info("watchdog: telling systemd every %llu ms",
					 (unsigned long long)(wd / 2000));
		}
	}
	if (d.gw)
		gateway_set_ready(d.gw, daemon_ready, &d);
	log_info("sluiced %s running: config %s, generation %u, %d interface(s), %u ASN rows",
		 SLUICE_VERSION, d.config_path, d.edge.generation, d.edge.n_ifaces,
		 d.edge.asn_entries);
	sl_notify("READY=1\nMAINPID=%d\nSTATUS=running: generation %u, %d interface(s)",
		  (int)getpid(), d.edge.generation, d.edge.n_ifaces);
	event_base_dispatch(d.base);
	ret = 0;
out_edge:
	jobs_stop(&d); /* before the maps and the control socket go */
	if (d.tick)
		event_free(d.tick);
	if (d.drain_ev)
		event_free(d.drain_ev);
	if (d.watchdog)
		event_free(d.watchdog);
	for (i = 0; i < 4; i++)
		if (sigs[i])
			event_free(sigs[i]);
	if (d.gw)
		gateway_set_stream(d.gw, NULL); /* the gateway stops pushing first */
	stream_stop(d.stream);
	d.stream = NULL;
	gateway_stop(d.gw);
	metrics_close(d.metrics);
	metrics_tables_close(d.tables);
	sl_store_free(d.store); /* answers what is in flight, before what it answers to goes */
	lease_free(d.lease);
	evhub_free(d.evhub); /* its streams end before the control socket closes */
	topk_free(d.topk);
	if (d.cfg.has_edge)
		edge_stop(&d.edge, d.handover);
out_ctl:
	ctl_close(d.ctl);
out_base:
	event_base_free(d.base);
	log_info("sluiced stopped");
	audit_close();
	return ret;
out_asn:
	sl_asn_free(&asn);
	return ret;
}
