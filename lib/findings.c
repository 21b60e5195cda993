/* findings.c -- the findings register on its own SQLite file. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>

#include "findings.h"

struct ri_findings {
	sqlite3 *db;
	char *path;
};

static const char schema[] =
	"PRAGMA journal_mode=WAL;"
	"CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID;"
	"INSERT INTO meta VALUES ('format', '1');"
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
	"  detail TEXT);"
	/* findings 12: one record per standing condition */
	"CREATE UNIQUE INDEX findings_act ON findings(invocation_id, finding) WHERE scope = 'act';"
	"CREATE UNIQUE INDEX findings_instance ON findings(finding, ifnull(kind, ''))"
	"  WHERE scope = 'instance' AND closed_at IS NULL;"
	"CREATE INDEX findings_kind ON findings(kind, id);"
	"CREATE TABLE runs(run_id TEXT PRIMARY KEY, started_at INTEGER NOT NULL,"
	"  seq INTEGER NOT NULL UNIQUE) WITHOUT ROWID;";

const char *
ri_finding_name(enum ri_finding f)
{
	static const char *names[] = { "journal-unavailable", "store-unavailable",
		"closure-at-risk", "binding-duplicate", "unbound-kind", "escalated",
		"service-credential-refused", "start-refused" };
	return names[f];
}

int
ri_findings_create(const char *path, ri_err *err)
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
ri_findings_open(const char *path, bool readonly, struct ri_findings **out, ri_err *err)
{
	struct ri_findings *f;

	*out = NULL;
	if (access(path, F_OK) != 0)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "findings register %s: %s", path, strerror(errno));
	f = ri_xcalloc(1, sizeof *f);
	f->path = ri_strdup(path);
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

void
ri_findings_close(struct ri_findings *f)
{
	if (f == NULL)
		return;
	sqlite3_close(f->db);
	free(f->path);
	free(f);
}

int
ri_findings_act(struct ri_findings *f, enum ri_finding what, const char *kind,
    const char *act_key, const char *invocation_id, const char *by, ri_ms now,
    json_t *detail, ri_err *err)
{
	sqlite3_stmt *st = NULL;
	char *d = detail ? ri_json_canonical(detail) : NULL;
	int rc;

	rc = sqlite3_prepare_v2(f->db, "INSERT INTO findings(finding, scope, kind, act_key,"
	    " invocation_id, first_seen, first_seen_at, run_id, detail)"
	    " VALUES (?, 'act', ?, ?, ?, ?, ?, ?, ?)"
	    " ON CONFLICT(invocation_id, finding) WHERE scope = 'act'"
	    /* findings 8: first seen never moves; the latest run's word does */
	    " DO UPDATE SET run_id = excluded.run_id, detail = excluded.detail", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, ri_finding_name(what), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, kind, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 3, act_key, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 4, invocation_id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 5, by, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 6, now);
		sqlite3_bind_text(st, 7, by, -1, SQLITE_TRANSIENT);
		if (d != NULL)
			sqlite3_bind_text(st, 8, d, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	free(d);
	if (rc != SQLITE_DONE)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "findings register %s: %s", f->path,
		    sqlite3_errmsg(f->db));
	return RI_OK;
}

static int
reg_fail(struct ri_findings *f, ri_err *err)
{
	return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "findings register %s: %s", f->path,
	    sqlite3_errmsg(f->db));
}

static int
exec_step(struct ri_findings *f, sqlite3_stmt *st, ri_err *err)
{
	int rc = sqlite3_step(st);

	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? RI_OK : reg_fail(f, err);
}

int
ri_findings_run_begin(struct ri_findings *f, const char *run_id, ri_ms now, ri_err *err)
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
ri_findings_instance(struct ri_findings *f, enum ri_finding what, const char *kind,
    const char *run_id, ri_ms now, json_t *detail, ri_err *err)
{
	sqlite3_stmt *st;
	char *d = detail ? ri_json_canonical(detail) : NULL;
	int rc;

	/* findings 9: advance the standing record; findings 7-8: first seen
	 * is set once, at the insert */
	rc = sqlite3_prepare_v2(f->db, "INSERT INTO findings(finding, scope, kind, first_seen,"
	    " first_seen_at, last_seen, last_seen_at, run_id, detail)"
	    " VALUES (?1, 'instance', ?2, ?3, ?4, ?3, ?4, ?3, ?5)"
	    " ON CONFLICT(finding, ifnull(kind, '')) WHERE scope = 'instance' AND closed_at IS NULL"
	    " DO UPDATE SET last_seen = excluded.last_seen, last_seen_at = excluded.last_seen_at,"
	    " run_id = excluded.run_id, detail = excluded.detail", -1, &st, NULL);
	if (rc != SQLITE_OK) {
		free(d);
		return reg_fail(f, err);
	}
	sqlite3_bind_text(st, 1, ri_finding_name(what), -1, SQLITE_STATIC);
	if (kind != NULL)
		sqlite3_bind_text(st, 2, kind, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, run_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 4, now);
	if (d != NULL)
		sqlite3_bind_text(st, 5, d, -1, SQLITE_TRANSIENT);
	rc = exec_step(f, st, err);
	free(d);
	return rc;
}

int
ri_findings_refusal(struct ri_findings *f, const char *kind, const char *cause, const char *by,
    ri_ms now, json_t *entry, ri_err *err)
{
	sqlite3_stmt *st = NULL;
	json_t *detail = NULL, *causes;
	int64_t id = 0;
	char *d;
	int rc;

	if (sqlite3_exec(f->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return reg_fail(f, err);
	if (sqlite3_prepare_v2(f->db, "SELECT id, detail FROM findings WHERE scope = 'instance'"
	    " AND finding = ?1 AND ifnull(kind, '') = ifnull(?2, '') AND closed_at IS NULL", -1, &st,
	    NULL) != SQLITE_OK)
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
	if (!json_is_object(detail)) {
		json_decref(detail);
		detail = json_object();
	}
	if (!json_is_object(causes = json_object_get(detail, "causes"))) {
		causes = json_object();
		json_object_set_new(detail, "causes", causes);
	}
	if (json_object_get(causes, cause) != NULL) {
		/* once per cause: already on the register */
		json_decref(detail);
		sqlite3_exec(f->db, "COMMIT", NULL, NULL, NULL);
		return RI_OK;
	}
	json_object_set(causes, cause, entry);
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
	if (sqlite3_exec(f->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	return RI_OK;
fail:
	rc = reg_fail(f, err);
	sqlite3_finalize(st);
	sqlite3_exec(f->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int
ri_findings_close_unseen(struct ri_findings *f, const char *run_id, ri_ms now,
    const char *const *seen, size_t n_seen, ri_err *err)
{
	sqlite3_stmt *sel, *upd;
	int rc;

	(void)run_id;
	if (sqlite3_prepare_v2(f->db, "SELECT id, finding, ifnull(kind, '') FROM findings"
	    " WHERE scope = 'instance' AND closed_at IS NULL", -1, &sel, NULL) != SQLITE_OK)
		return reg_fail(f, err);
	if (sqlite3_prepare_v2(f->db, "UPDATE findings SET closed_at = ? WHERE id = ?", -1, &upd,
	    NULL) != SQLITE_OK) {
		sqlite3_finalize(sel);
		return reg_fail(f, err);
	}
	while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
		char key[256];
		bool was_seen = false;
		snprintf(key, sizeof key, "%s\t%s", (const char *)sqlite3_column_text(sel, 1),
		    (const char *)sqlite3_column_text(sel, 2));
		for (size_t i = 0; i < n_seen && !was_seen; i++)
			was_seen = strcmp(seen[i], key) == 0;
		if (was_seen)
			continue;
		/* findings 10a: last seen stays at the previous run that saw it */
		sqlite3_reset(upd);
		sqlite3_bind_int64(upd, 1, now);
		sqlite3_bind_int64(upd, 2, sqlite3_column_int64(sel, 0));
		if (sqlite3_step(upd) != SQLITE_DONE)
			break;
	}
	sqlite3_finalize(sel);
	sqlite3_finalize(upd);
	return rc == SQLITE_DONE ? RI_OK : reg_fail(f, err);
}

static const char *
col(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

static ri_ms
col_ms(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? RI_NONE : sqlite3_column_int64(st, i);
}

int
ri_findings_each(struct ri_findings *f, bool open_only, const char *kind,
    int (*each)(const struct ri_finding_row *, void *), void *arg, ri_err *err)
{
	sqlite3_stmt *st;
	char sql[512];
	int rc;

	snprintf(sql, sizeof sql, "SELECT id, finding, scope, kind, act_key, invocation_id,"
	    " first_seen, first_seen_at, last_seen, last_seen_at, closed_at, run_id, detail"
	    " FROM findings WHERE 1 %s %s ORDER BY id",
	    open_only ? "AND (scope = 'act' OR closed_at IS NULL)" : "",
	    kind ? "AND kind = ?" : "");
	if (sqlite3_prepare_v2(f->db, sql, -1, &st, NULL) != SQLITE_OK)
		return reg_fail(f, err);
	if (kind != NULL)
		sqlite3_bind_text(st, 1, kind, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct ri_finding_row r = {
			.id = sqlite3_column_int64(st, 0), .finding = col(st, 1), .scope = col(st, 2),
			.kind = col(st, 3), .act_key = col(st, 4), .invocation_id = col(st, 5),
			.first_seen = col(st, 6), .first_seen_at = col_ms(st, 7), .last_seen = col(st, 8),
			.last_seen_at = col_ms(st, 9), .closed_at = col_ms(st, 10), .run_id = col(st, 11),
			.detail = col(st, 12) };
		if (each(&r, arg) != 0)
			break;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? RI_OK : reg_fail(f, err);
}
