/* probe.h -- the adopter's probe (probe 1-7; INTERFACE "The probe protocol"). */
#ifndef RI_PROBE_H
#define RI_PROBE_H

#include "config.h"

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
/* Parse a probe's output (exposed for the fuzz harness). */
int ri_probe_parse(const struct ri_config *c, const struct ri_kind *k, const char *text,
    size_t len, struct ri_probe *p);
void ri_probe_clear(struct ri_probe *p);
const char *ri_probe_name(enum ri_probe_answer a);

#endif
