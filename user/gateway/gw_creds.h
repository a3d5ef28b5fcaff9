/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The embedded credential store: a file of "tenant,account,PHC" lines (the PHC string of an
 * Argon2id hash), read whole at start and on reload, looked up in a hash table keyed by a
 * keyed hash of (tenant, account). Loading is all or nothing, with file:line for every
 * problem, so a bad file leaves the running store in place.
 *
 * A stored hash whose memory cost exceeds gateway.argon2.m_cost_kib is refused: the worker
 * pool is sized by that number, and one such line would let every login for that account
 * allocate past the memory budget.
 *
 * Account names (docs/endpoints.md, "Account names") are ASCII letters, digits and
 * . _ - + @, folded to lowercase wherever a name enters: a body's username, a credential
 * line, `sluicectl user add`. One name is one token in every format it is written to.
 */
#ifndef SLUICE_GW_CREDS_H
#define SLUICE_GW_CREDS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "gw_body.h"

#define GW_PHC_MAX 256                    /* bytes of a PHC string, with its NUL */
#define GW_CREDS_MAX_BYTES (256u << 20)   /* a larger file is refused, not read */
#define GW_CREDS_LINE_MAX 1024

/* What a name must be, for the messages that refuse one. */
#define GW_ACCOUNT_RULE "1..128 ASCII letters, digits and . _ - + @, the first a letter " \
	"or a digit"

/*
 * A name where it enters: true when s[0..n) is an account name (gw_account_valid, either
 * case), which is then folded to lowercase in place (same length). False leaves @s as it was.
 */
bool gw_account_norm(char *s, size_t n);
/* A name as the gateway keeps it: valid and already lowercase (a token's, a link's). */
bool gw_account_canonical(const char *s, size_t n);

struct gw_creds;

/*
 * Load @path, checking every tenant against @c and every hash against @c's argon2
 * settings. Returns 0 with *@out set, or a negative errno with one "file:line: reason" line
 * per problem (the first 16) in @err.
 */
int gw_creds_load(const char *path, const struct sl_config *c, struct gw_creds **out,
		  char *err, size_t errlen);
void gw_creds_free(struct gw_creds *s);
uint32_t gw_creds_count(const struct gw_creds *s);

/* The PHC string for (@tenant, @account), or NULL. */
const char *gw_creds_find(const struct gw_creds *s, const char *tenant, const char *account,
			  size_t alen);

/* Parse the m, t, p of an Argon2id PHC string. 0 or -EINVAL. */
int gw_phc_params(const char *phc, uint32_t *m_kib, uint32_t *t, uint32_t *p);

/* Hash @pwd with @gw's Argon2id parameters and a fresh random salt into @out (PHC). */
int gw_argon2_hash(const struct sl_gateway_cfg *gw, const char *pwd, size_t len, char *out,
		   size_t n);

/*
 * Append (@tenant, @account, hash of @pwd) to @path under an exclusive lock, creating the
 * file (mode 0600) if needed (`sluicectl user add`). @account is folded to lowercase first.
 * Refuses an unknown tenant, an invalid name, a file that does not load as it is, and an
 * account that already exists. Returns 0 or a negative errno with the reason in @err.
 */
int gw_creds_add(const char *path, const struct sl_config *c, const char *tenant,
		 const char *account, const char *pwd, size_t pwdlen, char *err, size_t errlen);

/*
 * Append (@tenant, @account, @phc) to @path under an exclusive lock (a sign-up: the hash was
 * made on the worker pool). Refuses an account already in the file. 0 or -errno, @err says.
 */
int gw_creds_append(const char *path, const char *tenant, const char *account,
		    const char *phc, char *err, size_t errlen);

#endif
