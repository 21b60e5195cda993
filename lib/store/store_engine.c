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
#include "store/store_engine.h"

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
ri_eng_hash_at_cb(void *core, int64_t seq, unsigned char out[RI_HASH_LEN])
{
	return ri_eng_hash_at(core, seq, out);
}

static void
tree_io(const struct ri_st_core *c, struct ri_tree_io *io)
{
	io->ctx = c->bk;
	io->get = c->be->node_get;
	io->put = c->be->node_put;
	io->cache = c->nodes;
}

int
ri_eng_tree_get(struct ri_st_core *c, const struct ri_jhead *jh, const unsigned char key[RI_SCOPE_LEN], bool *present,
    struct ri_leaf *leaf)
{
	struct ri_tree_io io;
	char why[256] = "";
	int rc;

	tree_io(c, &io);
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

	tree_io(c, &io);
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
int
ri_eng_head_get(struct ri_st_core *c, const struct scope *sc, const char *a, const char *b, int64_t *last)
{
	struct ri_jhead jh;
	unsigned char lh[RI_HASH_LEN];
	int rc;

	if ((rc = c->be->jhead_get(c->bk, &jh, lh)) != RI_ST_OK)
		return rc;
	return ri_eng_scope_head(c, &jh, sc, a, b, last);
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

	if ((rc = c->be->open_rows(c->bk, &os)) != RI_ST_OK)
		return rc;
	return ri_open_scan_end(c, &os, jh);
}

/* ---- store.h ops written once ------------------------------------------- */

int
ri_eng_open_intents(struct ri_store *st, const char *kind, const char *act_key, ri_ms aged_by,
    struct ri_open_intent **out, size_t *n)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_jhead jh;
	unsigned char lh[RI_HASH_LEN];
	bool began;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = c->be->read_begin(c->bk, &began)) != RI_ST_OK)
		return rc;
	if ((rc = c->be->jhead_get(c->bk, &jh, lh)) == RI_ST_OK)
		rc = ri_eng_open_scan(c, &jh, kind, act_key, aged_by, out, n);
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
	if ((rc = c->be->jhead_now(c->bk, &jh, lh, &now)) == RI_ST_OK)
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
ri_eng_mark_get(struct ri_store *st, const char *name, int64_t *seq)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
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
	struct ri_jhead jh;
	bool began;
	int rc;

	if ((rc = c->be->read_begin(c->bk, &began)) != RI_ST_OK)
		return rc;
	if ((rc = c->be->jhead_get(c->bk, &jh, hash)) == RI_ST_OK)
		*seq = jh.last_seq;
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
	if ((rc = c->be->jhead_get(c->bk, &jh, lh)) == RI_ST_OK && c->key == NULL)
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
	if ((rc = c->be->write_head(c->bk, &jh, lh, &now)) != RI_ST_OK) {
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
	rc = c->be->append_substrate(c->bk, &jh, lh, "audit.actor_registered", actor, data, now, &ap);
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

	if ((rc = c->be->write_head(c->bk, &jh, lh, &now)) != RI_ST_OK)
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
	rc = c->be->append_substrate(c->bk, &jh, lh, "audit.actor_revoked", actor, data, now, &ap);
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
