/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The control socket: a Unix stream socket (root only) taking one command line per
 * connection and answering with "ok <text>" or "error <text>" (more lines may follow), then
 * closing. sluicectl is its client; the protocol is documented in docs/operations.md.
 */
#ifndef SLUICED_CTL_H
#define SLUICED_CTL_H

#include <event2/buffer.h>
#include <event2/event.h>

struct ctl_server;

/* Handle @line (no newline); append the answer to @out. */
typedef void (*ctl_handler_fn)(void *arg, const char *line, struct evbuffer *out);

/* Listen on @path, refusing to start if another daemon answers there. NULL with errno set. */
struct ctl_server *ctl_listen(struct event_base *base, const char *path, ctl_handler_fn fn,
			      void *arg);
void ctl_close(struct ctl_server *s);

#endif
