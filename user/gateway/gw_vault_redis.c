// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The vault in Redis (issue 15, item 4): codes, links, pending sign-ups and refresh chains
 * shared by every gateway node, so a code sent through one node verifies on another and a
 * refresh chain rotates wherever its client lands. Each operation is one Lua script through
 * the counter store (sl_store_eval: its timeout, breaker and Cluster routing), so what must
 * happen once happens once: a code is spent by the call that compared it, a link consumed
 * by one caller only, a chain's generation compared and advanced in one step.
 *
 * Keys are "<prefix>:{<tenant>}:vault:<kind>:<hex of the entry's keyed id>" (the tenant's
 * hash tag: a Cluster keeps them in its slot); values are keyed hashes (codes), a sealed box
 * only the link's own secret opens (links: the account inside), or a family and generation
 * (chains). Nothing in Redis names an account, a client, a code or a secret. TTLs are the
 * in-process lifetimes (gateway.otp_ttl_s, magic_ttl_s, refresh_ttl_s).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <sodium.h>

#include "gw_internal.h"
#include "gw_vault.h"
#include "log.h"
#include "store.h"

/*
 * One script for every operation (the store loads a few scripts only), ARGV[1] naming it:
 *   put V TTL     SET with a lifetime: a new code or link replaces the one before it
 *   get           the value, or nil
 *   take V        one use: deleted by the one call that finds it holding V (1), else 0
 *   pop           one use: the value to the one call that finds it, nil to every later one
 *   rotate F G TTL  a chain "F:gen": G equal to gen advances it (1); an older G of that
 *                 family ends it (2: a spent token came back); anything else is 0
 *   revoke T TTL  an account's revocation: the later of T and the one held (times in ns,
 *                 compared as decimal text: Lua's numbers are doubles, exact to 2^53 only)
 */
static const char vault_lua[] =
	"local op, k = ARGV[1], KEYS[1] "
	"if op == 'put' then redis.call('SET', k, ARGV[2], 'EX', ARGV[3]) return 1 end "
	"local v = redis.call('GET', k) "
	"if op == 'get' then return v end "
	"if op == 'take' then "
	"  if v == ARGV[2] then redis.call('DEL', k) return 1 end return 0 end "
	"if op == 'pop' then if v then redis.call('DEL', k) end return v end "
	"if op == 'rotate' then "
	"  if not v then return 0 end "
	"  local f, g = string.match(v, '^(%x+):(%d+)$') "
	"  if f ~= ARGV[2] then return 0 end "
	"  local have, want = tonumber(g), tonumber(ARGV[3]) "
	"  if want < have then redis.call('DEL', k) return 2 end "
	"  if want ~= have then return 0 end "
	"  redis.call('SET', k, f .. ':' .. (have + 1), 'EX', ARGV[4]) return 1 end "
	"if op == 'revoke' then "
	"  local t = ARGV[2] "
	"  if v and (#v > #t or (#v == #t and v > t)) then t = v end "
	"  redis.call('SET', k, t, 'EX', ARGV[3]) return 1 end "
	"return redis.error_reply('vault: unknown op')";

int gw_vault_attach(struct gw_vault *v, struct sl_store *s, const char *prefix)
{
	int sc = sl_store_script(s, vault_lua);

	/* Shared even when the script could not be loaded: every operation then answers
	 * GW_VR_DOWN (fail closed), never this node's own table behind the others' backs. */
	v->store = s;
	v->script = sc;
	snprintf(v->prefix, sizeof(v->prefix), "%s", prefix && prefix[0] ? prefix : "sluice");
	return sc < 0 ? sc : 0;
}

bool gw_vault_shared(const struct gw_vault *v)
{
	return v->store != NULL;
}

static const char *kind_name(int kind)
{
	switch (kind) {
	case GW_V_OTP: return "otp";
	case GW_V_MAGIC: return "link";
	case GW_V_REFRESH: return "chain";
	case GW_V_REVOKED: return "revoked";
	default: return "other";
	}
}

void gw_vault_key(const struct gw_vault *v, const char *tenant, int kind,
		  const uint8_t id[16], char *out, size_t len)
{
	char hex[33];

	sodium_bin2hex(hex, sizeof(hex), id, 16);
	snprintf(out, len, "%s:{%s}:vault:%s:%s", v->prefix, tenant, kind_name(kind), hex);
}

struct vcall {
	gw_vault_cb cb;
	void *arg;
};

static void on_reply(void *arg, struct redisReply *reply)
{
	struct vcall c = *(struct vcall *)arg;

	free(arg);
	if (!reply) {
		c.cb(c.arg, GW_VR_DOWN, NULL);
		return;
	}
	switch (reply->type) {
	case REDIS_REPLY_NIL:
		c.cb(c.arg, GW_VR_NONE, NULL);
		return;
	case REDIS_REPLY_STRING:
		c.cb(c.arg, GW_VR_OK, reply->str);
		return;
	case REDIS_REPLY_INTEGER:
		c.cb(c.arg, reply->integer == 1 ? GW_VR_OK : reply->integer == 2 ? GW_VR_REUSE :
			    GW_VR_NONE, NULL);
		return;
	default:
		/* Our scripts answer nothing else: a server that does is not one to trust. */
		log_warn("gateway: the vault's script got a reply of type %d", reply->type);
		c.cb(c.arg, GW_VR_DOWN, NULL);
	}
}

static void call(struct gw_vault *v, const char *op, const char *tenant, int kind,
		 const uint8_t id[16], int argc, const char **argv, gw_vault_cb cb, void *arg,
		 const struct gw_req *r)
{
	char key[160];
	const char *av[5] = { op };
	struct vcall *c;
	int i;

	if (r && r->chain.redis_missed) {
		cb(arg, GW_VR_DOWN, NULL);
		return;
	}
	c = malloc(sizeof(*c));
	if (!c || argc > 4 || v->script < 0) {
		free(c);
		cb(arg, GW_VR_DOWN, NULL);
		return;
	}
	for (i = 0; i < argc; i++)
		av[i + 1] = argv[i];
	c->cb = cb;
	c->arg = arg;
	gw_vault_key(v, tenant, kind, id, key, sizeof(key));
	sl_store_eval(v->store, v->script, key, argc + 1, av, on_reply, c);
}

void gw_vault_r_put(struct gw_vault *v, const char *tenant, int kind, const uint8_t id[16],
		    const char *value, uint32_t ttl_s, gw_vault_cb cb, struct gw_req *r)
{
	char ttl[16];
	const char *argv[2] = { value, ttl };

	snprintf(ttl, sizeof(ttl), "%u", ttl_s ? ttl_s : 1);
	call(v, "put", tenant, kind, id, 2, argv, cb, r, r);
}

void gw_vault_r_get(struct gw_vault *v, const char *tenant, int kind, const uint8_t id[16],
		    gw_vault_cb cb, struct gw_req *r)
{
	call(v, "get", tenant, kind, id, 0, NULL, cb, r, r);
}

void gw_vault_r_take(struct gw_vault *v, const char *tenant, int kind, const uint8_t id[16],
		     const char *value, gw_vault_cb cb, struct gw_req *r)
{
	const char *argv[1] = { value };

	call(v, "take", tenant, kind, id, 1, argv, cb, r, r);
}

void gw_vault_r_pop(struct gw_vault *v, const char *tenant, int kind, const uint8_t id[16],
		    gw_vault_cb cb, struct gw_req *r)
{
	call(v, "pop", tenant, kind, id, 0, NULL, cb, r, r);
}

void gw_vault_r_rotate(struct gw_vault *v, const char *tenant, const uint8_t id[16],
		       uint64_t family, uint32_t gen, uint32_t ttl_s, gw_vault_cb cb, struct gw_req *r)
{
	char f[17], g[12], ttl[16];
	const char *argv[3] = { f, g, ttl };

	snprintf(f, sizeof(f), "%016" PRIx64, family);
	snprintf(g, sizeof(g), "%u", gen);
	snprintf(ttl, sizeof(ttl), "%u", ttl_s ? ttl_s : 1);
	call(v, "rotate", tenant, GW_V_REFRESH, id, 3, argv, cb, r, r);
}

void gw_vault_chain_value(uint64_t family, uint32_t gen, char out[GW_VAULT_VALUE_MAX])
{
	snprintf(out, GW_VAULT_VALUE_MAX, "%016" PRIx64 ":%u", family, gen);
}

void gw_vault_code_value(const uint8_t check[32], char out[GW_VAULT_VALUE_MAX])
{
	sodium_bin2hex(out, GW_VAULT_VALUE_MAX, check, 32);
}

bool gw_vault_code_check(const struct gw_vault *v, uint16_t tenant, const char *name,
			 const char *code, size_t len, char out[GW_VAULT_VALUE_MAX])
{
	uint8_t h[32];

	/* The shape is checked as gw_vault_code_ok does; the hash is what Redis compares. */
	if (!gw_vault_code_hash(v, tenant, name, code, len, h))
		return false;
	gw_vault_code_value(h, out);
	sodium_memzero(h, sizeof(h));
	return true;
}

/* The box key of a link: its secret and the vault's key, hashed; Redis holds neither. */
static void link_box_key(const struct gw_vault *v, const char *secret,
			 uint8_t k[crypto_secretbox_KEYBYTES])
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, v->key, sizeof(v->key), crypto_secretbox_KEYBYTES);
	crypto_generichash_update(&st, (const uint8_t *)"link box", 9);
	crypto_generichash_update(&st, (const uint8_t *)secret, strlen(secret) + 1);
	crypto_generichash_final(&st, k, crypto_secretbox_KEYBYTES);
}

int gw_vault_link_seal(const struct gw_vault *v, const char *secret, int purpose,
		       const char *account, char out[GW_VAULT_VALUE_MAX])
{
	uint8_t k[crypto_secretbox_KEYBYTES], msg[1 + GW_USER_MAX + 1];
	uint8_t box[crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + sizeof(msg)];
	size_t n = strlen(account);

	if (n > GW_USER_MAX)
		return -EINVAL;
	/* Padded to one length: the value's size says nothing about the name's. */
	memset(msg, 0, sizeof(msg));
	msg[0] = (uint8_t)purpose;
	memcpy(msg + 1, account, n);
	randombytes_buf(box, crypto_secretbox_NONCEBYTES);
	link_box_key(v, secret, k);
	crypto_secretbox_easy(box + crypto_secretbox_NONCEBYTES, msg, sizeof(msg), box, k);
	sodium_bin2hex(out, GW_VAULT_VALUE_MAX, box, sizeof(box));
	sodium_memzero(k, sizeof(k));
	sodium_memzero(msg, sizeof(msg));
	return 0;
}

int gw_vault_link_open(const struct gw_vault *v, const char *secret, const char *val,
		       int *purpose, char account[GW_USER_MAX + 1])
{
	uint8_t k[crypto_secretbox_KEYBYTES], msg[1 + GW_USER_MAX + 1];
	uint8_t box[crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + sizeof(msg)];
	size_t bl = 0;
	int ret = -EBADMSG;

	if (sodium_hex2bin(box, sizeof(box), val, strlen(val), NULL, &bl, NULL) ||
	    bl != sizeof(box))
		return -EBADMSG;
	link_box_key(v, secret, k);
	if (!crypto_secretbox_open_easy(msg, box + crypto_secretbox_NONCEBYTES,
					sizeof(box) - crypto_secretbox_NONCEBYTES, box, k) &&
	    msg[sizeof(msg) - 1] == '\0') {
		*purpose = msg[0];
		snprintf(account, GW_USER_MAX + 1, "%s", (const char *)msg + 1);
		ret = 0;
	}
	sodium_memzero(k, sizeof(k));
	sodium_memzero(msg, sizeof(msg));
	return ret;
}

/* ---- for the endpoints ------------------------------------------------------------------ */

void gw_vault_unavailable(struct gw_req *r)
{
	struct gateway *g = r->g;
	uint32_t ra = g->cfg->redis.breaker_open_ms / 1000 + 1;

	/* Fail closed: without its entry a code, link or chain cannot be checked, and taking
	 * an answer from this node alone would let a spent one be replayed on another. */
	gw_admit_done(r);
	gw_respond(r, 503, "Service Unavailable", BODY_503, ra, false, false);
}

/* ---- revocations ------------------------------------------------------------------------ */

struct revoke_call {
	struct gw_req *r;
	void (*done)(struct gw_req *r);
};

static void on_revoked(void *arg, int res, const char *val)
{
	struct revoke_call c = *(struct revoke_call *)arg;

	(void)val;
	free(arg);
	if (res != GW_VR_OK)
		gw_vault_unavailable(c.r);
	else
		c.done(c.r);
}

void gw_vault_revoke_then(struct gw_req *r, void (*done)(struct gw_req *r))
{
	struct gateway *g = r->g;
	struct revoke_call *c;
	char since[24], ttl[16];
	const char *argv[2] = { since, ttl };
	uint8_t id[16];

	/* This node's table first, as without Redis (and its count in tokens_revoked). */
	gw_account_revoke(g, r->tenant, r->user);
	c = malloc(sizeof(*c));
	if (!c) {
		gw_vault_unavailable(r);
		return;
	}
	c->r = r;
	c->done = done;
	gw_vault_id_revoke(g->vault, r->tenant, r->user, id);
	snprintf(since, sizeof(since), "%019" PRIu64,
		 gw_vault_valid_since(g->vault, r->tenant, r->user,
				      (uint64_t)time(NULL)));
	/* Kept until the last token it revokes has expired by itself. */
	snprintf(ttl, sizeof(ttl), "%u", g->vault->ttl_max_s + 1);
	call(g->vault, "revoke", r->tenant, GW_V_REVOKED, id, 2, argv, on_revoked, c, r);
}

struct check_call {
	struct gw_req *r;
	uint64_t iat_ns;
	gw_vault_check_fn done;
	void *arg;
};

static void on_checked(void *arg, int res, const char *val)
{
	struct check_call c = *(struct check_call *)arg;
	uint64_t since = 0;

	free(arg);
	if (res == GW_VR_DOWN) {
		c.done(c.r, c.arg, GW_VR_DOWN);
		return;
	}
	if (res == GW_VR_OK && val)
		since = strtoull(val, NULL, 10);
	c.done(c.r, c.arg, c.iat_ns < since ? GW_VR_REUSE : GW_VR_OK);
}

void gw_vault_check_revoked(struct gw_req *r, const char *account, uint64_t iat_ns,
			    gw_vault_check_fn done, void *arg)
{
	struct gateway *g = r->g;
	struct check_call *c = malloc(sizeof(*c));
	uint8_t id[16];

	if (!c) {
		done(r, arg, GW_VR_DOWN);
		return;
	}
	c->r = r;
	c->iat_ns = iat_ns;
	c->done = done;
	c->arg = arg;
	gw_vault_id_revoke(g->vault, r->tenant, account, id);
	call(g->vault, "get", r->tenant, GW_V_REVOKED, id, 0, NULL, on_checked, c, r);
}
