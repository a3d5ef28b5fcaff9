// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Class tables from public IP intelligence: see asn_import.h. Sources become inclusive
 * address ranges (128-bit numbers, IPv4 as its 32-bit value) with a class each; overlaps are
 * flattened by a sweep over the ranges' boundaries with a heap of the ranges covering the
 * current point (narrowest first), neighbours of one ASN and class are merged, and each
 * result is cut into prefixes with the usual largest-aligned-block walk.
 *
 * Only sluicectl links this file (and with it libmaxminddb): sluiced reads the table it
 * writes through asn.c like any hand-made one.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <maxminddb.h>

#include "asn_import.h"
#include "perr.h"

#define MAX_LINE 4096 /* organization names are short; a longer line is not a dataset's */
#define MAP_MAX_CLASSES 16

/* ---- errors: name:line: reason through perr.h; reading a whole file ----------------------- */

static int read_file(const char *path, char **out, size_t *olen, struct sl_perr *e)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, len = 0, n;
	int ret = 0;

	if (!f) {
		ret = -errno;
		sl_perr_add(e, path, 0, "cannot read: %s", strerror(-ret));
		return ret;
	}
	do {
		if (len + 65536 > cap) {
			char *nb = realloc(buf, cap + (cap ? cap : 1048576));

			if (!nb) {
				ret = -ENOMEM;
				break;
			}
			buf = nb;
			cap += cap ? cap : 1048576;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	if (!ret && ferror(f)) {
		ret = -EIO;
		sl_perr_add(e, path, 0, "read error");
	}
	fclose(f);
	if (ret) {
		free(buf);
		return ret;
	}
	if (!buf && !(buf = malloc(1)))
		return -ENOMEM;
	buf[len] = '\0';
	*out = buf;
	*olen = len;
	return 0;
}

/* ---- numbers and prefixes --------------------------------------------------------------- */

static sl_u128 fam_max(uint8_t family)
{
	return family == SL_FAM_V4 ? (sl_u128)0xffffffffu : ~(sl_u128)0;
}

static int ctz128(sl_u128 v)
{
	uint64_t lo = (uint64_t)v, hi = (uint64_t)(v >> 64);

	if (lo)
		return __builtin_ctzll(lo);
	if (hi)
		return 64 + __builtin_ctzll(hi);
	return 128;
}

static void u128_to_prefix(uint8_t family, sl_u128 v, uint8_t plen, struct sl_prefix *p)
{
	int i, n = family == SL_FAM_V4 ? 4 : 16;

	memset(p, 0, sizeof(*p));
	p->family = family;
	p->plen = plen;
	for (i = n - 1; i >= 0; i--, v >>= 8)
		p->addr[i] = (uint8_t)v;
}

int sl_addr_to_u128(const char *s, uint8_t *family, sl_u128 *v)
{
	uint8_t b[16];
	int i;

	if (inet_pton(AF_INET, s, b) == 1) {
		*family = SL_FAM_V4;
		*v = ((sl_u128)b[0] << 24) | ((sl_u128)b[1] << 16) | ((sl_u128)b[2] << 8) | b[3];
		return 0;
	}
	if (inet_pton(AF_INET6, s, b) == 1) {
		*family = SL_FAM_V6;
		*v = 0;
		for (i = 0; i < 16; i++)
			*v = (*v << 8) | b[i];
		return 0;
	}
	return -EINVAL;
}

int sl_range_to_cidrs(uint8_t family, sl_u128 lo, sl_u128 hi, struct sl_prefix *out)
{
	int bits = family == SL_FAM_V4 ? 32 : 128, n = 0;
	sl_u128 max = fam_max(family);

	if ((family != SL_FAM_V4 && family != SL_FAM_V6) || lo > hi || hi > max)
		return -EINVAL;
	for (;;) {
		/* The largest block aligned at @lo that does not pass @hi: 2^k addresses. */
		int k = ctz128(lo);
		sl_u128 mask;

		if (k > bits)
			k = bits;
		for (;; k--) {
			mask = k == 128 ? ~(sl_u128)0 : ((sl_u128)1 << k) - 1;
			if (hi - lo >= mask)
				break;
		}
		u128_to_prefix(family, lo, (uint8_t)(bits - k), &out[n++]);
		if (hi - lo == mask) /* also how a block ending at the family's last address stops */
			return n;
		lo += mask + 1;
	}
}

/* ---- the class map ---------------------------------------------------------------------- */

static bool good_class_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
			return false;
	return true;
}

/* The map's index of class @name, added if new; -1 and a reason in @why if it is not one. */
static int intern_class(struct sl_classmap *m, const struct sl_config *c, const char *name,
			char *why, size_t n)
{
	size_t i;
	char **nc;

	if (c ? sl_config_class(c, name) < 0 : !good_class_name(name)) {
		snprintf(why, n, c ? "class '%s' is not defined in the config" :
			 "'%s' is not a class name", name);
		return -1;
	}
	for (i = 0; i < m->n_classes; i++)
		if (!strcmp(m->classes[i], name))
			return (int)i;
	if (m->n_classes >= MAP_MAX_CLASSES) {
		snprintf(why, n, "more than %d classes", MAP_MAX_CLASSES);
		return -1;
	}
	nc = realloc(m->classes, (m->n_classes + 1) * sizeof(*nc));
	if (!nc || !(nc[m->n_classes] = strdup(name))) {
		if (nc)
			m->classes = nc;
		snprintf(why, n, "out of memory");
		return -1;
	}
	m->classes = nc;
	return (int)m->n_classes++;
}

static int cmp_asn_class(const void *a, const void *b)
{
	const struct sl_asn_class *x = a, *y = b;

	if (x->asn != y->asn)
		return x->asn < y->asn ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static int parse_asn(const char *s, uint32_t *asn)
{
	unsigned long v;
	char *end;

	if (!strncasecmp(s, "AS", 2))
		s += 2;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > 0xffffffffUL)
		return -EINVAL;
	*asn = (uint32_t)v;
	return 0;
}

static const struct {
	const char *prefix;
	enum sl_rule_kind kind;
} rule_prefixes[] = {
	{ "org:", SL_RULE_ORG },
	{ "connection_type:", SL_RULE_CONN },
	{ "user_type:", SL_RULE_USER },
	{ "flag:", SL_RULE_FLAG },
};

int sl_classmap_parse(const char *name, const char *buf, size_t len, const struct sl_config *c,
		      const char *dflt, struct sl_classmap *m, char *err, size_t errlen)
{
	size_t lineno = 0, pos = 0, cap_asn = 0, cap_rules = 0, i;
	struct sl_perr e;
	char why[300];
	int ret = 0, first = 1;

	memset(m, 0, sizeof(*m));
	m->dflt = -1;
	snprintf(m->name, sizeof(m->name), "%s", name);
	if (err && errlen)
		err[0] = '\0';
	sl_perr_init(&e, err, errlen, true);
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		char line[1024], *l, *comma, *key, *cls, *hash;
		int ci;
		size_t k;

		lineno++;
		if (ll >= sizeof(line)) {
			sl_perr_add(&e, name, lineno, "line longer than %zu bytes", sizeof(line) - 1);
			pos += ll + 1;
			continue;
		}
		memcpy(line, buf + pos, ll);
		line[ll] = '\0';
		pos += ll + 1;
		/* A comment: the whole line, or from a '#' after white space. */
		for (hash = line; (hash = strchr(hash, '#')); hash++)
			if (hash == line || isspace((unsigned char)hash[-1])) {
				*hash = '\0';
				break;
			}
		l = sl_trim(line);
		if (!*l)
			continue;
		if (first && !strcasecmp(l, "asn,class")) {
			first = 0;
			continue;
		}
		first = 0;
		/* The last comma: an organization pattern may hold commas ("Cloudflare, Inc."). */
		comma = strrchr(l, ',');
		if (!comma) {
			sl_perr_add(&e, name, lineno, "expected KEY,CLASS (asn,class; org:GLOB,class; "
				 "connection_type:V,class; user_type:V,class; flag:NAME,class; "
				 "default,class)");
			continue;
		}
		*comma = '\0';
		key = sl_trim(l);
		cls = sl_trim(comma + 1);
		if (!*key || !*cls) {
			sl_perr_add(&e, name, lineno, "empty %s", *key ? "class" : "key");
			continue;
		}
		ci = intern_class(m, c, cls, why, sizeof(why));
		if (ci < 0) {
			sl_perr_add(&e, name, lineno, "%s", why);
			continue;
		}
		if (!strcasecmp(key, "default")) {
			if (m->dflt_line) {
				sl_perr_add(&e, name, lineno, "a second default (the first is at line %zu)",
					 m->dflt_line);
				continue;
			}
			m->dflt = ci;
			m->dflt_line = lineno;
			continue;
		}
		for (k = 0; k < sizeof(rule_prefixes) / sizeof(rule_prefixes[0]); k++)
			if (!strncasecmp(key, rule_prefixes[k].prefix, strlen(rule_prefixes[k].prefix)))
				break;
		if (k < sizeof(rule_prefixes) / sizeof(rule_prefixes[0])) {
			const char *arg = sl_trim(key + strlen(rule_prefixes[k].prefix));
			struct sl_rule *r;

			if (!*arg) {
				sl_perr_add(&e, name, lineno, "'%s' needs a value after the colon", key);
				continue;
			}
			if (m->n_rules == cap_rules) {
				size_t nc = cap_rules ? cap_rules * 2 : 16;

				r = realloc(m->rules, nc * sizeof(*r));
				if (!r) {
					ret = -ENOMEM;
					break;
				}
				m->rules = r;
				cap_rules = nc;
			}
			r = &m->rules[m->n_rules];
			r->kind = rule_prefixes[k].kind;
			r->cls = (uint16_t)ci;
			r->line = lineno;
			r->arg = strdup(arg);
			if (!r->arg) {
				ret = -ENOMEM;
				break;
			}
			m->n_rules++;
			continue;
		}
		{
			struct sl_asn_class *a;
			uint32_t asn;

			if (parse_asn(key, &asn)) {
				sl_perr_add(&e, name, lineno, "'%s' is neither an AS number (64500, AS64500) "
					 "nor a rule (org:, connection_type:, user_type:, flag:, "
					 "default)", key);
				continue;
			}
			if (m->n_asns == cap_asn) {
				size_t nc = cap_asn ? cap_asn * 2 : 256;

				a = realloc(m->asns, nc * sizeof(*a));
				if (!a) {
					ret = -ENOMEM;
					break;
				}
				m->asns = a;
				cap_asn = nc;
			}
			m->asns[m->n_asns++] = (struct sl_asn_class){ asn, (uint16_t)ci, lineno };
		}
	}
	if (!ret && m->n_asns) {
		size_t out = 0;

		qsort(m->asns, m->n_asns, sizeof(*m->asns), cmp_asn_class);
		for (i = 0; i < m->n_asns; i++) {
			if (out && m->asns[out - 1].asn == m->asns[i].asn) {
				if (m->asns[out - 1].cls != m->asns[i].cls)
					sl_perr_add(&e, name, m->asns[i].line, "AS%u is already mapped to %s "
						 "at line %zu", m->asns[i].asn,
						 m->classes[m->asns[out - 1].cls], m->asns[out - 1].line);
				continue;
			}
			m->asns[out++] = m->asns[i];
		}
		m->n_asns = out;
	}
	if (!ret && dflt) {
		int ci = intern_class(m, c, dflt, why, sizeof(why));

		if (ci < 0)
			sl_perr_add(&e, "--default", 0, "%s", why);
		m->dflt = ci;
		m->dflt_line = 0;
	}
	if (!ret && m->dflt < 0) {
		m->dflt = intern_class(m, c, "unknown", why, sizeof(why));
		if (m->dflt < 0)
			sl_perr_add(&e, name, 0, "no default class: %s (give one: a 'default,CLASS' "
				 "line or --default)", why);
	}
	sl_perr_finish(&e, name);
	if (!ret && e.count)
		ret = -EINVAL;
	if (ret)
		sl_classmap_free(m);
	return ret;
}

int sl_classmap_load(const char *path, const struct sl_config *c, const char *dflt,
		     struct sl_classmap *m, char *err, size_t errlen)
{
	struct sl_perr e;
	char *buf;
	size_t len;
	int ret;

	memset(m, 0, sizeof(*m));
	if (err && errlen)
		err[0] = '\0';
	sl_perr_init(&e, err, errlen, true);
	ret = read_file(path, &buf, &len, &e);
	if (ret)
		return ret;
	ret = sl_classmap_parse(path, buf, len, c, dflt, m, err, errlen);
	free(buf);
	return ret;
}

void sl_classmap_free(struct sl_classmap *m)
{
	size_t i;

	for (i = 0; i < m->n_classes; i++)
		free(m->classes[i]);
	for (i = 0; i < m->n_rules; i++)
		free(m->rules[i].arg);
	free(m->classes);
	free(m->asns);
	free(m->rules);
	memset(m, 0, sizeof(*m));
	m->dflt = -1;
}

static const struct sl_rule *first_rule(const struct sl_classmap *m, enum sl_rule_kind kind,
					const char *value)
{
	size_t i;

	if (!value || !*value)
		return NULL;
	for (i = 0; i < m->n_rules; i++) {
		const struct sl_rule *r = &m->rules[i];

		if (r->kind != kind)
			continue;
		if (kind == SL_RULE_ORG ? !fnmatch(r->arg, value, FNM_CASEFOLD) :
					  !strcasecmp(r->arg, value))
			return r;
	}
	return NULL;
}

uint16_t sl_classmap_classify(const struct sl_classmap *m, const struct sl_net_facts *f)
{
	const struct sl_rule *r;
	size_t lo = 0, hi = m->n_asns, i;

	while (f->asn && lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->asns[mid].asn == f->asn)
			return m->asns[mid].cls;
		if (m->asns[mid].asn < f->asn)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Flags in the map's order: the first rule naming a flag the network has. */
	for (i = 0; i < m->n_rules; i++) {
		const char *const *fl;

		if (m->rules[i].kind != SL_RULE_FLAG)
			continue;
		for (fl = f->flags; *fl && fl < f->flags + 8; fl++)
			if (!strcasecmp(*fl, m->rules[i].arg))
				return m->rules[i].cls;
	}
	if ((r = first_rule(m, SL_RULE_USER, f->user_type)) ||
	    (r = first_rule(m, SL_RULE_CONN, f->conn_type)) ||
	    (r = first_rule(m, SL_RULE_ORG, f->org)))
		return r->cls;
	return (uint16_t)m->dflt;
}

/* ---- ranges ----------------------------------------------------------------------------- */

static int set_push(struct sl_imp_set *s, const struct sl_imp_range *r)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		struct sl_imp_range *nr = realloc(s->r, cap * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		s->r = nr;
		s->cap = cap;
	}
	s->r[s->n] = *r;
	s->r[s->n].seq = (uint32_t)s->n;
	s->n++;
	s->ranges++;
	return 0;
}

static int set_source(struct sl_imp_set *s, const char *name, struct sl_perr *e)
{
	if (s->n_srcs >= sizeof(s->srcs) / sizeof(s->srcs[0])) {
		sl_perr_add(e, name, 0, "more than %zu sources in one table",
			 sizeof(s->srcs) / sizeof(s->srcs[0]));
		return -EINVAL;
	}
	snprintf(s->srcs[s->n_srcs], sizeof(s->srcs[0]), "%s", name);
	return (int)s->n_srcs++;
}

/* Split a CSV line in place (RFC 4180 quotes: "a, b" and "say ""hi"""). Returns the number
 * of fields (only the first @max kept), or -1 for an unterminated quote. */
static int split_csv(char *l, char **f, int max)
{
	int n = 0;

	for (;;) {
		char *start = l, *out = l;

		if (*l == '"') {
			for (l++;; l++) {
				if (!*l)
					return -1;
				if (*l == '"') {
					if (l[1] != '"')
						break;
					l++;
				}
				*out++ = *l;
			}
			l++; /* past the closing quote */
			while (*l && *l != ',')
				l++; /* text after a closing quote: ignored, as readers do */
		} else {
			while (*l && *l != ',')
				l++;
			out = l;
		}
		if (n < max)
			f[n] = start;
		n++;
		if (!*l) {
			*out = '\0';
			break;
		}
		*out = '\0';
		l++;
	}
	for (int i = 0; i < n && i < max; i++)
		f[i] = sl_trim(f[i]);
	return n;
}

static int split_tab(char *l, char **f, int max)
{
	int n = 0;

	for (;;) {
		char *tab = strchr(l, '\t');

		if (n < max)
			f[n] = l;
		n++;
		if (!tab)
			break;
		*tab = '\0';
		l = tab + 1;
	}
	for (int i = 0; i < n && i < max; i++)
		f[i] = sl_trim(f[i]);
	return n;
}

int sl_imp_parse_text(const char *name, const char *buf, size_t len, enum sl_imp_format fmt,
		      const struct sl_classmap *m, struct sl_imp_set *s, char *err, size_t errlen)
{
	size_t lineno = 0, pos = 0;
	int want = fmt == SL_IMP_TSV ? 5 : 4, src, ret = 0;
	struct sl_perr e;

	sl_perr_init(&e, err, errlen, true);
	if (fmt != SL_IMP_TSV && fmt != SL_IMP_CSV) {
		sl_perr_add(&e, name, 0, "not a text format");
		return -EINVAL;
	}
	src = set_source(s, name, &e);
	if (src < 0)
		return src;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		char line[MAX_LINE], *l, *f[5];
		struct sl_net_facts facts = { 0 };
		struct sl_imp_range r = { 0 };
		uint8_t fam_hi;
		int nf;

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
		s->lines++;
		if (lineno == 1 && fmt == SL_IMP_CSV && !strncmp(l, "ip_range_start,", 15))
			continue; /* a header row */
		nf = fmt == SL_IMP_TSV ? split_tab(l, f, 5) : split_csv(l, f, 5);
		if (nf < 0) {
			sl_perr_add(&e, name, lineno, "a quoted field is not closed");
			continue;
		}
		if (nf != want) {
			sl_perr_add(&e, name, lineno, "expected %d %s fields (%s), got %d", want,
				 fmt == SL_IMP_TSV ? "tab-separated" : "comma-separated",
				 fmt == SL_IMP_TSV ? "range_start range_end AS_number country_code "
				 "AS_description" : "ip_range_start,ip_range_end,"
				 "autonomous_system_number,autonomous_system_organization", nf);
			continue;
		}
		if (sl_addr_to_u128(f[0], &r.family, &r.lo)) {
			sl_perr_add(&e, name, lineno, "'%s' is not an IPv4 or IPv6 address", f[0]);
			continue;
		}
		if (sl_addr_to_u128(f[1], &fam_hi, &r.hi)) {
			sl_perr_add(&e, name, lineno, "'%s' is not an IPv4 or IPv6 address", f[1]);
			continue;
		}
		if (fam_hi != r.family) {
			sl_perr_add(&e, name, lineno, "'%s' and '%s' are of different families", f[0],
				 f[1]);
			continue;
		}
		if (r.lo > r.hi) {
			sl_perr_add(&e, name, lineno, "the range ends (%s) before it starts (%s)", f[1],
				 f[0]);
			continue;
		}
		if (parse_asn(f[2], &r.asn)) {
			sl_perr_add(&e, name, lineno, "'%s' is not an AS number (0..4294967295)", f[2]);
			continue;
		}
		/* AS 0 is iptoasn's "Not routed": no row, so the datapath's unknown class. */
		if (r.asn == 0) {
			s->skipped_as0++;
			continue;
		}
		facts.asn = r.asn;
		facts.org = fmt == SL_IMP_TSV ? f[4] : f[3];
		r.cls = sl_classmap_classify(m, &facts);
		r.line = (uint32_t)lineno;
		r.src = (uint8_t)src;
		if (set_push(s, &r)) {
			ret = -ENOMEM;
			break;
		}
	}
	sl_perr_finish(&e, name);
	if (!ret && e.count)
		ret = -EINVAL;
	return ret;
}

/* ---- .mmdb through libmaxminddb --------------------------------------------------------- */

/* Boolean fields of MaxMind's databases that a flag: rule can name (top level, as in
 * Anonymous-IP, or under "traits", as in Enterprise and Insights). */
static const char *const mmdb_flags[] = {
	"is_anonymous", "is_anonymous_vpn", "is_hosting_provider", "is_public_proxy",
	"is_residential_proxy", "is_tor_exit_node", "is_anonymous_proxy",
	"is_satellite_provider", "is_legitimate_proxy", "is_anycast",
};

struct mmdb_walk {
	MMDB_s db;
	const struct sl_classmap *m;
	struct sl_imp_set *s;
	struct sl_perr *e;
	const char *name;
	uint32_t ipv4_node; /* where ::/96 leads in an IPv6 tree; other paths to it are aliases */
	bool v6;
	int src, ret;
	/* The last data record classified: networks next to each other often share one. */
	uint32_t last_off;
	bool have_last;
	uint32_t last_asn;
	uint16_t last_cls;
	size_t aliases, mapped6;
};

/* A string at @path of @entry into @out (""), NUL-terminated. */
static void mmdb_str(MMDB_entry_s *entry, const char *const *path, char *out, size_t n)
{
	MMDB_entry_data_s d;

	out[0] = '\0';
	if (MMDB_aget_value(entry, &d, path) == MMDB_SUCCESS && d.has_data &&
	    d.type == MMDB_DATA_TYPE_UTF8_STRING)
		snprintf(out, n, "%.*s", (int)d.data_size, d.utf8_string);
}

static uint32_t mmdb_uint(MMDB_entry_s *entry, const char *const *path)
{
	MMDB_entry_data_s d;

	if (MMDB_aget_value(entry, &d, path) != MMDB_SUCCESS || !d.has_data)
		return 0;
	switch (d.type) {
	case MMDB_DATA_TYPE_UINT16:
		return d.uint16;
	case MMDB_DATA_TYPE_UINT32:
		return d.uint32;
	case MMDB_DATA_TYPE_INT32:
		return d.int32 > 0 ? (uint32_t)d.int32 : 0;
	case MMDB_DATA_TYPE_UINT64:
		return d.uint64 <= 0xffffffffu ? (uint32_t)d.uint64 : 0;
	default:
		return 0;
	}
}

static bool mmdb_has(MMDB_entry_s *entry, const char *const *path)
{
	MMDB_entry_data_s d;

	return MMDB_aget_value(entry, &d, path) == MMDB_SUCCESS && d.has_data;
}

static bool mmdb_true(MMDB_entry_s *entry, const char *const *path)
{
	MMDB_entry_data_s d;

	return MMDB_aget_value(entry, &d, path) == MMDB_SUCCESS && d.has_data &&
	       d.type == MMDB_DATA_TYPE_BOOLEAN && d.boolean;
}

/* First of the top-level and the traits.* field @key. */
static void facts_str(MMDB_entry_s *en, const char *key, char *out, size_t n)
{
	const char *top[] = { key, NULL }, *tr[] = { "traits", key, NULL };

	mmdb_str(en, top, out, n);
	if (!out[0])
		mmdb_str(en, tr, out, n);
}

static void mmdb_classify(struct mmdb_walk *w, MMDB_entry_s *en, uint32_t *asn, uint16_t *cls)
{
	char org[512], conn[64], user[64];
	struct sl_net_facts f = { 0 };
	const char *top[] = { "autonomous_system_number", NULL };
	const char *tr[] = { "traits", "autonomous_system_number", NULL };
	int nf = 0;
	size_t i;

	if (w->have_last && w->last_off == en->offset) {
		*asn = w->last_asn;
		*cls = w->last_cls;
		return;
	}
	f.asn = mmdb_uint(en, top);
	if (!f.asn)
		f.asn = mmdb_uint(en, tr);
	facts_str(en, "autonomous_system_organization", org, sizeof(org));
	if (!org[0])
		facts_str(en, "isp", org, sizeof(org));
	if (!org[0])
		facts_str(en, "organization", org, sizeof(org));
	facts_str(en, "connection_type", conn, sizeof(conn));
	facts_str(en, "user_type", user, sizeof(user));
	f.org = org;
	f.conn_type = conn;
	f.user_type = user;
	for (i = 0; i < sizeof(mmdb_flags) / sizeof(mmdb_flags[0]) && nf < 7; i++) {
		const char *p1[] = { mmdb_flags[i], NULL }, *p2[] = { "traits", mmdb_flags[i], NULL };

		if (mmdb_true(en, p1) || mmdb_true(en, p2))
			f.flags[nf++] = mmdb_flags[i];
	}
	/* GeoIP2-ISP gives cellular networks their mobile network code. */
	{
		const char *p1[] = { "mobile_network_code", NULL };
		const char *p2[] = { "traits", "mobile_network_code", NULL };

		if (nf < 7 && (mmdb_has(en, p1) || mmdb_has(en, p2)))
			f.flags[nf++] = "mobile_network_code";
	}
	*asn = f.asn;
	*cls = sl_classmap_classify(w->m, &f);
	w->have_last = true;
	w->last_off = en->offset;
	w->last_asn = *asn;
	w->last_cls = *cls;
}

static void mmdb_emit(struct mmdb_walk *w, sl_u128 path, int depth, MMDB_entry_s *en)
{
	struct sl_imp_range r = { 0 };
	int bits = w->v6 ? 128 : 32;
	sl_u128 span;

	if (w->v6 && depth >= 96 && !(path >> 32)) {
		/* ::/96 is where an IPv6 tree keeps IPv4: an IPv4 network. */
		r.family = SL_FAM_V4;
		bits = 32;
		depth -= 96;
	} else {
		r.family = w->v6 ? SL_FAM_V6 : SL_FAM_V4;
		/* IPv4-mapped space is IPv4's in our trie: an IPv6 row there would type IPv4. */
		if (w->v6 && depth >= 96 && (path >> 32) == 0xffff) {
			w->mapped6++;
			return;
		}
	}
	span = bits - depth >= 128 ? ~(sl_u128)0 : ((sl_u128)1 << (bits - depth)) - 1;
	r.lo = path & ~span & fam_max(r.family);
	r.hi = r.lo | span;
	if (r.family == SL_FAM_V4)
		r.hi &= 0xffffffffu;
	mmdb_classify(w, en, &r.asn, &r.cls);
	r.src = (uint8_t)w->src;
	if (set_push(w->s, &r))
		w->ret = -ENOMEM;
}

/* Depth-first over the search tree; @path holds the bits taken so far, left-aligned at bit
 * @depth of a 128- (or 32-) bit address. Recursion depth is at most 128. */
static void mmdb_walk_node(struct mmdb_walk *w, uint32_t node, sl_u128 path, int depth)
{
	int bits = w->v6 ? 128 : 32, side;
	MMDB_search_node_s n;

	if (w->ret)
		return;
	/* An alias (::ffff:0:0/96, 2002::/16) of the IPv4 subtree: it is walked at ::/96. */
	if (w->v6 && depth && node == w->ipv4_node && !(depth == 96 && !path)) {
		w->aliases++;
		return;
	}
	if (depth >= bits || MMDB_read_node(&w->db, node, &n) != MMDB_SUCCESS) {
		sl_perr_add(w->e, w->name, 0, "corrupt search tree (node %u at depth %d)", node, depth);
		w->ret = -EINVAL;
		return;
	}
	for (side = 0; side < 2 && !w->ret; side++) {
		uint8_t type = side ? n.right_record_type : n.left_record_type;
		uint64_t rec = side ? n.right_record : n.left_record;
		MMDB_entry_s en = side ? n.right_record_entry : n.left_record_entry;
		sl_u128 p = path;

		if (side)
			p |= (sl_u128)1 << (bits - 1 - depth);
		switch (type) {
		case MMDB_RECORD_TYPE_SEARCH_NODE:
			mmdb_walk_node(w, (uint32_t)rec, p, depth + 1);
			break;
		case MMDB_RECORD_TYPE_DATA:
			mmdb_emit(w, p, depth + 1, &en);
			break;
		case MMDB_RECORD_TYPE_EMPTY:
			break;
		default:
			sl_perr_add(w->e, w->name, 0, "corrupt search tree (a record of node %u points "
				 "past the data)", node);
			w->ret = -EINVAL;
		}
	}
}

static int read_mmdb(const char *path, const struct sl_classmap *m, struct sl_imp_set *s,
		     struct sl_perr *e)
{
	struct mmdb_walk w = { .m = m, .s = s, .e = e, .name = path };
	size_t before;
	int r = MMDB_open(path, MMDB_MODE_MMAP, &w.db);

	if (r != MMDB_SUCCESS) {
		sl_perr_add(e, path, 0, "%s%s%s", MMDB_strerror(r), r == MMDB_IO_ERROR ? ": " : "",
			 r == MMDB_IO_ERROR ? strerror(errno) : "");
		return r == MMDB_IO_ERROR ? -EIO : -EINVAL;
	}
	w.src = set_source(s, path, e);
	if (w.src < 0) {
		MMDB_close(&w.db);
		return w.src;
	}
	w.v6 = w.db.metadata.ip_version == 6;
	w.ipv4_node = UINT32_MAX;
	if (w.v6) {
		MMDB_search_node_s n;
		uint32_t node = 0;
		int i;

		for (i = 0; i < 96; i++) {
			if (MMDB_read_node(&w.db, node, &n) != MMDB_SUCCESS ||
			    n.left_record_type != MMDB_RECORD_TYPE_SEARCH_NODE)
				break;
			node = (uint32_t)n.left_record;
		}
		if (i == 96)
			w.ipv4_node = node;
	}
	before = s->n;
	if (w.db.metadata.node_count)
		mmdb_walk_node(&w, 0, 0, 0);
	s->lines += s->n - before; /* networks, for the summary */
	if (w.aliases || w.mapped6)
		s->skipped_alias += w.aliases + w.mapped6;
	MMDB_close(&w.db);
	return w.ret;
}

/* ---- formats ---------------------------------------------------------------------------- */

const char *sl_imp_format_name(enum sl_imp_format f)
{
	switch (f) {
	case SL_IMP_MMDB:
		return "mmdb";
	case SL_IMP_TSV:
		return "tsv";
	case SL_IMP_CSV:
		return "csv";
	default:
		return "auto";
	}
}

int sl_imp_format_parse(const char *s, enum sl_imp_format *f)
{
	if (!strcmp(s, "mmdb"))
		*f = SL_IMP_MMDB;
	else if (!strcmp(s, "tsv") || !strcmp(s, "iptoasn"))
		*f = SL_IMP_TSV;
	else if (!strcmp(s, "csv"))
		*f = SL_IMP_CSV;
	else if (!strcmp(s, "auto"))
		*f = SL_IMP_AUTO;
	else
		return -EINVAL;
	return 0;
}

static bool ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a >= b && !strcasecmp(s + a - b, suf);
}

enum sl_imp_format sl_imp_detect(const char *path)
{
	static const char marker[] = "\xab\xcd\xefMaxMind.com";
	char head[4096];
	size_t n;
	FILE *f;

	if (ends_with(path, ".mmdb"))
		return SL_IMP_MMDB;
	if (ends_with(path, ".tsv"))
		return SL_IMP_TSV;
	if (ends_with(path, ".csv"))
		return SL_IMP_CSV;
	f = fopen(path, "rb");
	if (!f)
		return SL_IMP_CSV; /* the read names the problem */
	n = fread(head, 1, sizeof(head) - 1, f);
	head[n] = '\0';
	/* The metadata is at the end: look at the last 128 KiB for the marker. */
	if (!fseek(f, -131072, SEEK_END) || !fseek(f, 0, SEEK_SET)) {
		static char tail[131072];
		size_t t = fread(tail, 1, sizeof(tail), f);

		if (memmem(tail, t, marker, sizeof(marker) - 1)) {
			fclose(f);
			return SL_IMP_MMDB;
		}
	}
	fclose(f);
	return memchr(head, '\t', strcspn(head, "\n")) ? SL_IMP_TSV : SL_IMP_CSV;
}

int sl_imp_read(const char *path, enum sl_imp_format fmt, const struct sl_classmap *m,
		struct sl_imp_set *s, char *err, size_t errlen)
{
	struct sl_perr e;
	char *buf;
	size_t len;
	int ret;

	sl_perr_init(&e, err, errlen, true);
	if (fmt == SL_IMP_AUTO)
		fmt = sl_imp_detect(path);
	if (fmt == SL_IMP_MMDB) {
		ret = read_mmdb(path, m, s, &e);
		sl_perr_finish(&e, path);
		return ret;
	}
	ret = read_file(path, &buf, &len, &e);
	if (ret)
		return ret;
	ret = sl_imp_parse_text(path, buf, len, fmt, m, s, err, errlen);
	free(buf);
	return ret;
}

void sl_imp_set_free(struct sl_imp_set *s)
{
	free(s->r);
	memset(s, 0, sizeof(*s));
}

/* ---- building the table ----------------------------------------------------------------- */

static int cmp_range(const void *a, const void *b)
{
	const struct sl_imp_range *x = a, *y = b;

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_u128(const void *a, const void *b)
{
	sl_u128 x = *(const sl_u128 *)a, y = *(const sl_u128 *)b;

	return x < y ? -1 : x > y;
}

/* Heap order: the narrower range first; of equal widths the later one. */
static bool before(const struct sl_imp_range *x, const struct sl_imp_range *y)
{
	sl_u128 wx = x->hi - x->lo, wy = y->hi - y->lo;

	return wx != wy ? wx < wy : x->seq > y->seq;
}

struct heap {
	const struct sl_imp_range **h;
	size_t n;
};

static void heap_push(struct heap *hp, const struct sl_imp_range *r)
{
	size_t i = hp->n++;

	hp->h[i] = r;
	while (i && before(hp->h[i], hp->h[(i - 1) / 2])) {
		const struct sl_imp_range *t = hp->h[i];

		hp->h[i] = hp->h[(i - 1) / 2];
		hp->h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static void heap_pop(struct heap *hp)
{
	size_t i = 0;

	hp->h[0] = hp->h[--hp->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct sl_imp_range *t;

		if (l < hp->n && before(hp->h[l], hp->h[m]))
			m = l;
		if (r < hp->n && before(hp->h[r], hp->h[m]))
			m = r;
		if (m == i)
			break;
		t = hp->h[i];
		hp->h[i] = hp->h[m];
		hp->h[m] = t;
		i = m;
	}
}

static int table_push(struct sl_imp_table *t, const struct sl_prefix *p, uint32_t asn,
		      uint16_t cls)
{
	struct sl_imp_row *row;

	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4096;
		struct sl_imp_row *nr = realloc(t->rows, cap * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		t->rows = nr;
		t->cap = cap;
	}
	row = &t->rows[t->n++];
	row->p = *p;
	row->asn = asn;
	row->cls = cls;
	if (p->family == SL_FAM_V4) {
		t->v4++;
		if (cls < 16)
			t->per_class_v4[cls] += (uint64_t)1 << (32 - p->plen);
		if (p->plen > 24) {
			uint32_t s24 = ((uint32_t)p->addr[0] << 16) | ((uint32_t)p->addr[1] << 8) |
				       p->addr[2];

			/* Rows come in address order: a new /24 differs from the last one seen. */
			if (t->v4_long == 0 || s24 != t->last24)
				t->v4_trie_24s++;
			t->last24 = s24;
			t->v4_long++;
		}
	} else {
		t->v6++;
	}
	if (cls < 16)
		t->per_class_rows[cls]++;
	return 0;
}

/* A merged run of one ASN and class: cut it into prefixes. */
static int flush_run(struct sl_imp_table *t, const struct sl_imp_range *run,
		     const struct sl_imp_set *s, struct sl_perr *e)
{
	struct sl_prefix p[SL_CIDR_MAX];
	int n, i, ret;

	if (run->lo == 0 && run->hi == fam_max(run->family)) {
		sl_perr_add(e, s->srcs[run->src], run->line, "the table would type all of %s as one "
			 "class (a /0 row); leave it out and use a default class instead",
			 run->family == SL_FAM_V4 ? "IPv4" : "IPv6");
		return -EINVAL;
	}
	n = sl_range_to_cidrs(run->family, run->lo, run->hi, p);
	for (i = 0; i < n; i++) {
		ret = table_push(t, &p[i], run->asn, run->cls);
		if (ret)
			return ret;
	}
	return n < 0 ? n : 0;
}

int sl_imp_build(struct sl_imp_set *s, struct sl_imp_table *t, char *err, size_t errlen)
{
	struct heap hp = { 0 };
	sl_u128 *pts = NULL;
	struct sl_imp_range run = { 0 };
	bool have_run = false;
	size_t i, start, end;
	struct sl_perr e;
	int ret = 0;

	memset(t, 0, sizeof(*t));
	sl_perr_init(&e, err, errlen, true);
	if (!s->n)
		return 0;
	qsort(s->r, s->n, sizeof(*s->r), cmp_range);
	pts = malloc(2 * s->n * sizeof(*pts));
	hp.h = malloc(s->n * sizeof(*hp.h));
	if (!pts || !hp.h) {
		ret = -ENOMEM;
		goto out;
	}
	for (start = 0; start < s->n && !ret; start = end) {
		uint8_t fam = s->r[start].family;
		sl_u128 reach = 0;
		size_t np = 0, k, idx;

		for (end = start; end < s->n && s->r[end].family == fam; end++) {
			const struct sl_imp_range *r = &s->r[end];

			if (end > start && r->lo <= reach)
				t->overlaps++;
			if (end == start || r->hi > reach)
				reach = r->hi;
			pts[np++] = r->lo;
			if (r->hi != fam_max(fam))
				pts[np++] = r->hi + 1;
		}
		qsort(pts, np, sizeof(*pts), cmp_u128);
		for (i = 0, k = 0; i < np; i++)
			if (!k || pts[i] != pts[k - 1])
				pts[k++] = pts[i];
		np = k;
		hp.n = 0;
		idx = start;
		for (i = 0; i < np && !ret; i++) {
			sl_u128 p = pts[i], seg_hi = i + 1 < np ? pts[i + 1] - 1 : fam_max(fam);
			const struct sl_imp_range *top;

			while (idx < end && s->r[idx].lo == p)
				heap_push(&hp, &s->r[idx++]);
			while (hp.n && hp.h[0]->hi < p)
				heap_pop(&hp);
			if (!hp.n)
				continue;
			top = hp.h[0];
			if (have_run && run.family == fam && run.hi + 1 == p && run.asn == top->asn &&
			    run.cls == top->cls) {
				run.hi = seg_hi;
				continue;
			}
			if (have_run)
				ret = flush_run(t, &run, s, &e);
			run = *top;
			run.lo = p;
			run.hi = seg_hi;
			have_run = true;
		}
	}
	if (!ret && have_run)
		ret = flush_run(t, &run, s, &e);
out:
	free(pts);
	free(hp.h);
	sl_perr_finish(&e, "table");
	if (!ret && t->n > SL_ASN_MAX_ENTRIES) {
		sl_perr_add(&e, "table", 0, "%zu rows: more than the datapath's %u", t->n,
			 SL_ASN_MAX_ENTRIES);
		ret = -E2BIG;
	}
	if (ret)
		sl_imp_table_free(t);
	return ret;
}

void sl_imp_table_free(struct sl_imp_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

int sl_imp_write_csv(const struct sl_imp_table *t, const struct sl_classmap *m,
		     const char *sources, FILE *f)
{
	char buf[64];
	size_t i;

	fprintf(f, "# Made by sluicectl asn import from %s with the class map %s: %zu rows "
		"(%zu IPv4, %zu IPv6).\n# Do not edit: import again.\nprefix,asn,class\n",
		sources, m->name, t->n, t->v4, t->v6);
	for (i = 0; i < t->n; i++)
		fprintf(f, "%s,%u,%s\n", sl_prefix_str(&t->rows[i].p, buf, sizeof(buf)),
			t->rows[i].asn, m->classes[t->rows[i].cls]);
	return ferror(f) ? -EIO : 0;
}
