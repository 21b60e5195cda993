/* handle.h -- struct ri, what an open instance holds, and what every
 * protocol module asks of it: the store's answer as a code, a second
 * handle on the journal.  instance.h opens and closes one. */
#ifndef RI_HANDLE_H
#define RI_HANDLE_H

#include "store/store.h"
#include "util/config.h"

struct ri {
	struct ri_config *cfg;
	struct ri_store *st;            /* NULL with RI_CONFIG_ONLY */
	unsigned char *key;             /* the integrity key (sodium_malloc) */
	size_t keylen;
	unsigned flags;
	ri_err unopened;                /* why the journal could not be opened, if so */
	struct ri_bindings *bindings;   /* the journal's bindings history (bindings.h), loaded on use */
};

/* Another handle on the instance's journal, opened as ri_instance_attach
 * opened the first (its backend, key and flags): for a second thread,
 * which never shares a handle (ri-audit's state checks). */
int ri_instance_store(struct ri *r, struct ri_store **out, ri_err *err);

/* Map a store answer that is not one of the caller's arms to a code, with
 * the store's message: unavailable -> journal-unavailable, integrity -> 30. */
int ri_store_code(const struct ri *r, int st, ri_err *err);

#endif
