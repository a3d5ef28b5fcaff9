// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Prefix parsing and key construction: see addr.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"

static void mask_bytes(uint8_t *a, int bytes, int plen)
{
	int i;

	for (i = 0; i < bytes; i++) {
		int bits = plen - 8 * i;

		if (bits >= 8)
			continue;
		a[i] &= bits <= 0 ? 0 : (uint8_t)(0xff << (8 - bits));
	}
}

void sl_prefix_mask(struct sl_prefix *p, uint8_t plen)
{
	mask_bytes(p->addr, 16, plen);
	p->plen = plen;
}

int sl_prefix_parse(const char *s, struct sl_prefix *p, int strict, char *err, size_t errlen)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash;
	uint8_t orig[16];
	long plen = -1;
	size_t alen;

	memset(p, 0, sizeof(*p));
	slash = strchr(s, '/');
	alen = slash ? (size_t)(slash - s) : strlen(s);
	if (alen == 0 || alen >= sizeof(buf)) {
		snprintf(err, errlen, "'%s' is not an address", s);
		return -EINVAL;
	}
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (inet_pton(AF_INET, buf, p->addr) == 1) {
		p->family = SL_FAM_V4;
	} else if (inet_pton(AF_INET6, buf, p->addr) == 1) {
		p->family = SL_FAM_V6;
	} else {
		snprintf(err, errlen, "'%s' is not an IPv4 or IPv6 address", buf);
		return -EINVAL;
	}
	if (slash) {
		char *end;

		errno = 0;
		plen = strtol(slash + 1, &end, 10);
		if (errno || end == slash + 1 || *end || plen < 0 ||
		    plen > sl_family_bits(p->family)) {
			snprintf(err, errlen, "'%s': prefix length must be 0..%u", s,
				 sl_family_bits(p->family));
			return -EINVAL;
		}
	} else {
		plen = sl_family_bits(p->family);
	}
	memcpy(orig, p->addr, sizeof(orig));
	sl_prefix_mask(p, (uint8_t)plen);
	if (strict && memcmp(orig, p->addr, sizeof(orig))) {
		char net[64];

		snprintf(err, errlen, "'%s' has host bits set (did you mean %s?)", s,
			 sl_prefix_str(p, net, sizeof(net)));
		return -EINVAL;
	}
	return 0;
}

char *sl_prefix_str(const struct sl_prefix *p, char *buf, size_t n)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(p->family == SL_FAM_V4 ? AF_INET : AF_INET6, p->addr, a, sizeof(a));
	snprintf(buf, n, "%s/%u", a, p->plen);
	return buf;
}

void sl_prefix_to_lpm(const struct sl_prefix *p, struct sl_lpm_key *k)
{
	memset(k, 0, sizeof(*k));
	if (p->family == SL_FAM_V4) {
		k->addr[10] = 0xff;
		k->addr[11] = 0xff;
		memcpy(&k->addr[12], p->addr, 4);
		k->prefixlen = SL_V4_MAPPED_PLEN + p->plen;
	} else {
		memcpy(k->addr, p->addr, 16);
		k->prefixlen = p->plen;
	}
}

void sl_lpm_to_prefix(const struct sl_lpm_key *k, struct sl_prefix *p)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	memset(p, 0, sizeof(*p));
	if (k->prefixlen >= SL_V4_MAPPED_PLEN && !memcmp(k->addr, mapped, 12)) {
		p->family = SL_FAM_V4;
		p->plen = (uint8_t)(k->prefixlen - SL_V4_MAPPED_PLEN);
		memcpy(p->addr, &k->addr[12], 4);
	} else {
		p->family = SL_FAM_V6;
		p->plen = (uint8_t)k->prefixlen;
		memcpy(p->addr, k->addr, 16);
	}
}

void sl_bkey_make(struct sl_bkey *k, const struct sl_prefix *a, uint8_t plen, uint8_t level,
		  uint8_t class_id)
{
	memset(k, 0, sizeof(*k));
	k->family = a->family;
	k->plen = plen;
	k->level = level;
	k->class_id = class_id;
	memcpy(k->addr, a->addr, a->family == SL_FAM_V4 ? 4 : sizeof(k->addr));
	mask_bytes(k->addr, sizeof(k->addr), plen);
}
