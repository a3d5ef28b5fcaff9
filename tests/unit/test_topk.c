// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The top shed prefixes table (user/sluiced/topk.c) on a fake clock, without a ring: heavy
 * hitters survive a spray of one-off keys, the window forgets, reports rank and scale. */
#include "unit.h"

#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include "../../user/sluiced/topk.c"

#define SEC 1000000000ull
#define T0 (1000 * SEC)

static struct sl_event ev(uint32_t v4, uint8_t plen, uint8_t cls, uint8_t reason)
{
	struct sl_event e;

	memset(&e, 0, sizeof(e));
	e.family = 4; /* AF_INET */
	e.plen = plen;
	e.class_id = cls;
	e.reason = reason;
	e.action = 1;
	e.dport = 443;
	e.addr[0] = (uint8_t)(v4 >> 24);
	e.addr[1] = (uint8_t)(v4 >> 16);
	e.addr[2] = (uint8_t)(v4 >> 8);
	e.addr[3] = (uint8_t)v4;
	return e;
}

/* The report as a NUL-terminated string (caller frees). */
static char *report(struct topk *t, bool json, int n, uint32_t sample, uint64_t now)
{
	struct evbuffer *b = evbuffer_new();
	size_t len;
	char *s;

	assert_non_null(b);
	topk_report_at(t, b, json, n, sample, now);
	len = evbuffer_get_length(b);
	s = malloc(len + 1);
	assert_non_null(s);
	evbuffer_remove(b, s, len);
	s[len] = '\0';
	evbuffer_free(b);
	return s;
}

static void heavy_hitters_survive_a_spray(void **state)
{
	struct topk *t = topk_new(NULL, NULL);
	struct sl_event heavy = ev(0xc6336400, 24, SL_CLASS_NONE, SL_R_SHED_PREFIX);
	struct sl_event other = ev(0xcb007100, 24, SL_CLASS_NONE, SL_R_SHED_PARENT);
	uint32_t i;
	char *s;

	(void)state;
	assert_non_null(t);
	/* 200,000 one-off /32s, far more than the table holds, with two steady keys among
	 * them: 2,000 and 1,000 events over the same 5 s. */
	for (i = 0; i < 200000; i++) {
		struct sl_event spray = ev(0x0a000000 + i, 32, SL_CLASS_NONE, SL_R_SHED_PREFIX);
		uint64_t now = T0 + (uint64_t)i * 25000; /* 5 s in all */

		topk_add(t, &spray, now);
		if (i % 100 == 0)
			topk_add(t, &heavy, now);
		if (i % 200 == 0)
			topk_add(t, &other, now);
	}
	assert_true(t->evictions > 190000);
	s = report(t, true, 3, 1, T0 + 5 * SEC);
	assert_non_null(strstr(s, "\"prefixes\":[{\"prefix\":\"198.51.100.0/24\",\"class\":\"none\","
				  "\"reason\":\"shed_prefix\""));
	assert_non_null(strstr(s, "\"shed_per_s\":400,\"shed_last_s\":0,\"shed_window\":2000,"));
	assert_non_null(strstr(s, "\"prefix\":\"203.0.113.0/24\",\"class\":\"none\","
				  "\"reason\":\"shed_parent\""));
	assert_non_null(strstr(s, "\"shed_per_s\":200,\"shed_last_s\":0,\"shed_window\":1000,"));
	free(s);
	topk_free(t);
}

static void same_prefix_two_reasons_are_two_rows(void **state)
{
	struct topk *t = topk_new(NULL, NULL);
	struct sl_event a = ev(0xc6336400, 24, SL_CLASS_NONE, SL_R_SHED_PREFIX);
	struct sl_event b = ev(0xc6336400, 24, SL_CLASS_NONE, SL_R_SHED_VERDICT);
	char *s;
	int i;

	(void)state;
	for (i = 0; i < 3; i++)
		topk_add(t, &a, T0);
	topk_add(t, &b, T0);
	s = report(t, false, 10, 1, T0);
	assert_non_null(strstr(s, "shed_prefix"));
	assert_non_null(strstr(s, "shed_verdict"));
	assert_true(strstr(s, "shed_prefix") < strstr(s, "shed_verdict")); /* ranked */
	free(s);
	topk_free(t);
}

static void the_window_forgets(void **state)
{
	struct topk *t = topk_new(NULL, NULL);
	struct sl_event a = ev(0xc6336400, 24, SL_CLASS_NONE, SL_R_SHED_PREFIX);
	char *s;
	int i;

	(void)state;
	for (i = 0; i < 50; i++)
		topk_add(t, &a, T0 + (uint64_t)i * (SEC / 10));
	s = report(t, true, 10, 1, T0 + (TOPK_WIN_S - 1) * SEC);
	assert_non_null(strstr(s, "\"shed_window\":50,"));
	free(s);
	/* Past the window: nothing left to rank, and the slot is free for another key. */
	s = report(t, true, 10, 1, T0 + (TOPK_WIN_S + 6) * SEC);
	assert_non_null(strstr(s, "\"prefixes\":[]"));
	free(s);
	topk_free(t);
}

static void counts_are_scaled_by_the_sample(void **state)
{
	struct topk *t = topk_new(NULL, NULL);
	struct sl_event a = ev(0xc6336400, 24, SL_CLASS_NONE, SL_R_SHED_PREFIX);
	char *s;
	int i;

	(void)state;
	for (i = 0; i < 20; i++)
		topk_add(t, &a, T0 + (uint64_t)i * (SEC / 2)); /* 2 a second for 10 s */
	s = report(t, true, 1, 100, T0 + 10 * SEC - 1);
	assert_non_null(strstr(s, "\"sample\":100,"));
	assert_non_null(strstr(s, "\"shed_window\":2000,"));
	assert_non_null(strstr(s, "\"shed_per_s\":200,"));
	assert_non_null(strstr(s, "\"total\":2000,"));
	free(s);
	topk_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(heavy_hitters_survive_a_spray),
		cmocka_unit_test(same_prefix_two_reasons_are_two_rows),
		cmocka_unit_test(the_window_forgets),
		cmocka_unit_test(counts_are_scaled_by_the_sample),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
