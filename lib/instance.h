/* instance.h -- struct ri: what every command opens first. */
#ifndef RI_INSTANCE_H
#define RI_INSTANCE_H

#include "config.h"
#include "store.h"

struct ri {
	struct ri_config *cfg;
	struct ri_store *st;            /* NULL with RI_CONFIG_ONLY */
	unsigned char *key;             /* the integrity key (sodium_malloc) */
	size_t keylen;
	unsigned flags;
};

/* Map a store answer that is not one of the caller's arms to a code, with
 * the store's message: unavailable -> journal-unavailable, integrity -> 30. */
int ri_store_code(const struct ri *r, int st, ri_err *err);

#endif
