// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Client addresses: X-Forwarded-For counted from the right, spoofed chains ignored. */
#include "unit.h"

#include "gw_addr.h"

static struct gw_addr A(const char *s)
{
	struct gw_addr a;

	assert_int_equal(gw_addr_parse(s, strlen(s), &a), 0);
	return a;
}

static const char *str(const struct gw_addr *a)
{
	static char buf[64];

	return gw_addr_str(a, buf, sizeof(buf));
}

/* The client address for @peer with one X-Forwarded-For header @xff and @hops. */
static const char *client(const char *peer, const char *xff, uint32_t hops, int *src)
{
	struct gw_addr p = A(peer), out;
	const char *v[1] = { xff };

	*src = gw_client_addr(&p, v, xff ? 1 : 0, hops, &out);
	return str(&out);
}

static void parses_every_form(void **state)
{
	struct gw_addr a;

	(void)state;
	assert_string_equal(str(&(struct gw_addr){ 0 }), "?");
	a = A("192.0.2.7");
	assert_int_equal(a.family, 4);
	assert_string_equal(str(&a), "192.0.2.7");
	a = A("192.0.2.7:8443");
	assert_string_equal(str(&a), "192.0.2.7");
	a = A("2001:db8::1");
	assert_int_equal(a.family, 6);
	a = A("[2001:db8::1]");
	assert_string_equal(str(&a), "2001:db8::1");
	a = A("[2001:db8::1]:443");
	assert_string_equal(str(&a), "2001:db8::1");
	/* IPv4-mapped IPv6 is the IPv4 address: one client, one key. */
	a = A("::ffff:198.51.100.3");
	assert_int_equal(a.family, 4);
	assert_string_equal(str(&a), "198.51.100.3");
	assert_int_not_equal(gw_addr_parse("unknown", 7, &a), 0);
	assert_int_not_equal(gw_addr_parse("192.0.2.7:", 10, &a), 0);
	assert_int_not_equal(gw_addr_parse("192.0.2.7:x", 11, &a), 0);
	assert_int_not_equal(gw_addr_parse("[2001:db8::1", 12, &a), 0);
	assert_int_not_equal(gw_addr_parse("[2001:db8::1]x", 14, &a), 0);
	assert_int_not_equal(gw_addr_parse("300.1.1.1", 9, &a), 0);
	assert_int_not_equal(gw_addr_parse("", 0, &a), 0);
}

static void no_trusted_hops_means_the_socket(void **state)
{
	int src;

	(void)state;
	assert_string_equal(client("10.0.0.9", "203.0.113.5", 0, &src), "10.0.0.9");
	assert_int_equal(src, GW_ADDR_PEER);
}

static void counts_hops_from_the_right(void **state)
{
	int src;

	(void)state;
	/* One proxy of ours: it appended the address it saw, the last entry. */
	assert_string_equal(client("10.0.0.9", "203.0.113.5", 1, &src), "203.0.113.5");
	assert_int_equal(src, GW_ADDR_XFF);
	/* Two: the outer one appended the client, the inner one the outer. */
	assert_string_equal(client("10.0.0.9", "203.0.113.5, 10.0.0.1", 2, &src),
			    "203.0.113.5");
	assert_string_equal(client("10.0.0.9", " 203.0.113.5 ,\t10.0.0.1 ", 2, &src),
			    "203.0.113.5");
	assert_int_equal(src, GW_ADDR_XFF);
}

/* What the client sent itself sits left of what our proxies appended: never read. */
static void spoofed_chains_are_ignored(void **state)
{
	int src;

	(void)state;
	assert_string_equal(client("10.0.0.9", "1.2.3.4, 5.6.7.8, 203.0.113.5", 1, &src),
			    "203.0.113.5");
	assert_string_equal(client("10.0.0.9", "1.2.3.4, 203.0.113.5, 10.0.0.1", 2, &src),
			    "203.0.113.5");
	/* Garbage to the left does not matter either. */
	assert_string_equal(client("10.0.0.9", "not-an-ip, <script>, 203.0.113.5", 1, &src),
			    "203.0.113.5");
	assert_int_equal(src, GW_ADDR_XFF);
}

/* Fewer entries than hops: the request did not come through all our proxies. */
static void short_headers_are_not_trusted(void **state)
{
	int src;

	(void)state;
	assert_string_equal(client("10.0.0.9", "203.0.113.5", 2, &src), "10.0.0.9");
	assert_int_equal(src, GW_ADDR_XFF_SHORT);
	assert_string_equal(client("10.0.0.9", "", 1, &src), "10.0.0.9");
	assert_int_equal(src, GW_ADDR_XFF_SHORT);
	assert_string_equal(client("10.0.0.9", " , ,", 1, &src), "10.0.0.9");
	assert_int_equal(src, GW_ADDR_XFF_SHORT);
	assert_string_equal(client("10.0.0.9", NULL, 1, &src), "10.0.0.9");
	assert_int_equal(src, GW_ADDR_XFF_MISSING);
	/* The entry at the trusted position is not an address: fall back, do not guess. */
	assert_string_equal(client("10.0.0.9", "203.0.113.5, bogus", 1, &src), "10.0.0.9");
	assert_int_equal(src, GW_ADDR_XFF_INVALID);
}

/* Several X-Forwarded-For headers are one list, in order. */
static void repeated_headers_join_in_order(void **state)
{
	struct gw_addr p = A("10.0.0.9"), out;
	const char *v[3] = { "1.2.3.4, 198.51.100.1", "203.0.113.5", "10.0.0.1" };
	int src;

	(void)state;
	src = gw_client_addr(&p, v, 3, 1, &out);
	assert_int_equal(src, GW_ADDR_XFF);
	assert_string_equal(str(&out), "10.0.0.1");
	gw_client_addr(&p, v, 3, 2, &out);
	assert_string_equal(str(&out), "203.0.113.5");
	gw_client_addr(&p, v, 3, 3, &out);
	assert_string_equal(str(&out), "198.51.100.1");
	src = gw_client_addr(&p, v, 3, 5, &out);
	assert_int_equal(src, GW_ADDR_XFF_SHORT);
	assert_string_equal(str(&out), "10.0.0.9");
	/* IPv6 entries with ports and brackets. */
	v[0] = "[2001:db8::7]:5555, 2001:db8::1";
	gw_client_addr(&p, v, 1, 2, &out);
	assert_string_equal(str(&out), "2001:db8::7");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parses_every_form),
		cmocka_unit_test(no_trusted_hops_means_the_socket),
		cmocka_unit_test(counts_hops_from_the_right),
		cmocka_unit_test(spoofed_chains_are_ignored),
		cmocka_unit_test(short_headers_are_not_trusted),
		cmocka_unit_test(repeated_headers_join_in_order),
	};

	return cmocka_run_group_tests_name("gw_addr", tests, NULL, NULL);
}
