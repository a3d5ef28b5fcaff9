// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Prefix parsing, formatting and the bucket keys built from addresses. */
#include "unit.h"

#include <errno.h>

#include "addr.h"

static void strict_parse_rejects_host_bits(void **state)
{
	struct sl_prefix p;
	char err[160] = "";

	(void)state;
	assert_int_equal(sl_prefix_parse("198.51.100.7/24", &p, 1, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "'198.51.100.7/24' has host bits set (did you mean "
				 "198.51.100.0/24?)");
	assert_int_equal(sl_prefix_parse("2001:db8::1/48", &p, 1, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "'2001:db8::1/48' has host bits set (did you mean 2001:db8::/48?)");
}

static void lenient_parse_masks_host_bits(void **state)
{
	static const uint8_t v4[16] = { 198, 51, 100, 0 };
	static const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0x12, 0x00 };
	struct sl_prefix p;
	char err[160];

	(void)state;
	assert_int_equal(sl_prefix_parse("198.51.100.7/24", &p, 0, err, sizeof(err)), 0);
	assert_int_equal(p.family, SL_FAM_V4);
	assert_int_equal(p.plen, 24);
	assert_memory_equal(p.addr, v4, 16);

	assert_int_equal(sl_prefix_parse("2001:db8:12ff::1/39", &p, 0, err, sizeof(err)), 0);
	assert_int_equal(p.family, SL_FAM_V6);
	assert_int_equal(p.plen, 39);
	assert_memory_equal(p.addr, v6, 16); /* 0x12ff masked to 7 bits of its first byte */

	/* A bare address is a full-length prefix, and strictly fine. */
	assert_int_equal(sl_prefix_parse("192.0.2.1", &p, 1, err, sizeof(err)), 0);
	assert_int_equal(p.plen, 32);
	assert_int_equal(p.addr[3], 1);
	assert_int_equal(sl_prefix_parse("::1", &p, 1, err, sizeof(err)), 0);
	assert_int_equal(p.plen, 128);
	assert_int_equal(p.addr[15], 1);
}

static void bad_prefixes(void **state)
{
	struct sl_prefix p;
	char err[160];

	(void)state;
	assert_int_equal(sl_prefix_parse("10.0.0.0/33", &p, 0, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "'10.0.0.0/33': prefix length must be 0..32");
	assert_int_equal(sl_prefix_parse("::/129", &p, 0, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "'::/129': prefix length must be 0..128");
	assert_int_equal(sl_prefix_parse("10.0.0.0/", &p, 0, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "'10.0.0.0/': prefix length must be 0..32");
	assert_int_equal(sl_prefix_parse("10.0.0.0/-1", &p, 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(sl_prefix_parse("10.0.0/8", &p, 0, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "'10.0.0' is not an IPv4 or IPv6 address");
	assert_int_equal(sl_prefix_parse("", &p, 0, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "'' is not an address");
}

static void format_round_trips(void **state)
{
	static const char *const in[] = { "198.51.100.0/24", "0.0.0.0/0", "192.0.2.1/32",
					  "2001:db8::/48", "::/0", "2001:db8:1:2:3:4:5:6/128",
					  "::ffff:192.0.2.0/120" };
	struct sl_prefix p, q;
	char err[160], buf[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		assert_int_equal(sl_prefix_parse(in[i], &p, 1, err, sizeof(err)), 0);
		assert_string_equal(sl_prefix_str(&p, buf, sizeof(buf)), in[i]);
		assert_int_equal(sl_prefix_parse(buf, &q, 1, err, sizeof(err)), 0);
		assert_memory_equal(&p, &q, sizeof(p));
	}
}

static void lpm_key_maps_ipv4(void **state)
{
	static const uint8_t mapped[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 0, 0 };
	struct sl_lpm_key k;
	struct sl_prefix p;
	char err[160];

	(void)state;
	assert_int_equal(sl_prefix_parse("10.1.0.0/16", &p, 1, err, sizeof(err)), 0);
	sl_prefix_to_lpm(&p, &k);
	assert_int_equal(k.prefixlen, 112);
	assert_memory_equal(k.addr, mapped, 16);
	assert_int_equal(sl_prefix_parse("2001:db8::/32", &p, 1, err, sizeof(err)), 0);
	sl_prefix_to_lpm(&p, &k);
	assert_int_equal(k.prefixlen, 32);
	assert_memory_equal(k.addr, p.addr, 16);
}

static void bucket_keys_zero_host_bits(void **state)
{
	static const uint8_t v4[16] = { 198, 51, 100 };
	static const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0xab, 0xcd };
	struct sl_prefix a;
	struct sl_bkey k;
	char err[160];

	(void)state;
	assert_int_equal(sl_prefix_parse("198.51.100.77", &a, 1, err, sizeof(err)), 0);
	sl_bkey_make(&k, &a, 24, SL_LEVEL_PREFIX, 3);
	assert_int_equal(k.family, SL_FAM_V4);
	assert_int_equal(k.plen, 24);
	assert_int_equal(k.level, SL_LEVEL_PREFIX);
	assert_int_equal(k.class_id, 3);
	assert_memory_equal(k.addr, v4, sizeof(k.addr)); /* IPv4 in the first 4 bytes */
	assert_int_equal(a.addr[3], 77);      /* the source is not modified */

	assert_int_equal(sl_prefix_parse("2001:db8:abcd:1234:5678::9", &a, 1, err, sizeof(err)), 0);
	sl_bkey_make(&k, &a, 48, SL_LEVEL_PARENT, 7);
	assert_int_equal(k.family, SL_FAM_V6);
	assert_int_equal(k.plen, 48);
	assert_int_equal(k.level, SL_LEVEL_PARENT);
	assert_int_equal(k.class_id, 7);
	assert_memory_equal(k.addr, v6, sizeof(k.addr)); /* /64 at most: 8 bytes */

	/* A prefix length that is not a byte boundary. */
	assert_int_equal(sl_prefix_parse("198.51.100.255", &a, 1, err, sizeof(err)), 0);
	sl_bkey_make(&k, &a, 25, SL_LEVEL_PREFIX, 0);
	assert_int_equal(k.addr[3], 0x80);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(strict_parse_rejects_host_bits),
		cmocka_unit_test(lenient_parse_masks_host_bits),
		cmocka_unit_test(bad_prefixes),
		cmocka_unit_test(format_round_trips),
		cmocka_unit_test(lpm_key_maps_ipv4),
		cmocka_unit_test(bucket_keys_zero_host_bits),
	};

	return cmocka_run_group_tests_name("addr", tests, NULL, NULL);
}
