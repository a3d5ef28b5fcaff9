// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The credential store: loading, lookups, every kind of bad line, and `user add`. */
#include "unit.h"

#include <argon2.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sodium.h>
#include <sys/file.h>
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
	assert_int_equal(gw_phc_params("$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaA", &m, &t,
				       &p), 0);
	assert_int_equal(m, 65536);
	assert_int_equal(t, 3);
	assert_int_equal(p, 4);
	assert_int_not_equal(gw_phc_params("$argon2id$v=16$m=64,t=1,p=1$c2FsdHNhbHQ$aGFzaA", &m, &t,
					   &p), 0);
	assert_int_not_equal(gw_phc_params("$argon2id$v=19$m=64,t=1$c2FsdHNhbHQ$aGFzaA", &m, &t, &p),
			     0);
	assert_int_not_equal(gw_phc_params("$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ", &m, &t, &p),
			     0);
	assert_int_not_equal(gw_phc_params("$argon2id$v=19$m=0,t=1,p=1$c2FsdHNhbHQ$aGFzaA", &m, &t,
					   &p), 0);
	/* What the worker could never verify does not load either: a 4-byte salt (libargon2's
	 * minimum is 8), padding, a tag past 64 bytes. */
	assert_int_not_equal(gw_phc_params("$argon2id$v=19$m=64,t=1,p=1$c2FsdA$aGFzaA", &m, &t,
					   &p), 0);
	assert_int_not_equal(gw_phc_params("$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ=$aGFzaA", &m,
					   &t, &p), 0);
	assert_int_not_equal(gw_phc_params("$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$"
					   "aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFz"
					   "aGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaA",
					   &m, &t, &p), 0);
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

/* Inserts without a reload: found at once, through every growth of the table, alongside
 * what was loaded; refused when taken or not canonical. */
static void inserts_grow_the_table(void **state)
{
	enum { LOADED = 1000, ADDED = 40000 };
	struct gw_creds *s = NULL;
	char *text, name[64], e[1024], big[GW_USER_MAX + 2];
	const char *p, *found;
	size_t used = 0;
	int i;

	(void)state;
	hash_of("x");
	text = malloc((size_t)LOADED * (strlen(phc) + 32) + 1);
	assert_non_null(text);
	for (i = 0; i < LOADED; i++)
		used += (size_t)sprintf(text + used, "acme,u%d,%s\n", i, phc);
	p = tmpfile_with("creds", text);
	free(text);
	assert_int_equal(gw_creds_load(p, cfg, &s, e, sizeof(e)), 0);
	unlink(p);
	for (i = 0; i < ADDED; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		assert_int_equal(gw_creds_insert(s, i % 2 ? "acme" : "globex", name, phc), 0);
		assert_non_null(gw_creds_find(s, i % 2 ? "acme" : "globex", name, strlen(name)));
		/* Something loaded and something inserted long ago, while slots move. */
		snprintf(name, sizeof(name), "u%d", (i * 7919) % LOADED);
		assert_non_null(gw_creds_find(s, "acme", name, strlen(name)));
		snprintf(name, sizeof(name), "n%d", i / 2);
		assert_non_null(gw_creds_find(s, (i / 2) % 2 ? "acme" : "globex", name,
					      strlen(name)));
	}
	assert_int_equal(gw_creds_count(s), LOADED + ADDED);
	for (i = 0; i < ADDED; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		found = gw_creds_find(s, i % 2 ? "acme" : "globex", name, strlen(name));
		assert_non_null(found);
		assert_string_equal(found, phc);
		assert_null(gw_creds_find(s, i % 2 ? "globex" : "acme", name, strlen(name)));
	}
	for (i = 0; i < LOADED; i++) {
		snprintf(name, sizeof(name), "u%d", i);
		assert_non_null(gw_creds_find(s, "acme", name, strlen(name)));
	}
	/* Taken, loaded or inserted; and what no name may be. */
	assert_int_equal(gw_creds_insert(s, "acme", "u7", phc), -EEXIST);
	assert_int_equal(gw_creds_insert(s, "globex", "n0", phc), -EEXIST);
	assert_int_equal(gw_creds_insert(s, "acme", "N3", phc), -EINVAL);
	assert_int_equal(gw_creds_insert(s, "acme", "a b", phc), -EINVAL);
	assert_int_equal(gw_creds_insert(s, "acme", "", phc), -EINVAL);
	assert_int_equal(gw_creds_insert(s, "", "x", phc), -EINVAL);
	assert_int_equal(gw_creds_insert(s, "acme", "x", ""), -EINVAL);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(gw_creds_insert(s, "acme", big, phc), -EINVAL);
	assert_int_equal(gw_creds_insert(NULL, "acme", "x", phc), -EINVAL);
	assert_int_equal(gw_creds_count(s), LOADED + ADDED);
	gw_creds_free(s);

	/* From an empty file: the smallest table grows from 16 slots. */
	p = tmpfile_with("creds", "# nobody yet\n");
	assert_int_equal(gw_creds_load(p, cfg, &s, e, sizeof(e)), 0);
	unlink(p);
	assert_null(gw_creds_find(s, "acme", "a", 1));
	for (i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		assert_int_equal(gw_creds_insert(s, "acme", name, phc), 0);
	}
	for (i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		assert_non_null(gw_creds_find(s, "acme", name, strlen(name)));
	}
	gw_creds_free(s);
}

/* Wait for the writer's fd and collect until @n appends came back, into @got. */
static int collect_n(struct gw_cwriter *w, struct gw_cappend **got, int n)
{
	int have = 0;

	while (have < n) {
		struct pollfd pf = { .fd = gw_cwriter_fd(w), .events = POLLIN };
		struct gw_cappend *a;

		if (poll(&pf, 1, 10000) != 1)
			return have;
		for (a = gw_cwriter_collect(w); a; a = a->next)
			got[have++] = a;
	}
	return have;
}

/* The origin appends are checked against: a load of @path, as the loop's table is. */
static struct gw_creds_origin origin;

static void load_origin(const char *path)
{
	struct gw_creds *s = NULL;
	char e[1024];

	assert_int_equal(gw_creds_load(path, cfg, &s, e, sizeof(e)), 0);
	origin = *gw_creds_origin(s);
	assert_true(origin.ino != 0);
	gw_creds_free(s);
}

static struct gw_cappend *an_append(const char *path, const char *tenant, const char *account)
{
	struct gw_cappend *a = calloc(1, sizeof(*a));

	assert_non_null(a);
	a->origin = origin;
	snprintf(a->path, sizeof(a->path), "%s", path);
	snprintf(a->tenant, sizeof(a->tenant), "%s", tenant);
	snprintf(a->account, sizeof(a->account), "%s", account);
	snprintf(a->phc, sizeof(a->phc), "%s", phc);
	return a;
}

static void free_all(struct gw_cappend **got, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(got[i]);
}

static void the_writer_appends(void **state)
{
	char path[] = "/tmp/sluice-unit-writer-XXXXXX", e[2048], name[32];
	static struct gw_cappend *got[GW_CWRITER_MAX + 8];
	struct gw_cwriter *w = NULL;
	struct gw_cwriter_stats st, st0;
	struct gw_creds *s = NULL;
	struct gw_cappend *a;
	int fd, i, n;

	(void)state;
	hash_of("pw");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(gw_creds_add(path, cfg, "acme", "alice", "pw", 2, e, sizeof(e)), 0);
	load_origin(path);
	assert_int_equal(gw_cwriter_start(&w), 0);

	/* Two sign-ups: on disk, the file loads with them; pending until collected. */
	assert_int_equal(gw_cwriter_submit(w, an_append(path, "acme", "bob")), 0);
	assert_int_equal(gw_cwriter_submit(w, an_append(path, "globex", "bob")), 0);
	assert_true(gw_cwriter_pending(w, "acme", "bob"));
	assert_true(gw_cwriter_pending(w, "globex", "bob"));
	assert_false(gw_cwriter_pending(w, "acme", "carol"));
	assert_int_equal(collect_n(w, got, 2), 2);
	assert_int_equal(got[0]->ret, 0);
	assert_int_equal(got[1]->ret, 0);
	assert_false(gw_cwriter_pending(w, "acme", "bob"));
	assert_int_equal(gw_cwriter_outstanding(w), 0);
	free_all(got, 2);
	assert_int_equal(gw_creds_load(path, cfg, &s, e, sizeof(e)), 0);
	assert_int_equal(gw_creds_count(s), 3);
	assert_non_null(gw_creds_find(s, "globex", "bob", 3));
	gw_creds_free(s);

	/* Another writer (user add) after the load, and a hand-edited line with capitals:
	 * found in what was appended since the load, and remembered: a later batch, after the
	 * writer has read past them, is refused too. Nothing is written twice. */
	assert_int_equal(gw_creds_add(path, cfg, "acme", "carol", "pw", 2, e, sizeof(e)), 0);
	fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_true(dprintf(fd, "acme,Dave,%s", phc) > 0); /* and no newline at the end */
	close(fd);
	assert_int_equal(gw_cwriter_submit(w, an_append(path, "acme", "carol")), 0);
	assert_int_equal(collect_n(w, got, 1), 1);
	assert_int_equal(got[0]->ret, -EEXIST);
	assert_contains(got[0]->err, "is in the file already");
	free_all(got, 1);
	assert_int_equal(gw_cwriter_submit(w, an_append(path, "acme", "dave")), 0);
	assert_int_equal(collect_n(w, got, 1), 1);
	assert_int_equal(got[0]->ret, -EEXIST);
	free_all(got, 1);
	assert_int_equal(gw_cwriter_submit(w, an_append(path, "acme", "carol")), 0);
	assert_int_equal(gw_cwriter_submit(w, an_append(path, "acme", "dave")), 0);
	assert_int_equal(gw_cwriter_submit(w, an_append(path, "acme", "erin")), 0);
	assert_int_equal(collect_n(w, got, 3), 3);
	for (i = 0; i < 3; i++)
		assert_int_equal(got[i]->ret, strcmp(got[i]->account, "erin") ? -EEXIST : 0);
	free_all(got, 3);
	assert_int_equal(gw_creds_load(path, cfg, &s, e, sizeof(e)), 0);
	assert_int_equal(gw_creds_count(s), 6); /* alice, bob x2, carol, dave, erin */
	gw_creds_free(s);
	/* Only what came after the load was read: the writer never read the file whole. */
	gw_cwriter_get_stats(w, &st);
	assert_true(st.scanned_bytes > 0);
	assert_true(st.scanned_bytes < (uint64_t)origin.size + 2 * strlen(phc) + 64);

	/* A new load (a reload): its table holds what others added, so the writer starts
	 * afresh from there; it still finds what comes after. */
	load_origin(path);
	assert_int_equal(gw_cwriter_submit(w, an_append(path, "acme", "gina")), 0);
	assert_int_equal(collect_n(w, got, 1), 1);
	assert_int_equal(got[0]->ret, 0);
	free_all(got, 1);
	gw_cwriter_get_stats(w, &st0);
	assert_int_equal(gw_creds_add(path, cfg, "acme", "hank", "pw", 2, e, sizeof(e)), 0);
	assert_int_equal(gw_cwriter_submit(w, an_append(path, "acme", "hank")), 0);
	assert_int_equal(collect_n(w, got, 1), 1);
	assert_int_equal(got[0]->ret, -EEXIST);
	free_all(got, 1);
	gw_cwriter_get_stats(w, &st);
	assert_true(st.scanned_bytes - st0.scanned_bytes < 2 * strlen(phc));

	/* A file replaced under the same name since the load is another file: read whole, for
	 * every batch until the next load. */
	fd = open("/tmp/sluice-unit-writer-new", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_true(dprintf(fd, "acme,frank,%s\n", phc) > 0);
	close(fd);
	assert_int_equal(rename("/tmp/sluice-unit-writer-new", path), 0);
	assert_int_equal(gw_cwriter_submit(w, an_append(path, "acme", "frank")), 0);
	assert_int_equal(collect_n(w, got, 1), 1);
	assert_int_equal(got[0]->ret, -EEXIST);
	free_all(got, 1);
	assert_int_equal(gw_cwriter_submit(w, an_append(path, "acme", "ivy")), 0);
	assert_int_equal(collect_n(w, got, 1), 1);
	assert_int_equal(got[0]->ret, 0);
	free_all(got, 1);
	assert_int_equal(gw_cwriter_submit(w, an_append(path, "acme", "frank")), 0);
	assert_int_equal(collect_n(w, got, 1), 1);
	assert_int_equal(got[0]->ret, -EEXIST);
	free_all(got, 1);
	load_origin(path);

	/* Past GW_CWRITER_MAX outstanding the loop is told to wait. */
	for (i = 0; i < GW_CWRITER_MAX; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		assert_int_equal(gw_cwriter_submit(w, an_append(path, "acme", name)), 0);
	}
	a = an_append(path, "acme", "one-more");
	assert_int_equal(gw_cwriter_submit(w, a), -EBUSY);
	free(a);
	n = collect_n(w, got, GW_CWRITER_MAX);
	assert_int_equal(n, GW_CWRITER_MAX);
	for (i = 0; i < n; i++)
		assert_int_equal(got[i]->ret, 0);
	free_all(got, n);
	gw_cwriter_get_stats(w, &st);
	assert_int_equal(st.appended, 5 + GW_CWRITER_MAX); /* bob x2, erin, gina, ivy */
	assert_int_equal(st.exists, 7); /* carol x2, dave x2, hank, frank x2 */
	assert_true(st.batches <= 14 + GW_CWRITER_MAX);
	assert_int_equal(st.failed, 0);
	assert_int_equal(gw_creds_load(path, cfg, &s, e, sizeof(e)), 0);
	assert_int_equal(gw_creds_count(s), 2 + GW_CWRITER_MAX); /* frank, ivy and m* */
	gw_creds_free(s);

	/* Stopping writes what was queued; collect still returns it. */
	assert_int_equal(gw_cwriter_submit(w, an_append(path, "acme", "last")), 0);
	gw_cwriter_stop(w);
	a = gw_cwriter_collect(w);
	assert_non_null(a);
	assert_int_equal(a->ret, 0);
	assert_null(a->next);
	free(a);
	a = an_append(path, "acme", "after");
	assert_int_equal(gw_cwriter_submit(w, a), -ESHUTDOWN);
	free(a);
	gw_cwriter_free(w);
	assert_int_equal(gw_creds_load(path, cfg, &s, e, sizeof(e)), 0);
	assert_non_null(gw_creds_find(s, "acme", "last", 4));
	gw_creds_free(s);
	unlink(path);
}

static void the_writer_fails_cleanly(void **state)
{
	struct gw_cappend *got[4];
	struct gw_cwriter *w = NULL;

	(void)state;
	hash_of("pw");
	assert_int_equal(gw_cwriter_start(&w), 0);
	assert_int_equal(gw_cwriter_submit(w, an_append("/nonexistent/dir/creds", "acme", "a")), 0);
	assert_int_equal(gw_cwriter_submit(w, an_append("/dev/null", "acme", "b")), 0);
	assert_int_equal(collect_n(w, got, 2), 2);
	assert_int_equal(got[0]->ret, -ENOENT);
	assert_contains(got[0]->err, "/nonexistent/dir/creds");
	assert_int_equal(got[1]->ret, -EINVAL);
	assert_contains(got[1]->err, "/dev/null: not a regular file");
	free_all(got, 2);
	/* Freed with appends never collected: nothing leaks (ASan says). */
	assert_int_equal(gw_cwriter_submit(w, an_append("/nonexistent/x", "acme", "c")), 0);
	gw_cwriter_free(w);
}

struct bg_load {
	const char *path;
	int ret;
	uint32_t count;
	int done;         /* atomic */
};

static void *bg_load_main(void *arg)
{
	struct bg_load *b = arg;
	struct gw_creds *s = NULL;
	char e[1024];

	b->ret = gw_creds_load(b->path, cfg, &s, e, sizeof(e));
	b->count = gw_creds_count(s);
	gw_creds_free(s);
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A load (a reload's) waits while an append holds the file, so it never reads half a
 * batch: here a line is half written under the exclusive lock when the load starts. */
static void a_load_waits_for_an_append(void **state)
{
	char path[] = "/tmp/sluice-unit-lock-XXXXXX";
	struct bg_load b = { .path = path };
	pthread_t th;
	int fd, i;

	(void)state;
	hash_of("x");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_true(dprintf(fd, "acme,alice,%s\n", phc) > 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	assert_true(dprintf(fd, "acme,bob,%.20s", phc) > 0); /* half a line */
	assert_int_equal(pthread_create(&th, NULL, bg_load_main, &b), 0);
	for (i = 0; i < 20 && !__atomic_load_n(&b.done, __ATOMIC_ACQUIRE); i++)
		usleep(10000);
	assert_false(__atomic_load_n(&b.done, __ATOMIC_ACQUIRE));
	assert_true(dprintf(fd, "%s\n", phc + 20) > 0);
	assert_int_equal(flock(fd, LOCK_UN), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(b.ret, 0);
	assert_int_equal(b.count, 2);
	close(fd);
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
		cmocka_unit_test(inserts_grow_the_table),
		cmocka_unit_test(the_writer_appends),
		cmocka_unit_test(the_writer_fails_cleanly),
		cmocka_unit_test(a_load_waits_for_an_append),
	};

	return cmocka_run_group_tests_name("gw_creds", tests, setup, teardown);
}
