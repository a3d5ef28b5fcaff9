// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* /metrics: see metrics.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "log.h"
#include "metrics.h"
#include "occupancy.skel.h"
#include "reasons.h"

struct metrics_server {
	struct evhttp *http;
	metrics_render_fn fn;
	void *arg;
};

static void on_request(struct evhttp_request *req, void *arg)
{
	struct metrics_server *m = arg;
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	struct evbuffer *out = evhttp_request_get_output_buffer(req);

	if (!path || strcmp(path, "/metrics")) {
		evbuffer_add_printf(out, "sluiced serves /metrics here\n");
		evhttp_send_reply(req, 404, "Not Found", NULL);
		return;
	}
	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET &&
	    evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) {
		evhttp_send_reply(req, 405, "Method Not Allowed", NULL);
		return;
	}
	m->fn(m->arg, out);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, 200, "OK", NULL);
}

struct metrics_server *metrics_listen(struct event_base *base, const char *listen,
				      metrics_render_fn fn, void *arg, char *err, size_t errlen)
{
	struct metrics_server *m = calloc(1, sizeof(*m));
	char host[128];
	const char *colon;
	long port;

	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->fn = fn;
	m->arg = arg;
	if (listen[0] == '[') {
		const char *close = strchr(listen, ']');

		if (!close || close[1] != ':' || (size_t)(close - listen) >= sizeof(host))
			goto bad;
		memcpy(host, listen + 1, (size_t)(close - listen - 1));
		host[close - listen - 1] = '\0';
		colon = close + 1;
	} else {
		colon = strrchr(listen, ':');
		if (!colon || (size_t)(colon - listen) >= sizeof(host))
			goto bad;
		memcpy(host, listen, (size_t)(colon - listen));
		host[colon - listen] = '\0';
	}
	port = strtol(colon + 1, NULL, 10);
	if (port < 1 || port > 65535)
		goto bad;
	m->http = evhttp_new(base);
	if (!m->http || evhttp_bind_socket(m->http, host, (uint16_t)port)) {
		snprintf(err, errlen, "cannot listen on %s: %s", listen, strerror(errno));
		if (m->http)
			evhttp_free(m->http);
		free(m);
		return NULL;
	}
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST);
	evhttp_set_gencb(m->http, on_request, m);
	return m;
bad:
	snprintf(err, errlen, "cannot parse '%s' as ADDR:PORT", listen);
	free(m);
	return NULL;
}

void metrics_close(struct metrics_server *m)
{
	if (!m)
		return;
	evhttp_free(m->http);
	free(m);
}

/* Label values: backslash, quote and newline escaped. */
static void label(struct evbuffer *out, const char *v)
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

static void head(struct evbuffer *out, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metrics_edge(struct evbuffer *out, const struct sl_maps *maps, const struct sl_config *c)
{
	struct sl_counters *rows = calloc(SL_STATS_ROWS, sizeof(*rows));
	unsigned i, k;

	if (!rows)
		return;
	if (sl_maps_read_stats(maps, rows)) {
		free(rows);
		return;
	}
	head(out, "sluice_xdp_decisions_total", "counter",
	     "Packets the XDP program decided, by reason and source class.");
	for (i = 0; i < SL_STATS_ROWS; i++) {
		const char *cls = i < (unsigned)c->n_classes ? c->classes[i].name :
				  i == SL_CLASS_NONE ? "none" : NULL;

		if (!cls)
			continue;
		for (k = 0; k < SL_R__MAX; k++) {
			if (!rows[i].pkts[k])
				continue;
			evbuffer_add_printf(out, "sluice_xdp_decisions_total{reason=\"%s\",class=\"",
					    sl_reason_name(k));
			label(out, cls);
			evbuffer_add_printf(out, "\"} %llu\n", (unsigned long long)rows[i].pkts[k]);
		}
	}
	{
		uint64_t kn = 0, kh = 0, cas = 0, syn = 0, lost = 0;

		for (i = 0; i < SL_STATS_ROWS; i++) {
			kn += rows[i].key_new;
			kh += rows[i].key_homeless;
			cas += rows[i].cas_busy;
			syn += rows[i].synacks;
			lost += rows[i].events_lost;
		}
		head(out, "sluice_xdp_keys_created_total", "counter",
		     "Prefix buckets the datapath created: keys that took a way of the bucket "
		     "table, starting partly spent (new).");
		evbuffer_add_printf(out, "sluice_xdp_keys_created_total{kind=\"new\"} %llu\n",
				    (unsigned long long)kn);
		head(out, "sluice_xdp_keys_homeless_total", "counter",
		     "Charges of keys that found no way of their own nor one to take (every way of "
		     "their set held a spent key): charged to the set's shared spill bucket.");
		evbuffer_add_printf(out, "sluice_xdp_keys_homeless_total %llu\n",
				    (unsigned long long)kh);
		head(out, "sluice_xdp_cas_busy_total", "counter",
		     "Bucket updates that gave up after their compare-and-swap retries (a hot key; "
		     "the packet is shed).");
		evbuffer_add_printf(out, "sluice_xdp_cas_busy_total %llu\n", (unsigned long long)cas);
		head(out, "sluice_xdp_synacks_total", "counter",
		     "Cookie SYN-ACKs sent by XDP_TX for shed SYNs on reply ports.");
		evbuffer_add_printf(out, "sluice_xdp_synacks_total %llu\n", (unsigned long long)syn);
		head(out, "sluice_xdp_events_lost_total", "counter",
		     "Sampled events the ring buffer had no room for.");
		evbuffer_add_printf(out, "sluice_xdp_events_lost_total %llu\n",
				    (unsigned long long)lost);
	}
	free(rows);
}

void metrics_leases(struct evbuffer *out, const struct sl_maps *maps, const struct sl_config *c)
{
	static const struct {
		const char *name, *type, *help;
	} m[] = {
		{ "sluice_tenant_budget_rate", "gauge",
		  "The tenant's edge budget across all nodes, cost units per second." },
		{ "sluice_lease_rate", "gauge", "This node's lease of the budget, units per second." },
		{ "sluice_lease_share", "gauge", "This node's share of the tenant's budget (0..1)." },
		{ "sluice_lease_live", "gauge",
		  "1 while the lease holds; 0 once it expired and the static rate is in force." },
		{ "sluice_lease_expires_seconds", "gauge", "Seconds until the lease expires." },
		{ "sluice_tenant_demand_rate", "gauge",
		  "Cost units per second reaching the tenant's bucket on this node." },
		{ "sluice_tenant_cluster_demand_rate", "gauge",
		  "The same, summed over the nodes with a live demand report." },
		{ "sluice_tenant_rate_in_force", "gauge",
		  "The rate the datapath charges now, units per second: the lease while it lives, "
		  "the static rate once it expired." },
	};
	uint64_t now = sl_now_ns();
	struct sl_tenant *ts = calloc(SL_MAX_TENANTS, sizeof(*ts));
	unsigned j;
	uint32_t i;

	if (!ts)
		return;
	/* One lookup per tenant, whatever the number of families printed from it. */
	for (i = 0; i < (uint32_t)c->n_tenants && i < SL_MAX_TENANTS; i++)
		if (!c->tenants[i].edge_budget || bpf_map_lookup_elem(maps->tenants, &i, &ts[i]))
			ts[i].valid = 0;
	for (j = 0; j < sizeof(m) / sizeof(m[0]); j++) {
		head(out, m[j].name, m[j].type, m[j].help);
		for (i = 0; i < (uint32_t)c->n_tenants && i < SL_MAX_TENANTS; i++) {
			const struct sl_tenant *t = &ts[i];
			double v;
			bool live;

			if (!t->valid)
				continue;
			live = now < t->lease_expires_ns;
			switch (j) {
			case 0: v = c->tenants[i].rate; break;
			case 1: v = t->lease.emission_ns ? 1e9 / (double)t->lease.emission_ns : 0; break;
			case 2: v = (double)t->share_ppm / 1e6; break;
			case 3: v = live; break;
			case 4: v = live ? (double)(t->lease_expires_ns - now) / 1e9 : 0; break;
			case 5: v = (double)t->demand_milli / 1000.0; break;
			case 6: v = (double)t->cluster_milli / 1000.0; break;
			default: {
				const struct sl_rate *r = live ? &t->lease : &t->fallback;

				v = r->emission_ns ? 1e9 / (double)r->emission_ns : 0;
				break;
			}
			}
			evbuffer_add_printf(out, "%s{tenant=\"", m[j].name);
			label(out, t->name);
			evbuffer_add_printf(out, "\"} %.6g\n", v);
		}
	}
	free(ts);
}

/* Each Redis server's state (a Redis Cluster's masters, each with its own breaker), and a
 * cluster's slot map and redirects. */
static void metrics_store_nodes(struct evbuffer *out, const struct sl_store *s,
				const struct sl_store_stats *st)
{
	struct sl_store_node nd[16];
	int i, n = sl_store_nodes(s, nd, 16);

	if (!st->redis)
		return;
	if (n > 16)
		n = 16;
	head(out, "sluice_store_redis_node_up", "gauge",
	     "1 while this Redis server (a cluster's master) is connected and its breaker closed.");
	for (i = 0; i < n; i++)
		evbuffer_add_printf(out, "sluice_store_redis_node_up{node=\"%s\"} %d\n", nd[i].name,
				    nd[i].connected && nd[i].breaker == SL_BREAKER_CLOSED);
	head(out, "sluice_store_redis_node_breaker", "gauge",
	     "This Redis server's breaker: 0 closed, 1 open, 2 half open.");
	for (i = 0; i < n; i++)
		evbuffer_add_printf(out, "sluice_store_redis_node_breaker{node=\"%s\"} %u\n",
				    nd[i].name, nd[i].breaker);
	head(out, "sluice_store_redis_node_slots", "gauge",
	     "Hash slots this server serves (16384 for one that is not a cluster's).");
	for (i = 0; i < n; i++)
		evbuffer_add_printf(out, "sluice_store_redis_node_slots{node=\"%s\"} %u\n",
				    nd[i].name, nd[i].slots);
	head(out, "sluice_store_redis_node_calls_total", "counter",
	     "Calls sent to this server, and of those the ones that failed or timed out.");
	for (i = 0; i < n; i++)
		evbuffer_add_printf(out,
				    "sluice_store_redis_node_calls_total{node=\"%s\",outcome=\"sent\"} %llu\n"
				    "sluice_store_redis_node_calls_total{node=\"%s\",outcome=\"error\"} %llu\n"
				    "sluice_store_redis_node_calls_total{node=\"%s\",outcome=\"timeout\"} %llu\n",
				    nd[i].name, (unsigned long long)nd[i].calls, nd[i].name,
				    (unsigned long long)nd[i].errors, nd[i].name,
				    (unsigned long long)nd[i].timeouts);
	if (!st->cluster)
		return;
	head(out, "sluice_store_cluster_slots_covered", "gauge",
	     "Hash slots of the Redis Cluster's map that have a master (16384 when whole).");
	evbuffer_add_printf(out, "sluice_store_cluster_slots_covered %u\n", st->slots_covered);
	head(out, "sluice_store_cluster_redirects_total", "counter",
	     "MOVED and ASK replies met (each followed once when its target is up).");
	evbuffer_add_printf(out, "sluice_store_cluster_redirects_total{kind=\"moved\"} %llu\n"
			    "sluice_store_cluster_redirects_total{kind=\"ask\"} %llu\n",
			    (unsigned long long)st->moved, (unsigned long long)st->ask);
	head(out, "sluice_store_cluster_map_reads_total", "counter",
	     "Slot map reads (CLUSTER SLOTS), and those no node answered.");
	evbuffer_add_printf(out, "sluice_store_cluster_map_reads_total{outcome=\"ok\"} %llu\n"
			    "sluice_store_cluster_map_reads_total{outcome=\"failed\"} %llu\n",
			    (unsigned long long)(st->map_reads - st->map_failures),
			    (unsigned long long)st->map_failures);
}

/* The capped counters' live keys in Redis per tenant (issue 16: the seed's "rate limiter key
 * cardinality"), their caps and the checks each cap refused. */
static void metrics_store_live(struct evbuffer *out, const struct sl_store *s)
{
	static struct sl_store_live lv[SL_STORE_LIVE_MAX];
	int i, n = sl_store_live_keys(s, lv, SL_STORE_LIVE_MAX);

	if (n > SL_STORE_LIVE_MAX)
		n = SL_STORE_LIVE_MAX;
	head(out, "sluice_store_live_keys", "gauge",
	     "A capped counter's live keys in Redis for a tenant, as its last reply said.");
	for (i = 0; i < n; i++)
		evbuffer_add_printf(out, "sluice_store_live_keys{tenant=\"%s\",counter=\"%s\"} "
				    "%llu\n", lv[i].tenant, lv[i].counter,
				    (unsigned long long)lv[i].live);
	head(out, "sluice_store_live_keys_max", "gauge",
	     "The counter's max_keys: the most live keys a tenant may hold in Redis.");
	for (i = 0; i < n; i++)
		evbuffer_add_printf(out, "sluice_store_live_keys_max{tenant=\"%s\",counter=\"%s\"} "
				    "%u\n", lv[i].tenant, lv[i].counter, lv[i].max_keys);
	head(out, "sluice_store_live_keys_capped_total", "counter",
	     "Checks of a new key refused because its tenant held max_keys live keys of the "
	     "counter.");
	for (i = 0; i < n; i++)
		evbuffer_add_printf(out, "sluice_store_live_keys_capped_total{tenant=\"%s\","
				    "counter=\"%s\"} %llu\n", lv[i].tenant, lv[i].counter,
				    (unsigned long long)lv[i].capped);
}

void metrics_store(struct evbuffer *out, const struct sl_store *s, const struct sl_config *c)
{
	static const char *const states[] = { "closed", "open", "half_open" };
	struct sl_store_stats st;
	bool degraded;
	int i;

	sl_store_get_stats(s, &st);
	degraded = st.redis && (st.breaker != SL_BREAKER_CLOSED || !st.connected);
	head(out, "sluice_store_redis_configured", "gauge",
	     "1 when counters are shared through Redis, 0 when they live in this process.");
	evbuffer_add_printf(out, "sluice_store_redis_configured %d\n", st.redis);
	head(out, "sluice_store_redis_connected", "gauge", "1 while connected to Redis.");
	evbuffer_add_printf(out, "sluice_store_redis_connected %d\n", st.connected);
	head(out, "sluice_store_breaker_state", "gauge",
	     "The circuit breaker in front of Redis: 1 for the state it is in.");
	for (i = 0; i < 3; i++)
		evbuffer_add_printf(out, "sluice_store_breaker_state{state=\"%s\"} %d\n", states[i],
				    st.breaker == i);
	head(out, "sluice_store_checks_total", "counter",
	     "Counter checks by outcome: exact (the store answered), timeout, error, "
	     "short_circuit (the open breaker sent it straight to the fallback).");
	evbuffer_add_printf(out,
			    "sluice_store_checks_total{outcome=\"exact\"} %llu\n"
			    "sluice_store_checks_total{outcome=\"timeout\"} %llu\n"
			    "sluice_store_checks_total{outcome=\"error\"} %llu\n"
			    "sluice_store_checks_total{outcome=\"short_circuit\"} %llu\n",
			    (unsigned long long)st.exact, (unsigned long long)st.timeouts,
			    (unsigned long long)st.errors, (unsigned long long)st.short_circuits);
	head(out, "sluice_store_fallbacks_total", "counter",
	     "Checks answered by a fallback: local (fail open, limit / N) or static (fail closed).");
	evbuffer_add_printf(out,
			    "sluice_store_fallbacks_total{mode=\"local\"} %llu\n"
			    "sluice_store_fallbacks_total{mode=\"static\"} %llu\n",
			    (unsigned long long)st.fallback_local,
			    (unsigned long long)st.fallback_static);
	head(out, "sluice_store_keys_capped_total", "counter",
	     "Checks refused because their tenant had max_keys live keys.");
	evbuffer_add_printf(out, "sluice_store_keys_capped_total %llu\n",
			    (unsigned long long)st.keys_capped);
	head(out, "sluice_store_keys_restored_total", "counter",
	     "Keys Redis had lost (evicted under maxmemory, flushed, restarted empty) whose debt "
	     "this node gave back from the last value it saw.");
	evbuffer_add_printf(out, "sluice_store_keys_restored_total %llu\n",
			    (unsigned long long)st.keys_restored);
	metrics_store_live(out, s);
	head(out, "sluice_store_local_keys", "gauge",
	     "Keys the in-process counter tables hold (a refilled key until its slot is reused).");
	evbuffer_add_printf(out, "sluice_store_local_keys %llu\n",
			    (unsigned long long)st.local_keys);
	head(out, "sluice_store_local_evictions_total", "counter",
	     "Live keys evicted by an in-process counter table full at max_keys (their debt kept "
	     "for their buckets).");
	evbuffer_add_printf(out, "sluice_store_local_evictions_total %llu\n",
			    (unsigned long long)st.local_evictions);
	head(out, "sluice_store_local_table_full_total", "counter",
	     "Checks of a new key that started spent because its in-process counter table was "
	     "full at max_keys (never full: the debt of what it replaces or what was evicted).");
	evbuffer_add_printf(out, "sluice_store_local_table_full_total %llu\n",
			    (unsigned long long)st.local_table_full);
	head(out, "sluice_store_journal_keys", "gauge",
	     "Keys holding charges (or clears) made while Redis was not answering, that Redis has "
	     "not had yet: handed over as it answers again.");
	evbuffer_add_printf(out, "sluice_store_journal_keys %llu\n", (unsigned long long)st.journal);
	head(out, "sluice_store_journal_dropped_total", "counter",
	     "Charges and clears the journal, full, could not hold (Redis never learns of them).");
	evbuffer_add_printf(out, "sluice_store_journal_dropped_total %llu\n",
			    (unsigned long long)st.journal_dropped);
	metrics_store_nodes(out, s, &st);
	head(out, "sluice_store_mode", "gauge",
	     "What answers each counter now (1 for the mode in force): exact, local or static.");
	for (i = 0; i < SL_CTR_N; i++) {
		const char *now = !degraded ? "exact" : c->counters[i].fail ? "static" : "local";
		static const char *const modes[] = { "exact", "local", "static" };
		int k;

		if (!c->counters[i].enabled)
			continue;
		for (k = 0; k < 3; k++)
			evbuffer_add_printf(out, "sluice_store_mode{counter=\"%s\",fail=\"%s\","
					    "mode=\"%s\"} %d\n", sl_counter_name(i),
					    c->counters[i].fail ? "closed" : "open", modes[k],
					    !strcmp(now, modes[k]));
	}
}

/* ---- the daemon: build, node, reloads -------------------------------------------------- */

#ifndef SLUICE_COMMIT
#define SLUICE_COMMIT "unknown" /* the Makefile passes `git describe` */
#endif

void metrics_daemon(struct evbuffer *out, const struct metrics_daemon *d)
{
	struct utsname u;

	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "unknown");
	head(out, "sluice_build_info", "gauge",
	     "Always 1: the version and commit sluiced was built from, the kernel it runs on and "
	     "the libbpf it links.");
	evbuffer_add_printf(out, "sluice_build_info{version=\"");
	label(out, d->version);
	evbuffer_add_printf(out, "\",commit=\"");
	label(out, SLUICE_COMMIT);
	evbuffer_add_printf(out, "\",kernel=\"");
	label(out, u.release);
	evbuffer_add_printf(out, "\",libbpf=\"%u.%u\"} 1\n", libbpf_major_version(),
			    libbpf_minor_version());
	head(out, "sluice_node_info", "gauge",
	     "Always 1: this daemon's cluster node name (cluster.node). Join on instance to give "
	     "any series its node: ... * on(instance, job) group_left(node) sluice_node_info.");
	evbuffer_add_printf(out, "sluice_node_info{node=\"");
	label(out, d->node);
	evbuffer_add_printf(out, "\"} 1\n");
	head(out, "sluice_start_time_seconds", "gauge", "When sluiced started, Unix time.");
	evbuffer_add_printf(out, "sluice_start_time_seconds %llu\n",
			    (unsigned long long)d->started_unix);
	head(out, "sluice_config_reloads_total", "counter",
	     "Config reloads (SIGHUP, sluicectl reload) by outcome: ok (applied) or failed (the "
	     "running config stayed in force).");
	evbuffer_add_printf(out, "sluice_config_reloads_total{outcome=\"ok\"} %llu\n"
			    "sluice_config_reloads_total{outcome=\"failed\"} %llu\n",
			    (unsigned long long)d->reloads_ok, (unsigned long long)d->reloads_failed);
	head(out, "sluice_config_last_reload_successful", "gauge",
	     "1 when the last reload applied (or none was asked since the start), 0 when it "
	     "failed: the file on disk is not what runs.");
	evbuffer_add_printf(out, "sluice_config_last_reload_successful %d\n", d->last_ok ? 1 : 0);
	head(out, "sluice_config_last_reload_success_timestamp_seconds", "gauge",
	     "When the running config was applied (the start, or the last reload that applied), "
	     "Unix time.");
	evbuffer_add_printf(out, "sluice_config_last_reload_success_timestamp_seconds %llu\n",
			    (unsigned long long)d->last_ok_unix);
	head(out, "sluice_config_last_reload_failure_timestamp_seconds", "gauge",
	     "When a reload last failed, Unix time; 0 if none has.");
	evbuffer_add_printf(out, "sluice_config_last_reload_failure_timestamp_seconds %llu\n",
			    (unsigned long long)d->last_failed_unix);
	if (d->generation) {
		head(out, "sluice_config_generation", "gauge",
		     "The edge's config generation: 1 at the first start, +1 per applied reload.");
		evbuffer_add_printf(out, "sluice_config_generation %u\n", d->generation);
	}
}

/* ---- table occupancy -------------------------------------------------------------------- */

/* Bucket sets read per scrape, at most: a table no larger is read whole (exact), a larger one
 * through a window of this many sets that moves on at each scrape (every set read once in
 * sets / 4096 scrapes), scaled up. The sets are indexed by a keyed hash, so a window is a
 * uniform sample: its relative error is about 1 / sqrt(the live ways it holds). One batched
 * syscall of 512 KiB. */
#define SET_SAMPLE 4096u

struct metrics_tables {
	struct occupancy_bpf *skel;
	struct bpf_link *link;
	uint32_t set_cursor;
	struct sl_bucket_set *gbuf;
	struct sl_shed_set *tbuf;
	uint32_t *gkeys;
};

struct metrics_tables *metrics_tables_open(char *why, size_t whylen)
{
	struct metrics_tables *t = calloc(1, sizeof(*t));

	why[0] = '\0';
	if (t) {
		t->gbuf = calloc(SET_SAMPLE, sizeof(*t->gbuf));
		t->gkeys = calloc(SET_SAMPLE, sizeof(*t->gkeys));
		t->tbuf = calloc(SET_SAMPLE, sizeof(*t->tbuf));
	}
	if (!t || !t->gbuf || !t->gkeys || !t->tbuf) {
		snprintf(why, whylen, "out of memory");
		metrics_tables_close(t);
		return NULL;
	}
	t->skel = occupancy_bpf__open_and_load();
	if (!t->skel) {
		snprintf(why, whylen, "the map iterator does not load here (%s; it needs BTF and "
			 "the bpf_map_sum_elem_count kfunc, Linux 6.6)", strerror(errno));
		return t;
	}
	t->link = bpf_program__attach_iter(t->skel->progs.sl_occupancy, NULL);
	if (!t->link) {
		snprintf(why, whylen, "the map iterator does not attach (%s)", strerror(errno));
		occupancy_bpf__destroy(t->skel);
		t->skel = NULL;
	}
	return t;
}

void metrics_tables_close(struct metrics_tables *t)
{
	if (!t)
		return;
	bpf_link__destroy(t->link);
	occupancy_bpf__destroy(t->skel);
	free(t->gbuf);
	free(t->tbuf);
	free(t->gkeys);
	free(t);
}

/* The tables worth watching: their label, their fd in @m, how their entries are known. */
enum occ_kind { OCC_HASH, OCC_SETS, OCC_TAGS, OCC_VERDICTS };
struct occ_table {
	const char *name;
	int fd;
	enum occ_kind kind;
	uint32_t id, capacity;
	int64_t entries; /* < 0: not known */
};

/* Bucket ways holding a key (a tag); exact for a table of at most SET_SAMPLE sets, else
 * scaled from a window of that many. */
static int64_t set_entries(struct metrics_tables *t, int fd, uint32_t sets)
{
	uint32_t want = sets < SET_SAMPLE ? sets : SET_SAMPLE, got = 0, start, i, k;
	uint64_t live = 0;
	LIBBPF_OPTS(bpf_map_batch_opts, o);

	if (!want)
		return -1;
	start = t->set_cursor % sets;
	if (start + want > sets)
		start = sets - want;
	while (got < want) {
		/* The batch resumes after @in, the last key read: an array's keys are 0..sets-1. */
		uint32_t n = want - got, in = start + got - 1, next;
		int err = bpf_map_lookup_batch(fd, start + got ? &in : NULL, &next, t->gkeys + got,
					       t->gbuf + got, &n, &o);

		got += n;
		if (err || !n)
			break;
	}
	t->set_cursor = start + got >= sets ? 0 : start + got;
	if (!got)
		return -1;
	for (i = 0; i < got; i++)
		for (k = 0; k < SL_BUCKET_WAYS; k++)
			live += t->gbuf[i].way[k].tag != 0;
	return got == sets ? (int64_t)live :
	       (int64_t)((double)live * (double)sets / (double)got + 0.5);
}

/* Tag ways (struct sl_shed_set) alive now, counted over the whole table (exact: a few tags
 * in a large table would vanish from a sample), SET_SAMPLE sets per batched syscall of
 * 128 KiB. A way is alive until its expiry (seconds of CLOCK_MONOTONIC_COARSE, the
 * datapath's clock). */
static int64_t tag_entries(struct metrics_tables *t, int fd, uint32_t sets)
{
	uint32_t got = 0, i, k, now_s;
	uint64_t live = 0;
	struct timespec ts;
	LIBBPF_OPTS(bpf_map_batch_opts, o);

	if (!sets || clock_gettime(CLOCK_MONOTONIC_COARSE, &ts))
		return -1;
	now_s = (uint32_t)ts.tv_sec;
	while (got < sets) {
		/* The batch resumes after @in, the last key read: an array's keys are 0..sets-1. */
		uint32_t n = sets - got < SET_SAMPLE ? sets - got : SET_SAMPLE, in = got - 1, next;
		int err = bpf_map_lookup_batch(fd, got ? &in : NULL, &next, t->gkeys, t->tbuf, &n,
					       &o);

		for (i = 0; i < n && i < SET_SAMPLE; i++)
			for (k = 0; k < SL_SHED_WAYS; k++)
				live += t->tbuf[i].way[k].tag != 0 &&
					t->tbuf[i].way[k].until > now_s;
		got += n;
		if (err || !n)
			break;
	}
	return got == sets ? (int64_t)live : -1;
}

void metrics_tables(struct evbuffer *out, struct metrics_tables *t, const struct sl_maps *maps)
{
	struct occ_table tab[] = {
		{ "buckets", maps->buckets, OCC_SETS, 0, 0, -1 },
		{ "conns", maps->conns, OCC_TAGS, 0, 0, -1 },
		{ "shed", maps->shed, OCC_HASH, 0, 0, -1 },
		{ "verdicts", maps->verdicts, OCC_VERDICTS, 0, 0, -1 },
		{ "local_host", maps->local_host, OCC_HASH, 0, 0, -1 },
		{ "hosts", maps->hosts, OCC_HASH, 0, 0, -1 },
		{ "tenant_keys", maps->tenant_keys, OCC_HASH, 0, 0, -1 },
	};
	const unsigned n = sizeof(tab) / sizeof(tab[0]);
	unsigned i;

	for (i = 0; i < n; i++) {
		struct bpf_map_info info;
		uint32_t len = sizeof(info);

		memset(&info, 0, sizeof(info));
		if (tab[i].fd < 0 || bpf_obj_get_info_by_fd(tab[i].fd, &info, &len)) {
			tab[i].fd = -1;
			continue;
		}
		tab[i].id = info.id;
		tab[i].capacity = info.max_entries;
		if (tab[i].kind == OCC_SETS) {
			tab[i].capacity = info.max_entries * SL_BUCKET_WAYS;
			if (t)
				tab[i].entries = set_entries(t, tab[i].fd, info.max_entries);
		} else if (tab[i].kind == OCC_TAGS) {
			tab[i].capacity = info.max_entries * SL_SHED_WAYS;
			if (t)
				tab[i].entries = tag_entries(t, tab[i].fd, info.max_entries);
		} else if (tab[i].kind == OCC_VERDICTS) {
			uint32_t zero = 0, v;

			if (!bpf_map_lookup_elem(maps->vcount, &zero, &v))
				tab[i].entries = v;
		}
	}
	if (t && t->link) {
		/* One walk of the host's maps (not of any keys): { id, elements } records. */
		int fd = bpf_iter_create(bpf_link__fd(t->link));
		uint64_t rec[64][2];
		ssize_t got;

		while (fd >= 0 && (got = read(fd, rec, sizeof(rec))) > 0) {
			size_t r;

			for (r = 0; r < (size_t)got / sizeof(rec[0]); r++)
				for (i = 0; i < n; i++)
					if (tab[i].fd >= 0 && tab[i].kind == OCC_HASH &&
					    tab[i].id == rec[r][0])
						tab[i].entries = (int64_t)rec[r][1];
		}
		if (fd >= 0)
			close(fd);
	}
	head(out, "sluice_bpf_table_capacity", "gauge",
	     "Entries each datapath table can hold (buckets, conns: sets x 4 ways). An LRU "
	     "table (shed) evicts in batches and tops out a little below it.");
	for (i = 0; i < n; i++)
		if (tab[i].fd >= 0)
			evbuffer_add_printf(out, "sluice_bpf_table_capacity{table=\"%s\"} %u\n",
					    tab[i].name, tab[i].capacity);
	head(out, "sluice_bpf_table_entries", "gauge",
	     "Entries in use in each datapath table: the kernel's element count for hash "
	     "tables, live verdicts, bucket ways holding a key (estimated from a sample of 4096 "
	     "sets on a larger table), conns ways not expired.");
	for (i = 0; i < n; i++)
		if (tab[i].fd >= 0 && tab[i].entries >= 0)
			evbuffer_add_printf(out, "sluice_bpf_table_entries{table=\"%s\"} %lld\n",
					    tab[i].name, (long long)tab[i].entries);
}
