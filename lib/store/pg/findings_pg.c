/* findings_pg.c -- the findings register as a table of the PostgreSQL
 * journal's database (issue 41 point 5, "one findings register per
 * instance"): every host's sweeps write it and every audit reads it, so a
 * verdict that reads the register (Check 3.1, 3.5) does not depend on
 * which host audits.  Its rows and their MAC are the SQLite register's
 * (findings_int.h); the table is made with the journal's schema
 * (open_pg.c, schema_ddl) and removed with it.
 *
 * Concurrency: two hosts' sweeps may write at once.  Every write is one
 * transaction that first takes the table's SHARE ROW EXCLUSIVE lock -- it
 * conflicts with itself and with no reader -- so a read that decides a
 * write (is there a standing record to advance, is this row verified, was
 * this cause recorded) is never raced by another host's write: writers
 * are serialised as SQLite's BEGIN IMMEDIATE serialises them, and each
 * statement after the lock sees every commit before it (READ COMMITTED).
 * Every value travels as a parameter (PQexecParams), never in the SQL.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>

#include <sodium.h>

#include "util/fault.h"
#include "store/findings_int.h"
#include "util/nc.h"
#include "store/pg/pq.h"

struct ri_findings_pg {
	PGconn *conn;
	char shown[512];                /* the URI for messages, no password (issue 40 point 9) */
	int64_t keyless;                /* rows shaped as keyless refusals (-1: not counted yet) */
	bool keyless_failed;            /* the count failed: -1 (none excused), not asked again */
	bool in_tx;                     /* a write transaction is open */
	bool readonly;                  /* a reader: its transactions are READ ONLY */
};

#define SEL "SELECT " RI_FINDINGS_COLS ", encode(mac, 'hex') FROM findings"

/* issue 41 point 5: a write's read-then-write decision holds the
 * register's write lock (see the head of this file) */
#define BEGIN_WRITE(ro) (RI_NC(RI_NC_FINDINGS_UNLOCKED) ? \
	((ro) ? "BEGIN READ ONLY; SET LOCAL lock_timeout = 5000" :  /* negative control: two hosts' writes race */ \
	"BEGIN; SET LOCAL lock_timeout = 5000") : \
	((ro) ? "BEGIN READ ONLY; SET LOCAL lock_timeout = 5000; LOCK TABLE findings IN SHARE ROW EXCLUSIVE MODE" : \
	"BEGIN; SET LOCAL lock_timeout = 5000; LOCK TABLE findings IN SHARE ROW EXCLUSIVE MODE"))

static int
pg_fail(struct ri_findings_pg *p, PGresult *r, ri_err *err)
{
	int rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "findings register %s: %s", p->shown,
	    r != NULL ? PQresultErrorMessage(r) : PQerrorMessage(p->conn));

	PQclear(r);
	if (p->in_tx) {
		PGresult *x = PQexec(p->conn, "ROLLBACK");
		PQclear(x);
		p->in_tx = false;
	}
	return rc;
}

static bool
res_ok(PGresult *r)
{
	return r != NULL && (PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK);
}

/* A statement outside a write transaction runs in one of its own, under
 * the write's lock wait: ACCESS SHARE is blocked by an ACCESS EXCLUSIVE
 * lock a DML role may take (LOCK TABLE needs only UPDATE), and a read
 * that waited for it without a bound hung (issue 40 point 1). */
static PGresult *
q(struct ri_findings_pg *p, const char *sql, int n, const char *const *v)
{
	PGresult *r, *x;
	/* negative control: the read is its own statement, unbounded */
	bool own = !p->in_tx && !RI_NC(RI_NC_FINDINGS_READ_UNBOUNDED);

	if (own) {
		x = PQexec(p->conn, "BEGIN; SET LOCAL lock_timeout = 5000");
		if (!res_ok(x))
			return x;
		PQclear(x);
	}
	r = PQexecParams(p->conn, sql, n, NULL, v, NULL, NULL, 0);
	if (own) {
		x = PQexec(p->conn, res_ok(r) ? "COMMIT" : "ROLLBACK");
		if (res_ok(r) && !res_ok(x)) {
			PQclear(r);
			return x;
		}
		PQclear(x);
	}
	return r;
}

/* Run a statement whose answer nothing reads; false (r kept in *bad) when
 * it fails. */
static bool
q_ok(struct ri_findings_pg *p, const char *sql, int n, const char *const *v, PGresult **bad)
{
	PGresult *r = q(p, sql, n, v);

	if (res_ok(r)) {
		PQclear(r);
		return true;
	}
	*bad = r;
	return false;
}

static void
i64(char *out, size_t n, int64_t v)
{
	snprintf(out, n, "%" PRId64, v);
}

/* Row `row` of a result selected with SEL, as typed values; mac is the
 * decoded MAC's buffer. */
static void
pg_cols(PGresult *r, int row, struct ri_fcol *c, unsigned char mac[RI_HASH_LEN])
{
	for (int i = 0; i < RI_FINDINGS_NCOLS; i++) {
		memset(&c[i], 0, sizeof c[i]);
		if (PQgetisnull(r, row, i)) {
			c[i].type = SQLITE_NULL;
			continue;
		}
		const char *v = PQgetvalue(r, row, i);
		if (i == 0 || i == 7 || i == 9 || i == 10) {
			c[i].type = SQLITE_INTEGER;
			c[i].i = strtoll(v, NULL, 10);
		} else if (i == RI_FINDINGS_NCOLS - 1) {
			size_t got = 0;
			c[i].type = SQLITE_BLOB;
			c[i].n = strlen(v) / 2;
			if (c[i].n == RI_HASH_LEN &&
			    sodium_hex2bin(mac, RI_HASH_LEN, v, strlen(v), NULL, &got, NULL) == 0 && got == RI_HASH_LEN)
				c[i].s = mac;
		} else {
			c[i].type = SQLITE_TEXT;
			c[i].s = (const unsigned char *)v;
			c[i].n = strlen(v);
		}
	}
}

int
ri_findings_pg_open(const char *uri, bool readonly, struct ri_findings_pg **out, ri_err *err)
{
	struct ri_findings_pg *p;

	*out = NULL;
	if (!ri_pq_load("findings register", err))
		return RI_JOURNAL_UNAVAILABLE;
	p = ri_xcalloc(1, sizeof *p);
	p->keyless = -1;
	ri_redact(uri, p->shown, sizeof p->shown);
	p->conn = PQconnectdb(uri);
	if (p->conn == NULL || PQstatus(p->conn) != CONNECTION_OK) {
		int rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "findings register %s: %s", p->shown,
		    p->conn != NULL ? PQerrorMessage(p->conn) : "cannot connect");
		ri_findings_pg_close(p);
		return rc;
	}
	/* a lock another host holds is waited for as long as SQLite's busy
	 * timeout waits, no longer; a reader never writes -- both set per
	 * write transaction (BEGIN_WRITE), never for the session: behind a
	 * pooler a session's SET outlives the transaction into another
	 * client's (issue 43).  A read outside a write is a transaction of
	 * its own, under the same lock wait (q) */
	p->readonly = readonly;
	*out = p;
	return RI_OK;
}

void
ri_findings_pg_close(struct ri_findings_pg *p)
{
	if (p == NULL)
		return;
	if (p->conn != NULL)
		PQfinish(p->conn);
	free(p);
}

static bool
begin_write(struct ri_findings_pg *p, PGresult **bad)
{
	PGresult *r = PQexec(p->conn, BEGIN_WRITE(p->readonly));

	p->in_tx = true;
	if (res_ok(r)) {
		PQclear(r);
		return true;
	}
	*bad = r;
	return false;
}

static bool
commit(struct ri_findings_pg *p, PGresult **bad)
{
	PGresult *r = PQexec(p->conn, "COMMIT");

	if (res_ok(r)) {
		p->in_tx = false;
		PQclear(r);
		return true;
	}
	*bad = r;
	return false;
}

/* The standing row a selection finds (at most one), judged: *id 0 when
 * none; *ok its MAC verifies; *keyless it is shaped as a keyless refusal;
 * *detail a copy of its detail (when asked). */
static bool
judge_one(struct ri_findings_pg *p, const char *sql, int n, const char *const *v, int64_t *id, bool *ok,
    bool *keyless, char **detail, PGresult **bad)
{
	PGresult *r = q(p, sql, n, v);
	struct ri_fcol c[RI_FINDINGS_NCOLS];
	unsigned char mac[RI_HASH_LEN];

	*id = 0;
	*ok = *keyless = false;
	if (detail != NULL)
		*detail = NULL;
	if (!res_ok(r)) {
		*bad = r;
		return false;
	}
	if (PQntuples(r) > 0) {
		pg_cols(r, 0, c, mac);
		*id = c[0].i;
		*ok = ri_findings_row_verified(c);
		*keyless = !*ok && ri_findings_row_keyless(c);
		if (detail != NULL && c[12].type == SQLITE_TEXT)
			*detail = ri_strdup((const char *)c[12].s);
	}
	PQclear(r);
	return true;
}

/* (Re)MAC row id after ri wrote it (no key: the row stays unMACed). */
static bool
remac(struct ri_findings_pg *p, int64_t id, PGresult **bad)
{
	char sid[32], hex[2 * RI_HASH_LEN + 1];
	unsigned char mac[RI_HASH_LEN], got[RI_HASH_LEN];
	struct ri_fcol c[RI_FINDINGS_NCOLS];
	const char *v[2] = { sid, NULL };
	PGresult *r;

	i64(sid, sizeof sid, id);
	r = q(p, SEL " WHERE id = $1", 1, v);
	if (!res_ok(r)) {
		*bad = r;
		return false;
	}
	if (PQntuples(r) != 1) {
		PQclear(r);
		return true;
	}
	pg_cols(r, 0, c, got);
	ri_findings_row_mac(c, mac);
	PQclear(r);
	ri_hex(mac, sizeof mac, hex);
	v[0] = ri_findings_keyed() ? hex : NULL;
	v[1] = sid;
	return q_ok(p, "UPDATE findings SET mac = decode($1, 'hex') WHERE id = $2", 2, v, bad);
}

/* The id an INSERT ... RETURNING id answered. */
static bool
inserted(struct ri_findings_pg *p, const char *sql, int n, const char *const *v, int64_t *id, PGresult **bad)
{
	PGresult *r = q(p, sql, n, v);

	if (!res_ok(r) || PQntuples(r) != 1) {
		*bad = r;
		return false;
	}
	*id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return true;
}

int
ri_findings_pg_act(struct ri_findings_pg *p, enum ri_finding what, const char *kind,
    const char *act_key, const char *invocation_id, const char *by, ri_ms now, const char *detail, ri_err *err)
{
	char sid[32], snow[32];
	PGresult *bad = NULL;
	int64_t id;
	bool ok, keyless;

	i64(snow, sizeof snow, now);
	if (!begin_write(p, &bad))
		return pg_fail(p, bad, err);
	const char *sel[2] = { invocation_id, ri_finding_name(what) };
	if (!judge_one(p, SEL " WHERE scope = 'act' AND invocation_id = $1 AND finding = $2", 2, sel, &id, &ok,
	    &keyless, NULL, &bad))
		return pg_fail(p, bad, err);
	i64(sid, sizeof sid, id);
	if (id > 0 && ok) {
		/* findings 8: first seen never moves; the latest run's word does */
		const char *v[3] = { by, detail, sid };
		if (!q_ok(p, "UPDATE findings SET run_id = $1, detail = $2 WHERE id = $3", 3, v, &bad))
			return pg_fail(p, bad, err);
	} else if (id > 0) {
		/* a row that fails its MAC was never evidence: written over whole */
		const char *v[6] = { kind, act_key, by, snow, detail, sid };
		if (!q_ok(p, "UPDATE findings SET kind = $1, act_key = $2, first_seen = $3, first_seen_at = $4,"
		    " run_id = $3, detail = $5, last_seen = NULL, last_seen_at = NULL, closed_at = NULL WHERE id = $6",
		    6, v, &bad))
			return pg_fail(p, bad, err);
	} else {
		/* findings 12: one record per (invocation id, finding) -- decided
		 * under the register's write lock, so two hosts never both insert */
		const char *v[7] = { ri_finding_name(what), kind, act_key, invocation_id, by, snow, detail };
		if (!inserted(p, "INSERT INTO findings(finding, scope, kind, act_key, invocation_id, first_seen,"
		    " first_seen_at, run_id, detail) VALUES ($1, 'act', $2, $3, $4, $5, $6, $5, $7) RETURNING id",
		    7, v, &id, &bad))
			return pg_fail(p, bad, err);
	}
	if (!remac(p, id, &bad) || !commit(p, &bad))
		return pg_fail(p, bad, err);
	return RI_OK;
}

int
ri_findings_pg_run_begin(struct ri_findings_pg *p, const char *run_id, ri_ms now, ri_err *err)
{
	char snow[32];
	PGresult *bad = NULL;
	const char *v[2] = { run_id, snow };

	i64(snow, sizeof snow, now);
	/* runs are numbered in the order they begin, whichever host runs them */
	if (!begin_write(p, &bad) ||
	    !q_ok(p, "INSERT INTO findings_runs(run_id, started_at, seq)"
	    " VALUES ($1, $2, (SELECT coalesce(max(seq), 0) + 1 FROM findings_runs))", 2, v, &bad) ||
	    !commit(p, &bad))
		return pg_fail(p, bad, err);
	return RI_OK;
}

int
ri_findings_pg_instance(struct ri_findings_pg *p, enum ri_finding what, const char *kind,
    const char *run_id, ri_ms now, const char *detail, ri_err *err)
{
	char sid[32], snow[32];
	PGresult *bad = NULL;
	int64_t id;
	bool ok, keyless;

	i64(snow, sizeof snow, now);
	if (!begin_write(p, &bad))
		return pg_fail(p, bad, err);
	/* findings 9, 12: the one standing record of (finding, kind), read
	 * under the register's write lock: another host's run advances or
	 * opens it before or after this one, never beside it */
	const char *sel[2] = { ri_finding_name(what), kind ? kind : "" };
	if (!judge_one(p, SEL " WHERE scope = 'instance' AND closed_at IS NULL AND finding = $1"
	    " AND coalesce(kind, '') = $2", 2, sel, &id, &ok, &keyless, NULL, &bad))
		return pg_fail(p, bad, err);
	ri_fault("findings.decided");
	i64(sid, sizeof sid, id);
	if (id > 0 && ok) {
		/* findings 9: advance the standing record */
		const char *v[4] = { run_id, snow, detail, sid };
		if (!q_ok(p, "UPDATE findings SET last_seen = $1, last_seen_at = $2, run_id = $1, detail = $3"
		    " WHERE id = $4", 4, v, &bad))
			return pg_fail(p, bad, err);
	} else {
		if (id > 0) {
			/* a standing row that fails its MAC is no span of anything:
			 * closed as it stands (still unverified), and a new one opens */
			const char *v[1] = { sid };
			if (!q_ok(p, "UPDATE findings SET closed_at = first_seen_at WHERE id = $1", 1, v, &bad))
				return pg_fail(p, bad, err);
		}
		/* findings 7-8: first seen is set once, at the insert */
		const char *v[5] = { ri_finding_name(what), kind, run_id, snow, detail };
		if (!inserted(p, "INSERT INTO findings(finding, scope, kind, first_seen, first_seen_at, last_seen,"
		    " last_seen_at, run_id, detail) VALUES ($1, 'instance', $2, $3, $4, $3, $4, $3, $5) RETURNING id",
		    5, v, &id, &bad))
			return pg_fail(p, bad, err);
	}
	if (!remac(p, id, &bad) || !commit(p, &bad))
		return pg_fail(p, bad, err);
	return RI_OK;
}

int
ri_findings_pg_refusal(struct ri_findings_pg *p, const char *kind, const char *cause, const char *by,
    ri_ms now, json_t *entry, ri_err *err)
{
	char sid[32], snow[32], *text = NULL, *d;
	json_t *detail = NULL;
	PGresult *bad = NULL;
	int64_t id;
	bool ok, keyless;

	i64(snow, sizeof snow, now);
	if (!begin_write(p, &bad))
		return pg_fail(p, bad, err);
	const char *sel[2] = { ri_finding_name(RI_F_START_REFUSED), kind };
	if (!judge_one(p, SEL " WHERE scope = 'instance' AND finding = $1 AND coalesce(kind, '') = coalesce($2, '')"
	    " AND closed_at IS NULL ORDER BY id DESC LIMIT 1", 2, sel, &id, &ok, &keyless, &text, &bad))
		return pg_fail(p, bad, err);
	if (text != NULL)
		detail = json_loads(text, 0, NULL);
	free(text);
	/* a keyless refusal, met again while still keyless, is merged into;
	 * a row that fails its MAC otherwise is closed, staying unverified,
	 * and this refusal starts a new row (findings.c, ri_findings_refusal) */
	if (id > 0 && !ok && !(keyless && !ri_findings_keyed())) {
		i64(sid, sizeof sid, id);
		const char *v[2] = { snow, sid };
		if (!q_ok(p, "UPDATE findings SET closed_at = $1 WHERE id = $2", 2, v, &bad)) {
			json_decref(detail);
			return pg_fail(p, bad, err);
		}
		json_decref(detail);
		detail = NULL;
		id = 0;
	}
	if (!ri_findings_cause_add(&detail, cause, entry)) {
		/* once per cause: already on the register */
		json_decref(detail);
		if (!commit(p, &bad))
			return pg_fail(p, bad, err);
		return RI_OK;
	}
	d = ri_json_canonical(detail);
	json_decref(detail);
	if (id == 0) {
		const char *v[5] = { ri_finding_name(RI_F_START_REFUSED), kind, by, snow, d };
		ok = inserted(p, "INSERT INTO findings(finding, scope, kind, first_seen, first_seen_at, last_seen,"
		    " last_seen_at, run_id, detail) VALUES ($1, 'instance', $2, $3, $4, $3, $4, $3, $5) RETURNING id",
		    5, v, &id, &bad);
	} else {
		i64(sid, sizeof sid, id);
		const char *v[4] = { by, snow, d, sid };
		ok = q_ok(p, "UPDATE findings SET last_seen = $1, last_seen_at = $2, run_id = $1, detail = $3"
		    " WHERE id = $4", 4, v, &bad);
	}
	free(d);
	if (!ok || !remac(p, id, &bad) || !commit(p, &bad))
		return pg_fail(p, bad, err);
	return RI_OK;
}

int
ri_findings_pg_close_unseen(struct ri_findings_pg *p, ri_ms now, const char *const *seen, size_t n_seen,
    ri_err *err)
{
	char snow[32];
	PGresult *bad = NULL, *r;

	i64(snow, sizeof snow, now);
	if (!begin_write(p, &bad))
		return pg_fail(p, bad, err);
	r = q(p, SEL " WHERE scope = 'instance' AND closed_at IS NULL ORDER BY id", 0, NULL);
	if (!res_ok(r))
		return pg_fail(p, r, err);
	for (int i = 0; i < PQntuples(r); i++) {
		struct ri_fcol c[RI_FINDINGS_NCOLS];
		unsigned char mac[RI_HASH_LEN];
		char key[256], sid[32];
		bool was_seen = false;

		pg_cols(r, i, c, mac);
		snprintf(key, sizeof key, "%s\t%s", PQgetvalue(r, i, 1), PQgetisnull(r, i, 3) ? "" : PQgetvalue(r, i, 3));
		for (size_t j = 0; j < n_seen && !was_seen; j++)
			was_seen = strcmp(seen[j], key) == 0;
		if (was_seen)
			continue;
		/* findings 10a: last seen stays at the previous run that saw it;
		 * a row that fails its MAC is closed but stays unverified */
		bool ok = ri_findings_row_verified(c);
		i64(sid, sizeof sid, c[0].i);
		const char *v[2] = { snow, sid };
		if (!q_ok(p, "UPDATE findings SET closed_at = $1 WHERE id = $2", 2, v, &bad) ||
		    (ok && !remac(p, c[0].i, &bad))) {
			PQclear(r);
			return pg_fail(p, bad, err);
		}
	}
	PQclear(r);
	if (!commit(p, &bad))
		return pg_fail(p, bad, err);
	return RI_OK;
}

int64_t
ri_findings_pg_keyless(struct ri_findings_pg *p)
{
	PGresult *r;

	if (p->keyless >= 0 || p->keyless_failed)
		return p->keyless;
	r = q(p, "SELECT count(*) FROM findings WHERE " RI_FINDINGS_KEYLESS_SHAPE, 0, NULL);
	if (res_ok(r) && PQntuples(r) == 1)
		p->keyless = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	else    /* a register that cannot be counted (a lock held past the wait) is asked once */
		p->keyless_failed = true;
	PQclear(r);
	return p->keyless;
}

int
ri_findings_pg_each(struct ri_findings_pg *p, bool open_only, const char *kind,
    int (*each)(const struct ri_finding_row *, void *), void *arg, ri_err *err)
{
	char sql[512];
	const char *v[1] = { kind };
	bool excused = ri_findings_excused(ri_findings_pg_keyless(p));
	PGresult *r;

	snprintf(sql, sizeof sql, SEL " WHERE true %s %s ORDER BY id",
	    open_only ? "AND (scope = 'act' OR closed_at IS NULL)" : "", kind ? "AND kind = $1" : "");
	r = q(p, sql, kind ? 1 : 0, kind ? v : NULL);
	if (!res_ok(r))
		return pg_fail(p, r, err);
	for (int i = 0; i < PQntuples(r); i++) {
		struct ri_fcol c[RI_FINDINGS_NCOLS];
		unsigned char mac[RI_HASH_LEN];
		pg_cols(r, i, c, mac);
		if (ri_findings_emit(c, excused, each, arg) != 0)
			break;
	}
	PQclear(r);
	return RI_OK;
}
