// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * HyperLogLog (see hll.h): a sorted array of hashes while small, Redis's packed dense
 * registers after, Ertl's estimator, and sliding windows made of K of them.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "hll.h"

_Static_assert(HLL_REGISTERS % 4 == 0, "registers are packed four to three bytes");
_Static_assert(HLL_DENSE_BYTES == HLL_REGISTERS / 4 * 3, "6-bit registers");
_Static_assert(HLL_Q + 1 < 64, "a register value fits 6 bits");
_Static_assert(HLL_SPARSE_MAX >= 4 && HLL_SPARSE_MAX <= UINT16_MAX, "sparse capacity is a u16");
_Static_assert(HLL_SPARSE_MAX * sizeof(uint64_t) < HLL_DENSE_BYTES,
	       "a full sparse HLL must cost less than a dense one");
_Static_assert(crypto_shorthash_BYTES == 8 && crypto_shorthash_KEYBYTES == 16, "SipHash-2-4");

#define ALPHA_INF 0.721347520444481703680 /* 0.5 / ln 2 */
/* Ertl's series converge to a double in about 20 terms for any register histogram of
 * 16384 registers; the cap only makes the bound explicit. */
#define SERIES_MAX 128
#define SPARSE_MIN_CAP 4

/* Changing it changes every hll_add() hash: saved HLLs would stop merging with new ones. */
static const uint8_t hll_key[crypto_shorthash_KEYBYTES] = {
	0x73, 0x6c, 0x75, 0x69, 0x63, 0x65, 0x2d, 0x68, /* "sluice-hll-key-1" */
	0x6c, 0x6c, 0x2d, 0x6b, 0x65, 0x79, 0x2d, 0x31,
};

static inline uint32_t reg_index(uint64_t hash)
{
	return (uint32_t)(hash & (HLL_REGISTERS - 1));
}

/* Redis's count: 1 + the zeroes below the lowest set bit of the 50 high bits; a forced bit
 * 50 caps it at 51 when they are all zero. */
static inline uint8_t reg_rank(uint64_t hash)
{
	return (uint8_t)(__builtin_ctzll((hash >> HLL_P) | (1ull << HLL_Q)) + 1);
}

/* ---- dense: 6-bit registers, least significant bit first (Redis's layout), so every
 * 4 registers are exactly 3 bytes and are read and written as one 24-bit word. ---- */

static inline uint32_t group_load(const uint8_t *g)
{
	return (uint32_t)g[0] | (uint32_t)g[1] << 8 | (uint32_t)g[2] << 16;
}

static inline void group_store(uint8_t *g, uint32_t v)
{
	g[0] = (uint8_t)v;
	g[1] = (uint8_t)(v >> 8);
	g[2] = (uint8_t)(v >> 16);
}

static inline uint8_t dense_get(const uint8_t *r, uint32_t i)
{
	return (uint8_t)(group_load(r + (i >> 2) * 3) >> ((i & 3) * 6) & 63);
}

static int dense_add(uint8_t *r, uint64_t hash)
{
	uint32_t i = reg_index(hash), shift = (i & 3) * 6, v;
	uint8_t *g = r + (i >> 2) * 3, rank = reg_rank(hash);

	v = group_load(g);
	if (rank <= (v >> shift & 63))
		return 0;
	group_store(g, (v & ~(63u << shift)) | (uint32_t)rank << shift);
	return 1;
}

/* @dst = max(@dst, @src) register by register. */
static void dense_max(uint8_t *dst, const uint8_t *src)
{
	uint32_t g;

	for (g = 0; g < HLL_DENSE_BYTES; g += 3) {
		uint32_t a = group_load(dst + g), b = group_load(src + g), out = 0, s;

		if (!b)
			continue;
		for (s = 0; s < 24; s += 6) {
			uint32_t x = a >> s & 63, y = b >> s & 63;

			out |= (x > y ? x : y) << s;
		}
		if (out != a)
			group_store(dst + g, out);
	}
}

/* Ertl, "New cardinality estimation algorithms for HyperLogLog sketches" (2017), the
 * sigma and tau series; Redis computes the same. */
static double ertl_sigma(double x)
{
	double y = 1.0, z = x, prev;
	int i;

	if (x == 1.0)
		return INFINITY;
	for (i = 0; i < SERIES_MAX; i++) {
		x *= x;
		prev = z;
		z += x * y;
		y += y;
		if (z == prev)
			break;
	}
	return z;
}

static double ertl_tau(double x)
{
	double y = 1.0, z = 1.0 - x, prev;
	int i;

	if (x == 0.0 || x == 1.0)
		return 0.0;
	for (i = 0; i < SERIES_MAX; i++) {
		double d;

		x = sqrt(x);
		d = 1.0 - x;
		prev = z;
		y *= 0.5;
		z -= d * d * y;
		if (z == prev)
			break;
	}
	return z / 3.0;
}

static uint64_t dense_count(const uint8_t *r)
{
	uint32_t hist[HLL_Q + 2] = { 0 }, g;
	const double m = HLL_REGISTERS;
	double z;
	int k;

	for (g = 0; g < HLL_DENSE_BYTES; g += 3) {
		uint32_t v = group_load(r + g);

		if (!v) {
			hist[0] += 4;
			continue;
		}
		hist[v & 63]++;
		hist[v >> 6 & 63]++;
		hist[v >> 12 & 63]++;
		hist[v >> 18 & 63]++;
	}
	if (hist[0] == HLL_REGISTERS)
		return 0;
	z = m * ertl_tau((m - hist[HLL_Q + 1]) / m);
	for (k = HLL_Q; k >= 1; k--) {
		z += hist[k];
		z *= 0.5;
	}
	z += m * ertl_sigma(hist[0] / m);
	return (uint64_t)llround(ALPHA_INF * m * m / z);
}

/* ---- sparse: distinct hashes, sorted ---- */

/* The first slot whose hash is >= @hash. */
static uint32_t sparse_find(const uint64_t *a, uint32_t n, uint64_t hash)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) { /* halves each turn: at most 9 turns for 256 */
		uint32_t mid = lo + (hi - lo) / 2;

		if (a[mid] < hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int to_dense(struct hll *h)
{
	const uint64_t *a = h->mem;
	uint8_t *r = calloc(1, HLL_DENSE_BYTES);
	uint32_t i;

	if (!r)
		return -ENOMEM;
	for (i = 0; i < h->n; i++)
		dense_add(r, a[i]);
	free(h->mem);
	h->mem = r;
	h->n = 0;
	h->cap = 0;
	h->dense = 1;
	return 0;
}

static int sparse_add(struct hll *h, uint64_t hash)
{
	uint64_t *a = h->mem;
	uint32_t pos = sparse_find(a, h->n, hash);
	int err;

	if (pos < h->n && a[pos] == hash)
		return 0;
	if (h->n == HLL_SPARSE_MAX) {
		err = to_dense(h);
		return err ? err : dense_add(h->mem, hash);
	}
	if (h->n == h->cap) {
		uint32_t cap = h->cap ? h->cap * 2u : SPARSE_MIN_CAP;

		if (cap > HLL_SPARSE_MAX)
			cap = HLL_SPARSE_MAX;
		a = realloc(h->mem, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		h->mem = a;
		h->cap = (uint16_t)cap;
	}
	memmove(a + pos + 1, a + pos, (h->n - pos) * sizeof(*a));
	a[pos] = hash;
	h->n++;
	return 1;
}

/* ---- the API ---- */

void hll_reset(struct hll *h)
{
	free(h->mem);
	*h = HLL_INIT;
}

int hll_add_hash(struct hll *h, uint64_t hash)
{
	return h->dense ? dense_add(h->mem, hash) : sparse_add(h, hash);
}

uint64_t hll_hash(const void *data, size_t len)
{
	uint8_t out[crypto_shorthash_BYTES];
	uint64_t v = 0;
	int i;

	/* SipHash needs no sodium_init(): no CPU dispatch, no randomness. */
	crypto_shorthash(out, data, len, hll_key);
	for (i = 7; i >= 0; i--)
		v = v << 8 | out[i];
	return v;
}

int hll_add(struct hll *h, const void *data, size_t len)
{
	return hll_add_hash(h, hll_hash(data, len));
}

uint64_t hll_count(const struct hll *h)
{
	return h->dense ? dense_count(h->mem) : h->n;
}

int hll_merge(struct hll *dst, const struct hll *src)
{
	uint32_t i;
	int err;

	if (dst == src)
		return 0;
	if (!src->dense) {
		const uint64_t *a = src->mem;

		for (i = 0; i < src->n; i++) {
			err = hll_add_hash(dst, a[i]);
			if (err < 0)
				return err;
		}
		return 0;
	}
	if (!dst->dense) {
		err = to_dense(dst);
		if (err)
			return err;
	}
	dense_max(dst->mem, src->mem);
	return 0;
}

uint8_t hll_register(const struct hll *h, uint32_t i)
{
	const uint64_t *a = h->mem;
	uint8_t best = 0;
	uint32_t j;

	if (i >= HLL_REGISTERS)
		return 0;
	if (h->dense)
		return dense_get(h->mem, i);
	for (j = 0; j < h->n; j++)
		if (reg_index(a[j]) == i && reg_rank(a[j]) > best)
			best = reg_rank(a[j]);
	return best;
}

size_t hll_bytes(const struct hll *h)
{
	return sizeof(*h) + (h->dense ? HLL_DENSE_BYTES : (size_t)h->cap * sizeof(uint64_t));
}

/* ---- sliding windows ---- */

int hll_window_init(struct hll_window *w, uint64_t window_ns, uint32_t k)
{
	memset(w, 0, sizeof(*w));
	if (k < 1 || k > HLL_WINDOW_MAX_BUCKETS || window_ns / k < 1)
		return -EINVAL;
	w->b = calloc(k, sizeof(*w->b));
	if (!w->b)
		return -ENOMEM;
	w->span = window_ns / k;
	w->k = k;
	return 0;
}

void hll_window_reset(struct hll_window *w)
{
	uint32_t i;

	for (i = 0; i < w->k; i++)
		hll_reset(&w->b[i]);
	w->head = 0;
}

void hll_window_free(struct hll_window *w)
{
	if (w->b)
		hll_window_reset(w);
	free(w->b);
	memset(w, 0, sizeof(*w));
}

void hll_window_advance(struct hll_window *w, uint64_t now_ns)
{
	uint64_t e, steps, s;

	if (!w->k)
		return;
	e = now_ns / w->span;
	if (e <= w->head)
		return;
	/* A jump of a whole window or more empties every bucket: at most k resets. */
	steps = e - w->head < w->k ? e - w->head : w->k;
	for (s = 1; s <= steps; s++)
		hll_reset(&w->b[(e - steps + s) % w->k]);
	w->head = e;
}

int hll_window_add(struct hll_window *w, uint64_t now_ns, uint64_t hash)
{
	uint64_t e;

	if (!w->k)
		return -EINVAL; /* never initialised, or freed */
	e = now_ns / w->span;
	if (e > w->head)
		hll_window_advance(w, now_ns);
	else if (w->head - e >= w->k)
		return 0; /* late by a window or more: it would have expired already */
	return hll_add_hash(&w->b[e % w->k], hash);
}

/* Distinct hashes across sorted arrays: a k-way merge, at most n_1 + ... + n_k steps. */
static uint64_t sparse_union_count(const struct hll *const *live, uint32_t nlive)
{
	uint32_t pos[HLL_WINDOW_MAX_BUCKETS] = { 0 }, total = 0, i, step;
	uint64_t distinct = 0;

	for (i = 0; i < nlive; i++)
		total += live[i]->n;
	for (step = 0; step < total; step++) {
		uint64_t min = UINT64_MAX;
		bool any = false;

		for (i = 0; i < nlive; i++) {
			const uint64_t *a = live[i]->mem;

			if (pos[i] < live[i]->n && (!any || a[pos[i]] < min)) {
				min = a[pos[i]];
				any = true;
			}
		}
		if (!any)
			break;
		distinct++;
		for (i = 0; i < nlive; i++) {
			const uint64_t *a = live[i]->mem;

			if (pos[i] < live[i]->n && a[pos[i]] == min)
				pos[i]++;
		}
	}
	return distinct;
}

uint64_t hll_window_count(const struct hll_window *w, uint64_t now_ns)
{
	const struct hll *live[HLL_WINDOW_MAX_BUCKETS];
	uint8_t regs[HLL_DENSE_BYTES];
	uint32_t nlive = 0, j, i;
	bool dense = false;
	uint64_t e, ref;

	if (!w->k)
		return 0;
	e = now_ns / w->span;
	ref = e > w->head ? e : w->head;
	/* Bucket head - j is live while ref - (head - j) < k; older ones are all dead. */
	for (j = 0; j < w->k && j <= w->head; j++) {
		uint64_t epoch = w->head - j;
		const struct hll *b = &w->b[epoch % w->k];

		if (ref - epoch >= w->k)
			break;
		if (!b->mem)
			continue;
		live[nlive++] = b;
		dense |= b->dense;
	}
	if (!dense)
		return sparse_union_count(live, nlive);

	memset(regs, 0, sizeof(regs));
	for (i = 0; i < nlive; i++) {
		const uint64_t *a = live[i]->mem;

		if (live[i]->dense) {
			dense_max(regs, live[i]->mem);
			continue;
		}
		for (j = 0; j < live[i]->n; j++)
			dense_add(regs, a[j]);
	}
	return dense_count(regs);
}

size_t hll_window_bytes(const struct hll_window *w)
{
	size_t bytes = sizeof(*w);
	uint32_t i;

	for (i = 0; i < w->k; i++)
		bytes += hll_bytes(&w->b[i]);
	return bytes;
}
