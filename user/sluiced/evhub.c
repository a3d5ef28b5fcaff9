// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The edge's event ring, read once and fanned out to every reader (see evhub.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "evfmt.h"
#include "evhub.h"
#include "log.h"

struct reader {
	struct evhub *h;
	struct ctl_req *req;
	struct reader *prev, *next;
	bool json;
	uint64_t lost;       /* since the last "d" line */
	uint64_t lost_total;
	uint64_t sent;
};

struct evhub {
	struct event_base *base;
	const struct sl_maps *maps;
	struct ring_buffer *rb;
	struct event *ev_ring, *ev_tick;
	int64_t wall_off;
	struct reader *readers;
	uint32_t n_readers;
	uint64_t events, dropped;
	void (*tap)(void *arg, const struct sl_event *e);
	void *tap_arg;
	/* Class names by id, read from the maps at most once a tick (a reload may rename). */
	bool cls_known[256];
	char cls_name[256][SL_CLASS_NAME_LEN + 8];
	uint64_t n_hist;                  /* events ever put in hist */
	struct sl_event hist[EVHUB_HISTORY];
};

static void class_of(struct evhub *h, uint8_t id, char *buf, size_t n)
{
	struct sl_class_policy p;
	char *c = h->cls_name[id];

	if (!h->cls_known[id]) {
		if (id == SL_CLASS_NONE)
			snprintf(c, sizeof(h->cls_name[id]), "none");
		else if (sl_maps_read_class(h->maps, id, &p) || !p.valid)
			snprintf(c, sizeof(h->cls_name[id]), "class%u", id);
		else
			snprintf(c, sizeof(h->cls_name[id]), "%s", p.name);
		h->cls_known[id] = true;
	}
	snprintf(buf, n, "%s", c);
}

/* Tell @r what it lost, if anything, when its queue has room again. */
static void tell_lost(struct reader *r)
{
	struct evbuffer *out;
	char when[40];

	if (!r->lost || ctl_stream_queued(r->req) >= EVHUB_QUEUE_BYTES)
		return;
	out = ctl_stream_out(r->req);
	sl_event_time(sl_now_ns(), r->h->wall_off, when, sizeof(when));
	if (r->json)
		evbuffer_add_printf(out, "d {\"time\":\"%s\",\"dropped\":%llu,"
				    "\"dropped_total\":%llu}\n", when, (unsigned long long)r->lost,
				    (unsigned long long)r->lost_total);
	else
		evbuffer_add_printf(out, "d %s dropped %llu events: this reader fell behind "
				    "(%llu in all; the daemon and the other readers did not "
				    "wait)\n", when, (unsigned long long)r->lost,
				    (unsigned long long)r->lost_total);
	r->lost = 0;
}

/* Queue one rendered event for @r, or count it lost. */
static void offer(struct reader *r, const char *line, size_t len)
{
	if (ctl_stream_queued(r->req) + len + 2 > EVHUB_QUEUE_BYTES) {
		r->lost++;
		r->lost_total++;
		r->h->dropped++;
		return;
	}
	tell_lost(r);
	evbuffer_add(ctl_stream_out(r->req), "e ", 2);
	evbuffer_add(ctl_stream_out(r->req), line, len);
	r->sent++;
}

/* Each form is rendered at most once per event, whatever the number of readers. */
struct rendered {
	char cls[SL_CLASS_NAME_LEN + 8];
	char line[2][SL_EVFMT_MAX];
	size_t len[2];
};

static void render(struct evhub *h, const struct sl_event *e, struct rendered *x, bool json)
{
	if (!x->cls[0])
		class_of(h, e->class_id, x->cls, sizeof(x->cls));
	if (!x->len[json])
		x->len[json] = sl_event_format(e, h->wall_off, x->cls, json, x->line[json],
					       sizeof(x->line[json]));
}

static int on_ring_event(void *arg, void *data, size_t len)
{
	struct evhub *h = arg;
	const struct sl_event *e = data;
	struct rendered x;
	struct reader *r;

	if (len < sizeof(*e))
		return 0;
	h->events++;
	h->hist[h->n_hist++ & (EVHUB_HISTORY - 1)] = *e;
	if (h->tap)
		h->tap(h->tap_arg, e);
	if (!h->readers)
		return 0;
	x.cls[0] = '\0';
	x.len[0] = x.len[1] = 0;
	for (r = h->readers; r; r = r->next) {
		render(h, e, &x, r->json);
		offer(r, x.line[r->json], x.len[r->json]);
	}
	return 0;
}

void evhub_drain(struct evhub *h)
{
	if (h && h->rb)
		ring_buffer__consume(h->rb);
}

static void on_ring(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	evhub_drain(arg);
}

/* Every 200 ms: what a missed wakeup left, and the wall clock's offset (it may be stepped). */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct evhub *h = arg;

	(void)fd;
	(void)what;
	h->wall_off = sl_wall_offset_ns();
	memset(h->cls_known, 0, sizeof(h->cls_known));
	evhub_drain(h);
}

static void reader_unlink(struct reader *r)
{
	struct evhub *h = r->h;

	if (r->prev)
		r->prev->next = r->next;
	else
		h->readers = r->next;
	if (r->next)
		r->next->prev = r->prev;
	h->n_readers--;
}

static void on_gone(void *arg)
{
	struct reader *r = arg;

	log_debug("events: a reader left after %llu events (%llu lost)",
		  (unsigned long long)r->sent, (unsigned long long)r->lost_total);
	reader_unlink(r);
	free(r);
}

static void on_drained(void *arg)
{
	tell_lost(arg);
}

void evhub_subscribe(struct evhub *h, const char *args, struct evbuffer *out,
		     struct ctl_req *req, uint32_t sample)
{
	bool json = false, backlog = false;
	char word[16];
	struct reader *r;
	int off = 0;

	while (sscanf(args, " %15s%n", word, &off) == 1) {
		if (!strcmp(word, "json"))
			json = true;
		else if (!strcmp(word, "backlog"))
			backlog = true;
		else {
			evbuffer_add_printf(out, "error usage: events [json] [backlog]\n");
			return;
		}
		args += off;
	}
	if (!h) {
		evbuffer_add_printf(out, "error this sluiced runs no edge (no 'edge' section)\n");
		return;
	}
	if (h->n_readers >= EVHUB_MAX_READERS) {
		evbuffer_add_printf(out, "error %d event readers already; close one first\n",
				    EVHUB_MAX_READERS);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		evbuffer_add_printf(out, "error out of memory\n");
		return;
	}
	evhub_drain(h); /* the backlog ends, and the stream starts, now */
	r->h = h;
	r->req = req;
	r->json = json;
	evbuffer_add_printf(out, "ok streaming sampled shed events (1 in %u)\n",
			    sample ? sample : 1);
	ctl_stream(req, on_gone, on_drained, r, EVHUB_QUEUE_BYTES / 2);
	r->next = h->readers;
	if (h->readers)
		h->readers->prev = r;
	h->readers = r;
	h->n_readers++;
	if (backlog) {
		uint64_t n = h->n_hist < EVHUB_HISTORY ? h->n_hist : EVHUB_HISTORY, i;

		for (i = h->n_hist - n; i < h->n_hist; i++) {
			struct rendered x = { .cls = "" };

			render(h, &h->hist[i & (EVHUB_HISTORY - 1)], &x, json);
			offer(r, x.line[json], x.len[json]);
		}
	}
}

void evhub_set_tap(struct evhub *h, void (*fn)(void *arg, const struct sl_event *e),
		   void *arg)
{
	h->tap = fn;
	h->tap_arg = arg;
}

void evhub_get_stats(const struct evhub *h, struct evhub_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!h)
		return;
	st->events = h->events;
	st->dropped = h->dropped;
	st->readers = h->n_readers;
}

struct evhub *evhub_new(struct event_base *base, const struct sl_maps *maps)
{
	struct timeval tick = { .tv_usec = 200000 };
	struct evhub *h;
	int e;

	if (maps->events < 0) {
		errno = ENODEV;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->base = base;
	h->maps = maps;
	h->wall_off = sl_wall_offset_ns();
	h->rb = ring_buffer__new(maps->events, on_ring_event, h, NULL);
	if (!h->rb)
		goto fail;
	h->ev_ring = event_new(base, ring_buffer__epoll_fd(h->rb), EV_READ | EV_PERSIST, on_ring,
			       h);
	h->ev_tick = event_new(base, -1, EV_PERSIST, on_tick, h);
	if (!h->ev_ring || !h->ev_tick || event_add(h->ev_ring, NULL) ||
	    event_add(h->ev_tick, &tick)) {
		errno = ENOMEM;
		goto fail;
	}
	/* What waited in the ring (a previous sluiced's, or nobody's) is the backlog. */
	ring_buffer__consume(h->rb);
	return h;
fail:
	e = errno;
	if (h->ev_ring)
		event_free(h->ev_ring);
	if (h->ev_tick)
		event_free(h->ev_tick);
	ring_buffer__free(h->rb);
	free(h);
	errno = e;
	return NULL;
}

void evhub_free(struct evhub *h)
{
	if (!h)
		return;
	while (h->readers) {
		struct reader *r = h->readers;

		reader_unlink(r);
		ctl_stream_end(r->req);
		free(r);
	}
	event_free(h->ev_ring);
	event_free(h->ev_tick);
	ring_buffer__free(h->rb);
	free(h);
}
