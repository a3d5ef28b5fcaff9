// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Control socket server on libevent: see ctl.h. */
#include <errno.h>
#include <limits.h>
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
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

static void on_written(struct bufferevent *bev, void *arg)
{
	(void)arg;
	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		bufferevent_free(bev);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	(void)what;
	(void)arg;
	bufferevent_free(bev);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct ctl_server *s = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer *out = bufferevent_get_output(bev);
	size_t len;
	char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);

	if (!line) {
		if (evbuffer_get_length(in) > CTL_MAX_LINE) {
			evbuffer_add_printf(out, "error request longer than %d bytes\n", CTL_MAX_LINE);
			goto reply;
		}
		return; /* wait for the rest of the line */
	}
	s->fn(s->arg, line, out);
	free(line);
reply:
	bufferevent_disable(bev, EV_READ);
	bufferevent_setcb(bev, NULL, on_written, on_event, s);
	bufferevent_enable(bev, EV_WRITE);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
		      int socklen, void *arg)
{
	struct event_base *base = evconnlistener_get_base(l);
	struct timeval tv = { .tv_sec = CTL_TIMEOUT_S };
	struct bufferevent *bev;

	(void)sa;
	(void)socklen;
	bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!bev) {
		close(fd);
		return;
	}
	bufferevent_set_timeouts(bev, &tv, &tv);
	bufferevent_setcb(bev, on_read, NULL, on_event, arg);
	bufferevent_enable(bev, EV_READ);
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
	unlink(s->path);
	free(s);
}
