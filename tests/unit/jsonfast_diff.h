/*
 * jsonfast_diff.h -- the differential check shared by
 * tests/unit/test_jsonfast.c and tests/fuzz/fuzz_jsonfast.c: one input
 * through ri_json_parse (lib/util/jsonfast.h) and through jansson, and what
 * differs, if anything.
 *
 * The reference is json_loadb(text, len, JSON_REJECT_DUPLICATES); for a
 * text without a NUL byte json_loads of a NUL-terminated copy is run too
 * and must agree with it.  A text with a NUL byte must be refused (the
 * documented difference); when json_loadb accepts one anyway (its lexer
 * drops a NUL pushed back after a number or a literal) its value must be
 * ours for the text with the NUL bytes taken out -- so that quirk is the
 * only thing jansson does with them.
 *
 * On acceptance the two values must be the same in every way: json_equal,
 * the same json_dumps text compact with sorted keys and in insertion
 * order, and a walk comparing types (an integer is never a real), integer
 * values, the bits of each real (-0.0 against 0.0), string bytes and key
 * order.  Header-only, static functions; the caller decides what a
 * difference does (CHECK or abort).
 */
#ifndef RI_JSONFAST_DIFF_H
#define RI_JSONFAST_DIFF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "util/jsonfast.h"

struct jd_stats {
	unsigned long cases;            /* inputs compared */
	unsigned long accepted;         /* by both */
	unsigned long refused;          /* by both */
	unsigned long nul;              /* inputs with a NUL byte (we refuse) */
	unsigned long nul_loadb;        /* ... that json_loadb accepted */
	unsigned long reals;            /* reals compared bit for bit */
};

/* The same value, in every way the walk can see; 0 when not. */
static int
jd_same(const json_t *a, const json_t *b, struct jd_stats *st)
{
	double x, y;
	uint64_t bx, by;
	size_t i, n;
	void *ia, *ib;

	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_OBJECT:
		if (json_object_size(a) != json_object_size(b))
			return 0;
		ia = json_object_iter((json_t *)a);
		ib = json_object_iter((json_t *)b);
		for (; ia != NULL && ib != NULL;
		    ia = json_object_iter_next((json_t *)a, ia),
		    ib = json_object_iter_next((json_t *)b, ib)) {
			n = json_object_iter_key_len(ia);
			if (n != json_object_iter_key_len(ib) ||
			    memcmp(json_object_iter_key(ia), json_object_iter_key(ib), n) != 0 ||
			    !jd_same(json_object_iter_value(ia), json_object_iter_value(ib), st))
				return 0;
		}
		return ia == NULL && ib == NULL;
	case JSON_ARRAY:
		if ((n = json_array_size(a)) != json_array_size(b))
			return 0;
		for (i = 0; i < n; i++)
			if (!jd_same(json_array_get(a, i), json_array_get(b, i), st))
				return 0;
		return 1;
	case JSON_STRING:
		n = json_string_length(a);
		return n == json_string_length(b) &&
		    memcmp(json_string_value(a), json_string_value(b), n) == 0;
	case JSON_INTEGER:
		return json_integer_value(a) == json_integer_value(b);
	case JSON_REAL:
		x = json_real_value(a);
		y = json_real_value(b);
		memcpy(&bx, &x, sizeof bx);
		memcpy(&by, &y, sizeof by);
		if (st != NULL)
			st->reals++;
		return bx == by;
	default:
		return 1;       /* true, false, null: the type says it all */
	}
}

/* json_dumps under flags, or "" when it fails (freed by the caller) */
static char *
jd_dump(const json_t *j, size_t flags)
{
	char *s = json_dumps(j, flags | JSON_COMPACT | JSON_ENCODE_ANY);

	return s != NULL ? s : strdup("");
}

/* Everything the header comment lists; 0 when they differ. */
static int
jd_equal(const json_t *a, const json_t *b, struct jd_stats *st)
{
	char *da, *db;
	int ok;

	if (!json_equal(a, b) || !jd_same(a, b, st))
		return 0;
	da = jd_dump(a, JSON_SORT_KEYS);
	db = jd_dump(b, JSON_SORT_KEYS);
	ok = strcmp(da, db) == 0;
	free(da);
	free(db);
	if (!ok)
		return 0;
	da = jd_dump(a, 0);
	db = jd_dump(b, 0);
	ok = strcmp(da, db) == 0;
	free(da);
	free(db);
	return ok;
}

/* NULL when ri_json_parse agrees with jansson on text[0..len); else what
 * differs.  *ours (may be NULL) says whether we accepted it. */
static const char *
jd_check(const char *text, size_t len, struct jd_stats *st, int *ours)
{
	json_error_t je;
	json_t *a, *b, *c;
	const char *why = NULL;
	char *copy;
	size_t i, n;

	st->cases++;
	a = ri_json_parse(text, len);
	b = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (ours != NULL)
		*ours = a != NULL;
	if (memchr(text, '\0', len) != NULL) {
		st->nul++;
		if (a != NULL)
			why = "a text with a NUL byte was accepted";
		else if (b != NULL) {
			st->nul_loadb++;
			if ((copy = malloc(len + 1)) == NULL)
				abort();
			for (i = n = 0; i < len; i++)
				if (text[i] != '\0')
					copy[n++] = text[i];
			c = ri_json_parse(copy, n);
			if (c == NULL || !jd_equal(c, b, NULL))
				why = "json_loadb accepted a NUL byte other than by dropping it";
			json_decref(c);
			free(copy);
		}
		json_decref(a);
		json_decref(b);
		return why;
	}
	if ((copy = malloc(len + 1)) == NULL)
		abort();
	memcpy(copy, text, len);
	copy[len] = '\0';
	c = json_loads(copy, JSON_REJECT_DUPLICATES, &je);
	free(copy);
	if ((b == NULL) != (c == NULL) || (b != NULL && !jd_equal(b, c, NULL)))
		why = "json_loads and json_loadb disagree (the reference itself)";
	else if (a == NULL && b != NULL)
		why = "jansson accepts it, ri_json_parse refuses it";
	else if (a != NULL && b == NULL)
		why = "jansson refuses it, ri_json_parse accepts it";
	else if (a != NULL && !jd_equal(a, b, st))
		why = "both accept it, with different values";
	else if (a != NULL)
		st->accepted++;
	else
		st->refused++;
	json_decref(a);
	json_decref(b);
	json_decref(c);
	return why;
}

#endif
