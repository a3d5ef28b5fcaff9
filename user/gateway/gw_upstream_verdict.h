/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The sign-in verdict of an upstream's answer on a login route (routes[].login): from its
 * status alone, or, inside a `success` status, from a header of the answer
 * (login.header) or a field of its JSON body (login.json). Only the upstream's answer is
 * read: nothing the client sent can say "success". Whatever cannot be read (the header or
 * field missing, a value in neither list, a body that is not JSON, several headers that
 * disagree) gives the attempt back, never a success. The body is read in place (at most
 * gateway.upstream.max_response bytes, already bounded by the forward) and goes to the
 * client unchanged.
 */
#ifndef SLUICE_GW_UPSTREAM_VERDICT_H
#define SLUICE_GW_UPSTREAM_VERDICT_H

#include <stddef.h>

struct evkeyvalq;
struct sl_route_login;

/* Why an answer was a success, a failure, or neither (the metric's `verdict` label). */
enum gw_verdict {
	GW_VERDICT_SUCCESS = 0,
	GW_VERDICT_FAILURE,
	GW_VERDICT_OTHER_STATUS,  /* a status in neither list: given back */
	GW_VERDICT_MISSING,       /* no such header, no such field: given back */
	GW_VERDICT_UNKNOWN,       /* a value in neither list: given back */
	GW_VERDICT_MALFORMED,     /* not JSON, a field that is not a scalar, a duplicate member
				   * on the path, headers that disagree: given back */
	GW_VERDICT__N
};
const char *gw_verdict_name(int v);

/* The verdict on @l's route of an answer with status @code, headers @hdrs and body
 * @body (@len bytes; need not be NUL-terminated). */
int gw_up_verdict(const struct sl_route_login *l, int code, const struct evkeyvalq *hdrs,
		  const char *body, size_t len);
/* 1, 0 or -1 for gw_login_upstream_outcome(): success, failure, given back. */
int gw_verdict_outcome(int verdict);

/*
 * The scalar at dotted @path ("result.status", "errors.0.code": member names, and decimal
 * indexes into arrays) of the JSON document @body. Strict RFC 8259 (the whole document is
 * checked, at most 16 levels deep, UTF-8 validated); no allocation. Returns 1 with the
 * scalar's text in @out (a string's decoded content, or the literal of a number, true,
 * false or null; cut to @cap - 1 bytes, *@full false then), 0 when the path is not there,
 * -1 when the document is malformed, the value there is an object or an array, or a
 * member on the path appears twice.
 */
int gw_json_path(const char *body, size_t len, const char *path, char *out, size_t cap,
		 int *full);

#endif
