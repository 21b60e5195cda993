/* store_sqlite.h -- the SQLite backend of store.h: journal, actors, leases
 * and marks in one file, so an append can check the writer's lease inside
 * its own transaction (the journal fence). */
#ifndef RI_STORE_SQLITE_H
#define RI_STORE_SQLITE_H

#include "util/config.h"
#include "store/store.h"

/* Once per process, before any SQLite file is opened (ri_instance_open):
 * a command is one thread, so SQLite runs without its mutexes and its
 * memory statistics (~0.4 M instructions a command, issue 15) and takes
 * its blocks from size classes (mem.h); threaded (ri-audit's second
 * thread, each thread its own connection) keeps the mutexes SQLite needs
 * for that, and malloc. */
void ri_sqlite_process_init(bool threaded);

/* key may be NULL only with RI_NO_KEY (chain-only verification). */
int ri_sqlite_open(const struct ri_config *c, const unsigned char *key, size_t keylen,
    unsigned flags, struct ri_store **out, ri_err *err);
/* Create a new journal at c->journal; refuses an existing file. */
int ri_sqlite_create(const struct ri_config *c, const unsigned char *key, size_t keylen,
    char instance_hex[2 * 16 + 1], ri_err *err);

/* A journal file and its sidecars (-wal, -shm) removed: a migration's
 * copy that failed leaves nothing behind. */
void ri_sqlite_unlink(const char *path);
/* The old journal's WAL holds nothing (a migration's copy checkpointed
 * it): its sidecars removed, so none stands beside the file renamed into
 * its place.  False, errno 0, when a writer came back. */
bool ri_sqlite_sidecars_drop(const char *journal);
/* Every commit in path's WAL folded into the file and its sidecars gone,
 * so the file alone is the journal (before it is renamed). */
int ri_sqlite_fold_wal(const char *path, ri_err *err);
/* ri-init --migrate, the SQLite half (docs/SHARDS.md): the format-3
 * journal at c->journal, its head verified under format 3's MAC, copied
 * byte for byte into a new format-4 file at dest (one shard; its records
 * at or below *boundary, the old last seq, keep format 3's hashes).  The
 * old file is not changed.  A path with ', ? or # is refused (78) before
 * anything is made: it would be read as part of the URI the old file is
 * attached by. */
int ri_sqlite_migrate_copy(const struct ri_config *c, const unsigned char *key, size_t keylen, const char *dest,
    int64_t *boundary, ri_err *err);
/* The old journal, its copy judged, made to refuse every write before it
 * is kept as <journal>.format3: triggers on each of its tables abort an
 * INSERT, UPDATE or DELETE ("journal migrated to format 4"), committed
 * under its write lock once nothing has landed since the copy (its rows
 * still end at boundary, its WAL still empty), then folded into the file.
 * Its rows stay as they were.  ri_sqlite_migrate_unfence takes the
 * triggers away again when the renames fail (best effort). */
int ri_sqlite_migrate_fence(const char *journal, int64_t boundary, ri_err *err);
void ri_sqlite_migrate_unfence(const char *journal);

#endif
