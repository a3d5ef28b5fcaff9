/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ASN tables: "prefix,asn,class" CSV files parsed into the rows of the datapath's LPM trie.
 * A file is accepted whole or not at all; every bad line is reported as file:line: reason.
 */
#ifndef SLUICE_ASN_H
#define SLUICE_ASN_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "sluice/abi.h"

struct sl_asn_entry {
	struct sl_lpm_key key;
	struct sl_asn_val val;
	size_t line; /* where the row came from: with duplicates, the later line wins */
};

struct sl_asn_table {
	struct sl_asn_entry *rows;
	size_t n, cap;
	size_t replaced; /* rows whose prefix an earlier row already had (the later one wins) */
};

/* Parse @path, resolving class names through @c. Returns 0, or a negative errno with up to
 * ten problems (and a count of the rest) in @err; @t is left empty on error. */
int sl_asn_load_csv(const char *path, const struct sl_config *c, struct sl_asn_table *t,
		    char *err, size_t errlen);

/* Same, from a buffer (for tests and the control socket); @name labels the errors. */
int sl_asn_parse(const char *name, const char *buf, size_t len, const struct sl_config *c,
		 struct sl_asn_table *t, char *err, size_t errlen);

void sl_asn_free(struct sl_asn_table *t);

/*
 * The IPv6 table (abi.h, sl_asn6) for one slot, built from every row of @t: @w holds
 * SL_V6_ROOT + @cap_nodes * SL_V6_FANOUT entries. Sources in no row get @unknown_class. Where
 * the pool runs out the subtree is left to the trie (correct, only slower). Returns the nodes
 * used; @st (may be NULL) gets what was left to the trie.
 */
struct sl_asn6_stats {
	uint32_t nodes;     /* nodes used */
	uint32_t trie_48s;  /* /48s that hold a row longer than /48: their sources walk the trie */
	uint32_t overflow;  /* subtrees left to the trie because the pool was full (0 normally) */
};
int sl_asn6_build(uint32_t *w, uint32_t cap_nodes, const struct sl_asn_table *t,
		  uint32_t unknown_class, struct sl_asn6_stats *st);
/* What the datapath reads for @addr (16 bytes, network order) in a table of @n_words: a class
 * id, or SL_DIR_USE_TRIE where the trie decides. */
uint32_t sl_asn6_walk(const uint32_t *w, size_t n_words, const uint8_t *addr);

#endif
