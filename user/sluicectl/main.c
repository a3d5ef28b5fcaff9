// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * sluicectl: the operator's view of sluice. Read commands (status, stats, prefix show) read
 * the pinned maps directly, so they work whether or not sluiced is running; commands that
 * change the running config (reload, asn load, detach) go through the daemon's control
 * socket. Every command takes --json and then prints exactly one JSON document.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sodium.h>
#include <xdp/libxdp.h>

#include "addr.h"
#include "audit.h"
#include "asn_import.h"
#include "budget.h"
#include "config.h"
#include "config_show.h"
#include "evfmt.h"
#include "gw_body.h"
#include "gw_creds.h"
#include "gw_token.h"
#include "json.h"
#include "log.h"
#include "maps.h"
#include "leases.h"
#include "outcomes.h"
#include "reasons.h"
#include "sluice/gcra.h"
#include "sluice/hash.h"
#include "top.h"

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.1.0"
#endif

struct ctl {
	char action[16];
	double since;  /* wouldblock: unix time; 0 all */
	double factor;
	double ttl;    /* verdict add: seconds */
	char reason[SL_VERDICT_REASON_LEN];
	uint32_t code;
	long count;
	double timeout;
	bool backlog;
	double interval; /* top: seconds between frames */
	bool once;       /* top: one frame */
	char config[PATH_MAX];
	bool config_given;
	char pin_path[PATH_MAX];
	char socket[PATH_MAX];
	char ifaces[256];
	bool json;
	int port;
	/* asn import */
	char map[PATH_MAX];
	char output[PATH_MAX];
	char dflt[64];
	int format; /* enum sl_imp_format */
	bool no_load;
	bool parent; /* clear prefix: the parent bucket too */
	char from[64];     /* clear account: where the account signs in from */
	char operator_name[41]; /* clear: who asked, when not the login itself */
	char file[PATH_MAX]; /* config show: resolve this file instead of asking sluiced */
};

/* ---- commands, their options and their usage -------------------------------------------- */

/* Options as bits: each command says which it takes, and any other is refused by name
 * rather than ignored (an ignored --ttl on the wrong command is a verdict that never was). */
enum {
	O_CONFIG = 1u << 0,
	O_PIN = 1u << 1,
	O_SOCKET = 1u << 2,
	O_JSON = 1u << 3,
	O_HELP = 1u << 4,
	O_VERSION = 1u << 5,
	O_PORT = 1u << 6,
	O_ACTION = 1u << 7,
	O_FACTOR = 1u << 8,
	O_TTL = 1u << 9,
	O_REASON = 1u << 10,
	O_CODE = 1u << 11,
	O_COUNT = 1u << 12,
	O_TIMEOUT = 1u << 13,
	O_BACKLOG = 1u << 14,
	O_INTERVAL = 1u << 15,
	O_ONCE = 1u << 16,
	O_SINCE = 1u << 17,
	O_MAP = 1u << 18,     /* asn import */
	O_FORMAT = 1u << 19,
	O_DEFAULT = 1u << 20,
	O_OUTPUT = 1u << 21,
	O_NOLOAD = 1u << 22,
	O_PARENT = 1u << 23,  /* clear prefix */
	O_FROM = 1u << 24,    /* clear account */
	O_OPERATOR = 1u << 25,
	O_FILE = 1u << 26,    /* config show */
};
#define O_GLOBAL (O_CONFIG | O_PIN | O_SOCKET | O_JSON | O_HELP | O_VERSION)

static const struct option long_opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "pin-path", required_argument, NULL, 'P' },
	{ "socket", required_argument, NULL, 'S' },
	{ "port", required_argument, NULL, 'p' },
	{ "json", no_argument, NULL, 'j' },
	{ "action", required_argument, NULL, 'A' },
	{ "factor", required_argument, NULL, 'F' },
	{ "ttl", required_argument, NULL, 'T' },
	{ "reason", required_argument, NULL, 'R' },
	{ "code", required_argument, NULL, 'C' },
	{ "count", required_argument, NULL, 'n' },
	{ "interval", required_argument, NULL, 'I' },
	{ "once", no_argument, NULL, 'O' },
	{ "timeout", required_argument, NULL, 't' },
	{ "backlog", no_argument, NULL, 'B' },
	{ "since", required_argument, NULL, 's' },
	{ "map", required_argument, NULL, 'M' },
	{ "format", required_argument, NULL, 'f' },
	{ "default", required_argument, NULL, 'D' },
	{ "output", required_argument, NULL, 'o' },
	{ "no-load", no_argument, NULL, 'N' },
	{ "parent", no_argument, NULL, 'Q' },
	{ "from", required_argument, NULL, 'W' },
	{ "operator", required_argument, NULL, 'U' },
	{ "file", required_argument, NULL, 'L' },
	{ "version", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 }
};

/* Each option: its bit, its getopt value, the name messages give it, its line of the usage. */
static const struct opt_info {
	unsigned int bit;
	int val;
	const char *name;
	const char *help;
} opt_info[] = {
	{ O_CONFIG, 'c', "--config",
	  "  -c, --config FILE      config file (default " SL_DEFAULT_CONFIG ")\n" },
	{ O_PIN, 'P', "--pin-path",
	  "      --pin-path DIR     pinned maps (default: from the config, else "
	  SL_DEFAULT_PIN_PATH ")\n" },
	{ O_SOCKET, 'S', "--socket",
	  "      --socket PATH      control socket (default: from the pins or the config)\n" },
	{ O_JSON, 'j', "--json",
	  "  -j, --json             print one JSON document (events: one per line)\n" },
	{ O_PORT, 'p', "--port",
	  "  -p, --port PORT        prefix show: the port (default: the first protected)\n" },
	{ O_ACTION, 'A', "--action",
	  "      --action A         verdict add: block, tighten or reply (required)\n" },
	{ O_FACTOR, 'F', "--factor",
	  "      --factor F         verdict add: tighten's factor, between 0 and 1\n" },
	{ O_TTL, 'T', "--ttl",
	  "      --ttl T            verdict add: how long it lasts, 1s..30d (required)\n" },
	{ O_REASON, 'R', "--reason",
	  "      --reason TEXT      verdict add: why, for verdict list (required);\n"
	  "                         clear prefix, clear account: why, for sluiced's log\n"
	  "                         (required, one line)\n" },
	{ O_FROM, 'W', "--from",
	  "      --from ADDR        clear account: the address the account signs in from\n"
	  "                         (required: its counters are keyed by where)\n" },
	{ O_OPERATOR, 'U', "--operator",
	  "      --operator NAME    clear: who asks, for the log (default: SUDO_USER, the\n"
	  "                         uid is always added)\n" },
	{ O_FILE, 'L', "--file",
	  "      --file FILE        config show: what FILE resolves to, with no daemon asked\n" },
	{ O_PARENT, 'Q', "--parent",
	  "      --parent           clear prefix: the parent bucket too\n" },
	{ O_CODE, 'C', "--code",
	  "      --code N           verdict add: a number of your own (ticket, rule)\n" },
	{ O_COUNT, 'n', "--count",
	  "  -n, --count N          events: stop after N lines; top: after N frames\n" },
	{ O_TIMEOUT, 't', "--timeout",
	  "      --timeout T        events: stop after T\n" },
	{ O_BACKLOG, 'B', "--backlog",
	  "      --backlog          events: also print those queued before it started\n" },
	{ O_INTERVAL, 'I', "--interval",
	  "      --interval T       top: time between frames, 0.1s..1h (default 1s)\n" },
	{ O_ONCE, 'O', "--once",
	  "      --once             top: one plain frame (after one interval), then exit\n" },
	{ O_SINCE, 's', "--since",
	  "      --since T          wouldblock: from T ago, or from a unix time\n" },
	{ O_MAP, 'M', "--map",
	  "      --map FILE         asn import: the class map (asn,class lines and rules)\n" },
	{ O_FORMAT, 'f', "--format",
	  "      --format F         asn import: mmdb, tsv (iptoasn) or csv (default: from\n"
	  "                         the file)\n" },
	{ O_DEFAULT, 'D', "--default",
	  "      --default CLASS    asn import: the class of what the map does not name\n"
	  "                         (default: the map's default line, else unknown)\n" },
	{ O_OUTPUT, 'o', "--output",
	  "  -o, --output FILE      asn import: where the table is written (required)\n" },
	{ O_NOLOAD, 'N', "--no-load",
	  "      --no-load          asn import: write and check the table, do not load it\n" },
	{ O_VERSION, 'V', "--version",
	  "  -V, --version          print the version\n" },
	{ O_HELP, 'h', "--help",
	  "  -h, --help             this text; after a command, that command's usage\n" },
};

#define DURATION_HELP "T (a duration): seconds, or a number and s, m, h or d: 90, 90s, 10m, 1.5h, 1d\n"

static const struct opt_info *opt_by_val(int val)
{
	size_t i;

	for (i = 0; i < sizeof(opt_info) / sizeof(opt_info[0]); i++)
		if (opt_info[i].val == val)
			return &opt_info[i];
	return NULL;
}

enum cmd_id {
	CMD_STATUS,
	CMD_STATS,
	CMD_PREFIX_SHOW,
	CMD_ASN_LOAD,
	CMD_ASN_IMPORT,
	CMD_RELOAD,
	CMD_DETACH,
	CMD_VERDICT_ADD,
	CMD_VERDICT_LIST,
	CMD_VERDICT_DEL,
	CMD_EVENTS,
	CMD_LEASES,
	CMD_WOULDBLOCK,
	CMD_DISTRIBUTION,
	CMD_TENANTS,
	CMD_TOP,
	CMD_LIMITS,
	CMD_USER_ADD,
	CMD_CLEAR_PREFIX,
	CMD_CLEAR_ACCOUNT,
	CMD_CONFIG_SHOW,
};

/* A command: one word or two ("verdict add"); those sharing a first word are a group, and
 * `sluicectl help WORD` prints the group. */
static const struct command {
	enum cmd_id id;
	const char *name;
	const char *args;  /* its positional arguments, space separated */
	unsigned int opts; /* the options it takes besides O_GLOBAL */
	const char *help;  /* its lines of the usage */
} commands[] = {
	{ CMD_STATUS, "status", "", 0,
	  "  status                 daemon, interfaces and attach modes, ports, state use;\n"
	  "                         exits 3 when sluiced is not running\n" },
	{ CMD_STATS, "stats", "", 0,
	  "  stats                  decisions by reason and by class\n" },
	{ CMD_PREFIX_SHOW, "prefix show", "ADDR", O_PORT,
	  "  prefix show ADDR       class, ASN, keys and bucket state for ADDR, what a\n"
	  "                         connection from it would get now (--port picks the port),\n"
	  "                         and what the key's and parent's rates admit of each route\n" },
	{ CMD_ASN_LOAD, "asn load", "FILE", 0,
	  "  asn load FILE          validate FILE (prefix,asn,class) and swap it in whole\n" },
	{ CMD_ASN_IMPORT, "asn import", "SOURCE...", O_MAP | O_FORMAT | O_DEFAULT | O_OUTPUT | O_NOLOAD,
	  "  asn import SOURCE... --map FILE -o FILE [--format F] [--default CLASS]\n"
	  "             [--no-load]\n"
	  "                         convert .mmdb, iptoasn TSV or ASN CSV files (up to 8, one\n"
	  "                         table) into a class table through the map, write it to\n"
	  "                         --output and have sluiced load it as asn load does\n" },
	{ CMD_RELOAD, "reload", "", 0,
	  "  reload                 re-read the config; a bad file is reported (every\n"
	  "                         problem), not applied, and the exit status is 1\n" },
	{ CMD_DETACH, "detach", "", 0,
	  "  detach                 take sluice off every interface and remove its pins\n" },
	{ CMD_VERDICT_ADD, "verdict add", "PREFIX", O_ACTION | O_FACTOR | O_TTL | O_REASON | O_CODE,
	  "  verdict add PREFIX --action block|tighten|reply [--factor F] --ttl T\n"
	  "              --reason TEXT [--code N]\n"
	  "                         block: drop its SYNs; reply: shed them with the port's\n"
	  "                         action (429 on reply ports); tighten: rate and burst x F\n" },
	{ CMD_VERDICT_LIST, "verdict list", "", 0,
	  "  verdict list           live verdicts, with time left\n" },
	{ CMD_VERDICT_DEL, "verdict del", "PREFIX", 0,
	  "  verdict del PREFIX     remove one\n" },
	{ CMD_EVENTS, "events", "", O_COUNT | O_TIMEOUT | O_BACKLOG,
	  "  events [--count N] [--timeout T] [--backlog]\n"
	  "                         stream sampled shed events (one line each; --json lines);\n"
	  "                         --backlog also prints those queued before it started;\n"
	  "                         --count bounds the lines printed, backlog included\n" },
	{ CMD_LEASES, "leases", "", 0,
	  "  leases                 each tenant's edge budget, this node's demand and share,\n"
	  "                         its lease and when it expires (then: the static rate)\n" },
	{ CMD_WOULDBLOCK, "wouldblock", "", O_SINCE,
	  "  wouldblock [--since T] what the detectors and counters in monitor mode would have\n"
	  "                         blocked, and what those enforcing did (T: a duration ago,\n"
	  "                         or a unix time), with a summary by rule, tenant and source\n"
	  "                         class\n" },
	{ CMD_DISTRIBUTION, "distribution", "", 0,
	  "  distribution           login attempts per account today at p50/p90/p99/p99.9 per\n"
	  "                         tenant, and the non-human tail (stream.tail_per_day)\n" },
	{ CMD_TENANTS, "tenants", "", 0,
	  "  tenants                the gateway's tenants: reservation, consumption, overage,\n"
	  "                         sheds by class and reason, queue wait and service time\n"
	  "                         p50/p99, hashes; the queue and the cost classes\n" },
	{ CMD_TOP, "top", "", O_INTERVAL | O_COUNT | O_ONCE,
	  "  top [--interval T] [-n COUNT] [--once] [--json]\n"
	  "                         live view, every T (default 1s): XDP decisions/s\n"
	  "                         by reason and class, the gateway's goodput against\n"
	  "                         throughput, queue wait and service p99, tenants by shed\n"
	  "                         rate, and the top shed prefixes with class and reason.\n"
	  "                         On a terminal: q or Ctrl-C quits, space refreshes now.\n"
	  "                         Otherwise (or with --once): plain-text frames, no escape\n"
	  "                         codes; --json: one snapshot (-n: COUNT, one per line);\n"
	  "                         -n: stop after COUNT frames; the first frame comes after\n"
	  "                         one interval (rates need two samples)\n" },
	{ CMD_LIMITS, "limits", "", 0,
	  "  limits                 the limits document: per tenant the floor (capacity /\n"
	  "                         active tenants: the promise), reservation and ceiling\n"
	  "                         (the courtesy); per principal (user, API client) limits;\n"
	  "                         per edge class its key's and parent's budget, in cost\n"
	  "                         units and as requests/s of each route on each port\n" },
	{ CMD_USER_ADD, "user add", "TENANT ACCOUNT", 0,
	  "  user add TENANT ACCOUNT\n"
	  "                         hash the password read from stdin (one line) with the\n"
	  "                         configured Argon2id settings and append it to\n"
	  "                         gateway.credentials; a running sluiced reloads\n" },
	{ CMD_CLEAR_PREFIX, "clear prefix", "ADDR", O_REASON | O_PARENT | O_OPERATOR,
	  "  clear prefix ADDR --reason TEXT [--parent] [--operator NAME]\n"
	  "                         give ADDR's key (--parent: and its parent) its full burst\n"
	  "                         again; sluiced does it and logs the reason, keys,\n"
	  "                         previous state and operator (warn level)\n" },
	{ CMD_CLEAR_ACCOUNT, "clear account", "TENANT ACCOUNT", O_REASON | O_FROM | O_OPERATOR,
	  "  clear account TENANT ACCOUNT --from ADDR --reason TEXT [--operator NAME]\n"
	  "                         let an account that spent its sign-in failures from ADDR\n"
	  "                         sign in again at once: its login_fail and login_ok (ADDR's\n"
	  "                         key prefix) and login_parent (ADDR's allocation) cleared\n"
	  "                         in the store, every node's with Redis; sluiced logs the\n"
	  "                         reason, operator and what each held (warn level)\n" },
	{ CMD_CONFIG_SHOW, "config show", "", O_FILE,
	  "  config show [--file FILE]\n"
	  "                         the config sluiced runs, every key with its value, the\n"
	  "                         defaults included, secrets redacted; --file: what FILE\n"
	  "                         would resolve to (no daemon asked)\n" },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/* Length of @name's first word. */
static size_t word_len(const char *name)
{
	return strcspn(name, " ");
}

static bool in_group(const struct command *cmd, const char *word)
{
	size_t l = word_len(cmd->name);

	return strlen(word) == l && !strncmp(cmd->name, word, l);
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: sluicectl [OPTIONS] COMMAND [ARGS]\n\nCommands:\n");
	for (i = 0; i < N_COMMANDS; i++)
		fputs(commands[i].help, f);
	fprintf(f, "  help [COMMAND]         this text, or one command's usage and its options\n"
		"\nOptions:\n");
	for (i = 0; i < sizeof(opt_info) / sizeof(opt_info[0]); i++)
		fputs(opt_info[i].help, f);
	fprintf(f, "\n" DURATION_HELP
		"Exit status: 0 done; 1 it could not (refused, no daemon, no pins); 2 a usage\n"
		"error; 3 (status) sluiced is not running.\n"
		"Read commands work from the pinned maps while sluiced is down.\n");
}

/* `sluicectl help WORD`: the usage of every command whose first word is @word, the options
 * they take and a pointer to the global ones. */
static void group_usage(const char *word, FILE *f)
{
	unsigned int opts = 0;
	bool subs = false;
	size_t i;

	for (i = 0; i < N_COMMANDS; i++)
		subs |= in_group(&commands[i], word) && commands[i].name[word_len(commands[i].name)];
	fprintf(f, "Usage: sluicectl [OPTIONS] %s%s\n\n", word, subs ? " SUBCOMMAND [ARGS]" : "");
	for (i = 0; i < N_COMMANDS; i++)
		if (in_group(&commands[i], word)) {
			fputs(commands[i].help, f);
			opts |= commands[i].opts;
		}
	if (opts) {
		fprintf(f, "\nOptions:\n");
		for (i = 0; i < sizeof(opt_info) / sizeof(opt_info[0]); i++)
			if (opt_info[i].bit & opts)
				fputs(opt_info[i].help, f);
	}
	fprintf(f, "\nAlso: -c/--config FILE, --pin-path DIR, --socket PATH, -j/--json "
		"(sluicectl --help).\n");
	if (opts & (O_TTL | O_TIMEOUT | O_INTERVAL | O_SINCE))
		fprintf(f, DURATION_HELP);
}

/* A usage error: what is wrong (after @what, a command's name, when there is one) and where
 * to read more. Returns the exit status, 2. */
__attribute__((format(printf, 2, 3)))
static int usage_error(const char *what, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sluicectl: ");
	if (what)
		fprintf(stderr, "%s: ", what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (what)
		fprintf(stderr, "\nRun 'sluicectl help %.*s' for its usage.\n", (int)word_len(what),
			what);
	else
		fprintf(stderr, "\nRun 'sluicectl help' for the commands.\n");
	return 2;
}

/* ---- parsing option values -------------------------------------------------------------- */

/* A duration: "90" (seconds), "90s", "10m", "1.5h", "1d". Returns 0 and the seconds in @secs,
 * or -EINVAL (negative, not a number, an unknown unit). */
static int parse_duration(const char *s, double *secs)
{
	char *end;
	double v, mul = 1;

	if (!*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return -EINVAL;
	if (*end) {
		if (end[1])
			return -EINVAL;
		switch (*end) {
		case 's':
			mul = 1;
			break;
		case 'm':
			mul = 60;
			break;
		case 'h':
			mul = 3600;
			break;
		case 'd':
			mul = 86400;
			break;
		default:
			return -EINVAL;
		}
	}
	*secs = v * mul;
	return 0;
}

/* A whole number in @min..@max, decimal, nothing after it. */
static int parse_whole(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end || errno || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

#define BAD_DURATION "is not a duration (seconds, or a number and s, m, h or d: 90, 10m, 1h, 1d)"

/* Store option @opt's value in @c; on a bad one describe it in @err and return -EINVAL. */
static int parse_opt(struct ctl *c, int opt, const char *arg, char *err, size_t n)
{
	const struct opt_info *oi = opt_by_val(opt);
	const char *name = oi ? oi->name : "?";
	long long v;
	double d;

	switch (opt) {
	case 'c':
		snprintf(c->config, sizeof(c->config), "%s", arg);
		c->config_given = true;
		break;
	case 'P':
		snprintf(c->pin_path, sizeof(c->pin_path), "%s", arg);
		break;
	case 'S':
		snprintf(c->socket, sizeof(c->socket), "%s", arg);
		break;
	case 'p':
		if (parse_whole(arg, 1, 65535, &v))
			goto bad_range;
		c->port = (int)v;
		break;
	case 'j':
		c->json = true;
		break;
	case 'A':
		if (strcmp(arg, "block") && strcmp(arg, "tighten") && strcmp(arg, "reply")) {
			snprintf(err, n, "%s: '%s' is not block, tighten or reply", name, arg);
			return -EINVAL;
		}
		snprintf(c->action, sizeof(c->action), "%s", arg);
		break;
	case 'F': {
		char *end;

		errno = 0;
		d = strtod(arg, &end);
		if (end == arg || *end || errno || !(d > 0.0 && d < 1.0)) {
			snprintf(err, n, "%s: '%s' is not a number between 0 and 1 (0.25: a quarter "
				 "of the rate and burst)", name, arg);
			return -EINVAL;
		}
		c->factor = d;
		break;
	}
	case 'T':
		if (parse_duration(arg, &d))
			goto bad_duration;
		if (d < 1 || d > 30 * 86400) {
			snprintf(err, n, "%s: '%s' is not between 1s and 30d (verdicts always expire)",
				 name, arg);
			return -EINVAL;
		}
		c->ttl = d;
		break;
	case 'R':
		if (strlen(arg) >= sizeof(c->reason)) {
			snprintf(err, n, "%s: longer than %zu characters", name,
				 sizeof(c->reason) - 1);
			return -EINVAL;
		}
		snprintf(c->reason, sizeof(c->reason), "%s", arg);
		break;
	case 'C':
		if (parse_whole(arg, 0, UINT32_MAX, &v))
			goto bad_range;
		c->code = (uint32_t)v;
		break;
	case 'n':
		if (parse_whole(arg, 1, LONG_MAX, &v))
			goto bad_range;
		c->count = (long)v;
		break;
	case 't':
		if (parse_duration(arg, &d))
			goto bad_duration;
		if (d <= 0) {
			snprintf(err, n, "%s: '%s': the timeout must be more than 0", name, arg);
			return -EINVAL;
		}
		c->timeout = d;
		break;
	case 'B':
		c->backlog = true;
		break;
	case 'I':
		if (parse_duration(arg, &d))
			goto bad_duration;
		if (!(d >= 0.1 && d <= 3600)) {
			snprintf(err, n, "%s: '%s' is not between 0.1s and 1h", name, arg);
			return -EINVAL;
		}
		c->interval = d;
		break;
	case 'O':
		c->once = true;
		break;
	case 'M':
		snprintf(c->map, sizeof(c->map), "%s", arg);
		break;
	case 'o':
		snprintf(c->output, sizeof(c->output), "%s", arg);
		break;
	case 'D':
		snprintf(c->dflt, sizeof(c->dflt), "%s", arg);
		break;
	case 'Q':
		c->parent = true;
		break;
	case 'W':
		if (strlen(arg) >= sizeof(c->from)) {
			snprintf(err, n, "%s: '%.40s...' is not an address", name, arg);
			return -EINVAL;
		}
		snprintf(c->from, sizeof(c->from), "%s", arg);
		break;
	case 'U': {
		size_t i;

		if (!*arg || strlen(arg) >= sizeof(c->operator_name)) {
			snprintf(err, n, "%s: 1 to %zu characters", name,
				 sizeof(c->operator_name) - 1);
			return -EINVAL;
		}
		for (i = 0; arg[i]; i++)
			if (!isgraph((unsigned char)arg[i]) || arg[i] == '(' || arg[i] == ')') {
				snprintf(err, n, "%s: '%s': letters, digits and punctuation only "
					 "(no spaces, no parentheses)", name, arg);
				return -EINVAL;
			}
		snprintf(c->operator_name, sizeof(c->operator_name), "%s", arg);
		break;
	}
	case 'L':
		snprintf(c->file, sizeof(c->file), "%s", arg);
		break;
	case 'N':
		c->no_load = true;
		break;
	case 'f': {
		enum sl_imp_format f;

		if (sl_imp_format_parse(arg, &f)) {
			snprintf(err, n, "%s: '%s' is not mmdb, tsv, csv or auto", name, arg);
			return -EINVAL;
		}
		c->format = (int)f;
		break;
	}
	case 's': {
		/* A duration ago, or (a plain number past 2001) an absolute unix time. */
		char *end;

		if (parse_duration(arg, &d)) {
			snprintf(err, n, "%s: '%s' is neither a duration (90, 10m, 1h, 1d: that long "
				 "ago) nor a unix time", name, arg);
			return -EINVAL;
		}
		(void)strtod(arg, &end);
		c->since = d > 1e9 && !*end ? d : (double)time(NULL) - d;
		break;
	}
	}
	return 0;

bad_duration:
	snprintf(err, n, "%s: '%s' " BAD_DURATION, name, arg);
	return -EINVAL;
bad_range:
	snprintf(err, n, "%s: '%s' is not a whole number %s", name, arg,
		 opt == 'p' ? "in 1..65535" : opt == 'C' ? "in 0..4294967295" : "of 1 or more");
	return -EINVAL;
}

/* `status`'s exit status when sluiced is not running (LSB's "program is not running"): the
 * report is printed all the same, and the datapath may still enforce from its pins. */
#define SL_EXIT_NOT_RUNNING 3

/* ---- control socket client -------------------------------------------------------------- */

/* Send @cmd; store the answer in @buf. Returns 1 for "ok", 0 for "error", < 0 when no daemon
 * answered. */
static int ctl_call(const struct ctl *c, const char *cmd, char *buf, size_t n)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 30 };
	size_t used = 0;
	ssize_t r;
	int fd;

	buf[0] = '\0';
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->socket);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;

		close(fd);
		return e;
	}
	if (dprintf(fd, "%s\n", cmd) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	while (used + 1 < n && (r = read(fd, buf + used, n - used - 1)) > 0)
		used += (size_t)r;
	buf[used] = '\0';
	close(fd);
	if (!strncmp(buf, "ok", 2))
		return 1;
	if (!strncmp(buf, "error", 5))
		return 0;
	return -EPROTO;
}

static void strip_nl(char *s)
{
	size_t n = strlen(s);

	while (n && s[n - 1] == '\n')
		s[--n] = '\0';
}

/* Run a daemon command and print its answer; exit status 0 on ok. */
static int run_ctl(const struct ctl *c, const char *verb, const char *cmd)
{
	char buf[8192];
	const char *text;
	int r = ctl_call(c, cmd, buf, sizeof(buf));

	if (r < 0) {
		snprintf(buf, sizeof(buf), "error sluiced is not answering on %s (%s)", c->socket,
			 strerror(-r));
	}
	strip_nl(buf);
	text = buf + (r == 1 ? 2 : 5);
	while (*text == ' ')
		text++;
	if (c->json) {
		struct json j;

		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "command", verb);
		json_bool(&j, "ok", r == 1);
		json_str(&j, "message", text);
		if (r == 0) {
			/* The daemon's refusal, one problem a line (a reload lists them all). */
			const char *l, *nl;
			char one[1024];

			json_arr_begin(&j, "problems");
			for (l = text; *l; l = nl ? nl + 1 : l + strlen(l)) {
				nl = strchr(l, '\n');
				snprintf(one, sizeof(one), "%.*s", nl ? (int)(nl - l) : (int)strlen(l), l);
				if (one[0])
					json_str(&j, NULL, one);
			}
			json_arr_end(&j);
		}
		json_obj_end(&j);
		json_end(&j);
	} else if (r == 0 && !strcmp(verb, "reload")) {
		int n = 1;
		const char *l;

		for (l = text; (l = strchr(l, '\n')); l++)
			n++;
		fprintf(stderr, "sluicectl: reload rejected, the running config stays in force "
			"(%d problem%s):\n%s\n", n, n == 1 ? "" : "s", text);
	} else {
		fprintf(r == 1 ? stdout : stderr, "%s%s\n", r == 1 ? "" : "sluicectl: ", text);
	}
	return r == 1 ? 0 : 1;
}

/* ---- pinned maps ------------------------------------------------------------------------ */

static int open_pins(const struct ctl *c, struct sl_maps *m)
{
	int ret = sl_maps_open_pinned(m, c->pin_path);

	if (ret == -ENOENT)
		fprintf(stderr, "sluicectl: nothing pinned in %s: sluiced has not run, or was "
			"stopped with its pins removed\n", c->pin_path);
	else if (ret)
		fprintf(stderr, "sluicectl: cannot open the maps in %s: %s\n", c->pin_path,
			strerror(-ret));
	return ret;
}

static bool pid_alive(uint32_t pid)
{
	return pid && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

static const char *class_name(const struct sl_maps *m, uint32_t id, char *buf, size_t n)
{
	struct sl_class_policy p;

	if (id == SL_CLASS_NONE)
		return "none";
	if (sl_maps_read_class(m, id, &p) || !p.valid) {
		snprintf(buf, n, "class%u", id);
		return buf;
	}
	snprintf(buf, n, "%s", p.name);
	return buf;
}

/* ---- status ----------------------------------------------------------------------------- */

static int cmd_status(const struct ctl *c)
{
	char store[4096];
	struct sl_maps m;
	struct sl_meta meta;
	bool running;
	long entries;
	uint32_t i;
	long cap;
	int pinned = sl_maps_open_pinned(&m, c->pin_path);

	sl_maps_close(&m); /* reopened below, with open_pins's messages */
	if (pinned == -ENOENT && ctl_call(c, "store", store, sizeof(store)) == 1) {
		/* No datapath pinned, but a daemon answers: a gateway-only sluiced. */
		strip_nl(store);
		if (c->json) {
			struct json j;

			json_init(&j, stdout);
			json_obj_begin(&j, NULL);
			json_bool(&j, "daemon_running", true);
			json_bool(&j, "edge", false);
			json_str(&j, "control_socket", c->socket);
			json_raw(&j, "store", store + 3);
			json_obj_end(&j);
			json_end(&j);
		} else if (ctl_call(c, "store text", store, sizeof(store)) == 1) {
			printf("daemon:      running, no edge (gateway only), socket %s\n", c->socket);
			printf("counters:    %s", store + 3);
		}
		return 0;
	}
	if (pinned == -ENOENT) {
		/* Neither a datapath nor a daemon: not running, said the way the rest is. */
		if (c->json) {
			struct json j;

			json_init(&j, stdout);
			json_obj_begin(&j, NULL);
			json_bool(&j, "daemon_running", false);
			json_bool(&j, "edge", false);
			json_str(&j, "pin_path", c->pin_path);
			json_str(&j, "control_socket", c->socket);
			json_obj_end(&j);
			json_end(&j);
		} else {
			printf("daemon:      not running (nothing pinned in %s, no answer on %s)\n",
			       c->pin_path, c->socket);
		}
		return SL_EXIT_NOT_RUNNING;
	}
	if (open_pins(c, &m))
		return 1;
	if (sl_maps_read_meta(&m, &meta)) {
		fprintf(stderr, "sluicectl: cannot read status metadata: %s\n", strerror(errno));
		sl_maps_close(&m);
		return 1;
	}
	running = pid_alive(meta.pid);
	entries = sl_maps_count_buckets(&m);
	cap = sl_maps_bucket_capacity(&m);

	if (c->json) {
		struct json j;

		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_bool(&j, "daemon_running", running);
		if (running)
			json_u64(&j, "pid", meta.pid);
		else
			json_null(&j, "pid");
		json_str(&j, "config", meta.config_path);
		json_u64(&j, "generation", meta.generation);
		json_u64(&j, "started_unix", meta.started_unix);
		json_u64(&j, "reloaded_unix", meta.reloaded_unix);
		json_u64(&j, "reload_failures", meta.reload_failures);
		json_str(&j, "last_error", meta.last_error);
		json_str(&j, "pin_path", c->pin_path);
		json_str(&j, "control_socket", meta.ctl_socket);
		json_arr_begin(&j, "interfaces");
		for (i = 0; i < meta.n_ifaces && i < SL_MAX_IFACES; i++) {
			json_obj_begin(&j, NULL);
			json_str(&j, "name", meta.ifaces[i].name);
			json_u64(&j, "ifindex", meta.ifaces[i].ifindex);
			json_str(&j, "attach_mode", sl_attach_mode_name(meta.ifaces[i].mode));
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_arr_begin(&j, "ports");
		for (i = 0; i < meta.n_ports && i < SL_MAX_PORTS; i++) {
			json_obj_begin(&j, NULL);
			json_u64(&j, "port", meta.ports[i].port);
			json_str(&j, "front", sl_front_name(meta.ports[i].front));
			json_str(&j, "action", sl_action_name(meta.ports[i].action));
			json_u64(&j, "cost", meta.ports[i].cost);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_i64(&j, "state_entries", entries);
		json_i64(&j, "state_capacity", cap);
		json_u64(&j, "asn_entries", meta.asn_entries);
		json_str(&j, "asn_source", meta.asn_source);
		json_arr_begin(&j, "tenants");
		for (i = 0; i < SL_MAX_TENANTS; i++) {
			struct sl_tenant t;
			const struct sl_rate *r;
			bool leased;

			if (bpf_map_lookup_elem(m.tenants, &i, &t) || !t.valid)
				continue;
			leased = sl_now_ns() < t.lease_expires_ns;
			r = leased ? &t.lease : &t.fallback;
			json_obj_begin(&j, NULL);
			json_str(&j, "name", t.name);
			json_str(&j, "mode", sl_mode_name(t.mode));
			json_bool(&j, "lease_live", leased);
			json_double(&j, "rate", r->emission_ns ? 1e9 / (double)r->emission_ns : 0);
			json_double(&j, "burst", r->emission_ns ? (double)r->tolerance_ns /
							       (double)r->emission_ns : 0);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		{
			struct sl_cookie_keys k;
			__u32 zero = 0;

			if (!bpf_map_lookup_elem(m.cookie_keys, &zero, &k))
				json_u64(&j, "cookie_key_rotated_unix", k.rotated_unix);
		}
		if (running && ctl_call(c, "store", store, sizeof(store)) == 1) {
			strip_nl(store);
			json_raw(&j, "store", store + 3);
		} else {
			json_null(&j, "store");
		}
		/* The event fan-out: read off the ring, readers now, what slow ones lost. */
		if (running && ctl_call(c, "events-stats", store, sizeof(store)) == 1 &&
		    store[3] == '{') {
			strip_nl(store);
			json_raw(&j, "events", store + 3);
		} else {
			json_null(&j, "events");
		}
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("daemon:      %s", running ? "running" : "not running");
		if (running)
			printf(" (pid %u)", meta.pid);
		else if (meta.n_ifaces)
			printf(" (datapath left attached: the maps keep their last config)");
		printf("\nconfig:      %s (generation %u", meta.config_path, meta.generation);
		if (meta.reload_failures)
			printf(", %u rejected reloads", meta.reload_failures);
		printf(")\n");
		if (meta.last_error[0])
			printf("last error:  %s\n", meta.last_error);
		printf("pins:        %s\n", c->pin_path);
		for (i = 0; i < meta.n_ifaces && i < SL_MAX_IFACES; i++)
			printf("interface:   %s (ifindex %u) attached %s\n", meta.ifaces[i].name,
			       meta.ifaces[i].ifindex, sl_attach_mode_name(meta.ifaces[i].mode));
		for (i = 0; i < meta.n_ports && i < SL_MAX_PORTS; i++)
			printf("port:        %u front=%s action=%s cost=%u\n", meta.ports[i].port,
			       sl_front_name(meta.ports[i].front),
			       sl_action_name(meta.ports[i].action), meta.ports[i].cost);
		if (entries < 0 || cap < 0)
			/* e.g. an older build's LRU table still pinned: not read as sets */
			printf("state:       unreadable (%s)\n",
			       strerror((int)-(cap < 0 ? cap : entries)));
		else
			printf("state:       %ld of %ld buckets\n", entries, cap);
		printf("asn table:   %u rows from %s\n", meta.asn_entries,
		       meta.asn_source[0] ? meta.asn_source : "(none)");
		for (i = 0; i < SL_MAX_TENANTS; i++) {
			struct sl_tenant t;
			const struct sl_rate *r;
			char rate[32];
			bool leased;

			if (bpf_map_lookup_elem(m.tenants, &i, &t) || !t.valid)
				continue;
			leased = sl_now_ns() < t.lease_expires_ns;
			r = leased ? &t.lease : &t.fallback;
			printf("tenant:      %s %s rate %s burst %.3g%s\n", t.name,
			       leased ? "leased" : "lease expired, static",
			       sl_fmt_rate(1e9 / (double)r->emission_ns, rate, sizeof(rate)),
			       (double)r->tolerance_ns / (double)r->emission_ns,
			       t.mode == SL_MODE_MONITOR ? " (monitor)" : "");
		}
		if (running && ctl_call(c, "events-stats", store, sizeof(store)) == 1) {
			unsigned long long rd = 0, dr = 0;
			unsigned int n = 0;

			if (sscanf(store, "ok {\"read\":%llu,\"readers\":%u,\"dropped\":%llu}", &rd,
				   &n, &dr) == 3)
				printf("events:      %llu read off the ring, %u reader%s now, %llu lost "
				       "by readers that fell behind\n", rd, n, n == 1 ? "" : "s", dr);
		}
		if (running && ctl_call(c, "store text", store, sizeof(store)) == 1)
			printf("counters:    %s", store + 3);
	}
	sl_maps_close(&m);
	return running ? 0 : SL_EXIT_NOT_RUNNING;
}

static int cmd_leases(const struct ctl *c)
{
	struct sl_maps m;
	struct sl_meta meta;
	int ret;

	if (open_pins(c, &m))
		return 1;
	if (sl_maps_read_meta(&m, &meta)) {
		fprintf(stderr, "sluicectl: cannot read status metadata: %s\n", strerror(errno));
		sl_maps_close(&m);
		return 1;
	}
	ret = sl_leases_print(&m, &meta, c->json);
	sl_maps_close(&m);
	return ret ? 1 : 0;
}

/* ---- stats ------------------------------------------------------------------------------ */

struct totals {
	uint64_t passed, shed, would_shed, malformed;
};

static void sum_row(const struct sl_counters *r, struct totals *t)
{
	unsigned int k;

	/* Admitted connections: the SYN front's proven handshakes and the stateless front's first
	 * requests (a SYN-front SYN weighed and passed is not admitted yet). */
	t->passed += r->pkts[SL_R_PASSED] + r->pkts[SL_R_FIRST_ADMITTED];
	t->shed += r->pkts[SL_R_SHED_PREFIX] + r->pkts[SL_R_SHED_PARENT];
	t->would_shed += r->pkts[SL_R_WOULD_SHED_PREFIX] + r->pkts[SL_R_WOULD_SHED_PARENT];
	for (k = SL_R_MAL_ETH; k <= SL_R_MAL_TCP_DOFF; k++)
		t->malformed += r->pkts[k];
}

static int cmd_stats(const struct ctl *c)
{
	struct sl_counters rows[SL_STATS_ROWS], all;
	struct sl_meta meta;
	struct totals t = { 0 };
	struct sl_maps m;
	uint64_t key_new = 0, key_homeless = 0, cas = 0, synacks = 0, lost = 0;
	char nb[32];
	long entries;
	uint32_t r, k;

	if (open_pins(c, &m))
		return 1;
	if (sl_maps_read_stats(&m, rows)) {
		fprintf(stderr, "sluicectl: cannot read counters: %s\n", strerror(errno));
		sl_maps_close(&m);
		return 1;
	}
	entries = sl_maps_count_buckets(&m);
	memset(&all, 0, sizeof(all));
	for (r = 0; r < SL_STATS_ROWS; r++) {
		sum_row(&rows[r], &t);
		for (k = 0; k < SL_REASON_SLOTS; k++)
			all.pkts[k] += rows[r].pkts[k];
		key_new += rows[r].key_new;
		key_homeless += rows[r].key_homeless;
		cas += rows[r].cas_busy;
		synacks += rows[r].synacks;
		lost += rows[r].events_lost;
	}

	if (c->json) {
		struct json j;

		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_u64(&j, "passed", t.passed);
		json_u64(&j, "shed", t.shed);
		json_u64(&j, "would_shed", t.would_shed);
		json_u64(&j, "malformed", t.malformed);
		json_u64(&j, "not_protected", all.pkts[SL_R_NOT_PROTECTED]);
		json_u64(&j, "not_syn", all.pkts[SL_R_NOT_SYN]);
		json_u64(&j, "fragment", all.pkts[SL_R_FRAGMENT]);
		json_u64(&j, "state_errors", all.pkts[SL_R_STATE_ERROR]);
		json_i64(&j, "state_entries", entries);
		json_i64(&j, "state_capacity", sl_maps_bucket_capacity(&m));
		json_u64(&j, "keys_new", key_new);
		json_u64(&j, "keys_homeless", key_homeless);
		json_u64(&j, "cas_busy", cas);
		json_u64(&j, "synacks", synacks);
		json_u64(&j, "replied_429", all.pkts[SL_R_REPLIED_429]);
		json_u64(&j, "events_lost", lost);
		json_obj_begin(&j, "by_class");
		for (r = 0; r < SL_MAX_CLASSES; r++) {
			struct sl_class_policy p;
			struct totals ct = { 0 };

			if (sl_maps_read_class(&m, r, &p) || !p.valid)
				continue;
			sum_row(&rows[r], &ct);
			json_obj_begin(&j, p.name);
			json_str(&j, "mode", sl_mode_name(p.mode));
			json_u64(&j, "passed", ct.passed);
			json_u64(&j, "shed", ct.shed);
			json_u64(&j, "would_shed", ct.would_shed);
			json_u64(&j, "shed_prefix", rows[r].pkts[SL_R_SHED_PREFIX]);
			json_u64(&j, "shed_parent", rows[r].pkts[SL_R_SHED_PARENT]);
			json_u64(&j, "keys_new", rows[r].key_new);
			json_u64(&j, "keys_homeless", rows[r].key_homeless);
			json_obj_end(&j);
		}
		json_obj_end(&j);
		json_obj_begin(&j, "by_reason");
		for (k = 0; k < SL_R__MAX; k++)
			json_u64(&j, sl_reason_name(k), all.pkts[k]);
		json_obj_end(&j);
		if (!sl_maps_read_meta(&m, &meta))
			sl_outcomes_print(&m, &meta, &j);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("%-14s %8s %12s %12s %12s\n", "class", "mode", "passed", "shed",
		       "would_shed");
		for (r = 0; r < SL_MAX_CLASSES; r++) {
			struct sl_class_policy p;
			struct totals ct = { 0 };

			if (sl_maps_read_class(&m, r, &p) || !p.valid)
				continue;
			sum_row(&rows[r], &ct);
			printf("%-14s %8s %12llu %12llu %12llu\n", class_name(&m, r, nb, sizeof(nb)),
			       sl_mode_name(p.mode), (unsigned long long)ct.passed,
			       (unsigned long long)ct.shed, (unsigned long long)ct.would_shed);
		}
		printf("%-14s %8s %12llu %12llu %12llu\n", "total", "", (unsigned long long)t.passed,
		       (unsigned long long)t.shed, (unsigned long long)t.would_shed);
		printf("\nby reason:\n");
		for (k = 0; k < SL_R__MAX; k++)
			if (all.pkts[k])
				printf("  %-24s %12llu\n", sl_reason_name(k),
				       (unsigned long long)all.pkts[k]);
		printf("\nstate: %ld of %ld buckets; %llu keys created, %llu charged homeless\n",
		       entries, sl_maps_bucket_capacity(&m), (unsigned long long)key_new,
		       (unsigned long long)key_homeless);
		if (!sl_maps_read_meta(&m, &meta))
			sl_outcomes_print(&m, &meta, NULL);
	}
	sl_maps_close(&m);
	return 0;
}

/* ---- prefix show ------------------------------------------------------------------------ */

struct bucket_view {
	struct sl_bkey key;
	bool exists;
	bool homeless;        /* no way of its own nor one to take: its set's spill is charged */
	double available;     /* cost units it could admit now */
	double burst, rate;
	uint64_t tat_start;   /* the TAT the datapath would charge against */
};

static void view_bucket(const struct sl_maps *m, const struct sl_settings *set,
			const struct sl_prefix *a, uint8_t plen, uint8_t level, uint8_t cls,
			const struct sl_rate *r, uint64_t now, struct bucket_view *v)
{
	struct sl_bucket b;
	__u64 fresh, tat;

	memset(v, 0, sizeof(*v));
	sl_bkey_make(&v->key, a, plen, level, cls);
	v->rate = r->emission_ns ? 1e9 / (double)r->emission_ns : 0;
	v->burst = r->emission_ns ? (double)r->tolerance_ns / (double)r->emission_ns : 0;
	fresh = sl_gcra_initial_tat(now, r->tolerance_ns, set->new_key_credit);
	if (!sl_maps_lookup_bucket(m, &v->key, &b)) {
		v->exists = true;
		v->tat_start = b.tat;
	} else {
		/* No way of its own: a new key's credit where it may take one, else the spill. */
		v->tat_start = fresh;
		if (!sl_maps_predict_bucket(m, &v->key, now, fresh, &tat, &v->homeless))
			v->tat_start = tat;
	}
	v->available = sl_gcra_available(v->tat_start, now, r->emission_ns, r->tolerance_ns);
}

/* @cfg (may be NULL: the config could not be read) adds what the bucket's rate and burst
 * admit of each route on each port (budget.h). */
static void json_bucket(struct json *j, const char *name, const struct bucket_view *v,
			const struct sl_config *cfg)
{
	char buf[64];
	struct sl_prefix p = { .family = v->key.family, .plen = v->key.plen };

	memcpy(p.addr, v->key.addr, sizeof(v->key.addr));
	json_obj_begin(j, name);
	json_str(j, "key", sl_prefix_str(&p, buf, sizeof(buf)));
	json_bool(j, "exists", v->exists);
	json_bool(j, "homeless", v->homeless);
	json_double(j, "available", v->available);
	json_double(j, "burst", v->burst);
	json_double(j, "rate", v->rate);
	if (cfg)
		sl_budget_json(j, "ports", cfg, v->rate, v->burst);
	json_obj_end(j);
}

/* The bucket's rate as requests per second of each route: "  business /32  port 80: 4.2
 * login/s, ...", one line per port group, under a shared label. */
static void text_budget(const char *cls, const struct bucket_view *v, const struct sl_config *cfg)
{
	char *view = malloc(SL_MAX_PORTS * 2048), who[48];
	const char *s, *semi;
	bool first = true;

	if (!view)
		return;
	sl_budget_str(cfg, v->rate, view, SL_MAX_PORTS * 2048);
	snprintf(who, sizeof(who), "%s /%u", cls, v->key.plen);
	for (s = view; *s; s = semi ? semi + 2 : s + strlen(s)) {
		semi = strstr(s, "; ");
		printf("  %-18s %.*s\n", first ? who : "", semi ? (int)(semi - s) : (int)strlen(s),
		       s);
		first = false;
	}
	free(view);
}

/* The config the daemon runs (its path from the pins), else --config's: for the routes. */
static struct sl_config *routes_config(const struct ctl *c, const struct sl_meta *meta)
{
	struct sl_config *cfg = calloc(1, sizeof(*cfg));
	char err[256];

	if (cfg && meta->config_path[0] &&
	    !sl_config_load(meta->config_path, NULL, cfg, err, sizeof(err)))
		return cfg;
	if (cfg && !sl_config_load(c->config, NULL, cfg, err, sizeof(err)))
		return cfg;
	free(cfg);
	return NULL;
}

static void text_bucket(const char *name, const struct bucket_view *v)
{
	char buf[64], rate[32];
	struct sl_prefix p = { .family = v->key.family, .plen = v->key.plen };

	memcpy(p.addr, v->key.addr, sizeof(v->key.addr));
	printf("%-9s %-28s %s, %.2f of %.2f units available, refills %s\n", name,
	       sl_prefix_str(&p, buf, sizeof(buf)),
	       v->exists ? "live" : v->homeless ? "homeless (its set's shared spill)" : "no state",
	       v->available, v->burst, sl_fmt_rate(v->rate, rate, sizeof(rate)));
}

static int cmd_prefix_show(const struct ctl *c, const char *addr)
{
	struct sl_prefix a;
	struct sl_asn_val av;
	struct sl_settings set;
	struct sl_class_policy pol;
	struct sl_meta meta;
	struct bucket_view pv, qv;
	struct sl_config *cfg;
	struct sl_maps m;
	char err[160], abuf[64];
	const char *decision, *reason;
	bool in_table;
	uint32_t cls, cost = 1, port = 0, i;
	uint64_t now;
	__u64 t1, t2;
	int ok_p, ok_q;

	if (sl_prefix_parse(addr, &a, 0, err, sizeof(err)))
		return usage_error("prefix show", "%s", err);
	a.plen = sl_family_bits(a.family); /* a prefix argument stands for its first address */
	if (open_pins(c, &m))
		return 1;
	if (sl_maps_read_settings(&m, &set) || sl_maps_read_meta(&m, &meta)) {
		fprintf(stderr, "sluicectl: cannot read settings: %s\n", strerror(errno));
		sl_maps_close(&m);
		return 1;
	}
	in_table = sl_maps_lookup_asn(&m, &a, &av) == 0;
	cls = in_table ? av.class_id : set.unknown_class;
	if (cls >= SL_MAX_CLASSES || sl_maps_read_class(&m, cls, &pol) || !pol.valid) {
		cls = set.unknown_class;
		if (sl_maps_read_class(&m, cls, &pol) || !pol.valid) {
			fprintf(stderr, "sluicectl: no policy for class %u\n", cls);
			sl_maps_close(&m);
			return 1;
		}
	}
	if (c->port > 0) {
		struct sl_port sp;
		__u32 k = (uint32_t)c->port;

		port = k;
		if (!bpf_map_lookup_elem(m.ports, &k, &sp) && sp.protected)
			cost = sp.cost;
		else
			port = 0;
		if (!port) {
			fprintf(stderr, "sluicectl: port %d is not protected\n", c->port);
			sl_maps_close(&m);
			return 1;
		}
	} else if (meta.n_ports) {
		port = meta.ports[0].port;
		cost = meta.ports[0].cost;
	}

	now = sl_now_ns();
	{
		uint8_t plen = a.family == SL_FAM_V4 ? pol.v4_prefix : pol.v6_prefix;
		uint8_t parent = a.family == SL_FAM_V4 ? pol.v4_parent : pol.v6_parent;

		view_bucket(&m, &set, &a, plen, SL_LEVEL_PREFIX, (uint8_t)cls,
			    &pol.prefix, now, &pv);
		view_bucket(&m, &set, &a, parent, SL_LEVEL_PARENT, (uint8_t)cls,
			    &pol.parent, now, &qv);
	}
	/* The same arithmetic the datapath runs, without committing anything. */
	ok_p = sl_gcra_charge(pv.tat_start, now, cost, pol.prefix.emission_ns,
			      pol.prefix.tolerance_ns, &t1);
	ok_q = sl_gcra_charge(qv.tat_start, now, cost, pol.parent.emission_ns,
			      pol.parent.tolerance_ns, &t2);
	if (ok_p && ok_q) {
		decision = "pass";
		reason = sl_reason_name(SL_R_PASSED);
	} else {
		unsigned int r = !ok_p ? SL_R_SHED_PREFIX : SL_R_SHED_PARENT;

		if (pol.mode == SL_MODE_MONITOR) {
			decision = "pass";
			r = !ok_p ? SL_R_WOULD_SHED_PREFIX : SL_R_WOULD_SHED_PARENT;
		} else {
			decision = "shed";
			for (i = 0; i < meta.n_ports; i++)
				if (meta.ports[i].port == port)
					decision = meta.ports[i].action == SL_ACT_REPLY ? "reply" :
						   "drop";
		}
		reason = sl_reason_name(r);
	}

	cfg = routes_config(c, &meta);
	if (c->json) {
		struct json j;

		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "address", sl_prefix_str(&a, abuf, sizeof(abuf)));
		json_str(&j, "class", pol.name);
		json_bool(&j, "in_asn_table", in_table);
		if (in_table)
			json_u64(&j, "asn", av.asn);
		else
			json_null(&j, "asn");
		json_str(&j, "mode", sl_mode_name(pol.mode));
		json_u64(&j, "port", port);
		json_u64(&j, "cost", cost);
		json_bucket(&j, "bucket", &pv, cfg);
		json_bucket(&j, "parent_bucket", &qv, cfg);
		json_str(&j, "decision", decision);
		json_str(&j, "reason", reason);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("address   %s\n", sl_prefix_str(&a, abuf, sizeof(abuf)));
		if (in_table)
			printf("class     %s (AS%u, mode %s)\n", pol.name, av.asn,
			       sl_mode_name(pol.mode));
		else
			printf("class     %s (not in the ASN table, mode %s)\n", pol.name,
			       sl_mode_name(pol.mode));
		text_bucket("key", &pv);
		text_bucket("parent", &qv);
		printf("a connection to port %u (cost %u) now: %s (%s)\n", port, cost, decision,
		       reason);
		if (cfg && cfg->n_ports) {
			printf("what the key's and the parent's rates admit of each route:\n");
			text_budget(pol.name, &pv, cfg);
			text_budget(pol.name, &qv, cfg);
		} else {
			printf("(the config cannot be read: no view of the rates in requests)\n");
		}
	}
	free(cfg);
	sl_maps_close(&m);
	return 0;
}


/* ---- clear prefix ----------------------------------------------------------------------- */

static void key_hex(const struct sl_bkey *k, char *out)
{
	const unsigned char *b = (const unsigned char *)k;
	size_t i;

	for (i = 0; i < sizeof(*k); i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

/*
 * The keys are worked out here as prefix show does (class, policy, key and parent); sluiced
 * writes the buckets and logs the audit line itself, so the trail is
 * in its log whatever becomes of this output.
 */
/* Who asks, for sluiced's log: --operator, else SUDO_USER, with the uid; one word. */
static void operator_of(const struct ctl *c, char *op, size_t n)
{
	const char *sudo = getenv("SUDO_USER");
	size_t i;

	if (c->operator_name[0] && sudo && *sudo)
		snprintf(op, n, "%s(sudo_user=%.20s,uid=%u)", c->operator_name, sudo,
			 (unsigned)getuid());
	else if (c->operator_name[0])
		snprintf(op, n, "%s(uid=%u)", c->operator_name, (unsigned)getuid());
	else if (sudo && *sudo)
		snprintf(op, n, "%.40s(uid=%u)", sudo, (unsigned)getuid());
	else
		snprintf(op, n, "uid=%u", (unsigned)getuid());
	for (i = 0; op[i]; i++)
		if (op[i] == ' ' || !isprint((unsigned char)op[i]))
			op[i] = '_';
}

/* --reason for the clear commands: required, one line. 0, or the usage error's status. */
static int check_reason(const struct ctl *c, const char *cmd)
{
	size_t i;

	if (!c->reason[0])
		return usage_error(cmd, "--reason is required: say why, it goes to the log");
	for (i = 0; c->reason[i]; i++)
		if (c->reason[i] == '\n' || c->reason[i] == '\r')
			return usage_error(cmd, "--reason: one line");
	return 0;
}

static int cmd_clear_prefix(const struct ctl *c, const char *addr)
{
	struct sl_prefix a;
	struct sl_asn_val av;
	struct sl_settings set;
	struct sl_class_policy pol;
	struct sl_maps m;
	struct bucket_view pv, qv;
	char err[160], abuf[64], kp[32], kq[32], op[64], line[1024], buf[4096];
	const char *text;
	uint32_t cls;
	uint64_t now;
	size_t i;
	int r;

	if ((r = check_reason(c, "clear prefix")))
		return r;
	if (sl_prefix_parse(addr, &a, 0, err, sizeof(err)))
		return usage_error("clear prefix", "%s", err);
	a.plen = sl_family_bits(a.family);
	if (open_pins(c, &m))
		return 1;
	if (sl_maps_read_settings(&m, &set)) {
		fprintf(stderr, "sluicectl: cannot read settings: %s\n", strerror(errno));
		sl_maps_close(&m);
		return 1;
	}
	cls = sl_maps_lookup_asn(&m, &a, &av) == 0 ? av.class_id : set.unknown_class;
	if (cls >= SL_MAX_CLASSES || sl_maps_read_class(&m, cls, &pol) || !pol.valid) {
		cls = set.unknown_class;
		if (sl_maps_read_class(&m, cls, &pol) || !pol.valid) {
			fprintf(stderr, "sluicectl: no policy for class %u\n", cls);
			sl_maps_close(&m);
			return 1;
		}
	}
	now = sl_now_ns();
	view_bucket(&m, &set, &a,
		    a.family == SL_FAM_V4 ? pol.v4_prefix : pol.v6_prefix, SL_LEVEL_PREFIX,
		    (uint8_t)cls, &pol.prefix, now, &pv);
	view_bucket(&m, &set, &a,
		    a.family == SL_FAM_V4 ? pol.v4_parent : pol.v6_parent, SL_LEVEL_PARENT,
		    (uint8_t)cls, &pol.parent, now, &qv);
	sl_maps_close(&m);
	key_hex(&pv.key, kp);
	key_hex(&qv.key, kq);
	operator_of(c, op, sizeof(op));
	/* clear ADDR CLASS OPERATOR KEY[,KEY] REASON... */
	snprintf(line, sizeof(line), "clear %s %s %s %s%s%s %s",
		 sl_prefix_str(&a, abuf, sizeof(abuf)), pol.name[0] ? pol.name : "-", op, kp,
		 c->parent ? "," : "", c->parent ? kq : "", c->reason);
	r = ctl_call(c, line, buf, sizeof(buf));
	if (r < 0) {
		fprintf(stderr, "sluicectl: clear prefix: sluiced is not answering on %s (%s); "
			"nothing was cleared\n", c->socket, strerror(-r));
		return 1;
	}
	strip_nl(buf);
	text = buf + (r == 1 ? 2 : 5);
	while (*text == ' ')
		text++;
	if (r != 1) {
		fprintf(stderr, "sluicectl: clear prefix: %s\n", text);
		return 1;
	}
	if (c->json) {
		struct json j;

		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_bool(&j, "ok", true);
		json_str(&j, "address", sl_prefix_str(&a, abuf, sizeof(abuf)));
		json_str(&j, "class", pol.name);
		json_str(&j, "operator", op);
		json_str(&j, "reason", c->reason);
		json_arr_begin(&j, "cleared");
		for (i = 0; i < (c->parent ? 2u : 1u); i++) {
			const struct bucket_view *v = i ? &qv : &pv;
			struct sl_prefix p = { .family = v->key.family, .plen = v->key.plen };

			memcpy(p.addr, v->key.addr, sizeof(v->key.addr));
			json_obj_begin(&j, NULL);
			json_str(&j, "level", i ? "parent" : "key");
			json_str(&j, "key", sl_prefix_str(&p, abuf, sizeof(abuf)));
			json_bool(&j, "existed", v->exists);
			json_double(&j, "previous_available", v->available);
			json_double(&j, "burst", v->burst);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_str(&j, "daemon", text);
		json_obj_end(&j);
		json_end(&j);
	} else {
		text_bucket("was key", &pv);
		if (c->parent)
			text_bucket("was parent", &qv);
		printf("cleared: %s\n", text);
	}
	return 0;
}

/*
 * `clear account TENANT ACCOUNT --from ADDR --reason TEXT`: sluiced works out the keys (it
 * holds the key they are hashed under), reads what each held and clears it in the store.
 */
static int cmd_clear_account(const struct ctl *c, const char *tenant, const char *account)
{
	char line[1024], buf[4096], op[96], err[160];
	struct sl_prefix a;
	const char *text;
	int r;

	if ((r = check_reason(c, "clear account")))
		return r;
	if (!c->from[0])
		return usage_error("clear account", "--from ADDR is required: an account's "
				   "counters are kept per source, and only the address it signs "
				   "in from names them");
	if (sl_prefix_parse(c->from, &a, 0, err, sizeof(err)) ||
	    a.plen != sl_family_bits(a.family))
		return usage_error("clear account", "--from: '%s' is not an address (%s)", c->from,
				   err[0] ? err : "a prefix length was given");
	if (strchr(tenant, ' ') || strchr(account, ' ') || strlen(tenant) > 32 ||
	    strlen(account) > 128)
		return usage_error("clear account", "no spaces in TENANT or ACCOUNT, at most 32 "
				   "and 128 characters");
	operator_of(c, op, sizeof(op));
	snprintf(line, sizeof(line), "clear-account %s %s %s %s %s", tenant, account, c->from, op,
		 c->reason);
	r = ctl_call(c, line, buf, sizeof(buf));
	if (r < 0) {
		fprintf(stderr, "sluicectl: clear account: sluiced is not answering on %s (%s); "
			"nothing was cleared\n", c->socket, strerror(-r));
		return 1;
	}
	strip_nl(buf);
	text = buf + (r == 1 ? 2 : 5);
	while (*text == ' ')
		text++;
	if (c->json) {
		struct json j;

		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_bool(&j, "ok", r == 1);
		json_str(&j, "tenant", tenant);
		json_str(&j, "account", account);
		json_str(&j, "from", c->from);
		json_str(&j, "operator", op);
		json_str(&j, "reason", c->reason);
		json_str(&j, "message", text);
		json_obj_end(&j);
		json_end(&j);
	} else {
		fprintf(r == 1 ? stdout : stderr, "%s%s\n", r == 1 ? "" : "sluicectl: clear account: ",
			text);
	}
	return r == 1 ? 0 : 1;
}

/*
 * `config show`: what sluiced runs (it renders it: the config it loaded last, defaults and
 * all), or with --file what a file would resolve to, loaded here as sluiced would load it.
 */
#define CONFIG_MAX_ANSWER (4u << 20)

static int cmd_config_show(const struct ctl *c)
{
	char *buf;
	const char *body;
	int r;

	if (c->file[0]) {
		struct sl_config *cfg = malloc(sizeof(*cfg));
		char *err = malloc(16384);

		if (!cfg || !err) {
			free(cfg);
			free(err);
			fprintf(stderr, "sluicectl: out of memory\n");
			return 1;
		}
		r = sl_config_load(c->file, NULL, cfg, err, 16384);
		if (r) {
			strip_nl(err);
			fprintf(stderr, "sluicectl: config show: %s does not load:\n%s\n", c->file, err);
		} else {
			sl_config_show(cfg, stdout, c->json);
		}
		free(cfg);
		free(err);
		return r ? 1 : 0;
	}
	buf = malloc(CONFIG_MAX_ANSWER);
	if (!buf) {
		fprintf(stderr, "sluicectl: out of memory\n");
		return 1;
	}
	r = ctl_call(c, c->json ? "config json" : "config", buf, CONFIG_MAX_ANSWER);
	if (r < 0) {
		fprintf(stderr, "sluicectl: config show: sluiced is not answering on %s (%s): no "
			"config is running here; --file FILE shows what a file resolves to\n",
			c->socket, strerror(-r));
		free(buf);
		return 1;
	}
	if (r == 0) {
		strip_nl(buf);
		fprintf(stderr, "sluicectl: config show: %s\n", buf + 6);
		free(buf);
		return 1;
	}
	body = strchr(buf, '\n');
	fputs(body ? body + 1 : "", stdout);
	free(buf);
	return 0;
}

/* ---- detach without a daemon ------------------------------------------------------------ */

static int detach_offline(const struct ctl *c)
{
	struct sl_maps m;
	struct sl_meta meta;
	uint32_t i;
	int failed = 0;

	if (open_pins(c, &m))
		return 1;
	if (sl_maps_read_meta(&m, &meta)) {
		sl_maps_close(&m);
		return 1;
	}
	for (i = 0; i < meta.n_ifaces && i < SL_MAX_IFACES; i++) {
		struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex((int)meta.ifaces[i].ifindex);
		struct xdp_program *p = NULL;
		bool found = false;

		if (!mp || libxdp_get_error(mp))
			continue;
		if (xdp_multiprog__is_legacy(mp)) {
			p = xdp_multiprog__main_prog(mp);
			if (p && !strcmp(xdp_program__name(p), "sluice_xdp")) {
				found = true;
				if (xdp_multiprog__detach(mp))
					failed++;
			}
		} else {
			while ((p = xdp_multiprog__next_prog(p, mp)))
				if (!strcmp(xdp_program__name(p), "sluice_xdp")) {
					found = true;
					if (xdp_program__detach(p, (int)meta.ifaces[i].ifindex,
								xdp_multiprog__attach_mode(mp), 0))
						failed++;
				}
		}
		if (found && !c->json)
			printf("detached from %s\n", meta.ifaces[i].name);
		xdp_multiprog__close(mp);
	}
	sl_maps_close(&m);
	if (!failed)
		sl_maps_unpin(c->pin_path);
	if (c->json) {
		struct json j;

		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "command", "detach");
		json_bool(&j, "ok", !failed);
		json_str(&j, "message", failed ? "some interfaces could not be detached" :
			 "detached without a daemon; pins removed");
		json_obj_end(&j);
		json_end(&j);
	} else if (!failed) {
		printf("pins in %s removed\n", c->pin_path);
	}
	return failed ? 1 : 0;
}

/* ---- verdicts --------------------------------------------------------------------------- */

static const char *verdict_action_name(uint8_t a)
{
	switch (a) {
	case SL_VERDICT_BLOCK:
		return "block";
	case SL_VERDICT_TIGHTEN:
		return "tighten";
	case SL_VERDICT_REPLY:
		return "reply";
	default:
		return "?";
	}
}

/*
 * An operator's change made here, not in sluiced (the maps, the credentials file): its audit
 * line, appended by this process to the audit output of the config in use (audit.h). A
 * config that does not load, or has no audit output, is no audit log to write to; one that
 * cannot be written to is said on stderr (the change itself is made).
 */
static void audit_cli(const struct ctl *c, const struct sl_config *have, struct audit_rec *r)
{
	static struct sl_config cfg;
	char err[2048], op[96];
	int ret;

	if (!have) {
		if (sl_config_load(c->config, NULL, &cfg, err, sizeof(err)))
			return;
		have = &cfg;
	}
	audit_operator(op, sizeof(op));
	r->operator_ = op;
	r->source = "sluicectl";
	r->must = true;
	ret = audit_oneshot(have, r);
	if (ret < 0)
		fprintf(stderr, "sluicectl: warning: not in the audit log (%s): %s\n",
			have->audit.output, strerror(-ret));
}

static int cmd_verdict_add(const struct ctl *c, const char *prefix)
{
	struct sl_verdict v;
	struct sl_prefix p;
	struct sl_maps m;
	char err[160], buf[64];
	int ret;

	if (sl_prefix_parse(prefix, &p, 1, err, sizeof(err)))
		return usage_error("verdict add", "%s", err);
	memset(&v, 0, sizeof(v));
	if (!c->action[0])
		return usage_error("verdict add", "missing --action (block, tighten or reply)");
	if (!strcmp(c->action, "block")) {
		v.action = SL_VERDICT_BLOCK;
	} else if (!strcmp(c->action, "reply")) {
		v.action = SL_VERDICT_REPLY;
	} else {
		v.action = SL_VERDICT_TIGHTEN;
		if (c->factor <= 0.0)
			return usage_error("verdict add", "--action tighten needs --factor, between "
					   "0 and 1 (0.25 = a quarter of the rate and burst)");
		v.factor = (uint16_t)(c->factor * 1000.0 + 0.5);
		if (!v.factor)
			v.factor = 1;
	}
	if (v.action != SL_VERDICT_TIGHTEN && c->factor > 0.0)
		return usage_error("verdict add", "--factor applies to --action tighten only, "
				   "not %s", c->action);
	if (c->ttl <= 0)
		return usage_error("verdict add", "missing --ttl (verdicts always expire: 1s..30d, "
				   "e.g. 600, 10m, 1h, 1d)");
	if (!c->reason[0])
		return usage_error("verdict add", "missing --reason: say why, for whoever reads "
				   "the list next");
	v.expires_ns = sl_now_ns() + (uint64_t)(c->ttl * 1e9 + 0.5);
	v.created_unix = (uint64_t)time(NULL);
	v.reason_code = c->code;
	snprintf(v.reason, sizeof(v.reason), "%s", c->reason);
	if (open_pins(c, &m))
		return 1;
	ret = sl_maps_verdict_put(&m, &p, &v);
	sl_maps_close(&m);
	if (ret) {
		fprintf(stderr, "sluicectl: cannot add the verdict: %s\n", strerror(-ret));
		return 1;
	}
	{
		char pb[64], detail[96];
		struct audit_rec a = { .event = AUDIT_VERDICT, .prefix = pb, .reason = v.reason,
				       .decision = verdict_action_name(v.action),
				       .detail = detail };

		sl_prefix_str(&p, pb, sizeof(pb));
		snprintf(detail, sizeof(detail), "added for %gs%s%.3g, code %u", c->ttl,
			 v.action == SL_VERDICT_TIGHTEN ? ", factor " : "",
			 v.action == SL_VERDICT_TIGHTEN ? c->factor : 0.0, v.reason_code);
		if (v.action != SL_VERDICT_TIGHTEN)
			snprintf(detail, sizeof(detail), "added for %gs, code %u", c->ttl,
				 v.reason_code);
		audit_cli(c, NULL, &a);
	}
	if (c->json) {
		struct json j;

		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "command", "verdict add");
		json_bool(&j, "ok", true);
		json_str(&j, "prefix", sl_prefix_str(&p, buf, sizeof(buf)));
		json_str(&j, "action", verdict_action_name(v.action));
		json_double(&j, "ttl", c->ttl);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("verdict %s on %s for %gs: %s\n", verdict_action_name(v.action),
		       sl_prefix_str(&p, buf, sizeof(buf)), c->ttl, v.reason);
	}
	return 0;
}

static int cmd_verdict_del(const struct ctl *c, const char *prefix)
{
	struct sl_prefix p;
	struct sl_maps m;
	char err[160];
	int ret;

	if (sl_prefix_parse(prefix, &p, 1, err, sizeof(err)))
		return usage_error("verdict del", "%s", err);
	if (open_pins(c, &m))
		return 1;
	ret = sl_maps_verdict_del(&m, &p);
	sl_maps_close(&m);
	if (ret == -ENOENT) {
		fprintf(stderr, "sluicectl: no verdict on %s\n", prefix);
		return 1;
	}
	if (ret) {
		fprintf(stderr, "sluicectl: cannot delete: %s\n", strerror(-ret));
		return 1;
	}
	{
		char pb[64];
		struct audit_rec a = { .event = AUDIT_VERDICT, .prefix = pb, .reason = "verdict del",
				       .decision = "removed" };

		sl_prefix_str(&p, pb, sizeof(pb));
		audit_cli(c, NULL, &a);
	}
	if (c->json)
		printf("{\"command\":\"verdict del\",\"ok\":true}\n");
	else
		printf("verdict on %s removed\n", prefix);
	return 0;
}

static int cmd_verdict_list(const struct ctl *c)
{
	struct sl_lpm_key k, next;
	struct sl_verdict v;
	struct sl_maps m;
	struct json j;
	uint64_t now = sl_now_ns();
	void *prev = NULL;
	int n = 0;

	if (open_pins(c, &m))
		return 1;
	if (c->json) {
		json_init(&j, stdout);
		json_arr_begin(&j, NULL);
	} else {
		printf("%-28s %-8s %7s %8s  %s\n", "prefix", "action", "factor", "expires",
		       "reason");
	}
	while (!bpf_map_get_next_key(m.verdicts, prev, &next)) {
		struct sl_prefix p;
		char buf[64];
		long left;

		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(m.verdicts, &k, &v))
			continue;
		sl_lpm_to_prefix(&k, &p);
		left = v.expires_ns > now ? (long)((v.expires_ns - now) / 1000000000ull) : 0;
		if (c->json) {
			json_obj_begin(&j, NULL);
			json_str(&j, "prefix", sl_prefix_str(&p, buf, sizeof(buf)));
			json_str(&j, "action", verdict_action_name(v.action));
			if (v.action == SL_VERDICT_TIGHTEN)
				json_double(&j, "factor", v.factor / 1000.0);
			else
				json_null(&j, "factor");
			json_i64(&j, "expires_in", left);
			json_bool(&j, "expired", v.expires_ns <= now);
			json_str(&j, "reason", v.reason);
			json_u64(&j, "reason_code", v.reason_code);
			json_u64(&j, "created_unix", v.created_unix);
			json_obj_end(&j);
		} else {
			char f[16] = "-";

			if (v.action == SL_VERDICT_TIGHTEN)
				snprintf(f, sizeof(f), "%.3f", v.factor / 1000.0);
			printf("%-28s %-8s %7s %7lds  %s%s\n", sl_prefix_str(&p, buf, sizeof(buf)),
			       verdict_action_name(v.action), f, left, v.reason,
			       v.expires_ns <= now ? " (expired, not applied)" : "");
		}
		n++;
	}
	if (c->json) {
		json_arr_end(&j);
		json_end(&j);
	} else if (!n) {
		printf("(no verdicts)\n");
	}
	sl_maps_close(&m);
	return 0;
}

/* ---- events ----------------------------------------------------------------------------- */

static volatile sig_atomic_t stop_events;

static void on_stop(int sig)
{
	(void)sig;
	stop_events = 1;
}

struct ev_ctx {
	const struct ctl *c;
	const struct sl_maps *m;
	int64_t wall_off;
	uint64_t since_ns; /* skip the backlog: events from before we started */
	long seen;
};

static int on_event(void *arg, void *data, size_t len)
{
	struct ev_ctx *x = arg;
	const struct sl_event *e = data;
	char cls[32], line[SL_EVFMT_MAX];
	size_t n;

	if (len < sizeof(*e) || e->ts_ns < x->since_ns)
		return 0;
	if (x->c->count > 0 && x->seen >= x->c->count)
		return -ECANCELED;
	class_name(x->m, e->class_id, cls, sizeof(cls));
	n = sl_event_format(e, x->wall_off, cls, x->c->json, line, sizeof(line));
	fwrite(line, 1, n, stdout);
	fflush(stdout);
	x->seen++;
	/* One poll hands over everything queued (the backlog can be hundreds): stop inside it,
	 * leaving the rest in the ring, or --count would not bound what is printed. */
	if (x->c->count > 0 && x->seen >= x->c->count) {
		stop_events = 1;
		return -ECANCELED;
	}
	return 0;
}

/* No sluiced: read the pinned ring ourselves (its one consumer position: one such reader at
 * a time, and a sluiced that starts takes the ring over). */
static int events_direct(const struct ctl *c)
{
	struct ring_buffer *rb;
	struct sl_maps m;
	struct ev_ctx x = { .c = c };
	uint64_t start = sl_now_ns();

	if (open_pins(c, &m))
		return 1;
	x.m = &m;
	x.wall_off = sl_wall_offset_ns();
	/* Nobody drains the ring while sluiced is down: what is in it now is old news. The
	 * coarse clock may lag by a tick, hence the 10 ms of slack. */
	x.since_ns = c->backlog ? 0 : start - 10000000ull;
	rb = ring_buffer__new(m.events, on_event, &x, NULL);
	if (!rb) {
		fprintf(stderr, "sluicectl: cannot read the event ring: %s\n", strerror(errno));
		sl_maps_close(&m);
		return 1;
	}
	fprintf(stderr, "sluicectl: sluiced is not answering on %s: reading the pinned event "
		"ring directly (one such reader at a time)\n", c->socket);
	while (!stop_events) {
		int r = ring_buffer__poll(rb, 200);

		if (r < 0 && r != -EINTR)
			break;
		if (c->timeout > 0 && (double)(sl_now_ns() - start) / 1e9 >= c->timeout)
			break;
	}
	ring_buffer__free(rb);
	sl_maps_close(&m);
	return 0;
}

/* One line of sluiced's event stream: "e LINE" an event, "d LINE" what this reader lost.
 * Returns false once --count is reached. */
static bool events_line(const struct ctl *c, const char *l, size_t n, long *seen,
			unsigned long long *lost)
{
	if (n < 2 || l[1] != ' ')
		return true;
	if (l[0] == 'd') {
		const char *p = memmem(l, n, c->json ? "\"dropped\":" : " dropped ",
				       c->json ? 10 : 9);

		if (p)
			*lost += strtoull(p + (c->json ? 10 : 9), NULL, 10);
	} else if (l[0] != 'e') {
		return true;
	}
	fwrite(l + 2, 1, n - 2, stdout);
	fputc('\n', stdout);
	if (l[0] == 'e' && c->count > 0 && ++*seen >= c->count)
		return false;
	return true;
}

/*
 * `events`: sluiced reads the ring and fans every event out to each of its readers, so any
 * number of `events` and `top` see them all; a reader that falls behind loses its own
 * events and is told how many (a "dropped" line). Without a daemon, the ring is read here.
 */
static int cmd_events(const struct ctl *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char cmd[64], buf[65536];
	size_t used = 0;
	uint64_t start = sl_now_ns();
	unsigned long long lost = 0;
	long seen = 0;
	bool started = false, more = true;
	int fd, ep = -1, ret = 0;
	struct epoll_event ev = { .events = EPOLLIN };

	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	signal(SIGPIPE, SIG_IGN);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->socket);
	/* Until sluiced's first line; then reads follow epoll's word. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ .tv_sec = 10 },
		   sizeof(struct timeval));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return events_direct(c);
	}
	snprintf(cmd, sizeof(cmd), "events%s%s\n", c->json ? " json" : "",
		 c->backlog ? " backlog" : "");
	if (write(fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd)) {
		close(fd);
		return events_direct(c);
	}
	/* epoll, not poll: a test waits for this process's eventpoll fd to know the stream
	 * has begun (it is made once sluiced has said ok). */
	while (more && !stop_events) {
		char *nl;
		ssize_t r;
		int wait_ms = 200;

		if (c->timeout > 0) {
			double left = c->timeout - (double)(sl_now_ns() - start) / 1e9;

			if (left <= 0)
				break;
			if (left * 1000 < wait_ms)
				wait_ms = (int)(left * 1000) + 1;
		}
		if (ep >= 0) {
			int n = epoll_wait(ep, &ev, 1, wait_ms);

			if (n < 0 && errno != EINTR)
				break;
			if (n <= 0)
				continue;
		}
		r = read(fd, buf + used, sizeof(buf) - used - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (!started) {
				fprintf(stderr, "sluicectl: sluiced closed the control socket without "
					"answering\n");
				ret = 1;
			} else if (!stop_events) {
				fprintf(stderr, "sluicectl: sluiced ended the event stream (it "
					"stopped)\n");
			}
			break;
		}
		used += (size_t)r;
		buf[used] = '\0';
		while (more && (nl = memchr(buf, '\n', used))) {
			size_t n = (size_t)(nl - buf);

			if (!started) {
				*nl = '\0';
				if (strncmp(buf, "ok", 2)) {
					fprintf(stderr, "sluicectl: %s\n",
						!strncmp(buf, "error ", 6) ? buf + 6 : buf);
					close(fd);
					return 1;
				}
				started = true;
				if (!c->json)
					fprintf(stderr, "sluicectl: %s (Ctrl-C to stop)\n",
						buf[2] == ' ' ? buf + 3 : "streaming");
				ep = epoll_create1(EPOLL_CLOEXEC);
				if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
					fprintf(stderr, "sluicectl: epoll: %s\n", strerror(errno));
					close(fd);
					return 1;
				}
			} else {
				more = events_line(c, buf, n, &seen, &lost);
			}
			memmove(buf, nl + 1, used - n - 1);
			used -= n + 1;
		}
		fflush(stdout);
		if (used >= sizeof(buf) - 1)
			used = 0; /* a line longer than the buffer: not sluiced's; drop it */
	}
	fflush(stdout);
	if (lost && !c->json)
		fprintf(stderr, "sluicectl: this reader fell behind and lost %llu events\n", lost);
	if (ep >= 0)
		close(ep);
	close(fd);
	return ret;
}

/* ---- gateway ---------------------------------------------------------------------------- */

#define TENANTS_MAX_ANSWER (16u << 20)

/* `tenants`: the daemon renders both forms; we print the part after "ok". */
static int cmd_tenants(const struct ctl *c)
{
	char *buf = malloc(TENANTS_MAX_ANSWER);
	const char *body;
	int r;

	if (!buf) {
		fprintf(stderr, "sluicectl: out of memory\n");
		return 1;
	}
	r = ctl_call(c, c->json ? "tenants" : "tenants text", buf, TENANTS_MAX_ANSWER);
	if (r != 1) {
		free(buf);
		return run_ctl(c, "tenants", c->json ? "tenants" : "tenants text");
	}
	body = strchr(buf, '\n');
	fputs(body ? body + 1 : "", stdout);
	free(buf);
	return 0;
}

/* A document the daemon renders (wouldblock, distribution): print what follows "ok". */
static int cmd_daemon_doc(const struct ctl *c, const char *verb, const char *cmd)
{
	char *buf = malloc(TENANTS_MAX_ANSWER);
	const char *body;
	int r;

	if (!buf) {
		fprintf(stderr, "sluicectl: out of memory\n");
		return 1;
	}
	r = ctl_call(c, cmd, buf, TENANTS_MAX_ANSWER);
	if (r != 1) {
		free(buf);
		return run_ctl(c, verb, cmd);
	}
	body = buf + 2;
	if (*body == ' ' || *body == '\n')
		body++;
	fputs(body, stdout);
	free(buf);
	return 0;
}

/* One line of password from stdin, without echo on a terminal. Returns its length or -1. */
static ssize_t read_password(char *pwd, size_t n)
{
	struct termios old, quiet;
	bool tty = isatty(STDIN_FILENO);
	ssize_t len;

	if (tty) {
		fprintf(stderr, "password: ");
		tcgetattr(STDIN_FILENO, &old);
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
	}
	if (!fgets(pwd, (int)n, stdin))
		pwd[0] = '\0';
	if (tty) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
		fprintf(stderr, "\n");
	}
	len = (ssize_t)strlen(pwd);
	if (len && pwd[len - 1] != '\n' && !feof(stdin))
		return -1; /* longer than the buffer */
	if (len && pwd[len - 1] == '\n')
		pwd[--len] = '\0';
	if (len && pwd[len - 1] == '\r')
		pwd[--len] = '\0';
	return len;
}

static int cmd_user_add(const struct ctl *c, const char *tenant, const char *arg)
{
	struct sl_config *cfg = malloc(sizeof(*cfg));
	char err[4096], pwd[GW_PASS_MAX + 2], msg[256] = "", account[GW_USER_MAX + 1];
	char shown[GW_ESC_LEN(GW_USER_MAX + 1)];
	size_t alen = strnlen(arg, GW_USER_MAX + 1);
	ssize_t len;
	int ret = 1, r;

	if (!cfg || sodium_init() < 0) {
		fprintf(stderr, "sluicectl: cannot initialise (memory, libsodium)\n");
		free(cfg);
		return 1;
	}
	/* The name as the gateway keeps it (folded), refused before a password is asked. */
	memcpy(account, arg, alen > GW_USER_MAX ? GW_USER_MAX : alen);
	if (alen > GW_USER_MAX || !gw_account_norm(account, alen)) {
		gw_esc(shown, sizeof(shown), arg, alen, 0);
		fprintf(stderr, "sluicectl: the account name '%s' is not %s\n", shown,
			GW_ACCOUNT_RULE);
		goto out;
	}
	account[alen] = '\0';
	if (sl_config_load(c->config, NULL, cfg, err, sizeof(err))) {
		fprintf(stderr, "sluicectl: %s", err);
		goto out;
	}
	if (!cfg->gw.present || !cfg->gw.credentials[0]) {
		fprintf(stderr, "sluicectl: %s has no gateway.credentials file to add to\n",
			c->config);
		goto out;
	}
	len = read_password(pwd, sizeof(pwd));
	if (len < 0) {
		fprintf(stderr, "sluicectl: the password is longer than %d bytes\n", GW_PASS_MAX);
		goto out;
	}
	r = gw_creds_add(cfg->gw.credentials, cfg, tenant, account, pwd, (size_t)len, err,
			 sizeof(err));
	sodium_memzero(pwd, sizeof(pwd));
	if (r) {
		fprintf(stderr, "sluicectl: %s\n", err);
		goto out;
	}
	{
		/* The account as the gateway's audit lines write it: the keyed hash under
		 * gateway.session_key (without one the key is made at each start: no hash). */
		uint8_t key[GW_TOKEN_KEY_BYTES], h[16];
		char kerr[256];
		struct audit_rec a = { .event = AUDIT_OPERATOR, .tenant = tenant,
				       .reason = "user add", .decision = "added",
				       .detail = "credentials file appended" };

		if (cfg->gw.session_key[0] &&
		    !gw_token_key_load(cfg->gw.session_key, key, kerr, sizeof(kerr))) {
			sl_audit_account_hash(key, sizeof(key), tenant, account, strlen(account), h);
			a.account = h;
			sodium_memzero(key, sizeof(key));
		}
		audit_cli(c, cfg, &a);
	}
	/* A running gateway learns about it through a reload (which re-reads the file). */
	{
		char buf[1024];

		r = ctl_call(c, "reload", buf, sizeof(buf));
		if (r == 1)
			snprintf(msg, sizeof(msg), "sluiced reloaded");
		else if (r == 0)
			snprintf(msg, sizeof(msg), "sluiced refused the reload: %.200s", buf + 5);
		else
			snprintf(msg, sizeof(msg), "sluiced is not running: it reads the file at "
				 "start");
		strip_nl(msg);
	}
	if (c->json) {
		struct json j;

		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "command", "user add");
		json_bool(&j, "ok", true);
		json_str(&j, "tenant", tenant);
		json_str(&j, "account", account);
		json_str(&j, "file", cfg->gw.credentials);
		json_str(&j, "message", msg);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("added %s to tenant %s in %s (%s)\n", account, tenant, cfg->gw.credentials,
		       msg);
	}
	ret = 0;
out:
	free(cfg);
	return ret;
}

/* ---- asn import ------------------------------------------------------------------------- */

/* Write @t to @path through a temporary file beside it and a rename, so that sluiced (at a
 * start or reload reading edge.asn_table) sees the old table or the new one, never a part. */
static int write_table(const char *path, const struct sl_imp_table *t,
		       const struct sl_classmap *m, const char *source)
{
	char tmp[PATH_MAX + 32];
	FILE *f;
	int ret;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		ret = -errno;
		fprintf(stderr, "sluicectl: %s: cannot write: %s\n", tmp, strerror(-ret));
		return ret;
	}
	ret = sl_imp_write_csv(t, m, source, f);
	if (fflush(f) || fsync(fileno(f)))
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -EIO;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		fprintf(stderr, "sluicectl: %s: cannot write: %s\n", path, strerror(-ret));
		unlink(tmp);
	}
	return ret;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sources -> ranges -> prefixes -> --output; then the same check and swap as `asn load`:
 * the file is parsed here by the loader sluiced uses (so a bad table stops before it is
 * offered) and sluiced is asked to load it, which validates it again and swaps it in whole.
 * Exit 0 only once sluiced has it (or with --no-load, once it is written and checked). */
static int cmd_asn_import(const struct ctl *c, char **sources, int n_sources)
{
	struct sl_config *cfg = malloc(sizeof(*cfg));
	struct sl_imp_set set = { 0 };
	struct sl_imp_table t = { 0 };
	struct sl_asn_table check = { 0 };
	struct sl_classmap m = { 0 };
	enum sl_imp_format fmt = (enum sl_imp_format)c->format;
	char *err = malloc(16384), abs[PATH_MAX], msg[1024] = "", reply[8192];
	double t0 = mono_s(), t_read, t_build, t_check;
	int ret = 1, r, loaded = -1, k;
	char source[1024] = "";
	size_t i, sl = 0;

	if (!cfg || !err) {
		fprintf(stderr, "sluicectl: out of memory\n");
		goto out_free;
	}
	err[0] = '\0';
	if (sl_config_load(c->config, NULL, cfg, err, 16384)) {
		fprintf(stderr, "sluicectl: the classes come from the config: %s", err);
		goto out_free;
	}
	if (sl_classmap_load(c->map, cfg, c->dflt[0] ? c->dflt : NULL, &m, err, 16384)) {
		fprintf(stderr, "sluicectl: asn import: the class map is refused:\n%s", err);
		goto out_free;
	}
	if (n_sources > 8) {
		ret = usage_error("asn import", "more than 8 sources");
		goto out;
	}
	for (k = 0; k < n_sources; k++) {
		enum sl_imp_format f = fmt == SL_IMP_AUTO ? sl_imp_detect(sources[k]) : fmt;

		sl += (size_t)snprintf(source + sl, sizeof(source) - sl, "%s%s (%s)",
				       k ? ", " : "", sources[k], sl_imp_format_name(f));
		if (sl >= sizeof(source))
			sl = sizeof(source) - 1;
		if (sl_imp_read(sources[k], f, &m, &set, err, 16384)) {
			fprintf(stderr, "sluicectl: asn import: %s (%s) is refused; nothing was "
				"written:\n%s", sources[k], sl_imp_format_name(f), err);
			goto out;
		}
	}
	t_read = mono_s();
	if (sl_imp_build(&set, &t, err, 16384)) {
		fprintf(stderr, "sluicectl: asn import: no table made; nothing was written:\n%s",
			err);
		goto out;
	}
	t_build = mono_s();
	if (write_table(c->output, &t, &m, source))
		goto out;
	if (sl_asn_load_csv(c->output, cfg, &check, err, 16384)) {
		fprintf(stderr, "sluicectl: asn import: the table written to %s does not load "
			"(a bug: please report it):\n%s", c->output, err);
		goto out;
	}
	t_check = mono_s();
	if (!realpath(c->output, abs))
		snprintf(abs, sizeof(abs), "%s", c->output);
	if (c->no_load) {
		snprintf(msg, sizeof(msg), "not loaded (--no-load): sluicectl asn load %s", abs);
		ret = 0;
	} else {
		char line[PATH_MAX + 16];

		snprintf(line, sizeof(line), "asn-load %s", abs);
		r = ctl_call(c, line, reply, sizeof(reply));
		strip_nl(reply);
		loaded = r == 1;
		if (r == 1)
			snprintf(msg, sizeof(msg), "sluiced: %s", reply + 3);
		else if (r == 0)
			snprintf(msg, sizeof(msg), "sluiced refused it, the running table stays: %s",
				 reply + 6);
		else
			snprintf(msg, sizeof(msg), "sluiced is not answering on %s (%s); the table is "
				 "written: sluicectl asn load %s once it runs", c->socket,
				 strerror(-r), abs);
		ret = r == 1 ? 0 : 1;
	}
	if (c->json) {
		struct json j;

		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "command", "asn import");
		json_bool(&j, "ok", ret == 0);
		json_arr_begin(&j, "sources");
		for (k = 0; k < n_sources; k++)
			json_str(&j, NULL, sources[k]);
		json_arr_end(&j);
		json_str(&j, "map", c->map);
		json_str(&j, "output", abs);
		json_u64(&j, "records", set.lines);
		json_u64(&j, "ranges", set.ranges);
		json_u64(&j, "skipped_as0", set.skipped_as0);
		json_u64(&j, "skipped_aliases", set.skipped_alias);
		json_u64(&j, "overlaps", t.overlaps);
		json_u64(&j, "rows", t.n);
		json_u64(&j, "rows_replaced", check.replaced);
		json_u64(&j, "v4_prefixes", t.v4);
		json_u64(&j, "v6_prefixes", t.v6);
		json_u64(&j, "v4_longer_than_24", t.v4_long);
		json_u64(&j, "v4_24s_in_trie", t.v4_trie_24s);
		json_arr_begin(&j, "classes");
		for (i = 0; i < m.n_classes; i++) {
			json_obj_begin(&j, NULL);
			json_str(&j, "class", m.classes[i]);
			json_u64(&j, "rows", t.per_class_rows[i]);
			json_u64(&j, "v4_addresses", t.per_class_v4[i]);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_double(&j, "read_s", t_read - t0);
		json_double(&j, "build_s", t_build - t_read);
		json_double(&j, "check_s", t_check - t_build);
		if (loaded < 0)
			json_null(&j, "loaded");
		else
			json_bool(&j, "loaded", loaded);
		json_str(&j, "message", msg);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("read     %s: %zu records, %zu ranges", source, set.lines, set.ranges);
		if (set.skipped_as0)
			printf(", %zu with AS 0 (not routed) left out", set.skipped_as0);
		if (set.skipped_alias)
			printf(", %zu aliases of IPv4 left out", set.skipped_alias);
		if (t.overlaps)
			printf(", %zu overlapping (the narrower wins)", t.overlaps);
		printf("\ntable    %s: %zu rows (%zu IPv4, %zu IPv6); %zu IPv4 rows longer than /24 "
		       "put %zu /24s on the trie\n", abs, t.n, t.v4, t.v6, t.v4_long, t.v4_trie_24s);
		for (i = 0; i < m.n_classes; i++)
			printf("class    %-12s %9zu rows %12llu IPv4 addresses\n", m.classes[i],
			       t.per_class_rows[i], (unsigned long long)t.per_class_v4[i]);
		printf("time     read %.2fs, build %.2fs, write and check %.2fs\n", t_read - t0,
		       t_build - t_read, t_check - t_build);
		fprintf(ret ? stderr : stdout, "%s%s\n", ret ? "sluicectl: " : "load     ", msg);
	}
	sl_asn_free(&check);
out:
	sl_imp_table_free(&t);
	sl_imp_set_free(&set);
	sl_classmap_free(&m);
out_free:
	free(err);
	free(cfg);
	return ret;
}

/* ---- main ------------------------------------------------------------------------------- */

static void resolve_paths(struct ctl *c, bool pin_given, bool sock_given)
{
	char pin[PATH_MAX] = SL_DEFAULT_PIN_PATH, sock[PATH_MAX] = SL_DEFAULT_CTL_SOCKET;
	struct sl_maps m;
	struct sl_meta meta;

	if (sl_config_peek(c->config, pin, sizeof(pin), sock, sizeof(sock), c->ifaces,
			   sizeof(c->ifaces)) && c->config_given)
		fprintf(stderr, "sluicectl: warning: cannot parse %s; using default paths\n",
			c->config);
	if (!pin_given)
		snprintf(c->pin_path, sizeof(c->pin_path), "%s", pin);
	if (sock_given)
		return;
	snprintf(c->socket, sizeof(c->socket), "%s", sock);
	/* The daemon records the socket it really listens on: trust that over the file. */
	if (!sl_maps_open_pinned(&m, c->pin_path)) {
		if (!sl_maps_read_meta(&m, &meta) && meta.ctl_socket[0])
			snprintf(c->socket, sizeof(c->socket), "%s", meta.ctl_socket);
		sl_maps_close(&m);
	}
}

/* The words of @args from the @skip-th on ("TENANT ACCOUNT", 1: "ACCOUNT"). */
static const char *args_from(const char *args, int skip)
{
	while (skip-- > 0 && *args) {
		args += word_len(args);
		args += *args == ' ';
	}
	return args;
}

static int count_words(const char *s)
{
	int n = 0;

	while (*s) {
		n++;
		s = args_from(s, 1);
	}
	return n;
}

/* The command @words name (a group word and, for groups, its subcommand), with *@used set to
 * how many words that took; NULL after telling the user what is wrong. */
static const struct command *find_command(char **words, int n, int *used)
{
	char subs[128] = "";
	size_t i, len = 0;
	int k = 0, total = 0;

	for (i = 0; i < N_COMMANDS; i++) {
		const struct command *cmd = &commands[i];
		size_t l = word_len(cmd->name);

		if (!in_group(cmd, words[0]))
			continue;
		if (!cmd->name[l]) {
			*used = 1;
			return cmd;
		}
		if (n > 1 && !strcmp(cmd->name + l + 1, words[1])) {
			*used = 2;
			return cmd;
		}
		total++;
	}
	if (!total) {
		usage_error(NULL, "unknown command '%s'", words[0]);
		return NULL;
	}
	/* "add, list or del" */
	for (i = 0; i < N_COMMANDS; i++) {
		if (!in_group(&commands[i], words[0]))
			continue;
		k++;
		len += (size_t)snprintf(subs + len, sizeof(subs) - len, "%s%s",
					k == 1 ? "" : k == total ? " or " : ", ",
					commands[i].name + word_len(commands[i].name) + 1);
		if (len >= sizeof(subs))
			break;
	}
	if (n < 2)
		usage_error(words[0], "missing subcommand (%s)", subs);
	else
		usage_error(words[0], "unknown subcommand '%s' (%s)", words[1], subs);
	return NULL;
}

/* `sluicectl help [COMMAND [SUB]]`, or (@flag) `COMMAND --help`. */
static int cmd_help(char **words, int n, bool flag)
{
	size_t i;

	if (n < 1) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < N_COMMANDS; i++)
		if (in_group(&commands[i], words[0])) {
			group_usage(words[0], stdout);
			return 0;
		}
	if (!strcmp(words[0], "help")) {
		printf("Usage: sluicectl help [COMMAND]\n\n"
		       "  help [COMMAND]         every command, or one command's usage and its "
		       "options\n");
		return 0;
	}
	return usage_error(NULL, "%sunknown command '%s'", flag ? "" : "help: ", words[0]);
}

int main(int argc, char **argv)
{
	struct ctl c = { 0 };
	const struct command *cmd;
	char bad[512] = "", later[512]; /* the first bad option, told once the command is known */
	unsigned int given = 0, extra;
	int opt, used, nargs, first;
	char **arg;

	snprintf(c.config, sizeof(c.config), "%s", SL_DEFAULT_CONFIG);
	log_set_level(LOG_LVL_WARN);
	log_hook_libbpf();
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":c:p:n:o:jVh", long_opts, NULL)) != -1) {
		const struct opt_info *oi;

		if (opt == '?' || opt == ':') {
			oi = optopt ? opt_by_val(optopt) : NULL;
			if (bad[0])
				continue;
			if (opt == ':')
				snprintf(bad, sizeof(bad), "%s needs a value",
					 oi ? oi->name : argv[optind - 1]);
			else if (optopt)
				snprintf(bad, sizeof(bad), "unknown option '-%c'", optopt);
			else
				snprintf(bad, sizeof(bad), "unknown option '%s'", argv[optind - 1]);
			continue;
		}
		oi = opt_by_val(opt);
		given |= oi ? oi->bit : 0;
		/* Only the first bad value is reported: later ones land in @later. */
		parse_opt(&c, opt, optarg, bad[0] ? later : bad, sizeof(bad));
	}
	if (given & O_VERSION) {
		printf("sluicectl %s\n", SLUICE_VERSION);
		return 0;
	}
	if (optind >= argc) {
		if (given & O_HELP) {
			usage(stdout);
			return 0;
		}
		return usage_error(NULL, "%s", bad[0] ? bad : "missing COMMAND");
	}
	arg = argv + optind;
	/* `verdict --help` is `help verdict`, whatever else is on the line. */
	if (given & O_HELP)
		return cmd_help(arg, argc - optind, true);
	if (!strcmp(arg[0], "help"))
		return cmd_help(arg + 1, argc - optind - 1, false);
	cmd = find_command(arg, argc - optind, &used);
	if (!cmd)
		return 2;
	if (bad[0])
		return usage_error(cmd->name, "%s", bad);
	first = optind + used;
	nargs = count_words(cmd->args);
	if (argc - first < nargs)
		return usage_error(cmd->name, "missing %s", args_from(cmd->args, argc - first));
	if (argc - first > nargs && cmd->id != CMD_ASN_IMPORT) /* asn import: SOURCE... */
		return usage_error(cmd->name, "unexpected argument '%s'", argv[first + nargs]);
	extra = given & ~(O_GLOBAL | cmd->opts);
	if (extra) {
		const struct opt_info *oi = NULL;
		char owners[128] = "";
		size_t i, len = 0;

		for (i = 0; i < sizeof(opt_info) / sizeof(opt_info[0]); i++)
			if (opt_info[i].bit & extra) {
				oi = &opt_info[i];
				break;
			}
		for (i = 0; oi && i < N_COMMANDS && len < sizeof(owners); i++)
			if (commands[i].opts & oi->bit)
				len += (size_t)snprintf(owners + len, sizeof(owners) - len, "%s%s",
							len ? ", " : "", commands[i].name);
		return usage_error(cmd->name, "%s does not apply here (it is for %s)",
				   oi ? oi->name : "an option", owners);
	}
	resolve_paths(&c, given & O_PIN, given & O_SOCKET);

	switch (cmd->id) {
	case CMD_STATUS:
		return cmd_status(&c);
	case CMD_STATS:
		return cmd_stats(&c);
	case CMD_LEASES:
		return cmd_leases(&c);
	case CMD_WOULDBLOCK: {
		char line[64];

		snprintf(line, sizeof(line), "wouldblock %.3f%s", c.since, c.json ? " json" : "");
		return cmd_daemon_doc(&c, "wouldblock", line);
	}
	case CMD_DISTRIBUTION:
		return cmd_daemon_doc(&c, "distribution", c.json ? "distribution json" :
						       "distribution");
	case CMD_PREFIX_SHOW:
		return cmd_prefix_show(&c, argv[first]);
	case CMD_VERDICT_ADD:
		return cmd_verdict_add(&c, argv[first]);
	case CMD_VERDICT_DEL:
		return cmd_verdict_del(&c, argv[first]);
	case CMD_VERDICT_LIST:
		return cmd_verdict_list(&c);
	case CMD_EVENTS:
		return cmd_events(&c);
	case CMD_RELOAD:
		return run_ctl(&c, "reload", "reload");
	case CMD_TOP: {
		struct top_opts to = { .config = c.config, .socket = c.socket,
				       .pin_path = c.pin_path, .interval = c.interval,
				       .count = c.count, .once = c.once, .json = c.json };

		return sluicectl_top(&to);
	}
	case CMD_TENANTS:
		return cmd_tenants(&c);
	case CMD_LIMITS:
		return cmd_daemon_doc(&c, "limits", c.json ? "limits json" : "limits");
	case CMD_CLEAR_PREFIX:
		return cmd_clear_prefix(&c, argv[first]);
	case CMD_CLEAR_ACCOUNT:
		return cmd_clear_account(&c, argv[first], argv[first + 1]);
	case CMD_CONFIG_SHOW:
		return cmd_config_show(&c);
	case CMD_USER_ADD:
		return cmd_user_add(&c, argv[first], argv[first + 1]);
	case CMD_ASN_LOAD: {
		char abs[PATH_MAX], line[PATH_MAX + 16];

		/* The daemon runs elsewhere (cwd "/"): send it an absolute path. */
		if (!realpath(argv[first], abs)) {
			fprintf(stderr, "sluicectl: %s: %s\n", argv[first], strerror(errno));
			return 1;
		}
		snprintf(line, sizeof(line), "asn-load %s", abs);
		return run_ctl(&c, "asn load", line);
	}
	case CMD_ASN_IMPORT:
		if (!c.map[0])
			return usage_error(cmd->name, "missing --map FILE (the ASN -> class map)");
		if (!c.output[0])
			return usage_error(cmd->name, "missing --output FILE (where the table goes)");
		return cmd_asn_import(&c, argv + first, argc - first);
	case CMD_DETACH: {
		char buf[64];

		if (ctl_call(&c, "ping", buf, sizeof(buf)) == 1)
			return run_ctl(&c, "detach", "detach");
		return detach_offline(&c);
	}
	}
	return 2;
}
