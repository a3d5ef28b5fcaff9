// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The verified first request's stages, each alone, as the datapath runs them: this object
 * includes bpf/sluice.bpf.c whole, so its programs call the datapath's own functions (no
 * copy of them to drift), on the datapath's own maps (bench/xdp_cost hands this object the
 * fds of the loaded sluice object's maps, by name). What parts.bpf.c measures are building
 * blocks written again; these are the stages a first request goes through: the early weigh,
 * the reader (copy, method, path, Host, route and host lookups), each of the three charges
 * (prefix, parent, tenant) and the judgement that makes all three (sl_judge).
 *
 * Each program builds the bench's admitted segment record (the login request from
 * 198.51.100.9 to 10.0.0.2:9090, the cases' "open" source) in the per-CPU scratch the
 * datapath uses (sl_segs), then runs one stage on it; xdp_cost runs a program that only
 * builds the record beside them, so that each stage's figure is its own.
 */
#include "../bpf/sluice.bpf.c"

/* Set by xdp_cost before load: the bench's "open" class, whose buckets never run dry (rate
 * and burst 1e9), and its prefix and parent lengths. */
const volatile __u32 part_cls = 0;
const volatile __u8 part_plen = 24, part_parent = 16;
/* Where the login request's payload starts in its frame, and its length. */
const volatile __u32 part_req_off = 0, part_req_len = 0;

/* A tenant's bucket for the tenant charge alone: the bench's config names no tenant (so
 * sl_judge's tenant step returns at its first test there), and this measures what a charge
 * to one costs: its three lookups, its demand and sl_charge_tat. Tenant 0's slots, with this
 * rate instead of its (empty) lease. */
/* In .data, not .rodata: a global function's pointer argument must be writable memory. */
struct sl_rate part_tenant_rate = { .emission_ns = 1, .tolerance_ns = 1ull << 60 };

static __always_inline struct seg_scratch *part_seg(void)
{
	__u32 zero = 0;
	struct seg_scratch *ss = bpf_map_lookup_elem(&sl_segs, &zero);
	struct pkt *pk;

	if (!ss)
		return NULL;
	pk = &ss->pk;
	__builtin_memset(&pk->s, 0, sizeof(pk->s));
	pk->s.family = SL_FAM_V4;
	pk->s.saddr[0] = 198;
	pk->s.saddr[1] = 51;
	pk->s.saddr[2] = 100;
	pk->s.saddr[3] = 9;
	pk->s.daddr[0] = 10;
	pk->s.daddr[3] = 2;
	pk->sport = 41003;
	pk->dport = 9090;
	pk->cost = 950;
	pk->port_cost = 1;
	pk->unreadable_cost = 950;
	pk->tenant = SL_TENANT_BY_DEST;
	pk->action = SL_ACT_REPLY;
	pk->front = SL_FRONT_STATELESS;
	pk->stage = STAGE_FIRST_REQUEST;
	pk->frag = FRAG_NONE;
	pk->proto = SL_PROTO_HTTP;
	return ss;
}

/* The record alone: what every program below spends before its stage. */
SEC("xdp")
int stage_none(struct xdp_md *ctx)
{
	return part_seg() ? XDP_PASS : XDP_DROP;
}

/* The early weigh of sl_decide: prefix, parent and tenant weighed at cost 1, inline. */
SEC("xdp")
int stage_weigh(struct xdp_md *ctx)
{
	struct seg_scratch *ss = part_seg();
	__u32 zero = 0;
	const struct sl_settings *set = bpf_map_lookup_elem(&sl_settings, &zero);

	if (!ss || !set)
		return XDP_DROP;
	ss->pk.cost = 1;
	sl_weigh(&ss->pk, set, sl_now(), &ss->d);
	return ss->d.reason == SL_R_PASSED ? XDP_PASS : XDP_DROP;
}

/* The reader together: sl_route_request on the login request's frame (xdp_cost runs this
 * one on it; the TCP header's offset and the payload's length are the frame's). */
SEC("xdp")
int stage_read(struct xdp_md *ctx)
{
	struct seg_scratch *ss = part_seg();
	__u32 zero = 0;
	const struct sl_settings *set = bpf_map_lookup_elem(&sl_settings, &zero);

	if (!ss || !set)
		return XDP_DROP;
	ss->pk.doff = 5;
	ss->pk.th_off = part_req_off - 20;
	ss->pk.payload = part_req_len;
	sl_route_request(ctx, &ss->pk, set);
	return ss->pk.cost == 950 ? XDP_PASS : XDP_DROP;
}

/* One bucket's charge by sl_charge_key, as sl_judge makes it: the class's policy, the key,
 * the call. @parent: the parent's key and rate. */
static __always_inline int stage_key(int parent)
{
	struct seg_scratch *ss = part_seg();
	struct sl_class_policy *pol;
	__u32 cls = part_cls, kw[3];
	int rc;

	if (!ss)
		return XDP_DROP;
	pol = bpf_map_lookup_elem(&sl_classes, &cls);
	if (!pol)
		return XDP_DROP;
	ss->d.cq.cost = 950;
	ss->d.cq.now = sl_now();
	ss->d.cq.peek = 0;
	ss->d.cq.cls = cls;
	ss->d.cq.inc = 0;
	if (parent) {
		make_key_words(&ss->d.qkey, kw, &ss->pk.s, part_parent, SL_LEVEL_PARENT, cls);
		rc = sl_charge_key(&ss->d.qkey, &pol->parent, &ss->d.cq);
	} else {
		make_key_words(&ss->d.key, kw, &ss->pk.s, part_plen, SL_LEVEL_PREFIX, cls);
		rc = sl_charge_key(&ss->d.key, &pol->prefix, &ss->d.cq);
	}
	return rc == CHARGE_OK ? XDP_PASS : XDP_DROP;
}

SEC("xdp")
int stage_charge_prefix(struct xdp_md *ctx)
{
	return stage_key(0);
}

SEC("xdp")
int stage_charge_parent(struct xdp_md *ctx)
{
	return stage_key(1);
}

/* A tenant's charge as charge_tenant makes it once the tenant is known (by Host or SNI). */
SEC("xdp")
int stage_charge_tenant(struct xdp_md *ctx)
{
	struct seg_scratch *ss = part_seg();
	__u32 tid = 0;
	struct sl_tenant *t;
	struct sl_bucket *st;
	__u64 *demand;

	if (!ss)
		return XDP_DROP;
	t = bpf_map_lookup_elem(&sl_tenants, &tid);
	st = bpf_map_lookup_elem(&sl_tenant_state, &tid);
	if (!t || !st)
		return XDP_DROP;
	demand = bpf_map_lookup_elem(&sl_tenant_demand, &tid);
	if (demand)
		*demand += 950;
	__builtin_memset(&ss->d.co, 0, sizeof(ss->d.co));
	return sl_charge_tat(&st->tat, &part_tenant_rate, 950, sl_now(), &ss->d.co) == CHARGE_OK ?
		       XDP_PASS : XDP_DROP;
}

/* The judgement that charges all three: classify, verdicts, prefix, parent, tenant. */
SEC("xdp")
int stage_judge(struct xdp_md *ctx)
{
	struct seg_scratch *ss = part_seg();
	__u32 zero = 0;
	const struct sl_settings *set = bpf_map_lookup_elem(&sl_settings, &zero);

	if (!ss || !set)
		return XDP_DROP;
	sl_judge(&ss->pk, set, sl_now(), &ss->d);
	return ss->d.reason == SL_R_PASSED ? XDP_PASS : XDP_DROP;
}
