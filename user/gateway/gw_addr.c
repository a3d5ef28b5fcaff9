// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Client addresses and X-Forwarded-For hop counting (see gw_addr.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "gw_addr.h"

static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static void set_v6(struct gw_addr *out, const uint8_t a[16])
{
	memset(out, 0, sizeof(*out));
	if (!memcmp(a, v4mapped, 12)) {
		out->family = 4;
		memcpy(out->addr, a + 12, 4);
	} else {
		out->family = 6;
		memcpy(out->addr, a, 16);
	}
}

int gw_addr_parse(const char *s, size_t len, struct gw_addr *out)
{
	char buf[64];
	uint8_t a[16];
	const char *host = s;
	size_t hl = len;

	/* Optional whitespace was trimmed by the caller; anything else must be an address. */
	if (!len || len >= sizeof(buf))
		return -EINVAL;
	if (s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (!close)
			return -EINVAL;
		host = s + 1;
		hl = (size_t)(close - s - 1);
		/* After "]" only ":port" may follow. */
		if ((size_t)(close - s + 1) < len) {
			const char *p = close + 1;
			size_t rest = len - (size_t)(p - s);

			if (rest < 2 || *p != ':')
				return -EINVAL;
			for (p++, rest--; rest; p++, rest--)
				if (*p < '0' || *p > '9')
					return -EINVAL;
		}
		memcpy(buf, host, hl);
		buf[hl] = '\0';
		if (inet_pton(AF_INET6, buf, a) != 1)
			return -EINVAL;
		set_v6(out, a);
		return 0;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET6, buf, a) == 1) {
		set_v6(out, a);
		return 0;
	}
	/* IPv4, with an optional ":port". */
	{
		char *colon = strchr(buf, ':');

		if (colon) {
			const char *p;

			if (!colon[1])
				return -EINVAL;
			for (p = colon + 1; *p; p++)
				if (*p < '0' || *p > '9')
					return -EINVAL;
			*colon = '\0';
		}
		memset(out, 0, sizeof(*out));
		if (inet_pton(AF_INET, buf, out->addr) != 1)
			return -EINVAL;
		out->family = 4;
	}
	return 0;
}

int gw_addr_from_sockaddr(const struct sockaddr *sa, struct gw_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (!sa)
		return -EINVAL;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		out->family = 4;
		memcpy(out->addr, &in->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		set_v6(out, in6->sin6_addr.s6_addr);
		return 0;
	}
	return -EAFNOSUPPORT;
}

const char *gw_addr_str(const struct gw_addr *a, char *buf, size_t n)
{
	if (!a->family || !inet_ntop(a->family == 4 ? AF_INET : AF_INET6, a->addr, buf,
				     (socklen_t)n))
		snprintf(buf, n, "?");
	return buf;
}

static int is_ows(char c)
{
	return c == ' ' || c == '\t';
}

int gw_client_addr(const struct gw_addr *peer, const char *const *xff, int n_xff,
		   uint32_t trusted_hops, struct gw_addr *out)
{
	uint32_t seen = 0;
	int h;

	*out = *peer;
	if (!trusted_hops)
		return GW_ADDR_PEER;
	if (n_xff <= 0)
		return GW_ADDR_XFF_MISSING;
	/* Walk the joined list from the right: the last header's last entry is the one our
	 * nearest proxy appended. The first N entries are our proxies': each is parsed, the
	 * N-th is the answer; nothing left of it is looked at. */
	for (h = n_xff - 1; h >= 0; h--) {
		const char *v = xff[h];
		size_t len = strlen(v);
		size_t end = len;

		for (;;) {
			size_t start = end, a, b;

			while (start > 0 && v[start - 1] != ',')
				start--;
			a = start;
			b = end;
			while (a < b && is_ows(v[a]))
				a++;
			while (b > a && is_ows(v[b - 1]))
				b--;
			/* Empty list elements ("a,,b") are not entries (RFC 9110 list rules). */
			if (b > a) {
				struct gw_addr e;

				if (gw_addr_parse(v + a, b - a, &e)) {
					*out = *peer;
					return GW_ADDR_XFF_INVALID;
				}
				if (++seen == trusted_hops) {
					*out = e;
					return GW_ADDR_XFF;
				}
			}
			if (start == 0)
				break;
			end = start - 1;
		}
	}
	return GW_ADDR_XFF_SHORT;
}
