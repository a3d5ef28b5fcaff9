// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The audit log: see audit.h. A line is built in a buffer and written with one write(2) on
 * an O_APPEND descriptor, so lines from sluiced's threads (and from a sluicectl appending at
 * the same time) never interleave, and a logrotate that moves the file loses nothing: the
 * old descriptor keeps writing to the moved file until audit_reopen. json.c writes to a FILE
 * and passes any byte through; a SIEM's parser wants valid UTF-8, so the strings here are
 * escaped by a writer of their own that replaces invalid sequences with U+FFFD.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <sodium.h>

#include "addr.h"
#include "audit.h"
#include "log.h"
#include "reasons.h"

#define LINE_MAX_BYTES 4096

static const char *const event_names[AUDIT__MAX] = {
	[AUDIT_REFUSAL] = "refusal",
	[AUDIT_BLOCK] = "block",
	[AUDIT_VERDICT] = "verdict",
	[AUDIT_DETECTOR] = "detector",
	[AUDIT_OPERATOR] = "operator",
	[AUDIT_DROPPED] = "dropped",
};

enum out_kind { OUT_NONE = 0, OUT_FILE, OUT_STDERR, OUT_SYSLOG };

static struct {
	pthread_mutex_t mu;
	enum out_kind kind;
	int fd;
	char path[PATH_MAX];
	char node[64];
	double rate, burst, tokens;
	uint64_t t_ns;
	uint64_t pending;       /* dropped since the last line written */
	uint64_t written, dropped, errors;
	uint64_t last_write_ns;
	bool enabled;           /* read without the lock: a hint for callers */
} A = { .mu = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

const char *audit_event_name(enum audit_event e)
{
	return (unsigned)e < AUDIT__MAX ? event_names[e] : "unknown";
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the line ---------------------------------------------------------------------------- */

struct lb {
	char *p;
	size_t n, len;
	bool over;
};

static void put(struct lb *b, const char *s, size_t k)
{
	if (b->over || b->len + k >= b->n) {
		b->over = true;
		return;
	}
	memcpy(b->p + b->len, s, k);
	b->len += k;
	b->p[b->len] = '\0';
}

static void puts_(struct lb *b, const char *s)
{
	put(b, s, strlen(s));
}

/* The length of the valid UTF-8 sequence at @s (at most @left bytes), or 0. Overlong forms,
 * surrogates and values above U+10FFFF are invalid (RFC 3629). */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	unsigned c = s[0], need, cp, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 1, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		need = 2, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 3, cp = c & 0x07;
	else
		return 0;
	if (left < need + 1)
		return 0;
	for (i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((need == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (need == 3 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return need + 1;
}

/* A JSON string (or null): control characters escaped, invalid UTF-8 as U+FFFD, at most
 * @max bytes of input (a reason is an operator's text: bounded, not trusted). */
static void put_str(struct lb *b, const char *s, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len, i = 0;
	char esc[8];

	if (!s) {
		puts_(b, "null");
		return;
	}
	len = strnlen(s, max);
	put(b, "\"", 1);
	while (i < len) {
		unsigned c = u[i];
		size_t k;

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			put(b, esc, 2);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			puts_(b, esc);
			i++;
		} else if ((k = utf8_len(u + i, len - i))) {
			put(b, s + i, k);
			i += k;
		} else {
			puts_(b, "\\ufffd");
			i++;
		}
	}
	put(b, "\"", 1);
}

int sl_json_quote(char *buf, size_t n, const char *s, size_t max)
{
	struct lb b = { .p = buf, .n = n };

	if (!n)
		return -1;
	buf[0] = '\0';
	put_str(&b, s, max);
	return b.over ? -1 : (int)b.len;
}

static void field(struct lb *b, const char *key, const char *v, size_t max)
{
	put(b, ",\"", 2);
	puts_(b, key);
	put(b, "\":", 2);
	put_str(b, v, max);
}

int audit_format(char *buf, size_t n, const char *node, const struct audit_rec *r,
		 uint64_t dropped, uint64_t now_unix_ms)
{
	struct lb b = { .p = buf, .n = n };
	char stamp[40], acct[33], num[24];
	time_t secs = (time_t)(now_unix_ms / 1000);
	struct tm tm;
	const char *account = NULL;

	if (!n)
		return -1;
	buf[0] = '\0';
	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp + strlen(stamp), sizeof(stamp) - strlen(stamp), ".%03uZ",
		 (unsigned)(now_unix_ms % 1000));
	if (r->account) {
		sodium_bin2hex(acct, sizeof(acct), r->account, 16);
		account = acct;
	} else if (r->account_hex) {
		account = r->account_hex;
	}
	puts_(&b, "{\"time\":");
	put_str(&b, stamp, sizeof(stamp));
	field(&b, "node", node && node[0] ? node : NULL, 64);
	field(&b, "event", audit_event_name(r->event), 16);
	field(&b, "source", r->source, 32);
	field(&b, "tenant", r->tenant, 64);
	field(&b, "route", r->route, 64);
	field(&b, "account", account, 64);
	field(&b, "prefix", r->prefix, 64);
	field(&b, "reason", r->reason, 512);
	field(&b, "decision", r->decision, 64);
	field(&b, "operator", r->operator_, 128);
	field(&b, "detail", r->detail, 1024);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)dropped);
	puts_(&b, ",\"dropped\":");
	puts_(&b, num);
	puts_(&b, "}");
	return b.over ? -1 : (int)b.len;
}

/* ---- output ------------------------------------------------------------------------------ */

const char *audit_output_problem(const char *o)
{
	if (!o[0] || !strcmp(o, "stderr") || !strcmp(o, "syslog"))
		return NULL;
	if (strlen(o) >= PATH_MAX - 1)
		return "too long";
	if (o[strlen(o) - 1] == '/')
		return "is a directory (name a file)";
	return NULL;
}

static int open_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);

	return fd < 0 ? -errno : fd;
}

static enum out_kind kind_of(const char *o)
{
	if (!o[0])
		return OUT_NONE;
	if (!strcmp(o, "stderr"))
		return OUT_STDERR;
	if (!strcmp(o, "syslog"))
		return OUT_SYSLOG;
	return OUT_FILE;
}

int audit_configure(const struct sl_config *c, char *err, size_t errlen)
{
	enum out_kind k = kind_of(c->audit.output);
	int fd = -1, old = -1;

	if (err && errlen)
		err[0] = '\0';
	pthread_mutex_lock(&A.mu);
	if (k == OUT_FILE && (A.kind != OUT_FILE || strcmp(A.path, c->audit.output))) {
		fd = open_file(c->audit.output);
		if (fd < 0) {
			pthread_mutex_unlock(&A.mu);
			snprintf(err, errlen, "audit.output %s: %s", c->audit.output, strerror(-fd));
			return fd;
		}
		old = A.fd;
		A.fd = fd;
	} else if (k != OUT_FILE) {
		old = A.fd;
		A.fd = -1;
	}
	A.kind = k;
	snprintf(A.path, sizeof(A.path), "%s", c->audit.output);
	snprintf(A.node, sizeof(A.node), "%s", c->cluster.node);
	if (A.rate != c->audit.rate || A.burst != c->audit.burst) {
		A.rate = c->audit.rate;
		A.burst = c->audit.burst;
		A.tokens = A.burst;
		A.t_ns = mono_ns();
	}
	__atomic_store_n(&A.enabled, k != OUT_NONE, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&A.mu);
	if (old >= 0)
		close(old);
	return 0;
}

int audit_reopen(void)
{
	int fd, old;

	pthread_mutex_lock(&A.mu);
	if (A.kind != OUT_FILE) {
		pthread_mutex_unlock(&A.mu);
		return 0;
	}
	fd = open_file(A.path);
	if (fd < 0) {
		pthread_mutex_unlock(&A.mu);
		return fd;
	}
	old = A.fd;
	A.fd = fd;
	pthread_mutex_unlock(&A.mu);
	if (old >= 0)
		close(old);
	return 0;
}

void audit_close(void)
{
	pthread_mutex_lock(&A.mu);
	if (A.fd >= 0)
		close(A.fd);
	A.fd = -1;
	A.kind = OUT_NONE;
	A.path[0] = '\0';
	__atomic_store_n(&A.enabled, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&A.mu);
}

bool audit_enabled(void)
{
	return __atomic_load_n(&A.enabled, __ATOMIC_RELAXED);
}

static uint64_t unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

/* Under mu: one line out. A failed write is counted (and logged once a minute): the audit
 * log never stops the daemon. */
static void out_line(char *line, int len)
{
	static uint64_t logged_ns;
	ssize_t w = 0;
	int fd = A.kind == OUT_STDERR ? 2 : A.fd;

	if (A.kind == OUT_SYSLOG) {
		syslog(LOG_AUTHPRIV | LOG_NOTICE, "%s", line);
		A.written++;
		return;
	}
	line[len] = '\n';
	w = fd >= 0 ? write(fd, line, (size_t)len + 1) : -1;
	line[len] = '\0';
	if (w == len + 1) {
		A.written++;
		return;
	}
	A.errors++;
	if (mono_ns() - logged_ns > 60000000000ull || !logged_ns) {
		logged_ns = mono_ns();
		log_warn("audit: cannot write to %s: %s (%llu line(s) lost so far)",
			 A.kind == OUT_STDERR ? "stderr" : A.path,
			 w < 0 ? strerror(errno) : "short write", (unsigned long long)A.errors);
	}
}

/* Under mu: a token for one line, the bucket refilled first. rate 0: no limit. */
static bool take(uint64_t now)
{
	if (A.rate <= 0)
		return true;
	if (now > A.t_ns) {
		A.tokens += (double)(now - A.t_ns) / 1e9 * A.rate;
		if (A.tokens > A.burst)
			A.tokens = A.burst;
	}
	A.t_ns = now;
	if (A.tokens < 1)
		return false;
	A.tokens -= 1;
	return true;
}

void audit_emit(const struct audit_rec *r)
{
	char line[LINE_MAX_BYTES + 1];
	uint64_t now;
	int len;

	if (!audit_enabled())
		return;
	now = mono_ns();
	pthread_mutex_lock(&A.mu);
	if (A.kind == OUT_NONE) {
		pthread_mutex_unlock(&A.mu);
		return;
	}
	if (!take(now) && !r->must) {
		A.pending++;
		A.dropped++;
		pthread_mutex_unlock(&A.mu);
		return;
	}
	len = audit_format(line, sizeof(line) - 1, A.node, r, A.pending, unix_ms());
	if (len < 0) {
		/* Longer than a line may be (an operator's very long reason): the record
		 * without its free text, which is bounded. */
		struct audit_rec s = *r;

		s.detail = "(too long: cut)";
		len = audit_format(line, sizeof(line) - 1, A.node, &s, A.pending, unix_ms());
	}
	if (len >= 0) {
		out_line(line, len);
		A.pending = 0;
		A.last_write_ns = now;
	}
	pthread_mutex_unlock(&A.mu);
}

void audit_tick(void)
{
	struct audit_rec r = { .event = AUDIT_DROPPED, .source = "audit",
			       .reason = "rate_limit", .decision = "dropped" };
	char line[LINE_MAX_BYTES + 1], detail[96];
	uint64_t now = mono_ns();
	int len;

	if (!audit_enabled())
		return;
	pthread_mutex_lock(&A.mu);
	/* A second without a line to carry the count: say it on its own (outside the bucket,
	 * at most once a second, so a flood's size is never lost). */
	if (A.kind != OUT_NONE && A.pending && now - A.last_write_ns >= 1000000000ull) {
		snprintf(detail, sizeof(detail), "audit.rate %g/s, audit.burst %g", A.rate, A.burst);
		r.detail = detail;
		len = audit_format(line, sizeof(line) - 1, A.node, &r, A.pending, unix_ms());
		if (len >= 0) {
			out_line(line, len);
			A.pending = 0;
			A.last_write_ns = now;
		}
	}
	pthread_mutex_unlock(&A.mu);
}

void audit_edge_event(const struct sl_event *e, const struct sl_config *c)
{
	struct audit_rec r = { .source = "edge" };
	struct sl_prefix p = { 0 };
	char pfx[64], detail[160];
	const char *cls = "unknown";

	if (!audit_enabled())
		return;
	p.family = e->family;
	p.plen = e->plen;
	memcpy(p.addr, e->addr, sizeof(p.addr));
	sl_prefix_str(&p, pfx, sizeof(pfx));
	if (e->class_id < c->n_classes)
		cls = c->classes[e->class_id].name;
	r.event = e->reason == SL_R_SHED_VERDICT ? AUDIT_BLOCK : AUDIT_REFUSAL;
	r.prefix = pfx;
	r.reason = sl_reason_name(e->reason);
	r.decision = e->reason == SL_R_WOULD_SHED_PREFIX || e->reason == SL_R_WOULD_SHED_PARENT ||
		     e->reason == SL_R_WOULD_SHED_TENANT ? "would_shed" :
		     e->reason == SL_R_REPLIED_429 || e->retry_after ? "429" :
		     sl_action_name(e->action);
	snprintf(detail, sizeof(detail), "class %s, port %u%s%.0u, sampled 1 in %u", cls,
		 (unsigned)e->dport, e->retry_after ? ", retry_after " : "",
		 (unsigned)e->retry_after, c->event_sample);
	r.detail = detail;
	audit_emit(&r);
}

void audit_get_stats(struct audit_stats *s)
{
	pthread_mutex_lock(&A.mu);
	s->written = A.written;
	s->dropped = A.dropped;
	s->errors = A.errors;
	pthread_mutex_unlock(&A.mu);
}

void audit_metrics(struct evbuffer *out)
{
	struct audit_stats st;

	audit_get_stats(&st);
	evbuffer_add_printf(out,
			    "# HELP sluice_audit_lines_total Lines written to the audit log.\n"
			    "# TYPE sluice_audit_lines_total counter\n"
			    "sluice_audit_lines_total %llu\n"
			    "# HELP sluice_audit_dropped_total Audit lines the rate limit (audit.rate, "
			    "audit.burst) dropped; each count is also in the next line written.\n"
			    "# TYPE sluice_audit_dropped_total counter\n"
			    "sluice_audit_dropped_total %llu\n"
			    "# HELP sluice_audit_write_errors_total Audit lines that could not be "
			    "written (a full disk, a removed directory).\n"
			    "# TYPE sluice_audit_write_errors_total counter\n"
			    "sluice_audit_write_errors_total %llu\n",
			    (unsigned long long)st.written, (unsigned long long)st.dropped,
			    (unsigned long long)st.errors);
}

void sl_audit_account_hash(const uint8_t *key, size_t keylen, const char *tenant,
			   const char *account, size_t alen, uint8_t out[16])
{
	crypto_generichash_state st;
	uint8_t k[32];

	crypto_generichash(k, sizeof(k), (const unsigned char *)"sluice stream accounts", 22, key,
			   keylen);
	crypto_generichash_init(&st, k, sizeof(k), 16);
	crypto_generichash_update(&st, (const unsigned char *)tenant, strlen(tenant) + 1);
	crypto_generichash_update(&st, (const unsigned char *)account, alen);
	crypto_generichash_final(&st, out, 16);
	sodium_memzero(k, sizeof(k));
}

int audit_oneshot(const struct sl_config *c, const struct audit_rec *r)
{
	char line[LINE_MAX_BYTES + 1];
	enum out_kind k = kind_of(c->audit.output);
	int len, fd, ret = 0;

	if (k == OUT_NONE)
		return 1;
	len = audit_format(line, sizeof(line) - 1, c->cluster.node, r, 0, unix_ms());
	if (len < 0) {
		struct audit_rec s = *r;

		s.detail = "(too long: cut)";
		len = audit_format(line, sizeof(line) - 1, c->cluster.node, &s, 0, unix_ms());
		if (len < 0)
			return -E2BIG;
	}
	if (k == OUT_SYSLOG) {
		syslog(LOG_AUTHPRIV | LOG_NOTICE, "%s", line);
		return 0;
	}
	fd = k == OUT_STDERR ? 2 : open_file(c->audit.output);
	if (fd < 0)
		return fd;
	line[len] = '\n';
	if (write(fd, line, (size_t)len + 1) != len + 1)
		ret = -EIO;
	if (k == OUT_FILE)
		close(fd);
	return ret;
}

void audit_operator(char *buf, size_t n)
{
	const char *sudo = getenv("SUDO_USER");
	struct passwd *pw = getpwuid(getuid());

	if (sudo && sudo[0])
		snprintf(buf, n, "%s (uid %u)", sudo, (unsigned)getuid());
	else if (pw && pw->pw_name)
		snprintf(buf, n, "%s", pw->pw_name);
	else
		snprintf(buf, n, "uid %u", (unsigned)getuid());
}
