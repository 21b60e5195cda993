/*
 * test_store.c -- the substrate ("Audit Trail": Event Log, Actor Identity,
 * Tamper Evidence, Retention Window) and the critical-section host
 * ("Lease") of lib/store/sqlite/store_sqlite.c and lib/store/pg/store_pg.c, through the storage
 * interface (store.h) only, on journals made by the real ri-init and
 * ri-actor.  The journal is SQLite's; with $RI_TEST_PG_HOST set (tests/pg/run,
 * make test-pg) every instance's journal and witness are new schemas of a
 * throwaway PostgreSQL server (testlib.h), and the same cases run there --
 * but for the few that work on the SQLite file itself, which say "skip -"
 * and why.
 *
 * Each case names the rule it proves.  The first failure stops the run
 * with file:line and a message; each passing case prints one "ok -" line.
 *
 * Tampering is done the way an attacker with file access would: a plain
 * sqlite3 connection, the append-only triggers dropped first and put back
 * after (ri refuses a journal whose schema is not its own at open).  On
 * PostgreSQL, the way its superuser would: a connection as "postgres", the
 * triggers not fired (session_replication_role = replica), the schema left
 * as it was.
 */
#include <sqlite3.h>
#include <sodium.h>
#include <time.h>

#include "testlib.h"
#include "store/heads.h"
#include "protocol/instance.h"
#include "util/integrity.h"
#include "store/pg/pq.h"
#include "store/store.h"

#define T0 1767225600000LL              /* 2026-01-01T00:00:00Z */
#define SEC 1000LL
#define DAY 86400000LL

static bool on_pg;                      /* $RI_TEST_PG_HOST: the journals are PostgreSQL's */

/* ---- helpers --------------------------------------------------------- */

static ri *
open_ri(const char *config, unsigned flags)
{
	ri *r = NULL;
	ri_err err = { 0 };
	int rc = ri_instance_open(config, flags, &r, &err);

	CHECK(rc == RI_OK, "ri_instance_open %s: %d %s", config, rc, err.msg);
	return r;
}

/* One record landed after head h, at seq (its out.seq): h + 1 -- or, on
 * PostgreSQL with shards, past a gap an append that rolled back left
 * (docs/POSTGRESQL.md, Shards). */
static int64_t head(ri *r);
static bool
landed_after(ri *r, int64_t h, int64_t seq)
{
	return head(r) == seq && (seq == h + 1 || (on_pg && seq > h));
}

static const struct ri_store_error *
st_err(ri *r)
{
	return r->st->ops->error(r->st);
}

static json_t *
js(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &je);

	CHECK(j != NULL, "bad JSON in the test: %s", text);
	return j;
}

struct ap {
	const char *action_ref, *act_key, *invocation_id, *actor_ref, *credential;
	const char *data;               /* JSON text; NULL: no data at all */
	const struct ri_fence *fence;
	const char *fault_tag;
};

static int
append(ri *r, const struct ap *a, struct ri_appended *out)
{
	struct ri_append req = {
		.action_ref = a->action_ref, .act_key = a->act_key,
		.invocation_id = a->invocation_id, .actor_ref = a->actor_ref,
		.credential = a->credential, .fence = a->fence, .fault_tag = a->fault_tag,
	};
	int rc;

	req.data = a->data ? js(a->data) : NULL;
	rc = r->st->ops->record_action(r->st, &req, out);
	json_decref(req.data);
	return rc;
}

/* A plain append that must succeed; its seq. */
static int64_t
append_ok(ri *r, const char *cred, const char *action_ref, const char *act_key,
    const char *inv, const char *data, struct ri_appended *outp)
{
	struct ri_appended out;
	struct ap a = { action_ref, act_key, inv, "alice", cred, data, NULL, NULL };
	int rc = append(r, &a, &out);

	CHECK(rc == RI_ST_OK, "append %s %s: %d %s", action_ref, inv ? inv : "-", rc, st_err(r)->msg);
	if (outp != NULL)
		*outp = out;
	return out.seq;
}

static int64_t
head(ri *r)
{
	int64_t seq = -1;
	unsigned char h[32];
	int rc = r->st->ops->head(r->st, &seq, h);

	CHECK(rc == RI_ST_OK, "head: %d %s", rc, st_err(r)->msg);
	return seq;
}

static int64_t
head_of(const char *config)
{
	ri *r = open_ri(config, 0);
	int64_t h = head(r);

	ri_instance_close(r);
	return h;
}

/* Read the whole journal ascending, page by page: every seq from 1 to the
 * head exactly once (on PostgreSQL with shards, every seq that committed:
 * ascending, gaps allowed).  Returns the count; fails the test on any
 * error. */
static int64_t
read_all(ri *r, size_t page)
{
	struct ri_query q = { .from = 1, .limit = page };
	int64_t n = 0, last = 0, h = head(r);

	for (;;) {
		struct ri_records rs;
		int rc = r->st->ops->range_read(r->st, &q, &rs);

		CHECK(rc == RI_ST_OK, "range read from %lld: %d %s", (long long)q.from, rc, st_err(r)->msg);
		for (size_t i = 0; i < rs.n; i++, n++) {
			CHECK(rs.v[i].seq == last + 1 || (on_pg && rs.v[i].seq > last), "range read: seq %lld after %lld",
			    (long long)rs.v[i].seq, (long long)last);
			last = rs.v[i].seq;
		}
		CHECK(rs.next == last + 1, "cursor %lld, want %lld", (long long)rs.next, (long long)(last + 1));
		bool more = rs.more;
		q.from = rs.next;
		ri_records_clear(&rs);
		if (!more)
			break;
	}
	CHECK(last == h, "read to seq %lld, head is %lld", (long long)last, (long long)h);
	return n;
}

/* The newest record (descending, one record). */
static void
newest(ri *r, struct ri_records *rs)
{
	struct ri_query q = { .from = 0, .limit = 1, .descending = true };
	int rc = r->st->ops->range_read(r->st, &q, rs);

	CHECK(rc == RI_ST_OK && rs->n == 1, "newest record: %d %s", rc, st_err(r)->msg);
}

/* The store failed closed and named the record (seq or event id). */
static void
expect_integrity(ri *r, int rc, struct ri_records *rs, const char *what)
{
	const struct ri_store_error *e = st_err(r);

	CHECK(rc == RI_ST_INTEGRITY, "%s: answered %d, want RI_ST_INTEGRITY (%s)", what, rc, e->msg);
	CHECK(e->seq > 0 || e->event_id[0] != '\0', "%s: the error names no record: %s", what, e->msg);
	CHECK(strstr(e->msg, "integrity") != NULL, "%s: message: %s", what, e->msg);
	if (rs != NULL)
		CHECK(rs->n == 0 && rs->v == NULL, "%s: a failed read returned %zu records", what, rs->n);
}

static double
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* ---- the attacker ------------------------------------------------------ */

/* The attacker's connection: a plain sqlite3 one on the file, or the
 * PostgreSQL superuser's on the instance's schema. */
struct atk {
	sqlite3 *db;
	PGconn *pg;
	long changes;                   /* rows the last statement changed */
};

/* The triggers as ri-init made them, so the attacker can put them back:
 * what is judged is then the tampered data, not a schema ri refuses at
 * open (that refusal has its own case). */
static char attacker_triggers[8192];

static struct atk *
attacker(const struct tl_instance *ti, bool drop_triggers)
{
	struct atk *a = calloc(1, sizeof *a);
	char p[PATH_MAX + 16];
	sqlite3_stmt *st;

	CHECK(a != NULL, "calloc");
	if (on_pg) {
		char db[64], schema[64], conninfo[PATH_MAX + 256];
		ri_err err = { 0 };
		PGresult *r;

		CHECK(ri_pq_load("journal", &err), "libpq: %s", err.msg);
		tl_pg_where(ti->config, "journal", db, schema);
		tl_fmt(conninfo, sizeof conninfo, "host=%s user=postgres dbname=%s options='-csearch_path=%s'",
		    tl_pg_host(), db, schema);
		a->pg = PQconnectdb(conninfo);
		CHECK(PQstatus(a->pg) == CONNECTION_OK, "connect %s: %s", conninfo, PQerrorMessage(a->pg));
		/* the superuser's way past the append-only triggers, the schema
		 * (and its fingerprint) untouched */
		r = PQexec(a->pg, drop_triggers ? "SET session_replication_role = replica" : "SELECT 1");
		CHECK(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK, "replica: %s",
		    PQerrorMessage(a->pg));
		PQclear(r);
		/* the attacker lives at the test's instant, as ri does ("clock":
		 * "env": open_pg.c ri_clock), not at the server's */
		const char *now = getenv("RI_NOW");
		if (now != NULL) {
			char q[128];
			tl_fmt(q, sizeof q, "SET ri.clock = '%lld'", strtoll(now, NULL, 10));
			r = PQexec(a->pg, q);
			CHECK(PQresultStatus(r) == PGRES_COMMAND_OK, "%s: %s", q, PQerrorMessage(a->pg));
			PQclear(r);
		}
		return a;
	}
	snprintf(p, sizeof p, "%s/journal.db", ti->dir);
	CHECK(sqlite3_open(p, &a->db) == SQLITE_OK, "sqlite3_open %s", p);
	attacker_triggers[0] = '\0';
	CHECK(sqlite3_prepare_v2(a->db, "SELECT sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name", -1, &st,
	    NULL) == SQLITE_OK, "triggers");
	while (sqlite3_step(st) == SQLITE_ROW) {
		size_t n = strlen(attacker_triggers);
		snprintf(attacker_triggers + n, sizeof attacker_triggers - n, "%s;", sqlite3_column_text(st, 0));
	}
	sqlite3_finalize(st);
	if (drop_triggers)
		CHECK(sqlite3_exec(a->db, "DROP TRIGGER records_append_only_update;"
		    "DROP TRIGGER records_append_only_delete;", NULL, NULL, NULL) == SQLITE_OK,
		    "drop triggers: %s", sqlite3_errmsg(a->db));
	return a;
}

/* The attacker's last move: the triggers back as they were, then gone. */
static void
attacker_close(struct atk *a)
{
	sqlite3_stmt *st;
	int n = 0;

	if (a->pg != NULL) {
		PQfinish(a->pg);
		free(a);
		return;
	}
	CHECK(sqlite3_prepare_v2(a->db, "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'", -1, &st, NULL) ==
	    SQLITE_OK && sqlite3_step(st) == SQLITE_ROW, "triggers");
	n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (n == 0)
		CHECK(sqlite3_exec(a->db, attacker_triggers, NULL, NULL, NULL) == SQLITE_OK, "restore triggers: %s",
		    sqlite3_errmsg(a->db));
	sqlite3_close(a->db);
	free(a);
}

/* Run q; false (and the reason in why) when the database refused it. */
static bool
sql_try(struct atk *a, const char *q, char *why, size_t n)
{
	if (a->pg != NULL) {
		PGresult *r = PQexec(a->pg, q);
		ExecStatusType t = PQresultStatus(r);
		bool ok = t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK;
		snprintf(why, n, "%s", ok ? "" : PQresultErrorMessage(r));
		a->changes = ok ? atol(PQcmdTuples(r)) : 0;
		PQclear(r);
		return ok;
	}
	char *msg = NULL;
	bool ok = sqlite3_exec(a->db, q, NULL, NULL, &msg) == SQLITE_OK;
	snprintf(why, n, "%s", msg ? msg : "");
	sqlite3_free(msg);
	a->changes = ok ? sqlite3_changes(a->db) : 0;
	return ok;
}

static void
sql(struct atk *a, const char *q)
{
	char why[512];

	CHECK(sql_try(a, q, why, sizeof why), "%s: %s", q, why);
}

/* The text of each column of a query's one row (NULL: SQL NULL). */
static void
row_vals(struct atk *a, const char *q, char v[][256], bool null[], int ncols)
{
	if (a->pg != NULL) {
		PGresult *r = PQexec(a->pg, q);
		CHECK(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1, "%s: %s", q, PQresultErrorMessage(r));
		for (int i = 0; i < ncols; i++) {
			null[i] = PQgetisnull(r, 0, i);
			snprintf(v[i], 256, "%s", null[i] ? "" : PQgetvalue(r, 0, i));
		}
		PQclear(r);
		return;
	}
	sqlite3_stmt *st;
	CHECK(sqlite3_prepare_v2(a->db, q, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW, "%s: %s", q,
	    sqlite3_errmsg(a->db));
	for (int i = 0; i < ncols; i++) {
		null[i] = sqlite3_column_type(st, i) == SQLITE_NULL;
		snprintf(v[i], 256, "%s", null[i] ? "" : (const char *)sqlite3_column_text(st, i));
	}
	sqlite3_finalize(st);
}

/* One text value of a query (the attacker reading the file). */
static void
row_text(struct atk *a, const char *q, char *out, size_t n)
{
	if (a->pg != NULL) {
		PGresult *r = PQexec(a->pg, q);
		CHECK(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1, "%s: %s", q, PQresultErrorMessage(r));
		snprintf(out, n, "%s", PQgetvalue(r, 0, 0));
		PQclear(r);
		return;
	}
	sqlite3_stmt *st;

	CHECK(sqlite3_prepare_v2(a->db, q, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW, "%s: %s", q,
	    sqlite3_errmsg(a->db));
	snprintf(out, n, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

/* SQL for a column's bytes as hex, and for a hex literal's bytes */
#define HEX(col) (on_pg ? "encode(" col ", 'hex')" : "hex(" col ")")
#define BLOB_PRE (on_pg ? "'\\x" : "X'")
#define BLOB_POST (on_pg ? "'::bytea" : "'")

/* Flip one bit of a byte of a column: text (at byte `at`, -1 = the middle
 * of "abcdef" in a payload), blob (byte 0) or integer (+1). */
static void
flip_pg(struct atk *a, const char *col, int64_t seq, int at)
{
	char q[512], type[64];

	snprintf(q, sizeof q, "SELECT pg_typeof(%s)::text FROM records WHERE seq = %lld", col, (long long)seq);
	row_text(a, q, type, sizeof type);
	if (strcmp(type, "bigint") == 0 || strcmp(type, "integer") == 0) {
		snprintf(q, sizeof q, "UPDATE records SET %s = %s + 1 WHERE seq = %lld", col, col, (long long)seq);
	} else if (strcmp(type, "text") == 0) {
		char pos[128];
		if (at < 0)
			snprintf(pos, sizeof pos, "position('abcdef' in %s) + 2", col);
		else
			snprintf(pos, sizeof pos, "%d", at + 1);
		CHECK(at >= 0 || strcmp(col, "payload") == 0, "no abcdef in %s", col);
		snprintf(q, sizeof q, "UPDATE records SET %s = overlay(%s placing chr(ascii(substr(%s, %s, 1)) # 32)"
		    " from %s for 1) WHERE seq = %lld", col, col, col, pos, pos, (long long)seq);
	} else {
		CHECK(strcmp(type, "bytea") == 0, "column %s is %s", col, type);
		snprintf(q, sizeof q, "UPDATE records SET %s = set_byte(%s, 0, get_byte(%s, 0) # 1) WHERE seq = %lld",
		    col, col, col, (long long)seq);
	}
	sql(a, q);
	CHECK(a->changes == 1, "%s: %ld rows", q, a->changes);
}

static void
flip(struct atk *a, const char *col, int64_t seq, int at)
{
	char q[256];
	sqlite3_stmt *st;
	sqlite3 *db = a->db;

	if (a->pg != NULL) {
		flip_pg(a, col, seq, at);
		return;
	}
	snprintf(q, sizeof q, "SELECT %s FROM records WHERE seq = %lld", col, (long long)seq);
	CHECK(sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW, "%s", q);
	int type = sqlite3_column_type(st, 0);
	int n = sqlite3_column_bytes(st, 0);
	unsigned char *buf = malloc((size_t)n + 1);
	memcpy(buf, sqlite3_column_blob(st, 0), (size_t)n);
	buf[n] = '\0';
	int64_t iv = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	snprintf(q, sizeof q, "UPDATE records SET %s = ? WHERE seq = %lld", col, (long long)seq);
	CHECK(sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK, "%s", q);
	if (type == SQLITE_INTEGER) {
		sqlite3_bind_int64(st, 1, iv + 1);
	} else if (type == SQLITE_TEXT) {
		if (at < 0) {
			char *p = strstr((char *)buf, "abcdef");
			CHECK(p != NULL, "no abcdef in %s", buf);
			at = (int)(p - (char *)buf) + 2;
		}
		buf[at] ^= 0x20;
		sqlite3_bind_text(st, 1, (const char *)buf, n, SQLITE_TRANSIENT);
	} else {
		buf[0] ^= 0x01;
		sqlite3_bind_blob(st, 1, buf, n, SQLITE_TRANSIENT);
	}
	CHECK(sqlite3_step(st) == SQLITE_DONE && sqlite3_changes(db) == 1, "%s: %s", q, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	free(buf);
}

/* ---- 1. record_action: every arm ------------------------------------- */

/* One append in a fresh process with $RI_FAULT armed (the fault module
 * keeps per-process state); the child opens its own connection, the
 * parent holds none across the fork.  Returns the child's answer. */
static int
fault_append(const char *config, const char *cred, const char *spec, const char *marker)
{
	pid_t pid;

	fflush(NULL);
	CHECK((pid = fork()) >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		ri *r;
		ri_err err = { 0 };
		struct ri_appended out;
		char data[256];
		int rc;

		setenv("RI_FAULT", spec, 1);
		if (ri_instance_open(config, 0, &r, &err) != RI_OK) {
			fprintf(stderr, "child %s: open: %s\n", spec, err.msg);
			_exit(100);
		}
		snprintf(data, sizeof data, "{\"marker\":\"%s\"}", marker);
		struct ap a = { "ledger.intended", "fk", NULL, "alice", cred, data, NULL, "open.intent" };
		rc = append(r, &a, &out);
		if (rc == RI_ST_INVALID_REQUEST && strcmp(out.cause, "retention") != 0)
			rc = 101;
		ri_instance_close(r);
		_exit(rc);
	}
	return tl_wait(pid);
}

static void
expect_newest_marker(const char *config, const char *marker, bool want)
{
	ri *r = open_ri(config, 0);
	struct ri_records rs;

	newest(r, &rs);
	json_t *m = rs.v[0].payload ? json_object_get(rs.v[0].payload, "marker") : NULL;
	bool have = m != NULL && strcmp(json_string_value(m), marker) == 0;
	CHECK(have == want, "marker %s: the newest record is %s", marker, rs.v[0].action_ref);
	ri_records_clear(&rs);
	read_all(r, 0);
	ri_instance_close(r);
}

static void
test_record_action(void)
{
	struct tl_instance ti;
	struct tl_cfg cfg = { .faults = true, .fence = "declared", .payload_cap = 2048,
		.kinds = TL_KIND("ledger", "400d") };
	struct ri_appended out;
	struct ri_record rec;
	int64_t h;
	int rc;

	tl_now(T0);
	tl_instance(&ti, "arms", &cfg);
	ri *r = open_ri(ti.config, 0);

	/* record_action OK: event id, seq and recorded_at minted by the substrate */
	h = head(r);
	tl_now(T0 + 1234);
	struct ap ok = { "ledger.intended", "k1", "inv_ok", "alice", ti.cred, "{\"amount\":5}", NULL, NULL };
	rc = append(r, &ok, &out);
	CHECK(rc == RI_ST_OK, "append: %d %s", rc, st_err(r)->msg);
	CHECK(strncmp(out.event_id, "evt_", 4) == 0 && strlen(out.event_id) == RI_ID_LEN,
	    "event id %s", out.event_id);
	CHECK(landed_after(r, h, out.seq), "seq %lld after head %lld", (long long)out.seq, (long long)h);
	CHECK(out.recorded_at == T0 + 1234, "recorded_at %lld is not RI_NOW", (long long)out.recorded_at);
	rc = r->st->ops->read_record(r->st, out.event_id, &rec);
	CHECK(rc == RI_ST_OK && rec.recorded_at == T0 + 1234 && rec.seq == out.seq,
	    "read back: %d %s", rc, st_err(r)->msg);
	ri_record_clear(&rec);
	/* the substrate stamps recorded_at, never earlier than the record before */
	tl_now(T0 + 1000);
	append_ok(r, ti.cred, "ledger.intended", "k1", "inv_ok2", "{}", &out);
	CHECK(out.recorded_at == T0 + 1234, "recorded_at went backwards: %lld", (long long)out.recorded_at);
	tl_now(T0 + 2000);
	PASS("record_action OK: event id, seq and recorded_at stamped by the substrate from the clock (Event Log)");

	/* invalid-credential: wrong credential, unknown actor -- nothing written */
	h = head(r);
	struct ap bad = ok;
	bad.credential = "ri1_0000000000000000000000000000000000000000000000000000000000000000";
	rc = append(r, &bad, &out);
	CHECK(rc == RI_ST_INVALID_CREDENTIAL, "wrong credential: %d", rc);
	bad = ok;
	bad.actor_ref = "mallory";
	rc = append(r, &bad, &out);
	CHECK(rc == RI_ST_INVALID_CREDENTIAL, "unknown actor: %d", rc);
	CHECK(head(r) == h, "an invalid credential wrote a record");
	PASS("record_action invalid-credential: a wrong credential and an unknown actor, nothing written (Actor Identity)");

	/* invalid-credential from the instant of revocation on */
	char bobcred[128], dup[128];
	rc = r->st->ops->actor_add(r->st, "bob", false, bobcred);
	CHECK(rc == RI_ST_OK, "actor_add bob: %d %s", rc, st_err(r)->msg);
	rc = r->st->ops->actor_add(r->st, "bob", false, dup);
	CHECK(rc == RI_ST_EXISTS, "a second bob: %d", rc);
	struct ap byb = ok;
	byb.actor_ref = "bob";
	byb.credential = bobcred;
	rc = append(r, &byb, &out);
	CHECK(rc == RI_ST_OK, "bob before revocation: %d %s", rc, st_err(r)->msg);
	tl_now(T0 + 3000);
	rc = r->st->ops->actor_revoke(r->st, "bob");
	CHECK(rc == RI_ST_OK, "revoke bob: %d %s", rc, st_err(r)->msg);
	h = head(r);
	rc = append(r, &byb, &out);
	CHECK(rc == RI_ST_INVALID_CREDENTIAL, "bob at the instant of revocation: %d", rc);
	tl_now(T0 + 3001);
	rc = append(r, &byb, &out);
	CHECK(rc == RI_ST_INVALID_CREDENTIAL, "bob after revocation: %d", rc);
	CHECK(head(r) == h, "a revoked actor wrote a record");
	CHECK(r->st->ops->actor_revoke(r->st, "bob") == RI_ST_OK && head(r) == h, "a second revoke is not idempotent");
	rc = r->st->ops->actor_revoke(r->st, "nobody");
	CHECK(rc == RI_ST_NOT_KNOWN, "revoke of an unknown actor: %d", rc);
	PASS("record_action invalid-credential: a revoked actor fails from that instant on (Actor Identity)");

	/* invalid-request "malformed": nothing written */
	h = head(r);
	static const struct { const char *action, *actor, *cred, *data, *why; } mal[] = {
		{ "ledger.intended", "", "x", "{}", "empty actor" },
		{ "ledger.intended", "alice", "", "{}", "empty credential" },
		{ "ledger.intended", NULL, "x", "{}", "no actor" },
		{ "ledgerintended", "alice", NULL, "{}", "action ref without a dot" },
		{ ".intended", "alice", NULL, "{}", "action ref with an empty kind" },
		{ "ledger.", "alice", NULL, "{}", "action ref with an empty name" },
		{ "ledger.intended", "alice", NULL, "[1,2]", "non-object data" },
		{ "ledger.intended", "alice", NULL, "\"text\"", "non-object data (string)" },
		{ "ledger.intended", "alice", NULL, NULL, "no data" },
	};
	for (size_t i = 0; i < sizeof mal / sizeof mal[0]; i++) {
		struct ap m = { mal[i].action, "k1", NULL, mal[i].actor,
			mal[i].cred ? mal[i].cred : ti.cred, mal[i].data, NULL, NULL };
		memset(&out, 0, sizeof out);
		rc = append(r, &m, &out);
		CHECK(rc == RI_ST_INVALID_REQUEST && strcmp(out.cause, "malformed") == 0,
		    "%s: %d cause \"%s\"", mal[i].why, rc, out.cause);
	}
	CHECK(head(r) == h, "a malformed request wrote a record");
	PASS("record_action invalid-request(malformed): empty actor/credential, bad action ref, non-object data; nothing written");

	/* invalid-request "vocabulary" (journal 2-5, the closings issue's
	 * ruling: a writer appends only its kind's vocabulary): nothing written */
	h = head(r);
	static const struct { const char *action, *why; } voc[] = {
		{ "ledger.note", "a ref outside the kind's vocabulary" },
		{ "ledger.disclosed_twice", "an outcome the kind does not bind" },
		{ "other.intended", "a kind the instance does not bind" },
		{ "audit.x", "the substrate's reserved audit. prefix" },
	};
	for (size_t i = 0; i < sizeof voc / sizeof voc[0]; i++) {
		struct ap m = { voc[i].action, "k1", "inv_voc", "alice", ti.cred, "{}", NULL, NULL };
		memset(&out, 0, sizeof out);
		rc = append(r, &m, &out);
		CHECK(rc == RI_ST_INVALID_REQUEST && strcmp(out.cause, "vocabulary") == 0,
		    "%s: %d cause \"%s\"", voc[i].why, rc, out.cause);
	}
	CHECK(head(r) == h, "a ref outside the vocabulary wrote a record");
	PASS("record_action invalid-request(vocabulary): outside the kind's refs, an unbound kind, audit.*; nothing written (journal 2-5)");

	/* invalid-request "payload-cap" (2048 bytes here): nothing written */
	{
		char big[4096];
		snprintf(big, sizeof big, "{\"blob\":\"%0*d\"}", 2100, 0);
		struct ap m = { "ledger.intended", "k1", "inv_big", "alice", ti.cred, big, NULL, NULL };
		rc = append(r, &m, &out);
		CHECK(rc == RI_ST_INVALID_REQUEST && strcmp(out.cause, "payload-cap") == 0,
		    "payload over the cap: %d cause \"%s\"", rc, out.cause);
		CHECK(head(r) == h, "an over-cap payload wrote a record");
		snprintf(big, sizeof big, "{\"blob\":\"%0*d\"}", 1500, 0);
		m.data = big;
		rc = append(r, &m, &out);
		CHECK(rc == RI_ST_OK, "a payload under the cap: %d %s", rc, st_err(r)->msg);
	}
	PASS("record_action invalid-request(payload-cap): a payload over payload_cap, nothing written");

	/* journal fence 1, Allowance 7-10 ("journal_fence": "declared") */
	struct ri_grant g;
	tl_now(T0 + 10 * SEC);
	rc = r->st->ops->take(r->st, "ledger", "fk1", "h1", 30 * SEC, &g);
	CHECK(rc == RI_ST_OK && g.expires_at == T0 + 40 * SEC, "take: %d", rc);
	h = head(r);
	struct ri_fence f = { "h2", T0 + 10 * SEC };
	struct ap fa = { "ledger.intended", "fk1", "inv_f", "alice", ti.cred, "{}", &f, NULL };
	rc = append(r, &fa, &out);
	CHECK(rc == RI_ST_FENCED && head(r) == h, "a non-holder's fenced append: %d", rc);
	f.holder = "h1";
	rc = append(r, &fa, &out);
	CHECK(rc == RI_ST_OK && landed_after(r, h, out.seq), "the holder's fenced append: %d %s", rc, st_err(r)->msg);
	/* lease terminus: now >= expires_at - allowance (40 - 2 = 38 s) */
	tl_now(T0 + 38 * SEC - 1);
	f.issue = T0 + 38 * SEC - 1;
	rc = append(r, &fa, &out);
	CHECK(rc == RI_ST_OK, "one ms before the lease terminus: %d %s", rc, st_err(r)->msg);
	h = head(r);
	tl_now(T0 + 38 * SEC);
	f.issue = T0 + 38 * SEC;
	rc = append(r, &fa, &out);
	CHECK(rc == RI_ST_FENCED && head(r) == h, "at the lease terminus: %d", rc);
	/* write terminus: issue + journal_write_bound - allowance (3 - 2 = 1 s) <= now */
	tl_now(T0 + 20 * SEC);
	f.issue = T0 + 19 * SEC;
	rc = append(r, &fa, &out);
	CHECK(rc == RI_ST_FENCED && head(r) == h, "at the write terminus: %d", rc);
	f.issue = T0 + 19 * SEC + 1;
	rc = append(r, &fa, &out);
	CHECK(rc == RI_ST_OK && landed_after(r, h, out.seq), "one ms before the write terminus: %d %s", rc, st_err(r)->msg);
	/* the lease expired and another holder took it: the old holder is fenced */
	tl_now(T0 + 40 * SEC);
	rc = r->st->ops->take(r->st, "ledger", "fk1", "h2", 30 * SEC, &g);
	CHECK(rc == RI_ST_OK && g.token == 2, "h2 takes: %d", rc);
	h = head(r);
	f.holder = "h1";
	f.issue = T0 + 40 * SEC;
	rc = append(r, &fa, &out);
	CHECK(rc == RI_ST_FENCED && head(r) == h, "the expired holder's append: %d", rc);
	PASS("record_action fenced: non-holder, lease terminus (expires_at - allowance) and write terminus, at their instants (journal fence 1)");
	ri_instance_close(r);

	/* the fault points reach the recording-failure arms and the lost reply */
	static const struct { const char *spec; int want; bool written; const char *arm; } faults[] = {
		{ "open.intent.before=fail", RI_ST_STEP2, false, "step-2" },
		{ "open.intent.before=fail3", RI_ST_STEP3, false, "step-3" },
		{ "open.intent.after=fail", RI_ST_STEP4, true, "step-4" },
		{ "open.intent.after=lose", RI_ST_LOST, true, "lost reply, landed" },
		{ "open.intent.before=lose", RI_ST_LOST, false, "lost reply, not landed" },
		{ "open.intent.before=noretention", RI_ST_INVALID_REQUEST, true, "retention unplaced" },
		{ "open.intent.after=fail@2", RI_ST_OK, true, "armed for the 2nd pass only" },
	};
	for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
		char marker[32];
		snprintf(marker, sizeof marker, "fault-%zu", i);
		h = head_of(ti.config);
		rc = fault_append(ti.config, ti.cred, faults[i].spec, marker);
		CHECK(rc == faults[i].want, "RI_FAULT=%s: answered %d, want %d", faults[i].spec, rc, faults[i].want);
		int64_t now_h = head_of(ti.config);
		CHECK(faults[i].written ? now_h == h + 1 || (on_pg && now_h > h) : now_h == h,
		    "RI_FAULT=%s: written is wrong", faults[i].spec);
		expect_newest_marker(ti.config, marker, faults[i].written);
		PASS("record_action %s via RI_FAULT=%s: answer %d, %s", faults[i].arm, faults[i].spec, rc,
		    faults[i].written ? "written" : "nothing written");
	}

	/* a read-only journal: step-2, no crash */
	r = open_ri(ti.config, RI_READONLY);
	h = head(r);
	rc = append(r, &ok, &out);
	CHECK(rc == RI_ST_STEP2, "append on a read-only journal: %d %s", rc, st_err(r)->msg);
	CHECK(head(r) == h, "the read-only journal grew");
	ri_instance_close(r);
	if (on_pg) {
		SKIP("record_action step-2 on a 0444 journal: the SQLite file's mode (PostgreSQL: no file)");
	} else if (geteuid() != 0) {
		char p[PATH_MAX + 16];
		static const char *const sfx[] = { "", "-wal", "-shm" };
		for (size_t i = 0; i < 3; i++) {
			snprintf(p, sizeof p, "%s/journal.db%s", ti.dir, sfx[i]);
			chmod(p, 0444);
		}
		ri *ro = NULL;
		ri_err err;
		if (ri_instance_open(ti.config, 0, &ro, &err) == RI_OK) {
			rc = append(ro, &ok, &out);
			CHECK(rc == RI_ST_STEP2, "append on a 0444 journal: %d", rc);
			ri_instance_close(ro);
		}
		for (size_t i = 0; i < 3; i++) {
			snprintf(p, sizeof p, "%s/journal.db%s", ti.dir, sfx[i]);
			chmod(p, 0600);
		}
	}
	PASS("record_action step-2 on a read-only journal, no crash");

	/* a missing journal: journal-unavailable from ri_instance_open */
	if (on_pg) {
		SKIP("a missing journal: the SQLite file unlinked (PostgreSQL: no file)");
	} else {
		struct tl_instance tm;
		char p[PATH_MAX + 16];
		ri *m = NULL;
		ri_err err = { 0 };
		tl_clone(&ti, &tm, "missing");
		static const char *const sfx[] = { "", "-wal", "-shm" };
		for (size_t i = 0; i < 3; i++) {
			snprintf(p, sizeof p, "%s/journal.db%s", tm.dir, sfx[i]);
			unlink(p);
		}
		rc = ri_instance_open(tm.config, 0, &m, &err);
		CHECK(rc == RI_JOURNAL_UNAVAILABLE && m == NULL, "missing journal: %d %s", rc, err.msg);
		CHECK(strstr(err.msg, "journal.db") != NULL, "the message names no journal: %s", err.msg);
		snprintf(p, sizeof p, "%s/journal.db", tm.dir);
		CHECK(access(p, F_OK) != 0, "opening a missing journal created one");
		PASS("a missing journal: ri_instance_open answers journal-unavailable and creates nothing");
	}

	/* a journal locked by another connection longer than the busy timeout */
	{
		struct tl_instance tl;
		struct tl_cfg lc = cfg;
		struct atk *db;
		/* a fenced write waits for the lock at most its budget:
		 * journal_write_bound - allowance = 2200 - 2000 = 200 ms */
		lc.journal_write_bound = "2200ms";
		lc.read_bound = "200ms";
		tl_instance(&tl, "locked", &lc);
		r = open_ri(tl.config, 0);
		h = head(r);
		db = attacker(&tl, false);
		/* PostgreSQL: every write takes the journal head row first
		 * (store_pg.c, lock order); its wait is the session's lock_timeout */
		sql(db, on_pg ? "BEGIN; SELECT 1 FROM heads FOR UPDATE" : "BEGIN EXCLUSIVE");
		double t = mono_ms();
		struct ap la = { "ledger.intended", "k1", "inv_locked", "alice", tl.cred, "{}", NULL, NULL };
		rc = append(r, &la, &out);
		double el = mono_ms() - t;
		CHECK(rc == RI_ST_STEP2, "append on a locked journal: %d %s", rc, st_err(r)->msg);
		CHECK(el >= 150 && el < 2000, "the locked append waited %.0f ms (busy timeout 200 ms)", el);
		sql(db, "ROLLBACK");
		attacker_close(db);
		CHECK(head(r) == h, "a partial record landed");
		read_all(r, 0);
		rc = append(r, &la, &out);
		CHECK(rc == RI_ST_OK && landed_after(r, h, out.seq), "append once the lock is gone: %d", rc);
		ri_instance_close(r);
		PASS("record_action step-2 on a journal locked past the busy timeout (%.0f ms), no partial record", el);
	}
}

/* ---- 2. read_record ---------------------------------------------------- */

static void
test_read_record(void)
{
	struct tl_instance ti;
	struct tl_cfg cfg = { .kinds = TL_KIND("ledger", "1d") };
	struct ri_appended out;
	struct ri_record rec;
	int64_t purged;
	int rc;

	tl_now(T0);
	tl_instance(&ti, "read", &cfg);
	ri *r = open_ri(ti.config, 0);
	tl_now(T0 + 5);
	append_ok(r, ti.cred, "ledger.intended", "k1", "inv_r1", "{\"amount\":5,\"who\":\"x\"}", &out);

	rc = r->st->ops->read_record(r->st, out.event_id, &rec);
	CHECK(rc == RI_ST_OK, "read_record: %d %s", rc, st_err(r)->msg);
	CHECK(rec.seq == out.seq && strcmp(rec.event_id, out.event_id) == 0, "seq/event id");
	CHECK_STR(rec.action_ref, "ledger.intended");
	CHECK_STR(rec.kind, "ledger");
	CHECK_STR(rec.act_key, "k1");
	CHECK_STR(rec.invocation_id, "inv_r1");
	CHECK_STR(rec.actor_ref, "alice");
	CHECK(strncmp(rec.attestation_id, "att_", 4) == 0, "attestation id %s", rec.attestation_id);
	CHECK(rec.recorded_at == T0 + 5 && rec.retention_until == T0 + 5 + DAY, "instants");
	CHECK(rec.role == RI_ROLE_INTENT && !rec.purged, "role/purged");
	json_t *want = js("{\"amount\":5,\"who\":\"x\"}");
	CHECK(rec.payload != NULL && json_equal(rec.payload, want), "payload differs");
	CHECK(rec.payload_bytes == strlen("{\"amount\":5,\"who\":\"x\"}"), "payload_bytes %zu", rec.payload_bytes);
	json_decref(want);
	ri_record_clear(&rec);
	PASS("read_record: the record, every field as appended (Event Log)");

	rc = r->st->ops->read_record(r->st, "evt_00000000000000000000000000000000", &rec);
	CHECK(rc == RI_ST_NOT_KNOWN, "unknown event id: %d", rc);
	rc = r->st->ops->read_record(r->st, "", &rec);
	CHECK(rc == RI_ST_NOT_KNOWN, "empty event id: %d", rc);
	PASS("read_record: an unknown event id is not-known");

	/* retention ends at recorded_at + 1d: one ms before, nothing goes */
	tl_now(T0 + 5 + DAY - 1);
	rc = r->st->ops->purge(r->st, T0 + 5 + DAY - 1, &purged);
	CHECK(rc == RI_ST_OK && purged == 0, "purge before retention ended: %d %lld", rc, (long long)purged);
	tl_now(T0 + 5 + DAY);
	rc = r->st->ops->purge(r->st, T0 + 5 + DAY, &purged);
	CHECK(rc == RI_ST_OK && purged == 1, "purge at retention's end: %d %lld", rc, (long long)purged);
	rc = r->st->ops->read_record(r->st, out.event_id, &rec);
	CHECK(rc == RI_ST_PURGED && rec.purged && rec.payload == NULL && rec.payload_bytes == 0,
	    "after purge: %d %s", rc, st_err(r)->msg);
	CHECK(rec.seq == out.seq && strcmp(rec.action_ref, "ledger.intended") == 0 &&
	    strcmp(rec.invocation_id, "inv_r1") == 0, "a purged record keeps its header");
	ri_record_clear(&rec);
	PASS("read_record: purged once retention ended (at recorded_at + retention_period, not a ms before)");
	ri_instance_close(r);
}

/* ---- 3. range read ------------------------------------------------------- */

static void
test_range_read(void)
{
	struct tl_instance ti;
	/* one shard: these invocations span acts, which no protocol writer
	 * makes, and an invocation's scope lives in its act's shard */
	struct tl_cfg cfg = { .shards = 1 };
	struct ri_query q;
	struct ri_records rs;
	int rc;
	int64_t h, n_x = 0, n_k = 0;

	tl_now(T0);
	tl_instance(&ti, "range", &cfg);
	ri *r = open_ri(ti.config, 0);
	for (int i = 0; i < 60; i++) {
		char inv[32], key[32];
		snprintf(inv, sizeof inv, "%s", i % 3 == 0 ? "inv_X" : i % 3 == 1 ? "inv_Y" : "inv_Z");
		snprintf(key, sizeof key, "k%d", i % 4);
		if (i % 3 == 0)
			n_x++;
		if (i % 4 == 1)
			n_k++;
		append_ok(r, ti.cred, i % 2 ? "ledger.disclosed" : "ledger.intended", key, inv, "{}", NULL);
	}
	h = head(r);
	CHECK(h == 62, "head %lld", (long long)h);        /* the genesis seal, alice, 60 */

	/* from a seq, no upper bound, a page size, the cursor, page-complete */
	q = (struct ri_query){ .from = 1, .limit = 10 };
	rc = r->st->ops->range_read(r->st, &q, &rs);
	CHECK(rc == RI_ST_OK && rs.n == 10 && rs.more && rs.next == 11 && rs.v[0].seq == 1 && rs.v[9].seq == 10,
	    "first page: %d n %zu more %d next %lld", rc, rs.n, rs.more, (long long)rs.next);
	ri_records_clear(&rs);
	q.from = 55;
	rc = r->st->ops->range_read(r->st, &q, &rs);
	CHECK(rc == RI_ST_OK && rs.n == 8 && !rs.more && rs.next == 63 && rs.v[7].seq == 62,
	    "last page: %d n %zu more %d next %lld", rc, rs.n, rs.more, (long long)rs.next);
	ri_records_clear(&rs);
	q.from = 53;
	q.limit = 10;
	rc = r->st->ops->range_read(r->st, &q, &rs);
	CHECK(rc == RI_ST_OK && rs.n == 10 && !rs.more && rs.next == 63, "an exact last page: n %zu more %d",
	    rs.n, rs.more);
	ri_records_clear(&rs);
	q.from = 63;
	rc = r->st->ops->range_read(r->st, &q, &rs);
	CHECK(rc == RI_ST_OK && rs.n == 0 && !rs.more && rs.next == 63, "past the head: %d n %zu", rc, rs.n);
	ri_records_clear(&rs);
	CHECK(read_all(r, 7) == 62 && read_all(r, 0) == 62 && read_all(r, 4096) == 62, "paged reads");
	/* from = 0 ascending (a zeroed query) is the beginning, never a false gap */
	q = (struct ri_query){ .from = 0, .limit = 5 };
	rc = r->st->ops->range_read(r->st, &q, &rs);
	CHECK(rc == RI_ST_OK && rs.n == 5 && rs.v[0].seq == 1 && rs.more && rs.next == 6,
	    "ascending from 0: %d n %zu (%s)", rc, rs.n, st_err(r)->msg);
	ri_records_clear(&rs);
	q = (struct ri_query){ .invocation_id = "inv_Y" };
	rc = r->st->ops->range_read(r->st, &q, &rs);
	CHECK(rc == RI_ST_OK && rs.n == 20, "ascending from 0, filtered: %d n %zu (%s)", rc, rs.n, st_err(r)->msg);
	ri_records_clear(&rs);
	PASS("range read: from a seq with no upper bound, page size, cursor (next), page-complete (more) (Capability requirement 1-3)");

	/* invalid-query */
	q = (struct ri_query){ .from = 1, .limit = 4097 };
	rc = r->st->ops->range_read(r->st, &q, &rs);
	CHECK(rc == RI_ST_INVALID_QUERY && rs.n == 0, "limit 4097: %d", rc);
	q = (struct ri_query){ .from = -1 };
	CHECK(r->st->ops->range_read(r->st, &q, &rs) == RI_ST_INVALID_QUERY, "from -1");
	q = (struct ri_query){ .from = 1, .kind = "ledger" };
	CHECK(r->st->ops->range_read(r->st, &q, &rs) == RI_ST_INVALID_QUERY, "kind without act_key");
	q = (struct ri_query){ .from = 1, .kind = "ledger", .act_key = "k1", .invocation_id = "inv_X" };
	CHECK(r->st->ops->range_read(r->st, &q, &rs) == RI_ST_INVALID_QUERY, "two filters");
	q = (struct ri_query){ .from = 1, .limit = 4096 };
	rc = r->st->ops->range_read(r->st, &q, &rs);
	CHECK(rc == RI_ST_OK && rs.n == 62 && !rs.more, "limit 4096: %d", rc);
	ri_records_clear(&rs);
	PASS("range read: invalid-query for a page over 4096, a negative start, a half or double filter");

	/* filtered by invocation id, paged */
	int64_t seen = 0, last = 0;
	q = (struct ri_query){ .from = 1, .limit = 3, .invocation_id = "inv_X" };
	for (;;) {
		rc = r->st->ops->range_read(r->st, &q, &rs);
		CHECK(rc == RI_ST_OK, "invocation filter from %lld: %d %s", (long long)q.from, rc, st_err(r)->msg);
		for (size_t i = 0; i < rs.n; i++, seen++) {
			CHECK(strcmp(rs.v[i].invocation_id, "inv_X") == 0 && rs.v[i].seq > last, "filtered record");
			last = rs.v[i].seq;
		}
		bool more = rs.more;
		q.from = rs.next;
		ri_records_clear(&rs);
		if (!more)
			break;
	}
	CHECK(seen == n_x, "invocation filter saw %lld of %lld", (long long)seen, (long long)n_x);
	/* by (kind, act_key) */
	q = (struct ri_query){ .from = 1, .limit = 100, .kind = "ledger", .act_key = "k1" };
	rc = r->st->ops->range_read(r->st, &q, &rs);
	CHECK(rc == RI_ST_OK && (int64_t)rs.n == n_k && !rs.more, "act filter: %d n %zu", rc, rs.n);
	for (size_t i = 0; i < rs.n; i++)
		CHECK(strcmp(rs.v[i].act_key, "k1") == 0, "act filter returned %s", rs.v[i].act_key);
	ri_records_clear(&rs);
	q = (struct ri_query){ .from = 1, .kind = "ledger", .act_key = "nope" };
	rc = r->st->ops->range_read(r->st, &q, &rs);
	CHECK(rc == RI_ST_OK && rs.n == 0 && !rs.more, "an empty act: %d n %zu", rc, rs.n);
	PASS("range read: filtered by invocation id (paged) and by (kind, act_key), every record of the scope");

	/* descending: from = 0 is the head; continue from `next` */
	q = (struct ri_query){ .from = 0, .limit = 25, .descending = true };
	int64_t want = h;
	for (int pages = 0;; pages++) {
		rc = r->st->ops->range_read(r->st, &q, &rs);
		CHECK(rc == RI_ST_OK, "descending from %lld: %d %s", (long long)q.from, rc, st_err(r)->msg);
		for (size_t i = 0; i < rs.n; i++, want--)
			CHECK(rs.v[i].seq == want, "descending seq %lld, want %lld", (long long)rs.v[i].seq,
			    (long long)want);
		bool more = rs.more;
		q.from = rs.next;
		ri_records_clear(&rs);
		CHECK(pages < 10, "descending never ends");
		if (!more)
			break;
	}
	CHECK(want == 0 && q.from == 0, "descending ended at %lld (next %lld)", (long long)want, (long long)q.from);
	/* descending, filtered by invocation */
	q = (struct ri_query){ .from = 0, .limit = 4, .descending = true, .invocation_id = "inv_Y" };
	seen = 0;
	last = INT64_MAX;
	for (;;) {
		rc = r->st->ops->range_read(r->st, &q, &rs);
		CHECK(rc == RI_ST_OK, "descending filter from %lld: %d %s", (long long)q.from, rc, st_err(r)->msg);
		for (size_t i = 0; i < rs.n; i++, seen++) {
			CHECK(strcmp(rs.v[i].invocation_id, "inv_Y") == 0 && rs.v[i].seq < last, "descending filter");
			last = rs.v[i].seq;
		}
		bool more = rs.more;
		q.from = rs.next;
		ri_records_clear(&rs);
		if (!more)
			break;
	}
	CHECK(seen == 20, "descending invocation filter saw %lld", (long long)seen);
	PASS("range read: descending from the head (from = 0) and on from the cursor, whole and filtered");
	ri_instance_close(r);
}

/* ---- 4. tamper matrix -------------------------------------------------- */

struct base {
	struct tl_instance ti;
	char mallory_cred[128];
	char ev[16][RI_ID_LEN + 1];     /* event id by seq */
	int64_t last;
};

static const struct { const char *action, *act_key, *inv; } layout[] = {
	{ "ledger.intended", "k1", "inv_A" },           /* 4 */
	{ "ledger.intended", "k2", "inv_B" },           /* 5 */
	{ "ledger.recovery_intended", "k1", "inv_A" },  /* 6 */
	{ "ledger.intended", "k1", "inv_C" },           /* 7 */
	{ "ledger.disclosed", "k1", "inv_A" },          /* 8: the target, mid-act, mid-invocation */
	{ "ledger.disclosed", "k2", "inv_B" },          /* 9 */
	{ "ledger.escalated", "k1", "inv_A" },          /* 10 */
	{ "ledger.disclosed", "k1", "inv_C" },          /* 11 */
	{ "ledger.intended", "k3", "inv_D" },           /* 12 */
	{ "ledger.disclosed", "k3", "inv_D" },          /* 13: the last */
};
#define TARGET 8

static void
make_base(struct base *b)
{
	struct ri_appended out;
	struct ri_records rs;

	tl_now(T0);
	/* one shard: one chain, which each tamper breaks in a known place (the
	 * shards' own chains: tests/shards.bats, tests/audit.bats) */
	tl_instance(&b->ti, "tamper-base", &(struct tl_cfg){ .kinds = TL_KIND("ledger", "400d"), .shards = 1 });
	tl_add_actor(b->ti.config, "mallory", b->mallory_cred);
	ri *r = open_ri(b->ti.config, 0);
	struct ri_query q = { .from = 1 };
	/* the genesis seal, and the two actors' registrations */
	CHECK(r->st->ops->range_read(r->st, &q, &rs) == RI_ST_OK && rs.n == 3, "the genesis seal and two actor records");
	for (int i = 0; i < 3; i++)
		snprintf(b->ev[i + 1], sizeof b->ev[i + 1], "%s", rs.v[i].event_id);
	ri_records_clear(&rs);
	for (size_t i = 0; i < sizeof layout / sizeof layout[0]; i++) {
		char data[128];
		tl_now(T0 + (int64_t)i + 1);
		snprintf(data, sizeof data, "{\"n\":%zu,\"note\":\"abcdef\"}", i + 4);
		int64_t s = append_ok(r, b->ti.cred, layout[i].action, layout[i].act_key, layout[i].inv, data, &out);
		CHECK(s == (int64_t)i + 4, "base seq %lld", (long long)s);
		snprintf(b->ev[s], sizeof b->ev[s], "%s", out.event_id);
	}
	b->last = head(r);
	read_all(r, 0);
	ri_instance_close(r);
	tl_now(T0 + 100);
}

/* What every read must do on a tampered journal: fail closed, naming the
 * record; never not-known, never an empty or short result. */
static void
fail_closed(const struct tl_instance *ti, const char *read_ev, const char *inv, const char *act_key,
    bool append_too, const char *what)
{
	/* readers open read-only and fail closed on each read */
	ri *r = open_ri(ti->config, RI_READONLY);
	struct ri_record rec;
	struct ri_records rs;
	struct ri_query q;
	char w[256];
	int rc;

	if (read_ev != NULL) {
		rc = r->st->ops->read_record(r->st, read_ev, &rec);
		snprintf(w, sizeof w, "%s: read_record", what);
		expect_integrity(r, rc, NULL, w);
		CHECK(rec.action_ref == NULL && rec.payload == NULL, "%s: a failed read returned a record", w);
	}
	q = (struct ri_query){ .from = 1, .limit = 4096 };
	rc = r->st->ops->range_read(r->st, &q, &rs);
	snprintf(w, sizeof w, "%s: ascending range read", what);
	expect_integrity(r, rc, &rs, w);
	q = (struct ri_query){ .from = 1, .limit = 2 };      /* page by page: some page fails */
	for (int i = 0; i < 20; i++) {
		rc = r->st->ops->range_read(r->st, &q, &rs);
		if (rc != RI_ST_OK)
			break;
		bool more = rs.more;
		q.from = rs.next;
		ri_records_clear(&rs);
		CHECK(more, "%s: a paged read reached the end without a failure", what);
	}
	snprintf(w, sizeof w, "%s: paged range read", what);
	expect_integrity(r, rc, &rs, w);
	q = (struct ri_query){ .from = 0, .limit = 4096, .descending = true };
	rc = r->st->ops->range_read(r->st, &q, &rs);
	snprintf(w, sizeof w, "%s: descending range read", what);
	expect_integrity(r, rc, &rs, w);
	if (inv != NULL) {
		q = (struct ri_query){ .from = 1, .invocation_id = inv };
		rc = r->st->ops->range_read(r->st, &q, &rs);
		snprintf(w, sizeof w, "%s: range read of %s", what, inv);
		expect_integrity(r, rc, &rs, w);
		q = (struct ri_query){ .from = 0, .invocation_id = inv, .descending = true };
		rc = r->st->ops->range_read(r->st, &q, &rs);
		snprintf(w, sizeof w, "%s: descending range read of %s", what, inv);
		expect_integrity(r, rc, &rs, w);
	}
	if (act_key != NULL) {
		q = (struct ri_query){ .from = 1, .kind = "ledger", .act_key = act_key };
		rc = r->st->ops->range_read(r->st, &q, &rs);
		snprintf(w, sizeof w, "%s: range read of act (ledger, %s)", what, act_key);
		expect_integrity(r, rc, &rs, w);
	}
	ri_instance_close(r);
	if (append_too) {
		/* a writer fails closed too: at open, where the journal's head
		 * no longer verifies, or at its first append */
		ri_err err = { 0 };
		rc = ri_instance_open(ti->config, 0, &r, &err);
		snprintf(w, sizeof w, "%s: a writer", what);
		if (rc == RI_OK) {
			struct ri_appended out;
			struct ap a = { "ledger.intended", "k9", "inv_new", "alice", ti->cred, "{}", NULL, NULL };
			rc = append(r, &a, &out);
			CHECK(rc == RI_ST_INTEGRITY, "%s: record_action answered %d (%s)", w, rc, st_err(r)->msg);
			ri_instance_close(r);
		} else {
			CHECK(rc == RI_INTEGRITY, "%s: open answered %d (%s)", w, rc, err.msg);
		}
	}
}

static void
copy_row(struct atk *db, int64_t from, int64_t to_seq, const char *new_ev)
{
	char q[1024];

	snprintf(q, sizeof q,
	    "INSERT INTO records SELECT %lld, '%s', action_ref, kind, act_key, invocation_id, actor_ref,"
	    " attestation_id, recorded_at, retention_until, role, act_prev, inv_prev, payload, salt,"
	    " digest, hash, mac, shard FROM records WHERE seq = %lld",
	    (long long)to_seq, new_ev, (long long)from);
	sql(db, q);
}

static void
unhex(const char *hex, unsigned char *out, size_t n, const char *what)
{
	size_t got = 0;

	CHECK(sodium_hex2bin(out, n, hex, strlen(hex), NULL, &got, NULL) == 0 && got == n, "%s: %s", what, hex);
}

/* Recompute the payload digest (and, with `chain`, the record hash too --
 * the chain is public; only the MAC needs the key) after changing it. */
static void
forge_payload(struct atk *db, int64_t seq, const char *payload, bool chain)
{
	unsigned char salt[RI_SALT_LEN], digest[RI_HASH_LEN], prev[RI_HASH_LEN], hash[RI_HASH_LEN];
	unsigned char inst[RI_INSTANCE_LEN];
	char q[1024], v[13][256], dhex[2 * RI_HASH_LEN + 1], hhex[2 * RI_HASH_LEN + 1];
	bool null[13];

	CHECK(strchr(payload, '\'') == NULL, "the forged payload is quoted into SQL");
	row_text(db, on_pg ? "SELECT v FROM ri_meta WHERE k = 'instance_id'" : "SELECT v FROM meta WHERE k = 'instance_id'",
	    v[0], sizeof v[0]);
	unhex(v[0], inst, sizeof inst, "instance id");
	snprintf(q, sizeof q, "SELECT %s FROM records WHERE seq = %lld", HEX("hash"), (long long)seq - 1);
	row_text(db, q, v[0], sizeof v[0]);
	unhex(v[0], prev, sizeof prev, "the previous hash");
	snprintf(q, sizeof q, "SELECT %s, event_id, action_ref, kind, act_key, invocation_id, actor_ref,"
	    " attestation_id, recorded_at, retention_until, role, act_prev, inv_prev FROM records WHERE seq = %lld",
	    HEX("salt"), (long long)seq);
	row_vals(db, q, v, null, 13);
	unhex(v[0], salt, sizeof salt, "salt");
	ri_payload_digest(salt, payload, strlen(payload), digest);
	struct ri_header h = {
		.instance_id = inst, .seq = seq,
		.event_id = v[1], .action_ref = v[2], .kind = v[3], .act_key = v[4],
		.invocation_id = null[5] ? NULL : v[5],
		.actor_ref = v[6], .attestation_id = v[7],
		.recorded_at = strtoll(v[8], NULL, 10),
		.retention_until = null[9] ? RI_NONE : strtoll(v[9], NULL, 10),
		.role = atoi(v[10]),
		.act_prev = strtoll(v[11], NULL, 10),
		.inv_prev = strtoll(v[12], NULL, 10),
		.payload_digest = digest,
	};
	ri_record_hash(prev, &h, hash);
	ri_hex(digest, sizeof digest, dhex);
	ri_hex(hash, sizeof hash, hhex);
	if (chain)
		snprintf(q, sizeof q, "UPDATE records SET payload = '%s', digest = %s%s%s, hash = %s%s%s WHERE seq = %lld",
		    payload, BLOB_PRE, dhex, BLOB_POST, BLOB_PRE, hhex, BLOB_POST, (long long)seq);
	else
		snprintf(q, sizeof q, "UPDATE records SET payload = '%s', digest = %s%s%s WHERE seq = %lld",
		    payload, BLOB_PRE, dhex, BLOB_POST, (long long)seq);
	sql(db, q);
	CHECK(db->changes == 1, "forge: %ld rows", db->changes);
}

/* The node of the tree that holds the act's head (its leaf body carries
 * the scope key right after the 'L'). */
static void
leaf_where(const char *kind, const char *act_key, char *out, size_t n)
{
	unsigned char key[RI_SCOPE_LEN];
	char hex[2 * RI_SCOPE_LEN + 1];

	ri_scope_act(kind, act_key, key);
	ri_hex(key, sizeof key, hex);
	if (on_pg)
		snprintf(out, n, "substr(body, 1, 1) = '\\x4c'::bytea AND encode(substr(body, 2, 32), 'hex') = lower('%s')",
		    hex);
	else
		snprintf(out, n, "substr(body, 1, 1) = X'4C' AND hex(substr(body, 2, 32)) = upper('%s')", hex);
}

static void
delete_leaf(struct atk *db, const char *kind, const char *act_key)
{
	char w[256], q[512];

	leaf_where(kind, act_key, w, sizeof w);
	snprintf(q, sizeof q, "DELETE FROM nodes WHERE %s", w);
	sql(db, q);
	CHECK(db->changes == 1, "the head of (%s, %s) in the tree", kind, act_key);
}

/* SQL that puts the act's head back as it is now. */
static void
leaf_update_sql(struct atk *db, const char *kind, const char *act_key, char *out, size_t n)
{
	char w[256], q[768];

	leaf_where(kind, act_key, w, sizeof w);
	if (on_pg)
		snprintf(q, sizeof q, "SELECT format('UPDATE nodes SET body = %%L::bytea WHERE id = %%L::bytea', body, id)"
		    " FROM nodes WHERE %s", w);
	else
		snprintf(q, sizeof q, "SELECT 'UPDATE nodes SET body = X''' || hex(body) || ''' WHERE id = X''' ||"
		    " hex(id) || '''' FROM nodes WHERE %s", w);
	row_text(db, q, out, n);
}

/* What a hidden scope must do: its reads fail closed -- never empty, never
 * not-known -- and so does a writer's append to it. */
static void
scope_fails(const struct tl_instance *ti, const char *inv, const char *act_key, const char *what)
{
	ri *r = open_ri(ti->config, RI_READONLY);
	struct ri_records rs;
	struct ri_query q;
	char w[256];
	int rc;

	q = (struct ri_query){ .from = 1, .kind = "ledger", .act_key = act_key };
	rc = r->st->ops->range_read(r->st, &q, &rs);
	snprintf(w, sizeof w, "%s: range read of act (ledger, %s)", what, act_key);
	expect_integrity(r, rc, &rs, w);
	q = (struct ri_query){ .from = 0, .kind = "ledger", .act_key = act_key, .descending = true };
	rc = r->st->ops->range_read(r->st, &q, &rs);
	snprintf(w, sizeof w, "%s: descending read of act (ledger, %s)", what, act_key);
	expect_integrity(r, rc, &rs, w);
	if (inv != NULL) {
		q = (struct ri_query){ .from = 1, .invocation_id = inv };
		rc = r->st->ops->range_read(r->st, &q, &rs);
		if (rc != RI_ST_INTEGRITY) {
			/* the invocation's own head may stand; its records must not
			 * read as fewer than they are */
			CHECK(rc == RI_ST_OK && rs.n > 0, "%s: the invocation %s read as empty (%d)", what, inv, rc);
			ri_records_clear(&rs);
		}
	}
	ri_instance_close(r);
	ri_err err = { 0 };
	rc = ri_instance_open(ti->config, 0, &r, &err);
	if (rc == RI_OK) {
		struct ri_appended out;
		struct ap a = { "ledger.intended", act_key, "inv_hidden", "alice", ti->cred, "{}", NULL, NULL };
		rc = append(r, &a, &out);
		CHECK(rc == RI_ST_INTEGRITY, "%s: an append to the act answered %d (%s)", what, rc, st_err(r)->msg);
		ri_instance_close(r);
	} else {
		CHECK(rc == RI_INTEGRITY, "%s: a writer's open answered %d (%s)", what, rc, err.msg);
	}
}

static void
test_tamper(const struct base *b)
{
	struct tl_instance t;
	struct atk *db;
	const char *tev = b->ev[TARGET];

	/* a flipped byte in a payload */
	tl_clone(&b->ti, &t, "t-payload");
	db = attacker(&t, true);
	flip(db, "payload", TARGET, -1);
	attacker_close(db);
	fail_closed(&t, tev, "inv_A", "k1", false, "payload byte");
	PASS("tamper: a flipped payload byte fails closed naming the record (Tamper Evidence)");

	/* a flipped byte in each header column */
	static const char *const cols[] = { "actor_ref", "recorded_at", "kind", "act_key", "action_ref",
		"attestation_id", "invocation_id", "retention_until", "role", "act_prev", "inv_prev" };
	for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
		char tag[64];
		snprintf(tag, sizeof tag, "t-%s", cols[i]);
		tl_clone(&b->ti, &t, tag);
		db = attacker(&t, true);
		flip(db, cols[i], TARGET, 0);
		attacker_close(db);
		fail_closed(&t, tev, "inv_A", "k1", false, cols[i]);
		PASS("tamper: a flipped byte in header column %s fails closed naming the record (Tamper Evidence)",
		    cols[i]);
	}

	/* the mac, the digest, the stored hash, the salt */
	static const char *const blobs[] = { "mac", "digest", "hash", "salt" };
	for (size_t i = 0; i < sizeof blobs / sizeof blobs[0]; i++) {
		char tag[64];
		snprintf(tag, sizeof tag, "t-%s", blobs[i]);
		tl_clone(&b->ti, &t, tag);
		db = attacker(&t, true);
		flip(db, blobs[i], TARGET, 0);
		attacker_close(db);
		fail_closed(&t, tev, "inv_A", "k1", false, blobs[i]);
		PASS("tamper: a flipped byte in the %s fails closed naming the record (Tamper Evidence)", blobs[i]);
	}

	/* a deleted row in the middle */
	tl_clone(&b->ti, &t, "t-delete");
	db = attacker(&t, true);
	sql(db, "DELETE FROM records WHERE seq = 8");
	attacker_close(db);
	fail_closed(&t, b->ev[TARGET + 1], "inv_A", "k1", false, "deleted middle row");
	{
		/* the deleted record itself cannot be found by its id; its
		 * neighbour's read and every read across the gap fail */
		ri *r = open_ri(t.config, 0);
		struct ri_record rec;
		int rc = r->st->ops->read_record(r->st, b->ev[TARGET + 1], &rec);
		CHECK(rc == RI_ST_INTEGRITY && st_err(r)->seq == TARGET, "the following record names seq %lld",
		    (long long)st_err(r)->seq);
		ri_instance_close(r);
	}
	PASS("tamper: a deleted middle row fails the following record, the range read across it and its invocation's read");

	/* the last row deleted: a truncated tail */
	tl_clone(&b->ti, &t, "t-tail");
	db = attacker(&t, true);
	sql(db, "DELETE FROM records WHERE seq = (SELECT max(seq) FROM records)");
	attacker_close(db);
	fail_closed(&t, b->ev[4], "inv_D", "k3", true, "truncated tail");
	PASS("tamper: a truncated tail fails every read (the authenticated head) and the next append");

	/* the last two rows deleted, the heads table rolled back too is still
	 * caught by the MAC over the head -- and deleting every row after a
	 * point leaves the act/invocation heads pointing at missing rows */
	tl_clone(&b->ti, &t, "t-tail2");
	db = attacker(&t, true);
	sql(db, "DELETE FROM records WHERE seq >= 12");
	attacker_close(db);
	fail_closed(&t, b->ev[4], "inv_D", "k3", true, "truncated tail of two");
	PASS("tamper: a tail of two rows deleted fails every read and the next append");

	/* two rows' contents swapped */
	tl_clone(&b->ti, &t, "t-swap");
	db = attacker(&t, true);
	sql(db, "UPDATE records SET seq = -8 WHERE seq = 8; UPDATE records SET seq = 8 WHERE seq = 9;"
	    "UPDATE records SET seq = 9 WHERE seq = -8");
	attacker_close(db);
	fail_closed(&t, tev, "inv_A", "k1", false, "swapped rows");
	fail_closed(&t, b->ev[TARGET + 1], "inv_B", "k2", false, "swapped rows (other)");
	PASS("tamper: two rows' contents swapped fail closed (Tamper Evidence)");

	/* a record copied under another event id: appended past the head, and in place */
	tl_clone(&b->ti, &t, "t-copy");
	db = attacker(&t, true);
	copy_row(db, TARGET, b->last + 1, "evt_0123456789abcdef0123456789abcdef");
	attacker_close(db);
	fail_closed(&t, "evt_0123456789abcdef0123456789abcdef", "inv_A", "k1", true, "copied record");
	tl_clone(&b->ti, &t, "t-rename");
	db = attacker(&t, true);
	sql(db, "UPDATE records SET event_id = 'evt_0123456789abcdef0123456789abcdef' WHERE seq = 8");
	attacker_close(db);
	fail_closed(&t, "evt_0123456789abcdef0123456789abcdef", "inv_A", "k1", false, "renamed record");
	PASS("tamper: a record copied under another event id (past the head, or in place) fails closed");

	/* a changed payload with a recomputed digest, and with the chain hash recomputed too */
	tl_clone(&b->ti, &t, "t-digest");
	db = attacker(&t, true);
	forge_payload(db, TARGET, "{\"n\":7,\"note\":\"forged\"}", false);
	attacker_close(db);
	fail_closed(&t, tev, "inv_A", "k1", false, "recomputed digest");
	tl_clone(&b->ti, &t, "t-rehash");
	db = attacker(&t, true);
	forge_payload(db, TARGET, "{\"n\":7,\"note\":\"forged\"}", true);
	attacker_close(db);
	fail_closed(&t, tev, "inv_A", "k1", false, "recomputed digest and hash");
	{
		ri *r = open_ri(t.config, 0);
		struct ri_record rec;
		int rc = r->st->ops->read_record(r->st, tev, &rec);
		CHECK(rc == RI_ST_INTEGRITY && strstr(st_err(r)->msg, "MAC") != NULL,
		    "a recomputed chain is caught by the MAC: %s", st_err(r)->msg);
		ri_instance_close(r);
	}
	PASS("tamper: a changed payload with its digest (and its chain hash) recomputed without the key fails closed");

	/* the whole journal opened with a different integrity key */
	tl_clone(&b->ti, &t, "t-key");
	{
		char p[PATH_MAX + 16];
		unsigned char k[32];
		randombytes_buf(k, sizeof k);
		snprintf(p, sizeof p, "%s/journal.key", t.dir);
		int fd = open(p, O_WRONLY | O_TRUNC);
		CHECK(fd >= 0 && write(fd, k, sizeof k) == (ssize_t)sizeof k && close(fd) == 0, "rewrite key");
		CHECK(chmod(p, 0600) == 0, "chmod key");
	}
	if (on_pg) {
		/* PostgreSQL: the schema's fingerprint is MACed under the key
		 * (open_pg.c pg_schema_check), and checked first: the open itself
		 * fails closed, reader's and writer's, with the witness or
		 * without -- no read or append can be made to fail after it */
		for (int w = 0; w < 2; w++) {
			for (int ro = 0; ro < 2; ro++) {
				ri *r = NULL;
				ri_err err = { 0 };
				int rc = ri_instance_open(t.config, ro ? RI_READONLY : 0, &r, &err);
				CHECK(rc == RI_INTEGRITY && r == NULL && strstr(err.msg, "schema") != NULL,
				    "a different key (%s, %s): the open answered %d %s", w ? "no witness" : "a witness",
				    ro ? "a reader" : "a writer", rc, err.msg);
			}
			json_error_t je;
			json_t *cfg = json_load_file(t.config, 0, &je);
			CHECK(cfg != NULL, "%s: %s", t.config, je.text);
			json_object_set_new(cfg, "witness", json_null());
			CHECK(json_dump_file(cfg, t.config, 0) == 0, "rewrite %s", t.config);
			json_decref(cfg);
		}
		PASS("tamper: the journal opened with a different integrity key fails closed at every open, reader's and"
		    " writer's, with or without a witness (PostgreSQL: the schema's MACed fingerprint)");
	} else {
		/* the witness's lines are MACed under a key derived from it: the
		 * open itself fails closed (issue 39) ... */
		ri *r = NULL;
		ri_err err = { 0 };
		int rc = ri_instance_open(t.config, RI_READONLY, &r, &err);
		CHECK(rc == RI_INTEGRITY && strstr(err.msg, "witness") != NULL,
		    "a different key: the witness's lines fail at open: %d %s", rc, err.msg);
		ri_instance_close(r);
		/* ... and without a witness, every read and append does */
		json_error_t je;
		json_t *cfg = json_load_file(t.config, 0, &je);
		CHECK(cfg != NULL, "%s: %s", t.config, je.text);
		json_object_set_new(cfg, "witness", json_null());
		CHECK(json_dump_file(cfg, t.config, 0) == 0, "rewrite %s", t.config);
		json_decref(cfg);
		fail_closed(&t, tev, "inv_A", "k1", true, "a different key");
		r = open_ri(t.config, RI_READONLY);
		struct ri_actor *v;
		size_t n;
		CHECK(r->st->ops->actor_list(r->st, &v, &n) == RI_ST_INTEGRITY, "actor_list under another key");
		ri_instance_close(r);
		PASS("tamper: the journal opened with a different integrity key fails every read, append and the actor list");
	}

	/* a payload purged before its retention ended: integrity, not purged */
	tl_clone(&b->ti, &t, "t-purge");
	db = attacker(&t, true);
	sql(db, "UPDATE records SET payload = NULL, salt = NULL WHERE seq = 8");
	attacker_close(db);
	fail_closed(&t, tev, "inv_A", "k1", false, "early purge");
	PASS("tamper: a payload destroyed before its retention ended is an integrity failure, not purged (Retention Window)");

	/* the journal head: deleted, altered, or an older row replayed */
	tl_clone(&b->ti, &t, "t-head");
	db = attacker(&t, true);
	sql(db, "DELETE FROM heads");
	attacker_close(db);
	fail_closed(&t, tev, "inv_A", "k1", true, "the journal head deleted");
	tl_clone(&b->ti, &t, "t-headrb");
	db = attacker(&t, true);
	sql(db, "UPDATE heads SET last_seq = last_seq - 1");
	attacker_close(db);
	fail_closed(&t, tev, "inv_A", "k1", true, "the journal head rolled back");
	tl_clone(&b->ti, &t, "t-headreplay");
	{
		char saved[1024];
		db = attacker(&t, false);
		row_text(db, on_pg ?
		    "SELECT format('UPDATE heads SET last_seq = %s, root = %L::bytea, open_count = %s,"
		    " open_acc = %L::bytea, sealed_seq = %s, grants = %s, mac = %L::bytea', last_seq, root, open_count,"
		    " open_acc, sealed_seq, grants, mac) FROM heads" :
		    "SELECT 'UPDATE heads SET last_seq = ' || last_seq || ', root = X''' || hex(root) ||"
		    " ''', open_count = ' || open_count || ', open_acc = X''' || hex(open_acc) || ''', sealed_seq = ' ||"
		    " sealed_seq || ', grants = ' || grants || ', mac = X''' || hex(mac) || '''' FROM heads",
		    saved, sizeof saved);
		attacker_close(db);
		ri *r = open_ri(t.config, 0);
		append_ok(r, t.cred, "ledger.intended", "k7", "inv_new7", "{}", NULL);
		ri_instance_close(r);
		db = attacker(&t, false);
		sql(db, saved);         /* the older head, MAC and all: it still verifies alone */
		attacker_close(db);
	}
	fail_closed(&t, tev, "inv_A", "k1", true, "an older journal head replayed");
	PASS("tamper: the journal head deleted, altered or replayed (an older, validly MACed row) fails every read and the next append");

	/* authenticated absence (heads.h): the act's head in the tree deleted,
	 * replayed, or every node gone -- the act never reads as empty */
	tl_clone(&b->ti, &t, "t-leaf");
	db = attacker(&t, true);
	delete_leaf(db, "ledger", "k1");
	attacker_close(db);
	scope_fails(&t, "inv_A", "k1", "the act's head deleted from the tree");
	tl_clone(&b->ti, &t, "t-nodes");
	db = attacker(&t, true);
	sql(db, "DELETE FROM nodes");
	attacker_close(db);
	scope_fails(&t, "inv_A", "k1", "every node of the tree deleted");
	tl_clone(&b->ti, &t, "t-leafreplay");
	{
		char saved[1024];
		db = attacker(&t, false);
		leaf_update_sql(db, "ledger", "k1", saved, sizeof saved);
		attacker_close(db);
		ri *r = open_ri(t.config, 0);
		append_ok(r, t.cred, "ledger.escalated", "k1", "inv_C", "{}", NULL);
		ri_instance_close(r);
		db = attacker(&t, false);
		sql(db, saved);         /* the act's older head: a valid node, under another root */
		attacker_close(db);
	}
	scope_fails(&t, "inv_A", "k1", "the act's older head replayed");
	PASS("tamper: the act's head deleted from the tree, replayed from before, or every node deleted: the act's reads and appends fail closed, never empty (authenticated absence)");

	/* the issue's first attack: the act's rows re-typed (TEXT act_key as a
	 * BLOB: every SQL filter misses them, the hash still verifies) and its
	 * head deleted -- the table made non-STRICT first and STRICT again
	 * after, so even the schema reads as ri's own -- and the second: its
	 * rows moved to another act and its head deleted.  The first is
	 * SQLite's alone: a PostgreSQL column holds only its declared type */
	if (on_pg) {
		SKIP("tamper: an act's rows re-typed to BLOB: SQLite's dynamic typing (a PostgreSQL text column holds"
		    " no bytea)");
	} else {
		tl_clone(&b->ti, &t, "t-retype");
		db = attacker(&t, true);
		sql(db, "PRAGMA writable_schema = ON;"
		    " UPDATE sqlite_schema SET sql = replace(sql, ') STRICT', ')') WHERE name = 'records';");
		sqlite3_close(db->db);
		{
			char p[PATH_MAX + 16];
			snprintf(p, sizeof p, "%s/journal.db", t.dir);
			/* the schema as now edited */
			CHECK(sqlite3_open(p, &db->db) == SQLITE_OK, "sqlite3_open %s", p);
		}
		sql(db, "UPDATE records SET act_key = CAST(act_key AS BLOB) WHERE act_key = 'k1'");
		CHECK(db->changes > 0, "re-typed rows");
		delete_leaf(db, "ledger", "k1");
		sql(db, "PRAGMA writable_schema = ON;"
		    " UPDATE sqlite_schema SET sql = replace(sql, 'shard INTEGER NOT NULL)', 'shard INTEGER NOT NULL) STRICT')"
		    " WHERE name = 'records';");
		attacker_close(db);
		scope_fails(&t, "inv_A", "k1", "the act's rows re-typed to BLOB and its head deleted");
	}
	tl_clone(&b->ti, &t, "t-move");
	db = attacker(&t, true);
	sql(db, "UPDATE records SET act_key = 'k9' WHERE act_key = 'k1'");
	delete_leaf(db, "ledger", "k1");
	attacker_close(db);
	scope_fails(&t, NULL, "k1", "the act's rows moved to another act and its head deleted");
	scope_fails(&t, NULL, "k9", "the act the rows were moved to");
	PASS("tamper: an act's rows %smoved to another act, its head deleted: both acts fail closed, never empty",
	    on_pg ? "" : "re-typed (BLOB) or ");

	/* an actor row's cred_hash replaced with another actor's */
	tl_clone(&b->ti, &t, "t-actor");
	db = attacker(&t, false);
	sql(db, "UPDATE actors SET cred_hash = (SELECT cred_hash FROM actors WHERE actor_ref = 'mallory')"
	    " WHERE actor_ref = 'alice'");
	attacker_close(db);
	{
		ri *r = open_ri(t.config, 0);
		struct ri_appended out;
		int64_t h = head(r);
		struct ap a = { "ledger.intended", "k1", "inv_m", "alice", b->mallory_cred, "{}", NULL, NULL };
		int rc = append(r, &a, &out);
		CHECK(rc == RI_ST_INTEGRITY && strstr(st_err(r)->msg, "alice") != NULL,
		    "alice with mallory's credential: %d %s", rc, st_err(r)->msg);
		a.credential = t.cred;
		rc = append(r, &a, &out);
		CHECK(rc == RI_ST_INTEGRITY, "alice with her own credential on an altered registry: %d", rc);
		CHECK(head(r) == h, "an altered registry accepted a record");
		struct ri_actor *v;
		size_t n;
		CHECK(r->st->ops->actor_list(r->st, &v, &n) == RI_ST_INTEGRITY, "actor_list on an altered registry");
		CHECK(r->st->ops->actor_revoke(r->st, "alice") == RI_ST_INTEGRITY, "revoke on an altered row");
		ri_instance_close(r);
	}
	/* un-revoking a revoked actor (revoked_at = NULL) */
	tl_clone(&b->ti, &t, "t-unrevoke");
	{
		ri *r = open_ri(t.config, 0);
		CHECK(r->st->ops->actor_revoke(r->st, "mallory") == RI_ST_OK, "revoke mallory");
		ri_instance_close(r);
	}
	db = attacker(&t, false);
	sql(db, "UPDATE actors SET revoked_at = NULL WHERE actor_ref = 'mallory'");
	attacker_close(db);
	{
		ri *r = open_ri(t.config, 0);
		struct ri_appended out;
		struct ap a = { "ledger.intended", "k1", "inv_m", "mallory", b->mallory_cred, "{}", NULL, NULL };
		int rc = append(r, &a, &out);
		CHECK(rc == RI_ST_INTEGRITY, "an un-revoked actor: %d %s", rc, st_err(r)->msg);
		ri_instance_close(r);
	}
	PASS("tamper: an actor row's cred_hash replaced (or its revocation erased) makes record_action an integrity failure, not a silent accept");
}

/* ---- the audit's state check: the tree's leaves a batch at a time ------- */

struct state_seen {
	char text[8192];
	int rewritten_at_11;
};

static void
state_keep(const char *check, int64_t seq, const char *msg, void *arg)
{
	struct state_seen *v = arg;
	size_t n = strlen(v->text);

	snprintf(v->text + n, sizeof v->text - n, "%s|%lld|%s\n", check, (long long)seq, msg);
	if (strcmp(check, "8.1.1") == 0 && seq == 11 && strstr(msg, "rewritten") != NULL)
		v->rewritten_at_11++;
}

/* audit_state over ti with the leaves judged cap at a time (0: the default) */
static void
audit_state_with(const struct tl_instance *ti, size_t cap, struct state_seen *v)
{
	ri *r = open_ri(ti->config, RI_READONLY);
	int rc;

	memset(v, 0, sizeof *v);
	r->st->leaf_batch = cap;
	rc = r->st->ops->audit_state(r->st, state_keep, v);
	CHECK(rc == RI_ST_OK, "audit_state (batch %zu): %d %s", cap, rc, st_err(r)->msg);
	ri_instance_close(r);
}

/* Check 8.1.1 on a real journal whose tree has more leaves than a batch:
 * every leaf judged exactly once across the batches (a batch left unjudged
 * at the end, or judged twice, fails the tally on the clean journal), and a
 * rewritten record named wherever its leaves fall (issue 15, target 3). */
static void
test_leaf_batches(const struct base *b)
{
	struct tl_instance t;
	struct state_seen one, two, dflt;	/* ~8 KiB each */
	struct atk *db;

	tl_clone(&b->ti, &t, "leaf-batches");
	for (size_t cap = 0; cap <= 4; cap++) {
		audit_state_with(&t, cap, &one);
		CHECK(one.text[0] == '\0', "Check 8.1.1, leaves %zu at a time (0: the default): a clean journal has"
		    " findings:\n%s", cap, one.text);
	}
	PASS("Check 8.1.1: a clean journal's tree clears with its leaves judged 1, 2, 3, 4 at a time and in one batch"
	    " (issue 15)");

	/* seq 11 is the last record of act k1 and of inv_C: two leaves name it */
	db = attacker(&t, true);
	flip(db, "hash", 11, 0);
	attacker_close(db);
	audit_state_with(&t, 2, &two);
	audit_state_with(&t, 0, &dflt);
	CHECK(two.rewritten_at_11 == 2, "Check 8.1.1, leaves two at a time: seq 11's two heads named %d times:\n%s",
	    two.rewritten_at_11, two.text);
	CHECK(strcmp(two.text, dflt.text) == 0, "Check 8.1.1: two at a time found\n%s\nthe default batch found\n%s",
	    two.text, dflt.text);
	PASS("Check 8.1.1: a rewritten record is named by both its heads, leaves two at a time as in one batch (issue 15)");
}

/* ---- 5. append-only at the database level ------------------------------- */

static void
fake_now(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	(void)argv;
	sqlite3_result_int64(ctx, INT64_MAX);
}

/* The attacker's own clock at the end of time: on SQLite an ri_now() of
 * its own; on PostgreSQL under "clock": "env" (the test seam, open_pg.c
 * ri_clock) the session's ri.clock */
static void
forge_now(struct atk *db)
{
	if (db->pg != NULL)
		sql(db, "SET ri.clock = '9223372036854775807'");
	else
		CHECK(sqlite3_create_function(db->db, "ri_now", 0, SQLITE_UTF8, NULL, fake_now, NULL, NULL) == SQLITE_OK,
		    "fn");
}

static void
test_append_only(const struct base *b)
{
	struct tl_instance t;
	struct atk *db;
	int64_t purged;
	char why[512];

	tl_clone(&b->ti, &t, "append-only");
	db = attacker(&t, false);
	static const char *const refused[] = {
		"UPDATE records SET payload = 'x'",
		"UPDATE records SET payload = 'x' WHERE seq = 8",
		"UPDATE records SET payload = NULL, salt = NULL WHERE seq = 8",
		"DELETE FROM records",
		"DELETE FROM records WHERE seq = 13",
		"UPDATE records SET seq = 100 WHERE seq = 13",
	};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
		CHECK(!sql_try(db, refused[i], why, sizeof why), "a plain connection ran: %s", refused[i]);
	/* even with an ri_now() of its own, only an "expired" payload can be nulled */
	forge_now(db);
	CHECK(!sql_try(db, "UPDATE records SET payload = 'x' WHERE seq = 8", why, sizeof why),
	    "a forged ri_now() rewrote a payload");
	CHECK(!sql_try(db, "UPDATE records SET kind = 'x', payload = NULL, salt = NULL WHERE seq = 8", why, sizeof why),
	    "a forged ri_now() rewrote a header");
	CHECK(!sql_try(db, "DELETE FROM records WHERE seq = 8", why, sizeof why), "a forged ri_now() deleted a row");
	attacker_close(db);
	{
		ri *r = open_ri(t.config, 0);
		CHECK(read_all(r, 0) == b->last, "the journal changed");
		ri_instance_close(r);
	}
	PASS("append-only: the triggers refuse a plain connection's UPDATE and DELETE of records (journal 1)");

	/* ri's own purge: only payloads whose retention ended */
	{
		ri *r = open_ri(t.config, 0);
		tl_now(T0 + 399 * DAY);
		CHECK(r->st->ops->purge(r->st, T0 + 399 * DAY, &purged) == RI_ST_OK && purged == 0, "purge too early");
		CHECK(head(r) == b->last, "a purge of nothing appended a record");
		struct ri_record rec;
		CHECK(r->st->ops->read_record(r->st, b->ev[TARGET], &rec) == RI_ST_OK && rec.payload != NULL,
		    "the payload is gone");
		ri_record_clear(&rec);
		ri_instance_close(r);
		tl_now(T0 + 100);
	}
	PASS("append-only: ri's purge nulls no payload whose retention has not ended (Retention Window)");

	/* an attacker who fakes ri_now() to "purge" early is still caught on read */
	db = attacker(&t, false);
	forge_now(db);
	sql(db, "UPDATE records SET payload = NULL, salt = NULL WHERE seq = 8");
	attacker_close(db);
	fail_closed(&t, b->ev[TARGET], "inv_A", "k1", false, "a purge under a forged ri_now()");
	PASS("append-only: a payload nulled under a forged ri_now() fails closed on read");
}

/* ---- 6. retention -------------------------------------------------------- */

static void
test_retention(void)
{
	struct tl_instance ti;
	struct tl_cfg cfg = { .kinds = TL_KIND("ledger", "1d") ", " TL_KIND("vault", "2d") };
	char lev[5][RI_ID_LEN + 1], vev[5][RI_ID_LEN + 1];
	struct ri_appended out;
	struct ri_record rec;
	struct ri_records rs;
	int64_t purged, h;
	int rc;

	tl_now(T0);
	tl_instance(&ti, "retention", &cfg);
	ri *r = open_ri(ti.config, 0);
	for (int i = 0; i < 5; i++) {
		char inv[32];
		snprintf(inv, sizeof inv, "inv_l%d", i);
		append_ok(r, ti.cred, "ledger.intended", "k", inv, "{\"secret\":\"l\"}", &out);
		snprintf(lev[i], sizeof lev[i], "%s", out.event_id);
		snprintf(inv, sizeof inv, "inv_v%d", i);
		append_ok(r, ti.cred, "vault.intended", "k", inv, "{\"secret\":\"v\"}", &out);
		snprintf(vev[i], sizeof vev[i], "%s", out.event_id);
	}
	h = head(r);

	tl_now(T0 + DAY + 1);
	rc = r->st->ops->purge(r->st, T0 + DAY + 1, &purged);
	CHECK(rc == RI_ST_OK && purged == 5, "purge at +1d+1ms: %d %lld", rc, (long long)purged);
	for (int i = 0; i < 5; i++) {
		rc = r->st->ops->read_record(r->st, lev[i], &rec);
		CHECK(rc == RI_ST_PURGED && rec.payload == NULL, "ledger record %d: %d", i, rc);
		ri_record_clear(&rec);
		rc = r->st->ops->read_record(r->st, vev[i], &rec);
		CHECK(rc == RI_ST_OK && rec.payload != NULL, "vault record %d: %d %s", i, rc, st_err(r)->msg);
		ri_record_clear(&rec);
	}
	CHECK(head(r) == h + 1, "no audit.purged record");
	newest(r, &rs);
	CHECK_STR(rs.v[0].action_ref, "audit.purged");
	CHECK(json_integer_value(json_object_get(rs.v[0].payload, "purged")) == 5, "audit.purged counts");
	json_t *per = json_object_get(rs.v[0].payload, "retention_period_s");
	CHECK(json_object_get(per, "ledger") != NULL && json_object_get(per, "vault") == NULL,
	    "audit.purged names the policy: %s", json_dumps(per, JSON_COMPACT));
	CHECK_STR(json_string_value(json_object_get(per, "ledger")), "86400");
	ri_records_clear(&rs);
	read_all(r, 0);
	struct ri_query q = { .from = 1, .invocation_id = "inv_l2" };
	rc = r->st->ops->range_read(r->st, &q, &rs);
	CHECK(rc == RI_ST_OK && rs.n == 1 && rs.v[0].purged, "a purged record in a filtered read: %d", rc);
	ri_records_clear(&rs);
	/* a second purge at the same instant destroys nothing more and records nothing */
	rc = r->st->ops->purge(r->st, T0 + DAY + 1, &purged);
	CHECK(rc == RI_ST_OK && purged == 0 && head(r) == h + 1, "second purge: %lld", (long long)purged);
	PASS("retention: two kinds, two periods -- purge at +1d+1ms destroys only the 1d kind's payloads, the chain verifies, read_record answers purged, audit.purged appended (journal 6)");

	tl_now(T0 + 2 * DAY + 1);
	rc = r->st->ops->purge(r->st, T0 + 2 * DAY + 1, &purged);
	CHECK(rc == RI_ST_OK && purged == 5, "purge at +2d+1ms: %lld", (long long)purged);
	for (int i = 0; i < 5; i++) {
		rc = r->st->ops->read_record(r->st, vev[i], &rec);
		CHECK(rc == RI_ST_PURGED, "vault record %d: %d", i, rc);
		ri_record_clear(&rec);
	}
	read_all(r, 0);
	/* the actor records (audit.*) are kept */
	q = (struct ri_query){ .from = 1, .limit = 1 };
	rc = r->st->ops->range_read(r->st, &q, &rs);
	CHECK(rc == RI_ST_OK && !rs.v[0].purged && rs.v[0].payload != NULL, "audit.actor_registered purged");
	ri_records_clear(&rs);
	PASS("retention: the 2d kind goes at +2d+1ms; substrate records are kept; the chain still verifies");
	ri_instance_close(r);
}

/* ---- 7. the lease host ---------------------------------------------------- */

/* Under the system clock, a lease's remaining time read twice, 100 ms
 * apart, shrinks by the time between -- also when both reads share one
 * read snapshot (PostgreSQL's, issue 43: a snapshot lives up to
 * read_bound, and its clock is read once, with its first statement; a
 * remaining time judged on that reading alone would overstate what is
 * left, and close step 1 and the sweep's gates would write on it). */
static void
test_snapshot_clock(void)
{
	struct tl_instance ti;
	struct tl_cfg cfg = { .clock = "system", .read_bound = "5s" };
	struct ri_grant g;
	ri_ms left1, left2;
	const ri_ms d = 10 * SEC;
	struct timespec nap = { 0, 100 * 1000 * 1000 };

	tl_instance(&ti, "snapclock", &cfg);
	ri *r = open_ri(ti.config, 0);
	const struct ri_store_ops *o = r->st->ops;

	CHECK(o->take(r->st, "ledger", "k", "h1", d, &g) == RI_ST_OK, "take");
	CHECK(o->remaining(r->st, "ledger", "k", "h1", &left1) == RI_ST_OK && left1 > 0 && left1 <= d,
	    "remaining: %lld", (long long)left1);
	nanosleep(&nap, NULL);
	CHECK(o->remaining(r->st, "ledger", "k", "h1", &left2) == RI_ST_OK, "remaining again");
	CHECK(left2 <= left1 - 100, "remaining after 100 ms: %lld, before: %lld (a snapshot's clock stood still)",
	    (long long)left2, (long long)left1);
	PASS("lease: remaining on the system clock shrinks by the time between two reads, inside one read snapshot"
	    " too (%lld ms, then %lld ms; issue 43)", (long long)left1, (long long)left2);
	ri_instance_close(r);
}

/* Open step 5.3 right after the intent is answered from the lease row the
 * intent's fence check read (issue 43: no read of its own).  That rests on
 * no write of this handle between the append and the question: a write of
 * its own -- a release, a take -- must be seen, never the append's row. */
static void
test_seen_rewritten(void)
{
	struct tl_instance ti;
	struct tl_cfg cfg = { .fence = "declared", .kinds = TL_KIND("ledger", "400d") };
	struct ri_appended out;
	struct ri_grant g;
	ri_ms left;
	const ri_ms d = 30 * SEC;
	struct ri_fence f = { "h1", T0 };
	struct ap a = { "ledger.intended", "sk", "inv_s1", "alice", NULL, "{}", &f, NULL };
	int rc;

	tl_now(T0);
	tl_instance(&ti, "seen", &cfg);
	ri *r = open_ri(ti.config, 0);
	const struct ri_store_ops *o = r->st->ops;
	a.credential = ti.cred;

	/* the shortcut itself: nothing written since, the append's row stands */
	CHECK(o->take(r->st, "ledger", "sk", "h1", d, &g) == RI_ST_OK, "take by h1");
	rc = append(r, &a, &out);
	CHECK(rc == RI_ST_OK, "h1's fenced append: %d %s", rc, st_err(r)->msg);
	CHECK(o->remaining(r->st, "ledger", "sk", "h1", &left) == RI_ST_OK && left == d,
	    "remaining right after the append: %lld", (long long)left);

	/* the handle's own release between the append and the question */
	rc = append(r, &a, &out);
	CHECK(rc == RI_ST_OK, "h1's second fenced append: %d %s", rc, st_err(r)->msg);
	CHECK(o->release(r->st, "ledger", "sk", "h1") == RI_ST_OK, "release by h1");
	CHECK(o->remaining(r->st, "ledger", "sk", "h1", &left) == RI_ST_OK && left == RI_NONE,
	    "seen: remaining after the handle's own release: %lld, answered from the append's lease row",
	    (long long)left);

	/* the handle's own take for another holder in between */
	CHECK(o->take(r->st, "ledger", "sk", "h1", d, &g) == RI_ST_OK, "take by h1 again");
	a.invocation_id = "inv_s2";
	rc = append(r, &a, &out);
	CHECK(rc == RI_ST_OK, "h1's third fenced append: %d %s", rc, st_err(r)->msg);
	CHECK(o->release(r->st, "ledger", "sk", "h1") == RI_ST_OK, "release by h1 again");
	CHECK(o->take(r->st, "ledger", "sk", "h2", d, &g) == RI_ST_OK, "take by h2");
	CHECK(o->remaining(r->st, "ledger", "sk", "h2", &left) == RI_ST_OK && left == d,
	    "seen: remaining of h2 after the handle's own take: %lld, answered from the append's lease row",
	    (long long)left);
	PASS("lease: open step 5.3's answer without a read stands only until this handle writes again -- its own"
	    " release and take are seen (issue 43)");
	ri_instance_close(r);
}

static void
test_lease(void)
{
	struct tl_instance ti;
	/* one shard: its grant counter is the instance's, so the tokens of
	 * every key below count on from one another (with more, per shard:
	 * per act they still only grow; docs/SHARDS.md, fencing tokens) */
	struct tl_cfg cfg = { .shards = 1 };
	struct ri_grant g;
	ri_ms left;
	const ri_ms d = 300, t = T0 + 50 * SEC;
	int rc;

	tl_now(T0);
	tl_instance(&ti, "lease", &cfg);
	ri *r = open_ri(ti.config, 0);
	const struct ri_store_ops *o = r->st->ops;

	tl_now(t);
	rc = o->take(r->st, "ledger", "k", "h1", d, &g);
	CHECK(rc == RI_ST_OK && g.expires_at == t + d && g.token == 1, "take: %d expires %lld token %lld", rc,
	    (long long)g.expires_at, (long long)g.token);
	PASS("lease: take at t grants expires_at = t + d (minted by the host) and token 1 (act section 1)");

	tl_now(t + d - 1);
	CHECK(o->remaining(r->st, "ledger", "k", "h1", &left) == RI_ST_OK && left == 1, "remaining at t+d-1: %lld",
	    (long long)left);
	CHECK(o->remaining(r->st, "ledger", "k", "h2", &left) == RI_ST_OK && left == RI_NONE, "remaining of h2");
	tl_now(t + d);
	CHECK(o->remaining(r->st, "ledger", "k", "h1", &left) == RI_ST_OK && left == RI_NONE, "remaining at t+d: %lld",
	    (long long)left);
	PASS("lease: remaining at t+d-1 is 1 ms, at t+d none (the lease ends at its instant)");

	/* another holder waits no longer than the holder's remaining lease */
	tl_now(t);
	double t0 = mono_ms();
	rc = o->take(r->st, "ledger", "k", "h2", d, &g);
	double el = mono_ms() - t0;
	CHECK(rc == RI_ST_SECTION_UNAVAILABLE, "h2 at t: %d", rc);
	CHECK(el >= (double)d - 20 && el < (double)d + 200, "h2 waited %.0f ms for a %lld ms remaining lease", el,
	    (long long)d);
	tl_now(t + d - 1);
	t0 = mono_ms();
	rc = o->take(r->st, "ledger", "k", "h2", d, &g);
	double el2 = mono_ms() - t0;
	CHECK(rc == RI_ST_SECTION_UNAVAILABLE && el2 < 200, "h2 at t+d-1: %d after %.0f ms", rc, el2);
	PASS("lease: another holder's take is section-unavailable after waiting the remaining lease (%.0f ms of %lld; %.0f ms of 1) (open step 2.2)",
	    el, (long long)d, el2);

	tl_now(t + d);
	rc = o->take(r->st, "ledger", "k", "h2", d, &g);
	CHECK(rc == RI_ST_OK && g.token == 2 && g.expires_at == t + 2 * d, "h2 at t+d: %d token %lld", rc,
	    (long long)g.token);
	PASS("lease: at t+d another holder's take succeeds with token 2 (tokens only increase)");

	tl_now(t + d + 10);
	rc = o->take(r->st, "ledger", "k", "h2", d, &g);
	CHECK(rc == RI_ST_OK && g.token == 3 && g.expires_at == t + 2 * d + 10, "re-entry: %d token %lld", rc,
	    (long long)g.token);
	PASS("lease: re-entry by the holder succeeds while held, with a fresh token (act section 14)");

	rc = o->release(r->st, "ledger", "k", "h1");
	CHECK(rc == RI_ST_NOT_HELD, "release by a non-holder: %d", rc);
	CHECK(o->remaining(r->st, "ledger", "k", "h2", &left) == RI_ST_OK && left == d, "the non-holder's release changed it: %lld",
	    (long long)left);
	rc = o->release(r->st, "ledger", "other", "h2");
	CHECK(rc == RI_ST_NOT_HELD, "release of a section never taken: %d", rc);
	PASS("lease: release by a non-holder answers not-held and changes nothing");

	rc = o->release(r->st, "ledger", "k", "h2");
	CHECK(rc == RI_ST_OK, "release by the holder: %d", rc);
	CHECK(o->remaining(r->st, "ledger", "k", "h2", &left) == RI_ST_OK && left == RI_NONE, "still held");
	CHECK(o->release(r->st, "ledger", "k", "h2") == RI_ST_NOT_HELD, "a second release");
	t0 = mono_ms();
	rc = o->take(r->st, "ledger", "k", "h1", d, &g);
	CHECK(rc == RI_ST_OK && g.token == 4 && mono_ms() - t0 < 100, "take after release: %d token %lld", rc,
	    (long long)g.token);
	PASS("lease: release by the holder frees it at once; the next grant's token is 4");

	/* a holder that dies holding the section frees nothing */
	ri_instance_close(r);
	tl_now(t + 10 * SEC);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		ri *c;
		ri_err err;
		struct ri_grant cg;
		if (ri_instance_open(ti.config, 0, &c, &err) != RI_OK)
			_exit(100);
		/* the token is the instance's grant counter: it only ever
		 * increases, for every key (heads.h) */
		if (c->st->ops->take(c->st, "ledger", "dies", "doomed", d, &cg) != RI_ST_OK || cg.token != 5)
			_exit(101);
		kill(getpid(), SIGKILL);
		_exit(102);
	}
	rc = tl_wait(pid);
	CHECK(rc == 128 + SIGKILL, "the holder did not die by SIGKILL: %d", rc);
	r = open_ri(ti.config, 0);
	o = r->st->ops;
	tl_now(t + 10 * SEC + d - 1);
	CHECK(o->remaining(r->st, "ledger", "dies", "doomed", &left) == RI_ST_OK && left == 1,
	    "the dead holder's lease: %lld", (long long)left);
	rc = o->take(r->st, "ledger", "dies", "heir", d, &g);
	CHECK(rc == RI_ST_SECTION_UNAVAILABLE, "taken from a dead holder before expiry: %d", rc);
	tl_now(t + 10 * SEC + d);
	rc = o->take(r->st, "ledger", "dies", "heir", d, &g);
	CHECK(rc == RI_ST_OK && g.token == 6, "after the dead holder's expiry: %d token %lld", rc, (long long)g.token);
	ri_instance_close(r);
	PASS("lease: a holder killed by SIGKILL leaves the section held until its expiry (no release on death)");
}

/* ---- 8. concurrency -------------------------------------------------------- */

#define WRITERS 2
#define PER_WRITER 300

static void
test_concurrency(void)
{
	struct tl_instance ti;
	struct tl_cfg cfg = { 0 };
	pid_t pids[WRITERS];
	int64_t base;

	tl_now(T0);
	tl_instance(&ti, "concurrent", &cfg);
	base = head_of(ti.config);
	fflush(NULL);
	for (int w = 0; w < WRITERS; w++) {
		CHECK((pids[w] = fork()) >= 0, "fork");
		if (pids[w] == 0) {
			ri *r;
			ri_err err;
			if (ri_instance_open(ti.config, 0, &r, &err) != RI_OK) {
				fprintf(stderr, "writer %d: %s\n", w, err.msg);
				_exit(100);
			}
			for (int i = 0; i < PER_WRITER; i++) {
				char data[64], inv[32];
				struct ri_appended out;
				snprintf(data, sizeof data, "{\"w\":%d,\"i\":%d}", w, i);
				snprintf(inv, sizeof inv, "inv_w%d_%d", w, i);
				struct ap a = { "ledger.intended", "shared", inv, "alice", ti.cred, data, NULL, NULL };
				int rc = append(r, &a, &out);
				if (rc != RI_ST_OK) {
					fprintf(stderr, "writer %d append %d: %d %s\n", w, i, rc, st_err(r)->msg);
					_exit(101);
				}
			}
			ri_instance_close(r);
			_exit(0);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int rc = tl_wait(pids[w]);
		CHECK(rc == 0, "writer %d exited %d", w, rc);
	}
	ri *r = open_ri(ti.config, 0);
	struct ri_query q = { .from = 1, .limit = 4096 };
	struct ri_records rs;
	int rc = r->st->ops->range_read(r->st, &q, &rs);
	CHECK(rc == RI_ST_OK && !rs.more, "full read: %d %s", rc, st_err(r)->msg);
	int next_i[WRITERS] = { 0 };
	size_t mine = 0;
	for (size_t i = 0; i < rs.n; i++) {
		CHECK(rs.v[i].seq == (int64_t)i + 1, "seq %lld at %zu", (long long)rs.v[i].seq, i);
		if (strcmp(rs.v[i].action_ref, "ledger.intended") != 0)
			continue;
		int w = (int)json_integer_value(json_object_get(rs.v[i].payload, "w"));
		int k = (int)json_integer_value(json_object_get(rs.v[i].payload, "i"));
		CHECK(w >= 0 && w < WRITERS && k == next_i[w], "writer %d's record %d out of order", w, k);
		next_i[w]++;
		mine++;
	}
	CHECK(mine == WRITERS * PER_WRITER && (int64_t)rs.n == base + WRITERS * PER_WRITER,
	    "%zu records of the writers, %zu in all", mine, rs.n);
	ri_records_clear(&rs);
	q = (struct ri_query){ .from = 1, .kind = "ledger", .act_key = "shared", .limit = 4096 };
	rc = r->st->ops->range_read(r->st, &q, &rs);
	CHECK(rc == RI_ST_OK && rs.n == WRITERS * PER_WRITER, "the act's records: %d %zu", rc, rs.n);
	ri_records_clear(&rs);
	read_all(r, 100);
	ri_instance_close(r);
	PASS("concurrency: %d processes x %d appends under one actor -- exactly %d records, contiguous seqs, the chain verifies",
	    WRITERS, PER_WRITER, WRITERS * PER_WRITER);
}

/* ---- 9. the derived index of open intents --------------------------------- */

static bool
is_open(ri *r, const char *inv, const char *kind, ri_ms aged_by)
{
	struct ri_open_intent *v;
	size_t n;
	bool found = false;
	int rc = r->st->ops->open_intents(r->st, kind, NULL, aged_by, &v, &n);

	CHECK(rc == RI_ST_OK, "open_intents: %d", rc);
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].invocation_id, inv) == 0)
			found = true;
	ri_open_intents_free(v, n);
	return found;
}

static void
test_open_intents(void)
{
	struct tl_instance ti;
	struct tl_cfg cfg = { 0 };
	struct ri_appended in;
	struct ri_open_intent *v;
	size_t n;

	tl_now(T0);
	tl_instance(&ti, "intents", &cfg);
	ri *r = open_ri(ti.config, 0);
	tl_now(T0 + 10);
	append_ok(r, ti.cred, "ledger.intended", "k1", "inv_X", "{}", &in);
	CHECK(is_open(r, "inv_X", NULL, RI_NONE) && is_open(r, "inv_X", "ledger", T0 + 10), "the intent is not open");
	CHECK(!is_open(r, "inv_X", "ledger", T0 + 9), "aged_by before the intent lists it");
	CHECK(!is_open(r, "inv_X", "other", RI_NONE), "another kind lists it");
	CHECK(r->st->ops->open_intents(r->st, "ledger", "k1", RI_NONE, &v, &n) == RI_ST_OK && n == 1 &&
	    v[0].seq == in.seq && strcmp(v[0].event_id, in.event_id) == 0 && v[0].recorded_at == T0 + 10,
	    "the open intent's fields");
	ri_open_intents_free(v, n);
	append_ok(r, ti.cred, "ledger.recovery_intended", "k1", "inv_X", "{}", NULL);
	CHECK(is_open(r, "inv_X", NULL, RI_NONE), "recovery_intended closed the intent");
	append_ok(r, ti.cred, "ledger.intended", "k1", "inv_Y", "{}", NULL);
	append_ok(r, ti.cred, "ledger.disclosed", "k1", "inv_X", "{}", NULL);
	CHECK(!is_open(r, "inv_X", NULL, RI_NONE), "the closing left the intent open");
	CHECK(is_open(r, "inv_Y", NULL, RI_NONE), "closing X closed Y");
	static const char *const closings[] = { "ledger.refused", "ledger.abandoned", "ledger.escalated" };
	for (size_t i = 0; i < 3; i++) {
		char inv[32];
		snprintf(inv, sizeof inv, "inv_c%zu", i);
		append_ok(r, ti.cred, "ledger.intended", "k2", inv, "{}", NULL);
		CHECK(is_open(r, inv, NULL, RI_NONE), "%s not open", inv);
		append_ok(r, ti.cred, closings[i], "k2", inv, "{}", NULL);
		CHECK(!is_open(r, inv, NULL, RI_NONE), "%s did not close it", closings[i]);
	}
	/* oldest first, whatever the invocation ids' order: the index is read
	 * in its key's order (invocation_id) and sorted by seq after (issue 15:
	 * no sort of every row of the index at every Open) */
	static const char *const late[] = { "inv_z9", "inv_m5", "inv_a1" };
	for (size_t i = 0; i < 3; i++)
		append_ok(r, ti.cred, "ledger.intended", "k3", late[i], "{}", NULL);
	CHECK(r->st->ops->open_intents(r->st, NULL, NULL, RI_NONE, &v, &n) == RI_ST_OK && n == 4, "four open: %zu", n);
	for (size_t i = 1; i < n; i++)
		CHECK(v[i - 1].seq < v[i].seq, "open intents out of seq order: %s (seq %lld) before %s (seq %lld)",
		    v[i - 1].invocation_id, (long long)v[i - 1].seq, v[i].invocation_id, (long long)v[i].seq);
	CHECK(strcmp(v[0].invocation_id, "inv_Y") == 0 && strcmp(v[3].invocation_id, "inv_a1") == 0,
	    "oldest first: %s .. %s", v[0].invocation_id, v[3].invocation_id);
	ri_open_intents_free(v, n);
	ri_instance_close(r);
	PASS("open intents: an intent appears, recovery_intended keeps it, a closing (outcome, refused, abandoned, escalated) removes it -- same transaction as the append; listed oldest first");
}

/*
 * A read session (store.h read_session): inside its one snapshot a
 * verified read reuses what an earlier verified read of the same row
 * verified -- and only there.  A row tampered after the session began is
 * not what the session reads (the snapshot holds the row as it was, which
 * verifies); once the session ends, every read meets the tampered row and
 * fails closed.  And a row verified in the session is read again the
 * same: same records, same payloads.
 */
static void
test_read_session(const struct base *b)
{
	struct tl_instance t;
	struct ri_records all, inv1, inv2;
	struct ri_query qa = { .from = 1, .limit = 64 }, qi = { .from = 1, .invocation_id = "inv_A" };
	struct atk *db;

	if (on_pg) {
		/* store.h: read_session is optional, and store_pg.c offers none */
		SKIP("read_session: PostgreSQL's backend offers no read session (store.h: optional)");
		return;
	}
	tl_clone(&b->ti, &t, "t-session");
	ri *r = open_ri(t.config, RI_READONLY);
	CHECK(r->st->ops->read_session != NULL, "the SQLite backend offers read sessions");
	CHECK(r->st->ops->read_session(r->st, true) == RI_ST_OK, "read_session on: %s", st_err(r)->msg);
	CHECK(r->st->ops->range_read(r->st, &qa, &all) == RI_ST_OK && all.n == (size_t)b->last, "the whole journal, verified");
	/* the attacker changes the target (of inv_A) while the session holds its snapshot */
	db = attacker(&t, true);
	flip(db, "payload", TARGET, -1);
	attacker_close(db);
	CHECK(r->st->ops->range_read(r->st, &qi, &inv1) == RI_ST_OK, "inside the session: the snapshot's rows: %s",
	    st_err(r)->msg);
	CHECK(r->st->ops->range_read(r->st, &qi, &inv2) == RI_ST_OK && inv1.n == inv2.n && inv1.n == 4,
	    "the invocation read twice in the session");
	for (size_t i = 0; i < inv1.n; i++)
		CHECK(inv1.v[i].seq == inv2.v[i].seq && json_equal(inv1.v[i].payload, inv2.v[i].payload) &&
		    json_equal(inv1.v[i].payload, all.v[inv1.v[i].seq - 1].payload), "seq %lld the same each read",
		    (long long)inv1.v[i].seq);
	ri_records_clear(&inv1);
	ri_records_clear(&inv2);
	ri_records_clear(&all);
	CHECK(r->st->ops->read_session(r->st, false) == RI_ST_OK, "read_session off");
	/* the session over: the tampered row is met, and fails closed */
	int rc = r->st->ops->range_read(r->st, &qi, &inv1);
	CHECK(rc == RI_ST_INTEGRITY && st_err(r)->seq == TARGET, "after the session: integrity at seq %d, got %d (seq %lld)",
	    TARGET, rc, (long long)st_err(r)->seq);
	ri_instance_close(r);
	PASS("read_session: a verified row is reused only inside its own snapshot; after it, a tampered row fails closed");
}

/*
 * store.h inv_span (issue 15): what the invocation index holds of one
 * invocation -- ri-audit judges an invocation from its stream once the
 * last of these has passed -- and only inside a snapshot, as the trusted
 * reads it stands beside.
 */
static const struct { const char *inv; int64_t first, last, n; } span_want[] = {
	{ "inv_A", 4, 10, 4 }, { "inv_B", 5, 9, 2 }, { "inv_C", 7, 11, 2 }, { "inv_D", 12, 13, 2 },
	{ "inv_none", 0, 0, 0 },
};

static void
span_check(ri *r)
{
	int64_t first, last, n;

	for (size_t i = 0; i < sizeof span_want / sizeof span_want[0]; i++)
		CHECK(r->st->ops->inv_span(r->st, span_want[i].inv, &first, &last, &n) == RI_ST_OK &&
		    first == span_want[i].first && last == span_want[i].last && n == span_want[i].n,
		    "%s: first %lld last %lld n %lld, want %lld %lld %lld", span_want[i].inv, (long long)first,
		    (long long)last, (long long)n, (long long)span_want[i].first, (long long)span_want[i].last,
		    (long long)span_want[i].n);
}

struct span_walk {
	ri *r;
	int checked;
};

/* PostgreSQL's snapshot is the traversal's (store.h: "ri-audit only,
 * inside its traversal's snapshot"): the spans asked from inside it */
static int
span_each(const struct ri_record *rec, unsigned problems, void *arg)
{
	struct span_walk *w = arg;

	(void)rec;
	CHECK(problems == 0, "the traversal found problems at seq %lld", (long long)rec->seq);
	if (w->checked++ == 0)
		span_check(w->r);
	return 0;
}

static void
test_inv_span(const struct base *b)
{
	struct tl_instance t;
	int64_t first, last, n;

	tl_clone(&b->ti, &t, "t-span");
	ri *r = open_ri(t.config, RI_READONLY);
	CHECK(r->st->ops->inv_span != NULL, "the backend offers inv_span");
	CHECK(r->st->ops->inv_span(r->st, "inv_A", &first, &last, &n) == RI_ST_INVALID_QUERY,
	    "outside a snapshot: refused");
	if (r->st->ops->read_session != NULL) {
		CHECK(r->st->ops->read_session(r->st, true) == RI_ST_OK, "read_session on: %s", st_err(r)->msg);
		span_check(r);
		CHECK(r->st->ops->read_session(r->st, false) == RI_ST_OK, "read_session off");
	} else {
		struct span_walk w = { r, 0 };
		CHECK(r->st->ops->traverse(r->st, span_each, &w) == RI_ST_OK && w.checked == (int)b->last,
		    "traverse: %s (%d records)", st_err(r)->msg, w.checked);
	}
	ri_instance_close(r);
	PASS("inv_span: an invocation's first and last seq and its row count from the invocation index, none for an"
	    " unknown one; refused outside a snapshot (%s)", on_pg ? "a traversal's" : "a read session's");
}

int
main(void)
{
	struct base b;

	tl_init();
	if (sodium_init() < 0) {
		fprintf(stderr, "sodium_init failed\n");
		return 1;
	}
	unsetenv("RI_FAULT");
	on_pg = tl_pg_host() != NULL;
	printf("test_store: on %s\n", on_pg ? "PostgreSQL ($RI_TEST_PG_HOST)" : "SQLite");
	/* first: a failure stops the binary, and its negative controls
	 * (RI_NC_SNAPSHOT_CLOCK_STILL, RI_NC_SEEN_NOT_CLEARED; tests/negative/run)
	 * then cost seconds, not the whole binary's run on PostgreSQL */
	test_snapshot_clock();
	test_seen_rewritten();
	test_record_action();
	test_read_record();
	test_range_read();
	make_base(&b);
	test_tamper(&b);
	test_leaf_batches(&b);
	test_read_session(&b);
	test_inv_span(&b);
	test_append_only(&b);
	test_retention();
	test_lease();
	test_concurrency();
	test_open_intents();
	printf("test_store: all passed\n");
	return 0;
}
