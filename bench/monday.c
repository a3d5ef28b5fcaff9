// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * monday: the forced-password-reset morning. A crowd of closed-loop clients logs in at
 * about four times what the Argon2id pool can hash; each gives up after its deadline
 * (3 s) and, like a mobile SDK without backoff, retries at once on anything but a 200.
 * After a 200 a client thinks for --think seconds before the next login, so the crowd's
 * fresh demand is clients / think per second.
 *
 * Goodput is logins answered 200 within the client's deadline, per second, as a fraction
 * of the pool's capacity measured with the same Argon2id parameters (--capacity mode).
 * bench/gateway.sh runs it against sluiced with admission on and off in one invocation.
 *
 *   monday --capacity --m-cost KIB --t-cost T --parallelism P --threads N [--seconds S]
 *   monday --port P [--addr A] [--host H] [--user U] [--password PW] [--clients N]
 *          [--think S] [--deadline S] [--warmup S] [--duration S] [--pool-capacity HPS]
 *          [--label TEXT]
 * Each prints one JSON line.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <argon2.h>
#include <sodium.h>

#include "gw_loadgen.h"

struct opts {
	bool capacity;
	uint32_t m_cost, t_cost, parallelism, threads;
	double seconds;
	const char *addr, *host, *user, *password, *label;
	int port;
	uint32_t clients;
	double think, deadline, warmup, duration, pool_capacity;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- pool capacity: hashes per second with N threads, nothing else running ------------- */

struct cap_ctx {
	const char *phc;
	double until;
	atomic_ulong hashes;
};

static void *hasher(void *arg)
{
	struct cap_ctx *x = arg;

	while (now_s() < x->until) {
		if (argon2id_verify(x->phc, "benchmark", 9) != ARGON2_OK)
			abort(); /* the hash we just made must verify */
		atomic_fetch_add(&x->hashes, 1);
	}
	return NULL;
}

static int run_capacity(const struct opts *o)
{
	char phc[256];
	uint8_t salt[16];
	pthread_t th[256];
	struct cap_ctx x = { .phc = phc };
	double t0, t1;
	uint32_t i, n = o->threads < 256 ? o->threads : 256;

	randombytes_buf(salt, sizeof(salt));
	if (argon2id_hash_encoded(o->t_cost, o->m_cost, o->parallelism, "benchmark", 9, salt,
				  sizeof(salt), 32, phc, sizeof(phc)) != ARGON2_OK) {
		fprintf(stderr, "monday: cannot hash with m=%u t=%u p=%u\n", o->m_cost, o->t_cost,
			o->parallelism);
		return 1;
	}
	t0 = now_s();
	x.until = t0 + o->seconds;
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, hasher, &x)) {
			fprintf(stderr, "monday: cannot start thread %u\n", i);
			n = i;
			break;
		}
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	t1 = now_s();
	printf("{\"mode\":\"capacity\",\"threads\":%u,\"m_cost_kib\":%u,\"t_cost\":%u,"
	       "\"parallelism\":%u,\"seconds\":%.2f,\"hashes\":%lu,\"hashes_per_s\":%.2f,"
	       "\"ms_per_hash\":%.3f}\n", n, o->m_cost, o->t_cost, o->parallelism, t1 - t0,
	       (unsigned long)atomic_load(&x.hashes),
	       (double)atomic_load(&x.hashes) / (t1 - t0),
	       n * (t1 - t0) * 1e3 / (double)(atomic_load(&x.hashes) ? atomic_load(&x.hashes) : 1));
	return 0;
}

/* ---- the crowd -------------------------------------------------------------------------- */

static int run_load(const struct opts *o)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)o->port) };
	struct lg_class c;
	struct event_base *base;
	char body[512];
	double goodput;
	int ret;

	if (inet_pton(AF_INET, o->addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "monday: --addr must be an IPv4 address\n");
		return 2;
	}
	memset(&c, 0, sizeof(c));
	snprintf(body, sizeof(body), "username=%s&password=%s", o->user, o->password);
	c.name = "login";
	c.request = lg_post(o->host, "/login", body);
	c.closed_loop = true;
	c.clients = o->clients;
	c.think_s = o->think;
	c.deadline_s = o->deadline;
	base = event_base_new();
	if (!base || !c.request) {
		fprintf(stderr, "monday: out of memory\n");
		return 1;
	}
	ret = lg_run(base, (struct sockaddr *)&sa, sizeof(sa), &c, 1, o->warmup, o->duration);
	if (ret) {
		fprintf(stderr, "monday: %s\n", strerror(-ret));
		return 1;
	}
	goodput = (double)c.ok / o->duration;
	printf("{\"mode\":\"load\",\"label\":\"%s\",\"clients\":%u,\"think_s\":%.2f,"
	       "\"deadline_s\":%.2f,\"seconds\":%.1f,\"offered_per_s\":%.1f,\"attempts\":%llu,"
	       "\"ok\":%llu,\"status_401\":%llu,\"status_429\":%llu,\"status_5xx\":%llu,"
	       "\"timeouts\":%llu,\"errors\":%llu,\"goodput_per_s\":%.2f,"
	       "\"ok_p50_ms\":%.1f,\"ok_p99_ms\":%.1f,\"all_p99_ms\":%.1f",
	       o->label, o->clients, o->think, o->deadline, o->duration,
	       o->think > 0 ? o->clients / o->think : 0.0, (unsigned long long)c.attempts,
	       (unsigned long long)c.ok, (unsigned long long)c.s401,
	       (unsigned long long)c.s429, (unsigned long long)c.by_status[4],
	       (unsigned long long)c.timeouts, (unsigned long long)c.errors, goodput,
	       gw_hist_quantile_us(&c.lat_ok, 0.5) / 1e3,
	       gw_hist_quantile_us(&c.lat_ok, 0.99) / 1e3,
	       gw_hist_quantile_us(&c.lat_all, 0.99) / 1e3);
	if (o->pool_capacity > 0)
		printf(",\"pool_capacity_per_s\":%.2f,\"goodput_fraction\":%.4f",
		       o->pool_capacity, goodput / o->pool_capacity);
	printf("}\n");
	free((char *)c.request);
	event_base_free(base);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "capacity", no_argument, NULL, 'C' },
		{ "m-cost", required_argument, NULL, 'm' },
		{ "t-cost", required_argument, NULL, 't' },
		{ "parallelism", required_argument, NULL, 'P' },
		{ "threads", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 's' },
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "host", required_argument, NULL, 'H' },
		{ "user", required_argument, NULL, 'u' },
		{ "password", required_argument, NULL, 'w' },
		{ "clients", required_argument, NULL, 'c' },
		{ "think", required_argument, NULL, 'k' },
		{ "deadline", required_argument, NULL, 'd' },
		{ "warmup", required_argument, NULL, 'W' },
		{ "duration", required_argument, NULL, 'D' },
		{ "pool-capacity", required_argument, NULL, 'K' },
		{ "label", required_argument, NULL, 'l' },
		{ 0 }
	};
	struct opts o = {
		.m_cost = 16384, .t_cost = 2, .parallelism = 1, .threads = 1, .seconds = 3,
		.addr = "127.0.0.1", .host = "localhost", .user = "user", .password = "password",
		.label = "", .clients = 100, .think = 1.0, .deadline = 3.0, .warmup = 3,
		.duration = 10,
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'C': o.capacity = true; break;
		case 'm': o.m_cost = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 't': o.t_cost = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'P': o.parallelism = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'n': o.threads = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 's': o.seconds = atof(optarg); break;
		case 'a': o.addr = optarg; break;
		case 'p': o.port = atoi(optarg); break;
		case 'H': o.host = optarg; break;
		case 'u': o.user = optarg; break;
		case 'w': o.password = optarg; break;
		case 'c': o.clients = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'k': o.think = atof(optarg); break;
		case 'd': o.deadline = atof(optarg); break;
		case 'W': o.warmup = atof(optarg); break;
		case 'D': o.duration = atof(optarg); break;
		case 'K': o.pool_capacity = atof(optarg); break;
		case 'l': o.label = optarg; break;
		default:
			fprintf(stderr, "usage: see the comment at the top of bench/monday.c\n");
			return 2;
		}
	}
	if (sodium_init() < 0)
		return 1;
	if (o.capacity)
		return o.threads && o.seconds > 0 ? run_capacity(&o) : 2;
	if (o.port < 1 || o.port > 65535 || !o.clients || o.duration <= 0 || o.deadline <= 0) {
		fprintf(stderr, "monday: --port, --clients, --duration and --deadline must be "
			"positive\n");
		return 2;
	}
	return run_load(&o);
}
