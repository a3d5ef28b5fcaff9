// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* An edge event as a line of `sluicectl events` (see evfmt.h). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "addr.h"
#include "config.h"
#include "evfmt.h"
#include "reasons.h"

void sl_event_time(uint64_t ts_ns, int64_t wall_off, char *buf, size_t n)
{
	int64_t wall = (int64_t)ts_ns + wall_off;
	time_t secs = (time_t)(wall / 1000000000);
	struct tm tm;
	size_t l;

	gmtime_r(&secs, &tm);
	l = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + l, n - l, ".%03dZ", (int)((wall / 1000000) % 1000));
}

size_t sl_event_format(const struct sl_event *e, int64_t wall_off, const char *cls, bool json,
		       char *buf, size_t n)
{
	struct sl_prefix p = { .family = e->family, .plen = e->plen };
	char pfx[64], when[40];
	int len;

	memcpy(p.addr, e->addr, 16);
	sl_prefix_str(&p, pfx, sizeof(pfx));
	sl_event_time(e->ts_ns, wall_off, when, sizeof(when));
	/* Class, reason and action names are [a-z0-9_] (the config loader checks class
	 * names): nothing in a JSON string here needs escaping. */
	if (json)
		len = snprintf(buf, n, "{\"time\":\"%s\",\"prefix\":\"%s\",\"class\":\"%s\","
			       "\"reason\":\"%s\",\"action\":\"%s\",\"retry_after\":%u,"
			       "\"port\":%u}\n", when, pfx, cls, sl_reason_name(e->reason),
			       sl_action_name(e->action), e->retry_after, e->dport);
	else if (e->retry_after)
		len = snprintf(buf, n, "%s %-24s %-12s %-14s %-5s retry_after=%u port=%u\n", when,
			       pfx, cls, sl_reason_name(e->reason), sl_action_name(e->action),
			       e->retry_after, e->dport);
	else
		len = snprintf(buf, n, "%s %-24s %-12s %-14s %-5s port=%u\n", when, pfx, cls,
			       sl_reason_name(e->reason), sl_action_name(e->action), e->dport);
	if (len < 0)
		len = 0;
	return (size_t)len < n ? (size_t)len : n - 1;
}
