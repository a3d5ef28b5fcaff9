// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The outcome queue (evq.h): a single-producer, single-consumer ring of fixed slots.
 *
 * head and tail are free-running 64-bit counts (they would take centuries to wrap, and the
 * unsigned differences stay right even then); a slot index is the count masked by the
 * capacity. Only the producer writes tail, only the consumer writes head, and each keeps the
 * last value it saw of the other's so it reads the other's cache line only when its own view
 * says the ring is full (producer) or drained (consumer).
 *
 * Ordering: the producer fills a slot and then publishes tail with a release store; the
 * consumer loads tail with acquire before reading slots, so it sees them filled. Symmetrically
 * the consumer copies slots out before a release store of head, and the producer loads head
 * with acquire before it reuses them.
 *
 * The wake is a Dekker handshake on two variables, so it needs sequential consistency, not
 * acquire/release (either side's store could otherwise sit in a store buffer while it loads):
 *   consumer, finding the ring empty:   armed = 1;  then load tail, sleep only if unchanged
 *   producer, after filling a slot:      store tail; then load armed, signal if set
 * Whatever the interleaving, either the consumer sees the new tail or the producer sees the
 * flag. The producer's tail store is the seq_cst one (xchg on x86, stlr on arm64) so the
 * common path pays no separate fence.
 */
#include "evq.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* 128, not 64: x86's spatial prefetcher pulls lines in pairs, and arm64's big cores have
 * 128-byte lines. Two hot fields closer than this still share a transfer. */
#ifndef EVQ_CACHELINE
#define EVQ_CACHELINE 128
#endif

struct evq {
	/* The producer's line: written on every push, read by the consumer when it runs dry. */
	_Alignas(EVQ_CACHELINE) _Atomic uint64_t tail;
	uint64_t head_seen;        /* producer's last view of head */
	_Atomic uint64_t dropped;  /* single writer: a plain add, see evq_push() */
	_Atomic uint64_t wakes;

	/* The consumer's line. */
	_Alignas(EVQ_CACHELINE) _Atomic uint64_t head;
	uint64_t tail_seen;        /* consumer's last view of tail */

	/* Read by every push, written only around a sleep: kept off both lines above so a busy
	 * consumer's head updates do not evict it from the producer's cache. */
	_Alignas(EVQ_CACHELINE) _Atomic uint32_t armed;

	/* Set at creation, read-only after: shared clean by both caches. */
	_Alignas(EVQ_CACHELINE) struct sl_outcome_event *slots;
	uint64_t mask;
	int efd;
};

int evq_new(uint32_t capacity, struct evq **qp)
{
	struct evq *q;
	void *mem;
	int err;

	*qp = NULL;
	if (capacity == 0 || capacity > EVQ_MAX_CAPACITY || (capacity & (capacity - 1)))
		return -EINVAL;

	err = posix_memalign(&mem, EVQ_CACHELINE, sizeof(*q));
	if (err)
		return -err;
	q = mem;
	memset(q, 0, sizeof(*q));
	q->mask = capacity - 1;
	/* Empty and nobody has looked yet: the consumer may go straight to poll(). */
	atomic_init(&q->armed, 1);

	err = posix_memalign(&mem, EVQ_CACHELINE, (size_t)capacity * sizeof(*q->slots));
	if (err) {
		free(q);
		return -err;
	}
	q->slots = mem;

	q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->efd < 0) {
		err = -errno;
		free(q->slots);
		free(q);
		return err;
	}
	*qp = q;
	return 0;
}

void evq_free(struct evq *q)
{
	if (!q)
		return;
	close(q->efd);
	free(q->slots);
	free(q);
}

uint32_t evq_capacity(const struct evq *q)
{
	return (uint32_t)(q->mask + 1);
}

int evq_fd(const struct evq *q)
{
	return q->efd;
}

/* A non-blocking eventfd write fails only when its counter would pass 2^64 - 2: one signal
 * per consumer sleep, and a consumer that never drains would need centuries to get there. */
static void evq_signal(struct evq *q)
{
	uint64_t one = 1;
	ssize_t r;

	do
		r = write(q->efd, &one, sizeof(one));
	while (r < 0 && errno == EINTR);
}

bool evq_push(struct evq *q, const struct sl_outcome_event *ev)
{
	uint64_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);

	if (t - q->head_seen > q->mask) {
		q->head_seen = atomic_load_explicit(&q->head, memory_order_acquire);
		if (t - q->head_seen > q->mask) {
			/* Only this thread writes the counter, so load + store is exact and skips
			 * the locked add; readers on other threads see whole values either way. */
			atomic_store_explicit(&q->dropped,
					      atomic_load_explicit(&q->dropped,
								   memory_order_relaxed) + 1,
					      memory_order_relaxed);
			return false;
		}
	}

	q->slots[t & q->mask] = *ev;
	atomic_store_explicit(&q->tail, t + 1, memory_order_seq_cst);

	if (atomic_load_explicit(&q->armed, memory_order_seq_cst)) {
		/* Only the consumer sets the flag and only this thread clears it. If this store
		 * overwrites a fresh arm, the write below still leaves the fd readable for it. */
		atomic_store_explicit(&q->armed, 0, memory_order_relaxed);
		atomic_store_explicit(&q->wakes,
				      atomic_load_explicit(&q->wakes, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		evq_signal(q);
	}
	return true;
}

size_t evq_pop_batch(struct evq *q, struct sl_outcome_event *out, size_t n)
{
	uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
	uint64_t avail = q->tail_seen - h;
	size_t k, idx, first;

	if (avail < n) {
		q->tail_seen = atomic_load_explicit(&q->tail, memory_order_acquire);
		avail = q->tail_seen - h;
		if (avail == 0 && n > 0) {
			/* About to report empty, so about to sleep: arm, then look once more. */
			atomic_store_explicit(&q->armed, 1, memory_order_seq_cst);
			q->tail_seen = atomic_load_explicit(&q->tail, memory_order_seq_cst);
			avail = q->tail_seen - h;
			if (avail == 0)
				return 0;
			/* It filled meanwhile and we stay awake: save the producer a write(2)
			 * unless it has already seen the flag (then the fd wakes us once, idly). */
			atomic_store_explicit(&q->armed, 0, memory_order_relaxed);
		}
	}

	k = avail < n ? (size_t)avail : n;
	idx = (size_t)(h & q->mask);
	first = q->mask + 1 - idx;
	if (first > k)
		first = k;
	memcpy(out, &q->slots[idx], first * sizeof(*out));
	memcpy(out + first, q->slots, (k - first) * sizeof(*out));
	atomic_store_explicit(&q->head, h + k, memory_order_release);
	return k;
}

int evq_drain_fd(struct evq *q)
{
	uint64_t v;
	ssize_t r;

	do
		r = read(q->efd, &v, sizeof(v));
	while (r < 0 && errno == EINTR);
	if (r == (ssize_t)sizeof(v))
		return 1;
	if (r < 0 && errno == EAGAIN)
		return 0;
	return r < 0 ? -errno : -EIO;
}

void evq_stats(const struct evq *q, uint64_t *pushed, uint64_t *dropped, uint64_t *depth)
{
	/* head first: tail only grows, so tail - head read in this order is never negative. */
	uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);
	uint64_t t = atomic_load_explicit(&q->tail, memory_order_acquire);

	if (pushed)
		*pushed = t;
	if (dropped)
		*dropped = atomic_load_explicit(&q->dropped, memory_order_relaxed);
	if (depth)
		*depth = t - h > q->mask + 1 ? q->mask + 1 : t - h;
}

uint64_t evq_wakes(const struct evq *q)
{
	return atomic_load_explicit(&q->wakes, memory_order_relaxed);
}
