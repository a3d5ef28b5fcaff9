// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Placeholder replaced in the same series: the TC hand-off program of the stateless front. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tc")
int sluice_handoff(struct __sk_buff *skb)
{
	return TC_ACT_OK;
}
