// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * pingpong: one keep-alive HTTP/1.1 connection per target, one request in flight at a time,
 * the targets taken in turn request by request (the order rotated every round, so that no
 * target always follows the same one). Every target's latencies are sampled under the same
 * conditions to within a few milliseconds: on a shared machine whose speed drifts by tens of
 * percent between the five-second runs of wrk, the ratio of two p50s measured this way is the
 * hop's, not the drift's (bench/proxy.sh, docs/performance.md "Upstream mode").
 *
 * Usage: pingpong [--requests N] [--warmup N] [--path /check] [--header "K: V"]...
 *                 LABEL=PORT...      (127.0.0.1; the first label is the baseline)
 * Prints one JSON object: per label the requests timed, p50, p90, p99 and mean in
 * microseconds, and each label's p50 and p99 as a ratio to the baseline's.
 * Exits 1 on any answer but a complete 200 (with the answer's first line), 2 on bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "loopback.h"

#define MAX_TARGETS 8
#define MAX_HEADERS 8
#define BUF_SIZE 65536

struct target {
	const char *label;
	int port;
	int fd;
	double *us;   /* one latency per timed request */
	long n;
};

static char request[8192];
static size_t request_len;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The end of a chunked body in buf[0..len), from off: its length, 0 if incomplete, -1 bad. */
static long chunked_end(const char *buf, size_t len, size_t off)
{
	for (;;) {
		char *end;
		const char *eol = memmem(buf + off, len - off, "\r\n", 2);
		unsigned long n;

		if (!eol)
			return 0;
		n = strtoul(buf + off, &end, 16);
		if (end == buf + off)
			return -1;
		off = (size_t)(eol - buf) + 2;
		if (n == 0) { /* trailers, then an empty line */
			const char *fin = memmem(buf + off - 2, len - off + 2, "\r\n\r\n", 4);

			return fin ? (long)(fin - buf) + 4 : 0;
		}
		if (off + n + 2 > len)
			return 0;
		off += n + 2;
	}
}

/*
 * One request on t's connection, read to the answer's end: its status, or -1 when the
 * connection failed or the answer is not HTTP/1.1 with a length (first line in *why).
 */
static int exchange(struct target *t, char *buf, char *why, size_t why_len)
{
	size_t got = 0, head = 0;
	long body = -1, total = -1;
	int status = -1;

	if (send(t->fd, request, request_len, MSG_NOSIGNAL) != (ssize_t)request_len) {
		snprintf(why, why_len, "send: %s", strerror(errno));
		return -1;
	}
	for (;;) {
		ssize_t n = recv(t->fd, buf + got, BUF_SIZE - 1 - got, 0);

		if (n <= 0) {
			snprintf(why, why_len, "%s", n ? strerror(errno) : "closed by the server");
			return -1;
		}
		got += (size_t)n;
		buf[got] = 0;
		if (!head) {
			char *e = strstr(buf, "\r\n\r\n"), *p;

			if (!e)
				goto more;
			head = (size_t)(e - buf) + 4;
			if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1) {
				snprintf(why, why_len, "%.80s", buf);
				return -1;
			}
			for (p = strstr(buf, "\r\n"); p && p < e; p = strstr(p + 2, "\r\n")) {
				if (!strncasecmp(p + 2, "Content-Length:", 15))
					body = strtol(p + 17, NULL, 10);
				else if (!strncasecmp(p + 2, "Transfer-Encoding:", 18) &&
					 strstr(p + 20, "chunked") && strstr(p + 20, "chunked") < e)
					body = -2;
			}
			if (body == -1) {
				snprintf(why, why_len, "no length: %.80s", buf);
				return -1;
			}
		}
		if (body >= 0)
			total = (long)head + body;
		else if ((total = chunked_end(buf, got, head)) < 0) {
			snprintf(why, why_len, "bad chunk: %.80s", buf);
			return -1;
		}
		if (total > 0 && got >= (size_t)total) {
			if (got > (size_t)total) {
				snprintf(why, why_len, "%zu bytes after the answer", got - (size_t)total);
				return -1;
			}
			if (status != 200)
				snprintf(why, why_len, "%.80s", buf);
			return status;
		}
more:
		if (got >= BUF_SIZE - 1) {
			snprintf(why, why_len, "answer over %d bytes", BUF_SIZE);
			return -1;
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, long n, double p)
{
	long i = (long)(p * (double)(n - 1) + 0.5);

	return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "requests", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "path", required_argument, NULL, 'p' },
		{ "header", required_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	struct target t[MAX_TARGETS];
	const char *path = "/", *headers[MAX_HEADERS];
	long requests = 5000, warmup = 500, i;
	int nt = 0, nh = 0, c, k, off;
	static char buf[BUF_SIZE];
	char why[160];
	double base50 = 0, base99 = 0;

	while ((c = getopt_long(argc, argv, "n:w:p:H:", opts, NULL)) != -1) {
		switch (c) {
		case 'n': requests = atol(optarg); break;
		case 'w': warmup = atol(optarg); break;
		case 'p': path = optarg; break;
		case 'H':
			if (nh == MAX_HEADERS) {
				fprintf(stderr, "pingpong: at most %d --header\n", MAX_HEADERS);
				return 2;
			}
			headers[nh++] = optarg;
			break;
		default: return 2;
		}
	}
	for (; optind < argc && nt < MAX_TARGETS; optind++) {
		char *eq = strchr(argv[optind], '=');

		if (!eq || eq == argv[optind] || atoi(eq + 1) <= 0 || atoi(eq + 1) > 65535) {
			fprintf(stderr, "pingpong: '%s': want LABEL=PORT\n", argv[optind]);
			return 2;
		}
		*eq = 0;
		t[nt] = (struct target){ .label = argv[optind], .port = atoi(eq + 1) };
		nt++;
	}
	if (!nt || optind < argc || requests < 1 || warmup < 0) {
		fprintf(stderr, "usage: pingpong [--requests N] [--warmup N] [--path P] "
				"[--header 'K: V']... LABEL=PORT... (at most %d)\n", MAX_TARGETS);
		return 2;
	}
	off = snprintf(request, sizeof(request), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", path);
	for (k = 0; k < nh; k++)
		off += snprintf(request + off, sizeof(request) - (size_t)off, "%s\r\n", headers[k]);
	off += snprintf(request + off, sizeof(request) - (size_t)off, "\r\n");
	if (off >= (int)sizeof(request)) {
		fprintf(stderr, "pingpong: request over %zu bytes\n", sizeof(request));
		return 2;
	}
	request_len = (size_t)off;
	for (k = 0; k < nt; k++) {
		t[k].us = calloc((size_t)requests, sizeof(double));
		if (!t[k].us || (t[k].fd = lo_tcp(t[k].port, 0)) < 0) {
			fprintf(stderr, "pingpong: %s (port %d): %s\n", t[k].label, t[k].port,
				strerror(errno));
			return 1;
		}
	}
	for (i = 0; i < warmup + requests; i++) {
		for (c = 0; c < nt; c++) {
			struct target *x = &t[(c + i) % nt]; /* rotated each round */
			double t0 = now_us();
			int st = exchange(x, buf, why, sizeof(why));
			double dt = now_us() - t0;

			if (st != 200) {
				fprintf(stderr, "pingpong: %s: request %ld: %s\n", x->label, i, why);
				return 1;
			}
			if (i >= warmup)
				x->us[x->n++] = dt;
		}
	}
	printf("{\"requests\": %ld, \"warmup\": %ld, \"path\": \"%s\"", requests, warmup, path);
	for (k = 0; k < nt; k++) {
		double sum = 0, p50, p99;

		for (i = 0; i < t[k].n; i++)
			sum += t[k].us[i];
		qsort(t[k].us, (size_t)t[k].n, sizeof(double), cmp_double);
		p50 = pct(t[k].us, t[k].n, 0.50);
		p99 = pct(t[k].us, t[k].n, 0.99);
		if (!k)
			base50 = p50, base99 = p99;
		printf(", \"%s\": {\"n\": %ld, \"p50_us\": %.1f, \"p90_us\": %.1f, \"p99_us\": %.1f, "
		       "\"mean_us\": %.1f, \"p50_ratio\": %.3f, \"p99_ratio\": %.3f}",
		       t[k].label, t[k].n, p50, pct(t[k].us, t[k].n, 0.90), p99,
		       sum / (double)t[k].n, p50 / base50, p99 / base99);
		close(t[k].fd);
		free(t[k].us);
	}
	printf("}\n");
	return 0;
}
