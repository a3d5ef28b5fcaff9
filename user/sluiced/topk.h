/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The top shed prefixes, for `sluicectl top`: a small, bounded table of the prefixes the edge
 * sheds most right now, fed by the sampled shed events the datapath already puts on its ring
 * buffer (sl_events). Answers the control command `topshed [json] [N]`.
 *
 * The event hub (evhub.h) reads the ring and hands every event to topk_feed(); the table
 * counts them only on demand: the first `topshed` starts the watch, and it stops
 * TOPK_LINGER_S seconds after the last one (the table is emptied then). Readers of
 * `sluicectl events` get every event whether or not a watch runs.
 *
 * The table: TOPK_SETS sets of TOPK_WAYS slots, keyed by (prefix, class, reason) through a
 * seeded hash. A key that misses takes a free way of its set or evicts the way with the
 * fewest events in the last TOPK_WIN_S seconds, so a heavy hitter is never pushed out by a
 * spray of one-off keys (they only evict each other). Per event: one hash, TOPK_WAYS
 * compares, at most TOPK_WIN_S counter resets: O(1). Memory: a fixed array. Counts are of
 * sampled events (1 in edge.event_sample); the report scales them back.
 */
#ifndef SLUICED_TOPK_H
#define SLUICED_TOPK_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "maps.h"

#ifndef TOPK_SETS
#define TOPK_SETS 256
#endif
#ifndef TOPK_WAYS
#define TOPK_WAYS 4
#endif
#ifndef TOPK_WIN_S
#define TOPK_WIN_S 10
#endif
#ifndef TOPK_LINGER_S
#define TOPK_LINGER_S 30
#endif
#define TOPK_REPORT_MAX 100

_Static_assert((TOPK_SETS & (TOPK_SETS - 1)) == 0, "TOPK_SETS must be a power of two");
_Static_assert(TOPK_WAYS >= 1 && TOPK_WAYS <= 16, "TOPK_WAYS: 1..16");

struct topk;

/* A table for @maps' classes on @base (nothing is counted until the first report). */
struct topk *topk_new(struct event_base *base, const struct sl_maps *maps);
void topk_free(struct topk *t);
/* The event hub's tap: one event off the ring. */
void topk_feed(void *arg, const struct sl_event *e);

/*
 * `topshed [json] [N]`: the @n (<= TOPK_REPORT_MAX) prefixes with the most sheds in the last
 * TOPK_WIN_S seconds, each with its class, reason, last action and port, sheds in the last
 * second and the window (scaled by @sample), and a cumulative count since it entered the
 * table (for rates from deltas). Starts the watch if it was idle. Drain the hub first. Appends "ok ..." to @out.
 */
void topk_report(struct topk *t, struct evbuffer *out, bool json, int n, uint32_t sample);

/* The table alone, for tests (topk_new(NULL, NULL) reads no ring): count one event at
 * @now_ns; report as of @now_ns, without touching the ring. */
void topk_add(struct topk *t, const struct sl_event *e, uint64_t now_ns);
void topk_report_at(struct topk *t, struct evbuffer *out, bool json, int n, uint32_t sample,
		    uint64_t now_ns);

#endif
