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

/* What the daemon itself knows: its build, its node, its reloads. */
struct metrics_daemon {
	const char *version;          /* SLUICE_VERSION */
	const char *node;             /* cluster.node */
	uint64_t started_unix;
	uint64_t reloads_ok, reloads_failed;
	uint64_t last_ok_unix;        /* the last reload that applied (start until one does) */
	uint64_t last_failed_unix;    /* 0: none failed */
	bool last_ok;                 /* the last reload (or the start) applied */
	uint32_t generation;          /* the edge's config generation, 0 without an edge */
};
/* sluice_build_info, sluice_node_info, sluice_start_time_seconds, sluice_config_*. */
void metrics_daemon(struct evbuffer *out, const struct metrics_daemon *d);

/*
 * Occupancy of the datapath's tables (sluice_bpf_table_entries / _capacity) without walking
 * their keys: the kernel's own element counts of hash maps, read through a BPF iterator over
 * maps (bpf/occupancy.bpf.c), sl_vcount for the verdict trie, and a bounded sample of the
 * bucket sets. Open once at start. Where the kernel lacks the iterator or the kfunc, @why
 * says so and the hash tables' entries are left out (capacities, buckets and verdicts stay);
 * NULL only out of memory.
 */
struct metrics_tables;
struct metrics_tables *metrics_tables_open(char *why, size_t whylen);
void metrics_tables_close(struct metrics_tables *t);
/* @t may be NULL (see above). */
void metrics_tables(struct evbuffer *out, struct metrics_tables *t, const struct sl_maps *maps);

#endif
