/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The edge datapath's maps. All are pinned by name under the controller's pin root
 * (/sys/fs/bpf/sluice by default) so that state outlives a daemon restart and sluicectl can
 * read it with no daemon running. Sizes marked "set by sluiced" are placeholders that the
 * controller overrides from the config before load.
 */
#ifndef SLUICE_MAPS_H
#define SLUICE_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sluice/abi.h"

/*
 * Per-prefix GCRA state: sets of four ways and a spill bucket (struct sl_bucket_set), indexed
 * by a keyed hash of the key. An array, so a charge is one load at a computed address and a
 * tag compare, where an LRU hash paid for a jhash, a bucket walk and its LRU bookkeeping; its
 * memory is fixed at load (128 bytes a set); eviction is the table's own rule, not the
 * kernel's, so a spent key is never forgotten for a stranger's sake (see abi.h).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16384); /* set by sluiced: power of two >= state_entries / 4 */
	__type(key, __u32);
	__type(value, struct sl_bucket_set);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_buckets SEC(".maps");

/* ASN table (see abi.h): the /24 nibble table, two slots back to back, the IPv6 table and the
 * LPM tries. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_ASN_SLOTS * SL_DIR_WORDS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_asn_dir SEC(".maps");

/* The IPv6 table (abi.h): root and node pool per slot, two slots back to back. Mappable, so
 * the controller builds a table in place in the idle slot instead of writing millions of
 * entries through the syscall (lookups stay inlined array loads). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, SL_ASN_SLOTS * SL_V6_LINES);
	__type(key, __u32);
	__type(value, struct sl_v6_line);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_asn6 SEC(".maps");

struct sl_asn_trie {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SL_ASN_MAX_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	/* Sizes, not __type(): reached through the outer map's pointer array, these structs get
	 * only forward declarations in BTF and libbpf cannot size a FWD. */
	__uint(key_size, sizeof(struct sl_lpm_key));
	__uint(value_size, sizeof(struct sl_asn_val));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SL_ASN_SLOTS);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct sl_asn_trie); /* a flexible array: must come last */
} sl_asn SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_MAX_CLASSES);
	__type(key, __u32);
	__type(value, struct sl_class_policy);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_classes SEC(".maps");

/* Indexed by port: an array lookup is cheaper than hashing on the path every packet takes. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct sl_port);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_settings);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_settings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SL_STATS_ROWS);
	__type(key, __u32);
	__type(value, struct sl_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_cookie_keys);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_cookie_keys SEC(".maps");

/*
 * Decided connections, keyed by the connection (tuple + ISS), for a few seconds. Apart, so
 * that the entries that matter cannot be pushed out by the ones that do not:
 *  - sl_conn_sets: admitted first requests, so the racing segments of their first burst pass
 *    before the kernel has made the socket: tags in sets (struct sl_shed_set, SL_CONN_SETS).
 *    Only admitted connections create one, so a source creates them no faster than its
 *    budget lets it in.
 *  - sl_shed: connections shed over a kernel handshake (SYN front, a stateless tuple reused
 *    over a TIME_WAIT), answered with a 429 (or owed one, or dropped), so their leftovers are
 *    absorbed and their FIN acknowledged; cookie connections' are tags in sl_shed_sets. A
 *    shed source can churn either, and losing an entry costs nothing: the leftover is
 *    dropped or reset, as the kernel would with no socket.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_CONN_SETS);
	__type(key, __u32);
	__type(value, struct sl_shed_set);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_conn_sets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct sl_conn_key);
	__type(value, struct sl_conn);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_shed SEC(".maps");

/* Cookie connections shed (see struct sl_shed_set); sl_shed keeps those shed over a kernel
 * handshake, whose leftovers need more than a tag. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_SHED_SETS);
	__type(key, __u32);
	__type(value, struct sl_shed_set);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_shed_sets SEC(".maps");

/*
 * SYN front: when a SYN was last passed to the kernel, per slot of a keyed hash of its
 * 4-tuple (seconds). Only segments whose slot is warm pay for the socket lookup that finds
 * the handshake-completing ACK; the rest of established traffic passes on one array load.
 * A collision only costs a lookup, never a decision.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536); /* set by sluiced: power of two >= state_entries */
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_pending SEC(".maps");

/* The addresses this node serves, one by one (the kernel's /32 and /128 local routes): a hash
 * lookup answers for nearly every packet; the trie below is asked only when the table holds
 * wider local prefixes (AnyIP), which sl_settings.local_nets counts. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct sl_lpm_key);
	__type(value, struct sl_local_val);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_local_host SEC(".maps");

/* Which of sl_local_host's addresses could be: see struct sl_local_bits. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_local_bits);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_local_bits SEC(".maps");

/* Bumped by sluiced each time it has rewritten the two tables above: the per-CPU cache of the
 * last destination asked (sl_local_cache) holds only while it stands. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_local_gen SEC(".maps");

/* The addresses this node serves (sluiced mirrors the kernel's local routing table). */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sl_lpm_key);
	__type(value, struct sl_local_val);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_local SEC(".maps");

/* Tenants: (destination address, port) -> tenant id -> budget and its state. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4 * SL_MAX_TENANTS);
	__type(key, struct sl_tenant_key);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_tenant_keys SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_MAX_TENANTS);
	__type(key, __u32);
	__type(value, struct sl_tenant);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_tenants SEC(".maps");

/* Tenant bucket TATs, apart from their config so a config write never resets them. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_MAX_TENANTS);
	__type(key, __u32);
	__type(value, struct sl_bucket);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_tenant_state SEC(".maps");

/* Cost units that reached each tenant's bucket, passed or shed: the demand leases follow. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SL_MAX_TENANTS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_tenant_demand SEC(".maps");

#ifndef SL_MAX_VERDICTS
#define SL_MAX_VERDICTS 262144
#endif
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SL_MAX_VERDICTS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sl_lpm_key);
	__type(value, struct sl_verdict);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_verdicts SEC(".maps");

/* Live verdicts, recounted by whoever changes them: zero lets a SYN skip the trie walk. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_vcount SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_events SEC(".maps");

/* Stateless front: routes, hosts, and first-request outcomes by route and by tenant. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SL_EDGE_ROUTES * SL_M__MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sl_route_key);
	__type(value, struct sl_route_val);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_routes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SL_MAX_TENANTS * 8);
	__type(key, struct sl_host_key);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_hosts SEC(".maps");

/* The hosts again, as the datapath reads them (struct sl_host_set); sl_hosts above holds
 * every one, asked only for a host whose two sets were full. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_HOST_SETS);
	__type(key, __u32);
	__type(value, struct sl_host_set);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_host_sets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SL_EDGE_ROUTES + 1);
	__type(key, __u32);
	__type(value, struct sl_outcome);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_route_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SL_MAX_TENANTS + 1);
	__type(key, __u32);
	__type(value, struct sl_outcome);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_tenant_stats SEC(".maps");

/* Controller metadata for sluicectl; never read here. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_meta);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_meta SEC(".maps");

#endif /* SLUICE_MAPS_H */
