/* witness_pg.c -- the witness as a PostgreSQL table (witness_pg.h): every
 * host of a multi-host instance appends to it and reads it, so a journal
 * rolled back is behind it whichever host wrote what the rollback lost.
 * It stores and fetches lines; witness.c verifies each (a row carries no
 * offset: the highest (epoch, seq) is one indexed query, which a replayed
 * or appended older row cannot lower). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pg/pq.h"
#include "store/pg/witness_pg.h"

struct ri_witness_pg {
	PGconn *conn;
	char *uri;
};

/* Append-only at the database level too (the role that writes it should
 * not be the journal's: ri-startcheck witness-independent). */
static const char ddl[] =
	"CREATE TABLE ri_witness(id bigserial PRIMARY KEY, epoch bigint NOT NULL CHECK (epoch >= 0),"
	"  seq bigint NOT NULL CHECK (seq >= 1), line text NOT NULL);"
	"CREATE INDEX ri_witness_rank ON ri_witness(epoch, seq);"
	"CREATE FUNCTION ri_witness_append_only() RETURNS trigger LANGUAGE plpgsql AS"
	"  $$BEGIN RAISE EXCEPTION 'ri: the witness is append-only'; END$$;"
	"CREATE TRIGGER ri_witness_no_change BEFORE UPDATE OR DELETE ON ri_witness"
	"  FOR EACH ROW EXECUTE FUNCTION ri_witness_append_only();"
	"CREATE TRIGGER ri_witness_no_truncate BEFORE TRUNCATE ON ri_witness"
	"  FOR EACH STATEMENT EXECUTE FUNCTION ri_witness_append_only();";

/* The URI for messages: never its password (issue 40 point 9). */
static void
shown(const char *uri, char *out, size_t n)
{
	const char *at = strchr(uri, '@'), *scheme = strstr(uri, "://");

	if (at != NULL && scheme != NULL && scheme < at) {
		const char *colon = memchr(scheme + 3, ':', (size_t)(at - scheme - 3));
		if (colon != NULL) {
			snprintf(out, n, "%.*s:***%s", (int)(colon - uri), uri, at);
			return;
		}
	}
	snprintf(out, n, "%s", uri);
}

static int
connect_to(const char *uri, PGconn **conn, ri_err *err)
{
	char show[512];

	if (!ri_pq_load("witness", err))
		return RI_JOURNAL_UNAVAILABLE;
	*conn = PQconnectdb(uri);
	if (*conn == NULL || PQstatus(*conn) != CONNECTION_OK) {
		shown(uri, show, sizeof show);
		int rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "witness %s: %s", show,
		    *conn != NULL ? PQerrorMessage(*conn) : "cannot connect");
		if (*conn != NULL)
			PQfinish(*conn);
		*conn = NULL;
		return rc;
	}
	return RI_OK;
}

static int
failed(const char *uri, PGconn *conn, PGresult *r, const char *what, ri_err *err)
{
	char show[512];

	shown(uri, show, sizeof show);
	return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "witness %s: %s: %s", show, what,
	    r != NULL ? PQresultErrorMessage(r) : PQerrorMessage(conn));
}

int
ri_witness_pg_create(const char *uri, ri_err *err)
{
	PGconn *conn;
	PGresult *r;
	int rc;

	if ((rc = connect_to(uri, &conn, err)) != RI_OK)
		return rc;
	/* refuses an existing witness, as a file's O_EXCL does */
	r = PQexec(conn, "SELECT to_regclass('ri_witness') IS NOT NULL");
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		rc = failed(uri, conn, r, "cannot read", err);
	} else if (strcmp(PQgetvalue(r, 0, 0), "t") == 0) {
		char show[512];
		shown(uri, show, sizeof show);
		rc = ri_fail(err, RI_USAGE, "witness %s: already exists; refusing to overwrite", show);
	} else {
		PQclear(r);
		r = PQexec(conn, ddl);
		rc = PQresultStatus(r) == PGRES_COMMAND_OK ? RI_OK : failed(uri, conn, r, "cannot create", err);
		if (rc != RI_OK)
			rc = RI_CONFIG;
	}
	PQclear(r);
	PQfinish(conn);
	return rc;
}

int
ri_witness_pg_drop(const char *uri, ri_err *err)
{
	PGconn *conn;
	PGresult *r;
	int rc;

	if ((rc = connect_to(uri, &conn, err)) != RI_OK)
		return rc;
	r = PQexec(conn, "DROP TABLE IF EXISTS ri_witness; DROP FUNCTION IF EXISTS ri_witness_append_only()");
	rc = PQresultStatus(r) == PGRES_COMMAND_OK ? RI_OK : failed(uri, conn, r, "cannot drop", err);
	PQclear(r);
	PQfinish(conn);
	return rc;
}

int
ri_witness_pg_open(const char *uri, struct ri_witness_pg **out, ri_err *err)
{
	struct ri_witness_pg *p = ri_xcalloc(1, sizeof *p);
	int rc;

	*out = NULL;
	if ((rc = connect_to(uri, &p->conn, err)) != RI_OK) {
		free(p);
		return rc;
	}
	p->uri = ri_strdup(uri);
	*out = p;
	return RI_OK;
}

void
ri_witness_pg_close(struct ri_witness_pg *p)
{
	if (p == NULL)
		return;
	if (p->conn != NULL)
		PQfinish(p->conn);
	free(p->uri);
	free(p);
}

int
ri_witness_pg_newest(struct ri_witness_pg *p, char **text, ri_err *err)
{
	PGresult *r = PQexec(p->conn, "SELECT line FROM ri_witness ORDER BY epoch DESC, seq DESC, id DESC LIMIT 1");
	int rc = RI_OK;

	*text = NULL;
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		rc = failed(p->uri, p->conn, r, "cannot read", err);
	else if (PQntuples(r) == 1)
		*text = ri_strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return rc;
}

int
ri_witness_pg_add(struct ri_witness_pg *p, int64_t seq, const char *text, ri_err *err)
{
	char s[32];
	const char *epoch = strstr(text, "\"epoch\":");
	const char *params[3] = { NULL, s, text };
	char e[32];
	PGresult *r;
	int rc;

	snprintf(s, sizeof s, "%lld", (long long)seq);
	snprintf(e, sizeof e, "%lld", epoch != NULL ? strtoll(epoch + 8, NULL, 10) : 0LL);
	params[0] = e;
	r = PQexecParams(p->conn, "INSERT INTO ri_witness(epoch, seq, line) VALUES ($1, $2, $3)", 3, NULL, params,
	    NULL, NULL, 0);
	rc = PQresultStatus(r) == PGRES_COMMAND_OK ? RI_OK : failed(p->uri, p->conn, r, "cannot append", err);
	PQclear(r);
	return rc;
}

int
ri_witness_pg_each(struct ri_witness_pg *p, int newest, int (*each)(const char *text, void *arg), void *arg,
    ri_err *err)
{
	char sql[128];
	PGresult *r;
	int rc = RI_OK;

	/* newest: only that many of the latest rows (ri_witness_recent) */
	if (newest > 0)
		snprintf(sql, sizeof sql, "SELECT line FROM ri_witness ORDER BY id DESC LIMIT %d", newest);
	r = PQexec(p->conn, newest > 0 ? sql : "SELECT line FROM ri_witness ORDER BY id");

	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		rc = failed(p->uri, p->conn, r, "cannot read", err);
	else
		for (int i = 0; i < PQntuples(r); i++)
			if (each(PQgetvalue(r, i, 0), arg))
				break;
	PQclear(r);
	return rc;
}

int
ri_witness_pg_independent(const char *witness_uri, const char *journal_uri, char *why, size_t n, ri_err *err)
{
	PGconn *j, *w;
	PGresult *r;
	char role[256];
	int rc;

	if ((rc = connect_to(journal_uri, &j, err)) != RI_OK)
		return rc;
	r = PQexec(j, "SELECT current_user::text");
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		rc = failed(journal_uri, j, r, "cannot read its role", err);
		PQclear(r);
		PQfinish(j);
		return rc;
	}
	snprintf(role, sizeof role, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	PQfinish(j);
	if ((rc = connect_to(witness_uri, &w, err)) != RI_OK)
		return rc;
	const char *params[1] = { role };
	r = PQexecParams(w,
	    "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) THEN 'absent'"
	    " ELSE (SELECT CASE WHEN r.rolsuper THEN 'superuser'"
	    "  WHEN pg_has_role($1, c.relowner, 'MEMBER') THEN 'owner'"
	    "  WHEN has_table_privilege($1, c.oid, 'INSERT') OR has_table_privilege($1, c.oid, 'UPDATE')"
	    "   OR has_table_privilege($1, c.oid, 'DELETE') OR has_table_privilege($1, c.oid, 'TRUNCATE')"
	    "  THEN 'writer' ELSE 'reader' END"
	    "  FROM pg_roles r, pg_class c WHERE r.rolname = $1 AND c.oid = 'ri_witness'::regclass) END",
	    1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		rc = failed(witness_uri, w, r, "cannot read its privileges", err);
	} else {
		const char *v = PQgetvalue(r, 0, 0);
		if (strcmp(v, "absent") == 0 || strcmp(v, "reader") == 0) {
			snprintf(why, n, "the journal's role %s cannot write the witness (%s there)", role,
			    strcmp(v, "absent") == 0 ? "no such role" : "it may only read it");
			rc = RI_OK;
		} else {
			snprintf(why, n, "the journal's role %s can write the witness (%s of it): whoever can roll the"
			    " journal back can roll the witness back with it -- give the witness a database (or at least"
			    " a schema) owned by another role, grant the journal's role nothing on it, and connect to it"
			    " as that other role", role, strcmp(v, "writer") == 0 ? "a writer" :
			    strcmp(v, "owner") == 0 ? "the owner" : "a superuser");
			rc = RI_CHECK_FAILED;
		}
	}
	PQclear(r);
	PQfinish(w);
	return rc;
}
