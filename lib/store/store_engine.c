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
#include "util/util.h"
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

/* ---- the registry's rows -------------------------------------------------- */

static int mark_get(struct ri_st_core *c, const char *name, int64_t *seq);

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
		return mark_get(c, k[0], &m);
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
static int
mark_get(struct ri_st_core *c, const char *name, int64_t *seq)
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
	return mark_get(RI_ENG_CORE(st), name, seq);
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
	if ((rc = c->be->jhead_get(c->bk, &jh, lh)) != RI_ST_OK ||
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

/* ---- retention ------------------------------------------------------------- */

/* one purge transaction's tally: what went, and under which policy */
struct purge_batch {
	struct ri_st_core *c;
	struct ri_jhead *jh;
	json_t *kinds;
	int64_t first, last, n;
};

static int
purge_one(void *arg, int64_t seq, const char *kind, const char *invocation_id)
{
	struct purge_batch *b = arg;
	const struct ri_kind *kd = ri_config_kind(b->c->cfg, kind);
	int rc;

	if ((rc = b->c->be->payload_drop(b->c->bk, seq)) != RI_ST_OK)
		return rc;
	/* a destroyed intent is out of every reading: out of the
	 * index too, and out of its accumulator */
	if (invocation_id != NULL && (rc = b->c->be->open_remove(b->c->bk, b->jh, invocation_id)) != RI_ST_OK)
		return rc;
	if (b->n == 0 || seq < b->first)
		b->first = seq;
	if (seq > b->last)
		b->last = seq;
	b->n++;
	if (json_object_get(b->kinds, kind) == NULL) {
		char buf[32];
		ri_format_seconds(kd ? kd->retention_period : 0, buf, sizeof buf);
		json_object_set_new(b->kinds, kind, json_string(kd ? buf : "unbound"));
	}
	return RI_ST_OK;
}

/*
 * Destroy every payload whose retention ended (and its salt, so a
 * low-entropy payload cannot be guessed back from the digest).  The chain
 * still verifies; read_record answers purged; an audit.purged record names
 * what went, under which policy.
 */
int
ri_eng_purge(struct ri_store *st, ri_ms now, int64_t *purged)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	int rc;

	*purged = 0;
	for (;;) {
		unsigned char lh[RI_HASH_LEN];
		struct ri_appended ap;
		struct ri_jhead jh;
		ri_ms wnow;

		/* nothing is purged from a journal that fails verification */
		if ((rc = c->be->write_head(c->bk, &jh, lh, &wnow)) != RI_ST_OK)
			return rc == RI_ST_STEP2 ? RI_ST_UNAVAILABLE : rc;
		struct purge_batch b = { .c = c, .jh = &jh, .kinds = json_object() };
		if ((rc = c->be->purge_due(c->bk, now, purge_one, &b)) != RI_ST_OK || b.n == 0) {
			json_decref(b.kinds);
			c->be->rollback(c->bk);
			return rc;
		}
		json_t *data = json_pack("{s:I, s:I, s:I, s:o}", "purged", (json_int_t)b.n,
		    "first_seq", (json_int_t)b.first, "last_seq", (json_int_t)b.last, "retention_period_s", b.kinds);
		ri_fault("purge.between");
		rc = c->be->append_substrate(c->bk, &jh, lh, "audit.purged", "", data, wnow, &ap);
		json_decref(data);
		if (rc != RI_ST_OK) {
			c->be->rollback(c->bk);
			return rc;
		}
		if (c->be->commit(c->bk) != RI_ST_OK)
			return RI_ST_UNAVAILABLE;
		*purged += b.n;
		if (b.n < RI_PURGE_BATCH)
			return RI_ST_OK;
	}
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
		if ((rc = c->be->write_head(c->bk, &jh, lh, &now)) != RI_ST_OK)
			return rc == RI_ST_INTEGRITY ? rc : ri_st_recode(c, RI_ST_UNAVAILABLE);
		if ((rc = ri_eng_lease_get(c, kind, act_key, true, &l, &exists)) != RI_ST_OK) {
			c->be->rollback(c->bk);
			return rc == RI_ST_INTEGRITY ? rc : ri_st_recode(c, RI_ST_UNAVAILABLE);
		}
		if (ri_lease_free(exists ? &l : NULL, holder, now)) {
			/* the fencing token: the instance's grant counter, under the
			 * journal head's MAC -- it only ever increases, for every key,
			 * even should a lease row be deleted */
			jh.grants++;
			if (ri_eng_lease_put(c, kind, act_key, holder, now + duration, jh.grants) != RI_ST_OK ||
			    c->be->head_put(c->bk, &jh, lh) != RI_ST_OK) {
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

int
ri_eng_remaining(struct ri_store *st, const char *kind, const char *act_key, const char *holder, ri_ms *left)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_lease_row l;
	bool exists, began;
	ri_ms now;
	int rc;

	*left = RI_NONE;
	if ((rc = c->be->read_begin(c->bk, &began)) != RI_ST_OK)
		return rc;
	if ((rc = c->be->clock_now(c->bk, &now)) == RI_ST_OK &&
	    (rc = ri_eng_lease_get(c, kind, act_key, false, &l, &exists)) == RI_ST_OK &&
	    exists && l.held && strcmp(l.holder, holder) == 0 && l.expires > now)
		*left = l.expires - now;
	c->be->read_end(c->bk, began);
	return rc;
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

	/* the head first, as every writer (the lock order), though a release
	 * does not move it */
	if ((rc = c->be->write_head(c->bk, &jh, lh, &now)) != RI_ST_OK)
		return rc == RI_ST_INTEGRITY ? rc : ri_st_recode(c, RI_ST_UNAVAILABLE);
	if ((rc = ri_eng_lease_get(c, kind, act_key, true, &l, &exists)) != RI_ST_OK) {
		c->be->rollback(c->bk);
		return rc;
	}
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
