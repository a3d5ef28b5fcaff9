// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"

int sl_notify(const char *fmt, ...)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t salen;
	char msg[512];
	va_list ap;
	size_t n;
	ssize_t w;
	int fd, len, err = 0;

	if (!path || !*path)
		return 0;
	/* An abstract socket is written "@name"; a path must be absolute. */
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n < 2 || n >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, n);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);

	va_start(ap, fmt);
	len = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (len < 0 || (size_t)len >= sizeof(msg))
		return -EMSGSIZE;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	w = sendto(fd, msg, (size_t)len, MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
	if (w < 0)
		err = -errno;
	else if (w != len)
		err = -EMSGSIZE;
	close(fd);
	return err;
}

uint64_t sl_notify_watchdog_usec(void)
{
	const char *us = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	unsigned long long v;
	char *end;

	if (!us || !*us)
		return 0;
	if (pid && *pid) {
		errno = 0;
		v = strtoull(pid, &end, 10);
		if (errno || *end || v != (unsigned long long)getpid())
			return 0;
	}
	errno = 0;
	v = strtoull(us, &end, 10);
	if (errno || *end || !v)
		return 0;
	return v;
}
