/* util.h -- small helpers every layer shares: errors, time text, ids, files. */
#ifndef RI_UTIL_H
#define RI_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <sys/types.h>
#include "ri.h"

#define RI_ID_LEN 36            /* "inv_" + 32 hex, NUL-terminated in 37 */
#define RI_INSTANT_LEN 32

/* Set err (code + printf-style message); returns code, so callers write
 * `return ri_fail(err, RI_CONFIG, "...")`.  Inline, so cppcheck sees it
 * returns its code; clang's analyzer steps into no variadic function, so
 * for it alone (make tidy) the macro after the definition says the same:
 * code is never RI_OK at a call. */
void ri_vfail(ri_err *err, int code, const char *fmt, va_list ap);

static inline int ri_fail(ri_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline int
ri_fail(ri_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ri_vfail(err, code, fmt, ap);
	va_end(ap);
	return code;
}
#ifdef __clang_analyzer__
#define ri_fail(err, code, ...) (ri_fail((err), (code), __VA_ARGS__), (code))
#endif

/* Durations: "250ms", "30s", "10m", "2h", "400d", or a JSON integer of ms. */
int ri_parse_duration(const char *s, ri_ms *out);
/* Instants: RFC 3339 (Z or offset, optional fraction) or integer ms. */
int ri_parse_instant(const char *s, ri_ms *out);
/* RFC 3339 UTC with milliseconds: 2026-11-29T22:40:00.123Z */
void ri_format_instant(ri_ms t, char buf[RI_INSTANT_LEN]);
/* Seconds as the walkthrough prints them: 30, 0.25, 1.5 */
void ri_format_seconds(ri_ms d, char *buf, size_t n);

/* prefix + 32 lowercase hex: 48 bits of the wall clock's milliseconds,
 * then 80 of fresh randomness (libsodium). */
const char *ri_mint_id(const char *prefix, char out[RI_ID_LEN + 1]);

/*
 * Every path ri opens itself is opened through this (issue 40 point 3):
 * flags (O_RDONLY, O_RDWR, O_CREAT, O_NOFOLLOW where a symlink must not be
 * followed, ...) plus O_NONBLOCK, so that a FIFO or a device named where a
 * file belongs never blocks the open; then fstat-checked -- a regular
 * file, or -1 with errno EINVAL -- before anything reads, locks or waits
 * on it; then O_NONBLOCK is cleared.  mode is for O_CREAT.  On -1, why
 * (when not NULL) holds "PATH: reason".
 */
int ri_open_regular(const char *path, int flags, mode_t mode, char *why, size_t n);
/* A database file SQLite will open by its path: the file and each of its
 * sidecars that exists (-wal, -shm, -journal) is a regular file, checked
 * as ri_open_regular checks one, before SQLite opens any of them (it would
 * block on a FIFO).  0, or -1 with errno and why. */
int ri_db_files_regular(const char *path, char *why, size_t n);
/* Put a new file at path, whole or not at all (issue 40 point 4): written
 * by emit(f, arg) into a temporary file made exclusively beside it
 * (mkstemp: a name no one could plant, never a symlink followed), synced,
 * given the mode fopen(3) would give it, then renamed over path -- a
 * symlink or a FIFO at path is replaced, never written through.  0, or -1
 * with why (nothing left behind); emit returns non-zero on failure. */
int ri_replace_file(const char *path, int (*emit)(FILE *, void *), void *arg, char *why, size_t n);
/* Whole file, at most max bytes (else NULL with errno = EFBIG); NUL-terminated.
 * A regular file only (ri_open_regular); ri_slurp_why says why not. */
char *ri_slurp(const char *path, size_t max, size_t *len);
char *ri_slurp_why(const char *path, size_t max, size_t *len, char *why, size_t n);
/* Whole stream, at most max bytes; *too_big set when it held more. */
char *ri_slurp_fd(int fd, size_t max, size_t *len, bool *too_big);
/* A credential file (the start gate, Instance start 3): opened by
 * ri_open_regular with O_NOFOLLOW (a FIFO never blocks, a symlink is
 * refused), then checked: mode 0600 or stricter, owned by the caller.
 * The fd, or -1 with why ("PATH: reason"). */
int ri_secret_open(const char *path, char *why, size_t n);
/* The whole of such a file (at most max bytes), trailing newlines
 * stripped; NULL with why. */
char *ri_secret_read(const char *path, size_t max, size_t *len, char *why, size_t n);
/* An instance key (the integrity key, the seal's secret key): as a
 * credential file, or shared with a dedicated group -- mode 0640 (0440),
 * group read and nothing more, owned by the caller or by root (the kernel
 * lets only the group's members read it) -- so that several Unix users can
 * run one instance's writers (INTERFACE, third wave; issue 44, point 6).
 * Anything wider is refused. */
int ri_key_open(const char *path, char *why, size_t n);
char *ri_key_read(const char *path, size_t max, size_t *len, char *why, size_t n);

/* text as ri may print it (issue 40 point 9): in every PostgreSQL
 * connection URI it holds (postgres:// or postgresql://), the password of
 * user:PASSWORD@ is "***", and so is the value of every password=...
 * (a URI's query, or a key=value connection string).  Into out (cut at
 * n); returns out. */
const char *ri_redact(const char *text, char *out, size_t n);

/* Diagnostics: the library's only way to say something to a person (it
 * never prints or exits itself; the CLI layer does).  ri_diag formats one
 * line and hands it to the hook ri_diag_set installed -- the CLI's printer
 * (cli.c: program name, the instant after ri_cli_stamp, the locale).  With
 * no hook (a library user, a unit test) the line goes to stderr as it is,
 * redacted (ri_redact), with no program name. */
typedef void ri_diag_fn(const char *line);
void ri_diag_set(ri_diag_fn *fn);
void ri_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The program's name, for the lines it prints ("ri" until ri_cli_init
 * sets it from argv[0]). */
extern const char *ri_progname;
/* s for a person in this locale: s itself, or its ASCII fallback in buf
 * when the locale (LC_ALL, LC_CTYPE, LANG) does not speak UTF-8 -- x for
 * U+00D7, >= for U+2265, <= for U+2264, -- for a dash.  JSON stays UTF-8,
 * as JSON is. */
const char *ri_local(const char *s, char *buf, size_t n);

/* json_dumps, in a block the caller frees with free(): every command's
 * jansson has its own allocator (mem.h), so no caller may free what
 * json_dumps returns itself.  NULL when json_dumps fails. */
char *ri_json_dumps(const json_t *j, size_t flags);
/* Canonical JSON (compact, sorted keys): what is hashed and stored. */
#define RI_JSON_CANONICAL (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17))
char *ri_json_canonical(const json_t *j);
json_t *ri_json_instant(ri_ms t);

/* A payload "as the substrate measures a payload": the serialized envelope
 * {action_ref, actor_ref, attestation_id, data}. */
size_t ri_envelope_size(const char *action_ref, const char *actor_ref, const json_t *data);

/* Find prog as execvp(3) would ($PATH, or "/usr/bin:/bin"; a name with a
 * slash as given): the path of an executable regular file into out, or
 * false with errno (ENOENT: not found; EACCES: found, not executable). */
bool ri_which(const char *prog, char *out, size_t n);

/* Monotonic milliseconds, for bounding waits (never for protocol time). */
int64_t ri_mono_ms(void);
void ri_sleep_ms(int64_t ms);
/* The environment for a child: environ's entries less those that start
 * with one of drop's prefixes ("NAME=", NULL-terminated), pointing into
 * environ, with room for `room` more entries and a NULL after *kept.  The
 * caller frees the array (not the entries it did not add). */
char **ri_env_without(const char *const drop[], size_t room, size_t *kept);
/* Take an exclusive flock(2) on fd, waiting on the holder's release
 * itself -- the kernel wakes the waiter -- but never past budget_ms: 0,
 * or -1 with errno (ETIMEDOUT at the budget).  The deadline interrupts
 * the wait with SIGALRM (an interval timer of this process, its handler
 * restored after), so it is for single-threaded processes only. */
int ri_lock_wait(int fd, int64_t budget_ms);
/* The same for a shared lock (LOCK_SH). */
int ri_lock_wait_shared(int fd, int64_t budget_ms);
/* A descriptor that polls readable when child pid exits (pidfd_open), so a
 * wait for a child ends on the exit itself, never on a nap; -1 where the
 * kernel has none (the caller then falls back to short polls). */
int ri_exit_fd(int pid);

/* Allocations that abort rather than fail: never NULL */
char *ri_strdup(const char *s) __attribute__((returns_nonnull));
void *ri_xmalloc(size_t n) __attribute__((returns_nonnull, malloc));
void *ri_xcalloc(size_t n, size_t m) __attribute__((returns_nonnull, malloc));

#endif
