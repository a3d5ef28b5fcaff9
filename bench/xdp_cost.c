// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench/xdp_cost: what the edge datapath costs per packet, as a ratio to a bare XDP_PASS
 * program run on the same frame in the same process, alternating, so that a noisy shared
 * machine moves both sides alike. BPF_PROG_TEST_RUN with a high repeat count gives the
 * kernel's own ns/packet average; each case takes the median ratio of several rounds.
 *
 * Cases: a TCP segment to an unprotected port (the fast path most traffic takes), a segment
 * of an established connection on a protected port, a SYN that is admitted, a SYN that is
 * shed. The ASN trie is filled with synthetic rows so the LPM walk is not a toy's.
 *
 * A second table runs the building blocks alone (bench/parts.bpf.c), each against the same
 * bare program: the clock (coarse, precise, jiffies), a global function's call and return, a
 * 64-bit division, one LRU-hash lookup, a lookup plus the compare-and-swap, the decided-
 * connection record's lookup, delete and write (the old sl_conns, an LRU hash, and
 * sl_conn_sets, the tag sets that replaced it), one LPM
 * walk, one array load; an IPv6 source through the LPM trie and through the IPv6 table (the
 * bench's /36 source and a /48 row's address, the deepest walk), built from the same rows;
 * one cookie MAC; copying a request's payload, reading its method, path and Host, the route
 * and host lookups after it, and a ClientHello's SNI; a SYN's TCP options read (the case's
 * layout and Linux's), the SYN-ACK's writing and its resize, and the reused-tuple check's
 * socket lookup with and without a listener on the port. It says where a SYN decision's, a
 * cookie SYN-ACK's and a first request's time goes. XDP_COST_LOG=1 prints libbpf's messages
 * (the verifier's log when a program does not load).
 *
 * Exit status is 0 whether or not a target is met: this reports, it does not judge.
 * --asn-table FILE replaces the synthetic rows with a real table ("prefix,asn,class", e.g.
 * written by `sluicectl asn import` from a public dataset: bench/asn_dataset.sh). Its rows
 * keep their prefixes and AS numbers but all get the class "unknown" (the bench's classes
 * are its own; a lookup's cost does not depend on the class); the cases' source rows are added
 * after it. It prints how long the table took to parse and to swap in.
 *
 * Usage: xdp_cost [--repeat N] [--rounds N] [--asn-rows N | --asn-table FILE]
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "asn.h"
#include "bare_pass.skel.h"
#include "charges.skel.h"
#include "parts.h"
#include "parts.skel.h"
#include "restore.skel.h"
#include "sluice/cookie.h"
#include "sluice/hash.h"
#include "config.h"
#include "frames.h"
#include "log.h"
#include "maps.h"
#include "sluice.skel.h"

/* Port 80: SYN front, drop; 8080: SYN front, reply; 9090: stateless, reply. A SYN-front
 * connection costs 950 (a login) so the tight class (half of one login's burst left, as a
 * new key starts) is shed at its SYN; the open one has room for anything. */
static const char *conf_text =
	"edge: { interfaces = [\"lo\"]; ports = ( { port = 80; front = \"syn\"; cost = 950; },\n"
	"  { port = 8080; front = \"syn\"; action = \"reply\"; cost = 950; },\n"
	"  { port = 9090; front = \"stateless\"; action = \"reply\"; cost = 1; } );\n"
	"  event_sample = 0;\n"
	"  state_entries = 1048576; };\n"
	"classes = (\n"
	"  { name = \"open\"; rate = 1e9; burst = 1e9; parent_rate = 1e9; parent_burst = 1e9; },\n"
	"  { name = \"tight\"; rate = 0.001; burst = 950.0; parent_rate = 0.001;\n"
	"    parent_burst = 950.0; },\n"
	"  { name = \"unknown\"; rate = 5.0; burst = 1000.0; }\n"
	");\n"
	"routes = ( { method = \"POST\"; path = \"/login\"; cpu = 950.0; } );\n";

static int last_retval;
static const __u32 zero_key;

static double run_ns(int fd, const uint8_t *frame, size_t len, int repeat)
{
	uint8_t out[512];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (__u32)len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = repeat);

	if (bpf_prog_test_run_opts(fd, &o)) {
		fprintf(stderr, "test_run: %s\n", strerror(errno));
		exit(1);
	}
	last_retval = (int)o.retval;
	return (double)o.duration; /* ns per run, averaged by the kernel */
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int bench_rows(struct sl_asn_table *t, const struct sl_config *c);

/* Fill @t with @n synthetic rows: /16../24 IPv4 and /32../48 IPv6, classes open/unknown. */
static int synth_asn(struct sl_asn_table *t, size_t n, const struct sl_config *c)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	t->rows = calloc(n + 4, sizeof(*t->rows));
	if (!t->rows)
		return -ENOMEM;
	srand(42);
	for (i = 0; i < n; i++) {
		struct sl_asn_entry *e = &t->rows[t->n++];
		struct sl_prefix p = { 0 };
		int k;

		if (i % 2) {
			p.family = SL_FAM_V4;
			for (k = 0; k < 4; k++)
				p.addr[k] = (uint8_t)rand();
			sl_prefix_mask(&p, (uint8_t)(16 + rand() % 9));
		} else {
			p.family = SL_FAM_V6;
			p.addr[0] = 0x20;
			for (k = 1; k < 16; k++)
				p.addr[k] = (uint8_t)rand();
			sl_prefix_mask(&p, (uint8_t)(32 + rand() % 17));
		}
		sl_prefix_to_lpm(&p, &e->key);
		e->val.asn = 64512 + (uint32_t)(i % 1000);
		e->val.class_id = (uint32_t)sl_config_class(c, "unknown");
	}
	return bench_rows(t, c);
}

/* The sources the cases use, after the other rows (@t has room for 4 more). */
static int bench_rows(struct sl_asn_table *t, const struct sl_config *c)
{
	{
		struct sl_prefix p;
		char err[64];

		sl_prefix_parse("198.51.100.0/24", &p, 1, err, sizeof(err));
		sl_prefix_to_lpm(&p, &t->rows[t->n].key);
		t->rows[t->n].val.class_id = (uint32_t)sl_config_class(c, "open");
		t->n++;
		sl_prefix_parse("203.0.113.0/24", &p, 1, err, sizeof(err));
		sl_prefix_to_lpm(&p, &t->rows[t->n].key);
		t->rows[t->n].val.class_id = (uint32_t)sl_config_class(c, "tight");
		t->n++;
		sl_prefix_parse("2001:db8:1000::/36", &p, 1, err, sizeof(err));
		sl_prefix_to_lpm(&p, &t->rows[t->n].key);
		t->rows[t->n].val.class_id = (uint32_t)sl_config_class(c, "open");
		t->n++;
		sl_prefix_parse("2001:db8:2000::/36", &p, 1, err, sizeof(err));
		sl_prefix_to_lpm(&p, &t->rows[t->n].key);
		t->rows[t->n].val.class_id = (uint32_t)sl_config_class(c, "tight");
		t->n++;
	}
	return 0;
}

/* --asn-table: @path's rows, classed "unknown", then the cases' rows; the parse time in @secs. */
static int file_asn(struct sl_asn_table *t, const char *path, const struct sl_config *c,
		    double *secs)
{
	uint32_t unknown = (uint32_t)sl_config_class(c, "unknown");
	struct timespec a, b;
	char *line = NULL, why[160];
	size_t cap = 0, lineno = 0;
	FILE *f = fopen(path, "r");

	memset(t, 0, sizeof(*t));
	if (!f) {
		fprintf(stderr, "xdp_cost: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	while (getline(&line, &cap, f) > 0) {
		char *comma = strchr(line, ','), *end;
		struct sl_asn_entry *e;
		struct sl_prefix p;

		lineno++;
		if (line[0] == '#' || !strncmp(line, "prefix,", 7) || !comma)
			continue;
		*comma = '\0';
		if (sl_prefix_parse(line, &p, 1, why, sizeof(why))) {
			fprintf(stderr, "xdp_cost: %s:%zu: %s\n", path, lineno, why);
			goto bad;
		}
		if (t->n + 4 >= t->cap) {
			size_t nc = t->cap ? t->cap * 2 : 65536;
			struct sl_asn_entry *r = realloc(t->rows, nc * sizeof(*r));

			if (!r)
				goto bad;
			t->rows = r;
			t->cap = nc;
		}
		e = &t->rows[t->n++];
		memset(e, 0, sizeof(*e));
		sl_prefix_to_lpm(&p, &e->key);
		e->val.asn = (uint32_t)strtoul(comma + 1, &end, 10);
		e->val.class_id = unknown;
	}
	free(line);
	fclose(f);
	clock_gettime(CLOCK_MONOTONIC, &b);
	*secs = (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	if (t->n + 4 >= t->cap) {
		struct sl_asn_entry *r = realloc(t->rows, (t->n + 4) * sizeof(*r));

		if (!r)
			return -ENOMEM;
		t->rows = r;
		t->cap = t->n + 4;
	}
	return bench_rows(t, c);
bad:
	free(line);
	fclose(f);
	sl_asn_free(t);
	return -EINVAL;
}

/* The bench's frames go to 10.0.0.2 and 2001:db8:ffff::2: the "node" serves those. */
static int bench_local(struct sl_maps *m)
{
	static const char *const pfx[] = { "10.0.0.2/32", "2001:db8:ffff::2/128" };
	struct sl_local_prefix v[2];
	int i;

	memset(v, 0, sizeof(v));
	for (i = 0; i < 2; i++)
		if (sl_prefix_parse(pfx[i], &v[i].p, 1, NULL, 0))
			return -EINVAL;
	return sl_maps_write_local(m, v, 2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "repeat", required_argument, NULL, 'r' },
		{ "rounds", required_argument, NULL, 'n' },
		{ "asn-rows", required_argument, NULL, 'a' },
		{ "asn-table", required_argument, NULL, 't' },
		{ "only", required_argument, NULL, 'o' },
		{ 0 }
	};
	struct cases {
		const char *name;
		struct fspec f;
		double target;
	} cases[] = {
		{ "TCP to an unprotected port", { .family = 4, .src = "192.0.2.1", .dst = "10.0.0.2",
		  .dport = 22, .flags = F_ACK }, 1.3 },
		{ "SYN front: established segment", { .family = 4, .src = "192.0.2.1",
		  .dst = "10.0.0.2", .dport = 80, .flags = F_ACK }, 1.3 },
		{ "SYN front: SYN weighed, passed (IPv4)", { .family = 4, .src = "198.51.100.9",
		  .dst = "10.0.0.2", .dport = 80, .tcp_opts = 1 }, 3.0 },
		{ "SYN front: SYN shed (IPv4)", { .family = 4, .src = "203.0.113.9",
		  .dst = "10.0.0.2", .dport = 80, .tcp_opts = 1 }, 3.0 },
		{ "SYN front: SYN passed (IPv6)", { .family = 6, .src = "2001:db8:1000::9",
		  .dst = "2001:db8:ffff::2", .dport = 80, .tcp_opts = 1 }, 3.0 },
		{ "SYN front: SYN shed (IPv6)", { .family = 6, .src = "2001:db8:2000::9",
		  .dst = "2001:db8:ffff::2", .dport = 80, .tcp_opts = 1 }, 3.0 },
	};
	int repeat = 1000000, rounds = 5, asn_rows = 100000, opt;
	const char *only = NULL; /* --only SUBSTR: just the cases and parts named so (perf record) */
	const char *asn_file = NULL; /* --asn-table FILE: a real table instead of synthetic rows */
	double parse_s = 0, swap_s = 0;
	char path[] = "/tmp/sluice-bench-XXXXXX", err[2048];
	struct sluice_bpf *skel;
	struct bare_pass_bpf *bare;
	struct sl_asn_table asn;
	struct sl_config cfg;
	struct sl_maps m;
	struct bpf_map *map;
	size_t i;
	FILE *f;
	int fd, prog, base, fails = 0, judged = 0;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'r': repeat = atoi(optarg); break;
		case 'n': rounds = atoi(optarg); break;
		case 'a': asn_rows = atoi(optarg); break;
		case 't': asn_file = optarg; break;
		case 'o': only = optarg; break;
		default:
			fprintf(stderr, "usage: xdp_cost [--repeat N] [--rounds N] [--asn-rows N | "
				"--asn-table FILE] [--only SUBSTR]\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > 99 || repeat < 1 || asn_rows < 0) {
		fprintf(stderr, "xdp_cost: bad arguments\n");
		return 2;
	}
	log_set_level(getenv("XDP_COST_LOG") ? LOG_LVL_INFO : LOG_LVL_ERROR);
	log_hook_libbpf();
	fd = mkstemp(path);
	f = fdopen(fd, "w");
	fputs(conf_text, f);
	fclose(f);
	if (sl_config_load(path, NULL, &cfg, err, sizeof(err))) {
		fprintf(stderr, "%s", err);
		return 1;
	}
	unlink(path);

	skel = sluice_bpf__open();
	bare = bare_pass_bpf__open_and_load();
	if (!skel || !bare) {
		fprintf(stderr, "xdp_cost: cannot open the BPF objects (root needed)\n");
		return 1;
	}
	bpf_object__for_each_map(map, skel->obj)
		bpf_map__set_pin_path(map, NULL);
	bpf_map__set_max_entries(skel->maps.sl_buckets, sl_bucket_sets(cfg.state_entries));
	bpf_map__set_max_entries(skel->maps.sl_pending, sl_state_slots(cfg.state_entries));
	skel->rodata->bucket_mask = sl_bucket_sets(cfg.state_entries) - 1;
	skel->rodata->pend_mask = sl_state_slots(cfg.state_entries) - 1;
	if (sluice_bpf__load(skel)) {
		fprintf(stderr, "xdp_cost: cannot load the XDP object\n");
		return 1;
	}
	if (sl_maps_from_object(&m, skel->obj) || bench_local(&m)) {
		fprintf(stderr, "xdp_cost: the object's maps\n");
		return 1;
	}
	if (sl_maps_cookie_keys(&m, 0, 3600) < 0 || sl_maps_write_config(&m, &cfg, 1) ||
	    (asn_file ? file_asn(&asn, asn_file, &cfg, &parse_s) :
			synth_asn(&asn, (size_t)asn_rows, &cfg))) {
		fprintf(stderr, "xdp_cost: cannot program the maps\n");
		return 1;
	}
	{
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		if (sl_maps_swap_asn(&m, &asn, (uint32_t)cfg.unknown_class)) {
			fprintf(stderr, "xdp_cost: cannot swap the ASN table in\n");
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		swap_s = (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	}
	if (asn_file) {
		size_t v4 = 0, r24 = 0, r;

		for (r = 0; r < asn.n; r++) {
			struct sl_prefix p;

			sl_lpm_to_prefix(&asn.rows[r].key, &p);
			v4 += p.family == SL_FAM_V4;
			r24 += p.family == SL_FAM_V4 && p.plen > 24;
		}
		printf("xdp_cost: ASN table %s: %zu rows (%zu IPv4, %zu IPv6; %zu IPv4 rows longer "
		       "than /24), parsed in %.2f s, swapped in (trie + /24 table) in %.2f s\n",
		       asn_file, asn.n, v4, asn.n - v4, r24, parse_s, swap_s);
		asn_rows = (int)asn.n;
	}
	sl_asn_free(&asn);
	prog = bpf_program__fd(skel->progs.sluice_xdp);
	base = bpf_program__fd(bare->progs.bare_pass);

	printf("xdp_cost: BPF_PROG_TEST_RUN, repeat %d, median of %d rounds, %d ASN rows\n",
	       repeat, rounds, asn_rows);
	printf("%-38s %10s %10s %8s %8s\n", "case", "sluice ns", "bare ns", "ratio", "target");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t frame[512];
		struct fbuilt b = build_frame(&cases[i].f, frame);
		double ratio[99], s_ns[99], b_ns[99];
		int r;

		if (only && !strstr(cases[i].name, only))
			continue;
		run_ns(prog, frame, b.len, 1000); /* warm the caches and the bucket */
		for (r = 0; r < rounds; r++) {
			b_ns[r] = run_ns(base, frame, b.len, repeat);
			s_ns[r] = run_ns(prog, frame, b.len, repeat);
			ratio[r] = s_ns[r] / (b_ns[r] > 0 ? b_ns[r] : 1);
		}
		qsort(ratio, (size_t)rounds, sizeof(double), cmp_d);
		qsort(s_ns, (size_t)rounds, sizeof(double), cmp_d);
		qsort(b_ns, (size_t)rounds, sizeof(double), cmp_d);
		printf("%-38s %10.0f %10.0f %7.2fx %7.1fx%s\n", cases[i].name, s_ns[rounds / 2],
		       b_ns[rounds / 2], ratio[rounds / 2], cases[i].target,
		       ratio[rounds / 2] <= cases[i].target ? "" : "  (above target)");
		fails += ratio[rounds / 2] > cases[i].target;
		judged++;
	}
	{
		struct sl_counters rows[SL_STATS_ROWS];
		uint64_t passed = 0, shed = 0;
		int r;

		/* Proof that the cases did what their names say. */
		sl_maps_read_stats(&m, rows);
		for (r = 0; r < SL_STATS_ROWS; r++) {
			passed += rows[r].pkts[SL_R_SYN_PEEKED];
			shed += rows[r].pkts[SL_R_SHED_PREFIX] + rows[r].pkts[SL_R_SHED_PARENT];
		}
		printf("counters: %llu SYNs weighed and passed, %llu shed\n",
		       (unsigned long long)passed, (unsigned long long)shed);
	}
	{
		/*
		 * Cases that rewrite their frame or leave state behind: restore the frame (and
		 * forget the decided connection) before every repeat, and take off what that
		 * costs, measured by the same wrapper in front of the bare program.
		 */
		struct restore_bpf *rs = restore_bpf__open();
		struct sl_cookie_keys keys;
		struct sl_cookie_opts co = { 6, 8, 1, 1 };
		struct fspec fs[7];
		struct sl_conn_id id[7];
		struct {
			const char *name;
			int restore, want;
			double target;
		} rc[7] = {
			{ "stateless: SYN -> cookie SYN-ACK (TX)", 1, XDP_TX, 3.0 },
			{ "SYN front: shed connection's request -> 429", 1, XDP_TX, 0 },
			{ "stateless: handshake ACK dropped", 0, XDP_DROP, 0 },
			{ "stateless: first request admitted", 1, XDP_PASS, 10.0 },
			{ "stateless: first request shed (429)", 1, XDP_TX, 10.0 },
			{ "stateless: established segment", 0, XDP_PASS, 1.5 },
			{ "stateless: Linux SYN (timestamps) -> cookie SYN-ACK", 1, XDP_TX, 3.0 },
		};
		static const char *login = "POST /login HTTP/1.1\r\nHost: idp.example\r\n"
					   "Content-Length: 0\r\n\r\n";
		__u32 zero = 0;
		int pa, bfd;

		if (!rs) {
			fprintf(stderr, "xdp_cost: cannot open the restore program\n");
			return 1;
		}
		bpf_map__reuse_fd(rs->maps.sl_conn_sets, m.conns);
		bpf_map__reuse_fd(rs->maps.sl_shed, m.shed);
		bpf_map__reuse_fd(rs->maps.sl_shed_sets, m.shed_sets);
		if (restore_bpf__load(rs)) {
			fprintf(stderr, "xdp_cost: cannot load the restore program\n");
			return 1;
		}
		bpf_map_lookup_elem(m.cookie_keys, &zero, &keys);
		for (i = 0; i < 7; i++) {
			/* 203.0.113.0/24 is "tight" (shed), 198.51.100.0/24 "open" (admitted). */
			const char *src = (i == 3 || i == 5) ? "198.51.100.9" : "203.0.113.9";

			memset(&fs[i], 0, sizeof(fs[i]));
			fs[i].family = 4;
			fs[i].src = src;
			fs[i].dst = "10.0.0.2";
			fs[i].sport = (uint16_t)(41000 + i);
			fs[i].dport = i == 1 ? 8080 : 9090;
			fs[i].seq = 0x11223344;
			memset(&id[i], 0, sizeof(id[i]));
			id[i].family = SL_FAM_V4;
			id[i].sport = fs[i].sport;
			id[i].dport = fs[i].dport;
			id[i].isn = 0x11223344;
			inet_pton(AF_INET, src, id[i].saddr);
			inet_pton(AF_INET, "10.0.0.2", id[i].daddr);
			if (i == 0) {
				fs[i].tcp_opts = 2;
				continue;
			}
			if (i == 6) {
				/* What Linux clients send: the cookie's options go in our TSval. */
				fs[i].tcp_opts = 4;
				fs[i].tsval = 77;
				continue;
			}
			/* Linux clients speak timestamps: the request echoes our TSval. */
			fs[i].flags = F_ACK | 0x08;
			fs[i].seq = 0x11223345;
			fs[i].tcp_opts = 3;
			fs[i].tsval = 77;
			fs[i].ack = sl_cookie_make(&id[i], sl_now_ns(), &co, &keys, &fs[i].tsecr) + 1;
			if (i == 1)
				fs[i].data = "GET /login HTTP/1.1\r\nHost: idp.example\r\n\r\n";
			else if (i == 3 || i == 4)
				fs[i].data = login;
			if (i == 2)
				fs[i].flags = F_ACK;
			if (i == 5) {
				/* Past its first request: the server has sent 1000 bytes. */
				fs[i].ack += 1000;
				fs[i].data = "more";
			}
		}
		pa = bpf_map__fd(rs->maps.bench_next);
		bfd = bpf_program__fd(rs->progs.restore_then);
		for (i = 0; i < 7; i++) {
			struct {
				__u32 len, forget;
				__u8 data[512];
				struct sl_conn_key ck;
				__u32 shed_set, conn_set;
			} fr;
			struct sl_settings set;
			double ratio[99], s_ns[99], b_ns[99];
			struct fbuilt fb;
			int r;

			if (only && !strstr(rc[i].name, only))
				continue;
			memset(&fr, 0, sizeof(fr));
			fb = build_frame(&fs[i], fr.data);
			fr.len = (__u32)fb.len;
			fr.forget = 1;
			fr.ck.family = SL_FAM_V4;
			fr.ck.iss = fs[i].ack - 1;
			fr.ck.sport = fs[i].sport;
			fr.ck.dport = fs[i].dport;
			memcpy(fr.ck.saddr, id[i].saddr, 16);
			memcpy(fr.ck.daddr, id[i].daddr, 16);
			if (!bpf_map_lookup_elem(m.settings, &zero, &set)) {
				fr.shed_set = (__u32)sl_shed_hash(&fr.ck, set.hash_seed) &
					      (SL_SHED_SETS - 1);
				fr.conn_set = (__u32)sl_shed_hash(&fr.ck, set.hash_seed) &
					      (SL_CONN_SETS - 1);
			}
			bpf_map_update_elem(bpf_map__fd(rs->maps.bench_frame), &zero, &fr, BPF_ANY);
			for (r = 0; r < rounds; r++) {
				double with_sluice, with_bare, bare_ns;

				if (rc[i].restore) {
					bpf_map_update_elem(pa, &zero, &base, BPF_ANY);
					with_bare = run_ns(bfd, fr.data, fb.len, repeat);
					bpf_map_update_elem(pa, &zero, &prog, BPF_ANY);
					with_sluice = run_ns(bfd, fr.data, fb.len, repeat);
				} else {
					with_bare = 0;
					with_sluice = run_ns(prog, fr.data, fb.len, repeat);
				}
				if (last_retval != rc[i].want) {
					fprintf(stderr, "xdp_cost: %s returned %d, not %d\n",
						rc[i].name, last_retval, rc[i].want);
					return 1;
				}
				bare_ns = run_ns(base, fr.data, fb.len, repeat);
				s_ns[r] = rc[i].restore ? with_sluice - with_bare + bare_ns :
					  with_sluice;
				b_ns[r] = bare_ns;
				ratio[r] = s_ns[r] / (bare_ns > 0 ? bare_ns : 1);
			}
			qsort(ratio, (size_t)rounds, sizeof(double), cmp_d);
			qsort(s_ns, (size_t)rounds, sizeof(double), cmp_d);
			qsort(b_ns, (size_t)rounds, sizeof(double), cmp_d);
			if (rc[i].target > 0) {
				printf("%-38s %10.0f %10.0f %7.2fx %7.1fx%s\n", rc[i].name,
				       s_ns[rounds / 2], b_ns[rounds / 2], ratio[rounds / 2],
				       rc[i].target, ratio[rounds / 2] <= rc[i].target ? "" :
				       "  (above target)");
				fails += ratio[rounds / 2] > rc[i].target;
				judged++;
			} else {
				printf("%-38s %10.0f %10.0f %7.2fx %8s\n", rc[i].name,
				       s_ns[rounds / 2], b_ns[rounds / 2], ratio[rounds / 2], "-");
			}
		}
		{
			struct sl_counters rows[SL_STATS_ROWS];
			uint64_t synacks = 0, r429 = 0, first = 0, ack = 0;
			int r;

			sl_maps_read_stats(&m, rows);
			for (r = 0; r < SL_STATS_ROWS; r++) {
				synacks += rows[r].synacks;
				r429 += rows[r].pkts[SL_R_REPLIED_429];
				first += rows[r].pkts[SL_R_FIRST_ADMITTED];
				ack += rows[r].pkts[SL_R_COOKIE_ACK];
			}
			printf("counters: %llu SYN-ACKs, %llu 429s, %llu first requests admitted, "
			       "%llu handshake ACKs dropped\n", (unsigned long long)synacks,
			       (unsigned long long)r429, (unsigned long long)first,
			       (unsigned long long)ack);
		}
		restore_bpf__destroy(rs);
	}
	{
		/*
		 * The first request's stages alone (bench/charges.bpf.c): the datapath's own
		 * functions on its own maps (the loaded object's, by name), each minus a program
		 * that only builds the segment record they all start from.
		 */
		struct charges_bpf *cg = charges_bpf__open();
		static const char *login = "POST /login HTTP/1.1\r\nHost: idp.example\r\n"
					   "Content-Length: 0\r\n\r\n";
		struct fspec rq = { .family = 4, .src = "198.51.100.9", .dst = "10.0.0.2",
				    .sport = 41003, .dport = 9090, .flags = F_ACK | 0x08,
				    .data = login };
		uint8_t rframe[512];
		struct fbuilt rb = build_frame(&rq, rframe);
		const struct sl_class_cfg *open_cls = NULL;
		struct {
			const char *name;
			struct bpf_program *p;
		} st[7];
		size_t ns = 0, c;
		int none_fd, bad = 0;

		if (!cg) {
			fprintf(stderr, "xdp_cost: cannot open the stages object\n");
			return 1;
		}
		/*
		 * The config's routes, written now, after the cases: the cases run with none (as
		 * they always have, so that their figures compare across runs: the admitted first
		 * request is read, misses an empty route trie and costs the port's 1; and the shed
		 * one's source, drained by such requests, is shed by the early weigh before it is
		 * read). The reader's stage below finds POST /login and its 950.
		 */
		if (sl_maps_write_routes(&m, &cfg)) {
			fprintf(stderr, "xdp_cost: cannot write the routes\n");
			return 1;
		}
		bpf_object__for_each_map(map, cg->obj) {
			struct bpf_map *twin = bpf_object__find_map_by_name(skel->obj,
									   bpf_map__name(map));

			bpf_map__set_pin_path(map, NULL);
			/* The object's own .rodata/.bss are named after it: no twin. */
			if (twin && bpf_map__reuse_fd(map, bpf_map__fd(twin)))
				bad = 1;
		}
		for (c = 0; c < (size_t)cfg.n_classes; c++)
			if (!strcmp(cfg.classes[c].name, "open"))
				open_cls = &cfg.classes[c];
		cg->rodata->bucket_mask = skel->rodata->bucket_mask;
		cg->rodata->pend_mask = skel->rodata->pend_mask;
		cg->rodata->part_cls = (__u32)sl_config_class(&cfg, "open");
		if (open_cls) {
			cg->rodata->part_plen = open_cls->v4_prefix;
			cg->rodata->part_parent = open_cls->v4_parent;
		}
		cg->rodata->part_req_off = (__u32)(rb.len - strlen(login));
		cg->rodata->part_req_len = (__u32)strlen(login);
		if (bad || charges_bpf__load(cg)) {
			fprintf(stderr, "xdp_cost: cannot load the stages object\n");
			return 1;
		}
#define STAGE(n, prog)                                                                      \
	do {                                                                                \
		st[ns].name = (n);                                                          \
		st[ns].p = cg->progs.prog;                                                  \
		ns++;                                                                       \
	} while (0)
		STAGE("first request: early weigh (sl_weigh, cost 1)", stage_weigh);
		STAGE("first request: reader (sl_route_request)", stage_read);
		STAGE("first request: prefix charge (sl_charge_key)", stage_charge_prefix);
		STAGE("first request: parent charge (sl_charge_key)", stage_charge_parent);
		STAGE("first request: tenant charge (lookups + sl_charge_tat)",
		      stage_charge_tenant);
		STAGE("first request: judgement, all charges (sl_judge)", stage_judge);
#undef STAGE
		none_fd = bpf_program__fd(cg->progs.stage_none);
		printf("\nthe first request's stages: each alone (the datapath's own functions and "
		       "maps), minus building the segment record\n");
		printf("%-52s %10s\n", "stage", "extra ns");
		for (i = 0; i < ns; i++) {
			double d[99];
			int r, pfd = bpf_program__fd(st[i].p);

			if (only && !strstr(st[i].name, only))
				continue;
			run_ns(pfd, rframe, rb.len, 1000);
			if (last_retval != XDP_PASS)
				printf("(%s did not do what it measures)\n", st[i].name);
			for (r = 0; r < rounds; r++)
				d[r] = run_ns(pfd, rframe, rb.len, repeat) -
				       run_ns(none_fd, rframe, rb.len, repeat);
			qsort(d, (size_t)rounds, sizeof(double), cmp_d);
			printf("%-52s %10.0f\n", st[i].name, d[rounds / 2]);
		}
		charges_bpf__destroy(cg);
	}
	{
		struct parts_bpf *pt = parts_bpf__open_and_load();
		struct sl_bkey k = { .family = SL_FAM_V4, .plen = 24 };
		struct sl_bucket b = { 0 };
		struct fspec pf = { .family = 4, .src = "192.0.2.1", .dst = "10.0.0.2", .dport = 22 };
		static const char *login = "POST /login HTTP/1.1\r\nHost: idp.example\r\n"
					   "Content-Length: 0\r\n\r\n";
		struct fspec rq = { .family = 4, .src = "198.51.100.9", .dst = "10.0.0.2",
				    .dport = 9090, .flags = F_ACK | 0x08, .tcp_opts = 3,
				    .data = login };
		/* The stateless SYN as the case sends it (MSS, SACK, window scale) and a Linux SYN
		 * (timestamps too), for the SYN-ACK's parts. */
		struct fspec sy = { .family = 4, .src = "198.51.100.9", .dst = "10.0.0.2",
				    .sport = 41000, .dport = 9090, .tcp_opts = 2 };
		struct fspec lx = { .family = 4, .src = "198.51.100.9", .dst = "10.0.0.2",
				    .sport = 41000, .dport = 9090, .tcp_opts = 4, .tsval = 77 };
		uint8_t frame[512], rframe[512], sframe[512], lframe[512], deep[16] = { 0 };
		struct fbuilt fb = build_frame(&pf, frame), rb = build_frame(&rq, rframe);
		struct fbuilt sb = build_frame(&sy, sframe), lb = build_frame(&lx, lframe);
		int lfd = -1;
		char deep_trie[80] = "", deep_table[80] = "";
		struct {
			const char *name;
			struct bpf_program *p;
			int req_frame;     /* 1: on the login request's frame; 2: the stateless SYN's;
					    * 3: the Linux SYN's; 4: the stateless SYN's, a listener on
					    * its port */
			const uint8_t *v6; /* the IPv6 source the v6 parts look up */
		} parts[40];
		struct part_in *in = calloc(1, sizeof(*in));
		uint8_t v6_bench[16];
		size_t np = 0;
		__u32 key;

		if (!pt || !in) {
			fprintf(stderr, "xdp_cost: cannot load the parts object\n");
			return 1;
		}
		inet_pton(AF_INET6, "2001:db8:1000::9", v6_bench);
#define PART(n, prog, rf, v)                                                                \
	do {                                                                                \
		parts[np].name = (n);                                                       \
		parts[np].p = pt->progs.prog;                                               \
		parts[np].req_frame = (rf);                                                 \
		parts[np].v6 = (v);                                                         \
		np++;                                                                       \
	} while (0)
		PART("coarse clock (bpf_ktime_get_coarse_ns)", part_clock, 0, NULL);
		PART("precise clock (bpf_ktime_get_ns)", part_clock_precise, 0, NULL);
		PART("jiffies (bpf_jiffies64)", part_jiffies, 0, NULL);
		PART("a global function's call and return", part_call, 0, NULL);
		PART("a 64-bit division", part_div, 0, NULL);
		PART("LRU hash lookup, 12-byte key", part_lru_lookup, 0, NULL);
		PART("LRU hash lookup + compare-and-swap", part_lru_cas, 0, NULL);
		PART("LPM trie, ::ffff:198.51.100.9", part_trie_lookup, 0, NULL);
		PART("old sl_conns LRU: lookup, a miss (44-byte key)", part_conn_lookup, 0, NULL);
		PART("old sl_conns LRU: delete", part_conn_forget, 0, NULL);
		PART("old sl_conns LRU: delete + write (admitted)", part_conn_write, 0, NULL);
		PART("old sl_conns, per-CPU LRU lists: delete", part_conn_forget_nc, 0, NULL);
		PART("old sl_conns, per-CPU LRU lists: delete + write", part_conn_write_nc, 0,
		     NULL);
		PART("sl_conn_sets: lookup, a miss (hash, array, tags)", part_conn_tag_lookup, 0,
		     NULL);
		PART("sl_conn_sets: empty its set + write (one key)", part_conn_tag_write1, 0,
		     NULL);
		PART("sl_conn_sets: write, a new key each run (cold sets)", part_conn_tag_write, 0,
		     NULL);
		PART("/24 table load (array)", part_dir_lookup, 0, NULL);
		PART("bucket set lookup (hash, array, tags)", part_set_lookup, 0, NULL);
		PART("bucket set lookup + compare-and-swap", part_set_cas, 0, NULL);
		PART("LPM trie, 2001:db8:1000::9 (/36)", part_v6_trie, 0, v6_bench);
		PART("IPv6 table, 2001:db8:1000::9 (/36)", part_v6_table, 0, v6_bench);
		PART(deep_trie, part_v6_trie, 0, deep);
		PART(deep_table, part_v6_table, 0, deep);
		PART("cookie MAC (SipHash-2-4, IPv4, 3 words)", part_cookie_mac, 0, NULL);
		PART("request: copy the payload (83 bytes)", part_req_copy, 1, NULL);
		PART("request: the same, by direct packet access", part_req_copy_direct, 1, NULL);
		PART("request: method, path, Host", part_req_http, 0, NULL);
		PART("request: + route LPM", part_req_route, 0, NULL);
		PART("request: + route LPM + host in a hash map (before; now the fallback)",
		     part_req_lookups, 0, NULL);
		PART("request: + route LPM + host in the set table (the datapath's)",
		     part_req_host_sets, 0, NULL);
		PART("SYN: TCP options, the case's (MSS SACK NOP NOP NOP WS)", part_syn_opts, 2,
		     NULL);
		PART("SYN: TCP options, Linux's (MSS SACK TS NOP WS)", part_syn_opts, 3, NULL);
		PART("SYN-ACK: sl_emit_reply, no resize", part_emit_synack, 2, NULL);
		PART("SYN-ACK: resize (adjust_tail -8, +8)", part_resize, 2, NULL);
		PART("SYN: socket lookup, no socket, no listener", part_sk_lookup, 2, NULL);
		PART("SYN: socket lookup, no socket, a listener", part_sk_lookup, 4, NULL);
#undef PART
		bpf_map_update_elem(bpf_map__fd(pt->maps.part_lru), &k, &b, BPF_ANY);
		if ((asn_file ? file_asn(&asn, asn_file, &cfg, &parse_s) :
				synth_asn(&asn, (size_t)asn_rows, &cfg)) == 0) {
			uint32_t *w = malloc((size_t)SL_V6_WORDS * sizeof(*w)), *keys, n6 = 0;
			struct sl_asn6_stats st6 = { 0 };
			size_t r;
			int nodes = w ? sl_asn6_build(w, SL_V6_NODES, &asn,
						      (uint32_t)cfg.unknown_class, &st6) : -1;

			for (r = 0; r < asn.n; r++) {
				bpf_map_update_elem(bpf_map__fd(pt->maps.part_trie), &asn.rows[r].key,
						    &asn.rows[r].val, BPF_ANY);
				/* The deepest case: a /48 row's address (9 loads in the table). */
				if (!deep[0] && asn.rows[r].key.prefixlen == 48)
					memcpy(deep, asn.rows[r].key.addr, 16);
			}
			if (nodes >= 0) {
				/* Lines of 16 entries, as sl_asn6 holds them. */
				n6 = (SL_V6_ROOT + (uint32_t)nodes * SL_V6_FANOUT) / SL_V6_FANOUT;
				keys = malloc(n6 * sizeof(*keys));
				for (key = 0; keys && key < n6; key++)
					keys[key] = key;
				if (!keys || bpf_map_update_batch(bpf_map__fd(pt->maps.part_v6), keys, w,
								  &n6, NULL)) {
					fprintf(stderr, "xdp_cost: cannot write the IPv6 table\n");
					return 1;
				}
				free(keys);
				printf("\nIPv6 table: %d nodes of %u (%.1f MiB of %.2f a slot), %u /48s "
				       "with a longer row left to the trie, %u subtrees for want of "
				       "nodes\n", nodes, SL_V6_NODES,
				       (SL_V6_ROOT + nodes * 16.0) * 4 / 1048576.0,
				       SL_V6_WORDS * 4.0 / 1048576.0, st6.trie_48s, st6.overflow);
			}
			free(w);
			sl_asn_free(&asn);
		}
		{
			char a6[INET6_ADDRSTRLEN];

			inet_ntop(AF_INET6, deep, a6, sizeof(a6));
			snprintf(deep_trie, sizeof(deep_trie), "LPM trie, %s (/48)", a6);
			snprintf(deep_table, sizeof(deep_table), "IPv6 table, %s (/48)", a6);
		}
		key = 0;
		bpf_map_update_elem(bpf_map__fd(pt->maps.part_dir), &key, &(__u64){ 0 }, BPF_ANY);
		/* The parts' inputs: the same cookie, request and ClientHello the cases use. */
		{
			struct sl_route_key rk = { .prefixlen = 8 * 7, .data = { SL_M_POST } };
			struct sl_route_val rv = { .cost = 950 };
			struct sl_host_key hk = { .name = "idp.example" };
			__u32 one = 1;
			size_t n = 0, ext, sl = strlen("idp.example");
			uint8_t *t = in->tls;
			int j;

			memcpy(&rk.data[1], "/login", 6);
			bpf_map_update_elem(bpf_map__fd(pt->maps.part_routes), &rk, &rv, BPF_ANY);
			bpf_map_update_elem(bpf_map__fd(pt->maps.part_hosts), &hk, &one, BPF_ANY);
			{
				static struct sl_host_set sets[SL_HOST_SETS];
				__u32 hs_i;

				in->host_seed = 0x5eed1234;
				sl_host_place(sets, SL_HOST_SETS, &hk, 1, in->host_seed);
				for (hs_i = 0; hs_i < SL_HOST_SETS; hs_i++)
					bpf_map_update_elem(bpf_map__fd(pt->maps.part_host_sets),
							    &hs_i, &sets[hs_i], BPF_ANY);
			}
			bpf_map_lookup_elem(m.cookie_keys, &zero_key, &in->keys);
			in->id.family = SL_FAM_V4;
			in->id.sport = 41000;
			in->id.dport = 9090;
			in->id.isn = 0x11223344;
			inet_pton(AF_INET, "198.51.100.9", in->id.saddr);
			inet_pton(AF_INET, "10.0.0.2", in->id.daddr);
			memcpy(in->http, login, strlen(login));
			in->http_len = (__u32)strlen(login);
			in->req_off = (__u32)(rb.len - strlen(login));
			in->req_len = (__u32)strlen(login);
			/* A ClientHello as a browser's begins: session id, 2 suites, 3 extensions,
			 * the SNI last (tests/bpf/stateless.c builds the same). */
			t[n++] = 22; t[n++] = 3; t[n++] = 1; n += 2;
			t[n++] = 1; n += 3;
			t[n++] = 3; t[n++] = 3;
			for (j = 0; j < 32; j++)
				t[n++] = (uint8_t)j;
			t[n++] = 32;
			for (j = 0; j < 32; j++)
				t[n++] = 0xaa;
			t[n++] = 0; t[n++] = 4; t[n++] = 0x13; t[n++] = 1; t[n++] = 0xc0; t[n++] = 0x2f;
			t[n++] = 1; t[n++] = 0;
			n += 2;
			ext = n;
			t[n++] = 0; t[n++] = 23; t[n++] = 0; t[n++] = 0;
			t[n++] = 0; t[n++] = 10; t[n++] = 0; t[n++] = 4;
			t[n++] = 0; t[n++] = 2; t[n++] = 0; t[n++] = 29;
			t[n++] = 0; t[n++] = 0; t[n++] = 0; t[n++] = (uint8_t)(sl + 5);
			t[n++] = 0; t[n++] = (uint8_t)(sl + 3); t[n++] = 0;
			t[n++] = 0; t[n++] = (uint8_t)sl;
			memcpy(t + n, "idp.example", sl);
			n += sl;
			t[ext - 2] = (uint8_t)((n - ext) >> 8);
			t[ext - 1] = (uint8_t)(n - ext);
			t[6] = (uint8_t)((n - 9) >> 16); t[7] = (uint8_t)((n - 9) >> 8);
			t[8] = (uint8_t)(n - 9);
			t[3] = (uint8_t)((n - 5) >> 8); t[4] = (uint8_t)(n - 5);
			in->tls_len = (__u32)n;
		}

		printf("\nwhere the time goes: each part alone, minus the bare program\n");
		printf("%-52s %10s\n", "part", "extra ns");
		for (i = 0; i < np + 1; i++) {
			double d[99];
			int r, pfd;
			const uint8_t *fr = frame;
			size_t fl = fb.len;

			if (i == np) { /* the SNI reader, last */
				parts[0].name = "request: the SNI of a ClientHello";
				parts[0].p = pt->progs.part_req_sni;
				parts[0].req_frame = 0;
				parts[0].v6 = NULL;
				i = 0;
				np = 0; /* stop after this one */
			}
			/* --only names parts too: nothing else runs while a profiler samples. */
			if (only && !strstr(parts[i].name, only)) {
				if (np == 0)
					break;
				continue;
			}
			pfd = bpf_program__fd(parts[i].p);
			if (parts[i].req_frame == 1) {
				fr = rframe;
				fl = rb.len;
			} else if (parts[i].req_frame == 2 || parts[i].req_frame == 4) {
				fr = sframe;
				fl = sb.len;
			} else if (parts[i].req_frame == 3) {
				fr = lframe;
				fl = lb.len;
			}
			if (parts[i].req_frame == 4 && lfd < 0) {
				struct sockaddr_in a = { .sin_family = AF_INET,
							 .sin_port = htons(9090) };
				int one = 1;

				lfd = socket(AF_INET, SOCK_STREAM, 0);
				if (lfd < 0 ||
				    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
				    bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 8))
					printf("(no listener on port 9090: %s)\n", strerror(errno));
			}
			if (parts[i].v6)
				memcpy(in->v6, parts[i].v6, 16);
			bpf_map_update_elem(bpf_map__fd(pt->maps.part_in), &zero_key, in, BPF_ANY);
			run_ns(pfd, fr, fl, 1000);
			if (last_retval != XDP_PASS)
				printf("(%s did not find what it looks for)\n", parts[i].name);
			for (r = 0; r < rounds; r++)
				d[r] = run_ns(pfd, fr, fl, repeat) - run_ns(base, fr, fl, repeat);
			qsort(d, (size_t)rounds, sizeof(double), cmp_d);
			printf("%-52s %10.0f\n", parts[i].name, d[rounds / 2]);
			if (np == 0)
				break;
		}
		if (lfd >= 0)
			close(lfd);
		free(in);
		parts_bpf__destroy(pt);
	}
	sluice_bpf__destroy(skel);
	bare_pass_bpf__destroy(bare);
	printf("\n%d of %d cases with a target above it\n", fails, judged);
	return 0;
}
