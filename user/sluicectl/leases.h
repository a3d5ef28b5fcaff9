/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* sluicectl leases: each tenant's budget, this node's demand and share, its lease and expiry. */
#ifndef SLUICECTL_LEASES_H
#define SLUICECTL_LEASES_H

#include <stdbool.h>

#include "maps.h"

int sl_leases_print(const struct sl_maps *m, const struct sl_meta *meta, bool json);

#endif
