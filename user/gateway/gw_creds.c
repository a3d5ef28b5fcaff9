// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The credential store (see gw_creds.h). */
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

#include <argon2.h>
#include <sodium.h>

#include "gw_body.h"
#include "gw_creds.h"
#include "log.h"

#define MAX_REPORTED 16
#define MOVE_STEP 64          /* old slots moved per insert while the table grows */
#define ARENA_BYTES 65536

struct ent {
	uint64_t h;
	const char *tenant, *account, *phc;
	unsigned line;        /* 0: inserted since the load */
	bool folded;          /* the file spelled it with capitals */
};

/* The strings of inserted accounts: blocks that never move. */
struct arena {
	struct arena *next;
	size_t used, cap;
	char data[];
};

struct gw_creds {
	char *text;           /* the file, with NULs written over the separators */
	size_t text_len;
	struct ent *ents;
	uint32_t n, cap;
	uint32_t *slots;      /* open addressing: ents index + 1, 0 = empty; at most half full */
	uint32_t mask;
	/* While the table grows: the slots before, still looked in, moved MOVE_STEP per insert
	 * into the new ones (long before those are half full). NULL otherwise. */
	uint32_t *old;
	uint32_t old_mask, old_pos;
	struct arena *arena;
	struct gw_creds_origin origin;
	uint8_t key[crypto_shorthash_KEYBYTES];
};

struct report {
	const char *path;
	char *err;
	size_t errlen, used;
	int n;
};

__attribute__((format(printf, 3, 4)))
static void bad(struct report *r, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (r->n++ >= MAX_REPORTED || !r->err || r->used + 1 >= r->errlen)
		return;
	w = line ? snprintf(r->err + r->used, r->errlen - r->used, "%s:%u: ", r->path, line) :
		   snprintf(r->err + r->used, r->errlen - r->used, "%s: ", r->path);
	if (w > 0)
		r->used = r->used + (size_t)w < r->errlen ? r->used + (size_t)w : r->errlen - 1;
	va_start(ap, fmt);
	w = vsnprintf(r->err + r->used, r->errlen - r->used, fmt, ap);
	va_end(ap);
	if (w > 0)
		r->used = r->used + (size_t)w < r->errlen ? r->used + (size_t)w : r->errlen - 1;
	if (r->used + 1 < r->errlen) {
		r->err[r->used++] = '\n';
		r->err[r->used] = '\0';
	}
}

static uint64_t key_hash(const uint8_t *key, const char *tenant, const char *account,
			 size_t alen)
{
	uint8_t buf[SL_TENANT_NAME_LEN + 1 + GW_USER_MAX], out[crypto_shorthash_BYTES];
	size_t tl = strnlen(tenant, SL_TENANT_NAME_LEN - 1);
	uint64_t h;

	if (alen > GW_USER_MAX)
		alen = GW_USER_MAX;
	memcpy(buf, tenant, tl);
	buf[tl] = '\0'; /* tenant names contain no NUL: the pair is unambiguous */
	memcpy(buf + tl + 1, account, alen);
	crypto_shorthash(out, buf, tl + 1 + alen, key);
	memcpy(&h, out, sizeof(h));
	return h;
}

bool gw_account_norm(char *s, size_t n)
{
	size_t i;

	if (!gw_account_valid(s, n))
		return false;
	for (i = 0; i < n; i++)
		if (s[i] >= 'A' && s[i] <= 'Z')
			s[i] = (char)(s[i] - 'A' + 'a');
	return true;
}

bool gw_account_canonical(const char *s, size_t n)
{
	size_t i;

	if (!gw_account_valid(s, n))
		return false;
	for (i = 0; i < n; i++)
		if (s[i] >= 'A' && s[i] <= 'Z')
			return false;
	return true;
}

/* @s (at most @max bytes of it) escaped for a message: file content is not to be trusted. */
static const char *esc_field(char *buf, size_t cap, const char *s, size_t max)
{
	gw_esc(buf, cap, s, strnlen(s, max), 0);
	return buf;
}

static bool b64_ok(const char *s, size_t n)
{
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '+' || s[i] == '/'))
			return false;
	return true;
}

int gw_phc_params(const char *phc, uint32_t *m_kib, uint32_t *t, uint32_t *p)
{
	unsigned long m_, t_, p_;
	const char *salt, *hash;
	int used = 0;

	if (strncmp(phc, "$argon2id$v=19$", 15))
		return -EINVAL;
	if (sscanf(phc + 15, "m=%lu,t=%lu,p=%lu%n", &m_, &t_, &p_, &used) != 3 || !used)
		return -EINVAL;
	if (phc[15 + used] != '$')
		return -EINVAL;
	salt = phc + 15 + used + 1;
	hash = strchr(salt, '$');
	if (!hash || !b64_ok(salt, (size_t)(hash - salt)) || !b64_ok(hash + 1, strlen(hash + 1)))
		return -EINVAL;
	if (!m_ || !t_ || !p_ || m_ > (1ul << 24) || t_ > 1000 || p_ > 255)
		return -EINVAL;
	*m_kib = (uint32_t)m_;
	*t = (uint32_t)t_;
	*p = (uint32_t)p_;
	return 0;
}

static int tenant_known(const struct sl_config *c, const char *name)
{
	int i;

	for (i = 0; i < c->n_tenants; i++)
		if (!strcmp(c->tenants[i].name, name))
			return 1;
	return 0;
}

/*
 * Read all of @path (at most GW_CREDS_MAX_BYTES) into a NUL-terminated buffer; with @lock
 * under a shared flock, so no append (the writer's, user add's: both exclusive) is seen
 * half done. Without it the caller holds the exclusive lock already.
 */
static int slurp(const char *path, char **out, size_t *len, struct report *r, bool lock,
		 struct gw_creds_origin *origin)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		bad(r, 0, "cannot read: %s", strerror(-ret));
		return ret;
	}
	if (lock && flock(fd, LOCK_SH)) {
		ret = -errno;
		bad(r, 0, "cannot lock: %s", strerror(-ret));
		goto out;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		bad(r, 0, "cannot stat: %s", strerror(-ret));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		bad(r, 0, "not a regular file");
		goto out;
	}
	if ((uint64_t)st.st_size > GW_CREDS_MAX_BYTES) {
		ret = -EFBIG;
		bad(r, 0, "%lld bytes is above the %u byte limit", (long long)st.st_size,
		    GW_CREDS_MAX_BYTES);
		goto out;
	}
	if (st.st_mode & 077)
		log_warn("%s is readable by group or others (mode %03o): password hashes belong "
			 "to the daemon alone", path, (unsigned)(st.st_mode & 0777));
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		ret = -ENOMEM;
		bad(r, 0, "out of memory");
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			bad(r, 0, "read: %s", strerror(-ret));
			goto out;
		}
		if (n == 0)
			break; /* shrank while we read: take what is there */
		got += (size_t)n;
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	origin->dev = st.st_dev;
	origin->ino = st.st_ino;
	origin->size = (off_t)got;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return ret;
}

static int grow_ents(struct gw_creds *s)
{
	uint32_t ncap = s->cap ? s->cap * 2 : 64;
	struct ent *ne;

	if (s->cap >= (UINT32_MAX >> 2))
		return -ENOSPC;
	ne = realloc(s->ents, (size_t)ncap * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	s->ents = ne;
	s->cap = ncap;
	return 0;
}

/* Add entry @idx; when (tenant, account) is already there, return that entry's index + 1. */
static uint32_t insert(struct gw_creds *s, uint32_t idx)
{
	uint32_t i = (uint32_t)s->ents[idx].h & s->mask;

	while (s->slots[i]) {
		const struct ent *o = &s->ents[s->slots[i] - 1];

		if (o->h == s->ents[idx].h && !strcmp(o->tenant, s->ents[idx].tenant) &&
		    !strcmp(o->account, s->ents[idx].account))
			return s->slots[i];
		i = (i + 1) & s->mask;
	}
	s->slots[i] = idx + 1;
	return 0;
}

/* Parse the lines of @text in place. */
static int parse(struct gw_creds *s, char *text, size_t len, const struct sl_config *c,
		 struct report *r)
{
	uint32_t m_cfg = c->gw.m_cost_kib;
	unsigned line = 0;
	char *p = text, *end = text + len;

	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *ln = p, *c1, *c2, *phc;
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		uint32_t m, t, par;
		struct ent *e;
		char eb[GW_ESC_LEN(GW_USER_MAX + 1)];
		bool folded;
		size_t alen;

		line++;
		p += n + (nl ? 1 : 0);
		ln[n] = '\0';
		if (n && ln[n - 1] == '\r')
			ln[--n] = '\0';
		if (!n || ln[0] == '#')
			continue;
		if (n > GW_CREDS_LINE_MAX) {
			bad(r, line, "line longer than %d bytes", GW_CREDS_LINE_MAX);
			continue;
		}
		c1 = strchr(ln, ',');
		c2 = c1 ? strchr(c1 + 1, ',') : NULL;
		if (!c2) {
			bad(r, line, "expected tenant,account,PHC-string");
			continue;
		}
		*c1 = '\0';
		*c2 = '\0';
		phc = c2 + 1;
		if (!tenant_known(c, ln)) {
			bad(r, line, "tenant '%s' is not in the config",
			    esc_field(eb, sizeof(eb), ln, SL_TENANT_NAME_LEN - 1));
			continue;
		}
		alen = strlen(c1 + 1);
		folded = gw_account_valid(c1 + 1, alen) && !gw_account_canonical(c1 + 1, alen);
		if (!gw_account_norm(c1 + 1, alen)) {
			bad(r, line, "the account name '%s' is not %s",
			    esc_field(eb, sizeof(eb), c1 + 1, GW_USER_MAX + 1), GW_ACCOUNT_RULE);
			continue;
		}
		if (strlen(phc) >= GW_PHC_MAX || gw_phc_params(phc, &m, &t, &par)) {
			bad(r, line, "not an Argon2id PHC string ($argon2id$v=19$m=..,t=..,"
			    "p=..$salt$hash)");
			continue;
		}
		if (m > m_cfg) {
			bad(r, line, "hash needs %u KiB, above gateway.argon2.m_cost_kib %u: it "
			    "would break the pool's memory budget", m, m_cfg);
			continue;
		}
		if (s->n == s->cap && grow_ents(s)) {
			bad(r, 0, "out of memory");
			return -ENOMEM;
		}
		e = &s->ents[s->n];
		e->tenant = ln;
		e->account = c1 + 1;
		e->phc = phc;
		e->line = line;
		e->folded = folded;
		e->h = key_hash(s->key, ln, e->account, strlen(e->account));
		s->n++;
	}
	return 0;
}

static int load(const char *path, const struct sl_config *c, struct gw_creds **out,
		char *err, size_t errlen, bool lock)
{
	struct report r = { .path = path, .err = err, .errlen = errlen };
	struct gw_creds *s;
	size_t len = 0;
	uint32_t i, nslots = 16;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	randombytes_buf(s->key, sizeof(s->key));
	ret = slurp(path, &s->text, &len, &r, lock, &s->origin);
	if (ret)
		goto fail;
	s->text_len = len;
	ret = parse(s, s->text, len, c, &r);
	if (ret)
		goto fail;
	/* Duplicates are looked for even after other problems: report everything at once. */
	while (nslots < 2 * (uint64_t)s->n)
		nslots <<= 1;
	s->slots = calloc(nslots, sizeof(*s->slots));
	if (!s->slots) {
		ret = -ENOMEM;
		goto fail;
	}
	s->mask = nslots - 1;
	for (i = 0; i < s->n; i++) {
		uint32_t first = insert(s, i);

		if (first)
			bad(&r, s->ents[i].line, "account '%s' of tenant '%s' is listed twice "
			    "(first on line %u)%s", s->ents[i].account, s->ents[i].tenant,
			    s->ents[first - 1].line, s->ents[i].folded || s->ents[first - 1].folded ?
			    ": names are compared in lowercase" : "");
	}
	if (r.n) {
		ret = -EINVAL;
		goto fail;
	}
	*out = s;
	return 0;
fail:
	gw_creds_free(s);
	return ret;
}

int gw_creds_load(const char *path, const struct sl_config *c, struct gw_creds **out,
		  char *err, size_t errlen)
{
	return load(path, c, out, err, errlen, true);
}

void gw_creds_free(struct gw_creds *s)
{
	if (!s)
		return;
	if (s->text)
		sodium_memzero(s->text, s->text_len);
	free(s->text);
	while (s->arena) {
		struct arena *a = s->arena;

		s->arena = a->next;
		sodium_memzero(a->data, a->used);
		free(a);
	}
	free(s->ents);
	free(s->slots);
	free(s->old);
	free(s);
}

uint32_t gw_creds_count(const struct gw_creds *s)
{
	return s ? s->n : 0;
}

const struct gw_creds_origin *gw_creds_origin(const struct gw_creds *s)
{
	static const struct gw_creds_origin none;

	return s ? &s->origin : &none;
}

static const struct ent *probe(const struct gw_creds *s, const uint32_t *slots, uint32_t mask,
			       uint64_t h, const char *tenant, const char *account, size_t alen)
{
	uint32_t i;

	for (i = (uint32_t)h & mask; slots[i]; i = (i + 1) & mask) {
		const struct ent *e = &s->ents[slots[i] - 1];

		if (e->h == h && strlen(e->account) == alen && !memcmp(e->account, account, alen) &&
		    !strcmp(e->tenant, tenant))
			return e;
	}
	return NULL;
}

const char *gw_creds_find(const struct gw_creds *s, const char *tenant, const char *account,
			  size_t alen)
{
	const struct ent *e;
	uint64_t h;

	if (!s || !s->n || alen > GW_USER_MAX)
		return NULL;
	h = key_hash(s->key, tenant, account, alen);
	e = probe(s, s->slots, s->mask, h, tenant, account, alen);
	if (!e && s->old)
		e = probe(s, s->old, s->old_mask, h, tenant, account, alen);
	return e ? e->phc : NULL;
}

static void place(uint32_t *slots, uint32_t mask, const struct ent *ents, uint32_t idx)
{
	uint32_t i = (uint32_t)ents[idx].h & mask;

	while (slots[i])
		i = (i + 1) & mask;
	slots[i] = idx + 1;
}

/* Move up to @steps of the old slots into the new table; the last one frees the old. */
static void move_slots(struct gw_creds *s, uint32_t steps)
{
	while (s->old && steps--) {
		if (s->old[s->old_pos])
			place(s->slots, s->mask, s->ents, s->old[s->old_pos] - 1);
		if (s->old_pos++ == s->old_mask) {
			free(s->old);
			s->old = NULL;
		}
	}
}

static char *arena_take(struct gw_creds *s, size_t n)
{
	struct arena *a = s->arena;
	char *p;

	if (!a || a->cap - a->used < n) {
		size_t cap = n > ARENA_BYTES ? n : ARENA_BYTES;

		a = malloc(sizeof(*a) + cap);
		if (!a)
			return NULL;
		a->next = s->arena;
		a->used = 0;
		a->cap = cap;
		s->arena = a;
	}
	p = a->data + a->used;
	a->used += n;
	return p;
}

int gw_creds_insert(struct gw_creds *s, const char *tenant, const char *account,
		    const char *phc)
{
	size_t tl = strlen(tenant), al = strlen(account), pl = strlen(phc);
	struct ent *e;
	char *p;
	int ret;

	if (!s || !tl || tl >= SL_TENANT_NAME_LEN || !gw_account_canonical(account, al) ||
	    !pl || pl >= GW_PHC_MAX)
		return -EINVAL;
	if (gw_creds_find(s, tenant, account, al))
		return -EEXIST;
	if (s->n == s->cap && (ret = grow_ents(s)))
		return ret;
	/* Half full: a table twice the size, filled from the old one a few slots an insert.
	 * calloc maps fresh zero pages for a table this large: no cost up front either. */
	if (!s->old && 2 * ((uint64_t)s->n + 1) > (uint64_t)s->mask + 1) {
		uint32_t *ns;

		if (s->mask >= (UINT32_MAX >> 1))
			return -ENOSPC;
		ns = calloc(2 * ((size_t)s->mask + 1), sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		s->old = s->slots;
		s->old_mask = s->mask;
		s->old_pos = 0;
		s->slots = ns;
		s->mask = 2 * s->mask + 1;
	}
	p = arena_take(s, tl + al + pl + 3);
	if (!p)
		return -ENOMEM;
	e = &s->ents[s->n];
	memset(e, 0, sizeof(*e));
	e->tenant = memcpy(p, tenant, tl + 1);
	e->account = memcpy(p + tl + 1, account, al + 1);
	e->phc = memcpy(p + tl + al + 2, phc, pl + 1);
	e->h = key_hash(s->key, tenant, account, al);
	place(s->slots, s->mask, s->ents, s->n);
	s->n++;
	/* Never needed at this rate (the old slots are all moved after a 32nd of the inserts
	 * that fill the new table to half), but a table must never fill up. */
	move_slots(s, 4 * (uint64_t)s->n > 3 * ((uint64_t)s->mask + 1) ? UINT32_MAX : MOVE_STEP);
	return 0;
}

int gw_argon2_hash(const struct sl_gateway_cfg *gw, const char *pwd, size_t len, char *out,
		   size_t n)
{
	uint8_t salt[16];
	int r;

	randombytes_buf(salt, sizeof(salt));
	r = argon2id_hash_encoded(gw->t_cost, gw->m_cost_kib, gw->parallelism, pwd, len, salt,
				  sizeof(salt), 32, out, n);
	if (r != ARGON2_OK) {
		log_error("argon2id: %s", argon2_error_message(r));
		return r == ARGON2_MEMORY_ALLOCATION_ERROR ? -ENOMEM : -EINVAL;
	}
	return 0;
}

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

		ret = load(path, c, &s, lerr, sizeof(lerr), false); /* our lock is held */
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

	if (!tenant_known(c, tenant)) {
		snprintf(err, errlen, "tenant '%s' is not in the config",
			 esc_field(eb, sizeof(eb), tenant, SL_TENANT_NAME_LEN));
		return -ENOENT;
	}
	memcpy(name, account, alen > GW_USER_MAX ? GW_USER_MAX : alen);
	if (alen > GW_USER_MAX || !gw_account_norm(name, alen)) {
		snprintf(err, errlen, "the account name '%s' is not %s",
			 esc_field(eb, sizeof(eb), account, GW_USER_MAX + 1), GW_ACCOUNT_RULE);
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
