/*
 * store_common.h -- what every backend of store.h judges the same way:
 * one stored record row against the hash of its predecessor.  The row is
 * decoded by the backend (each checks its own storage types); the verdict
 * -- shape, payload digest, chain link, MAC, purge legality -- is made
 * here, once, so a check is never written twice (docs/INTEGRITY.md).
 */
#ifndef RI_STORE_COMMON_H
#define RI_STORE_COMMON_H

#include <stdarg.h>
#include <sodium.h>

#include "util/fault.h"
#include "util/integrity.h"
#include "store/store.h"
#include "store/witness.h"

/*
 * What every backend's handle holds to judge a row the same way: the
 * configuration, the keys, the instance, the witness's anchor and the
 * error of the operation.  Each backend's handle begins its own fields
 * after it (store_sqlite.c's struct sq, store_pg.c's struct pg).
 */
struct ri_backend;
struct ri_tree_cache;

#define RI_WITNESS_PEND 8       /* lines held for one transaction (then the newest kept) */

/* A lease row as read (heads.h: its MAC). */
struct ri_lease_row {
	char holder[512];
	bool held;                      /* holder not NULL */
	ri_ms expires;
	int64_t token;
	unsigned char mac[RI_HASH_LEN];
};

struct ri_st_core {
	const struct ri_config *cfg;
	unsigned char *key;             /* NULL: chain-only (RI_NO_KEY) */
	size_t keylen;
	unsigned char cred_key[crypto_generichash_KEYBYTES];
	unsigned char shard_key[RI_HASH_LEN];   /* heads.h ri_shard_key_derive (a key held) */
	unsigned char instance_id[RI_INSTANCE_LEN];
	unsigned char genesis[RI_HASH_LEN];
	int shards;                             /* format 4: the meta row's, bound by every head's MAC */
	/* seqs with gaps: allocations that never committed (PostgreSQL with
	 * shards: a sequence, docs/SHARDS.md); a shard's chain, its links and
	 * its head prove its records -- the seq order alone proves nothing.
	 * false: the allocator is contiguous (SQLite's one writer), and a gap
	 * is a deleted row (Check 8.1.1). */
	bool seq_gaps;
	int64_t boundary;                       /* a migrated journal's last format-3 record (0: none),
	                                         * bound by every head's MAC (docs/SHARDS.md) */
	/* the witness's highest line (the anchor): the journal may not be
	 * behind it nor disagree with it */
	bool anchored;
	int anchor_shard;               /* the shard whose record the anchor names: the
	                                 * head it is judged against (docs/SHARDS.md) */
	/* with shards and the key: each shard's own newest line among the
	 * witness's recent ones (seq 0: none there) -- a shard put back in
	 * time alone is behind its own, whichever shard the newest names */
	struct ri_shard_head *shard_anchor;
	int64_t anchor_seq;
	unsigned char anchor_hash[RI_HASH_LEN];
	/* the witness (NULL: none, or "witness": null), and the lines of the
	 * records the open write transaction appended, added once it commits
	 * (issue 39: the witness advances with every append) */
	struct ri_witness *witness;
	int64_t witness_epoch;          /* the epoch this handle's lines are written in */
	struct ri_witnessed pend[RI_WITNESS_PEND];
	size_t n_pend;
	struct ri_store_error err;
	struct ri_payloads *payloads;   /* inside a traversal: ri_payloads_begin */
	/* the backend's primitives over its handle bk, and the tree's node
	 * cache it keeps (store_engine.h ri_eng_attach) */
	const struct ri_backend *be;
	void *bk;
	struct ri_tree_cache *nodes;
	/* open step 5.3 (issue 43): the act's lease row as the last append's
	 * fence check read and verified it under the head's lock, with the
	 * clock that check judged on; landed once that append committed.  No
	 * writer changes a lease row without the head's lock (the lock order),
	 * so it stands as at the commit until a write of this handle, which
	 * drops it (ri_eng_write_head) */
	struct ri_lease_seen {
		bool valid, landed, exists;
		unsigned char scope[RI_SCOPE_LEN];
		struct ri_lease_row l;
		ri_ms now;                      /* the write's instance clock */
		int64_t mono;                   /* host-monotonic, before that clock was read */
	} seen;
};

/* A row's stored integrity columns, beside the record they belong to. */
struct ri_raw {
	unsigned char digest[RI_HASH_LEN], hash[RI_HASH_LEN], mac[RI_HASH_LEN];
	unsigned char salt[RI_SALT_LEN];
	bool has_salt, shapes_ok;       /* shapes_ok: every column decoded exactly */
	int64_t act_prev, inv_prev;
	int shard;                      /* format 4: the row's shard (docs/SHARDS.md) */
	char *payload_text;             /* owned; NULL once purged */
};

/* The header the chain hash covers, as the row states it. */
void ri_raw_header(const unsigned char instance[RI_INSTANCE_LEN], const struct ri_record *r,
    const struct ri_raw *w, struct ri_header *h);
/*
 * Verify one row against its predecessor's hash (key NULL: chain only).
 * NULL when it verifies, else why it does not.  Either way the payload
 * text is consumed: on success r owns the parsed payload.
 */
const char *ri_raw_verify(const unsigned char instance[RI_INSTANCE_LEN], const unsigned char *key,
    size_t keylen, struct ri_record *r, struct ri_raw *w, const unsigned char prev[RI_HASH_LEN], ri_ms now,
    int fmt);
/* The hash the first record links to: format 3's genesis for a migrated
 * journal (shard 0's chain continues format 3's), shard 0's otherwise. */
static inline void
ri_core_genesis(struct ri_st_core *c)
{
	if (c->boundary > 0)
		ri_genesis_v3(c->instance_id, c->genesis);
	else
		ri_genesis(c->instance_id, c->genesis);
}
/* The hash a shard's first record links to: shard 0's is the journal's
 * (above), another's its own (ri_genesis_shard). */
static inline void
ri_core_shard_genesis(const struct ri_st_core *c, int shard, unsigned char out[RI_HASH_LEN])
{
	if (shard == 0)
		memcpy(out, c->genesis, RI_HASH_LEN);
	else
		ri_genesis_shard(c->instance_id, shard, out);
}
/* The format a record is hashed by: 3 at or below a migrated journal's
 * boundary, the current one above it. */
static inline int
ri_row_format(const struct ri_st_core *c, int64_t seq)
{
	return seq <= c->boundary ? 3 : RI_FORMAT;
}
/* ri-init --migrate (docs/SHARDS.md, "Migration"): format 3's columns of
 * records, in REC_COLS' order; format 4 adds the shard after them, which a
 * migrated record has as 0.  One list for both backends' copies. */
#define RI_F3_COLS "seq, event_id, action_ref, kind, act_key, invocation_id, actor_ref," \
	" attestation_id, recorded_at, retention_until, role, act_prev, inv_prev," \
	" payload, salt, digest, hash, mac"
/* The traversal's judgement (Check 8.1): every problem of the row, the
 * payload parsed when it is there; prev moves to the row's hash when the
 * row has one.  Consumes the payload text. */
unsigned ri_raw_problems(struct ri_st_core *c, struct ri_record *r, struct ri_raw *w,
    unsigned char prev[RI_HASH_LEN], ri_ms now);
/* A row its caller verified already in the same snapshot: parsed only. */
void ri_raw_trusted(struct ri_st_core *c, struct ri_record *r, struct ri_raw *w);

/*
 * Inside a traversal every payload is parsed once (issue 15: twice was a
 * sixth of an audit).  The audit reads each intent's invocation ahead of
 * the traversal, in the traversal's own snapshot (a trusted read); the
 * records it parsed there wait here, by seq, until the traversal reaches
 * them, and the traversal's own record waits here while its callback
 * runs, for the invocation read it makes.  One snapshot, one row, one
 * text: the parse is the same value, shared (readers never change a
 * payload).  Bounded: past RI_PAYLOADS_MAX waiting records, a payload is
 * parsed again rather than kept.  begin/end bracket the traversal; the
 * traversal drops each record's entry after its callback.
 */
#define RI_PAYLOADS_MAX 4096
void ri_payloads_begin(struct ri_st_core *c);
void ri_payloads_end(struct ri_st_core *c);
void ri_payloads_drop(struct ri_st_core *c, int64_t seq);
/* Inside a read session (store.h read_session), the records a verified
 * read verified in the session's snapshot, by seq, with their parse: a
 * later verified read of the same row takes it as it stands (the same
 * snapshot holds the same row) and only walks its links. */
bool ri_payloads_verified(struct ri_st_core *c, int64_t seq);

/* A backend's failure: e says what (and names the record), the code comes
 * back.  The first integrity failure stays for the handle's life: a run
 * that met one fails closed at its end (AMD-03); ri_st_err_clear starts
 * a new operation's error and keeps it. */
int ri_st_failv(struct ri_store_error *e, int code, int64_t seq, const char *event_id, const char *fmt,
    va_list ap) __attribute__((format(printf, 5, 0)));
void ri_st_err_clear(struct ri_store_error *e);

/* ri_st_failv over a handle's core; ri_st_recode keeps the message and
 * names another code (an unavailable journal met before the append is
 * step 2). */
int ri_st_fail(struct ri_st_core *c, int code, int64_t seq, const char *event_id, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#ifdef __clang_analyzer__
/* it returns its code: said for the analyzer, which steps into no
 * variadic function (make tidy) */
#define ri_st_fail(c, code, ...) (ri_st_fail((c), (code), __VA_ARGS__), (code))
#endif
int ri_st_recode(struct ri_st_core *c, int code);
/* One row against its predecessor (ri_raw_verify), as a store code. */
int ri_st_verify_row(struct ri_st_core *c, struct ri_record *r, struct ri_raw *w, const unsigned char prev[RI_HASH_LEN],
    ri_ms now);

/* ---- scopes (heads.h) ----------------------------------------------------- */

enum { SCOPE_ALL, SCOPE_ACT, SCOPE_INV };

struct scope {
	int type;
	unsigned char key[RI_SCOPE_LEN];        /* heads.h: SHA-256 of the scope's fields */
};

void scope_make(struct scope *sc, int type, const char *a, const char *b);
const char *scope_name(const struct scope *sc);

/* ---- a range read: one scope's records walked by their back links ---- */

/*
 * Capability requirement 1-3: a page of a scope's records, each verified
 * against its predecessor's hash, each linked to the one before it in the
 * scope, the last page ending at the scope's authenticated head -- a
 * deleted row is an integrity failure, never a shorter answer.  The
 * backend fills the fixed fields, runs its query (limit + 1 rows, from
 * `from`, in the walk's order) and hands over each row: ri_walk_peek with
 * its seq before decoding it (*full: the page is full, stop), then
 * ri_walk_take with the decoded row (consumed); ri_walk_end after the last.
 */
struct ri_walk {
	const struct scope *sc;
	bool desc, trusted;
	int64_t from, head;             /* head: the scope's authenticated head seq */
	size_t limit, cap;
	ri_ms now;
	/* the hash the record at seq of shard links to (store_engine.h
	 * ri_eng_link_hash: with one shard, seq - 1's; 0 the genesis) */
	int (*link_at)(void *backend, int shard, int64_t seq, unsigned char out[RI_HASH_LEN]);
	void *backend;
	int64_t expect_prev;            /* the walk's state */
};
/* The query's shape (page size, one filter) and its scope into sc and wk;
 * then, with the scope's head known, the walk's start. */
int ri_walk_query(struct ri_st_core *c, const struct ri_query *q, struct scope *sc, struct ri_walk *wk);
void ri_walk_begin(struct ri_walk *wk, int64_t from, int64_t head);
int ri_walk_peek(struct ri_st_core *c, struct ri_walk *wk, struct ri_records *out, int64_t seq, bool *full);
int ri_walk_take(struct ri_st_core *c, struct ri_walk *wk, struct ri_records *out, struct ri_record *r,
    struct ri_raw *w);
int ri_walk_end(struct ri_st_core *c, struct ri_walk *wk, struct ri_records *out);

/* ---- the request an append is asked for --------------------------------- */

bool ri_valid_ref(const char *v, int64_t cap);
/* an actor's name: a reference of [A-Za-z0-9._@-], never the substrate's */
bool ri_valid_actor_name(const char *n, int64_t cap);
/* "kind.verb" -> "kind"; -1 when the ref has no kind */
int ri_kind_of(const char *action_ref, char *out, size_t n);
/*
 * record_action's checks before any storage is touched: the request's
 * shape, the vocabulary (journal 2-5: the role is fixed here, from the
 * binding in force), Actor Identity's input check, payload_cap.  kind
 * and role are set; out->cause names a refusal.
 */
int ri_append_request_judge(struct ri_st_core *c, const struct ri_append *a, char *kind, size_t kindlen, int *role,
    struct ri_appended *out);
/* The role of a record appended on the substrate's own authority
 * (append_substrate): audit.* is the substrate's; a kind's ref takes the
 * vocabulary's role, an unbound kind's intent its intent role. */
int ri_substrate_role(struct ri_st_core *c, const struct ri_append *a, int *role);
/* The fault points "<tag>.before" (before storage) and "<tag>.after" (the
 * record landed), and the retention source (*fa RI_FA_NORETENTION: landed
 * on no policy). */
/* bindings are history (issue 41): the writer's decision on ri_append.bound
 * still holds at the append -- the bindings scope's verified head (last) is
 * the one it read; else RI_ST_STALE_BINDINGS, nothing written. */
int ri_append_bindings_judge(struct ri_st_core *c, const struct ri_append *a, int64_t last);
int ri_append_fault_before(struct ri_st_core *c, const struct ri_append *a, enum ri_fault_action *fa);
int ri_append_landed(struct ri_st_core *c, const struct ri_append *a, enum ri_fault_action fa, const char *kind,
    struct ri_appended *out);

/* ---- the actor registry (Actor Identity) -------------------------------- */

/* A registry row as the backend decoded it (its types checked there). */
struct ri_actor_row {
	int service;
	unsigned char cred_hash[32];
	ri_ms created, revoked;
	int64_t reg_seq;
	unsigned char mac[RI_HASH_LEN];
};

/* The stored credential hash: keyed BLAKE2b under the instance's
 * credential key. */
void ri_cred_hash(const struct ri_st_core *c, const char *cred, unsigned char out[32]);
/* A new credential ("ri1_" and 64 hex digits) into credential[128]; its
 * hash and the row's MAC into row (the rest of row set by the caller). */
void ri_credential_mint(const struct ri_st_core *c, const char *actor, char credential[128], struct ri_actor_row *row);
void ri_actor_row_mac(const struct ri_st_core *c, const char *actor, const struct ri_actor_row *row,
    unsigned char out[RI_HASH_LEN]);
/*
 * An actor's row (NULL: none) against its MAC, and its binding to the
 * newest registry record of its scope ("audit", actor; present/last_seq
 * from the tree): an older row replayed (Alice before her revocation) or
 * a deleted row is an integrity failure, never "not registered".
 */
int ri_actor_row_judge(struct ri_st_core *c, const char *actor, const struct ri_actor_row *row, bool present,
    int64_t last_seq);
/* authenticate's input check: an actor ref and a credential, and the key
 * to check them with (none: unavailable, never "anyone"). */
int ri_authenticate_request_judge(struct ri_st_core *c, const char *actor, const char *cred);
/* The credential check at record_action: a verified row (NULL: none), the
 * credential compared in constant time, revoked from the instant of
 * revocation on.  who (may be NULL) gets the actor. */
int ri_credential_judge(struct ri_st_core *c, const char *actor, const struct ri_actor_row *row, const char *cred,
    ri_ms now, struct ri_actor *who);

/* ---- leases and the journal fence --------------------------------------- */

/* A lease row (heads.h) against its MAC: altered, or an older row replayed. */
int ri_lease_row_judge(struct ri_st_core *c, const char *kind, const char *act_key, const struct ri_lease_row *l);
/* A held lease longer than any this config grants: the leases table was
 * altered (open step 2.2's wait is bounded by the longest lease). */
int ri_lease_cap_judge(struct ri_st_core *c, const char *kind, const char *act_key, ri_ms left);
/* journal fence 3: the writer (f) still holds the section (l; NULL: no
 * row) with the allowance to spare at now, and its write's terminus
 * (until, on the same clock as now) has not passed. */
int ri_fence_judge(struct ri_st_core *c, const struct ri_lease_row *l, const struct ri_fence *f, ri_ms now,
    ri_ms until);

/* ---- the journal head and its witness ---------------------------------- */

/*
 * Open the instance's witness (none with "witness": null or RI_NO_WITNESS)
 * and take its highest verified line as the anchor, once the backend knows
 * the instance id.  key NULL: a keyless reader (ri-audit --public-key),
 * whose anchor may be an unverified claim -- which can only fail it.
 */
int ri_st_witness_attach(struct ri_st_core *c, unsigned flags, ri_err *err);
/*
 * The same in two steps (issue 43): the witness opened and its newest line
 * READ before the snapshot the head is judged in begins -- so a line
 * another host adds after the read names a record that snapshot holds --
 * and judged by ri_st_witness_attach once the instance id is known.  A
 * failure here is attach's to report (it opens again).  guess: the line's
 * seq as written (0: none), the anchor the head's read may be sent with
 * before the line is judged.
 */
void ri_st_witness_read(struct ri_st_core *c, unsigned flags, int64_t *guess);
void ri_st_witness_detach(struct ri_st_core *c);
/* An append inside the write transaction: its line waits for the commit.
 * data: the record's payload (an intent's pairing datum, a closing's
 * intent event id). */
void ri_st_witness_pend(struct ri_st_core *c, const struct ri_header *h, const unsigned char hash[RI_HASH_LEN],
    json_t *data);
/* The newest pending line is a seal's: sign it (sk: the seal secret key). */
void ri_st_witness_sign(struct ri_st_core *c, const unsigned char sk[64]);
/* The transaction committed: add its lines (a failure is noted in the
 * store's error as witness_missed, never the append's failure: a witness
 * behind the journal is harmless) and advance the anchor. */
void ri_st_witness_flush(struct ri_st_core *c);
/* The transaction rolled back: its lines were never witnessed. */
void ri_st_witness_discard(struct ri_st_core *c);

/*
 * The journal head (h, its stored mac) against what the rows say: the MAC
 * over the head and the hash of its newest record (last_hash; NULL: that
 * record is missing), and the newest row (rows) is the head's last_seq --
 * a truncated or extended tail is an integrity failure.
 */
int ri_jhead_judge(struct ri_st_core *c, const struct ri_jhead *h, const unsigned char mac[RI_HASH_LEN],
    const unsigned char *last_hash, int64_t rows);
/* The witness's newest line agrees with the journal: ri_witness_wants says
 * whether the record at c->anchor_seq must be read (its hash is `at` for
 * ri_witness_judge; NULL: none there), and the judge refuses a journal
 * behind its witness (rolled back) or disagreeing with it (rewritten). */
bool ri_witness_wants(const struct ri_st_core *c, int shard, int64_t last_seq);
int ri_witness_judge(struct ri_st_core *c, int shard, int64_t last_seq, const unsigned char *at);
/* With shards: the seq of shard's own newest line (0: none to judge by),
 * and the shard's head judged against it (at: the stored hash there,
 * NULL when the journal holds none). */
int64_t ri_witness_shard_anchor(const struct ri_st_core *c, int shard);
int ri_witness_shard_judge(struct ri_st_core *c, int shard, int64_t last_seq, const unsigned char *at);

/*
 * A scope's authenticated head (leaf, from the tree; present false: none)
 * against its rows: the newest row's seq (rows; 0: none) and that row's
 * hash (newest; NULL: not there).  *last gets the scope's head seq.  A
 * scope with rows and no head, or a head its rows disagree with, is an
 * integrity failure: its records were deleted, moved or re-typed.
 */
int ri_scope_head_judge(struct ri_st_core *c, const struct scope *sc, int64_t rows, const unsigned char *newest,
    bool present, const struct ri_leaf *leaf, int64_t *last);

/* ---- ri-audit's state check of the tree of scope heads (Check 8.1.1) ------- */

/*
 * Each leaf of the tree against the record it names: that record (kind,
 * act_key, inv -- NULL: none; hash NULL: the journal does not hold it) is
 * of the leaf's own scope and is the one the leaf binds.  Then the
 * tally: as many act and invocation heads as scopes with records (acts,
 * invs), so a deleted head or hidden records are found.  Each problem goes
 * to each("8.1.1", ...).
 */
struct ri_leaf_tally {
	ri_state_fn each;
	void *arg;
	int64_t acts, invs;
};
void ri_leaf_judge(struct ri_leaf_tally *t, const unsigned char key[RI_SCOPE_LEN], const struct ri_leaf *leaf,
    const char *kind, const char *act_key, const char *inv, const unsigned char *hash);
void ri_leaf_tally_judge(const struct ri_leaf_tally *t, int64_t acts, int64_t invs);

/*
 * The leaves judged in the order of the records they name (issue 15,
 * target 3).  The walk visits scopes in key order, which is hash order: a
 * random order of the records, so a lookup a leaf read a random page of
 * the records table -- most of ri-audit's reads at 10^6 records, each
 * page some eight times over.  Instead ri_leaf_batch_add (an ri_leaf_fn)
 * holds up to cap leaves; when cap are held, and at ri_leaf_batch_end
 * after the walk, they are sorted by the seq each names and each handed
 * to judge in that order, which reads the record and calls
 * ri_leaf_judge.  The lookups go forward through the table, and a page
 * that holds several named records is read once a batch.  The verdicts
 * are the same: each leaf is judged on its own.  cap bounds the memory
 * (RI_LEAF_BATCH: ~19 MiB); with no memory for a batch, each leaf is
 * judged as it comes.  judge returns non-zero to stop (the walk stops,
 * and the tally then finds the heads it did not count).
 */
#define RI_LEAF_BATCH 262144
struct ri_leaf_item {
	unsigned char key[RI_SCOPE_LEN];
	struct ri_leaf leaf;
};
struct ri_leaf_batch;
typedef int (*ri_leaf_judge_fn)(struct ri_leaf_batch *b, const unsigned char key[RI_SCOPE_LEN],
    const struct ri_leaf *leaf);
struct ri_leaf_batch {
	struct ri_leaf_tally t;
	ri_leaf_judge_fn judge;
	void *ctx;
	size_t cap, n;
	struct ri_leaf_item *v;
};
/* An empty batch over st's journal: leaves judged st->leaf_batch at a time
 * (zero: RI_LEAF_BATCH), findings to each. */
void ri_leaf_batch_init(struct ri_leaf_batch *b, const struct ri_store *st, ri_state_fn each, void *arg,
    ri_leaf_judge_fn judge, void *ctx);
int ri_leaf_batch_add(const unsigned char key[RI_SCOPE_LEN], const struct ri_leaf *leaf, void *arg);
/* Judge what is held, in seq order, and free the batch's memory. */
int ri_leaf_batch_end(struct ri_leaf_batch *b);
/* Check 8.1.1: walk the tree under root through b, then judge the rest:
 * the walk's code (ri_tree_walk; why says what failed). */
int ri_leaf_batch_walk(const struct ri_tree_io *io, const unsigned char root[RI_HASH_LEN], struct ri_leaf_batch *b,
    char *why, size_t n);

/* ---- the open-intents index (heads.h) ------------------------------------- */

/*
 * Every row of the index folded into the count and accumulator the
 * journal head binds, so a deleted, added or altered row is an integrity
 * failure, not a crashed act the sweep never sees; the filters (kind,
 * act, age; NULL / RI_NONE: none) choose what is returned into *out (NULL:
 * verify only).  The cost is O(open intents), the sweep's own bound.
 */
struct ri_open_scan {
	const char *kind, *act_key;
	ri_ms aged_by;
	struct ri_open_intent **out;
	size_t *n;
	/* a count and accumulator a shard (ri_open_scan_begin): each row is
	 * folded into its act's shard's, which that shard's head binds */
	const struct ri_st_core *c;
	unsigned char (*acc)[RI_HASH_LEN];
	int64_t *count;
	size_t cap;
};
void ri_open_scan_begin(struct ri_open_scan *os, const struct ri_st_core *c);
void ri_open_scan_row(struct ri_open_scan *os, const char *inv, int64_t seq, const char *kind, const char *act_key,
    const char *event_id, ri_ms recorded_at);
/* jh: every shard's verified head, c->shards of them. */
int ri_open_scan_end(struct ri_st_core *c, struct ri_open_scan *os, const struct ri_jhead *jh);

/* An act's shard (docs/SHARDS.md): kind audit's in shard 0, an act's where
 * the keyed choice sends its scope key (heads.h ri_shard_of). */
int ri_st_shard_of(const struct ri_st_core *c, const char *kind, const char *act_key);
/* The shard whose head is the journal's newest: with shards the journal's
 * head is the highest of theirs (the lowest such shard; shard 0 while
 * every one is empty).  jh: shards of them. */
int ri_jheads_newest(const struct ri_jhead *jh, int shards);

/* ---- seals that mean something --------------------------------------------- */

/*
 * Before a seal is signed, every record since the previous seal is
 * verified: contiguous up to the authenticated heads, each link (to its
 * shard's record before it), MAC and digest, each record in its act's
 * shard, its act and invocation heads in that shard's tree no older than
 * it, and each shard's newest record the one its head names.  The caller
 * sets jh (every shard's head), expect (shard 0's sealed_seq + 1) and
 * link_at, reads the rows from expect in seq order and hands each to
 * ri_seal_walk_row (consumed); ri_seal_walk_end after the last.
 */
struct ri_seal_walk {
	const struct ri_jhead *jh;
	int64_t expect, from;
	int (*link_at)(void *backend, int shard, int64_t seq, unsigned char out[RI_HASH_LEN]);
	unsigned char (*prev)[RI_HASH_LEN];     /* a shard's newest hash walked (ri_seal_walk_begin) */
	int64_t *newest;                        /* a shard's newest seq walked (0: none yet) */
	/* with shards the walk begins at the previous seal itself: each
	 * shard's head it signed, which no head may now be behind */
	int64_t *floor;
	ri_ms now;
	int (*tree_get)(void *backend, const struct ri_jhead *jh, const unsigned char key[RI_SCOPE_LEN], bool *present,
	    struct ri_leaf *leaf);
	void *backend;
};
void ri_seal_walk_begin(struct ri_seal_walk *sw, const struct ri_st_core *c);
int ri_seal_walk_row(struct ri_st_core *c, struct ri_seal_walk *sw, struct ri_record *r, struct ri_raw *w);
/* rc: the walk's answer so far (another than RI_ST_OK: only the walk's
 * state is freed, and rc answered). */
int ri_seal_walk_end(struct ri_st_core *c, struct ri_seal_walk *sw, int rc);

/* ---- rebuild: the derived indexes from a whole verified traversal ------- */

struct ri_rebuild {
	json_t *open, *purged;          /* invocation -> its intent; invocations purged */
	int64_t expect;                 /* the next seq the traversal must meet */
	unsigned char (*prev)[RI_HASH_LEN];     /* each shard's chain: its newest hash so far */
	int64_t *newest;                /* each shard's newest seq so far (0: none) */
};

void ri_rebuild_begin(struct ri_rebuild *rb, const struct ri_st_core *c);
/* The next row of the traversal (seq order): no gap, verified, folded in.
 * Consumes the row. */
int ri_rebuild_row(struct ri_st_core *c, struct ri_rebuild *rb, struct ri_record *r, struct ri_raw *w, ri_ms now);
/* The traversal ended at every shard's head (jh: c->shards of them): the
 * open intents left (an intent whose invocation was purged is not open). */
int ri_rebuild_end(struct ri_st_core *c, struct ri_rebuild *rb, const struct ri_jhead *jh);
void ri_rebuild_free(struct ri_rebuild *rb);

void ri_push_record(struct ri_records *rs, size_t *cap, struct ri_record *r);

/*
 * The take (act section 1-2, open step 2.2).  ri_lease_free: the section
 * is free to holder at now -- no row, no holder, expired, or its own.
 * ri_take_wait: the section was found held `left` ms more; the lease cap
 * first (ri_lease_cap_judge), then a wait bounded by the deadline -- the
 * holder's lease, or the caller's shorter bound (--wait, -n) -- and
 * RI_ST_SECTION_UNAVAILABLE once it has passed.  The wait is the store's
 * change wait when it has one (w->change: until the journal may have
 * changed -- the holder's release is a commit -- or the holder's lease
 * ends, whichever first), else a backoff nap.  w starts zeroed but for
 * change and arg.
 */
struct ri_take_wait {
	int64_t deadline, backoff;      /* monotonic ms; 0 before the first wait */
	bool bounded;                   /* the caller's bound ends the wait */
	/* true when it waited on an event (or need not wait at all); false:
	 * no event to wait on here, nap instead */
	bool (*change)(void *arg, int64_t ms);
	void *arg;
};
bool ri_lease_free(const struct ri_lease_row *l, const char *holder, ri_ms now);
int ri_take_wait(struct ri_st_core *c, const struct ri_store *st, struct ri_take_wait *w, const char *kind,
    const char *act_key, ri_ms left);

#endif
