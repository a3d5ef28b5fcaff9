// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* A TCP socket on 127.0.0.1:@port with TCP_NODELAY, connected (@listening 0) or listening:
 * the one socket setup of bench/pingpong and bench/hopfloor. -1 on failure, errno set. */
#ifndef SLUICE_BENCH_LOOPBACK_H
#define SLUICE_BENCH_LOOPBACK_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

static inline int lo_tcp(int port, int listening)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, e;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (listening) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (!bind(fd, (struct sockaddr *)&a, sizeof(a)) && !listen(fd, 16))
			return fd;
	} else if (!connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		return fd;
	}
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

#endif
