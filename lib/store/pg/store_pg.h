/* store_pg.h -- the PostgreSQL backend of store.h (docs/POSTGRESQL.md):
 * journal, actors, leases and marks in one database, so an append checks
 * the writer's lease inside its own transaction (the journal fence), and
 * several hosts share one instance. */
#ifndef RI_STORE_PG_H
#define RI_STORE_PG_H

#include "util/config.h"
#include "store/store.h"

/* key may be NULL only with RI_NO_KEY (chain-only verification). */
int ri_pg_open(const struct ri_config *c, const unsigned char *key, size_t keylen,
    unsigned flags, struct ri_store **out, ri_err *err);
/* Create the schema in the empty database c->journal names; refuses a
 * database that holds any table already. */
int ri_pg_create(const struct ri_config *c, const unsigned char *key, size_t keylen,
    char instance_hex[2 * 16 + 1], ri_err *err);
/* ri-init undoing itself (issue 40 point 11): drop, in one transaction,
 * every object ri_pg_create made in c->journal's schema -- only after it
 * made them, in a database that held no table before. */
int ri_pg_drop(const struct ri_config *c, ri_err *err);
/* ri-startcheck: the server, its version, and whether it makes a commit
 * durable (fsync and synchronous_commit both on).  *json: an object. */
int ri_pg_server_info(struct ri_store *st, json_t **json, bool *durable);

/* ri-init --migrate, PostgreSQL's half (docs/SHARDS.md): in one
 * transaction, every format-3 record verified (link, MAC, digest, seq
 * order) and the head under format 3's MAC, the tables kept as they were
 * in <schema>_format3 (named in kept), and the schema made format 4 in
 * place, history unchanged below *boundary. */
int ri_pg_migrate(const struct ri_config *c, const unsigned char *key, size_t keylen, int64_t *boundary,
    char kept[128], ri_err *err);

#endif
