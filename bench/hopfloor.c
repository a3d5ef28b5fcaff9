// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * hopfloor: the least a proxy process can do, as a floor for bench/proxy.sh's one-connection
 * cells. One client connection at a time, one keep-alive connection to the upstream; a
 * request is whatever one read() of the client brings (the bench's requests are small and
 * one at a time), written as it is to the upstream; the answer is read to its Content-Length
 * and written back as it is. No parsing beyond that, no header rules, no admission, no
 * timers: blocking system calls, four a request (read, write, read, write). It is not a
 * proxy anyone should run; it says what the hop itself costs on this machine (two context
 * switches and two loopback segments each way), which no proxy can go below.
 *
 * Usage: hopfloor LISTEN_PORT UPSTREAM_PORT      (127.0.0.1 both)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loopback.h"

#define BUF 65536

/* The answer's whole length once its head is in buf[0..got), 0 before, -1 without a length. */
static long answer_len(const char *buf, size_t got)
{
	const char *e = memmem(buf, got, "\r\n\r\n", 4), *p;

	if (!e)
		return 0;
	for (p = buf; p && p < e; p = memmem(p, (size_t)(e - p), "\r\n", 2)) {
		p += 2;
		if (!strncasecmp(p, "Content-Length:", 15))
			return (long)(e - buf) + 4 + strtol(p + 15, NULL, 10);
	}
	return -1;
}

int main(int argc, char **argv)
{
	static char buf[BUF];
	int ls, up, c;

	if (argc != 3) {
		fprintf(stderr, "usage: hopfloor LISTEN_PORT UPSTREAM_PORT\n");
		return 2;
	}
	ls = lo_tcp(atoi(argv[1]), 1);
	up = lo_tcp(atoi(argv[2]), 0);
	if (ls < 0 || up < 0) {
		perror("hopfloor");
		return 1;
	}
	while ((c = accept4(ls, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		int one = 1;
		ssize_t n;

		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while ((n = read(c, buf, BUF)) > 0) {
			size_t got = 0;
			long want = 0;

			if (write(up, buf, (size_t)n) != n)
				return 1;
			while (want == 0 || got < (size_t)want) {
				ssize_t m = read(up, buf + got, BUF - got);

				if (m <= 0)
					return 1;
				got += (size_t)m;
				if (!want && (want = answer_len(buf, got)) < 0)
					return 1;
				if (want > BUF)
					return 1;
			}
			if (write(c, buf, got) != (ssize_t)got)
				break;
		}
		close(c);
	}
	return 1;
}
