// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The importer (user/lib/asn_import.c): ranges cut into exact prefixes (single addresses, the
 * whole space, IPv6, the worst cases), the class map's syntax, errors and precedence, the
 * iptoasn TSV and ASN CSV readers with their file:line errors, overlaps and neighbours
 * resolved, and the table written read back by the loader sluiced uses.
 */
#include "unit.h"

#include <errno.h>

#include "asn.h"
#include "asn_import.h"
#include "config.h"

#define ERRLEN 8192

static struct sl_config cfg;

static const struct sl_config *conf(void)
{
	static int loaded;
	char err[ERRLEN], path[256];

	if (!loaded) {
		snprintf(path, sizeof(path), "%s", tmpfile_with("impcfg",
			"edge: { interfaces = [\"eth0\"]; ports = ( { port = 443; } ); };\n"
			"classes = (\n"
			"  { name = \"hosting\"; rate = 1.0; burst = 5.0; },\n"
			"  { name = \"residential\"; rate = 1.0; burst = 5.0; },\n"
			"  { name = \"mobile\"; rate = 1.0; burst = 5.0; },\n"
			"  { name = \"business\"; rate = 1.0; burst = 5.0; },\n"
			"  { name = \"unknown\"; rate = 1.0; burst = 5.0; }\n);\n"));
		if (sl_config_load(path, NULL, &cfg, err, sizeof(err)))
			fail_msg("config: %s", err);
		unlink(path);
		loaded = 1;
	}
	return &cfg;
}

static sl_u128 a2u(const char *s)
{
	uint8_t fam;
	sl_u128 v;

	assert_int_equal(sl_addr_to_u128(s, &fam, &v), 0);
	return v;
}

/* The prefixes of [lo, hi] as "p1 p2 ..." */
static const char *cidrs(uint8_t fam, const char *lo, const char *hi)
{
	static char out[8192];
	struct sl_prefix p[SL_CIDR_MAX];
	char b[64];
	size_t used = 0;
	int n = sl_range_to_cidrs(fam, a2u(lo), a2u(hi), p), i;

	out[0] = '\0';
	if (n < 0) {
		snprintf(out, sizeof(out), "error %d", n);
		return out;
	}
	for (i = 0; i < n; i++)
		used += (size_t)snprintf(out + used, sizeof(out) - used, "%s%s", i ? " " : "",
					 sl_prefix_str(&p[i], b, sizeof(b)));
	return out;
}

static void test_cidr_single_and_aligned(void **state)
{
	(void)state;
	assert_string_equal(cidrs(SL_FAM_V4, "192.0.2.7", "192.0.2.7"), "192.0.2.7/32");
	assert_string_equal(cidrs(SL_FAM_V4, "255.255.255.255", "255.255.255.255"),
			    "255.255.255.255/32");
	assert_string_equal(cidrs(SL_FAM_V4, "0.0.0.0", "0.0.0.0"), "0.0.0.0/32");
	assert_string_equal(cidrs(SL_FAM_V4, "1.0.0.0", "1.0.0.255"), "1.0.0.0/24");
	assert_string_equal(cidrs(SL_FAM_V4, "1.0.4.0", "1.0.7.255"), "1.0.4.0/22");
	assert_string_equal(cidrs(SL_FAM_V6, "2001:db8::1", "2001:db8::1"), "2001:db8::1/128");
	assert_string_equal(cidrs(SL_FAM_V6, "2001::", "2001::ffff:ffff:ffff:ffff:ffff:ffff"),
			    "2001::/32");
	assert_string_equal(cidrs(SL_FAM_V6, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
				  "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
			    "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128");
}

static void test_cidr_whole_space(void **state)
{
	(void)state;
	assert_string_equal(cidrs(SL_FAM_V4, "0.0.0.0", "255.255.255.255"), "0.0.0.0/0");
	assert_string_equal(cidrs(SL_FAM_V6, "::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
			    "::/0");
	assert_string_equal(cidrs(SL_FAM_V4, "128.0.0.0", "255.255.255.255"), "128.0.0.0/1");
	assert_string_equal(cidrs(SL_FAM_V6, "8000::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
			    "8000::/1");
}

static void test_cidr_unaligned(void **state)
{
	struct sl_prefix p[SL_CIDR_MAX];

	(void)state;
	assert_string_equal(cidrs(SL_FAM_V4, "10.0.0.1", "10.0.0.6"),
			    "10.0.0.1/32 10.0.0.2/31 10.0.0.4/31 10.0.0.6/32");
	assert_string_equal(cidrs(SL_FAM_V4, "215.0.0.0", "215.1.3.255"),
			    "215.0.0.0/16 215.1.0.0/22");
	assert_string_equal(cidrs(SL_FAM_V6, "2001:db8::", "2001:db8::2"),
			    "2001:db8::/127 2001:db8::2/128");
	/* The worst cases: everything but the first and last address. */
	assert_int_equal(sl_range_to_cidrs(SL_FAM_V4, 1, 0xfffffffe, p), 62);
	assert_int_equal(p[0].plen, 32);
	/* 64.0.0.0/2 and 128.0.0.0/2 meet in the middle: no /1 fits. */
	assert_int_equal(p[30].plen, 2);
	assert_int_equal(p[31].plen, 2);
	assert_int_equal(p[61].plen, 32);
	assert_int_equal(sl_range_to_cidrs(SL_FAM_V6, 1, ~(sl_u128)0 - 1, p), 254);
	assert_int_equal(p[0].plen, 128);
	assert_int_equal(p[1].plen, 127);
	assert_int_equal(p[253].plen, 128);
}

static void test_cidr_refused(void **state)
{
	struct sl_prefix p[SL_CIDR_MAX];

	(void)state;
	assert_int_equal(sl_range_to_cidrs(SL_FAM_V4, 5, 4, p), -EINVAL);
	assert_int_equal(sl_range_to_cidrs(SL_FAM_V4, 0, (sl_u128)1 << 32, p), -EINVAL);
	assert_int_equal(sl_range_to_cidrs(7, 0, 1, p), -EINVAL);
}

/* Random IPv4 ranges: the prefixes are aligned, in order, touch each other, cover exactly
 * [lo, hi], and each is as large as alignment and @hi allow (so the list is the shortest). */
static void test_cidr_random_exact(void **state)
{
	struct sl_prefix p[SL_CIDR_MAX];
	int k;

	(void)state;
	srand(7);
	for (k = 0; k < 20000; k++) {
		uint32_t a = (uint32_t)rand() * 2654435761u ^ (uint32_t)rand();
		uint32_t b = a + ((uint32_t)rand() % (k % 2 ? 70000u : 300u));
		uint64_t next, lo = a, hi = b < a ? 0xffffffffu : b;
		int n = sl_range_to_cidrs(SL_FAM_V4, lo, hi, p), i;

		assert_true(n > 0 && n <= 62);
		next = lo;
		for (i = 0; i < n; i++) {
			uint64_t start = ((uint64_t)p[i].addr[0] << 24) | (p[i].addr[1] << 16) |
					 (p[i].addr[2] << 8) | p[i].addr[3];
			uint64_t size = 1ull << (32 - p[i].plen);

			assert_int_equal(start, next);
			assert_int_equal(start & (size - 1), 0);
			assert_true(start + size - 1 <= hi);
			/* Maximal: the next larger block is misaligned here or passes @hi. */
			if (p[i].plen > 0)
				assert_true((start & (2 * size - 1)) || start + 2 * size - 1 > hi);
			next = start + size;
		}
		assert_int_equal(next, hi + 1);
	}
}

/* ---- the class map ---------------------------------------------------------------------- */

static int map_of(const char *text, struct sl_classmap *m, char *err)
{
	return sl_classmap_parse("t.map", text, strlen(text), conf(), NULL, m, err, ERRLEN);
}

static const char *cls_name(const struct sl_classmap *m, const struct sl_net_facts *f)
{
	return m->classes[sl_classmap_classify(m, f)];
}

static void test_map_precedence(void **state)
{
	struct sl_classmap m;
	char err[ERRLEN];
	struct sl_net_facts f;

	(void)state;
	assert_int_equal(map_of("asn,class\n"
				"# hosting and cloud\n"
				"16509,hosting   # AWS\n"
				"AS21928,mobile\n"
				"org:*Hosting*,hosting\n"
				"org:Cloudflare, Inc.,hosting\n"
				"connection_type:Cellular,mobile\n"
				"connection_type:Cable/DSL,residential\n"
				"user_type:business,business\n"
				"flag:is_hosting_provider,hosting\n"
				"default,residential\n", &m, err), 0);
	assert_int_equal(m.n_asns, 2);
	f = (struct sl_net_facts){ .asn = 16509 };
	assert_string_equal(cls_name(&m, &f), "hosting");
	/* The AS number beats every rule. */
	f = (struct sl_net_facts){ .asn = 21928, .org = "Big Hosting", .conn_type = "Cable/DSL" };
	assert_string_equal(cls_name(&m, &f), "mobile");
	/* Then a flag, then user_type, then connection_type, then the organization. */
	f = (struct sl_net_facts){ .asn = 1, .conn_type = "Cellular", .flags = { "is_anonymous",
		"is_hosting_provider" } };
	assert_string_equal(cls_name(&m, &f), "hosting");
	f = (struct sl_net_facts){ .asn = 1, .conn_type = "Cellular", .user_type = "business" };
	assert_string_equal(cls_name(&m, &f), "business");
	f = (struct sl_net_facts){ .asn = 1, .org = "Tiny hosting Ltd", .conn_type = "cellular" };
	assert_string_equal(cls_name(&m, &f), "mobile");
	f = (struct sl_net_facts){ .asn = 1, .org = "tiny HOSTING ltd" };
	assert_string_equal(cls_name(&m, &f), "hosting");
	f = (struct sl_net_facts){ .asn = 13335, .org = "Cloudflare, Inc." };
	assert_string_equal(cls_name(&m, &f), "hosting");
	/* Nothing matches: the map's default. */
	f = (struct sl_net_facts){ .asn = 64500, .org = "Some ISP" };
	assert_string_equal(cls_name(&m, &f), "residential");
	sl_classmap_free(&m);

	/* No default line: unknown; --default overrides a default line. */
	assert_int_equal(map_of("64500,hosting\n", &m, err), 0);
	f = (struct sl_net_facts){ .asn = 64501 };
	assert_string_equal(cls_name(&m, &f), "unknown");
	sl_classmap_free(&m);
	assert_int_equal(sl_classmap_parse("t.map", "default,hosting\n", 16, conf(), "business",
					   &m, err, ERRLEN), 0);
	assert_string_equal(cls_name(&m, &f), "business");
	sl_classmap_free(&m);
}

static void test_map_errors(void **state)
{
	struct sl_classmap m;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(map_of("64500,hosting\n"
				"64501 hosting\n"
				"AS-1,hosting\n"
				"64502,cloud\n"
				"org:,hosting\n"
				"64500,mobile\n"
				"default,unknown\n"
				"default,hosting\n"
				"4294967296,hosting\n"
				"bogus:x,hosting\n", &m, err), -EINVAL);
	assert_contains(err, "t.map:2: expected KEY,CLASS");
	assert_contains(err, "t.map:3: 'AS-1' is neither an AS number");
	assert_contains(err, "t.map:4: class 'cloud' is not defined in the config");
	assert_contains(err, "t.map:5: 'org:' needs a value");
	assert_contains(err, "t.map:6: AS64500 is already mapped to hosting at line 1");
	assert_contains(err, "t.map:8: a second default (the first is at line 7)");
	assert_contains(err, "t.map:9: '4294967296' is neither");
	assert_contains(err, "t.map:10: 'bogus:x' is neither");
	assert_null(m.classes);
	/* The same class twice for one AS is not a conflict. */
	assert_int_equal(map_of("64500,hosting\n64500,hosting\n", &m, err), 0);
	assert_int_equal(m.n_asns, 1);
	sl_classmap_free(&m);
	/* An undefined --default is named as such. */
	assert_int_equal(sl_classmap_parse("t.map", "", 0, conf(), "nope", &m, err, ERRLEN),
			 -EINVAL);
	assert_contains(err, "--default: class 'nope' is not defined in the config");
}

/* ---- readers and the table -------------------------------------------------------------- */

static struct sl_classmap tmap;

static const struct sl_classmap *map(void)
{
	static int loaded;
	char err[ERRLEN];

	if (!loaded) {
		assert_int_equal(map_of("13335,hosting\n21928,mobile\norg:*DSL*,residential\n",
					&tmap, err), 0);
		loaded = 1;
	}
	return &tmap;
}

/* Parse @text as @fmt and build the table; the rows as "prefix asn class;" in @out. */
static int import(enum sl_imp_format fmt, const char *text, struct sl_imp_table *t, char *err,
		  char *out, size_t outlen)
{
	struct sl_imp_set s = { 0 };
	size_t i, used = 0;
	int ret;

	err[0] = '\0';
	out[0] = '\0';
	ret = sl_imp_parse_text(fmt == SL_IMP_TSV ? "t.tsv" : "t.csv", text, strlen(text), fmt,
				map(), &s, err, ERRLEN);
	if (!ret)
		ret = sl_imp_build(&s, t, err, ERRLEN);
	sl_imp_set_free(&s);
	for (i = 0; !ret && i < t->n; i++) {
		char b[64];

		used += (size_t)snprintf(out + used, outlen - used, "%s %u %s;",
					 sl_prefix_str(&t->rows[i].p, b, sizeof(b)), t->rows[i].asn,
					 map()->classes[t->rows[i].cls]);
	}
	return ret;
}

static void test_tsv_iptoasn(void **state)
{
	struct sl_imp_table t;
	char err[ERRLEN], out[4096];

	(void)state;
	assert_int_equal(import(SL_IMP_TSV,
		"0.0.0.0\t0.255.255.255\t0\tNone\tNot routed\n"
		"1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET\n"
		"1.0.1.0\t1.0.3.255\t64500\tCN\tSome DSL net\n"
		"2001:db8::\t2001:db8:0:ffff:ffff:ffff:ffff:ffff\t21928\tUS\tT-MOBILE-AS21928\n",
		&t, err, out, sizeof(out)), 0);
	assert_string_equal(out, "1.0.0.0/24 13335 hosting;1.0.1.0/24 64500 residential;"
			    "1.0.2.0/23 64500 residential;2001:db8::/48 21928 mobile;");
	assert_int_equal(t.v4, 3);
	assert_int_equal(t.v6, 1);
	sl_imp_table_free(&t);
}

static void test_csv_ip_location_db(void **state)
{
	struct sl_imp_table t;
	char err[ERRLEN], out[4096];

	(void)state;
	assert_int_equal(import(SL_IMP_CSV,
		"ip_range_start,ip_range_end,autonomous_system_number,autonomous_system_organization\n"
		"1.0.0.0,1.0.0.255,13335,\"Cloudflare, Inc.\"\n"
		"1.0.64.0,1.0.127.255,18144,\"Enecom,Inc.\"\n"
		"1.1.1.0,1.1.1.255,64501,\"The \"\"DSL\"\" people\"\n",
		&t, err, out, sizeof(out)), 0);
	assert_string_equal(out, "1.0.0.0/24 13335 hosting;1.0.64.0/18 18144 unknown;"
			    "1.1.1.0/24 64501 residential;");
	sl_imp_table_free(&t);
}

static void test_text_errors(void **state)
{
	struct sl_imp_table t;
	char err[ERRLEN], out[4096];

	(void)state;
	assert_int_equal(import(SL_IMP_CSV,
		"1.0.0.0,1.0.0.255,13335,Cloudflare\n"
		"1.0.0.0,1.0.0.255,13335\n"
		"1.0.0.x,1.0.0.255,13335,x\n"
		"1.0.0.0,2001:db8::,13335,x\n"
		"1.0.0.9,1.0.0.1,13335,x\n"
		"1.0.0.0,1.0.0.255,AS-5,x\n"
		"1.0.0.0,1.0.0.255,1,\"open\n"
		"16843008,16843263,1,numeric\n",
		&t, err, out, sizeof(out)), -EINVAL);
	assert_contains(err, "t.csv:2: expected 4 comma-separated fields");
	assert_contains(err, "t.csv:3: '1.0.0.x' is not an IPv4 or IPv6 address");
	assert_contains(err, "t.csv:4: '1.0.0.0' and '2001:db8::' are of different families");
	assert_contains(err, "t.csv:5: the range ends (1.0.0.1) before it starts (1.0.0.9)");
	assert_contains(err, "t.csv:6: 'AS-5' is not an AS number");
	assert_contains(err, "t.csv:7: a quoted field is not closed");
	assert_contains(err, "t.csv:8: '16843008' is not an IPv4 or IPv6 address");
	assert_null(strstr(err, "t.csv:1:"));
	assert_int_equal(import(SL_IMP_TSV, "1.0.0.0 1.0.0.255 13335 US CLOUDFLARENET\n", &t, err,
				out, sizeof(out)), -EINVAL);
	assert_contains(err, "t.tsv:1: expected 5 tab-separated fields");
}

static void test_overlaps_and_neighbours(void **state)
{
	struct sl_imp_table t;
	char err[ERRLEN], out[16384];

	(void)state;
	/* A /16 with a /24 of another AS inside: the /24 keeps its AS, the rest the /16's. */
	assert_int_equal(import(SL_IMP_CSV,
		"10.0.0.0,10.0.255.255,64500,a\n"
		"10.0.1.0,10.0.1.255,13335,b\n", &t, err, out, sizeof(out)), 0);
	assert_string_equal(out, "10.0.0.0/24 64500 unknown;10.0.1.0/24 13335 hosting;"
			    "10.0.2.0/23 64500 unknown;10.0.4.0/22 64500 unknown;"
			    "10.0.8.0/21 64500 unknown;10.0.16.0/20 64500 unknown;"
			    "10.0.32.0/19 64500 unknown;10.0.64.0/18 64500 unknown;"
			    "10.0.128.0/17 64500 unknown;");
	assert_int_equal(t.overlaps, 1);
	sl_imp_table_free(&t);
	/* Partial overlap (the dataset's 214.95/215.0 case): the narrower range wins the part
	 * they share. */
	assert_int_equal(import(SL_IMP_CSV,
		"10.0.0.0,10.0.2.255,64500,wide\n"
		"10.0.2.0,10.0.3.255,13335,narrow\n", &t, err, out, sizeof(out)), 0);
	assert_string_equal(out, "10.0.0.0/23 64500 unknown;10.0.2.0/23 13335 hosting;");
	sl_imp_table_free(&t);
	/* The same range twice: the later line wins. */
	assert_int_equal(import(SL_IMP_CSV,
		"10.0.0.0,10.0.0.255,64500,x\n"
		"10.0.0.0,10.0.0.255,21928,y\n", &t, err, out, sizeof(out)), 0);
	assert_string_equal(out, "10.0.0.0/24 21928 mobile;");
	sl_imp_table_free(&t);
	/* Neighbours of one AS and class merge (two /25 -> one /24; then /23); another AS
	 * next to them does not. */
	assert_int_equal(import(SL_IMP_CSV,
		"10.0.0.128,10.0.0.255,64500,x\n"
		"10.0.0.0,10.0.0.127,64500,x\n"
		"10.0.1.0,10.0.1.255,64500,x\n"
		"10.0.2.0,10.0.2.255,64501,x\n", &t, err, out, sizeof(out)), 0);
	assert_string_equal(out, "10.0.0.0/23 64500 unknown;10.0.2.0/24 64501 unknown;");
	sl_imp_table_free(&t);
	/* IPv6: nested and adjacent at the top of the space. */
	assert_int_equal(import(SL_IMP_CSV,
		"ffff::,ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff,64500,x\n"
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff,ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff,"
		"13335,y\n", &t, err, out, sizeof(out)), 0);
	assert_int_equal(t.n, 129 - 16);
	assert_contains(out, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128 13335 hosting;");
	assert_contains(out, "ffff::/17 64500 unknown;");
	sl_imp_table_free(&t);
}

static void test_whole_space_refused(void **state)
{
	struct sl_imp_table t;
	char err[ERRLEN], out[4096];

	(void)state;
	assert_int_equal(import(SL_IMP_CSV, "0.0.0.0,255.255.255.255,64500,x\n", &t, err, out,
				sizeof(out)), -EINVAL);
	assert_contains(err, "t.csv:1: the table would type all of IPv4 as one class");
	/* Two halves of one AS and class merge into the same /0. */
	assert_int_equal(import(SL_IMP_CSV,
		"::,7fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff,64500,x\n"
		"8000::,ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff,64500,x\n", &t, err, out,
		sizeof(out)), -EINVAL);
	assert_contains(err, "all of IPv6");
	/* A /0 with something narrower inside is no /0 row. */
	assert_int_equal(import(SL_IMP_CSV,
		"0.0.0.0,255.255.255.255,64500,x\n"
		"10.0.0.0,10.0.0.255,13335,y\n", &t, err, out, sizeof(out)), 0);
	assert_int_equal(t.n, 24 + 1); /* a sibling at each of /1../24, and the /24 */
	sl_imp_table_free(&t);
}

static void test_trie_24s(void **state)
{
	struct sl_imp_table t;
	char err[ERRLEN], out[4096];

	(void)state;
	assert_int_equal(import(SL_IMP_CSV,
		"10.0.0.0,10.0.0.127,64500,x\n"
		"10.0.0.128,10.0.0.255,64501,x\n"
		"10.0.1.0,10.0.1.255,64502,x\n"
		"10.0.2.16,10.0.2.31,64503,x\n", &t, err, out, sizeof(out)), 0);
	assert_int_equal(t.v4_long, 3);
	assert_int_equal(t.v4_trie_24s, 2);
	sl_imp_table_free(&t);
}

/* What import writes, sluiced's loader reads: the same rows and classes. */
static void test_written_table_loads(void **state)
{
	struct sl_imp_table t;
	struct sl_asn_table a;
	char err[ERRLEN], out[4096], path[] = "/tmp/sluice-unit-impout-XXXXXX";
	struct sl_prefix p;
	size_t i;
	FILE *f;
	int fd;

	(void)state;
	assert_int_equal(import(SL_IMP_CSV,
		"1.0.0.0,1.0.0.255,13335,\"Cloudflare, Inc.\"\n"
		"10.0.0.1,10.0.0.6,21928,x\n"
		"2001:db8::,2001:db8::ffff,64500,Some DSL\n", &t, err, out, sizeof(out)), 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_int_equal(sl_imp_write_csv(&t, map(), "t.csv", f), 0);
	fclose(f);
	if (sl_asn_load_csv(path, conf(), &a, err, sizeof(err)))
		fail_msg("the written table does not load:\n%s", err);
	unlink(path);
	assert_int_equal(a.n, t.n);
	assert_int_equal(a.n, 1 + 4 + 1);
	for (i = 0; i < a.n; i++) {
		sl_lpm_to_prefix(&a.rows[i].key, &p);
		if (p.family == SL_FAM_V4 && p.addr[0] == 1)
			assert_int_equal(a.rows[i].val.class_id, sl_config_class(conf(), "hosting"));
		else if (p.family == SL_FAM_V4)
			assert_int_equal(a.rows[i].val.class_id, sl_config_class(conf(), "mobile"));
		else
			assert_int_equal(a.rows[i].val.class_id,
					 sl_config_class(conf(), "residential"));
	}
	sl_asn_free(&a);
	sl_imp_table_free(&t);
}

static void test_detect(void **state)
{
	enum sl_imp_format f;
	char path[256];

	(void)state;
	assert_int_equal(sl_imp_detect("x.mmdb"), SL_IMP_MMDB);
	assert_int_equal(sl_imp_detect("ip2asn-v4.tsv"), SL_IMP_TSV);
	assert_int_equal(sl_imp_detect("asn-ipv4.csv"), SL_IMP_CSV);
	snprintf(path, sizeof(path), "%s", tmpfile_with("impdet", "1.0.0.0\t1.0.0.255\t1\tUS\tx\n"));
	assert_int_equal(sl_imp_detect(path), SL_IMP_TSV);
	unlink(path);
	assert_int_equal(sl_imp_format_parse("iptoasn", &f), 0);
	assert_int_equal(f, SL_IMP_TSV);
	assert_int_equal(sl_imp_format_parse("xml", &f), -EINVAL);
}

static void test_mmdb_not_one(void **state)
{
	struct sl_imp_set s = { 0 };
	char err[ERRLEN] = "";
	const char *p = tmpfile_with("impmmdb", "not a database\n");

	(void)state;
	assert_int_not_equal(sl_imp_read(p, SL_IMP_MMDB, map(), &s, err, sizeof(err)), 0);
	assert_contains(err, p);
	assert_contains(err, "MaxMind DB");
	unlink(p);
	sl_imp_set_free(&s);
}

static int teardown(void **state)
{
	(void)state;
	sl_classmap_free(&tmap);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cidr_single_and_aligned),
		cmocka_unit_test(test_cidr_whole_space),
		cmocka_unit_test(test_cidr_unaligned),
		cmocka_unit_test(test_cidr_refused),
		cmocka_unit_test(test_cidr_random_exact),
		cmocka_unit_test(test_map_precedence),
		cmocka_unit_test(test_map_errors),
		cmocka_unit_test(test_tsv_iptoasn),
		cmocka_unit_test(test_csv_ip_location_db),
		cmocka_unit_test(test_text_errors),
		cmocka_unit_test(test_overlaps_and_neighbours),
		cmocka_unit_test(test_whole_space_refused),
		cmocka_unit_test(test_trie_24s),
		cmocka_unit_test(test_written_table_loads),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_mmdb_not_one),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
