/* util.c -- errors, time text, ids, files. */
#include <ctype.h>
#include <errno.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>

#include "util/nc.h"
#include "util/util.h"

#ifdef RI_NC_RUNTIME
/* nc.h: the one negative control $RI_NC names is switched off (read at
 * every call: a control's build is never timed) */
int
ri_nc_on(const char *flag)
{
	const char *on = getenv("RI_NC");

	return on != NULL && strcmp(on, flag) == 0;
}
#endif

void
ri_vfail(ri_err *err, int code, const char *fmt, va_list ap)
{
	if (err == NULL)
		return;
	err->code = code;
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
}

static int
parse_i64(const char *s, const char **end, int64_t *out)
{
	int64_t v = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -1;
	while (isdigit((unsigned char)*p)) {
		int d = *p - '0';
		if (v > (INT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		p++;
	}
	*end = p;
	*out = v;
	return 0;
}

int
ri_parse_duration(const char *s, ri_ms *out)
{
	static const struct { const char *unit; int64_t ms; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 },
		{ "h", 3600000 }, { "d", 86400000 },
	};
	const char *end;
	int64_t v;

	if (s == NULL || parse_i64(s, &end, &v) != 0)
		return -1;
	if (*end == '\0') {
		*out = v;
		return 0;
	}
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcmp(end, units[i].unit) == 0) {
			if (v > INT64_MAX / units[i].ms)
				return -1;
			*out = v * units[i].ms;
			return 0;
		}
	}
	return -1;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant). */
static int64_t
days_from_civil(int64_t y, int64_t m, int64_t d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void
civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int
fixed_digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

int
ri_parse_instant(const char *s, ri_ms *out)
{
	const char *p = s, *end;
	int Y, M, D, h, mi, sec, frac = 0, fdig = 0;
	int64_t v;

	if (s == NULL || *s == '\0')
		return -1;
	if (parse_i64(s, &end, &v) == 0 && *end == '\0') {
		*out = v;
		return 0;
	}
	if (fixed_digits(&p, 4, &Y) || *p++ != '-' || fixed_digits(&p, 2, &M) ||
	    *p++ != '-' || fixed_digits(&p, 2, &D) || (*p != 'T' && *p != 't'))
		return -1;
	p++;
	if (fixed_digits(&p, 2, &h) || *p++ != ':' || fixed_digits(&p, 2, &mi) ||
	    *p++ != ':' || fixed_digits(&p, 2, &sec))
		return -1;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		while (isdigit((unsigned char)*p)) {
			if (fdig < 3) {
				frac = frac * 10 + (*p - '0');
				fdig++;
			}
			p++;
		}
		while (fdig < 3) {
			frac *= 10;
			fdig++;
		}
	}
	if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || mi > 59 || sec > 60)
		return -1;
	int64_t t = (days_from_civil(Y, M, D) * 86400 + h * 3600 + mi * 60 + sec) * 1000 + frac;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '+' ? 1 : -1, oh, om;
		p++;
		if (fixed_digits(&p, 2, &oh) || *p++ != ':' || fixed_digits(&p, 2, &om))
			return -1;
		t -= sign * (int64_t)(oh * 3600 + om * 60) * 1000;
	} else {
		return -1;
	}
	if (*p != '\0')
		return -1;
	*out = t;
	return 0;
}

void
ri_format_instant(ri_ms t, char buf[RI_INSTANT_LEN])
{
	int64_t secs = t >= 0 ? t / 1000 : -((-t + 999) / 1000);
	int ms = (int)(t - secs * 1000);
	int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
	int64_t rem = secs - days * 86400, y;
	int m, d;

	civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999)          /* RFC 3339 years have four digits */
		y = y < 0 ? 0 : 9999;
	snprintf(buf, RI_INSTANT_LEN, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
	    (int)y, m, d, (int)(rem / 3600), (int)(rem / 60 % 60),
	    (int)(rem % 60), ms);
}

void
ri_format_seconds(ri_ms d, char *buf, size_t n)
{
	if (d % 1000 == 0) {
		snprintf(buf, n, "%lld", (long long)(d / 1000));
		return;
	}
	snprintf(buf, n, "%s%lld.%03lld", d < 0 ? "-" : "",
	    (long long)(llabs(d) / 1000), (long long)(llabs(d) % 1000));
	char *e = buf + strlen(buf) - 1;
	while (*e == '0')
		*e-- = '\0';
}

const char *
ri_mint_id(const char *prefix, char out[RI_ID_LEN + 1])
{
	unsigned char raw[16];
	size_t pl = strlen(prefix);

	if (pl > 4)
		pl = 4;
	memcpy(out, prefix, pl);
	/* The first 48 bits are the wall clock's milliseconds, the other 80
	 * fresh randomness: ids minted in turn sort in turn, so the indexes
	 * keyed by them (records' event_id, invocation_id; open_intents) take
	 * each new id at their right edge, in pages already cached, instead
	 * of one random leaf of a 10^6-record index per append (issue 15,
	 * target 2).  80 random bits a millisecond keep ids unguessable and
	 * distinct; the journal's UNIQUE keys catch the rest. */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
	for (int i = 5; i >= 0; i--, ms >>= 8)
		raw[i] = (unsigned char)(ms & 0xff);
	randombytes_buf(raw + 6, sizeof raw - 6);
	sodium_bin2hex(out + pl, RI_ID_LEN + 1 - pl, raw, sizeof raw);
	return out;
}

char *
ri_slurp_fd(int fd, size_t max, size_t *len, bool *too_big)
{
	size_t cap = 4096, n = 0;
	char *buf = ri_xmalloc(cap + 1);

	*too_big = false;
	for (;;) {
		if (n == cap) {
			if (cap > max) {
				*too_big = true;
				break;
			}
			cap *= 2;
			buf = realloc(buf, cap + 1);
			if (buf == NULL)
				abort();
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max)
		*too_big = true;
	buf[n] = '\0';
	if (len != NULL)
		*len = n;
	return buf;
}

/* ri_open_regular's refusal: fd closed (when open), why said, errno e */
static int
open_refused(int fd, int e, const char *path, const char *what, char *why, size_t n)
{
	if (why != NULL)
		snprintf(why, n, "%s: %s", path, what != NULL ? what : strerror(e));
	if (fd >= 0)
		close(fd);
	errno = e;
	return -1;
}

int
ri_open_regular(const char *path, int flags, mode_t mode, char *why, size_t n)
{
	struct stat sb;
	int fd;

	if ((fd = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode)) < 0)
		return open_refused(-1, errno, path, errno == ELOOP && (flags & O_NOFOLLOW) ?
		    "a symbolic link, not a file" : NULL, why, n);
	/* before anything reads, locks or waits on it: a FIFO, a device or a
	 * directory is not the file ri was told of */
	if (fstat(fd, &sb) != 0)
		return open_refused(fd, errno, path, NULL, why, n);
	if (!RI_NC(RI_NC_OPEN_ANY_FILE) && !S_ISREG(sb.st_mode))
		return open_refused(fd, EINVAL, path, S_ISFIFO(sb.st_mode) ? "not a regular file (a FIFO)" :
		    S_ISDIR(sb.st_mode) ? "not a regular file (a directory)" : "not a regular file", why, n);
	/* a regular file never blocks; blocking again for what comes next
	 * (a lock wait, a write) */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
		return open_refused(fd, errno, path, NULL, why, n);
	return fd;
}

int
ri_db_files_regular(const char *path, char *why, size_t n)
{
	static const char *const side[] = { "", "-wal", "-shm", "-journal" };
	char p[4200];

	for (size_t i = 0; i < sizeof side / sizeof side[0]; i++) {
		snprintf(p, sizeof p, "%s%s", path, side[i]);
		int fd = ri_open_regular(p, O_RDONLY, 0, why, n);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		/* a sidecar that is not there is SQLite's to make */
		if (errno == ENOENT && i > 0)
			continue;
		return -1;
	}
	return 0;
}

char *
ri_slurp_why(const char *path, size_t max, size_t *len, char *why, size_t n)
{
	int fd = ri_open_regular(path, O_RDONLY, 0, why, n);
	bool big;
	char *s;

	if (fd < 0)
		return NULL;
	s = ri_slurp_fd(fd, max, len, &big);
	close(fd);
	if (s == NULL || big) {
		int e = s == NULL ? errno : EFBIG;
		free(s);
		if (why != NULL)
			snprintf(why, n, "%s: %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	return s;
}

char *
ri_slurp(const char *path, size_t max, size_t *len)
{
	return ri_slurp_why(path, max, len, NULL, 0);
}

int
ri_replace_file(const char *path, int (*emit)(FILE *, void *), void *arg, char *why, size_t n)
{
	char tmp[4200];
	mode_t mask;
	FILE *f;
	int fd, e;

	if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
		snprintf(why, n, "%s: %s", path, strerror(ENAMETOOLONG));
		return -1;
	}
	if (RI_NC(RI_NC_PREDICTABLE_TMP)) {
		/* negative control: the name anyone could plant, followed if a link */
		snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	} else {
		fd = mkstemp(tmp);
	}
	if (fd < 0) {
		snprintf(why, n, "%s: %s", path, strerror(errno));
		return -1;
	}
	/* readable as a file fopen(3) made (mkstemp makes it 0600) */
	mask = umask(0);
	(void)umask(mask);
	if (fchmod(fd, 0666 & ~mask) != 0 || (f = fdopen(fd, "w")) == NULL) {
		e = errno;
		close(fd);
		goto fail;
	}
	if (emit(f, arg) != 0 || fflush(f) != 0 || fsync(fileno(f)) != 0) {
		e = errno ? errno : EIO;
		fclose(f);
		goto fail;
	}
	if (fclose(f) != 0) {
		e = errno;
		goto fail;
	}
	if (rename(tmp, path) != 0) {
		e = errno;
		goto fail;
	}
	return 0;
fail:
	unlink(tmp);
	snprintf(why, n, "%s: %s", path, strerror(e));
	return -1;
}

static int
private_open(const char *path, bool group_ok, char *why, size_t n)
{
	struct stat sb;
	int fd;

	/* O_NOFOLLOW: a symlink is not followed to a file someone else chose */
	if ((fd = ri_open_regular(path, O_RDONLY | O_NOFOLLOW, 0, why, n)) < 0)
		return -1;
	if (fstat(fd, &sb) != 0) {
		snprintf(why, n, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	/* private (0600 or stricter, the caller's), or -- a key only --
	 * shared with one group: group read, nothing more (Instance start 3;
	 * issue 44, point 6) */
	bool shared = group_ok && (sb.st_mode & 077) == 040;
	if ((sb.st_mode & 077) != 0 && !shared) {
		snprintf(why, n, "%s: mode %03o is %s; chmod 600 it%s", path, (unsigned)(sb.st_mode & 0777),
		    group_ok ? "wider than group read (0640)" : "group- or world-accessible",
		    group_ok ? ", or 640 with a group of its own" : "");
		close(fd);
		return -1;
	}
	if (shared ? (sb.st_uid != geteuid() && sb.st_uid != 0) : sb.st_uid != geteuid()) {
		snprintf(why, n, "%s: owned by uid %u, not by the caller (uid %u)%s", path,
		    (unsigned)sb.st_uid, (unsigned)geteuid(), shared ? " nor by root" : "");
		close(fd);
		return -1;
	}
	return fd;
}

int
ri_secret_open(const char *path, char *why, size_t n)
{
	return private_open(path, false, why, n);
}

int
ri_key_open(const char *path, char *why, size_t n)
{
	return private_open(path, true, why, n);
}

static char *
private_read(const char *path, bool group_ok, size_t max, size_t *len, char *why, size_t n)
{
	int fd = private_open(path, group_ok, why, n);
	size_t got;
	bool big;
	char *s;

	if (fd < 0)
		return NULL;
	s = ri_slurp_fd(fd, max, &got, &big);
	close(fd);
	if (s == NULL || big) {
		if (s != NULL) {
			sodium_memzero(s, got);
			free(s);
		}
		snprintf(why, n, "%s: %s", path, big ? "larger than expected" : strerror(errno));
		return NULL;
	}
	while (got > 0 && (s[got - 1] == '\n' || s[got - 1] == '\r'))
		s[--got] = '\0';
	if (len != NULL)
		*len = got;
	return s;
}

/* where a URI, or a password's value, ends in running text */
static bool
text_end(char c)
{
	return c == '\0' || c == '"' || c == '\'' || c == ' ' || c == '\t' || c == '\n' || c == '<' || c == '>';
}

static void
put(char *out, size_t n, size_t *o, char c)
{
	if (*o + 1 < n)
		out[(*o)++] = c;
}

const char *
ri_redact(const char *text, char *out, size_t n)
{
	size_t o = 0;
	const char *p = text;

	if (n == 0)
		return out;
#define PUT(c) put(out, n, &o, (c))
	while (*p) {
		/* user:PASSWORD@host in a postgres:// or postgresql:// URI: up to
		 * the URI's last '@' (a password may hold a '/' or a '?'; a
		 * later '@' only hides more than the password, never less) */
		size_t scheme = strncasecmp(p, "postgresql://", 13) == 0 ? 13 :
		    strncasecmp(p, "postgres://", 11) == 0 ? 11 : 0;
		if (scheme > 0) {
			const char *auth = p + scheme, *end = auth, *at = NULL, *colon = NULL;
			for (; !text_end(*end); end++)
				if (*end == '@')
					at = end;
			for (const char *c = auth; at != NULL && c < at && colon == NULL; c++)
				if (*c == ':')
					colon = c;
			for (const char *stop = colon ? colon + 1 : auth; p < stop; p++)
				PUT(*p);
			if (colon != NULL) {
				PUT('*');
				PUT('*');
				PUT('*');
				p = at;
			}
			continue;
		}
		/* password=VALUE, in a URI's query or a connection string */
		if (strncasecmp(p, "password=", 9) == 0 && (p == text || (!isalnum((unsigned char)p[-1]) && p[-1] != '_'))) {
			for (int i = 0; i < 9; i++)
				PUT(*p++);
			PUT('*');
			PUT('*');
			PUT('*');
			while (*p != '&' && !text_end(*p))
				p++;
			continue;
		}
		PUT(*p++);
	}
#undef PUT
	out[o] = '\0';
	return out;
}

char *
ri_json_dumps(const json_t *j, size_t flags)
{
	char *s = json_dumps(j, flags), *out;
	json_malloc_t m;
	json_free_t f;

	if (s == NULL)
		return NULL;
	/* jansson's block goes back to jansson's allocator (mem.h) */
	out = ri_strdup(s);
	json_get_alloc_funcs(&m, &f);
	f(s);
	return out;
}

char *
ri_json_canonical(const json_t *j)
{
	char *s = ri_json_dumps(j, RI_JSON_CANONICAL);
	if (s == NULL)
		abort();
	return s;
}

json_t *
ri_json_instant(ri_ms t)
{
	char buf[RI_INSTANT_LEN];

	ri_format_instant(t, buf);
	return json_string(buf);
}

int64_t
ri_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
ri_sleep_ms(int64_t ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

char **
ri_env_without(const char *const drop[], size_t room, size_t *kept)
{
	extern char **environ;
	size_t n = 0, k = 0;
	char **env;

	while (environ[n] != NULL)
		n++;
	env = ri_xcalloc(n + room + 1, sizeof *env);
	for (size_t i = 0; i < n; i++) {
		bool keep = true;
		for (size_t j = 0; drop[j] != NULL && keep; j++)
			keep = strncmp(environ[i], drop[j], strlen(drop[j])) != 0;
		if (keep)
			env[k++] = environ[i];
	}
	*kept = k;
	return env;
}

static void
on_lock_deadline(int sig)
{
	(void)sig;              /* only to interrupt flock(2) */
}

static int
lock_wait(int fd, int op, int64_t budget_ms)
{
	struct sigaction sa = { .sa_handler = on_lock_deadline }, old;
	const struct itimerval off = { { 0, 0 }, { 0, 0 } };
	int64_t deadline = ri_mono_ms() + budget_ms;
	int rc, e;

	if (flock(fd, op | LOCK_NB) == 0)
		return 0;
	if (errno != EWOULDBLOCK)
		return -1;
	/* no SA_RESTART: the deadline's SIGALRM makes flock return EINTR --
	 * unblocked for the wait, as a mask inherited across exec may block it */
	sigset_t alrm, mask;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	if (sigaction(SIGALRM, &sa, &old) != 0)
		return -1;
	(void)sigprocmask(SIG_UNBLOCK, &alrm, &mask);
	for (;;) {
		int64_t left = deadline - ri_mono_ms();
		if (left <= 0) {
			rc = -1;
			e = ETIMEDOUT;
			break;
		}
		/* the interval re-arms it: a SIGALRM that lands before flock
		 * blocks is followed by another, so the wait still ends */
		struct itimerval at = { { 0, 10000 }, { left / 1000, (long)(left % 1000) * 1000 } };
		(void)setitimer(ITIMER_REAL, &at, NULL);
		rc = flock(fd, op);
		e = errno;
		(void)setitimer(ITIMER_REAL, &off, NULL);
		if (rc == 0 || e != EINTR)
			break;
	}
	(void)sigprocmask(SIG_SETMASK, &mask, NULL);
	(void)sigaction(SIGALRM, &old, NULL);
	errno = e;
	return rc;
}

int
ri_lock_wait(int fd, int64_t budget_ms)
{
	return lock_wait(fd, LOCK_EX, budget_ms);
}

int
ri_lock_wait_shared(int fd, int64_t budget_ms)
{
	return lock_wait(fd, LOCK_SH, budget_ms);
}

void *
ri_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		abort();
	return p;
}

void *
ri_xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);

	if (p == NULL)
		abort();
	return p;
}

char *
ri_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = ri_xmalloc(n);

	memcpy(d, s, n);
	return d;
}

size_t
ri_envelope_size(const char *action_ref, const char *actor_ref, const json_t *data)
{
	json_t *env = json_pack("{s:s, s:s, s:s, s:O}", "action_ref", action_ref,
	    "actor_ref", actor_ref, "attestation_id", "att_00000000000000000000000000000000",
	    "data", data);
	size_t n;

	if (env == NULL)
		abort();
	/* the canonical text's length, counted as jansson writes it: no
	 * buffer, no copy (an Open sizes three envelopes, issue 15) */
	n = json_dumpb(env, NULL, 0, RI_JSON_CANONICAL);
	if (n == 0)
		abort();
	json_decref(env);
	return n;
}

static int
exec_ok(const char *path)
{
	struct stat sb;

	if (stat(path, &sb) != 0)
		return ENOENT;
	if (!S_ISREG(sb.st_mode) || access(path, X_OK) != 0)
		return EACCES;
	return 0;
}

bool
ri_which(const char *prog, char *out, size_t n)
{
	const char *path = getenv("PATH");
	int e, seen = ENOENT;

	if (prog == NULL || *prog == '\0') {
		errno = ENOENT;
		return false;
	}
	if (strchr(prog, '/') != NULL) {
		if ((e = exec_ok(prog)) != 0) {
			errno = e;
			return false;
		}
		snprintf(out, n, "%s", prog);
		return true;
	}
	if (path == NULL)
		path = "/usr/bin:/bin";
	for (;;) {
		size_t len = strcspn(path, ":");
		/* an empty element is the current directory, as for execvp */
		int w = len ? snprintf(out, n, "%.*s/%s", (int)len, path, prog) : snprintf(out, n, "./%s", prog);
		if (w > 0 && (size_t)w < n) {
			if ((e = exec_ok(out)) == 0)
				return true;
			if (e == EACCES)
				seen = EACCES;
		}
		if (path[len] == '\0')
			break;
		path += len + 1;
	}
	errno = seen;
	return false;
}

int
ri_exit_fd(int pid)
{
#ifdef SYS_pidfd_open
	int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (fd >= 0) {
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
		return fd;
	}
#else
	(void)pid;
#endif
	return -1;
}

char *
ri_secret_read(const char *path, size_t max, size_t *len, char *why, size_t n)
{
	return private_read(path, false, max, len, why, n);
}

char *
ri_key_read(const char *path, size_t max, size_t *len, char *why, size_t n)
{
	return private_read(path, true, max, len, why, n);
}

static ri_diag_fn *diag_hook;

void
ri_diag_set(ri_diag_fn *fn)
{
	diag_hook = fn;
}

void
ri_diag(const char *fmt, ...)
{
	char msg[4096], safe[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (diag_hook != NULL) {
		diag_hook(msg);
		return;
	}
	/* a journal URI's password never reaches a log (issue 40 point 9) */
	fprintf(stderr, "%s\n", ri_redact(msg, safe, sizeof safe));
}

/* the program's name for its lines: ri_cli_init sets it from argv[0] */
const char *ri_progname = "ri";

/* The locale's character set, as setlocale(3) finds it: only LC_CTYPE is
 * taken from the environment (numbers and messages stay "C").  Asked the
 * first time a message is printed, not at every start: setlocale reads
 * the locale's files, ~60 K instructions and four system calls of a
 * command whose answer is pure ASCII (issue 15). */
static bool
locale_utf8(void)
{
	static int utf8 = -1;
	const char *cs;

	if (utf8 < 0) {
		utf8 = setlocale(LC_CTYPE, "") != NULL && (cs = nl_langinfo(CODESET)) != NULL &&
		    (strcasecmp(cs, "UTF-8") == 0 || strcasecmp(cs, "utf8") == 0);
	}
	return utf8 == 1;
}

const char *
ri_local(const char *s, char *buf, size_t n)
{
	static const struct { const char *u, *a; } map[] = {
		{ "\xc3\x97", "x" }, { "\xe2\x89\xa5", ">=" }, { "\xe2\x89\xa4", "<=" },
		{ "\xe2\x80\x94", "--" }, { "\xe2\x80\x93", "-" }, { "\xe2\x80\xa6", "..." },
		{ "\xe2\x86\x92", "->" }, { "\xe2\x80\x99", "'" }, { "\xe2\x80\x9c", "\"" },
		{ "\xe2\x80\x9d", "\"" },
	};
	size_t o = 0;

	if (n == 0 || locale_utf8())
		return s;
	while (*s != '\0' && o + 1 < n) {
		size_t i, len = 0;
		for (i = 0; i < sizeof map / sizeof map[0]; i++)
			if (strncmp(s, map[i].u, (len = strlen(map[i].u))) == 0)
				break;
		if (i < sizeof map / sizeof map[0]) {
			for (const char *a = map[i].a; *a && o + 1 < n; a++)
				buf[o++] = *a;
			s += len;
		} else if ((unsigned char)*s >= 0x80) {
			/* any other non-ASCII sequence: one '?' */
			buf[o++] = '?';
			s++;
			while ((*s & 0xc0) == 0x80)
				s++;
		} else {
			buf[o++] = *s++;
		}
	}
	buf[o] = '\0';
	return buf;
}
