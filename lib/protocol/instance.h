/* instance.h -- struct ri: what every command opens first. */
#ifndef RI_INSTANCE_H
#define RI_INSTANCE_H

#include "util/config.h"
#include "store/store.h"

struct ri {
	struct ri_config *cfg;
	struct ri_store *st;            /* NULL with RI_CONFIG_ONLY */
	unsigned char *key;             /* the integrity key (sodium_malloc) */
	size_t keylen;
	unsigned flags;
	ri_err unopened;                /* why the journal could not be opened, if so */
	struct ri_bindings *bindings;   /* the journal's bindings history (bindings.h), loaded on use */
};

/* An instance, RI_CONFIG_ONLY, whose config is built from the bindings the
 * journal at `journal` records (bindings.h: ri-audit for an outside
 * auditor handed no config). */
int ri_instance_from_journal(const char *journal, const char *witness, const char *findings, unsigned flags,
    ri **out, ri_err *err);
/* Open the key and the journal of an instance opened RI_CONFIG_ONLY (after,
 * say, pointing cfg->journal at a copy an auditor was handed). */
int ri_instance_attach(struct ri *r, unsigned flags, ri_err *err);
/* Another handle on the instance's journal, opened as ri_instance_attach
 * opened the first (its backend, key and flags): for a second thread,
 * which never shares a handle (ri-audit's state checks). */
int ri_instance_store(struct ri *r, struct ri_store **out, ri_err *err);
/* Load the integrity key of an instance opened RI_CONFIG_ONLY (for the
 * findings register's MACs, when the journal itself cannot be opened). */
int ri_instance_key(struct ri *r, ri_err *err);

/* Map a store answer that is not one of the caller's arms to a code, with
 * the store's message: unavailable -> journal-unavailable, integrity -> 30. */
int ri_store_code(const struct ri *r, int st, ri_err *err);

#endif
