// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Outbound messages and the built-in "log" delivery (see gw_deliver.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gw_body.h"
#include "gw_deliver.h"

/* The endpoints that hand messages to the delivery, as the gateway routes them. */
static const char *const senders[] = { "/mfa/send", "/password-reset", "/register" };

const char *gw_delivery_needed(const struct sl_config *c)
{
	size_t i;

	for (i = 0; i < sizeof(senders) / sizeof(senders[0]); i++)
		if (sl_config_route(c, SL_M_POST, senders[i]) >= 0)
			return senders[i];
	return NULL;
}

/* At @o: @key, then @s (at most @max bytes of it) escaped; the new end. */
static size_t field(char *out, size_t cap, size_t o, const char *key, const char *s,
		    size_t max, unsigned flags)
{
	size_t kl = strlen(key);

	if (o + kl + 1 >= cap)
		return o;
	memcpy(out + o, key, kl);
	o += kl;
	return o + gw_esc(out + o, cap - o, s, strnlen(s, max), flags);
}

size_t gw_deliver_record(char *out, size_t cap, uint64_t unixtime, const char *tenant,
			 const char *account, const char *kind, const char *text)
{
	int w = snprintf(out, cap, "%llu", (unsigned long long)unixtime);
	size_t o = w > 0 && (size_t)w < cap ? (size_t)w : 0;

	/* Each field bounded so the whole record fits GW_DELIVER_RECORD_MAX escaped. */
	o = field(out, cap - 1, o, " tenant=", tenant, SL_TENANT_NAME_LEN, 0);
	o = field(out, cap - 1, o, " to=", account, GW_USER_MAX, 0);
	o = field(out, cap - 1, o, " kind=", kind, 32, 0);
	o = field(out, cap - 1, o, " ", text, 512, GW_ESC_SPACE);
	out[o++] = '\n';
	out[o] = '\0';
	return o;
}

static int deliver_log(struct gw_delivery *d, const char *tenant, const char *account,
		       const char *kind, const char *text)
{
	char rec[GW_DELIVER_RECORD_MAX];
	size_t n;

	if (!d->f)
		return -ENODEV; /* never the daemon's log: dropped, and counted as failed */
	n = gw_deliver_record(rec, sizeof(rec), (uint64_t)time(NULL), tenant, account, kind,
			      text);
	if (fwrite(rec, 1, n, d->f) != n || fflush(d->f))
		return -EIO;
	return 0;
}

int gw_delivery_open(struct gw_delivery *d, const struct sl_config *c, char *err,
		     size_t errlen)
{
	const struct sl_gateway_cfg *gw = &c->gw;
	const char *need;

	memset(d, 0, sizeof(*d));
	if (strcmp(gw->delivery, "log")) {
		snprintf(err, errlen, "gateway.delivery: unknown delivery '%s'", gw->delivery);
		return -EINVAL;
	}
	d->send = deliver_log;
	if (!gw->delivery_log[0]) {
		need = gw_delivery_needed(c);
		if (need) {
			snprintf(err, errlen, "gateway.delivery_log: not set, and POST %s is routed: "
				 "it sends codes or links, which never go to the daemon's log; set "
				 "gateway.delivery_log to the file they go to (or route no endpoint "
				 "that sends: /mfa/send, /password-reset, /register)", need);
			return -EINVAL;
		}
		return 0;
	}
	d->f = fopen(gw->delivery_log, "ae");
	if (!d->f) {
		int e = errno;

		snprintf(err, errlen, "gateway.delivery_log: %s: %s", gw->delivery_log,
			 strerror(e));
		return -e;
	}
	snprintf(d->path, sizeof(d->path), "%s", gw->delivery_log);
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
