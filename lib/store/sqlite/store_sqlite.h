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

#endif
