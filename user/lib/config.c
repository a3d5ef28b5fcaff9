// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Config loading and validation (see config.h). Every problem is reported with the file and
 * line of the setting that caused it; unknown keys are errors, because a misspelt "rat = 5"
 * that silently falls back to a default is how limits end up wrong in production.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <math.h>
#include <net/if.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <unistd.h>

#include <sodium.h>

#include "audit.h"
#include "budget.h"
#include "config.h"
#include "log.h"
#include "store.h"

/* Lines of "file:line: reason", as many as fit; @n counts them all. */
struct msgs {
	char *buf;
	size_t len;
	size_t used;
	int n;
};

struct vctx {
	const char *file;
	struct msgs err;
	struct msgs warn; /* the loaded config's warnings: it still loads */
};

static void append(struct msgs *m, const char *file, int line, const char *tag,
		   const char *fmt, va_list ap)
{
	int n;

	m->n++;
	if (!m->buf || m->used + 1 >= m->len)
		return;
	if (line > 0)
		n = snprintf(m->buf + m->used, m->len - m->used, "%s:%d: %s", file, line, tag);
	else
		n = snprintf(m->buf + m->used, m->len - m->used, "%s: %s", file, tag);
	if (n > 0)
		m->used = m->used + (size_t)n < m->len ? m->used + (size_t)n : m->len - 1;
	n = vsnprintf(m->buf + m->used, m->len - m->used, fmt, ap);
	if (n > 0)
		m->used = m->used + (size_t)n < m->len ? m->used + (size_t)n : m->len - 1;
	if (m->used + 1 < m->len) {
		m->buf[m->used++] = '\n';
		m->buf[m->used] = '\0';
	}
}

/* A problem at @s (its file and line; the file's name when NULL): the load fails. */
__attribute__((format(printf, 3, 4)))
static void bad(struct vctx *x, const config_setting_t *s, const char *fmt, ...)
{
	const char *file = s ? config_setting_source_file(s) : NULL;
	int line = s ? (int)config_setting_source_line(s) : 0;
	va_list ap;

	va_start(ap, fmt);
	append(&x->err, file ? file : x->file, line, "", fmt, ap);
	va_end(ap);
}

/* Something at @s that is valid but likely a mistake: the load goes on. */
__attribute__((format(printf, 3, 4)))
static void warn_at(struct vctx *x, const config_setting_t *s, const char *fmt, ...)
{
	const char *file = s ? config_setting_source_file(s) : NULL;
	int line = s ? (int)config_setting_source_line(s) : 0;
	va_list ap;

	va_start(ap, fmt);
	append(&x->warn, file ? file : x->file, line, "warning: ", fmt, ap);
	va_end(ap);
}

/* Reject keys this version does not know, naming the ones it does. */
static void check_keys(struct vctx *x, const config_setting_t *group, const char *where,
		       const char *const *known)
{
	int i, n = config_setting_length(group);

	for (i = 0; i < n; i++) {
		const config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
		const char *name = config_setting_name(s);
		const char *const *k;
		char list[256] = "";
		size_t used = 0;

		if (!name)
			continue;
		for (k = known; *k; k++)
			if (!strcmp(*k, name))
				break;
		if (*k)
			continue;
		for (k = known; *k; k++) {
			int w = snprintf(list + used, sizeof(list) - used, "%s%s",
					 k == known ? "" : ", ", *k);
			if (w < 0 || (size_t)w >= sizeof(list) - used)
				break;
			used += (size_t)w;
		}
		bad(x, s, "unknown key '%s' in %s (known: %s)", name, where, list);
	}
}

static bool is_number(const config_setting_t *s)
{
	int t = config_setting_type(s);

	return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64 || t == CONFIG_TYPE_FLOAT;
}

static double num_of(const config_setting_t *s)
{
	switch (config_setting_type(s)) {
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:
		return (double)config_setting_get_int64(s);
	default:
		return config_setting_get_float(s);
	}
}

/* Read number @name of @g into *@out; @required says whether absence is an error.
 * Returns 1 when a valid value was read. */
static int get_num(struct vctx *x, const config_setting_t *g, const char *where,
		   const char *name, bool required, double lo, double hi, double *out)
{
	const config_setting_t *s = config_setting_get_member(g, name);
	double v;

	if (!s) {
		if (required)
			bad(x, g, "%s: '%s' is required", where, name);
		return 0;
	}
	if (!is_number(s)) {
		bad(x, s, "%s.%s: expected a number", where, name);
		return 0;
	}
	v = num_of(s);
	if (!(v >= lo && v <= hi)) {
		bad(x, s, "%s.%s: %g is out of range %g..%g", where, name, v, lo, hi);
		return 0;
	}
	*out = v;
	return 1;
}

static int get_int(struct vctx *x, const config_setting_t *g, const char *where,
		   const char *name, bool required, long lo, long hi, long *out)
{
	const config_setting_t *s = config_setting_get_member(g, name);
	long long v;

	if (!s) {
		if (required)
			bad(x, g, "%s: '%s' is required", where, name);
		return 0;
	}
	if (config_setting_type(s) != CONFIG_TYPE_INT &&
	    config_setting_type(s) != CONFIG_TYPE_INT64) {
		bad(x, s, "%s.%s: expected an integer", where, name);
		return 0;
	}
	v = config_setting_get_int64(s);
	if (v < lo || v > hi) {
		bad(x, s, "%s.%s: %lld is out of range %ld..%ld", where, name, v, lo, hi);
		return 0;
	}
	*out = (long)v;
	return 1;
}

/* Read string @name; returns the string or NULL (absent, or not a string: reported). */
static const char *get_str(struct vctx *x, const config_setting_t *g, const char *where,
			   const char *name, bool required)
{
	const config_setting_t *s = config_setting_get_member(g, name);

	if (!s) {
		if (required)
			bad(x, g, "%s: '%s' is required", where, name);
		return NULL;
	}
	if (config_setting_type(s) != CONFIG_TYPE_STRING) {
		bad(x, s, "%s.%s: expected a string", where, name);
		return NULL;
	}
	return config_setting_get_string(s);
}

/* Map a string to one of @names (NULL-terminated); -1 after reporting when it is none. */
static int get_enum(struct vctx *x, const config_setting_t *g, const char *where,
		    const char *name, const char *const *names, int def)
{
	const char *v = get_str(x, g, where, name, false);
	const char *const *n;

	if (!v)
		return def;
	for (n = names; *n; n++)
		if (!strcmp(*n, v))
			return (int)(n - names);
	bad(x, config_setting_get_member(g, name), "%s.%s: '%s' is not one of the allowed values",
	    where, name, v);
	return -1;
}

static const char *const mode_names[] = { "enforce", "monitor", NULL };
static const char *const action_names[] = { "pass", "drop", "reply", NULL };
static const char *const front_names[] = { "syn", "stateless", NULL };
static const char *const proto_names[] = { "http", "tls", NULL };
static const char *const pass_drop[] = { "pass", "drop", NULL };
static const char *const xdp_mode_names[] = { "native", "generic", NULL };
static const char *const level_names[] = { "error", "warn", "info", "debug", NULL };

const char *sl_mode_name(uint8_t mode)
{
	return mode < 2 ? mode_names[mode] : "?";
}

const char *sl_action_name(uint8_t action)
{
	return action < 3 ? action_names[action] : "?";
}

const char *sl_front_name(uint8_t front)
{
	return front < 2 ? front_names[front] : "?";
}

static const char *const method_names[] = { "*", "GET", "POST", "PUT", "DELETE", "PATCH",
					     "HEAD", "OPTIONS", NULL };

int sl_method_parse(const char *m)
{
	int i;

	for (i = 0; method_names[i]; i++)
		if (!strcmp(m, method_names[i]))
			return i;
	return -1;
}

const char *sl_method_name(uint8_t m)
{
	return m < SL_M__MAX ? method_names[m] : "?";
}

int sl_config_tenant_by_host(const struct sl_config *c, const char *host)
{
	int i, j;

	for (i = 0; i < c->n_tenants; i++)
		for (j = 0; j < c->tenants[i].n_hosts; j++)
			if (!strcmp(c->tenants[i].hosts[j], host))
				return i;
	return c->default_tenant;
}

int sl_config_route(const struct sl_config *c, uint8_t method, const char *path)
{
	size_t best_len = 0;
	int i, best = -1;

	for (i = 0; i < c->n_routes; i++) {
		const struct sl_route_cfg *r = &c->routes[i];
		size_t len = strlen(r->path);

		if (r->method != SL_M_OTHER && r->method != method)
			continue;
		if (strncmp(path, r->path, len))
			continue;
		/* Longest prefix wins; at equal length an exact method beats "any". */
		if (best < 0 || len > best_len ||
		    (len == best_len && r->method != SL_M_OTHER &&
		     c->routes[best].method == SL_M_OTHER)) {
			best = i;
			best_len = len;
		}
	}
	return best;
}

/*
 * The counters on by default: per-key ones fail open (limit / nodes in process) and keep at
 * most a million live keys per tenant; tenant-wide ones fail closed, they protect the
 * platform. The endpoints beyond /login (docs/endpoints.md) key pre-authentication limits
 * on composites with the source prefix and count per-account caps whatever the outcome.
 */
static const struct counter_default {
	int id;
	double rate, burst;
	bool tenant_wide;
} counter_defaults[] = {
	/* Five failed passwords per (account, prefix), one back every three minutes. */
	{ SL_CTR_LOGIN_FAILURES, 1.0 / 180, 5, false },
	/* Successes are not suspicious; this only catches a token mill: 30, then 1 a second. */
	{ SL_CTR_LOGIN_SUCCESSES, 1, 30, false },
	{ SL_CTR_TOKEN_FAILURES, 1.0 / 60, 10, false },
	{ SL_CTR_TOKEN_CLIENT, 5, 50, false },
	{ SL_CTR_TENANT_TOKENS, 200, 400, true },
	/* Five codes tried and three sent per account per quarter hour, whatever the code. */
	{ SL_CTR_MFA_ATTEMPTS, 5.0 / 900, 5, false },
	{ SL_CTR_MFA_SENDS, 3.0 / 900, 3, false },
	{ SL_CTR_OUTBOUND, 10, 100, true },
	{ SL_CTR_RESET_ACCOUNT, 3.0 / 3600, 3, false },
	{ SL_CTR_RESET_PREFIX, 20.0 / 3600, 20, false },
	{ SL_CTR_RESET_TENANT, 5, 100, true },
	{ SL_CTR_REGISTER_ACCOUNT, 3.0 / 3600, 3, false },
	{ SL_CTR_REGISTER_PREFIX, 10.0 / 3600, 10, false },
	{ SL_CTR_REGISTER_TENANT, 2, 50, true },
	{ SL_CTR_MAGIC_PREFIX, 20.0 / 600, 20, false },
	/* A person signs in a few times a day; a script signing in every second is a bug. */
	{ SL_CTR_USER, 1.0 / 60, 20, false },
	/* One account's failures from one allocation (/24, /48), however many /32s or /64s it
	 * spreads them over: twice one key's burst, one key's refill. */
	{ SL_CTR_LOGIN_PARENT, 1.0 / 180, 10, false },
};

void sl_config_defaults(struct sl_config *c)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	c->state_entries = 1u << 20;
	c->new_key_credit = 0.5;
	/* Both touch only traffic to protected ports whose header the edge cannot judge. */
	c->malformed_action = SL_ACT_DROP;
	c->fragment_action = SL_ACT_DROP;
	c->xdp_mode = SL_XDP_NATIVE;
	snprintf(c->pin_path, sizeof(c->pin_path), "%s", SL_DEFAULT_PIN_PATH);
	snprintf(c->ctl_socket, sizeof(c->ctl_socket), "%s", SL_DEFAULT_CTL_SOCKET);
	c->log_level = LOG_LVL_INFO;
	c->audit.rate = 50;
	c->audit.burst = 200;
	c->unknown_class = -1;
	c->retry_after[0] = 1;
	c->retry_after[1] = 5;
	c->retry_after[2] = 30;
	c->retry_after[3] = 120;
	c->n_retry = 4;
	c->streak_decay_s = 60;
	c->event_sample = 100;
	c->cookie_rotate_s = 3600;
	c->mss4 = 1460;
	c->mss6 = 1440;
	c->default_tenant = -1;
	c->gw.target_wait_ms = 200;
	c->gw.lifo_after_ms = 100;
	c->gw.codel_interval_ms = 100;
	c->gw.default_deadline_ms = 3000;
	c->gw.max_deadline_ms = 10000;
	c->gw.m_cost_kib = 65536;
	c->gw.t_cost = 3;
	c->gw.parallelism = 1;
	c->gw.memory_budget_mib = 512;
	c->gw.admission = 1;
	c->gw.max_body = 16384;
	c->gw.max_headers = 8192;
	c->gw.max_depth = 1024;
	c->gw.reject_floor_ms = 250;
	c->gw.login_uniform = 1;
	c->gw.up.adaptive = 1;
	c->gw.max_held = 1024;
	c->gw.max_connections = 4096;
	c->gw.max_requests_conn = 100;
	c->gw.request_timeout_ms = 10000;
	c->gw.drain_ms = 5000;
	c->gw.up.concurrency = 64;
	c->gw.up.timeout_ms = 10000;
	c->gw.up.max_response = 1 << 20;
	c->gw.up.down_ms = 500;
	c->gw.token_ttl_s = 3600;
	c->redis.timeout_ms = 5;
	c->redis.breaker_failures = 3;
	c->redis.breaker_open_ms = 1000;
	snprintf(c->redis.key_prefix, sizeof(c->redis.key_prefix), "sluice");
	if (gethostname(c->cluster.node, sizeof(c->cluster.node) - 1))
		snprintf(c->cluster.node, sizeof(c->cluster.node), "node");
	c->cluster.nodes = 1;
	c->cluster.lease_interval_ms = 200;
	c->cluster.demand_window_ms = 1000;
	c->cluster.lease_floor = 0.05;
	for (i = 0; i < sizeof(counter_defaults) / sizeof(counter_defaults[0]); i++) {
		const struct counter_default *d = &counter_defaults[i];

		c->counters[d->id] = (struct sl_counter_cfg){
			.enabled = 1, .rate = d->rate, .burst = d->burst, .fail = d->tenant_wide,
			.max_keys = d->tenant_wide ? 0 : 1000000 };
	}
	c->counters[SL_CTR_TENANT_LOGINS].fail = 1; /* off until it is given a rate */
	c->gw.refresh_ttl_s = 14 * 86400;
	c->gw.otp_ttl_s = 300;
	c->gw.magic_ttl_s = 900;
	snprintf(c->gw.delivery, sizeof(c->gw.delivery), "log");
	c->counter_v4_prefix = 32;
	c->counter_v6_prefix = 64;
	c->counter_v4_parent = 24;
	c->counter_v6_parent = 48;
	c->stream.enabled = 1;
	c->stream.window_s = 600;
	c->stream.queue = 65536;
	c->stream.prefix_v4 = 24;
	c->stream.prefix_v6 = 48;
	c->stream.max_keys = 200000;
	c->stream.redis_max_keys = 100000;
	c->stream.tail_per_day = 100;
	c->stream.min_attempts = 200;
	c->stream.baseline_s = 3600;
	c->stream.records = 4096;
	c->stream.ladder_delay_ms = 2000;
	c->stream.det[SL_DET_PREFIX_ACCOUNTS] = (struct sl_detector_cfg){
		.enabled = 1, .action = SL_DET_BLOCK, .threshold = 50, .factor = 1, .ttl_s = 900 };
	c->stream.det[SL_DET_ASN_ACCOUNTS] = (struct sl_detector_cfg){
		.enabled = 1, .action = SL_DET_TIGHTEN, .threshold = 500, .factor = 0.1,
		.ttl_s = 900 };
	c->stream.det[SL_DET_ACCOUNT_SOURCES] = (struct sl_detector_cfg){
		.enabled = 1, .action = SL_DET_LADDER, .threshold = 20, .factor = 1, .ttl_s = 900 };
	c->stream.det[SL_DET_PASSWORD_ACCOUNTS] = (struct sl_detector_cfg){
		.enabled = 1, .action = SL_DET_STEP_UP, .threshold = 10, .factor = 1,
		.ttl_s = 3600 };
	c->stream.det[SL_DET_TENANT_RATIO] = (struct sl_detector_cfg){
		.enabled = 1, .action = SL_DET_ALERT, .threshold = 3, .factor = 1, .ttl_s = 900 };
	c->stream.det[SL_DET_ACCOUNT_KEYS] = (struct sl_detector_cfg){
		.enabled = 1, .action = SL_DET_STEP_UP, .threshold = 5, .factor = 1, .ttl_s = 900 };
}

const char *sl_detector_name(int id)
{
	static const char *const n[SL_DET_N] = { "prefix_accounts", "asn_accounts",
		"account_sources", "password_accounts", "tenant_failure_ratio", "account_keys" };

	return id >= 0 && id < SL_DET_N ? n[id] : "?";
}

const char *sl_det_action_name(uint8_t a)
{
	static const char *const n[] = { "block", "tighten", "ladder", "step_up", "alert" };

	return a < sizeof(n) / sizeof(n[0]) ? n[a] : "?";
}

const char *sl_counter_name(int id)
{
	static const char *const n[SL_CTR_N] = { "login_failures", "login_successes",
		"tenant_logins", "token_failures", "token_client", "tenant_tokens", "mfa_attempts",
		"mfa_sends", "outbound", "reset_account", "reset_prefix", "reset_tenant",
		"register_account", "register_prefix", "register_tenant", "magic_prefix", "user",
		"login_parent" };

	return id >= 0 && id < SL_CTR_N ? n[id] : "?";
}

int sl_config_class(const struct sl_config *c, const char *name)
{
	int i;

	for (i = 0; i < c->n_classes; i++)
		if (!strcmp(c->classes[i].name, name))
			return i;
	return -1;
}

uint32_t sl_state_slots(uint32_t state_entries)
{
	uint32_t n = 1024;

	while (n < state_entries && n < (1u << 26))
		n <<= 1;
	return n;
}

uint32_t sl_bucket_sets(uint32_t state_entries)
{
	return sl_state_slots(state_entries) / SL_BUCKET_WAYS;
}

static void resolve_path(char *dst, size_t n, const char *base, const char *p)
{
	char cwd[PATH_MAX];

	if (p[0] == '/' || !*p) {
		snprintf(dst, n, "%s", p);
		return;
	}
	if (!base)
		base = getcwd(cwd, sizeof(cwd)) ? cwd : ".";
	snprintf(dst, n, "%s/%s", base, p);
}

static void load_ports(struct vctx *x, const config_setting_t *edge, struct sl_config *c)
{
	static const char *const keys[] = { "port", "front", "action", "cost", "protocol",
		"unreadable_cost", NULL };
	const config_setting_t *ports = config_setting_get_member(edge, "ports");
	int i, j, n;

	if (!ports) {
		bad(x, edge, "edge: 'ports' is required (the TCP ports sluice protects)");
		return;
	}
	if (!config_setting_is_list(ports) && !config_setting_is_array(ports)) {
		bad(x, ports, "edge.ports: expected a list ( { port = 80; ... }, ... )");
		return;
	}
	n = config_setting_length(ports);
	if (n == 0)
		bad(x, ports, "edge.ports: at least one port is required");
	if (n > SL_MAX_PORTS) {
		bad(x, ports, "edge.ports: at most %d ports (got %d)", SL_MAX_PORTS, n);
		n = SL_MAX_PORTS;
	}
	for (i = 0; i < n; i++) {
		const config_setting_t *p = config_setting_get_elem(ports, (unsigned)i);
		struct sl_port_cfg *pc = &c->ports[c->n_ports];
		char where[32];
		long v;
		int e;

		snprintf(where, sizeof(where), "edge.ports[%d]", i);
		if (!config_setting_is_group(p)) {
			bad(x, p, "%s: expected a group { port = ...; }", where);
			continue;
		}
		check_keys(x, p, where, keys);
		memset(pc, 0, sizeof(*pc));
		if (get_int(x, p, where, "port", true, 1, 65535, &v))
			pc->port = (uint16_t)v;
		pc->cost = 1;
		if (get_int(x, p, where, "cost", false, 1, SL_MAX_PORT_COST, &v))
			pc->cost = (uint32_t)v;
		if (get_int(x, p, where, "unreadable_cost", false, 1, SL_MAX_PORT_COST, &v)) {
			pc->unreadable_cost = (uint32_t)v;
			pc->unreadable_set = true;
		}
		/* Verify, then charge: the cookie handshake is how every protected port starts
		 * unless the config asks for the kernel's own (docs/design.md, "Fronts"). */
		e = get_enum(x, p, where, "front", front_names, SL_FRONT_STATELESS);
		if (e >= 0)
			pc->front = (uint8_t)e;
		e = get_enum(x, p, where, "action", action_names, SL_ACT_DROP);
		if (e >= 0)
			pc->action = (uint8_t)e;
		if (e == SL_ACT_PASS)
			bad(x, config_setting_get_member(p, "action"),
			    "%s.action: a protected port sheds with \"drop\"; to let everything "
			    "through, set the classes' mode = \"monitor\"", where);
		e = get_enum(x, p, where, "protocol", proto_names, SL_PROTO_HTTP);
		if (e >= 0)
			pc->proto = (uint8_t)e;
		if (pc->proto == SL_PROTO_TLS && pc->action == SL_ACT_REPLY)
			bad(x, config_setting_get_member(p, "action"),
			    "%s.action: a TLS port cannot be answered with an HTTP 429: use \"drop\"",
			    where);
		for (j = 0; j < c->n_ports; j++)
			if (pc->port && c->ports[j].port == pc->port)
				bad(x, p, "%s: port %u is listed twice", where, pc->port);
		c->n_ports++;
	}
}

/* The reply action's knobs: Retry-After ladder, streak decay, events, cookies, MSS. */
static void load_replies(struct vctx *x, const config_setting_t *edge, struct sl_config *c)
{
	const config_setting_t *ra = config_setting_get_member(edge, "retry_after");
	long v;

	if (ra) {
		int i, n = config_setting_length(ra);

		if (!config_setting_is_array(ra) && !config_setting_is_list(ra)) {
			bad(x, ra, "edge.retry_after: expected an array of seconds [1, 5, 30, 120]");
		} else if (n < 1 || n > SL_MAX_RETRY_LEVELS) {
			bad(x, ra, "edge.retry_after: 1..%d levels (got %d)", SL_MAX_RETRY_LEVELS, n);
		} else {
			c->n_retry = 0;
			for (i = 0; i < n; i++) {
				const config_setting_t *it = config_setting_get_elem(ra, (unsigned)i);
				long long s = config_setting_get_int64(it);

				if (config_setting_type(it) != CONFIG_TYPE_INT &&
				    config_setting_type(it) != CONFIG_TYPE_INT64) {
					bad(x, it, "edge.retry_after[%d]: expected whole seconds", i);
				} else if (s < 1 || s > 86400) {
					bad(x, it, "edge.retry_after[%d]: %lld is out of range 1..86400",
					    i, s);
				} else if (c->n_retry && s < c->retry_after[c->n_retry - 1]) {
					bad(x, it, "edge.retry_after[%d]: %lld is below the level before "
					    "it: the ladder must not descend", i, s);
				} else {
					c->retry_after[c->n_retry++] = (uint32_t)s;
				}
			}
		}
	}
	if (get_int(x, edge, "edge", "streak_decay", false, 1, 86400, &v))
		c->streak_decay_s = (uint32_t)v;
	if (get_int(x, edge, "edge", "event_sample", false, 0, 1000000, &v))
		c->event_sample = (uint32_t)v;
	if (get_int(x, edge, "edge", "cookie_rotate", false, 60, 7 * 86400, &v))
		c->cookie_rotate_s = (uint32_t)v;
	if (get_int(x, edge, "edge", "mss_v4", false, 536, 9000, &v))
		c->mss4 = (uint16_t)v;
	if (get_int(x, edge, "edge", "mss_v6", false, 1220, 9000, &v))
		c->mss6 = (uint16_t)v;
}

static void load_edge(struct vctx *x, const config_setting_t *root, struct sl_config *c,
		      const char *base)
{
	static const char *const keys[] = { "interfaces", "xdp_mode", "ports", "state_entries",
		"asn_table", "new_key_credit", "malformed", "fragments", "pin_path", "retry_after",
		"streak_decay", "event_sample", "cookie_rotate", "mss_v4", "mss_v6", NULL };
	const config_setting_t *edge = config_setting_get_member(root, "edge");
	const config_setting_t *ifs;
	const char *s;
	double d;
	long v;
	int i, e;

	if (!edge)
		return; /* gateway alone */
	c->has_edge = 1;
	if (!config_setting_is_group(edge)) {
		bad(x, edge, "edge: expected a group { ... }");
		return;
	}
	check_keys(x, edge, "edge", keys);
	snprintf(c->src.edge_file, sizeof(c->src.edge_file), "%s",
		 config_setting_source_file(edge) ? config_setting_source_file(edge) : x->file);

	ifs = config_setting_get_member(edge, "interfaces");
	if (!ifs) {
		bad(x, edge, "edge: 'interfaces' is required, e.g. interfaces = [\"eth0\"];");
	} else if (!config_setting_is_array(ifs) && !config_setting_is_list(ifs)) {
		bad(x, ifs, "edge.interfaces: expected an array of names [\"eth0\", ...]");
	} else {
		int n = config_setting_length(ifs);

		if (n == 0)
			bad(x, ifs, "edge.interfaces: at least one interface is required");
		if (n > SL_MAX_IFACES)
			bad(x, ifs, "edge.interfaces: at most %d interfaces", SL_MAX_IFACES);
		for (i = 0; i < n && i < SL_MAX_IFACES; i++) {
			const config_setting_t *it = config_setting_get_elem(ifs, (unsigned)i);
			const char *name = config_setting_get_string(it);
			int j;

			if (!name || !*name || strlen(name) >= IF_NAMESIZE) {
				bad(x, it, "edge.interfaces[%d]: expected an interface name of 1..%d "
				    "characters", i, IF_NAMESIZE - 1);
				continue;
			}
			for (j = 0; j < c->n_ifaces; j++)
				if (!strcmp(c->ifaces[j], name))
					bad(x, it, "edge.interfaces: '%s' is listed twice", name);
			c->src.iface_line[c->n_ifaces] = (int)config_setting_source_line(it);
			snprintf(c->ifaces[c->n_ifaces++], IF_NAMESIZE, "%s", name);
		}
	}

	e = get_enum(x, edge, "edge", "xdp_mode", xdp_mode_names, SL_XDP_NATIVE);
	if (e >= 0)
		c->xdp_mode = (uint8_t)e;
	load_ports(x, edge, c);
	if (get_int(x, edge, "edge", "state_entries", false, SL_MIN_STATE_ENTRIES,
		    SL_MAX_STATE_ENTRIES, &v))
		c->state_entries = (uint32_t)v;
	s = get_str(x, edge, "edge", "asn_table", false);
	if (s) {
		resolve_path(c->asn_table, sizeof(c->asn_table), base, s);
		c->src.asn_table_line = (int)config_setting_source_line(
			config_setting_get_member(edge, "asn_table"));
	}
	if (get_num(x, edge, "edge", "new_key_credit", false, 0.0, 1.0, &d)) {
		if (d < 0.001)
			bad(x, config_setting_get_member(edge, "new_key_credit"),
			    "edge.new_key_credit: must be above 0 (a new key needs room for one "
			    "request)");
		else
			c->new_key_credit = d;
	}
	e = get_enum(x, edge, "edge", "malformed", pass_drop, SL_ACT_DROP);
	if (e >= 0)
		c->malformed_action = (uint8_t)e;
	e = get_enum(x, edge, "edge", "fragments", pass_drop, SL_ACT_DROP);
	if (e >= 0)
		c->fragment_action = (uint8_t)e;
	load_replies(x, edge, c);
	s = get_str(x, edge, "edge", "pin_path", false);
	if (s) {
		if (s[0] != '/')
			bad(x, config_setting_get_member(edge, "pin_path"),
			    "edge.pin_path: must be an absolute path on a bpf filesystem");
		else
			snprintf(c->pin_path, sizeof(c->pin_path), "%s", s);
		c->src.pin_path_line = (int)config_setting_source_line(
			config_setting_get_member(edge, "pin_path"));
	}
}

static bool valid_class_name(const char *n)
{
	size_t i, len = strlen(n);

	if (!len || len >= SL_CLASS_NAME_LEN)
		return false;
	for (i = 0; i < len; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') ||
		      n[i] == '_' || n[i] == '-'))
			return false;
	return true;
}

uint32_t sl_edge_max_cost(const struct sl_config *c)
{
	struct sl_charge ch;

	sl_edge_dearest(c, &ch);
	return ch.cost;
}

/*
 * A stateless HTTP port's first request that the edge cannot read whole (split, fragmented,
 * past the scan window) is charged the port's most expensive route unless the file says
 * otherwise: nothing the client can shape lowers its price. TLS names no route: its cost.
 */
static void set_unreadable(struct sl_config *c)
{
	int i, j;

	for (i = 0; i < c->n_ports; i++) {
		struct sl_port_cfg *p = &c->ports[i];
		uint32_t m = p->cost;

		if (p->unreadable_set)
			continue;
		if (sl_port_charges_routes(p))
			for (j = 0; j < c->n_routes; j++)
				if (sl_route_charge(&c->routes[j]) > m)
					m = sl_route_charge(&c->routes[j]);
		p->unreadable_cost = m > SL_MAX_PORT_COST ? SL_MAX_PORT_COST : m;
	}
}

/*
 * A burst must hold the most the edge charges one connection, else nothing that costs that
 * much could ever pass. The error names what sets that most (a route and its port, or a
 * port's cost or unreadable_cost): that is the other number an operator can change.
 */
static void check_burst(struct vctx *x, const config_setting_t *s, const char *where,
			const char *key, double burst, const struct sl_config *c)
{
	struct sl_charge ch;
	char what[160];

	sl_edge_dearest(c, &ch);
	if (burst >= ch.cost)
		return;
	bad(x, s, "%s.%s: %g is below the most the edge charges one connection, %u for %s: no "
	    "such request could ever pass; raise it to %u or more, or lower that cost (see "
	    "sluice.conf(5) on cost units)", where, key, burst, ch.cost,
	    sl_charge_str(c, &ch, what, sizeof(what)), ch.cost);
}

/*
 * A rate that refills less than one of a port's dearest requests a minute is valid, but it
 * is most likely a number meant for a SYN, or a burst's, in the wrong key: warn, naming each
 * port it starves, what it admits there and of what. @note follows the rate (a default's
 * origin). Ports that read alike are merged ("on ports 80, 8080").
 */
static void check_rate(struct vctx *x, const config_setting_t *s, const char *where,
		       const char *key, double rate, const char *note, const struct sl_config *c)
{
	char piece[SL_MAX_PORTS][192], msg[2048], num[32], noun[96];
	int i, k, np = c->n_ports < SL_MAX_PORTS ? c->n_ports : SL_MAX_PORTS, n = 0;
	size_t used = 0;

	if (!(rate > 0))
		return;
	for (i = 0; i < np; i++) {
		struct sl_charge ch;

		piece[i][0] = '\0';
		sl_port_dearest(c, i, &ch);
		if (rate * 60.0 >= ch.cost)
			continue;
		snprintf(piece[i], sizeof(piece[i]), "%s %s (%u) per minute",
			 sl_fmt_count(rate * 60.0 / ch.cost, num, sizeof(num)),
			 sl_charge_noun(c, &ch, noun, sizeof(noun)), ch.cost);
	}
	msg[0] = '\0';
	for (i = 0; i < np; i++) {
		int same = 0, w;

		if (!piece[i][0])
			continue;
		for (k = 0; k < i; k++)
			if (!strcmp(piece[k], piece[i]))
				break;
		if (k < i)
			continue;
		for (k = i + 1; k < np; k++)
			same += !strcmp(piece[k], piece[i]);
		w = snprintf(msg + used, sizeof(msg) - used, "%s%s on %s %u", n++ ? "; " : "",
			     piece[i], same ? "ports" : "port", c->ports[i].port);
		used = w > 0 && used + (size_t)w < sizeof(msg) ? used + (size_t)w : sizeof(msg) - 1;
		for (k = i + 1; k < np; k++)
			if (!strcmp(piece[k], piece[i])) {
				w = snprintf(msg + used, sizeof(msg) - used, ", %u", c->ports[k].port);
				used = w > 0 && used + (size_t)w < sizeof(msg) ? used + (size_t)w :
										sizeof(msg) - 1;
			}
	}
	if (n)
		warn_at(x, s, "%s.%s: %g cost units/s%s admits %s (less than one a minute)",
			where, key, rate, note, msg);
}

static void load_classes(struct vctx *x, const config_setting_t *root, struct sl_config *c)
{
	static const char *const keys[] = { "name", "v4_prefix", "v6_prefix", "v4_parent",
		"v6_parent", "rate", "burst", "parent_rate", "parent_burst", "mode", NULL };
	const config_setting_t *list = config_setting_get_member(root, "classes");
	int i, n;

	if (!list) {
		if (c->has_edge)
			bad(x, NULL, "the 'classes' list is required, with at least a class named "
			    "\"unknown\"");
		return;
	}
	if (!config_setting_is_list(list)) {
		bad(x, list, "classes: expected a list ( { name = ...; }, ... )");
		return;
	}
	n = config_setting_length(list);
	if (n > SL_MAX_CLASSES) {
		bad(x, list, "classes: at most %d classes (got %d)", SL_MAX_CLASSES, n);
		n = SL_MAX_CLASSES;
	}
	for (i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(list, (unsigned)i);
		struct sl_class_cfg *cc = &c->classes[c->n_classes];
		const char *name;
		char where[48];
		int got_burst, got_parent;
		double d;
		long v;
		int e;

		snprintf(where, sizeof(where), "classes[%d]", i);
		if (!config_setting_is_group(g)) {
			bad(x, g, "%s: expected a group { name = ...; }", where);
			continue;
		}
		check_keys(x, g, where, keys);
		memset(cc, 0, sizeof(*cc));
		name = get_str(x, g, where, "name", true);
		if (name && !valid_class_name(name)) {
			bad(x, config_setting_get_member(g, "name"),
			    "%s.name: '%s' must be 1..%d characters of a-z, 0-9, '_', '-'", where,
			    name, SL_CLASS_NAME_LEN - 1);
			name = NULL;
		}
		if (name) {
			if (sl_config_class(c, name) >= 0)
				bad(x, g, "%s: class '%s' is defined twice", where, name);
			snprintf(cc->name, sizeof(cc->name), "%s", name);
			snprintf(where, sizeof(where), "class '%s'", name);
		}

		cc->v4_prefix = 32;
		cc->v6_prefix = 64;
		cc->v4_parent = 24;
		cc->v6_parent = 48;
		if (get_int(x, g, where, "v4_prefix", false, 1, 32, &v))
			cc->v4_prefix = (uint8_t)v;
		/* Past /64 every bit is the host's to choose: such a key is free to multiply. */
		if (config_setting_get_member(g, "v6_prefix")) {
			const config_setting_t *s = config_setting_get_member(g, "v6_prefix");

			if (get_int(x, g, where, "v6_prefix", false, 1, 128, &v)) {
				if (v > 64)
					bad(x, s, "%s.v6_prefix: /%ld is longer than /64; a host picks "
					    "every bit past /64, so such keys multiply for free", where,
					    v);
				else
					cc->v6_prefix = (uint8_t)v;
			}
		}
		if (get_int(x, g, where, "v4_parent", false, 1, 32, &v))
			cc->v4_parent = (uint8_t)v;
		if (get_int(x, g, where, "v6_parent", false, 1, 128, &v))
			cc->v6_parent = (uint8_t)v;
		if (cc->v4_parent >= cc->v4_prefix)
			bad(x, g, "%s: v4_parent /%u must be shorter than v4_prefix /%u", where,
			    cc->v4_parent, cc->v4_prefix);
		if (cc->v6_parent >= cc->v6_prefix)
			bad(x, g, "%s: v6_parent /%u must be shorter than v6_prefix /%u", where,
			    cc->v6_parent, cc->v6_prefix);

		if (get_num(x, g, where, "rate", true, 0.0, 1e9, &d)) {
			if (d <= 0.0)
				bad(x, config_setting_get_member(g, "rate"),
				    "%s.rate: must be above 0 cost units per second", where);
			cc->rate = d;
		}
		got_burst = get_num(x, g, where, "burst", true, 0.0, 1e9, &d);
		if (got_burst)
			cc->burst = d;
		cc->parent_rate = cc->rate * 10.0;
		cc->parent_burst = cc->burst * 10.0;
		if (get_num(x, g, where, "parent_rate", false, 0.0, 1e9, &d)) {
			if (d <= 0.0)
				bad(x, config_setting_get_member(g, "parent_rate"),
				    "%s.parent_rate: must be above 0 cost units per second", where);
			cc->parent_rate = d;
		}
		if (config_setting_get_member(g, "parent_burst")) {
			got_parent = get_num(x, g, where, "parent_burst", false, 0.0, 1e9, &d);
			if (got_parent)
				cc->parent_burst = d;
		} else {
			got_parent = got_burst;
		}
		/* Only judge values that were read: a range error needs no second opinion. A
		 * parent_burst left out is ten bursts: it holds whatever the burst holds. */
		if (got_burst)
			check_burst(x, config_setting_get_member(g, "burst"), where, "burst",
				    cc->burst, c);
		if (got_parent && config_setting_get_member(g, "parent_burst"))
			check_burst(x, config_setting_get_member(g, "parent_burst"), where,
				    "parent_burst", cc->parent_burst, c);
		check_rate(x, config_setting_get_member(g, "rate"), where, "rate", cc->rate, "", c);
		/* A parent_rate left out is ten rates: the rate's own warning says it all. */
		if (config_setting_get_member(g, "parent_rate"))
			check_rate(x, config_setting_get_member(g, "parent_rate"), where,
				   "parent_rate", cc->parent_rate, "", c);
		e = get_enum(x, g, where, "mode", mode_names, SL_MODE_ENFORCE);
		if (e >= 0)
			cc->mode = (uint8_t)e;
		c->n_classes++;
	}
	c->unknown_class = sl_config_class(c, "unknown");
	if (c->unknown_class < 0)
		bad(x, list, "classes: a class named \"unknown\" is required (it applies to "
		    "sources not in the ASN table)");
}

/* "10.0.0.2:80" or "[2001:db8::2]:443" */
static int parse_listen(const char *s, uint8_t *family, uint8_t *addr, uint16_t *port)
{
	char host[64];
	const char *colon;
	char *end;
	long p;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':' || (size_t)(close - s - 1) >= sizeof(host))
			return -1;
		memcpy(host, s + 1, (size_t)(close - s - 1));
		host[close - s - 1] = '\0';
		colon = close + 1;
		if (inet_pton(AF_INET6, host, addr) != 1)
			return -1;
		*family = SL_FAM_V6;
	} else {
		colon = strrchr(s, ':');
		if (!colon || (size_t)(colon - s) >= sizeof(host))
			return -1;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
		memset(addr, 0, 16);
		if (inet_pton(AF_INET, host, addr) != 1)
			return -1;
		*family = SL_FAM_V4;
	}
	if (colon[1] < '0' || colon[1] > '9') /* strtol would take " 80" and "+80" */
		return -1;
	p = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || p < 1 || p > 65535)
		return -1;
	*port = (uint16_t)p;
	return 0;
}

static void lower(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

/* A tenant's Host/SNI names: lowercase, no port, each belonging to one tenant only. */
static void load_hosts(struct vctx *x, const config_setting_t *g, const char *where,
		       struct sl_tenant_cfg *t, const struct sl_config *c)
{
	const config_setting_t *hs = config_setting_get_member(g, "hosts");
	int j, k, l;

	if (!hs)
		return;
	if (!config_setting_is_array(hs) && !config_setting_is_list(hs)) {
		bad(x, hs, "%s.hosts: expected [\"name.example\", ...]", where);
		return;
	}
	for (j = 0; j < config_setting_length(hs); j++) {
		const config_setting_t *it = config_setting_get_elem(hs, (unsigned)j);
		const char *h = config_setting_get_string(it);
		size_t n;

		if (t->n_hosts >= SL_MAX_TENANT_HOSTS) {
			bad(x, it, "%s.hosts: at most %d", where, SL_MAX_TENANT_HOSTS);
			break;
		}
		n = h ? strlen(h) : 0;
		if (!n || n >= SL_HOST_LEN || strchr(h, ':') || strchr(h, ' ') || strchr(h, '/')) {
			bad(x, it, "%s.hosts[%d]: expected a host name of 1..%d characters, without "
			    "port", where, j, SL_HOST_LEN - 1);
			continue;
		}
		snprintf(t->hosts[t->n_hosts], SL_HOST_LEN, "%s", h);
		lower(t->hosts[t->n_hosts]);
		for (k = 0; k < c->n_tenants; k++)
			for (l = 0; l < c->tenants[k].n_hosts; l++)
				if (!strcmp(c->tenants[k].hosts[l], t->hosts[t->n_hosts]))
					bad(x, it, "%s.hosts: '%s' already belongs to tenant '%s'",
					    where, h, c->tenants[k].name);
		t->n_hosts++;
	}
}

static void load_tenants(struct vctx *x, const config_setting_t *root, struct sl_config *c)
{
	static const char *const keys[] = { "name", "listen", "rate", "burst", "static_rate",
		"static_burst", "lease_ttl", "mode", "hosts", "reservation", "upstream", NULL };
	const config_setting_t *list = config_setting_get_member(root, "tenants");
	uint32_t max_cost = 1;
	int i, j, k, n;

	if (!list)
		return;
	if (!config_setting_is_list(list)) {
		bad(x, list, "tenants: expected a list ( { name = ...; }, ... )");
		return;
	}
	max_cost = sl_edge_max_cost(c);
	n = config_setting_length(list);
	if (n > SL_MAX_TENANTS) {
		bad(x, list, "tenants: at most %d (got %d)", SL_MAX_TENANTS, n);
		n = SL_MAX_TENANTS;
	}
	for (i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(list, (unsigned)i);
		struct sl_tenant_cfg *t = &c->tenants[c->n_tenants];
		const config_setting_t *ls;
		const char *name;
		char where[64];
		double d;
		long v;
		int e;

		snprintf(where, sizeof(where), "tenants[%d]", i);
		if (!config_setting_is_group(g)) {
			bad(x, g, "%s: expected a group { name = ...; }", where);
			continue;
		}
		check_keys(x, g, where, keys);
		memset(t, 0, sizeof(*t));
		name = get_str(x, g, where, "name", true);
		if (name) {
			size_t ci;

			/* A tenant's name goes into metric labels, JSON, logs and the credential
			 * file (tenant,account,PHC): nothing there may need escaping. */
			for (ci = 0; name[ci]; ci++)
				if (!isalnum((unsigned char)name[ci]) && !strchr("._-", name[ci]))
					break;
			if (!*name || strlen(name) >= SL_TENANT_NAME_LEN || name[ci] ||
			    !isalnum((unsigned char)name[0]))
				bad(x, g, "%s.name: 1..%d of letters, digits, '.', '_' and '-', the "
				    "first a letter or digit", where, SL_TENANT_NAME_LEN - 1);
			for (j = 0; j < c->n_tenants; j++)
				if (!strcmp(c->tenants[j].name, name))
					bad(x, g, "%s: tenant '%s' is defined twice", where, name);
			snprintf(t->name, sizeof(t->name), "%s", name);
			snprintf(where, sizeof(where), "tenant '%.31s'", name);
		}
		ls = config_setting_get_member(g, "listen");
		t->edge_budget = config_setting_get_member(g, "rate") != NULL;
		if (ls && (!config_setting_is_array(ls) && !config_setting_is_list(ls))) {
			bad(x, ls, "%s.listen: expected [\"ADDR:PORT\", \"[ADDR6]:PORT\"]", where);
		} else if (ls) {
			if (!t->edge_budget)
				bad(x, ls, "%s.listen: an edge budget needs rate and burst", where);
			for (j = 0; j < config_setting_length(ls); j++) {
				const config_setting_t *it = config_setting_get_elem(ls, (unsigned)j);
				const char *str = config_setting_get_string(it);
				bool protected_port = false;

				if (t->n_listen >= SL_MAX_TENANT_LISTEN) {
					bad(x, it, "%s.listen: at most %d", where, SL_MAX_TENANT_LISTEN);
					break;
				}
				if (!str || parse_listen(str, &t->listen[t->n_listen].family,
							 t->listen[t->n_listen].addr,
							 &t->listen[t->n_listen].port)) {
					bad(x, it, "%s.listen[%d]: '%s' is not ADDR:PORT or [ADDR6]:PORT",
					    where, j, str ? str : "?");
					continue;
				}
				for (k = 0; k < c->n_ports; k++)
					if (c->ports[k].port == t->listen[t->n_listen].port)
						protected_port = true;
				if (!protected_port)
					bad(x, it, "%s.listen[%d]: port %u is not in edge.ports, so this "
					    "budget would never be charged", where, j,
					    t->listen[t->n_listen].port);
				t->n_listen++;
			}
		}
		load_hosts(x, g, where, t, c);
		if (get_num(x, g, where, "reservation", false, 0.0, 1e12, &d))
			t->reservation = d;
		name = get_str(x, g, where, "upstream", false);
		if (name) {
			char host[SL_UPSTREAM_ADDR_LEN];
			uint16_t port;
			const char *why = NULL;

			if (strcmp(name, "builtin") &&
			    sl_upstream_parse(name, host, sizeof(host), &port, &why))
				bad(x, config_setting_get_member(g, "upstream"), "%s.upstream: "
				    "'%.80s' %s (or \"builtin\")", where, name, why);
			else
				snprintf(t->upstream, sizeof(t->upstream), "%s", name);
		}

		if (!t->edge_budget) {
			static const char *const edge_only[] = { "burst", "static_rate",
				"static_burst", "lease_ttl" };
			size_t eo;

			/* Accepted and ignored would let an operator believe a budget holds. */
			for (eo = 0; eo < sizeof(edge_only) / sizeof(edge_only[0]); eo++)
				if (config_setting_get_member(g, edge_only[eo]))
					bad(x, config_setting_get_member(g, edge_only[eo]),
					    "%s.%s: an edge budget needs a rate too", where,
					    edge_only[eo]);
			e = get_enum(x, g, where, "mode", mode_names, SL_MODE_ENFORCE);
			if (e >= 0)
				t->mode = (uint8_t)e;
			c->n_tenants++;
			continue;
		}
		if (get_num(x, g, where, "rate", true, 0.0, 1e9, &d)) {
			if (d <= 0.0)
				bad(x, config_setting_get_member(g, "rate"),
				    "%s.rate: must be above 0", where);
			t->rate = d;
		}
		if (get_num(x, g, where, "burst", true, 0.0, 1e9, &d)) {
			check_burst(x, config_setting_get_member(g, "burst"), where, "burst", d, c);
			t->burst = d;
		}
		/* A quarter of the budget across the cluster: each node a quarter of its even
		 * share, so a cluster whose every lease lapsed still stays well inside it. */
		t->static_rate = t->rate / (4.0 * c->cluster.nodes);
		t->static_burst = t->burst / (4.0 * c->cluster.nodes) > max_cost ?
				  t->burst / (4.0 * c->cluster.nodes) : max_cost;
		if (get_num(x, g, where, "static_rate", false, 0.0, 1e9, &d)) {
			if (d <= 0.0)
				bad(x, config_setting_get_member(g, "static_rate"),
				    "%s.static_rate: must be above 0", where);
			t->static_rate = d;
		}
		if (get_num(x, g, where, "static_burst", false, 0.0, 1e9, &d)) {
			check_burst(x, config_setting_get_member(g, "static_burst"), where,
				    "static_burst", d, c);
			t->static_burst = d;
		}
		check_rate(x, config_setting_get_member(g, "rate"), where, "rate", t->rate, "", c);
		/* The default static_rate is a fraction of the rate: it can starve a port that
		 * the rate itself feeds, once every lease has lapsed. */
		if (config_setting_get_member(g, "static_rate"))
			check_rate(x, config_setting_get_member(g, "static_rate"), where,
				   "static_rate", t->static_rate, "", c);
		else if (t->rate * 60.0 >= max_cost)
			check_rate(x, g, where, "static_rate", t->static_rate,
				   " (the default, rate / (4 x cluster.nodes))", c);
		t->lease_ttl_s = 3;
		if (get_int(x, g, where, "lease_ttl", false, 1, 3600, &v))
			t->lease_ttl_s = (uint32_t)v;
		e = get_enum(x, g, where, "mode", mode_names, SL_MODE_ENFORCE);
		if (e >= 0)
			t->mode = (uint8_t)e;
		c->n_tenants++;
	}
	for (i = 0; i < c->n_tenants; i++)
		if (!strcmp(c->tenants[i].name, "default"))
			c->default_tenant = i;
	/* One destination, one tenant. */
	for (i = 0; i < c->n_tenants; i++)
		for (j = 0; j < c->tenants[i].n_listen; j++)
			for (k = i; k < c->n_tenants; k++) {
				int l;

				for (l = (k == i ? j + 1 : 0); l < c->tenants[k].n_listen; l++)
					if (c->tenants[i].listen[j].family ==
						    c->tenants[k].listen[l].family &&
					    c->tenants[i].listen[j].port == c->tenants[k].listen[l].port &&
					    !memcmp(c->tenants[i].listen[j].addr,
						    c->tenants[k].listen[l].addr, 16))
						bad(x, list, "tenants: '%s' and '%s' both listen on the same "
						    "address and port", c->tenants[i].name,
						    c->tenants[k].name);
			}
}

/* A status list: up to 8 numbers 100..599. */
static void load_statuses(struct vctx *x, const config_setting_t *l, const char *where,
			  const char *name, uint16_t *out, uint8_t *n)
{
	int i, len;

	if (!l)
		return;
	if (!config_setting_is_array(l) && !config_setting_is_list(l)) {
		bad(x, l, "%s.%s: expected a list of HTTP statuses, [401, 403]", where, name);
		return;
	}
	len = config_setting_length(l);
	if (len > 8) {
		bad(x, l, "%s.%s: at most 8 statuses", where, name);
		len = 8;
	}
	*n = 0;
	for (i = 0; i < len; i++) {
		const config_setting_t *e = config_setting_get_elem(l, (unsigned)i);
		int v = config_setting_type(e) == CONFIG_TYPE_INT ? config_setting_get_int(e) : -1;

		if (v < 100 || v > 599) {
			bad(x, e, "%s.%s: %s is not an HTTP status (100..599)", where, name,
			    v < 0 ? "that" : "it");
			continue;
		}
		out[(*n)++] = (uint16_t)v;
	}
}

/* A verdict's value list (routes[].login.header/.json success or failure): 1..8 strings of
 * 1..31 printable ASCII bytes. */
static void load_verdict_values(struct vctx *x, const config_setting_t *g, const char *where,
				const char *name, char (*out)[SL_VERDICT_VALUE_LEN], uint8_t *n)
{
	const config_setting_t *l = config_setting_get_member(g, name);
	int i, len;

	*n = 0;
	if (!l) {
		bad(x, g, "%s.%s: required (the values that mean a %s; an answer with none of "
		    "them gives the attempt back)", where, name, name);
		return;
	}
	if (!config_setting_is_array(l) && !config_setting_is_list(l)) {
		bad(x, l, "%s.%s: expected a list of strings, [\"ok\"]", where, name);
		return;
	}
	len = config_setting_length(l);
	if (!len)
		bad(x, l, "%s.%s: at least one value", where, name);
	if (len > SL_VERDICT_VALUES) {
		bad(x, l, "%s.%s: at most %d values", where, name, SL_VERDICT_VALUES);
		len = SL_VERDICT_VALUES;
	}
	for (i = 0; i < len; i++) {
		const config_setting_t *e = config_setting_get_elem(l, (unsigned)i);
		const char *v = config_setting_type(e) == CONFIG_TYPE_STRING ?
				config_setting_get_string(e) : NULL;
		const char *p;

		if (!v) {
			bad(x, e, "%s.%s: expected a string (a number or true is written \"1\", "
			    "\"true\")", where, name);
			continue;
		}
		for (p = v; *p && (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f; p++)
			;
		if (!*v || *p || strlen(v) >= SL_VERDICT_VALUE_LEN) {
			bad(x, e, "%s.%s: '%.40s' must be 1..%d printable ASCII characters", where,
			    name, v, SL_VERDICT_VALUE_LEN - 1);
			continue;
		}
		snprintf(out[(*n)++], SL_VERDICT_VALUE_LEN, "%s", v);
	}
}

/* RFC 9110 5.6.2 tchar. */
static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/*
 * routes[].login.header = { name; success; failure; } or routes[].login.json = { field;
 * success; failure; }: inside a `success` status, the upstream's verdict is this header's
 * value or this JSON field's (docs/gateway.md). Both value lists are required: an answer
 * that says neither gives the attempt back, so a missing list would mean an upstream's
 * failures are never charged.
 */
static void load_route_verdict(struct vctx *x, const config_setting_t *l, const char *w,
			       struct sl_route_cfg *r)
{
	static const char *const hdr_keys[] = { "name", "success", "failure", NULL };
	static const char *const json_keys[] = { "field", "success", "failure", NULL };
	static const char *const hop[] = { "connection", "keep-alive", "proxy-connection", "te",
		"trailer", "transfer-encoding", "upgrade", "content-length", NULL };
	const config_setting_t *h = config_setting_get_member(l, "header");
	const config_setting_t *j = config_setting_get_member(l, "json");
	const config_setting_t *v = h ? h : j;
	char where[96];
	const char *s;
	int i, k;

	if (h && j) {
		bad(x, j, "%s: header or json, not both (one place says what the answer means)", w);
		return;
	}
	if (!v)
		return;
	snprintf(where, sizeof(where), "%s.%s", w, h ? "header" : "json");
	if (!config_setting_is_group(v)) {
		bad(x, v, "%s: expected a group { %s = ...; success = [...]; failure = [...]; }",
		    where, h ? "name" : "field");
		return;
	}
	check_keys(x, v, where, h ? hdr_keys : json_keys);
	s = get_str(x, v, where, h ? "name" : "field", true);
	if (s && h) {
		const char *p;

		for (p = s; *p && is_tchar((unsigned char)*p); p++)
			;
		if (!*s || *p || strlen(s) >= SL_VERDICT_NAME_LEN) {
			bad(x, config_setting_get_member(v, "name"), "%s.name: '%.64s' is not a "
			    "header name (1..%d token characters)", where, s, SL_VERDICT_NAME_LEN - 1);
			s = NULL;
		}
		for (k = 0; s && hop[k]; k++)
			if (!strcasecmp(s, hop[k])) {
				bad(x, config_setting_get_member(v, "name"), "%s.name: %s is a "
				    "hop-by-hop header (RFC 9110 7.6.1): it says nothing about the "
				    "sign-in", where, s);
				s = NULL;
			}
	} else if (s) {
		const char *p;
		int segs = 1;
		bool empty = !*s || *s == '.';

		for (p = s; *p; p++) {
			if (*p == '.') {
				segs++;
				if (p[1] == '.' || !p[1])
					empty = true;
			} else if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) {
				empty = true;
			}
		}
		if (empty || segs > SL_VERDICT_PATH_MAX || strlen(s) >= SL_VERDICT_NAME_LEN) {
			bad(x, config_setting_get_member(v, "field"), "%s.field: '%.64s' is not a "
			    "dotted path of 1..%d member names or array indexes (\"result.status\", "
			    "\"errors.0.code\"), under %d characters", where, s, SL_VERDICT_PATH_MAX,
			    SL_VERDICT_NAME_LEN);
			s = NULL;
		}
	}
	load_verdict_values(x, v, where, "success", r->login.ok, &r->login.n_ok);
	load_verdict_values(x, v, where, "failure", r->login.no, &r->login.n_no);
	for (i = 0; i < r->login.n_ok; i++)
		for (k = 0; k < r->login.n_no; k++)
			if (!strcmp(r->login.ok[i], r->login.no[k]))
				bad(x, v, "%s: '%s' is both a success and a failure", where,
				    r->login.ok[i]);
	if (!s)
		return;
	r->login.by = h ? SL_VERDICT_HEADER : SL_VERDICT_JSON;
	snprintf(r->login.by_name, sizeof(r->login.by_name), "%s", s);
}

/*
 * routes[].login (upstream mode): the route signs people in, so the login counters and the
 * stream job see it as they see the built-in /login: the account from HTTP Basic or a body
 * field, the outcome from the upstream's status.
 */
static void load_route_login(struct vctx *x, const config_setting_t *l, const char *where,
			     struct sl_route_cfg *r, const char *const *keys,
			     const char *const *from_names)
{
	char w[64];
	const char *s;
	int e, i, j;

	if (!l)
		return;
	snprintf(w, sizeof(w), "%s.login", where);
	if (!config_setting_is_group(l)) {
		bad(x, l, "%s: expected a group { account = \"basic\"; ... }", w);
		return;
	}
	check_keys(x, l, w, keys);
	e = get_enum(x, l, w, "account", from_names, -1);
	if (e <= 0) {
		if (e == 0 || !config_setting_get_member(l, "account"))
			bad(x, l, "%s.account: \"basic\", \"form\" or \"json\" is required", w);
		return;
	}
	r->login.from = (uint8_t)e;
	snprintf(r->login.user, sizeof(r->login.user), "username");
	snprintf(r->login.password, sizeof(r->login.password), "password");
	s = get_str(x, l, w, "username", false);
	if (s && (!*s || strlen(s) >= sizeof(r->login.user)))
		bad(x, config_setting_get_member(l, "username"), "%s.username: 1..31 characters", w);
	else if (s)
		snprintf(r->login.user, sizeof(r->login.user), "%s", s);
	s = get_str(x, l, w, "password", false);
	if (s && (!*s || strlen(s) >= sizeof(r->login.password)))
		bad(x, config_setting_get_member(l, "password"), "%s.password: 1..31 characters", w);
	else if (s)
		snprintf(r->login.password, sizeof(r->login.password), "%s", s);
	r->login.success[0] = 200;
	r->login.n_success = 1;
	r->login.failure[0] = 401;
	r->login.n_failure = 1;
	load_statuses(x, config_setting_get_member(l, "success"), w, "success",
		      r->login.success, &r->login.n_success);
	load_statuses(x, config_setting_get_member(l, "failure"), w, "failure",
		      r->login.failure, &r->login.n_failure);
	for (i = 0; i < r->login.n_success; i++)
		for (j = 0; j < r->login.n_failure; j++)
			if (r->login.success[i] == r->login.failure[j])
				bad(x, l, "%s: %u is both a success and a failure", w,
				    r->login.success[i]);
	load_route_verdict(x, l, w, r);
}

/* One upstream URL named at @s: its host resolved now, into c->up_addrs (once per URL). */
static void resolve_upstream(struct vctx *x, const config_setting_t *s, const char *where,
			     const char *url, struct sl_config *c)
{
	struct sl_upstream_addr *a;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	char host[SL_UPSTREAM_ADDR_LEN], port_s[8];
	const char *why = "";
	uint16_t port;
	unsigned char bin[16];
	int e;

	if (!url[0] || !strcmp(url, "builtin") || sl_config_upstream_addr(c, url))
		return;
	if (sl_upstream_parse(url, host, sizeof(host), &port, &why))
		return; /* said where it was read */
	if (c->n_up_addrs >= SL_MAX_UPSTREAM_ADDRS) {
		bad(x, s, "%s: more than %d distinct upstreams", where, SL_MAX_UPSTREAM_ADDRS);
		return;
	}
	a = &c->up_addrs[c->n_up_addrs];
	memset(a, 0, sizeof(*a));
	snprintf(a->url, sizeof(a->url), "%s", url);
	a->port = port;
	a->named = port && inet_pton(AF_INET, host, bin) != 1 && inet_pton(AF_INET6, host, bin) != 1;
	if (!a->named) {
		snprintf(a->addr, sizeof(a->addr), "%s", host);
		c->n_up_addrs++;
		return;
	}
	/* The load runs before the loop starts, on the reload worker, or in --check-config:
	 * a blocking lookup here holds no request. */
	snprintf(port_s, sizeof(port_s), "%u", port);
	e = getaddrinfo(host, port_s, &hints, &res);
	if (e || !res) {
		bad(x, s, "%s: '%s': %s does not resolve: %s", where, url, host,
		    e ? gai_strerror(e) : "no address");
		if (res)
			freeaddrinfo(res);
		return;
	}
	if (res->ai_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, a->addr,
			  sizeof(a->addr));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)res->ai_addr)->sin6_addr, a->addr,
			  sizeof(a->addr));
	freeaddrinfo(res);
	c->n_up_addrs++;
}

static void resolve_upstreams(struct vctx *x, const config_setting_t *root, struct sl_config *c)
{
	const config_setting_t *g = config_setting_get_member(root, "gateway");
	const config_setting_t *up = g ? config_setting_get_member(g, "upstream") : NULL;
	const config_setting_t *list = config_setting_get_member(root, "routes");
	char where[48];
	int i;

	c->n_up_addrs = 0;
	if (!c->gw.present)
		return;
	if (up && c->gw.up.url[0])
		resolve_upstream(x, config_setting_get_member(up, "url"), "gateway.upstream.url",
				 c->gw.up.url, c);
	list = config_setting_get_member(root, "tenants");
	for (i = 0; list && i < c->n_tenants; i++) {
		const config_setting_t *t = config_setting_get_elem(list, (unsigned)i);

		snprintf(where, sizeof(where), "tenants[%d].upstream", i);
		if (c->tenants[i].upstream[0])
			resolve_upstream(x, t ? config_setting_get_member(t, "upstream") : NULL,
					 where, c->tenants[i].upstream, c);
	}
	list = config_setting_get_member(root, "routes");
	for (i = 0; list && i < c->n_routes; i++) {
		const config_setting_t *r = config_setting_get_elem(list, (unsigned)i);

		snprintf(where, sizeof(where), "routes[%d].upstream", i);
		if (c->routes[i].upstream[0])
			resolve_upstream(x, r ? config_setting_get_member(r, "upstream") : NULL,
					 where, c->routes[i].upstream, c);
	}
}

/* routes[].login only where an upstream answers (the built-in /login counts its own). */
static void check_route_logins(struct vctx *x, const config_setting_t *root,
			       const struct sl_config *c)
{
	const config_setting_t *list = config_setting_get_member(root, "routes");
	int i;

	for (i = 0; list && i < c->n_routes; i++) {
		const struct sl_route_cfg *r = &c->routes[i];
		const config_setting_t *g = config_setting_get_elem(list, (unsigned)i);
		bool up = sl_config_upstream_of(c, i, -1) != NULL;
		int t;

		for (t = 0; !up && !r->upstream[0] && t < c->n_tenants; t++)
			up = sl_config_upstream_of(c, i, t) != NULL;

		if (r->concurrency && !up && g)
			bad(x, config_setting_get_member(g, "concurrency"), "routes[%d].concurrency: "
			    "only for a route an upstream serves (it caps forwards in flight)", i);
		if (r->login.from && !up && g)
			bad(x, config_setting_get_member(g, "login"), "routes[%d].login: only for a "
			    "route an upstream serves (routes[].upstream, tenants[].upstream or "
			    "gateway.upstream.url); the "
			    "built-in /login counts its own sign-ins", i);
	}
}

static void load_routes(struct vctx *x, const config_setting_t *root, struct sl_config *c)
{
	static const char *const keys[] = { "name", "method", "path", "cpu", "db", "upstream",
		"login", "concurrency", NULL };
	static const char *const login_keys[] = { "account", "username", "password", "success",
		"failure", "header", "json", NULL };
	static const char *const from_names[] = { "", "basic", "form", "json", NULL };
	const config_setting_t *list = config_setting_get_member(root, "routes");
	int i, j, n;

	if (!list)
		return;
	if (!config_setting_is_list(list)) {
		bad(x, list, "routes: expected a list ( { method = ...; path = ...; }, ... )");
		return;
	}
	n = config_setting_length(list);
	if (n > SL_MAX_ROUTES) {
		bad(x, list, "routes: at most %d (got %d)", SL_MAX_ROUTES, n);
		n = SL_MAX_ROUTES;
	}
	for (i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(list, (unsigned)i);
		struct sl_route_cfg *r = &c->routes[c->n_routes];
		const char *m, *p, *name;
		char where[48];
		double d;
		int e;

		snprintf(where, sizeof(where), "routes[%d]", i);
		if (!config_setting_is_group(g)) {
			bad(x, g, "%s: expected a group { method = ...; path = ...; }", where);
			continue;
		}
		check_keys(x, g, where, keys);
		memset(r, 0, sizeof(*r));
		m = get_str(x, g, where, "method", true);
		p = get_str(x, g, where, "path", true);
		if (m) {
			e = sl_method_parse(m);
			if (e < 0)
				bad(x, config_setting_get_member(g, "method"),
				    "%s.method: '%s' is not GET, POST, PUT, DELETE, PATCH, HEAD, "
				    "OPTIONS or *", where, m);
			else
				r->method = (uint8_t)e;
		}
		if (p) {
			if (p[0] != '/' || strlen(p) >= SL_ROUTE_PATH_LEN || strpbrk(p, " ?#\r\n"))
				bad(x, config_setting_get_member(g, "path"),
				    "%s.path: expected a path prefix starting with '/', under %d "
				    "characters, without spaces or query", where, SL_ROUTE_PATH_LEN);
			else
				snprintf(r->path, sizeof(r->path), "%s", p);
		}
		name = get_str(x, g, where, "name", false);
		if (name && (!*name || strlen(name) >= SL_ROUTE_NAME_LEN))
			bad(x, config_setting_get_member(g, "name"), "%s.name: 1..%d characters",
			    where, SL_ROUTE_NAME_LEN - 1);
		snprintf(r->name, sizeof(r->name), "%s", name ? name : r->path);
		if (get_num(x, g, where, "cpu", false, 0.0, 1e9, &d))
			r->cpu = d;
		if (get_num(x, g, where, "db", false, 0.0, 1e6, &d))
			r->db = d;
		p = get_str(x, g, where, "upstream", false);
		if (p) {
			char host[SL_UPSTREAM_ADDR_LEN];
			uint16_t port;
			const char *why = NULL;

			if (strcmp(p, "builtin") &&
			    sl_upstream_parse(p, host, sizeof(host), &port, &why))
				bad(x, config_setting_get_member(g, "upstream"), "%s.upstream: '%.80s' "
				    "%s (or \"builtin\")", where, p, why);
			else
				snprintf(r->upstream, sizeof(r->upstream), "%s", p);
		}
		load_route_login(x, config_setting_get_member(g, "login"), where, r, login_keys,
				 from_names);
		{
			long v;

			if (get_int(x, g, where, "concurrency", false, 1, 4096, &v))
				r->concurrency = (uint32_t)v;
		}
		for (j = 0; j < c->n_routes; j++)
			if (c->routes[j].method == r->method && !strcmp(c->routes[j].path, r->path))
				bad(x, g, "%s: %s %s is listed twice", where, m ? m : "?", r->path);
		c->n_routes++;
	}
}

static uint32_t get_u32_or(struct vctx *x, const config_setting_t *g, const char *where,
			   const char *name, long lo, long hi, uint32_t def)
{
	long v;

	return get_int(x, g, where, name, false, lo, hi, &v) ? (uint32_t)v : def;
}

static void load_endpoints(struct vctx *x, const config_setting_t *g, struct sl_config *c,
			   const char *base);

/* The highest $N a query names (0: none); -1 when it names $0 or a number past 9. */
static int sql_max_param(const char *q)
{
	int max = 0;

	for (; *q; q++) {
		if (*q != '$' || q[1] < '0' || q[1] > '9')
			continue;
		if (q[1] == '0' || (q[2] >= '0' && q[2] <= '9'))
			return -1;
		if (q[1] - '0' > max)
			max = q[1] - '0';
	}
	return max;
}

/* One of credentials_db's queries: a string naming no parameter past $@nparams. */
static void get_sql(struct vctx *x, const config_setting_t *g, const char *name, int nparams,
		    bool required, char *dst, size_t cap, const char *what)
{
	const char *str = get_str(x, g, "gateway.credentials_db", name, required);
	const config_setting_t *s = config_setting_get_member(g, name);
	int m;

	if (!str)
		return;
	if (strlen(str) >= cap) {
		bad(x, s, "gateway.credentials_db.%s: longer than %zu bytes", name, cap - 1);
		return;
	}
	m = sql_max_param(str);
	if (m < 0 || m > nparams) {
		bad(x, s, "gateway.credentials_db.%s: its parameters are %s; it names another",
		    name, what);
		return;
	}
	snprintf(dst, cap, "%s", str);
}

/* gateway.credentials_db: where the built-in verifier finds accounts (gw_pg.c). */
static void load_credentials_db(struct vctx *x, const config_setting_t *gwg,
				struct sl_config *c, const char *base)
{
	static const char *const keys[] = { "conninfo", "conninfo_file", "lookup", "insert",
		"update", "pool", "timeout_ms", "queue", "retry_after_s", "fail", NULL };
	static const char *const fails[] = { "closed", "file", NULL };
	const config_setting_t *g = config_setting_get_member(gwg, "credentials_db");
	struct sl_credentials_db *db = &c->gw.db;
	const char *ci, *cf;
	int f;

	if (!g)
		return;
	if (!config_setting_is_group(g)) {
		bad(x, g, "gateway.credentials_db: expected a group { conninfo = \"...\"; lookup = "
		    "\"SELECT ...\"; ... }");
		return;
	}
	db->present = 1;
	check_keys(x, g, "gateway.credentials_db", keys);
	ci = get_str(x, g, "gateway.credentials_db", "conninfo", false);
	cf = get_str(x, g, "gateway.credentials_db", "conninfo_file", false);
	if (!ci == !cf)
		bad(x, g, "gateway.credentials_db: give exactly one of conninfo and conninfo_file "
		    "(a file keeps the database password out of the config)");
	if (ci && strlen(ci) >= sizeof(db->conninfo))
		bad(x, config_setting_get_member(g, "conninfo"), "gateway.credentials_db.conninfo: "
		    "longer than %zu bytes", sizeof(db->conninfo) - 1);
	else if (ci)
		snprintf(db->conninfo, sizeof(db->conninfo), "%s", ci);
	if (cf)
		resolve_path(db->conninfo_file, sizeof(db->conninfo_file), base, cf);
	get_sql(x, g, "lookup", 2, true, db->lookup, sizeof(db->lookup), "$1 tenant, $2 account");
	get_sql(x, g, "insert", 3, false, db->insert, sizeof(db->insert),
		"$1 tenant, $2 account, $3 PHC string");
	get_sql(x, g, "update", 3, false, db->update, sizeof(db->update),
		"$1 tenant, $2 account, $3 PHC string");
	db->pool = get_u32_or(x, g, "gateway.credentials_db", "pool", 1, 256, 4);
	db->timeout_ms = get_u32_or(x, g, "gateway.credentials_db", "timeout_ms", 10, 60000, 1000);
	db->queue = get_u32_or(x, g, "gateway.credentials_db", "queue", 1, 1000000, 1024);
	db->retry_after_s = get_u32_or(x, g, "gateway.credentials_db", "retry_after_s", 1, 3600,
				       1);
	f = get_enum(x, g, "gateway.credentials_db", "fail", fails, SL_DB_FAIL_CLOSED);
	db->fail = f < 0 ? SL_DB_FAIL_CLOSED : f;
	if (db->fail == SL_DB_FAIL_FILE && !c->gw.credentials[0])
		bad(x, config_setting_get_member(g, "fail"), "gateway.credentials_db.fail: \"file\" "
		    "needs gateway.credentials, the file that answers while the database cannot");
}

/* gateway.tls: the files' paths and where they were set; the files themselves are read by
 * gateway_prepare (gw_tls.c), which --check-config and a reload run. */
static void load_tls(struct vctx *x, const config_setting_t *g, struct sl_config *c,
		     const char *base)
{
	static const char *const tls_keys[] = { "certificate", "key", "min_version", NULL };
	const config_setting_t *t = config_setting_get_member(g, "tls"), *s;
	struct sl_gateway_cfg *gw = &c->gw;
	const char *str;

	gw->tls.min_version = 12;
	if (!t)
		return;
	if (!config_setting_is_group(t)) {
		bad(x, t, "gateway.tls: expected a group { certificate = \"PATH\"; key = \"PATH\"; }");
		return;
	}
	check_keys(x, t, "gateway.tls", tls_keys);
	snprintf(gw->tls.file, sizeof(gw->tls.file), "%s",
		 config_setting_source_file(t) ? config_setting_source_file(t) : x->file);
	str = get_str(x, t, "gateway.tls", "certificate", true);
	if (str && !str[0])
		bad(x, config_setting_get_member(t, "certificate"),
		    "gateway.tls.certificate: an empty path");
	else if (str)
		resolve_path(gw->tls.certificate, sizeof(gw->tls.certificate), base, str);
	s = config_setting_get_member(t, "certificate");
	gw->tls.certificate_line = s ? (int)config_setting_source_line(s) :
				       (int)config_setting_source_line(t);
	str = get_str(x, t, "gateway.tls", "key", true);
	if (str && !str[0])
		bad(x, config_setting_get_member(t, "key"), "gateway.tls.key: an empty path");
	else if (str)
		resolve_path(gw->tls.key, sizeof(gw->tls.key), base, str);
	s = config_setting_get_member(t, "key");
	gw->tls.key_line = s ? (int)config_setting_source_line(s) :
			       (int)config_setting_source_line(t);
	str = get_str(x, t, "gateway.tls", "min_version", false);
	if (str && !strcmp(str, "1.3"))
		gw->tls.min_version = 13;
	else if (str && strcmp(str, "1.2"))
		bad(x, config_setting_get_member(t, "min_version"),
		    "gateway.tls.min_version: '%s' is not \"1.2\" or \"1.3\" (older versions are "
		    "not offered)", str);
}

static void load_gateway(struct vctx *x, const config_setting_t *root, struct sl_config *c,
			 const char *base)
{
	static const char *const keys[] = { "listen", "credentials", "credentials_db", "capacity", "queue",
		"argon2", "trusted_hops", "admission", "max_body", "max_headers", "reject_floor_ms",
		"max_held", "max_connections", "max_connections_per_prefix",
		"max_connections_per_parent", "max_requests_per_connection", "request_timeout_ms",
		"drain_ms",
		"token_ttl_s", "session_key", "refresh_ttl_s", "otp_ttl_s", "magic_ttl_s",
		"delivery", "delivery_log", "link_base", "login_uniform", "active_tenants",
		"clients", "ceilings", "tls", "upstream", NULL };
	static const char *const cap_keys[] = { "cpu", "db", NULL };
	static const char *const up_keys[] = { "url", "concurrency", "timeout_ms",
		"max_response", "down_ms", "adaptive", NULL };
	static const char *const q_keys[] = { "target_wait_ms", "lifo_after_ms",
		"codel_interval_ms", "default_deadline_ms", "max_deadline_ms", "max_depth", NULL };
	static const char *const a_keys[] = { "m_cost_kib", "t_cost", "parallelism",
		"memory_budget_mib", NULL };
	const config_setting_t *g = config_setting_get_member(root, "gateway"), *sub;
	struct sl_gateway_cfg *gw = &c->gw;
	const char *str;
	uint8_t fam, addr[16];
	uint16_t port;
	double d, sum = 0;
	int i;

	if (!g)
		return;
	if (!config_setting_is_group(g)) {
		bad(x, g, "gateway: expected a group { ... }");
		return;
	}
	gw->present = 1;
	check_keys(x, g, "gateway", keys);
	load_tls(x, g, c, base);
	str = get_str(x, g, "gateway", "listen", true);
	if (str) {
		if (parse_listen(str, &fam, addr, &port))
			bad(x, config_setting_get_member(g, "listen"),
			    "gateway.listen: '%s' is not ADDR:PORT or [ADDR6]:PORT", str);
		snprintf(gw->listen, sizeof(gw->listen), "%s", str);
	}
	str = get_str(x, g, "gateway", "credentials", false);
	if (str)
		resolve_path(gw->credentials, sizeof(gw->credentials), base, str);

	sub = config_setting_get_member(g, "capacity");
	if (!sub || !config_setting_is_group(sub)) {
		bad(x, sub ? sub : g, "gateway.capacity: expected { cpu = UNITS; db = SLOTS; }");
	} else {
		check_keys(x, sub, "gateway.capacity", cap_keys);
		if (get_num(x, sub, "gateway.capacity", "cpu", true, 0.0, 1e12, &d)) {
			if (d <= 0)
				bad(x, config_setting_get_member(sub, "cpu"),
				    "gateway.capacity.cpu: must be above 0 units per second");
			gw->cap_cpu = d;
		}
		gw->cap_db = 0;
		if (get_num(x, sub, "gateway.capacity", "db", false, 0.0, 1e9, &d))
			gw->cap_db = d;
	}
	sub = config_setting_get_member(g, "queue");
	if (sub) {
		if (!config_setting_is_group(sub)) {
			bad(x, sub, "gateway.queue: expected a group { ... }");
		} else {
			check_keys(x, sub, "gateway.queue", q_keys);
			gw->target_wait_ms = get_u32_or(x, sub, "gateway.queue", "target_wait_ms",
							1, 60000, gw->target_wait_ms);
			gw->lifo_after_ms = get_u32_or(x, sub, "gateway.queue", "lifo_after_ms", 1,
						       60000, gw->lifo_after_ms);
			gw->codel_interval_ms = get_u32_or(x, sub, "gateway.queue",
							   "codel_interval_ms", 1, 60000,
							   gw->codel_interval_ms);
			gw->default_deadline_ms = get_u32_or(x, sub, "gateway.queue",
							     "default_deadline_ms", 1, 600000,
							     gw->default_deadline_ms);
			gw->max_deadline_ms = get_u32_or(x, sub, "gateway.queue", "max_deadline_ms",
							 1, 600000, gw->max_deadline_ms);
			gw->max_depth = get_u32_or(x, sub, "gateway.queue", "max_depth", 1, 1000000,
						   gw->max_depth);
			if (gw->default_deadline_ms > gw->max_deadline_ms)
				bad(x, sub, "gateway.queue: default_deadline_ms %u is above "
				    "max_deadline_ms %u", gw->default_deadline_ms,
				    gw->max_deadline_ms);
		}
	}
	sub = config_setting_get_member(g, "argon2");
	if (sub) {
		if (!config_setting_is_group(sub)) {
			bad(x, sub, "gateway.argon2: expected a group { ... }");
		} else {
			check_keys(x, sub, "gateway.argon2", a_keys);
			gw->m_cost_kib = get_u32_or(x, sub, "gateway.argon2", "m_cost_kib", 8,
						    4 * 1024 * 1024, gw->m_cost_kib);
			gw->t_cost = get_u32_or(x, sub, "gateway.argon2", "t_cost", 1, 100,
						gw->t_cost);
			gw->parallelism = get_u32_or(x, sub, "gateway.argon2", "parallelism", 1,
						     64, gw->parallelism);
			gw->memory_budget_mib = get_u32_or(x, sub, "gateway.argon2",
							   "memory_budget_mib", 1, 1024 * 1024,
							   gw->memory_budget_mib);
		}
	}
	gw->workers = (uint32_t)(((uint64_t)gw->memory_budget_mib * 1024) / gw->m_cost_kib);
	if (gw->workers > 256)
		gw->workers = 256;
	if (gw->workers < 1)
		bad(x, sub ? sub : g, "gateway.argon2: a memory budget of %u MiB cannot hold one "
		    "hash of %u KiB", gw->memory_budget_mib, gw->m_cost_kib);
	gw->trusted_hops = get_u32_or(x, g, "gateway", "trusted_hops", 0, 16, 0);
	gw->max_body = get_u32_or(x, g, "gateway", "max_body", 256, 1 << 20, gw->max_body);
	gw->max_headers = get_u32_or(x, g, "gateway", "max_headers", 1024, 1 << 20,
				     gw->max_headers);
	gw->reject_floor_ms = get_u32_or(x, g, "gateway", "reject_floor_ms", 0, 60000,
					 gw->reject_floor_ms);
	gw->max_held = get_u32_or(x, g, "gateway", "max_held", 1, 1000000, gw->max_held);
	gw->max_connections = get_u32_or(x, g, "gateway", "max_connections", 16, 1000000,
					 gw->max_connections);
	/* Per source prefix and per parent: by default a sixteenth and a quarter of the table,
	 * so one source cannot hold it all (docs/gateway.md, "Connections"). */
	gw->max_conns_prefix = get_u32_or(x, g, "gateway", "max_connections_per_prefix", 1,
					  1000000, 0);
	if (!gw->max_conns_prefix)
		gw->max_conns_prefix = gw->max_connections / 16;
	gw->max_conns_parent = get_u32_or(x, g, "gateway", "max_connections_per_parent", 1,
					  1000000, 0);
	if (!gw->max_conns_parent)
		gw->max_conns_parent = gw->max_connections / 4;
	gw->max_requests_conn = get_u32_or(x, g, "gateway", "max_requests_per_connection", 1,
					   1000000000, gw->max_requests_conn);
	gw->request_timeout_ms = get_u32_or(x, g, "gateway", "request_timeout_ms", 100, 600000,
					    gw->request_timeout_ms);
	gw->drain_ms = get_u32_or(x, g, "gateway", "drain_ms", 0, 600000, gw->drain_ms);
	sub = config_setting_get_member(g, "upstream");
	if (sub && !config_setting_is_group(sub)) {
		bad(x, sub, "gateway.upstream: expected a group { url = \"http://ADDR:PORT\"; ... }");
	} else if (sub) {
		char host[SL_UPSTREAM_ADDR_LEN];
		const char *why = NULL;

		check_keys(x, sub, "gateway.upstream", up_keys);
		str = get_str(x, sub, "gateway.upstream", "url", true);
		if (str && sl_upstream_parse(str, host, sizeof(host), &port, &why))
			bad(x, config_setting_get_member(sub, "url"), "gateway.upstream.url: '%.80s' %s",
			    str, why);
		else if (str)
			snprintf(gw->up.url, sizeof(gw->up.url), "%s", str);
		gw->up.concurrency = get_u32_or(x, sub, "gateway.upstream", "concurrency", 1, 4096,
						gw->up.concurrency);
		gw->up.timeout_ms = get_u32_or(x, sub, "gateway.upstream", "timeout_ms", 10, 600000,
					       gw->up.timeout_ms);
		gw->up.max_response = get_u32_or(x, sub, "gateway.upstream", "max_response", 256,
						 64 << 20, gw->up.max_response);
		gw->up.down_ms = get_u32_or(x, sub, "gateway.upstream", "down_ms", 0, 60000,
					    gw->up.down_ms);
		const config_setting_t *ad = config_setting_get_member(sub, "adaptive");

		if (ad && config_setting_type(ad) != CONFIG_TYPE_BOOL)
			bad(x, ad, "gateway.upstream.adaptive: expected true or false");
		else if (ad)
			gw->up.adaptive = config_setting_get_bool(ad);
	}
	gw->token_ttl_s = get_u32_or(x, g, "gateway", "token_ttl_s", 60, 30 * 86400,
				     gw->token_ttl_s);
	str = get_str(x, g, "gateway", "session_key", false);
	if (str)
		resolve_path(gw->session_key, sizeof(gw->session_key), base, str);
	sub = config_setting_get_member(g, "admission");
	if (sub) {
		if (config_setting_type(sub) != CONFIG_TYPE_BOOL)
			bad(x, sub, "gateway.admission: expected true or false");
		else
			gw->admission = config_setting_get_bool(sub);
	}
	load_endpoints(x, g, c, base);
	load_credentials_db(x, g, c, base);
	for (i = 0; i < c->n_tenants; i++)
		sum += c->tenants[i].reservation;
	if (gw->cap_cpu > 0 && sum > gw->cap_cpu)
		bad(x, config_setting_get_member(root, "tenants"),
		    "tenants: reservations add up to %g cpu units/s, above gateway.capacity.cpu "
		    "%g: the promise could not be kept when every tenant is busy", sum,
		    gw->cap_cpu);
}

int sl_config_client(const struct sl_config *c, int tenant, const char *id)
{
	int i;

	for (i = 0; i < c->n_clients; i++)
		if (c->clients[i].tenant == tenant && !strcmp(c->clients[i].id, id))
			return i;
	return -1;
}

static int hex_val(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* gateway.clients: the OAuth clients of /token, each bound to one tenant. */
static void load_clients(struct vctx *x, const config_setting_t *list, struct sl_config *c)
{
	static const char *const keys[] = { "id", "tenant", "secret_hash", "grants", "rate",
		"burst", NULL };
	int i, j, n;

	if (!config_setting_is_list(list)) {
		bad(x, list, "gateway.clients: expected a list ( { id = ...; }, ... )");
		return;
	}
	n = config_setting_length(list);
	if (n > SL_MAX_CLIENTS) {
		bad(x, list, "gateway.clients: at most %d (got %d)", SL_MAX_CLIENTS, n);
		n = SL_MAX_CLIENTS;
	}
	for (i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(list, (unsigned)i), *gr;
		struct sl_client_cfg *cl = &c->clients[c->n_clients];
		char where[96];
		const char *id, *tn, *h;
		int ti = -1;

		snprintf(where, sizeof(where), "gateway.clients[%d]", i);
		if (!config_setting_is_group(e)) {
			bad(x, e, "%s: expected a group { id = ...; }", where);
			continue;
		}
		check_keys(x, e, where, keys);
		memset(cl, 0, sizeof(*cl));
		id = get_str(x, e, where, "id", true);
		tn = get_str(x, e, where, "tenant", true);
		h = get_str(x, e, where, "secret_hash", true);
		if (id) {
			size_t k, len = strlen(id);

			if (!len || len >= SL_CLIENT_ID_LEN)
				bad(x, e, "%s.id: 1..%d characters", where, SL_CLIENT_ID_LEN - 1);
			for (k = 0; k < len; k++)
				if ((unsigned char)id[k] <= ' ' || id[k] == ',' || id[k] == '"' ||
				    id[k] == '\\' || (unsigned char)id[k] >= 0x7f) {
					bad(x, e, "%s.id: printable ASCII without spaces, commas, "
					    "quotes or backslashes", where);
					break;
				}
			snprintf(cl->id, sizeof(cl->id), "%s", id);
			snprintf(where, sizeof(where), "client '%.40s'", id);
		}
		if (tn) {
			for (j = 0; j < c->n_tenants; j++)
				if (!strcmp(c->tenants[j].name, tn))
					ti = j;
			if (ti < 0)
				bad(x, config_setting_get_member(e, "tenant"),
				    "%s.tenant: no tenant named '%s'", where, tn);
		}
		cl->tenant = ti;
		if (h) {
			size_t k;
			bool ok = !strncmp(h, "blake2b256:", 11) && strlen(h) == 11 + 64;

			for (k = 0; ok && k < 32; k++) {
				int hi = hex_val(h[11 + 2 * k]), lo = hex_val(h[12 + 2 * k]);

				if (hi < 0 || lo < 0)
					ok = false;
				else
					cl->secret_hash[k] = (uint8_t)(hi << 4 | lo);
			}
			if (!ok)
				bad(x, config_setting_get_member(e, "secret_hash"),
				    "%s.secret_hash: expected \"blake2b256:\" and 64 hex digits (the "
				    "BLAKE2b-256 of the secret; never the secret itself)", where);
		}
		gr = config_setting_get_member(e, "grants");
		if (!gr) {
			cl->grants = SL_GRANT_CLIENT_CREDENTIALS | SL_GRANT_REFRESH_TOKEN;
		} else if (!config_setting_is_array(gr) && !config_setting_is_list(gr)) {
			bad(x, gr, "%s.grants: expected [\"client_credentials\", \"refresh_token\"]",
			    where);
		} else {
			for (j = 0; j < config_setting_length(gr); j++) {
				const char *v = config_setting_get_string_elem(gr, (unsigned)j);

				if (v && !strcmp(v, "client_credentials"))
					cl->grants |= SL_GRANT_CLIENT_CREDENTIALS;
				else if (v && !strcmp(v, "refresh_token"))
					cl->grants |= SL_GRANT_REFRESH_TOKEN;
				else
					bad(x, config_setting_get_elem(gr, (unsigned)j),
					    "%s.grants: '%s' is not client_credentials or refresh_token",
					    where, v ? v : "(not a string)");
			}
			if (!cl->grants)
				bad(x, gr, "%s.grants: empty: the client could get no token", where);
		}
		get_num(x, e, where, "rate", false, 1e-6, 1e9, &cl->rate);
		get_num(x, e, where, "burst", false, 1, 1e9, &cl->burst);
		for (j = 0; id && ti >= 0 && j < c->n_clients; j++)
			if (c->clients[j].tenant == ti && !strcmp(c->clients[j].id, id))
				bad(x, e, "%s: defined twice for tenant '%s'", where, tn);
		c->n_clients++;
	}
}

/* gateway.ceilings: ( { tenant = "acme"; cpu = UNITS; }, ... ), the most a tenant may use
 * with the burst pool (the courtesy; its reservation is the promise). */
static void load_ceilings(struct vctx *x, const config_setting_t *list, struct sl_config *c)
{
	static const char *const keys[] = { "tenant", "cpu", NULL };
	int i, j;

	if (!config_setting_is_list(list)) {
		bad(x, list, "gateway.ceilings: expected a list ( { tenant = ...; cpu = ...; }, ... )");
		return;
	}
	for (i = 0; i < config_setting_length(list); i++) {
		const config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
		char where[64];
		const char *tn;
		double d;
		int ti = -1;

		snprintf(where, sizeof(where), "gateway.ceilings[%d]", i);
		if (!config_setting_is_group(e)) {
			bad(x, e, "%s: expected a group { tenant = ...; cpu = ...; }", where);
			continue;
		}
		check_keys(x, e, where, keys);
		tn = get_str(x, e, where, "tenant", true);
		for (j = 0; tn && j < c->n_tenants; j++)
			if (!strcmp(c->tenants[j].name, tn))
				ti = j;
		if (tn && ti < 0) {
			bad(x, config_setting_get_member(e, "tenant"), "%s.tenant: no tenant named "
			    "'%s'", where, tn);
			continue;
		}
		if (!get_num(x, e, where, "cpu", true, 0.0, 1e12, &d) || ti < 0)
			continue;
		if (c->tenants[ti].ceiling > 0)
			bad(x, e, "%s: tenant '%s' has a ceiling already", where, tn);
		if (d < c->tenants[ti].reservation)
			bad(x, config_setting_get_member(e, "cpu"), "%s.cpu: %g is below the "
			    "reservation of '%s' (%g): the courtesy cannot be less than the promise",
			    where, d, tn, c->tenants[ti].reservation);
		if (c->gw.cap_cpu > 0 && d > c->gw.cap_cpu)
			bad(x, config_setting_get_member(e, "cpu"), "%s.cpu: %g is above "
			    "gateway.capacity.cpu %g", where, d, c->gw.cap_cpu);
		c->tenants[ti].ceiling = d;
	}
}

static void load_endpoints(struct vctx *x, const config_setting_t *g, struct sl_config *c,
			   const char *base)
{
	struct sl_gateway_cfg *gw = &c->gw;
	const config_setting_t *s;
	const char *str;

	gw->refresh_ttl_s = get_u32_or(x, g, "gateway", "refresh_ttl_s", 60, 365 * 86400,
				       gw->refresh_ttl_s);
	gw->otp_ttl_s = get_u32_or(x, g, "gateway", "otp_ttl_s", 30, 3600, gw->otp_ttl_s);
	gw->magic_ttl_s = get_u32_or(x, g, "gateway", "magic_ttl_s", 60, 7 * 86400,
				     gw->magic_ttl_s);
	gw->active_tenants = get_u32_or(x, g, "gateway", "active_tenants", 0, SL_MAX_TENANTS,
					gw->active_tenants);
	str = get_str(x, g, "gateway", "delivery", false);
	if (str) {
		if (strcmp(str, "log"))
			bad(x, config_setting_get_member(g, "delivery"),
			    "gateway.delivery: '%s' is not a delivery this build has (\"log\")", str);
		snprintf(gw->delivery, sizeof(gw->delivery), "%s", str);
	}
	str = get_str(x, g, "gateway", "delivery_log", false);
	if (str)
		resolve_path(gw->delivery_log, sizeof(gw->delivery_log), base, str);
	str = get_str(x, g, "gateway", "link_base", false);
	if (str) {
		size_t k = 0;

		/* Put into every link sent: no blank or control character may enter a record. */
		while (str[k] > ' ' && str[k] < 0x7f)
			k++;
		if (strlen(str) >= sizeof(gw->link_base) || str[k] ||
		    (strncmp(str, "https://", 8) && strncmp(str, "http://", 7)))
			bad(x, config_setting_get_member(g, "link_base"),
			    "gateway.link_base: an http:// or https:// URL of at most %zu printable "
			    "ASCII characters without spaces", sizeof(gw->link_base) - 1);
		else
			snprintf(gw->link_base, sizeof(gw->link_base), "%s", str);
	}
	s = config_setting_get_member(g, "login_uniform");
	if (s) {
		if (config_setting_type(s) != CONFIG_TYPE_BOOL)
			bad(x, s, "gateway.login_uniform: expected true or false");
		else
			gw->login_uniform = config_setting_get_bool(s);
	}
	s = config_setting_get_member(g, "clients");
	if (s)
		load_clients(x, s, c);
	s = config_setting_get_member(g, "ceilings");
	if (s)
		load_ceilings(x, s, c);
}

static void load_daemon(struct vctx *x, const config_setting_t *root, struct sl_config *c)
{
	static const char *const keys[] = { "control_socket", "log_level", "metrics_listen",
		"log_format", NULL };
	static const char *const formats[] = { "text", "json", NULL };
	const config_setting_t *d = config_setting_get_member(root, "daemon");
	const char *s;
	int e;

	if (!d)
		return;
	if (!config_setting_is_group(d)) {
		bad(x, d, "daemon: expected a group { ... }");
		return;
	}
	check_keys(x, d, "daemon", keys);
	snprintf(c->src.daemon_file, sizeof(c->src.daemon_file), "%s",
		 config_setting_source_file(d) ? config_setting_source_file(d) : x->file);
	s = get_str(x, d, "daemon", "control_socket", false);
	if (s) {
		if (s[0] != '/' || strlen(s) >= 100)
			bad(x, config_setting_get_member(d, "control_socket"),
			    "daemon.control_socket: must be an absolute path under 100 characters");
		else
			snprintf(c->ctl_socket, sizeof(c->ctl_socket), "%s", s);
		c->src.ctl_socket_line = (int)config_setting_source_line(
			config_setting_get_member(d, "control_socket"));
	}
	s = get_str(x, d, "daemon", "metrics_listen", false);
	if (s) {
		uint8_t fam, addr[16];
		uint16_t port;

		if (parse_listen(s, &fam, addr, &port) || strlen(s) >= sizeof(c->metrics_listen))
			bad(x, config_setting_get_member(d, "metrics_listen"),
			    "daemon.metrics_listen: expected \"ADDR:PORT\" or \"[ADDR6]:PORT\"");
		else
			snprintf(c->metrics_listen, sizeof(c->metrics_listen), "%s", s);
	}
	e = get_enum(x, d, "daemon", "log_level", level_names, LOG_LVL_INFO);
	if (e >= 0)
		c->log_level = e;
	e = get_enum(x, d, "daemon", "log_format", formats, 0);
	if (e >= 0)
		c->log_json = e == 1;
}

/* audit { output = "stderr" | "syslog" | "PATH"; rate = N; burst = N; } (user/lib/audit.h) */
static void load_audit(struct vctx *x, const config_setting_t *root, struct sl_config *c,
		       const char *base)
{
	static const char *const keys[] = { "output", "rate", "burst", NULL };
	const config_setting_t *a = config_setting_get_member(root, "audit");
	const char *s, *why;

	if (!a)
		return;
	if (!config_setting_is_group(a)) {
		bad(x, a, "audit: expected a group { ... }");
		return;
	}
	check_keys(x, a, "audit", keys);
	s = get_str(x, a, "audit", "output", false);
	if (s) {
		why = audit_output_problem(s);
		if (why)
			bad(x, config_setting_get_member(a, "output"), "audit.output: '%.64s' %s",
			    s, why);
		else if (!s[0] || !strcmp(s, "stderr") || !strcmp(s, "syslog"))
			snprintf(c->audit.output, sizeof(c->audit.output), "%s", s);
		else
			resolve_path(c->audit.output, sizeof(c->audit.output), base, s);
	}
	get_num(x, a, "audit", "rate", false, 0, 1000000, &c->audit.rate);
	get_num(x, a, "audit", "burst", false, 1, 1000000, &c->audit.burst);
}

/* A "HOST:PORT" of redis.address or redis.sentinels: a port in range after the last colon,
 * something before it. */
static bool host_port_ok(const char *s)
{
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (!colon || colon == s)
		return false;
	port = strtol(colon + 1, &end, 10);
	return *end == '\0' && port >= 1 && port <= 65535;
}

/* redis.password or redis.password_file (a file of its own, mode 0600 or tighter, so the
 * config file can stay readable); the secret is never echoed in a message. */
static void load_redis_password(struct vctx *x, const config_setting_t *r, struct sl_config *c)
{
	const char *pw = get_str(x, r, "redis", "password", false);
	const char *pf = get_str(x, r, "redis", "password_file", false);
	char buf[sizeof(c->redis.password) + 2];
	size_t n;
	FILE *f;

	if (pw && pf) {
		bad(x, config_setting_get_member(r, "password_file"),
		    "redis: password and password_file are exclusive");
		return;
	}
	if (pw) {
		if (!pw[0] || strlen(pw) >= sizeof(c->redis.password))
			bad(x, config_setting_get_member(r, "password"),
			    "redis.password: 1..%zu bytes", sizeof(c->redis.password) - 1);
		else
			snprintf(c->redis.password, sizeof(c->redis.password), "%s", pw);
		return;
	}
	if (!pf)
		return;
	f = fopen(pf, "re");
	if (!f) {
		bad(x, config_setting_get_member(r, "password_file"),
		    "redis.password_file: %s: %s", pf, strerror(errno));
		return;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	if (!n || n >= sizeof(c->redis.password) || strlen(buf) != n)
		bad(x, config_setting_get_member(r, "password_file"),
		    "redis.password_file: %s: expected one line of 1..%zu bytes", pf,
		    sizeof(c->redis.password) - 1);
	else
		snprintf(c->redis.password, sizeof(c->redis.password), "%s", buf);
	sodium_memzero(buf, sizeof(buf));
}

/* redis.sentinels and redis.master_name, written into redis.address as
 * "sentinel:MASTER@HOST:PORT,HOST:PORT,...": the one string the store, the stream job,
 * status and the reload check already read (store.h, sl_store_target_parse). */
static void load_redis_sentinels(struct vctx *x, const config_setting_t *r,
				 const config_setting_t *list, struct sl_config *c)
{
	const char *master = get_str(x, r, "redis", "master_name", true);
	char addr[sizeof(c->redis.address)];
	size_t used;
	int i, n;

	if (!config_setting_is_array(list) && !config_setting_is_list(list)) {
		bad(x, list, "redis.sentinels: expected [\"HOST:PORT\", ...]");
		return;
	}
	n = config_setting_length(list);
	if (n < 1 || n > SL_REDIS_MAX_SENTINELS) {
		bad(x, list, "redis.sentinels: 1..%d sentinels", SL_REDIS_MAX_SENTINELS);
		return;
	}
	if (!master)
		return;
	for (i = 0; master[i]; i++)
		if (!isalnum((unsigned char)master[i]) && !strchr("_-.", master[i]))
			break;
	if (!i || master[i] || i > 63) {
		bad(x, config_setting_get_member(r, "master_name"),
		    "redis.master_name: 1..63 of [A-Za-z0-9_.-]");
		return;
	}
	used = (size_t)snprintf(addr, sizeof(addr), "sentinel:%s@", master);
	for (i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
		const char *hp = config_setting_type(e) == CONFIG_TYPE_STRING ?
				 config_setting_get_string(e) : NULL;

		if (!hp || !host_port_ok(hp) || strpbrk(hp, ",@ ")) {
			bad(x, e, "redis.sentinels: '%s' is not \"HOST:PORT\"", hp ? hp : "?");
			return;
		}
		used += (size_t)snprintf(addr + (used < sizeof(addr) ? used : sizeof(addr)),
					 used < sizeof(addr) ? sizeof(addr) - used : 0, "%s%s",
					 i ? "," : "", hp);
	}
	if (used >= sizeof(addr)) {
		bad(x, list, "redis.sentinels: too long together (%zu bytes at most)",
		    sizeof(addr) - 1);
		return;
	}
	snprintf(c->redis.address, sizeof(c->redis.address), "%s", addr);
}

/* redis.cluster, written into redis.address as "cluster:HOST:PORT,HOST:PORT,...": seed nodes
 * of a Redis Cluster, whose slot map names its masters (store.h, sl_store_target_parse). */
static void load_redis_cluster(struct vctx *x, const config_setting_t *list,
			       struct sl_config *c)
{
	char addr[sizeof(c->redis.address)];
	size_t used;
	int i, n;

	if (!config_setting_is_array(list) && !config_setting_is_list(list)) {
		bad(x, list, "redis.cluster: expected [\"HOST:PORT\", ...] (seed nodes)");
		return;
	}
	n = config_setting_length(list);
	if (n < 1 || n > SL_REDIS_MAX_SENTINELS) {
		bad(x, list, "redis.cluster: 1..%d seed nodes", SL_REDIS_MAX_SENTINELS);
		return;
	}
	used = (size_t)snprintf(addr, sizeof(addr), "cluster:");
	for (i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
		const char *hp = config_setting_type(e) == CONFIG_TYPE_STRING ?
				 config_setting_get_string(e) : NULL;

		if (!hp || !host_port_ok(hp) || strpbrk(hp, ",@ ")) {
			bad(x, e, "redis.cluster: '%s' is not \"HOST:PORT\"", hp ? hp : "?");
			return;
		}
		used += (size_t)snprintf(addr + (used < sizeof(addr) ? used : sizeof(addr)),
					 used < sizeof(addr) ? sizeof(addr) - used : 0, "%s%s",
					 i ? "," : "", hp);
	}
	if (used >= sizeof(addr)) {
		bad(x, list, "redis.cluster: too long together (%zu bytes at most)",
		    sizeof(addr) - 1);
		return;
	}
	snprintf(c->redis.address, sizeof(c->redis.address), "%s", addr);
}

static void load_redis(struct vctx *x, const config_setting_t *root, struct sl_config *c)
{
	static const char *const keys[] = { "address", "timeout_ms", "breaker_failures",
		"breaker_open_ms", "key_prefix", "user", "password", "password_file",
		"sentinels", "master_name", "cluster", NULL };
	const config_setting_t *r = config_setting_get_member(root, "redis");
	const config_setting_t *sent, *clu;
	const char *s;
	long v;

	if (!r)
		return;
	if (!config_setting_is_group(r)) {
		bad(x, r, "redis: expected a group { ... }");
		return;
	}
	check_keys(x, r, "redis", keys);
	sent = config_setting_get_member(r, "sentinels");
	clu = config_setting_get_member(r, "cluster");
	if (clu && (sent || config_setting_get_member(r, "address"))) {
		bad(x, clu, "redis: cluster excludes address and sentinels (a cluster's seed "
		    "nodes name its masters)");
		return;
	}
	if (clu)
		load_redis_cluster(x, clu, c);
	else if (sent && config_setting_get_member(r, "address"))
		bad(x, sent, "redis: address and sentinels are exclusive (the sentinels name "
		    "the master)");
	else if (sent)
		load_redis_sentinels(x, r, sent, c);
	else if (config_setting_get_member(r, "master_name"))
		bad(x, config_setting_get_member(r, "master_name"),
		    "redis.master_name: only with redis.sentinels");
	s = sent || clu ? NULL : get_str(x, r, "redis", "address", true);
	if (s) {
		if (!strncmp(s, "unix:", 5) ? s[5] != '/' :
		    !strncmp(s, "sentinel:", 9) || !host_port_ok(s))
			bad(x, config_setting_get_member(r, "address"),
			    "redis.address: '%s' is neither \"unix:/absolute/path\" nor "
			    "\"HOST:PORT\"", s);
		else if (strlen(s) >= sizeof(c->redis.address))
			bad(x, config_setting_get_member(r, "address"), "redis.address: too long");
		else
			snprintf(c->redis.address, sizeof(c->redis.address), "%s", s);
	}
	s = get_str(x, r, "redis", "user", false);
	if (s) {
		if (!s[0] || strlen(s) >= sizeof(c->redis.user) || strpbrk(s, " \t\r\n"))
			bad(x, config_setting_get_member(r, "user"),
			    "redis.user: 1..%zu bytes, no spaces", sizeof(c->redis.user) - 1);
		else
			snprintf(c->redis.user, sizeof(c->redis.user), "%s", s);
	}
	load_redis_password(x, r, c);
	if (c->redis.user[0] && !c->redis.password[0])
		bad(x, config_setting_get_member(r, "user"),
		    "redis.user: needs redis.password (or password_file)");
	if (get_int(x, r, "redis", "timeout_ms", false, 1, 1000, &v))
		c->redis.timeout_ms = (uint32_t)v;
	if (get_int(x, r, "redis", "breaker_failures", false, 1, 1000, &v))
		c->redis.breaker_failures = (uint32_t)v;
	if (get_int(x, r, "redis", "breaker_open_ms", false, 10, 600000, &v))
		c->redis.breaker_open_ms = (uint32_t)v;
	s = get_str(x, r, "redis", "key_prefix", false);
	if (s) {
		size_t i, n = strlen(s);

		for (i = 0; i < n; i++)
			if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
				break;
		if (!n || n >= sizeof(c->redis.key_prefix) || i < n)
			bad(x, config_setting_get_member(r, "key_prefix"),
			    "redis.key_prefix: 1..31 of [A-Za-z0-9_-]");
		else
			snprintf(c->redis.key_prefix, sizeof(c->redis.key_prefix), "%s", s);
	}
	/* The store is made from redis.address alone (sluiced's sl_store_opts); it finds the
	 * credentials that go with it here. */
	if (c->redis.address[0])
		sl_store_auth_register(c->redis.address, c->redis.user, c->redis.password);
}

static void load_cluster(struct vctx *x, const config_setting_t *root, struct sl_config *c)
{
	static const char *const keys[] = { "node", "nodes", "lease_interval_ms",
		"demand_window_ms", "lease_floor", NULL };
	const config_setting_t *g = config_setting_get_member(root, "cluster");
	const char *s;
	double d;
	long v;

	if (!g)
		return;
	if (!config_setting_is_group(g)) {
		bad(x, g, "cluster: expected a group { ... }");
		return;
	}
	check_keys(x, g, "cluster", keys);
	s = get_str(x, g, "cluster", "node", false);
	if (s) {
		size_t i, n = strlen(s);

		for (i = 0; i < n; i++)
			if (!isgraph((unsigned char)s[i]) || s[i] == '|')
				break;
		if (!n || n >= sizeof(c->cluster.node) || i < n)
			bad(x, config_setting_get_member(g, "node"),
			    "cluster.node: 1..63 printable characters, no spaces or '|'");
		else
			snprintf(c->cluster.node, sizeof(c->cluster.node), "%s", s);
	}
	if (get_int(x, g, "cluster", "nodes", false, 1, 4096, &v))
		c->cluster.nodes = (uint32_t)v;
	if (get_int(x, g, "cluster", "lease_interval_ms", false, 50, 10000, &v))
		c->cluster.lease_interval_ms = (uint32_t)v;
	if (get_int(x, g, "cluster", "demand_window_ms", false, 100, 60000, &v))
		c->cluster.demand_window_ms = (uint32_t)v;
	if (c->cluster.demand_window_ms < c->cluster.lease_interval_ms)
		bad(x, g, "cluster: demand_window_ms (%u) is shorter than lease_interval_ms (%u)",
		    c->cluster.demand_window_ms, c->cluster.lease_interval_ms);
	if (get_num(x, g, "cluster", "lease_floor", false, 0.0, 1.0, &d))
		c->cluster.lease_floor = d;
	if (c->cluster.lease_floor * c->cluster.nodes > 1.0)
		bad(x, config_setting_get_member(g, "lease_floor") ?
			   config_setting_get_member(g, "lease_floor") : g,
		    "cluster.lease_floor: %g x %u nodes is more than the whole budget",
		    c->cluster.lease_floor, c->cluster.nodes);
}

static void load_counters(struct vctx *x, const config_setting_t *root, struct sl_config *c)
{
	static const char *const keys[] = { "login_failures", "login_successes", "tenant_logins",
		"token_failures", "token_client", "tenant_tokens", "mfa_attempts", "mfa_sends",
		"outbound", "reset_account", "reset_prefix", "reset_tenant", "register_account",
		"register_prefix", "register_tenant", "magic_prefix", "user", "login_parent",
		"prefix_v4", "prefix_v6", "parent_v4", "parent_v6", NULL };
	static const char *const ckeys[] = { "rate", "burst", "fail", "static_rate",
		"static_burst", "max_keys", "enabled", "mode", NULL };
	static const char *const fail_names[] = { "open", "closed", NULL };
	const config_setting_t *g = config_setting_get_member(root, "counters");
	long v;
	int i;

	/* Fail-closed defaults: an even split of the budget, once the node count is known. */
	for (i = 0; i < SL_CTR_N; i++) {
		struct sl_counter_cfg *cc = &c->counters[i];

		if (cc->fail == 1 && cc->rate > 0) {
			cc->static_rate = cc->rate / c->cluster.nodes;
			cc->static_burst = cc->burst / c->cluster.nodes < 1 ? 1 :
					   cc->burst / c->cluster.nodes;
		}
	}
	if (!g)
		return;
	if (!config_setting_is_group(g)) {
		bad(x, g, "counters: expected a group { ... }");
		return;
	}
	check_keys(x, g, "counters", keys);
	if (get_int(x, g, "counters", "prefix_v4", false, 8, 32, &v))
		c->counter_v4_prefix = (uint8_t)v;
	if (get_int(x, g, "counters", "prefix_v6", false, 16, 64, &v))
		c->counter_v6_prefix = (uint8_t)v;
	/* The allocation a key prefix belongs to: never longer than the key prefix itself. */
	if (c->counter_v4_parent > c->counter_v4_prefix)
		c->counter_v4_parent = c->counter_v4_prefix;
	if (c->counter_v6_parent > c->counter_v6_prefix)
		c->counter_v6_parent = c->counter_v6_prefix;
	if (get_int(x, g, "counters", "parent_v4", false, 8, 32, &v)) {
		if (v > c->counter_v4_prefix)
			bad(x, config_setting_get_member(g, "parent_v4"),
			    "counters.parent_v4: /%ld is longer than prefix_v4 (/%u): the parent "
			    "must hold the key prefix", v, c->counter_v4_prefix);
		else
			c->counter_v4_parent = (uint8_t)v;
	}
	if (get_int(x, g, "counters", "parent_v6", false, 16, 64, &v)) {
		if (v > c->counter_v6_prefix)
			bad(x, config_setting_get_member(g, "parent_v6"),
			    "counters.parent_v6: /%ld is longer than prefix_v6 (/%u): the parent "
			    "must hold the key prefix", v, c->counter_v6_prefix);
		else
			c->counter_v6_parent = (uint8_t)v;
	}
	for (i = 0; i < SL_CTR_N; i++) {
		const config_setting_t *k = config_setting_get_member(g, sl_counter_name(i));
		struct sl_counter_cfg *cc = &c->counters[i];
		char where[64];
		int e;

		if (!k)
			continue;
		snprintf(where, sizeof(where), "counters.%s", sl_counter_name(i));
		if (!config_setting_is_group(k)) {
			bad(x, k, "%s: expected a group { ... }", where);
			continue;
		}
		check_keys(x, k, where, ckeys);
		cc->enabled = 1;
		if (config_setting_get_member(k, "enabled")) {
			int b;

			if (config_setting_type(config_setting_get_member(k, "enabled")) !=
			    CONFIG_TYPE_BOOL)
				bad(x, config_setting_get_member(k, "enabled"),
				    "%s.enabled: expected true or false", where);
			else if (config_setting_lookup_bool(k, "enabled", &b))
				cc->enabled = b;
		}
		if (!cc->enabled)
			continue;
		/* The capacity counter has no default: its budget is the platform's to state. */
		get_num(x, k, where, "rate", !cc->rate, 1e-6, 1e9, &cc->rate);
		get_num(x, k, where, "burst", !cc->burst, 1, 1e9, &cc->burst);
		e = get_enum(x, k, where, "fail", fail_names, cc->fail);
		if (e >= 0)
			cc->fail = (uint8_t)e;
		cc->static_rate = cc->static_burst = 0;
		get_num(x, k, where, "static_rate", false, 0, 1e9, &cc->static_rate);
		get_num(x, k, where, "static_burst", false, 0, 1e9, &cc->static_burst);
		if (cc->fail == 1) {
			bool has_rate = config_setting_get_member(k, "static_rate");
			bool has_burst = config_setting_get_member(k, "static_burst");

			/* An even split is the conservative guess at this node's share, for
			 * whichever of the two is not given; a burst below one check would
			 * refuse everything while Redis is out. */
			if (!has_rate)
				cc->static_rate = cc->rate / c->cluster.nodes;
			if (!has_burst)
				cc->static_burst = cc->burst / c->cluster.nodes < 1 ? 1 :
						   cc->burst / c->cluster.nodes;
			else if (cc->static_burst < 1)
				bad(x, config_setting_get_member(k, "static_burst"),
				    "%s.static_burst: %g is below one check (1)", where,
				    cc->static_burst);
		}
		if (cc->fail == 0 && (config_setting_get_member(k, "static_rate") ||
				      config_setting_get_member(k, "static_burst")))
			bad(x, config_setting_get_member(k, "static_rate") ?
				   config_setting_get_member(k, "static_rate") :
				   config_setting_get_member(k, "static_burst"),
			    "%s: static_rate and static_burst apply to fail = \"closed\" only "
			    "(fail open limits at rate / cluster.nodes)", where);
		if (get_int(x, k, where, "max_keys", false, 0, 1L << 30, &v))
			cc->max_keys = (uint32_t)v;
		e = get_enum(x, k, where, "mode", mode_names, SL_MODE_ENFORCE);
		if (e >= 0)
			c->counter_mode[i] = (uint8_t)e;
	}
}

static void load_stream(struct vctx *x, const config_setting_t *root, struct sl_config *c)
{
	static const char *const keys[] = { "enabled", "window_s", "queue", "prefix_v4",
		"prefix_v6", "max_keys", "redis_max_keys", "tail_per_day", "min_attempts",
		"baseline_s", "records",
		"ladder_delay_ms", "mode", "prefix_accounts", "asn_accounts", "account_sources",
		"password_accounts", "tenant_failure_ratio", "account_keys", NULL };
	static const char *const dkeys[] = { "enabled", "mode", "threshold", "action", "factor",
		"ttl_s", NULL };
	/* Which actions each detector may take. */
	static const uint8_t allowed[SL_DET_N] = {
		[SL_DET_PREFIX_ACCOUNTS] = 1 << SL_DET_BLOCK | 1 << SL_DET_TIGHTEN | 1 << SL_DET_ALERT,
		[SL_DET_ASN_ACCOUNTS] = 1 << SL_DET_BLOCK | 1 << SL_DET_TIGHTEN | 1 << SL_DET_ALERT,
		[SL_DET_ACCOUNT_SOURCES] = 1 << SL_DET_LADDER | 1 << SL_DET_ALERT,
		[SL_DET_PASSWORD_ACCOUNTS] = 1 << SL_DET_STEP_UP | 1 << SL_DET_ALERT,
		[SL_DET_TENANT_RATIO] = 1 << SL_DET_ALERT,
		[SL_DET_ACCOUNT_KEYS] = 1 << SL_DET_STEP_UP | 1 << SL_DET_ALERT,
	};
	static const char *const action_names_d[] = { "block", "tighten", "ladder", "step_up",
		"alert", NULL };
	const config_setting_t *g = config_setting_get_member(root, "stream");
	struct sl_stream_cfg *st = &c->stream;
	int all_mode = -1, i, e;
	long v;

	if (!g)
		return;
	if (!config_setting_is_group(g)) {
		bad(x, g, "stream: expected a group { ... }");
		return;
	}
	check_keys(x, g, "stream", keys);
	if (config_setting_get_member(g, "enabled")) {
		int b;

		if (config_setting_type(config_setting_get_member(g, "enabled")) != CONFIG_TYPE_BOOL)
			bad(x, config_setting_get_member(g, "enabled"),
			    "stream.enabled: expected true or false");
		else if (config_setting_lookup_bool(g, "enabled", &b))
			st->enabled = b;
	}
	if (get_int(x, g, "stream", "window_s", false, 10, 86400, &v))
		st->window_s = (uint32_t)v;
	if (get_int(x, g, "stream", "queue", false, 64, 1L << 24, &v)) {
		if (v & (v - 1))
			bad(x, config_setting_get_member(g, "queue"),
			    "stream.queue: %ld is not a power of two", v);
		else
			st->queue = (uint32_t)v;
	}
	if (get_int(x, g, "stream", "prefix_v4", false, 8, 32, &v))
		st->prefix_v4 = (uint8_t)v;
	if (get_int(x, g, "stream", "prefix_v6", false, 16, 64, &v))
		st->prefix_v6 = (uint8_t)v;
	if (get_int(x, g, "stream", "max_keys", false, 1024, 1L << 26, &v))
		st->max_keys = (uint32_t)v;
	if (get_int(x, g, "stream", "redis_max_keys", false, 0, 1L << 26, &v))
		st->redis_max_keys = (uint32_t)v;
	if (get_int(x, g, "stream", "tail_per_day", false, 1, 1L << 30, &v))
		st->tail_per_day = (uint32_t)v;
	if (get_int(x, g, "stream", "min_attempts", false, 1, 1L << 30, &v))
		st->min_attempts = (uint32_t)v;
	if (get_int(x, g, "stream", "baseline_s", false, 60, 7L * 86400, &v))
		st->baseline_s = (uint32_t)v;
	if (get_int(x, g, "stream", "records", false, 16, 1L << 20, &v))
		st->records = (uint32_t)v;
	if (get_int(x, g, "stream", "ladder_delay_ms", false, 0, 60000, &v))
		st->ladder_delay_ms = (uint32_t)v;
	all_mode = get_enum(x, g, "stream", "mode", mode_names, -2);
	for (i = 0; i < SL_DET_N; i++) {
		const config_setting_t *k = config_setting_get_member(g, sl_detector_name(i));
		struct sl_detector_cfg *d = &st->det[i];
		char where[64];
		double n;

		if (all_mode >= 0)
			d->mode = (uint8_t)all_mode;
		if (!k)
			continue;
		snprintf(where, sizeof(where), "stream.%s", sl_detector_name(i));
		if (!config_setting_is_group(k)) {
			bad(x, k, "%s: expected a group { ... }", where);
			continue;
		}
		check_keys(x, k, where, dkeys);
		if (config_setting_get_member(k, "enabled")) {
			int b;

			if (config_setting_type(config_setting_get_member(k, "enabled")) !=
			    CONFIG_TYPE_BOOL)
				bad(x, config_setting_get_member(k, "enabled"),
				    "%s.enabled: expected true or false", where);
			else if (config_setting_lookup_bool(k, "enabled", &b))
				d->enabled = b;
		}
		e = get_enum(x, k, where, "mode", mode_names, d->mode);
		if (e >= 0)
			d->mode = (uint8_t)e;
		if (get_num(x, k, where, "threshold", false, 1, 1e9, &n))
			d->threshold = n;
		e = get_enum(x, k, where, "action", action_names_d, d->action);
		if (e >= 0) {
			if (!(allowed[i] & (1u << e)))
				bad(x, config_setting_get_member(k, "action"),
				    "%s.action: '%s' is not an action this detector can take", where,
				    sl_det_action_name((uint8_t)e));
			else
				d->action = (uint8_t)e;
		}
		if (get_num(x, k, where, "factor", false, 0.001, 1, &n))
			d->factor = n;
		if (get_int(x, k, where, "ttl_s", false, 1, 7L * 86400, &v))
			d->ttl_s = (uint32_t)v;
	}
}

int sl_config_load(const char *path, const char *base_dir, struct sl_config *out, char *err,
		   size_t errlen)
{
	static const char *const top_keys[] = { "edge", "classes", "tenants", "routes", "gateway",
		"daemon", "redis", "cluster", "counters", "stream", "audit", NULL };
	struct vctx x = { .file = path, .err = { .buf = err, .len = errlen } };
	char cfg_dir[PATH_MAX];
	struct sl_config *c;
	config_t cfg;
	FILE *f;
	int ret = 0;

	if (err && errlen)
		err[0] = '\0';
	f = fopen(path, "r");
	if (!f) {
		int e = errno;

		snprintf(err, errlen, "%s: cannot read: %s\n", path, strerror(e));
		return -e;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		fclose(f);
		return -ENOMEM;
	}
	sl_config_defaults(c);
	snprintf(c->path, sizeof(c->path), "%s", path);
	x.warn = (struct msgs){ .buf = c->warnings, .len = sizeof(c->warnings) };
	/* Relative paths in the file (asn_table, credentials, delivery_log, @include) mean
	 * the same to sluiced and to sluicectl: relative to the file's own directory. */
	if (!base_dir) {
		char *slash;

		if (!realpath(path, cfg_dir))
			snprintf(cfg_dir, sizeof(cfg_dir), "%s", path);
		slash = strrchr(cfg_dir, '/');
		if (slash && slash != cfg_dir)
			*slash = '\0';
		else
			snprintf(cfg_dir, sizeof(cfg_dir), "%s", slash ? "/" : ".");
		base_dir = cfg_dir;
	}

	config_init(&cfg);
	if (base_dir) /* libconfig strdup()s it: NULL would crash */
		config_set_include_dir(&cfg, base_dir);
	if (!config_read(&cfg, f)) {
		const char *ef = config_error_file(&cfg);

		snprintf(err, errlen, "%s:%d: %s\n", ef ? ef : path, config_error_line(&cfg),
			 config_error_text(&cfg));
		ret = -EINVAL;
		goto out;
	}
	check_keys(&x, config_root_setting(&cfg), "the top level", top_keys);
	load_cluster(&x, config_root_setting(&cfg), c); /* tenants' defaults use nodes */
	load_edge(&x, config_root_setting(&cfg), c, base_dir);
	/* Routes first: on stateless HTTP ports they are what the edge charges, and every
	 * class and tenant burst below must hold the most expensive of them. */
	load_routes(&x, config_root_setting(&cfg), c);
	set_unreadable(c);
	load_classes(&x, config_root_setting(&cfg), c);
	load_tenants(&x, config_root_setting(&cfg), c);
	load_gateway(&x, config_root_setting(&cfg), c, base_dir);
	check_route_logins(&x, config_root_setting(&cfg), c);
	resolve_upstreams(&x, config_root_setting(&cfg), c);
	if (!c->has_edge && !c->gw.present)
		bad(&x, NULL, "nothing to run: the file has neither an 'edge' nor a 'gateway' "
		    "section");
	load_daemon(&x, config_root_setting(&cfg), c);
	load_redis(&x, config_root_setting(&cfg), c);
	load_counters(&x, config_root_setting(&cfg), c);
	load_stream(&x, config_root_setting(&cfg), c);
	load_audit(&x, config_root_setting(&cfg), c, base_dir);
	if (x.err.n) {
		ret = -EINVAL;
		goto out;
	}
	c->n_warnings = x.warn.n;
	*out = *c;
out:
	config_destroy(&cfg);
	fclose(f);
	free(c);
	return ret;
}

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

/* One problem of sl_config_check_host(): at @file:@line, or at the config file when the
 * setting was a default (line 0). */
__attribute__((format(printf, 4, 5)))
static void host_bad(struct msgs *m, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	append(m, file, line, "", fmt, ap);
	va_end(ap);
}

/* @path's directory, in @dir. */
static void dir_of(const char *path, char *dir, size_t n)
{
	char *slash;

	snprintf(dir, n, "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = '\0';
	else if (slash)
		*slash = '\0';
}

static bool read_only(const char *dir)
{
	struct statvfs v;

	return !statvfs(dir, &v) && (v.f_flag & ST_RDONLY);
}

int sl_config_check_host(const struct sl_config *c, char *err, size_t errlen)
{
	struct msgs m = { .buf = err, .len = errlen };
	const char *ef = c->src.edge_file[0] ? c->src.edge_file : c->path;
	const char *df = c->src.daemon_file[0] ? c->src.daemon_file : c->path;
	char dir[PATH_MAX], up[PATH_MAX];
	struct statfs fs;
	struct stat st;
	int i;

	if (err && errlen)
		err[0] = '\0';
	for (i = 0; c->has_edge && i < c->n_ifaces; i++)
		if (!if_nametoindex(c->ifaces[i]))
			host_bad(&m, ef, c->src.iface_line[i], "edge.interfaces: no interface '%s' "
				 "on this host (ip -br link lists them)", c->ifaces[i]);
	if (c->has_edge && c->asn_table[0] && access(c->asn_table, R_OK))
		host_bad(&m, ef, c->src.asn_table_line, "edge.asn_table: cannot read %s: %s",
			 c->asn_table, strerror(errno));
	/* As the edge's start does it: the pins' directory is made on a bpffs, and a bpffs is
	 * mounted only on /sys/fs/bpf. */
	if (c->has_edge) {
		const char *pp = c->pin_path;
		int l = c->src.pin_path_line;

		dir_of(pp, dir, sizeof(dir));
		if (!statfs(dir, &fs) && fs.f_type == BPF_FS_MAGIC) {
			if (!stat(pp, &st) && !S_ISDIR(st.st_mode))
				host_bad(&m, ef, l, "edge.pin_path: %s exists and is not a directory",
					 pp);
		} else if (!strcmp(dir, "/sys/fs/bpf")) {
			if (stat(dir, &st) || !S_ISDIR(st.st_mode))
				host_bad(&m, ef, l, "edge.pin_path: %s: there is no %s to mount a bpf "
					 "filesystem on (is sysfs mounted?)", pp, dir);
		} else {
			host_bad(&m, ef, l, "edge.pin_path: %s is not on a bpf filesystem (mount -t "
				 "bpf bpf %s; sluiced mounts one by itself only on /sys/fs/bpf)", pp,
				 dir);
		}
	}
	/* The socket's directory is made if missing (one level, as the listener does); a
	 * stale socket is removed, and so would be any other file at that path. */
	dir_of(c->ctl_socket, dir, sizeof(dir));
	if (!stat(c->ctl_socket, &st) && !S_ISSOCK(st.st_mode))
		host_bad(&m, df, c->src.ctl_socket_line, "daemon.control_socket: %s exists and is "
			 "not a socket (sluiced would remove it)", c->ctl_socket);
	if (!stat(dir, &st)) {
		if (!S_ISDIR(st.st_mode))
			host_bad(&m, df, c->src.ctl_socket_line, "daemon.control_socket: %s is not a "
				 "directory", dir);
		else if (read_only(dir))
			host_bad(&m, df, c->src.ctl_socket_line, "daemon.control_socket: %s is on a "
				 "read-only filesystem", dir);
	} else {
		dir_of(dir, up, sizeof(up));
		if (stat(up, &st) || !S_ISDIR(st.st_mode))
			host_bad(&m, df, c->src.ctl_socket_line, "daemon.control_socket: neither %s "
				 "nor %s exists (sluiced creates only the socket's own directory)", dir,
				 up);
		else if (read_only(up))
			host_bad(&m, df, c->src.ctl_socket_line, "daemon.control_socket: %s does not "
				 "exist and %s is on a read-only filesystem", dir, up);
	}
	/* The audit file is opened (created) at start, and a start stops if it cannot be. */
	if (c->audit.output[0] == '/') {
		if (!stat(c->audit.output, &st)) {
			if (!S_ISREG(st.st_mode))
				host_bad(&m, c->path, 0, "audit.output: %s is not a regular file",
					 c->audit.output);
			else if (access(c->audit.output, W_OK))
				host_bad(&m, c->path, 0, "audit.output: cannot write %s: %s",
					 c->audit.output, strerror(errno));
		} else {
			dir_of(c->audit.output, dir, sizeof(dir));
			if (access(dir, W_OK))
				host_bad(&m, c->path, 0, "audit.output: cannot create %s in %s: %s",
					 c->audit.output, dir, strerror(errno));
		}
	}
	return m.n;
}

int sl_config_peek(const char *path, char *pin_path, size_t pn, char *sock, size_t sn,
		   char *ifaces, size_t ifn)
{
	const char *s;
	config_t cfg;
	int ok;

	config_init(&cfg);
	ok = config_read_file(&cfg, path);
	if (ok) {
		const config_setting_t *l;

		if (config_lookup_string(&cfg, "edge.pin_path", &s))
			snprintf(pin_path, pn, "%s", s);
		if (config_lookup_string(&cfg, "daemon.control_socket", &s))
			snprintf(sock, sn, "%s", s);
		l = config_lookup(&cfg, "edge.interfaces");
		if (ifaces && ifn && l) {
			int i, n = config_setting_length(l);
			size_t used = 0;

			ifaces[0] = '\0';
			for (i = 0; i < n; i++) {
				const char *name = config_setting_get_string_elem(l, i);
				int w;

				if (!name)
					continue;
				w = snprintf(ifaces + used, ifn - used, "%s%s", used ? "," : "", name);
				if (w < 0 || (size_t)w >= ifn - used)
					break;
				used += (size_t)w;
			}
		}
	}
	config_destroy(&cfg);
	return ok ? 0 : -EINVAL;
}

int sl_upstream_parse(const char *url, char *host, size_t hostlen, uint16_t *port,
		      const char **why)
{
	const char *h, *end, *colon;
	unsigned char a[16];
	char *e;
	size_t n, i;
	long p;

	if (!strncmp(url, "unix:", 5)) {
		/* A Unix stream socket: "unix:/absolute/path", port 0. */
		n = strlen(url + 5);
		if (url[5] != '/' || n >= hostlen || n >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
			*why = "needs an absolute socket path of at most 107 bytes after unix:";
			return -EINVAL;
		}
		memcpy(host, url + 5, n + 1);
		*port = 0;
		return 0;
	}
	if (strncmp(url, "http://", 7)) {
		*why = "is not http://HOST:PORT or unix:/PATH (https is not supported yet)";
		return -EINVAL;
	}
	h = url + 7;
	if (*h == '[') {
		end = strchr(h, ']');
		if (!end || end[1] != ':') {
			*why = "has no closing ']' then ':PORT'";
			return -EINVAL;
		}
		n = (size_t)(end - h - 1);
		colon = end + 1;
		h++;
	} else {
		colon = strchr(h, ':');
		if (!colon) {
			*why = "has no :PORT";
			return -EINVAL;
		}
		n = (size_t)(colon - h);
	}
	if (!n || n >= hostlen) {
		*why = "has no host, or one too long";
		return -EINVAL;
	}
	memcpy(host, h, n);
	host[n] = '\0';
	if (h[-1] == '[') {
		if (inet_pton(AF_INET6, host, a) != 1) {
			*why = "has no IPv6 address inside [ ]";
			return -EINVAL;
		}
	} else if (inet_pton(AF_INET, host, a) != 1) {
		/* A DNS name (RFC 1123): letters, digits, '-' and '.', no empty label. */
		for (i = 0; i < n; i++) {
			char c = host[i];

			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			      (c >= '0' && c <= '9') || c == '-' || c == '.') ||
			    (c == '.' && (i == 0 || host[i - 1] == '.')) ||
			    (c == '-' && (i == 0 || host[i - 1] == '.')) || strchr(host, ':')) {
				*why = "needs an IPv4 address, [IPv6], or a DNS name";
				return -EINVAL;
			}
		}
	}
	errno = 0;
	p = strtol(colon + 1, &e, 10);
	if (errno || e == colon + 1 || (*e && strcmp(e, "/")) || p < 1 || p > 65535) {
		*why = "needs a port 1..65535 and no path";
		return -EINVAL;
	}
	*port = (uint16_t)p;
	return 0;
}

const char *sl_config_upstream_of(const struct sl_config *c, int ri, int ti)
{
	const char *u = "";

	if (ri >= 0 && ri < c->n_routes)
		u = c->routes[ri].upstream;
	if (!u[0] && ti >= 0 && ti < c->n_tenants)
		u = c->tenants[ti].upstream;
	if (!u[0])
		u = c->gw.up.url;
	return u[0] && strcmp(u, "builtin") ? u : NULL;
}

const struct sl_upstream_addr *sl_config_upstream_addr(const struct sl_config *c,
						       const char *url)
{
	int i;

	for (i = 0; i < c->n_up_addrs; i++)
		if (!strcmp(c->up_addrs[i].url, url))
			return &c->up_addrs[i];
	return NULL;
}
