// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * neighbour: one tenant at eight times its baseline, the others at theirs, all logging in
 * through the same gateway. Open-loop arrivals (Poisson) per tenant, so a slow answer does
 * not slow the arrivals; each client gives up after --deadline seconds. For every tenant it
 * reports how many logins were shed (429), timed out, or succeeded, and the p99 latency of
 * every attempt (a timeout counts as the deadline). bench/gateway.sh runs it against
 * sluiced with per-tenant admission, with one global budget, and with admission off.
 *
 *   neighbour --port P [--addr A] [--deadline S] [--warmup S] [--duration S]
 *             [--max-conns N] [--users N] [--label TEXT]
 *             --tenant NAME:HOST:RATE:USER:PASSWORD [--tenant ...]
 *
 * --users N: each tenant is a crowd of N people, USER00000 .. USER(N-1) (all with
 * PASSWORD), signing in in turn, person i of tenant t from X-Forwarded-For 10.t.(i/250).(i%250+1)
 * (the gateway must trust one hop). Without it every login is USER from the socket's
 * address: one account hammering, which per-account counters rightly stop.
 * Prints one JSON line.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_loadgen.h"

#define MAX_TENANTS 16

struct tenant {
	char name[64], host[128], user[64], password[64];
	double rate;
};

/* NAME:HOST:RATE:USER:PASSWORD */
static int parse_tenant(const char *s, struct tenant *t)
{
	char buf[512], *f[5], *save = NULL;
	int i;

	snprintf(buf, sizeof(buf), "%s", s);
	for (i = 0; i < 5; i++) {
		f[i] = strtok_r(i ? NULL : buf, ":", &save);
		if (!f[i])
			return -1;
	}
	snprintf(t->name, sizeof(t->name), "%s", f[0]);
	snprintf(t->host, sizeof(t->host), "%s", f[1]);
	t->rate = atof(f[2]);
	snprintf(t->user, sizeof(t->user), "%s", f[3]);
	snprintf(t->password, sizeof(t->password), "%s", f[4]);
	return t->rate > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "deadline", required_argument, NULL, 'd' },
		{ "warmup", required_argument, NULL, 'W' },
		{ "duration", required_argument, NULL, 'D' },
		{ "max-conns", required_argument, NULL, 'm' },
		{ "label", required_argument, NULL, 'l' },
		{ "users", required_argument, NULL, 'u' },
		{ "tenant", required_argument, NULL, 't' },
		{ 0 }
	};
	struct tenant t[MAX_TENANTS];
	struct lg_class c[MAX_TENANTS];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	const char *addr = "127.0.0.1", *label = "";
	double deadline = 3, warmup = 3, duration = 15;
	uint32_t max_conns = 256, users = 0;
	struct event_base *base;
	int opt, n = 0, port = 0, i, ret;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'd': deadline = atof(optarg); break;
		case 'W': warmup = atof(optarg); break;
		case 'D': duration = atof(optarg); break;
		case 'm': max_conns = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'l': label = optarg; break;
		case 'u': users = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 't':
			if (n == MAX_TENANTS || parse_tenant(optarg, &t[n])) {
				fprintf(stderr, "neighbour: --tenant NAME:HOST:RATE:USER:PASSWORD "
					"(at most %d)\n", MAX_TENANTS);
				return 2;
			}
			n++;
			break;
		default:
			fprintf(stderr, "usage: see the comment at the top of bench/neighbour.c\n");
			return 2;
		}
	}
	if (!n || port < 1 || port > 65535 || duration <= 0 || deadline <= 0 || users > 62500 ||
	    inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "neighbour: --port, --tenant and positive times are required\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)port);
	memset(c, 0, sizeof(c));
	for (i = 0; i < n; i++) {
		char body[256];

		snprintf(body, sizeof(body), "username=%s&password=%s", t[i].user, t[i].password);
		c[i].name = t[i].name;
		c[i].request = lg_post(t[i].host, "/login", body);
		if (!c[i].request)
			return 1;
		if (users) {
			uint32_t u;

			c[i].requests = calloc(users, sizeof(char *));
			if (!c[i].requests)
				return 1;
			for (u = 0; u < users; u++) {
				char xff[32];

				snprintf(body, sizeof(body), "username=%s%05u&password=%s", t[i].user,
					 u, t[i].password);
				snprintf(xff, sizeof(xff), "10.%d.%u.%u", i, u / 250, u % 250 + 1);
				c[i].requests[u] = lg_post_from(t[i].host, "/login", xff, body);
				if (!c[i].requests[u])
					return 1;
			}
			c[i].n_requests = users;
		}
		c[i].rate = t[i].rate;
		c[i].max_conns = max_conns;
		c[i].deadline_s = deadline;
	}
	base = event_base_new();
	if (!base)
		return 1;
	ret = lg_run(base, (struct sockaddr *)&sa, sizeof(sa), c, n, warmup, duration);
	if (ret) {
		fprintf(stderr, "neighbour: cannot run: %d\n", ret);
		return 1;
	}
	printf("{\"label\":\"%s\",\"seconds\":%.1f,\"deadline_s\":%.1f,\"tenants\":[", label,
	       duration, deadline);
	for (i = 0; i < n; i++) {
		struct gw_hist all = c[i].lat_all;
		uint64_t k, tried = c[i].answered + c[i].timeouts + c[i].errors;

		/* A timeout is an attempt that lasted at least the deadline. */
		for (k = 0; k < c[i].timeouts + c[i].errors; k++)
			gw_hist_add(&all, (uint64_t)(deadline * 1e9));
		printf("%s{\"name\":\"%s\",\"rate\":%.2f,\"sent\":%llu,\"ok\":%llu,\"shed\":%llu,"
		       "\"timeouts\":%llu,\"errors\":%llu,\"not_sent\":%llu,\"shed_rate\":%.4f,"
		       "\"fail_rate\":%.4f,\"p50_ms\":%.1f,\"p99_ms\":%.1f,\"ok_p99_ms\":%.1f}",
		       i ? "," : "", t[i].name, t[i].rate, (unsigned long long)c[i].attempts,
		       (unsigned long long)c[i].ok, (unsigned long long)c[i].s429,
		       (unsigned long long)c[i].timeouts, (unsigned long long)c[i].errors,
		       (unsigned long long)c[i].not_sent,
		       tried ? (double)c[i].s429 / (double)tried : 0.0,
		       tried ? 1.0 - (double)c[i].ok / (double)tried : 0.0,
		       gw_hist_quantile_us(&all, 0.5) / 1e3, gw_hist_quantile_us(&all, 0.99) / 1e3,
		       gw_hist_quantile_us(&c[i].lat_ok, 0.99) / 1e3);
		free((char *)c[i].request);
	}
	printf("]}\n");
	event_base_free(base);
	return 0;
}
