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
	const char *path;               /* argv[0] resolved (ri_run_resolve); NULL: execvp */
	bool outcome_stdout;            /* --outcome-stdout: the outcome is CMD's stdout */
};

/* The outcome descriptor of the job: CMD writes its outcome object there
 * (nothing written: {}); its stdout and stderr pass through. */
#define RI_OUTCOME_FD 3

/* Resolve CMD before Open, as execvp(3) will (INTERFACE, second wave: a
 * command that cannot run is 127 with nothing written): its path into
 * path, or RI_OK is not returned and err says why (code 127). */
int ri_run_resolve(const char *cmd, char *path, size_t n, ri_err *err);

/* The watchdog (ri-run(1): the job dies with ri-run), started before the
 * journal is opened (run.c says why). */
struct ri_watchdog {
	int pid;
	int lifeline;                   /* its write end; -1 once ended */
};

/* Fork the watchdog: RI_OK, or err says why (nothing opened or written). */
int ri_watchdog_start(struct ri_watchdog *w, ri_err *err);
/* Tell it ri-run is done (the job's group, if any, already stopped), and
 * reap it. */
void ri_watchdog_end(struct ri_watchdog *w);

/* The answer is Close's, Refuse's or a refusal; *exit_code is what ri-run
 * exits with (CMD's own code after a landed refusal).  o->path is
 * resolved (ri_run_resolve). */
int ri_run(ri *r, const struct ri_run_opts *o, struct ri_watchdog *w, json_t **ans, int *exit_code,
    ri_err *err);

#endif
