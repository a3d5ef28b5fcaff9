// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * h1load: a small HTTP/1.1 load client for bench/reply_rate. Every request is a new TCP
 * connection (connect, one GET with Connection: close, read to EOF, close), the way a flood of
 * login attempts arrives; N of them are kept in flight with epoll. Prints one JSON object:
 * requests completed, by status, errors, elapsed seconds, and the client's own CPU time.
 *
 * Usage: h1load --dst ADDR [--src ADDR] [--port 80] [--conns 64] [--seconds 5]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct conn {
	int fd;
	int sent;
	int status;
	size_t got;
	char head[16];
};

static struct sockaddr_storage dst, src;
static socklen_t dst_len, src_len;
static long n_req, n_err, n_status[6];
static const char req[] = "GET /login HTTP/1.1\r\nHost: idp.example\r\nConnection: close\r\n\r\n";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_addr(const char *s, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		*len = sizeof(*a4);
		return 0;
	}
	if (inet_pton(AF_INET6, s, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		*len = sizeof(*a6);
		return 0;
	}
	return -1;
}

static int start(int ep, struct conn *c)
{
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLIN, .data.ptr = c };
	int one = 1;

	memset(c, 0, sizeof(*c));
	c->fd = socket(dst.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -1;
	setsockopt(c->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (src_len && bind(c->fd, (struct sockaddr *)&src, src_len)) {
		close(c->fd);
		return -1;
	}
	if (connect(c->fd, (struct sockaddr *)&dst, dst_len) && errno != EINPROGRESS) {
		close(c->fd);
		return -1;
	}
	return epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
}

static void finish(int ep, struct conn *c, int ok)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (!ok || !c->status) {
		if (getenv("H1LOAD_DEBUG") && *getenv("H1LOAD_DEBUG") && n_err < 3)
			fprintf(stderr, "error: ok %d status %d got %zu errno %d\n", ok, c->status,
				c->got, errno);
		n_err++;
		return;
	}
	n_req++;
	if (c->status == 429)
		n_status[0]++; /* slot 0 counts 429s exactly */
	else if (c->status / 100 >= 1 && c->status / 100 <= 5)
		n_status[c->status / 100]++;
	if (getenv("H1LOAD_DEBUG") && *getenv("H1LOAD_DEBUG") && n_req < 3)
		fprintf(stderr, "status %d head '%.12s'\n", c->status, c->head);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dst", required_argument, NULL, 'd' }, { "src", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' }, { "conns", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 't' }, { 0 }
	};
	const char *dsts = NULL, *srcs = NULL;
	int port = 80, nconns = 64, opt, ep, i;
	double secs = 5, t0, end;
	struct epoll_event evs[256];
	struct conn *cs;
	struct rusage ru;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'd': dsts = optarg; break;
		case 's': srcs = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'c': nconns = atoi(optarg); break;
		case 't': secs = atof(optarg); break;
		default: return 2;
		}
	}
	if (!dsts || parse_addr(dsts, (uint16_t)port, &dst, &dst_len) || nconns < 1 ||
	    nconns > 4096 || (srcs && parse_addr(srcs, 0, &src, &src_len))) {
		fprintf(stderr, "usage: h1load --dst ADDR [--src ADDR] [--port 80] [--conns 64] "
			"[--seconds 5]\n");
		return 2;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	cs = calloc((size_t)nconns, sizeof(*cs));
	if (ep < 0 || !cs)
		return 1;
	for (i = 0; i < nconns; i++)
		if (start(ep, &cs[i]))
			n_err++;
	t0 = now_s();
	end = t0 + secs;
	while (now_s() < end) {
		int n = epoll_wait(ep, evs, 256, 100);

		for (i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			char buf[4096];
			ssize_t r;

			if (evs[i].events & (EPOLLERR | EPOLLHUP) && !(evs[i].events & EPOLLIN)) {
				finish(ep, c, 0);
				start(ep, c);
				continue;
			}
			if (!c->sent && (evs[i].events & EPOLLOUT)) {
				struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

				if (send(c->fd, req, sizeof(req) - 1, MSG_NOSIGNAL) < 0) {
					finish(ep, c, 0);
					start(ep, c);
					continue;
				}
				c->sent = 1;
				epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
			}
			if (!(evs[i].events & EPOLLIN))
				continue;
			while ((r = recv(c->fd, buf, sizeof(buf), 0)) > 0) {
				if (c->got < sizeof(c->head) - 1) {
					size_t k = sizeof(c->head) - 1 - c->got;

					memcpy(c->head + c->got, buf, (size_t)r < k ? (size_t)r : k);
					c->got += (size_t)r < k ? (size_t)r : k;
				}
			}
			if (r == 0 || (r < 0 && errno != EAGAIN)) {
				if (c->got >= 12 && !strncmp(c->head, "HTTP/1.", 7))
					c->status = atoi(c->head + 9);
				finish(ep, c, r == 0);
				if (start(ep, c))
					n_err++;
			}
		}
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"requests\":%ld,\"status_429\":%ld,\"status_2xx\":%ld,\"status_other\":%ld,"
	       "\"errors\":%ld,\"seconds\":%.3f,\"client_cpu_s\":%.3f}\n",
	       n_req, n_status[0], n_status[2], n_req - n_status[0] - n_status[2], n_err,
	       now_s() - t0,
	       (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	return 0;
}
