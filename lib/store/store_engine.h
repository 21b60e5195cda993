/*
 * store_engine.h -- the store's protocol steps written once (store_engine.c,
 * its write path in store_writes.c, its cuts in store_cuts.c)
 * over a narrow table of backend primitives, the way SQLite's VFS keeps
 * its logic above sqlite3_io_methods.  A backend (store_sqlite.c,
 * store_pg.c) implements the primitives with its own SQL and decoding
 * only, and keeps its performance machinery (PostgreSQL's read-ahead,
 * deferred writes, batched node writes) behind them; a third backend
 * would implement them and nothing else.
 *
 * A primitive answers RI_ST_OK, RI_ST_NOT_KNOWN where it says so, or the
 * code of its own failure, already recorded in the handle's error
 * (ri_st_fail): the engine adds the protocol's judgement, never a second
 * message over the backend's.
 */
#ifndef RI_STORE_ENGINE_H
#define RI_STORE_ENGINE_H

#include "store/heads.h"
#include "store/store_common.h"

/* scope_newest's answer about the newest row's hash */
enum ri_hashed {
	RI_HASH_UNREAD = 0,             /* not read: the engine reads it (hash_at) */
	RI_HASH_READ,                   /* read with the seq */
	RI_HASH_NONE                    /* the row has none (or there is no row) */
};

/* purge_due's answer, a row at a time: a payload whose retention ended
 * (kind as stored; invocation_id NULL when the record carries none).
 * Another answer than RI_ST_OK stops the walk and is purge_due's. */
typedef int (*ri_purge_fn)(void *arg, int64_t seq, const char *kind, const char *invocation_id);

/* the tables whose every row ri-audit, a seal and rebuild read (row_keys) */
enum ri_rows {
	RI_ROWS_LEASES = 0,             /* kind, act_key: two keys a row */
	RI_ROWS_ACTORS,                 /* actor_ref */
	RI_ROWS_MARKS,                  /* name */
	RI_ROWS_ACTORS_LISTED           /* actor_ref, oldest first (created_at, then the name) */
};

/* row_keys' statement for each, the same text on every backend (standard
 * SQL over the schema both declare), and how many keys a row gives */
extern const char *const ri_eng_row_keys_sql[];
int ri_eng_row_keys_cols(enum ri_rows which);

/* what a read of one keyed row found */
enum ri_found {
	RI_ROW_NONE = 0,                /* no row */
	RI_ROW_OK,                      /* a row, every column decoded exactly */
	RI_ROW_MALFORMED                /* a row whose columns are not what ri writes */
};

/* which rows records_from reads: from seq `from` up (desc: down), of one
 * scope (SCOPE_ALL: every row; SCOPE_INV: invocation_id a; SCOPE_ACT:
 * kind a, act key b), at most limit rows (0: every one) */
struct ri_rows_query {
	int64_t from;
	bool desc;
	int type;
	const char *a, *b;
	int64_t limit;
	/* desc, and from is the scope's verified head in the reading
	 * snapshot: no row of the scope lies above it there (the head agrees
	 * with the newest row, or the read failed closed before this), so a
	 * backend may ask with no upper bound -- the same rows, by a
	 * statement that does not wait for the head (issue 43, read_ahead) */
	bool from_head;
};
typedef int (*ri_row_fn)(void *arg, struct ri_record *r, struct ri_raw *w, bool *stop);

/* One range read sent ahead (read_ahead): its scope and its first page. */
struct ri_ahead_read {
	struct scope sc;
	struct ri_rows_query rows;
};

struct ri_backend {
	/* The stored hash of the record at seq (>= 1): NOT_KNOWN when no row
	 * holds seq or its hash is not one. */
	int (*record_hash)(void *bk, int64_t seq, unsigned char out[RI_HASH_LEN]);
	/* More than one shard (docs/SHARDS.md): the newest record of shard
	 * below seq, its seq and stored hash -- NOT_KNOWN when the shard has
	 * none below seq (its genesis is the link); and the seq the next
	 * append to shard is given, inside the write transaction under that
	 * shard's lock, above every record of the shard -- with the clock
	 * read after it allocated it when that is later than the head's
	 * (at; RI_NONE: the head's stands), so the record's stamp follows its
	 * seq (docs/SHARDS.md, the mark's settle wait). */
	int (*shard_prev)(void *bk, int shard, int64_t seq, int64_t *before, unsigned char out[RI_HASH_LEN]);
	int (*seq_next)(void *bk, int shard, int64_t *seq, ri_ms *at);
	/* The newest seq of a scope as the rows say it (0 when none): a, b
	 * the scope's fields (store_common.h scope_make); the backend may
	 * read the row's hash in the same statement (*hashed). */
	int (*scope_newest)(void *bk, const struct scope *sc, const char *a, const char *b, int64_t *seq,
	    unsigned char hash[RI_HASH_LEN], enum ri_hashed *hashed);
	/* The node store of the tree of scope heads (heads.h ri_tree_io, ctx
	 * the backend's handle): NOT_KNOWN for an absent node. */
	int (*node_get)(void *bk, const unsigned char *id, size_t idlen, unsigned char body[RI_NODE_MAX], size_t *len);
	int (*node_put)(void *bk, const unsigned char *id, size_t idlen, const unsigned char *body, size_t len);
	/* The verified head of a shard and the hash of its newest record:
	 * read and judged by the backend, which knows how to read it in one
	 * round trip (ri_jhead_judge, ri_witness_judge).  Every head
	 * primitive names its shard (docs/SHARDS.md; h->shard set). */
	int (*jhead_get)(void *bk, int shard, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN]);
	/* Optional (NULL: none): key's path of the tree is read next -- a
	 * backend that pays a round trip a node fetches the path at once. */
	int (*path_hint)(void *bk, const unsigned char key[RI_SCOPE_LEN]);
	/* An actor's registry row, decoded (not judged). */
	int (*actor_read)(void *bk, const char *actor, struct ri_actor_row *row, enum ri_found *found);
	/* A lease row, decoded (not judged); lock: the append's or the take's
	 * own, held to the transaction's end (after the head: the lock order)
	 * where the backend has row locks. */
	int (*lease_read)(void *bk, const char *kind, const char *act_key, bool lock, struct ri_lease_row *l,
	    enum ri_found *found);
	/* Insert or replace a lease row (holder NULL: free), its MAC given. */
	int (*lease_write)(void *bk, const char *kind, const char *act_key, const char *holder, ri_ms expires,
	    int64_t token, const unsigned char mac[RI_HASH_LEN]);
	/* Optional (NULL: the fence's terminus is issue + journal_write_bound
	 * - allowance, on the clock now was read on).  A backend whose `now`
	 * is another clock than the writer's (the server's) carries the
	 * terminus over to it. */
	int (*fence_until)(void *bk, const struct ri_fence *f, ri_ms now, ri_ms *until);
	/* Optional: the fence held at the append (journal fence 3) -- a
	 * backend that checks it again at COMMIT keeps what it needs. */
	void (*fence_armed)(void *bk, const char *kind, const char *act_key, const struct ri_fence *f, ri_ms until);
	/* A read transaction (one snapshot) unless one is open already
	 * (*began false); read_end ends what read_begin began. */
	int (*read_begin)(void *bk, bool *began);
	void (*read_end)(void *bk, bool began);
	/* Optional.  A lease row the write about to begin reads, locked,
	 * after the head's lock: the backend may send it with that lock
	 * (issue 43: the take and the release, one round trip less). */
	void (*lease_ahead)(void *bk, const char *kind, const char *act_key);
	/* Optional (NULL: none).  The release in one round trip (issue 43):
	 * in a write transaction of its own, under the head's lock (the lock
	 * order), the lease row made free -- holder none, expiry 0, was's
	 * token, under mac -- only where it stands exactly as was (holder,
	 * expiry, token and MAC), and committed.  *done: the row matched and
	 * was freed; false with RI_ST_OK: nothing matched, nothing written.
	 * Any other answer: the release's fate is the failure's. */
	int (*lease_free_if)(void *bk, const char *kind, const char *act_key, const struct ri_lease_row *was,
	    const unsigned char mac[RI_HASH_LEN], bool *done);
	/* Optional (NULL: nothing read ahead).  The reads of the command's
	 * read snapshot about to be made (store.h read_ahead), inside it (the
	 * engine began it): v[i] a range read's scope and the page of its
	 * records that follows, as ri_eng_range_read will ask for them. */
	void (*read_ahead)(void *bk, const struct ri_ahead_read *v, size_t n, const struct ri_ahead *ah);
	/* Optional (NULL: none held).  The caller waits for the journal to
	 * change: a read snapshot read_end left open ends (issue 43). */
	void (*settle)(void *bk);
	/* A write transaction (the journal's writers serialised) and its end:
	 * commit answers OK or the code of its failure; rollback keeps the
	 * handle's error (what failed inside the transaction). */
	int (*write_begin)(void *bk);
	int (*commit)(void *bk);
	void (*rollback)(void *bk);
	/* jhead_get with the clock the store judges by, read in the same
	 * transaction: the host's (ri_now) or the server's. */
	int (*jhead_now)(void *bk, int shard, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN], ri_ms *now);
	/* Keyless readers: the newest audit.sealed record as the rows say it
	 * (*seq untouched when none). */
	int (*sealed_rows)(void *bk, int64_t *seq);
	/* Every row of the open-intents index into os (ri_open_scan_row). */
	int (*open_rows)(void *bk, struct ri_open_scan *os);
	/* A mark's row, decoded (not judged: *found RI_ROW_MALFORMED when its
	 * columns are not ri's), and its replacement, MAC given. */
	int (*mark_read)(void *bk, const char *name, int64_t *seq, unsigned char mac[RI_HASH_LEN], enum ri_found *found);
	int (*mark_write)(void *bk, const char *name, int64_t seq, const unsigned char mac[RI_HASH_LEN]);
	/* A write transaction begun, the clock read and the head verified
	 * (*now, *jh, lh); on a failure the transaction is rolled back, its
	 * error kept. */
	int (*write_head)(void *bk, int shard, struct ri_jhead *jh, unsigned char lh[RI_HASH_LEN], ri_ms *now);
	/* Inside the write transaction write_head began: another shard's
	 * head, locked (where the backend has row locks) and verified -- a
	 * cut across shards takes them in ascending order (docs/SHARDS.md). */
	int (*head_also)(void *bk, int shard, struct ri_jhead *jh, unsigned char lh[RI_HASH_LEN]);
	/* A new registry row (service, cred_hash, created, reg_seq, mac; not
	 * revoked): RI_ST_EXISTS, error not set, when the name is taken; and
	 * a revocation of one (revoked, reg_seq, mac). */
	int (*actor_insert)(void *bk, const char *actor, const struct ri_actor_row *row);
	int (*actor_update)(void *bk, const char *actor, const struct ri_actor_row *row);

	/* ---- the records table read (issue 42: reads, the walks) ---- */
	/* A transaction is open already (a traversal's, a read session's):
	 * the reads that trust or peek need one. */
	bool (*in_snapshot)(void *bk);
	/* Optional (NULL: read_begin): the one snapshot of a traversal, which
	 * may outlast a read's budget; read_end ends it. */
	int (*scan_begin)(void *bk, bool *began);
	/* The record of event_id, decoded (load_row: not judged):
	 * RI_ST_NOT_KNOWN, error not set, when no row holds it. */
	int (*record_by_id)(void *bk, const char *event_id, struct ri_record *r, struct ri_raw *w);
	/* The rows of q in seq order, each decoded (load_row: not judged) and
	 * handed to each, which owns it; each's answer other than RI_ST_OK
	 * ends the read with it, *stop ends it with RI_ST_OK. */
	int (*records_from)(void *bk, const struct ri_rows_query *q, ri_row_fn each, void *arg);
	/* peek's columns of the record of event_id (store.h peek):
	 * RI_ST_NOT_KNOWN, error not set, when none. */
	int (*peek_row)(void *bk, const char *event_id, struct ri_record *out);
	/* The invocation index alone: its records' first and last seq and
	 * count (0s when none). */
	int (*inv_rows)(void *bk, const char *invocation_id, int64_t *first, int64_t *last, int64_t *n);
	/* The event id of the record at seq, or "" (what a seal answers when
	 * the head is sealed already). */
	void (*event_id_at)(void *bk, int64_t seq, char out[RI_ID_LEN + 1]);
	/* Optional: the write transaction open (a seal's, a rebuild's) may
	 * outlast a write's budget; what names it in an error. */
	int (*unbound)(void *bk, const char *what);

	/* ---- rebuild's writes of the derived tables (issue 42) ---- */
	/* Every row of the open-intents index, every node of the tree (and
	 * the backend's caches of them) deleted. */
	int (*open_reset)(void *bk);
	int (*nodes_reset)(void *bk);
	/* One open-intents row inserted, *added when a row was added (none
	 * there for inv before); the engine folds its element into the head's
	 * accumulator.  first: the invocation's authenticated scope head says
	 * it has no record yet, so no row can stand for it -- a backend may
	 * write it without awaiting the answer, a row there all the same
	 * failing the append. */
	int (*open_insert)(void *bk, const char *inv, int64_t seq, const char *kind, const char *act_key,
	    const char *event_id, ri_ms recorded_at, bool first, bool *added);
	/* Each scope of a type (SCOPE_ACT: a kind, b act key; SCOPE_INV: a
	 * invocation id, b NULL) with its newest seq, to fn. */
	int (*scope_lasts)(void *bk, int type, int (*fn)(void *arg, const char *a, const char *b, int64_t last),
	    void *arg);
	/* A mark deleted (name "": the marks whose name is not text); and,
	 * optional, the lease rows whose keys are not text deleted, *n
	 * counted. */
	void (*mark_drop)(void *bk, const char *name);
	void (*leases_malformed_drop)(void *bk, int64_t *n);

	/* ---- the audit's state check (issue 42) ---- */
	/* The schema as ri creates it: another code than RI_ST_OK or
	 * RI_ST_UNAVAILABLE, why set, when it is not. */
	int (*schema_judge)(void *bk, char *why, size_t n);
	/* The head row as stored (not judged), its MAC, and the stored hash
	 * of the record it names: another code than RI_ST_OK or
	 * RI_ST_UNAVAILABLE, the error saying why, when one is not there. */
	int (*jhead_raw)(void *bk, int shard, struct ri_jhead *h, unsigned char lh[RI_HASH_LEN],
	    unsigned char mac[RI_HASH_LEN]);
	/* What a leaf of the tree is judged against: the record at seq's kind,
	 * act key, invocation id (the caller frees them) and hash;
	 * RI_ST_NOT_KNOWN when there is no such row or it is not shaped so,
	 * RI_ST_UNAVAILABLE (error not set) when it cannot be asked. */
	int (*leaf_row)(void *bk, int64_t seq, char **kind, char **act_key, char **inv, unsigned char hash[RI_HASH_LEN]);
	/* How many act scopes and invocation scopes the rows hold. */
	int (*scope_counts)(void *bk, int64_t *acts, int64_t *invs);
	/* Inside a write transaction: the records whose payload's retention
	 * ended by now (and that still hold it), oldest end first, at most
	 * RI_PURGE_BATCH of them, each to `each`; a record's payload and salt
	 * destroyed (payload_drop); an invocation's row out of the
	 * open-intents index, its element out of jh's accumulator (none: OK). */
	int (*purge_due)(void *bk, ri_ms now, ri_purge_fn each, void *arg);
	int (*payload_drop)(void *bk, int64_t seq);
	int (*open_remove)(void *bk, struct ri_jhead *jh, const char *invocation_id);
	/* The store's clock (the host's, ri_now, or the server's), read
	 * inside the open transaction where the backend reads it there: what
	 * a read, a traversal and a lease are judged by. */
	int (*clock_now)(void *bk, ri_ms *now);
	/* The journal head written (MACed) as jh, its newest hash lh, inside
	 * the write transaction: a take's grant counter, rebuild's head. */
	int (*jhead_put)(void *bk, const struct ri_jhead *jh, const unsigned char lh[RI_HASH_LEN]);
	/* Optional: the lease's own writes (take, release) made less durable
	 * for their span (false), then as before (true). */
	void (*lease_sync)(void *bk, bool durable);
	/* Optional (NULL: the take's wait naps): wait up to ms for a change
	 * another writer commits (ri_take_wait's change); false when it
	 * cannot, and the wait then naps. */
	bool (*wait_change)(void *bk, int64_t ms);
	/* Optional (NULL: false): after a wait, whether to check the section
	 * again in a plain read before the next take -- a backend whose wait
	 * wakes at others' commits; it returns once the commit that woke it
	 * is readable. */
	bool (*wake_recheck)(void *bk);
	/* The keys of every row of a table (enum ri_rows), as a vector of
	 * strings freed with ri_strings_free: a key whose column is not the
	 * text ri writes is NULL (a malformed row).  What ri-audit and a seal
	 * verify, rebuild resets, and the actor list reads. */
	int (*row_keys)(void *bk, enum ri_rows which, char ***keys, size_t *n);

	/* ---- the append (issue 42: ri_eng_append_locked, ri_eng_record_action) ---- */
	/* The recorded_at of the record at seq (the head's), RI_NONE when it
	 * is not known: the next record's never goes back past it.  A failure
	 * is step 2 of the append. */
	int (*recorded_at_of)(void *bk, int64_t seq, ri_ms *at);
	/* With shards: the floor recorded_at_of answers is the write's own
	 * shard's newest record's, whatever seq it is asked (PostgreSQL, whose
	 * shards commit in any order: a record is stamped after its shard's
	 * previous one) -- not the journal's newest (SQLite, one writer). */
	bool shard_stamps;
	/* One records row, every column given: h's, the canonical payload,
	 * its salt, the record's hash and MAC.  A failure is step 2 of the
	 * append. */
	int (*record_insert)(void *bk, const struct ri_header *h, const char *payload,
	    const unsigned char salt[RI_SALT_LEN], const unsigned char hash[RI_HASH_LEN],
	    const unsigned char mac[RI_HASH_LEN]);
	/* Optional: the append reads the act's and the invocation's scope
	 * heads next (a backend that pays a round trip a read fetches them at
	 * once). */
	int (*scopes_hint)(void *bk, const unsigned char act[RI_SCOPE_LEN], const char *kind, const char *act_key,
	    const unsigned char inv[RI_SCOPE_LEN], const char *invocation_id);
	/* Optional: record_action of a (kind its kind) begins next -- what it
	 * will read may be sent ahead with its write_head. */
	void (*append_ahead)(void *bk, const struct ri_append *a, const char *kind);
	/* Optional (NULL: the engine reads the bindings' scope head under the
	 * head lock and judges it, ri_append_bindings_judge): a's bindings
	 * guard checked by the backend in the write transaction. */
	int (*bindings_guard)(void *bk, const struct ri_append *a);
	/* Optional (NULL: commit): record_action's COMMIT of out's record --
	 * the backend may send what it held for it and name a commit whose
	 * reply was lost by the record.  A failure ends the transaction. */
	int (*append_commit)(void *bk, const struct ri_append *a, struct ri_appended *out);
};

/* the most payloads one purge transaction destroys (purge_due) */
#define RI_PURGE_BATCH 512

/*
 * Every backend's handle begins so (struct sq, struct pg): the store the
 * protocol holds, then the core; the engine's store.h ops find the core
 * from the store.
 */
struct ri_eng_store {
	struct ri_store base;
	struct ri_st_core core;
};
#define RI_ENG_CORE(st) (&((struct ri_eng_store *)(void *)(st))->core)

/* A backend's handle joins the engine: its primitives (be, over bk) and
 * the tree's node cache it keeps for as long as it chooses (heads.h). */
void ri_eng_attach(struct ri_st_core *c, const struct ri_backend *be, void *bk, struct ri_tree_cache *nodes);

/* ---- the journal head, the tree of scope heads -------------------------- */

/* Stored hash of the record at seq (0 = the genesis); a missing row is an
 * integrity failure naming seq. */
int ri_eng_hash_at(struct ri_st_core *c, int64_t seq, unsigned char out[RI_HASH_LEN]);
/* The same in a shard's chain: seq 0 is the shard's genesis. */
int ri_eng_shard_hash_at(struct ri_st_core *c, int shard, int64_t seq, unsigned char out[RI_HASH_LEN]);
/* The hash the record at seq of shard links to: its shard's record before
 * it, or the shard's genesis (with one shard, seq - 1's). */
int ri_eng_link_hash(struct ri_st_core *c, int shard, int64_t seq, unsigned char out[RI_HASH_LEN]);
/* ri_walk's hash_at and ri_seal_walk's tree_get (store_common.h), backend
 * the core. */
int ri_eng_hash_at_cb(void *core, int64_t seq, unsigned char out[RI_HASH_LEN]);
int ri_eng_link_hash_cb(void *core, int shard, int64_t seq, unsigned char out[RI_HASH_LEN]);
/* A row of shard is one of its act's shard's (else an integrity failure). */
int ri_eng_shard_judge(struct ri_st_core *c, const struct ri_record *r, int shard);
int ri_eng_tree_get_cb(void *core, const struct ri_jhead *jh, const unsigned char key[RI_SCOPE_LEN], bool *present,
    struct ri_leaf *leaf);
/* A scope's leaf in the tree under jh's root, and its replacement (jh's
 * root moves); a malformed tree is an integrity failure. */
int ri_eng_tree_get(struct ri_st_core *c, const struct ri_jhead *jh, const unsigned char key[RI_SCOPE_LEN], bool *present,
    struct ri_leaf *leaf);
int ri_eng_tree_put(struct ri_st_core *c, struct ri_jhead *jh, const unsigned char key[RI_SCOPE_LEN], int64_t seq,
    const unsigned char hash[RI_HASH_LEN]);
/* The verified head of a scope under a verified journal head (jh), and
 * the same with the journal's own head verified first (ri_eng_head_get). */
int ri_eng_scope_head(struct ri_st_core *c, const struct ri_jhead *jh, const struct scope *sc, const char *a,
    const char *b, int64_t *last);
int ri_eng_head_get(struct ri_st_core *c, const struct scope *sc, const char *a, const char *b, int64_t *last);

/* ---- keys ------------------------------------------------------------------ */

/* The credential hash key and the shard key, derived from the integrity
 * key (c->key set). */
void ri_eng_derive_keys(struct ri_st_core *c);

/* ---- shards (docs/SHARDS.md) -------------------------------------------- */

/* An act's shard (kind audit: shard 0), and a scope's. */
int ri_eng_shard(const struct ri_st_core *c, const char *kind, const char *act_key);
int ri_eng_scope_shard(const struct ri_st_core *c, const struct scope *sc, const char *a, const char *b);

/* ---- the actor registry (Actor Identity) -------------------------------- */

/* An actor's row (*exists: there is one), verified against its MAC and
 * its scope's head in the tree under jh (ri_actor_row_judge). */
int ri_eng_actor_get(struct ri_st_core *c, const struct ri_jhead *jh, const char *actor, struct ri_actor_row *row,
    bool *exists);
/* The credential check at record_action (who may be NULL): an
 * unreachable registry is step 2 of the append. */
int ri_eng_check_credential(struct ri_st_core *c, const struct ri_jhead *jh, const char *actor, const char *cred,
    ri_ms now, struct ri_actor *who);

/* ---- leases and the journal fence --------------------------------------- */

/* A lease row (*exists: there is one) verified against its MAC; lock: see
 * ri_backend.lease_read. */
int ri_eng_lease_get(struct ri_st_core *c, const char *kind, const char *act_key, bool lock, struct ri_lease_row *l,
    bool *exists);
int ri_eng_lease_put(struct ri_st_core *c, const char *kind, const char *act_key, const char *holder, ri_ms expires,
    int64_t token);
/* journal fence 3 inside the append's transaction, at now (the clock the
 * append reads): the writer still holds the section with the allowance
 * to spare, and its write's terminus has not passed. */
int ri_eng_check_fence(struct ri_st_core *c, const char *kind, const char *act_key, const struct ri_fence *f,
    ri_ms now);

/* ---- the append ---------------------------------------------------------------- */

/* Append one record inside the open write transaction, under the journal
 * head jh verified in it (lh: the hash at jh->last_seq): jh moves with it. */
int ri_eng_append_locked(struct ri_st_core *c, struct ri_jhead *jh, const unsigned char lh[RI_HASH_LEN],
    const struct ri_append *a, int role, bool unplaced, ri_ms now, struct ri_appended *out);
/* store.h record_action, substrate and append_substrate */
int ri_eng_record_action(struct ri_store *st, const struct ri_append *a, struct ri_appended *out);
int ri_eng_substrate(struct ri_store *st, const char *action_ref, json_t *data, struct ri_appended *out);
int ri_eng_append_many(struct ri_store *st, const struct ri_append *v, size_t n, struct ri_appended *out);

/* ---- the open-intents index ---------------------------------------------- */

/* The index verified against the head jh, and the rows the filters choose
 * into *out (NULL: verify only; store_common.h ri_open_scan). */
int ri_eng_open_scan(struct ri_st_core *c, const struct ri_jhead *jh, const char *kind, const char *act_key,
    ri_ms aged_by, struct ri_open_intent **out, size_t *n);

/* ---- the registry's rows -------------------------------------------------- */

/* Every actor row (verified under jh) and every mark, and with leases
 * every lease row first.  each NULL (a seal): the first failure is the
 * answer.  Otherwise (ri-audit) each failure is reported to each as Check
 * 8.1.3, and only a journal that cannot be read (RI_ST_UNAVAILABLE) stops
 * the walk. */
int ri_eng_rows_verify(struct ri_st_core *c, const struct ri_jhead *jh, bool leases, ri_state_fn each, void *arg);

/* ---- shared by store_engine.c, store_cuts.c and store_writes.c ------------ */

/* Every shard's head (c->shards of them, freed with ri_eng_heads_free):
 * locked in one write transaction, shard 0's first then ascending (a cut
 * across shards, docs/SHARDS.md lock order), and written back as moved. */
struct ri_eng_heads {
	struct ri_jhead *jh;
	unsigned char (*lh)[RI_HASH_LEN];
};
void ri_eng_heads_free(struct ri_eng_heads *hs);
int ri_eng_write_all(struct ri_st_core *c, struct ri_eng_heads *hs, ri_ms *now);
int ri_eng_put_all(struct ri_st_core *c, struct ri_eng_heads *hs);
/* One shard's head: a write transaction begun, the head locked and
 * verified (ri_backend.write_head), and the lease row this handle's last
 * append saw (c->seen) dropped. */
int ri_eng_write_head(struct ri_st_core *c, int shard, struct ri_jhead *jh, unsigned char lh[RI_HASH_LEN], ri_ms *now);
/* The shard of the record at seq (its act's, read unverified: routing). */
int ri_eng_record_shard(struct ri_st_core *c, int64_t seq, int *shard);
/* A mark's row judged against its MAC (*seq 0 when none). */
int ri_eng_mark_judged(struct ri_st_core *c, const char *name, int64_t *seq);
/* An open intent's row added, its element folded into jh's accumulator. */
int ri_eng_open_add(struct ri_st_core *c, struct ri_jhead *jh, const char *inv, int64_t seq, const char *kind,
    const char *act_key, const char *event_id, ri_ms recorded_at, bool first);
/* A substrate record appended under jh inside the caller's write. */
int ri_eng_append_substrate(struct ri_st_core *c, struct ri_jhead *jh, const unsigned char lh[RI_HASH_LEN],
    const char *action_ref, const char *act_key, json_t *data, ri_ms now, struct ri_appended *out);

/* ---- store.h ops written once ------------------------------------------- */

int ri_eng_open_intents(struct ri_store *st, const char *kind, const char *act_key, ri_ms aged_by,
    struct ri_open_intent **out, size_t *n);
int ri_eng_authenticate(struct ri_store *st, const char *actor, const char *cred, struct ri_actor *out);
int ri_eng_mark_get(struct ri_store *st, const char *name, int64_t *seq);
int ri_eng_mark_set(struct ri_store *st, const char *name, int64_t seq);
ri_ms ri_eng_mark_lag(struct ri_store *st, ri_ms settle);
int ri_eng_actor_add(struct ri_store *st, const char *actor, bool service, char credential[128]);
int ri_eng_actor_revoke(struct ri_store *st, const char *actor);
int ri_eng_actor_list(struct ri_store *st, struct ri_actor **out, size_t *n);
int ri_eng_head(struct ri_store *st, int64_t *seq, unsigned char hash[32]);
int ri_eng_sealed(struct ri_store *st, int64_t *seq, unsigned char hash[32]);
int ri_eng_read_record(struct ri_store *st, const char *event_id, struct ri_record *out);
int ri_eng_range_read(struct ri_store *st, const struct ri_query *q, struct ri_records *out);
int ri_eng_traverse(struct ri_store *st, ri_traverse_fn each, void *arg);
int ri_eng_peek(struct ri_store *st, const char *event_id, struct ri_record *out);
int ri_eng_inv_span(struct ri_store *st, const char *invocation_id, int64_t *first, int64_t *last, int64_t *n);

/* ---- seals ----------------------------------------------------------------- */

/* Sign the head and append audit.sealed after it, in one transaction. */
int ri_eng_seal(struct ri_store *st, const unsigned char sk[64], json_t *extra, struct ri_appended *out);
/* The derived tables rebuilt from a whole verified traversal. */
int ri_eng_rebuild(struct ri_store *st, json_t **report);
/* ri-audit's state check: what the traversal does not see (store.h). */
int ri_eng_audit_state(struct ri_store *st, ri_state_fn each, void *arg);
int ri_eng_purge(struct ri_store *st, ri_ms now, int64_t *purged);
int ri_eng_take(struct ri_store *st, const char *kind, const char *act_key, const char *holder, ri_ms duration,
    struct ri_grant *g);
int ri_eng_remaining(struct ri_store *st, const char *kind, const char *act_key, const char *holder, ri_ms *left);
int ri_eng_release(struct ri_store *st, const char *kind, const char *act_key, const char *holder);
void ri_eng_read_ahead(struct ri_store *st, const struct ri_ahead *ah);

/* The store operations (ri_store_ops) the engine answers for every
 * backend, written once: a backend's table starts with these and adds its
 * own (open_kinds, backup, instance_id, error, close, ...). */
#define RI_ENG_STORE_OPS \
	.record_action = ri_eng_record_action, .read_record = ri_eng_read_record, \
	.range_read = ri_eng_range_read, .open_intents = ri_eng_open_intents, .purge = ri_eng_purge, \
	.actor_add = ri_eng_actor_add, .actor_revoke = ri_eng_actor_revoke, .actor_list = ri_eng_actor_list, \
	.authenticate = ri_eng_authenticate, .take = ri_eng_take, .remaining = ri_eng_remaining, \
	.release = ri_eng_release, .mark_get = ri_eng_mark_get, .mark_set = ri_eng_mark_set, \
	.mark_lag = ri_eng_mark_lag, \
	.traverse = ri_eng_traverse, .peek = ri_eng_peek, .inv_span = ri_eng_inv_span, .seal = ri_eng_seal, \
	.substrate = ri_eng_substrate, .append_substrate = ri_eng_append_many, .rebuild = ri_eng_rebuild, \
	.audit_state = ri_eng_audit_state, .head = ri_eng_head, .sealed = ri_eng_sealed, \
	.read_ahead = ri_eng_read_ahead

#endif
