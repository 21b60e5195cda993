/*
 * query_pg.c -- the PostgreSQL backend's statements: errors, parameters
 * and results, the deferred writes, the reads sent ahead, the trace, the
 * connection and its transactions (the design: store_pg.c).
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
void
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

void
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
PGresult *
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
				s->qcode = pg_db_fail(s, s->qi[i].code, s->qi[i].what, r);
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
int
defer_write(struct pg *s, int code, const char *what, const char *sql, const struct params *p)
{
	int answered = 0;

	if (s->qn == QMAX) {
		PQclear(q_send(s, false, &answered));
		if (s->qfailed)
			return s->qcode;
		if (answered < QMAX)
			return pg_db_fail(s, code, what, NULL);
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
PGresult *
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

bool
res_ok(const PGresult *r)
{
	ExecStatusType t = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;

	return t == PGRES_TUPLES_OK || t == PGRES_COMMAND_OK;
}

/* A statement whose result is not needed: OK or the failure code. */
int
pg_exec1(struct pg *s, int code, const char *what, const char *sql, const struct params *p)
{
	PGresult *r = run(s, sql, p);
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

/* The session's bounds (issue 13 item 4): no statement, lock wait or idle
 * transaction of ours outlives the per-write budget, so a writer cut off
 * mid-transaction leaves nothing locked past it, and a late COMMIT of a
 * session the server already ended cannot land. */
int
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
	rc = res_ok(r) ? RI_ST_OK : pg_db_fail(s, RI_ST_UNAVAILABLE, "session", r);
	PQclear(r);
	return rc;
}

/* A lost connection is re-made at the next operation (the read-back after
 * a lost reply needs one). */
int
connected(struct pg *s)
{
	if (PQstatus(s->conn) == CONNECTION_OK)
		return RI_ST_OK;
	s->in_tx = false;
	PQreset(s->conn);
	if (PQstatus(s->conn) != CONNECTION_OK)
		return pg_db_fail(s, RI_ST_UNAVAILABLE, "connect", NULL);
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
int
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

int
tx_begin(struct pg *s, bool write, bool long_read)
{
	char sql[256];
	PGresult *r;
	int rc;

	if ((rc = begin_sql(s, write, long_read, sql, sizeof sql)) != RI_ST_OK)
		return rc;
	s->round_trips++;
	r = PQexec(s->conn, sql);
	rc = res_ok(r) ? RI_ST_OK : pg_db_fail(s, RI_ST_UNAVAILABLE, "begin", r);
	PQclear(r);
	if (rc == RI_ST_OK)
		s->in_tx = true;
	return rc;
}

void
pg_rollback(struct pg *s)
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
	PGresult *r;
	int rc = RI_ST_OK;

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
			rc = pg_db_fail(s, RI_ST_LOST, "commit sent, no reply", NULL);
			s->in_tx = true;
			pg_rollback(s);
			return rc;
		}
		if (s->qfailed) {
			/* a write the server refused: it ran nothing after it, so
			 * COMMIT never ran -- nothing landed (a stale bindings
			 * decision says so, for the writer to read them again) */
			rc = ri_st_recode(&s->core, s->qcode == RI_ST_STALE_BINDINGS ? s->qcode : RI_ST_STEP2);
			s->in_tx = true;
			pg_rollback(s);
			return rc;
		}
		if (r == NULL && answered < queued) {
			/* no answer for the writes: COMMIT may or may not have run */
			rc = pg_db_fail(s, RI_ST_LOST, "commit sent, no reply", NULL);
			s->in_tx = true;
			pg_rollback(s);
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
			rc = pg_db_fail(s, RI_ST_FENCED, "commit", r);
		else if (state == NULL || PQstatus(s->conn) != CONNECTION_OK)
			rc = pg_db_fail(s, RI_ST_LOST, "commit sent, no reply", r);
		else
			rc = pg_db_fail(s, RI_ST_STEP3, "commit", r);
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
int
pg_read_begin(struct pg *s, bool *began)
{
	*began = false;
	if (s->in_tx)
		return RI_ST_OK;
	int rc = tx_begin(s, false, false);
	*began = rc == RI_ST_OK;
	return rc;
}

void
pg_read_end(struct pg *s, bool began)
{
	if (began)
		pg_rollback(s);            /* read only: nothing to keep */
}

/* The instance's clock inside the open transaction (ri_clock()). */
int
clock_now(struct pg *s, ri_ms *now)
{
	PGresult *r = run(s, "SELECT ri_clock()", NULL);
	int rc = RI_ST_OK;

	*now = 0;               /* defined on every path, the failures' too */
	if (!res_ok(r) || PQntuples(r) != 1)
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "clock", r);
	else
		*now = g_int(r, 0, 0);
	PQclear(r);
	return rc;
}

