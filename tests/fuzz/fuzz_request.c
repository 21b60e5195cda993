/*
 * fuzz_request.c -- libFuzzer harness for the request path: the bytes a
 * command reads on stdin.
 *
 *   stdin bytes -> ri_cli_request (the commands' own reader: size cap,
 *   whitespace check, json_loadb with JSON_REJECT_DUPLICATES, one object)
 *   -> ri_req_parse with the field table of every command (ri-open,
 *   ri-close, ri-refuse, ri-yield, ri-resolve, ri-read)
 *   -> every action (ri_open, ri_close, ri_refuse, ri_yield, ri_resolve,
 *   ri_read_invocation) twice: on an instance whose journal could not be
 *   opened (the commands' "unopened" arm), and on one whose store is a stub
 *   that answers every call unavailable and whose seam clock has no
 *   reading -- so each runs every check it makes on the request
 *   (ri_open: references, the service identity, payload sizing;
 *   ri_resolve: the disposition parser; ri_close: the vocabulary) and
 *   then stops at the seam or at the store, writing nothing anywhere
 *   -> ri_parse_instant / ri_parse_duration on every string in the request.
 *
 * Asserts: no crash, no sanitizer report, only the documented codes with a
 * message (never success without a clock or a store, except ri-yield's
 * alert); a parsed instant round-trips through ri_format_instant.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "cli/cli.h"
#include "protocol/instance.h"
#include "protocol/proto.h"

#define FZ_ASSERT(c, ...) do {                                          \
	if (!(c)) {                                                     \
		fprintf(stderr, "fuzz_request: assertion failed: %s: ", #c); \
		fprintf(stderr, __VA_ARGS__);                           \
		fputc('\n', stderr);                                    \
		abort();                                                \
	}                                                               \
} while (0)

/* The INTERFACE.md config, with the env clock (left unread: no RI_NOW) and
 * a second kind with two outcomes and no service identity. */
static const char config_text[] =
    "{ \"journal\": \"/nonexistent/ri-fuzz/journal.db\", \"findings\": \"findings.db\","
    "  \"integrity_key_file\": \"journal.key\", \"seal_key_file\": \"seal.key\","
    "  \"clock\": \"env\","
    "  \"instance\": { \"clock_offset_allowance\": \"2s\", \"reconciliation_cadence\": \"60s\","
    "    \"run_bound\": \"135s\", \"closure_latency\": \"12s\", \"journal_write_bound\": \"3s\","
    "    \"read_bound\": \"2s\", \"compensation_window\": \"10m\", \"intent_candidates_cap\": 16,"
    "    \"read_cap\": 20, \"reference_length_cap\": 256, \"payload_cap\": 65536,"
    "    \"journal_fence\": \"declared\" },"
    "  \"kinds\": {"
    "    \"ledger\": { \"outcomes\": [\"disclosed\"], \"repeatable\": true,"
    "      \"completion_bound\": \"30s\", \"commit_round_trip\": \"1s\", \"probe_round_trip\": \"1s\","
    "      \"retention_period\": \"400d\", \"commit_fence\": \"none\", \"pairing_datum\": \"nonce\","
    "      \"outcome_envelope\": 4096, \"retry_terminus\": \"lease\","
    "      \"probe\": [\"/usr/local/libexec/probe-disclosure\", \"--store\", \"/var/lib/ledger.db\"],"
    "      \"service_identity\": { \"actor_ref\": \"ledger-reconciler\","
    "        \"credential_file\": \"/etc/ri/reconciler.cred\" } },"
    "    \"mail\": { \"outcomes\": [\"sent\", \"bounced\"], \"repeatable\": false,"
    "      \"completion_bound\": \"20s\", \"commit_round_trip\": \"1s\", \"probe_round_trip\": \"1s\","
    "      \"retention_period\": \"30d\", \"commit_fence\": \"declared\", \"pairing_datum\": \"none\","
    "      \"outcome_envelope\": 1024, \"retry_terminus\": { \"counted\": 3 },"
    "      \"probe\": [\"./probe-mail\"], \"service_identity\": null } } }";

static struct ri inst;                  /* the stub store */
static struct ri unopened;              /* no journal */
static int stdin_fd = -1;

/* ---- a store that answers every call unavailable ---- */

static struct ri_store_error stub_err = { .msg = "fuzz: the stub store is unavailable" };
static const unsigned char stub_id[16];

static int
stub_record_action(struct ri_store *s, const struct ri_append *a, struct ri_appended *out)
{
	(void)s; (void)a;
	memset(out, 0, sizeof *out);
	return RI_ST_UNAVAILABLE;
}

static int
stub_read_record(struct ri_store *s, const char *id, struct ri_record *out)
{
	(void)s; (void)id;
	memset(out, 0, sizeof *out);
	return RI_ST_UNAVAILABLE;
}

static int
stub_range_read(struct ri_store *s, const struct ri_query *q, struct ri_records *out)
{
	(void)s; (void)q;
	memset(out, 0, sizeof *out);
	return RI_ST_UNAVAILABLE;
}

static int
stub_open_intents(struct ri_store *s, const char *kind, const char *act_key, ri_ms aged_by,
    struct ri_open_intent **out, size_t *n)
{
	(void)s; (void)kind; (void)act_key; (void)aged_by;
	*out = NULL;
	*n = 0;
	return RI_ST_UNAVAILABLE;
}

static int
stub_purge(struct ri_store *s, ri_ms now, int64_t *purged)
{
	(void)s; (void)now;
	*purged = 0;
	return RI_ST_UNAVAILABLE;
}

static int
stub_actor_add(struct ri_store *s, const char *actor, bool service, char cred[128])
{
	(void)s; (void)actor; (void)service;
	cred[0] = '\0';
	return RI_ST_UNAVAILABLE;
}

static int
stub_actor_revoke(struct ri_store *s, const char *actor)
{
	(void)s; (void)actor;
	return RI_ST_UNAVAILABLE;
}

static int
stub_actor_list(struct ri_store *s, struct ri_actor **out, size_t *n)
{
	(void)s;
	*out = NULL;
	*n = 0;
	return RI_ST_UNAVAILABLE;
}

static int
stub_take(struct ri_store *s, const char *kind, const char *act_key, const char *holder, ri_ms d,
    struct ri_grant *g)
{
	(void)s; (void)kind; (void)act_key; (void)holder; (void)d;
	memset(g, 0, sizeof *g);
	return RI_ST_UNAVAILABLE;
}

static int
stub_remaining(struct ri_store *s, const char *kind, const char *act_key, const char *holder, ri_ms *left)
{
	(void)s; (void)kind; (void)act_key; (void)holder;
	*left = RI_NONE;
	return RI_ST_UNAVAILABLE;
}

static int
stub_release(struct ri_store *s, const char *kind, const char *act_key, const char *holder)
{
	(void)s; (void)kind; (void)act_key; (void)holder;
	return RI_ST_UNAVAILABLE;
}

static int
stub_mark_get(struct ri_store *s, const char *name, int64_t *seq)
{
	(void)s; (void)name;
	*seq = 0;
	return RI_ST_UNAVAILABLE;
}

static int
stub_mark_set(struct ri_store *s, const char *name, int64_t seq)
{
	(void)s; (void)name; (void)seq;
	return RI_ST_UNAVAILABLE;
}

static int
stub_traverse(struct ri_store *s, ri_traverse_fn each, void *arg)
{
	(void)s; (void)each; (void)arg;
	return RI_ST_UNAVAILABLE;
}

static int
stub_seal(struct ri_store *s, const unsigned char sk[64], json_t *extra, struct ri_appended *out)
{
	(void)s; (void)sk; (void)extra;
	memset(out, 0, sizeof *out);
	return RI_ST_UNAVAILABLE;
}

static const unsigned char *
stub_instance_id(struct ri_store *s)
{
	(void)s;
	return stub_id;
}

static int
stub_head(struct ri_store *s, int64_t *seq, unsigned char hash[32])
{
	(void)s;
	*seq = 0;
	memset(hash, 0, 32);
	return RI_ST_UNAVAILABLE;
}

static int
stub_authenticate(struct ri_store *s, const char *actor, const char *cred, struct ri_actor *out)
{
	(void)s; (void)actor; (void)cred;
	if (out != NULL)
		memset(out, 0, sizeof *out);
	return RI_ST_UNAVAILABLE;
}

static int
stub_open_kinds(struct ri_store *s, ri_ms since, char ***kinds, size_t *n)
{
	(void)s; (void)since;
	*kinds = NULL;
	*n = 0;
	return RI_ST_UNAVAILABLE;
}

static const struct ri_store_error *
stub_error(struct ri_store *s)
{
	(void)s;
	return &stub_err;
}

static void
stub_close(struct ri_store *s)
{
	(void)s;
}

static const struct ri_store_ops stub_ops = {
	.record_action = stub_record_action, .read_record = stub_read_record,
	.range_read = stub_range_read, .open_intents = stub_open_intents, .purge = stub_purge,
	.actor_add = stub_actor_add, .actor_revoke = stub_actor_revoke, .actor_list = stub_actor_list,
	.authenticate = stub_authenticate, .open_kinds = stub_open_kinds, .take = stub_take, .remaining = stub_remaining, .release = stub_release,
	.mark_get = stub_mark_get, .mark_set = stub_mark_set, .traverse = stub_traverse,
	.seal = stub_seal, .instance_id = stub_instance_id, .head = stub_head, .error = stub_error,
	.close = stub_close,
};
static struct ri_store stub_store = { .ops = &stub_ops };

static void
fz_init(void)
{
	json_error_t je;
	json_t *root;
	ri_err err = { 0 };
	char path[] = "/tmp/ri-fuzz-request-XXXXXX";
	const char *tmp = getenv("TMPDIR");
	char buf[4096];

	if (sodium_init() < 0)
		abort();
	/* the seam has no reading, and no credential comes from the env */
	unsetenv("RI_NOW");
	unsetenv("RI_CREDENTIAL");
	unsetenv("RI_CREDENTIAL_FILE");
	unsetenv("RI_FAULT");
	root = json_loads(config_text, JSON_REJECT_DUPLICATES, &je);
	FZ_ASSERT(root != NULL, "config literal: %s", je.text);
	FZ_ASSERT(ri_config_from_json(root, "/nonexistent/ri-fuzz/ri.json", &inst.cfg, &err) == RI_OK,
	    "config literal: %s", err.msg);
	json_decref(root);
	inst.st = &stub_store;
	inst.flags = RI_WRITER;
	unopened.cfg = inst.cfg;
	unopened.st = NULL;
	unopened.flags = RI_WRITER;
	ri_fail(&unopened.unopened, RI_JOURNAL_UNAVAILABLE,
	    "journal /nonexistent/ri-fuzz/journal.db: No such file or directory (run ri-init?)");
	/* stdin: an unlinked file the input is written into */
	if (tmp != NULL && *tmp != '\0' && strlen(tmp) < sizeof buf - 32) {
		snprintf(buf, sizeof buf, "%s/ri-fuzz-request-XXXXXX", tmp);
		stdin_fd = mkstemp(buf);
		if (stdin_fd >= 0)
			unlink(buf);
	}
	if (stdin_fd < 0) {
		stdin_fd = mkstemp(path);
		FZ_ASSERT(stdin_fd >= 0, "mkstemp %s", path);
		unlink(path);
	}
	FZ_ASSERT(dup2(stdin_fd, STDIN_FILENO) == STDIN_FILENO, "dup2");
}

/* ---- the commands' field tables (lib/protocol/requests.c: the very ones they parse with) */

static void
check_fields(const struct ri_field *f, json_t *req, const struct ri_req *q, const char *table)
{
	/* every field present was set, with the promised type; every other
	 * is NULL; every required one was present */
	for (; f->name != NULL; f++) {
		json_t *v = json_object_get(req, f->name);
		const void *at = (const char *)q + f->at;
		if (f->required)
			FZ_ASSERT(v != NULL, "%s: required \"%s\" absent after OK", table, f->name);
		switch (f->type) {
		case RI_F_STR:
			FZ_ASSERT(v == NULL ? *(const char *const *)at == NULL :
			    json_is_string(v) && *(const char *const *)at == json_string_value(v),
			    "%s: \"%s\"", table, f->name);
			break;
		case RI_F_CODE:
			FZ_ASSERT(v == NULL ? *(json_t *const *)at == NULL :
			    (json_is_string(v) || json_is_integer(v)) && *(json_t *const *)at == v,
			    "%s: \"%s\"", table, f->name);
			break;
		case RI_F_OBJ:
			FZ_ASSERT(v == NULL ? *(json_t *const *)at == NULL :
			    json_is_object(v) && *(json_t *const *)at == v, "%s: \"%s\"", table, f->name);
			break;
		default:
			break;
		}
	}
}

static void
parse_with(json_t *req, const struct ri_field *fields, struct ri_req *q, const char *table)
{
	ri_err err = { 0 };
	int rc = ri_req_parse(req, fields, q, &err);

	FZ_ASSERT(rc == RI_OK || rc == RI_MALFORMED, "%s: ri_req_parse answered %d", table, rc);
	if (rc == RI_OK)
		check_fields(fields, req, q, table);
	else
		FZ_ASSERT(err.code == RI_MALFORMED && err.msg[0] != '\0', "%s: no message", table);
}

static void
all_tables(json_t *req)
{
	struct ri_req q;

	parse_with(req, ri_open_fields, &q, "open");
	parse_with(req, ri_close_fields, &q, "close");
	/* the vocabulary check close makes on what it parsed */
	if (q.outcome_action_ref != NULL)
		for (size_t i = 0; i < inst.cfg->n_kinds; i++)
			(void)ri_is_outcome_ref(&inst.cfg->kinds[i], q.outcome_action_ref);
	parse_with(req, ri_refuse_fields, &q, "refuse");
	if (q.constituent_code != NULL) {
		/* what ri-refuse packs into its refusal */
		json_t *j = json_pack("{s:s, s:s, s:O}", "refused", "recording-failure", "position",
		    "refusal", "constituent_code", q.constituent_code);
		FZ_ASSERT(j != NULL, "refuse: json_pack of constituent_code");
		free(ri_json_canonical(j));
		json_decref(j);
	}
	parse_with(req, ri_yield_fields, &q, "yield");
	parse_with(req, ri_resolve_fields, &q, "resolve");
	parse_with(req, ri_read_fields, &q, "read");
}

/* ---- time text ---- */

#define YEAR0_MS (-62167219200000LL)     /* 0000-01-01T00:00:00Z */
#define YEAR9999_MS 253402300799999LL     /* 9999-12-31T23:59:59.999Z */

static void
time_text(const char *s)
{
	ri_ms t, back, d;
	char buf[RI_INSTANT_LEN], secs[64];

	if (ri_parse_instant(s, &t) == 0 && t >= YEAR0_MS && t <= YEAR9999_MS) {
		ri_format_instant(t, buf);
		FZ_ASSERT(ri_parse_instant(buf, &back) == 0 && back == t,
		    "instant \"%s\" -> %lld -> \"%s\" does not round-trip", s, (long long)t, buf);
	}
	if (ri_parse_duration(s, &d) == 0) {
		FZ_ASSERT(d >= 0, "duration \"%s\" -> %lld", s, (long long)d);
		ri_format_seconds(d, secs, sizeof secs);
	}
}

/* Every string value (and key) of the request, bounded. */
static void
walk_strings(json_t *j, int depth, size_t *budget)
{
	const char *key;
	json_t *v;
	size_t i;

	if (*budget == 0 || depth > 64)
		return;
	(*budget)--;
	if (json_is_string(j)) {
		time_text(json_string_value(j));
	} else if (json_is_object(j)) {
		json_object_foreach(j, key, v) {
			time_text(key);
			walk_strings(v, depth + 1, budget);
		}
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			walk_strings(v, depth + 1, budget);
	}
}

/* ---- the actions: no journal; a stub store and no clock ---- */

static void
check_answer(const char *what, const char *arm, int rc, json_t *ans, const ri_err *err)
{
	switch (rc) {
	case RI_OK:
		/* only ri-yield succeeds without a journal: with an alert */
		FZ_ASSERT(strcmp(what, "ri_yield") == 0 && json_is_object(ans) &&
		    json_is_true(json_object_get(ans, "ok")), "%s (%s) succeeded", what, arm);
		break;
	case RI_INVALID_CREDENTIAL:
		/* ri-yield only: no actor or no credential (close 1) */
		FZ_ASSERT(strcmp(what, "ri_yield") == 0, "%s (%s) answered invalid-credential", what, arm);
		/* fall through */
	case RI_MALFORMED: case RI_INVALID_REQUEST: case RI_CONFIG: case RI_JOURNAL_UNAVAILABLE:
	case RI_SECTION_UNAVAILABLE: case RI_RF_INTENT: case RI_RF_OUTCOME: case RI_RF_REFUSAL:
	case RI_RF_RESOLUTION:
		FZ_ASSERT(err->code == rc && err->msg[0] != '\0', "%s (%s): err not set for %d", what, arm, rc);
		if (rc != RI_MALFORMED && rc != RI_CONFIG)
			FZ_ASSERT(json_is_object(ans) && json_is_string(json_object_get(ans, "refused")),
			    "%s (%s): %d without a refusal", what, arm, rc);
		break;
	default:
		FZ_ASSERT(0, "%s (%s) answered %d (%s)", what, arm, rc, err->msg);
	}
	if (ans != NULL)
		free(ri_json_canonical(ans));
}

static void
actions(json_t *req)
{
	static const struct {
		const char *name;
		int (*fn)(ri *, json_t *, json_t **, ri_err *);
	} acts[] = {
		{ "ri_open", ri_open }, { "ri_close", ri_close }, { "ri_refuse", ri_refuse },
		{ "ri_yield", ri_yield }, { "ri_resolve", ri_resolve },
		{ "ri_read_invocation", ri_read_invocation },
	};
	struct ri *arms[] = { &unopened, &inst };
	static const char *const arm_names[] = { "no journal", "stub store" };

	for (size_t a = 0; a < 2; a++) {
		for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
			json_t *ans = NULL;
			ri_err err;
			int rc;

			memset(&err, 0, sizeof err);
			rc = acts[i].fn(arms[a], req, &ans, &err);
			check_answer(acts[i].name, arm_names[a], rc, ans, &err);
			json_decref(ans);
		}
	}
}

/* A shorthand flag merged over the request (ri_cmd_main). */
static void
shorthand(json_t *req)
{
	json_t *copy = json_deep_copy(req);
	ri_err err = { 0 };
	int rc;

	if (copy == NULL)
		return;
	rc = ri_cli_flag(copy, "kind", json_string("ledger"), &err);
	FZ_ASSERT(rc == RI_OK || rc == RI_USAGE, "ri_cli_flag answered %d", rc);
	if (rc == RI_OK) {
		json_t *k = json_object_get(copy, "kind");
		FZ_ASSERT(json_is_string(k) && strcmp(json_string_value(k), "ledger") == 0,
		    "ri_cli_flag answered OK but \"kind\" is not the flag's value");
	}
	json_decref(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	json_t *req = NULL;
	ri_err err = { 0 };
	size_t budget = 4096;
	int rc;

	if (!ready) {
		fz_init();
		ready = true;
	}
	/* the input is stdin */
	FZ_ASSERT(ftruncate(stdin_fd, 0) == 0, "ftruncate");
	if (size > 0)
		FZ_ASSERT(pwrite(stdin_fd, data, size, 0) == (ssize_t)size, "pwrite");
	FZ_ASSERT(lseek(STDIN_FILENO, 0, SEEK_SET) == 0, "lseek");
	rc = ri_cli_request(false, false, ri_request_max(&inst), &req, &err);
	FZ_ASSERT(rc == RI_OK || rc == RI_MALFORMED, "ri_cli_request answered %d", rc);
	if (rc != RI_OK) {
		FZ_ASSERT(req == NULL && err.msg[0] != '\0', "a refused request left a value");
		return 0;
	}
	FZ_ASSERT(json_is_object(req), "ri_cli_request answered OK with a non-object");
	all_tables(req);
	walk_strings(req, 0, &budget);
	actions(req);
	shorthand(req);
	json_decref(req);
	return 0;
}
