// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * stream: how many login outcomes the stream job absorbs, and what its keys cost in memory.
 *
 * A real stream job (stream_start(), no edge maps) is fed by a producer thread standing in
 * for the gateway's loop.
 *
 * Rate: the producer pushes failure events for --duration seconds as fast as the queue
 * takes them; a push the full queue refuses is dropped and counted, and the producer then
 * backs off --backoff-us so that the queue stays full without the producer taking a CPU
 * from the job (or from Redis). Every event is a distinct account; the source is one of
 * --prefixes prefixes (a /24, or a /48 for every fourth), its ASN one of --asns, the
 * password one of --passwords: a password spray, the case the job exists for. Absorbed is
 * the job's own "events" counter (stream_stats_json) over the wall time. The job's thread
 * is pinned to CPU 1 and the producer to CPU 0 when there are two; the job's CPU time comes
 * from /proc/self/task/TID/schedstat, redis-server's from INFO cpu. In process is the
 * baseline: measured first and again last (the machine drifts), the Redis row is compared
 * with their mean.
 *
 * Memory: --keys events, each from a distinct IPv4 /24 and the same account, fed without
 * loss (a refused push is retried), with only the prefix detector on and stream.max_keys
 * raised to --max-keys (the default 200,000 would evict), so that the job ends up holding
 * --keys prefix-detector keys. RSS (VmRSS) is read after stream_start() and once the job has
 * processed the last event; the table's slots are calloc'd, so the pages the feed touches
 * count in the delta and the untouched ones do not. With Redis, INFO memory's used_memory is
 * read before and after the same feed too (the job keeps its in-process windows either way).
 *
 *   stream [--redis unix:/path | HOST:PORT] [--duration S] [--keys N] [--max-keys N]
 *          [--prefixes N] [--passwords N] [--asns N] [--backoff-us US] [--label TEXT]
 *          [--no-rate] [--no-memory]
 *
 * Prints a table, then one JSON line per case ({"bench":"stream",...}). Exit status 1 if
 * a Redis case did not count on Redis (errors, or the job fell back to counting in process)
 * or a memory feed did not finish.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "config.h"
#include "evq.h"
#include "log.h"
#include "stream.h"

#define MAX_TASKS 256
#define FEED_TIMEOUT_S 300 /* a memory feed that takes longer has gone wrong */
#define SAMPLE_MS 50       /* counters read this often during a rate case */
#define MAX_WAITS 4096

struct opts {
	const char *redis, *label;
	double duration;
	uint64_t keys;
	uint32_t max_keys, prefixes, passwords, asns, backoff_us;
	bool rate, memory;
};

static struct opts o = {
	.label = "", .duration = 3, .keys = 1000000, .max_keys = 2097152, .prefixes = 4096,
	.passwords = 100, .asns = 16, .backoff_us = 50, .rate = true, .memory = true,
};
static bool pin;
static bool failed;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_us(unsigned us)
{
	nanosleep(&(struct timespec){ .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000l },
		  NULL);
}

static pid_t tid_self(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static void pin_tid(pid_t tid, int cpu)
{
	cpu_set_t set;

	if (!pin)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(tid, sizeof(set), &set))
		fprintf(stderr, "stream: cannot pin thread %d to CPU %d: %s\n", (int)tid, cpu,
			strerror(errno));
}

/* The process's threads, from /proc/self/task. */
static int tasks(pid_t *out, int max)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max)
		if (e->d_name[0] != '.')
			out[n++] = (pid_t)atoi(e->d_name);
	closedir(d);
	return n;
}

/* The thread stream_start() made: the one in @after that is not in @before. */
static pid_t new_task(const pid_t *before, int nb)
{
	pid_t after[MAX_TASKS];
	int na = tasks(after, MAX_TASKS), i, j;

	for (i = 0; i < na; i++) {
		for (j = 0; j < nb && before[j] != after[i]; j++)
			;
		if (j == nb)
			return after[i];
	}
	return -1;
}

/* Nanoseconds thread @tid has run (schedstat's first field), or -1. */
static double task_cpu_s(pid_t tid)
{
	char path[64];
	unsigned long long ns;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ok = fscanf(f, "%llu", &ns) == 1;
	fclose(f);
	return ok ? (double)ns / 1e9 : -1;
}

static double process_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* VmRSS in KiB, or -1. */
static long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6)) {
			kib = atol(line + 6);
			break;
		}
	fclose(f);
	return kib;
}

/* ---- Redis, for INFO only --------------------------------------------------------------- */

static redisContext *info_conn(void)
{
	struct timeval tv = { 2, 0 };
	redisContext *c;

	if (!o.redis)
		return NULL;
	if (!strncmp(o.redis, "unix:", 5)) {
		c = redisConnectUnixWithTimeout(o.redis + 5, tv);
	} else {
		char host[200];
		const char *colon = strrchr(o.redis, ':');
		size_t n = colon ? (size_t)(colon - o.redis) : strlen(o.redis);

		snprintf(host, sizeof(host), "%.*s", (int)n, o.redis);
		c = redisConnectWithTimeout(host, colon ? atoi(colon + 1) : 6379, tv);
	}
	if (!c || c->err) {
		fprintf(stderr, "stream: Redis %s: %s\n", o.redis, c ? c->errstr : "out of memory");
		exit(1);
	}
	return c;
}

/* A number from INFO @section ("used_memory", "used_cpu_sys"...), or -1. */
static double redis_info(redisContext *c, const char *section, const char *field)
{
	char name[64];
	redisReply *r;
	const char *p;
	double v = -1;

	if (!c)
		return -1;
	r = redisCommand(c, "INFO %s", section);
	if (!r || r->type != REDIS_REPLY_STRING) {
		fprintf(stderr, "stream: INFO %s: %s\n", section, c->err ? c->errstr : "bad reply");
		exit(1);
	}
	snprintf(name, sizeof(name), "\r\n%s:", field);
	p = strstr(r->str, name);
	if (p)
		v = atof(p + strlen(name));
	freeReplyObject(r);
	return v;
}

static double redis_cpu_s(redisContext *c)
{
	return c ? redis_info(c, "cpu", "used_cpu_sys") + redis_info(c, "cpu", "used_cpu_user") :
		   -1;
}

/* ---- the job's counters ----------------------------------------------------------------- */

struct snap {
	uint64_t events, dropped, evicted, redis_counts, redis_errors;
	char counting[32];
};

static uint64_t field_u64(const char *json, const char *name)
{
	char key[48];
	const char *p;

	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(json, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

static void snap_of(struct stream *s, struct snap *out)
{
	struct evbuffer *b = evbuffer_new();
	const char *json, *p;

	if (!b)
		abort();
	stream_stats_json(s, b);
	evbuffer_add(b, "", 1);
	json = (const char *)evbuffer_pullup(b, -1);
	out->events = field_u64(json, "events");
	out->dropped = field_u64(json, "dropped");
	out->evicted = field_u64(json, "evicted");
	out->redis_counts = field_u64(json, "redis_counts");
	out->redis_errors = field_u64(json, "redis_errors");
	out->counting[0] = '\0';
	p = strstr(json, "\"counting\":\"");
	if (p)
		sscanf(p + 12, "%31[^\"]", out->counting);
	evbuffer_free(b);
}

/* ---- the producer ----------------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* 16 bytes standing for a keyed BLAKE2b hash of @v in domain @dom. */
static void hash16(uint64_t dom, uint64_t v, uint8_t out[16])
{
	uint64_t a = mix64(dom ^ mix64(v)), b = mix64(a ^ dom);

	memcpy(out, &a, 8);
	memcpy(out + 8, &b, 8);
}

enum feed_kind { FEED_SPRAY, FEED_PREFIXES };

/* Event @i of a feed, as the gateway's emit() would fill it. */
static void event_of(enum feed_kind kind, uint64_t i, struct sl_outcome_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->ts_ns = now_ns();
	ev->known = 1;
	ev->class_id = 255;
	if (kind == FEED_PREFIXES) {
		/* Prefix i, i < 2^24: 1.0.0.0/24 onwards. One account and one password. */
		hash16(1, 0, ev->account);
		hash16(2, 0, ev->password);
		ev->family = 4;
		ev->plen = 24;
		ev->prefix[0] = (uint8_t)(1 + (i >> 16));
		ev->prefix[1] = (uint8_t)(i >> 8);
		ev->prefix[2] = (uint8_t)i;
		return;
	}
	{
		uint64_t p = mix64(i ^ 0x5eed) % o.prefixes;

		hash16(1, i, ev->account);
		hash16(2, i % o.passwords, ev->password);
		ev->asn = 64512 + (uint32_t)(p % o.asns);
		if (p % 4 == 3) { /* 2001:db8:p::/48 */
			ev->family = 6;
			ev->plen = 48;
			ev->prefix[0] = 0x20, ev->prefix[1] = 0x01;
			ev->prefix[2] = 0x0d, ev->prefix[3] = 0xb8;
			ev->prefix[4] = (uint8_t)(p >> 8), ev->prefix[5] = (uint8_t)p;
		} else { /* 100.64.0.0/10 carved into /24s */
			ev->family = 4;
			ev->plen = 24;
			ev->prefix[0] = 100;
			ev->prefix[1] = (uint8_t)(64 + ((p >> 8) & 63));
			ev->prefix[2] = (uint8_t)p;
		}
	}
}

struct feed {
	struct evq *q;
	enum feed_kind kind;
	uint64_t n;           /* events to deliver without loss; 0: until stop, dropping */
	uint64_t first;       /* the first event's index */
	atomic_bool stop;
	pthread_t th;
	/* results */
	uint64_t attempts, accepted, refused;
};

static void *producer(void *arg)
{
	struct feed *f = arg;
	struct sl_outcome_event ev;
	uint64_t i = f->first;

	pin_tid(tid_self(), 0);
	while (!atomic_load_explicit(&f->stop, memory_order_relaxed) && (!f->n || i < f->n)) {
		event_of(f->kind, i, &ev);
		f->attempts++;
		if (evq_push(f->q, &ev)) {
			f->accepted++;
			i++;
			continue;
		}
		f->refused++;
		if (!f->n)
			i++; /* a login whose event is lost, as in the gateway */
		sleep_us(o.backoff_us);
	}
	return NULL;
}

/* ---- cases ------------------------------------------------------------------------------ */

struct result {
	char name[48];
	bool memory, redis;
	double wall_s, job_cpu_s, proc_cpu_s, redis_cpu_s;
	uint64_t attempts, accepted, refused, processed, evicted, redis_counts, redis_errors;
	uint64_t actions;
	uint64_t waits[MAX_WAITS];             /* ns each counter read waited, rate cases */
	uint32_t n_waits;
	long rss_before, rss_first, rss_after;   /* KiB: after start, after one event, at the end */
	double redis_mem_before, redis_mem_first, redis_mem_after; /* bytes */
	char counting[32];
};

static void on_action(void *arg, const struct stream_action *a)
{
	(void)a;
	(*(uint64_t *)arg)++;
}

/* Run the loop (the job's actions arrive there) for about @ms. */
static void loop_for(struct event_base *base, unsigned ms)
{
	uint64_t until = now_ns() + (uint64_t)ms * 1000000ull;

	do {
		event_base_loop(base, EVLOOP_NONBLOCK);
		sleep_us(2000);
	} while (now_ns() < until);
}

static int run_case(const char *name, bool redis, bool memory, struct result *r)
{
	struct sl_config *c = calloc(1, sizeof(*c));
	struct event_base *base = event_base_new();
	redisContext *rc = redis ? info_conn() : NULL;
	struct feed f = { .kind = memory ? FEED_PREFIXES : FEED_SPRAY, .n = memory ? o.keys : 0 };
	pid_t before[MAX_TASKS], job_tid;
	struct sl_outcome_event ev;
	struct stream *s;
	struct snap sn;
	char err[256];
	double cpu0, pcpu0, rcpu0 = -1;
	uint64_t t0, deadline;
	int nb, i, ret;

	if (!c || !base)
		return -ENOMEM;
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->memory = memory;
	r->redis = redis;

	sl_config_defaults(c);
	/* A pipeline may take a while on a busy box: measure it rather than fall back. The job
	 * waits ten times this (500 ms). Not 100 or more: stream.c's redis_ready() puts the
	 * whole wait in tv_usec, which setsockopt() refuses from 1,000,000 µs on, and the job
	 * would count in process without ever reaching Redis. */
	c->redis.timeout_ms = 50;
	snprintf(c->redis.key_prefix, sizeof(c->redis.key_prefix), "sluicebench");
	if (redis)
		snprintf(c->redis.address, sizeof(c->redis.address), "%s", o.redis);
	if (memory) {
		c->stream.max_keys = o.max_keys;
		/* Every key made, each with its entry in the tenant's live set: what a key costs
		 * Redis under the default cap, not the cap itself. */
		c->stream.redis_max_keys = o.keys < (1u << 26) ? (uint32_t)o.keys + 1 : 1u << 26;
		for (i = 0; i < SL_DET_N; i++)
			c->stream.det[i].enabled = i == SL_DET_PREFIX_ACCOUNTS;
	}

	malloc_trim(0); /* give back what earlier cases freed: less noise in RSS */
	nb = tasks(before, MAX_TASKS);
	s = stream_start(base, c, NULL, on_action, &r->actions, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "stream: %s: %s\n", name, err);
		return -EINVAL;
	}
	job_tid = new_task(before, nb);
	pin_tid(job_tid, 1);
	f.q = stream_queue(s);
	atomic_init(&f.stop, false);
	loop_for(base, 50); /* let the thread reach its poll */
	r->rss_before = rss_kib();
	r->redis_mem_before = redis_info(rc, "memory", "used_memory");
	rcpu0 = redis_cpu_s(rc);
	cpu0 = task_cpu_s(job_tid);
	pcpu0 = process_cpu_s();
	if (memory) {
		/* The first event alone: what the job touches whatever the number of keys. */
		event_of(f.kind, 0, &ev);
		if (!evq_push(f.q, &ev))
			return -ENOSPC;
		f.first = f.attempts = f.accepted = 1;
		do {
			loop_for(base, 2);
			snap_of(s, &sn);
		} while (!sn.events);
		r->rss_first = rss_kib();
		r->redis_mem_first = redis_info(rc, "memory", "used_memory");
	}
	t0 = now_ns();
	ret = pthread_create(&f.th, NULL, producer, &f);
	if (ret)
		return -ret;

	if (memory) {
		deadline = t0 + FEED_TIMEOUT_S * 1000000000ull;
		do {
			loop_for(base, 10);
			snap_of(s, &sn);
		} while (sn.events < o.keys && now_ns() < deadline);
	} else {
		/* Read the counters every SAMPLE_MS as the control socket would, from the loop's
		 * thread, timing how long the job's lock kept the reader waiting. */
		uint64_t until = t0 + (uint64_t)(o.duration * 1e9), a;

		for (;;) {
			loop_for(base, SAMPLE_MS);
			a = now_ns();
			snap_of(s, &sn);
			if (now_ns() >= until)
				break;
			if (r->n_waits < MAX_WAITS)
				r->waits[r->n_waits++] = now_ns() - a;
		}
	}
	/* The figures are of this moment; what is still queued is not counted. */
	r->wall_s = (double)(now_ns() - t0) / 1e9;
	r->job_cpu_s = cpu0 >= 0 ? task_cpu_s(job_tid) - cpu0 : -1;
	r->proc_cpu_s = process_cpu_s() - pcpu0;
	r->redis_cpu_s = rcpu0 >= 0 ? redis_cpu_s(rc) - rcpu0 : -1;
	r->rss_after = rss_kib();
	r->redis_mem_after = redis_info(rc, "memory", "used_memory");
	atomic_store(&f.stop, true);
	pthread_join(f.th, NULL);
	loop_for(base, 10);

	r->processed = sn.events;
	r->evicted = sn.evicted;
	r->redis_counts = sn.redis_counts;
	r->redis_errors = sn.redis_errors;
	snprintf(r->counting, sizeof(r->counting), "%s", sn.counting);
	r->attempts = f.attempts;
	r->accepted = f.accepted;
	r->refused = f.refused;
	if (memory && sn.events < o.keys) {
		fprintf(stderr, "stream: %s: the job processed %llu of %llu events in %d s\n", name,
			(unsigned long long)sn.events, (unsigned long long)o.keys, FEED_TIMEOUT_S);
		failed = true;
	}
	if (redis && (sn.redis_errors || strcmp(sn.counting, "redis") || !sn.redis_counts)) {
		fprintf(stderr, "stream: %s: not counted on Redis throughout (counting \"%s\", "
			"%llu errors)\n", name, sn.counting, (unsigned long long)sn.redis_errors);
		failed = true;
	}
	stream_stop(s);
	if (rc)
		redisFree(rc);
	event_base_free(base);
	free(c);
	return 0;
}

/* A memory case in a child process: a fresh heap, so that the RSS deltas are the feed's and
 * not an earlier case's freed chunks being reused (or never given back). */
static int run_apart(const char *name, bool redis, struct result *r)
{
	int p[2], status, ret = 0;
	ssize_t got = 0, n;
	pid_t pid;

	fflush(NULL);
	if (pipe(p))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		close(p[0]);
		ret = run_case(name, redis, true, r);
		if (!ret && write(p[1], r, sizeof(*r)) != (ssize_t)sizeof(*r))
			ret = -EIO;
		_exit(ret ? 1 : failed ? 2 : 0);
	}
	close(p[1]);
	while (got < (ssize_t)sizeof(*r) && (n = read(p[0], (char *)r + got, sizeof(*r) - got)) > 0)
		got += n;
	close(p[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) == 1 ||
	    got != (ssize_t)sizeof(*r)) {
		fprintf(stderr, "stream: %s: the child failed\n", name);
		return -EIO;
	}
	if (WEXITSTATUS(status) == 2)
		failed = true;
	return ret;
}

/* ---- output ----------------------------------------------------------------------------- */

static double rate_of(const struct result *r)
{
	return (double)r->processed / r->wall_s;
}

static void cpu_cell(char *out, size_t n, double cpu_s, const struct result *r)
{
	if (cpu_s < 0 || !r->processed)
		snprintf(out, n, "-");
	else
		snprintf(out, n, "%.2f", cpu_s * 1e6 / (double)r->processed);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The counter reads' wait in ms: the median (@q 0.5) or the longest (@q 1), by nearest
 * rank; sorts them. */
static double wait_ms(struct result *r, double q)
{
	uint32_t i;

	if (!r->n_waits)
		return 0;
	qsort(r->waits, r->n_waits, sizeof(r->waits[0]), cmp_u64);
	i = (uint32_t)(q * r->n_waits + 0.999999);
	return (double)r->waits[(i ? i : 1) - 1] / 1e6;
}

/* Bytes per key after the first event, from a delta in bytes. */
static double per_key(const struct result *r, double delta)
{
	return r->processed > 1 ? delta / (double)(r->processed - 1) : 0;
}

static void json_line(struct result *r, double baseline)
{
	printf("{\"bench\":\"stream\",\"label\":\"%s\",\"case\":\"%s\",\"counting\":\"%s\","
	       "\"wall_s\":%.3f,\"processed\":%llu,\"events_per_s\":%.0f,\"attempts\":%llu,"
	       "\"accepted\":%llu,\"refused\":%llu,\"job_cpu_us_per_event\":%.3f,"
	       "\"process_cpu_us_per_event\":%.3f,\"redis_cpu_us_per_event\":%.3f,"
	       "\"evicted\":%llu,\"redis_counts\":%llu,\"redis_errors\":%llu,\"actions\":%llu",
	       o.label, r->name, r->counting, r->wall_s, (unsigned long long)r->processed,
	       rate_of(r), (unsigned long long)r->attempts, (unsigned long long)r->accepted,
	       (unsigned long long)r->refused,
	       r->job_cpu_s >= 0 ? r->job_cpu_s * 1e6 / (double)r->processed : -1,
	       r->proc_cpu_s * 1e6 / (double)r->processed,
	       r->redis_cpu_s >= 0 ? r->redis_cpu_s * 1e6 / (double)r->processed : -1,
	       (unsigned long long)r->evicted, (unsigned long long)r->redis_counts,
	       (unsigned long long)r->redis_errors, (unsigned long long)r->actions);
	if (r->memory)
		printf(",\"keys\":%llu,\"max_keys\":%u,\"rss_start_kib\":%ld,\"rss_first_kib\":%ld,"
		       "\"rss_end_kib\":%ld,\"rss_bytes_per_key\":%.1f,\"redis_used_memory_start\":%.0f,"
		       "\"redis_used_memory_first\":%.0f,\"redis_used_memory_end\":%.0f,"
		       "\"redis_bytes_per_key\":%.1f",
		       (unsigned long long)o.keys, o.max_keys, r->rss_before, r->rss_first,
		       r->rss_after, per_key(r, (double)(r->rss_after - r->rss_first) * 1024.0),
		       r->redis_mem_before, r->redis_mem_first, r->redis_mem_after,
		       r->redis ? per_key(r, r->redis_mem_after - r->redis_mem_first) : -1.0);
	else
		printf(",\"baseline_events_per_s\":%.0f,\"cost_vs_in_process\":%.3f,"
		       "\"stats_reads\":%u,\"stats_wait_ms_p50\":%.3f,\"stats_wait_ms_max\":%.3f",
		       baseline, baseline / rate_of(r), r->n_waits, wait_ms(r, 0.5), wait_ms(r, 1));
	printf("}\n");
}

static void usage(void)
{
	fprintf(stderr, "usage: stream [--redis unix:/path | HOST:PORT] [--duration S] [--keys N] "
		"[--max-keys N]\n              [--prefixes N] [--passwords N] [--asns N] "
		"[--backoff-us US] [--label TEXT]\n              [--no-rate] [--no-memory]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "redis", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 'd' },
		{ "keys", required_argument, NULL, 'k' },
		{ "max-keys", required_argument, NULL, 'm' },
		{ "prefixes", required_argument, NULL, 'p' },
		{ "passwords", required_argument, NULL, 'w' },
		{ "asns", required_argument, NULL, 'a' },
		{ "backoff-us", required_argument, NULL, 'b' },
		{ "label", required_argument, NULL, 'l' },
		{ "no-rate", no_argument, NULL, 'R' },
		{ "no-memory", no_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct result rate[3], mem[2];
	int n_rate = 0, n_mem = 0, c, i;
	double base = 0;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'r': o.redis = optarg; break;
		case 'd': o.duration = atof(optarg); break;
		case 'k': o.keys = strtoull(optarg, NULL, 0); break;
		case 'm': o.max_keys = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'p': o.prefixes = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'w': o.passwords = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'a': o.asns = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'b': o.backoff_us = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'l': o.label = optarg; break;
		case 'R': o.rate = false; break;
		case 'M': o.memory = false; break;
		default: usage();
		}
	}
	if (o.duration <= 0 || o.duration > 600 || !o.keys || o.keys > (1ull << 24) ||
	    o.max_keys < 1024 || o.max_keys > (1u << 26) || !o.prefixes || o.prefixes > 16384 ||
	    !o.passwords || !o.asns || o.backoff_us >= 1000000 || strchr(o.label, '"') ||
	    (o.redis && strlen(o.redis) >= sizeof(((struct sl_redis_cfg *)0)->address)))
		usage();
	log_set_level(LOG_LVL_WARN);
	pin = sysconf(_SC_NPROCESSORS_ONLN) >= 2;

	if (o.memory) {
		if (run_apart("memory, in process", false, &mem[n_mem++]))
			return 1;
		if (o.redis && run_apart("memory, Redis", true, &mem[n_mem++]))
			return 1;
	}
	if (o.rate) {
		if (run_case("in process", false, false, &rate[n_rate++]))
			return 1;
		if (o.redis && run_case("Redis", true, false, &rate[n_rate++]))
			return 1;
		if (run_case("in process, again", false, false, &rate[n_rate++]))
			return 1;
		base = (rate_of(&rate[0]) + rate_of(&rate[n_rate - 1])) / 2;
	}

	printf("stream: %s%s%s%s; %s\n", o.redis ? "Redis " : "in process only",
	       o.redis ? o.redis : "", o.label[0] ? ", " : "", o.label,
	       pin ? "job thread pinned to CPU 1, producer to CPU 0" : "one CPU, not pinned");
	if (o.rate) {
		printf("\nrate: failures for %.1f s per case, each a distinct account, from %u prefixes "
		       "(1 in 4 a /48), %u ASNs,\n%u passwords; producer backs off %u us after a "
		       "refused push\n", o.duration, o.prefixes, o.asns, o.passwords, o.backoff_us);
		printf("%-18s %9s %7s %8s %10s %12s %8s %7s %15s\n", "case", "events/s", "cost",
		       "refused", "job us/ev", "redis us/ev", "evicted", "actions", "read wait ms");
		for (i = 0; i < n_rate; i++) {
			struct result *r = &rate[i];
			char job[16], red[16];

			cpu_cell(job, sizeof(job), r->job_cpu_s, r);
			cpu_cell(red, sizeof(red), r->redis_cpu_s, r);
			printf("%-18s %9.0f %6.2fx %7.1f%% %10s %12s %8llu %7llu %7.2f/%-7.1f\n",
			       r->name, rate_of(r), base / rate_of(r),
			       r->attempts ? 100.0 * (double)r->refused / (double)r->attempts : 0.0,
			       job, red, (unsigned long long)r->evicted,
			       (unsigned long long)r->actions, wait_ms(r, 0.5), wait_ms(r, 1));
		}
		printf("cost: the mean in-process events/s over the row's (above 1: slower); drift "
		       "between the in-process rows %+.1f %%.\njob us/ev: the job thread's CPU per "
		       "event absorbed; redis us/ev: redis-server's. read wait ms: how long reading\n"
		       "the counters (stream_stats_json, every %d ms) waited for the job's lock, "
		       "median/longest.\n",
		       100.0 * (rate_of(&rate[n_rate - 1]) / rate_of(&rate[0]) - 1), SAMPLE_MS);
	}
	if (o.memory) {
		printf("\nmemory: %llu events, each from a distinct /24 (one account), prefix "
		       "detector only, stream.max_keys %u\n", (unsigned long long)o.keys, o.max_keys);
		printf("%-20s %7s %9s %17s %10s %7s %12s %7s %8s\n", "case", "feed s", "events/s",
		       "RSS MiB", "fixed", "B/key", "redis delta", "B/key", "evicted");
		for (i = 0; i < n_mem; i++) {
			const struct result *r = &mem[i];
			char rd[24] = "-", rk[16] = "-", rss[32];

			if (r->redis) {
				double m = r->redis_mem_after - r->redis_mem_first;

				snprintf(rd, sizeof(rd), "%.1f MiB", m / 1048576.0);
				snprintf(rk, sizeof(rk), "%.0f", per_key(r, m));
			}
			snprintf(rss, sizeof(rss), "%ld/%ld/%ld", r->rss_before / 1024,
				 r->rss_first / 1024, r->rss_after / 1024);
			printf("%-20s %7.1f %9.0f %17s %6.1f MiB %7.0f %12s %7s %8llu\n", r->name,
			       r->wall_s, rate_of(r), rss,
			       (double)(r->rss_first - r->rss_before) / 1024.0,
			       per_key(r, (double)(r->rss_after - r->rss_first) * 1024.0), rd, rk,
			       (unsigned long long)r->evicted);
		}
		printf("RSS MiB: after stream_start / after the first event / after the last. fixed: "
		       "what the first event\ntouched. B/key: the delta after the first event over the "
		       "keys that followed (RSS, or Redis used_memory).\n");
	}
	for (i = 0; i < n_rate; i++)
		json_line(&rate[i], base);
	for (i = 0; i < n_mem; i++)
		json_line(&mem[i], 0);
	return failed;
}
