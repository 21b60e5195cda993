/*
 * ri-rechain -- TEST-ONLY.  Never installed, never shipped.
 *
 * The attacker of issue 11, attack 4, who holds no key but knows the chain
 * is public: on a journal file (the append-only triggers dropped and put
 * back), delete every record of one action ref (audit.sealed: the seals
 * stripped), optionally replace one record's payload or move it into
 * another shard's chain, then renumber the rest and recompute every
 * payload digest, back pointer and chain hash, a chain per shard (format
 * 4; docs/SHARDS.md) -- exactly what ri-audit --public-key recomputes.
 * The MACs (and the journal heads, and the trees of scope heads) it cannot
 * remake.  Not for a migrated journal (its format-3 records chain as one).
 *
 *   ri-rechain JOURNAL [--drop ACTION_REF] [--payload SEQ JSON] [--shard SEQ N]
 *
 * SEQ is the record's seq before renumbering.  Prints the new head seq.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sodium.h>

#include "store/heads.h"
#include "util/integrity.h"

static _Noreturn void
die(const char *what, sqlite3 *db)
{
	fprintf(stderr, "ri-rechain: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
	exit(1);
}

static void
exec(sqlite3 *db, const char *sql)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		die(sql, db);
}

int
main(int argc, char **argv)
{
	const char *path, *drop = NULL, *payload = NULL;
	int64_t pseq = 0, sseq = 0, to_shard = -1;
	sqlite3 *db = NULL;
	sqlite3_stmt *st, *up;
	/* each shard's chain: its newest hash so far */
	static unsigned char prev[RI_SHARDS_MAX][RI_HASH_LEN];
	unsigned char inst[RI_INSTANCE_LEN];
	char *triggers = NULL;
	size_t tlen = 0;

	if (argc < 2)
		return 64;
	path = argv[1];
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--drop") == 0 && i + 1 < argc)
			drop = argv[++i];
		else if (strcmp(argv[i], "--payload") == 0 && i + 2 < argc) {
			pseq = strtoll(argv[++i], NULL, 10);
			payload = argv[++i];
		} else if (strcmp(argv[i], "--shard") == 0 && i + 2 < argc) {
			sseq = strtoll(argv[++i], NULL, 10);
			to_shard = strtoll(argv[++i], NULL, 10);
			if (to_shard < 0 || to_shard >= RI_SHARDS_MAX)
				return 64;
		} else
			return 64;
	}
	if (sodium_init() < 0 || sqlite3_open(path, &db) != SQLITE_OK)
		die("open", db);
	if (sqlite3_prepare_v2(db, "SELECT v FROM meta WHERE k = 'instance_id'", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW ||
	    sodium_hex2bin(inst, sizeof inst, (const char *)sqlite3_column_text(st, 0), 32, NULL, NULL, NULL) != 0)
		die("instance id", db);
	sqlite3_finalize(st);
	/* the triggers as they are, to put back */
	if (sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_schema WHERE type = 'trigger'", -1, &st, NULL) != SQLITE_OK)
		die("triggers", db);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		char *grown = realloc(triggers, tlen + strlen(t) + 3);
		if (grown == NULL)
			die("out of memory", NULL);
		triggers = grown;
		memcpy(triggers + tlen, t, strlen(t));
		tlen += strlen(t);
		triggers[tlen++] = ';';
		triggers[tlen] = '\0';
	}
	sqlite3_finalize(st);
	exec(db, "BEGIN; DROP TRIGGER IF EXISTS records_append_only_update;"
	    " DROP TRIGGER IF EXISTS records_append_only_delete;");
	if (payload != NULL) {
		if (sqlite3_prepare_v2(db, "UPDATE records SET payload = ? WHERE seq = ?", -1, &st, NULL) != SQLITE_OK)
			die("payload", db);
		sqlite3_bind_text(st, 1, payload, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 2, pseq);
		if (sqlite3_step(st) != SQLITE_DONE)
			die("payload", db);
		sqlite3_finalize(st);
	}
	if (to_shard >= 0) {
		if (sqlite3_prepare_v2(db, "UPDATE records SET shard = ? WHERE seq = ?", -1, &st, NULL) != SQLITE_OK)
			die("shard", db);
		sqlite3_bind_int64(st, 1, to_shard);
		sqlite3_bind_int64(st, 2, sseq);
		if (sqlite3_step(st) != SQLITE_DONE || sqlite3_changes(db) != 1)
			die("shard", db);
		sqlite3_finalize(st);
	}
	if (drop != NULL) {
		if (sqlite3_prepare_v2(db, "DELETE FROM records WHERE action_ref = ?", -1, &st, NULL) != SQLITE_OK)
			die("drop", db);
		sqlite3_bind_text(st, 1, drop, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(st) != SQLITE_DONE)
			die("drop", db);
		sqlite3_finalize(st);
	}
	/* renumber: old seq -> new seq, kept in a temp table for the back
	 * pointers */
	exec(db, "CREATE TEMP TABLE remap(old INTEGER PRIMARY KEY, new INTEGER NOT NULL);"
	    " INSERT INTO remap SELECT seq, row_number() OVER (ORDER BY seq) FROM records;"
	    " UPDATE records SET seq = -seq;"
	    " UPDATE records SET seq = (SELECT new FROM remap WHERE old = -records.seq),"
	    "   act_prev = ifnull((SELECT new FROM remap WHERE old = records.act_prev), 0),"
	    "   inv_prev = ifnull((SELECT new FROM remap WHERE old = records.inv_prev), 0);");
	/* every digest and chain hash again, in order, each record linked to
	 * its own shard's newest */
	for (int s = 0; s < RI_SHARDS_MAX; s++)
		ri_genesis_shard(inst, s, prev[s]);
	if (sqlite3_prepare_v2(db, "SELECT seq, event_id, action_ref, kind, act_key, invocation_id, actor_ref,"
	    " attestation_id, recorded_at, retention_until, role, act_prev, inv_prev, payload, salt, digest, shard"
	    " FROM records ORDER BY seq", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "UPDATE records SET digest = ?, hash = ? WHERE seq = ?", -1, &up, NULL) != SQLITE_OK)
		die("rechain", db);
	int64_t last = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		unsigned char digest[RI_HASH_LEN], hash[RI_HASH_LEN];
		if (sqlite3_column_type(st, 13) != SQLITE_NULL && sqlite3_column_bytes(st, 14) == RI_SALT_LEN)
			ri_payload_digest(sqlite3_column_blob(st, 14), (const char *)sqlite3_column_text(st, 13),
			    (size_t)sqlite3_column_bytes(st, 13), digest);
		else
			memcpy(digest, sqlite3_column_blob(st, 15), RI_HASH_LEN);
		struct ri_header h = {
			.instance_id = inst, .seq = sqlite3_column_int64(st, 0),
			.event_id = (const char *)sqlite3_column_text(st, 1),
			.action_ref = (const char *)sqlite3_column_text(st, 2),
			.kind = (const char *)sqlite3_column_text(st, 3),
			.act_key = (const char *)sqlite3_column_text(st, 4),
			.invocation_id = (const char *)sqlite3_column_text(st, 5),
			.actor_ref = (const char *)sqlite3_column_text(st, 6),
			.attestation_id = (const char *)sqlite3_column_text(st, 7),
			.recorded_at = sqlite3_column_int64(st, 8),
			.retention_until = sqlite3_column_type(st, 9) == SQLITE_NULL ? RI_NONE : sqlite3_column_int64(st, 9),
			.role = sqlite3_column_int(st, 10),
			.act_prev = sqlite3_column_int64(st, 11),
			.inv_prev = sqlite3_column_int64(st, 12),
			.payload_digest = digest, .shard = sqlite3_column_int(st, 16),
		};
		if (h.shard < 0 || h.shard >= RI_SHARDS_MAX)
			die("a record's shard out of range", NULL);
		ri_record_hash(prev[h.shard], &h, hash);
		memcpy(prev[h.shard], hash, RI_HASH_LEN);
		sqlite3_reset(up);
		sqlite3_bind_blob(up, 1, digest, RI_HASH_LEN, SQLITE_TRANSIENT);
		sqlite3_bind_blob(up, 2, hash, RI_HASH_LEN, SQLITE_TRANSIENT);
		sqlite3_bind_int64(up, 3, h.seq);
		if (sqlite3_step(up) != SQLITE_DONE)
			die("update", db);
		last = h.seq;
	}
	sqlite3_finalize(st);
	sqlite3_finalize(up);
	if (triggers != NULL)
		exec(db, triggers);
	exec(db, "COMMIT");
	sqlite3_close(db);
	free(triggers);
	printf("%lld\n", (long long)last);
	return 0;
}
