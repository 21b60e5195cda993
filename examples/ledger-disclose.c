/* ledger-disclose -- the act of the disclosure-ledger example adopter.
 *
 *   ledger-disclose --store FILE --subject S --recipient R [--scope SC]
 *                   [--sleep-before-ms N] [--sleep-ms N] [--print TEXT]
 *
 * Records that subject S was disclosed to recipient R (under scope SC) by
 * inserting one row in the adopter's own SQLite store, and prints
 * {"disclosure_id":"dsc-…","recipient":"R","subject":"S"} -- the outcome data
 * ri-run closes the act with -- on file descriptor 3 when it runs under
 * ri-run (RI_INVOCATION_ID set and fd 3 open), else on stdout.  It is meant to run under
 *
 *   ri-run --kind ledger --act-key KEY --actor A --pre-commit-exit 2,3,4 -- \
 *       ledger-disclose --store FILE --subject S --recipient R
 *
 * The row carries RI_PAIRING_DATUM, the nonce ri-run minted and stored in the
 * intent, so the probe (ledger-probe) can find this act from the intent alone.
 *
 * The commit partition (spec: commit 1, commit 5) -- one meaning per exit:
 *
 *   0  committed: the row is durable and the reply is on stdout.
 *   2  pre-commit: bad usage (including a subject, recipient or scope over
 *      256 bytes or not UTF-8), or RI_PAIRING_DATUM missing.  Nothing
 *      written.
 *   3  pre-commit: stale fencing token.  Nothing written.
 *   4  pre-commit: the write could not be made -- store unreachable, BEGIN
 *      refused, or a statement failed before COMMIT was issued (rolled back).
 *      Nothing written.
 *   5  unknown: COMMIT was issued and did not report success, or the reply
 *      could not be written after the commit.  The row may exist: the
 *      caller must treat it as unknown (commit 7) -- neither close nor
 *      refuse; ri-run yields and the sweep's probe decides.
 *
 * Death by a signal is unknown too; ri-run reads it so without our help.
 *
 * Fencing.  ri-open hands each invocation a fencing token (RI_FENCING_TOKEN)
 * that grows from one holder of an act's critical section to the next.  A
 * store that can check it closes the stall window of the walkthrough: an
 * invocation paused past its lease whose write arrives after a newer holder's
 * is refused instead of landing late.  This store keeps, per act
 * (subject, recipient, scope), the highest token any write carried, in
 * fences(act, token), and refuses -- exit 3, nothing written -- a write whose
 * token is lower.  The read and the update happen inside the write's own
 * BEGIN IMMEDIATE transaction, so no other writer can pass between them.  A
 * write with no token is not checked (the store cannot check what it is not
 * given) and leaves the fence alone.  The fence is keyed by the store's idea
 * of the act, and ri's tokens grow per ri act key, so the deployment must map
 * one ri act key to exactly one (subject, recipient, scope).
 *
 * This is not a commit fence (spec: commit 10-12): nothing stops a paused
 * write from landing after its lease when no newer holder has written (the
 * sweep never writes this store), and RI_COMMIT_DEADLINE is not enforced.
 * The kind must declare "commit_fence": "none".
 *
 * Test knobs: --sleep-before-ms N sleeps before the store is touched (a write
 * that arrives late: being killed there leaves nothing written; waking after
 * a newer holder wrote meets the fence); --sleep-ms N sleeps after COMMIT and
 * before the reply (a slow reply; being killed there leaves an act with no
 * close); --print TEXT writes TEXT verbatim (no newline added) in place of
 * the JSON reply (a job that commits and prints junk, or nothing). */
#include <err.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"

enum {
	EX_COMMITTED = 0,
	EX_BADUSAGE = 2,
	EX_STALE = 3,
	EX_NOWRITE = 4,
	EX_UNKNOWN = 5,
};

/* How long a write waits on another writer's lock before it gives up (and
 * exits 4).  Well under a completion bound of seconds. */
#define BUSY_TIMEOUT_MS 5000

struct request {
	const char *store, *subject, *recipient, *scope;
	const char *datum, *invocation_id;
	long long token;                /* -1: no token given */
	long long sleep_before_ms, sleep_after_ms;
	const char *print;              /* NULL: print the JSON reply */
	char *act;                      /* the fence's key, see act_name */
};

static void usage(void)
{
	fprintf(stderr,
		"usage: ledger-disclose --store FILE --subject S --recipient R"
		" [--scope SC]\n"
		"                       [--sleep-before-ms N] [--sleep-ms N]"
		" [--print TEXT]\n"
		"environment: RI_PAIRING_DATUM (required), RI_INVOCATION_ID,"
		" RI_FENCING_TOKEN\n");
	exit(EX_BADUSAGE);
}

/* Everything stored must be valid UTF-8, because the probe hands it back
 * as JSON; reject it now, while refusing is still pre-commit. */
static void require_text(const char *what, const char *s)
{
	json_t *j = json_string(s);

	if (j == NULL)
		errx(EX_BADUSAGE, "%s is not valid UTF-8", what);
	json_decref(j);
}

/* The longest subject, recipient or scope, in bytes.  It bounds the outcome
 * data (and the probe's copy of it): two fields of at most 256 bytes, each
 * byte at worst a 6-character JSON escape, plus the id and the punctuation,
 * stay under 3.2 KB -- inside the 4096-byte outcome_envelope the README's
 * kind entry declares (External check 7 wants that to be the true maximum). */
#define FIELD_CAP 256

static void require_field(const char *what, const char *s)
{
	if (strlen(s) > FIELD_CAP)
		errx(EX_BADUSAGE, "%s is over %d bytes", what, FIELD_CAP);
	require_text(what, s);
}

static long long option_ms(const char *name, const char *v)
{
	long long ms = ledger_parse_count(v);

	if (ms < 0)
		errx(EX_BADUSAGE, "%s wants a count of milliseconds, not '%s'",
		     name, v);
	return ms;
}

static void parse(int argc, char **argv, struct request *rq)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "subject", required_argument, NULL, 'S' },
		{ "recipient", required_argument, NULL, 'r' },
		{ "scope", required_argument, NULL, 'c' },
		{ "sleep-before-ms", required_argument, NULL, 'b' },
		{ "sleep-ms", required_argument, NULL, 'a' },
		{ "print", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *tok;
	int c;

	*rq = (struct request){ .scope = "", .token = -1 };
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': rq->store = optarg; break;
		case 'S': rq->subject = optarg; break;
		case 'r': rq->recipient = optarg; break;
		case 'c': rq->scope = optarg; break;
		case 'b':
			rq->sleep_before_ms = option_ms("--sleep-before-ms", optarg);
			break;
		case 'a': rq->sleep_after_ms = option_ms("--sleep-ms", optarg); break;
		case 'p': rq->print = optarg; break;
		default: usage();
		}
	}
	if (optind != argc || rq->store == NULL || rq->subject == NULL ||
	    rq->recipient == NULL || *rq->subject == '\0' ||
	    *rq->recipient == '\0')
		usage();

	/* Without the pairing datum the act would land where no probe can find
	 * it; refusing here is pre-commit, and the caller can say so. */
	rq->datum = getenv("RI_PAIRING_DATUM");
	if (rq->datum == NULL || *rq->datum == '\0')
		errx(EX_BADUSAGE, "RI_PAIRING_DATUM is not set: run under ri-run,"
		     " or set it to the intent's pairing datum");
	rq->invocation_id = getenv("RI_INVOCATION_ID");
	if (rq->invocation_id != NULL && *rq->invocation_id == '\0')
		rq->invocation_id = NULL;
	tok = getenv("RI_FENCING_TOKEN");
	if (tok != NULL && *tok != '\0' &&
	    (rq->token = ledger_parse_count(tok)) < 0)
		errx(EX_BADUSAGE, "RI_FENCING_TOKEN is not a non-negative integer:"
		     " '%s'", tok);

	require_field("--subject", rq->subject);
	require_field("--recipient", rq->recipient);
	require_field("--scope", rq->scope);
	require_text("RI_PAIRING_DATUM", rq->datum);
	if (rq->invocation_id != NULL)
		require_text("RI_INVOCATION_ID", rq->invocation_id);
}

/* The fence's key: the act's identity as the store sees it.  A JSON array
 * rather than a joined string, so no choice of separator can make two
 * different (subject, recipient, scope) tuples collide. */
static char *act_name(const struct request *rq)
{
	json_t *a = json_pack("[sss]", rq->subject, rq->recipient, rq->scope);
	char *s = a ? json_dumps(a, JSON_COMPACT) : NULL;

	json_decref(a);
	return s;
}

/* The reply, built before COMMIT so that nothing which can fail for want of
 * memory is left between the commit and the answer. */
static char *reply_text(const struct request *rq, const char *id)
{
	json_t *o;
	char *s;

	if (rq->print != NULL)
		return strdup(rq->print);
	o = json_pack("{ssssss}", "disclosure_id", id, "recipient",
		      rq->recipient, "subject", rq->subject);
	s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(o);
	return s;
}

/* Roll back what this transaction did and exit with a pre-commit code: the
 * commit was never issued, so nothing of it can be durable. */
static _Noreturn void leave(sqlite3 *db, int code)
{
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(db);
	exit(code);
}

/* The same, for a store failure: say what failed and what SQLite said. */
static _Noreturn void abandon(sqlite3 *db, int code, const char *what)
{
	warnx("%s: %s", what, sqlite3_errmsg(db));
	leave(db, code);
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		abandon(db, EX_NOWRITE, "cannot prepare a statement");
	return st;
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
	if (s != NULL)
		sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

static sqlite3 *open_store(const char *path)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
			    SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		warnx("cannot open the store %s: %s", path,
		      db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		exit(EX_NOWRITE);
	}
	sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
	/* WAL so the probe reads while we write; FULL so that COMMIT's success
	 * means the row survives a power cut -- exit 0 is a promise. */
	if (sqlite3_exec(db, "PRAGMA journal_mode=WAL;"
			 "PRAGMA synchronous=FULL;" LEDGER_SCHEMA,
			 NULL, NULL, NULL) != SQLITE_OK)
		abandon(db, EX_NOWRITE, "cannot prepare the store");
	return db;
}

/* Inside the write's transaction: refuse a token older than the newest this
 * act has seen, else record ours as the newest. */
static void check_fence(sqlite3 *db, const struct request *rq)
{
	sqlite3_stmt *st;
	int rc;

	if (rq->token < 0)
		return;

	st = prepare(db, "SELECT token FROM fences WHERE act = ?");
	sqlite3_bind_text(st, 1, rq->act, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_int64(st, 0) > rq->token) {
		warnx("stale fencing token %lld: this act has already seen"
		      " %lld; nothing written", rq->token,
		      (long long)sqlite3_column_int64(st, 0));
		sqlite3_finalize(st);
		leave(db, EX_STALE);
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		abandon(db, EX_NOWRITE, "cannot read the fence");
	sqlite3_finalize(st);

	st = prepare(db, "INSERT INTO fences(act, token) VALUES(?, ?)"
		     " ON CONFLICT(act) DO UPDATE SET"
		     " token = max(token, excluded.token)");
	sqlite3_bind_text(st, 1, rq->act, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, rq->token);
	if (sqlite3_step(st) != SQLITE_DONE)
		abandon(db, EX_NOWRITE, "cannot update the fence");
	sqlite3_finalize(st);
}

static void insert_row(sqlite3 *db, const struct request *rq, const char *id)
{
	char stamp[LEDGER_STAMP_LEN];
	sqlite3_stmt *st = prepare(db,
		"INSERT INTO disclosures(disclosure_id, subject, recipient,"
		" scope, pairing_datum, invocation_id, fencing_token,"
		" disclosed_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?)");

	ledger_stamp(stamp);
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, rq->subject, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, rq->recipient, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, rq->scope, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, rq->datum, -1, SQLITE_STATIC);
	bind_text_or_null(st, 6, rq->invocation_id);
	if (rq->token >= 0)
		sqlite3_bind_int64(st, 7, rq->token);
	else
		sqlite3_bind_null(st, 7);
	sqlite3_bind_text(st, 8, stamp, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) != SQLITE_DONE)
		abandon(db, EX_NOWRITE, "cannot insert the disclosure");
	sqlite3_finalize(st);
}

int main(int argc, char **argv)
{
	struct request rq;
	char id[LEDGER_ID_LEN];
	char *reply;
	sqlite3 *db;
	size_t n;

	/* A reader that went away must show up as a write error we can map
	 * (to 5), not as a death mid-reply. */
	signal(SIGPIPE, SIG_IGN);
	parse(argc, argv, &rq);

	if (rq.sleep_before_ms > 0)
		ledger_sleep_ms(rq.sleep_before_ms);
	if (ledger_mint_id(id) < 0)
		err(EX_NOWRITE, "cannot read /dev/urandom for a disclosure id");
	if ((reply = reply_text(&rq, id)) == NULL ||
	    (rq.act = act_name(&rq)) == NULL)
		errx(EX_NOWRITE, "out of memory");

	db = open_store(rq.store);
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		abandon(db, EX_NOWRITE, "cannot begin the write");
	check_fence(db, &rq);
	insert_row(db, &rq, id);

	/* From here on the row may be durable whatever SQLite says: a failed
	 * or interrupted COMMIT is unknown, never pre-commit (commit 6, 7). */
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		warnx("COMMIT did not report success (%s): the disclosure may"
		      " exist; let the probe decide", sqlite3_errmsg(db));
		sqlite3_close(db);
		free(rq.act);
		free(reply);
		return EX_UNKNOWN;
	}
	sqlite3_close(db);
	free(rq.act);

	if (rq.sleep_after_ms > 0)
		ledger_sleep_ms(rq.sleep_after_ms);
	n = strlen(reply);
	/* under ri-run the outcome goes to fd 3 (ri-run(1)); run by hand, or
	 * under ri-run --outcome-stdout, to stdout */
	FILE *out = stdout;
	if (getenv("RI_INVOCATION_ID") != NULL && fcntl(3, F_GETFD) != -1 &&
	    (out = fdopen(3, "w")) == NULL)
		out = stdout;
	if (fwrite(reply, 1, n, out) != n ||
	    (rq.print == NULL && fputc('\n', out) == EOF) || fflush(out) != 0) {
		warn("the disclosure %s committed but the reply was lost", id);
		free(reply);
		return EX_UNKNOWN;
	}
	free(reply);
	return EX_COMMITTED;
}
