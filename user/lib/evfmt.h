/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * One sampled edge event (struct sl_event, off the sl_events ring) as `sluicectl events`
 * prints it: a text line or a one-line JSON document. sluiced renders them for every reader
 * it fans the ring out to, and sluicectl for the direct read it falls back to when no
 * sluiced runs; one function, so both print the same bytes.
 */
#ifndef SLUICE_EVFMT_H
#define SLUICE_EVFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/abi.h"

/* Room enough for either form of one event, newline included. */
#define SL_EVFMT_MAX 256

/* Write @e into @buf (newline-terminated): its time (datapath clock + @wall_off, as UTC with
 * milliseconds), key prefix, class @cls, reason, action, Retry-After and port. Returns the
 * length written. */
size_t sl_event_format(const struct sl_event *e, int64_t wall_off, const char *cls, bool json,
		       char *buf, size_t n);

/* The time of @ts_ns (datapath clock) as "2026-12-01T22:40:01.123Z" into @buf. */
void sl_event_time(uint64_t ts_ns, int64_t wall_off, char *buf, size_t n);

#endif
