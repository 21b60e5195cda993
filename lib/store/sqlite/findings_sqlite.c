/* findings_sqlite.c -- the findings register on its own SQLite file, one
 * host's (the shared rows' MAC, the keyless exception and the dispatch:
 * store/findings.c; on PostgreSQL: store/pg/findings_pg.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>

#include "util/fault.h"
#include "store/findings_int.h"
#include "util/nc.h"

/* Every row MACed under the register's key (mac NULL: written where no key
 * was at hand, so never evidence). */
static const char schema[] =
	"PRAGMA journal_mode=WAL;"
	"CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL) STRICT, WITHOUT ROWID;"
	"INSERT INTO meta VALUES ('format', '2');"
	"CREATE TABLE findings("
	"  id INTEGER PRIMARY KEY,"
	"  finding TEXT NOT NULL,"
	"  scope TEXT NOT NULL CHECK (scope IN ('act', 'instance')),"
	"  kind TEXT,"
	"  act_key TEXT,"
	"  invocation_id TEXT,"
	"  first_seen TEXT NOT NULL,"
	"  first_seen_at INTEGER NOT NULL,"
	"  last_seen TEXT,"
	"  last_seen_at INTEGER,"
	"  closed_at INTEGER,"
	"  run_id TEXT NOT NULL,"
	"  detail TEXT,"
	"  mac BLOB) STRICT;"
	/* findings 12: one record per standing condition */
	"CREATE UNIQUE INDEX findings_act ON findings(invocation_id, finding) WHERE scope = 'act';"
	"CREATE UNIQUE INDEX findings_instance ON findings(finding, ifnull(kind, ''))"
	"  WHERE scope = 'instance' AND closed_at IS NULL;"
	"CREATE INDEX findings_kind ON findings(kind, id);"
	"CREATE TABLE runs(run_id TEXT PRIMARY KEY, started_at INTEGER NOT NULL,"
	"  seq INTEGER NOT NULL UNIQUE) STRICT, WITHOUT ROWID;";

#define ROW_COLS RI_FINDINGS_COLS ", mac"
#define KEYLESS_SHAPE RI_FINDINGS_KEYLESS_SHAPE

/* A row as typed values (SQLite: the statement's current row). */
static void
sq_cols(sqlite3_stmt *q, struct ri_fcol *c)
{
	for (int i = 0; i < RI_FINDINGS_NCOLS; i++) {
		c[i].type = sqlite3_column_type(q, i);
		c[i].i = c[i].type == SQLITE_INTEGER ? sqlite3_column_int64(q, i) : 0;
		c[i].s = c[i].type == SQLITE_TEXT || c[i].type == SQLITE_BLOB ? sqlite3_column_blob(q, i) : NULL;
		c[i].n = c[i].s != NULL ? (size_t)sqlite3_column_bytes(q, i) : 0;
	}
}

static void
row_mac(sqlite3_stmt *q, unsigned char out[RI_HASH_LEN])
{
	struct ri_fcol c[RI_FINDINGS_NCOLS];

	sq_cols(q, c);
	ri_findings_row_mac(c, out);
}

static bool
row_verified(sqlite3_stmt *q)
{
	struct ri_fcol c[RI_FINDINGS_NCOLS];

	sq_cols(q, c);
	return ri_findings_row_verified(c);
}

static bool
row_keyless(sqlite3_stmt *q)
{
	struct ri_fcol c[RI_FINDINGS_NCOLS];

	sq_cols(q, c);
	return ri_findings_row_keyless(c);
}

int64_t
ri_findings_sq_keyless(struct ri_findings *f)
{
	sqlite3_stmt *q;

	if (f->keyless >= 0)
		return f->keyless;
	if (sqlite3_prepare_v2(f->db, "SELECT count(*) FROM findings WHERE " KEYLESS_SHAPE, -1, &q, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(q) == SQLITE_ROW)
		f->keyless = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return f->keyless;
}

/* Is row id verified (or keyless)?  *exists false when there is none. */
static int
verified_id(struct ri_findings *f, int64_t id, bool *exists, bool *ok, bool *keyless)
{
	sqlite3_stmt *q;
	int rc;

	*exists = *ok = *keyless = false;
	if (sqlite3_prepare_v2(f->db, "SELECT " ROW_COLS " FROM findings WHERE id = ?", -1, &q, NULL) != SQLITE_OK)
		return SQLITE_ERROR;
	sqlite3_bind_int64(q, 1, id);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		*exists = true;
		*ok = row_verified(q);
		*keyless = !*ok && row_keyless(q);
	}
	sqlite3_finalize(q);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* (Re)MAC row id after ri wrote it (no key: the row stays unMACed). */
static int
remac(struct ri_findings *f, int64_t id)
{
	sqlite3_stmt *q, *u;
	unsigned char mac[RI_HASH_LEN];
	int rc;

	if (sqlite3_prepare_v2(f->db, "SELECT " ROW_COLS " FROM findings WHERE id = ?", -1, &q, NULL) != SQLITE_OK)
		return SQLITE_ERROR;
	sqlite3_bind_int64(q, 1, id);
	if ((rc = sqlite3_step(q)) != SQLITE_ROW) {
		sqlite3_finalize(q);
		return rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	row_mac(q, mac);
	sqlite3_finalize(q);
	if (sqlite3_prepare_v2(f->db, "UPDATE findings SET mac = ? WHERE id = ?", -1, &u, NULL) != SQLITE_OK)
		return SQLITE_ERROR;
	if (ri_findings_keyed())
		sqlite3_bind_blob(u, 1, mac, RI_HASH_LEN, SQLITE_TRANSIENT);
	sqlite3_bind_int64(u, 2, id);
	rc = sqlite3_step(u);
	sqlite3_finalize(u);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Close row id at `at`, or at its own first sighting for RI_NONE (a row
 * that fails its MAC is closed as it stands, never re-MACed: it stays
 * unverified). */
static int
close_unverified(sqlite3 *db, int64_t id, int64_t at)
{
	sqlite3_stmt *q;
	int rc;

	if (sqlite3_prepare_v2(db, "UPDATE findings SET closed_at = ifnull(?1, first_seen_at) WHERE id = ?2",
	    -1, &q, NULL) != SQLITE_OK)
		return SQLITE_ERROR;
	if (at != RI_NONE)
		sqlite3_bind_int64(q, 1, at);
	sqlite3_bind_int64(q, 2, id);
	rc = sqlite3_step(q);
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* The id of the row (if any) a statement selecting one id finds. */
static int64_t
id_of(sqlite3 *db, const char *sql, const char *a, const char *b)
{
	sqlite3_stmt *q;
	int64_t id = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return -1;
	if (a != NULL)
		sqlite3_bind_text(q, 1, a, -1, SQLITE_TRANSIENT);
	if (b != NULL)
		sqlite3_bind_text(q, 2, b, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(q) == SQLITE_ROW)
		id = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return id;
}

int
ri_findings_sq_create(const char *path, ri_err *err)
{
	sqlite3 *db = NULL;
	int fd, rc;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return ri_fail(err, errno == EEXIST ? RI_USAGE : RI_CONFIG, "findings register %s: %s",
		    path, errno == EEXIST ? "already exists; refusing to overwrite" : strerror(errno));
	close(fd);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, schema, NULL, NULL, NULL) != SQLITE_OK) {
		rc = ri_fail(err, RI_CONFIG, "findings register %s: %s", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		unlink(path);
		return rc;
	}
	sqlite3_close(db);
	return RI_OK;
}

int
ri_findings_sq_open(const char *path, bool readonly, struct ri_findings **out, ri_err *err)
{
	struct ri_findings *f;

	char why[512];

	*out = NULL;
	/* a FIFO in its place (or beside it) never hangs the caller (issue 40
	 * point 3) */
	if (ri_db_files_regular(path, why, sizeof why) != 0)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "findings register %s", why);
	f = ri_xcalloc(1, sizeof *f);
	f->path = ri_strdup(path);
	f->keyless = -1;
	if (sqlite3_open_v2(path, &f->db, readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE,
	    NULL) != SQLITE_OK) {
		int rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "findings register %s: %s", path,
		    sqlite3_errmsg(f->db));
		ri_findings_close(f);
		return rc;
	}
	sqlite3_busy_timeout(f->db, 5000);
	sqlite3_exec(f->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL);
	*out = f;
	return RI_OK;
}

/* the database handle only: ri_findings_close frees the rest */
void
ri_findings_sq_close(struct ri_findings *f)
{
	sqlite3_close(f->db);
	f->db = NULL;
}

static int
reg_fail(struct ri_findings *f, ri_err *err)
{
	return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "findings register %s: %s", f->path,
	    sqlite3_errmsg(f->db));
}

static int
reg_fail_db(struct ri_findings *f, ri_err *err)
{
	int rc = reg_fail(f, err);

	sqlite3_exec(f->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int
ri_findings_sq_act(struct ri_findings *f, enum ri_finding what, const char *kind,
    const char *act_key, const char *invocation_id, const char *by, ri_ms now,
    json_t *detail, ri_err *err)
{
	sqlite3_stmt *st = NULL;
	char *d = detail ? ri_json_canonical(detail) : NULL;
	bool exists = false, ok = false, keyless;
	int64_t id;
	int rc;

	if (sqlite3_exec(f->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		free(d);
		return reg_fail(f, err);
	}
	id = id_of(f->db, "SELECT id FROM findings WHERE scope = 'act' AND invocation_id = ?1 AND finding = ?2",
	    invocation_id, ri_finding_name(what));
	if (id > 0 && verified_id(f, id, &exists, &ok, &keyless) != SQLITE_OK)
		id = -1;
	if (id < 0) {
		free(d);
		return reg_fail_db(f, err);
	}
	if (id > 0 && ok)
		/* findings 8: first seen never moves; the latest run's word does */
		rc = sqlite3_prepare_v2(f->db, "UPDATE findings SET run_id = ?5, detail = ?6 WHERE id = ?7", -1, &st, NULL);
	else if (id > 0)
		/* a row that fails its MAC was never evidence: written over whole */
		rc = sqlite3_prepare_v2(f->db, "UPDATE findings SET kind = ?1, act_key = ?2, first_seen = ?3,"
		    " first_seen_at = ?4, run_id = ?5, detail = ?6, last_seen = NULL, last_seen_at = NULL,"
		    " closed_at = NULL WHERE id = ?7", -1, &st, NULL);
	else
		rc = sqlite3_prepare_v2(f->db, "INSERT INTO findings(finding, scope, kind, act_key,"
		    " invocation_id, first_seen, first_seen_at, run_id, detail)"
		    " VALUES (?8, 'act', ?1, ?2, ?9, ?3, ?4, ?5, ?6)", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		int n = sqlite3_bind_parameter_count(st);
		for (int i = 1; i <= n; i++) {
			const char *name = sqlite3_bind_parameter_name(st, i);
			int k = name ? atoi(name + 1) : i;
			switch (k) {
			case 1: sqlite3_bind_text(st, i, kind, -1, SQLITE_TRANSIENT); break;
			case 2: sqlite3_bind_text(st, i, act_key, -1, SQLITE_TRANSIENT); break;
			case 3: sqlite3_bind_text(st, i, by, -1, SQLITE_TRANSIENT); break;
			case 4: sqlite3_bind_int64(st, i, now); break;
			case 5: sqlite3_bind_text(st, i, by, -1, SQLITE_TRANSIENT); break;
			case 6: if (d != NULL) sqlite3_bind_text(st, i, d, -1, SQLITE_TRANSIENT); break;
			case 7: sqlite3_bind_int64(st, i, id); break;
			case 8: sqlite3_bind_text(st, i, ri_finding_name(what), -1, SQLITE_STATIC); break;
			case 9: sqlite3_bind_text(st, i, invocation_id, -1, SQLITE_TRANSIENT); break;
			}
		}
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	free(d);
	if (rc != SQLITE_DONE)
		return reg_fail_db(f, err);
	if (id == 0)
		id = sqlite3_last_insert_rowid(f->db);
	if (remac(f, id) != SQLITE_OK || sqlite3_exec(f->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return reg_fail_db(f, err);
	return RI_OK;
}

static int
exec_step(struct ri_findings *f, sqlite3_stmt *st, ri_err *err)
{
	int rc = sqlite3_step(st);

	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? RI_OK : reg_fail(f, err);
}

int
ri_findings_sq_run_begin(struct ri_findings *f, const char *run_id, ri_ms now, ri_err *err)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(f->db, "INSERT INTO runs(run_id, started_at, seq)"
	    " VALUES (?, ?, (SELECT ifnull(max(seq), 0) + 1 FROM runs))", -1, &st, NULL) != SQLITE_OK)
		return reg_fail(f, err);
	sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, now);
	return exec_step(f, st, err);
}

int
ri_findings_sq_instance(struct ri_findings *f, enum ri_finding what, const char *kind,
    const char *run_id, ri_ms now, json_t *detail, ri_err *err)
{
	sqlite3_stmt *st;
	char *d = detail ? ri_json_canonical(detail) : NULL;
	bool exists = false, ok = false, keyless;
	int64_t id;
	int rc;

	if (sqlite3_exec(f->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		free(d);
		return reg_fail(f, err);
	}
	id = id_of(f->db, "SELECT id FROM findings WHERE scope = 'instance' AND closed_at IS NULL"
	    " AND finding = ?1 AND ifnull(kind, '') = ?2", ri_finding_name(what), kind ? kind : "");
	if (id > 0 && verified_id(f, id, &exists, &ok, &keyless) != SQLITE_OK)
		id = -1;
	if (id < 0) {
		free(d);
		return reg_fail_db(f, err);
	}
	ri_fault("findings.decided");
	if (id > 0 && ok) {
		/* findings 9: advance the standing record */
		rc = sqlite3_prepare_v2(f->db, "UPDATE findings SET last_seen = ?1, last_seen_at = ?2, run_id = ?1,"
		    " detail = ?3 WHERE id = ?4", -1, &st, NULL);
		if (rc == SQLITE_OK) {
			sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(st, 2, now);
			if (d != NULL)
				sqlite3_bind_text(st, 3, d, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(st, 4, id);
			rc = sqlite3_step(st);
		}
		sqlite3_finalize(st);
	} else {
		if (id > 0) {
			/* a standing row that fails its MAC is no span of anything:
			 * closed as it stands (still unverified), and a new one opens */
			if (close_unverified(f->db, id, RI_NONE) != SQLITE_OK) {
				free(d);
				return reg_fail_db(f, err);
			}
		}
		/* findings 7-8: first seen is set once, at the insert */
		rc = sqlite3_prepare_v2(f->db, "INSERT INTO findings(finding, scope, kind, first_seen,"
		    " first_seen_at, last_seen, last_seen_at, run_id, detail)"
		    " VALUES (?1, 'instance', ?2, ?3, ?4, ?3, ?4, ?3, ?5)", -1, &st, NULL);
		if (rc == SQLITE_OK) {
			sqlite3_bind_text(st, 1, ri_finding_name(what), -1, SQLITE_STATIC);
			if (kind != NULL)
				sqlite3_bind_text(st, 2, kind, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(st, 3, run_id, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(st, 4, now);
			if (d != NULL)
				sqlite3_bind_text(st, 5, d, -1, SQLITE_TRANSIENT);
			rc = sqlite3_step(st);
		}
		sqlite3_finalize(st);
		id = sqlite3_last_insert_rowid(f->db);
	}
	free(d);
	if (rc != SQLITE_DONE)
		return reg_fail_db(f, err);
	if (remac(f, id) != SQLITE_OK || sqlite3_exec(f->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return reg_fail_db(f, err);
	return RI_OK;
}

int
ri_findings_sq_refusal(struct ri_findings *f, const char *kind, const char *cause, const char *by,
    ri_ms now, json_t *entry, ri_err *err)
{
	sqlite3_stmt *st = NULL;
	json_t *detail = NULL;
	int64_t id = 0;
	char *d;
	int rc;

	if (sqlite3_exec(f->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return reg_fail(f, err);
	if (sqlite3_prepare_v2(f->db, "SELECT id, detail FROM findings WHERE scope = 'instance'"
	    " AND finding = ?1 AND ifnull(kind, '') = ifnull(?2, '') AND closed_at IS NULL"
	    " ORDER BY id DESC LIMIT 1", -1, &st, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_text(st, 1, ri_finding_name(RI_F_START_REFUSED), -1, SQLITE_STATIC);
	if (kind != NULL)
		sqlite3_bind_text(st, 2, kind, -1, SQLITE_TRANSIENT);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		id = sqlite3_column_int64(st, 0);
		if (sqlite3_column_text(st, 1) != NULL)
			detail = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
	} else if (rc != SQLITE_DONE) {
		goto fail;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (id > 0) {
		bool exists, ok, keyless;
		if (verified_id(f, id, &exists, &ok, &keyless) != SQLITE_OK)
			goto fail;
		/* a keyless refusal, met again while still keyless, is merged
		 * into: each cause is recorded once, not once per attempt */
		if (!ok && !(keyless && !ri_findings_keyed())) {
			/* a row that fails its MAC (a keyless one met now a key is
			 * at hand, or a forged one) is never merged into, and so
			 * never blessed by this row's MAC: it is closed, staying
			 * unverified, and this refusal starts a new row */
			if (close_unverified(f->db, id, now) != SQLITE_OK)
				goto fail;
			json_decref(detail);
			detail = NULL;
			id = 0;
		}
	}
	if (!ri_findings_cause_add(&detail, cause, entry)) {
		/* once per cause: already on the register */
		json_decref(detail);
		sqlite3_exec(f->db, "COMMIT", NULL, NULL, NULL);
		return RI_OK;
	}
	d = ri_json_canonical(detail);
	json_decref(detail);
	/* ?1 finding, ?2 kind, ?3 by, ?4 now, ?5 detail, ?6 id */
	rc = sqlite3_prepare_v2(f->db, id == 0 ?
	    "INSERT INTO findings(finding, scope, kind, first_seen, first_seen_at, last_seen,"
	    " last_seen_at, run_id, detail) VALUES (?1, 'instance', ?2, ?3, ?4, ?3, ?4, ?3, ?5)" :
	    "UPDATE findings SET last_seen = ?3, last_seen_at = ?4, run_id = ?3, detail = ?5"
	    " WHERE id = ?6", -1, &st, NULL);
	if (rc != SQLITE_OK) {
		free(d);
		goto fail;
	}
	if (id == 0) {
		sqlite3_bind_text(st, 1, ri_finding_name(RI_F_START_REFUSED), -1, SQLITE_STATIC);
		if (kind != NULL)
			sqlite3_bind_text(st, 2, kind, -1, SQLITE_TRANSIENT);
	} else {
		sqlite3_bind_int64(st, 6, id);
	}
	sqlite3_bind_text(st, 3, by, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 4, now);
	sqlite3_bind_text(st, 5, d, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	free(d);
	sqlite3_finalize(st);
	st = NULL;
	if (rc != SQLITE_DONE)
		goto fail;
	if (id == 0)
		id = sqlite3_last_insert_rowid(f->db);
	if (remac(f, id) != SQLITE_OK || sqlite3_exec(f->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	return RI_OK;
fail:
	rc = reg_fail(f, err);
	sqlite3_finalize(st);
	sqlite3_exec(f->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int
ri_findings_sq_close_unseen(struct ri_findings *f, const char *run_id, ri_ms now,
    const char *const *seen, size_t n_seen, ri_err *err)
{
	sqlite3_stmt *sel, *upd;
	json_t *close = json_array(), *v;
	size_t i;
	int rc;

	(void)run_id;
	if (sqlite3_exec(f->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		json_decref(close);
		return reg_fail(f, err);
	}
	if (sqlite3_prepare_v2(f->db, "SELECT id, finding, ifnull(kind, '') FROM findings"
	    " WHERE scope = 'instance' AND closed_at IS NULL", -1, &sel, NULL) != SQLITE_OK) {
		json_decref(close);
		return reg_fail_db(f, err);
	}
	while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
		char key[256];
		bool was_seen = false;
		snprintf(key, sizeof key, "%s\t%s", (const char *)sqlite3_column_text(sel, 1),
		    (const char *)sqlite3_column_text(sel, 2));
		for (size_t j = 0; j < n_seen && !was_seen; j++)
			was_seen = strcmp(seen[j], key) == 0;
		if (!was_seen)
			json_array_append_new(close, json_integer(sqlite3_column_int64(sel, 0)));
	}
	sqlite3_finalize(sel);
	if (rc != SQLITE_DONE || sqlite3_prepare_v2(f->db, "UPDATE findings SET closed_at = ? WHERE id = ?", -1, &upd,
	    NULL) != SQLITE_OK) {
		json_decref(close);
		return reg_fail_db(f, err);
	}
	json_array_foreach(close, i, v) {
		bool exists, ok, keyless;
		int64_t id = json_integer_value(v);
		/* findings 10a: last seen stays at the previous run that saw it;
		 * a row that fails its MAC is closed but stays unverified */
		if (verified_id(f, id, &exists, &ok, &keyless) != SQLITE_OK)
			break;
		sqlite3_reset(upd);
		sqlite3_bind_int64(upd, 1, now);
		sqlite3_bind_int64(upd, 2, id);
		if (sqlite3_step(upd) != SQLITE_DONE || (ok && remac(f, id) != SQLITE_OK))
			break;
	}
	sqlite3_finalize(upd);
	bool all = i == json_array_size(close);
	json_decref(close);
	if (!all || sqlite3_exec(f->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return reg_fail_db(f, err);
	return RI_OK;
}

int
ri_findings_sq_each(struct ri_findings *f, bool open_only, const char *kind,
    int (*each)(const struct ri_finding_row *, void *), void *arg, ri_err *err)
{
	sqlite3_stmt *st;
	char sql[512];
	int rc;

	bool excused = ri_findings_excused(ri_findings_keyless(f));

	snprintf(sql, sizeof sql, "SELECT " ROW_COLS " FROM findings WHERE 1 %s %s ORDER BY id",
	    open_only ? "AND (scope = 'act' OR closed_at IS NULL)" : "",
	    kind ? "AND kind = ?" : "");
	if (sqlite3_prepare_v2(f->db, sql, -1, &st, NULL) != SQLITE_OK)
		return reg_fail(f, err);
	if (kind != NULL)
		sqlite3_bind_text(st, 1, kind, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct ri_fcol c[RI_FINDINGS_NCOLS];
		sq_cols(st, c);
		if (ri_findings_emit(c, excused, each, arg) != 0)
			break;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? RI_OK : reg_fail(f, err);
}
