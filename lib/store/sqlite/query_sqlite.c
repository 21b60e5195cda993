/*
 * query_sqlite.c -- the SQLite backend's statements and transactions:
 * errors, the statement cache and its helpers, read snapshots, the WAL kept
 * short, the writers' queue and BEGIN IMMEDIATE, the lease's wait on a
 * commit (the design: store_sqlite.c).
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

/* ---- errors ---------------------------------------------------------- */




int
sq_db_fail(struct sq *s, int code, const char *what)
{
	return ri_st_fail(&s->core, code, 0, NULL, "journal %s: %s: %s", s->core.cfg->journal, what,
	    sqlite3_errmsg(s->db));
}


const struct ri_store_error *
sq_error(struct ri_store *st)
{
	return &((struct sq *)st)->core.err;
}

/* ---- small SQL helpers ------------------------------------------------ */

sqlite3_stmt *
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
void
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
int
sq_exec1(struct sq *s, const char *sql)
{
	sqlite3_stmt *st = prep(s, sql);
	int rc;

	if (st == NULL)
		return (rc = sqlite3_extended_errcode(s->db)) != SQLITE_OK ? rc : SQLITE_ERROR;
	rc = sqlite3_step(st);
	done(s, st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

void
cache_clear(struct sq *s)
{
	for (size_t i = 0; i < s->n_cache; i++) {
		sqlite3_finalize(s->cache[i].st);
		free(s->cache[i].sql);
	}
	s->n_cache = 0;
}

void
bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v == NULL)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
}

void
bind_ms(sqlite3_stmt *st, int i, ri_ms v)
{
	if (v == RI_NONE)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_int64(st, i, v);
}

ri_ms
col_ms(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? RI_NONE : sqlite3_column_int64(st, i);
}

char *
col_dup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t == NULL ? NULL : ri_strdup((const char *)t);
}

/* Typed storage: is column i of exactly this type (or NULL, where the
 * column may be NULL)?  A value of another type is an integrity failure
 * wherever it is read -- never coerced. */
bool
col_is(sqlite3_stmt *st, int i, int type, bool null_ok)
{
	int t = sqlite3_column_type(st, i);

	return t == type || (null_ok && t == SQLITE_NULL);
}

/* A 32-byte BLOB column, copied out. */
bool
col_h32(sqlite3_stmt *st, int i, unsigned char out[RI_HASH_LEN])
{
	if (!col_is(st, i, SQLITE_BLOB, false) || sqlite3_column_bytes(st, i) != RI_HASH_LEN)
		return false;
	memcpy(out, sqlite3_column_blob(st, i), RI_HASH_LEN);
	return true;
}

/* A TEXT column with no NUL inside it (what is hashed is then what a
 * filter matches). */
bool
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
int
sq_read_begin(struct sq *s, bool *began)
{
	*began = false;
	if (!sqlite3_get_autocommit(s->db))
		return SQLITE_OK;
	int rc = sq_exec1(s, "BEGIN");
	if (rc == SQLITE_OK)
		*began = true;
	return rc;
}

void
sq_read_end(struct sq *s, bool began)
{
	if (began)
		(void)sq_exec1(s, "COMMIT");
}

void
sq_rollback(struct sq *s)
{
	if (!sqlite3_get_autocommit(s->db))
		(void)sq_exec1(s, "ROLLBACK");
	queue_leave(s);
	ri_st_witness_discard(&s->core);
}

/* Roll back a write that failed, keeping the error that made it fail (the
 * rollback must not overwrite what the caller reports). */
int
abandon(struct sq *s, int rc)
{
	struct ri_store_error keep = s->core.err;

	sq_rollback(s);
	s->core.err = keep;
	return rc;
}

void
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

int
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

void
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

int
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
	rc = sq_exec1(s, "BEGIN IMMEDIATE");
	s->busy_preset = false;
	if (rc == SQLITE_OK) {
		wal_dir_sync(s);
		return RI_ST_OK;
	}
	queue_leave(s);
	if ((rc & 0xff) == SQLITE_READONLY)
		return sq_db_fail(s, RI_ST_READONLY, "begin");
	if ((rc & 0xff) == SQLITE_BUSY)
		return contended(s);
	return sq_db_fail(s, RI_ST_STEP2, "begin");
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
bool
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
bool
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

