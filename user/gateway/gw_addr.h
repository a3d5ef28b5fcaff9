/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Who is the client? The socket's peer, unless gateway.trusted_hops = N says N proxies of
 * ours stand in front: then the address N entries from the right of X-Forwarded-For, the
 * one our outermost proxy saw. The header is read whole, every line of it and at any length
 * (evhttp's max_headers bounds it), and counted from the right, so nothing a client sends
 * can push our proxies' entries out of sight. Everything left of the N-th entry is whatever
 * the client chose to send, so it is never read. The N-th and the ones right of it were
 * written by our proxies: each must be an address. A header with fewer than N entries did
 * not pass through all our proxies. The caller refuses both (400) rather than fall back to
 * the peer, which is a proxy of ours: its bucket is everybody's.
 */
#ifndef SLUICE_GW_ADDR_H
#define SLUICE_GW_ADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Addresses are kept as 16 bytes; IPv4 (and IPv4-mapped IPv6) as family 4 in addr[0..3]. */
struct gw_addr {
	uint8_t family; /* 4 or 6; 0 unknown */
	uint8_t addr[16];
};

enum gw_addr_source {
	GW_ADDR_PEER = 0,       /* the socket: no trusted hops configured */
	GW_ADDR_XFF,            /* X-Forwarded-For, N hops from the right */
	GW_ADDR_XFF_SHORT,      /* the header had fewer than N entries: peer used */
	GW_ADDR_XFF_INVALID,    /* an entry 1..N from the right is not an address: peer used */
	GW_ADDR_XFF_MISSING,    /* hops configured, no header: peer used */
};

/* Parse one address ("192.0.2.1", "192.0.2.1:443", "2001:db8::1", "[2001:db8::1]:443"). */
int gw_addr_parse(const char *s, size_t len, struct gw_addr *out);
/* From a sockaddr (AF_INET/AF_INET6); -EAFNOSUPPORT otherwise. */
int gw_addr_from_sockaddr(const struct sockaddr *sa, struct gw_addr *out);
const char *gw_addr_str(const struct gw_addr *a, char *buf, size_t n);

/*
 * The client address for a request from @peer with the X-Forwarded-For header values
 * @xff[0..n_xff) (in arrival order, each whole; several headers are one comma-joined list)
 * and @trusted_hops proxies in front. Returns enum gw_addr_source; *@out is the peer for
 * anything but GW_ADDR_XFF.
 */
int gw_client_addr(const struct gw_addr *peer, const char *const *xff, int n_xff,
		   uint32_t trusted_hops, struct gw_addr *out);

#endif
