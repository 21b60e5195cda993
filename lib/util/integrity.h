/*
 * integrity.h -- Tamper Evidence: the record header encoding, the chain
 * hash, the MAC, and the payload digest.  Pure functions over bytes, so the
 * substrate, ri-audit's traversal and the public-key verifier compute the
 * very same thing.
 *
 *   payload_digest = SHA-256(salt ‖ payload)       salt: 16 random bytes,
 *                                                  destroyed with the payload
 *   hash           = SHA-256(prev_hash ‖ header)   header binds the digest
 *   mac            = HMAC-SHA-256(integrity_key, hash)
 *
 * The header is versioned (format byte RI_FORMAT) and length-prefixed, so
 * the encoding cannot drift silently between releases.
 */
#ifndef RI_INTEGRITY_H
#define RI_INTEGRITY_H

#include <stdint.h>
#include <string.h>

#include "util/sha256.h"
#include "util/util.h"

#define RI_FORMAT 4             /* 2: the record roles of vocab.h; 3: typed (STRICT)
                                 * storage, the tree of scope heads, the witness;
                                 * 4: shards (docs/SHARDS.md) */
#define RI_HASH_LEN 32
#define RI_SALT_LEN 16
#define RI_INSTANCE_LEN 16
#define RI_KEY_MIN 32
#define RI_KEY_MAX 4096

struct ri_header {
	const unsigned char *instance_id;       /* RI_INSTANCE_LEN bytes */
	int64_t seq;
	const char *event_id;
	const char *action_ref;
	const char *kind;
	const char *act_key;
	const char *invocation_id;              /* NULL: names none */
	const char *actor_ref;
	const char *attestation_id;
	ri_ms recorded_at;
	ri_ms retention_until;                  /* RI_NONE: unplaced */
	int role;
	int64_t act_prev;                       /* previous record of this act, 0 */
	int64_t inv_prev;                       /* previous record of this invocation, 0 */
	const unsigned char *payload_digest;    /* RI_HASH_LEN */
	int shard;                              /* format 4: the record's shard (docs/SHARDS.md) */
};

/* The genesis of shard 0's chain (ri_genesis_shard), what a journal of
 * one shard links its first record to. */
void ri_genesis(const unsigned char instance_id[RI_INSTANCE_LEN], unsigned char out[RI_HASH_LEN]);
/* Format 3's one genesis: what ri-init --migrate verifies an old journal by. */
void ri_genesis_v3(const unsigned char instance_id[RI_INSTANCE_LEN], unsigned char out[RI_HASH_LEN]);
void ri_payload_digest(const unsigned char salt[RI_SALT_LEN], const char *payload,
    size_t n, unsigned char out[RI_HASH_LEN]);
void ri_record_hash(const unsigned char prev[RI_HASH_LEN], const struct ri_header *h,
    unsigned char out[RI_HASH_LEN]);
/* The same under a named format: 3 (one chain; what ri-init --migrate
 * verifies a journal of the previous format by) or 4 (a chain per shard:
 * the shard is in the header, prev is the shard's previous record). */
void ri_record_hash_fmt(int fmt, const unsigned char prev[RI_HASH_LEN], const struct ri_header *h,
    unsigned char out[RI_HASH_LEN]);
/* What to do with a journal of an older format: the one before this
 * (3) is converted by ri-init --migrate; an older one is kept for the
 * release that wrote it. */
static inline const char *
ri_format_advice(int fmt)
{
	return fmt == 3 ? "run ri-init --migrate to convert it (its history kept as written, the old journal kept)" :
	    "keep the old release to audit it, and start a new instance with ri-init";
}
/* Format 4: the genesis of one shard's chain -- the hash its first
 * record links to, distinct per shard so no record links across. */
void ri_genesis_shard(const unsigned char instance_id[RI_INSTANCE_LEN], int shard, unsigned char out[RI_HASH_LEN]);
void ri_mac(const unsigned char *key, size_t keylen, const void *msg, size_t n,
    unsigned char out[RI_HASH_LEN]);
/* The instance's key, whose HMAC states ri_mac then computes once: key is
 * the buffer ri_key_load returned, registered while it lives (NULL
 * forgets it, before the buffer is freed). */
void ri_mac_key_use(const unsigned char *key, size_t keylen);
/* An HMAC state under key (the instance's precomputed states when key is
 * that buffer): for MACs over several fields (heads.h). */
void ri_mac_init(ri_hmac_state *st, const unsigned char *key, size_t keylen);
bool ri_mac_ok(const unsigned char *key, size_t keylen, const void *msg, size_t n,
    const unsigned char *mac, size_t maclen);

/* The integrity key: a file of at least 32 bytes, refused when group- or
 * world-accessible.  RI_CONFIG with a message otherwise. */
int ri_key_load(const char *path, unsigned char **key, size_t *len, ri_err *err);

/* The message a seal signs: tag, instance id, seq, head hash. */
#define RI_SEAL_MSG_LEN (8 + RI_INSTANCE_LEN + 8 + RI_HASH_LEN)
void ri_seal_message(const unsigned char instance_id[RI_INSTANCE_LEN], int64_t seq,
    const unsigned char head[RI_HASH_LEN], unsigned char out[RI_SEAL_MSG_LEN]);
/* Format 4: a seal signs the root of its shard heads (ri_shards_root):
 * tag, instance id, the shard count, the root. */
#define RI_SEAL4_MSG_LEN (8 + RI_INSTANCE_LEN + 4 + RI_HASH_LEN)
void ri_seal4_message(const unsigned char instance_id[RI_INSTANCE_LEN], int shards,
    const unsigned char root[RI_HASH_LEN], unsigned char out[RI_SEAL4_MSG_LEN]);
/* Read an Ed25519 key written by ri-init (hex, one line): 32 bytes public
 * or 64 bytes secret.  RI_CONFIG with a message otherwise. */
int ri_seal_key_load(const char *path, unsigned char *key, size_t len, ri_err *err);
/* The public key file ri-init writes beside the seal key:
 *   <64 hex: the Ed25519 public key>
 *   instance_id <32 hex: the instance it seals>
 * Load it: RI_CONFIG when the key is not there; *has_instance false when
 * the file names no instance (which ri-audit --public-key refuses). */
int ri_seal_pub_load(const char *path, unsigned char pk[32], unsigned char instance[RI_INSTANCE_LEN],
    bool *has_instance, ri_err *err);
/* Its text (out: at least 128 bytes). */
void ri_seal_pub_text(const unsigned char pk[32], const unsigned char instance[RI_INSTANCE_LEN], char *out,
    size_t n);

void ri_hex(const unsigned char *b, size_t n, char *out);  /* out: 2n + 1 */

/* Two hashes or MACs equal, in time that does not depend on where they
 * differ (as sodium_memcmp, whose byte loop and zero check were ~5% of an
 * audit: four 8-byte words here). */
static inline bool
ri_eq32(const unsigned char *a, const unsigned char *b)
{
	uint64_t d = 0, x, y;

	for (int i = 0; i < RI_HASH_LEN; i += 8) {
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		d |= x ^ y;
	}
	return d == 0;
}

#endif
