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

/*
 * The forgeries of issue 14: a header long enough, or lines enough, to push our proxy's
 * entry out of a reader that stops early. Read whole, counted from the right, the entry our
 * proxy wrote is the one used however much comes before it.
 */
static void forgeries_cannot_hide_our_entry(void **state)
{
	struct gw_addr p = A("10.0.0.9"), out;
	static char longv[70000];
	const char *lines[80];
	char own[80][24];
	int i, src;

	(void)state;
	/* One line: 64 KiB of garbage and spoofed entries, then what our proxy appended. */
	memset(longv, 'A', 65536);
	for (i = 0; i < 65536; i += 64)
		longv[i] = ',';
	snprintf(longv + 65536, sizeof(longv) - 65536, ", 203.0.113.5, 198.51.100.9");
	lines[0] = longv;
	assert_int_equal(gw_client_addr(&p, lines, 1, 1, &out), GW_ADDR_XFF);
	assert_string_equal(str(&out), "198.51.100.9");
	assert_int_equal(gw_client_addr(&p, lines, 1, 2, &out), GW_ADDR_XFF);
	assert_string_equal(str(&out), "203.0.113.5");
	/* Lines past any count a reader might keep: 79 of the client's, then our proxy's. */
	for (i = 0; i < 79; i++) {
		snprintf(own[i], sizeof(own[i]), "192.0.2.%d", i + 1);
		lines[i] = own[i];
	}
	lines[79] = "198.51.100.9";
	assert_int_equal(gw_client_addr(&p, lines, 80, 1, &out), GW_ADDR_XFF);
	assert_string_equal(str(&out), "198.51.100.9");
	/* A proxy that appends to the last line instead of adding one. */
	lines[78] = "192.0.2.79, 198.51.100.10";
	assert_int_equal(gw_client_addr(&p, lines, 79, 1, &out), GW_ADDR_XFF);
	assert_string_equal(str(&out), "198.51.100.10");
	/* Our proxies wrote the N entries on the right: one that is not an address means the
	 * header is not what they sent. */
	lines[0] = "203.0.113.5, 10.0.0.1, junk";
	src = gw_client_addr(&p, lines, 1, 2, &out);
	assert_int_equal(src, GW_ADDR_XFF_INVALID);
	assert_string_equal(str(&out), "10.0.0.9");
	lines[0] = "203.0.113.5, junk, 10.0.0.1";
	assert_int_equal(gw_client_addr(&p, lines, 1, 2, &out), GW_ADDR_XFF_INVALID);
	/* ... while garbage left of the N-th, however long, is never read. */
	memset(longv, 'x', 65536);
	snprintf(longv + 65536, sizeof(longv) - 65536, ", 198.51.100.9");
	lines[0] = longv;
	assert_int_equal(gw_client_addr(&p, lines, 1, 1, &out), GW_ADDR_XFF);
	assert_string_equal(str(&out), "198.51.100.9");
	assert_int_equal(gw_client_addr(&p, lines, 1, 2, &out), GW_ADDR_XFF_INVALID);
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
		cmocka_unit_test(forgeries_cannot_hide_our_entry),
	};

	return cmocka_run_group_tests_name("gw_addr", tests, NULL, NULL);
}
