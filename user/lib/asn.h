/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ASN tables: "prefix,asn,class" CSV files parsed into the rows of the datapath's LPM trie.
 * A file is accepted whole or not at all; every bad line is reported as file:line: reason.
 */
#ifndef SLUICE_ASN_H
#define SLUICE_ASN_H

#include <stddef.h>

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

#endif
