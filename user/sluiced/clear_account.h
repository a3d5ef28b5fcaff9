/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * `sluicectl clear account TENANT ACCOUNT --from ADDR --reason TEXT`: the support desk
 * unlocking a user who spent her own sign-in failures (issue 17, item 3). The /login failure
 * counters are keyed per (account, source): login_fail and login_ok by the account and its
 * key prefix (/32, /64), login_parent by the account and its allocation (/24, /48), each a
 * keyed hash that names neither, so an account's keys cannot be listed, only worked out from
 * where it signs in from: hence --from. Each key is cleared in the counter store (in-process,
 * or Redis for every node), what it held is reported, and one warn line is the audit trail.
 */
#ifndef SLUICED_CLEAR_ACCOUNT_H
#define SLUICED_CLEAR_ACCOUNT_H

#include <stdbool.h>

#include <event2/buffer.h>

#include "ctl.h"

struct gateway;

/* The control command "clear-account TENANT ACCOUNT ADDR OPERATOR REASON...": answers
 * "ok ..." (or "error ...") once the store has said what each key held, through @req.
 * While *@stopping (the daemon is tearing down its store) nothing more is sent. */
void clear_account(struct gateway *g, const bool *stopping, const char *line,
		   struct evbuffer *out, struct ctl_req *req);

#endif
