// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A BPF_PROG_TEST_RUN fuzzer for the edge datapath (issue 13). The real object is loaded
 * unpinned twice, once with buckets that have room and once with buckets so small that
 * nearly every SYN and first request is shed (and so answered on a reply port), and each is
 * fed a bounded number of frames of six kinds:
 *
 *   random      random bytes of a random length, 0..1600
 *   random-l3   random bytes behind a real EtherType (IPv4, IPv6, 802.1Q, 802.1ad)
 *   struct      built frames: 0..3 VLAN tags; IPv4 with options, fragments, bad IHL or total
 *               length; IPv6 behind 0..24 extension headers (hop-by-hop, routing, destination
 *               options, AH, fragment), truncated chains; TCP with any flags (SYN|FIN,
 *               SYN|RST, a SYN with data), any data offset and options, HTTP requests and TLS
 *               ClientHellos as payload; UDP (DNS); addresses drawn often from the martian
 *               sets, multicast and broadcast MACs
 *   cookie      built TCP segments that carry a valid cookie (made with the installation's
 *               key): the steps of a conversation with the SYN-ACK, 429 and FIN paths
 *   mutated     a struct or cookie frame after bit flips, byte writes, truncation, byte
 *               insertion and deletion
 *   replay      a cookie first request sent again (a retransmission)
 *
 * and every run is checked against the invariants below; the output is one TAP line per
 * invariant, with the first frames that broke it (seed, iteration, a description, hex).
 *
 *   SL_FUZZ_SEED   the seed (default: a fresh one, printed)
 *   SL_FUZZ_ITERS  frames in all, half per configuration (default 200000)
 *   SL_FUZZ_MAX_S  a wall-clock bound in seconds (default 25): stop early, and say so
 *   SL_FUZZ_SHOW   failing frames printed per invariant (default 3; the martian invariant
 *                  prints the first of each martian set)
 */
#include "bpfenv.h"

#include <inttypes.h>
#include <sys/random.h>
#include <time.h>

#include <bpf/btf.h>

#include "sluice/cookie.h"

#define FZ_MAX_IN 1600
#define FZ_BUF (FZ_MAX_IN + 64)
#define FZ_OUT 8192
#define FZ_429_DEFAULT 92                /* SL_429_LEN in bpf/reply.h, if the object says not */
#define FZ_MIN_REPLY (14 + 20 + 20)      /* Ethernet + IPv4 + TCP */
#define FZ_SHOW 3                        /* failing frames printed per invariant */
#define FZ_ONCE_NS (5ull * 1000000000ull) /* the datapath absorbs a shed connection 10 s */
#define POOL 256

#define T_FIN 0x01
#define T_SYN 0x02
#define T_RST 0x04
#define T_PSH 0x08
#define T_ACK 0x10

/* ---- PRNG: xoshiro256**, seeded by splitmix64 ------------------------------------------ */

static uint64_t rs[4];

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rseed(uint64_t seed)
{
	int i;

	for (i = 0; i < 4; i++)
		rs[i] = splitmix(&seed);
}

static uint64_t rnd(void)
{
	uint64_t r = ((rs[1] * 5) << 7 | (rs[1] * 5) >> 57) * 9, t = rs[1] << 17;

	rs[2] ^= rs[0];
	rs[3] ^= rs[1];
	rs[1] ^= rs[2];
	rs[0] ^= rs[3];
	rs[2] ^= t;
	rs[3] = rs[3] << 45 | rs[3] >> 19;
	return r;
}

static uint32_t below(uint32_t n)
{
	return n ? (uint32_t)(((rnd() >> 32) * n) >> 32) : 0;
}

static int chance(int pct)
{
	return below(100) < (uint32_t)pct;
}

static void rbytes(uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

/* The 429 the object sends, read from its own .rodata (sl_429_text), so that a change of the
 * text or its length is no false alarm here. */
static char t429[512] = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1    \r\n"
			"Content-Length: 0\r\nConnection: close\r\n\r\n";
static size_t t429_len = FZ_429_DEFAULT;

/* ---- byte helpers --------------------------------------------------------------------- */

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t csum_add(const uint8_t *p, size_t n, uint32_t sum)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		sum += (uint32_t)(p[n - 1] << 8);
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static const char *flag_str(uint8_t f, char *buf, size_t n)
{
	static const char *const names[8] = { "FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR" };
	size_t off = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < 8; i++)
		if (f & (1 << i))
			off += (size_t)snprintf(buf + off, n > off ? n - off : 0, "%s%s",
						off ? "|" : "", names[i]);
	if (!off)
		snprintf(buf, n, "none");
	return buf;
}

static const char *addr_str(int family, const uint8_t *a, char *buf, size_t n)
{
	if (!inet_ntop(family == 4 ? AF_INET : AF_INET6, a, buf, (socklen_t)n))
		snprintf(buf, n, "?");
	return buf;
}

/* ---- addresses: the node's, clients', and the martian sets ----------------------------- */

static const uint8_t server_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const char *const server_v4[] = { "10.0.0.2", "10.0.0.3" };
static const char *const server_v6[] = { "2001:db8:ffff::2", "2001:db8:ffff::3" };

/* 0.0.0.0/8, 127/8, 224/4 (multicast), 240/4 (reserved, with 255.255.255.255). */
static int v4_src_martian(const uint8_t *a)
{
	return a[0] == 0 || a[0] == 127 || a[0] >= 224;
}

/* Destinations: 0.0.0.0/8, loopback, multicast, the limited broadcast. */
static int v4_dst_martian(const uint8_t *a)
{
	return a[0] == 0 || a[0] == 127 || (a[0] >= 224 && a[0] <= 239) ||
	       (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255);
}

/* ::, ::1, ff00::/8, ::ffff:0:0/96 (IPv4-mapped, never on the wire), for either side. */
static int v6_martian(const uint8_t *a)
{
	static const uint8_t zero[16];

	if (a[0] == 0xff)
		return 1;
	if (!memcmp(a, zero, 15) && (a[15] == 0 || a[15] == 1))
		return 1;
	return !memcmp(a, zero, 10) && a[10] == 0xff && a[11] == 0xff;
}

static void pick_v4_martian(uint8_t *a, int as_dst)
{
	rbytes(a, 4);
	switch (below(as_dst ? 5 : 7)) {
	case 0: a[0] = 0; break;
	case 1: a[0] = 127; break;
	case 2: a[0] = (uint8_t)(224 + below(16)); break;
	case 3: memset(a, 0xff, 4); break;
	case 4: memset(a, 0, 4); break;
	case 5: a[0] = 127; a[1] = 0; a[2] = 0; a[3] = 1; break;
	default: a[0] = (uint8_t)(240 + below(15)); break;
	}
}

static void pick_v6_martian(uint8_t *a)
{
	memset(a, 0, 16);
	switch (below(5)) {
	case 0: break;                                 /* :: */
	case 1: a[15] = 1; break;                      /* ::1 */
	case 2: a[0] = 0xff; a[1] = 0x02; a[15] = 1; break; /* ff02::1 */
	case 3: a[0] = 0xff; rbytes(a + 1, 15); break; /* ff00::/8 */
	default: a[10] = a[11] = 0xff; rbytes(a + 12, 4); break; /* ::ffff:a.b.c.d */
	}
}

static void pick_v4_client(uint8_t *a)
{
	rbytes(a, 4);
	switch (below(6)) {
	case 0: a[0] = 198; a[1] = 51; a[2] = 100; break; /* hosting; a reply verdict in A */
	case 1: a[0] = 203; a[1] = 0; a[2] = 113; break;  /* residential; half blocked in A */
	case 2: a[0] = 192; a[1] = 0; a[2] = 2; break;    /* a monitor-mode class */
	case 3: a[0] = 198; a[1] = 18; break;
	default:
		do
			rbytes(a, 4);
		while (v4_src_martian(a));
	}
}

static void pick_v6_client(uint8_t *a)
{
	rbytes(a, 16);
	switch (below(3)) {
	case 0: a[0] = 0x20; a[1] = 0x01; a[2] = 0x0d; a[3] = 0xb8; a[4] = 0x10; break;
	case 1: a[0] = 0x20; a[1] = 0x01; a[2] = 0x0d; a[3] = 0xb8; a[4] = 0x20; break;
	default: a[0] = (uint8_t)(0x20 | (a[0] & 0x1f)); break; /* 2000::/3 */
	}
}

/* A source: 35 % from the martian sets, a few the node's own addresses. */
static void pick_src(int family, uint8_t *a)
{
	memset(a, 0, 16);
	if (chance(3))
		inet_pton(family == 4 ? AF_INET : AF_INET6,
			  family == 4 ? server_v4[below(2)] : server_v6[below(2)], a);
	else if (family == 4)
		chance(35) ? pick_v4_martian(a, 0) : pick_v4_client(a);
	else
		chance(35) ? pick_v6_martian(a) : pick_v6_client(a);
}

/* A destination: mostly the node's addresses, sometimes martian, sometimes elsewhere. */
static void pick_dst(int family, uint8_t *a)
{
	uint32_t r = below(100);

	memset(a, 0, 16);
	if (r < 75)
		inet_pton(family == 4 ? AF_INET : AF_INET6,
			  family == 4 ? server_v4[below(2)] : server_v6[below(2)], a);
	else if (r < 88)
		family == 4 ? pick_v4_martian(a, 1) : pick_v6_martian(a);
	else
		family == 4 ? pick_v4_client(a) : pick_v6_client(a);
}

static void pick_smac(uint8_t *m)
{
	rbytes(m, 6);
	if (chance(88)) {
		m[0] = (uint8_t)((m[0] & 0xfc) | 0x02); /* locally administered unicast */
	} else if (chance(50)) {
		memset(m, 0xff, 6);
	} else {
		m[0] |= 0x01;
	}
}

static void pick_dmac(uint8_t *m)
{
	uint32_t r = below(100);

	if (r < 80) {
		memcpy(m, server_mac, 6);
	} else if (r < 88) {
		memset(m, 0xff, 6);
	} else if (r < 94) {
		m[0] = 0x01; m[1] = 0x00; m[2] = 0x5e; rbytes(m + 3, 3); m[3] &= 0x7f; /* IPv4 mc */
	} else if (r < 97) {
		m[0] = 0x33; m[1] = 0x33; rbytes(m + 2, 4);                       /* IPv6 mc */
	} else {
		rbytes(m, 6);
	}
}

/* ---- payloads ------------------------------------------------------------------------- */

static const char *const hosts[] = { "acme.example", "beta.example", "ACME.Example:8443",
				     "nobody.example", "", "a" };

static size_t gen_http(uint8_t *b, size_t cap)
{
	static const char *const methods[] = { "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS",
					       "PATCH", "post", "BREW", "" };
	static const char *const paths[] = { "/login", "/login?next=/x", "/token",
					     "/token/validate", "/token/validate/x", "/health",
					     "/", "*", "http://acme.example/login" };
	char s[1500];
	size_t n = 0;
	int i, k;

	n += (size_t)snprintf(s + n, sizeof(s) - n, "%s ", methods[below(10)]);
	if (chance(85)) {
		n += (size_t)snprintf(s + n, sizeof(s) - n, "%s", paths[below(9)]);
	} else {
		k = (int)below(300);
		s[n++] = '/';
		for (i = 0; i < k; i++)
			s[n++] = (char)('a' + below(26));
	}
	switch (below(5)) {
	case 0: n += (size_t)snprintf(s + n, sizeof(s) - n, " HTTP/1.0\r\n"); break;
	case 1: n += (size_t)snprintf(s + n, sizeof(s) - n, "\r\n"); break;
	default: n += (size_t)snprintf(s + n, sizeof(s) - n, " HTTP/1.1\r\n"); break;
	}
	k = (int)below(4);
	for (i = 0; i < k && n < 1100; i++) {
		int pad = (int)below(200);

		n += (size_t)snprintf(s + n, sizeof(s) - n, "X-Pad: ");
		memset(s + n, 'p', (size_t)pad);
		n += (size_t)pad;
		n += (size_t)snprintf(s + n, sizeof(s) - n, "\r\n");
		if (chance(30))
			n += (size_t)snprintf(s + n, sizeof(s) - n, "%s: %s\r\n",
					      chance(50) ? "Host" : "HOST", hosts[below(6)]);
	}
	if (chance(80))
		n += (size_t)snprintf(s + n, sizeof(s) - n, "Host: %s\r\n", hosts[below(6)]);
	n += (size_t)snprintf(s + n, sizeof(s) - n, "Content-Length: 0\r\n\r\n");
	if (chance(10))
		n = below((uint32_t)n) + 1; /* cut short anywhere */
	if (n > cap)
		n = cap;
	memcpy(b, s, n);
	return n;
}

/* A TLS ClientHello carrying @sni, as in tests/bpf/stateless.c. */
static size_t gen_hello(uint8_t *out, size_t cap)
{
	uint8_t b[512];
	char sni[64];
	size_t n = 0, ext_start, hs_start, sl;
	int i, has_sni = chance(85);

	if (chance(80)) {
		snprintf(sni, sizeof(sni), "%s", hosts[below(4)]);
	} else {
		sl = below(63) + 1;
		for (i = 0; i < (int)sl; i++)
			sni[i] = (char)('a' + below(26));
		sni[sl] = '\0';
	}
	sl = strlen(sni);
	b[n++] = 22; b[n++] = 3; b[n++] = 1; n += 2;
	hs_start = n;
	b[n++] = 1; n += 3;
	b[n++] = 3; b[n++] = 3;
	for (i = 0; i < 32; i++)
		b[n++] = (uint8_t)rnd();
	b[n++] = 32;
	for (i = 0; i < 32; i++)
		b[n++] = 0xaa;
	b[n++] = 0; b[n++] = 4; b[n++] = 0x13; b[n++] = 1; b[n++] = 0xc0; b[n++] = 0x2f;
	b[n++] = 1; b[n++] = 0;
	n += 2;
	ext_start = n;
	b[n++] = 0; b[n++] = 23; b[n++] = 0; b[n++] = 0;
	b[n++] = 0; b[n++] = 10; b[n++] = 0; b[n++] = 4;
	b[n++] = 0; b[n++] = 2; b[n++] = 0; b[n++] = 29;
	if (has_sni) {
		b[n++] = 0; b[n++] = 0;
		b[n++] = 0; b[n++] = (uint8_t)(sl + 5);
		b[n++] = 0; b[n++] = (uint8_t)(sl + 3);
		b[n++] = 0;
		b[n++] = 0; b[n++] = (uint8_t)sl;
		memcpy(b + n, sni, sl);
		n += sl;
	}
	b[ext_start - 2] = (uint8_t)((n - ext_start) >> 8);
	b[ext_start - 1] = (uint8_t)(n - ext_start);
	b[hs_start + 1] = 0;
	b[hs_start + 2] = (uint8_t)((n - hs_start - 4) >> 8);
	b[hs_start + 3] = (uint8_t)(n - hs_start - 4);
	b[3] = (uint8_t)((n - 5) >> 8);
	b[4] = (uint8_t)(n - 5);
	if (chance(10))
		n = below((uint32_t)n) + 1;
	if (n > cap)
		n = cap;
	memcpy(out, b, n);
	return n;
}

static size_t gen_dns(uint8_t *b, size_t cap)
{
	static const uint8_t q[] = { 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0,
				     0, 1, 0, 1 };
	size_t n = 12 + sizeof(q);

	if (n > cap)
		return 0;
	rbytes(b, 2);
	b[2] = 0x01; b[3] = 0x00; b[4] = 0; b[5] = 1;
	memset(b + 6, 0, 6);
	memcpy(b + 12, q, sizeof(q));
	return n;
}

static size_t gen_payload(uint8_t *b, size_t cap, uint16_t dport)
{
	uint32_t r = below(100);

	if (dport == 443 ? r < 60 : r < 10)
		return gen_hello(b, cap);
	if (r < 75)
		return gen_http(b, cap);
	r = below(cap < 1400 ? (uint32_t)cap + 1 : 1401);
	rbytes(b, r);
	return r;
}

/* ---- building frames ------------------------------------------------------------------ */

enum kind { K_RANDOM, K_RANDOM_L3, K_STRUCT, K_COOKIE, K_MUTATED, K_REPLAY, K__MAX };
static const char *const kind_names[K__MAX] = { "random", "random-l3", "struct", "cookie",
						"mutated", "replay" };

struct input {
	uint8_t b[FZ_BUF];
	size_t len;
	int kind;
	int first_request; /* a cookie first request: a replay candidate */
	char note[200];
};

/* Everything a built frame can vary. */
struct spec {
	uint8_t dmac[6], smac[6];
	int vlans;
	uint16_t ethertype;        /* 0x0800, 0x86dd or another */
	int family;                /* 4 or 6 (what the addresses are) */
	uint8_t saddr[16], daddr[16];
	uint8_t ip4_opts[40];
	int ip4_opt_len;           /* multiple of 4 */
	int ihl;                   /* -1: computed */
	int version;               /* -1: right */
	uint16_t frag;             /* IPv4 flags + offset field; IPv6: the fragment header's */
	uint8_t l4;                /* IPPROTO_TCP, _UDP, _ICMP... */
	int n_ext;
	uint8_t ext_type[24], ext_len[24];
	int len_mode;              /* 0 right; 1 random; 2, 5 past the frame; 3 short; 4 zero */
	int bad_ip_csum;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint8_t topt[40];
	int topt_len;              /* multiple of 4 */
	int doff;                  /* -1: computed */
	uint8_t pay[FZ_MAX_IN];
	size_t pay_len;
	long cut;                  /* truncate the built frame to this many bytes (-1: no) */
};

static void spec_init(struct spec *s, int family)
{
	memset(s, 0, sizeof(*s));
	s->family = family;
	s->ethertype = family == 4 ? ETH_P_IP : ETH_P_IPV6;
	s->ihl = -1;
	s->version = -1;
	s->doff = -1;
	s->cut = -1;
	s->l4 = IPPROTO_TCP;
	memcpy(s->dmac, server_mac, 6);
	s->smac[0] = 0x02;
	s->smac[5] = 0x01;
}

static size_t build(const struct spec *s, uint8_t *f)
{
	size_t off = 12, l3, l4len, hl = 0, i;
	uint8_t *nextp = NULL;
	long iplen;

	memset(f, 0, FZ_BUF);
	memcpy(f, s->dmac, 6);
	memcpy(f + 6, s->smac, 6);
	for (i = 0; i < (size_t)s->vlans; i++) {
		wr16(f + off, (s->vlans > 1 && i == 0) ? ETH_P_8021AD : ETH_P_8021Q);
		wr16(f + off + 2, (uint16_t)(100 + i));
		off += 4;
	}
	wr16(f + off, s->ethertype);
	off += 2;
	l3 = off;
	if (s->ethertype != ETH_P_IP && s->ethertype != ETH_P_IPV6) {
		size_t n = s->pay_len < 400 ? s->pay_len : 400;

		memcpy(f + off, s->pay, n);
		return off + n;
	}
	if (s->family == 4) {
		hl = 20 + (size_t)s->ip4_opt_len;
		f[off] = (uint8_t)((s->version >= 0 ? s->version : 4) << 4 |
				   (s->ihl >= 0 ? s->ihl : (int)(hl / 4)));
		wr16(f + off + 6, s->frag);
		f[off + 8] = 64;
		f[off + 9] = s->l4;
		memcpy(f + off + 12, s->saddr, 4);
		memcpy(f + off + 16, s->daddr, 4);
		memcpy(f + off + 20, s->ip4_opts, (size_t)s->ip4_opt_len);
		off += hl;
	} else {
		f[off] = (uint8_t)((s->version >= 0 ? s->version : 6) << 4);
		f[off + 7] = 64;
		memcpy(f + off + 8, s->saddr, 16);
		memcpy(f + off + 24, s->daddr, 16);
		nextp = f + off + 6;
		off += 40;
		for (i = 0; i < (size_t)s->n_ext; i++) {
			uint8_t t = s->ext_type[i];
			size_t n;

			*nextp = t;
			nextp = f + off;
			if (t == IPPROTO_FRAGMENT) {
				n = 8;
				wr16(f + off + 2, s->frag);
				rbytes(f + off + 4, 4);
			} else if (t == IPPROTO_AH) {
				n = ((size_t)s->ext_len[i] + 2) * 4;
				f[off + 1] = s->ext_len[i];
				rbytes(f + off + 4, n - 4);
			} else {
				n = ((size_t)s->ext_len[i] + 1) * 8;
				f[off + 1] = s->ext_len[i];
				if (t == IPPROTO_ROUTING) {
					f[off + 2] = (uint8_t)below(5); /* type */
					f[off + 3] = (uint8_t)below(3); /* segments left */
				} else {
					f[off + 2] = 1;                 /* PadN */
					f[off + 3] = (uint8_t)(n - 4);
				}
			}
			if (off + n > FZ_MAX_IN)
				break;
			off += n;
		}
		*nextp = s->l4;
	}
	if (s->l4 == IPPROTO_TCP) {
		int doff = s->doff >= 0 ? s->doff : 5 + s->topt_len / 4;

		l4len = 20 + (size_t)s->topt_len;
		wr16(f + off, s->sport);
		wr16(f + off + 2, s->dport);
		wr32(f + off + 4, s->seq);
		wr32(f + off + 8, s->ack);
		f[off + 12] = (uint8_t)(doff << 4);
		f[off + 13] = s->flags;
		wr16(f + off + 14, 64240);
		memcpy(f + off + 20, s->topt, (size_t)s->topt_len);
	} else if (s->l4 == IPPROTO_UDP) {
		l4len = 8;
		wr16(f + off, s->sport);
		wr16(f + off + 2, s->dport);
		wr16(f + off + 4, (uint16_t)(8 + s->pay_len));
	} else {
		l4len = 0;
	}
	off += l4len;
	{
		size_t n = s->pay_len;

		if (off + n > FZ_MAX_IN)
			n = off < FZ_MAX_IN ? FZ_MAX_IN - off : 0;
		memcpy(f + off, s->pay, n);
		off += n;
	}
	/* The IP length: right, or one of the ways it can be wrong. */
	iplen = (long)(off - l3);
	switch (s->len_mode) {
	case 1: iplen = (long)below(65536); break;
	case 2: iplen += 1 + below(300); break;
	case 3: iplen = (long)below((uint32_t)iplen + 1); break;
	case 4: iplen = 0; break;
	case 5: iplen += 200; break;
	}
	if (s->family == 4) {
		wr16(f + l3 + 2, (uint16_t)iplen);
		wr16(f + l3 + 10, 0);
		if ((f[l3] & 15) * 4 <= 60 && l3 + (size_t)(f[l3] & 15) * 4 <= off)
			wr16(f + l3 + 10, (uint16_t)(csum_fold(csum_add(f + l3, (size_t)(f[l3] & 15) * 4, 0)) ^
						      (s->bad_ip_csum ? 0x5a5a : 0)));
	} else {
		wr16(f + l3 + 4, (uint16_t)(iplen - 40));
	}
	if (s->cut >= 0 && (size_t)s->cut < off)
		off = (size_t)s->cut;
	return off;
}

/* SYN options: none, the common sets, TFO, random bytes, or malformed ones. */
static void pick_syn_opts(struct spec *s)
{
	static const uint8_t mss[] = { 2, 4, 0x05, 0xb4 };
	static const uint8_t mss_sack[] = { 2, 4, 0x05, 0xb4, 4, 2, 1, 1 };
	static const uint8_t three[] = { 2, 4, 0x05, 0xb4, 4, 2, 1, 1, 1, 3, 3, 7 };
	static const uint8_t linux_[] = { 2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0,
					  1, 3, 3, 7 };
	static const uint8_t tfo[] = { 2, 4, 0x05, 0xb4, 34, 10, 1, 2, 3, 4, 5, 6, 7, 8, 1, 1 };
	uint8_t *o = s->topt;

	switch (below(9)) {
	case 0: s->topt_len = 0; break;
	case 1: memcpy(o, mss, sizeof(mss)); s->topt_len = 4; break;
	case 2: memcpy(o, mss_sack, sizeof(mss_sack)); s->topt_len = 8; break;
	case 3: memcpy(o, three, sizeof(three)); s->topt_len = 12; break;
	case 4: memcpy(o, linux_, sizeof(linux_)); s->topt_len = 20; break;
	case 5: memcpy(o, tfo, sizeof(tfo)); s->topt_len = 16; break;
	case 6:
		s->topt_len = (int)(4 * (1 + below(10)));
		rbytes(o, (size_t)s->topt_len);
		break;
	case 7:
		/* a kind with length 0 or 1, or one running past the options */
		s->topt_len = 8;
		rbytes(o, 8);
		o[0] = (uint8_t)(2 + below(3));
		o[1] = (uint8_t)(chance(50) ? below(2) : 9 + below(40));
		break;
	default:
		/* window scale past 14, MSS 0 */
		s->topt_len = 8;
		o[0] = 1; o[1] = 3; o[2] = 3; o[3] = (uint8_t)(15 + below(241));
		o[4] = 2; o[5] = 4; o[6] = 0; o[7] = 0;
		break;
	}
}

static uint8_t pick_flags(void)
{
	static const uint8_t common[] = {
		T_SYN, T_SYN, T_SYN, T_SYN, T_SYN, T_SYN, T_ACK, T_ACK, T_ACK | T_PSH,
		T_ACK | T_PSH, T_ACK | T_PSH, T_ACK | T_FIN, T_ACK | T_FIN, T_RST, T_RST | T_ACK,
		T_SYN | T_ACK, T_SYN | T_FIN, T_SYN | T_FIN, T_SYN | T_RST, T_SYN | T_RST,
		T_SYN | T_FIN | T_RST, T_SYN | T_FIN | T_ACK, T_SYN | T_PSH, T_SYN | 0xc0,
		T_ACK | T_PSH | T_FIN, T_FIN, 0,
	};

	if (chance(10))
		return (uint8_t)rnd();
	return common[below(sizeof(common))];
}

static const uint16_t protected_ports[] = { 80, 81, 8080, 8081, 443 };
static const uint16_t cookie_ports[] = { 80, 8080, 8081, 443 };

static uint16_t pick_dport(void)
{
	uint32_t r = below(100);

	if (r < 75)
		return protected_ports[below(5)];
	if (r < 85)
		return (uint16_t)(chance(50) ? 22 : 53);
	return (uint16_t)rnd();
}

/* A client of the conversation pool: one connection whose steps are sent out of order. */
struct client {
	int family;
	uint8_t saddr[16], daddr[16], smac[6];
	int vlans;
	uint16_t sport, dport;
	uint32_t isn;
	uint8_t req[1200];
	size_t req_len;
	int fin_with_req;
};

struct fz;
static uint32_t cookie_for(struct fz *z, int family, const uint8_t *saddr, const uint8_t *daddr,
			   uint16_t sport, uint16_t dport, uint32_t isn);

/* The L2/L3 variations every built frame draws from. */
static void vary_l2_l3(struct spec *s)
{
	uint32_t r;
	int i;

	pick_dmac(s->dmac);
	pick_smac(s->smac);
	r = below(100);
	s->vlans = r < 60 ? 0 : r < 84 ? 1 : r < 96 ? 2 : r < 98 ? 3 + (int)below(7)
				: 9 + (int)below(40);
	if (chance(3))
		s->version = (int)below(16);
	if (chance(4))
		s->len_mode = 1 + (int)below(4);
	if (chance(3))
		s->cut = (long)below(200);
	if (s->family == 4) {
		if (chance(25)) {
			s->ip4_opt_len = (int)(4 * (1 + below(10)));
			if (chance(50))
				memset(s->ip4_opts, 1, (size_t)s->ip4_opt_len); /* NOPs */
			else
				rbytes(s->ip4_opts, (size_t)s->ip4_opt_len);
		}
		if (chance(4))
			s->ihl = (int)below(16);
		r = below(100);
		if (r < 6)
			s->frag = 0x2000;                               /* MF */
		else if (r < 10)
			s->frag = (uint16_t)(1 + below(0x1fff));        /* an offset */
		else if (r < 12)
			s->frag = (uint16_t)(0x2000 | below(0x2000));
		else if (r < 50)
			s->frag = 0x4000;                               /* DF */
		s->bad_ip_csum = chance(3);
	} else {
		r = below(100);
		s->n_ext = r < 70 ? 0 : r < 85 ? 1 + (int)below(3) : r < 95 ? 4 + (int)below(4) :
			   8 + (int)below(17);
		for (i = 0; i < s->n_ext; i++) {
			static const uint8_t types[] = { IPPROTO_HOPOPTS, IPPROTO_ROUTING,
							 IPPROTO_DSTOPTS, IPPROTO_DSTOPTS,
							 IPPROTO_AH, IPPROTO_FRAGMENT };

			s->ext_type[i] = types[below(sizeof(types))];
			s->ext_len[i] = (uint8_t)(chance(80) ? 0 : below(4));
		}
		if (chance(50))
			s->frag = (uint16_t)(chance(50) ? 1 : (below(0x2000) << 3 | below(2)));
		if (s->n_ext && chance(6)) {
			/* cut the chain short: somewhere inside the extension headers */
			s->cut = (long)(14 + 4 * s->vlans + 40 + below((uint32_t)(8 * s->n_ext)));
		}
	}
}

/* ---- the reference parser: what the datapath should see in a frame ---------------------- */

struct ref {
	int eth;
	int n_vlan;
	uint8_t tags[4 * SL_MAX_VLAN]; /* as they sit from byte 12: TPID, TCI per tag */
	int family;           /* 4, 6, or 0 */
	size_t l3, l4;
	uint8_t saddr[16], daddr[16];
	int tcp;              /* a TCP header the datapath would judge (a whole segment, or a
			       * first fragment) */
	int first_frag;       /* a first fragment: offset 0, more to come */
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags, doff;
	uint32_t payload;     /* TCP payload counted from the IP length, as the datapath does */
	const char *why;      /* why it is not TCP */
	const char *insane;   /* why the kernel would refuse the datagram, or NULL */
};

static int is_vlan(uint16_t et)
{
	return et == ETH_P_8021Q || et == ETH_P_8021AD;
}

static void ref_parse(const uint8_t *f, size_t len, struct ref *r)
{
	size_t off = 14, ihl = 0, ext = 0, iplen;
	uint16_t et;
	uint8_t next;
	int i;

	memset(r, 0, sizeof(*r));
	if (len < 14) {
		r->why = "shorter than an Ethernet header";
		return;
	}
	r->eth = 1;
	et = rd16(f + 12);
	/* Every tag is read (the kernel strips priority tags without limit); a reply carries
	 * the first SL_MAX_VLAN back, and a frame under more gets none. */
	while (is_vlan(et)) {
		if (off + 4 > len) {
			r->why = "VLAN tag cut short";
			return;
		}
		if (r->n_vlan < SL_MAX_VLAN)
			memcpy(r->tags + 4 * r->n_vlan, f + 12 + 4 * r->n_vlan, 4);
		et = rd16(f + off + 2);
		off += 4;
		r->n_vlan++;
	}
	r->l3 = off;
	if (et == ETH_P_IP) {
		if (off + 20 > len) {
			r->why = "IPv4 header cut short";
			return;
		}
		ihl = (size_t)(f[off] & 15) * 4;
		if (ihl < 20 || off + ihl > len) {
			r->why = "bad IHL";
			return;
		}
		r->family = 4;
		memcpy(r->saddr, f + off + 12, 4);
		memcpy(r->daddr, f + off + 16, 4);
		next = f[off + 9];
		if (rd16(f + off + 6) & 0x1fff) {
			r->why = "a later IPv4 fragment (offset > 0): no TCP header";
			return;
		}
		r->first_frag = !!(rd16(f + off + 6) & 0x2000);
		off += ihl;
	} else if (et == ETH_P_IPV6) {
		if (off + 40 > len) {
			r->why = "IPv6 header cut short";
			return;
		}
		r->family = 6;
		memcpy(r->saddr, f + off + 8, 16);
		memcpy(r->daddr, f + off + 24, 16);
		next = f[off + 6];
		off += 40;
		for (i = 0; i < SL_MAX_IP6_EXT; i++) {
			if (next == IPPROTO_HOPOPTS || next == IPPROTO_ROUTING ||
			    next == IPPROTO_DSTOPTS || next == IPPROTO_AH) {
				if (off + 2 > len) {
					r->why = "IPv6 extension header cut short";
					return;
				}
				if (next == IPPROTO_AH)
					ext = ((size_t)f[off + 1] + 2) * 4;
				else
					ext = ((size_t)f[off + 1] + 1) * 8;
				next = f[off];
				off += ext;
			} else if (next == IPPROTO_FRAGMENT) {
				/* A first or atomic fragment holds the upper layer; a later one
				 * does not. (The datapath may judge the first, or not.) */
				if (off + 8 > len) {
					r->why = "IPv6 fragment header cut short";
					return;
				}
				if (rd16(f + off + 2) & 0xfff8) {
					r->why = "a later IPv6 fragment (offset > 0): no TCP header";
					return;
				}
				r->first_frag |= f[off + 3] & 1;
				next = f[off];
				off += 8;
			} else {
				break;
			}
		}
			if (next == IPPROTO_HOPOPTS || next == IPPROTO_ROUTING || next == IPPROTO_DSTOPTS ||
		    next == IPPROTO_AH || next == IPPROTO_FRAGMENT) {
			r->why = "more IPv6 extension headers than SL_MAX_IP6_EXT";
			return;
		}
		ext = off - (r->l3 + 40);
	} else {
		r->why = "not IP";
		return;
	}
	if (next != IPPROTO_TCP) {
		r->why = "not TCP";
		return;
	}
	if (off + 20 > len) {
		r->why = "TCP header cut short";
		return;
	}
	r->doff = f[off + 12] >> 4;
	if (r->doff < 5 || off + r->doff * 4u > len) {
		r->why = "bad TCP data offset";
		return;
	}
	r->tcp = 1;
	r->l4 = off;
	r->sport = rd16(f + off);
	r->dport = rd16(f + off + 2);
	r->seq = rd32(f + off + 4);
	r->ack = rd32(f + off + 8);
	r->flags = f[off + 13];
	if (r->family == 4) {
		size_t tot = rd16(f + r->l3 + 2), l4len = tot > ihl ? tot - ihl : 0;

		r->payload = (uint32_t)(l4len > r->doff * 4u ? l4len - r->doff * 4u : 0);
		iplen = tot;
		if (f[r->l3] >> 4 != 4)
			r->insane = "IPv4 EtherType, IP version not 4";
		else if (tot < ihl + r->doff * 4u)
			r->insane = "IPv4 total length shorter than its IP and TCP headers";
		else if (r->l3 + tot > len)
			r->insane = "IPv4 total length runs past the frame";
	} else {
		size_t plen = rd16(f + r->l3 + 4), l4len = plen > ext ? plen - ext : 0;

		r->payload = (uint32_t)(l4len > r->doff * 4u ? l4len - r->doff * 4u : 0);
		iplen = plen + 40;
		if (f[r->l3] >> 4 != 6)
			r->insane = "IPv6 EtherType, IP version not 6";
		else if (plen < ext + r->doff * 4u)
			r->insane = "IPv6 payload length shorter than its extension and TCP headers";
		else if (r->l3 + iplen > len)
			r->insane = "IPv6 payload length runs past the frame";
	}
}

static void describe(const uint8_t *f, size_t len, const struct ref *r, char *buf, size_t n)
{
	char a[64], b[64], fl[48];
	size_t off;

	if (!r->eth) {
		snprintf(buf, n, "%zu bytes (%s)", len, r->why);
		return;
	}
	off = (size_t)snprintf(buf, n, "%zu bytes, dst %02x:%02x:%02x:%02x:%02x:%02x src "
			       "%02x:%02x:%02x:%02x:%02x:%02x, %d VLAN tag(s)", len, f[0], f[1], f[2],
			       f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], r->n_vlan);
	if (r->family && off < n)
		off += (size_t)snprintf(buf + off, n - off, ", IPv%d %s -> %s", r->family,
					addr_str(r->family, r->saddr, a, sizeof(a)),
					addr_str(r->family, r->daddr, b, sizeof(b)));
	if (off >= n)
		return;
	if (!r->tcp)
		snprintf(buf + off, n - off, ", %s", r->why);
	else
		snprintf(buf + off, n - off, "%s, TCP %u -> %u %s seq %u ack %u doff %u, payload %u by "
			 "the IP length%s%s", r->first_frag ? ", a first fragment" : "", r->sport,
			 r->dport, flag_str(r->flags, fl, sizeof(fl)), r->seq, r->ack, r->doff,
			 r->payload, r->insane ? "; " : "", r->insane ? r->insane : "");
}

static void hexdump(const char *what, const uint8_t *p, size_t n)
{
	size_t i, show = n > 512 ? 512 : n;
	char line[80];

	for (i = 0; i < show; i += 32) {
		size_t j, o = 0;

		for (j = i; j < i + 32 && j < show; j++)
			o += (size_t)snprintf(line + o, sizeof(line) - o, "%02x", p[j]);
		diag("    %-5s %04zx: %s", i ? "" : what, i, line);
	}
	if (show < n)
		diag("    (%zu more bytes)", n - show);
}

/* ---- the environment: two configurations --------------------------------------------- */

#define PORTS                                                                                \
	"  ports = ( { port = 80; action = \"reply\"; cost = 1; },\n"                          \
	"            { port = 81; cost = 1; },\n"                                              \
	"            { port = 8080; front = \"stateless\"; action = \"reply\"; cost = 5; },\n"  \
	"            { port = 8081; front = \"stateless\"; cost = 5; },\n"                      \
	"            { port = 443; front = \"stateless\"; protocol = \"tls\"; cost = 3; } );\n"

/* Every burst covers the largest charge (the login route): a config check asks for it. */
#define ROUTES                                                                               \
	"routes = ( { name = \"login\"; method = \"POST\"; path = \"/login\"; cpu = 50.0; },\n" \
	"           { name = \"token\"; method = \"GET\"; path = \"/token\"; cpu = 1.0; },\n"    \
	"           { name = \"health\"; method = \"*\"; path = \"/health\"; cpu = 2.0; } );\n"

/* Room in every bucket: most SYNs pass, a few prefixes are shed by verdicts and floods. */
static const char *conf_roomy =
	"edge: { interfaces = [\"lo\"];\n" PORTS
	"  state_entries = 65536; new_key_credit = 1.0; event_sample = 1;\n"
	"  malformed = \"pass\"; fragments = \"pass\"; };\n"
	"classes = (\n"
	"  { name = \"hosting\"; v4_prefix = 24; v6_prefix = 48; v4_parent = 16; v6_parent = 32;\n"
	"    rate = 200.0; burst = 600.0; parent_rate = 1000.0; parent_burst = 6000.0; },\n"
	"  { name = \"residential\"; rate = 50.0; burst = 200.0; parent_rate = 500.0;\n"
	"    parent_burst = 2000.0; },\n"
	"  { name = \"watch\"; rate = 0.001; burst = 50.0; parent_burst = 500.0;\n"
	"    mode = \"monitor\"; },\n"
	"  { name = \"unknown\"; rate = 100.0; burst = 300.0; parent_rate = 500.0;\n"
	"    parent_burst = 3000.0; } );\n" ROUTES
	"tenants = (\n"
	"  { name = \"acme\"; hosts = [\"acme.example\"];\n"
	"    listen = [\"10.0.0.2:80\", \"[2001:db8:ffff::2]:80\"]; rate = 1000.0; burst = 5000.0;\n"
	"    lease_ttl = 3600; },\n"
	"  { name = \"beta\"; hosts = [\"beta.example\"]; listen = [\"10.0.0.3:8080\"];\n"
	"    rate = 0.001; burst = 100.0; static_rate = 0.001; static_burst = 100.0;\n"
	"    lease_ttl = 3600; } );\n";

/* Buckets that hold next to nothing: a new key starts with 0.1 % of a burst that barely
 * covers one login, nearly everything is shed. */
static const char *conf_tiny =
	"edge: { interfaces = [\"lo\"];\n" PORTS
	"  state_entries = 4096; new_key_credit = 0.001; event_sample = 1;\n"
	"  malformed = \"drop\"; fragments = \"drop\"; retry_after = [1, 5];\n"
	"  streak_decay = 5; };\n"
	"classes = (\n"
	"  { name = \"hosting\"; v4_prefix = 24; v6_prefix = 48; v4_parent = 16; v6_parent = 32;\n"
	"    rate = 0.001; burst = 50.0; parent_rate = 0.001; parent_burst = 50.0; },\n"
	"  { name = \"residential\"; rate = 0.001; burst = 50.0; parent_rate = 0.001;\n"
	"    parent_burst = 50.0; },\n"
	"  { name = \"watch\"; rate = 0.001; burst = 50.0; parent_burst = 50.0;\n"
	"    mode = \"monitor\"; },\n"
	"  { name = \"unknown\"; rate = 0.001; burst = 50.0; parent_rate = 0.001;\n"
	"    parent_burst = 50.0; } );\n" ROUTES
	"tenants = (\n"
	"  { name = \"acme\"; hosts = [\"acme.example\"];\n"
	"    listen = [\"10.0.0.2:80\", \"[2001:db8:ffff::2]:80\"]; rate = 0.001; burst = 50.0;\n"
	"    static_rate = 0.001; static_burst = 50.0; lease_ttl = 3600; } );\n";

static const char *asn_csv =
	"198.51.100.0/24,64500,hosting\n"
	"2001:db8:1000::/36,64500,hosting\n"
	"203.0.113.0/24,64501,residential\n"
	"2001:db8:2000::/36,64501,residential\n"
	"192.0.2.0/24,64502,watch\n"
	"198.18.0.0/16,64510,residential\n";

enum inv {
	I_RUN, I_PASS, I_SIZE, I_FORM, I_ADDR, I_ANSWER, I_SANE, I_MARTIAN, I_ONCE, I_LOCAL,
	I__MAX
};

static const char *const inv_tag[I__MAX] = {
	"1 run", "2 pass-untouched", "3 size", "4 well-formed", "5 addressed-back", "6 answers",
	"7 sane-datagram", "8 martian", "9 one-429", "10 local-only" };

static const char *const inv_text[I__MAX] = {
	[I_RUN] = "test_run takes every frame of 14 bytes or more (refuses shorter ones) and "
		  "returns XDP_PASS, XDP_DROP or XDP_TX",
	[I_PASS] = "a frame passed (XDP_PASS) leaves byte-identical and at its length",
	[I_SIZE] = "one reply per input, of a bounded size: at least Ethernet + IP + TCP, at most "
		   "the input + the 429's text",
	[I_FORM] = "a reply is well-formed: <= SL_MAX_VLAN (8) VLAN tags; IPv4 (version 4, "
		   "IHL 5, valid header checksum, no fragment, TCP) or IPv6 (next header TCP); the IP length fills the "
		   "frame; a valid TCP checksum over the pseudo-header; SYN|ACK, ACK, FIN|ACK, RST "
		   "or RST|ACK without data, or FIN|PSH|ACK with exactly the object's 429",
	[I_ADDR] = "a reply goes back where its input came from: MACs swapped, VLAN tags kept, IP "
		   "version kept, addresses and ports swapped",
	[I_ANSWER] = "a reply answers a TCP segment (whole, or a first fragment) to a protected "
		     "port that may answer: SYN-ACK only to a SYN (ack = ISN + 1), the 429 only to "
		     "data on a reply port (seq = its ack), ACK and FIN-ACK only to a FIN, a RST "
		     "as RFC 793 makes one (seq = its ack); nothing to a RST or a later fragment, "
		     "nothing on a drop port of the syn front",
	[I_SANE] = "a reply only to a datagram the kernel would take: IP version right, IP "
		   "length covering the headers and inside the frame",
	[I_MARTIAN] = "never a reply to a martian: source in 0/8, 127/8, 224/4, 240/4, ::, ::1, "
		      "ff00::/8, ::ffff:0:0/96; destination 0/8, 127/8, 224/4, 255.255.255.255, "
		      "::, ::1, ff00::/8, ::ffff:0:0/96; a multicast or broadcast source or "
		      "destination MAC; SYN|FIN; SYN|RST",
	[I_ONCE] = "at most one 429 per connection: a first request sent again within 5 s is not "
		   "answered twice",
	[I_LOCAL] = "replies only from the node's own addresses (the local-address map), and "
		    "never to them",
};

enum martian { M_SRC_IP, M_DST_IP, M_SRC_MAC, M_DST_MAC, M_SYNFIN, M_SYNRST, M__MAX };
static const char *const martian_names[M__MAX] = {
	"source address", "destination address", "source MAC multicast/broadcast",
	"destination MAC multicast/broadcast", "SYN|FIN", "SYN|RST" };

enum rkind { R_SYNACK, R_429, R_ACK, R_FINACK, R_RST, R_OTHER, R__MAX };
static const char *const rkind_names[R__MAX] = { "SYN-ACK", "429", "ACK", "FIN-ACK", "RST",
						 "other" };
static const char *const rkind_a[R__MAX] = { "a SYN-ACK", "a 429", "an ACK", "a FIN-ACK",
					     "a RST", "a reply" };

struct once_ent {
	uint64_t h;     /* 0: empty */
	uint64_t at_ns;
};
#define ONCE_SLOTS 65536

struct fz {
	const char *name;
	int idx;
	struct env e;
	int local_fd;
	int local_unknown;        /* an LPM map that may be one, of a layout not known here */
	char local_name[64];
	struct sl_cookie_keys keys;
	struct client pool[POOL];
	long iter;
	long done;
	double secs;
	int stopped_early;
	long by_kind[K__MAX][5];  /* frames, refused, pass, drop, tx */
	long replies[R__MAX];
	long inv_checked[I__MAX], inv_failed[I__MAX];
	long m_seen[M__MAX], m_replied[M__MAX];
	long insane_csum_replies; /* replies to IPv4 headers with a bad checksum (counted only) */
	struct once_ent *once;
};

static uint64_t g_seed;
static long g_iters;
static long inv_shown[I__MAX];
static int martian_shown[M__MAX];

static uint32_t cookie_for(struct fz *z, int family, const uint8_t *saddr, const uint8_t *daddr,
			   uint16_t sport, uint16_t dport, uint32_t isn)
{
	struct sl_conn_id id = { .family = family == 4 ? SL_FAM_V4 : SL_FAM_V6, .sport = sport,
				 .dport = dport, .isn = isn };
	struct sl_cookie_opts o = { .mss_idx = (uint8_t)below(8), .wscale = (uint8_t)below(16),
				    .sack = (uint8_t)below(2) };

	memcpy(id.saddr, saddr, family == 4 ? 4 : 16);
	memcpy(id.daddr, daddr, family == 4 ? 4 : 16);
#ifdef SL_COOKIE_TS_MAC_BITS
	{
		/* The cookie with timestamps in TSval: these segments carry no TSopt, so the
		 * whole cookie is the ISS. */
		__u32 tsval;

		o.ts = 0;
		return sl_cookie_make(&id, sl_now_ns(), &o, &z->keys, &tsval);
	}
#else
	return sl_cookie_make(&id, sl_now_ns(), &o, &z->keys);
#endif
}

/* Keys from the seed, so that a seed rebuilds the same frames (within one cookie slot). */
static int set_keys(struct fz *z)
{
	uint64_t x = g_seed ^ (0x5eed0000ull + (uint64_t)z->idx);
	__u32 zero = 0;

	memset(&z->keys, 0, sizeof(z->keys));
	z->keys.cur[0] = splitmix(&x);
	z->keys.cur[1] = splitmix(&x);
	z->keys.cur_marker = (uint8_t)(splitmix(&x) & SL_COOKIE_MARKER_MASK);
	z->keys.prev_marker = z->keys.cur_marker;
	z->keys.rotated_unix = (uint64_t)time(NULL);
	return bpf_map_update_elem(z->e.maps.cookie_keys, &zero, &z->keys, BPF_ANY);
}

static void load_429(struct bpf_object *obj)
{
	struct btf *btf = bpf_object__btf(obj);
	const struct bpf_map *m = bpf_object__find_map_by_name(obj, ".rodata");
	const struct btf_var_secinfo *vi;
	const struct btf_type *t;
	const char *data;
	size_t size = 0;
	int id, i;

	if (!btf || !m || !(data = bpf_map__initial_value((struct bpf_map *)m, &size)))
		goto fallback;
	id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
	t = id > 0 ? btf__type_by_id(btf, (__u32)id) : NULL;
	if (!t)
		goto fallback;
	vi = btf_var_secinfos(t);
	for (i = 0; i < btf_vlen(t); i++, vi++) {
		const struct btf_type *var = btf__type_by_id(btf, vi->type);

		if (var && !strcmp(btf__name_by_offset(btf, var->name_off), "sl_429_text") &&
		    vi->offset + vi->size <= size && vi->size > 1 && vi->size < sizeof(t429)) {
			memcpy(t429, data + vi->offset, vi->size);
			t429[vi->size - 1] = '\0';
			t429_len = strlen(t429);
			diag("the object's 429 is %zu bytes", t429_len);
			return;
		}
	}
fallback:
	diag("no sl_429_text in the object's .rodata: the checks assume the %zu-byte 429 of "
	     "bpf/reply.h at this commit", t429_len);
}

/*
 * The datapath may grow a map of the addresses this node serves (replies only from those).
 * If the object has one (an LPM trie keyed like the verdicts), fill it with the test's server
 * addresses unless the harness already did, and check replies against it.
 */
static void find_local_map(struct fz *z)
{
	struct bpf_map *m;
	size_t i;

	z->local_fd = -1;
	bpf_object__for_each_map(m, z->e.skel->obj) {
		const char *name = bpf_map__name(m);
		struct sl_lpm_key k, next;
		uint8_t val[256];

		if (bpf_map__type(m) != BPF_MAP_TYPE_LPM_TRIE || !strcmp(name, "sl_verdicts") ||
		    !strcmp(name, "sl_routes") || strstr(name, "asn"))
			continue;
		snprintf(z->local_name, sizeof(z->local_name), "%s", name);
		if (bpf_map__key_size(m) != sizeof(struct sl_lpm_key) ||
		    bpf_map__value_size(m) > sizeof(val)) {
			diag("%s: LPM map %s has a key of %u bytes, not struct sl_lpm_key: not a "
			     "local-address map this fuzzer knows; update tests/bpf/fuzz.c", z->name,
			     name, bpf_map__key_size(m));
			z->local_unknown = 1;
			continue;
		}
		z->local_fd = bpf_map__fd(m);
		if (!bpf_map_get_next_key(z->local_fd, NULL, &next)) {
			diag("%s: local-address map %s already filled by the harness", z->name, name);
			return;
		}
		memset(val, 0, sizeof(val)); /* struct sl_local_val: ifindex 0, "none" */
		for (i = 0; i < 4; i++) {
			struct sl_prefix p;
			char err[64];

			sl_prefix_parse(i < 2 ? server_v4[i] : server_v6[i - 2], &p, 0, err,
					sizeof(err));
			sl_prefix_to_lpm(&p, &k);
			if (bpf_map_update_elem(z->local_fd, &k, val, BPF_ANY))
				diag("%s: cannot fill %s: %s", z->name, name, strerror(errno));
		}
		diag("%s: local-address map %s filled with 10.0.0.2, 10.0.0.3, 2001:db8:ffff::2, "
		     "2001:db8:ffff::3", z->name, name);
		return;
	}
}

static int is_local(const struct fz *z, int family, const uint8_t *a)
{
	struct sl_prefix p = { .family = family == 4 ? SL_FAM_V4 : SL_FAM_V6,
			       .plen = family == 4 ? 32 : 128 };
	struct sl_lpm_key k;
	uint8_t val[256];

	memcpy(p.addr, a, family == 4 ? 4 : 16);
	sl_prefix_to_lpm(&p, &k);
	return !bpf_map_lookup_elem(z->local_fd, &k, val);
}

static int put_verdict(struct fz *z, const char *prefix, uint8_t action, uint16_t factor)
{
	struct sl_verdict v = { .action = action, .factor = factor };
	struct sl_prefix p;
	char err[64];

	v.expires_ns = sl_now_ns() + 3600ull * 1000000000ull;
	snprintf(v.reason, sizeof(v.reason), "fuzz");
	if (sl_prefix_parse(prefix, &p, 1, err, sizeof(err)))
		return -1;
	return sl_maps_verdict_put(&z->e.maps, &p, &v);
}

static void make_pool(struct fz *z)
{
	int i;

	for (i = 0; i < POOL; i++) {
		struct client *c = &z->pool[i];

		memset(c, 0, sizeof(*c));
		c->family = chance(50) ? 4 : 6;
		pick_src(c->family, c->saddr);
		memset(c->daddr, 0, 16);
		if (chance(85))
			inet_pton(c->family == 4 ? AF_INET : AF_INET6,
				  c->family == 4 ? server_v4[below(2)] : server_v6[below(2)], c->daddr);
		else
			pick_dst(c->family, c->daddr);
		pick_smac(c->smac);
		c->vlans = chance(70) ? 0 : 1 + (int)below(2);
		c->sport = (uint16_t)(1024 + below(64000));
		c->dport = cookie_ports[below(4)];
		c->isn = (uint32_t)rnd();
		c->req_len = c->dport == 443 ? gen_hello(c->req, 600) : gen_http(c->req, 1100);
		c->fin_with_req = chance(20);
	}
}

static int fz_open(struct fz *z, const char *name, int idx, const char *conf)
{
	int ret;

	memset(z, 0, sizeof(*z));
	z->name = name;
	z->idx = idx;
	ret = env_open(&z->e, conf, asn_csv);
	if (ret)
		return ret;
	if (set_keys(z))
		return -errno;
	if (idx == 0) {
		/* Sheds with room to spare: a reply verdict, a block, a tightened prefix. */
		if (put_verdict(z, "198.51.100.0/24", SL_VERDICT_REPLY, 0) ||
		    put_verdict(z, "2001:db8:1000::/40", SL_VERDICT_REPLY, 0) ||
		    put_verdict(z, "203.0.113.128/25", SL_VERDICT_BLOCK, 0) ||
		    put_verdict(z, "203.0.113.0/26", SL_VERDICT_TIGHTEN, 100))
			return -EIO;
	}
	find_local_map(z);
	if (!idx)
		load_429(z->e.skel->obj);
	z->once = calloc(ONCE_SLOTS, sizeof(*z->once));
	if (!z->once)
		return -ENOMEM;
	rseed(g_seed ^ (0x9001ull * (uint64_t)(idx + 1)));
	make_pool(z);
	return 0;
}

static void fz_close(struct fz *z)
{
	free(z->once);
	z->once = NULL;
	env_close(&z->e);
}

/* ---- generators ----------------------------------------------------------------------- */

static void gen_random(struct input *in)
{
	uint32_t r = below(100);

	in->kind = K_RANDOM;
	in->len = r < 30 ? below(101) : below(FZ_MAX_IN + 1);
	rbytes(in->b, in->len);
	snprintf(in->note, sizeof(in->note), "random bytes");
}

static void gen_random_l3(struct input *in)
{
	static const uint16_t ets[] = { ETH_P_IP, ETH_P_IP, ETH_P_IPV6, ETH_P_IPV6, ETH_P_8021Q,
					ETH_P_8021AD };
	uint16_t et = ets[below(6)];
	size_t l3 = 14;

	gen_random(in);
	in->kind = K_RANDOM_L3;
	if (in->len < 14)
		in->len = 14 + below(200);
	wr16(in->b + 12, et);
	if (is_vlan(et) && in->len >= 18) {
		wr16(in->b + 16, chance(50) ? ETH_P_IP : ETH_P_IPV6);
		l3 = 18;
		et = rd16(in->b + 16);
	}
	if (in->len > l3 && chance(70)) {
		in->b[l3] = et == ETH_P_IP ? (uint8_t)(0x45 + below(3)) : (uint8_t)0x60;
		if (in->len > l3 + 9 && et == ETH_P_IP && chance(80)) {
			in->b[l3 + 9] = IPPROTO_TCP;
			in->b[l3 + 6] &= 0x80;
			in->b[l3 + 7] = 0;
		}
		if (in->len > l3 + 6 && et == ETH_P_IPV6 && chance(80))
			in->b[l3 + 6] = IPPROTO_TCP;
	}
	snprintf(in->note, sizeof(in->note), "random bytes behind EtherType %#06x", et);
}

/* One step of a pool client's conversation with a valid cookie. */
static void gen_cookie(struct fz *z, struct input *in)
{
	static const char *const steps[] = { "SYN", "handshake ACK", "first request",
					     "FIN after the handshake", "ACK of our FIN",
					     "FIN after the 429", "RST", "more data" };
	struct client *c = &z->pool[below(POOL)];
	struct spec *s = malloc(sizeof(*s));
	uint32_t cookie, step = chance(35) ? 2 : below(8), after; /* requests: most */

	in->first_request = 0;
	if (!s) {
		in->len = 0;
		return;
	}
	spec_init(s, c->family);
	memcpy(s->saddr, c->saddr, 16);
	memcpy(s->daddr, c->daddr, 16);
	memcpy(s->smac, c->smac, 6);
	s->vlans = c->vlans;
	if (chance(5))
		pick_dmac(s->dmac);
	s->sport = c->sport;
	s->dport = c->dport;
	cookie = cookie_for(z, c->family, c->saddr, c->daddr, c->sport, c->dport, c->isn);
	after = c->isn + 1 + (uint32_t)c->req_len;
	s->seq = c->isn + 1;
	s->ack = cookie + 1;
	switch (step) {
	case 0:
		s->flags = chance(85) ? T_SYN : (chance(50) ? T_SYN | T_FIN : T_SYN | T_RST);
		s->seq = c->isn;
		s->ack = 0;
		pick_syn_opts(s);
		break;
	case 1:
		s->flags = T_ACK;
		break;
	case 2:
		s->flags = T_ACK | T_PSH | (c->fin_with_req ? T_FIN : 0);
		memcpy(s->pay, c->req, c->req_len);
		s->pay_len = c->req_len;
		in->first_request = 1;
		break;
	case 3:
		s->flags = T_ACK | T_FIN;
		break;
	case 4:
		s->flags = T_ACK;
		s->seq = after;
		s->ack = cookie + t429_len + 2;
		break;
	case 5:
		s->flags = T_ACK | T_FIN;
		s->seq = after;
		s->ack = cookie + t429_len + 2;
		break;
	case 6:
		s->flags = T_RST | T_ACK;
		break;
	default:
		s->flags = T_ACK | T_PSH;
		s->seq = after;
		s->pay_len = 1 + below(100);
		rbytes(s->pay, s->pay_len);
		break;
	}
	if (chance(5))
		s->len_mode = 1 + (int)below(4);
	in->len = build(s, in->b);
	in->kind = K_COOKIE;
	snprintf(in->note, sizeof(in->note), "pool client %ld: %s, cookie %#x (ISN %#x)",
		 (long)(c - z->pool), steps[step], cookie, c->isn);
	free(s);
}

static void gen_struct(struct fz *z, struct input *in)
{
	struct spec *s = malloc(sizeof(*s));
	uint32_t r = below(100);
	int family = chance(50) ? 4 : 6;
	size_t room;

	in->first_request = 0;
	if (!s) {
		in->len = 0;
		return;
	}
	spec_init(s, family);
	pick_src(family, s->saddr);
	pick_dst(family, s->daddr);
	vary_l2_l3(s);
	if (r < 4) {
		static const uint16_t other[] = { ETH_P_ARP, 0x88cc, 0x8847, 0x0842 };

		s->ethertype = other[below(4)];
		s->pay_len = 28 + below(100);
		rbytes(s->pay, s->pay_len);
	} else if (r < 14) {
		s->l4 = IPPROTO_UDP;
		s->sport = chance(50) ? 53 : (uint16_t)rnd();
		s->dport = chance(50) ? 53 : pick_dport();
		s->pay_len = gen_dns(s->pay, sizeof(s->pay));
	} else if (r < 17) {
		static const uint8_t protos[] = { IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_GRE,
						  IPPROTO_SCTP, 255 };

		s->l4 = protos[below(5)];
		s->pay_len = below(64);
		rbytes(s->pay, s->pay_len);
	} else {
		s->sport = chance(90) ? (uint16_t)(1024 + below(64000)) : (uint16_t)below(1024);
		s->dport = pick_dport();
		s->flags = pick_flags();
		s->seq = (uint32_t)rnd();
		s->ack = (s->flags & T_ACK) ? (uint32_t)rnd() : (chance(90) ? 0 : (uint32_t)rnd());
		if (s->flags & T_SYN)
			pick_syn_opts(s);
		else if (chance(30)) {
			/* timestamps, as established segments carry */
			static const uint8_t ts[] = { 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2 };

			memcpy(s->topt, ts, sizeof(ts));
			s->topt_len = 12;
		}
		if (chance(5))
			s->doff = (int)below(16);
		room = FZ_MAX_IN - 200;
		if (s->flags & T_SYN) {
			if (chance(10)) /* a SYN with data: TCP Fast Open */
				s->pay_len = gen_payload(s->pay, room, s->dport);
		} else if ((s->flags & T_ACK) && chance(60)) {
			s->pay_len = gen_payload(s->pay, room, s->dport);
		}
		/* A valid cookie for this random tuple: the first request path, from anyone. */
		if ((s->flags & T_ACK) && !(s->flags & T_SYN) && chance(40)) {
			s->ack = cookie_for(z, family, s->saddr, s->daddr, s->sport, s->dport,
					    s->seq - 1) + 1;
			in->first_request = s->pay_len > 0;
		}
	}
	in->len = build(s, in->b);
	in->kind = in->first_request ? K_COOKIE : K_STRUCT;
	snprintf(in->note, sizeof(in->note), "built: IPv%d, %d VLAN, ethertype %#06x, l4 %u, "
		 "%d ext hdrs, frag %#06x, IP length mode %d, cut %ld%s", family, s->vlans,
		 s->ethertype, s->l4, family == 6 ? s->n_ext : 0, s->frag, s->len_mode, s->cut,
		 in->first_request ? ", valid cookie" : "");
	free(s);
}

static void mutate(struct input *in)
{
	int n = 1 + (int)below(6), i;
	char ops[64] = "";
	size_t o = 0;

	for (i = 0; i < n && in->len; i++) {
		size_t pos = chance(70) && in->len > 1 ? below(in->len < 96 ? (uint32_t)in->len : 96) :
							 below((uint32_t)in->len);
		uint32_t k;

		switch (below(7)) {
		case 0:
		case 1:
			in->b[pos] ^= (uint8_t)(1 << below(8));
			o += (size_t)snprintf(ops + o, sizeof(ops) - o, "flip@%zu ", pos);
			break;
		case 2: {
			static const uint8_t vals[] = { 0, 1, 0x7f, 0x80, 0xff, 0x40, 0x05, 0x06 };

			in->b[pos] = chance(50) ? vals[below(8)] : (uint8_t)rnd();
			o += (size_t)snprintf(ops + o, sizeof(ops) - o, "set@%zu ", pos);
			break;
		}
		case 3:
			in->len = below((uint32_t)in->len + 1);
			o += (size_t)snprintf(ops + o, sizeof(ops) - o, "cut@%zu ", in->len);
			break;
		case 4:
			k = 1 + below(8);
			if (in->len + k > FZ_MAX_IN)
				break;
			memmove(in->b + pos + k, in->b + pos, in->len - pos);
			rbytes(in->b + pos, k);
			in->len += k;
			o += (size_t)snprintf(ops + o, sizeof(ops) - o, "ins%u@%zu ", k, pos);
			break;
		case 5:
			k = 1 + below(8);
			if (pos + k > in->len)
				k = (uint32_t)(in->len - pos);
			memmove(in->b + pos, in->b + pos + k, in->len - pos - k);
			in->len -= k;
			o += (size_t)snprintf(ops + o, sizeof(ops) - o, "del%u@%zu ", k, pos);
			break;
		default:
			if (pos + 2 <= in->len) {
				static const uint16_t v16[] = { 0, 0xffff, 0x8000, 0x0800, 0x86dd,
								0x8100, 1, 40 };

				wr16(in->b + pos, v16[below(8)]);
				o += (size_t)snprintf(ops + o, sizeof(ops) - o, "w16@%zu ", pos);
			}
			break;
		}
	}
	{
		size_t l = strlen(in->note);

		snprintf(in->note + l, sizeof(in->note) - l, "; mutated: %s", ops);
	}
	in->kind = K_MUTATED;
	in->first_request = 0;
}

/* ---- checking one run ----------------------------------------------------------------- */

struct rview {
	int n_vlan;
	uint8_t tags[4 * SL_MAX_VLAN];
	int family;
	uint8_t saddr[16], daddr[16];
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	size_t paylen;
	const uint8_t *payload;
	int rkind;
};

/* Parse a reply and check that it is well-formed; returns NULL or what is wrong. */
static const char *reply_parse(const uint8_t *f, size_t len, struct rview *v)
{
	static char why[128];
	size_t off = 14, l4, tcplen, doff;
	uint32_t ps = 0;
	uint16_t et;

	memset(v, 0, sizeof(*v));
	v->rkind = R_OTHER;
	if (len < 14)
		return "shorter than an Ethernet header";
	et = rd16(f + 12);
	while (is_vlan(et)) {
		if (v->n_vlan == SL_MAX_VLAN)
			return "more than SL_MAX_VLAN VLAN tags";
		if (off + 4 > len)
			return "VLAN tag cut short";
		memcpy(v->tags + 4 * v->n_vlan, f + 12 + 4 * v->n_vlan, 4);
		et = rd16(f + off + 2);
		off += 4;
		v->n_vlan++;
	}
	if (et == ETH_P_IP) {
		size_t tot;

		v->family = 4;
		if (off + 20 > len)
			return "IPv4 header cut short";
		if (f[off] != 0x45) {
			snprintf(why, sizeof(why), "IPv4 version/IHL byte %#x, not 0x45", f[off]);
			return why;
		}
		if (csum_fold(csum_add(f + off, 20, 0)) != 0)
			return "bad IPv4 header checksum";
		if (rd16(f + off + 6) & 0x3fff)
			return "IPv4 fragment";
		if (f[off + 9] != IPPROTO_TCP)
			return "IPv4 protocol not TCP";
		tot = rd16(f + off + 2);
		if (off + tot != len) {
			snprintf(why, sizeof(why), "IPv4 total length %zu, the frame holds %zu", tot,
				 len - off);
			return why;
		}
		memcpy(v->saddr, f + off + 12, 4);
		memcpy(v->daddr, f + off + 16, 4);
		l4 = off + 20;
		tcplen = tot - 20;
		ps = csum_add(v->saddr, 4, ps);
		ps = csum_add(v->daddr, 4, ps);
	} else if (et == ETH_P_IPV6) {
		size_t plen;

		v->family = 6;
		if (off + 40 > len)
			return "IPv6 header cut short";
		if (f[off] >> 4 != 6)
			return "IPv6 version not 6";
		if (f[off + 6] != IPPROTO_TCP)
			return "IPv6 next header not TCP";
		plen = rd16(f + off + 4);
		if (off + 40 + plen != len) {
			snprintf(why, sizeof(why), "IPv6 payload length %zu, the frame holds %zu",
				 plen, len - off - 40);
			return why;
		}
		memcpy(v->saddr, f + off + 8, 16);
		memcpy(v->daddr, f + off + 24, 16);
		l4 = off + 40;
		tcplen = plen;
		ps = csum_add(v->saddr, 16, ps);
		ps = csum_add(v->daddr, 16, ps);
	} else {
		snprintf(why, sizeof(why), "EtherType %#06x", et);
		return why;
	}
	if (tcplen < 20)
		return "TCP header cut short";
	doff = (size_t)(f[l4 + 12] >> 4) * 4;
	if (doff < 20 || doff > tcplen)
		return "bad TCP data offset";
	ps += IPPROTO_TCP + (uint32_t)tcplen;
	if (csum_fold(csum_add(f + l4, tcplen, ps)) != 0)
		return "bad TCP checksum";
	v->sport = rd16(f + l4);
	v->dport = rd16(f + l4 + 2);
	v->seq = rd32(f + l4 + 4);
	v->ack = rd32(f + l4 + 8);
	v->flags = f[l4 + 13];
	v->payload = f + l4 + doff;
	v->paylen = tcplen - doff;
	switch (v->flags) {
	case T_SYN | T_ACK: v->rkind = R_SYNACK; break;
	case T_FIN | T_PSH | T_ACK: v->rkind = R_429; break;
	case T_ACK: v->rkind = R_ACK; break;
	case T_FIN | T_ACK: v->rkind = R_FINACK; break;
	case T_RST:
	case T_RST | T_ACK: v->rkind = R_RST; break;
	default:
		snprintf(why, sizeof(why), "TCP flags %#x are none of a reply's", v->flags);
		return why;
	}
	if (v->rkind == R_429) {
		/* The object's text, but for the Retry-After value: digits, then spaces. */
		const char *ra = strstr(t429, "\r\nRetry-After: ");
		size_t i, from = ra ? (size_t)(ra - t429) + 15 : t429_len, to = from;

		while (to < t429_len && t429[to] != '\r')
			to++;
		if (v->paylen != t429_len || memcmp(v->payload, t429, from) ||
		    memcmp(v->payload + to, t429 + to, t429_len - to)) {
			snprintf(why, sizeof(why), "FIN|PSH|ACK with %zu bytes of data, not the "
				 "object's %zu-byte 429", v->paylen, t429_len);
			return why;
		}
		if (from < to && (v->payload[from] < '1' || v->payload[from] > '9'))
			return "429 Retry-After does not start with a digit 1-9";
		for (i = from; i < to && v->payload[i] >= '0' && v->payload[i] <= '9'; i++)
			;
		for (; i < to; i++)
			if (v->payload[i] != ' ')
				return "429 Retry-After is not digits then spaces";
	} else if (v->paylen) {
		snprintf(why, sizeof(why), "%s carries %zu bytes of data", rkind_names[v->rkind],
			 v->paylen);
		return why;
	}
	return NULL;
}

static const struct sl_port_cfg *port_cfg(const struct fz *z, uint16_t port)
{
	int i;

	for (i = 0; i < z->e.cfg.n_ports; i++)
		if (z->e.cfg.ports[i].port == port)
			return &z->e.cfg.ports[i];
	return NULL;
}

/* Which martian sets does this input fall in? */
static unsigned martians(const uint8_t *f, const struct ref *r)
{
	unsigned m = 0;

	if (!r->eth)
		return 0;
	if (f[6] & 1)
		m |= 1u << M_SRC_MAC;
	if (f[0] & 1)
		m |= 1u << M_DST_MAC;
	if (r->family == 4) {
		if (v4_src_martian(r->saddr))
			m |= 1u << M_SRC_IP;
		if (v4_dst_martian(r->daddr))
			m |= 1u << M_DST_IP;
	} else if (r->family == 6) {
		if (v6_martian(r->saddr))
			m |= 1u << M_SRC_IP;
		if (v6_martian(r->daddr))
			m |= 1u << M_DST_IP;
	}
	if (r->tcp && (r->flags & (T_SYN | T_FIN)) == (T_SYN | T_FIN))
		m |= 1u << M_SYNFIN;
	if (r->tcp && (r->flags & (T_SYN | T_RST)) == (T_SYN | T_RST))
		m |= 1u << M_SYNRST;
	return m;
}

struct run_ctx {
	struct fz *z;
	const struct input *in;
	const struct ref *r;
	int act;
	const uint8_t *out;
	size_t olen;
};

__attribute__((format(printf, 4, 5)))
static void fail(struct run_ctx *c, int inv, int show, const char *fmt, ...)
{
	char msg[512], desc[512];
	va_list ap;

	c->z->inv_failed[inv]++;
	if (!show)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	describe(c->in->b, c->in->len, c->r, desc, sizeof(desc));
	diag("FAIL invariant %s: %s", inv_tag[inv], msg);
	diag("  config %s, iteration %ld, kind %s; SL_FUZZ_SEED=%#" PRIx64 " SL_FUZZ_ITERS=%ld",
	     c->z->name, c->z->iter, kind_names[c->in->kind], g_seed, g_iters);
	diag("  input: %s", desc);
	diag("  made as: %s", c->in->note);
	diag("  verdict: %s%s", c->act == XDP_TX ? "XDP_TX" : c->act == XDP_PASS ? "XDP_PASS" :
	     c->act == XDP_DROP ? "XDP_DROP" : c->act == XDP_ABORTED ? "XDP_ABORTED" : "?",
	     c->out ? ", output below" : "");
	hexdump("in", c->in->b, c->in->len);
	if (c->out)
		hexdump("out", c->out, c->olen);
}

static long g_show = FZ_SHOW;

static int show_next(int inv)
{
	return inv_shown[inv]++ < g_show;
}

static uint64_t conn_hash(const struct ref *r)
{
	uint64_t h = 1469598103934665603ull;
	uint8_t k[48];
	size_t i;

	memset(k, 0, sizeof(k));
	k[0] = (uint8_t)r->family;
	memcpy(k + 1, r->saddr, 16);
	memcpy(k + 17, r->daddr, 16);
	wr16(k + 33, r->sport);
	wr16(k + 35, r->dport);
	wr32(k + 37, r->seq);
	for (i = 0; i < sizeof(k); i++)
		h = (h ^ k[i]) * 1099511628211ull;
	return h | 1;
}

/* A 429 for the connection of @r: was there one within FZ_ONCE_NS? */
static int once_seen(struct fz *z, const struct ref *r)
{
	uint64_t h = conn_hash(r), now = sl_now_ns();
	uint32_t i, slot = (uint32_t)(h >> 40) & (ONCE_SLOTS - 1);

	for (i = 0; i < 64; i++, slot = (slot + 1) & (ONCE_SLOTS - 1)) {
		struct once_ent *e = &z->once[slot];

		if (e->h == h) {
			int dup = now - e->at_ns < FZ_ONCE_NS;

			e->at_ns = now;
			return dup;
		}
		if (!e->h) {
			e->h = h;
			e->at_ns = now;
			return 0;
		}
	}
	return 0; /* the probe ran out: forget it, never a false alarm */
}

static void check_reply(struct run_ctx *c)
{
	struct fz *z = c->z;
	const struct input *in = c->in;
	const struct ref *r = c->r;
	const uint8_t *f = in->b;
	const struct sl_port_cfg *pc;
	struct rview v;
	const char *bad;
	unsigned m;
	int k;

	/* size */
	z->inv_checked[I_SIZE]++;
	if (c->olen < FZ_MIN_REPLY || c->olen > in->len + t429_len)
		fail(c, I_SIZE, show_next(I_SIZE), "a %zu-byte reply to a %zu-byte input", c->olen,
		     in->len);

	/* well-formed */
	z->inv_checked[I_FORM]++;
	bad = reply_parse(c->out, c->olen, &v);
	z->replies[v.rkind]++;
	if (bad)
		fail(c, I_FORM, show_next(I_FORM), "the reply is malformed: %s", bad);

	/* addressed back */
	z->inv_checked[I_ADDR]++;
	if (!bad) {
		char what[160] = "";

		if (memcmp(c->out, f + 6, 6) || memcmp(c->out + 6, f, 6))
			snprintf(what, sizeof(what), "Ethernet addresses not swapped");
		else if (v.n_vlan != r->n_vlan || memcmp(v.tags, r->tags, 4 * (size_t)r->n_vlan))
			snprintf(what, sizeof(what), "%d VLAN tag(s) for the input's %d, or other "
				 "tags", v.n_vlan, r->n_vlan);
		else if (v.family != r->family)
			snprintf(what, sizeof(what), "an IPv%d reply to IPv%d", v.family, r->family);
		else if (memcmp(v.daddr, r->saddr, r->family == 4 ? 4 : 16) ||
			 memcmp(v.saddr, r->daddr, r->family == 4 ? 4 : 16))
			snprintf(what, sizeof(what), "addresses not swapped");
		else if (r->tcp && (v.dport != r->sport || v.sport != r->dport))
			snprintf(what, sizeof(what), "ports %u -> %u for an input %u -> %u", v.sport,
				 v.dport, r->sport, r->dport);
		if (what[0])
			fail(c, I_ADDR, show_next(I_ADDR), "%s", what);
	}

	/* what it answers */
	z->inv_checked[I_ANSWER]++;
	pc = r->tcp ? port_cfg(z, r->dport) : NULL;
	if (!r->tcp) {
		fail(c, I_ANSWER, show_next(I_ANSWER), "a reply to a frame with no TCP header to "
		     "read: %s", r->why);
	} else if (!pc) {
		fail(c, I_ANSWER, show_next(I_ANSWER), "a reply on unprotected port %u", r->dport);
	} else if (r->n_vlan > SL_MAX_VLAN) {
		fail(c, I_ANSWER, show_next(I_ANSWER), "a reply to a frame under %d VLAN tags (a "
		     "reply carries at most %d)", r->n_vlan, SL_MAX_VLAN);
	} else if (r->flags & T_RST) {
		fail(c, I_ANSWER, show_next(I_ANSWER), "%s in answer to a RST", rkind_a[v.rkind]);
	} else if (pc->front == SL_FRONT_SYN && pc->action != SL_ACT_REPLY) {
		fail(c, I_ANSWER, show_next(I_ANSWER), "a reply on port %u (syn front, drop)",
		     r->dport);
	} else if (!bad) {
		uint32_t fin = (r->flags & T_FIN) ? 1 : 0;
		char what[200] = "";

		switch (v.rkind) {
		case R_SYNACK:
			if ((r->flags & (T_SYN | T_ACK)) != T_SYN)
				snprintf(what, sizeof(what), "a SYN-ACK to a segment that is no SYN");
			else if (v.ack != r->seq + 1)
				snprintf(what, sizeof(what), "SYN-ACK ack %u, the SYN's ISN + 1 is %u",
					 v.ack, r->seq + 1);
			break;
		case R_429:
			if ((r->flags & (T_SYN | T_ACK)) != T_ACK || !r->payload)
				snprintf(what, sizeof(what), "a 429 to a segment without ACK or data");
			else if (pc->action != SL_ACT_REPLY || pc->proto != SL_PROTO_HTTP)
				snprintf(what, sizeof(what), "a 429 on port %u, which does not reply",
					 r->dport);
			else if (v.seq != r->ack || v.ack != r->seq + r->payload + fin)
				snprintf(what, sizeof(what), "429 seq %u ack %u; the segment asks for "
					 "seq %u ack %u", v.seq, v.ack, r->ack,
					 r->seq + r->payload + fin);
			break;
		case R_ACK:
			if ((r->flags & (T_SYN | T_ACK | T_FIN)) != (T_ACK | T_FIN))
				snprintf(what, sizeof(what), "an ACK to a segment that is no FIN");
			else if (v.ack != r->seq + r->payload + 1)
				snprintf(what, sizeof(what), "ACK ack %u; the FIN ends at %u", v.ack,
					 r->seq + r->payload + 1);
			break;
		case R_RST:
			/* RFC 793: from the segment's ack when it has one, else seq 0 with an
			 * ACK of everything it occupies. */
			if (r->flags & T_ACK) {
				if (v.seq != r->ack)
					snprintf(what, sizeof(what), "RST seq %u; the segment's ack is "
						 "%u", v.seq, r->ack);
			} else if (!(v.flags & T_ACK) ||
				   v.ack != r->seq + r->payload + !!(r->flags & T_SYN) + fin) {
				snprintf(what, sizeof(what), "RST without the ACK of the segment "
					 "(ack %u, want %u)", v.ack,
					 r->seq + r->payload + !!(r->flags & T_SYN) + fin);
			}
			break;
		case R_FINACK:
			if ((r->flags & (T_SYN | T_ACK | T_FIN)) != (T_ACK | T_FIN) || r->payload)
				snprintf(what, sizeof(what), "a FIN-ACK to a segment that is no bare "
					 "FIN");
			else if (v.seq != r->ack || v.ack != r->seq + 1)
				snprintf(what, sizeof(what), "FIN-ACK seq %u ack %u; the FIN asks for "
					 "seq %u ack %u", v.seq, v.ack, r->ack, r->seq + 1);
			break;
		}
		if (what[0])
			fail(c, I_ANSWER, show_next(I_ANSWER), "%s", what);
	}

	/* only to a datagram the kernel would take */
	z->inv_checked[I_SANE]++;
	if (r->tcp && r->insane)
		fail(c, I_SANE, show_next(I_SANE), "%s to a datagram with %s", rkind_a[v.rkind],
		     r->insane);
	if (r->family == 4 && csum_fold(csum_add(f + r->l3, (size_t)(f[r->l3] & 15) * 4, 0)))
		z->insane_csum_replies++;

	/* martians: one failure per frame, the first frame of each set shown */
	m = martians(f, r);
	if (m) {
		char sets[200] = "";
		size_t o = 0;
		int show = 0;

		for (k = 0; k < M__MAX; k++)
			if (m & (1u << k)) {
				z->m_replied[k]++;
				show |= martian_shown[k]++ < (g_show + 2) / 3;
				o += (size_t)snprintf(sets + o, sizeof(sets) - o, "%s%s", o ? ", " : "",
						      martian_names[k]);
			}
		fail(c, I_MARTIAN, show, "%s to a martian (%s)", rkind_a[v.rkind], sets);
	}

	/* one 429 per connection */
	if (!bad && v.rkind == R_429 && r->tcp) {
		z->inv_checked[I_ONCE]++;
		if (once_seen(z, r))
			fail(c, I_ONCE, show_next(I_ONCE), "a second 429 for the connection %u -> %u "
			     "with ISN %u", r->sport, r->dport, r->seq - 1);
	}

	/* from our own addresses only, and never to them */
	if (z->local_fd >= 0 && r->family) {
		z->inv_checked[I_LOCAL]++;
		if (!is_local(z, r->family, r->daddr))
			fail(c, I_LOCAL, show_next(I_LOCAL), "%s from an address the node does not "
			     "serve", rkind_a[v.rkind]);
		else if (is_local(z, r->family, r->saddr))
			fail(c, I_LOCAL, show_next(I_LOCAL), "%s to one of the node's own addresses",
			     rkind_a[v.rkind]);
	}
}

/* Run one input and check every invariant. Returns the XDP action, or -1. */
static int run_check(struct fz *z, const struct input *in)
{
	static uint8_t out[FZ_OUT];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in->b, .data_size_in = (__u32)in->len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);
	struct ref r;
	struct run_ctx c = { .z = z, .in = in, .r = &r };
	long *bk = z->by_kind[in->kind];
	unsigned m;
	int err, k;

	ref_parse(in->b, in->len, &r);
	err = bpf_prog_test_run_opts(z->e.prog_fd, &o) ? errno : 0;
	bk[0]++;
	z->inv_checked[I_RUN]++;
	if (in->len < 14) {
		c.act = -1;
		bk[1]++;
		if (err != EINVAL)
			fail(&c, I_RUN, show_next(I_RUN), "a %zu-byte frame: test_run gave %s, not "
			     "EINVAL", in->len, err ? strerror(err) : "success");
		return -1;
	}
	if (err) {
		c.act = -1;
		bk[1]++;
		fail(&c, I_RUN, show_next(I_RUN), "test_run failed: %s", strerror(err));
		return -1;
	}
	c.act = (int)o.retval;
	c.out = out;
	c.olen = o.data_size_out;
	m = martians(in->b, &r);
	for (k = 0; k < M__MAX; k++)
		if ((m & (1u << k)) && r.tcp && port_cfg(z, r.dport))
			z->m_seen[k]++;
	if (m)
		z->inv_checked[I_MARTIAN]++;
	switch (c.act) {
	case XDP_PASS:
		bk[2]++;
		z->inv_checked[I_PASS]++;
		if (c.olen != in->len || memcmp(out, in->b, in->len))
			fail(&c, I_PASS, show_next(I_PASS), "XDP_PASS with a changed frame (%zu bytes "
			     "in, %zu out)", in->len, c.olen);
		break;
	case XDP_DROP:
		bk[3]++;
		break;
	case XDP_TX:
		bk[4]++;
		check_reply(&c);
		break;
	default:
		bk[1]++;
		fail(&c, I_RUN, show_next(I_RUN), "retval %d", c.act);
		break;
	}
	return c.act;
}

/* ---- the fuzz loop -------------------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fuzz(struct fz *z, long iters, double max_s)
{
	static struct input in, base;
	double t0 = now_s();
	long i;

	for (i = 0; i < iters; i++) {
		uint32_t r = below(100);

		z->iter = i;
		if ((i & 1023) == 0 && now_s() - t0 > max_s) {
			z->stopped_early = 1;
			break;
		}
		memset(&in, 0, offsetof(struct input, note));
		in.note[0] = '\0';
		if (r < 8) {
			gen_random(&in);
		} else if (r < 16) {
			gen_random_l3(&in);
		} else if (r < 46) {
			gen_struct(z, &in);
		} else if (r < 72) {
			gen_cookie(z, &in);
		} else {
			if (chance(50))
				gen_struct(z, &base);
			else
				gen_cookie(z, &base);
			in = base;
			mutate(&in);
		}
		run_check(z, &in);
		if (in.first_request && chance(30)) {
			in.kind = K_REPLAY;
			run_check(z, &in);
		}
	}
	z->done = i;
	z->secs = now_s() - t0;
}

static void print_stats(struct fz *z)
{
	struct sl_counters rows[SL_STATS_ROWS];
	char line[1024];
	size_t o;
	int k, rr;

	diag("%s: %ld iterations in %.1f s%s", z->name, z->done, z->secs,
	     z->stopped_early ? " (stopped early: SL_FUZZ_MAX_S)" : "");
	diag("  %-10s %8s %8s %8s %8s %8s", "kind", "frames", "refused", "pass", "drop", "tx");
	for (k = 0; k < K__MAX; k++)
		diag("  %-10s %8ld %8ld %8ld %8ld %8ld", kind_names[k], z->by_kind[k][0],
		     z->by_kind[k][1], z->by_kind[k][2], z->by_kind[k][3], z->by_kind[k][4]);
	diag("  replies: SYN-ACK %ld, 429 %ld, ACK %ld, FIN-ACK %ld, RST %ld, malformed %ld",
	     z->replies[R_SYNACK], z->replies[R_429], z->replies[R_ACK], z->replies[R_FINACK],
	     z->replies[R_RST], z->replies[R_OTHER]);
	o = 0;
	for (k = 0; k < I__MAX; k++)
		o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%d %ld/%ld", k ? ", " : "",
				      k + 1, z->inv_failed[k], z->inv_checked[k]);
	diag("  invariants failed/checked: %s", line);
	o = 0;
	for (k = 0; k < M__MAX; k++)
		o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s %ld/%ld", k ? ", " : "",
				      martian_names[k], z->m_replied[k], z->m_seen[k]);
	diag("  martian replies / martian segments to protected ports: %s", line);
	if (z->insane_csum_replies)
		diag("  (replies to IPv4 headers with a bad checksum, counted only: %ld)",
		     z->insane_csum_replies);
	if (sl_maps_read_stats(&z->e.maps, rows))
		return;
	o = 0;
	for (k = 0; k < SL_R__MAX; k++) {
		uint64_t n = 0;

		for (rr = 0; rr < SL_STATS_ROWS; rr++)
			n += rows[rr].pkts[k];
		if (o < sizeof(line))
			o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s %" PRIu64,
					      k ? ", " : "", sl_reason_name((unsigned)k), n);
	}
	diag("  reasons counted: %s", line);
}

/* The fuzz must keep reaching the paths that reply, or its invariants say nothing. */
static void coverage(struct fz *zs, int n)
{
	/* The parse errors and the cookie paths; not the reasons a datapath change may move
	 * (fragments, the extension-header bound, verdicts, races), nor the VLAN walk's bound,
	 * which no frame of FZ_MAX_IN bytes reaches. */
	static const unsigned want[] = { SL_R_NOT_PROTECTED, SL_R_NOT_SYN, SL_R_SHED_PREFIX,
		SL_R_MAL_VLAN, SL_R_MAL_IP4, SL_R_MAL_IP4_IHL, SL_R_MAL_IP6,
		SL_R_MAL_IP6_EXT, SL_R_MAL_TCP, SL_R_MAL_TCP_DOFF, SL_R_COOKIE_ACK,
		SL_R_REPLIED_429, SL_R_COOKIE_FIN, SL_R_COOKIE_DROP, SL_R_COOKIE_BAD,
		SL_R_HANDSHAKE, SL_R_FIRST_ADMITTED };
	long replies[R__MAX] = { 0 }, done = 0;
	uint64_t hit[SL_REASON_SLOTS] = { 0 };
	char missing[512] = "";
	size_t o = 0, i;
	int k, z, rr;

	for (z = 0; z < n; z++) {
		struct sl_counters rows[SL_STATS_ROWS];

		done += zs[z].done;
		for (k = 0; k < R__MAX; k++)
			replies[k] += zs[z].replies[k];
		if (sl_maps_read_stats(&zs[z].e.maps, rows))
			continue;
		for (rr = 0; rr < SL_STATS_ROWS; rr++)
			for (k = 0; k < SL_REASON_SLOTS; k++)
				hit[k] += rows[rr].pkts[k];
	}
	if (done < 50000) {
		tap(true, "coverage # SKIP %ld iterations are too few to ask for it", done);
		return;
	}
	for (k = R_SYNACK; k <= R_429; k++)
		if (!replies[k])
			o += (size_t)snprintf(missing + o, sizeof(missing) - o, " %s reply,",
					      rkind_names[k]);
	if (!replies[R_ACK] && !replies[R_FINACK] && !replies[R_RST])
		o += (size_t)snprintf(missing + o, sizeof(missing) - o, " any reply to a FIN,");
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!hit[want[i]])
			o += (size_t)snprintf(missing + o, sizeof(missing) - o, " %s,",
					      sl_reason_name(want[i]));
	tap(!o, "coverage: the fuzz reached the SYN-ACK, the 429, a reply to a FIN and %zu datapath "
	    "reasons%s%s",
	    sizeof(want) / sizeof(want[0]), o ? "; missing:" : "", missing);
}

/* ---- named regression frames ---------------------------------------------------------- */

struct reg {
	const char *what;
	int env;           /* 0 roomy, 1 tiny */
	int family;
	const char *src, *dst;
	const uint8_t *smac, *dmac;
	uint16_t dport;
	uint8_t flags;
	int cookie_request; /* a first request with a valid cookie */
	int len_mode;
	int want_tx;        /* 1: a control that must be answered; 0: must not be */
	int version;        /* the IP version nibble, when not the family's */
};

static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t mcast4[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };

static const struct reg regs[] = {
	{ .what = "control: a SYN from 203.0.113.7 to a stateless port gets its SYN-ACK",
	  .family = 4, .src = "203.0.113.7", .dst = "10.0.0.2", .dport = 8080, .flags = T_SYN,
	  .want_tx = 1 },
	{ .what = "control: a first request from 203.0.113.7 with a valid cookie gets its 429 "
		  "(tiny buckets)",
	  .env = 1, .family = 4, .src = "203.0.113.7", .dst = "10.0.0.2", .dport = 8080,
	  .flags = T_ACK | T_PSH, .cookie_request = 1, .want_tx = 1 },
	{ .what = "control: a SYN from 2001:db8:2000::7 to a syn-front reply port is shed with a "
		  "SYN-ACK (tiny buckets)",
	  .env = 1, .family = 6, .src = "2001:db8:2000::7", .dst = "2001:db8:ffff::2",
	  .dport = 80, .flags = T_SYN, .want_tx = 1 },
	{ .what = "a SYN from 127.0.0.1 gets no SYN-ACK", .family = 4, .src = "127.0.0.1",
	  .dst = "10.0.0.2", .dport = 8080, .flags = T_SYN },
	{ .what = "a SYN from 0.0.0.0 gets no SYN-ACK", .family = 4, .src = "0.0.0.0",
	  .dst = "10.0.0.2", .dport = 8080, .flags = T_SYN },
	{ .what = "a SYN from 224.0.0.5 gets no SYN-ACK", .env = 1, .family = 4,
	  .src = "224.0.0.5", .dst = "10.0.0.2", .dport = 80, .flags = T_SYN },
	{ .what = "a SYN from 255.255.255.255 gets no SYN-ACK", .env = 1, .family = 4,
	  .src = "255.255.255.255", .dst = "10.0.0.2", .dport = 80, .flags = T_SYN },
	{ .what = "a SYN to 255.255.255.255 gets no SYN-ACK", .family = 4, .src = "203.0.113.7",
	  .dst = "255.255.255.255", .dport = 8080, .flags = T_SYN },
	{ .what = "a SYN to 224.0.0.1 gets no SYN-ACK", .family = 4, .src = "203.0.113.7",
	  .dst = "224.0.0.1", .dport = 443, .flags = T_SYN },
	{ .what = "a SYN to 127.0.0.1 gets no SYN-ACK", .family = 4, .src = "203.0.113.7",
	  .dst = "127.0.0.1", .dport = 8081, .flags = T_SYN },
	{ .what = "a SYN from ::1 gets no SYN-ACK", .family = 6, .src = "::1",
	  .dst = "2001:db8:ffff::2", .dport = 8080, .flags = T_SYN },
	{ .what = "a SYN from ff02::1 gets no SYN-ACK", .family = 6, .src = "ff02::1",
	  .dst = "2001:db8:ffff::2", .dport = 8080, .flags = T_SYN },
	{ .what = "a SYN from ::ffff:10.0.0.9 gets no SYN-ACK", .env = 1, .family = 6,
	  .src = "::ffff:10.0.0.9", .dst = "2001:db8:ffff::2", .dport = 80, .flags = T_SYN },
	{ .what = "a SYN to ff02::1 gets no SYN-ACK", .family = 6, .src = "2001:db8:2000::7",
	  .dst = "ff02::1", .dport = 8080, .flags = T_SYN },
	{ .what = "a SYN from a broadcast source MAC gets no SYN-ACK", .family = 4,
	  .src = "203.0.113.8", .dst = "10.0.0.2", .smac = bcast, .dport = 8080,
	  .flags = T_SYN },
	{ .what = "a SYN to the broadcast MAC gets no SYN-ACK", .family = 4,
	  .src = "203.0.113.8", .dst = "10.0.0.2", .dmac = bcast, .dport = 8080,
	  .flags = T_SYN },
	{ .what = "a SYN to a multicast MAC gets no SYN-ACK", .env = 1, .family = 6,
	  .src = "2001:db8:2000::8", .dst = "2001:db8:ffff::2", .dmac = mcast4, .dport = 80,
	  .flags = T_SYN },
	{ .what = "a SYN|FIN gets no SYN-ACK", .family = 4, .src = "203.0.113.9",
	  .dst = "10.0.0.2", .dport = 8080, .flags = T_SYN | T_FIN },
	{ .what = "a SYN|RST gets no SYN-ACK (tiny buckets, syn front)", .env = 1, .family = 4,
	  .src = "203.0.113.9", .dst = "10.0.0.2", .dport = 80, .flags = T_SYN | T_RST },
	{ .what = "a first request from 127.0.0.1 with a valid cookie gets no 429", .env = 1,
	  .family = 4, .src = "127.0.0.1", .dst = "10.0.0.2", .dport = 8080,
	  .flags = T_ACK | T_PSH, .cookie_request = 1 },
	{ .what = "a first request from ff02::1 with a valid cookie gets no 429", .env = 1,
	  .family = 6, .src = "ff02::1", .dst = "2001:db8:ffff::2", .dport = 8080,
	  .flags = T_ACK | T_PSH, .cookie_request = 1 },
	{ .what = "a first request whose IPv4 total length runs 200 bytes past the frame gets no "
		  "429",
	  .env = 1, .family = 4, .src = "203.0.113.10", .dst = "10.0.0.2", .dport = 8080,
	  .flags = T_ACK | T_PSH, .cookie_request = 1, .len_mode = 5 },
	{ .what = "a SYN behind the IPv4 EtherType whose header says version 6 gets no SYN-ACK",
	  .family = 4, .src = "203.0.113.11", .dst = "10.0.0.2", .dport = 8080, .flags = T_SYN,
	  .version = 6 },
};

static void regressions(struct fz *zs)
{
	size_t i;

	for (i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		const struct reg *g = &regs[i];
		struct fz *z = &zs[g->env];
		static struct spec s;
		static struct input in;
		struct ref r;
		int act;

		spec_init(&s, g->family);
		inet_pton(g->family == 4 ? AF_INET : AF_INET6, g->src, s.saddr);
		inet_pton(g->family == 4 ? AF_INET : AF_INET6, g->dst, s.daddr);
		if (g->smac)
			memcpy(s.smac, g->smac, 6);
		if (g->dmac)
			memcpy(s.dmac, g->dmac, 6);
		s.sport = (uint16_t)(50000 + i);
		s.dport = g->dport;
		s.flags = g->flags;
		s.seq = 0x1000 + (uint32_t)i;
		s.len_mode = g->len_mode;
		if (g->version)
			s.version = g->version;
		if (g->cookie_request) {
			const char *req = "POST /login HTTP/1.1\r\nHost: acme.example\r\n\r\n";

			s.ack = cookie_for(z, g->family, s.saddr, s.daddr, s.sport, s.dport,
					   s.seq - 1) + 1;
			s.pay_len = strlen(req);
			memcpy(s.pay, req, s.pay_len);
		}
		memset(&in, 0, sizeof(in));
		in.len = build(&s, in.b);
		in.kind = K_STRUCT;
		act = run(&z->e, in.b, in.len);
		ref_parse(in.b, in.len, &r);
		tap(g->want_tx ? act == XDP_TX : act != XDP_TX && act >= 0, "regression: %s (%s)",
		    g->what, act_name(act));
		if ((g->want_tx ? act != XDP_TX : act == XDP_TX)) {
			char desc[512];

			describe(in.b, in.len, &r, desc, sizeof(desc));
			diag("  config %s: %s", z->name, desc);
			hexdump("in", in.b, in.len);
		}
	}
}

/* ---- main ----------------------------------------------------------------------------- */

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);
	char *end;
	uint64_t x;

	if (!v || !*v)
		return dflt;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || *end) {
		printf("Bail out! %s=%s is not a number\n", name, v);
		exit(1);
	}
	return x;
}

int main(void)
{
	static struct fz zs[2];
	static const char *const names[2] = { "A (buckets with room)", "B (tiny buckets)" };
	const char *confs[2] = { conf_roomy, conf_tiny };
	uint64_t fresh = 0;
	double max_s;
	int i, k, ret;

	log_set_level(LOG_LVL_ERROR);
	log_hook_libbpf();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("1..0 # SKIP BPF_PROG_TEST_RUN needs root\n");
		return 0;
	}
	if (getrandom(&fresh, sizeof(fresh), 0) != sizeof(fresh))
		fresh = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	g_seed = env_u64("SL_FUZZ_SEED", fresh);
	g_iters = (long)env_u64("SL_FUZZ_ITERS", 200000);
	max_s = (double)env_u64("SL_FUZZ_MAX_S", 25);
	g_show = (long)env_u64("SL_FUZZ_SHOW", FZ_SHOW);
	diag("seed %#" PRIx64 ", %ld iterations, at most %.0f s: reproduce with SL_FUZZ_SEED=%#"
	     PRIx64 " SL_FUZZ_ITERS=%ld", g_seed, g_iters, max_s, g_seed, g_iters);

	for (i = 0; i < 2; i++) {
		ret = fz_open(&zs[i], names[i], i, confs[i]);
		if (ret == -EBADMSG) {
			printf("Bail out! the fuzz config %s does not load\n", names[i]);
			return 1;
		}
		if (ret) {
			printf("1..0 # SKIP cannot load the XDP object here: %s\n", strerror(-ret));
			return 0;
		}
	}
	for (i = 0; i < 2; i++) {
		rseed(g_seed ^ (0x1234ull + (uint64_t)i));
		fuzz(&zs[i], g_iters / 2 + (i ? g_iters % 2 : 0), max_s / 2);
	}
	for (i = 0; i < 2; i++)
		print_stats(&zs[i]);

	for (k = 0; k < I__MAX; k++) {
		long checked = zs[0].inv_checked[k] + zs[1].inv_checked[k];
		long failed = zs[0].inv_failed[k] + zs[1].inv_failed[k];

		if (k == I_LOCAL && zs[0].local_fd < 0 && zs[1].local_fd < 0) {
			tap(true, "%d. %s # SKIP the object has no local-address map%s", k + 1,
			    inv_text[k], zs[0].local_unknown ? " this fuzzer knows how to fill" : "");
		} else if (!checked && zs[0].done + zs[1].done < 50000) {
			tap(true, "%d. %s # SKIP never exercised in %ld iterations", k + 1,
			    inv_text[k], zs[0].done + zs[1].done);
		} else {
			/* Never exercised in a full run: the fuzz lost its reach, which is a failure. */
			tap(!failed && checked, "%d. %s (%ld of %ld failed)", k + 1, inv_text[k],
			    failed, checked);
		}
	}
	coverage(zs, 2);
	regressions(zs);
	for (i = 0; i < 2; i++)
		fz_close(&zs[i]);
	printf("1..%d\n", n_test);
	return n_fail ? 1 : 0;
}
