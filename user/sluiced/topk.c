// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The top shed prefixes: a bounded table fed by the edge's events (see topk.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "addr.h"
#include "config.h"
#include "json.h"
#include "log.h"
#include "reasons.h"
#include "topk.h"

#define NS 1000000000ull

struct topk_slot {
	bool used;
	uint8_t family, plen, class_id, reason, action;
	uint16_t dport;
	uint8_t addr[16];
	uint64_t total;               /* events since this key took the slot */
	uint64_t first_ns, last_ns;
	uint64_t sec;                 /* the second win[sec % TOPK_WIN_S] counts */
	uint32_t win[TOPK_WIN_S];     /* events per second, the last TOPK_WIN_S seconds */
};

struct topk {
	struct event_base *base;
	const struct sl_maps *maps;
	bool watching;                /* counting what the event hub hands over */
	struct event *ev_tick;
	uint64_t watch_ns;            /* when this watch started; older events are backlog */
	uint64_t last_query_ns;
	uint64_t events, evictions;   /* this watch */
	uint32_t seed;
	struct topk_slot slot[TOPK_SETS * TOPK_WAYS];
};

static uint32_t key_hash(const struct topk *t, const struct sl_event *e)
{
	uint32_t w[5], h = t->seed;
	int i;

	memcpy(w, e->addr, 16);
	w[4] = (uint32_t)e->family | (uint32_t)e->plen << 8 | (uint32_t)e->class_id << 16 |
	       (uint32_t)e->reason << 24;
	for (i = 0; i < 5; i++) {
		h ^= w[i];
		h *= 0x85ebca6b;
		h ^= h >> 13;
	}
	h *= 0xc2b2ae35;
	return h ^ (h >> 16);
}

static bool same_key(const struct topk_slot *s, const struct sl_event *e)
{
	return s->used && s->family == e->family && s->plen == e->plen &&
	       s->class_id == e->class_id && s->reason == e->reason &&
	       !memcmp(s->addr, e->addr, 16);
}

/* Move the slot's window to second @sec, zeroing the seconds it skipped (at most all). */
static void advance(struct topk_slot *s, uint64_t sec)
{
	uint64_t n;

	if (sec <= s->sec)
		return;
	n = sec - s->sec;
	if (n > TOPK_WIN_S)
		n = TOPK_WIN_S;
	while (n--)
		s->win[(sec - n) % TOPK_WIN_S] = 0;
	s->sec = sec;
}

static uint64_t window_sum(struct topk_slot *s, uint64_t sec)
{
	uint64_t sum = 0;
	int i;

	advance(s, sec);
	for (i = 0; i < TOPK_WIN_S; i++)
		sum += s->win[i];
	return sum;
}

void topk_add(struct topk *t, const struct sl_event *e, uint64_t now_ns)
{
	struct topk_slot *set = &t->slot[(key_hash(t, e) & (TOPK_SETS - 1)) * TOPK_WAYS];
	struct topk_slot *s = NULL, *victim = NULL;
	uint64_t sec = now_ns / NS, vsum = UINT64_MAX;
	int i;

	t->events++;
	for (i = 0; i < TOPK_WAYS && !s; i++) {
		if (same_key(&set[i], e))
			s = &set[i];
		else if (!set[i].used && !victim)
			victim = &set[i], vsum = 0;
	}
	if (!s && !victim) {
		for (i = 0; i < TOPK_WAYS; i++) {
			uint64_t sum = window_sum(&set[i], sec);

			if (!victim || sum < vsum ||
			    (sum == vsum && set[i].last_ns < victim->last_ns)) {
				victim = &set[i];
				vsum = sum;
			}
		}
		t->evictions++;
	}
	if (!s) {
		s = victim;
		memset(s, 0, sizeof(*s));
		s->used = true;
		s->family = e->family;
		s->plen = e->plen;
		s->class_id = e->class_id;
		s->reason = e->reason;
		memcpy(s->addr, e->addr, 16);
		s->first_ns = now_ns;
		s->sec = sec;
	}
	advance(s, sec);
	s->win[sec % TOPK_WIN_S]++;
	s->total++;
	s->last_ns = now_ns;
	s->action = e->action;
	s->dport = e->dport;
}

void topk_feed(void *arg, const struct sl_event *e)
{
	struct topk *t = arg;

	/* Only while watching; what sat in the ring before the watch began is old news. */
	if (t->watching && e->ts_ns >= t->watch_ns)
		topk_add(t, e, e->ts_ns);
}

static void unwatch(struct topk *t)
{
	if (!t->watching)
		return;
	event_del(t->ev_tick);
	t->watching = false;
	memset(t->slot, 0, sizeof(t->slot));
	log_info("topshed: nobody asked for %d s; stopped counting shed prefixes", TOPK_LINGER_S);
}

/* Once a second while watching: stop when unwanted. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct topk *t = arg;

	(void)fd;
	(void)what;
	if (t->watching && sl_now_ns() - t->last_query_ns > (uint64_t)TOPK_LINGER_S * NS)
		unwatch(t);
}

/* Start counting the events the hub hands over. Returns 0 or a negative errno. */
static int watch(struct topk *t)
{
	struct timeval one = { .tv_sec = 1 };

	if (t->watching)
		return 0;
	if (!t->maps || t->maps->events < 0)
		return -ENODEV;
	/* The coarse clock may lag by a tick: 10 ms of slack, as `sluicectl events` has. */
	t->watch_ns = sl_now_ns() - 10000000ull;
	t->events = t->evictions = 0;
	memset(t->slot, 0, sizeof(t->slot));
	if (event_add(t->ev_tick, &one))
		return -ENOMEM;
	t->watching = true;
	log_info("topshed: counting the top shed prefixes from the event ring");
	return 0;
}

struct topk *topk_new(struct event_base *base, const struct sl_maps *maps)
{
	struct topk *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->base = base;
	t->maps = maps;
	t->seed = (uint32_t)sl_now_ns() ^ (uint32_t)(uintptr_t)t ^ 0x9e3779b9;
	if (base) {
		t->ev_tick = event_new(base, -1, EV_PERSIST, on_tick, t);
		if (!t->ev_tick) {
			free(t);
			return NULL;
		}
	}
	return t;
}

void topk_free(struct topk *t)
{
	if (!t)
		return;
	unwatch(t);
	if (t->ev_tick)
		event_free(t->ev_tick);
	free(t);
}

static double ago(uint64_t now, uint64_t then)
{
	return now > then ? (double)(now - then) / 1e9 : 0;
}

/* Seconds the window's count of @s covers: since the key took its slot, the watch began, or
 * the window's start, whichever is latest; at least one second. */
static double key_span(const struct topk_slot *s, uint64_t watch_ns, uint64_t now)
{
	uint64_t from = s->first_ns > watch_ns ? s->first_ns : watch_ns;
	double span;

	if (now > (uint64_t)TOPK_WIN_S * NS && from < now - (uint64_t)TOPK_WIN_S * NS)
		from = now - (uint64_t)TOPK_WIN_S * NS;
	span = now > from ? (double)(now - from) / 1e9 : 0;
	return span < 1 ? 1 : span;
}

struct ranked {
	struct topk_slot *s;
	uint64_t window;
};

static int by_window(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->window != y->window)
		return x->window < y->window ? 1 : -1;
	return x->s->last_ns < y->s->last_ns ? 1 : x->s->last_ns > y->s->last_ns ? -1 : 0;
}

static const char *class_of(const struct topk *t, uint8_t id, char *buf, size_t n)
{
	struct sl_class_policy p;

	if (id == SL_CLASS_NONE)
		snprintf(buf, n, "none");
	else if (!t->maps || sl_maps_read_class(t->maps, id, &p) || !p.valid)
		snprintf(buf, n, "class%u", id);
	else
		snprintf(buf, n, "%s", p.name);
	return buf;
}

void topk_report(struct topk *t, struct evbuffer *out, bool json, int n, uint32_t sample)
{
	int ret = watch(t);

	if (ret) {
		evbuffer_add_printf(out, "error cannot read the event ring: %s\n", strerror(-ret));
		return;
	}
	t->last_query_ns = sl_now_ns();
	topk_report_at(t, out, json, n, sample, t->last_query_ns);
}

void topk_report_at(struct topk *t, struct evbuffer *out, bool json, int n, uint32_t sample,
		    uint64_t now)
{
	static struct ranked r[TOPK_SETS * TOPK_WAYS];
	uint64_t sec = now / NS, span_ns;
	double span, scale = sample ? (double)sample : 1.0;
	char *buf = NULL;
	size_t len = 0, m = 0, i;
	struct json j;
	FILE *f;

	if (n <= 0 || n > TOPK_REPORT_MAX)
		n = n <= 0 ? 20 : TOPK_REPORT_MAX;
	for (i = 0; i < TOPK_SETS * TOPK_WAYS; i++) {
		struct topk_slot *s = &t->slot[i];
		uint64_t w;

		if (!s->used || !(w = window_sum(s, sec)))
			continue;
		r[m].s = s;
		r[m++].window = w;
	}
	qsort(r, m, sizeof(r[0]), by_window);
	if (m > (size_t)n)
		m = (size_t)n;
	/* The window, or as much of it as this watch has seen. */
	span_ns = now > t->watch_ns ? now - t->watch_ns : 0;
	span = span_ns >= (uint64_t)TOPK_WIN_S * NS ? TOPK_WIN_S : (double)span_ns / 1e9;
	if (span < 1)
		span = 1;

	f = open_memstream(&buf, &len);
	if (!f) {
		evbuffer_add_printf(out, "error out of memory\n");
		return;
	}
	json_init(&j, f);
	if (json) {
		json_obj_begin(&j, NULL);
		json_u64(&j, "sample", sample ? sample : 1);
		json_u64(&j, "window_s", TOPK_WIN_S);
		json_double(&j, "span_s", span);
		json_double(&j, "watching_s", (double)span_ns / 1e9);
		json_u64(&j, "events", t->events);
		json_u64(&j, "evictions", t->evictions);
		json_u64(&j, "capacity", TOPK_SETS * TOPK_WAYS);
		json_arr_begin(&j, "prefixes");
	} else {
		fprintf(f, "top shed prefixes, last %.0f s (events sampled 1 in %u, counts scaled "
			"back; %llu events, %llu evictions)\n", span, sample ? sample : 1,
			(unsigned long long)t->events, (unsigned long long)t->evictions);
		fprintf(f, "%-28s %-14s %-14s %-6s %5s %10s %10s\n", "PREFIX", "CLASS", "REASON",
			"ACTION", "PORT", "SHED/S", "TOTAL");
	}
	for (i = 0; i < m; i++) {
		struct topk_slot *s = r[i].s;
		struct sl_prefix p = { .family = s->family, .plen = s->plen };
		char pfx[64], cls[32];
		double rate = (double)r[i].window * scale / key_span(s, t->watch_ns, now);

		memcpy(p.addr, s->addr, 16);
		sl_prefix_str(&p, pfx, sizeof(pfx));
		class_of(t, s->class_id, cls, sizeof(cls));
		if (!json) {
			fprintf(f, "%-28s %-14s %-14s %-6s %5u %10.1f %10.0f\n", pfx, cls,
				sl_reason_name(s->reason), sl_action_name(s->action), s->dport, rate,
				(double)s->total * scale);
			continue;
		}
		json_obj_begin(&j, NULL);
		json_str(&j, "prefix", pfx);
		json_str(&j, "class", cls);
		json_str(&j, "reason", sl_reason_name(s->reason));
		json_str(&j, "action", sl_action_name(s->action));
		json_u64(&j, "port", s->dport);
		json_double(&j, "shed_per_s", rate);
		json_double(&j, "shed_last_s", (double)s->win[sec % TOPK_WIN_S] * scale);
		json_double(&j, "shed_window", (double)r[i].window * scale);
		/* Cumulative while the key keeps its slot: rates from deltas between reports. */
		json_double(&j, "total", (double)s->total * scale);
		json_double(&j, "first_seen_s_ago", ago(now, s->first_ns));
		json_double(&j, "last_seen_s_ago", ago(now, s->last_ns));
		json_obj_end(&j);
	}
	if (json) {
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
	}
	fclose(f);
	evbuffer_add_printf(out, "ok\n");
	evbuffer_add(out, buf, len);
	free(buf);
}
