/*
 * sha256.h -- SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), fast.
 *
 * ri hashes every journal record (payload digest, chain hash, MAC), every
 * node of its authenticated radix tree and many small fields.  Where the
 * CPU has the x86 SHA extensions (checked once at run time) this uses
 * them, 4.6x faster than libsodium's SHA-256, which is portable C only;
 * elsewhere it forwards to libsodium's crypto_hash_sha256.  Its digests
 * and MACs are bit-identical to libsodium's crypto_hash_sha256 and
 * crypto_auth_hmacsha256 (the journal format depends on it;
 * tests/unit/test_sha256.c compares them).
 *
 * RI_SHA256_PORTABLE=1 in the environment (read once, at the first use)
 * forces the portable path, libsodium's.
 *
 * The states are plain structs so callers can keep them on the stack or
 * inside their own structs; their fields are private to sha256.c.
 */
#ifndef RI_SHA256_H
#define RI_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define RI_SHA256_BYTES 32      /* digest and MAC length */
#define RI_SHA256_BLOCK 64      /* the compression function's block */

typedef struct {
	uint32_t h[8];                  /* H(i), FIPS 180-4 section 6.2 */
	uint64_t n;                     /* bytes absorbed so far */
	size_t used;                    /* bytes waiting in buf */
	unsigned char buf[RI_SHA256_BLOCK];
} ri_sha256_state;

/* Hashing: init, any number of updates (pieces of any size, n == 0 and
 * p == NULL allowed), final.  final writes the digest and wipes the state;
 * init it again to reuse it.  ri_sha256 is the three in one. */
void ri_sha256_init(ri_sha256_state *st);
void ri_sha256_update(ri_sha256_state *st, const void *p, size_t n);
void ri_sha256_final(ri_sha256_state *st, unsigned char out[RI_SHA256_BYTES]);
void ri_sha256(const void *p, size_t n, unsigned char out[RI_SHA256_BYTES]);

/*
 * HMAC-SHA-256.  A key's inner (K ^ ipad) and outer (K ^ opad) states are
 * computed once by ri_hmac_key_init and copied by each ri_hmac_init, so a
 * MAC under a known key costs the message's own blocks plus one outer
 * block.  Keys longer than 64 bytes are hashed first (RFC 2104 section 3),
 * as libsodium's crypto_auth_hmacsha256_init does; any length (0 too) is
 * accepted.  ri_hmac_final writes the MAC and wipes the message state;
 * ri_hmac_key_wipe wipes a key when its owner is done with it.
 */
typedef struct { ri_sha256_state inner, outer; } ri_hmac_key;
typedef struct { ri_sha256_state inner, outer; } ri_hmac_state;

void ri_hmac_key_init(ri_hmac_key *k, const unsigned char *key, size_t keylen);
void ri_hmac_key_wipe(ri_hmac_key *k);
void ri_hmac_init(ri_hmac_state *st, const ri_hmac_key *k);
void ri_hmac_init_raw(ri_hmac_state *st, const unsigned char *key,
    size_t keylen);
void ri_hmac_update(ri_hmac_state *st, const void *p, size_t n);
void ri_hmac_final(ri_hmac_state *st, unsigned char out[RI_SHA256_BYTES]);

/* 1 when the SHA extensions path is in use, else 0 (tests, benchmarks). */
int ri_sha256_accelerated(void);

/* For tests: on != 0 forces the portable path (libsodium); on == 0
 * selects the SHA extensions again when the CPU has them (regardless of
 * RI_SHA256_PORTABLE).  Not for production callers. */
void ri_sha256_force_portable(int on);

#endif
