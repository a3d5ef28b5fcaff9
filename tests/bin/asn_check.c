// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * asn_check: does a live installation's fast ASN shapes (the /24 table and the IPv6 table)
 * type every source as its LPM trie does? For tests/net/test_asn_import.sh and
 * bench/asn_dataset.sh (the real table).
 *
 *   asn_check PIN_PATH TABLE.csv [--every N]
 *
 * Reads the live slot of both fast shapes from the pins (one batch read each) and walks them
 * as the datapath does (sl_asn6_walk, the /24 nibble); for every Nth row of TABLE.csv (all by
 * default) it samples the row's first and last address, the addresses either side, and two
 * random ones inside the row, and asks the kernel's trie (one lookup per address). A source
 * the fast shape types must get the trie's class, or the unknown class where no row covers
 * it; "use the trie" is counted, never wrong. Prints one JSON line; exit 0 when every sampled
 * source agrees, 1 when one does not (the first few are printed), 2 on bad arguments or
 * unreadable pins.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <bpf/bpf.h>

#include "addr.h"
#include "asn.h"
#include "maps.h"

/* The live slot of @fd, @n entries of @vsize bytes from @first. */
static void *read_slot(int fd, __u32 first, __u32 n, size_t vsize)
{
	char *v = malloc((size_t)n * vsize);
	__u32 *keys = malloc((size_t)n * sizeof(*keys)), done = 0;

	if (!v || !keys) {
		free(v);
		free(keys);
		return NULL;
	}
	/* In chunks: the batch continues after the key in in_batch (the last one read). */
	while (done < n) {
		__u32 chunk = n - done > 65536 ? 65536 : n - done, out_batch = 0, count = chunk;
		__u32 in_batch = first + done - 1;
		int ret = bpf_map_lookup_batch(fd, first + done ? &in_batch : NULL, &out_batch,
					       keys + done, v + (size_t)done * vsize, &count, NULL);

		if (ret && errno != ENOENT) {
			free(v);
			free(keys);
			return NULL;
		}
		if (!count)
			break;
		done += count;
	}
	free(keys);
	if (done < n) {
		free(v);
		return NULL;
	}
	return v;
}

static uint32_t rnd_state = 2463534242u;

static uint32_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "every", required_argument, NULL, 'e' }, { 0 } };
	unsigned long every = 1, line = 0, checked = 0, fast = 0, deferred = 0, bad = 0;
	unsigned long v6_checked = 0, v6_deferred = 0;
	struct sl_settings set;
	struct sl_maps m;
	uint64_t *dir;
	uint32_t *v6;
	char buf[512];
	FILE *f;
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt != 'e' || (every = strtoul(optarg, NULL, 10)) == 0) {
			fprintf(stderr, "usage: asn_check PIN_PATH TABLE.csv [--every N]\n");
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: asn_check PIN_PATH TABLE.csv [--every N]\n");
		return 2;
	}
	sl_maps_init(&m);
	if (sl_maps_open_pinned(&m, argv[optind]) || sl_maps_read_settings(&m, &set)) {
		fprintf(stderr, "asn_check: cannot read the maps under %s: %s\n", argv[optind],
			strerror(errno));
		return 2;
	}
	f = fopen(argv[optind + 1], "r");
	if (!f) {
		fprintf(stderr, "asn_check: %s: %s\n", argv[optind + 1], strerror(errno));
		return 2;
	}
	dir = read_slot(m.asn_dir, (set.asn_slot & 1) * SL_DIR_WORDS, SL_DIR_WORDS, sizeof(*dir));
	v6 = read_slot(m.asn6, (set.asn_slot & 1) * SL_V6_LINES, SL_V6_LINES,
		       sizeof(struct sl_v6_line)); /* lines of 16 entries: the entries in order */
	if (!dir || !v6) {
		fprintf(stderr, "asn_check: cannot read the fast tables: %s\n", strerror(errno));
		return 2;
	}
	while (fgets(buf, sizeof(buf), f)) {
		char *comma = strchr(buf, ','), why[160];
		struct sl_prefix p;
		int s;

		if (buf[0] == '#' || !strncmp(buf, "prefix,", 7) || !comma)
			continue;
		*comma = '\0';
		if (sl_prefix_parse(buf, &p, 1, why, sizeof(why)) || line++ % every)
			continue;
		for (s = 0; s < 6; s++) {
			unsigned bits = p.family == SL_FAM_V4 ? 32 : 128, b;
			struct sl_prefix a = p;
			struct sl_asn_val av;
			uint32_t got, want;
			int j, n = (int)bits / 8;

			a.plen = (uint8_t)bits;
			if (s == 1 || s == 2) { /* the last address; the one after it */
				for (b = p.plen; b < bits; b++)
					a.addr[b / 8] |= (uint8_t)(0x80u >> (b % 8));
				for (j = n; s == 2 && j-- > 0 && ++a.addr[j] == 0;)
					;
			} else if (s == 3) { /* the one before the first */
				for (j = n; j-- > 0 && a.addr[j]-- == 0;)
					;
			} else if (s > 3) { /* random inside the row */
				for (b = p.plen; b < bits; b++)
					if (rnd() & 1)
						a.addr[b / 8] |= (uint8_t)(0x80u >> (b % 8));
			}
			want = sl_maps_lookup_asn(&m, &a, &av) ? set.unknown_class : av.class_id;
			if (a.family == SL_FAM_V4) {
				uint32_t v4 = ((uint32_t)a.addr[0] << 24) | ((uint32_t)a.addr[1] << 16) |
					      ((uint32_t)a.addr[2] << 8) | a.addr[3];

				got = (uint32_t)(dir[v4 >> 12] >> (((v4 >> 8) & 15) * 4)) & 15;
			} else {
				got = sl_asn6_walk(v6, SL_V6_WORDS, a.addr);
				v6_checked++;
				v6_deferred += got == SL_DIR_USE_TRIE;
			}
			checked++;
			if (got == SL_DIR_USE_TRIE) {
				deferred++;
				continue;
			}
			fast++;
			if (got != want && bad++ < 5) {
				char t[INET6_ADDRSTRLEN];

				inet_ntop(a.family == SL_FAM_V4 ? AF_INET : AF_INET6, a.addr, t,
					  sizeof(t));
				fprintf(stderr, "asn_check: %s: the fast table says class %u, the trie %u\n",
					t, got, want);
			}
		}
	}
	fclose(f);
	printf("{\"rows_sampled\":%lu,\"sources\":%lu,\"fast\":%lu,\"trie\":%lu,\"v6_sources\":%lu,"
	       "\"v6_trie\":%lu,\"disagree\":%lu}\n", (line + every - 1) / every, checked, fast,
	       deferred, v6_checked, v6_deferred, bad);
	free(dir);
	free(v6);
	sl_maps_close(&m);
	return bad ? 1 : 0;
}
