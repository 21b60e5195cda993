/* ledger-admin -- operator and test helper for the disclosure-ledger store.
 *
 *   ledger-admin --store FILE init
 *   ledger-admin --store FILE count  [--pairing-datum P]
 *   ledger-admin --store FILE list   [--pairing-datum P]
 *   ledger-admin --store FILE fences
 *   ledger-admin --store FILE plant  [--pairing-datum P] [--subject S]
 *                                    [--recipient R] [--scope SC]
 *
 * init    creates the schema (what ledger-disclose would create on first use).
 * count   prints the number of disclosures, or of those carrying datum P.
 * list    prints the disclosures as JSON lines, oldest first.
 * fences  prints the fencing table as JSON lines: {"act":[S,R,SC],"token":N}.
 * plant   inserts one more disclosure carrying datum P (or no datum) and
 *         prints it as list does.  A second row with an act's datum is what
 *         makes the probe answer undecidable; subject, recipient and scope
 *         default to the first row already carrying P, else to "planted".
 *         A plant is not an act: it carries no invocation id and no token.
 *
 * Exits 0 on success, 1 when the store cannot be read or written, 2 on bad
 * usage.  The read commands open the store read-only and never create it. */
#include <err.h>
#include <getopt.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"

#define EX_STORE 1
#define EX_BADUSAGE 2

struct admin {
	const char *store, *command;
	const char *datum, *subject, *recipient, *scope;
	int subject_given;              /* any of --subject/--recipient/--scope */
};

static void usage(void)
{
	fprintf(stderr,
		"usage: ledger-admin --store FILE init\n"
		"       ledger-admin --store FILE count  [--pairing-datum P]\n"
		"       ledger-admin --store FILE list   [--pairing-datum P]\n"
		"       ledger-admin --store FILE fences\n"
		"       ledger-admin --store FILE plant  [--pairing-datum P]"
		" [--subject S] [--recipient R] [--scope SC]\n");
	exit(EX_BADUSAGE);
}

static void parse(int argc, char **argv, struct admin *a)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "pairing-datum", required_argument, NULL, 'p' },
		{ "subject", required_argument, NULL, 'S' },
		{ "recipient", required_argument, NULL, 'r' },
		{ "scope", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*a = (struct admin){ 0 };
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': a->store = optarg; break;
		case 'p': a->datum = optarg; break;
		case 'S': a->subject = optarg; a->subject_given = 1; break;
		case 'r': a->recipient = optarg; a->subject_given = 1; break;
		case 'c': a->scope = optarg; a->subject_given = 1; break;
		default: usage();
		}
	}
	if (a->store == NULL || optind != argc - 1)
		usage();
	a->command = argv[optind];

	/* An option the command does not read is a mistake, not a no-op. */
	if (strcmp(a->command, "plant") != 0 && a->subject_given)
		usage();
	if ((strcmp(a->command, "init") == 0 ||
	     strcmp(a->command, "fences") == 0) && a->datum != NULL)
		usage();
}

static sqlite3 *open_store(const char *path, int writable)
{
	sqlite3 *db = NULL;
	int flags = writable ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
			     : SQLITE_OPEN_READONLY;

	if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK)
		errx(EX_STORE, "cannot open %s: %s", path,
		     db ? sqlite3_errmsg(db) : "out of memory");
	sqlite3_busy_timeout(db, 5000);
	if (writable && sqlite3_exec(db, "PRAGMA journal_mode=WAL;"
				     "PRAGMA synchronous=FULL;" LEDGER_SCHEMA,
				     NULL, NULL, NULL) != SQLITE_OK)
		errx(EX_STORE, "cannot set up %s: %s", path,
		     sqlite3_errmsg(db));
	return db;
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		errx(EX_STORE, "%s", sqlite3_errmsg(db));
	return st;
}

/* Bind the optional datum filter as parameter 1 (the SQL reads
 * "?1 IS NULL OR pairing_datum = ?1"). */
static void bind_datum(sqlite3_stmt *st, const char *datum)
{
	if (datum != NULL)
		sqlite3_bind_text(st, 1, datum, -1, SQLITE_STATIC);
}

static void done(sqlite3 *db, sqlite3_stmt *st, int rc)
{
	if (rc != SQLITE_DONE)
		errx(EX_STORE, "%s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
}

static json_t *column(sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL:
		return json_null();
	case SQLITE_INTEGER:
		return json_integer(sqlite3_column_int64(st, i));
	default:
		return json_string((const char *)sqlite3_column_text(st, i));
	}
}

/* One JSON line; columns named as the statement names them. */
static void print_row(sqlite3_stmt *st)
{
	json_t *o = json_object();

	for (int i = 0; i < sqlite3_column_count(st); i++) {
		json_t *v = column(st, i);
		if (v == NULL)          /* not UTF-8: show it was there */
			v = json_string("<not text>");
		json_object_set_new(o, sqlite3_column_name(st, i), v);
	}
	if (json_dumpf(o, stdout, JSON_COMPACT | JSON_SORT_KEYS) != 0 ||
	    putchar('\n') == EOF)
		err(EX_STORE, "stdout");
	json_decref(o);
}

#define ROW_COLUMNS                                                       \
	"id, disclosure_id, subject, recipient, scope, pairing_datum,"    \
	" invocation_id, fencing_token, disclosed_at"

static void cmd_count(sqlite3 *db, const char *datum)
{
	sqlite3_stmt *st = prepare(db, "SELECT count(*) FROM disclosures"
				   " WHERE ?1 IS NULL OR pairing_datum = ?1");
	int rc;

	bind_datum(st, datum);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		printf("%lld\n", (long long)sqlite3_column_int64(st, 0));
		rc = sqlite3_step(st);
	}
	done(db, st, rc);
}

static void cmd_list(sqlite3 *db, const char *datum)
{
	sqlite3_stmt *st = prepare(db, "SELECT " ROW_COLUMNS " FROM disclosures"
				   " WHERE ?1 IS NULL OR pairing_datum = ?1"
				   " ORDER BY id");
	int rc;

	bind_datum(st, datum);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		print_row(st);
	done(db, st, rc);
}

static void cmd_fences(sqlite3 *db)
{
	sqlite3_stmt *st = prepare(db, "SELECT act, token FROM fences"
				   " ORDER BY act");
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		/* act is stored as a JSON array; show it as one */
		json_t *act = json_loads((const char *)sqlite3_column_text(st, 0),
					 0, NULL);
		json_t *o = json_pack("{sosI}", "act",
				      act ? act : json_null(), "token",
				      (json_int_t)sqlite3_column_int64(st, 1));
		if (o == NULL || json_dumpf(o, stdout, JSON_COMPACT) != 0 ||
		    putchar('\n') == EOF)
			errx(EX_STORE, "cannot print a fence");
		json_decref(o);
	}
	done(db, st, rc);
}

/* The defaults plant takes from the first row already carrying the datum,
 * so a planted duplicate looks like the act it shadows. */
static void plant_defaults(sqlite3 *db, struct admin *a, char **own)
{
	sqlite3_stmt *st = prepare(db, "SELECT subject, recipient, scope"
				   " FROM disclosures WHERE pairing_datum = ?"
				   " ORDER BY id LIMIT 1");
	const char **field[] = { &a->subject, &a->recipient, &a->scope };
	int rc;

	sqlite3_bind_text(st, 1, a->datum ? a->datum : "", -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	for (int i = 0; i < 3; i++) {
		const unsigned char *v = rc == SQLITE_ROW
			? sqlite3_column_text(st, i) : NULL;
		if (*field[i] != NULL)
			continue;
		own[i] = strdup(v ? (const char *)v : i == 2 ? "" : "planted");
		if (own[i] == NULL)
			err(EX_STORE, "strdup");
		*field[i] = own[i];
	}
	if (rc == SQLITE_ROW)
		rc = SQLITE_DONE;
	done(db, st, rc);
}

static void cmd_plant(sqlite3 *db, struct admin *a)
{
	char id[LEDGER_ID_LEN], stamp[LEDGER_STAMP_LEN];
	char *own[3] = { NULL, NULL, NULL };
	sqlite3_stmt *st;

	if (ledger_mint_id(id) < 0)
		err(EX_STORE, "/dev/urandom");
	ledger_stamp(stamp);
	plant_defaults(db, a, own);

	st = prepare(db, "INSERT INTO disclosures(disclosure_id, subject,"
		     " recipient, scope, pairing_datum, disclosed_at)"
		     " VALUES(?, ?, ?, ?, ?, ?)");
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, a->subject, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, a->recipient, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, a->scope, -1, SQLITE_STATIC);
	if (a->datum != NULL)
		sqlite3_bind_text(st, 5, a->datum, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 5);
	sqlite3_bind_text(st, 6, stamp, -1, SQLITE_STATIC);
	done(db, st, sqlite3_step(st));

	st = prepare(db, "SELECT " ROW_COLUMNS " FROM disclosures"
		     " WHERE disclosure_id = ?");
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		print_row(st);
	sqlite3_finalize(st);
	for (int i = 0; i < 3; i++)
		free(own[i]);
}

int main(int argc, char **argv)
{
	struct admin a;
	sqlite3 *db;
	int writes;

	parse(argc, argv, &a);
	writes = strcmp(a.command, "init") == 0 ||
		 strcmp(a.command, "plant") == 0;
	if (!writes && strcmp(a.command, "count") != 0 &&
	    strcmp(a.command, "list") != 0 && strcmp(a.command, "fences") != 0)
		usage();

	db = open_store(a.store, writes);
	if (strcmp(a.command, "count") == 0)
		cmd_count(db, a.datum);
	else if (strcmp(a.command, "list") == 0)
		cmd_list(db, a.datum);
	else if (strcmp(a.command, "fences") == 0)
		cmd_fences(db);
	else if (strcmp(a.command, "plant") == 0)
		cmd_plant(db, &a);
	/* init: open_store already created the schema */

	if (fflush(stdout) != 0)
		err(EX_STORE, "stdout");
	sqlite3_close(db);
	return 0;
}
