/*
 * open_sqlite.c -- a SQLite journal opened and created: the schema ri
 * creates and its check, the online backup, the connection's setup and
 * busy wait, open, create (the design: store_sqlite.c).
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

/* Every table STRICT: a value of another type is refused at the write and,
 * should one be planted anyway, refused at every read (col_is). */
const char ri_sq_schema_ddl[] =
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
	"  mac BLOB NOT NULL,"
	"  shard INTEGER NOT NULL) STRICT;"
	"CREATE INDEX records_invocation ON records(invocation_id, seq);"
	"CREATE INDEX records_act ON records(kind, act_key, seq);"
	"CREATE INDEX records_retention ON records(retention_until) WHERE payload IS NOT NULL;"
	/* the journal head: a row a shard, one MAC each (heads.h, docs/SHARDS.md) */
	"CREATE TABLE heads(shard INTEGER PRIMARY KEY CHECK (shard >= 0 AND shard < 256), last_seq INTEGER NOT NULL,"
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
	"    AND NEW.digest IS OLD.digest AND NEW.hash IS OLD.hash AND NEW.mac IS OLD.mac"
	"    AND NEW.shard IS OLD.shard)"
	"BEGIN"
	"  SELECT RAISE(ABORT, 'ri: the journal is append-only; only an expired payload may be purged');"
	"END;";

/* More than one shard: a shard's newest record and the one before a row
 * of it are index lookups (shard_newest, shard_prev), never a scan back
 * over other shards' rows.  One shard needs none: the seq is the chain. */
const char ri_sq_shard_ddl[] = "CREATE INDEX records_shard ON records(shard, seq);";

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

/* The schema as ri creates it, in the same form, computed from ri_sq_schema_ddl
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
schema_expected(int shards)
{
	char *text, *stmts[32] = { NULL };
	size_t n = 0, total = 0;
	char ddl[sizeof ri_sq_schema_ddl + sizeof ri_sq_shard_ddl];

	snprintf(ddl, sizeof ddl, "%s%s", ri_sq_schema_ddl, shards > 1 ? ri_sq_shard_ddl : "");
	for (const char *p = ddl, *end; *p != '\0'; p = end + 1) {
		for (end = strchr(p, ';'); end != NULL && end[1] != '\0' && strncmp(end + 1, "CREATE ", 7) != 0;)
			end = strchr(end + 1, ';');
		if (end == NULL || n == sizeof stmts / sizeof stmts[0])
			abort();        /* ri_sq_schema_ddl is ours: every statement ends in ';' */
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
bool
sq_schema_check(struct sq *s, char *why, size_t n)
{
	char *want = schema_expected(s->core.shards);
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
int
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
		else if (strcmp(k, "shards") == 0)
			s->core.shards = atoi(v);
		else if (strcmp(k, "boundary") == 0)
			s->core.boundary = strtoll(v, NULL, 10);
	}
	done(s, st);
	if (rc != SQLITE_DONE)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: %s", s->core.cfg->journal, sqlite3_errmsg(s->db));
	if (!fmt && other > 0 && other < RI_FORMAT)
		return ri_fail(err, RI_CONFIG, "journal %s is format %d; this ri (%s) reads format %d only: %s",
		    s->core.cfg->journal, other, ri_version(), RI_FORMAT, ri_format_advice(other));
	/* docs/SHARDS.md: the count is bound by every head's MAC, so a
	 * changed row fails there too; a migrated journal has one shard */
	if (!fmt || !inst || s->core.shards < 1 || s->core.shards > RI_SHARDS_MAX ||
	    (s->core.boundary > 0 && s->core.shards != 1))
		return ri_fail(err, RI_INTEGRITY, "journal %s: missing or unknown format/instance id/shard count",
		    s->core.cfg->journal);
	ri_core_genesis(&s->core);
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
		if (!sq_schema_check(s, why, sizeof why)) {
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
	/* INTERFACE, third wave: "shards", 1 on SQLite unless given (one
	 * writer: more shards cost a little and gain nothing here) */
	s.core.shards = c->shards > 0 ? c->shards : 1;
	ri_hex(s.core.instance_id, sizeof s.core.instance_id, instance_hex);
	ri_genesis(s.core.instance_id, s.core.genesis);
	snprintf(sql, sizeof sql,
	    "INSERT INTO meta VALUES ('format', '%d'), ('instance_id', '%s'), ('shards', '%d');", RI_FORMAT,
	    instance_hex, s.core.shards);
	if (sqlite3_exec(s.db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s.db, ri_sq_schema_ddl, NULL, NULL, NULL) != SQLITE_OK ||
	    (s.core.shards > 1 && sqlite3_exec(s.db, ri_sq_shard_ddl, NULL, NULL, NULL) != SQLITE_OK) ||
	    sqlite3_exec(s.db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: %s", c->journal, sqlite3_errmsg(s.db));
		goto fail;
	}
	/* each shard's head in an empty journal: seq 0 at the shard's genesis
	 * hash, an empty tree, no open intent, no seal, no grant -- under its
	 * MAC, which binds the shard and the count */
	for (int shard = 0; shard < s.core.shards; shard++) {
		struct ri_jhead jh = { .shard = shard };
		unsigned char mac[RI_HASH_LEN], g[RI_HASH_LEN];
		sqlite3_stmt *st;
		ri_core_shard_genesis(&s.core, shard, g);
		ri_jhead_mac(key, keylen, s.core.instance_id, s.core.shards, s.core.boundary, &jh, g, mac);
		if (sqlite3_prepare_v2(s.db, "INSERT INTO heads VALUES (?, 0, ?, 0, ?, 0, 0, ?)", -1, &st, NULL) != SQLITE_OK) {
			rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: %s", c->journal, sqlite3_errmsg(s.db));
			goto fail;
		}
		sqlite3_bind_int(st, 1, shard);
		sqlite3_bind_blob(st, 2, jh.root, RI_HASH_LEN, SQLITE_TRANSIENT);
		sqlite3_bind_blob(st, 3, jh.open_acc, RI_HASH_LEN, SQLITE_TRANSIENT);
		sqlite3_bind_blob(st, 4, mac, RI_HASH_LEN, SQLITE_TRANSIENT);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE) {
			rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: %s", c->journal, sqlite3_errmsg(s.db));
			goto fail;
		}
	}
	if (sqlite3_exec(s.db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: %s", c->journal, sqlite3_errmsg(s.db));
		goto fail;
	}
	sqlite3_close(s.db);
	return RI_OK;
fail:
	sqlite3_close(s.db);
	unlink(c->journal);
	return rc;
}
