// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The benchmarks' HTTP load generator (see gw_loadgen.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "gw_loadgen.h"

#define MAX_HEAD 16384
#define RECONNECT_PAUSE_S 0.01 /* after a connection error, so a dead server is not spun on */

struct lg {
	struct event_base *base;
	const struct sockaddr *dst;
	socklen_t dlen;
	uint64_t start_ns, warm_ns, end_ns;
	struct lg_conn *all;
	uint64_t rng;
};

struct lg_conn {
	struct lg_class *c;
	struct lg *lg;
	struct bufferevent *bev;
	struct event *timer;       /* deadline while waiting; think or pause otherwise */
	struct lg_conn *next_idle, *next_all;
	uint64_t sent_ns;
	bool waiting, counted;
	size_t body_left;          /* once the head is in */
	bool have_head, close_after;
	int status;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double rnd01(struct lg *lg)
{
	/* xorshift64*: plenty for arrival jitter. */
	lg->rng ^= lg->rng >> 12;
	lg->rng ^= lg->rng << 25;
	lg->rng ^= lg->rng >> 27;
	return (double)((lg->rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static struct timeval tv_of(double s)
{
	struct timeval tv;

	if (s < 0)
		s = 0;
	tv.tv_sec = (time_t)s;
	tv.tv_usec = (suseconds_t)((s - (double)tv.tv_sec) * 1e6);
	return tv;
}

static bool measuring(const struct lg *lg, uint64_t t)
{
	return t >= lg->warm_ns && t < lg->end_ns;
}

static void send_req(struct lg_conn *k);

static void drop_bev(struct lg_conn *k)
{
	if (k->bev) {
		bufferevent_free(k->bev);
		k->bev = NULL;
		k->c->open_conns--;
	}
	k->waiting = false;
	k->have_head = false;
}

static void make_idle(struct lg_conn *k)
{
	k->next_idle = k->c->idle;
	k->c->idle = k;
}

/* A request ended (answer, timeout or error): count it, then decide what the client does
 * next. */
static void finished(struct lg_conn *k, int status, bool timeout, bool error)
{
	struct lg_class *c = k->c;
	uint64_t t = now_ns();
	bool ok = status >= 200 && status < 300;
	double next = 0;

	event_del(k->timer);
	k->waiting = false;
	if (k->counted) {
		if (timeout) {
			c->timeouts++;
		} else if (error) {
			c->errors++;
		} else {
			c->answered++;
			if (status >= 100 && status < 600)
				c->by_status[status / 100 - 1]++;
			if (status == 429)
				c->s429++;
			if (status == 401)
				c->s401++;
			gw_hist_add(&c->lat_all, t - k->sent_ns);
			if (ok) {
				c->ok++;
				gw_hist_add(&c->lat_ok, t - k->sent_ns);
			}
		}
	}
	if (timeout || error || k->close_after)
		drop_bev(k);
	if (!c->closed_loop) {
		/* Open loop: the connection waits for the next arrival (or is gone). */
		if (k->bev)
			make_idle(k);
		return;
	}
	if (ok)
		next = c->think_s;
	else if (error)
		next = RECONNECT_PAUSE_S;
	if (next > 0) {
		struct timeval tv = tv_of(next);

		event_add(k->timer, &tv);
	} else {
		send_req(k);
	}
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct lg_conn *k = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	if (!k->waiting) {
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	if (!k->have_head) {
		struct evbuffer_ptr p = evbuffer_search(in, "\r\n\r\n", 4, NULL);
		char head[MAX_HEAD + 1], *cl;
		size_t hl;

		if (p.pos < 0) {
			if (evbuffer_get_length(in) > MAX_HEAD)
				finished(k, 0, false, true);
			return;
		}
		hl = (size_t)p.pos + 4;
		if (hl > MAX_HEAD) {
			finished(k, 0, false, true);
			return;
		}
		evbuffer_remove(in, head, hl);
		head[hl] = '\0';
		if (strncmp(head, "HTTP/1.", 7) || strlen(head) < 12) {
			finished(k, 0, false, true);
			return;
		}
		k->status = atoi(head + 9);
		cl = strcasestr(head, "\r\nContent-Length:");
		k->body_left = cl ? strtoul(cl + 17, NULL, 10) : 0;
		k->close_after = strcasestr(head, "\r\nConnection: close") != NULL;
		k->have_head = true;
	}
	if (evbuffer_get_length(in) < k->body_left)
		return;
	evbuffer_drain(in, k->body_left);
	k->have_head = false;
	finished(k, k->status, false, false);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct lg_conn *k = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED)
		return;
	/* EOF or error: a request in flight failed; an idle one just goes away. */
	if (k->waiting) {
		finished(k, 0, false, true);
		return;
	}
	drop_bev(k);
	if (!k->c->closed_loop) {
		struct lg_conn **pp = &k->c->idle;

		while (*pp && *pp != k)
			pp = &(*pp)->next_idle;
		if (*pp)
			*pp = k->next_idle;
	}
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct lg_conn *k = arg;

	(void)fd;
	(void)what;
	if (k->waiting) {
		finished(k, 0, true, false); /* the client's deadline */
		return;
	}
	send_req(k); /* after a think or a pause */
}

static int connect_bev(struct lg_conn *k)
{
	struct lg *lg = k->lg;

	k->bev = bufferevent_socket_new(lg->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!k->bev)
		return -ENOMEM;
	bufferevent_setcb(k->bev, on_read, NULL, on_event, k);
	bufferevent_enable(k->bev, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(k->bev, lg->dst, (int)lg->dlen)) {
		bufferevent_free(k->bev);
		k->bev = NULL;
		return -ECONNREFUSED;
	}
	k->c->open_conns++;
	return 0;
}

static void send_req(struct lg_conn *k)
{
	struct lg_class *c = k->c;
	uint64_t t = now_ns();
	struct timeval tv = tv_of(c->deadline_s);

	if (t >= k->lg->end_ns)
		return;
	if (!k->bev && connect_bev(k)) {
		struct timeval pause = tv_of(RECONNECT_PAUSE_S);

		event_add(k->timer, &pause);
		return;
	}
	k->sent_ns = t;
	k->counted = measuring(k->lg, t);
	k->waiting = true;
	k->have_head = false;
	k->close_after = false;
	if (k->counted)
		c->attempts++;
	{
		/* A crowd: the class's requests in turn (many accounts from many addresses). */
		const char *rq = c->n_requests ? c->requests[c->next_request++ % c->n_requests] :
						 c->request;

		bufferevent_write(k->bev, rq, strlen(rq));
	}
	event_add(k->timer, &tv);
}

static struct lg_conn *new_conn(struct lg *lg, struct lg_class *c)
{
	struct lg_conn *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->c = c;
	k->lg = lg;
	k->timer = evtimer_new(lg->base, on_timer, k);
	if (!k->timer) {
		free(k);
		return NULL;
	}
	k->next_all = lg->all;
	lg->all = k;
	return k;
}

/* Poisson arrivals: exponential gaps with the class's mean, on a schedule of their own. A
 * timer fires late (the loop is busy, timeouts round to the millisecond): every arrival
 * already due goes out then, so the offered rate is the configured one, not one per turn
 * of the loop. */
static double next_gap(struct lg_class *c)
{
	return -log(1.0 - rnd01(c->lg)) / c->rate;
}

static void schedule_arrival(struct lg_class *c)
{
	uint64_t now = now_ns();
	struct timeval tv;

	if (!c->next_ns)
		c->next_ns = now + (uint64_t)(next_gap(c) * 1e9);
	tv = tv_of(c->next_ns > now ? (double)(c->next_ns - now) / 1e9 : 0);
	event_add(c->arrival, &tv);
}

static void arrive(struct lg_class *c)
{
	struct lg_conn *k = c->idle;

	if (k) {
		c->idle = k->next_idle;
	} else if (c->open_conns < c->max_conns) {
		k = new_conn(c->lg, c);
	}
	if (!k) {
		if (measuring(c->lg, now_ns()))
			c->not_sent++;
		return;
	}
	send_req(k);
}

static void on_arrival(evutil_socket_t fd, short what, void *arg)
{
	struct lg_class *c = arg;
	uint64_t now = now_ns();
	int burst = 0;

	(void)fd;
	(void)what;
	if (now >= c->lg->end_ns)
		return;
	/* Bounded: a loop stalled for long does not come back with a storm. */
	while (c->next_ns <= now && burst++ < 1000) {
		c->next_ns += (uint64_t)(next_gap(c) * 1e9);
		arrive(c);
	}
	if (c->next_ns <= now)
		c->next_ns = now;
	schedule_arrival(c);
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(arg);
}

int lg_run(struct event_base *base, const struct sockaddr *dst, socklen_t dlen,
	   struct lg_class *cls, int n, double warmup_s, double duration_s)
{
	struct lg lg = { .base = base, .dst = dst, .dlen = dlen };
	struct event *stop;
	struct timeval tv = tv_of(warmup_s + duration_s);
	struct lg_conn *k, *nx;
	int i, ret = 0;
	uint32_t j;

	lg.start_ns = now_ns();
	lg.warm_ns = lg.start_ns + (uint64_t)(warmup_s * 1e9);
	lg.end_ns = lg.warm_ns + (uint64_t)(duration_s * 1e9);
	lg.rng = lg.start_ns | 1;
	stop = evtimer_new(base, on_stop, base);
	if (!stop || evtimer_add(stop, &tv))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct lg_class *c = &cls[i];

		c->lg = &lg;
		if (c->closed_loop) {
			for (j = 0; j < c->clients; j++) {
				k = new_conn(&lg, c);
				if (!k) {
					ret = -ENOMEM;
					goto out;
				}
				/* Spread the first sends over 100 ms: a real crowd does not arrive
				 * in one microsecond. */
				{
					struct timeval t0 = tv_of(0.1 * j / c->clients);

					event_add(k->timer, &t0);
				}
			}
		} else {
			c->arrival = evtimer_new(base, on_arrival, c);
			if (!c->arrival) {
				ret = -ENOMEM;
				goto out;
			}
			schedule_arrival(c);
		}
	}
	event_base_dispatch(base);
out:
	for (k = lg.all; k; k = nx) {
		nx = k->next_all;
		if (k->bev)
			bufferevent_free(k->bev);
		event_free(k->timer);
		free(k);
	}
	for (i = 0; i < n; i++) {
		if (cls[i].arrival)
			event_free(cls[i].arrival);
		cls[i].arrival = NULL;
		cls[i].idle = NULL;
		cls[i].open_conns = 0;
		cls[i].lg = NULL;
	}
	event_free(stop);
	return ret;
}

char *lg_post(const char *host, const char *path, const char *body)
{
	return lg_post_from(host, path, NULL, body);
}

char *lg_post_from(const char *host, const char *path, const char *xff, const char *body)
{
	char *s = NULL;

	if (asprintf(&s, "POST %s HTTP/1.1\r\nHost: %s\r\n%s%s%s"
		     "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %zu\r\n"
		     "\r\n%s", path, host, xff ? "X-Forwarded-For: " : "", xff ? xff : "",
		     xff ? "\r\n" : "", strlen(body), body) < 0)
		return NULL;
	return s;
}
