/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The effective config (`sluicectl config show`): every key the loader reads, with the value
 * it resolved to, the defaults included, as libconfig text (a file that loads to the same
 * config) or one JSON document. Secrets are redacted: redis.password (and a password read
 * from redis.password_file) shows as "(redacted)"; paths to files holding secrets
 * (session_key, password_file) are shown, their contents never. A client's secret_hash is
 * shown as the file has it: a hash of a random secret, not the secret.
 * What the loader derives rather than reads (the gateway's workers) is a comment in the text
 * and a member of "derived" in JSON.
 */
#ifndef SLUICE_CONFIG_SHOW_H
#define SLUICE_CONFIG_SHOW_H

#include <stdbool.h>
#include <stdio.h>

#include "config.h"

#define SL_REDACTED "(redacted)"

void sl_config_show(const struct sl_config *c, FILE *f, bool json);

#endif
