/*
 * store_sqlite_vfs.c -- the journal's VFS: SQLite's unix VFS, less the
 * directory sync of an existing WAL at each writer's first commit
 * (store_sqlite_vfs.h says why; issue 15, target 5).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/sqlite/store_sqlite_vfs.h"

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

/* ---- ri-fd: one file, by descriptor (ri-backup's destination) ---- */

#define RI_FD_VFS_NAME "ri-fd"

struct fd_file {
	sqlite3_file base;
	int fd;
};

static sqlite3_vfs fd_vfs;
static sqlite3_vfs *fd_base;
static pthread_once_t fd_registered = PTHREAD_ONCE_INIT;

static int
fd_close(sqlite3_file *f)
{
	close(((struct fd_file *)f)->fd);
	return SQLITE_OK;
}

static int
fd_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
	int fd = ((struct fd_file *)f)->fd;
	size_t got = 0;

	while (got < (size_t)amt) {
		ssize_t r = pread(fd, (char *)buf + got, (size_t)amt - got, (off_t)off + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return SQLITE_IOERR_READ;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (got < (size_t)amt) {
		/* SQLite's contract: a short read zero-fills the rest */
		memset((char *)buf + got, 0, (size_t)amt - got);
		return SQLITE_IOERR_SHORT_READ;
	}
	return SQLITE_OK;
}

static int
fd_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
	int fd = ((struct fd_file *)f)->fd;
	size_t put = 0;

	while (put < (size_t)amt) {
		ssize_t w = pwrite(fd, (const char *)buf + put, (size_t)amt - put, (off_t)off + (off_t)put);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return SQLITE_IOERR_WRITE;
		put += (size_t)w;
	}
	return SQLITE_OK;
}

static int
fd_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	return ftruncate(((struct fd_file *)f)->fd, (off_t)size) == 0 ? SQLITE_OK : SQLITE_IOERR_TRUNCATE;
}

static int
fd_sync(sqlite3_file *f, int flags)
{
	(void)flags;
	return fsync(((struct fd_file *)f)->fd) == 0 ? SQLITE_OK : SQLITE_IOERR_FSYNC;
}

static int
fd_size(sqlite3_file *f, sqlite3_int64 *size)
{
	struct stat sb;

	if (fstat(((struct fd_file *)f)->fd, &sb) != 0)
		return SQLITE_IOERR_FSTAT;
	*size = (sqlite3_int64)sb.st_size;
	return SQLITE_OK;
}

/* the file is the connection's alone: no one else was handed it */
static int
fd_lock(sqlite3_file *f, int level)
{
	(void)f;
	(void)level;
	return SQLITE_OK;
}

static int
fd_reserved(sqlite3_file *f, int *out)
{
	(void)f;
	*out = 0;
	return SQLITE_OK;
}

static int
fd_control(sqlite3_file *f, int op, void *arg)
{
	(void)f;
	(void)op;
	(void)arg;
	return SQLITE_NOTFOUND;
}

static int
fd_sector(sqlite3_file *f)
{
	(void)f;
	return 4096;
}

static int
fd_device(sqlite3_file *f)
{
	(void)f;
	return 0;
}

static const sqlite3_io_methods fd_methods = {
	.iVersion = 1, .xClose = fd_close, .xRead = fd_read, .xWrite = fd_write, .xTruncate = fd_truncate,
	.xSync = fd_sync, .xFileSize = fd_size, .xLock = fd_lock, .xUnlock = fd_lock,
	.xCheckReservedLock = fd_reserved, .xFileControl = fd_control, .xSectorSize = fd_sector,
	.xDeviceCharacteristics = fd_device,
};

static int
fd_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
	struct fd_file *ff = (struct fd_file *)f;
	char *end;
	long n;

	(void)vfs;
	/* SQLite's own temporary files (no name) are its unix VFS's */
	if (name == NULL)
		return fd_base->xOpen(fd_base, name, f, flags, out);
	if (!(flags & SQLITE_OPEN_MAIN_DB) || strncmp(name, "ri-fd:", 6) != 0)
		return SQLITE_CANTOPEN;
	errno = 0;
	n = strtol(name + 6, &end, 10);
	if (errno != 0 || *end != '\0' || n < 0 || n > INT_MAX)
		return SQLITE_CANTOPEN;
	memset(ff, 0, sizeof *ff);
	if ((ff->fd = fcntl((int)n, F_DUPFD_CLOEXEC, 0)) < 0)
		return SQLITE_CANTOPEN;
	ff->base.pMethods = &fd_methods;
	if (out != NULL)
		*out = flags;
	return SQLITE_OK;
}

static int
fd_delete(sqlite3_vfs *vfs, const char *name, int sync)
{
	(void)vfs;
	(void)name;
	(void)sync;
	return SQLITE_OK;       /* it made nothing by name to delete */
}

static int
fd_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs;
	(void)name;
	(void)flags;
	*out = 0;               /* no hot journal, no WAL: nothing by name exists */
	return SQLITE_OK;
}

static int
fd_fullname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	if ((int)strlen(name) >= n)
		return SQLITE_CANTOPEN;
	memcpy(out, name, strlen(name) + 1);
	return SQLITE_OK;
}

static void
register_fd_vfs(void)
{
	if ((fd_base = sqlite3_vfs_find(NULL)) == NULL)
		return;
	fd_vfs = *fd_base;
	fd_vfs.zName = RI_FD_VFS_NAME;
	fd_vfs.pNext = NULL;
	fd_vfs.szOsFile = fd_base->szOsFile > (int)sizeof(struct fd_file) ? fd_base->szOsFile :
	    (int)sizeof(struct fd_file);
	fd_vfs.xOpen = fd_open;
	fd_vfs.xDelete = fd_delete;
	fd_vfs.xAccess = fd_access;
	fd_vfs.xFullPathname = fd_fullname;
	if (sqlite3_vfs_register(&fd_vfs, 0) != SQLITE_OK)
		fd_base = NULL;
}

const char *
ri_fd_vfs(void)
{
	(void)pthread_once(&fd_registered, register_fd_vfs);
	return fd_base != NULL ? RI_FD_VFS_NAME : NULL;
}
