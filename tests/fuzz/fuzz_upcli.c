// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * libFuzzer harness for the upstream client's answer parser (user/gateway/gw_upcli.c), run
 * through gw_upcli_test_start/_feed: the parser itself, no socket. `make fuzz-upcli` builds
 * and runs it (clang, -fsanitize=fuzzer,address,undefined); `make fuzz-upcli-replay` (and
 * the unit suite, tests/unit/test_gw_upcli_seeds.c) replays tests/fuzz/upcli_seeds/.
 *
 * The input: byte 0 chooses the request (bit 0: HEAD) and the bounds (bits 1-2: max_head
 * 65536, 512, 64 or 24; bits 3-5: max_body 1 MiB, 4096, 16, 5, 1 or 0); bytes 1-2 seed the
 * points where the answer is split; the rest is what the upstream sends, then closes.
 *
 * What must hold, else it aborts:
 * - whole, in random pieces, and a byte at a time, the parser gives the same verdict, and
 *   for a whole answer the same status, reason, fields, body, connection reuse and number
 *   of bytes read (what is left is the next answer's, or a smuggler's);
 * - a whole answer is within its bounds (body, fields), its status 200..599, and nothing in its reason or
 *   fields could end a line or a field where the client reads it (no CR, LF or NUL; the
 *   field names tokens);
 * - the answer as the gateway passes it on (its fields but the hops, its body by length)
 *   reads back as the same answer with nothing left over;
 * - what is left after a whole answer, read as the next answer on a used client, gives what
 *   it gives on a fresh one (no state carried from one answer to the next).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/un.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "gw_upcli.h"

/* What is being run, for the message (the unit suite's replay names its seed file). */
static const char *fuzz_what = "";

#define CHECK(x)                                                                          \
	do {                                                                              \
		if (!(x)) {                                                               \
			fprintf(stderr, "fuzz_upcli: %s:%d: %s (%s)\n", __FILE__, __LINE__, #x, \
				fuzz_what);                                               \
			abort();                                                          \
		}                                                                         \
	} while (0)

static const size_t HEADS[4] = { 65536, 512, 64, 24 };
static const size_t BODIES[8] = { 1u << 20, 4096, 16, 5, 1, 0, 1u << 20, 4096 };

struct answer {
	int verdict;                   /* 1 whole, or a negated gw_upcli_err */
	int code;
	bool keep;
	size_t used;                   /* bytes of the input read */
	char *reason, *fields, *body;  /* fields: "name\0value\0" each, concatenated */
	size_t fields_len, body_len;
};

static struct event_base *base;
static struct gw_upcli cli, fresh;

static void answer_free(struct answer *a)
{
	free(a->reason);
	free(a->fields);
	free(a->body);
	memset(a, 0, sizeof(*a));
}

static void take(struct gw_upcli *c, struct answer *a, int v, size_t used, size_t left)
{
	struct evkeyval *kv;
	size_t n = 0;

	memset(a, 0, sizeof(*a));
	a->verdict = v;
	if (v != 1)
		return;
	a->code = c->code;
	a->keep = c->keep && !left;
	a->used = used;
	a->reason = strdup(c->reason);
	TAILQ_FOREACH(kv, &c->hdrs, next)
		n += strlen(kv->key) + strlen(kv->value) + 2;
	a->fields = malloc(n + 1);
	CHECK(a->reason && a->fields);
	TAILQ_FOREACH(kv, &c->hdrs, next) {
		size_t kl = strlen(kv->key) + 1, vl = strlen(kv->value) + 1;

		memcpy(a->fields + a->fields_len, kv->key, kl);
		memcpy(a->fields + a->fields_len + kl, kv->value, vl);
		a->fields_len += kl + vl;
	}
	a->body_len = evbuffer_get_length(c->body);
	a->body = malloc(a->body_len + 1);
	CHECK(a->body);
	evbuffer_copyout(c->body, a->body, a->body_len);
}

/* Feed @data to @c in pieces: @cut(i) says how long piece i is (0: the rest). */
static void run(struct gw_upcli *c, const uint8_t *data, size_t len, bool head, size_t mh,
		size_t mb, uint32_t seed, int mode, struct answer *a)
{
	struct evbuffer *in = evbuffer_new();
	size_t off = 0;
	int v = 0;

	CHECK(in);
	gw_upcli_test_start(c, head, mh, mb);
	while (off < len && !v) {
		size_t n = len - off;

		if (mode == 1) {
			seed = seed * 1103515245u + 12345u;
			n = 1 + (seed >> 16) % (seed & 0x100 ? 4 : 64);
		} else if (mode == 2) {
			n = 1;
		}
		if (n > len - off)
			n = len - off;
		evbuffer_add(in, data + off, n);
		off += n;
		v = gw_upcli_test_feed(c, in, false);
	}
	if (!v)
		v = gw_upcli_test_feed(c, in, true);
	CHECK(v == 1 || (v < 0 && v >= -GW_UPCLI_TOO_BIG && v != -GW_UPCLI_OK));
	{
		size_t left = evbuffer_get_length(in) + (len - off);

		take(c, a, v, len - left, left);
	}
	evbuffer_free(in);
}

static bool same(const struct answer *x, const struct answer *y)
{
	if (x->verdict != y->verdict)
		return false;
	if (x->verdict != 1)
		return true;
	return x->code == y->code && x->keep == y->keep && x->used == y->used &&
	       !strcmp(x->reason, y->reason) && x->fields_len == y->fields_len &&
	       !memcmp(x->fields, y->fields, x->fields_len) && x->body_len == y->body_len &&
	       !memcmp(x->body, y->body, x->body_len);
}

static bool tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* RFC 9110 5.5 / RFC 9112 4: field values and reason phrases are VCHAR, obs-text, SP, HTAB. */
static bool clean_text(const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return false;
	}
	return true;
}

static bool hop(const char *k)
{
	return !strcasecmp(k, "Connection") || !strcasecmp(k, "Content-Length") ||
	       !strcasecmp(k, "Transfer-Encoding") || !strcasecmp(k, "Keep-Alive");
}

/* What the gateway hands its client, read back. */
static void round_trip(const struct answer *a, bool head)
{
	struct evbuffer *out = evbuffer_new();
	struct answer b;
	const char *p = a->fields;
	size_t len, n = 1; /* the Content-Length below */
	uint8_t *flat;

	CHECK(out);
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n", a->code, a->reason);
	while (p < a->fields + a->fields_len) {
		const char *v = p + strlen(p) + 1;

		if (!hop(p)) {
			evbuffer_add_printf(out, "%s: %s\r\n", p, v);
			n++;
		}
		p = v + strlen(v) + 1;
	}
	if (n > GW_UPCLI_MAX_FIELDS) { /* 100 fields and the length: not ours to read back */
		evbuffer_free(out);
		return;
	}
	evbuffer_add_printf(out, "Content-Length: %zu\r\n\r\n", a->body_len);
	evbuffer_add(out, a->body, a->body_len);
	len = evbuffer_get_length(out);
	flat = evbuffer_pullup(out, -1);
	run(&fresh, flat, len, false, len + 2, a->body_len, 0, 0, &b);
	CHECK(b.verdict == 1);
	CHECK(b.code == a->code && !strcmp(b.reason, a->reason));
	CHECK(b.body_len == a->body_len && !memcmp(b.body, a->body, a->body_len));
	CHECK(b.used == len && b.keep);
	(void)head;
	answer_free(&b);
	evbuffer_free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct answer whole, piece, byte, next, next_fresh;
	bool head;
	int n;
	size_t mh, mb;
	uint32_t seed;

	if (size < 3)
		return 0;
	if (!base) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = "/nonexistent" };

		base = event_base_new();
		CHECK(base);
		CHECK(!gw_upcli_init(&cli, base, (struct sockaddr *)&sa, sizeof(sa)));
		CHECK(!gw_upcli_init(&fresh, base, (struct sockaddr *)&sa, sizeof(sa)));
	}
	head = data[0] & 1;
	mh = HEADS[(data[0] >> 1) & 3];
	mb = BODIES[(data[0] >> 3) & 7];
	seed = (uint32_t)data[1] << 8 | data[2];
	data += 3;
	size -= 3;

	run(&cli, data, size, head, mh, mb, 0, 0, &whole);
	run(&cli, data, size, head, mh, mb, seed, 1, &piece);
	CHECK(same(&whole, &piece));
	if (size <= 4096) {
		run(&cli, data, size, head, mh, mb, 0, 2, &byte);
		CHECK(same(&whole, &byte));
		answer_free(&byte);
	}
	if (whole.verdict == 1) {
		const char *p = whole.fields;

		CHECK(whole.code >= 200 && whole.code <= 599);
		CHECK(whole.body_len <= mb);
		CHECK(!head || !whole.body_len);
		CHECK(clean_text(whole.reason));
		n = 0;
		while (p < whole.fields + whole.fields_len) {
			const char *v = p + strlen(p) + 1, *k;

			CHECK(++n <= GW_UPCLI_MAX_FIELDS);
			CHECK(*p);
			for (k = p; *k; k++)
				CHECK(tchar((unsigned char)*k));
			CHECK(clean_text(v));
			p = v + strlen(v) + 1;
		}
		round_trip(&whole, head);
		/* what is left, as the next answer: on the used client and on a fresh one */
		if (whole.used < size) {
			run(&cli, data + whole.used, size - whole.used, head, mh, mb, 0, 0, &next);
			run(&fresh, data + whole.used, size - whole.used, head, mh, mb, 0, 0,
			    &next_fresh);
			CHECK(same(&next, &next_fresh));
			answer_free(&next);
			answer_free(&next_fresh);
		}
	}
	answer_free(&whole);
	answer_free(&piece);
	return 0;
}
