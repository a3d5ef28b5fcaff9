/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The gateway's short-lived secrets: one-time codes (MFA), magic links, and the state of
 * each OAuth client's refresh chain. None of them is ever stored as itself: an entry is
 * found by a keyed hash of what names it (the account for a code, the client for a refresh
 * chain, the secret for a link) and a code is compared against a keyed hash of its value,
 * in constant time. So a memory dump of the table gives an attacker nothing to replay.
 * Refresh tokens themselves are signed (gw_token.h): the table holds one chain per client,
 * its family and generation, so a client issuing tokens in a loop cannot fill it.
 *
 * A fixed table in this process, open addressing with a bounded probe: a full probe window
 * forgets the entry closest to its expiry. Entries live on one node, unless the counter store
 * has a Redis: then codes, links (and the sign-ups they hold) and refresh chains live there
 * under the same keyed ids, one Lua script call per operation (gw_vault_redis.c), so any
 * node verifies what another sent, and revocations are written there too and checked there
 * (docs/endpoints.md, "Many nodes").
 *
 * Beside it, the revocations: for an account whose password was reset, the time before
 * which its tokens no longer count, kept (by keyed hash of tenant and account) until every
 * token issued before it has expired. A table of its own, so codes and links cannot push a
 * revocation out; when its own probe window is full, the oldest revocation makes way and its
 * time becomes a floor for every account's tokens: over-revoking, never forgetting one.
 */
#ifndef SLUICE_GW_VAULT_H
#define SLUICE_GW_VAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "gw_body.h"

#define GW_VAULT_SLOTS 16384u
#define GW_VAULT_PROBE 16
#define GW_REVOKE_SLOTS 16384u
#define GW_REVOKE_PROBE 16
#define GW_SECRET_BYTES 32              /* links and refresh tokens: 256 random bits */
#define GW_SECRET_TEXT 44               /* base64url of those, without padding, + NUL */

enum gw_vault_kind {
	GW_V_OTP = 1,
	GW_V_MAGIC,
	GW_V_REFRESH,
	GW_V_REVOKED,         /* ids of the revocation table only */
};

/* What a magic link is for. */
enum gw_link_purpose {
	GW_LINK_RESET = 1,    /* from /password-reset: POST signs the account in */
	GW_LINK_REGISTER,     /* from /register: POST with a password creates the account */
};

struct gw_vault_entry {
	uint8_t id[16];       /* keyed hash of what names it */
	uint8_t check[32];    /* codes: keyed hash of the value */
	uint64_t exp_s;       /* unix seconds; 0: free */
	uint64_t family;      /* refresh tokens: the client's live chain */
	uint32_t gen;         /* refresh tokens: the chain's current generation */
	uint16_t tenant;      /* index in the config */
	uint8_t kind;         /* enum gw_vault_kind */
	uint8_t purpose;      /* enum gw_link_purpose */
	char name[GW_USER_MAX + 1]; /* the account, or the client id */
};

/* An account's tokens issued before @since_ns no longer count; kept until @exp_s. */
struct gw_revocation {
	uint8_t id[16];
	uint64_t since_ns;
	uint64_t exp_s;       /* 0: free */
};

struct sl_store;

struct gw_vault {
	uint8_t key[32];
	struct sl_store *store;  /* Redis-backed (gw_vault_attach); NULL: this table */
	int script;             /* its one Lua script in the store */
	char prefix[32];
	struct gw_vault_entry e[GW_VAULT_SLOTS];
	uint64_t evicted;
	struct gw_revocation rv[GW_REVOKE_SLOTS];
	uint64_t rv_floor_ns; /* every account's tokens issued before this no longer count */
	uint64_t rv_evicted;  /* revocations that made way (and raised the floor) */
	uint32_t ttl_max_s;   /* the longest lifetime of a token issued since start */
};

struct gw_vault *gw_vault_new(const uint8_t key[32]);
void gw_vault_free(struct gw_vault *v);

/* The id of @kind for (@tenant, @name) (codes: one per account) or of a @secret. */
void gw_vault_id_name(const struct gw_vault *v, int kind, uint16_t tenant, const char *name,
		      uint8_t id[16]);
void gw_vault_id_secret(const struct gw_vault *v, int kind, const char *secret,
			uint8_t id[16]);

/* Insert or replace the entry with @id (a new code replaces the old: it is invalid from
 * now on). Returns the entry to fill in. */
struct gw_vault_entry *gw_vault_put(struct gw_vault *v, const uint8_t id[16], uint64_t now_s);
/* The live (unexpired) entry with @id, or NULL. */
struct gw_vault_entry *gw_vault_get(struct gw_vault *v, const uint8_t id[16], uint64_t now_s);
void gw_vault_del(struct gw_vault_entry *e);

/* A fresh 6-digit code into @out (7 bytes) and its check hash for (@tenant, @name). */
void gw_vault_new_code(const struct gw_vault *v, uint16_t tenant, const char *name,
		       char out[7], uint8_t check[32]);
/* Does @code match @e's check hash? Constant time in the code. */
bool gw_vault_code_ok(const struct gw_vault *v, const struct gw_vault_entry *e,
		      const char *code, size_t len);
/* @code's check hash for (@tenant, @name) into @out; false when it is no 6-digit code. */
bool gw_vault_code_hash(const struct gw_vault *v, uint16_t tenant, const char *name,
			const char *code, size_t len, uint8_t out[32]);
/* A fresh random secret (links, refresh tokens) as base64url text. */
void gw_vault_new_secret(char out[GW_SECRET_TEXT]);

/* Live entries (for stats). */
unsigned gw_vault_live(const struct gw_vault *v, uint64_t now_s);

/* A token that lives @ttl_s is being issued: revocations are kept that long at least. */
void gw_vault_note_ttl(struct gw_vault *v, uint32_t ttl_s);
/* Every token of (@tenant, @account) issued until @now_ns no longer counts. */
void gw_vault_revoke(struct gw_vault *v, const char *tenant, const char *account,
		     uint64_t now_ns);
/* The earliest issue time (unix ns) a token of (@tenant, @account) may have to count: 0
 * when nothing was revoked. */
uint64_t gw_vault_valid_since(const struct gw_vault *v, const char *tenant,
			      const char *account, uint64_t now_s);

/* ---- shared through Redis (gw_vault_redis.c) ------------------------------------------- */

struct gw_req;

/* Hex text of a box of 1 + GW_USER_MAX + 1 bytes with its nonce and MAC, and a NUL. */
#define GW_VAULT_VALUE_MAX 512
_Static_assert(2 * (24 + 16 + 1 + GW_USER_MAX + 1) + 1 <= GW_VAULT_VALUE_MAX, "a link fits");

/* Keep the vault in @s's Redis from now on; 0, or -errno when its script could not be
 * loaded (every operation then answers GW_VR_DOWN). */
int gw_vault_attach(struct gw_vault *v, struct sl_store *s, const char *prefix);
bool gw_vault_shared(const struct gw_vault *v);
/* The Redis key of an entry: "<prefix>:{<tenant>}:vault:<kind>:<hex id>". */
void gw_vault_key(const struct gw_vault *v, const char *tenant, int kind,
		  const uint8_t id[16], char *out, size_t len);

enum gw_vault_result {
	GW_VR_DOWN = -1,      /* Redis did not answer in time (or its breaker is open) */
	GW_VR_OK = 0,         /* done; a get's value in @val */
	GW_VR_NONE = 1,       /* no such entry, or not the value expected */
	GW_VR_REUSE = 2,      /* rotate: an older generation of the chain came back; it ended */
};
/* Runs exactly once, maybe before the call returns, with @r as its arg. When @r's counters
 * have just found Redis not answering (a fallback answered one of them), the call is not
 * made: it gets GW_VR_DOWN at once, so the request waits one store timeout in all, not one
 * for its counters and another for the vault (issue 16: the whole request's Redis budget is
 * timeout_ms). */
typedef void (*gw_vault_cb)(void *arg, int res, const char *val);

void gw_vault_r_put(struct gw_vault *v, const char *tenant, int kind, const uint8_t id[16],
		    const char *value, uint32_t ttl_s, gw_vault_cb cb, struct gw_req *r);
void gw_vault_r_get(struct gw_vault *v, const char *tenant, int kind, const uint8_t id[16],
		    gw_vault_cb cb, struct gw_req *r);
/* Delete the entry if it holds @value (one use: only one caller gets GW_VR_OK). */
void gw_vault_r_take(struct gw_vault *v, const char *tenant, int kind, const uint8_t id[16],
		     const char *value, gw_vault_cb cb, struct gw_req *r);
/* Delete the entry and give its value (one use: only one caller gets it). */
void gw_vault_r_pop(struct gw_vault *v, const char *tenant, int kind, const uint8_t id[16],
		    gw_vault_cb cb, struct gw_req *r);
/* A chain at (@family, @gen) advances to @gen + 1 for @ttl_s more (OK); an older @gen of
 * that family ends it (REUSE); anything else is NONE. */
void gw_vault_r_rotate(struct gw_vault *v, const char *tenant, const uint8_t id[16],
		       uint64_t family, uint32_t gen, uint32_t ttl_s, gw_vault_cb cb, struct gw_req *r);

/* The values: a chain's "family:gen", a code's check hash, a link's sealed box (its purpose
 * and account, opened only with the link's secret). */
void gw_vault_chain_value(uint64_t family, uint32_t gen, char out[GW_VAULT_VALUE_MAX]);
void gw_vault_code_value(const uint8_t check[32], char out[GW_VAULT_VALUE_MAX]);
/* @code's value as Redis holds it for (@tenant, @name); false: no 6-digit code. */
bool gw_vault_code_check(const struct gw_vault *v, uint16_t tenant, const char *name,
			 const char *code, size_t len, char out[GW_VAULT_VALUE_MAX]);
int gw_vault_link_seal(const struct gw_vault *v, const char *secret, int purpose,
		       const char *account, char out[GW_VAULT_VALUE_MAX]);
int gw_vault_link_open(const struct gw_vault *v, const char *secret, const char *val,
		       int *purpose, char account[GW_USER_MAX + 1]);
/* The id of (@tenant, @account)'s revocation (by tenant name, as the table keeps it). */
void gw_vault_id_revoke(const struct gw_vault *v, const char *tenant, const char *account,
			uint8_t id[16]);
/* A password reset of r->user: every token of the account issued so far ends, in this
 * node's table and in Redis (the later of the two revocations kept); @done once Redis holds
 * it, 503 if it does not answer. */
void gw_vault_revoke_then(struct gw_req *r, void (*done)(struct gw_req *r));
/* Is a token of (r->tenant, @account) issued at @iat_ns revoked in Redis? @done gets
 * GW_VR_OK (not revoked), GW_VR_REUSE (revoked) or GW_VR_DOWN. */
typedef void (*gw_vault_check_fn)(struct gw_req *r, void *arg, int res);
void gw_vault_check_revoked(struct gw_req *r, const char *account, uint64_t iat_ns,
			    gw_vault_check_fn done, void *arg);
/* A request the vault could not answer for: 503 with Retry-After (the breaker's open time,
 * rounded up), never a fallback to this node's table. */
void gw_vault_unavailable(struct gw_req *r);

#endif
