/*
 * sha256.c -- SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104).
 *
 * Why ri has its own: on x86 CPUs with the SHA extensions (SHA-NI) the
 * compression function here measured 4.6x faster than libsodium's
 * SHA-256, which is portable C only (2,700 to 3,500 instructions a block,
 * by build, against about 200 here), and ri-audit spent a third of its
 * time in libsodium's.  Elsewhere -- no SHA-NI, or RI_SHA256_PORTABLE set
 * (to anything but "" or "0") -- these functions forward to libsodium's
 * crypto_hash_sha256: ri's own portable C compression measured the same
 * speed as libsodium's, so it was a second copy to keep right, and issue
 * 42 removed it.  The HMAC below is one construction over whichever
 * SHA-256 is in use, its output crypto_auth_hmacsha256's.  Both paths give
 * libsodium's exact output (tests/unit/test_sha256.c checks every length
 * 0..1100 on each, and states begun on one path finished on the other).
 *
 * The choice is made once, at the first use: CPUID leaf 7 EBX bit 29
 * (SHA) and leaf 1 ECX bits 9 (SSSE3) and 19 (SSE4.1), unless
 * RI_SHA256_PORTABLE is set.  Only the SHA-NI function is compiled for
 * those extensions (a target attribute), so the rest of the build stays
 * plain -std=c11 for any x86-64.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "util/sha256.h"

#if (defined(__x86_64__) || defined(__i386__)) && \
    (defined(__GNUC__) || defined(__clang__))
#define RI_SHA_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define RI_SHA_X86 0
#endif

/* FIPS 180-4 section 5.3.3: H(0), the square roots of the first 8 primes. */
static const uint32_t H0[8] = {
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

#if RI_SHA_X86
/* FIPS 180-4 section 4.2.2: the first 32 bits of the fractional parts of
 * the cube roots of the first 64 primes.  Aligned for the SHA-NI path,
 * which adds four at a time to the message words. */
static const _Alignas(16) uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5,
	0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
	0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
	0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
	0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/*
 * Four rounds with the SHA extensions.  sha256rnds2 does two rounds: its
 * state is split as {A,B,E,F} and {C,D,G,H} (high lane to low), and it
 * takes W[t] + K[t] for its two rounds in the low 64 bits of wk.  It
 * writes the new {A,B,E,F}; the old {A,B,E,F} is the new {C,D,G,H}, so
 * the second call swaps the operands and the names are right again.
 */
#define SHANI_ROUNDS(abef, cdgh, m, t) do {                             \
	__m128i wk_ = _mm_add_epi32((m),                                \
	    _mm_load_si128((const __m128i *)(const void *)&K[t]));      \
	(cdgh) = _mm_sha256rnds2_epu32((cdgh), (abef), wk_);            \
	wk_ = _mm_shuffle_epi32(wk_, 0x0e);                             \
	(abef) = _mm_sha256rnds2_epu32((abef), (cdgh), wk_);            \
} while (0)

/*
 * The next four schedule words (FIPS 180-4 section 6.2.2 step 1) into
 * m0, from m0..m3 = W[t-16..t-13], W[t-12..t-9], W[t-8..t-5], W[t-4..t-1]:
 * sha256msg1 adds sigma0 of W[t-15..t-12] to W[t-16..t-13], the add
 * brings in W[t-7..t-4], and sha256msg2 adds sigma1 of W[t-2..t+1],
 * computing W[t] and W[t+1] first for the last two.
 */
#define SHANI_SCHEDULE(m0, m1, m2, m3)                                  \
	((m0) = _mm_sha256msg2_epu32(_mm_add_epi32(                     \
	    _mm_sha256msg1_epu32((m0), (m1)),                           \
	    _mm_alignr_epi8((m3), (m2), 4)), (m3)))

__attribute__((target("sha,sse4.1")))
static void
compress_shani(uint32_t st[8], const unsigned char *p, size_t n)
{
	/* byte order within each 32-bit lane reversed: big-endian words */
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL,
	    0x0405060700010203LL);
	__m128i abef, cdgh, abef0, cdgh0, m0, m1, m2, m3, t;
	int i;

	/* st[0..7] = A..H to {A,B,E,F} and {C,D,G,H}; lanes high to low */
	t = _mm_loadu_si128((const __m128i *)(const void *)&st[0]);
	cdgh = _mm_loadu_si128((const __m128i *)(const void *)&st[4]);
	t = _mm_shuffle_epi32(t, 0xb1);                 /* C D A B */
	cdgh = _mm_shuffle_epi32(cdgh, 0x1b);           /* E F G H */
	abef = _mm_alignr_epi8(t, cdgh, 8);             /* A B E F */
	cdgh = _mm_blend_epi16(cdgh, t, 0xf0);          /* C D G H */

	for (; n > 0; n--, p += RI_SHA256_BLOCK) {
		abef0 = abef;
		cdgh0 = cdgh;
		m0 = _mm_shuffle_epi8(_mm_loadu_si128(
		    (const __m128i *)(const void *)(p + 0)), bswap);
		m1 = _mm_shuffle_epi8(_mm_loadu_si128(
		    (const __m128i *)(const void *)(p + 16)), bswap);
		m2 = _mm_shuffle_epi8(_mm_loadu_si128(
		    (const __m128i *)(const void *)(p + 32)), bswap);
		m3 = _mm_shuffle_epi8(_mm_loadu_si128(
		    (const __m128i *)(const void *)(p + 48)), bswap);
		SHANI_ROUNDS(abef, cdgh, m0, 0);
		SHANI_ROUNDS(abef, cdgh, m1, 4);
		SHANI_ROUNDS(abef, cdgh, m2, 8);
		SHANI_ROUNDS(abef, cdgh, m3, 12);
		for (i = 16; i < 64; i += 16) {
			SHANI_SCHEDULE(m0, m1, m2, m3);
			SHANI_ROUNDS(abef, cdgh, m0, i);
			SHANI_SCHEDULE(m1, m2, m3, m0);
			SHANI_ROUNDS(abef, cdgh, m1, i + 4);
			SHANI_SCHEDULE(m2, m3, m0, m1);
			SHANI_ROUNDS(abef, cdgh, m2, i + 8);
			SHANI_SCHEDULE(m3, m0, m1, m2);
			SHANI_ROUNDS(abef, cdgh, m3, i + 12);
		}
		/* FIPS 180-4 section 6.2.2 step 4: H(i) */
		abef = _mm_add_epi32(abef, abef0);
		cdgh = _mm_add_epi32(cdgh, cdgh0);
	}

	/* and back to A..H */
	t = _mm_shuffle_epi32(abef, 0x1b);              /* F E B A */
	cdgh = _mm_shuffle_epi32(cdgh, 0xb1);           /* D C H G */
	abef = _mm_blend_epi16(t, cdgh, 0xf0);          /* D C B A */
	cdgh = _mm_alignr_epi8(cdgh, t, 8);             /* H G F E */
	_mm_storeu_si128((__m128i *)(void *)&st[0], abef);
	_mm_storeu_si128((__m128i *)(void *)&st[4], cdgh);
}

#undef SHANI_ROUNDS
#undef SHANI_SCHEDULE

/* Words are big-endian (FIPS 180-4 section 3.1), whatever the host. */
static inline void
store_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/*
 * A piece of n bytes that reaches the end of the buffered block (smaller
 * ones ri_sha256_update only copies): the buffer is completed and
 * compressed, then every whole block of the piece is compressed in place,
 * in one call, and the rest is buffered.
 */
static void
shani_update(ri_sha256_state *st, const unsigned char *in, size_t n)
{
	size_t k;

	st->n += n;
	if (st->used > 0) {
		k = RI_SHA256_BLOCK - st->used;
		memcpy(st->buf + st->used, in, k);
		compress_shani(st->h, st->buf, 1);
		st->used = 0;
		in += k;
		n -= k;
	}
	if (n >= RI_SHA256_BLOCK) {
		k = n / RI_SHA256_BLOCK;
		compress_shani(st->h, in, k);
		in += k * RI_SHA256_BLOCK;
		n -= k * RI_SHA256_BLOCK;
	}
	if (n > 0) {
		memcpy(st->buf, in, n);
		st->used = n;
	}
}

static void
shani_final(ri_sha256_state *st, unsigned char out[RI_SHA256_BYTES])
{
	uint64_t bits = st->n << 3;     /* the length mod 2^64, in bits */
	int i;

	/* FIPS 180-4 section 5.1.1: a 1 bit, zeros to 448 mod 512, and the
	 * length as a 64-bit big-endian integer; a second block when the
	 * length does not fit after the 1 bit */
	st->buf[st->used++] = 0x80;
	if (st->used > RI_SHA256_BLOCK - 8) {
		memset(st->buf + st->used, 0, RI_SHA256_BLOCK - st->used);
		compress_shani(st->h, st->buf, 1);
		st->used = 0;
	}
	memset(st->buf + st->used, 0, RI_SHA256_BLOCK - 8 - st->used);
	for (i = 0; i < 8; i++)
		st->buf[RI_SHA256_BLOCK - 1 - i] =
		    (unsigned char)(bits >> (8 * i));
	compress_shani(st->h, st->buf, 1);
	/* section 6.2.2: the digest is H(N) in big-endian words */
	for (i = 0; i < 8; i++)
		store_be32(out + 4 * i, st->h[i]);
	sodium_memzero(st, sizeof *st);
}

#if defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#define RI_GLIBC_CPU_FEATURES 1
#endif
#endif

/* SHA, SSSE3 and SSE4.1 (pshufb, palignr, pblendw).  glibc (2.33 and
 * later) has already asked CPUID at start-up and answers from its copy:
 * under a hypervisor every CPUID instruction traps, ~5.6 us each on the
 * machine issue 15 measured, three of them a process. */
static int
cpu_has_shani(void)
{
#ifdef RI_GLIBC_CPU_FEATURES
	return CPU_FEATURE_ACTIVE(SHA) && CPU_FEATURE_ACTIVE(SSSE3) && CPU_FEATURE_ACTIVE(SSE4_1);
#else
	unsigned int a, b, c, d;

	if (__get_cpuid_max(0, NULL) < 7)
		return 0;
	__cpuid(1, a, b, c, d);
	if ((c & (1u << 9)) == 0 || (c & (1u << 19)) == 0)
		return 0;
	/* CPUID leaf 7 (subleaf 0) EBX bit 29: SHA; leaf 1 ECX bit 9: SSSE3
	 * and bit 19: SSE4.1 */
	__cpuid_count(7, 0, a, b, c, d);
	return (b & (1u << 29)) != 0;
#endif
}
#else
static int
cpu_has_shani(void)
{
	return 0;
}
#endif

enum { PATH_UNKNOWN, PATH_SODIUM, PATH_SHANI };

/* The path chosen at the first use; an atomic so threads that race to
 * choose it agree without a data race (they choose alike). */
static atomic_int sha_path;

static int
choose_path(void)
{
	const char *e = getenv("RI_SHA256_PORTABLE");

	if (e != NULL && *e != '\0' && strcmp(e, "0") != 0)
		return PATH_SODIUM;
	return cpu_has_shani() ? PATH_SHANI : PATH_SODIUM;
}

static int
current_path(void)
{
	int p = atomic_load_explicit(&sha_path, memory_order_relaxed);

	if (p == PATH_UNKNOWN) {
		p = choose_path();
		atomic_store_explicit(&sha_path, p, memory_order_relaxed);
	}
	return p;
}

int
ri_sha256_accelerated(void)
{
	return current_path() == PATH_SHANI;
}

void
ri_sha256_force_portable(int on)
{
	atomic_store_explicit(&sha_path,
	    on || !cpu_has_shani() ? PATH_SODIUM : PATH_SHANI,
	    memory_order_relaxed);
}

/*
 * libsodium's crypto_hash_sha256_state (declared whole in its header)
 * holds what ri's does: H(i), the length (in bits there, in bytes here)
 * and the bytes of the unfinished block.  So a state is carried over
 * and back whole, and one begun on either path can be finished on the
 * other: the path changes under a test's ri_sha256_force_portable, and
 * the instance key's HMAC states (integrity.c) live as long as the
 * instance.  The length's top 3 bits are lost on the way; SHA-256 keeps
 * the length mod 2^64 bits, which are the same.
 */
_Static_assert(sizeof ((crypto_hash_sha256_state *)0)->state == sizeof ((ri_sha256_state *)0)->h,
    "libsodium's SHA-256 state holds H(i) as ri's does");
_Static_assert(sizeof ((crypto_hash_sha256_state *)0)->buf >= RI_SHA256_BLOCK,
    "libsodium's SHA-256 state holds an unfinished block");

static void
to_sodium(crypto_hash_sha256_state *s, const ri_sha256_state *st)
{
	memcpy(s->state, st->h, sizeof s->state);
	s->count = st->n << 3;
	memcpy(s->buf, st->buf, st->used);
}

/* s is wiped: it held message bytes, or a key's padded state */
static void
from_sodium(ri_sha256_state *st, crypto_hash_sha256_state *s)
{
	memcpy(st->h, s->state, sizeof st->h);
	st->n = s->count >> 3;
	st->used = (size_t)(st->n % RI_SHA256_BLOCK);
	memcpy(st->buf, s->buf, st->used);
	sodium_memzero(s, sizeof *s);
}

static void
sodium_update(ri_sha256_state *st, const unsigned char *in, size_t n)
{
	crypto_hash_sha256_state s;

	to_sodium(&s, st);
	crypto_hash_sha256_update(&s, in, n);
	from_sodium(st, &s);
}

static void
sodium_final(ri_sha256_state *st, unsigned char out[RI_SHA256_BYTES])
{
	crypto_hash_sha256_state s;

	to_sodium(&s, st);
	crypto_hash_sha256_final(&s, out);
	sodium_memzero(&s, sizeof s);
	sodium_memzero(st, sizeof *st);
}

/* H(0) and no bytes: crypto_hash_sha256_init's state too */
void
ri_sha256_init(ri_sha256_state *st)
{
	memcpy(st->h, H0, sizeof st->h);
	st->n = 0;
	st->used = 0;
}

void
ri_sha256_update(ri_sha256_state *st, const void *p, size_t n)
{
	const unsigned char *in = p;

	if (n == 0)
		return;
	/* A piece that leaves the block unfinished is only copied, on either
	 * path: ri feeds many 1- to 32-byte fields, and carrying libsodium's
	 * state over and back for each would cost more than the copy. */
	if (n < RI_SHA256_BLOCK - st->used) {
		memcpy(st->buf + st->used, in, n);
		st->used += n;
		st->n += n;
		return;
	}
#if RI_SHA_X86
	if (current_path() == PATH_SHANI) {
		shani_update(st, in, n);
		return;
	}
#endif
	sodium_update(st, in, n);
}

void
ri_sha256_final(ri_sha256_state *st, unsigned char out[RI_SHA256_BYTES])
{
#if RI_SHA_X86
	if (current_path() == PATH_SHANI) {
		shani_final(st, out);
		return;
	}
#endif
	sodium_final(st, out);
}

void
ri_sha256(const void *p, size_t n, unsigned char out[RI_SHA256_BYTES])
{
#if RI_SHA_X86
	if (current_path() == PATH_SHANI) {
		ri_sha256_state st;

		ri_sha256_init(&st);
		ri_sha256_update(&st, p, n);
		ri_sha256_final(&st, out);
		return;
	}
#endif
	/* no state to carry over: libsodium's own one-shot */
	crypto_hash_sha256(out, p, n);
}

/*
 * RFC 2104 section 2: the key, hashed first when longer than a block
 * (section 3), zero-padded to a block; inner absorbs K ^ ipad (0x36
 * bytes), outer K ^ opad (0x5c bytes).  Both states are then one block
 * in, so each message's MAC starts from copies of them.
 */
static void
hmac_pads(ri_sha256_state *inner, ri_sha256_state *outer,
    const unsigned char *key, size_t keylen)
{
	unsigned char k[RI_SHA256_BLOCK], pad[RI_SHA256_BLOCK];
	size_t i;

	memset(k, 0, sizeof k);
	if (keylen > RI_SHA256_BLOCK)
		ri_sha256(key, keylen, k);
	else if (keylen > 0)
		memcpy(k, key, keylen);
	for (i = 0; i < sizeof pad; i++)
		pad[i] = k[i] ^ 0x36;
	ri_sha256_init(inner);
	ri_sha256_update(inner, pad, sizeof pad);
	for (i = 0; i < sizeof pad; i++)
		pad[i] = k[i] ^ 0x5c;
	ri_sha256_init(outer);
	ri_sha256_update(outer, pad, sizeof pad);
	sodium_memzero(k, sizeof k);
	sodium_memzero(pad, sizeof pad);
}

void
ri_hmac_key_init(ri_hmac_key *k, const unsigned char *key, size_t keylen)
{
	hmac_pads(&k->inner, &k->outer, key, keylen);
}

void
ri_hmac_key_wipe(ri_hmac_key *k)
{
	sodium_memzero(k, sizeof *k);
}

void
ri_hmac_init(ri_hmac_state *st, const ri_hmac_key *k)
{
	st->inner = k->inner;
	st->outer = k->outer;
}

void
ri_hmac_init_raw(ri_hmac_state *st, const unsigned char *key, size_t keylen)
{
	hmac_pads(&st->inner, &st->outer, key, keylen);
}

void
ri_hmac_update(ri_hmac_state *st, const void *p, size_t n)
{
	ri_sha256_update(&st->inner, p, n);
}

/* RFC 2104 section 2: H(K ^ opad, H(K ^ ipad, text)).  Both finals wipe
 * their states, so the whole hmac state is wiped. */
void
ri_hmac_final(ri_hmac_state *st, unsigned char out[RI_SHA256_BYTES])
{
	unsigned char ih[RI_SHA256_BYTES];

	ri_sha256_final(&st->inner, ih);
	ri_sha256_update(&st->outer, ih, sizeof ih);
	ri_sha256_final(&st->outer, out);
	sodium_memzero(ih, sizeof ih);
}
