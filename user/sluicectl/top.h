/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * `sluicectl top`: a live view of one node, refreshed every interval. On a terminal it
 * redraws in place (ANSI escapes, termios raw mode, the alternate screen) until q, Ctrl-C or
 * SIGTERM; otherwise it prints plain-text frames, or a JSON snapshot with --json. A frame
 * is laid out for the terminal's size (COLUMNS and LINES override it, and size plain frames,
 * which otherwise have no limit): what matters most stays, whole columns of the rest go.
 */
#ifndef SLUICECTL_TOP_H
#define SLUICECTL_TOP_H

#include <stdbool.h>

struct top_opts {
	const char *config;   /* for daemon.metrics_listen (goodput) */
	const char *socket;   /* sluiced's control socket */
	const char *pin_path; /* the edge's pinned maps */
	double interval;      /* seconds between frames; <= 0: 1 */
	long count;           /* frames to print, 0: until stopped */
	bool once;            /* one frame, then exit (count = 1) */
	bool json;            /* one JSON document per frame, no terminal handling */
};

/* Run it. Returns the process exit status: 0 on q / Ctrl-C / SIGTERM / count reached, 1 when
 * the daemon cannot be reached or is lost. */
int sluicectl_top(const struct top_opts *o);

#endif
