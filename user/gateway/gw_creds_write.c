// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Appending to the credential file (see gw_creds.h): `sluicectl user add` (gw_creds_add),
 * and the writer thread that puts the gateway's sign-ups on disk off the event loop, batched
 * to one fsync, refusing names other writers appended since the loop's load. Apart from
 * gw_creds.c, which reads the file and keeps the table: this half takes the exclusive lock,
 * writes, fsyncs and cuts off a failed write, and owns the thread. What the two share is in
 * gw_creds_internal.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "gw_body.h"
#include "gw_creds.h"
#include "gw_creds_internal.h"
#include "log.h"

/*
 * Under the caller's lock on @fd, whose size is @size: append @buf (whole lines) after a
 * newline if the file lacks its last, then fsync. A failed write is cut off again, so
 * whatever was there still loads. 0 or -errno, @err says.
 */
static int append_locked(int fd, const char *path, off_t size, const char *buf, size_t len,
			 char *err, size_t errlen)
{
	size_t done = 0;
	char last;
	int ret = 0;

	/* A file that does not end in a newline would glue our line to its last. */
	if (size > 0 && pread(fd, &last, 1, size - 1) == 1 && last != '\n' &&
	    write(fd, "\n", 1) != 1) {
		ret = -errno;
		goto fail;
	}
	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			goto fail;
		}
		done += (size_t)n;
	}
	if (fsync(fd)) {
		ret = -errno;
		goto fail;
	}
	return 0;
fail:
	snprintf(err, errlen, "%s: write: %s", path, strerror(-ret));
	if (ftruncate(fd, size) == 0)
		(void)fsync(fd);
	return ret;
}

/*
 * `sluicectl user add`: append "tenant,account,phc" to @path under an exclusive flock; the
 * file as it is must load and must not hold the account already.
 */
static int append_entry(const char *path, const struct sl_config *c, const char *tenant,
			const char *account, const char *phc, char *err, size_t errlen)
{
	char line[GW_CREDS_LINE_MAX + 2];
	struct gw_creds *s = NULL;
	struct stat st;
	int fd, ret, w;

	w = snprintf(line, sizeof(line), "%s,%s,%s\n", tenant, account, phc);
	if (w < 0 || (size_t)w >= sizeof(line)) {
		snprintf(err, errlen, "line too long");
		return -E2BIG;
	}
	fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (flock(fd, LOCK_EX)) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot lock: %s", path, strerror(-ret));
		goto out;
	}
	/* Under the lock: what is in the file now is what we must not duplicate. */
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(-ret));
		goto out;
	}
	if (st.st_size > 0) {
		char lerr[2048];

		/* our lock is held */
		ret = gw_creds_load_flock(path, c, &s, lerr, sizeof(lerr), false);
		if (ret) {
			snprintf(err, errlen, "the file does not load as it is, so nothing was "
				 "added:\n%s", lerr);
			goto out;
		}
		if (gw_creds_find(s, tenant, account, strlen(account))) {
			/* tenant and account were checked by the caller: no escape needed */
			snprintf(err, errlen, "account '%s' already exists for tenant '%s'",
				 account, tenant);
			ret = -EEXIST;
			goto out;
		}
	}
	ret = append_locked(fd, path, st.st_size, line, (size_t)w, err, errlen);
out:
	gw_creds_free(s);
	close(fd); /* releases the lock */
	return ret;
}

int gw_creds_add(const char *path, const struct sl_config *c, const char *tenant,
		 const char *account, const char *pwd, size_t pwdlen, char *err, size_t errlen)
{
	char phc[GW_PHC_MAX], name[GW_USER_MAX + 1], eb[GW_ESC_LEN(GW_USER_MAX + 1)];
	size_t alen = strnlen(account, GW_USER_MAX + 1);
	int ret;

	if (!gw_creds_tenant_known(c, tenant)) {
		snprintf(err, errlen, "tenant '%s' is not in the config",
			 gw_creds_esc_field(eb, sizeof(eb), tenant, SL_TENANT_NAME_LEN));
		return -ENOENT;
	}
	memcpy(name, account, alen > GW_USER_MAX ? GW_USER_MAX : alen);
	if (alen > GW_USER_MAX || !gw_account_norm(name, alen)) {
		snprintf(err, errlen, "the account name '%s' is not %s",
			 gw_creds_esc_field(eb, sizeof(eb), account, GW_USER_MAX + 1),
			 GW_ACCOUNT_RULE);
		return -EINVAL;
	}
	name[alen] = '\0';
	account = name; /* folded: the file holds names as the gateway looks them up */
	if (!pwdlen || pwdlen > GW_PASS_MAX || memchr(pwd, '\0', pwdlen)) {
		snprintf(err, errlen, "the password must be 1..%d bytes without NUL", GW_PASS_MAX);
		return -EINVAL;
	}
	/* Hash first: it takes a while, and the lock should not be held through it. */
	ret = gw_argon2_hash(&c->gw, pwd, pwdlen, phc, sizeof(phc));
	if (ret) {
		snprintf(err, errlen, "cannot hash the password: %s", strerror(-ret));
		return ret;
	}
	ret = append_entry(path, c, tenant, account, phc, err, errlen);
	sodium_memzero(phc, sizeof(phc));
	return ret;
}

/* ---- the writer thread ------------------------------------------------------------------ */

#define WRITER_NICE 5
#define SCAN_CHUNK (1u << 20)

struct gw_cwriter {
	pthread_t th;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct gw_cappend *in_head, *in_tail;     /* under mu */
	struct gw_cappend *out_head, *out_tail;   /* under mu */
	bool stop;                                /* under mu */
	struct gw_cwriter_stats st;               /* under mu */
	int efd;
	/* the loop's */
	struct gw_cappend *live;
	uint32_t outstanding;
	/* the thread's: the load the loop's table came from (path and origin), how far past it
	 * the file has been read or written, and the names other writers added since it */
	char path[PATH_MAX];
	struct gw_creds_origin base;
	bool have_base;
	off_t known;
	char **others;                            /* "tenant\0account", folded */
	size_t n_others, cap_others;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((format(printf, 3, 4)))
static void fail_all(struct gw_cappend *list, int ret, const char *fmt, ...)
{
	struct gw_cappend *a;
	va_list ap;

	for (a = list; a; a = a->next) {
		if (a->ret)
			continue;
		a->ret = ret;
		va_start(ap, fmt);
		vsnprintf(a->err, sizeof(a->err), fmt, ap);
		va_end(ap);
	}
}

static bool same_name(const struct gw_cappend *a, const char *t, size_t tl, const char *n,
		      size_t nl)
{
	return strlen(a->tenant) == tl && !memcmp(a->tenant, t, tl) && strlen(a->account) == nl &&
	       !strncasecmp(a->account, n, nl);
}

static void taken(struct gw_cappend *a)
{
	a->ret = -EEXIST;
	snprintf(a->err, sizeof(a->err), "account '%s' of tenant '%s' is in the file already "
		 "(another writer put it there)", a->account, a->tenant);
}

/* Remember "tenant\0account" (folded) of a line another writer added. */
static void remember(struct gw_cwriter *w, const char *t, size_t tl, const char *n, size_t nl)
{
	char *e, **grown;
	size_t i;

	if (w->n_others == w->cap_others) {
		size_t cap = w->cap_others ? 2 * w->cap_others : 16;

		grown = realloc(w->others, cap * sizeof(*grown));
		if (!grown)
			return; /* then only this batch is checked against the line */
		w->others = grown;
		w->cap_others = cap;
	}
	e = malloc(tl + nl + 2);
	if (!e)
		return;
	memcpy(e, t, tl);
	e[tl] = '\0';
	for (i = 0; i < nl; i++)
		e[tl + 1 + i] = (n[i] >= 'A' && n[i] <= 'Z') ? (char)(n[i] - 'A' + 'a') : n[i];
	e[tl + 1 + nl] = '\0';
	w->others[w->n_others++] = e;
}

static void forget_others(struct gw_cwriter *w)
{
	while (w->n_others)
		free(w->others[--w->n_others]);
}

/*
 * A line of the file as another writer put it: refuse the appends of @list that name its
 * account, and with @w remember it for the batches to come.
 */
static void match_line(const char *p, size_t n, struct gw_cappend *list, struct gw_cwriter *w)
{
	const char *c1, *c2;
	struct gw_cappend *a;
	size_t tl, al;

	if (n && p[n - 1] == '\r')
		n--;
	if (!n || p[0] == '#' || !(c1 = memchr(p, ',', n)) ||
	    !(c2 = memchr(c1 + 1, ',', n - (size_t)(c1 + 1 - p))))
		return;
	tl = (size_t)(c1 - p);
	al = (size_t)(c2 - c1 - 1);
	for (a = list; a; a = a->next)
		if (!a->ret && same_name(a, p, tl, c1 + 1, al))
			taken(a);
	if (w)
		remember(w, p, tl, c1 + 1, al);
}

/* Read @fd from @from to @to line by line (match_line). 0 or -errno. */
static int scan_file(int fd, off_t from, off_t to, struct gw_cappend *list, struct gw_cwriter *w,
		     uint64_t *scanned)
{
	char *buf = malloc(SCAN_CHUNK);
	size_t have = 0;
	bool skipping = false; /* inside a line longer than the buffer: not a credential */
	off_t off = from;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (off < to) {
		size_t want = SCAN_CHUNK - have, start = 0;
		ssize_t n;
		char *nl;

		if ((off_t)want > to - off)
			want = (size_t)(to - off);
		n = pread(fd, buf + have, want, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			break;
		}
		if (n == 0)
			break; /* shrank under us: nothing more to read */
		off += n;
		*scanned += (uint64_t)n;
		have += (size_t)n;
		while ((nl = memchr(buf + start, '\n', have - start))) {
			if (!skipping)
				match_line(buf + start, (size_t)(nl - buf) - start, list, w);
			skipping = false;
			start = (size_t)(nl - buf) + 1;
		}
		if (start == 0 && have == SCAN_CHUNK) {
			skipping = true;
			have = 0;
			continue;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
	}
	if (!ret && have && !skipping)
		match_line(buf, have, list, w); /* the last line, without its newline */
	free(buf);
	return ret;
}

static bool same_origin(const struct gw_creds_origin *a, const struct gw_creds_origin *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size;
}

/*
 * One run of appends to one file, checked against one load: look for their names in what
 * others appended since it, append, fsync.
 */
static void write_run(struct gw_cwriter *w, struct gw_cappend *list, struct gw_cwriter_stats *st)
{
	const char *path = list->path;
	struct gw_cappend *a;
	struct stat sb;
	char *buf = NULL;
	size_t len = 0, n = 0, i;
	bool tail;
	int fd, ret;

	for (a = list; a; a = a->next)
		n++;
	/* A new load: what the loop's table holds starts there. */
	if (!w->have_base || strcmp(w->path, path) || !same_origin(&w->base, &list->origin)) {
		snprintf(w->path, sizeof(w->path), "%s", path);
		w->base = list->origin;
		w->known = list->origin.size;
		w->have_base = true;
		forget_others(w);
	}
	fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		fail_all(list, -errno, "%s: %s", path, strerror(errno));
		return;
	}
	if (flock(fd, LOCK_EX) || fstat(fd, &sb)) {
		fail_all(list, -errno, "%s: cannot lock: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		fail_all(list, -EINVAL, "%s: not a regular file", path);
		goto out;
	}
	/* The file the load read, grown: only what was appended since is news, and the names
	 * in it are remembered. Replaced or cut since: read it all, every time. */
	tail = sb.st_dev == w->base.dev && sb.st_ino == w->base.ino && sb.st_size >= w->known;
	ret = sb.st_size > (tail ? w->known : 0) ?
	      scan_file(fd, tail ? w->known : 0, sb.st_size, list, tail ? w : NULL,
			&st->scanned_bytes) : 0;
	if (ret) {
		fail_all(list, ret, "%s: read: %s", path, strerror(-ret));
		goto out;
	}
	if (tail)
		w->known = sb.st_size;
	for (a = list; a; a = a->next)
		for (i = 0; !a->ret && i < w->n_others; i++) {
			const char *t = w->others[i], *nm = t + strlen(t) + 1;

			if (same_name(a, t, strlen(t), nm, strlen(nm)))
				taken(a);
		}
	buf = malloc(n * (GW_CREDS_LINE_MAX + 2));
	if (!buf) {
		fail_all(list, -ENOMEM, "out of memory");
		goto out;
	}
	for (a = list; a; a = a->next) {
		int wr;

		if (a->ret)
			continue;
		wr = snprintf(buf + len, GW_CREDS_LINE_MAX + 2, "%s,%s,%s\n", a->tenant, a->account,
			      a->phc);
		if (wr < 0 || wr >= GW_CREDS_LINE_MAX + 2) {
			a->ret = -E2BIG;
			snprintf(a->err, sizeof(a->err), "line too long");
			continue;
		}
		len += (size_t)wr;
	}
	if (len) {
		char err[512];

		ret = append_locked(fd, path, sb.st_size, buf, len, err, sizeof(err));
		if (ret) {
			fail_all(list, ret, "%s", err);
			goto out;
		}
		/* Ours: the loop adds them to its table as they come back. */
		if (tail && fstat(fd, &sb) == 0)
			w->known = sb.st_size;
	}
out:
	free(buf);
	close(fd); /* releases the lock */
}

static void *writer_main(void *arg)
{
	struct gw_cwriter *w = arg;
	const uint64_t one = 1;

	/* Like the hash workers: the loop's work comes first. */
	errno = 0;
	if (nice(WRITER_NICE) == -1 && errno)
		log_debug("gateway credential writer: nice: %s", strerror(errno));
	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct gw_cappend *batch, *run, *end, *next;

		while (!w->in_head && !w->stop)
			pthread_cond_wait(&w->cv, &w->mu);
		if (!w->in_head)
			break;
		batch = w->in_head;
		w->in_head = w->in_tail = NULL;
		pthread_mutex_unlock(&w->mu);
		for (run = batch; run; run = next) {
			struct gw_cwriter_stats st = { .batches = 1 };
			struct gw_cappend *a;

			for (end = run; end->next && !strcmp(end->next->path, run->path) &&
			     same_origin(&end->next->origin, &run->origin);)
				end = end->next;
			next = end->next;
			end->next = NULL;
			write_run(w, run, &st);
			for (a = run; a; a = a->next) {
				a->done_ns = mono_ns();
				if (!a->ret)
					st.appended++;
				else if (a->ret == -EEXIST)
					st.exists++;
				else
					st.failed++;
			}
			/* Counted as they are handed back: a collect sees both or neither. */
			pthread_mutex_lock(&w->mu);
			w->st.appended += st.appended;
			w->st.failed += st.failed;
			w->st.exists += st.exists;
			w->st.batches += st.batches;
			w->st.scanned_bytes += st.scanned_bytes;
			if (w->out_tail)
				w->out_tail->next = run;
			else
				w->out_head = run;
			w->out_tail = end;
			pthread_mutex_unlock(&w->mu);
			if (write(w->efd, &one, sizeof(one)) != sizeof(one))
				log_debug("gateway credential writer: eventfd: %s", strerror(errno));
		}
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int gw_cwriter_start(struct gw_cwriter **out)
{
	struct gw_cwriter *w = calloc(1, sizeof(*w));
	int ret;

	if (!w)
		return -ENOMEM;
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0) {
		ret = -errno;
		free(w);
		return ret;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	ret = -pthread_create(&w->th, NULL, writer_main, w);
	if (ret) {
		gw_cwriter_free(w);
		return ret;
	}
	w->started = true;
	*out = w;
	return 0;
}

int gw_cwriter_fd(const struct gw_cwriter *w)
{
	return w->efd;
}

int gw_cwriter_submit(struct gw_cwriter *w, struct gw_cappend *a)
{
	bool stopped;

	if (w->outstanding >= GW_CWRITER_MAX)
		return -EBUSY;
	a->next = NULL;
	a->ret = 0;
	a->err[0] = '\0';
	a->done_ns = 0;
	pthread_mutex_lock(&w->mu);
	stopped = w->stop;
	if (!stopped) {
		if (w->in_tail)
			w->in_tail->next = a;
		else
			w->in_head = a;
		w->in_tail = a;
		pthread_cond_signal(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	if (stopped)
		return -ESHUTDOWN;
	a->lprev = NULL;
	a->lnext = w->live;
	if (w->live)
		w->live->lprev = a;
	w->live = a;
	w->outstanding++;
	return 0;
}

bool gw_cwriter_pending(const struct gw_cwriter *w, const char *tenant, const char *account)
{
	const struct gw_cappend *a;

	for (a = w ? w->live : NULL; a; a = a->lnext)
		if (!strcmp(a->account, account) && !strcmp(a->tenant, tenant))
			return true;
	return false;
}

struct gw_cappend *gw_cwriter_collect(struct gw_cwriter *w)
{
	struct gw_cappend *list, *a;
	uint64_t v;

	if (read(w->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_debug("gateway credential writer: eventfd: %s", strerror(errno));
	pthread_mutex_lock(&w->mu);
	list = w->out_head;
	w->out_head = w->out_tail = NULL;
	pthread_mutex_unlock(&w->mu);
	for (a = list; a; a = a->next) {
		if (a->lprev)
			a->lprev->lnext = a->lnext;
		else
			w->live = a->lnext;
		if (a->lnext)
			a->lnext->lprev = a->lprev;
		a->lprev = a->lnext = NULL;
		w->outstanding--;
	}
	return list;
}

uint32_t gw_cwriter_outstanding(const struct gw_cwriter *w)
{
	return w ? w->outstanding : 0;
}

void gw_cwriter_get_stats(struct gw_cwriter *w, struct gw_cwriter_stats *st)
{
	pthread_mutex_lock(&w->mu);
	*st = w->st;
	pthread_mutex_unlock(&w->mu);
}

void gw_cwriter_stop(struct gw_cwriter *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (w->started) {
		pthread_join(w->th, NULL);
		w->started = false;
	}
}

void gw_cwriter_free(struct gw_cwriter *w)
{
	struct gw_cappend *a;

	if (!w)
		return;
	gw_cwriter_stop(w);
	a = gw_cwriter_collect(w);
	while (a) {
		struct gw_cappend *nx = a->next;

		sodium_memzero(a->phc, sizeof(a->phc));
		free(a);
		a = nx;
	}
	forget_others(w);
	free(w->others);
	close(w->efd);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
