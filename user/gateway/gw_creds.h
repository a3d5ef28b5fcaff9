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
 *
 * A sign-up adds one account while the gateway runs: its line is appended to the file by a
 * writer thread (fsync'd, several sign-ups to one fsync), and once it is on disk the loop
 * adds it to the table it has (gw_creds_insert), without reading the file again. Growing
 * the table moves its slots a few at a time, so no insert costs the whole table.
 */
#ifndef SLUICE_GW_CREDS_H
#define SLUICE_GW_CREDS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
 * Load @path (under a shared flock: appends are exclusive), checking every tenant against
 * @c and every hash against @c's argon2 settings. Returns 0 with *@out set, or a negative errno with one "file:line: reason" line
 * per problem (the first 16) in @err.
 */
int gw_creds_load(const char *path, const struct sl_config *c, struct gw_creds **out,
		  char *err, size_t errlen);
void gw_creds_free(struct gw_creds *s);
uint32_t gw_creds_count(const struct gw_creds *s);

/* The file a table was loaded from, as it was then (all zero for none). */
struct gw_creds_origin {
	dev_t dev;
	ino_t ino;
	off_t size;
};
const struct gw_creds_origin *gw_creds_origin(const struct gw_creds *s);

/* The PHC string for (@tenant, @account), or NULL. */
const char *gw_creds_find(const struct gw_creds *s, const char *tenant, const char *account,
			  size_t alen);

/*
 * Add (@tenant, @account, @phc) to the table (not the file: a sign-up the writer has put on
 * disk). The strings are copied. 0; -EEXIST when the account is there already (a reload read
 * its line); -EINVAL for a name that is not canonical, a tenant or PHC string too long;
 * -ENOMEM. Costs what a lookup does, plus at most a few dozen slots of a table that grows.
 */
int gw_creds_insert(struct gw_creds *s, const char *tenant, const char *account,
		    const char *phc);

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

/* ---- sign-ups, appended off the loop ---------------------------------------------------- */

/* One line to append; the writer owns it from submit to collect. */
struct gw_cappend {
	struct gw_cappend *next;              /* the writer's queues */
	struct gw_cappend *lprev, *lnext;     /* the loop's list of those not collected yet */
	char path[PATH_MAX];
	char tenant[SL_TENANT_NAME_LEN];
	char account[GW_USER_MAX + 1];
	char phc[GW_PHC_MAX];
	struct gw_creds_origin origin;        /* of the table the name was looked up in */
	void *arg;                            /* the caller's (the request waiting) */
	/* out */
	int ret;                              /* 0: on disk; -EEXIST: the file has it already */
	char err[512];
	uint64_t done_ns;
};

#define GW_CWRITER_MAX 1024 /* appends submitted and not collected; past it -EBUSY */

struct gw_cwriter_stats {
	uint64_t appended, failed, exists, batches;
	uint64_t scanned_bytes;                /* read to look for names others appended */
};

struct gw_cwriter;

/* Start the writer thread. 0 or -errno. */
int gw_cwriter_start(struct gw_cwriter **out);
/* Readable when finished appends wait to be collected. */
int gw_cwriter_fd(const struct gw_cwriter *w);
/*
 * Loop side: queue @a (path, tenant, account, phc and the origin of the table the loop
 * found the name missing in; gw_cwriter_free() frees what was never collected, so malloc
 * it). Under an exclusive flock the writer reads what others (sluicectl user add, a hand
 * edit) appended to the file since that load, remembering their names until the next load,
 * and refuses a name among them (-EEXIST); a file replaced or cut since the load is read
 * whole. Then it appends the line and fsyncs; every append queued meanwhile shares the
 * write and the fsync. A failed write is cut off again, so the file always loads. 0, or
 * -EBUSY with GW_CWRITER_MAX outstanding, -ESHUTDOWN once stopped.
 */
int gw_cwriter_submit(struct gw_cwriter *w, struct gw_cappend *a);
/* Loop side: is an append of (@tenant, @account) submitted and not yet collected? */
bool gw_cwriter_pending(const struct gw_cwriter *w, const char *tenant, const char *account);
/* Loop side: drain the fd and take every finished append (a list by ->next). */
struct gw_cappend *gw_cwriter_collect(struct gw_cwriter *w);
uint32_t gw_cwriter_outstanding(const struct gw_cwriter *w);
void gw_cwriter_get_stats(struct gw_cwriter *w, struct gw_cwriter_stats *st);
/* Write what is queued, then stop the thread; gw_cwriter_collect() still returns it all. */
void gw_cwriter_stop(struct gw_cwriter *w);
/* Stop if needed and free; appends never collected are freed with it. */
void gw_cwriter_free(struct gw_cwriter *w);

#endif
