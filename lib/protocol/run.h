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
	unsigned closed_std;            /* bit t: ri-run started with descriptor t closed (ri_run_hold_std) */
};

/* ri-run's first act: a standard descriptor (0-2) it was started without
 * is opened on /dev/null, so nothing ri-run opens later -- the watchdog's
 * socket, the journal -- lands there and reaches the job as its stdin or
 * stdout; the job gets it closed, as ri-run did (o->closed_std). */
void ri_run_hold_std(struct ri_run_opts *o);

/* --intent-data-file: at most this many bytes (Open holds the data to
 * the config's payload_cap) */
#define RI_RUN_INTENT_FILE_MAX ((size_t)16 << 20)

/* The job's budget under kind k (ri-run(1), issue 44 point 7): the lease
 * (the kind's completion_bound) less what Close needs after the job --
 * its read, its two writes, the allowance -- less the grace between TERM
 * and KILL.  ri-run stops the job at most this long after Open. */
ri_ms ri_run_budget(const struct ri_config *c, const struct ri_kind *k, int64_t grace_ms);
/* The same as a sentence with its arithmetic, e.g. "19 s (completion_bound
 * 30 s - read_bound 2 s - 2x journal_write_bound 3 s - clock_offset_allowance
 * 2 s - grace 1 s)". */
void ri_run_budget_text(const struct ri_config *c, const struct ri_kind *k, int64_t grace_ms, char *buf,
    size_t n);

/* The outcome descriptor of the job: CMD writes its outcome object there
 * (nothing written: {}); its stdout and stderr pass through. */
#define RI_OUTCOME_FD 3

/* Resolve CMD before Open, as execvp(3) will (INTERFACE, second wave: a
 * command that cannot run is 127 with nothing written): its path into
 * path, or RI_OK is not returned and err says why (code 127). */
int ri_run_resolve(const char *cmd, char *path, size_t n, ri_err *err);

/* The watchdog (ri-run(1): the job's parent, a child subreaper; nothing of
 * the job outlives it or ri-run), started before the journal is opened
 * (run.c says why). */
struct ri_watchdog {
	int pid;
	int sock;                       /* ri-run's end of its socket; -1 once ended */
};

/* Fork the watchdog: RI_OK, or err says why (nothing opened or written). */
int ri_watchdog_start(struct ri_watchdog *w, ri_err *err);
/* Tell it ri-run is done (the job's group, if any, already stopped): it
 * kills whatever of the job is left under it and exits; reap it. */
void ri_watchdog_end(struct ri_watchdog *w);

/* The answer is Close's, Refuse's or a refusal; *exit_code is what ri-run
 * exits with (CMD's own code after a landed refusal).  o->path is
 * resolved (ri_run_resolve). */
int ri_run(ri *r, const struct ri_run_opts *o, struct ri_watchdog *w, json_t **ans, int *exit_code,
    ri_err *err);

#endif
