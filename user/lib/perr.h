/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A bounded list of a file's problems for an error buffer: `name:line: reason` lines, whole
 * lines or nothing, the first SL_PERR_MAX, then a count. The ASN table loader and the ASN
 * importers report through it.
 */
#ifndef SLUICE_PERR_H
#define SLUICE_PERR_H

#include <stdbool.h>
#include <stddef.h>

#define SL_PERR_MAX 10

struct sl_perr {
	char *buf;
	size_t len, used;
	int count; /* every problem, reported or not */
};

/* @append: after what @buf already holds (several sources sharing one buffer); else from
 * its start (@buf is written only when there is a problem). */
void sl_perr_init(struct sl_perr *e, char *buf, size_t len, bool append);
/* One problem at @name:@line (@line 0: at @name alone). */
__attribute__((format(printf, 4, 5)))
void sl_perr_add(struct sl_perr *e, const char *name, size_t line, const char *fmt, ...);
/* "@name: ... and N more problems" when some were left out. */
void sl_perr_finish(struct sl_perr *e, const char *name);

/* @s without leading and trailing white space (trailing cut in place). */
char *sl_trim(char *s);

#endif
