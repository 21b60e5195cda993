/*
 * store_engine.c -- the store's protocol steps written once, over the
 * backend primitives of store_engine.h, and the frees of store.h's own
 * types: the protocol above and each backend (store_sqlite.c, store_pg.c)
 * call this file, never one backend's.  The append and the lease are in
 * store_writes.c, the cuts across the journal in store_cuts.c.
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

int
ri_eng_write_all(struct ri_st_core *c, struct ri_eng_heads *hs, ri_ms *now)
{
	int rc;

	hs->jh = ri_xcalloc((size_t)c->shards, sizeof *hs->jh);
	hs->lh = ri_xcalloc((size_t)c->shards, sizeof *hs->lh);
	if ((rc = ri_eng_write_head(c, 0, &hs->jh[0], hs->lh[0], now)) == RI_ST_OK) {
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
int
ri_eng_write_head(struct ri_st_core *c, int shard, struct ri_jhead *jh, unsigned char lh[RI_HASH_LEN], ri_ms *now)
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
	if ((rc = ri_eng_write_head(c, RI_SHARD_INSTANCE, &jh, lh, &now)) != RI_ST_OK) {
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

	if ((rc = ri_eng_write_head(c, RI_SHARD_INSTANCE, &jh, lh, &now)) != RI_ST_OK)
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
