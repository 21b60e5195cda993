/* heads.c -- scope keys, the authenticated tree of scope heads, the
 * journal head's MAC, the open-intents accumulator, and the MACs of the
 * side tables.  Pure functions over bytes and a node store (heads.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/heads.h"
#include "util/nc.h"
#include "util/sha256.h"
#include "store/store.h"

const unsigned char ri_tree_empty[RI_HASH_LEN];

/* ---- encodings ---- */

static void
be64(unsigned char b[8], uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		b[i] = (unsigned char)(v & 0xff);
}

static uint64_t
get_be64(const unsigned char b[8])
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

/* Length-prefixed with a presence byte: "" and absent differ, and no field
 * bleeds into the next. */
static void
mac_str(ri_hmac_state *st, const char *s)
{
	unsigned char present = s != NULL, len[8];

	ri_hmac_update(st, &present, 1);
	if (s == NULL)
		return;
	be64(len, strlen(s));
	ri_hmac_update(st, len, 8);
	ri_hmac_update(st, (const unsigned char *)s, strlen(s));
}

static void
mac_i64(ri_hmac_state *st, int64_t v)
{
	unsigned char b[8];

	be64(b, (uint64_t)v);
	ri_hmac_update(st, b, 8);
}

static void
mac_begin(ri_hmac_state *st, const unsigned char *key, size_t keylen, const char *tag,
    const unsigned char instance[RI_INSTANCE_LEN])
{
	ri_mac_init(st, key, keylen);
	ri_hmac_update(st, (const unsigned char *)tag, strlen(tag) + 1);
	ri_hmac_update(st, instance, RI_INSTANCE_LEN);
}

/* ---- scope keys ---- */

static void
scope_add(ri_sha256_state *st, const char *v)
{
	size_t n = v ? strlen(v) : 0;
	unsigned char len[8];

	be64(len, n);
	ri_sha256_update(st, len, 8);
	if (n > 0)
		ri_sha256_update(st, (const unsigned char *)v, n);
}

void
ri_scope_act(const char *kind, const char *act_key, unsigned char out[RI_SCOPE_LEN])
{
	ri_sha256_state st;

	ri_sha256_init(&st);
	ri_sha256_update(&st, (const unsigned char *)"ri scope act", 13);
	scope_add(&st, kind);
	scope_add(&st, act_key);
	ri_sha256_final(&st, out);
}

void
ri_scope_inv(const char *invocation_id, unsigned char out[RI_SCOPE_LEN])
{
	ri_sha256_state st;

	ri_sha256_init(&st);
	ri_sha256_update(&st, (const unsigned char *)"ri scope inv", 13);
	scope_add(&st, invocation_id);
	ri_sha256_final(&st, out);
}

/* ---- the tree ----------------------------------------------------------
 *
 * 16-ary over the 64 nibbles of a key.  A node lives at the key's first
 * `depth` nibbles, one byte each (the root at the empty id), so the ids'
 * byte order is the tree's depth-first order: a walk reads the table in
 * order.  Its body is either
 *   internal: 'I', a 16-bit child bitmap, then each present child's hash
 *   leaf:     'L', the full key, last_seq (8 bytes), the record's hash
 * and its hash is SHA-256("ri tree" || body).  A leaf sits at the
 * shallowest depth where it is alone in its subtree; an empty child is
 * 32 zero bytes.
 */

#define NODE_I 'I'
#define NODE_L 'L'

static int
nibble(const unsigned char key[RI_SCOPE_LEN], int d)
{
	return d % 2 == 0 ? key[d / 2] >> 4 : key[d / 2] & 0x0f;
}

size_t
ri_node_id(int shard, const unsigned char key[RI_SCOPE_LEN], int d, unsigned char id[RI_NODE_ID_MAX])
{
	size_t n = 0;

	if (shard > 0) {
		id[n++] = 0xff;
		id[n++] = (unsigned char)shard;
	}
	for (int i = 0; i < d; i++)
		id[n++] = (unsigned char)nibble(key, i);
	return n;
}

static void
node_hash(const unsigned char *body, size_t len, unsigned char out[RI_HASH_LEN])
{
	ri_sha256_state st;

	ri_sha256_init(&st);
	ri_sha256_update(&st, (const unsigned char *)"ri tree", 8);
	ri_sha256_update(&st, body, len);
	ri_sha256_final(&st, out);
}

/* The tree's hashes are public (an auditor without the key walks them), so
 * no constant-time test: sodium_is_zero's byte loop was 3% of ri-audit. */
static bool
is_empty(const unsigned char h[RI_HASH_LEN])
{
	return memcmp(h, ri_tree_empty, RI_HASH_LEN) == 0;
}

static int
popcount16(unsigned v)
{
	int n = 0;

	for (; v; v &= v - 1)
		n++;
	return n;
}

/* Is the body well formed?  (Its hash was checked by the caller.) */
static bool
body_ok(const unsigned char *b, size_t len)
{
	if (len == RI_LEAF_LEN && b[0] == NODE_L)
		return true;
	if (len >= 3 && b[0] == NODE_I) {
		unsigned bm = (unsigned)b[1] << 8 | b[2];
		return bm != 0 && len == 3 + (size_t)popcount16(bm) * RI_HASH_LEN;
	}
	return false;
}

/* The hash of child c of an internal body (ri_tree_empty when absent). */
static const unsigned char *
child_of(const unsigned char *b, int c)
{
	unsigned bm = (unsigned)b[1] << 8 | b[2];

	if (!(bm >> c & 1))
		return ri_tree_empty;
	return b + 3 + (size_t)popcount16(bm & ((1u << c) - 1)) * RI_HASH_LEN;
}

/* Set child c of an internal body to h (in place; len updated). */
static void
child_set(unsigned char *b, size_t *len, int c, const unsigned char h[RI_HASH_LEN])
{
	unsigned bm = (unsigned)b[1] << 8 | b[2];
	size_t at = 3 + (size_t)popcount16(bm & ((1u << c) - 1)) * RI_HASH_LEN;

	if (!(bm >> c & 1)) {
		memmove(b + at + RI_HASH_LEN, b + at, *len - at);
		*len += RI_HASH_LEN;
		bm |= 1u << c;
		b[1] = (unsigned char)(bm >> 8);
		b[2] = (unsigned char)bm;
	}
	memcpy(b + at, h, RI_HASH_LEN);
}

static size_t
leaf_body(const unsigned char key[RI_SCOPE_LEN], const struct ri_leaf *l, unsigned char b[RI_LEAF_LEN])
{
	b[0] = NODE_L;
	memcpy(b + 1, key, RI_SCOPE_LEN);
	be64(b + 1 + RI_SCOPE_LEN, (uint64_t)l->last_seq);
	memcpy(b + 1 + RI_SCOPE_LEN + 8, l->hash, RI_HASH_LEN);
	return RI_LEAF_LEN;
}

static void
leaf_of(const unsigned char *b, struct ri_leaf *l)
{
	l->last_seq = (int64_t)get_be64(b + 1 + RI_SCOPE_LEN);
	memcpy(l->hash, b + 1 + RI_SCOPE_LEN + 8, RI_HASH_LEN);
}

/* Does the leaf's key carry the node's prefix (its first d nibbles)? */
static bool
leaf_prefix_ok(const unsigned char *b, const unsigned char key[RI_SCOPE_LEN], int d)
{
	for (int i = 0; i < d; i++)
		if (nibble(b + 1, i) != nibble(key, i))
			return false;
	return true;
}

void
ri_tree_cache_clear(struct ri_tree_cache *c)
{
	/* gen + 1 must never wrap to an empty entry's 0: on the wrap every
	 * slot is emptied (the pool is kept, its entries reused) */
	if (c != NULL && ++c->gen == (unsigned)-1) {
		c->gen = 0;
		c->used = 0;
		memset(c->slot, 0, sizeof c->slot);
	}
}

void
ri_tree_cache_free(struct ri_tree_cache *c)
{
	if (c == NULL)
		return;
	free(c->pool);
	memset(c, 0, sizeof *c);
}

static unsigned
cache_slot(const unsigned char h[RI_HASH_LEN])
{
	return ((unsigned)h[0] | (unsigned)h[1] << 8) & (RI_TREE_CACHE - 1);
}

/* the live entry of slot i, or NULL */
static struct ri_tree_entry *
cache_entry(struct ri_tree_cache *c, unsigned i)
{
	struct ri_tree_entry *e;

	if (c->slot[i] == 0)
		return NULL;
	e = &c->pool[c->slot[i] - 1];
	return e->gen == c->gen + 1 ? e : NULL;
}

static bool
cache_find(struct ri_tree_cache *c, const unsigned char *id, size_t idlen, const unsigned char want[RI_HASH_LEN],
    unsigned char body[RI_NODE_MAX], size_t *len)
{
	struct ri_tree_entry *e = NULL;

	if (c == NULL)
		return false;
	/* gen 0 never matches: a zeroed cache is empty.  The hash decides:
	 * the body is the one its verified parent names, whenever it was read */
	if (!RI_NC(RI_NC_TREE_CACHE_BY_ID)) {
		e = cache_entry(c, cache_slot(want));
		if (e != NULL && !(e->idlen == idlen && memcmp(e->hash, want, RI_HASH_LEN) == 0 &&
		    memcmp(e->id, id, idlen) == 0))
			e = NULL;
	} else {
		/* negative control: any node once cached at this id, by id alone */
		for (unsigned i = 0; i < RI_TREE_CACHE && e == NULL; i++)
			if ((e = cache_entry(c, i)) != NULL && !(e->idlen == idlen && memcmp(e->id, id, idlen) == 0))
				e = NULL;
	}
	if (e != NULL) {
		memcpy(body, e->body, e->len);
		*len = e->len;
		return true;
	}
	return false;
}

static void
cache_add(struct ri_tree_cache *c, const unsigned char *id, size_t idlen, const unsigned char h[RI_HASH_LEN],
    const unsigned char *body, size_t len)
{
	struct ri_tree_entry *e;
	unsigned i;

	if (c == NULL)
		return;
	/* a cache that cannot have its pool is only slower */
	if (c->pool == NULL && (c->pool = malloc(RI_TREE_CACHE * sizeof *c->pool)) == NULL)
		return;
	i = cache_slot(h);
	if (c->slot[i] == 0)
		c->slot[i] = (unsigned short)(++c->used);       /* at most one entry a slot */
	e = &c->pool[c->slot[i] - 1];
	e->gen = c->gen + 1;
	memcpy(e->hash, h, RI_HASH_LEN);
	memcpy(e->id, id, idlen);
	e->idlen = idlen;
	memcpy(e->body, body, len);
	e->len = len;
}

/* Read the node at (d, key's prefix) that its parent names by `want`:
 * present, well formed, and hashing to exactly `want`. */
static int
read_node(const struct ri_tree_io *io, const unsigned char key[RI_SCOPE_LEN], int d,
    const unsigned char want[RI_HASH_LEN], unsigned char body[RI_NODE_MAX], size_t *len, char *why, size_t n)
{
	unsigned char id[RI_NODE_ID_MAX], h[RI_HASH_LEN];
	size_t idlen = ri_node_id(io->shard, key, d, id);
	int rc;

	/* verified, or written, at this id: the body its parent names (not
	 * under the negative control below: the cache only ever holds
	 * verified nodes) */
	if (!RI_NC(RI_NC_NO_ABSENCE_PROOF) && cache_find(io->cache, id, idlen, want, body, len))
		return RI_ST_OK;
	rc = io->get(io->ctx, id, idlen, body, len);
	if (RI_NC(RI_NC_NO_ABSENCE_PROOF)) {
		/* negative control: a node that is not there is an empty subtree,
		 * and no node's hash is checked against its parent's */
		if (rc == RI_ST_NOT_KNOWN)
			return RI_ST_NOT_KNOWN;
		if (rc == RI_ST_OK && !body_ok(body, *len))
			rc = RI_ST_NOT_KNOWN;
		return rc;
	}
	if (rc == RI_ST_NOT_KNOWN) {
		snprintf(why, n, "a node of the scope heads' tree (depth %d) is missing (a head row deleted)", d);
		return RI_ST_INTEGRITY;
	}
	if (rc != RI_ST_OK)
		return rc;
	node_hash(body, *len, h);
	if (!body_ok(body, *len) || !ri_eq32(h, want)) {
		snprintf(why, n, "a node of the scope heads' tree (depth %d) is not the one its parent names"
		    " (a head altered, replaced or rolled back)", d);
		return RI_ST_INTEGRITY;
	}
	if (body[0] == NODE_L && !leaf_prefix_ok(body, key, d)) {
		snprintf(why, n, "a head of the scope heads' tree (depth %d) sits under another key's prefix", d);
		return RI_ST_INTEGRITY;
	}
	cache_add(io->cache, id, idlen, h, body, *len);
	return RI_ST_OK;
}

int
ri_tree_get(const struct ri_tree_io *io, const unsigned char root[RI_HASH_LEN],
    const unsigned char key[RI_SCOPE_LEN], bool *present, struct ri_leaf *leaf, char *why, size_t n)
{
	unsigned char body[RI_NODE_MAX], want[RI_HASH_LEN];
	size_t len;
	int rc;

	*present = false;
	memset(leaf, 0, sizeof *leaf);
	memcpy(want, root, RI_HASH_LEN);
	for (int d = 0; d <= 64; d++) {
		if (is_empty(want))
			return RI_ST_OK;        /* an empty slot its verified parent names */
		if ((rc = read_node(io, key, d, want, body, &len, why, n)) != RI_ST_OK)
			return rc == RI_ST_NOT_KNOWN ? RI_ST_OK : rc;
		if (body[0] == NODE_L) {
			if (memcmp(body + 1, key, RI_SCOPE_LEN) == 0) {
				*present = true;
				leaf_of(body, leaf);
			}
			return RI_ST_OK;        /* or a verified leaf holding another key */
		}
		if (d == 64)
			break;
		memcpy(want, child_of(body, nibble(key, d)), RI_HASH_LEN);
	}
	snprintf(why, n, "the scope heads' tree is deeper than its keys");
	return RI_ST_INTEGRITY;
}

static int
put_node(const struct ri_tree_io *io, const unsigned char key[RI_SCOPE_LEN], int d, const unsigned char *body,
    size_t len, unsigned char h[RI_HASH_LEN])
{
	unsigned char id[RI_NODE_ID_MAX];
	size_t idlen = ri_node_id(io->shard, key, d, id);
	int rc;

	node_hash(body, len, h);
	if ((rc = io->put(io->ctx, id, idlen, body, len)) == RI_ST_OK)
		cache_add(io->cache, id, idlen, h, body, len);
	return rc;
}

int
ri_tree_put(const struct ri_tree_io *io, unsigned char root[RI_HASH_LEN],
    const unsigned char key[RI_SCOPE_LEN], const struct ri_leaf *leaf, char *why, size_t n)
{
	unsigned char path[65][RI_NODE_MAX], body[RI_NODE_MAX], want[RI_HASH_LEN], h[RI_HASH_LEN];
	unsigned char lb[RI_LEAF_LEN];
	size_t plen[65], len;
	int d, rc;

	memcpy(want, root, RI_HASH_LEN);
	for (d = 0;; d++) {
		if (d > 64) {
			snprintf(why, n, "the scope heads' tree is deeper than its keys");
			return RI_ST_INTEGRITY;
		}
		if (is_empty(want)) {
			rc = put_node(io, key, d, lb, leaf_body(key, leaf, lb), h);
			break;
		}
		rc = read_node(io, key, d, want, body, &len, why, n);
		if (rc == RI_ST_NOT_KNOWN) {    /* negative control builds only */
			rc = put_node(io, key, d, lb, leaf_body(key, leaf, lb), h);
			break;
		}
		if (rc != RI_ST_OK)
			return rc;
		if (body[0] == NODE_L) {
			if (memcmp(body + 1, key, RI_SCOPE_LEN) == 0) {
				rc = put_node(io, key, d, lb, leaf_body(key, leaf, lb), h);
				break;
			}
			/* split: both leaves go below the first nibble they differ at */
			const unsigned char *other = body + 1;
			int e = d;
			while (e < 63 && nibble(key, e) == nibble(other, e))
				e++;
			unsigned char ho[RI_HASH_LEN], hn[RI_HASH_LEN], ib[RI_NODE_MAX];
			size_t il = 3;
			if ((rc = put_node(io, other, e + 1, body, len, ho)) != RI_ST_OK ||
			    (rc = put_node(io, key, e + 1, lb, leaf_body(key, leaf, lb), hn)) != RI_ST_OK)
				return rc;
			memset(ib, 0, 3);
			ib[0] = NODE_I;
			child_set(ib, &il, nibble(key, e), hn);
			child_set(ib, &il, nibble(other, e), ho);
			if ((rc = put_node(io, key, e, ib, il, h)) != RI_ST_OK)
				return rc;
			for (int j = e - 1; j >= d; j--) {
				il = 3;
				memset(ib, 0, 3);
				ib[0] = NODE_I;
				child_set(ib, &il, nibble(key, j), h);
				if ((rc = put_node(io, key, j, ib, il, h)) != RI_ST_OK)
					return rc;
			}
			break;
		}
		memcpy(path[d], body, len);
		plen[d] = len;
		memcpy(want, child_of(body, nibble(key, d)), RI_HASH_LEN);
	}
	if (rc != RI_ST_OK)
		return rc;
	/* back up to the root */
	for (int j = d - 1; j >= 0; j--) {
		child_set(path[j], &plen[j], nibble(key, j), h);
		if ((rc = put_node(io, key, j, path[j], plen[j], h)) != RI_ST_OK)
			return rc;
	}
	memcpy(root, h, RI_HASH_LEN);
	return RI_ST_OK;
}

static int
walk(const struct ri_tree_io *io, unsigned char prefix[RI_SCOPE_LEN], int d, const unsigned char want[RI_HASH_LEN],
    ri_leaf_fn each, void *arg, char *why, size_t n)
{
	unsigned char body[RI_NODE_MAX];
	size_t len;
	int rc;

	if (is_empty(want))
		return RI_ST_OK;
	if (d > 64) {
		snprintf(why, n, "the scope heads' tree is deeper than its keys");
		return RI_ST_INTEGRITY;
	}
	if ((rc = read_node(io, prefix, d, want, body, &len, why, n)) != RI_ST_OK)
		return rc == RI_ST_NOT_KNOWN ? RI_ST_OK : rc;
	if (body[0] == NODE_L) {
		struct ri_leaf l;
		leaf_of(body, &l);
		return each(body + 1, &l, arg) ? -1 : RI_ST_OK;
	}
	for (int c = 0; c < 16; c++) {
		const unsigned char *ch = child_of(body, c);
		if (is_empty(ch))
			continue;
		if (d == 64) {
			snprintf(why, n, "the scope heads' tree is deeper than its keys");
			return RI_ST_INTEGRITY;
		}
		unsigned char save = prefix[d / 2], want2[RI_HASH_LEN];
		memcpy(want2, ch, RI_HASH_LEN);
		prefix[d / 2] = d % 2 == 0 ? (unsigned char)(c << 4) : (unsigned char)((save & 0xf0) | c);
		rc = walk(io, prefix, d + 1, want2, each, arg, why, n);
		prefix[d / 2] = save;
		if (rc != RI_ST_OK)
			return rc;
	}
	return RI_ST_OK;
}

int
ri_tree_walk(const struct ri_tree_io *io, const unsigned char root[RI_HASH_LEN], ri_leaf_fn each, void *arg,
    char *why, size_t n)
{
	unsigned char prefix[RI_SCOPE_LEN] = { 0 };
	int rc = walk(io, prefix, 0, root, each, arg, why, n);

	return rc == -1 ? RI_ST_OK : rc;
}

/* ---- the journal head ---- */

/* The head's own fields, in both formats' order, then the MAC: format 4
 * binds the shard count, the boundary and the shard before them. */
static void
jhead_fields(ri_hmac_state *st, const struct ri_jhead *h, const unsigned char last_hash[RI_HASH_LEN],
    unsigned char out[RI_HASH_LEN])
{
	mac_i64(st, h->last_seq);
	ri_hmac_update(st, last_hash, RI_HASH_LEN);
	ri_hmac_update(st, h->root, RI_HASH_LEN);
	mac_i64(st, h->open_count);
	ri_hmac_update(st, h->open_acc, RI_HASH_LEN);
	mac_i64(st, h->sealed_seq);
	mac_i64(st, h->grants);
	ri_hmac_final(st, out);
}

void
ri_jhead_mac(const unsigned char *key, size_t keylen, const unsigned char instance[RI_INSTANCE_LEN],
    int shards, int64_t boundary, const struct ri_jhead *h, const unsigned char last_hash[RI_HASH_LEN],
    unsigned char out[RI_HASH_LEN])
{
	ri_hmac_state st;

	mac_begin(&st, key, keylen, "ri journal head 4", instance);
	mac_i64(&st, shards);
	mac_i64(&st, boundary);
	mac_i64(&st, h->shard);
	jhead_fields(&st, h, last_hash, out);
}

void
ri_jhead_mac_v3(const unsigned char *key, size_t keylen, const unsigned char instance[RI_INSTANCE_LEN],
    const struct ri_jhead *h, const unsigned char last_hash[RI_HASH_LEN], unsigned char out[RI_HASH_LEN])
{
	ri_hmac_state st;

	mac_begin(&st, key, keylen, "ri journal head 3", instance);
	jhead_fields(&st, h, last_hash, out);
}

void
ri_open_elem(const char *invocation_id, int64_t seq, const char *kind, const char *act_key,
    const char *event_id, int64_t recorded_at, unsigned char out[RI_HASH_LEN])
{
	ri_sha256_state st;
	unsigned char b[8];

	ri_sha256_init(&st);
	ri_sha256_update(&st, (const unsigned char *)"ri open intent", 15);
	scope_add(&st, invocation_id);
	be64(b, (uint64_t)seq);
	ri_sha256_update(&st, b, 8);
	scope_add(&st, kind);
	scope_add(&st, act_key);
	scope_add(&st, event_id);
	be64(b, (uint64_t)recorded_at);
	ri_sha256_update(&st, b, 8);
	ri_sha256_final(&st, out);
}

void
ri_acc_xor(unsigned char acc[RI_HASH_LEN], const unsigned char elem[RI_HASH_LEN])
{
	for (size_t i = 0; i < RI_HASH_LEN; i++)
		acc[i] ^= elem[i];
}

/* ---- side tables ---- */

void
ri_lease_mac(const unsigned char *key, size_t keylen, const unsigned char instance[RI_INSTANCE_LEN],
    const char *kind, const char *act_key, const char *holder, int64_t expires_at, int64_t token,
    unsigned char out[RI_HASH_LEN])
{
	ri_hmac_state st;

	mac_begin(&st, key, keylen, "ri lease", instance);
	mac_str(&st, kind);
	mac_str(&st, act_key);
	mac_str(&st, holder);
	mac_i64(&st, expires_at);
	mac_i64(&st, token);
	ri_hmac_final(&st, out);
}

void
ri_mark_mac(const unsigned char *key, size_t keylen, const unsigned char instance[RI_INSTANCE_LEN],
    const char *name, int64_t seq, unsigned char out[RI_HASH_LEN])
{
	ri_hmac_state st;

	mac_begin(&st, key, keylen, "ri mark", instance);
	mac_str(&st, name);
	mac_i64(&st, seq);
	ri_hmac_final(&st, out);
}

void
ri_actor_mac(const unsigned char *key, size_t keylen, const unsigned char instance[RI_INSTANCE_LEN],
    const char *actor, int service, const unsigned char cred_hash[32], int64_t created_at,
    int64_t revoked_at, int64_t reg_seq, unsigned char out[RI_HASH_LEN])
{
	ri_hmac_state st;

	mac_begin(&st, key, keylen, "ri actor", instance);
	mac_str(&st, actor);
	mac_i64(&st, service);
	ri_hmac_update(&st, cred_hash, 32);
	mac_i64(&st, created_at);
	mac_i64(&st, revoked_at);
	mac_i64(&st, reg_seq);
	ri_hmac_final(&st, out);
}

void
ri_findings_key_derive(const unsigned char *key, size_t keylen, unsigned char out[RI_HASH_LEN])
{
	static const char tag[] = "ri findings key";

	ri_mac(key, keylen, tag, sizeof tag, out);
}

/* ---- shards (journal format 4; docs/SHARDS.md) ------------------------------ */

void
ri_shard_key_derive(const unsigned char *key, size_t keylen, unsigned char out[RI_HASH_LEN])
{
	static const char tag[] = "ri shard key";

	ri_mac(key, keylen, tag, sizeof tag, out);
}

int
ri_shard_of(const unsigned char shard_key[RI_HASH_LEN], const unsigned char act[RI_SCOPE_LEN], int shards)
{
	unsigned char m[RI_HASH_LEN];
	uint32_t v;

	if (shards <= 1)
		return 0;
	ri_mac(shard_key, RI_HASH_LEN, act, RI_SCOPE_LEN, m);
	v = (uint32_t)m[0] << 24 | (uint32_t)m[1] << 16 | (uint32_t)m[2] << 8 | m[3];
	return (int)(v % (uint32_t)shards);
}

static void
shards_leaf(int shard, const struct ri_shard_head *h, unsigned char out[RI_HASH_LEN])
{
	ri_sha256_state st;
	unsigned char b[1 + 4 + 8];
	uint64_t seq = (uint64_t)h->last_seq;

	b[0] = 0x00;
	for (int i = 0; i < 4; i++)
		b[1 + i] = (unsigned char)((uint32_t)shard >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		b[5 + i] = (unsigned char)(seq >> (56 - 8 * i));
	ri_sha256_init(&st);
	ri_sha256_update(&st, b, sizeof b);
	ri_sha256_update(&st, h->hash, RI_HASH_LEN);
	ri_sha256_final(&st, out);
}

/* The tree hash of shards [lo, lo + n): n >= 1, recursion depth log2(n). */
static void
shards_mth(const struct ri_shard_head *v, int lo, int n, unsigned char out[RI_HASH_LEN])
{
	unsigned char l[RI_HASH_LEN], r[RI_HASH_LEN], tag = 0x01;
	ri_sha256_state st;
	int k = 1;

	if (n == 1) {
		shards_leaf(lo, &v[lo], out);
		return;
	}
	while (k * 2 < n)
		k *= 2;
	shards_mth(v, lo, k, l);
	shards_mth(v, lo + k, n - k, r);
	ri_sha256_init(&st);
	ri_sha256_update(&st, &tag, 1);
	ri_sha256_update(&st, l, RI_HASH_LEN);
	ri_sha256_update(&st, r, RI_HASH_LEN);
	ri_sha256_final(&st, out);
}

void
ri_shards_root(const struct ri_shard_head *v, int shards, unsigned char out[RI_HASH_LEN])
{
	shards_mth(v, 0, shards, out);
}
