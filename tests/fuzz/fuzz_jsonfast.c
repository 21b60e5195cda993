/*
 * fuzz_jsonfast.c -- libFuzzer harness for ri_json_parse (lib/util/jsonfast.h):
 * arbitrary bytes through it and through jansson (json_loadb with
 * JSON_REJECT_DUPLICATES, and json_loads when the input has no NUL), by
 * tests/unit/jsonfast_diff.h, the check tests/unit/test_jsonfast.c uses.
 *
 * Asserts: no crash, no sanitizer report (libFuzzer's buffer is exactly
 * the input, so a read past len is one), and the same answer as jansson --
 * acceptance, and on acceptance json_equal, the same json_dumps sorted and
 * in insertion order, the same types and the same bits for every real; an
 * input with a NUL byte refused.  Any difference aborts, naming it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../unit/jsonfast_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct jd_stats st;
	const char *why = jd_check((const char *)data, size, &st, NULL);

	if (why != NULL) {
		fprintf(stderr, "fuzz_jsonfast: assertion failed: %s (%zu bytes)\n",
		    why, size);
		abort();
	}
	return 0;
}
