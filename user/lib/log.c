// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Logging: see log.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "audit.h"
#include "log.h"

#define LOG_MSG_MAX 4096

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

static bool as_json;

void log_set_json(bool on)
{
	as_json = on;
}

bool log_get_json(void)
{
	return as_json;
}

/* @msg with its line breaks folded: each run of CR/LF inside it becomes " | ", trailing
 * ones go, so one message is one record whatever it holds (a reload's list of problems). */
static void fold(char *msg)
{
	char tmp[LOG_MSG_MAX];
	size_t i, o = 0, n = strlen(msg);

	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	if (!strpbrk(msg, "\r\n"))
		return;
	for (i = 0; i < n && o + 4 < sizeof(tmp); i++) {
		if (msg[i] == '\n' || msg[i] == '\r') {
			while (i + 1 < n && (msg[i + 1] == '\n' || msg[i + 1] == '\r'))
				i++;
			memcpy(tmp + o, " | ", 3);
			o += 3;
		} else {
			tmp[o++] = msg[i];
		}
	}
	tmp[o] = '\0';
	snprintf(msg, LOG_MSG_MAX, "%s", tmp);
}

size_t log_format(char *buf, size_t n, enum log_level lvl, const char *msg, uint64_t unix_ms,
		  bool json)
{
	time_t secs = (time_t)(unix_ms / 1000);
	char stamp[40];
	struct tm tm;
	int k;

	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp + strlen(stamp), sizeof(stamp) - strlen(stamp), ".%03uZ",
		 (unsigned)(unix_ms % 1000));
	if (json) {
		char q[2 * LOG_MSG_MAX];

		if (sl_json_quote(q, sizeof(q), msg, LOG_MSG_MAX) < 0)
			snprintf(q, sizeof(q), "\"(unprintable)\"");
		k = snprintf(buf, n, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":%s}", stamp,
			     names[lvl], q);
	} else {
		k = snprintf(buf, n, "%s %-5s %s", stamp, names[lvl], msg);
	}
	if (k < 0)
		return 0;
	return (size_t)k < n ? (size_t)k : n - 1;
}

static void vlog(enum log_level lvl, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char buf[LOG_MSG_MAX], line[3 * LOG_MSG_MAX];
	struct timespec ts;
	size_t n;

	if (lvl > cur_level)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	fold(buf);
	if (to_syslog) {
		/* syslog stamps the record itself; JSON here would be inside its line. */
		syslog(prio[lvl], "%s", buf);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	n = log_format(line, sizeof(line) - 1, lvl, buf,
		       (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull, as_json);
	line[n++] = '\n';
	/* One write: records from the hash pool's and the stream job's threads never mix. */
	if (write(2, line, n) < 0)
		return;
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
