/* store_sqlite_int.h -- what the SQLite backend's files share: struct sq and
 * the functions one file (store_sqlite.c, query_sqlite.c, open_sqlite.c)
 * lends the others.  Private to lib/store/sqlite/. */
#ifndef RI_STORE_SQLITE_INT_H
#define RI_STORE_SQLITE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "store/heads.h"
#include "store/store_engine.h"
#include "store/sqlite/store_sqlite.h"

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

#define REC_COLS "seq, event_id, action_ref, kind, act_key, invocation_id, actor_ref," \
	" attestation_id, recorded_at, retention_until, role, act_prev, inv_prev," \
	" payload, salt, digest, hash, mac, shard"

/* ---- query_sqlite.c: statements, transactions, the writers' lock ------ */

/* A failed statement charged as code, with SQLite's message. */
int sq_db_fail(struct sq *s, int code, const char *what);
/* store.h error: the last failure's code and text. */
const struct ri_store_error *sq_error(struct ri_store *st);
/* A prepared statement from the connection's cache (NULL: the failure recorded). */
sqlite3_stmt *prep(struct sq *s, const char *sql);
/* Done with a statement: a cached one is reset for its next use. */
void done(struct sq *s, sqlite3_stmt *st);
/* A statement without parameters or rows (BEGIN, COMMIT), from the cache. */
int sq_exec1(struct sq *s, const char *sql);
/* Every cached statement finalized. */
void cache_clear(struct sq *s);
/* Bind a text (NULL: SQL NULL) or a millisecond value. */
void bind_text(sqlite3_stmt *st, int i, const char *v);
void bind_ms(sqlite3_stmt *st, int i, ri_ms v);
/* A column's milliseconds, or a copy of its text. */
ri_ms col_ms(sqlite3_stmt *st, int i);
char *col_dup(sqlite3_stmt *st, int i);
/* Typed storage: whether column i holds type (or NULL, when null_ok). */
bool col_is(sqlite3_stmt *st, int i, int type, bool null_ok);
/* A 32-byte BLOB column, copied out. */
bool col_h32(sqlite3_stmt *st, int i, unsigned char out[RI_HASH_LEN]);
/* A TEXT column with no NUL inside it. */
bool col_text_ok(sqlite3_stmt *st, int i, bool null_ok);
/* A read's snapshot, unless a write transaction is open (*began: one was). */
int sq_read_begin(struct sq *s, bool *began);
/* The end of sq_read_begin's snapshot, when it began one. */
void sq_read_end(struct sq *s, bool began);
/* ROLLBACK (if a transaction is open), the writers' queue left, the witness's pending advance dropped. */
void sq_rollback(struct sq *s);
/* Roll back a write that failed, keeping the error that made it fail. */
int abandon(struct sq *s, int rc);
/* SQL function ri_now(): the store's clock (ri_now), for the schema's SQL. */
void sql_now(sqlite3_context *ctx, int argc, sqlite3_value **argv);
/* sqlite3_wal_hook: the WAL's frames at our commit noted; a very long WAL checkpointed. */
int wal_hook(void *arg, sqlite3 *db, const char *name, int frames);
/* The writers' queue left (its flock released), when we hold it. */
void queue_leave(struct sq *s);
/* A write transaction: the writers' queue, then BEGIN IMMEDIATE within the budget. */
int begin_immediate(struct sq *s);
/* store_engine.h wait_change: the lease wait, woken by a commit to the WAL. */
bool change_wait(void *bk, int64_t ms);
/* store_engine.h wake_recheck: after a wake, wait for the waking writer to publish its commit. */
bool wake_recheck(void *bk);

/* ---- store_sqlite.c: the primitives and the ops ------------------------- */

/* The primitives of store_engine.h, and the ops of store.h, for SQLite. */
extern const struct ri_backend sq_backend;
extern const struct ri_store_ops sqlite_ops;
/* store.h close: statements finalized, the connection closed, everything freed. */
void sq_close(struct ri_store *base);

/* ---- open_sqlite.c: the schema, backup, open, create -------------------- */

/* The schema against the one ri creates (why says what differs). */
bool sq_schema_check(struct sq *s, char *why, size_t n);
/* store.h backup: a consistent online copy into a new file. */
int sq_backup(struct ri_store *base, const char *dest);

#endif
