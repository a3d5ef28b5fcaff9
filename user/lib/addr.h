/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Addresses and prefixes as sluice keys them: parsing, formatting, masking, and building the
 * exact map keys the datapath builds (sl_lpm_key, sl_bkey), so userspace can look up what a
 * packet from an address would hit.
 */
#ifndef SLUICE_ADDR_H
#define SLUICE_ADDR_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/abi.h"

struct sl_prefix {
	uint8_t family; /* SL_FAM_V4 or SL_FAM_V6 */
	uint8_t plen;
	uint8_t addr[16]; /* IPv4 in the first 4 bytes */
};

/* "a.b.c.d", "a.b.c.d/n", "x::y", "x::/n". A bare address is a full-length prefix.
 * Host bits set below the prefix length are an error when @strict, masked off otherwise.
 * Returns 0, or -EINVAL with a reason in @err. */
int sl_prefix_parse(const char *s, struct sl_prefix *p, int strict, char *err, size_t errlen);

/* Zero every bit past @plen and set p->plen = @plen (which must not exceed the family's). */
void sl_prefix_mask(struct sl_prefix *p, uint8_t plen);

/* "198.51.100.0/24", "2001:db8::/48". */
char *sl_prefix_str(const struct sl_prefix *p, char *buf, size_t n);

/* The key the ASN trie is searched with (IPv4 mapped into ::ffff:0:0/96). */
void sl_prefix_to_lpm(const struct sl_prefix *p, struct sl_lpm_key *k);
/* The inverse: an LPM key (IPv4 mapped into ::ffff:0:0/96) back to a prefix. */
void sl_lpm_to_prefix(const struct sl_lpm_key *k, struct sl_prefix *p);

/* The bucket key the datapath builds for a source @a at @plen, @level, @class_id. */
void sl_bkey_make(struct sl_bkey *k, const struct sl_prefix *a, uint8_t plen, uint8_t level,
		  uint8_t class_id);

static inline uint8_t sl_family_bits(uint8_t family)
{
	return family == SL_FAM_V4 ? 32 : 128;
}

#endif
