/*
 * findings_int.h -- what the findings register's two backends share
 * (sqlite/findings_sqlite.c: SQLite; pg/findings_pg.c: a table in the PostgreSQL journal's
 * database, issue 41 point 5): a row as typed values, its MAC, and the
 * keyless exception's shape.  Both MAC a row alike, column by column with
 * its SQLite storage type, so every reader judges a row the same way
 * whichever backend holds it.
 */
#ifndef RI_FINDINGS_INT_H
#define RI_FINDINGS_INT_H

#include "store/findings.h"
#include "store/heads.h"

/* One column of a row selected as RI_FINDINGS_COLS: type is SQLite's
 * (SQLITE_INTEGER, SQLITE_TEXT, SQLITE_BLOB, SQLITE_NULL). */
struct ri_fcol {
	int type;
	int64_t i;
	const unsigned char *s;
	size_t n;
};
#define RI_FINDINGS_NCOLS 14

#define RI_FINDINGS_COLS "id, finding, scope, kind, act_key, invocation_id, first_seen, first_seen_at," \
	" last_seen, last_seen_at, closed_at, run_id, detail"

/* The keyless exception's shape (findings.c, row_keyless), as SQL both
 * backends run. */
#define RI_FINDINGS_KEYLESS_SHAPE "mac IS NULL AND finding = 'start-refused' AND scope = 'instance'" \
	" AND run_id = 'start-gate' AND act_key IS NULL AND invocation_id IS NULL"

bool ri_findings_keyed(void);
void ri_findings_row_mac(const struct ri_fcol *c, unsigned char out[RI_HASH_LEN]);
bool ri_findings_row_verified(const struct ri_fcol *c);
bool ri_findings_row_keyless(const struct ri_fcol *c);
/* Is the keyless exception in force for a register holding `keyless`
 * such rows (-1: unknown)? */
bool ri_findings_excused(int64_t keyless);
/* A start refusal's detail with cause added (false: there already). */
bool ri_findings_cause_add(json_t **detail, const char *cause, json_t *entry);
/* Hand one row to ri_findings_each's callback; its return. */
int ri_findings_emit(const struct ri_fcol *c, bool excused,
    int (*each)(const struct ri_finding_row *, void *), void *arg);

/* A register: its own SQLite file (db), or the PostgreSQL journal's table
 * (pg; db NULL then). */
struct ri_findings {
	struct sqlite3 *db;
	char *path;
	int64_t keyless;                /* rows shaped as keyless refusals (-1: not counted yet) */
	struct ri_findings_pg *pg;      /* the PostgreSQL register (db NULL then) */
};

/* The SQLite register (sqlite/findings_sqlite.c): the public calls of
 * findings.h on a file's register.  ri_findings_sq_close closes the
 * database only; ri_findings_close frees the handle. */
int ri_findings_sq_create(const char *path, ri_err *err);
int ri_findings_sq_open(const char *path, bool readonly, struct ri_findings **out, ri_err *err);
void ri_findings_sq_close(struct ri_findings *f);
int ri_findings_sq_act(struct ri_findings *f, enum ri_finding what, const char *kind,
    const char *act_key, const char *invocation_id, const char *by, ri_ms now, json_t *detail, ri_err *err);
int ri_findings_sq_run_begin(struct ri_findings *f, const char *run_id, ri_ms now, ri_err *err);
int ri_findings_sq_instance(struct ri_findings *f, enum ri_finding what, const char *kind,
    const char *run_id, ri_ms now, json_t *detail, ri_err *err);
int ri_findings_sq_refusal(struct ri_findings *f, const char *kind, const char *cause,
    const char *by, ri_ms now, json_t *entry, ri_err *err);
int ri_findings_sq_close_unseen(struct ri_findings *f, const char *run_id, ri_ms now,
    const char *const *seen, size_t n_seen, ri_err *err);
int64_t ri_findings_sq_keyless(struct ri_findings *f);
int ri_findings_sq_each(struct ri_findings *f, bool open_only, const char *kind,
    int (*each)(const struct ri_finding_row *, void *), void *arg, ri_err *err);

struct ri_findings_pg;
/* The PostgreSQL register (findings_pg.c): the public calls, on a handle
 * ri_findings_open made for a postgresql:// location. */
int ri_findings_pg_open(const char *uri, bool readonly, struct ri_findings_pg **out, ri_err *err);
void ri_findings_pg_close(struct ri_findings_pg *p);
int ri_findings_pg_act(struct ri_findings_pg *p, enum ri_finding what, const char *kind,
    const char *act_key, const char *invocation_id, const char *by, ri_ms now, const char *detail, ri_err *err);
int ri_findings_pg_run_begin(struct ri_findings_pg *p, const char *run_id, ri_ms now, ri_err *err);
int ri_findings_pg_instance(struct ri_findings_pg *p, enum ri_finding what, const char *kind,
    const char *run_id, ri_ms now, const char *detail, ri_err *err);
int ri_findings_pg_refusal(struct ri_findings_pg *p, const char *kind, const char *cause,
    const char *by, ri_ms now, json_t *entry, ri_err *err);
int ri_findings_pg_close_unseen(struct ri_findings_pg *p, ri_ms now, const char *const *seen, size_t n_seen,
    ri_err *err);
int64_t ri_findings_pg_keyless(struct ri_findings_pg *p);
int ri_findings_pg_each(struct ri_findings_pg *p, bool open_only, const char *kind,
    int (*each)(const struct ri_finding_row *, void *), void *arg, ri_err *err);

#endif
