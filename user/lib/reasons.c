// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Reason names. When enum sl_reason grows, add its name here and its meaning to
 * docs/operations.md; the static assert below catches a missing name. */
#include "reasons.h"
#include "sluice/abi.h"

static const char *const names[] = {
	[SL_R_PASSED] = "passed",
	[SL_R_NOT_PROTECTED] = "not_protected",
	[SL_R_NOT_SYN] = "not_syn",
	[SL_R_FRAGMENT] = "fragment",
	[SL_R_SHED_PREFIX] = "shed_prefix",
	[SL_R_SHED_PARENT] = "shed_parent",
	[SL_R_WOULD_SHED_PREFIX] = "would_shed_prefix",
	[SL_R_WOULD_SHED_PARENT] = "would_shed_parent",
	[SL_R_MAL_ETH] = "malformed_eth",
	[SL_R_MAL_VLAN] = "malformed_vlan",
	[SL_R_MAL_VLAN_DEPTH] = "malformed_vlan_depth",
	[SL_R_MAL_IP4] = "malformed_ip4",
	[SL_R_MAL_IP4_IHL] = "malformed_ip4_ihl",
	[SL_R_MAL_IP6] = "malformed_ip6",
	[SL_R_MAL_IP6_EXT] = "malformed_ip6_ext",
	[SL_R_MAL_IP6_EXT_DEPTH] = "malformed_ip6_ext_depth",
	[SL_R_MAL_TCP] = "malformed_tcp",
	[SL_R_MAL_TCP_DOFF] = "malformed_tcp_doff",
	[SL_R_STATE_ERROR] = "state_error",
	[SL_R_SHED_TENANT] = "shed_tenant",
	[SL_R_WOULD_SHED_TENANT] = "would_shed_tenant",
	[SL_R_SHED_VERDICT] = "shed_verdict",
	[SL_R_COOKIE_ACK] = "cookie_ack",
	[SL_R_REPLIED_429] = "replied_429",
	[SL_R_COOKIE_FIN] = "cookie_fin",
	[SL_R_COOKIE_DROP] = "cookie_drop",
	[SL_R_COOKIE_BAD] = "cookie_bad",
	[SL_R_HANDSHAKE] = "handshake",
	[SL_R_FIRST_ADMITTED] = "first_admitted",
	[SL_R_RACE_PASS] = "race_pass",
	[SL_R_HANDOFF] = "handoff",
	[SL_R_HANDOFF_FAIL] = "handoff_fail",
	[SL_R_NOT_LOCAL] = "not_local",
	[SL_R_MARTIAN] = "martian",
	[SL_R_BAD_FLAGS] = "bad_flags",
	[SL_R_SYN_DATA] = "syn_data",
	[SL_R_SYN_PEEKED] = "syn_peeked",
	[SL_R_VERIFY_ACK] = "verify_ack",
	[SL_R_FRAG_LATER] = "fragment_later",
	[SL_R_ESTABLISHED] = "established",
	[SL_R_TW_REUSE] = "time_wait_reuse",
	[SL_R_REQSK_RESET] = "reqsk_reset",
};
_Static_assert(sizeof(names) / sizeof(names[0]) == SL_R__MAX, "a reason has no name");

const char *sl_reason_name(unsigned int reason)
{
	return reason < SL_R__MAX && names[reason] ? names[reason] : "unknown";
}

const char *sl_proto_name(uint8_t proto)
{
	return proto == SL_PROTO_TLS ? "tls" : "http";
}

const char *sl_attach_mode_name(uint8_t mode)
{
	switch (mode) {
	case SL_ATTACH_NATIVE:
		return "native";
	case SL_ATTACH_GENERIC:
		return "generic";
	case SL_ATTACH_LEGACY_NATIVE:
		return "legacy-native";
	case SL_ATTACH_LEGACY_GENERIC:
		return "legacy-generic";
	default:
		return "none";
	}
}
