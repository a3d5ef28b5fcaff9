/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the credential store's two files share, for them alone: gw_creds.c reads the file
 * and keeps the table, gw_creds_write.c appends to the file (`sluicectl user add`, the
 * writer thread). `user add` must check the file the way a load does, under the lock it
 * already holds, and refuse names with the same messages.
 */
#ifndef SLUICE_GW_CREDS_INTERNAL_H
#define SLUICE_GW_CREDS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "gw_creds.h"

/*
 * gw_creds_load(), taking the shared flock on @path when @lock; without it the caller
 * holds the exclusive one already.
 */
int gw_creds_load_flock(const char *path, const struct sl_config *c, struct gw_creds **out,
			char *err, size_t errlen, bool lock);
/* 1 when @name is one of @c's tenants, else 0. */
int gw_creds_tenant_known(const struct sl_config *c, const char *name);
/* @s (at most @max bytes of it) escaped for a message: file content is not to be trusted. */
const char *gw_creds_esc_field(char *buf, size_t cap, const char *s, size_t max);

#endif
