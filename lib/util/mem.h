/* mem.h -- the size classes over chunks, larger blocks from malloc:
 * SQLite's allocator in a single-threaded command, jansson's in every
 * command (mem.c says why). */
#ifndef RI_MEM_H
#define RI_MEM_H

#include <stdbool.h>

/* Before SQLite is initialised, and only with SQLITE_CONFIG_SINGLETHREAD
 * in force: true when installed; false under a sanitizer, with
 * RI_MALLOC=system, or once SQLite is initialised (it then keeps
 * malloc). */
bool ri_sqlite_mem_install(void);

/* jansson's allocator, before any JSON value exists (ri_cli_init, the
 * first statement of every command): true when installed (or already);
 * false under a sanitizer or with RI_MALLOC=system.  A string jansson
 * returns is then freed only through ri_json_dumps (util.h). */
bool ri_json_mem_install(void);

#endif
