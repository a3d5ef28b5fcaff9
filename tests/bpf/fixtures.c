// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * BPF_PROG_TEST_RUN fixtures for the edge datapath. The real object (the skeleton sluiced
 * embeds) is loaded unpinned, its maps programmed through the same library code sluiced
 * uses, and frames are run through it one at a time. Each fixture states the verdict and
 * the one counter (class row and reason) that frame must move; that exactly one counter
 * moves proves every path leaves through the single exit.
 *
 * Output is TAP. Without root or BPF, the suite is skipped with the reason.
 */
#include "bpfenv.h"

#define BASE_CONF \
	"edge: { interfaces = [\"lo\"];\n" \
	"  ports = ( { port = 80; cost = 1; }, { port = 8443; cost = 2; } );\n" \
	"  state_entries = %u; new_key_credit = 1.0; malformed = \"%s\"; fragments = \"%s\"; };\n" \
	"classes = (\n" \
	"  { name = \"hosting\"; v4_prefix = 24; v6_prefix = 48; v4_parent = 16; v6_parent = 32;\n" \
	"    rate = 0.001; burst = 5.0; parent_rate = 0.001; parent_burst = 50.0; },\n" \
	"  { name = \"residential\"; v4_prefix = 32; v6_prefix = 64; v4_parent = 24;\n" \
	"    v6_parent = 48; rate = 0.001; burst = 3.0; parent_rate = 0.001; parent_burst = 8.0; },\n" \
	"  { name = \"watch\"; rate = 0.001; burst = 2.0; mode = \"monitor\"; },\n" \
	"  { name = \"unknown\"; rate = 0.001; burst = 5.0; }\n" \
	");\n"

static const char *asn_csv =
	"198.51.100.0/24,64500,hosting\n"
	"2001:db8:1000::/36,64500,hosting\n"
	"203.0.113.0/24,64501,residential\n"
	"2001:db8:2000::/36,64501,residential\n"
	"203.0.114.0/23,64501,residential\n"
	"192.0.2.0/24,64502,watch\n"
	"198.18.0.0/16,64510,residential\n"
	"198.18.5.128/25,64511,hosting\n";


static char conf_buf[4096];

static const char *fixture_conf(uint32_t state_entries, const char *malformed)
{
	snprintf(conf_buf, sizeof(conf_buf), BASE_CONF, state_entries, malformed, "pass");
	return conf_buf;
}

/* ---- single-frame fixtures ---------------------------------------------------------- */

enum cut { CUT_NONE, CUT_L3, CUT_L4 };

struct fixture {
	const char *what;
	struct fspec f;
	enum cut cut;   /* truncate at this header's start ... */
	int cut_plus;   /* ... plus this many bytes */
	int act;
	const char *cls;
	unsigned int reason;
};

#define V4(s, p) .family = 4, .src = (s), .dst = "10.0.0.2", .dport = (p)
#define V6(s, p) .family = 6, .src = (s), .dst = "2001:db8:ffff::2", .dport = (p)

static const struct fixture fixtures[] = {
	{ "IPv4 SYN, residential", { V4("203.0.113.10", 80) }, 0, 0,
	  XDP_PASS, "residential", SL_R_PASSED },
	{ "IPv4 SYN, source not in the ASN table", { V4("10.1.2.3", 80) }, 0, 0,
	  XDP_PASS, "unknown", SL_R_PASSED },
	{ "IPv4 inside a /25 row in a /16 row: the /25 wins (trie)", { V4("198.18.5.200", 80) },
	  0, 0, XDP_PASS, "hosting", SL_R_PASSED },
	{ "IPv4 in the same /24 outside the /25: the /16 (trie)", { V4("198.18.5.10", 80) },
	  0, 0, XDP_PASS, "residential", SL_R_PASSED },
	{ "IPv4 in another /24 of the /16 (/24 table)", { V4("198.18.6.1", 80) }, 0, 0,
	  XDP_PASS, "residential", SL_R_PASSED },
	{ "IPv4 SYN to an unprotected port", { V4("198.51.100.1", 22) }, 0, 0,
	  XDP_PASS, "none", SL_R_NOT_PROTECTED },
	{ "IPv4 ACK to a protected port", { V4("198.51.100.1", 80), .flags = F_ACK }, 0, 0,
	  XDP_PASS, "none", SL_R_NOT_SYN },
	{ "IPv4 SYN|ACK to a protected port", { V4("198.51.100.1", 80),
	  .flags = F_SYN | F_ACK }, 0, 0, XDP_PASS, "none", SL_R_NOT_SYN },
	{ "IPv4 RST to a protected port", { V4("198.51.100.1", 80), .flags = F_RST }, 0, 0,
	  XDP_PASS, "none", SL_R_NOT_SYN },
	{ "UDP to port 80", { V4("198.51.100.1", 80), .l4 = IPPROTO_UDP }, 0, 0,
	  XDP_PASS, "none", SL_R_NOT_PROTECTED },
	{ "ARP", { .family = 4, .ethertype = ETH_P_ARP }, 0, 0,
	  XDP_PASS, "none", SL_R_NOT_PROTECTED },
	{ "IPv4 SYN with 12 bytes of IP options", { V4("203.0.113.11", 80),
	  .ip4_opt_words = 3 }, 0, 0, XDP_PASS, "residential", SL_R_PASSED },
	{ "IPv4 SYN with TCP options", { V4("203.0.113.12", 80), .tcp_opts = 1 }, 0, 0,
	  XDP_PASS, "residential", SL_R_PASSED },
	{ "one VLAN tag", { V4("203.0.113.13", 80), .vlans = 1 }, 0, 0,
	  XDP_PASS, "residential", SL_R_PASSED },
	{ "two VLAN tags (802.1ad + 802.1Q)", { V4("203.0.113.14", 80), .vlans = 2 }, 0, 0,
	  XDP_PASS, "residential", SL_R_PASSED },
	{ "three VLAN tags", { V4("203.0.113.15", 80), .vlans = 3 }, 0, 0,
	  XDP_PASS, "none", SL_R_MAL_VLAN_DEPTH },
	{ "VLAN tag cut short", { V4("203.0.113.15", 80), .vlans = 1 }, CUT_L3, -2,
	  XDP_PASS, "none", SL_R_MAL_VLAN },
	{ "Ethernet header only", { V4("203.0.113.15", 80) }, CUT_L3, 0,
	  XDP_PASS, "none", SL_R_MAL_IP4 },
	{ "IPv4 header cut at 19 bytes", { V4("203.0.113.15", 80) }, CUT_L3, 19,
	  XDP_PASS, "none", SL_R_MAL_IP4 },
	{ "IPv4 IHL 4", { V4("203.0.113.15", 80), .ihl = 4 }, 0, 0,
	  XDP_PASS, "none", SL_R_MAL_IP4_IHL },
	{ "IPv4 options running past the frame", { V4("203.0.113.15", 80),
	  .ip4_opt_words = 4 }, CUT_L3, 30, XDP_PASS, "none", SL_R_MAL_IP4_IHL },
	{ "IPv4 IHL 15 on a short frame", { V4("203.0.113.15", 80), .ihl = 15 }, 0, 0,
	  XDP_PASS, "none", SL_R_MAL_IP4_IHL },
	{ "TCP header cut at 19 bytes", { V4("203.0.113.15", 80) }, CUT_L4, 19,
	  XDP_PASS, "none", SL_R_MAL_TCP },
	{ "TCP header absent", { V4("203.0.113.15", 80) }, CUT_L4, 0,
	  XDP_PASS, "none", SL_R_MAL_TCP },
	{ "TCP data offset 4", { V4("203.0.113.15", 80), .doff = 4 }, 0, 0,
	  XDP_PASS, "none", SL_R_MAL_TCP_DOFF },
	{ "TCP data offset past the frame", { V4("203.0.113.15", 80), .doff = 15 }, 0, 0,
	  XDP_PASS, "none", SL_R_MAL_TCP_DOFF },
	{ "IPv4 first fragment (MF) of a SYN", { V4("203.0.113.15", 80), .ip4_mf = 1 }, 0, 0,
	  XDP_PASS, "none", SL_R_FRAGMENT },
	{ "IPv6 SYN, residential", { V6("2001:db8:2001::1", 80) }, 0, 0,
	  XDP_PASS, "residential", SL_R_PASSED },
	{ "IPv6 SYN, hosting", { V6("2001:db8:1001::1", 80) }, 0, 0,
	  XDP_PASS, "hosting", SL_R_PASSED },
	{ "IPv6 SYN behind 2 extension headers", { V6("2001:db8:2002::1", 80), .ip6_ext = 2 },
	  0, 0, XDP_PASS, "residential", SL_R_PASSED },
	{ "IPv6 SYN behind 6 extension headers (the bound)", { V6("2001:db8:2003::1", 80),
	  .ip6_ext = 6 }, 0, 0, XDP_PASS, "residential", SL_R_PASSED },
	{ "IPv6 with 7 extension headers", { V6("2001:db8:2004::1", 80), .ip6_ext = 7 }, 0, 0,
	  XDP_PASS, "none", SL_R_MAL_IP6_EXT_DEPTH },
	{ "IPv6 extension header cut short", { V6("2001:db8:2004::1", 80), .ip6_ext = 1 },
	  CUT_L3, 41, XDP_PASS, "none", SL_R_MAL_IP6_EXT },
	{ "IPv6 header cut at 39 bytes", { V6("2001:db8:2004::1", 80) }, CUT_L3, 39,
	  XDP_PASS, "none", SL_R_MAL_IP6 },
	{ "IPv6 fragment header", { V6("2001:db8:2004::1", 80), .ip6_frag = 1 }, 0, 0,
	  XDP_PASS, "none", SL_R_FRAGMENT },
	{ "IPv6 TCP cut at 10 bytes", { V6("2001:db8:2004::1", 80) }, CUT_L4, 10,
	  XDP_PASS, "none", SL_R_MAL_TCP },
	{ "IPv6 UDP", { V6("2001:db8:2004::1", 80), .l4 = IPPROTO_UDP }, 0, 0,
	  XDP_PASS, "none", SL_R_NOT_PROTECTED },
};

static void run_fixtures(struct env *e)
{
	uint8_t buf[512];
	size_t i;

	for (i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		const struct fixture *fx = &fixtures[i];
		struct fbuilt b = build_frame(&fx->f, buf);
		size_t len = b.len;

		if (fx->cut == CUT_L3)
			len = (size_t)((long)b.l3 + fx->cut_plus);
		else if (fx->cut == CUT_L4)
			len = (size_t)((long)b.l4 + fx->cut_plus);
		expect(e, fx->what, buf, len, fx->act, fx->cls, fx->reason);
	}
}

/* ---- scenarios ---------------------------------------------------------------------- */

static bool syn_from(struct env *e, const char *what, const char *src, uint16_t dport, int act,
		     const char *cls, unsigned int reason)
{
	struct fspec f = { .family = strchr(src, ':') ? 6 : 4, .src = src,
			   .dst = strchr(src, ':') ? "2001:db8:ffff::2" : "10.0.0.2",
			   .dport = dport };
	uint8_t buf[512];
	struct fbuilt b = build_frame(&f, buf);

	return expect(e, what, buf, b.len, act, cls, reason);
}

static void hosting_prefix_is_one_key(struct env *e)
{
	char src[64], what[128];
	int i;

	/* Eight addresses of one hosting /24: the /24 has a burst of 5. */
	for (i = 1; i <= 8; i++) {
		snprintf(src, sizeof(src), "198.51.100.%d", i * 11);
		snprintf(what, sizeof(what), "hosting /24 flood, SYN %d from %s", i, src);
		syn_from(e, what, src, 80, i <= 5 ? XDP_PASS : XDP_DROP, "hosting",
			 i <= 5 ? SL_R_PASSED : SL_R_SHED_PREFIX);
	}
}

static void parent_catches_spread_sources(struct env *e)
{
	struct sl_prefix a;
	struct sl_bkey k;
	struct sl_bucket b;
	char src[64], what[128], err[64];
	int i;

	/* Ten /32s of one residential /24: each /32 could pass 3, the /24 parent passes 8. */
	for (i = 1; i <= 10; i++) {
		snprintf(src, sizeof(src), "203.0.114.%d", 100 + i);
		snprintf(what, sizeof(what), "ten /32s in one /24, SYN %d", i);
		syn_from(e, what, src, 80, i <= 8 ? XDP_PASS : XDP_DROP, "residential",
			 i <= 8 ? SL_R_PASSED : SL_R_SHED_PARENT);
	}
	/* The /32 shed by its parent got its charge back: its own bucket is still full. */
	sl_prefix_parse("203.0.114.110", &a, 0, err, sizeof(err));
	sl_bkey_make(&k, &a, 32, SL_LEVEL_PREFIX, (uint8_t)sl_config_class(&e->cfg, "residential"));
	tap(!sl_maps_lookup_bucket(&e->maps, &k, &b) &&
	    sl_gcra_available(b.tat, sl_now_ns(), sl_gcra_emission(0.001),
			      sl_gcra_tolerance(3.0, sl_gcra_emission(0.001))) > 2.99,
	    "a prefix shed by its parent keeps its own burst (refund)");
}

static void ipv6_rotation(struct env *e)
{
	char src[64], what[128];
	long before, after;
	int i;

	/* Random /128s inside one residential /64: one key, burst 3. */
	before = sl_maps_count_buckets(&e->maps);
	for (i = 1; i <= 10; i++) {
		snprintf(src, sizeof(src), "2001:db8:2a00:0:%x:%x:%x:%x", rand() & 0xffff,
			 rand() & 0xffff, rand() & 0xffff, i);
		snprintf(what, sizeof(what), "/128 rotation in one /64, SYN %d", i);
		syn_from(e, what, src, 80, i <= 3 ? XDP_PASS : XDP_DROP, "residential",
			 i <= 3 ? SL_R_PASSED : SL_R_SHED_PREFIX);
	}
	after = sl_maps_count_buckets(&e->maps);
	tap(after - before == 2, "ten /128s in one /64 made 2 buckets (the /64 and its /48), "
	    "got %ld", after - before);

	/* A fresh /64 for every SYN inside one /48: every /64 is new, the /48 parent holds. */
	for (i = 1; i <= 12; i++) {
		snprintf(src, sizeof(src), "2001:db8:2b00:%x::%x", i, rand() & 0xffff);
		snprintf(what, sizeof(what), "/64 rotation in one /48, SYN %d", i);
		syn_from(e, what, src, 80, i <= 8 ? XDP_PASS : XDP_DROP, "residential",
			 i <= 8 ? SL_R_PASSED : SL_R_SHED_PARENT);
	}
}

static void monitor_mode(struct env *e)
{
	int i;

	for (i = 1; i <= 5; i++)
		syn_from(e, "monitor class: over its burst it passes and counts would_shed",
			 "192.0.2.5", 80, XDP_PASS, "watch",
			 i <= 2 ? SL_R_PASSED : SL_R_WOULD_SHED_PREFIX);
}

static void cost_units(struct env *e)
{
	/* Port 8443 costs 2: a fresh unknown /32 (burst 5) admits two SYNs there, not three. */
	syn_from(e, "port cost 2 against a burst of 5: first SYN", "198.51.101.1", 8443,
		 XDP_PASS, "unknown", SL_R_PASSED);
	syn_from(e, "port cost 2 against a burst of 5: second SYN", "198.51.101.1", 8443,
		 XDP_PASS, "unknown", SL_R_PASSED);
	syn_from(e, "port cost 2 against a burst of 5: third SYN", "198.51.101.1", 8443,
		 XDP_DROP, "unknown", SL_R_SHED_PREFIX);
}

static void preset_state(struct env *e)
{
	struct sl_prefix a;
	struct sl_bkey k;
	struct sl_bucket b;
	char err[64];
	uint8_t cls = (uint8_t)sl_config_class(&e->cfg, "residential");
	__u64 T = sl_gcra_emission(0.001);

	/* A bucket written empty by hand sheds; one written full (TAT in the past) passes. */
	sl_prefix_parse("203.0.115.200", &a, 0, err, sizeof(err));
	sl_bkey_make(&k, &a, 32, SL_LEVEL_PREFIX, cls);
	b.tat = sl_now_ns() + sl_gcra_tolerance(3.0, T);
	bpf_map_update_elem(e->maps.buckets, &k, &b, BPF_ANY);
	syn_from(e, "preset empty bucket", "203.0.115.200", 80, XDP_DROP, "residential",
		 SL_R_SHED_PREFIX);
	b.tat = 1;
	bpf_map_update_elem(e->maps.buckets, &k, &b, BPF_ANY);
	syn_from(e, "preset full bucket", "203.0.115.200", 80, XDP_PASS, "residential",
		 SL_R_PASSED);
}

static void eviction_keeps_spent_keys_spent(void)
{
	struct sl_counters rows[SL_STATS_ROWS];
	struct env e;
	struct sl_prefix a;
	struct sl_bkey k;
	struct sl_bucket b;
	char src[64], err[64];
	int i, row;
	bool evicted;

	if (env_open(&e, fixture_conf(64, "pass"), asn_csv)) {
		tap(false, "eviction env");
		env_close(&e);
		return;
	}
	row = sl_config_class(&e.cfg, "hosting");
	for (i = 0; i < 6; i++)
		syn_from(&e, "spend a hosting /24", "198.51.100.77", 80,
			 i < 5 ? XDP_PASS : XDP_DROP, "hosting",
			 i < 5 ? SL_R_PASSED : SL_R_SHED_PREFIX);
	/* Push the spent key out of the 64-entry LRU with 2000 other sources. */
	for (i = 0; i < 2000; i++) {
		uint8_t buf[512];
		struct fspec f = { V4(src, 80) };

		snprintf(src, sizeof(src), "10.%d.%d.1", i / 250, i % 250);
		f.src = src;
		run(&e, buf, build_frame(&f, buf).len);
	}
	sl_prefix_parse("198.51.100.77", &a, 0, err, sizeof(err));
	sl_bkey_make(&k, &a, 24, SL_LEVEL_PREFIX, (uint8_t)row);
	evicted = sl_maps_lookup_bucket(&e.maps, &k, &b) != 0;
	tap(evicted, "the spent /24 was evicted from a 64-entry table");
	syn_from(&e, "the evicted /24 returns: still shed, never a fresh burst", "198.51.100.78",
		 80, XDP_DROP, "hosting", SL_R_SHED_PREFIX);
	sl_maps_read_stats(&e.maps, rows);
	tap(rows[row].key_returned >= 1, "its return is counted as keys_returned (%llu)",
	    (unsigned long long)rows[row].key_returned);
	env_close(&e);
}

static void malformed_policy_drop(void)
{
	struct env e;
	uint8_t buf[512];
	struct fspec f = { V4("203.0.113.9", 80), .ihl = 4 };
	struct fbuilt b;

	if (env_open(&e, fixture_conf(1024, "drop"), asn_csv)) {
		tap(false, "malformed=drop env");
		env_close(&e);
		return;
	}
	b = build_frame(&f, buf);
	expect(&e, "malformed = \"drop\": IHL 4", buf, b.len, XDP_DROP, "none",
	       SL_R_MAL_IP4_IHL);
	f.ihl = 0;
	f.ip4_mf = 1;
	b = build_frame(&f, buf);
	expect(&e, "malformed = \"drop\" leaves fragments to their own policy (pass)", buf, b.len,
	       XDP_PASS, "none", SL_R_FRAGMENT);
	env_close(&e);
}

int main(void)
{
	struct env e;
	int ret;

	log_set_level(LOG_LVL_ERROR);
	log_hook_libbpf();
	if (geteuid() != 0) {
		printf("1..0 # SKIP BPF_PROG_TEST_RUN needs root\n");
		return 0;
	}
	ret = env_open(&e, fixture_conf(1024, "pass"), asn_csv);
	if (ret == -EBADMSG) {
		printf("Bail out! the fixture config does not load\n");
		return 1;
	}
	if (ret) {
		printf("1..0 # SKIP cannot load the XDP object here: %s\n", strerror(-ret));
		env_close(&e);
		return 0;
	}
	srand(7);
	run_fixtures(&e);
	hosting_prefix_is_one_key(&e);
	parent_catches_spread_sources(&e);
	ipv6_rotation(&e);
	monitor_mode(&e);
	cost_units(&e);
	preset_state(&e);
	env_close(&e);
	eviction_keeps_spent_keys_spent();
	malformed_policy_drop();
	printf("1..%d\n", n_test);
	return n_fail ? 1 : 0;
}
