/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Outbound messages: one-time codes, reset and sign-up links, "you already have an
 * account" notices. The gateway hands each one to a delivery function and counts it
 * against the tenant's `outbound` budget first (SMS and mail cost money and reputation).
 *
 * A delivery is a function pointer so a build can put a mail or SMS client behind it; the
 * one built in, "log", appends one line per message to gateway.delivery_log (or the
 * daemon's log), which is what a demo and the tests read. It never blocks the loop for
 * longer than one buffered write.
 */
#ifndef SLUICE_GW_DELIVER_H
#define SLUICE_GW_DELIVER_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

struct gw_delivery;

/* Send @text about @kind ("otp", "reset_link", ...) to @account of @tenant. 0 or -errno. */
typedef int (*gw_deliver_fn)(struct gw_delivery *d, const char *tenant, const char *account,
			     const char *kind, const char *text);

struct gw_delivery {
	gw_deliver_fn send;
	FILE *f;                /* the log delivery's file; NULL: the daemon's log */
	char path[PATH_MAX];
	uint64_t sent, failed;
};

/* Set @d up for @gw.delivery. 0, or -errno with the reason in @err. */
int gw_delivery_open(struct gw_delivery *d, const struct sl_gateway_cfg *gw, char *err,
		     size_t errlen);
void gw_delivery_close(struct gw_delivery *d);
/* Send through @d, counting. */
int gw_deliver(struct gw_delivery *d, const char *tenant, const char *account,
	       const char *kind, const char *text);

#endif
