// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Loading and attaching the edge datapath (see edge.h).
 *
 * Order matters: the object is loaded and its maps programmed from the config *before* it is
 * attached, so the first packet it sees is judged by the real config, never by empty maps.
 * Maps are pinned by name; a pin left by a previous daemon is reused, which is how bucket
 * state survives a restart. A pin that cannot be reused (the state table was resized, or the
 * ABI changed) is removed with a warning and recreated empty.
 */
#include <errno.h>
#include <linux/capability.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "edge.h"
#include "localaddr.h"
#include "log.h"
#include "reasons.h"
#include "handoff.skel.h"
#include "sluice.skel.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

static const char *const map_names[SL_N_MAPS] = SL_MAP_NAMES;

/* Make sure @pin_path's directory exists on a bpf filesystem, mounting /sys/fs/bpf if this
 * mount namespace has none (containers and `ip netns exec` often don't). */
static int prepare_bpffs(const char *pin_path)
{
	struct statfs st;
	char parent[PATH_MAX], *slash;

	snprintf(parent, sizeof(parent), "%s", pin_path);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -EINVAL;
	*slash = '\0';
	if (statfs(parent, &st) || st.f_type != BPF_FS_MAGIC) {
		if (strcmp(parent, "/sys/fs/bpf")) {
			log_error("%s is not on a bpf filesystem (mount -t bpf bpf %s)", pin_path,
				  parent);
			return -ENOTDIR;
		}
		if (mount("bpf", parent, "bpf", 0, "mode=0700")) {
			int e = -errno;

			log_error("cannot mount bpffs on %s: %s", parent, strerror(-e));
			return e;
		}
		log_info("mounted bpffs on %s", parent);
	}
	if (mkdir(pin_path, 0700) && errno != EEXIST) {
		int e = -errno;

		log_error("cannot create %s: %s", pin_path, strerror(-e));
		return e;
	}
	return 0;
}

/*
 * A pinned map whose size no longer matches the config, or whose layout is not this build's
 * (another value size or map type: the bucket table was an LRU hash of 16-byte values before
 * it was an array of sets), cannot be reused: drop it, so that the load creates it anew rather
 * than failing, or worse, reading one layout as another. @value_size 0: not checked.
 */
static void drop_if_changed(const char *pin_path, const char *name, __u32 want, __u32 value_size,
			    __u32 type)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", pin_path, name);
	fd = bpf_obj_get(p);
	if (fd < 0)
		return;
	memset(&info, 0, sizeof(info));
	if (!bpf_obj_get_info_by_fd(fd, &info, &len)) {
		if (value_size && (info.value_size != value_size || info.type != type)) {
			log_warn("%s: pinned with another layout (type %u, %u-byte values; this "
				 "build: type %u, %u): recreating it (its state is lost)", name,
				 info.type, info.value_size, type, value_size);
			unlink(p);
		} else if (info.max_entries != want) {
			log_warn("%s: %u entries pinned, config wants %u: recreating it (its state "
				 "is lost)", name, info.max_entries, want);
			unlink(p);
		}
	}
	close(fd);
}

static bool pins_present(const char *pin_path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", pin_path, map_names[0]);
	return access(p, F_OK) == 0;
}

static int load_object(struct edge *e, const struct sl_config *c)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = e->pin_path);
	uint32_t sets = sl_bucket_sets(c->state_entries);
	uint32_t pend = sl_state_slots(c->state_entries);
	int ret;

	e->skel = sluice_bpf__open_opts(&oo);
	if (!e->skel)
		return -errno;
	bpf_map__set_max_entries(e->skel->maps.sl_buckets, sets);
	bpf_map__set_max_entries(e->skel->maps.sl_pending, pend);
	e->skel->rodata->bucket_mask = sets - 1;
	e->skel->rodata->pend_mask = pend - 1;
	ret = sluice_bpf__load(e->skel);
	if (ret) {
		sluice_bpf__destroy(e->skel);
		e->skel = NULL;
	}
	return ret;
}

static void maps_from_skel(struct edge *e)
{
	/* The skeleton's object has every map the list names: built from the same maps.h. */
	if (sl_maps_from_object(&e->maps, e->skel->obj))
		log_error("the datapath object lacks a map sl_maps names");
}

/*
 * The stateless front needs the TC-only kfunc bpf_sk_assign_tcp_reqsk (Linux 6.9) and kernel
 * SYN cookies not switched off. Loading the hand-off object is the probe: it shares every map
 * with the XDP object. On failure, e->handoff_why says why.
 */
static void load_handoff(struct edge *e)
{
	struct bpf_map *m;
	char buf[16] = "";
	FILE *f;
	int ret;

	f = fopen("/proc/sys/net/ipv4/tcp_syncookies", "r");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	if (buf[0] == '0') {
		snprintf(e->handoff_why, sizeof(e->handoff_why),
			 "net.ipv4.tcp_syncookies is 0, and the kernel builds handed-off "
			 "connections through its SYN-cookie path");
		return;
	}
	if (getenv("SLUICED_NO_HANDOFF")) { /* for tests of the fallback */
		snprintf(e->handoff_why, sizeof(e->handoff_why), "SLUICED_NO_HANDOFF is set");
		return;
	}
	e->handoff = handoff_bpf__open();
	if (!e->handoff) {
		snprintf(e->handoff_why, sizeof(e->handoff_why), "cannot open the object: %s",
			 strerror(errno));
		return;
	}
	bpf_object__for_each_map(m, e->handoff->obj) {
		struct bpf_map *xm = bpf_object__find_map_by_name(e->skel->obj,
								  bpf_map__name(m));

		bpf_map__set_pin_path(m, NULL);
		if (xm && bpf_map__fd(xm) >= 0)
			bpf_map__reuse_fd(m, bpf_map__fd(xm));
	}
	ret = handoff_bpf__load(e->handoff);
	if (ret) {
		snprintf(e->handoff_why, sizeof(e->handoff_why),
			 "the kernel refused the hand-off program (%s): bpf_sk_assign_tcp_reqsk "
			 "needs Linux 6.9 or later", strerror(-ret));
		handoff_bpf__destroy(e->handoff);
		e->handoff = NULL;
	}
}

static bool wants_stateless(const struct sl_config *c)
{
	int i;

	for (i = 0; i < c->n_ports; i++)
		if (c->ports[i].front == SL_FRONT_STATELESS)
			return true;
	return false;
}

/* The config as this kernel can run it: stateless ports fall back to the SYN front (with
 * their action, which works there too) when the hand-off is unavailable. */
static const struct sl_config *effective(struct edge *e, const struct sl_config *c,
					 struct sl_config *tmp)
{
	int i;

	if (e->handoff || !wants_stateless(c))
		return c;
	*tmp = *c;
	for (i = 0; i < tmp->n_ports; i++)
		if (tmp->ports[i].front == SL_FRONT_STATELESS) {
			log_warn("port %u: the stateless front is not available (%s); the SYN "
				 "front instead: SYNs go to the kernel, each connection is charged "
				 "at the ACK that completes the kernel's handshake",
				 tmp->ports[i].port, e->handoff_why);
			tmp->ports[i].front = SL_FRONT_SYN;
		}
	return tmp;
}

/* Say, once per start or reload, which front each port runs and what that guarantees. */
static void log_fronts(const struct edge *e, const struct sl_config *c, const struct sl_config *want)
{
	int i;

	for (i = 0; i < c->n_ports; i++) {
		const struct sl_port_cfg *p = &c->ports[i];

		if (p->front == SL_FRONT_STATELESS)
			log_info("port %u (%s, %s): stateless front: every SYN gets a cookie, a "
				 "connection is charged at its first request (route cost; %u when "
				 "unreadable)", p->port, sl_proto_name(p->proto),
				 p->action == SL_ACT_REPLY ? "429" : "drop", p->unreadable_cost);
		else
			log_info("port %u (%s, %s): SYN front (%s): SYNs weighed, not charged; a "
				 "connection is charged %u at the ACK that completes the kernel's "
				 "handshake", p->port, sl_proto_name(p->proto),
				 p->action == SL_ACT_REPLY ? "429" : "drop",
				 want->ports[i].front == SL_FRONT_SYN ? "configured" :
				 e->handoff_why, p->cost);
	}
}

#define SL_TC_HANDLE 0x51ce
#define SL_TC_PRIO 1

static int tc_attach(struct edge *e, struct edge_iface *it)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = it->ifindex,
			    .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = SL_TC_HANDLE, .priority = SL_TC_PRIO,
			    .flags = BPF_TC_F_REPLACE,
			    .prog_fd = bpf_program__fd(e->handoff->progs.sluice_handoff));
	int ret;

	ret = bpf_tc_hook_create(&hook);
	if (ret && ret != -EEXIST) {
		log_error("%s: cannot create the clsact qdisc: %s", it->name, strerror(-ret));
		return ret;
	}
	ret = bpf_tc_attach(&hook, &opts);
	if (ret) {
		log_error("%s: cannot attach the hand-off to TC ingress: %s", it->name,
			  strerror(-ret));
		return ret;
	}
	it->tc = true;
	log_info("%s: stateless-front hand-off attached at TC ingress", it->name);
	return 0;
}

static void tc_detach(struct edge_iface *it)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = it->ifindex,
			    .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = SL_TC_HANDLE, .priority = SL_TC_PRIO);
	int ret;

	if (!it->tc)
		return;
	ret = bpf_tc_detach(&hook, &opts);
	if (ret && ret != -ENOENT)
		log_warn("%s: TC detach failed: %s", it->name, strerror(-ret));
	it->tc = false;
}

/* Hand-off on every interface when some port is stateless, off when none is. */
static void tc_sync(struct edge *e, const struct sl_config *c)
{
	bool want = e->handoff && wants_stateless(c);
	int i;

	for (i = 0; i < e->n_ifaces; i++) {
		if (want && !e->ifaces[i].tc)
			tc_attach(e, &e->ifaces[i]);
		else if (!want && e->ifaces[i].tc)
			tc_detach(&e->ifaces[i]);
	}
}

static void write_meta(struct edge *e, const struct sl_config *c, bool running)
{
	struct sl_meta meta;
	int i;

	memset(&meta, 0, sizeof(meta));
	meta.abi_version = SL_ABI_VERSION;
	meta.pid = running ? (uint32_t)getpid() : 0;
	meta.started_unix = e->started_unix;
	meta.reloaded_unix = e->reloaded_unix;
	meta.generation = e->generation;
	meta.reload_failures = e->reload_failures;
	meta.state_entries = c ? c->state_entries : 0;
	meta.bucket_sets = c ? sl_bucket_sets(c->state_entries) : 0;
	meta.asn_entries = e->asn_entries;
	snprintf(meta.config_path, sizeof(meta.config_path), "%s", e->config_path);
	snprintf(meta.asn_source, sizeof(meta.asn_source), "%s", e->asn_source);
	snprintf(meta.ctl_socket, sizeof(meta.ctl_socket), "%s", e->ctl_socket);
	snprintf(meta.last_error, sizeof(meta.last_error), "%s", e->last_error);
	meta.n_ifaces = (uint32_t)e->n_ifaces;
	for (i = 0; i < e->n_ifaces; i++) {
		meta.ifaces[i].ifindex = (uint32_t)e->ifaces[i].ifindex;
		meta.ifaces[i].mode = e->ifaces[i].mode;
		snprintf(meta.ifaces[i].name, sizeof(meta.ifaces[i].name), "%s",
			 e->ifaces[i].name);
	}
	if (c) {
		meta.n_ports = (uint32_t)c->n_ports;
		for (i = 0; i < c->n_ports; i++) {
			meta.ports[i].port = c->ports[i].port;
			meta.ports[i].front = c->ports[i].front;
			meta.ports[i].action = c->ports[i].action;
			meta.ports[i].cost = c->ports[i].cost;
		}
	} else {
		struct sl_meta old;

		if (!sl_maps_read_meta(&e->maps, &old)) {
			meta.n_ports = old.n_ports;
			memcpy(meta.ports, old.ports, sizeof(meta.ports));
			meta.state_entries = old.state_entries;
			meta.bucket_sets = old.bucket_sets;
		}
	}
	if (sl_maps_write_meta(&e->maps, &meta))
		log_warn("cannot write status metadata: %s", strerror(errno));
}

/* What libxdp actually gave us on @ifindex. */
static uint8_t query_mode(int ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	enum xdp_attach_mode m;
	bool legacy;
	uint8_t r;

	if (!mp || libxdp_get_error(mp))
		return SL_ATTACH_NONE;
	m = xdp_multiprog__attach_mode(mp);
	legacy = xdp_multiprog__is_legacy(mp);
	if (m == XDP_MODE_SKB)
		r = legacy ? SL_ATTACH_LEGACY_GENERIC : SL_ATTACH_GENERIC;
	else if (m == XDP_MODE_NATIVE)
		r = legacy ? SL_ATTACH_LEGACY_NATIVE : SL_ATTACH_NATIVE;
	else
		r = SL_ATTACH_NONE;
	xdp_multiprog__close(mp);
	return r;
}

/* Is this program, by id, the one XDP runs on @ifindex (alone, or among the dispatcher's)? */
static bool ours_on(const struct edge *e, int ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p = NULL;
	uint32_t id = xdp_program__id(e->prog);
	bool found = false;

	if (!mp || libxdp_get_error(mp))
		return false;
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		found = p && xdp_program__id(p) == id;
	} else {
		while (!found && (p = xdp_multiprog__next_prog(p, mp)))
			found = xdp_program__id(p) == id;
	}
	xdp_multiprog__close(mp);
	return found;
}

int edge_check_attached(const struct edge *e, char *why, size_t n)
{
	int i;

	if (!e->prog)
		return 0;
	for (i = 0; i < e->n_ifaces; i++) {
		if (!ours_on(e, e->ifaces[i].ifindex)) {
			snprintf(why, n, "the edge program is not attached to %s", e->ifaces[i].name);
			return -ENOENT;
		}
	}
	return 0;
}

/*
 * If a previous sluiced left its program attached (a handover or a crash), replace it. In
 * legacy mode the kernel swaps programs atomically (XDP_FLAGS_REPLACE), so no packet passes
 * unjudged; behind libxdp's dispatcher, ours is removed and re-added.
 * Returns 1 when replaced, 0 when there was nothing of ours, negative on error.
 */
static int replace_stale(struct edge *e, int ifindex, enum xdp_attach_mode mode)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p = NULL;
	int ret = 0;

	if (!mp || libxdp_get_error(mp))
		return 0;
	if (xdp_multiprog__is_legacy(mp)) {
		struct xdp_program *main_prog = xdp_multiprog__main_prog(mp);

		if (main_prog && !strcmp(xdp_program__name(main_prog), "sluice_xdp")) {
			LIBBPF_OPTS(bpf_xdp_attach_opts, o,
				    .old_prog_fd = xdp_program__fd(main_prog));
			__u32 flags = XDP_FLAGS_REPLACE | (xdp_multiprog__attach_mode(mp) ==
				      XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);

			ret = bpf_xdp_attach(ifindex, xdp_program__fd(e->prog), flags, &o);
			ret = ret ? ret : 1;
		}
	} else {
		while ((p = xdp_multiprog__next_prog(p, mp))) {
			if (strcmp(xdp_program__name(p), "sluice_xdp"))
				continue;
			ret = xdp_program__detach(p, ifindex, mode, 0);
			break;
		}
	}
	xdp_multiprog__close(mp);
	return ret;
}

static int attach_one(struct edge *e, struct edge_iface *it)
{
	enum xdp_attach_mode mode = e->xdp_mode == SL_XDP_GENERIC ? XDP_MODE_SKB : XDP_MODE_NATIVE;
	char buf[128];
	int ret;

	it->ifindex = (int)if_nametoindex(it->name);
	if (!it->ifindex) {
		log_error("interface %s: %s", it->name, strerror(errno));
		return -ENODEV;
	}
	ret = replace_stale(e, it->ifindex, mode);
	if (ret < 0) {
		log_error("%s: cannot replace the previous sluice program: %s", it->name,
			  strerror(-ret));
		return ret;
	}
	if (ret == 0) {
		ret = xdp_program__attach(e->prog, it->ifindex, mode, 0);
		if (ret == -EOPNOTSUPP && mode == XDP_MODE_NATIVE) {
			log_warn("%s: no native XDP support in its driver; using generic (skb) mode, "
				 "which sheds after the kernel has allocated the packet", it->name);
			mode = XDP_MODE_SKB;
			ret = xdp_program__attach(e->prog, it->ifindex, mode, 0);
		}
		if (ret) {
			libxdp_strerror(ret, buf, sizeof(buf));
			log_error("%s: cannot attach XDP: %s", it->name, buf);
			return ret;
		}
	} else {
		log_info("%s: replaced the program a previous sluiced left attached", it->name);
	}
	it->mode = query_mode(it->ifindex);
	if (it->mode == SL_ATTACH_LEGACY_NATIVE || it->mode == SL_ATTACH_LEGACY_GENERIC)
		log_info("%s: attached in %s mode (libxdp's dispatcher is unavailable here, so "
			 "no other XDP program can share this interface)", it->name,
			 sl_attach_mode_name(it->mode));
	else
		log_info("%s: attached in %s mode", it->name, sl_attach_mode_name(it->mode));
	return 0;
}

static void detach_one(struct edge *e, struct edge_iface *it)
{
	enum xdp_attach_mode mode;
	int ret;

	if (!it->ifindex || it->mode == SL_ATTACH_NONE)
		return;
	mode = (it->mode == SL_ATTACH_GENERIC || it->mode == SL_ATTACH_LEGACY_GENERIC) ?
	       XDP_MODE_SKB : XDP_MODE_NATIVE;
	ret = xdp_program__detach(e->prog, it->ifindex, mode, 0);
	if (ret && ret != -ENOENT)
		log_warn("%s: detach failed: %s", it->name, strerror(-ret));
	else
		log_info("%s: detached", it->name);
	it->mode = SL_ATTACH_NONE;
}

static int set_asn(struct edge *e, const struct sl_asn_table *asn, const char *source,
		   uint32_t unknown_class)
{
	int ret = sl_maps_swap_asn(&e->maps, asn, unknown_class);

	if (ret) {
		log_error("cannot install the ASN table: %s", strerror(-ret));
		return ret;
	}
	e->asn_entries = (uint32_t)asn->n;
	snprintf(e->asn_source, sizeof(e->asn_source), "%s", source ? source : "");
	return 0;
}

/* Make a table the worker staged (sl_maps_stage_asn) the live one. */
static int flip_asn(struct edge *e, const struct sl_asn_staged *st, const char *source)
{
	int ret = sl_maps_flip_asn(&e->maps, st);

	if (ret) {
		log_error("cannot install the ASN table: %s", strerror(-ret));
		return ret;
	}
	e->asn_entries = st->rows;
	snprintf(e->asn_source, sizeof(e->asn_source), "%s", source ? source : "");
	return 0;
}

/* Whether this thread holds @cap in its effective set (capget(2), no libcap needed). */
static bool have_cap(unsigned int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return true; /* cannot tell: let the real calls say what is missing */
	return d[cap / 32].effective & (1u << (cap % 32));
}

/*
 * Mirror the kernel's local addresses into sl_local when they changed (and at start, before
 * anything is attached). Until an added address appears here (a second at most), packets to
 * it are passed untouched as not ours: the edge fails open for a new address, never closed.
 */
static int sync_local(struct edge *e, bool force)
{
	struct sl_local_prefix *v;
	long n;
	int ret = 0;

	v = calloc(SL_MAX_LOCAL, sizeof(*v));
	if (!v)
		return -ENOMEM;
	n = sl_local_dump(v, SL_MAX_LOCAL);
	if (n < 0) {
		ret = (int)n;
		log_warn("cannot read the local routing table: %s", strerror(-ret));
		goto out;
	}
	if (n > SL_MAX_LOCAL) {
		log_warn("%ld local addresses; the edge knows the first %d", n, SL_MAX_LOCAL);
		n = SL_MAX_LOCAL;
	}
	if (!force && (size_t)n == e->n_local && !memcmp(v, e->local, (size_t)n * sizeof(*v)))
		goto out;
	ret = sl_maps_write_local(&e->maps, v, (size_t)n);
	if (ret) {
		log_warn("cannot write the local addresses: %s", strerror(-ret));
		goto out;
	}
	free(e->local);
	e->local = v;
	e->n_local = (size_t)n;
	v = NULL;
	log_info("%zu local address(es) the edge answers for", e->n_local);
out:
	free(v);
	return ret;
}

int edge_start(struct edge *e, const struct sl_config *c, const struct sl_asn_table *asn)
{
	int i, ret;

	/* libxdp reads programs and their BTF back by id (BPF_*_GET_FD_BY_ID), which needs
	 * CAP_SYS_ADMIN; without it, xdp_program__attach() crashes inside libxdp (1.3)
	 * instead of failing. Say so before anything is loaded. */
	if (!have_cap(CAP_SYS_ADMIN)) {
		log_error("the edge needs CAP_SYS_ADMIN (libxdp reads programs back by id; also "
			  "CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN): run sluiced as root or add it to "
			  "the unit's CapabilityBoundingSet");
		return -EPERM;
	}
	memset(e, 0, sizeof(*e));
	sl_maps_init(&e->maps);
	snprintf(e->pin_path, sizeof(e->pin_path), "%s", c->pin_path);
	snprintf(e->ctl_socket, sizeof(e->ctl_socket), "%s", c->ctl_socket);
	snprintf(e->config_path, sizeof(e->config_path), "%s", c->path);
	e->xdp_mode = c->xdp_mode;
	e->started_unix = e->reloaded_unix = (uint64_t)time(NULL);

	ret = prepare_bpffs(e->pin_path);
	if (ret)
		return ret;
	drop_if_changed(e->pin_path, "sl_buckets", sl_bucket_sets(c->state_entries),
			sizeof(struct sl_bucket_set), BPF_MAP_TYPE_ARRAY);
	drop_if_changed(e->pin_path, "sl_pending", sl_state_slots(c->state_entries), 0, 0);
	{
		/* Before the set-associative table, spent keys the LRU forgot were remembered in
		 * sl_ghosts; the table keeps them itself now, and an old pin would only hold
		 * memory. */
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/sl_ghosts", e->pin_path);
		if (!unlink(p))
			log_info("removed the ghost table an older build pinned (sl_ghosts)");
		/* Likewise the admitted connections' LRU hash, now tag sets (sl_conn_sets): its
		 * records last 10 s, so losing them at an upgrade costs what a restart costs. */
		snprintf(p, sizeof(p), "%s/sl_conns", e->pin_path);
		if (!unlink(p))
			log_info("removed the admitted-connection table an older build pinned "
				 "(sl_conns; now sl_conn_sets)");
	}
	e->adopted = pins_present(e->pin_path);

	ret = load_object(e, c);
	if (ret && e->adopted) {
		log_warn("the maps pinned in %s do not fit this build (%s): recreating them; "
			 "bucket state starts empty", e->pin_path, strerror(-ret));
		sl_maps_unpin(e->pin_path);
		prepare_bpffs(e->pin_path);
		e->adopted = false;
		ret = load_object(e, c);
	}
	if (ret) {
		log_error("cannot load the XDP object: %s", strerror(-ret));
		return ret;
	}
	maps_from_skel(e);
	if (e->adopted) {
		struct sl_meta old;

		if (!sl_maps_read_meta(&e->maps, &old) && old.generation)
			e->generation = old.generation;
		log_info("adopted the maps pinned in %s: bucket state kept", e->pin_path);
	}

	load_handoff(e);
	if (!e->handoff && wants_stateless(c))
		log_warn("stateless front unavailable: %s", e->handoff_why);
	{
		const struct sl_config *want = c;

		c = effective(e, c, &e->eff);
		log_fronts(e, c, want);
	}
	e->generation++;
	ret = sl_maps_write_config(&e->maps, c, e->generation);
	if (!ret)
		ret = set_asn(e, asn, c->asn_table, (uint32_t)c->unknown_class);
	if (!ret)
		ret = sl_maps_write_tenants(&e->maps, c);
	if (!ret)
		ret = sl_maps_write_routes(&e->maps, c);
	if (!ret) {
		ret = sl_maps_cookie_keys(&e->maps, 0, c->cookie_rotate_s);
		ret = ret < 0 ? ret : 0;
	}
	if (!ret)
		ret = sync_local(e, true);
	if (ret) {
		log_error("cannot program the maps: %s", strerror(-ret));
		goto fail;
	}

	e->prog = xdp_program__from_fd(bpf_program__fd(e->skel->progs.sluice_xdp));
	if (!e->prog || libxdp_get_error(e->prog)) {
		ret = e->prog ? (int)libxdp_get_error(e->prog) : -ENOMEM;
		e->prog = NULL;
		log_error("libxdp cannot use the program: %s", strerror(-ret));
		goto fail;
	}
	for (i = 0; i < c->n_ifaces; i++) {
		struct edge_iface *it = &e->ifaces[e->n_ifaces];

		memset(it, 0, sizeof(*it));
		snprintf(it->name, sizeof(it->name), "%s", c->ifaces[i]);
		ret = attach_one(e, it);
		if (ret)
			goto fail;
		e->n_ifaces++;
	}
	tc_sync(e, c);
	write_meta(e, c, true);
	return 0;
fail:
	/* State a previous daemon left is worth more than a clean slate: keep adopted pins. */
	edge_stop(e, e->adopted);
	return ret;
}

int edge_apply(struct edge *e, const struct sl_config *c, const struct sl_asn_staged *asn)
{
	const struct sl_config *want = c;
	struct edge_iface keep[SL_MAX_IFACES];
	int i, j, n = 0, ret;

	c = effective(e, c, &e->eff);
	ret = sl_maps_write_config(&e->maps, c, e->generation + 1);
	if (!ret)
		ret = flip_asn(e, asn, c->asn_table);
	if (!ret)
		ret = sl_maps_write_tenants(&e->maps, c);
	if (!ret)
		ret = sl_maps_write_routes(&e->maps, c);
	if (ret) {
		edge_note_failure(e, "cannot program the maps");
		return ret;
	}
	e->generation++;
	e->reloaded_unix = (uint64_t)time(NULL);
	e->last_error[0] = '\0';
	log_fronts(e, c, want);
	if (c->xdp_mode != e->xdp_mode)
		log_warn("edge.xdp_mode changes take effect at the next start");
	if (strcmp(c->pin_path, e->pin_path))
		log_warn("edge.pin_path changes take effect at the next start");

	/* Interfaces: keep those still listed, detach the rest, attach the new ones. */
	for (i = 0; i < e->n_ifaces; i++) {
		for (j = 0; j < c->n_ifaces; j++)
			if (!strcmp(e->ifaces[i].name, c->ifaces[j]))
				break;
		if (j < c->n_ifaces) {
			keep[n++] = e->ifaces[i];
		} else {
			tc_detach(&e->ifaces[i]);
			detach_one(e, &e->ifaces[i]);
		}
	}
	for (j = 0; j < c->n_ifaces; j++) {
		for (i = 0; i < n; i++)
			if (!strcmp(keep[i].name, c->ifaces[j]))
				break;
		if (i < n)
			continue;
		memset(&keep[n], 0, sizeof(keep[n]));
		snprintf(keep[n].name, sizeof(keep[n].name), "%s", c->ifaces[j]);
		if (attach_one(e, &keep[n]) == 0)
			n++;
		else
			edge_note_failure(e, "an interface could not be attached");
	}
	memcpy(e->ifaces, keep, sizeof(keep[0]) * (size_t)n);
	e->n_ifaces = n;
	tc_sync(e, c);
	write_meta(e, c, true);
	return 0;
}

int edge_flip_asn(struct edge *e, const struct sl_asn_staged *asn, const char *source)
{
	struct sl_meta meta;
	int ret = flip_asn(e, asn, source);

	if (ret)
		return ret;
	if (!sl_maps_read_meta(&e->maps, &meta)) {
		meta.asn_entries = e->asn_entries;
		snprintf(meta.asn_source, sizeof(meta.asn_source), "%s", source);
		sl_maps_write_meta(&e->maps, &meta);
	}
	return 0;
}

void edge_tick(struct edge *e, const struct sl_config *c)
{
	uint32_t live;
	int ret;

	if (!e->skel)
		return;
	sync_local(e, false);
	ret = sl_maps_cookie_keys(&e->maps, 0, c->cookie_rotate_s);
	if (ret < 0)
		log_warn("cannot rotate the cookie key: %s", strerror(-ret));
	else if (ret > 0)
		log_info("cookie key rotated; the previous one is accepted for one more slot");
	ret = sl_maps_verdict_sweep(&e->maps, &live);
	if (ret > 0)
		log_info("swept %d expired verdict(s); %u live", ret, live);
}

void edge_note_failure(struct edge *e, const char *why)
{
	struct sl_meta meta;

	e->reload_failures++;
	snprintf(e->last_error, sizeof(e->last_error), "%s", why);
	if (e->skel && !sl_maps_read_meta(&e->maps, &meta)) {
		meta.reload_failures = e->reload_failures;
		snprintf(meta.last_error, sizeof(meta.last_error), "%s", why);
		sl_maps_write_meta(&e->maps, &meta);
	}
}

void edge_stop(struct edge *e, bool handover)
{
	int i;

	if (handover && e->skel) {
		write_meta(e, NULL, false);
		log_info("handing over: XDP stays attached and the maps stay pinned in %s",
			 e->pin_path);
	} else {
		for (i = 0; i < e->n_ifaces; i++) {
			tc_detach(&e->ifaces[i]);
			detach_one(e, &e->ifaces[i]);
		}
		if (e->skel)
			sl_maps_unpin(e->pin_path);
	}
	if (e->handoff)
		handoff_bpf__destroy(e->handoff);
	e->handoff = NULL;
	if (e->prog)
		xdp_program__close(e->prog);
	e->prog = NULL;
	if (e->skel)
		sluice_bpf__destroy(e->skel);
	e->skel = NULL;
	e->n_ifaces = 0;
	free(e->local);
	e->local = NULL;
	e->n_local = 0;
	sl_maps_init(&e->maps);
}
