/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * One logging layer for sluiced, sluicectl and the tests. Messages go to stderr, or to syslog
 * once the daemon has detached; libbpf's own output is routed here one level lower, so its
 * warnings (often about probes that are expected to fail) stay out of a normal log.
 * One record is one line: "2026-12-01T22:30:00.123Z warn  message" (ISO 8601, UTC, ms), a
 * message's own line breaks folded into " | " so a multi-line error stays one record; or,
 * with log_set_json(true) (daemon.log_format = "json", sluiced --log-format json), one
 * JSON object per line: {"time":..,"level":..,"msg":..}.
 */
#ifndef SLUICE_LOG_H
#define SLUICE_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_level {
	LOG_LVL_ERROR = 0,
	LOG_LVL_WARN,
	LOG_LVL_INFO,
	LOG_LVL_DEBUG,
};

void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
void log_use_syslog(const char *ident);
void log_set_json(bool on);
bool log_get_json(void);
/* Render one stderr record of @msg at @lvl, stamped @unix_ms, into @buf (no newline); for
 * the tests. Returns the length written. */
size_t log_format(char *buf, size_t n, enum log_level lvl, const char *msg, uint64_t unix_ms,
		  bool json);
/* Route libbpf's and libxdp's print callbacks through this layer. */
void log_hook_libbpf(void);

void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
