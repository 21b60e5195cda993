/*
 * witness_pg.h -- the witness as a PostgreSQL table (issue 39): one row a
 * line, shared by every host of a multi-host instance, in a database (or
 * schema) the journal's owner role cannot write (docs/POSTGRESQL.md).
 * witness.c judges every line; this file only stores and fetches them.
 */
#ifndef RI_WITNESS_PG_H
#define RI_WITNESS_PG_H

#include "util/util.h"

struct ri_witness_pg;

int ri_witness_pg_create(const char *uri, ri_err *err);
/* Undo ri_witness_pg_create: a failed ri-init leaves no witness table
 * (issue 40 point 11). */
int ri_witness_pg_drop(const char *uri, ri_err *err);
int ri_witness_pg_open(const char *uri, struct ri_witness_pg **out, ri_err *err);
void ri_witness_pg_close(struct ri_witness_pg *p);
/* The line with the highest seq (*text NULL: none), malloc'ed. */
int ri_witness_pg_newest(struct ri_witness_pg *p, char **text, ri_err *err);
int ri_witness_pg_add(struct ri_witness_pg *p, int64_t seq, const char *text, ri_err *err);
/* Every line in the order written (newest > 0: only that many, the newest
 * first); each() returns non-zero to stop. */
int ri_witness_pg_each(struct ri_witness_pg *p, int newest, int (*each)(const char *text, void *arg), void *arg,
    ri_err *err);

/*
 * ri-startcheck witness-independent: may the journal's role (the role the
 * journal URI connects as) write the witness?  RI_OK when it may not (not
 * the table's owner or a member of its owner's role, no INSERT, UPDATE,
 * DELETE or TRUNCATE on it, no superuser -- or no such role where the
 * witness lives); RI_CHECK_FAILED with why when it may; another code when
 * either could not be asked.
 */
int ri_witness_pg_independent(const char *witness_uri, const char *journal_uri, char *why, size_t n, ri_err *err);

#endif
