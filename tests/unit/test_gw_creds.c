// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The credential store: loading, lookups, every kind of bad line, and `user add`. */
#include "unit.h"

#include <argon2.h>
#include <errno.h>
#include <sodium.h>
#include <sys/stat.h>

#include "gw_creds.h"

static struct sl_config *cfg;

static int setup(void **state)
{
	(void)state;
	if (sodium_init() < 0)
		return -1;
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return -1;
	sl_config_defaults(cfg);
	cfg->gw.present = 1;
	cfg->gw.m_cost_kib = 64; /* tiny: the tests hash for real */
	cfg->gw.t_cost = 1;
	cfg->gw.parallelism = 1;
	snprintf(cfg->tenants[0].name, SL_TENANT_NAME_LEN, "acme");
	snprintf(cfg->tenants[1].name, SL_TENANT_NAME_LEN, "globex");
	cfg->n_tenants = 2;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(cfg);
	return 0;
}

static char phc[GW_PHC_MAX];

static const char *hash_of(const char *pw)
{
	assert_int_equal(gw_argon2_hash(&cfg->gw, pw, strlen(pw), phc, sizeof(phc)), 0);
	return phc;
}

static void loads_and_finds(void **state)
{
	struct gw_creds *s = NULL;
	char text[2048], e[1024];
	const char *p, *found;
	char h1[GW_PHC_MAX];

	(void)state;
	snprintf(h1, sizeof(h1), "%s", hash_of("pw1"));
	/* The third name was "\xc3\xa9l\xc3\xa8ve" before issue 14 (item 7) made names ASCII;
	 * a name with capitals is folded, as every name that enters is. */
	snprintf(text, sizeof(text), "# a comment\n\nacme,alice,%s\r\nglobex,alice,%s\n"
		 "acme,Bob.Smith+x@Example.test,%s", h1, hash_of("pw2"), h1);
	p = tmpfile_with("creds", text);
	chmod(p, 0600);
	assert_int_equal(gw_creds_load(p, cfg, &s, e, sizeof(e)), 0);
	assert_int_equal(gw_creds_count(s), 3);
	found = gw_creds_find(s, "acme", "alice", 5);
	assert_non_null(found);
	assert_int_equal(argon2id_verify(found, "pw1", 3), ARGON2_OK);
	found = gw_creds_find(s, "globex", "alice", 5);
	assert_non_null(found);
	assert_int_equal(argon2id_verify(found, "pw2", 3), ARGON2_OK);
	assert_non_null(gw_creds_find(s, "acme", "bob.smith+x@example.test", 24));
	/* Lookups take the folded name (callers fold what enters: gw_account_norm). */
	assert_null(gw_creds_find(s, "acme", "Bob.Smith+x@Example.test", 24));
	assert_null(gw_creds_find(s, "acme", "alic", 4));
	assert_null(gw_creds_find(s, "acme", "alicex", 6));
	assert_null(gw_creds_find(s, "initech", "alice", 5));
	gw_creds_free(s);
	unlink(p);
}

/* One problem per line, each with file:line; nothing is loaded. */
static void bad_lines_are_all_reported(void **state)
{
	struct gw_creds *s = NULL;
	char text[4096], e[4096];
	const char *p;
	struct sl_config big;

	(void)state;
	snprintf(text, sizeof(text),
		 "acme,alice,%s\n"                        /* 1 fine */
		 "acme alice\n"                           /* 2 no commas */
		 "initech,bob,%s\n"                       /* 3 unknown tenant */
		 "acme,,%s\n"                             /* 4 empty account */
		 "acme,bob,$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$aGFzaA\n" /* 5 not argon2id */
		 "acme,carol,$argon2id$v=19$m=64,t=1,p=1$$aGFzaA\n"       /* 6 empty salt */
		 "acme,alice,%s\n",                       /* 7 duplicate */
		 hash_of("x"), phc, phc, phc);
	p = tmpfile_with("creds", text);
	assert_int_equal(gw_creds_load(p, cfg, &s, e, sizeof(e)), -EINVAL);
	assert_null(s);
	assert_contains(e, ":2: expected tenant,account,PHC-string");
	assert_contains(e, ":3: tenant 'initech' is not in the config");
	assert_contains(e, ":4: the account name");
	assert_contains(e, ":5: not an Argon2id PHC string");
	assert_contains(e, ":6: not an Argon2id PHC string");
	assert_contains(e, ":7: account 'alice' of tenant 'acme' is listed twice (first on line 1)");
	unlink(p);

	/* A hash that needs more memory than the pool's per-hash budget. */
	big = *cfg;
	big.gw.m_cost_kib = 128;
	snprintf(text, sizeof(text), "acme,alice,%s\n", "$argon2id$v=19$m=1024,t=1,p=1$"
		 "c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA");
	p = tmpfile_with("creds", text);
	assert_int_equal(gw_creds_load(p, &big, &s, e, sizeof(e)), -EINVAL);
	assert_contains(e, ":1: hash needs 1024 KiB, above gateway.argon2.m_cost_kib 128");
	unlink(p);

	assert_int_equal(gw_creds_load("/nonexistent/creds", cfg, &s, e, sizeof(e)), -ENOENT);
	assert_contains(e, "/nonexistent/creds: cannot read");
}

/* No raw control, space or non-ASCII byte in a message but the newline after each problem. */
static void assert_clean_report(const char *e)
{
	const unsigned char *p;

	for (p = (const unsigned char *)e; *p; p++)
		if (*p != '\n' && (*p < 0x20 || *p >= 0x7f))
			fail_msg("raw byte 0x%02x in the report:\n%s", *p, e);
}

/* Names in the file: the set, folded, every problem with file:line and the name escaped. */
static void names_in_the_file(void **state)
{
	struct gw_creds *s = NULL;
	char text[4096], e[4096];
	const char *p;

	(void)state;
	hash_of("x");
	snprintf(text, sizeof(text),
		 "acme,alice,%s\n"                                   /* 1 fine */
		 "acme,mallory kind=reset_link to=bob,%s\n"          /* 2 spaces */
		 "acme,x\xe2\x80\xa8" "123 tenant=acme to=bob,%s\n"  /* 3 U+2028 */
		 "acme,x\xc2\x85y,%s\n"                              /* 4 U+0085 */
		 "acme,\xc3\xa9l\xc3\xa8ve,%s\n"                     /* 5 beyond ASCII */
		 "acme,a\rb,%s\n"                                    /* 6 a CR inside */
		 "ac\xe2\x80\xa9me,bob,%s\n"                         /* 7 a tenant with U+2029 */
		 "acme,-rf,%s\n"                                     /* 8 the first character */
		 "acme,ALICE,%s\n",                                  /* 9 alice again, folded */
		 phc, phc, phc, phc, phc, phc, phc, phc, phc);
	p = tmpfile_with("creds", text);
	assert_int_equal(gw_creds_load(p, cfg, &s, e, sizeof(e)), -EINVAL);
	assert_null(s);
	assert_contains(e, ":2: the account name 'mallory\\x20kind=reset_link\\x20to=bob' is not "
			GW_ACCOUNT_RULE);
	assert_contains(e, ":3: the account name 'x\\xe2\\x80\\xa8123\\x20tenant=acme\\x20to=bob'");
	assert_contains(e, ":4: the account name 'x\\xc2\\x85y'");
	assert_contains(e, ":5: the account name '\\xc3\\xa9l\\xc3\\xa8ve'");
	assert_contains(e, ":6: the account name 'a\\x0db'");
	assert_contains(e, ":7: tenant 'ac\\xe2\\x80\\xa9me' is not in the config");
	assert_contains(e, ":8: the account name '-rf'");
	assert_contains(e, ":9: account 'alice' of tenant 'acme' is listed twice (first on line "
			"1): names are compared in lowercase");
	assert_clean_report(e);
	unlink(p);
}

static void names_fold_and_check(void **state)
{
	char a[] = "Alice.O-Neil+1@Example.TEST", bad[] = "Al ice";

	(void)state;
	assert_true(gw_account_norm(a, strlen(a)));
	assert_string_equal(a, "alice.o-neil+1@example.test");
	assert_true(gw_account_canonical(a, strlen(a)));
	assert_false(gw_account_canonical("Alice", 5));
	assert_false(gw_account_norm(bad, strlen(bad)));
	assert_string_equal(bad, "Al ice"); /* refused: left as it was */
	assert_false(gw_account_canonical("a b", 3));
	assert_false(gw_account_canonical("", 0));
}

static void phc_params(void **state)
{
	uint32_t m, t, p;

	(void)state;
	assert_int_equal(gw_phc_params("$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA", &m, &t,
				       &p), 0);
	assert_int_equal(m, 65536);
	assert_int_equal(t, 3);
	assert_int_equal(p, 4);
	assert_int_not_equal(gw_phc_params("$argon2id$v=16$m=64,t=1,p=1$c2FsdA$aGFzaA", &m, &t,
					   &p), 0);
	assert_int_not_equal(gw_phc_params("$argon2id$v=19$m=64,t=1$c2FsdA$aGFzaA", &m, &t, &p),
			     0);
	assert_int_not_equal(gw_phc_params("$argon2id$v=19$m=64,t=1,p=1$c2FsdA", &m, &t, &p),
			     0);
	assert_int_not_equal(gw_phc_params("$argon2id$v=19$m=0,t=1,p=1$c2FsdA$aGFzaA", &m, &t,
					   &p), 0);
}

static void user_add_appends_once(void **state)
{
	char path[] = "/tmp/sluice-unit-useradd-XXXXXX", e[2048];
	struct gw_creds *s = NULL;
	struct stat st;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	unlink(path); /* add creates it */
	assert_int_equal(gw_creds_add(path, cfg, "acme", "alice", "pw", 2, e, sizeof(e)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(gw_creds_add(path, cfg, "acme", "bob", "pw2", 3, e, sizeof(e)), 0);
	assert_int_equal(gw_creds_add(path, cfg, "acme", "alice", "pw", 2, e, sizeof(e)),
			 -EEXIST);
	assert_contains(e, "already exists");
	assert_int_equal(gw_creds_add(path, cfg, "initech", "x", "pw", 2, e, sizeof(e)),
			 -ENOENT);
	assert_int_equal(gw_creds_add(path, cfg, "acme", "a,b", "pw", 2, e, sizeof(e)),
			 -EINVAL);
	assert_int_equal(gw_creds_add(path, cfg, "acme", "c", "", 0, e, sizeof(e)), -EINVAL);
	/* Names are folded on the way in, so "Carol" is carol, and CAROL is her again. */
	assert_int_equal(gw_creds_add(path, cfg, "acme", "Carol", "pw3", 3, e, sizeof(e)), 0);
	assert_int_equal(gw_creds_add(path, cfg, "acme", "CAROL", "pw", 2, e, sizeof(e)),
			 -EEXIST);
	assert_int_equal(gw_creds_add(path, cfg, "acme", "mallory to=bob", "pw", 2, e,
				      sizeof(e)), -EINVAL);
	assert_contains(e, "the account name 'mallory\\x20to=bob' is not " GW_ACCOUNT_RULE);
	assert_int_equal(gw_creds_add(path, cfg, "acme", "x\xe2\x80\xa8y", "pw", 2, e,
				      sizeof(e)), -EINVAL);
	assert_contains(e, "'x\\xe2\\x80\\xa8y'");
	assert_int_equal(gw_creds_load(path, cfg, &s, e, sizeof(e)), 0);
	assert_int_equal(gw_creds_count(s), 3);
	assert_int_equal(argon2id_verify(gw_creds_find(s, "acme", "bob", 3), "pw2", 3),
			 ARGON2_OK);
	assert_int_equal(argon2id_verify(gw_creds_find(s, "acme", "carol", 5), "pw3", 3),
			 ARGON2_OK);
	gw_creds_free(s);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(loads_and_finds),
		cmocka_unit_test(bad_lines_are_all_reported),
		cmocka_unit_test(names_in_the_file),
		cmocka_unit_test(names_fold_and_check),
		cmocka_unit_test(phc_params),
		cmocka_unit_test(user_add_appends_once),
	};

	return cmocka_run_group_tests_name("gw_creds", tests, setup, teardown);
}
