/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * /metrics on the admin listener (daemon.metrics_listen): Prometheus text exposition format,
 * rendered on each scrape from the maps and the daemon's own counters. Nothing is sampled in
 * between: a scrape reads what the datapath and the store have counted.
 */
#ifndef SLUICED_METRICS_H
#define SLUICED_METRICS_H

#include <event2/buffer.h>
#include <event2/event.h>

#include "config.h"
#include "maps.h"
#include "store.h"

struct metrics_server;

/* Append the whole exposition to @out. */
typedef void (*metrics_render_fn)(void *arg, struct evbuffer *out);

/* Listen on "ADDR:PORT" / "[ADDR6]:PORT". NULL with the reason in @err. */
struct metrics_server *metrics_listen(struct event_base *base, const char *listen,
				      metrics_render_fn fn, void *arg, char *err, size_t errlen);
void metrics_close(struct metrics_server *m);

/* The pieces, for the render function. */
void metrics_edge(struct evbuffer *out, const struct sl_maps *maps, const struct sl_config *c);
void metrics_leases(struct evbuffer *out, const struct sl_maps *maps, const struct sl_config *c);
void metrics_store(struct evbuffer *out, const struct sl_store *s, const struct sl_config *c);

#endif
