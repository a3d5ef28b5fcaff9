// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* ASN table parsing: rows as the LPM trie keys them, the accepted syntax, every rejection. */
#include "unit.h"

#include <errno.h>
#include <limits.h>

#include "asn.h"
#include "config.h"

#define ERRLEN 8192

/* Class ids in the small config: the order of the classes list. */
enum { HOSTING = 0, RESIDENTIAL = 1, UNKNOWN = 2 };

static struct sl_config small_cfg;

/* Load a config whose classes are @classes (each gets rate 1, burst 5). */
static void load_classes(struct sl_config *c, const char *const *classes)
{
	char text[4096], path[256], err[ERRLEN];
	size_t used;
	int ret;

	used = (size_t)snprintf(text, sizeof(text),
				"edge: { interfaces = [\"eth0\"]; ports = ( { port = 443; } ); };\n"
				"classes = (\n");
	for (; *classes; classes++)
		used += (size_t)snprintf(text + used, sizeof(text) - used,
					 "  { name = \"%s\"; rate = 1.0; burst = 5.0; }%s\n", *classes,
					 classes[1] ? "," : "");
	snprintf(text + used, sizeof(text) - used, ");\n");
	snprintf(path, sizeof(path), "%s", tmpfile_with("asncfg", text));
	ret = sl_config_load(path, NULL, c, err, sizeof(err));
	unlink(path);
	if (ret)
		fail_msg("test config did not load (%d):\n%s", ret, err);
}

/* The config with classes hosting, residential, unknown, loaded on first use. */
static const struct sl_config *small(void)
{
	static const char *const classes[] = { "hosting", "residential", "unknown", NULL };
	static int loaded;

	if (!loaded) {
		load_classes(&small_cfg, classes);
		assert_int_equal(small_cfg.n_classes, 3);
		assert_int_equal(sl_config_class(&small_cfg, "hosting"), HOSTING);
		assert_int_equal(sl_config_class(&small_cfg, "residential"), RESIDENTIAL);
		assert_int_equal(sl_config_class(&small_cfg, "unknown"), UNKNOWN);
		loaded = 1;
	}
	return &small_cfg;
}

static int parse(const char *text, struct sl_asn_table *t, char *err)
{
	return sl_asn_parse("t.csv", text, strlen(text), small(), t, err, ERRLEN);
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* The row whose key is @k, or fail. */
static const struct sl_asn_entry *row_for(const struct sl_asn_table *t,
					  const struct sl_lpm_key *k)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->rows[i].key.prefixlen == k->prefixlen &&
		    !memcmp(t->rows[i].key.addr, k->addr, 16))
			return &t->rows[i];
	fail_msg("no row for prefixlen %u", k->prefixlen);
	return NULL;
}

static struct sl_lpm_key v4key(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint32_t plen)
{
	struct sl_lpm_key k = { .prefixlen = 96 + plen };

	k.addr[10] = 0xff;
	k.addr[11] = 0xff;
	k.addr[12] = a;
	k.addr[13] = b;
	k.addr[14] = c;
	k.addr[15] = d;
	return k;
}

static void ipv4_row_is_mapped(void **state)
{
	static const uint8_t want[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 51, 100, 0 };
	struct sl_asn_table t;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(parse("198.51.100.0/24,64500,hosting\n", &t, err), 0);
	assert_string_equal(err, "");
	assert_int_equal(t.n, 1);
	assert_int_equal(t.replaced, 0);
	assert_int_equal(t.rows[0].key.prefixlen, 120);
	assert_memory_equal(t.rows[0].key.addr, want, 16);
	assert_int_equal(t.rows[0].val.asn, 64500);
	assert_int_equal(t.rows[0].val.class_id, HOSTING);
	assert_int_equal(t.rows[0].line, 1);
	sl_asn_free(&t);
	assert_null(t.rows);
	assert_int_equal(t.n, 0);
}

static void ipv6_row_is_plain(void **state)
{
	static const uint8_t want[16] = { 0x20, 0x01, 0x0d, 0xb8, 0x10, 0x00 };
	struct sl_asn_table t;
	char err[ERRLEN];

	(void)state;
	/* No trailing newline: the last line still counts. */
	assert_int_equal(parse("2001:db8:1000::/36,4294967295,residential", &t, err), 0);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.rows[0].key.prefixlen, 36);
	assert_memory_equal(t.rows[0].key.addr, want, 16);
	assert_int_equal(t.rows[0].val.asn, 4294967295u);
	assert_int_equal(t.rows[0].val.class_id, RESIDENTIAL);
	sl_asn_free(&t);
}

static void both_families_and_full_length_prefixes(void **state)
{
	struct sl_lpm_key k6 = { .prefixlen = 128 };
	struct sl_lpm_key k = v4key(192, 0, 2, 1, 32);
	struct sl_asn_table t;
	char err[ERRLEN];
	const struct sl_asn_entry *r;

	(void)state;
	assert_int_equal(parse("192.0.2.1,1,unknown\n"
			       "2001:db8::1,2,hosting\n"
			       "100.64.0.0/10,3,residential\n",
			       &t, err),
			 0);
	assert_int_equal(t.n, 3);
	r = row_for(&t, &k); /* a bare address is a /32 */
	assert_int_equal(r->val.asn, 1);
	assert_int_equal(r->val.class_id, UNKNOWN);
	k6.addr[0] = 0x20;
	k6.addr[1] = 0x01;
	k6.addr[2] = 0x0d;
	k6.addr[3] = 0xb8;
	k6.addr[15] = 1;
	r = row_for(&t, &k6);
	assert_int_equal(r->val.asn, 2);
	k = v4key(100, 64, 0, 0, 10);
	r = row_for(&t, &k);
	assert_int_equal(r->key.prefixlen, 106);
	assert_int_equal(r->val.asn, 3);
	assert_int_equal(r->line, 3);
	sl_asn_free(&t);
}

static void comments_blanks_whitespace_header_and_as_prefix(void **state)
{
	struct sl_lpm_key k = v4key(198, 51, 100, 0, 24), k6 = { .prefixlen = 32 };
	struct sl_asn_table t;
	char err[ERRLEN];
	const struct sl_asn_entry *r;
	const char *text = "# an ASN table\n"                        /* 1 */
			   "\n"                                      /* 2 */
			   "prefix,asn,class\n"                      /* 3 */
			   "   \t\n"                                 /* 4 */
			   "  198.51.100.0/24 ,  AS64500 ,\thosting  \n" /* 5 */
			   "    # an indented comment, with, commas\n" /* 6 */
			   "2001:db8::/32,as64501,residential\r\n"   /* 7 */
			   "203.0.113.0/24,0,unknown\n";             /* 8 */

	(void)state;
	assert_int_equal(parse(text, &t, err), 0);
	assert_string_equal(err, "");
	assert_int_equal(t.n, 3);
	r = row_for(&t, &k);
	assert_int_equal(r->val.asn, 64500);
	assert_int_equal(r->val.class_id, HOSTING);
	assert_int_equal(r->line, 5);
	k = v4key(203, 0, 113, 0, 24);
	r = row_for(&t, &k);
	assert_int_equal(r->val.asn, 0);
	assert_int_equal(r->line, 8);
	k6.addr[0] = 0x20;
	k6.addr[1] = 0x01;
	k6.addr[2] = 0x0d;
	k6.addr[3] = 0xb8;
	r = row_for(&t, &k6); /* the CRLF line */
	assert_int_equal(r->val.asn, 64501);
	assert_int_equal(r->val.class_id, RESIDENTIAL);
	assert_int_equal(r->line, 7);
	sl_asn_free(&t);
}

static void only_len_bytes_are_read(void **state)
{
	const char *text = "10.0.0.0/8,7,hosting\nthis is not a row";
	struct sl_asn_table t;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(sl_asn_parse("t.csv", text, strlen("10.0.0.0/8,7,hosting\n"), small(),
				      &t, err, sizeof(err)),
			 0);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.rows[0].val.asn, 7);
	sl_asn_free(&t);
}

static void later_duplicate_wins(void **state)
{
	struct sl_lpm_key k = v4key(198, 51, 100, 0, 24);
	struct sl_asn_table t;
	char err[ERRLEN];
	const struct sl_asn_entry *r;

	(void)state;
	assert_int_equal(parse("198.51.100.0/24,64500,hosting\n"
			       "203.0.113.0/24,64501,unknown\n"
			       "198.51.100.0/24,64999,residential\n"
			       "198.51.100.0/25,64998,hosting\n" /* same address, longer: kept */
			       "203.0.113.0/24,64502,unknown\n"
			       "203.0.113.0/24,64503,hosting\n",
			       &t, err),
			 0);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.replaced, 3);
	r = row_for(&t, &k);
	assert_int_equal(r->val.asn, 64999);
	assert_int_equal(r->val.class_id, RESIDENTIAL);
	assert_int_equal(r->line, 3);
	k = v4key(198, 51, 100, 0, 25);
	assert_int_equal(row_for(&t, &k)->val.asn, 64998);
	k = v4key(203, 0, 113, 0, 24);
	r = row_for(&t, &k);
	assert_int_equal(r->val.asn, 64503);
	assert_int_equal(r->val.class_id, HOSTING);
	assert_int_equal(r->line, 6);
	sl_asn_free(&t);
}

struct bad_row {
	const char *line;   /* placed on line 2, after a good row */
	const char *reason; /* expected right after "t.csv:2: " */
};

static const struct bad_row bad_rows[] = {
	{ "198.51.100.0/24,64500", "expected 3 fields prefix,asn,class (got 2)" },
	{ "198.51.100.0/24,64500,hosting,extra", "expected 3 fields prefix,asn,class (got 4)" },
	{ "198.51.100.0/24", "expected 3 fields prefix,asn,class (got 1)" },
	{ "198.51.100.0/24,,64500,hosting", "expected 3 fields prefix,asn,class (got 4)" },
	{ "198.51.100.0/24,64500,hosting,", "expected 3 fields prefix,asn,class (got 4)" },
	{ "198.51.100.0/24,,hosting", "empty field in '198.51.100.0/24,,hosting'" },
	{ "not-an-address/24,64500,hosting", "'not-an-address' is not an IPv4 or IPv6 address" },
	{ "198.51.100.256/24,64500,hosting", "'198.51.100.256' is not an IPv4 or IPv6 address" },
	{ "/24,64500,hosting", "'/24' is not an address" },
	{ "198.51.100.7/24,64500,hosting",
	  "'198.51.100.7/24' has host bits set (did you mean 198.51.100.0/24?)" },
	{ "2001:db8:1:2::/32,64500,hosting",
	  "'2001:db8:1:2::/32' has host bits set (did you mean 2001:db8::/32?)" },
	{ "198.51.100.0/33,64500,hosting", "'198.51.100.0/33': prefix length must be 0..32" },
	{ "2001:db8::/129,64500,hosting", "'2001:db8::/129': prefix length must be 0..128" },
	{ "198.51.100.0/x,64500,hosting", "'198.51.100.0/x': prefix length must be 0..32" },
	{ "0.0.0.0/0,64500,hosting", "'0.0.0.0/0': a /0 row would type the whole Internet" },
	{ "::/0,64500,hosting", "'::/0': a /0 row would type the whole Internet" },
	{ "198.51.100.0/24,sixty,hosting", "'sixty' is not an AS number (0..4294967295)" },
	{ "198.51.100.0/24,64500x,hosting", "'64500x' is not an AS number" },
	{ "198.51.100.0/24,AS,hosting", "'' is not an AS number" },
	{ "198.51.100.0/24,-1,hosting", "'-1' is not an AS number" },
	{ "198.51.100.0/24,AS-5,hosting", "'-5' is not an AS number" },
	{ "198.51.100.0/24,4294967296,hosting", "'4294967296' is not an AS number" },
	{ "198.51.100.0/24,99999999999999999999999,hosting",
	  "'99999999999999999999999' is not an AS number" },
	{ "198.51.100.0/24,64500,gaming", "class 'gaming' is not defined in the config\n" },
	{ "198.51.100.0/24,64500,Hosting", "class 'Hosting' is not defined in the config\n" },
	{ "prefix,asn,class", "'prefix' is not an IPv4 or IPv6 address" }, /* header not first */
};

static void expect_rejected(const char *what, const char *text, const char *want_line)
{
	struct sl_asn_table t;
	char err[ERRLEN];
	int ret;

	memset(&t, 0x5a, sizeof(t)); /* whatever the caller had is not read */
	ret = parse(text, &t, err);
	if (ret != -EINVAL)
		fail_msg("%s: expected -EINVAL, got %d", what, ret);
	assert_int_equal(t.n, 0);
	assert_null(t.rows);
	assert_int_equal(t.replaced, 0);
	if (strncmp(err, want_line, strlen(want_line)) || count_lines(err) != 1)
		fail_msg("%s: expected one line starting \"%s\", got:\n%s", what, want_line, err);
}

static void bad_lines_are_reported_with_their_line(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_rows) / sizeof(bad_rows[0]); i++) {
		char text[512], want[512];

		snprintf(text, sizeof(text), "10.0.0.0/8,1,hosting\n%s\n10.1.0.0/16,2,unknown\n",
			 bad_rows[i].line);
		snprintf(want, sizeof(want), "t.csv:2: %s", bad_rows[i].reason);
		expect_rejected(bad_rows[i].line, text, want);
	}
}

static void long_lines_are_rejected(void **state)
{
	char text[2048];
	struct sl_asn_table t;
	char err[ERRLEN];
	int n;

	(void)state;
	/* 511 bytes (a row padded with spaces) is the longest line accepted. */
	n = snprintf(text, sizeof(text), "# comment\n%-511s\n", "10.0.0.0/8,1,hosting");
	assert_int_equal(n, 10 + 511 + 1);
	assert_int_equal(parse(text, &t, err), 0);
	assert_int_equal(t.n, 1);
	sl_asn_free(&t);

	/* 512 is one too many, even for a comment; the next line is still read and numbered. */
	snprintf(text, sizeof(text), "10.0.0.0/8,1,hosting\n#%511s\n10.1.0.0/16,1,gaming\n", "x");
	assert_int_equal(parse(text, &t, err), -EINVAL);
	assert_null(t.rows);
	assert_int_equal(t.n, 0);
	assert_string_equal(err, "t.csv:2: line longer than 511 bytes\n"
				 "t.csv:3: class 'gaming' is not defined in the config\n");
}

static void every_bad_line_up_to_ten_is_listed(void **state)
{
	char text[4096], want[64];
	struct sl_asn_table t;
	char err[ERRLEN];
	size_t used = 0;
	int i, bad = 0;

	(void)state;
	/* 30 lines: every odd line good, every even line bad, so 15 problems. */
	for (i = 1; i <= 30; i++) {
		if (i % 2)
			used += (size_t)snprintf(text + used, sizeof(text) - used,
						 "10.%d.0.0/16,%d,hosting\n", i, i);
		else
			used += (size_t)snprintf(text + used, sizeof(text) - used,
						 "10.%d.0.0/16,%d,nosuch\n", i, i);
	}
	assert_int_equal(parse(text, &t, err), -EINVAL);
	assert_null(t.rows);
	assert_int_equal(t.n, 0);
	assert_int_equal(count_lines(err), 11);
	for (i = 2; i <= 30; i += 2) {
		snprintf(want, sizeof(want), "t.csv:%d: class 'nosuch'", i);
		if (++bad <= 10)
			assert_contains(err, want);
		else if (strstr(err, want))
			fail_msg("line %d is past the ten listed problems, yet listed:\n%s", i, err);
	}
	assert_contains(err, "t.csv: ... and 5 more problems\n");
	/* The summary is the last line. */
	assert_non_null(strstr(err, "t.csv:20: "));
	assert_true(strstr(err, "t.csv: ... and") > strstr(err, "t.csv:20: "));
}

static void exactly_ten_problems_have_no_summary(void **state)
{
	char text[4096];
	struct sl_asn_table t;
	char err[ERRLEN];
	size_t used = 0;
	int i;

	(void)state;
	for (i = 1; i <= 10; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, "10.%d.0.1/16,1,hosting\n",
					 i);
	assert_int_equal(parse(text, &t, err), -EINVAL);
	assert_int_equal(count_lines(err), 10);
	assert_contains(err, "t.csv:10: '10.10.0.1/16' has host bits set");
	assert_null(strstr(err, "more problems"));

	/* And eleven have a summary of one. */
	snprintf(text + used, sizeof(text) - used, "bogus\n");
	assert_int_equal(parse(text, &t, err), -EINVAL);
	assert_int_equal(count_lines(err), 11);
	assert_contains(err, "t.csv: ... and 1 more problems\n");
}

static void sample_table_loads(void **state)
{
	static const char *const classes[] = { "hosting", "residential", "mobile", "business",
					       "unknown", NULL };
	static struct sl_config c;
	struct sl_lpm_key k = v4key(100, 64, 0, 0, 10);
	char path[PATH_MAX], exe[PATH_MAX], err[ERRLEN];
	struct sl_asn_table t;
	const struct sl_asn_entry *r;
	ssize_t len;

	(void)state;
	load_classes(&c, classes);
	snprintf(path, sizeof(path), "examples/asn-sample.csv");
	if (access(path, R_OK)) { /* not run from the top of the tree: find it from the binary */
		len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		assert_true(len > 0);
		exe[len] = '\0';
		while (access(path, R_OK)) {
			char *slash = strrchr(exe, '/');

			if (!slash)
				fail_msg("cannot find examples/asn-sample.csv");
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/examples/asn-sample.csv", exe);
		}
	}
	assert_int_equal(sl_asn_load_csv(path, &c, &t, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(t.n, 8);
	assert_int_equal(t.replaced, 0);
	r = row_for(&t, &k);
	assert_int_equal(r->key.prefixlen, 106);
	assert_int_equal(r->val.asn, 64503);
	assert_int_equal(r->val.class_id, sl_config_class(&c, "mobile"));
	assert_int_equal(r->line, 8);
	k = v4key(192, 0, 2, 0, 24);
	assert_int_equal(row_for(&t, &k)->val.class_id, sl_config_class(&c, "business"));
	sl_asn_free(&t);

	/* The small config has no "mobile": the whole file is refused, naming both lines. */
	assert_int_equal(sl_asn_load_csv(path, small(), &t, err, sizeof(err)), -EINVAL);
	assert_null(t.rows);
	assert_int_equal(count_lines(err), 4);
	{
		char want[PATH_MAX + 64];

		snprintf(want, sizeof(want), "%s:8: class 'mobile' is not defined in the config\n",
			 path);
		assert_contains(err, want);
		snprintf(want, sizeof(want), "%s:11: class 'business'", path);
		assert_contains(err, want);
	}
}

static void load_csv_names_the_file(void **state)
{
	char path[256], want[320], err[ERRLEN];
	struct sl_asn_table t;
	int ret;

	(void)state;
	snprintf(path, sizeof(path), "%s",
		 tmpfile_with("asn", "198.51.100.0/24,64500,hosting\n198.51.100.1/24,1,hosting\n"));
	ret = sl_asn_load_csv(path, small(), &t, err, sizeof(err));
	unlink(path);
	assert_int_equal(ret, -EINVAL);
	assert_null(t.rows);
	snprintf(want, sizeof(want), "%s:2: '198.51.100.1/24' has host bits set (did you mean "
		 "198.51.100.0/24?)\n", path);
	assert_string_equal(err, want);
}

static void missing_file_cannot_be_read(void **state)
{
	struct sl_asn_table t;
	char err[ERRLEN];

	(void)state;
	memset(&t, 0x5a, sizeof(t));
	assert_int_equal(sl_asn_load_csv("/nonexistent/asn.csv", small(), &t, err, sizeof(err)),
			 -ENOENT);
	assert_string_equal(err, "/nonexistent/asn.csv: cannot read: No such file or directory\n");
	assert_null(t.rows);
	assert_int_equal(t.n, 0);
}

/* ---- the IPv6 table (sl_asn6_build / sl_asn6_walk) against a brute-force longest match ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 11);
}

static bool covers(const struct sl_lpm_key *k, const uint8_t *a, uint32_t plen)
{
	uint32_t full = plen / 8, rest = plen % 8;

	if (memcmp(k->addr, a, full))
		return false;
	return !rest || !((k->addr[full] ^ a[full]) & (0xff00u >> rest));
}

/* The trie's answer: the class of the longest row covering @a, or @unknown. */
static uint32_t brute_class(const struct sl_asn_table *t, const uint8_t *a, uint32_t unknown)
{
	uint32_t best = 0, cls = unknown;
	size_t i;

	for (i = 0; i < t->n; i++) {
		const struct sl_lpm_key *k = &t->rows[i].key;

		if (k->prefixlen >= best && covers(k, a, k->prefixlen)) {
			best = k->prefixlen;
			cls = t->rows[i].val.class_id;
		}
	}
	return cls;
}

/* Whether the /48 of @a holds a row longer than /48: the sources the table leaves to the trie. */
static bool long_row_in_48(const struct sl_asn_table *t, const uint8_t *a)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->rows[i].key.prefixlen > SL_V6_LEAF_PLEN && covers(&t->rows[i].key, a, 48))
			return true;
	return false;
}

static void add_row(struct sl_asn_table *t, const uint8_t *addr, uint32_t plen, uint32_t cls)
{
	struct sl_asn_entry e;
	uint32_t b;
	size_t i;

	memset(&e, 0, sizeof(e));
	memcpy(e.key.addr, addr, 16);
	for (b = plen; b < 128; b++) /* host bits off, as the parser leaves them */
		e.key.addr[b / 8] &= (uint8_t)~(0x80u >> (b % 8));
	e.key.prefixlen = plen;
	e.val.class_id = cls;
	e.val.asn = 64496 + (uint32_t)t->n;
	for (i = 0; i < t->n; i++)
		if (!memcmp(&t->rows[i].key, &e.key, sizeof(e.key)))
			return; /* the parser keeps one row per prefix */
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->rows = realloc(t->rows, t->cap * sizeof(*t->rows));
		assert_non_null(t->rows);
	}
	e.line = t->n + 1;
	t->rows[t->n++] = e;
}

/* An address near one of a few hot spots, so that rows nest and neighbour each other. */
static void hot_addr(uint8_t *a)
{
	static const uint8_t spots[4][6] = { { 0x20, 0x01, 0x0d, 0xb8, 0x10, 0x00 },
					     { 0x2a, 0x02, 0x00, 0x00, 0x00, 0x00 },
					     { 0x24, 0x00, 0xcb, 0x00, 0xff, 0xf0 },
					     { 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 } };
	int i, s = (int)(rnd() % 4), keep = (int)(rnd() % 7);

	for (i = 0; i < 16; i++)
		a[i] = (uint8_t)rnd();
	memcpy(a, spots[s], (size_t)keep);
	if (s == 3 && rnd() % 2) { /* IPv4-mapped, as the trie holds IPv4 rows */
		memset(a, 0, 10);
		a[10] = a[11] = 0xff;
	}
}

static uint32_t rand_plen(void)
{
	static const uint32_t lens[] = { 1, 3, 12, 16, 17, 19, 20, 24, 29, 31, 32, 33, 36, 40,
					 44, 45, 47, 48, 49, 52, 56, 64, 100, 120, 128 };

	return lens[rnd() % (sizeof(lens) / sizeof(lens[0]))];
}

/* Every sampled address: the table's class is the trie's, or the table defers to the trie
 * exactly where a longer row sits in the address's /48 (or the pool ran out). */
static void check_table(const struct sl_asn_table *t, uint32_t cap, uint32_t unknown,
			int samples, uint32_t *overflow)
{
	size_t words = SL_V6_ROOT + (size_t)cap * SL_V6_FANOUT;
	uint32_t *w = calloc(words, sizeof(*w));
	struct sl_asn6_stats st;
	int nodes, i, deferred = 0;

	assert_non_null(w);
	nodes = sl_asn6_build(w, cap, t, unknown, &st);
	assert_true(nodes >= 0 && (uint32_t)nodes <= cap);
	assert_int_equal(st.nodes, (uint32_t)nodes);
	for (i = 0; i < samples; i++) {
		uint8_t a[16];
		uint32_t got, want;

		if (i % 3 == 0 && t->n) { /* a row's first address, or the one just past its end */
			const struct sl_lpm_key *k = &t->rows[rnd() % t->n].key;
			uint32_t b;

			memcpy(a, k->addr, 16);
			if (rnd() % 2) {
				for (b = k->prefixlen; b < 128; b++)
					a[b / 8] |= (uint8_t)(0x80u >> (b % 8));
				for (b = 16; b-- > 0 && ++a[b] == 0;)
					;
			}
		} else {
			hot_addr(a);
		}
		got = sl_asn6_walk(w, words, a);
		want = brute_class(t, a, unknown);
		if (got == SL_DIR_USE_TRIE) {
			deferred++;
			if (!st.overflow && !long_row_in_48(t, a))
				fail_msg("sample %d deferred to the trie with no longer row in its /48", i);
			continue;
		}
		if (got != want)
			fail_msg("sample %d: table says class %u, the trie %u", i, got, want);
		if (!st.overflow && long_row_in_48(t, a))
			fail_msg("sample %d: a longer row in its /48, but the table answered", i);
	}
	assert_true(deferred < samples);
	*overflow = st.overflow;
	free(w);
}

static void ipv6_table_matches_the_trie(void **state)
{
	int round;

	(void)state;
	for (round = 0; round < 40; round++) {
		struct sl_asn_table t = { 0 };
		int i, rows = 1 + (int)(rnd() % 300);
		uint32_t overflow;

		for (i = 0; i < rows; i++) {
			uint8_t a[16];

			hot_addr(a);
			add_row(&t, a, rand_plen(), rnd() % 15);
		}
		check_table(&t, SL_V6_NODES, (uint32_t)round % 15, 3000, &overflow);
		assert_int_equal(overflow, 0);
		sl_asn_free(&t);
	}
}

static void ipv6_table_edges(void **state)
{
	struct sl_asn_table t = { 0 };
	size_t words = SL_V6_ROOT + (size_t)64 * SL_V6_FANOUT;
	uint32_t *w = calloc(words, sizeof(*w));
	struct sl_asn6_stats st;
	uint8_t a[16] = { 0x20, 0x01, 0x0d, 0xb8 }, b[16], m[16] = { 0 };

	(void)state;
	assert_non_null(w);
	/* No rows: every source is unknown, no node is made. */
	assert_int_equal(sl_asn6_build(w, 64, &t, UNKNOWN, &st), 0);
	assert_int_equal(sl_asn6_walk(w, words, a), UNKNOWN);

	add_row(&t, a, 32, HOSTING);     /* 2001:db8::/32 hosting */
	a[4] = 0x12;
	add_row(&t, a, 48, RESIDENTIAL); /* 2001:db8:1200::/48 residential */
	a[6] = 0x80;
	add_row(&t, a, 64, HOSTING);     /* 2001:db8:1200:8000::/64: the /48 goes to the trie */
	m[10] = m[11] = 0xff;
	m[12] = 198;
	add_row(&t, m, 120, HOSTING);    /* ::ffff:198.0.0.0/120, an IPv4 row */
	/* Four nodes down to the /32, four more to the /48 (its /64 only marks it), eight down to
	 * ::/48 for the IPv4 row. */
	assert_int_equal(sl_asn6_build(w, 64, &t, UNKNOWN, &st), 4 + 4 + 8);
	assert_int_equal(st.trie_48s, 2); /* 2001:db8:1200::/48 and ::/48 */
	assert_int_equal(st.overflow, 0);
	memcpy(b, a, 16);
	b[4] = 0x13;
	assert_int_equal(sl_asn6_walk(w, words, b), HOSTING);         /* in the /32 only */
	assert_int_equal(sl_asn6_walk(w, words, a), SL_DIR_USE_TRIE); /* the /48 with a /64 */
	b[0] = 0x20;
	b[1] = 0x02;
	assert_int_equal(sl_asn6_walk(w, words, b), UNKNOWN);
	assert_int_equal(sl_asn6_walk(w, words, m), SL_DIR_USE_TRIE);

	/* A pool of 3 nodes: the subtree that found it full is left to the trie, the rest
	 * still answers. */
	assert_int_equal(sl_asn6_build(w, 3, &t, UNKNOWN, &st), 3);
	assert_true(st.overflow > 0);
	a[6] = 0;
	assert_int_equal(sl_asn6_walk(w, SL_V6_ROOT + 3 * SL_V6_FANOUT, a), SL_DIR_USE_TRIE);
	b[0] = 0x20;
	b[1] = 0x02;
	assert_int_equal(sl_asn6_walk(w, SL_V6_ROOT + 3 * SL_V6_FANOUT, b), UNKNOWN);
	sl_asn_free(&t);
	free(w);
}

static void ipv6_table_full_pool_stays_correct(void **state)
{
	int round;

	(void)state;
	for (round = 0; round < 20; round++) {
		struct sl_asn_table t = { 0 };
		uint32_t overflow;
		int i;

		for (i = 0; i < 200; i++) {
			uint8_t a[16];

			hot_addr(a);
			add_row(&t, a, rand_plen(), rnd() % 15);
		}
		check_table(&t, 1 + (uint32_t)round, UNKNOWN, 2000, &overflow);
		assert_true(overflow > 0);
		sl_asn_free(&t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ipv4_row_is_mapped),
		cmocka_unit_test(ipv6_row_is_plain),
		cmocka_unit_test(both_families_and_full_length_prefixes),
		cmocka_unit_test(comments_blanks_whitespace_header_and_as_prefix),
		cmocka_unit_test(only_len_bytes_are_read),
		cmocka_unit_test(later_duplicate_wins),
		cmocka_unit_test(bad_lines_are_reported_with_their_line),
		cmocka_unit_test(long_lines_are_rejected),
		cmocka_unit_test(every_bad_line_up_to_ten_is_listed),
		cmocka_unit_test(exactly_ten_problems_have_no_summary),
		cmocka_unit_test(sample_table_loads),
		cmocka_unit_test(load_csv_names_the_file),
		cmocka_unit_test(missing_file_cannot_be_read),
		cmocka_unit_test(ipv6_table_matches_the_trie),
		cmocka_unit_test(ipv6_table_edges),
		cmocka_unit_test(ipv6_table_full_pool_stays_correct),
	};

	return cmocka_run_group_tests_name("asn", tests, NULL, NULL);
}
