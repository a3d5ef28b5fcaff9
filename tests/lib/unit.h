/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Helpers shared by the cmocka unit tests. */
#ifndef SLUICE_TEST_UNIT_H
#define SLUICE_TEST_UNIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* Write @text to a fresh temporary file named after @tag; returns its path (static). */
static inline const char *tmpfile_with(const char *tag, const char *text)
{
	static char path[256];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/sluice-unit-%s-XXXXXX", tag);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* Assert that @hay contains @needle, printing both when it does not. */
#define assert_contains(hay, needle)                                                        \
	do {                                                                                \
		const char *h_ = (hay), *n_ = (needle);                                     \
		if (!strstr(h_, n_))                                                        \
			fail_msg("expected to find \"%s\" in:\n%s", n_, h_);                 \
	} while (0)

#endif
