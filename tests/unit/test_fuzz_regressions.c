/*
 * test_fuzz_regressions.c -- every input the fuzz harnesses (tests/fuzz/)
 * found to break the library, run through the same function and held to
 * sane behaviour; and the seeds that exercise the tricky paths (deep
 * nesting, huge numbers, invalid UTF-8, NUL bytes) of each parser, so a
 * regression shows up in `make unit` without a fuzzing run.
 *
 * Found by fuzz_record (journal record verification):
 *   1. A descending range read whose page filled up exactly at the scope's
 *      first record answered more=true with the cursor 0 -- which means
 *      "from the head" -- when a row lay below that first record (a copy
 *      inserted at seq 0, or an older row given the scope's invocation id):
 *      a caller paging on `more` read the scope again from the head, for
 *      ever or with every record twice.  Now INTEGRITY.
 *   2. load_row copied event_id (and attestation_id) into fixed buffers and
 *      the other text columns up to their first NUL, and verified what it
 *      copied: a row whose stored event id had a character appended still
 *      verified, and read_record(that stored id) answered OK with the record
 *      of another id.  Now a text column that is not exactly what the
 *      record carries (too long, a NUL inside) is a malformed row:
 *      INTEGRITY, and RI_P_SHAPE in the traversal.
 *   3. (not fixed; a known limitation) a scope head row deleted and the
 *      scope's rows moved out of it: the act's own read answers "no
 *      records" -- held here to no wrong record and the journal's reads
 *      failing closed.
 *
 * No binaries are run: the journal is made through the library.
 */
#include <sqlite3.h>
#include <sodium.h>

#include "testlib.h"
#include "cli/cli.h"
#include "protocol/instance.h"
#include "store/heads.h"
#include "util/integrity.h"
#include "protocol/probe.h"
#include "protocol/proto.h"
#include "store/sqlite/store_sqlite.h"

#define T0 1795946400000LL
#define LIT(s) s, sizeof(s) - 1         /* a literal with its NULs: bytes, length */

/* ---- helpers ----------------------------------------------------------- */

static json_t *
js(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &je);

	CHECK(j != NULL, "bad JSON in the test: %s: %s", text, je.text);
	return j;
}

/* A string of n copies of open followed by n of close. */
static char *
nested(const char *prefix, size_t n, char open, char close, const char *suffix)
{
	size_t pl = strlen(prefix), sl = strlen(suffix);
	char *s = malloc(pl + 2 * n + sl + 1);

	CHECK(s != NULL, "malloc");
	memcpy(s, prefix, pl);
	memset(s + pl, open, n);
	memset(s + pl + n, close, n);
	memcpy(s + pl + 2 * n, suffix, sl + 1);
	return s;
}

/* Feed bytes to ri_cli_request as its stdin. */
static int
request_from(const void *bytes, size_t n, size_t max, json_t **req, ri_err *err)
{
	char path[PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	int fd, saved, rc;

	tl_fmt(path, sizeof path, "%s/ri-fuzzreg-stdin-XXXXXX", tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
	CHECK((fd = mkstemp(path)) >= 0, "mkstemp: %s", strerror(errno));
	unlink(path);
	CHECK(n == 0 || write(fd, bytes, n) == (ssize_t)n, "write: %s", strerror(errno));
	CHECK(lseek(fd, 0, SEEK_SET) == 0, "lseek");
	saved = dup(STDIN_FILENO);
	CHECK(dup2(fd, STDIN_FILENO) == STDIN_FILENO, "dup2");
	close(fd);
	rc = ri_cli_request(false, false, max, req, err);
	if (saved >= 0) {
		dup2(saved, STDIN_FILENO);
		close(saved);
	}
	return rc;
}

/* ---- a journal made through the library ----------------------------------- */

struct journal {
	char dir[PATH_MAX];
	struct ri_config *cfg;
	unsigned char *key;
	size_t keylen;
	char inv[3][RI_ID_LEN + 1];
	char evt[8][RI_ID_LEN + 1];
	int64_t n;
};

static void
now_at(int64_t t)
{
	tl_now(t);
}

static void
add(struct ri_store *st, struct journal *j, const char *cred, const char *ref, const char *act_key,
    int inv, const char *data)
{
	struct ri_append a = { .action_ref = ref, .act_key = act_key, .invocation_id = j->inv[inv],
		.actor_ref = "alice", .credential = cred };
	struct ri_appended out;
	int rc;

	a.data = js(data);
	rc = st->ops->record_action(st, &a, &out);
	CHECK(rc == RI_ST_OK, "append %s: %d %s", ref, rc, st->ops->error(st)->msg);
	json_decref(a.data);
	memcpy(j->evt[out.seq - 1], out.event_id, sizeof j->evt[0]);
	j->n = out.seq;
}

/* seq 1 audit.actor_registered; 2-3 inv 0 (act a); 4 inv 1 (act b);
 * 5-6 inv 2 (act a) */
static void
make_journal(struct journal *j)
{
	struct tl_cfg c = { 0 };
	char path[PATH_MAX], keyp[PATH_MAX + 16], hex[2 * RI_INSTANCE_LEN + 1], cred[128];
	unsigned char raw[32];
	struct ri_store *st;
	ri_err err = { 0 };
	sqlite3 *db;

	memset(j, 0, sizeof *j);
	tl_tmpdir(j->dir, "fuzzreg-journal");
	tl_write_config(j->dir, &c, path);
	CHECK(ri_config_load(path, &j->cfg, &err) == RI_OK, "config: %s", err.msg);
	randombytes_buf(raw, sizeof raw);
	tl_fmt(keyp, sizeof keyp, "%s", j->cfg->integrity_key_file);
	{
		int fd = open(keyp, O_WRONLY | O_CREAT | O_EXCL, 0600);
		CHECK(fd >= 0 && write(fd, raw, sizeof raw) == (ssize_t)sizeof raw && close(fd) == 0,
		    "key %s: %s", keyp, strerror(errno));
	}
	CHECK(ri_key_load(keyp, &j->key, &j->keylen, &err) == RI_OK, "key: %s", err.msg);
	now_at(T0);
	CHECK(ri_sqlite_create(j->cfg, j->key, j->keylen, hex, &err) == RI_OK, "create: %s", err.msg);
	CHECK(ri_sqlite_open(j->cfg, j->key, j->keylen, RI_INSPECT, &st, &err) == RI_OK, "open: %s", err.msg);
	CHECK(st->ops->actor_add(st, "alice", false, cred) == RI_ST_OK, "actor_add");
	for (int i = 0; i < 3; i++)
		ri_mint_id("inv_", j->inv[i]);
	now_at(T0 + 1000);
	add(st, j, cred, "ledger.intended", "a", 0, "{\"n\":1}");
	add(st, j, cred, "ledger.disclosed", "a", 0, "{\"n\":2}");
	add(st, j, cred, "ledger.intended", "b", 1, "{\"n\":3}");
	add(st, j, cred, "ledger.intended", "a", 2, "{\"n\":4}");
	add(st, j, cred, "ledger.disclosed", "a", 2, "{\"n\":5}");
	st->ops->close(st);
	/* the event id of seq 1, the actor's registration */
	CHECK(sqlite3_open_v2(j->cfg->journal, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK, "sqlite open");
	{
		sqlite3_stmt *s;
		CHECK(sqlite3_prepare_v2(db, "SELECT event_id FROM records WHERE seq = 1", -1, &s, NULL) == SQLITE_OK &&
		    sqlite3_step(s) == SQLITE_ROW, "seq 1");
		snprintf(j->evt[0], sizeof j->evt[0], "%s", (const char *)sqlite3_column_text(s, 0));
		sqlite3_finalize(s);
	}
	/* the attacker's first move */
	CHECK(sqlite3_exec(db, "DROP TRIGGER records_append_only_delete;"
	    " DROP TRIGGER records_append_only_update;", NULL, NULL, NULL) == SQLITE_OK, "drop triggers");
	sqlite3_close(db);
	CHECK(j->n == 6, "journal of %lld records", (long long)j->n);
}

static void
tamper(struct journal *j, const char *sql)
{
	sqlite3 *db;
	char *msg = NULL;

	CHECK(sqlite3_open_v2(j->cfg->journal, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK, "sqlite open");
	CHECK(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", sql, msg ? msg : "?");
	sqlite3_close(db);
}

static struct ri_store *
reopen(struct journal *j)
{
	struct ri_store *st;
	ri_err err = { 0 };

	CHECK(ri_sqlite_open(j->cfg, j->key, j->keylen, RI_INSPECT, &st, &err) == RI_OK, "reopen: %s", err.msg);
	return st;
}

/* ---- the request path (fuzz_request) ------------------------------------ */

/* Every action on a request, on two instances: one whose journal could not
 * be opened (the commands' unopened arm) and one with a journal but no
 * clock reading (no RI_NOW): each answers a documented code with a
 * message, and nothing succeeds but ri-yield's alert. */
static void
actions_stop_sanely(struct ri *with_store, json_t *req, const char *what)
{
	static const struct {
		const char *name;
		int (*fn)(ri *, json_t *, json_t **, ri_err *);
	} acts[] = {
		{ "ri_open", ri_open }, { "ri_close", ri_close }, { "ri_refuse", ri_refuse },
		{ "ri_yield", ri_yield }, { "ri_resolve", ri_resolve },
		{ "ri_read_invocation", ri_read_invocation },
	};
	struct ri unopened = { .cfg = with_store->cfg, .flags = RI_WRITER };

	ri_fail(&unopened.unopened, RI_JOURNAL_UNAVAILABLE, "journal: no such file (a test)");
	for (int arm = 0; arm < 2; arm++) {
		struct ri *r = arm == 0 ? &unopened : with_store;
		for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
			json_t *ans = NULL;
			ri_err err = { 0 };
			int rc;

			/* the journal's arm only where nothing is written: the
			 * actions that would write are run without it */
			if (arm == 1 && (acts[i].fn == ri_close || acts[i].fn == ri_refuse ||
			    acts[i].fn == ri_yield))
				continue;
			rc = acts[i].fn(r, req, &ans, &err);
			if (rc == RI_OK) {
				CHECK(acts[i].fn == ri_yield && json_is_true(json_object_get(ans, "ok")),
				    "%s %s (%s): succeeded", what, acts[i].name, arm ? "journal" : "no journal");
			} else {
				/* ri-yield: invalid-credential when the request names no
				 * actor or brings no credential (close 1) */
				CHECK(rc == RI_MALFORMED || rc == RI_INVALID_REQUEST || rc == RI_CONFIG ||
				    (rc == RI_INVALID_CREDENTIAL && acts[i].fn == ri_yield) ||
				    rc == RI_JOURNAL_UNAVAILABLE || rc == RI_SECTION_UNAVAILABLE ||
				    rc == RI_RF_OUTCOME || rc == RI_RF_REFUSAL || rc == RI_RF_RESOLUTION,
				    "%s %s (%s): answered %d (%s)", what, acts[i].name,
				    arm ? "journal" : "no journal", rc, err.msg);
				CHECK(err.code == rc && err.msg[0] != '\0', "%s %s: no message", what, acts[i].name);
			}
			if (rc == RI_INVALID_REQUEST || rc == RI_INVALID_CREDENTIAL)
				CHECK(json_is_string(json_object_get(ans, "refused")), "%s %s: no refusal", what,
				    acts[i].name);
			json_decref(ans);
		}
	}
}

static void
test_requests(void)
{
	struct journal j;
	struct ri *r;
	json_t *req;
	ri_err err;
	int rc;
	static const struct {
		const char *what;
		const char *bytes;
		size_t n;               /* 0: strlen */
		int want;               /* ri_cli_request's answer */
	} cases[] = {
		{ "huge numbers", "{\"kind\":\"ledger\",\"act_key\":\"k\",\"actor_ref\":\"a\",\"credential\":\"c\","
		  "\"intent_data\":{\"a\":1e400,\"b\":-9223372036854775809,\"c\":18446744073709551616}}", 0,
		  RI_MALFORMED },       /* jansson refuses an out-of-range number */
		{ "big integers", "{\"kind\":\"ledger\",\"act_key\":\"k\",\"actor_ref\":\"a\",\"credential\":\"c\","
		  "\"intent_data\":{\"d\":9223372036854775807,\"e\":-0.0,\"f\":4.9e-324}}", 0, RI_OK },
		{ "invalid UTF-8", "{\"kind\":\"ledger\",\"act_key\":\"\xff\xfe\xc3(\",\"actor_ref\":\"a\","
		  "\"intent_data\":{}}", 0, RI_MALFORMED },
		{ "escaped NUL", "{\"kind\":\"ledger\\u0000x\",\"act_key\":\"k\",\"actor_ref\":\"a\","
		  "\"intent_data\":{}}", 0, RI_MALFORMED },
		{ "raw NUL", LIT("{\"kind\":\"ledger\",\"act_key\":\"k\0\",\"actor_ref\":\"a\",\"intent_data\":{}}"),
		  RI_MALFORMED },
		{ "NUL after the object", LIT("{\"kind\":\"ledger\"}\0"), RI_MALFORMED },
		{ "lone surrogate", "{\"kind\":\"ledger\",\"act_key\":\"\\ud800\",\"actor_ref\":\"a\","
		  "\"intent_data\":{}}", 0, RI_MALFORMED },
		{ "surrogate pair", "{\"kind\":\"ledger\",\"act_key\":\"\\ud83d\\ude00\",\"actor_ref\":\"\\u00e9\","
		  "\"credential\":\"c\",\"intent_data\":{}}", 0, RI_OK },
		{ "duplicate keys", "{\"kind\":\"ledger\",\"kind\":\"mail\"}", 0, RI_MALFORMED },
		{ "two objects", "{\"kind\":\"ledger\"} {\"kind\":\"mail\"}", 0, RI_MALFORMED },
		{ "not an object", "[1,2,3]", 0, RI_MALFORMED },
		{ "whitespace", " \t\r\n ", 0, RI_MALFORMED },
		{ "nothing", "", 0, RI_MALFORMED },
		{ "service identity opens", "{\"kind\":\"ledger\",\"act_key\":\"k\",\"actor_ref\":\"ledger-reconciler\","
		  "\"credential\":\"c\",\"intent_data\":{}}", 0, RI_OK },
		{ "resolve, two dispositions", "{\"kind\":\"ledger\",\"act_key\":\"k\",\"invocation_id\":\"i\","
		  "\"intent_event_id\":\"e\",\"actor_ref\":\"op\",\"disposition\":{\"abandoned\":{\"cause\":\"x\"},"
		  "\"escalated\":{\"candidates\":[]}}}", 0, RI_OK },
		{ "resolve, candidates over cap", "{\"kind\":\"ledger\",\"act_key\":\"k\",\"invocation_id\":\"i\","
		  "\"intent_event_id\":\"e\",\"actor_ref\":\"op\",\"disposition\":{\"escalated\":{\"candidates\":"
		  "[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\",\"10\",\"11\",\"12\",\"13\",\"14\",\"15\","
		  "\"16\",\"17\"]}}}", 0, RI_OK },
		{ "resolve, non-string candidate", "{\"kind\":\"ledger\",\"act_key\":\"k\",\"invocation_id\":\"i\","
		  "\"intent_event_id\":\"e\",\"actor_ref\":\"op\",\"disposition\":{\"escalated\":{\"candidates\":"
		  "[7,null,{}]}}}", 0, RI_OK },
		{ "resolve, outcome of another kind", "{\"kind\":\"ledger\",\"act_key\":\"k\",\"invocation_id\":\"i\","
		  "\"intent_event_id\":\"e\",\"actor_ref\":\"op\",\"disposition\":{\"outcome\":{\"outcome_action_ref\":"
		  "\"mail.disclosed\",\"outcome_data\":{}}}}", 0, RI_OK },
	};

	unsetenv("RI_CREDENTIAL");
	unsetenv("RI_CREDENTIAL_FILE");
	make_journal(&j);
	unsetenv("RI_NOW");             /* the seam has no reading: nothing is written */
	r = ri_xcalloc(1, sizeof *r);
	r->cfg = j.cfg;
	r->flags = RI_WRITER;
	CHECK(ri_sqlite_open(j.cfg, j.key, j.keylen, RI_INSPECT, &r->st, &err) == RI_OK, "open: %s", err.msg);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t n = cases[i].n ? cases[i].n : strlen(cases[i].bytes);
		memset(&err, 0, sizeof err);
		req = NULL;
		rc = request_from(cases[i].bytes, n, ri_request_max(r), &req, &err);
		CHECK(rc == cases[i].want, "%s: ri_cli_request answered %d (%s), want %d", cases[i].what, rc,
		    err.msg, cases[i].want);
		if (rc == RI_OK) {
			CHECK(json_is_object(req), "%s: not an object", cases[i].what);
			actions_stop_sanely(r, req, cases[i].what);
		} else {
			CHECK(req == NULL && err.msg[0] != '\0', "%s: a refused request left a value", cases[i].what);
		}
		json_decref(req);
	}
	PASS("requests: huge numbers, invalid UTF-8, NUL bytes, surrogates, duplicates refused or handled");

	/* deep nesting: jansson's depth limit (2048) holds on stdin, and a deep
	 * but legal intent_data is sized and canonicalised without trouble */
	{
		char *deep = nested("{\"kind\":\"ledger\",\"act_key\":\"k\",\"actor_ref\":\"a\",\"credential\":\"c\","
		    "\"intent_data\":{\"d\":", 1500, '[', ']', "}}");
		char *over = nested("{\"kind\":\"ledger\",\"act_key\":\"k\",\"actor_ref\":\"a\",\"intent_data\":{\"d\":",
		    2100, '[', ']', "}}");
		memset(&err, 0, sizeof err);
		rc = request_from(deep, strlen(deep), ri_request_max(r), &req, &err);
		CHECK(rc == RI_OK, "1500 levels: %d %s", rc, err.msg);
		actions_stop_sanely(r, req, "1500 levels");
		json_decref(req);
		rc = request_from(over, strlen(over), ri_request_max(r), &req, &err);
		CHECK(rc == RI_MALFORMED && req == NULL, "2100 levels: %d", rc);
		free(deep);
		free(over);
	}
	/* over the request cap */
	{
		size_t max = ri_request_max(r), n = max + 2;
		char *big = malloc(n + 1);
		CHECK(big != NULL, "malloc");
		memset(big, ' ', n);
		big[0] = '{';
		big[n - 1] = '}';
		rc = request_from(big, n, max, &req, &err);
		CHECK(rc == RI_MALFORMED && req == NULL && strstr(err.msg, "exceeds") != NULL,
		    "an oversized request: %d %s", rc, err.msg);
		free(big);
	}
	PASS("requests: 1500-deep nesting read, 2100-deep and oversized refused as malformed");

	/* time text: the instants and durations the parsers accept round-trip */
	{
		static const char *const instants[] = {
			"2026-11-29T22:40:00.123+05:30", "2026-02-31t23:59:60.9999999z",
			"0000-01-01T00:00:00-23:59", "9999-12-31T23:59:59.999+00:00", "1795946400000",
		};
		static const char *const bad[] = {
			"", "2026-11-29", "2026-13-01T00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T10:00:00",
			"2026-11-29T10:00:00.Z", "9223372036854775808", "-1", "2026-11-29T10:00:00Z ",
		};
		ri_ms t, back, d;
		char buf[RI_INSTANT_LEN];

		for (size_t i = 0; i < sizeof instants / sizeof instants[0]; i++) {
			CHECK(ri_parse_instant(instants[i], &t) == 0, "instant %s refused", instants[i]);
			ri_format_instant(t, buf);
			CHECK(ri_parse_instant(buf, &back) == 0 && back == t, "%s -> %s does not round-trip",
			    instants[i], buf);
		}
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
			CHECK(ri_parse_instant(bad[i], &t) != 0, "instant \"%s\" accepted", bad[i]);
		CHECK(ri_parse_duration("9223372036854775807ms", &d) == 0 && d == INT64_MAX, "max ms");
		CHECK(ri_parse_duration("9223372036854775807s", &d) != 0, "overflowing seconds accepted");
		CHECK(ri_parse_duration("106751991167300d", &d) != 0, "overflowing days accepted");
		CHECK(ri_parse_duration("400d", &d) == 0 && d == 400 * 86400000LL, "400d");
		CHECK(ri_parse_duration("30 s", &d) != 0 && ri_parse_duration("s", &d) != 0 &&
		    ri_parse_duration("-5s", &d) != 0, "malformed durations accepted");
	}
	PASS("time text: instants round-trip, overflowing durations refused");
	r->st->ops->close(r->st);
	free(r);
	sodium_free(j.key);
	ri_config_free(j.cfg);
}

/* ---- the config (fuzz_config) ------------------------------------------- */

static const char iface_config[] =
    "{ \"journal\": \"/var/lib/ri/journal.db\", \"findings\": \"/var/lib/ri/findings.db\","
    "  \"integrity_key_file\": \"/etc/ri/journal.key\", \"seal_key_file\": \"/etc/ri/seal.key\","
    "  \"clock\": \"system\","
    "  \"instance\": { \"clock_offset_allowance\": \"2s\", \"reconciliation_cadence\": \"60s\","
    "    \"run_bound\": \"135s\", \"closure_latency\": \"12s\", \"journal_write_bound\": \"3s\","
    "    \"read_bound\": \"2s\", \"compensation_window\": \"10m\", \"intent_candidates_cap\": 16,"
    "    \"read_cap\": 20, \"reference_length_cap\": 256, \"payload_cap\": 65536,"
    "    \"journal_fence\": \"declared\" },"
    "  \"kinds\": { \"ledger\": { \"outcomes\": [\"disclosed\"], \"repeatable\": true,"
    "    \"completion_bound\": \"%s\", \"commit_round_trip\": \"1s\", \"probe_round_trip\": \"1s\","
    "    \"retention_period\": %s, \"commit_fence\": \"none\", \"pairing_datum\": \"nonce\","
    "    \"outcome_envelope\": 4096, \"retry_terminus\": \"lease\","
    "    \"probe\": [\"/usr/local/libexec/probe-disclosure\", \"--store\", \"/var/lib/ledger.db\"],"
    "    \"service_identity\": { \"actor_ref\": \"ledger-reconciler\","
    "      \"credential_file\": \"/etc/ri/reconciler.cred\" } } } }";

static int
config_of(const char *text, struct ri_config **c, ri_err *err)
{
	json_error_t je;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	int rc;

	if (root == NULL)
		return -1;
	rc = ri_config_from_json(root, "/nonexistent/ri-fuzz/ri.json", c, err);
	json_decref(root);
	return rc;
}

static void
test_configs(void)
{
	char text[8192];
	struct ri_config *c;
	struct ri_condition cs[5];
	ri_err err;
	int rc;
	static const struct { const char *completion, *retention; int want; } durations[] = {
		{ "30s", "\"400d\"", RI_OK },
		{ "365000d", "31536000000000", RI_OK },                 /* the cap, as ms */
		{ "365001d", "\"400d\"", RI_CONFIG },
		{ "9223372036854775807d", "\"400d\"", RI_CONFIG },      /* overflows in the parser */
		{ "30s", "9223372036854775807", RI_CONFIG },
		{ "30s", "1e400", -1 },                                 /* not JSON jansson takes */
		{ "30s", "-1", RI_CONFIG },
		{ "0s", "\"400d\"", RI_CONFIG },
	};

	for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++) {
		snprintf(text, sizeof text, iface_config, durations[i].completion, durations[i].retention);
		memset(&err, 0, sizeof err);
		c = NULL;
		rc = config_of(text, &c, &err);
		CHECK(rc == durations[i].want, "completion %s retention %s: %d (%s), want %d",
		    durations[i].completion, durations[i].retention, rc, err.msg, durations[i].want);
		if (rc == RI_OK) {
			/* the five conditions at the extremes: no overflow, text in bounds */
			ri_conditions(c, &c->kinds[0], cs);
			for (int n = 0; n < 5; n++)
				CHECK(cs[n].arithmetic[0] != '\0' &&
				    memchr(cs[n].arithmetic, '\0', sizeof cs[n].arithmetic) != NULL, "condition %d", n);
			(void)ri_conditions_hold(c, &err);
			ri_config_free(c);
		} else {
			CHECK(c == NULL, "a refused config was returned");
		}
	}
	PASS("config: durations at and past 365000d, overflowing and negative numbers");

	{
		static const char *const refused[] = {
			"\"ri.json\"", "[]", "{}", "null",
			"{\"journal\": \"journal\\u0000.db\"}",
		};
		for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
			memset(&err, 0, sizeof err);
			c = NULL;
			rc = config_of(refused[i], &c, &err);
			CHECK((rc == RI_CONFIG && err.msg[0] != '\0' && c == NULL) || rc == -1,
			    "%s: %d %s", refused[i], rc, err.msg);
		}
		char *deep = nested("{\"journal\":", 1000, '[', ']', "}");
		rc = config_of(deep, &c, &err);
		CHECK(rc == RI_CONFIG && c == NULL && strstr(err.msg, "journal") != NULL, "deep: %d %s", rc, err.msg);
		free(deep);
	}
	/* a kind name that is no plain name: the message quotes it, bounded */
	{
		char name[200] = "k\\u00e9y \\\"q\\\"\\n";
		memset(name + strlen(name), 'x', 120);
		snprintf(text, sizeof text, "{\"journal\":\"j\",\"findings\":\"f\",\"integrity_key_file\":\"k\","
		    "\"seal_key_file\":\"s\",\"instance\":{\"clock_offset_allowance\":\"2s\","
		    "\"reconciliation_cadence\":\"60s\",\"run_bound\":\"135s\",\"closure_latency\":\"12s\","
		    "\"journal_write_bound\":\"3s\",\"read_bound\":\"2s\",\"compensation_window\":\"10m\","
		    "\"intent_candidates_cap\":16,\"read_cap\":20,\"reference_length_cap\":256,\"payload_cap\":65536},"
		    "\"kinds\":{\"%s\":{}}}", name);
		memset(&err, 0, sizeof err);
		rc = config_of(text, &c, &err);
		CHECK(rc == RI_CONFIG && c == NULL && strstr(err.msg, "kinds[") != NULL &&
		    strstr(err.msg, "...") != NULL, "weird kind name: %d %s", rc, err.msg);
	}
	PASS("config: non-objects, NUL in a path, 1000-deep nesting, an unprintable kind name refused");
}

/* ---- the probe's answer (fuzz_probe) ------------------------------------ */

static void
test_probe(void)
{
	struct ri_config *c;
	struct ri_probe p;
	ri_err err = { 0 };
	char text[8192];
	static const struct { const char *what, *bytes; size_t n; enum ri_probe_answer want; } cases[] = {
		{ "committed", "{\"answer\":\"committed\",\"outcome_action_ref\":\"ledger.disclosed\","
		  "\"outcome_data\":{\"r\":1}}", 0, RI_PROBE_COMMITTED },
		{ "not-committed", "{\"answer\":\"not-committed\"}", 0, RI_PROBE_NOT_COMMITTED },
		{ "undecidable", "{\"answer\":\"undecidable\",\"candidates\":[\"a\",\"b\"]}", 0, RI_PROBE_UNDECIDABLE },
		{ "unavailable", "{\"answer\":\"unavailable\"}\n", 0, RI_PROBE_UNAVAILABLE },
		{ "an extra key", "{\"answer\":\"committed\",\"outcome_action_ref\":\"ledger.disclosed\","
		  "\"outcome_data\":{},\"x\":1}", 0, RI_PROBE_UNAVAILABLE },
		{ "a derived ref", "{\"answer\":\"committed\",\"outcome_action_ref\":\"ledger.refused\","
		  "\"outcome_data\":{}}", 0, RI_PROBE_UNAVAILABLE },
		{ "bad candidates", "{\"answer\":\"undecidable\",\"candidates\":[\"\",7]}", 0, RI_PROBE_UNAVAILABLE },
		{ "duplicate answer", "{\"answer\":\"not-committed\",\"answer\":\"committed\"}", 0,
		  RI_PROBE_UNAVAILABLE },
		{ "two objects", "{\"answer\":\"not-committed\"}{\"answer\":\"committed\"}", 0, RI_PROBE_UNAVAILABLE },
		{ "NUL then garbage", LIT("{\"answer\":\"not-committed\"}\0garbage"), RI_PROBE_UNAVAILABLE },
		{ "escaped NUL in the answer", "{\"answer\":\"not-committed\\u0000\"}", 0, RI_PROBE_UNAVAILABLE },
		{ "invalid UTF-8", "{\"answer\":\"undecidable\",\"candidates\":[\"\xed\xa0\x80\"]}", 0,
		  RI_PROBE_UNAVAILABLE },
		{ "nothing", "", 0, RI_PROBE_UNAVAILABLE },
	};

	snprintf(text, sizeof text, iface_config, "30s", "\"400d\"");
	CHECK(config_of(text, &c, &err) == RI_OK, "config: %s", err.msg);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t n = cases[i].n ? cases[i].n : strlen(cases[i].bytes);
		char *exact = malloc(n ? n : 1);        /* no terminator past the length */
		CHECK(exact != NULL, "malloc");
		memcpy(exact, cases[i].bytes, n);
		CHECK(ri_probe_parse(c, &c->kinds[0], exact, n, &p) == 0, "%s", cases[i].what);
		CHECK(p.answer == cases[i].want, "%s: answered %s, want %s", cases[i].what,
		    ri_probe_name(p.answer), ri_probe_name(cases[i].want));
		if (p.answer == RI_PROBE_UNAVAILABLE)
			CHECK(p.why[0] != '\0', "%s: unavailable without a reason", cases[i].what);
		ri_probe_clear(&p);
		free(exact);
	}
	{
		char *deep = nested("{\"answer\":\"committed\",\"outcome_action_ref\":\"ledger.disclosed\","
		    "\"outcome_data\":{\"d\":", 1500, '[', ']', "}}");
		CHECK(ri_probe_parse(c, &c->kinds[0], deep, strlen(deep), &p) == 0 &&
		    p.answer == RI_PROBE_COMMITTED, "1500 levels: %s", ri_probe_name(p.answer));
		ri_probe_clear(&p);
		free(deep);
	}
	ri_config_free(c);
	PASS("probe: the four answers, and everything else unavailable with a reason");
}

/* ---- journal verification (fuzz_record) ---------------------------------- */

/* Page a descending read: INTEGRITY before the pages run out, never a
 * cursor of 0 with more, never a record twice. */
static int
desc_pages(struct ri_store *st, struct ri_query q, size_t *n_read)
{
	int64_t last = INT64_MAX;

	*n_read = 0;
	q.descending = true;
	q.from = 0;
	for (int page = 0; page < 64; page++) {
		struct ri_records rs;
		int rc = st->ops->range_read(st, &q, &rs);
		if (rc != RI_ST_OK)
			return rc;
		for (size_t i = 0; i < rs.n; i++) {
			CHECK(rs.v[i].seq < last, "descending read: seq %lld after %lld", (long long)rs.v[i].seq,
			    (long long)last);
			last = rs.v[i].seq;
		}
		*n_read += rs.n;
		CHECK(!(rs.more && rs.next == 0), "descending read: more with the cursor 0 (the head again)");
		bool more = rs.more;
		q.from = rs.next;
		ri_records_clear(&rs);
		if (!more)
			return RI_ST_OK;
	}
	CHECK(false, "descending read: the pages never end");
	return -1;
}

static void
test_desc_below_first(void)
{
	struct journal j;
	struct ri_store *st;
	struct ri_query q = { 0 };
	size_t n;
	int rc;

	make_journal(&j);
	st = reopen(&j);
	q.limit = 6;
	CHECK(desc_pages(st, q, &n) == RI_ST_OK && n == 6, "intact journal, page of 6: %zu", n);
	st->ops->close(st);

	/* crash input fuzz_record/copy-row-to-seq0-page1: a copy of a row
	 * inserted at seq 0; a page of exactly the journal ends at seq 1 */
	tamper(&j, "INSERT INTO records SELECT 0, event_id || 'x', action_ref, kind, act_key, invocation_id,"
	    " actor_ref, attestation_id, recorded_at, retention_until, role, act_prev, inv_prev, payload,"
	    " salt, digest, hash, mac, shard FROM records WHERE seq = 5");
	st = reopen(&j);
	for (size_t limit = 1; limit <= 7; limit++) {
		q.limit = limit;
		rc = desc_pages(st, q, &n);
		CHECK(rc == RI_ST_INTEGRITY, "a row at seq 0, page %zu: answered %d after %zu records", limit, rc, n);
	}
	/* and the act scope the copy claims */
	q.kind = "ledger";
	q.act_key = "a";
	q.limit = 4;
	CHECK(desc_pages(st, q, &n) == RI_ST_INTEGRITY, "act scope, a row at seq 0");
	st->ops->close(st);
	PASS("range read, descending: a row below the first record is INTEGRITY at every page size");

	/* crash input fuzz_record/borrow-invocation-id-page1: an older row of
	 * another invocation given inv 2's id -- inv 2 reads 6, 5, then seq 2 */
	tamper(&j, "DELETE FROM records WHERE seq = 0");
	{
		char sql[256];
		tl_fmt(sql, sizeof sql, "UPDATE records SET invocation_id = '%s' WHERE seq = 2", j.inv[2]);
		tamper(&j, sql);
	}
	st = reopen(&j);
	memset(&q, 0, sizeof q);
	q.invocation_id = j.inv[2];
	for (size_t limit = 1; limit <= 4; limit++) {
		q.limit = limit;
		rc = desc_pages(st, q, &n);
		CHECK(rc == RI_ST_INTEGRITY, "borrowed invocation id, page %zu: answered %d", limit, rc);
	}
	st->ops->close(st);
	PASS("range read, descending: an older row given the invocation's id is INTEGRITY at every page size");
	sodium_free(j.key);
	ri_config_free(j.cfg);
}

struct problems {
	int64_t seq;
	unsigned found;
};

static int
note(const struct ri_record *r, unsigned problems, void *arg)
{
	struct problems *p = arg;

	if (r->seq == p->seq)
		p->found |= problems;
	return 0;
}

static void
test_exact_text(void)
{
	static const struct { const char *what, *sql; int64_t seq; } cases[] = {
		{ "a character appended to the event id",
		  "UPDATE records SET event_id = event_id || 'Q' WHERE seq = 3", 3 },
		{ "a NUL and more appended to the event id",
		  "UPDATE records SET event_id = event_id || char(0) || 'Q' WHERE seq = 3", 3 },
		{ "a character appended to the attestation id",
		  "UPDATE records SET attestation_id = attestation_id || 'Q' WHERE seq = 3", 3 },
		{ "a NUL inside the action ref",
		  "UPDATE records SET action_ref = action_ref || char(0) || 'x' WHERE seq = 3", 3 },
		{ "a NUL inside the invocation id",
		  "UPDATE records SET invocation_id = invocation_id || char(0) || 'x' WHERE seq = 3", 3 },
		{ "a NUL and more after the payload",
		  "UPDATE records SET payload = payload || char(0) || '{\"forged\":1}' WHERE seq = 3", 3 },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct journal j;
		struct ri_store *st;
		struct ri_record rec;
		struct ri_records rs;
		struct ri_query q = { 0 };
		struct problems p = { .seq = cases[i].seq };
		char stored[128];
		sqlite3 *db;
		sqlite3_stmt *s;
		int rc;

		make_journal(&j);
		tamper(&j, cases[i].sql);
		CHECK(sqlite3_open_v2(j.cfg->journal, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK, "open");
		CHECK(sqlite3_prepare_v2(db, "SELECT event_id FROM records WHERE seq = ?", -1, &s, NULL) == SQLITE_OK,
		    "prepare");
		sqlite3_bind_int64(s, 1, cases[i].seq);
		CHECK(sqlite3_step(s) == SQLITE_ROW, "row");
		snprintf(stored, sizeof stored, "%s", (const char *)sqlite3_column_text(s, 0));
		sqlite3_finalize(s);
		sqlite3_close(db);

		st = reopen(&j);
		/* crash input fuzz_record/event-id-appended: read_record(the stored
		 * id) answered OK with the record of another id */
		rc = st->ops->read_record(st, stored, &rec);
		CHECK(rc == RI_ST_INTEGRITY || rc == RI_ST_NOT_KNOWN, "%s: read_record(%s) answered %d (%s)",
		    cases[i].what, stored, rc, rc == RI_ST_OK ? rec.event_id : st->ops->error(st)->msg);
		ri_record_clear(&rec);
		q.from = 1;
		rc = st->ops->range_read(st, &q, &rs);
		CHECK(rc == RI_ST_INTEGRITY, "%s: the journal read answered %d", cases[i].what, rc);
		CHECK(st->ops->traverse(st, note, &p) == RI_ST_OK && (p.found & RI_P_SHAPE),
		    "%s: the traversal found %#x at seq %lld", cases[i].what, p.found, (long long)p.seq);
		st->ops->close(st);
		sodium_free(j.key);
		ri_config_free(j.cfg);
	}
	PASS("verification: a stored id or ref that is not exactly the hashed one is a malformed row");
}

/* The node of the tree of scope heads that holds the act's head (heads.h:
 * a leaf body is 'L', then the scope key). */
static void
delete_act_head(struct journal *j, const char *kind, const char *act_key)
{
	unsigned char key[RI_SCOPE_LEN];
	sqlite3 *db;
	sqlite3_stmt *s;

	ri_scope_act(kind, act_key, key);
	CHECK(sqlite3_open_v2(j->cfg->journal, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK, "open");
	CHECK(sqlite3_prepare_v2(db, "DELETE FROM nodes WHERE substr(body, 1, 1) = X'4C' AND substr(body, 2, 32) = ?",
	    -1, &s, NULL) == SQLITE_OK, "prepare");
	sqlite3_bind_blob(s, 1, key, RI_SCOPE_LEN, SQLITE_STATIC);
	CHECK(sqlite3_step(s) == SQLITE_DONE, "delete head");
	sqlite3_finalize(s);
	CHECK(sqlite3_changes(db) == 1, "the act (%s, %s) has no head to delete", kind, act_key);
	sqlite3_close(db);
}

/*
 * Crash input fuzz_record/crash-a5a93115 (a head row deleted, the act's
 * rows moved out of it): FIXED by authenticated absence (issue 11) -- the
 * act's head is a leaf of the tree of scope heads, under a root the
 * journal head's MAC binds, so deleting it breaks a hash on the path: the
 * act's read fails closed instead of reading as never written.  And still:
 * no wrong record, and the journal's own reads (and so ri-audit) fail
 * closed on the moved row.
 */
static void
test_deleted_head(void)
{
	struct journal j;
	struct ri_store *st;
	struct ri_records rs;
	struct ri_query q = { .kind = "ledger", .act_key = "b" };
	struct problems p = { .seq = 4 };
	int rc;

	make_journal(&j);
	delete_act_head(&j, "ledger", "b");
	tamper(&j, "UPDATE records SET act_key = 'zz' WHERE seq = 4");
	st = reopen(&j);
	rc = st->ops->range_read(st, &q, &rs);
	CHECK(rc == RI_ST_INTEGRITY, "act (ledger, b): answered %d with %zu records (an absence without a proof)",
	    rc, rs.n);
	q.act_key = "zz";
	rc = st->ops->range_read(st, &q, &rs);
	CHECK(rc == RI_ST_INTEGRITY, "act (ledger, zz), which the row was moved to: answered %d", rc);
	memset(&q, 0, sizeof q);
	rc = st->ops->range_read(st, &q, &rs);
	CHECK(rc == RI_ST_INTEGRITY, "the journal read answered %d", rc);
	q.invocation_id = j.inv[1];
	rc = st->ops->range_read(st, &q, &rs);
	CHECK(rc == RI_ST_INTEGRITY, "invocation 1's read answered %d", rc);
	CHECK(st->ops->traverse(st, note, &p) == RI_ST_OK && (p.found & RI_P_LINK),
	    "the traversal found %#x at seq 4", p.found);
	st->ops->close(st);
	sodium_free(j.key);
	ri_config_free(j.cfg);
	PASS("a head deleted and its act's row moved: both acts fail closed (authenticated absence); no wrong record; the journal's reads fail closed");
}

int
main(void)
{
	tl_init();
	CHECK(sodium_init() >= 0, "sodium_init");
	unsetenv("RI_FAULT");
	test_requests();
	test_configs();
	test_probe();
	test_desc_below_first();
	test_exact_text();
	test_deleted_head();
	return 0;
}
