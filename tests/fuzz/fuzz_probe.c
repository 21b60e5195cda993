/*
 * fuzz_probe.c -- libFuzzer harness for the probe's answer: ri_probe_parse
 * (lib/protocol/probe.h) over arbitrary bytes, the probe's stdout, and
 * ri_probe_parse_line over the same bytes as a batch probe's line for act
 * key "k" (issue 15: the four shapes with act_key beside), with a fixed
 * valid config built once from a literal, for two kinds (one outcome and a
 * service identity; two outcomes, pairing datum none).
 *
 * Asserts: no crash, no sanitizer report, and the answer is exactly one of
 * the four with the fields INTERFACE.md "The probe protocol" gives it --
 * committed carries an outcome ref of the kind and an object; undecidable
 * a candidates array of references under reference_length_cap; anything
 * else is unavailable with a reason, never not-committed by default.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/probe.h"
#include "protocol/proto.h"

#define FZ_ASSERT(c, ...) do {                                          \
	if (!(c)) {                                                     \
		fprintf(stderr, "fuzz_probe: assertion failed: %s: ", #c); \
		fprintf(stderr, __VA_ARGS__);                           \
		fputc('\n', stderr);                                    \
		abort();                                                \
	}                                                               \
} while (0)

static const char config_text[] =
    "{ \"journal\": \"journal.db\", \"findings\": \"findings.db\","
    "  \"integrity_key_file\": \"journal.key\", \"seal_key_file\": \"seal.key\","
    "  \"instance\": { \"clock_offset_allowance\": \"2s\", \"reconciliation_cadence\": \"60s\","
    "    \"run_bound\": \"135s\", \"closure_latency\": \"12s\", \"journal_write_bound\": \"3s\","
    "    \"read_bound\": \"2s\", \"compensation_window\": \"10m\", \"intent_candidates_cap\": 16,"
    "    \"read_cap\": 20, \"reference_length_cap\": 64, \"payload_cap\": 65536 },"
    "  \"kinds\": {"
    "    \"ledger\": { \"outcomes\": [\"disclosed\"], \"repeatable\": true,"
    "      \"completion_bound\": \"30s\", \"commit_round_trip\": \"1s\", \"probe_round_trip\": \"1s\","
    "      \"retention_period\": \"400d\", \"commit_fence\": \"none\", \"pairing_datum\": \"nonce\","
    "      \"outcome_envelope\": 4096, \"probe\": [\"/bin/true\"],"
    "      \"service_identity\": { \"actor_ref\": \"ledger-reconciler\","
    "        \"credential_file\": \"reconciler.cred\" } },"
    "    \"mail\": { \"outcomes\": [\"sent\", \"bounced\"], \"repeatable\": false,"
    "      \"completion_bound\": \"20s\", \"commit_round_trip\": \"1s\", \"probe_round_trip\": \"1s\","
    "      \"retention_period\": \"30d\", \"commit_fence\": \"declared\", \"pairing_datum\": \"none\","
    "      \"outcome_envelope\": 1024, \"probe\": [\"/bin/true\"], \"service_identity\": null } } }";

static struct ri_config *cfg;

static void
fz_init(void)
{
	json_error_t je;
	json_t *root = json_loads(config_text, JSON_REJECT_DUPLICATES, &je);
	ri_err err = { 0 };

	FZ_ASSERT(root != NULL, "config literal: %s", je.text);
	FZ_ASSERT(ri_config_from_json(root, "/nonexistent/ri-fuzz/ri.json", &cfg, &err) == RI_OK,
	    "config literal: %s", err.msg);
	json_decref(root);
	FZ_ASSERT(cfg->n_kinds == 2, "two kinds");
}

static void
check(const struct ri_kind *k, const uint8_t *data, size_t size, bool line)
{
	struct ri_probe p;
	int rc;

	memset(&p, 0xa5, sizeof p);     /* the parser must not trust what it is handed */
	rc = line ? ri_probe_parse_line(cfg, k, "k", (const char *)data, size, &p) :
	    ri_probe_parse(cfg, k, (const char *)data, size, &p);
	/* a batch line that is no answer is -1, and unavailable */
	FZ_ASSERT(rc == 0 || (line && rc == -1 && p.answer == RI_PROBE_UNAVAILABLE),
	    "ri_probe_parse%s answered %d", line ? "_line" : "", rc);
	FZ_ASSERT(ri_probe_name(p.answer) != NULL, "answer %d", (int)p.answer);
	switch (p.answer) {
	case RI_PROBE_COMMITTED:
		FZ_ASSERT(p.outcome_action_ref != NULL && ri_is_outcome_ref(k, p.outcome_action_ref),
		    "committed without an outcome ref of kind %s", k->name);
		FZ_ASSERT(json_is_object(p.outcome_data), "committed without outcome_data");
		FZ_ASSERT(p.candidates == NULL, "committed with candidates");
		break;
	case RI_PROBE_NOT_COMMITTED:
		FZ_ASSERT(p.outcome_action_ref == NULL && p.outcome_data == NULL && p.candidates == NULL,
		    "not-committed carrying fields");
		break;
	case RI_PROBE_UNDECIDABLE: {
		size_t i;
		json_t *v;
		FZ_ASSERT(json_is_array(p.candidates), "undecidable without candidates");
		json_array_foreach(p.candidates, i, v)
			FZ_ASSERT(json_is_string(v) && json_string_length(v) >= 1 &&
			    (int64_t)json_string_length(v) <= cfg->reference_length_cap,
			    "candidate %zu", i);
		FZ_ASSERT(p.outcome_action_ref == NULL && p.outcome_data == NULL, "undecidable with outcome");
		break;
	}
	case RI_PROBE_UNAVAILABLE:
		FZ_ASSERT(memchr(p.why, '\0', sizeof p.why) != NULL && p.why[0] != '\0',
		    "unavailable without a reason");
		FZ_ASSERT(p.outcome_action_ref == NULL && p.outcome_data == NULL && p.candidates == NULL,
		    "unavailable carrying fields");
		break;
	default:
		FZ_ASSERT(0, "answer %d is none of the four", (int)p.answer);
	}
	ri_probe_clear(&p);
	FZ_ASSERT(p.outcome_action_ref == NULL && p.outcome_data == NULL && p.candidates == NULL,
	    "ri_probe_clear left fields");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	uint8_t *copy;

	if (!ready) {
		fz_init();
		ready = true;
	}
	/* an exact-size copy: the parser gets a length, never a terminator */
	copy = malloc(size ? size : 1);
	if (copy == NULL)
		abort();
	memcpy(copy, data, size);
	for (size_t i = 0; i < cfg->n_kinds; i++) {
		check(&cfg->kinds[i], copy, size, false);
		check(&cfg->kinds[i], copy, size, true);
	}
	free(copy);
	return 0;
}
