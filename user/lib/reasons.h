/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Names of the datapath's decision reasons (enum sl_reason) and attach modes, for output. */
#ifndef SLUICE_REASONS_H
#define SLUICE_REASONS_H

#include <stdint.h>

const char *sl_reason_name(unsigned int reason);
const char *sl_attach_mode_name(uint8_t mode);
const char *sl_proto_name(uint8_t proto);

#endif
