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


struct sq {
	struct ri_store base;
	struct ri_st_core core;        /* store_common.h */
	sqlite3 *db;
	bool readonly;
	bool nosync;                    /* bench fill only: see setup_connection */
	int64_t busy_ms;                /* a lock wait's budget (setup_connection) */
	int64_t busy_since;             /* when the current lock wait began (mono ms) */
	bool busy_preset;               /* busy_since was set by begin_immediate */
	/* the writers' queue (begin_immediate): a descriptor of the journal
	 * file whose flock(2) ri's writers take before BEGIN IMMEDIATE; -1
	 * without one.  queued: we hold it, until the transaction ends */
	int queue_fd;
	bool queued;
	/* the WAL's directory synced by this connection (wal_dir_sync) */
	bool wal_dir_synced;
	/* the lease wait's inotify watch on the WAL (change_wait); -1 until
	 * the first wait.  watch_failed: none can be had, the wait naps */
	int watch_fd;
	bool watch_failed;
	/* tree nodes verified or written, for the handle's life: content-
	 * addressed, a hit is what its verified parent names (heads.h) */
	struct ri_tree_cache nodes;
	int wal_frames;                 /* the WAL's frames at our last commit (wal_trim) */
	int wal_trims;                  /* checkpoints wal_trim made on this connection */
	/* a read session (sq_read_session): one snapshot, so one verified head */
	bool in_session, session_head;
	struct ri_jhead session_jh;
	unsigned char session_lh[RI_HASH_LEN];
	/* prepared statements, kept for the connection's life: preparing costs
	 * more than most of the queries themselves */
	struct cached {
		char *sql;
		sqlite3_stmt *st;
		bool busy;
	} cache[64];
	size_t n_cache;
};

/* Every table STRICT: a value of another type is refused at the write and,
 * should one be planted anyway, refused at every read (col_is). */
static const char schema_ddl[] =
	"CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL) STRICT, WITHOUT ROWID;"
	"CREATE TABLE records("
	"  seq INTEGER PRIMARY KEY,"
	"  event_id TEXT NOT NULL UNIQUE,"
	"  action_ref TEXT NOT NULL,"
	"  kind TEXT NOT NULL,"
	"  act_key TEXT NOT NULL,"
	"  invocation_id TEXT,"
	"  actor_ref TEXT NOT NULL,"
	"  attestation_id TEXT NOT NULL,"
	"  recorded_at INTEGER NOT NULL,"
	"  retention_until INTEGER,"
	"  role INTEGER NOT NULL,"
	"  act_prev INTEGER NOT NULL,"
	"  inv_prev INTEGER NOT NULL,"
	"  payload TEXT,"
	"  salt BLOB,"
	"  digest BLOB NOT NULL,"
	"  hash BLOB NOT NULL,"
	"  mac BLOB NOT NULL) STRICT;"
	"CREATE INDEX records_invocation ON records(invocation_id, seq);"
	"CREATE INDEX records_act ON records(kind, act_key, seq);"
	"CREATE INDEX records_retention ON records(retention_until) WHERE payload IS NOT NULL;"
	/* the journal head: one row, one MAC (heads.h) */
	"CREATE TABLE heads(id INTEGER PRIMARY KEY CHECK (id = 1), last_seq INTEGER NOT NULL,"
	"  root BLOB NOT NULL, open_count INTEGER NOT NULL, open_acc BLOB NOT NULL,"
	"  sealed_seq INTEGER NOT NULL, grants INTEGER NOT NULL, mac BLOB NOT NULL) STRICT;"
	/* the tree of scope heads (heads.h): node id -> body */
	"CREATE TABLE nodes(id BLOB PRIMARY KEY, body BLOB NOT NULL) STRICT, WITHOUT ROWID;"
	"CREATE TABLE open_intents(invocation_id TEXT PRIMARY KEY, seq INTEGER NOT NULL,"
	"  kind TEXT NOT NULL, act_key TEXT NOT NULL, event_id TEXT NOT NULL,"
	"  recorded_at INTEGER NOT NULL) STRICT, WITHOUT ROWID;"
	"CREATE INDEX open_intents_act ON open_intents(kind, act_key);"
	"CREATE INDEX open_intents_age ON open_intents(kind, recorded_at);"
	"CREATE TABLE actors(actor_ref TEXT PRIMARY KEY, service INTEGER NOT NULL,"
	"  cred_hash BLOB NOT NULL, created_at INTEGER NOT NULL, revoked_at INTEGER,"
	"  reg_seq INTEGER NOT NULL, mac BLOB NOT NULL) STRICT, WITHOUT ROWID;"
	"CREATE TABLE leases(kind TEXT NOT NULL, act_key TEXT NOT NULL, holder TEXT,"
	"  expires_at INTEGER NOT NULL, token INTEGER NOT NULL, mac BLOB NOT NULL,"
	"  PRIMARY KEY(kind, act_key)) STRICT, WITHOUT ROWID;"
	"CREATE TABLE marks(name TEXT PRIMARY KEY, seq INTEGER NOT NULL, mac BLOB NOT NULL)"
	"  STRICT, WITHOUT ROWID;"
	/* Append-only at the database level.  ri_now() exists only on ri's own
	 * connections, so any other client's UPDATE is refused outright; ri's
	 * own may only null a payload (and its salt) whose retention ended. */
	"CREATE TRIGGER records_append_only_delete BEFORE DELETE ON records BEGIN"
	"  SELECT RAISE(ABORT, 'ri: the journal is append-only');"
	"END;"
	"CREATE TRIGGER records_append_only_update BEFORE UPDATE ON records"
	"  WHEN NOT (NEW.payload IS NULL AND NEW.salt IS NULL AND OLD.payload IS NOT NULL"
	"    AND OLD.retention_until IS NOT NULL AND OLD.retention_until <= ri_now()"
	"    AND NEW.seq IS OLD.seq AND NEW.event_id IS OLD.event_id"
	"    AND NEW.action_ref IS OLD.action_ref AND NEW.kind IS OLD.kind"
	"    AND NEW.act_key IS OLD.act_key AND NEW.invocation_id IS OLD.invocation_id"
	"    AND NEW.actor_ref IS OLD.actor_ref AND NEW.attestation_id IS OLD.attestation_id"
	"    AND NEW.recorded_at IS OLD.recorded_at"
	"    AND NEW.retention_until IS OLD.retention_until AND NEW.role IS OLD.role"
	"    AND NEW.act_prev IS OLD.act_prev AND NEW.inv_prev IS OLD.inv_prev"
	"    AND NEW.digest IS OLD.digest AND NEW.hash IS OLD.hash AND NEW.mac IS OLD.mac)"
	"BEGIN"
	"  SELECT RAISE(ABORT, 'ri: the journal is append-only; only an expired payload may be purged');"
	"END;";

#define REC_COLS "seq, event_id, action_ref, kind, act_key, invocation_id, actor_ref," \
	" attestation_id, recorded_at, retention_until, role, act_prev, inv_prev," \
	" payload, salt, digest, hash, mac"

/* ---- errors ---------------------------------------------------------- */




static int
db_fail(struct sq *s, int code, const char *what)
{
	return ri_st_fail(&s->core, code, 0, NULL, "journal %s: %s: %s", s->core.cfg->journal, what,
	    sqlite3_errmsg(s->db));
}


static const struct ri_store_error *
sq_error(struct ri_store *st)
{
	return &((struct sq *)st)->core.err;
}

/* ---- small SQL helpers ------------------------------------------------ */

static sqlite3_stmt *
prep(struct sq *s, const char *sql)
{
	sqlite3_stmt *st = NULL;
	struct cached *c = NULL;

	for (size_t i = 0; i < s->n_cache; i++) {
		if (strcmp(s->cache[i].sql, sql) == 0) {
			if (!s->cache[i].busy) {
				s->cache[i].busy = true;
				return s->cache[i].st;
			}
			c = &s->cache[i];       /* in use: a nested twin, uncached */
		}
	}
	if (sqlite3_prepare_v3(s->db, sql, -1, c == NULL ? SQLITE_PREPARE_PERSISTENT : 0, &st,
	    NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	if (c == NULL && s->n_cache < sizeof s->cache / sizeof s->cache[0]) {
		c = &s->cache[s->n_cache++];
		c->sql = ri_strdup(sql);
		c->st = st;
		c->busy = true;
	}
	return st;
}

/* Done with a statement: a cached one is reset for its next use. */
static void
done(struct sq *s, sqlite3_stmt *st)
{
	if (st == NULL)
		return;
	for (size_t i = 0; i < s->n_cache; i++) {
		if (s->cache[i].st == st) {
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			s->cache[i].busy = false;
			return;
		}
	}
	sqlite3_finalize(st);
}

/* A statement without parameters or rows (BEGIN, COMMIT), run from the
 * statement cache: sqlite3_exec would parse it again at every transaction
 * (issue 15: a dozen transactions a command).  Not for a PRAGMA, which
 * takes effect when it is prepared.  SQLITE_OK, or the step's code. */
static int
exec1(struct sq *s, const char *sql)
{
	sqlite3_stmt *st = prep(s, sql);
	int rc;

	if (st == NULL)
		return (rc = sqlite3_extended_errcode(s->db)) != SQLITE_OK ? rc : SQLITE_ERROR;
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static void
cache_clear(struct sq *s)
{
	for (size_t i = 0; i < s->n_cache; i++) {
		sqlite3_finalize(s->cache[i].st);
		free(s->cache[i].sql);
	}
	s->n_cache = 0;
}

static void
bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v == NULL)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
}

static void
bind_ms(sqlite3_stmt *st, int i, ri_ms v)
{
	if (v == RI_NONE)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_int64(st, i, v);
}

static ri_ms
col_ms(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? RI_NONE : sqlite3_column_int64(st, i);
}

static char *
col_dup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t == NULL ? NULL : ri_strdup((const char *)t);
}

/* Typed storage: is column i of exactly this type (or NULL, where the
 * column may be NULL)?  A value of another type is an integrity failure
 * wherever it is read -- never coerced. */
static bool
col_is(sqlite3_stmt *st, int i, int type, bool null_ok)
{
	int t = sqlite3_column_type(st, i);

	return t == type || (null_ok && t == SQLITE_NULL);
}

/* A 32-byte BLOB column, copied out. */
static bool
col_h32(sqlite3_stmt *st, int i, unsigned char out[RI_HASH_LEN])
{
	if (!col_is(st, i, SQLITE_BLOB, false) || sqlite3_column_bytes(st, i) != RI_HASH_LEN)
		return false;
	memcpy(out, sqlite3_column_blob(st, i), RI_HASH_LEN);
	return true;
}

/* A TEXT column with no NUL inside it (what is hashed is then what a
 * filter matches). */
static bool
col_text_ok(sqlite3_stmt *st, int i, bool null_ok)
{
	const unsigned char *t;

	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return null_ok;
	if (sqlite3_column_type(st, i) != SQLITE_TEXT)
		return false;
	t = sqlite3_column_text(st, i);
	return t != NULL && strlen((const char *)t) == (size_t)sqlite3_column_bytes(st, i);
}

/* A read runs inside one snapshot unless a write transaction is open. */
static int
read_begin(struct sq *s, bool *began)
{
	*began = false;
	if (!sqlite3_get_autocommit(s->db))
		return SQLITE_OK;
	int rc = exec1(s, "BEGIN");
	if (rc == SQLITE_OK)
		*began = true;
	return rc;
}

static void
read_end(struct sq *s, bool began)
{
	if (began)
		(void)exec1(s, "COMMIT");
}

static void queue_leave(struct sq *s);

static void
rollback(struct sq *s)
{
	if (!sqlite3_get_autocommit(s->db))
		(void)exec1(s, "ROLLBACK");
	queue_leave(s);
	ri_st_witness_discard(&s->core);
}

/* Roll back a write that failed, keeping the error that made it fail (the
 * rollback must not overwrite what the caller reports). */
static int
abandon(struct sq *s, int rc)
{
	struct ri_store_error keep = s->core.err;

	rollback(s);
	s->core.err = keep;
	return rc;
}

static void
sql_now(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct sq *s = sqlite3_user_data(ctx);
	ri_ms now;

	(void)argc;
	(void)argv;
	if (ri_now(s->core.cfg, &now, NULL) != RI_OK) {
		sqlite3_result_error(ctx, "ri_now: no clock reading", -1);
		return;
	}
	sqlite3_result_int64(ctx, now);
}

/* ---- the journal head, the tree of scope heads, the witness ------------ */

/* Stored hash of the record at seq (store_engine.h record_hash). */
static int
record_hash(void *bk, int64_t seq, unsigned char out[RI_HASH_LEN])
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "SELECT hash FROM records WHERE seq = ?")) == NULL)
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
	sqlite3_bind_int64(st, 1, seq);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && col_h32(st, 0, out)) {
		done(s, st);
		return RI_ST_OK;
	}
	done(s, st);
	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		return RI_ST_NOT_KNOWN;
	return db_fail(s, RI_ST_UNAVAILABLE, "read");
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
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
	if (type != SCOPE_ALL)
		bind_text(st, 1, a);
	if (type == SCOPE_ACT)
		bind_text(st, 2, b);
	if (sqlite3_step(st) != SQLITE_ROW) {
		done(s, st);
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
	}
	if (!col_is(st, 0, SQLITE_INTEGER, true)) {
		done(s, st);
		return ri_st_fail(&s->core, RI_ST_INTEGRITY, 0, NULL, "journal integrity: a record's seq is not an integer");
	}
	*out = sqlite3_column_int64(st, 0);
	done(s, st);
	return RI_ST_OK;
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
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
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
	return rc == SQLITE_DONE ? RI_ST_NOT_KNOWN : db_fail(s, RI_ST_UNAVAILABLE, "read");
}

static int
node_put(void *ctx, const unsigned char *id, size_t idlen, const unsigned char *body, size_t len)
{
	struct sq *s = ctx;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "INSERT INTO nodes(id, body) VALUES (?, ?)"
	    " ON CONFLICT(id) DO UPDATE SET body = excluded.body")) == NULL)
		return db_fail(s, RI_ST_UNAVAILABLE, "write");
	sqlite3_bind_blob(st, 1, id, (int)idlen, SQLITE_TRANSIENT);
	sqlite3_bind_blob(st, 2, body, (int)len, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "write");
}

/* The head row as stored (typed), without judging it. */
static int
jhead_read(struct sq *s, struct ri_jhead *h, unsigned char mac[RI_HASH_LEN])
{
	sqlite3_stmt *st;
	int rc;

	memset(h, 0, sizeof *h);
	if ((st = prep(s, "SELECT last_seq, root, open_count, open_acc, sealed_seq, grants, mac"
	    " FROM heads WHERE id = 1")) == NULL)
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
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
	return db_fail(s, RI_ST_UNAVAILABLE, "read");
}

/*
 * The verified journal head: its MAC over what the rows say -- the newest
 * row is its last_seq, the hash there is the one bound -- and the
 * witness's newest line agrees with the journal.  Without a key only the
 * rows and the witness are consulted (and the root is unknown).
 */
static int jhead_verify(struct sq *s, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN]);

static int
jhead_get(struct sq *s, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN])
{
	int rc;

	/* a read session's snapshot has one head: verified once */
	if (s->in_session && s->session_head) {
		*h = s->session_jh;
		memcpy(last_hash, s->session_lh, RI_HASH_LEN);
		return RI_ST_OK;
	}
	if ((rc = jhead_verify(s, h, last_hash)) == RI_ST_OK && s->in_session) {
		s->session_jh = *h;
		memcpy(s->session_lh, last_hash, RI_HASH_LEN);
		s->session_head = true;
	}
	return rc;
}

static int
jhead_verify(struct sq *s, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN])
{
	unsigned char mac[RI_HASH_LEN], at[RI_HASH_LEN];
	int64_t rows;
	int rc;

	if ((rc = scope_max(s, SCOPE_ALL, NULL, NULL, &rows)) != RI_ST_OK)
		return rc;
	if (s->core.key == NULL) {
		memset(h, 0, sizeof *h);
		h->last_seq = rows;
		if ((rc = ri_eng_hash_at(&s->core, rows, last_hash)) != RI_ST_OK)
			return rc;
	} else {
		if ((rc = jhead_read(s, h, mac)) != RI_ST_OK) {
			if (rc == RI_ST_INTEGRITY)
				s->core.err.seq = rows;      /* name the journal's newest record */
			return rc;
		}
		rc = ri_eng_hash_at(&s->core, h->last_seq, last_hash);
		if (rc != RI_ST_OK && rc != RI_ST_INTEGRITY)
			return rc;
		if ((rc = ri_jhead_judge(&s->core, h, mac, rc == RI_ST_OK ? last_hash : NULL, rows)) != RI_ST_OK)
			return rc;
	}
	if (!ri_witness_wants(&s->core, h->last_seq))
		return ri_witness_judge(&s->core, h->last_seq, NULL);
	if ((rc = ri_eng_hash_at(&s->core, s->core.anchor_seq, at)) != RI_ST_OK)
		return rc;
	return ri_witness_judge(&s->core, h->last_seq, at);
}

static int
jhead_set(struct sq *s, const struct ri_jhead *h, const unsigned char last_hash[RI_HASH_LEN])
{
	sqlite3_stmt *st;
	unsigned char mac[RI_HASH_LEN];
	int rc;

	ri_jhead_mac(s->core.key, s->core.keylen, s->core.instance_id, h, last_hash, mac);
	if ((st = prep(s, "UPDATE heads SET last_seq = ?, root = ?, open_count = ?, open_acc = ?,"
	    " sealed_seq = ?, grants = ?, mac = ? WHERE id = 1")) == NULL)
		return db_fail(s, RI_ST_UNAVAILABLE, "write");
	sqlite3_bind_int64(st, 1, h->last_seq);
	sqlite3_bind_blob(st, 2, h->root, RI_HASH_LEN, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, h->open_count);
	sqlite3_bind_blob(st, 4, h->open_acc, RI_HASH_LEN, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 5, h->sealed_seq);
	sqlite3_bind_int64(st, 6, h->grants);
	sqlite3_bind_blob(st, 7, mac, RI_HASH_LEN, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	done(s, st);
	if (rc != SQLITE_DONE)
		return db_fail(s, RI_ST_UNAVAILABLE, "write");
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
	static const int want[18] = { SQLITE_INTEGER, SQLITE_TEXT, SQLITE_TEXT, SQLITE_TEXT, SQLITE_TEXT,
		SQLITE_TEXT, SQLITE_TEXT, SQLITE_TEXT, SQLITE_INTEGER, SQLITE_INTEGER, SQLITE_INTEGER,
		SQLITE_INTEGER, SQLITE_INTEGER, SQLITE_TEXT, SQLITE_BLOB, SQLITE_BLOB, SQLITE_BLOB, SQLITE_BLOB };
	static const bool nullable[18] = { [5] = true, [9] = true, [13] = true, [14] = true };
	bool typed = true;
	int types[18];
	for (int i = 0; i < 18; i++) {
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
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
	bind_text(st, 1, event_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		load_row(st, r, w);
	done(s, st);
	if (rc == SQLITE_DONE)
		return RI_ST_NOT_KNOWN;
	return rc == SQLITE_ROW ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "read");
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
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
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
		rc = db_fail(s, RI_ST_UNAVAILABLE, "read");
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
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
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
	return rc == SQLITE_DONE ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "read");
}

/* ---- record_action ------------------------------------------------------- */

/*
 * The WAL kept short (issue 15).  Every ri command is a new connection, and
 * the first connection to open a journal rebuilds the WAL index from the
 * WAL file: it reads and checksums every frame written since the WAL last
 * restarted, ~2 us a frame -- about 1 ms a process at SQLite's default
 * 1,000-frame autocheckpoint, in a process whose own work is a few ms.
 * The WAL restarts at its first frame only when a connection writes after
 * a checkpoint that copied every frame, and a rebuild forgets what was
 * copied: so SQLite's autocheckpoint, at a process's last commit, leaves
 * the next process the whole WAL again.  Instead, a write transaction that
 * follows one of our own commits (every command writes twice: the take and
 * the intent, the outcome and the release; the sweep many times) first
 * checkpoints when that commit left WAL_TRIM_FRAMES or more; the write then
 * restarts the WAL.  PASSIVE: the checkpoint never waits for a reader or a
 * writer, and stops where one is in its way.  No sync is relaxed: the
 * checkpoint syncs the WAL before it copies a page, and the database after.
 * The threshold weighs the rebuild (~2 us a frame, in every process)
 * against a checkpoint's three syncs (the WAL's, the database's, and the
 * restarted WAL's header): an Open + Close pair writes ~32 frames, so at
 * 128 a checkpoint comes every ~4 pairs.  Measured against 64, pairs
 * interleaved in one run: 3-13% less time a pair, in each of five runs.
 */
#define WAL_TRIM_FRAMES 128
#define WAL_BACKSTOP_FRAMES 1000        /* SQLite's own autocheckpoint */

static int
wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct sq *s = arg;

	s->wal_frames = frames;
	/* a process that never writes again still checkpoints a long WAL */
	if (frames >= 2 * WAL_BACKSTOP_FRAMES)
		(void)sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	return SQLITE_OK;
}

static void
wal_trim(struct sq *s)
{
	/* a long-running writer (the sweep, a fill) trims at SQLite's own
	 * threshold after its first trim: a checkpoint every few appends
	 * would write the same hot pages over and over (bench_append) */
	if (s->wal_frames < (s->wal_trims == 0 ? WAL_TRIM_FRAMES : WAL_BACKSTOP_FRAMES))
		return;
	(void)sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	s->wal_frames = 0;
	s->wal_trims++;
}

/*
 * The writers' queue (issue 15, target 4: no naps in a wait for a lock).
 * SQLite has no event for the release of its write lock: a writer that
 * finds it taken can only sleep and try again, and under 8 writers the
 * lock sits free through much of each nap.  So ri's writers queue first
 * on a lock the kernel hands over: flock(2) on the journal file itself,
 * taken before BEGIN IMMEDIATE and dropped when the transaction ends, so
 * a waiter wakes at the holder's release, never later.  Its wait and the
 * SQLite lock's that follows share one budget (busy_ms).  flock locks are
 * independent of the POSIX locks SQLite takes on the same file, and the
 * descriptor is closed only after SQLite's connection is (a close of any
 * descriptor of the file would drop the process's POSIX locks on it).
 * A journal whose file cannot take it (flock refused) is served by
 * SQLite's own lock and busy handler alone, as any writer that is not
 * ri's -- the sqlite3 shell -- always is.
 */
static int
contended(struct sq *s)
{
	return ri_st_fail(&s->core, RI_ST_UNAVAILABLE, 0, NULL, "journal %s is locked: another writer held its"
	    " write lock through this write's whole wait of %lld ms (journal_write_bound%s) -- if this load"
	    " is ordinary, raise journal_write_bound", s->core.cfg->journal,
	    (long long)s->busy_ms, s->core.cfg->journal_fence ? " less clock_offset_allowance" : "");
}

static int
queue_take(struct sq *s)
{
	if (s->queue_fd < 0 || s->queued)
		return RI_ST_OK;
	if (ri_lock_wait(s->queue_fd, s->busy_ms) == 0) {
		s->queued = true;
		return RI_ST_OK;
	}
	if (errno == ETIMEDOUT)
		return contended(s);
	close(s->queue_fd);
	s->queue_fd = -1;
	return RI_ST_OK;
}

static void
queue_leave(struct sq *s)
{
	if (s->queued && sqlite3_get_autocommit(s->db)) {
		(void)flock(s->queue_fd, LOCK_UN);
		s->queued = false;
	}
}

/*
 * The WAL's directory entry durable before this connection's first commit
 * in it.  The journal's VFS opens an existing WAL without SQLite's own
 * directory sync, which would come inside the first commit, under the
 * write lock (store_sqlite_vfs.h): so a writer syncs the directory here,
 * once, after its connection opened the WAL (its first read does) and
 * before its first write transaction -- outside the writers' queue, where
 * it holds no other writer up (issue 15, target 5: the sync was about
 * half of an intent's time under the lock).  Called again once BEGIN
 * IMMEDIATE holds the lock, for a WAL that only the BEGIN opened.
 */
static void
wal_dir_sync(struct sq *s)
{
	if (RI_NC(RI_NC_NO_WAL_DIR_SYNC) || s->wal_dir_synced || s->nosync || !ri_wal_is_open(s->db))
		return;
	ri_wal_dir_sync(s->db);
	s->wal_dir_synced = true;
}

static int
begin_immediate(struct sq *s)
{
	int64_t t0 = ri_mono_ms();
	int rc;

	wal_dir_sync(s);
	/* the checkpoint first, outside the queue: it never holds the
	 * writers up (PASSIVE), and its database fsync is no write's */
	wal_trim(s);
	if ((rc = queue_take(s)) != RI_ST_OK)
		return rc;
	s->busy_since = t0;
	s->busy_preset = true;
	rc = exec1(s, "BEGIN IMMEDIATE");
	s->busy_preset = false;
	if (rc == SQLITE_OK) {
		wal_dir_sync(s);
		return RI_ST_OK;
	}
	queue_leave(s);
	if ((rc & 0xff) == SQLITE_READONLY)
		return db_fail(s, RI_ST_READONLY, "begin");
	if ((rc & 0xff) == SQLITE_BUSY)
		return contended(s);
	return db_fail(s, RI_ST_STEP2, "begin");
}

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
		return db_fail(s, RI_ST_UNAVAILABLE, "actor read");
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
	return rc == SQLITE_DONE ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "actor read");
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
		return db_fail(s, RI_ST_UNAVAILABLE, "lease read");
	bind_text(st, 1, kind);
	bind_text(st, 2, act_key);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		done(s, st);
		return rc == SQLITE_DONE ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "lease read");
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
		return db_fail(s, RI_ST_UNAVAILABLE, "lease write");
	bind_text(st, 1, kind);
	bind_text(st, 2, act_key);
	bind_text(st, 3, holder);
	sqlite3_bind_int64(st, 4, expires);
	sqlite3_bind_int64(st, 5, token);
	sqlite3_bind_blob(st, 6, mac, RI_HASH_LEN, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "lease write");
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
		return db_fail(s, RI_ST_UNAVAILABLE, "append");
	bind_text(st, 1, inv);
	sqlite3_bind_int64(st, 2, seq);
	bind_text(st, 3, kind);
	bind_text(st, 4, act_key);
	bind_text(st, 5, event_id);
	sqlite3_bind_int64(st, 6, recorded_at);
	rc = sqlite3_step(st);
	done(s, st);
	if (rc != SQLITE_DONE)
		return db_fail(s, RI_ST_UNAVAILABLE, "append");
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
		return db_fail(s, RI_ST_UNAVAILABLE, "append");
	bind_text(st, 1, inv);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		done(s, st);
		return RI_ST_OK;
	}
	if (rc != SQLITE_ROW) {
		done(s, st);
		return db_fail(s, RI_ST_UNAVAILABLE, "append");
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
		return db_fail(s, RI_ST_UNAVAILABLE, "append");
	bind_text(st, 1, inv);
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "append");
}

/* store_engine.h recorded_at_of */
static int
recorded_at_of(void *bk, int64_t seq, ri_ms *at)
{
	struct sq *s = bk;
	sqlite3_stmt *st;

	*at = RI_NONE;
	if ((st = prep(s, "SELECT recorded_at FROM records WHERE seq = ?")) == NULL)
		return db_fail(s, RI_ST_STEP2, "read");
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
	    " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) == NULL)
		return db_fail(s, RI_ST_STEP2, "append");
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
	sqlite3_bind_blob(st, 18, mac, RI_HASH_LEN, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : db_fail(s, RI_ST_STEP2, "append");
}

static int
commit(struct sq *s)
{
	if (exec1(s, "COMMIT") != SQLITE_OK) {
		int rc = db_fail(s, RI_ST_STEP3, "commit");
		rollback(s);
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
		return db_fail(s, RI_ST_UNAVAILABLE, "purge");
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
	return rc == SQLITE_DONE ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "purge");
}

static int
payload_drop(void *bk, int64_t seq)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "UPDATE records SET payload = NULL, salt = NULL WHERE seq = ?")) == NULL)
		return db_fail(s, RI_ST_UNAVAILABLE, "purge");
	sqlite3_bind_int64(st, 1, seq);
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "purge");
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
		return db_fail(s, RI_ST_STEP2, "actor add");
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
	return rc == SQLITE_DONE ? RI_ST_OK : db_fail(s, RI_ST_STEP2, "actor add");
}

static int
actor_update(void *bk, const char *actor, const struct ri_actor_row *row)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "UPDATE actors SET revoked_at = ?, reg_seq = ?, mac = ? WHERE actor_ref = ?")) == NULL)
		return db_fail(s, RI_ST_STEP2, "actor revoke");
	sqlite3_bind_int64(st, 1, row->revoked);
	sqlite3_bind_int64(st, 2, row->reg_seq);
	sqlite3_bind_blob(st, 3, row->mac, RI_HASH_LEN, SQLITE_TRANSIENT);
	bind_text(st, 4, actor);
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : db_fail(s, RI_ST_STEP2, "actor revoke");
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
	return db_fail(s, RI_ST_UNAVAILABLE, "read");
}

/* ---- the critical-section host (Lease) ---------------------------------------- */

/*
 * The lease wait, on the event (issue 15, target 4).  Every commit writes
 * the WAL -- the holder's release among them -- so an inotify watch on
 * the WAL file wakes a waiter at that release, and nothing else need wake
 * it but the end of the holder's lease (ri_take_wait's bound).  The watch
 * is set up at the first wait, which then returns at once: a release
 * between the check that found the section held and the watch would go
 * unseen, so the section is checked once more under the watch.  A WAL
 * that goes (a client that checkpoints and deletes it on close) drops the
 * watch, set up again at the next wait; where none can be had (no WAL
 * yet, no inotify), the wait naps as before.
 */
static bool
change_wait(void *bk, int64_t ms)
{
	struct sq *s = bk;
	union {
		struct inotify_event e;
		char b[4096];
	} buf;
	struct pollfd p;
	ssize_t n;

	if (RI_NC(RI_NC_LEASE_WAIT_NAPS))
		return false;                   /* negative control: the backoff naps */
	if (s->watch_fd < 0) {
		char wal[4096];
		if (s->watch_failed)
			return false;
		snprintf(wal, sizeof wal, "%s-wal", s->core.cfg->journal);
		if ((s->watch_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) < 0 ||
		    inotify_add_watch(s->watch_fd, wal, IN_MODIFY | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
			if (s->watch_fd >= 0)
				close(s->watch_fd);
			s->watch_fd = -1;
			s->watch_failed = true;
			return false;
		}
		return true;
	}
	p = (struct pollfd){ .fd = s->watch_fd, .events = POLLIN };
	if (poll(&p, 1, ms > INT32_MAX ? INT32_MAX : (int)ms) <= 0)
		return true;
	bool gone = false;
	while ((n = read(s->watch_fd, buf.b, sizeof buf.b)) > 0) {
		for (ssize_t at = 0; at + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *e = (const struct inotify_event *)(void *)(buf.b + at);
			gone |= (e->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) != 0;
			at += (ssize_t)(sizeof *e + e->len);
		}
	}
	if (gone) {
		close(s->watch_fd);
		s->watch_fd = -1;
	}
	return true;
}

/*
 * store_engine.h wake_recheck: after a wake under the watch, the section
 * is read again in a plain read transaction (the engine's held_elsewhere).
 *
 * The wake is a write to the WAL, and a commit writes the WAL *before* it
 * is visible: SQLite publishes it afterwards, in the shared-memory index,
 * which no inotify event reports.  A reader woken by the release's own
 * write could read the section still held and then wait out the holder's
 * whole lease, no further write coming (issue 44, point 1: 7 waits of 20
 * did).  Every ri writer holds the writers' queue (queue_take) from before
 * its BEGIN to after its COMMIT returns, so the read first waits -- on the
 * kernel's hand-over, never a nap -- for a shared hold of the queue: the
 * writer whose write woke us has then published its commit.  The hold is
 * dropped before the read; it holds no writer up past that instant.
 */
static bool
wake_recheck(void *bk)
{
	struct sq *s = bk;

	if (s->watch_fd < 0)
		return false;
	if (!RI_NC(RI_NC_WAKE_BEFORE_PUBLISH) &&
	    s->queue_fd >= 0 && !s->queued && ri_lock_wait_shared(s->queue_fd, s->busy_ms) == 0)
		(void)flock(s->queue_fd, LOCK_UN);
	return true;
}

/* ---- marks, head ---------------------------------------------------------------- */

static int
mark_read(void *bk, const char *name, int64_t *seq, unsigned char mac[RI_HASH_LEN], enum ri_found *found)
{
	struct sq *s = bk;
	sqlite3_stmt *st = prep(s, "SELECT seq, mac FROM marks WHERE name = ?");
	int rc;

	if (st == NULL)
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
	bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*found = col_is(st, 0, SQLITE_INTEGER, false) && col_h32(st, 1, mac) ? RI_ROW_OK : RI_ROW_MALFORMED;
		*seq = sqlite3_column_int64(st, 0);
	}
	done(s, st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
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
		return db_fail(s, RI_ST_UNAVAILABLE, "write");
	bind_text(st, 1, name);
	sqlite3_bind_int64(st, 2, seq);
	sqlite3_bind_blob(st, 3, mac, RI_HASH_LEN, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "write");
}

static int
peek_row(void *bk, const char *event_id, struct ri_record *out)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "SELECT seq, action_ref, kind, act_key, invocation_id, actor_ref, role,"
	    " recorded_at, payload IS NULL FROM records WHERE event_id = ?")) == NULL)
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
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
	return rc == SQLITE_ROW ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "read");
}

/* the invocation index alone (covering) */
static int
inv_rows(void *bk, const char *invocation_id, int64_t *first, int64_t *last, int64_t *n)
{
	struct sq *s = bk;
	sqlite3_stmt *st;
	int rc;

	if ((st = prep(s, "SELECT min(seq), max(seq), count(*) FROM records WHERE invocation_id = ?")) == NULL)
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
	bind_text(st, 1, invocation_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*first = sqlite3_column_int64(st, 0);
		*last = sqlite3_column_int64(st, 1);
		*n = sqlite3_column_int64(st, 2);
	}
	done(s, st);
	return rc == SQLITE_ROW ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "read");
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
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
	if (sqlite3_step(st) == SQLITE_ROW && col_is(st, 0, SQLITE_INTEGER, true))
		*seq = sqlite3_column_int64(st, 0);
	done(s, st);
	return RI_ST_OK;
}

/* ---- the schema ri creates ------------------------------------------------ */

/* Every object of the schema but SQLite's own (sqlite_*): the text of its
 * CREATE statement, one per line, in byte order. */
static char *
schema_text(sqlite3 *db)
{
	sqlite3_stmt *st;
	char *out = ri_strdup("");
	size_t n = 0;

	if (sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
	    " ORDER BY sql", -1, &st, NULL) != SQLITE_OK) {
		free(out);
		return NULL;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		size_t k = t ? strlen(t) : 0;
		out = realloc(out, n + k + 2);
		if (out == NULL)
			abort();
		memcpy(out + n, t ? t : "", k);
		n += k;
		out[n++] = '\n';
		out[n] = '\0';
	}
	sqlite3_finalize(st);
	return out;
}

static int
cmp_text(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The schema as ri creates it, in the same form, computed from schema_ddl
 * (the caller frees it; no process-wide copy, as ri-audit's state checks
 * run in a thread of their own): SQLite stores each CREATE statement's
 * text as written (ours have no TEMP, no IF NOT EXISTS, single spaces in
 * their heads) less the trailing semicolon.  Each statement of ours ends
 * at a semicolon followed by the next CREATE or by the end (a trigger's
 * body holds semicolons too, each followed by a statement or END, never
 * by CREATE): a split that costs no parse, in a check every command makes
 * when it opens the journal (issue 15; sqlite3_complete() at each
 * semicolon was 2.5% of an ri-run). */
static char *
schema_expected(void)
{
	char *text, *stmts[32] = { NULL };
	size_t n = 0, total = 0;

	for (const char *p = schema_ddl, *end; *p != '\0'; p = end + 1) {
		for (end = strchr(p, ';'); end != NULL && end[1] != '\0' && strncmp(end + 1, "CREATE ", 7) != 0;)
			end = strchr(end + 1, ';');
		if (end == NULL || n == sizeof stmts / sizeof stmts[0])
			abort();        /* schema_ddl is ours: every statement ends in ';' */
		size_t len = (size_t)(end - p);
		while (len > 0 && p[len - 1] == ' ')
			len--;
		stmts[n] = ri_xmalloc(len + 1);
		memcpy(stmts[n], p, len);
		stmts[n++][len] = '\0';
	}
	qsort(stmts, n, sizeof stmts[0], cmp_text);
	for (size_t i = 0; i < n; i++)
		total += strlen(stmts[i]) + 1;
	text = ri_xmalloc(total + 1);
	text[0] = '\0';
	for (size_t i = 0, at = 0; i < n; i++) {
		size_t k = strlen(stmts[i]);
		memcpy(text + at, stmts[i], k);
		at += k;
		text[at++] = '\n';
		text[at] = '\0';
		free(stmts[i]);
	}
	return text;
}

/* Defense in depth: the journal's schema is exactly the one ri creates --
 * no table re-created without STRICT, no trigger dropped, no index or
 * view added.  why names the first object that differs. */
static bool
schema_check(struct sq *s, char *why, size_t n)
{
	char *want = schema_expected();
	char *have = schema_text(s->db);
	bool ok = want != NULL && have != NULL && strcmp(want, have) == 0;

	if (!ok) {
		/* name the first statement of either side the other lacks */
		const char *a = want ? want : "", *b = have ? have : "", *odd = NULL;
		while (*a != '\0' || *b != '\0') {
			size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
			int c = la == lb ? strncmp(a, b, la) : 1;
			if (c != 0) {
				odd = *b != '\0' ? b : a;
				break;
			}
			a += la + (a[la] == '\n');
			b += lb + (b[lb] == '\n');
		}
		snprintf(why, n, "its schema is not the one ri creates (at \"%.60s\"): a table re-created,"
		    " a trigger dropped, or an object added", odd ? odd : "");
		for (char *p = why; *p; p++)
			if (*p == '\n')
				*p = ' ';
	}
	free(want);
	free(have);
	return ok;
}

/* ---- backup ---------------------------------------------------------------- */

/* A consistent online copy (SQLite's backup API, one step: one read
 * snapshot of the journal, its WAL included) into a new file, left in
 * rollback mode so the copy is that one file.  DEST is opened once,
 * exclusively, never through a link, and the copy is written through that
 * descriptor (ri_fd_vfs): no later open of the name exists for a symlink
 * swap to redirect onto another file (issue 40 point 5). */
static int
sq_backup(struct ri_store *base, const char *dest)
{
	struct sq *s = (struct sq *)base;
	sqlite3 *d = NULL;
	sqlite3_backup *b;
	struct stat mine = { 0 }, now;
	unsigned char ver[2];
	char name[32];
	int fd, rc;

	if (RI_NC(RI_NC_BACKUP_BY_NAME)) {
		/* negative control: the copy written by DEST's name, opened again */
		if ((fd = open(dest, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) >= 0) {
			close(fd);
			fd = open(dest, O_RDWR | O_CLOEXEC);
		}
	} else {
		fd = open(dest, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return ri_st_fail(&s->core, errno == EEXIST ? RI_ST_EXISTS : RI_ST_UNAVAILABLE, 0, NULL, "%s: %s", dest,
		    errno == EEXIST ? "already exists; refusing to overwrite" : strerror(errno));
	if (fstat(fd, &mine) != 0 || ri_fd_vfs() == NULL) {
		rc = ri_st_fail(&s->core, RI_ST_UNAVAILABLE, 0, NULL, "backup to %s: %s", dest, strerror(errno));
		goto fail;
	}
	snprintf(name, sizeof name, "ri-fd:%d", fd);
	if (sqlite3_open_v2(name, &d, SQLITE_OPEN_READWRITE, ri_fd_vfs()) != SQLITE_OK ||
	    sqlite3_exec(d, "PRAGMA journal_mode=OFF", NULL, NULL, NULL) != SQLITE_OK) {
		rc = ri_st_fail(&s->core, RI_ST_UNAVAILABLE, 0, NULL, "%s: %s", dest, d ? sqlite3_errmsg(d) : "cannot open");
		goto fail;
	}
	if ((b = sqlite3_backup_init(d, "main", s->db, "main")) == NULL) {
		rc = ri_st_fail(&s->core, RI_ST_UNAVAILABLE, 0, NULL, "backup to %s: %s", dest, sqlite3_errmsg(d));
		goto fail;
	}
	rc = sqlite3_backup_step(b, -1);
	sqlite3_backup_finish(b);
	if (rc != SQLITE_DONE) {
		rc = ri_st_fail(&s->core, RI_ST_UNAVAILABLE, 0, NULL, "backup to %s: %s", dest, sqlite3_errstr(rc));
		goto fail;
	}
	if (sqlite3_close(d) != SQLITE_OK) {
		d = NULL;
		rc = ri_st_fail(&s->core, RI_ST_UNAVAILABLE, 0, NULL, "backup to %s: close failed", dest);
		goto fail;
	}
	d = NULL;
	/* the pages came from a WAL journal, header included: the file
	 * format's read and write versions (bytes 18, 19) say 1, rollback
	 * mode, so the copy is the one file, with no -wal to look for */
	ver[0] = ver[1] = 1;
	if (pwrite(fd, ver, sizeof ver, 18) != (ssize_t)sizeof ver || fsync(fd) != 0) {
		rc = ri_st_fail(&s->core, RI_ST_UNAVAILABLE, 0, NULL, "backup to %s: %s", dest, strerror(errno));
		goto fail;
	}
	close(fd);
	return RI_ST_OK;
fail:
	if (d != NULL)
		sqlite3_close(d);
	/* what was made here goes, and only that: the name may no longer be it */
	if (lstat(dest, &now) == 0 && now.st_dev == mine.st_dev && now.st_ino == mine.st_ino)
		unlink(dest);
	close(fd);
	return rc;
}

/* ---- rebuild's writes (store_engine.h) ------------------------------------------ */

static int
open_reset(void *bk)
{
	struct sq *s = bk;

	if (sqlite3_exec(s->db, "DELETE FROM open_intents", NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(s, RI_ST_UNAVAILABLE, "rebuild");
	return RI_ST_OK;
}

static int
nodes_reset(void *bk)
{
	struct sq *s = bk;

	if (sqlite3_exec(s->db, "DELETE FROM nodes", NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(s, RI_ST_UNAVAILABLE, "rebuild");
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
		return db_fail(s, RI_ST_UNAVAILABLE, "rebuild");
	while ((step = sqlite3_step(st)) == SQLITE_ROW)
		if ((rc = fn(arg, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
		    sqlite3_column_int64(st, 2))) != RI_ST_OK) {
			done(s, st);
			return rc;
		}
	done(s, st);
	return step == SQLITE_DONE ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "rebuild");
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
	return schema_check(bk, why, n) ? RI_ST_OK : RI_ST_INTEGRITY;
}

static int
jhead_raw(void *bk, struct ri_jhead *h, unsigned char lh[RI_HASH_LEN], unsigned char mac[RI_HASH_LEN])
{
	struct sq *s = bk;
	int rc;

	if ((rc = jhead_read(s, h, mac)) != RI_ST_OK)
		return rc;
	return ri_eng_hash_at(&s->core, h->last_seq, lh);
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
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
	return RI_ST_OK;
}

/* store_engine.h row_keys */
static int
row_keys(void *bk, enum ri_rows which, char ***keys, size_t *n)
{
	static const char *const sql[] = {
		[RI_ROWS_LEASES] = "SELECT kind, act_key FROM leases",
		[RI_ROWS_ACTORS] = "SELECT actor_ref FROM actors",
		[RI_ROWS_MARKS] = "SELECT name FROM marks",
		[RI_ROWS_ACTORS_LISTED] = "SELECT actor_ref FROM actors ORDER BY created_at, actor_ref",
	};
	struct sq *s = bk;
	int cols = which == RI_ROWS_LEASES ? 2 : 1, rc;
	sqlite3_stmt *st = prep(s, sql[which]);
	size_t cap = 0;

	*keys = NULL;
	*n = 0;
	if (st == NULL)
		return db_fail(s, RI_ST_UNAVAILABLE, "read");
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
	rc = rc == SQLITE_DONE ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "read");
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
			return db_fail(s, RI_ST_UNAVAILABLE, "read");
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

static void
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
jhead_get_cb(void *bk, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN])
{
	return jhead_get(bk, h, last_hash);
}

static int
be_read_begin(void *bk, bool *began)
{
	return read_begin(bk, began) == SQLITE_OK ? RI_ST_OK : db_fail(bk, RI_ST_UNAVAILABLE, "read");
}

static void
be_read_end(void *bk, bool began)
{
	read_end(bk, began);
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
jhead_now(void *bk, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN], ri_ms *now)
{
	int rc = now_or_fail(bk, now);

	return rc != RI_ST_OK ? rc : jhead_get(bk, h, last_hash);
}

static int
write_head(void *bk, struct ri_jhead *jh, unsigned char lh[RI_HASH_LEN], ri_ms *now)
{
	struct sq *s = bk;
	int rc;

	if ((rc = begin_immediate(s)) != RI_ST_OK)
		return rc;
	if ((rc = now_or_fail(s, now)) != RI_ST_OK || (rc = jhead_get(s, jh, lh)) != RI_ST_OK)
		return abandon(s, rc);
	return RI_ST_OK;
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
static const struct ri_backend sq_backend = {
	.record_hash = record_hash,
	.scope_newest = scope_newest,
	.node_get = node_get,
	.node_put = node_put,
	.jhead_get = jhead_get_cb,
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

static const struct ri_store_ops sqlite_ops = {
	.record_action = ri_eng_record_action,
	.read_record = ri_eng_read_record,
	.range_read = ri_eng_range_read,
	.open_intents = ri_eng_open_intents,
	.purge = ri_eng_purge,
	.actor_add = ri_eng_actor_add,
	.actor_revoke = ri_eng_actor_revoke,
	.actor_list = ri_eng_actor_list,
	.authenticate = ri_eng_authenticate,
	.open_kinds = sq_open_kinds,
	.take = ri_eng_take,
	.remaining = ri_eng_remaining,
	.release = ri_eng_release,
	.mark_get = ri_eng_mark_get,
	.mark_set = ri_eng_mark_set,
	.traverse = ri_eng_traverse,
	.peek = ri_eng_peek,
	.inv_span = ri_eng_inv_span,
	.seal = ri_eng_seal,
	.substrate = ri_eng_substrate,
	.append_substrate = ri_eng_append_many,
	.backup = sq_backup,
	.rebuild = ri_eng_rebuild,
	.audit_state = ri_eng_audit_state,
	.read_session = sq_read_session,
	.instance_id = sq_instance_id,
	.head = ri_eng_head,
	.sealed = ri_eng_sealed,
	.error = sq_error,
	.close = sq_close,
};

/* ---- open / create ---------------------------------------------------------------- */

/*
 * The wait for SQLite's write lock.  SQLite's own handler sleeps 1, 2, 5,
 * 10, 15, 20, 25, 25, 25, 50, 50, 100 ms between tries: under 8 writers
 * the lock sits free through most of a waiter's nap, and a waiter spends a
 * 200 ms budget while the lock was free for half of it (issue 15: 6-13
 * "database is locked" refusals in 4,000 commands under the demo's
 * bounds).  SQLite has no event for its lock's release, so this one tries
 * again after 1 ms, growing by 1 ms every 8 tries to at most 5 ms, to the
 * same budget: a waiter takes the lock within a few milliseconds of its
 * release, a long wait does not spin on an overloaded machine (at most
 * 200 tries a second), and the wait still ends at its deadline.
 */
static int
busy_wait(void *arg, int count)
{
	struct sq *s = arg;
	int64_t now = ri_mono_ms();

	if (count == 0 && !s->busy_preset)
		s->busy_since = now;
	if (now - s->busy_since >= s->busy_ms)
		return 0;
	ri_sleep_ms(count / 8 < 4 ? 1 + count / 8 : 5);
	return 1;
}

static int
setup_connection(struct sq *s, ri_err *err)
{
	/* A write waits for the lock no longer than its own budget: under a
	 * declared journal fence that is journal_write_bound less the allowance
	 * (the per-write terminus), so a long lock wait is a step-2 failure a
	 * writer may retry under its section, never a write that lands fenced */
	ri_ms busy = s->core.cfg->journal_write_bound;

	if (s->core.cfg->journal_fence)
		busy -= s->core.cfg->clock_offset_allowance;
	if (busy < 10)
		busy = 10;
	s->busy_ms = busy;
	sqlite3_busy_handler(s->db, busy_wait, s);
	sqlite3_extended_result_codes(s->db, 1);
	/* checkpoints ride the autocheckpoint, not every short process's exit */
	sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
	sqlite3_wal_hook(s->db, wal_hook, s);
	if (sqlite3_create_function(s->db, "ri_now", 0, SQLITE_UTF8, s, sql_now, NULL, NULL) != SQLITE_OK)
		return ri_fail(err, RI_INTERNAL, "sqlite: cannot register ri_now");
	/* RI_UNSAFE_NOSYNC=1 with "fault_injection": true -- a test seam that
	 * only the benchmarks' journal fill uses, to build 10^6 records in
	 * minutes; ri-startcheck flags fault injection as not for production */
	const char *nosync = getenv("RI_UNSAFE_NOSYNC");
	s->nosync = s->core.cfg->fault_injection && nosync != NULL && strcmp(nosync, "1") == 0;
	if (sqlite3_exec(s->db, s->nosync ? "PRAGMA synchronous=OFF" : "PRAGMA synchronous=FULL",
	    NULL, NULL, NULL) != SQLITE_OK)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: %s", s->core.cfg->journal, sqlite3_errmsg(s->db));
	return RI_OK;
}

static int
load_meta(struct sq *s, ri_err *err)
{
	sqlite3_stmt *st = prep(s, "SELECT k, v FROM meta");
	bool fmt = false, inst = false;
	int other = 0;
	int rc;

	if (st == NULL)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: not an ri journal, or unreadable: %s",
		    s->core.cfg->journal, sqlite3_errmsg(s->db));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!col_text_ok(st, 0, false) || !col_text_ok(st, 1, false))
			continue;
		const char *k = (const char *)sqlite3_column_text(st, 0);
		const char *v = (const char *)sqlite3_column_text(st, 1);
		if (strcmp(k, "format") == 0) {
			fmt = atoi(v) == RI_FORMAT;
			other = atoi(v);
		}
		else if (strcmp(k, "instance_id") == 0)
			inst = sodium_hex2bin(s->core.instance_id, sizeof s->core.instance_id, v, strlen(v), NULL, NULL, NULL) == 0;
	}
	done(s, st);
	if (rc != SQLITE_DONE)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: %s", s->core.cfg->journal, sqlite3_errmsg(s->db));
	if (!fmt && other > 0 && other < RI_FORMAT)
		return ri_fail(err, RI_CONFIG, "journal %s is format %d; this ri (%s) reads format %d only:"
		    " keep the old release to audit it, and start a new instance with ri-init",
		    s->core.cfg->journal, other, ri_version(), RI_FORMAT);
	if (!fmt || !inst)
		return ri_fail(err, RI_INTEGRITY, "journal %s: missing or unknown format/instance id", s->core.cfg->journal);
	ri_genesis(s->core.instance_id, s->core.genesis);
	return RI_OK;
}

void
ri_sqlite_process_init(bool threaded)
{
	static bool done_once;

	if (done_once)
		return;
	done_once = true;
	/* refused (SQLITE_MISUSE) once SQLite is initialised: it then keeps
	 * its defaults (serialized), which are as correct, only slower */
	if (sqlite3_config(threaded ? SQLITE_CONFIG_MULTITHREAD : SQLITE_CONFIG_SINGLETHREAD) == SQLITE_OK &&
	    !threaded)
		(void)ri_sqlite_mem_install();          /* it runs under no mutex */
	(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int
ri_sqlite_open(const struct ri_config *c, const unsigned char *key, size_t keylen, unsigned flags,
    struct ri_store **out, ri_err *err)
{
	struct sq *s;
	int oflags = (flags & RI_READONLY) ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
	int rc;

	*out = NULL;
	if (key == NULL && !(flags & RI_NO_KEY))
		return ri_fail(err, RI_INTERNAL, "no integrity key");
	char why[512];
	/* SQLite opens the journal and its sidecars by path and would block
	 * on a FIFO there: each is a regular file first (issue 40 point 3) */
	if (ri_db_files_regular(c->journal, why, sizeof why) != 0)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s%s", why, errno == ENOENT ? " (run ri-init?)" : "");
	s = ri_xcalloc(1, sizeof *s);
	s->base.ops = &sqlite_ops;
	ri_eng_attach(&s->core, &sq_backend, s, &s->nodes);
	s->core.cfg = c;
	s->readonly = (flags & RI_READONLY) != 0;
	s->queue_fd = -1;
	s->watch_fd = -1;
	if (key != NULL) {
		s->core.key = (unsigned char *)key;
		s->core.keylen = keylen;
		ri_eng_derive_keys(&s->core);
	}
	oflags |= SQLITE_OPEN_NOMUTEX;
	if (sqlite3_open_v2(c->journal, &s->db, oflags, ri_wal_vfs()) != SQLITE_OK) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: %s", c->journal,
		    s->db ? sqlite3_errmsg(s->db) : "cannot open");
		sq_close(&s->base);
		return rc;
	}
	if ((rc = setup_connection(s, err)) != RI_OK || (rc = load_meta(s, err)) != RI_OK) {
		sq_close(&s->base);
		return rc;
	}
	if (!(flags & RI_INSPECT)) {
		char why[512];
		/* typed storage, defense in depth: the schema is ri's own */
		if (!schema_check(s, why, sizeof why)) {
			rc = ri_fail(err, RI_INTEGRITY, "journal integrity: journal %s: %s", c->journal, why);
			sq_close(&s->base);
			return rc;
		}
		/* the witness's highest line: every read compares the journal
		 * with it (jhead_get) -- a journal behind it was rolled back */
		if ((rc = ri_st_witness_attach(&s->core, flags, err)) != RI_OK) {
			sq_close(&s->base);
			return rc;
		}
	}
	/* fail closed at once on a journal this key did not write (a
	 * substituted file), or one behind its witness, before anything --
	 * even a lease -- is written */
	if (key != NULL && !(flags & RI_READONLY)) {
		/* (a reader fails closed on its own reads; ri-audit must open a
		 * tampered journal to say what is wrong with it) */
		int64_t seq;
		unsigned char h[RI_HASH_LEN];
		int st = ri_eng_head(&s->base, &seq, h);
		if (st == RI_ST_INTEGRITY) {
			rc = ri_fail(err, RI_INTEGRITY, "%s", s->core.err.msg);
			sq_close(&s->base);
			return rc;
		}
	}
	/* the writers' queue (begin_immediate); not in a threaded command,
	 * whose other thread could take the deadline's SIGALRM */
	if (!RI_NC(RI_NC_NO_WRITER_QUEUE) && !s->readonly && !(flags & RI_THREADED))
		s->queue_fd = ri_open_regular(c->journal, O_RDONLY | O_NOFOLLOW, 0, NULL, 0);
	*out = &s->base;
	return RI_OK;
}

int
ri_sqlite_create(const struct ri_config *c, const unsigned char *key, size_t keylen,
    char instance_hex[2 * RI_INSTANCE_LEN + 1], ri_err *err)
{
	struct sq s = { .queue_fd = -1, .watch_fd = -1 };
	char sql[256];
	int fd, rc;

	/* O_EXCL: ri-init never overwrites a journal */
	fd = open(c->journal, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return ri_fail(err, errno == EEXIST ? RI_USAGE : RI_JOURNAL_UNAVAILABLE,
		    "journal %s: %s", c->journal, errno == EEXIST ? "already exists; refusing to overwrite" :
		    strerror(errno));
	close(fd);
	ri_eng_attach(&s.core, &sq_backend, &s, &s.nodes);
	s.core.cfg = c;
	s.core.key = (unsigned char *)key;
	s.core.keylen = keylen;
	if (sqlite3_open_v2(c->journal, &s.db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: %s", c->journal, sqlite3_errmsg(s.db));
		sqlite3_close(s.db);
		unlink(c->journal);
		return rc;
	}
	if ((rc = setup_connection(&s, err)) != RI_OK)
		goto fail;
	randombytes_buf(s.core.instance_id, sizeof s.core.instance_id);
	ri_hex(s.core.instance_id, sizeof s.core.instance_id, instance_hex);
	ri_genesis(s.core.instance_id, s.core.genesis);
	snprintf(sql, sizeof sql,
	    "INSERT INTO meta VALUES ('format', '%d'), ('instance_id', '%s');", RI_FORMAT, instance_hex);
	if (sqlite3_exec(s.db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s.db, schema_ddl, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s.db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: %s", c->journal, sqlite3_errmsg(s.db));
		goto fail;
	}
	/* the journal head of an empty journal: seq 0 at the genesis hash, an
	 * empty tree, no open intent, no seal, no grant -- under its MAC */
	{
		struct ri_jhead jh = { 0 };
		unsigned char mac[RI_HASH_LEN];
		sqlite3_stmt *st;
		ri_jhead_mac(key, keylen, s.core.instance_id, &jh, s.core.genesis, mac);
		if (sqlite3_prepare_v2(s.db, "INSERT INTO heads VALUES (1, 0, ?, 0, ?, 0, 0, ?)", -1, &st, NULL) != SQLITE_OK) {
			rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: %s", c->journal, sqlite3_errmsg(s.db));
			goto fail;
		}
		sqlite3_bind_blob(st, 1, jh.root, RI_HASH_LEN, SQLITE_TRANSIENT);
		sqlite3_bind_blob(st, 2, jh.open_acc, RI_HASH_LEN, SQLITE_TRANSIENT);
		sqlite3_bind_blob(st, 3, mac, RI_HASH_LEN, SQLITE_TRANSIENT);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE || sqlite3_exec(s.db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
			rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: %s", c->journal, sqlite3_errmsg(s.db));
			goto fail;
		}
	}
	sqlite3_close(s.db);
	return RI_OK;
fail:
	sqlite3_close(s.db);
	unlink(c->journal);
	return rc;
}
