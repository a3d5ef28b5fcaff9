// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The building blocks of a SYN decision, each alone in a program, so xdp_cost can show where
 * the nanoseconds of the full decision go. Each program does one thing on top of XDP_PASS.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sluice/abi.h"
#include "sluice/hash.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 20);
	__type(key, struct sl_bkey);
	__type(value, struct sl_bucket);
} part_lru SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SL_ASN_MAX_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sl_lpm_key);
	__type(value, struct sl_asn_val);
} part_trie SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_DIR_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} part_dir SEC(".maps");

/* The datapath's bucket table at edge.state_entries = 2^20: 2^18 sets of four ways. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 18);
	__type(key, __u32);
	__type(value, struct sl_bucket_set);
} part_sets SEC(".maps");

__u32 part_seed = 0x2545f491; /* in .bss-like data, so the hash is computed, not folded */

/* Keeps a value alive without a memory barrier. */
#define USE(x) asm volatile("" : : "r"(x))

SEC("xdp")
int part_clock(struct xdp_md *ctx)
{
	USE(bpf_ktime_get_coarse_ns());
	return XDP_PASS;
}

SEC("xdp")
int part_clock_precise(struct xdp_md *ctx)
{
	USE(bpf_ktime_get_ns());
	return XDP_PASS;
}

SEC("xdp")
int part_jiffies(struct xdp_md *ctx)
{
	USE(bpf_jiffies64());
	return XDP_PASS;
}

/* One call of a global (checked-alone) function doing nothing: what each of the datapath's
 * __noinline functions costs to enter and leave, return thunk included. */
__noinline int part_nop_fn(__u32 x)
{
	return x + 1;
}

SEC("xdp")
int part_call(struct xdp_md *ctx)
{
	USE(part_nop_fn(part_seed));
	return XDP_PASS;
}

/* A 64-bit division by a constant (the BPF backend has no multiply-high: a real divide). */
SEC("xdp")
int part_div(struct xdp_md *ctx)
{
	__u64 x = part_seed;

	asm volatile("" : "+r"(x));
	USE(x * 1000003 / 1000000000ull);
	return XDP_PASS;
}

SEC("xdp")
int part_lru_lookup(struct xdp_md *ctx)
{
	struct sl_bkey k = { .family = SL_FAM_V4, .plen = 24 };
	struct sl_bucket *b = bpf_map_lookup_elem(&part_lru, &k);

	return b ? XDP_PASS : XDP_DROP;
}

SEC("xdp")
int part_lru_cas(struct xdp_md *ctx)
{
	struct sl_bkey k = { .family = SL_FAM_V4, .plen = 24 };
	struct sl_bucket *b = bpf_map_lookup_elem(&part_lru, &k);
	__u64 old;

	if (!b)
		return XDP_DROP;
	old = b->tat;
	__sync_val_compare_and_swap(&b->tat, old, old + 1);
	return XDP_PASS;
}

/* The decided-connection record of an admitted first request as it was (sl_conns: an LRU hash
 * keyed by the 44-byte connection key), written and forgotten each run: with part_conn_forget alone,
 * the difference is the write. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct sl_conn_key);
	__type(value, struct sl_conn);
} part_conns SEC(".maps");

/* The same with per-CPU LRU lists (no common LRU lock). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_COMMON_LRU);
	__type(key, struct sl_conn_key);
	__type(value, struct sl_conn);
} part_conns_nc SEC(".maps");

static __always_inline void part_conn_key(struct sl_conn_key *ck)
{
	__builtin_memset(ck, 0, sizeof(*ck));
	ck->family = SL_FAM_V4;
	ck->iss = part_seed;
	ck->sport = 41000;
	ck->dport = 9090;
}

SEC("xdp")
int part_conn_forget(struct xdp_md *ctx)
{
	struct sl_conn_key ck;

	part_conn_key(&ck);
	bpf_map_delete_elem(&part_conns, &ck);
	return XDP_PASS;
}

SEC("xdp")
int part_conn_write(struct xdp_md *ctx)
{
	struct sl_conn_key ck;
	struct sl_conn c = { .state = SL_CONN_ADMITTED };

	part_conn_key(&ck);
	bpf_map_delete_elem(&part_conns, &ck);
	bpf_map_update_elem(&part_conns, &ck, &c, BPF_ANY);
	return XDP_PASS;
}

SEC("xdp")
int part_conn_write_nc(struct xdp_md *ctx)
{
	struct sl_conn_key ck;
	struct sl_conn c = { .state = SL_CONN_ADMITTED };

	part_conn_key(&ck);
	bpf_map_delete_elem(&part_conns_nc, &ck);
	bpf_map_update_elem(&part_conns_nc, &ck, &c, BPF_ANY);
	return XDP_PASS;
}

SEC("xdp")
int part_conn_forget_nc(struct xdp_md *ctx)
{
	struct sl_conn_key ck;

	part_conn_key(&ck);
	bpf_map_delete_elem(&part_conns_nc, &ck);
	return XDP_PASS;
}

SEC("xdp")
int part_conn_lookup(struct xdp_md *ctx)
{
	struct sl_conn_key ck;

	part_conn_key(&ck);
	ck.iss ^= 1; /* a miss, as a first request's is */
	return bpf_map_lookup_elem(&part_conns, &ck) ? XDP_DROP : XDP_PASS;
}

/* The record that replaced it: sl_conn_sets, SL_CONN_SETS sets of four (tag, until) ways
 * indexed by the keyed hash of the 44-byte key (sl_shed_hash), as sluice.bpf.c's
 * conn_tag_find and conn_tag_add do it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_CONN_SETS);
	__type(key, __u32);
	__type(value, struct sl_shed_set);
} part_conn_sets SEC(".maps");

__u32 part_conn_ctr; /* a new key each write: the sets fill, as a busy table's are */

SEC("xdp")
int part_conn_tag_lookup(struct xdp_md *ctx)
{
	struct sl_conn_key ck;
	struct sl_shed_set *ss;
	__u32 idx, tag, now_s = 1000, i;
	__u64 h;

	part_conn_key(&ck);
	ck.iss ^= 1; /* a miss, as a first request's is */
	h = sl_shed_hash(&ck, part_seed);
	idx = (__u32)h & (SL_CONN_SETS - 1);
	tag = h >> 32;
	ss = bpf_map_lookup_elem(&part_conn_sets, &idx);
	if (!ss)
		return XDP_DROP;
#pragma unroll
	for (i = 0; i < SL_SHED_WAYS; i++)
		if (ss->way[i].tag == tag && ss->way[i].until > now_s)
			return XDP_DROP;
	return XDP_PASS;
}

/* @fresh: a new key each run (a random set each time: cache misses on a 4 MB table, as a busy
 * edge's new connections have); else one key whose set is emptied first, as the old part's
 * delete + write and the full first request's bench case (restore empties the set) do. */
static __always_inline int part_conn_tag_put(int fresh)
{
	struct sl_conn_key ck;
	struct sl_shed_set *ss;
	__u32 idx, tag, now_s = 1000, low = ~0u, i, victim = 0;
	__u64 h;

	part_conn_key(&ck);
	if (fresh)
		ck.iss += part_conn_ctr++;
	h = sl_shed_hash(&ck, part_seed);
	idx = (__u32)h & (SL_CONN_SETS - 1);
	tag = h >> 32;
	ss = bpf_map_lookup_elem(&part_conn_sets, &idx);
	if (!ss)
		return XDP_DROP;
	if (!fresh)
		__builtin_memset(ss, 0, sizeof(*ss));
#pragma unroll
	for (i = 0; i < SL_SHED_WAYS; i++) {
		__u32 u = ss->way[i].until;

		if (ss->way[i].tag == tag && u > now_s)
			return XDP_PASS;
		if (!ss->way[i].tag || u <= now_s)
			u = 0;
		if (u < low) {
			low = u;
			victim = i;
		}
	}
#pragma unroll
	for (i = 0; i < SL_SHED_WAYS; i++) {
		if (i == victim) {
			ss->way[i].until = now_s + 10 + (part_conn_ctr & 7);
			ss->way[i].tag = tag;
		}
	}
	return XDP_PASS;
}

SEC("xdp")
int part_conn_tag_write(struct xdp_md *ctx)
{
	return part_conn_tag_put(1);
}

SEC("xdp")
int part_conn_tag_write1(struct xdp_md *ctx)
{
	return part_conn_tag_put(0);
}

SEC("xdp")
int part_trie_lookup(struct xdp_md *ctx)
{
	struct sl_lpm_key k = { .prefixlen = 128,
				.addr = { [10] = 0xff, [11] = 0xff, 198, 51, 100, 9 } };

	return bpf_map_lookup_elem(&part_trie, &k) ? XDP_PASS : XDP_DROP;
}

SEC("xdp")
int part_dir_lookup(struct xdp_md *ctx)
{
	__u32 idx = (198u << 12) | (51u << 4) | 6;
	__u64 *w = bpf_map_lookup_elem(&part_dir, &idx);

	return w ? XDP_PASS : XDP_DROP;
}

/* The set-associative table's lookup as sl_charge_key does it: the keyed hash of the key, one
 * array load, four tag compares. */
static __always_inline __u64 *part_set_find(void)
{
	struct sl_bkey k = { .family = SL_FAM_V4, .plen = 24, .addr = { 198, 51, 100 } };
	__u64 h = sl_key_hash(&k, part_seed);
	__u32 idx = (__u32)h & ((1 << 18) - 1), tag = h >> 32, i;
	struct sl_bucket_set *bs = bpf_map_lookup_elem(&part_sets, &idx);

	if (!bs)
		return NULL;
#pragma unroll
	for (i = 0; i < SL_BUCKET_WAYS; i++)
		if (bs->way[i].tag == tag)
			return &bs->way[i].tat;
	return &bs->spill_tat;
}

SEC("xdp")
int part_set_lookup(struct xdp_md *ctx)
{
	__u64 *tat = part_set_find();

	return tat ? XDP_PASS : XDP_DROP;
}

SEC("xdp")
int part_set_cas(struct xdp_md *ctx)
{
	__u64 *tat = part_set_find(), old;

	if (!tat)
		return XDP_DROP;
	old = *tat;
	__sync_val_compare_and_swap(tat, old, old + 1);
	return XDP_PASS;
}

/* ---- the verified first request's parts (issue 18, item 2) -------------------------------- */

#include "../bpf/cookie_mac.h"
#include "../bpf/request.h"

#include "parts.h"

_Static_assert(sizeof(struct req_buf) == PART_BUF, "the bench's buffers are the reader's");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct part_in);
} part_in SEC(".maps");

struct part_scratch {
	struct req_buf rb;
	struct sl_route_key rk;
	struct sl_host_key hk;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct part_scratch);
} part_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 256);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sl_route_key);
	__type(value, struct sl_route_val);
} part_routes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct sl_host_key);
	__type(value, __u32);
} part_hosts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_HOST_SETS);
	__type(key, __u32);
	__type(value, struct sl_host_set);
} part_host_sets SEC(".maps");

/* The IPv6 table of one slot, built by the bench with sl_asn6_build from the trie's rows. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_V6_LINES);
	__type(key, __u32);
	__type(value, struct sl_v6_line);
} part_v6 SEC(".maps");

SEC("xdp")
int part_cookie_mac(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct part_in *in = bpf_map_lookup_elem(&part_in, &zero);

	if (!in)
		return XDP_DROP;
	/* One MAC, as a SYN-ACK makes it and a valid cookie's check finds it first. */
	USE(SL_COOKIE_MAC(&in->id, 12345, 1, 0xb5, &in->keys, 0));
	return XDP_PASS;
}

/* The segment's payload into the per-CPU buffer, as sl_route_request copies it. */
SEC("xdp")
int part_req_copy(struct xdp_md *ctx)
{
	__u32 zero = 0, len;
	struct part_in *in = bpf_map_lookup_elem(&part_in, &zero);
	struct part_scratch *s = bpf_map_lookup_elem(&part_scratch, &zero);

	if (!in || !s)
		return XDP_DROP;
	len = in->req_len;
	if (len == 0 || len > SL_REQ_SCAN)
		return XDP_DROP;
	return bpf_xdp_load_bytes(ctx, in->req_off & 0xff, s->rb.b, len) ? XDP_DROP : XDP_PASS;
}

/* The same bytes by direct packet access, as sl_route_request copies them now (sl_req_copy). */
SEC("xdp")
int part_req_copy_direct(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct part_in *in = bpf_map_lookup_elem(&part_in, &zero);
	struct part_scratch *s = bpf_map_lookup_elem(&part_scratch, &zero);
	void *data, *end;

	if (!in || !s)
		return XDP_DROP;
	/* Loaded by asm, as bpf/parse.h's xdp_data does: clang 14 may merge the two ctx loads
	 * into a form the verifier rejects ("dereference of modified ctx ptr"). */
	asm volatile("%0 = *(u32 *)(%1 + 0)" : "=r"(data) : "r"(ctx));
	asm volatile("%0 = *(u32 *)(%1 + 4)" : "=r"(end) : "r"(ctx));
	return sl_req_copy(data, end, in->req_off & 0xff, in->req_len, &s->rb) ? XDP_DROP :
										  XDP_PASS;
}

/* The login request of @in read into the scratch (method, path, Host): the scratch, or NULL
 * when it did not read whole. Each part that needs the keys reads them itself: the scratch
 * is per CPU, and a run may land on another CPU than the part before it. */
static __always_inline struct part_scratch *read_login(const struct part_in *in)
{
	__u32 zero = 0;
	struct part_scratch *s = bpf_map_lookup_elem(&part_scratch, &zero);

	if (!in || !s)
		return NULL;
	__builtin_memset(&s->rk, 0, sizeof(s->rk));
	__builtin_memset(&s->hk, 0, sizeof(s->hk));
	if (sl_parse_http((const struct req_buf *)in->http, in->http_len, &s->rk, &s->hk) !=
	    (REQ_LINE | REQ_HOST))
		return NULL;
	return s;
}

/* Method, path and Host of the login request. */
SEC("xdp")
int part_req_http(struct xdp_md *ctx)
{
	__u32 zero = 0;

	return read_login(bpf_map_lookup_elem(&part_in, &zero)) ? XDP_PASS : XDP_DROP;
}

/* The same, then the route (LPM) and host (hash) lookups that price and place it. */
SEC("xdp")
int part_req_lookups(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct part_in *in = bpf_map_lookup_elem(&part_in, &zero);
	struct part_scratch *s = read_login(in);

	if (!s)
		return XDP_DROP;
	if (!bpf_map_lookup_elem(&part_routes, &s->rk))
		return XDP_DROP;
	return bpf_map_lookup_elem(&part_hosts, &s->hk) ? XDP_PASS : XDP_DROP;
}

/* The reading and the route trie alone. */
SEC("xdp")
int part_req_route(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct part_in *in = bpf_map_lookup_elem(&part_in, &zero);
	struct part_scratch *s = read_login(in);

	if (!s)
		return XDP_DROP;
	return bpf_map_lookup_elem(&part_routes, &s->rk) ? XDP_PASS : XDP_DROP;
}

/* The reading, the route, and the host as the datapath finds it (sl_host_tenant: the name's
 * hash, its two sets, the tags, the name compare); part_req_lookups is the same with the hash
 * map of 64-byte names the datapath used before (its fallback now). */
SEC("xdp")
int part_req_host_sets(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct part_in *in = bpf_map_lookup_elem(&part_in, &zero);
	struct part_scratch *s = read_login(in);

	if (!s)
		return XDP_DROP;
	if (!bpf_map_lookup_elem(&part_routes, &s->rk))
		return XDP_DROP;
	return sl_host_tenant(&part_host_sets, &part_hosts, &s->hk, in->host_seed) ? XDP_PASS :
										   XDP_DROP;
}

/* The SNI of a ClientHello. */
SEC("xdp")
int part_req_sni(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct part_in *in = bpf_map_lookup_elem(&part_in, &zero);
	struct part_scratch *s = bpf_map_lookup_elem(&part_scratch, &zero);

	if (!in || !s)
		return XDP_DROP;
	__builtin_memset(&s->hk, 0, sizeof(s->hk));
	return sl_parse_sni((const struct req_buf *)in->tls, in->tls_len, &s->hk) == REQ_HOST ? XDP_PASS : XDP_DROP;
}

/* An IPv6 source typed by the IPv6 table, as classify() walks it. */
SEC("xdp")
int part_v6_table(struct xdp_md *ctx)
{
	__u32 zero = 0, idx, line, e = 0, i;
	struct part_in *in = bpf_map_lookup_elem(&part_in, &zero);
	struct sl_v6_line *w;

	if (!in)
		return XDP_DROP;
	idx = sl_v6_root(in->v6);
	line = idx / SL_V6_FANOUT;
	w = bpf_map_lookup_elem(&part_v6, &line);
	if (w)
		e = w->e[idx & (SL_V6_FANOUT - 1)];
	for (i = 0; w && i < SL_V6_LEVELS && (e & SL_V6_CHILD); i++) {
		idx = sl_v6_next(e, in->v6, i);
		line = idx / SL_V6_FANOUT;
		w = bpf_map_lookup_elem(&part_v6, &line);
		if (w)
			e = w->e[idx & (SL_V6_FANOUT - 1)];
	}
	USE(e);
	return w ? XDP_PASS : XDP_DROP;
}

/* The same IPv6 source through the LPM trie. */
SEC("xdp")
int part_v6_trie(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct part_in *in = bpf_map_lookup_elem(&part_in, &zero);
	struct sl_lpm_key k = { .prefixlen = 128 };

	if (!in)
		return XDP_DROP;
	__builtin_memcpy(k.addr, in->v6, 16);
	return bpf_map_lookup_elem(&part_trie, &k) ? XDP_PASS : XDP_DROP;
}

/* ---- the stateless SYN's parts: what a cookie SYN-ACK is made of --------------------------- */

#include "../bpf/reply.h"

/* bpf_skc_lookup_tcp on the bench SYN's tuple (198.51.100.9:41000 -> 10.0.0.2:9090), as the
 * stateless SYN's reused-tuple check makes it: no socket holds the tuple. xdp_cost runs it with
 * and without a listener on the port (a stateless port has one: the hand-off needs it). */
SEC("xdp")
int part_sk_lookup(struct xdp_md *ctx)
{
	struct bpf_sock_tuple t = {};
	struct bpf_sock *sk;

	t.ipv4.saddr = bpf_htonl(0xc6336409);
	t.ipv4.daddr = bpf_htonl(0x0a000002);
	t.ipv4.sport = bpf_htons(41000);
	t.ipv4.dport = bpf_htons(9090);
	sk = bpf_skc_lookup_tcp(ctx, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
	if (sk) {
		int st = sk->state;

		bpf_sk_release(sk);
		return st == BPF_TCP_LISTEN ? XDP_PASS : XDP_DROP;
	}
	return XDP_PASS;
}

/* The SYN's options read as sl_send_synack reads them (run on the bench's SYN frames). */
SEC("xdp")
int part_syn_opts(struct xdp_md *ctx)
{
	struct seg_opts so = {};
	const __u8 *p = xdp_data(ctx);

	if ((const void *)(p + 34 + 20) > xdp_data_end(ctx))
		return XDP_DROP;
	parse_tcp_opts(ctx, 34, p[34 + 12] >> 4, &so);
	USE(so.mss);
	USE(so.ws);
	return so.mss == 1460 ? XDP_PASS : XDP_DROP;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct reply);
} part_reply SEC(".maps");

/* A SYN-ACK (no timestamps) written over the frame by sl_emit_reply, from a reply record filled
 * as reply_from fills it. After the first repeat the frame has the SYN-ACK's size: this is the
 * writing and the checksums without the resize (part_resize has that). */
SEC("xdp")
int part_emit_synack(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct reply *r = bpf_map_lookup_elem(&part_reply, &zero);
	const __u8 *p = xdp_data(ctx);

	if (!r || (const void *)(p + 14) > xdp_data_end(ctx))
		return XDP_DROP;
	__builtin_memset(r, 0, sizeof(*r) - sizeof(r->body));
	__builtin_memcpy(r->dmac, p + 6, 6);
	__builtin_memcpy(r->smac, p, 6);
	r->family = SL_FAM_V4;
	r->saddr[0] = 10;
	r->saddr[3] = 2;
	r->daddr[0] = 198;
	r->daddr[1] = 51;
	r->daddr[2] = 100;
	r->daddr[3] = 9;
	r->sport = bpf_htons(9090);
	r->dport = bpf_htons(41000);
	r->kind = REPLY_SYNACK;
	r->seq = part_seed;
	r->ack = 0x11223345;
	r->mss = 1460;
	return sl_emit_reply(ctx, r) == XDP_TX ? XDP_PASS : XDP_DROP;
}

/* The resize a SYN-ACK makes of the bench's SYN (8 bytes off the tail), and back. */
SEC("xdp")
int part_resize(struct xdp_md *ctx)
{
	if (bpf_xdp_adjust_tail(ctx, -8))
		return XDP_DROP;
	return bpf_xdp_adjust_tail(ctx, 8) ? XDP_DROP : XDP_PASS;
}
