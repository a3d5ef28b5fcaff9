/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The contract between the XDP datapath (bpf/) and its userspace (user/).
 *
 * ABI WARNING: every struct here is the layout of a pinned BPF map. sluiced reuses pinned maps
 * across restarts to keep bucket state, and libbpf refuses to reuse a map whose key or value
 * size changed. Append fields only into the reserved space, never reorder, and when a size must
 * change, bump SL_ABI_VERSION so the controller knows to recreate the pins (losing state).
 * Fixed-width types only; both sides compile this file.
 */
#ifndef SLUICE_ABI_H
#define SLUICE_ABI_H

#include <linux/types.h>

#define SL_ABI_VERSION 3

/* Limits. Overridable at build time where a deployment needs more. */
#define SL_MAX_CLASSES 15          /* ASN classes with a policy: ids 0..14, a nibble each */
#define SL_CLASS_NONE SL_MAX_CLASSES /* stats row for packets never classified */
#define SL_STATS_ROWS (SL_MAX_CLASSES + 1)
#define SL_CLASS_NAME_LEN 16
#ifndef SL_MAX_PORTS
#define SL_MAX_PORTS 16            /* protected ports listed in the meta record */
#endif
#ifndef SL_MAX_IFACES
#define SL_MAX_IFACES 8
#endif
#ifndef SL_ASN_MAX_ENTRIES
#define SL_ASN_MAX_ENTRIES (4u << 20) /* LPM trie cap; no preallocation, so only a ceiling */
#endif
#define SL_MAX_VLAN 8              /* 802.1Q/802.1ad tags a reply carries back; frames with more
				    * are judged (the kernel strips priority tags without limit)
				    * and get no reply */
#define SL_MAX_IP6_EXT 1024        /* IPv6 extension headers walked (bpf_loop): more than a
				    * 9000-byte frame can hold, so every chain is read to its end */
#define SL_CAS_TRIES 4             /* compare-and-swap attempts on one bucket */
#define SL_REASON_SLOTS 64         /* counter slots reserved per class; reasons grow into them */

_Static_assert(SL_MAX_CLASSES < 16, "class ids are stored as nibbles in the /24 table");
_Static_assert((SL_REASON_SLOTS & (SL_REASON_SLOTS - 1)) == 0, "slots must be a power of 2");

/*
 * Why a packet got its verdict. Stable numbers: userspace names them in sl_reason_name()
 * (user/lib/reasons.c), docs/operations.md explains them, and pinned counters are indexed by
 * them. New reasons are appended before SL_R__MAX; never renumber.
 */
enum sl_reason {
	SL_R_PASSED = 0,         /* protected SYN, every bucket had room */
	SL_R_NOT_PROTECTED,      /* not TCP, or TCP to a port sluice does not guard */
	SL_R_NOT_SYN,            /* a later segment on a protected port: not ours to judge */
	SL_R_FRAGMENT,           /* IP fragment: no TCP header to judge; fragment policy applies */
	SL_R_SHED_PREFIX,        /* the source prefix bucket was empty */
	SL_R_SHED_PARENT,        /* the parent prefix bucket was empty */
	SL_R_WOULD_SHED_PREFIX,  /* monitor mode: would have been SHED_PREFIX, passed */
	SL_R_WOULD_SHED_PARENT,  /* monitor mode: would have been SHED_PARENT, passed */
	SL_R_MAL_ETH,            /* frame shorter than an Ethernet header */
	SL_R_MAL_VLAN,           /* truncated VLAN tag */
	SL_R_MAL_VLAN_DEPTH,     /* a stateless SYN under more tags than a reply carries
				  * (SL_MAX_VLAN), or a stack past the walk: dropped */
	SL_R_MAL_IP4,            /* truncated IPv4 header */
	SL_R_MAL_IP4_IHL,        /* IHL < 5, or options run past the frame */
	SL_R_MAL_IP6,            /* truncated IPv6 header */
	SL_R_MAL_IP6_EXT,        /* truncated IPv6 extension header */
	SL_R_MAL_IP6_EXT_DEPTH,  /* more than SL_MAX_IP6_EXT extension headers */
	SL_R_MAL_TCP,            /* truncated TCP header */
	SL_R_MAL_TCP_DOFF,       /* TCP data offset < 5, or options run past the frame */
	SL_R_STATE_ERROR,        /* bucket could not be created: passed, counted (fails open) */
	SL_R_SHED_TENANT,        /* the destination tenant's edge bucket was empty */
	SL_R_WOULD_SHED_TENANT,  /* monitor mode: would have been SHED_TENANT, passed */
	SL_R_SHED_VERDICT,       /* a verdict (block or reply) covers the source */
	SL_R_COOKIE_ACK,         /* the bare handshake ACK of a cookie connection: dropped */
	SL_R_REPLIED_429,        /* the first request of a cookie connection: answered 429 */
	SL_R_COOKIE_FIN,         /* the client's FIN after our 429: acknowledged */
	SL_R_COOKIE_DROP,        /* anything else of a shed cookie connection (RST, ACKs, more
				  * data): dropped, never passed to a kernel with no socket */
	SL_R_COOKIE_BAD,         /* a cookie-marked ACK whose MAC is wrong and that belongs to no
				  * connection: forged, dropped without a word (the kernel would
				  * have answered it with a reset) */
	SL_R_HANDSHAKE,          /* stateless front: a SYN answered with a cookie SYN-ACK */
	SL_R_FIRST_ADMITTED,     /* stateless front: a first request admitted, passed to TC */
	SL_R_RACE_PASS,          /* stateless front: a later segment of an admitted first burst */
	SL_R_HANDOFF,            /* TC: a connection handed to its listener */
	SL_R_HANDOFF_FAIL,       /* TC: no listener, or the kernel refused the request socket */
	SL_R_NOT_LOCAL,          /* to a protected port, but not to an address this node serves:
				  * passed untouched (routed through, never answered) */
	SL_R_MARTIAN,            /* to a protected port from a source the kernel would never
				  * answer (martian or local address, multicast MAC): dropped */
	SL_R_BAD_FLAGS,          /* SYN with FIN or RST: dropped, as the kernel discards it */
	SL_R_SYN_DATA,           /* SYN front: a SYN carrying data (TFO) would reach the listener
				  * before any proof of its source: dropped, the client retries */
	SL_R_SYN_PEEKED,         /* SYN front: a SYN whose buckets have room, passed to the
				  * kernel; it is charged at its verified handshake ACK */
	SL_R_VERIFY_ACK,         /* SYN front: a segment checked against the kernel's request
				  * socket or SYN cookie (the charge itself is PASSED or SHED_*) */
	SL_R_FRAG_LATER,         /* a non-first IP fragment: no ports, and harmless without its
				  * first fragment, which is judged: passed */
	SL_R_ESTABLISHED,        /* stateless front: a cookie-valid first request whose
				  * connection exists already (a retransmission): passed */
	SL_R_TW_REUSE,           /* stateless front: a SYN on a tuple the server still holds a
				  * socket for (its TIME_WAIT): passed to the kernel, which reopens
				  * it by its own rules; charged at the verified ACK like the SYN
				  * front. (TC: a first request handed to the listener past one.) */
	SL_R_REQSK_RESET,        /* a segment of a connection shed over the kernel's request
				  * socket (SYN front; a stateless TIME_WAIT reuse): the client's
				  * RST, or its first ACK of the 429 turned into one, passed so the
				  * kernel frees the tuple at once */
	SL_R__MAX
};
_Static_assert(SL_R__MAX <= SL_REASON_SLOTS, "reasons outgrew the reserved counter slots");

#define SL_R_IS_MALFORMED(r) ((r) >= SL_R_MAL_ETH && (r) <= SL_R_MAL_TCP_DOFF)

enum sl_mode {
	SL_MODE_ENFORCE = 0,
	SL_MODE_MONITOR = 1,
};

enum sl_front {
	SL_FRONT_SYN = 0,        /* decide at the SYN */
	SL_FRONT_STATELESS = 1,  /* cookie every SYN; decide on the first request (route, tenant) */
};

enum sl_proto {
	SL_PROTO_HTTP = 0,       /* plaintext HTTP/1.x: method, path, Host */
	SL_PROTO_TLS = 1,        /* TLS: the ClientHello's SNI */
};

/* HTTP methods as the route table keys them. */
enum sl_method {
	SL_M_OTHER = 0,
	SL_M_GET, SL_M_POST, SL_M_PUT, SL_M_DELETE, SL_M_PATCH, SL_M_HEAD, SL_M_OPTIONS,
	SL_M__MAX
};

enum sl_action {
	SL_ACT_PASS = 0,
	SL_ACT_DROP = 1,
	SL_ACT_REPLY = 2,  /* plaintext HTTP ports: cookie SYN-ACK, then one 429 segment */
};

enum sl_family {
	SL_FAM_V4 = 4,
	SL_FAM_V6 = 6,
};

/* Bucket levels: a source is charged at its own prefix and at the parent prefix. */
enum sl_level {
	SL_LEVEL_PREFIX = 0,
	SL_LEVEL_PARENT = 1,
};

/*
 * ASN table, two structures built from the same rows and published together:
 *  - the /24 table: for every IPv4 /24, the class id of its longest covering row of length
 *    <= /24, as a nibble, 16 per u64: one array load types an IPv4 source. A /24 that holds a
 *    row longer than /24 reads SL_DIR_USE_TRIE instead, and only those go to the trie.
 *  - an LPM trie over 128-bit addresses, for IPv6 and those few IPv4 /24s. IPv4 lives at
 *    ::ffff:0:0/96 so one trie serves both; an IPv4 /24 is stored as prefixlen 96 + 24.
 * Both exist twice (slots 0 and 1): the controller fills the idle slot, then flips
 * sl_settings.asn_slot, so a packet sees one whole table or the other, never a mix.
 */
#define SL_V4_MAPPED_PLEN 96
#define SL_DIR_USE_TRIE 15
#define SL_DIR_WORDS (1u << 20)    /* 2^24 /24s, 16 per word */
#define SL_ASN_SLOTS 2

/*
 * The IPv6 table (sl_asn6): the same rows as the trie down to /48, as a multibit trie in one
 * array, so an IPv6 source is typed by a few dependent array loads instead of an LPM walk.
 * Each slot is a root of 2^16 entries (indexed by the address's first 16 bits) followed by a
 * pool of nodes of 16 entries (4 more bits each; 8 levels reach /48). An entry is either
 *  - a leaf: the class id of the longest row of length <= its depth covering it (low nibble),
 *    or SL_DIR_USE_TRIE where a row longer than /48 lies below it (or the pool ran out): the
 *    packet then walks the trie, which holds every row; or
 *  - SL_V6_CHILD | n: descend into node n of the pool.
 * A node is 64 bytes, one cache line. Both slots flip with the /24 table and the trie.
 */
#define SL_V6_ROOT_BITS 16
#define SL_V6_STRIDE 4
#define SL_V6_FANOUT (1u << SL_V6_STRIDE)
#define SL_V6_LEVELS 8             /* 16 + 8 * 4 = /48 */
#define SL_V6_LEAF_PLEN (SL_V6_ROOT_BITS + SL_V6_LEVELS * SL_V6_STRIDE)
#ifndef SL_V6_NODES
#define SL_V6_NODES (1u << 18)     /* 16 MB a slot; the real 168k-prefix IPv6 table needs 112k */
#endif
#define SL_V6_ROOT (1u << SL_V6_ROOT_BITS)
#define SL_V6_WORDS (SL_V6_ROOT + SL_V6_NODES * SL_V6_FANOUT)
#define SL_V6_CHILD 0x80000000u
/* The map's element: 16 entries (a node, or a sixteenth of the root), so that its mmap is the
 * plain array of entries (an array map rounds a 4-byte value up to 8). */
struct sl_v6_line {
	__u32 e[SL_V6_FANOUT];
};
#define SL_V6_LINES (SL_V6_WORDS / SL_V6_FANOUT)
_Static_assert(SL_V6_NODES < SL_V6_CHILD, "a node index must fit below the child bit");
_Static_assert(SL_V6_LEAF_PLEN == 48, "the IPv6 table types /48s");

/* The array index, within a slot, of the entry below @entry (a child) for @addr at @level
 * (0 = the first node below the root). Shared by the datapath and the controller's checks. */
static inline __u32 sl_v6_next(__u32 entry, const __u8 *addr, __u32 level)
{
	__u8 b = addr[2 + (level >> 1)];
	__u32 nib = (level & 1) ? (b & 15u) : (__u32)(b >> 4);

	return SL_V6_ROOT + (entry & ~SL_V6_CHILD) * SL_V6_FANOUT + nib;
}

static inline __u32 sl_v6_root(const __u8 *addr)
{
	return ((__u32)addr[0] << 8) | addr[1];
}
struct sl_lpm_key {
	__u32 prefixlen;
	__u8 addr[16];
};

struct sl_asn_val {
	__u32 asn;
	__u32 class_id;
};

/* Bucket key: the masked source prefix, qualified by class and level so that a /24 keyed by
 * one class and the same /24 as another class's parent never share a bucket. IPv6 keys are
 * /64 or shorter by construction (the config refuses longer), so 8 address bytes hold any
 * key; 12 bytes hash faster than 20 on every SYN. */
struct sl_bkey {
	__u8 family;   /* enum sl_family */
	__u8 plen;     /* prefix length in the family's own terms (/24, /64) */
	__u8 level;    /* enum sl_level */
	__u8 class_id;
	__u8 addr[8];  /* network order, host bits zero; IPv4 in the first 4 bytes */
};
#define SL_MAX_V6_KEY_PLEN 64

/* GCRA state: one theoretical arrival time in ns (CLOCK_MONOTONIC_COARSE), plus the shed
 * streak that escalates this bucket's Retry-After. The tenant buckets are these; a prefix
 * bucket is read and written as one through a way of the table below. */
struct sl_bucket {
	__u64 tat;
	__u32 streak;      /* 429s served in a row for this bucket being empty */
	__u32 last_shed_s; /* when the last one was served, in seconds of the same clock */
};

/*
 * The prefix bucket table (sl_buckets): a fixed array of sets, each SL_BUCKET_WAYS ways and
 * one spill bucket, indexed by the keyed hash of the key (sl_key_hash: its low word picks the
 * set, its high word is the tag). A key lives in the way whose tag is its own. A newcomer
 * takes an empty way, else one whose key would lose nothing by being forgotten (its TAT no
 * further ahead than a stranger of its kind would start: the way's lead), expired first;
 * when there is none, it is homeless and charges the set's spill bucket, shared by every
 * homeless key of the set, so that a flood of fresh keys neither pushes out a spent key nor
 * wins fresh bursts of its own (docs/design.md, "State under pressure").
 *
 * The ways' tags, TATs and leads fill the first 64-byte line, which is all a charge reads;
 * the streaks and the spill sit in the second.
 */
#define SL_BUCKET_WAYS 4
#define SL_BUCKET_SPILL SL_BUCKET_WAYS /* the way index that names the spill bucket */
#define SL_LEAD_SHIFT 10                /* leads are kept in units of 1024 ns, rounded down */
struct sl_bway {
	__u64 tat;
	__u32 tag;  /* never 0: 0 marks an empty way */
	__u32 lead; /* (TAT a new bucket of this key starts at - now) >> SL_LEAD_SHIFT */
};

struct sl_bshed {
	__u32 streak;
	__u32 last_shed_s;
};

struct sl_bucket_set {
	struct sl_bway way[SL_BUCKET_WAYS];
	struct sl_bshed shed[SL_BUCKET_WAYS];
	__u64 spill_tat;
	struct sl_bshed spill_shed;
	__u64 reserved[2];
};
_Static_assert(sizeof(struct sl_bway) * SL_BUCKET_WAYS == 64, "the ways fill one cache line");
_Static_assert(sizeof(struct sl_bucket_set) == 128, "a set is two cache lines");

/* Rate in GCRA terms: emission interval per cost unit and tolerance (burst), both in ns. */
struct sl_rate {
	__u64 emission_ns;
	__u64 tolerance_ns;
};

struct sl_class_policy {
	__u8 valid;
	__u8 mode;      /* enum sl_mode */
	__u8 v4_prefix;
	__u8 v6_prefix;
	__u8 v4_parent;
	__u8 v6_parent;
	__u8 pad[2];
	struct sl_rate prefix;
	struct sl_rate parent;
	char name[SL_CLASS_NAME_LEN];
	__u64 reserved[4];
};

/* Indexed by destination port (host order); an all-zero entry means "not protected". */
struct sl_port {
	__u8 protected;
	__u8 front;     /* enum sl_front */
	__u8 action;    /* enum sl_action, applied to shed packets */
	__u8 proto;     /* enum sl_proto (stateless front) */
	__u32 cost;     /* cost units a verified connection (syn front), or a first request
			 * whose route is unknown (stateless front), charges */
	__u32 unreadable_cost; /* stateless front: a first request the edge cannot read whole
				* (split, fragmented, a target past the scan window) */
};

#define SL_MAX_RETRY_LEVELS 8

/* Live settings, one array slot, rewritten on reload. */
struct sl_settings {
	__u32 unknown_class;     /* class for sources absent from the ASN table */
	__u8 malformed_action;   /* enum sl_action */
	__u8 fragment_action;    /* enum sl_action */
	__u16 new_key_credit;    /* per mille of burst a never-seen key starts with */
	__u32 hash_seed;         /* seeds the bucket sets' index and tags; kept with the pins */
	__u32 generation;        /* config generation, for observers */
	__u32 asn_slot;          /* which ASN table slot is live (0 or 1) */
	__u32 n_tenants;         /* 0: skip the tenant lookup */
	__u32 pad0;
	__u32 event_sample;      /* emit 1 in N shed events; 0: none */
	__u32 streak_decay_s;    /* a prefix quiet this long starts its Retry-After ladder over */
	__u32 n_retry_levels;
	__u32 retry_after[SL_MAX_RETRY_LEVELS]; /* seconds, by streak */
	__u16 mss4, mss6;        /* MSS announced in cookie SYN-ACKs */
	__u32 default_tenant;    /* stateless front: tenant for hosts in no tenant's list
				  * (SL_MAX_TENANTS: none, charge by destination) */
	__u32 pend_ttl_s;        /* SYN front: how long a passed SYN's handshake can still
				  * complete (request socket or kernel cookie), in seconds */
	__u32 local_nets;        /* local prefixes wider than one address (AnyIP), loopback
				  * aside: 0 lets the datapath skip the LPM trie */
	__u64 reserved[3];
};

/* SYN cookie keys (include/sluice/cookie.h), rotated by the controller. The marker is chosen
 * once and kept across rotations; prev_marker is kept equal to it. */
struct sl_cookie_keys {
	__u64 cur[2];
	__u64 prev[2];
	__u64 prev_until_ns;     /* the previous key is accepted until then */
	__u8 cur_marker, prev_marker;
	__u8 pad[6];
	__u64 rotated_unix;
	__u64 reserved[2];
};

/* Per-tenant edge budgets. Tenants are found by destination address and port. */
#ifndef SL_MAX_TENANTS
#define SL_MAX_TENANTS 256
#endif
#define SL_TENANT_NAME_LEN 32

struct sl_tenant_key {
	__u8 family;
	__u8 pad;
	__u16 port;     /* host order */
	__u8 addr[16];  /* IPv4 in the first 4 bytes */
};

struct sl_tenant {
	__u8 valid;
	__u8 mode;              /* enum sl_mode */
	__u8 pad[6];
	struct sl_rate lease;   /* this node's share, while the lease lasts */
	__u64 lease_expires_ns; /* CLOCK_MONOTONIC_COARSE */
	struct sl_rate fallback;/* the conservative static rate once the lease has expired */
	char name[SL_TENANT_NAME_LEN];
	/* How the controller chose the lease, for sluicectl leases; never read by the datapath. */
	__u32 share_ppm;        /* this node's share of the tenant's budget, parts per million */
	__u32 nodes_seen;       /* nodes with a live demand report, this one included */
	__u64 demand_milli;     /* this node's demand, milli-units per second */
	__u64 cluster_milli;    /* all live nodes' demand together */
	__u64 lease_set_unix;   /* when the lease was last written (0: from the config) */
};

/* Verdicts: prefix -> what to do with it, until it expires. Keyed like the ASN trie. */
enum sl_verdict_action {
	SL_VERDICT_BLOCK = 1,   /* drop its SYNs silently, whatever the port's action */
	SL_VERDICT_TIGHTEN = 2, /* its buckets run at factor x rate and burst */
	SL_VERDICT_REPLY = 3,   /* shed every SYN with the port's action (429 where it replies) */
};

#define SL_VERDICT_REASON_LEN 48
struct sl_verdict {
	__u8 action;            /* enum sl_verdict_action */
	__u8 pad;
	__u16 factor;           /* per mille, for tighten: 1..1000 */
	__u32 reason_code;
	__u64 expires_ns;       /* CLOCK_MONOTONIC_COARSE; ignored once past */
	__u64 created_unix;
	char reason[SL_VERDICT_REASON_LEN];
};

/* Decided cookie connections, keyed by the connection itself: its 4-tuple and our initial
 * sequence number (the cookie, or on the SYN front the kernel's). A new handshake on the same
 * tuple has another ISS, hence another key. */
struct sl_conn_key {
	__u8 family;
	__u8 pad[3];
	__u32 iss;              /* host order */
	__u16 sport, dport;     /* host order */
	__u8 saddr[16], daddr[16];
};

/*
 * Cookie connections answered with a 429 or dropped (stateless front, and a SYN-front reply
 * port's connections shed at their SYN): a fixed array of four-way sets of (tag, expiry),
 * indexed by a keyed hash of the connection key. Everything absorbing a leftover needs
 * besides (our next sequence number, the timestamps) is in the leftover itself, so a tag is
 * all that is kept: one plain store per shed, no lock, no eviction walk, where the LRU hash
 * this replaced spent most of a 429's time. A newcomer takes an empty or expired way, else
 * the one that expires first; a lost entry leaves its leftovers to be dropped, as before.
 */
#define SL_SHED_WAYS 4
#define SL_SHED_SETS 65536          /* 262,144 connections: 10 s of 26,000 429s a second */
#define SL_SHED_TAG_DROPPED 1u      /* tag bit 0: shed by a drop (nothing was sent) */
struct sl_shed_way {
	__u32 tag;                  /* 0: empty; bit 1 always set; bit 0 SL_SHED_TAG_DROPPED */
	__u32 until;                /* expiry, seconds of the coarse clock */
};
struct sl_shed_set {
	struct sl_shed_way way[SL_SHED_WAYS];
};

/*
 * Cookie connections admitted (stateless front), so the racing segments of their first burst
 * pass and a retransmitted first request is passed, not judged again: sets of the same shape
 * (struct sl_shed_set; tag bit 0 is never set here), in an array of their own, so that shed
 * connections, which any source over its budget can churn, never evict an admitted one. Same
 * keyed hash as the shed tags: the low bits pick the set, the high word is the tag. A
 * newcomer takes an empty or expired way, else the one that expires first (with one TTL for
 * all, the oldest). A record lost to a full set costs what a lost LRU entry cost: a racing
 * segment reaches the kernel with no socket yet, a retransmitted first request is judged
 * again.
 */
#define SL_CONN_SETS 131072         /* 524,288 ways, 4 MB: 10 s of 52,000 admissions a second */
_Static_assert((SL_CONN_SETS & (SL_CONN_SETS - 1)) == 0, "SL_CONN_SETS: a power of two");

enum sl_conn_state {
	SL_CONN_SHED = 1,       /* answered (429) or dropped: absorb the rest */
	SL_CONN_ADMITTED = 2,   /* stateless front: handed to the kernel, let the rest through */
	SL_CONN_DROPPED = 3,    /* shed by a drop: we sent nothing, so we answer nothing */
	SL_CONN_OWED = 4,       /* shed at the bare ACK of a kernel handshake on a reply port:
				 * the kernel's request socket was reset, the 429 answers the
				 * request when it comes */
};

struct sl_conn {
	__u32 our_next;         /* our next sequence number (after 429 and FIN) */
	__u32 their_next;       /* the client's next sequence number before its FIN */
	__u64 expires_ns;
	__u32 state;            /* enum sl_conn_state */
	__u32 tsval;            /* our TSval on this connection; 0: no timestamps */
	__u32 ts_recent;        /* the client's latest TSval, echoed in our replies */
	__u16 retry_after;      /* SL_CONN_OWED: the 429's Retry-After, fixed at the shed */
	__u16 class_id;         /* SL_CONN_OWED: the class the shed was counted under */
};

/* Addresses this node serves (the kernel's local routing table, kept by sluiced), keyed like
 * the ASN trie: replies go out only from these, and never to them. */
struct sl_local_val {
	__u32 ifindex;          /* for observers; 0 when the route names none */
	__u32 pad;
};

/* Stateless front: the route table, an LPM trie over (method, path) as one byte string, so
 * the longest configured path prefix wins. Method 0 rows match any method. */
#define SL_ROUTE_KEY_PATH 63
#define SL_EDGE_ROUTES 64
struct sl_route_key {
	__u32 prefixlen;               /* bits: 8 * (1 + path prefix length) */
	__u8 data[1 + SL_ROUTE_KEY_PATH]; /* method, then the path */
};

struct sl_route_val {
	__u32 route_id;
	__u32 cost;                    /* cost units of a first request on this route */
	__u32 path_len;                /* to prefer the longer of a method and an any-method hit */
	__u32 pad;
};

/* Host (HTTP Host or TLS SNI), lowercase, no port, zero padded -> tenant id. */
#define SL_HOST_KEY_LEN 64
struct sl_host_key {
	char name[SL_HOST_KEY_LEN];
};

/*
 * A filter in front of the local-host hash (sl_local_host), for the question every SYN asks of
 * its source: one of our own addresses? Bit sl_local_bit(a) is set for each of the node's
 * host addresses; a clear bit answers "no" with one array load, where the hash (a 20-byte
 * jhash and a bucket walk) cost a flood of spoofed sources ~15 ns a SYN on the wire, each
 * source missing the per-CPU cache of the last one. A set bit only means "ask the hash": a
 * source aimed at a set bit costs what every source cost before. Wider local prefixes
 * (AnyIP) are the trie's, as before.
 */
#define SL_LOCAL_BITS 65536
struct sl_local_bits {
	__u64 w[SL_LOCAL_BITS / 64];
};

/* The bit of an address in sl_lpm_key form (IPv4 mapped into ::ffff:0:0/96): its last 16
 * bits. */
static __always_inline __u32 sl_local_bit(const __u8 *lpm_addr)
{
	return ((__u32)lpm_addr[14] << 8 | lpm_addr[15]) & (SL_LOCAL_BITS - 1);
}

/* Might @lpm_addr be one of the node's host addresses (its bit set)? And set its bit. */
static __always_inline int sl_local_maybe(const struct sl_local_bits *f, const __u8 *lpm_addr)
{
	__u32 b = sl_local_bit(lpm_addr);

	return (f->w[(b >> 6) & (SL_LOCAL_BITS / 64 - 1)] >> (b & 63)) & 1;
}

static __always_inline void sl_local_mark(struct sl_local_bits *f, const __u8 *lpm_addr)
{
	__u32 b = sl_local_bit(lpm_addr);

	f->w[(b >> 6) & (SL_LOCAL_BITS / 64 - 1)] |= 1ull << (b & 63);
}

/*
 * The host table the datapath reads (sl_host_sets): every configured host in one of its two
 * candidate sets (sl_host_hash: the low word picks the first, the high word the second and
 * the tag), placed by the writer in the emptier one. An array, so a lookup is two loads and
 * eight tag compares, then one name compare, against the 64-byte key's jhash and compare of a
 * hash map (46 ns of a first request's ~450, bench/xdp_cost). A host that found both its sets
 * full marks both @overflow and lives in sl_hosts, the hash map holding every host, which a
 * lookup asks only when both of its sets carry the mark. Names are compared whole: a tag or a
 * set shared by chance (or by an attacker's choice of Host) changes nothing but the time.
 */
#define SL_HOST_SETS 2048                 /* power of two; 8 hosts x 256 tenants at most */
#define SL_HOST_WAYS 4
struct sl_host_set {
	__u32 tag[SL_HOST_WAYS];          /* 0: an empty way (tags are never 0) */
	__u32 tid[SL_HOST_WAYS];
	__u32 overflow;                   /* a host of this set's pair is in sl_hosts only */
	__u32 pad;
	struct sl_host_key name[SL_HOST_WAYS];
};

/* Per-CPU first-request outcomes by route (SL_EDGE_ROUTES = unrouted/default) and by tenant
 * (SL_MAX_TENANTS = none). */
struct sl_outcome {
	__u64 admitted;
	__u64 shed;
};

/* Sampled shed events on the ring buffer. */
struct sl_event {
	__u64 ts_ns;            /* CLOCK_MONOTONIC_COARSE */
	__u8 family;
	__u8 plen;              /* of the key prefix below */
	__u8 class_id;
	__u8 reason;            /* enum sl_reason */
	__u8 action;            /* enum sl_action taken */
	__u8 pad;
	__u16 retry_after;      /* seconds, for 429s; 0 otherwise */
	__u16 dport;
	__u16 pad2;
	__u32 pad3;
	__u8 addr[16];          /* the source's key prefix, masked */
};

/* Per-CPU counters, one row per class plus SL_CLASS_NONE. */
struct sl_counters {
	__u64 pkts[SL_REASON_SLOTS];
	__u64 key_new;       /* buckets created for keys never seen (or forgotten) */
	__u64 key_homeless;  /* keys charged to their set's spill bucket: no way was theirs */
	__u64 cas_busy;      /* compare-and-swap retries exhausted (shed: the key is hot) */
	__u64 synacks;       /* cookie SYN-ACKs sent for shed SYNs on reply ports */
	__u64 events_lost;   /* sampled events the ring buffer had no room for */
	__u64 reserved[3];
};

/*
 * Controller metadata, written by sluiced into a pinned array so that sluicectl can report
 * status from the pins alone, with or without a running daemon. The datapath never reads it.
 */
#define SL_META_PATH_LEN 128
struct sl_meta_iface {
	__u32 ifindex;
	__u8 mode;        /* enum sl_attach_mode */
	__u8 pad[3];
	char name[16];
};

enum sl_attach_mode {
	SL_ATTACH_NONE = 0,
	SL_ATTACH_NATIVE,          /* through libxdp's dispatcher, driver mode */
	SL_ATTACH_GENERIC,         /* through libxdp's dispatcher, skb mode */
	SL_ATTACH_LEGACY_NATIVE,   /* dispatcher unavailable: plain netlink attach, driver mode */
	SL_ATTACH_LEGACY_GENERIC,  /* dispatcher unavailable: plain netlink attach, skb mode */
};

struct sl_meta_port {
	__u16 port;
	__u8 front;
	__u8 action;
	__u32 cost;
};

struct sl_meta {
	__u32 abi_version;
	__u32 pid;               /* 0 when the daemon stopped without detaching (handover) */
	__u64 started_unix;
	__u64 reloaded_unix;
	__u32 generation;
	__u32 reload_failures;
	__u32 state_entries;
	__u32 bucket_sets;       /* sets of SL_BUCKET_WAYS ways in sl_buckets */
	__u32 asn_entries;
	__u32 n_ifaces;
	__u32 n_ports;
	__u32 pad;
	char config_path[SL_META_PATH_LEN];
	char asn_source[SL_META_PATH_LEN];
	char ctl_socket[SL_META_PATH_LEN];
	char last_error[256];
	struct sl_meta_iface ifaces[SL_MAX_IFACES];
	struct sl_meta_port ports[SL_MAX_PORTS];
	__u64 reserved[16];
};

#endif /* SLUICE_ABI_H */
