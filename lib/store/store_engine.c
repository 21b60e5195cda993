/*
 * store_engine.c -- the store's protocol steps written once, over the
 * backend primitives of store_engine.h, and the frees of store.h's own
 * types: the protocol above and each backend (store_sqlite.c, store_pg.c)
 * call this file, never one backend's.
 */
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "util/integrity.h"
#include "util/nc.h"
#include "util/util.h"
#include "store/store_engine.h"

const char *const ri_eng_row_keys_sql[] = {
	[RI_ROWS_LEASES] = "SELECT kind, act_key FROM leases",
	[RI_ROWS_ACTORS] = "SELECT actor_ref FROM actors",
	[RI_ROWS_MARKS] = "SELECT name FROM marks",
	[RI_ROWS_ACTORS_LISTED] = "SELECT actor_ref FROM actors ORDER BY created_at, actor_ref",
};

int
ri_eng_row_keys_cols(enum ri_rows which)
{
	return which == RI_ROWS_LEASES ? 2 : 1;
}

/* ---- what a caller of store.h frees --------------------------------------- */

void
ri_record_clear(struct ri_record *r)
{
	free(r->action_ref);
	free(r->kind);
	free(r->act_key);
	free(r->invocation_id);
	free(r->actor_ref);
	json_decref(r->payload);
	memset(r, 0, sizeof *r);
}

void
ri_records_clear(struct ri_records *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		ri_record_clear(&rs->v[i]);
	free(rs->v);
	memset(rs, 0, sizeof *rs);
}

void
ri_open_intents_free(struct ri_open_intent *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].kind);
		free(v[i].act_key);
		free(v[i].invocation_id);
		free(v[i].event_id);
	}
	free(v);
}

void
ri_actors_free(struct ri_actor *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].actor_ref);
	free(v);
}

void
ri_strings_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int
ri_store_shards(struct ri_store *st)
{
	return RI_ENG_CORE(st)->shards;
}

/* ---- the backend joins the engine ----------------------------------------- */

void
ri_eng_attach(struct ri_st_core *c, const struct ri_backend *be, void *bk, struct ri_tree_cache *nodes)
{
	c->be = be;
	c->bk = bk;
	c->nodes = nodes;
}

/* ---- the journal head, the tree of scope heads -------------------------- */

int
ri_eng_hash_at(struct ri_st_core *c, int64_t seq, unsigned char out[RI_HASH_LEN])
{
	int rc;

	if (seq == 0) {
		memcpy(out, c->genesis, RI_HASH_LEN);
		return RI_ST_OK;
	}
	if ((rc = c->be->record_hash(c->bk, seq, out)) == RI_ST_NOT_KNOWN)
		return ri_st_fail(c, RI_ST_INTEGRITY, seq, NULL,
		    "journal integrity: record seq %lld is missing or has no hash (a deleted row)", (long long)seq);
	return rc;
}

int
ri_eng_shard_hash_at(struct ri_st_core *c, int shard, int64_t seq, unsigned char out[RI_HASH_LEN])
{
	if (seq == 0) {
		ri_core_shard_genesis(c, shard, out);
		return RI_ST_OK;
	}
	return ri_eng_hash_at(c, seq, out);
}

int
ri_eng_link_hash(struct ri_st_core *c, int shard, int64_t seq, unsigned char out[RI_HASH_LEN])
{
	int64_t before = 0;
	int rc;

	if (c->shards <= 1)
		return ri_eng_hash_at(c, seq - 1, out);
	if ((rc = c->be->shard_prev(c->bk, shard, seq, &before, out)) == RI_ST_NOT_KNOWN) {
		ri_core_shard_genesis(c, shard, out);
		return RI_ST_OK;
	}
	return rc;
}

int
ri_eng_hash_at_cb(void *core, int64_t seq, unsigned char out[RI_HASH_LEN])
{
	return ri_eng_hash_at(core, seq, out);
}

int
ri_eng_link_hash_cb(void *core, int shard, int64_t seq, unsigned char out[RI_HASH_LEN])
{
	return ri_eng_link_hash(core, shard, seq, out);
}

/* A record read is in its act's shard, the one its header binds: a row
 * copied into another shard's chain would verify there by its MAC, but
 * that shard's tree is not where its act is proved (docs/SHARDS.md). */
int
ri_eng_shard_judge(struct ri_st_core *c, const struct ri_record *r, int shard)
{
	if (shard < 0 || shard >= c->shards || (c->key != NULL && r->kind != NULL && ri_eng_shard(c, r->kind,
	    r->act_key != NULL ? r->act_key : "") != shard))
		return ri_st_fail(c, RI_ST_INTEGRITY, r->seq, r->event_id, "journal integrity: record seq %lld (%s)"
		    " is in shard %d, not its act's", (long long)r->seq, r->event_id, shard);
	return RI_ST_OK;
}

static void
tree_io(const struct ri_st_core *c, int shard, struct ri_tree_io *io)
{
	io->ctx = c->bk;
	io->get = c->be->node_get;
	io->put = c->be->node_put;
	io->cache = c->nodes;
	io->shard = shard;
}

int
ri_eng_tree_get(struct ri_st_core *c, const struct ri_jhead *jh, const unsigned char key[RI_SCOPE_LEN], bool *present,
    struct ri_leaf *leaf)
{
	struct ri_tree_io io;
	char why[256] = "";
	int rc;

	tree_io(c, jh->shard, &io);
	rc = ri_tree_get(&io, jh->root, key, present, leaf, why, sizeof why);
	if (rc == RI_ST_INTEGRITY && why[0] != '\0')
		return ri_st_fail(c, rc, 0, NULL, "journal integrity: %s", why);
	return rc;
}

int
ri_eng_tree_get_cb(void *core, const struct ri_jhead *jh, const unsigned char key[RI_SCOPE_LEN], bool *present,
    struct ri_leaf *leaf)
{
	return ri_eng_tree_get(core, jh, key, present, leaf);
}

int
ri_eng_tree_put(struct ri_st_core *c, struct ri_jhead *jh, const unsigned char key[RI_SCOPE_LEN], int64_t seq,
    const unsigned char hash[RI_HASH_LEN])
{
	struct ri_tree_io io;
	struct ri_leaf leaf = { .last_seq = seq };
	char why[256] = "";
	int rc;

	tree_io(c, jh->shard, &io);
	memcpy(leaf.hash, hash, RI_HASH_LEN);
	rc = ri_tree_put(&io, jh->root, key, &leaf, why, sizeof why);
	if (rc == RI_ST_INTEGRITY && why[0] != '\0')
		return ri_st_fail(c, rc, 0, NULL, "journal integrity: %s", why);
	return rc;
}

/*
 * The verified head of a scope under a verified journal head: the tree
 * proves it present -- its leaf agrees with the newest record the rows
 * hold, and that record's hash is the one the leaf bound -- or proves it
 * absent, and then no row may claim it.  Without a key only the rows are
 * consulted.
 */
int
ri_eng_scope_head(struct ri_st_core *c, const struct ri_jhead *jh, const struct scope *sc, const char *a,
    const char *b, int64_t *last)
{
	struct ri_leaf leaf;
	unsigned char h[RI_HASH_LEN];
	enum ri_hashed hashed = RI_HASH_UNREAD;
	int64_t rows = 0;
	bool present;
	int rc;

	if (sc->type == SCOPE_ALL) {
		*last = jh->last_seq;
		return RI_ST_OK;
	}
	if ((rc = c->be->scope_newest(c->bk, sc, a, b, &rows, h, &hashed)) != RI_ST_OK)
		return rc;
	if (c->key == NULL) {
		*last = rows;
		return RI_ST_OK;
	}
	if ((rc = ri_eng_tree_get(c, jh, sc->key, &present, &leaf)) != RI_ST_OK) {
		if (rc == RI_ST_INTEGRITY)      /* name the scope's newest record, or the journal's */
			c->err.seq = rows != 0 ? rows : jh->last_seq;
		return rc;
	}
	/* the newest row's hash, unless it came with its seq (rows 0: the
	 * genesis, no read) */
	if (hashed == RI_HASH_UNREAD && (rc = ri_eng_hash_at(c, rows, h)) != RI_ST_OK)
		return rc;
	return ri_scope_head_judge(c, sc, rows, hashed != RI_HASH_NONE ? h : NULL, present, &leaf, last);
}

/* The same, with the journal's own head verified first (the root hangs
 * off it): an empty answer from a journal that is not ours, truncated, or
 * hiding the scope is never an absence. */
static int head_get_across(struct ri_st_core *c, const struct scope *sc, const char *a, int64_t *last);

/* The shard of the record at seq: its act's (the row's kind and act key,
 * read unverified -- routing only; what the row says is verified where it
 * is read).  A row not shaped as ri writes it is an integrity failure. */
int
ri_eng_record_shard(struct ri_st_core *c, int64_t seq, int *shard)
{
	char *kind = NULL, *act_key = NULL, *inv = NULL;
	unsigned char h[RI_HASH_LEN];
	int rc = c->be->leaf_row(c->bk, seq, &kind, &act_key, &inv, h);

	*shard = 0;
	if (rc == RI_ST_OK)
		*shard = ri_eng_shard(c, kind, act_key);
	free(kind);
	free(act_key);
	free(inv);
	if (rc == RI_ST_NOT_KNOWN)
		return ri_st_fail(c, RI_ST_INTEGRITY, seq, NULL, "journal integrity: record seq %lld is missing or"
		    " malformed", (long long)seq);
	return rc;
}

int
ri_eng_head_get(struct ri_st_core *c, const struct scope *sc, const char *a, const char *b, int64_t *last)
{
	struct ri_jhead jh;
	unsigned char lh[RI_HASH_LEN];
	int rc;

	if (c->shards > 1 && sc->type != SCOPE_ACT)
		return head_get_across(c, sc, a, last);
	if ((rc = c->be->jhead_get(c->bk, ri_eng_scope_shard(c, sc, a, b), &jh, lh)) != RI_ST_OK)
		return rc;
	return ri_eng_scope_head(c, &jh, sc, a, b, last);
}

/*
 * More than one shard (docs/SHARDS.md, authenticated absence): the
 * journal's head is the highest of every shard's, each verified; an
 * invocation's scope is in its act's shard, which its newest row names --
 * a row that lies about its act fails its MAC when read, and a scope
 * with no row must be absent from every shard's tree, so rows deleted
 * from the shard that holds it never read as an absence.
 */
static int
head_get_across(struct ri_st_core *c, const struct scope *sc, const char *a, int64_t *last)
{
	struct ri_jhead jh;
	unsigned char lh[RI_HASH_LEN], h[RI_HASH_LEN];
	enum ri_hashed hashed = RI_HASH_UNREAD;
	int64_t rows = 0;
	int rc;

	*last = 0;
	if (sc->type == SCOPE_INV) {
		int shard;
		if ((rc = c->be->scope_newest(c->bk, sc, a, NULL, &rows, h, &hashed)) != RI_ST_OK)
			return rc;
		if (rows > 0) {
			if ((rc = ri_eng_record_shard(c, rows, &shard)) != RI_ST_OK ||
			    (rc = c->be->jhead_get(c->bk, shard, &jh, lh)) != RI_ST_OK)
				return rc;
			return ri_eng_scope_head(c, &jh, sc, a, NULL, last);
		}
	}
	for (int s = 0; s < c->shards; s++) {
		int64_t here;
		if ((rc = c->be->jhead_get(c->bk, s, &jh, lh)) != RI_ST_OK ||
		    (rc = ri_eng_scope_head(c, &jh, sc, a, NULL, &here)) != RI_ST_OK)
			return rc;
		if (here > *last)
			*last = here;
	}
	return RI_ST_OK;
}

/* ---- keys ------------------------------------------------------------------ */

void
ri_eng_derive_keys(struct ri_st_core *c)
{
	unsigned char full[RI_HASH_LEN];
	static const char tag[] = "ri credential hash key";

	ri_mac(c->key, c->keylen, tag, sizeof tag, full);
	memcpy(c->cred_key, full, sizeof c->cred_key);
	sodium_memzero(full, sizeof full);
	ri_shard_key_derive(c->key, c->keylen, c->shard_key);
}

/* ---- shards (docs/SHARDS.md) ---------------------------------------------- */

/* The one place an act is given its shard: the substrate's own records
 * (kind audit: seals, the actor registry, bindings, restores' and
 * migrations' records) live in shard 0; an act's in the shard its scope
 * key is sent to by the keyed choice (heads.h ri_shard_of). */
int
ri_eng_shard(const struct ri_st_core *c, const char *kind, const char *act_key)
{
	return ri_st_shard_of(c, kind, act_key);
}

/* A scope's shard: an act's (above); an invocation's is its act's, which
 * one shard holds -- with one shard, shard 0. */
int
ri_eng_scope_shard(const struct ri_st_core *c, const struct scope *sc, const char *a, const char *b)
{
	return sc->type == SCOPE_ACT ? ri_eng_shard(c, a, b) : 0;
}

/* ---- the actor registry (Actor Identity) -------------------------------- */

int
ri_eng_actor_get(struct ri_st_core *c, const struct ri_jhead *jh, const char *actor, struct ri_actor_row *row,
    bool *exists)
{
	enum ri_found found = RI_ROW_NONE;
	struct scope sc;
	struct ri_leaf leaf = { 0 };
	bool present;
	int rc;

	*exists = false;
	if ((rc = c->be->actor_read(c->bk, actor, row, &found)) != RI_ST_OK)
		return rc;
	if (found == RI_ROW_MALFORMED)
		return ri_st_fail(c, RI_ST_INTEGRITY, 0, NULL, "journal integrity: actor %s is malformed", actor);
	*exists = found == RI_ROW_OK;
	if (c->key == NULL)
		return RI_ST_OK;
	/* the registry is the instance's, in shard 0: a writer of another
	 * shard reads shard 0's head, never locks it (docs/SHARDS.md, lock
	 * order) */
	struct ri_jhead j0;
	if (jh->shard != RI_SHARD_INSTANCE) {
		unsigned char lh0[RI_HASH_LEN];
		if ((rc = c->be->jhead_get(c->bk, RI_SHARD_INSTANCE, &j0, lh0)) != RI_ST_OK)
			return rc;
		jh = &j0;
	}
	scope_make(&sc, SCOPE_ACT, "audit", actor);
	if ((c->be->path_hint != NULL && (rc = c->be->path_hint(c->bk, sc.key)) != RI_ST_OK) ||
	    (rc = ri_eng_tree_get(c, jh, sc.key, &present, &leaf)) != RI_ST_OK)
		return rc;
	return ri_actor_row_judge(c, actor, *exists ? row : NULL, present, leaf.last_seq);
}

int
ri_eng_check_credential(struct ri_st_core *c, const struct ri_jhead *jh, const char *actor, const char *cred,
    ri_ms now, struct ri_actor *who)
{
	struct ri_actor_row row;
	bool exists;
	int rc;

	if ((rc = ri_eng_actor_get(c, jh, actor, &row, &exists)) != RI_ST_OK)
		return rc == RI_ST_UNAVAILABLE ? ri_st_recode(c, RI_ST_STEP2) : rc;
	return ri_credential_judge(c, actor, exists ? &row : NULL, cred, now, who);
}

/* ---- leases and the journal fence --------------------------------------- */

int
ri_eng_lease_get(struct ri_st_core *c, const char *kind, const char *act_key, bool lock, struct ri_lease_row *l,
    bool *exists)
{
	enum ri_found found = RI_ROW_NONE;
	int rc;

	*exists = false;
	memset(l, 0, sizeof *l);
	if ((rc = c->be->lease_read(c->bk, kind, act_key, lock, l, &found)) != RI_ST_OK || found == RI_ROW_NONE)
		return rc;
	if (found == RI_ROW_MALFORMED)
		return ri_st_fail(c, RI_ST_INTEGRITY, 0, NULL, "journal integrity: the lease of (%s, %s) is malformed",
		    kind, act_key);
	*exists = true;
	return ri_lease_row_judge(c, kind, act_key, l);
}

int
ri_eng_lease_put(struct ri_st_core *c, const char *kind, const char *act_key, const char *holder, ri_ms expires,
    int64_t token)
{
	unsigned char mac[RI_HASH_LEN];

	ri_lease_mac(c->key, c->keylen, c->instance_id, kind, act_key, holder, expires, token, mac);
	return c->be->lease_write(c->bk, kind, act_key, holder, expires, token, mac);
}

/* Every shard's head (c->shards of them, the caller frees both): read
 * in the read snapshot open, or -- a cut across shards, a seal's, a
 * rebuild's, a purge's -- locked in one write transaction, shard 0's
 * first (write_head begins it), then each other in ascending order, as
 * no writer of one shard ever waits for another's (docs/SHARDS.md, lock
 * order). */

void
ri_eng_heads_free(struct ri_eng_heads *hs)
{
	free(hs->jh);
	free(hs->lh);
	hs->jh = NULL;
	hs->lh = NULL;
}

static int
eng_read_all(struct ri_st_core *c, struct ri_eng_heads *hs)
{
	int rc = RI_ST_OK;

	hs->jh = ri_xcalloc((size_t)c->shards, sizeof *hs->jh);
	hs->lh = ri_xcalloc((size_t)c->shards, sizeof *hs->lh);
	for (int s = 0; s < c->shards && rc == RI_ST_OK; s++)
		rc = c->be->jhead_get(c->bk, s, &hs->jh[s], hs->lh[s]);
	if (rc != RI_ST_OK)
		ri_eng_heads_free(hs);
	return rc;
}

static int eng_write_head(struct ri_st_core *c, int shard, struct ri_jhead *jh, unsigned char lh[RI_HASH_LEN],
    ri_ms *now);

int
ri_eng_write_all(struct ri_st_core *c, struct ri_eng_heads *hs, ri_ms *now)
{
	int rc;

	hs->jh = ri_xcalloc((size_t)c->shards, sizeof *hs->jh);
	hs->lh = ri_xcalloc((size_t)c->shards, sizeof *hs->lh);
	if ((rc = eng_write_head(c, 0, &hs->jh[0], hs->lh[0], now)) == RI_ST_OK) {
		for (int s = 1; s < c->shards && rc == RI_ST_OK; s++)
			rc = c->be->head_also(c->bk, s, &hs->jh[s], hs->lh[s]);
		if (rc != RI_ST_OK)
			c->be->rollback(c->bk);
	}
	if (rc != RI_ST_OK)
		ri_eng_heads_free(hs);
	return rc;
}

/* Every shard's head written as moved (a cut's, inside its transaction). */
int
ri_eng_put_all(struct ri_st_core *c, struct ri_eng_heads *hs)
{
	int rc = RI_ST_OK;

	for (int s = 0; s < c->shards && rc == RI_ST_OK; s++)
		rc = c->be->jhead_put(c->bk, &hs->jh[s], hs->lh[s]);
	return rc;
}

/* A write of this handle begins: the lease row an earlier append saw
 * (c->seen) may be what this one changes, so it goes. */
static int
eng_write_head(struct ri_st_core *c, int shard, struct ri_jhead *jh, unsigned char lh[RI_HASH_LEN], ri_ms *now)
{
	/* negative control: open step 5.3 answered from a row this handle
	 * has since rewritten (test_store's "seen" case) */
	if (!RI_NC(RI_NC_SEEN_NOT_CLEARED))
		c->seen.valid = false;
	return c->be->write_head(c->bk, shard, jh, lh, now);
}

/* journal fence 1, Allowance 7-10: the writer still holds the act's lease
 * with one allowance to spare (the lease terminus), and the write's own
 * terminus, issue + journal_write_bound - allowance, has not passed.  The
 * lease row is verified first: a forged row never lets a write through. */
int
ri_eng_check_fence(struct ri_st_core *c, const char *kind, const char *act_key, const struct ri_fence *f, ri_ms now)
{
	struct ri_lease_row l;
	ri_ms until = f->issue + c->cfg->journal_write_bound - c->cfg->clock_offset_allowance;
	bool exists;
	int rc;

	if (c->be->fence_until != NULL && (rc = c->be->fence_until(c->bk, f, now, &until)) != RI_ST_OK)
		return rc;
	if ((rc = ri_eng_lease_get(c, kind, act_key, true, &l, &exists)) != RI_ST_OK)
		return rc == RI_ST_UNAVAILABLE ? ri_st_recode(c, RI_ST_STEP2) : rc;
	if ((rc = ri_fence_judge(c, exists ? &l : NULL, f, now, until)) != RI_ST_OK)
		return rc;
	/* kept for open step 5.3's read after the commit (ri_eng_remaining);
	 * c->seen.mono was taken before the write's clock was read */
	c->seen.valid = true;
	c->seen.landed = false;
	c->seen.exists = exists;
	c->seen.l = l;
	c->seen.now = now;
	ri_scope_act(kind, act_key, c->seen.scope);
	if (c->be->fence_armed != NULL)
		c->be->fence_armed(c->bk, kind, act_key, f, until);
	return RI_ST_OK;
}

/* ---- the open-intents index ---------------------------------------------- */

int
ri_eng_open_scan(struct ri_st_core *c, const struct ri_jhead *jh, const char *kind, const char *act_key,
    ri_ms aged_by, struct ri_open_intent **out, size_t *n)
{
	struct ri_open_scan os = { .kind = kind, .act_key = act_key, .aged_by = aged_by, .out = out, .n = n };
	int rc;

	ri_open_scan_begin(&os, c);
	if ((rc = c->be->open_rows(c->bk, &os)) != RI_ST_OK) {
		free(os.acc);
		free(os.count);
		return rc;
	}
	return ri_open_scan_end(c, &os, jh);
}

/* ---- the append ---------------------------------------------------------------- */

/* The open-intents index moves in the append's transaction, and its count
 * and accumulator in the journal head with it (heads.h). */
int
ri_eng_open_add(struct ri_st_core *c, struct ri_jhead *jh, const char *inv, int64_t seq, const char *kind,
    const char *act_key, const char *event_id, ri_ms recorded_at, bool first)
{
	unsigned char elem[RI_HASH_LEN];
	bool added = false;
	int rc = c->be->open_insert(c->bk, inv, seq, kind, act_key, event_id, recorded_at, first, &added);

	if (rc == RI_ST_OK && added) {
		ri_open_elem(inv, seq, kind, act_key, event_id, recorded_at, elem);
		ri_acc_xor(jh->open_acc, elem);
		jh->open_count++;
	}
	return rc;
}

/*
 * Append one record inside an open write transaction, under the journal
 * head jh the caller verified (and locked) in it (lh: the hash at
 * jh->last_seq).  The substrate stamps recorded_at (never earlier than the
 * record before it), mints the event and attestation ids, places retention
 * by the kind's fixed policy (journal 6), chains and MACs the record, moves
 * the heads of its act and invocation in the tree and the journal head
 * (one MAC over all of it).  A failure leaves the transaction to be rolled
 * back.
 */
int
ri_eng_append_locked(struct ri_st_core *c, struct ri_jhead *jh, const unsigned char lh[RI_HASH_LEN],
    const struct ri_append *a, int role, bool unplaced, ri_ms now, struct ri_appended *out)
{
	char kind[128], attestation[RI_ID_LEN + 1], *payload;
	struct scope act, inv;
	int64_t act_last = 0, inv_last = 0;
	unsigned char salt[RI_SALT_LEN], digest[RI_HASH_LEN], hash[RI_HASH_LEN], mac[RI_HASH_LEN];
	struct ri_header h;
	ri_ms recorded_at = now, retention;
	int rc;
	const char *act_key = a->act_key ? a->act_key : "";

	/* inside the critical section on both backends (SQLite's BEGIN
	 * IMMEDIATE, PostgreSQL's head row locked by write_head's round trip),
	 * held until COMMIT: a delay here stands for round trips under the
	 * lock (issue 43's measured ceiling, bench/09-pg-ceiling.sh); a die,
	 * for a host lost while holding it */
	ri_fault("append.section");
	if (ri_kind_of(a->action_ref, kind, sizeof kind) != 0)
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL, "malformed action ref");
	scope_make(&act, SCOPE_ACT, kind, act_key);
	if (a->invocation_id != NULL) {
		scope_make(&inv, SCOPE_INV, a->invocation_id, NULL);
		if (c->be->scopes_hint != NULL &&
		    (rc = c->be->scopes_hint(c->bk, act.key, kind, act_key, inv.key, a->invocation_id)) != RI_ST_OK)
			return rc;
	}
	/* a record lands in its act's shard, under that shard's head: never
	 * another's, whose tree would not prove its absence (docs/SHARDS.md) */
	if (ri_eng_shard(c, kind, act_key) != jh->shard)
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL, "a record of shard %d under shard %d's head",
		    ri_eng_shard(c, kind, act_key), jh->shard);
	if ((rc = ri_eng_scope_head(c, jh, &act, kind, act_key, &act_last)) != RI_ST_OK)
		return rc;
	if (a->invocation_id != NULL) {
		if ((rc = ri_eng_scope_head(c, jh, &inv, a->invocation_id, NULL, &inv_last)) != RI_ST_OK)
			return rc;
	}
	/* the seq: the shard's next with one shard; with more, the journal's
	 * allocator's, above every shard's (docs/SHARDS.md, one allocator) */
	int64_t seq = jh->last_seq + 1;
	ri_ms at = RI_NONE;
	if (c->shards > 1 && (rc = c->be->seq_next(c->bk, jh->shard, &seq, &at)) != RI_ST_OK)
		return rc;
	/* an allocator behind the shard's head (a sequence put back by a
	 * partial restore) would break the chain's seq order: refused, never
	 * written (step 2) */
	if (seq <= jh->last_seq)
		return ri_st_fail(c, RI_ST_STEP2, jh->last_seq, NULL, "the journal's sequence gave seq %lld, not above"
		    " shard %d's head (seq %lld): the allocator was put back (restore it above every record)",
		    (long long)seq, jh->shard, (long long)jh->last_seq);
	if (at != RI_NONE && at > recorded_at)
		recorded_at = at;
	if (seq > 1) {
		/* recorded_at never goes backwards, whatever the clock did: after
		 * the journal's record before this one, whichever shard's */
		ri_ms last_at;
		if ((rc = c->be->recorded_at_of(c->bk, seq - 1, &last_at)) != RI_ST_OK)
			return rc;
		if (last_at != RI_NONE && last_at > recorded_at)
			recorded_at = last_at;
	}
	if (strcmp(kind, "audit") == 0) {
		retention = INT64_MAX;          /* the substrate's own records are kept */
	} else {
		const struct ri_kind *k = ri_config_kind(c->cfg, kind);
		retention = k == NULL || unplaced ? RI_NONE : recorded_at + k->retention_period;
	}
	if (a->event_id != NULL)
		snprintf(out->event_id, sizeof out->event_id, "%s", a->event_id);
	else
		ri_mint_id("evt_", out->event_id);
	ri_mint_id("att_", attestation);
	payload = ri_json_canonical(a->data);
	randombytes_buf(salt, sizeof salt);
	ri_payload_digest(salt, payload, strlen(payload), digest);
	h = (struct ri_header){
		.instance_id = c->instance_id, .seq = seq, .event_id = out->event_id,
		.action_ref = a->action_ref, .kind = kind, .act_key = act_key,
		.invocation_id = a->invocation_id, .actor_ref = a->actor_ref,
		.attestation_id = attestation, .recorded_at = recorded_at,
		.retention_until = retention, .role = role, .act_prev = act_last,
		.inv_prev = a->invocation_id ? inv_last : 0, .payload_digest = digest, .shard = jh->shard,
	};
	/* the key never leaves the host: hash and MAC are computed here */
	ri_record_hash(lh, &h, hash);
	ri_mac(c->key, c->keylen, hash, RI_HASH_LEN, mac);
	rc = c->be->record_insert(c->bk, &h, payload, salt, hash, mac);
	free(payload);
	if (rc != RI_ST_OK)
		return rc;
	/* the heads of its scopes, then the journal's: one MAC binds them all */
	if ((rc = ri_eng_tree_put(c, jh, act.key, h.seq, hash)) != RI_ST_OK ||
	    (a->invocation_id && (rc = ri_eng_tree_put(c, jh, inv.key, h.seq, hash)) != RI_ST_OK))
		return rc == RI_ST_UNAVAILABLE ? ri_st_recode(c, RI_ST_STEP2) : rc;
	/* the derived index of open intents moves in the same transaction */
	if (role == RI_ROLE_INTENT && a->invocation_id != NULL)
		rc = ri_eng_open_add(c, jh, a->invocation_id, h.seq, kind, act_key, h.event_id, recorded_at, inv_last == 0);
	else if (ri_role_closing(role) && a->invocation_id != NULL)
		rc = c->be->open_remove(c->bk, jh, a->invocation_id);
	if (rc != RI_ST_OK)
		return rc == RI_ST_UNAVAILABLE ? ri_st_recode(c, RI_ST_STEP2) : rc;
	jh->last_seq = h.seq;
	if (strcmp(a->action_ref, "audit.sealed") == 0)
		jh->sealed_seq = h.seq;
	/* an accepted restore (ri-init --accept-restore) is a rollback: the
	 * fencing tokens granted in the lost stretch are unknown, so the grant
	 * counter jumps to the restore's instant in ms -- above every token
	 * granted before, short of more than one grant per ms on average */
	if (strcmp(a->action_ref, "audit.restored") == 0 && jh->grants < recorded_at)
		jh->grants = recorded_at;
	if ((rc = c->be->jhead_put(c->bk, jh, hash)) != RI_ST_OK)
		return rc == RI_ST_UNAVAILABLE ? ri_st_recode(c, RI_ST_STEP2) : rc;
	out->seq = h.seq;
	out->recorded_at = recorded_at;
	memcpy(out->hash, hash, RI_HASH_LEN);
	/* its witness line, added once the transaction commits (issue 39) */
	ri_st_witness_pend(c, &h, hash, a->data);
	return RI_ST_OK;
}

/* A substrate record (audit.*: actor "audit", no credential) inside the
 * caller's write transaction, under its head jh -- moved in this
 * transaction by what the caller did before (a purge's open_remove):
 * the append writes it through.  act_key: "" (the substrate's own act),
 * or the actor ref of a registry record (the actor's scope). */
int
ri_eng_append_substrate(struct ri_st_core *c, struct ri_jhead *jh, const unsigned char lh[RI_HASH_LEN],
    const char *action_ref, const char *act_key, json_t *data, ri_ms now, struct ri_appended *out)
{
	struct ri_append a = { .action_ref = action_ref, .act_key = act_key, .actor_ref = RI_SUBSTRATE_ACTOR,
		.data = data };

	return ri_eng_append_locked(c, jh, lh, &a, RI_ROLE_OTHER, false, now, out);
}

/*
 * record_action(action_ref, actor_ref, credential, data) -> event id, or
 * invalid-credential | invalid-request(cause) | recording-failure(step-2 |
 * step-3 | step-4) | a lost reply | fenced.  The fault points
 * "<tag>.before" and "<tag>.after" reach the arms nothing else reaches.
 * Step 2 is any failure before COMMIT (nothing landed).
 */
int
ri_eng_record_action(struct ri_store *st, const struct ri_append *a, struct ri_appended *out)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	const struct ri_config *cfg = c->cfg;
	char kind[128];
	enum ri_fault_action fa = RI_FA_NONE;
	struct ri_jhead jh;
	unsigned char lh[RI_HASH_LEN];
	ri_ms now;
	int rc, role;

	memset(out, 0, sizeof *out);
	ri_st_err_clear(&c->err);
	if ((rc = ri_append_request_judge(c, a, kind, sizeof kind, &role, out)) != RI_ST_OK ||
	    (rc = ri_append_fault_before(c, a, &fa)) != RI_ST_OK)
		return rc;
	if (c->be->append_ahead != NULL)
		c->be->append_ahead(c->bk, a, kind);
	/* the journal head, verified inside the write transaction: nothing is
	 * appended to a journal that fails verification */
	int64_t mono = ri_mono_ms();
	int shard = ri_eng_shard(c, kind, a->act_key ? a->act_key : "");
	/* with shards, a change of the kind's bindings (audit.bound) is the
	 * instance's, shard 0's: both heads, shard 0's first (the lock order:
	 * ascending, docs/SHARDS.md) */
	struct ri_jhead j0;
	unsigned char lh0[RI_HASH_LEN];
	bool both = shard != RI_SHARD_INSTANCE && a->bound != NULL;
	if ((rc = both ? eng_write_head(c, RI_SHARD_INSTANCE, &j0, lh0, &now) :
	    eng_write_head(c, shard, &jh, lh, &now)) != RI_ST_OK)
		return rc == RI_ST_UNAVAILABLE || rc == RI_ST_READONLY ? ri_st_recode(c, RI_ST_STEP2) : rc;
	if (both && (rc = c->be->head_also(c->bk, shard, &jh, lh)) != RI_ST_OK)
		goto fail;
	/* Check 8.1.6 judges the actor at the record's recorded_at, which never
	 * goes backwards (ri_eng_append_locked): the credential is judged at
	 * that instant too, or a host whose clock lags the revocation lands a
	 * revoked actor's record after it (issue 41, lifecycle: actors
	 * revoked) */
	/* the registry the credential is judged against is shard 0's: its
	 * head read first, so the stamp's floor holds it (shard_stamps) */
	struct ri_jhead jreg;
	unsigned char lreg[RI_HASH_LEN];
	const struct ri_jhead *reg = &jh;
	if (c->shards > 1 && jh.shard != RI_SHARD_INSTANCE) {
		if (both)
			reg = &j0;
		else if ((rc = c->be->jhead_get(c->bk, RI_SHARD_INSTANCE, &jreg, lreg)) != RI_ST_OK)
			goto fail;
		else
			reg = &jreg;
	}
	ri_ms at = now;         /* negative control: the host's clock */
	/* the record this one will follow: its shard's newest with one shard
	 * (or with shard_stamps); with more, the journal's, whichever shard's
	 * (as append_locked stamps it) */
	int64_t before = jh.last_seq;
	if (c->shards > 1 && !c->be->shard_stamps && !RI_NC(RI_NC_CRED_AT_NOW)) {
		struct scope all;
		unsigned char bh[RI_HASH_LEN];
		enum ri_hashed hashed;
		scope_make(&all, SCOPE_ALL, NULL, NULL);
		if ((rc = c->be->scope_newest(c->bk, &all, NULL, NULL, &before, bh, &hashed)) != RI_ST_OK)
			goto fail;
	}
	/* (with shard_stamps the floor is every head the write read -- the
	 * registry's too -- even when its own shard has no record yet) */
	if (!RI_NC(RI_NC_CRED_AT_NOW) && (before > 0 || c->be->shard_stamps)) {
		ri_ms last_at;
		if ((rc = c->be->recorded_at_of(c->bk, before, &last_at)) != RI_ST_OK)
			goto fail;
		if (last_at != RI_NONE && last_at > at)
			at = last_at;
	}
	if ((rc = ri_eng_check_credential(c, reg, a->actor_ref, a->credential, at, NULL)) != RI_ST_OK)
		goto fail;
	/* negative control: the fence is never checked */
	if (!RI_NC(RI_NC_NO_JOURNAL_FENCE) && a->fence != NULL && cfg->journal_fence &&
	    (rc = ri_eng_check_fence(c, kind, a->act_key ? a->act_key : "", a->fence, now)) != RI_ST_OK)
		goto fail;
	if (a->bindings_guard && c->be->bindings_guard != NULL) {
		if ((rc = c->be->bindings_guard(c->bk, a)) != RI_ST_OK)
			goto fail;
	} else if (a->bindings_guard) {
		/* bindings are history (issue 41): another writer may have
		 * recorded the kind's bindings since this one decided what its
		 * record needs -- judged under the head lock, so the decision and
		 * the record are one */
		struct scope bsc;
		int64_t blast = 0;
		scope_make(&bsc, SCOPE_ACT, "audit", "bindings:");
		/* the bindings scope is shard 0's; a writer of another shard
		 * reads its head in the write transaction (one writer on
		 * SQLite: exact) */
		if (shard != RI_SHARD_INSTANCE && !both &&
		    (rc = c->be->jhead_get(c->bk, RI_SHARD_INSTANCE, &j0, lh0)) != RI_ST_OK)
			goto fail;
		if ((rc = ri_eng_scope_head(c, shard != RI_SHARD_INSTANCE ? &j0 : &jh, &bsc, "audit", "bindings:",
		    &blast)) != RI_ST_OK || (rc = ri_append_bindings_judge(c, a, blast)) != RI_ST_OK)
			goto fail;
	}
	if (a->bound != NULL) {
		/* the kind's bindings changed: recorded in the same transaction,
		 * just before the first record they judge (bindings.h) */
		struct ri_appended bout;
		if ((rc = ri_eng_append_substrate(c, both ? &j0 : &jh, both ? lh0 : lh, "audit.bound", "bindings:", a->bound,
		    now, &bout)) != RI_ST_OK)
			goto fail;
		memcpy(both ? lh0 : lh, bout.hash, RI_HASH_LEN);
	}
	if ((rc = ri_eng_append_locked(c, &jh, lh, a, role, fa == RI_FA_NORETENTION, now, out)) != RI_ST_OK)
		goto fail;
	c->seen.mono = mono;
	if ((rc = c->be->append_commit != NULL ? c->be->append_commit(c->bk, a, out) : c->be->commit(c->bk)) != RI_ST_OK) {
		c->seen.valid = false;
		return rc;
	}
	c->seen.landed = c->seen.valid;
	return ri_append_landed(c, a, fa, kind, out);
fail:
	c->seen.valid = false;
	c->be->rollback(c->bk);
	if (rc == RI_ST_UNAVAILABLE)
		rc = RI_ST_STEP2;
	return rc;
}

int
ri_eng_substrate(struct ri_store *st, const char *action_ref, json_t *data, struct ri_appended *out)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_jhead jh;
	unsigned char lh[RI_HASH_LEN];
	ri_ms now;
	int rc;

	memset(out, 0, sizeof *out);
	if (strncmp(action_ref, "audit.", 6) != 0)
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL, "a substrate record is audit.*");
	if ((rc = eng_write_head(c, RI_SHARD_INSTANCE, &jh, lh, &now)) != RI_ST_OK)
		return rc;
	if ((rc = ri_eng_append_substrate(c, &jh, lh, action_ref, "", data, now, out)) != RI_ST_OK) {
		c->be->rollback(c->bk);
		return rc;
	}
	return c->be->commit(c->bk);
}

/* The substrate's own records, n of them, in one transaction (store.h
 * ri_eng_append_substrate: a restore's, the sweep's audit.reconciled). */
/* The shard of the head an append is made under: its act's. */
static int
append_shard(const struct ri_st_core *c, const struct ri_append *a)
{
	char kind[128];

	if (ri_kind_of(a->action_ref, kind, sizeof kind) != 0)
		return RI_SHARD_INSTANCE;       /* refused by the append itself */
	return ri_eng_shard(c, kind, a->act_key != NULL ? a->act_key : "");
}

int
ri_eng_append_many(struct ri_store *st, const struct ri_append *v, size_t n, struct ri_appended *out)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_eng_heads hs;
	ri_ms now;
	int rc, role;

	if (c->key == NULL)
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL, "appending needs the integrity key");
	/* one transaction: with shards a cut across them, each record under
	 * its own act's shard's head (a restore's records name many acts) */
	if ((rc = ri_eng_write_all(c, &hs, &now)) != RI_ST_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		int s = append_shard(c, &v[i]);
		memset(&out[i], 0, sizeof out[i]);
		if ((rc = ri_substrate_role(c, &v[i], &role)) != RI_ST_OK ||
		    (rc = ri_eng_append_locked(c, &hs.jh[s], hs.lh[s], &v[i], role, false, now, &out[i])) != RI_ST_OK) {
			c->be->rollback(c->bk);
			ri_eng_heads_free(&hs);
			return rc;
		}
		memcpy(hs.lh[s], out[i].hash, RI_HASH_LEN);
		/* an accepted restore moves every shard's grant counter past the
		 * tokens of the lost stretch, as append_locked moves its own */
		for (int k = 1; k < c->shards && strcmp(v[i].action_ref, "audit.restored") == 0; k++) {
			if (hs.jh[k].grants >= out[i].recorded_at)
				continue;
			hs.jh[k].grants = out[i].recorded_at;
			if ((rc = c->be->jhead_put(c->bk, &hs.jh[k], hs.lh[k])) != RI_ST_OK) {
				c->be->rollback(c->bk);
				ri_eng_heads_free(&hs);
				return rc;
			}
		}
	}
	ri_eng_heads_free(&hs);
	return c->be->commit(c->bk);
}

/* ---- the registry's rows -------------------------------------------------- */


/* one row of a table of enum ri_rows verified, its keys k */
static int
row_verify(struct ri_st_core *c, const struct ri_jhead *jh, enum ri_rows which, char *const *k)
{
	struct ri_lease_row l;
	struct ri_actor_row row;
	bool exists;
	int64_t m;

	switch (which) {
	case RI_ROWS_LEASES:
		if (k[0] == NULL || k[1] == NULL)
			return ri_st_fail(c, RI_ST_INTEGRITY, 0, NULL, "journal integrity: a lease row is malformed");
		return ri_eng_lease_get(c, k[0], k[1], false, &l, &exists);
	case RI_ROWS_ACTORS:
	case RI_ROWS_ACTORS_LISTED:
		if (k[0] == NULL)
			return ri_st_fail(c, RI_ST_INTEGRITY, 0, NULL, "journal integrity: an actor registry row is malformed");
		return ri_eng_actor_get(c, jh, k[0], &row, &exists);
	case RI_ROWS_MARKS:
		if (k[0] == NULL)
			return ri_st_fail(c, RI_ST_INTEGRITY, 0, NULL, "journal integrity: a mark is malformed");
		return ri_eng_mark_judged(c, k[0], &m);
	}
	return RI_ST_OK;
}

int
ri_eng_rows_verify(struct ri_st_core *c, const struct ri_jhead *jh, bool leases, ri_state_fn each, void *arg)
{
	static const enum ri_rows order[] = { RI_ROWS_LEASES, RI_ROWS_ACTORS, RI_ROWS_MARKS };
	int rc = RI_ST_OK;

	for (size_t t = leases ? 0 : 1; t < sizeof order / sizeof order[0] && rc == RI_ST_OK; t++) {
		size_t step = order[t] == RI_ROWS_LEASES ? 2 : 1, n;
		char **keys;

		if ((rc = c->be->row_keys(c->bk, order[t], &keys, &n)) != RI_ST_OK)
			return rc;
		for (size_t i = 0; i + step <= n; i += step) {
			if ((rc = row_verify(c, jh, order[t], keys + i)) == RI_ST_OK)
				continue;
			if (each == NULL || rc == RI_ST_UNAVAILABLE)
				break;
			each("8.1.3", 0, c->err.msg, arg);
			rc = RI_ST_OK;
		}
		ri_strings_free(keys, n);
	}
	return rc;
}

/* ---- store.h ops written once ------------------------------------------- */

int
ri_eng_open_intents(struct ri_store *st, const char *kind, const char *act_key, ri_ms aged_by,
    struct ri_open_intent **out, size_t *n)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_eng_heads hs;
	bool began;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = c->be->read_begin(c->bk, &began)) != RI_ST_OK)
		return rc;
	/* every shard's rows against its own head's count and accumulator */
	if ((rc = eng_read_all(c, &hs)) == RI_ST_OK) {
		rc = ri_eng_open_scan(c, hs.jh, kind, act_key, aged_by, out, n);
		ri_eng_heads_free(&hs);
	}
	c->be->read_end(c->bk, began);
	if (rc != RI_ST_OK) {
		ri_open_intents_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

/*
 * authenticate(actor, credential): the check record_action makes, made
 * alone -- nothing appended, no attestation minted -- so a writer can know
 * who its caller is before it touches a section (close 1, Check 2; resolve's
 * caller kind, Invariant 5.4; the sweep's service identity, Sweep never 2).
 * record_action still checks again at the write.
 */
int
ri_eng_authenticate(struct ri_store *st, const char *actor, const char *cred, struct ri_actor *out)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_actor who = { 0 };
	struct ri_jhead jh;
	unsigned char lh[RI_HASH_LEN];
	bool began;
	ri_ms now;
	int rc;

	ri_st_err_clear(&c->err);
	if (out != NULL)
		memset(out, 0, sizeof *out);
	if ((rc = ri_authenticate_request_judge(c, actor, cred)) != RI_ST_OK)
		return rc;
	/* the registry row is bound to the verified head, as at the write */
	if ((rc = c->be->read_begin(c->bk, &began)) != RI_ST_OK)
		return rc;
	if ((rc = c->be->jhead_now(c->bk, RI_SHARD_INSTANCE, &jh, lh, &now)) == RI_ST_OK)
		rc = ri_eng_check_credential(c, &jh, actor, cred, now, &who);
	c->be->read_end(c->bk, began);
	if (rc == RI_ST_STEP2)
		rc = ri_st_recode(c, RI_ST_UNAVAILABLE);
	if (rc == RI_ST_OK && out != NULL)
		*out = who;
	return rc;
}

/* A mark is MACed with its name and value: a forged mark never moves the
 * sweep's high water past records it has not scanned.  (An older mark
 * replayed only makes the next scan longer.) */
int
ri_eng_mark_judged(struct ri_st_core *c, const char *name, int64_t *seq)
{
	unsigned char mac[RI_HASH_LEN], calc[RI_HASH_LEN];
	enum ri_found found = RI_ROW_NONE;
	int rc;

	*seq = 0;
	if ((rc = c->be->mark_read(c->bk, name, seq, mac, &found)) != RI_ST_OK)
		return rc;
	if (found != RI_ROW_NONE && c->key != NULL) {
		if (found == RI_ROW_OK)
			ri_mark_mac(c->key, c->keylen, c->instance_id, name, *seq, calc);
		if (found != RI_ROW_OK || sodium_memcmp(calc, mac, RI_HASH_LEN) != 0) {
			*seq = 0;
			return ri_st_fail(c, RI_ST_INTEGRITY, 0, NULL, "journal integrity: mark %s fails its MAC", name);
		}
	}
	return RI_ST_OK;
}

int
ri_eng_mark_get(struct ri_store *st, const char *name, int64_t *seq)
{
	return ri_eng_mark_judged(RI_ENG_CORE(st), name, seq);
}

ri_ms
ri_eng_mark_lag(struct ri_store *st, ri_ms settle)
{
	return RI_ENG_CORE(st)->shards > 1 && !RI_NC(RI_NC_MARK_ONE_SETTLE) ? 2 * settle : settle;
}

int
ri_eng_mark_set(struct ri_store *st, const char *name, int64_t seq)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	unsigned char mac[RI_HASH_LEN];
	int rc;

	if ((rc = c->be->write_begin(c->bk)) != RI_ST_OK)
		return rc;
	ri_mark_mac(c->key, c->keylen, c->instance_id, name, seq, mac);
	if ((rc = c->be->mark_write(c->bk, name, seq, mac)) != RI_ST_OK) {
		c->be->rollback(c->bk);
		return rc;
	}
	return c->be->commit(c->bk) == RI_ST_OK ? RI_ST_OK : RI_ST_UNAVAILABLE;
}

int
ri_eng_head(struct ri_store *st, int64_t *seq, unsigned char hash[32])
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_eng_heads hs;
	bool began;
	int rc;

	if ((rc = c->be->read_begin(c->bk, &began)) != RI_ST_OK)
		return rc;
	/* the newest record of every shard's: the highest of their heads */
	*seq = 0;
	if ((rc = eng_read_all(c, &hs)) == RI_ST_OK) {
		int s = ri_jheads_newest(hs.jh, c->shards);
		*seq = hs.jh[s].last_seq;
		memcpy(hash, hs.lh[s], RI_HASH_LEN);
		ri_eng_heads_free(&hs);
	}
	c->be->read_end(c->bk, began);
	return rc;
}

int
ri_eng_sealed(struct ri_store *st, int64_t *seq, unsigned char hash[32])
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_jhead jh;
	unsigned char lh[RI_HASH_LEN];
	bool began;
	int rc;

	*seq = 0;
	if ((rc = c->be->read_begin(c->bk, &began)) != RI_ST_OK)
		return rc;
	/* without the key, the newest seal is what the rows say */
	if ((rc = c->be->jhead_get(c->bk, RI_SHARD_INSTANCE, &jh, lh)) == RI_ST_OK && c->key == NULL)
		rc = c->be->sealed_rows(c->bk, &jh.sealed_seq);
	if (rc == RI_ST_OK && (rc = ri_eng_hash_at(c, jh.sealed_seq, hash)) == RI_ST_OK)
		*seq = jh.sealed_seq;
	c->be->read_end(c->bk, began);
	return rc;
}

/*
 * Actor Identity: an actor's registry records (audit.actor_registered,
 * audit.actor_revoked) carry act_key = the actor ref, so each actor's
 * history is a scope with an authenticated head; the registry row is MACed
 * with the seq of its newest registry record.  A credential minted by a
 * registration that did not land -- any failure, the COMMIT's too -- is
 * wiped: it names no actor.
 */
int
ri_eng_actor_add(struct ri_store *st, const char *actor, bool service, char credential[128])
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	unsigned char lh[RI_HASH_LEN];
	struct ri_appended ap;
	struct ri_jhead jh;
	struct ri_actor_row row;
	bool exists;
	ri_ms now;
	int rc;

	if (!ri_valid_actor_name(actor, c->cfg->reference_length_cap))
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL,
		    "actor name must be 1..%lld of [A-Za-z0-9._@-] and not \"audit\"",
		    (long long)c->cfg->reference_length_cap);
	if ((rc = eng_write_head(c, RI_SHARD_INSTANCE, &jh, lh, &now)) != RI_ST_OK) {
		sodium_memzero(credential, 128);
		return rc;
	}
	if ((rc = ri_eng_actor_get(c, &jh, actor, &row, &exists)) != RI_ST_OK)
		goto fail;
	if (exists) {
		rc = ri_st_fail(c, RI_ST_EXISTS, 0, NULL, "actor %s already exists", actor);
		goto fail;
	}
	json_t *data = json_pack("{s:s, s:s}", "actor_ref", actor, "type", service ? "service" : "human");
	rc = ri_eng_append_substrate(c, &jh, lh, "audit.actor_registered", actor, data, now, &ap);
	json_decref(data);
	if (rc != RI_ST_OK)
		goto fail;
	row = (struct ri_actor_row){ .service = service, .created = now, .revoked = RI_NONE, .reg_seq = ap.seq };
	ri_credential_mint(c, actor, credential, &row);
	if ((rc = c->be->actor_insert(c->bk, actor, &row)) == RI_ST_EXISTS)
		rc = ri_st_fail(c, RI_ST_EXISTS, 0, NULL, "actor %s already exists", actor);
	if (rc != RI_ST_OK)
		goto fail;
	if ((rc = c->be->commit(c->bk)) == RI_ST_OK)
		return RI_ST_OK;
	sodium_memzero(credential, 128);
	return rc;
fail:
	c->be->rollback(c->bk);
	sodium_memzero(credential, 128);
	return rc;
}

int
ri_eng_actor_list(struct ri_store *st, struct ri_actor **out, size_t *n)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_jhead jh;
	unsigned char lh[RI_HASH_LEN];
	char **names = NULL;
	size_t nn = 0;
	bool began;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = c->be->read_begin(c->bk, &began)) != RI_ST_OK)
		return rc;
	if ((rc = c->be->jhead_get(c->bk, RI_SHARD_INSTANCE, &jh, lh)) != RI_ST_OK ||
	    (rc = c->be->row_keys(c->bk, RI_ROWS_ACTORS_LISTED, &names, &nn)) != RI_ST_OK)
		goto out;
	*out = ri_xcalloc(nn + 1, sizeof **out);
	/* each row verified as record_action would: MAC and registry head */
	for (size_t i = 0; i < nn; i++) {
		struct ri_actor_row row;
		bool exists;
		if (names[i] == NULL)
			rc = ri_st_fail(c, RI_ST_INTEGRITY, 0, NULL, "journal integrity: an actor registry row is malformed");
		else
			rc = ri_eng_actor_get(c, &jh, names[i], &row, &exists);
		if (rc != RI_ST_OK)
			goto out;
		struct ri_actor *a = &(*out)[(*n)++];
		a->actor_ref = ri_strdup(names[i]);
		a->service = row.service != 0;
		a->created_at = row.created;
		a->revoked_at = row.revoked;
	}
out:
	c->be->read_end(c->bk, began);
	ri_strings_free(names, nn);
	if (rc != RI_ST_OK) {
		ri_actors_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int
ri_eng_actor_revoke(struct ri_store *st, const char *actor)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	unsigned char lh[RI_HASH_LEN];
	struct ri_appended ap;
	struct ri_jhead jh;
	struct ri_actor_row row;
	bool exists;
	ri_ms now;
	int rc;

	if ((rc = eng_write_head(c, RI_SHARD_INSTANCE, &jh, lh, &now)) != RI_ST_OK)
		return rc;
	if ((rc = ri_eng_actor_get(c, &jh, actor, &row, &exists)) != RI_ST_OK)
		goto fail;
	if (!exists) {
		rc = ri_st_fail(c, RI_ST_NOT_KNOWN, 0, NULL, "no actor %s", actor);
		goto fail;
	}
	if (row.revoked != RI_NONE) {
		c->be->rollback(c->bk);
		return RI_ST_OK;        /* already revoked: idempotent */
	}
	json_t *data = json_pack("{s:s}", "actor_ref", actor);
	rc = ri_eng_append_substrate(c, &jh, lh, "audit.actor_revoked", actor, data, now, &ap);
	json_decref(data);
	if (rc != RI_ST_OK)
		goto fail;
	row.revoked = now;
	row.reg_seq = ap.seq;
	ri_actor_row_mac(c, actor, &row, row.mac);
	if ((rc = c->be->actor_update(c->bk, actor, &row)) != RI_ST_OK)
		goto fail;
	return c->be->commit(c->bk);
fail:
	c->be->rollback(c->bk);
	return rc;
}

/* ---- reads of the records table -------------------------------------------- */

int
ri_eng_read_record(struct ri_store *st, const char *event_id, struct ri_record *out)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_raw w;
	unsigned char prev[RI_HASH_LEN];
	struct scope sc;
	int64_t last;
	bool began;
	ri_ms now;
	int rc;

	memset(out, 0, sizeof *out);
	ri_st_err_clear(&c->err);
	if ((rc = c->be->read_begin(c->bk, &began)) != RI_ST_OK)
		return rc;
	if ((rc = c->be->clock_now(c->bk, &now)) != RI_ST_OK)
		goto out;
	if ((rc = c->be->record_by_id(c->bk, event_id, out, &w)) != RI_ST_OK) {
		if (rc == RI_ST_NOT_KNOWN)
			rc = ri_st_fail(c, RI_ST_NOT_KNOWN, 0, event_id, "no record %s", event_id);
		goto out;
	}
	int shard = w.shard;
	if ((rc = ri_eng_link_hash(c, shard, out->seq, prev)) != RI_ST_OK) {
		free(w.payload_text);
		goto out;
	}
	if ((rc = ri_st_verify_row(c, out, &w, prev, now)) != RI_ST_OK ||
	    (rc = ri_eng_shard_judge(c, out, shard)) != RI_ST_OK)
		goto out;
	/* its shard's own head must stand, so a truncated tail is seen */
	if (c->shards > 1) {
		struct ri_jhead jh;
		unsigned char lh[RI_HASH_LEN];
		if ((rc = c->be->jhead_get(c->bk, shard, &jh, lh)) != RI_ST_OK)
			goto out;
		last = jh.last_seq;
	} else {
		scope_make(&sc, SCOPE_ALL, NULL, NULL);
		if ((rc = ri_eng_head_get(c, &sc, NULL, NULL, &last)) != RI_ST_OK)
			goto out;
	}
	rc = out->purged ? RI_ST_PURGED : RI_ST_OK;
out:
	c->be->read_end(c->bk, began);
	if (rc != RI_ST_OK && rc != RI_ST_PURGED)
		ri_record_clear(out);
	return rc;
}

struct range_walk {
	struct ri_st_core *c;
	struct ri_walk *wk;
	struct ri_records *out;
};

/* one row of a range read: the page's bound first, then the walk's link */
static int
range_row(void *arg, struct ri_record *r, struct ri_raw *w, bool *stop)
{
	struct range_walk *x = arg;
	bool full;
	int rc;

	if ((rc = ri_walk_peek(x->c, x->wk, x->out, r->seq, &full)) != RI_ST_OK || full) {
		ri_record_clear(r);
		free(w->payload_text);
		*stop = full;
		return rc;
	}
	return ri_walk_take(x->c, x->wk, x->out, r, w);
}

/*
 * The open-upper-bound sequence-range read (Capability requirement 1-3):
 * from q->from with no upper bound, a declared page size, a cursor and a
 * page-complete signal.  A filtered read walks its scope's back pointers,
 * so a record missing from the middle, the start or the end of the scope
 * is an integrity failure.
 */
int
ri_eng_range_read(struct ri_store *st, const struct ri_query *q, struct ri_records *out)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct scope sc;
	struct ri_walk wk;
	struct range_walk x = { .c = c, .wk = &wk, .out = out };
	int64_t head = 0;
	bool began;
	int rc;

	memset(out, 0, sizeof *out);
	if ((rc = ri_walk_query(c, q, &sc, &wk)) != RI_ST_OK)
		return rc;
	wk.link_at = ri_eng_link_hash_cb;
	wk.backend = c;
	/* trust holds only inside the traversal's own snapshot */
	if (q->trusted && !c->be->in_snapshot(c->bk))
		return ri_st_fail(c, RI_ST_INVALID_QUERY, 0, NULL, "a trusted read outside a traversal");
	if ((rc = c->be->read_begin(c->bk, &began)) != RI_ST_OK)
		return rc;
	if ((rc = c->be->clock_now(c->bk, &wk.now)) != RI_ST_OK)
		goto out;
	if (q->trusted) {
		head = INT64_MAX;
	} else if ((rc = ri_eng_head_get(c, &sc, sc.type == SCOPE_INV ? q->invocation_id : q->kind, q->act_key,
	    &head)) != RI_ST_OK) {
		/* (the journal's own head stands too, and the scope's head proves
		 * it present or absent: an empty answer from a journal that is
		 * not ours, truncated, or hiding the scope is not an absence) */
		goto out;
	}
	ri_walk_begin(&wk, q->from, head);
	struct ri_rows_query rq = { .from = wk.from, .desc = wk.desc, .type = sc.type,
		.a = sc.type == SCOPE_INV ? q->invocation_id : q->kind, .b = q->act_key,
		.limit = (int64_t)wk.limit + 1, .from_head = !q->trusted && wk.desc && wk.from == head };
	if ((rc = c->be->records_from(c->bk, &rq, range_row, &x)) == RI_ST_OK)
		rc = ri_walk_end(c, &wk, out);
out:
	c->be->read_end(c->bk, began);
	if (rc != RI_ST_OK)
		ri_records_clear(out);
	return rc;
}

/*
 * store.h read_ahead: each range read's scope and first page as
 * ri_eng_range_read will ask for them (the same walk query, the same page
 * size), handed to the backend to send ahead in the command's read
 * snapshot -- which begins here when none is open, as the reads' own
 * would.  Nothing is judged here: each read verifies its answers itself.
 */
void
ri_eng_read_ahead(struct ri_store *st, const struct ri_ahead *ah)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_ahead_read v[8];
	size_t n = 0;
	bool began;

	if (c->be->read_ahead == NULL || c->be->read_begin(c->bk, &began) != RI_ST_OK)
		return;
	for (size_t i = 0; i < ah->nq && n < sizeof v / sizeof v[0]; i++) {
		const struct ri_query *q = &ah->q[i];
		struct ri_walk wk;
		struct ri_store_error keep = c->err;
		if (q->trusted || ri_walk_query(c, q, &v[n].sc, &wk) != RI_ST_OK) {
			c->err = keep;  /* a query the read itself will refuse */
			continue;
		}
		/* descending from 0 reads from the scope's head (ri_walk_begin),
		 * asked with no upper bound (from_head); ascending from 0 from 1 */
		v[n].rows = (struct ri_rows_query){ .from = q->descending || q->from >= 1 ? q->from : 1,
			.desc = q->descending, .type = v[n].sc.type,
			.a = v[n].sc.type == SCOPE_INV ? q->invocation_id : q->kind, .b = q->act_key,
			.limit = (int64_t)wk.limit + 1, .from_head = q->descending && q->from == 0 };
		n++;
	}
	c->be->read_ahead(c->bk, v, n, ah);
	if (began)
		c->be->read_end(c->bk, began);
}

struct traversal {
	struct ri_st_core *c;
	ri_traverse_fn each;
	void *arg;
	unsigned char (*prev)[RI_HASH_LEN];     /* each shard's chain: its newest hash so far */
	int64_t last;
	ri_ms now;
	bool stopped;
};

static int
traverse_row(void *arg, struct ri_record *r, struct ri_raw *w, bool *stop)
{
	struct traversal *t = arg;
	unsigned problems = 0;
	/* a row names its shard (format 4 binds it); one naming none of the
	 * journal's is judged against shard 0's chain, and fails there */
	bool in_range = w->shard >= 0 && w->shard < t->c->shards;
	int shard = in_range ? w->shard : 0;

	/* Check 8.1.1: a contiguous allocator's seqs have no gap; with gaps
	 * (seq_gaps) one is an allocation that never committed, and a row
	 * missing from a shard breaks its successor's link (8.1.2) or its
	 * shard's head */
	if (t->c->seq_gaps ? r->seq <= t->last : r->seq != t->last + 1)
		problems |= RI_P_GAP;
	problems |= ri_raw_problems(t->c, r, w, t->prev[shard], t->now);
	/* Check 8.1.1 per shard: a record in its act's shard's chain */
	if (!in_range || (t->c->key != NULL && r->kind != NULL &&
	    ri_eng_shard(t->c, r->kind, r->act_key ? r->act_key : "") != shard))
		problems |= RI_P_SHAPE;
	t->last = r->seq;
	t->stopped = *stop = t->each(r, problems, t->arg) != 0;
	ri_payloads_drop(t->c, r->seq);
	ri_record_clear(r);
	return RI_ST_OK;
}

/*
 * The full traversal: every row in seq order (a row below seq 1 too), each
 * judged on its own -- contiguity, the link recomputed from the stored
 * hash of the row before, the MAC, the payload digest, purge legality --
 * so one bad row is named and the rest still judged.
 */
int
ri_eng_traverse(struct ri_store *st, ri_traverse_fn each, void *arg)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct traversal t = { .c = c, .each = each, .arg = arg };
	struct ri_rows_query rq = { .from = INT64_MIN, .type = SCOPE_ALL };
	int (*begin)(void *, bool *) = c->be->scan_begin != NULL ? c->be->scan_begin : c->be->read_begin;
	bool began = false;
	int rc;

	if ((rc = begin(c->bk, &began)) != RI_ST_OK)
		return rc;
	if ((rc = c->be->clock_now(c->bk, &t.now)) != RI_ST_OK)
		goto out;
	t.prev = ri_xcalloc((size_t)c->shards, sizeof *t.prev);
	for (int s = 0; s < c->shards; s++)
		ri_core_shard_genesis(c, s, t.prev[s]);
	ri_payloads_begin(c);
	rc = c->be->records_from(c->bk, &rq, traverse_row, &t);
	ri_payloads_end(c);
	free(t.prev);
	if (rc != RI_ST_OK || t.stopped || c->key == NULL)
		goto out;
	/* the authenticated head: a truncated tail is seen here */
	struct scope sc;
	int64_t head;
	scope_make(&sc, SCOPE_ALL, NULL, NULL);
	if ((rc = ri_eng_head_get(c, &sc, NULL, NULL, &head)) == RI_ST_INTEGRITY) {
		struct ri_record r = { .seq = t.last };
		each(&r, RI_P_HEAD, arg);
		rc = RI_ST_OK;
	}
out:
	c->be->read_end(c->bk, began);
	return rc;
}

int
ri_eng_peek(struct ri_store *st, const char *event_id, struct ri_record *out)
{
	struct ri_st_core *c = RI_ENG_CORE(st);

	memset(out, 0, sizeof *out);
	if (!c->be->in_snapshot(c->bk))
		return ri_st_fail(c, RI_ST_INVALID_QUERY, 0, NULL, "peek outside a traversal");
	return c->be->peek_row(c->bk, event_id, out);
}

/* store.h inv_span: the invocation index alone, in the traversal's
 * snapshot */
int
ri_eng_inv_span(struct ri_store *st, const char *invocation_id, int64_t *first, int64_t *last, int64_t *n)
{
	struct ri_st_core *c = RI_ENG_CORE(st);

	*first = *last = *n = 0;
	if (!c->be->in_snapshot(c->bk))
		return ri_st_fail(c, RI_ST_INVALID_QUERY, 0, NULL, "an invocation's span outside a traversal");
	return c->be->inv_rows(c->bk, invocation_id, first, last, n);
}

/* ---- the critical-section host (Lease) ---------------------------------------- */

/*
 * After a wake: still held by another, and unexpired?  Read in a plain
 * read transaction, so a waiter woken by others' commits re-checks without
 * taking the writers' queue; *left is then the holder's remaining lease.
 * false also when the read fails: the write path reads it again, and says
 * why.
 */
static bool
held_elsewhere(struct ri_st_core *c, const char *kind, const char *act_key, const char *holder, ri_ms *left)
{
	struct ri_lease_row l;
	bool began, exists, held = false;
	ri_ms now;

	if (c->be->wake_recheck == NULL || !c->be->wake_recheck(c->bk))
		return false;
	if (c->be->read_begin(c->bk, &began) != RI_ST_OK)
		return false;
	if (c->be->clock_now(c->bk, &now) == RI_ST_OK &&
	    ri_eng_lease_get(c, kind, act_key, false, &l, &exists) == RI_ST_OK &&
	    !ri_lease_free(exists ? &l : NULL, holder, now)) {
		held = true;
		*left = l.expires - now;
	}
	c->be->read_end(c->bk, began);
	return held;
}

static bool
wait_change(void *arg, int64_t ms)
{
	const struct ri_st_core *c = arg;

	return c->be->wait_change(c->bk, ms);
}

/*
 * The prologue of a lease write, take's and release's alike: a write
 * transaction holding the journal head (the lock order: the head row, then
 * the lease row) and the lease row read under its lock, each verified.  A
 * failure leaves no transaction open and answers integrity as itself,
 * anything else as the section's unavailability.
 */
static int
lease_locked(struct ri_st_core *c, const char *kind, const char *act_key, struct ri_jhead *jh,
    unsigned char lh[RI_HASH_LEN], ri_ms *now, struct ri_lease_row *l, bool *exists)
{
	int rc;

	/* defined on every path, a row absent too (clang's analyzer) */
	*exists = false;
	memset(l, 0, sizeof *l);
	if (c->be->lease_ahead != NULL)
		c->be->lease_ahead(c->bk, kind, act_key);
	/* the act's shard's head: its grant counter mints the act's tokens,
	 * which so only ever grow per act (docs/SHARDS.md, fencing tokens) */
	if ((rc = eng_write_head(c, ri_eng_shard(c, kind, act_key), jh, lh, now)) != RI_ST_OK)
		return rc == RI_ST_INTEGRITY ? rc : ri_st_recode(c, RI_ST_UNAVAILABLE);
	if ((rc = ri_eng_lease_get(c, kind, act_key, true, l, exists)) != RI_ST_OK) {
		c->be->rollback(c->bk);
		return rc == RI_ST_INTEGRITY ? rc : ri_st_recode(c, RI_ST_UNAVAILABLE);
	}
	return RI_ST_OK;
}

/*
 * take((kind, act_key), holder, duration): granted when the section is
 * free, expired, or already this holder's (act section 14: re-entry by the
 * holder alone); otherwise wait -- never longer than the holder's
 * remaining lease as first observed (open step 2.2, reconcile step 2.2) --
 * and answer section-unavailable.  There is no try_take (act section 7).
 * Expiry is minted here; a holder's death frees nothing.  Every grant
 * mints a fencing token that only ever increases for its key: the row is
 * never deleted, so a token is never reused across crashes or restarts.
 * Lock order: the head row, then the lease row.
 */
static int
take_loop(struct ri_st_core *c, const struct ri_store *st, const char *kind, const char *act_key,
    const char *holder, ri_ms duration, struct ri_grant *g)
{
	struct ri_take_wait w = { .change = c->be->wait_change != NULL ? wait_change : NULL, .arg = c };
	int rc;

	for (;;) {
		struct ri_jhead jh;
		struct ri_lease_row l;
		unsigned char lh[RI_HASH_LEN];
		ri_ms now;
		bool exists;

		/* the journal head (whose grant counter mints the token) and the
		 * lease row, each verified: a forged or replayed row never grants */
		if ((rc = lease_locked(c, kind, act_key, &jh, lh, &now, &l, &exists)) != RI_ST_OK)
			return rc;
		if (ri_lease_free(exists ? &l : NULL, holder, now)) {
			/* the fencing token: the instance's grant counter, under the
			 * journal head's MAC -- it only ever increases, for every key,
			 * even should a lease row be deleted */
			jh.grants++;
			if (ri_eng_lease_put(c, kind, act_key, holder, now + duration, jh.grants) != RI_ST_OK ||
			    c->be->jhead_put(c->bk, &jh, lh) != RI_ST_OK) {
				c->be->rollback(c->bk);
				return ri_st_recode(c, RI_ST_UNAVAILABLE);
			}
			if (c->be->commit(c->bk) != RI_ST_OK)
				return ri_st_recode(c, RI_ST_UNAVAILABLE);
			g->expires_at = now + duration;
			g->token = jh.grants;
			ri_fault("lease.after_take");
			return RI_ST_OK;
		}
		c->be->rollback(c->bk);
		/* act section 11, open step 2.2: wait until the section may be
		 * free, then take it under the write lock */
		ri_ms left = l.expires - now;
		do {
			/* the look after the wait reads past it (issue 43) */
			if (c->be->settle != NULL)
				c->be->settle(c->bk);
			if ((rc = ri_take_wait(c, st, &w, kind, act_key, left)) != RI_ST_OK)
				return rc;
		} while (held_elsewhere(c, kind, act_key, holder, &left));
	}
}

int
ri_eng_take(struct ri_store *st, const char *kind, const char *act_key, const char *holder, ri_ms duration,
    struct ri_grant *g)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	int rc;

	if (c->be->lease_sync != NULL)
		c->be->lease_sync(c->bk, false);
	rc = take_loop(c, st, kind, act_key, holder, duration, g);
	if (c->be->lease_sync != NULL)
		c->be->lease_sync(c->bk, true);
	return rc;
}

/*
 * open step 5.3 right after the append that wrote the intent (issue 43:
 * no read of its own): the act's lease row as that append's fence check
 * read and verified it, under the head's lock, in the transaction that
 * committed.  No writer changes a lease row without that lock (the lock
 * order), and nothing of this handle has written since (eng_write_head),
 * so the row stands as at the commit; the clock is the one the check
 * judged on, moved on by the host's monotonic time since before it was
 * read -- never behind the instance clock, so what is left is never
 * overstated (as snap_clock, query_pg.c).  Under the env clock seam the
 * instant is the process's, which stands still.  Used once.
 */
static bool
lease_landed(struct ri_st_core *c, const char *kind, const char *act_key, const char *holder, ri_ms *left)
{
	unsigned char scope[RI_SCOPE_LEN];
	struct ri_lease_seen *w = &c->seen;
	ri_ms now;

	if (!w->valid || !w->landed)
		return false;
	w->valid = false;
	ri_scope_act(kind, act_key, scope);
	if (memcmp(scope, w->scope, sizeof scope) != 0)
		return false;
	now = c->cfg->clock_env ? w->now : w->now + (ri_ms)(ri_mono_ms() - w->mono);
	*left = w->exists && w->l.held && strcmp(w->l.holder, holder) == 0 && w->l.expires > now ?
	    w->l.expires - now : RI_NONE;
	return true;
}

int
ri_eng_remaining(struct ri_store *st, const char *kind, const char *act_key, const char *holder, ri_ms *left)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_lease_row l;
	bool exists, began;
	ri_ms now;
	int rc;

	*left = RI_NONE;
	if (lease_landed(c, kind, act_key, holder, left))
		return RI_ST_OK;
	if ((rc = c->be->read_begin(c->bk, &began)) != RI_ST_OK)
		return rc;
	if ((rc = c->be->clock_now(c->bk, &now)) == RI_ST_OK &&
	    (rc = ri_eng_lease_get(c, kind, act_key, false, &l, &exists)) == RI_ST_OK &&
	    exists && l.held && strcmp(l.holder, holder) == 0 && l.expires > now)
		*left = l.expires - now;
	c->be->read_end(c->bk, began);
	return rc;
}

/*
 * The release in one round trip where the backend offers it (issue 43):
 * the act's lease row as this handle's last append read and verified it,
 * under the head's lock, in the transaction that committed (c->seen, as
 * lease_landed), held by this holder -- freed only if it stands exactly
 * so still (holder, expiry, token, MAC: the row this holder's take wrote),
 * so a row another holder has taken since (a new token under a new MAC) is
 * never freed.  A row that stands so is this holder's, and release_locked
 * would free it the same.  *done false: not offered, or nothing matched --
 * release_locked decides, as ever.
 */
static int
release_seen(struct ri_st_core *c, const char *kind, const char *act_key, const char *holder, bool *done)
{
	const struct ri_lease_seen *w = &c->seen;
	unsigned char scope[RI_SCOPE_LEN], mac[RI_HASH_LEN];

	*done = false;
	if (c->be->lease_free_if == NULL || !w->valid || !w->landed || !w->exists || !w->l.held ||
	    strcmp(w->l.holder, holder) != 0)
		return RI_ST_OK;
	ri_scope_act(kind, act_key, scope);
	if (memcmp(scope, w->scope, sizeof scope) != 0)
		return RI_ST_OK;
	c->seen.valid = false;
	ri_lease_mac(c->key, c->keylen, c->instance_id, kind, act_key, NULL, 0, w->l.token, mac);
	return c->be->lease_free_if(c->bk, kind, act_key, &w->l, mac, done);
}

static int
release_locked(struct ri_st_core *c, const char *kind, const char *act_key, const char *holder)
{
	struct ri_jhead jh;
	struct ri_lease_row l;
	unsigned char lh[RI_HASH_LEN];
	bool exists, held;
	ri_ms now;
	int rc;

	if (release_seen(c, kind, act_key, holder, &held) != RI_ST_OK)
		return ri_st_recode(c, RI_ST_UNAVAILABLE);
	if (held)
		return RI_ST_OK;
	/* the head first, as every writer (the lock order), though a release
	 * does not move it */
	if ((rc = lease_locked(c, kind, act_key, &jh, lh, &now, &l, &exists)) != RI_ST_OK)
		return rc;
	held = exists && l.held && strcmp(l.holder, holder) == 0;
	if (held && (rc = ri_eng_lease_put(c, kind, act_key, NULL, 0, l.token)) != RI_ST_OK) {
		c->be->rollback(c->bk);
		return rc;
	}
	if (c->be->commit(c->bk) != RI_ST_OK)
		return ri_st_recode(c, RI_ST_UNAVAILABLE);
	return held ? RI_ST_OK : ri_st_fail(c, RI_ST_NOT_HELD, 0, NULL, "not held by %s", holder);
}

int
ri_eng_release(struct ri_store *st, const char *kind, const char *act_key, const char *holder)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	int rc;

	if (c->be->lease_sync != NULL)
		c->be->lease_sync(c->bk, false);
	rc = release_locked(c, kind, act_key, holder);
	if (c->be->lease_sync != NULL)
		c->be->lease_sync(c->bk, true);
	return rc;
}
