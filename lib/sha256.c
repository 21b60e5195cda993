/*
 * sha256.c -- SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104).
 *
 * Why ri has its own: libsodium's SHA-256 is portable C (2,700 to 3,500
 * instructions a block, by build) and ri-audit spends a third of its time
 * there.  On x86 CPUs with the SHA extensions (SHA-NI) a block is about
 * 200 instructions; elsewhere a plain C compression function written from
 * FIPS 180-4 section 6.2.2 is used.  Both give libsodium's exact output
 * (tests/unit/test_sha256.c checks every length 0..1100 on both paths).
 *
 * The choice is made once, at the first compression: CPUID leaf 7 EBX bit
 * 29 (SHA) and leaf 1 ECX bits 9 (SSSE3) and 19 (SSE4.1), unless
 * RI_SHA256_PORTABLE is set (to anything but "" or "0").  Only the
 * SHA-NI function is compiled for those extensions (a target attribute),
 * so the rest of the build stays plain -std=c11 for any x86-64.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "sha256.h"

#if (defined(__x86_64__) || defined(__i386__)) && \
    (defined(__GNUC__) || defined(__clang__))
#define RI_SHA_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define RI_SHA_X86 0
#endif

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

/* FIPS 180-4 section 5.3.3: H(0), the square roots of the first 8 primes. */
static const uint32_t H0[8] = {
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

/* Words are big-endian (FIPS 180-4 section 3.1), whatever the host. */
static inline uint32_t
load_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline void
store_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static inline uint32_t
rotr(uint32_t x, unsigned n)
{
	return x >> n | x << (32 - n);
}

/*
 * The functions of FIPS 180-4 section 4.1.2, in forms with fewer
 * operations and register copies, equal bit by bit to the standard's:
 * ch picks y where x is 1 and z where it is 0 (4.2); maj is the majority
 * (4.3); a rotation distributes over xor, so rotr(rotr(x, 9) ^ x, 11) is
 * rotr(x, 20) ^ rotr(x, 11), and so on (4.4-4.7).  (About 15% fewer
 * instructions a block than the rotations written side by side.)
 */
static inline uint32_t
ch(uint32_t x, uint32_t y, uint32_t z)
{
	return z ^ (x & (y ^ z));
}

static inline uint32_t
maj(uint32_t x, uint32_t y, uint32_t z)
{
	return (x & y) | (z & (x | y));
}

static inline uint32_t
bsig0(uint32_t x)       /* (4.4): ROTR2 ^ ROTR13 ^ ROTR22 */
{
	return rotr(rotr(rotr(x, 9) ^ x, 11) ^ x, 2);
}

static inline uint32_t
bsig1(uint32_t x)       /* (4.5): ROTR6 ^ ROTR11 ^ ROTR25 */
{
	return rotr(rotr(rotr(x, 14) ^ x, 5) ^ x, 6);
}

static inline uint32_t
ssig0(uint32_t x)       /* (4.6): ROTR7 ^ ROTR18 ^ SHR3 */
{
	return rotr(rotr(x, 11) ^ x, 7) ^ x >> 3;
}

static inline uint32_t
ssig1(uint32_t x)       /* (4.7): ROTR17 ^ ROTR19 ^ SHR10 */
{
	return rotr(rotr(x, 2) ^ x, 17) ^ x >> 10;
}

/*
 * One round of FIPS 180-4 section 6.2.2 step 3, without the renaming of
 * the eight working variables: the caller rotates the names instead
 * (round t + 1 passes h, a, b, ... where round t passed a, b, c, ...), so
 * only d and h change -- d becomes e's next value, h becomes a's.
 */
#define ROUND(a, b, c, d, e, f, g, h, t, wt) do {                       \
	uint32_t t1_ = (h) + bsig1(e) + ch(e, f, g) + K[t] + (wt);      \
	(d) += t1_;                                                     \
	(h) = t1_ + bsig0(a) + maj(a, b, c);                            \
} while (0)

/*
 * Step 1's schedule, kept as its last 16 words, w[t mod 16]: for t >= 16,
 * W[t] = sigma1(W[t-2]) + W[t-7] + sigma0(W[t-15]) + W[t-16], written over
 * W[t-16], which no later word needs.  BLOCKW is W[t] for t < 16.
 */
#define SCHEDW(j) (w[(j) & 15] += ssig1(w[((j) + 14) & 15]) +          \
	w[((j) + 9) & 15] + ssig0(w[((j) + 1) & 15]))
#define BLOCKW(j) (w[j])

/* Rounds t..t+7 over the working variables a..h, W[t..t+7] from
 * WT(j..j+7); after eight the names are back where they started. */
#define ROUNDS8(t, j, WT) do {                                          \
	ROUND(a, b, c, d, e, f, g, h, (t) + 0, WT((j) + 0));            \
	ROUND(h, a, b, c, d, e, f, g, (t) + 1, WT((j) + 1));            \
	ROUND(g, h, a, b, c, d, e, f, (t) + 2, WT((j) + 2));            \
	ROUND(f, g, h, a, b, c, d, e, (t) + 3, WT((j) + 3));            \
	ROUND(e, f, g, h, a, b, c, d, (t) + 4, WT((j) + 4));            \
	ROUND(d, e, f, g, h, a, b, c, (t) + 5, WT((j) + 5));            \
	ROUND(c, d, e, f, g, h, a, b, (t) + 6, WT((j) + 6));            \
	ROUND(b, c, d, e, f, g, h, a, (t) + 7, WT((j) + 7));            \
} while (0)

/* FIPS 180-4 section 6.2.2, once for each of n blocks. */
static void
compress_portable(uint32_t st[8], const unsigned char *p, size_t n)
{
	uint32_t w[16];
	int i, t;

	for (; n > 0; n--, p += RI_SHA256_BLOCK) {
		uint32_t a, b, c, d, e, f, g, h;

		/* step 1, t < 16: the block's words */
		for (i = 0; i < 16; i++)
			w[i] = load_be32(p + 4 * i);
		/* step 2 */
		a = st[0]; b = st[1]; c = st[2]; d = st[3];
		e = st[4]; f = st[5]; g = st[6]; h = st[7];
		/* step 3, with step 1's later words made as they are used */
		ROUNDS8(0, 0, BLOCKW);
		ROUNDS8(8, 8, BLOCKW);
		for (t = 16; t < 64; t += 16) {
			ROUNDS8(t, 0, SCHEDW);
			ROUNDS8(t + 8, 8, SCHEDW);
		}
		/* step 4: H(i) */
		st[0] += a; st[1] += b; st[2] += c; st[3] += d;
		st[4] += e; st[5] += f; st[6] += g; st[7] += h;
	}
	/* the schedule held message words -- key words, for an HMAC key */
	sodium_memzero(w, sizeof w);
}

#undef ROUND
#undef ROUNDS8
#undef SCHEDW
#undef BLOCKW

#if RI_SHA_X86
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

enum { PATH_UNKNOWN, PATH_PORTABLE, PATH_SHANI };

/* The path chosen at the first compression; an atomic so threads that
 * race to choose it agree without a data race (they choose alike). */
static atomic_int sha_path;

static int
choose_path(void)
{
	const char *e = getenv("RI_SHA256_PORTABLE");

	if (e != NULL && *e != '\0' && strcmp(e, "0") != 0)
		return PATH_PORTABLE;
	return cpu_has_shani() ? PATH_SHANI : PATH_PORTABLE;
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
	    on || !cpu_has_shani() ? PATH_PORTABLE : PATH_SHANI,
	    memory_order_relaxed);
}

/* n whole blocks at p into st, by the chosen path */
static void
compress(uint32_t st[8], const unsigned char *p, size_t n)
{
#if RI_SHA_X86
	if (current_path() == PATH_SHANI) {
		compress_shani(st, p, n);
		return;
	}
#endif
	compress_portable(st, p, n);
}

void
ri_sha256_init(ri_sha256_state *st)
{
	memcpy(st->h, H0, sizeof st->h);
	st->n = 0;
	st->used = 0;
}

/*
 * Pieces smaller than what the buffer lacks are only copied (ri feeds
 * many 1- to 32-byte fields); a full buffer is compressed, and then every
 * whole block of the caller's piece is compressed in place, in one call.
 */
void
ri_sha256_update(ri_sha256_state *st, const void *p, size_t n)
{
	const unsigned char *in = p;
	size_t k;

	if (n == 0)
		return;
	st->n += n;
	if (st->used > 0) {
		k = RI_SHA256_BLOCK - st->used;
		if (n < k) {
			memcpy(st->buf + st->used, in, n);
			st->used += n;
			return;
		}
		memcpy(st->buf + st->used, in, k);
		compress(st->h, st->buf, 1);
		st->used = 0;
		in += k;
		n -= k;
	}
	if (n >= RI_SHA256_BLOCK) {
		k = n / RI_SHA256_BLOCK;
		compress(st->h, in, k);
		in += k * RI_SHA256_BLOCK;
		n -= k * RI_SHA256_BLOCK;
	}
	if (n > 0) {
		memcpy(st->buf, in, n);
		st->used = n;
	}
}

void
ri_sha256_final(ri_sha256_state *st, unsigned char out[RI_SHA256_BYTES])
{
	uint64_t bits = st->n << 3;     /* the length mod 2^64, in bits */
	int i;

	/* FIPS 180-4 section 5.1.1: a 1 bit, zeros to 448 mod 512, and the
	 * length as a 64-bit big-endian integer; a second block when the
	 * length does not fit after the 1 bit */
	st->buf[st->used++] = 0x80;
	if (st->used > RI_SHA256_BLOCK - 8) {
		memset(st->buf + st->used, 0, RI_SHA256_BLOCK - st->used);
		compress(st->h, st->buf, 1);
		st->used = 0;
	}
	memset(st->buf + st->used, 0, RI_SHA256_BLOCK - 8 - st->used);
	for (i = 0; i < 8; i++)
		st->buf[RI_SHA256_BLOCK - 1 - i] =
		    (unsigned char)(bits >> (8 * i));
	compress(st->h, st->buf, 1);
	/* section 6.2.2: the digest is H(N) in big-endian words */
	for (i = 0; i < 8; i++)
		store_be32(out + 4 * i, st->h[i]);
	sodium_memzero(st, sizeof *st);
}

void
ri_sha256(const void *p, size_t n, unsigned char out[RI_SHA256_BYTES])
{
	ri_sha256_state st;

	ri_sha256_init(&st);
	ri_sha256_update(&st, p, n);
	ri_sha256_final(&st, out);
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
