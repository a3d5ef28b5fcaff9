// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * PHC strings and hashes on the calling thread (gw_phc.c): round trips, the strings that
 * must be refused, the same bytes as libargon2's own encoder at p = 1, 2, 4, and that a
 * verify at p = 4 spends its CPU on the thread that asked (the worker meters that clock).
 */
#include "unit.h"

#include <argon2.h>
#include <errno.h>
#include <sodium.h>
#include <time.h>

#include "gw_phc.h"

static int setup(void **state)
{
	(void)state;
	return sodium_init() < 0 ? -1 : 0;
}

/* "A" repeated @n times: the base64 of zero bytes, canonical for every n not 1 mod 4. */
static const char *as(size_t n)
{
	static char buf[16][128];
	static int i;
	char *b = buf[i++ % 16];

	assert_true(n < sizeof(buf[0]));
	memset(b, 'A', n);
	b[n] = '\0';
	return b;
}

static void fill(struct gw_phc *h, uint32_t m, uint32_t t, uint32_t p, uint32_t salt_len,
		 uint32_t tag_len)
{
	uint32_t i;

	memset(h, 0, sizeof(*h));
	h->m_kib = m;
	h->t = t;
	h->p = p;
	h->salt_len = salt_len;
	h->tag_len = tag_len;
	for (i = 0; i < salt_len; i++)
		h->salt[i] = (uint8_t)(i * 37 + 1);
	for (i = 0; i < tag_len; i++)
		h->tag[i] = (uint8_t)(255 - i * 11);
}

static void assert_same(const struct gw_phc *a, const struct gw_phc *b)
{
	assert_int_equal(a->m_kib, b->m_kib);
	assert_int_equal(a->t, b->t);
	assert_int_equal(a->p, b->p);
	assert_int_equal(a->salt_len, b->salt_len);
	assert_int_equal(a->tag_len, b->tag_len);
	assert_memory_equal(a->salt, b->salt, a->salt_len);
	assert_memory_equal(a->tag, b->tag, a->tag_len);
}

static void round_trips(void **state)
{
	/* Every length residue mod 3 of salt and tag, and the bounds. */
	static const uint32_t salts[] = { GW_PHC_SALT_MIN, 9, 10, 16, 17, GW_PHC_SALT_MAX };
	static const uint32_t tags[] = { GW_PHC_TAG_MIN, 5, 6, 32, 33, GW_PHC_TAG_MAX };
	static const uint32_t params[][3] = { { 8, 1, 1 }, { 65536, 3, 1 }, { 2040, 1000, 255 },
					      { GW_PHC_M_MAX, 7, 64 } };
	char s[GW_PHC_ENC_MAX], again[GW_PHC_ENC_MAX];
	struct gw_phc in, out;
	size_t i, j, k;

	(void)state;
	for (i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		for (j = 0; j < sizeof(salts) / sizeof(salts[0]); j++)
			for (k = 0; k < sizeof(tags) / sizeof(tags[0]); k++) {
				fill(&in, params[i][0], params[i][1], params[i][2], salts[j],
				     tags[k]);
				assert_int_equal(gw_phc_encode(&in, s, sizeof(s)), 0);
				if (gw_phc_decode(s, &out))
					fail_msg("does not decode what it wrote: %s", s);
				assert_same(&in, &out);
				assert_int_equal(gw_phc_encode(&out, again, sizeof(again)), 0);
				assert_string_equal(s, again);
			}
	/* The longest string fits GW_PHC_ENC_MAX exactly. */
	fill(&in, GW_PHC_M_MAX, GW_PHC_T_MAX, GW_PHC_P_MAX, GW_PHC_SALT_MAX, GW_PHC_TAG_MAX);
	assert_int_equal(gw_phc_encode(&in, s, sizeof(s)), 0);
	assert_int_equal(strlen(s) + 1, GW_PHC_ENC_MAX);
	assert_int_equal(gw_phc_encode(&in, s, GW_PHC_ENC_MAX - 1), -ENOSPC);
	assert_int_equal(gw_phc_encode(&in, s, 0), -ENOSPC);
	/* libargon2's argon2id_hash_encoded(2, 256, 2, "password", "somesalt", 32 bytes) reads
	 * back to the same string, and verifies. */
	assert_int_equal(gw_phc_decode("$argon2id$v=19$m=256,t=2,p=2$c29tZXNhbHQ$"
				       "bQk8UB/VmZZF4Oo79iDXuL5/0ttZwg2f/5U52iv1cDc", &out), 0);
	assert_int_equal(out.m_kib, 256);
	assert_int_equal(out.t, 2);
	assert_int_equal(out.p, 2);
	assert_int_equal(out.salt_len, 8);
	assert_memory_equal(out.salt, "somesalt", 8);
	assert_int_equal(out.tag_len, 32);
	assert_int_equal(gw_phc_encode(&out, s, sizeof(s)), 0);
	assert_string_equal(s, "$argon2id$v=19$m=256,t=2,p=2$c29tZXNhbHQ$"
			       "bQk8UB/VmZZF4Oo79iDXuL5/0ttZwg2f/5U52iv1cDc");
	assert_int_equal(gw_phc_verify(s, "password", 8), 1);
}

static void encode_refuses_what_decode_would(void **state)
{
	struct gw_phc h;
	char s[GW_PHC_ENC_MAX];

	(void)state;
	fill(&h, 64, 1, 0, 16, 32);
	assert_int_equal(gw_phc_encode(&h, s, sizeof(s)), -EINVAL);
	fill(&h, 16, 1, 4, 16, 32); /* m below 8 KiB per lane */
	assert_int_equal(gw_phc_encode(&h, s, sizeof(s)), -EINVAL);
	fill(&h, 64, 0, 1, 16, 32);
	assert_int_equal(gw_phc_encode(&h, s, sizeof(s)), -EINVAL);
	fill(&h, 64, 1, 1, GW_PHC_SALT_MIN - 1, 32);
	assert_int_equal(gw_phc_encode(&h, s, sizeof(s)), -EINVAL);
	fill(&h, 64, 1, 1, 16, GW_PHC_TAG_MIN - 1);
	assert_int_equal(gw_phc_encode(&h, s, sizeof(s)), -EINVAL);
	h.tag_len = GW_PHC_TAG_MAX + 1;
	assert_int_equal(gw_phc_encode(&h, s, sizeof(s)), -EINVAL);
	h.tag_len = 32;
	h.m_kib = GW_PHC_M_MAX + 1;
	assert_int_equal(gw_phc_encode(&h, s, sizeof(s)), -EINVAL);
	/* compute refuses the same without allocating anything */
	assert_int_equal(gw_phc_compute(&h, "pw", 2, h.tag, 32), -EINVAL);
}

static void malformed_strings_are_refused(void **state)
{
	const char *salt = as(22), *tag = as(43); /* 16 and 32 zero bytes */
	char ok[256], s[512];
	struct gw_phc h;
	size_t i;
	struct {
		const char *what, *params, *salt, *tag, *tail;
	} cases[] = {
		{ "no v", "$argon2id$m=64,t=1,p=1", salt, tag, "" },
		{ "v=16", "$argon2id$v=16$m=64,t=1,p=1", salt, tag, "" },
		{ "v=019", "$argon2id$v=019$m=64,t=1,p=1", salt, tag, "" },
		{ "v=20", "$argon2id$v=20$m=64,t=1,p=1", salt, tag, "" },
		{ "argon2i", "$argon2i$v=19$m=64,t=1,p=1", salt, tag, "" },
		{ "argon2d", "$argon2d$v=19$m=64,t=1,p=1", salt, tag, "" },
		{ "upper case", "$ARGON2ID$v=19$m=64,t=1,p=1", salt, tag, "" },
		{ "no leading $", "argon2id$v=19$m=64,t=1,p=1", salt, tag, "" },
		{ "no m", "$argon2id$v=19$t=1,p=1", salt, tag, "" },
		{ "no t", "$argon2id$v=19$m=64,p=1", salt, tag, "" },
		{ "no p", "$argon2id$v=19$m=64,t=1", salt, tag, "" },
		{ "reordered", "$argon2id$v=19$t=1,m=64,p=1", salt, tag, "" },
		{ "extra param", "$argon2id$v=19$m=64,t=1,p=1,k=1", salt, tag, "" },
		{ "space", "$argon2id$v=19$m=64, t=1,p=1", salt, tag, "" },
		{ "empty m", "$argon2id$v=19$m=,t=1,p=1", salt, tag, "" },
		{ "p=0", "$argon2id$v=19$m=64,t=1,p=0", salt, tag, "" },
		{ "t=0", "$argon2id$v=19$m=64,t=0,p=1", salt, tag, "" },
		{ "m=0", "$argon2id$v=19$m=0,t=1,p=1", salt, tag, "" },
		{ "m=7", "$argon2id$v=19$m=7,t=1,p=1", salt, tag, "" },
		{ "m below 8 per lane", "$argon2id$v=19$m=31,t=1,p=4", salt, tag, "" },
		{ "m one above the cap", "$argon2id$v=19$m=16777217,t=1,p=1", salt, tag, "" },
		{ "huge m", "$argon2id$v=19$m=4294967296,t=1,p=1", salt, tag, "" },
		{ "huger m", "$argon2id$v=19$m=99999999999999999999999,t=1,p=1", salt, tag, "" },
		{ "t above the cap", "$argon2id$v=19$m=64,t=1001,p=1", salt, tag, "" },
		{ "p above the cap", "$argon2id$v=19$m=4096,t=1,p=256", salt, tag, "" },
		{ "leading zero", "$argon2id$v=19$m=064,t=1,p=1", salt, tag, "" },
		{ "plus sign", "$argon2id$v=19$m=+64,t=1,p=1", salt, tag, "" },
		{ "minus sign", "$argon2id$v=19$m=64,t=-1,p=1", salt, tag, "" },
		{ "hex", "$argon2id$v=19$m=0x40,t=1,p=1", salt, tag, "" },
		{ "empty salt", "$argon2id$v=19$m=64,t=1,p=1", "", tag, "" },
		{ "empty tag", "$argon2id$v=19$m=64,t=1,p=1", salt, "", "" },
		{ "salt 7 bytes", "$argon2id$v=19$m=64,t=1,p=1", as(10), tag, "" },
		{ "salt 65 bytes", "$argon2id$v=19$m=64,t=1,p=1", as(87), tag, "" },
		{ "tag 3 bytes", "$argon2id$v=19$m=64,t=1,p=1", salt, as(4), "" },
		{ "tag 65 bytes", "$argon2id$v=19$m=64,t=1,p=1", salt, as(87), "" },
		{ "salt padded", "$argon2id$v=19$m=64,t=1,p=1", "AAAAAAAAAAAAAAAAAAAAAA==", tag, "" },
		{ "tag padded", "$argon2id$v=19$m=64,t=1,p=1", salt, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "" },
		{ "salt 1 mod 4", "$argon2id$v=19$m=64,t=1,p=1", as(21), tag, "" },
		{ "tag 1 mod 4", "$argon2id$v=19$m=64,t=1,p=1", salt, as(41), "" },
		{ "salt unused bits", "$argon2id$v=19$m=64,t=1,p=1", "AAAAAAAAAAAAAAAAAAAAAB", tag, "" },
		{ "tag unused bits", "$argon2id$v=19$m=64,t=1,p=1", salt, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB", "" },
		{ "url-safe -", "$argon2id$v=19$m=64,t=1,p=1", "AAAAAAAAAAAAAAAAAAAAA-", tag, "" },
		{ "url-safe _", "$argon2id$v=19$m=64,t=1,p=1", salt, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA_", "" },
		{ "space in salt", "$argon2id$v=19$m=64,t=1,p=1", "AAAAAAAAAAA AAAAAAAAAAA", tag, "" },
		{ "trailing $", "$argon2id$v=19$m=64,t=1,p=1", salt, tag, "$" },
		{ "a sixth field", "$argon2id$v=19$m=64,t=1,p=1", salt, tag, "$AAAA" },
		{ "trailing newline", "$argon2id$v=19$m=64,t=1,p=1", salt, tag, "\n" },
		{ "trailing space", "$argon2id$v=19$m=64,t=1,p=1", salt, tag, " " },
	};

	(void)state;
	snprintf(ok, sizeof(ok), "$argon2id$v=19$m=64,t=1,p=1$%s$%s", salt, tag);
	assert_int_equal(gw_phc_decode(ok, &h), 0); /* the control every case breaks */
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(s, sizeof(s), "%s$%s$%s%s", cases[i].params, cases[i].salt, cases[i].tag,
			 cases[i].tail);
		h.m_kib = 1;
		if (gw_phc_decode(s, &h) != -EINVAL)
			fail_msg("%s: \"%s\" decoded", cases[i].what, s);
		assert_int_equal(h.m_kib, 0); /* zeroed on refusal */
	}
	/* Missing fields: cut anywhere up to an empty tag (a shorter tag is still a tag). */
	for (i = 0; i <= (size_t)(strrchr(ok, '$') - ok) + 1; i++) {
		snprintf(s, sizeof(s), "%.*s", (int)i, ok);
		if (gw_phc_decode(s, &h) != -EINVAL)
			fail_msg("cut at %zu: \"%s\" decoded", i, s);
	}
	assert_int_equal(gw_phc_decode("", &h), -EINVAL);
	/* The bounds themselves are accepted. */
	snprintf(s, sizeof(s), "$argon2id$v=19$m=16777216,t=1000,p=255$%s$%s", as(11), as(6));
	assert_int_equal(gw_phc_decode(s, &h), 0);
	snprintf(s, sizeof(s), "$argon2id$v=19$m=32,t=1,p=4$%s$%s", as(86), as(86));
	assert_int_equal(gw_phc_decode(s, &h), 0);
	assert_int_equal(h.salt_len, GW_PHC_SALT_MAX);
	assert_int_equal(h.tag_len, GW_PHC_TAG_MAX);
}

/* The same bytes as libargon2's encoder, and each side verifies the other's. */
static void same_bytes_as_libargon2(void **state)
{
	static const uint32_t ps[] = { 1, 2, 4 };
	static const struct {
		uint32_t salt_len, tag_len;
	} lens[] = { { 16, 32 }, { 8, 4 }, { 64, 64 }, { 17, 33 } };
	const char *pw = "correct horse battery staple";
	char ours[GW_PHC_ENC_MAX], theirs[GW_PHC_ENC_MAX];
	uint8_t salt[GW_PHC_SALT_MAX];
	size_t i, j;
	int r;

	(void)state;
	randombytes_buf(salt, sizeof(salt));
	for (i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
		for (j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
			r = argon2id_hash_encoded(2, 256, ps[i], pw, strlen(pw), salt,
						  lens[j].salt_len, lens[j].tag_len, theirs,
						  sizeof(theirs));
			assert_int_equal(r, ARGON2_OK);
			assert_int_equal(gw_phc_hash(256, 2, ps[i], pw, strlen(pw), salt,
						     lens[j].salt_len, lens[j].tag_len, ours,
						     sizeof(ours)), 0);
			if (strcmp(ours, theirs))
				fail_msg("p=%u salt %u tag %u:\n ours   %s\n theirs %s", ps[i],
					 lens[j].salt_len, lens[j].tag_len, ours, theirs);
			assert_int_equal(argon2id_verify(ours, pw, strlen(pw)), ARGON2_OK);
			assert_int_equal(gw_phc_verify(theirs, pw, strlen(pw)), 1);
			assert_int_equal(gw_phc_verify(theirs, "Correct horse battery staple",
						       strlen(pw)), 0);
			assert_int_equal(gw_phc_verify(theirs, pw, strlen(pw) - 1), 0);
		}
	/* The empty password is a password. */
	assert_int_equal(argon2id_hash_encoded(1, 64, 2, "", 0, salt, 16, 32, theirs,
					       sizeof(theirs)), ARGON2_OK);
	assert_int_equal(gw_phc_verify(theirs, "", 0), 1);
	assert_int_equal(gw_phc_verify(theirs, "x", 1), 0);
	/* A string that does not decode is an error, not a mismatch. */
	assert_int_equal(gw_phc_verify("$argon2id$v=19$m=64,t=1,p=0$AAAAAAAAAAA$AAAAAA", pw,
				       strlen(pw)), -EINVAL);
	assert_int_equal(gw_phc_hash(256, 2, 1, pw, strlen(pw), salt, 7, 32, ours, sizeof(ours)),
			 -EINVAL);
	assert_int_equal(gw_phc_hash(256, 2, 1, pw, strlen(pw), salt, 16, 32, ours, 40), -ENOSPC);
}

static uint64_t cpu_ns(clockid_t id)
{
	struct timespec ts;

	assert_int_equal(clock_gettime(id, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The worker meters a hash by CLOCK_THREAD_CPUTIME_ID: at p = 4 that clock must see (nearly)
 * all the CPU the process spends on a verify. A ratio, never a time: the machine's speed and
 * load change the times, not where the work runs. libargon2's own verify is measured beside
 * it for the record (its lanes run on threads of its own: about a quarter here).
 */
static void verify_runs_on_the_calling_thread(void **state)
{
	const char *pw = "hunter2";
	uint64_t t0, p0, th = 0, pr = 0, lth = 0, lpr = 0;
	uint8_t salt[16];
	char phc[GW_PHC_ENC_MAX];
	int i;

	(void)state;
	randombytes_buf(salt, sizeof(salt));
	assert_int_equal(gw_phc_hash(1024, 20, 4, pw, strlen(pw), salt, sizeof(salt), 32, phc,
				     sizeof(phc)), 0);
	for (i = 0; i < 3; i++) {
		t0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
		p0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
		assert_int_equal(gw_phc_verify(phc, pw, strlen(pw)), 1);
		th += cpu_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		pr += cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - p0;

		t0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
		p0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
		assert_int_equal(argon2id_verify(phc, pw, strlen(pw)), ARGON2_OK);
		lth += cpu_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		lpr += cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - p0;
	}
	print_message("# p=4: gw_phc_verify thread/process CPU %.3f; argon2id_verify %.3f\n",
		      (double)th / (double)pr, (double)lth / (double)lpr);
	assert_true(pr > 0);
	if ((double)th < 0.8 * (double)pr)
		fail_msg("the calling thread saw %.1f%% of the process's CPU, expected >= 80%%",
			 100.0 * (double)th / (double)pr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trips),
		cmocka_unit_test(encode_refuses_what_decode_would),
		cmocka_unit_test(malformed_strings_are_refused),
		cmocka_unit_test(same_bytes_as_libargon2),
		cmocka_unit_test(verify_runs_on_the_calling_thread),
	};

	return cmocka_run_group_tests_name("gw_phc", tests, setup, NULL);
}
