/*
 * store_sqlite_vfs.c -- the journal's VFS: SQLite's unix VFS, less the
 * directory sync of an existing WAL at each writer's first commit
 * (store_sqlite_vfs.h says why; issue 15, target 5).
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "store_sqlite_vfs.h"

#define RI_VFS_NAME "ri-unix"

static sqlite3_vfs ri_vfs;
static sqlite3_vfs *base_vfs;
static pthread_once_t registered = PTHREAD_ONCE_INIT;

/*
 * A WAL is opened first without "create": if it exists, that open is
 * SQLite's own in every other respect, and SQLite marks no directory sync
 * on it.  Only if that open fails (no WAL: a fresh journal, or one whose
 * WAL a foreign client's last close removed) is it opened as SQLite asked,
 * creating it and syncing its directory at its first sync.  A failed
 * xOpen leaves no methods on the file, so the second open starts clean.
 */
static int
wal_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
	(void)vfs;
	if (name != NULL && (flags & SQLITE_OPEN_WAL) && (flags & SQLITE_OPEN_CREATE) &&
	    base_vfs->xOpen(base_vfs, name, f, flags & ~SQLITE_OPEN_CREATE, out) == SQLITE_OK)
		return SQLITE_OK;
	return base_vfs->xOpen(base_vfs, name, f, flags, out);
}

static void
register_vfs(void)
{
	if ((base_vfs = sqlite3_vfs_find(NULL)) == NULL)
		return;
	ri_vfs = *base_vfs;
	ri_vfs.zName = RI_VFS_NAME;
	ri_vfs.pNext = NULL;
	ri_vfs.xOpen = wal_open;
	if (sqlite3_vfs_register(&ri_vfs, 0) != SQLITE_OK)
		base_vfs = NULL;
}

const char *
ri_wal_vfs(void)
{
	(void)pthread_once(&registered, register_vfs);
	return base_vfs != NULL ? RI_VFS_NAME : NULL;
}

bool
ri_wal_is_open(sqlite3 *db)
{
	sqlite3_file *f = NULL;

	/* the pager answers its WAL's file when it has one, else its
	 * rollback journal's, which in WAL mode is never opened */
	return sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &f) == SQLITE_OK &&
	    f != NULL && f->pMethods != NULL;
}

void
ri_wal_dir_sync(sqlite3 *db)
{
	/* the main file's full name, symbolic links resolved: its WAL is
	 * the same name with -wal, in the same directory */
	const char *path = sqlite3_db_filename(db, "main");
	const char *slash;
	char dir[PATH_MAX];
	size_t n;
	int fd;

	if (path == NULL || (slash = strrchr(path, '/')) == NULL)
		return;
	n = slash == path ? 1 : (size_t)(slash - path);
	if (n >= sizeof dir)
		return;
	memcpy(dir, path, n);
	dir[n] = '\0';
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	(void)fsync(fd);
	close(fd);
}
