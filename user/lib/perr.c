// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* A file's problems as bounded lines: see perr.h. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "perr.h"

void sl_perr_init(struct sl_perr *e, char *buf, size_t len, bool append)
{
	e->buf = buf;
	e->len = len;
	e->used = append && buf && len ? strlen(buf) : 0;
	e->count = 0;
	if (len && e->used >= len)
		e->used = len - 1;
}

void sl_perr_add(struct sl_perr *e, const char *name, size_t line, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	int n;

	e->count++;
	if (e->count > SL_PERR_MAX || !e->buf || e->used + 1 >= e->len)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Whole lines or nothing: a reason cut off mid-way is worse than a shorter list. */
	if (line)
		n = snprintf(e->buf + e->used, e->len - e->used, "%s:%zu: %s\n", name, line, msg);
	else
		n = snprintf(e->buf + e->used, e->len - e->used, "%s: %s\n", name, msg);
	if (n > 0 && (size_t)n < e->len - e->used)
		e->used += (size_t)n;
	else
		e->buf[e->used] = '\0';
}

void sl_perr_finish(struct sl_perr *e, const char *name)
{
	int n;

	if (e->count <= SL_PERR_MAX || !e->buf || e->used + 1 >= e->len)
		return;
	n = snprintf(e->buf + e->used, e->len - e->used, "%s: ... and %d more problems\n", name,
		     e->count - SL_PERR_MAX);
	if (n > 0 && (size_t)n < e->len - e->used)
		e->used += (size_t)n;
}

char *sl_trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}
