/* migrate.h -- ri-init --migrate (docs/SHARDS.md, "Migration"). */
#ifndef RI_MIGRATE_H
#define RI_MIGRATE_H

#include <jansson.h>

#include "protocol/handle.h"

/* The journal of an instance opened RI_CONFIG_ONLY, of format 3, made
 * format 4 in place: verified before and after, the old file kept as
 * <journal>.format3, audit.migrated appended and the head sealed.  *ans:
 * {migrated, from_format, format, boundary, kept, seal}. */
int ri_migrate(ri *r, json_t **ans, ri_err *err);

#endif
