// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The credential store's table (see gw_creds.h): reading and checking the file, the hash
 * table and its lookups, inserting a sign-up the writer has put on disk, the account-name
 * rules, and hashing a password. What writes to the file (`sluicectl user add`, the writer
 * thread) is in gw_creds_write.c: this half only reads, under a shared lock, and runs no
 * thread. The two share what gw_creds_internal.h declares.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <argon2.h>
#include <sodium.h>

#include "gw_body.h"
#include "gw_creds.h"
#include "gw_phc.h"
#include "gw_creds_internal.h"
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

const char *gw_creds_esc_field(char *buf, size_t cap, const char *s, size_t max)
{
	gw_esc(buf, cap, s, strnlen(s, max), 0);
	return buf;
}

int gw_phc_params(const char *phc, uint32_t *m_kib, uint32_t *t, uint32_t *p)
{
	struct gw_phc h;

	/* The worker's own decoder: a line loads only if the worker can verify it. */
	if (gw_phc_decode(phc, &h))
		return -EINVAL;
	*m_kib = h.m_kib;
	*t = h.t;
	*p = h.p;
	return 0;
}

int gw_creds_tenant_known(const struct sl_config *c, const char *name)
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
		if (!gw_creds_tenant_known(c, ln)) {
			bad(r, line, "tenant '%s' is not in the config",
			    gw_creds_esc_field(eb, sizeof(eb), ln, SL_TENANT_NAME_LEN - 1));
			continue;
		}
		alen = strlen(c1 + 1);
		folded = gw_account_valid(c1 + 1, alen) && !gw_account_canonical(c1 + 1, alen);
		if (!gw_account_norm(c1 + 1, alen)) {
			bad(r, line, "the account name '%s' is not %s",
			    gw_creds_esc_field(eb, sizeof(eb), c1 + 1, GW_USER_MAX + 1),
			    GW_ACCOUNT_RULE);
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

int gw_creds_load_flock(const char *path, const struct sl_config *c, struct gw_creds **out,
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
	return gw_creds_load_flock(path, c, out, err, errlen, true);
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
