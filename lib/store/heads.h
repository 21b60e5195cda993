/*
 * heads.h -- what makes an absence provable and a side table honest,
 * independent of the backend (no SQLite type crosses this header; a
 * PostgreSQL backend reuses every function here).  docs/INTEGRITY.md
 * gives the argument.
 *
 *   scope key   SHA-256 of a scope's type and fields: an act (kind,
 *               act_key), an invocation.  An actor's registry is the act
 *               ("audit", actor_ref).
 *   the tree    an authenticated radix tree (16-ary, leaf shortcuts) over
 *               scope keys.  A leaf holds a scope's newest record (seq and
 *               hash); an internal node holds its children's hashes.  The
 *               root hash is bound, with the journal's own head, under one
 *               MAC (the journal head).  So a lookup proves presence AND
 *               absence in O(log n): a missing or altered node breaks a
 *               hash on the path to a root only the key holder can MAC,
 *               and an older node cannot be replayed under a newer root.
 *   the journal head
 *               last seq, the hash at it, the tree root, the open-intents
 *               count and accumulator, the newest seal's seq and the lease
 *               grant counter -- all under one HMAC.
 *   side tables leases, marks, actors and findings rows each carry an HMAC
 *               of their own fields (actors also the seq of their newest
 *               registry record, which must be their scope's head).
 */
#ifndef RI_HEADS_H
#define RI_HEADS_H

#include "util/integrity.h"

/* ---- scope keys ---- */

#define RI_SCOPE_LEN RI_HASH_LEN
void ri_scope_act(const char *kind, const char *act_key, unsigned char out[RI_SCOPE_LEN]);
void ri_scope_inv(const char *invocation_id, unsigned char out[RI_SCOPE_LEN]);

/* ---- the authenticated tree ---- */

#define RI_NODE_ID_MAX 67               /* a shard's two bytes, one a nibble of the prefix (+ spare) */
#define RI_NODE_MAX (3 + 16 * RI_HASH_LEN)
#define RI_LEAF_LEN (1 + RI_SCOPE_LEN + 8 + RI_HASH_LEN)

/* A scope's head: its newest record. */
struct ri_leaf {
	int64_t last_seq;
	unsigned char hash[RI_HASH_LEN];
};

/* The backend's node store.  get answers RI_ST_OK (body copied, *len
 * set), RI_ST_NOT_KNOWN (no such row), or a failure code with the
 * backend's message in its own error; put writes (insert or replace). */
struct ri_tree_cache;
struct ri_tree_io {
	void *ctx;
	int (*get)(void *ctx, const unsigned char *id, size_t idlen, unsigned char body[RI_NODE_MAX],
	    size_t *len);
	int (*put)(void *ctx, const unsigned char *id, size_t idlen, const unsigned char *body, size_t len);
	/* optional: nodes already verified (or written), by their hash --
	 * content-addressed: a hit is a body that hashes to exactly what its
	 * verified parent names, so it is that node whenever it was read.  A
	 * backend whose transactions decide more than a node's content (the
	 * PostgreSQL batch) empties it at their boundaries
	 * (ri_tree_cache_clear); SQLite keeps it for the handle's life, so a
	 * long run (the sweep) reads the tree's upper levels once, not at
	 * every append (issue 15). */
	struct ri_tree_cache *cache;
	/* whose tree: shard 0's node ids are the nibbles of the key's prefix,
	 * another shard's begin 0xff, shard -- no nibble is 0xff, so no two
	 * shards' trees share a node (docs/SHARDS.md) */
	int shard;
};
/* A node's id: shard's prefix, then the first d nibbles of key; its length. */
size_t ri_node_id(int shard, const unsigned char key[RI_SCOPE_LEN], int d, unsigned char id[RI_NODE_ID_MAX]);

/* Direct-mapped by the node's hash: a later node of the same slot
 * replaces an earlier one.  A slot names its entry in a pool allocated at
 * the first entry and filled in order, so a short command touches a few
 * pages of it, not one page per node (issue 15: the pool spread over
 * 1,024 slots was ~30 page faults a command).  Zeroed, a cache is empty;
 * ri_tree_cache_free releases the pool. */
#define RI_TREE_CACHE 1024      /* a power of two, at most 65,535 */
struct ri_tree_entry {
	unsigned gen;
	unsigned char hash[RI_HASH_LEN];
	unsigned char id[RI_NODE_ID_MAX];
	size_t idlen, len;
	unsigned char body[RI_NODE_MAX];
};
struct ri_tree_cache {
	unsigned gen;                   /* entries of another generation are empty */
	unsigned used;                  /* pool entries handed to a slot */
	unsigned short slot[RI_TREE_CACHE];     /* 1 + its entry's index, or 0 */
	struct ri_tree_entry *pool;     /* RI_TREE_CACHE entries, or NULL */
};
void ri_tree_cache_clear(struct ri_tree_cache *c);
void ri_tree_cache_free(struct ri_tree_cache *c);

/* The empty tree's root (and an empty child): 32 zero bytes. */
extern const unsigned char ri_tree_empty[RI_HASH_LEN];

/*
 * Look key up under root: RI_ST_OK with *present and *leaf, or
 * RI_ST_INTEGRITY with why (a node missing, malformed, or not the one its
 * parent's hash names), or the io's failure code.  Never "absent" without
 * a proof: absent means the path ends in an empty slot its verified parent
 * names, or in a verified leaf holding another key.
 */
int ri_tree_get(const struct ri_tree_io *io, const unsigned char root[RI_HASH_LEN],
    const unsigned char key[RI_SCOPE_LEN], bool *present, struct ri_leaf *leaf, char *why, size_t n);
/* Insert or replace key's leaf; root is updated in place.  Verifies every
 * node it reads on the way down, as ri_tree_get does. */
int ri_tree_put(const struct ri_tree_io *io, unsigned char root[RI_HASH_LEN],
    const unsigned char key[RI_SCOPE_LEN], const struct ri_leaf *leaf, char *why, size_t n);
/* Walk every leaf under root in key order, verifying every node (ri-audit,
 * rebuild checks).  each() returns non-zero to stop. */
typedef int (*ri_leaf_fn)(const unsigned char key[RI_SCOPE_LEN], const struct ri_leaf *leaf, void *arg);
int ri_tree_walk(const struct ri_tree_io *io, const unsigned char root[RI_HASH_LEN], ri_leaf_fn each,
    void *arg, char *why, size_t n);

/* ---- the journal head ---- */

struct ri_jhead {
	int64_t last_seq;                       /* the newest record (0: none) */
	unsigned char root[RI_HASH_LEN];        /* the tree of scope heads */
	int64_t open_count;                     /* rows the open-intents index must hold */
	unsigned char open_acc[RI_HASH_LEN];    /* XOR of their elements */
	int64_t sealed_seq;                     /* the newest audit.sealed record (0: none) */
	int64_t grants;                         /* lease grants so far: the fencing token */
	int shard;                              /* format 4: whose head (docs/SHARDS.md) */
};

/* The head's MAC binds its shard and the journal's shard count: a meta
 * row that says another count (and so sends an act to another shard's
 * tree, where its absence would verify) fails every head. */
void ri_jhead_mac(const unsigned char *key, size_t keylen, const unsigned char instance[RI_INSTANCE_LEN],
    int shards, int64_t boundary, const struct ri_jhead *h, const unsigned char last_hash[RI_HASH_LEN], unsigned char out[RI_HASH_LEN]);

/* Format 3's head MAC: what ri-init --migrate verifies an old journal's
 * head by (docs/SHARDS.md). */
void ri_jhead_mac_v3(const unsigned char *key, size_t keylen, const unsigned char instance[RI_INSTANCE_LEN],
    const struct ri_jhead *h, const unsigned char last_hash[RI_HASH_LEN], unsigned char out[RI_HASH_LEN]);

/* One open intent's element of the accumulator; XOR it in or out. */
void ri_open_elem(const char *invocation_id, int64_t seq, const char *kind, const char *act_key,
    const char *event_id, int64_t recorded_at, unsigned char out[RI_HASH_LEN]);
void ri_acc_xor(unsigned char acc[RI_HASH_LEN], const unsigned char elem[RI_HASH_LEN]);

/* ---- side-table rows ---- */

void ri_lease_mac(const unsigned char *key, size_t keylen, const unsigned char instance[RI_INSTANCE_LEN],
    const char *kind, const char *act_key, const char *holder, int64_t expires_at, int64_t token,
    unsigned char out[RI_HASH_LEN]);
void ri_mark_mac(const unsigned char *key, size_t keylen, const unsigned char instance[RI_INSTANCE_LEN],
    const char *name, int64_t seq, unsigned char out[RI_HASH_LEN]);
void ri_actor_mac(const unsigned char *key, size_t keylen, const unsigned char instance[RI_INSTANCE_LEN],
    const char *actor, int service, const unsigned char cred_hash[32], int64_t created_at,
    int64_t revoked_at, int64_t reg_seq, unsigned char out[RI_HASH_LEN]);
/* ---- shards (journal format 4; docs/SHARDS.md) ---- */

#define RI_SHARDS_MAX 256
/* The instance's own shard: seals, the actor registry, bindings, every
 * record of kind audit naming no act (docs/SHARDS.md). */
#define RI_SHARD_INSTANCE 0

/* The shard key: HMAC(integrity key, "ri shard key"). */
void ri_shard_key_derive(const unsigned char *key, size_t keylen, unsigned char out[RI_HASH_LEN]);
/* The shard of an act's scope key: the first four bytes of
 * HMAC(shard key, scope) mod shards -- keyed, so no caller can aim acts
 * at one shard.  shards in 1..RI_SHARDS_MAX. */
int ri_shard_of(const unsigned char shard_key[RI_HASH_LEN], const unsigned char act[RI_SCOPE_LEN], int shards);
/* A shard's head as a seal names it. */
struct ri_shard_head {
	int64_t last_seq;
	unsigned char hash[RI_HASH_LEN];
};
/* The Merkle root a seal signs over every shard's head (RFC 6962's tree
 * hash: leaf SHA-256(0x00 || shard || last_seq || hash), node
 * SHA-256(0x01 || left || right), split at the largest power of two
 * below n), so one shard's head is provable with log2(S) hashes. */
void ri_shards_root(const struct ri_shard_head *v, int shards, unsigned char out[RI_HASH_LEN]);

/* The findings register's key: HMAC(integrity key, "ri findings key"). */
void ri_findings_key_derive(const unsigned char *key, size_t keylen, unsigned char out[RI_HASH_LEN]);

#endif
