// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * BPF_PROG_TEST_RUN fixtures for the edge datapath. The real object (the skeleton sluiced
 * embeds) is loaded unpinned, its maps programmed through the same library code sluiced
 * uses, and frames are run through it one at a time. Each fixture states the verdict and
 * the one counter (class row and reason) that frame must move; that exactly one counter
 * moves proves every path leaves through the single exit.
 *
 * Verify, then charge: a SYN is answered with a cookie (stateless front, the default) or
 * passed to the kernel uncharged (SYN front), and only a proven connection, here a first
 * request carrying a valid cookie, is charged to its buckets. So the parse fixtures send SYNs
 * (which must reach the handshake), and everything that reads a class or a bucket sends first
 * requests.
 *
 * Output is TAP. Without root or BPF, the suite is skipped with the reason.
 */
#include "bpfenv.h"

#define BASE_CONF \
	"edge: { interfaces = [\"lo\"];\n" \
	"  ports = ( { port = 80; cost = 1; }, { port = 8443; cost = 2; },\n" \
	"            { port = 81; front = \"syn\"; cost = 1; } );\n" \
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
	int request;    /* send it as a cookie connection's first request */
	int fixlen;     /* after a cut, make the IP length say so (a truncated header, not a
			 * datagram that runs past its frame) */
};

#define V4(s, p) .family = 4, .src = (s), .dst = "10.0.0.2", .dport = (p)
#define V6(s, p) .family = 6, .src = (s), .dst = "2001:db8:ffff::2", .dport = (p)

/* Rows name only what they need; the rest (request = 0) is zero. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct fixture fixtures[] = {
	/* SYNs are answered, never charged: the class shows only once the source is proven. */
	{ "IPv4 SYN: a cookie SYN-ACK, nothing charged", { V4("203.0.113.10", 80) }, 0, 0,
	  XDP_TX, "none", SL_R_HANDSHAKE },
	{ "IPv4 first request, residential", { V4("203.0.113.10", 80) }, 0, 0,
	  XDP_PASS, "residential", SL_R_FIRST_ADMITTED, 1 },
	{ "IPv4 first request, source not in the ASN table", { V4("10.1.2.3", 80) }, 0, 0,
	  XDP_PASS, "unknown", SL_R_FIRST_ADMITTED, 1 },
	{ "IPv4 inside a /25 row in a /16 row: the /25 wins (trie)", { V4("198.18.5.200", 80) },
	  0, 0, XDP_PASS, "hosting", SL_R_FIRST_ADMITTED, 1 },
	{ "IPv4 in the same /24 outside the /25: the /16 (trie)", { V4("198.18.5.10", 80) },
	  0, 0, XDP_PASS, "residential", SL_R_FIRST_ADMITTED, 1 },
	{ "IPv4 in another /24 of the /16 (/24 table)", { V4("198.18.6.1", 80) }, 0, 0,
	  XDP_PASS, "residential", SL_R_FIRST_ADMITTED, 1 },
	{ "IPv4 SYN to an unprotected port", { V4("198.51.100.1", 22) }, 0, 0,
	  XDP_PASS, "none", SL_R_NOT_PROTECTED },
	{ "IPv4 ACK to a protected port (no cookie marker or not ours)",
	  { V4("198.51.100.1", 80), .flags = F_ACK, .ack = 0x10000 }, 0, 0,
	  XDP_PASS, "none", SL_R_NOT_SYN },
	{ "IPv4 SYN|ACK to a protected port", { V4("198.51.100.1", 80),
	  .flags = F_SYN | F_ACK, .ack = 0x10000 }, 0, 0, XDP_PASS, "none", SL_R_NOT_SYN },
	{ "IPv4 RST to a protected port", { V4("198.51.100.1", 80), .flags = F_RST }, 0, 0,
	  XDP_PASS, "none", SL_R_NOT_SYN },
	{ "SYN|FIN to a protected port: dropped, never answered", { V4("198.51.100.1", 80),
	  .flags = F_SYN | 0x01 }, 0, 0, XDP_DROP, "none", SL_R_BAD_FLAGS },
	{ "SYN|RST to a protected port: dropped, never answered", { V4("198.51.100.1", 80),
	  .flags = F_SYN | F_RST }, 0, 0, XDP_DROP, "none", SL_R_BAD_FLAGS },
	{ "SYN with data (TFO) on the stateless front: a SYN-ACK for the SYN alone",
	  { V4("203.0.113.16", 80), .payload = 40 }, 0, 0, XDP_TX, "none", SL_R_HANDSHAKE },
	{ "UDP to port 80", { V4("198.51.100.1", 80), .l4 = IPPROTO_UDP }, 0, 0,
	  XDP_PASS, "none", SL_R_NOT_PROTECTED },
	{ "ARP", { .family = 4, .ethertype = ETH_P_ARP }, 0, 0,
	  XDP_PASS, "none", SL_R_NOT_PROTECTED },
	{ "IPv4 SYN with 12 bytes of IP options", { V4("203.0.113.11", 80),
	  .ip4_opt_words = 3 }, 0, 0, XDP_TX, "none", SL_R_HANDSHAKE },
	{ "IPv4 first request with 12 bytes of IP options", { V4("203.0.113.11", 80),
	  .ip4_opt_words = 3 }, 0, 0, XDP_PASS, "residential", SL_R_FIRST_ADMITTED, 1 },
	{ "IPv4 SYN with TCP options", { V4("203.0.113.12", 80), .tcp_opts = 1 }, 0, 0,
	  XDP_TX, "none", SL_R_HANDSHAKE },
	{ "one VLAN tag: SYN", { V4("203.0.113.13", 80), .vlans = 1 }, 0, 0,
	  XDP_TX, "none", SL_R_HANDSHAKE },
	{ "one VLAN tag: first request", { V4("203.0.113.13", 80), .vlans = 1 }, 0, 0,
	  XDP_PASS, "residential", SL_R_FIRST_ADMITTED, 1 },
	{ "two VLAN tags (802.1ad + 802.1Q): SYN", { V4("203.0.113.14", 80), .vlans = 2 }, 0, 0,
	  XDP_TX, "none", SL_R_HANDSHAKE },
	{ "two VLAN tags: first request", { V4("203.0.113.14", 80), .vlans = 2 }, 0, 0,
	  XDP_PASS, "residential", SL_R_FIRST_ADMITTED, 1 },
	/* The kernel strips priority tags one after another, so frames under any number of
	 * them are judged; a reply carries at most SL_MAX_VLAN (8) back, so a deeper SYN gets
	 * none. */
	{ "three VLAN tags: SYN answered", { V4("203.0.113.15", 80), .vlans = 3 }, 0, 0,
	  XDP_TX, "none", SL_R_HANDSHAKE },
	{ "three VLAN tags: a first request is judged like any", { V4("203.0.113.15", 80),
	  .vlans = 3 }, 0, 0, XDP_PASS, "residential", SL_R_FIRST_ADMITTED, 1 },
	{ "eight VLAN tags: SYN answered", { V4("203.0.113.16", 80), .vlans = 8 }, 0, 0,
	  XDP_TX, "none", SL_R_HANDSHAKE },
	{ "eight VLAN tags: still judged", { V4("203.0.113.16", 80), .vlans = 8 }, 0, 0,
	  XDP_PASS, "residential", SL_R_FIRST_ADMITTED, 1 },
	{ "nine VLAN tags: no SYN-ACK can carry nine back, so dropped", { V4("203.0.113.17", 80),
	  .vlans = 9 }, 0, 0, XDP_DROP, "none", SL_R_MAL_VLAN_DEPTH },
	{ "sixty VLAN tags: the first request judged", { V4("203.0.113.18", 80), .vlans = 60 },
	  0, 0, XDP_PASS, "residential", SL_R_FIRST_ADMITTED, 1 },
	{ "sixty VLAN tags cut short", { V4("203.0.113.18", 80), .vlans = 60 }, CUT_L3, -2,
	  XDP_PASS, "none", SL_R_MAL_VLAN },
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
	{ "TCP header cut at 19 bytes, port visible: malformed = drop", { V4("203.0.113.15", 80) },
	  CUT_L4, 19, XDP_DROP, "none", SL_R_MAL_TCP, 0, 1 },
	{ "TCP header cut at 3 bytes: no port, passed", { V4("203.0.113.15", 80) }, CUT_L4, 3,
	  XDP_PASS, "none", SL_R_MAL_TCP, 0, 1 },
	{ "TCP header absent", { V4("203.0.113.15", 80) }, CUT_L4, 0,
	  XDP_PASS, "none", SL_R_MAL_TCP, 0, 1 },
	{ "a frame cut short of its IP length: not a datagram, passed", { V4("203.0.113.15", 80) },
	  CUT_L4, 19, XDP_PASS, "none", SL_R_MAL_IP4 },
	{ "IPv4 length shorter than the TCP header: malformed = drop", { V4("203.0.113.15", 80),
	  .tcp_opts = 1 }, CUT_L4, 20, XDP_DROP, "none", SL_R_MAL_TCP_DOFF, 0, 1 },
	{ "TCP data offset 4 to a protected port: malformed = drop", { V4("203.0.113.15", 80),
	  .doff = 4 }, 0, 0, XDP_DROP, "none", SL_R_MAL_TCP_DOFF },
	{ "TCP data offset 4 to an unprotected port: untouched", { V4("203.0.113.15", 22),
	  .doff = 4 }, 0, 0, XDP_PASS, "none", SL_R_NOT_PROTECTED },
	{ "TCP data offset past the frame", { V4("203.0.113.15", 80), .doff = 15 }, 0, 0,
	  XDP_DROP, "none", SL_R_MAL_TCP_DOFF },
	/* Fragments: a first fragment holds the ports and is judged; later ones pass. */
	{ "IPv4 first fragment (MF) of a SYN: judged as the SYN", { V4("203.0.113.15", 80),
	  .ip4_mf = 1 }, 0, 0, XDP_TX, "none", SL_R_HANDSHAKE },
	{ "IPv4 later fragment (offset 8): passed, no ports", { V4("203.0.113.15", 80),
	  .ip4_frag_off = 1 }, 0, 0, XDP_PASS, "none", SL_R_FRAG_LATER },
	{ "IPv4 first fragment cut inside the TCP header: dropped", { V4("203.0.113.15", 80),
	  .ip4_mf = 1 }, CUT_L4, 8, XDP_DROP, "none", SL_R_FRAGMENT, 0, 1 },
	{ "IPv4 UDP first fragment (DNS): untouched", { V4("203.0.113.15", 53),
	  .l4 = IPPROTO_UDP, .ip4_mf = 1 }, 0, 0, XDP_PASS, "none", SL_R_NOT_PROTECTED },
	{ "IPv4 UDP later fragment: untouched", { V4("203.0.113.15", 53), .l4 = IPPROTO_UDP,
	  .ip4_frag_off = 3 }, 0, 0, XDP_PASS, "none", SL_R_NOT_PROTECTED },
	{ "IPv6 SYN: a cookie SYN-ACK", { V6("2001:db8:2001::1", 80) }, 0, 0,
	  XDP_TX, "none", SL_R_HANDSHAKE },
	{ "IPv6 first request, residential", { V6("2001:db8:2001::1", 80) }, 0, 0,
	  XDP_PASS, "residential", SL_R_FIRST_ADMITTED, 1 },
	{ "IPv6 first request, hosting", { V6("2001:db8:1001::1", 80) }, 0, 0,
	  XDP_PASS, "hosting", SL_R_FIRST_ADMITTED, 1 },
	{ "IPv6 SYN behind 2 extension headers", { V6("2001:db8:2002::1", 80), .ip6_ext = 2 },
	  0, 0, XDP_TX, "none", SL_R_HANDSHAKE },
	{ "IPv6 SYN behind 6 extension headers", { V6("2001:db8:2003::1", 80), .ip6_ext = 6 },
	  0, 0, XDP_TX, "none", SL_R_HANDSHAKE },
	{ "IPv6 SYN behind 7 extension headers", { V6("2001:db8:2004::1", 80), .ip6_ext = 7 },
	  0, 0, XDP_TX, "none", SL_R_HANDSHAKE },
	{ "IPv6 SYN behind 20 extension headers", { V6("2001:db8:2004::1", 80), .ip6_ext = 20 },
	  0, 0, XDP_TX, "none", SL_R_HANDSHAKE },
	{ "IPv6 first request behind 20 extension headers", { V6("2001:db8:2004::9", 80),
	  .ip6_ext = 20 }, 0, 0, XDP_PASS, "residential", SL_R_FIRST_ADMITTED, 1 },
	{ "IPv6 extension header cut short", { V6("2001:db8:2004::1", 80), .ip6_ext = 1 },
	  CUT_L3, 41, XDP_PASS, "none", SL_R_MAL_IP6, 0, 0 },
	{ "IPv6 extension chain running past the datagram", { V6("2001:db8:2004::1", 80),
	  .ip6_ext = 1 }, CUT_L3, 44, XDP_PASS, "none", SL_R_MAL_IP6_EXT, 0, 1 },
	{ "IPv6 header cut at 39 bytes", { V6("2001:db8:2004::1", 80) }, CUT_L3, 39,
	  XDP_PASS, "none", SL_R_MAL_IP6 },
	{ "IPv6 first fragment of a SYN: judged as the SYN", { V6("2001:db8:2004::1", 80),
	  .ip6_frag = 1 }, 0, 0, XDP_TX, "none", SL_R_HANDSHAKE },
	{ "IPv6 atomic fragment of a SYN: a whole SYN", { V6("2001:db8:2004::1", 80),
	  .ip6_frag = 2 }, 0, 0, XDP_TX, "none", SL_R_HANDSHAKE },
	{ "IPv6 atomic fragment of a first request: judged whole", { V6("2001:db8:2004::2", 80),
	  .ip6_frag = 2 }, 0, 0, XDP_PASS, "residential", SL_R_FIRST_ADMITTED, 1 },
	{ "IPv6 later fragment: passed", { V6("2001:db8:2004::1", 80), .ip6_frag = 3 }, 0, 0,
	  XDP_PASS, "none", SL_R_FRAG_LATER },
	{ "IPv6 UDP first fragment: untouched", { V6("2001:db8:2004::1", 53), .l4 = IPPROTO_UDP,
	  .ip6_frag = 1 }, 0, 0, XDP_PASS, "none", SL_R_NOT_PROTECTED },
	{ "IPv6 TCP cut at 10 bytes: port visible, malformed = drop", { V6("2001:db8:2004::1", 80) },
	  CUT_L4, 10, XDP_DROP, "none", SL_R_MAL_TCP, 0, 1 },
	{ "IPv6 UDP", { V6("2001:db8:2004::1", 80), .l4 = IPPROTO_UDP }, 0, 0,
	  XDP_PASS, "none", SL_R_NOT_PROTECTED },
	/* Only what the node serves, and only from whom the kernel would answer. */
	{ "SYN to an address this node does not serve: routed through", { .family = 4,
	  .src = "203.0.113.20", .dst = "10.9.9.9", .dport = 80 }, 0, 0,
	  XDP_PASS, "none", SL_R_NOT_LOCAL },
	{ "SYN from a martian source (0.1.2.3): dropped", { V4("0.1.2.3", 80) }, 0, 0,
	  XDP_DROP, "none", SL_R_MARTIAN },
	{ "SYN from the node's own address: dropped", { V4("10.0.0.3", 80) }, 0, 0,
	  XDP_DROP, "none", SL_R_MARTIAN },
	{ "SYN to 127.0.0.1 from the wire: dropped", { .family = 4, .src = "203.0.113.20",
	  .dst = "127.0.0.1", .dport = 80 }, 0, 0, XDP_DROP, "none", SL_R_MARTIAN },
	{ "SYN from ::ffff:203.0.113.1 (IPv4-mapped): dropped", { V6("::ffff:203.0.113.1", 80) },
	  0, 0, XDP_DROP, "none", SL_R_MARTIAN },
	{ "SYN from a multicast MAC: dropped", { V4("203.0.113.21", 80),
	  .smac = (const uint8_t *)"\x01\x00\x5e\x00\x00\x01" }, 0, 0,
	  XDP_DROP, "none", SL_R_MARTIAN },
	/* SYN front: nothing charged at the SYN either; the kernel takes the handshake. */
	{ "SYN front: a SYN with room passes to the kernel, uncharged", { V4("203.0.113.30", 81) },
	  0, 0, XDP_PASS, "residential", SL_R_SYN_PEEKED },
	{ "SYN front: a SYN carrying data (TFO) is dropped", { V4("203.0.113.30", 81),
	  .payload = 40 }, 0, 0, XDP_DROP, "none", SL_R_SYN_DATA },
	{ "SYN front: a fragmented SYN is dropped", { V4("203.0.113.30", 81), .ip4_mf = 1 },
	  0, 0, XDP_DROP, "none", SL_R_FRAGMENT },
	{ "SYN front: an ACK with no pending SYN on its tuple passes on one load",
	  { V4("203.0.113.31", 81), .flags = F_ACK, .sport = 41000 }, 0, 0,
	  XDP_PASS, "none", SL_R_NOT_SYN },
};
#pragma GCC diagnostic pop

static void run_fixtures(struct env *e)
{
	uint8_t buf[512];
	size_t i;

	for (i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		const struct fixture *fx = &fixtures[i];
		struct fspec f = fx->f;
		struct fbuilt b;
		size_t len;

		if (fx->request) {
			env_make_request(e, &f);
		} else if (f.flags & F_ACK) {
			/* A segment meant to look established: keep it off the cookie marker. */
			struct sl_cookie_keys k;
			uint32_t zero = 0;

			bpf_map_lookup_elem(e->maps.cookie_keys, &zero, &k);
			if (((f.ack - 1) & SL_COOKIE_MARKER_MASK) == k.cur_marker)
				f.ack++;
		}
		b = build_frame(&f, buf);
		len = b.len;

		if (fx->cut == CUT_L3)
			len = (size_t)((long)b.l3 + fx->cut_plus);
		else if (fx->cut == CUT_L4)
			len = (size_t)((long)b.l4 + fx->cut_plus);
		if (fx->fixlen && f.family == 4)
			((struct iphdr *)(buf + b.l3))->tot_len = htons((uint16_t)(len - b.l3));
		else if (fx->fixlen)
			((struct ipv6hdr *)(buf + b.l3))->payload_len =
				htons((uint16_t)(len - b.l3 - 40));
		expect(e, fx->what, buf, len, fx->act, fx->cls, fx->reason);
	}
}

/* ---- scenarios ---------------------------------------------------------------------- */

static uint16_t next_sport = 20000;

/* A proven connection from @src: its first request, with a cookie the datapath made. */
static struct fbuilt request_from(struct env *e, const char *src, uint16_t dport, uint8_t *buf)
{
	struct fspec f = { .family = strchr(src, ':') ? 6 : 4, .src = src,
			   .dst = strchr(src, ':') ? "2001:db8:ffff::2" : "10.0.0.2",
			   .dport = dport, .sport = next_sport++ };

	env_make_request(e, &f);
	return build_frame(&f, buf);
}

static bool req_from(struct env *e, const char *what, const char *src, uint16_t dport, int act,
		     const char *cls, unsigned int reason)
{
	uint8_t buf[512];
	struct fbuilt b = request_from(e, src, dport, buf);

	return expect(e, what, buf, b.len, act, cls, reason);
}

static void hosting_prefix_is_one_key(struct env *e)
{
	char src[64], what[128];
	int i;

	/* Eight addresses of one hosting /24: the /24 has a burst of 5. */
	for (i = 1; i <= 8; i++) {
		snprintf(src, sizeof(src), "198.51.100.%d", i * 11);
		snprintf(what, sizeof(what), "hosting /24 flood, request %d from %s", i, src);
		req_from(e, what, src, 80, i <= 5 ? XDP_PASS : XDP_DROP, "hosting",
			 i <= 5 ? SL_R_FIRST_ADMITTED : SL_R_SHED_PREFIX);
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
		snprintf(what, sizeof(what), "ten /32s in one /24, request %d", i);
		req_from(e, what, src, 80, i <= 8 ? XDP_PASS : XDP_DROP, "residential",
			 i <= 8 ? SL_R_FIRST_ADMITTED : SL_R_SHED_PARENT);
	}
	/* The /32 shed by its parent got its charge back: its own bucket is still full. */
	sl_prefix_parse("203.0.114.110", &a, 0, err, sizeof(err));
	sl_bkey_make(&k, &a, 32, SL_LEVEL_PREFIX, (uint8_t)sl_config_class(&e->cfg, "residential"));
	/* Shed before its request was read (its parent could not pay even one unit), it was
	 * never charged: no bucket at all, or a full one after a refund. */
	tap(sl_maps_lookup_bucket(&e->maps, &k, &b) ||
	    sl_gcra_available(b.tat, sl_now_ns(), sl_gcra_emission(0.001),
			      sl_gcra_tolerance(3.0, sl_gcra_emission(0.001))) > 2.99,
	    "a prefix shed by its parent keeps its own burst (never charged, or refunded)");
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
		snprintf(what, sizeof(what), "/128 rotation in one /64, request %d", i);
		req_from(e, what, src, 80, i <= 3 ? XDP_PASS : XDP_DROP, "residential",
			 i <= 3 ? SL_R_FIRST_ADMITTED : SL_R_SHED_PREFIX);
	}
	after = sl_maps_count_buckets(&e->maps);
	tap(after - before == 2, "ten /128s in one /64 made 2 buckets (the /64 and its /48), "
	    "got %ld", after - before);

	/* A fresh /64 for every SYN inside one /48: every /64 is new, the /48 parent holds. */
	for (i = 1; i <= 12; i++) {
		snprintf(src, sizeof(src), "2001:db8:2b00:%x::%x", i, rand() & 0xffff);
		snprintf(what, sizeof(what), "/64 rotation in one /48, request %d", i);
		req_from(e, what, src, 80, i <= 8 ? XDP_PASS : XDP_DROP, "residential",
			 i <= 8 ? SL_R_FIRST_ADMITTED : SL_R_SHED_PARENT);
	}
}

static void monitor_mode(struct env *e)
{
	int i;

	struct sl_counters before[SL_STATS_ROWS], after[SL_STATS_ROWS];
	int row = sl_config_class(&e->cfg, "watch");

	for (i = 1; i <= 5; i++) {
		uint8_t buf[512];
		struct fbuilt b = request_from(e, "192.0.2.5", 80, buf);
		long would, admitted;
		int act;

		sl_maps_read_stats(&e->maps, before);
		act = run(e, buf, b.len);
		sl_maps_read_stats(&e->maps, after);
		would = (long)(after[row].pkts[SL_R_WOULD_SHED_PREFIX] -
			       before[row].pkts[SL_R_WOULD_SHED_PREFIX]);
		admitted = (long)(after[row].pkts[SL_R_FIRST_ADMITTED] -
				  before[row].pkts[SL_R_FIRST_ADMITTED]);
		tap(act == XDP_PASS && admitted == 1 && would == (i <= 2 ? 0 : 1),
		    "monitor class, request %d: passes%s", i,
		    i <= 2 ? "" : ", and counts would_shed_prefix");
	}
}

static void cost_units(struct env *e)
{
	/* Port 8443 costs 2: a fresh unknown /32 (burst 5) admits two connections, not three. */
	req_from(e, "port cost 2 against a burst of 5: first SYN", "198.51.101.1", 8443,
		 XDP_PASS, "unknown", SL_R_FIRST_ADMITTED);
	req_from(e, "port cost 2 against a burst of 5: second SYN", "198.51.101.1", 8443,
		 XDP_PASS, "unknown", SL_R_FIRST_ADMITTED);
	req_from(e, "port cost 2 against a burst of 5: third SYN", "198.51.101.1", 8443,
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
	sl_maps_write_bucket(&e->maps, &k, &b, 0);
	req_from(e, "preset empty bucket", "203.0.115.200", 80, XDP_DROP, "residential",
		 SL_R_SHED_PREFIX);
	b.tat = 1;
	sl_maps_write_bucket(&e->maps, &k, &b, 0);
	req_from(e, "preset full bucket", "203.0.115.200", 80, XDP_PASS, "residential",
		 SL_R_FIRST_ADMITTED);
}

static void eviction_keeps_spent_keys_spent(void)
{
	struct sl_counters rows[SL_STATS_ROWS];
	struct env e;
	struct sl_prefix a;
	struct sl_bkey k;
	struct sl_bucket b;
	char src[64], err[64];
	int i, row, urow, flood = 0;
	long cap;
	bool kept;

	if (env_open(&e, fixture_conf(64, "drop"), asn_csv)) {
		tap(false, "eviction env");
		env_close(&e);
		return;
	}
	row = sl_config_class(&e.cfg, "hosting");
	urow = sl_config_class(&e.cfg, "unknown");
	cap = sl_maps_bucket_capacity(&e.maps);
	for (i = 0; i < 6; i++)
		req_from(&e, "spend a hosting /24", "198.51.100.77", 80,
			 i < 5 ? XDP_PASS : XDP_DROP, "hosting",
			 i < 5 ? SL_R_FIRST_ADMITTED : SL_R_SHED_PREFIX);
	/* 8000 other proven sources, each charged once, against a table of 1024 ways (the
	 * smallest: state_entries 64 rounds up): nearly eight times the table, with their parents
	 * sixteen. Every one of them is spent the moment it is charged (rate 0.001/s), so once the
	 * ways are taken the rest are homeless. */
	for (i = 0; i < 8000; i++) {
		uint8_t buf[512];

		snprintf(src, sizeof(src), "10.%d.%d.1", 1 + i / 250, i % 250);
		flood += run(&e, buf, request_from(&e, src, 80, buf).len) == XDP_PASS;
	}
	sl_prefix_parse("198.51.100.77", &a, 0, err, sizeof(err));
	sl_bkey_make(&k, &a, 24, SL_LEVEL_PREFIX, (uint8_t)row);
	kept = sl_maps_lookup_bucket(&e.maps, &k, &b) == 0;
	tap(cap == 1024 && kept && b.tat > sl_now_ns(), "the spent /24 keeps its way through 8000 "
	    "fresh keys in a %ld-way table (%s)", cap, kept ? "kept" : "lost");
	req_from(&e, "the spent /24 returns: still shed, never a fresh burst", "198.51.100.78",
		 80, XDP_DROP, "hosting", SL_R_SHED_PREFIX);
	sl_maps_read_stats(&e.maps, rows);
	/* A flood key is admitted by a way it took (its /32 and its /24 parent: two ways) or by
	 * a set's shared spill (burst 5 at the prefix, 5 at the parent here): at most 1024 / 2 +
	 * 256 x 5 = 1792 of 8000, where the LRU hash admitted every one. */
	tap(flood <= 1024 / 2 + 256 * 5 && rows[urow].key_homeless > 0,
	    "8000 fresh keys: %d admitted (<= 1792), the homeless charged to their sets' shared "
	    "spill (keys_homeless %llu)", flood, (unsigned long long)rows[urow].key_homeless);
	env_close(&e);
}

static void malformed_policy_pass(void)
{
	struct env e;
	uint8_t buf[512];
	struct fspec f = { V4("203.0.113.9", 80), .doff = 4 };
	struct fbuilt b;

	if (env_open(&e, fixture_conf(1024, "pass"), asn_csv)) {
		tap(false, "malformed=pass env");
		env_close(&e);
		return;
	}
	b = build_frame(&f, buf);
	expect(&e, "malformed = \"pass\": data offset 4 to a protected port passes", buf, b.len,
	       XDP_PASS, "none", SL_R_MAL_TCP_DOFF);
	f.doff = 0;
	f.ip4_mf = 1;
	b = build_frame(&f, buf);
	expect(&e, "malformed = \"pass\" leaves a fragmented SYN judged as a SYN", buf, b.len,
	       XDP_TX, "none", SL_R_HANDSHAKE);
	env_close(&e);
}

/* ---- the IPv6 table against the trie, through the datapath ------------------------------ */

static const char *v6_csv_a =
	"2001:db8::/32,64500,hosting\n"
	"2001:db8:1200::/40,64501,residential\n"
	"2001:db8:1234::/48,64502,watch\n"
	"2001:db8:1234:5600::/56,64503,hosting\n"      /* longer than /48: its /48 -> trie */
	"2001:db8:1234:5678::1/128,64504,residential\n"
	"2001:db8:8000::/33,64505,residential\n"
	"2400::/12,64506,hosting\n"
	"2400:cb00::/32,64507,residential\n"
	"2a00:1450:4000::/37,64508,watch\n"
	"198.51.100.0/24,64509,hosting\n";
/* The same space reclassed: what the first table typed must not linger after the flip. */
static const char *v6_csv_b =
	"2001:db8::/32,64600,residential\n"
	"2001:db8:1234::/48,64601,hosting\n"
	"2001:db8:1234:5678::/64,64602,watch\n"
	"2400:cb00:0:10::/60,64603,hosting\n";

/* The class row a SYN on the SYN-front port moved: -1 if none or more than one. */
static int syn_class(struct env *e, const char *src)
{
	struct sl_counters before[SL_STATS_ROWS], after[SL_STATS_ROWS];
	struct fspec f = { V6(src, 81) };
	uint8_t buf[512];
	struct fbuilt b = build_frame(&f, buf);
	int r, k, row = -1;

	sl_maps_read_stats(&e->maps, before);
	run(e, buf, b.len);
	sl_maps_read_stats(&e->maps, after);
	for (r = 0; r < SL_STATS_ROWS; r++)
		for (k = 0; k < SL_REASON_SLOTS; k++)
			if (after[r].pkts[k] != before[r].pkts[k])
				row = row == -1 ? r : -2;
	return row < 0 ? -1 : row;
}

/* Whether a row of @csv longer than /48 lies in the /48 of @a. */
static bool csv_long_row_in_48(const char *csv, const uint8_t *a)
{
	const char *p = csv;

	while (*p) {
		const char *nl = strchr(p, '\n');
		char line[128], err[128], *comma;
		struct sl_prefix pf;

		snprintf(line, sizeof(line), "%.*s", (int)(nl - p), p);
		p = nl + 1;
		comma = strchr(line, ',');
		*comma = '\0';
		if (!sl_prefix_parse(line, &pf, 1, err, sizeof(err)) && pf.family == SL_FAM_V6 &&
		    pf.plen > 48 && !memcmp(pf.addr, a, 6))
			return true;
	}
	return false;
}

/* Sample each row of @csv at its first and last address, the addresses either side, and at
 * random in the row and its /32; every one typed by the datapath as the kernel's LPM trie
 * (the table now in force, @table) types it. */
static void v6_table_sample(struct env *e, const char *csv, const char *table,
			    const char *label)
{
	int n = 0, bad = 0, fast = 0, deferred = 0, deferred_ok = 1;
	char line[128], src[INET6_ADDRSTRLEN];
	const char *p = csv;

	while (*p) {
		const char *nl = strchr(p, '\n');
		struct sl_prefix pf;
		char err[128], *comma;
		int i;

		snprintf(line, sizeof(line), "%.*s", (int)(nl - p), p);
		p = nl + 1;
		comma = strchr(line, ',');
		*comma = '\0';
		if (sl_prefix_parse(line, &pf, 1, err, sizeof(err)) || pf.family != SL_FAM_V6)
			continue;
		for (i = 0; i < 24; i++) {
			struct sl_prefix a = pf;
			struct sl_asn_val av;
			uint32_t want, fc = 0;
			int got, b, j;

			a.plen = 128;
			if (i == 1 || i == 2) { /* the last address, and the one after it */
				for (b = pf.plen; b < 128; b++)
					a.addr[b / 8] |= (uint8_t)(0x80u >> (b % 8));
				for (j = 16; i == 2 && j-- > 0 && ++a.addr[j] == 0;)
					;
			} else if (i == 3) { /* the one before the first */
				for (j = 16; j-- > 0 && a.addr[j]-- == 0;)
					;
			} else if (i > 3) { /* random, inside the row's /32 */
				for (j = 4; j < 16; j++)
					a.addr[j] = (uint8_t)rand();
				if (i % 4 == 0) /* or inside the row itself: its bits, then random */
					for (b = 32; b < pf.plen; b++) {
						uint8_t bit = (uint8_t)(0x80u >> (b % 8));

						a.addr[b / 8] = (uint8_t)((a.addr[b / 8] & ~bit) |
									  (pf.addr[b / 8] & bit));
					}
			}
			inet_ntop(AF_INET6, a.addr, src, sizeof(src));
			want = sl_maps_lookup_asn(&e->maps, &a, &av) ? (uint32_t)e->cfg.unknown_class :
								     av.class_id;
			got = syn_class(e, src);
			n++;
			if (got != (int)want) {
				if (bad++ < 5)
					diag("  %s: the datapath typed it %d, the trie %u", src, got, want);
			}
			if (!sl_maps_fast_class(&e->maps, &a, &fc) && fc == SL_DIR_USE_TRIE) {
				deferred++;
				if (!csv_long_row_in_48(table, a.addr))
					deferred_ok = 0;
			} else {
				fast++;
			}
		}
	}
	tap(n > 90 && bad == 0, "%s: %d sampled IPv6 sources, each typed by the datapath as "
	    "the LPM trie types it (%d differ)", label, n, bad);
	tap(fast > n / 2 && deferred > 0 && deferred_ok, "%s: the IPv6 table answered %d of them, "
	    "left %d to the trie, only where a /48 holds a longer row", label, fast, deferred);
}

static void ipv6_table_against_trie(void)
{
	struct env e;

	if (env_open(&e, fixture_conf(4096, "drop"), v6_csv_a)) {
		tap(false, "the IPv6 table fixture loads");
		env_close(&e);
		return;
	}
	v6_table_sample(&e, v6_csv_a, v6_csv_a, "IPv6 table A");
	e.asn_csv = v6_csv_b; /* a second table: built in the idle slot, flipped */
	tap(env_config(&e, fixture_conf(4096, "drop")) == 0, "IPv6 table B swapped in");
	v6_table_sample(&e, v6_csv_b, v6_csv_b, "IPv6 table B after the flip, its rows");
	v6_table_sample(&e, v6_csv_a, v6_csv_b, "IPv6 table B after the flip, table A's rows");
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
	ret = env_open(&e, fixture_conf(1024, "drop"), asn_csv);
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
	malformed_policy_pass();
	ipv6_table_against_trie();
	printf("1..%d\n", n_test);
	return n_fail ? 1 : 0;
}
