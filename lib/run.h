/* run.h -- ri-run: wrap one command as an act (ri-run(1)). */
#ifndef RI_RUN_H
#define RI_RUN_H

#include "ri.h"

struct ri_run_opts {
	const char *kind, *act_key, *actor, *outcome;
	json_t *intent_data;            /* NULL: {} */
	int pre_commit[64];             /* declared pre-commit exit codes */
	size_t n_pre_commit;
	int64_t grace_ms;               /* TERM -> KILL */
	char **argv;                    /* CMD ARGS..., NULL-terminated */
};

/* The answer is Close's, Refuse's or a refusal; *exit_code is what ri-run
 * exits with (CMD's own code after a landed refusal). */
int ri_run(ri *r, const struct ri_run_opts *o, json_t **ans, int *exit_code, ri_err *err);

#endif
