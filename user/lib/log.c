// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Logging: see log.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "log.h"

static enum log_level cur_level = LOG_LVL_INFO;
static bool to_syslog;

static const char *const names[] = { "error", "warn", "info", "debug" };

void log_set_level(enum log_level lvl)
{
	cur_level = lvl;
}

enum log_level log_get_level(void)
{
	return cur_level;
}

void log_use_syslog(const char *ident)
{
	openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
	to_syslog = true;
}

static void vlog(enum log_level lvl, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char buf[1024];
	size_t n;

	if (lvl > cur_level)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (to_syslog) {
		syslog(prio[lvl], "%s", buf);
	} else {
		struct timespec ts;
		struct tm tm;
		char stamp[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ld %-5s %s\n", stamp, ts.tv_nsec / 1000000, names[lvl], buf);
	}
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(lvl, fmt, ap);
	va_end(ap);
}

/* One level lower than the library's own: its warnings become our info, and so on. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	enum log_level lvl;

	switch (level) {
	case LIBBPF_WARN:
		lvl = LOG_LVL_INFO;
		break;
	default:
		lvl = LOG_LVL_DEBUG;
		break;
	}
	if (lvl <= cur_level)
		vlog(lvl, fmt, ap);
	return 0;
}

static int libxdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	return libbpf_print(level == LIBXDP_WARN ? LIBBPF_WARN : LIBBPF_DEBUG, fmt, ap);
}

void log_hook_libbpf(void)
{
	libbpf_set_print(libbpf_print);
	libxdp_set_print(libxdp_print);
}
