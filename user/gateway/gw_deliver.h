/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Outbound messages: one-time codes, reset and sign-up links, "you already have an
 * account" notices. The gateway hands each one to a delivery function and counts it
 * against the tenant's `outbound` budget first (SMS and mail cost money and reputation).
 *
 * A delivery is a function pointer so a build can put a mail or SMS client behind it; the
 * one built in, "log", appends one record per message to gateway.delivery_log, which is what
 * a demo and the tests read. It never blocks the loop for longer than one buffered write.
 *
 * Codes and links are never written to the daemon's log: a log is read by more people and
 * kept longer than an outbox, and a code in it is a sign-in for whoever reads it. Without a
 * destination (gateway.delivery_log) a config that routes an endpoint that sends (POST
 * /mfa/send, /password-reset, /register) is refused at start and on reload; one that routes
 * none of them has nothing to deliver, and anything handed to it anyway is dropped and
 * counted as failed (docs/configuration.md, gateway.delivery_log).
 *
 * A record is "UNIXTIME tenant=T to=ACCOUNT kind=KIND TEXT\n", every field escaped with
 * gw_esc() (TEXT keeps the spaces between its key=value pairs), so a record is always one
 * line and no field can forge another: whatever a name holds, a reader that splits on
 * spaces and any Unicode line break reads the fields the gateway wrote.
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
	FILE *f;                /* the log delivery's file; NULL: none (nothing is sent) */
	char path[PATH_MAX];
	uint64_t sent, failed;
};

/*
 * The first endpoint @c routes that sends messages ("POST /mfa/send", ...), or NULL: what
 * needs a delivery destination.
 */
const char *gw_delivery_needed(const struct sl_config *c);
/*
 * Set @d up for @c's gateway.delivery. 0, or -errno with the reason in @err: an unknown
 * delivery, a delivery_log that cannot be opened, or none while an endpoint that sends is
 * routed (-EINVAL).
 */
int gw_delivery_open(struct gw_delivery *d, const struct sl_config *c, char *err,
		     size_t errlen);
void gw_delivery_close(struct gw_delivery *d);
/* Send through @d, counting. */
int gw_deliver(struct gw_delivery *d, const char *tenant, const char *account,
	       const char *kind, const char *text);
/*
 * The built-in delivery's record for a message, escaped, newline-terminated, into @out
 * (GW_DELIVER_RECORD_MAX bytes suffice). Its length.
 */
#define GW_DELIVER_RECORD_MAX 4096
size_t gw_deliver_record(char *out, size_t cap, uint64_t unixtime, const char *tenant,
			 const char *account, const char *kind, const char *text);

#endif
