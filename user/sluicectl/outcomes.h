/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* First-request outcomes of the stateless front, for sluicectl stats. */
#ifndef SLUICECTL_OUTCOMES_H
#define SLUICECTL_OUTCOMES_H

#include "json.h"
#include "maps.h"

/* As members of the open JSON object @j, or as a text table when @j is NULL. */
void sl_outcomes_print(const struct sl_maps *m, const struct sl_meta *meta, struct json *j);

#endif
