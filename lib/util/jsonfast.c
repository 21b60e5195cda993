/*
 * jsonfast.c -- ri_json_parse: strict JSON (RFC 8259) into jansson values,
 * scanning the input buffer in place.
 *
 * Why it exists: ri-audit spent ~30% of its instructions in json_loads,
 * whose lexer reads each byte through a callback, keeps a copy of every
 * token in a growing buffer, and copies strings a second time to decode
 * them.  This parser walks the bytes with a pointer, skips ordinary string
 * bytes eight at a time, hands strings without escapes straight to
 * json_stringn_nocheck, and builds the values with jansson's constructors,
 * so the result is an ordinary json_t tree.
 *
 * It must accept exactly what json_loadb(text, len, JSON_REJECT_DUPLICATES)
 * accepts and build identical values (jsonfast.h lists the rules, and the
 * one deliberate difference, NUL bytes); tests/unit/test_jsonfast.c and
 * tests/fuzz/fuzz_jsonfast.c compare the two on every input they make.
 *
 * Nesting uses an explicit stack of open containers, at most
 * JSON_PARSER_MAX_DEPTH deep (jansson's limit), so hostile input cannot
 * exhaust the C stack.  Memory: the values themselves, that stack beyond
 * JF_SMALLSTACK levels, a scratch buffer for strings with escapes (at most
 * twice what one member's key and string value decode to) and a copy of a number that
 * needs strtod; each is bounded by the input's length.
 */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/jsonfast.h"

/* jansson_config.h gives the depth the library was built with */
#ifndef JSON_PARSER_MAX_DEPTH
#define JSON_PARSER_MAX_DEPTH 2048
#endif

#define JF_MAXDEPTH     JSON_PARSER_MAX_DEPTH
#define JF_SMALLSTACK   32              /* levels kept on the C stack */
#define JF_SCRATCH      256             /* decoded string bytes on the C stack */
#define JF_EXPCAP       100000000000000000LL  /* 1e17: beyond any double's */

#if defined(__GNUC__) || defined(__clang__)
#define JF_COLD __attribute__((noinline, cold))
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define JF_CTZ(m)       ((size_t)__builtin_ctzll(m) >> 3)
#endif
#else
#define JF_COLD
#endif

struct jf {
	const unsigned char *end;
	char *buf;                      /* decoded strings: sbuf or the heap */
	size_t cap;
	json_t **stack;                 /* open containers: sstack or the heap */
	size_t depth;
	json_t *sstack[JF_SMALLSTACK];
	char sbuf[JF_SCRATCH];
};

/*
 * String bytes that stand for themselves (RFC 8259 section 7, "unescaped"):
 * 0x20..0x7f but the quotation mark and the reverse solidus.  DEL is
 * allowed (jansson refuses only 0x00..0x1f); bytes >= 0x80 are checked as
 * UTF-8 by jf_utf8.
 */
#define R0 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define R1 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
static const unsigned char plain[256] = {
	R0, R0,
	1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,         /* 0x22 " */
	R1, R1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,         /* 0x5c \ */
	R1, R1,
	R0, R0, R0, R0, R0, R0, R0, R0,
};
#undef R0
#undef R1

#define ONES    0x0101010101010101ULL
#define HIGHS   0x8080808080808080ULL
/* a byte of x is zero: exact for the lowest such byte (the borrow may
 * mark bytes above it, so only the lowest mark is ever used) */
#define HASZERO(x)      (((x) - ONES) & ~(x) & HIGHS)

/* RFC 8259 section 2: insignificant whitespace is space, tab, LF, CR. */
static inline const unsigned char *
jf_ws(const unsigned char *p, const unsigned char *end)
{
	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

/* The first byte at or after p that is not plain (or end).  Eight bytes
 * at a time while eight remain: in a word with a quote, a backslash, a
 * control character or a byte >= 0x80 the lowest marked byte is the first
 * such one (little-endian: the lowest set bit), else it is found byte by
 * byte. */
static inline const unsigned char *
jf_plain(const unsigned char *p, const unsigned char *end)
{
	uint64_t x, m;

	while (end - p >= 8) {
		memcpy(&x, p, sizeof x);
		m = HASZERO(x ^ (ONES * '"')) | HASZERO(x ^ (ONES * '\\')) |
		    ((x - ONES * 0x20) & ~x & HIGHS) | (x & HIGHS);
		if (m != 0) {
#ifdef JF_CTZ
			return p + JF_CTZ(m);
#else
			break;
#endif
		}
		p += 8;
	}
	while (p < end && plain[*p])
		p++;
	return p;
}

/*
 * One UTF-8 sequence at p, p[0] >= 0x80: the byte after it, or NULL.  The
 * well-formed sequences of RFC 3629 section 4, which is jansson's rule: no
 * continuation byte first, no overlong form (C0, C1, E0 80..9F, F0
 * 80..8F), no UTF-16 surrogate (ED A0..BF), nothing above U+10FFFF (F4
 * 90..BF, F5..FF), and no sequence cut short by the end of the input.
 */
static const unsigned char *
jf_utf8(const unsigned char *p, const unsigned char *end)
{
	unsigned int c = p[0], lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (c < 0xc2)
		return NULL;
	if (c < 0xe0)
		n = 1;
	else if (c < 0xf0) {
		n = 2;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c < 0xf5) {
		n = 3;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return NULL;
	if ((size_t)(end - p) <= n || p[1] < lo || p[1] > hi)
		return NULL;
	for (i = 2; i <= n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return NULL;
	return p + n + 1;
}

/* The longest run from p of string bytes that need no decoding (plain
 * bytes and well-formed UTF-8); it stops at a quote, a backslash, a
 * control character, a bad UTF-8 byte or the end. */
static inline const unsigned char *
jf_span(const unsigned char *p, const unsigned char *end)
{
	const unsigned char *q;

	for (;;) {
		p = jf_plain(p, end);
		if (p == end || *p < 0x80 || (q = jf_utf8(p, end)) == NULL)
			return p;
		p = q;
	}
}

/* Room for more bytes after used in the scratch buffer. */
static int
jf_reserve(struct jf *jf, size_t used, size_t more)
{
	size_t cap = jf->cap;
	char *nb;

	if (more <= cap - used)
		return 0;
	if (more > SIZE_MAX / 4 - used)
		return -1;
	while (cap - used < more)
		cap *= 2;
	if (jf->buf == jf->sbuf) {
		if ((nb = malloc(cap)) != NULL)
			memcpy(nb, jf->buf, used);
	} else
		nb = realloc(jf->buf, cap);
	if (nb == NULL)
		return -1;
	jf->buf = nb;
	jf->cap = cap;
	return 0;
}

/* Four hex digits (RFC 8259 section 7: HEXDIG, either case), or -1. */
static long
jf_hex4(const unsigned char *p)
{
	long v = 0;
	unsigned int c;
	int i;

	for (i = 0; i < 4; i++) {
		c = p[i];
		if (c - '0' < 10u)
			v = v << 4 | (long)(c - '0');
		else if ((c | 0x20) - 'a' < 6u)
			v = v << 4 | (long)((c | 0x20) - 'a' + 10);
		else
			return -1;
	}
	return v;
}

/* Code point u (not a surrogate, <= 0x10ffff) as UTF-8; its length. */
static size_t
jf_put_utf8(char *out, long u)
{
	if (u < 0x80) {
		out[0] = (char)u;
		return 1;
	}
	if (u < 0x800) {
		out[0] = (char)(0xc0 | u >> 6);
		out[1] = (char)(0x80 | (u & 0x3f));
		return 2;
	}
	if (u < 0x10000) {
		out[0] = (char)(0xe0 | u >> 12);
		out[1] = (char)(0x80 | (u >> 6 & 0x3f));
		out[2] = (char)(0x80 | (u & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | u >> 18);
	out[1] = (char)(0x80 | (u >> 12 & 0x3f));
	out[2] = (char)(0x80 | (u >> 6 & 0x3f));
	out[3] = (char)(0x80 | (u & 0x3f));
	return 4;
}

/*
 * The escape after a backslash, at p (RFC 8259 section 7): its UTF-8 into
 * out (at most 4 bytes), its length into *k; the byte after it, or NULL.
 * Refused as jansson refuses them: any other escape letter, fewer than
 * four hex digits, a high surrogate not followed by a \u low surrogate, a
 * low surrogate alone, and \u0000 (no JSON_ALLOW_NUL: jansson refuses a
 * NUL in a value and in a key alike).
 */
static const unsigned char *
jf_escape(const unsigned char *p, const unsigned char *end, char *out,
    size_t *k)
{
	long u, lo;

	if (p == end)
		return NULL;
	*k = 1;
	switch (*p) {
	case '"':
	case '\\':
	case '/':
		out[0] = (char)*p;
		return p + 1;
	case 'b':
		out[0] = '\b';
		return p + 1;
	case 'f':
		out[0] = '\f';
		return p + 1;
	case 'n':
		out[0] = '\n';
		return p + 1;
	case 'r':
		out[0] = '\r';
		return p + 1;
	case 't':
		out[0] = '\t';
		return p + 1;
	case 'u':
		break;
	default:
		return NULL;
	}
	if (end - p < 5 || (u = jf_hex4(p + 1)) < 0)
		return NULL;
	p += 5;
	if (u >= 0xd800 && u <= 0xdbff) {
		/* a UTF-16 surrogate pair: "\uD834\uDD1E" is U+1D11E */
		if (end - p < 6 || p[0] != '\\' || p[1] != 'u' ||
		    (lo = jf_hex4(p + 2)) < 0xdc00 || lo > 0xdfff)
			return NULL;
		p += 6;
		u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
	} else if ((u >= 0xdc00 && u <= 0xdfff) || u == 0)
		return NULL;
	*k = jf_put_utf8(out, u);
	return p;
}

/*
 * The rest of a string with an escape at q (p: its first byte after the
 * quote), decoded into the scratch buffer at offset base; as jf_string.
 * Kept out of line so the common string, without escapes, costs little.
 */
static JF_COLD const unsigned char *
jf_unescape(struct jf *jf, const unsigned char *p, const unsigned char *q,
    size_t base, const char **sp, size_t *np)
{
	const unsigned char *end = jf->end, *run;
	size_t o, n, k;

	for (o = base, run = p;;) {
		n = (size_t)(q - run);
		/* the run, and the at most 4 bytes an escape decodes to */
		if (jf_reserve(jf, o, n + 4) != 0)
			return NULL;
		if (n > 0)
			memcpy(jf->buf + o, run, n);
		o += n;
		if (q == end || *q != '\\')
			break;
		if ((q = jf_escape(q + 1, end, jf->buf + o, &k)) == NULL)
			return NULL;
		o += k;
		run = q;
		q = jf_span(q, end);
	}
	/* the end of the input, a control character or bad UTF-8 */
	if (q == end || *q != '"')
		return NULL;
	*sp = jf->buf + base;
	*np = o - base;
	return q + 1;
}

/*
 * A string whose opening quote is just before p.  The byte after its
 * closing quote, or NULL.  *sp, *np: its bytes -- inside the input when it
 * has no escape, else decoded into the scratch buffer at offset base
 * (*decoded = 1; that pointer is good until the buffer next grows).
 */
static inline const unsigned char *
jf_string(struct jf *jf, const unsigned char *p, size_t base,
    const char **sp, size_t *np, int *decoded)
{
	const unsigned char *q = jf_span(p, jf->end);

	if (q < jf->end && *q == '"') {
		*sp = (const char *)p;
		*np = (size_t)(q - p);
		*decoded = 0;
		return q + 1;
	}
	if (q == jf->end || *q != '\\')
		return NULL;    /* a control character, bad UTF-8, the end */
	*decoded = 1;
	return jf_unescape(jf, p, q, base, sp, np);
}

/* Decimal digits of v at q; the byte after them. */
static char *
jf_put_ll(char *q, long long v)
{
	char d[24];
	unsigned long long u;
	size_t n = 0;

	if (v < 0) {
		*q++ = '-';
		u = 0ULL - (unsigned long long)v;
	} else
		u = (unsigned long long)v;
	do {
		d[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	while (n > 0)
		*q++ = d[--n];
	return q;
}

/*
 * strtod of the number digits (nint of them at ip, then nfrac at fp) x
 * 10^scale, with jansson's rule: an overflow (HUGE_VAL and ERANGE) is
 * refused, an underflow is not.  The text strtod sees is written without
 * a decimal point ("1.5e3" becomes "15e2", the same value, so the same
 * correctly rounded double), so the locale's radix character never
 * matters; jansson gets the same by swapping '.' for it.
 */
static int
jf_strtod(const unsigned char *ip, size_t nint, const unsigned char *fp,
    size_t nfrac, int neg, long long scale, double *out)
{
	char sbuf[128], *heap = NULL, *buf = sbuf, *q, *endp;
	size_t need = nint + nfrac + 32;
	int rc = -1, saved = errno;
	double d;

	if (need > sizeof sbuf) {
		if ((heap = malloc(need)) == NULL)
			return -1;
		buf = heap;
	}
	buf[0] = '-';
	q = buf + (neg ? 1 : 0);
	memcpy(q, ip, nint);
	q += nint;
	if (nfrac > 0) {
		memcpy(q, fp, nfrac);
		q += nfrac;
	}
	*q++ = 'e';
	q = jf_put_ll(q, scale);
	*q = '\0';
	errno = 0;
	d = strtod(buf, &endp);
	if (endp == q && !((d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE)) {
		*out = d;
		rc = 0;
	}
	errno = saved;
	free(heap);
	return rc;
}

/* 10^0..10^22, each exact in a double */
static const double p10[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/*
 * A real: digits at ip (nint) and fp (nfrac), exponent e.  When the
 * significant digits fit 2^53 and |scale| <= 22 both the digits and the
 * power of ten are exact doubles, so one IEEE multiplication or division
 * rounds once, correctly, to what strtod returns (Clinger's fast path);
 * otherwise strtod itself.  Zero digits give a signed zero, as strtod
 * does for any exponent.
 */
static json_t *
jf_real(const unsigned char *ip, size_t nint, const unsigned char *fp,
    size_t nfrac, int neg, long long e)
{
	long long scale = e - (long long)nfrac;
	uint64_t m = 0;
	size_t i, sig = 0;
	unsigned int dg;
	double d;

	for (i = 0; i < nint + nfrac; i++) {
		dg = (unsigned int)(i < nint ? ip[i] : fp[i - nint]) - '0';
		if (m == 0 && dg == 0)
			continue;       /* leading zeros: not significant */
		if (sig++ == 19)
			break;          /* a 20th: m stays as it was, nonzero */
		m = m * 10 + dg;
	}
	if (m == 0)
		return json_real(neg ? -0.0 : 0.0);
#if FLT_EVAL_METHOD == 0
	if (sig <= 19 && m <= (1ULL << 53) && scale >= -22 && scale <= 22) {
		d = (double)m;
		d = scale >= 0 ? d * p10[scale] : d / p10[-scale];
		return json_real(neg ? -d : d);
	}
#endif
	if (jf_strtod(ip, nint, fp, nfrac, neg, scale, &d) != 0)
		return NULL;
	return json_real(d);
}

/*
 * A number at *pp (RFC 8259 section 6):
 *   [ minus ] int [ frac ] [ exp ], int = zero / ( digit1-9 *DIGIT )
 * No fraction and no exponent: an integer, refused unless it fits
 * json_int_t (jansson: "too big integer"); else a real.  "-0" is the
 * integer 0, as strtoll makes it.
 */
static json_t *
jf_number(const unsigned char **pp, const unsigned char *end)
{
	const unsigned char *p = *pp, *ip, *fp = NULL;
	size_t nint, nfrac = 0;
	uint64_t m = 0;
	long long e = 0;
	int neg = 0, eneg = 0;

	if (*p == '-') {
		neg = 1;
		p++;
	}
	ip = p;
	if (p == end)
		return NULL;
	if (*p == '0')
		p++;            /* int = zero: no leading zeros */
	else if (*p >= '1' && *p <= '9') {
		do {
			if (p - ip < 19)
				m = m * 10 + (uint64_t)(*p - '0');
			p++;
		} while (p < end && *p >= '0' && *p <= '9');
	} else
		return NULL;    /* "-" alone, "-.5", "-x" */
	nint = (size_t)(p - ip);
	if (p < end && *p >= '0' && *p <= '9')
		return NULL;    /* "01" */
	if (p == end || (*p != '.' && *p != 'e' && *p != 'E')) {
		*pp = p;
		/* 19 digits at most fit a uint64_t; 2^63 - 1 has 19 */
		if (nint > 19)
			return NULL;
		if (neg) {
			if (m > (uint64_t)LLONG_MAX + 1)
				return NULL;
			return json_integer(m == (uint64_t)LLONG_MAX + 1 ?
			    LLONG_MIN : -(json_int_t)m);
		}
		if (m > (uint64_t)LLONG_MAX)
			return NULL;
		return json_integer((json_int_t)m);
	}
	if (*p == '.') {
		/* frac = decimal-point 1*DIGIT */
		fp = ++p;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
		if ((nfrac = (size_t)(p - fp)) == 0)
			return NULL;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		/* exp = e [ minus / plus ] 1*DIGIT */
		p++;
		if (p < end && (*p == '-' || *p == '+'))
			eneg = *p++ == '-';
		if (p == end || *p < '0' || *p > '9')
			return NULL;
		do {
			if (e < JF_EXPCAP)
				e = e * 10 + (*p - '0');
			p++;
		} while (p < end && *p >= '0' && *p <= '9');
		if (eneg)
			e = -e;
	}
	*pp = p;
	return jf_real(ip, nint, fp, nfrac, neg, e);
}

/* The literal word (RFC 8259 section 3) at *pp, or NULL. */
static int
jf_word(const unsigned char **pp, const unsigned char *end, const char *w,
    size_t n)
{
	if ((size_t)(end - *pp) < n || memcmp(*pp, w, n) != 0)
		return 0;
	*pp += n;
	return 1;
}

/* A value that is not an object or an array, at *pp; decoded string
 * bytes go to the scratch buffer at base. */
static json_t *
jf_scalar(struct jf *jf, const unsigned char **pp, size_t base)
{
	const unsigned char *p = *pp;
	const char *s;
	size_t n;
	int decoded;

	switch (*p) {
	case '"':
		if ((p = jf_string(jf, p + 1, base, &s, &n, &decoded)) == NULL)
			return NULL;
		*pp = p;
		/* checked: UTF-8, no NUL */
		return json_stringn_nocheck(s, n);
	case 't':
		return jf_word(pp, jf->end, "true", 4) ? json_true() : NULL;
	case 'f':
		return jf_word(pp, jf->end, "false", 5) ? json_false() : NULL;
	case 'n':
		return jf_word(pp, jf->end, "null", 4) ? json_null() : NULL;
	default:
		if (*p == '-' || (*p >= '0' && *p <= '9'))
			return jf_number(pp, jf->end);
		return NULL;
	}
}

/*
 * v into the container top: appended to an array, or set under key k in
 * an object.  v is consumed either way.  A key already there is a
 * duplicate (the setter replaced it, the object did not grow): refused,
 * as JSON_REJECT_DUPLICATES refuses it (RFC 8259 section 4 says names
 * SHOULD be unique; jansson compares the decoded bytes).
 */
static int
jf_put(json_t *top, int isobj, const char *k, size_t kn, json_t *v)
{
	size_t n;

	if (!isobj)
		return json_array_append_new(top, v);
	n = json_object_size(top);
	if (json_object_setn_new_nocheck(top, k, kn, v) != 0)
		return -1;
	return json_object_size(top) == n + 1 ? 0 : -1;
}

/* Open container v: onto the stack, moved to the heap past its small part. */
static int
jf_push(struct jf *jf, json_t *v)
{
	json_t **s;

	if (jf->depth == JF_SMALLSTACK && jf->stack == jf->sstack) {
		if ((s = malloc(JF_MAXDEPTH * sizeof *s)) == NULL)
			return -1;
		memcpy(s, jf->sstack, sizeof jf->sstack);
		jf->stack = s;
	}
	jf->stack[jf->depth++] = v;
	return 0;
}

json_t *
ri_json_parse(const char *text, size_t len)
{
	struct jf jf;
	const unsigned char *p, *end;
	json_t *root, *top, *v;
	const char *k = NULL;
	size_t kn = 0;
	int first, isobj, kdec = 0;

	if (text == NULL)
		return NULL;
	p = (const unsigned char *)text;
	end = p + len;
	jf.end = end;
	jf.buf = jf.sbuf;
	jf.cap = sizeof jf.sbuf;
	jf.stack = jf.sstack;
	jf.depth = 0;

	/* RFC 8259 section 2 allows any value here; jansson without
	 * JSON_DECODE_ANY only an object or an array */
	p = jf_ws(p, end);
	if (p == end || (*p != '{' && *p != '['))
		return NULL;
	if ((root = *p == '{' ? json_object() : json_array()) == NULL)
		return NULL;
	p++;
	jf.stack[jf.depth++] = root;

	for (first = 1;;) {
		top = jf.stack[jf.depth - 1];
		isobj = json_is_object(top);
		if ((p = jf_ws(p, end)) == end)
			goto fail;
		/* RFC 8259 sections 4 and 5: a closing bracket, or (after
		 * the first) a comma and the next member or element */
		if (*p == (isobj ? '}' : ']')) {
			p++;
			if (--jf.depth == 0)
				break;
			first = 0;
			continue;
		}
		if (!first) {
			if (*p != ',')
				goto fail;
			if ((p = jf_ws(p + 1, end)) == end)
				goto fail;
		}
		first = 0;
		if (isobj) {
			/* member = string name-separator value */
			if (*p != '"' ||
			    (p = jf_string(&jf, p + 1, 0, &k, &kn, &kdec)) == NULL)
				goto fail;
			if ((p = jf_ws(p, end)) == end || *p != ':')
				goto fail;
			if ((p = jf_ws(p + 1, end)) == end)
				goto fail;
		}
		/* jansson counts every value, a scalar too, as a level */
		if (jf.depth >= JF_MAXDEPTH)
			goto fail;
		if (*p == '{' || *p == '[') {
			/* attached now, filled as the text goes on */
			v = *p++ == '{' ? json_object() : json_array();
			if (v == NULL || jf_put(top, isobj, k, kn, v) != 0 ||
			    jf_push(&jf, v) != 0)
				goto fail;
			first = 1;
			continue;
		}
		/* a decoded key sits at the scratch buffer's start: a
		 * decoded string value goes after it */
		if ((v = jf_scalar(&jf, &p, isobj && kdec ? kn : 0)) == NULL)
			goto fail;
		if (isobj && kdec)
			k = jf.buf;
		if (jf_put(top, isobj, k, kn, v) != 0)
			goto fail;
	}
	/* RFC 8259 section 2: whitespace after the value, then nothing */
	if (jf_ws(p, end) != end)
		goto fail;
	if (jf.buf != jf.sbuf)
		free(jf.buf);
	if (jf.stack != jf.sstack)
		free(jf.stack);
	return root;

fail:
	if (jf.buf != jf.sbuf)
		free(jf.buf);
	if (jf.stack != jf.sstack)
		free(jf.stack);
	json_decref(root);
	return NULL;
}
