/* test_config.c -- ri.json(5) parsing and validation, the protocol's terms,
 * and the five conditions of instance start against the walkthrough. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/config.h"

static int failures;
static char tmp[PATH_MAX];      /* mkdtemp directory, as created */
static char rtmp[PATH_MAX];     /* its realpath: what the config resolves to */

#define CHECK(cond, ...) do {                                           \
	if (!(cond)) {                                                  \
		failures++;                                             \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);    \
		fprintf(stderr, __VA_ARGS__);                           \
		fputc('\n', stderr);                                    \
	}                                                               \
} while (0)

#define CHECK_STR(got, want) do {                                       \
	const char *g_ = (got), *w_ = (want);                           \
	CHECK(g_ != NULL && strcmp(g_, w_) == 0,                        \
	    "%s: got \"%s\", want \"%s\"", #got, g_ ? g_ : "(null)", w_); \
} while (0)

/* INTERFACE.md's example with the walkthrough's numbers ("Walkthrough -- a
 * disclosure, three ways"): neither fence is declared there. */
static const char base_json[] =
    "{\n"
    "  \"journal\": \"/var/lib/ri/journal.db\",\n"
    "  \"findings\": \"/var/lib/ri/findings.db\",\n"
    "  \"integrity_key_file\": \"/etc/ri/journal.key\",\n"
    "  \"seal_key_file\": \"/etc/ri/seal.key\",\n"
    "  \"clock\": \"system\",\n"
    "  \"instance\": {\n"
    "    \"clock_offset_allowance\": \"2s\",\n"
    "    \"reconciliation_cadence\": \"60s\",\n"
    "    \"run_bound\": \"135s\",\n"
    "    \"closure_latency\": \"12s\",\n"
    "    \"journal_write_bound\": \"3s\",\n"
    "    \"read_bound\": \"2s\",\n"
    "    \"compensation_window\": \"10m\",\n"
    "    \"intent_candidates_cap\": 16,\n"
    "    \"read_cap\": 20,\n"
    "    \"reference_length_cap\": 256,\n"
    "    \"payload_cap\": 65536,\n"
    "    \"journal_fence\": \"none\"\n"
    "  },\n"
    "  \"kinds\": {\n"
    "    \"ledger\": {\n"
    "      \"outcomes\": [\"disclosed\"],\n"
    "      \"repeatable\": true,\n"
    "      \"completion_bound\": \"30s\",\n"
    "      \"commit_round_trip\": \"1s\",\n"
    "      \"probe_round_trip\": \"1s\",\n"
    "      \"retention_period\": \"400d\",\n"
    "      \"commit_fence\": \"none\",\n"
    "      \"pairing_datum\": \"nonce\",\n"
    "      \"outcome_envelope\": 4096,\n"
    "      \"retry_terminus\": \"lease\",\n"
    "      \"probe\": [\"/usr/local/libexec/probe-disclosure\", \"--store\", \"/var/lib/ledger.db\"],\n"
    "      \"service_identity\": { \"actor_ref\": \"ledger-reconciler\", \"credential_file\": \"/etc/ri/reconciler.cred\" }\n"
    "    }\n"
    "  }\n"
    "}\n";

static char *
write_text(const char *name, const char *text)
{
	static char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", tmp, name);
	if ((f = fopen(path, "w")) == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
		fprintf(stderr, "write %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return path;
}

static json_t *
base(void)
{
	json_error_t je;
	json_t *j = json_loads(base_json, JSON_REJECT_DUPLICATES, &je);

	if (j == NULL) {
		fprintf(stderr, "base_json: %s\n", je.text);
		exit(2);
	}
	return j;
}

static int
load_json(json_t *j, struct ri_config **c, ri_err *err)
{
	char *text = json_dumps(j, JSON_INDENT(2));
	int rc = ri_config_load(write_text("ri.json", text), c, err);

	free(text);
	return rc;
}

static struct ri_config *
load_base(void)
{
	struct ri_config *c;
	ri_err err = { 0 };
	json_t *j = base();

	if (load_json(j, &c, &err) != RI_OK) {
		fprintf(stderr, "base config refused: %s\n", err.msg);
		exit(2);
	}
	json_decref(j);
	return c;
}

/* Set (or, with value NULL, delete) the member at a '/'-separated path;
 * value "$LEDGER" is a copy of kinds.ledger. */
static void
mutate(json_t *root, const char *at, const char *value)
{
	char buf[256], *comp, *next;
	json_t *o = root, *v;

	snprintf(buf, sizeof buf, "%s", at);
	comp = buf;
	while ((next = strchr(comp, '/')) != NULL) {
		*next = '\0';
		o = json_object_get(o, comp);
		comp = next + 1;
	}
	if (value == NULL) {
		json_object_del(o, comp);
		return;
	}
	if (strcmp(value, "$LEDGER") == 0)
		v = json_deep_copy(json_object_get(json_object_get(root, "kinds"), "ledger"));
	else
		v = json_loads(value, JSON_DECODE_ANY, NULL);
	if (v == NULL) {
		fprintf(stderr, "bad test value %s\n", value);
		exit(2);
	}
	json_object_set_new(o, comp, v);
}

static void
test_valid(void)
{
	struct ri_config *c = load_base();
	const struct ri_kind *k;

	CHECK_STR(c->journal, "/var/lib/ri/journal.db");
	CHECK_STR(c->findings, "/var/lib/ri/findings.db");
	CHECK_STR(c->integrity_key_file, "/etc/ri/journal.key");
	CHECK_STR(c->seal_key_file, "/etc/ri/seal.key");
	CHECK_STR(c->dir, rtmp);
	CHECK(!c->clock_env && !c->fault_injection && !c->journal_fence, "flags");
	CHECK(c->clock_offset_allowance == 2000, "allowance %lld", (long long)c->clock_offset_allowance);
	CHECK(c->reconciliation_cadence == 60000, "cadence");
	CHECK(c->run_bound == 135000, "run_bound");
	CHECK(c->closure_latency == 12000, "closure_latency");
	CHECK(c->journal_write_bound == 3000, "jwb");
	CHECK(c->read_bound == 2000, "read_bound");
	CHECK(c->compensation_window == 600000, "window");
	CHECK(c->intent_candidates_cap == 16 && c->read_cap == 20 &&
	    c->reference_length_cap == 256 && c->payload_cap == 65536, "caps");
	CHECK(c->n_kinds == 1, "n_kinds %zu", c->n_kinds);
	k = ri_config_kind(c, "ledger");
	CHECK(k != NULL && k == &c->kinds[0], "ri_config_kind(ledger)");
	CHECK(ri_config_kind(c, "ledge") == NULL && ri_config_kind(c, "audit") == NULL,
	    "ri_config_kind: unknown names");
	if (k == NULL)
		goto out;
	CHECK_STR(k->name, "ledger");
	CHECK(k->n_outcomes == 1, "n_outcomes");
	CHECK_STR(k->outcomes[0], "disclosed");
	CHECK(k->repeatable, "repeatable");
	CHECK(k->completion_bound == 30000 && k->commit_round_trip == 1000 &&
	    k->probe_round_trip == 1000, "kind bounds");
	CHECK(k->retention_period == (ri_ms)400 * 86400000, "retention");
	CHECK(!k->commit_fence, "commit_fence");
	CHECK(k->pairing_datum == RI_PAIR_NONCE, "pairing");
	CHECK(k->outcome_envelope == 4096, "envelope");
	CHECK(k->retry_counted == 0, "retry lease");
	CHECK(k->n_probe == 3 && k->probe[3] == NULL, "probe argv");
	CHECK_STR(k->probe[0], "/usr/local/libexec/probe-disclosure");
	CHECK_STR(k->probe[1], "--store");
	CHECK_STR(k->probe[2], "/var/lib/ledger.db");
	CHECK_STR(k->service_actor, "ledger-reconciler");
	CHECK_STR(k->service_credential_file, "/etc/ri/reconciler.cred");
	/* Term sweep lease, settle bound, at risk threshold. */
	CHECK(ri_sweep_lease(c) == 15000, "sweep lease");
	CHECK(ri_settle_bound(c) == 5000, "settle bound");
	CHECK(ri_at_risk_threshold(c) == 600000 - 270000 - 60000 - 2000, "at risk threshold");
	CHECK(ri_longest_retention(c) == (ri_ms)400 * 86400000, "longest retention");
out:
	ri_config_free(c);
}

/* Defaults, the other spellings, relative paths. */
static void
test_variants(void)
{
	struct ri_config *c;
	ri_err err = { 0 };
	json_t *j = base();
	char want[PATH_MAX + 64], cwd[PATH_MAX];
	const struct ri_kind *k;

	mutate(j, "clock", NULL);
	mutate(j, "instance/journal_fence", NULL);
	mutate(j, "kinds/ledger/retry_terminus", NULL);
	mutate(j, "journal", "\"data/journal.db\"");
	mutate(j, "findings", "\"./findings.db\"");
	mutate(j, "instance/clock_offset_allowance", "\"0s\"");  /* a zero allowance is lawful */
	mutate(j, "instance/read_bound", "1500");                 /* integer ms */
	mutate(j, "kinds/ledger/commit_round_trip", "\"250ms\"");
	mutate(j, "kinds/ledger/probe", "[\"./bin/probe\", \"--x\"]");
	mutate(j, "kinds/ledger/service_identity", "null");
	mutate(j, "kinds/second", "$LEDGER");
	mutate(j, "kinds/second/retry_terminus", "{\"counted\": 3}");
	mutate(j, "kinds/second/pairing_datum", "\"now\"");
	mutate(j, "kinds/second/commit_fence", "\"declared\"");
	mutate(j, "kinds/second/retention_period", "\"500d\"");
	mutate(j, "kinds/second/probe", "[\"probe-disclosure\"]");
	mutate(j, "kinds/second/service_identity",
	    "{\"actor_ref\": \"r\", \"credential_file\": \"cred/r.cred\"}");
	if (load_json(j, &c, &err) != RI_OK) {
		CHECK(0, "variants refused: %s", err.msg);
		json_decref(j);
		return;
	}
	CHECK(!c->clock_env, "clock default system");
	CHECK(!c->fault_injection, "fault_injection default false");
	CHECK(!c->journal_fence, "journal_fence default none");
	snprintf(want, sizeof want, "%s/data/journal.db", rtmp);
	CHECK_STR(c->journal, want);
	snprintf(want, sizeof want, "%s/findings.db", rtmp);
	CHECK_STR(c->findings, want);
	CHECK(c->clock_offset_allowance == 0, "zero allowance");
	CHECK(c->read_bound == 1500, "integer ms");
	CHECK(c->n_kinds == 2, "two kinds");
	k = ri_config_kind(c, "ledger");
	CHECK(k != NULL && k->retry_counted == 0, "retry_terminus default lease");
	CHECK(k != NULL && k->commit_round_trip == 250, "250ms");
	snprintf(want, sizeof want, "%s/bin/probe", rtmp);
	CHECK(k != NULL && strcmp(k->probe[0], want) == 0, "probe ./bin/probe resolved");
	CHECK(k != NULL && strcmp(k->probe[1], "--x") == 0, "probe argv[1] untouched");
	CHECK(k != NULL && k->service_actor == NULL && k->service_credential_file == NULL,
	    "service_identity null");
	k = ri_config_kind(c, "second");
	CHECK(k != NULL && k->retry_counted == 3, "counted 3");
	CHECK(k != NULL && k->pairing_datum == RI_PAIR_NOW, "pairing now");
	CHECK(k != NULL && k->commit_fence, "commit_fence declared");
	CHECK(k != NULL && strcmp(k->probe[0], "probe-disclosure") == 0, "bare probe left to PATH");
	snprintf(want, sizeof want, "%s/cred/r.cred", rtmp);
	CHECK(k != NULL && strcmp(k->service_credential_file, want) == 0, "credential resolved");
	CHECK(ri_longest_retention(c) == (ri_ms)500 * 86400000, "longest retention of two");
	ri_config_free(c);

	/* A relative config path still yields an absolute dir. */
	mutate(j, "clock", "\"env\"");
	mutate(j, "fault_injection", "true");
	mutate(j, "instance/journal_fence", "\"declared\"");
	mutate(j, "kinds/second/pairing_datum", "\"none\"");
	if (getcwd(cwd, sizeof cwd) == NULL || chdir(tmp) != 0) {
		CHECK(0, "chdir");
		json_decref(j);
		return;
	}
	if (load_json(j, &c, &err) != RI_OK) {
		CHECK(0, "variants 2 refused: %s", err.msg);
	} else {
		ri_config_free(c);
		if (ri_config_load("ri.json", &c, &err) != RI_OK) {
			CHECK(0, "relative load refused: %s", err.msg);
		} else {
			CHECK_STR(c->dir, rtmp);
			CHECK_STR(c->path, "ri.json");
			snprintf(want, sizeof want, "%s/data/journal.db", rtmp);
			CHECK_STR(c->journal, want);
			CHECK(c->clock_env && c->fault_injection && c->journal_fence, "env, faults, fence");
			k = ri_config_kind(c, "second");
			CHECK(k != NULL && k->pairing_datum == RI_PAIR_NONE, "pairing none");
			ri_config_free(c);
		}
	}
	if (chdir(cwd) != 0)
		CHECK(0, "chdir back");
	json_decref(j);
}

static void
test_config_path(void)
{
	unsetenv("RI_CONFIG");
	CHECK_STR(ri_config_path(NULL), "ri.json");
	CHECK_STR(ri_config_path("x.json"), "x.json");
	setenv("RI_CONFIG", "/etc/ri/ri.json", 1);
	CHECK_STR(ri_config_path(NULL), "/etc/ri/ri.json");
	CHECK_STR(ri_config_path("x.json"), "x.json");
	unsetenv("RI_CONFIG");
}

/* Each case: mutate the walkthrough config (or write raw text), load, and
 * expect RI_CONFIG with the message starting `want` ("@" = the file path). */
static const struct ecase {
	const char *at, *value, *raw, *want, *contains;
} ecases[] = {
	/* unknown keys at every level */
	{ "bogus", "1", NULL, "bogus: unknown key", NULL },
	{ "instance/bogus", "1", NULL, "instance.bogus: unknown key", NULL },
	{ "kinds/ledger/bogus", "1", NULL, "kinds.ledger.bogus: unknown key", NULL },
	{ "kinds/ledger/service_identity/extra", "1", NULL,
	    "kinds.ledger.service_identity.extra: unknown key", NULL },
	{ "kinds/ledger/retry_terminus", "{\"counted\": 2, \"x\": 1}", NULL,
	    "kinds.ledger.retry_terminus.x: unknown key", NULL },
	{ "instance/Run_bound", "\"1s\"", NULL, "instance.Run_bound: unknown key", NULL },
	{ "a b", "1", NULL, "[\"a b\"]: unknown key", NULL },
	/* top level */
	{ "journal", NULL, NULL, "journal: missing required key", NULL },
	{ "journal", "\"\"", NULL, "journal: expected a non-empty string", NULL },
	{ "findings", "3", NULL, "findings: expected a non-empty string", NULL },
	{ "integrity_key_file", NULL, NULL, "integrity_key_file: missing required key", NULL },
	{ "seal_key_file", "null", NULL, "seal_key_file: expected a non-empty string", NULL },
	{ "clock", "\"wall\"", NULL, "clock: expected \"system\" or \"env\"", NULL },
	{ "fault_injection", "\"yes\"", NULL, "fault_injection: expected true or false", NULL },
	{ "instance", NULL, NULL, "instance: missing required key", NULL },
	{ "instance", "[]", NULL, "instance: expected an object", NULL },
	{ "kinds", NULL, NULL, "kinds: missing required key", NULL },
	{ "kinds", "{}", NULL, "kinds: expected at least one kind", NULL },
	{ "kinds", "[\"ledger\"]", NULL, "kinds: expected an object", NULL },
	/* instance: durations, units, ranges */
	{ "instance/run_bound", "\"135\"", NULL,
	    "instance.run_bound: expected a duration like \"30s\"", NULL },
	{ "instance/run_bound", "\"135 s\"", NULL,
	    "instance.run_bound: expected a duration like \"30s\"", NULL },
	{ "instance/run_bound", "\"135y\"", NULL,
	    "instance.run_bound: expected a duration like \"30s\"", NULL },
	{ "instance/run_bound", "\"2.5s\"", NULL,
	    "instance.run_bound: expected a duration like \"30s\"", NULL },
	{ "instance/run_bound", "1.5", NULL,
	    "instance.run_bound: expected a duration like \"30s\"", NULL },
	{ "instance/run_bound", "-5", NULL,
	    "instance.run_bound: expected a duration like \"30s\"", NULL },
	{ "instance/run_bound", "0", NULL, "instance.run_bound: must be greater than zero", NULL },
	{ "instance/closure_latency", "\"0s\"", NULL,
	    "instance.closure_latency: must be greater than zero", NULL },
	{ "instance/clock_offset_allowance", "\"-1s\"", NULL,
	    "instance.clock_offset_allowance: expected a duration like \"30s\"", NULL },
	{ "instance/compensation_window", "\"400000000d\"", NULL,
	    "instance.compensation_window: must not exceed", NULL },
	{ "instance/compensation_window", NULL, NULL,
	    "instance.compensation_window: missing required key", NULL },
	{ "instance/read_cap", "0", NULL, "instance.read_cap: expected a positive integer", NULL },
	{ "instance/read_cap", "-1", NULL, "instance.read_cap: expected a positive integer", NULL },
	{ "instance/read_cap", "\"20\"", NULL, "instance.read_cap: expected a positive integer", NULL },
	{ "instance/read_cap", "2.0", NULL, "instance.read_cap: expected a positive integer", NULL },
	{ "instance/payload_cap", "100", NULL, "instance.payload_cap: must be at least 1024", NULL },
	{ "instance/reference_length_cap", "4", NULL,
	    "instance.reference_length_cap: must be at least 8", NULL },
	{ "instance/intent_candidates_cap", NULL, NULL,
	    "instance.intent_candidates_cap: missing required key", NULL },
	{ "instance/journal_fence", "\"yes\"", NULL,
	    "instance.journal_fence: expected \"none\" or \"declared\"", NULL },
	/* kind names; journal 5 */
	{ "kinds/audit", "$LEDGER", NULL, "kinds.audit: \"audit\" may not be a kind", NULL },  /* journal 5 */
	{ "kinds/a.b", "$LEDGER", NULL, "kinds[\"a.b\"]: a kind name is", NULL },
	{ "kinds/", "$LEDGER", NULL, "kinds[\"\"]: a kind name is", NULL },
	{ "kinds/le dger", "$LEDGER", NULL, "kinds[\"le dger\"]: a kind name is", NULL },
	{ "kinds/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "$LEDGER", NULL,
	    "kinds[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]: a kind name is",
	    NULL },
	{ "kinds/ledger", "5", NULL, "kinds.ledger: expected an object", NULL },
	/* outcomes; journal 2, 3 */
	{ "kinds/ledger/outcomes", "[]", NULL,
	    "kinds.ledger.outcomes: expected a non-empty array", NULL },
	{ "kinds/ledger/outcomes", "\"disclosed\"", NULL,
	    "kinds.ledger.outcomes: expected a non-empty array", NULL },
	{ "kinds/ledger/outcomes", "[\"disclosed\", \"intended\"]", NULL,
	    "kinds.ledger.outcomes[1]: \"intended\" is a reserved name", NULL },
	{ "kinds/ledger/outcomes", "[\"refused\"]", NULL,
	    "kinds.ledger.outcomes[0]: \"refused\" is a reserved name", NULL },
	{ "kinds/ledger/outcomes", "[\"recovery_intended\"]", NULL,
	    "kinds.ledger.outcomes[0]: \"recovery_intended\" is a reserved name", NULL },
	{ "kinds/ledger/outcomes", "[\"abandoned\"]", NULL,
	    "kinds.ledger.outcomes[0]: \"abandoned\" is a reserved name", NULL },
	{ "kinds/ledger/outcomes", "[\"a\", \"escalated\"]", NULL,
	    "kinds.ledger.outcomes[1]: \"escalated\" is a reserved name", NULL },
	{ "kinds/ledger/outcomes", "[\"a\", \"b\", \"a\"]", NULL,
	    "kinds.ledger.outcomes[2]: duplicate outcome \"a\"", NULL },
	{ "kinds/ledger/outcomes", "[\"dis.closed\"]", NULL,
	    "kinds.ledger.outcomes[0]: expected an outcome name", NULL },
	{ "kinds/ledger/outcomes", "[\"a\", 1]", NULL,
	    "kinds.ledger.outcomes[1]: expected an outcome name", NULL },
	/* the kind's other keys */
	{ "kinds/ledger/repeatable", "\"yes\"", NULL,
	    "kinds.ledger.repeatable: expected true or false", NULL },
	{ "kinds/ledger/repeatable", NULL, NULL, "kinds.ledger.repeatable: missing required key", NULL },
	{ "kinds/ledger/completion_bound", "\"30\"", NULL,
	    "kinds.ledger.completion_bound: expected a duration like \"30s\"", NULL },
	{ "kinds/ledger/completion_bound", "\"30x\"", NULL,
	    "kinds.ledger.completion_bound: expected a duration like \"30s\"", NULL },
	{ "kinds/ledger/probe_round_trip", "true", NULL,
	    "kinds.ledger.probe_round_trip: expected a duration like \"30s\"", NULL },
	{ "kinds/ledger/retention_period", "\"0d\"", NULL,
	    "kinds.ledger.retention_period: must be greater than zero", NULL },
	{ "kinds/ledger/commit_round_trip", NULL, NULL,
	    "kinds.ledger.commit_round_trip: missing required key", NULL },
	{ "kinds/ledger/commit_fence", "\"maybe\"", NULL,
	    "kinds.ledger.commit_fence: expected \"none\" or \"declared\"", NULL },
	{ "kinds/ledger/commit_fence", NULL, NULL, "kinds.ledger.commit_fence: missing required key", NULL },
	{ "kinds/ledger/pairing_datum", "\"clock\"", NULL,
	    "kinds.ledger.pairing_datum: expected \"nonce\", \"now\" or \"none\"", NULL },
	{ "kinds/ledger/outcome_envelope", "0", NULL,
	    "kinds.ledger.outcome_envelope: expected a positive integer", NULL },
	/* retry_terminus */
	{ "kinds/ledger/retry_terminus", "\"forever\"", NULL,
	    "kinds.ledger.retry_terminus: expected \"lease\" or {\"counted\": N}", NULL },
	{ "kinds/ledger/retry_terminus", "3", NULL,
	    "kinds.ledger.retry_terminus: expected \"lease\" or {\"counted\": N}", NULL },
	{ "kinds/ledger/retry_terminus", "{\"counted\": 0}", NULL,
	    "kinds.ledger.retry_terminus.counted: expected a positive integer", NULL },
	{ "kinds/ledger/retry_terminus", "{}", NULL,
	    "kinds.ledger.retry_terminus.counted: missing required key", NULL },
	/* probe */
	{ "kinds/ledger/probe", "[]", NULL, "kinds.ledger.probe: expected a non-empty array", NULL },
	{ "kinds/ledger/probe", "\"/bin/probe\"", NULL,
	    "kinds.ledger.probe: expected a non-empty array", NULL },
	{ "kinds/ledger/probe", "[\"/bin/probe\", \"\"]", NULL,
	    "kinds.ledger.probe[1]: expected a non-empty string", NULL },
	{ "kinds/ledger/probe", "[1]", NULL, "kinds.ledger.probe[0]: expected a non-empty string", NULL },
	{ "kinds/ledger/probe", NULL, NULL, "kinds.ledger.probe: missing required key", NULL },
	/* service_identity */
	{ "kinds/ledger/service_identity", NULL, NULL,
	    "kinds.ledger.service_identity: missing required key", NULL },
	{ "kinds/ledger/service_identity", "\"ledger-reconciler\"", NULL,
	    "kinds.ledger.service_identity: expected null or", NULL },
	{ "kinds/ledger/service_identity/actor_ref", "\"\"", NULL,
	    "kinds.ledger.service_identity.actor_ref: expected a non-empty string", NULL },
	{ "kinds/ledger/service_identity/credential_file", NULL, NULL,
	    "kinds.ledger.service_identity.credential_file: missing required key", NULL },
	{ "kinds/ledger/service_identity/credential_file", "false", NULL,
	    "kinds.ledger.service_identity.credential_file: expected a non-empty string", NULL },
	/* not JSON, duplicate keys, not an object: file:line:col */
	{ NULL, NULL, "{\"journal\": \"a\",\n \"journal\": \"b\"}\n", "@:2:", "duplicate" },
	{ NULL, NULL, "{\"instance\": {\"run_bound\": \"1s\", \"run_bound\": \"2s\"}}\n", "@:1:",
	    "duplicate" },
	{ NULL, NULL, "journal = /var/lib/ri\n", "@:1:", NULL },
	{ NULL, NULL, "{\"journal\": \"a\",\n", "@:2:", NULL },
	{ NULL, NULL, "[1, 2]\n", "@: expected a JSON object", NULL },
	{ NULL, NULL, "", "@:", NULL },
};

static void
test_errors(void)
{
	char want[PATH_MAX + 256];
	size_t n = sizeof ecases / sizeof ecases[0];
	struct ri_config *c;
	ri_err err;
	int rc;

	CHECK(n >= 30, "only %zu error cases", n);
	for (size_t i = 0; i < n; i++) {
		const struct ecase *e = &ecases[i];
		const char *path = NULL;

		memset(&err, 0, sizeof err);
		c = NULL;
		if (e->raw != NULL) {
			path = write_text("ri.json", e->raw);
			rc = ri_config_load(path, &c, &err);
		} else {
			json_t *j = base();
			mutate(j, e->at, e->value);
			rc = load_json(j, &c, &err);
			json_decref(j);
		}
		if (e->want[0] == '@')
			snprintf(want, sizeof want, "%s%s", path, e->want + 1);
		else
			snprintf(want, sizeof want, "%s", e->want);
		CHECK(rc == RI_CONFIG && c == NULL && err.code == RI_CONFIG,
		    "case %zu (%s = %s): rc %d, want RI_CONFIG (%s)", i,
		    e->at ? e->at : "raw", e->value ? e->value : "(deleted)", rc, want);
		CHECK(strncmp(err.msg, want, strlen(want)) == 0,
		    "case %zu (%s = %s): got \"%s\", want prefix \"%s\"", i,
		    e->at ? e->at : "raw", e->value ? e->value : "(deleted)", err.msg, want);
		if (e->contains != NULL)
			CHECK(strstr(err.msg, e->contains) != NULL,
			    "case %zu: \"%s\" lacks \"%s\"", i, err.msg, e->contains);
		ri_config_free(c);
	}

	/* a missing file names itself */
	snprintf(want, sizeof want, "%s/absent.json", tmp);
	rc = ri_config_load(want, &c, &err);
	CHECK(rc == RI_CONFIG && strncmp(err.msg, want, strlen(want)) == 0 &&
	    strstr(err.msg, "No such file") != NULL, "absent file: %s", err.msg);
}

static const struct ri_condition *
cond(const struct ri_config *c, const struct ri_kind *k, int n, struct ri_condition cs[5])
{
	ri_conditions(c, k, cs);
	return &cs[n - 1];
}

/* Walkthrough -- a disclosure, three ways: the five results, byte for byte. */
static void
test_walkthrough(void)
{
	struct ri_config *c = load_base();
	struct ri_kind *k = &c->kinds[0];
	struct ri_condition cs[5];
	static const char *const want[5] = {
		"30 + 2×2 + 2×60 + 3×135 = 559 s < 600 s",
		"30 + 2 + 600 = 632 s < 34560000 s",
		"30 s > 2×2 + 2×3 + 1 = 11 s; neither fence is declared, so no allowance is charged",
		"135 s ≥ max(30, 12 + 3) + 12 = 42 s",
		"12 s > 2 + 2×3 + 1 = 9 s",
	};
	static const char *const rules[5] = {
		"Instance start 4", "Instance start 5", "Instance start 6",
		"Instance start 7", "Instance start 8",
	};
	ri_err err = { 0 };

	ri_conditions(c, k, cs);
	for (int i = 0; i < 5; i++) {
		CHECK(cs[i].number == i + 1, "condition %d number %d", i + 1, cs[i].number);
		CHECK_STR(cs[i].rule, rules[i]);
		CHECK(cs[i].name != NULL && cs[i].name[0] != '\0', "condition %d name", i + 1);
		CHECK(cs[i].pass, "condition %d fails on the walkthrough", i + 1);
		CHECK_STR(cs[i].arithmetic, want[i]);
	}
	CHECK(cs[0].lhs == 559000 && cs[0].rhs == 600000, "condition 1 sides");
	CHECK(cs[2].lhs == 30000 && cs[2].rhs == 11000, "condition 3 sides");
	CHECK(cs[3].lhs == 135000 && cs[3].rhs == 42000, "condition 4 sides");
	CHECK(cs[4].lhs == 12000 && cs[4].rhs == 9000, "condition 5 sides");
	CHECK(ri_conditions_hold(c, &err) == RI_OK, "walkthrough holds: %s", err.msg);

	/* Instance start 8: the earlier draft's closure_latency = 5 s. */
	c->closure_latency = 5000;
	CHECK(!cond(c, k, 5, cs)->pass, "closure_latency 5 s passes condition 5");
	CHECK_STR(cs[4].arithmetic, "5 s ≤ 2 + 2×3 + 1 = 9 s");
	CHECK(cs[0].pass && cs[1].pass && cs[2].pass && cs[3].pass,
	    "closure_latency 5 s fails another condition");
	CHECK(ri_conditions_hold(c, &err) == RI_CONFIG, "closure_latency 5 s holds");
	CHECK_STR(err.msg, "kind ledger: condition 5 (Instance start 8) fails: 5 s ≤ 2 + 2×3 + 1 = 9 s");
	ri_config_free(c);
}

/* Each boundary: EXCEEDS is strict (Instance start 4, 5, 6, 8); MUST NOT
 * EXCEED admits equality (Instance start 7). */
static void
test_boundaries(void)
{
	struct ri_config *c = load_base();
	struct ri_kind *k = &c->kinds[0];
	struct ri_condition cs[5];

	/* Instance start 4 */
	c->compensation_window = 559000;
	CHECK(!cond(c, k, 1, cs)->pass, "condition 1 passes at equality");
	CHECK_STR(cs[0].arithmetic, "30 + 2×2 + 2×60 + 3×135 = 559 s ≥ 559 s");
	c->compensation_window = 559001;
	CHECK(cond(c, k, 1, cs)->pass, "condition 1 fails 1 ms over");
	CHECK_STR(cs[0].arithmetic, "30 + 2×2 + 2×60 + 3×135 = 559 s < 559.001 s");
	c->compensation_window = 500000;
	CHECK(!cond(c, k, 1, cs)->pass, "condition 1 passes at 500 s");
	CHECK_STR(cs[0].arithmetic, "30 + 2×2 + 2×60 + 3×135 = 559 s ≥ 500 s");
	c->compensation_window = 600000;

	/* Instance start 5 */
	k->retention_period = 632000;
	CHECK(!cond(c, k, 2, cs)->pass, "condition 2 passes at equality");
	CHECK_STR(cs[1].arithmetic, "30 + 2 + 600 = 632 s ≥ 632 s");
	k->retention_period = 632001;
	CHECK(cond(c, k, 2, cs)->pass, "condition 2 fails 1 ms over");
	k->retention_period = (ri_ms)400 * 86400000;

	/* Instance start 6 */
	k->completion_bound = 11000;
	CHECK(!cond(c, k, 3, cs)->pass, "condition 3 passes at equality");
	CHECK_STR(cs[2].arithmetic,
	    "11 s ≤ 2×2 + 2×3 + 1 = 11 s; neither fence is declared, so no allowance is charged");
	k->completion_bound = 11001;
	CHECK(cond(c, k, 3, cs)->pass, "condition 3 fails 1 ms over");
	k->completion_bound = 30000;

	/* Instance start 7: equality passes */
	c->run_bound = 42000;
	CHECK(cond(c, k, 4, cs)->pass, "condition 4 fails at equality");
	CHECK_STR(cs[3].arithmetic, "42 s ≥ max(30, 12 + 3) + 12 = 42 s");
	c->run_bound = 41999;
	CHECK(!cond(c, k, 4, cs)->pass, "condition 4 passes 1 ms under");
	c->run_bound = 40000;
	CHECK(!cond(c, k, 4, cs)->pass, "condition 4 passes at 40 s");
	CHECK_STR(cs[3].arithmetic, "40 s < max(30, 12 + 3) + 12 = 42 s");
	/* the max takes the held lease when it is the longer */
	c->run_bound = 135000;
	c->closure_latency = 28000;
	k->completion_bound = 30000;
	c->journal_write_bound = 3000;
	CHECK(cond(c, k, 4, cs)->rhs == 31000 + 28000, "condition 4 max: %lld",
	    (long long)cs[3].rhs);
	CHECK_STR(cs[3].arithmetic, "135 s ≥ max(30, 28 + 3) + 28 = 59 s");
	c->closure_latency = 12000;

	/* Instance start 8 */
	c->closure_latency = 9000;
	CHECK(!cond(c, k, 5, cs)->pass, "condition 5 passes at equality");
	CHECK_STR(cs[4].arithmetic, "9 s ≤ 2 + 2×3 + 1 = 9 s");
	c->closure_latency = 9001;
	CHECK(cond(c, k, 5, cs)->pass, "condition 5 fails 1 ms over");
	CHECK_STR(cs[4].arithmetic, "9.001 s > 2 + 2×3 + 1 = 9 s");
	c->closure_latency = 12000;
	ri_config_free(c);
}

/* Allowance 11: either fence, or both, charges one allowance in condition 3. */
static void
test_fences(void)
{
	struct ri_config *c = load_base();
	struct ri_kind *k = &c->kinds[0];
	struct ri_condition cs[5];

	k->commit_fence = true;
	CHECK(cond(c, k, 3, cs)->rhs == 13000, "commit fence: %lld", (long long)cs[2].rhs);
	CHECK_STR(cs[2].arithmetic,
	    "30 s > 2×2 + 2×3 + 1 + 2 = 13 s; commit fence declared, one allowance charged");
	k->commit_fence = false;
	c->journal_fence = true;
	CHECK(cond(c, k, 3, cs)->rhs == 13000, "journal fence: %lld", (long long)cs[2].rhs);
	CHECK_STR(cs[2].arithmetic,
	    "30 s > 2×2 + 2×3 + 1 + 2 = 13 s; journal fence declared, one allowance charged");
	k->commit_fence = true;
	CHECK(cond(c, k, 3, cs)->rhs == 13000, "both fences: %lld", (long long)cs[2].rhs);
	CHECK_STR(cs[2].arithmetic,
	    "30 s > 2×2 + 2×3 + 1 + 2 = 13 s; commit and journal fences declared, one allowance charged");
	/* the charged allowance moves the boundary */
	k->completion_bound = 13000;
	CHECK(!cond(c, k, 3, cs)->pass, "fenced condition 3 passes at equality");
	CHECK_STR(cs[2].arithmetic,
	    "13 s ≤ 2×2 + 2×3 + 1 + 2 = 13 s; commit and journal fences declared, one allowance charged");
	k->completion_bound = 13001;
	CHECK(cond(c, k, 3, cs)->pass, "fenced condition 3 fails 1 ms over");
	/* Instance start 4: the allowance counts twice, fenced or not */
	CHECK(cond(c, k, 1, cs)->lhs == 13001 + 4000 + 120000 + 405000, "worst closure fenced");
	ri_config_free(c);
}

/* Instance start 2, 3: every kind is checked; the first failure is named. */
static void
test_hold_kinds(void)
{
	struct ri_config *c;
	ri_err err = { 0 };
	json_t *j = base();

	mutate(j, "kinds/second", "$LEDGER");
	mutate(j, "kinds/second/completion_bound", "\"10s\"");
	if (load_json(j, &c, &err) != RI_OK) {
		CHECK(0, "two kinds refused: %s", err.msg);
		json_decref(j);
		return;
	}
	CHECK(ri_conditions_hold(c, &err) == RI_CONFIG, "second kind's failure missed");
	CHECK_STR(err.msg, "kind second: condition 3 (Instance start 6) fails: "
	    "10 s ≤ 2×2 + 2×3 + 1 = 11 s; neither fence is declared, so no allowance is charged");
	ri_config_free(c);
	json_decref(j);
}

/* issue 40 point 9: a journal URI as ri prints it -- never its password */
static void
test_redact(void)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "postgresql://ri:s3cret@db.example:5432/ri", "postgresql://ri:***@db.example:5432/ri" },
		{ "postgres://ri:a/b?c@db/ri", "postgres://ri:***@db/ri" },
		{ "POSTGRESQL://u:p@h/d?sslmode=require&password=q&x=1", "POSTGRESQL://u:***@h/d?sslmode=require&password=***&x=1" },
		{ "postgresql:///ri?host=/tmp/s&user=ri&password=pw", "postgresql:///ri?host=/tmp/s&user=ri&password=***" },
		{ "postgresql://ri@db/ri", "postgresql://ri@db/ri" },
		{ "journal postgresql://u:pw@h/d: reachable", "journal postgresql://u:***@h/d: reachable" },
		{ "host=db password=pw user=ri", "host=db password=*** user=ri" },
		{ "a_password=kept-as-is", "a_password=kept-as-is" },
		{ "journal.db: no URI here", "journal.db: no URI here" },
	};
	char out[256];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		CHECK_STR(ri_redact(cases[i].in, out, sizeof out), cases[i].want);
	CHECK_STR(ri_redact("postgresql://u:secret@h/d", out, 16), "postgresql://u:");
}

int
main(void)
{
	snprintf(tmp, sizeof tmp, "%s/ri-test-config.XXXXXX",
	    getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(tmp) == NULL || realpath(tmp, rtmp) == NULL) {
		perror("mkdtemp");
		return 2;
	}
	test_valid();
	test_variants();
	test_config_path();
	test_errors();
	test_walkthrough();
	test_boundaries();
	test_fences();
	test_hold_kinds();
	test_redact();

	unlink(write_text("ri.json", ""));
	if (rmdir(tmp) != 0)
		fprintf(stderr, "could not remove %s: %s\n", tmp, strerror(errno));
	if (failures != 0) {
		fprintf(stderr, "test_config: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_config: ok (%zu error cases)\n", sizeof ecases / sizeof ecases[0]);
	return 0;
}
