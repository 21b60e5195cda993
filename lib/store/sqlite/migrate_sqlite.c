/*
 * migrate_sqlite.c -- ri-init --migrate, the SQLite half (docs/SHARDS.md,
 * "Migration"): a format-3 journal copied byte for byte into a new
 * format-4 file.  History is not rewritten: every record keeps its hash
 * and MAC, and the records at or below the boundary (the old last seq)
 * are verified by format 3's encoding for ever after.  What this file
 * judges is the one thing the copy cannot carry: the old head, under
 * format 3's MAC -- a journal truncated behind its head is not migrated
 * into looking whole.  Everything else is verified on the copy by the
 * store's own traversal (protocol/instance.c), since its bytes are the
 * old ones.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sodium.h>
#include <sqlite3.h>

#include "store/heads.h"
#include "util/integrity.h"
#include "util/nc.h"
#include "store/sqlite/store_sqlite.h"
#include "store/sqlite/store_sqlite_int.h"

extern const char ri_sq_schema_ddl[];

void
ri_sqlite_unlink(const char *path)
{
	char side[4300];

	unlink(path);
	snprintf(side, sizeof side, "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof side, "%s-shm", path);
	unlink(side);
}

static int
db_fail(sqlite3 *db, const char *what, const char *path, ri_err *err)
{
	return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: %s: %s", path, what, db ? sqlite3_errmsg(db) : "");
}

static bool
blob32(sqlite3_stmt *st, int i, unsigned char out[RI_HASH_LEN])
{
	if (sqlite3_column_type(st, i) != SQLITE_BLOB || sqlite3_column_bytes(st, i) != RI_HASH_LEN)
		return false;
	memcpy(out, sqlite3_column_blob(st, i), RI_HASH_LEN);
	return true;
}

/* The old journal's meta: format 3 and its instance id. */
static int
old_meta(sqlite3 *db, const char *path, unsigned char instance[RI_INSTANCE_LEN], ri_err *err)
{
	sqlite3_stmt *st;
	int fmt = 0, rc;
	bool inst = false;

	if (sqlite3_prepare_v2(db, "SELECT k, v FROM f3.meta", -1, &st, NULL) != SQLITE_OK)
		return db_fail(db, "not an ri journal, or unreadable", path, err);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(st, 0), *v = (const char *)sqlite3_column_text(st, 1);
		if (k == NULL || v == NULL)
			continue;
		if (strcmp(k, "format") == 0)
			fmt = atoi(v);
		else if (strcmp(k, "instance_id") == 0)
			inst = sodium_hex2bin(instance, RI_INSTANCE_LEN, v, strlen(v), NULL, NULL, NULL) == 0;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_fail(db, "meta", path, err);
	if (fmt == RI_FORMAT)
		return ri_fail(err, RI_USAGE, "journal %s is format %d already: nothing to migrate", path, fmt);
	if (fmt != 3)
		return ri_fail(err, RI_CONFIG, "journal %s is format %d; ri-init --migrate converts format 3 only", path,
		    fmt);
	if (!inst)
		return ri_fail(err, RI_INTEGRITY, "journal integrity: journal %s: no instance id", path);
	return RI_OK;
}

/* The old head, verified under format 3's MAC against the old rows: its
 * last seq is the rows' last, and the hash it names is that row's. */
static int
old_head(sqlite3 *db, const char *path, const unsigned char *key, size_t keylen,
    const unsigned char instance[RI_INSTANCE_LEN], struct ri_jhead *h, unsigned char lh[RI_HASH_LEN], ri_err *err)
{
	sqlite3_stmt *st;
	unsigned char mac[RI_HASH_LEN], want[RI_HASH_LEN];
	int64_t rows = -1;
	bool ok;

	memset(h, 0, sizeof *h);
	if (sqlite3_prepare_v2(db, "SELECT h.last_seq, h.root, h.open_count, h.open_acc, h.sealed_seq, h.grants, h.mac,"
	    " (SELECT max(seq) FROM f3.records), (SELECT hash FROM f3.records WHERE seq = h.last_seq)"
	    " FROM f3.heads h WHERE h.id = 1", -1, &st, NULL) != SQLITE_OK)
		return db_fail(db, "head", path, err);
	ok = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER &&
	    blob32(st, 1, h->root) && blob32(st, 3, h->open_acc) && blob32(st, 6, mac);
	if (ok) {
		h->last_seq = sqlite3_column_int64(st, 0);
		h->open_count = sqlite3_column_int64(st, 2);
		h->sealed_seq = sqlite3_column_int64(st, 4);
		h->grants = sqlite3_column_int64(st, 5);
		rows = sqlite3_column_type(st, 7) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 7);
		if (h->last_seq == 0)
			ri_genesis_v3(instance, lh);
		else if (!blob32(st, 8, lh))
			rows = -1;      /* no row at the head's seq: judged below */
	}
	sqlite3_finalize(st);
	if (!ok)
		return ri_fail(err, RI_INTEGRITY, "journal integrity: journal %s: its head is missing or malformed", path);
	if (rows != h->last_seq)
		return ri_fail(err, RI_INTEGRITY, "journal integrity: journal %s: its head names seq %lld, its rows %s"
		    " (truncated or extended)", path, (long long)h->last_seq, rows < 0 ? "lack it" : "end elsewhere");
	ri_jhead_mac_v3(key, keylen, instance, h, lh, want);
	/* negative control: the old head taken as it is */
	if (!ri_eq32(want, mac) && !RI_NC(RI_NC_MIGRATE_HEAD_UNCHECKED))
		return ri_fail(err, RI_INTEGRITY, "journal integrity: journal %s: its head fails its MAC (format 3)", path);
	return RI_OK;
}

/* The old journal's WAL holds nothing (the copy checkpointed it): its
 * sidecars are removed, so none stands beside the new file.  errno 0 and
 * false when a writer came back. */
bool
ri_sqlite_sidecars_drop(const char *journal)
{
	char wal[4300], shm[4300];
	struct stat sb;

	snprintf(wal, sizeof wal, "%s-wal", journal);
	snprintf(shm, sizeof shm, "%s-shm", journal);
	errno = 0;
	if (stat(wal, &sb) == 0 && sb.st_size != 0)
		return false;
	unlink(wal);
	unlink(shm);
	errno = 0;
	return true;
}

int
ri_sqlite_fold_wal(const char *path, ri_err *err)
{
	sqlite3 *db = NULL;
	char wal[4300];
	struct stat sb;
	int n = -1, folded = -1;
	sqlite3_stmt *st;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		int rc = db_fail(db, "cannot open", path, err);
		sqlite3_close(db);
		return rc;
	}
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_prepare_v2(db, "PRAGMA wal_checkpoint(TRUNCATE)", -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 0) {
			n = sqlite3_column_int(st, 1);
			folded = sqlite3_column_int(st, 2);
		}
		sqlite3_finalize(st);
	}
	if (sqlite3_close(db) != SQLITE_OK || n != folded)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: its WAL could not be folded in (%d of %d frames)",
		    path, folded, n);
	snprintf(wal, sizeof wal, "%s-wal", path);
	if (stat(wal, &sb) == 0 && sb.st_size != 0)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: its WAL still holds %lld bytes", path,
		    (long long)sb.st_size);
	return RI_OK;
}

int
ri_sqlite_migrate_copy(const struct ri_config *c, const unsigned char *key, size_t keylen, const char *dest,
    int64_t *boundary, ri_err *err)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	struct ri_jhead h;
	unsigned char instance[RI_INSTANCE_LEN], lh[RI_HASH_LEN], mac[RI_HASH_LEN];
	char sql[1024], hex[2 * RI_INSTANCE_LEN + 1], why[512];
	int fd, rc;

	/* the old file is attached by a URI, in which these would mean
	 * something: refused before anything is made */
	if (strpbrk(c->journal, "'?#") != NULL)
		return ri_fail(err, RI_CONFIG, "journal %s: a path with ', ? or # cannot be migrated; move it", c->journal);
	if (ri_db_files_regular(c->journal, why, sizeof why) != 0)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s", why);
	/* dest is made here, once: never over another file */
	if ((fd = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
		return ri_fail(err, errno == EEXIST ? RI_USAGE : RI_CONFIG, "%s: %s", dest,
		    errno == EEXIST ? "already exists (a migration left it? remove it and run again)" : strerror(errno));
	close(fd);
	if (sqlite3_open_v2(dest, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot open", dest, err);
		goto fail;
	}
	sqlite3_busy_timeout(db, 5000);
	/* the old file: its writers held off (a write lock, through the copy)
	 * and its WAL folded in, so what is copied is all it holds */
	snprintf(sql, sizeof sql, "ATTACH DATABASE 'file:%s?mode=rw' AS f3", c->journal);
	if (sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 1, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "attach", c->journal, err);
		goto fail;
	}
	if (sqlite3_exec(db, "PRAGMA f3.wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "lock", c->journal, err);
		goto fail;
	}
	if ((rc = old_meta(db, c->journal, instance, err)) != RI_OK ||
	    (rc = old_head(db, c->journal, key, keylen, instance, &h, lh, err)) != RI_OK)
		goto fail;
	/* format 4's schema; the rows byte for byte (STRICT checks each
	 * value's type again on the way in) */
	ri_hex(instance, sizeof instance, hex);
	snprintf(sql, sizeof sql, "INSERT INTO main.meta VALUES ('format', '%d'), ('instance_id', '%s'),"
	    " ('shards', '1'), ('boundary', '%lld');", RI_FORMAT, hex, (long long)h.last_seq);
	if (sqlite3_exec(db, ri_sq_schema_ddl, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, "INSERT INTO main.records(" REC_COLS ") SELECT " RI_F3_COLS ", 0 FROM f3.records"
	    " ORDER BY seq;"
	    "INSERT INTO main.nodes SELECT id, body FROM f3.nodes;"
	    "INSERT INTO main.open_intents SELECT * FROM f3.open_intents;"
	    "INSERT INTO main.actors SELECT * FROM f3.actors;"
	    "INSERT INTO main.leases SELECT * FROM f3.leases;"
	    "INSERT INTO main.marks SELECT * FROM f3.marks;", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "copy", dest, err);
		goto fail;
	}
	/* the head: format 3's fields, shard 0's, under format 4's MAC --
	 * the boundary bound in it */
	*boundary = h.last_seq;
	h.shard = 0;
	ri_jhead_mac(key, keylen, instance, 1, h.last_seq, &h, lh, mac);
	if (sqlite3_prepare_v2(db, "INSERT INTO main.heads VALUES (0, ?, ?, ?, ?, ?, ?, ?)", -1, &st, NULL) != SQLITE_OK) {
		rc = db_fail(db, "head", dest, err);
		goto fail;
	}
	sqlite3_bind_int64(st, 1, h.last_seq);
	sqlite3_bind_blob(st, 2, h.root, RI_HASH_LEN, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, h.open_count);
	sqlite3_bind_blob(st, 4, h.open_acc, RI_HASH_LEN, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 5, h.sealed_seq);
	sqlite3_bind_int64(st, 6, h.grants);
	sqlite3_bind_blob(st, 7, mac, RI_HASH_LEN, SQLITE_TRANSIENT);
	if (sqlite3_step(st) != SQLITE_DONE) {
		rc = db_fail(db, "head", dest, err);
		goto fail;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, "DETACH DATABASE f3", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "commit", dest, err);
		goto fail;
	}
	if (sqlite3_close(db) != SQLITE_OK) {
		db = NULL;
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: close", dest);
		goto fail;
	}
	return RI_OK;
fail:
	if (st != NULL)
		sqlite3_finalize(st);
	if (db != NULL) {
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_close(db);
	}
	ri_sqlite_unlink(dest);
	return rc;
}

/* ---- the kept file refuses writes (issue 43 review) ---------------------- */

/* A process that opened the journal before the rename -- a format-3
 * release's ri-run whose command still runs -- keeps its connection to
 * the inode that becomes <journal>.format3; its next append would land
 * there, where the new journal never reads, and the act would be lost to
 * it.  So every table of the old file aborts a write, and that append
 * fails before anything lands (step-2: the sweep of the new journal
 * closes the act). */
static const char *const f3_tables[] = { "meta", "records", "heads", "nodes", "open_intents", "actors", "leases",
	"marks" };
static const char *const f3_ops[] = { "INSERT", "UPDATE", "DELETE" };

#define MIGRATED_MSG "journal migrated to format 4: this is the kept format-3 file, which takes no writes;" \
	" the journal is the new file at its path"

/* The triggers made (make) or dropped, in sql; false when it does not fit. */
static bool
fence_sql(char *sql, size_t n, bool make)
{
	size_t o = 0;

	for (size_t t = 0; t < sizeof f3_tables / sizeof f3_tables[0]; t++)
		for (size_t i = 0; i < sizeof f3_ops / sizeof f3_ops[0]; i++) {
			int w = make ? snprintf(sql + o, n - o, "CREATE TRIGGER IF NOT EXISTS ri_migrated_%s_%zu BEFORE %s"
			    " ON %s BEGIN SELECT RAISE(ABORT, '" MIGRATED_MSG "'); END;", f3_tables[t], i, f3_ops[i],
			    f3_tables[t]) : snprintf(sql + o, n - o, "DROP TRIGGER IF EXISTS ri_migrated_%s_%zu;",
			    f3_tables[t], i);
			if (w < 0 || (size_t)w >= n - o)
				return false;
			o += (size_t)w;
		}
	return true;
}

int
ri_sqlite_migrate_fence(const char *journal, int64_t boundary, ri_err *err)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st;
	char sql[8192], wal[4300];
	struct stat sb;
	int64_t rows = -1, last = -1;
	int rc;

	if (!fence_sql(sql, sizeof sql, true))
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: the migration's triggers do not fit", journal);
	if (sqlite3_open_v2(journal, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot open", journal, err);
		sqlite3_close(db);
		return rc;
	}
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 1, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "lock", journal, err);
		sqlite3_close(db);
		return rc;
	}
	/* under its write lock: nothing landed since the copy -- its rows end
	 * at the boundary, and its WAL, emptied by the copy, holds no commit */
	if (sqlite3_prepare_v2(db, "SELECT (SELECT max(seq) FROM records), (SELECT last_seq FROM heads WHERE id = 1)",
	    -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW) {
			rows = sqlite3_column_type(st, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 0);
			last = sqlite3_column_int64(st, 1);
		}
		sqlite3_finalize(st);
	}
	snprintf(wal, sizeof wal, "%s-wal", journal);
	if (rows != boundary || last != boundary || (stat(wal, &sb) == 0 && sb.st_size != 0)) {
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_close(db);
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: written since it was copied (is an ri process"
		    " still running on it?); the old journal is unchanged", journal);
	}
	/* negative control: the kept file left writable */
	if ((!RI_NC(RI_NC_MIGRATE_OLD_WRITABLE) && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) ||
	    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "refusing writes", journal, err);
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_close(db);
		return rc;
	}
	sqlite3_close(db);
	/* in the file itself: the old WAL's sidecars do not go with it */
	if ((rc = ri_sqlite_fold_wal(journal, err)) != RI_OK)
		ri_sqlite_migrate_unfence(journal);
	return rc;
}

void
ri_sqlite_migrate_unfence(const char *journal)
{
	sqlite3 *db = NULL;
	char sql[4096];

	if (!fence_sql(sql, sizeof sql, false))
		return;
	if (sqlite3_open_v2(journal, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
		sqlite3_busy_timeout(db, 5000);
		if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
		    sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK ||
		    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
			sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	}
	sqlite3_close(db);
}
