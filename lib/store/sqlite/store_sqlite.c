/*
 * store_sqlite.c -- the substrate ("Audit Trail") and the critical-section
 * host ("Lease") on one SQLite file.
 *
 * Durability: WAL, synchronous=FULL, BEGIN IMMEDIATE for every write, one
 * transaction per record, a busy timeout bounded by the protocol's bounds.
 * Integrity (docs/INTEGRITY.md): every record is chained and MACed
 * (integrity.h); every read verifies what it returns, inside one read
 * transaction so a concurrent append can never look like tampering.  The
 * journal head -- last seq, the hash at it, the root of the tree of scope
 * heads, the open-intents accumulator, the newest seal, the lease grant
 * counter -- is one MACed row, compared with the witness (witness.h) on
 * every read.  Each scope -- an act (kind, act_key), an invocation, an
 * actor's registry -- has a head in the tree (heads.h), and each record a
 * back pointer within its act and its invocation, so a filtered read
 * proves it saw every record of its scope, or that the scope is empty: a
 * deleted, moved or re-typed row is an integrity failure, never an
 * absence.  Every table is STRICT, every value read is checked for its
 * type, and the schema itself is compared with the one ri creates.
 * Leases, marks and actors carry MACs of their own (heads.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>
#include <sqlite3.h>

#include "util/clock.h"
#include "util/fault.h"
#include "store/heads.h"
#include "util/integrity.h"
#include "util/nc.h"
#include "store/store_engine.h"
#include "store/sqlite/store_sqlite.h"
#include "store/sqlite/store_sqlite_vfs.h"
#include "util/mem.h"
#include "store/witness.h"
#include "store/sqlite/store_sqlite_int.h"

/* ---- the journal head, the tree of scope heads, the witness ------------ */

/* Stored hash of the record at seq (store_engine.h record_hash). */
static int
record_hash(void *bk, int64_t seq, unsigned char out[RI_HASH_LEN])
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "SELECT hash FROM records WHERE seq = ?")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	sqlite3_bind_int64(st, 1, seq);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && col_h32(st, 0, out)) {
		done(s, st);
		return RI_ST_OK;
	}
	done(s, st);
	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		return RI_ST_NOT_KNOWN;
	return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
}

/* A max(seq) statement's answer, st prepared and bound (0 when no row). */
static int
newest_seq(struct sq *s, sqlite3_stmt *st, int64_t *out)
{
	if (sqlite3_step(st) != SQLITE_ROW) {
		done(s, st);
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	}
	if (!col_is(st, 0, SQLITE_INTEGER, true)) {
		done(s, st);
		return ri_st_fail(&s->core, RI_ST_INTEGRITY, 0, NULL, "journal integrity: a record's seq is not an integer");
	}
	*out = sqlite3_column_int64(st, 0);
	done(s, st);
	return RI_ST_OK;
}

/* The newest seq of a scope as the rows say it (0 when none). */
static int
scope_max(struct sq *s, int type, const char *a, const char *b, int64_t *out)
{
	sqlite3_stmt *st;
	const char *sql = type == SCOPE_ALL ? "SELECT max(seq) FROM records" :
	    type == SCOPE_ACT ? "SELECT max(seq) FROM records WHERE kind = ? AND act_key = ?" :
	    "SELECT max(seq) FROM records WHERE invocation_id = ?";

	*out = 0;               /* defined on every path, the failures' too */
	if ((st = prep(s, sql)) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	if (type != SCOPE_ALL)
		bind_text(st, 1, a);
	if (type == SCOPE_ACT)
		bind_text(st, 2, b);
	return newest_seq(s, st, out);
}

/* The newest seq of a shard's chain as the rows say it (0 when none):
 * with one shard, the journal's (docs/SHARDS.md). */
static int
shard_newest(struct sq *s, int shard, int64_t *out)
{
	sqlite3_stmt *st;

	if (s->core.shards <= 1)
		return scope_max(s, SCOPE_ALL, NULL, NULL, out);
	*out = 0;
	if ((st = prep(s, "SELECT max(seq) FROM records WHERE shard = ?")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	sqlite3_bind_int(st, 1, shard);
	return newest_seq(s, st, out);
}

/* store_engine.h shard_prev: the index records_shard answers it. */
static int
shard_prev(void *bk, int shard, int64_t seq, int64_t *before, unsigned char out[RI_HASH_LEN])
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	*before = 0;
	if ((st = prep(s, "SELECT seq, hash FROM records WHERE shard = ? AND seq < ? ORDER BY seq DESC LIMIT 1")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	sqlite3_bind_int(st, 1, shard);
	sqlite3_bind_int64(st, 2, seq);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		bool ok = col_is(st, 0, SQLITE_INTEGER, false) && col_h32(st, 1, out);
		*before = sqlite3_column_int64(st, 0);
		done(s, st);
		return ok ? RI_ST_OK : ri_st_fail(&s->core, RI_ST_INTEGRITY, seq, NULL,
		    "journal integrity: the record before seq %lld in shard %d is malformed", (long long)seq, shard);
	}
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_NOT_KNOWN : sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
}

/* store_engine.h seq_next: one writer (BEGIN IMMEDIATE), so the next seq
 * is the journal's newest + 1 -- contiguous across shards, as with one */
static int
seq_next(void *bk, int shard, int64_t *seq, ri_ms *at)
{
	(void)shard;
	*at = RI_NONE;          /* commits in seq order: the head's clock stands */
	int rc = scope_max(bk, SCOPE_ALL, NULL, NULL, seq);

	if (rc == RI_ST_OK)
		(*seq)++;
	return rc;
}

/* store_engine.h scope_newest: the hash is the engine's to read. */
static int
scope_newest(void *bk, const struct scope *sc, const char *a, const char *b, int64_t *seq,
    unsigned char hash[RI_HASH_LEN], enum ri_hashed *hashed)
{
	(void)hash;
	*hashed = RI_HASH_UNREAD;
	return scope_max(bk, sc->type, a, b, seq);
}

/* The node store of the tree (heads.h). */
static int
node_get(void *ctx, const unsigned char *id, size_t idlen, unsigned char body[RI_NODE_MAX], size_t *len)
{
	struct sq *s = ctx;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "SELECT body FROM nodes WHERE id = ?")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	sqlite3_bind_blob(st, 1, id, (int)idlen, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		int n = sqlite3_column_bytes(st, 0);
		if (!col_is(st, 0, SQLITE_BLOB, false) || n < 1 || n > RI_NODE_MAX) {
			done(s, st);
			return ri_st_fail(&s->core, RI_ST_INTEGRITY, 0, NULL,
			    "journal integrity: a node of the scope heads' tree is malformed");
		}
		memcpy(body, sqlite3_column_blob(st, 0), (size_t)n);
		*len = (size_t)n;
		done(s, st);
		return RI_ST_OK;
	}
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_NOT_KNOWN : sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
}

static int
node_put(void *ctx, const unsigned char *id, size_t idlen, const unsigned char *body, size_t len)
{
	struct sq *s = ctx;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "INSERT INTO nodes(id, body) VALUES (?, ?)"
	    " ON CONFLICT(id) DO UPDATE SET body = excluded.body")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "write");
	sqlite3_bind_blob(st, 1, id, (int)idlen, SQLITE_TRANSIENT);
	sqlite3_bind_blob(st, 2, body, (int)len, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : sq_db_fail(s, RI_ST_UNAVAILABLE, "write");
}

/* The head row as stored (typed), without judging it. */
static int
jhead_read(struct sq *s, int shard, struct ri_jhead *h, unsigned char mac[RI_HASH_LEN])
{
	sqlite3_stmt *st;
	int rc;

	memset(h, 0, sizeof *h);
	h->shard = shard;
	if ((st = prep(s, "SELECT last_seq, root, open_count, open_acc, sealed_seq, grants, mac"
	    " FROM heads WHERE shard = ?")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	sqlite3_bind_int(st, 1, shard);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		bool ok = col_is(st, 0, SQLITE_INTEGER, false) && col_h32(st, 1, h->root) &&
		    col_is(st, 2, SQLITE_INTEGER, false) && col_h32(st, 3, h->open_acc) &&
		    col_is(st, 4, SQLITE_INTEGER, false) && col_is(st, 5, SQLITE_INTEGER, false) &&
		    col_h32(st, 6, mac);
		h->last_seq = sqlite3_column_int64(st, 0);
		h->open_count = sqlite3_column_int64(st, 2);
		h->sealed_seq = sqlite3_column_int64(st, 4);
		h->grants = sqlite3_column_int64(st, 5);
		done(s, st);
		if (!ok)
			return ri_st_fail(&s->core, RI_ST_INTEGRITY, 0, NULL, "journal integrity: the journal head is malformed");
		return RI_ST_OK;
	}
	done(s, st);
	if (rc == SQLITE_DONE)
		return ri_st_fail(&s->core, RI_ST_INTEGRITY, 0, NULL,
		    "journal integrity: the journal head is missing (a head row deleted)");
	return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
}

/*
 * The verified journal head: its MAC over what the rows say -- the newest
 * row is its last_seq, the hash there is the one bound -- and the
 * witness's newest line agrees with the journal.  Without a key only the
 * rows and the witness are consulted (and the root is unknown).
 */
static int jhead_verify(struct sq *s, int shard, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN]);

static int
jhead_get(struct sq *s, int shard, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN])
{
	int rc;

	/* a read session's snapshot has one head a shard: verified once */
	if (s->in_session && s->session_head && s->session_jh.shard == shard) {
		*h = s->session_jh;
		memcpy(last_hash, s->session_lh, RI_HASH_LEN);
		return RI_ST_OK;
	}
	if ((rc = jhead_verify(s, shard, h, last_hash)) == RI_ST_OK && s->in_session) {
		s->session_jh = *h;
		memcpy(s->session_lh, last_hash, RI_HASH_LEN);
		s->session_head = true;
	}
	return rc;
}

static int
jhead_verify(struct sq *s, int shard, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN])
{
	unsigned char mac[RI_HASH_LEN], at[RI_HASH_LEN];
	int64_t rows;
	int rc;

	if ((rc = shard_newest(s, shard, &rows)) != RI_ST_OK)
		return rc;
	if (s->core.key == NULL) {
		memset(h, 0, sizeof *h);
		h->shard = shard;
		h->last_seq = rows;
		if ((rc = ri_eng_shard_hash_at(&s->core, shard, rows, last_hash)) != RI_ST_OK)
			return rc;
	} else {
		if ((rc = jhead_read(s, shard, h, mac)) != RI_ST_OK) {
			if (rc == RI_ST_INTEGRITY)
				s->core.err.seq = rows;      /* name the journal's newest record */
			return rc;
		}
		rc = ri_eng_shard_hash_at(&s->core, shard, h->last_seq, last_hash);
		if (rc != RI_ST_OK && rc != RI_ST_INTEGRITY)
			return rc;
		if ((rc = ri_jhead_judge(&s->core, h, mac, rc == RI_ST_OK ? last_hash : NULL, rows)) != RI_ST_OK)
			return rc;
	}
	if (!ri_witness_wants(&s->core, shard, h->last_seq))
		rc = ri_witness_judge(&s->core, shard, h->last_seq, NULL);
	/* with shards, a missing anchor record is the witness's to name */
	else if (s->core.shards > 1 && s->core.anchor_seq > 0 &&
	    record_hash(s, s->core.anchor_seq, at) == RI_ST_NOT_KNOWN)
		rc = ri_witness_judge(&s->core, shard, h->last_seq, NULL);
	else if ((rc = ri_eng_hash_at(&s->core, s->core.anchor_seq, at)) == RI_ST_OK)
		rc = ri_witness_judge(&s->core, shard, h->last_seq, at);
	/* and, with shards, the shard's own newest line */
	int64_t own = ri_witness_shard_anchor(&s->core, shard);
	if (rc != RI_ST_OK || own == 0)
		return rc;
	int held = own <= h->last_seq ? record_hash(s, own, at) : RI_ST_NOT_KNOWN;
	if (held != RI_ST_OK && held != RI_ST_NOT_KNOWN)
		return held;
	return ri_witness_shard_judge(&s->core, shard, h->last_seq, held == RI_ST_OK ? at : NULL);
}

static int
jhead_set(struct sq *s, const struct ri_jhead *h, const unsigned char last_hash[RI_HASH_LEN])
{
	sqlite3_stmt *st;
	unsigned char mac[RI_HASH_LEN];
	int rc;

	ri_jhead_mac(s->core.key, s->core.keylen, s->core.instance_id, s->core.shards, s->core.boundary, h, last_hash, mac);
	if ((st = prep(s, "UPDATE heads SET last_seq = ?, root = ?, open_count = ?, open_acc = ?,"
	    " sealed_seq = ?, grants = ?, mac = ? WHERE shard = ?")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "write");
	sqlite3_bind_int64(st, 1, h->last_seq);
	sqlite3_bind_blob(st, 2, h->root, RI_HASH_LEN, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, h->open_count);
	sqlite3_bind_blob(st, 4, h->open_acc, RI_HASH_LEN, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 5, h->sealed_seq);
	sqlite3_bind_int64(st, 6, h->grants);
	sqlite3_bind_blob(st, 7, mac, RI_HASH_LEN, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 8, h->shard);
	rc = sqlite3_step(st);
	done(s, st);
	if (rc != SQLITE_DONE)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "write");
	if (sqlite3_changes(s->db) != 1)
		return ri_st_fail(&s->core, RI_ST_INTEGRITY, 0, NULL, "journal integrity: the journal head is missing");
	return RI_ST_OK;
}

/* ---- rows and their verification --------------------------------------- */

/* A text column that is exactly what the record carries: TEXT, no NUL
 * inside it (what is hashed is then what a filter matches), at most max
 * bytes. */
static bool
exact_text(sqlite3_stmt *st, int i, size_t max, bool null_ok)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	size_t n = (size_t)sqlite3_column_bytes(st, i);

	if (t == NULL)
		return null_ok;
	return n <= max && strlen((const char *)t) == n;
}

/* One row, decoded only if every column is exactly of its type: a value
 * re-typed behind ri's back (a TEXT act key stored as a BLOB, say) is a
 * malformed row, never read as the text it resembles. */
/* An id column into its fixed buffer, cut at the buffer as snprintf would
 * (an overlong one fails exact_text, and so the row's shape) -- without a
 * format parse a row */
static void
copy_id(char *dst, size_t n, const char *src)
{
	size_t k = src ? strnlen(src, n - 1) : 0;

	memcpy(dst, src ? src : "", k);
	dst[k] = '\0';
}

static void
load_row(sqlite3_stmt *st, struct ri_record *r, struct ri_raw *w)
{
	/* the storage types first: reading a value as text converts it, after
	 * which its type can no longer be asked (sqlite3_column_type) */
	static const int want[19] = { SQLITE_INTEGER, SQLITE_TEXT, SQLITE_TEXT, SQLITE_TEXT, SQLITE_TEXT,
		SQLITE_TEXT, SQLITE_TEXT, SQLITE_TEXT, SQLITE_INTEGER, SQLITE_INTEGER, SQLITE_INTEGER,
		SQLITE_INTEGER, SQLITE_INTEGER, SQLITE_TEXT, SQLITE_BLOB, SQLITE_BLOB, SQLITE_BLOB, SQLITE_BLOB,
		SQLITE_INTEGER };
	static const bool nullable[19] = { [5] = true, [9] = true, [13] = true, [14] = true };
	bool typed = true;
	int types[19];
	for (int i = 0; i < 19; i++) {
		types[i] = sqlite3_column_type(st, i);
		typed = typed && (types[i] == want[i] || (nullable[i] && types[i] == SQLITE_NULL));
	}
	const char *ev = (const char *)sqlite3_column_text(st, 1);
	const char *att;

	memset(r, 0, sizeof *r);
	memset(w, 0, sizeof *w);
	r->seq = sqlite3_column_int64(st, 0);
	copy_id(r->event_id, sizeof r->event_id, ev);
	r->action_ref = col_dup(st, 2);
	r->kind = col_dup(st, 3);
	r->act_key = col_dup(st, 4);
	r->invocation_id = col_dup(st, 5);
	r->actor_ref = col_dup(st, 6);
	att = (const char *)sqlite3_column_text(st, 7);
	copy_id(r->attestation_id, sizeof r->attestation_id, att);
	r->recorded_at = sqlite3_column_int64(st, 8);
	r->retention_until = col_ms(st, 9);
	r->role = sqlite3_column_int(st, 10);
	w->act_prev = sqlite3_column_int64(st, 11);
	w->inv_prev = sqlite3_column_int64(st, 12);
	w->shard = sqlite3_column_int(st, 18);
	w->payload_text = col_dup(st, 13);
	w->has_salt = types[14] != SQLITE_NULL;
	w->shapes_ok = typed &&
	    sqlite3_column_bytes(st, 15) == RI_HASH_LEN &&
	    sqlite3_column_bytes(st, 16) == RI_HASH_LEN &&
	    sqlite3_column_bytes(st, 17) == RI_HASH_LEN &&
	    (!w->has_salt || sqlite3_column_bytes(st, 14) == RI_SALT_LEN) &&
	    r->action_ref && r->kind && r->act_key && r->actor_ref &&
	    exact_text(st, 1, RI_ID_LEN, false) && exact_text(st, 7, RI_ID_LEN, false) &&
	    exact_text(st, 2, SIZE_MAX, false) && exact_text(st, 3, SIZE_MAX, false) &&
	    exact_text(st, 4, SIZE_MAX, false) && exact_text(st, 5, SIZE_MAX, true) &&
	    exact_text(st, 6, SIZE_MAX, false) && exact_text(st, 13, SIZE_MAX, true);
	/* the stored role is one the action ref's suffix can carry */
	w->shapes_ok = w->shapes_ok && r->role >= 0 && r->role <= RI_ROLE_MAX &&
	    ri_vocab_role_fits(r->action_ref, r->role);
	if (w->shapes_ok) {
		if (w->has_salt)
			memcpy(w->salt, sqlite3_column_blob(st, 14), RI_SALT_LEN);
		memcpy(w->digest, sqlite3_column_blob(st, 15), RI_HASH_LEN);
		memcpy(w->hash, sqlite3_column_blob(st, 16), RI_HASH_LEN);
		memcpy(w->mac, sqlite3_column_blob(st, 17), RI_HASH_LEN);
	} else if (sqlite3_column_type(st, 16) == SQLITE_BLOB && sqlite3_column_bytes(st, 16) == RI_HASH_LEN) {
		memcpy(w->hash, sqlite3_column_blob(st, 16), RI_HASH_LEN);
	}
}

static int
now_or_fail(struct sq *s, ri_ms *now)
{
	ri_err e;

	if (ri_now(s->core.cfg, now, &e) != RI_OK)
		return ri_st_fail(&s->core, RI_ST_UNAVAILABLE, 0, NULL, "%s", e.msg);
	return RI_ST_OK;
}

/* ---- the records table read (store_engine.h) ------------------------------ */

static bool
in_snapshot(void *bk)
{
	return !sqlite3_get_autocommit(((struct sq *)bk)->db);
}

static int
record_by_id(void *bk, const char *event_id, struct ri_record *r, struct ri_raw *w)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "SELECT " REC_COLS " FROM records WHERE event_id = ?")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	bind_text(st, 1, event_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		load_row(st, r, w);
	done(s, st);
	if (rc == SQLITE_DONE)
		return RI_ST_NOT_KNOWN;
	return rc == SQLITE_ROW ? RI_ST_OK : sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
}

static int
records_from(void *bk, const struct ri_rows_query *q, ri_row_fn each, void *arg)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	char sql[512];
	bool stop = false;
	int rc = RI_ST_OK, step = SQLITE_DONE, idx = 1;

	snprintf(sql, sizeof sql, "SELECT " REC_COLS " FROM records WHERE seq %s ?%s ORDER BY seq %s LIMIT ?",
	    q->desc ? "<=" : ">=",
	    q->type == SCOPE_INV ? " AND invocation_id = ?" :
	    q->type == SCOPE_ACT ? " AND kind = ? AND act_key = ?" : "",
	    q->desc ? "DESC" : "ASC");
	if ((st = prep(s, sql)) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	sqlite3_bind_int64(st, idx++, q->from);
	if (q->type != SCOPE_ALL)
		bind_text(st, idx++, q->a);
	if (q->type == SCOPE_ACT)
		bind_text(st, idx++, q->b);
	sqlite3_bind_int64(st, idx++, q->limit > 0 ? q->limit : -1);
	while (!stop && (step = sqlite3_step(st)) == SQLITE_ROW) {
		struct ri_record r;
		struct ri_raw w;

		load_row(st, &r, &w);
		if ((rc = each(arg, &r, &w, &stop)) != RI_ST_OK)
			break;
	}
	if (rc == RI_ST_OK && !stop && step != SQLITE_DONE)
		rc = sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	done(s, st);
	return rc;
}

/* ---- open intents (derived index) ---------------------------------------- */

/*
 * Every open intent, checked whole against the journal head: the rows'
 * count and the XOR of their elements (heads.h) must be the ones the head
 * binds, so a deleted, added or altered row is an integrity failure, not a
 * crashed act the sweep never sees.  The filters (kind, act, age) apply
 * after the check; the cost is O(open intents), the sweep's own bound.
 */
static int
open_rows(void *bk, struct ri_open_scan *os)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "SELECT invocation_id, seq, kind, act_key, event_id, recorded_at FROM open_intents")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!col_text_ok(st, 0, false) || !col_is(st, 1, SQLITE_INTEGER, false) || !col_text_ok(st, 2, false) ||
		    !col_text_ok(st, 3, false) || !col_text_ok(st, 4, false) || !col_is(st, 5, SQLITE_INTEGER, false)) {
			done(s, st);
			return ri_st_fail(&s->core, RI_ST_INTEGRITY, 0, NULL,
			    "journal integrity: a row of the open-intents index is malformed");
		}
		ri_open_scan_row(os, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
		    (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3),
		    (const char *)sqlite3_column_text(st, 4), sqlite3_column_int64(st, 5));
	}
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
}

/* ---- record_action ------------------------------------------------------- */

/*
 * The lease's own writes (take, release) commit without an fsync: a lease
 * must outlive its holder's death, which a WAL commit does, not the
 * machine's; every grant a job ever acts on is made durable by the fsync of
 * the intent that follows it (ri-run runs nothing before the intent lands).
 * So an Open + Close pair costs two fsync'd transactions.
 */
static void
lease_sync(void *bk, bool durable)
{
	struct sq *s = bk;

	if (s->nosync)
		return;
	sqlite3_exec(s->db, durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL",
	    NULL, NULL, NULL);
}



/* An actor's registry row, read and judged (ri_actor_row_judge): typed,
 * MACed, and bound to the newest registry record of the actor's scope
 * ("audit", actor).  *exists false when there is none. */
static int
actor_read(void *bk, const char *actor, struct ri_actor_row *row, enum ri_found *found)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	*found = RI_ROW_NONE;
	if ((st = prep(s, "SELECT service, cred_hash, created_at, revoked_at, reg_seq, mac FROM actors"
	    " WHERE actor_ref = ?")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "actor read");
	bind_text(st, 1, actor);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		bool ok = col_is(st, 0, SQLITE_INTEGER, false) && col_is(st, 1, SQLITE_BLOB, false) &&
		    sqlite3_column_bytes(st, 1) == 32 && col_is(st, 2, SQLITE_INTEGER, false) &&
		    col_is(st, 3, SQLITE_INTEGER, true) && col_is(st, 4, SQLITE_INTEGER, false) && col_h32(st, 5, row->mac);
		if (ok) {
			row->service = sqlite3_column_int(st, 0);
			memcpy(row->cred_hash, sqlite3_column_blob(st, 1), 32);
			row->created = sqlite3_column_int64(st, 2);
			row->revoked = col_ms(st, 3);
			row->reg_seq = sqlite3_column_int64(st, 4);
		}
		done(s, st);
		*found = ok ? RI_ROW_OK : RI_ROW_MALFORMED;
		return RI_ST_OK;
	}
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : sq_db_fail(s, RI_ST_UNAVAILABLE, "actor read");
}

/* Actor Identity: the credential check at record_action
 * (ri_credential_judge). */

/* A lease row, read and judged (ri_lease_row_judge): typed and MACed
 * (heads.h).  *exists false when there is none. */
static int
lease_read(void *bk, const char *kind, const char *act_key, bool lock, struct ri_lease_row *l, enum ri_found *found)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	(void)lock;             /* the write transaction holds the whole file */
	*found = RI_ROW_NONE;
	if ((st = prep(s, "SELECT holder, expires_at, token, mac FROM leases WHERE kind = ? AND act_key = ?")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "lease read");
	bind_text(st, 1, kind);
	bind_text(st, 2, act_key);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		done(s, st);
		return rc == SQLITE_DONE ? RI_ST_OK : sq_db_fail(s, RI_ST_UNAVAILABLE, "lease read");
	}
	bool ok = col_text_ok(st, 0, true) && (size_t)sqlite3_column_bytes(st, 0) < sizeof l->holder &&
	    col_is(st, 1, SQLITE_INTEGER, false) && col_is(st, 2, SQLITE_INTEGER, false) && col_h32(st, 3, l->mac);
	if (ok) {
		l->held = sqlite3_column_type(st, 0) != SQLITE_NULL;
		if (l->held)
			snprintf(l->holder, sizeof l->holder, "%s", (const char *)sqlite3_column_text(st, 0));
		l->expires = sqlite3_column_int64(st, 1);
		l->token = sqlite3_column_int64(st, 2);
	}
	done(s, st);
	*found = ok ? RI_ROW_OK : RI_ROW_MALFORMED;
	return RI_ST_OK;
}

static int
lease_write(void *bk, const char *kind, const char *act_key, const char *holder, ri_ms expires, int64_t token,
    const unsigned char mac[RI_HASH_LEN])
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "INSERT INTO leases(kind, act_key, holder, expires_at, token, mac)"
	    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(kind, act_key) DO UPDATE SET"
	    " holder = excluded.holder, expires_at = excluded.expires_at,"
	    " token = excluded.token, mac = excluded.mac")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "lease write");
	bind_text(st, 1, kind);
	bind_text(st, 2, act_key);
	bind_text(st, 3, holder);
	sqlite3_bind_int64(st, 4, expires);
	sqlite3_bind_int64(st, 5, token);
	sqlite3_bind_blob(st, 6, mac, RI_HASH_LEN, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : sq_db_fail(s, RI_ST_UNAVAILABLE, "lease write");
}

/* store_engine.h open_insert: INSERT OR IGNORE, first or not */
static int
open_insert(void *bk, const char *inv, int64_t seq, const char *kind, const char *act_key, const char *event_id,
    ri_ms recorded_at, bool first, bool *added)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	(void)first;
	if ((st = prep(s, "INSERT OR IGNORE INTO open_intents VALUES (?, ?, ?, ?, ?, ?)")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "append");
	bind_text(st, 1, inv);
	sqlite3_bind_int64(st, 2, seq);
	bind_text(st, 3, kind);
	bind_text(st, 4, act_key);
	bind_text(st, 5, event_id);
	sqlite3_bind_int64(st, 6, recorded_at);
	rc = sqlite3_step(st);
	done(s, st);
	if (rc != SQLITE_DONE)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "append");
	*added = sqlite3_changes(s->db) == 1;
	return RI_ST_OK;
}

static int
open_remove(struct sq *s, struct ri_jhead *jh, const char *inv)
{
	sqlite3_stmt *st;
	unsigned char elem[RI_HASH_LEN];
	int rc;

	if ((st = prep(s, "SELECT seq, kind, act_key, event_id, recorded_at FROM open_intents"
	    " WHERE invocation_id = ?")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "append");
	bind_text(st, 1, inv);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		done(s, st);
		return RI_ST_OK;
	}
	if (rc != SQLITE_ROW) {
		done(s, st);
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "append");
	}
	if (!col_is(st, 0, SQLITE_INTEGER, false) || !col_text_ok(st, 1, false) || !col_text_ok(st, 2, false) ||
	    !col_text_ok(st, 3, false) || !col_is(st, 4, SQLITE_INTEGER, false)) {
		done(s, st);
		return ri_st_fail(&s->core, RI_ST_INTEGRITY, 0, NULL, "journal integrity: a row of the open-intents index is malformed");
	}
	ri_open_elem(inv, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
	    (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3),
	    sqlite3_column_int64(st, 4), elem);
	done(s, st);
	ri_acc_xor(jh->open_acc, elem);
	jh->open_count--;
	if ((st = prep(s, "DELETE FROM open_intents WHERE invocation_id = ?")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "append");
	bind_text(st, 1, inv);
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : sq_db_fail(s, RI_ST_UNAVAILABLE, "append");
}

/* store_engine.h recorded_at_of */
static int
recorded_at_of(void *bk, int64_t seq, ri_ms *at)
{
	struct sq *s = bk;
	sqlite3_stmt *st;

	*at = RI_NONE;
	if ((st = prep(s, "SELECT recorded_at FROM records WHERE seq = ?")) == NULL)
		return sq_db_fail(s, RI_ST_STEP2, "read");
	sqlite3_bind_int64(st, 1, seq);
	if (sqlite3_step(st) == SQLITE_ROW && col_is(st, 0, SQLITE_INTEGER, false))
		*at = sqlite3_column_int64(st, 0);
	done(s, st);
	return RI_ST_OK;
}

/* store_engine.h record_insert */
static int
record_insert(void *bk, const struct ri_header *h, const char *payload, const unsigned char salt[RI_SALT_LEN],
    const unsigned char hash[RI_HASH_LEN], const unsigned char mac[RI_HASH_LEN])
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "INSERT INTO records(" REC_COLS ") VALUES"
	    " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) == NULL)
		return sq_db_fail(s, RI_ST_STEP2, "append");
	sqlite3_bind_int64(st, 1, h->seq);
	bind_text(st, 2, h->event_id);
	bind_text(st, 3, h->action_ref);
	bind_text(st, 4, h->kind);
	bind_text(st, 5, h->act_key);
	bind_text(st, 6, h->invocation_id);
	bind_text(st, 7, h->actor_ref);
	bind_text(st, 8, h->attestation_id);
	sqlite3_bind_int64(st, 9, h->recorded_at);
	bind_ms(st, 10, h->retention_until);
	sqlite3_bind_int(st, 11, h->role);
	sqlite3_bind_int64(st, 12, h->act_prev);
	sqlite3_bind_int64(st, 13, h->inv_prev);
	bind_text(st, 14, payload);
	sqlite3_bind_blob(st, 15, salt, RI_SALT_LEN, SQLITE_TRANSIENT);
	sqlite3_bind_blob(st, 16, h->payload_digest, RI_HASH_LEN, SQLITE_TRANSIENT);
	sqlite3_bind_blob(st, 17, hash, RI_HASH_LEN, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 19, h->shard);
	sqlite3_bind_blob(st, 18, mac, RI_HASH_LEN, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : sq_db_fail(s, RI_ST_STEP2, "append");
}

static int
commit(struct sq *s)
{
	if (sq_exec1(s, "COMMIT") != SQLITE_OK) {
		int rc = sq_db_fail(s, RI_ST_STEP3, "commit");
		sq_rollback(s);
		return rc;
	}
	queue_leave(s);
	/* after the commit, before the command answers: the witness advances
	 * with every append (issue 39) */
	ri_st_witness_flush(&s->core);
	return RI_ST_OK;
}

/* ---- retention ------------------------------------------------------------- */

/* store_engine.h purge_due */
static int
purge_due(void *bk, ri_ms now, ri_purge_fn each, void *arg)
{
	struct sq *s = bk;
	sqlite3_stmt *sel;
	int rc, orc = RI_ST_OK;

	sel = prep(s, !RI_NC(RI_NC_PURGE_TODAY) ?
	    "SELECT seq, kind, invocation_id FROM records WHERE retention_until <= ?"
	    " AND payload IS NOT NULL ORDER BY retention_until LIMIT 512" :
	    /* negative control: a payload's retention ends at recorded_at +
	     * today's period, not at its stored end (tla -buggy-purge-today) */
	    "SELECT seq, kind, invocation_id, recorded_at FROM records WHERE ? IS NOT NULL"
	    " AND retention_until IS NOT NULL AND payload IS NOT NULL ORDER BY retention_until LIMIT 512");
	if (sel == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "purge");
	sqlite3_bind_int64(sel, 1, now);
	while (orc == RI_ST_OK && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
		if (!col_is(sel, 0, SQLITE_INTEGER, false) || !col_text_ok(sel, 1, false) ||
		    !col_text_ok(sel, 2, true)) {
			orc = ri_st_fail(&s->core, RI_ST_INTEGRITY, 0, NULL, "journal integrity: a record is malformed");
			break;
		}
		const char *k = (const char *)sqlite3_column_text(sel, 1);
		if (RI_NC(RI_NC_PURGE_TODAY)) {
			const struct ri_kind *kd = ri_config_kind(s->core.cfg, k);
			if (kd == NULL || sqlite3_column_int64(sel, 3) + kd->retention_period > now)
				continue;
		}
		orc = each(arg, sqlite3_column_int64(sel, 0), k, sqlite3_column_type(sel, 2) == SQLITE_NULL ? NULL :
		    (const char *)sqlite3_column_text(sel, 2));
	}
	done(s, sel);
	if (orc != RI_ST_OK)
		return orc;
	return rc == SQLITE_DONE ? RI_ST_OK : sq_db_fail(s, RI_ST_UNAVAILABLE, "purge");
}

static int
payload_drop(void *bk, int64_t seq)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "UPDATE records SET payload = NULL, salt = NULL WHERE seq = ?")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "purge");
	sqlite3_bind_int64(st, 1, seq);
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : sq_db_fail(s, RI_ST_UNAVAILABLE, "purge");
}

/* ---- Actor Identity --------------------------------------------------------- */


/* store_engine.h actor_insert: a taken name is a constraint violation */
static int
actor_insert(void *bk, const char *actor, const struct ri_actor_row *row)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "INSERT INTO actors VALUES (?, ?, ?, ?, NULL, ?, ?)")) == NULL)
		return sq_db_fail(s, RI_ST_STEP2, "actor add");
	bind_text(st, 1, actor);
	sqlite3_bind_int(st, 2, row->service);
	sqlite3_bind_blob(st, 3, row->cred_hash, 32, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 4, row->created);
	sqlite3_bind_int64(st, 5, row->reg_seq);
	sqlite3_bind_blob(st, 6, row->mac, RI_HASH_LEN, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	done(s, st);
	if ((rc & 0xff) == SQLITE_CONSTRAINT)
		return RI_ST_EXISTS;
	return rc == SQLITE_DONE ? RI_ST_OK : sq_db_fail(s, RI_ST_STEP2, "actor add");
}

static int
actor_update(void *bk, const char *actor, const struct ri_actor_row *row)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "UPDATE actors SET revoked_at = ?, reg_seq = ?, mac = ? WHERE actor_ref = ?")) == NULL)
		return sq_db_fail(s, RI_ST_STEP2, "actor revoke");
	sqlite3_bind_int64(st, 1, row->revoked);
	sqlite3_bind_int64(st, 2, row->reg_seq);
	sqlite3_bind_blob(st, 3, row->mac, RI_HASH_LEN, SQLITE_TRANSIENT);
	bind_text(st, 4, actor);
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : sq_db_fail(s, RI_ST_STEP2, "actor revoke");
}

/* The distinct kinds with an open intent recorded after `since`: one index
 * seek per kind (kind > previous), so the start gate costs O(kinds log n),
 * never a scan of the backlog. */
static int
sq_open_kinds(struct ri_store *base, ri_ms since, char ***kinds, size_t *n)
{
	struct sq *s = (struct sq *)base;
	char *prev = ri_strdup("");
	sqlite3_stmt *st;
	int rc = SQLITE_DONE;

	*kinds = NULL;
	*n = 0;
	for (;;) {
		char *k;
		bool recent;

		if ((st = prep(s, "SELECT kind FROM open_intents WHERE kind > ? ORDER BY kind LIMIT 1")) == NULL)
			goto fail;
		bind_text(st, 1, prev);
		rc = sqlite3_step(st);
		k = rc == SQLITE_ROW ? col_dup(st, 0) : NULL;
		done(s, st);
		if (rc == SQLITE_DONE)
			break;
		if (rc != SQLITE_ROW || k == NULL) {
			free(k);
			goto fail;
		}
		free(prev);
		prev = k;
		if ((st = prep(s, "SELECT 1 FROM open_intents WHERE kind = ? AND recorded_at > ? LIMIT 1")) == NULL)
			goto fail;
		bind_text(st, 1, k);
		sqlite3_bind_int64(st, 2, since);
		rc = sqlite3_step(st);
		recent = rc == SQLITE_ROW;
		done(s, st);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			goto fail;
		if (!recent)
			continue;
		*kinds = realloc(*kinds, (*n + 1) * sizeof **kinds);
		if (*kinds == NULL)
			abort();
		(*kinds)[(*n)++] = ri_strdup(k);
	}
	free(prev);
	return RI_ST_OK;
fail:
	free(prev);
	ri_strings_free(*kinds, *n);
	*kinds = NULL;
	*n = 0;
	return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
}

/* ---- marks, head ---------------------------------------------------------------- */

static int
mark_read(void *bk, const char *name, int64_t *seq, unsigned char mac[RI_HASH_LEN], enum ri_found *found)
{
	struct sq *s = bk;
	sqlite3_stmt *st = prep(s, "SELECT seq, mac FROM marks WHERE name = ?");
	int rc;

	if (st == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*found = col_is(st, 0, SQLITE_INTEGER, false) && col_h32(st, 1, mac) ? RI_ROW_OK : RI_ROW_MALFORMED;
		*seq = sqlite3_column_int64(st, 0);
	}
	done(s, st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	return RI_ST_OK;
}

static int
mark_write(void *bk, const char *name, int64_t seq, const unsigned char mac[RI_HASH_LEN])
{
	struct sq *s = bk;
	sqlite3_stmt *st = prep(s, "INSERT INTO marks VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET seq = excluded.seq,"
	    " mac = excluded.mac");
	int rc;

	if (st == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "write");
	bind_text(st, 1, name);
	sqlite3_bind_int64(st, 2, seq);
	sqlite3_bind_blob(st, 3, mac, RI_HASH_LEN, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : sq_db_fail(s, RI_ST_UNAVAILABLE, "write");
}

static int
peek_row(void *bk, const char *event_id, struct ri_record *out)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "SELECT seq, action_ref, kind, act_key, invocation_id, actor_ref, role,"
	    " recorded_at, payload IS NULL FROM records WHERE event_id = ?")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	bind_text(st, 1, event_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		out->seq = sqlite3_column_int64(st, 0);
		snprintf(out->event_id, sizeof out->event_id, "%s", event_id);
		out->action_ref = col_dup(st, 1);
		out->kind = col_dup(st, 2);
		out->act_key = col_dup(st, 3);
		out->invocation_id = col_dup(st, 4);
		out->actor_ref = col_dup(st, 5);
		out->role = sqlite3_column_int(st, 6);
		out->recorded_at = sqlite3_column_int64(st, 7);
		out->purged = sqlite3_column_int(st, 8) != 0;
	}
	done(s, st);
	if (rc == SQLITE_DONE)
		return RI_ST_NOT_KNOWN;
	return rc == SQLITE_ROW ? RI_ST_OK : sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
}

/* the invocation index alone (covering) */
static int
inv_rows(void *bk, const char *invocation_id, int64_t *first, int64_t *last, int64_t *n)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "SELECT min(seq), max(seq), count(*) FROM records WHERE invocation_id = ?")) == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	bind_text(st, 1, invocation_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*first = sqlite3_column_int64(st, 0);
		*last = sqlite3_column_int64(st, 1);
		*n = sqlite3_column_int64(st, 2);
	}
	done(s, st);
	return rc == SQLITE_ROW ? RI_ST_OK : sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
}

static void
event_id_at(void *bk, int64_t seq, char out[RI_ID_LEN + 1])
{
	struct sq *s = bk;
	sqlite3_stmt *st = prep(s, "SELECT event_id FROM records WHERE seq = ?");

	if (st == NULL)
		return;
	sqlite3_bind_int64(st, 1, seq);
	if (sqlite3_step(st) == SQLITE_ROW && col_text_ok(st, 0, false))
		snprintf(out, RI_ID_LEN + 1, "%s", (const char *)sqlite3_column_text(st, 0));
	done(s, st);
}

/* store_engine.h sealed_rows */
static int
sealed_rows(void *bk, int64_t *seq)
{
	struct sq *s = bk;
	sqlite3_stmt *st = prep(s, "SELECT max(seq) FROM records WHERE action_ref = 'audit.sealed'");

	if (st == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	if (sqlite3_step(st) == SQLITE_ROW && col_is(st, 0, SQLITE_INTEGER, true))
		*seq = sqlite3_column_int64(st, 0);
	done(s, st);
	return RI_ST_OK;
}

/* ---- rebuild's writes (store_engine.h) ------------------------------------------ */

static int
open_reset(void *bk)
{
	struct sq *s = bk;

	if (sqlite3_exec(s->db, "DELETE FROM open_intents", NULL, NULL, NULL) != SQLITE_OK)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "rebuild");
	return RI_ST_OK;
}

static int
nodes_reset(void *bk)
{
	struct sq *s = bk;

	if (sqlite3_exec(s->db, "DELETE FROM nodes", NULL, NULL, NULL) != SQLITE_OK)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "rebuild");
	ri_tree_cache_clear(&s->nodes);
	return RI_ST_OK;
}

static int
scope_lasts(void *bk, int type, int (*fn)(void *arg, const char *a, const char *b, int64_t last), void *arg)
{
	struct sq *s = bk;
	sqlite3_stmt *st = prep(s, type == SCOPE_ACT ? "SELECT kind, act_key, max(seq) FROM records GROUP BY kind, act_key" :
	    "SELECT invocation_id, NULL, max(seq) FROM records WHERE invocation_id IS NOT NULL GROUP BY invocation_id");
	int rc, step;

	if (st == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "rebuild");
	while ((step = sqlite3_step(st)) == SQLITE_ROW)
		if ((rc = fn(arg, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
		    sqlite3_column_int64(st, 2))) != RI_ST_OK) {
			done(s, st);
			return rc;
		}
	done(s, st);
	return step == SQLITE_DONE ? RI_ST_OK : sq_db_fail(s, RI_ST_UNAVAILABLE, "rebuild");
}

static void
mark_drop(void *bk, const char *name)
{
	struct sq *s = bk;
	sqlite3_stmt *d = prep(s, "DELETE FROM marks WHERE name = ? OR typeof(name) != 'text'");

	if (d != NULL) {
		bind_text(d, 1, name);
		sqlite3_step(d);
		done(s, d);
	}
}

static void
leases_malformed_drop(void *bk, int64_t *n)
{
	struct sq *s = bk;

	if (sqlite3_exec(s->db, "DELETE FROM leases WHERE typeof(kind) != 'text' OR typeof(act_key) != 'text'",
	    NULL, NULL, NULL) == SQLITE_OK)
		*n += sqlite3_changes(s->db);
}

static int
jhead_put(void *bk, const struct ri_jhead *jh, const unsigned char lh[RI_HASH_LEN])
{
	return jhead_set(bk, jh, lh);
}

/* ---- ri-audit's state check (store_engine.h) ------------------------------------ */

static int
schema_judge(void *bk, char *why, size_t n)
{
	return sq_schema_check(bk, why, n) ? RI_ST_OK : RI_ST_INTEGRITY;
}

static int
jhead_raw(void *bk, int shard, struct ri_jhead *h, unsigned char lh[RI_HASH_LEN], unsigned char mac[RI_HASH_LEN])
{
	struct sq *s = bk;
	int rc;

	if ((rc = jhead_read(s, shard, h, mac)) != RI_ST_OK)
		return rc;
	return ri_eng_shard_hash_at(&s->core, shard, h->last_seq, lh);
}

static int
leaf_row(void *bk, int64_t seq, char **kind, char **act_key, char **inv, unsigned char hash[RI_HASH_LEN])
{
	struct sq *s = bk;
	sqlite3_stmt *st = prep(s, "SELECT kind, act_key, invocation_id, hash FROM records WHERE seq = ?");
	int rc = RI_ST_NOT_KNOWN;

	if (st == NULL)
		return RI_ST_UNAVAILABLE;
	sqlite3_bind_int64(st, 1, seq);
	if (sqlite3_step(st) == SQLITE_ROW && col_text_ok(st, 0, false) && col_text_ok(st, 1, false) &&
	    col_text_ok(st, 2, true) && col_is(st, 3, SQLITE_BLOB, false) && sqlite3_column_bytes(st, 3) == RI_HASH_LEN) {
		*kind = col_dup(st, 0);
		*act_key = col_dup(st, 1);
		*inv = col_dup(st, 2);
		memcpy(hash, sqlite3_column_blob(st, 3), RI_HASH_LEN);
		rc = RI_ST_OK;
	}
	done(s, st);
	return rc;
}

static int64_t
count_of(struct sq *s, const char *sql)
{
	sqlite3_stmt *st = prep(s, sql);
	int64_t n = -1;

	if (st != NULL && sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	done(s, st);
	return n;
}

static int
scope_counts(void *bk, int64_t *acts, int64_t *invs)
{
	struct sq *s = bk;

	if ((*acts = count_of(s, "SELECT count(*) FROM (SELECT 1 FROM records GROUP BY kind, act_key)")) < 0 ||
	    (*invs = count_of(s, "SELECT count(DISTINCT invocation_id) FROM records")) < 0)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	return RI_ST_OK;
}

/* store_engine.h row_keys */
static int
row_keys(void *bk, enum ri_rows which, char ***keys, size_t *n)
{
	struct sq *s = bk;
	int cols = ri_eng_row_keys_cols(which), rc;
	sqlite3_stmt *st = prep(s, ri_eng_row_keys_sql[which]);
	size_t cap = 0;

	*keys = NULL;
	*n = 0;
	if (st == NULL)
		return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		for (int i = 0; i < cols; i++) {
			if (*n == cap) {
				char **grown = ri_xcalloc(cap = cap ? 2 * cap : 16, sizeof *grown);
				if (*n > 0)
					memcpy(grown, *keys, *n * sizeof *grown);
				free(*keys);
				*keys = grown;
			}
			(*keys)[(*n)++] = col_text_ok(st, i, false) ? ri_strdup((const char *)sqlite3_column_text(st, i)) : NULL;
		}
	rc = rc == SQLITE_DONE ? RI_ST_OK : sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
	done(s, st);
	if (rc != RI_ST_OK) {
		ri_strings_free(*keys, *n);
		*keys = NULL;
		*n = 0;
	}
	return rc;
}

/* store.h read_session: one snapshot, and the rows verified in it */
static int
sq_read_session(struct ri_store *base, bool on)
{
	struct sq *s = (struct sq *)base;

	if (on) {
		if (!sqlite3_get_autocommit(s->db))
			return ri_st_fail(&s->core, RI_ST_INVALID_QUERY, 0, NULL, "a read session inside a transaction");
		if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
			return sq_db_fail(s, RI_ST_UNAVAILABLE, "read");
		ri_payloads_begin(&s->core);
		s->in_session = true;
		s->session_head = false;
		return RI_ST_OK;
	}
	s->in_session = s->session_head = false;
	/* what was verified was verified in this snapshot only */
	if (!RI_NC(RI_NC_SESSION_OUTLIVES_SNAPSHOT))
		ri_payloads_end(&s->core);
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	return RI_ST_OK;
}

static const unsigned char *
sq_instance_id(struct ri_store *base)
{
	return ((struct sq *)base)->core.instance_id;
}

static const unsigned char *
sq_genesis(struct ri_store *base)
{
	return ((struct sq *)base)->core.genesis;
}

void
sq_close(struct ri_store *base)
{
	struct sq *s = (struct sq *)base;

	if (s == NULL)
		return;
	ri_payloads_end(&s->core);
	ri_st_witness_detach(&s->core);
	ri_tree_cache_free(&s->nodes);
	cache_clear(s);
	sqlite3_close(s->db);
	if (s->queue_fd >= 0)
		close(s->queue_fd);     /* after SQLite's own descriptors */
	if (s->watch_fd >= 0)
		close(s->watch_fd);
	free(s);
}

static int
jhead_get_cb(void *bk, int shard, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN])
{
	return jhead_get(bk, shard, h, last_hash);
}

static int
be_read_begin(void *bk, bool *began)
{
	return sq_read_begin(bk, began) == SQLITE_OK ? RI_ST_OK : sq_db_fail(bk, RI_ST_UNAVAILABLE, "read");
}

static void
be_read_end(void *bk, bool began)
{
	sq_read_end(bk, began);
}

static int
be_write_begin(void *bk)
{
	return begin_immediate(bk);
}

static int
be_commit(void *bk)
{
	return commit(bk);
}

static void
be_rollback(void *bk)
{
	(void)abandon(bk, RI_ST_OK);
}

/* the host's clock (ri_now), then the head */
static int
jhead_now(void *bk, int shard, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN], ri_ms *now)
{
	int rc = now_or_fail(bk, now);

	return rc != RI_ST_OK ? rc : jhead_get(bk, shard, h, last_hash);
}

/* BEGIN IMMEDIATE serialises every writer of the file: one lock for all
 * shards, whichever head the write names */
static int
write_head(void *bk, int shard, struct ri_jhead *jh, unsigned char lh[RI_HASH_LEN], ri_ms *now)
{
	struct sq *s = bk;
	int rc;

	if ((rc = begin_immediate(s)) != RI_ST_OK)
		return rc;
	if ((rc = now_or_fail(s, now)) != RI_ST_OK || (rc = jhead_get(s, shard, jh, lh)) != RI_ST_OK)
		return abandon(s, rc);
	return RI_ST_OK;
}

/* inside BEGIN IMMEDIATE: every head is the writer's already */
static int
head_also(void *bk, int shard, struct ri_jhead *jh, unsigned char lh[RI_HASH_LEN])
{
	return jhead_get(bk, shard, jh, lh);
}

static int
be_clock_now(void *bk, ri_ms *now)
{
	return now_or_fail(bk, now);
}

static int
be_open_remove(void *bk, struct ri_jhead *jh, const char *invocation_id)
{
	return open_remove(bk, jh, invocation_id);
}

/* The primitives of store_engine.h: SQL and decoding, nothing else. */
const struct ri_backend sq_backend = {
	.record_hash = record_hash,
	.scope_newest = scope_newest,
	.node_get = node_get,
	.node_put = node_put,
	.jhead_get = jhead_get_cb,
	.head_also = head_also,
	.shard_prev = shard_prev,
	.seq_next = seq_next,
	.actor_read = actor_read,
	.lease_read = lease_read,
	.lease_write = lease_write,
	.read_begin = be_read_begin,
	.read_end = be_read_end,
	.write_begin = be_write_begin,
	.commit = be_commit,
	.rollback = be_rollback,
	.jhead_now = jhead_now,
	.sealed_rows = sealed_rows,
	.open_rows = open_rows,
	.mark_read = mark_read,
	.mark_write = mark_write,
	.write_head = write_head,
	.actor_insert = actor_insert,
	.actor_update = actor_update,
	/* the records table read */
	.in_snapshot = in_snapshot,
	.record_by_id = record_by_id,
	.records_from = records_from,
	.peek_row = peek_row,
	.inv_rows = inv_rows,
	.event_id_at = event_id_at,
	/* rebuild's writes */
	.open_reset = open_reset,
	.nodes_reset = nodes_reset,
	.open_insert = open_insert,
	.scope_lasts = scope_lasts,
	.mark_drop = mark_drop,
	.leases_malformed_drop = leases_malformed_drop,
	.jhead_put = jhead_put,
	/* the audit's state check */
	.schema_judge = schema_judge,
	.jhead_raw = jhead_raw,
	.leaf_row = leaf_row,
	.scope_counts = scope_counts,
	.purge_due = purge_due,
	.payload_drop = payload_drop,
	.open_remove = be_open_remove,
	.clock_now = be_clock_now,
	.lease_sync = lease_sync,
	.wait_change = change_wait,
	.wake_recheck = wake_recheck,
	.row_keys = row_keys,
	/* the append */
	.recorded_at_of = recorded_at_of,
	.record_insert = record_insert,
};
_Static_assert(offsetof(struct sq, core) == offsetof(struct ri_eng_store, core), "struct sq begins as ri_eng_store");

const struct ri_store_ops sqlite_ops = {
	RI_ENG_STORE_OPS,
	.open_kinds = sq_open_kinds,
	.backup = sq_backup,
	.read_session = sq_read_session,
	.instance_id = sq_instance_id,
	.genesis = sq_genesis,
	.error = sq_error,
	.close = sq_close,
};

