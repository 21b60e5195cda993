/*
 * fuzz_config.c -- libFuzzer harness for ri.json(5): ri_config_from_json on
 * arbitrary JSON (nothing is read from or written to disk; relative paths
 * resolve against a fixed directory that does not exist), then, when it
 * parsed, the five conditions of instance start for every kind, the terms,
 * and ri_config_free.
 *
 * Asserts: no crash, no sanitizer report; a refusal is RI_CONFIG with a
 * message and no config; an accepted config holds what ri.json(5) promises
 * (absolute paths, bounded positive durations, plain kind and outcome
 * names, a NULL-terminated probe argv).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/config.h"

#define FZ_ASSERT(c, ...) do {                                          \
	if (!(c)) {                                                     \
		fprintf(stderr, "fuzz_config: assertion failed: %s: ", #c); \
		fprintf(stderr, __VA_ARGS__);                           \
		fputc('\n', stderr);                                    \
		abort();                                                \
	}                                                               \
} while (0)

#define CONFIG_PATH "/nonexistent/ri-fuzz/ri.json"
#define DURATION_MAX ((ri_ms)365000 * 86400000)

static bool
plain(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
			return false;
	return true;
}

static void
check_duration(ri_ms d, bool zero_ok, const char *what)
{
	FZ_ASSERT(d >= (zero_ok ? 0 : 1) && d <= DURATION_MAX, "%s = %lld", what, (long long)d);
}

static void
check_config(const struct ri_config *c)
{
	struct ri_condition cs[5];
	ri_err err = { 0 };

	FZ_ASSERT(c->path != NULL && strcmp(c->path, CONFIG_PATH) == 0, "path");
	FZ_ASSERT(c->dir != NULL && strcmp(c->dir, "/nonexistent/ri-fuzz") == 0, "dir %s", c->dir);
	/* a path is made absolute; a PostgreSQL URI (issue 13) is kept as given */
	FZ_ASSERT(c->journal && (c->journal[0] == '/' || ri_journal_is_pg(c->journal)),
	    "journal neither absolute nor a PostgreSQL URI");
	FZ_ASSERT(c->findings && c->findings[0] == '/', "findings not absolute");
	FZ_ASSERT(c->integrity_key_file && c->integrity_key_file[0] == '/', "key not absolute");
	FZ_ASSERT(c->seal_key_file && c->seal_key_file[0] == '/', "seal key not absolute");
	check_duration(c->clock_offset_allowance, true, "clock_offset_allowance");
	check_duration(c->reconciliation_cadence, false, "reconciliation_cadence");
	check_duration(c->run_bound, false, "run_bound");
	check_duration(c->closure_latency, false, "closure_latency");
	check_duration(c->journal_write_bound, false, "journal_write_bound");
	check_duration(c->read_bound, false, "read_bound");
	check_duration(c->compensation_window, false, "compensation_window");
	FZ_ASSERT(c->intent_candidates_cap >= 1 && c->read_cap >= 1 &&
	    c->reference_length_cap >= 8 && c->payload_cap >= 1024, "caps");
	FZ_ASSERT(c->n_kinds >= 1 && c->kinds != NULL, "no kinds");
	for (size_t i = 0; i < c->n_kinds; i++) {
		const struct ri_kind *k = &c->kinds[i];

		FZ_ASSERT(k->name != NULL && plain(k->name) && strcmp(k->name, "audit") != 0,
		    "kind name");
		FZ_ASSERT(ri_config_kind(c, k->name) == k, "kind %s not found by name", k->name);
		FZ_ASSERT(k->n_outcomes >= 1, "kind %s: no outcomes", k->name);
		for (size_t j = 0; j < k->n_outcomes; j++) {
			FZ_ASSERT(k->outcomes[j] != NULL && plain(k->outcomes[j]), "outcome name");
			for (size_t m = 0; m < j; m++)
				FZ_ASSERT(strcmp(k->outcomes[m], k->outcomes[j]) != 0, "duplicate outcome");
		}
		check_duration(k->completion_bound, false, "completion_bound");
		check_duration(k->commit_round_trip, false, "commit_round_trip");
		check_duration(k->probe_round_trip, false, "probe_round_trip");
		check_duration(k->retention_period, false, "retention_period");
		FZ_ASSERT(k->pairing_datum == RI_PAIR_NONCE || k->pairing_datum == RI_PAIR_NOW ||
		    k->pairing_datum == RI_PAIR_NONE, "pairing");
		FZ_ASSERT(k->outcome_envelope >= 1 && k->retry_counted >= 0, "envelope / retry");
		FZ_ASSERT(k->n_probe >= 1 && k->probe != NULL && k->probe[k->n_probe] == NULL,
		    "probe argv not NULL-terminated");
		for (size_t j = 0; j < k->n_probe; j++)
			FZ_ASSERT(k->probe[j] != NULL && k->probe[j][0] != '\0', "empty probe argv[%zu]", j);
		FZ_ASSERT((k->service_actor == NULL) == (k->service_credential_file == NULL),
		    "service identity half set");
		if (k->service_credential_file != NULL)
			FZ_ASSERT(k->service_credential_file[0] == '/', "credential file not absolute");

		ri_conditions(c, k, cs);
		for (int n = 0; n < 5; n++) {
			FZ_ASSERT(cs[n].number == n + 1 && cs[n].rule != NULL && cs[n].name != NULL,
			    "condition %d", n);
			FZ_ASSERT(memchr(cs[n].arithmetic, '\0', sizeof cs[n].arithmetic) != NULL &&
			    cs[n].arithmetic[0] != '\0', "condition %d: no arithmetic", n);
		}
	}
	(void)ri_sweep_lease(c);
	(void)ri_settle_bound(c);
	(void)ri_at_risk_threshold(c);
	(void)ri_longest_retention(c);
	if (ri_conditions_hold(c, &err) != RI_OK)
		FZ_ASSERT(err.code == RI_CONFIG && err.msg[0] != '\0', "conditions: no message");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t je;
	json_t *root;
	struct ri_config *c = (struct ri_config *)1;
	ri_err err = { 0 };
	int rc;

	/* ri_config_load's flags, plus DECODE_ANY so a non-object root reaches
	 * ri_config_from_json's own check */
	root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (root == NULL)
		return 0;
	rc = ri_config_from_json(root, CONFIG_PATH, &c, &err);
	if (rc == RI_OK) {
		FZ_ASSERT(c != NULL, "OK without a config");
		check_config(c);
		ri_config_free(c);
	} else {
		FZ_ASSERT(rc == RI_CONFIG && err.code == RI_CONFIG && err.msg[0] != '\0',
		    "refused with %d \"%s\"", rc, err.msg);
		FZ_ASSERT(c == NULL, "refused but left a config");
	}
	json_decref(root);
	return 0;
}
