/* handle.c -- what every protocol module asks of an open instance (handle.h). */
#include "protocol/handle.h"
#include "store/pg/store_pg.h"
#include "store/sqlite/store_sqlite.h"

/* Each backend's open, by the backend the journal's location names
 * (config.h, ri_journal_backend). */
typedef int store_open_fn(const struct ri_config *c, const unsigned char *key, size_t keylen,
    unsigned flags, struct ri_store **out, ri_err *err);
static store_open_fn *const store_open[RI_BACKEND_COUNT] = {
	[RI_BACKEND_SQLITE] = ri_sqlite_open,   /* a path: one host's SQLite file */
	[RI_BACKEND_PG] = ri_pg_open,           /* a postgresql:// journal, shared by several hosts */
};

int
ri_instance_store(struct ri *r, struct ri_store **out, ri_err *err)
{
	return store_open[ri_journal_backend(r->cfg->journal)](r->cfg, r->key, r->keylen, r->flags, out, err);
}

int
ri_store_code(const struct ri *r, int st, ri_err *err)
{
	const char *msg = r->st ? r->st->ops->error(r->st)->msg : "journal error";

	switch (st) {
	case RI_ST_OK:
		return RI_OK;
	case RI_ST_INTEGRITY:
		return ri_fail(err, RI_INTEGRITY, "%s", msg);
	case RI_ST_NOT_KNOWN:
		return ri_fail(err, RI_NOT_KNOWN, "%s", msg);
	case RI_ST_INVALID_QUERY:
		return ri_fail(err, RI_INTERNAL, "%s", msg);
	default:
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "%s", msg);
	}
}
