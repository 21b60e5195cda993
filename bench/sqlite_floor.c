/*
 * sqlite_floor.c -- BENCHMARK ONLY: the least a command can cost that opens
 * an SQLite journal in its own process and makes one durable write
 * (issue 15, target 1: a diagnostic beside the physical floor, to say
 * how much of a pair's cost is the substrate's and how much is ri's).
 * Built like the commands (the same static SQLite) and linked to nothing
 * else of ours: no configuration, keys, credentials, MAC, lease or
 * heads -- one statement, one commit.
 *
 *   sqlite_floor DB SQL [-]
 *
 * opens DB (a WAL database made by the benchmark), sets synchronous=FULL
 * as the commands do, runs SQL -- one INSERT ... RETURNING seq, its own
 * transaction, one fsync'd commit -- and prints {"seq":N} as ri-open
 * prints its answer; with "-" it first reads stdin to its end, as
 * ri-close reads its request.  A lock held by another writer is waited
 * for up to 300 ms, as the sqlite3 baseline's .timeout.  It never
 * checkpoints (not at commit, not at close): the benchmark restarts the
 * WAL before each block, untimed, so the WAL this floor reads at open is
 * never longer than one block wrote -- the best case for SQLite, which no
 * command that must bound its WAL can have for free.  Exit 0, or 1 with
 * a message.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SEQ_LEN 32                      /* a seq as text, with room to spare */

static int
row(void *arg, int n, char **v, char **name)
{
	(void)name;
	if (n == 1 && v[0] != NULL)
		snprintf(arg, SEQ_LEN, "%s", v[0]);
	return 0;
}

int
main(int argc, char **argv)
{
	char buf[4096], seq[SEQ_LEN] = "";
	char *msg = NULL;
	sqlite3 *db;

	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "-") != 0)) {
		fprintf(stderr, "usage: sqlite_floor DB SQL [-]\n");
		return 1;
	}
	if (argc == 4)
		while (read(STDIN_FILENO, buf, sizeof buf) > 0)
			;
	if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		fprintf(stderr, "sqlite_floor: %s: %s\n", argv[1], sqlite3_errmsg(db));
		return 1;
	}
	sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
	sqlite3_busy_timeout(db, 300);  /* the sqlite3 baseline's .timeout */
	sqlite3_wal_autocheckpoint(db, 0);
	if (sqlite3_exec(db, "PRAGMA synchronous=FULL", NULL, NULL, &msg) != SQLITE_OK ||
	    sqlite3_exec(db, argv[2], row, seq, &msg) != SQLITE_OK || seq[0] == '\0') {
		fprintf(stderr, "sqlite_floor: %s\n", msg != NULL ? msg : "the statement returned no seq");
		sqlite3_close(db);
		return 1;
	}
	if (sqlite3_close(db) != SQLITE_OK)
		return 1;
	printf("{\"seq\":%s}\n", seq);
	return 0;
}
