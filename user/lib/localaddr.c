// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The addresses this node serves, read the way the kernel decides it: the RTN_LOCAL routes
 * of its local routing table (every interface address, and AnyIP prefixes such as
 * `ip route add local 192.0.2.0/24 dev lo`). The edge replies only from these and never to
 * them, so a SYN-ACK or a 429 never leaves from an address the kernel would not answer for.
 * A netlink dump per family; the table is small, so sluiced simply reads it again every
 * second (edge_tick) and rewrites the map when it changed.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "localaddr.h"

static int dump_family(int fd, int family, struct sl_local_prefix *out, size_t cap, size_t *n)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
	} req;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	static __thread char buf[32768];
	uint32_t seq = (uint32_t)time(NULL) ^ (uint32_t)family;

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	req.nh.nlmsg_type = RTM_GETROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.nh.nlmsg_seq = seq;
	req.rt.rtm_family = (unsigned char)family;
	req.rt.rtm_table = RT_TABLE_LOCAL;
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	for (;;) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (len < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (unsigned)len);
		     nh = NLMSG_NEXT(nh, len)) {
			struct rtmsg *rt;
			struct rtattr *a;
			unsigned alen;
			uint32_t table, ifindex = 0;
			const void *dst = NULL;

			if (nh->nlmsg_seq != seq)
				continue;
			if (nh->nlmsg_type == NLMSG_DONE)
				return 0;
			if (nh->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(nh);

				return e->error ? e->error : -EIO;
			}
			if (nh->nlmsg_type != RTM_NEWROUTE)
				continue;
			rt = NLMSG_DATA(nh);
			if (rt->rtm_type != RTN_LOCAL || rt->rtm_family != family)
				continue;
			table = rt->rtm_table;
			alen = RTM_PAYLOAD(nh);
			for (a = RTM_RTA(rt); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
				if (a->rta_type == RTA_TABLE)
					memcpy(&table, RTA_DATA(a), sizeof(table));
				else if (a->rta_type == RTA_DST)
					dst = RTA_DATA(a);
				else if (a->rta_type == RTA_OIF)
					memcpy(&ifindex, RTA_DATA(a), sizeof(ifindex));
			}
			if (table != RT_TABLE_LOCAL || !dst)
				continue;
			if (*n < cap) {
				struct sl_local_prefix *p = &out[*n];

				memset(p, 0, sizeof(*p));
				p->p.family = family == AF_INET ? SL_FAM_V4 : SL_FAM_V6;
				p->p.plen = rt->rtm_dst_len;
				memcpy(p->p.addr, dst, family == AF_INET ? 4 : 16);
				p->ifindex = ifindex;
			}
			(*n)++;
		}
	}
}

long sl_local_dump(struct sl_local_prefix *out, size_t cap)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	size_t n = 0;
	int fd, ret;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	ret = dump_family(fd, AF_INET, out, cap, &n);
	if (!ret)
		ret = dump_family(fd, AF_INET6, out, cap, &n);
	close(fd);
	return ret ? ret : (long)n;
}
