// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * BPF_PROG_TEST_RUN fixtures for the stateless front's request reader: every way a first
 * request can name (or fail to name) its route and tenant. Each row builds a cookie
 * connection the way a client would (the cookie is made with the installation's key, as the
 * datapath makes it), sends its first request segment, and checks the verdict and which route
 * and tenant row of the outcome counters moved.
 */
#include "bpfenv.h"

#include "sluice/cookie.h"

#define CONF                                                                                 \
	"edge: { interfaces = [\"lo\"];\n"                                                   \
	"  ports = ( { port = 80; front = \"stateless\"; action = \"reply\"; cost = 7; },\n"  \
	"            { port = 443; front = \"stateless\"; protocol = \"tls\"; cost = 3; } );\n" \
	"  state_entries = 4096; new_key_credit = 1.0; };\n"                                 \
	"classes = ( { name = \"unknown\"; rate = 0.001; burst = 100000.0;\n"                 \
	"              parent_burst = 1000000.0; } );\n"                                     \
	"routes = (\n"                                                                       \
	"  { name = \"login\"; method = \"POST\"; path = \"/login\"; cpu = 950.0; },\n"       \
	"  { name = \"token\"; method = \"GET\"; path = \"/token\"; cpu = 40.0; },\n"         \
	"  { name = \"validate\"; method = \"GET\"; path = \"/token/validate\"; cpu = 1.0; },\n" \
	"  { name = \"health\"; method = \"*\"; path = \"/health\"; cpu = 2.0; },\n"          \
	"  { name = \"any-token\"; method = \"*\"; path = \"/token/validate/x\"; cpu = 5.0; }\n" \
	");\n"                                                                               \
	"tenants = ( { name = \"acme\"; hosts = [\"acme.example\"]; rate = 0.001; burst = 1e6; },\n" \
	"            { name = \"beta\"; hosts = [\"beta.example\"]; rate = 0.001; burst = 1e6; } );\n"

enum { R_LOGIN, R_TOKEN, R_VALIDATE, R_HEALTH, R_ANYTOKEN, R_DEFAULT = SL_EDGE_ROUTES };
enum { T_ACME, T_BETA, T_DEST = SL_MAX_TENANTS };

static uint16_t next_port = 30000;

/* The first request of a fresh cookie connection; returns the verdict. */
static int first_request(struct env *e, uint16_t dport, const uint8_t *data, size_t n)
{
	struct sl_cookie_keys keys;
	struct sl_cookie_opts o = { 0 };
	struct sl_conn_id id = { .family = SL_FAM_V4, .dport = dport, .isn = 1000 };
	struct fspec f = { .family = 4, .src = "192.0.2.9", .dst = "10.0.0.2", .dport = dport,
			   .flags = F_ACK | 0x08, .seq = 1001, .payload = 0 };
	uint8_t frame[1400];
	struct fbuilt b;
	__u32 zero = 0;

	id.sport = f.sport = next_port++;
	inet_pton(AF_INET, f.src, id.saddr);
	inet_pton(AF_INET, f.dst, id.daddr);
	bpf_map_lookup_elem(e->maps.cookie_keys, &zero, &keys);
	f.ack = sl_cookie_make(&id, sl_now_ns(), &o, &keys) + 1;
	f.payload = 0;
	b = build_frame(&f, frame);
	if (b.len + n > sizeof(frame))
		return -1;
	memcpy(frame + b.len, data, n);
	/* Fix the IP length for the payload appended after the builder. */
	{
		struct iphdr *ip = (struct iphdr *)(frame + b.l3);

		ip->tot_len = htons((uint16_t)(ntohs(ip->tot_len) + n));
	}
	return run(e, frame, b.len + n);
}

static void expect_route(struct env *e, const char *what, uint16_t port, const char *req,
			 size_t n, int want_act, uint32_t route, uint32_t tenant)
{
	static struct sl_outcome r0[SL_EDGE_ROUTES + 1], r1[SL_EDGE_ROUTES + 1];
	static struct sl_outcome t0[SL_MAX_TENANTS + 1], t1[SL_MAX_TENANTS + 1];
	int act;
	bool ok;

	sl_maps_read_outcomes(e->maps.route_stats, SL_EDGE_ROUTES + 1, r0);
	sl_maps_read_outcomes(e->maps.tenant_stats, SL_MAX_TENANTS + 1, t0);
	act = first_request(e, port, (const uint8_t *)req, n);
	sl_maps_read_outcomes(e->maps.route_stats, SL_EDGE_ROUTES + 1, r1);
	sl_maps_read_outcomes(e->maps.tenant_stats, SL_MAX_TENANTS + 1, t1);
	ok = act == want_act &&
	     r1[route].admitted + r1[route].shed == r0[route].admitted + r0[route].shed + 1 &&
	     t1[tenant].admitted + t1[tenant].shed == t0[tenant].admitted + t0[tenant].shed + 1;
	tap(ok, "%s -> route %u, tenant %u", what, route, tenant);
	if (!ok) {
		uint32_t i;

		diag("  verdict %d (want %d)", act, want_act);
		for (i = 0; i <= SL_EDGE_ROUTES; i++)
			if (r1[i].admitted + r1[i].shed != r0[i].admitted + r0[i].shed)
				diag("  route %u moved", i);
		for (i = 0; i <= SL_MAX_TENANTS; i++)
			if (t1[i].admitted + t1[i].shed != t0[i].admitted + t0[i].shed)
				diag("  tenant %u moved", i);
	}
}

#define HTTP(req) req, sizeof(req) - 1

/* A TLS 1.2-style ClientHello carrying @sni (or none when NULL). */
static size_t client_hello(uint8_t *b, const char *sni)
{
	size_t n = 0, ext_start, hs_start, sl = sni ? strlen(sni) : 0;
	int i;

	b[n++] = 22; b[n++] = 3; b[n++] = 1; n += 2;         /* record; length later */
	hs_start = n;
	b[n++] = 1; n += 3;                                  /* ClientHello; length later */
	b[n++] = 3; b[n++] = 3;                              /* version */
	for (i = 0; i < 32; i++)
		b[n++] = (uint8_t)i;                         /* random */
	b[n++] = 32;
	for (i = 0; i < 32; i++)
		b[n++] = 0xaa;                               /* session id */
	b[n++] = 0; b[n++] = 4; b[n++] = 0x13; b[n++] = 1; b[n++] = 0xc0; b[n++] = 0x2f;
	b[n++] = 1; b[n++] = 0;                              /* compression: null */
	n += 2;                                              /* extensions length later */
	ext_start = n;
	b[n++] = 0; b[n++] = 23; b[n++] = 0; b[n++] = 0;     /* extended_master_secret, empty */
	b[n++] = 0; b[n++] = 10; b[n++] = 0; b[n++] = 4;     /* supported_groups */
	b[n++] = 0; b[n++] = 2; b[n++] = 0; b[n++] = 29;
	if (sni) {
		b[n++] = 0; b[n++] = 0;                      /* server_name */
		b[n++] = 0; b[n++] = (uint8_t)(sl + 5);
		b[n++] = 0; b[n++] = (uint8_t)(sl + 3);      /* list length */
		b[n++] = 0;                                  /* host_name */
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
	return n;
}

int main(void)
{
	char big[1200];
	uint8_t hello[512];
	struct env e;
	size_t n;
	int ret;

	log_set_level(LOG_LVL_ERROR);
	log_hook_libbpf();
	if (geteuid() != 0) {
		printf("1..0 # SKIP BPF_PROG_TEST_RUN needs root\n");
		return 0;
	}
	ret = env_open(&e, CONF, "");
	if (ret == -EBADMSG) {
		printf("Bail out! the fixture config does not load\n");
		return 1;
	}
	if (ret) {
		printf("1..0 # SKIP cannot load the XDP object here: %s\n", strerror(-ret));
		env_close(&e);
		return 0;
	}

	expect_route(&e, "POST /login", 80,
		     HTTP("POST /login HTTP/1.1\r\nHost: acme.example\r\nContent-Length: 0\r\n\r\n"),
		     XDP_PASS, R_LOGIN, T_ACME);
	expect_route(&e, "POST /login?next=/x (query ends the path)", 80,
		     HTTP("POST /login?next=/x HTTP/1.1\r\nHost: acme.example\r\n\r\n"),
		     XDP_PASS, R_LOGIN, T_ACME);
	expect_route(&e, "GET /login (no GET route: default)", 80,
		     HTTP("GET /login HTTP/1.1\r\nHost: acme.example\r\n\r\n"),
		     XDP_PASS, R_DEFAULT, T_ACME);
	expect_route(&e, "GET /token/validate beats /token (longer prefix)", 80,
		     HTTP("GET /token/validate HTTP/1.1\r\nHost: beta.example\r\n\r\n"),
		     XDP_PASS, R_VALIDATE, T_BETA);
	expect_route(&e, "GET /token/refresh falls back to /token", 80,
		     HTTP("GET /token/refresh HTTP/1.1\r\nHost: beta.example\r\n\r\n"),
		     XDP_PASS, R_TOKEN, T_BETA);
	expect_route(&e, "GET /token/validate/x: the longer any-method route wins", 80,
		     HTTP("GET /token/validate/x HTTP/1.1\r\nHost: beta.example\r\n\r\n"),
		     XDP_PASS, R_ANYTOKEN, T_BETA);
	expect_route(&e, "DELETE /health: an any-method route", 80,
		     HTTP("DELETE /health HTTP/1.1\r\nHost: beta.example\r\n\r\n"),
		     XDP_PASS, R_HEALTH, T_BETA);
	expect_route(&e, "OPTIONS /health", 80,
		     HTTP("OPTIONS /health HTTP/1.1\r\nHost: beta.example\r\n\r\n"),
		     XDP_PASS, R_HEALTH, T_BETA);
	expect_route(&e, "Host in capitals with a port", 80,
		     HTTP("GET / HTTP/1.1\r\nHOST:   ACME.Example:8443\r\n\r\n"),
		     XDP_PASS, R_DEFAULT, T_ACME);
	expect_route(&e, "Host after other headers", 80,
		     HTTP("GET / HTTP/1.1\r\nUser-Agent: x\r\nAccept: */*\r\nhost: beta.example\r\n\r\n"),
		     XDP_PASS, R_DEFAULT, T_BETA);
	expect_route(&e, "missing Host: by destination", 80,
		     HTTP("GET /token HTTP/1.1\r\nAccept: */*\r\n\r\n"),
		     XDP_PASS, R_TOKEN, T_DEST);
	expect_route(&e, "unknown Host: by destination", 80,
		     HTTP("GET / HTTP/1.1\r\nHost: nobody.example\r\n\r\n"),
		     XDP_PASS, R_DEFAULT, T_DEST);
	expect_route(&e, "request line cut short: default cost, by destination", 80,
		     HTTP("POST /lo"), XDP_PASS, R_DEFAULT, T_DEST);
	expect_route(&e, "request line without its end: default", 80,
		     HTTP("POST /login HTTP/1.1"), XDP_PASS, R_DEFAULT, T_DEST);
	expect_route(&e, "Host value cut short: by destination", 80,
		     HTTP("GET /token HTTP/1.1\r\nHost: acme.exa"), XDP_PASS, R_TOKEN, T_DEST);
	expect_route(&e, "not HTTP: default", 80, HTTP("\x16\x03\x01garbage\r\n\r\n"),
		     XDP_PASS, R_DEFAULT, T_DEST);
	expect_route(&e, "lowercase method is not a method: default", 80,
		     HTTP("post /login HTTP/1.1\r\nHost: acme.example\r\n\r\n"),
		     XDP_PASS, R_DEFAULT, T_DEST);

	/* The scan bound: the Host header must start within the first 512 bytes. */
	memset(big, 0, sizeof(big));
	n = (size_t)snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX-Pad: ");
	memset(big + n, 'p', 460 - n);
	n = 460;
	n += (size_t)snprintf(big + n, sizeof(big) - n, "\r\nHost: acme.example\r\n\r\n");
	expect_route(&e, "Host inside the scan bound", 80, big, n, XDP_PASS, R_DEFAULT, T_ACME);
	memset(big, 0, sizeof(big));
	n = (size_t)snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX-Pad: ");
	memset(big + n, 'p', 600 - n);
	n = 600;
	n += (size_t)snprintf(big + n, sizeof(big) - n, "\r\nHost: acme.example\r\n\r\n");
	expect_route(&e, "Host past the scan bound: by destination", 80, big, n, XDP_PASS,
		     R_DEFAULT, T_DEST);
	memset(big, 0, sizeof(big));
	n = (size_t)snprintf(big, sizeof(big), "GET /");
	memset(big + n, 'a', 200);
	n += 200;
	n += (size_t)snprintf(big + n, sizeof(big) - n, " HTTP/1.1\r\nHost: beta.example\r\n\r\n");
	expect_route(&e, "a path longer than the route key: still read, Host still found", 80,
		     big, n, XDP_PASS, R_DEFAULT, T_BETA);

	n = client_hello(hello, "acme.example");
	expect_route(&e, "TLS ClientHello with SNI acme.example", 443, (char *)hello, n, XDP_PASS,
		     R_DEFAULT, T_ACME);
	n = client_hello(hello, "BETA.example");
	expect_route(&e, "TLS ClientHello with SNI in capitals", 443, (char *)hello, n, XDP_PASS,
		     R_DEFAULT, T_BETA);
	n = client_hello(hello, NULL);
	expect_route(&e, "TLS ClientHello without SNI: by destination", 443, (char *)hello, n,
		     XDP_PASS, R_DEFAULT, T_DEST);
	n = client_hello(hello, "acme.example");
	expect_route(&e, "TLS ClientHello cut before its SNI: by destination", 443, (char *)hello,
		     60, XDP_PASS, R_DEFAULT, T_DEST);

	env_close(&e);
	printf("1..%d\n", n_test);
	return n_fail ? 1 : 0;
}
