// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Edge budgets in the routes' terms (budget.h): the numbers as people read them, what each
 * port charges, and a class's budget as requests per second of each route, in the text and
 * JSON that sluicectl limits and prefix show print. */
#include "unit.h"

#include <errno.h>
#include <limits.h>
#include <math.h>

#include "budget.h"
#include "config.h"

#define ERRLEN 8192

/*
 * The shipped sample's ports, routes and two of its classes (examples/sluice.conf as of issue
 * 19), written out here so that re-deriving the sample's numbers does not move these
 * expectations: the formatting is under test, not the sample.
 */
static const char sample[] =
	"edge: { interfaces = [\"eth0\"];\n"
	"  ports = ( { port = 80;  action = \"reply\"; cost = 1; },\n"
	"            { port = 443; protocol = \"tls\"; action = \"drop\"; cost = 950; } ); };\n"
	"classes = (\n"
	"  { name = \"hosting\"; v4_prefix = 24; v6_prefix = 48; v4_parent = 16; v6_parent = 32;\n"
	"    rate = 32.0; burst = 1900.0; parent_rate = 320.0; parent_burst = 19000.0; },\n"
	"  { name = \"business\"; v4_prefix = 32; v6_prefix = 56; v4_parent = 24; v6_parent = 48;\n"
	"    rate = 4000.0; burst = 285000.0; parent_rate = 16000.0; parent_burst = 1140000.0; },\n"
	"  { name = \"unknown\"; v4_prefix = 32; v6_prefix = 64; v4_parent = 24; v6_parent = 48;\n"
	"    rate = 32.0; burst = 9500.0; parent_rate = 320.0; parent_burst = 95000.0; }\n"
	");\n"
	"routes = (\n"
	"  { name = \"login\"; method = \"POST\"; path = \"/login\"; cpu = 950.0; },\n"
	"  { name = \"token\"; method = \"POST\"; path = \"/token\"; cpu = 40.0; },\n"
	"  { name = \"validate\"; method = \"GET\"; path = \"/token/validate\"; cpu = 1.0; },\n"
	"  { name = \"introspect\"; method = \"POST\"; path = \"/introspect\"; cpu = 1.0; },\n"
	"  { name = \"mfa_send\"; method = \"POST\"; path = \"/mfa/send\"; cpu = 20.0; },\n"
	"  { name = \"mfa_verify\"; method = \"POST\"; path = \"/mfa/verify\"; cpu = 5.0; },\n"
	"  { name = \"password_reset\"; method = \"POST\"; path = \"/password-reset\"; cpu = 20.0; },\n"
	"  { name = \"register\"; method = \"POST\"; path = \"/register\"; cpu = 20.0; },\n"
	"  { name = \"magic_page\"; method = \"GET\"; path = \"/magic/\"; cpu = 1.0; },\n"
	"  { name = \"magic_confirm\"; method = \"POST\"; path = \"/magic/\"; cpu = 950.0; }\n"
	");\n";

static int load_text(const char *text, struct sl_config *c)
{
	char path[256], err[ERRLEN];
	int ret;

	snprintf(path, sizeof(path), "%s", tmpfile_with("budget", text));
	ret = sl_config_load(path, NULL, c, err, sizeof(err));
	unlink(path);
	if (ret)
		fail_msg("does not load:\n%s", err);
	return ret;
}

static void counts_read_like_people_write_them(void **state)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{ 0, "0" },           { 4.2105, "4.2" },       { 0.6315, "0.63" },
		{ 0.0034, "0.0034" }, { 0.000034, "0.000034" }, { 1, "1.0" },
		{ 9.96, "10" },       { 52.6, "53" },          { 99.4, "99" },
		{ 99.6, "100" },      { 100, "100" },          { 999.5, "1,000" },
		{ 4000, "4,000" },    { 285000, "285,000" },    { 1140000, "1,140,000" },
		{ 123456789, "123,456,789" },
	};
	char buf[32];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(sl_fmt_count(cases[i].v, buf, sizeof(buf)), cases[i].want))
			fail_msg("%g: got \"%s\", expected \"%s\"", cases[i].v, buf, cases[i].want);
	/* A short buffer is cut, never overrun. */
	assert_string_equal(sl_fmt_count(285000, buf, 4), "285");
}

/* Rates in the unit a person would say them in: the "0.00555556/s" is 20 an hour. */
static void rates_read_in_the_unit_people_say_them(void **state)
{
	static const struct {
		double per_s;
		const char *want;
	} cases[] = {
		{ 20.0 / 3600, "20/h" },     { 2.0 / 60, "2/min" },      { 4.2, "4.2/s" },
		{ 0.001, "3.6/h" },          { 1, "1/s" },               { 10, "10/s" },
		{ 4000, "4,000/s" },         { 1234567, "1,234,567/s" }, { 0.5, "30/min" },
		{ 1.0 / 1.05, "0.95/s" },    { 0.9, "0.90/s" },          { 0.89, "53/min" },
		{ 0.0034, "12/h" },          { 1.0 / 86400, "1/d" },     { 0.5 / 86400, "0.50/d" },
		{ 1e-9, "0.000086/d" },      { 2.04 / 60, "2.0/min" },   { 100.0 / 3600, "100/h" },
		{ 0, "0/s" },                { -4.2, "-4.2/s" },         { NAN, "-" },
		{ INFINITY, "inf/s" },       { 250.0 / 3600, "250/h" },   { 30.0 / 86400, "30/d" },
		{ 3204.0 / 3600, "53/min" }, { 1000.0 / 3600, "17/min" }, { 2.9997, "3.0/s" },
	};
	char buf[32];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(sl_fmt_rate(cases[i].per_s, buf, sizeof(buf)), cases[i].want))
			fail_msg("%g/s: got \"%s\", expected \"%s\"", cases[i].per_s, buf,
				 cases[i].want);
	/* A short buffer is cut, never overrun. */
	assert_string_equal(sl_fmt_rate(4000, buf, 4), "4,0");
	assert_string_equal(sl_fmt_rate(4000, buf, 1), "");
}

/* On the sample's ports: 80 charges routes (the dearest, login, is 950), 443 a login's price per
 * TLS connection; ties name the route, the first port that has it. */
static void each_port_charges_what_its_front_reads(void **state)
{
	static struct sl_config c;
	struct sl_charge ch;
	char buf[192];

	(void)state;
	load_text(sample, &c);
	assert_true(sl_port_charges_routes(&c.ports[0]));
	assert_false(sl_port_charges_routes(&c.ports[1]));
	sl_port_dearest(&c, 0, &ch);
	assert_int_equal(ch.kind, SL_CHARGE_ROUTE);
	assert_int_equal(ch.cost, 950);
	assert_string_equal(c.routes[ch.route].name, "login");
	assert_string_equal(sl_charge_str(&c, &ch, buf, sizeof(buf)),
			    "route 'login' (POST /login) on port 80");
	assert_string_equal(sl_charge_noun(&c, &ch, buf, sizeof(buf)), "'login'");
	sl_port_dearest(&c, 1, &ch);
	assert_int_equal(ch.kind, SL_CHARGE_PORT);
	assert_int_equal(ch.cost, 950);
	assert_string_equal(sl_charge_str(&c, &ch, buf, sizeof(buf)),
			    "a TLS connection to port 443 (its cost)");
	assert_string_equal(sl_charge_noun(&c, &ch, buf, sizeof(buf)), "connections");
	sl_edge_dearest(&c, &ch);
	assert_int_equal(ch.port, 0);
	assert_int_equal(ch.kind, SL_CHARGE_ROUTE);
	assert_int_equal(sl_edge_max_cost(&c), 950);

	/* The datapath's rounding: at least 1, to the nearest unit. */
	{
		struct sl_route_cfg r = { .cpu = 0.2 };

		assert_int_equal(sl_route_charge(&r), 1);
		r.cpu = 950.4;
		assert_int_equal(sl_route_charge(&r), 950);
		r.cpu = 950.5;
		assert_int_equal(sl_route_charge(&r), 951);
	}
}

/* The example: a business /32's 4,000 units/s is 4.2 logins and 4,000 token checks a
 * second on the HTTP port, 4.2 TLS connections on 443. */
static void a_class_budget_reads_as_requests_per_route(void **state)
{
	static struct sl_config c;
	const struct sl_class_cfg *b;
	char buf[4096];

	(void)state;
	load_text(sample, &c);
	b = &c.classes[sl_config_class(&c, "business")];
	assert_true(b->rate == 4000.0);
	assert_string_equal(sl_budget_port_str(&c, 0, b->rate, buf, sizeof(buf)),
			    "4.2 login/s, 100 token/s, 4,000 validate/s, 4,000 introspect/s, "
			    "200 mfa_send/s, 800 mfa_verify/s, 200 password_reset/s, 200 register/s, "
			    "4,000 magic_page/s, 4.2 magic_confirm/s");
	assert_string_equal(sl_budget_port_str(&c, 1, b->rate, buf, sizeof(buf)),
			    "4.2 connections/s");
	sl_budget_str(&c, b->rate, buf, sizeof(buf));
	assert_contains(buf, "port 80: 4.2 login/s, 100 token/s, 4,000 validate/s, ");
	assert_contains(buf, "4.2 magic_confirm/s; port 443: 4.2 connections/s");
	assert_int_equal(strncmp(buf, "port 80: ", 9), 0);
	/* The parent: 16,000 units/s. */
	sl_budget_str(&c, b->parent_rate, buf, sizeof(buf));
	assert_contains(buf, "port 80: 17 login/s, 400 token/s, 16,000 validate/s");
	assert_contains(buf, "port 443: 17 connections/s");
	/* A short buffer is cut, never overrun. */
	sl_budget_str(&c, b->rate, buf, 20);
	assert_string_equal(buf, "port 80: 4.2 login/");
}

/* Ports that read alike are merged; a SYN front and a port without routes charge their cost. */
static void ports_that_read_alike_are_merged(void **state)
{
	static struct sl_config c;
	char buf[1024];

	(void)state;
	load_text("edge: { interfaces = [\"eth0\"];\n"
		  "  ports = ( { port = 80; }, { port = 22; front = \"syn\"; cost = 2; },\n"
		  "            { port = 8080; }, { port = 443; protocol = \"tls\"; cost = 950; } ); };\n"
		  "routes = ( { name = \"login\"; method = \"POST\"; path = \"/login\"; cpu = 950.0; },\n"
		  "           { name = \"check\"; method = \"GET\"; path = \"/v\"; cpu = 1.0; } );\n"
		  "classes = ( { name = \"unknown\"; rate = 1900.0; burst = 9500.0; } );\n", &c);
	assert_string_equal(sl_budget_str(&c, 1900, buf, sizeof(buf)),
			    "ports 80, 8080: 2 login/s, 1,900 check/s; port 22: 950 connections/s; "
			    "port 443: 2 connections/s");

	load_text("edge: { interfaces = [\"eth0\"]; ports = ( { port = 80; cost = 2; } ); };\n"
		  "classes = ( { name = \"unknown\"; rate = 10.0; burst = 20.0; } );\n", &c);
	assert_string_equal(sl_budget_str(&c, 10, buf, sizeof(buf)), "port 80: 5 requests/s");
	{
		char *t = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&t, &len);
		struct json j;

		assert_non_null(f);
		json_init(&j, f);
		json_obj_begin(&j, NULL);
		sl_budget_json(&j, "ports", &c, 10, 20);
		json_obj_end(&j);
		json_end(&j);
		fclose(f);
		assert_string_equal(t, "{\"ports\":[{\"port\":80,\"front\":\"stateless\","
				       "\"protocol\":\"http\",\"charges\":\"request\",\"cost\":2,"
				       "\"per_s\":5,\"at_once\":10}]}\n");
		free(t);
	}
}

/* Run @fn's text or JSON into a string (freed by the caller). */
static char *render(const struct sl_config *c, bool json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	if (json) {
		struct json j;

		json_init(&j, f);
		json_obj_begin(&j, NULL);
		sl_edge_limits_json(&j, c);
		json_obj_end(&j);
		json_end(&j);
	} else {
		sl_edge_limits_text(f, c);
	}
	fclose(f);
	return buf;
}

static void the_limits_document_shows_every_class(void **state)
{
	static struct sl_config c;
	char *t;

	(void)state;
	load_text(sample, &c);
	t = render(&c, false);
	assert_contains(t, "Per edge class (cost units/s");
	assert_contains(t, "\n  business /32 (IPv6 /56): 4,000 units/s, burst 285,000\n"
			   "      port 80: 4.2 login/s, 100 token/s, 4,000 validate/s, ");
	assert_contains(t, "4.2 magic_confirm/s\n      port 443: 4.2 connections/s\n"
			   "  business /24 (IPv6 /48), parent: 16,000 units/s, burst 1,140,000\n"
			   "      port 80: 17 login/s, ");
	assert_contains(t, "\n  hosting /24 (IPv6 /48): 32 units/s, burst 1,900\n"
			   "      port 80: 2.0 login/min, 48 token/min, 32 validate/s");
	assert_contains(t, "\n  unknown /32 (IPv6 /64): ");
	free(t);

	t = render(&c, true);
	assert_contains(t, "{\"edge\":{\"unit\":\"cost units/s (100 us of CPU per unit, as the "
			   "routes)\",\"classes\":[{\"name\":\"hosting\",\"mode\":\"enforce\","
			   "\"v4_prefix\":24,\"v6_prefix\":48,\"v4_parent\":16,\"v6_parent\":32,"
			   "\"key\":{\"rate\":32,\"burst\":1900,\"ports\":[{\"port\":80,"
			   "\"front\":\"stateless\",\"protocol\":\"http\",\"charges\":\"route\","
			   "\"routes\":[{\"name\":\"login\",\"method\":\"POST\",\"path\":\"/login\","
			   "\"cost\":950,\"per_s\":0.033");
	assert_contains(t, "\"at_once\":2}");
	assert_contains(t, "{\"port\":443,\"front\":\"stateless\",\"protocol\":\"tls\","
			   "\"charges\":\"connection\",\"cost\":950,\"per_s\":0.033");
	assert_contains(t, "\"name\":\"business\"");
	assert_contains(t, "\"parent\":{\"rate\":16000,\"burst\":1.14e+06,\"ports\":[");
	free(t);

	/* No edge: no section. */
	c.has_edge = 0;
	t = render(&c, false);
	assert_string_equal(t, "");
	free(t);
	t = render(&c, true);
	assert_string_equal(t, "{}\n");
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(counts_read_like_people_write_them),
		cmocka_unit_test(rates_read_in_the_unit_people_say_them),
		cmocka_unit_test(each_port_charges_what_its_front_reads),
		cmocka_unit_test(a_class_budget_reads_as_requests_per_route),
		cmocka_unit_test(ports_that_read_alike_are_merged),
		cmocka_unit_test(the_limits_document_shows_every_class),
	};

	return cmocka_run_group_tests_name("budget", tests, NULL, NULL);
}
