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

static void sample_config_loads(void **state)
{
	static struct sl_config c;
	char path[PATH_MAX], err[ERRLEN];
	const struct sl_class_cfg *h;

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
	for (int i = 0; i < 2; i++) {
		assert_int_equal(c.ports[i].cost, 1);
		assert_int_equal(c.ports[i].front, SL_FRONT_SYN);
	}
	assert_int_equal(c.ports[0].action, SL_ACT_REPLY); /* plaintext HTTP: told why */
	assert_int_equal(c.ports[1].action, SL_ACT_DROP);  /* TLS: cannot be */
	assert_int_equal(c.state_entries, 1048576);
	assert_string_equal(c.asn_table, "/etc/sluice/asn.csv"); /* absolute: base ignored */
	assert_true(c.new_key_credit == 0.5);
	assert_int_equal(c.malformed_action, SL_ACT_PASS);
	assert_int_equal(c.fragment_action, SL_ACT_PASS);
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
	assert_true(h->rate == 2.0);
	assert_true(h->burst == 10.0);
	assert_true(h->parent_rate == 20.0);
	assert_true(h->parent_burst == 100.0);
	assert_int_equal(h->mode, SL_MODE_ENFORCE);
	/* Per-class values do not bleed into each other. */
	assert_int_equal(c.classes[2].v6_parent, 40);
	assert_int_equal(c.classes[3].v6_prefix, 56);
	assert_true(c.classes[3].burst == 300.0);
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
	assert_int_equal(c.ports[0].front, SL_FRONT_SYN);
	assert_int_equal(c.xdp_mode, SL_XDP_NATIVE);
	assert_int_equal(c.state_entries, 1u << 20);
	assert_string_equal(c.asn_table, "");
	assert_true(c.new_key_credit == 0.5);
	assert_int_equal(c.malformed_action, SL_ACT_PASS);
	assert_int_equal(c.fragment_action, SL_ACT_PASS);
	assert_string_equal(c.pin_path, SL_DEFAULT_PIN_PATH);
	assert_string_equal(c.ctl_socket, SL_DEFAULT_CTL_SOCKET);

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

	/* Without a base directory, the cwd. */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	snprintf(want, sizeof(want), "%s/tables/asn.csv", cwd);
	assert_int_equal(load_text(text, NULL, &c, err, path, sizeof(path)), 0);
	assert_string_equal(c.asn_table, want);
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
	  7, "class 'unknown'.burst: 2 is below the cost of one SYN (5)", 1, 0, NULL },
	{ "parent_burst below the port cost",
	  "edge: {\n"
	  "  interfaces = [\"eth0\"];\n"
	  "  ports = ( { port = 80; cost = 5; } );\n"
	  "};\n"
	  "classes = (\n"
	  "  { name = \"unknown\"; rate = 1.0; burst = 5.0; parent_burst = 4.0; }\n"
	  ");\n",
	  6, "class 'unknown'.parent_burst: 4 is below the cost of one SYN (5)", 1, 0, NULL },
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
	  6, "unknown key 'deamon' in the top level (known: edge, classes, tenants, routes, gateway, daemon)", 1, 0, NULL },
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
};

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

static void ghost_table_is_the_next_power_of_two(void **state)
{
	(void)state;
	assert_int_equal(sl_ghost_entries(16), 1024);
	assert_int_equal(sl_ghost_entries(1024), 1024);
	assert_int_equal(sl_ghost_entries(1025), 2048);
	assert_int_equal(sl_ghost_entries(1048576), 1048576);
	assert_int_equal(sl_ghost_entries(1048577), 2097152);
	assert_int_equal(sl_ghost_entries(SL_MAX_STATE_ENTRIES), SL_MAX_STATE_ENTRIES);
}

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
		cmocka_unit_test(bad_configs_are_rejected_with_file_and_line),
		cmocka_unit_test(missing_file_cannot_be_read),
		cmocka_unit_test(failed_load_leaves_config_untouched),
		cmocka_unit_test(every_problem_is_reported),
		cmocka_unit_test(ghost_table_is_the_next_power_of_two),
		cmocka_unit_test(peek_reads_paths_from_an_invalid_file),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
