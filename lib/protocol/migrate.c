/*
 * migrate.c -- ri-init --migrate (INTERFACE, third wave: Shards;
 * docs/SHARDS.md, "Migration"): a journal of the previous format made
 * format 4 without rewriting its history, verified before and after,
 * the old file kept.
 *
 * The backend copies the old journal byte for byte into a new file,
 * having verified the old head under format 3's MAC.  The copy is then
 * opened as any journal is -- its schema checked, the witness's highest
 * line held by it (a rolled-back journal is not migrated into looking
 * fresh) -- and traversed whole: every record's link, MAC and digest,
 * format 3's encoding below the boundary.  Only then is audit.migrated
 * appended, the new head sealed, the old journal made to refuse every
 * write (a process still on it would otherwise write where the new
 * journal never reads), and the files renamed: the old journal to
 * <journal>.format3, the copy into its place.  A failure anywhere before
 * the renames leaves the old journal's rows as they were, writable, and
 * no copy.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "protocol/instance.h"
#include "protocol/migrate.h"
#include "protocol/proto.h"
#include "protocol/seal.h"
#include "store/pg/store_pg.h"
#include "store/sqlite/store_sqlite.h"
#include "util/integrity.h"
#include "util/mem.h"
#include "util/nc.h"

struct verified {
	int64_t records, problems;
	char first[256];
};

static int
count(const struct ri_record *rec, unsigned problems, void *arg)
{
	struct verified *v = arg;

	v->records++;
	if (problems != 0 && v->problems++ == 0)
		snprintf(v->first, sizeof v->first, "record seq %lld (%s)", (long long)rec->seq, rec->event_id);
	return 0;
}

/* The copy, opened in the journal's place and judged whole, then
 * audit.migrated and a seal on it. */
static int
judge_copy(ri *r, int64_t boundary, json_t **sealed, ri_err *err)
{
	struct verified v = { 0 };
	struct ri_appended ap;
	json_t *data;
	int rc, st;

	if ((rc = ri_instance_attach(r, RI_SCHEMA_FULL, err)) != RI_OK)
		return rc;
	if ((st = r->st->ops->traverse(r->st, count, &v)) != RI_ST_OK)
		return ri_store_code(r, st, err);
	/* negative control: the copy taken unjudged */
	if (v.problems > 0 && !RI_NC(RI_NC_MIGRATE_ROWS_UNCHECKED))
		return ri_fail(err, RI_INTEGRITY, "journal integrity: %lld of %lld records fail verification (first:"
		    " %s): the journal is not migrated", (long long)v.problems, (long long)v.records, v.first);
	data = json_pack("{s:i, s:i, s:I, s:I}", "from_format", 3, "format", RI_FORMAT, "boundary",
	    (json_int_t)boundary, "records", (json_int_t)v.records);
	st = r->st->ops->substrate(r->st, "audit.migrated", data, &ap);
	json_decref(data);
	if (st != RI_ST_OK)
		return ri_store_code(r, st, err);
	return ri_seal(r, sealed, err);
}

/* PostgreSQL: verified and converted in place in one transaction (the
 * format-3 tables kept in a schema beside), then judged whole as any
 * journal is, audit.migrated appended and the head sealed. */
static int
migrate_pg(ri *r, json_t **ans, ri_err *err)
{
	char kept[128];
	json_t *sealed = NULL;
	int64_t boundary = 0;
	int rc;

	if ((rc = ri_instance_key(r, err)) != RI_OK ||
	    (rc = ri_pg_migrate(r->cfg, r->key, r->keylen, &boundary, kept, err)) != RI_OK)
		return rc;
	if ((rc = judge_copy(r, boundary, &sealed, err)) != RI_OK) {
		char msg[sizeof err->msg];
		json_decref(sealed);
		snprintf(msg, sizeof msg, "%s", err->msg);
		return ri_fail(err, rc, "%s (the format-3 tables are kept in schema %s)", msg, kept);
	}
	*ans = json_pack("{s:s, s:i, s:i, s:I, s:s, s:o}", "migrated", "postgresql", "from_format", 3, "format",
	    RI_FORMAT, "boundary", (json_int_t)boundary, "kept", kept, "seal", sealed ? sealed : json_null());
	return RI_OK;
}

int
ri_migrate(ri *r, json_t **ans, ri_err *err)
{
	char *journal = r->cfg->journal, kept[4200], copy[4200];
	json_t *sealed = NULL;
	int64_t boundary = 0;
	int rc;

	*ans = NULL;
	if (ri_journal_backend(journal) == RI_BACKEND_PG)
		return migrate_pg(r, ans, err);
	if (snprintf(kept, sizeof kept, "%s.format3", journal) >= (int)sizeof kept ||
	    snprintf(copy, sizeof copy, "%s.migrating", journal) >= (int)sizeof copy)
		return ri_fail(err, RI_CONFIG, "journal %s: path too long", journal);
	if (access(kept, F_OK) == 0)
		return ri_fail(err, RI_USAGE, "%s exists: a migration kept it already; refusing to overwrite", kept);
	if ((rc = ri_instance_key(r, err)) != RI_OK)
		return rc;
	if ((rc = ri_sqlite_migrate_copy(r->cfg, r->key, r->keylen, copy, &boundary, err)) != RI_OK)
		return rc;
	/* the copy, judged where the journal will be judged: by its own path
	 * until the renames */
	r->cfg->journal = copy;
	rc = judge_copy(r, boundary, &sealed, err);
	if (r->st != NULL) {
		r->st->ops->close(r->st);
		r->st = NULL;
	}
	r->cfg->journal = journal;
	/* the copy's own WAL folded in: renamed, the file alone must be the
	 * journal (a WAL left behind would be its newest commits, lost) */
	if (rc == RI_OK)
		rc = ri_sqlite_fold_wal(copy, err);
	/* the old file takes no write from here on: a process still on it
	 * fails its next append (step-2) rather than land where the new
	 * journal never reads (issue 43 review) */
	if (rc == RI_OK)
		rc = ri_sqlite_migrate_fence(journal, boundary, err);
	if (rc != RI_OK) {
		json_decref(sealed);
		ri_sqlite_unlink(copy);
		return rc;
	}
	/* the old file kept, the copy in its place (same directory: rename is
	 * atomic on the filesystem).  The old WAL was folded in and emptied
	 * by the copy; its sidecars must not stand beside the new file */
	if (link(journal, kept) != 0) {
		int e = errno;
		json_decref(sealed);
		ri_sqlite_unlink(copy);
		ri_sqlite_migrate_unfence(journal);
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: cannot keep it as %s: %s (its records are"
		    " unchanged)", journal, kept, strerror(e));
	}
	if (!ri_sqlite_sidecars_drop(journal) || rename(copy, journal) != 0) {
		int e = errno;
		json_decref(sealed);
		unlink(kept);
		ri_sqlite_unlink(copy);
		ri_sqlite_migrate_unfence(journal);
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal %s: the migrated copy could not take its place: %s"
		    " (the old journal's records are unchanged; is an ri process still running on it?)", journal,
		    e != 0 ? strerror(e) : "its WAL holds commits again");
	}
	*ans = json_pack("{s:s, s:i, s:i, s:I, s:s, s:o}", "migrated", journal, "from_format", 3, "format",
	    RI_FORMAT, "boundary", (json_int_t)boundary, "kept", kept, "seal", sealed ? sealed : json_null());
	return RI_OK;
}
