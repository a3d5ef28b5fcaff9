/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The outcome queue: a bounded, lock-free ring carrying one event per login outcome from the
 * gateway's loop (the only producer) to the stream job's thread (the only consumer).
 *
 * The producer never blocks and never allocates: an event that finds the ring full is dropped
 * (the newest goes, what is queued stays) and counted. The consumer sleeps on an eventfd when
 * the ring is empty. Waking it costs the producer a write(2), so the producer signals only the
 * first event after the consumer has said it is about to sleep, which it says by finding the
 * ring empty in evq_pop_batch(). While the consumer is busy no system call happens at all.
 * At a trickle every event can find it asleep, and a write(2) that wakes a thread is the one
 * dear thing a push can do (microseconds where a push is nanoseconds: bench/evq.c). The
 * consumer decides how often that happens: one that lingers a little after each wake before
 * popping (a millisecond, say) is woken once per batch, and the producer needs no timer.
 * The handshake costs every push one store-load fence (an xchg on x86, a stlr/ldar pair on
 * arm64), the same price io_uring's SQPOLL submitters pay to read IORING_SQ_NEED_WAKEUP after
 * moving the tail.
 *
 * Threads: evq_push() from one thread at a time, evq_pop_batch() and evq_drain_fd() from one
 * (other) thread at a time, evq_stats() and evq_wakes() from anywhere.
 *
 * The consumer's loop, with poll(2) or a libevent EV_READ|EV_PERSIST event on evq_fd():
 *
 *	for (;;) {
 *		poll(evq_fd(q));              wait until readable
 *		evq_drain_fd(q);              before popping, never after
 *		while ((n = evq_pop_batch(q, buf, N)) > 0)
 *			handle(buf, n);
 *	}
 *
 * Only a pop that returns 0 arms the wake: a consumer that stops popping before that (to
 * bound its work per callback, say) must come back on its own, the fd will not call it.
 */
#ifndef SLUICE_EVQ_H
#define SLUICE_EVQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Larger rings are a configuration mistake: 2^24 slots is 1.2 GB. */
#ifndef EVQ_MAX_CAPACITY
#define EVQ_MAX_CAPACITY (1u << 24)
#endif

/* One login outcome, as the stream job sees it. Identifiers are keyed hashes, never names.
 * Fixed layout, no implicit padding: the slots are copied whole. */
struct sl_outcome_event {
	uint64_t ts_ns;       /* CLOCK_MONOTONIC */
	uint8_t account[16];  /* keyed hash of (tenant, account); all zero when unknown-account */
	uint8_t password[16]; /* keyed hash of the password tried, failures only; zero otherwise */
	uint8_t family;       /* 4 or 6 */
	uint8_t plen;         /* source prefix length */
	uint8_t success;      /* 1 success, 0 failure */
	uint8_t known;        /* 1 when the account exists */
	uint8_t prefix[16];   /* source address masked to plen (IPv4 in the first 4 bytes) */
	uint32_t asn;         /* 0 when unknown */
	uint16_t tenant;      /* tenant index in the config */
	uint8_t class_id;     /* ASN class, 255 when unknown */
	uint8_t unchecked;    /* 1: refused before any password was checked (a throttled login,
			       * a step-up): counted for its source, never as a guess at the
			       * account or with the password */
	uint8_t key[4];       /* keyed hash of the source's key prefix (counters.prefix_v4/v6);
			       * all zero: not given */
};

_Static_assert(sizeof(struct sl_outcome_event) == 72, "sl_outcome_event: 72 bytes, no holes");
_Static_assert(sizeof(struct sl_outcome_event) % 8 == 0, "sl_outcome_event: a multiple of 8");

struct evq;

/* A ring of @capacity slots (a power of two, 1 to EVQ_MAX_CAPACITY) and its eventfd.
 * Returns 0 and the queue in @qp, -EINVAL for a bad capacity, or -errno of the failing
 * allocation or eventfd(2). A fresh queue counts as armed: its first event signals the fd. */
int evq_new(uint32_t capacity, struct evq **qp);
/* Closes the fd. NULL is fine. */
void evq_free(struct evq *q);

uint32_t evq_capacity(const struct evq *q);

/* Producer. Copies @ev into the ring, or drops it when the ring is full: false, counted. */
bool evq_push(struct evq *q, const struct sl_outcome_event *ev);

/* Consumer. Moves up to @n of the oldest events into @out, in push order; returns how many.
 * A return of 0 (with @n > 0) means the ring was empty and the wake is armed: the next push
 * makes evq_fd() readable. */
size_t evq_pop_batch(struct evq *q, struct sl_outcome_event *out, size_t n);

/* The eventfd (non-blocking, close-on-exec) the consumer polls for reading. */
int evq_fd(const struct evq *q);
/* Consumer: clear the fd's readiness. 1 if it was signalled, 0 if not, -errno on failure. */
int evq_drain_fd(struct evq *q);

/* Any thread, any pointer may be NULL. @pushed counts accepted events, @dropped refused
 * ones (so pushed + dropped is every call to evq_push), @depth the events queued now. Each
 * figure is exact on its own; taken together while both threads run they are a moment apart. */
void evq_stats(const struct evq *q, uint64_t *pushed, uint64_t *dropped, uint64_t *depth);
/* Any thread: how many times the producer has signalled the fd. */
uint64_t evq_wakes(const struct evq *q);

#endif
