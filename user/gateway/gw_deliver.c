// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Outbound messages and the built-in "log" delivery (see gw_deliver.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gw_deliver.h"
#include "log.h"

static int deliver_log(struct gw_delivery *d, const char *tenant, const char *account,
		       const char *kind, const char *text)
{
	if (!d->f) {
		log_info("delivery: tenant=%s to=%s kind=%s %s", tenant, account, kind, text);
		return 0;
	}
	if (fprintf(d->f, "%llu tenant=%s to=%s kind=%s %s\n", (unsigned long long)time(NULL),
		    tenant, account, kind, text) < 0 || fflush(d->f))
		return -EIO;
	return 0;
}

int gw_delivery_open(struct gw_delivery *d, const struct sl_gateway_cfg *gw, char *err,
		     size_t errlen)
{
	memset(d, 0, sizeof(*d));
	if (strcmp(gw->delivery, "log")) {
		snprintf(err, errlen, "gateway.delivery: unknown delivery '%s'", gw->delivery);
		return -EINVAL;
	}
	d->send = deliver_log;
	if (gw->delivery_log[0]) {
		d->f = fopen(gw->delivery_log, "a");
		if (!d->f) {
			int e = errno;

			snprintf(err, errlen, "gateway.delivery_log: %s: %s", gw->delivery_log,
				 strerror(e));
			return -e;
		}
		snprintf(d->path, sizeof(d->path), "%s", gw->delivery_log);
	}
	return 0;
}

void gw_delivery_close(struct gw_delivery *d)
{
	if (d->f)
		fclose(d->f);
	d->f = NULL;
}

int gw_deliver(struct gw_delivery *d, const char *tenant, const char *account,
	       const char *kind, const char *text)
{
	int r = d->send ? d->send(d, tenant, account, kind, text) : -ENOSYS;

	if (r)
		d->failed++;
	else
		d->sent++;
	return r;
}
