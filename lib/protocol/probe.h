/* probe.h -- the adopter's probe (probe 1-5; the probe protocol of ri.json(5)). */
#ifndef RI_PROBE_H
#define RI_PROBE_H

#include "util/config.h"

enum ri_probe_answer {
	RI_PROBE_COMMITTED, RI_PROBE_NOT_COMMITTED, RI_PROBE_UNDECIDABLE, RI_PROBE_UNAVAILABLE
};

struct ri_probe {
	enum ri_probe_answer answer;
	char *outcome_action_ref;       /* committed */
	json_t *outcome_data;           /* committed: only what the store re-derived */
	json_t *candidates;             /* undecidable */
	char why[256];                  /* unavailable: why */
};

/* Run k's probe for an intent.  Always answers one of the four. */
int ri_probe_run(const struct ri_config *c, const struct ri_kind *k, const char *act_key,
    json_t *intent_payload, struct ri_probe *p);
/* The probes of a run: a kind whose probe is a batch probe ("probe_batch":
 * true) keeps one process for the run and asks it a line at a time; any
 * other kind's is ri_probe_run.  ri_probe_ask always answers one of the
 * four; ri_prober_free ends the run's batch probes. */
struct ri_prober;
struct ri_prober *ri_prober_new(const struct ri_config *c);
int ri_probe_ask(struct ri_prober *pr, const struct ri_kind *k, const char *act_key,
    json_t *intent_payload, struct ri_probe *p);
void ri_prober_free(struct ri_prober *pr);
/* Parse a probe's output (exposed for the fuzz harness). */
int ri_probe_parse(const struct ri_config *c, const struct ri_kind *k, const char *text,
    size_t len, struct ri_probe *p);
/* Parse a batch probe's line (its newline excluded), asked about act_key:
 * one of the four shapes with "act_key" the one asked, or unavailable.
 * 0 for an answer, -1 (and unavailable) for a line that is none. */
int ri_probe_parse_line(const struct ri_config *c, const struct ri_kind *k, const char *act_key,
    const char *text, size_t len, struct ri_probe *p);
void ri_probe_clear(struct ri_probe *p);
const char *ri_probe_name(enum ri_probe_answer a);

#endif
