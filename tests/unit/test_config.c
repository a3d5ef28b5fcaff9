// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Config loading and validation: the sample file, defaults, and every rejection with its line. */
#include "unit.h"

#include <errno.h>
#include <limits.h>

#include "config.h"

#define ERRLEN 8192

/* A valid config: every bad case below is this file with one thing wrong. */
#define GOOD_EDGE                                                                           \
	"edge: {\n"                                                                         \
	"  interfaces = [\"eth0\"];\n"                                                      \
	"  ports = ( { port = 80; } );\n"                                                   \
	"};\n"

/*
 * Find a file of the source tree (examples/...): relative to the cwd when the tests run from
 * the top of the tree, else relative to the binary (build/tests/unit or build/san/tests/unit).
 */
static void tree_file(const char *rel, char *out, size_t n)
{
	char exe[PATH_MAX];
	ssize_t len;
	int up;

	if (!access(rel, R_OK)) {
		snprintf(out, n, "%s", rel);
		return;
	}
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(len > 0);
	exe[len] = '\0';
	for (up = 0; up < 6; up++) {
		char *slash = strrchr(exe, '/');

		if (!slash)
			break;
		*slash = '\0';
		snprintf(out, n, "%s/%s", exe, rel);
		if (!access(out, R_OK))
			return;
	}
	fail_msg("cannot find %s from the cwd or the test binary", rel);
}

/* Write @text to a temp file, copy its path into @path (tmpfile_with's buffer is shared). */
static void write_tmp(const char *text, char *path, size_t n)
{
	snprintf(path, n, "%s", tmpfile_with("config", text));
}

/* Load @text from a temp file into @c; the file is removed again. @path gets its name. */
static int load_text(const char *text, const char *base, struct sl_config *c, char *err,
		     char *path, size_t pn)
{
	int ret;

	write_tmp(text, path, pn);
	ret = sl_config_load(path, base, c, err, ERRLEN);
	unlink(path);
	return ret;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Names the table case under test in failure messages. */
static const char *current_case = "";

/* Assert that @err has a line starting "PATH:LINE: " that contains @reason. */
static void assert_err_line(const char *err, const char *path, int line, const char *reason)
{
	char prefix[PATH_MAX + 32];
	size_t pl;
	const char *l;

	pl = (size_t)snprintf(prefix, sizeof(prefix), "%s:%d: ", path, line);
	for (l = err; *l;) {
		const char *nl = strchr(l, '\n');
		size_t ll = nl ? (size_t)(nl - l) : strlen(l);

		if (ll >= pl && !strncmp(l, prefix, pl)) {
			char buf[1024];

			snprintf(buf, sizeof(buf), "%.*s", (int)ll, l);
			if (strstr(buf, reason))
				return;
		}
		l += ll + (nl ? 1 : 0);
	}
	fail_msg("%s%sexpected a line \"%s...%s...\" in:\n%s", current_case,
		 *current_case ? ": " : "", prefix, reason, err);
}

/* What --check-config asks of the host, each problem at the line that set it: a missing
 * interface (and not lo), an unreadable ASN table, pins outside a bpffs, a control socket
 * with no directory to go in; a default pin path and socket are reported against the file. */
static void host_checks_name_the_line(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN], hp[ERRLEN];
	int n;

	(void)state;
	write_tmp("edge: {\n"
		  "  interfaces = [\"lo\",\n"
		  "                \"sl-nope0\"];\n"
		  "  ports = ( { port = 80; } );\n"
		  "  asn_table = \"/nonexistent/asn.csv\";\n"
		  "  pin_path = \"/tmp/sluice-pins\";\n"
		  "};\n"
		  "classes = ( { name = \"unknown\"; rate = 3.0; burst = 7.0; } );\n"
		  "daemon: { control_socket = \"/nonexistent/run/ctl.sock\"; };\n",
		  path, sizeof(path));
	assert_int_equal(sl_config_load(path, NULL, &c, err, ERRLEN), 0);
	n = sl_config_check_host(&c, hp, sizeof(hp));
	assert_int_equal(n, 4);
	assert_int_equal(count_lines(hp), 4);
	assert_err_line(hp, path, 3, "edge.interfaces: no interface 'sl-nope0' on this host");
	assert_null(strstr(hp, "'lo'"));
	assert_err_line(hp, path, 5, "edge.asn_table: cannot read /nonexistent/asn.csv");
	assert_err_line(hp, path, 6, "edge.pin_path: /tmp/sluice-pins is not on a bpf filesystem");
	assert_err_line(hp, path, 9, "daemon.control_socket: neither /nonexistent/run nor "
			"/nonexistent exists");
	unlink(path);

	/* The socket's path taken by a file: sluiced would remove it. */
	write_tmp("edge: { interfaces = [\"lo\"]; ports = ( { port = 80; } ); };\n"
		  "classes = ( { name = \"unknown\"; rate = 3.0; burst = 7.0; } );\n", path,
		  sizeof(path));
	assert_int_equal(sl_config_load(path, NULL, &c, err, ERRLEN), 0);
	snprintf(c.ctl_socket, sizeof(c.ctl_socket), "%s", path);
	n = sl_config_check_host(&c, hp, sizeof(hp));
	assert_int_equal(n, 1);
	assert_non_null(strstr(hp, "is not a socket (sluiced would remove it)"));
	/* A default is not in the file: no line number. */
	assert_int_equal(strncmp(hp, path, strlen(path)), 0);
	assert_true(hp[strlen(path)] == ':' && hp[strlen(path) + 1] == ' ');
	unlink(path);
}

static void sample_config_loads(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN];
	const struct sl_class_cfg *h;
	const struct sl_tenant_cfg *t;
	static const uint8_t acme4[16] = { 192, 0, 2, 80 };
	static const uint8_t acme6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x80 };

	(void)state;
	tree_file("examples/sluice.conf", path, sizeof(path));
	assert_int_equal(sl_config_load(path, "/srv", &c, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_string_equal(c.path, path);

	assert_int_equal(c.n_ifaces, 1);
	assert_string_equal(c.ifaces[0], "eth0");
	assert_int_equal(c.xdp_mode, SL_XDP_NATIVE);

	assert_int_equal(c.n_ports, 2);
	assert_int_equal(c.ports[0].port, 80);
	assert_int_equal(c.ports[1].port, 443);
	/* Verify, then charge: both start with the cookie handshake (the default). */
	for (int i = 0; i < 2; i++)
		assert_int_equal(c.ports[i].front, SL_FRONT_STATELESS);
	assert_int_equal(c.ports[0].cost, 1);
	assert_int_equal(c.ports[1].cost, 950);      /* TLS: no route to read, a login's price */
	assert_int_equal(c.ports[0].unreadable_cost, 950); /* HTTP: its dearest route */
	assert_int_equal(c.ports[1].unreadable_cost, 950);
	assert_int_equal(c.ports[1].proto, SL_PROTO_TLS);
	assert_int_equal(sl_edge_max_cost(&c), 950);
	assert_int_equal(c.ports[0].action, SL_ACT_REPLY); /* plaintext HTTP: told why */
	assert_int_equal(c.ports[1].action, SL_ACT_DROP);  /* TLS: cannot be */
	assert_int_equal(c.state_entries, 1048576);
	assert_string_equal(c.asn_table, "/etc/sluice/asn.csv"); /* absolute: base ignored */
	assert_true(c.new_key_credit == 0.5);
	assert_int_equal(c.malformed_action, SL_ACT_DROP);
	assert_int_equal(c.fragment_action, SL_ACT_DROP);
	assert_string_equal(c.pin_path, SL_DEFAULT_PIN_PATH);
	assert_string_equal(c.ctl_socket, "/run/sluice/ctl.sock");
	assert_int_equal(c.log_level, 2); /* "info" */

	assert_int_equal(c.n_classes, 5);
	assert_string_equal(c.classes[0].name, "hosting");
	assert_string_equal(c.classes[1].name, "residential");
	assert_string_equal(c.classes[2].name, "mobile");
	assert_string_equal(c.classes[3].name, "business");
	assert_string_equal(c.classes[4].name, "unknown");
	assert_int_equal(c.unknown_class, 4);
	assert_int_equal(sl_config_class(&c, "unknown"), 4);
	assert_int_equal(sl_config_class(&c, "mobile"), 2);
	assert_int_equal(sl_config_class(&c, "nosuch"), -1);

	h = &c.classes[sl_config_class(&c, "hosting")];
	assert_int_equal(h->v4_prefix, 24);
	assert_int_equal(h->v6_prefix, 48);
	assert_int_equal(h->v4_parent, 16);
	assert_int_equal(h->v6_parent, 32);
	assert_true(h->rate == 32.0);
	assert_true(h->burst == 1900.0);
	assert_true(h->parent_rate == 320.0);
	assert_true(h->parent_burst == 19000.0);
	assert_int_equal(h->mode, SL_MODE_ENFORCE);
	/* Per-class values do not bleed into each other. */
	assert_int_equal(c.classes[2].v6_parent, 40);
	assert_int_equal(c.classes[3].v6_prefix, 56);
	assert_true(c.classes[3].burst == 285000.0);

	/* The reply knobs it spells out, and the MSS values it leaves to their defaults. */
	assert_int_equal(c.n_retry, 4);
	assert_int_equal(c.retry_after[0], 1);
	assert_int_equal(c.retry_after[1], 5);
	assert_int_equal(c.retry_after[2], 30);
	assert_int_equal(c.retry_after[3], 120);
	assert_int_equal(c.streak_decay_s, 60);
	assert_int_equal(c.event_sample, 100);
	assert_int_equal(c.cookie_rotate_s, 3600);
	assert_int_equal(c.mss4, 1460);
	assert_int_equal(c.mss6, 1440);

	assert_int_equal(c.n_tenants, 1);
	assert_int_equal(c.default_tenant, -1);
	t = &c.tenants[0];
	assert_string_equal(t->name, "acme");
	assert_int_equal(t->edge_budget, 1);
	assert_int_equal(t->n_listen, 2);
	assert_int_equal(t->listen[0].family, SL_FAM_V4);
	assert_memory_equal(t->listen[0].addr, acme4, 16);
	assert_int_equal(t->listen[0].port, 80);
	assert_int_equal(t->listen[1].family, SL_FAM_V6);
	assert_memory_equal(t->listen[1].addr, acme6, 16);
	assert_int_equal(t->listen[1].port, 80);
	assert_true(t->rate == 190000.0);
	assert_true(t->burst == 380000.0);
	assert_true(t->static_rate == 47500.0);
	assert_true(t->static_burst == 95000.0);
	assert_int_equal(t->lease_ttl_s, 3);
	assert_int_equal(t->mode, SL_MODE_ENFORCE);
}

static void minimal_config_gets_defaults(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN];
	const struct sl_class_cfg *u;

	(void)state;
	assert_int_equal(load_text(GOOD_EDGE
				   "classes = ( { name = \"unknown\"; rate = 3.0; burst = 7.0; } );\n",
				   NULL, &c, err, path, sizeof(path)),
			 0);
	assert_string_equal(err, "");
	assert_int_equal(c.n_ifaces, 1);
	assert_int_equal(c.n_ports, 1);
	assert_int_equal(c.ports[0].port, 80);
	assert_int_equal(c.ports[0].cost, 1);
	assert_int_equal(c.ports[0].action, SL_ACT_DROP);
	assert_int_equal(c.ports[0].front, SL_FRONT_STATELESS);
	assert_int_equal(c.ports[0].unreadable_cost, 1); /* no routes: the port's cost */
	assert_int_equal(c.xdp_mode, SL_XDP_NATIVE);
	assert_int_equal(c.state_entries, 1u << 20);
	assert_string_equal(c.asn_table, "");
	assert_true(c.new_key_credit == 0.5);
	assert_int_equal(c.malformed_action, SL_ACT_DROP);
	assert_int_equal(c.fragment_action, SL_ACT_DROP);
	assert_string_equal(c.pin_path, SL_DEFAULT_PIN_PATH);
	assert_string_equal(c.ctl_socket, SL_DEFAULT_CTL_SOCKET);
	assert_int_equal(c.n_retry, 4);
	assert_int_equal(c.retry_after[0], 1);
	assert_int_equal(c.retry_after[1], 5);
	assert_int_equal(c.retry_after[2], 30);
	assert_int_equal(c.retry_after[3], 120);
	assert_int_equal(c.streak_decay_s, 60);
	assert_int_equal(c.event_sample, 100);
	assert_int_equal(c.cookie_rotate_s, 3600);
	assert_int_equal(c.mss4, 1460);
	assert_int_equal(c.mss6, 1440);
	assert_int_equal(c.n_tenants, 0);
	assert_int_equal(c.default_tenant, -1);

	assert_int_equal(c.n_classes, 1);
	assert_int_equal(c.unknown_class, 0);
	u = &c.classes[0];
	assert_string_equal(u->name, "unknown");
	assert_int_equal(u->v4_prefix, 32);
	assert_int_equal(u->v6_prefix, 64);
	assert_int_equal(u->v4_parent, 24);
	assert_int_equal(u->v6_parent, 48);
	assert_true(u->rate == 3.0);
	assert_true(u->burst == 7.0);
	assert_true(u->parent_rate == 30.0);
	assert_true(u->parent_burst == 70.0);
	assert_int_equal(u->mode, SL_MODE_ENFORCE);
}

static void non_default_values_are_read(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN];

	(void)state;
	assert_int_equal(
		load_text("edge: {\n"
			  "  interfaces = [\"eth0\", \"eth1\"];\n"
			  "  xdp_mode = \"generic\";\n"
			  "  ports = ( { port = 22; cost = 50; }, { port = 8443; } );\n"
			  "  state_entries = 16;\n"
			  "  new_key_credit = 1.0;\n"
			  "  malformed = \"drop\";\n"
			  "  fragments = \"drop\";\n"
			  "  pin_path = \"/sys/fs/bpf/other\";\n"
			  "};\n"
			  "classes = ( { name = \"unknown\"; rate = 1; burst = 60; mode = \"monitor\";\n"
			  "              parent_rate = 4; parent_burst = 100; } );\n"
			  "daemon: { control_socket = \"/tmp/s.sock\"; log_level = \"debug\"; };\n",
			  NULL, &c, err, path, sizeof(path)),
		0);
	assert_int_equal(c.n_ifaces, 2);
	assert_string_equal(c.ifaces[1], "eth1");
	assert_int_equal(c.xdp_mode, SL_XDP_GENERIC);
	assert_int_equal(c.n_ports, 2);
	assert_int_equal(c.ports[0].port, 22);
	assert_int_equal(c.ports[0].cost, 50);
	assert_int_equal(c.ports[1].port, 8443);
	assert_int_equal(c.ports[1].cost, 1);
	assert_int_equal(c.state_entries, 16);
	assert_true(c.new_key_credit == 1.0);
	assert_int_equal(c.malformed_action, SL_ACT_DROP);
	assert_int_equal(c.fragment_action, SL_ACT_DROP);
	assert_string_equal(c.pin_path, "/sys/fs/bpf/other");
	assert_string_equal(c.ctl_socket, "/tmp/s.sock");
	assert_int_equal(c.log_level, 3);
	assert_int_equal(c.classes[0].mode, SL_MODE_MONITOR);
	assert_true(c.classes[0].rate == 1.0); /* integers are accepted where numbers are */
	assert_true(c.classes[0].parent_rate == 4.0);
	assert_true(c.classes[0].parent_burst == 100.0);
}

static void relative_asn_table_uses_base_dir(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN], cwd[PATH_MAX], want[PATH_MAX + 32];
	const char *text = "edge: {\n"
			   "  interfaces = [\"eth0\"];\n"
			   "  ports = ( { port = 80; } );\n"
			   "  asn_table = \"tables/asn.csv\";\n"
			   "};\n"
			   "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n";

	(void)state;
	assert_int_equal(load_text(text, "/srv/sluice", &c, err, path, sizeof(path)), 0);
	assert_string_equal(c.asn_table, "/srv/sluice/tables/asn.csv");

	/* Without a base directory, the config file's own directory (not the cwd): sluiced
	 * and sluicectl mean the same file whatever directory each runs in. */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(load_text(text, NULL, &c, err, path, sizeof(path)), 0);
	{
		char dir[PATH_MAX], *slash;

		snprintf(dir, sizeof(dir), "%s", path);
		slash = strrchr(dir, '/');
		assert_non_null(slash);
		*slash = '\0';
		snprintf(want, sizeof(want), "%s/tables/asn.csv", dir);
	}
	assert_string_equal(c.asn_table, want);
	/* The temp file is not in the cwd: the two rules would give different paths. */
	assert_true(strncmp(want, cwd, strlen(cwd)) != 0);
}

/* The classes every edge needs; GOOD_EDGE and this make lines 1..5. */
#define GOOD_CLASSES "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"

/* GOOD_EDGE left open at line 3: the case adds edge keys from line 4, then closes it. */
#define EDGE_OPEN                                                                           \
	"edge: {\n"                                                                         \
	"  interfaces = [\"eth0\"];\n"                                                      \
	"  ports = ( { port = 80; } );\n"
#define EDGE_CLOSE "};\n" GOOD_CLASSES

static void reply_action_and_knobs_are_read(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN];

	(void)state;
	assert_int_equal(load_text("edge: {\n"
				   "  interfaces = [\"eth0\"];\n"
				   "  ports = ( { port = 80; action = \"reply\"; },\n"
				   "            { port = 8080; action = \"reply\"; protocol = \"http\"; },\n"
				   "            { port = 443; action = \"drop\"; protocol = \"tls\"; },\n"
				   "            { port = 22; } );\n"
				   "  retry_after = [2, 2, 10, 60, 600, 3600, 7200, 86400];\n"
				   "  streak_decay = 300;\n"
				   "  event_sample = 7;\n"
				   "  cookie_rotate = 900;\n"
				   "  mss_v4 = 1400;\n"
				   "  mss_v6 = 1380;\n"
				   "};\n" GOOD_CLASSES,
				   NULL, &c, err, path, sizeof(path)),
			 0);
	assert_string_equal(err, "");
	assert_int_equal(c.n_ports, 4);
	assert_int_equal(c.ports[0].action, SL_ACT_REPLY);
	assert_int_equal(SL_ACT_REPLY, 2);
	assert_string_equal(sl_action_name(c.ports[0].action), "reply");
	assert_int_equal(c.ports[0].proto, SL_PROTO_HTTP);
	assert_int_equal(c.ports[1].port, 8080);
	assert_int_equal(c.ports[1].action, SL_ACT_REPLY);
	assert_int_equal(c.ports[2].action, SL_ACT_DROP);
	assert_int_equal(c.ports[2].proto, SL_PROTO_TLS);
	assert_int_equal(c.ports[3].action, SL_ACT_DROP); /* the default */

	/* Eight levels, the most there is; equal neighbours are not a descent. */
	assert_int_equal(c.n_retry, 8);
	assert_int_equal(c.retry_after[0], 2);
	assert_int_equal(c.retry_after[1], 2);
	assert_int_equal(c.retry_after[2], 10);
	assert_int_equal(c.retry_after[3], 60);
	assert_int_equal(c.retry_after[4], 600);
	assert_int_equal(c.retry_after[5], 3600);
	assert_int_equal(c.retry_after[6], 7200);
	assert_int_equal(c.retry_after[7], 86400);
	assert_int_equal(c.streak_decay_s, 300);
	assert_int_equal(c.event_sample, 7);
	assert_int_equal(c.cookie_rotate_s, 900);
	assert_int_equal(c.mss4, 1400);
	assert_int_equal(c.mss6, 1380);
}

static void reply_knob_bounds_are_inclusive(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN];

	(void)state;
	/* Every lower bound; a one-level ladder given as a list replaces all four defaults. */
	assert_int_equal(load_text(EDGE_OPEN
				   "  retry_after = ( 1 );\n"
				   "  streak_decay = 1;\n"
				   "  event_sample = 0;\n"
				   "  cookie_rotate = 60;\n"
				   "  mss_v4 = 536;\n"
				   "  mss_v6 = 1220;\n"
				   EDGE_CLOSE,
				   NULL, &c, err, path, sizeof(path)),
			 0);
	assert_string_equal(err, "");
	assert_int_equal(c.n_retry, 1);
	assert_int_equal(c.retry_after[0], 1);
	assert_int_equal(c.streak_decay_s, 1);
	assert_int_equal(c.event_sample, 0);
	assert_int_equal(c.cookie_rotate_s, 60);
	assert_int_equal(c.mss4, 536);
	assert_int_equal(c.mss6, 1220);

	/* Every upper bound. */
	assert_int_equal(load_text(EDGE_OPEN
				   "  retry_after = [86400];\n"
				   "  streak_decay = 86400;\n"
				   "  event_sample = 1000000;\n"
				   "  cookie_rotate = 604800;\n"
				   "  mss_v4 = 9000;\n"
				   "  mss_v6 = 9000;\n"
				   EDGE_CLOSE,
				   NULL, &c, err, path, sizeof(path)),
			 0);
	assert_string_equal(err, "");
	assert_int_equal(c.n_retry, 1);
	assert_int_equal(c.retry_after[0], 86400);
	assert_int_equal(c.streak_decay_s, 86400);
	assert_int_equal(c.event_sample, 1000000);
	assert_int_equal(c.cookie_rotate_s, 604800);
	assert_int_equal(c.mss4, 9000);
	assert_int_equal(c.mss6, 9000);
}

static void tenants_are_read(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN];
	static const uint8_t a4[16] = { 10, 0, 0, 2 };
	static const uint8_t a6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x02 };
	static const uint8_t b4[16] = { 192, 0, 2, 7 };
	static const uint8_t lo6[16] = { [15] = 1 };
	const struct sl_tenant_cfg *t;

	(void)state;
	assert_int_equal(
		load_text("edge: {\n"
			  "  interfaces = [\"eth0\"];\n"
			  "  ports = ( { port = 80; action = \"reply\"; }, { port = 443; cost = 4; } );\n"
			  "};\n" GOOD_CLASSES
			  "tenants = (\n"
			  /* Defaults: static_rate = rate / 4; burst / 4 is below the cost of 4. */
			  "  { name = \"acme\"; listen = [\"10.0.0.2:80\", \"[2001:db8::2]:80\"];\n"
			  "    rate = 100.0; burst = 10.0; },\n"
			  "  { name = \"beta\"; listen = [\"192.0.2.7:443\", \"[::1]:443\"];\n"
			  "    rate = 8; burst = 40; static_rate = 1.5; static_burst = 4.0;\n"
			  "    lease_ttl = 3600; mode = \"monitor\"; },\n"
			  /* Same address as acme, another port: a destination of its own. */
			  "  { name = \"default\"; listen = [\"10.0.0.2:443\"]; rate = 2.0; burst = 64.0;\n"
			  "    lease_ttl = 1; mode = \"enforce\"; }\n"
			  ");\n",
			  NULL, &c, err, path, sizeof(path)),
		0);
	assert_string_equal(err, "");
	assert_int_equal(c.n_tenants, 3);
	assert_int_equal(c.default_tenant, 2);

	t = &c.tenants[0];
	assert_string_equal(t->name, "acme");
	assert_int_equal(t->edge_budget, 1);
	assert_int_equal(t->n_listen, 2);
	assert_int_equal(t->listen[0].family, SL_FAM_V4);
	assert_memory_equal(t->listen[0].addr, a4, 16); /* the 12 bytes past an IPv4 are zero */
	assert_int_equal(t->listen[0].port, 80);
	assert_int_equal(t->listen[1].family, SL_FAM_V6);
	assert_memory_equal(t->listen[1].addr, a6, 16);
	assert_int_equal(t->listen[1].port, 80);
	assert_true(t->rate == 100.0);
	assert_true(t->burst == 10.0);
	assert_true(t->static_rate == 25.0);
	assert_true(t->static_burst == 4.0); /* max(10 / 4, cost 4) */
	assert_int_equal(t->lease_ttl_s, 3);
	assert_int_equal(t->mode, SL_MODE_ENFORCE);

	t = &c.tenants[1];
	assert_string_equal(t->name, "beta");
	assert_int_equal(t->n_listen, 2);
	assert_int_equal(t->listen[0].family, SL_FAM_V4);
	assert_memory_equal(t->listen[0].addr, b4, 16);
	assert_int_equal(t->listen[0].port, 443);
	assert_int_equal(t->listen[1].family, SL_FAM_V6);
	assert_memory_equal(t->listen[1].addr, lo6, 16);
	assert_int_equal(t->listen[1].port, 443);
	assert_true(t->rate == 8.0); /* integers are accepted where numbers are */
	assert_true(t->burst == 40.0);
	assert_true(t->static_rate == 1.5);
	assert_true(t->static_burst == 4.0);
	assert_int_equal(t->lease_ttl_s, 3600);
	assert_int_equal(t->mode, SL_MODE_MONITOR);

	t = &c.tenants[2];
	assert_string_equal(t->name, "default");
	assert_int_equal(t->n_listen, 1);
	assert_int_equal(t->listen[0].family, SL_FAM_V4);
	assert_memory_equal(t->listen[0].addr, a4, 16);
	assert_int_equal(t->listen[0].port, 443);
	assert_true(t->static_rate == 0.5);
	assert_true(t->static_burst == 16.0); /* max(64 / 4, cost 4) */
	assert_int_equal(t->lease_ttl_s, 1);
	assert_int_equal(t->mode, SL_MODE_ENFORCE);
}

struct bad_case {
	const char *what;
	const char *text;
	int line;           /* expected line of the (first) reported problem */
	const char *reason; /* expected in that line */
	int nerr;           /* expected number of reported lines */
	int line2;          /* and, when nonzero, a second problem */
	const char *reason2;
};

/* An edge whose largest port cost is 4, and its classes: lines 1..5, tenants from line 6. */
#define TENANT_EDGE                                                                         \
	"edge: {\n"                                                                         \
	"  interfaces = [\"eth0\"];\n"                                                      \
	"  ports = ( { port = 80; }, { port = 443; cost = 4; } );\n"                        \
	"};\n" GOOD_CLASSES

/* Tenant 'a' on TENANT_EDGE whose second listen entry, alone on line 9, is @entry. */
#define TENANT_LISTEN(entry)                                                                \
	TENANT_EDGE                                                                         \
	"tenants = (\n"                                                                     \
	"  { name = \"a\"; rate = 10.0; burst = 20.0;\n"                                    \
	"    listen = [\"10.0.0.9:80\",\n"                                                  \
	"      " entry " ]; }\n"                                                            \
	");\n"

static const struct bad_case bad_cases[] = {
	{ "v4_prefix 0", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0; burst = 5.0;\n"
	  "    v4_prefix = 0; }\n"
	  ");\n",
	  7, "class 'unknown'.v4_prefix: 0 is out of range 1..32", 1, 0, NULL },
	{ "v4_prefix 33", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0; burst = 5.0;\n"
	  "    v4_prefix = 33; }\n"
	  ");\n",
	  7, "class 'unknown'.v4_prefix: 33 is out of range 1..32", 1, 0, NULL },
	{ "v6_prefix 129", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0; burst = 5.0;\n"
	  "    v6_prefix = 129; }\n"
	  ");\n",
	  7, "class 'unknown'.v6_prefix: 129 is out of range 1..128", 1, 0, NULL },
	{ "v6_prefix 96", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0; burst = 5.0;\n"
	  "    v6_prefix = 96; }\n"
	  ");\n",
	  7, "class 'unknown'.v6_prefix: /96 is longer than /64", 1, 0, NULL },
	{ "v6_prefix 65", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; v6_prefix = 65; } );\n",
	  5, "/65 is longer than /64", 1, 0, NULL },
	{ "v4_parent equal to v4_prefix", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0; burst = 5.0;\n"
	  "    v4_prefix = 24; v4_parent = 24; }\n"
	  ");\n",
	  6, "class 'unknown': v4_parent /24 must be shorter than v4_prefix /24", 1, 0, NULL },
	{ "v4_parent longer than v4_prefix (the default /24 under /16)", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0; burst = 5.0; v4_prefix = 16; }\n"
	  ");\n",
	  6, "v4_parent /24 must be shorter than v4_prefix /16", 1, 0, NULL },
	{ "v6_parent not shorter than v6_prefix", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0; burst = 5.0; v6_prefix = 48; }\n"
	  ");\n",
	  6, "v6_parent /48 must be shorter than v6_prefix /48", 1, 0, NULL },
	{ "negative rate", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\";\n"
	  "    rate = -1.0; burst = 5.0; }\n"
	  ");\n",
	  7, "class 'unknown'.rate: -1 is out of range 0..1e+09", 1, 0, NULL },
	{ "rate 0", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\";\n"
	  "    rate = 0.0; burst = 5.0; }\n"
	  ");\n",
	  7, "class 'unknown'.rate: must be above 0", 1, 0, NULL },
	{ "rate not a number", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = \"fast\"; burst = 5.0; }\n"
	  ");\n",
	  6, "class 'unknown'.rate: expected a number", 1, 0, NULL },
	{ "negative burst", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0;\n"
	  "    burst = -3.0; }\n"
	  ");\n",
	  7, "class 'unknown'.burst: -3 is out of range 0..1e+09", 1, 0, NULL },
	{ "burst below the port cost",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  ports = ( { port = 80; }, { port = 443; cost = 5; } );\n"
	  "};\n"
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0;\n"
	  "    burst = 2.0; }\n"
	  ");\n",
	  7, "class 'unknown'.burst: 2 is below the most the edge charges one connection, 5 for a "
	  "request to port 443 that no route matches (its cost): no such request could ever pass; "
	  "raise it to 5 or more", 1, 0, NULL },
	{ "parent_burst below the port cost",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  ports = ( { port = 80; cost = 5; } );\n"
	  "};\n"
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0; burst = 5.0; parent_burst = 4.0; }\n"
	  ");\n",
	  6, "class 'unknown'.parent_burst: 4 is below the most the edge charges one connection, 5 "
	  "for a request to port 80 that no route matches (its cost)", 1, 0, NULL },
	{ "unknown mode", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0; burst = 5.0;\n"
	  "    mode = \"chill\"; }\n"
	  ");\n",
	  7, "class 'unknown'.mode: 'chill' is not one of the allowed values", 1, 0, NULL },
	{ "misspelt key (and so a missing one)", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\"; burst = 5.0;\n"
	  "    rat = 5.0; }\n"
	  ");\n",
	  7, "unknown key 'rat' in classes[0] (known: name, v4_prefix", 2,
	  6, "class 'unknown': 'rate' is required" },
	{ "unknown top-level key", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"
	  "deamon: { log_level = \"info\"; };\n",
	  6, "unknown key 'deamon' in the top level (known: edge, classes, tenants, routes, gateway, daemon, redis, cluster, counters, stream, audit)", 1, 0, NULL },
	{ "redis address neither unix: nor host:port", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"
	  "redis: {\n"
	  "  address = \"localhost\"; };\n",
	  7, "redis.address: 'localhost' is neither", 1, 0, NULL },
	{ "redis timeout out of range", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"
	  "redis: { address = \"unix:/run/redis.sock\";\n"
	  "  timeout_ms = 0; };\n",
	  7, "redis.timeout_ms: 0 is out of range 1..1000", 1, 0, NULL },
	{ "lease floors worth more than the budget", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"
	  "cluster: { nodes = 4;\n"
	  "  lease_floor = 0.3; };\n",
	  7, "cluster.lease_floor: 0.3 x 4 nodes is more than the whole budget", 1, 0, NULL },
	{ "demand window shorter than the lease interval", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"
	  "cluster: { lease_interval_ms = 500;\n"
	  "  demand_window_ms = 200; };\n",
	  6, "cluster: demand_window_ms (200) is shorter than lease_interval_ms (500)", 1, 0, NULL },
	{ "a static budget on a fail-open counter", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"
	  "counters: { login_failures = { rate = 0.01; burst = 5.0;\n"
	  "  static_rate = 1.0; }; };\n",
	  7, "counters.login_failures: static_rate and static_burst apply to fail = \"closed\" only", 1, 0, NULL },
	{ "metrics_listen with a host name", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"
	  "daemon: { control_socket = \"/run/x.sock\";\n"
	  "  metrics_listen = \"localhost:9469\"; };\n",
	  7, "daemon.metrics_listen: expected \"ADDR:PORT\"", 1, 0, NULL },
	{ "metrics_listen with junk after the port", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"
	  "daemon: { control_socket = \"/run/x.sock\";\n"
	  "  metrics_listen = \"127.0.0.1:80abc\"; };\n",
	  7, "daemon.metrics_listen: expected \"ADDR:PORT\"", 1, 0, NULL },
	{ "a static burst below one check", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"
	  "counters: { tenant_logins = { rate = 10.0; burst = 20.0;\n"
	  "  static_burst = 0.5; }; };\n",
	  7, "counters.tenant_logins.static_burst: 0.5 is below one check (1)", 1, 0, NULL },
	{ "a capacity counter without its budget", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"
	  "counters: {\n"
	  "  tenant_logins = { fail = \"closed\"; }; };\n",
	  7, "counters.tenant_logins: 'rate' is required", 2, 0, NULL },
	{ "a parent prefix longer than its key prefix", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"
	  "counters: { prefix_v4 = 24;\n"
	  "  parent_v4 = 28; };\n",
	  7, "counters.parent_v4: /28 is longer than prefix_v4 (/24)", 1, 0, NULL },
	{ "account_keys cannot block", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"
	  "stream: {\n"
	  "  account_keys = { action = \"block\"; }; };\n",
	  7, "stream.account_keys.action: 'block' is not an action this detector can take", 1, 0,
	  NULL },
	{ "unknown fail mode", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"
	  "counters: {\n"
	  "  login_successes = { fail = \"ajar\"; }; };\n",
	  7, "counters.login_successes.fail: 'ajar' is not one of the allowed values", 1, 0, NULL },
	{ "no class named unknown", GOOD_EDGE
	  "\n"
	  "classes = (\n"
	  "  { name = \"hosting\"; rate = 1.0; burst = 5.0; }\n"
	  ");\n",
	  6, "classes: a class named \"unknown\" is required", 1, 0, NULL },
	{ "duplicate class name", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"hosting\"; rate = 1.0; burst = 5.0; },\n"
	  "  { name = \"unknown\"; rate = 1.0; burst = 5.0; },\n"
	  "  { name = \"hosting\"; rate = 2.0; burst = 5.0; }\n"
	  ");\n",
	  8, "classes[2]: class 'hosting' is defined twice", 1, 0, NULL },
	{ "uppercase class name", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0; burst = 5.0; },\n"
	  "  { name = \"Hosting\"; rate = 1.0; burst = 5.0; }\n"
	  ");\n",
	  7, "classes[1].name: 'Hosting' must be 1..15 characters of a-z, 0-9, '_', '-'", 1, 0, NULL },
	{ "class name too long", GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0; burst = 5.0; },\n"
	  "  { name = \"abcdefghijklmnop\"; rate = 1.0; burst = 5.0; }\n"
	  ");\n",
	  7, "classes[1].name: 'abcdefghijklmnop' must be 1..15 characters", 1, 0, NULL },
	{ "too many classes",
	  GOOD_EDGE
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0; burst = 5.0; },\n"
	  "  { name = \"c1\"; rate = 1.0; burst = 5.0; }, { name = \"c2\"; rate = 1.0; burst = 5.0; },\n"
	  "  { name = \"c3\"; rate = 1.0; burst = 5.0; }, { name = \"c4\"; rate = 1.0; burst = 5.0; },\n"
	  "  { name = \"c5\"; rate = 1.0; burst = 5.0; }, { name = \"c6\"; rate = 1.0; burst = 5.0; },\n"
	  "  { name = \"c7\"; rate = 1.0; burst = 5.0; }, { name = \"c8\"; rate = 1.0; burst = 5.0; },\n"
	  "  { name = \"c9\"; rate = 1.0; burst = 5.0; }, { name = \"c10\"; rate = 1.0; burst = 5.0; },\n"
	  "  { name = \"c11\"; rate = 1.0; burst = 5.0; }, { name = \"c12\"; rate = 1.0; burst = 5.0; },\n"
	  "  { name = \"c13\"; rate = 1.0; burst = 5.0; }, { name = \"c14\"; rate = 1.0; burst = 5.0; },\n"
	  "  { name = \"c15\"; rate = 1.0; burst = 5.0; }, { name = \"c16\"; rate = 1.0; burst = 5.0; }\n"
	  ");\n",
	  5, "classes: at most 15 classes (got 17)", 1, 0, NULL },
	{ "duplicate port",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  ports = ( { port = 443; },\n"
	  "            { port = 80; },\n"
	  "            { port = 443; cost = 2; } );\n"
	  "};\n"
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n",
	  5, "edge.ports[2]: port 443 is listed twice", 1, 0, NULL },
	{ "port 0",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  ports = ( { port = 80; },\n"
	  "            { port = 0; } );\n"
	  "};\n"
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n",
	  4, "edge.ports[1].port: 0 is out of range 1..65535", 1, 0, NULL },
	{ "port 70000",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  ports = ( { port = 80; },\n"
	  "            { port = 70000; } );\n"
	  "};\n"
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n",
	  4, "edge.ports[1].port: 70000 is out of range 1..65535", 1, 0, NULL },
	{ "port action pass",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  ports = ( { port = 80;\n"
	  "              action = \"pass\"; } );\n"
	  "};\n"
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n",
	  4, "edge.ports[0].action: a protected port sheds with \"drop\"", 1, 0, NULL },
	{ "no ports",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  ports = ( );\n"
	  "};\n"
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n",
	  3, "edge.ports: at least one port is required", 1, 0, NULL },
	{ "relative pin_path",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  ports = ( { port = 80; } );\n"
	  "  pin_path = \"bpf/sluice\";\n"
	  "};\n"
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n",
	  4, "edge.pin_path: must be an absolute path", 1, 0, NULL },
	{ "empty interfaces",
	  "edge: {\n"
	  "\n"
	  "  interfaces = [];\n"
	  "  ports = ( { port = 80; } );\n"
	  "};\n"
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n",
	  3, "edge.interfaces: at least one interface is required", 1, 0, NULL },
	{ "interface listed twice",
	  "edge: {\n"
	  "  interfaces = [\"eth0\",\n"
	  "                \"eth0\"];\n"
	  "  ports = ( { port = 80; } );\n"
	  "};\n"
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n",
	  3, "edge.interfaces: 'eth0' is listed twice", 1, 0, NULL },
	{ "interface name too long",
	  "edge: {\n"
	  "  interfaces = [\"abcdefghijklmnop\"];\n"
	  "  ports = ( { port = 80; } );\n"
	  "};\n"
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n",
	  2, "edge.interfaces[0]: expected an interface name of 1..15 characters", 1, 0, NULL },
	{ "state_entries too small",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  ports = ( { port = 80; } );\n"
	  "  state_entries = 15;\n"
	  "};\n"
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n",
	  4, "edge.state_entries: 15 is out of range 16..67108864", 1, 0, NULL },
	{ "new_key_credit 0",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  ports = ( { port = 80; } );\n"
	  "  new_key_credit = 0.0;\n"
	  "};\n"
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n",
	  4, "edge.new_key_credit: must be above 0", 1, 0, NULL },
	{ "unknown xdp_mode",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  xdp_mode = \"offload\";\n"
	  "  ports = ( { port = 80; } );\n"
	  "};\n"
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n",
	  3, "edge.xdp_mode: 'offload' is not one of the allowed values", 1, 0, NULL },
	{ "relative control socket", GOOD_EDGE
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n"
	  "daemon: {\n"
	  "  control_socket = \"ctl.sock\";\n"
	  "};\n",
	  7, "daemon.control_socket: must be an absolute path under 100 characters", 1, 0, NULL },
	{ "syntax error: a list element without its comma",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  ports = ( { port = 80; }\n"
	  "            { port = 443; } );\n"
	  "};\n"
	  "classes = ( { name = \"unknown\"; rate = 1.0; burst = 5.0; } );\n",
	  4, "syntax error", 1, 0, NULL },
	{ "syntax error: a setting without its value", GOOD_EDGE
	  "classes = ( { name = \"unknown\";\n"
	  "  rate = ; burst = 5.0; } );\n",
	  6, "syntax error", 1, 0, NULL },

	/* edge.ports[].action beyond "pass" */
	{ "reply on a TLS port",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  ports = ( { port = 443; protocol = \"tls\";\n"
	  "              action = \"reply\"; } );\n"
	  "};\n" GOOD_CLASSES,
	  4, "edge.ports[0].action: a TLS port cannot be answered with an HTTP 429: use \"drop\"",
	  1, 0, NULL },
	{ "unknown port action",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  ports = ( { port = 80; }, { port = 81;\n"
	  "              action = \"rst\"; } );\n"
	  "};\n" GOOD_CLASSES,
	  4, "edge.ports[1].action: 'rst' is not one of the allowed values", 1, 0, NULL },

	/* edge.retry_after */
	{ "retry_after a number", EDGE_OPEN
	  "  retry_after = 5;\n" EDGE_CLOSE,
	  4, "edge.retry_after: expected an array of seconds [1, 5, 30, 120]", 1, 0, NULL },
	{ "retry_after a string", EDGE_OPEN
	  "  retry_after = \"1, 5, 30\";\n" EDGE_CLOSE,
	  4, "edge.retry_after: expected an array of seconds", 1, 0, NULL },
	{ "retry_after a group", EDGE_OPEN
	  "  retry_after = { first = 1; };\n" EDGE_CLOSE,
	  4, "edge.retry_after: expected an array of seconds", 1, 0, NULL },
	{ "retry_after with no levels", EDGE_OPEN
	  "\n"
	  "  retry_after = [];\n" EDGE_CLOSE,
	  5, "edge.retry_after: 1..8 levels (got 0)", 1, 0, NULL },
	{ "retry_after with 9 levels", EDGE_OPEN
	  "  retry_after = [1, 2, 3, 4, 5, 6, 7, 8, 9];\n" EDGE_CLOSE,
	  4, "edge.retry_after: 1..8 levels (got 9)", 1, 0, NULL },
	{ "retry_after level a string", EDGE_OPEN
	  "  retry_after = ( 1,\n"
	  "                  \"5\", 30 );\n" EDGE_CLOSE,
	  5, "edge.retry_after[1]: expected whole seconds", 1, 0, NULL },
	{ "retry_after levels fractional", EDGE_OPEN
	  "  retry_after = [1.0,\n"
	  "                 5.5];\n" EDGE_CLOSE,
	  4, "edge.retry_after[0]: expected whole seconds", 2,
	  5, "edge.retry_after[1]: expected whole seconds" },
	{ "retry_after level 0", EDGE_OPEN
	  "  retry_after = [0, 5];\n" EDGE_CLOSE,
	  4, "edge.retry_after[0]: 0 is out of range 1..86400", 1, 0, NULL },
	{ "retry_after level negative", EDGE_OPEN
	  "  retry_after = [1,\n"
	  "                 -5];\n" EDGE_CLOSE,
	  5, "edge.retry_after[1]: -5 is out of range 1..86400", 1, 0, NULL },
	{ "retry_after level above a day", EDGE_OPEN
	  "  retry_after = [1, 5,\n"
	  "                 86401];\n" EDGE_CLOSE,
	  5, "edge.retry_after[2]: 86401 is out of range 1..86400", 1, 0, NULL },
	{ "retry_after descends", EDGE_OPEN
	  "  retry_after = [5,\n"
	  "                 1];\n" EDGE_CLOSE,
	  5, "edge.retry_after[1]: 1 is below the level before it: the ladder must not descend",
	  1, 0, NULL },
	{ "retry_after descends late", EDGE_OPEN
	  "  retry_after = [1, 5, 30,\n"
	  "                 29, 120];\n" EDGE_CLOSE,
	  5, "edge.retry_after[3]: 29 is below the level before it", 1, 0, NULL },
	{ "retry_after misspelt", EDGE_OPEN
	  "  retry_afer = [1, 5];\n" EDGE_CLOSE,
	  4, "unknown key 'retry_afer' in edge (known: interfaces, xdp_mode, ports, "
	  "state_entries, asn_table, new_key_credit, malformed, fragments, pin_path, retry_after, "
	  "streak_decay, event_sample, cookie_rotate, mss_v4, mss_v6)", 1, 0, NULL },

	/* The other reply knobs: one past each bound */
	{ "streak_decay 0", EDGE_OPEN "  streak_decay = 0;\n" EDGE_CLOSE,
	  4, "edge.streak_decay: 0 is out of range 1..86400", 1, 0, NULL },
	{ "streak_decay 86401", EDGE_OPEN "  streak_decay = 86401;\n" EDGE_CLOSE,
	  4, "edge.streak_decay: 86401 is out of range 1..86400", 1, 0, NULL },
	{ "streak_decay a string", EDGE_OPEN "  streak_decay = \"60\";\n" EDGE_CLOSE,
	  4, "edge.streak_decay: expected an integer", 1, 0, NULL },
	{ "event_sample -1", EDGE_OPEN "  event_sample = -1;\n" EDGE_CLOSE,
	  4, "edge.event_sample: -1 is out of range 0..1000000", 1, 0, NULL },
	{ "event_sample 1000001", EDGE_OPEN "  event_sample = 1000001;\n" EDGE_CLOSE,
	  4, "edge.event_sample: 1000001 is out of range 0..1000000", 1, 0, NULL },
	{ "cookie_rotate 59", EDGE_OPEN "  cookie_rotate = 59;\n" EDGE_CLOSE,
	  4, "edge.cookie_rotate: 59 is out of range 60..604800", 1, 0, NULL },
	{ "cookie_rotate 604801", EDGE_OPEN "  cookie_rotate = 604801;\n" EDGE_CLOSE,
	  4, "edge.cookie_rotate: 604801 is out of range 60..604800", 1, 0, NULL },
	{ "mss_v4 535", EDGE_OPEN "  mss_v4 = 535;\n" EDGE_CLOSE,
	  4, "edge.mss_v4: 535 is out of range 536..9000", 1, 0, NULL },
	{ "mss_v4 9001", EDGE_OPEN "  mss_v4 = 9001;\n" EDGE_CLOSE,
	  4, "edge.mss_v4: 9001 is out of range 536..9000", 1, 0, NULL },
	{ "mss_v4 fractional", EDGE_OPEN "  mss_v4 = 1460.0;\n" EDGE_CLOSE,
	  4, "edge.mss_v4: expected an integer", 1, 0, NULL },
	{ "mss_v6 1219", EDGE_OPEN "  mss_v6 = 1219;\n" EDGE_CLOSE,
	  4, "edge.mss_v6: 1219 is out of range 1220..9000", 1, 0, NULL },
	{ "mss_v6 9001", EDGE_OPEN "  mss_v6 = 9001;\n" EDGE_CLOSE,
	  4, "edge.mss_v6: 9001 is out of range 1220..9000", 1, 0, NULL },

	/* tenants[].listen */
	{ "listen without a port", TENANT_LISTEN("\"10.0.0.2\""),
	  9, "tenant 'a'.listen[1]: '10.0.0.2' is not ADDR:PORT or [ADDR6]:PORT", 1, 0, NULL },
	{ "listen IPv6 without the colon", TENANT_LISTEN("\"[::1]80\""),
	  9, "tenant 'a'.listen[1]: '[::1]80' is not ADDR:PORT or [ADDR6]:PORT", 1, 0, NULL },
	{ "listen port 0", TENANT_LISTEN("\"10.0.0.2:0\""),
	  9, "tenant 'a'.listen[1]: '10.0.0.2:0' is not ADDR:PORT or [ADDR6]:PORT", 1, 0, NULL },
	{ "listen host name", TENANT_LISTEN("\"host:80\""),
	  9, "tenant 'a'.listen[1]: 'host:80' is not ADDR:PORT or [ADDR6]:PORT", 1, 0, NULL },
	{ "listen port 65536", TENANT_LISTEN("\"[::1]:65536\""),
	  9, "tenant 'a'.listen[1]: '[::1]:65536' is not ADDR:PORT", 1, 0, NULL },
	{ "listen IPv6 without brackets", TENANT_LISTEN("\"2001:db8::2:80\""),
	  9, "tenant 'a'.listen[1]: '2001:db8::2:80' is not ADDR:PORT", 1, 0, NULL },
	{ "listen IPv4 in brackets", TENANT_LISTEN("\"[10.0.0.2]:80\""),
	  9, "tenant 'a'.listen[1]: '[10.0.0.2]:80' is not ADDR:PORT", 1, 0, NULL },
	{ "listen unclosed bracket", TENANT_LISTEN("\"[2001:db8::2:80\""),
	  9, "tenant 'a'.listen[1]: '[2001:db8::2:80' is not ADDR:PORT", 1, 0, NULL },
	{ "listen port with trailing junk", TENANT_LISTEN("\"10.0.0.2:80x\""),
	  9, "tenant 'a'.listen[1]: '10.0.0.2:80x' is not ADDR:PORT", 1, 0, NULL },
	{ "listen empty port", TENANT_LISTEN("\"10.0.0.2:\""),
	  9, "tenant 'a'.listen[1]: '10.0.0.2:' is not ADDR:PORT", 1, 0, NULL },
	{ "listen entry a number (in a list: an array cannot mix types)", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; rate = 10.0; burst = 20.0;\n"
	  "    listen = ( \"10.0.0.9:80\",\n"
	  "               80 ); }\n"
	  ");\n",
	  9, "tenant 'a'.listen[1]: '?' is not ADDR:PORT or [ADDR6]:PORT", 1, 0, NULL },
	{ "listen port not protected", TENANT_LISTEN("\"10.0.0.2:8080\""),
	  9, "tenant 'a'.listen[1]: port 8080 is not in edge.ports, so this budget would never "
	  "be charged", 1, 0, NULL },
	{ "listen IPv6 port not protected", TENANT_LISTEN("\"[2001:db8::2]:22\""),
	  9, "tenant 'a'.listen[1]: port 22 is not in edge.ports", 1, 0, NULL },
	{ "listen a string", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; rate = 10.0; burst = 20.0;\n"
	  "    listen = \"10.0.0.2:80\"; }\n"
	  ");\n",
	  8, "tenant 'a'.listen: expected [\"ADDR:PORT\", \"[ADDR6]:PORT\"]", 1, 0, NULL },
	{ "listen nine addresses", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; rate = 10.0; burst = 20.0;\n"
	  "    listen = [\"10.0.0.1:80\", \"10.0.0.2:80\", \"10.0.0.3:80\", \"10.0.0.4:80\",\n"
	  "              \"10.0.0.5:80\", \"10.0.0.6:80\", \"10.0.0.7:80\", \"10.0.0.8:80\",\n"
	  "              \"10.0.0.9:80\"]; }\n"
	  ");\n",
	  10, "tenant 'a'.listen: at most 8", 1, 0, NULL },
	{ "listen without an edge budget", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\";\n"
	  "    listen = [\"10.0.0.2:80\"];\n"
	  "    burst = 20.0; }\n"
	  ");\n",
	  8, "tenant 'a'.listen: an edge budget needs rate and burst", 2,
	  9, "tenant 'a'.burst: an edge budget needs a rate too" },

	{ "a lease ttl and static rate without an edge budget", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; hosts = [\"a.example\"];\n"
	  "    static_rate = 2.0; lease_ttl = 5; }\n"
	  ");\n",
	  8, "tenant 'a'.static_rate: an edge budget needs a rate too", 2,
	  8, "tenant 'a'.lease_ttl: an edge budget needs a rate too" },

	/* tenants: one name, one destination */
	{ "a tenant name that would need escaping", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a,b\"; listen = [\"10.0.0.2:80\"]; rate = 10.0; burst = 20.0; }\n"
	  ");\n",
	  7, "tenants[0].name: 1..31 of letters, digits, '.', '_' and '-', the first a letter or "
	  "digit", 1, 0, NULL },
	{ "duplicate tenant name", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\"]; rate = 10.0; burst = 20.0; },\n"
	  "  { name = \"b\"; listen = [\"10.0.0.3:80\"]; rate = 10.0; burst = 20.0; },\n"
	  "  { name = \"a\"; listen = [\"10.0.0.4:80\"]; rate = 10.0; burst = 20.0; }\n"
	  ");\n",
	  9, "tenants[2]: tenant 'a' is defined twice", 1, 0, NULL },
	/* Reported on the tenants list, not on the second listen entry (line 9). */
	{ "two tenants on one IPv4 address and port", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\"]; rate = 10.0; burst = 20.0; },\n"
	  "  { name = \"b\"; rate = 10.0; burst = 20.0;\n"
	  "    listen = [\"10.0.0.3:80\", \"10.0.0.2:80\"]; }\n"
	  ");\n",
	  6, "tenants: 'a' and 'b' both listen on the same address and port", 1, 0, NULL },
	{ "two tenants on one IPv6 address and port, spelt differently", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"[2001:db8::2]:443\"]; rate = 10.0; burst = 20.0; },\n"
	  "  { name = \"b\"; listen = [\"[2001:DB8:0:0::0002]:443\"]; rate = 10.0; burst = 20.0; }\n"
	  ");\n",
	  6, "tenants: 'a' and 'b' both listen on the same address and port", 1, 0, NULL },
	{ "one tenant listing an address twice", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\", \"[::1]:80\", \"10.0.0.2:80\"];\n"
	  "    rate = 10.0; burst = 20.0; }\n"
	  ");\n",
	  6, "tenants: 'a' and 'a' both listen on the same address and port", 1, 0, NULL },

	/* tenants: budgets and the rest */
	{ "tenant rate 0", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\"];\n"
	  "    rate = 0.0; burst = 20.0; }\n"
	  ");\n",
	  8, "tenant 'a'.rate: must be above 0", 1, 0, NULL },
	{ "tenant rate negative", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\"];\n"
	  "    rate = -1.0; burst = 20.0; }\n"
	  ");\n",
	  8, "tenant 'a'.rate: -1 is out of range 0..1e+09", 1, 0, NULL },
	{ "tenant rate a string", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\"];\n"
	  "    rate = \"fast\"; burst = 20.0; }\n"
	  ");\n",
	  8, "tenant 'a'.rate: expected a number", 1, 0, NULL },
	{ "tenant burst below the port cost", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\"]; rate = 10.0;\n"
	  "    burst = 3.0; }\n"
	  ");\n",
	  8, "tenant 'a'.burst: 3 is below the most the edge charges one connection, 4 for a "
	  "request to port 443 that no route matches (its cost)", 1, 0, NULL },
	{ "tenant burst missing", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\"]; rate = 10.0; }\n"
	  ");\n",
	  7, "tenant 'a': 'burst' is required", 1, 0, NULL },
	{ "tenant static_rate 0", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\"]; rate = 10.0; burst = 20.0;\n"
	  "    static_rate = 0.0; }\n"
	  ");\n",
	  8, "tenant 'a'.static_rate: must be above 0", 1, 0, NULL },
	{ "tenant static_burst below the port cost", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\"]; rate = 10.0; burst = 20.0;\n"
	  "    static_burst = 3.5; }\n"
	  ");\n",
	  8, "tenant 'a'.static_burst: 3.5 is below the most the edge charges one connection, 4 "
	  "for a request to port 443", 1, 0, NULL },
	{ "unknown key in a tenant", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\"]; rate = 10.0; burst = 20.0; },\n"
	  "  { name = \"b\"; listen = [\"10.0.0.3:80\"]; rate = 10.0; burst = 20.0;\n"
	  "    lease = 5; }\n"
	  ");\n",
	  9, "unknown key 'lease' in tenants[1] (known: name, listen, rate, burst, static_rate, "
	  "static_burst, lease_ttl, mode, hosts, reservation, upstream)", 1, 0, NULL },
	{ "tenant lease_ttl 0", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\"]; rate = 10.0; burst = 20.0;\n"
	  "    lease_ttl = 0; }\n"
	  ");\n",
	  8, "tenant 'a'.lease_ttl: 0 is out of range 1..3600", 1, 0, NULL },
	{ "tenant lease_ttl 3601", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\"]; rate = 10.0; burst = 20.0;\n"
	  "    lease_ttl = 3601; }\n"
	  ");\n",
	  8, "tenant 'a'.lease_ttl: 3601 is out of range 1..3600", 1, 0, NULL },
	{ "tenant lease_ttl fractional", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\"]; rate = 10.0; burst = 20.0;\n"
	  "    lease_ttl = 2.5; }\n"
	  ");\n",
	  8, "tenant 'a'.lease_ttl: expected an integer", 1, 0, NULL },
	{ "tenant mode unknown", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"a\"; listen = [\"10.0.0.2:80\"]; rate = 10.0; burst = 20.0;\n"
	  "    mode = \"chill\"; }\n"
	  ");\n",
	  8, "tenant 'a'.mode: 'chill' is not one of the allowed values", 1, 0, NULL },
	{ "tenant without a name", TENANT_EDGE
	  "tenants = (\n"
	  "  { listen = [\"10.0.0.2:80\"]; rate = 10.0; burst = 20.0; }\n"
	  ");\n",
	  7, "tenants[0]: 'name' is required", 1, 0, NULL },
	{ "tenant name too long", TENANT_EDGE
	  "tenants = (\n"
	  "  { name = \"abcdefghijklmnopqrstuvwxyz012345\";\n"
	  "    listen = [\"10.0.0.2:80\"]; rate = 10.0; burst = 20.0; }\n"
	  ");\n",
	  7, "tenants[0].name: 1..31 of letters, digits", 1, 0, NULL },
	{ "tenants a group", TENANT_EDGE
	  "tenants = { name = \"a\"; };\n",
	  6, "tenants: expected a list ( { name = ...; }, ... )", 1, 0, NULL },
};

static void shared_state_is_read(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN];

	(void)state;
	/* Defaults: in-process, one node, the login counters on and failing open. */
	assert_int_equal(load_text(GOOD_EDGE
				   "classes = ( { name = \"unknown\"; rate = 3.0; burst = 7.0; } );\n",
				   NULL, &c, err, path, sizeof(path)), 0);
	assert_string_equal(c.redis.address, "");
	assert_int_equal(c.redis.timeout_ms, 5);
	assert_int_equal(c.cluster.nodes, 1);
	assert_int_equal(c.cluster.lease_interval_ms, 200);
	assert_true(c.counters[SL_CTR_LOGIN_FAILURES].enabled);
	assert_int_equal(c.counters[SL_CTR_LOGIN_FAILURES].fail, 0);
	assert_false(c.counters[SL_CTR_TENANT_LOGINS].enabled);
	/* The allocation of a key prefix: /24 of a /32, /48 of a /64; one account's failures
	 * there get twice one key's burst and one key's refill. */
	assert_int_equal(c.counter_v4_parent, 24);
	assert_int_equal(c.counter_v6_parent, 48);
	assert_true(c.counters[SL_CTR_LOGIN_PARENT].enabled);
	assert_true(c.counters[SL_CTR_LOGIN_PARENT].burst == 10.0);
	assert_true(c.counters[SL_CTR_LOGIN_PARENT].rate == 1.0 / 180);
	assert_string_equal(sl_counter_name(SL_CTR_LOGIN_PARENT), "login_parent");
	assert_true(c.stream.det[SL_DET_ACCOUNT_KEYS].enabled);
	assert_int_equal(c.stream.det[SL_DET_ACCOUNT_KEYS].action, SL_DET_STEP_UP);
	assert_true(c.stream.det[SL_DET_ACCOUNT_KEYS].threshold == 5);
	assert_string_equal(sl_detector_name(SL_DET_ACCOUNT_KEYS), "account_keys");

	assert_int_equal(load_text(GOOD_EDGE
		"classes = ( { name = \"unknown\"; rate = 3.0; burst = 7.0; } );\n"
		"redis: { address = \"127.0.0.1:6380\"; timeout_ms = 7; breaker_failures = 2;\n"
		"         breaker_open_ms = 500; key_prefix = \"idp-eu\"; };\n"
		"cluster: { node = \"edge-3\"; nodes = 4; lease_interval_ms = 250;\n"
		"           demand_window_ms = 2000; lease_floor = 0.02; };\n"
		"counters: { prefix_v4 = 24; prefix_v6 = 56;\n"
		"  login_failures = { rate = 0.01; burst = 10.0; max_keys = 5000; };\n"
		"  login_successes = { enabled = false; };\n"
		"  tenant_logins = { rate = 400.0; burst = 800.0; }; };\n",
		NULL, &c, err, path, sizeof(path)), 0);
	assert_string_equal(err, "");
	assert_string_equal(c.redis.address, "127.0.0.1:6380");
	assert_int_equal(c.redis.timeout_ms, 7);
	assert_int_equal(c.redis.breaker_failures, 2);
	assert_int_equal(c.redis.breaker_open_ms, 500);
	assert_string_equal(c.redis.key_prefix, "idp-eu");
	assert_string_equal(c.cluster.node, "edge-3");
	assert_int_equal(c.cluster.nodes, 4);
	assert_int_equal(c.cluster.lease_interval_ms, 250);
	assert_int_equal(c.cluster.demand_window_ms, 2000);
	assert_true(c.cluster.lease_floor == 0.02);
	assert_int_equal(c.counter_v4_prefix, 24);
	assert_int_equal(c.counter_v6_prefix, 56);
	/* Key prefixes that hold the default parents keep them. */
	assert_int_equal(c.counter_v4_parent, 24);
	assert_int_equal(c.counter_v6_parent, 48);
	assert_true(c.counters[SL_CTR_LOGIN_FAILURES].rate == 0.01);
	assert_int_equal(c.counters[SL_CTR_LOGIN_FAILURES].max_keys, 5000);
	assert_false(c.counters[SL_CTR_LOGIN_SUCCESSES].enabled);
	/* The capacity counter fails closed by default, to an even split of its budget. */
	assert_true(c.counters[SL_CTR_TENANT_LOGINS].enabled);
	assert_int_equal(c.counters[SL_CTR_TENANT_LOGINS].fail, 1);
	assert_true(c.counters[SL_CTR_TENANT_LOGINS].static_rate == 100.0);
	assert_true(c.counters[SL_CTR_TENANT_LOGINS].static_burst == 200.0);

	/* A static rate alone keeps the default burst (a burst of 0 would refuse every check
	 * while Redis is out), and a static burst alone keeps the default rate. */
	assert_int_equal(load_text(GOOD_EDGE
		"classes = ( { name = \"unknown\"; rate = 3.0; burst = 7.0; } );\n"
		"cluster: { nodes = 4; };\n"
		"counters: { tenant_logins = { rate = 400.0; burst = 800.0; static_rate = 50.0; };\n"
		"  tenant_tokens = { rate = 40.0; burst = 80.0; static_burst = 8.0; }; };\n",
		NULL, &c, err, path, sizeof(path)), 0);
	assert_true(c.counters[SL_CTR_TENANT_LOGINS].static_rate == 50.0);
	assert_true(c.counters[SL_CTR_TENANT_LOGINS].static_burst == 200.0);
	assert_true(c.counters[SL_CTR_TENANT_TOKENS].static_rate == 10.0);
	assert_true(c.counters[SL_CTR_TENANT_TOKENS].static_burst == 8.0);
}

static void bad_configs_are_rejected_with_file_and_line(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *b = &bad_cases[i];
		static struct sl_config c;
		char path[PATH_MAX], err[ERRLEN];
		int ret;

		current_case = b->what;
		ret = load_text(b->text, NULL, &c, err, path, sizeof(path));
		if (ret != -EINVAL)
			fail_msg("%s: expected -EINVAL, got %d; errors:\n%s", b->what, ret, err);
		assert_err_line(err, path, b->line, b->reason);
		if (b->line2)
			assert_err_line(err, path, b->line2, b->reason2);
		if (count_lines(err) != b->nerr)
			fail_msg("%s: expected %d problem lines, got:\n%s", b->what, b->nerr, err);
	}
	current_case = "";
}

static void missing_file_cannot_be_read(void **state)
{
	static struct sl_config c;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(sl_config_load("/nonexistent/sluice-unit.conf", NULL, &c, err, sizeof(err)),
			 -ENOENT);
	assert_string_equal(err, "/nonexistent/sluice-unit.conf: cannot read: "
				 "No such file or directory\n");
}

static void failed_load_leaves_config_untouched(void **state)
{
	static struct sl_config c, copy;
	char path[PATH_MAX], err[ERRLEN];

	(void)state;
	tree_file("examples/sluice.conf", path, sizeof(path));
	assert_int_equal(sl_config_load(path, NULL, &c, err, sizeof(err)), 0);
	memcpy(&copy, &c, sizeof(c));

	/* Parses, but fails validation after plenty of fields were already read. */
	assert_int_equal(load_text("edge: {\n"
				   "  interfaces = [\"eth9\"];\n"
				   "  ports = ( { port = 22; cost = 3; } );\n"
				   "  state_entries = 4096;\n"
				   "  pin_path = \"/sys/fs/bpf/x\";\n"
				   "};\n"
				   "classes = ( { name = \"other\"; rate = 1.0; burst = 5.0; } );\n"
				   "daemon: { control_socket = \"/tmp/x.sock\"; };\n",
				   NULL, &c, err, path, sizeof(path)),
			 -EINVAL);
	assert_err_line(err, path, 7, "a class named \"unknown\" is required");
	assert_memory_equal(&c, &copy, sizeof(c));

	/* Does not parse at all. */
	assert_int_equal(load_text("edge: { interfaces = [\"eth9\"]; ports = ( ;\n", NULL, &c, err,
				   path, sizeof(path)),
			 -EINVAL);
	assert_memory_equal(&c, &copy, sizeof(c));

	/* Does not exist. */
	assert_int_equal(sl_config_load("/nonexistent/x.conf", NULL, &c, err, sizeof(err)),
			 -ENOENT);
	assert_memory_equal(&c, &copy, sizeof(c));
}

static void every_problem_is_reported(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN];

	(void)state;
	assert_int_equal(load_text("edge: {\n"                                  /* 1 */
				   "  interfaces = [];\n"                        /* 2 */
				   "  ports = ( { port = 70000; } );\n"          /* 3 */
				   "  pin_path = \"rel\";\n"                     /* 4 */
				   "};\n"                                        /* 5 */
				   "classes = (\n"                               /* 6 */
				   "  { name = \"unknown\"; rate = 1.0; burst = 5.0;\n" /* 7 */
				   "    v4_prefix = 0; },\n"                     /* 8 */
				   "  { name = \"x\"; rate = 0.0; burst = 5.0; },\n" /* 9 */
				   "  { name = \"y\"; rate = 1.0; burst = 5.0; mode = \"m\"; }\n" /* 10 */
				   ");\n",
				   NULL, &c, err, path, sizeof(path)),
			 -EINVAL);
	assert_int_equal(count_lines(err), 6);
	assert_err_line(err, path, 2, "at least one interface");
	assert_err_line(err, path, 3, "70000 is out of range");
	assert_err_line(err, path, 4, "edge.pin_path");
	assert_err_line(err, path, 8, "v4_prefix: 0 is out of range");
	assert_err_line(err, path, 9, "class 'x'.rate: must be above 0");
	assert_err_line(err, path, 10, "class 'y'.mode: 'm'");
}

/*
 * Budgets in cost units: on a stateless HTTP port a first request costs its route, so every
 * class and tenant burst must hold the dearest route (a login), and a first request the
 * edge cannot read whole costs that much too unless the port says otherwise.
 */
static void edge_charges_are_route_costs(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN];
	static const char routes[] =
		"routes = ( { name = \"login\"; method = \"POST\"; path = \"/login\"; cpu = 950.0; },\n"
		"           { name = \"check\"; method = \"GET\"; path = \"/v\"; cpu = 1.0; } );\n";
	char text[2048];

	(void)state;
	snprintf(text, sizeof(text),
		 "edge: { interfaces = [\"eth0\"];\n"
		 "  ports = ( { port = 80; action = \"reply\"; },\n"
		 "            { port = 81; unreadable_cost = 40; },\n"
		 "            { port = 443; protocol = \"tls\"; cost = 30; },\n"
		 "            { port = 82; front = \"syn\"; cost = 2; } ); };\n"
		 "classes = ( { name = \"unknown\"; rate = 1.0; burst = 950.0; } );\n%s", routes);
	assert_int_equal(load_text(text, NULL, &c, err, path, sizeof(path)), 0);
	assert_int_equal(c.ports[0].front, SL_FRONT_STATELESS);
	assert_int_equal(c.ports[0].unreadable_cost, 950);
	assert_int_equal(c.ports[1].unreadable_cost, 40);
	assert_int_equal(c.ports[2].unreadable_cost, 30); /* TLS: its own cost */
	assert_int_equal(c.ports[3].front, SL_FRONT_SYN);
	assert_int_equal(sl_edge_max_cost(&c), 950);

	snprintf(text, sizeof(text),
		 "edge: { interfaces = [\"eth0\"]; ports = ( { port = 80; } ); };\n"
		 "classes = ( { name = \"unknown\"; rate = 1.0; burst = 500.0; } );\n%s", routes);
	assert_int_equal(load_text(text, NULL, &c, err, path, sizeof(path)), -EINVAL);
	assert_err_line(err, path, 2, "class 'unknown'.burst: 500 is below the most the edge "
			"charges one connection, 950 for route 'login' (POST /login) on port 80: "
			"no such request could ever pass; raise it to 950 or more");

	/* On the SYN front the edge sees no route: a connection costs the port's cost. */
	snprintf(text, sizeof(text),
		 "edge: { interfaces = [\"eth0\"]; ports = ( { port = 80; front = \"syn\"; } ); };\n"
		 "classes = ( { name = \"unknown\"; rate = 1.0; burst = 500.0; } );\n%s", routes);
	assert_int_equal(load_text(text, NULL, &c, err, path, sizeof(path)), 0);
	assert_int_equal(sl_edge_max_cost(&c), 1);
}

/*
 * A burst below the dearest charge names what charges it (a route and its port, a TLS port's
 * or a SYN front's cost, an unreadable_cost), the class or tenant, both numbers, and the line
 * of the burst itself: class burst, parent_burst, tenant burst and static_burst.
 */
static void short_bursts_name_the_dearest_charge(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN];

	(void)state;
	/* The route, on the first port that charges it; the class's parent_burst on its line. */
	assert_int_equal(load_text("edge: { interfaces = [\"eth0\"];\n"                     /* 1 */
				   "  ports = ( { port = 80; }, { port = 8080; } ); };\n"    /* 2 */
				   "routes = ( { name = \"login\"; method = \"POST\";\n"     /* 3 */
				   "             path = \"/login\"; cpu = 950.0; } );\n"     /* 4 */
				   "classes = ( { name = \"unknown\"; rate = 100.0;\n"        /* 5 */
				   "              burst = 300.0;\n"                          /* 6 */
				   "              parent_burst = 949.5; } );\n",             /* 7 */
				   NULL, &c, err, path, sizeof(path)),
			 -EINVAL);
	assert_err_line(err, path, 6, "class 'unknown'.burst: 300 is below the most the edge "
			"charges one connection, 950 for route 'login' (POST /login) on port 80: no "
			"such request could ever pass; raise it to 950 or more, or lower that cost "
			"(see sluice.conf(5) on cost units)");
	assert_err_line(err, path, 7, "class 'unknown'.parent_burst: 949.5 is below the most the "
			"edge charges one connection, 950 for route 'login' (POST /login) on port "
			"80");
	assert_int_equal(count_lines(err), 2);

	/* A TLS port's cost, dearer than every route. */
	assert_int_equal(load_text("edge: { interfaces = [\"eth0\"];\n"
				   "  ports = ( { port = 80; },\n"
				   "            { port = 443; protocol = \"tls\"; cost = 950; } ); };\n"
				   "routes = ( { name = \"check\"; method = \"GET\"; path = \"/v\";\n"
				   "             cpu = 1.0; } );\n"
				   "classes = ( { name = \"unknown\"; rate = 100.0;\n"
				   "              burst = 100.0; } );\n",
				   NULL, &c, err, path, sizeof(path)),
			 -EINVAL);
	assert_err_line(err, path, 7, "class 'unknown'.burst: 100 is below the most the edge "
			"charges one connection, 950 for a TLS connection to port 443 (its cost)");
	assert_int_equal(count_lines(err), 1);

	/* A tenant's burst, below a port's unreadable_cost. */
	assert_int_equal(load_text("edge: { interfaces = [\"eth0\"];\n"
				   "  ports = ( { port = 81; unreadable_cost = 40; } ); };\n"
				   "classes = ( { name = \"unknown\"; rate = 100.0; burst = 40.0; } );\n"
				   "tenants = ( { name = \"a\"; listen = [\"10.0.0.2:81\"];\n"
				   "              rate = 100.0;\n"
				   "              burst = 30.0; } );\n",
				   NULL, &c, err, path, sizeof(path)),
			 -EINVAL);
	assert_err_line(err, path, 6, "tenant 'a'.burst: 30 is below the most the edge charges "
			"one connection, 40 for a first request to port 81 the edge cannot read "
			"whole (its unreadable_cost): no such request could ever pass; raise it to "
			"40 or more");
	assert_int_equal(count_lines(err), 1);

	/* A tenant's static_burst, below a SYN front's cost. */
	assert_int_equal(load_text("edge: { interfaces = [\"eth0\"];\n"
				   "  ports = ( { port = 22; front = \"syn\"; cost = 7; } ); };\n"
				   "classes = ( { name = \"unknown\"; rate = 100.0; burst = 7.0; } );\n"
				   "tenants = ( { name = \"a\"; listen = [\"10.0.0.2:22\"];\n"
				   "              rate = 100.0; burst = 70.0;\n"
				   "              static_burst = 5.0; } );\n",
				   NULL, &c, err, path, sizeof(path)),
			 -EINVAL);
	assert_err_line(err, path, 6, "tenant 'a'.static_burst: 5 is below the most the edge "
			"charges one connection, 7 for a connection to port 22 (its cost, on the "
			"syn front)");
	assert_int_equal(count_lines(err), 1);

	/* On the SYN front no route is read: the same routes cost a connection its 1. */
	assert_int_equal(load_text("edge: { interfaces = [\"eth0\"];\n"
				   "  ports = ( { port = 80; front = \"syn\"; } ); };\n"
				   "routes = ( { name = \"login\"; method = \"POST\";\n"
				   "             path = \"/login\"; cpu = 950.0; } );\n"
				   "classes = ( { name = \"unknown\"; rate = 100.0; burst = 5.0; } );\n",
				   NULL, &c, err, path, sizeof(path)),
			 0);
}

/*
 * A budget whose rate admits less than one of a port's dearest requests a minute loads, with
 * a warning per budget at its line naming each port it starves, the route or connection, and
 * the numbers: class rate and parent_rate, tenant rate and static_rate (set, or the default's
 * share of the rate).
 */
static void slow_rates_load_with_warnings(void **state)
{
	static struct sl_config c, copy;
	char path[PATH_MAX], err[ERRLEN];
	static const char text[] =
		"edge: { interfaces = [\"eth0\"];\n"                                         /* 1 */
		"  ports = ( { port = 80; }, { port = 8080; },\n"                            /* 2 */
		"            { port = 443; protocol = \"tls\"; cost = 950; },\n"             /* 3 */
		"            { port = 22; front = \"syn\"; cost = 2; } ); };\n"              /* 4 */
		"routes = ( { name = \"login\"; method = \"POST\"; path = \"/login\"; cpu = 950.0; },\n"
		"           { name = \"validate\"; method = \"GET\"; path = \"/v\"; cpu = 1.0; } );\n"
		"classes = (\n"                                                              /* 7 */
		"  { name = \"unknown\"; burst = 950.0;\n"                                   /* 8 */
		"    rate = 10.0;\n"                                                         /* 9 */
		"    parent_rate = 15.0; parent_burst = 9500.0; },\n"                        /* 10 */
		"  { name = \"business\"; rate = 4000.0; burst = 285000.0; }\n"              /* 11 */
		");\n"                                                                       /* 12 */
		"tenants = (\n"                                                              /* 13 */
		"  { name = \"a\"; listen = [\"10.0.0.2:80\"]; burst = 1900.0;\n"            /* 14 */
		"    rate = 12.0;\n"                                                         /* 15 */
		"    static_rate = 0.5; },\n"                                                /* 16 */
		"  { name = \"b\"; listen = [\"10.0.0.3:80\"]; rate = 40.0; burst = 1900.0; }\n"
		");\n";

	(void)state;
	assert_int_equal(load_text(text, NULL, &c, err, path, sizeof(path)), 0);
	assert_string_equal(err, "");
	assert_err_line(c.warnings, path, 9, "warning: class 'unknown'.rate: 10 cost units/s "
			"admits 0.63 'login' (950) per minute on ports 80, 8080; 0.63 connections "
			"(950) per minute on port 443 (less than one a minute)");
	assert_err_line(c.warnings, path, 10, "warning: class 'unknown'.parent_rate: 15 cost "
			"units/s admits 0.95 'login' (950) per minute on ports 80, 8080; 0.95 "
			"connections (950) per minute on port 443");
	assert_err_line(c.warnings, path, 15, "warning: tenant 'a'.rate: 12 cost units/s admits "
			"0.76 'login' (950) per minute on ports 80, 8080; 0.76 connections (950) per "
			"minute on port 443");
	assert_err_line(c.warnings, path, 16, "warning: tenant 'a'.static_rate: 0.5 cost units/s "
			"admits 0.032 'login' (950) per minute on ports 80, 8080; 0.032 connections "
			"(950) per minute on port 443");
	/* 40/s feeds a login every 24 s; its default static share, 10/s, does not. */
	assert_err_line(c.warnings, path, 17, "warning: tenant 'b'.static_rate: 10 cost units/s "
			"(the default, rate / (4 x cluster.nodes)) admits 0.63 'login' (950) per "
			"minute on ports 80, 8080");
	assert_int_equal(c.n_warnings, 5);
	assert_int_equal(count_lines(c.warnings), 5);
	/* The SYN port (cost 2) is fed by all of them, and the business class is fine. */
	assert_null(strstr(c.warnings, "port 22"));
	assert_null(strstr(c.warnings, "business"));

	/* A load that fails hands back neither its errors' config nor its warnings. */
	sl_config_defaults(&c);
	memcpy(&copy, &c, sizeof(c));
	{
		char bad[sizeof(text) + 64];

		snprintf(bad, sizeof(bad), "%sdaemon: { log_level = \"loud\"; };\n", text);
		assert_int_equal(load_text(bad, NULL, &c, err, path, sizeof(path)), -EINVAL);
	}
	assert_memory_equal(&c, &copy, sizeof(c));
	assert_null(strstr(err, "warning"));
}

/* The shipped sample config, and a budget exactly at one dearest request a minute: quiet. */
static void sample_and_edge_rates_warn_of_nothing(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN];

	(void)state;
	tree_file("examples/sluice.conf", path, sizeof(path));
	assert_int_equal(sl_config_load(path, "/srv", &c, err, sizeof(err)), 0);
	assert_string_equal(c.warnings, "");
	assert_int_equal(c.n_warnings, 0);

	/* 950 / 60 units/s is one login a minute: the bound is "less than one". */
	assert_int_equal(load_text("edge: { interfaces = [\"eth0\"]; ports = ( { port = 80; } ); };\n"
				   "routes = ( { name = \"login\"; method = \"POST\";\n"
				   "             path = \"/login\"; cpu = 950.0; } );\n"
				   "classes = ( { name = \"unknown\"; rate = 15.8333333334;\n"
				   "              burst = 950.0; } );\n",
				   NULL, &c, err, path, sizeof(path)),
			 0);
	assert_string_equal(c.warnings, "");
}

static void every_reply_and_tenant_problem_is_reported(void **state)
{
	static struct sl_config c, copy;
	char path[PATH_MAX], err[ERRLEN];

	(void)state;
	sl_config_defaults(&c);
	memcpy(&copy, &c, sizeof(c));
	assert_int_equal(load_text("edge: {\n"                                           /* 1 */
				   "  interfaces = [\"eth0\"];\n"                         /* 2 */
				   "  ports = ( { port = 80; action = \"reply\"; } );\n"  /* 3 */
				   "  retry_after = [0,\n"                                /* 4 */
				   "                 5, 100000];\n"                       /* 5 */
				   "  streak_decay = 0;\n"                                /* 6 */
				   "  event_sample = 1000001;\n"                          /* 7 */
				   "  cookie_rotate = 59;\n"                              /* 8 */
				   "  mss_v4 = 9001;\n"                                   /* 9 */
				   "  mss_v6 = 1219;\n"                                   /* 10 */
				   "};\n"                                                 /* 11 */
				   GOOD_CLASSES                                           /* 12 */
				   "tenants = (\n"                                        /* 13 */
				   "  { name = \"a\"; listen = [\"10.0.0.2:8080\"];\n"    /* 14 */
				   "    rate = 0.0; burst = 5.0; lease_ttl = 0; },\n"     /* 15 */
				   "  { name = \"a\"; listen = [\"10.0.0.2:80\"];\n"      /* 16 */
				   "    rate = 1.0; burst = 0.5; }\n"                     /* 17 */
				   ");\n",
				   NULL, &c, err, path, sizeof(path)),
			 -EINVAL);
	assert_err_line(err, path, 4, "edge.retry_after[0]: 0 is out of range 1..86400");
	assert_err_line(err, path, 5, "edge.retry_after[2]: 100000 is out of range 1..86400");
	assert_err_line(err, path, 6, "edge.streak_decay: 0 is out of range");
	assert_err_line(err, path, 7, "edge.event_sample: 1000001 is out of range");
	assert_err_line(err, path, 8, "edge.cookie_rotate: 59 is out of range");
	assert_err_line(err, path, 9, "edge.mss_v4: 9001 is out of range");
	assert_err_line(err, path, 10, "edge.mss_v6: 1219 is out of range");
	assert_err_line(err, path, 14, "tenant 'a'.listen[0]: port 8080 is not in edge.ports");
	assert_err_line(err, path, 15, "tenant 'a'.rate: must be above 0");
	assert_err_line(err, path, 15, "tenant 'a'.lease_ttl: 0 is out of range 1..3600");
	assert_err_line(err, path, 16, "tenants[1]: tenant 'a' is defined twice");
	assert_err_line(err, path, 17, "tenant 'a'.burst: 0.5 is below the most the edge charges one "
			"connection, 1 for a request to port 80 that no route matches");
	assert_int_equal(count_lines(err), 12);
	assert_memory_equal(&c, &copy, sizeof(c)); /* all or nothing */
}

static void ghost_table_is_the_next_power_of_two(void **state)
{
	(void)state;
	assert_int_equal(sl_state_slots(16), 1024);
	assert_int_equal(sl_state_slots(1024), 1024);
	assert_int_equal(sl_state_slots(1025), 2048);
	assert_int_equal(sl_state_slots(1048576), 1048576);
	assert_int_equal(sl_state_slots(1048577), 2097152);
	assert_int_equal(sl_state_slots(SL_MAX_STATE_ENTRIES), SL_MAX_STATE_ENTRIES);
}

/* A source prefix and its parent hold a sixteenth and a quarter of gateway.max_connections
 * unless told otherwise; a connection carries 100 requests. */
#define GW "gateway: { listen = \"127.0.0.1:8080\"; capacity = { cpu = 100.0; };\n"
static void gateway_connection_shares(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN];

	(void)state;
	assert_int_equal(load_text(GW "};\n", NULL, &c, err, path, sizeof(path)), 0);
	assert_int_equal(c.gw.max_connections, 4096);
	assert_int_equal(c.gw.max_conns_prefix, 256);
	assert_int_equal(c.gw.max_conns_parent, 1024);
	assert_int_equal(c.gw.max_requests_conn, 100);
	assert_int_equal(load_text(GW "  max_connections = 64; };\n", NULL, &c, err, path,
				   sizeof(path)), 0);
	assert_int_equal(c.gw.max_conns_prefix, 4);
	assert_int_equal(c.gw.max_conns_parent, 16);
	assert_int_equal(load_text(GW "  max_connections = 64; max_connections_per_prefix = 8;\n"
				   "  max_connections_per_parent = 20; max_requests_per_connection = 3; };\n",
				   NULL, &c, err, path, sizeof(path)), 0);
	assert_int_equal(c.gw.max_conns_prefix, 8);
	assert_int_equal(c.gw.max_conns_parent, 20);
	assert_int_equal(c.gw.max_requests_conn, 3);
	assert_int_equal(load_text(GW "  max_connections_per_prefix = 0;\n"
				   "  max_requests_per_connection = 0; };\n",
				   NULL, &c, err, path, sizeof(path)), -EINVAL);
	assert_err_line(err, path, 2, "max_connections_per_prefix");
	assert_err_line(err, path, 3, "max_requests_per_connection");
}
#undef GW

static void peek_reads_paths_from_an_invalid_file(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN];
	char pin[PATH_MAX] = "unset", sock[PATH_MAX] = "unset", ifs[64] = "unset";
	int ret, pret;

	(void)state;
	write_tmp("edge: {\n"
		  "  interfaces = [\"eth0\", \"eth1\"];\n"
		  "  pin_path = \"/sys/fs/bpf/peeked\";\n"
		  "  bogus = 1;\n"
		  "};\n"
		  "daemon: { control_socket = \"/run/peek.sock\"; };\n",
		  path, sizeof(path));
	ret = sl_config_load(path, NULL, &c, err, sizeof(err));
	pret = sl_config_peek(path, pin, sizeof(pin), sock, sizeof(sock), ifs, sizeof(ifs));
	unlink(path);
	assert_int_equal(ret, -EINVAL);
	assert_err_line(err, path, 4, "unknown key 'bogus' in edge");
	assert_int_equal(pret, 0);
	assert_string_equal(pin, "/sys/fs/bpf/peeked");
	assert_string_equal(sock, "/run/peek.sock");
	assert_string_equal(ifs, "eth0,eth1");

	/* Absent keys leave the outputs alone. */
	snprintf(pin, sizeof(pin), "keep-pin");
	snprintf(sock, sizeof(sock), "keep-sock");
	snprintf(ifs, sizeof(ifs), "keep-ifs");
	write_tmp("classes = ();\n", path, sizeof(path));
	pret = sl_config_peek(path, pin, sizeof(pin), sock, sizeof(sock), ifs, sizeof(ifs));
	unlink(path);
	assert_int_equal(pret, 0);
	assert_string_equal(pin, "keep-pin");
	assert_string_equal(sock, "keep-sock");
	assert_string_equal(ifs, "keep-ifs");

	/* A file that does not parse. */
	write_tmp("edge: { pin_path = ; };\n", path, sizeof(path));
	pret = sl_config_peek(path, pin, sizeof(pin), sock, sizeof(sock), ifs, sizeof(ifs));
	unlink(path);
	assert_int_equal(pret, -EINVAL);
	assert_string_equal(pin, "keep-pin");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sample_config_loads),
		cmocka_unit_test(minimal_config_gets_defaults),
		cmocka_unit_test(non_default_values_are_read),
		cmocka_unit_test(relative_asn_table_uses_base_dir),
		cmocka_unit_test(reply_action_and_knobs_are_read),
		cmocka_unit_test(reply_knob_bounds_are_inclusive),
		cmocka_unit_test(tenants_are_read),
		cmocka_unit_test(shared_state_is_read),
		cmocka_unit_test(bad_configs_are_rejected_with_file_and_line),
		cmocka_unit_test(missing_file_cannot_be_read),
		cmocka_unit_test(failed_load_leaves_config_untouched),
		cmocka_unit_test(every_problem_is_reported),
		cmocka_unit_test(every_reply_and_tenant_problem_is_reported),
		cmocka_unit_test(ghost_table_is_the_next_power_of_two),
		cmocka_unit_test(edge_charges_are_route_costs),
		cmocka_unit_test(short_bursts_name_the_dearest_charge),
		cmocka_unit_test(slow_rates_load_with_warnings),
		cmocka_unit_test(sample_and_edge_rates_warn_of_nothing),
		cmocka_unit_test(peek_reads_paths_from_an_invalid_file),
		cmocka_unit_test(gateway_connection_shares),
		cmocka_unit_test(host_checks_name_the_line),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
