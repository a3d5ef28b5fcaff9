/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The datapath's maps seen from userspace: opened from a loaded skeleton (sluiced) or from
 * their pins (sluicectl, with or without a daemon), written from a validated config, and read
 * back as counters, buckets and metadata. Functions return 0 or a negative errno.
 */
#ifndef SLUICE_MAPS_H
#define SLUICE_MAPS_H

#include <stdint.h>

#include "addr.h"
#include "asn.h"
#include "config.h"
#include "sluice/abi.h"

#define SL_MAP_NAMES { "sl_buckets", "sl_asn", "sl_asn_dir", "sl_classes", \
		       "sl_ports", "sl_settings", "sl_stats", "sl_meta", "sl_cookie_keys", \
		       "sl_conn_sets", "sl_tenant_keys", "sl_tenants", "sl_tenant_state", \
		       "sl_verdicts", "sl_vcount", "sl_events", "sl_routes", "sl_hosts", \
		       "sl_route_stats", "sl_tenant_stats", "sl_tenant_demand", "sl_shed", \
		       "sl_pending", "sl_local", "sl_local_host", "sl_shed_sets", "sl_local_gen", \
		       "sl_asn6", "sl_host_sets", "sl_local_bits" }
#define SL_N_MAPS 30

struct sl_maps {
	union {
		struct {
			int buckets, asn, asn_dir, classes, ports, settings, stats, meta;
			int cookie_keys, conns, tenant_keys, tenants, tenant_state, verdicts;
			int vcount, events, routes, hosts, route_stats, tenant_stats;
			int tenant_demand, shed, pending, local, local_host, shed_sets, local_gen;
			int asn6, host_sets, local_bits;
		};
		int fd[SL_N_MAPS];
	};
	int owned; /* close the fds in sl_maps_close (opened from pins) */
};

void sl_maps_init(struct sl_maps *m);
int sl_maps_open_pinned(struct sl_maps *m, const char *pin_path);
/* Every map of a loaded datapath object, by name (its fds stay the object's). */
struct bpf_object;
int sl_maps_from_object(struct sl_maps *m, const struct bpf_object *obj);
void sl_maps_close(struct sl_maps *m);
/* Remove every pin sluice creates under @pin_path, and the directory if empty. */
void sl_maps_unpin(const char *pin_path);

/* The addresses this node serves, as the kernel's local routing table holds them: @n
 * prefixes (family, address, length, ifindex). The map is made to hold exactly these. */
struct sl_local_prefix {
	struct sl_prefix p;
	uint32_t ifindex;
};
int sl_maps_write_local(const struct sl_maps *m, const struct sl_local_prefix *v, size_t n);
/* Read them back: up to @cap into @v; the number there is, or a negative errno. */
long sl_maps_read_local(const struct sl_maps *m, struct sl_local_prefix *v, size_t cap);

/* SYN front: seconds after a SYN in which the kernel still completes its handshake. */
uint32_t sl_syn_pend_ttl(void);

/* Classes, ports and settings from @c; keeps the installation's hash seed. */
int sl_maps_write_config(const struct sl_maps *m, const struct sl_config *c,
			 uint32_t generation);
/* Build the /24 table, the IPv6 table and the LPM trie from @t in the idle slot and flip to it: packets see
 * the old table or the new one, whole. Sources in no row get @unknown_class. The three
 * steps below, in one call. */
int sl_maps_swap_asn(const struct sl_maps *m, const struct sl_asn_table *t,
		     uint32_t unknown_class);
/* The same in steps, for a caller that builds off its event loop (maps.c says why). Stage:
 * @t in the idle slot, which packets do not read (slow: any thread). Flip: make the staged
 * slot the live one (two small syscalls; -ESTALE if another swap flipped since). Drop: free
 * the trie of the slot not in force (waits an RCU grace period: any thread). One swap's
 * steps in this order, never interleaved with another's; nothing in @t is kept. */
struct sl_asn_staged {
	uint32_t slot; /* the slot it was built in */
	uint32_t rows;
	struct sl_asn6_stats v6; /* the IPv6 table's nodes, and what it leaves to the trie */
};
int sl_maps_stage_asn(const struct sl_maps *m, const struct sl_asn_table *t,
		      uint32_t unknown_class, struct sl_asn_staged *st);
int sl_maps_flip_asn(const struct sl_maps *m, const struct sl_asn_staged *st);
int sl_maps_drop_idle_asn(const struct sl_maps *m);

/* Sum the per-CPU counters into one row per class (SL_STATS_ROWS rows). */
int sl_maps_read_stats(const struct sl_maps *m, struct sl_counters *rows);
/* Number of live buckets (ways holding a key), or a negative errno. */
long sl_maps_count_buckets(const struct sl_maps *m);
/* Buckets the table can hold: its sets x SL_BUCKET_WAYS, or a negative errno. */
long sl_maps_bucket_capacity(const struct sl_maps *m);

int sl_maps_read_meta(const struct sl_maps *m, struct sl_meta *meta);
int sl_maps_write_meta(const struct sl_maps *m, const struct sl_meta *meta);
int sl_maps_read_settings(const struct sl_maps *m, struct sl_settings *s);
int sl_maps_read_class(const struct sl_maps *m, uint32_t id, struct sl_class_policy *p);

/* ASN row for a full address: 0 and *@v filled, or -ENOENT when no prefix covers it. */
int sl_maps_lookup_asn(const struct sl_maps *m, const struct sl_prefix *a, struct sl_asn_val *v);
/* What the live slot's fast table says for @a, as the datapath reads it: a class id from the
 * /24 table (IPv4) or the IPv6 table, or SL_DIR_USE_TRIE where the trie decides. */
int sl_maps_fast_class(const struct sl_maps *m, const struct sl_prefix *a, uint32_t *cls);
/* The bucket at @k: 0, or -ENOENT when the key has no way of its own (a charge would take a
 * way, or be homeless: sl_maps_predict_bucket says which). */
int sl_maps_lookup_bucket(const struct sl_maps *m, const struct sl_bkey *k, struct sl_bucket *b);
/* The TAT a charge of @k would start from now when it has no way: @fresh (the new-key TAT)
 * if a way is free to take, else the set's spill bucket's. *@homeless says which. */
int sl_maps_predict_bucket(const struct sl_maps *m, const struct sl_bkey *k, __u64 now,
			   __u64 fresh, __u64 *tat, bool *homeless);
/* Write @b as @k's bucket: into its own way, else a way the datapath would let it take;
 * -ENOSPC when every way of its set holds a spent key (none is given away). @lead_ns: how far ahead a new bucket of @k starts (0: forgettable only once full).
 * Read-modify-write of the whole set, not atomic against the datapath: for operators' clears
 * and tests. */
int sl_maps_write_bucket(const struct sl_maps *m, const struct sl_bkey *k,
			 const struct sl_bucket *b, __u64 lead_ns);

/* Tenants: names, listen keys and static fallback. The lease of a tenant already in the map
 * under the same name is kept (reloads and starts do not touch it: lease.c writes it); a new
 * tenant's starts lapsed, its static rate in force. Keys of tenants no longer configured are
 * removed. */
int sl_maps_write_tenants(const struct sl_maps *m, const struct sl_config *c);
/* Stateless front: the route table (method + path prefix -> route id, cost) and the host
 * names of tenants (-> tenant id), rewritten whole. */
int sl_maps_write_routes(const struct sl_maps *m, const struct sl_config *c);
/* Put the host @hk of tenant @tid in the emptier of its two sets of @sets (@nsets, a power
 * of two; see struct sl_host_set) under @seed: 1, or 0 when both were full (or held its
 * tag), and both are then marked overflow. */
int sl_host_place(struct sl_host_set *sets, uint32_t nsets, const struct sl_host_key *hk,
		  uint32_t tid, uint32_t seed);
/* First-request outcomes, summed over CPUs: @n rows of sl_route_stats or sl_tenant_stats. */
int sl_maps_read_outcomes(int fd, uint32_t n, struct sl_outcome *out);

/* Each tenant's demand so far (cost units, summed over CPUs): SL_MAX_TENANTS values. */
int sl_maps_read_demand(const struct sl_maps *m, uint64_t *out);
/* Set tenant @id's lease: @rate, @burst until @expires_ns (CLOCK_MONOTONIC_COARSE), and the
 * reasons for sluicectl leases. -ENOENT when the tenant has no edge budget. */
struct sl_lease_info {
	double share, demand, cluster_demand;
	uint32_t nodes;
};
/* A lease's burst: its share of the budget's, but never below the largest single charge (a
 * port's or a route's cost, up to the whole budget's burst): one request must always fit. */
double sl_lease_burst(double share_burst, double budget_burst, const struct sl_config *c);
int sl_maps_set_lease(const struct sl_maps *m, uint32_t id, double rate, double burst,
		      uint64_t expires_ns, const struct sl_lease_info *why);
/* Grant tenant @id (config @c) @share of its budget from @from_ns for its lease_ttl: the rate
 * and burst sl_maps_set_lease() is given, as the lease controller and the fixtures grant. */
int sl_maps_grant_share(const struct sl_maps *m, const struct sl_config *c, uint32_t id,
			double share, uint64_t from_ns, const struct sl_lease_info *why);

/* Cookie keys: make one if there is none; rotate when @rotate or when older than @every_s.
 * Returns 1 when a key was made or rotated, 0 when nothing changed, < 0 on error. */
int sl_maps_cookie_keys(const struct sl_maps *m, int rotate, uint32_t every_s);

/* Verdicts. */
int sl_maps_verdict_put(const struct sl_maps *m, const struct sl_prefix *p,
			const struct sl_verdict *v);
int sl_maps_verdict_del(const struct sl_maps *m, const struct sl_prefix *p);
/* Delete verdicts past their expiry; recount the live ones into sl_vcount.
 * Returns the number swept, or < 0. */
int sl_maps_verdict_sweep(const struct sl_maps *m, uint32_t *live);

/* ns on the clock the datapath uses (bpf_ktime_get_coarse_ns == CLOCK_MONOTONIC_COARSE). */
uint64_t sl_now_ns(void);
/* CLOCK_REALTIME - datapath clock, in ns: add it to a datapath time to get wall time. */
int64_t sl_wall_offset_ns(void);

#endif
