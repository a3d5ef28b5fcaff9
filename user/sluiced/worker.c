// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The control work thread: see worker.h. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "worker.h"

/* Builds yield to the loop: on a small machine the two share a CPU. nice() is per thread. */
#define WORKER_NICE 5

struct worker {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int efd;            /* the thread says "run() returned" */
	struct event *ev;
	/* The job: set by worker_post, cleared before its done() is called. */
	worker_fn run, done;
	void *arg;
	bool queued;        /* posted, not yet taken by the thread (under mu) */
	bool finished;      /* run() returned (under mu) */
	bool stop;          /* under mu */
};

static void *thread_main(void *p)
{
	struct worker *w = p;
	const uint64_t one = 1;

	errno = 0;
	if (nice(WORKER_NICE) == -1 && errno)
		log_debug("control worker: nice: %s", strerror(errno));
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->stop && !w->queued)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->stop)
			break;
		w->queued = false;
		pthread_mutex_unlock(&w->mu);
		w->run(w->arg);
		pthread_mutex_lock(&w->mu);
		w->finished = true;
		/* Only fails when the counter would overflow: not with one job out. */
		if (write(w->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_warn("control worker: eventfd write: %s", strerror(errno));
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	worker_fn done;
	uint64_t v;
	void *a;

	(void)what;
	while (read(fd, &v, sizeof(v)) > 0)
		;
	pthread_mutex_lock(&w->mu);
	if (!w->finished) {
		pthread_mutex_unlock(&w->mu);
		return;
	}
	w->finished = false;
	pthread_mutex_unlock(&w->mu);
	done = w->done;
	a = w->arg;
	w->run = w->done = NULL;
	w->arg = NULL;
	done(a); /* may post the next job */
}

struct worker *worker_new(struct event_base *base)
{
	struct worker *w = calloc(1, sizeof(*w));
	sigset_t all, old;
	int e;

	if (!w)
		return NULL;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0)
		goto fail;
	w->ev = event_new(base, w->efd, EV_READ | EV_PERSIST, on_done, w);
	if (!w->ev || event_add(w->ev, NULL)) {
		errno = ENOMEM;
		goto fail;
	}
	/* The daemon's signals belong to the loop's thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	e = pthread_create(&w->th, NULL, thread_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		errno = e;
		goto fail;
	}
	return w;
fail:
	e = errno;
	if (w->ev)
		event_free(w->ev);
	if (w->efd >= 0)
		close(w->efd);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
	errno = e;
	return NULL;
}

bool worker_busy(const struct worker *w)
{
	return w->run != NULL;
}

int worker_post(struct worker *w, worker_fn run, worker_fn done, void *arg)
{
	if (w->run)
		return -EBUSY;
	w->run = run;
	w->done = done;
	w->arg = arg;
	pthread_mutex_lock(&w->mu);
	w->queued = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

void *worker_free(struct worker *w)
{
	void *left;

	if (!w)
		return NULL;
	/* A job the thread is running ends first: run() has no point to stop at. One that
	 * is queued and not taken is not run. */
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	left = w->arg;
	event_free(w->ev);
	close(w->efd);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
	return left;
}
