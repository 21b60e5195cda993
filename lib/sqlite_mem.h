/* sqlite_mem.h -- SQLite's allocator for a single-threaded command: size
 * classes over chunks, larger blocks from malloc (sqlite_mem.c says why). */
#ifndef RI_SQLITE_MEM_H
#define RI_SQLITE_MEM_H

#include <stdbool.h>

/* Before SQLite is initialised, and only with SQLITE_CONFIG_SINGLETHREAD
 * in force: true when installed; false under a sanitizer, with
 * RI_SQLITE_MALLOC=system, or once SQLite is initialised (it then keeps
 * malloc). */
bool ri_sqlite_mem_install(void);

#endif
