/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The edge's sampled events, fanned out (issue 17: `sluicectl events` lost half its events
 * whenever `sluicectl top` had run, both consuming the one ring). A BPF ring buffer has one
 * consumer position shared by everyone who maps it, so sluiced is its only reader: it drains
 * sl_events as it fills and hands every event to each of its readers:
 *   - `events [json] [backlog]` on the control socket: a stream of lines, one per event
 *     ("e " and the line sluicectl prints) with, when the reader fell behind, one
 *     "d " line saying how many of its events it lost;
 *   - the top shed prefixes table (topk), through evhub_set_tap().
 * Each stream reader has its own bounded queue (EVHUB_QUEUE_BYTES): one that reads slowly
 * or not at all loses its own events, counted and told once it drains, and never holds up
 * the loop or the other readers. A reader that goes away leaves nothing behind.
 * The last EVHUB_HISTORY events are kept for `events --backlog`.
 */
#ifndef SLUICED_EVHUB_H
#define SLUICED_EVHUB_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "ctl.h"
#include "maps.h"

#ifndef EVHUB_QUEUE_BYTES
#define EVHUB_QUEUE_BYTES (512u * 1024u)
#endif
#ifndef EVHUB_HISTORY
#define EVHUB_HISTORY 4096u
#endif
#ifndef EVHUB_MAX_READERS
#define EVHUB_MAX_READERS 32
#endif
_Static_assert((EVHUB_HISTORY & (EVHUB_HISTORY - 1)) == 0, "EVHUB_HISTORY: a power of two");

struct evhub;

struct evhub_stats {
	uint64_t events;    /* read off the ring since the start */
	uint64_t dropped;   /* events readers lost by falling behind, all readers together */
	uint32_t readers;   /* streams open now */
};

/* Start draining @maps' event ring on @base. NULL with errno set. */
struct evhub *evhub_new(struct event_base *base, const struct sl_maps *maps);
/* Ends every stream (what their sockets take now is sent). */
void evhub_free(struct evhub *h);
/* @fn sees every event as it is read (one, at most: the top shed prefixes table). */
void evhub_set_tap(struct evhub *h, void (*fn)(void *arg, const struct sl_event *e),
		   void *arg);
/* Read what the ring holds now (a report that wants to be current). */
void evhub_drain(struct evhub *h);
/* The control command `events [json] [backlog]` on @req: answers "ok ..." in @out and turns
 * the connection into a stream, or answers "error ...". */
void evhub_subscribe(struct evhub *h, const char *args, struct evbuffer *out,
		     struct ctl_req *req, uint32_t sample);
void evhub_get_stats(const struct evhub *h, struct evhub_stats *st);

#endif
