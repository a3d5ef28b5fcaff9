// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench/wire: packets per second on a wire. Frames are pushed into one end of a veth pair at
 * the highest rate one core makes them (bench/wire_gen.bpf.c under BPF_PROG_TEST_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES, as xdp-trafficgen does) and judged by the XDP program on the
 * other end: sluice's (attached by the real sluiced, found on the interface) or a bare
 * program returning the same verdict, swapped in place with XDP_FLAGS_REPLACE so that both
 * run on the same veth, the same receive queue and the same core, round after round.
 *
 * The receiving veth's NAPI runs threaded, its kthread pinned to --rcv-cpu; the generator
 * (and the generating veth's NAPI, which absorbs the replies) to --gen-cpu. What the
 * receiving core did is counted by the kernel: the veth's own XDP counters (packets, drops,
 * XDP_TX, redirects) and the kthread's run time and number of runs (/proc/PID/schedstat),
 * over a fixed interval. One core cannot generate as fast as a bare program judges, so the
 * receiving thread keeps emptying its ring and sleeping, and a wake-up costs it far more
 * CPU than a frame (~7-27 us on this VM): the faster the program, the more wake-ups per
 * frame, so CPU per frame as it comes would flatter the slower program. Each round
 * therefore adds a third interval, the bare program at about one frame per wake-up (one
 * frame per test_run call, calls 200 us apart); with the bare program's two intervals,
 * time = frames x t + runs x w gives the bare cost per frame t and the wake-up's w, and
 * sluice's cost per frame is its time less its runs x w. The ratio per core is bare's cost
 * over sluice's. For XDP_TX this fails (a wake-up there also flushes to the peer): read the
 * uncorrected figure, an upper bound on sluice's share.
 *
 * Prints one row per round and per program, then the median ratio sluice / bare per case.
 * Exits 1, loudly, when the generator sent nothing, the receiver judged nothing, or a
 * program's verdicts are not the ones its case names (the case would measure something else).
 *
 * Usage (as root; bench/wire.sh sets up the namespaces and sluiced):
 *   wire --gen-ns NS --rcv-ns NS --gen-if IF --rcv-if IF --gen-obj O --bare-obj O
 *        [--gen-cpu 0] [--rcv-cpu 1] [--seconds 1.5] [--rounds 5] CASE...
 * CASE: shed, syn-ack, established, unprotected, stateless-established.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <dirent.h>
#include <math.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/ethtool.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sluice/abi.h"
#include "sluice/cookie.h"

#define MAX_ROUNDS 32
#define GEN_CHUNK (1u << 17) /* frames per test_run call: ~50 ms here, so stops are prompt */

enum verdict { V_DROP, V_PASS, V_TX };
static const char *const verdict_name[] = { "XDP_DROP", "XDP_PASS", "XDP_TX" };
static const char *const bare_prog[] = { "bare_drop", "bare_pass", "bare_tx" };
/* A drop that reads the headers first (wire_bare.bpf.c): the floor of any filter. */
#define READ_DROP 3

struct wcase {
	const char *name, *what;
	const char *src;    /* template source; src_bits of it are randomised per frame */
	int src_bits;
	uint16_t dport;
	uint8_t flags;      /* TCP flags */
	int payload;
	enum verdict v;     /* what sluice and the baseline both must do */
	double target;      /* sluice / bare, per core; 0 = none set */
};

/* Addresses and ports match bench/wire.sh's sluice.conf and ASN table. */
static const struct wcase cases[] = {
	{ "shed", "SYN to a protected port, shed (action drop)", "203.0.113.0", 8, 80,
	  0x02, 0, V_DROP, 0.5 },
	{ "syn-ack", "SYN on a stateless port, cookie SYN-ACK", "198.51.100.0", 8, 9090,
	  0x02, 0, V_TX, 0 },
	{ "established", "established segment, SYN-front port, passed", "198.51.100.0", 8, 80,
	  0x18, 100, V_PASS, 0 },
	{ "unprotected", "segment to an unprotected port, passed", "198.51.100.0", 8, 22,
	  0x18, 100, V_PASS, 0 },
	{ "stateless-established", "established segment, stateless port, passed",
	  "198.51.100.0", 8, 9090, 0x18, 100, V_PASS, 0 },
};

static const char *rcv_addr = "10.201.0.2";
/* The established frames' ack: one sluice's cookie marker does not claim (set_ack()). */
static uint32_t est_ack = 0x7a3b0000;

/* ---- the frame ------------------------------------------------------------------------ */
static uint16_t csum16(const void *p, size_t n)
{
	const uint16_t *w = p;
	uint32_t s = 0;

	for (; n > 1; n -= 2)
		s += *w++;
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Ethernet + IPv4 + TCP. A SYN carries Linux's 20 option bytes (MSS, SACK-permitted,
 * timestamps, NOP, window scale). The TCP checksum stays zero: see bench/wire.sh. */
static size_t build(const struct wcase *c, const uint8_t dmac[6], const uint8_t smac[6],
		    uint8_t *f)
{
	static const uint8_t synopt[20] = { 2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0,
					    0, 0, 1, 3, 3, 7 };
	int opt = (c->flags & 0x02) ? 20 : 0;
	size_t iplen = 20 + 20 + (size_t)opt + (size_t)c->payload;
	uint8_t *ip = f + 14, *th = ip + 20;
	uint32_t a;

	memset(f, 0, 14 + iplen);
	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	f[12] = 0x08;
	ip[0] = 0x45;
	ip[2] = (uint8_t)(iplen >> 8);
	ip[3] = (uint8_t)iplen;
	ip[6] = 0x40; /* DF */
	ip[8] = 64;
	ip[9] = IPPROTO_TCP;
	inet_pton(AF_INET, c->src, &a);
	memcpy(ip + 12, &a, 4);
	inet_pton(AF_INET, rcv_addr, &a);
	memcpy(ip + 16, &a, 4);
	*(uint16_t *)(ip + 10) = csum16(ip, 20);
	*(uint16_t *)th = htons(40000);
	*(uint16_t *)(th + 2) = htons(c->dport);
	*(uint32_t *)(th + 4) = htonl(0x01020304);
	/* An ack that is not a cookie of sluice's (its low bits would mark one). */
	*(uint32_t *)(th + 8) = (c->flags & 0x10) ? htonl(est_ack) : 0;
	th[12] = (uint8_t)((5 + opt / 4) << 4);
	th[13] = c->flags;
	*(uint16_t *)(th + 14) = htons(64240);
	memcpy(th + 20, synopt, (size_t)opt);
	memset(th + 20 + opt, 'x', (size_t)c->payload);
	return 14 + iplen;
}

/* ---- the generator thread --------------------------------------------------------------- */
static struct {
	pthread_mutex_t lock;
	uint8_t frame[256];
	size_t len;
	int prog_fd, devmap_fd, netns_fd, cpu, ifindex;
	atomic_ullong sent, failed;
	atomic_int stop, err, single; /* single: a flush, so a wake-up, per frame (calibration) */
	atomic_int version;           /* of the case: gen_cfg is rewritten by this thread */
	int cfg_fd, pace_fd;
	struct gen_cfg_v { __u32 mask, sport, len; uint8_t frame[256]; } cfg;
} gen = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *gen_main(void *arg)
{
	uint8_t frame[256];
	cpu_set_t cs;
	__u32 k = 0, v;
	size_t len;
	int fails_in_row = 0, version = -1;

	CPU_ZERO(&cs);
	CPU_SET(gen.cpu, &cs);
	if (setns(gen.netns_fd, CLONE_NEWNET) || sched_setaffinity(0, sizeof(cs), &cs)) {
		gen.err = errno;
		return NULL;
	}
	/* A devmap resolves its ifindex in the updater's namespace: the generating one. */
	v = (__u32)gen.ifindex;
	if (bpf_map_update_elem(gen.devmap_fd, &k, &v, 0)) {
		gen.err = errno;
		return NULL;
	}
	while (!gen.stop) {
		pthread_mutex_lock(&gen.lock);
		len = gen.len;
		memcpy(frame, gen.frame, len);
		/* The template the program writes must be the frame test_run is given. */
		if (gen.version != version) {
			version = gen.version;
			if (bpf_map_update_elem(gen.cfg_fd, &k, &gen.cfg, 0)) {
				gen.err = errno;
				pthread_mutex_unlock(&gen.lock);
				return NULL;
			}
		}
		pthread_mutex_unlock(&gen.lock);
		/*
		 * Calibration: one frame per call, so the receiving thread is woken for every
		 * few frames. Every call makes a page pool whose id is released only once its
		 * frames have come home; thousands of calls a second ran out of ids (ENOSPC),
		 * so calibration calls are spaced by 200 us. (A batch of one in a longer call
		 * did not wake the thread any more often: 64 frames a wake-up.)
		 */
		__u32 n = gen.single ? 1 : GEN_CHUNK;
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (__u32)len,
			    .repeat = n, .flags = BPF_F_TEST_XDP_LIVE_FRAMES, .batch_size = 64);
		if (gen.single)
			usleep(200);
		if (bpf_prog_test_run_opts(gen.prog_fd, &o)) {
			/* A call can fail now and then (ENOSPC was seen once, at a program
			 * swap); a generator that keeps failing is an error, and an interval
			 * in which it sent nothing fails on its own. */
			if (errno != EINTR && ++fails_in_row > 100) {
				gen.err = errno;
				return NULL;
			}
			gen.failed++;
			continue;
		}
		fails_in_row = 0;
		gen.sent += n;
	}
	return NULL;
}

/* ---- counters --------------------------------------------------------------------------- */
/* A veth's rx_queue_* counters are its receive queue's; its tx_queue_* ones count the
 * frames other XDP programs redirected into it (ndo_xdp_xmit), and those its peer's full
 * ring refused. */
enum { S_PKTS, S_DROPS, S_TX, S_REDIR, S_TXERR, S_XMIT, S_XMITERR, S_N };
static const char *const stat_name[S_N] = {
	"rx_queue_0_xdp_packets", "rx_queue_0_xdp_drops", "rx_queue_0_xdp_tx",
	"rx_queue_0_xdp_redirect", "rx_queue_0_xdp_tx_errors", "tx_queue_0_xdp_xmit",
	"tx_queue_0_xdp_xmit_errors",
};

struct ethstats {
	int sock, n, idx[S_N];
	char ifname[IFNAMSIZ];
};

static int eth_ioctl(struct ethstats *e, void *cmd)
{
	struct ifreq ifr = { 0 };

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", e->ifname);
	ifr.ifr_data = cmd;
	return ioctl(e->sock, SIOCETHTOOL, &ifr);
}

/* Find the veth's counters by name (their order is the driver's). */
static int eth_open(struct ethstats *e, const char *ifname)
{
	struct { struct ethtool_sset_info h; __u32 n; } ss = { .h = { .cmd = ETHTOOL_GSSET_INFO,
							     .sset_mask = 1ull << ETH_SS_STATS } };
	struct ethtool_gstrings *gs;
	int i, j;

	snprintf(e->ifname, sizeof(e->ifname), "%s", ifname);
	e->sock = socket(AF_INET, SOCK_DGRAM, 0);
	if (e->sock < 0 || eth_ioctl(e, &ss))
		return -errno;
	e->n = (int)ss.n;
	gs = calloc(1, sizeof(*gs) + (size_t)e->n * ETH_GSTRING_LEN);
	if (!gs)
		return -ENOMEM;
	gs->cmd = ETHTOOL_GSTRINGS;
	gs->string_set = ETH_SS_STATS;
	gs->len = (__u32)e->n;
	if (eth_ioctl(e, gs)) {
		free(gs);
		return -errno;
	}
	for (j = 0; j < S_N; j++) {
		e->idx[j] = -1;
		for (i = 0; i < e->n; i++)
			if (!strcmp((char *)gs->data + i * ETH_GSTRING_LEN, stat_name[j]))
				e->idx[j] = i;
	}
	free(gs);
	for (j = 0; j < S_N; j++)
		if (e->idx[j] < 0) {
			fprintf(stderr, "wire: %s has no counter %s\n", ifname, stat_name[j]);
			return -ENOENT;
		}
	return 0;
}

static int eth_read(struct ethstats *e, uint64_t out[S_N])
{
	struct ethtool_stats *st = calloc(1, sizeof(*st) + (size_t)e->n * 8);
	int j;

	if (!st)
		return -ENOMEM;
	st->cmd = ETHTOOL_GSTATS;
	st->n_stats = (__u32)e->n;
	if (eth_ioctl(e, st)) {
		free(st);
		return -errno;
	}
	for (j = 0; j < S_N; j++)
		out[j] = st->data[e->idx[j]];
	free(st);
	return 0;
}

/* The NAPI kthread of @ifname ("napi/IF-ID"): its pid, or -1 unless exactly one. */
static int napi_thread(const char *ifname)
{
	char want[32], path[64], comm[32];
	struct dirent *d;
	int pid = -1, n = 0;
	DIR *dir = opendir("/proc");
	FILE *f;

	snprintf(want, sizeof(want), "napi/%s-", ifname);
	while (dir && (d = readdir(dir))) {
		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, want, strlen(want))) {
			pid = atoi(d->d_name);
			n++;
		}
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return n == 1 ? pid : -1;
}

/* @pid's time on a CPU and waiting for one (ns), and how many times it was put on one,
 * from /proc/PID/schedstat. */
static void sched_ns(int pid, uint64_t *run, uint64_t *wait, uint64_t *slices)
{
	char path[64];
	unsigned long long r = 0, w = 0, n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", pid);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llu %llu %llu", &r, &w, &n) != 3)
			r = w = n = 0;
		fclose(f);
	}
	*run = r;
	*wait = w;
	*slices = n;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static atomic_int stopping;
static void on_signal(int sig) { stopping = 1; }

static void nap(double s)
{
	struct timespec t = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&t, &t) && errno == EINTR && !stopping)
		;
}

/* ---- attaching -------------------------------------------------------------------------- */
static int rcv_ifindex, cur_fd;

static int swap_to(int fd)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, o, .old_prog_fd = cur_fd);

	if (fd == cur_fd)
		return 0;
	if (bpf_xdp_attach(rcv_ifindex, fd, XDP_FLAGS_DRV_MODE | XDP_FLAGS_REPLACE, &o))
		return -errno;
	cur_fd = fd;
	return 0;
}

struct sample {
	double secs, busy, waited, pps, per_thread, per_wake, offered, lost, verdict_share,
		peer_rx;
	uint64_t pkts, run_ns, wakes;
};

/* One interval of @secs with program @fd on the receiving veth. */
static int measure(int fd, double secs, struct ethstats *rs, struct ethstats *gs, int rpid,
		   enum verdict v, struct sample *out)
{
	uint64_t a[S_N], b[S_N], ga[S_N], gb[S_N], ra, rb, wa, wb, na, nb, verd;
	double t0, t1;
	int ret;

	if ((ret = swap_to(fd)))
		return ret;
	nap(0.3); /* the queue refills, the new program's caches warm */
	sched_ns(rpid, &ra, &wa, &na);
	t0 = now_s();
	if ((ret = eth_read(rs, a)) || (ret = eth_read(gs, ga)))
		return ret;
	nap(secs);
	if ((ret = eth_read(rs, b)) || (ret = eth_read(gs, gb)))
		return ret;
	t1 = now_s();
	sched_ns(rpid, &rb, &wb, &nb);
	out->secs = t1 - t0;
	out->pkts = b[S_PKTS] - a[S_PKTS];
	out->busy = (double)(rb - ra) / 1e9 / out->secs;
	out->waited = (double)(wb - wa) / 1e9 / out->secs;
	out->pps = (double)out->pkts / out->secs;
	out->run_ns = rb - ra;
	out->wakes = nb - na;
	out->per_thread = rb > ra ? (double)out->pkts / ((double)(rb - ra) / 1e9) : 0;
	out->per_wake = nb > na ? (double)out->pkts / (double)(nb - na) : 0;
	/* XDP_TX counts whether or not the peer's ring had room (xdp_tx_errors): the program
	 * said it; delivery is the replies column. */
	verd = v == V_DROP ? b[S_DROPS] - a[S_DROPS] :
	       v == V_TX ? (b[S_TX] - a[S_TX]) + (b[S_TXERR] - a[S_TXERR]) +
			   (b[S_REDIR] - a[S_REDIR]) :
	       out->pkts - (b[S_DROPS] - a[S_DROPS]) - (b[S_TX] - a[S_TX]) -
	       (b[S_TXERR] - a[S_TXERR]) - (b[S_REDIR] - a[S_REDIR]);
	out->verdict_share = out->pkts ? (double)verd / (double)out->pkts : 0;
	/* What the generator pushed into the veth and what the receiving ring refused. */
	out->offered = (double)((gb[S_XMIT] - ga[S_XMIT]) + (gb[S_XMITERR] - ga[S_XMITERR])) /
		       out->secs;
	out->lost = (double)(gb[S_XMITERR] - ga[S_XMITERR]) / out->secs;
	/* Replies that reached the generating end (its bare_drop). */
	out->peer_rx = (double)(gb[S_DROPS] - ga[S_DROPS]) / out->secs;
	return 0;
}

/* One interval's line of the table (without its end of line). */
static void print_row(int round, const char *who, const struct sample *x)
{
	printf("  %-5d %-6s %9.0f %4.0f%% %4.0f%% %9.1f %12.0f %9.0f %9.0f %8.1f%% %9.0f", round,
	       who, x->pps, 100 * x->busy, 100 * x->waited, x->per_wake, x->per_thread,
	       x->offered, x->lost, 100 * x->verdict_share, x->peer_rx);
}

/*
 * An established segment on a cookie port whose ack - 1 carries the installation's marker (one
 * ack in 16) could be the end of one of sluice's handshakes: it is looked up, and with no
 * socket behind it (these frames have none) dropped as a forged ACK. So the frames' ack is
 * one the marker of the sluice on the veth (read from its sl_cookie_keys) does not claim.
 */
static void set_ack(int prog_fd)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info), ids[64], i;

	info.nr_map_ids = 64;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return;
	for (i = 0; i < info.nr_map_ids && i < 64; i++) {
		struct bpf_map_info mi = { 0 };
		struct sl_cookie_keys k;
		__u32 ml = sizeof(mi), zero = 0;
		int fd = bpf_map_get_fd_by_id(ids[i]);

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &mi, &ml) && !strcmp(mi.name, "sl_cookie_keys") &&
		    mi.value_size == sizeof(k) && !bpf_map_lookup_elem(fd, &zero, &k)) {
			/* ack - 1 ends in marker + 1, never the marker */
			est_ack = 0x7a3b0000u | ((k.cur_marker + 2u) & SL_COOKIE_MARKER_MASK);
			close(fd);
			return;
		}
		close(fd);
	}
}

/* Pace the generator at @pps frames a second (0: as fast as it goes); see wire_gen.bpf.c. */
static int set_pace(double pps)
{
	struct { __u64 gap_ns, next_ns; } p = { pps > 0 ? (__u64)(1e9 / pps + 0.5) : 0, 0 };
	__u32 k = 0;

	return bpf_map_update_elem(gen.pace_fd, &k, &p, 0) ? -errno : 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int open_obj(const char *path, struct bpf_object **obj)
{
	*obj = bpf_object__open_file(path, NULL);
	if (!*obj || libbpf_get_error(*obj)) {
		fprintf(stderr, "wire: cannot open %s\n", path);
		return -1;
	}
	if (bpf_object__load(*obj)) {
		fprintf(stderr, "wire: cannot load %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int prog_fd(struct bpf_object *obj, const char *name)
{
	struct bpf_program *p = bpf_object__find_program_by_name(obj, name);

	return p ? bpf_program__fd(p) : -1;
}

static int pin_to(int pid, int cpu)
{
	cpu_set_t cs;

	CPU_ZERO(&cs);
	CPU_SET(cpu, &cs);
	return sched_setaffinity(pid, sizeof(cs), &cs) ? -errno : 0;
}

static int silent(enum libbpf_print_level l, const char *fmt, va_list ap)
{
	return l == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

/*
 * The same programs with the generator paced at @pct % of the lowest rate sluice reached in
 * the rounds above, the same rate for each program, so that the veth refuses (nearly)
 * nothing and the receiving core does not also fight the generator's core for the page
 * pool's ring (docs/performance.md, "Another machine"). At one offered rate every program
 * sees the same wake-ups (the pkts/wake column), so the difference of their CPU time a
 * packet is what the program adds; the calibration's price of a wake-up does not hold at a
 * few dozen frames a wake-up and is not used. That difference is put on the bare program's
 * saturated cost (@bare_ns, from the rounds above) for the per-core ratio.
 * Returns nonzero if it measured nothing.
 */
static int paced_pass(const struct wcase *c, int pct, double *slpps, int rounds, double secs,
		      double bare_ns, int with_read, const int *bare_fd, int sluice_fd,
		      struct ethstats *rs, struct ethstats *gs, int rpid)
{
	static const char *const who[] = { "bare", "sluice", "read" };
	double lo = slpps[0], rate, rb[MAX_ROUNDS], rsl[MAX_ROUNDS], rrd[MAX_ROUNDS];
	double dsl[MAX_ROUNDS], drd[MAX_ROUNDS], refb = 0, refs = 0, d, dr;
	int r, k, n = with_read ? 3 : 2, bad = 0;
	struct sample x = { 0 };

	for (r = 1; r < rounds; r++)
		if (slpps[r] < lo)
			lo = slpps[r];
	rate = lo * pct / 100.0;
	if (set_pace(rate))
		return 1;
	printf("  paced: at most %.0f frames/s (%d %% of sluice's lowest rate above; the pkts/s "
	       "column is what the generator reached), the same for each program:\n", rate, pct);
	for (r = 0; r < rounds && !stopping && !bad; r++) {
		for (k = 0; k < n; k++) {
			int sl = k < 2 ? (r % 2) ^ k : 2; /* 0 bare, 1 sluice, 2 read_drop */
			int fd = sl == 1 ? sluice_fd : sl == 2 ? bare_fd[READ_DROP] : bare_fd[c->v];
			double t;

			if (measure(fd, secs, rs, gs, rpid, c->v, &x) || x.pkts < 1000 ||
			    x.verdict_share < 0.95) {
				fprintf(stderr, "wire: %s, paced, %s: nothing measured (%llu packets, "
					"%.1f %% %s)\n", c->name, who[sl],
					(unsigned long long)x.pkts, 100 * x.verdict_share,
					verdict_name[c->v]);
				bad = 1;
				break;
			}
			t = (double)x.run_ns / (double)x.pkts; /* wake-ups in */
			print_row(r + 1, who[sl], &x);
			printf("  %.0f ns a packet\n", t);
			if (sl == 0) {
				rb[r] = t;
				refb += x.lost / rounds;
			} else if (sl == 1) {
				rsl[r] = t;
				refs += x.lost / rounds;
			} else {
				rrd[r] = t;
			}
		}
		if (bad)
			break;
		dsl[r] = rsl[r] - rb[r];
		drd[r] = with_read ? rrd[r] - rb[r] : 0;
		printf("        sluice adds %.0f ns a packet to the bare program's %.0f", dsl[r], rb[r]);
		if (with_read)
			printf(", read_drop %.0f", drd[r]);
		printf("\n");
	}
	set_pace(0);
	if (bad || stopping)
		return bad;
	d = median(dsl, rounds);
	dr = with_read ? median(drd, rounds) : 0;
	printf("  => %s, paced: sluice adds %.0f ns a packet (rounds %.0f-%.0f)", c->name, d,
	       dsl[0], dsl[rounds - 1]);
	if (with_read)
		printf(", read_drop %.0f", dr);
	printf("; on the bare %s's %.0f ns saturated: sluice / bare = %.1f %% per core",
	       verdict_name[c->v], bare_ns, bare_ns + d > 0 ? 100 * bare_ns / (bare_ns + d) : 0);
	if (with_read)
		printf(", sluice / read_drop %.1f %%",
		       bare_ns + d > 0 ? 100 * (bare_ns + dr) / (bare_ns + d) : 0);
	if (c->target)
		printf("; target >= %.0f %%", 100 * c->target);
	printf("; refused/s bare %.0f, sluice %.0f\n", refb, refs);
	printf("RESULT %s-paced rate=%.0f ratio=%.4f added_ns=%.1f bare_ns=%.1f", c->name, rate,
	       bare_ns + d > 0 ? bare_ns / (bare_ns + d) : 0, d, bare_ns);
	if (with_read)
		printf(" read_added_ns=%.1f", dr);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "gen-ns", required_argument, NULL, 'G' }, { "rcv-ns", required_argument, NULL, 'R' },
		{ "gen-if", required_argument, NULL, 'g' }, { "rcv-if", required_argument, NULL, 'r' },
		{ "gen-obj", required_argument, NULL, 'o' }, { "bare-obj", required_argument, NULL, 'b' },
		{ "gen-cpu", required_argument, NULL, 'c' }, { "rcv-cpu", required_argument, NULL, 'C' },
		{ "seconds", required_argument, NULL, 's' }, { "rounds", required_argument, NULL, 'n' },
		{ "paced", required_argument, NULL, 'p' },
		{ 0 }
	};
	const char *gen_ns = NULL, *rcv_ns = NULL, *gen_if = NULL, *rcv_if = NULL;
	const char *gen_obj = NULL, *bare_obj = NULL;
	int gen_cpu = 0, rcv_cpu = 1, rounds = 5, opt, ret, rfd, i, r, k, fails = 0, paced = 0;
	double secs = 1.5;
	struct bpf_object *go, *bo;
	struct ethstats rs, gs;
	struct bpf_prog_info info = { 0 };
	__u32 info_len = sizeof(info), sluice_id = 0;
	uint8_t dmac[6], smac[6];
	struct ifreq ifr;
	pthread_t th;
	int sluice_fd, bare_fd[4], rpid, gpid, started = 0;
	char path[128];

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'G': gen_ns = optarg; break;
		case 'R': rcv_ns = optarg; break;
		case 'g': gen_if = optarg; break;
		case 'r': rcv_if = optarg; break;
		case 'o': gen_obj = optarg; break;
		case 'b': bare_obj = optarg; break;
		case 'c': gen_cpu = atoi(optarg); break;
		case 'C': rcv_cpu = atoi(optarg); break;
		case 's': secs = atof(optarg); break;
		case 'n': rounds = atoi(optarg); break;
		case 'p': paced = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (!gen_ns || !rcv_ns || !gen_if || !rcv_if || !gen_obj || !bare_obj || optind == argc ||
	    rounds < 1 || rounds > MAX_ROUNDS || secs <= 0 || paced < 0 || paced > 100)
		goto usage;
	libbpf_set_print(silent);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	/* This thread lives in the receiving namespace; the generator's in the other. */
	snprintf(path, sizeof(path), "/run/netns/%s", gen_ns);
	gen.netns_fd = open(path, O_RDONLY);
	snprintf(path, sizeof(path), "/run/netns/%s", rcv_ns);
	rfd = open(path, O_RDONLY);
	if (gen.netns_fd < 0 || rfd < 0) {
		fprintf(stderr, "wire: no such namespace: %s or %s\n", gen_ns, rcv_ns);
		return 1;
	}
	/* The generating end's counters: a socket made in its namespace keeps to it. */
	if (setns(gen.netns_fd, CLONE_NEWNET) || (ret = eth_open(&gs, gen_if)) ||
	    !(gen.ifindex = (int)if_nametoindex(gen_if))) {
		fprintf(stderr, "wire: %s in %s: %s\n", gen_if, gen_ns, strerror(errno));
		return 1;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", gen_if);
	if (ioctl(gs.sock, SIOCGIFHWADDR, &ifr))
		return 1;
	memcpy(smac, ifr.ifr_hwaddr.sa_data, 6);
	if (setns(rfd, CLONE_NEWNET) || (ret = eth_open(&rs, rcv_if)) ||
	    !(rcv_ifindex = (int)if_nametoindex(rcv_if))) {
		fprintf(stderr, "wire: %s in %s: %s\n", rcv_if, rcv_ns, strerror(errno));
		return 1;
	}
	/* The stack drops a frame not addressed to the interface before IP: use its MAC. */
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", rcv_if);
	if (ioctl(rs.sock, SIOCGIFHWADDR, &ifr))
		return 1;
	memcpy(dmac, ifr.ifr_hwaddr.sa_data, 6);

	/* sluice's program: whatever sluiced attached to the receiving veth. */
	if (bpf_xdp_query_id(rcv_ifindex, XDP_FLAGS_DRV_MODE, &sluice_id) || !sluice_id ||
	    (sluice_fd = bpf_prog_get_fd_by_id(sluice_id)) < 0 ||
	    bpf_obj_get_info_by_fd(sluice_fd, &info, &info_len) || strcmp(info.name, "sluice_xdp")) {
		fprintf(stderr, "wire: %s has no sluice_xdp program in native mode (id %u, %s)\n",
			rcv_if, sluice_id, sluice_id ? info.name : "none");
		return 1;
	}
	cur_fd = sluice_fd;
	set_ack(sluice_fd);
	if (open_obj(gen_obj, &go) || open_obj(bare_obj, &bo))
		return 1;
	for (k = 0; k < 3; k++)
		if ((bare_fd[k] = prog_fd(bo, bare_prog[k])) < 0) {
			fprintf(stderr, "wire: %s has no %s\n", bare_obj, bare_prog[k]);
			return 1;
		}
	if ((bare_fd[READ_DROP] = prog_fd(bo, "read_drop")) < 0) {
		fprintf(stderr, "wire: %s has no read_drop\n", bare_obj);
		return 1;
	}
	gen.prog_fd = prog_fd(go, "wire_gen");
	gen.devmap_fd = bpf_object__find_map_fd_by_name(go, "tx_port");
	gen.cfg_fd = bpf_object__find_map_fd_by_name(go, "gen_cfg");
	gen.pace_fd = bpf_object__find_map_fd_by_name(go, "gen_pace");
	if (gen.prog_fd < 0 || gen.devmap_fd < 0 || gen.cfg_fd < 0 || gen.pace_fd < 0)
		return 1;

	rpid = napi_thread(rcv_if);
	gpid = napi_thread(gen_if);
	if (rpid < 0 || gpid < 0) {
		fprintf(stderr, "wire: no single NAPI thread for %s / %s (threaded NAPI off?)\n",
			rcv_if, gen_if);
		return 1;
	}
	if ((ret = pin_to(rpid, rcv_cpu)) || (ret = pin_to(gpid, gen_cpu))) {
		fprintf(stderr, "wire: cannot pin the NAPI threads: %s\n", strerror(-ret));
		return 1;
	}
	/* The generating end's NAPI shares its core with the generator, which never sleeps:
	 * real-time priority lets it take the replies off its ring as they come, so that the
	 * receiving side's XDP_TX finds room. It sleeps whenever its ring is empty. */
	{
		struct sched_param sp = { .sched_priority = 10 };

		if (sched_setscheduler(gpid, SCHED_FIFO, &sp))
			fprintf(stderr, "wire: %s's NAPI stays SCHED_OTHER: %s\n", gen_if,
				strerror(errno));
	}
	printf("wire: generator and %s's NAPI (pid %d) on CPU %d; %s's NAPI (pid %d) on CPU %d; "
	       "%.1f s per interval, %d rounds; sluice_xdp id %u\n", gen_if, gpid, gen_cpu,
	       rcv_if, rpid, rcv_cpu, secs, rounds, sluice_id);

	for (i = optind; i < argc; i++) {
		for (k = 0; k < (int)(sizeof(cases) / sizeof(cases[0])); k++)
			if (!strcmp(argv[i], cases[k].name))
				break;
		if (k == (int)(sizeof(cases) / sizeof(cases[0]))) {
			fprintf(stderr, "wire: no case %s\n", argv[i]);
			goto usage;
		}
	}
	gen.cpu = gen_cpu;
	for (i = optind; i < argc && !stopping && !gen.err; i++) {
		const struct wcase *c = NULL;
		double ratio[MAX_ROUNDS], pratio[MAX_ROUNDS], rawr[MAX_ROUNDS], tbare[MAX_ROUNDS];
		double tsl[MAX_ROUNDS], twake[MAX_ROUNDS], tread[MAX_ROUNDS], rread[MAX_ROUNDS];
		double slpps[MAX_ROUNDS];
		struct sample s[4];
		int nk;

		for (k = 0; k < (int)(sizeof(cases) / sizeof(cases[0])); k++)
			if (!strcmp(argv[i], cases[k].name))
				c = &cases[k];
		pthread_mutex_lock(&gen.lock);
		memset(&gen.cfg, 0, sizeof(gen.cfg));
		gen.cfg.mask = htonl((uint32_t)((1ull << c->src_bits) - 1));
		gen.cfg.sport = 1;
		gen.len = build(c, dmac, smac, gen.frame);
		gen.cfg.len = (__u32)gen.len;
		memcpy(gen.cfg.frame, gen.frame, gen.len);
		gen.version++;
		pthread_mutex_unlock(&gen.lock);
		if (!started && pthread_create(&th, NULL, gen_main, NULL))
			return 1;
		started = 1;
		printf("\n%s: %s (%zu-byte frames; sources %s/%d; baseline %s)\n", c->name, c->what,
		       gen.len, c->src, 32 - c->src_bits, bare_prog[c->v]);
		printf("  %-5s %-6s %9s %5s %5s %9s %12s %9s %9s %9s %9s\n", "round", "prog",
		       "pkts/s", "busy", "wait", "pkts/wake", "pkts/thr-s", "offered/s", "refused/s",
		       c->v == V_DROP ? "dropped" : c->v == V_TX ? "sent back" : "passed",
		       "replies/s");
		/* A drop case also measures read_drop, after the calibration. */
		nk = c->v == V_DROP ? 4 : 3;
		for (r = 0; r < rounds && !stopping; r++) {
			/* ABBA: which program goes first alternates, so drift cancels; then the
			 * calibration interval (bare, about one frame per wake-up). */
			for (k = 0; k < nk; k++) {
				/* 0 bare, 1 sluice, 2 calibration, 3 read_drop */
				int sl = k < 2 ? (r % 2) ^ k : k;
				static const char *const who[] = { "bare", "sluice", "bare-1", "read" };
				struct sample *x = &s[sl];

				gen.single = sl == 2;
				ret = measure(sl == 1 ? sluice_fd : bare_fd[sl == 3 ? READ_DROP : c->v],
					      secs, &rs, &gs, rpid,
					      c->v, x);
				gen.single = 0;
				if (ret) {
					fprintf(stderr, "wire: %s\n", strerror(-ret));
					stopping = 1;
					break;
				}
				print_row(r + 1, who[sl], x);
				printf("\n");
				if (x->offered <= 0 || x->pkts < 1000) {
					fprintf(stderr, "wire: %s, %s: the generator sent %.0f/s and "
						"%s judged %llu packets: nothing measured\n", c->name,
						who[sl], x->offered, rcv_if, (unsigned long long)x->pkts);
					stopping = 1;
					fails++;
					break;
				}
				if (x->verdict_share < 0.95) {
					fprintf(stderr, "wire: %s, %s: only %.1f%% of the packets got %s: "
						"the case does not measure what it says\n", c->name,
						who[sl], 100 * x->verdict_share, verdict_name[c->v]);
					fails++;
				}
			}
			if (stopping)
				break;
			/*
			 * The thread's CPU time is packets x their cost plus wake-ups x a wake-up's
			 * cost, which no XDP program changes. The bare program's two intervals (a
			 * few dozen frames per wake-up, then one) give both unknowns; sluice's cost
			 * per packet is its time less its wake-ups at that price.
			 */
			{
				double nb = (double)s[0].pkts, wb = (double)s[0].wakes;
				double nc = (double)s[2].pkts, wc = (double)s[2].wakes;
				double rb_ = (double)s[0].run_ns, rc_ = (double)s[2].run_ns;
				double det = nb * wc - nc * wb, tb, cw, ts;

				tb = det ? (rb_ * wc - rc_ * wb) / det : 0;
				cw = wc ? (rc_ - nc * tb) / wc : 0;
				ts = ((double)s[1].run_ns - (double)s[1].wakes * cw) / (double)s[1].pkts;
				tbare[r] = tb;
				tsl[r] = ts;
				slpps[r] = s[1].pps;
				twake[r] = cw;
				ratio[r] = tb > 0 && ts > 0 ? tb / ts : 0;
				rawr[r] = s[1].per_thread / s[0].per_thread;
				pratio[r] = s[1].pps / s[0].pps;
				printf("        per packet: bare %.0f ns, sluice %.0f ns, a wake-up %.0f ns "
				       "-> sluice / bare %.1f %% per core", tb, ts, cw, 100 * ratio[r]);
				if (nk == 4) {
					tread[r] = ((double)s[3].run_ns - (double)s[3].wakes * cw) /
						   (double)s[3].pkts;
					rread[r] = tread[r] > 0 && ts > 0 ? tread[r] / ts : 0;
					printf("; read_drop %.0f ns -> sluice / it %.1f %%", tread[r],
					       100 * rread[r]);
				}
				printf("\n");
			}
		}
		if (stopping)
			break;
		{
			/* median() sorts in place: afterwards ratio[] runs from lowest to highest. */
			double m_b = median(tbare, rounds), m_s = median(tsl, rounds);
			double m_w = median(twake, rounds), m_raw = median(rawr, rounds);
			double m_p = median(pratio, rounds), m_r = median(ratio, rounds);

			printf("  => %s: sluice / bare %s = %.1f %% per core (rounds %.1f-%.1f %%; "
			       "%.0f ns against %.0f ns a packet, wake-ups at %.0f ns taken out)",
			       c->name, verdict_name[c->v], 100 * m_r, 100 * ratio[0],
			       100 * ratio[rounds - 1], m_s, m_b, m_w);
			if (c->target)
				printf("; target >= %.0f %%", 100 * c->target);
			printf("; per second of the thread's CPU, wake-ups in: %.1f %%; in packets/s: "
			       "%.1f %%\n", 100 * m_raw, 100 * m_p);
			if (nk == 4)
				printf("  => %s: sluice / read_drop (reads the headers, then drops) = "
				       "%.1f %% per core; %.0f ns against %.0f ns a packet\n", c->name,
				       100 * median(rread, rounds), m_s, median(tread, rounds));
			printf("RESULT %s ratio=%.4f raw=%.4f pps=%.4f sluice_ns=%.1f bare_ns=%.1f "
			       "wake_ns=%.0f", c->name, m_r, m_raw, m_p, m_s, m_b, m_w);
			if (nk == 4)
				printf(" read_ns=%.1f read_ratio=%.4f", median(tread, rounds),
				       median(rread, rounds));
			printf("\n");
			if (paced && c->v != V_PASS &&
			    paced_pass(c, paced, slpps, rounds, secs, m_b, nk == 4, bare_fd,
				       sluice_fd, &rs, &gs, rpid))
				fails++;
		}
	}
	gen.stop = 1;
	if (started)
		pthread_join(th, NULL);
	if (swap_to(sluice_fd))
		fprintf(stderr, "wire: could not put sluice_xdp back on %s\n", rcv_if);
	if (gen.err) {
		fprintf(stderr, "wire: the generator failed: %s\n", strerror(gen.err));
		return 1;
	}
	if (gen.failed)
		printf("wire: %llu of the generator's test_run calls failed (and were retried)\n",
		       (unsigned long long)gen.failed);
	return fails || stopping ? 1 : 0;
usage:
	fprintf(stderr, "usage: wire --gen-ns NS --rcv-ns NS --gen-if IF --rcv-if IF --gen-obj O "
		"--bare-obj O [--gen-cpu N] [--rcv-cpu N] [--seconds S] [--rounds N] [--paced PCT] CASE...\n"
		"cases: shed syn-ack established unprotected stateless-established\n");
	return 2;
}
