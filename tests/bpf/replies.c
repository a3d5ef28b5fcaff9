// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * BPF_PROG_TEST_RUN fixtures for what the edge says back, and for the budgets behind it.
 *
 * Verify, then charge: every SYN on a stateless port is answered with a cookie SYN-ACK and
 * charged nothing; the first request that carries ack = cookie + 1 is what is charged, and a
 * shed one is answered with one 95-byte 429 and FIN (reply ports) or dropped. Here every
 * reply is parsed byte by byte, both checksums are recomputed from scratch, the cookie is
 * recomputed with the host's copy of the MAC (include/sluice/cookie.h), the 429's Retry-After
 * digits are held to their +-20 % jitter band, and each segment states the verdict and the
 * exact set of counters it moves. Also: what gets no answer at all (forged cookies, martian
 * sources and MACs, addresses this node does not serve), the Retry-After ladder of the bucket
 * that was empty (prefix, parent, tenant; decay in seconds), key rotation, tenant budgets
 * and the demand leases follow, verdicts, the event ring, and the SYN front's reply port.
 *
 * Output is TAP. Without root or BPF, the suite is skipped with the reason.
 */
#include "bpfenv.h"

#include <time.h>

#include "sluice/cookie.h"

/* From bpf/reply.h, which only BPF code can include. */
#define LEN_429 95
#define SYNACK_WS 7

static const uint16_t mss_tab[8] = SL_COOKIE_MSS;

/* Port 80: stateless, drop. 8080: stateless, reply. 8000: stateless, drop, the tenants'
 * listen port. 81 and 8081: the SYN front, drop and reply. */
#define CONF_FMT                                                                             \
	"edge: { interfaces = [\"lo\"];\n"                                                   \
	"  ports = ( { port = 80; cost = 1; }, { port = 8080; action = \"reply\"; cost = 1; },\n" \
	"            { port = 8000; cost = 1; },\n"                                           \
	"            { port = 81; front = \"syn\"; cost = 1; },\n"                            \
	"            { port = 8081; front = \"syn\"; action = \"reply\"; cost = 1; } );\n"    \
	"  state_entries = 4096; new_key_credit = 1.0; event_sample = 1; streak_decay = %d; };\n" \
	"classes = (\n"                                                                      \
	"  { name = \"hosting\"; v4_prefix = 24; v6_prefix = 48; v4_parent = 16; v6_parent = 32;\n" \
	"    rate = 0.001; burst = 1.0; parent_rate = 0.001; parent_burst = 1000.0; },\n"     \
	"  { name = \"residential\"; rate = 0.001; burst = 4.0; parent_rate = 0.001;\n"      \
	"    parent_burst = 1000.0; },\n"                                                    \
	"  { name = \"clustered\"; v4_prefix = 32; v4_parent = 24; rate = 0.001; burst = 4.0;\n" \
	"    parent_rate = 0.001; parent_burst = 2.0; },\n"                                  \
	"  { name = \"unknown\"; rate = 0.001; burst = 4.0; parent_burst = 1000.0; }\n"      \
	");\n"                                                                               \
	"tenants = (\n"                                                                      \
	"  { name = \"acme\"; listen = [\"10.0.0.2:8000\"]; rate = 0.001; burst = 3.0;\n"   \
	"    static_rate = 0.001; static_burst = 1.0; lease_ttl = 3600; },\n"                \
	"  { name = \"beta\"; listen = [\"10.0.0.3:8000\", \"[2001:db8:ffff::3]:8000\"];\n"  \
	"    rate = 0.001; burst = 10.0; static_rate = 0.001; static_burst = 1.0;\n"         \
	"    lease_ttl = 3600; },\n"                                                         \
	"  { name = \"gamma\"; listen = [\"10.0.0.4:8000\"]; rate = 0.001; burst = 1.0;\n"   \
	"    mode = \"monitor\"; lease_ttl = 3600; },\n"                                     \
	"  { name = \"delta\"; hosts = [\"delta.example\"]; rate = 0.001; burst = 2.0;\n"     \
	"    lease_ttl = 3600; },\n"                                                         \
	"  { name = \"echo\"; hosts = [\"echo.example\"]; rate = 0.001; burst = 5.0;\n"      \
	"    lease_ttl = 3600; }\n"                                                          \
	");\n"

enum { T_ACME, T_BETA, T_GAMMA, T_DELTA, T_ECHO };

static const char *asn_csv =
	"198.51.0.0/16,64500,hosting\n"
	"2001:db8:1000::/36,64500,hosting\n"
	"203.0.113.0/24,64501,residential\n"
	"203.0.120.0/22,64502,clustered\n";

static char conf_buf[4096];

static const char *conf(int streak_decay)
{
	snprintf(conf_buf, sizeof(conf_buf), CONF_FMT, streak_decay);
	return conf_buf;
}

static const uint8_t client_mac[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x01 };
static const uint8_t node_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 }; /* build_frame's destination */
static const char *request = "GET /login HTTP/1.1\r\nHost: idp.example\r\n\r\n";

#define V4DST "10.0.0.2"
#define V6DST "2001:db8:ffff::2"

/* ---- parsing and checking a reply ---------------------------------------------------- */

struct view {
	int ok;                     /* Ethernet, IP and TCP parsed; IP length = frame length */
	uint8_t dmac[6], smac[6];
	int n_vlan;
	uint16_t tpid[SL_MAX_VLAN + 1], tci[SL_MAX_VLAN + 1];
	int family;
	uint8_t saddr[16], daddr[16];
	uint8_t ttl;
	int ip_opts;                /* IPv4 IHL > 5, or an IPv6 extension header */
	uint16_t sport, dport, window;
	uint32_t seq, ack;
	uint8_t flags;
	int doff;
	uint8_t opts[40];
	int optlen;
	uint8_t payload[512];
	int paylen;
	int ip_csum_ok, tcp_csum_ok;
};

static uint32_t sum16(const uint8_t *p, size_t n, uint32_t sum)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		sum += (uint32_t)(p[n - 1] << 8);
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Parse @f and recompute both checksums over what is actually there. */
static struct view parse_reply(const uint8_t *f, size_t len)
{
	struct view v = { 0 };
	size_t off = 12, l4, tcplen;
	uint16_t et;

	if (len < 14)
		return v;
	memcpy(v.dmac, f, 6);
	memcpy(v.smac, f + 6, 6);
	et = (uint16_t)(f[off] << 8 | f[off + 1]);
	while ((et == ETH_P_8021Q || et == ETH_P_8021AD) && v.n_vlan <= SL_MAX_VLAN && off + 6 <= len) {
		v.tpid[v.n_vlan] = et;
		v.tci[v.n_vlan] = (uint16_t)(f[off + 2] << 8 | f[off + 3]);
		v.n_vlan++;
		off += 4;
		et = (uint16_t)(f[off] << 8 | f[off + 1]);
	}
	off += 2;
	if (et == ETH_P_IP) {
		size_t ihl, tot;
		uint32_t ps = 0;

		if (off + 20 > len || (f[off] >> 4) != 4)
			return v;
		ihl = (size_t)(f[off] & 15) * 4;
		tot = (size_t)(f[off + 2] << 8 | f[off + 3]);
		v.family = 4;
		v.ip_opts = ihl != 20;
		v.ttl = f[off + 8];
		memcpy(v.saddr, f + off + 12, 4);
		memcpy(v.daddr, f + off + 16, 4);
		v.ip_csum_ok = fold(sum16(f + off, ihl, 0)) == 0;
		l4 = off + ihl;
		if (off + tot != len || tot < ihl + 20 || f[off + 9] != IPPROTO_TCP)
			return v; /* the IP length must cover the frame exactly */
		tcplen = tot - ihl;
		ps = sum16(v.saddr, 4, ps);
		ps = sum16(v.daddr, 4, ps);
		ps += IPPROTO_TCP + (uint32_t)tcplen;
		v.tcp_csum_ok = fold(sum16(f + l4, tcplen, ps)) == 0;
	} else if (et == ETH_P_IPV6) {
		size_t plen;
		uint32_t ps = 0;

		if (off + 40 > len || (f[off] >> 4) != 6)
			return v;
		plen = (size_t)(f[off + 4] << 8 | f[off + 5]);
		v.family = 6;
		v.ttl = f[off + 7];
		v.ip_opts = f[off + 6] != IPPROTO_TCP;
		if (v.ip_opts)
			return v;
		memcpy(v.saddr, f + off + 8, 16);
		memcpy(v.daddr, f + off + 24, 16);
		v.ip_csum_ok = 1; /* IPv6 has none */
		l4 = off + 40;
		if (l4 + plen != len || plen < 20)
			return v;
		tcplen = plen;
		ps = sum16(v.saddr, 16, ps);
		ps = sum16(v.daddr, 16, ps);
		ps += IPPROTO_TCP + (uint32_t)tcplen;
		v.tcp_csum_ok = fold(sum16(f + l4, tcplen, ps)) == 0;
	} else {
		return v;
	}
	v.sport = (uint16_t)(f[l4] << 8 | f[l4 + 1]);
	v.dport = (uint16_t)(f[l4 + 2] << 8 | f[l4 + 3]);
	v.seq = rd32(f + l4 + 4);
	v.ack = rd32(f + l4 + 8);
	v.doff = f[l4 + 12] >> 4;
	v.flags = f[l4 + 13];
	v.window = (uint16_t)(f[l4 + 14] << 8 | f[l4 + 15]);
	if (v.doff < 5 || (size_t)v.doff * 4 > tcplen)
		return v;
	v.optlen = v.doff * 4 - 20;
	memcpy(v.opts, f + l4 + 20, (size_t)v.optlen);
	v.paylen = (int)(tcplen - (size_t)v.doff * 4);
	if (v.paylen > (int)sizeof(v.payload))
		return v;
	memcpy(v.payload, f + l4 + (size_t)v.doff * 4, (size_t)v.paylen);
	v.ok = 1;
	return v;
}

/* ---- sending segments --------------------------------------------------------------- */

struct conn {
	int family;
	const char *src, *dst;
	uint16_t sport, dport;
	uint32_t isn;        /* the client's initial sequence number */
	uint32_t iss;        /* ours: the cookie, read from our SYN-ACK (or made here) */
	int ts;              /* the client speaks timestamps */
	uint32_t tsval;      /* the client's TSval, advanced by every segment it sends */
	uint32_t our_ts;     /* our TSval from the SYN-ACK, which the client echoes */
	int n_vlan;
	int ip4_opt_words;   /* IPv4 options (NOPs) in its segments */
	int ip6_ext;         /* IPv6 destination-options headers in its segments */
	int pad;             /* bytes after the datagram, as Ethernet pads short frames */
	int open;            /* iss and our_ts are known */
	const uint8_t *smac; /* NULL: client_mac */
	const uint8_t *dmac; /* NULL: node_mac */
};

#define SEG_MAX 2048

/* Build a segment of @c with @optlen bytes of TCP options and @dlen bytes of data. */
static size_t seg_raw(const struct conn *c, uint8_t flags, uint32_t seq, uint32_t ack,
		      const uint8_t *opts, size_t optlen, const void *data, size_t dlen,
		      uint8_t *buf)
{
	struct fspec f = { .family = c->family, .src = c->src, .dst = c->dst, .sport = c->sport,
			   .dport = c->dport, .flags = flags, .seq = seq, .ack = ack,
			   .payload = (int)(optlen + dlen), .vlans = c->n_vlan,
			   .ip4_opt_words = c->ip4_opt_words, .ip6_ext = c->ip6_ext,
			   .smac = c->smac ? c->smac : client_mac };
	struct fbuilt b = build_frame(&f, buf);

	buf[b.l4 + 12] = (uint8_t)((5 + optlen / 4) << 4);
	if (optlen)
		memcpy(buf + b.l4 + 20, opts, optlen);
	if (dlen)
		memcpy(buf + b.l4 + 20 + optlen, data, dlen);
	if (c->dmac)
		memcpy(buf, c->dmac, 6);
	if (c->pad)
		memset(buf + b.len, 0, (size_t)c->pad);
	return b.len + (size_t)c->pad;
}

static size_t put_ts(uint8_t *o, uint32_t tsval, uint32_t tsecr)
{
	o[0] = 1;
	o[1] = 1;
	o[2] = 8;
	o[3] = 10;
	o[4] = (uint8_t)(tsval >> 24);
	o[5] = (uint8_t)(tsval >> 16);
	o[6] = (uint8_t)(tsval >> 8);
	o[7] = (uint8_t)tsval;
	o[8] = (uint8_t)(tsecr >> 24);
	o[9] = (uint8_t)(tsecr >> 16);
	o[10] = (uint8_t)(tsecr >> 8);
	o[11] = (uint8_t)tsecr;
	return 12;
}

/* A non-SYN segment of @c, with TSopt (its next TSval, our TSval echoed) when it speaks
 * timestamps. */
static size_t seg(struct conn *c, uint8_t flags, uint32_t seq, uint32_t ack, const char *data,
		  uint8_t *buf)
{
	uint8_t o[12];
	size_t ol = 0;

	if (c->ts)
		ol = put_ts(o, ++c->tsval, c->our_ts);
	return seg_raw(c, flags, seq, ack, o, ol, data, data ? strlen(data) : 0, buf);
}

/* SYN options: none; MSS + SACK-permitted + window scale 7 (no timestamps); timestamps
 * alone; or all four, as Linux sends them. */
enum synopt { SO_NONE, SO_NO_TS, SO_TS_ONLY, SO_ALL };

static size_t syn_opts(enum synopt k, uint16_t mss, uint32_t tsval, uint8_t *o)
{
	size_t n = 0;
	int i;

	if (k == SO_TS_ONLY)
		return put_ts(o, tsval, 0);
	if (k == SO_NONE)
		return 0;
	o[n++] = 2; /* MSS */
	o[n++] = 4;
	o[n++] = (uint8_t)(mss >> 8);
	o[n++] = (uint8_t)mss;
	o[n++] = 4; /* SACK-permitted */
	o[n++] = 2;
	if (k == SO_ALL) {
		o[n++] = 8; /* TS: TSval, TSecr 0 */
		o[n++] = 10;
		for (i = 0; i < 4; i++)
			o[n++] = (uint8_t)(tsval >> (24 - 8 * i));
		for (i = 0; i < 4; i++)
			o[n++] = 0;
	}
	o[n++] = 1; /* NOP, window scale 7 */
	o[n++] = 3;
	o[n++] = 3;
	o[n++] = 7;
	while (n & 3)
		o[n++] = 1;
	return n;
}

/* ---- running a segment and the counters it moves --------------------------------------- */

static struct sl_counters snap_before[SL_STATS_ROWS], snap_after[SL_STATS_ROWS];
static uint8_t out_frame[SEG_MAX];
static size_t out_len, in_len; /* of the last segment run, and what it left behind */

static unsigned int reason_by_name(const char *name, size_t n)
{
	unsigned int k;

	for (k = 0; k < SL_R__MAX; k++)
		if (strlen(sl_reason_name(k)) == n && !strncmp(sl_reason_name(k), name, n))
			return k;
	return SL_R__MAX;
}

/* Did exactly the counters of @spec move, each by one? @spec: "row/reason" items joined by
 * '+' ("hosting/shed_prefix+hosting/replied_429"), or "" for none. @got describes what
 * moved. */
static bool moved_exactly(struct env *e, const char *spec, char *got, size_t gn)
{
	static long want[SL_STATS_ROWS][SL_REASON_SLOTS];
	const char *p = spec;
	bool ok = true;
	size_t used = 0;
	int r, k;

	memset(want, 0, sizeof(want));
	while (*p) {
		const char *slash = strchr(p, '/'), *end = strchr(p, '+');
		char row[32];
		unsigned int reason;
		int ri;

		if (!end)
			end = p + strlen(p);
		if (!slash || slash > end || (size_t)(slash - p) >= sizeof(row)) {
			snprintf(got, gn, "bad spec '%s'", spec);
			return false;
		}
		memcpy(row, p, (size_t)(slash - p));
		row[slash - p] = '\0';
		ri = class_row(e, row);
		reason = reason_by_name(slash + 1, (size_t)(end - slash - 1));
		if (ri < 0 || reason >= SL_R__MAX) {
			snprintf(got, gn, "bad spec '%s'", spec);
			return false;
		}
		want[ri][reason]++;
		p = *end ? end + 1 : end;
	}
	got[0] = '\0';
	for (r = 0; r < SL_STATS_ROWS; r++)
		for (k = 0; k < SL_REASON_SLOTS; k++) {
			long d = (long)(snap_after[r].pkts[k] - snap_before[r].pkts[k]);

			if (d != want[r][k])
				ok = false;
			if (d && used < gn)
				used += (size_t)snprintf(got + used, gn - used, "%s%d/%s%+ld",
							 used ? " " : "", r,
							 sl_reason_name((unsigned)k), d);
		}
	if (!used)
		snprintf(got, gn, "nothing");
	return ok;
}

static long synacks_moved(void)
{
	long d = 0;
	int r;

	for (r = 0; r < SL_STATS_ROWS; r++)
		d += (long)(snap_after[r].synacks - snap_before[r].synacks);
	return d;
}

/* Run @in (no TAP line). Returns the action; the frame left behind is out_frame/out_len. */
static int run_seg(struct env *e, const uint8_t *in, size_t len)
{
	int act;

	sl_maps_read_stats(&e->maps, snap_before);
	out_len = 0;
	in_len = len;
	act = run_out(e, in, len, out_frame, &out_len);
	sl_maps_read_stats(&e->maps, snap_after);
	return act;
}

/*
 * Send @in, and check its verdict and that exactly @moves moved; a passed frame must also
 * leave untouched. One TAP line. @v (when given) gets the reply, if there is one.
 */
static bool step(struct env *e, const char *what, const uint8_t *in, size_t len, int want_act,
		 const char *moves, struct view *v)
{
	char got[512];
	bool ok, counters, untouched = true;
	int act = run_seg(e, in, len);

	counters = moved_exactly(e, moves, got, sizeof(got));
	if (act == XDP_PASS)
		untouched = out_len == len && !memcmp(out_frame, in, len);
	ok = act == want_act && counters && untouched;
	tap(ok, "%s -> %s, %s", what, act_name(want_act), *moves ? moves : "no counter");
	if (!ok)
		diag("  got %s (%d), counters moved: %s%s", act_name(act), act, got,
		     untouched ? "" : "; a passed frame was modified");
	if (v) {
		if (act == XDP_TX)
			*v = parse_reply(out_frame, out_len);
		else
			memset(v, 0, sizeof(*v));
	}
	return ok;
}

/* ---- the cookie, from the host's side --------------------------------------------------- */

static struct sl_cookie_keys get_keys(struct env *e)
{
	struct sl_cookie_keys k;
	__u32 zero = 0;

	memset(&k, 0, sizeof(k));
	bpf_map_lookup_elem(e->maps.cookie_keys, &zero, &k);
	return k;
}

static void put_keys(struct env *e, const struct sl_cookie_keys *k)
{
	__u32 zero = 0;

	bpf_map_update_elem(e->maps.cookie_keys, &zero, k, BPF_ANY);
}

static struct sl_conn_id conn_id(const struct conn *c)
{
	struct sl_conn_id id;

	memset(&id, 0, sizeof(id));
	id.family = c->family == 4 ? SL_FAM_V4 : SL_FAM_V6;
	id.sport = c->sport;
	id.dport = c->dport;
	id.isn = c->isn;
	inet_pton(c->family == 4 ? AF_INET : AF_INET6, c->src, id.saddr);
	inet_pton(c->family == 4 ? AF_INET : AF_INET6, c->dst, id.daddr);
	return id;
}

/* Make @c's cookie here, as the datapath would have for its SYN (with timestamps: the options
 * of a Linux SYN, MSS 1460, window scale 7, SACK). For sources the datapath never answers. */
static void forge_cookie(struct env *e, struct conn *c)
{
	struct sl_cookie_keys k = get_keys(e);
	struct sl_cookie_opts o = { 0 };
	struct sl_conn_id id = conn_id(c);
	uint32_t tsval = 0;

	if (c->ts) {
		o.ts = 1;
		o.mss_idx = 6;
		o.wscale = 8;
		o.sack = 1;
	}
	c->iss = sl_cookie_make(&id, sl_now_ns(), &o, &k, &tsval);
	c->our_ts = tsval;
	c->open = 1;
}

static bool addr_is(const struct view *v, const uint8_t *a, const char *str)
{
	uint8_t b[16] = { 0 };

	inet_pton(v->family == 4 ? AF_INET : AF_INET6, str, b);
	return !memcmp(a, b, v->family == 4 ? 4 : 16);
}

/* The parts every reply shares: checksums, addressed back exactly, from a local address. */
static void check_envelope(const struct conn *c, const char *what, const struct view *v)
{
	const uint8_t *dmac = c->smac ? c->smac : client_mac;
	const uint8_t *smac = c->dmac ? c->dmac : node_mac;
	bool vlans = v->n_vlan == c->n_vlan;
	int i;

	for (i = 0; i < c->n_vlan && i < SL_MAX_VLAN && vlans; i++)
		vlans = v->tci[i] == 100 + i &&
			v->tpid[i] == ((c->n_vlan > 1 && i == 0) ? ETH_P_8021AD : ETH_P_8021Q);
	tap(v->ok && v->ip_csum_ok && v->tcp_csum_ok && !v->ip_opts && v->ttl == 64,
	    "%s: parses, IP and TCP checksums recompute from scratch, no IP options, TTL 64", what);
	if (!(v->ok && v->ip_csum_ok && v->tcp_csum_ok))
		diag("  parsed %d, ip checksum %d, tcp checksum %d, ttl %u", v->ok, v->ip_csum_ok,
		     v->tcp_csum_ok, v->ttl);
	tap(!memcmp(v->dmac, dmac, 6) && !memcmp(v->smac, smac, 6) && vlans,
	    "%s: Ethernet addresses swapped, %d VLAN tag(s) kept as they came", what, c->n_vlan);
	tap(v->family == c->family && addr_is(v, v->saddr, c->dst) &&
	    addr_is(v, v->daddr, c->src) && v->sport == c->dport && v->dport == c->sport,
	    "%s: from %s:%u (an address of sl_local) back to %s:%u", what, c->dst, c->dport,
	    c->src, c->sport);
}

/* What a SYN-ACK must offer. */
struct synack_want {
	int ts;            /* TSopt (the SYN had one) */
	uint8_t mss_idx;   /* what the cookie must carry */
	uint8_t wscale;    /* client's shift + 1; 0: none */
	uint8_t sack;
	uint32_t tsecr;    /* the client's TSval */
};

/*
 * Check the SYN-ACK in @v answering @c's SYN (@inlen bytes), field by field, and take its
 * cookie into @c. The ISS and TSval are recomputed here from the keys.
 */
static void check_synack(struct env *e, struct conn *c, const char *what, const struct view *v,
			 size_t inlen, const struct synack_want *w)
{
	struct sl_cookie_keys k = get_keys(e);
	struct sl_cookie_opts o;
	struct sl_conn_id id = conn_id(c);
	uint64_t now = sl_now_ns(), slot = now >> SL_COOKIE_SLOT_SHIFT;
	uint32_t bits = w->ts ? ((uint32_t)(w->mss_idx & 7) << 5 | (uint32_t)(w->wscale & 15) << 1 |
				 (w->sack & 1)) : 0;
	uint16_t mss = c->family == 4 ? 1460 : 1440;
	uint32_t tsval = 0;
	uint8_t want_opts[20];
	bool mac_ok = false, ok;
	int i, want_doff = w->ts ? 10 : 6;

	check_envelope(c, what, v);
	tap(v->flags == (F_SYN | F_ACK) && v->ack == c->isn + 1 && v->paylen == 0 &&
	    v->window == 65535,
	    "%s: SYN|ACK, ack = ISN + 1 = %u, no payload, window 65535 (flags %#x ack %u, %d "
	    "bytes)", what, c->isn + 1, v->flags, v->ack, v->paylen);
	if (w->ts && v->optlen >= 14)
		tsval = rd32(v->opts + 8);
	want_opts[0] = 2;
	want_opts[1] = 4;
	want_opts[2] = (uint8_t)(mss >> 8);
	want_opts[3] = (uint8_t)mss;
	if (w->ts) {
		want_opts[4] = w->sack ? 4 : 1;
		want_opts[5] = w->sack ? 2 : 1;
		want_opts[6] = 8;
		want_opts[7] = 10;
		for (i = 0; i < 4; i++) {
			want_opts[8 + i] = (uint8_t)(tsval >> (24 - 8 * i));
			want_opts[12 + i] = (uint8_t)(w->tsecr >> (24 - 8 * i));
		}
		want_opts[16] = 1;
		want_opts[17] = w->wscale ? 3 : 1;
		want_opts[18] = w->wscale ? 3 : 1;
		want_opts[19] = w->wscale ? SYNACK_WS : 1;
	}
	tap(v->doff == want_doff && v->optlen == (want_doff - 5) * 4 &&
	    !memcmp(v->opts, want_opts, (size_t)v->optlen),
	    "%s: doff %d, options exactly %s", what, want_doff,
	    !w->ts ? "MSS" : w->sack && w->wscale ? "MSS, SACK-permitted, TS (TSecr = the "
	    "client's TSval), NOP, window scale 7" : "MSS, NOP NOP, TS (TSecr = the client's "
	    "TSval), 4 NOPs");
	if (!(v->doff == want_doff && v->optlen == (want_doff - 5) * 4 &&
	      !memcmp(v->opts, want_opts, (size_t)v->optlen))) {
		char hex[128];
		size_t n = 0;

		for (i = 0; i < v->optlen && n + 4 < sizeof(hex); i++)
			n += (size_t)snprintf(hex + n, sizeof(hex) - n, "%02x ", v->opts[i]);
		diag("  got doff %d, options %s", v->doff, n ? hex : "none");
	}
	/* ISS = 28 bits of MAC << 4 | the installation's marker; TSval = option bits << 24 |
	 * 24 more bits of the same MAC. The SYN may have been answered in the previous slot. */
	for (i = 0; i < 2 && !mac_ok; i++) {
		uint64_t mac = sl_cookie_mac(&id, slot - (uint64_t)i, (uint32_t)w->ts, bits, k.cur);

		mac_ok = v->seq == sl_cookie_iss_of(mac, k.cur_marker) &&
			 (!w->ts || tsval == sl_cookie_tsval_of(mac, bits));
	}
	tap(mac_ok && (v->seq & SL_COOKIE_MARKER_MASK) == k.cur_marker,
	    "%s: ISS %#010x = 28-bit MAC << 4 | marker %#x%s, recomputed here", what, v->seq,
	    k.cur_marker, w->ts ? "; TSval = options byte << 24 | 24 more MAC bits" : "");
	if (w->ts)
		tap((tsval >> 24) == bits, "%s: TSval's options byte %#04x = MSS index %u, window "
		    "scale + 1 = %u, SACK %u (got %#04x)", what, bits, w->mss_idx, w->wscale,
		    w->sack, tsval >> 24);
	memset(&o, 0xff, sizeof(o));
	ok = sl_cookie_check(&id, v->seq, (uint32_t)w->ts, tsval, now, &k, &o);
	tap(ok && o.mss_idx == w->mss_idx && o.wscale == w->wscale && o.sack == w->sack && o.ts == w->ts,
	    "%s: sl_cookie_check accepts it and gives MSS %u (index %u), wscale %u, SACK %u, "
	    "timestamps %d (got %u/%u/%u/%u)", what, mss_tab[w->mss_idx & 7],
	    w->mss_idx, w->wscale, w->sack, w->ts, o.mss_idx, o.wscale, o.sack, o.ts);
	tap(out_len <= inlen + LEN_429, "%s: no larger than the SYN plus 95 bytes (%zu bytes for "
	    "%zu)", what, out_len, inlen);
	c->iss = v->seq;
	c->our_ts = tsval;
	c->open = 1;
}

/* The 429 the datapath writes, with @ra in its 8-character Retry-After field. */
static void text_429(char *b, size_t n, int ra)
{
	snprintf(b, n, "HTTP/1.1 429 Too Many Requests\r\nRetry-After: %-8d\r\n"
		 "Content-Length: 0\r\nConnection: close\r\n\r\n", ra);
}

/*
 * Check the 429 in @v answering @c's first request (@req_len bytes of data at seq ISN + 1,
 * with @fin when it carried a FIN), the segment just run. Returns its Retry-After, or -1.
 */
static int check_429(const struct conn *c, const char *what, const struct view *v,
		     size_t req_len, int fin)
{
	char body[LEN_429 + 1], want[160];
	uint8_t want_opts[12];
	int ra = -1;

	check_envelope(c, what, v);
	tap(v->flags == (F_FIN | 0x08 | F_ACK) && v->seq == c->iss + 1 &&
	    v->ack == c->isn + 1 + (uint32_t)req_len + (uint32_t)fin,
	    "%s: FIN|PSH|ACK, seq = ISS + 1, ack = ISN + 1 + %zu%s (flags %#x, seq ISS%+d, ack "
	    "ISN%+d)", what, req_len, fin ? " + FIN" : "", v->flags, (int)(v->seq - c->iss),
	    (int)(v->ack - c->isn));
	if (c->ts) {
		put_ts(want_opts, c->our_ts, c->tsval);
		tap(v->doff == 8 && !memcmp(v->opts, want_opts, 12),
		    "%s: NOP NOP TSopt, TSval = our cookie TSval, TSecr = the request's TSval "
		    "(doff %d)", what, v->doff);
	} else {
		tap(v->doff == 5, "%s: no TCP options on a connection without timestamps (doff %d)",
		    what, v->doff);
	}
	memset(body, 0, sizeof(body));
	if (v->paylen == LEN_429)
		memcpy(body, v->payload, LEN_429);
	if (!strncmp(body, "HTTP/1.1 429 Too Many Requests\r\nRetry-After: ", 45))
		ra = atoi(body + 45);
	text_429(want, sizeof(want), ra);
	tap(v->paylen == LEN_429 && ra > 0 && !strcmp(body, want),
	    "%s: the 95-byte 429, byte for byte, Retry-After %d in its 8-character field", what,
	    ra);
	if (!(v->paylen == LEN_429 && !strcmp(body, want)))
		diag("  got %d bytes: '%.*s'", v->paylen, v->paylen, (const char *)v->payload);
	tap(out_len <= in_len + LEN_429, "%s: no larger than the request plus the 429 (%zu <= "
	    "%zu + 95)", what, out_len, in_len);
	return ra;
}

/* ---- handshakes ------------------------------------------------------------------------ */

/* Send @c's SYN; on XDP_TX take its cookie. Quiet unless it fails. */
static bool open_conn(struct env *e, struct conn *c, const char *what)
{
	uint8_t in[SEG_MAX], o[40];
	size_t ol = syn_opts(c->ts ? SO_ALL : SO_NONE, 1460, c->tsval, o);
	size_t len = seg_raw(c, F_SYN, c->isn, 0, o, ol, NULL, 0, in);
	struct view v;
	int act = run_seg(e, in, len);

	if (act != XDP_TX) {
		tap(false, "%s: the SYN is answered (got %s)", what, act_name(act));
		return false;
	}
	v = parse_reply(out_frame, out_len);
	c->iss = v.seq;
	c->our_ts = c->ts && v.optlen >= 14 ? rd32(v.opts + 8) : 0;
	c->open = 1;
	return true;
}

static uint16_t next_sport = 20000;

static struct conn conn_of(const char *src, uint16_t dport, int ts)
{
	struct conn c = { 0 };

	c.family = strchr(src, ':') ? 6 : 4;
	c.src = src;
	c.dst = c.family == 4 ? V4DST : V6DST;
	c.dport = dport;
	c.sport = next_sport++;
	c.isn = 0x10000000u + (uint32_t)c.sport * 7919u;
	c.ts = ts;
	c.tsval = ts ? 0x01000000u + c.sport : 0;
	return c;
}

/* A proven connection's first request, expected to end as @want_act with @moves. */
static bool first_request(struct env *e, struct conn *c, const char *what, const char *data,
			  int want_act, const char *moves, struct view *v)
{
	uint8_t in[SEG_MAX];
	size_t len;

	if (!c->open && !open_conn(e, c, what))
		return false;
	len = seg(c, F_ACK | 0x08, c->isn + 1, c->iss + 1, data ? data : request, in);
	return step(e, what, in, len, want_act, moves, v);
}

/* A fresh connection from @src to @dport: SYN, then its first request. */
static bool req_from(struct env *e, const char *what, const char *src, const char *dst,
		     uint16_t dport, const char *data, int want_act, const char *moves)
{
	struct conn c = conn_of(src, dport, 0);

	if (dst)
		c.dst = dst;
	return first_request(e, &c, what, data, want_act, moves, NULL);
}

static long buckets_now(struct env *e)
{
	return sl_maps_count_buckets(&e->maps);
}

static bool bucket_of(struct env *e, const char *src, uint8_t plen, uint8_t level,
		      const char *cls, struct sl_bkey *k, struct sl_bucket *b)
{
	struct sl_prefix a;
	char err[64];

	if (sl_prefix_parse(src, &a, 0, err, sizeof(err)))
		return false;
	sl_bkey_make(k, &a, plen, level, (uint8_t)sl_config_class(&e->cfg, cls));
	memset(b, 0, sizeof(*b));
	return !sl_maps_lookup_bucket(&e->maps, k, b);
}

static uint64_t demand_of(struct env *e, uint32_t tid)
{
	static uint64_t d[SL_MAX_TENANTS];

	memset(d, 0, sizeof(d));
	sl_maps_read_demand(&e->maps, d);
	return d[tid];
}

/* ---- the SYN-ACK ------------------------------------------------------------------------ */

static void synacks(struct env *e)
{
	static const struct {
		const char *what;
		int family;
		enum synopt so;
		uint16_t mss;
		struct synack_want w;
	} rows[] = {
		{ "IPv4 SYN without options", 4, SO_NONE, 0, { 0, 0, 0, 0, 0 } },
		{ "IPv4 SYN with MSS, SACK and window scale but no timestamps", 4, SO_NO_TS, 1460,
		  { 0, 0, 0, 0, 0 } },
		{ "IPv4 SYN with timestamps alone", 4, SO_TS_ONLY, 0, { 1, 0, 0, 0, 0 } },
		{ "IPv4 SYN with MSS 1460, SACK, timestamps, window scale 7", 4, SO_ALL, 1460,
		  { 1, 6, 8, 1, 0 } },
		{ "IPv6 SYN without options", 6, SO_NONE, 0, { 0, 1, 0, 0, 0 } },
		{ "IPv6 SYN with MSS, SACK and window scale but no timestamps", 6, SO_NO_TS, 1440,
		  { 0, 1, 0, 0, 0 } },
		{ "IPv6 SYN with MSS 1440, SACK, timestamps, window scale 7", 6, SO_ALL, 1440,
		  { 1, 4, 8, 1, 0 } },
	};
	static const struct {
		uint16_t mss;
		uint8_t idx;
	} mss_rows[] = { { 500, 0 }, { 1219, 0 }, { 1220, 1 }, { 1300, 1 }, { 1360, 2 },
			 { 1439, 3 }, { 1452, 5 }, { 1460, 6 }, { 8960, 7 }, { 65535, 7 } };
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct conn c = conn_of(rows[i].family == 4 ? "198.51.90.1" : "2001:db8:1090::1",
					8080, 0);
		struct synack_want w = rows[i].w;
		uint8_t in[SEG_MAX], o[40];
		size_t ol, len;
		long b0 = buckets_now(e);
		struct view v;

		c.tsval = 0x0badf00d + (uint32_t)i;
		w.tsecr = c.tsval;
		ol = syn_opts(rows[i].so, rows[i].mss, c.tsval, o);
		len = seg_raw(&c, F_SYN, c.isn, 0, o, ol, NULL, 0, in);
		step(e, rows[i].what, in, len, XDP_TX, "none/handshake", &v);
		tap(synacks_moved() == 1 && buckets_now(e) == b0,
		    "%s: counted in synacks, and charged nothing (no bucket made: %ld -> %ld)",
		    rows[i].what, b0, buckets_now(e));
		check_synack(e, &c, rows[i].what, &v, len, &w);
	}

	/* The MSS the cookie carries is the largest table entry the client's MSS admits. */
	for (i = 0; i < sizeof(mss_rows) / sizeof(mss_rows[0]); i++) {
		struct conn c = conn_of("198.51.90.2", 8080, 1);
		uint8_t in[SEG_MAX], o[40];
		size_t len = seg_raw(&c, F_SYN, c.isn, 0, o, syn_opts(SO_ALL, mss_rows[i].mss,
						c.tsval, o), NULL, 0, in);
		struct sl_cookie_keys k = get_keys(e);
		struct sl_cookie_opts co = { 0 };
		struct sl_conn_id id = conn_id(&c);
		struct view v;
		int act = run_seg(e, in, len), ok;
		uint32_t tsval;

		v = parse_reply(out_frame, out_len);
		tsval = v.optlen >= 14 ? rd32(v.opts + 8) : 0;
		ok = act == XDP_TX && sl_cookie_check(&id, v.seq, 1, tsval, sl_now_ns(), &k, &co);
		tap(ok && co.mss_idx == mss_rows[i].idx,
		    "client MSS %u: the cookie carries MSS index %u (%u) (got %u)", mss_rows[i].mss,
		    mss_rows[i].idx, mss_tab[mss_rows[i].idx],
		    co.mss_idx);
	}

	/*
	 * The option layouts read at once by fixed compares (bpf/reply.h, syn_opts_known), and
	 * near misses of them that the walk reads: each SYN-ACK must say what the walk would
	 * make of its SYN. T marks where the SYN's TSval goes (4 bytes, TSecr 0 after it).
	 */
	{
		static const struct {
			const char *what;
			uint8_t opts[24];
			size_t len;
			int ts_at; /* offset of the TSval, -1: none */
			struct synack_want w;
		} lay[] = {
			{ "Linux's SYN layout (MSS SACK TS NOP WS)",
			  { 2, 4, 5, 180, 4, 2, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 3, 7 }, 20, 8,
			  { 1, 6, 8, 1, 0 } },
			{ "FreeBSD's SYN layout (MSS NOP WS SACK TS)",
			  { 2, 4, 5, 180, 1, 3, 3, 6, 4, 2, 8, 10 }, 20, 12, { 1, 6, 7, 1, 0 } },
			{ "macOS's SYN layout (MSS NOP WS NOP NOP TS SACK EOL EOL)",
			  { 2, 4, 5, 180, 1, 3, 3, 6, 1, 1, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0, 4, 2, 0, 0 },
			  24, 12, { 1, 6, 7, 1, 0 } },
			{ "Windows's SYN layout (MSS NOP WS NOP NOP SACK)",
			  { 2, 4, 5, 180, 1, 3, 3, 8, 1, 1, 4, 2 }, 12, -1, { 0, 0, 0, 0, 0 } },
			{ "Linux's SYN layout without timestamps (MSS NOP NOP SACK NOP WS)",
			  { 2, 4, 5, 180, 1, 1, 4, 2, 1, 3, 3, 7 }, 12, -1, { 0, 0, 0, 0, 0 } },
			{ "MSS alone", { 2, 4, 5, 180 }, 4, -1, { 0, 0, 0, 0, 0 } },
			{ "Linux's layout, MSS 536 and a window shift of 20 (taken as 14)",
			  { 2, 4, 2, 24, 4, 2, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 3, 20 }, 20, 8,
			  { 1, 0, 15, 1, 0 } },
			{ "macOS's layout with NOPs for its SACK-permitted (the walk's)",
			  { 2, 4, 5, 180, 1, 3, 3, 6, 1, 1, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0 },
			  24, 12, { 1, 6, 7, 0, 0 } },
			{ "Linux's layout with the window scale's length 4 (the walk's: no scale)",
			  { 2, 4, 5, 180, 4, 2, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 4, 7 }, 20, 8,
			  { 1, 6, 0, 1, 0 } },
			{ "FreeBSD's layout with an MSS of length 5 (the walk's: no MSS, the rest)",
			  { 2, 5, 5, 180, 1, 3, 3, 6, 4, 2, 8, 10 }, 20, 12, { 1, 0, 7, 1, 0 } },
		};

		for (i = 0; i < sizeof(lay) / sizeof(lay[0]); i++) {
			struct conn c = conn_of("198.51.107.1", 8080, 0);
			struct synack_want w = lay[i].w;
			uint8_t in[SEG_MAX], o[24];
			size_t len;
			struct view v;
			int j;

			c.tsval = 0x5eed0000u + (uint32_t)i;
			memcpy(o, lay[i].opts, sizeof(o));
			if (lay[i].ts_at >= 0)
				for (j = 0; j < 4; j++)
					o[lay[i].ts_at + j] = (uint8_t)(c.tsval >> (24 - 8 * j));
			w.tsecr = w.ts ? c.tsval : 0;
			len = seg_raw(&c, F_SYN, c.isn, 0, o, lay[i].len, NULL, 0, in);
			step(e, lay[i].what, in, len, XDP_TX, "none/handshake", &v);
			check_synack(e, &c, lay[i].what, &v, len, &w);
		}
	}

	/* TCP Fast Open: the data is not ours to take before the source is proven. */
	{
		struct conn c = conn_of("198.51.106.1", 8080, 0);
		struct synack_want w = { 0 };
		uint8_t in[SEG_MAX];
		size_t len = seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, request, strlen(request), in);
		struct view v;

		step(e, "SYN carrying data (TFO)", in, len, XDP_TX, "none/handshake", &v);
		check_synack(e, &c, "SYN carrying data (TFO): acks the SYN alone", &v, len, &w);
	}

	/* What the SYN came wrapped in is not copied: no IP options, no extension headers, and
	 * the IP length, not the frame's, says where the segment ends. */
	{
		static const struct {
			const char *what, *src;
			int opt_words, ext, pad;
		} wrap[] = {
			{ "IPv4 SYN with 12 bytes of IP options", "198.51.106.3", 3, 0, 0 },
			{ "IPv6 SYN behind two extension headers", "2001:db8:1106::3", 0, 2, 0 },
			{ "IPv4 SYN padded to the Ethernet minimum (60 bytes)", "198.51.106.4", 0, 0, 6 },
			{ "IPv4 SYN with 30 bytes of trailing garbage", "198.51.106.5", 0, 0, 30 },
		};
		size_t j;

		for (j = 0; j < sizeof(wrap) / sizeof(wrap[0]); j++) {
			struct conn c = conn_of(wrap[j].src, 8080, 0);
			struct synack_want w = { 0, (uint8_t)(c.family == 4 ? 0 : 1), 0, 0, 0 };
			uint8_t in[SEG_MAX];
			size_t len;
			struct view v;

			c.ip4_opt_words = wrap[j].opt_words;
			c.ip6_ext = wrap[j].ext;
			c.pad = wrap[j].pad;
			len = seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in);
			step(e, wrap[j].what, in, len, XDP_TX, "none/handshake", &v);
			check_synack(e, &c, wrap[j].what, &v, len, &w);
		}
	}

	/* QinQ: both tags go back as they came. */
	{
		struct conn c = conn_of("198.51.105.7", 8080, 1);
		struct synack_want w = { 1, 6, 8, 1, 0 };
		uint8_t in[SEG_MAX], o[40];
		size_t len;
		struct view v;

		c.n_vlan = 2;
		w.tsecr = c.tsval;
		len = seg_raw(&c, F_SYN, c.isn, 0, o, syn_opts(SO_ALL, 1460, c.tsval, o), NULL, 0,
			      in);
		step(e, "QinQ SYN", in, len, XDP_TX, "none/handshake", &v);
		check_synack(e, &c, "QinQ SYN", &v, len, &w);
		/* spend its /24 (burst 1), then the 429 keeps the tags too */
		req_from(e, "QinQ: spend the /24", "198.51.105.8", NULL, 8080, NULL, XDP_PASS,
			 "hosting/first_admitted");
		if (first_request(e, &c, "QinQ first request", NULL, XDP_TX,
				  "hosting/shed_prefix+hosting/replied_429", &v))
			check_429(&c, "QinQ 429", &v, strlen(request), 0);
	}

	/* Eight tags (SL_MAX_VLAN) go back as they came, on the SYN-ACK and the 429; a ninth is
	 * judged (the kernel strips priority tags without limit) but no reply carries it. */
	{
		struct conn c = conn_of("198.51.140.20", 8080, 1);
		struct synack_want w = { 1, 6, 8, 1, 0 };
		uint8_t in[SEG_MAX], o[40];
		size_t len;
		struct view v;

		c.n_vlan = SL_MAX_VLAN;
		w.tsecr = c.tsval;
		len = seg_raw(&c, F_SYN, c.isn, 0, o, syn_opts(SO_ALL, 1460, c.tsval, o), NULL, 0,
			      in);
		step(e, "eight tags: SYN", in, len, XDP_TX, "none/handshake", &v);
		check_synack(e, &c, "eight tags: SYN", &v, len, &w);
		req_from(e, "eight tags: spend the /24", "198.51.140.21", NULL, 8080, NULL, XDP_PASS,
			 "hosting/first_admitted");
		if (first_request(e, &c, "eight tags: first request", NULL, XDP_TX,
				  "hosting/shed_prefix+hosting/replied_429", &v))
			check_429(&c, "eight tags: 429", &v, strlen(request), 0);

		c = conn_of("198.51.140.30", 8080, 1);
		c.n_vlan = SL_MAX_VLAN + 1;
		len = seg_raw(&c, F_SYN, c.isn, 0, o, syn_opts(SO_ALL, 1460, c.tsval, o), NULL, 0,
			      in);
		step(e, "nine tags: the SYN is judged, no SYN-ACK carries nine back: dropped", in,
		     len, XDP_DROP, "none/malformed_vlan_depth", NULL);
	}

	/* A SYN|FIN or SYN|RST is never answered, even on a reply port. */
	{
		struct conn c = conn_of("198.51.106.2", 8080, 0);
		uint8_t in[SEG_MAX];
		size_t len;

		len = seg_raw(&c, F_SYN | F_FIN, c.isn, 0, NULL, 0, NULL, 0, in);
		step(e, "SYN|FIN on a reply port: dropped, no SYN-ACK", in, len, XDP_DROP,
		     "none/bad_flags", NULL);
		len = seg_raw(&c, F_SYN | F_RST, c.isn, 0, NULL, 0, NULL, 0, in);
		step(e, "SYN|RST on a reply port: dropped, no SYN-ACK", in, len, XDP_DROP,
		     "none/bad_flags", NULL);
	}
}

/* ---- the conversation of a shed connection ---------------------------------------------- */

static void conn_key(const struct conn *c, uint32_t iss, struct sl_conn_key *k)
{
	memset(k, 0, sizeof(*k));
	k->family = c->family == 4 ? SL_FAM_V4 : SL_FAM_V6;
	k->iss = iss;
	k->sport = c->sport;
	k->dport = c->dport;
	inet_pton(c->family == 4 ? AF_INET : AF_INET6, c->src, k->saddr);
	inet_pton(c->family == 4 ? AF_INET : AF_INET6, c->dst, k->daddr);
}

static bool conn_entry(int fd, const struct conn *c, uint32_t iss, struct sl_conn *out)
{
	struct sl_conn_key k;

	conn_key(c, iss, &k);
	memset(out, 0, sizeof(*out));
	return !bpf_map_lookup_elem(fd, &k, out);
}

/* A shed cookie connection's tag in sl_shed_sets: SL_CONN_SHED, SL_CONN_DROPPED or 0. */
static uint32_t shed_tag(struct env *e, const struct conn *c, uint32_t iss)
{
	struct sl_conn_key k;

	conn_key(c, iss, &k);
	return env_shed_tag(e, &k);
}

/* An ACK (or RST|ACK) we sent: flags, seq, ack, TSopt as the connection has it. */
static void check_bare(const struct conn *c, const char *what, const struct view *v,
		       uint8_t flags, uint32_t seq, uint32_t ack, uint32_t tsval, uint32_t tsecr)
{
	uint8_t want_opts[12];

	check_envelope(c, what, v);
	tap(v->flags == flags && v->seq == seq && v->ack == ack && v->paylen == 0,
	    "%s: flags %#x, seq ISS%+d, ack ISN%+d, no payload (got flags %#x, seq ISS%+d, ack "
	    "ISN%+d, %d bytes)", what, flags, (int)(seq - c->iss), (int)(ack - c->isn), v->flags,
	    (int)(v->seq - c->iss), (int)(v->ack - c->isn), v->paylen);
	if (c->ts) {
		put_ts(want_opts, tsval, tsecr);
		tap(v->doff == 8 && !memcmp(v->opts, want_opts, 12),
		    "%s: NOP NOP TSopt (TSval %#x, TSecr %#x) (doff %d, TSval %#x, TSecr %#x)", what,
		    tsval, tsecr, v->doff, v->optlen >= 12 ? rd32(v->opts + 4) : 0,
		    v->optlen >= 12 ? rd32(v->opts + 8) : 0);
	} else {
		tap(v->doff == 5, "%s: no TCP options (doff %d)", what, v->doff);
	}
}

static void conversation(struct env *e, int family, int ts)
{
	struct conn c = conn_of(family == 4 ? (ts ? "198.51.101.9" : "198.51.100.9") :
				(ts ? "2001:db8:1002::9" : "2001:db8:1001::9"), 8080, ts);
	struct synack_want w = { ts, 0, 0, 0, 0 };
	const char *spend = family == 4 ? (ts ? "198.51.101.8" : "198.51.100.8") :
			    (ts ? "2001:db8:1002::8" : "2001:db8:1001::8");
	uint8_t in[SEG_MAX], o[40];
	char tag[48], what[128];
	struct sl_conn sc;
	struct view v;
	uint32_t done, st;
	size_t len;
	long b0;
	int ra;

	snprintf(tag, sizeof(tag), "IPv%d%s", family, ts ? " with timestamps" : "");
	if (ts) {
		w.mss_idx = 6;
		w.wscale = 8;
		w.sack = 1;
		w.tsecr = c.tsval;
	} else {
		w.mss_idx = family == 4 ? 0 : 1;
	}
	snprintf(what, sizeof(what), "%s: spend the hosting prefix's burst of one", tag);
	req_from(e, what, spend, NULL, 8080, NULL, XDP_PASS, "hosting/first_admitted");

	snprintf(what, sizeof(what), "%s SYN", tag);
	len = seg_raw(&c, F_SYN, c.isn, 0, o, syn_opts(ts ? SO_ALL : SO_NONE, 1460, c.tsval, o),
		      NULL, 0, in);
	b0 = buckets_now(e);
	step(e, what, in, len, XDP_TX, "none/handshake", &v);
	check_synack(e, &c, what, &v, len, &w);

	snprintf(what, sizeof(what), "%s: the bare handshake ACK is dropped", tag);
	step(e, what, in, seg(&c, F_ACK, c.isn + 1, c.iss + 1, NULL, in), XDP_DROP,
	     "none/cookie_ack", NULL);
	tap(buckets_now(e) == b0, "%s: neither the SYN nor the handshake ACK charged anything "
	    "(%ld buckets, then %ld)", tag, b0, buckets_now(e));

	snprintf(what, sizeof(what), "%s first request to an empty prefix", tag);
	len = seg(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, request, in);
	step(e, what, in, len, XDP_TX, "hosting/shed_prefix+hosting/replied_429", &v);
	ra = check_429(&c, what, &v, strlen(request), 0);
	tap(ra == 1, "%s: the first 429 of a streak says Retry-After: 1 (got %d)", tag, ra);
	st = shed_tag(e, &c, c.iss);
	tap(st == SL_CONN_SHED && !conn_entry(e->maps.shed, &c, c.iss, &sc),
	    "%s: sl_shed_sets holds the tag of (tuple, ISS), as shed (state %u); sl_shed, for "
	    "kernel handshakes, nothing", tag, st);
	{
		struct sl_conn_key k;

		conn_key(&c, c.iss, &k);
		tap(env_conn_left(e, &k) < 0,
		    "%s: and sl_conn_sets (admitted connections) does not", tag);
	}

	snprintf(what, sizeof(what), "%s: the retransmitted first request is absorbed, not "
		 "answered twice", tag);
	step(e, what, in, seg(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, request, in), XDP_DROP,
	     "none/cookie_drop", NULL);

	done = c.isn + 1 + (uint32_t)strlen(request);
	snprintf(what, sizeof(what), "%s: more data of the shed request is absorbed", tag);
	step(e, what, in, seg(&c, F_ACK | 0x08, done, c.iss + 1, "body", in), XDP_DROP,
	     "none/cookie_drop", NULL);

	tap(((c.iss + 96) & SL_COOKIE_MARKER_MASK) == (c.iss & SL_COOKIE_MARKER_MASK),
	    "%s: 429 + FIN take 96 sequence numbers: ack - 1 = ISS + 96 keeps the marker", tag);
	snprintf(what, sizeof(what), "%s: the client's ACK of our 429 and FIN (ack = ISS + 97) "
		 "is absorbed", tag);
	step(e, what, in, seg(&c, F_ACK, done, c.iss + 97, NULL, in), XDP_DROP, "none/cookie_drop",
	     NULL);

	snprintf(what, sizeof(what), "%s: the client's FIN", tag);
	step(e, what, in, seg(&c, F_ACK | F_FIN, done, c.iss + 97, NULL, in), XDP_TX,
	     "none/cookie_fin", &v);
	snprintf(what, sizeof(what), "%s: the client's FIN gets our ACK", tag);
	check_bare(&c, what, &v, F_ACK, c.iss + 97, done + 1, c.our_ts, c.tsval);

	snprintf(what, sizeof(what), "%s: a reset of the shed connection is absorbed", tag);
	step(e, what, in, seg(&c, F_RST | F_ACK, done + 1, c.iss + 97, NULL, in), XDP_DROP,
	     "none/cookie_drop", NULL);
}

/* A first request that carries the client's FIN: the 429 acknowledges it too. */
static void request_with_fin(struct env *e)
{
	struct conn c = conn_of("198.51.109.9", 8080, 1);
	uint8_t in[SEG_MAX];
	struct view v;
	uint32_t done = c.isn + 1 + (uint32_t)strlen(request) + 1;

	req_from(e, "request with FIN: spend the /24", "198.51.109.8", NULL, 8080, NULL, XDP_PASS,
		 "hosting/first_admitted");
	open_conn(e, &c, "request with FIN");
	step(e, "a first request carrying FIN", in,
	     seg(&c, F_ACK | 0x08 | F_FIN, c.isn + 1, c.iss + 1, request, in), XDP_TX,
	     "hosting/shed_prefix+hosting/replied_429", &v);
	check_429(&c, "the 429 to a request carrying FIN", &v, strlen(request), 1);
	step(e, "request with FIN: the client's last ACK is absorbed", in,
	     seg(&c, F_ACK, done, c.iss + 97, NULL, in), XDP_DROP, "none/cookie_drop", NULL);

	/* A request in a frame longer than its datagram: the 429 acknowledges the datagram. */
	c = conn_of("198.51.109.10", 8080, 0);
	c.pad = 24;
	open_conn(e, &c, "padded request");
	step(e, "a first request with 24 bytes after its datagram", in,
	     seg(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, request, in), XDP_TX,
	     "hosting/shed_prefix+hosting/replied_429", &v);
	check_429(&c, "the 429 to a padded request", &v, strlen(request), 0);
	c = conn_of("198.51.109.11", 8080, 1);
	c.ip4_opt_words = 2;
	open_conn(e, &c, "request with IP options");
	step(e, "a first request with IP options", in,
	     seg(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, request, in), XDP_TX,
	     "hosting/shed_prefix+hosting/replied_429", &v);
	check_429(&c, "the 429 to a request with IP options", &v, strlen(request), 0);
}

/* A FIN straight after the handshake, no request: RST|ACK, as a closed port answers. */
static void fin_after_handshake(struct env *e)
{
	static const struct {
		uint16_t port;
		int ts;
	} rows[] = { { 8080, 0 }, { 8080, 1 }, { 80, 0 }, { 80, 1 } };
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct conn c = conn_of("198.51.103.1", rows[i].port, rows[i].ts);
		uint8_t in[SEG_MAX];
		char what[128];
		struct view v;
		long b0;

		snprintf(what, sizeof(what), "FIN right after the handshake (port %u%s)",
			 rows[i].port, rows[i].ts ? ", timestamps" : "");
		if (!open_conn(e, &c, what))
			continue;
		b0 = buckets_now(e);
		step(e, what, in, seg(&c, F_ACK | F_FIN, c.isn + 1, c.iss + 1, NULL, in), XDP_TX,
		     "none/cookie_fin", &v);
		check_bare(&c, what, &v, F_RST | F_ACK, c.iss + 1, c.isn + 2, c.our_ts, c.tsval);
		tap(buckets_now(e) == b0, "%s: charges nothing", what);
	}
}

/* A drop port says nothing to a shed connection, ever. */
static void drop_port(struct env *e)
{
	struct conn c = conn_of("198.51.102.9", 80, 0);
	uint8_t in[SEG_MAX];
	struct view v;
	uint32_t done = c.isn + 1 + (uint32_t)strlen(request);

	req_from(e, "drop port: spend the /24", "198.51.102.8", NULL, 80, NULL, XDP_PASS,
		 "hosting/first_admitted");
	first_request(e, &c, "drop port: a first request to an empty prefix is dropped", NULL,
		      XDP_DROP, "hosting/shed_prefix", NULL);
	tap(shed_tag(e, &c, c.iss) == SL_CONN_DROPPED,
	    "drop port: the dropped connection is remembered in sl_shed_sets under (tuple, ISS), "
	    "as dropped (answered nothing, so it is answered nothing)");
	step(e, "drop port: its retransmission is absorbed, not judged again", in,
	     seg(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, request, in), XDP_DROP, "none/cookie_drop",
	     NULL);
	/* A client whose request is never acknowledged closes with the request and FIN. */
	/* (A drop port once answered it with seq 0: absorb() acknowledged the FIN of every
	 * sl_shed entry.) */
	step(e, "drop port: the request retransmitted with FIN gets no answer", in,
	     seg(&c, F_ACK | 0x08 | F_FIN, c.isn + 1, c.iss + 1, request, in), XDP_DROP,
	     "none/cookie_drop", &v);
	if (v.ok)
		diag("  it was answered: flags %#x seq %u (ISS%+d) ack ISN%+d", v.flags, v.seq,
		     (int)(v.seq - c.iss), (int)(v.ack - c.isn));
	/* Its client, giving up, closes: the reset the kernel gives a segment of no connection,
	 * so the client does not hold its tuple in FIN_WAIT1 retransmitting the FIN. */
	step(e, "drop port: a bare FIN of the shed connection gets a reset", in,
	     seg(&c, F_ACK | F_FIN, done, c.iss + 1, NULL, in), XDP_TX, "none/cookie_fin", &v);
	tap(v.ok && v.flags == (F_RST | F_ACK) && v.seq == c.iss + 1 && v.ack == done + 1 &&
	    v.paylen == 0,
	    "drop port: ... RST|ACK at seq = its ack, ack = its FIN + 1, nothing else (flags %#x "
	    "seq ISS%+d ack ISN%+d)", v.flags, (int)(v.seq - c.iss), (int)(v.ack - c.isn));
}

/* ---- what gets no answer ------------------------------------------------------------------ */

static uint32_t slot_cookie(struct env *e, const struct conn *c, int64_t dslot)
{
	struct sl_cookie_keys k = get_keys(e);
	struct sl_conn_id id = conn_id(c);
	uint64_t slot = (sl_now_ns() >> SL_COOKIE_SLOT_SHIFT) + (uint64_t)dslot;

	return sl_cookie_iss_of(sl_cookie_mac(&id, slot, 0, 0, k.cur), k.cur_marker);
}

static void no_answer_without_a_cookie(struct env *e)
{
	struct conn c = conn_of("192.0.2.10", 8080, 0), o;
	struct sl_cookie_keys k = get_keys(e);
	uint8_t in[SEG_MAX];
	long b0;
	uint32_t m;

	open_conn(e, &c, "forgeries: SYN");
	b0 = buckets_now(e);
	/* Flip one MAC bit (bit 4): the marker still matches, the MAC does not. */
	step(e, "a request whose cookie has one MAC bit flipped: dropped in silence", in,
	     seg(&c, F_ACK | 0x08, c.isn + 1, (c.iss ^ 0x10) + 1, request, in), XDP_DROP,
	     "none/cookie_bad", NULL);
	step(e, "a request whose cookie has the top bit flipped: dropped", in,
	     seg(&c, F_ACK | 0x08, c.isn + 1, (c.iss ^ 0x80000000u) + 1, request, in), XDP_DROP,
	     "none/cookie_bad", NULL);
	step(e, "a segment at another seq than ISN + 1 (the cookie binds the ISN): dropped", in,
	     seg(&c, F_ACK | 0x08, c.isn + 5, c.iss + 1, request, in), XDP_DROP, "none/cookie_bad",
	     NULL);
	o = c;
	o.sport++;
	step(e, "the cookie from another source port: dropped", in,
	     seg(&o, F_ACK | 0x08, o.isn + 1, o.iss + 1, request, in), XDP_DROP, "none/cookie_bad",
	     NULL);
	o = c;
	o.src = "192.0.2.11";
	step(e, "the cookie from another source address: dropped", in,
	     seg(&o, F_ACK | 0x08, o.isn + 1, o.iss + 1, request, in), XDP_DROP, "none/cookie_bad",
	     NULL);
	o = c;
	o.dst = "10.0.0.3";
	step(e, "the cookie to another of our addresses: dropped", in,
	     seg(&o, F_ACK | 0x08, o.isn + 1, o.iss + 1, request, in), XDP_DROP, "none/cookie_bad",
	     NULL);
	o = c;
	o.dport = 80;
	step(e, "the cookie to another protected port: dropped", in,
	     seg(&o, F_ACK | 0x08, o.isn + 1, o.iss + 1, request, in), XDP_DROP, "none/cookie_bad",
	     NULL);

	/* Slots of 2^36 ns: a cookie is good in its own and the next, never older or newer. */
	o = c;
	o.sport = next_sport++;
	step(e, "a cookie two slots old (137 s or more): dropped", in,
	     seg(&o, F_ACK | 0x08, o.isn + 1, slot_cookie(e, &o, -2) + 1, request, in), XDP_DROP,
	     "none/cookie_bad", NULL);
	step(e, "a cookie of the next slot (not made yet): dropped", in,
	     seg(&o, F_ACK | 0x08, o.isn + 1, slot_cookie(e, &o, 1) + 1, request, in), XDP_DROP,
	     "none/cookie_bad", NULL);
	tap(buckets_now(e) == b0, "none of these forgeries charged anything (%ld -> %ld buckets)",
	    b0, buckets_now(e));
	step(e, "a cookie of the previous slot is still good", in,
	     seg(&o, F_ACK | 0x08, o.isn + 1, slot_cookie(e, &o, -1) + 1, request, in), XDP_PASS,
	     "unknown/first_admitted", NULL);

	/* Timestamps: the client must echo our TSval, whose 24 MAC bits and option byte are
	 * the rest of the cookie. */
	c = conn_of("192.0.2.12", 8080, 1);
	open_conn(e, &c, "timestamps forgeries: SYN");
	o = c;
	o.ts = 0;
	step(e, "timestamps: a request without TSopt on a timestamp cookie: dropped", in,
	     seg(&o, F_ACK | 0x08, o.isn + 1, o.iss + 1, request, in), XDP_DROP, "none/cookie_bad",
	     NULL);
	o = c;
	o.our_ts ^= 1;
	step(e, "timestamps: TSecr with one MAC bit flipped: dropped", in,
	     seg(&o, F_ACK | 0x08, o.isn + 1, o.iss + 1, request, in), XDP_DROP, "none/cookie_bad",
	     NULL);
	o = c;
	o.our_ts ^= 0x20000000u; /* the MSS index: a client cannot choose its own options */
	step(e, "timestamps: TSecr with another options byte: dropped", in,
	     seg(&o, F_ACK | 0x08, o.isn + 1, o.iss + 1, request, in), XDP_DROP, "none/cookie_bad",
	     NULL);
	step(e, "timestamps: the right echo is good", in,
	     seg(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, request, in), XDP_PASS,
	     "unknown/first_admitted", NULL);
	{
		/* TS first, then NOP NOP: not the usual layout, read by the option walk. */
		uint8_t opt[12];

		c = conn_of("192.0.2.14", 8080, 1);
		open_conn(e, &c, "timestamps, other layout: SYN");
		put_ts(opt, c.tsval + 1, c.our_ts);
		memmove(opt, opt + 2, 10);
		opt[10] = 1;
		opt[11] = 1;
		step(e, "timestamps: the echo in a TS, NOP, NOP layout is good too", in,
		     seg_raw(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, opt, 12, request,
			     strlen(request), in), XDP_PASS, "unknown/first_admitted", NULL);
	}

	c = conn_of("192.0.2.13", 8080, 0);
	open_conn(e, &c, "reset after SYN-ACK");
	step(e, "a reset right after our SYN-ACK is absorbed", in,
	     seg(&c, F_RST | F_ACK, c.isn + 1, c.iss + 1, NULL, in), XDP_DROP, "none/cookie_drop",
	     NULL);
	for (m = 0; m < 16; m++)
		if (m != k.cur_marker)
			break;
	step(e, "an ACK whose ack - 1 lacks the marker passes untouched, on one compare", in,
	     seg(&c, F_ACK, c.isn + 1, (0x12345670u | m) + 1, NULL, in), XDP_PASS, "none/not_syn",
	     NULL);
}

/* ---- martians, and addresses this node does not serve ------------------------------------- */

static void martians(struct env *e)
{
	static const char *const v4[] = { "0.1.2.3", "127.0.0.5", "224.0.0.5", "239.1.1.1",
					   "240.0.0.1", "255.255.255.255", "10.0.0.3", "10.0.0.2" };
	static const char *const v6[] = { "::", "::1", "ff02::1", "ff0e::1234",
					   "::ffff:198.51.100.1", "2001:db8:ffff::3" };
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t mcast4[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb };
	static const uint8_t mcast6[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 };
	static const char *const only_two[] = { "10.0.0.2/32", "2001:db8:ffff::2/128", NULL };
	uint8_t in[SEG_MAX];
	char what[128];
	struct conn c;
	struct view v;
	size_t i;
	long b0 = buckets_now(e);

	for (i = 0; i < sizeof(v4) / sizeof(v4[0]); i++) {
		c = conn_of(v4[i], 8080, 0);
		snprintf(what, sizeof(what), "SYN from %s: no SYN-ACK", v4[i]);
		step(e, what, in, seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP,
		     "none/martian", NULL);
	}
	for (i = 0; i < sizeof(v6) / sizeof(v6[0]); i++) {
		c = conn_of(v6[i], 8080, 0);
		snprintf(what, sizeof(what), "SYN from %s: no SYN-ACK", v6[i]);
		step(e, what, in, seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP,
		     "none/martian", NULL);
	}
	c = conn_of("198.51.107.1", 8080, 0);
	c.dst = "127.0.0.1";
	step(e, "SYN to 127.0.0.1 from the wire: no SYN-ACK", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP, "none/martian", NULL);
	c = conn_of("2001:db8:1107::1", 8080, 0);
	c.dst = "::1";
	step(e, "SYN to ::1 from the wire: no SYN-ACK", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP, "none/martian", NULL);
	c = conn_of("198.51.107.2", 8080, 0);
	c.dmac = bcast;
	step(e, "SYN to the broadcast MAC: no SYN-ACK", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP, "none/martian", NULL);
	c.dmac = mcast4;
	step(e, "SYN to an IPv4 multicast MAC: no SYN-ACK", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP, "none/martian", NULL);
	c = conn_of("2001:db8:1107::2", 8080, 0);
	c.dmac = mcast6;
	step(e, "SYN to an IPv6 multicast MAC: no SYN-ACK", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP, "none/martian", NULL);
	c = conn_of("198.51.107.3", 8080, 0);
	c.smac = mcast4;
	step(e, "SYN from a multicast MAC: no SYN-ACK", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP, "none/martian", NULL);
	c.smac = bcast;
	step(e, "SYN from the broadcast MAC: no SYN-ACK", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP, "none/martian", NULL);

	/* A cookie the datapath never sent (made here) from a martian still earns nothing. */
	c = conn_of("224.0.0.9", 8080, 0);
	forge_cookie(e, &c);
	step(e, "a first request with a valid cookie from 224.0.0.9: dropped, no 429", in,
	     seg(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, request, in), XDP_DROP, "none/martian",
	     NULL);
	c = conn_of("10.0.0.4", 8080, 0);
	forge_cookie(e, &c);
	step(e, "a first request with a valid cookie from our own address: dropped", in,
	     seg(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, request, in), XDP_DROP, "none/martian",
	     NULL);
	c = conn_of("198.51.107.4", 8080, 0);
	open_conn(e, &c, "FIN after the handshake from a multicast MAC");
	c.smac = mcast4;
	step(e, "a FIN after the handshake from a multicast MAC: no reset", in,
	     seg(&c, F_ACK | F_FIN, c.isn + 1, c.iss + 1, NULL, in), XDP_DROP, "none/martian", NULL);
	c.smac = NULL;
	c.dmac = bcast;
	step(e, "a first request to the broadcast MAC: no 429, nothing charged", in,
	     seg(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, request, in), XDP_DROP, "none/martian",
	     NULL);
	tap(buckets_now(e) == b0, "martians charged nothing (%ld -> %ld buckets)", b0,
	    buckets_now(e));

	/* A shed connection's FIN, arriving in a group frame, is not acknowledged. */
	req_from(e, "group-frame FIN: spend the /24", "198.51.108.8", NULL, 8080, NULL, XDP_PASS,
		 "hosting/first_admitted");
	c = conn_of("198.51.108.9", 8080, 0);
	first_request(e, &c, "group-frame FIN: the 429", NULL, XDP_TX,
		      "hosting/shed_prefix+hosting/replied_429", NULL);
	c.smac = mcast4;
	step(e, "a shed connection's FIN from a multicast MAC: absorbed, no ACK", in,
	     seg(&c, F_ACK | F_FIN, c.isn + 1 + (uint32_t)strlen(request), c.iss + 97, NULL, in),
	     XDP_DROP, "none/cookie_drop", NULL);
	c.smac = NULL;
	c.dmac = bcast;
	step(e, "a shed connection's FIN to the broadcast MAC: absorbed, no ACK", in,
	     seg(&c, F_ACK | F_FIN, c.isn + 1 + (uint32_t)strlen(request), c.iss + 97, NULL, in),
	     XDP_DROP, "none/cookie_drop", NULL);
	c.dmac = NULL;
	step(e, "the same FIN in a unicast frame gets its ACK", in,
	     seg(&c, F_ACK | F_FIN, c.isn + 1 + (uint32_t)strlen(request), c.iss + 97, NULL, in),
	     XDP_TX, "none/cookie_fin", &v);

	/* Not an address this node serves: routed through, untouched, never answered. */
	c = conn_of("198.51.107.5", 8080, 0);
	c.dst = "10.9.9.9";
	step(e, "SYN to 10.9.9.9 (not local): passed untouched", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_PASS, "none/not_local", NULL);
	forge_cookie(e, &c);
	step(e, "a cookie-valid bare ACK to 10.9.9.9: passed untouched", in,
	     seg(&c, F_ACK, c.isn + 1, c.iss + 1, NULL, in), XDP_PASS, "none/not_local", NULL);
	step(e, "a cookie-valid first request to 10.9.9.9: passed untouched", in,
	     seg(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, request, in), XDP_PASS, "none/not_local",
	     NULL);
	c = conn_of("2001:db8:1107::5", 8080, 0);
	c.dst = "2001:db8:ffff::9";
	step(e, "SYN to 2001:db8:ffff::9 (not local): passed untouched", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_PASS, "none/not_local", NULL);

	/* sl_local is what decides: with only 10.0.0.2 and 2001:db8:ffff::2 in it, 10.0.0.3 is
	 * someone else's, and 10.0.0.4 is an ordinary source. */
	if (env_local(e, only_two)) {
		tap(false, "sl_local can be rewritten");
		return;
	}
	c = conn_of("198.51.107.6", 8080, 0);
	c.dst = "10.0.0.3";
	step(e, "sl_local without 10.0.0.3: a SYN to it passes untouched", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_PASS, "none/not_local", NULL);
	c = conn_of("10.0.0.4", 8080, 0);
	step(e, "sl_local without 10.0.0.4: a SYN from it is answered", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_TX, "none/handshake", NULL);
	{
		struct sl_local_bits *lb = calloc(1, sizeof(*lb));
		int got = lb ? bpf_map_lookup_elem(e->maps.local_bits, &(__u32){ 0 }, lb) : -1;

		tap(!got && !(lb->w[0] & 0x18) && (lb->w[0] & 0x4),
		    "... and the local filter dropped the bits of 10.0.0.3 and 10.0.0.4, kept "
		    "10.0.0.2's (%#llx)", !got ? (unsigned long long)lb->w[0] : 0ull);
		free(lb);
	}
	/* A local prefix wider than one address (AnyIP): served, and never a source. */
	{
		static const char *const anyip[] = { "10.0.0.2/32", "10.0.0.3/32", "10.0.0.4/32",
			"127.0.0.0/8", "2001:db8:ffff::2/128", "2001:db8:ffff::3/128", "::1/128",
			"10.50.0.0/16", "2001:db8:5050::/48", NULL };

		env_local(e, anyip);
		c = conn_of("198.51.107.8", 8080, 0);
		c.dst = "10.50.3.4";
		step(e, "AnyIP 10.50.0.0/16 in sl_local: a SYN to 10.50.3.4 is answered", in,
		     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_TX, "none/handshake",
		     &v);
		tap(v.ok && addr_is(&v, v.saddr, "10.50.3.4"), "... from 10.50.3.4");
		c = conn_of("2001:db8:1107::8", 8080, 0);
		c.dst = "2001:db8:5050::77";
		step(e, "AnyIP 2001:db8:5050::/48: a SYN to 2001:db8:5050::77 is answered", in,
		     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_TX, "none/handshake",
		     NULL);
		c = conn_of("10.50.9.9", 8080, 0);
		step(e, "AnyIP: a SYN from inside the local /16 is a martian", in,
		     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP, "none/martian",
		     NULL);
	}
	env_local(e, env_local_default);
	c = conn_of("198.51.107.9", 8080, 0);
	c.dst = "10.50.3.4";
	step(e, "sl_local restored: 10.50.3.4 is not ours any more", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_PASS, "none/not_local", NULL);
	c = conn_of("10.0.0.4", 8080, 0);
	step(e, "sl_local restored: a SYN from 10.0.0.4 is a martian again", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP, "none/martian", NULL);
	c = conn_of("198.51.107.7", 8080, 0);
	c.dst = "10.0.0.3";
	step(e, "sl_local restored: a SYN to 10.0.0.3 is answered from 10.0.0.3", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_TX, "none/handshake", &v);
	tap(v.ok && addr_is(&v, v.saddr, "10.0.0.3"), "the SYN-ACK's source is 10.0.0.3");

	/* The filter in front of the host hash (struct sl_local_bits): one bit per host
	 * address's last 16 bits, so 10.0.0.2-4, 2001:db8:ffff::2-3 and ::1 set bits 1 to 4 and
	 * nothing else; a source that shares a set bit is asked of the hash, which says no. */
	{
		struct sl_local_bits *lb = calloc(1, sizeof(*lb));
		unsigned int w, set = 0;

		if (lb && !bpf_map_lookup_elem(e->maps.local_bits, &(__u32){ 0 }, lb))
			for (w = 0; w < SL_LOCAL_BITS / 64; w++)
				set += (unsigned int)__builtin_popcountll(lb->w[w]);
		tap(lb && set == 4 && (lb->w[0] & 0x1e) == 0x1e,
		    "the local filter holds the four bits of the node's host addresses (%u set)", set);
		free(lb);
	}
	c = conn_of("198.51.0.4", 8080, 0);
	step(e, "a source with 10.0.0.4's last 16 bits (198.51.0.4) is not ours: answered", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_TX, "none/handshake", NULL);
	c = conn_of("2001:db8:77::3", 8080, 0);
	step(e, "... nor is 2001:db8:77::3, with 2001:db8:ffff::3's: answered", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_TX, "none/handshake", NULL);
}

/* ---- Retry-After: the ladder of the bucket that was empty ------------------------------- */

/* The default ladder (edge.retry_after) and its +-20 % band, as the datapath rounds it. */
static const int ladder[] = { 1, 5, 30, 120 };

static int rung(int streak)
{
	return ladder[streak < 4 ? streak : 3];
}

static bool in_band(int ra, int base)
{
	int lo = base * 800 / 1000, hi = base * 1200 / 1000;

	return ra >= (lo < 1 ? 1 : lo) && ra <= (hi < 1 ? 1 : hi);
}

/* The Retry-After of a 429 in @v, when its body is exactly the 429 (else -1). */
static int ra_of(const struct view *v)
{
	char body[LEN_429 + 1], want[160];
	int ra;

	if (!v->ok || v->paylen != LEN_429 || !v->tcp_csum_ok)
		return -1;
	memcpy(body, v->payload, LEN_429);
	body[LEN_429] = '\0';
	ra = atoi(body + 45);
	text_429(want, sizeof(want), ra);
	return strcmp(body, want) ? -1 : ra;
}

/* One shed first request from @src with @data: its 429 must show the rung of @streak. */
static int shed_429(struct env *e, const char *what, const char *src, const char *data,
		    const char *moves, int streak)
{
	struct conn c = conn_of(src, 8080, 0);
	struct view v;
	int ra;

	first_request(e, &c, what, data, XDP_TX, moves, &v);
	ra = ra_of(&v);
	tap(in_band(ra, rung(streak)), "%s: Retry-After %d, within +-20 %% of %d (429 number %d "
	    "of the streak)", what, ra, rung(streak), streak + 1);
	return ra;
}

static uint32_t now_s(void)
{
	return (uint32_t)(sl_now_ns() / 1000000000ull);
}

/* Wait for a second of the datapath's clock with at least 300 ms of it left, so that a
 * last_shed_s written here is read by the datapath in the same second. */
static void fresh_second(void)
{
	struct timespec ts = { 0, 10000000 };
	int i;

	for (i = 0; i < 100 && sl_now_ns() % 1000000000ull >= 700000000ull; i++)
		nanosleep(&ts, NULL);
}

static void escalation_prefix(struct env *e)
{
	struct sl_bkey k;
	struct sl_bucket b;
	char what[96];
	int i, seen[160] = { 0 }, distinct = 0;
	bool found;

	req_from(e, "ladder: spend the /24", "198.51.120.19", NULL, 8080, NULL, XDP_PASS,
		 "hosting/first_admitted");
	for (i = 0; i < 5; i++) {
		snprintf(what, sizeof(what), "prefix ladder, shed %d", i + 1);
		shed_429(e, what, "198.51.120.20", NULL, "hosting/shed_prefix+hosting/replied_429",
			 i);
	}
	found = bucket_of(e, "198.51.120.20", 24, SL_LEVEL_PREFIX, "hosting", &k, &b);
	tap(found && b.streak == 5 && b.last_shed_s + 1 >= now_s() && b.last_shed_s <= now_s(),
	    "the /24's bucket holds the streak (%u, want 5) and when its last 429 went, in seconds "
	    "(%u, now %u)", b.streak, b.last_shed_s, now_s());

	/* Within streak_decay (60 s) the ladder goes on; past it, it starts over. */
	b.last_shed_s -= 30;
	sl_maps_write_bucket(&e->maps, &k, &b, 0);
	shed_429(e, "30 s after the last 429 (decay 60 s): still at the top", "198.51.120.21",
		 NULL, "hosting/shed_prefix+hosting/replied_429", 5);
	bucket_of(e, "198.51.120.20", 24, SL_LEVEL_PREFIX, "hosting", &k, &b);
	b.last_shed_s -= 61;
	sl_maps_write_bucket(&e->maps, &k, &b, 0);
	shed_429(e, "61 s after the last 429: the ladder starts over", "198.51.120.22", NULL,
		 "hosting/shed_prefix+hosting/replied_429", 0);
	found = bucket_of(e, "198.51.120.20", 24, SL_LEVEL_PREFIX, "hosting", &k, &b);
	tap(found && b.streak == 1, "after the restart the streak is 1 (%u)", b.streak);
	for (i = 1; i < 4; i++) {
		snprintf(what, sizeof(what), "the ladder climbs again, shed %d", i + 1);
		shed_429(e, what, "198.51.120.23", NULL, "hosting/shed_prefix+hosting/replied_429",
			 i);
	}
	/* The jitter is jitter: the top rung's answers spread over 96..144. */
	for (i = 0; i < 8; i++) {
		struct conn c = conn_of("198.51.120.24", 8080, 0);
		struct view v;
		int ra;

		snprintf(what, sizeof(what), "top rung, 429 %d", i + 1);
		first_request(e, &c, what, NULL, XDP_TX, "hosting/shed_prefix+hosting/replied_429",
			      &v);
		ra = ra_of(&v);
		if (in_band(ra, 120) && !seen[ra]++)
			distinct++;
		else if (!in_band(ra, 120))
			diag("  Retry-After %d outside 96..144", ra);
	}
	tap(distinct >= 3, "eight 429s at the 120 s rung: all within 96..144, %d distinct values "
	    "(jittered)", distinct);
}

static void escalation_parent(struct env *e)
{
	static const char *const src[] = { "203.0.120.3", "203.0.120.4", "203.0.120.5",
					   "203.0.120.6" };
	struct sl_bkey k;
	struct sl_bucket b;
	char what[96];
	bool found;
	int i;

	/* clustered: each /32 has a burst of 4, their /24 one of 2. */
	req_from(e, "parent ladder: first /32 of the /24", "203.0.120.1", NULL, 8080, NULL,
		 XDP_PASS, "clustered/first_admitted");
	req_from(e, "parent ladder: second /32 of the /24", "203.0.120.2", NULL, 8080, NULL,
		 XDP_PASS, "clustered/first_admitted");
	for (i = 0; i < 4; i++) {
		snprintf(what, sizeof(what), "parent ladder: a fresh /32 (%s), shed by its /24",
			 src[i]);
		shed_429(e, what, src[i], NULL, "clustered/shed_parent+clustered/replied_429", i);
	}
	found = bucket_of(e, "203.0.120.0", 24, SL_LEVEL_PARENT, "clustered", &k, &b);
	tap(found && b.streak == 4, "the parent /24's bucket climbed (streak %u, want 4)", b.streak);
	/* Shed by its parent before its request was read: the /32 was never charged (no bucket),
	 * or refunded, and climbs no streak of its own. */
	found = bucket_of(e, "203.0.120.6", 32, SL_LEVEL_PREFIX, "clustered", &k, &b);
	tap(!found || (b.streak == 0 &&
		       sl_gcra_available(b.tat, sl_now_ns(), sl_gcra_emission(0.001),
					 sl_gcra_tolerance(4.0, sl_gcra_emission(0.001))) > 3.99),
	    "the /32 its parent shed has no streak (%u) and its whole burst (%s)",
	    found ? b.streak : 0, found ? "refunded" : "never charged");
}

static void escalation_tenant(struct env *e)
{
	static const char *data = "GET / HTTP/1.1\r\nHost: delta.example\r\n\r\n";
	struct sl_bucket tb;
	struct sl_bkey k;
	struct sl_bucket b;
	char what[96], src[32];
	__u32 tid = T_DELTA;
	bool found;
	int i;

	/* Tenant delta (Host delta.example) has a burst of 2; every source is fresh. */
	for (i = 0; i < 6; i++) {
		snprintf(src, sizeof(src), "192.0.2.%d", 100 + i);
		if (i < 2) {
			snprintf(what, sizeof(what), "tenant ladder: request %d for delta", i + 1);
			req_from(e, what, src, NULL, 8080, data, XDP_PASS, "unknown/first_admitted");
			continue;
		}
		snprintf(what, sizeof(what), "tenant ladder: %s shed by delta's budget", src);
		shed_429(e, what, src, data, "unknown/shed_tenant+unknown/replied_429", i - 2);
	}
	memset(&tb, 0, sizeof(tb));
	bpf_map_lookup_elem(e->maps.tenant_state, &tid, &tb);
	tap(tb.streak == 4 && tb.last_shed_s <= now_s() && tb.last_shed_s + 1 >= now_s(),
	    "delta's tenant bucket climbed (streak %u, want 4; last 429 at %u s)", tb.streak,
	    tb.last_shed_s);
	found = bucket_of(e, "192.0.2.105", 32, SL_LEVEL_PREFIX, "unknown", &k, &b);
	tap(found && b.streak == 0 &&
	    sl_gcra_available(b.tat, sl_now_ns(), sl_gcra_emission(0.001),
			      sl_gcra_tolerance(4.0, sl_gcra_emission(0.001))) > 3.99,
	    "the source the tenant shed has no streak (%u) and its burst back", b.streak);
}

/* streak_decay = 1: the ladder restarts after one quiet second (seconds, not ns). */
static void decay_one_second(void)
{
	struct sl_bkey k;
	struct sl_bucket b;
	struct env e;
	struct timespec ts = { 2, 200000000 };

	if (env_open(&e, conf(1), asn_csv)) {
		tap(false, "streak_decay = 1 env");
		env_close(&e);
		return;
	}
	req_from(&e, "decay 1 s: spend the /24", "198.51.121.8", NULL, 8080, NULL, XDP_PASS,
		 "hosting/first_admitted");
	fresh_second();
	shed_429(&e, "decay 1 s: first 429", "198.51.121.9", NULL,
		 "hosting/shed_prefix+hosting/replied_429", 0);
	shed_429(&e, "decay 1 s: a 429 right after climbs", "198.51.121.9", NULL,
		 "hosting/shed_prefix+hosting/replied_429", 1);
	nanosleep(&ts, NULL);
	shed_429(&e, "decay 1 s: a 429 2.2 s later starts over", "198.51.121.9", NULL,
		 "hosting/shed_prefix+hosting/replied_429", 0);
	bucket_of(&e, "198.51.121.9", 24, SL_LEVEL_PREFIX, "hosting", &k, &b);
	tap(b.streak == 1, "decay 1 s: the streak restarted at 1 (%u)", b.streak);
	fresh_second();
	b.last_shed_s = now_s() - 1;
	sl_maps_write_bucket(&e.maps, &k, &b, 0);
	shed_429(&e, "decay 1 s: a 429 one second after the last climbs", "198.51.121.9", NULL,
		 "hosting/shed_prefix+hosting/replied_429", 1);
	bucket_of(&e, "198.51.121.9", 24, SL_LEVEL_PREFIX, "hosting", &k, &b);
	fresh_second();
	b.last_shed_s = now_s() - 2;
	sl_maps_write_bucket(&e.maps, &k, &b, 0);
	shed_429(&e, "decay 1 s: a 429 two seconds after the last starts over", "198.51.121.9",
		 NULL, "hosting/shed_prefix+hosting/replied_429", 0);
	env_close(&e);
}

/* ---- key rotation ------------------------------------------------------------------------ */

static void key_rotation(struct env *e)
{
	struct sl_cookie_keys k0 = get_keys(e), k1, k2, only;
	struct conn a = conn_of("100.64.1.1", 8080, 0), at = conn_of("100.64.1.2", 8080, 1);
	struct conn n = conn_of("100.64.1.3", 8080, 1), d = conn_of("100.64.1.4", 8080, 0);
	struct sl_cookie_opts o;
	struct sl_conn_id id;
	uint8_t in[SEG_MAX];

	open_conn(e, &a, "before rotation");
	open_conn(e, &at, "before rotation, timestamps");
	tap(sl_maps_cookie_keys(&e->maps, 1, 3600) == 1, "the controller rotates the cookie key");
	k1 = get_keys(e);
	tap(memcmp(k1.cur, k0.cur, sizeof(k1.cur)) && !memcmp(k1.prev, k0.cur, sizeof(k1.prev)) &&
	    k1.prev_until_ns > sl_now_ns(),
	    "rotation: a new current key, the old one kept as previous until prev_until_ns");
	tap(k1.cur_marker == k0.cur_marker && k1.prev_marker == k0.cur_marker,
	    "rotation: the marker is the installation's, kept (%#x -> %#x, previous %#x)",
	    k0.cur_marker, k1.cur_marker, k1.prev_marker);
	first_request(e, &a, "a cookie of the previous key is still good", NULL, XDP_PASS,
		      "unknown/first_admitted", NULL);
	first_request(e, &at, "a timestamp cookie of the previous key is still good", NULL,
		      XDP_PASS, "unknown/first_admitted", NULL);

	open_conn(e, &n, "after rotation");
	only = k1;
	only.prev_until_ns = 0;
	id = conn_id(&n);
	tap(sl_cookie_check(&id, n.iss, 1, n.our_ts, sl_now_ns(), &only, &o),
	    "after rotation, SYN-ACKs carry cookies of the new key");
	memcpy(only.cur, k0.cur, sizeof(only.cur));
	tap(!sl_cookie_check(&id, n.iss, 1, n.our_ts, sl_now_ns(), &only, &o),
	    "... which the old key does not make");
	open_conn(e, &d, "before the second rotation");

	sl_maps_cookie_keys(&e->maps, 1, 3600); /* k1 is now the previous key ... */
	k2 = get_keys(e);
	k2.prev_until_ns = 1;                   /* ... and past its last slot */
	put_keys(e, &k2);
	step(e, "a cookie of a key older than its overlap: dropped, no 429, no pass", in,
	     seg(&d, F_ACK | 0x08, d.isn + 1, d.iss + 1, request, in), XDP_DROP, "none/cookie_bad",
	     NULL);
	step(e, "a timestamp cookie of that key: dropped too", in,
	     seg(&n, F_ACK | 0x08, n.isn + 1, n.iss + 1, request, in), XDP_DROP, "none/cookie_bad",
	     NULL);
	tap(k2.cur_marker == k0.cur_marker, "two rotations later the marker is still %#x (%#x)",
	    k0.cur_marker, k2.cur_marker);

	/* No key yet (a datapath loaded before its controller made one): no SYN-ACK at all. */
	{
		struct sl_cookie_keys none = k2;
		struct conn c = conn_of("100.64.1.5", 8080, 0);

		memset(none.cur, 0, sizeof(none.cur));
		put_keys(e, &none);
		step(e, "no cookie key yet: a SYN is dropped, as a drop port would", in,
		     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP,
		     "none/handshake", NULL);
		tap(synacks_moved() == 0, "... and no SYN-ACK is counted");
		put_keys(e, &k2);
	}
}

/* ---- tenants, and the demand their leases follow ----------------------------------------- */

static uint64_t tenant_tat(struct env *e, __u32 tid)
{
	struct sl_bucket b;

	memset(&b, 0, sizeof(b));
	bpf_map_lookup_elem(e->maps.tenant_state, &tid, &b);
	return b.tat;
}

static void tenants(struct env *e)
{
	uint64_t d0 = demand_of(e, T_ACME), t0;
	struct sl_tenant t;
	struct sl_bkey k;
	struct sl_bucket b;
	char src[32], what[96];
	__u32 id = T_BETA;
	int i;

	/* acme listens on 10.0.0.2:8000 with a burst of 3; the sources are fresh /32s. */
	for (i = 1; i <= 4; i++) {
		snprintf(src, sizeof(src), "203.0.113.%d", i);
		snprintf(what, sizeof(what), "tenant acme (burst 3): first request %d, from %s", i,
			 src);
		req_from(e, what, src, "10.0.0.2", 8000, NULL, i <= 3 ? XDP_PASS : XDP_DROP,
			 i <= 3 ? "residential/first_admitted" : "residential/shed_tenant");
	}
	tap(demand_of(e, T_ACME) - d0 == 4, "acme's demand grew by the 4 requests that reached its "
	    "bucket, admitted or shed (%llu)", (unsigned long long)(demand_of(e, T_ACME) - d0));
	tap(bucket_of(e, "203.0.113.4", 32, SL_LEVEL_PREFIX, "residential", &k, &b) &&
	    sl_gcra_available(b.tat, sl_now_ns(), sl_gcra_emission(0.001),
			      sl_gcra_tolerance(4.0, sl_gcra_emission(0.001))) > 3.99,
	    "the source the tenant shed kept its own burst (refund)");
	req_from(e, "that source, to a port no tenant listens on: admitted", "203.0.113.4",
		 "10.0.0.2", 80, NULL, XDP_PASS, "residential/first_admitted");

	/* SYNs are not demand: they prove nothing. */
	d0 = demand_of(e, T_ACME);
	t0 = tenant_tat(e, T_ACME);
	for (i = 0; i < 20; i++) {
		struct conn c = conn_of("203.0.113.5", 8000, i & 1);

		c.dst = "10.0.0.2";
		if (!open_conn(e, &c, "SYNs to the tenant"))
			break;
	}
	tap(i == 20 && demand_of(e, T_ACME) == d0 && tenant_tat(e, T_ACME) == t0,
	    "20 SYNs to acme were answered and moved neither its demand nor its bucket");
	{
		struct conn c = conn_of("203.0.113.5", 8000, 0);
		uint8_t in[SEG_MAX];

		c.dst = "10.0.0.2";
		open_conn(e, &c, "handshake ACK to the tenant");
		run_seg(e, in, seg(&c, F_ACK, c.isn + 1, c.iss + 1, NULL, in));
		run_seg(e, in, seg(&c, F_ACK | 0x08, c.isn + 1, (c.iss ^ 0x100) + 1, request, in));
		tap(demand_of(e, T_ACME) == d0,
		    "neither a handshake ACK nor a forged request is demand");
	}

	/* beta's lease expires: the datapath falls back to its static burst of 1 by itself. */
	bpf_map_lookup_elem(e->maps.tenants, &id, &t);
	t.lease_expires_ns = 1;
	bpf_map_update_elem(e->maps.tenants, &id, &t, BPF_ANY);
	req_from(e, "beta, lease expired: the static fallback admits its burst of one",
		 "203.0.113.50", "10.0.0.3", 8000, NULL, XDP_PASS, "residential/first_admitted");
	req_from(e, "beta, lease expired: the second request is shed at the static rate",
		 "203.0.113.51", "10.0.0.3", 8000, NULL, XDP_DROP, "residential/shed_tenant");
	req_from(e, "beta's IPv6 address shares its budget", "2001:db8:2000::1",
		 "2001:db8:ffff::3", 8000, NULL, XDP_DROP, "unknown/shed_tenant");
	d0 = demand_of(e, T_BETA);
	sl_maps_set_lease(&e->maps, id, e->cfg.tenants[id].rate, e->cfg.tenants[id].burst,
			  sl_now_ns() + 3000000000ull, NULL);
	req_from(e, "beta, lease renewed: the leased burst again", "203.0.113.52", "10.0.0.3",
		 8000, NULL, XDP_PASS, "residential/first_admitted");
	tap(demand_of(e, T_BETA) - d0 == e->cfg.ports[2].cost,
	    "beta's demand grew by the request's cost (%llu, want %u)",
	    (unsigned long long)(demand_of(e, T_BETA) - d0), e->cfg.ports[2].cost);

	/* A Host a tenant lists names that tenant, whatever the destination: acme's budget
	 * is spent, echo's is not. */
	d0 = demand_of(e, T_ACME);
	t0 = demand_of(e, T_ECHO);
	req_from(e, "Host echo.example to acme's address: echo's budget", "203.0.113.53",
		 "10.0.0.2", 8000, "GET / HTTP/1.1\r\nHost: Echo.Example\r\n\r\n", XDP_PASS,
		 "residential/first_admitted");
	tap(demand_of(e, T_ECHO) - t0 == 1 && demand_of(e, T_ACME) == d0,
	    "charged to echo (+%llu), not to acme (+%llu)",
	    (unsigned long long)(demand_of(e, T_ECHO) - t0),
	    (unsigned long long)(demand_of(e, T_ACME) - d0));

	req_from(e, "monitor tenant gamma: first request", "203.0.113.60", "10.0.0.4", 8000, NULL,
		 XDP_PASS, "residential/first_admitted");
	req_from(e, "monitor tenant gamma, budget spent: passes and counts would_shed_tenant",
		 "203.0.113.61", "10.0.0.4", 8000, NULL, XDP_PASS,
		 "residential/would_shed_tenant+residential/first_admitted");
}

/* ---- verdicts ------------------------------------------------------------------------------ */

static void put_verdict(struct env *e, const char *prefix, uint8_t action, uint16_t factor,
			uint64_t expires_ns)
{
	struct sl_verdict v = { 0 };
	struct sl_prefix p;
	char err[64];

	sl_prefix_parse(prefix, &p, 1, err, sizeof(err));
	v.action = action;
	v.factor = factor;
	v.expires_ns = expires_ns;
	snprintf(v.reason, sizeof(v.reason), "fixture");
	sl_maps_verdict_put(&e->maps, &p, &v);
}

static void verdicts(struct env *e)
{
	uint64_t later = sl_now_ns() + 60000000000ull;
	struct sl_prefix p;
	struct conn c;
	uint8_t in[SEG_MAX];
	struct view v;
	char err[64];

	put_verdict(e, "203.0.113.128/25", SL_VERDICT_BLOCK, 0, later);
	c = conn_of("203.0.113.200", 8080, 0);
	step(e, "block verdict: a SYN on a reply port is dropped, no SYN-ACK", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP, "none/shed_verdict",
	     NULL);
	c = conn_of("203.0.113.201", 8080, 0);
	forge_cookie(e, &c); /* a handshake from before the verdict */
	step(e, "block verdict: a first request is dropped, even on a reply port", in,
	     seg(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, request, in), XDP_DROP,
	     "residential/shed_verdict", NULL);
	c = conn_of("203.0.113.202", 81, 0);
	step(e, "block verdict, SYN front: the SYN is dropped", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP,
	     "residential/shed_verdict", NULL);
	c = conn_of("203.0.113.202", 8081, 0);
	step(e, "block verdict, SYN front reply port: the SYN is dropped", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP,
	     "residential/shed_verdict", NULL);

	put_verdict(e, "203.0.113.64/27", SL_VERDICT_REPLY, 0, later);
	c = conn_of("203.0.113.70", 8080, 0);
	step(e, "reply verdict, stateless: the SYN still gets its cookie (it charges nothing)",
	     in, seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_TX, "none/handshake", &v);
	c.iss = v.seq;
	c.open = 1;
	step(e, "reply verdict: the first request on a reply port gets the 429", in,
	     seg(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, request, in), XDP_TX,
	     "residential/shed_verdict+residential/replied_429", &v);
	tap(ra_of(&v) == 1, "reply verdict: a well-formed 429 (Retry-After %d)", ra_of(&v));
	req_from(e, "reply verdict: dropped on a drop port", "203.0.113.71", NULL, 80, NULL,
		 XDP_DROP, "residential/shed_verdict");
	c = conn_of("203.0.113.72", 8081, 0);
	step(e, "reply verdict, SYN front reply port: our cookie SYN-ACK", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_TX,
	     "residential/shed_verdict", &v);
	tap(synacks_moved() == 1, "... counted in synacks");
	c.iss = v.seq;
	c.open = 1;
	step(e, "reply verdict, SYN front reply port: the first request gets the 429", in,
	     seg(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, request, in), XDP_TX,
	     "residential/shed_verdict+residential/replied_429", &v);
	tap(ra_of(&v) >= 1, "... a well-formed 429 (Retry-After %d)", ra_of(&v));
	c = conn_of("203.0.113.73", 81, 0);
	step(e, "reply verdict, SYN front drop port: the SYN is dropped", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP,
	     "residential/shed_verdict", NULL);

	put_verdict(e, "203.0.113.96/27", SL_VERDICT_TIGHTEN, 500, later);
	req_from(e, "tighten 0.5: first request", "203.0.113.100", NULL, 80, NULL, XDP_PASS,
		 "residential/first_admitted");
	req_from(e, "tighten 0.5: second request", "203.0.113.100", NULL, 80, NULL, XDP_PASS,
		 "residential/first_admitted");
	req_from(e, "tighten 0.5: a burst of 4 admits 2", "203.0.113.100", NULL, 80, NULL,
		 XDP_DROP, "residential/shed_prefix");

	sl_prefix_parse("203.0.113.32/27", &p, 1, err, sizeof(err));
	{
		struct sl_verdict x = { .action = SL_VERDICT_BLOCK, .expires_ns = sl_now_ns() - 1 };

		bpf_map_update_elem(e->maps.verdicts, &(struct sl_lpm_key){ .prefixlen = 96 + 27,
				    .addr = { [10] = 0xff, [11] = 0xff, 203, 0, 113, 32 } }, &x,
				    BPF_ANY);
	}
	req_from(e, "an expired verdict stops applying before anyone sweeps it", "203.0.113.33",
		 NULL, 80, NULL, XDP_PASS, "residential/first_admitted");
	tap(sl_maps_verdict_sweep(&e->maps, &(uint32_t){ 0 }) == 1,
	    "the controller's sweep removes exactly the expired verdict");

	sl_prefix_parse("203.0.113.128/25", &p, 1, err, sizeof(err));
	sl_maps_verdict_del(&e->maps, &p);
	req_from(e, "a deleted verdict no longer applies", "203.0.113.203", NULL, 8080, NULL,
		 XDP_PASS, "residential/first_admitted");
}

/* ---- the event ring ------------------------------------------------------------------------ */

#define MAX_EV 32
struct evlog {
	int n;
	struct sl_event ev[MAX_EV];
};

static int log_event(void *ctx, void *data, size_t len)
{
	struct evlog *l = ctx;

	if (l && len >= sizeof(struct sl_event) && l->n < MAX_EV)
		memcpy(&l->ev[l->n++], data, sizeof(struct sl_event));
	return 0;
}

static bool ev_is(const struct sl_event *ev, unsigned reason, uint8_t action, uint8_t last,
		  uint16_t dport, int ra, uint8_t cls)
{
	return ev->reason == reason && ev->action == action && ev->family == SL_FAM_V4 &&
	       ev->plen == 32 && ev->addr[0] == 203 && ev->addr[1] == 0 && ev->addr[2] == 113 &&
	       ev->addr[3] == last && ev->dport == dport && ev->class_id == cls &&
	       (ra < 0 ? ev->retry_after > 0 : ev->retry_after == ra);
}

static void events(struct env *e)
{
	static struct evlog l;
	struct ring_buffer *rb = ring_buffer__new(e->maps.events, log_event, NULL, NULL);
	uint8_t cls = (uint8_t)sl_config_class(&e->cfg, "residential");
	uint64_t t0;
	struct conn c;
	struct view v;
	char what[96];
	bool ok;
	int i, ra;

	if (!rb) {
		tap(false, "event ring opens");
		return;
	}
	ring_buffer__consume(rb); /* what earlier tests produced */
	ring_buffer__free(rb);
	memset(&l, 0, sizeof(l));
	rb = ring_buffer__new(e->maps.events, log_event, &l, NULL);
	t0 = sl_now_ns();
	for (i = 0; i < 7; i++) {
		snprintf(what, sizeof(what), "events: request %d from 203.0.113.150 to a drop port",
			 i + 1);
		req_from(e, what, "203.0.113.150", NULL, 80, NULL, i < 4 ? XDP_PASS : XDP_DROP,
			 i < 4 ? "residential/first_admitted" : "residential/shed_prefix");
	}
	for (i = 0; i < 4; i++)
		req_from(e, "events: spend 203.0.113.151", "203.0.113.151", NULL, 8080, NULL,
			 XDP_PASS, "residential/first_admitted");
	c = conn_of("203.0.113.151", 8080, 0);
	first_request(e, &c, "events: a 429", NULL, XDP_TX,
		      "residential/shed_prefix+residential/replied_429", &v);
	ra = ra_of(&v);
	ring_buffer__consume(rb);
	ring_buffer__free(rb);
	ok = l.n == 5;
	for (i = 0; i < 3 && ok; i++)
		ok = ev_is(&l.ev[i], SL_R_SHED_PREFIX, SL_ACT_DROP, 150, 80, 0, cls) &&
		     l.ev[i].ts_ns >= t0 && l.ev[i].ts_ns <= sl_now_ns();
	tap(ok, "event_sample = 1: each of the 3 drops is one event (shed_prefix, drop, its /32, "
	    "port 80); SYNs and admissions none (%d events)", l.n);
	tap(l.n == 5 && ev_is(&l.ev[3], SL_R_SHED_PREFIX, SL_ACT_REPLY, 151, 8080, 0, cls) &&
	    ev_is(&l.ev[4], SL_R_REPLIED_429, SL_ACT_REPLY, 151, 8080, ra, cls),
	    "a 429 is its shed event and a replied_429 event carrying its Retry-After (%d)", ra);
}

/* ---- the SYN front's reply port ------------------------------------------------------------ */

static void syn_front_reply(struct env *e)
{
	struct conn c = conn_of("203.0.113.40", 8081, 1), c2 = conn_of("203.0.113.40", 8081, 0);
	struct synack_want w = { 1, 6, 8, 1, 0 };
	struct sl_bkey k;
	struct sl_bucket b;
	uint8_t in[SEG_MAX], o[40];
	__u64 T = sl_gcra_emission(0.001), tat;
	size_t len;
	struct view v;
	uint32_t done = c.isn + 1 + (uint32_t)strlen(request);

	/* The SYN front weighs a SYN without charging: a bucket already empty sheds it. */
	bucket_of(e, "203.0.113.40", 32, SL_LEVEL_PREFIX, "residential", &k, &b);
	b.tat = tat = sl_now_ns() + sl_gcra_tolerance(4.0, T);
	sl_maps_write_bucket(&e->maps, &k, &b, 0);

	w.tsecr = c.tsval;
	len = seg_raw(&c, F_SYN, c.isn, 0, o, syn_opts(SO_ALL, 1460, c.tsval, o), NULL, 0, in);
	step(e, "SYN front reply port, empty bucket: the SYN gets our cookie SYN-ACK", in, len,
	     XDP_TX, "residential/shed_prefix", &v);
	check_synack(e, &c, "SYN front reply port SYN-ACK", &v, len, &w);
	tap(synacks_moved() == 1, "SYN front reply port: counted in synacks");
	step(e, "SYN front reply port: the bare handshake ACK is dropped", in,
	     seg(&c, F_ACK, c.isn + 1, c.iss + 1, NULL, in), XDP_DROP, "none/cookie_ack", NULL);
	step(e, "SYN front reply port: the first request", in,
	     seg(&c, F_ACK | 0x08, c.isn + 1, c.iss + 1, request, in), XDP_TX,
	     "residential/shed_prefix+residential/replied_429", &v);
	check_429(&c, "SYN front reply port: the 429", &v, strlen(request), 0);
	bucket_of(e, "203.0.113.40", 32, SL_LEVEL_PREFIX, "residential", &k, &b);
	tap(b.tat == tat, "SYN front reply port: the 429 charged nothing (TAT unchanged)");
	step(e, "SYN front reply port: the client's ACK of the 429 is absorbed", in,
	     seg(&c, F_ACK, done, c.iss + 97, NULL, in), XDP_DROP, "none/cookie_drop", NULL);
	step(e, "SYN front reply port: the client's FIN", in,
	     seg(&c, F_ACK | F_FIN, done, c.iss + 97, NULL, in), XDP_TX, "none/cookie_fin", &v);
	check_bare(&c, "SYN front reply port: the FIN's ACK", &v, F_ACK, c.iss + 97, done + 1,
		   c.our_ts, c.tsval);

	c = conn_of("203.0.113.40", 81, 0);
	step(e, "SYN front drop port, empty bucket: the SYN is dropped", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_DROP,
	     "residential/shed_prefix", NULL);

	/* A connection shed at its SYN stays shed: there is no hand-off on this front. */
	step(e, "SYN front reply port: another SYN while the bucket is empty", in,
	     seg_raw(&c2, F_SYN, c2.isn, 0, NULL, 0, NULL, 0, in), XDP_TX,
	     "residential/shed_prefix", &v);
	c2.iss = v.seq;
	c2.open = 1;
	bucket_of(e, "203.0.113.40", 32, SL_LEVEL_PREFIX, "residential", &k, &b);
	b.tat = 1;
	sl_maps_write_bucket(&e->maps, &k, &b, 0);
	step(e, "SYN front reply port: its request, once the bucket refilled, still gets the 429",
	     in, seg(&c2, F_ACK | 0x08, c2.isn + 1, c2.iss + 1, request, in), XDP_TX,
	     "residential/shed_prefix+residential/replied_429", &v);
	bucket_of(e, "203.0.113.40", 32, SL_LEVEL_PREFIX, "residential", &k, &b);
	tap(ra_of(&v) >= 1 && b.tat == 1, "... a well-formed 429 that charged nothing (TAT %llu)",
	    (unsigned long long)b.tat);
	c = conn_of("203.0.113.40", 8081, 0);
	step(e, "SYN front reply port, room: the SYN goes to the kernel, uncharged", in,
	     seg_raw(&c, F_SYN, c.isn, 0, NULL, 0, NULL, 0, in), XDP_PASS,
	     "residential/syn_peeked", NULL);
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
	ret = env_open(&e, conf(60), asn_csv);
	if (ret == -EBADMSG) {
		printf("Bail out! the fixture config does not load\n");
		return 1;
	}
	if (ret) {
		printf("1..0 # SKIP cannot load the XDP object here: %s\n", strerror(-ret));
		env_close(&e);
		return 0;
	}
	synacks(&e);
	conversation(&e, 4, 0);
	conversation(&e, 4, 1);
	conversation(&e, 6, 0);
	conversation(&e, 6, 1);
	request_with_fin(&e);
	fin_after_handshake(&e);
	drop_port(&e);
	no_answer_without_a_cookie(&e);
	martians(&e);
	tenants(&e);
	escalation_prefix(&e);
	escalation_parent(&e);
	escalation_tenant(&e);
	key_rotation(&e);
	verdicts(&e);
	events(&e);
	syn_front_reply(&e);
	env_close(&e);
	decay_one_second();
	printf("1..%d\n", n_test);
	return n_fail ? 1 : 0;
}
