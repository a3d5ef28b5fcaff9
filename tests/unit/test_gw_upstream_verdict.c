// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* A sign-in route's verdict from an upstream answer: statuses, a header, a JSON field. */
#include "unit.h"

#include <string.h>
#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "config.h"
#include "gw_upstream_verdict.h"

static char out[SL_VERDICT_VALUE_LEN];
static int full;

static int path(const char *body, const char *p)
{
	full = -1;
	return gw_json_path(body, strlen(body), p, out, sizeof(out), &full);
}

static void json_paths(void **state)
{
	(void)state;
	assert_int_equal(path("{\"result\":\"ok\"}", "result"), 1);
	assert_string_equal(out, "ok");
	assert_int_equal(full, 1);
	assert_int_equal(path(" {\"a\":1, \"result\" : {\"status\":\"denied\",\"n\":[1,2]}} \n",
			      "result.status"), 1);
	assert_string_equal(out, "denied");
	assert_int_equal(path("{\"errors\":[{\"code\":\"x\"},{\"code\":\"locked\"}]}",
			      "errors.1.code"), 1);
	assert_string_equal(out, "locked");
	assert_int_equal(path("{\"ok\":true}", "ok"), 1);
	assert_string_equal(out, "true");
	assert_int_equal(path("{\"n\":-1.5e3}", "n"), 1);
	assert_string_equal(out, "-1.5e3");
	assert_int_equal(path("{\"v\":null}", "v"), 1);
	assert_string_equal(out, "null");
	/* escapes are decoded: \u006f\u006b is "ok" */
	assert_int_equal(path("{\"r\\u0065sult\":\"\\u006f\\u006b\"}", "result"), 1);
	assert_string_equal(out, "ok");
	/* too long for the buffer: cut, and said so */
	assert_int_equal(path("{\"r\":\"0123456789012345678901234567890123456789\"}", "r"), 1);
	assert_int_equal(full, 0);
	/* absent */
	assert_int_equal(path("{\"result\":\"ok\"}", "status"), 0);
	assert_int_equal(path("{\"result\":{\"x\":1}}", "result.status"), 0);
	assert_int_equal(path("{\"result\":\"ok\"}", "result.status"), 0);
	assert_int_equal(path("{\"a\":[1,2]}", "a.5"), 0);
	assert_int_equal(path("[{\"result\":\"ok\"}]", "result"), 0);
	assert_int_equal(path("{\"nested\":{\"result\":\"ok\"}}", "result"), 0);
}

static void json_malformed(void **state)
{
	static const char *const bad[] = {
		"", "garbage", "<html>ok</html>", "{\"result\":\"ok\"", "{\"result\":\"ok\"} x",
		"{\"result\":ok}", "{\"result\":\"ok\",}", "{result:\"ok\"}", "{\"result\":01}",
		"{\"result\":\"o\x01k\"}", "{\"result\":\"\\x\"}", "{\"result\":\"\\ud800\"}",
		"{\"result\":\"\xff\"}", "{\"result\":\"\\u0000ok\"}",
		"{\"result\":\"ok\"}{\"result\":\"ok\"}",
		/* a duplicate member on the path: which one is meant? */
		"{\"result\":\"denied\",\"result\":\"ok\"}",
		/* the value there is not a scalar */
		"{\"result\":{\"ok\":true}}", "{\"result\":[\"ok\"]}",
	};
	char deep[200] = "";
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		full = -1;
		assert_int_equal(gw_json_path(bad[i], strlen(bad[i]), "result", out, sizeof(out),
					      &full), -1);
	}
	/* a body cut short inside a string is malformed too (not read past @len) */
	assert_int_equal(gw_json_path("{\"result\":\"ok\"}", 13, "result", out, sizeof(out), &full),
			 -1);
	/* nesting beyond 16 levels */
	for (i = 0; i < 20; i++)
		strcat(deep, "[");
	strcat(deep, "1");
	for (i = 0; i < 20; i++)
		strcat(deep, "]");
	assert_int_equal(path(deep, "x"), -1);
	/* duplicates off the path are allowed, as RFC 8259 leaves them */
	assert_int_equal(path("{\"x\":1,\"x\":2,\"result\":\"ok\"}", "result"), 1);
}

static struct sl_route_login login(uint8_t by, const char *name)
{
	struct sl_route_login l = { .from = SL_LOGIN_BASIC, .by = by };

	l.success[0] = 200;
	l.n_success = 1;
	l.failure[0] = 401;
	l.failure[1] = 403;
	l.n_failure = 2;
	snprintf(l.by_name, sizeof(l.by_name), "%s", name);
	snprintf(l.ok[0], sizeof(l.ok[0]), "ok");
	snprintf(l.ok[1], sizeof(l.ok[1]), "true");
	l.n_ok = 2;
	snprintf(l.no[0], sizeof(l.no[0]), "denied");
	snprintf(l.no[1], sizeof(l.no[1]), "false");
	l.n_no = 2;
	return l;
}

static void verdicts(void **state)
{
	struct evkeyvalq h;
	struct sl_route_login st = login(SL_VERDICT_STATUS, ""), hd = login(SL_VERDICT_HEADER,
		"X-Auth-Result"), js = login(SL_VERDICT_JSON, "result");
	const char *b;

	(void)state;
	TAILQ_INIT(&h);
	/* statuses alone */
	assert_int_equal(gw_up_verdict(&st, 200, &h, "", 0), GW_VERDICT_SUCCESS);
	assert_int_equal(gw_up_verdict(&st, 403, &h, "", 0), GW_VERDICT_FAILURE);
	assert_int_equal(gw_up_verdict(&st, 500, &h, "", 0), GW_VERDICT_OTHER_STATUS);
	/* a header: missing, then each value */
	assert_int_equal(gw_up_verdict(&hd, 200, &h, "", 0), GW_VERDICT_MISSING);
	evhttp_add_header(&h, "x-auth-result", "ok");
	assert_int_equal(gw_up_verdict(&hd, 200, &h, "", 0), GW_VERDICT_SUCCESS);
	/* a failure status wins over what the header says; an other status is neither */
	assert_int_equal(gw_up_verdict(&hd, 401, &h, "", 0), GW_VERDICT_FAILURE);
	assert_int_equal(gw_up_verdict(&hd, 502, &h, "", 0), GW_VERDICT_OTHER_STATUS);
	/* a second instance that disagrees: neither */
	evhttp_add_header(&h, "X-Auth-Result", "denied");
	assert_int_equal(gw_up_verdict(&hd, 200, &h, "", 0), GW_VERDICT_MALFORMED);
	evhttp_clear_headers(&h);
	evhttp_add_header(&h, "X-Auth-Result", "denied");
	assert_int_equal(gw_up_verdict(&hd, 200, &h, "", 0), GW_VERDICT_FAILURE);
	evhttp_clear_headers(&h);
	/* exact and case-sensitive: "OK" is in neither list */
	evhttp_add_header(&h, "X-Auth-Result", "OK");
	assert_int_equal(gw_up_verdict(&hd, 200, &h, "", 0), GW_VERDICT_UNKNOWN);
	evhttp_clear_headers(&h);
	/* a JSON field */
	b = "{\"result\":\"ok\"}";
	assert_int_equal(gw_up_verdict(&js, 200, &h, b, strlen(b)), GW_VERDICT_SUCCESS);
	b = "{\"result\":true}";
	assert_int_equal(gw_up_verdict(&js, 200, &h, b, strlen(b)), GW_VERDICT_SUCCESS);
	b = "{\"result\":false}";
	assert_int_equal(gw_up_verdict(&js, 200, &h, b, strlen(b)), GW_VERDICT_FAILURE);
	b = "{\"status\":\"ok\"}";
	assert_int_equal(gw_up_verdict(&js, 200, &h, b, strlen(b)), GW_VERDICT_MISSING);
	b = "{\"result\":\"maybe\"}";
	assert_int_equal(gw_up_verdict(&js, 200, &h, b, strlen(b)), GW_VERDICT_UNKNOWN);
	b = "{\"result\":\"okokokokokokokokokokokokokokokokokok\"}";
	assert_int_equal(gw_up_verdict(&js, 200, &h, b, strlen(b)), GW_VERDICT_UNKNOWN);
	b = "<html>{\"result\":\"ok\"}</html>";
	assert_int_equal(gw_up_verdict(&js, 200, &h, b, strlen(b)), GW_VERDICT_MALFORMED);
	assert_int_equal(gw_up_verdict(&js, 200, &h, "", 0), GW_VERDICT_MALFORMED);
	/* outcomes for the counters */
	assert_int_equal(gw_verdict_outcome(GW_VERDICT_SUCCESS), 1);
	assert_int_equal(gw_verdict_outcome(GW_VERDICT_FAILURE), 0);
	assert_int_equal(gw_verdict_outcome(GW_VERDICT_MALFORMED), -1);
	assert_int_equal(gw_verdict_outcome(GW_VERDICT_MISSING), -1);
	assert_int_equal(gw_verdict_outcome(GW_VERDICT_UNKNOWN), -1);
	assert_int_equal(gw_verdict_outcome(GW_VERDICT_OTHER_STATUS), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(json_paths),
		cmocka_unit_test(json_malformed),
		cmocka_unit_test(verdicts),
	};

	return cmocka_run_group_tests_name("gw_upstream_verdict", tests, NULL, NULL);
}
