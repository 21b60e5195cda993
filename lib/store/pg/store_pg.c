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
#include "store/pg/store_pg_int.h"

/* ---- rows ------------------------------------------------------------------- */

/* One row (REC_COLS, text form) decoded: PostgreSQL types every column, so
 * what is left to check is each value's size and presence. */
void
ri_pg_load_row(const PGresult *res, int i, struct ri_record *r, struct ri_raw *w)
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
	w->shard = (int)g_int(res, i, 18);
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

/* a traversal's snapshot: its own, or the command's read snapshot a
 * traversal has run in (snap_long) -- never that snapshot alone, where
 * nothing was verified yet (store_engine.h: trust holds only inside the
 * traversal's snapshot) */
static bool
in_snapshot(void *bk)
{
	struct pg *s = bk;

	return s->in_tx && (!s->snap || s->snap_long);
}

/* a traversal's snapshot may outlast a read's budget: its own, or the
 * command's read snapshot with its statement bound lifted (a statement
 * that rides with the next round trip) */
static int
scan_begin(void *bk, bool *began)
{
	struct pg *s = bk;

	*began = false;
	pg_snapshot_aged(s);
	if (s->in_tx && s->snap && !s->snap_long) {
		s->snap_long = true;
		return defer_write(s, NULL, RI_ST_UNAVAILABLE, "read", "SELECT set_config('statement_timeout', '0', true)",
		    NULL);
	}
	if (s->in_tx)
		return RI_ST_OK;
	int rc = tx_begin(s, false, true);
	*began = rc == RI_ST_OK;
	return rc;
}

#define RECORD_BY_ID_SQL "SELECT " REC_COLS REC_PREV " FROM records WHERE event_id = $1"
#define RECORD_BY_ID_SHARDS_SQL "SELECT " REC_COLS REC_LINK " FROM records WHERE event_id = $1"
#define RECORD_BY_ID(s) ((s)->core.shards <= 1 ? RECORD_BY_ID_SQL : RECORD_BY_ID_SHARDS_SQL)

static int
record_by_id(void *bk, const char *event_id, struct ri_record *r, struct ri_raw *w)
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *res;
	int rc = RI_ST_OK;

	p_text(&p, event_id);
	res = run(s, RECORD_BY_ID(s), &p);
	if (!res_ok(res))
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", res);
	else if (PQntuples(res) == 0)
		rc = RI_ST_NOT_KNOWN;
	else {
		snap_hashes(s, res, true);
		ri_pg_load_row(res, 0, r, w);
	}
	PQclear(res);
	return rc;
}

/* One query for a bounded read; pages of RECORDS_PAGE rows, each its own
 * round trip, for an unbounded one (a traversal, a seal's walk). */
#define RECORDS_PAGE 1000

/* The statement of one page of records_from, from `from` (and of its read
 * sent ahead: be_read_ahead). */
void
rows_sql(const struct pg *s, const struct ri_rows_query *q, int64_t from, struct params *p, char *sql, size_t n)
{
	/* from the scope's verified head: no row of it above (from_head) */
	if (q->from_head && from == q->from)
		from = INT64_MAX;
	/* a scope's rows are not each other's predecessors: each one's
	 * comes with it (REC_PREV); the whole journal's are -- with one shard.
	 * With more, a bounded read's rows each bring their shard's link
	 * (REC_LINK); an unbounded one (a traversal, a seal's walk) keeps a
	 * chain per shard itself */
	const char *link = s->core.shards > 1 ? (q->type != SCOPE_ALL || q->limit > 0 ? REC_LINK : "") :
	    q->type != SCOPE_ALL ? REC_PREV : "";
	snprintf(sql, n, "SELECT " REC_COLS "%s FROM records WHERE seq %s $1%s ORDER BY seq %s LIMIT $%d",
	    link, q->desc ? "<=" : ">=",
	    q->type == SCOPE_INV ? " AND invocation_id = $2" :
	    q->type == SCOPE_ACT ? " AND kind = $2 AND act_key = $3" : "",
	    q->desc ? "DESC" : "ASC", q->type == SCOPE_INV ? 3 : q->type == SCOPE_ACT ? 4 : 2);
	p_int(p, from);
	if (q->type != SCOPE_ALL)
		p_text(p, q->a);
	if (q->type == SCOPE_ACT)
		p_text(p, q->b);
	p_int(p, q->limit > 0 ? q->limit : RECORDS_PAGE);
}

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
		char sql[768];
		int n;

		rows_sql(s, q, from, &p, sql, sizeof sql);
		res = run(s, sql, &p);
		if (!res_ok(res)) {
			rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", res);
			PQclear(res);
			return rc;
		}
		n = PQntuples(res);
		snap_hashes(s, res, q->type != SCOPE_ALL || (s->core.shards > 1 && q->limit > 0));
		for (int i = 0; i < n && !stop; i++) {
			struct ri_record r;
			struct ri_raw w;

			ri_pg_load_row(res, i, &r, &w);
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

#define OPEN_ROWS_SQL "SELECT invocation_id, seq, kind, act_key, event_id, recorded_at FROM open_intents ORDER BY seq"

/* Every row of the index, checked whole against the head's count and
 * accumulator (heads.h), filtered after the check. */
static int
open_rows(void *bk, struct ri_open_scan *os)
{
	struct pg *s = bk;
	PGresult *r;
	int rc;

	r = run(s, OPEN_ROWS_SQL, NULL);
	if (!res_ok(r)) {
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", r);
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
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "actor read", r);
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

/* store_engine.h lease_ahead: the lease row's locked read goes in the
 * write's first round trip, after the head's lock (the lock order) */
static void
lease_ahead(void *bk, const char *kind, const char *act_key)
{
	struct params p = { 0 };

	p_text(&p, kind);
	p_text(&p, act_key);
	ahead_queue(bk, " leases ", LEASE_LOCK_SQL, &p);
	/* a lease's write changes neither the registry nor the bindings: its
	 * head FOR NO KEY UPDATE, never queued behind -- or queueing -- every
	 * other shard's writer holding shard 0 key-shared (heads_pg.c) */
	struct pg *s = bk;
	s->plan.light = s->core.shards > 1;
}

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
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "lease read", r);
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
	return defer_write(s, " leases ", RI_ST_UNAVAILABLE, "lease write",
	    "INSERT INTO leases(kind, act_key, holder, expires_at, token, mac) VALUES ($1, $2, $3, $4, $5, $6)"
	    " ON CONFLICT (kind, act_key) DO UPDATE SET holder = excluded.holder,"
	    " expires_at = excluded.expires_at, token = excluded.token, mac = excluded.mac",
	    &p);
}

/* store_engine.h lease_free_if: the row freed where it stands as was
 * (negative control: any row of the act's, whoever holds it now) */
static int
lease_free_if(void *bk, const char *kind, const char *act_key, const struct ri_lease_row *was,
    const unsigned char mac[RI_HASH_LEN], bool *done)
{
	static const char free_sql[] = "UPDATE leases SET holder = NULL, expires_at = 0, token = $3, mac = $4"
	    " WHERE kind = $1 AND act_key = $2 AND holder = $5 AND expires_at = $6 AND token = $3 AND mac = $7";
	static const char free_any_sql[] = "UPDATE leases SET holder = NULL, expires_at = 0, token = $3, mac = $4"
	    " WHERE kind = $1 AND act_key = $2";
	struct pg *s = bk;
	struct params p = { 0 };
	bool any = RI_NC(RI_NC_RELEASE_UNMATCHED);
	struct qry one = { any ? free_any_sql : free_sql, &p };
	PGresult *r;
	int rc;

	*done = false;
	p_text(&p, kind);
	p_text(&p, act_key);
	p_int(&p, was->token);
	p_bytes(&p, mac, RI_HASH_LEN);
	if (!any) {
		p_text(&p, was->holder);
		p_int(&p, was->expires);
		p_bytes(&p, was->mac, RI_HASH_LEN);
	}
	if ((rc = write_once(s, ri_st_shard_of(&s->core, kind, act_key), &one, 1, &r)) == RI_ST_OK)
		*done = strcmp(PQcmdTuples(r), "1") == 0;
	PQclear(r);
	return rc;
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
		if ((rc = defer_write(s, " open_intents ", RI_ST_STEP2, "append",
		    "INSERT INTO open_intents VALUES ($1, $2, $3, $4, $5, $6)",
		    &p)) == RI_ST_OK)
			*added = true;
		return rc;
	}
	r = run_write(s, " open_intents ", "INSERT INTO open_intents VALUES ($1, $2, $3, $4, $5, $6)"
	    " ON CONFLICT DO NOTHING", &p);
	if (!res_ok(r)) {
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "append", r);
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
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "append", r);
		PQclear(r);
		return rc;
	}
	if (PQntuples(r) == 1) {
		ri_open_elem(inv, g_int(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3),
		    g_int(r, 0, 4), elem);
		ri_acc_xor(jh->open_acc, elem);
		jh->open_count--;
		rc = defer_write(s, " open_intents ", RI_ST_UNAVAILABLE, "append",
		    "DELETE FROM open_intents WHERE invocation_id = $1", &p);
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
	p_int(&p, h->shard);
	rc = defer_write(s, " records ", RI_ST_STEP2, "append", "INSERT INTO records(" REC_COLS ") VALUES ($1, $2, $3, $4, $5,"
	    " $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)", &p);
	/* a later failure rolls the transaction back, and the next one reads
	 * the head, and last_at, again */
	if (rc == RI_ST_OK)
		s->last_at = h->recorded_at;
	return rc;
}

/* store_engine.h shard_prev: the link a read snapshot's row brought with
 * it (REC_LINK), or the shard's index (records_shard). */
static int
shard_prev(void *bk, int shard, int64_t seq, int64_t *before, unsigned char out[RI_HASH_LEN])
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *r;
	int rc;

	*before = 0;
	if (snap_link(s, seq, out)) {
		*before = -1;   /* (unknown: the link is all a caller takes) */
		return RI_ST_OK;
	}
	p_int(&p, shard);
	p_int(&p, seq);
	r = run(s, "SELECT seq, hash FROM records WHERE shard = $1 AND seq < $2 ORDER BY seq DESC LIMIT 1", &p);
	if (!res_ok(r))
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", r);
	else if (PQntuples(r) == 0)
		rc = RI_ST_NOT_KNOWN;
	else if (*before = g_int(r, 0, 0), !g_bytes(r, 0, 1, out, RI_HASH_LEN))
		rc = ri_st_fail(&s->core, RI_ST_INTEGRITY, seq, NULL,
		    "journal integrity: the record before seq %lld in shard %d is malformed", (long long)seq, shard);
	else
		rc = RI_ST_OK;
	PQclear(r);
	return rc;
}

/* store_engine.h seq_next: the sequence (docs/SHARDS.md, one allocator) --
 * no lock held to commit, so seqs of different shards commit in any order
 * and a rolled-back append leaves a gap.  The write's first head read
 * allocated one after its shard's lock (heads_pg.c head_sql_alloc); any
 * other record is allocated here, under its shard's lock, with the clock
 * read after it: a record is stamped after its seq (at). */
static int
seq_next(void *bk, int shard, int64_t *seq, ri_ms *at)
{
	struct pg *s = bk;
	PGresult *r;
	int rc = RI_ST_OK;

	*at = RI_NONE;
	if (s->pre_seq > 0 && s->pre_seq_shard == shard) {
		*seq = s->pre_seq;
		s->pre_seq = 0;
		return RI_ST_OK;
	}
	/* nextval in FROM: allocated before the projection reads the clock */
	r = run(s, "SELECT a.seq, ri_clock() FROM (SELECT nextval('ri_seq') OFFSET 0) a(seq)", NULL);
	if (!res_ok(r) || PQntuples(r) != 1)
		rc = pg_db_fail(s, RI_ST_STEP2, "sequence", r);
	else {
		*seq = g_int(r, 0, 0);
		*at = g_int(r, 0, 1);
	}
	PQclear(r);
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
write_begin(struct pg *s, int shard, struct ri_jhead *jh, unsigned char lh[RI_HASH_LEN], ri_ms *now)
{
	int rc;

	if (s->readonly)
		return ri_st_fail(&s->core, RI_ST_READONLY, 0, NULL, "the journal is open read-only");
	if ((rc = jhead_get_at(s, shard, true, jh, lh, now)) != RI_ST_OK)
		rollback_keep(s);
	else
		pg_trace_held(s);
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
	if (ri_st_shard_of(&s->core, kind, act_key) != RI_SHARD_INSTANCE)
		jhead_ahead_write(s, RI_SHARD_INSTANCE);
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
		scopes_sql(s, sc.key, kind, act_key, inv.key, a->invocation_id, &p, ida, idi, sql, sizeof sql);
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
	/* shard 0 (the registry's, the bindings') shared while the append
	 * judges its credential and bindings there: no revocation or
	 * rebinding commits between that judgement and the append's COMMIT */
	s->plan.guard0 = s->core.shards > 1;
	/* an act's append changes neither the registry nor the bindings
	 * (an audit.bound travels with a->bound: shard 0 locked FOR UPDATE) */
	s->plan.light = s->core.shards > 1 && a->bound == NULL && strcmp(kind, "audit") != 0;
	s->plan.appends = true;
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
	return defer_write(bk, NULL, RI_ST_STALE_BINDINGS, "the kind's bindings, recorded anew since they were read",
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
		if ((rc = defer_write(s, NULL, RI_ST_STEP2, "fence", "SELECT set_config('ri.fence', $1, true)", &p)) != RI_ST_OK) {
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
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "purge", sel);
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
	return pg_exec1(bk, " records ", RI_ST_UNAVAILABLE, "purge",
	    "UPDATE records SET payload = NULL, salt = NULL WHERE seq = $1", &p);
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
	r = run_write(s, " actors ", "INSERT INTO actors VALUES ($1, $2, $3, $4, NULL, $5, $6)", &p);
	if (res_ok(r))
		rc = RI_ST_OK;
	else if (r != NULL && (cn = PQresultErrorField(r, PG_DIAG_CONSTRAINT_NAME)) != NULL &&
	    strcmp(cn, "actors_pkey") == 0)
		rc = RI_ST_EXISTS;
	else
		rc = pg_db_fail(s, RI_ST_STEP2, "actor add", r);
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
	return pg_exec1(s, " actors ", RI_ST_STEP2, "actor revoke", "UPDATE actors SET revoked_at = $1, reg_seq = $2, mac = $3"
	    " WHERE actor_ref = $4", &p);
}

static int
pg_open_kinds(struct ri_store *base, ri_ms since, char ***kinds, size_t *n)
{
	struct pg *s = (struct pg *)base;
	PGresult *r;
	bool began;
	int rc;

	*kinds = NULL;
	*n = 0;
	if ((rc = pg_read_begin(s, &began)) != RI_ST_OK)
		return rc;
	r = run(s, OPEN_KINDS_SQL, NULL);
	if (!res_ok(r)) {
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", r);
	} else {
		/* a kind has an intent recorded after since exactly when its
		 * newest one is */
		*kinds = ri_xcalloc((size_t)PQntuples(r) + 1, sizeof **kinds);
		for (int i = 0; i < PQntuples(r); i++)
			if (!g_null(r, i, 1) && g_int(r, i, 1) > since)
				(*kinds)[(*n)++] = ri_strdup(PQgetvalue(r, i, 0));
	}
	PQclear(r);
	pg_read_end(s, began);
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
		int rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", r);
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
	return pg_exec1(s, " marks ", RI_ST_UNAVAILABLE, "write", "INSERT INTO marks VALUES ($1, $2, $3) ON CONFLICT (name)"
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
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", r);
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
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", r);
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
	struct pg *s = bk;
	int cols = ri_eng_row_keys_cols(which), rc = RI_ST_OK;
	PGresult *r = run(s, ri_eng_row_keys_sql[which], NULL);

	*keys = NULL;
	*n = 0;
	if (!res_ok(r)) {
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", r);
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
	return pg_exec1(bk, NULL, RI_ST_UNAVAILABLE, what, "SET LOCAL statement_timeout = 0", NULL);
}

/* store_engine.h sealed_rows */
static int
sealed_rows(void *bk, int64_t *seq)
{
	struct pg *s = bk;
	PGresult *r = run(s, "SELECT max(seq) FROM records WHERE action_ref = 'audit.sealed'", NULL);
	int rc = RI_ST_OK;

	if (!res_ok(r))
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", r);
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
	return pg_exec1(bk, " open_intents ", RI_ST_UNAVAILABLE, "rebuild", "DELETE FROM open_intents", NULL);
}

static int
nodes_reset(void *bk)
{
	struct pg *s = bk;
	int rc;

	if ((rc = pg_exec1(s, " nodes ", RI_ST_UNAVAILABLE, "rebuild", "DELETE FROM nodes", NULL)) != RI_ST_OK)
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
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "rebuild", res);
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
	pg_exec1(bk, " marks ", RI_ST_UNAVAILABLE, "rebuild", "DELETE FROM marks WHERE name = $1", &p);
}

static int
jhead_put(void *bk, const struct ri_jhead *jh, const unsigned char lh[RI_HASH_LEN])
{
	return jhead_set(bk, jh, lh);
}

/* ---- ri-audit's state check (store_engine.h) ------------------------------------ */

static int
schema_judge(void *bk, char *why, size_t n)
{
	return pg_schema_check(bk, why, n);
}

static int
jhead_raw(void *bk, int shard, struct ri_jhead *h, unsigned char lh[RI_HASH_LEN], unsigned char mac[RI_HASH_LEN])
{
	struct pg *s = bk;
	struct head_read hr;
	int rc;

	if ((rc = jhead_fetch(s, shard, false, &hr)) != RI_ST_OK)
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

	/* an invocation's newest row, as its scope's read brought it */
	if (s->in_tx && s->snap && s->leaf.kind != NULL && s->leaf.seq == seq) {
		*kind = ri_strdup(s->leaf.kind);
		*act_key = ri_strdup(s->leaf.act_key);
		*inv = ri_strdup(s->leaf.inv);
		memcpy(hash, s->leaf.hash, RI_HASH_LEN);
		return RI_ST_OK;
	}
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

static const unsigned char *
pg_genesis(struct ri_store *base)
{
	return ((struct pg *)base)->core.genesis;
}

void
pg_close(struct ri_store *base)
{
	struct pg *s = (struct pg *)base;

	if (s == NULL)
		return;
	pg_snapshot_end(s);     /* what it kept freed */
	/* Its ROLLBACK now, answered, before the session ends (issue 43,
	 * pooler-ready): PgBouncer closes a server session whose client left
	 * it inside a transaction -- every command would cost the pool a
	 * server session, and a new one its cold catalog caches.  One round
	 * trip, counted.  (Negative control: the session ends inside its
	 * transaction -- pooler.bats' backend-pid check.) */
	if (!RI_NC(RI_NC_FINISH_IN_TX) && s->rb_pending && s->conn != NULL && PQstatus(s->conn) == CONNECTION_OK) {
		s->rb_pending = false;
		s->round_trips++;
		PQclear(PQexec(s->conn, "ROLLBACK"));
	}
	if (s->trace > 0)
		fprintf(stderr, "ri: postgresql round trips: %lu\n", s->round_trips);
	ahead_clear(s);
	ri_payloads_end(&s->core);
	ri_st_witness_detach(&s->core);
	ri_tree_cache_free(&s->nodes);
	free(s->fence);
	free(s->snap_heads);
	free(s->snap_heads_at);
	leaf_clear(s);
	if (s->conn != NULL)
		PQfinish(s->conn);
	free(s->nmap);
	free(s);
}

static int
jhead_get_cb(void *bk, int shard, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN])
{
	return jhead_get(bk, shard, h, last_hash);
}

/* store.h settle: the caller waits for the journal to change */
static void
pg_settle(struct ri_store *base)
{
	pg_snapshot_end((struct pg *)base);
}

static void
be_settle(void *bk)
{
	pg_snapshot_end(bk);
}

/* store_engine.h read_ahead: each scope's newest row with its path, as
 * scope_max asks; its first page of records as records_from asks (from
 * the head: with no upper bound, from_head; the hash before each row with
 * it, REC_PREV); the lease row
 * as lease_read reads it unlocked, the index as open_rows reads it, a
 * record as record_by_id reads it, an actor's row and its scope's path as
 * actor_read and prefetch do.  Each goes with the snapshot's next round
 * trip. */
static void
be_read_ahead(void *bk, const struct ri_ahead_read *v, size_t n, const struct ri_ahead *ah)
{
	struct pg *s = bk;

	if (!s->in_tx || !s->snap)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct ri_ahead_read *a = &v[i];
		struct params p = { 0 };
		char sql[768];
		scope_ahead(s, &a->sc, a->rows.a, a->rows.b);
		rows_sql(s, &a->rows, a->rows.from, &p, sql, sizeof sql);
		snap_ahead(s, sql, &p);
	}
	if (ah->event_id != NULL) {
		struct params p = { 0 };
		p_text(&p, ah->event_id);
		snap_ahead(s, RECORD_BY_ID(s), &p);
	}
	if (ah->actor_ref != NULL) {
		struct params p = { 0 }, pp = { 0 };
		unsigned char ids[PREFETCH_DEPTH][RI_NODE_ID_MAX];
		char list[256], sql[400];
		struct scope sc;
		p_text(&p, ah->actor_ref);
		snap_ahead(s, ACTOR_SQL, &p);
		if (s->core.key != NULL) {
			scope_make(&sc, SCOPE_ACT, "audit", ah->actor_ref);
			prefetch_sql(sc.key, &pp, ids, list, sizeof list, sql, sizeof sql);
			snap_ahead(s, sql, &pp);
		}
	}
	if (ah->lease_kind != NULL) {
		struct params p = { 0 };
		p_text(&p, ah->lease_kind);
		p_text(&p, ah->lease_act_key);
		snap_ahead(s, LEASE_SQL, &p);
	}
	if (ah->open_intents)
		snap_ahead(s, OPEN_ROWS_SQL, NULL);
}

static int
be_read_begin(void *bk, bool *began)
{
	return pg_read_begin(bk, began);
}

static void
be_read_end(void *bk, bool began)
{
	pg_read_end(bk, began);
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
jhead_now(void *bk, int shard, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN], ri_ms *now)
{
	return jhead_get_at(bk, shard, false, h, last_hash, now);
}

static int
be_write_head(void *bk, int shard, struct ri_jhead *jh, unsigned char lh[RI_HASH_LEN], ri_ms *now)
{
	return write_begin(bk, shard, jh, lh, now);
}

static int
be_head_also(void *bk, int shard, struct ri_jhead *jh, unsigned char lh[RI_HASH_LEN])
{
	return jhead_also(bk, shard, jh, lh);
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
const struct ri_backend pg_backend = {
	.record_hash = record_hash,
	.shard_prev = shard_prev,
	.seq_next = seq_next,
	.shard_stamps = true,
	.scope_newest = scope_newest,
	.node_get = node_get,
	.node_put = node_put,
	.jhead_get = jhead_get_cb,
	.head_also = be_head_also,
	.path_hint = path_hint,
	.actor_read = actor_read,
	.lease_read = lease_read,
	.lease_write = lease_write,
	.lease_ahead = lease_ahead,
	.lease_free_if = lease_free_if,
	.fence_until = fence_until,
	.fence_armed = fence_armed,
	.read_begin = be_read_begin,
	.read_ahead = be_read_ahead,
	.read_end = be_read_end,
	.settle = be_settle,
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

const struct ri_store_ops pg_ops = {
	RI_ENG_STORE_OPS,
	.open_kinds = pg_open_kinds,
	.settle = pg_settle,
	.backup = pg_backup,
	.instance_id = pg_instance_id,
	.genesis = pg_genesis,
	.error = pg_error,
	.close = pg_close,
};

