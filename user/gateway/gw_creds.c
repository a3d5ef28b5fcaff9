// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The credential store (see gw_creds.h). */
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
#include "log.h"

#define MAX_REPORTED 16

struct ent {
	uint64_t h;
	const char *tenant, *account, *phc;
	unsigned line;
	bool folded;          /* the file spelled it with capitals */
};

struct gw_creds {
	char *text;           /* the file, with NULs written over the separators */
	size_t text_len;
	struct ent *ents;
	uint32_t n;
	uint32_t *slots;      /* open addressing: ents index + 1, 0 = empty */
	uint32_t mask;
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

/* Read all of @path (at most GW_CREDS_MAX_BYTES) into a NUL-terminated buffer. */
static int slurp(const char *path, char **out, size_t *len, struct report *r)
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
	buf = NULL;
out:
	free(buf);
	close(fd);
	return ret;
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
	uint32_t m_cfg = c->gw.m_cost_kib, cap = 0;
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
		if (s->n == cap) {
			uint32_t ncap = cap ? cap * 2 : 64;
			struct ent *ne = realloc(s->ents, ncap * sizeof(*ne));

			if (!ne) {
				bad(r, 0, "out of memory");
				return -ENOMEM;
			}
			s->ents = ne;
			cap = ncap;
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

int gw_creds_load(const char *path, const struct sl_config *c, struct gw_creds **out,
		  char *err, size_t errlen)
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
	ret = slurp(path, &s->text, &len, &r);
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

void gw_creds_free(struct gw_creds *s)
{
	if (!s)
		return;
	if (s->text)
		sodium_memzero(s->text, s->text_len);
	free(s->text);
	free(s->ents);
	free(s->slots);
	free(s);
}

uint32_t gw_creds_count(const struct gw_creds *s)
{
	return s ? s->n : 0;
}

const char *gw_creds_find(const struct gw_creds *s, const char *tenant, const char *account,
			  size_t alen)
{
	uint64_t h;
	uint32_t i;

	if (!s || !s->n || alen > GW_USER_MAX)
		return NULL;
	h = key_hash(s->key, tenant, account, alen);
	for (i = (uint32_t)h & s->mask; s->slots[i]; i = (i + 1) & s->mask) {
		const struct ent *e = &s->ents[s->slots[i] - 1];

		if (e->h == h && strlen(e->account) == alen && !memcmp(e->account, account, alen) &&
		    !strcmp(e->tenant, tenant))
			return e->phc;
	}
	return NULL;
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
 * Append "tenant,account,phc" to @path under an exclusive flock, fsync'd. With @c, the file
 * as it is must load and must not hold the account already (sluicectl user add); without,
 * the caller has checked (a registration, against the loaded store).
 */
static int append_entry(const char *path, const struct sl_config *c, const char *tenant,
			const char *account, const char *phc, char *err, size_t errlen)
{
	char line[GW_CREDS_LINE_MAX + 2], last;
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
	if (fstat(fd, &st) == 0 && st.st_size > 0) {
		if (c) {
			char lerr[2048];

			ret = gw_creds_load(path, c, &s, lerr, sizeof(lerr));
			if (ret) {
				snprintf(err, errlen, "the file does not load as it is, so nothing "
					 "was added:\n%s", lerr);
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
		/* A file that does not end in a newline would glue our line to its last. */
		if (pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n' &&
		    write(fd, "\n", 1) != 1) {
			ret = -errno;
			snprintf(err, errlen, "%s: write: %s", path, strerror(errno));
			goto out;
		}
	}
	if (write(fd, line, (size_t)w) != w || fsync(fd)) {
		ret = -errno;
		snprintf(err, errlen, "%s: write: %s", path, strerror(errno));
		goto out;
	}
	ret = 0;
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

int gw_creds_append(const char *path, const char *tenant, const char *account,
		    const char *phc, char *err, size_t errlen)
{
	if (!gw_account_canonical(account, strlen(account))) {
		snprintf(err, errlen, "invalid account name");
		return -EINVAL;
	}
	return append_entry(path, NULL, tenant, account, phc, err, errlen);
}
