/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * HyperLogLog in this process: how many distinct things (accounts per source prefix, source
 * prefixes per account) the stream job has seen, in a few KiB whatever the count, and over a
 * sliding window. The design and its error are in docs/design.md, "Counting across keys".
 *
 * Registers follow Redis's PFADD exactly, so a 64-bit hash sets the same register to the same
 * value here and there: p = 14 (16384 registers), the register is the hash's low 14 bits, its
 * value the position of the lowest set bit among the other 50 (1..51). The dense registers are
 * packed 6 bits each in Redis's dense layout (12288 bytes). Counting uses Ertl's improved
 * estimator, as Redis does since 5.0: a standard error of 1.04 / sqrt(16384) = 0.81 %, with no
 * switch-over bump between linear counting and the raw estimate.
 *
 * A new HLL is sparse: a sorted array of the distinct 64-bit hashes added, so small sets (most
 * of them: an account's handful of prefixes) are counted exactly and cost 8 bytes a member.
 * Past HLL_SPARSE_MAX members it turns dense for good.
 *
 * Callers pass hashes they computed (keyed BLAKE2b elsewhere in sluice); hll_add() hashes raw
 * bytes with SipHash-2-4 under a fixed key for everything else. Nothing here reads a clock or
 * holds global state: an instance belongs to one thread at a time.
 */
#ifndef SLUICE_HLL_H
#define SLUICE_HLL_H

#include <stddef.h>
#include <stdint.h>

#define HLL_P 14
#define HLL_REGISTERS (1u << HLL_P)
#define HLL_Q (64 - HLL_P)                        /* hash bits left for the rank */
#define HLL_DENSE_BYTES (HLL_REGISTERS * 6 / 8)   /* 12288 */

/* Distinct hashes kept exactly before going dense: 8 bytes each, so the largest sparse HLL
 * holds a sixth of a dense one's bytes. Build-time overridable. */
#ifndef HLL_SPARSE_MAX
#define HLL_SPARSE_MAX 256
#endif

/* Buckets a window may have; sizes the bounded loops. */
#ifndef HLL_WINDOW_MAX_BUCKETS
#define HLL_WINDOW_MAX_BUCKETS 64
#endif

/* All zeroes is an empty HLL (HLL_INIT, memset, calloc): nothing is allocated before the
 * first add. */
struct hll {
	void *mem;     /* NULL, the sorted hashes (sparse) or the packed registers (dense) */
	uint32_t n;    /* sparse: hashes held */
	uint16_t cap;  /* sparse: room in mem, in hashes */
	uint8_t dense;
};

#define HLL_INIT ((struct hll){ 0 })

/* Frees what @h holds and leaves it empty (and usable). */
void hll_reset(struct hll *h);
/* The same: an HLL has nothing else to free. */
static inline void hll_free(struct hll *h) { hll_reset(h); }

/* Adds one member by its 64-bit hash. Returns 1 if the HLL changed (a new sparse member or a
 * raised register), 0 if not, -ENOMEM if growing failed (the HLL is as it was). */
int hll_add_hash(struct hll *h, uint64_t hash);
/* Hashes @len bytes with SipHash-2-4 under sluice's fixed HLL key, then hll_add_hash(). */
int hll_add(struct hll *h, const void *data, size_t len);
/* The hash hll_add() uses; the key never changes, so saved and merged HLLs stay comparable. */
uint64_t hll_hash(const void *data, size_t len);

/* Exact while sparse, Ertl's estimate once dense. */
uint64_t hll_count(const struct hll *h);

/* @dst becomes the union of @dst and @src (register-wise max). 0 or -ENOMEM (@dst may then
 * hold part of @src: counts never go down, but recount after a failure). */
int hll_merge(struct hll *dst, const struct hll *src);

/* Register @i (0..16383) as Redis would hold it after the same hashes: 0 to 51. */
uint8_t hll_register(const struct hll *h, uint32_t i);

/* Bytes this HLL costs: sizeof(struct hll) plus its array (malloc's own overhead aside). */
size_t hll_bytes(const struct hll *h);
static inline int hll_is_dense(const struct hll *h) { return h->dense; }

/*
 * A sliding window: K buckets of span = window / K nanoseconds each, bucket e holding what
 * was added during [e * span, (e + 1) * span). A count at @now covers the bucket @now falls
 * in and the K - 1 before it, so a member added at t is counted while
 * floor(now / span) - floor(t / span) < K: for at least window * (K - 1) / K and at most
 * window. Nothing older is counted, and buckets that fall out are freed on the next add or
 * advance.
 *
 * Time is the caller's (any monotonic nanoseconds). Adds arriving late by less than the
 * window go to the bucket of their own time; older ones are dropped, as they would have
 * expired by now. A @now before the newest add counts as of the newest add.
 */
struct hll_window {
	struct hll *b;    /* k buckets; bucket e lives in b[e % k] */
	uint64_t span;    /* ns per bucket */
	uint64_t head;    /* the newest bucket written or advanced to */
	uint32_t k;
};

/* @window_ns / @k must be at least 1 ns, @k in 1..HLL_WINDOW_MAX_BUCKETS; the window in force
 * is k * (window_ns / k). 0, -EINVAL or -ENOMEM. */
int hll_window_init(struct hll_window *w, uint64_t window_ns, uint32_t k);
void hll_window_free(struct hll_window *w);
/* Empties every bucket; the window keeps its shape. */
void hll_window_reset(struct hll_window *w);
/* Expires (and frees) the buckets that have left the window at @now_ns. */
void hll_window_advance(struct hll_window *w, uint64_t now_ns);
/* Advances to @now_ns and adds @hash to its bucket. As hll_add_hash(), and -EINVAL on a
 * window that was never initialised or has been freed. */
int hll_window_add(struct hll_window *w, uint64_t now_ns, uint64_t hash);
/* Distinct members in the live buckets at @now_ns: exact while the buckets are all sparse,
 * else the estimate of their union. Allocates nothing; uses 12 KiB of stack when dense. */
uint64_t hll_window_count(const struct hll_window *w, uint64_t now_ns);
/* Bytes the window costs, its buckets' arrays included. */
size_t hll_window_bytes(const struct hll_window *w);

#endif
