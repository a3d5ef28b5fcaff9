// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The baseline every XDP figure is divided by: a program that only says XDP_PASS. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int bare_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
