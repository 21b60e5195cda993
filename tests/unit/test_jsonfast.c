/*
 * test_jsonfast.c -- lib/util/jsonfast.c (ri_json_parse) against jansson
 * itself: every input goes through both, through jsonfast_diff.h, which
 * requires the same acceptance and, on acceptance, identical values
 * (json_equal, the same json_dumps with sorted keys and in insertion
 * order, the same types, the same bits for every real).
 *
 *   a table of inputs, each also marked with the answer this file expects
 *   (so the table says what jansson does, and a change in either shows):
 *   the top level, whitespace, trailing text, literals, every escape,
 *   surrogates, the UTF-8 edges (2/3/4-byte boundaries, overlong forms,
 *   encoded surrogates, U+10FFFF and 0x110000, truncations), numbers
 *   (grammar, the int64 edges +-1, reals, exponents, overflow,
 *   underflow, -0), duplicate keys at depth, NUL bytes
 *   nesting at 2047 / 2048 / 2049 levels (arrays, objects, mixed, empty
 *   or with a scalar at the bottom) and 200,000 levels
 *   long strings with escapes (the scratch buffer's growth, a decoded key
 *   followed by a long decoded value)
 *   random int64s, random doubles printed with %.17g, random digit strings
 *   with random exponents
 *   a random differential: random nested documents (keys from a small
 *   pool so some repeat, unicode raw and escaped, escapes, numbers,
 *   whitespace, deep chains) and random mutations of each (byte flips,
 *   truncations, insertions of JSON-ish fragments, deletions, copies)
 *   the reals again under a locale whose radix character is ',' when the
 *   system has one (LOCPATH=DIR after `localedef -i de_DE -f UTF-8
 *   DIR/de_DE.UTF-8` makes one without installing it)
 *
 * TEST_JSONFAST_SEED=n repeats a run's random data; TEST_JSONFAST_DOCS=n
 * sets how many random documents (default 6000, each mutated 8 times).
 */
#include <locale.h>
#include <math.h>
#include <time.h>

#include "util/jsonfast.h"
#include "jsonfast_diff.h"
#include "testlib.h"

static struct jd_stats st;
/* the seeded generator of testlib.h */
#define rnd tl_rnd

static size_t
rndn(size_t n)
{
	return (size_t)(rnd() % n);
}

/* A printable rendering of an input for failure messages. */
static const char *
show(const char *s, size_t n)
{
	static char out[700];
	size_t o = 0, i;

	for (i = 0; i < n && o + 8 < sizeof out; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, sizeof out - o, "\\x%02x", c);
	}
	if (i < n)
		snprintf(out + o, sizeof out - o, "...(%zu bytes)", n);
	else
		out[o] = '\0';
	return out;
}

/* One input: ours agrees with jansson; want is 1 / 0 (accept / refuse)
 * or -1 (whatever jansson says). */
static void
check(const char *s, size_t n, int want, const char *what)
{
	const char *why;
	int ours;

	why = jd_check(s, n, &st, &ours);
	CHECK(why == NULL, "%s: %s: %s", what, why, show(s, n));
	CHECK(want < 0 || ours == want, "%s: %s, this test expects it %s: %s",
	    what, ours ? "accepted" : "refused", want ? "accepted" : "refused",
	    show(s, n));
}

struct tcase {
	const char *text;
	size_t len;
	int accept;
};
#define A(s)    { s, sizeof(s) - 1, 1 }
#define R(s)    { s, sizeof(s) - 1, 0 }

static const struct tcase table[] = {
	/* the top level: an object or an array only */
	A("{}"), A("[]"), A("[[]]"), A("[{}]"), A("{\"a\":[]}"), A("{\"a\":{}}"),
	R(""), R(" "), R("1"), R("-1"), R("\"a\""), R("true"), R("false"),
	R("null"), R("["), R("{"), R("]"), R("}"), R("[}"), R("{]"),
	/* whitespace: space, tab, LF, CR only */
	A(" [ ] "), A("\t\n\r[\t1\n,\r2 ]\n"), A("{ \"a\" : 1 , \"b\" :\t2 }"),
	A("[]\n\n\n"), A("[] \t\r\n"), R("\f[]"), R("[]\f"), R("[\v]"),
	R("\xa0[]"), R("\xc2\xa0[]"), R("\xef\xbb\xbf[]"), R("[\x1c]"),
	/* trailing text */
	R("[] x"), R("[]]"), R("[][]"), R("{}{}"), R("{}}"), R("[],"),
	R("[] /* */"), R("[]\x80"), R("[]\xc3\xa9"),
	/* structure */
	R("[1"), R("[1,"), R("{\"a\""), R("{\"a\":"), R("{\"a\":1"),
	R("{\"a\" 1}"), R("{a:1}"), R("{'a':1}"), R("{\"a\":1,}"), R("[1,]"),
	R("[,]"), R("[,1]"), R("{,}"), R("[1 2]"), R("{\"a\":1 \"b\":2}"),
	R("{\"a\"::1}"), R("{1:1}"), R("{null:1}"), R("[1,,2]"), R("{\"a\"}"),
	R("{\"a\",1}"), R("[\"a\":1]"), A("[1,[2,[3,{\"x\":[4]}]],5]"),
	/* literals */
	A("[true,false,null]"), R("[True]"), R("[tru]"), R("[truex]"),
	R("[nul]"), R("[falsey]"), R("[true1]"), R("[nulll]"), R("[t]"),
	R("[NaN]"), R("[Infinity]"), R("[-Infinity]"), R("[undefined]"),
	/* escapes: each of RFC 8259 section 7's, and others refused */
	A("[\"\\\"\"]"), A("[\"\\\\\"]"), A("[\"\\/\"]"), A("[\"\\b\"]"),
	A("[\"\\f\"]"), A("[\"\\n\"]"), A("[\"\\r\"]"), A("[\"\\t\"]"),
	A("[\"a\\tb\\nc\\\\d\\\"e\\/f\"]"), R("[\"\\a\"]"), R("[\"\\x41\"]"),
	R("[\"\\'\"]"), R("[\"\\0\"]"), R("[\"\\U0041\"]"), R("[\"\\ \"]"),
	R("[\"\\\"]"), R("[\"\\"), R("[\"abc"), R("[\"abc\\\"]"),
	/* \u: hex digits of either case, the boundaries of each UTF-8 length */
	A("[\"\\u0041\"]"), A("[\"\\u00e9\"]"), A("[\"\\u00E9\"]"),
	A("[\"\\u20ac\"]"), A("[\"\\u20AC\"]"), A("[\"\\u0001\"]"),
	A("[\"\\u001f\"]"), A("[\"\\u007f\"]"), A("[\"\\u0080\"]"),
	A("[\"\\u07ff\"]"), A("[\"\\u0800\"]"), A("[\"\\ud7ff\"]"),
	A("[\"\\ue000\"]"), A("[\"\\ufffe\"]"), A("[\"\\uffff\"]"),
	A("[\"\\uFFFF\"]"), R("[\"\\u0000\"]"), R("[\"a\\u0000b\"]"),
	R("[\"\\u\"]"), R("[\"\\u1\"]"), R("[\"\\u12\"]"), R("[\"\\u123\"]"),
	R("[\"\\u12g4\"]"), R("[\"\\uX000\"]"), R("[\"\\u-123\"]"),
	R("[\"\\u+123\"]"), R("[\"\\u 123\"]"), R("[\"\\u00"),
	/* surrogates: pairs combined, anything else refused */
	A("[\"\\ud800\\udc00\"]"), A("[\"\\udbff\\udfff\"]"),
	A("[\"\\uD834\\uDD1E\"]"), A("[\"\\ud83d\\ude00x\"]"),
	R("[\"\\ud800\"]"), R("[\"\\udbff\"]"), R("[\"\\udc00\"]"),
	R("[\"\\udfff\"]"), R("[\"\\ud800\\ud800\"]"), R("[\"\\ud800\\u0041\"]"),
	R("[\"\\ud800\\n\"]"), R("[\"\\ud800x\"]"), R("[\"\\udc00\\ud800\"]"),
	R("[\"\\ud800\\\"]"), R("[\"\\ud800\\u\"]"), R("[\"\\ud800\\udc0\"]"),
	R("[\"\\ud800\\ue000\"]"), R("[\"\\ud800\\udbff\"]"),
	/* raw control characters refused, DEL allowed */
	R("[\"\x01\"]"), R("[\"\x1f\"]"), R("[\"a\tb\"]"), R("[\"a\nb\"]"),
	R("[\"a\rb\"]"), A("[\"\x7f\"]"), A("[\" ~\"]"),
	/* UTF-8: 2-byte */
	A("[\"\xc2\x80\"]"), A("[\"\xdf\xbf\"]"), A("[\"\xc3\xa9\"]"),
	R("[\"\xc0\x80\"]"), R("[\"\xc1\xbf\"]"), R("[\"\xc2\"]"),
	R("[\"\xc2\x41\"]"), R("[\"\xc2\xc0\"]"), R("[\"\xc2"),
	/* 3-byte */
	A("[\"\xe0\xa0\x80\"]"), A("[\"\xed\x9f\xbf\"]"), A("[\"\xee\x80\x80\"]"),
	A("[\"\xef\xbf\xbf\"]"), A("[\"\xe2\x82\xac\"]"), R("[\"\xe0\x9f\xbf\"]"),
	R("[\"\xe0\x80\x80\"]"), R("[\"\xed\xa0\x80\"]"), R("[\"\xed\xbf\xbf\"]"),
	R("[\"\xed\xa0\x80\xed\xb0\x80\"]"), R("[\"\xe2\x82\"]"),
	R("[\"\xe2\x82\x41\"]"), R("[\"\xe2\x41\xac\"]"), R("[\"\xe2\x82"),
	/* 4-byte */
	A("[\"\xf0\x90\x80\x80\"]"), A("[\"\xf4\x8f\xbf\xbf\"]"),
	A("[\"\xf0\x9f\x98\x80\"]"), A("[\"\xf3\xbf\xbf\xbf\"]"),
	R("[\"\xf0\x8f\xbf\xbf\"]"), R("[\"\xf0\x80\x80\x80\"]"),
	R("[\"\xf4\x90\x80\x80\"]"), R("[\"\xf5\x80\x80\x80\"]"),
	R("[\"\xf7\xbf\xbf\xbf\"]"), R("[\"\xf8\x88\x80\x80\x80\"]"),
	R("[\"\xfc\x84\x80\x80\x80\x80\"]"), R("[\"\xf0\x90\x80\"]"),
	R("[\"\xf0\x90\x80\x41\"]"), R("[\"\xf0\x90\"]"),
	/* never valid bytes, continuation bytes alone */
	R("[\"\xff\"]"), R("[\"\xfe\"]"), R("[\"\x80\"]"), R("[\"\xbf\"]"),
	R("[\"a\x80\x80\"]"), R("[\xc3\xa9]"), R("[\"a\"\xc3\xa9]"),
	A("{\"\xc3\xa9\":\"\xe2\x82\xac\",\"\\u00e8\":1}"),
	/* numbers: the grammar (RFC 8259 section 6) */
	A("[0]"), A("[-0]"), A("[1]"), A("[-1]"), A("[10]"), A("[1234567890]"),
	R("[00]"), R("[01]"), R("[-01]"), R("[+1]"), R("[.5]"), R("[-.5]"),
	R("[1.]"), R("[1.e5]"), R("[1e]"), R("[1e+]"), R("[1e-]"), R("[1E]"),
	R("[-]"), R("[--1]"), R("[- 1]"), R("[0x10]"), R("[1e5.5]"),
	R("[1.5.3]"), R("[1ee5]"), R("[1a]"), R("[1.5a]"), R("[0-1]"),
	R("[1e5e5]"), R("[1,2-]"), R("[\xef\xbc\x91]"), R("[1_000]"),
	/* integers at the int64 edges */
	A("[9223372036854775807]"), A("[9223372036854775806]"),
	R("[9223372036854775808]"), R("[9223372036854775809]"),
	A("[-9223372036854775808]"), A("[-9223372036854775807]"),
	R("[-9223372036854775809]"), R("[-9223372036854775810]"),
	R("[10000000000000000000]"), R("[18446744073709551615]"),
	R("[18446744073709551616]"), R("[99999999999999999999]"),
	R("[-99999999999999999999]"), A("[999999999999999999]"),
	A("[1000000000000000000]"), A("[9007199254740993]"),
	R("[123456789012345678901234567890]"),
	/* reals: fraction or exponent */
	A("[0.0]"), A("[-0.0]"), A("[0e0]"), A("[-0e-0]"), A("[0E+0]"),
	A("[1E5]"), A("[1e+5]"), A("[1e-5]"), A("[1e05]"), A("[1e-05]"),
	A("[0.1]"), A("[3.141592653589793]"), A("[2.718281828459045235360]"),
	A("[1e22]"), A("[1e23]"), A("[9007199254740993.0]"),
	A("[123456789012345678901234567890.0]"), A("[1.5e300]"),
	A("[0.30000000000000004]"), A("[-123.456e-7]"), A("[1.0e0]"),
	A("[5e-324]"), A("[4.9e-324]"), A("[2.4703282292062327e-324]"),
	A("[2.4703282292062328e-324]"), A("[2.2250738585072011e-308]"),
	A("[2.2250738585072014e-308]"), A("[1.7976931348623157e308]"),
	A("[1.7976931348623158e308]"), R("[1.7976931348623159e308]"),
	R("[-1.7976931348623159e308]"), R("[1e309]"), A("[1e308]"),
	/* overflow refused, underflow kept (0 or a subnormal) */
	R("[1e400]"), R("[-1e400]"), A("[1e-400]"), A("[-1e-400]"),
	A("[1E-400]"), R("[1e99999999999999999999]"),
	A("[1e-99999999999999999999]"), A("[0e99999999999999999999]"),
	A("[0.00000000000000000000000000001e29]"),
	A("[100000000000000000000000000000e-29]"),
	A("[0.000000000000000000000000000000000000000000000001e-280]"),
	R("[10000000000000000000000000000000000000000000000000e300]"),
	/* duplicate keys, at the top and at depth, after decoding */
	A("{\"a\":1,\"b\":2}"), A("{\"a\":1,\"A\":2}"), A("{\"\":1}"),
	A("[{\"x\":1},{\"x\":1}]"), A("{\"a\":{\"a\":{\"a\":1}}}"),
	R("{\"a\":1,\"a\":1}"), R("{\"a\":1,\"b\":2,\"a\":3}"),
	R("{\"a\":{\"b\":1,\"b\":2}}"), R("{\"a\":1,\"\\u0061\":2}"),
	R("{\"\":1,\"\":2}"), R("{\"a\":[],\"a\":{}}"), R("{\"a\":{},\"a\":1}"),
	R("{\"\xc3\xa9\":1,\"\\u00e9\":2}"), R("[1,{\"k\":[{\"z\":0,\"z\":0}]}]"),
	R("{\"\\ud83d\\ude00\":1,\"\xf0\x9f\x98\x80\":2}"),
	A("{\"ab\":1,\"a\\u0062\\u0063\":2}"),
	/* keys follow the string rules */
	A("{\"\\n\\t\\\"\":1}"), A("{\"\\ud83d\\ude00\":1}"), R("{\"\\u0000\":1}"),
	R("{\"a\\u0000b\":1}"), R("{\"\\ud800\":1}"), R("{\"\xc0\x80\":1}"),
	R("{\"a\nb\":1}"), R("{\"\\q\":1}"),
	/* NUL bytes: refused (jansson's json_loadb accepts the first three,
	 * json_loads would stop at the NUL) */
	R("[1\0]"), R("[true\0]"), R("[1.5\0 ]"), R("\0"), R("[\0]"),
	R("{}\0"), R("[]\0x"), R("[\"a\0b\"]"), R("\0[]"), R("[1\0\0]"),
	R("{\"a\0\":1}"), R("{\"a\":\"\0\"}"),
	/* a typical journal payload */
	A("{\"act_key\":\"k-000123\",\"data\":{\"pairing_datum\":\"pd-000123\","
	  "\"amount\":5,\"note\":\"some text \\u00e9\"},\"invocation_id\":"
	  "\"inv_0123456789abcdef0123456789abcdef\",\"kind\":\"ledger\","
	  "\"intent_event_id\":\"evt_0123456789abcdef0123456789abcdef\"}"),
};

static void
table_cases(void)
{
	size_t i, acc = 0;

	for (i = 0; i < sizeof table / sizeof table[0]; i++) {
		check(table[i].text, table[i].len, table[i].accept, "table");
		acc += table[i].accept;
	}
	PASS("table: %zu inputs (%zu accepted, %zu refused), each as jansson does",
	    i, acc, i - acc);
}

struct buf {
	char *p;
	size_t n, cap;
};

static void
b_put(struct buf *b, const void *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		while (b->n + n + 1 > b->cap)
			b->cap = b->cap ? b->cap * 2 : 256;
		CHECK((b->p = realloc(b->p, b->cap)) != NULL, "out of memory");
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void
b_s(struct buf *b, const char *s)
{
	b_put(b, s, strlen(s));
}

static void
b_c(struct buf *b, char c)
{
	b_put(b, &c, 1);
}

/* d levels of opens (kind: 'a' arrays, 'o' objects, 'm' mixed), then
 * bottom (may be ""), then the closes */
static void
nest(struct buf *b, size_t d, char kind, const char *bottom)
{
	size_t i;

	b->n = 0;
	for (i = 0; i < d; i++) {
		int obj = kind == 'o' || (kind == 'm' && i % 2 == 1);
		b_s(b, obj ? "{\"k\":" : "[");
	}
	/* an object's member needs a value: "" bottom in an object gets {} */
	b_s(b, bottom);
	for (i = d; i-- > 0;) {
		int obj = kind == 'o' || (kind == 'm' && i % 2 == 1);
		b_c(b, obj ? '}' : ']');
	}
}

/*
 * jansson counts every value as a level: the top-level container is level
 * 1, a value inside it level 2.  So d nested arrays end in [] at level d
 * (accepted up to 2048), and a scalar inside d of them is at level d + 1
 * (accepted up to 2047 containers).
 */
static void
depth_cases(void)
{
	static const size_t ds[] = { 1, 2, 31, 32, 33, 2046, 2047, 2048, 2049, 2050 };
	static const char kinds[] = { 'a', 'o', 'm' };
	struct buf b = { 0 };
	char what[64];
	size_t i, k, n = 0;

	for (i = 0; i < sizeof ds / sizeof ds[0]; i++)
		for (k = 0; k < sizeof kinds; k++) {
			size_t d = ds[i];
			tl_fmt(what, sizeof what, "depth %zu %c, empty", d, kinds[k]);
			/* the innermost container: [] (arrays) or {} at d + 1 */
			if (kinds[k] == 'a' || (kinds[k] == 'm' && (d - 1) % 2 == 0)) {
				nest(&b, d - 1, kinds[k], "[]");
				check(b.p, b.n, d <= 2048, what);
			} else {
				nest(&b, d - 1, kinds[k], "{}");
				check(b.p, b.n, d <= 2048, what);
			}
			tl_fmt(what, sizeof what, "depth %zu %c, scalar", d, kinds[k]);
			nest(&b, d, kinds[k], "1");
			check(b.p, b.n, d + 1 <= 2048, what);
			nest(&b, d, kinds[k], "\"s\"");
			check(b.p, b.n, d + 1 <= 2048, what);
			n += 3;
		}
	/* far deeper than the limit: refused without exhausting the C stack */
	nest(&b, 200000, 'a', "");
	check(b.p, b.n, 0, "200000 arrays");
	b.n = 0;
	for (i = 0; i < 200000; i++)
		b_c(&b, '[');
	check(b.p, b.n, 0, "200000 opens");
	b.n = 0;
	for (i = 0; i < 2048; i++)
		b_s(&b, "{\"k\":");
	check(b.p, b.n, 0, "2048 open objects, cut short");
	/* the limit is per chain, not in total */
	b.n = 0;
	b_c(&b, '[');
	for (i = 0; i < 3000; i++)
		b_s(&b, i ? ",[[[]]]" : "[[[]]]");
	b_c(&b, ']');
	check(b.p, b.n, 1, "3000 shallow siblings");
	free(b.p);
	PASS("depth: %zu chains at 1..2050 levels (limit 2048, a scalar counted "
	    "as a level), 200000 levels, siblings", n + 4);
}

/* Strings long enough to grow the scratch buffer, decoded keys before
 * decoded values (the value goes after the key in the buffer). */
static void
long_string_cases(void)
{
	static const size_t lens[] = { 0, 1, 7, 8, 9, 63, 64, 255, 256, 257,
	    1000, 4096, 20000 };
	struct buf b = { 0 }, s = { 0 };
	size_t i, j, n = 0;
	char what[64];

	for (i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		for (int kind = 0; kind < 4; kind++) {
			s.n = 0;
			b_s(&s, "");
			for (j = 0; j < lens[i]; j++) {
				switch (kind) {
				case 0: b_c(&s, (char)('a' + j % 26)); break;
				case 1: b_s(&s, j % 5 ? "x" : "\\n"); break;
				case 2: b_s(&s, j % 3 ? "\xc3\xa9" : "\\u20ac"); break;
				default: b_s(&s, j % 2 ? "\\ud83d\\ude00" : "\xf0\x9f\x98\x80"); break;
				}
			}
			b.n = 0;
			b_s(&b, "{\"");
			b_s(&b, s.p);
			b_s(&b, "\":\"");
			b_s(&b, s.p);
			b_s(&b, "\\t\",\"k\\u0041\":[\"");
			b_s(&b, s.p);
			b_s(&b, "\"],\"\\u0042");
			b_s(&b, s.p);
			b_s(&b, "\":\"");
			b_s(&b, s.p);
			b_s(&b, "\"}");
			tl_fmt(what, sizeof what, "strings of %zu, kind %d", lens[i], kind);
			check(b.p, b.n, 1, what);
			/* the same, cut short just before its end */
			check(b.p, b.n - 2, 0, what);
			n += 2;
		}
	}
	free(b.p);
	free(s.p);
	PASS("long strings: %zu documents, strings of 0..20000 units, escaped "
	    "keys before escaped values", n);
}

static void
number_cases(void)
{
	char t[128];
	size_t i, n = 0;
	long long edges[] = { LLONG_MAX, LLONG_MIN, 0, 1, -1 };

	for (i = 0; i < sizeof edges / sizeof edges[0]; i++)
		for (long long k = -3; k <= 3; k++) {
			long long v;
			if (__builtin_add_overflow(edges[i], k, &v))
				continue;
			tl_fmt(t, sizeof t, "[%lld]", v);
			check(t, strlen(t), 1, "int64 edge");
			n++;
		}
	for (i = 0; i < 3000; i++) {
		long long v = (long long)(rnd() >> rndn(64));
		if (rnd() & 1)
			v = -v;
		tl_fmt(t, sizeof t, "{\"n\":%lld}", v);
		check(t, strlen(t), 1, "random int64");
		n++;
	}
	for (i = 0; i < 6000; i++) {
		uint64_t bits = rnd();
		double d;
		memcpy(&d, &bits, sizeof d);
		if (isnan(d) || isinf(d))
			continue;
		/* %.17g: the exact double back; sometimes fewer digits */
		tl_fmt(t, sizeof t, "[%.*g]", i % 3 ? 17 : (int)(1 + rndn(17)), d);
		/* fewer digits can round a double near DBL_MAX past it ("-2e+308"):
		 * then it overflows, and both must refuse it (strtod reads what
		 * printf wrote, in the same locale) */
		bool over = isinf(strtod(t + 1, NULL));
		/* under a ',' locale (locale_cases) printf writes one: JSON's is '.' */
		for (char *c = strchr(t, ','); c != NULL; c = strchr(c, ','))
			*c = '.';
		if (strchr(t, '.') == NULL && strchr(t, 'e') == NULL)
			continue;       /* printed as an integer */
		check(t, strlen(t), over ? 0 : 1, "random double");
		n++;
	}
	for (i = 0; i < 6000; i++) {
		/* random digits, a random point, a random exponent */
		size_t nd = 1 + rndn(i % 10 ? 20 : 400), o = 0, j;
		char *s = malloc(nd + 64);
		CHECK(s != NULL, "out of memory");
		s[o++] = '[';
		if (rnd() & 1)
			s[o++] = '-';
		s[o++] = (char)('1' + rndn(9));
		for (j = 1; j < nd; j++) {
			s[o++] = (char)('0' + rndn(10));
			if (rndn(nd) == 0)
				break;
		}
		if (rnd() & 1) {
			s[o++] = '.';
			for (j = 0, nd = 1 + rndn(30); j < nd; j++)
				s[o++] = (char)('0' + rndn(10));
		}
		if (rnd() & 1 || s[o - 1] != '.') {
			int e = (int)rndn(5) == 0 ? (int)rndn(700) - 350 : (int)rndn(60) - 30;
			o += (size_t)snprintf(s + o, 32, "%c%s%d", rnd() & 1 ? 'e' : 'E',
			    e >= 0 && (rnd() & 1) ? "+" : "", e);
		}
		s[o++] = ']';
		check(s, o, -1, "random digits");
		free(s);
		n++;
	}
	PASS("numbers: %zu (int64 edges +-3, random int64s, random doubles as "
	    "%%.17g and shorter, random digit strings with exponents)", n);
}

/* ---- the random document generator ---- */

static void
g_ws(struct buf *b)
{
	size_t n;

	if (rndn(4) != 0)
		return;
	for (n = 1 + rndn(3); n > 0; n--)
		b_c(b, " \t\n\r"[rndn(4)]);
}

static void
g_utf8(struct buf *b, uint32_t cp)
{
	char o[4];

	if (cp < 0x80) {
		b_c(b, (char)cp);
	} else if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		b_put(b, o, 2);
	} else if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		b_put(b, o, 3);
	} else {
		o[0] = (char)(0xf0 | cp >> 18);
		o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[3] = (char)(0x80 | (cp & 0x3f));
		b_put(b, o, 4);
	}
}

static void
g_uesc(struct buf *b, unsigned int u)
{
	char t[8];

	snprintf(t, sizeof t, rnd() & 1 ? "\\u%04x" : "\\u%04X", u);
	b_s(b, t);
}

/* a code point of any UTF-8 length, edges often, never a surrogate */
static uint32_t
g_cp(void)
{
	static const uint32_t edge[] = { 0x80, 0x7ff, 0x800, 0xd7ff, 0xe000,
	    0xfffd, 0xfffe, 0xffff, 0x10000, 0x10ffff, 0xe9, 0x20ac, 0x1f600 };
	uint32_t cp;

	switch (rndn(4)) {
	case 0: return edge[rndn(sizeof edge / sizeof edge[0])];
	case 1: return 0x80 + (uint32_t)rndn(0x780);
	case 2:
		cp = 0x800 + (uint32_t)rndn(0xf800);
		return cp >= 0xd800 && cp <= 0xdfff ? cp + 0x800 : cp;
	default: return 0x10000 + (uint32_t)rndn(0x100000);
	}
}

static void
g_string(struct buf *b)
{
	static const char *nasty[] = { "\\ud800", "\\udc00", "\\u0000", "\x01",
	    "\x1f", "\x80", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
	    "\xc3", "\\x", "\\", "\xff", "\xe0\x9f\xbf", "\xf0\x8f\xbf\xbf",
	    "\\ud800\\u0041", "\n", "\t" };
	size_t n, i, j;
	uint32_t cp;

	b_c(b, '"');
	for (n = rndn(10); n > 0; n--) {
		switch (rndn(10)) {
		case 0: case 1: case 2: case 3:
			do
				cp = 0x20 + (uint32_t)rndn(0x60);
			while (cp == '"' || cp == '\\');
			b_c(b, (char)cp);
			break;
		case 4:
			b_c(b, '\\');
			b_c(b, "\"\\/bfnrt"[rndn(8)]);
			break;
		case 5:
			do
				cp = 1 + (uint32_t)rndn(0xffff);
			while (cp >= 0xd800 && cp <= 0xdfff);
			g_uesc(b, rndn(3) ? (unsigned int)rndn(0x100) | 1 : cp);
			break;
		case 6:
			cp = 0x10000 + (uint32_t)rndn(0x100000);
			g_uesc(b, 0xd800 + ((cp - 0x10000) >> 10));
			g_uesc(b, 0xdc00 + ((cp - 0x10000) & 0x3ff));
			break;
		case 7:
			g_utf8(b, g_cp());
			break;
		case 8:
			for (i = 0, j = 8 + rndn(40); i < j; i++)
				b_c(b, (char)('a' + rndn(26)));
			break;
		default:
			if (rndn(60) == 0)
				b_s(b, nasty[rndn(sizeof nasty / sizeof nasty[0])]);
			else
				b_c(b, 'z');
			break;
		}
	}
	b_c(b, '"');
}

static void
g_key(struct buf *b)
{
	static const char *pool[] = { "\"a\"", "\"b\"", "\"kind\"", "\"data\"",
	    "\"\\u0061\"", "\"\xc3\xa9\"", "\"\\u00e9\"", "\"\"", "\"act_key\"",
	    "\"\\ud83d\\ude00\"", "\"\xf0\x9f\x98\x80\"" };

	if (rndn(3) == 0)
		b_s(b, pool[rndn(sizeof pool / sizeof pool[0])]);
	else
		g_string(b);
}

static void
g_digits(struct buf *b, size_t n, int lead)
{
	if (lead)
		b_c(b, (char)('1' + rndn(9)));
	for (; n > 0; n--)
		b_c(b, (char)('0' + rndn(10)));
}

static void
g_number(struct buf *b)
{
	static const char *special[] = { "9223372036854775807",
	    "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	    "-0", "0", "-0.0", "1e400", "-1e400", "1e-400", "1E-400", "01", "1.",
	    "+1", ".5", "1e", "-", "1.e3", "4.9e-324", "1.7976931348623159e308",
	    "2.2250738585072011e-308", "1e23", "9007199254740993.0", "0e999" };
	char t[32];

	switch (rndn(8)) {
	case 0:
		if (rndn(20) == 0) {
			b_s(b, special[rndn(sizeof special / sizeof special[0])]);
			return;
		}
		/* fall through */
	case 1: case 2:
		snprintf(t, sizeof t, "%lld", (long long)rndn(2000) - 1000);
		b_s(b, t);
		return;
	case 3:
		if (rnd() & 1)
			b_c(b, '-');
		g_digits(b, 17 + rndn(4), 1);
		return;
	default:
		if (rnd() & 1)
			b_c(b, '-');
		if (rndn(3) == 0)
			b_c(b, '0');
		else
			g_digits(b, rndn(rndn(4) ? 5 : 25), 1);
		if (rnd() & 1) {
			b_c(b, '.');
			g_digits(b, 1 + rndn(rndn(4) ? 6 : 25), 0);
			if (rnd() & 1)
				return;
		}
		b_c(b, rnd() & 1 ? 'e' : 'E');
		if (rndn(3) != 0)
			b_c(b, rnd() & 1 ? '-' : '+');
		if (rndn(8) == 0)
			b_c(b, '0');
		switch (rndn(4)) {
		case 0: snprintf(t, sizeof t, "%d", (int)rndn(30)); break;
		case 1: snprintf(t, sizeof t, "%d", 280 + (int)rndn(60)); break;
		case 2: snprintf(t, sizeof t, "%d", (int)rndn(100000)); break;
		default: snprintf(t, sizeof t, "%d", (int)rndn(10)); break;
		}
		b_s(b, t);
		return;
	}
}

static void
g_value(struct buf *b, int depth)
{
	size_t n, i;
	int obj;

	if (depth >= 6 || rndn(10) < 5) {
		switch (rndn(7)) {
		case 0: case 1: g_string(b); break;
		case 2: case 3: case 4: g_number(b); break;
		default:
			b_s(b, (const char *[]){ "true", "false", "null" }[rndn(3)]);
			break;
		}
		return;
	}
	obj = rnd() & 1;
	b_c(b, obj ? '{' : '[');
	for (i = 0, n = rndn(6); i < n; i++) {
		g_ws(b);
		if (i > 0) {
			b_c(b, ',');
			g_ws(b);
		}
		if (obj) {
			g_key(b);
			g_ws(b);
			b_c(b, ':');
			g_ws(b);
		}
		g_value(b, depth + 1);
	}
	g_ws(b);
	b_c(b, obj ? '}' : ']');
}

/* a document: mostly an object or an array, sometimes a deep chain */
static void
g_doc(struct buf *b)
{
	size_t start, i, opens;

	b->n = 0;
	g_ws(b);
	start = b->n;
	if (rndn(300) == 0) {
		for (i = 2040 + rndn(12); i > 0; i--)
			b_s(b, rnd() & 1 ? "[" : "{\"k\":");
		opens = b->n;
		if (rnd() & 1)
			g_value(b, 6);
		else
			b_s(b, "[]");
		/* close what was opened, innermost first */
		for (i = opens; i-- > start;) {
			if (b->p[i] == '[')
				b_c(b, ']');
			else if (b->p[i] == '{')
				b_c(b, '}');
		}
	} else if (rndn(40) == 0)
		g_value(b, 0);
	else {
		do {
			b->n = start;
			g_value(b, 0);
		} while (b->p[start] != '{' && b->p[start] != '[');
	}
	g_ws(b);
}

static void
mutate(struct buf *b)
{
	static const char *frag[] = { "\"", "\\", "{", "}", "[", "]", ",", ":",
	    "0", "-", "e", ".", "\\u", "\xc3", "\xed\xa0\x80", "\0", " ", "1e400",
	    "\\ud800", "\"a\":1,", "null", "\x7f", "\xf4\x90" };
	size_t i, n, at;
	const char *f;

	if (b->n == 0) {
		b_c(b, '[');
		return;
	}
	at = rndn(b->n);
	switch (rndn(6)) {
	case 0:
		b->p[at] = (char)rndn(256);
		break;
	case 1:
		b->p[at] ^= (char)(1 << rndn(8));
		break;
	case 2:
		b->n = at;
		break;
	case 3:
		f = frag[rndn(sizeof frag / sizeof frag[0])];
		n = *f ? strlen(f) : 1;
		b_put(b, f, n);     /* room, then move it into place */
		memmove(b->p + at + n, b->p + at, b->n - n - at);
		memcpy(b->p + at, f, n);
		break;
	case 4:
		n = 1 + rndn(b->n - at < 4 ? b->n - at : 4);
		memmove(b->p + at, b->p + at + n, b->n - at - n);
		b->n -= n;
		break;
	default:
		n = 1 + rndn(b->n - at < 16 ? b->n - at : 16);
		i = rndn(b->n);
		{
			char tmp[16];
			memcpy(tmp, b->p + at, n);
			b_put(b, tmp, n);
			memmove(b->p + i + n, b->p + i, b->n - n - i);
			memcpy(b->p + i, tmp, n);
		}
		break;
	}
}

static void
random_cases(size_t docs)
{
	struct buf b = { 0 }, m = { 0 };
	unsigned long acc0 = st.accepted, cases0 = st.cases, valid = 0;
	size_t i, k, j;
	int ours;
	const char *why;

	for (i = 0; i < docs; i++) {
		g_doc(&b);
		why = jd_check(b.p, b.n, &st, &ours);
		CHECK(why == NULL, "random doc %zu: %s: %s", i, why, show(b.p, b.n));
		valid += (unsigned long)ours;
		for (k = 0; k < 8; k++) {
			m.n = 0;
			b_put(&m, b.p, b.n);
			for (j = 1 + rndn(3); j > 0; j--)
				mutate(&m);
			why = jd_check(m.p, m.n, &st, NULL);
			CHECK(why == NULL, "random doc %zu, mutation %zu: %s: %s", i, k,
			    why, show(m.p, m.n));
		}
	}
	free(b.p);
	free(m.p);
	PASS("random: %zu documents (%lu accepted) and %zu mutations of them: "
	    "%lu inputs, %lu accepted by both", docs, valid, docs * 8,
	    st.cases - cases0, st.accepted - acc0);
}

/* The reals again with a ',' radix character, when a locale has one. */
static void
locale_cases(void)
{
	static const char *names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
	    "fr_FR.utf8", "ru_RU.UTF-8", "nl_NL.UTF-8", "de_DE", "fr_FR" };
	const char *got = NULL;
	size_t i, n = 0;

	for (i = 0; i < sizeof names / sizeof names[0] && got == NULL; i++)
		if (setlocale(LC_NUMERIC, names[i]) != NULL &&
		    strcmp(localeconv()->decimal_point, ".") != 0)
			got = names[i];
	if (got == NULL) {
		setlocale(LC_NUMERIC, "C");
		PASS("locale: no locale with another radix character here "
		    "(tried de_DE, fr_FR, ru_RU, nl_NL): skipped; `localedef -i "
		    "de_DE -f UTF-8 DIR/de_DE.UTF-8` and LOCPATH=DIR give one");
		return;
	}
	for (i = 0; i < sizeof table / sizeof table[0]; i++) {
		if (memchr(table[i].text, '.', table[i].len) == NULL &&
		    memchr(table[i].text, 'e', table[i].len) == NULL)
			continue;
		check(table[i].text, table[i].len, table[i].accept, "table, locale");
		n++;
	}
	PASS("locale: %s, radix \"%s\": %zu table inputs, then the numbers again",
	    got, localeconv()->decimal_point, n);
	number_cases();
	setlocale(LC_NUMERIC, "C");
}

int
main(void)
{
	const char *s = getenv("TEST_JSONFAST_SEED"), *d = getenv("TEST_JSONFAST_DOCS");
	uint64_t seed;
	size_t docs = d != NULL && *d != '\0' ? (size_t)strtoull(d, NULL, 10) : 6000;

	tl_init();
	if (s != NULL && *s != '\0')
		seed = strtoull(s, NULL, 0);
	else {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec ^
		    (uint64_t)getpid() << 32;
	}
	tl_seed(seed);
	printf("# TEST_JSONFAST_SEED=%llu\n", (unsigned long long)seed);

	table_cases();
	depth_cases();
	long_string_cases();
	number_cases();
	random_cases(docs);
	locale_cases();
	printf("# %lu inputs compared with jansson: %lu accepted and %lu refused "
	    "by both, %lu with a NUL byte (refused; json_loadb accepted %lu of "
	    "them, by dropping the NUL), %lu reals compared bit for bit\n",
	    st.cases, st.accepted, st.refused, st.nul, st.nul_loadb, st.reals);
	PASS("test_jsonfast");
	return 0;
}
