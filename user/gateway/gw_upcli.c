// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The upstream's HTTP/1.1 client (gw_upcli.h). One request at a time per connection; the
 * answer is read incrementally from the bufferevent's input, line by line for the head and
 * the chunk sizes (next_line), by moving chains for the body (no copy).
 */
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>

#include "gw_upcli.h"

enum {
	ST_IDLE = 0,
	ST_STATUS,      /* the status line */
	ST_HEADERS,     /* header fields, up to the empty line */
	ST_BODY_LEN,    /* Content-Length bytes */
	ST_BODY_EOF,    /* to the close */
	ST_CHUNK_SIZE,  /* a chunk's size line */
	ST_CHUNK_DATA,
	ST_CHUNK_CRLF,  /* the CRLF after a chunk's data */
	ST_TRAILERS,    /* after the last chunk, up to the empty line */
};

/* A chunk-size line longer than this (extensions included) is not one. */
#define CHUNK_LINE_MAX 1024

/* parse()'s verdicts besides a gw_upcli_err (negated) */
#define P_MORE 0
#define P_DONE 1

static void drop_conn(struct gw_upcli *c)
{
	if (c->connect_ev) {
		event_free(c->connect_ev);
		c->connect_ev = NULL;
	}
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	if (c->bev) {
		bufferevent_free(c->bev);
		c->bev = NULL;
	}
	if (c->msg)
		evbuffer_drain(c->msg, evbuffer_get_length(c->msg));
}

/* The request is over with @err (GW_UPCLI_OK: the answer is whole and @keep says whether the
 * connection may carry another). */
static void deliver(struct gw_upcli *c, enum gw_upcli_err err, bool keep)
{
	struct gw_upcli_resp resp = { .code = c->code, .reason = c->reason, .headers = &c->hdrs,
				      .body = c->body };
	gw_upcli_cb cb = c->cb;
	void *arg = c->arg;

	evtimer_del(c->timer);
	c->busy = false;
	c->cb = NULL;
	c->arg = NULL;
	c->state = ST_IDLE;
	if (err || !keep || !c->bev || evbuffer_get_length(bufferevent_get_input(c->bev)) ||
	    evbuffer_get_length(bufferevent_get_output(c->bev)))
		drop_conn(c); /* anything left over either way: the stream is not trusted again */
	c->in_cb = true;
	if (cb)
		cb(c, err, err ? NULL : &resp, arg);
	c->in_cb = false;
	/* The callback may have sent the next request on @c: its answer cannot have been read
	 * yet (reading happens in on_read only), so what is cleared here is the old one's. */
	evhttp_clear_headers(&c->hdrs);
	evbuffer_drain(c->body, evbuffer_get_length(c->body));
}

/* Is @s (@n bytes) all HTAB, SP, visible ASCII or obs-text (RFC 9110 5.5, RFC 9112 4)? A
 * reason phrase or field value with any other byte is refused: a CR passed on would let the
 * client read a line of the upstream's choosing (a field, a second status line), and no
 * other control character has any business there. */
static bool text_ok(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return false;
	}
	return true;
}

/* "HTTP/1.x NNN reason": 0, or a negated gw_upcli_err. */
static int status_line(struct gw_upcli *c, const char *l)
{
	int code;

	if (strncmp(l, "HTTP/1.", 7) || (l[7] != '0' && l[7] != '1') || l[8] != ' ' ||
	    l[9] < '1' || l[9] > '5' || l[10] < '0' || l[10] > '9' || l[11] < '0' || l[11] > '9' ||
	    (l[12] && l[12] != ' '))
		return -GW_UPCLI_BAD;
	code = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	if (code == 101)
		return -GW_UPCLI_BAD; /* nothing here asked to switch protocols */
	if (l[12] && !text_ok(l + 13, strlen(l + 13)))
		return -GW_UPCLI_BAD;
	c->code = code;
	c->keep = l[7] == '1'; /* HTTP/1.0: closed after this answer */
	snprintf(c->reason, sizeof(c->reason), "%s", l[12] ? l + 13 : "");
	c->state = ST_HEADERS;
	return 0;
}

static bool is_tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

bool gw_is_token(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!is_tchar((unsigned char)p[i]))
			return false;
	return n > 0;
}

bool gw_list_next(struct gw_list *it, const char **el, size_t *len)
{
	const char *p = it->p, *e;
	bool quoted = false;
	size_t n;

	while (*p == ' ' || *p == '\t' || *p == ',')
		p++;
	if (!*p) {
		it->p = p;
		return false;
	}
	for (e = p; *e && (quoted || *e != ','); e++) {
		if (quoted && *e == '\\' && e[1])
			e++; /* a quoted-pair: the byte after it is the string's, even a quote */
		else if (*e == '"')
			quoted = !quoted;
	}
	it->p = e;
	n = (size_t)(e - p);
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--; /* never to 0: p[0] is neither OWS nor a comma */
	*el = p;
	*len = n;
	return true;
}

bool gw_list_has(const char *v, const char *tok, bool last_only)
{
	struct gw_list it = { v };
	size_t n = strlen(tok), l;
	const char *el;
	bool last = false;

	while (gw_list_next(&it, &el, &l)) {
		last = l == n && !strncasecmp(el, tok, n);
		if (last && !last_only)
			return true;
	}
	return last_only && last;
}

/* The head is read: how the body is delimited (RFC 9112 6.3). */
static int head_done(struct gw_upcli *c)
{
	const char *te = NULL, *cl = NULL;
	struct evkeyval *kv;

	if (c->code < 200) { /* an interim answer (100 Continue, 103): the real one follows */
		evhttp_clear_headers(&c->hdrs);
		c->fields = 0;
		c->state = ST_STATUS;
		return 0;
	}
	TAILQ_FOREACH(kv, &c->hdrs, next) {
		if (!strcasecmp(kv->key, "Transfer-Encoding")) {
			if (te)
				return -GW_UPCLI_BAD; /* two fields: a smuggler's shape, refused */
			te = kv->value;
		} else if (!strcasecmp(kv->key, "Content-Length")) {
			if (cl && strcmp(cl, kv->value))
				return -GW_UPCLI_BAD; /* two lengths: which one is the smuggler's? */
			cl = kv->value;
		} else if (!strcasecmp(kv->key, "Connection") &&
			   gw_list_has(kv->value, "close", false)) {
			c->keep = false;
		}
	}
	if (c->head_only || c->code == 204 || c->code == 304)
		return P_DONE;
	if (te) {
		/* Chunked last: chunks; any other coding last: the body runs to the close. A
		 * length beside a transfer coding is ignored, and the connection not trusted
		 * again (RFC 9112 6.3). */
		if (cl)
			c->keep = false;
		if (gw_list_has(te, "chunked", true)) {
			c->state = ST_CHUNK_SIZE;
		} else {
			c->keep = false;
			c->state = ST_BODY_EOF;
		}
		return 0;
	}
	if (cl) {
		char *e;
		unsigned long long n;

		if (*cl < '0' || *cl > '9')
			return -GW_UPCLI_BAD;
		errno = 0;
		n = strtoull(cl, &e, 10);
		if (errno || *e)
			return -GW_UPCLI_BAD;
		if (n > c->max_body)
			return -GW_UPCLI_TOO_BIG;
		if (!n)
			return P_DONE;
		c->body_left = (size_t)n;
		c->state = ST_BODY_LEN;
		return 0;
	}
	c->keep = false;
	c->state = ST_BODY_EOF;
	return 0;
}

/* One header field line (@n bytes, no CRLF), or the empty line that ends the head. */
static int header_line(struct gw_upcli *c, char *l, size_t n)
{
	char *colon, *v, *e;

	if (!n)
		return c->state == ST_TRAILERS ? P_DONE : head_done(c);
	if (memchr(l, '\0', n) || l[0] == ' ' || l[0] == '\t')
		return -GW_UPCLI_BAD; /* NUL, or obs-fold: RFC 9112 5.2 lets a proxy refuse it */
	colon = memchr(l, ':', n);
	if (!colon || colon == l)
		return -GW_UPCLI_BAD;
	for (e = l; e < colon; e++)
		if (!is_tchar((unsigned char)*e))
			return -GW_UPCLI_BAD; /* a space before the colon, or worse */
	if (!text_ok(colon + 1, (size_t)(l + n - colon - 1)))
		return -GW_UPCLI_BAD; /* a bare CR, or another control character */
	if (c->state == ST_TRAILERS)
		return 0; /* trailers are read and dropped: nothing here uses them */
	*colon = '\0';
	v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	e = l + n;
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	if (++c->fields > GW_UPCLI_MAX_FIELDS)
		return -GW_UPCLI_TOO_BIG;
	if (evhttp_add_header(&c->hdrs, l, v))
		return -GW_UPCLI_BAD;
	return 0;
}

/* A chunk-size line: hex digits, maybe ";extensions". */
static int chunk_size(struct gw_upcli *c, const char *l)
{
	unsigned long long n = 0;
	const char *p = l;
	size_t have = evbuffer_get_length(c->body);

	if (!isxdigit((unsigned char)*p))
		return -GW_UPCLI_BAD;
	for (; isxdigit((unsigned char)*p); p++) {
		if (n >> 60)
			return -GW_UPCLI_BAD;
		n = n * 16 + (unsigned long long)(*p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10);
	}
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p && *p != ';')
		return -GW_UPCLI_BAD;
	if (!n) {
		c->state = ST_TRAILERS;
		return 0;
	}
	if (n > c->max_body || have + n > c->max_body)
		return -GW_UPCLI_TOO_BIG;
	c->body_left = (size_t)n;
	c->state = ST_CHUNK_DATA;
	return 0;
}

/* A line short enough for this is copied to the stack; a longer one is evbuffer_readln's. */
#define LINE_STACK 512

/*
 * The next line of @in, without its end (LF, or CR LF: evbuffer_readln's EVBUFFER_EOL_CRLF),
 * NUL-terminated, its length in *n; NULL while no whole line is there. A line that lies in the
 * buffer's first chain and fits @stack (every line of an ordinary head) is copied there;
 * another comes from evbuffer_readln, and *heap says it is to be freed. The first kind costs
 * no allocation: with evbuffer_readln's malloc, search and free for every line a forward of
 * /check was 56,800 instructions, with this 54,800 (callgrind, 2,000 forwards).
 */
static char *next_line(struct evbuffer *in, char *stack, size_t *n, bool *heap)
{
	struct evbuffer_iovec v;
	const char *base, *nl;
	size_t len;

	*heap = false;
	if (evbuffer_peek(in, -1, NULL, &v, 1) >= 1 && v.iov_len) {
		base = v.iov_base;
		nl = memchr(base, '\n', v.iov_len);
		if (nl) {
			len = (size_t)(nl - base);
			*n = len && base[len - 1] == '\r' ? len - 1 : len;
			if (*n < LINE_STACK) {
				memcpy(stack, base, *n);
				stack[*n] = '\0';
				evbuffer_drain(in, len + 1);
				return stack;
			}
		}
	}
	*heap = true;
	return evbuffer_readln(in, n, EVBUFFER_EOL_CRLF);
}

/* Read what @in holds of the answer: P_MORE, P_DONE, or a negated gw_upcli_err. */
static int parse(struct gw_upcli *c, struct evbuffer *in)
{
	char stack[LINE_STACK];

	for (;;) {
		size_t n, avail = evbuffer_get_length(in);
		char *line;
		bool heap;
		int r;

		switch (c->state) {
		case ST_STATUS:
		case ST_HEADERS:
		case ST_TRAILERS:
			line = next_line(in, stack, &n, &heap);
			if (!line)
				return c->head_bytes + avail > c->max_head ? -GW_UPCLI_TOO_BIG : P_MORE;
			c->head_bytes += avail - evbuffer_get_length(in); /* the line and its end */
			if (c->head_bytes > c->max_head)
				r = -GW_UPCLI_TOO_BIG;
			else if (c->state == ST_STATUS)
				r = memchr(line, '\0', n) ? -GW_UPCLI_BAD : status_line(c, line);
			else
				r = header_line(c, line, n);
			if (heap)
				free(line);
			if (r)
				return r;
			break;
		case ST_BODY_LEN:
		case ST_CHUNK_DATA:
			n = avail < c->body_left ? avail : c->body_left;
			if (n)
				evbuffer_remove_buffer(in, c->body, n);
			c->body_left -= n;
			if (c->body_left)
				return P_MORE;
			if (c->state == ST_BODY_LEN)
				return P_DONE;
			c->state = ST_CHUNK_CRLF;
			break;
		case ST_BODY_EOF:
			if (evbuffer_get_length(c->body) + avail > c->max_body)
				return -GW_UPCLI_TOO_BIG;
			evbuffer_add_buffer(c->body, in);
			return P_MORE; /* the close ends it (on_event) */
		case ST_CHUNK_SIZE:
		case ST_CHUNK_CRLF:
			line = next_line(in, stack, &n, &heap);
			if (!line) /* the line so far, maybe with its CR */
				return avail > CHUNK_LINE_MAX + 1 ? -GW_UPCLI_BAD : P_MORE;
			if (n > CHUNK_LINE_MAX || memchr(line, '\0', n))
				r = -GW_UPCLI_BAD;
			else if (c->state == ST_CHUNK_CRLF)
				r = n ? -GW_UPCLI_BAD : (c->state = ST_CHUNK_SIZE, 0);
			else
				r = chunk_size(c, line);
			if (heap)
				free(line);
			if (r)
				return r;
			break;
		default:
			return avail ? -GW_UPCLI_BAD : P_MORE;
		}
	}
}

/* The upstream closed its side with @in left unread: P_DONE (the answer is whole, or ran to
 * the close), or a negated gw_upcli_err. */
static int at_eof(struct gw_upcli *c, struct evbuffer *in)
{
	int r = parse(c, in);

	if (r < 0)
		return r;
	if (r == P_DONE || c->state == ST_BODY_EOF)
		return P_DONE;
	return -GW_UPCLI_BAD; /* closed before the answer was whole */
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct gw_upcli *c = arg;
	int r;

	if (!c->busy) {
		/* Bytes on an idle connection: nothing asked for them. */
		drop_conn(c);
		return;
	}
	r = parse(c, bufferevent_get_input(bev));
	if (r == P_DONE)
		deliver(c, GW_UPCLI_OK, c->keep);
	else if (r < 0)
		deliver(c, (enum gw_upcli_err)-r, false);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct gw_upcli *c = arg;

	(void)bev;
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	if (!c->busy) {
		drop_conn(c); /* the upstream closed an idle connection: the next one is fresh */
		return;
	}
	if (what & BEV_EVENT_EOF) {
		int r = at_eof(c, bufferevent_get_input(c->bev));

		deliver(c, r < 0 ? (enum gw_upcli_err)-r : GW_UPCLI_OK, false);
		return;
	}
	deliver(c, GW_UPCLI_BAD, false); /* reset before the answer was whole */
}

/* A connect-only call is over, c->conn_err says how: the socket closed, the callback called. */
static void connected(struct gw_upcli *c)
{
	gw_upcli_cb cb = c->cb;
	void *arg = c->arg;

	evtimer_del(c->timer);
	drop_conn(c);
	c->busy = false;
	c->connect_only = false;
	c->cb = NULL;
	c->arg = NULL;
	c->in_cb = true;
	if (cb)
		cb(c, c->conn_err ? GW_UPCLI_DOWN : GW_UPCLI_OK, NULL, arg);
	c->in_cb = false;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct gw_upcli *c = arg;

	(void)fd;
	(void)what;
	/* Still connecting at the deadline: the upstream is down (or its backlog full). */
	if (c->connect_ev)
		c->conn_err = ETIMEDOUT;
	if (c->connect_only)
		connected(c);
	else
		deliver(c, c->connect_ev ? GW_UPCLI_DOWN : GW_UPCLI_TIMEOUT, false);
}

/* @fd is connected: a bufferevent on it, and the waiting request written. */
static void attach(struct gw_upcli *c, int fd)
{
	c->bev = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev) {
		close(fd);
		return;
	}
	bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* Write @c's waiting request: straight to the socket while it takes it (no trip through
 * epoll for the common case, a socket with room), the rest through the bufferevent. */
static void write_msg(struct gw_upcli *c)
{
	evutil_socket_t fd = bufferevent_getfd(c->bev);

	if (!evbuffer_get_length(bufferevent_get_output(c->bev)))
		while (evbuffer_get_length(c->msg) && evbuffer_write(c->msg, fd) > 0)
			;
	if (evbuffer_get_length(c->msg))
		bufferevent_write_buffer(c->bev, c->msg); /* its error, if any, comes to on_event */
}

static void on_connect(evutil_socket_t fd, short what, void *arg)
{
	struct gw_upcli *c = arg;
	int err = 0;
	socklen_t len = sizeof(err);

	(void)what;
	event_free(c->connect_ev);
	c->connect_ev = NULL;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	c->conn_err = err;
	if (c->connect_only) {
		connected(c);
		return;
	}
	if (err) {
		deliver(c, GW_UPCLI_DOWN, false);
		return;
	}
	c->fd = -1;
	attach(c, fd);
	if (!c->bev) {
		deliver(c, GW_UPCLI_DOWN, false);
		return;
	}
	write_msg(c);
}

/* 1: connected (a connect-only call's socket closed again at once), 0: connecting, -1:
 * failed. c->conn_err: 0, or the errno of what failed. */
static int do_connect(struct gw_upcli *c)
{
	int fd = socket(c->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;

	c->conn_err = 0;
	if (fd < 0) {
		c->conn_err = errno;
		return -1;
	}
	if (c->sa.ss_family != AF_UNIX)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->connects++;
	if (!connect(fd, (struct sockaddr *)&c->sa, c->salen)) {
		if (c->connect_only) {
			close(fd);
			return 1;
		}
		attach(c, fd);
		if (!c->bev)
			c->conn_err = ENOMEM;
		return c->bev ? 1 : -1;
	}
	if (errno != EINPROGRESS) {
		/* refused, no such socket, or (a Unix socket) its backlog full: EAGAIN */
		c->conn_err = errno;
		close(fd);
		return -1;
	}
	c->connect_ev = event_new(c->base, fd, EV_WRITE, on_connect, c);
	if (!c->connect_ev || event_add(c->connect_ev, NULL)) {
		if (c->connect_ev)
			event_free(c->connect_ev);
		c->connect_ev = NULL;
		c->conn_err = ENOMEM;
		close(fd);
		return -1;
	}
	c->fd = fd;
	return 0;
}

int gw_upcli_connect(struct gw_upcli *c, uint32_t timeout_ms, gw_upcli_cb cb, void *arg)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000,
			      .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000 };
	int r;

	if (c->busy) {
		c->conn_err = EBUSY;
		return -1;
	}
	drop_conn(c);
	c->connect_only = true;
	r = do_connect(c);
	if (r) {
		c->connect_only = false;
		return r;
	}
	c->busy = true;
	c->cb = cb;
	c->arg = arg;
	evtimer_add(c->timer, &tv);
	return 0;
}

/* The parser's state for a new answer. */
static void start(struct gw_upcli *c, bool head_only, size_t max_head, size_t max_body)
{
	c->state = ST_STATUS;
	c->head_bytes = 0;
	c->body_left = 0;
	c->fields = 0;
	c->code = 0;
	c->keep = false;
	c->reason[0] = '\0';
	c->head_only = head_only;
	c->max_head = max_head;
	c->max_body = max_body;
}

int gw_upcli_send(struct gw_upcli *c, struct evbuffer *msg, bool head_only, uint32_t timeout_ms,
		  size_t max_head, size_t max_body, gw_upcli_cb cb, void *arg)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000,
			      .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000 };
	int r = 1;

	if (c->busy)
		return -1;
	start(c, head_only, max_head, max_body);
	if (!c->bev) {
		r = do_connect(c);
		if (r < 0) {
			c->state = ST_IDLE;
			evbuffer_drain(msg, evbuffer_get_length(msg));
			return -1;
		}
	}
	c->busy = true;
	c->cb = cb;
	c->arg = arg;
	c->requests++;
	evbuffer_add_buffer(c->msg, msg);
	evtimer_add(c->timer, &tv);
	if (r == 1)
		write_msg(c);
	return 0;
}

void gw_upcli_close(struct gw_upcli *c)
{
	if (!c->busy)
		drop_conn(c);
}

int gw_upcli_set_addr(struct gw_upcli *c, const struct sockaddr *sa, socklen_t salen)
{
	if (c->busy || salen > sizeof(c->sa))
		return -1;
	drop_conn(c);
	memcpy(&c->sa, sa, salen);
	c->salen = salen;
	return 0;
}

int gw_upcli_init(struct gw_upcli *c, struct event_base *base, const struct sockaddr *sa,
		  socklen_t salen)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->base = base;
	if (salen > sizeof(c->sa))
		return -1;
	memcpy(&c->sa, sa, salen);
	c->salen = salen;
	TAILQ_INIT(&c->hdrs);
	c->body = evbuffer_new();
	c->msg = evbuffer_new();
	c->timer = evtimer_new(base, on_timer, c);
	if (!c->body || !c->msg || !c->timer) {
		gw_upcli_fini(c);
		return -1;
	}
	return 0;
}

void gw_upcli_fini(struct gw_upcli *c)
{
	drop_conn(c);
	if (c->timer)
		event_free(c->timer);
	if (c->body)
		evbuffer_free(c->body);
	if (c->msg)
		evbuffer_free(c->msg);
	evhttp_clear_headers(&c->hdrs);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* ---- for tests -------------------------------------------------------------------------- */

void gw_upcli_test_start(struct gw_upcli *c, bool head_only, size_t max_head, size_t max_body)
{
	/* What deliver() clears after the callback (not start(): a callback that sends the
	 * next request may still be reading the answer it was given). */
	evhttp_clear_headers(&c->hdrs);
	evbuffer_drain(c->body, evbuffer_get_length(c->body));
	start(c, head_only, max_head, max_body);
}

int gw_upcli_test_feed(struct gw_upcli *c, struct evbuffer *in, bool eof)
{
	int r = eof ? at_eof(c, in) : parse(c, in);

	if (r == P_DONE)
		c->state = ST_IDLE;
	return r;
}
