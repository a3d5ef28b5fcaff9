// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Control socket server on libevent: see ctl.h. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "ctl.h"
#include "log.h"

#define CTL_MAX_LINE 4096
#define CTL_TIMEOUT_S 5

struct ctl_server {
	struct evconnlistener *lev;
	ctl_handler_fn fn;
	void *arg;
	struct ctl_req *conns; /* every open connection, for ctl_close */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

struct ctl_req {
	struct ctl_server *s;
	struct bufferevent *bev;
	struct ctl_req *prev, *next;
	bool in_handler; /* the handler is running: an answer it gives is sent on return */
	bool deferred;   /* waiting for ctl_answer() */
	bool streaming;  /* ctl_stream(): open until the peer or its holder ends it */
	ctl_stream_fn gone, drained;
	void *stream_arg;
	size_t low;
};

static void req_free(struct ctl_req *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		r->s->conns = r->next;
	if (r->next)
		r->next->prev = r->prev;
	bufferevent_free(r->bev);
	free(r);
}

static void on_written(struct bufferevent *bev, void *arg)
{
	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		req_free(arg);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	req_free(arg);
}

/* A stream's peer sent something (ignored) or went away. */
static void on_stream_read(struct bufferevent *bev, void *arg)
{
	(void)arg;
	evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
}

static void on_stream_written(struct bufferevent *bev, void *arg)
{
	struct ctl_req *r = arg;

	(void)bev;
	if (r->drained)
		r->drained(r->stream_arg);
}

static void on_stream_event(struct bufferevent *bev, short what, void *arg)
{
	struct ctl_req *r = arg;

	(void)bev;
	(void)what;
	if (r->gone)
		r->gone(r->stream_arg);
	req_free(r);
}

void ctl_stream(struct ctl_req *r, ctl_stream_fn gone, ctl_stream_fn drained, void *arg,
		size_t low)
{
	r->streaming = true;
	r->gone = gone;
	r->drained = drained;
	r->stream_arg = arg;
	r->low = low;
}

struct evbuffer *ctl_stream_out(struct ctl_req *r)
{
	return bufferevent_get_output(r->bev);
}

size_t ctl_stream_queued(struct ctl_req *r)
{
	return evbuffer_get_length(bufferevent_get_output(r->bev));
}

/* One non-blocking try at what @r has queued (the loop may not run again for it). */
static void flush_now(struct ctl_req *r)
{
	struct evbuffer *out = bufferevent_get_output(r->bev);
	size_t len = evbuffer_get_length(out);

	/* By hand: a bufferevent's output is frozen at its start to all but the bufferevent. */
	if (len && send(bufferevent_getfd(r->bev), evbuffer_pullup(out, -1), len,
			MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("control socket: an answer was lost at exit: %s", strerror(errno));
}

void ctl_stream_end(struct ctl_req *r)
{
	flush_now(r);
	req_free(r);
}

/* The answer is in the output buffer: send it, then close. */
static void reply(struct ctl_req *r)
{
	bufferevent_disable(r->bev, EV_READ);
	bufferevent_setcb(r->bev, NULL, on_written, on_event, r);
	bufferevent_enable(r->bev, EV_WRITE);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct ctl_req *r = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer *out = bufferevent_get_output(bev);
	size_t len;
	char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);

	if (!line) {
		if (evbuffer_get_length(in) > CTL_MAX_LINE) {
			evbuffer_add_printf(out, "error request longer than %d bytes\n", CTL_MAX_LINE);
			reply(r);
		}
		return; /* wait for the rest of the line */
	}
	r->in_handler = true;
	r->s->fn(r->s->arg, line, out, r);
	r->in_handler = false;
	free(line);
	if (r->streaming) {
		bufferevent_set_timeouts(bev, NULL, NULL);
		bufferevent_setwatermark(bev, EV_WRITE, r->low, 0);
		bufferevent_setcb(bev, on_stream_read, on_stream_written, on_stream_event, r);
		bufferevent_enable(bev, EV_READ | EV_WRITE);
		return;
	}
	if (r->deferred) {
		/* Nothing is read or written until the answer: no event, no timeout, fires. */
		bufferevent_disable(bev, EV_READ | EV_WRITE);
		bufferevent_setcb(bev, NULL, NULL, on_event, r);
		return;
	}
	reply(r);
}

void ctl_defer(struct ctl_req *r)
{
	r->deferred = true;
}

void ctl_answer(struct ctl_req *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	evbuffer_add_vprintf(bufferevent_get_output(r->bev), fmt, ap);
	va_end(ap);
	r->deferred = false;
	if (!r->in_handler)
		reply(r);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
		      int socklen, void *arg)
{
	struct event_base *base = evconnlistener_get_base(l);
	struct timeval tv = { .tv_sec = CTL_TIMEOUT_S };
	struct ctl_server *s = arg;
	struct ctl_req *r;

	(void)sa;
	(void)socklen;
	r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		return;
	}
	r->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!r->bev) {
		free(r);
		close(fd);
		return;
	}
	r->s = s;
	r->next = s->conns;
	if (s->conns)
		s->conns->prev = r;
	s->conns = r;
	bufferevent_set_timeouts(r->bev, &tv, &tv);
	bufferevent_setcb(r->bev, on_read, NULL, on_event, r);
	bufferevent_enable(r->bev, EV_READ);
}

/* Is a live daemon answering on @path? */
static int socket_alive(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int alive;

	if (fd < 0)
		return 0;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	alive = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return alive;
}

static void mkdir_parent(const char *path)
{
	char dir[PATH_MAX], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return;
	*slash = '\0';
	if (mkdir(dir, 0755) && errno != EEXIST)
		log_warn("cannot create %s: %s", dir, strerror(errno));
}

struct ctl_server *ctl_listen(struct event_base *base, const char *path, ctl_handler_fn fn,
			      void *arg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ctl_server *s;
	mode_t old;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (socket_alive(path)) {
		log_error("another sluiced answers on %s", path);
		errno = EADDRINUSE;
		return NULL;
	}
	unlink(path); /* stale, from a daemon that did not exit cleanly */
	mkdir_parent(path);
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fn = fn;
	s->arg = arg;
	snprintf(s->path, sizeof(s->path), "%s", path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	old = umask(0077); /* root only: the socket can detach sluice */
	s->lev = evconnlistener_new_bind(base, on_accept, s,
					 LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 16,
					 (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (!s->lev) {
		int e = errno;

		free(s);
		errno = e;
		return NULL;
	}
	return s;
}

void ctl_close(struct ctl_server *s)
{
	if (!s)
		return;
	evconnlistener_free(s->lev);
	while (s->conns) {
		struct ctl_req *r = s->conns;

		/* One try: an answer of a few lines fits the socket. */
		flush_now(r);
		if (r->streaming && r->gone)
			r->gone(r->stream_arg);
		req_free(r);
	}
	unlink(s->path);
	free(s);
}
