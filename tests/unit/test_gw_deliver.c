// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The delivery: records escaped field by field, nothing ever to the daemon's log, and a
 * config that routes an endpoint that sends refused without a destination (issue 14). */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>

#include "config.h"
#include "gw_deliver.h"

static struct sl_config *cfg;

static int setup(void **state)
{
	(void)state;
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(cfg);
	return 0;
}

/* A config with a gateway and the routes given ("POST /login", "* /", ...). */
static void config_with(const char *const *routes, int n, const char *delivery_log)
{
	int i;

	sl_config_defaults(cfg);
	cfg->gw.present = 1;
	snprintf(cfg->tenants[0].name, SL_TENANT_NAME_LEN, "acme");
	cfg->n_tenants = 1;
	for (i = 0; i < n; i++) {
		struct sl_route_cfg *r = &cfg->routes[i];
		const char *sp = strchr(routes[i], ' ');

		snprintf(r->name, sizeof(r->name), "r%d", i);
		r->method = !strncmp(routes[i], "POST", 4) ? SL_M_POST :
			    !strncmp(routes[i], "GET", 3) ? SL_M_GET : SL_M_OTHER;
		snprintf(r->path, sizeof(r->path), "%s", sp + 1);
		r->cpu = 1;
	}
	cfg->n_routes = n;
	snprintf(cfg->gw.delivery_log, sizeof(cfg->gw.delivery_log), "%s", delivery_log);
}

/*
 * Read a record as the outbox reader did: split on every Unicode line break (what
 * Python's str.splitlines() splits on), keep the lines holding " kind=KIND " and " to=TO ".
 */
static int lines_for(const char *text, const char *kind, const char *to)
{
	char k[64], t[256], line[8192];
	const char *p = text;
	int n = 0;

	snprintf(k, sizeof(k), " kind=%s ", kind);
	snprintf(t, sizeof(t), " to=%s ", to);
	while (*p) {
		size_t len = 0, skip = 0;

		while (p[len]) {
			unsigned char c = (unsigned char)p[len];

			if (c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
			    (c >= 0x1c && c <= 0x1e)) {
				skip = 1;
				break;
			}
			if (c == 0xc2 && (unsigned char)p[len + 1] == 0x85) {
				skip = 2;
				break;
			}
			if (c == 0xe2 && (unsigned char)p[len + 1] == 0x80 &&
			    ((unsigned char)p[len + 2] == 0xa8 || (unsigned char)p[len + 2] == 0xa9)) {
				skip = 3;
				break;
			}
			len++;
		}
		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		if (strstr(line, k) && strstr(line, t))
			n++;
		p += len + skip;
	}
	return n;
}

static void records_are_escaped(void **state)
{
	/* Each, unescaped, made a line the reader took for a reset link of bob's. */
	static const char *const forged[] = {
		"mallory kind=reset_link to=bob link=https://acme.test/magic/FORGED valid_s=900 x",
		"x\n1 tenant=acme to=bob kind=reset_link link=https://acme.test/magic/FORGED y",
		"x\xe2\x80\xa8" "1 tenant=acme to=bob kind=reset_link link=https://x/magic/FORGED y",
		"x\xe2\x80\xa9" "1 tenant=acme to=bob kind=reset_link link=https://x/magic/FORGED y",
		"x\xc2\x85" "1 tenant=acme to=bob kind=reset_link link=https://x/magic/FORGED y",
		"x\r1 tenant=acme to=bob kind=reset_link link=https://acme.test/magic/FORGED y",
		"x\x1e" "1 tenant=acme to=bob kind=reset_link link=https://x/magic/FORGED y",
	};
	char rec[GW_DELIVER_RECORD_MAX], raw[GW_DELIVER_RECORD_MAX];
	size_t i, n, j;

	(void)state;
	n = gw_deliver_record(rec, sizeof(rec), 1700000000, "acme", "bob", "reset_link",
			      "link=https://acme.test/magic/abc valid_s=900");
	assert_string_equal(rec, "1700000000 tenant=acme to=bob kind=reset_link "
			    "link=https://acme.test/magic/abc valid_s=900\n");
	assert_int_equal(n, strlen(rec));
	assert_int_equal(lines_for(rec, "reset_link", "bob"), 1);

	for (i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
		/* What the record was before: the reader is fooled (the test can fail). */
		snprintf(raw, sizeof(raw), "1700000000 tenant=acme to=%s kind=notice "
			 "reason=reset_without_account\n", forged[i]);
		assert_int_equal(lines_for(raw, "reset_link", "bob"), 1);
		/* What it is now: one line, every field the gateway wrote. */
		n = gw_deliver_record(rec, sizeof(rec), 1700000000, "acme", forged[i], "notice",
				      "reason=reset_without_account");
		assert_int_equal(lines_for(rec, "reset_link", "bob"), 0);
		assert_int_equal(lines_for(rec, "notice", "bob"), 0);
		assert_true(n > 0 && rec[n - 1] == '\n');
		for (j = 0; j + 1 < n; j++)
			assert_true(rec[j] >= 0x20 && rec[j] < 0x7f);
		assert_true(strncmp(rec, "1700000000 tenant=acme to=", 26) == 0);
		assert_non_null(strstr(rec, " kind=notice reason=reset_without_account\n"));
	}
	/* The tenant and the kind are fields too; the text keeps its spaces and nothing else. */
	gw_deliver_record(rec, sizeof(rec), 1, "big co\n", "a", "k\xe2\x80\xa8", "x=1 y=\n2");
	assert_string_equal(rec, "1 tenant=big\\x20co\\x0a to=a kind=k\\xe2\\x80\\xa8 "
			    "x=1 y=\\x0a2\n");
}

static void records_fit(void **state)
{
	char rec[GW_DELIVER_RECORD_MAX], name[300], text[600], tenant[40];
	size_t n;

	(void)state;
	/* Everything at its longest and all escaped: one line, cut, never overrun. */
	memset(name, '\n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	memset(text, '\x01', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	memset(tenant, ' ', sizeof(tenant) - 1);
	tenant[sizeof(tenant) - 1] = '\0';
	n = gw_deliver_record(rec, sizeof(rec), UINT64_MAX, tenant, name, name, text);
	assert_true(n < sizeof(rec));
	assert_int_equal(strlen(rec), n);
	assert_ptr_equal(strchr(rec, '\n'), rec + n - 1);
	n = gw_deliver_record(rec, 40, 1, "acme", name, "otp", text);
	assert_true(n < 40);
	assert_ptr_equal(strchr(rec, '\n'), rec + n - 1);
}

/* @fn with the daemon's log (stderr) captured; what it wrote there into @out. */
static void stderr_of(void (*fn)(void), char *out, size_t cap)
{
	char path[] = "/tmp/sluice-unit-stderr-XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	ssize_t n;

	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(fd, 2), 2);
	fn();
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	n = pread(fd, out, cap - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
}

static struct gw_delivery dv;
static int sent_ret;

static void send_code(void)
{
	sent_ret = gw_deliver(&dv, "acme", "alice", "otp", "code=123456 valid_s=300");
}

static void no_destination(void **state)
{
	static const char *const login_only[] = { "POST /login", "GET /magic/" };
	static const char *const resets[] = { "POST /login", "POST /password-reset" };
	static const char *const mfa[] = { "POST /mfa/send" };
	static const char *const reg[] = { "* /register" };
	static const char *const catch_all[] = { "* /" };
	static const char *const get_only[] = { "GET /password-reset", "GET /mfa/" };
	char err[1024], logged[4096];

	(void)state;
	/* An endpoint that sends is routed and nothing says where to: refused, saying why. */
	config_with(resets, 2, "");
	assert_string_equal(gw_delivery_needed(cfg), "/password-reset");
	assert_int_equal(gw_delivery_open(&dv, cfg, err, sizeof(err)), -EINVAL);
	assert_contains(err, "gateway.delivery_log: not set, and POST /password-reset is routed");
	assert_contains(err, "never go to the daemon's log");
	config_with(mfa, 1, "");
	assert_int_equal(gw_delivery_open(&dv, cfg, err, sizeof(err)), -EINVAL);
	assert_contains(err, "POST /mfa/send is routed");
	config_with(reg, 1, "");
	assert_int_equal(gw_delivery_open(&dv, cfg, err, sizeof(err)), -EINVAL);
	assert_contains(err, "POST /register is routed");
	/* A route matches as the gateway matches it: a catch-all routes them all. */
	config_with(catch_all, 1, "");
	assert_int_equal(gw_delivery_open(&dv, cfg, err, sizeof(err)), -EINVAL);
	assert_contains(err, "POST /mfa/send is routed");

	/* Nothing that sends is routed: no destination needed, and anything handed to the
	 * delivery anyway is dropped and counted, never written to the daemon's log. */
	config_with(get_only, 2, "");
	assert_null(gw_delivery_needed(cfg));
	config_with(login_only, 2, "");
	assert_null(gw_delivery_needed(cfg));
	assert_int_equal(gw_delivery_open(&dv, cfg, err, sizeof(err)), 0);
	stderr_of(send_code, logged, sizeof(logged));
	assert_int_equal(sent_ret, -ENODEV);
	assert_string_equal(logged, "");
	assert_int_equal(dv.failed, 1);
	assert_int_equal(dv.sent, 0);
	gw_delivery_close(&dv);
}

static void to_the_file(void **state)
{
	static const char *const resets[] = { "POST /password-reset" };
	char path[] = "/tmp/sluice-unit-outbox-XXXXXX", err[1024], logged[4096], text[1024];
	int fd = mkstemp(path);
	ssize_t n;

	(void)state;
	assert_true(fd >= 0);
	config_with(resets, 1, path);
	assert_int_equal(gw_delivery_open(&dv, cfg, err, sizeof(err)), 0);
	stderr_of(send_code, logged, sizeof(logged));
	assert_int_equal(sent_ret, 0);
	assert_string_equal(logged, "");
	assert_int_equal(dv.sent, 1);
	gw_delivery_close(&dv);
	n = pread(fd, text, sizeof(text) - 1, 0);
	assert_true(n > 0);
	text[n] = '\0';
	assert_contains(text, " tenant=acme to=alice kind=otp code=123456 valid_s=300\n");
	close(fd);
	unlink(path);

	/* A file that cannot be opened refuses the config. */
	config_with(resets, 1, "/nonexistent/dir/outbox.log");
	assert_int_equal(gw_delivery_open(&dv, cfg, err, sizeof(err)), -ENOENT);
	assert_contains(err, "gateway.delivery_log: /nonexistent/dir/outbox.log");
}

/* link_base goes into every link's record with its spaces kept: it may hold none. */
static void link_base_is_one_token(void **state)
{
	static const char *const refused[] = { "https://a.test x", "https://a.test\\n",
					      "https://a.test/\\t", "https://\xc3\xa9.test",
					      "ftp://a.test" };
	char text[1024], err[2048];
	const char *p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]) + 1; i++) {
		snprintf(text, sizeof(text), "tenants = ( { name = \"acme\"; } );\n"
			 "gateway: {\n  listen = \"127.0.0.1:8080\";\n"
			 "  capacity = { cpu = 1000.0; };\n  link_base = \"%s\";\n};\n",
			 i < sizeof(refused) / sizeof(refused[0]) ? refused[i] :
			 "https://acme.test/a-b_c?d=e&f=%7e");
		p = tmpfile_with("conf", text);
		if (i < sizeof(refused) / sizeof(refused[0])) {
			assert_int_equal(sl_config_load(p, NULL, cfg, err, sizeof(err)), -EINVAL);
			assert_contains(err, ":5: gateway.link_base: an http:// or https:// URL");
		} else {
			assert_int_equal(sl_config_load(p, NULL, cfg, err, sizeof(err)), 0);
			assert_string_equal(cfg->gw.link_base, "https://acme.test/a-b_c?d=e&f=%7e");
		}
		unlink(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(records_are_escaped),
		cmocka_unit_test(records_fit),
		cmocka_unit_test(no_destination),
		cmocka_unit_test(to_the_file),
		cmocka_unit_test(link_base_is_one_token),
	};

	return cmocka_run_group_tests_name("gw_deliver", tests, setup, teardown);
}
