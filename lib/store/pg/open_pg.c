/*
 * open_pg.c -- a PostgreSQL journal opened, created and dropped: the schema
 * ri creates and its fingerprint check, the connection, the meta row, the
 * server's durability (the design: store_pg.c).
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
#include "store/pg/store_pg_int.h"

/* the append-only trigger's function (schema_ddl; --migrate replaces
 * format 3's with it) */
#define APPEND_ONLY_FN \
	" FUNCTION ri_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN" \
	"  IF TG_OP = 'UPDATE' AND NEW.payload IS NULL AND NEW.salt IS NULL AND OLD.payload IS NOT NULL" \
	"    AND OLD.retention_until IS NOT NULL AND OLD.retention_until <= ri_clock()" \
	"    AND ROW(NEW.seq, NEW.event_id, NEW.action_ref, NEW.kind, NEW.act_key, NEW.invocation_id," \
	"      NEW.actor_ref, NEW.attestation_id, NEW.recorded_at, NEW.retention_until, NEW.role," \
	"      NEW.act_prev, NEW.inv_prev, NEW.digest, NEW.hash, NEW.mac, NEW.shard)" \
	"    IS NOT DISTINCT FROM ROW(OLD.seq, OLD.event_id, OLD.action_ref, OLD.kind, OLD.act_key," \
	"      OLD.invocation_id, OLD.actor_ref, OLD.attestation_id, OLD.recorded_at," \
	"      OLD.retention_until, OLD.role, OLD.act_prev, OLD.inv_prev, OLD.digest, OLD.hash, OLD.mac," \
	"      OLD.shard)" \
	"  THEN RETURN NEW; END IF;" \
	"  RAISE EXCEPTION 'ri: the journal is append-only; only an expired payload may be purged';" \
	"END $$;"

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
	"  mac bytea NOT NULL,"
	"  shard integer NOT NULL);"
	"CREATE INDEX records_invocation ON records(invocation_id, seq);"
	"CREATE INDEX records_act ON records(kind, act_key, seq);"
	"CREATE INDEX records_retention ON records(retention_until) WHERE payload IS NOT NULL;"
	/* a head a shard (docs/SHARDS.md); the sequence hands out seqs
	 * without a lock held to commit, once a journal has more shards */
	"CREATE TABLE heads(shard integer PRIMARY KEY CHECK (shard >= 0 AND shard < 256), last_seq bigint NOT NULL,"
	"  root bytea NOT NULL, open_count bigint NOT NULL, open_acc bytea NOT NULL,"
	"  sealed_seq bigint NOT NULL, grants bigint NOT NULL, mac bytea NOT NULL);"
	"CREATE SEQUENCE ri_seq AS bigint;"
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
	"CREATE" APPEND_ONLY_FN
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
	/* every name the triggers use is the instance's own schema's (or
	 * pg_catalog's, searched first): a session's search_path cannot put a
	 * ri_clock() of its own in front of them.  ri_clock() carries no SET
	 * (issue 43: a function with one is never inlined, and its every call
	 * site in a fresh session parsed its body again at execution); its
	 * body names pg_catalog's objects itself (clock_ddl_server) */
	"DO $$ BEGIN"
	"  EXECUTE format('ALTER FUNCTION ri_append_only() SET search_path = %I', current_schema());"
	"  EXECUTE format('ALTER FUNCTION ri_fence_check() SET search_path = %I', current_schema());"
	"END $$;";

/* More than one shard: a shard's newest record and the one before a row
 * of it are index lookups (shard_prev, the head's rows), never a scan back
 * over other shards' rows (as open_sqlite.c's ri_sq_shard_ddl). */
static const char shard_ddl[] = "CREATE INDEX records_shard ON records(shard, seq);";

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
/*
 * Inlined into each statement that reads it (issue 43: no SET clause, one
 * expression), so its body is planned under the caller's search_path:
 * every function, operator and type in it is pg_catalog's by name (EXTRACT
 * and coalesce are grammar, always pg_catalog's; NULLIF is not used, its
 * "=" would be looked up on the search_path), and no search_path a
 * session sets reaches inside it (issue 40 point 2).  The operator is
 * resolved as the unqualified one was, among pg_catalog's alone.
 */
#define RI_MS_NOW \
	"pg_catalog.floor(EXTRACT(epoch FROM pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8"
static const char clock_ddl_server[] =
	"CREATE FUNCTION ri_clock() RETURNS bigint LANGUAGE sql VOLATILE AS $$"
	"  SELECT " RI_MS_NOW " $$;";
static const char clock_ddl_env[] =
	"CREATE FUNCTION ri_clock() RETURNS bigint LANGUAGE sql VOLATILE AS $$"
	"  SELECT coalesce(CASE WHEN pg_catalog.current_setting('ri.clock', true) OPERATOR(pg_catalog.<>) ''"
	"    THEN pg_catalog.current_setting('ri.clock', true)::pg_catalog.int8 END, " RI_MS_NOW ") $$;";

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
/* ---- the schema ri creates ------------------------------------------------ */

/* The catalog read is an open-time check, not a protocol read: the first
 * in a session costs tens of ms of catalog-cache loading, so it runs under
 * SCHEMA_BOUND_MS, not the session's budget (a 20 ms read_bound refused
 * every open): outside a transaction in a read-only one of its own whose
 * bound is the wide one, inside the command's read snapshot with the
 * snapshot's bound lifted for it and set back after -- set_config(...,
 * true) either way (no session state, issue 43).  Inside a write its
 * caller has set the bound (ri-init: none). */
#define SCHEMA_BOUND_MS 10000
static char *
schema_text(struct pg *s)
{
	PGresult *r = run(s, schema_sql, NULL);
	char *t = NULL;

	if (res_ok(r) && PQntuples(r) == 1)
		t = ri_strdup(PQgetvalue(r, 0, 0));
	else
		pg_db_fail(s, RI_ST_UNAVAILABLE, "schema", r);
	PQclear(r);
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

/* The catalog's text and the stored fingerprint MAC (meta schema_mac; NULL
 * when no row holds one), in one round trip: OK or UNAVAILABLE. */
static int
schema_read(struct pg *s, char **text, char **stored)
{
	static const char setb[] = "SELECT set_config('statement_timeout', $1, true)";
	struct qry now[BEGIN_MAX + 5];
	struct params set = { 0 }, wide = { 0 }, back = { 0 }, k = { 0 };
	PGresult *res[BEGIN_MAX + 5], *bad = NULL;
	ri_ms w = SCHEMA_BOUND_MS > s->budget ? SCHEMA_BOUND_MS : s->budget;
	bool own = !s->in_tx, snap = s->in_tx && s->snap;
	int n = 0, at, rc = RI_ST_OK;

	*text = *stored = NULL;
	if (own && (rc = begin_bounded(s, false, w, now, &n, &set)) != RI_ST_OK)
		return rc;
	if (snap) {
		p_int(&wide, w);
		now[n++] = (struct qry){ setb, &wide };
	}
	at = n;
	now[n++] = (struct qry){ schema_sql, NULL };
	p_text(&k, "schema_mac");
	now[n++] = (struct qry){ "SELECT v FROM ri_meta WHERE k = $1", &k };
	if (snap) {
		p_int(&back, s->snap_long ? 0 : s->budget);
		now[n++] = (struct qry){ setb, &back };
	}
	if (own)
		now[n++] = (struct qry){ "ROLLBACK", NULL };
	(void)trip_all(s, now, n, false, res);
	for (int i = 0; i < n && bad == NULL; i++)
		if (res[i] == NULL || (!res_ok(res[i]) && PQresultStatus(res[i]) != PGRES_PIPELINE_ABORTED))
			bad = res[i] != NULL ? res[i] : res[0];
	if (s->qfailed || bad != NULL || !res_ok(res[at]) || PQntuples(res[at]) != 1 || !res_ok(res[at + 1]))
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "schema", bad);
	if (rc == RI_ST_OK) {
		*text = ri_strdup(PQgetvalue(res[at], 0, 0));
		if (PQntuples(res[at + 1]) == 1)
			*stored = ri_strdup(PQgetvalue(res[at + 1], 0, 0));
	}
	for (int i = 0; i < n; i++)
		PQclear(res[i]);
	return rc;
}

/* RI_ST_OK, RI_ST_INTEGRITY (why says what differs) or RI_ST_UNAVAILABLE
 * when the catalog could not be read at all: a timeout or a lost server is
 * never reported as tampering (fail closed, but as what it is). */
int
pg_schema_check(struct pg *s, char *why, size_t n)
{
	char want[2 * RI_HASH_LEN + 1], *have, *stored;
	bool ok;

	if (s->core.key == NULL)
		return RI_ST_OK;
	if (schema_read(s, &have, &stored) != RI_ST_OK) {
		snprintf(why, n, "its schema cannot be read: %s", s->core.err.msg);
		return RI_ST_UNAVAILABLE;
	}
	schema_mac(s, have, want);
	free(have);
	ok = stored != NULL && strlen(stored) == sizeof want - 1 && sodium_memcmp(stored, want, sizeof want - 1) == 0;
	free(stored);
	if (!ok)
		snprintf(why, n, "its schema is not the one ri creates: a table altered, a trigger dropped or"
		    " disabled, or an object added");
	return ok ? RI_ST_OK : RI_ST_INTEGRITY;
}

/*
 * The MACed schema version (issue 43: the fingerprint is checked by
 * ri-startcheck, ri-audit, the sweep and ri-init; every other command
 * checks this instead, in the round trip that reads the meta rows --
 * no catalog read, no round trip of its own).  Meta schema_version is
 * "N MAC", the MAC under the key over the version, the instance id and
 * the fingerprint's MAC that ri-init stored: it says this key's ri-init
 * made this instance's schema at version N.  It does not see a schema
 * changed since (a dropped trigger): that is the full check's, run by
 * the four commands above (RI_SCHEMA_FULL).
 */
#define PG_SCHEMA_VERSION 1
static void
schema_version_mac(struct pg *s, int version, const char *smac, char hex[2 * RI_HASH_LEN + 1])
{
	char text[2 * RI_INSTANCE_LEN + 2 * RI_HASH_LEN + 64], inst[2 * RI_INSTANCE_LEN + 1];
	unsigned char mac[RI_HASH_LEN];

	ri_hex(s->core.instance_id, RI_INSTANCE_LEN, inst);
	snprintf(text, sizeof text, "ri postgresql schema %d %s %s", version, inst, smac);
	ri_mac(s->core.key, s->core.keylen, text, strlen(text), mac);
	ri_hex(mac, sizeof mac, hex);
}

/* The meta rows' schema version against its MAC: OK or INTEGRITY (why). */
static int
schema_version_check(struct pg *s, const char *smac, const char *sver, char *why, size_t n)
{
	char want[2 * RI_HASH_LEN + 1];
	int version = atoi(sver);
	const char *mac = strchr(sver, ' ');

	if (s->core.key == NULL)
		return RI_ST_OK;
	schema_version_mac(s, version, smac, want);
	if (version != PG_SCHEMA_VERSION || mac == NULL || strlen(mac + 1) != sizeof want - 1 ||
	    sodium_memcmp(mac + 1, want, sizeof want - 1) != 0) {
		snprintf(why, n, "its schema version row (%d) does not verify under the key as ri's schema version %d",
		    version, PG_SCHEMA_VERSION);
		return RI_ST_INTEGRITY;
	}
	return RI_ST_OK;
}

/* ---- open / create ---------------------------------------------------------------- */

static int
pg_connect(struct pg *s, ri_err *err)
{
	/* the per-write budget (open_sqlite.c's busy timeout): jwb, less the
	 * allowance under a declared journal fence */
	s->budget = s->core.cfg->journal_write_bound;
	if (s->core.cfg->journal_fence)
		s->budget -= s->core.cfg->clock_offset_allowance;
	if (s->budget < 10)
		s->budget = 10;
	if (!ri_pq_load("journal", err))
		return RI_JOURNAL_UNAVAILABLE;
	/* client_encoding in the startup packet: a session's SET would not
	 * survive its transaction behind a pooler, while PgBouncer keeps each
	 * client's startup client_encoding and sets it on the server session
	 * it lends (issue 43); libpq sends it only when asked, as here */
	static const char *const kw[] = { "dbname", "client_encoding", NULL };
	const char *const val[] = { s->core.cfg->journal, "UTF8", NULL };
	s->conn = PQconnectdbParams(kw, val, 1);
	if (s->conn == NULL || PQstatus(s->conn) != CONNECTION_OK) {
		char why[1024];
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): %s",
		    ri_redact(s->conn ? PQerrorMessage(s->conn) : "cannot connect", why, sizeof why));
	}
	return RI_OK;
}

/* The meta rows: the format, the instance id, and (smac, sver: "" when
 * none) the schema's fingerprint MAC and its MACed version. */
static int
load_meta(struct pg *s, char smac[2 * RI_HASH_LEN + 1], char sver[2 * RI_HASH_LEN + 24], ri_err *err)
{
	PGresult *r = NULL;
	bool fmt = false, inst = false, began = false;
	int other = 0;

	smac[0] = sver[0] = '\0';
	if (pg_read_begin(s, &began) == RI_ST_OK)
		r = run(s, "SELECT k, v FROM ri_meta", NULL);
	pg_read_end(s, began);
	if (!res_ok(r)) {
		PQclear(r);
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): not an ri journal, or unreadable"
		    " (run ri-init?)");
	}
	for (int i = 0; i < PQntuples(r); i++) {
		const char *k = PQgetvalue(r, i, 0), *v = PQgetvalue(r, i, 1);
		if (strcmp(k, "format") == 0) {
			other = atoi(v);
			fmt = other == RI_FORMAT;
		}
		else if (strcmp(k, "instance_id") == 0)
			inst = sodium_hex2bin(s->core.instance_id, sizeof s->core.instance_id, v, strlen(v), NULL, NULL, NULL) == 0;
		else if (strcmp(k, "shards") == 0)
			s->core.shards = atoi(v);
		else if (strcmp(k, "boundary") == 0)
			s->core.boundary = strtoll(v, NULL, 10);
		else if (strcmp(k, "schema_mac") == 0)
			snprintf(smac, 2 * RI_HASH_LEN + 1, "%s", v);
		else if (strcmp(k, "schema_version") == 0)
			snprintf(sver, 2 * RI_HASH_LEN + 24, "%s", v);
	}
	PQclear(r);
	/* INTERFACE, third wave (Shards): an older format is a release to
	 * change, named as the file's is (open_sqlite.c), never a tampering */
	if (!fmt && other > 0 && other < RI_FORMAT)
		return ri_fail(err, RI_CONFIG, "journal (postgresql) is format %d; this ri (%s) reads format %d only: %s",
		    other, ri_version(), RI_FORMAT, ri_format_advice(other));
	/* the count is bound by every head's MAC (a changed row fails there
	 * too); a journal migrated in place has one shard */
	if (!fmt || !inst || s->core.shards < 1 || s->core.shards > RI_SHARDS_MAX ||
	    (s->core.boundary > 0 && s->core.shards != 1))
		return ri_fail(err, RI_INTEGRITY, "journal (postgresql): missing or unknown format/instance id/shard count");
	/* the sequence hands seqs out to shards that commit in any order */
	s->core.seq_gaps = s->core.shards > 1;
	ri_core_genesis(&s->core);
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
	s->q_clock = -1;
	const char *trace = getenv("RI_PG_TRACE");
	s->trace = trace != NULL ? atoi(trace) : 0;
	s->core.cfg = c;
	s->readonly = (flags & RI_READONLY) != 0;
	if (key != NULL) {
		s->core.key = (unsigned char *)key;
		s->core.keylen = keylen;
		ri_eng_derive_keys(&s->core);
	}
	char smac[2 * RI_HASH_LEN + 1], sver[2 * RI_HASH_LEN + 24];
	bool witnessed = !(flags & RI_INSPECT), gate = key != NULL && !(flags & RI_READONLY), began;
	int64_t anchor = 0;
	if ((rc = pg_connect(s, err)) != RI_OK) {
		pg_close(&s->base);
		return rc;
	}
	/*
	 * The connect's checks in one round trip (issue 43): the meta rows,
	 * the head and the start gate's read of the open intents' kinds
	 * (Binding 2, store.h open_kinds), in one snapshot.  The head is
	 * judged against the witness as read BEFORE that snapshot began: a
	 * line another host's append adds after the read names a record the
	 * snapshot holds, so a fresh journal never looks rolled back.  The
	 * head's read goes with the line's seq as its anchor (a guess until
	 * the line is judged: a wrong one is never answered from).  negative
	 * control: the witness read after the snapshot began.
	 */
	if (witnessed && !RI_NC(RI_NC_WITNESS_AFTER_SNAPSHOT)) {
		ri_st_witness_read(&s->core, flags, &anchor);
		(void)ri_fault("open.read_witness");
	}
	if (gate && pg_read_begin(s, &began) == RI_ST_OK) {
		jhead_ahead(s, anchor);
		snap_ahead(s, OPEN_KINDS_SQL, NULL);
	}
	if ((rc = load_meta(s, smac, sver, err)) != RI_OK) {
		pg_close(&s->base);
		return rc;
	}
	if (witnessed && RI_NC(RI_NC_WITNESS_AFTER_SNAPSHOT)) {
		(void)ri_fault("open.read_witness");
		ri_st_witness_read(&s->core, flags, &anchor);
	}
	if (!(flags & RI_INSPECT)) {
		char why[1024];
		/* the fingerprint where asked (RI_SCHEMA_FULL) or where no
		 * version row stands (an instance made before it); else the
		 * version row, read with the meta rows */
		if ((rc = (flags & RI_SCHEMA_FULL) || sver[0] == '\0' ? pg_schema_check(s, why, sizeof why) :
		    schema_version_check(s, smac, sver, why, sizeof why)) != RI_ST_OK) {
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
	if (gate) {
		int64_t seq;
		unsigned char h[RI_HASH_LEN];
		/* answered from the meta rows' round trip, when its snapshot
		 * still stands (pg_read_begin: else another) */
		if (pg_read_begin(s, &began) == RI_ST_OK)
			snap_ahead(s, OPEN_KINDS_SQL, NULL);
		if (ri_eng_head(&s->base, &seq, h) == RI_ST_INTEGRITY) {
			rc = ri_fail(err, RI_INTEGRITY, "%s", s->core.err.msg);
			pg_close(&s->base);
			return rc;
		}
	}
	*out = &s->base;
	return RI_OK;
}

/* A handle of ri-init's (create, drop, migrate): connected by the caller,
 * never opened as a store (no witness, no schema check). */
static struct pg *
pg_handle(const struct ri_config *c, const unsigned char *key, size_t keylen)
{
	struct pg *s = ri_xcalloc(1, sizeof *s);

	s->nmap = ri_xcalloc(NMAP, sizeof *s->nmap);
	s->q_clock = -1;
	s->base.ops = &pg_ops;
	ri_eng_attach(&s->core, &pg_backend, s, &s->nodes);
	s->core.cfg = c;
	s->core.key = (unsigned char *)key;
	s->core.keylen = keylen;
	return s;
}

/* ri-init: the schema, in one transaction, in a database that holds no
 * table yet -- never over anything. */
int
ri_pg_create(const struct ri_config *c, const unsigned char *key, size_t keylen,
    char instance_hex[2 * RI_INSTANCE_LEN + 1], ri_err *err)
{
	struct pg *s = pg_handle(c, key, keylen);
	struct params p = { 0 };
	struct ri_jhead jh = { 0 };
	unsigned char mac[RI_HASH_LEN];
	char fmt[16], smac[2 * RI_HASH_LEN + 1], vmac[2 * RI_HASH_LEN + 1], sver[2 * RI_HASH_LEN + 24], *text = NULL;
	PGresult *r;
	int rc;

	if ((rc = pg_connect(s, err)) != RI_OK)
		goto out;
	/* one transaction from the emptiness check to the head, its bounds
	 * its own (no statement bound: DDL; issue 43, no session state) */
	if (tx_begin(s, true, true) != RI_ST_OK) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "%s", s->core.err.msg);
		goto out;
	}
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
	/* INTERFACE, third wave: "shards", 16 on PostgreSQL unless given
	 * (docs/POSTGRESQL.md, shards: hosts of an instance share no lock
	 * unless their acts share a shard) */
	s->core.shards = c->shards > 0 ? c->shards : RI_PG_SHARDS_DEFAULT;
	ri_hex(s->core.instance_id, sizeof s->core.instance_id, instance_hex);
	ri_genesis(s->core.instance_id, s->core.genesis);
	/* negative control: every session may set the clock */
	r = PQexec(s->conn, RI_NC(RI_NC_SESSION_CLOCK) || c->clock_env ? clock_ddl_env : clock_ddl_server);
	if (res_ok(r)) {
		PQclear(r);
		r = PQexec(s->conn, schema_ddl);
	}
	if (res_ok(r) && s->core.shards > 1) {
		PQclear(r);
		r = PQexec(s->conn, shard_ddl);
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
	schema_version_mac(s, PG_SCHEMA_VERSION, smac, vmac);
	snprintf(sver, sizeof sver, "%d %s", PG_SCHEMA_VERSION, vmac);
	char shards[8];
	snprintf(shards, sizeof shards, "%d", s->core.shards);
	p_text(&p, fmt);
	p_text(&p, instance_hex);
	p_text(&p, smac);
	p_text(&p, sver);
	p_text(&p, shards);
	r = run_write(s, " ri_meta ", "INSERT INTO ri_meta VALUES ('format', $1), ('instance_id', $2), ('schema_mac', $3),"
	    " ('schema_version', $4), ('shards', $5)", &p);
	/* each shard's head of an empty journal: seq 0 at the shard's genesis,
	 * under its MAC, which binds the shard and the count (heads.h) */
	for (int shard = 0; res_ok(r) && shard < s->core.shards; shard++) {
		unsigned char g[RI_HASH_LEN];
		PQclear(r);
		jh = (struct ri_jhead){ .shard = shard };
		ri_core_shard_genesis(&s->core, shard, g);
		ri_jhead_mac(key, keylen, s->core.instance_id, s->core.shards, s->core.boundary, &jh, g, mac);
		p = (struct params){ 0 };
		p_int(&p, shard);
		p_bytes(&p, jh.root, RI_HASH_LEN);
		p_bytes(&p, jh.open_acc, RI_HASH_LEN);
		p_bytes(&p, mac, RI_HASH_LEN);
		r = run_write(s, " heads ", "INSERT INTO heads VALUES ($1, 0, $2, 0, $3, 0, 0, $4)", &p);
	}
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
		pg_rollback(s);
	pg_close(&s->base);
	return rc;
}

int
ri_pg_drop(const struct ri_config *c, ri_err *err)
{
	struct pg *s = pg_handle(c, NULL, 0);
	PGresult *r;
	int rc;

	if ((rc = pg_connect(s, err)) == RI_OK) {
		/* the tables (their indexes and triggers with them), then the
		 * functions: schema_ddl's objects and the clock's, none other */
		s->round_trips++;
		r = PQexec(s->conn, "BEGIN; DROP TABLE IF EXISTS records, heads, nodes, open_intents, actors, leases,"
		    " marks, findings, findings_runs, ri_meta; DROP SEQUENCE IF EXISTS ri_seq; DROP FUNCTION IF EXISTS ri_append_only(), ri_fence_check(), ri_clock(); COMMIT");
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
	bool began = false;
	if (pg_read_begin(s, &began) != RI_ST_OK)
		return RI_ST_UNAVAILABLE;
	r = run(s, "SELECT version(), current_setting('server_version'), current_setting('fsync'),"
	    " current_setting('synchronous_commit'), current_setting('full_page_writes'),"
	    " current_setting('synchronous_standby_names'),"
	    " coalesce((SELECT bool_or(p.prosrc LIKE '%ri.clock%') FROM pg_proc p JOIN pg_namespace n"
	    "  ON n.oid = p.pronamespace WHERE n.nspname = current_schema() AND p.proname = 'ri_clock'), true)", NULL);
	pg_read_end(s, began);
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

/* ---- ri-init --migrate (docs/SHARDS.md, "Migration") ---------------------- */

/* a page of format-3 rows; the ", 0" after RI_F3_COLS is format 4's shard,
 * the column ri_pg_load_row reads last */
#define F3_PAGE "5000"

/* Every format-3 record in seq order, a page at a time: contiguous from
 * 1, each linked to the one before under format 3's encoding, MACed,
 * its payload matching its digest; *last the last hash. */
static int
migrate_verify_rows(struct pg *s, ri_ms now, int64_t *rows, unsigned char last[RI_HASH_LEN], ri_err *err)
{
	int64_t seq = 0;

	ri_genesis_v3(s->core.instance_id, last);
	for (;;) {
		struct params p = { 0 };
		PGresult *r;
		int n;

		p_int(&p, seq);
		r = run(s, "SELECT " RI_F3_COLS ", 0 FROM records WHERE seq > $1 ORDER BY seq LIMIT " F3_PAGE, &p);
		if (!res_ok(r)) {
			int rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): %s", s->core.err.msg);
			PQclear(r);
			return rc;
		}
		n = PQntuples(r);
		for (int i = 0; i < n; i++) {
			struct ri_record rec;
			struct ri_raw w;
			const char *why;

			ri_pg_load_row(r, i, &rec, &w);
			why = rec.seq != seq + 1 ? "a row before it is missing" :
			    ri_raw_verify(s->core.instance_id, s->core.key, s->core.keylen, &rec, &w, last, now, 3);
			if (RI_NC(RI_NC_MIGRATE_ROWS_UNCHECKED))
				why = NULL;     /* negative control: the rows taken unjudged */
			if (why == NULL)
				memcpy(last, w.hash, RI_HASH_LEN);
			free(w.payload_text);
			seq = rec.seq;
			ri_record_clear(&rec);
			if (why != NULL) {
				PQclear(r);
				return ri_fail(err, RI_INTEGRITY, "journal integrity: record seq %lld fails verification"
				    " (format 3): %s: the journal is not migrated", (long long)seq, why);
			}
		}
		PQclear(r);
		if (n == 0)
			break;
	}
	*rows = seq;
	return RI_OK;
}

int
ri_pg_migrate(const struct ri_config *c, const unsigned char *key, size_t keylen, int64_t *boundary,
    char kept[128], ri_err *err)
{
	struct pg *s = pg_handle(c, key, keylen);
	struct params p = { 0 };
	struct ri_jhead h = { 0 };
	unsigned char mac[RI_HASH_LEN], want[RI_HASH_LEN], lh[RI_HASH_LEN], last[RI_HASH_LEN];
	char sql[2048], schema[64], smac[2 * RI_HASH_LEN + 1], vmac[2 * RI_HASH_LEN + 1],
	    sver[2 * RI_HASH_LEN + 24], *text = NULL;
	int64_t rows = 0;
	ri_ms now;
	PGresult *r;
	int rc, fmt = 0;
	bool inst = false, hok;

	kept[0] = '\0';
	if ((rc = pg_connect(s, err)) != RI_OK)
		goto out;
	/* one transaction: every writer held off (the head's lock, as every
	 * writer's first), the old verified, kept, and converted -- a failure
	 * anywhere leaves format 3 as it was */
	if (tx_begin(s, true, true) != RI_ST_OK ||
	    !res_ok(r = run(s, "LOCK TABLE heads, records IN ACCESS EXCLUSIVE MODE", NULL))) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): %s", s->core.err.msg);
		goto out;
	}
	PQclear(r);
	r = run(s, "SELECT k, v, current_schema(), ri_clock() FROM ri_meta", NULL);
	if (!res_ok(r) || PQntuples(r) < 1) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): not an ri journal, or unreadable");
		PQclear(r);
		goto out;
	}
	snprintf(schema, sizeof schema, "%s", PQgetvalue(r, 0, 2));
	now = g_int(r, 0, 3);
	for (int i = 0; i < PQntuples(r); i++) {
		const char *k = PQgetvalue(r, i, 0), *v = PQgetvalue(r, i, 1);
		if (strcmp(k, "format") == 0)
			fmt = atoi(v);
		else if (strcmp(k, "instance_id") == 0)
			inst = sodium_hex2bin(s->core.instance_id, RI_INSTANCE_LEN, v, strlen(v), NULL, NULL, NULL) == 0;
	}
	PQclear(r);
	if (fmt == RI_FORMAT) {
		rc = ri_fail(err, RI_USAGE, "journal (postgresql) is format %d already: nothing to migrate", fmt);
		goto out;
	}
	if (fmt != 3 || !inst) {
		rc = ri_fail(err, fmt != 3 ? RI_CONFIG : RI_INTEGRITY, "journal (postgresql) is format %d;"
		    " ri-init --migrate converts format 3 only", fmt);
		goto out;
	}
	if (strspn(schema, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(schema) || strlen(schema) > 48) {
		rc = ri_fail(err, RI_CONFIG, "journal (postgresql): schema \"%s\": a name of [a-z0-9_] is migrated,"
		    " no other", schema);
		goto out;
	}
	snprintf(kept, 128, "%s_format3", schema);
	/* the head, under format 3's MAC, against the rows it names */
	r = run(s, "SELECT h.last_seq, h.root, h.open_count, h.open_acc, h.sealed_seq, h.grants, h.mac,"
	    " (SELECT hash FROM records WHERE seq = h.last_seq) FROM heads h WHERE h.id = 1", NULL);
	hok = res_ok(r) && PQntuples(r) == 1 && g_bytes(r, 0, 1, h.root, RI_HASH_LEN) &&
	    g_bytes(r, 0, 3, h.open_acc, RI_HASH_LEN) && g_bytes(r, 0, 6, mac, RI_HASH_LEN);
	if (hok) {
		h.last_seq = g_int(r, 0, 0);
		h.open_count = g_int(r, 0, 2);
		h.sealed_seq = g_int(r, 0, 4);
		h.grants = g_int(r, 0, 5);
		if (h.last_seq == 0)
			ri_genesis_v3(s->core.instance_id, lh);
		else
			hok = g_bytes(r, 0, 7, lh, RI_HASH_LEN);
	}
	PQclear(r);
	if (hok) {
		ri_jhead_mac_v3(key, keylen, s->core.instance_id, &h, lh, want);
		/* negative control: the old head taken as it is */
		hok = ri_eq32(want, mac) || RI_NC(RI_NC_MIGRATE_HEAD_UNCHECKED);
	}
	if (!hok) {
		rc = ri_fail(err, RI_INTEGRITY, "journal integrity: journal (postgresql): its head is missing, malformed"
		    " or fails its MAC (format 3)");
		goto out;
	}
	if ((rc = migrate_verify_rows(s, now, &rows, last, err)) != RI_OK)
		goto out;
	if (rows != h.last_seq || !ri_eq32(last, lh)) {
		rc = ri_fail(err, RI_INTEGRITY, "journal integrity: journal (postgresql): its head names seq %lld, its"
		    " rows end at %lld (truncated or extended)", (long long)h.last_seq, (long long)rows);
		goto out;
	}
	/* the old kept as it was, beside: a schema the fingerprint does not read */
	snprintf(sql, sizeof sql, "CREATE SCHEMA %s;"
	    " CREATE TABLE %s.records AS TABLE records; CREATE TABLE %s.heads AS TABLE heads;"
	    " CREATE TABLE %s.nodes AS TABLE nodes; CREATE TABLE %s.open_intents AS TABLE open_intents;"
	    " CREATE TABLE %s.actors AS TABLE actors; CREATE TABLE %s.leases AS TABLE leases;"
	    " CREATE TABLE %s.marks AS TABLE marks; CREATE TABLE %s.ri_meta AS TABLE ri_meta",
	    kept, kept, kept, kept, kept, kept, kept, kept, kept);
	/* several statements, no parameter: the simple protocol, in the
	 * transaction the lock began */
	if (!res_ok(r = PQexec(s->conn, sql))) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): keeping format 3 as %s: %s", kept,
		    PQresultErrorMessage(r));
		PQclear(r);
		goto out;
	}
	PQclear(r);
	/* format 4 in place: the records keep every byte (shard 0), the head
	 * is shard 0's, the allocator and the trigger's function are format 4's */
	if (!res_ok(r = PQexec(s->conn, "ALTER TABLE records ADD COLUMN shard integer NOT NULL DEFAULT 0;"
	    " ALTER TABLE records ALTER COLUMN shard DROP DEFAULT;"
	    " ALTER TABLE heads RENAME COLUMN id TO shard;"
	    " ALTER TABLE heads DROP CONSTRAINT heads_id_check;"
	    " ALTER TABLE heads ADD CONSTRAINT heads_shard_check CHECK (shard >= 0 AND shard < 256);"
	    " CREATE SEQUENCE ri_seq AS bigint;"
	    " CREATE OR REPLACE" APPEND_ONLY_FN
	    /* CREATE OR REPLACE drops the function's SET: put it back (the
	     * schema's own tables, never a session's search_path) */
	    " DO $$ BEGIN EXECUTE format('ALTER FUNCTION ri_append_only() SET search_path = %I', current_schema());"
	    " END $$"))) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): converting: %s", PQresultErrorMessage(r));
		PQclear(r);
		goto out;
	}
	PQclear(r);
	*boundary = h.last_seq;
	s->core.shards = 1;
	s->core.boundary = h.last_seq;
	ri_jhead_mac(key, keylen, s->core.instance_id, 1, h.last_seq, &h, lh, mac);
	if ((text = schema_text(s)) == NULL) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "%s", s->core.err.msg);
		goto out;
	}
	schema_mac(s, text, smac);
	schema_version_mac(s, PG_SCHEMA_VERSION, smac, vmac);
	snprintf(sver, sizeof sver, "%d %s", PG_SCHEMA_VERSION, vmac);
	snprintf(sql, sizeof sql, "%lld", (long long)h.last_seq);
	p_bytes(&p, mac, RI_HASH_LEN);
	p_text(&p, smac);
	p_text(&p, sver);
	p_text(&p, sql);
	r = run(s, "WITH h AS (UPDATE heads SET shard = 0, mac = $1 RETURNING 1),"
	    " m AS (UPDATE ri_meta SET v = CASE k WHEN 'format' THEN '4' WHEN 'schema_mac' THEN $2 ELSE $3 END"
	    " WHERE k IN ('format', 'schema_mac', 'schema_version') RETURNING 1)"
	    " INSERT INTO ri_meta VALUES ('shards', '1'), ('boundary', $4)", &p);
	if (!res_ok(r)) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal (postgresql): converting: %s", s->core.err.msg);
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
		pg_rollback(s);
	pg_close(&s->base);
	return rc;
}
