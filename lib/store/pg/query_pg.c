/*
 * query_pg.c -- the PostgreSQL backend's statements: errors, parameters
 * and results, the deferred writes, the reads sent ahead, the trace, the
 * connection and its transactions (the design: store_pg.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* ---- errors ---------------------------------------------------------- */

/* The server's (or libpq's) message for a failed statement, one line. */
int
pg_db_fail(struct pg *s, int code, const char *what, const PGresult *res)
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
	/* a seq another record holds: with shards the allocator hands out
	 * every seq, so ri_seq was put back (a partial restore, setval) -- the
	 * engine refuses one not above the shard's own head, the records' key
	 * one of another shard's (docs/SHARDS.md, one allocator) */
	const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *key = res != NULL ? PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME) : NULL;
	if (state != NULL && strcmp(state, "23505") == 0 && key != NULL && strcmp(key, "records_pkey") == 0)
		return ri_st_fail(&s->core, code, 0, NULL, "journal (postgresql): %s: %s -- another record's seq:"
		    " the allocator was put back (restore ri_seq above every record)", what, line);
	return ri_st_fail(&s->core, code, 0, NULL, "journal (postgresql): %s: %s", what, line);
}


const struct ri_store_error *
pg_error(struct ri_store *st)
{
	return &((struct pg *)st)->core.err;
}

/* ---- parameters and results -------------------------------------------- */


void
p_text(struct params *p, const char *v)
{
	p->v[p->n] = v;
	p->len[p->n] = 0;
	p->fmt[p->n] = 0;
	p->n++;
}

void
p_int(struct params *p, int64_t v)
{
	snprintf(p->buf[p->n], sizeof p->buf[p->n], "%lld", (long long)v);
	p_text(p, p->buf[p->n]);
}

void
p_ms(struct params *p, ri_ms v)
{
	if (v == RI_NONE)
		p_text(p, NULL);
	else
		p_int(p, v);
}

/* bytea goes binary: no escaping, no ambiguity */
void
p_bytes(struct params *p, const unsigned char *b, size_t n)
{
	p->v[p->n] = (const char *)b;
	p->len[p->n] = (int)n;
	p->fmt[p->n] = 1;
	p->n++;
}

/* ---- statements kept, and the round trip ------------------------------------
 *
 * Every statement goes out with its parameters (PQsendQueryParams), in
 * libpq's pipeline mode (issue 42): a round trip is one pipeline -- the
 * statements, one Sync, then each statement's result in order -- entered
 * and left inside trip_all, so the connection is back in its ordinary mode
 * between round trips.  No value is ever printed into SQL.
 */

/* st := sql with p's values, copied (false: out of memory) */
static bool
stmt_keep(struct stmt *st, const char *sql, const struct params *p)
{
	size_t need = strlen(sql) + 1, at;
	int n = p ? p->n : 0;

	for (int i = 0; i < n; i++)
		if (p->v[i] != NULL)
			need += p->fmt[i] == 1 ? (size_t)p->len[i] : strlen(p->v[i]) + 1;
	if ((st->mem = malloc(need)) == NULL)
		return false;
	at = strlen(sql) + 1;
	memcpy(st->mem, sql, at);
	st->sql = st->mem;
	st->n = n;
	for (int i = 0; i < n; i++) {
		size_t len = p->v[i] == NULL ? 0 : p->fmt[i] == 1 ? (size_t)p->len[i] : strlen(p->v[i]) + 1;
		st->fmt[i] = p->fmt[i];
		st->len[i] = p->len[i];
		st->v[i] = p->v[i] == NULL ? NULL : st->mem + at;
		if (len > 0)
			memcpy(st->mem + at, p->v[i], len);
		at += len;
	}
	return true;
}

static void
stmt_free(struct stmt *st)
{
	free(st->mem);
	st->mem = NULL;
	st->sql = NULL;
	st->n = 0;
}

/* Is st the statement sql with p's values, byte for byte? */
static bool
stmt_same(const struct stmt *st, const char *sql, const struct params *p)
{
	int n = p ? p->n : 0;

	if (st->sql == NULL || st->n != n || strcmp(st->sql, sql) != 0)
		return false;
	for (int i = 0; i < n; i++) {
		if ((st->v[i] == NULL) != (p->v[i] == NULL) || st->fmt[i] != p->fmt[i])
			return false;
		if (st->v[i] == NULL)
			continue;
		if (st->fmt[i] == 1 ? st->len[i] != p->len[i] || memcmp(st->v[i], p->v[i], (size_t)p->len[i]) != 0 :
		    strcmp(st->v[i], p->v[i]) != 0)
			return false;
	}
	return true;
}

static void ahead_drop_snap(struct pg *s);
static bool ahead_waits(const struct pg *s, const char *sql, const struct params *p);

static void
q_clear(struct pg *s)
{
	for (int i = 0; i < s->qn; i++)
		stmt_free(&s->q[i]);
	s->qn = 0;
	s->q_clock = -1;
}

/* The read snapshot's state dropped: its flags, its clock, its head and
 * the answers it kept (its transaction has ended, or a new one begins). */
static void
snap_forget(struct pg *s)
{
	s->snap = s->snap_long = s->snap_now_ok = s->snap_head_ok = s->snap_heads_ok = s->snap_broken = false;
	for (int i = 0; i < s->nkept; i++) {
		stmt_free(&s->kept[i].st);
		PQclear(s->kept[i].r);
	}
	s->nkept = 0;
	s->nhashes = 0;
	s->nlinks = 0;
	leaf_clear(s);
	ahead_drop_snap(s);
}

/* The hash at seq, from a row's column, kept once (room allowing). */
static void
hash_keep(struct pg *s, int64_t seq, const PGresult *r, int row, int col)
{
	if (s->nhashes == SNAP_HASHES || seq < 1)
		return;
	for (int i = 0; i < s->nhashes; i++)
		if (s->hashes[i].seq == seq)
			return;
	if (g_bytes(r, row, col, s->hashes[s->nhashes].hash, RI_HASH_LEN))
		s->hashes[s->nhashes++].seq = seq;
}

/* With shards, the link of the row at seq (REC_LINK): none read is the
 * row's shard's genesis -- no record of the shard before it (as
 * ri_eng_link_hash) -- and a row naming no shard of the journal keeps none */
static void
link_keep(struct pg *s, int64_t seq, const PGresult *r, int row)
{
	int64_t shard = g_int(r, row, REC_SHARD_COL);

	if (s->nlinks == SNAP_HASHES || seq < 1 || shard < 0 || shard >= s->core.shards)
		return;
	for (int i = 0; i < s->nlinks; i++)
		if (s->links[i].seq == seq)
			return;
	if (g_null(r, row, REC_PREV_COL))
		ri_core_shard_genesis(&s->core, (int)shard, s->links[s->nlinks].hash);
	else if (!g_bytes(r, row, REC_PREV_COL, s->links[s->nlinks].hash, RI_HASH_LEN))
		return;
	s->links[s->nlinks++].seq = seq;
}

/* Rows of REC_COLS read in the read snapshot: the hash each names at its
 * own seq, and at the seq before it (REC_PREV, when asked), kept for
 * record_hash -- in one REPEATABLE READ snapshot the hash at a seq reads
 * the same however it is asked (issue 43: verifying a row reads the hash
 * before it, a round trip each before this). */
void
snap_hashes(struct pg *s, const PGresult *r, bool prev)
{
	if (!s->in_tx || !s->snap || PQresultStatus(r) != PGRES_TUPLES_OK)
		return;
	for (int i = 0; i < PQntuples(r); i++) {
		int64_t seq = g_int(r, i, 0);
		hash_keep(s, seq, r, i, REC_HASH_COL);
		if (prev && s->core.shards <= 1)
			hash_keep(s, seq - 1, r, i, REC_PREV_COL);
		else if (prev)
			link_keep(s, seq, r, i);
	}
}

void
leaf_clear(struct pg *s)
{
	free(s->leaf.kind);
	free(s->leaf.act_key);
	free(s->leaf.inv);
	memset(&s->leaf, 0, sizeof s->leaf);
}

/* seq's entry among the n the read snapshot kept, into out */
static bool
seqhash_find(const struct pg *s, const struct seqhash *v, int n, int64_t seq, unsigned char out[RI_HASH_LEN])
{
	if (!s->in_tx || !s->snap)
		return false;
	for (int i = 0; i < n; i++)
		if (v[i].seq == seq) {
			memcpy(out, v[i].hash, RI_HASH_LEN);
			return true;
		}
	return false;
}

bool
snap_link(const struct pg *s, int64_t seq, unsigned char out[RI_HASH_LEN])
{
	return seqhash_find(s, s->links, s->nlinks, seq, out);
}

bool
snap_hash(const struct pg *s, int64_t seq, unsigned char out[RI_HASH_LEN])
{
	return seqhash_find(s, s->hashes, s->nhashes, seq, out);
}

/* A read of the snapshot answered again from what it kept: a copy (the
 * caller clears it).  Only inside the read snapshot, where nothing of
 * ours writes and REPEATABLE READ answers the same read the same rows. */
static bool
snap_take(struct pg *s, const char *sql, const struct params *p, PGresult **r)
{
	if (!s->in_tx || !s->snap)
		return false;
	for (int i = 0; i < s->nkept; i++)
		if (stmt_same(&s->kept[i].st, sql, p))
			return (*r = PQcopyResult(s->kept[i].r, PG_COPYRES_TUPLES)) != NULL;
	return false;
}

/* Keep a read's answer in the snapshot: a success, of few rows, whose
 * statement reads no clock (ri_clock() is volatile: a later call may
 * answer later) and sets nothing. */
static void
snap_keep(struct pg *s, const char *sql, const struct params *p, const PGresult *r)
{
	struct snapkept *k;

	if (!s->in_tx || !s->snap || s->nkept == SNAP_KEPT || PQresultStatus(r) != PGRES_TUPLES_OK ||
	    PQntuples(r) > SNAP_KEPT_ROWS || strstr(sql, "ri_clock") != NULL || strstr(sql, "set_config") != NULL)
		return;
	k = &s->kept[s->nkept];
	if ((k->r = PQcopyResult(r, PG_COPYRES_TUPLES)) == NULL)
		return;
	if (!stmt_keep(&k->st, sql, p)) {
		PQclear(k->r);
		return;
	}
	s->nkept++;
}

/*
 * Read-ahead (issue 13: round trips per append).  A write that knows the
 * reads it will make queues them before it begins; its first round trip
 * (jhead_fetch_tx) carries them after the head's lock and read, in order,
 * each a statement of its own (READ COMMITTED: each sees every commit
 * before the head's lock was granted, as when sent one by one).  When the
 * code then runs the same statement with the same parameters (stmt_same),
 * run() answers from here -- once, and only while no write of the same
 * transaction has declared a table it reads (note_write; issue 42: the
 * writes say what they change, no SQL is parsed), so an answer never
 * predates a change it would see.  Every writer takes the head's lock
 * first, so no other transaction changes what was read.  What is not asked
 * for is dropped at the transaction's end.
 */
void
ahead_queue(struct pg *s, const char *tables, const char *sql, const struct params *p)
{
	struct ahead *a = &s->ahead[s->nahead];

	if (s->nahead == AHEAD_MAX || !stmt_keep(&a->st, sql, p))
		return;
	a->tables = tables;
	a->sent = a->snap = false;
	a->r = NULL;
	s->nahead++;
}

/* Is this statement, with these values, queued ahead (or kept) already? */
static bool
ahead_has(const struct pg *s, const char *sql, const struct params *p)
{
	for (int i = 0; i < s->nahead; i++)
		if (s->ahead[i].st.sql != NULL && stmt_same(&s->ahead[i].st, sql, p))
			return true;
	for (int i = 0; i < s->nkept; i++)
		if (stmt_same(&s->kept[i].st, sql, p))
			return true;
	return false;
}

/*
 * Reads of the command's read snapshot sent ahead (issue 43, the
 * round-trip diet): the engine names the reads a command is about to make
 * (store.h read_ahead), and each goes, as the very statement the read will
 * run, with the snapshot's next round trip -- after the statements of that
 * trip, in the same REPEATABLE READ snapshot, so its answer is the one the
 * read would get when it runs.  run() answers the read from it only when
 * its statement and values are the same byte for byte (stmt_same), and
 * every answer is verified by the read as ever; a guess that does not
 * match is never used, and costs nothing but its bytes.  They end with the
 * snapshot (snap_forget).
 */
void
snap_ahead(struct pg *s, const char *sql, const struct params *p)
{
	if (!s->in_tx || !s->snap || ahead_has(s, sql, p))
		return;
	ahead_queue(s, NULL, sql, p);
	if (s->nahead > 0 && stmt_same(&s->ahead[s->nahead - 1].st, sql, p))
		s->ahead[s->nahead - 1].snap = true;
}

static void
ahead_free(struct ahead *a)
{
	stmt_free(&a->st);
	PQclear(a->r);
	a->r = NULL;
}

/* The snapshot's reads ahead dropped (it ended); a write's stay. */
static void
ahead_drop_snap(struct pg *s)
{
	int k = 0;

	for (int i = 0; i < s->nahead; i++) {
		if (s->ahead[i].snap)
			ahead_free(&s->ahead[i]);
		else
			s->ahead[k++] = s->ahead[i];
	}
	s->nahead = k;
}

/* The next name of a list of tables (" a b "), as " name " (false: none left). */
static bool
table_next(const char **c, char name[40])
{
	size_t k = 0;

	while (**c == ' ')
		(*c)++;
	if (**c == '\0')
		return false;
	name[k++] = ' ';
	while (**c != '\0' && **c != ' ' && k < 38)
		name[k++] = *(*c)++;
	name[k++] = ' ';
	name[k] = '\0';
	return true;
}

/* A write of this transaction: the tables it declares it changes are
 * noted, so no read sent ahead of it answers for them afterwards. */
static void
note_write(struct pg *s, const char *tables)
{
	char name[40];

	for (const char *c = tables ? tables : ""; table_next(&c, name);) {
		size_t len = strlen(s->written), k = strlen(name);
		if (strstr(s->written, name) != NULL)
			continue;
		if (len + k < sizeof s->written)
			memcpy(s->written + (len ? len - 1 : 0), name, k + 1);
		else
			s->written_all = true;  /* cannot tell: no read answers from ahead any more */
	}
}

/* Is one of the tables (" a b ") written in this transaction? */
static bool
written_any(const struct pg *s, const char *tables)
{
	char name[40];

	for (const char *c = tables ? tables : ""; table_next(&c, name);)
		if (strstr(s->written, name) != NULL)
			return true;
	return false;
}

void
ahead_clear(struct pg *s)
{
	for (int i = 0; i < s->nahead; i++)
		ahead_free(&s->ahead[i]);
	s->nahead = 0;
	s->written[0] = '\0';
	s->written_all = false;
}

/* Is this statement a read of the snapshot queued ahead, not sent yet? */
static bool
ahead_waits(const struct pg *s, const char *sql, const struct params *p)
{
	if (!s->in_tx || !s->snap)
		return false;
	for (int i = 0; i < s->nahead; i++)
		if (s->ahead[i].snap && !s->ahead[i].sent && s->ahead[i].st.sql != NULL &&
		    stmt_same(&s->ahead[i].st, sql, p))
			return true;
	return false;
}

/* the answer sent ahead for this statement, or false */
static bool
ahead_take(struct pg *s, const char *sql, const struct params *p, PGresult **r)
{
	if (s->written_all)
		return false;
	for (int i = 0; i < s->nahead; i++) {
		struct ahead *a = &s->ahead[i];
		if (a->r == NULL || a->snap != (s->in_tx && s->snap) || !stmt_same(&a->st, sql, p) ||
		    written_any(s, a->tables))
			continue;
		*r = a->r;
		a->r = NULL;
		ahead_free(a);
		return true;
	}
	return false;
}

/*
 * RI_PG_TRACE=2: one line a round trip -- how many statements went, and the
 * head of each (up to 40 bytes of its SQL), so a reader sees every
 * statement that travelled; a value never shows (it is a parameter).
 */
static void
trace_head(int *nth, const char *sql)
{
	int len = 0;

	if ((*nth)++ > 0)
		fputs(" | ", stderr);
	while (*sql == ' ' || *sql == '\n')
		sql++;
	for (; *sql != '\0' && len < 40; sql++, len++)
		fputc(*sql == '\n' || *sql == '\t' ? ' ' : *sql, stderr);
}

static void
trace_trip(const struct pg *s, const struct qry *now, int n, struct ahead *const *ahead, int na)
{
	int nth = 0;

	fprintf(stderr, "ri: pg: [%d in one round trip] ", (s->rb_pending ? 1 : 0) + s->qn + n + na);
	if (s->rb_pending)
		trace_head(&nth, "ROLLBACK");
	for (int i = 0; i < s->qn; i++)
		trace_head(&nth, s->q[i].sql);
	for (int i = 0; i < n; i++)
		trace_head(&nth, now[i].sql);
	for (int i = 0; i < na; i++)
		trace_head(&nth, ahead[i]->st.sql);
	fputc('\n', stderr);
}

static bool
send_one(struct pg *s, const char *sql, int n, const char *const *v, const int *len, const int *fmt)
{
	return PQsendQueryParams(s->conn, sql, n, NULL, v, len, fmt, 0) == 1;
}

/* Result number i of the round trip: a deferred write's (a failure
 * charged to it: s->core.err, its code; s->qfailed), now's (res), or a
 * read's sent ahead (kept for run(); none when the server ran nothing). */
static void
deliver(struct pg *s, int i, PGresult *r, int n, PGresult **res, struct ahead **sent)
{
	ExecStatusType t = PQresultStatus(r);

	if (i < s->qn) {
		/* the read snapshot's clock, read with its first statement */
		if (i == s->q_clock && res_ok(r) && PQntuples(r) == 1 && s->snap) {
			s->snap_now = g_int(r, 0, 0);
			s->snap_now_ok = true;
		}
		if (!res_ok(r) && t != PGRES_PIPELINE_ABORTED && !s->qfailed) {
			s->qcode = pg_db_fail(s, s->qi[i].code, s->qi[i].what, r);
			s->qfailed = true;
		}
		PQclear(r);
	} else if (i < s->qn + n) {
		res[i - s->qn] = r;
	} else if (t != PGRES_PIPELINE_ABORTED && sent[i - s->qn - n] != NULL) {
		sent[i - s->qn - n]->r = r;
	} else {
		PQclear(r);
	}
}

/* Send the deferred writes, now's statements, then the reads ahead
 * (sent[0 .. na-1]), in that order, into the pipeline: how many went. */
static int
send_all(struct pg *s, const struct qry *now, int n, struct ahead **sent, int na)
{
	int queued = 0;

	/* a read-only transaction's ROLLBACK, before anything of the next */
	if (s->rb_pending) {
		s->rb_pending = false;
		if (!send_one(s, "ROLLBACK", 0, NULL, NULL, NULL))
			return -1;
	}

	for (int i = 0; i < s->qn && queued == i; i++)
		queued += send_one(s, s->q[i].sql, s->q[i].n, s->q[i].v, s->q[i].len, s->q[i].fmt);
	for (int i = 0; i < n && queued == s->qn + i; i++) {
		const struct params *p = now[i].p;
		queued += send_one(s, now[i].sql, p ? p->n : 0, p ? p->v : NULL, p ? p->len : NULL,
		    p ? p->fmt : NULL);
	}
	for (int i = 0; i < na && queued == s->qn + n + i; i++) {
		struct stmt *st = &sent[i]->st;
		sent[i]->sent = true;
		queued += send_one(s, st->sql, st->n, st->v, st->len, st->fmt);
	}
	return queued;
}

/* Read the results of the queued statements, in order, up to the Sync's:
 * how many the server answered (PGRES_PIPELINE_ABORTED: it ran nothing). */
static int
collect(struct pg *s, int skip, int queued, int n, PGresult **res, struct ahead **sent)
{
	int answered = 0, got = 0, nulls = 0;
	PGresult *r;

	for (;;) {
		if ((r = PQgetResult(s->conn)) == NULL) {
			/* the end of one statement's results; twice in a row,
			 * or the session gone: no more will come */
			if (++nulls > 1 || PQstatus(s->conn) != CONNECTION_OK)
				return answered;
			continue;
		}
		nulls = 0;
		if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
			PQclear(r);
			return answered;
		}
		if (skip > 0) {
			/* the ROLLBACK sent first: its answer read past */
			skip--;
			PQclear(r);
			continue;
		}
		/* a failed statement aborts the read snapshot's transaction:
		 * the next read begins another (pg_snapshot_aged) */
		if (s->snap && PQresultStatus(r) == PGRES_FATAL_ERROR)
			s->snap_broken = true;
		if (PQresultStatus(r) != PGRES_PIPELINE_ABORTED)
			answered++;
		if (got < queued)
			deliver(s, got, r, n, res, sent);
		else
			PQclear(r);
		got++;
	}
}

/*
 * One round trip: the deferred writes, then now's statements, then (ahead)
 * the reads queued ahead not sent yet -- one pipeline, one Sync, the
 * results read in order.  The server runs nothing after a statement that
 * failed (each later one answers PGRES_PIPELINE_ABORTED: no answer); a
 * write's failure is charged to it.  res[i] is now[i]'s result (NULL: no
 * answer came at all).  Returns how many statements the server answered.
 */
int
trip_all(struct pg *s, const struct qry *now, int n, bool ahead, PGresult **res)
{
	struct ahead *sent[AHEAD_MAX] = { NULL };
	int na = 0, queued, answered = 0, skip = s->rb_pending ? 1 : 0;

	for (int i = 0; i < n; i++)
		res[i] = NULL;
	/* a write's reads ahead when asked (its first round trip); the read
	 * snapshot's with any round trip of it */
	for (int i = 0; i < s->nahead; i++)
		if (!s->ahead[i].sent && s->ahead[i].st.sql != NULL &&
		    (s->ahead[i].snap ? s->in_tx && s->snap : ahead))
			sent[na++] = &s->ahead[i];
	s->round_trips++;
	if (s->trace > 1)
		trace_trip(s, now, n, sent, na);
	if (PQenterPipelineMode(s->conn) == 1) {
		/* what went is synced and answered, even when not all went */
		if ((queued = send_all(s, now, n, sent, na)) > 0 && PQpipelineSync(s->conn) == 1)
			answered = collect(s, skip, queued, n, res, sent);
		/* fails only with results left: the session is lost, and
		 * PQreset (connected) leaves pipeline mode with it */
		(void)PQexitPipelineMode(s->conn);
	}
	q_clear(s);
	if (s->in_tx)
		s->tx_sent = true;
	return answered;
}

/* Clear res[0 .. n-1] but one: the answer -- now[n - 1]'s, or the error
 * of a statement before it (the server ran nothing after it). */
static PGresult *
answer(PGresult **res, int n)
{
	PGresult *a = n > 0 ? res[n - 1] : NULL;
	int i = 0;

	while (i < n - 1 && (res[i] == NULL || res_ok(res[i]) || PQresultStatus(res[i]) == PGRES_PIPELINE_ABORTED))
		i++;
	if (i < n - 1 && !res_ok(a)) {
		PQclear(a);
		a = res[i];
		res[i] = NULL;
	}
	for (i = 0; i < n - 1; i++)
		PQclear(res[i]);
	return a;
}

PGresult *
trip(struct pg *s, const struct qry *now, int n, bool ahead, int *answered)
{
	PGresult *res[BEGIN_MAX + 3], *a;

	if (n > BEGIN_MAX + 3)
		return NULL;
	*answered = trip_all(s, now, n, ahead, res);
	a = answer(res, n);
	if (s->qfailed) {
		PQclear(a);
		return NULL;
	}
	return a;
}

/* A write whose answer nobody reads: queued (sent with the next statement
 * that answers, or with COMMIT); a full queue is sent first.  The queue
 * always goes first, so nothing is reordered and every read sees the
 * transaction's own writes (issue 13, round trips per append). */
int
defer_write(struct pg *s, const char *tables, int code, const char *what, const char *sql, const struct params *p)
{
	int answered = 0;

	if (s->qn == QMAX) {
		PQclear(trip(s, NULL, 0, false, &answered));
		if (s->qfailed)
			return s->qcode;
		if (answered < QMAX)
			return pg_db_fail(s, code, what, NULL);
	}
	if (!stmt_keep(&s->q[s->qn], sql, p))
		return ri_st_fail(&s->core, RI_ST_UNAVAILABLE, 0, NULL, "journal (postgresql): %s: out of memory", what);
	note_write(s, tables);
	s->qi[s->qn].code = code;
	s->qi[s->qn].what = what;
	s->qn++;
	return RI_ST_OK;
}

/* One statement, one round trip (with the deferred writes before it, when
 * any wait); results in text form.  NULL result only when libpq could not
 * even allocate one, a deferred write failed, or no answer came. */
PGresult *
run(struct pg *s, const char *sql, const struct params *p)
{
	struct qry one = { sql, p };
	int answered;
	PGresult *r;

	if (ahead_waits(s, sql, p)) {
		/* sent ahead, not yet gone: it goes now, with the others */
		PGresult *none[1];
		(void)trip_all(s, NULL, 0, false, none);
	}
	if (ahead_take(s, sql, p, &r)) {
		if (r != NULL)
			snap_keep(s, sql, p, r);
		return r;
	}
	if (snap_take(s, sql, p, &r))
		return r;
	r = trip(s, &one, 1, false, &answered);
	if (r != NULL)
		snap_keep(s, sql, p, r);
	return r;
}

PGresult *
run_write(struct pg *s, const char *tables, const char *sql, const struct params *p)
{
	note_write(s, tables);
	return run(s, sql, p);
}

bool
res_ok(const PGresult *r)
{
	ExecStatusType t = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;

	return t == PGRES_TUPLES_OK || t == PGRES_COMMAND_OK;
}

/* A statement whose result is not needed: OK or the failure code. */
int
pg_exec1(struct pg *s, const char *tables, int code, const char *what, const char *sql, const struct params *p)
{
	PGresult *r = run_write(s, tables, sql, p);
	int rc = res_ok(r) ? RI_ST_OK : pg_db_fail(s, code, what, r);

	PQclear(r);
	return rc;
}

bool
g_null(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col);
}

int64_t
g_int(const PGresult *r, int row, int col)
{
	return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

ri_ms
g_ms(const PGresult *r, int row, int col)
{
	return g_null(r, row, col) ? RI_NONE : g_int(r, row, col);
}

char *
g_dup(const PGresult *r, int row, int col)
{
	return g_null(r, row, col) ? NULL : ri_strdup(PQgetvalue(r, row, col));
}

/* A bytea column (text form "\x<hex>") of exactly n bytes, copied out. */
bool
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
bool
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

/* A lost connection is re-made at the next operation (the read-back after
 * a lost reply needs one). */
int
connected(struct pg *s)
{
	if (PQstatus(s->conn) == CONNECTION_OK)
		return RI_ST_OK;
	s->in_tx = false;
	s->rb_pending = false;          /* the server ended that transaction with the session */
	PQreset(s->conn);
	if (PQstatus(s->conn) != CONNECTION_OK)
		return pg_db_fail(s, RI_ST_UNAVAILABLE, "connect", NULL);
	return RI_ST_OK;
}

/*
 * The statements that open a transaction, appended to now[*n]: BEGIN and
 * the transaction's own bounds (issue 13 item 4; issue 43, no session
 * state survives a transaction: behind PgBouncer in transaction pooling
 * mode the next transaction may run on another server session, so every
 * setting is set_config(..., true), local to this transaction, in one
 * statement pipelined with BEGIN -- no round trip of its own).  No
 * statement, lock wait or idle wait of ours outlives bound (the per-write
 * budget; 0: none, a long read), the lock wait the budget, so a writer cut
 * off mid-transaction leaves nothing locked past it and a late COMMIT of
 * a session the server ended cannot land.  Under the env clock seam the
 * host's $RI_NOW is the transaction's ri_clock() (RI_NOW is read per
 * process).  Values are parameters, in clk (issue 42).  A read-only
 * opener's writes are READ ONLY too (what default_transaction_read_only
 * said for the session).  client_encoding travels in the startup packet
 * (pg_connect), which PgBouncer replays on whichever server session it
 * lends; standard_conforming_strings changes nothing ri sends (no value is
 * ever in the SQL) and is set here all the same.  A reconnect first when
 * needed.
 */
int
begin_bounded(struct pg *s, bool write, ri_ms bound, struct qry *now, int *n, struct params *clk)
{
	static const char set[] = "SELECT set_config('statement_timeout', $1, true),"
	    " set_config('idle_in_transaction_session_timeout', $3, true), set_config('lock_timeout', $2, true),"
	    " set_config('synchronous_commit', 'on', true), set_config('standard_conforming_strings', 'on', true)";
	static const char set_clock[] = "SELECT set_config('statement_timeout', $1, true),"
	    " set_config('idle_in_transaction_session_timeout', $3, true), set_config('lock_timeout', $2, true),"
	    " set_config('synchronous_commit', 'on', true), set_config('standard_conforming_strings', 'on', true),"
	    " set_config('ri.clock', $4, true)";
	/* negative control: the same settings session-level, outliving the
	 * transaction (pooler.bats' settings-leak test) */
	static const char set_session[] = "SELECT set_config('statement_timeout', $1, false),"
	    " set_config('idle_in_transaction_session_timeout', $3, false), set_config('lock_timeout', $2, false),"
	    " set_config('synchronous_commit', 'on', false), set_config('standard_conforming_strings', 'on', false)";
	static const char set_clock_session[] = "SELECT set_config('statement_timeout', $1, false),"
	    " set_config('idle_in_transaction_session_timeout', $3, false), set_config('lock_timeout', $2, false),"
	    " set_config('synchronous_commit', 'on', false), set_config('standard_conforming_strings', 'on', false),"
	    " set_config('ri.clock', $4, false)";
	ri_ms at;
	ri_err e;
	int rc;

	ri_tree_cache_clear(&s->nodes);
	s->nn = 0;
	s->pre[0].valid = s->pre[1].valid = false;
	/* a write ends the command's read snapshot first: the write reads
	 * under the head's lock, never through an older snapshot */
	if (write)
		pg_snapshot_end(s);
	if ((rc = connected(s)) != RI_ST_OK)
		return rc;
	s->tx_write = write;
	snap_forget(s);
	now[(*n)++] = (struct qry){ !write ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : s->readonly ?
	    "BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY" : "BEGIN ISOLATION LEVEL READ COMMITTED", NULL };
	p_int(clk, bound);
	p_int(clk, s->budget);
	/* the idle bound: a write's is its bound (nothing it locked outlives
	 * it); a read-only snapshot locks no row and changes nothing, and its
	 * ROLLBACK may wait for the command's next round trip (pg_rollback),
	 * however long the host waits before it -- so none */
	p_int(clk, write ? bound : 0);
	if (s->core.cfg->clock_env) {
		if (ri_now(s->core.cfg, &at, &e) != RI_OK)
			return ri_st_fail(&s->core, RI_ST_UNAVAILABLE, 0, NULL, "%s", e.msg);
		p_int(clk, at);
		s->snap_env = at;
	}
	if (RI_NC(RI_NC_SESSION_SETTINGS))
		now[(*n)++] = (struct qry){ s->core.cfg->clock_env ? set_clock_session : set_session, clk };
	else
		now[(*n)++] = (struct qry){ s->core.cfg->clock_env ? set_clock : set, clk };
	return RI_ST_OK;
}

int
begin_stmts(struct pg *s, bool write, bool long_read, struct qry *now, int *n, struct params *clk)
{
	return begin_bounded(s, write, long_read ? 0 : s->budget, now, n, clk);
}

/* The transaction's opening statements are queued (defer_write), so they
 * go in the round trip of its first statement; one that fails is charged
 * as the begin's (UNAVAILABLE: nothing ran), by whatever waited for it. */
int
tx_begin(struct pg *s, bool write, bool long_read)
{
	struct qry now[BEGIN_MAX];
	struct params clk = { 0 };
	int n = 0, rc;

	if ((rc = begin_stmts(s, write, long_read, now, &n, &clk)) != RI_ST_OK)
		return rc;
	for (int i = 0; i < n; i++)
		if ((rc = defer_write(s, NULL, RI_ST_UNAVAILABLE, "begin", now[i].sql, now[i].p)) != RI_ST_OK) {
			q_clear(s);
			return rc;
		}
	s->in_tx = true;
	s->tx_sent = false;
	return RI_ST_OK;
}

/*
 * RI_PG_TRACE: how long a writer held the journal head's row lock -- from
 * the head, locked and verified, to the answer of its COMMIT or ROLLBACK,
 * on the host's monotonic clock: the critical section every writer queues
 * for (issue 43's measured ceiling, bench/09-pg-ceiling.sh).  Short of the
 * server's own hold by the lock's answer on the way back, a fraction of
 * a round trip.
 */
static int64_t
mono_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

void
pg_trace_held(struct pg *s)
{
	if (s->trace > 0)
		s->held_us = mono_us();
}

static void
trace_released(struct pg *s, const char *how)
{
	if (s->held_us == 0)
		return;
	fprintf(stderr, "ri: pg: head held %.3f ms, %s\n", (double)(mono_us() - s->held_us) / 1000.0, how);
	s->held_us = 0;
}

void
pg_rollback(struct pg *s)
{
	/* the deferred writes are dropped, never sent before the ROLLBACK;
	 * a transaction whose BEGIN never went needs none; a read-only one's
	 * goes first in the next round trip (it held no lock, changed
	 * nothing: only its snapshot lingers, and its idle bound is none --
	 * begin_bounded), or never, when the session ends first */
	q_clear(s);
	if (s->in_tx && s->tx_sent && PQstatus(s->conn) == CONNECTION_OK) {
		if (!s->tx_write) {
			s->rb_pending = true;
		} else {
			struct qry one = { "ROLLBACK", NULL };
			PGresult *r;
			(void)trip_all(s, &one, 1, false, &r);
			PQclear(r);
		}
	}
	trace_released(s, "rolled back");
	s->in_tx = false;
	snap_forget(s);
	s->nn = 0;
	s->pre[0].valid = s->pre[1].valid = false;
	s->qfailed = false;
	ri_tree_cache_clear(&s->nodes);
	ri_st_witness_discard(&s->core);
	ahead_clear(s);
	free(s->fence);
	s->fence = NULL;
}

/* keep the failing call's error over the rollback's */
void
rollback_keep(struct pg *s)
{
	struct ri_store_error keep = s->core.err;

	pg_rollback(s);
	s->core.err = keep;
}

/*
 * COMMIT.  RI_ST_OK; RI_ST_FENCED when the server refused it at the
 * deferred fence check (journal fence 3); RI_ST_LOST when it was sent and
 * no answer came (the connection died: it may have landed); RI_ST_STEP3
 * when the server refused it otherwise.
 */
int
commit(struct pg *s)
{
	struct qry one = { "COMMIT", NULL };
	PGresult *r;
	int rc = RI_ST_OK, queued, answered;

	/* every node a write changed was sent with the head (nodes_flush);
	 * one left unsent would be a root the rows do not hold */
	for (size_t i = 0; i < s->nn; i++)
		if (s->nmap[i].dirty) {
			pg_rollback(s);
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
		pg_rollback(s);
		return rc;
	}
	/* the deferred writes and COMMIT, in one round trip */
	queued = s->qn;
	r = trip(s, &one, 1, false, &answered);
	s->in_tx = false;
	if (queued > 0 && s->qfailed && PQstatus(s->conn) != CONNECTION_OK) {
		/* the session died under the batch: whether COMMIT ran is
		 * for the read-back to say, never assumed */
		PQclear(r);
		s->qfailed = false;
		rc = pg_db_fail(s, RI_ST_LOST, "commit sent, no reply", NULL);
		s->in_tx = true;
		pg_rollback(s);
		return rc;
	}
	if (queued > 0 && s->qfailed) {
		/* a write the server refused: it ran nothing after it, so
		 * COMMIT never ran -- nothing landed (a stale bindings
		 * decision says so, for the writer to read them again) */
		rc = ri_st_recode(&s->core, s->qcode == RI_ST_STALE_BINDINGS ? s->qcode : RI_ST_STEP2);
		s->in_tx = true;
		pg_rollback(s);
		return rc;
	}
	if (queued > 0 && r == NULL && answered < queued) {
		/* no answer for the writes: COMMIT may or may not have run */
		rc = pg_db_fail(s, RI_ST_LOST, "commit sent, no reply", NULL);
		s->in_tx = true;
		pg_rollback(s);
		return rc;
	}
	if (!res_ok(r)) {
		const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
		if (state != NULL && strcmp(state, SQLSTATE_FENCE) == 0)
			rc = pg_db_fail(s, RI_ST_FENCED, "commit", r);
		else if (state == NULL || PQstatus(s->conn) != CONNECTION_OK)
			rc = pg_db_fail(s, RI_ST_LOST, "commit sent, no reply", r);
		else
			rc = pg_db_fail(s, RI_ST_STEP3, "commit", r);
	}
	PQclear(r);
	trace_released(s, rc == RI_ST_OK ? "committed" : "commit failed");
	/* after the commit, before the command answers: the witness advances
	 * with every append (issue 39); a commit whose fate is unknown is not
	 * witnessed (a witness behind the journal is harmless) */
	if (rc == RI_ST_OK)
		ri_st_witness_flush(&s->core);
	else
		ri_st_witness_discard(&s->core);
	return rc;
}

int
write_once(struct pg *s, int shard, const struct qry *now, int n, PGresult **res)
{
	struct qry all[BEGIN_MAX + 4];
	PGresult *r[BEGIN_MAX + 4], *bad = NULL;
	struct params clk = { 0 }, sp = { 0 };
	int k = 0, at, rc;

	for (int i = 0; i < n; i++)
		res[i] = NULL;
	if (n > 2)
		return ri_st_fail(&s->core, RI_ST_UNAVAILABLE, 0, NULL, "internal: write_once takes 2 statements");
	if ((rc = begin_stmts(s, true, false, all, &k, &clk)) != RI_ST_OK)
		return rc;
	/* the lock every writer takes first (the lock order, store_pg.c):
	 * its shard's head's, as jhead_fetch_tx takes it */
	p_int(&sp, shard);
	/* (a lease's row only: exclusive among the shard's writers, never
	 * waiting out the registry's readers, heads_pg.c jhead_fetch_tx) */
	all[k++] = (struct qry){ s->core.shards > 1 ? "SELECT 1 FROM heads WHERE shard = $1 FOR NO KEY UPDATE" :
	    "SELECT 1 FROM heads WHERE shard = $1 FOR UPDATE", &sp };
	at = k;
	for (int i = 0; i < n; i++)
		all[k++] = now[i];
	all[k++] = (struct qry){ "COMMIT", NULL };
	s->in_tx = true;
	pg_trace_held(s);
	(void)trip_all(s, all, k, false, r);
	for (int i = 0; i < k && bad == NULL; i++)
		if (r[i] == NULL || !res_ok(r[i]))
			bad = r[i] != NULL && PQresultStatus(r[i]) != PGRES_PIPELINE_ABORTED ? r[i] : r[k - 1];
	ahead_clear(s);
	if (bad == NULL && r[k - 1] != NULL) {
		s->in_tx = false;
		trace_released(s, "committed");
	} else {
		/* COMMIT went and no answer came: it may have landed */
		rc = pg_db_fail(s, r[k - 1] == NULL || PQstatus(s->conn) != CONNECTION_OK ? RI_ST_LOST :
		    RI_ST_UNAVAILABLE, "write", bad);
		rollback_keep(s);
	}
	for (int i = 0; i < k; i++) {
		if (i >= at && i < at + n)
			res[i - at] = r[i];
		else
			PQclear(r[i]);
	}
	return rc;
}

/*
 * One read snapshot per command (issue 43, the round-trip diet): a read
 * outside a transaction begins a REPEATABLE READ READ ONLY snapshot that
 * the reads after it share -- its BEGIN, its bounds and a read of the
 * instance clock ride with its first statement (tx_begin) -- and that
 * read_end leaves open.  It ends (pg_snapshot_end: its ROLLBACK rides with
 * the next round trip) when a write begins (begin_bounded), when the
 * caller waits for the journal to change (store.h settle: a lease wait,
 * a retry's nap, the bound's wait), when the store closes, and at the
 * first read once it is read_bound old on the host's monotonic clock.
 * So no snapshot hides a change the code waits for, and its rows are
 * never older than read_bound -- the age the protocol's bounds already
 * allow a read's answer (a read may take read_bound to come back).  Its
 * clock is read once, with its first statement, and moved on by the
 * host's monotonic time (snap_clock): a lease's remaining time is judged
 * on the present, never on the snapshot's first instant.
 * Every write judges again, under the head's lock, on the clock read in
 * its own first round trip (jhead_fetch_tx), so a decision a read made
 * on the snapshot's clock is never what a write rests on.
 */
/* Under the env clock seam the instance clock is the host's $RI_NOW, set
 * at BEGIN: a snapshot whose BEGIN set another reading is of another
 * instant, and ends. */
static bool
env_moved(const struct pg *s)
{
	ri_ms at;
	ri_err e;

	return s->core.cfg->clock_env && (ri_now(s->core.cfg, &at, &e) != RI_OK || at != s->snap_env);
}

void
pg_snapshot_aged(struct pg *s)
{
	if (s->in_tx && s->snap && (s->snap_broken || ri_mono_ms() - s->snap_mono > s->core.cfg->read_bound ||
	    env_moved(s)))
		pg_snapshot_end(s);
}

int
pg_read_begin(struct pg *s, bool *began)
{
	int rc;

	*began = false;
	pg_snapshot_aged(s);
	if (s->in_tx)
		return RI_ST_OK;
	if ((rc = tx_begin(s, false, false)) != RI_ST_OK)
		return rc;
	s->snap = true;
	s->snap_mono = ri_mono_ms();
	if (defer_write(s, NULL, RI_ST_UNAVAILABLE, "clock", "SELECT ri_clock()", NULL) == RI_ST_OK)
		s->q_clock = s->qn - 1;
	return RI_ST_OK;
}

void
pg_read_end(struct pg *s, bool began)
{
	if (began)
		pg_rollback(s);            /* read only: nothing to keep */
	else if (s->snap_broken)
		pg_snapshot_end(s);        /* aborted: no read after it runs in it */
}

/* Not pg_rollback: a write about to begin has queued its reads ahead
 * (ahead_queue), and they stay queued for its first round trip. */
void
pg_snapshot_end(struct pg *s)
{
	if (!s->in_tx) {
		snap_forget(s);         /* the session was lost with it: what it kept */
		return;
	}
	if (!s->snap)
		return;
	q_clear(s);             /* an unsent BEGIN, the clock's read: never sent */
	if (s->tx_sent && PQstatus(s->conn) == CONNECTION_OK)
		s->rb_pending = true;
	s->in_tx = false;
	s->qfailed = false;
	snap_forget(s);
	s->nn = 0;
	s->pre[0].valid = s->pre[1].valid = false;
	ri_tree_cache_clear(&s->nodes);
}

/* The read snapshot's clock: the instance clock read with its first
 * statement, moved on by the host's monotonic time since the snapshot
 * began (before that read, so never behind the server's clock).  A
 * snapshot lives up to read_bound: a lease's remaining time judged on the
 * clock it began with would overstate what is left (issue 43).  Under the
 * env clock seam the instant is the process's $RI_NOW, which stands still
 * (a snapshot ends when it moves). */
ri_ms
snap_clock(const struct pg *s)
{
	/* negative control: the clock of the snapshot's first statement,
	 * standing still (test_store's test_snapshot_clock on PostgreSQL) */
	if (s->core.cfg->clock_env || RI_NC(RI_NC_SNAPSHOT_CLOCK_STILL))
		return s->snap_now;
	return s->snap_now + (ri_ms)(ri_mono_ms() - s->snap_mono);
}

/* The instance's clock inside the open transaction (ri_clock()); inside
 * the read snapshot, the one read with its first statement, moved on
 * (snap_clock). */
int
clock_now(struct pg *s, ri_ms *now)
{
	PGresult *r;
	int rc = RI_ST_OK;

	*now = 0;               /* defined on every path, the failures' too */
	if (s->in_tx && s->snap && !s->snap_now_ok) {
		/* its clock's read is queued with its BEGIN: they go now, with
		 * the head row, which nearly every read judges next and the
		 * snapshot reads once (jhead_fetch) */
		struct head_read hr;
		int rc0 = jhead_fetch(s, RI_SHARD_INSTANCE, false, &hr);
		if (rc0 != RI_ST_OK)
			return rc0;
	}
	if (s->in_tx && s->snap && s->snap_now_ok) {
		*now = snap_clock(s);
		return RI_ST_OK;
	}
	r = run(s, "SELECT ri_clock()", NULL);
	if (!res_ok(r) || PQntuples(r) != 1)
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "clock", r);
	else
		*now = g_int(r, 0, 0);
	PQclear(r);
	if (rc == RI_ST_OK && s->in_tx && s->snap) {
		if (s->snap_now_ok)
			*now = snap_clock(s);
		else
			s->snap_now = *now;
		s->snap_now_ok = true;
	}
	return rc;
}
