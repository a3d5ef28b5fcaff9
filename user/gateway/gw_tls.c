// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * TLS on the gateway's listener: see gw_tls.h. The defaults, decided here and said in
 * docs/gateway.md ("TLS"):
 *   - TLS 1.2 and 1.3 (gateway.tls.min_version "1.3" drops 1.2); TLS 1.3's suites are
 *     OpenSSL's, TLS 1.2's Mozilla's "intermediate" list (ECDHE, AEAD only); groups X25519,
 *     P-256, P-384; no compression, no renegotiation;
 *   - ALPN: http/1.1 only. A client that offers ALPN without it (h2 alone) is refused in the
 *     handshake (no_application_protocol), not served HTTP/1.1 it did not ask for; a client
 *     that offers no ALPN at all is served;
 *   - no resumption: no session tickets and no session cache. A ticket key that lives as
 *     long as the process undoes forward secrecy for every session it sealed, rotating one
 *     well means sharing it across the nodes (issue 15's nodes share no state but Redis),
 *     and a login endpoint's clients hold a keep-alive rather than reconnecting; the full
 *     handshake is the cost measured in docs/performance.md;
 *   - an encrypted key is refused at load: a daemon has no terminal to ask a passphrase on.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "gw_internal.h"
#include "gw_tls.h"
#include "log.h"

/* Mozilla's "intermediate" TLS 1.2 suites (server side TLS guidelines, version 5.7). */
#define TLS12_CIPHERS "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:" \
	"ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:" \
	"ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:" \
	"DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305"
#define TLS_GROUPS "X25519:P-256:P-384"
#define EXPIRY_WARN_DAYS 14

/* What a connection's SSL carries for the counters (its ex_data; freed with the SSL). */
struct gw_tls_conn {
	struct gw_tls_stats *st;
	bool counted;
};

static int conn_idx = -1;
static pthread_once_t idx_once = PTHREAD_ONCE_INIT;

static void conn_data_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
			   void *argp)
{
	(void)parent;
	(void)ad;
	(void)idx;
	(void)argl;
	(void)argp;
	free(ptr);
}

static void make_idx(void)
{
	conn_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, conn_data_free);
}

/* ---- building a context --------------------------------------------------------------- */

/* The newest OpenSSL error's reason, for a person. */
static const char *ssl_reason(void)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;

	return r ? r : "unknown error";
}

static void tm_text(const ASN1_TIME *t, char *out, size_t n)
{
	struct tm tm;

	if (!t || !ASN1_TIME_to_tm(t, &tm) || !strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, n, "?");
}

/* A passphrase callback that never asks: an encrypted key fails to load. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

/* Refuse a client whose ALPN list lacks http/1.1 rather than answer it in a protocol it did
 * not offer; one that offers no ALPN never gets here and is served. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	static const unsigned char ours[] = "\x08http/1.1";
	unsigned char *sel = NULL;

	(void)ssl;
	(void)arg;
	if (SSL_select_next_proto(&sel, outlen, ours, sizeof(ours) - 1, in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

/* A handshake completed: counted once per connection (TLS 1.3 reports "done" again after
 * post-handshake messages). */
static void on_info(const SSL *ssl, int where, int ret)
{
	struct gw_tls_conn *tc;

	(void)ret;
	if (!(where & SSL_CB_HANDSHAKE_DONE))
		return;
	tc = SSL_get_ex_data(ssl, conn_idx);
	if (tc && !tc->counted) {
		tc->counted = true;
		tc->st->ok++;
	}
}

/* @path readable? If not, the reason into @err against @file:@line and false. */
static bool readable(const char *path, const char *file, int line, const char *key,
		     char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");

	if (f) {
		fclose(f);
		return true;
	}
	snprintf(err, errlen, "%s:%d: gateway.tls.%s: cannot read '%s': %s\n", file, line, key,
		 path, strerror(errno));
	return false;
}

/* The certificate (the first in @path) inside its validity? */
static bool cert_current(const char *path, const char *file, int line, char *err,
			 size_t errlen)
{
	FILE *f = fopen(path, "r");
	X509 *x = f ? PEM_read_X509(f, NULL, no_passphrase, NULL) : NULL;
	char when[32];
	bool ok = false;

	if (f)
		fclose(f);
	if (!x) {
		snprintf(err, errlen, "%s:%d: gateway.tls.certificate: no PEM certificate in '%s'"
			 " (%s)\n", file, line, path, ssl_reason());
		return false;
	}
	if (X509_cmp_current_time(X509_get0_notBefore(x)) >= 0) {
		tm_text(X509_get0_notBefore(x), when, sizeof(when));
		snprintf(err, errlen, "%s:%d: gateway.tls.certificate: '%s' is not valid before "
			 "%s\n", file, line, path, when);
	} else if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0) {
		tm_text(X509_get0_notAfter(x), when, sizeof(when));
		snprintf(err, errlen, "%s:%d: gateway.tls.certificate: '%s' expired on %s\n", file,
			 line, path, when);
	} else {
		ok = true;
	}
	X509_free(x);
	return ok;
}

int gw_tls_build(const struct sl_config *c, struct ssl_ctx_st **out, char *err, size_t errlen)
{
	const char *file = c->gw.tls.file[0] ? c->gw.tls.file : c->path;
	const char *cert = c->gw.tls.certificate, *key = c->gw.tls.key;
	int cl = c->gw.tls.certificate_line, kl = c->gw.tls.key_line, ok;
	EVP_PKEY *pk;
	SSL_CTX *ctx;
	FILE *f;

	*out = NULL;
	if (!cert[0])
		return 0;
	pthread_once(&idx_once, make_idx);
	if (conn_idx < 0) {
		snprintf(err, errlen, "%s:%d: gateway.tls: OpenSSL cannot initialise\n", file, cl);
		return -EINVAL;
	}
	if (!readable(cert, file, cl, "certificate", err, errlen) ||
	    !readable(key, file, kl, "key", err, errlen) ||
	    !cert_current(cert, file, cl, err, errlen))
		return -EINVAL;
	ERR_clear_error();
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		snprintf(err, errlen, "%s:%d: gateway.tls: cannot make a context: %s\n", file, cl,
			 ssl_reason());
		return -EINVAL;
	}
	SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
	if (!SSL_CTX_use_certificate_chain_file(ctx, cert)) {
		snprintf(err, errlen, "%s:%d: gateway.tls.certificate: cannot load the chain in "
			 "'%s': %s\n", file, cl, cert, ssl_reason());
		goto fail;
	}
	f = fopen(key, "r");
	pk = f ? PEM_read_PrivateKey(f, NULL, no_passphrase, NULL) : NULL;
	if (f)
		fclose(f);
	if (!pk) {
		snprintf(err, errlen, "%s:%d: gateway.tls.key: no unencrypted PEM private key in "
			 "'%s' (%s)\n", file, kl, key, ssl_reason());
		goto fail;
	}
	ok = SSL_CTX_use_PrivateKey(ctx, pk);
	EVP_PKEY_free(pk);
	if (!ok || !SSL_CTX_check_private_key(ctx)) {
		snprintf(err, errlen, "%s:%d: gateway.tls.key: '%s' is not the key of the "
			 "certificate in '%s'\n", file, kl, key, cert);
		goto fail;
	}
	if (!SSL_CTX_set_min_proto_version(ctx, c->gw.tls.min_version == 13 ? TLS1_3_VERSION :
					   TLS1_2_VERSION) ||
	    !SSL_CTX_set_cipher_list(ctx, TLS12_CIPHERS) ||
	    !SSL_CTX_set1_groups_list(ctx, TLS_GROUPS)) {
		snprintf(err, errlen, "%s:%d: gateway.tls: this OpenSSL refuses the defaults: %s\n",
			 file, cl, ssl_reason());
		goto fail;
	}
	SSL_CTX_set_dh_auto(ctx, 1);
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
			    SSL_OP_NO_TICKET);
	SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	/* Idle keep-alives hold no read and write buffers (about 34 KB each otherwise); the
	 * write buffer may move between retries: gw_tls_flush writes from the evbuffer's
	 * head, which is where the bufferevent's own retry would write from. */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
	SSL_CTX_set_info_callback(ctx, on_info);
	*out = ctx;
	return 0;
fail:
	SSL_CTX_free(ctx);
	return -EINVAL;
}

void gw_tls_ctx_free(struct ssl_ctx_st *ctx)
{
	SSL_CTX_free(ctx);
}

/* The serial in hex, as `openssl x509 -serial` prints it. */
static void serial_text(X509 *x, char *out, size_t n)
{
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	char *hex = bn ? BN_bn2hex(bn) : NULL;

	snprintf(out, n, "%s", hex ? hex : "?");
	OPENSSL_free(hex);
	BN_free(bn);
}

void gw_tls_log(struct ssl_ctx_st *ctx, const char *what)
{
	X509 *x = ctx ? SSL_CTX_get0_certificate(ctx) : NULL;
	char subj[256], serial[128], until[32];
	int days = 0, secs = 0;

	if (!x)
		return;
	X509_NAME_oneline(X509_get_subject_name(x), subj, sizeof(subj));
	serial_text(x, serial, sizeof(serial));
	tm_text(X509_get0_notAfter(x), until, sizeof(until));
	ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(x));
	if (days < EXPIRY_WARN_DAYS)
		log_warn("gateway: TLS %s certificate %s serial %s: expires %s, in %d day(s)",
			 what, subj, serial, until, days);
	else
		log_info("gateway: TLS %s certificate %s serial %s, valid until %s", what, subj,
			 serial, until);
}

/* ---- connections ---------------------------------------------------------------------- */

struct bufferevent *gw_tls_bev(struct gateway *g, struct event_base *base)
{
	SSL *ssl = SSL_new(g->tls);
	struct gw_tls_conn *tc = calloc(1, sizeof(*tc));
	struct bufferevent *bev;

	if (!ssl || !tc || !SSL_set_ex_data(ssl, conn_idx, tc)) {
		free(tc);
		SSL_free(ssl);
		return NULL;
	}
	tc->st = &g->tls_st; /* the SSL owns @tc from here */
	bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
					     BEV_OPT_CLOSE_ON_FREE);
	if (!bev) {
		SSL_free(ssl);
		return NULL;
	}
	/* A client that closes without a close_notify (most do, after their answer) ends its
	 * connection as an EOF, not an error. */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

void gw_tls_accepted(struct bufferevent *bev, int fd)
{
	int one = 1;

	if (fd >= 0 && gw_tls_is(bev))
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

bool gw_tls_is(struct bufferevent *bev)
{
	return bev && bufferevent_openssl_get_ssl(bev);
}

/* The reason an OpenSSL error code stands for. */
static int fail_of(unsigned long e)
{
	int r = ERR_GET_REASON(e);

	if (r >= SSL_AD_REASON_OFFSET)
		return GW_TLS_FAIL_PEER; /* SSL_R_SSLV3_ALERT_*, SSL_R_TLSV1_ALERT_*: theirs */
	switch (r) {
	case SSL_R_UNSUPPORTED_PROTOCOL:
	case SSL_R_VERSION_TOO_LOW:
	case SSL_R_NO_PROTOCOLS_AVAILABLE:
	case SSL_R_UNKNOWN_PROTOCOL:
		return GW_TLS_FAIL_VERSION;
	case SSL_R_NO_APPLICATION_PROTOCOL:
		return GW_TLS_FAIL_ALPN;
	case SSL_R_NO_SHARED_CIPHER:
	case SSL_R_NO_SHARED_GROUPS:
	case SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM:
	case SSL_R_NO_SHARED_SIGNATURE_ALGORITHMS:
		return GW_TLS_FAIL_CIPHER;
	case SSL_R_HTTP_REQUEST:
	case SSL_R_HTTPS_PROXY_REQUEST:
	case SSL_R_WRONG_VERSION_NUMBER:
		return GW_TLS_FAIL_NOT_TLS;
	default:
		return GW_TLS_FAIL_PROTOCOL;
	}
}

void gw_tls_conn_end(struct gateway *g, struct bufferevent *bev, bool timed_out, bool closed)
{
	SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
	struct gw_tls_conn *tc = ssl ? SSL_get_ex_data(ssl, conn_idx) : NULL;
	unsigned long e;
	int why = -1;

	(void)g;
	if (!tc || tc->counted)
		return;
	tc->counted = true;
	/* The bufferevent kept OpenSSL's errors of the failed handshake (newest first). */
	while ((e = bufferevent_get_openssl_error(bev)))
		if (ERR_GET_LIB(e) == ERR_LIB_SSL && why < 0)
			why = fail_of(e);
	if (why < 0 && closed && !timed_out)
		return; /* the gateway's own close: counted in connections_closed_total */
	if (why < 0)
		why = timed_out ? GW_TLS_FAIL_TIMEOUT : GW_TLS_FAIL_EOF;
	tc->st->failed[why]++;
}

/*
 * A TLS client's goodbye is not a plaintext one: what it sends first is a close_notify
 * alert, record bytes a peek reads as data, and then (at once, for most clients) its FIN.
 * So, gone: OpenSSL saw the close_notify already; or the socket is shut for reading
 * (POLLRDHUP: the FIN is in, whatever is queued before it); or the next record is an alert.
 * TLS 1.2 shows an alert's record type (21). TLS 1.3 disguises it as application data (23),
 * but its size gives it away: two bytes of alert, one of inner type and the AEAD's 16-byte
 * tag make 19, where an HTTP request takes more than two bytes. Only the header is peeked:
 * reading the record would leave it in OpenSSL's buffer, where the bufferevent would not
 * see it once evhttp reads again.
 */
bool gw_tls_gone(struct bufferevent *bev, int fd)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
	unsigned char h[5];
	ssize_t n;

	if (ssl && (SSL_get_shutdown(ssl) & SSL_RECEIVED_SHUTDOWN))
		return true;
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
		return true;
	n = recv(fd, h, sizeof(h), MSG_PEEK | MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		return true;
	if (n < 1)
		return false;
	if (h[0] == 21)
		return true; /* an alert record (TLS 1.2) */
	return n == 5 && h[0] == 23 && ssl && SSL_version(ssl) == TLS1_3_VERSION &&
	       ((unsigned)h[3] << 8 | h[4]) == 19;
}

void gw_tls_flush(struct bufferevent *bev)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	struct evbuffer *out = bufferevent_get_output(bev);

	if (!ssl || !SSL_is_init_finished(ssl))
		return;
	while (evbuffer_get_length(out)) {
		size_t len = evbuffer_get_contiguous_space(out);
		int n;

		if (len > INT_MAX)
			len = INT_MAX;
		n = SSL_write(ssl, evbuffer_pullup(out, (ev_ssize_t)len), (int)len);
		if (n <= 0)
			return; /* the socket is full, or gone: evhttp closes it next */
		evbuffer_drain(out, (size_t)n);
	}
	SSL_shutdown(ssl);
}

/* ---- /metrics ------------------------------------------------------------------------- */

void gw_tls_metrics(struct gateway *g, struct evbuffer *out)
{
	static const char *const why[GW_TLS_FAIL__N] = {
		[GW_TLS_FAIL_VERSION] = "version", [GW_TLS_FAIL_ALPN] = "alpn",
		[GW_TLS_FAIL_CIPHER] = "cipher", [GW_TLS_FAIL_NOT_TLS] = "not_tls",
		[GW_TLS_FAIL_PROTOCOL] = "protocol", [GW_TLS_FAIL_PEER] = "peer_alert",
		[GW_TLS_FAIL_TIMEOUT] = "timeout", [GW_TLS_FAIL_EOF] = "eof",
	};
	X509 *x;
	struct tm tm;
	int k;

	if (!g || !g->tls)
		return;
	evbuffer_add_printf(out, "# HELP sluice_gateway_tls_handshakes_total TLS handshakes "
			    "completed on the gateway's listener.\n"
			    "# TYPE sluice_gateway_tls_handshakes_total counter\n"
			    "sluice_gateway_tls_handshakes_total %llu\n",
			    (unsigned long long)g->tls_st.ok);
	evbuffer_add_printf(out, "# HELP sluice_gateway_tls_handshake_failures_total TLS "
			    "handshakes that did not complete, by reason.\n"
			    "# TYPE sluice_gateway_tls_handshake_failures_total counter\n");
	for (k = 0; k < GW_TLS_FAIL__N; k++)
		evbuffer_add_printf(out, "sluice_gateway_tls_handshake_failures_total{reason=\"%s\"}"
				    " %llu\n", why[k], (unsigned long long)g->tls_st.failed[k]);
	x = SSL_CTX_get0_certificate(g->tls);
	if (x && ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm))
		evbuffer_add_printf(out, "# HELP sluice_gateway_tls_certificate_expiry_seconds "
				    "When the certificate new connections get expires (Unix time)."
				    "\n# TYPE sluice_gateway_tls_certificate_expiry_seconds gauge\n"
				    "sluice_gateway_tls_certificate_expiry_seconds %lld\n",
				    (long long)timegm(&tm));
}
