// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * BPF_PROG_TEST_RUN fixtures for what the edge says back: the cookie SYN-ACK, the 429, the ACK
 * of the client's FIN, and everything that must get no answer at all. Every reply is parsed
 * byte by byte, both checksums are recomputed here from scratch, the cookie is checked with
 * the same header the datapath uses, and the Retry-After digits are held to their jitter band.
 * Also: tenant budgets, verdicts, key rotation and the event ring.
 */
#include "bpfenv.h"

#include "sluice/cookie.h"

#define CONF                                                                                 \
	"edge: { interfaces = [\"lo\"];\n"                                                   \
	"  ports = ( { port = 80; cost = 1; }, { port = 8080; action = \"reply\"; cost = 1; } );\n" \
	"  state_entries = 4096; new_key_credit = 1.0; event_sample = 1; };\n"                \
	"classes = (\n"                                                                      \
	"  { name = \"hosting\"; v4_prefix = 24; v6_prefix = 48; v4_parent = 16; v6_parent = 32;\n" \
	"    rate = 0.001; burst = 1.0; parent_rate = 0.001; parent_burst = 1000.0; },\n"     \
	"  { name = \"residential\"; rate = 0.001; burst = 4.0; parent_rate = 0.001;\n"      \
	"    parent_burst = 1000.0; },\n"                                                    \
	"  { name = \"unknown\"; rate = 0.001; burst = 4.0; parent_burst = 1000.0; }\n"      \
	");\n"                                                                               \
	"tenants = (\n"                                                                      \
	"  { name = \"acme\"; listen = [\"10.0.0.2:80\"]; rate = 0.001; burst = 3.0;\n"     \
	"    static_rate = 0.001; static_burst = 1.0; lease_ttl = 3600; },\n"                \
	"  { name = \"beta\"; listen = [\"10.0.0.3:80\", \"[2001:db8:ffff::3]:80\"];\n"      \
	"    rate = 0.001; burst = 10.0; static_rate = 0.001; static_burst = 1.0;\n"         \
	"    lease_ttl = 3600; },\n"                                                         \
	"  { name = \"gamma\"; listen = [\"10.0.0.4:80\"]; rate = 0.001; burst = 1.0;\n"     \
	"    mode = \"monitor\"; lease_ttl = 3600; }\n"                                      \
	");\n"

static const char *asn_csv =
	"198.51.0.0/16,64500,hosting\n"
	"2001:db8:1000::/36,64500,hosting\n"
	"203.0.113.0/24,64501,residential\n";

static const uint8_t client_mac[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x01 };
static const char *request = "GET /login HTTP/1.1\r\nHost: idp.example\r\n\r\n";

/* ---- parsing and checking a reply ---------------------------------------------------- */

struct view {
	int ok;
	uint8_t dmac[6], smac[6];
	int n_vlan;
	int family;
	uint8_t saddr[16], daddr[16];
	uint8_t ttl;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	int doff;
	const uint8_t *opts;
	int optlen;
	const uint8_t *payload;
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

/* Parse @f and recompute both checksums over what is actually there. */
static struct view parse_reply(const uint8_t *f, size_t len)
{
	struct view v = { 0 };
	size_t off = 12, l4, tcplen;
	uint16_t et;

	memcpy(v.dmac, f, 6);
	memcpy(v.smac, f + 6, 6);
	et = (uint16_t)(f[off] << 8 | f[off + 1]);
	while (et == ETH_P_8021Q || et == ETH_P_8021AD) {
		v.n_vlan++;
		off += 4;
		et = (uint16_t)(f[off] << 8 | f[off + 1]);
	}
	off += 2;
	if (et == ETH_P_IP) {
		size_t ihl = (size_t)(f[off] & 15) * 4, tot = (size_t)(f[off + 2] << 8 | f[off + 3]);
		uint32_t ps = 0;

		v.family = 4;
		v.ttl = f[off + 8];
		memcpy(v.saddr, f + off + 12, 4);
		memcpy(v.daddr, f + off + 16, 4);
		v.ip_csum_ok = fold(sum16(f + off, ihl, 0)) == 0;
		l4 = off + ihl;
		if (off + tot != len)
			return v; /* the IP length must cover the frame exactly */
		tcplen = tot - ihl;
		ps = sum16(v.saddr, 4, ps);
		ps = sum16(v.daddr, 4, ps);
		ps += IPPROTO_TCP + (uint32_t)tcplen;
		v.tcp_csum_ok = fold(sum16(f + l4, tcplen, ps)) == 0;
	} else if (et == ETH_P_IPV6) {
		size_t plen = (size_t)(f[off + 4] << 8 | f[off + 5]);
		uint32_t ps = 0;

		v.family = 6;
		v.ttl = f[off + 7];
		if (f[off + 6] != IPPROTO_TCP)
			return v;
		memcpy(v.saddr, f + off + 8, 16);
		memcpy(v.daddr, f + off + 24, 16);
		v.ip_csum_ok = 1; /* IPv6 has none */
		l4 = off + 40;
		if (l4 + plen != len)
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
	v.seq = ntohl(*(const uint32_t *)(f + l4 + 4));
	v.ack = ntohl(*(const uint32_t *)(f + l4 + 8));
	v.doff = f[l4 + 12] >> 4;
	v.flags = f[l4 + 13];
	v.opts = f + l4 + 20;
	v.optlen = v.doff * 4 - 20;
	v.payload = f + l4 + (size_t)v.doff * 4;
	v.paylen = (int)(tcplen - (size_t)v.doff * 4);
	v.ok = 1;
	return v;
}

static int opt_find(const struct view *v, uint8_t kind, const uint8_t **val)
{
	int i = 0;

	while (i < v->optlen) {
		uint8_t k = v->opts[i];

		if (k == 0)
			break;
		if (k == 1) {
			i++;
			continue;
		}
		if (k == kind) {
			*val = v->opts + i + 2;
			return v->opts[i + 1];
		}
		i += v->opts[i + 1] ? v->opts[i + 1] : 1;
	}
	return 0;
}

/* ---- sending segments --------------------------------------------------------------- */

struct conn {
	int family;
	const char *src, *dst;
	uint16_t sport, dport;
	uint32_t isn, cookie;
	int n_vlan;
};

static size_t build(const struct conn *c, uint8_t flags, uint32_t seq, uint32_t ack,
		    const char *data, int opts, uint8_t *buf)
{
	struct fspec f = { .family = c->family, .src = c->src, .dst = c->dst, .sport = c->sport,
			   .dport = c->dport, .flags = flags, .seq = seq, .ack = ack, .data = data,
			   .tcp_opts = opts, .vlans = c->n_vlan, .smac = client_mac };

	return build_frame(&f, buf).len;
}

static int counter_delta(struct env *e, const struct sl_counters *before, unsigned int reason)
{
	struct sl_counters after[SL_STATS_ROWS];
	long d = 0;
	int r;

	sl_maps_read_stats(&e->maps, after);
	for (r = 0; r < SL_STATS_ROWS; r++)
		d += (long)(after[r].pkts[reason] - before[r].pkts[reason]);
	return (int)d;
}

static bool same_addr(const struct view *v, const uint8_t *want, const char *str)
{
	uint8_t a[16] = { 0 };

	inet_pton(v->family == 4 ? AF_INET : AF_INET6, str, a);
	return !memcmp(want, a, v->family == 4 ? 4 : 16);
}

/* SYN -> cookie SYN-ACK, checked field by field. Stores the cookie in @c. */
static bool synack(struct env *e, struct conn *c, const char *what, bool want_ws_sack)
{
	uint8_t in[512], out[1024];
	size_t len = build(c, F_SYN, c->isn, 0, NULL, want_ws_sack ? 2 : 0, in), olen = 0;
	struct sl_counters before[SL_STATS_ROWS];
	struct sl_cookie_keys keys;
	struct sl_cookie_opts o = { 0xff, 0xff, 0xff };
	struct sl_conn_id id = { 0 };
	struct view v;
	const uint8_t *val;
	__u32 zero = 0;
	int act, mss_len;
	bool ok = true;

	sl_maps_read_stats(&e->maps, before);
	act = run_out(e, in, len, out, &olen);
	v = parse_reply(out, olen);
	c->cookie = v.seq;
	bpf_map_lookup_elem(e->maps.cookie_keys, &zero, &keys);
	id.family = c->family == 4 ? SL_FAM_V4 : SL_FAM_V6;
	id.sport = c->sport;
	id.dport = c->dport;
	id.isn = c->isn;
	inet_pton(c->family == 4 ? AF_INET : AF_INET6, c->src, id.saddr);
	inet_pton(c->family == 4 ? AF_INET : AF_INET6, c->dst, id.daddr);

	tap(act == XDP_TX, "%s: XDP_TX", what);
	ok &= act == XDP_TX;
	tap(v.ok && v.ip_csum_ok && v.tcp_csum_ok, "%s: parses, IP and TCP checksums recompute",
	    what);
	tap(!memcmp(v.dmac, client_mac, 6), "%s: sent back to the client's MAC", what);
	tap(v.n_vlan == c->n_vlan, "%s: keeps %d VLAN tag(s)", what, c->n_vlan);
	tap(same_addr(&v, v.saddr, c->dst) && same_addr(&v, v.daddr, c->src) &&
	    v.sport == c->dport && v.dport == c->sport, "%s: addresses and ports swapped", what);
	tap(v.flags == 0x12 && v.ack == c->isn + 1 && v.paylen == 0 && v.ttl == 64,
	    "%s: SYN|ACK, ack = ISN + 1, no payload, TTL 64 (flags %#x ack %u)", what, v.flags,
	    v.ack);
	tap(sl_cookie_check(&id, v.seq, sl_now_ns(), &keys, &o),
	    "%s: its sequence number is a valid cookie for this connection", what);
	mss_len = opt_find(&v, 2, &val);
	tap(mss_len == 4 && (val[0] << 8 | val[1]) == (c->family == 4 ? 1460 : 1440),
	    "%s: announces MSS %d", what, c->family == 4 ? 1460 : 1440);
	if (want_ws_sack) {
		tap(o.mss_idx == 6 && o.wscale == 8 && o.sack == 1,
		    "%s: the cookie carries MSS 1460, window scale 7, SACK (%u/%u/%u)", what,
		    o.mss_idx, o.wscale, o.sack);
		tap(opt_find(&v, 4, &val) == 2 && opt_find(&v, 3, &val) == 3 && val[0] == 7,
		    "%s: announces SACK-permitted and window scale 7", what);
	} else {
		tap(o.mss_idx == 0 && o.wscale == 0 && o.sack == 0,
		    "%s: a SYN without options gets MSS 536, no scaling, no SACK", what);
		tap(opt_find(&v, 4, &val) == 0 && opt_find(&v, 3, &val) == 0,
		    "%s: and announces neither SACK nor window scaling", what);
	}
	tap(olen <= len + 92, "%s: no amplification (%zu bytes for %zu)", what, olen, len);
	tap(counter_delta(e, before, SL_R_SHED_PREFIX) + counter_delta(e, before, SL_R_SHED_PARENT) +
	    counter_delta(e, before, SL_R_SHED_VERDICT) == 1, "%s: counted as shed", what);
	return ok;
}

/* The first request: one 429 with FIN. Returns the Retry-After, or -1. */
static int http429(struct env *e, const struct conn *c, const char *what)
{
	uint8_t in[512], out[1024];
	size_t len = build(c, F_ACK | 0x08, c->isn + 1, c->cookie + 1, request, 0, in), olen = 0;
	struct sl_counters before[SL_STATS_ROWS];
	char body[128], *ra;
	struct view v;
	int act, secs = -1;

	sl_maps_read_stats(&e->maps, before);
	act = run_out(e, in, len, out, &olen);
	v = parse_reply(out, olen);
	tap(act == XDP_TX && v.ok && v.ip_csum_ok && v.tcp_csum_ok,
	    "%s: XDP_TX, checksums recompute", what);
	tap(v.flags == 0x19 && v.seq == c->cookie + 1 &&
	    v.ack == c->isn + 1 + (uint32_t)strlen(request),
	    "%s: FIN|PSH|ACK, seq = cookie + 1, ack covers the request (flags %#x)", what, v.flags);
	if (v.ok && v.paylen > 0 && v.paylen < (int)sizeof(body)) {
		memcpy(body, v.payload, (size_t)v.paylen);
		body[v.paylen] = '\0';
	} else {
		body[0] = '\0';
	}
	tap(v.paylen == 92 && !strncmp(body, "HTTP/1.1 429 Too Many Requests\r\n", 32) &&
	    strstr(body, "\r\nContent-Length: 0\r\n") && strstr(body, "\r\nConnection: close\r\n") &&
	    !strcmp(body + v.paylen - 4, "\r\n\r\n"),
	    "%s: one 92-byte HTTP/1.1 429 with Content-Length 0 and Connection close", what);
	ra = strstr(body, "\r\nRetry-After: ");
	if (ra)
		secs = atoi(ra + 15);
	tap(counter_delta(e, before, SL_R_REPLIED_429) == 1, "%s: counted as replied_429", what);
	tap(olen <= len + 92, "%s: no larger than the request plus the 429 (%zu <= %zu + 92)", what,
	    olen, len);
	return secs;
}

static int send_expect(struct env *e, const struct conn *c, uint8_t flags, uint32_t seq,
		       uint32_t ack, const char *data, unsigned int reason, struct view *v)
{
	uint8_t in[512], out[1024];
	size_t len = build(c, flags, seq, ack, data, 0, in), olen = 0;
	struct sl_counters before[SL_STATS_ROWS];
	int act;

	sl_maps_read_stats(&e->maps, before);
	act = run_out(e, in, len, out, &olen);
	if (v)
		*v = parse_reply(out, olen);
	if (counter_delta(e, before, reason) != 1)
		return -2;
	return act;
}

/* ---- the conversation --------------------------------------------------------------- */

static void conversation(struct env *e, int family)
{
	struct conn c = { .family = family, .dport = 8080, .sport = 41000, .isn = 0x11223344 };
	struct conn first = c;
	struct view v;
	char what[64];
	uint32_t done;
	int act, ra;

	c.src = family == 4 ? "198.51.100.9" : "2001:db8:1000::9";
	c.dst = family == 4 ? "10.0.0.2" : "2001:db8:ffff::2";
	first = c;
	first.sport = 40999;
	/* The hosting /24 (or /48) has a burst of one: the first SYN goes to the kernel. */
	act = send_expect(e, &first, F_SYN, 7, 0, NULL, SL_R_PASSED, NULL);
	tap(act == XDP_PASS, "IPv%d: the first SYN of a fresh prefix is admitted (XDP_PASS)",
	    family);

	snprintf(what, sizeof(what), "IPv%d SYN", family);
	synack(e, &c, what, true);

	act = send_expect(e, &c, F_ACK, c.isn + 1, c.cookie + 1, NULL, SL_R_COOKIE_ACK, NULL);
	tap(act == XDP_DROP, "IPv%d: the bare handshake ACK is dropped (cookie_ack)", family);

	snprintf(what, sizeof(what), "IPv%d request", family);
	ra = http429(e, &c, what);
	tap(ra == 1, "IPv%d: the first 429 says Retry-After: 1 (got %d)", family, ra);

	done = c.isn + 1 + (uint32_t)strlen(request);
	act = send_expect(e, &c, F_ACK | 0x08, done, c.cookie + 1, "more body", SL_R_COOKIE_DROP,
			  NULL);
	tap(act == XDP_DROP, "IPv%d: a later segment of the shed request is dropped, not "
	    "answered (cookie_drop)", family);

	act = send_expect(e, &c, F_ACK, done, c.cookie + 94, NULL, SL_R_COOKIE_DROP, NULL);
	tap(act == XDP_DROP, "IPv%d: the client's ACK of our FIN is dropped", family);

	act = send_expect(e, &c, F_ACK | F_FIN, done, c.cookie + 94, NULL, SL_R_COOKIE_FIN, &v);
	tap(act == XDP_TX && v.ok && v.tcp_csum_ok && v.flags == 0x10 &&
	    v.seq == c.cookie + 94 && v.ack == done + 1 && v.paylen == 0,
	    "IPv%d: the client's FIN gets a bare ACK (seq cookie + 94, ack FIN + 1)", family);

	act = send_expect(e, &c, F_RST | F_ACK, done + 1, c.cookie + 94, NULL, SL_R_COOKIE_DROP,
			  NULL);
	tap(act == XDP_DROP, "IPv%d: a reset of the shed connection is dropped", family);
}

static void no_answer_without_a_cookie(struct env *e)
{
	struct conn c = { .family = 4, .src = "198.51.100.10", .dst = "10.0.0.2", .dport = 8080,
			  .sport = 42000, .isn = 5000 };
	int act;

	synack(e, &c, "SYN for forgery tests", false);
	/* Flip one MAC bit (bit 4): marker and slot still match, the MAC does not. */
	act = send_expect(e, &c, F_ACK | 0x08, c.isn + 1, (c.cookie ^ 0x10) + 1, request,
			  SL_R_COOKIE_BAD, NULL);
	tap(act == XDP_DROP, "a request with a forged cookie and no socket: dropped, no 429, "
	    "and no reset from the kernel either");
	act = send_expect(e, &c, F_ACK | 0x08, c.isn + 5, c.cookie + 1, request, SL_R_COOKIE_BAD,
			  NULL);
	tap(act == XDP_DROP, "a segment that is not the first request gets no 429");
	{
		/* An ack whose marker is no live key's: how 15 in 16 segments of ordinary
		 * connections look. (The sixteenth is told apart by a socket lookup.) */
		struct sl_cookie_keys k;
		__u32 zero = 0, m;

		bpf_map_lookup_elem(e->maps.cookie_keys, &zero, &k);
		for (m = 0; m < 16; m++)
			if (m != k.cur_marker && m != k.prev_marker)
				break;
		act = send_expect(e, &c, F_ACK, c.isn + 1, (0x12345670 | m) + 1, NULL,
				  SL_R_NOT_SYN, NULL);
		tap(act == XDP_PASS, "an ordinary ACK on the reply port passes untouched");
	}
	act = send_expect(e, &c, F_RST | F_ACK, c.isn + 1, c.cookie + 1, NULL, SL_R_COOKIE_DROP,
			  NULL);
	tap(act == XDP_DROP, "a reset right after the SYN-ACK is dropped");
}

static void vlan_replies(struct env *e)
{
	struct conn c = { .family = 4, .src = "198.51.100.11", .dst = "10.0.0.2", .dport = 8080,
			  .sport = 43000, .isn = 77, .n_vlan = 2 };

	synack(e, &c, "QinQ SYN", true);
	http429(e, &c, "QinQ request");
}

static void escalation(struct env *e)
{
	static const int lo[] = { 1, 4, 24, 96, 96 }, hi[] = { 1, 6, 36, 144, 144 };
	struct sl_prefix a;
	struct sl_bkey k;
	struct sl_bucket b;
	char err[64];
	int i, ra;

	/* Spend the fresh /24's burst of one. */
	send_expect(e, &(struct conn){ .family = 4, .src = "198.51.120.19", .dst = "10.0.0.2",
				       .dport = 8080, .sport = 43999, .isn = 5 },
		    F_SYN, 5, 0, NULL, SL_R_PASSED, NULL);
	for (i = 0; i < 5; i++) {
		struct conn c = { .family = 4, .src = "198.51.120.20", .dst = "10.0.0.2",
				  .dport = 8080, .sport = (uint16_t)(44000 + i), .isn = 900 + i };
		char what[64];

		snprintf(what, sizeof(what), "escalation %d: SYN", i + 1);
		synack(e, &c, what, false);
		snprintf(what, sizeof(what), "escalation %d: request", i + 1);
		ra = http429(e, &c, what);
		tap(ra >= lo[i] && ra <= hi[i], "shed %d in a row: Retry-After %d within %d..%d",
		    i + 1, ra, lo[i], hi[i]);
	}
	/* A quiet period longer than streak_decay (60 s) starts the ladder over. */
	sl_prefix_parse("198.51.120.20", &a, 0, err, sizeof(err));
	sl_bkey_make(&k, &a, 24, SL_LEVEL_PREFIX, (uint8_t)sl_config_class(&e->cfg, "hosting"));
	if (!sl_maps_lookup_bucket(&e->maps, &k, &b)) {
		struct conn c = { .family = 4, .src = "198.51.120.21", .dst = "10.0.0.2",
				  .dport = 8080, .sport = 44100, .isn = 1000 };

		b.last_shed_s -= 120;
		bpf_map_update_elem(e->maps.buckets, &k, &b, BPF_ANY);
		synack(e, &c, "after a quiet period: SYN", false);
		ra = http429(e, &c, "after a quiet period: request");
		tap(ra == 1, "after a quiet period the ladder starts over: Retry-After %d", ra);
	} else {
		tap(false, "the escalating prefix has a bucket");
	}
}

static void key_rotation(struct env *e)
{
	struct conn c = { .family = 4, .src = "198.51.100.30", .dst = "10.0.0.2", .dport = 8080,
			  .sport = 45000, .isn = 31337 };
	struct sl_cookie_keys k;
	__u32 zero = 0;
	int act;

	synack(e, &c, "before rotation: SYN", false);
	tap(sl_maps_cookie_keys(&e->maps, 1, 3600) == 1, "the controller rotates the cookie key");
	http429(e, &c, "a cookie made under the previous key still gets its 429");
	c.sport++;
	synack(e, &c, "before the previous key expires: SYN", false);
	sl_maps_cookie_keys(&e->maps, 1, 3600); /* its key is now the previous one */
	bpf_map_lookup_elem(e->maps.cookie_keys, &zero, &k);
	k.prev_until_ns = 1; /* ... and past its last slot */
	bpf_map_update_elem(e->maps.cookie_keys, &zero, &k, BPF_ANY);
	{
		struct sl_counters before[SL_STATS_ROWS];
		uint8_t in[512];
		size_t len = build(&c, F_ACK | 0x08, c.isn + 1, c.cookie + 1, request, 0, in);

		/* Its marker may or may not match a live key: either way, no 429. */
		sl_maps_read_stats(&e->maps, before);
		act = run(e, in, len);
		tap(act != XDP_TX && counter_delta(e, before, SL_R_REPLIED_429) == 0,
		    "a cookie of a key older than one rotation gets no 429");
	}
}

/* ---- tenants, verdicts, events --------------------------------------------------------- */

static int syn_to(struct env *e, const char *src, const char *dst, uint16_t dport,
		  unsigned int reason)
{
	struct conn c = { .family = strchr(src, ':') ? 6 : 4, .src = src, .dst = dst,
			  .dport = dport, .sport = 46000, .isn = 1 };

	return send_expect(e, &c, F_SYN, 1, 0, NULL, reason, NULL);
}

static void tenants(struct env *e)
{
	struct sl_tenant t;
	char src[32];
	__u32 id = 1;
	int i, act;

	for (i = 1; i <= 4; i++) {
		snprintf(src, sizeof(src), "203.0.113.%d", i);
		act = syn_to(e, src, "10.0.0.2", 80, i <= 3 ? SL_R_PASSED : SL_R_SHED_TENANT);
		tap(act == (i <= 3 ? XDP_PASS : XDP_DROP),
		    "tenant acme (burst 3): SYN %d from its own /32 -> %s", i,
		    i <= 3 ? "pass" : "shed_tenant");
	}
	act = syn_to(e, "203.0.113.4", "10.0.0.9", 80, SL_R_PASSED);
	tap(act == XDP_PASS, "the source shed by the tenant kept its own budget, and another "
	    "destination is no tenant's");

	/* beta's lease expires: the datapath falls back to its static burst of 1 by itself. */
	bpf_map_lookup_elem(e->maps.tenants, &id, &t);
	t.lease_expires_ns = 1;
	bpf_map_update_elem(e->maps.tenants, &id, &t, BPF_ANY);
	act = syn_to(e, "203.0.113.50", "10.0.0.3", 80, SL_R_PASSED);
	tap(act == XDP_PASS, "expired lease: the static fallback admits its burst of one");
	act = syn_to(e, "203.0.113.51", "10.0.0.3", 80, SL_R_SHED_TENANT);
	tap(act == XDP_DROP, "expired lease: the second SYN is shed at the static rate");
	act = syn_to(e, "2001:db8:2000::1", "2001:db8:ffff::3", 80, SL_R_SHED_TENANT);
	tap(act == XDP_DROP, "the tenant's IPv6 address shares its budget");
	{
		uint64_t before[SL_MAX_TENANTS], after[SL_MAX_TENANTS];

		sl_maps_read_demand(&e->maps, before);
		sl_maps_set_lease(&e->maps, id, e->cfg.tenants[id].rate, e->cfg.tenants[id].burst,
				  sl_now_ns() + 3000000000ull, NULL);
		act = syn_to(e, "203.0.113.52", "10.0.0.3", 80, SL_R_PASSED);
		tap(act == XDP_PASS, "a renewed lease restores the leased burst");
		sl_maps_read_demand(&e->maps, after);
		tap(after[id] - before[id] == e->cfg.ports[0].cost,
		    "the tenant's demand counter grew by the SYN's cost (%llu)",
		    (unsigned long long)(after[id] - before[id]));
	}

	act = syn_to(e, "203.0.113.60", "10.0.0.4", 80, SL_R_PASSED);
	act = syn_to(e, "203.0.113.61", "10.0.0.4", 80, SL_R_WOULD_SHED_TENANT);
	tap(act == XDP_PASS, "a monitor-mode tenant passes and counts would_shed_tenant");
}

static void verdicts(struct env *e)
{
	struct sl_verdict v = { 0 };
	struct sl_prefix p;
	char err[64];
	int act;

	sl_prefix_parse("203.0.113.128/25", &p, 1, err, sizeof(err));
	v.action = SL_VERDICT_BLOCK;
	v.expires_ns = sl_now_ns() + 60000000000ull;
	snprintf(v.reason, sizeof(v.reason), "fixture block");
	sl_maps_verdict_put(&e->maps, &p, &v);
	act = syn_to(e, "203.0.113.200", "10.0.0.9", 8080, SL_R_SHED_VERDICT);
	tap(act == XDP_DROP, "block verdict: dropped even on a reply port, no SYN-ACK");

	sl_prefix_parse("203.0.113.64/27", &p, 1, err, sizeof(err));
	v.action = SL_VERDICT_REPLY;
	sl_maps_verdict_put(&e->maps, &p, &v);
	act = syn_to(e, "203.0.113.70", "10.0.0.9", 8080, SL_R_SHED_VERDICT);
	tap(act == XDP_TX, "reply verdict: a SYN-ACK on a reply port");
	act = syn_to(e, "203.0.113.71", "10.0.0.9", 80, SL_R_SHED_VERDICT);
	tap(act == XDP_DROP, "reply verdict: dropped on a drop port");

	sl_prefix_parse("203.0.113.96/27", &p, 1, err, sizeof(err));
	v.action = SL_VERDICT_TIGHTEN;
	v.factor = 500;
	sl_maps_verdict_put(&e->maps, &p, &v);
	act = syn_to(e, "203.0.113.100", "10.0.0.9", 80, SL_R_PASSED);
	act = syn_to(e, "203.0.113.100", "10.0.0.9", 80, SL_R_PASSED);
	act = syn_to(e, "203.0.113.100", "10.0.0.9", 80, SL_R_SHED_PREFIX);
	tap(act == XDP_DROP, "tighten 0.5: a burst of 4 admits 2");

	sl_prefix_parse("203.0.113.32/27", &p, 1, err, sizeof(err));
	v.action = SL_VERDICT_BLOCK;
	v.expires_ns = sl_now_ns() - 1;
	bpf_map_update_elem(e->maps.verdicts, &(struct sl_lpm_key){ .prefixlen = 96 + 27,
			    .addr = { [10] = 0xff, [11] = 0xff, 203, 0, 113, 32 } }, &v, BPF_ANY);
	act = syn_to(e, "203.0.113.33", "10.0.0.9", 80, SL_R_PASSED);
	tap(act == XDP_PASS, "an expired verdict stops applying before anyone sweeps it");
	tap(sl_maps_verdict_sweep(&e->maps, &(uint32_t){ 0 }) == 1,
	    "the controller's sweep removes exactly the expired verdict");

	sl_prefix_parse("203.0.113.128/25", &p, 1, err, sizeof(err));
	sl_maps_verdict_del(&e->maps, &p);
	act = syn_to(e, "203.0.113.201", "10.0.0.9", 8080, SL_R_PASSED);
	tap(act == XDP_PASS, "a deleted verdict no longer applies");
}

static int count_event(void *ctx, void *data, size_t len)
{
	const struct sl_event *ev = data;
	int *n = ctx;

	if (len >= sizeof(*ev) && ev->reason == SL_R_SHED_PREFIX && ev->dport == 80 &&
	    ev->plen == 32 && ev->addr[0] == 203 && ev->addr[3] == 150)
		(*n)++;
	return 0;
}

static void events(struct env *e)
{
	struct ring_buffer *rb = ring_buffer__new(e->maps.events, count_event, NULL, NULL);
	int i, n = 0;

	if (!rb) {
		tap(false, "event ring opens");
		return;
	}
	ring_buffer__consume(rb); /* drop what earlier tests produced */
	ring_buffer__free(rb);
	rb = ring_buffer__new(e->maps.events, count_event, &n, NULL);
	for (i = 0; i < 7; i++)
		syn_to(e, "203.0.113.150", "10.0.0.9", 80, i < 4 ? SL_R_PASSED : SL_R_SHED_PREFIX);
	ring_buffer__consume(rb);
	ring_buffer__free(rb);
	tap(n == 3, "event_sample = 1: every shed SYN is an event with its /32 and port (%d)", n);
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
	ret = env_open(&e, CONF, asn_csv);
	if (ret == -EBADMSG) {
		printf("Bail out! the fixture config does not load\n");
		return 1;
	}
	if (ret) {
		printf("1..0 # SKIP cannot load the XDP object here: %s\n", strerror(-ret));
		env_close(&e);
		return 0;
	}
	conversation(&e, 4);
	conversation(&e, 6);
	no_answer_without_a_cookie(&e);
	vlan_replies(&e);
	escalation(&e);
	key_rotation(&e);
	tenants(&e);
	verdicts(&e);
	events(&e);
	env_close(&e);
	printf("1..%d\n", n_test);
	return n_fail ? 1 : 0;
}
