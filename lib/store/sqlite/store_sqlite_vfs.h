/*
 * store_sqlite_vfs.h -- the VFS the journal is opened with: SQLite's own
 * (unix) in every respect but one, the directory sync of an existing WAL.
 *
 * SQLite opens a WAL with "create if missing" and, for any file it opens so,
 * fsyncs the directory at the file's first sync: in a journal opened by a
 * new process for each command, that is a directory sync inside the first
 * commit of every writer -- under the write lock, where every other writer
 * waits on it.  Through this VFS an existing WAL is opened without
 * "create", so SQLite does not sync its directory; the writer syncs it
 * itself before its first write transaction, outside the lock
 * (ri_wal_dir_sync).  A WAL that does not exist is created as SQLite
 * always creates it, directory sync included.  Either way the WAL's
 * directory entry is durable before the first commit in it is
 * acknowledged.
 */
#ifndef RI_STORE_SQLITE_VFS_H
#define RI_STORE_SQLITE_VFS_H

#include <sqlite3.h>
#include <stdbool.h>

/* The VFS's name for sqlite3_open_v2 (registered at the first call, never
 * as the default), or NULL when SQLite has no default VFS to wrap. */
const char *ri_wal_vfs(void);

/* Whether db's WAL is open on this connection (it is after the
 * connection's first read: SQLite opens it then). */
bool ri_wal_is_open(sqlite3 *db);

/* fsync the directory that holds db's main file (and so its WAL).  As
 * SQLite's own directory sync: a directory that cannot be opened or
 * synced is not an error (some file systems refuse it). */
void ri_wal_dir_sync(sqlite3 *db);

/*
 * ri-backup's destination (issue 40 point 5): a VFS that serves one file
 * SQLite is handed by descriptor, never by path.  The destination is
 * created once, exclusively (O_CREAT|O_EXCL|O_NOFOLLOW), and opened as
 * "ri-fd:N" through this VFS, whose main file is descriptor N itself: no
 * later open of DEST's name exists for a symlink swap to redirect.  It
 * serves no journal or WAL (the connection runs journal_mode OFF on a
 * file no one else has) and no locks; SQLite's temporary files go to its
 * own VFS.  The name, or NULL when SQLite has no default VFS.
 */
const char *ri_fd_vfs(void);

#endif
