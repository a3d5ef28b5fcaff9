/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Importing a class table from public IP intelligence: MaxMind-format .mmdb files (through
 * libmaxminddb), iptoasn TSV (ip2asn-v4.tsv: start end AS country description) and ASN CSV
 * datasets (@ip-location-db/asn: start,end,asn,organization). Each source network or range
 * is given a class by a class map (asn,class lines and a few kinds of rule, see
 * sl_classmap_parse), overlaps are resolved, adjacent ranges of one ASN and class merged, and
 * the result cut into the exact CIDR prefixes of the "prefix,asn,class" table that
 * sl_asn_parse() reads and `asn load` swaps in. docs/operations.md, "Where a class table
 * comes from", is the user's side of this.
 *
 * Library code: errors are returned as a negative errno with file:line reasons in @err.
 */
#ifndef SLUICE_ASN_IMPORT_H
#define SLUICE_ASN_IMPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "addr.h"
#include "config.h"

typedef unsigned __int128 sl_u128;

/* The largest number of prefixes one range can need: two per bit of the family. */
#define SL_CIDR_MAX 256

/* Cut the inclusive range [@lo, @hi] of @family (SL_FAM_V4: values below 2^32) into the
 * fewest prefixes covering exactly it, lowest first. Returns how many (at most
 * SL_CIDR_MAX), or -EINVAL when @lo > @hi or a bound is outside the family. */
int sl_range_to_cidrs(uint8_t family, sl_u128 lo, sl_u128 hi, struct sl_prefix *out);

/* An address as a number ("192.0.2.1" -> 0xc0000201; IPv6 as 128 bits), its family in
 * @family. Returns 0 or -EINVAL. */
int sl_addr_to_u128(const char *s, uint8_t *family, sl_u128 *v);

/* ---- the class map ---------------------------------------------------------------------- */

enum sl_rule_kind {
	SL_RULE_ORG,   /* org:GLOB: the organization name (AS or ISP), fnmatch, any case */
	SL_RULE_CONN,  /* connection_type:VALUE (GeoIP2 Connection-Type, traits.connection_type) */
	SL_RULE_USER,  /* user_type:VALUE (traits.user_type of Enterprise/Insights) */
	SL_RULE_FLAG,  /* flag:NAME: a true boolean (Anonymous-IP's is_hosting_provider, ...) */
};

struct sl_rule {
	enum sl_rule_kind kind;
	char *arg;
	uint16_t cls;
	size_t line;
};

struct sl_asn_class {
	uint32_t asn;
	uint16_t cls;
	size_t line;
};

struct sl_classmap {
	char name[256];       /* the file, for messages */
	char **classes;       /* class names the map uses; index = a row's class */
	size_t n_classes;
	struct sl_asn_class *asns; /* sorted by asn */
	size_t n_asns;
	struct sl_rule *rules; /* in file order; the first that matches wins (within a kind) */
	size_t n_rules;
	int dflt;             /* class of what nothing maps; -1 until set */
	size_t dflt_line;     /* 0: from the caller, not the file */
};

/* Parse a class map. One rule a line, "KEY,CLASS"; '#' starts a comment:
 *   64500,hosting   AS64500,hosting   an AS number
 *   org:*hosting*,hosting             the organization name, a glob, any case
 *   connection_type:Cellular,mobile   user_type:hosting,hosting   flag:is_hosting_provider,hosting
 *   default,unknown                   what nothing maps (the caller's @dflt overrides it)
 * Class names must be classes of @c (when @c is given). Precedence, whatever the order of
 * lines: the AS number, then flag, user_type, connection_type, org (each in file order),
 * then the default; with no default anywhere, "unknown". Returns 0 or -EINVAL with every
 * bad line (up to ten) as name:line: reason in @err. */
int sl_classmap_parse(const char *name, const char *buf, size_t len, const struct sl_config *c,
		      const char *dflt, struct sl_classmap *m, char *err, size_t errlen);
int sl_classmap_load(const char *path, const struct sl_config *c, const char *dflt,
		     struct sl_classmap *m, char *err, size_t errlen);
void sl_classmap_free(struct sl_classmap *m);

/* What a source says of one network; any field may be absent (NULL, 0 or false). */
struct sl_net_facts {
	uint32_t asn;
	const char *org;       /* AS organization, else ISP, else organization */
	const char *conn_type;
	const char *user_type;
	const char *flags[8];  /* names of the boolean fields that are true, NULL-terminated */
};

/* The class @f gets under @m (see sl_classmap_parse for the order). */
uint16_t sl_classmap_classify(const struct sl_classmap *m, const struct sl_net_facts *f);

/* ---- reading sources into ranges, building the table ------------------------------------ */

enum sl_imp_format { SL_IMP_AUTO, SL_IMP_MMDB, SL_IMP_TSV, SL_IMP_CSV };

struct sl_imp_range {
	sl_u128 lo, hi;
	uint32_t asn;
	uint32_t seq;   /* reading order: with equal widths the later range wins */
	uint32_t line;  /* source line (mmdb: 0) */
	uint16_t cls;
	uint8_t family;
	uint8_t src;    /* index into sl_imp_set.srcs */
};

struct sl_imp_set {
	struct sl_imp_range *r;
	size_t n, cap;
	char srcs[8][256]; /* the files read, for messages */
	size_t n_srcs;
	/* What the sources held. */
	size_t lines, ranges, skipped_as0;
	size_t skipped_alias; /* mmdb: aliases of the IPv4 subtree, IPv4-mapped networks */
};

struct sl_imp_row {
	struct sl_prefix p;
	uint32_t asn;
	uint16_t cls;
};

struct sl_imp_table {
	struct sl_imp_row *rows;
	size_t n, cap;
	size_t v4, v6;            /* rows by family */
	size_t overlaps;          /* ranges that overlapped an earlier one (resolved) */
	size_t v4_long;           /* IPv4 rows longer than /24 */
	size_t v4_trie_24s;       /* distinct /24s holding one: those go to the trie */
	size_t per_class_rows[16];
	uint64_t per_class_v4[16]; /* IPv4 addresses per class */
	uint32_t last24;          /* (while building) */
};

/* "mmdb", "tsv", "csv" or from the file: the extension, else the MaxMind marker, else a tab
 * in the first line. Never returns SL_IMP_AUTO. */
enum sl_imp_format sl_imp_detect(const char *path);
const char *sl_imp_format_name(enum sl_imp_format f);
int sl_imp_format_parse(const char *s, enum sl_imp_format *f);

/* Read @path (as @fmt) into @s, classifying through @m. Several sources can be read into
 * one set: where they overlap, the narrower range wins, and of equal ones the later read.
 * Returns 0, or -EINVAL/-errno with up to ten problems as path:line: reason appended to
 * @err (which must hold a string; @s keeps what the other sources gave it). */
int sl_imp_read(const char *path, enum sl_imp_format fmt, const struct sl_classmap *m,
		struct sl_imp_set *s, char *err, size_t errlen);
/* TSV or CSV from a buffer (tests); @name labels the errors. */
int sl_imp_parse_text(const char *name, const char *buf, size_t len, enum sl_imp_format fmt,
		      const struct sl_classmap *m, struct sl_imp_set *s, char *err, size_t errlen);
void sl_imp_set_free(struct sl_imp_set *s);

/* Resolve overlaps (the narrowest range covering an address wins; of equal widths the later
 * one), merge neighbours of one ASN and class, cut into prefixes. A /0 row (one range, or
 * merged ones, covering a whole family with one class) is refused: the table loader refuses
 * it too, and a default class says the same thing. Returns 0 or a negative errno. */
int sl_imp_build(struct sl_imp_set *s, struct sl_imp_table *t, char *err, size_t errlen);
void sl_imp_table_free(struct sl_imp_table *t);

/* Write @t as "prefix,asn,class" lines (with a comment header naming @sources) to @f.
 * Returns 0 or -EIO. */
int sl_imp_write_csv(const struct sl_imp_table *t, const struct sl_classmap *m,
		     const char *sources, FILE *f);

#endif
