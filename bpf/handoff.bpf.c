// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The stateless front's hand-off, at TC ingress (bpf_sk_assign_tcp_reqsk is a TC-only kfunc).
 *
 * The XDP program answered the SYN with a cookie and decided the connection on its first
 * request segment; what it admitted arrives here. For that one segment (valid cookie, seq =
 * ISN + 1, data), this program finds the listening socket and asks the kernel to build the
 * request socket from the cookie's MSS, window scale and SACK bits, so the kernel then
 * creates the connection from this data-carrying ACK and the application reads the request
 * intact. Everything else passes untouched: established segments, racing segments of the
 * first burst (the kernel finds the socket the first one made), and all other traffic.
 *
 * A tuple reused while the server still holds its previous connection in TIME_WAIT: the
 * kernel would accept the new SYN and open a new connection (RFC 6191 and its own rules), so
 * the new connection is handed to the listener, not to the TIME_WAIT socket that a lookup of
 * the tuple finds first.
 *
 * Loaded only where the kernel offers the kfunc: sluiced loads this object as its probe, and
 * falls back to the SYN front when it does not load.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "sluice/abi.h"
#include "cookie_mac.h"
#include "parse.h"
#include "maps.h"
#include "reply.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The kfunc's attributes, as the kernel declares them (6.9 and later). */
struct bpf_tcp_req_attrs {
	__u32 rcv_tsval;
	__u32 rcv_tsecr;
	__u16 mss;
	__u8 rcv_wscale;
	__u8 snd_wscale;
	__u8 ecn_ok;
	__u8 wscale_ok;
	__u8 sack_ok;
	__u8 tstamp_ok;
	__u8 usec_ts_ok;
	__u8 reserved[3];
};

/* A complete type, not a forward declaration: libbpf matches the kfunc's prototype against the
 * kernel's kind by kind, and a FWD is not a STRUCT. Its members are never used. */
struct sock {
	__u64 opaque;
};

extern int bpf_sk_assign_tcp_reqsk(struct __sk_buff *skb, struct sock *sk,
				   struct bpf_tcp_req_attrs *attrs, int attrs__sz) __ksym;

/* volatile keeps it in .rodata proper: a plain static const array lands in a mergeable
 * section libbpf cannot place (and the whole object fails to open). */
const volatile __u16 mss_tab[8] = SL_COOKIE_MSS;

static __always_inline int count(__u32 reason)
{
	__u32 none = SL_CLASS_NONE;
	struct sl_counters *c = bpf_map_lookup_elem(&sl_stats, &none);

	if (c && reason < SL_REASON_SLOTS)
		c->pkts[reason]++;
	return TC_ACT_OK;
}

/*
 * The tags a deep stack still holds in the frame, under the one the kernel took into
 * skb->vlan_tci before this hook, stripped the way the kernel would strip them next: only
 * when every tag is a priority tag (VLAN id 0), for which no VLAN device can exist. The kfunc
 * keys on skb->protocol, which names the next tag until then. A stack holding a real VLAN id
 * is left alone (its frame belongs to a VLAN device): -1, and the hand-off fails. A cookie
 * goes back under at most SL_MAX_VLAN tags, so no first request of ours is under more.
 * Invalidates every packet pointer.
 */
static __always_inline int strip_priority_tags(struct __sk_buff *skb)
{
	__u32 off = 12;
	__u8 h[4];
	int i, n;

	if (skb->vlan_present && (skb->vlan_tci & 0x0fff))
		return -1;
	for (n = 0; n < SL_MAX_VLAN; n++) {
		if (bpf_skb_load_bytes(skb, off, h, 4))
			return -1;
		if (!proto_is_vlan((__u16)(h[0] | (__u16)h[1] << 8)))
			break;
		if ((h[2] & 0x0f) || h[3])
			return -1;
		off += 4;
	}
	if (n == SL_MAX_VLAN)
		return -1;
	/* Each pop drops the tag in skb->vlan_tci and moves the next one there. */
	for (i = 0; i < SL_MAX_VLAN; i++) {
		if (i >= n || bpf_skb_vlan_pop(skb))
			break;
	}
	return skb->protocol == bpf_htons(ETH_P_IP) || skb->protocol == bpf_htons(ETH_P_IPV6) ?
		       0 : -1;
}

SEC("tc")
int sluice_handoff(struct __sk_buff *skb)
{
	struct cursor c = { .pos = (void *)(long)skb->data, .end = (void *)(long)skb->data_end };
	struct bpf_tcp_req_attrs attrs = {};
	struct bpf_sock_tuple t = {};
	struct sl_cookie_keys *keys;
	struct sl_cookie_opts o;
	struct sl_conn_id id = {};
	struct tcp_opts to = {}; /* the first request's timestamps, which the kfunc carries on */
	struct bpf_sock *sk;
	struct tcp_sock *tsk;
	struct sl_port *port;
	struct iphdr *iph = NULL;
	struct ipv6hdr *ip6 = NULL;
	struct tcphdr *th;
	__u32 zero = 0, dport, plen, tlen, tsz;
	__u8 frag = FRAG_NONE;
	int proto, ret, reused = 0;

	proto = parse_eth(&c);
	/* The kernel took the outermost tag into skb->vlan_tci before this hook; the rest of a
	 * deep stack is still in the frame, and XDP judged it whole. */
	if (proto == -SL_R_MAL_VLAN_DEPTH)
		proto = parse_eth_deep(&c, skb, (void *)(long)skb->data, 1);
	if (proto == bpf_htons(ETH_P_IP))
		proto = parse_ip4(&c, &iph, &frag);
	else if (proto == bpf_htons(ETH_P_IPV6))
		proto = parse_ip6(&c, &ip6, skb, (void *)(long)skb->data, 1, &frag);
	else
		return TC_ACT_OK;
	if (proto != IPPROTO_TCP || frag != FRAG_NONE || parse_tcp(&c, &th) < 0)
		return TC_ACT_OK;
	dport = bpf_ntohs(th->dest);
	port = bpf_map_lookup_elem(&sl_ports, &dport);
	if (!port || !port->protected || port->front != SL_FRONT_STATELESS)
		return TC_ACT_OK;
	/* Only a first request: an ACK that carries data, nothing else set. */
	if (th->syn || th->rst || th->fin || !th->ack)
		return TC_ACT_OK;
	/* Branch on both pointers, not on one being NULL: the verifier follows the impossible
	 * "neither" path too, and would refuse the dereference on it. */
	if (iph)
		plen = bpf_ntohs(iph->tot_len) - iph->ihl * 4;
	else if (ip6)
		plen = bpf_ntohs(ip6->payload_len) - (__u32)((void *)th - (void *)(ip6 + 1));
	else
		return TC_ACT_OK;
	tlen = th->doff * 4;
	if (plen <= tlen)
		return TC_ACT_OK;

	keys = bpf_map_lookup_elem(&sl_cookie_keys, &zero);
	if (!keys || !sl_cookie_marked(bpf_ntohl(th->ack_seq) - 1, keys))
		return TC_ACT_OK;
	if (tlen > 20) {
		__u32 off = (__u32)((void *)th - (void *)(long)skb->data) + 20;

		tsz = tlen - 20;
		if (tsz > 40)
			tsz = 40;
		if (off < 0xffff && !bpf_skb_load_bytes(skb, off, to.buf, tsz)) {
			to.len = tsz;
			bpf_loop(40, tcp_opt_step, &to, 0);
		}
	}
	id.family = iph ? SL_FAM_V4 : SL_FAM_V6;
	id.sport = bpf_ntohs(th->source);
	id.dport = dport;
	id.isn = bpf_ntohl(th->seq) - 1;
	if (iph) {
		__builtin_memcpy(id.saddr, &iph->saddr, 4);
		__builtin_memcpy(id.daddr, &iph->daddr, 4);
		t.ipv4.saddr = iph->saddr;
		t.ipv4.daddr = iph->daddr;
		t.ipv4.sport = th->source;
		t.ipv4.dport = th->dest;
	} else if (ip6) {
		__builtin_memcpy(id.saddr, &ip6->saddr, 16);
		__builtin_memcpy(id.daddr, &ip6->daddr, 16);
		__builtin_memcpy(t.ipv6.saddr, &ip6->saddr, 16);
		__builtin_memcpy(t.ipv6.daddr, &ip6->daddr, 16);
		t.ipv6.sport = th->source;
		t.ipv6.dport = th->dest;
	} else {
		return TC_ACT_OK;
	}
	/* Not this connection's first segment (racing, or established): the kernel's. */
	if (!sl_cookie_check(&id, bpf_ntohl(th->ack_seq) - 1, to.ts, to.tsecr,
			     bpf_ktime_get_coarse_ns(), keys, &o))
		return TC_ACT_OK;

	sk = bpf_skc_lookup_tcp(skb, &t, iph ? sizeof(t.ipv4) : sizeof(t.ipv6),
				BPF_F_CURRENT_NETNS, 0);
	if (sk && sk->state == BPF_TCP_TIME_WAIT) {
		/* The old connection's TIME_WAIT: find the listener behind it. No connection
		 * has remote port 0, so this lookup can only end at a listener. */
		bpf_sk_release(sk);
		if (iph) {
			t.ipv4.sport = 0;
			sk = bpf_skc_lookup_tcp(skb, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
		} else {
			t.ipv6.sport = 0;
			sk = bpf_skc_lookup_tcp(skb, &t, sizeof(t.ipv6), BPF_F_CURRENT_NETNS, 0);
		}
		reused = 1;
	}
	if (!sk)
		return count(SL_R_HANDOFF_FAIL); /* no listener: the kernel will reset */
	if (sk->state != BPF_TCP_LISTEN) {
		/* A retransmitted first segment: its socket exists already. */
		bpf_sk_release(sk);
		return TC_ACT_OK;
	}
	tsk = bpf_skc_to_tcp_sock(sk);
	if (!tsk) {
		bpf_sk_release(sk);
		return count(SL_R_HANDOFF_FAIL);
	}
	attrs.mss = mss_tab[o.mss_idx & 7];
	/* The kfunc's floor: IPv6 cannot go below 1220. */
	if (!iph && attrs.mss < 1220)
		attrs.mss = 1220;
	/* From here no packet pointer is used: a deep tag stack may be stripped. */
	if (proto_is_vlan((__u16)skb->protocol) && strip_priority_tags(skb)) {
		bpf_sk_release(sk);
		return count(SL_R_HANDOFF_FAIL);
	}
	if (o.wscale) {
		attrs.wscale_ok = 1;
		attrs.snd_wscale = o.wscale - 1;
		attrs.rcv_wscale = SL_SYNACK_WS;
	}
	attrs.sack_ok = o.sack;
	if (o.ts) {
		/* The kernel's clock for this connection continues from the TSval we sent. */
		attrs.tstamp_ok = 1;
		attrs.rcv_tsval = to.tsval;
		attrs.rcv_tsecr = to.tsecr;
	}
	ret = bpf_sk_assign_tcp_reqsk(skb, (struct sock *)tsk, &attrs, sizeof(attrs));
	bpf_sk_release(sk);
	if (ret)
		return count(SL_R_HANDOFF_FAIL);
	if (reused)
		count(SL_R_TW_REUSE);
	return count(SL_R_HANDOFF);
}
