/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* bench/parts.bpf.c's input record, written by bench/xdp_cost.c. */
#ifndef SLUICE_BENCH_PARTS_H
#define SLUICE_BENCH_PARTS_H

#include "sluice/abi.h"
#include "sluice/cookie.h"

#define PART_BUF 520 /* = sizeof(struct req_buf), the reader's buffer (checked in parts.bpf.c) */

/* The cookie's input and keys, a login request and a ClientHello as the datapath's reader
 * sees them, where the request sits in the frame, and an IPv6 source to type. */
struct part_in {
	struct sl_conn_id id;
	struct sl_cookie_keys keys;
	__u8 http[PART_BUF], tls[PART_BUF];
	__u32 http_len, tls_len, req_off, req_len;
	__u8 v6[16];
	__u32 host_seed; /* part_req_host_sets' seed (the table was written under it) */
};

#endif
