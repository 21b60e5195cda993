/*
 * testlib.h -- a tiny shared helper for the C unit tests (no framework).
 *
 *   CHECK(cond, fmt, ...)   on failure: print file:line, the condition and
 *                           the message, keep the temp dirs for a post
 *                           mortem, and exit(1) -- the first failure stops
 *   PASS(fmt, ...)          one line per passing case: "ok - ..."
 *   tl_tmpdir(out, tag)     mkdtemp under $TMPDIR (or /tmp); removed at exit
 *                           when every check passed
 *   tl_write_config(...)    an ri.json for a test instance (struct tl_cfg)
 *   tl_run(...)             fork/exec a binary of $RI_BIN (default "bin"),
 *                           capturing its stdout; returns the exit status
 *   tl_instance(...)        temp dir + ri.json + `ri-init` + `ri-actor add alice`
 *   tl_now(t)               the env clock: setenv("RI_NOW", t) in ms
 *   tl_pg_host()            $RI_TEST_PG_HOST: the journals are PostgreSQL
 *                           schemas of tests/pg/run's server (below)
 *   SKIP(fmt, ...)          "skip - ...": a case this backend cannot run
 *
 * Header-only, every function static inline, so a test that uses part of it
 * compiles clean under -Wall -Wextra -Werror.
 */
#ifndef RI_TESTLIB_H
#define RI_TESTLIB_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jansson.h>

#define TL_MAX_DIRS 128

static char tl_dirs[TL_MAX_DIRS][PATH_MAX];
static size_t tl_ndirs;
static pid_t tl_owner;          /* the process that registered the dirs */
static bool tl_failed;
static char tl_pg_dbs[TL_MAX_DIRS][64];  /* the databases tl_clone made */
static size_t tl_pg_ndbs;

static inline void
tl_cleanup(void)
{
	char cmd[3 * PATH_MAX];

	if (getpid() != tl_owner || tl_failed || getenv("TL_KEEP") != NULL)
		return;
	for (size_t i = 0; i < tl_pg_ndbs; i++) {
		const char *b = getenv("PGBIN");
		if (snprintf(cmd, sizeof cmd, "'%s%spsql' -h '%s' -U postgres -d postgres -qAtc 'DROP DATABASE %s'"
		    " >/dev/null", b ? b : "", b ? "/" : "", getenv("RI_TEST_PG_HOST"), tl_pg_dbs[i]) >= (int)sizeof cmd)
			continue;
		if (system(cmd) != 0)
			fprintf(stderr, "warning: could not drop database %s\n", tl_pg_dbs[i]);
	}
	tl_pg_ndbs = 0;
	for (size_t i = 0; i < tl_ndirs; i++) {
		if (snprintf(cmd, sizeof cmd, "rm -rf '%s'", tl_dirs[i]) >= (int)sizeof cmd)
			continue;
		if (system(cmd) != 0)
			fprintf(stderr, "warning: could not remove %s\n", tl_dirs[i]);
	}
	tl_ndirs = 0;
}

static inline void
tl_fail(const char *file, int line, const char *cond, const char *fmt, ...)
	__attribute__((format(printf, 4, 5), noreturn));

static inline void
tl_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "FAIL %s:%d: (%s) ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (getpid() == tl_owner) {
		tl_failed = true;
		for (size_t i = 0; i < tl_ndirs; i++)
			fprintf(stderr, "  kept %s\n", tl_dirs[i]);
		exit(1);
	}
	_exit(1);       /* a forked child: never run the parent's atexit */
}

#define CHECK(cond, ...) do {                                           \
	if (!(cond))                                                    \
		tl_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);        \
} while (0)

#define CHECK_STR(got, want) do {                                       \
	const char *g_ = (got), *w_ = (want);                           \
	CHECK(g_ != NULL && strcmp(g_, w_) == 0, "%s: got \"%s\", want \"%s\"", \
	    #got, g_ ? g_ : "(null)", w_);                              \
} while (0)

#define PASS(...) do {                                                  \
	printf("ok - ");                                                \
	printf(__VA_ARGS__);                                            \
	putchar('\n');                                                  \
	fflush(stdout);                                                 \
} while (0)

/* snprintf that fails the test on truncation (and keeps -Wformat-truncation quiet) */
static inline void
tl_fmt(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static inline void
tl_fmt(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	CHECK(k >= 0 && (size_t)k < n, "a path or command is too long: %s", buf);
}

static inline void
tl_init(void)
{
	tl_owner = getpid();
	atexit(tl_cleanup);
	setvbuf(stdout, NULL, _IOLBF, 0);
}

static inline void
tl_tmpdir(char out[PATH_MAX], const char *tag)
{
	const char *base = getenv("TMPDIR");

	if (base == NULL || *base == '\0')
		base = "/tmp";
	tl_fmt(out, PATH_MAX, "%s/ri-%s-XXXXXX", base, tag);
	CHECK(mkdtemp(out) != NULL, "mkdtemp %s: %s", out, strerror(errno));
	CHECK(tl_ndirs < TL_MAX_DIRS, "too many temp dirs");
	tl_fmt(tl_dirs[tl_ndirs++], PATH_MAX, "%s", out);
}

static inline void
tl_write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	size_t n = strlen(text);

	CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
	CHECK(write(fd, text, n) == (ssize_t)n, "write %s: %s", path, strerror(errno));
	CHECK(fchmod(fd, mode) == 0 && close(fd) == 0, "close %s: %s", path, strerror(errno));
}

/* The clock seam: with "clock": "env" every reading is $RI_NOW. */
static inline void
tl_now(int64_t t)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%lld", (long long)t);
	setenv("RI_NOW", buf, 1);
}

/*
 * The PostgreSQL switch (issue 42), tests/lib/pg.bash's for the C tests:
 * with $RI_TEST_PG_HOST set (tests/pg/run sets it: the socket directory of
 * a throwaway server), every config written here names a new empty schema
 * of database "ri" (role ri) as its journal and one of "riw" (role riw) as
 * its witness, so the same test runs on either backend.  The superuser
 * "postgres" (trust auth on the socket) is the attacker, and copies an
 * instance's schemas for tl_clone.
 */
static inline const char *
tl_pg_host(void)
{
	const char *h = getenv("RI_TEST_PG_HOST");

	return h != NULL && *h != '\0' ? h : NULL;
}

/* A test that cannot run on this backend says so and why (tests/pg/run
 * counts the lines). */
#define SKIP(...) do {                                                  \
	printf("skip - ");                                              \
	printf(__VA_ARGS__);                                            \
	putchar('\n');                                                  \
	fflush(stdout);                                                 \
} while (0)

/* A PostgreSQL client program: $PGBIN's (the server's own version, as
 * pg_dump requires), else the one on PATH. */
static inline void
tl_pg_prog(char *out, size_t n, const char *prog)
{
	const char *b = getenv("PGBIN");
	char p[PATH_MAX];

	if (b != NULL && *b != '\0' && snprintf(p, sizeof p, "%s/%s", b, prog) < (int)sizeof p &&
	    access(p, X_OK) == 0)
		tl_fmt(out, n, "%s", p);
	else
		tl_fmt(out, n, "%s", prog);
}

static inline void
tl_sh(const char *cmd)
{
	fflush(NULL);
	CHECK(system(cmd) == 0, "%s failed", cmd);
}

/* A new empty schema in database db, owned by role user: its name. */
static inline void
tl_pg_new_schema(const char *db, const char *user, char out[64])
{
	unsigned char r[8];
	char psql[PATH_MAX], cmd[2 * PATH_MAX + 256];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0 && read(fd, r, sizeof r) == (ssize_t)sizeof r && close(fd) == 0, "/dev/urandom");
	snprintf(out, 64, "%s_%02x%02x%02x%02x%02x%02x%02x%02x", strcmp(db, "ri") == 0 ? "ri" : "w",
	    r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
	tl_pg_prog(psql, sizeof psql, "psql");
	tl_fmt(cmd, sizeof cmd, "'%s' -h '%s' -U %s -d %s -qAtc 'CREATE SCHEMA %s' >/dev/null", psql, tl_pg_host(),
	    user, db, out);
	tl_sh(cmd);
}

/* The URI of schema in database db as role user. */
static inline void
tl_pg_uri(const char *db, const char *user, const char *schema, char *out, size_t n)
{
	tl_fmt(out, n, "postgresql:///%s?host=%s&user=%s&options=-csearch_path%%3D%s", db, tl_pg_host(), user,
	    schema);
}

/* The database and the schema a config's member ("journal", "witness")
 * names. */
static inline void
tl_pg_where(const char *config, const char *member, char db[64], char schema[64])
{
	json_error_t je;
	json_t *c = json_load_file(config, 0, &je);
	const char *u, *s;

	CHECK(c != NULL, "%s: %s", config, je.text);
	u = json_string_value(json_object_get(c, member));
	s = u != NULL ? strstr(u, "search_path%3D") : NULL;
	CHECK(s != NULL && strncmp(u, "postgresql:///", 14) == 0, "%s: the %s is no schema of the test server",
	    config, member);
	snprintf(schema, 64, "%s", s + strlen("search_path%3D"));
	snprintf(db, 64, "%.*s", (int)strcspn(u + 14, "?"), u + 14);
	json_decref(c);
}

/* A new database owned by role user, which no other role may connect to
 * (as riw's, tests/pg/run): its name. */
static inline void
tl_pg_new_db(const char *user, const char *prefix, char out[64])
{
	unsigned char r[8];
	char psql[PATH_MAX], cmd[2 * PATH_MAX + 512];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0 && read(fd, r, sizeof r) == (ssize_t)sizeof r && close(fd) == 0, "/dev/urandom");
	snprintf(out, 64, "%s_%02x%02x%02x%02x%02x%02x%02x%02x", prefix, r[0], r[1], r[2], r[3], r[4], r[5], r[6],
	    r[7]);
	tl_pg_prog(psql, sizeof psql, "psql");
	tl_fmt(cmd, sizeof cmd, "'%s' -h '%s' -U postgres -d postgres -qAt -c 'CREATE DATABASE %s OWNER %s'"
	    " -c 'REVOKE ALL ON DATABASE %s FROM PUBLIC' >/dev/null", psql, tl_pg_host(), out, user, out);
	tl_sh(cmd);
	CHECK(tl_pg_ndbs < TL_MAX_DIRS, "too many databases");
	snprintf(tl_pg_dbs[tl_pg_ndbs++], 64, "%s", out);
}

/* An ri.json; NULL / 0 fields take the walkthrough's values. */
struct tl_cfg {
	const char *clock;              /* "env" (default) or "system" */
	bool faults;                    /* "fault_injection": true */
	const char *fence;              /* journal_fence: "none" (default) or "declared" */
	const char *journal_write_bound;        /* "3s" */
	const char *read_bound;                 /* "2s" */
	const char *closure_latency;            /* "12s" */
	const char *allowance;                  /* clock_offset_allowance "2s" */
	long long payload_cap;                  /* 65536 */
	const char *kinds;              /* the "kinds" object's text; NULL: one "ledger" */
	int shards;                     /* "shards" (ri-init's); 0: not given */
};

#define TL_KIND(name, retention) \
	"\"" name "\": { \"outcomes\": [\"disclosed\"], \"repeatable\": true," \
	" \"completion_bound\": \"30s\", \"commit_round_trip\": \"1s\", \"probe_round_trip\": \"1s\"," \
	" \"retention_period\": \"" retention "\", \"commit_fence\": \"none\", \"pairing_datum\": \"nonce\"," \
	" \"outcome_envelope\": 4096, \"retry_terminus\": \"lease\", \"probe\": [\"/bin/true\"]," \
	" \"service_identity\": null }"

static inline void
tl_write_config(const char *dir, const struct tl_cfg *c, char path[PATH_MAX])
{
	char journal[PATH_MAX + 128] = "journal.db", witness[PATH_MAX + 160] = "", shards[32] = "";
	/* room for both addresses at their longest, and the rest of the config */
	char text[sizeof journal + sizeof witness + 8192];

	if (tl_pg_host() != NULL) {
		char j[64], w[64], u[PATH_MAX + 128];
		tl_pg_new_schema("ri", "ri", j);
		tl_pg_new_schema("riw", "riw", w);
		tl_pg_uri("ri", "ri", j, journal, sizeof journal);
		tl_pg_uri("riw", "riw", w, u, sizeof u);
		tl_fmt(witness, sizeof witness, " \"witness\": \"%s\",", u);
	}
	if (c->shards > 0)
		tl_fmt(shards, sizeof shards, " \"shards\": %d,", c->shards);
	snprintf(text, sizeof text,
	    "{\n"
	    "  \"journal\": \"%s\", \"findings\": \"findings.db\",%s%s\n"
	    "  \"integrity_key_file\": \"journal.key\", \"seal_key_file\": \"seal.key\",\n"
	    "  \"clock\": \"%s\", \"fault_injection\": %s,\n"
	    "  \"instance\": {\n"
	    "    \"clock_offset_allowance\": \"%s\", \"reconciliation_cadence\": \"60s\",\n"
	    "    \"run_bound\": \"135s\", \"closure_latency\": \"%s\",\n"
	    "    \"journal_write_bound\": \"%s\", \"read_bound\": \"%s\",\n"
	    "    \"compensation_window\": \"10m\", \"intent_candidates_cap\": 16, \"read_cap\": 20,\n"
	    "    \"reference_length_cap\": 256, \"payload_cap\": %lld, \"journal_fence\": \"%s\"\n"
	    "  },\n"
	    "  \"kinds\": { %s }\n"
	    "}\n",
	    journal, witness, shards,
	    c->clock ? c->clock : "env", c->faults ? "true" : "false",
	    c->allowance ? c->allowance : "2s",
	    c->closure_latency ? c->closure_latency : "12s",
	    c->journal_write_bound ? c->journal_write_bound : "3s",
	    c->read_bound ? c->read_bound : "2s",
	    c->payload_cap ? c->payload_cap : 65536LL,
	    c->fence ? c->fence : "none",
	    c->kinds ? c->kinds : TL_KIND("ledger", "400d"));
	tl_fmt(path, PATH_MAX, "%s/ri.json", dir);
	tl_write_file(path, text, 0644);
}

/* $RI_BIN; else the bin/ beside this build's unit/ dir (build/san/bin for
 * `make check`), when it holds ri-init; else ./bin. */
static inline const char *
tl_bindir(void)
{
	static char dir[PATH_MAX];
	const char *b = getenv("RI_BIN");
	char exe[PATH_MAX], probe[PATH_MAX + 16];
	ssize_t n;

	if (b != NULL && *b != '\0')
		return b;
	if (dir[0] != '\0')
		return dir;
	snprintf(dir, sizeof dir, "bin");
	if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
		exe[n] = '\0';
		for (int up = 0; up < 2; up++) {
			char *slash = strrchr(exe, '/');
			if (slash != NULL)
				*slash = '\0';
		}
		if (snprintf(probe, sizeof probe, "%s/bin/ri-init", exe) < (int)sizeof probe &&
		    access(probe, X_OK) == 0)
			tl_fmt(dir, sizeof dir, "%s/bin", exe);
	}
	return dir;
}

/* Run $RI_BIN/<prog> with the NULL-terminated args; stdout into out (may be
 * NULL), stderr passes through.  Returns the exit status, or 128 + signal. */
static inline int
tl_run(char *out, size_t n, const char *prog, ...)
{
	char path[PATH_MAX];
	const char *argv[32];
	size_t argc = 0, used = 0;
	int fds[2], status;
	va_list ap;
	pid_t pid;

	tl_fmt(path, sizeof path, "%s/%s", tl_bindir(), prog);
	argv[argc++] = path;
	va_start(ap, prog);
	while (argc < 31 && (argv[argc] = va_arg(ap, const char *)) != NULL)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	CHECK(pipe(fds) == 0, "pipe: %s", strerror(errno));
	fflush(NULL);
	CHECK((pid = fork()) >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDOUT_FILENO);
		close(fds[1]);
		execv(path, (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		char buf[4096];
		ssize_t r = read(fds[0], buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (out != NULL && used + 1 < n) {
			size_t k = (size_t)r < n - 1 - used ? (size_t)r : n - 1 - used;
			memcpy(out + used, buf, k);
			used += k;
		}
	}
	close(fds[0]);
	if (out != NULL && n > 0)
		out[used] = '\0';
	while (waitpid(pid, &status, 0) < 0)
		CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* `ri-actor add NAME`: the credential from its one JSON line. */
static inline void
tl_add_actor(const char *config, const char *name, char cred[128])
{
	char out[4096];
	json_error_t je;
	json_t *j;
	int rc = tl_run(out, sizeof out, "ri-actor", "-c", config, "add", name, (const char *)NULL);

	CHECK(rc == 0, "ri-actor add %s exited %d", name, rc);
	j = json_loads(out, 0, &je);
	CHECK(j != NULL && json_is_string(json_object_get(j, "credential")),
	    "ri-actor add %s: no credential in \"%s\"", name, out);
	snprintf(cred, 128, "%s", json_string_value(json_object_get(j, "credential")));
	json_decref(j);
}

/* xorshift64*: a test's random inputs, reproducible from the seed it
 * prints (tl_seed: 0 is taken as 1, the generator's one fixed point) */
static inline uint64_t *
tl_rng(void)
{
	static uint64_t state = 1;
	return &state;
}

static inline void
tl_seed(uint64_t seed)
{
	*tl_rng() = seed ? seed : 1;
}

static inline uint64_t
tl_rnd(void)
{
	uint64_t *x = tl_rng();

	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545f4914f6cdd1dULL;
}

struct tl_instance {
	char dir[PATH_MAX];
	char config[PATH_MAX];
	char cred[128];                 /* alice's credential */
};

/* A fresh instance: temp dir, ri.json, ri-init, and the actor alice. */
static inline void
tl_instance(struct tl_instance *ti, const char *tag, const struct tl_cfg *c)
{
	char out[4096];
	int rc;

	tl_tmpdir(ti->dir, tag);
	tl_write_config(ti->dir, c, ti->config);
	rc = tl_run(out, sizeof out, "ri-init", "-c", ti->config, (const char *)NULL);
	CHECK(rc == 0, "ri-init -c %s exited %d", ti->config, rc);
	tl_add_actor(ti->config, "alice", ti->cred);
}

/* A copy of a whole instance directory (no connection may be open on it). */
static inline void
tl_clone(const struct tl_instance *src, struct tl_instance *dst, const char *tag)
{
	char cmd[3 * PATH_MAX];

	tl_tmpdir(dst->dir, tag);
	tl_fmt(cmd, sizeof cmd, "cp -a '%s/.' '%s/'", src->dir, dst->dir);
	CHECK(system(cmd) == 0, "%s failed", cmd);
	tl_fmt(dst->config, PATH_MAX, "%s/ri.json", dst->dir);
	memcpy(dst->cred, src->cred, sizeof dst->cred);
	if (tl_pg_host() != NULL) {
		/* the journal and the witness are schemas: copied too, by the
		 * superuser, each into a database of its own under the same
		 * name -- the schema's fingerprint, MACed at ri-init
		 * (open_pg.c pg_schema_check), names its schema -- and still
		 * owned by ri and riw */
		static const struct { const char *member, *user, *prefix; } m[] = {
			{ "journal", "ri", "c" }, { "witness", "riw", "cw" } };
		char dump[PATH_MAX], psql[PATH_MAX], db[64], schema[64], to[64], uri[PATH_MAX + 128];
		json_error_t je;
		json_t *c;

		tl_pg_prog(dump, sizeof dump, "pg_dump");
		tl_pg_prog(psql, sizeof psql, "psql");
		c = json_load_file(dst->config, 0, &je);
		CHECK(c != NULL, "%s: %s", dst->config, je.text);
		for (size_t i = 0; i < 2; i++) {
			tl_pg_where(src->config, m[i].member, db, schema);
			tl_pg_new_db(m[i].user, m[i].prefix, to);
			tl_fmt(cmd, sizeof cmd, "'%s' -h '%s' -U postgres -d %s -n %s | '%s' -h '%s' -U postgres -d %s -q"
			    " -v ON_ERROR_STOP=1 >/dev/null", dump, tl_pg_host(), db, schema, psql, tl_pg_host(), to);
			tl_sh(cmd);
			tl_pg_uri(to, m[i].user, schema, uri, sizeof uri);
			json_object_set_new(c, m[i].member, json_string(uri));
		}
		CHECK(json_dump_file(c, dst->config, JSON_INDENT(2)) == 0, "rewrite %s", dst->config);
		json_decref(c);
	}
}

/* Wait for a forked child; its exit status (128 + signal when killed). */
static inline int
tl_wait(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#endif
