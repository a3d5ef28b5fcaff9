// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * sluicectl top (see top.h). Each frame is built from one sample of everything, and every
 * rate on it is a delta between two samples divided by the time between them, so the view
 * never depends on the daemon's own smoothing:
 *
 *   - the XDP decisions by reason and by class (passed, shed, would-be shed in monitor
 *     mode; a would-be shed is passed, so PASSED counts it too): the pinned per-CPU
 *     counters (as `stats`);
 *   - the gateway and its tenants: the control command `tenants` (JSON); goodput from the
 *     daemon's /metrics when daemon.metrics_listen is set (the tenants document has no
 *     goodput of its own), else the successful logins stand in for it;
 *   - the top shed prefixes: the control command `topshed json`, which sluiced keeps from the
 *     edge's sampled shed events (user/sluiced/topk.c).
 *
 * A frame fits the terminal's size, or COLUMNS x LINES (see "rendering" below for what is
 * left out first). No curses: a frame is a list of lines written from the top-left corner,
 * each ending with erase-to-end-of-line, on the alternate screen. The terminal is restored on every way out:
 * q, Ctrl-C, SIGTERM, SIGHUP, a lost daemon, and atexit for the rest; Ctrl-Z restores it
 * before stopping and re-enters on SIGCONT.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <libconfig.h>

#include "budget.h"
#include "json.h"
#include "maps.h"
#include "reasons.h"
#include "top.h"

#define TOP_MAX_TENANTS 256
#define TOP_MAX_PREFIXES 50
#define TOP_ANSWER_MAX (16u << 20)
#define TOP_CTL_TIMEOUT_S 3
#define TOP_HIST_MAX 32

/* ---- a small JSON reader ------------------------------------------------------------------
 * The daemon's documents are parsed into a flat token array (jsmn style): each token knows
 * where its subtree ends, so lookups walk siblings without recursion. */

enum jtype { J_OBJ, J_ARR, J_STR, J_PRIM };

struct jtok {
	enum jtype type;
	int start, end; /* text span; strings without their quotes */
	int next;       /* index of the token after this one's subtree */
};

struct jdoc {
	const char *s;
	struct jtok *t;
	int n, cap;
};

static void jws(const char **p)
{
	while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
		(*p)++;
}

static int jnew(struct jdoc *d, enum jtype type, int start)
{
	if (d->n == d->cap) {
		int cap = d->cap ? d->cap * 2 : 256;
		struct jtok *t = realloc(d->t, sizeof(*t) * (size_t)cap);

		if (!t)
			return -1;
		d->t = t;
		d->cap = cap;
	}
	d->t[d->n] = (struct jtok){ .type = type, .start = start, .end = start, .next = 0 };
	return d->n++;
}

/* Parse one value at *@p; returns its token index or -1. */
static int jvalue(struct jdoc *d, const char **p, int depth)
{
	int me;

	jws(p);
	if (depth > 32)
		return -1;
	if (**p == '{' || **p == '[') {
		char close = **p == '{' ? '}' : ']';
		bool obj = close == '}';

		me = jnew(d, obj ? J_OBJ : J_ARR, (int)(*p - d->s));
		if (me < 0)
			return -1;
		(*p)++;
		jws(p);
		if (**p == close) {
			(*p)++;
		} else {
			for (;;) {
				if (obj) {
					jws(p);
					if (**p != '"' || jvalue(d, p, depth + 1) < 0)
						return -1;
					jws(p);
					if (**p != ':')
						return -1;
					(*p)++;
				}
				if (jvalue(d, p, depth + 1) < 0)
					return -1;
				jws(p);
				if (**p == ',') {
					(*p)++;
					continue;
				}
				if (**p != close)
					return -1;
				(*p)++;
				break;
			}
		}
		d->t[me].end = (int)(*p - d->s);
		d->t[me].next = d->n;
		return me;
	}
	if (**p == '"') {
		me = jnew(d, J_STR, (int)(*p - d->s) + 1);
		if (me < 0)
			return -1;
		for ((*p)++; **p && **p != '"'; (*p)++)
			if (**p == '\\' && (*p)[1])
				(*p)++;
		if (**p != '"')
			return -1;
		d->t[me].end = (int)(*p - d->s);
		(*p)++;
		d->t[me].next = d->n;
		return me;
	}
	me = jnew(d, J_PRIM, (int)(*p - d->s));
	if (me < 0)
		return -1;
	while (**p && !strchr(",:]} \t\r\n", **p))
		(*p)++;
	d->t[me].end = (int)(*p - d->s);
	d->t[me].next = d->n;
	return d->t[me].end > d->t[me].start ? me : -1;
}

static int jparse(struct jdoc *d, const char *s)
{
	const char *p = s;

	memset(d, 0, sizeof(*d));
	d->s = s;
	return jvalue(d, &p, 0) == 0 ? 0 : -1;
}

static void jfree(struct jdoc *d)
{
	free(d->t);
	d->t = NULL;
	d->n = d->cap = 0;
}

/* Member @key of object @obj (a path "a.b" walks down); -1 when absent. */
static int jget(const struct jdoc *d, int obj, const char *key)
{
	const char *dot = strchr(key, '.');
	size_t kl = dot ? (size_t)(dot - key) : strlen(key);
	int i;

	if (obj < 0 || obj >= d->n || d->t[obj].type != J_OBJ)
		return -1;
	for (i = obj + 1; i < d->t[obj].next; i = d->t[i + 1].next) {
		const struct jtok *k = &d->t[i];

		if ((size_t)(k->end - k->start) == kl && !memcmp(d->s + k->start, key, kl))
			return dot ? jget(d, i + 1, dot + 1) : i + 1;
	}
	return -1;
}

/* The children of an array or object values, one after another: first, then jnext. */
static int jfirst(const struct jdoc *d, int arr)
{
	if (arr < 0 || d->t[arr].type != J_ARR || d->t[arr].next == arr + 1)
		return -1;
	return arr + 1;
}

static int jnext(const struct jdoc *d, int arr, int cur)
{
	int n = d->t[cur].next;

	return n < d->t[arr].next ? n : -1;
}

static double jnum(const struct jdoc *d, int t, double dflt)
{
	char buf[64];
	int len;

	if (t < 0 || d->t[t].type != J_PRIM)
		return dflt;
	len = d->t[t].end - d->t[t].start;
	if (len <= 0 || len >= (int)sizeof(buf) || d->s[d->t[t].start] == 'n')
		return dflt;
	if (d->s[d->t[t].start] == 't' || d->s[d->t[t].start] == 'f')
		return d->s[d->t[t].start] == 't';
	memcpy(buf, d->s + d->t[t].start, (size_t)len);
	buf[len] = '\0';
	return strtod(buf, NULL);
}

static void jstr(const struct jdoc *d, int t, char *out, size_t n)
{
	const char *s, *e;
	size_t o = 0;

	if (!n)
		return;
	out[0] = '\0';
	if (t < 0 || d->t[t].type != J_STR)
		return;
	for (s = d->s + d->t[t].start, e = d->s + d->t[t].end; s < e && o + 1 < n; s++) {
		if (*s == '\\' && s + 1 < e) {
			s++;
			out[o++] = *s == 'n' ? ' ' : *s == 't' ? ' ' : *s == 'u' ? '?' : *s;
			if (*s == 'u')
				s += (e - s > 4) ? 4 : e - s - 1;
		} else {
			out[o++] = (unsigned char)*s < 0x20 ? ' ' : *s;
		}
	}
	out[o] = '\0';
}

/* ---- talking to sluiced ------------------------------------------------------------------ */

/* Send @cmd on the control socket; the whole answer in a malloc'd string (*@out). Returns 1
 * for "ok", 0 for "error", < 0 (an errno) when no daemon answered. */
static int ctl_fetch(const char *sock, const char *cmd, char **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = TOP_CTL_TIMEOUT_S };
	size_t used = 0, cap = 65536;
	char *buf;
	ssize_t r;
	int fd, e = 0;

	*out = NULL;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) || dprintf(fd, "%s\n", cmd) < 0) {
		e = -errno;
		close(fd);
		return e;
	}
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (used + 1 >= cap) {
			char *nb = cap < TOP_ANSWER_MAX ? realloc(buf, cap * 2) : NULL;

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + used, cap - used - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			e = r < 0 ? -errno : 0;
			break;
		}
		used += (size_t)r;
	}
	close(fd);
	buf[used] = '\0';
	if (!used) {
		free(buf);
		return e ? e : -ECONNRESET; /* a daemon on its way out */
	}
	*out = buf;
	if (!strncmp(buf, "ok", 2))
		return 1;
	return !strncmp(buf, "error", 5) ? 0 : -EPROTO;
}

/* daemon.metrics_listen from the config, "" when unset or unreadable. */
static void metrics_addr(const char *path, char *out, size_t n)
{
	const char *s = NULL;
	config_t cf;

	out[0] = '\0';
	if (!path)
		return;
	config_init(&cf);
	if (config_read_file(&cf, path) == CONFIG_TRUE &&
	    config_lookup_string(&cf, "daemon.metrics_listen", &s) == CONFIG_TRUE && s)
		snprintf(out, n, "%s", s);
	config_destroy(&cf);
}

/* GET /metrics from "ADDR:PORT" / "[ADDR6]:PORT" (a wildcard address means this host);
 * a malloc'd body or NULL. */
static char *metrics_fetch(const char *listen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct timeval tv = { .tv_sec = 1 };
	char host[128], *port, *buf = NULL;
	size_t used = 0, cap = 1 << 20;
	ssize_t r;
	int fd = -1;

	if (listen[0] == '[') {
		snprintf(host, sizeof(host), "%s", listen + 1);
		port = strstr(host, "]:");
		if (!port)
			return NULL;
		*port = '\0';
		port += 2;
	} else {
		snprintf(host, sizeof(host), "%s", listen);
		port = strrchr(host, ':');
		if (!port)
			return NULL;
		*port++ = '\0';
	}
	if (!strcmp(host, "0.0.0.0") || !host[0])
		snprintf(host, sizeof(host), "127.0.0.1");
	else if (!strcmp(host, "::"))
		snprintf(host, sizeof(host), "::1");
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(host, port, &hints, &ai) || !ai)
		return NULL;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) ||
	    dprintf(fd, "GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n", listen) < 0)
		goto out;
	buf = malloc(cap);
	if (!buf)
		goto out;
	while (used + 1 < cap && (r = read(fd, buf + used, cap - used - 1)) > 0)
		used += (size_t)r;
	buf[used] = '\0';
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return buf;
}

/* Value of `NAME{tenant="T"}` in an exposition, or NAN. */
static double prom_tenant(const char *text, const char *name, const char *tenant)
{
	char pat[256];
	const char *p;
	size_t pl;

	snprintf(pat, sizeof(pat), "\n%s{tenant=\"%s\"} ", name, tenant);
	pl = strlen(pat);
	p = strstr(text, pat);
	return p ? strtod(p + pl, NULL) : NAN;
}

/* A Prometheus histogram as scraped: cumulative counts at each bound (seconds). */
struct hist {
	int n;
	double le[TOP_HIST_MAX], cum[TOP_HIST_MAX], count;
};

/* The buckets of histogram @name for @tenant: `NAME_bucket{tenant="T",le="B"} N` lines in
 * order, and NAME_count. Leaves h->n at 0 when the exposition has none. */
static void prom_hist(const char *text, const char *name, const char *tenant, struct hist *h)
{
	char pat[256];
	const char *p = text;
	size_t pl;

	memset(h, 0, sizeof(*h));
	snprintf(pat, sizeof(pat), "\n%s_bucket{tenant=\"%s\",le=\"", name, tenant);
	pl = strlen(pat);
	while ((p = strstr(p, pat)) && h->n < TOP_HIST_MAX) {
		const char *q = p + pl, *v = strstr(q, "} ");

		p = q;
		if (!v)
			break;
		if (!strncmp(q, "+Inf", 4))
			continue;
		h->le[h->n] = strtod(q, NULL);
		h->cum[h->n++] = strtod(v + 2, NULL);
	}
	snprintf(pat, sizeof(pat), "%s_count", name);
	h->count = prom_tenant(text, pat, tenant);
	if (isnan(h->count))
		h->n = 0;
}

/* The bound (ms) under which 99 % of what @c added over @p lies: NAN when nothing was
 * observed in between, INFINITY when the p99 is past the last bound. */
static double hist_p99_iv(const struct hist *c, const struct hist *p)
{
	double dn = c->count - p->count;
	int i;

	if (!c->n || c->n != p->n || !(dn > 0))
		return NAN;
	for (i = 0; i < c->n; i++)
		if (c->cum[i] - p->cum[i] >= 0.99 * dn)
			return c->le[i] * 1e3;
	return INFINITY;
}

/* ---- one sample --------------------------------------------------------------------------- */

struct t_row {
	char name[64];
	bool live;
	double requests, admitted, ok, shed, goodput, throughput; /* cumulative */
	double reservation, consumption, wait_p99, svc_p99;
	double queued;
	/* /metrics histograms, cumulative by bucket bound: queue wait and service */
	struct hist wait, svc;
	double wait_p99_iv, svc_p99_iv; /* this interval: the bound p99 lies under, ms */
	/* rates, from the previous sample */
	double r_shed, r_admitted, r_good, r_thru, r_req;
};

struct p_row {
	char prefix[64], cls[32], reason[32], action[16];
	unsigned port;
	double total, window, per_s; /* total: cumulative while in the daemon's table */
	double r_shed;               /* from the delta of total, or the daemon's window rate */
};

struct sample {
	struct timespec at;
	double mono;
	/* edge */
	bool edge;
	uint64_t reasons[SL_REASON_SLOTS];
	uint64_t class_shed[SL_STATS_ROWS];
	uint64_t class_pass[SL_STATS_ROWS];  /* passed, and first requests admitted */
	uint64_t class_would[SL_STATS_ROWS]; /* monitor mode: would_shed_*, passed */
	char class_names[SL_STATS_ROWS][32];
	uint8_t class_mode[SL_STATS_ROWS];     /* enum sl_mode */
	double class_key_rate[SL_STATS_ROWS];  /* the key bucket's refill, cost units/s */
	uint64_t events_lost;
	/* daemon */
	long pid;
	unsigned generation;
	uint64_t started_unix;
	/* gateway */
	bool gw;
	char gw_listen[64], queue_mode[8];
	double gw_requests, gw_hashes, queue_depth, queue_limit, queue_wait_ms, service_ms;
	double workers, busy_workers;
	double wait_p99_all, svc_p99_all; /* this interval, every tenant: a bucket bound, ms */
	bool have_goodput;
	int n_t;
	struct t_row t[TOP_MAX_TENANTS];
	/* top shed prefixes */
	bool topk;
	char topk_error[160];
	unsigned sample_n, window_s;
	double span_s;
	int n_p;
	struct p_row p[TOP_MAX_PREFIXES];
};

struct top {
	const struct top_opts *o;
	struct sl_maps maps;
	bool maps_open;
	char metrics[128];
	char node[64];
	char lost[256]; /* why the daemon is gone, when it is */
	struct sample *cur, *prev;
	unsigned long frames;
	bool sampled; /* one sample made it: a failure now is a lost daemon */
};

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sample_edge(struct top *t, struct sample *s)
{
	struct sl_counters rows[SL_STATS_ROWS];
	unsigned r, k;

	if (!t->maps_open) {
		if (sl_maps_open_pinned(&t->maps, t->o->pin_path))
			return;
		t->maps_open = true;
	}
	if (sl_maps_read_stats(&t->maps, rows))
		return;
	s->edge = true;
	for (r = 0; r < SL_STATS_ROWS; r++) {
		struct sl_class_policy p;

		for (k = 0; k < SL_REASON_SLOTS; k++)
			s->reasons[k] += rows[r].pkts[k];
		s->class_shed[r] = rows[r].pkts[SL_R_SHED_PREFIX] + rows[r].pkts[SL_R_SHED_PARENT] +
				   rows[r].pkts[SL_R_SHED_TENANT] + rows[r].pkts[SL_R_SHED_VERDICT];
		s->class_pass[r] = rows[r].pkts[SL_R_PASSED] + rows[r].pkts[SL_R_FIRST_ADMITTED];
		s->class_would[r] = rows[r].pkts[SL_R_WOULD_SHED_PREFIX] +
				    rows[r].pkts[SL_R_WOULD_SHED_PARENT] +
				    rows[r].pkts[SL_R_WOULD_SHED_TENANT];
		s->events_lost += rows[r].events_lost;
		s->class_key_rate[r] = NAN;
		if (r == SL_CLASS_NONE) {
			snprintf(s->class_names[r], sizeof(s->class_names[r]), "none");
		} else if (!sl_maps_read_class(&t->maps, r, &p) && p.valid) {
			snprintf(s->class_names[r], sizeof(s->class_names[r]), "%s", p.name);
			s->class_mode[r] = p.mode;
			if (p.prefix.emission_ns)
				s->class_key_rate[r] = 1e9 / (double)p.prefix.emission_ns;
		}
	}
	{
		struct sl_meta meta;

		if (!sl_maps_read_meta(&t->maps, &meta))
			s->started_unix = meta.started_unix;
	}
}

static void sample_gateway(struct top *t, struct sample *s, const char *text)
{
	struct jdoc d;
	char *metrics = NULL;
	int arr, it;

	if (jparse(&d, text))
		return;
	s->gw = true;
	jstr(&d, jget(&d, 0, "gateway.listen"), s->gw_listen, sizeof(s->gw_listen));
	s->gw_requests = jnum(&d, jget(&d, 0, "gateway.requests"), 0);
	s->gw_hashes = jnum(&d, jget(&d, 0, "gateway.hashes"), 0);
	s->workers = jnum(&d, jget(&d, 0, "gateway.workers"), 0);
	s->busy_workers = jnum(&d, jget(&d, 0, "gateway.busy_workers"), 0);
	s->queue_depth = jnum(&d, jget(&d, 0, "gateway.queue.depth"), 0);
	s->queue_limit = jnum(&d, jget(&d, 0, "gateway.queue.limit"), 0);
	s->queue_wait_ms = jnum(&d, jget(&d, 0, "gateway.queue.wait_ms"), 0);
	s->service_ms = jnum(&d, jget(&d, 0, "gateway.queue.service_ms"), 0);
	jstr(&d, jget(&d, 0, "gateway.queue.mode"), s->queue_mode, sizeof(s->queue_mode));
	if (t->metrics[0])
		metrics = metrics_fetch(t->metrics);
	s->have_goodput = true;
	arr = jget(&d, 0, "tenants");
	for (it = jfirst(&d, arr); it >= 0 && s->n_t < TOP_MAX_TENANTS; it = jnext(&d, arr, it)) {
		struct t_row *r = &s->t[s->n_t++];

		jstr(&d, jget(&d, it, "name"), r->name, sizeof(r->name));
		r->live = jnum(&d, jget(&d, it, "live"), 1) != 0;
		r->requests = jnum(&d, jget(&d, it, "requests"), 0);
		r->admitted = jnum(&d, jget(&d, it, "admitted.reserved"), 0) +
			      jnum(&d, jget(&d, it, "admitted.burst"), 0);
		r->ok = jnum(&d, jget(&d, it, "ok"), 0);
		r->shed = jnum(&d, jget(&d, it, "shed"), 0);
		r->reservation = jnum(&d, jget(&d, it, "reservation"), 0);
		r->consumption = jnum(&d, jget(&d, it, "consumption"), 0);
		r->wait_p99 = jnum(&d, jget(&d, it, "queue_wait_ms.p99"), NAN);
		r->svc_p99 = jnum(&d, jget(&d, it, "service_ms.p99"), NAN);
		r->queued = jnum(&d, jget(&d, it, "queued"), 0);
		/* Goodput and throughput: the document's own, when it has them; else /metrics. */
		r->goodput = jnum(&d, jget(&d, it, "goodput"), NAN);
		r->throughput = jnum(&d, jget(&d, it, "answered_2xx"), NAN);
		if (isnan(r->goodput) && metrics) {
			r->goodput = prom_tenant(metrics, "sluice_gateway_goodput_total", r->name);
			r->throughput = prom_tenant(metrics, "sluice_gateway_answered_2xx_total",
						    r->name);
		}
		r->wait_p99_iv = r->svc_p99_iv = NAN;
		if (metrics) {
			prom_hist(metrics, "sluice_gateway_queue_wait_seconds", r->name, &r->wait);
			prom_hist(metrics, "sluice_gateway_service_seconds", r->name, &r->svc);
		}
		if (isnan(r->goodput) || isnan(r->throughput))
			s->have_goodput = false;
	}
	free(metrics);
	jfree(&d);
}

static void sample_topk(struct sample *s, const char *text)
{
	struct jdoc d;
	int arr, it;

	if (jparse(&d, text))
		return;
	s->topk = true;
	s->sample_n = (unsigned)jnum(&d, jget(&d, 0, "sample"), 1);
	s->window_s = (unsigned)jnum(&d, jget(&d, 0, "window_s"), 0);
	s->span_s = jnum(&d, jget(&d, 0, "span_s"), 0);
	arr = jget(&d, 0, "prefixes");
	for (it = jfirst(&d, arr); it >= 0 && s->n_p < TOP_MAX_PREFIXES;
	     it = jnext(&d, arr, it)) {
		struct p_row *r = &s->p[s->n_p++];

		jstr(&d, jget(&d, it, "prefix"), r->prefix, sizeof(r->prefix));
		jstr(&d, jget(&d, it, "class"), r->cls, sizeof(r->cls));
		jstr(&d, jget(&d, it, "reason"), r->reason, sizeof(r->reason));
		jstr(&d, jget(&d, it, "action"), r->action, sizeof(r->action));
		r->port = (unsigned)jnum(&d, jget(&d, it, "port"), 0);
		r->total = jnum(&d, jget(&d, it, "total"), 0);
		r->window = jnum(&d, jget(&d, it, "shed_window"), 0);
		r->per_s = jnum(&d, jget(&d, it, "shed_per_s"), 0);
	}
	jfree(&d);
}

/* Take one sample into t->cur. Returns 0, or -1 with t->lost set when the daemon is gone. */
static int take_sample(struct top *t)
{
	struct sample *s = t->cur;
	char *ans = NULL;
	int r;

	memset(s, 0, sizeof(*s));
	clock_gettime(CLOCK_REALTIME, &s->at);
	s->mono = mono_now();
	s->pid = -1;
	r = ctl_fetch(t->o->socket, "ping", &ans);
	if (r < 0) {
		free(ans);
		if (t->frames || t->sampled)
			goto lost;
		snprintf(t->lost, sizeof(t->lost), "sluiced is not answering on %s (%s)",
			 t->o->socket, strerror(-r));
		return -1;
	}
	if (r == 1)
		sscanf(ans, "ok pid %ld generation %u", &s->pid, &s->generation);
	free(ans);
	sample_edge(t, s);
	r = ctl_fetch(t->o->socket, "tenants", &ans);
	if (r == 1 && strchr(ans, '\n'))
		sample_gateway(t, s, strchr(ans, '\n') + 1);
	free(ans);
	if (r < 0)
		goto lost;
	r = ctl_fetch(t->o->socket, "topshed json 20", &ans);
	if (r == 1)
		sample_topk(s, ans + 2);
	else if (r == 0)
		snprintf(s->topk_error, sizeof(s->topk_error), "%s", ans + 6);
	free(ans);
	if (r < 0)
		goto lost;
	s->topk_error[strcspn(s->topk_error, "\n")] = '\0';
	t->sampled = true;
	return 0;
lost:
	snprintf(t->lost, sizeof(t->lost), "lost sluiced on %s (%s)", t->o->socket,
		 strerror(-r));
	return -1;
}

/* Add @h into the sum @a (same bounds), for the gateway-wide p99. */
static void hist_add(struct hist *a, const struct hist *h)
{
	int i;

	if (!a->n) {
		a->n = h->n;
		memcpy(a->le, h->le, sizeof(a->le));
	}
	for (i = 0; i < a->n; i++)
		a->cum[i] += h->cum[i];
	a->count += h->count;
}

/* Rates of t->cur against t->prev (none on the first sample). */
static void compute_rates(struct top *t)
{
	struct sample *c = t->cur, *p = t->prev;
	double dt = p ? c->mono - p->mono : 0;
	struct hist wc = { 0 }, wp = { 0 }, sc = { 0 }, sp = { 0 };
	int i, j;

	c->wait_p99_all = c->svc_p99_all = NAN;
	if (dt <= 0)
		return;
	for (i = 0; i < c->n_t; i++) {
		struct t_row *r = &c->t[i];

		for (j = 0; j < p->n_t; j++)
			if (!strcmp(p->t[j].name, r->name))
				break;
		if (j == p->n_t)
			continue;
		/* Counters only grow; a restarted daemon starts them again: clamp at 0. */
#define RATE(a, b) ((a) >= (b) ? ((a) - (b)) / dt : 0)
		r->r_shed = RATE(r->shed, p->t[j].shed);
		r->r_admitted = RATE(r->admitted, p->t[j].admitted);
		r->r_req = RATE(r->requests, p->t[j].requests);
		r->r_good = RATE(r->goodput, p->t[j].goodput);
		r->r_thru = RATE(r->throughput, p->t[j].throughput);
		if (!c->have_goodput || !p->have_goodput)
			r->r_good = r->r_thru = RATE(r->ok, p->t[j].ok);
		r->wait_p99_iv = hist_p99_iv(&r->wait, &p->t[j].wait);
		r->svc_p99_iv = hist_p99_iv(&r->svc, &p->t[j].svc);
		if (r->wait.n && r->wait.n == p->t[j].wait.n && (!wc.n || wc.n == r->wait.n)) {
			hist_add(&wc, &r->wait);
			hist_add(&wp, &p->t[j].wait);
		}
		if (r->svc.n && r->svc.n == p->t[j].svc.n && (!sc.n || sc.n == r->svc.n)) {
			hist_add(&sc, &r->svc);
			hist_add(&sp, &p->t[j].svc);
		}
	}
	c->wait_p99_all = hist_p99_iv(&wc, &wp);
	c->svc_p99_all = hist_p99_iv(&sc, &sp);
	for (i = 0; i < c->n_p; i++) {
		struct p_row *r = &c->p[i];

		r->r_shed = r->per_s;
		for (j = 0; j < p->n_p; j++)
			if (!strcmp(p->p[j].prefix, r->prefix) && !strcmp(p->p[j].cls, r->cls) &&
			    !strcmp(p->p[j].reason, r->reason))
				break;
		if (j < p->n_p)
			r->r_shed = RATE(r->total, p->p[j].total);
#undef RATE
	}
}

static double reason_rate(const struct top *t, unsigned k)
{
	double dt = t->prev ? t->cur->mono - t->prev->mono : 0;

	if (dt <= 0 || !t->prev->edge || t->cur->reasons[k] < t->prev->reasons[k])
		return 0;
	return (double)(t->cur->reasons[k] - t->prev->reasons[k]) / dt;
}

enum class_count { CR_SHED, CR_PASS, CR_WOULD };

static const uint64_t *class_counts(const struct sample *s, enum class_count which)
{
	return which == CR_PASS ? s->class_pass : which == CR_WOULD ? s->class_would :
	       s->class_shed;
}

/* Class row @r's packets of kind @which per second over the interval. */
static double class_rate(const struct top *t, enum class_count which, unsigned r)
{
	double dt = t->prev ? t->cur->mono - t->prev->mono : 0;
	const uint64_t *c = class_counts(t->cur, which), *p;

	if (dt <= 0 || !t->prev->edge)
		return 0;
	p = class_counts(t->prev, which);
	return c[r] < p[r] ? 0 : (double)(c[r] - p[r]) / dt;
}

static int by_shed_rate(const void *a, const void *b)
{
	const struct t_row *x = a, *y = b;

	if (x->r_shed != y->r_shed)
		return x->r_shed < y->r_shed ? 1 : -1;
	if (x->shed != y->shed)
		return x->shed < y->shed ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int by_prefix_rate(const void *a, const void *b)
{
	const struct p_row *x = a, *y = b;

	if (x->r_shed != y->r_shed)
		return x->r_shed < y->r_shed ? 1 : -1;
	return x->window < y->window ? 1 : x->window > y->window ? -1 : 0;
}

/* ---- rendering ----------------------------------------------------------------------------
 * A frame fits its terminal (or COLUMNS x LINES) and never cuts a value mid-way: a line of
 * labelled values leaves out its least important parts, a table leaves out whole columns,
 * least important first, and only a table's name column (text) is ever shortened. What stays
 * longest, in order (and so what an 80x24 terminal shows):
 *   XDP:      passed, shed and would-shed (monitor mode: what enforcing would have shed) per
 *             second; then events lost, other, malformed, not protected;
 *   classes:  CLASS, PASSED, SHED, WOULD-SHED; then MODE, KEY RATE (the key's budget);
 *   tenants:  TENANT, SHED, ADMIT, WAIT p99, SVC p99; then GOOD, USING/RESERVED, THRU,
 *             SHED TOTAL;
 *   prefixes: PREFIX, SHED, REASON, CLASS; then IN WINDOW, ACTION, PORT.
 * The tables share the rows the other lines leave, one row to each in turn (tenants, classes,
 * prefixes); a table cut short ends in a "+N more" line. Rates are written in the unit that
 * reads best (sl_fmt_rate: "4.2/s", "12/min"; "12.3k/s" from 10,000/s): a rate of one in a
 * minute-long interval reads 1/min, not 0.0. */

/* A frame is drawn as lines from the top-left corner; on a terminal each ends by clearing the
 * rest of its row. */
struct frame {
	bool tty;
	int cols;  /* width, 0: none */
	int lines; /* lines a frame may take, 0: no limit */
	int used;
	FILE *f;
};

static void line(struct frame *fr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void line(struct frame *fr, const char *fmt, ...)
{
	char buf[2048];
	size_t len;
	va_list ap;

	if (fr->lines > 0 && fr->used >= fr->lines)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	len = strlen(buf);
	/* Everything is laid out to fit; should a line still be too long (a long listen address
	 * on a narrow terminal), it ends at a space, not inside a word or a number. */
	if (fr->cols > 0 && (int)len > fr->cols) {
		char *sp;

		buf[fr->cols] = '\0';
		sp = strrchr(buf, ' ');
		if (sp && sp > buf)
			*sp = '\0';
	}
	len = strlen(buf);
	while (len && buf[len - 1] == ' ')
		buf[--len] = '\0';
	fprintf(fr->f, fr->tty ? "%s\033[K\r\n" : "%s\n", buf);
	fr->used++;
}

/* "12.3k" style, for rates that span orders of magnitude. */
static const char *human(double v, char *buf, size_t n)
{
	if (isnan(v))
		snprintf(buf, n, "-");
	else if (v >= 1e9)
		snprintf(buf, n, "%.1fG", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, n, "%.1fM", v / 1e6);
	else if (v >= 1e4)
		snprintf(buf, n, "%.1fk", v / 1e3);
	else if (v >= 100 || v == 0)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%.1f", v);
	return buf;
}

/* A rate (per second) as a cell: "0", "4.2/s", "12/min", "12.3k/s"; "-" when unknown. */
static const char *rate_str(double v, char *buf, size_t n)
{
	char num[32];

	if (isnan(v))
		snprintf(buf, n, "-");
	else if (v == 0)
		snprintf(buf, n, "0");
	else if (v >= 1e4)
		snprintf(buf, n, "%s/s", human(v, num, sizeof(num)));
	else
		sl_fmt_rate(v, buf, n);
	return buf;
}

/* A count: whole numbers, then k/M/G. */
static const char *count_str(double v, char *buf, size_t n)
{
	if (isnan(v) || v >= 1e4)
		return human(v, buf, n);
	snprintf(buf, n, "%.0f", v);
	return buf;
}

static const char *ms_str(double v, char *buf, size_t n)
{
	if (isnan(v))
		snprintf(buf, n, "-");
	else if (v >= 1000)
		snprintf(buf, n, "%.2fs", v / 1000);
	else if (v >= 100)
		snprintf(buf, n, "%.0fms", v);
	else
		snprintf(buf, n, "%.1fms", v);
	return buf;
}

/* A p99 cell: this interval's bound from /metrics ("<=25ms"), "-" when nothing was observed
 * in it, or without /metrics the p99 since sluiced started, marked "*". */
static const char *p99_str(double iv, const struct hist *h, double life, char *buf, size_t n)
{
	char v[24];

	if (isinf(iv) && h && h->n)
		snprintf(buf, n, ">%s", ms_str(h->le[h->n - 1] * 1e3, v, sizeof(v)));
	else if (isinf(iv))
		snprintf(buf, n, ">max");
	else if (!isnan(iv))
		snprintf(buf, n, "<=%s", ms_str(iv, v, sizeof(v)));
	else if (!h || h->n || isnan(life))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%s*", ms_str(life, v, sizeof(v)));
	return buf;
}

/* -- a line of labelled parts -- */

#define SEG_MAX 12

struct segs {
	int n;
	struct {
		char text[160];
		int prio; /* 0 first; a higher number goes first when the line is too long */
	} s[SEG_MAX];
};

static void seg(struct segs *g, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void seg(struct segs *g, int prio, const char *fmt, ...)
{
	va_list ap;

	if (g->n == SEG_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(g->s[g->n].text, sizeof(g->s[g->n].text), fmt, ap);
	va_end(ap);
	g->s[g->n++].prio = prio;
}

/* The parts two spaces apart, in their order; while too wide, the least important (of equals
 * the rightmost) is left out. The first part names the line and always stays. */
static void seg_line(struct frame *fr, const struct segs *g)
{
	bool on[SEG_MAX];
	char buf[2048];
	size_t o = 0;
	int i;

	for (i = 0; i < g->n; i++)
		on[i] = true;
	for (;;) {
		int len = 0, worst = -1, k = 0;

		for (i = 0; i < g->n; i++)
			if (on[i])
				len += (k++ ? 2 : 0) + (int)strlen(g->s[i].text);
		if (fr->cols <= 0 || len <= fr->cols)
			break;
		for (i = 1; i < g->n; i++)
			if (on[i] && (worst < 0 || g->s[i].prio >= g->s[worst].prio))
				worst = i;
		if (worst < 0)
			break;
		on[worst] = false;
	}
	buf[0] = '\0';
	for (i = 0; i < g->n && o < sizeof(buf); i++)
		if (on[i])
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", o ? "  " : "",
					      g->s[i].text);
	line(fr, "%s", buf);
}

/* "LEAD a 1/s b 2/s +3 more": as many items as fit, in the order given. */
static void list_line(struct frame *fr, const char *lead, char (*items)[64], int n)
{
	char buf[2048], more[32];
	size_t o;
	int i;

	o = (size_t)snprintf(buf, sizeof(buf), "%s", lead);
	if (!n)
		snprintf(buf + o, sizeof(buf) - o, " (none)");
	for (i = 0; i < n && o < sizeof(buf); i++) {
		size_t ml = i + 1 < n ? (size_t)snprintf(more, sizeof(more), " +%d more", n - i - 1) : 0;

		if (fr->cols > 0 && o + 1 + strlen(items[i]) + ml > (size_t)fr->cols) {
			snprintf(buf + o, sizeof(buf) - o, " +%d more", n - i);
			break;
		}
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, " %s", items[i]);
	}
	line(fr, "%s", buf);
}

/* -- a table -- */

#define TB_COLS 10
#define TB_CELL 48
#define TB_NAME_MIN 12 /* a name column shrinks to this before any column is left out */

struct tb_col {
	const char *head;
	int prio, w; /* prio: 0 first; a higher number is left out first */
	bool left, on;
};

struct table {
	int ncol, nrow, name_min;
	struct tb_col c[TB_COLS];
	char (*cell)[TB_COLS][TB_CELL];
};

static int tb_init(struct table *tb, int rows, int name_min)
{
	memset(tb, 0, sizeof(*tb));
	tb->name_min = name_min;
	tb->cell = calloc(rows > 0 ? (size_t)rows : 1, sizeof(*tb->cell));
	return tb->cell ? 0 : -1;
}

static void tb_col(struct table *tb, const char *head, int prio, bool left)
{
	if (tb->ncol < TB_COLS)
		tb->c[tb->ncol++] = (struct tb_col){ .head = head, .prio = prio, .left = left };
}

static void tb_set(struct table *tb, int r, int c, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void tb_set(struct table *tb, int r, int c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tb->cell[r][c], TB_CELL, fmt, ap);
	va_end(ap);
}

/* Each column as wide as its widest cell; then, for a width of @cols, the name column (0)
 * down to name_min and the least important columns (of equals the rightmost) left out until
 * the rest fits, and the name given back what room is left. */
static void tb_fit(struct table *tb, int cols)
{
	int i, r, nat0, total = 0;

	for (i = 0; i < tb->ncol; i++) {
		tb->c[i].w = (int)strlen(tb->c[i].head);
		for (r = 0; r < tb->nrow; r++)
			if ((int)strlen(tb->cell[r][i]) > tb->c[i].w)
				tb->c[i].w = (int)strlen(tb->cell[r][i]);
		tb->c[i].on = true;
	}
	if (cols <= 0 || !tb->ncol)
		return;
	nat0 = tb->c[0].w;
	if (tb->c[0].w > tb->name_min)
		tb->c[0].w = tb->name_min;
	for (;;) {
		int worst = -1;

		for (i = 0, total = -1; i < tb->ncol; i++)
			if (tb->c[i].on)
				total += tb->c[i].w + 1;
		if (total <= cols)
			break;
		for (i = 1; i < tb->ncol; i++)
			if (tb->c[i].on && (worst < 0 || tb->c[i].prio >= tb->c[worst].prio))
				worst = i;
		if (worst < 0) {
			tb->c[0].w = cols;
			return;
		}
		tb->c[worst].on = false;
	}
	if (total < cols)
		tb->c[0].w += nat0 - tb->c[0].w < cols - total ? nat0 - tb->c[0].w : cols - total;
}

/* Row @r, or the heading for -1. */
static void tb_line(struct frame *fr, const struct table *tb, int r)
{
	char buf[2048];
	size_t o = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < tb->ncol && o < sizeof(buf); i++) {
		const char *s = r < 0 ? tb->c[i].head : tb->cell[r][i];

		if (!tb->c[i].on)
			continue;
		if (tb->c[i].left)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%-*.*s", o ? " " : "",
					      tb->c[i].w, tb->c[i].w, s);
		else
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%*s", o ? " " : "",
					      tb->c[i].w, s);
	}
	line(fr, "%s", buf);
}

/* The heading and @rows rows when they all fit in @got lines; else @got - 1 of them and a
 * "+N more WHAT" line. */
static void tb_print(struct frame *fr, struct table *tb, int got, const char *what)
{
	int r, show = tb->nrow;

	tb_fit(tb, fr->cols);
	tb_line(fr, tb, -1);
	if (got < tb->nrow)
		show = got > 0 ? got - 1 : 0;
	for (r = 0; r < show; r++)
		tb_line(fr, tb, r);
	if (show < tb->nrow)
		line(fr, "  +%d more %s (--json or a taller terminal for all)", tb->nrow - show,
		     what);
	free(tb->cell);
	tb->cell = NULL;
}

/* The rows @room leaves, one to each table in turn (in the order given) until each has what
 * it wants or none are left. @room < 0: no limit. */
static void share_rows(int room, const int *want, int *got, int n)
{
	int i, given = 1;

	for (i = 0; i < n; i++)
		got[i] = room < 0 ? want[i] : 0;
	while (room > 0 && given)
		for (i = 0, given = 0; i < n && room > 0; i++)
			if (got[i] < want[i]) {
				got[i]++;
				room--;
				given = 1;
			}
}

struct reason_item {
	unsigned k;
	double v;
};

static int by_rate_desc(const void *a, const void *b)
{
	const struct reason_item *x = a, *y = b;

	if (x->v != y->v)
		return x->v < y->v ? 1 : -1;
	return x->k < y->k ? -1 : x->k > y->k;
}

static bool reason_is_shed(unsigned k)
{
	return k == SL_R_SHED_PREFIX || k == SL_R_SHED_PARENT || k == SL_R_SHED_TENANT ||
	       k == SL_R_SHED_VERDICT;
}

static bool reason_is_would_shed(unsigned k)
{
	return k == SL_R_WOULD_SHED_PREFIX || k == SL_R_WOULD_SHED_PARENT ||
	       k == SL_R_WOULD_SHED_TENANT;
}

static void render(struct top *t, struct frame *fr)
{
	struct sample *s = t->cur;
	char when[32], up[32], a[32], b[32], c[32], d[32], e[32];
	struct table ct = { 0 }, tt = { 0 }, pt = { 0 };
	struct reason_item ri[SL_R__MAX];
	char (*items)[64] = NULL;
	int n_items = 0, want[3] = { 0 }, got[3], fixed, i;
	struct segs g = { 0 };
	struct tm tm;

	gmtime_r(&s->at.tv_sec, &tm);
	strftime(when, sizeof(when), "%H:%M:%S UTC", &tm);
	up[0] = '\0';
	if (s->started_unix && (uint64_t)s->at.tv_sec >= s->started_unix) {
		uint64_t u = (uint64_t)s->at.tv_sec - s->started_unix;

		if (u >= 86400)
			snprintf(up, sizeof(up), "up %llud%02lluh",
				 (unsigned long long)(u / 86400), (unsigned long long)(u % 86400 / 3600));
		else
			snprintf(up, sizeof(up), "up %lluh%02llum%02llus",
				 (unsigned long long)(u / 3600), (unsigned long long)(u % 3600 / 60),
				 (unsigned long long)(u % 60));
	}

	/* Everything is laid out first, then the tables get the rows the other lines leave. */
	if (s->edge) {
		unsigned r, rows[SL_STATS_ROWS];
		double w[SL_STATS_ROWS];
		int n = 0, j;

		if (tb_init(&ct, SL_STATS_ROWS, TB_NAME_MIN))
			return;
		tb_col(&ct, "CLASS", 0, true);
		tb_col(&ct, "MODE", 4, true);
		tb_col(&ct, "PASSED", 1, false);
		tb_col(&ct, "SHED", 1, false);
		tb_col(&ct, "WOULD-SHED", 1, false);
		tb_col(&ct, "KEY RATE", 5, false);
		/* The classes that saw protected traffic, most shed (or would-be shed) first. */
		for (r = 0; r < SL_STATS_ROWS; r++) {
			double p = class_rate(t, CR_PASS, r), x = class_rate(t, CR_SHED, r),
			       y = class_rate(t, CR_WOULD, r);

			if (!s->class_names[r][0] || !(p + x + y > 0))
				continue;
			w[r] = (x + y) * 1e6 + p;
			for (j = n; j > 0 && w[rows[j - 1]] < w[r]; j--)
				rows[j] = rows[j - 1];
			rows[j] = r;
			n++;
		}
		for (j = 0; j < n; j++) {
			r = rows[j];
			tb_set(&ct, j, 0, "%s", s->class_names[r]);
			tb_set(&ct, j, 1, "%s", r == SL_CLASS_NONE ? "-" :
			       s->class_mode[r] == SL_MODE_MONITOR ? "monitor" : "enforce");
			tb_set(&ct, j, 2, "%s", rate_str(class_rate(t, CR_PASS, r), a, sizeof(a)));
			tb_set(&ct, j, 3, "%s", rate_str(class_rate(t, CR_SHED, r), a, sizeof(a)));
			tb_set(&ct, j, 4, "%s", rate_str(class_rate(t, CR_WOULD, r), a, sizeof(a)));
			if (isnan(s->class_key_rate[r]))
				tb_set(&ct, j, 5, "-");
			else
				tb_set(&ct, j, 5, "%s", sl_fmt_rate(s->class_key_rate[r], a, sizeof(a)));
		}
		ct.nrow = n;
		want[1] = n ? n : 1;
		for (r = 0; r < SL_R__MAX; r++) {
			double v = reason_rate(t, r);

			if (v > 0 && r != SL_R_NOT_PROTECTED && r != SL_R_NOT_SYN)
				ri[n_items++] = (struct reason_item){ .k = r, .v = v };
		}
		qsort(ri, (size_t)n_items, sizeof(ri[0]), by_rate_desc);
		items = calloc(n_items ? (size_t)n_items : 1, sizeof(*items));
		if (!items)
			n_items = 0;
		for (i = 0; i < n_items; i++)
			snprintf(items[i], sizeof(items[i]), "%s %s", sl_reason_name(ri[i].k),
				 rate_str(ri[i].v, a, sizeof(a)));
	}
	if (s->gw) {
		if (tb_init(&tt, s->n_t, TB_NAME_MIN))
			goto out;
		tb_col(&tt, "TENANT", 0, true);
		tb_col(&tt, "SHED", 1, false);
		tb_col(&tt, "ADMIT", 1, false);
		tb_col(&tt, "WAIT p99", 2, false);
		tb_col(&tt, "SVC p99", 2, false);
		tb_col(&tt, s->have_goodput ? "GOOD" : "OK", 3, false);
		tb_col(&tt, "USING/RESERVED", 4, false);
		tb_col(&tt, "THRU", 5, false);
		tb_col(&tt, "SHED TOTAL", 6, false);
		qsort(s->t, (size_t)s->n_t, sizeof(s->t[0]), by_shed_rate);
		for (i = 0; i < s->n_t; i++) {
			const struct t_row *r = &s->t[i];

			tb_set(&tt, i, 0, "%s%s", r->name, r->live ? "" : " (removed)");
			tb_set(&tt, i, 1, "%s", rate_str(r->r_shed, a, sizeof(a)));
			tb_set(&tt, i, 2, "%s", rate_str(r->r_admitted, a, sizeof(a)));
			tb_set(&tt, i, 3, "%s", p99_str(r->wait_p99_iv, &r->wait, r->wait_p99, a,
							sizeof(a)));
			tb_set(&tt, i, 4, "%s", p99_str(r->svc_p99_iv, &r->svc, r->svc_p99, a,
							sizeof(a)));
			tb_set(&tt, i, 5, "%s", rate_str(r->r_good, a, sizeof(a)));
			if (r->reservation > 0)
				tb_set(&tt, i, 6, "%.0f/%.0f %3.0f%%", r->consumption, r->reservation,
				       100 * r->consumption / r->reservation);
			else
				tb_set(&tt, i, 6, "%.0f/-", r->consumption);
			tb_set(&tt, i, 7, "%s", rate_str(r->r_thru, a, sizeof(a)));
			tb_set(&tt, i, 8, "%s", count_str(r->shed, a, sizeof(a)));
		}
		tt.nrow = s->n_t;
		want[0] = s->n_t;
	}
	if (s->topk) {
		/* A prefix is never shortened: its column keeps its full width. */
		if (tb_init(&pt, s->n_p, 0))
			goto out;
		tb_col(&pt, "PREFIX", 0, true);
		tb_col(&pt, "CLASS", 2, true);
		tb_col(&pt, "REASON", 1, true);
		tb_col(&pt, "ACTION", 4, true);
		tb_col(&pt, "PORT", 5, false);
		tb_col(&pt, "SHED", 1, false);
		tb_col(&pt, "IN WINDOW", 3, false);
		qsort(s->p, (size_t)s->n_p, sizeof(s->p[0]), by_prefix_rate);
		for (i = 0; i < s->n_p; i++) {
			const struct p_row *r = &s->p[i];

			tb_set(&pt, i, 0, "%s", r->prefix);
			tb_set(&pt, i, 1, "%s", r->cls);
			tb_set(&pt, i, 2, "%s", r->reason);
			tb_set(&pt, i, 3, "%s", r->action);
			tb_set(&pt, i, 4, "%u", r->port);
			tb_set(&pt, i, 5, "%s", rate_str(r->r_shed, a, sizeof(a)));
			tb_set(&pt, i, 6, "%s", count_str(r->window, a, sizeof(a)));
		}
		pt.nrow = s->n_p;
		pt.name_min = 0;
		for (i = 0; i < s->n_p; i++)
			if ((int)strlen(pt.cell[i][0]) > pt.name_min)
				pt.name_min = (int)strlen(pt.cell[i][0]);
		want[2] = s->n_p ? s->n_p : 1;
	}
	/* The lines besides the tables' rows: the heading; the edge's summary, class heading and
	 * reasons; a gap; the gateway's two, a gap and its heading; a gap; the prefixes' title
	 * and heading. */
	fixed = 1 + (s->edge ? 3 : 1) + 1 + (s->gw ? 4 : 1) + 1 +
		(s->topk ? 2 : s->edge || s->topk_error[0]);
	share_rows(fr->lines > 0 ? fr->lines - fixed : -1, want, got, 3);

	seg(&g, 0, "sluice top - %s", t->node);
	seg(&g, 2, "sluiced pid %ld", s->pid);
	if (up[0])
		seg(&g, 3, "%s", up);
	seg(&g, 4, "gen %u", s->generation);
	seg(&g, 3, "every %.1fs", t->o->interval);
	seg(&g, 1, "%s", when);
	seg_line(fr, &g);

	/* XDP decisions per second: passed, shed, and apart from both what monitor mode passed
	 * that enforcing would have shed. */
	if (s->edge) {
		double shed = 0, would = 0, other = 0, mal = 0;
		unsigned k;

		for (k = 0; k < SL_R__MAX; k++) {
			double v = reason_rate(t, k);

			if (reason_is_shed(k))
				shed += v;
			else if (reason_is_would_shed(k))
				would += v;
			else if (SL_R_IS_MALFORMED(k))
				mal += v;
			else if (k != SL_R_PASSED && k != SL_R_FIRST_ADMITTED &&
				 k != SL_R_NOT_PROTECTED && k != SL_R_NOT_SYN)
				other += v;
		}
		memset(&g, 0, sizeof(g));
		seg(&g, 0, "XDP");
		seg(&g, 1, "passed %s", rate_str(reason_rate(t, SL_R_PASSED) +
						 reason_rate(t, SL_R_FIRST_ADMITTED), a, sizeof(a)));
		seg(&g, 1, "shed %s", rate_str(shed, b, sizeof(b)));
		seg(&g, 1, "would-shed %s", rate_str(would, c, sizeof(c)));
		seg(&g, 3, "other %s", rate_str(other, d, sizeof(d)));
		seg(&g, 4, "malformed %s", rate_str(mal, e, sizeof(e)));
		seg(&g, 5, "not-protected %s", rate_str(reason_rate(t, SL_R_NOT_PROTECTED) +
							reason_rate(t, SL_R_NOT_SYN), a, sizeof(a)));
		seg(&g, 2, "events lost %llu", (unsigned long long)s->events_lost);
		seg_line(fr, &g);
		if (ct.nrow) {
			tb_print(fr, &ct, got[1], "classes");
		} else {
			free(ct.cell);
			ct.cell = NULL;
			line(fr, "CLASS  (no protected traffic this interval)");
		}
		list_line(fr, "  by reason:", items, n_items);
	} else {
		line(fr, "XDP  no edge datapath pinned at %s", t->o->pin_path);
	}

	/* The gateway. */
	line(fr, "%s", "");
	if (s->gw) {
		double req = 0, adm = 0, shed = 0, good = 0, thru = 0;

		for (i = 0; i < s->n_t; i++) {
			req += s->t[i].r_req;
			adm += s->t[i].r_admitted;
			shed += s->t[i].r_shed;
			good += s->t[i].r_good;
			thru += s->t[i].r_thru;
		}
		memset(&g, 0, sizeof(g));
		seg(&g, 0, "GW %s", s->gw_listen);
		seg(&g, 1, "requests %s", rate_str(req, a, sizeof(a)));
		seg(&g, 1, "admitted %s", rate_str(adm, b, sizeof(b)));
		seg(&g, 1, "shed %s", rate_str(shed, c, sizeof(c)));
		seg(&g, 2, "%s %s of throughput %s", s->have_goodput ? "goodput" : "ok",
		    rate_str(good, d, sizeof(d)), rate_str(thru, e, sizeof(e)));
		if (!s->have_goodput)
			seg(&g, 5, "(no /metrics: successful logins shown)");
		seg_line(fr, &g);
		memset(&g, 0, sizeof(g));
		seg(&g, 0, "   queue %.0f/%.0f %s", s->queue_depth, s->queue_limit,
		    s->queue_mode[0] ? s->queue_mode : "-");
		seg(&g, 1, "wait p99 %s", p99_str(s->wait_p99_all, NULL, NAN, a, sizeof(a)));
		seg(&g, 2, "service p99 %s", p99_str(s->svc_p99_all, NULL, NAN, b, sizeof(b)));
		seg(&g, 3, "wait now %s", ms_str(s->queue_wait_ms, c, sizeof(c)));
		seg(&g, 4, "service now %s", ms_str(s->service_ms, d, sizeof(d)));
		seg(&g, 3, "workers %.0f/%.0f busy", s->busy_workers, s->workers);
		seg_line(fr, &g);
		line(fr, "%s", "");
		tb_print(fr, &tt, got[0], "tenants shed less");
		/* The legend only when a row is left for it, and only the parts that fit. */
		if (fr->lines <= 0 || fr->lines - fixed - got[0] - got[1] - got[2] > 0) {
			static const char *const legend[] = {
				"  (p99: this interval, under a /metrics bucket bound; * since sluiced "
				"started. USING: cost units/s against the reservation)",
				"  (p99: this interval, under a /metrics bucket bound; * since sluiced "
				"started)",
				"  (p99: this interval; * since sluiced started)",
			};

			for (i = 0; i < 3; i++)
				if (fr->cols <= 0 || (int)strlen(legend[i]) <= fr->cols) {
					line(fr, "%s", legend[i]);
					break;
				}
		}
	} else {
		line(fr, "GW  no gateway in this sluiced");
	}

	/* The top shed prefixes. */
	line(fr, "%s", "");
	if (s->topk) {
		memset(&g, 0, sizeof(g));
		seg(&g, 0, "TOP SHED PREFIXES");
		seg(&g, 1, "(last %.0fs; sampled 1 in %u, scaled)", s->span_s,
		    s->sample_n ? s->sample_n : 1);
		seg_line(fr, &g);
		if (pt.nrow) {
			tb_print(fr, &pt, got[2], "prefixes");
		} else {
			free(pt.cell);
			pt.cell = NULL;
			line(fr, "  (no sampled shed events in the window)");
		}
	} else if (s->edge || s->topk_error[0]) {
		line(fr, "TOP SHED PREFIXES: %s", s->topk_error[0] ? s->topk_error :
		     "not available from this sluiced");
	}
out:
	free(items);
	free(ct.cell);
	free(tt.cell);
	free(pt.cell);
}

static void render_json(struct top *t, FILE *f)
{
	struct sample *s = t->cur;
	struct json j;
	unsigned k, r;
	int i;

	json_init(&j, f);
	json_obj_begin(&j, NULL);
	json_str(&j, "node", t->node);
	json_i64(&j, "pid", s->pid);
	json_u64(&j, "generation", s->generation);
	json_u64(&j, "time_unix", (uint64_t)s->at.tv_sec);
	json_double(&j, "interval_s", t->prev ? s->mono - t->prev->mono : 0);
	if (s->started_unix)
		json_u64(&j, "started_unix", s->started_unix);
	if (s->edge) {
		json_obj_begin(&j, "xdp_pps");
		for (k = 0; k < SL_R__MAX; k++)
			json_double(&j, sl_reason_name(k), reason_rate(t, k));
		json_obj_end(&j);
		json_obj_begin(&j, "xdp_shed_pps_by_class");
		for (r = 0; r < SL_STATS_ROWS; r++)
			if (s->class_names[r][0])
				json_double(&j, s->class_names[r], class_rate(t, CR_SHED, r));
		json_obj_end(&j);
		json_u64(&j, "events_lost", s->events_lost);
	} else {
		json_null(&j, "xdp_pps");
	}
	if (s->gw) {
		json_obj_begin(&j, "gateway");
		json_str(&j, "listen", s->gw_listen);
		json_bool(&j, "goodput_measured", s->have_goodput);
		json_double(&j, "queue_depth", s->queue_depth);
		json_double(&j, "queue_limit", s->queue_limit);
		json_double(&j, "queue_wait_ms", s->queue_wait_ms);
		json_double(&j, "service_ms", s->service_ms);
		if (isnan(s->wait_p99_all) || isinf(s->wait_p99_all))
			json_null(&j, "queue_wait_p99_ms_le");
		else
			json_double(&j, "queue_wait_p99_ms_le", s->wait_p99_all);
		if (isnan(s->svc_p99_all) || isinf(s->svc_p99_all))
			json_null(&j, "service_p99_ms_le");
		else
			json_double(&j, "service_p99_ms_le", s->svc_p99_all);
		json_obj_end(&j);
		qsort(s->t, (size_t)s->n_t, sizeof(s->t[0]), by_shed_rate);
		json_arr_begin(&j, "tenants");
		for (i = 0; i < s->n_t; i++) {
			const struct t_row *x = &s->t[i];

			json_obj_begin(&j, NULL);
			json_str(&j, "name", x->name);
			json_double(&j, "shed_per_s", x->r_shed);
			json_double(&j, "admitted_per_s", x->r_admitted);
			json_double(&j, "requests_per_s", x->r_req);
			json_double(&j, "goodput_per_s", x->r_good);
			json_double(&j, "throughput_per_s", x->r_thru);
			json_double(&j, "consumption", x->consumption);
			json_double(&j, "reservation", x->reservation);
			if (isnan(x->wait_p99))
				json_null(&j, "queue_wait_p99_ms");
			else
				json_double(&j, "queue_wait_p99_ms", x->wait_p99);
			if (isnan(x->svc_p99))
				json_null(&j, "service_p99_ms");
			else
				json_double(&j, "service_p99_ms", x->svc_p99);
			/* This interval's, as the bucket bound it lies under (null: no data). */
			if (isnan(x->wait_p99_iv) || isinf(x->wait_p99_iv))
				json_null(&j, "queue_wait_p99_ms_le");
			else
				json_double(&j, "queue_wait_p99_ms_le", x->wait_p99_iv);
			if (isnan(x->svc_p99_iv) || isinf(x->svc_p99_iv))
				json_null(&j, "service_p99_ms_le");
			else
				json_double(&j, "service_p99_ms_le", x->svc_p99_iv);
			json_double(&j, "shed_total", x->shed);
			json_obj_end(&j);
		}
		json_arr_end(&j);
	} else {
		json_null(&j, "gateway");
	}
	if (s->topk) {
		qsort(s->p, (size_t)s->n_p, sizeof(s->p[0]), by_prefix_rate);
		json_arr_begin(&j, "top_shed_prefixes");
		for (i = 0; i < s->n_p; i++) {
			const struct p_row *x = &s->p[i];

			json_obj_begin(&j, NULL);
			json_str(&j, "prefix", x->prefix);
			json_str(&j, "class", x->cls);
			json_str(&j, "reason", x->reason);
			json_str(&j, "action", x->action);
			json_u64(&j, "port", x->port);
			json_double(&j, "shed_per_s", x->r_shed);
			json_double(&j, "shed_in_window", x->window);
			json_obj_end(&j);
		}
		json_arr_end(&j);
	} else {
		json_null(&j, "top_shed_prefixes");
	}
	json_obj_end(&j);
	json_end(&j);
}

/* ---- the terminal ------------------------------------------------------------------------- */

static struct termios saved_tio;
static bool tio_saved, screen_on;
static volatile sig_atomic_t got_stop, got_winch, got_tstp;

static void term_restore(void)
{
	if (screen_on) {
		/* Cursor back, attributes reset, leave the alternate screen. */
		fputs("\033[?25h\033[0m\033[?1049l", stdout);
		fflush(stdout);
		screen_on = false;
	}
	if (tio_saved) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
		tio_saved = false;
	}
}

static void term_enter(bool keys)
{
	if (keys && !tcgetattr(STDIN_FILENO, &saved_tio)) {
		struct termios raw = saved_tio;

		/* No line buffering, no echo; ISIG stays on so Ctrl-C and Ctrl-Z are signals
		 * (handled below), and output post-processing stays as it was. */
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		if (!tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw))
			tio_saved = true;
	}
	fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);
	fflush(stdout);
	screen_on = true;
}

static void on_stop_sig(int sig)
{
	got_stop = sig;
}

static void on_winch(int sig)
{
	(void)sig;
	got_winch = 1;
}

static void on_tstp(int sig)
{
	(void)sig;
	got_tstp = 1;
}

/* A positive number in the environment variable @name, else 0. */
static int env_size(const char *name)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtol(v, &end, 10);
	return !errno && !*end && n > 0 && n <= 10000 ? (int)n : 0;
}

/* The frame's size: COLUMNS and LINES when set (as procps top; tests use them), else on a
 * terminal its size (80x24 when it will not say), else no limit: frames through a pipe or
 * into a file keep every row and column. A terminal's last row stays free: a full screen
 * would scroll. */
static void frame_size(bool tty, struct frame *fr)
{
	struct winsize ws;

	fr->cols = env_size("COLUMNS");
	fr->lines = env_size("LINES");
	if (tty && (!fr->cols || !fr->lines)) {
		int c = 80, r = 24;

		if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col && ws.ws_row) {
			c = ws.ws_col;
			r = ws.ws_row;
		}
		if (!fr->cols)
			fr->cols = c;
		if (!fr->lines)
			fr->lines = r;
	}
	if (tty && fr->lines > 1)
		fr->lines--;
}

/* Wait up to @secs for a key; returns 'q' to quit, 'r' to redraw now, 0 otherwise. */
static int wait_key(double secs, bool keys)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	int ms = secs > 0 ? (int)(secs * 1000) : 0;
	char k[16];
	ssize_t n, i;

	if (!keys) {
		struct timespec ts = { .tv_sec = (time_t)secs,
				       .tv_nsec = (long)((secs - (double)(time_t)secs) * 1e9) };

		if (secs > 0)
			nanosleep(&ts, NULL); /* a signal cuts it short */
		return 0;
	}
	if (poll(&pfd, 1, ms) <= 0)
		return 0;
	n = read(STDIN_FILENO, k, sizeof(k));
	if (n == 0)
		return 'q'; /* the terminal went away */
	for (i = 0; i < n; i++) {
		if (k[i] == 'q' || k[i] == 'Q' || k[i] == 3 /* Ctrl-C without ISIG */)
			return 'q';
		if (k[i] == ' ' || k[i] == 'r' || k[i] == 12 /* Ctrl-L */)
			return 'r';
	}
	return 0;
}

/* ---- the loop ----------------------------------------------------------------------------- */

int sluicectl_top(const struct top_opts *o)
{
	struct top t = { .o = o };
	struct top_opts opts = *o;
	struct sigaction sa = { 0 };
	bool tty, keys;
	long limit;
	int ret = 0;
	double next;

	if (opts.interval <= 0)
		opts.interval = 1;
	if (opts.interval < 0.1)
		opts.interval = 0.1;
	t.o = &opts;
	/* --json is one snapshot unless -n asks for more. */
	limit = opts.once ? 1 : opts.count > 0 ? opts.count : opts.json ? 1 : 0;
	tty = !opts.json && !opts.once && isatty(STDOUT_FILENO);
	keys = tty && isatty(STDIN_FILENO);
	if (gethostname(t.node, sizeof(t.node)))
		snprintf(t.node, sizeof(t.node), "?");
	t.node[sizeof(t.node) - 1] = '\0';
	metrics_addr(opts.config, t.metrics, sizeof(t.metrics));
	sl_maps_init(&t.maps);
	t.cur = calloc(1, sizeof(*t.cur));
	t.prev = calloc(1, sizeof(*t.prev));
	if (!t.cur || !t.prev) {
		fprintf(stderr, "sluicectl: out of memory\n");
		free(t.cur);
		free(t.prev);
		return 1;
	}

	/* The first sample: the daemon must be there. It is also the base of the first
	 * frame's rates, so the first frame comes one interval later. */
	if (take_sample(&t)) {
		fprintf(stderr, "sluicectl: %s\n", t.lost);
		ret = 1;
		goto out;
	}
	{
		struct sample *sw = t.prev;

		t.prev = t.cur;
		t.cur = sw;
	}

	sa.sa_handler = on_stop_sig;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* A reader that goes away (`| head`) or a daemon closing early: an error, not death. */
	signal(SIGPIPE, SIG_IGN);
	if (tty) {
		sa.sa_handler = on_winch;
		sigaction(SIGWINCH, &sa, NULL);
		sa.sa_handler = on_tstp;
		sigaction(SIGTSTP, &sa, NULL);
		atexit(term_restore);
		term_enter(keys);
		printf("sluicectl top: sampling for %.1fs...\033[K\r\n", opts.interval);
		fflush(stdout);
	}
	next = mono_now() + opts.interval;
	while (!got_stop) {
		double left = next - mono_now();
		int k;

		if (got_tstp) {
			/* Ctrl-Z: give the terminal back, stop, and take it again on fg. */
			got_tstp = 0;
			term_restore();
			signal(SIGTSTP, SIG_DFL);
			raise(SIGTSTP);
			sa.sa_handler = on_tstp;
			sigaction(SIGTSTP, &sa, NULL);
			term_enter(keys);
			got_winch = 1;
		}
		if (left > 0) {
			k = wait_key(left, keys);
			if (k == 'q')
				break;
			if (k != 'r' && !got_winch && mono_now() < next)
				continue;
		}
		got_winch = 0;
		if (take_sample(&t)) {
			ret = 1;
			break;
		}
		compute_rates(&t);
		if (opts.json) {
			render_json(&t, stdout);
		} else {
			struct frame fr = { .tty = tty, .f = stdout };

			frame_size(tty, &fr);
			if (tty)
				fputs("\033[H", stdout);
			render(&t, &fr);
			if (tty)
				fputs("\033[J", stdout);
			else
				fputs("\n", stdout);
		}
		if (fflush(stdout) == EOF)
			break; /* nobody reads us any more */
		t.frames++;
		if (limit > 0 && (long)t.frames >= limit)
			break;
		{
			struct sample *sw = t.prev;

			t.prev = t.cur;
			t.cur = sw;
		}
		next = mono_now() + opts.interval;
	}
	if (tty)
		term_restore();
	if (ret)
		fprintf(stderr, "sluicectl: %s\n", t.lost);
out:
	if (t.maps_open)
		sl_maps_close(&t.maps);
	free(t.cur);
	free(t.prev);
	return ret;
}
