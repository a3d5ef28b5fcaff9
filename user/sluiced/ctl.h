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
/* One connection's request: the handle for an answer given later. */
struct ctl_req;

/* Handle @line (no newline): append the answer to @out, or call ctl_defer(@req) and answer
 * later, from the loop, with ctl_answer(). */
typedef void (*ctl_handler_fn)(void *arg, const char *line, struct evbuffer *out,
			       struct ctl_req *req);

/* From the handler: the answer is not ready (work off the loop). The connection stays open,
 * with no timeout, until ctl_answer(); @req stays valid until then or ctl_close(). */
void ctl_defer(struct ctl_req *req);
/* A deferred request's answer ("ok ..." or "error ...", newline-terminated): sent, then the
 * connection closes and @req is gone. */
__attribute__((format(printf, 2, 3)))
void ctl_answer(struct ctl_req *req, const char *fmt, ...);

/*
 * From the handler: keep the connection open as a stream (`events`): no timeouts, what is
 * added to ctl_stream_out() goes out as fast as the peer reads it, and what the peer sends
 * is discarded. @gone runs once, when the peer goes away (EOF, an error) or at ctl_close();
 * @req is freed right after it. @drained runs each time the queued output falls to @low
 * bytes or fewer. Whoever holds the stream bounds what it queues (ctl_stream_queued()).
 */
typedef void (*ctl_stream_fn)(void *arg);
void ctl_stream(struct ctl_req *req, ctl_stream_fn gone, ctl_stream_fn drained, void *arg,
		size_t low);
struct evbuffer *ctl_stream_out(struct ctl_req *req);
/* Bytes queued for the peer and not yet taken by its socket. */
size_t ctl_stream_queued(struct ctl_req *req);
/* Close a stream now, sending what the socket takes without waiting; @gone does not run. */
void ctl_stream_end(struct ctl_req *req);

/* Listen on @path, refusing to start if another daemon answers there. NULL with errno set. */
struct ctl_server *ctl_listen(struct event_base *base, const char *path, ctl_handler_fn fn,
			      void *arg);
/* Close the socket and every connection, writing out what answers are ready (without waiting:
 * the loop has stopped). */
void ctl_close(struct ctl_server *s);

#endif
