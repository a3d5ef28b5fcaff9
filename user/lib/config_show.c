// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The effective config written back out (see config_show.h). One walk over struct
 * sl_config drives two writers: libconfig text and JSON, so the two cannot disagree.
 */
#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config_show.h"
#include "reasons.h"

#define SHOW_MAX_DEPTH 8

struct show {
	FILE *f;
	bool json;
	int depth;
	bool first[SHOW_MAX_DEPTH];
	bool in_list[SHOW_MAX_DEPTH]; /* members of a list have no names */
};

static void indent(struct show *s)
{
	int i;

	for (i = 0; i < s->depth; i++)
		fputs("  ", s->f);
}

/* Before a member named @key (NULL in a list). */
static void sep(struct show *s, const char *key)
{
	if (s->json) {
		if (!s->first[s->depth])
			fputc(',', s->f);
		s->first[s->depth] = false;
		if (key && !s->in_list[s->depth])
			fprintf(s->f, "\"%s\":", key);
		return;
	}
	if (s->in_list[s->depth] && !s->first[s->depth])
		fputs(",\n", s->f);
	s->first[s->depth] = false;
	indent(s);
	if (key && !s->in_list[s->depth])
		fprintf(s->f, "%s = ", key);
}

static void end_setting(struct show *s)
{
	if (!s->json && !s->in_list[s->depth])
		fputs(";\n", s->f);
}

/* libconfig's three: a group { }, a list ( ) of anything, an array [ ] of scalars. */
enum kind { K_GROUP, K_LIST, K_ARRAY };
static const char open_ch[] = "{([", close_ch[] = "})]";

static void open_(struct show *s, const char *key, enum kind k)
{
	sep(s, key);
	if (s->json)
		fputc(k == K_GROUP ? '{' : '[', s->f);
	else
		fprintf(s->f, "%c\n", open_ch[k]);
	s->depth++;
	s->first[s->depth] = true;
	s->in_list[s->depth] = k != K_GROUP;
}

static void close_(struct show *s, enum kind k)
{
	bool empty = s->first[s->depth];

	s->depth--;
	if (s->json) {
		fputc(k == K_GROUP ? '}' : ']', s->f);
		return;
	}
	if (k != K_GROUP && !empty)
		fputc('\n', s->f);
	indent(s);
	fputc(close_ch[k], s->f);
	end_setting(s);
}

static void group(struct show *s, const char *key) { open_(s, key, K_GROUP); }
static void group_end(struct show *s) { close_(s, K_GROUP); }
static void list(struct show *s, const char *key) { open_(s, key, K_LIST); }
static void list_end(struct show *s) { close_(s, K_LIST); }
static void array(struct show *s, const char *key) { open_(s, key, K_ARRAY); }
static void array_end(struct show *s) { close_(s, K_ARRAY); }

static void str_raw(struct show *s, const char *v)
{
	const unsigned char *p;

	fputc('"', s->f);
	for (p = (const unsigned char *)v; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(s->f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(s->f, s->json ? "\\u%04x" : "\\x%02x", *p);
		else
			fputc(*p, s->f);
	}
	fputc('"', s->f);
}

static void str(struct show *s, const char *key, const char *v)
{
	sep(s, key);
	str_raw(s, v);
	end_setting(s);
}

static void num(struct show *s, const char *key, double v)
{
	char b[64];

	sep(s, key);
	/* libconfig reads a number with a '.' or an exponent as a float: keep floats floats. */
	snprintf(b, sizeof(b), "%.15g", v);
	if (!strpbrk(b, ".eEn"))
		strcat(b, ".0");
	fputs(b, s->f);
	end_setting(s);
}

static void integer(struct show *s, const char *key, long long v)
{
	sep(s, key);
	fprintf(s->f, "%lld", v);
	end_setting(s);
}

static void boolean(struct show *s, const char *key, bool v)
{
	sep(s, key);
	fputs(v ? "true" : "false", s->f);
	end_setting(s);
}

/* A value the text form leaves out (it would not load) and JSON shows as null. */
static void absent(struct show *s, const char *key, const char *why)
{
	if (s->json) {
		sep(s, key);
		fputs("null", s->f);
		return;
	}
	indent(s);
	fprintf(s->f, "# %s: %s\n", key, why);
}

static void comment(struct show *s, const char *text)
{
	if (!s->json) {
		indent(s);
		fprintf(s->f, "# %s\n", text);
	}
}

static const char *fam_addr(uint8_t family, const uint8_t *addr, char *buf, size_t n)
{
	inet_ntop(family == SL_FAM_V6 ? AF_INET6 : AF_INET, addr, buf, (socklen_t)n);
	return buf;
}

static void show_edge(struct show *s, const struct sl_config *c)
{
	int i;

	group(s, "edge");
	array(s, "interfaces");
	for (i = 0; i < c->n_ifaces; i++)
		str(s, NULL, c->ifaces[i]);
	array_end(s);
	str(s, "xdp_mode", c->xdp_mode == SL_XDP_GENERIC ? "generic" : "native");
	list(s, "ports");
	for (i = 0; i < c->n_ports; i++) {
		const struct sl_port_cfg *p = &c->ports[i];

		group(s, NULL);
		integer(s, "port", p->port);
		str(s, "front", sl_front_name(p->front));
		str(s, "protocol", sl_proto_name(p->proto));
		str(s, "action", sl_action_name(p->action));
		integer(s, "cost", p->cost);
		integer(s, "unreadable_cost", p->unreadable_cost);
		group_end(s);
	}
	list_end(s);
	integer(s, "state_entries", c->state_entries);
	if (c->asn_table[0])
		str(s, "asn_table", c->asn_table);
	else
		absent(s, "asn_table", "none (every source is class unknown)");
	num(s, "new_key_credit", c->new_key_credit);
	str(s, "malformed", sl_action_name(c->malformed_action));
	str(s, "fragments", sl_action_name(c->fragment_action));
	str(s, "pin_path", c->pin_path);
	sep(s, "retry_after");
	fputc('[', s->f);
	for (i = 0; i < c->n_retry; i++)
		fprintf(s->f, "%s%u", i ? ", " : "", c->retry_after[i]);
	fputc(']', s->f);
	end_setting(s);
	integer(s, "streak_decay", c->streak_decay_s);
	integer(s, "event_sample", c->event_sample);
	integer(s, "cookie_rotate", c->cookie_rotate_s);
	integer(s, "mss_v4", c->mss4);
	integer(s, "mss_v6", c->mss6);
	group_end(s);
}

static void show_classes(struct show *s, const struct sl_config *c)
{
	int i;

	list(s, "classes");
	for (i = 0; i < c->n_classes; i++) {
		const struct sl_class_cfg *k = &c->classes[i];

		group(s, NULL);
		str(s, "name", k->name);
		integer(s, "v4_prefix", k->v4_prefix);
		integer(s, "v6_prefix", k->v6_prefix);
		integer(s, "v4_parent", k->v4_parent);
		integer(s, "v6_parent", k->v6_parent);
		num(s, "rate", k->rate);
		num(s, "burst", k->burst);
		num(s, "parent_rate", k->parent_rate);
		num(s, "parent_burst", k->parent_burst);
		str(s, "mode", sl_mode_name(k->mode));
		group_end(s);
	}
	list_end(s);
}

static void show_routes(struct show *s, const struct sl_config *c)
{
	int i;

	list(s, "routes");
	for (i = 0; i < c->n_routes; i++) {
		const struct sl_route_cfg *r = &c->routes[i];

		group(s, NULL);
		str(s, "name", r->name);
		str(s, "method", sl_method_name(r->method));
		str(s, "path", r->path);
		num(s, "cpu", r->cpu);
		num(s, "db", r->db);
		if (r->upstream[0])
			str(s, "upstream", r->upstream);
		if (r->concurrency)
			integer(s, "concurrency", r->concurrency);
		if (r->login.from) {
			static const char *const from[] = { "", "basic", "form", "json" };
			int k;

			group(s, "login");
			str(s, "account", from[r->login.from]);
			str(s, "username", r->login.user);
			str(s, "password", r->login.password);
			array(s, "success");
			for (k = 0; k < r->login.n_success; k++)
				integer(s, NULL, r->login.success[k]);
			array_end(s);
			array(s, "failure");
			for (k = 0; k < r->login.n_failure; k++)
				integer(s, NULL, r->login.failure[k]);
			array_end(s);
			if (r->login.by) {
				bool h = r->login.by == SL_VERDICT_HEADER;

				group(s, h ? "header" : "json");
				str(s, h ? "name" : "field", r->login.by_name);
				array(s, "success");
				for (k = 0; k < r->login.n_ok; k++)
					str(s, NULL, r->login.ok[k]);
				array_end(s);
				array(s, "failure");
				for (k = 0; k < r->login.n_no; k++)
					str(s, NULL, r->login.no[k]);
				array_end(s);
				group_end(s);
			}
			group_end(s);
		}
		group_end(s);
	}
	list_end(s);
}

static void show_tenants(struct show *s, const struct sl_config *c)
{
	char a[INET6_ADDRSTRLEN], l[INET6_ADDRSTRLEN + 16];
	int i, k;

	list(s, "tenants");
	for (i = 0; i < c->n_tenants; i++) {
		const struct sl_tenant_cfg *t = &c->tenants[i];

		group(s, NULL);
		str(s, "name", t->name);
		array(s, "hosts");
		for (k = 0; k < t->n_hosts; k++)
			str(s, NULL, t->hosts[k]);
		array_end(s);
		if (t->n_listen)
			array(s, "listen");
		for (k = 0; k < t->n_listen; k++) {
			fam_addr(t->listen[k].family, t->listen[k].addr, a, sizeof(a));
			snprintf(l, sizeof(l), t->listen[k].family == SL_FAM_V6 ? "[%s]:%u" : "%s:%u",
				 a, t->listen[k].port);
			str(s, NULL, l);
		}
		if (t->n_listen)
			array_end(s);
		if (t->edge_budget) {
			num(s, "rate", t->rate);
			num(s, "burst", t->burst);
			num(s, "static_rate", t->static_rate);
			num(s, "static_burst", t->static_burst);
			integer(s, "lease_ttl", t->lease_ttl_s);
			str(s, "mode", sl_mode_name(t->mode));
		} else {
			absent(s, "rate", "none (no edge budget)");
		}
		num(s, "reservation", t->reservation);
		if (t->upstream[0])
			str(s, "upstream", t->upstream);
		group_end(s);
	}
	list_end(s);
}

static void show_gateway(struct show *s, const struct sl_config *c)
{
	const struct sl_gateway_cfg *g = &c->gw;
	char b[96], hex[65];
	int i, h;

	group(s, "gateway");
	str(s, "listen", g->listen);
	if (g->credentials[0])
		str(s, "credentials", g->credentials);
	else
		absent(s, "credentials", "none (every login fails)");
	group(s, "capacity");
	num(s, "cpu", g->cap_cpu);
	num(s, "db", g->cap_db);
	group_end(s);
	group(s, "queue");
	integer(s, "target_wait_ms", g->target_wait_ms);
	integer(s, "lifo_after_ms", g->lifo_after_ms);
	integer(s, "codel_interval_ms", g->codel_interval_ms);
	integer(s, "default_deadline_ms", g->default_deadline_ms);
	integer(s, "max_deadline_ms", g->max_deadline_ms);
	integer(s, "max_depth", g->max_depth);
	group_end(s);
	group(s, "argon2");
	integer(s, "m_cost_kib", g->m_cost_kib);
	integer(s, "t_cost", g->t_cost);
	integer(s, "parallelism", g->parallelism);
	integer(s, "memory_budget_mib", g->memory_budget_mib);
	snprintf(b, sizeof(b), "workers: %u (memory_budget_mib x 1024 / m_cost_kib, derived)",
		 g->workers);
	comment(s, b);
	group_end(s);
	integer(s, "trusted_hops", g->trusted_hops);
	boolean(s, "admission", g->admission);
	integer(s, "max_body", g->max_body);
	integer(s, "max_headers", g->max_headers);
	integer(s, "reject_floor_ms", g->reject_floor_ms);
	integer(s, "max_held", g->max_held);
	integer(s, "max_connections", g->max_connections);
	integer(s, "max_connections_per_prefix", g->max_conns_prefix);
	integer(s, "max_connections_per_parent", g->max_conns_parent);
	integer(s, "max_requests_per_connection", g->max_requests_conn);
	integer(s, "request_timeout_ms", g->request_timeout_ms);
	integer(s, "drain_ms", g->drain_ms);
	if (g->tls.certificate[0]) {
		group(s, "tls");
		str(s, "certificate", g->tls.certificate);
		str(s, "key", g->tls.key);
		str(s, "min_version", g->tls.min_version == 13 ? "1.3" : "1.2");
		group_end(s);
	} else {
		absent(s, "tls", "none (plaintext)");
	}
	if (g->db.present) {
		static const char *const fails[] = { "closed", "file" };

		group(s, "credentials_db");
		/* a conninfo may hold a password: redacted like Redis's */
		if (g->db.conninfo_file[0])
			str(s, "conninfo_file", g->db.conninfo_file);
		else
			str(s, "conninfo", SL_REDACTED);
		str(s, "lookup", g->db.lookup);
		if (g->db.insert[0])
			str(s, "insert", g->db.insert);
		else
			absent(s, "insert", "none (no sign-ups)");
		if (g->db.update[0])
			str(s, "update", g->db.update);
		else
			absent(s, "update", "none (no password resets)");
		integer(s, "pool", g->db.pool);
		integer(s, "timeout_ms", g->db.timeout_ms);
		integer(s, "queue", g->db.queue);
		integer(s, "retry_after_s", g->db.retry_after_s);
		str(s, "fail", fails[g->db.fail == SL_DB_FAIL_FILE]);
		group_end(s);
	} else {
		absent(s, "credentials_db", "none (the credentials file)");
	}
	if (g->up.url[0]) {
		group(s, "upstream");
		str(s, "url", g->up.url);
		integer(s, "concurrency", g->up.concurrency);
		integer(s, "timeout_ms", g->up.timeout_ms);
		integer(s, "max_response", g->up.max_response);
		integer(s, "down_ms", g->up.down_ms);
		boolean(s, "adaptive", g->up.adaptive);
		group_end(s);
	} else {
		absent(s, "upstream", "none (the built-in endpoints)");
	}
	integer(s, "token_ttl_s", g->token_ttl_s);
	if (g->session_key[0])
		str(s, "session_key", g->session_key);
	else
		absent(s, "session_key", "none (a random key made at start)");
	integer(s, "refresh_ttl_s", g->refresh_ttl_s);
	integer(s, "otp_ttl_s", g->otp_ttl_s);
	integer(s, "magic_ttl_s", g->magic_ttl_s);
	str(s, "delivery", g->delivery[0] ? g->delivery : "log");
	if (g->delivery_log[0])
		str(s, "delivery_log", g->delivery_log);
	else
		absent(s, "delivery_log", "none");
	if (g->link_base[0])
		str(s, "link_base", g->link_base);
	else
		absent(s, "link_base", "none (links are bare paths)");
	boolean(s, "login_uniform", g->login_uniform);
	integer(s, "active_tenants", g->active_tenants);
	list(s, "ceilings");
	for (i = 0; i < c->n_tenants; i++) {
		if (c->tenants[i].ceiling <= 0)
			continue;
		group(s, NULL);
		str(s, "tenant", c->tenants[i].name);
		num(s, "cpu", c->tenants[i].ceiling);
		group_end(s);
	}
	list_end(s);
	list(s, "clients");
	for (i = 0; i < c->n_clients; i++) {
		const struct sl_client_cfg *k = &c->clients[i];

		group(s, NULL);
		str(s, "id", k->id);
		str(s, "tenant", k->tenant >= 0 && k->tenant < c->n_tenants ?
			c->tenants[k->tenant].name : "?");
		/* A hash of a random secret, as the file has it: not the secret. */
		for (h = 0; h < 32; h++)
			snprintf(hex + 2 * h, 3, "%02x", k->secret_hash[h]);
		snprintf(b, sizeof(b), "blake2b256:%s", hex);
		str(s, "secret_hash", b);
		array(s, "grants");
		if (k->grants & SL_GRANT_CLIENT_CREDENTIALS)
			str(s, NULL, "client_credentials");
		if (k->grants & SL_GRANT_REFRESH_TOKEN)
			str(s, NULL, "refresh_token");
		array_end(s);
		if (k->rate > 0) {
			num(s, "rate", k->rate);
			num(s, "burst", k->burst);
		} else {
			absent(s, "rate", "counters.token_client's");
		}
		group_end(s);
	}
	list_end(s);
	group_end(s);
}

static void show_redis(struct show *s, const struct sl_config *c)
{
	const struct sl_redis_cfg *r = &c->redis;
	char tmp[sizeof(r->address)];

	if (!r->address[0]) {
		absent(s, "redis", "none (every counter in this process)");
		return;
	}
	group(s, "redis");
	if (!strncmp(r->address, "sentinel:", 9) && strchr(r->address, '@')) {
		const char *at = strchr(r->address, '@');
		char *tok, *save = NULL;

		snprintf(tmp, sizeof(tmp), "%.*s", (int)(at - r->address - 9), r->address + 9);
		str(s, "master_name", tmp);
		snprintf(tmp, sizeof(tmp), "%s", at + 1);
		array(s, "sentinels");
		for (tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			str(s, NULL, tok);
		array_end(s);
	} else {
		str(s, "address", r->address);
	}
	if (r->user[0])
		str(s, "user", r->user);
	if (r->password[0])
		str(s, "password", SL_REDACTED);
	else
		absent(s, "password", "none");
	integer(s, "timeout_ms", r->timeout_ms);
	integer(s, "breaker_failures", r->breaker_failures);
	integer(s, "breaker_open_ms", r->breaker_open_ms);
	str(s, "key_prefix", r->key_prefix);
	group_end(s);
}

static void show_cluster(struct show *s, const struct sl_config *c)
{
	group(s, "cluster");
	str(s, "node", c->cluster.node);
	integer(s, "nodes", c->cluster.nodes);
	integer(s, "lease_interval_ms", c->cluster.lease_interval_ms);
	integer(s, "demand_window_ms", c->cluster.demand_window_ms);
	num(s, "lease_floor", c->cluster.lease_floor);
	group_end(s);
}

static void show_counters(struct show *s, const struct sl_config *c)
{
	int i;

	group(s, "counters");
	integer(s, "prefix_v4", c->counter_v4_prefix);
	integer(s, "prefix_v6", c->counter_v6_prefix);
	integer(s, "parent_v4", c->counter_v4_parent);
	integer(s, "parent_v6", c->counter_v6_parent);
	for (i = 0; i < SL_CTR_N; i++) {
		const struct sl_counter_cfg *k = &c->counters[i];

		group(s, sl_counter_name(i));
		boolean(s, "enabled", k->enabled);
		num(s, "rate", k->rate);
		num(s, "burst", k->burst);
		str(s, "fail", k->fail ? "closed" : "open");
		if (k->fail) {
			num(s, "static_rate", k->static_rate);
			num(s, "static_burst", k->static_burst);
		}
		integer(s, "max_keys", k->max_keys);
		str(s, "mode", sl_mode_name(c->counter_mode[i]));
		group_end(s);
	}
	group_end(s);
}

static void show_stream(struct show *s, const struct sl_config *c)
{
	const struct sl_stream_cfg *st = &c->stream;
	int i;

	group(s, "stream");
	boolean(s, "enabled", st->enabled);
	integer(s, "window_s", st->window_s);
	integer(s, "queue", st->queue);
	integer(s, "prefix_v4", st->prefix_v4);
	integer(s, "prefix_v6", st->prefix_v6);
	integer(s, "max_keys", st->max_keys);
	integer(s, "redis_max_keys", st->redis_max_keys);
	integer(s, "tail_per_day", st->tail_per_day);
	integer(s, "min_attempts", st->min_attempts);
	integer(s, "baseline_s", st->baseline_s);
	integer(s, "records", st->records);
	integer(s, "ladder_delay_ms", st->ladder_delay_ms);
	for (i = 0; i < SL_DET_N; i++) {
		const struct sl_detector_cfg *d = &st->det[i];

		group(s, sl_detector_name(i));
		boolean(s, "enabled", d->enabled);
		str(s, "mode", sl_mode_name(d->mode));
		str(s, "action", sl_det_action_name(d->action));
		num(s, "threshold", d->threshold);
		if (d->action == SL_DET_TIGHTEN)
			num(s, "factor", d->factor);
		integer(s, "ttl_s", d->ttl_s);
		group_end(s);
	}
	group_end(s);
}

static void show_daemon(struct show *s, const struct sl_config *c)
{
	static const char *const lv[] = { "error", "warn", "info", "debug" };

	group(s, "daemon");
	str(s, "control_socket", c->ctl_socket);
	str(s, "log_level", c->log_level >= 0 && c->log_level < 4 ? lv[c->log_level] : "?");
	str(s, "log_format", c->log_json ? "json" : "text");
	if (c->metrics_listen[0])
		str(s, "metrics_listen", c->metrics_listen);
	else
		absent(s, "metrics_listen", "none (no /metrics)");
	group_end(s);
}

void sl_config_show(const struct sl_config *c, FILE *f, bool json)
{
	struct show s = { .f = f, .json = json, .first = { true } };

	if (json) {
		fputc('{', f);
		str(&s, "file", c->path);
	} else {
		fprintf(f, "# The effective config of %s: every key with the value in force, the\n"
			"# defaults included; secrets redacted.\n", c->path);
	}
	if (c->has_edge) {
		show_edge(&s, c);
		show_classes(&s, c);
	} else {
		absent(&s, "edge", "none (no XDP: a gateway-only node)");
	}
	show_routes(&s, c);
	show_tenants(&s, c);
	if (c->gw.present)
		show_gateway(&s, c);
	else
		absent(&s, "gateway", "none (no gateway)");
	show_redis(&s, c);
	show_cluster(&s, c);
	show_counters(&s, c);
	show_stream(&s, c);
	show_daemon(&s, c);
	if (c->audit.output[0]) {
		group(&s, "audit");
		str(&s, "output", c->audit.output);
		num(&s, "rate", c->audit.rate);
		num(&s, "burst", c->audit.burst);
		group_end(&s);
	} else {
		absent(&s, "audit", "none (no audit log)");
	}
	if (json) {
		sep(&s, "derived");
		fputc('{', f);
		fprintf(f, "\"gateway_workers\":%u,\"warnings\":%d", c->gw.present ? c->gw.workers : 0,
			c->n_warnings);
		fputs("}}\n", f);
	}
}
