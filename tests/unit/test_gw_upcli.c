// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The upstream's HTTP/1.1 client (gw_upcli) against a server played by this test on a Unix
 * socket in the same event loop: every way an answer can be delimited, the answers a proxy
 * must refuse (smuggling shapes, obs-fold, garbage), the bounds, early closes, keep-alive
 * and when a connection is not trusted again, an answer arriving a byte at a time, a
 * timeout, a refused connect, and the next request sent from inside the callback.
 */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/queue.h>
#include <sys/un.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "gw_upcli.h"

static struct srv {
	struct event_base *base;
	char dir[64];
	struct sockaddr_un sa;
	int lfd, cfd;
	struct event *lev, *cev, *drip;
	const char *resp;              /* what the server answers each request with */
	size_t resp_len, sent;
	bool bytewise, close_after, silent;
	int accepts, requests;
	char req[8192];
	size_t req_len;
	char last_req[8192];
} S;

static struct got {
	int calls;
	enum gw_upcli_err err;
	int code;
	char reason[128];
	char body[4096];
	size_t body_len;
	char hdr[256];                 /* the value of X-A, if any */
	int hdrs;
	struct gw_upcli *again;        /* send the next request from inside the callback */
} G;

static void srv_write(void)
{
	while (S.sent < S.resp_len) {
		size_t n = S.bytewise ? 1 : S.resp_len - S.sent;
		ssize_t w = write(S.cfd, S.resp + S.sent, n);

		if (w <= 0)
			return;
		S.sent += (size_t)w;
		if (S.bytewise && S.sent < S.resp_len) {
			struct timeval tv = { 0, 200 };

			evtimer_add(S.drip, &tv); /* one byte per trip through the loop */
			return;
		}
	}
	if (S.close_after) {
		event_del(S.cev);
		close(S.cfd);
		S.cfd = -1;
	}
}

static void on_drip(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	if (S.cfd >= 0)
		srv_write();
}

static void on_creq(evutil_socket_t fd, short what, void *arg)
{
	ssize_t n;
	char *end;

	(void)what;
	(void)arg;
	n = read(fd, S.req + S.req_len, sizeof(S.req) - 1 - S.req_len);
	if (n <= 0) {
		event_del(S.cev);
		close(S.cfd);
		S.cfd = -1;
		return;
	}
	S.req_len += (size_t)n;
	S.req[S.req_len] = '\0';
	end = strstr(S.req, "\r\n\r\n");
	if (!end)
		return;
	S.requests++;
	memcpy(S.last_req, S.req, S.req_len + 1);
	S.req_len = 0;
	if (S.silent)
		return;
	S.sent = 0;
	srv_write();
}

static void on_accept(evutil_socket_t fd, short what, void *arg)
{
	int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	(void)what;
	(void)arg;
	if (c < 0)
		return;
	if (S.cfd >= 0) {
		event_del(S.cev);
		close(S.cfd);
	}
	S.cfd = c;
	S.accepts++;
	S.req_len = 0;
	event_assign(S.cev, S.base, c, EV_READ | EV_PERSIST, on_creq, NULL);
	event_add(S.cev, NULL);
}

static void on_done(struct gw_upcli *c, enum gw_upcli_err err, const struct gw_upcli_resp *r,
		    void *arg)
{
	(void)arg;
	G.calls++;
	G.err = err;
	if (!err) {
		const char *a = evhttp_find_header(r->headers, "X-A");
		struct evkeyval *kv;

		G.code = r->code;
		snprintf(G.reason, sizeof(G.reason), "%s", r->reason);
		G.body_len = evbuffer_get_length(r->body);
		assert_true(G.body_len < sizeof(G.body));
		evbuffer_remove(r->body, G.body, G.body_len);
		G.body[G.body_len] = '\0';
		snprintf(G.hdr, sizeof(G.hdr), "%s", a ? a : "");
		G.hdrs = 0;
		TAILQ_FOREACH(kv, r->headers, next)
			G.hdrs++;
	}
	if (G.again) {
		struct evbuffer *m = evbuffer_new();
		struct gw_upcli *nc = G.again;

		G.again = NULL;
		evbuffer_add_printf(m, "GET /again HTTP/1.1\r\nHost: t\r\n\r\n");
		assert_int_equal(gw_upcli_send(nc, m, false, 1000, 65536, 1024, on_done, NULL), 0);
		evbuffer_free(m);
		/* the answer given stays whole until the callback returns, next request or not */
		if (!err) {
			assert_int_equal(r->code, G.code);
			assert_int_equal(evbuffer_get_length(r->body), 0); /* taken above */
			assert_non_null(evhttp_find_header(r->headers, "Content-Length"));
		}
		return;
	}
	event_base_loopbreak(S.base);
}

static int setup(void **state)
{
	(void)state;
	memset(&S, 0, sizeof(S));
	S.cfd = -1;
	S.base = event_base_new();
	assert_non_null(S.base);
	snprintf(S.dir, sizeof(S.dir), "/tmp/sluice-upcli-XXXXXX");
	assert_non_null(mkdtemp(S.dir));
	S.sa.sun_family = AF_UNIX;
	snprintf(S.sa.sun_path, sizeof(S.sa.sun_path), "%s/up.sock", S.dir);
	S.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(S.lfd >= 0);
	assert_int_equal(bind(S.lfd, (struct sockaddr *)&S.sa, sizeof(S.sa)), 0);
	assert_int_equal(listen(S.lfd, 16), 0);
	S.lev = event_new(S.base, S.lfd, EV_READ | EV_PERSIST, on_accept, NULL);
	S.cev = event_new(S.base, -1, 0, on_creq, NULL);
	S.drip = evtimer_new(S.base, on_drip, NULL);
	event_add(S.lev, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (S.cfd >= 0)
		close(S.cfd);
	event_free(S.lev);
	event_free(S.cev);
	event_free(S.drip);
	close(S.lfd);
	unlink(S.sa.sun_path);
	rmdir(S.dir);
	event_base_free(S.base);
	return 0;
}

/* Answer the next request with @resp; send @c a GET (HEAD with @head) and wait for it. */
static void run(struct gw_upcli *c, const char *resp, size_t len, bool head, size_t max_body)
{
	struct evbuffer *m = evbuffer_new();
	struct timeval guard = { 3, 0 };

	S.resp = resp;
	S.resp_len = len ? len : strlen(resp);
	memset(&G, 0, sizeof(G));
	evbuffer_add_printf(m, "%s / HTTP/1.1\r\nHost: t\r\n\r\n", head ? "HEAD" : "GET");
	assert_int_equal(gw_upcli_send(c, m, head, 1000, 4096, max_body, on_done, NULL), 0);
	assert_int_equal(evbuffer_get_length(m), 0); /* taken */
	evbuffer_free(m);
	event_base_loopexit(S.base, &guard);
	event_base_dispatch(S.base);
	assert_int_equal(G.calls, 1);
}

static void client(struct gw_upcli *c)
{
	assert_int_equal(gw_upcli_init(c, S.base, (struct sockaddr *)&S.sa, sizeof(S.sa)), 0);
}

static void lengths_and_keepalive(void **state)
{
	struct gw_upcli c;

	(void)state;
	client(&c);
	run(&c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A:  b c \r\n\r\nhello", 0, false, 1024);
	assert_int_equal(G.err, GW_UPCLI_OK);
	assert_int_equal(G.code, 200);
	assert_string_equal(G.reason, "OK");
	assert_string_equal(G.body, "hello");
	assert_string_equal(G.hdr, "b c"); /* the value's surrounding whitespace trimmed */
	assert_non_null(c.bev);           /* kept */
	/* chunked, with an extension and a trailer, on the same connection */
	run(&c, "HTTP/1.1 201 Created\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5;x=y\r\nhello\r\n"
		"6\r\n world\r\n0\r\nT: v\r\n\r\n", 0, false, 1024);
	assert_int_equal(G.err, GW_UPCLI_OK);
	assert_int_equal(G.code, 201);
	assert_string_equal(G.body, "hello world");
	assert_int_equal(G.hdrs, 1); /* the trailer is not among the headers */
	/* no body: 204, 304, and an answer to HEAD whatever its length says */
	run(&c, "HTTP/1.1 204 No Content\r\n\r\n", 0, false, 1024);
	assert_int_equal(G.code, 204);
	run(&c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", 0, true, 1024);
	assert_int_equal(G.err, GW_UPCLI_OK);
	assert_int_equal(G.body_len, 0);
	/* interim answers are skipped */
	run(&c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n"
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, false, 1024);
	assert_int_equal(G.code, 200);
	assert_string_equal(G.body, "ok");
	assert_int_equal(G.hdrs, 1);
	/* a status line without a reason */
	run(&c, "HTTP/1.1 401\r\nContent-Length: 0\r\n\r\n", 0, false, 1024);
	assert_int_equal(G.code, 401);
	assert_string_equal(G.reason, "");
	assert_int_equal(S.accepts, 1); /* all of it on one connection */
	assert_int_equal(S.requests, 6);
	assert_int_equal(c.connects, 1);
	gw_upcli_fini(&c);
}

static void close_delimited(void **state)
{
	struct gw_upcli c;

	(void)state;
	client(&c);
	S.close_after = true;
	run(&c, "HTTP/1.0 200 OK\r\n\r\nabc", 0, false, 1024);
	assert_int_equal(G.err, GW_UPCLI_OK);
	assert_string_equal(G.body, "abc");
	/* an HTTP/1.1 answer with no length, and one that says Connection: close */
	run(&c, "HTTP/1.1 200 OK\r\n\r\nto the end", 0, false, 1024);
	assert_string_equal(G.body, "to the end");
	S.close_after = false;
	run(&c, "HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 1\r\n\r\nx", 0,
	    false, 1024);
	assert_string_equal(G.body, "x");
	assert_null(c.bev); /* not kept */
	/* a body beside a transfer coding: the coding counts, the connection is not kept */
	run(&c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 100\r\n\r\n"
		"5\r\nhello\r\n0\r\n\r\n", 0, false, 1024);
	assert_int_equal(G.err, GW_UPCLI_OK);
	assert_string_equal(G.body, "hello");
	assert_null(c.bev);
	/* bytes after a whole answer (a second, unasked one): answered, then dropped */
	run(&c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nyHTTP/1.1 200 OK\r\n\r\n", 0, false,
	    1024);
	assert_string_equal(G.body, "y");
	assert_null(c.bev);
	assert_int_equal(S.accepts, 5);
	gw_upcli_fini(&c);
}

static void bytewise(void **state)
{
	struct gw_upcli c;

	(void)state;
	client(&c);
	S.bytewise = true;
	run(&c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n3\r\nabc\r\n"
		"2\r\nde\r\n0\r\n\r\n", 0, false, 1024);
	assert_int_equal(G.err, GW_UPCLI_OK);
	assert_string_equal(G.body, "abcde");
	assert_string_equal(G.hdr, "1");
	run(&c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nwxyz", 0, false, 1024);
	assert_string_equal(G.body, "wxyz");
	assert_int_equal(S.accepts, 1);
	gw_upcli_fini(&c);
}

/* Answers a proxy must not pass on: each is GW_UPCLI_BAD, and the connection is dropped. */
static void refused_shapes(void **state)
{
	static const char *const bad[] = {
		"HELLO THERE\r\n\r\n",
		"HTTP/2 200 OK\r\n\r\n",
		"HTTP/1.1 20 OK\r\n\r\n",
		"HTTP/1.1 600 Odd\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 0\r\n\r\n",          /* obs-fold */
		"HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello",                    /* space */
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
		"0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",
		": empty name\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 0\r\n\r\n",             /* bare CR */
		"HTTP/1.1 200 OK\r\nX-A: a\r b\r\nContent-Length: 0\r\n\r\n",
		/* a reason phrase or a value that the client could read as two lines, or with
		 * another control character in it */
		"HTTP/1.1 200 OK\rSet-Cookie: s=1\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r \r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 O\x1bK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A: a\x01b\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A: a\x7f\r\nContent-Length: 0\r\n\r\n",
	};
	struct gw_upcli c;
	size_t i;

	(void)state;
	client(&c);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		run(&c, bad[i], 0, false, 1024);
		if (G.err != GW_UPCLI_BAD)
			fail_msg("answer %zu (%s) gave %d, not BAD", i, bad[i], G.err);
		assert_null(c.bev);
	}
	/* a tab and bytes above 0x7f are allowed in both (RFC 9110 5.5, obs-text) */
	run(&c, "HTTP/1.1 200 O\tK\xe9\r\nX-A: a\tb\xff\r\nContent-Length: 0\r\n\r\n", 0, false,
	    1024);
	assert_int_equal(G.err, GW_UPCLI_OK);
	assert_string_equal(G.reason, "O\tK\xe9");
	assert_string_equal(G.hdr, "a\tb\xff");
	/* a NUL inside a header line */
	run(&c, "HTTP/1.1 200 OK\r\nX-A: a\0b\r\nContent-Length: 0\r\n\r\n", 46, false, 1024);
	assert_int_equal(G.err, GW_UPCLI_BAD);
	gw_upcli_fini(&c);
}

static void bounds(void **state)
{
	static char big_head[6000];
	struct gw_upcli c;

	(void)state;
	client(&c);
	/* the head is bounded (4096 here): a long field, with or without its line's end */
	snprintf(big_head, sizeof(big_head), "HTTP/1.1 200 OK\r\nX-A: %05000d\r\n\r\n", 0);
	run(&c, big_head, 0, false, 1024);
	assert_int_equal(G.err, GW_UPCLI_TOO_BIG);
	snprintf(big_head, sizeof(big_head), "HTTP/1.1 200 OK\r\nX-A: %05000d", 0);
	run(&c, big_head, 0, false, 1024);
	assert_int_equal(G.err, GW_UPCLI_TOO_BIG);
	/* the body is bounded (16 bytes here), however it is delimited */
	run(&c, "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n", 0, false, 16);
	assert_int_equal(G.err, GW_UPCLI_TOO_BIG);
	run(&c, "HTTP/1.1 200 OK\r\nContent-Length: 16\r\n\r\n0123456789abcdef", 0, false, 16);
	assert_int_equal(G.err, GW_UPCLI_OK);
	run(&c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n01234567\r\n9\r\n", 0,
	    false, 16);
	assert_int_equal(G.err, GW_UPCLI_TOO_BIG);
	run(&c, "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", 0, false, 16);
	assert_int_equal(G.err, GW_UPCLI_BAD);
	/* so is the number of fields (GW_UPCLI_MAX_FIELDS), interim answers' apart */
	{
		static char many[4096];
		int i, k;

		for (k = GW_UPCLI_MAX_FIELDS; k <= GW_UPCLI_MAX_FIELDS + 1; k++) {
			size_t n = (size_t)snprintf(many, sizeof(many),
						    "HTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n"
						    "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n");

			for (i = 1; i < k; i++)
				n += (size_t)snprintf(many + n, sizeof(many) - n, "F%d: v\r\n", i);
			snprintf(many + n, sizeof(many) - n, "\r\n");
			run(&c, many, 0, false, 16);
			assert_int_equal(G.err, k == GW_UPCLI_MAX_FIELDS ? GW_UPCLI_OK : GW_UPCLI_TOO_BIG);
			if (k == GW_UPCLI_MAX_FIELDS)
				assert_int_equal(G.hdrs, GW_UPCLI_MAX_FIELDS);
		}
	}
	S.close_after = true;
	run(&c, "HTTP/1.0 200 OK\r\n\r\n0123456789abcdefg", 0, false, 16);
	assert_int_equal(G.err, GW_UPCLI_TOO_BIG);
	gw_upcli_fini(&c);
}

static void early_close_and_silence(void **state)
{
	struct gw_upcli c;

	(void)state;
	client(&c);
	S.close_after = true;
	run(&c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 0, false, 1024);
	assert_int_equal(G.err, GW_UPCLI_BAD);
	run(&c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", 0, false, 1024);
	assert_int_equal(G.err, GW_UPCLI_BAD);
	run(&c, "HTTP/1.1 200 O", 0, false, 1024);
	assert_int_equal(G.err, GW_UPCLI_BAD);
	run(&c, "", 0, false, 1024); /* closed without a byte */
	assert_int_equal(G.err, GW_UPCLI_BAD);
	S.close_after = false;
	S.silent = true;
	{
		struct evbuffer *m = evbuffer_new();

		memset(&G, 0, sizeof(G));
		evbuffer_add_printf(m, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
		assert_int_equal(gw_upcli_send(&c, m, false, 100, 4096, 16, on_done, NULL), 0);
		assert_int_equal(gw_upcli_send(&c, m, false, 100, 4096, 16, on_done, NULL), -1);
		evbuffer_free(m);
		event_base_dispatch(S.base);
		assert_int_equal(G.calls, 1);
		assert_int_equal(G.err, GW_UPCLI_TIMEOUT);
		assert_null(c.bev);
	}
	gw_upcli_fini(&c);
}

/* An idle connection the upstream closes is noticed: the next request goes on a new one. */
static void idle_close(void **state)
{
	struct gw_upcli c;
	struct timeval tv = { 0, 20000 };

	(void)state;
	client(&c);
	run(&c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na", 0, false, 1024);
	assert_non_null(c.bev);
	event_del(S.cev);
	close(S.cfd);
	S.cfd = -1;
	event_base_loopexit(S.base, &tv);
	event_base_dispatch(S.base);
	assert_null(c.bev); /* seen closed while idle */
	run(&c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb", 0, false, 1024);
	assert_int_equal(G.err, GW_UPCLI_OK);
	assert_string_equal(G.body, "b");
	assert_int_equal(S.accepts, 2);
	/* bytes nobody asked for on an idle connection: dropped too */
	assert_true(write(S.cfd, "HTTP/1.1 200 OK\r\n\r\n", 19) == 19);
	event_base_loopexit(S.base, &tv);
	event_base_dispatch(S.base);
	assert_null(c.bev);
	gw_upcli_fini(&c);
}

static void refused_and_reentrant(void **state)
{
	struct gw_upcli c, none;
	struct sockaddr_un gone = S.sa;
	struct evbuffer *m = evbuffer_new();

	(void)state;
	/* no such socket: said at once, no callback */
	snprintf(gone.sun_path, sizeof(gone.sun_path), "%s/nobody.sock", S.dir);
	assert_int_equal(gw_upcli_init(&none, S.base, (struct sockaddr *)&gone, sizeof(gone)), 0);
	memset(&G, 0, sizeof(G));
	evbuffer_add_printf(m, "GET / HTTP/1.1\r\n\r\n");
	assert_int_equal(gw_upcli_send(&none, m, false, 100, 4096, 16, on_done, NULL), -1);
	assert_int_equal(G.calls, 0);
	gw_upcli_fini(&none);
	evbuffer_free(m);
	/* the callback sends the next request on the same connection */
	client(&c);
	G.again = &c;
	S.resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	S.resp_len = strlen(S.resp);
	m = evbuffer_new();
	evbuffer_add_printf(m, "GET /first HTTP/1.1\r\nHost: t\r\n\r\n");
	assert_int_equal(gw_upcli_send(&c, m, false, 1000, 4096, 1024, on_done, NULL), 0);
	evbuffer_free(m);
	event_base_dispatch(S.base);
	assert_int_equal(G.calls, 2);
	assert_int_equal(G.err, GW_UPCLI_OK);
	assert_string_equal(G.body, "ok");
	assert_int_equal(S.requests, 2);
	assert_non_null(strstr(S.last_req, "GET /again"));
	assert_int_equal(S.accepts, 1);
	gw_upcli_fini(&c);
}

/* @n bytes of @p to @in: copied, or by reference (a chain of their own, @p static). */
static void put(struct evbuffer *in, const char *p, size_t n, bool by_ref)
{
	if (!n)
		return;
	if (by_ref)
		evbuffer_add_reference(in, p, n, NULL, NULL);
	else
		evbuffer_add(in, p, n);
}

/* The parser alone (gw_upcli_test_*): @resp fed in two pieces, cut at @cut. */
static int feed_pieces(struct gw_upcli *c, const char *resp, size_t len, size_t cut, bool by_ref)
{
	struct evbuffer *in = evbuffer_new();
	int v;

	gw_upcli_test_start(c, false, 65536, 1 << 20);
	put(in, resp, cut, by_ref);
	v = gw_upcli_test_feed(c, in, false);
	if (!v) {
		put(in, resp + cut, len - cut, by_ref);
		v = gw_upcli_test_feed(c, in, false);
	}
	if (!v)
		v = gw_upcli_test_feed(c, in, true);
	evbuffer_free(in);
	return v;
}

static int feed_split(struct gw_upcli *c, const char *resp, size_t len, size_t cut)
{
	return feed_pieces(c, resp, len, cut, false);
}

/* A chunk-size line's bound does not depend on where the answer was cut: a line of 1024
 * bytes (the most) is read whether its CR came with it or not, one of 1025 never is. */
static void chunk_line_bound(void **state)
{
	static char resp[2048];
	const char *h = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	struct gw_upcli c;
	size_t hl = strlen(h), len, cut, ext;

	(void)state;
	client(&c);
	for (ext = 1022; ext <= 1023; ext++) {
		memcpy(resp, h, hl);
		memcpy(resp + hl, "1;", 2);
		memset(resp + hl + 2, 'x', ext);
		len = hl + 2 + ext;
		memcpy(resp + len, "\r\na\r\n0\r\n\r\n", 10);
		len += 10;
		/* cut anywhere in the chunk line, or after its CR, or after its LF */
		for (cut = hl; cut <= hl + 2 + ext + 2; cut++) {
			int v = feed_split(&c, resp, len, cut);

			if (v != (ext == 1022 ? 1 : -GW_UPCLI_BAD))
				fail_msg("a %zu-byte chunk line cut at %zu: %d", 2 + ext, cut - hl, v);
		}
		if (ext == 1022)
			assert_int_equal(evbuffer_get_length(c.body), 1);
	}
	gw_upcli_fini(&c);
}

/* Header lines on both sides of the parser's stack copy (512 bytes: shorter lines are copied
 * from the buffer's first chain, longer ones or those across chains are evbuffer_readln's):
 * each value is read whole and exact, with CRLF or a bare LF, wherever the answer was cut,
 * and with each piece in a chain of its own. */
static void line_copy_bound(void **state)
{
	static char resp[2048];
	struct gw_upcli c;
	size_t len, cut, vlen;
	int lf;

	(void)state;
	client(&c);
	for (lf = 0; lf <= 1; lf++) {
		for (vlen = 500; vlen <= 520; vlen++) {
			const char *eol = lf ? "\n" : "\r\n";
			struct evkeyval *kv;

			len = (size_t)snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK%sX-Long: ", eol);
			memset(resp + len, 'a' + (int)(vlen % 26), vlen);
			len += vlen;
			len += (size_t)snprintf(resp + len, sizeof(resp) - len,
						"%sContent-Length: 2%s%sok", eol, eol, eol);
			for (cut = 0; cut <= 2 * len + 1; cut += (cut % (len + 1) < 10 ||
						     cut % (len + 1) > len - 40) ? 1 : 7) {
				/* the first pass copies both pieces into the buffer, the second adds
				 * them by reference: a chain each, so that a line can span two */
				int v = cut <= len ? feed_split(&c, resp, len, cut) :
						     feed_pieces(&c, resp, len, cut - len - 1, true);
				const char *got = NULL;

				if (v != 1)
					fail_msg("a %zu-byte value (%s) cut at %zu: %d", vlen,
						 lf ? "LF" : "CRLF", cut, v);
				TAILQ_FOREACH(kv, &c.hdrs, next)
					if (!strcmp(kv->key, "X-Long"))
						got = kv->value;
				assert_non_null(got);
				assert_int_equal(strlen(got), vlen);
				assert_true(got[0] == resp[strlen("HTTP/1.1 200 OK") + strlen(eol) + 8]);
				assert_true(got[vlen - 1] == got[0]);
				assert_int_equal(evbuffer_get_length(c.body), 2);
			}
		}
	}
	gw_upcli_fini(&c);
}

/* The elements gw_list_next gives for @v, joined by '|' (static). */
static const char *elems(const char *v)
{
	static char out[512];
	struct gw_list it = { v };
	const char *el;
	size_t len, o = 0;

	out[0] = '\0';
	while (gw_list_next(&it, &el, &len)) {
		assert_true(len >= 1);
		assert_true(o + len + 2 < sizeof(out));
		if (o)
			out[o++] = '|';
		memcpy(out + o, el, len);
		o += len;
		out[o] = '\0';
	}
	return out;
}

/* The one reader of #token lists (Connection, Transfer-Encoding), by itself and through the
 * answer parser that uses it. */
static void token_lists(void **state)
{
	static char big[70000];
	struct gw_list it;
	const char *el;
	size_t len;

	(void)state;
	assert_string_equal(elems(""), "");
	assert_string_equal(elems(" ,\t, ,"), "");
	assert_string_equal(elems("close"), "close");
	assert_string_equal(elems(" a , b "), "a|b");
	assert_string_equal(elems(",,a,, ,b,"), "a|b");                 /* empty elements */
	assert_string_equal(elems("a,\tb\t,\tc\t"), "a|b|c");          /* tabs are OWS */
	assert_string_equal(elems("gzip, chunked,"), "gzip|chunked");   /* a trailing comma */
	assert_string_equal(elems("a b, c"), "a b|c");                  /* one element, no token */
	assert_string_equal(elems("x;p=\"a, chunked\", y"), "x;p=\"a, chunked\"|y");
	assert_string_equal(elems("\"a\\\", b\", c"), "\"a\\\", b\"|c"); /* an escaped quote */
	assert_string_equal(elems("a, \"b, c"), "a|\"b, c");            /* unclosed: to the end */
	assert_string_equal(elems("a, \"b\\"), "a|\"b\\");            /* a backslash at the end */

	/* a token longer than any buffer: read in place */
	memset(big, 'x', sizeof(big) - 10);
	memcpy(big + sizeof(big) - 10, ", close", 8);
	it = (struct gw_list){ big };
	assert_true(gw_list_next(&it, &el, &len));
	assert_ptr_equal(el, big);
	assert_int_equal(len, sizeof(big) - 10);
	assert_true(gw_is_token(el, len));
	assert_true(gw_list_next(&it, &el, &len));
	assert_int_equal(len, 5);
	assert_false(gw_list_next(&it, &el, &len));
	assert_false(gw_list_next(&it, &el, &len)); /* and stays at the end */
	assert_true(gw_list_has(big, "close", false));
	assert_false(gw_list_has(big, "x", false));

	assert_true(gw_is_token("X-Hop-Secret", 12));
	assert_false(gw_is_token("", 0));
	assert_false(gw_is_token("\"close\"", 7));                     /* a quoted string */
	assert_false(gw_is_token("a b", 3));
	assert_false(gw_is_token("chunked;x=1", 11));

	assert_true(gw_list_has("keep-alive, CLOSE", "close", false));  /* any case */
	assert_true(gw_list_has("close,keep-alive", "close", false));
	assert_false(gw_list_has("keep-alive", "close", false));
	assert_false(gw_list_has("\"close\"", "close", false));
	assert_false(gw_list_has("closed, clos", "close", false));
	assert_true(gw_list_has("gzip, chunked", "chunked", true));
	assert_true(gw_list_has("gzip,\tchunked\t,", "chunked", true));
	assert_false(gw_list_has("chunked, gzip", "chunked", true));    /* not last */
	assert_false(gw_list_has("chunked;x=1", "chunked", true));      /* parameters */
	assert_false(gw_list_has("gzip;p=\"a, chunked\"", "chunked", true));
	assert_false(gw_list_has("gzip;p=\"a, chunked\"", "chunked", false));
	assert_false(gw_list_has("", "chunked", true));
}

/* The answer parser reads Transfer-Encoding and Connection through that reader. */
static void token_lists_in_answers(void **state)
{
	struct gw_upcli c;

	(void)state;
	client(&c);
	/* chunked last, after an empty element and with a trailing comma: chunks, and the
	 * connection is kept */
	run(&c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: ,gzip ,\tchunked,\r\n\r\n"
		"5\r\nhello\r\n0\r\n\r\n", 0, false, 1024);
	assert_int_equal(G.err, GW_UPCLI_OK);
	assert_string_equal(G.body, "hello");
	assert_non_null(c.bev);
	/* a quoted "close" is not the token: still kept */
	run(&c, "HTTP/1.1 200 OK\r\nConnection: \"close\"\r\nContent-Length: 1\r\n\r\nx", 0,
	    false, 1024);
	assert_string_equal(G.body, "x");
	assert_non_null(c.bev);
	/* close after tabs and empty elements: not kept */
	run(&c, "HTTP/1.1 200 OK\r\nConnection: ,\tkeep-alive,,\tClose\t\r\nContent-Length: 1\r\n"
		"\r\ny", 0, false, 1024);
	assert_string_equal(G.body, "y");
	assert_null(c.bev);
	assert_int_equal(S.accepts, 1);
	/* "chunked" only inside a parameter's quoted value: the body runs to the close */
	S.close_after = true;
	run(&c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip;p=\"a, chunked\"\r\n\r\n"
		"5\r\nhello\r\n0\r\n\r\n", 0, false, 1024);
	assert_int_equal(G.err, GW_UPCLI_OK);
	assert_string_equal(G.body, "5\r\nhello\r\n0\r\n\r\n");
	assert_int_equal(S.accepts, 2);
	gw_upcli_fini(&c);
}

static void on_connected(struct gw_upcli *c, enum gw_upcli_err err,
			 const struct gw_upcli_resp *r, void *arg)
{
	(void)arg;
	G.calls++;
	G.err = err;
	assert_null(r);
	assert_null(c->bev); /* nothing kept open */
	assert_false(c->busy);
	event_base_loopbreak(S.base);
}

/* The connect-only call (the /readyz probe's): the errors are a forward's, nothing is sent. */
static void connect_only(void **state)
{
	struct gw_upcli c;
	struct sockaddr_un gone = S.sa;
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t il = sizeof(in);
	struct timeval guard = { 3, 0 };
	int lfd, r;

	(void)state;
	memset(&G, 0, sizeof(G));
	/* a Unix socket that listens: connected at once, closed again, no callback */
	client(&c);
	assert_int_equal(gw_upcli_connect(&c, 1000, on_connected, NULL), 1);
	assert_int_equal(c.conn_err, 0);
	assert_null(c.bev);
	assert_false(c.busy);
	/* none there: ENOENT at once, no callback */
	snprintf(gone.sun_path, sizeof(gone.sun_path), "%s/nobody.sock", S.dir);
	assert_int_equal(gw_upcli_set_addr(&c, (struct sockaddr *)&gone, sizeof(gone)), 0);
	assert_int_equal(gw_upcli_connect(&c, 1000, on_connected, NULL), -1);
	assert_int_equal(c.conn_err, ENOENT);
	assert_int_equal(G.calls, 0);

	/* TCP on loopback: a listener (connecting, then the callback says OK) */
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&in, sizeof(in)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&in, &il), 0);
	assert_int_equal(gw_upcli_set_addr(&c, (struct sockaddr *)&in, sizeof(in)), 0);
	r = gw_upcli_connect(&c, 1000, on_connected, NULL);
	assert_true(r == 0 || r == 1);
	if (r == 0) {
		assert_true(c.busy);
		event_base_loopexit(S.base, &guard);
		event_base_dispatch(S.base);
		assert_int_equal(G.calls, 1);
		assert_int_equal(G.err, GW_UPCLI_OK);
	}
	assert_int_equal(c.conn_err, 0);
	/* ... and once it is closed: ECONNREFUSED, at once or by the callback */
	close(lfd);
	memset(&G, 0, sizeof(G));
	r = gw_upcli_connect(&c, 1000, on_connected, NULL);
	assert_true(r == 0 || r == -1);
	if (r == 0) {
		event_base_loopexit(S.base, &guard);
		event_base_dispatch(S.base);
		assert_int_equal(G.calls, 1);
		assert_int_equal(G.err, GW_UPCLI_DOWN);
	}
	assert_int_equal(c.conn_err, ECONNREFUSED);
	assert_int_equal(c.connects, 4);
	gw_upcli_fini(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(lengths_and_keepalive, setup, teardown),
		cmocka_unit_test_setup_teardown(close_delimited, setup, teardown),
		cmocka_unit_test_setup_teardown(bytewise, setup, teardown),
		cmocka_unit_test_setup_teardown(refused_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(early_close_and_silence, setup, teardown),
		cmocka_unit_test_setup_teardown(idle_close, setup, teardown),
		cmocka_unit_test_setup_teardown(refused_and_reentrant, setup, teardown),
		cmocka_unit_test_setup_teardown(chunk_line_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(line_copy_bound, setup, teardown),
		cmocka_unit_test(token_lists),
		cmocka_unit_test_setup_teardown(token_lists_in_answers, setup, teardown),
		cmocka_unit_test_setup_teardown(connect_only, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
