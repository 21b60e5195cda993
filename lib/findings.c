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
		"closure-at-risk", "binding-duplicate", "unbound-kind" };
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
	    " ON CONFLICT(invocation_id, finding) WHERE scope = 'act' DO NOTHING", -1, &st, NULL);
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
