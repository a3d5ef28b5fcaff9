/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The addresses this node serves: the RTN_LOCAL routes of the kernel's local routing table
 * (see localaddr.c), for the edge's sl_local map.
 */
#ifndef SLUICE_LOCALADDR_H
#define SLUICE_LOCALADDR_H

#include <stddef.h>

#include "maps.h"

/* Up to @cap prefixes into @out, in the calling thread's network namespace. Returns how
 * many there are (possibly more than @cap), or a negative errno. */
long sl_local_dump(struct sl_local_prefix *out, size_t cap);

#endif
