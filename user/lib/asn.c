// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* ASN CSV parsing: see asn.h. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "asn.h"
#include "perr.h"

static int push(struct sl_asn_table *t, const struct sl_asn_entry *e)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct sl_asn_entry *r = realloc(t->rows, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		t->rows = r;
		t->cap = cap;
	}
	t->rows[t->n++] = *e;
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	const struct sl_asn_entry *x = a, *y = b;
	int r = memcmp(x->key.addr, y->key.addr, sizeof(x->key.addr));

	if (r)
		return r;
	if (x->key.prefixlen != y->key.prefixlen)
		return x->key.prefixlen < y->key.prefixlen ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Sort by prefix then line, and keep the last row of each prefix: a later line overrides. */
static void dedup(struct sl_asn_table *t)
{
	size_t i, out = 0;

	if (t->n < 2) /* also keeps qsort away from a NULL array */
		return;
	qsort(t->rows, t->n, sizeof(*t->rows), cmp_key);
	for (i = 0; i < t->n; i++) {
		if (out && t->rows[out - 1].key.prefixlen == t->rows[i].key.prefixlen &&
		    !memcmp(t->rows[out - 1].key.addr, t->rows[i].key.addr, 16)) {
			t->rows[out - 1] = t->rows[i];
			t->replaced++;
			continue;
		}
		t->rows[out++] = t->rows[i];
	}
	t->n = out;
}

int sl_asn_parse(const char *name, const char *buf, size_t len, const struct sl_config *c,
		 struct sl_asn_table *t, char *err, size_t errlen)
{
	struct sl_perr e;
	size_t lineno = 0, pos = 0;
	int first = 1, ret = 0;

	sl_perr_init(&e, err, errlen, false);
	memset(t, 0, sizeof(*t));
	if (err && errlen)
		err[0] = '\0';
	while (pos < len) {
		char line[512], *l, *f[4], *save = NULL, *end;
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		struct sl_asn_entry ent;
		struct sl_prefix p;
		char why[160];
		unsigned long asn;
		int nf = 0, cls;

		lineno++;
		if (ll >= sizeof(line)) {
			sl_perr_add(&e, name, lineno, "line longer than %zu bytes", sizeof(line) - 1);
			pos += ll + 1;
			continue;
		}
		memcpy(line, buf + pos, ll);
		line[ll] = '\0';
		pos += ll + 1;
		l = sl_trim(line);
		if (!*l || *l == '#')
			continue;
		if (first && !strncmp(l, "prefix,", 7)) { /* a header row */
			first = 0;
			continue;
		}
		first = 0;
		/* Split by hand: strtok would merge ",," and hide an empty field. */
		for (char *tok = l;; tok = save + 1) {
			save = strchr(tok, ',');
			if (save)
				*save = '\0';
			if (nf < 4)
				f[nf] = sl_trim(tok);
			nf++;
			if (!save)
				break;
		}
		if (nf != 3) {
			sl_perr_add(&e, name, lineno, "expected 3 fields prefix,asn,class (got %d)", nf);
			continue;
		}
		if (!*f[0] || !*f[1] || !*f[2]) {
			sl_perr_add(&e, name, lineno, "empty field in '%s,%s,%s'", f[0], f[1], f[2]);
			continue;
		}
		if (sl_prefix_parse(f[0], &p, 1, why, sizeof(why))) {
			sl_perr_add(&e, name, lineno, "%s", why);
			continue;
		}
		if (p.plen == 0) {
			sl_perr_add(&e, name, lineno, "'%s': a /0 row would type the whole Internet; "
				 "use the \"unknown\" class for that", f[0]);
			continue;
		}
		if (!strncasecmp(f[1], "AS", 2))
			f[1] += 2;
		errno = 0;
		asn = strtoul(f[1], &end, 10);
		if (errno || end == f[1] || *end || asn > 0xffffffffUL || f[1][0] == '-') {
			sl_perr_add(&e, name, lineno, "'%s' is not an AS number (0..4294967295)", f[1]);
			continue;
		}
		cls = sl_config_class(c, f[2]);
		if (cls < 0) {
			sl_perr_add(&e, name, lineno, "class '%s' is not defined in the config", f[2]);
			continue;
		}
		if (t->n >= SL_ASN_MAX_ENTRIES) {
			sl_perr_add(&e, name, lineno, "more than %u rows", SL_ASN_MAX_ENTRIES);
			break;
		}
		memset(&ent, 0, sizeof(ent));
		sl_prefix_to_lpm(&p, &ent.key);
		ent.val.asn = (uint32_t)asn;
		ent.val.class_id = (uint32_t)cls;
		ent.line = lineno;
		if (push(t, &ent)) {
			ret = -ENOMEM;
			break;
		}
	}
	sl_perr_finish(&e, name);
	if (e.count && !ret)
		ret = -EINVAL;
	if (ret) {
		sl_asn_free(t);
		return ret;
	}
	dedup(t);
	return 0;
}

int sl_asn_load_csv(const char *path, const struct sl_config *c, struct sl_asn_table *t,
		    char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, len = 0, n;
	int ret;

	memset(t, 0, sizeof(*t));
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot read: %s\n", path, strerror(-ret));
		return ret;
	}
	do {
		if (len + 65536 > cap) {
			char *nb = realloc(buf, cap + 1048576);

			if (!nb) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = nb;
			cap += 1048576;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	if (ferror(f)) {
		ret = -EIO;
		snprintf(err, errlen, "%s: read error\n", path);
	} else {
		ret = sl_asn_parse(path, buf, len, c, t, err, errlen);
	}
	free(buf);
	fclose(f);
	return ret;
}

void sl_asn_free(struct sl_asn_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

static int cmp_row_plen(const void *a, const void *b)
{
	const struct sl_asn_entry *x = *(struct sl_asn_entry *const *)a;
	const struct sl_asn_entry *y = *(struct sl_asn_entry *const *)b;

	return (int)x->key.prefixlen - (int)y->key.prefixlen;
}

/*
 * Rows go in shortest first, each overwriting the leaves it covers at its own depth and
 * pushing the leaf above it down into a new node where it needs to go deeper. In that order
 * an entry a row writes is always a leaf: a child below it could only have been made by an
 * earlier, longer row. Rows longer than /48 come last and only mark their /48 for the trie;
 * a leaf already marked (by one of them, or because the pool ran out above it) stays marked,
 * since the trie answers correctly for everything below it.
 */
int sl_asn6_build(uint32_t *w, uint32_t cap_nodes, const struct sl_asn_table *t,
		  uint32_t unknown_class, struct sl_asn6_stats *st)
{
	const struct sl_asn_entry **v;
	struct sl_asn6_stats s = { 0 };
	uint32_t fill = unknown_class & 15, i, j;
	size_t r;

	for (i = 0; i < SL_V6_ROOT; i++)
		w[i] = fill;
	v = calloc(t->n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (r = 0; r < t->n; r++)
		v[r] = &t->rows[r];
	qsort(v, t->n, sizeof(*v), cmp_row_plen);
	for (r = 0; r < t->n; r++) {
		const uint8_t *a = v[r]->key.addr;
		uint32_t p = v[r]->key.prefixlen, q = p > SL_V6_LEAF_PLEN ? SL_V6_LEAF_PLEN : p;
		uint32_t leaf = p > SL_V6_LEAF_PLEN ? SL_DIR_USE_TRIE : v[r]->val.class_id & 15;
		uint32_t *ent, *range = NULL, span = 0, first = 0;

		if (q <= SL_V6_ROOT_BITS) {
			span = 1u << (SL_V6_ROOT_BITS - q);
			first = sl_v6_root(a) & ~(span - 1);
			range = w;
		}
		ent = &w[sl_v6_root(a)];
		for (i = 0; !range && i < SL_V6_LEVELS; i++) {
			uint32_t depth = SL_V6_ROOT_BITS + (i + 1) * SL_V6_STRIDE, node, nib;

			if (!(*ent & SL_V6_CHILD)) {
				if (*ent == SL_DIR_USE_TRIE)
					break; /* the trie has this whole subtree already */
				if (s.nodes == cap_nodes) {
					*ent = SL_DIR_USE_TRIE;
					s.overflow++;
					break;
				}
				node = s.nodes++;
				for (j = 0; j < SL_V6_FANOUT; j++)
					w[SL_V6_ROOT + node * SL_V6_FANOUT + j] = *ent;
				*ent = SL_V6_CHILD | node;
			}
			node = *ent & ~SL_V6_CHILD;
			nib = sl_v6_next(*ent, a, i) - SL_V6_ROOT - node * SL_V6_FANOUT;
			if (q <= depth) {
				span = 1u << (depth - q);
				first = nib & ~(span - 1);
				range = &w[SL_V6_ROOT + node * SL_V6_FANOUT];
				break;
			}
			ent = &w[sl_v6_next(*ent, a, i)];
		}
		if (!range)
			continue;
		for (j = first; j < first + span; j++) {
			if (range[j] & SL_V6_CHILD)
				continue; /* cannot happen in this order; never cut a subtree off */
			if (leaf == SL_DIR_USE_TRIE && range[j] != SL_DIR_USE_TRIE)
				s.trie_48s++;
			if (range[j] != SL_DIR_USE_TRIE)
				range[j] = leaf;
		}
	}
	free(v);
	if (st)
		*st = s;
	return (int)s.nodes;
}

uint32_t sl_asn6_walk(const uint32_t *w, size_t n_words, const uint8_t *addr)
{
	uint32_t e = w[sl_v6_root(addr)], i;

	for (i = 0; i < SL_V6_LEVELS && (e & SL_V6_CHILD); i++) {
		uint32_t idx = sl_v6_next(e, addr, i);

		if (idx >= n_words)
			return SL_DIR_USE_TRIE;
		e = w[idx];
	}
	return e & SL_V6_CHILD ? SL_DIR_USE_TRIE : e & 15;
}
