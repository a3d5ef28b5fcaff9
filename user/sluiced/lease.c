// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Leases: see lease.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <hiredis/hiredis.h>

#include "lease.h"
#include "log.h"
#include "maps.h"

/*
 * KEYS[1] the tenant's lease hash: node -> "demand|use|expiry_ms" (server clock), where use
 * is the most this node's datapath may admit at until the report expires, as a share of the
 * budget: its new grant, the grant it still held when it asked (a shrink reaches its map
 * after the script has run), and never less than the static share it lapses to. One more
 * field, "#born", is when the hash was created: a hash younger than a lease that lacks some
 * node's report may have lost it (FLUSHALL, a restart without data, a new server) while that
 * node's datapath still uses its grant.
 *
 * ARGV: node, demand (units/s), floor, ttl_ms, static share, configured nodes, held share
 * (what this node's map holds now, 0 once lapsed). Expired reports are removed.
 * Returns {grant, cluster demand, live nodes, target, doubt} as strings (Redis truncates
 * numbers); doubt is 1 while the hash may have lost reports and this node was held to what
 * it already had.
 */
static const char lease_lua[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"local node, d = ARGV[1], tonumber(ARGV[2])\n"
	"local floor, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
	"local sigma, N, held = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])\n"
	"local least = floor\n"
	"if sigma > least then least = sigma end\n"
	"local all = redis.call('HGETALL', KEYS[1])\n"
	"local born = nil\n"
	"local D, n, others = d, 1, 0\n"
	"for i = 1, #all, 2 do\n"
	"  local f = all[i]\n"
	"  if f == '#born' then\n"
	"    born = tonumber(all[i + 1])\n"
	"  elseif f ~= node then\n"
	"    local od, ou, oe = string.match(all[i + 1], '^([^|]+)|([^|]+)|([^|]+)$')\n"
	"    if od and tonumber(oe) > now then\n"
	"      local u = tonumber(ou)\n"
	"      if u < least then u = least end\n"
	"      D = D + tonumber(od); n = n + 1; others = others + u\n"
	"    else\n"
	"      redis.call('HDEL', KEYS[1], f)\n"
	"    end\n"
	"  end\n"
	"end\n"
	"if not born then\n"
	"  born = now\n"
	"  redis.call('HSET', KEYS[1], '#born', tostring(now))\n"
	"end\n"
	"local missing = N - n\n"
	"if missing < 0 then missing = 0 end\n"
	"local target = 1 / n\n"
	"if D > 0 then target = d / D end\n"
	"local grant = target\n"
	"if grant < floor then grant = floor end\n"
	"local doubt = 0\n"
	"if n < N and now < born + ttl then\n"
	"  doubt = 1\n"
	"  local keep = held\n"
	"  if keep < sigma then keep = sigma end\n"
	"  if grant > keep then grant = keep end\n"
	"else\n"
	"  local room = 1 - others - missing * sigma\n"
	"  if grant > room then grant = room end\n"
	"end\n"
	"if grant < sigma then grant = sigma end\n"
	"local use = grant\n"
	"if held > use then use = held end\n"
	"redis.call('HSET', KEYS[1], node, string.format('%.6f|%.6f|%d', d, use, now + ttl))\n"
	"redis.call('PEXPIRE', KEYS[1], ttl * 2)\n"
	"return {string.format('%.6f', grant), string.format('%.6f', D), tostring(n),\n"
	"        string.format('%.6f', target), tostring(doubt)}\n";

#define MAX_SNAPS 257

struct snap {
	uint64_t t_ns;
	uint64_t cum[SL_MAX_TENANTS];
};

struct lease_ctl {
	struct event_base *base;
	struct event *timer;
	struct sl_store *store;
	struct edge *edge;
	const struct sl_config *c;
	int script;
	uint32_t generation;
	struct snap *snaps; /* ring of demand snapshots, one per tick */
	unsigned n_snaps, head, filled;
	bool warned;        /* a "cannot renew" is logged once per outage */
	bool answered;      /* Redis has answered a renewal since the start */
	uint32_t seq[SL_MAX_TENANTS];  /* the latest call per tenant: older answers are stale */
	bool doubt[SL_MAX_TENANTS];    /* held to its lease: Redis lost reports (logged once) */
	uint64_t started_ns;
	char prefix[sizeof(((struct sl_config *)0)->redis.key_prefix)]; /* as started */
};

/* How long after the start a renewal unanswered because the store has not connected yet
 * is the connection still coming up, not an outage: the store gives a connect 1 s. */
#define CONNECT_GRACE_NS (2ull * 1000000000ull)

/* One tenant's script call in flight. */
struct call {
	struct lease_ctl *l;
	uint32_t generation, id, seq;
	uint64_t sent_ns; /* sl_now_ns() when asked: the lease runs from here, not the answer */
	double demand, held;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Write tenant @id's lease: @grant of the budget for lease_ttl from @from_ns. A grant from
 * Redis runs from when it was asked, so that it lapses before the report that counts it for
 * the others does (the report lives lease_ttl + 250 ms from the script's run). */
static void write_lease(struct lease_ctl *l, uint32_t id, double grant, uint64_t from_ns,
			const struct sl_lease_info *why)
{
	const struct sl_tenant_cfg *tc = &l->c->tenants[id];
	int ret;

	ret = sl_maps_grant_share(&l->edge->maps, l->c, id, grant, from_ns, why);
	if (ret && ret != -ENOENT)
		log_warn("lease for tenant %s: cannot write it: %s", tc->name, strerror(-ret));
}

static double reply_num(const redisReply *r)
{
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STRING)
		return strtod(r->str, NULL);
	if (r->type == REDIS_REPLY_INTEGER)
		return (double)r->integer;
	return -1;
}

/*
 * The first renewal runs at the start, before the store's connection is up, and is answered
 * NULL: that is no outage (issue 16: "leases: no answer from Redis" at every start). Until
 * Redis has answered once, a NULL while the store has neither connected nor failed, within
 * CONNECT_GRACE_NS of the start, is not reported.
 */
static bool still_connecting(struct lease_ctl *l)
{
	struct sl_store_stats st;

	if (l->answered || !l->store || mono_ns() - l->started_ns > CONNECT_GRACE_NS)
		return false;
	sl_store_get_stats(l->store, &st);
	return !st.connected && !st.errors;
}

static void on_lease(void *arg, redisReply *reply)
{
	struct call *k = arg;
	struct lease_ctl *l = k->l;
	struct sl_lease_info why;
	double grant;

	if (k->generation != l->generation || k->seq != l->seq[k->id] ||
	    (int)k->id >= l->c->n_tenants || !l->c->tenants[k->id].edge_budget) {
		free(k);
		return;
	}
	if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements < 5 ||
	    (grant = reply_num(reply->element[0])) < 0 || grant > 1) {
		if (!reply && still_connecting(l)) {
			log_debug("leases: Redis not connected yet; the next tick renews");
			free(k);
			return;
		}
		if (!l->warned)
			log_warn("leases: no answer from Redis; leases are not renewed and fall "
				 "back to each tenant's static rate when they expire");
		l->warned = true;
		free(k);
		return;
	}
	if (l->warned)
		log_info("leases: Redis answers again; leases follow demand");
	l->warned = false;
	l->answered = true;
	why.share = grant;
	why.demand = k->demand;
	why.cluster_demand = reply_num(reply->element[1]);
	why.nodes = (uint32_t)reply_num(reply->element[2]);
	if (reply_num(reply->element[4]) > 0) {
		/* A node that holds no lease is starting (or coming back), in a cluster the
		 * hash has not seen whole yet: that is no loss worth a warning. */
		if (!l->doubt[k->id] && k->held > 0)
			log_warn("leases: tenant %s: Redis has lost other nodes' reports (flushed, "
				 "restarted empty or replaced): this node keeps at most the lease "
				 "it holds until they report again or their leases have lapsed",
				 l->c->tenants[k->id].name);
		else if (!l->doubt[k->id])
			log_info("leases: tenant %s: waiting for the other nodes' reports; the "
				 "static rate until then", l->c->tenants[k->id].name);
		l->doubt[k->id] = true;
	} else if (l->doubt[k->id]) {
		log_info("leases: tenant %s: every node's report is known again; leases follow "
			 "demand", l->c->tenants[k->id].name);
		l->doubt[k->id] = false;
	}
	write_lease(l, k->id, grant, k->sent_ns, &why);
	free(k);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct lease_ctl *l = arg;
	const struct sl_config *c = l->c;
	struct snap *now_s, *old;
	unsigned want, back;
	double secs;
	uint32_t i;
	int ret;

	(void)fd;
	(void)what;
	if (!l->edge->skel || !l->snaps)
		return;
	now_s = &l->snaps[l->head];
	ret = sl_maps_read_demand(&l->edge->maps, now_s->cum);
	if (ret) {
		log_warn("leases: cannot read tenant demand: %s", strerror(-ret));
		return;
	}
	now_s->t_ns = mono_ns();
	/* The snapshot one demand window ago, or the oldest there is. */
	want = c->cluster.demand_window_ms / c->cluster.lease_interval_ms;
	if (want >= l->n_snaps)
		want = l->n_snaps - 1;
	back = l->filled < want ? l->filled : want;
	old = &l->snaps[(l->head + l->n_snaps - back) % l->n_snaps];
	l->head = (l->head + 1) % l->n_snaps;
	if (l->filled < l->n_snaps - 1)
		l->filled++;
	secs = (double)(now_s->t_ns - old->t_ns) / 1e9;

	for (i = 0; i < (uint32_t)c->n_tenants; i++) {
		const struct sl_tenant_cfg *tc = &c->tenants[i];
		uint64_t used;
		double demand;

		if (!tc->edge_budget)
			continue;
		/* A counter that went backwards was recreated: count from zero. */
		used = now_s->cum[i] >= old->cum[i] ? now_s->cum[i] - old->cum[i] : now_s->cum[i];
		demand = back && secs > 0 ? (double)used / secs : 0;
		if (l->script < 0) {
			struct sl_lease_info why = { .share = 1.0 / c->cluster.nodes,
						     .demand = demand, .cluster_demand = demand,
						     .nodes = 1 };

			write_lease(l, i, why.share, sl_now_ns(), &why);
		} else {
			struct call *k = calloc(1, sizeof(*k));
			char key[160], d[32], fl[32], ttl[32], sg[32], nn[16], hd[32];
			const char *argv[7] = { c->cluster.node, d, fl, ttl, sg, nn, hd };
			struct sl_tenant t;
			double held = 0;

			if (!k)
				continue;
			k->sent_ns = sl_now_ns();
			/* What the datapath may use now: the script counts it until this
			 * node's next report, and holds this node to it while reports are lost. */
			if (!bpf_map_lookup_elem(l->edge->maps.tenants, &i, &t) && t.valid &&
			    k->sent_ns < t.lease_expires_ns)
				held = t.share_ppm / 1e6;
			k->held = held;
			k->l = l;
			k->generation = l->generation;
			k->id = i;
			k->seq = ++l->seq[i];
			k->demand = demand;
			snprintf(key, sizeof(key), "%s:{%s}:lease", l->prefix, tc->name);
			snprintf(d, sizeof(d), "%.3f", demand);
			snprintf(fl, sizeof(fl), "%.6f", c->cluster.lease_floor);
			/* A grant counts for others as long as this node's datapath may use it. */
			snprintf(ttl, sizeof(ttl), "%u", tc->lease_ttl_s * 1000 + 250);
			snprintf(sg, sizeof(sg), "%.6f", tc->static_rate / tc->rate);
			snprintf(nn, sizeof(nn), "%u", c->cluster.nodes);
			snprintf(hd, sizeof(hd), "%.6f", held);
			sl_store_eval(l->store, l->script, key, 7, argv, on_lease, k);
		}
	}
}

struct lease_ctl *lease_new(struct event_base *base, struct sl_store *store, struct edge *e)
{
	struct lease_ctl *l = calloc(1, sizeof(*l));
	struct sl_store_stats st;

	if (!l)
		return NULL;
	l->base = base;
	l->store = store;
	l->edge = e;
	l->script = -1;
	l->started_ns = mono_ns();
	if (store) {
		sl_store_get_stats(store, &st);
		if (st.redis)
			l->script = sl_store_script(store, lease_lua);
	}
	l->timer = event_new(base, -1, EV_PERSIST, on_tick, l);
	if (!l->timer) {
		free(l);
		return NULL;
	}
	return l;
}

void lease_apply(struct lease_ctl *l, const struct sl_config *c)
{
	struct timeval tv = { .tv_sec = c->cluster.lease_interval_ms / 1000,
			      .tv_usec = (c->cluster.lease_interval_ms % 1000) * 1000 };
	unsigned n = c->cluster.demand_window_ms / c->cluster.lease_interval_ms + 1;
	int i;

	if (n > MAX_SNAPS)
		n = MAX_SNAPS;
	if (n < 2)
		n = 2;
	/* The key prefix as started: redis.* changes take effect at the next start, for the
	 * store's counters and for leases alike. */
	if (!l->c)
		snprintf(l->prefix, sizeof(l->prefix), "%s", c->redis.key_prefix);
	l->c = c;
	l->generation++;
	for (i = 0; i < c->n_tenants; i++) {
		const struct sl_tenant_cfg *tc = &c->tenants[i];

		/* Nodes whose lease has lapsed run at the static rate, and the bound counts
		 * it: past budget / nodes the static rates alone outrun the budget. */
		if (tc->edge_budget && tc->static_rate * c->cluster.nodes > tc->rate * 1.000001)
			log_warn("leases: tenant %s: static_rate %g x %u nodes is more than its "
				 "budget %g: with leases lapsed the cluster admits more than the "
				 "budget", tc->name, tc->static_rate, c->cluster.nodes, tc->rate);
	}
	if (n != l->n_snaps) {
		struct snap *s = calloc(n, sizeof(*s));

		if (!s) {
			log_warn("leases: out of memory; keeping the previous window");
		} else {
			free(l->snaps);
			l->snaps = s;
			l->n_snaps = n;
			l->head = l->filled = 0;
		}
	}
	evtimer_del(l->timer);
	evtimer_add(l->timer, &tv);
	/* A first lease at once rather than a tick from now. */
	on_tick(-1, 0, l);
}

void lease_free(struct lease_ctl *l)
{
	if (!l)
		return;
	if (l->timer)
		event_free(l->timer);
	free(l->snaps);
	free(l);
}
