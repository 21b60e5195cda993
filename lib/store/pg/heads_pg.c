/*
 * heads_pg.c -- the PostgreSQL backend's journal head and tree of scope
 * heads: a record's hash, the node map of a transaction and its prefetch,
 * a scope's newest row, the head row read and written (the design: store_pg.c).
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

/* ---- the journal head, the tree of scope heads, the witness ------------ */

/* Stored hash of the record at seq (store_engine.h record_hash). */
int
record_hash(void *bk, int64_t seq, unsigned char out[RI_HASH_LEN])
{
	struct pg *s = bk;
	struct params p = { 0 };
	PGresult *r;
	int rc;

	/* one its record reads named (snap_hashes), or the head's and the
	 * newest seal's, read with the read snapshot's head (jhead_fetch_tx):
	 * the same snapshot answers the same hash */
	if (snap_hash(s, seq, out))
		return RI_ST_OK;
	for (int i = 0; s->in_tx && s->snap && s->snap_heads_ok && seq > 0 && i < s->core.shards; i++)
		if (seq == s->snap_heads[i].h.last_seq && s->snap_heads[i].has_last) {
			memcpy(out, s->snap_heads[i].last_hash, RI_HASH_LEN);
			return RI_ST_OK;
		} else if (seq == s->snap_heads[i].h.sealed_seq && s->snap_heads[i].has_sealed) {
			memcpy(out, s->snap_heads[i].sealed_hash, RI_HASH_LEN);
			return RI_ST_OK;
		}
	if (s->in_tx && s->snap && s->snap_head_ok && s->snap_head.present && seq > 0) {
		const struct head_read *hr = &s->snap_head;
		if (seq == hr->h.last_seq && hr->has_last) {
			memcpy(out, hr->last_hash, RI_HASH_LEN);
			return RI_ST_OK;
		}
		if (seq == hr->h.sealed_seq && hr->has_sealed) {
			memcpy(out, hr->sealed_hash, RI_HASH_LEN);
			return RI_ST_OK;
		}
	}
	p_int(&p, seq);
	r = run(s, RECORD_HASH_SQL, &p);
	if (!res_ok(r))
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", r);
	else if (PQntuples(r) == 1 && g_bytes(r, 0, 0, out, RI_HASH_LEN))
		rc = RI_ST_OK;
	else
		rc = RI_ST_NOT_KNOWN;
	PQclear(r);
	return rc;
}

/* ---- the node map of a transaction -------------------------------------- */


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

/* The node ids of key's path in shard's tree (heads.c ri_node_id: a prefix
 * for shards above 0), depth 0 .. PREFETCH_DEPTH - 1, as binary parameters
 * from $first on: the SQL list "$first, ..., $last". */
static void
path_params(struct params *p, int shard, const unsigned char key[RI_SCOPE_LEN],
    unsigned char ids[PREFETCH_DEPTH][RI_NODE_ID_MAX], char *list, size_t n)
{
	size_t at = 0;

	list[0] = '\0';
	for (int d = 0; d < PREFETCH_DEPTH; d++) {
		size_t len = ri_node_id(shard, key, d, ids[d]);
		at += (size_t)snprintf(list + at, n - at, "%s$%d", d ? ", " : "", p->n + 1);
		p_bytes(p, ids[d], len);
	}
}

/* Record what a path fetch found: every id asked for is now known --
 * present with its body, or absent -- unless the map holds it already. */
static int
path_absorb(struct pg *s, const PGresult *r, int idcol, int shard, unsigned char ids[PREFETCH_DEPTH][RI_NODE_ID_MAX])
{
	bool seen[PREFETCH_DEPTH] = { false };
	unsigned char root[RI_NODE_ID_MAX];
	size_t pre = ri_node_id(shard, ids[0], 0, root);       /* the shard's prefix */

	for (int i = 0; i < PQntuples(r); i++) {
		unsigned char id[RI_NODE_ID_MAX], body[RI_NODE_MAX];
		size_t idlen = 0, len;
		struct pnode *e;

		if (g_null(r, i, idcol))
			continue;
		if (strcmp(PQgetvalue(r, i, idcol), "\\x") != 0 &&
		    !g_bytes_var(r, i, idcol, id, RI_NODE_ID_MAX, &idlen))
			continue;
		if (idlen < pre || idlen - pre >= PREFETCH_DEPTH)
			continue;
		size_t d = idlen - pre;
		if (!g_bytes_var(r, i, idcol + 1, body, RI_NODE_MAX, &len))
			return ri_st_fail(&s->core, RI_ST_INTEGRITY, 0, NULL,
			    "journal integrity: a node of the scope heads' tree is malformed");
		/* (rows of another path fetched in the same statement are
		 * kept too, but say nothing of this path's absent nodes) */
		if (memcmp(id, ids[d], idlen) == 0)
			seen[d] = true;
		if (nmap_find(s, id, idlen) != NULL || (e = nmap_slot(s, id, idlen)) == NULL)
			continue;
		memcpy(e->body, body, len);
		e->len = len;
		e->present = true;
	}
	for (int d = 0; d < PREFETCH_DEPTH; d++) {
		struct pnode *e;
		if (seen[d] || nmap_find(s, ids[d], pre + (size_t)d) != NULL ||
		    (e = nmap_slot(s, ids[d], pre + (size_t)d)) == NULL)
			continue;
		e->present = false;
		e->len = 0;
	}
	return RI_ST_OK;
}

/* the statement of prefetch (and of its read sent ahead) */
void
prefetch_sql(const unsigned char key[RI_SCOPE_LEN], struct params *p, unsigned char ids[PREFETCH_DEPTH][RI_NODE_ID_MAX],
    char *list, size_t listlen, char *sql, size_t n)
{
	path_params(p, RI_SHARD_INSTANCE, key, ids, list, listlen);
	snprintf(sql, n, "SELECT id, body FROM nodes WHERE id IN (%s)", list);
}

/* Fetch key's path in one statement (a lookup then costs no round trip). */
int
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
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", r);
	else
		rc = path_absorb(s, r, 0, RI_SHARD_INSTANCE, ids);
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
		if ((rc = defer_write(s, " nodes ", RI_ST_UNAVAILABLE, "write", sql, &p)) != RI_ST_OK)
			return rc;
		for (size_t i = 0; i < n; i++)
			batch[i]->dirty = false;
	}
}

/* The statement of scope_max (and of its read sent ahead): the scope's
 * newest row, with path's nodes when path is not NULL (then ids and list
 * hold its parameters); sql is its buffer. */
static const char *
scope_sql(int type, const char *a, const char *b, int shard, const unsigned char *path, struct params *p,
    unsigned char ids[PREFETCH_DEPTH][RI_NODE_ID_MAX], char *list, size_t listlen, char *sql, size_t n)
{
	const char *q = type == SCOPE_ALL ? "SELECT seq, hash FROM records ORDER BY seq DESC LIMIT 1" :
	    type == SCOPE_ACT ? "SELECT seq, hash FROM records WHERE kind = $1 AND act_key = $2"
	    " ORDER BY seq DESC LIMIT 1" :
	    "SELECT seq, hash FROM records WHERE invocation_id = $1 ORDER BY seq DESC LIMIT 1";

	if (type != SCOPE_ALL)
		p_text(p, a);
	if (type == SCOPE_ACT)
		p_text(p, b);
	if (path == NULL)
		return q;
	path_params(p, shard, path, ids, list, listlen);
	snprintf(sql, n, "SELECT seq, hash, NULL::bytea, NULL::bytea FROM (%s) r"
	    " UNION ALL SELECT NULL, NULL, id, body FROM nodes WHERE id IN (%s)", q, list);
	return sql;
}

/* The shard whose tree holds a scope's path, or -1 when it is not known
 * before its rows are read (an invocation's, with shards: its act's). */
static int
path_shard(const struct pg *s, int type, const char *a, const char *b)
{
	if (s->core.shards <= 1)
		return 0;
	return type == SCOPE_ACT ? ri_st_shard_of(&s->core, a, b != NULL ? b : "") : -1;
}

/*
 * An invocation's scope with shards: its act -- so its shard, so its path's
 * node ids -- is the newest row's, known to the server before us.  The
 * statement routes the path by the row's shard column, and brings the
 * row's act: the caller routes it itself (ri_st_shard_of) and keeps the
 * nodes only when the two agree (a row naming another shard fails its MAC
 * when read; its nodes are then fetched one by one, as ever).  Columns:
 * seq, hash, id, body (as scope_sql's), kind, act_key, shard.
 */
static const char *
scope_inv_sql(const char *inv, const unsigned char key[RI_SCOPE_LEN], struct params *p,
    unsigned char ids[PREFETCH_DEPTH][RI_NODE_ID_MAX], char *sql, size_t n)
{
	char list[256], vals[256];
	size_t at = 0;

	p_text(p, inv);
	path_params(p, 0, key, ids, list, sizeof list);
	for (int d = 0, first = 2; d < PREFETCH_DEPTH; d++)
		at += (size_t)snprintf(vals + at, sizeof vals - at, "%s($%d::bytea)", d ? ", " : "", first + d);
	snprintf(sql, n, "WITH r AS (SELECT seq, hash, kind, act_key, shard FROM records WHERE invocation_id = $1"
	    " ORDER BY seq DESC LIMIT 1)"
	    " SELECT seq, hash, NULL::bytea, NULL::bytea, kind, act_key, shard FROM r"
	    " UNION ALL SELECT NULL, NULL, n.id, n.body, NULL, NULL, NULL FROM nodes n WHERE n.id IN"
	    " (SELECT CASE WHEN r.shard = 0 THEN v.x ELSE '\\xff'::bytea || set_byte('\\x00'::bytea, 0, r.shard) || v.x END"
	    " FROM r, (VALUES %s) v(x) WHERE r.shard BETWEEN 0 AND 255)", vals);
	return sql;
}

/* scope_inv_sql's row: kept for leaf_row (the same snapshot answers the
 * same row), and the shard its act routes to -- or -1 when the row names
 * another (its nodes are not this path's) */
static int
inv_row_keep(struct pg *s, const PGresult *r, int i, const char *inv)
{
	const char *kind = PQgetvalue(r, i, 4), *act_key = PQgetvalue(r, i, 5);
	int shard = ri_st_shard_of(&s->core, kind, act_key);

	if (s->in_tx && s->snap && g_bytes(r, i, 1, s->leaf.hash, RI_HASH_LEN)) {
		leaf_clear(s);
		s->leaf.seq = g_int(r, i, 0);
		s->leaf.kind = ri_strdup(kind);
		s->leaf.act_key = ri_strdup(act_key);
		s->leaf.inv = ri_strdup(inv);
	}
	return g_int(r, i, 6) == shard ? shard : -1;
}

/* A scope's newest row with its path, read ahead in the command's read
 * snapshot (store_engine.h read_ahead), as scope_max will ask for it. */
void
scope_ahead(struct pg *s, const struct scope *sc, const char *a, const char *b)
{
	struct params p = { 0 };
	unsigned char ids[PREFETCH_DEPTH][RI_NODE_ID_MAX];
	char list[256], sql[1200];
	const char *stmt;

	if (sc->type == SCOPE_ALL || s->core.key == NULL || !s->in_tx || !s->snap)
		return;
	int shard = path_shard(s, sc->type, a, b);
	stmt = shard < 0 ? scope_inv_sql(a, sc->key, &p, ids, sql, sizeof sql) :
	    scope_sql(sc->type, a, b, shard, sc->key, &p, ids, list, sizeof list, sql, sizeof sql);
	snap_ahead(s, stmt, &p);
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
	char list[256], sql[1200];
	const char *q;
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
	int shard = path_shard(s, type, a, b);
	if (path == NULL || s->core.key == NULL || !s->in_tx)
		path = NULL;
	bool routed = path != NULL && shard < 0;
	/* (the parameters point into ids: it outlives the statement) */
	unsigned char raw[PREFETCH_DEPTH][RI_NODE_ID_MAX];
	q = routed ? scope_inv_sql(a, path, &p, raw, sql, sizeof sql) :
	    scope_sql(type, a, b, shard, path, &p, ids, list, sizeof list, sql, sizeof sql);
	r = run(s, q, &p);
	if (!res_ok(r)) {
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", r);
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
		if (routed)
			shard = inv_row_keep(s, r, i, a);
	}
	if (routed && shard >= 0) {
		struct params ignored = { 0 };
		char list2[256];
		path_params(&ignored, shard, path, ids, list2, sizeof list2);
	}
	if (path != NULL && shard >= 0)
		rc = path_absorb(s, r, 2, shard, ids);
	PQclear(r);
	return rc;
}

/* store_engine.h scope_newest: the hash comes in the same statement,
 * with the scope's path of the tree. */
int
scope_newest(void *bk, const struct scope *sc, const char *a, const char *b, int64_t *seq,
    unsigned char hash[RI_HASH_LEN], enum ri_hashed *hashed)
{
	bool has = false;
	int rc = scope_max(bk, sc->type, a, b, seq, hash, &has, sc->key);

	*hashed = has ? RI_HASH_READ : RI_HASH_NONE;
	return rc;
}

/* the statement of scopes_prefetch (and of its read sent ahead) */
void
scopes_sql(const struct pg *s, const unsigned char act[RI_SCOPE_LEN], const char *kind, const char *act_key,
    const unsigned char inv[RI_SCOPE_LEN], const char *invocation_id, struct params *p,
    unsigned char ida[PREFETCH_DEPTH][RI_NODE_ID_MAX], unsigned char idi[PREFETCH_DEPTH][RI_NODE_ID_MAX],
    char *sql, size_t n)
{
	char la[256], li[256];

	p_text(p, kind);
	p_text(p, act_key);
	p_text(p, invocation_id);
	/* an invocation's scope is in its act's shard's tree (docs/SHARDS.md) */
	int shard = path_shard(s, SCOPE_ACT, kind, act_key);
	path_params(p, shard, act, ida, la, sizeof la);
	path_params(p, shard, inv, idi, li, sizeof li);
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
int
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
	scopes_sql(s, act, kind, act_key, inv, invocation_id, &p, ida, idi, sql, sizeof sql);
	r = run(s, sql, &p);
	if (!res_ok(r)) {
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", r);
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
	int shard = path_shard(s, SCOPE_ACT, kind, act_key);
	if ((rc = path_absorb(s, r, 3, shard, ida)) == RI_ST_OK && (rc = path_absorb(s, r, 3, shard, idi)) == RI_ST_OK)
		s->pre[0].valid = s->pre[1].valid = true;
	PQclear(r);
	return rc;
}

/* The node store of the tree (heads.h). */
int
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
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "read", r);
	else if (PQntuples(r) == 0)
		rc = RI_ST_NOT_KNOWN;
	else if (!g_bytes_var(r, 0, 0, body, RI_NODE_MAX, len))
		rc = ri_st_fail(&s->core, RI_ST_INTEGRITY, 0, NULL, "journal integrity: a node of the scope heads' tree is malformed");
	else
		rc = RI_ST_OK;
	PQclear(r);
	return rc;
}

int
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
	return pg_exec1(s, " nodes ", RI_ST_UNAVAILABLE, "write", "INSERT INTO nodes(id, body) VALUES ($1, $2)"
	    " ON CONFLICT (id) DO UPDATE SET body = excluded.body", &p);
}

/* The head row and what judging it needs: the newest record's hash, the
 * anchor's ($1), the clock, the sealed record's hash -- the columns every
 * head statement below shares (head_row decodes them), ROWS saying whose
 * rows' newest seq is counted. */
#define HEAD_COLS(rows) "SELECT h.last_seq, h.root, h.open_count, h.open_acc, h.sealed_seq, h.grants," \
    " h.mac, (SELECT max(seq) FROM records" rows "), (SELECT hash FROM records WHERE seq = h.last_seq)," \
    " (SELECT hash FROM records WHERE seq = $1), ri_clock()," \
    " (SELECT recorded_at FROM records WHERE seq = h.last_seq)," \
    " (SELECT hash FROM records WHERE seq = h.sealed_seq)"
static const char head_sql[] = HEAD_COLS("") " FROM heads h WHERE h.shard = $2";
/* With more than one shard (docs/SHARDS.md): the rows' newest is the
 * shard's own chain's; the hash at the shard's own witness anchor ($3,
 * store_common.c ri_witness_shard_anchor) comes too; and a write's head
 * (the lock held by the statement before) allocates the seq its first
 * record will take: nextval in FROM, so before the projection's ri_clock()
 * -- the stamp after the seq (docs/SHARDS.md, one allocator; the mark's
 * 2 x settle wait rests on it). */
#define HEAD_SHARDS_COLS HEAD_COLS(" WHERE shard = $2") ", (SELECT hash FROM records WHERE seq = $3)"
static const char head_sql_shards[] = HEAD_SHARDS_COLS ", NULL FROM heads h WHERE h.shard = $2";
static const char head_sql_alloc[] = HEAD_SHARDS_COLS ", a.seq FROM heads h,"
    " (SELECT nextval('ri_seq') OFFSET 0) a(seq) WHERE h.shard = $2";
#define HEAD_SQL(s) ((s)->core.shards <= 1 ? head_sql : head_sql_shards)
#define HEAD_ANCHOR_COL 13
#define HEAD_SEQ_COL 14

/* One head row of the statements above (or of heads_all's, whose columns
 * are theirs), decoded -- judged by jhead_judged. */
static void
head_row(struct pg *s, const PGresult *r, int i, int shard, struct head_read *hr, ri_ms *last_at)
{
	hr->h.shard = shard;
	hr->present = true;
	hr->shaped = !g_null(r, i, 0) && g_bytes(r, i, 1, hr->h.root, RI_HASH_LEN) &&
	    !g_null(r, i, 2) && g_bytes(r, i, 3, hr->h.open_acc, RI_HASH_LEN) &&
	    !g_null(r, i, 4) && !g_null(r, i, 5) && g_bytes(r, i, 6, hr->mac, RI_HASH_LEN);
	hr->h.last_seq = g_int(r, i, 0);
	hr->h.open_count = g_int(r, i, 2);
	hr->h.sealed_seq = g_int(r, i, 4);
	hr->h.grants = g_int(r, i, 5);
	hr->rows = g_null(r, i, 7) ? 0 : g_int(r, i, 7);
	hr->has_last = g_bytes(r, i, 8, hr->last_hash, RI_HASH_LEN);
	hr->has_anchor = g_bytes(r, i, 9, hr->anchor_hash, RI_HASH_LEN);
	hr->now = g_int(r, i, 10);
	*last_at = g_null(r, i, 11) ? RI_NONE : g_int(r, i, 11);
	hr->has_sealed = g_bytes(r, i, 12, hr->sealed_hash, RI_HASH_LEN);
	if (s->core.shards > 1)
		hr->has_own = g_bytes(r, i, HEAD_ANCHOR_COL, hr->own_hash, RI_HASH_LEN);
	if (hr->h.last_seq == 0) {
		ri_core_shard_genesis(&s->core, shard, hr->last_hash);
		hr->has_last = true;
	}
}

/* Every shard's head in one statement.  The shard's own anchor is not in
 * it (the statement goes ahead before the anchors are known): it is almost
 * always the shard's newest record, whose hash is (record_hash). */
static const char heads_all_sql[] = HEAD_COLS(" WHERE shard = h.shard") ", NULL::bytea, NULL, h.shard"
    " FROM heads h ORDER BY h.shard";

/* Every shard's head, read in the read snapshot in one statement and kept
 * for it: a read across shards -- the journal's newest, an absence proved
 * in every shard's tree -- costs one round trip, not S.  NOT_KNOWN: a
 * shard has no row (each is then read alone, and judged missing). */
static int
heads_all(struct pg *s, int64_t anchor)
{
	struct params p = { 0 };
	PGresult *r;
	int rc = RI_ST_OK;

	if (s->snap_heads_ok && s->snap_anchor == anchor)
		return RI_ST_OK;
	p_int(&p, anchor);
	r = run(s, heads_all_sql, &p);
	if (!res_ok(r)) {
		rc = pg_db_fail(s, RI_ST_UNAVAILABLE, "journal head", r);
		PQclear(r);
		return rc;
	}
	if (PQntuples(r) != s->core.shards) {
		PQclear(r);
		return RI_ST_NOT_KNOWN;
	}
	if (s->snap_heads == NULL) {
		s->snap_heads = ri_xcalloc((size_t)s->core.shards, sizeof *s->snap_heads);
		s->snap_heads_at = ri_xcalloc((size_t)s->core.shards, sizeof *s->snap_heads_at);
	}
	for (int i = 0; i < s->core.shards; i++) {
		if (g_int(r, i, HEAD_SEQ_COL + 1) != i) {
			PQclear(r);
			return RI_ST_NOT_KNOWN;
		}
		memset(&s->snap_heads[i], 0, sizeof s->snap_heads[i]);
		head_row(s, r, i, i, &s->snap_heads[i], &s->snap_heads_at[i]);
	}
	PQclear(r);
	if (!s->snap_now_ok) {
		s->snap_now = s->snap_heads[0].now;
		s->snap_now_ok = true;
	}
	s->snap_anchor = anchor;
	s->snap_heads_ok = true;
	return RI_ST_OK;
}

/* the head statement's parameters: the anchor seq, the shard, and with
 * shards the shard's own anchor */
static void
head_params(struct pg *s, int shard, int64_t anchor, struct params *p)
{
	p_int(p, anchor);
	p_int(p, shard);
	if (s->core.shards > 1)
		p_int(p, ri_witness_shard_anchor(&s->core, shard));
}

/* the connect's head read goes ahead in the read snapshot: with one shard
 * its head, with more every shard's (heads_all) */
void
jhead_ahead(struct pg *s, int64_t anchor)
{
	struct params p = { 0 };

	/* the journal's shard count is not read yet: the config's (its
	 * default on PostgreSQL when unsaid) is the guess -- a wrong one is
	 * a round trip more, never a wrong answer */
	int guess = s->core.cfg->shards > 0 ? s->core.cfg->shards : RI_PG_SHARDS_DEFAULT;
	if (guess > 1) {
		p_int(&p, anchor);
		snap_ahead(s, heads_all_sql, &p);
		return;
	}
	head_params(s, RI_SHARD_INSTANCE, anchor, &p);
	snap_ahead(s, HEAD_SQL(s), &p);
}

/*
 * begin: open the transaction in the same round trip (a write: READ
 * COMMITTED).  lock: take the head row's lock first -- the lock every
 * writer takes before any other (the lock order, top of store_pg.c) -- in a
 * statement of its own: under READ COMMITTED a statement that waited for
 * a row lock re-reads that row but keeps its snapshot for everything else,
 * so the head and the records it names must be read by the NEXT statement,
 * whose snapshot holds every transaction committed before the lock was
 * granted.  One pipeline, one round trip, with the reads sent ahead after
 * the head's; the anchor seq is a parameter (issue 42).
 */
static int
jhead_fetch_tx(struct pg *s, int shard, bool begin, bool lock, struct head_read *hr)
{
	struct qry now[BEGIN_MAX + 3];
	struct params clk = { 0 }, p = { 0 };
	PGresult *r;
	int n = 0, answered, rc = RI_ST_OK;

	memset(hr, 0, sizeof *hr);
	/* the read snapshot's head, read once in it (issue 43): the same
	 * snapshot answers the same row, and its clock is the snapshot's */
	bool once = !begin && !lock && s->in_tx && s->snap;
	int64_t anchor = s->core.anchored ? s->core.anchor_seq : 0;
	if (once && s->snap_head_ok && s->snap_anchor == anchor && s->snap_head.h.shard == shard) {
		*hr = s->snap_head;
		hr->now = snap_clock(s);
		s->last_at = s->snap_last_at;
		return RI_ST_OK;
	}
	/* with shards, every shard's head in one statement, once a snapshot */
	if (once && s->core.shards > 1 && (rc = heads_all(s, anchor)) != RI_ST_NOT_KNOWN) {
		if (rc != RI_ST_OK)
			return rc;
		*hr = s->snap_heads[shard];
		hr->now = snap_clock(s);
		s->last_at = s->snap_heads_at[shard];
		return RI_ST_OK;
	}
	if (begin)
		s->pre_seq = 0;
	if (begin && (rc = begin_stmts(s, true, false, now, &n, &clk)) != RI_ST_OK)
		return rc;
	/* the write's plan is its first head read's alone (a lease's write
	 * after it allocates none, a later head read locks as by default) */
	struct head_plan plan = { 0 };
	if (begin) {
		plan = s->plan;
		s->plan = (struct head_plan){ 0 };
	}
	struct params sp = { 0 };
	p_int(&sp, shard);
	/* shard 0's head (the registry's and the bindings') shared first: the
	 * lock order is ascending (docs/SHARDS.md), and while it is held no
	 * actor's registration or revocation and no audit.bound commits --
	 * so the credential and the bindings guard, judged before COMMIT, are
	 * exact (Check 8.1.6; issue 41 point 1) */
	if (lock && plan.guard0 && shard != RI_SHARD_INSTANCE && !RI_NC(RI_NC_BINDINGS_UNSHARED))
		now[n++] = (struct qry){ "SELECT 1 FROM heads WHERE shard = 0 FOR KEY SHARE", NULL };
	/* the head's own lock: exclusive among its shard's writers either way;
	 * FOR UPDATE -- which also waits out every FOR KEY SHARE above -- for
	 * a write that may change the registry or the bindings (and by
	 * default), FOR NO KEY UPDATE for an act's append, so an act of shard 0
	 * holds back no other shard's writer (PostgreSQL's row lock modes) */
	if (lock)
		now[n++] = (struct qry){ plan.light ? "SELECT 1 FROM heads WHERE shard = $1 FOR NO KEY UPDATE" :
		    "SELECT 1 FROM heads WHERE shard = $1 FOR UPDATE", &sp };
	head_params(s, shard, anchor, &p);
	/* a write's first head allocates its first record's seq (after the
	 * lock: within a shard, chain order is seq order) */
	bool alloc = lock && s->core.shards > 1 && plan.appends;
	const char *sql = alloc ? head_sql_alloc : HEAD_SQL(s);
	now[n++] = (struct qry){ sql, &p };
	if (begin)
		s->in_tx = true;        /* even should a later statement fail: rolled back */
	/* the reads queued ahead go with a write's round trip, never in the
	 * command's read snapshot (which would answer them from before the
	 * head's lock); the snapshot's own read may have gone ahead already
	 * (jhead_ahead), and is answered from there when its anchor is the
	 * one judged */
	/* (a plain read, in a write: perhaps sent ahead, jhead_ahead_write) */
	r = once || (!begin && !lock) ? run(s, sql, &p) : trip(s, now, n, !s->snap, &answered);
	if (!res_ok(r)) {
		rc = pg_db_fail(s, lock ? RI_ST_STEP2 : RI_ST_UNAVAILABLE, "journal head", r);
		PQclear(r);
		return rc;
	}
	hr->h.shard = shard;
	if (PQntuples(r) == 1) {
		/* in a write, the floor of its stamps (last_at, recorded_at_of) is
		 * the newest recorded_at of every head it read: its shard's, and
		 * shard 0's, whose registry its credential was judged against
		 * (Check 8.1.6 judges the actor at the record's recorded_at) */
		ri_ms at;
		head_row(s, r, 0, shard, hr, &at);
		if (begin || !s->in_tx || !s->tx_write || s->last_at == RI_NONE || at > s->last_at)
			s->last_at = at;
		if (alloc && !g_null(r, 0, HEAD_SEQ_COL)) {
			s->pre_seq = g_int(r, 0, HEAD_SEQ_COL);
			s->pre_seq_shard = shard;
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
	if (once && s->in_tx && s->snap) {
		if (s->snap_now_ok)
			hr->now = snap_clock(s);
		else
			s->snap_now = hr->now;
		s->snap_now_ok = true;
		s->snap_head = *hr;
		s->snap_anchor = anchor;
		s->snap_last_at = s->last_at;
		s->snap_head_ok = true;
	}
	return RI_ST_OK;
}

int
jhead_fetch(struct pg *s, int shard, bool lock, struct head_read *hr)
{
	return jhead_fetch_tx(s, shard, false, lock, hr);
}

/*
 * The verified journal head (see store_sqlite.c's jhead_get: the same
 * judgement).  now: the instance clock in the same round trip (may be
 * NULL).
 */
static int
jhead_judged(struct pg *s, int shard, bool begin, bool lock, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN],
    ri_ms *now)
{
	struct head_read hr;
	int rc;

	if ((rc = jhead_fetch_tx(s, shard, begin, lock, &hr)) != RI_ST_OK)
		return rc;
	if (now != NULL)
		*now = hr.now;
	if (s->core.key == NULL) {
		memset(h, 0, sizeof *h);
		h->shard = shard;
		h->last_seq = hr.rows;
		if ((rc = ri_eng_shard_hash_at(&s->core, shard, hr.rows, last_hash)) != RI_ST_OK)
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
	if ((rc = ri_witness_judge(&s->core, shard, h->last_seq, hr.has_anchor ? hr.anchor_hash : NULL)) != RI_ST_OK)
		return rc;
	/* and, with shards, the shard's own newest line's: in the same round
	 * trip, unless the statement went ahead before the lines were read
	 * (the connect's), then read now */
	int64_t own = ri_witness_shard_anchor(&s->core, shard);
	if (own == 0)
		return RI_ST_OK;
	if (!hr.has_own && own <= h->last_seq) {
		if ((rc = record_hash(s, own, hr.own_hash)) == RI_ST_OK)
			hr.has_own = true;
		else if (rc != RI_ST_NOT_KNOWN)
			return rc;
	}
	return ri_witness_shard_judge(&s->core, shard, h->last_seq, hr.has_own && own <= h->last_seq ? hr.own_hash : NULL);
}

/* A write of a shard other than 0 reads shard 0's head unlocked (the
 * registry's: store_engine.c ri_eng_actor_get): sent ahead with the write's
 * first round trip, after its locks, as jhead_fetch_tx will ask for it. */
void
jhead_ahead_write(struct pg *s, int shard)
{
	struct params p = { 0 };

	head_params(s, shard, s->core.anchored ? s->core.anchor_seq : 0, &p);
	ahead_queue(s, " heads ", HEAD_SQL(s), &p);
}

/* lock: a write's first round trip, which opens its transaction */
int
jhead_get_at(struct pg *s, int shard, bool lock, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN],
    ri_ms *now)
{
	return jhead_judged(s, shard, lock, lock, h, last_hash, now);
}

/* Another shard's head, locked and judged inside the write transaction
 * open (a cut across shards: ascending, docs/SHARDS.md lock order). */
int
jhead_also(struct pg *s, int shard, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN])
{
	return jhead_judged(s, shard, false, true, h, last_hash, NULL);
}

int
jhead_get(struct pg *s, int shard, struct ri_jhead *h, unsigned char last_hash[RI_HASH_LEN])
{
	return jhead_get_at(s, shard, false, h, last_hash, NULL);
}

int
jhead_set(struct pg *s, const struct ri_jhead *h, const unsigned char last_hash[RI_HASH_LEN])
{
	struct params p = { 0 };
	unsigned char mac[RI_HASH_LEN];
	int rc;

	if ((rc = nodes_flush(s)) != RI_ST_OK)
		return rc;
	ri_jhead_mac(s->core.key, s->core.keylen, s->core.instance_id, s->core.shards, s->core.boundary, h, last_hash, mac);
	p_int(&p, h->last_seq);
	p_bytes(&p, h->root, RI_HASH_LEN);
	p_int(&p, h->open_count);
	p_bytes(&p, h->open_acc, RI_HASH_LEN);
	p_int(&p, h->sealed_seq);
	p_int(&p, h->grants);
	p_bytes(&p, mac, RI_HASH_LEN);
	p_int(&p, h->shard);
	/* deferred: the head row was read under FOR UPDATE in this
	 * transaction (write_begin), so it is there when this lands */
	return defer_write(s, " heads ", RI_ST_UNAVAILABLE, "write", "UPDATE heads SET last_seq = $1, root = $2,"
	    " open_count = $3, open_acc = $4, sealed_seq = $5, grants = $6, mac = $7 WHERE shard = $8", &p);
}

