/*
 * jsonfast.h -- a strict JSON parser (RFC 8259) that builds jansson values.
 *
 * ri parses every journal payload it reads; jansson's json_loads lexes one
 * byte at a time through a callback and copies each byte into a growing
 * buffer (~28,000 instructions for a 300-byte payload).  ri_json_parse
 * scans the buffer in place and builds the very same json_t values with
 * jansson's own constructors, so callers keep using jansson's API on the
 * result.
 *
 * What it accepts is exactly what json_loadb(text, len,
 * JSON_REJECT_DUPLICATES, &err) accepts -- and so, for text without a NUL
 * byte, what json_loads(text, JSON_REJECT_DUPLICATES, &err) accepts --
 * and the values are identical (types, integer values, the bits of every
 * real, string bytes, key order):
 *
 *   - an object or an array at the top level, nothing but space, tab, LF
 *     and CR around it;
 *   - no duplicate key in any object;
 *   - strings of valid UTF-8 (no overlong form, no surrogate, nothing
 *     above U+10FFFF), no raw control character, the RFC 8259 escapes,
 *     \uXXXX surrogate pairs combined, lone surrogates and \u0000 refused;
 *   - integers that fit json_int_t become integers, larger ones are
 *     refused; numbers with a fraction or an exponent become reals, as
 *     strtod rounds them, refused when they overflow (underflow gives 0
 *     or a subnormal, as in jansson);
 *   - at most JSON_PARSER_MAX_DEPTH (2048) levels, counting a scalar as a
 *     level of its own as jansson does: [[1]] is three levels.
 *
 * One deliberate difference: a NUL byte anywhere in text[0..len) is
 * refused.  json_loads stops at the first NUL (so it parses a different,
 * shorter text), and json_loadb accepts one NUL right after a number or a
 * literal ("[1\0]" gives [1]: its lexer loses a pushed-back NUL).
 *
 * The result does not depend on the locale.  Thread-safe (no state).
 */
#ifndef RI_JSONFAST_H
#define RI_JSONFAST_H

#include <stddef.h>
#include <jansson.h>

/* Parse text[0..len) (need not be NUL-terminated; never read past len):
 * a new reference, or NULL for input jansson refuses (or out of memory). */
json_t *ri_json_parse(const char *text, size_t len);

#endif
