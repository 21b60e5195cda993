/*
 * fuzz_record.c -- libFuzzer harness for journal record verification
 * (lib/store/sqlite/store_sqlite.c: read_record, range_read, traverse, head).
 *
 * Once per process: a temp dir, an ri.json like tests/lib/common.bash
 * writes, a journal made by ri_sqlite_create, two actors registered through
 * the store ops, a few records of two kinds appended with record_action
 * (intents, outcomes, a refusal, a resolution that supersedes, a recovery
 * intent), a purge and a seal -- then the append-only triggers dropped, as
 * an attacker with file access would, and the file kept in memory as the
 * pristine journal.  Its verified records are the oracle.
 *
 * Each input: byte 0 is flags (FL_* below: without the key, read-only, the
 * page size, whether each invocation's and each act's scope is read), then
 * groups of 4 bytes (row, column+op, offset, byte), each one mutation of
 * the records table (or, for the structural op, a row delete / copy / seq
 * swap, a node of the tree of scope heads deleted or replaced, or the
 * journal head edited) applied through the sqlite3 API to a fresh copy
 * of the pristine file.  The journal is then reopened with ri_sqlite_open
 * and read every way there is.
 *
 * Asserts: no crash, no sanitizer report; every read answers OK,
 * NOT_KNOWN, PURGED or INTEGRITY (the traversal and the head: OK or
 * INTEGRITY); and never a wrong record silently -- every record a read
 * returns, and every row the traversal finds no problem with, is the
 * pristine record of that seq (or that record purged, where its retention
 * had ended); with the key, a read that completes without INTEGRITY saw
 * exactly the records of its scope.
 *
 * FZ_DEBUG=1 build/fuzz/fuzz_record CRASH prints every page a read saw.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>
#include <sqlite3.h>

#include "util/integrity.h"
#include "protocol/instance.h"
#include "protocol/proto.h"
#include "store/sqlite/store_sqlite.h"

#define FZ_ASSERT(c, ...) do {                                          \
	if (!(c)) {                                                     \
		fprintf(stderr, "fuzz_record: assertion failed: %s: ", #c); \
		fprintf(stderr, __VA_ARGS__);                           \
		fputc('\n', stderr);                                    \
		abort();                                                \
	}                                                               \
} while (0)

#define T0 1795946400000LL              /* 2026-11-29T10:00:00Z, as common.bash */
#define SEC 1000LL
#define HOUR 3600000LL
#define DAY 86400000LL
#define READ_AT (T0 + 3 * DAY)          /* after the ledger's 1d retention */
#define MAX_REC 64
#define MAX_MUT 32
#define VALBUF 4096

/* byte 0 of an input */
#define FL_NOKEY 0x01u                  /* chain-only: ri_sqlite_open(RI_NO_KEY) */
#define FL_READONLY 0x02u               /* RI_READONLY */
                                        /* 0x1c: page size 1..7, 0: the default */
#define FL_INVS 0x20u                   /* also each invocation's scope, ri_inv_read */
#define FL_ACTS 0x40u                   /* also each act's scope, ri_read_invocation */

static const char *const cols[] = {
	"seq", "event_id", "action_ref", "kind", "act_key", "invocation_id", "actor_ref",
	"attestation_id", "recorded_at", "retention_until", "role", "act_prev", "inv_prev",
	"payload", "salt", "digest", "hash", "mac"
};
#define NCOLS (sizeof cols / sizeof cols[0])

static char dir[512], config_path[600], journal_path[600], key_path[600];
static bool debug;                      /* $FZ_DEBUG: print every page read */
static struct ri_config *cfg;
static unsigned char *key;
static size_t keylen;
static unsigned char *pristine;         /* the journal file's bytes */
static size_t pristine_len;

/* the oracle: the pristine journal's verified records, by seq 1..n */
static struct ri_record prec[MAX_REC + 1];
static size_t n_prec;
static int64_t head_seq;
static unsigned char head_hash[RI_HASH_LEN];
static char *invs[MAX_REC];             /* distinct invocation ids */
static size_t n_invs;
static struct { char *kind, *act_key; } acts[MAX_REC];
static size_t n_acts;

/* ---- set-up ---------------------------------------------------------- */

static void
now_at(ri_ms t)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%lld", (long long)t);
	setenv("RI_NOW", buf, 1);
}

static void
write_file(const char *path, const void *buf, size_t n, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	FZ_ASSERT(fd >= 0, "open %s: %s", path, strerror(errno));
	FZ_ASSERT(write(fd, buf, n) == (ssize_t)n, "write %s: %s", path, strerror(errno));
	FZ_ASSERT(fchmod(fd, mode) == 0 && close(fd) == 0, "close %s", path);
}

static void
unlink_sidecars(void)
{
	char p[700];

	snprintf(p, sizeof p, "%s-wal", journal_path);
	unlink(p);
	snprintf(p, sizeof p, "%s-shm", journal_path);
	unlink(p);
	snprintf(p, sizeof p, "%s-journal", journal_path);
	unlink(p);
}

static void
cleanup(void)
{
	if (dir[0] == '\0')
		return;
	unlink_sidecars();
	unlink(journal_path);
	unlink(key_path);
	unlink(config_path);
	rmdir(dir);
}

static void
append(struct ri_store *st, const char *cred, const char *actor, const char *action_ref,
    const char *act_key, const char *inv, const char *data)
{
	json_error_t je;
	struct ri_append a = { .action_ref = action_ref, .act_key = act_key, .invocation_id = inv,
		.actor_ref = actor, .credential = cred };
	struct ri_appended out;
	int rc;

	a.data = json_loads(data, 0, &je);
	FZ_ASSERT(a.data != NULL, "seed payload %s: %s", data, je.text);
	rc = st->ops->record_action(st, &a, &out);
	FZ_ASSERT(rc == RI_ST_OK, "record_action %s: %d %s", action_ref, rc, st->ops->error(st)->msg);
	json_decref(a.data);
}

static int
keep_record(const struct ri_record *r, unsigned problems, void *arg)
{
	struct ri_record *c;

	(void)arg;
	FZ_ASSERT(problems == 0, "the pristine journal has a problem at seq %lld: %#x",
	    (long long)r->seq, problems);
	FZ_ASSERT(r->seq == (int64_t)n_prec + 1 && n_prec < MAX_REC, "pristine seq %lld", (long long)r->seq);
	c = &prec[++n_prec];
	*c = *r;
	c->action_ref = ri_strdup(r->action_ref);
	c->kind = ri_strdup(r->kind);
	c->act_key = ri_strdup(r->act_key);
	c->invocation_id = r->invocation_id ? ri_strdup(r->invocation_id) : NULL;
	c->actor_ref = ri_strdup(r->actor_ref);
	c->payload = json_incref(r->payload);
	if (r->invocation_id != NULL) {
		size_t i;
		for (i = 0; i < n_invs && strcmp(invs[i], r->invocation_id) != 0; i++)
			;
		if (i == n_invs)
			invs[n_invs++] = ri_strdup(r->invocation_id);
	}
	{
		size_t i;
		for (i = 0; i < n_acts && (strcmp(acts[i].kind, r->kind) != 0 ||
		    strcmp(acts[i].act_key, r->act_key) != 0); i++)
			;
		if (i == n_acts) {
			acts[n_acts].kind = ri_strdup(r->kind);
			acts[n_acts].act_key = ri_strdup(r->act_key);
			n_acts++;
		}
	}
	return 0;
}

static void
fz_init(void)
{
	const char *base = getenv("TMPDIR");
	char text[4096], hex[2 * RI_INSTANCE_LEN + 1], alice[128], svc[128], inv[4][RI_ID_LEN + 1];
	char data[512];
	unsigned char raw[48], pk[32], sk[64];
	ri_err err = { 0 };
	struct ri_store *st;
	struct ri_appended ap;
	int64_t purged;
	sqlite3 *db;
	int rc;

	FZ_ASSERT(sodium_init() >= 0, "sodium_init");
	debug = getenv("FZ_DEBUG") != NULL;
	unsetenv("RI_FAULT");
	if (base == NULL || *base == '\0')
		base = "/tmp";
	snprintf(dir, sizeof dir, "%s/ri-fuzz-record-XXXXXX", base);
	FZ_ASSERT(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
	atexit(cleanup);
	snprintf(config_path, sizeof config_path, "%s/ri.json", dir);
	snprintf(journal_path, sizeof journal_path, "%s/journal.db", dir);
	snprintf(key_path, sizeof key_path, "%s/journal.key", dir);

	/* ri.json as tests/lib/common.bash writes it ("fast" shape), with a
	 * second kind whose retention outlives the reads */
	snprintf(text, sizeof text,
	    "{ \"journal\": \"journal.db\", \"findings\": \"findings.db\",\n"
	    "  \"integrity_key_file\": \"journal.key\", \"seal_key_file\": \"seal.key\",\n"
	    "  \"clock\": \"env\", \"fault_injection\": false,\n"
	    "  \"instance\": { \"clock_offset_allowance\": \"100ms\", \"reconciliation_cadence\": \"10s\",\n"
	    "    \"run_bound\": \"5s\", \"closure_latency\": \"1500ms\", \"journal_write_bound\": \"300ms\",\n"
	    "    \"read_bound\": \"200ms\", \"compensation_window\": \"60s\", \"intent_candidates_cap\": 16,\n"
	    "    \"read_cap\": 20, \"reference_length_cap\": 256, \"payload_cap\": 65536,\n"
	    "    \"journal_fence\": \"declared\" },\n"
	    "  \"kinds\": {\n"
	    "    \"ledger\": { \"outcomes\": [\"disclosed\"], \"repeatable\": true, \"completion_bound\": \"3s\",\n"
	    "      \"commit_round_trip\": \"100ms\", \"probe_round_trip\": \"200ms\", \"retention_period\": \"1d\",\n"
	    "      \"commit_fence\": \"none\", \"pairing_datum\": \"nonce\", \"outcome_envelope\": 4096,\n"
	    "      \"retry_terminus\": \"lease\", \"probe\": [\"/bin/true\"],\n"
	    "      \"service_identity\": { \"actor_ref\": \"ledger-reconciler\", \"credential_file\": \"reconciler.cred\" } },\n"
	    "    \"vault\": { \"outcomes\": [\"stored\", \"shredded\"], \"repeatable\": false, \"completion_bound\": \"3s\",\n"
	    "      \"commit_round_trip\": \"100ms\", \"probe_round_trip\": \"200ms\", \"retention_period\": \"400d\",\n"
	    "      \"commit_fence\": \"declared\", \"pairing_datum\": \"now\", \"outcome_envelope\": 4096,\n"
	    "      \"retry_terminus\": { \"counted\": 2 }, \"probe\": [\"/bin/true\"], \"service_identity\": null }\n"
	    "  }\n}\n");
	write_file(config_path, text, strlen(text), 0644);
	randombytes_buf(raw, sizeof raw);
	write_file(key_path, raw, sizeof raw, 0600);
	FZ_ASSERT(ri_config_load(config_path, &cfg, &err) == RI_OK, "config: %s", err.msg);
	FZ_ASSERT(ri_key_load(cfg->integrity_key_file, &key, &keylen, &err) == RI_OK, "key: %s", err.msg);

	/* the journal: create, register, append */
	now_at(T0);
	FZ_ASSERT(ri_sqlite_create(cfg, key, keylen, hex, &err) == RI_OK, "create: %s", err.msg);
	FZ_ASSERT(ri_sqlite_open(cfg, key, keylen, RI_NO_WITNESS, &st, &err) == RI_OK, "open: %s", err.msg);
	FZ_ASSERT(st->ops->actor_add(st, "alice", false, alice) == RI_ST_OK, "actor alice");
	FZ_ASSERT(st->ops->actor_add(st, "ledger-reconciler", true, svc) == RI_ST_OK, "actor svc");
	for (int i = 0; i < 4; i++)
		ri_mint_id("inv_", inv[i]);

	now_at(T0 + SEC);
	snprintf(data, sizeof data, "{\"invocation_id\":\"%s\",\"kind\":\"ledger\",\"act_key\":\"k1\","
	    "\"data\":{\"amount\":12.5,\"memo\":\"caf\\u00e9 \\ud83d\\ude00\",\"n\":[1,2,{\"x\":null}]}}", inv[0]);
	append(st, alice, "alice", "ledger.intended", "k1", inv[0], data);
	now_at(T0 + 2 * SEC);
	append(st, alice, "alice", "ledger.disclosed", "k1", inv[0], "{\"data\":{\"receipt\":\"r-1\"}}");
	now_at(T0 + 3 * SEC);
	snprintf(data, sizeof data, "{\"invocation_id\":\"%s\",\"kind\":\"vault\",\"act_key\":\"k2\","
	    "\"data\":{\"big\":9007199254740993,\"neg\":-1e308}}", inv[1]);
	append(st, alice, "alice", "vault.intended", "k2", inv[1], data);
	now_at(T0 + 4 * SEC);
	append(st, alice, "alice", "vault.refused", "k2", inv[1],
	    "{\"reason\":\"declined\",\"constituent_code\":402}");
	/* a day later: a ledger intent whose retention ends before the reads,
	 * escalated by the sweep and resolved by an operator */
	now_at(T0 + DAY + HOUR);
	snprintf(data, sizeof data, "{\"invocation_id\":\"%s\",\"kind\":\"ledger\",\"act_key\":\"k1\","
	    "\"data\":{}}", inv[2]);
	append(st, alice, "alice", "ledger.intended", "k1", inv[2], data);
	now_at(T0 + DAY + HOUR + 30 * SEC);
	append(st, svc, "ledger-reconciler", "ledger.recovery_intended", "k1", inv[2], "{\"recovery\":true}");
	now_at(T0 + DAY + HOUR + 40 * SEC);
	append(st, svc, "ledger-reconciler", "ledger.escalated", "k1", inv[2],
	    "{\"candidates\":[\"a\",\"b\"],\"cause\":\"undecidable\"}");
	/* the purge destroys the first ledger act's payloads (audit.purged) */
	now_at(T0 + 2 * DAY);
	FZ_ASSERT(st->ops->purge(st, T0 + 2 * DAY, &purged) == RI_ST_OK && purged == 2,
	    "purge: %lld", (long long)purged);
	now_at(T0 + 2 * DAY + SEC);
	append(st, alice, "alice", "ledger.disclosed", "k1", inv[2],
	    "{\"data\":{},\"resolved_by\":\"alice\",\"supersedes\":\"evt_00000000000000000000000000000000\"}");
	snprintf(data, sizeof data, "{\"invocation_id\":\"%s\",\"kind\":\"vault\",\"act_key\":\"a \\\"k\\\" \\u00e9\","
	    "\"data\":{\"deep\":[[[[[[[[[[\"x\"]]]]]]]]]]}}", inv[3]);
	/* an act key with a quote, a space and non-ASCII */
	append(st, alice, "alice", "vault.intended", "a \"k\" \xc3\xa9", inv[3], data);
	now_at(T0 + 2 * DAY + 2 * SEC);
	crypto_sign_keypair(pk, sk);
	FZ_ASSERT(st->ops->seal(st, sk, NULL, &ap) == RI_ST_OK, "seal: %s", st->ops->error(st)->msg);
	sodium_memzero(sk, sizeof sk);
	now_at(T0 + 2 * DAY + 3 * SEC);
	append(st, alice, "alice", "vault.stored", "a \"k\" \xc3\xa9", inv[3], "{\"data\":{\"id\":7}}");
	st->ops->close(st);

	/* drop the append-only triggers once, as the attacker would, and fold
	 * the WAL into the file */
	FZ_ASSERT(sqlite3_open_v2(journal_path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK, "sqlite open");
	rc = sqlite3_exec(db, "DROP TRIGGER records_append_only_delete;"
	    " DROP TRIGGER records_append_only_update; PRAGMA wal_checkpoint(TRUNCATE);", NULL, NULL, NULL);
	FZ_ASSERT(rc == SQLITE_OK, "drop triggers: %s", sqlite3_errmsg(db));
	sqlite3_close(db);
	unlink_sidecars();
	pristine = (unsigned char *)ri_slurp(journal_path, 64u << 20, &pristine_len);
	FZ_ASSERT(pristine != NULL && pristine_len > 0, "slurp %s", journal_path);

	/* the oracle: every record, verified */
	now_at(READ_AT);
	FZ_ASSERT(ri_sqlite_open(cfg, key, keylen, RI_READONLY | RI_INSPECT, &st, &err) == RI_OK, "reopen: %s",
	    err.msg);
	FZ_ASSERT(st->ops->traverse(st, keep_record, NULL) == RI_ST_OK, "pristine traverse");
	FZ_ASSERT(st->ops->head(st, &head_seq, head_hash) == RI_ST_OK && head_seq == (int64_t)n_prec,
	    "pristine head %lld of %zu", (long long)head_seq, n_prec);
	st->ops->close(st);
	unlink_sidecars();
	FZ_ASSERT(n_prec >= 10 && n_invs == 4, "pristine: %zu records, %zu invocations", n_prec, n_invs);
}

/* ---- mutations --------------------------------------------------------- */

struct val {
	int type;
	unsigned char b[VALBUF];
	size_t n;
};

static int64_t n_rows = -1;             /* rows now; -1: count them again */

/* The seq of row number pick (mod the rows), in seq order. */
static bool
row_seq(sqlite3 *db, unsigned pick, int64_t *seq)
{
	sqlite3_stmt *st;
	int64_t n;
	bool ok = false;

	if (n_rows < 0) {
		if (sqlite3_prepare_v2(db, "SELECT count(*) FROM records", -1, &st, NULL) != SQLITE_OK)
			return false;
		n_rows = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
		sqlite3_finalize(st);
	}
	n = n_rows;
	if (n <= 0)
		return false;
	if (sqlite3_prepare_v2(db, "SELECT seq FROM records ORDER BY seq LIMIT 1 OFFSET ?", -1, &st,
	    NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_int64(st, 1, (int64_t)(pick % (unsigned)n));
	if (sqlite3_step(st) == SQLITE_ROW) {
		*seq = sqlite3_column_int64(st, 0);
		ok = true;
	}
	sqlite3_finalize(st);
	return ok;
}

static bool
get_val(sqlite3 *db, int64_t seq, const char *col, struct val *v)
{
	char sql[128];
	sqlite3_stmt *st;
	bool ok = false;

	snprintf(sql, sizeof sql, "SELECT %s FROM records WHERE seq = ?", col);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_int64(st, 1, seq);
	if (sqlite3_step(st) == SQLITE_ROW) {
		v->type = sqlite3_column_type(st, 0);
		v->n = 0;
		if (v->type == SQLITE_INTEGER || v->type == SQLITE_FLOAT) {
			int64_t i = v->type == SQLITE_INTEGER ? sqlite3_column_int64(st, 0) : 0;
			double d = sqlite3_column_double(st, 0);
			if (v->type == SQLITE_FLOAT)
				memcpy(&i, &d, sizeof i);
			for (int k = 0; k < 8; k++)
				v->b[k] = (unsigned char)((uint64_t)i >> (8 * k));
			v->n = 8;
		} else if (v->type == SQLITE_TEXT || v->type == SQLITE_BLOB) {
			const void *p = v->type == SQLITE_TEXT ? (const void *)sqlite3_column_text(st, 0) :
			    sqlite3_column_blob(st, 0);
			size_t n = (size_t)sqlite3_column_bytes(st, 0);
			v->n = n < VALBUF ? n : VALBUF - 1;
			if (v->n > 0 && p != NULL)
				memcpy(v->b, p, v->n);
		}
		ok = true;
	}
	sqlite3_finalize(st);
	return ok;
}

static void
set_val(sqlite3 *db, int64_t seq, const char *col, const struct val *v)
{
	char sql[128];
	sqlite3_stmt *st;
	uint64_t u = 0;

	snprintf(sql, sizeof sql, "UPDATE records SET %s = ? WHERE seq = ?", col);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return;
	for (size_t k = 0; k < 8 && k < v->n; k++)
		u |= (uint64_t)v->b[k] << (8 * k);
	switch (v->type) {
	case SQLITE_INTEGER:
		sqlite3_bind_int64(st, 1, (int64_t)u);
		break;
	case SQLITE_FLOAT: {
		double d;
		memcpy(&d, &u, sizeof d);
		sqlite3_bind_double(st, 1, d);
		break;
	}
	case SQLITE_TEXT:
		sqlite3_bind_text(st, 1, (const char *)v->b, (int)v->n, SQLITE_TRANSIENT);
		break;
	case SQLITE_BLOB:
		sqlite3_bind_blob(st, 1, v->b, (int)v->n, SQLITE_TRANSIENT);
		break;
	default:
		sqlite3_bind_null(st, 1);
		break;
	}
	sqlite3_bind_int64(st, 2, seq);
	(void)sqlite3_step(st);         /* a constraint may refuse it: so be it */
	sqlite3_finalize(st);
}

static void
exec_ii(sqlite3 *db, const char *sql, int64_t a, int64_t b)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, a);
	if (sqlite3_bind_parameter_count(st) >= 2)
		sqlite3_bind_int64(st, 2, b);
	(void)sqlite3_step(st);
	sqlite3_finalize(st);
}

#define NODE_AT "(SELECT id FROM nodes ORDER BY id LIMIT 1 OFFSET" \
	" (?2 % max(1, (SELECT count(*) FROM nodes))))"

/* The structural op: rows and heads. */
static void
structural(sqlite3 *db, int64_t seq, uint8_t b0, uint8_t b2, uint8_t b3)
{
	switch (b2 % 6) {
	case 0:         /* a deleted row */
		exec_ii(db, "DELETE FROM records WHERE seq = ?1", seq, 0);
		n_rows = -1;
		break;
	case 1:         /* a copied row past the end (or before the start) */
		exec_ii(db, "INSERT INTO records(" "seq, event_id, action_ref, kind, act_key, invocation_id,"
		    " actor_ref, attestation_id, recorded_at, retention_until, role, act_prev, inv_prev,"
		    " payload, salt, digest, hash, mac, shard) SELECT CASE WHEN ?2 & 1 THEN -(?2 >> 1)"
		    " ELSE (SELECT max(seq) FROM records) + 1 + (?2 >> 1) END, event_id || 'x', action_ref,"
		    " kind, act_key, invocation_id, actor_ref, attestation_id, recorded_at, retention_until,"
		    " role, act_prev, inv_prev, payload, salt, digest, hash, mac, shard FROM records WHERE seq = ?1",
		    seq, b3 & 7);
		n_rows = -1;
		break;
	case 2:         /* a deleted node of the tree of scope heads (a scope's head) */
		exec_ii(db, "DELETE FROM nodes WHERE id = " NODE_AT " AND ?1 = ?1", 0, b3);
		break;
	case 3:         /* the journal head moved */
		exec_ii(db, "UPDATE heads SET last_seq = last_seq + ?1 WHERE ?2 = ?2", (int64_t)(b0 & 7) - 4, b3);
		break;
	case 4:         /* two rows trade places */
		{
			int64_t other;
			sqlite3 *d = db;
			if (!row_seq(d, b3, &other) || other == seq)
				break;
			exec_ii(d, "UPDATE records SET seq = -1000000 WHERE seq = ?1", seq, 0);
			exec_ii(d, "UPDATE records SET seq = ?1 WHERE seq = ?2", seq, other);
			exec_ii(d, "UPDATE records SET seq = ?1 WHERE seq = -1000000", other, 0);
		}
		break;
	case 5:         /* a node's body borrowed from another node (an older or a foreign head) */
		exec_ii(db, "UPDATE nodes SET body = (SELECT body FROM nodes ORDER BY id LIMIT 1 OFFSET"
		    " (?1 % max(1, (SELECT count(*) FROM nodes)))) WHERE id = " NODE_AT, b0, b3);
		break;
	}
}

/*
 * One mutation: m[0] picks the row (in seq order, mod the rows), m[1] the
 * column (mod 18) and the op ((m[1] / 18) mod 8), m[2] an offset, m[3] a
 * byte.  Ops: 0 flip bits, 1 set a byte, 2 truncate, 3 insert a byte,
 * 4 NULL, 5 another storage class with the same bytes, 6 the column of
 * another row, 7 structural (m[2] mod 6: delete the row; copy it past the
 * end or to seq <= 0; delete a head; move a head; swap two rows' seqs;
 * borrow another head's MAC).  A constraint that refuses an edit is fine.
 */
static void
mutate(sqlite3 *db, const uint8_t m[4])
{
	const char *col = cols[m[1] % NCOLS];
	unsigned op = (m[1] / NCOLS) % 8;
	struct val v;
	int64_t seq, other;
	size_t at;

	if (!row_seq(db, m[0], &seq))
		return;
	if (op == 7) {
		structural(db, seq, m[0], m[2], m[3]);
		return;
	}
	if (!get_val(db, seq, col, &v))
		return;
	switch (op) {
	case 0:         /* flip bits */
		if (v.n == 0)
			return;
		v.b[m[2] % v.n] ^= m[3] ? m[3] : 1;
		break;
	case 1:         /* set a byte */
		if (v.n == 0) {
			v.n = 1;
			if (v.type == SQLITE_NULL)
				v.type = SQLITE_BLOB;
		}
		v.b[m[2] % v.n] = m[3];
		break;
	case 2:         /* truncate */
		v.n = m[2] % (v.n + 1);
		break;
	case 3:         /* insert a byte (a NUL, a quote, a high byte ...) */
		if (v.n + 1 >= VALBUF)
			return;
		at = m[2] % (v.n + 1);
		memmove(v.b + at + 1, v.b + at, v.n - at);
		v.b[at] = m[3];
		v.n++;
		if (v.type == SQLITE_NULL)
			v.type = SQLITE_BLOB;
		break;
	case 4:         /* NULL */
		v.type = SQLITE_NULL;
		break;
	case 5:         /* another storage class, the same bytes */
		switch (v.type) {
		case SQLITE_INTEGER: {
			uint64_t u = 0;
			for (int k = 0; k < 8; k++)
				u |= (uint64_t)v.b[k] << (8 * k);
			v.n = (size_t)snprintf((char *)v.b, VALBUF, "%lld", (long long)u);
			v.type = m[3] & 1 ? SQLITE_TEXT : SQLITE_FLOAT;
			if (v.type == SQLITE_FLOAT) {
				double d = (double)(int64_t)u + (m[3] >> 1) / 256.0;
				memcpy(v.b, &d, 8);
				v.n = 8;
			}
			break;
		}
		case SQLITE_FLOAT:
			v.type = SQLITE_INTEGER;
			break;
		case SQLITE_TEXT:
			v.type = SQLITE_BLOB;
			break;
		case SQLITE_BLOB:
			v.type = SQLITE_TEXT;
			break;
		default:
			v.type = SQLITE_INTEGER;
			memset(v.b, 0, 8);
			v.b[0] = m[3];
			v.n = 8;
			break;
		}
		break;
	case 6:         /* the same column of another row */
		if (!row_seq(db, m[3], &other) || !get_val(db, other, col, &v))
			return;
		break;
	}
	set_val(db, seq, col, &v);
}

/* ---- the oracle -------------------------------------------------------- */

static bool
same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The record a read returned (or the traversal passed) is the pristine
 * record of its seq -- or that record purged, where its retention ended. */
static void
check_rec(const struct ri_record *r, const char *where)
{
	const struct ri_record *p;

	FZ_ASSERT(r->seq >= 1 && r->seq <= (int64_t)n_prec,
	    "%s: seq %lld (%s) is no record of the pristine journal", where, (long long)r->seq, r->event_id);
	p = &prec[r->seq];
	FZ_ASSERT(strcmp(r->event_id, p->event_id) == 0, "%s: seq %lld event_id %s, pristine %s",
	    where, (long long)r->seq, r->event_id, p->event_id);
	FZ_ASSERT(same_str(r->action_ref, p->action_ref) && same_str(r->kind, p->kind) &&
	    same_str(r->act_key, p->act_key) && same_str(r->invocation_id, p->invocation_id) &&
	    same_str(r->actor_ref, p->actor_ref) && strcmp(r->attestation_id, p->attestation_id) == 0,
	    "%s: seq %lld: a reference differs from the pristine record", where, (long long)r->seq);
	FZ_ASSERT(r->recorded_at == p->recorded_at && r->retention_until == p->retention_until &&
	    r->role == p->role, "%s: seq %lld: a time or the role differs", where, (long long)r->seq);
	FZ_ASSERT(memcmp(r->hash, p->hash, RI_HASH_LEN) == 0, "%s: seq %lld: hash differs", where,
	    (long long)r->seq);
	if (p->purged) {
		FZ_ASSERT(r->purged && r->payload == NULL, "%s: seq %lld: a purged payload came back",
		    where, (long long)r->seq);
	} else if (r->purged) {
		FZ_ASSERT(p->retention_until != RI_NONE && p->retention_until <= READ_AT && r->payload == NULL,
		    "%s: seq %lld: payload gone before its retention ended, read as purged", where,
		    (long long)r->seq);
	} else {
		FZ_ASSERT(r->payload != NULL && json_equal(r->payload, p->payload),
		    "%s: seq %lld: payload differs from the pristine record", where, (long long)r->seq);
	}
}

static bool
in_scope(const struct ri_record *p, const struct ri_query *q)
{
	if (q->invocation_id != NULL)
		return same_str(p->invocation_id, q->invocation_id);
	if (q->kind != NULL)
		return strcmp(p->kind, q->kind) == 0 && strcmp(p->act_key, q->act_key) == 0;
	return true;
}

static void
check_error(struct ri_store *st, int rc, const char *where)
{
	const struct ri_store_error *e = st->ops->error(st);

	FZ_ASSERT(rc == RI_ST_OK || rc == RI_ST_INTEGRITY, "%s answered %d: %s", where, rc, e->msg);
	if (rc == RI_ST_INTEGRITY)
		FZ_ASSERT(memchr(e->msg, '\0', sizeof e->msg) != NULL && e->msg[0] != '\0',
		    "%s: integrity without a message", where);
}

/* Page through one scope, ascending or descending; with the key, a read
 * that completes holds exactly the scope's records. */
static void
read_scope(struct ri_store *st, struct ri_query q, bool keyed)
{
	int64_t seen[MAX_REC * 2 + 4];
	size_t n_seen = 0;
	bool complete = false;
	const char *where = q.descending ? "range_read desc" : "range_read asc";

	q.from = 0;
	for (int page_no = 0; page_no < 4 * MAX_REC + 8; page_no++) {
		struct ri_records page;
		int rc = st->ops->range_read(st, &q, &page);

		check_error(st, rc, where);
		if (rc != RI_ST_OK) {
			FZ_ASSERT(page.n == 0 && page.v == NULL, "%s: records left on INTEGRITY", where);
			return;
		}
		FZ_ASSERT(page.n <= (q.limit ? q.limit : 256), "%s: page of %zu", where, page.n);
		if (debug) {
			fprintf(stderr, "%s inv=%s act=%s/%s limit=%zu from=%lld: more=%d next=%lld:", where,
			    q.invocation_id ? q.invocation_id : "-", q.kind ? q.kind : "-",
			    q.act_key ? q.act_key : "-", q.limit, (long long)q.from, page.more, (long long)page.next);
			for (size_t z = 0; z < page.n; z++)
				fprintf(stderr, " %lld", (long long)page.v[z].seq);
			fputc('\n', stderr);
		}
		for (size_t i = 0; i < page.n; i++) {
			const struct ri_record *r = &page.v[i];
			check_rec(r, where);
			FZ_ASSERT(in_scope(r, &q), "%s: seq %lld is outside the scope", where, (long long)r->seq);
			if (n_seen > 0)
				FZ_ASSERT(q.descending ? r->seq < seen[n_seen - 1] : r->seq > seen[n_seen - 1],
				    "%s: seq %lld out of order", where, (long long)r->seq);
			FZ_ASSERT(n_seen < sizeof seen / sizeof seen[0], "%s: too many records", where);
			seen[n_seen++] = r->seq;
		}
		bool more = page.more;
		q.from = page.next;
		ri_records_clear(&page);        /* zeroes page: more and next read first */
		if (!more) {
			complete = true;
			break;
		}
	}
	FZ_ASSERT(complete, "%s: the pages never end", where);
	/*
	 * Authenticated absence (issue 11): with the key, a read that completes
	 * without INTEGRITY returned every record of its scope -- a scope whose
	 * head was deleted or whose rows were hidden never reads as empty.
	 */
	if (keyed) {
		size_t k = 0;
		for (size_t s = 1; s <= n_prec; s++) {
			size_t at = q.descending ? n_prec + 1 - s : s;
			if (!in_scope(&prec[at], &q))
				continue;
			FZ_ASSERT(k < n_seen && seen[k] == (int64_t)at,
			    "%s: read completed without INTEGRITY but seq %zu of its scope is missing", where, at);
			k++;
		}
		FZ_ASSERT(k == n_seen, "%s: read completed with extra records", where);
	}
}

struct tv {
	size_t rows;
	unsigned all;
};

static int
each_row(const struct ri_record *r, unsigned problems, void *arg)
{
	struct tv *t = arg;

	t->rows++;
	t->all |= problems;
	if (problems == 0)
		check_rec(r, "traverse (no problem found)");
	return 0;
}

/* ---- the reads ----------------------------------------------------------- */

static bool
pristine_id(const char *id)
{
	for (size_t i = 1; i <= n_prec; i++)
		if (strcmp(prec[i].event_id, id) == 0)
			return true;
	return false;
}

static void
read_all(struct ri_store *st, unsigned flags, char ids[][RI_ID_LEN + 8], size_t n_ids)
{
	bool keyed = !(flags & FL_NOKEY);
	size_t limit = (flags >> 2) & 7;
	struct ri_query q;
	struct ri_record r;
	struct tv t = { 0 };
	int64_t hs;
	unsigned char hh[RI_HASH_LEN];
	int rc;

	/* the traversal */
	rc = st->ops->traverse(st, each_row, &t);
	FZ_ASSERT(rc == RI_ST_OK, "traverse answered %d: %s", rc, st->ops->error(st)->msg);
	if (keyed && t.all == 0)
		FZ_ASSERT(t.rows == n_prec, "traverse found no problem in %zu rows of %zu", t.rows, n_prec);

	/* the head */
	rc = st->ops->head(st, &hs, hh);
	check_error(st, rc, "head");
	if (rc == RI_ST_OK && keyed)
		FZ_ASSERT(hs == head_seq && memcmp(hh, head_hash, RI_HASH_LEN) == 0,
		    "head answered seq %lld, pristine %lld", (long long)hs, (long long)head_seq);

	/* range reads: the journal, each invocation, each act; both ways */
	for (int desc = 0; desc < 2; desc++) {
		memset(&q, 0, sizeof q);
		q.limit = limit;
		q.descending = desc;
		read_scope(st, q, keyed);
		for (size_t i = 0; (flags & FL_INVS) && i < n_invs; i++) {
			q.invocation_id = invs[i];
			read_scope(st, q, keyed);
		}
		q.invocation_id = NULL;
		for (size_t i = 0; (flags & FL_ACTS) && i < n_acts; i++) {
			q.kind = acts[i].kind;
			q.act_key = acts[i].act_key;
			read_scope(st, q, keyed);
		}
	}

	/* read_record: every pristine id, every other id the rows now hold,
	 * one bogus */
	for (size_t i = 0; i <= n_prec + n_ids; i++) {
		const char *id = i == 0 ? "evt_ffffffffffffffffffffffffffffffff" :
		    i <= n_prec ? prec[i].event_id : ids[i - n_prec - 1];
		if (i > n_prec && pristine_id(id))
			continue;
		rc = st->ops->read_record(st, id, &r);
		FZ_ASSERT(rc == RI_ST_OK || rc == RI_ST_PURGED || rc == RI_ST_NOT_KNOWN || rc == RI_ST_INTEGRITY,
		    "read_record %s answered %d: %s", id, rc, st->ops->error(st)->msg);
		if (rc == RI_ST_OK || rc == RI_ST_PURGED) {
			check_rec(&r, "read_record");
			FZ_ASSERT(strcmp(r.event_id, id) == 0,
			    "read_record %s answered %s with the record of %s", id, rc == RI_ST_OK ? "OK" : "PURGED",
			    r.event_id);
			FZ_ASSERT((rc == RI_ST_PURGED) == r.purged, "read_record %s: purged %d but answered %d",
			    id, r.purged, rc);
		}
		ri_record_clear(&r);
	}
}

/* ri-read (read.c) over the same store: each act, newest first. */
static void
read_acts(struct ri_store *st)
{
	struct ri r = { .cfg = cfg, .st = st };

	for (size_t i = 0; i < n_acts; i++) {
		json_t *req, *ans = NULL;
		ri_err err = { 0 };
		int rc;

		if (strcmp(acts[i].kind, "audit") == 0)
			continue;
		req = json_pack("{s:s, s:s}", "kind", acts[i].kind, "act_key", acts[i].act_key);
		FZ_ASSERT(req != NULL, "json_pack");
		rc = ri_read_invocation(&r, req, &ans, &err);
		FZ_ASSERT(rc == RI_OK || rc == RI_NOT_KNOWN || rc == RI_INTEGRITY,
		    "ri_read_invocation (%s, %s) answered %d: %s", acts[i].kind, acts[i].act_key, rc, err.msg);
		FZ_ASSERT(json_is_object(ans), "ri_read_invocation answered %d without an answer", rc);
		json_decref(ans);
		json_decref(req);
	}
}

/* The invocation read of proto.c over the same store. */
static void
read_invocations(struct ri_store *st)
{
	struct ri r = { .cfg = cfg, .st = st };

	for (size_t i = 0; i < n_invs; i++) {
		struct ri_inv inv;
		struct ri_standing sd;
		int rc = ri_inv_read(&r, invs[i], &inv);

		check_error(st, rc, "ri_inv_read");
		if (rc != RI_ST_OK)
			continue;
		for (size_t j = 0; j < inv.all.n; j++)
			check_rec(&inv.all.v[j], "ri_inv_read");
		ri_standing(inv.closings, inv.n_closings, &sd);
		FZ_ASSERT(ri_state_name(sd.state) != NULL, "state");
		ri_inv_free(&inv);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	static char ids[MAX_REC * 2][RI_ID_LEN + 8];
	size_t n_ids = 0;
	unsigned flags = size > 0 ? data[0] : 0;
	bool keyed = !(flags & FL_NOKEY);
	struct ri_store *st;
	ri_err err = { 0 };
	sqlite3 *db;
	sqlite3_stmt *s;
	int rc;

	if (!ready) {
		fz_init();
		ready = true;
	}
	if (size > 1 + 4 * MAX_MUT)
		size = 1 + 4 * MAX_MUT;
	unlink_sidecars();
	write_file(journal_path, pristine, pristine_len, 0600);

	/* the attacker's edits, through a plain connection */
	FZ_ASSERT(sqlite3_open_v2(journal_path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK, "open");
	sqlite3_exec(db, "PRAGMA synchronous=OFF; BEGIN", NULL, NULL, NULL);
	n_rows = -1;
	for (size_t at = 1; at + 4 <= size; at += 4)
		mutate(db, data + at);
	FZ_ASSERT(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK, "commit: %s", sqlite3_errmsg(db));
	/* every event id the rows now hold, as a reader would ask for it */
	if (sqlite3_prepare_v2(db, "SELECT event_id FROM records ORDER BY seq", -1, &s, NULL) == SQLITE_OK) {
		while (sqlite3_step(s) == SQLITE_ROW && n_ids < sizeof ids / sizeof ids[0]) {
			const unsigned char *t = sqlite3_column_text(s, 0);
			if (t != NULL)
				snprintf(ids[n_ids++], sizeof ids[0], "%s", (const char *)t);
		}
		sqlite3_finalize(s);
	}
	sqlite3_close(db);

	/* RI_INSPECT: the attacker dropped the triggers (a schema ri refuses at
	 * open); what is fuzzed here is every record-level check behind it */
	rc = ri_sqlite_open(cfg, keyed ? key : NULL, keyed ? keylen : 0,
	    RI_INSPECT | (keyed ? 0 : RI_NO_KEY) | ((flags & FL_READONLY) ? RI_READONLY : 0), &st, &err);
	if (rc == RI_INTEGRITY && keyed && !(flags & FL_READONLY)) {
		/* a writer fails closed on a journal whose head does not stand;
		 * read it as ri-audit does */
		FZ_ASSERT(err.msg[0] != '\0', "INTEGRITY on open without a message");
		rc = ri_sqlite_open(cfg, key, keylen, RI_READONLY | RI_INSPECT, &st, &err);
	}
	FZ_ASSERT(rc == RI_OK, "ri_sqlite_open answered %d: %s", rc, err.msg);
	read_all(st, flags, ids, n_ids);
	if (flags & FL_INVS)
		read_invocations(st);
	if (flags & FL_ACTS)
		read_acts(st);
	st->ops->close(st);
	return 0;
}
