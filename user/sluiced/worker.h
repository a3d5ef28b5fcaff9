/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * One thread for sluiced's heavy control work: parsing a config or an ASN table of hundreds
 * of thousands of rows and building the table into the maps' idle slot take seconds, and
 * the event loop they used to run on also runs the gateway, the control socket, the lease
 * controller and the counter store's timers. One job at a time: its run() on the thread,
 * then its done() back on the loop, where results are applied. What queues and coalesces
 * jobs is the caller's (main.c).
 */
#ifndef SLUICED_WORKER_H
#define SLUICED_WORKER_H

#include <stdbool.h>

#include <event2/event.h>

struct worker;
typedef void (*worker_fn)(void *arg);

/* Start the thread (it takes none of the daemon's signals). NULL with errno set. */
struct worker *worker_new(struct event_base *base);
/* Run @run(@arg) on the thread, then @done(@arg) on the loop. -EBUSY while a job is out
 * (posted, and its done() not yet called); done() may post the next. */
int worker_post(struct worker *w, worker_fn run, worker_fn done, void *arg);
bool worker_busy(const struct worker *w);
/* Wait for the job on the thread to end, stop the thread, free @w. Returns the arg of a job
 * whose done() was never called (the caller cleans it up), or NULL. */
void *worker_free(struct worker *w);

#endif
