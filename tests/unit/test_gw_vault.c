// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The vault of one-time codes, links and refresh tokens, and the revocations beside it;
 * client secrets and token keys; the gateway.clients and gateway.ceilings config with
 * file:line errors. */
#include "unit.h"

#include <errno.h>
#include <sodium.h>

#include "config.h"
#include "gw_client.h"
#include "gw_vault.h"

static uint8_t key[32];

static int setup(void **state)
{
	(void)state;
	if (sodium_init() < 0)
		return -1;
	randombytes_buf(key, sizeof(key));
	return 0;
}

static struct gw_vault_entry *put_code(struct gw_vault *v, const char *acct, char code[7],
				       uint64_t now)
{
	uint8_t id[16], check[32];
	struct gw_vault_entry *e;

	gw_vault_new_code(v, 1, acct, code, check);
	gw_vault_id_name(v, GW_V_OTP, 1, acct, id);
	e = gw_vault_put(v, id, now);
	e->kind = GW_V_OTP;
	e->tenant = 1;
	e->exp_s = now + 300;
	memcpy(e->check, check, sizeof(check));
	snprintf(e->name, sizeof(e->name), "%s", acct);
	return e;
}

static struct gw_vault_entry *get_code(struct gw_vault *v, const char *acct, uint64_t now)
{
	uint8_t id[16];

	gw_vault_id_name(v, GW_V_OTP, 1, acct, id);
	return gw_vault_get(v, id, now);
}

static void a_new_code_replaces_the_old(void **state)
{
	struct gw_vault *v = gw_vault_new(key);
	struct gw_vault_entry *e;
	char c1[7], c2[7];

	(void)state;
	assert_non_null(v);
	put_code(v, "alice", c1, 1000);
	assert_int_equal(strlen(c1), 6);
	e = get_code(v, "alice", 1000);
	assert_non_null(e);
	assert_true(gw_vault_code_ok(v, e, c1, 6));
	do
		put_code(v, "alice", c2, 1001);
	while (!strcmp(c1, c2));
	e = get_code(v, "alice", 1001);
	assert_non_null(e);
	assert_false(gw_vault_code_ok(v, e, c1, 6));
	assert_true(gw_vault_code_ok(v, e, c2, 6));
	/* Wrong shapes never match; another account's code is another entry. */
	assert_false(gw_vault_code_ok(v, e, c2, 5));
	assert_false(gw_vault_code_ok(v, e, "12a456", 6));
	assert_null(get_code(v, "bob", 1001));
	/* Expiry. */
	assert_null(get_code(v, "alice", 1301));
	assert_int_equal(gw_vault_live(v, 1001), 1);
	gw_vault_free(v);
}

static void the_stored_check_is_not_the_code(void **state)
{
	struct gw_vault *v = gw_vault_new(key), *w = gw_vault_new(key);
	struct gw_vault_entry *e;
	char c[7];

	(void)state;
	e = put_code(v, "alice", c, 1000);
	/* Nothing in the entry spells the code, and the same code for another account
	 * hashes differently. */
	assert_null(memmem(e, sizeof(*e), c, 6));
	{
		struct gw_vault_entry f = *e;

		snprintf(f.name, sizeof(f.name), "bob");
		assert_false(gw_vault_code_ok(v, &f, c, 6));
	}
	assert_true(gw_vault_code_ok(w, e, c, 6)); /* same key: same derived key */
	gw_vault_free(v);
	gw_vault_free(w);
}

static void secrets_and_ids(void **state)
{
	struct gw_vault *v = gw_vault_new(key);
	char s1[GW_SECRET_TEXT], s2[GW_SECRET_TEXT];
	uint8_t id1[16], id2[16];
	struct gw_vault_entry *e;

	(void)state;
	gw_vault_new_secret(s1);
	gw_vault_new_secret(s2);
	assert_int_equal(strlen(s1), 43);
	assert_string_not_equal(s1, s2);
	gw_vault_id_secret(v, GW_V_MAGIC, s1, id1);
	gw_vault_id_secret(v, GW_V_MAGIC, s2, id2);
	e = gw_vault_put(v, id1, 10);
	e->kind = GW_V_MAGIC;
	e->exp_s = 100;
	assert_non_null(gw_vault_get(v, id1, 10));
	assert_null(gw_vault_get(v, id2, 10));
	/* Putting the same id again replaces the entry: one per id. */
	e = gw_vault_put(v, id1, 20);
	e->kind = GW_V_MAGIC;
	e->exp_s = 200;
	assert_int_equal(gw_vault_live(v, 20), 1);
	gw_vault_del(gw_vault_get(v, id1, 20));
	assert_null(gw_vault_get(v, id1, 20));
	/* A refresh chain's id (by client) is not a link's (by secret), nor an OTP's. */
	gw_vault_id_name(v, GW_V_REFRESH, 1, "bot", id1);
	gw_vault_id_name(v, GW_V_OTP, 1, "bot", id2);
	assert_memory_not_equal(id1, id2, 16);
	gw_vault_free(v);
}

static void a_full_table_forgets_the_nearest_expiry(void **state)
{
	struct gw_vault *v = gw_vault_new(key);
	unsigned i;

	(void)state;
	for (i = 0; i < 3 * GW_VAULT_SLOTS; i++) {
		char name[32];
		uint8_t id[16];
		struct gw_vault_entry *e;

		snprintf(name, sizeof(name), "user%u", i);
		gw_vault_id_name(v, GW_V_OTP, 1, name, id);
		e = gw_vault_put(v, id, 1);
		e->kind = GW_V_OTP;
		e->exp_s = 1000 + i;
	}
	assert_true(v->evicted >= GW_VAULT_SLOTS);
	assert_true(gw_vault_live(v, 1) <= GW_VAULT_SLOTS);
	/* The newest survives. */
	{
		char name[32];
		uint8_t id[16];

		snprintf(name, sizeof(name), "user%u", 3 * GW_VAULT_SLOTS - 1);
		gw_vault_id_name(v, GW_V_OTP, 1, name, id);
		assert_non_null(gw_vault_get(v, id, 1));
	}
	gw_vault_free(v);
}

#define NS 1000000000ull

/* A reset revokes one account's tokens issued until then, for as long as any of them could
 * live, and nobody else's. */
static void a_revocation_ends_the_tokens_before_it(void **state)
{
	struct gw_vault *v = gw_vault_new(key);
	uint64_t t0 = 1000 * NS + 5, since;

	(void)state;
	assert_int_equal(gw_vault_valid_since(v, "acme", "alice", 1000), 0);
	gw_vault_note_ttl(v, 3600);
	gw_vault_revoke(v, "acme", "alice", t0);
	since = gw_vault_valid_since(v, "acme", "alice", 1000);
	assert_true(since > t0);                   /* a token issued at the reset is ended */
	assert_true(since <= t0 + 1000);           /* one issued right after is not */
	assert_int_equal(gw_vault_valid_since(v, "acme", "bob", 1000), 0);
	assert_int_equal(gw_vault_valid_since(v, "other", "alice", 1000), 0);
	/* Kept while a token from before it could still be alive, then let go. */
	assert_int_equal(gw_vault_valid_since(v, "acme", "alice", 1000 + 3600), since);
	assert_int_equal(gw_vault_valid_since(v, "acme", "alice", 1000 + 3602), 0);
	/* A second reset moves it on. */
	gw_vault_revoke(v, "acme", "alice", t0 + 10 * NS);
	assert_true(gw_vault_valid_since(v, "acme", "alice", 1011) > t0 + 10 * NS);
	gw_vault_free(v);
}

/* A full probe window never forgets a revocation: the oldest makes way and its time becomes
 * everybody's floor (over-revoking, never bringing tokens back). Codes and links, in a table
 * of their own, cannot push a revocation out. */
static void a_full_revocation_table_raises_the_floor(void **state)
{
	struct gw_vault *v = gw_vault_new(key);
	uint64_t t0 = 2000 * NS;
	unsigned i;
	char name[32];

	(void)state;
	gw_vault_note_ttl(v, 3600);
	for (i = 0; i < 3 * GW_VAULT_SLOTS; i++) {
		uint8_t id[16];
		struct gw_vault_entry *e;

		snprintf(name, sizeof(name), "code%u", i);
		gw_vault_id_name(v, GW_V_OTP, 1, name, id);
		e = gw_vault_put(v, id, 2000);
		e->kind = GW_V_OTP;
		e->exp_s = 3000 + i;
	}
	gw_vault_revoke(v, "acme", "first", t0);
	assert_true(gw_vault_valid_since(v, "acme", "first", 2000) > t0);
	assert_int_equal(v->rv_floor_ns, 0);
	for (i = 0; i < 2 * GW_REVOKE_SLOTS; i++) {
		snprintf(name, sizeof(name), "user%u", i);
		gw_vault_revoke(v, "acme", name, t0 + (i + 1) * 1000);
	}
	assert_true(v->rv_evicted > 0);
	assert_true(v->rv_floor_ns > t0);
	/* Whatever was forgotten, no account's tokens from before its revocation count. */
	assert_true(gw_vault_valid_since(v, "acme", "first", 2000) > t0);
	for (i = 0; i < 2 * GW_REVOKE_SLOTS; i++) {
		snprintf(name, sizeof(name), "user%u", i);
		assert_true(gw_vault_valid_since(v, "acme", name, 2000) > t0 + (i + 1) * 1000);
	}
	/* And an account never revoked has only the floor. */
	assert_int_equal(gw_vault_valid_since(v, "acme", "never", 2000), v->rv_floor_ns);
	gw_vault_free(v);
}

static void client_secrets_and_token_keys(void **state)
{
	static struct sl_config c;
	uint8_t k1[GW_TOKEN_KEY_BYTES], k2[GW_TOKEN_KEY_BYTES], k3[GW_TOKEN_KEY_BYTES];
	int idx;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.n_tenants = 2;
	snprintf(c.clients[0].id, sizeof(c.clients[0].id), "bot");
	c.clients[0].tenant = 1;
	gw_client_secret_hash("s3cret", 6, c.clients[0].secret_hash);
	c.n_clients = 1;
	assert_true(gw_client_auth(&c, 1, "bot", "s3cret", 6, &idx));
	assert_int_equal(idx, 0);
	assert_false(gw_client_auth(&c, 1, "bot", "s3cre", 5, &idx));
	assert_false(gw_client_auth(&c, 0, "bot", "s3cret", 6, &idx)); /* another tenant */
	assert_int_equal(idx, -1);
	assert_false(gw_client_auth(&c, 1, "nobody", "", 0, &idx));
	gw_token_subkey(key, GW_TOK_PASSWORD, k1);
	gw_token_subkey(key, GW_TOK_MFA, k2);
	gw_token_subkey(key, GW_TOK_CLIENT, k3);
	assert_memory_equal(k1, key, sizeof(k1));
	assert_memory_not_equal(k1, k2, sizeof(k1));
	assert_memory_not_equal(k2, k3, sizeof(k1));
	gw_token_subkey(key, GW_TOK_REFRESH, k2);
	assert_memory_not_equal(k2, k3, sizeof(k1));
	assert_memory_not_equal(k2, k1, sizeof(k1));
}

static void refresh_names_round_trip(void **state)
{
	char name[GW_REFRESH_NAME_MAX], client[SL_CLIENT_ID_LEN];
	uint64_t family;
	uint32_t gen;

	(void)state;
	assert_int_equal(gw_refresh_name(name, sizeof(name), "ci-bot", 0x0123456789abcdefull, 7), 0);
	assert_string_equal(name, "ci-bot,0123456789abcdef,7");
	assert_int_equal(gw_refresh_parse(name, client, &family, &gen), 0);
	assert_string_equal(client, "ci-bot");
	assert_true(family == 0x0123456789abcdefull);
	assert_int_equal(gen, 7);
	assert_int_equal(gw_refresh_parse("ci-bot,0123,7", client, &family, &gen), -EINVAL);
	assert_int_equal(gw_refresh_parse("ci-bot,0123456789abcdef,", client, &family, &gen),
			 -EINVAL);
	assert_int_equal(gw_refresh_parse("ci-bot,0123456789abcdef,-1", client, &family, &gen),
			 -EINVAL);
	assert_int_equal(gw_refresh_parse(",0123456789abcdef,1", client, &family, &gen), -EINVAL);
	assert_int_equal(gw_refresh_parse("alice", client, &family, &gen), -EINVAL);
}

static const char BASE[] =
	"tenants = ( { name = \"acme\"; reservation = 100.0; } );\n"
	"gateway: {\n"
	"  listen = \"127.0.0.1:8080\";\n"
	"  capacity = { cpu = 1000.0; };\n";

static int load(const char *tail, struct sl_config *c, char *err, size_t n)
{
	char text[4096];
	const char *p;
	int r;

	snprintf(text, sizeof(text), "%s%s};\n", BASE, tail);
	p = tmpfile_with("conf", text);
	r = sl_config_load(p, NULL, c, err, n);
	unlink(p);
	return r;
}

static void clients_and_ceilings_config(void **state)
{
	static struct sl_config c;
	char err[4096];

	(void)state;
	assert_int_equal(load("  clients = ( { id = \"bot\"; tenant = \"acme\"; secret_hash = "
			      "\"blake2b256:00112233445566778899aabbccddeeff00112233445566778899"
			      "aabbccddeeff\"; grants = [\"client_credentials\"]; rate = 2.0; "
			      "burst = 10.0; } );\n  ceilings = ( { tenant = \"acme\"; cpu = 500.0; } );\n",
			      &c, err, sizeof(err)), 0);
	assert_int_equal(c.n_clients, 1);
	assert_int_equal(c.clients[0].grants, SL_GRANT_CLIENT_CREDENTIALS);
	assert_int_equal(c.clients[0].secret_hash[1], 0x11);
	assert_true(c.clients[0].rate == 2.0);
	assert_true(c.tenants[0].ceiling == 500.0);
	assert_int_equal(sl_config_client(&c, 0, "bot"), 0);
	assert_int_equal(sl_config_client(&c, 0, "other"), -1);
	/* Each problem with its line. */
	assert_int_equal(load("  clients = ( { id = \"bot\"; tenant = \"nope\";\n"
			      "    secret_hash = \"s3cret\"; grants = [\"password\"]; } );\n",
			      &c, err, sizeof(err)), -EINVAL);
	assert_contains(err, ":5: client 'bot'.tenant: no tenant named 'nope'");
	assert_contains(err, ":6: client 'bot'.secret_hash: expected \"blake2b256:\"");
	assert_contains(err, ":6: client 'bot'.grants: 'password' is not");
	assert_int_equal(load("  ceilings = ( { tenant = \"acme\"; cpu = 50.0; } );\n", &c, err,
			      sizeof(err)), -EINVAL);
	assert_contains(err, ":5: gateway.ceilings[0].cpu: 50 is below the reservation");
	assert_int_equal(load("  delivery = \"sms\";\n", &c, err, sizeof(err)), -EINVAL);
	assert_contains(err, ":5: gateway.delivery: 'sms'");
}

/* The values the vault puts in Redis (gw_vault_redis.c): a link's box opens with its own
 * secret only and holds no readable name; a code's value is the check hash of the code for
 * that account; a chain's value round-trips; the key carries the tenant's hash tag and no
 * name. */
static void link_boxes_open_with_their_secret_only(void **state)
{
	struct gw_vault *v = gw_vault_new(key), *other = NULL;
	char s1[GW_SECRET_TEXT], s2[GW_SECRET_TEXT], val[GW_VAULT_VALUE_MAX];
	char val2[GW_VAULT_VALUE_MAX], acct[GW_USER_MAX + 1], longname[GW_USER_MAX + 2];
	uint8_t k2[32];
	int purpose = 0;

	(void)state;
	assert_non_null(v);
	gw_vault_new_secret(s1);
	gw_vault_new_secret(s2);
	assert_int_equal(gw_vault_link_seal(v, s1, GW_LINK_REGISTER, "alice@example.org", val), 0);
	assert_null(strstr(val, "alice"));
	assert_int_equal(gw_vault_link_open(v, s1, val, &purpose, acct), 0);
	assert_int_equal(purpose, GW_LINK_REGISTER);
	assert_string_equal(acct, "alice@example.org");
	/* Another link's secret, or another fleet's key, opens nothing. */
	assert_int_equal(gw_vault_link_open(v, s2, val, &purpose, acct), -EBADMSG);
	randombytes_buf(k2, sizeof(k2));
	other = gw_vault_new(k2);
	assert_non_null(other);
	assert_int_equal(gw_vault_link_open(other, s1, val, &purpose, acct), -EBADMSG);
	/* A box changed in Redis (one hex digit, or cut short) opens nothing either. */
	snprintf(val2, sizeof(val2), "%s", val);
	val2[60] = val2[60] == '0' ? '1' : '0';
	assert_int_equal(gw_vault_link_open(v, s1, val2, &purpose, acct), -EBADMSG);
	val2[60] = val[60];
	val2[strlen(val2) - 2] = '\0';
	assert_int_equal(gw_vault_link_open(v, s1, val2, &purpose, acct), -EBADMSG);
	assert_int_equal(gw_vault_link_open(v, s1, "zz", &purpose, acct), -EBADMSG);
	/* One length for every name: the value's size says nothing about the account's. */
	assert_int_equal(gw_vault_link_seal(v, s1, GW_LINK_RESET, "b", val2), 0);
	assert_int_equal(strlen(val2), strlen(val));
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(gw_vault_link_seal(v, s1, GW_LINK_RESET, longname, val2), -EINVAL);
	gw_vault_free(other);
	gw_vault_free(v);
}

static void shared_values_and_keys(void **state)
{
	struct gw_vault *v = gw_vault_new(key);
	char code[7], val[GW_VAULT_VALUE_MAX], have[GW_VAULT_VALUE_MAX], wrong[7], k[160];
	uint8_t check[32], id[16];

	(void)state;
	assert_non_null(v);
	assert_false(gw_vault_shared(v));
	gw_vault_new_code(v, 1, "alice", code, check);
	gw_vault_code_value(check, have);
	assert_true(gw_vault_code_check(v, 1, "alice", code, 6, val));
	assert_string_equal(val, have);
	assert_null(strstr(have, code));
	snprintf(wrong, sizeof(wrong), "%06u", (unsigned)((atoi(code) + 1) % 1000000));
	assert_true(gw_vault_code_check(v, 1, "alice", wrong, 6, val));
	assert_string_not_equal(val, have);
	/* The same code for another account, or another tenant, is another value. */
	assert_true(gw_vault_code_check(v, 1, "bob", code, 6, val));
	assert_string_not_equal(val, have);
	assert_true(gw_vault_code_check(v, 2, "alice", code, 6, val));
	assert_string_not_equal(val, have);
	assert_false(gw_vault_code_check(v, 1, "alice", "12345", 5, val));
	assert_false(gw_vault_code_check(v, 1, "alice", "12a456", 6, val));

	gw_vault_chain_value(0x0123456789abcdefull, 41, val);
	assert_string_equal(val, "0123456789abcdef:41");
	/* What the rotate script's pattern ('^(%x+):(%d+)$') reads back. */
	gw_vault_chain_value(7, 0, val);
	assert_string_equal(val, "0000000000000007:0");

	gw_vault_id_name(v, GW_V_OTP, 1, "alice", id);
	snprintf(v->prefix, sizeof(v->prefix), "sluice");
	gw_vault_key(v, "acme", GW_V_OTP, id, k, sizeof(k));
	assert_int_equal(strncmp(k, "sluice:{acme}:vault:otp:", 24), 0);
	assert_int_equal(strlen(k), 24 + 32);
	assert_null(strstr(k, "alice"));
	{
		uint8_t r1[16], r2[16], r3[16];

		/* A revocation's id by tenant name: another tenant's same account is another. */
		gw_vault_id_revoke(v, "acme", "alice", r1);
		gw_vault_id_revoke(v, "other", "alice", r2);
		gw_vault_id_revoke(v, "acme", "alicf", r3);
		assert_memory_not_equal(r1, r2, 16);
		assert_memory_not_equal(r1, r3, 16);
		gw_vault_key(v, "acme", GW_V_REVOKED, r1, k, sizeof(k));
		assert_int_equal(strncmp(k, "sluice:{acme}:vault:revoked:", 28), 0);
	}
	gw_vault_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_new_code_replaces_the_old),
		cmocka_unit_test(the_stored_check_is_not_the_code),
		cmocka_unit_test(secrets_and_ids),
		cmocka_unit_test(a_full_table_forgets_the_nearest_expiry),
		cmocka_unit_test(a_revocation_ends_the_tokens_before_it),
		cmocka_unit_test(a_full_revocation_table_raises_the_floor),
		cmocka_unit_test(client_secrets_and_token_keys),
		cmocka_unit_test(refresh_names_round_trip),
		cmocka_unit_test(clients_and_ceilings_config),
		cmocka_unit_test(link_boxes_open_with_their_secret_only),
		cmocka_unit_test(shared_values_and_keys),
	};

	return cmocka_run_group_tests_name("gw_vault", tests, setup, NULL);
}
