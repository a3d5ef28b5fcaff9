/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The edge half of sluiced: loads the XDP object through its skeleton, pins (or adopts) its
 * maps, programs them from the config, and attaches to the configured interfaces with libxdp.
 */
#ifndef SLUICED_EDGE_H
#define SLUICED_EDGE_H

#include <stdbool.h>
#include <stdint.h>

#include "asn.h"
#include "config.h"
#include "maps.h"

struct sluice_bpf;
struct handoff_bpf;
struct xdp_program;

struct edge_iface {
	char name[IF_NAMESIZE];
	int ifindex;
	uint8_t mode; /* enum sl_attach_mode */
	bool tc;      /* the hand-off program is on this interface's TC ingress */
};

struct edge {
	struct sluice_bpf *skel;
	struct handoff_bpf *handoff; /* NULL: the stateless front is not available here */
	char handoff_why[160];       /* why not */
	struct xdp_program *prog;
	struct sl_maps maps;
	struct edge_iface ifaces[SL_MAX_IFACES];
	int n_ifaces;
	uint8_t xdp_mode;
	bool adopted; /* maps came from pins a previous daemon left */
	char pin_path[PATH_MAX];
	char asn_source[PATH_MAX];
	uint32_t asn_entries;
	uint32_t generation;
	uint32_t reload_failures;
	uint64_t started_unix;
	uint64_t reloaded_unix;
	char last_error[256];
	char ctl_socket[PATH_MAX];
	char config_path[PATH_MAX];
	struct sl_config eff; /* the config as this kernel runs it (see effective()) */
	struct sl_local_prefix *local; /* what sl_local holds, to notice a change */
	size_t n_local;
};

/* The most local prefixes the edge mirrors (sl_local's size). */
#define SL_MAX_LOCAL 4096

/* Load, pin, program and attach. On failure everything done so far is undone. */
int edge_start(struct edge *e, const struct sl_config *c, const struct sl_asn_table *asn);
/* Program a new config into the live maps, making @asn (staged for @c off the loop, see
 * sl_maps_stage_asn) the live table; attach/detach interfaces that changed. */
int edge_apply(struct edge *e, const struct sl_config *c, const struct sl_asn_staged *asn);
/* Make a staged ASN table the live one, the config unchanged (sluicectl asn load). */
int edge_flip_asn(struct edge *e, const struct sl_asn_staged *asn, const char *source);
/* Once a second: rotate the cookie key when due, sweep verdicts (leases: lease.c). */
void edge_tick(struct edge *e, const struct sl_config *c);
/* Readiness: is our XDP program still the one on every configured interface (an operator
 * or another tool may have replaced or removed it)? 0, or -ENOENT with the first interface
 * that lacks it named in @why. A netlink query per interface. */
int edge_check_attached(const struct edge *e, char *why, size_t n);
/* Record a failed reload for status. */
void edge_note_failure(struct edge *e, const char *why);
/* Stop. @handover: leave the program attached and the maps pinned for the next daemon;
 * otherwise detach from every interface and remove the pins. */
void edge_stop(struct edge *e, bool handover);

#endif
