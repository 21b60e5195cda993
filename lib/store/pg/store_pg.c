/*
 * store_pg.c -- the substrate ("Audit Trail") and the critical-section
 * host ("Lease") on one PostgreSQL database, for an instance several hosts
 * share (issue 13; docs/POSTGRESQL.md).
 *
 * The same journal as store_sqlite.c -- chained, MACed records, the MACed
 * journal head row, the tree of scope heads (heads.h), the open-intents
 * accumulator, MACed leases, marks and actors, the witness -- judged by
 * the same code (store_common.h, heads.h): every MAC and hash is computed
 * here, on the host, so the integrity key never reaches the server.
 *
 * Isolation and lock order.  Every write runs in READ COMMITTED and takes,
 * as its first statement, the journal head row FOR UPDATE; every other row
 * lock (a lease FOR UPDATE, a record or node written) comes after it.  One
 * lock first, always the same one: writers are serialized on the head --
 * as SQLite's BEGIN IMMEDIATE serializes them -- and no two transactions
 * can wait on each other in a cycle.  Under READ COMMITTED each statement
 * after the head lock sees every transaction committed before the lock was
 * granted, so what the append verifies is what it extends.  Reads run in
 * REPEATABLE READ READ ONLY: one snapshot per read, so a concurrent append
 * never looks like tampering.
 *
 * Time.  Lease expiry and recorded_at come from the server's clock
 * (clock_timestamp(), through the schema's ri_clock()), the one clock every
 * host shares; a host's own clock only sets its local deadlines.  Under
 * "clock": "env" (a test seam) ri_clock() answers the host's $RI_NOW.
 *
 * Failure mapping (record_action): a failure before COMMIT is sent -- the
 * connection lost, a statement refused, a lock or statement timeout -- is
 * step 2 (nothing landed: the server rolls an unfinished transaction
 * back); COMMIT refused by the server (the deferred fence check) is fenced;
 * COMMIT sent and no reply is a lost reply, which the protocol reads back
 * by event id.  Sequence numbers come from the head row, never a
 * PostgreSQL SEQUENCE (which leaves gaps on rollback).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include <libpq-fe.h>

#include "util/clock.h"
#include "util/fault.h"
#include "store/heads.h"
#include "util/integrity.h"
#include "util/nc.h"
#include "store/store_engine.h"
#include "store/pg/store_pg.h"
#include "store/pg/pq.h"
#include "store/witness.h"

#define SQLSTATE_FENCE "RIF01"          /* raised by ri_fence_check() at COMMIT */
#define QMAX 16                         /* deferred writes held at most (then sent) */
#define AHEAD_MAX 6                     /* reads sent ahead in one round trip at most */

struct pg {
	struct ri_store base;
	struct ri_st_core core;        /* store_common.h */
	PGconn *conn;
	bool readonly;
	bool in_tx;                     /* a transaction of ours is open */
	ri_ms budget;                   /* the per-write budget: jwb (less the allowance) */
	struct ri_tree_cache nodes;
	/* tree nodes of the open transaction by id: the paths a read fetched
	 * in one statement (prefetch), and the nodes a write changed, sent in
	 * one statement before the head moves (nodes_flush) */
	struct pnode {
		unsigned char id[RI_NODE_ID_MAX], body[RI_NODE_MAX];
		size_t idlen, len;
		bool present, dirty;
	} *nmap;
	size_t nn;
	/* an append's two scopes (act, invocation): their newest rows read in
	 * one statement with both tree paths (scopes_prefetch), each taken
	 * once by scope_max in the same transaction */
	struct prescope {
		bool valid, has;
		int type;
		unsigned char key[RI_SCOPE_LEN], hash[RI_HASH_LEN];
		int64_t seq;
	} pre[2];
	ri_ms last_at;                  /* recorded_at of the head's record, as last fetched */
	/* writes nobody reads the answer of, waiting to go with the next
	 * statement that must answer or with COMMIT (defer_write) */
	char *q;
	size_t qlen, qcap;
	int qn;
	bool qfailed;                   /* a deferred write failed: the transaction is lost */
	int qcode;                      /* ... with this code (its own) */
	struct { int code; const char *what; } qi[QMAX];
	/* reads sent ahead in a write's first round trip (ahead_queue), each
	 * answered from here when its own statement runs (run) */
	struct ahead {
		char *sql;              /* the statement, its values inlined */
		const char *tables;     /* what it reads: " records nodes " */
		PGresult *r;            /* its answer (NULL: none came) */
	} ahead[AHEAD_MAX];
	int nahead;
	char written[128];              /* the tables this transaction wrote: " records nodes " */
	bool written_all;
	char *fence;                    /* journal fence 3: ri.fence's value, sent with the writes */
	unsigned long round_trips;      /* RI_PG_TRACE: counted, printed at close */
	unsigned long rt0;              /* round_trips when record_action began (the trace) */
	int trace;                      /* RI_PG_TRACE=2: every statement too */
};

/* Every table is typed by PostgreSQL itself; the schema is fingerprinted
 * at ri-init and its fingerprint MACed (schema_check). */
static const char schema_ddl[] =
	"CREATE TABLE ri_meta(k text PRIMARY KEY, v text NOT NULL);"
	"CREATE TABLE records("
	"  seq bigint PRIMARY KEY,"
	"  event_id text NOT NULL UNIQUE,"
	"  action_ref text NOT NULL,"
	"  kind text NOT NULL,"
	"  act_key text NOT NULL,"
	"  invocation_id text,"
	"  actor_ref text NOT NULL,"
	"  attestation_id text NOT NULL,"
	"  recorded_at bigint NOT NULL,"
	"  retention_until bigint,"
	"  role integer NOT NULL,"
	"  act_prev bigint NOT NULL,"
	"  inv_prev bigint NOT NULL,"
	"  payload text,"
	"  salt bytea,"
	"  digest bytea NOT NULL,"
	"  hash bytea NOT NULL,"
	"  mac bytea NOT NULL);"
	"CREATE INDEX records_invocation ON records(invocation_id, seq);"
	"CREATE INDEX records_act ON records(kind, act_key, seq);"
	"CREATE INDEX records_retention ON records(retention_until) WHERE payload IS NOT NULL;"
	"CREATE TABLE heads(id integer PRIMARY KEY CHECK (id = 1), last_seq bigint NOT NULL,"
	"  root bytea NOT NULL, open_count bigint NOT NULL, open_acc bytea NOT NULL,"
	"  sealed_seq bigint NOT NULL, grants bigint NOT NULL, mac bytea NOT NULL);"
	"CREATE TABLE nodes(id bytea PRIMARY KEY, body bytea NOT NULL);"
	"CREATE TABLE open_intents(invocation_id text PRIMARY KEY, seq bigint NOT NULL,"
	"  kind text NOT NULL, act_key text NOT NULL, event_id text NOT NULL,"
	"  recorded_at bigint NOT NULL);"
	"CREATE INDEX open_intents_act ON open_intents(kind, act_key);"
	"CREATE INDEX open_intents_age ON open_intents(kind, recorded_at);"
	"CREATE TABLE actors(actor_ref text PRIMARY KEY, service integer NOT NULL,"
	"  cred_hash bytea NOT NULL, created_at bigint NOT NULL, revoked_at bigint,"
	"  reg_seq bigint NOT NULL, mac bytea NOT NULL);"
	"CREATE TABLE leases(kind text NOT NULL, act_key text NOT NULL, holder text,"
	"  expires_at bigint NOT NULL, token bigint NOT NULL, mac bytea NOT NULL,"
	"  PRIMARY KEY(kind, act_key));"
	"CREATE TABLE marks(name text PRIMARY KEY, seq bigint NOT NULL, mac bytea NOT NULL);"
	/* the findings register (issue 41 point 5, one findings register per
	 * instance): the SQLite register's columns and rows, MACed alike
	 * (findings_pg.c); every host writes it, so it lives here */
	"CREATE TABLE findings("
	"  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
	"  finding text NOT NULL,"
	"  scope text NOT NULL CHECK (scope IN ('act', 'instance')),"
	"  kind text,"
	"  act_key text,"
	"  invocation_id text,"
	"  first_seen text NOT NULL,"
	"  first_seen_at bigint NOT NULL,"
	"  last_seen text,"
	"  last_seen_at bigint,"
	"  closed_at bigint,"
	"  run_id text NOT NULL,"
	"  detail text,"
	"  mac bytea);"
	/* findings 12: one record per standing condition */
	"CREATE UNIQUE INDEX findings_act ON findings(invocation_id, finding) WHERE scope = 'act';"
	"CREATE UNIQUE INDEX findings_instance ON findings(finding, coalesce(kind, ''))"
	"  WHERE scope = 'instance' AND closed_at IS NULL;"
	"CREATE INDEX findings_kind ON findings(kind, id);"
	"CREATE TABLE findings_runs(run_id text PRIMARY KEY, started_at bigint NOT NULL,"
	"  seq bigint NOT NULL UNIQUE);"
	/* append-only at the database level: no DELETE, no TRUNCATE, and an
	 * UPDATE only nulls a payload (and its salt) whose retention ended */
	"CREATE FUNCTION ri_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
	"  IF TG_OP = 'UPDATE' AND NEW.payload IS NULL AND NEW.salt IS NULL AND OLD.payload IS NOT NULL"
	"    AND OLD.retention_until IS NOT NULL AND OLD.retention_until <= ri_clock()"
	"    AND ROW(NEW.seq, NEW.event_id, NEW.action_ref, NEW.kind, NEW.act_key, NEW.invocation_id,"
	"      NEW.actor_ref, NEW.attestation_id, NEW.recorded_at, NEW.retention_until, NEW.role,"
	"      NEW.act_prev, NEW.inv_prev, NEW.digest, NEW.hash, NEW.mac)"
	"    IS NOT DISTINCT FROM ROW(OLD.seq, OLD.event_id, OLD.action_ref, OLD.kind, OLD.act_key,"
	"      OLD.invocation_id, OLD.actor_ref, OLD.attestation_id, OLD.recorded_at,"
	"      OLD.retention_until, OLD.role, OLD.act_prev, OLD.inv_prev, OLD.digest, OLD.hash, OLD.mac)"
	"  THEN RETURN NEW; END IF;"
	"  RAISE EXCEPTION 'ri: the journal is append-only; only an expired payload may be purged';"
	"END $$;"
	"CREATE TRIGGER records_append_only BEFORE UPDATE OR DELETE ON records"
	"  FOR EACH ROW EXECUTE FUNCTION ri_append_only();"
	"CREATE TRIGGER records_no_truncate BEFORE TRUNCATE ON records"
	"  FOR EACH STATEMENT EXECUTE FUNCTION ri_append_only();"
	/* journal fence 3: checked again at COMMIT, by the server, on its own
	 * clock -- a writer stalled (partitioned, paused) past its lease or
	 * its write's terminus between the append and the COMMIT is refused
	 * there, not landed late.  ri.fence is the transaction's fence, set
	 * by the append (transaction-local); the lease row is locked by it. */
	"CREATE FUNCTION ri_fence_check() RETURNS trigger LANGUAGE plpgsql AS $$"
	" DECLARE f jsonb := nullif(current_setting('ri.fence', true), '')::jsonb; ok boolean; BEGIN"
	"  IF f IS NULL THEN RETURN NULL; END IF;"
	"  SELECT true INTO ok FROM leases l WHERE l.kind = f->>'kind' AND l.act_key = f->>'act_key'"
	"    AND l.holder = f->>'holder' AND ri_clock() < l.expires_at - (f->>'allowance')::bigint"
	"    AND ri_clock() < (f->>'until')::bigint;"
	"  IF ok IS NULL THEN RAISE EXCEPTION USING ERRCODE = 'RIF01', MESSAGE ="
	"    'journal fence: the writer no longer holds the section with an allowance to spare at COMMIT';"
	"  END IF; RETURN NULL; END $$;"
	"CREATE CONSTRAINT TRIGGER records_fence AFTER INSERT ON records DEFERRABLE INITIALLY DEFERRED"
	"  FOR EACH ROW EXECUTE FUNCTION ri_fence_check();"
	/* every name these functions use is the instance's own schema's (or
	 * pg_catalog's, searched first): a session's search_path cannot put a
	 * ri_clock() or a clock_timestamp() of its own in front of them */
	"DO $$ BEGIN"
	"  EXECUTE format('ALTER FUNCTION ri_clock() SET search_path = %I', current_schema());"
	"  EXECUTE format('ALTER FUNCTION ri_append_only() SET search_path = %I', current_schema());"
	"  EXECUTE format('ALTER FUNCTION ri_fence_check() SET search_path = %I', current_schema());"
	"END $$;";

/*
 * The instance's one clock, ri_clock(), fixed at ri-init by the config's
 * "clock" (issue 40 point 2): the server's own, or -- under "clock": "env",
 * a test seam -- the reading of $RI_NOW each session passes in ri.clock.
 * Retention is decided by it (ri_append_only): were the server's clock to
 * defer to a session setting, any role that may UPDATE records could set
 * ri.clock to the end of time in its own session and purge every payload.
 * Only the schema's owner can replace the function (and ri-startcheck's
 * journal-clock names which clock the journal has).
 */
static const char clock_ddl_server[] =
	"CREATE FUNCTION ri_clock() RETURNS bigint LANGUAGE sql VOLATILE AS $$"
	"  SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;";
static const char clock_ddl_env[] =
	"CREATE FUNCTION ri_clock() RETURNS bigint LANGUAGE sql VOLATILE AS $$"
	"  SELECT coalesce(nullif(current_setting('ri.clock', true), '')::bigint,"
	"    floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) $$;";

/* The schema's fingerprint: every column with its type and nullability,
 * every index, trigger (and whether it is enabled) and ri function, every
 * view -- so a re-typed column, a dropped or disabled trigger or an added
 * index shows.  MACed at ri-init (meta schema_mac).  From pg_catalog, not
 * information_schema: every process that opens the journal reads it. */
static const char schema_sql[] =
	"SELECT coalesce(string_agg(x, E'\\n' ORDER BY x), '') FROM ("
	" SELECT 'c ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)"
	"  || ' ' || a.attnotnull::text AS x"
	"  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
	"  WHERE n.nspname = current_schema() AND a.attnum > 0 AND NOT a.attisdropped"
	"  AND c.relkind IN ('r', 'v', 'm', 'p', 'f')"
	" UNION ALL SELECT 'i ' || pg_get_indexdef(i.indexrelid) FROM pg_index i"
	"  JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
	"  WHERE n.nspname = current_schema()"
	" UNION ALL SELECT 't ' || t.tgname || ' ' || t.tgenabled::text || ' ' || pg_get_triggerdef(t.oid)"
	"  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
	"  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema()"
	"  AND NOT t.tgisinternal"
	" UNION ALL SELECT 'f ' || p.proname || ' ' || md5(p.prosrc) FROM pg_proc p"
	"  JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema()"
	" UNION ALL SELECT 'v ' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
	"  WHERE n.nspname = current_schema() AND c.relkind IN ('v', 'm')) s";

#define REC_COLS "seq, event_id, action_ref, kind, act_key, invocation_id, actor_ref," \
	" attestation_id, recorded_at, retention_until, role, act_prev, inv_prev," \
	" payload, salt, digest, hash, mac"

/* ---- errors ---------------------------------------------------------- */




/* The server's (or libpq's) message for a failed statement, one line. */
static int
db_fail(struct pg *s, int code, const char *what, const PGresult *res)
{
	/* a deferred write's failure, charged to it, stands for what follows
	 * (its code is a failure's: db_fail's own, never RI_ST_OK) */
	if (s->qfailed && s->qcode != RI_ST_OK)
		return s->qcode;
	const char *m = res != NULL && PQresultErrorMessage(res)[0] != '\0' ? PQresultErrorMessage(res) :
	    PQerrorMessage(s->conn);
	char line[400];

	/* the server's word, one line, never a password (issue 40 point 9) */
	ri_redact(m, line, sizeof line);
	for (char *p = line; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return ri_st_fail(&s->core, code, 0, NULL, "journal (postgresql): %s: %s", what, line);
}


static const struct ri_store_error *
pg_error(struct ri_store *st)
{
	return &((struct pg *)st)->core.err;
}

/* ---- parameters and results -------------------------------------------- */

#define PMAX 64

struct params {
	int n;
	const char *v[PMAX];
	int len[PMAX], fmt[PMAX];
	char buf[PMAX][24];
};

static void
p_text(struct params *p, const char *v)
{
	p->v[p->n] = v;
	p->len[p->n] = 0;
	p->fmt[p->n] = 0;
	p->n++;
}

static void
p_int(struct params *p, int64_t v)
{
	snprintf(p->buf[p->n], sizeof p->buf[p->n], "%lld", (long long)v);
	p_text(p, p->buf[p->n]);
}

static void
p_ms(struct params *p, ri_ms v)
{
	if (v == RI_NONE)
		p_text(p, NULL);
	else
		p_int(p, v);
}

/* bytea goes binary: no escaping, no ambiguity */
static void
p_bytes(struct params *p, const unsigned char *b, size_t n)
{
	p->v[p->n] = (const char *)b;
	p->len[p->n] = (int)n;
	p->fmt[p->n] = 1;
	p->n++;
}

/* ---- deferred writes --------------------------------------------------------
 *
 * A write whose answer nobody reads (the record's INSERT, the changed tree
 * nodes, the head, a lease row) is not sent alone: it waits in the
 * transaction's queue, its parameters inlined as literals (text quoted
 * under standard_conforming_strings, bytea as '\x..'), and goes in one
 * simple-query string with the next statement that must answer (run) or
 * with COMMIT (commit) -- issue 13, round trips per append.  The queue
 * always goes first, so nothing is reordered and every read sees the
 * transaction's own writes; each statement still answers on its own (one
 * result each, in order), so a failure is charged to the write that made
 * it, and the server runs nothing after a failed statement.
 */
static bool
q_add(struct pg *s, const char *text, size_t n)
{
	if (s->qlen + n + 1 > s->qcap) {
		size_t cap = s->qcap ? s->qcap : 4096;
		while (cap < s->qlen + n + 1)
			cap *= 2;
		char *q = realloc(s->q, cap);
		if (q == NULL)
			return false;
		s->q = q;
		s->qcap = cap;
	}
	memcpy(s->q + s->qlen, text, n);
	s->qlen += n;
	s->q[s->qlen] = '\0';
	return true;
}

/* sql with p's values inlined as literals, then a statement separator */
static bool
q_inline(struct pg *s, const char *sql, const struct params *p)
{
	static const char hex[] = "0123456789abcdef";
	bool ok = true;

	for (const char *c = sql; *c != '\0' && ok;) {
		if (*c != '$' || !isdigit((unsigned char)c[1])) {
			ok = q_add(s, c++, 1);
			continue;
		}
		char *end;
		long i = strtol(c + 1, &end, 10) - 1;
		c = end;
		if (p == NULL || i < 0 || i >= p->n)
			return false;
		const char *v = p->v[i];
		if (v == NULL) {
			ok = q_add(s, "NULL", 4);
		} else if (p->fmt[i] == 1) {
			ok = q_add(s, "'\\x", 3);
			for (int k = 0; k < p->len[i] && ok; k++) {
				char h[2] = { hex[(unsigned char)v[k] >> 4], hex[(unsigned char)v[k] & 15] };
				ok = q_add(s, h, 2);
			}
			ok = ok && q_add(s, "'::bytea", 8);
		} else {
			ok = q_add(s, "'", 1);
			for (const char *t = v; *t != '\0' && ok; t++)
				ok = q_add(s, t, 1) && (*t != '\'' || q_add(s, "'", 1));
			ok = ok && q_add(s, "'", 1);
		}
	}
	return ok && q_add(s, ";\n", 2);
}

static void
q_clear(struct pg *s)
{
	s->qlen = 0;
	s->qn = 0;
	if (s->q != NULL)
		s->q[0] = '\0';
}

static int db_fail(struct pg *s, int code, const char *what, const PGresult *res);
static bool res_ok(const PGresult *r);

/* sql with p's values inlined (as q_inline writes it), in a new string */
static char *
q_text(struct pg *s, const char *sql, const struct params *p)
{
	size_t mark = s->qlen;
	char *t = NULL;

	if (q_inline(s, sql, p))
		t = ri_strdup(s->q + mark);
	s->qlen = mark;
	if (s->q != NULL)
		s->q[mark] = '\0';
	return t;
}

/*
 * Read-ahead (issue 13: round trips per append).  A write that knows the
 * reads it will make queues them before it begins; its first round trip
 * (jhead_fetch_tx) carries them after the head's lock and read, in order,
 * each a statement of its own (READ COMMITTED: each sees every commit
 * before the head's lock was granted, as when sent one by one).  When the
 * code then runs the same statement with the same values, run() answers
 * from here -- once, and only while no write of the same transaction has
 * touched a table it reads (note_write), so an answer never predates a
 * change it would see.  Every writer takes the head's lock first, so no
 * other transaction changes what was read.  What is not asked for is
 * dropped at the transaction's end.
 */
static void
ahead_queue(struct pg *s, const char *tables, const char *sql, const struct params *p)
{
	char *t;

	if (s->nahead == AHEAD_MAX || (t = q_text(s, sql, p)) == NULL)
		return;
	s->ahead[s->nahead].sql = t;
	s->ahead[s->nahead].tables = tables;
	s->ahead[s->nahead].r = NULL;
	s->nahead++;
}

/* A write of this transaction: the table it changes is noted, so no read
 * sent ahead of it answers for that table afterwards. */
static void
note_write(struct pg *s, const char *sql)
{
	static const char *const verbs[] = { "INSERT INTO ", "UPDATE ", "DELETE FROM " };
	char name[40];
	size_t len = strlen(s->written);

	for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
		size_t n = strlen(verbs[i]), k = 0;
		if (strncmp(sql, verbs[i], n) != 0)
			continue;
		name[k++] = ' ';
		for (const char *c = sql + n; *c != '\0' && *c != ' ' && *c != '(' && k < sizeof name - 2; c++)
			name[k++] = *c;
		name[k++] = ' ';
		name[k] = '\0';
		if (strstr(s->written, name) != NULL)
			return;
		if (len + k < sizeof s->written)
			memcpy(s->written + (len ? len - 1 : 0), name, k + 1);
		else
			s->written_all = true;  /* cannot tell: no read answers from ahead any more */
		return;
	}
}

/* Is one of the tables (" a b ") written in this transaction? */
static bool
written_any(const struct pg *s, const char *tables)
{
	char name[40];

	for (const char *c = tables; *c != '\0';) {
		size_t k = 0;
		while (*c == ' ')
			c++;
		if (*c == '\0')
			break;
		name[k++] = ' ';
		while (*c != '\0' && *c != ' ' && k < sizeof name - 2)
			name[k++] = *c++;
		name[k++] = ' ';
		name[k] = '\0';
		if (strstr(s->written, name) != NULL)
			return true;
	}
	return false;
}

static void
ahead_clear(struct pg *s)
{
	for (int i = 0; i < s->nahead; i++) {
		free(s->ahead[i].sql);
		PQclear(s->ahead[i].r);
	}
	s->nahead = 0;
	s->written[0] = '\0';
	s->written_all = false;
}

/* the answer sent ahead for this statement, or false */
static bool
ahead_take(struct pg *s, const char *sql, const struct params *p, PGresult **r)
{
	char *t;
	bool found = false;

	if (s->nahead == 0 || s->written_all || (t = q_text(s, sql, p)) == NULL)
		return false;
	for (int i = 0; i < s->nahead && !found; i++) {
		if (s->ahead[i].sql == NULL || s->ahead[i].r == NULL || strcmp(s->ahead[i].sql, t) != 0 ||
		    written_any(s, s->ahead[i].tables))
			continue;
		*r = s->ahead[i].r;
		s->ahead[i].r = NULL;
		free(s->ahead[i].sql);
		s->ahead[i].sql = NULL;
		found = true;
	}
	free(t);
	return found;
}

/*
 * RI_PG_TRACE=2: one line a round trip -- how many statements went, and the
 * head of each (up to 40 bytes; a quoted literal shows as ?), so a reader
 * sees every statement that travelled, never a value.
 */
static void
trace_trip(int n, const char *sql)
{
	bool quoted = false, head = true;
	int len = 0, nth = 0;

	fprintf(stderr, "ri: pg: [%d in one round trip] ", n);
	for (const char *c = sql; *c != '\0'; c++) {
		if (*c == '\'') {
			quoted = !quoted;
			if (quoted && head && len < 40) {
				if (len == 0 && nth++ > 0)
					fputs(" | ", stderr);
				fputc('?', stderr), len++;
			}
			continue;
		}
		if (quoted)
			continue;
		if (*c == ';') {
			head = true, len = 0;
			continue;
		}
		if (head && len == 0 && (*c == ' ' || *c == '\n'))
			continue;
		if (head && len == 0 && nth++ > 0)
			fputs(" | ", stderr);
		if (head && len < 40)
			fputc(*c == '\n' ? ' ' : *c, stderr), len++;
		else
			head = false;
	}
	fputc('\n', stderr);
}

/*
 * sql -- statements separated by "; ", the last of which answers -- with
 * the reads queued ahead after it, in one round trip.  The last statement's
 * answer is returned; each read's answer is kept for run().  Once a
 * statement fails the server runs none after it: those reads have no
 * answer, and run() sends them itself (to a transaction that has failed).
 */
static PGresult *
exec_ahead(struct pg *s, const char *sql)
{
	PGresult *r, *last = NULL;
	size_t n = strlen(sql) + 3;
	int base = 1, i = 0;
	char *all;

	s->round_trips++;
	if (s->nahead == 0)
		return PQexec(s->conn, sql);
	for (const char *c = sql; (c = strstr(c, "; ")) != NULL; c += 2)
		base++;
	for (int k = 0; k < s->nahead; k++)
		n += strlen(s->ahead[k].sql);
	all = ri_xcalloc(1, n);
	size_t len = (size_t)snprintf(all, n, "%s;\n", sql);
	for (int k = 0; k < s->nahead; k++)
		len += (size_t)snprintf(all + len, n - len, "%s", s->ahead[k].sql);
	if (s->trace > 1)
		trace_trip(base + s->nahead, all);
	if (!PQsendQuery(s->conn, all)) {
		free(all);
		return NULL;
	}
	free(all);
	while ((r = PQgetResult(s->conn)) != NULL) {
		if (i == base - 1)
			last = r;
		else if (i >= base && i - base < s->nahead)
			s->ahead[i - base].r = r;
		else
			PQclear(r);
		i++;
	}
	return last;
}

/*
 * Send the queue and the statement already appended after it (counted in
 * s->qn + 1 statements when with_last) in one round trip.  A queued
 * write's failure is charged to it (s->core.err, its code; s->qfailed); the
 * last statement's own result is returned (NULL when a write before it
 * failed, or no answer came).  *answered: how many statements answered.
 */
static PGresult *
q_send(struct pg *s, bool with_last, int *answered)
{
	PGresult *r, *last = NULL;
	int i = 0, n = s->qn + (with_last ? 1 : 0);

	s->round_trips++;
	if (s->trace > 1)
		trace_trip(n, s->q);
	*answered = 0;
	if (!PQsendQuery(s->conn, s->q)) {
		q_clear(s);
		return NULL;
	}
	while ((r = PQgetResult(s->conn)) != NULL) {
		if (i < s->qn) {
			if (!res_ok(r) && !s->qfailed) {
				s->qcode = db_fail(s, s->qi[i].code, s->qi[i].what, r);
				s->qfailed = true;
			}
			PQclear(r);
		} else if (i == s->qn && with_last) {
			last = r;
		} else {
			PQclear(r);
		}
		i++;
	}
	*answered = i;
	q_clear(s);
	if (s->qfailed) {
		PQclear(last);
		return NULL;
	}
	return last;
}

/* A write whose answer nobody reads: queued (sent with the next statement
 * that answers, or with COMMIT); a full queue is sent first. */
static int
defer_write(struct pg *s, int code, const char *what, const char *sql, const struct params *p)
{
	int answered = 0;

	if (s->qn == QMAX) {
		PQclear(q_send(s, false, &answered));
		if (s->qfailed)
			return s->qcode;
		if (answered < QMAX)
			return db_fail(s, code, what, NULL);
	}
	if (!q_inline(s, sql, p))
		return ri_st_fail(&s->core, RI_ST_UNAVAILABLE, 0, NULL, "journal (postgresql): %s: out of memory", what);
	note_write(s, sql);
	s->qi[s->qn].code = code;
	s->qi[s->qn].what = what;
	s->qn++;
	return RI_ST_OK;
}

/* One statement, one round trip (with the deferred writes before it, when
 * any wait); results in text form.  NULL result only when libpq could not
 * even allocate one, a deferred write failed, or no answer came. */
static PGresult *
run(struct pg *s, const char *sql, const struct params *p)
{
	int answered;

	PGresult *r;

	if (ahead_take(s, sql, p, &r))
		return r;
	note_write(s, sql);
	if (s->qn > 0) {
		if (!q_inline(s, sql, p))
			return NULL;
		return q_send(s, true, &answered);
	}
	s->round_trips++;
	if (s->trace > 1)
		fprintf(stderr, "ri: pg: %.70s\n", sql);
	return PQexecParams(s->conn, sql, p ? p->n : 0, NULL, p ? p->v : NULL, p ? p->len : NULL,
	    p ? p->fmt : NULL, 0);
}

static bool
res_ok(const PGresult *r)
{
	ExecStatusType t = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;

	return t == PGRES_TUPLES_OK || t == PGRES_COMMAND_OK;
}

/* A statement whose result is not needed: OK or the failure code. */
static int
exec1(struct pg *s, int code, const char *what, const char *sql, const struct params *p)
{
	PGresult *r = run(s, sql, p);
	int rc = res_ok(r) ? RI_ST_OK : db_fail(s, code, what, r);

	PQclear(r);
	return rc;
}

static bool
g_null(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col);
}

static int64_t
g_int(const PGresult *r, int row, int col)
{
	return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static ri_ms
g_ms(const PGresult *r, int row, int col)
{
	return g_null(r, row, col) ? RI_NONE : g_int(r, row, col);
}

static char *
g_dup(const PGresult *r, int row, int col)
{
	return g_null(r, row, col) ? NULL : ri_strdup(PQgetvalue(r, row, col));
}

/* A bytea column (text form "\x<hex>") of exactly n bytes, copied out. */
static bool
g_bytes(const PGresult *r, int row, int col, unsigned char *out, size_t n)
{
	const char *v;
	size_t got = 0;

	if (g_null(r, row, col))
		return false;
	v = PQgetvalue(r, row, col);
	if (strncmp(v, "\\x", 2) != 0 || strlen(v + 2) != 2 * n)
		return false;
	return sodium_hex2bin(out, n, v + 2, 2 * n, NULL, &got, NULL) == 0 && got == n;
}

/* A bytea column of at most max bytes (tree nodes). */
static bool
g_bytes_var(const PGresult *r, int row, int col, unsigned char *out, size_t max, size_t *len)
{
	const char *v;
	size_t hl;

	if (g_null(r, row, col))
		return false;
	v = PQgetvalue(r, row, col);
	if (strncmp(v, "\\x", 2) != 0 || (hl = strlen(v + 2)) % 2 != 0 || hl / 2 > max || hl == 0)
		return false;
	return sodium_hex2bin(out, max, v + 2, hl, NULL, len, NULL) == 0 && *len == hl / 2;
}

/* ---- connection and transactions ------------------------------------------ */

/* The session's bounds (issue 13 item 4): no statement, lock wait or idle
 * transaction of ours outlives the per-write budget, so a writer cut off
 * mid-transaction leaves nothing locked past it, and a late COMMIT of a
 * session the server already ended cannot land. */
static int
session_setup(struct pg *s)
{
	char sql[512];
	PGresult *r;
	int rc;

	snprintf(sql, sizeof sql,
	    "SET idle_in_transaction_session_timeout = %lld; SET lock_timeout = %lld;"
	    " SET statement_timeout = %lld; SET synchronous_commit = on; SET client_encoding = 'UTF8';"
	    " SET standard_conforming_strings = on;"
	    " SET default_transaction_isolation = 'read committed'%s",
	    (long long)s->budget, (long long)s->budget, (long long)s->budget,
	    s->readonly ? "; SET default_transaction_read_only = on" : "");
	s->round_trips++;
	r = PQexec(s->conn, sql);
	rc = res_ok(r) ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "session", r);
	PQclear(r);
	return rc;
}

/* A lost connection is re-made at the next operation (the read-back after
 * a lost reply needs one). */
static int
connected(struct pg *s)
{
	if (PQstatus(s->conn) == CONNECTION_OK)
		return RI_ST_OK;
	s->in_tx = false;
	PQreset(s->conn);
	if (PQstatus(s->conn) != CONNECTION_OK)
		return db_fail(s, RI_ST_UNAVAILABLE, "connect", NULL);
	return session_setup(s);
}

/* The env clock seam: the session's transactions see the host's $RI_NOW
 * as ri_clock() (set per transaction: RI_NOW is read per process). */
static int
clock_clause(struct pg *s, char *out, size_t n)
{
	ri_ms now;
	ri_err e;

	out[0] = '\0';
	if (!s->core.cfg->clock_env)
		return RI_ST_OK;
	if (ri_now(s->core.cfg, &now, &e) != RI_OK)
		return ri_st_fail(&s->core, RI_ST_UNAVAILABLE, 0, NULL, "%s", e.msg);
	snprintf(out, n, "; SELECT set_config('ri.clock', '%lld', true)", (long long)now);
	return RI_ST_OK;
}

/* The text that opens a transaction (a reconnect first when needed). */
static int
begin_sql(struct pg *s, bool write, bool long_read, char *sql, size_t n)
{
	char clk[96];
	int rc;

	ri_tree_cache_clear(&s->nodes);
	s->nn = 0;
	s->pre[0].valid = s->pre[1].valid = false;
	if ((rc = connected(s)) != RI_ST_OK)
		return rc;
	if ((rc = clock_clause(s, clk, sizeof clk)) != RI_ST_OK)
		return rc;
	snprintf(sql, n, "BEGIN ISOLATION LEVEL %s%s%s",
	    write ? "READ COMMITTED" : "REPEATABLE READ READ ONLY",
	    long_read ? "; SET LOCAL statement_timeout = 0; SET LOCAL idle_in_transaction_session_timeout = 0" : "",
	    clk);
	return RI_ST_OK;
}

static int
tx_begin(struct pg *s, bool write, bool long_read)
{
	char sql[256];
	PGresult *r;
	int rc;

	if ((rc = begin_sql(s, write, long_read, sql, sizeof sql)) != RI_ST_OK)
		return rc;
	s->round_trips++;
	r = PQexec(s->conn, sql);
	rc = res_ok(r) ? RI_ST_OK : db_fail(s, RI_ST_UNAVAILABLE, "begin", r);
	PQclear(r);
	if (rc == RI_ST_OK)
		s->in_tx = true;
	return rc;
}

static void
rollback(struct pg *s)
{
	if (s->in_tx && PQstatus(s->conn) == CONNECTION_OK) {
		s->round_trips++;
		PQclear(PQexec(s->conn, "ROLLBACK"));
	}
	s->in_tx = false;
	s->nn = 0;
	s->pre[0].valid = s->pre[1].valid = false;
	q_clear(s);
	s->qfailed = false;
	ri_tree_cache_clear(&s->nodes);
	ri_st_witness_discard(&s->core);
	ahead_clear(s);
	free(s->fence);
	s->fence = NULL;
}

/* keep the failing call's error over the rollback's */
static void
rollback_keep(struct pg *s)
{
	struct ri_store_error keep = s->core.err;

	rollback(s);
	s->core.err = keep;
}

/*
 * COMMIT.  RI_ST_OK; RI_ST_FENCED when the server refused it at the
 * deferred fence check (journal fence 3); RI_ST_LOST when it was sent and
 * no answer came (the connection died: it may have landed); RI_ST_STEP3
 * when the server refused it otherwise.
 */
static int
commit(struct pg *s)
{
	PGresult *r;
	int rc = RI_ST_OK;

	/* every node a write changed was sent with the head (nodes_flush);
	 * one left unsent would be a root the rows do not hold */
	for (size_t i = 0; i < s->nn; i++)
		if (s->nmap[i].dirty) {
			rollback(s);
			return ri_st_fail(&s->core, RI_ST_STEP2, 0, NULL, "internal: a tree node was not written");
		}
	ri_tree_cache_clear(&s->nodes);
	s->nn = 0;
	s->pre[0].valid = s->pre[1].valid = false;
	ahead_clear(s);
	free(s->fence);
	s->fence = NULL;
	if (s->qfailed) {
		/* a deferred write failed and the server ran nothing after it */
		rc = ri_st_recode(&s->core, s->qcode == RI_ST_STALE_BINDINGS ? s->qcode : RI_ST_STEP2);
		rollback(s);
		return rc;
	}
	if (s->qn > 0) {
		/* the deferred writes and COMMIT, in one round trip */
		int queued = s->qn, answered;
		q_add(s, "COMMIT", 6);
		r = q_send(s, true, &answered);
		s->in_tx = false;
		if (s->qfailed && PQstatus(s->conn) != CONNECTION_OK) {
			/* the session died under the batch: whether COMMIT ran is
			 * for the read-back to say, never assumed */
			PQclear(r);
			s->qfailed = false;
			rc = db_fail(s, RI_ST_LOST, "commit sent, no reply", NULL);
			s->in_tx = true;
			rollback(s);
			return rc;
		}
		if (s->qfailed) {
			/* a write the server refused: it ran nothing after it, so
			 * COMMIT never ran -- nothing landed (a stale bindings
			 * decision says so, for the writer to read them again) */
			rc = ri_st_recode(&s->core, s->qcode == RI_ST_STALE_BINDINGS ? s->qcode : RI_ST_STEP2);
			s->in_tx = true;
			rollback(s);
			return rc;
		}
		if (r == NULL && answered < queued) {
			/* no answer for the writes: COMMIT may or may not have run */
			rc = db_fail(s, RI_ST_LOST, "commit sent, no reply", NULL);
			s->in_tx = true;
			rollback(s);
			return rc;
		}
	} else {
		s->round_trips++;
		r = PQexec(s->conn, "COMMIT");
		s->in_tx = false;
	}
	if (!res_ok(r)) {
		const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
		if (state != NULL && strcmp(state, SQLSTATE_FENCE) == 0)
			rc = db_fail(s, RI_ST_FENCED, "commit", r);
		else if (state == NULL || PQstatus(s->conn) != CONNECTION_OK)
			rc = db_fail(s, RI_ST_LOST, "commit sent, no reply", r);
		else
			rc = db_fail(s, RI_ST_STEP3, "commit", r);
	}
	PQclear(r);
	/* after the commit, before the command answers: the witness advances
	 * with every append (issue 39); a commit whose fate is unknown is not
	 * witnessed (a witness behind the journal is harmless) */
	if (rc == RI_ST_OK)
		ri_st_witness_flush(&s->core);
	else
		ri_st_witness_discard(&s->core);
	return rc;
}

/* A read runs inside one snapshot unless a transaction is open already. */
static int
read_begin(struct pg *s, bool *began)
{
	*began = false;
	if (s->in_tx)
		return RI_ST_OK;
	int rc = tx_begin(s, false, false);
	*began = rc == RI_ST_OK;
	return rc;
}

static void
read_end(struct pg *s, bool began)
{
	if (began)
		rollback(s);            /* read only: nothing to keep */
}

/* The instance's clock inside the open transaction (ri_clock()). */
static int
clock_now(struct pg *s, ri_ms *now)
{
	PGresult *r = run(s, "SELECT ri_clock()", NULL);
	int rc = RI_ST_OK;

	*now = 0;               /* defined on every path, the failures' too */
	if (!res_ok(r) || PQntuples(r) != 1)
		rc = db_fail(s, RI_ST_UNAVAILABLE, "clock", r);
	else
		*now = g_int(r, 0, 0);
	PQclear(r);
	return rc;
}

/* ---- the journal head, the tree of scope heads, the witness ------------ */

/* Stored hash of the record at seq (store_engine.h record_hash). */
static int
record_hash(void *bk, int64_t seq, unsigned char out[RI_HASH_LEN])
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *r;
	int rc;

	p_int(&p, seq);
	r = run(s, "SELECT hash FROM records WHERE seq = $1", &p);
	if (!res_ok(r))
		rc = db_fail(s, RI_ST_UNAVAILABLE, "read", r);
	else if (PQntuples(r) == 1 && g_bytes(r, 0, 0, out, RI_HASH_LEN))
		rc = RI_ST_OK;
	else
		rc = RI_ST_NOT_KNOWN;
	PQclear(r);
	return rc;
}

/* ---- the node map of a transaction -------------------------------------- */

#define NMAP 128
#define PREFETCH_DEPTH 12               /* a path of 16^11 scopes, in one statement */

static struct pnode *
nmap_find(struct pg *s, const unsigned char *id, size_t idlen)
{
	for (size_t i = 0; i < s->nn; i++)
		if (s->nmap[i].idlen == idlen && memcmp(s->nmap[i].id, id, idlen) == 0)
			return &s->nmap[i];
	return NULL;
}

/* A slot for id: its own, a free one, or one that holds a fetched (not
 * written) node; NULL when every slot holds a written node. */
static struct pnode *
nmap_slot(struct pg *s, const unsigned char *id, size_t idlen)
{
	struct pnode *e = nmap_find(s, id, idlen);

	if (e != NULL)
		return e;
	if (s->nn < NMAP)
		e = &s->nmap[s->nn++];
	else
		for (size_t i = 0; e == NULL && i < s->nn; i++)
			if (!s->nmap[i].dirty)
				e = &s->nmap[i];
	if (e != NULL) {
		memcpy(e->id, id, idlen);
		e->idlen = idlen;
		e->dirty = false;
	}
	return e;
}

/* The node ids of key's path, depth 0 .. PREFETCH_DEPTH - 1, as binary
 * parameters from $first on: the SQL list "$first, ..., $last". */
static void
path_params(struct params *p, const unsigned char key[RI_SCOPE_LEN], unsigned char ids[PREFETCH_DEPTH][RI_NODE_ID_MAX],
    char *list, size_t n)
{
	size_t at = 0;

	list[0] = '\0';
	for (int d = 0; d < PREFETCH_DEPTH; d++) {
		for (int i = 0; i < d; i++)
			ids[d][i] = (unsigned char)(i % 2 == 0 ? key[i / 2] >> 4 : key[i / 2] & 0x0f);
		at += (size_t)snprintf(list + at, n - at, "%s$%d", d ? ", " : "", p->n + 1);
		p_bytes(p, ids[d], (size_t)d);
	}
}

/* Record what a path fetch found: every id asked for is now known --
 * present with its body, or absent -- unless the map holds it already. */
static int
path_absorb(struct pg *s, const PGresult *r, int idcol, unsigned char ids[PREFETCH_DEPTH][RI_NODE_ID_MAX])
{
	bool seen[PREFETCH_DEPTH] = { false };

	for (int i = 0; i < PQntuples(r); i++) {
		unsigned char id[RI_NODE_ID_MAX], body[RI_NODE_MAX];
		size_t idlen = 0, len;
		struct pnode *e;

		if (g_null(r, i, idcol))
			continue;
		if (strcmp(PQgetvalue(r, i, idcol), "\\x") != 0 &&
		    !g_bytes_var(r, i, idcol, id, RI_NODE_ID_MAX, &idlen))
			continue;
		if (idlen >= PREFETCH_DEPTH)
			continue;
		if (!g_bytes_var(r, i, idcol + 1, body, RI_NODE_MAX, &len))
			return ri_st_fail(&s->core, RI_ST_INTEGRITY, 0, NULL,
			    "journal integrity: a node of the scope heads' tree is malformed");
		/* (rows of another path fetched in the same statement are
		 * kept too, but say nothing of this path's absent nodes) */
		if (memcmp(id, ids[idlen], idlen) == 0)
			seen[idlen] = true;
		if (nmap_find(s, id, idlen) != NULL || (e = nmap_slot(s, id, idlen)) == NULL)
			continue;
		memcpy(e->body, body, len);
		e->len = len;
		e->present = true;
	}
	for (int d = 0; d < PREFETCH_DEPTH; d++) {
		struct pnode *e;
		if (seen[d] || nmap_find(s, ids[d], (size_t)d) != NULL || (e = nmap_slot(s, ids[d], (size_t)d)) == NULL)
			continue;
		e->present = false;
		e->len = 0;
	}
	return RI_ST_OK;
}

/* the statement of prefetch (and of its read sent ahead) */
static void
prefetch_sql(const unsigned char key[RI_SCOPE_LEN], struct params *p, unsigned char ids[PREFETCH_DEPTH][RI_NODE_ID_MAX],
    char *list, size_t listlen, char *sql, size_t n)
{
	path_params(p, key, ids, list, listlen);
	snprintf(sql, n, "SELECT id, body FROM nodes WHERE id IN (%s)", list);
}

/* Fetch key's path in one statement (a lookup then costs no round trip). */
static int
prefetch(struct pg *s, const unsigned char key[RI_SCOPE_LEN])
{
	struct params p = { 0 };
	unsigned char ids[PREFETCH_DEPTH][RI_NODE_ID_MAX];
	char list[256], sql[400];
	PGresult *r;
	int rc;

	if (s->core.key == NULL || !s->in_tx)
		return RI_ST_OK;
	prefetch_sql(key, &p, ids, list, sizeof list, sql, sizeof sql);
	r = run(s, sql, &p);
	if (!res_ok(r))
		rc = db_fail(s, RI_ST_UNAVAILABLE, "read", r);
	else
		rc = path_absorb(s, r, 0, ids);
	PQclear(r);
	return rc;
}

/* Send every node the transaction changed, in one statement per 32. */
static int
nodes_flush(struct pg *s)
{
	for (;;) {
		struct params p = { 0 };
		struct pnode *batch[32];
		char sql[2048];
		size_t n = 0, at;
		int rc;

		for (size_t i = 0; i < s->nn && n < 32; i++)
			if (s->nmap[i].dirty)
				batch[n++] = &s->nmap[i];
		if (n == 0)
			return RI_ST_OK;
		at = (size_t)snprintf(sql, sizeof sql, "INSERT INTO nodes(id, body) VALUES ");
		for (size_t i = 0; i < n; i++) {
			at += (size_t)snprintf(sql + at, sizeof sql - at, "%s($%d, $%d)", i ? ", " : "", p.n + 1, p.n + 2);
			p_bytes(&p, batch[i]->id, batch[i]->idlen);
			p_bytes(&p, batch[i]->body, batch[i]->len);
		}
		snprintf(sql + at, sizeof sql - at, " ON CONFLICT (id) DO UPDATE SET body = excluded.body");
		if ((rc = defer_write(s, RI_ST_UNAVAILABLE, "write", sql, &p)) != RI_ST_OK)
			return rc;
		for (size_t i = 0; i < n; i++)
			batch[i]->dirty = false;
	}
}

/* The newest seq of a scope as the rows say it (0 when none), and the
 * hash stored there (when hash is not NULL and there is one).  path: also
 * fetch that key's path of the tree in the same statement. */
static int
scope_max(struct pg *s, int type, const char *a, const char *b, int64_t *out, unsigned char *hash, bool *has,
    const unsigned char *path)
{
	struct params p = { 0 };
	unsigned char ids[PREFETCH_DEPTH][RI_NODE_ID_MAX];
	char list[256], sql[700];
	const char *q = type == SCOPE_ALL ? "SELECT seq, hash FROM records ORDER BY seq DESC LIMIT 1" :
	    type == SCOPE_ACT ? "SELECT seq, hash FROM records WHERE kind = $1 AND act_key = $2"
	    " ORDER BY seq DESC LIMIT 1" :
	    "SELECT seq, hash FROM records WHERE invocation_id = $1 ORDER BY seq DESC LIMIT 1";
	PGresult *r;
	int rc = RI_ST_OK;

	*out = 0;               /* defined on every path, the failures' too */
	for (int i = 0; i < 2 && path != NULL; i++) {
		struct prescope *ps = &s->pre[i];
		if (ps->valid && ps->type == type && memcmp(ps->key, path, RI_SCOPE_LEN) == 0) {
			ps->valid = false;
			*out = ps->seq;
			if (has != NULL)
				*has = ps->has;
			if (ps->has)
				memcpy(hash, ps->hash, RI_HASH_LEN);
			return RI_ST_OK;
		}
	}
	if (type != SCOPE_ALL)
		p_text(&p, a);
	if (type == SCOPE_ACT)
		p_text(&p, b);
	if (path != NULL && s->core.key != NULL && s->in_tx) {
		path_params(&p, path, ids, list, sizeof list);
		snprintf(sql, sizeof sql, "SELECT seq, hash, NULL::bytea, NULL::bytea FROM (%s) r"
		    " UNION ALL SELECT NULL, NULL, id, body FROM nodes WHERE id IN (%s)", q, list);
		q = sql;
	} else {
		path = NULL;
	}
	r = run(s, q, &p);
	if (!res_ok(r)) {
		rc = db_fail(s, RI_ST_UNAVAILABLE, "read", r);
		PQclear(r);
		return rc;
	}
	*out = 0;
	if (has != NULL)
		*has = false;
	for (int i = 0; i < PQntuples(r); i++) {
		if (g_null(r, i, 0))
			continue;
		*out = g_int(r, i, 0);
		if (has != NULL)
			*has = g_bytes(r, i, 1, hash, RI_HASH_LEN);
	}
	if (path != NULL)
		rc = path_absorb(s, r, 2, ids);
	PQclear(r);
	return rc;
}

/* store_engine.h scope_newest: the hash comes in the same statement,
 * with the scope's path of the tree. */
static int
scope_newest(void *bk, const struct scope *sc, const char *a, const char *b, int64_t *seq,
    unsigned char hash[RI_HASH_LEN], enum ri_hashed *hashed)
{
	bool has = false;
	int rc = scope_max(bk, sc->type, a, b, seq, hash, &has, sc->key);

	*hashed = has ? RI_HASH_READ : RI_HASH_NONE;
	return rc;
}

/* the statement of scopes_prefetch (and of its read sent ahead) */
static void
scopes_sql(const unsigned char act[RI_SCOPE_LEN], const char *kind, const char *act_key,
    const unsigned char inv[RI_SCOPE_LEN], const char *invocation_id, struct params *p,
    unsigned char ida[PREFETCH_DEPTH][RI_NODE_ID_MAX], unsigned char idi[PREFETCH_DEPTH][RI_NODE_ID_MAX],
    char *sql, size_t n)
{
	char la[256], li[256];

	p_text(p, kind);
	p_text(p, act_key);
	p_text(p, invocation_id);
	path_params(p, act, ida, la, sizeof la);
	path_params(p, inv, idi, li, sizeof li);
	snprintf(sql, n,
	    "SELECT 0, seq, hash, NULL::bytea, NULL::bytea FROM (SELECT seq, hash FROM records WHERE kind = $1"
	    " AND act_key = $2 ORDER BY seq DESC LIMIT 1) a"
	    " UNION ALL SELECT 1, seq, hash, NULL, NULL FROM (SELECT seq, hash FROM records"
	    " WHERE invocation_id = $3 ORDER BY seq DESC LIMIT 1) i"
	    " UNION ALL SELECT 2, NULL, NULL, id, body FROM nodes WHERE id IN (%s, %s)", la, li);
}

/* An append's act and invocation scopes: both newest rows and both paths
 * of the tree in one statement (issue 13, round trips per append); the
 * rows wait in s->pre for the two scope_max calls that follow. */
static int
scopes_prefetch(struct pg *s, const unsigned char act[RI_SCOPE_LEN], const char *kind, const char *act_key,
    const unsigned char inv[RI_SCOPE_LEN], const char *invocation_id)
{
	struct params p = { 0 };
	unsigned char ida[PREFETCH_DEPTH][RI_NODE_ID_MAX], idi[PREFETCH_DEPTH][RI_NODE_ID_MAX];
	char sql[1200];
	PGresult *r;
	int rc = RI_ST_OK;

	s->pre[0].valid = s->pre[1].valid = false;
	if (s->core.key == NULL || !s->in_tx)
		return RI_ST_OK;
	scopes_sql(act, kind, act_key, inv, invocation_id, &p, ida, idi, sql, sizeof sql);
	r = run(s, sql, &p);
	if (!res_ok(r)) {
		rc = db_fail(s, RI_ST_UNAVAILABLE, "read", r);
		PQclear(r);
		return rc;
	}
	for (int k = 0; k < 2; k++) {
		struct prescope *ps = &s->pre[k];
		ps->type = k == 0 ? SCOPE_ACT : SCOPE_INV;
		memcpy(ps->key, k == 0 ? act : inv, RI_SCOPE_LEN);
		ps->seq = 0;
		ps->has = false;
	}
	for (int i = 0; i < PQntuples(r); i++) {
		int64_t which = g_int(r, i, 0);
		if (which > 1 || g_null(r, i, 1))
			continue;
		s->pre[which].seq = g_int(r, i, 1);
		s->pre[which].has = g_bytes(r, i, 2, s->pre[which].hash, RI_HASH_LEN);
	}
	if ((rc = path_absorb(s, r, 3, ida)) == RI_ST_OK && (rc = path_absorb(s, r, 3, idi)) == RI_ST_OK)
		s->pre[0].valid = s->pre[1].valid = true;
	PQclear(r);
	return rc;
}

/* The node store of the tree (heads.h). */
static int
node_get(void *ctx, const unsigned char *id, size_t idlen, unsigned char body[RI_NODE_MAX], size_t *len)
{
	struct pg *s = ctx;
	struct params p = { 0 };
	struct pnode *e = nmap_find(s, id, idlen);
	PGresult *r;
	int rc;

	if (e != NULL) {
		if (!e->present)
			return RI_ST_NOT_KNOWN;
		memcpy(body, e->body, e->len);
		*len = e->len;
		return RI_ST_OK;
	}
	p_bytes(&p, id, idlen);
	r = run(s, "SELECT body FROM nodes WHERE id = $1", &p);
	if (!res_ok(r))
		rc = db_fail(s, RI_ST_UNAVAILABLE, "read", r);
	else if (PQntuples(r) == 0)
		rc = RI_ST_NOT_KNOWN;
	else if (!g_bytes_var(r, 0, 0, body, RI_NODE_MAX, len))
		rc = ri_st_fail(&s->core, RI_ST_INTEGRITY, 0, NULL, "journal integrity: a node of the scope heads' tree is malformed");
	else
		rc = RI_ST_OK;
	PQclear(r);
	return rc;
}

static int
node_put(void *ctx, const unsigned char *id, size_t idlen, const unsigned char *body, size_t len)
{
	struct pg *s = ctx;
	struct params p = { 0 };
	struct pnode *e = len <= RI_NODE_MAX ? nmap_slot(s, id, idlen) : NULL;

	if (e != NULL) {
		/* sent with the head, by nodes_flush */
		memcpy(e->body, body, len);
		e->len = len;
		e->present = e->dirty = true;
		return RI_ST_OK;
	}
	p_bytes(&p, id, idlen);
	p_bytes(&p, body, len);
	return exec1(s, RI_ST_UNAVAILABLE, "write", "INSERT INTO nodes(id, body) VALUES ($1, $2)"
	    " ON CONFLICT (id) DO UPDATE SET body = excluded.body", &p);
}

/*
 * The head row, read (and locked: lock) with what judging it needs in the
 * same round trip -- the rows' newest seq, the hash at the head's seq, the
 * hash at the witness's seq -- and the instance clock.
 */
struct head_read {
	struct ri_jhead h;
	unsigned char mac[RI_HASH_LEN], last_hash[RI_HASH_LEN], anchor_hash[RI_HASH_LEN];
	bool present, shaped, has_last, has_anchor;
	int64_t rows;
	ri_ms now;
};

/*
 * begin: open the transaction in the same round trip (a write: READ
 * COMMITTED).  lock: take the head row's lock first -- the lock every
 * writer takes before any other (the lock order, top of file) -- in a
 * statement of its own: under READ COMMITTED a statement that waited for
 * a row lock re-reads that row but keeps its snapshot for everything else,
 * so the head and the records it names must be read by the NEXT statement,
 * whose snapshot holds every transaction committed before the lock was
 * granted.  One simple-query string, one round trip; the anchor seq is an
 * integer of ours, printed in.
 */
static int
jhead_fetch_tx(struct pg *s, bool begin, bool lock, struct head_read *hr)
{
	char sql[1024], open[256] = "";
	PGresult *r;
	int rc = RI_ST_OK;

	memset(hr, 0, sizeof *hr);
	if (begin && (rc = begin_sql(s, true, false, open, sizeof open - 2)) != RI_ST_OK)
		return rc;
	if (begin)
		snprintf(open + strlen(open), sizeof open - strlen(open), "; ");
	snprintf(sql, sizeof sql, "%s%s"
	    "SELECT h.last_seq, h.root, h.open_count, h.open_acc, h.sealed_seq, h.grants, h.mac,"
	    " (SELECT max(seq) FROM records), (SELECT hash FROM records WHERE seq = h.last_seq),"
	    " (SELECT hash FROM records WHERE seq = %lld), ri_clock(),"
	    " (SELECT recorded_at FROM records WHERE seq = h.last_seq) FROM heads h WHERE h.id = 1",
	    open, lock ? "SELECT 1 FROM heads WHERE id = 1 FOR UPDATE; " : "",
	    (long long)(s->core.anchored ? s->core.anchor_seq : 0));
	if (begin)
		s->in_tx = true;        /* even should a later statement fail: rolled back */
	r = exec_ahead(s, sql);
	if (!res_ok(r)) {
		rc = db_fail(s, lock ? RI_ST_STEP2 : RI_ST_UNAVAILABLE, "journal head", r);
		PQclear(r);
		return rc;
	}
	if (PQntuples(r) == 1) {
		hr->present = true;
		hr->shaped = !g_null(r, 0, 0) && g_bytes(r, 0, 1, hr->h.root, RI_HASH_LEN) &&
		    !g_null(r, 0, 2) && g_bytes(r, 0, 3, hr->h.open_acc, RI_HASH_LEN) &&
		    !g_null(r, 0, 4) && !g_null(r, 0, 5) && g_bytes(r, 0, 6, hr->mac, RI_HASH_LEN);
		hr->h.last_seq = g_int(r, 0, 0);
		hr->h.open_count = g_int(r, 0, 2);
		hr->h.sealed_seq = g_int(r, 0, 4);
		hr->h.grants = g_int(r, 0, 5);
		hr->rows = g_null(r, 0, 7) ? 0 : g_int(r, 0, 7);
		hr->has_last = g_bytes(r, 0, 8, hr->last_hash, RI_HASH_LEN);
		hr->has_anchor = g_bytes(r, 0, 9, hr->anchor_hash, RI_HASH_LEN);
		hr->now = g_int(r, 0, 10);
		s->last_at = g_null(r, 0, 11) ? RI_NONE : g_int(r, 0, 11);
		if (hr->h.last_seq == 0) {
			memcpy(hr->last_hash, s->core.genesis, RI_HASH_LEN);
			hr->has_last = true;
		}
	}
	PQclear(r);
	if (!hr->present) {
		ri_ms now;
		int64_t rows;
		if ((rc = clock_now(s, &now)) != RI_ST_OK ||
		    (rc = scope_max(s, SCOPE_ALL, NULL, NULL, &rows, NULL, NULL, NULL)) != RI_ST_OK)
			return rc;
		hr->now = now;
		hr->rows = rows;
	}
	return RI_ST_OK;
}

static int
jhead_fetch(struct pg *s, bool lock, struct head_read *hr)
{
	return jhead_fetch_tx(s, false, lock, hr);
}

/*
 * The verified journal head (see store_sqlite.c's jhead_get: the same
 * judgement).  now: the instance clock in the same round trip (may be
 * NULL).
 */
static int
jhead_get_at(struct pg *s, bool lock, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN], ri_ms *now)
{
	struct head_read hr;
	int rc;

	/* lock: a write's first round trip, which opens its transaction */
	if ((rc = jhead_fetch_tx(s, lock, lock, &hr)) != RI_ST_OK)
		return rc;
	if (now != NULL)
		*now = hr.now;
	if (s->core.key == NULL) {
		memset(h, 0, sizeof *h);
		h->last_seq = hr.rows;
		if ((rc = ri_eng_hash_at(&s->core, hr.rows, last_hash)) != RI_ST_OK)
			return rc;
	} else {
		if (!hr.present)
			return ri_st_fail(&s->core, RI_ST_INTEGRITY, hr.rows, NULL,
			    "journal integrity: the journal head is missing (a head row deleted)");
		if (!hr.shaped)
			return ri_st_fail(&s->core, RI_ST_INTEGRITY, hr.rows, NULL, "journal integrity: the journal head is malformed");
		*h = hr.h;
		memcpy(last_hash, hr.last_hash, RI_HASH_LEN);
		if ((rc = ri_jhead_judge(&s->core, h, hr.mac, hr.has_last ? last_hash : NULL, hr.rows)) != RI_ST_OK)
			return rc;
	}
	/* the anchor's hash came in the head's round trip (jhead_fetch_tx) */
	return ri_witness_judge(&s->core, h->last_seq, hr.has_anchor ? hr.anchor_hash : NULL);
}

static int
jhead_get(struct pg *s, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN])
{
	return jhead_get_at(s, false, h, last_hash, NULL);
}

static int
jhead_set(struct pg *s, const struct ri_jhead *h, const unsigned char last_hash[RI_HASH_LEN])
{
	struct params p = { 0 };
	unsigned char mac[RI_HASH_LEN];
	int rc;

	if ((rc = nodes_flush(s)) != RI_ST_OK)
		return rc;
	ri_jhead_mac(s->core.key, s->core.keylen, s->core.instance_id, h, last_hash, mac);
	p_int(&p, h->last_seq);
	p_bytes(&p, h->root, RI_HASH_LEN);
	p_int(&p, h->open_count);
	p_bytes(&p, h->open_acc, RI_HASH_LEN);
	p_int(&p, h->sealed_seq);
	p_int(&p, h->grants);
	p_bytes(&p, mac, RI_HASH_LEN);
	/* deferred: the head row was read under FOR UPDATE in this
	 * transaction (write_begin), so it is there when this lands */
	return defer_write(s, RI_ST_UNAVAILABLE, "write", "UPDATE heads SET last_seq = $1, root = $2,"
	    " open_count = $3, open_acc = $4, sealed_seq = $5, grants = $6, mac = $7 WHERE id = 1", &p);
}

/* ---- rows ------------------------------------------------------------------- */

/* One row (REC_COLS, text form) decoded: PostgreSQL types every column, so
 * what is left to check is each value's size and presence. */
static void
load_row(const PGresult *res, int i, struct ri_record *r, struct ri_raw *w)
{
	memset(r, 0, sizeof *r);
	memset(w, 0, sizeof *w);
	r->seq = g_int(res, i, 0);
	snprintf(r->event_id, sizeof r->event_id, "%s", PQgetvalue(res, i, 1));
	r->action_ref = g_dup(res, i, 2);
	r->kind = g_dup(res, i, 3);
	r->act_key = g_dup(res, i, 4);
	r->invocation_id = g_dup(res, i, 5);
	r->actor_ref = g_dup(res, i, 6);
	snprintf(r->attestation_id, sizeof r->attestation_id, "%s", PQgetvalue(res, i, 7));
	r->recorded_at = g_int(res, i, 8);
	r->retention_until = g_ms(res, i, 9);
	r->role = (int)g_int(res, i, 10);
	w->act_prev = g_int(res, i, 11);
	w->inv_prev = g_int(res, i, 12);
	w->payload_text = g_dup(res, i, 13);
	w->has_salt = !g_null(res, i, 14);
	w->shapes_ok = strlen(PQgetvalue(res, i, 1)) <= RI_ID_LEN && strlen(PQgetvalue(res, i, 7)) <= RI_ID_LEN &&
	    r->action_ref && r->kind && r->act_key && r->actor_ref &&
	    (!w->has_salt || g_bytes(res, i, 14, w->salt, RI_SALT_LEN)) &&
	    g_bytes(res, i, 15, w->digest, RI_HASH_LEN) && g_bytes(res, i, 16, w->hash, RI_HASH_LEN) &&
	    g_bytes(res, i, 17, w->mac, RI_HASH_LEN);
	w->shapes_ok = w->shapes_ok && r->role >= 0 && r->role <= RI_ROLE_MAX &&
	    ri_vocab_role_fits(r->action_ref, r->role);
	if (!w->shapes_ok)
		g_bytes(res, i, 16, w->hash, RI_HASH_LEN);
}


/* ---- the records table read (store_engine.h) ------------------------------ */

static bool
in_snapshot(void *bk)
{
	return ((struct pg *)bk)->in_tx;
}

/* a traversal's snapshot may outlast a read's budget */
static int
scan_begin(void *bk, bool *began)
{
	struct pg *s = bk;

	*began = false;
	if (s->in_tx)
		return RI_ST_OK;
	int rc = tx_begin(s, false, true);
	*began = rc == RI_ST_OK;
	return rc;
}

static int
record_by_id(void *bk, const char *event_id, struct ri_record *r, struct ri_raw *w)
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *res;
	int rc = RI_ST_OK;

	p_text(&p, event_id);
	res = run(s, "SELECT " REC_COLS " FROM records WHERE event_id = $1", &p);
	if (!res_ok(res))
		rc = db_fail(s, RI_ST_UNAVAILABLE, "read", res);
	else if (PQntuples(res) == 0)
		rc = RI_ST_NOT_KNOWN;
	else
		load_row(res, 0, r, w);
	PQclear(res);
	return rc;
}

/* One query for a bounded read; pages of RECORDS_PAGE rows, each its own
 * round trip, for an unbounded one (a traversal, a seal's walk). */
#define RECORDS_PAGE 1000

static int
records_from(void *bk, const struct ri_rows_query *q, ri_row_fn each, void *arg)
{
	struct pg *s = bk;
	int64_t from = q->from;
	bool stop = false;
	int rc = RI_ST_OK;

	while (!stop) {
		struct params p = { 0 };
		int64_t limit = q->limit > 0 ? q->limit : RECORDS_PAGE;
		PGresult *res;
		char sql[512];
		int n;

		snprintf(sql, sizeof sql, "SELECT " REC_COLS " FROM records WHERE seq %s $1%s ORDER BY seq %s LIMIT $%d",
		    q->desc ? "<=" : ">=",
		    q->type == SCOPE_INV ? " AND invocation_id = $2" :
		    q->type == SCOPE_ACT ? " AND kind = $2 AND act_key = $3" : "",
		    q->desc ? "DESC" : "ASC", q->type == SCOPE_INV ? 3 : q->type == SCOPE_ACT ? 4 : 2);
		p_int(&p, from);
		if (q->type != SCOPE_ALL)
			p_text(&p, q->a);
		if (q->type == SCOPE_ACT)
			p_text(&p, q->b);
		p_int(&p, limit);
		res = run(s, sql, &p);
		if (!res_ok(res)) {
			rc = db_fail(s, RI_ST_UNAVAILABLE, "read", res);
			PQclear(res);
			return rc;
		}
		n = PQntuples(res);
		for (int i = 0; i < n && !stop; i++) {
			struct ri_record r;
			struct ri_raw w;

			load_row(res, i, &r, &w);
			from = r.seq;
			if ((rc = each(arg, &r, &w, &stop)) != RI_ST_OK) {
				PQclear(res);
				return rc;
			}
		}
		PQclear(res);
		if (q->limit > 0 || n < limit || from == (q->desc ? INT64_MIN : INT64_MAX))
			break;
		from += q->desc ? -1 : 1;
	}
	return RI_ST_OK;
}

/* ---- open intents (derived index) ---------------------------------------- */

/* Every row of the index, checked whole against the head's count and
 * accumulator (heads.h), filtered after the check. */
static int
open_rows(void *bk, struct ri_open_scan *os)
{
	struct pg *s = bk;
	PGresult *r;
	int rc;

	r = run(s, "SELECT invocation_id, seq, kind, act_key, event_id, recorded_at FROM open_intents ORDER BY seq",
	    NULL);
	if (!res_ok(r)) {
		rc = db_fail(s, RI_ST_UNAVAILABLE, "read", r);
		PQclear(r);
		return rc;
	}
	for (int i = 0; i < PQntuples(r); i++)
		ri_open_scan_row(os, PQgetvalue(r, i, 0), g_int(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 3),
		    PQgetvalue(r, i, 4), g_int(r, i, 5));
	PQclear(r);
	return RI_ST_OK;
}

/* ---- actors, leases, the fence ------------------------------------------------ */



#define ACTOR_SQL "SELECT service, cred_hash, created_at, revoked_at, reg_seq, mac FROM actors WHERE actor_ref = $1"

/* An actor's registry row, read and judged as store_sqlite.c's actor_get
 * does (ri_actor_row_judge): MACed, and bound to the newest registry
 * record of its scope. */
static int
actor_read(void *bk, const char *actor, struct ri_actor_row *row, enum ri_found *found)
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *r;
	int rc;

	*found = RI_ROW_NONE;
	p_text(&p, actor);
	r = run(s, ACTOR_SQL, &p);
	if (!res_ok(r)) {
		rc = db_fail(s, RI_ST_UNAVAILABLE, "actor read", r);
		PQclear(r);
		return rc;
	}
	if (PQntuples(r) == 1) {
		bool ok = g_bytes(r, 0, 1, row->cred_hash, 32) && g_bytes(r, 0, 5, row->mac, RI_HASH_LEN);
		row->service = (int)g_int(r, 0, 0);
		row->created = g_int(r, 0, 2);
		row->revoked = g_ms(r, 0, 3);
		row->reg_seq = g_int(r, 0, 4);
		*found = ok ? RI_ROW_OK : RI_ROW_MALFORMED;
	}
	PQclear(r);
	return RI_ST_OK;
}

/* store_engine.h path_hint: the path in one statement (prefetch). */
static int
path_hint(void *bk, const unsigned char key[RI_SCOPE_LEN])
{
	return prefetch(bk, key);
}

#define LEASE_SQL "SELECT holder, expires_at, token, mac FROM leases WHERE kind = $1 AND act_key = $2"
#define LEASE_LOCK_SQL LEASE_SQL " FOR UPDATE"

/* A lease row, verified (MAC).  lock: FOR UPDATE -- taken after the head
 * row's lock, never before (the lock order). */
static int
lease_read(void *bk, const char *kind, const char *act_key, bool lock, struct ri_lease_row *l, enum ri_found *found)
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *r;
	int rc;

	*found = RI_ROW_NONE;
	p_text(&p, kind);
	p_text(&p, act_key);
	r = run(s, lock ? LEASE_LOCK_SQL : LEASE_SQL, &p);
	if (!res_ok(r)) {
		rc = db_fail(s, RI_ST_UNAVAILABLE, "lease read", r);
		PQclear(r);
		return rc;
	}
	if (PQntuples(r) == 0) {
		PQclear(r);
		return RI_ST_OK;
	}
	bool ok = (g_null(r, 0, 0) || strlen(PQgetvalue(r, 0, 0)) < sizeof l->holder) && g_bytes(r, 0, 3, l->mac, RI_HASH_LEN);
	if (ok) {
		l->held = !g_null(r, 0, 0);
		if (l->held)
			snprintf(l->holder, sizeof l->holder, "%s", PQgetvalue(r, 0, 0));
		l->expires = g_int(r, 0, 1);
		l->token = g_int(r, 0, 2);
	}
	PQclear(r);
	*found = ok ? RI_ROW_OK : RI_ROW_MALFORMED;
	return RI_ST_OK;
}

static int
lease_write(void *bk, const char *kind, const char *act_key, const char *holder, ri_ms expires, int64_t token,
    const unsigned char mac[RI_HASH_LEN])
{
	struct pg *s = bk;
	struct params p = { 0 };

	p_text(&p, kind);
	p_text(&p, act_key);
	p_text(&p, holder);
	p_int(&p, expires);
	p_int(&p, token);
	p_bytes(&p, mac, RI_HASH_LEN);
	return defer_write(s, RI_ST_UNAVAILABLE, "lease write", "INSERT INTO leases(kind, act_key, holder, expires_at,"
	    " token, mac) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (kind, act_key) DO UPDATE SET"
	    " holder = excluded.holder, expires_at = excluded.expires_at, token = excluded.token, mac = excluded.mac",
	    &p);
}

/*
 * journal fence 1, Allowance 7-10, inside the append's transaction and
 * under the lease row's lock (FOR UPDATE, after the head's): the writer
 * still holds the act's lease with one allowance to spare, and the write's
 * terminus has not passed -- both on the instance clock.  Then journal
 * fence 3: the same condition is handed to the server (ri.fence), which
 * checks it again at COMMIT (ri_fence_check, a deferred constraint
 * trigger), so a writer stalled between here and its COMMIT is refused.
 * store_engine.h fence_until: the write's terminus, issue +
 * journal_write_bound - allowance, is a reading of the writer's own
 * clock: carried to the instance clock as the time it has left.
 */
static int
fence_until(void *bk, const struct ri_fence *f, ri_ms now, ri_ms *until)
{
	struct pg *s = bk;
	ri_ms host_now;
	ri_err e;

	if (ri_now(s->core.cfg, &host_now, &e) != RI_OK)
		return ri_st_fail(&s->core, RI_ST_STEP2, 0, NULL, "%s", e.msg);
	*until = now + (f->issue + s->core.cfg->journal_write_bound - s->core.cfg->clock_offset_allowance - host_now);
	return RI_ST_OK;
}

/* store_engine.h fence_armed: the lease row was locked (after the head:
 * the lock order; sent ahead in the head's round trip); the COMMIT-time
 * fence is kept to be set with the writes (append_commit). */
static void
fence_armed(void *bk, const char *kind, const char *act_key, const struct ri_fence *f, ri_ms until)
{
	struct pg *s = bk;
	json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I}", "kind", kind, "act_key", act_key, "holder", f->holder,
	    "allowance", (json_int_t)s->core.cfg->clock_offset_allowance, "until", (json_int_t)until);

	free(s->fence);
	s->fence = ri_json_dumps(j, JSON_COMPACT);
	json_decref(j);
}


/* store_engine.h open_insert.  first: the first record of an invocation
 * is its intent -- the authenticated scope head says it has none yet, so
 * no index row can stand for it, and the row is written deferred with the
 * append's other writes, no answer awaited.  A row there all the same is a
 * corrupted index: the INSERT fails and the append with it (step 2, fail
 * closed). */
static int
open_insert(void *bk, const char *inv, int64_t seq, const char *kind, const char *act_key, const char *event_id,
    ri_ms recorded_at, bool first, bool *added)
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *r;
	int rc;

	p_text(&p, inv);
	p_int(&p, seq);
	p_text(&p, kind);
	p_text(&p, act_key);
	p_text(&p, event_id);
	p_int(&p, recorded_at);
	if (first) {
		if ((rc = defer_write(s, RI_ST_STEP2, "append", "INSERT INTO open_intents VALUES ($1, $2, $3, $4, $5, $6)",
		    &p)) == RI_ST_OK)
			*added = true;
		return rc;
	}
	r = run(s, "INSERT INTO open_intents VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING", &p);
	if (!res_ok(r)) {
		rc = db_fail(s, RI_ST_UNAVAILABLE, "append", r);
		PQclear(r);
		return rc;
	}
	*added = strcmp(PQcmdTuples(r), "1") == 0;
	PQclear(r);
	return RI_ST_OK;
}

#define OPEN_ROW_SQL "SELECT seq, kind, act_key, event_id, recorded_at FROM open_intents WHERE invocation_id = $1"

static int
open_remove(struct pg *s, struct ri_jhead *jh, const char *inv)
{
	struct params p = { 0 };
	unsigned char elem[RI_HASH_LEN];
	PGresult *r;

	int rc = RI_ST_OK;

	/* the row read (sent ahead by an append: reads_ahead), then deleted
	 * with the writes -- under the head's lock nobody else changes it */
	p_text(&p, inv);
	r = run(s, OPEN_ROW_SQL, &p);
	if (!res_ok(r)) {
		rc = db_fail(s, RI_ST_UNAVAILABLE, "append", r);
		PQclear(r);
		return rc;
	}
	if (PQntuples(r) == 1) {
		ri_open_elem(inv, g_int(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3),
		    g_int(r, 0, 4), elem);
		ri_acc_xor(jh->open_acc, elem);
		jh->open_count--;
		rc = defer_write(s, RI_ST_UNAVAILABLE, "append", "DELETE FROM open_intents WHERE invocation_id = $1", &p);
	}
	PQclear(r);
	return rc;
}

/* ---- record_action ------------------------------------------------------- */

/* store_engine.h recorded_at_of: the head's, as fetched with it
 * (jhead_fetch_tx) or as this transaction's last append wrote it
 * (record_insert) -- no round trip of its own */
static int
recorded_at_of(void *bk, int64_t seq, ri_ms *at)
{
	(void)seq;
	*at = ((struct pg *)bk)->last_at;
	return RI_ST_OK;
}

/* store_engine.h record_insert: deferred, sent with the append's other
 * writes */
static int
record_insert(void *bk, const struct ri_header *h, const char *payload, const unsigned char salt[RI_SALT_LEN],
    const unsigned char hash[RI_HASH_LEN], const unsigned char mac[RI_HASH_LEN])
{
	struct pg *s = bk;
	struct params p = { 0 };
	int rc;

	p_int(&p, h->seq);
	p_text(&p, h->event_id);
	p_text(&p, h->action_ref);
	p_text(&p, h->kind);
	p_text(&p, h->act_key);
	p_text(&p, h->invocation_id);
	p_text(&p, h->actor_ref);
	p_text(&p, h->attestation_id);
	p_int(&p, h->recorded_at);
	p_ms(&p, h->retention_until);
	p_int(&p, h->role);
	p_int(&p, h->act_prev);
	p_int(&p, h->inv_prev);
	p_text(&p, payload);
	p_bytes(&p, salt, RI_SALT_LEN);
	p_bytes(&p, h->payload_digest, RI_HASH_LEN);
	p_bytes(&p, hash, RI_HASH_LEN);
	p_bytes(&p, mac, RI_HASH_LEN);
	rc = defer_write(s, RI_ST_STEP2, "append", "INSERT INTO records(" REC_COLS ") VALUES ($1, $2, $3, $4, $5,"
	    " $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)", &p);
	/* a later failure rolls the transaction back, and the next one reads
	 * the head, and last_at, again */
	if (rc == RI_ST_OK)
		s->last_at = h->recorded_at;
	return rc;
}

/* store_engine.h scopes_hint: the act's and the invocation's newest rows
 * and tree paths in one round trip */
static int
scopes_hint(void *bk, const unsigned char act[RI_SCOPE_LEN], const char *kind, const char *act_key,
    const unsigned char inv[RI_SCOPE_LEN], const char *invocation_id)
{
	return scopes_prefetch(bk, act, kind, act_key, inv, invocation_id);
}

/* Open a write transaction and lock and verify the journal head in it:
 * the first lock of every writer (the lock order). */
static int
write_begin(struct pg *s, struct ri_jhead *jh, unsigned char lh[RI_HASH_LEN], ri_ms *now)
{
	int rc;

	if (s->readonly)
		return ri_st_fail(&s->core, RI_ST_READONLY, 0, NULL, "the journal is open read-only");
	if ((rc = jhead_get_at(s, true, jh, lh, now)) != RI_ST_OK)
		rollback_keep(s);
	return rc;
}

/*
 * The reads an append will make, sent ahead in its first round trip
 * (ahead_queue): the actor's registry row and its scope's tree path
 * (the credential check), the act's lease locked (the journal fence),
 * the act's and the invocation's newest rows and paths (the append).
 * With the writes and COMMIT in the second, an append is two round trips.
 */
static void
reads_ahead(struct pg *s, const struct ri_append *a, const char *kind)
{
	unsigned char ida[PREFETCH_DEPTH][RI_NODE_ID_MAX], idi[PREFETCH_DEPTH][RI_NODE_ID_MAX];
	const char *act_key = a->act_key ? a->act_key : "";
	char list[256], sql[1200];
	struct scope sc, inv;
	struct params p = { 0 };

	p_text(&p, a->actor_ref);
	ahead_queue(s, " actors ", ACTOR_SQL, &p);
	if (s->core.key == NULL)
		return;
	scope_make(&sc, SCOPE_ACT, "audit", a->actor_ref);
	p = (struct params){ 0 };
	prefetch_sql(sc.key, &p, ida, list, sizeof list, sql, sizeof sql);
	ahead_queue(s, " nodes ", sql, &p);
	if (a->fence != NULL && s->core.cfg->journal_fence) {
		p = (struct params){ 0 };
		p_text(&p, kind);
		p_text(&p, act_key);
		ahead_queue(s, " leases ", LEASE_LOCK_SQL, &p);
	}
	if (a->invocation_id != NULL) {
		scope_make(&sc, SCOPE_ACT, kind, act_key);
		scope_make(&inv, SCOPE_INV, a->invocation_id, NULL);
		p = (struct params){ 0 };
		scopes_sql(sc.key, kind, act_key, inv.key, a->invocation_id, &p, ida, idi, sql, sizeof sql);
		ahead_queue(s, " records nodes ", sql, &p);
		p = (struct params){ 0 };
		p_text(&p, a->invocation_id);
		ahead_queue(s, " open_intents ", OPEN_ROW_SQL, &p);
	}
}

/* store_engine.h append_ahead: step 2 until COMMIT is sent -- the
 * journal head locked and verified (nothing is appended to a journal that
 * fails verification); the append's reads travel with it, judged only
 * after it is */
static void
append_ahead(void *bk, const struct ri_append *a, const char *kind)
{
	struct pg *s = bk;

	s->rt0 = s->round_trips;
	reads_ahead(s, a, kind);
}

/* store_engine.h bindings_guard.  Bindings are history (issue 41): the
 * writer's decision holds only while the bindings scope is as it read it.
 * Judged under the head's lock, sent with the writes so it costs no round
 * trip of its own (issue 13): a newer audit.bound makes the statement fail
 * (a division by zero, plain SQL's one way to raise), COMMIT never runs,
 * and the writer reads the bindings again.  A check of concurrency, not of
 * integrity: every reader and the audit verify the rows themselves. */
static int
bindings_guard(void *bk, const struct ri_append *a)
{
	struct params p = { 0 };

	if (RI_NC(RI_NC_BINDINGS_UNGUARDED))
		return RI_ST_OK;
	p_int(&p, a->bindings_seen);
	return defer_write(bk, RI_ST_STALE_BINDINGS, "the kind's bindings, recorded anew since they were read",
	    "SELECT 1 / (coalesce(max(seq), 0) = $1)::int FROM records"
	    " WHERE kind = 'audit' AND act_key = 'bindings:'", &p);
}

/*
 * store_engine.h append_commit.  Step 2 is any failure before COMMIT is
 * sent (the server rolls the transaction back: nothing landed); journal
 * fence 3 is checked twice, under the lease row's lock and again by the
 * server at COMMIT; a COMMIT sent with no reply is a lost reply, read back
 * by event id (resolve 24).
 */
static int
append_commit(void *bk, const struct ri_append *a, struct ri_appended *out)
{
	struct pg *s = bk;
	char point[96];
	int rc;

	if (a->fault_tag != NULL) {
		/* the multi-node tests' seam: locks held, COMMIT not yet sent */
		snprintf(point, sizeof point, "%s.locked", a->fault_tag);
		ri_fault(point);
	}
	/* journal fence 3 at COMMIT: the server's own check (ri_fence_check)
	 * reads this setting, sent with the writes */
	if (s->fence != NULL) {
		struct params p = { 0 };
		p_text(&p, s->fence);
		if ((rc = defer_write(s, RI_ST_STEP2, "fence", "SELECT set_config('ri.fence', $1, true)", &p)) != RI_ST_OK) {
			rollback_keep(s);
			return rc == RI_ST_UNAVAILABLE ? RI_ST_STEP2 : rc;
		}
	}
	if ((rc = commit(s)) != RI_ST_OK)
		return rc == RI_ST_LOST ? ri_st_fail(&s->core, RI_ST_LOST, out->seq, out->event_id, "%s", s->core.err.msg) : rc;
	if (s->trace > 0)
		fprintf(stderr, "ri: pg: record_action %s: %lu round trips\n", a->action_ref, s->round_trips - s->rt0);
	return RI_ST_OK;
}

/* ---- retention ------------------------------------------------------------- */

/* store_engine.h purge_due: the retention end judged on the instance
 * clock too, never past it */
static int
purge_due(void *bk, ri_ms now, ri_purge_fn each, void *arg)
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *sel;
	int rc = RI_ST_OK;

	p_int(&p, now);
	sel = run(s, "SELECT seq, kind, invocation_id FROM records WHERE retention_until <= least($1, ri_clock())"
	    " AND payload IS NOT NULL ORDER BY retention_until LIMIT 512", &p);
	if (!res_ok(sel))
		rc = db_fail(s, RI_ST_UNAVAILABLE, "purge", sel);
	for (int i = 0; rc == RI_ST_OK && i < PQntuples(sel); i++)
		rc = each(arg, g_int(sel, i, 0), PQgetvalue(sel, i, 1), g_null(sel, i, 2) ? NULL : PQgetvalue(sel, i, 2));
	PQclear(sel);
	return rc;
}

static int
payload_drop(void *bk, int64_t seq)
{
	struct params p = { 0 };

	p_int(&p, seq);
	return exec1(bk, RI_ST_UNAVAILABLE, "purge", "UPDATE records SET payload = NULL, salt = NULL WHERE seq = $1", &p);
}

/* ---- Actor Identity --------------------------------------------------------- */


/* store_engine.h actor_insert: a taken name is a violation of the
 * actors' own key (not of a record's, written in the same statement's
 * round trip) */
static int
actor_insert(void *bk, const char *actor, const struct ri_actor_row *row)
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *r;
	const char *cn;
	int rc;

	p_text(&p, actor);
	p_int(&p, row->service);
	p_bytes(&p, row->cred_hash, 32);
	p_int(&p, row->created);
	p_int(&p, row->reg_seq);
	p_bytes(&p, row->mac, RI_HASH_LEN);
	r = run(s, "INSERT INTO actors VALUES ($1, $2, $3, $4, NULL, $5, $6)", &p);
	if (res_ok(r))
		rc = RI_ST_OK;
	else if (r != NULL && (cn = PQresultErrorField(r, PG_DIAG_CONSTRAINT_NAME)) != NULL &&
	    strcmp(cn, "actors_pkey") == 0)
		rc = RI_ST_EXISTS;
	else
		rc = db_fail(s, RI_ST_STEP2, "actor add", r);
	PQclear(r);
	return rc;
}

static int
actor_update(void *bk, const char *actor, const struct ri_actor_row *row)
{
	struct pg *s = bk;
	struct params p = { 0 };

	p_int(&p, row->revoked);
	p_int(&p, row->reg_seq);
	p_bytes(&p, row->mac, RI_HASH_LEN);
	p_text(&p, actor);
	return exec1(s, RI_ST_STEP2, "actor revoke", "UPDATE actors SET revoked_at = $1, reg_seq = $2, mac = $3"
	    " WHERE actor_ref = $4", &p);
}

static int
pg_open_kinds(struct ri_store *base, ri_ms since, char ***kinds, size_t *n)
{
	struct pg *s = (struct pg *)base;
	struct params p = { 0 };
	PGresult *r;
	bool began;
	int rc;

	*kinds = NULL;
	*n = 0;
	if ((rc = read_begin(s, &began)) != RI_ST_OK)
		return rc;
	p_int(&p, since);
	r = run(s, "SELECT DISTINCT kind FROM open_intents WHERE recorded_at > $1 ORDER BY kind", &p);
	if (!res_ok(r)) {
		rc = db_fail(s, RI_ST_UNAVAILABLE, "read", r);
	} else {
		*kinds = ri_xcalloc((size_t)PQntuples(r) + 1, sizeof **kinds);
		for (int i = 0; i < PQntuples(r); i++)
			(*kinds)[(*n)++] = ri_strdup(PQgetvalue(r, i, 0));
	}
	PQclear(r);
	read_end(s, began);
	return rc;
}

/* ---- the critical-section host (Lease) ---------------------------------------- */

/* The lease is on rows, never advisory locks: those die with the session,
 * and a lease must outlive its holder's death.  Expiry is minted on the
 * instance clock (clock_now). */

/* ---- marks, head ---------------------------------------------------------------- */

static int
mark_read(void *bk, const char *name, int64_t *seq, unsigned char mac[RI_HASH_LEN], enum ri_found *found)
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *r;

	if (!s->in_tx && connected(s) != RI_ST_OK)
		return RI_ST_UNAVAILABLE;
	p_text(&p, name);
	r = run(s, "SELECT seq, mac FROM marks WHERE name = $1", &p);
	if (!res_ok(r)) {
		int rc = db_fail(s, RI_ST_UNAVAILABLE, "read", r);
		PQclear(r);
		return rc;
	}
	if (PQntuples(r) == 1) {
		*seq = g_int(r, 0, 0);
		*found = g_bytes(r, 0, 1, mac, RI_HASH_LEN) ? RI_ROW_OK : RI_ROW_MALFORMED;
	}
	PQclear(r);
	return RI_ST_OK;
}

static int
mark_write(void *bk, const char *name, int64_t seq, const unsigned char mac[RI_HASH_LEN])
{
	struct pg *s = bk;
	struct params p = { 0 };

	p_text(&p, name);
	p_int(&p, seq);
	p_bytes(&p, mac, RI_HASH_LEN);
	return exec1(s, RI_ST_UNAVAILABLE, "write", "INSERT INTO marks VALUES ($1, $2, $3) ON CONFLICT (name)"
	    " DO UPDATE SET seq = excluded.seq, mac = excluded.mac", &p);
}

/* ---- peek, an invocation's span ---------------------------------------------- */

/* the invocation index alone */
static int
inv_rows(void *bk, const char *invocation_id, int64_t *first, int64_t *last, int64_t *n)
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *r;
	int rc = RI_ST_OK;

	p_text(&p, invocation_id);
	r = run(s, "SELECT coalesce(min(seq), 0), coalesce(max(seq), 0), count(*) FROM records"
	    " WHERE invocation_id = $1", &p);
	if (!res_ok(r) || PQntuples(r) != 1) {
		rc = db_fail(s, RI_ST_UNAVAILABLE, "read", r);
	} else {
		*first = g_int(r, 0, 0);
		*last = g_int(r, 0, 1);
		*n = g_int(r, 0, 2);
	}
	PQclear(r);
	return rc;
}

static int
peek_row(void *bk, const char *event_id, struct ri_record *out)
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *r;
	int rc = RI_ST_OK;

	p_text(&p, event_id);
	r = run(s, "SELECT seq, action_ref, kind, act_key, invocation_id, actor_ref, role, recorded_at,"
	    " (payload IS NULL)::int FROM records WHERE event_id = $1", &p);
	if (!res_ok(r)) {
		rc = db_fail(s, RI_ST_UNAVAILABLE, "read", r);
	} else if (PQntuples(r) == 0) {
		rc = RI_ST_NOT_KNOWN;
	} else {
		out->seq = g_int(r, 0, 0);
		snprintf(out->event_id, sizeof out->event_id, "%s", event_id);
		out->action_ref = g_dup(r, 0, 1);
		out->kind = g_dup(r, 0, 2);
		out->act_key = g_dup(r, 0, 3);
		out->invocation_id = g_dup(r, 0, 4);
		out->actor_ref = g_dup(r, 0, 5);
		out->role = (int)g_int(r, 0, 6);
		out->recorded_at = g_int(r, 0, 7);
		out->purged = g_int(r, 0, 8) != 0;
	}
	PQclear(r);
	return rc;
}

/* ---- seals ------------------------------------------------------------------------ */

/* store_engine.h row_keys: every key is text here (the schema's types) */
static int
row_keys(void *bk, enum ri_rows which, char ***keys, size_t *n)
{
	static const char *const sql[] = {
		[RI_ROWS_LEASES] = "SELECT kind, act_key FROM leases",
		[RI_ROWS_ACTORS] = "SELECT actor_ref FROM actors",
		[RI_ROWS_MARKS] = "SELECT name FROM marks",
		[RI_ROWS_ACTORS_LISTED] = "SELECT actor_ref FROM actors ORDER BY created_at, actor_ref",
	};
	struct pg *s = bk;
	int cols = which == RI_ROWS_LEASES ? 2 : 1, rc = RI_ST_OK;
	PGresult *r = run(s, sql[which], NULL);

	*keys = NULL;
	*n = 0;
	if (!res_ok(r)) {
		rc = db_fail(s, RI_ST_UNAVAILABLE, "read", r);
		PQclear(r);
		return rc;
	}
	*keys = ri_xcalloc((size_t)PQntuples(r) * (size_t)cols + 1, sizeof **keys);
	for (int i = 0; i < PQntuples(r); i++)
		for (int k = 0; k < cols; k++)
			(*keys)[(*n)++] = ri_strdup(PQgetvalue(r, i, k));
	PQclear(r);
	return rc;
}

static void
event_id_at(void *bk, int64_t seq, char out[RI_ID_LEN + 1])
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *r;

	p_int(&p, seq);
	r = run(s, "SELECT event_id FROM records WHERE seq = $1", &p);
	if (res_ok(r) && PQntuples(r) == 1)
		snprintf(out, RI_ID_LEN + 1, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
}

/* a seal's verification, a rebuild's traversal may outlast a write's
 * budget */
static int
unbound(void *bk, const char *what)
{
	return exec1(bk, RI_ST_UNAVAILABLE, what, "SET LOCAL statement_timeout = 0", NULL);
}

/* store_engine.h sealed_rows */
static int
sealed_rows(void *bk, int64_t *seq)
{
	struct pg *s = bk;
	PGresult *r = run(s, "SELECT max(seq) FROM records WHERE action_ref = 'audit.sealed'", NULL);
	int rc = RI_ST_OK;

	if (!res_ok(r))
		rc = db_fail(s, RI_ST_UNAVAILABLE, "read", r);
	else if (!g_null(r, 0, 0))
		*seq = g_int(r, 0, 0);
	PQclear(r);
	return rc;
}

/* A file copy of a PostgreSQL journal is the server's business: pg_dump
 * (a consistent snapshot) or pg_basebackup. */
static int
pg_backup(struct ri_store *base, const char *dest)
{
	struct pg *s = (struct pg *)base;

	(void)dest;
	return ri_st_fail(&s->core, RI_ST_UNAVAILABLE, 0, NULL, "a PostgreSQL journal is backed up with the server's"
	    " tools (pg_dump --serializable-deferrable, pg_basebackup): see docs/POSTGRESQL.md");
}

/* ---- rebuild's writes (store_engine.h) ------------------------------------------ */

static int
open_reset(void *bk)
{
	return exec1(bk, RI_ST_UNAVAILABLE, "rebuild", "DELETE FROM open_intents", NULL);
}

static int
nodes_reset(void *bk)
{
	struct pg *s = bk;
	int rc;

	if ((rc = exec1(s, RI_ST_UNAVAILABLE, "rebuild", "DELETE FROM nodes", NULL)) != RI_ST_OK)
		return rc;
	ri_tree_cache_clear(&s->nodes);
	s->nn = 0;
	return RI_ST_OK;
}

static int
scope_lasts(void *bk, int type, int (*fn)(void *arg, const char *a, const char *b, int64_t last), void *arg)
{
	struct pg *s = bk;
	PGresult *res = run(s, type == SCOPE_ACT ? "SELECT kind, act_key, max(seq) FROM records GROUP BY kind, act_key" :
	    "SELECT invocation_id, NULL, max(seq) FROM records WHERE invocation_id IS NOT NULL"
	    " GROUP BY invocation_id", NULL);
	int rc = RI_ST_OK;

	if (!res_ok(res))
		rc = db_fail(s, RI_ST_UNAVAILABLE, "rebuild", res);
	for (int i = 0; rc == RI_ST_OK && i < PQntuples(res); i++)
		rc = fn(arg, PQgetvalue(res, i, 0), g_null(res, i, 1) ? NULL : PQgetvalue(res, i, 1), g_int(res, i, 2));
	PQclear(res);
	return rc;
}

static void
mark_drop(void *bk, const char *name)
{
	struct params p = { 0 };

	p_text(&p, name);
	exec1(bk, RI_ST_UNAVAILABLE, "rebuild", "DELETE FROM marks WHERE name = $1", &p);
}

static int
jhead_put(void *bk, const struct ri_jhead *jh, const unsigned char lh[RI_HASH_LEN])
{
	return jhead_set(bk, jh, lh);
}

/* ---- the schema ri creates ------------------------------------------------ */

/* The catalog read is an open-time check, not a protocol read: the first
 * in a session costs tens of ms of catalog-cache loading, so outside a
 * transaction it runs under SCHEMA_BOUND_MS, not the session's budget (a
 * 20 ms read_bound refused every open).  One round trip: SET, the read,
 * SET back, in the simple protocol's implicit transaction (a failed read
 * rolls the first SET back with it).  Inside a transaction its caller has
 * set the bound. */
#define SCHEMA_BOUND_MS 10000
static char *
schema_text(struct pg *s)
{
	PGresult *r, *got = NULL, *bad = NULL;
	char *t = NULL, *sql;

	if (s->in_tx || s->qn > 0) {
		r = run(s, schema_sql, NULL);
		if (res_ok(r) && PQntuples(r) == 1)
			t = ri_strdup(PQgetvalue(r, 0, 0));
		else
			db_fail(s, RI_ST_UNAVAILABLE, "schema", r);
		PQclear(r);
		return t;
	}
	sql = ri_xcalloc(1, sizeof schema_sql + 128);
	snprintf(sql, sizeof schema_sql + 128, "SET statement_timeout = %lld; %s; SET statement_timeout = %lld",
	    (long long)(SCHEMA_BOUND_MS > s->budget ? SCHEMA_BOUND_MS : s->budget), schema_sql, (long long)s->budget);
	s->round_trips++;
	if (!PQsendQuery(s->conn, sql)) {
		free(sql);
		db_fail(s, RI_ST_UNAVAILABLE, "schema", NULL);
		return NULL;
	}
	free(sql);
	while ((r = PQgetResult(s->conn)) != NULL) {
		if (PQresultStatus(r) == PGRES_TUPLES_OK && got == NULL)
			got = r;
		else if (!res_ok(r) && bad == NULL)
			bad = r;
		else
			PQclear(r);
	}
	if (bad == NULL && got != NULL && PQntuples(got) == 1)
		t = ri_strdup(PQgetvalue(got, 0, 0));
	else
		db_fail(s, RI_ST_UNAVAILABLE, "schema", bad);
	PQclear(got);
	PQclear(bad);
	return t;
}

/* The schema's fingerprint under the key: a re-typed column, a dropped or
 * disabled trigger, an added index or view is refused at open. */
static void
schema_mac(struct pg *s, const char *text, char hex[2 * RI_HASH_LEN + 1])
{
	unsigned char mac[RI_HASH_LEN];

	ri_mac(s->core.key, s->core.keylen, text, strlen(text), mac);
	ri_hex(mac, sizeof mac, hex);
}

/* RI_ST_OK, RI_ST_INTEGRITY (why says what differs) or RI_ST_UNAVAILABLE
 * when the catalog could not be read at all: a timeout or a lost server is
 * never reported as tampering (fail closed, but as what it is). */
static int
schema_check(struct pg *s, char *why, size_t n)
{
	struct params p = { 0 };
	char want[2 * RI_HASH_LEN + 1], *have;
	PGresult *r;
	bool ok;

	if (s->core.key == NULL)
		return RI_ST_OK;
	if ((have = schema_text(s)) == NULL) {
		snprintf(why, n, "its schema cannot be read: %s", s->core.err.msg);
		return RI_ST_UNAVAILABLE;
	}
	schema_mac(s, have, want);
	free(have);
	p_text(&p, "schema_mac");
	r = run(s, "SELECT v FROM ri_meta WHERE k = $1", &p);
	if (!res_ok(r)) {
		db_fail(s, RI_ST_UNAVAILABLE, "schema", r);
		PQclear(r);
		snprintf(why, n, "its schema cannot be read: %s", s->core.err.msg);
		return RI_ST_UNAVAILABLE;
	}
	ok = PQntuples(r) == 1 && sodium_memcmp(PQgetvalue(r, 0, 0), want, sizeof want - 1) == 0 &&
	    strlen(PQgetvalue(r, 0, 0)) == sizeof want - 1;
	PQclear(r);
	if (!ok)
		snprintf(why, n, "its schema is not the one ri creates: a table altered, a trigger dropped or"
		    " disabled, or an object added");
	return ok ? RI_ST_OK : RI_ST_INTEGRITY;
}

/* ---- ri-audit's state check (store_engine.h) ------------------------------------ */

static int
schema_judge(void *bk, char *why, size_t n)
{
	return schema_check(bk, why, n);
}

static int
jhead_raw(void *bk, struct ri_jhead *h, unsigned char lh[RI_HASH_LEN], unsigned char mac[RI_HASH_LEN])
{
	struct pg *s = bk;
	struct head_read hr;
	int rc;

	if ((rc = jhead_fetch(s, false, &hr)) != RI_ST_OK)
		return rc;
	if (!hr.present || !hr.shaped || !hr.has_last)
		return ri_st_fail(&s->core, RI_ST_NOT_KNOWN, 0, NULL, "the journal head is missing, malformed, or names"
		    " a record the journal does not hold");
	*h = hr.h;
	memcpy(lh, hr.last_hash, RI_HASH_LEN);
	memcpy(mac, hr.mac, RI_HASH_LEN);
	return RI_ST_OK;
}

static int
leaf_row(void *bk, int64_t seq, char **kind, char **act_key, char **inv, unsigned char hash[RI_HASH_LEN])
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *r;
	int rc = RI_ST_NOT_KNOWN;

	p_int(&p, seq);
	r = run(s, "SELECT kind, act_key, invocation_id, hash FROM records WHERE seq = $1", &p);
	if (res_ok(r) && PQntuples(r) == 1 && g_bytes(r, 0, 3, hash, RI_HASH_LEN)) {
		*kind = ri_strdup(PQgetvalue(r, 0, 0));
		*act_key = ri_strdup(PQgetvalue(r, 0, 1));
		*inv = g_null(r, 0, 2) ? NULL : ri_strdup(PQgetvalue(r, 0, 2));
		rc = RI_ST_OK;
	}
	PQclear(r);
	return rc;
}

static int64_t
count_of(struct pg *s, const char *sql)
{
	PGresult *r = run(s, sql, NULL);
	int64_t n = res_ok(r) && PQntuples(r) == 1 ? g_int(r, 0, 0) : -1;

	PQclear(r);
	return n;
}

static int
scope_counts(void *bk, int64_t *acts, int64_t *invs)
{
	struct pg *s = bk;

	if ((*acts = count_of(s, "SELECT count(*) FROM (SELECT 1 FROM records GROUP BY kind, act_key) x")) < 0 ||
	    (*invs = count_of(s, "SELECT count(DISTINCT invocation_id) FROM records")) < 0)
		return RI_ST_UNAVAILABLE;
	return RI_ST_OK;
}

static const unsigned char *
pg_instance_id(struct ri_store *base)
{
	return ((struct pg *)base)->core.instance_id;
}

static void
pg_close(struct ri_store *base)
{
	struct pg *s = (struct pg *)base;

	if (s == NULL)
		return;
	if (s->trace > 0)
		fprintf(stderr, "ri: postgresql round trips: %lu\n", s->round_trips);
	ahead_clear(s);
	ri_payloads_end(&s->core);
	ri_st_witness_detach(&s->core);
	ri_tree_cache_free(&s->nodes);
	free(s->fence);
	if (s->conn != NULL)
		PQfinish(s->conn);
	free(s->nmap);
	free(s);
}

static int
jhead_get_cb(void *bk, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN])
{
	return jhead_get(bk, h, last_hash);
}

static int
be_read_begin(void *bk, bool *began)
{
	return read_begin(bk, began);
}

static void
be_read_end(void *bk, bool began)
{
	read_end(bk, began);
}

static int
be_write_begin(void *bk)
{
	return tx_begin(bk, true, false);
}

static int
be_commit(void *bk)
{
	return commit(bk);
}

static void
be_rollback(void *bk)
{
	rollback_keep(bk);
}

/* the server's clock, in the head's round trip */
static int
jhead_now(void *bk, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN], ri_ms *now)
{
	return jhead_get_at(bk, false, h, last_hash, now);
}

static int
be_write_head(void *bk, struct ri_jhead *jh, unsigned char lh[RI_HASH_LEN], ri_ms *now)
{
	return write_begin(bk, jh, lh, now);
}

static int
be_clock_now(void *bk, ri_ms *now)
{
	return clock_now(bk, now);
}

static int
be_open_remove(void *bk, struct ri_jhead *jh, const char *invocation_id)
{
	return open_remove(bk, jh, invocation_id);
}

/* The primitives of store_engine.h: SQL and decoding, behind them the
 * read-ahead, the deferred writes and the batched nodes. */
static const struct ri_backend pg_backend = {
	.record_hash = record_hash,
	.scope_newest = scope_newest,
	.node_get = node_get,
	.node_put = node_put,
	.jhead_get = jhead_get_cb,
	.path_hint = path_hint,
	.actor_read = actor_read,
	.lease_read = lease_read,
	.lease_write = lease_write,
	.fence_until = fence_until,
	.fence_armed = fence_armed,
	.read_begin = be_read_begin,
	.read_end = be_read_end,
	.write_begin = be_write_begin,
	.commit = be_commit,
	.rollback = be_rollback,
	.jhead_now = jhead_now,
	.sealed_rows = sealed_rows,
	.open_rows = open_rows,
	.mark_read = mark_read,
	.mark_write = mark_write,
	.write_head = be_write_head,
	.actor_insert = actor_insert,
	.actor_update = actor_update,
	/* the records table read */
	.in_snapshot = in_snapshot,
	.scan_begin = scan_begin,
	.record_by_id = record_by_id,
	.records_from = records_from,
	.peek_row = peek_row,
	.inv_rows = inv_rows,
	.event_id_at = event_id_at,
	.unbound = unbound,
	/* rebuild's writes */
	.open_reset = open_reset,
	.nodes_reset = nodes_reset,
	.open_insert = open_insert,
	.scope_lasts = scope_lasts,
	.mark_drop = mark_drop,
	.jhead_put = jhead_put,
	/* the audit's state check */
	.schema_judge = schema_judge,
	.jhead_raw = jhead_raw,
	.leaf_row = leaf_row,
	.scope_counts = scope_counts,
	.purge_due = purge_due,
	.payload_drop = payload_drop,
	.open_remove = be_open_remove,
	.clock_now = be_clock_now,
	.row_keys = row_keys,
	/* the append */
	.recorded_at_of = recorded_at_of,
	.record_insert = record_insert,
	.scopes_hint = scopes_hint,
	.append_ahead = append_ahead,
	.bindings_guard = bindings_guard,
	.append_commit = append_commit,
};
_Static_assert(offsetof(struct pg, core) == offsetof(struct ri_eng_store, core), "struct pg begins as ri_eng_store");

static const struct ri_store_ops pg_ops = {
	.record_action = ri_eng_record_action,
	.read_record = ri_eng_read_record,
	.range_read = ri_eng_range_read,
	.open_intents = ri_eng_open_intents,
	.purge = ri_eng_purge,
	.actor_add = ri_eng_actor_add,
	.actor_revoke = ri_eng_actor_revoke,
	.actor_list = ri_eng_actor_list,
	.authenticate = ri_eng_authenticate,
	.open_kinds = pg_open_kinds,
	.take = ri_eng_take,
	.remaining = ri_eng_remaining,
	.release = ri_eng_release,
	.mark_get = ri_eng_mark_get,
	.mark_set = ri_eng_mark_set,
	.traverse = ri_eng_traverse,
	.peek = ri_eng_peek,
	.inv_span = ri_eng_inv_span,
	.seal = ri_eng_seal,
	.substrate = ri_eng_substrate,
	.append_substrate = ri_eng_append_many,
	.backup = pg_backup,
	.rebuild = ri_eng_rebuild,
	.audit_state = ri_eng_audit_state,
	.instance_id = pg_instance_id,
	.head = ri_eng_head,
	.sealed = ri_eng_sealed,
	.error = pg_error,
	.close = pg_close,
};

/* ---- open / create ---------------------------------------------------------------- */

static int
pg_connect(struct pg *s, ri_err *err)
{
	/* the per-write budget (store_sqlite.c's busy timeout): jwb, less the
	 * allowance under a declared journal fence */
	s->budget = s->core.cfg->journal_write_bound;
	if (s->core.cfg->journal_fence)
		s->budget -= s->core.cfg->clock_offset_allowance;
	if (s->budget < 10)
		s->budget = 10;
	if (!ri_pq_load("journal", err))
		return RI_JOURNAL_UNAVAILABLE;
	s->conn = PQconnectdb(s->core.cfg->journal);
	if (s->conn == NULL || PQstatus(s->conn) != CONNECTION_OK) {
		char why[1024];
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): %s",
		    ri_redact(s->conn ? PQerrorMessage(s->conn) : "cannot connect", why, sizeof why));
	}
	if (session_setup(s) != RI_ST_OK)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "%s", s->core.err.msg);
	return RI_OK;
}

static int
load_meta(struct pg *s, ri_err *err)
{
	PGresult *r = run(s, "SELECT k, v FROM ri_meta", NULL);
	bool fmt = false, inst = false;

	if (!res_ok(r)) {
		PQclear(r);
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): not an ri journal, or unreadable"
		    " (run ri-init?)");
	}
	for (int i = 0; i < PQntuples(r); i++) {
		const char *k = PQgetvalue(r, i, 0), *v = PQgetvalue(r, i, 1);
		if (strcmp(k, "format") == 0)
			fmt = atoi(v) == RI_FORMAT;
		else if (strcmp(k, "instance_id") == 0)
			inst = sodium_hex2bin(s->core.instance_id, sizeof s->core.instance_id, v, strlen(v), NULL, NULL, NULL) == 0;
	}
	PQclear(r);
	if (!fmt || !inst)
		return ri_fail(err, RI_INTEGRITY, "journal (postgresql): missing or unknown format/instance id");
	ri_genesis(s->core.instance_id, s->core.genesis);
	return RI_OK;
}

int
ri_pg_open(const struct ri_config *c, const unsigned char *key, size_t keylen, unsigned flags,
    struct ri_store **out, ri_err *err)
{
	struct pg *s;
	int rc;

	*out = NULL;
	if (key == NULL && !(flags & RI_NO_KEY))
		return ri_fail(err, RI_INTERNAL, "no integrity key");
	s = ri_xcalloc(1, sizeof *s);
	s->base.ops = &pg_ops;
	ri_eng_attach(&s->core, &pg_backend, s, &s->nodes);
	s->nmap = ri_xcalloc(NMAP, sizeof *s->nmap);
	const char *trace = getenv("RI_PG_TRACE");
	s->trace = trace != NULL ? atoi(trace) : 0;
	s->core.cfg = c;
	s->readonly = (flags & RI_READONLY) != 0;
	if (key != NULL) {
		s->core.key = (unsigned char *)key;
		s->core.keylen = keylen;
		ri_eng_derive_keys(&s->core);
	}
	if ((rc = pg_connect(s, err)) != RI_OK || (rc = load_meta(s, err)) != RI_OK) {
		pg_close(&s->base);
		return rc;
	}
	if (!(flags & RI_INSPECT)) {
		char why[1024];
		if ((rc = schema_check(s, why, sizeof why)) != RI_ST_OK) {
			rc = rc == RI_ST_UNAVAILABLE ?
			    ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): %s", why) :
			    ri_fail(err, RI_INTEGRITY, "journal integrity: journal (postgresql): %s", why);
			pg_close(&s->base);
			return rc;
		}
		if ((rc = ri_st_witness_attach(&s->core, flags, err)) != RI_OK) {
			pg_close(&s->base);
			return rc;
		}
	}
	if (key != NULL && !(flags & RI_READONLY)) {
		int64_t seq;
		unsigned char h[RI_HASH_LEN];
		if (ri_eng_head(&s->base, &seq, h) == RI_ST_INTEGRITY) {
			rc = ri_fail(err, RI_INTEGRITY, "%s", s->core.err.msg);
			pg_close(&s->base);
			return rc;
		}
	}
	*out = &s->base;
	return RI_OK;
}

/* ri-init: the schema, in one transaction, in a database that holds no
 * table yet -- never over anything. */
int
ri_pg_create(const struct ri_config *c, const unsigned char *key, size_t keylen,
    char instance_hex[2 * RI_INSTANCE_LEN + 1], ri_err *err)
{
	struct pg *s = ri_xcalloc(1, sizeof *s);
	struct params p = { 0 };
	struct ri_jhead jh = { 0 };

	s->nmap = ri_xcalloc(NMAP, sizeof *s->nmap);
	unsigned char mac[RI_HASH_LEN];
	char fmt[16], smac[2 * RI_HASH_LEN + 1], *text = NULL;
	PGresult *r;
	int rc;

	s->base.ops = &pg_ops;
	ri_eng_attach(&s->core, &pg_backend, s, &s->nodes);
	s->core.cfg = c;
	s->core.key = (unsigned char *)key;
	s->core.keylen = keylen;
	if ((rc = pg_connect(s, err)) != RI_OK)
		goto out;
	r = run(s, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
	    " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'v', 'm', 'p', 'f', 'S')", NULL);
	if (!res_ok(r) || PQntuples(r) != 1 || g_int(r, 0, 0) != 0) {
		rc = res_ok(r) ? ri_fail(err, RI_USAGE, "journal (postgresql): the database is not empty;"
		    " refusing to create an instance in it") :
		    ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): %s", PQresultErrorMessage(r));
		PQclear(r);
		goto out;
	}
	PQclear(r);
	randombytes_buf(s->core.instance_id, sizeof s->core.instance_id);
	ri_hex(s->core.instance_id, sizeof s->core.instance_id, instance_hex);
	ri_genesis(s->core.instance_id, s->core.genesis);
	s->round_trips++;
	r = PQexec(s->conn, "BEGIN; SET LOCAL statement_timeout = 0");
	PQclear(r);
	s->in_tx = true;
	/* negative control: every session may set the clock */
	r = PQexec(s->conn, RI_NC(RI_NC_SESSION_CLOCK) || c->clock_env ? clock_ddl_env : clock_ddl_server);
	if (res_ok(r)) {
		PQclear(r);
		r = PQexec(s->conn, schema_ddl);
	}
	if (!res_ok(r)) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): %s", PQresultErrorMessage(r));
		PQclear(r);
		goto out;
	}
	PQclear(r);
	if ((text = schema_text(s)) == NULL) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "%s", s->core.err.msg);
		goto out;
	}
	schema_mac(s, text, smac);
	snprintf(fmt, sizeof fmt, "%d", RI_FORMAT);
	p_text(&p, fmt);
	p_text(&p, instance_hex);
	p_text(&p, smac);
	ri_jhead_mac(key, keylen, s->core.instance_id, &jh, s->core.genesis, mac);
	p_bytes(&p, jh.root, RI_HASH_LEN);
	p_bytes(&p, jh.open_acc, RI_HASH_LEN);
	p_bytes(&p, mac, RI_HASH_LEN);
	/* the journal head of an empty journal, under its MAC */
	r = run(s, "WITH m AS (INSERT INTO ri_meta VALUES ('format', $1), ('instance_id', $2), ('schema_mac', $3))"
	    " INSERT INTO heads VALUES (1, 0, $4, 0, $5, 0, 0, $6)", &p);
	if (!res_ok(r)) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): %s", PQresultErrorMessage(r));
		PQclear(r);
		goto out;
	}
	PQclear(r);
	if (commit(s) != RI_ST_OK) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "%s", s->core.err.msg);
		goto out;
	}
	rc = RI_OK;
out:
	free(text);
	if (s->in_tx)
		rollback(s);
	pg_close(&s->base);
	return rc;
}

int
ri_pg_drop(const struct ri_config *c, ri_err *err)
{
	struct pg *s = ri_xcalloc(1, sizeof *s);
	PGresult *r;
	int rc;

	s->nmap = ri_xcalloc(NMAP, sizeof *s->nmap);
	s->base.ops = &pg_ops;
	ri_eng_attach(&s->core, &pg_backend, s, &s->nodes);
	s->core.cfg = c;
	if ((rc = pg_connect(s, err)) == RI_OK) {
		/* the tables (their indexes and triggers with them), then the
		 * functions: schema_ddl's objects and the clock's, none other */
		s->round_trips++;
		r = PQexec(s->conn, "BEGIN; DROP TABLE IF EXISTS records, heads, nodes, open_intents, actors, leases,"
		    " marks, findings, findings_runs, ri_meta; DROP FUNCTION IF EXISTS ri_append_only(), ri_fence_check(), ri_clock(); COMMIT");
		if (!res_ok(r))
			rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): could not remove what ri-init"
			    " made: %s", s->conn ? PQerrorMessage(s->conn) : "");
		PQclear(r);
	}
	pg_close(&s->base);
	return rc;
}

int
ri_pg_server_info(struct ri_store *st, json_t **json, bool *durable)
{
	struct pg *s = (struct pg *)st;
	PGresult *r;

	*json = NULL;
	*durable = false;
	if (st == NULL || st->ops != &pg_ops)
		return RI_ST_INVALID_QUERY;
	if (connected(s) != RI_ST_OK)
		return RI_ST_UNAVAILABLE;
	/* ... and which clock ri_clock() reads (issue 40 point 2): the
	 * server's, or a session's ri.clock (made under "clock": "env") */
	r = run(s, "SELECT version(), current_setting('server_version'), current_setting('fsync'),"
	    " current_setting('synchronous_commit'), current_setting('full_page_writes'),"
	    " current_setting('synchronous_standby_names'),"
	    " coalesce((SELECT bool_or(p.prosrc LIKE '%ri.clock%') FROM pg_proc p JOIN pg_namespace n"
	    "  ON n.oid = p.pronamespace WHERE n.nspname = current_schema() AND p.proname = 'ri_clock'), true)", NULL);
	if (!res_ok(r) || PQntuples(r) != 1) {
		PQclear(r);
		return RI_ST_UNAVAILABLE;
	}
	/* every synchronous_commit level but off flushes the commit's WAL
	 * locally before answering; fsync off makes that flush a lie */
	*durable = strcmp(PQgetvalue(r, 0, 2), "on") == 0 && strcmp(PQgetvalue(r, 0, 3), "off") != 0;
	*json = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "backend", "postgresql",
	    "server", PQgetvalue(r, 0, 0), "server_version", PQgetvalue(r, 0, 1), "fsync", PQgetvalue(r, 0, 2),
	    "synchronous_commit", PQgetvalue(r, 0, 3), "full_page_writes", PQgetvalue(r, 0, 4),
	    "synchronous_standby_names", PQgetvalue(r, 0, 5), "clock",
	    strcmp(PQgetvalue(r, 0, 6), "f") == 0 ? "server" : "session");
	PQclear(r);
	return RI_ST_OK;
}
