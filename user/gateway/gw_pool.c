// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The Argon2id worker pool (see gw_pool.h). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "gw_phc.h"
#include "gw_pool.h"
#include "log.h"

#define GW_WORKER_NICE 5
#define GW_SALT_LEN 16
#define GW_TAG_LEN 32

_Static_assert(GW_PHC_ENC_MAX <= GW_PHC_MAX, "a job's phc cannot hold what gw_phc writes");

uint64_t gw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void run(struct gw_work *w)
{
	uint64_t c0;

	w->start_ns = gw_now_ns();
	/* The last look before spending: the loop checked at dequeue, but the hand-off to
	 * this thread is not free either. */
	if (w->deadline_ns && w->start_ns >= w->deadline_ns) {
		w->ran = false;
		w->verified = false;
		w->end_ns = w->start_ns;
		sodium_memzero(w->pwd, sizeof(w->pwd));
		return;
	}
	/* Every hash runs on this thread (gw_phc.c: libargon2's own calls would put the lanes
	 * of p > 1 on threads this clock does not see), so the thread's CPU is the cost. */
	c0 = thread_cpu_ns();
	if (w->make) {
		uint8_t salt[GW_SALT_LEN];

		randombytes_buf(salt, sizeof(salt));
		w->verified = gw_phc_hash(w->m_kib, w->t, w->p, w->pwd, w->pwd_len, salt,
					  sizeof(salt), GW_TAG_LEN, w->phc, sizeof(w->phc)) == 0;
	} else {
		w->verified = gw_phc_verify(w->phc, w->pwd, w->pwd_len) == 1;
	}
	w->cpu_ns = thread_cpu_ns() - c0;
	w->end_ns = gw_now_ns();
	w->ran = true;
	sodium_memzero(w->pwd, sizeof(w->pwd));
	w->pwd_len = 0;
}

static void *worker(void *arg)
{
	struct gw_pool *p = arg;
	const uint64_t one = 1;

	/* Hashers yield to the event loop: a saturated pool must never delay an admission
	 * decision or a 429, which cost microseconds and keep the rest of the gateway honest.
	 * On Linux nice() applies to the calling thread only. */
	errno = 0;
	if (nice(GW_WORKER_NICE) == -1 && errno)
		log_debug("gateway worker: nice: %s", strerror(errno));

	for (;;) {
		struct gw_work *w;

		pthread_mutex_lock(&p->mu);
		while (!p->stop && !p->in_head)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		w = p->in_head;
		p->in_head = w->next;
		if (!p->in_head)
			p->in_tail = NULL;
		pthread_mutex_unlock(&p->mu);

		run(w);

		pthread_mutex_lock(&p->mu);
		w->next = NULL;
		if (p->out_tail)
			p->out_tail->next = w;
		else
			p->out_head = w;
		p->out_tail = w;
		pthread_mutex_unlock(&p->mu);
		/* An eventfd write only fails when the counter would overflow: not with at
		 * most n jobs out. */
		if (write(p->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_warn("gateway worker: eventfd write: %s", strerror(errno));
	}
}

int gw_pool_start(struct gw_pool *p, uint32_t n)
{
	sigset_t all, old;
	uint32_t i;
	int ret = 0;

	memset(p, 0, sizeof(*p));
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->efd < 0)
		return -errno;
	p->th = calloc(n, sizeof(*p->th));
	if (!p->th) {
		close(p->efd);
		return -ENOMEM;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->n = n;
	/* Workers must never take the daemon's signals: those belong to the event loop. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 0; i < n; i++) {
		ret = -pthread_create(&p->th[i], NULL, worker, p);
		if (ret)
			break;
		p->started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		log_error("gateway: cannot start worker %u of %u: %s", i + 1, n, strerror(-ret));
		gw_pool_stop(p);
		gw_pool_destroy(p);
		return ret;
	}
	return 0;
}

void gw_pool_submit(struct gw_pool *p, struct gw_work *w)
{
	w->next = NULL;
	pthread_mutex_lock(&p->mu);
	if (p->in_tail)
		p->in_tail->next = w;
	else
		p->in_head = w;
	p->in_tail = w;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	p->busy++;
}

struct gw_work *gw_pool_collect(struct gw_pool *p)
{
	struct gw_work *list, *w;
	uint64_t v;

	while (read(p->efd, &v, sizeof(v)) > 0)
		;
	pthread_mutex_lock(&p->mu);
	list = p->out_head;
	p->out_head = p->out_tail = NULL;
	pthread_mutex_unlock(&p->mu);
	for (w = list; w; w = w->next)
		p->busy--;
	return list;
}

struct gw_work *gw_pool_stop(struct gw_pool *p)
{
	struct gw_work *left;
	uint32_t i;

	if (!p->th)
		return NULL;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (i = 0; i < p->started; i++)
		pthread_join(p->th[i], NULL);
	free(p->th);
	p->th = NULL;
	left = p->in_head;
	p->in_head = p->in_tail = NULL;
	return left;
}

void gw_pool_destroy(struct gw_pool *p)
{
	if (p->efd < 0)
		return;
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	close(p->efd);
	p->efd = -1;
}
