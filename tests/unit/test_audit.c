// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The audit log (user/lib/audit.h) and the daemon log's records (user/lib/log.h): every line
 * has every field and an ISO date; strings an attacker or an operator chose (quotes, line
 * breaks, invalid UTF-8) cannot break a line or the JSON; the token bucket drops and the next
 * line (or the summary) says how many; operators' lines are never dropped; a rotated file is
 * reopened; the account is its keyed hash, never the name; the config keys name file:line.
 * The lines are checked by parsing them back with a small JSON field reader, not by
 * comparing whole strings.
 */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <time.h>

#include <sodium.h>

#include "audit.h"
#include "config.h"
#include "log.h"

#define ERRLEN 8192
#define CLASSES "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"

static const char *const fields[] = { "time", "node", "event", "source", "tenant", "route",
				      "account", "prefix", "reason", "decision", "operator",
				      "detail", "dropped", NULL };

/* The raw value of top-level member @key of the one-line object @line, into @out (a string's
 * contents still escaped, or the literal: null, a number). false when absent. */
static bool member(const char *line, const char *key, char *out, size_t n)
{
	char pat[64];
	const char *p, *v;
	size_t k = 0;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	if (!p)
		return false;
	v = p + strlen(pat);
	if (*v == '"') {
		v++;
		while (*v && *v != '"' && k + 1 < n) {
			if (*v == '\\' && v[1]) {
				out[k++] = *v++;
				if (k + 1 >= n)
					break;
			}
			out[k++] = *v++;
		}
		assert_int_equal(*v, '"');
	} else {
		while (*v && *v != ',' && *v != '}' && k + 1 < n)
			out[k++] = *v++;
	}
	out[k] = '\0';
	return true;
}

/* Every field there, once, in a line that is one object with no raw control byte. */
static void assert_line_shape(const char *line)
{
	char v[1200];
	int i;

	assert_int_equal(line[0], '{');
	assert_int_equal(line[strlen(line) - 1], '}');
	for (i = 0; line[i]; i++)
		if ((unsigned char)line[i] < 0x20)
			fail_msg("raw control byte 0x%02x at %d in %s", line[i], i, line);
	for (i = 0; fields[i]; i++)
		if (!member(line, fields[i], v, sizeof(v)))
			fail_msg("no \"%s\" in %s", fields[i], line);
}

static bool valid_utf8(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	while (*u) {
		int need = *u < 0x80 ? 0 : (*u & 0xe0) == 0xc0 ? 1 : (*u & 0xf0) == 0xe0 ? 2 :
			   (*u & 0xf8) == 0xf0 ? 3 : -1;

		if (need < 0 || (need == 1 && *u < 0xc2))
			return false;
		u++;
		while (need--) {
			if ((*u & 0xc0) != 0x80)
				return false;
			u++;
		}
	}
	return true;
}

static void format_has_every_field_and_an_iso_date(void **state)
{
	struct audit_rec r = { .event = AUDIT_REFUSAL, .source = "gateway", .tenant = "acme",
			       .route = "/login", .prefix = "192.0.2.7/32",
			       .reason = "queue_full", .decision = "429" };
	char line[4096], v[256];
	int n;

	(void)state;
	/* 2026-03-04T05:06:07.089Z */
	n = audit_format(line, sizeof(line), "edge-1", &r, 3, 1772600767089ull);
	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(line));
	assert_line_shape(line);
	assert_true(member(line, "time", v, sizeof(v)));
	assert_string_equal(v, "2026-03-04T05:06:07.089Z");
	assert_true(member(line, "node", v, sizeof(v)));
	assert_string_equal(v, "edge-1");
	assert_true(member(line, "event", v, sizeof(v)));
	assert_string_equal(v, "refusal");
	assert_true(member(line, "account", v, sizeof(v)));
	assert_string_equal(v, "null");
	assert_true(member(line, "dropped", v, sizeof(v)));
	assert_string_equal(v, "3");
	/* Too small a buffer is refused, never cut mid-line. */
	assert_int_equal(audit_format(line, 40, "edge-1", &r, 0, 0), -1);
}

static void hostile_strings_stay_inside_their_field(void **state)
{
	/* A reason an operator typed, a tenant header an attacker sent: a quote to end the
	 * string, a newline to start a forged line, invalid UTF-8 and an overlong '/'. */
	const char *evil = "x\",\"event\":\"forged\"}\n{\"event\":\"operator\" \x01\x7f\xff\xc0\xaf"
			   "\xed\xa0\x80 \xc3\xa9";
	struct audit_rec r = { .event = AUDIT_OPERATOR, .reason = evil, .tenant = evil,
			       .detail = evil, .operator_ = "bob" };
	char line[4096], v[1200];

	(void)state;
	assert_true(audit_format(line, sizeof(line), "n", &r, 0, 0) > 0);
	assert_line_shape(line);
	assert_null(strchr(line, '\n'));
	assert_true(valid_utf8(line));
	assert_true(member(line, "event", v, sizeof(v)));
	assert_string_equal(v, "operator");
	assert_non_null(strstr(line, "\\ufffd"));
	assert_non_null(strstr(line, "\xc3\xa9")); /* valid UTF-8 kept as it is */
	assert_non_null(strstr(line, "\\u0001"));
	assert_non_null(strstr(line, "\\\""));
}

static void account_is_the_keyed_hash_never_the_name(void **state)
{
	uint8_t key[32], h1[16], h2[16], h3[16];
	struct audit_rec r = { .event = AUDIT_BLOCK, .account = h1 };
	char line[4096], v[64], hex[33];

	(void)state;
	assert_true(sodium_init() >= 0);
	memset(key, 7, sizeof(key));
	sl_audit_account_hash(key, sizeof(key), "acme", "alice@example.com", 17, h1);
	sl_audit_account_hash(key, sizeof(key), "acme", "alice@example.com", 17, h2);
	assert_memory_equal(h1, h2, 16);
	/* Another tenant, another key: other hashes. */
	sl_audit_account_hash(key, sizeof(key), "other", "alice@example.com", 17, h2);
	assert_memory_not_equal(h1, h2, 16);
	key[0] ^= 1;
	sl_audit_account_hash(key, sizeof(key), "acme", "alice@example.com", 17, h3);
	assert_memory_not_equal(h1, h3, 16);
	assert_true(audit_format(line, sizeof(line), "n", &r, 0, 0) > 0);
	assert_null(strstr(line, "alice"));
	assert_true(member(line, "account", v, sizeof(v)));
	sodium_bin2hex(hex, sizeof(hex), h1, 16);
	assert_string_equal(v, hex);
}

/* Read @path's lines into @lines (at most @max); returns how many. */
static int read_lines(const char *path, char lines[][4096], int max)
{
	FILE *f = fopen(path, "r");
	int n = 0;

	assert_non_null(f);
	while (n < max && fgets(lines[n], 4096, f)) {
		size_t k = strlen(lines[n]);

		assert_true(k > 0 && lines[n][k - 1] == '\n');
		lines[n][k - 1] = '\0';
		n++;
	}
	fclose(f);
	return n;
}

static char lines[64][4096];

static void config_for(struct sl_config *c, const char *path, double rate, double burst)
{
	sl_config_defaults(c);
	snprintf(c->audit.output, sizeof(c->audit.output), "%s", path);
	snprintf(c->cluster.node, sizeof(c->cluster.node), "unit-node");
	c->audit.rate = rate;
	c->audit.burst = burst;
}

static void rate_limit_drops_counts_and_spares_operators(void **state)
{
	static struct sl_config c;
	char path[] = "/tmp/sluice-unit-audit-XXXXXX", err[256], v[64];
	struct audit_rec r = { .event = AUDIT_REFUSAL, .source = "edge", .reason = "shed_prefix" };
	struct audit_rec op = { .event = AUDIT_OPERATOR, .reason = "ticket 42", .must = true,
				.operator_ = "carol" };
	struct audit_stats st0, st;
	int fd = mkstemp(path), i, n;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	/* A bucket that barely refills: the burst, then only drops. */
	config_for(&c, path, 0.001, 5);
	assert_int_equal(audit_configure(&c, err, sizeof(err)), 0);
	assert_true(audit_enabled());
	audit_get_stats(&st0);
	for (i = 0; i < 50; i++)
		audit_emit(&r);
	audit_emit(&op); /* never dropped, and it carries the count */
	audit_emit(&r);  /* still none: dropped */
	audit_get_stats(&st);
	assert_int_equal(st.written - st0.written, 6);
	assert_int_equal(st.dropped - st0.dropped, 46);
	n = read_lines(path, lines, 64);
	assert_int_equal(n, 6);
	for (i = 0; i < n; i++)
		assert_line_shape(lines[i]);
	assert_true(member(lines[4], "dropped", v, sizeof(v)));
	assert_string_equal(v, "0");
	assert_true(member(lines[5], "event", v, sizeof(v)));
	assert_string_equal(v, "operator");
	assert_true(member(lines[5], "dropped", v, sizeof(v)));
	assert_string_equal(v, "45");
	/* Nothing else to carry the last one: the tick says it, once, after a second. */
	audit_tick();
	assert_int_equal(read_lines(path, lines, 64), 6);
	usleep(1100 * 1000);
	audit_tick();
	audit_tick();
	n = read_lines(path, lines, 64);
	assert_int_equal(n, 7);
	assert_line_shape(lines[6]);
	assert_true(member(lines[6], "event", v, sizeof(v)));
	assert_string_equal(v, "dropped");
	assert_true(member(lines[6], "dropped", v, sizeof(v)));
	assert_string_equal(v, "1");
	assert_true(member(lines[6], "node", v, sizeof(v)));
	assert_string_equal(v, "unit-node");
	audit_close();
	assert_false(audit_enabled());
	audit_emit(&op); /* closed: goes nowhere, and nothing breaks */
	assert_int_equal(read_lines(path, lines, 64), 7);
	unlink(path);
}

static void reopen_follows_a_rotation(void **state)
{
	static struct sl_config c;
	char path[] = "/tmp/sluice-unit-audit-XXXXXX", moved[64], err[256], v[64];
	struct audit_rec r = { .event = AUDIT_OPERATOR, .reason = "before", .must = true };
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	config_for(&c, path, 0, 1); /* rate 0: no limit */
	assert_int_equal(audit_configure(&c, err, sizeof(err)), 0);
	audit_emit(&r);
	snprintf(moved, sizeof(moved), "%s.1", path);
	assert_int_equal(rename(path, moved), 0);
	r.reason = "moved"; /* logrotate moved it; until the HUP it still goes there */
	audit_emit(&r);
	assert_int_equal(audit_reopen(), 0);
	r.reason = "after";
	audit_emit(&r);
	assert_int_equal(read_lines(moved, lines, 64), 2);
	assert_true(member(lines[1], "reason", v, sizeof(v)));
	assert_string_equal(v, "moved");
	assert_int_equal(read_lines(path, lines, 64), 1);
	assert_true(member(lines[0], "reason", v, sizeof(v)));
	assert_string_equal(v, "after");
	/* A path that cannot be opened keeps the old output, and says why. */
	config_for(&c, "/nonexistent-dir/audit.log", 0, 1);
	assert_true(audit_configure(&c, err, sizeof(err)) < 0);
	assert_contains(err, "/nonexistent-dir/audit.log");
	r.reason = "still";
	audit_emit(&r);
	assert_int_equal(read_lines(path, lines, 64), 2);
	audit_close();
	unlink(path);
	unlink(moved);
}

static void oneshot_appends_a_line(void **state)
{
	static struct sl_config c;
	char path[] = "/tmp/sluice-unit-audit-XXXXXX", v[128];
	struct audit_rec r = { .event = AUDIT_VERDICT, .source = "sluicectl", .prefix = "10.0.0.0/8",
			       .decision = "add", .reason = "ticket 7", .operator_ = "dave" };
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{}\n", 3), 3);
	close(fd);
	config_for(&c, path, 1, 1);
	assert_int_equal(audit_oneshot(&c, &r), 0);
	assert_int_equal(read_lines(path, lines, 64), 2);
	assert_line_shape(lines[1]);
	assert_true(member(lines[1], "operator", v, sizeof(v)));
	assert_string_equal(v, "dave");
	c.audit.output[0] = '\0';
	assert_int_equal(audit_oneshot(&c, &r), 1); /* off: nothing written, and said so */
	unlink(path);
}

static void log_records_are_one_line_with_an_iso_date(void **state)
{
	char buf[8192], v[512];
	size_t n;

	(void)state;
	n = log_format(buf, sizeof(buf), LOG_LVL_WARN, "reload rejected", 1772600767089ull, false);
	assert_int_equal(n, strlen(buf));
	assert_string_equal(buf, "2026-03-04T05:06:07.089Z warn  reload rejected");
	n = log_format(buf, sizeof(buf), LOG_LVL_ERROR, "a \"quoted\"\tthing", 0, true);
	assert_int_equal(n, strlen(buf));
	assert_true(member(buf, "time", v, sizeof(v)));
	assert_string_equal(v, "1970-01-01T00:00:00.000Z");
	assert_true(member(buf, "level", v, sizeof(v)));
	assert_string_equal(v, "error");
	assert_true(member(buf, "msg", v, sizeof(v)));
	assert_string_equal(v, "a \\\"quoted\\\"\\u0009thing");
}

/* log_msg itself, through stderr: a message of three lines is one record. */
static void log_folds_continuation_lines(void **state)
{
	char path[] = "/tmp/sluice-unit-log-XXXXXX", buf[4096];
	int fd = mkstemp(path), saved = dup(2);
	FILE *f;

	(void)state;
	assert_true(fd >= 0 && saved >= 0);
	assert_true(dup2(fd, 2) == 2);
	log_set_json(false);
	log_error("conf:3: first problem\nconf:9: second problem\r\n\nconf:12: third\n");
	log_set_json(true);
	log_warn("two\nlines");
	log_set_json(false);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	assert_contains(buf, "error conf:3: first problem | conf:9: second problem | conf:12: "
			     "third\n");
	assert_true(buf[4] == '-' && buf[7] == '-' && buf[10] == 'T' && buf[23] == 'Z');
	assert_non_null(fgets(buf, sizeof(buf), f));
	assert_contains(buf, "\"msg\":\"two | lines\"}\n");
	assert_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	unlink(path);
}

static void config_keys_and_their_errors(void **state)
{
	static struct sl_config c;
	char err[ERRLEN], path[256];
	const char *good = "edge: { interfaces = [\"eth0\"]; ports = ( { port = 80; } ); };\n"
			   "daemon: { log_format = \"json\"; };\n"
			   "audit: { output = \"audit.log\"; rate = 10; burst = 20; };\n" CLASSES;
	const char *bad = "edge: { interfaces = [\"eth0\"]; ports = ( { port = 80; } ); };\n"
			  "daemon: { log_format = \"xml\"; };\n"
			  "audit: { output = \"/var/log/\";\n"
			  "  rate = -1;\n"
			  "  burst = 0; colour = 1; };\n" CLASSES;

	(void)state;
	snprintf(path, sizeof(path), "%s", tmpfile_with("audit-conf", good));
	if (sl_config_load(path, "/srv/sluice", &c, err, sizeof(err)))
		fail_msg("%s", err);
	unlink(path);
	assert_true(c.log_json);
	assert_string_equal(c.audit.output, "/srv/sluice/audit.log"); /* relative: to the file */
	assert_true(c.audit.rate == 10 && c.audit.burst == 20);
	/* The defaults: off, 50 lines a second, 200 at once. */
	sl_config_defaults(&c);
	assert_string_equal(c.audit.output, "");
	assert_true(c.audit.rate == 50 && c.audit.burst == 200);
	assert_false(c.log_json);
	snprintf(path, sizeof(path), "%s", tmpfile_with("audit-conf", bad));
	assert_int_equal(sl_config_load(path, NULL, &c, err, sizeof(err)), -EINVAL);
	unlink(path);
	assert_contains(err, ":2: daemon.log_format: 'xml'");
	assert_contains(err, ":3: audit.output: '/var/log/' is a directory");
	assert_contains(err, ":4: audit.rate: -1 is out of range");
	assert_contains(err, ":5: audit.burst: 0 is out of range");
	assert_contains(err, ":5: unknown key 'colour' in audit");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(format_has_every_field_and_an_iso_date),
		cmocka_unit_test(hostile_strings_stay_inside_their_field),
		cmocka_unit_test(account_is_the_keyed_hash_never_the_name),
		cmocka_unit_test(rate_limit_drops_counts_and_spares_operators),
		cmocka_unit_test(reopen_follows_a_rotation),
		cmocka_unit_test(oneshot_appends_a_line),
		cmocka_unit_test(log_records_are_one_line_with_an_iso_date),
		cmocka_unit_test(log_folds_continuation_lines),
		cmocka_unit_test(config_keys_and_their_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
