/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A small streaming JSON writer for --json output: it tracks nesting and commas, escapes
 * strings, and prints one compact line per document (easy to pipe into jq or a test).
 */
#ifndef SLUICE_JSON_H
#define SLUICE_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	bool first[JSON_MAX_DEPTH];
};

void json_init(struct json *j, FILE *f);
/* @key is the member name inside an object, NULL inside an array or at the top. */
void json_obj_begin(struct json *j, const char *key);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j, const char *key);
void json_arr_end(struct json *j);
void json_str(struct json *j, const char *key, const char *v);
void json_u64(struct json *j, const char *key, uint64_t v);
void json_i64(struct json *j, const char *key, int64_t v);
void json_double(struct json *j, const char *key, double v);
void json_bool(struct json *j, const char *key, bool v);
void json_null(struct json *j, const char *key);
/* @text is already JSON (a trusted producer's object): written as the value, unchanged. */
void json_raw(struct json *j, const char *key, const char *text);
/* Ends the document with a newline. */
void json_end(struct json *j);

#endif
