/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The sluice configuration: one libconfig file read by sluiced and sluicectl. Loading is all
 * or nothing: sl_config_load() validates every value and, on any error, returns -EINVAL with
 * one "file:line: reason" line per problem and leaves the caller's running config untouched.
 * What loads but is likely a mistake (a budget that admits less than one of a port's dearest
 * requests a minute) is a warning instead: "file:line: warning: reason" lines in the loaded
 * config's warnings, which sluiced logs and --check-config prints.
 * docs/configuration.md is the reference for every key.
 */
#ifndef SLUICE_CONFIG_H
#define SLUICE_CONFIG_H

#include <limits.h>
#include <net/if.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "sluice/abi.h"

#define SL_DEFAULT_CONFIG "/etc/sluice/sluice.conf"
#define SL_DEFAULT_PIN_PATH "/sys/fs/bpf/sluice"
#define SL_DEFAULT_CTL_SOCKET "/run/sluice/ctl.sock"
#define SL_MIN_STATE_ENTRIES 16u
#define SL_MAX_STATE_ENTRIES (1u << 26)
#define SL_MAX_PORT_COST 1000000u
#define SL_WARNINGS_LEN 4096

enum sl_xdp_mode {
	SL_XDP_NATIVE = 0, /* driver mode; the only one worth running in production */
	SL_XDP_GENERIC,    /* skb mode: for interfaces without driver support, and tests */
};

struct sl_class_cfg {
	char name[SL_CLASS_NAME_LEN];
	uint8_t v4_prefix, v6_prefix, v4_parent, v6_parent;
	double rate, burst, parent_rate, parent_burst;
	uint8_t mode; /* enum sl_mode */
};

struct sl_port_cfg {
	uint16_t port;
	uint8_t front;  /* enum sl_front */
	uint8_t action; /* enum sl_action */
	uint8_t proto;  /* enum sl_proto */
	uint32_t cost;
	/* stateless front: what a first request the edge cannot read whole costs (0 in the
	 * file: the port's most expensive route, computed once the routes are read) */
	uint32_t unreadable_cost;
	bool unreadable_set;
};

#define SL_MAX_ROUTES 64
#define SL_ROUTE_PATH_LEN 64
#define SL_ROUTE_NAME_LEN 32
#define SL_UPSTREAM_URL_LEN 128
/* an upstream's address literal, or (port 0) its Unix socket's path */
#define SL_UPSTREAM_ADDR_LEN 108
#define SL_MAX_UPSTREAM_ADDRS 16
#define SL_VERDICT_NAME_LEN 64   /* a verdict header's name, a JSON field's dotted path */
#define SL_VERDICT_VALUES 8      /* values in a verdict's success and failure lists */
#define SL_VERDICT_VALUE_LEN 32  /* bytes of one, with the NUL */
#define SL_VERDICT_PATH_MAX 8    /* segments of a JSON field's path */

/* A route: method + path prefix -> cost in each budget. One cost unit is 100 us of CPU. */
struct sl_route_cfg {
	char name[SL_ROUTE_NAME_LEN];
	uint8_t method;                /* enum sl_method; SL_M_OTHER: any method */
	char path[SL_ROUTE_PATH_LEN];  /* prefix, starting with '/' */
	double cpu;                    /* cost units (the edge charges these) */
	double db;                     /* concurrent database slots (the gateway) */
	/* upstream mode: "" serves it as gateway.upstream says (the built-in endpoint when
	 * there is none); "builtin": the built-in endpoint; else "http://ADDR:PORT" */
	char upstream[SL_UPSTREAM_URL_LEN];
	/* upstream mode: at most this many of its forwards in flight to one upstream (its
	 * class's concurrency, the learned limit's ceiling); 0: the upstream's connections */
	uint32_t concurrency;
	/* upstream mode: this route signs people in (routes[].login): where the account name
	 * is, and which of the upstream's statuses are a success or a failed sign-in */
	struct sl_route_login {
		uint8_t from;          /* enum sl_login_from; SL_LOGIN_NONE: not a sign-in */
		char user[32], password[32]; /* the body's field names (form, json) */
		uint16_t success[8], failure[8];
		uint8_t n_success, n_failure;
		/* routes[].login.header / .json: inside a `success` status, the verdict is what
		 * this header or JSON field of the answer says (docs/gateway.md, "The verdict
		 * from a header or a JSON field") */
		uint8_t by;            /* enum sl_verdict_by */
		char by_name[SL_VERDICT_NAME_LEN]; /* the header's name, the field's dotted path */
		char ok[SL_VERDICT_VALUES][SL_VERDICT_VALUE_LEN];
		char no[SL_VERDICT_VALUES][SL_VERDICT_VALUE_LEN];
		uint8_t n_ok, n_no;
	} login;
};

enum sl_verdict_by {
	SL_VERDICT_STATUS = 0,         /* the status lists alone */
	SL_VERDICT_HEADER,             /* routes[].login.header */
	SL_VERDICT_JSON,               /* routes[].login.json */
};

enum sl_login_from {
	SL_LOGIN_NONE = 0,
	SL_LOGIN_BASIC,                /* Authorization: Basic */
	SL_LOGIN_FORM,                 /* application/x-www-form-urlencoded */
	SL_LOGIN_JSON,                 /* a JSON object */
};

#define SL_MAX_TENANT_HOSTS 8
#define SL_HOST_LEN 64

struct sl_gateway_cfg {
	int present;
	char listen[128];              /* "ADDR:PORT" or "[ADDR6]:PORT" */
	char credentials[PATH_MAX];    /* tenant,account,PHC-string; resolved like asn_table */
	double cap_cpu, cap_db;        /* units per second per budget */
	uint32_t target_wait_ms, lifo_after_ms, codel_interval_ms;
	uint32_t default_deadline_ms, max_deadline_ms;
	uint32_t m_cost_kib, t_cost, parallelism, memory_budget_mib;
	uint32_t trusted_hops;
	int admission;                 /* 0: unbounded FIFO, no deadline check (benchmarks) */
	uint32_t max_body;             /* bytes */
	uint32_t max_headers;          /* bytes */
	uint32_t workers;              /* Argon2id threads: memory_budget / m_cost, capped */
	uint32_t max_depth;            /* queue.max_depth: ceiling on the Little's-law depth */
	uint32_t reject_floor_ms;      /* every 401/429 is answered no sooner than this */
	uint32_t max_held;             /* connections held by that floor at once */
	uint32_t max_connections;      /* open client connections; accept pauses above it */
	uint32_t max_conns_prefix;     /* of them, one source prefix's (counters.prefix_*) */
	uint32_t max_conns_parent;     /* and its parent's (counters.parent_*) */
	uint32_t max_requests_conn;    /* requests a connection carries; then it is closed */
	uint32_t request_timeout_ms;   /* a whole request must arrive within this */
	uint32_t drain_ms;             /* SIGTERM/SIGQUIT: what is in flight has this long */
	/* upstream mode (gw_upstream.c): admitted requests are forwarded here */
	struct {
		char url[SL_UPSTREAM_URL_LEN]; /* "http://ADDR:PORT"; "": built-in endpoints */
		uint32_t concurrency;  /* forwards in flight at once, per upstream: its pool */
		uint32_t timeout_ms;   /* a whole answer within (and within the deadline) */
		uint32_t max_response; /* bytes of an answer's body; more: 502 */
		uint32_t down_ms;      /* after a refused connect, shed (429) this long */
		int adaptive;          /* learn each class's limit from its service time */
	} up;
	uint32_t token_ttl_s;          /* session token lifetime */
	char session_key[PATH_MAX];    /* 64 hex chars (32-byte MAC key); empty: random */
	/* the endpoints beyond /login (docs/endpoints.md) */
	uint32_t refresh_ttl_s;        /* refresh tokens */
	uint32_t otp_ttl_s;            /* one-time codes */
	uint32_t magic_ttl_s;          /* magic links */
	char delivery[16];             /* "log": codes and links written to delivery_log */
	char delivery_log[PATH_MAX];   /* empty: the daemon's log (stderr) */
	char link_base[128];           /* prefix of the links sent ("https://HOST") */
	int login_uniform;             /* a throttled login answers like a failed one */
	uint32_t active_tenants;       /* the floor's divisor; 0: every configured tenant */
	struct {                       /* gateway.tls (user/gateway/gw_tls.h) */
		char certificate[PATH_MAX]; /* PEM, chain after the leaf; empty: plaintext */
		char key[PATH_MAX];        /* PEM, unencrypted */
		uint8_t min_version;       /* 12 or 13 */
		char file[PATH_MAX];       /* where the group is, for file:line problems */
		int certificate_line, key_line;
	} tls;
	/* gateway.credentials_db (gw_pg.c, docs/credentials.md): accounts in PostgreSQL */
	struct sl_credentials_db {
		int present;
		char conninfo[1024];       /* libpq keyword=value string or URI; never logged */
		char conninfo_file[PATH_MAX]; /* or a file holding it (mode 0600) */
		char lookup[1024];         /* $1 tenant, $2 account -> one row, one PHC column */
		char insert[1024];         /* $1 tenant, $2 account, $3 PHC; "": no sign-ups */
		char update[1024];         /* $1 tenant, $2 account, $3 PHC; "": no resets */
		uint32_t pool;             /* connections */
		uint32_t timeout_ms;       /* a query's bound, from its submission */
		uint32_t queue;            /* queries waiting for a connection, at most */
		uint32_t retry_after_s;    /* the 503's Retry-After under fail = "closed" */
		int fail;                  /* enum sl_db_fail */
	} db;
};

/* What a sign-in does when the credentials database cannot answer (docs/credentials.md). */
enum sl_db_fail {
	SL_DB_FAIL_CLOSED = 0,         /* 503 with Retry-After: nobody is checked */
	SL_DB_FAIL_FILE = 1,           /* the flat gateway.credentials file answers instead */
};

#define SL_MAX_CLIENTS 64
#define SL_CLIENT_ID_LEN 64

enum sl_grant {
	SL_GRANT_CLIENT_CREDENTIALS = 1u << 0,
	SL_GRANT_REFRESH_TOKEN = 1u << 1,
};

/* An OAuth client of /token. Its secret is kept as a BLAKE2b-256 hash (secrets are random,
 * so a fast hash is enough); rate and burst are its per-principal limit. */
struct sl_client_cfg {
	char id[SL_CLIENT_ID_LEN];
	int tenant;                    /* index in tenants */
	uint8_t secret_hash[32];
	uint8_t grants;                /* enum sl_grant bits */
	double rate, burst;            /* tokens per second, at once; 0: counters.token_client */
};

#define SL_MAX_TENANT_LISTEN 8

struct sl_tenant_cfg {
	char name[SL_TENANT_NAME_LEN];
	struct {
		uint8_t family;
		uint8_t addr[16];
		uint16_t port;
	} listen[SL_MAX_TENANT_LISTEN];
	int n_listen;
	double rate, burst;               /* this node's lease, until leases come from Redis */
	double static_rate, static_burst; /* the conservative rate once a lease has expired */
	uint32_t lease_ttl_s;
	uint8_t mode;
	int edge_budget;                  /* rate/burst given: the edge charges this tenant */
	char hosts[SL_MAX_TENANT_HOSTS][SL_HOST_LEN]; /* lowercase, no port */
	int n_hosts;
	double reservation;               /* gateway: units/s always admitted (cpu budget) */
	double ceiling;                   /* gateway.ceilings: units/s at most, reserved and
					   * burst together (the courtesy); 0: capacity.cpu */
	/* upstream mode: where this tenant's routes go when the route names none; "": as
	 * gateway.upstream.url says; "builtin": the built-in endpoints */
	char upstream[SL_UPSTREAM_URL_LEN];
};

/* Shared state (docs/configuration.md, "redis", "cluster", "counters"). */
#define SL_REDIS_MAX_SENTINELS 8
struct sl_redis_cfg {
	char address[256];          /* "unix:/path" or "HOST:PORT"; empty: in-process only;
				     * with redis.sentinels, "sentinel:MASTER@HOST:PORT,...";
				     * with redis.cluster, "cluster:HOST:PORT,..." (seeds)
				     * (sl_store_target_parse reads all three) */
	char user[64];              /* ACL user; empty: AUTH with the password alone */
	char password[256];         /* AUTH on every connection; never logged or shown */
	uint32_t timeout_ms;        /* per call */
	uint32_t breaker_failures;  /* consecutive failures that open the breaker */
	uint32_t breaker_open_ms;   /* how long it stays open before one probe */
	char key_prefix[32];
};

struct sl_cluster_cfg {
	char node[64];              /* this node's name in lease reports; default: hostname */
	uint32_t nodes;             /* N: fail-open counters limit at limit / N */
	uint32_t lease_interval_ms; /* demand report and lease refresh period */
	uint32_t demand_window_ms;  /* demand is the cost units seen over this window */
	double lease_floor;         /* least share of a budget a node with demand holds */
};

/* The gateway's shared counters. */
enum sl_counter_id {
	SL_CTR_LOGIN_FAILURES = 0, /* per (account named, source prefix), whether it exists or not */
	SL_CTR_LOGIN_SUCCESSES,    /* per (account, source prefix), generous */
	SL_CTR_TENANT_LOGINS,      /* per tenant: password logins across the cluster (capacity) */
	/* The other endpoints (docs/endpoints.md). */
	SL_CTR_TOKEN_FAILURES,     /* /token: per (client_id, source prefix), before auth */
	SL_CTR_TOKEN_CLIENT,       /* /token: per authenticated client (the principal dial) */
	SL_CTR_TENANT_TOKENS,      /* /token: tokens issued per tenant (capacity) */
	SL_CTR_MFA_ATTEMPTS,       /* /mfa/verify: per account, whatever the code */
	SL_CTR_MFA_SENDS,          /* /mfa/send: per account */
	SL_CTR_OUTBOUND,           /* messages handed to the delivery, per tenant (capacity) */
	SL_CTR_RESET_ACCOUNT,      /* /password-reset: per account named */
	SL_CTR_RESET_PREFIX,       /* /password-reset: per source prefix */
	SL_CTR_RESET_TENANT,       /* /password-reset: per tenant */
	SL_CTR_REGISTER_ACCOUNT,   /* /register: per account named */
	SL_CTR_REGISTER_PREFIX,    /* /register: per source prefix */
	SL_CTR_REGISTER_TENANT,    /* /register: per tenant */
	SL_CTR_MAGIC_PREFIX,       /* POST /magic/{token}: per source prefix */
	SL_CTR_USER,               /* per authenticated account (the principal dial) */
	SL_CTR_LOGIN_PARENT,       /* failures per (account named, parent prefix): the allocation */
	SL_CTR_N,
};

struct sl_counter_cfg {
	int enabled;
	double rate, burst;             /* per second and at once, across all nodes */
	uint8_t fail;                   /* 0 open (limit / N), 1 closed (the static budget) */
	double static_rate, static_burst; /* fail closed: this node's budget while Redis is out */
	uint32_t max_keys;              /* live keys per tenant; 0: no cap */
};

/* The stream job's detectors (docs/configuration.md, "stream"). */
enum sl_detector_id {
	SL_DET_PREFIX_ACCOUNTS = 0, /* distinct accounts failed per source prefix */
	SL_DET_ASN_ACCOUNTS,        /* distinct accounts failed per ASN */
	SL_DET_ACCOUNT_SOURCES,     /* distinct source prefixes failed per account */
	SL_DET_PASSWORD_ACCOUNTS,   /* distinct accounts tried with one (hashed) password */
	SL_DET_TENANT_RATIO,        /* a tenant's failure ratio against its trailing baseline */
	SL_DET_ACCOUNT_KEYS,        /* distinct key prefixes failed per (account, allocation) */
	SL_DET_N,
};

enum sl_det_action {
	SL_DET_BLOCK = 0,   /* an XDP verdict that drops the prefix's SYNs */
	SL_DET_TIGHTEN,     /* an XDP verdict that scales the prefix's buckets by factor */
	SL_DET_LADDER,      /* accounts: delay, then step-up, in the gateway */
	SL_DET_STEP_UP,     /* passwords, (account, allocation): answer step_up_required */
	SL_DET_ALERT,       /* record and count only */
};

struct sl_detector_cfg {
	int enabled;
	uint8_t mode;        /* enum sl_mode: enforce or monitor */
	uint8_t action;      /* enum sl_det_action */
	double threshold;    /* distinct count in the window (tenant ratio: x baseline) */
	double factor;       /* tighten: rate and burst x factor */
	uint32_t ttl_s;      /* how long what it does lasts */
};

struct sl_stream_cfg {
	int enabled;
	uint32_t window_s;          /* sliding window of the distinct counts */
	uint32_t queue;             /* outcome events in flight (a power of two) */
	uint8_t prefix_v4, prefix_v6; /* the source prefix the detectors key by */
	uint32_t max_keys;          /* per detector; the least recently seen go first */
	uint32_t redis_max_keys;    /* with Redis: live HyperLogLog keys per tenant; 0 no cap */
	uint32_t tail_per_day;      /* attempts per account per day above which it is non-human */
	uint32_t min_attempts;      /* tenant ratio: attempts in the window before it judges */
	uint32_t baseline_s;        /* tenant ratio: the trailing baseline's time constant */
	uint32_t records;           /* would-block and block records kept */
	uint32_t ladder_delay_ms;   /* account ladder, first step */
	struct sl_detector_cfg det[SL_DET_N];
};

struct sl_config {
	char path[PATH_MAX];
	/* What loaded but looks wrong: "file:line: warning: reason" lines, n_warnings of them
	 * (the text may be cut short; the count is not). Empty when there is nothing to say. */
	char warnings[SL_WARNINGS_LEN];
	int n_warnings;

	/* edge */
	char ifaces[SL_MAX_IFACES][IF_NAMESIZE];
	int n_ifaces;
	uint8_t xdp_mode;
	struct sl_port_cfg ports[SL_MAX_PORTS];
	int n_ports;
	uint32_t state_entries;
	char asn_table[PATH_MAX]; /* absolute, or empty for none */
	double new_key_credit;    /* 0 < c <= 1 */
	uint8_t malformed_action;
	uint8_t fragment_action;
	char pin_path[PATH_MAX];
	uint32_t retry_after[SL_MAX_RETRY_LEVELS]; /* seconds, by shed streak */
	int n_retry;
	uint32_t streak_decay_s;
	uint32_t pend_ttl_s;      /* SYN front: how long a passed SYN can still complete */
	uint32_t event_sample;
	uint32_t cookie_rotate_s;
	uint16_t mss4, mss6;

	/* daemon */
	char ctl_socket[PATH_MAX];
	char metrics_listen[128]; /* "ADDR:PORT" for /metrics; empty: off */
	int log_level; /* enum log_level */
	int log_json;  /* daemon.log_format = "json": one JSON object per record */

	/* audit: the audit log (user/lib/audit.h) */
	struct sl_audit_cfg {
		char output[PATH_MAX]; /* "": off; "stderr", "syslog" or a file */
		double rate, burst;    /* lines per second (0: no limit), at once */
	} audit;

	struct sl_class_cfg classes[SL_MAX_CLASSES];
	int n_classes;
	int unknown_class;

	struct sl_tenant_cfg tenants[SL_MAX_TENANTS];
	int n_tenants;
	int default_tenant;               /* the tenant named "default", or -1 */

	struct sl_route_cfg routes[SL_MAX_ROUTES];
	int n_routes;

	/* Every upstream URL the file names, its host resolved at load (a start, a reload, or
	 * --check-config: never on the event loop), its first address (getaddrinfo's order) */
	struct sl_upstream_addr {
		char url[SL_UPSTREAM_URL_LEN];
		char addr[SL_UPSTREAM_ADDR_LEN]; /* an IPv4 or IPv6 literal; port 0: a socket path */
		uint16_t port;
		bool named;                /* the URL names a host, not an address */
	} up_addrs[SL_MAX_UPSTREAM_ADDRS];
	int n_up_addrs;

	struct sl_client_cfg clients[SL_MAX_CLIENTS];
	int n_clients;

	int has_edge;
	struct sl_gateway_cfg gw;

	struct sl_redis_cfg redis;
	struct sl_cluster_cfg cluster;
	struct sl_counter_cfg counters[SL_CTR_N];
	uint8_t counter_v4_prefix, counter_v6_prefix; /* the "source prefix" of the counters */
	uint8_t counter_v4_parent, counter_v6_parent; /* its allocation (login_parent's key) */
	uint8_t counter_mode[SL_CTR_N];               /* enum sl_mode */
	struct sl_stream_cfg stream;

	/* Where the file set what sl_config_check_host() looks at; line 0: not in the file
	 * (a default), reported against @path. */
	struct {
		char edge_file[PATH_MAX], daemon_file[PATH_MAX];
		int iface_line[SL_MAX_IFACES];
		int asn_table_line, pin_path_line, ctl_socket_line;
	} src;
};

const char *sl_detector_name(int id);
const char *sl_det_action_name(uint8_t a);

const char *sl_counter_name(int id);

/* Method name to enum sl_method; -1 if unknown. "*" is SL_M_OTHER (any). */
int sl_method_parse(const char *s);
const char *sl_method_name(uint8_t m);
/* The tenant whose hosts list has @host (lowercase, no port), else default_tenant. */
int sl_config_tenant_by_host(const struct sl_config *c, const char *host);
/* The route for @method and @path: longest matching prefix, exact method beating "any";
 * -1 if none. The edge's LPM table and the gateway both resolve routes this way. */
int sl_config_route(const struct sl_config *c, uint8_t method, const char *path);

/* Fill @c with every default (no classes, no ports, no interfaces). */
void sl_config_defaults(struct sl_config *c);

/*
 * Parse and validate @path into @c. Relative paths inside the file (asn_table, credentials,
 * delivery_log, @include) are resolved against @base_dir, or when NULL (sluiced and
 * sluicectl) against the directory of the file itself.
 * Returns 0, or a negative errno with the problems, one per line, in @err.
 */
int sl_config_load(const char *path, const char *base_dir, struct sl_config *c, char *err,
		   size_t errlen);

/*
 * The checks of a loaded @c that need this host rather than the file, made without attaching
 * or creating anything: every edge.interfaces name exists (in this network namespace), the
 * ASN table can be read, pin_path's directory is on a bpf filesystem or is /sys/fs/bpf (which
 * sluiced mounts), the control socket's directory exists or can be created and the socket
 * path is not some other file. Appends one "file:line: reason" line per problem to @err;
 * returns how many there were.
 */
int sl_config_check_host(const struct sl_config *c, char *err, size_t errlen);

/*
 * Read only the paths sluicectl needs (pin path, control socket, interface names as a comma
 * separated list) from a file that may not validate: enough to reach a daemon and tell it the
 * file is broken. Outputs keep their defaults for keys that are absent. 0 if it parsed.
 */
int sl_config_peek(const char *path, char *pin_path, size_t pn, char *sock, size_t sn,
		   char *ifaces, size_t ifn);

/* The client @id of tenant @tenant (an index), or -1. */
int sl_config_client(const struct sl_config *c, int tenant, const char *id);

/* Class id for @name, or -1. */
int sl_config_class(const struct sl_config *c, const char *name);

/* Slots of a table sized by @state_entries (bucket ways, SYN-front pending slots): the next
 * power of two, at least 1024. */
uint32_t sl_state_slots(uint32_t state_entries);
/* Bucket sets (SL_BUCKET_WAYS ways each) for @state_entries buckets: sl_state_slots() / 4. */
uint32_t sl_bucket_sets(uint32_t state_entries);
/* The most the edge can charge one connection: the largest port cost, unreadable cost, or
 * (on stateless HTTP ports) route cost. Every edge burst must hold one. budget.h says which
 * route or port it is (sl_edge_dearest). */
uint32_t sl_edge_max_cost(const struct sl_config *c);

const char *sl_mode_name(uint8_t mode);
const char *sl_action_name(uint8_t action);
const char *sl_front_name(uint8_t front);

/* "http://HOST:PORT" (HOST an IPv4 literal, [IPv6], or a DNS name) into @host and @port;
 * 0, or -EINVAL with why in @why. Resolves nothing. */
int sl_upstream_parse(const char *url, char *host, size_t hostlen, uint16_t *port,
		      const char **why);
/* Which upstream serves route @ri for tenant @ti (route > tenant > gateway): its URL, or
 * NULL for the built-in endpoint. @ti < 0: the route's and the gateway's only. */
const char *sl_config_upstream_of(const struct sl_config *c, int ri, int ti);
/* The address the config load resolved for upstream @url, or NULL (not in the file). */
const struct sl_upstream_addr *sl_config_upstream_addr(const struct sl_config *c,
						       const char *url);

#endif
