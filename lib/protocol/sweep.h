/* sweep.h -- Reconcile: one run of the sweep (ri-sweep(1)). */
#ifndef RI_SWEEP_H
#define RI_SWEEP_H

#include "util/config.h"
#include "util/util.h"

struct ri_sweep_opts {
	const char *node;       /* names this node's run lock (run bound 1) */
	bool quiet;             /* --quiet: no word on stderr for a run that did not start */
	bool progress;          /* acts done of total, on stderr (a terminal) */
};

/* The tally: examined, closed, abandoned, escalated, reported, skipped,
 * closed_already, surfaced, unreached, run_id -- with the partition
 * closed + abandoned + escalated + reported + skipped + closed_already
 * = examined.  A run that ended but could not do all it should -- a store
 * its probe could not reach, a service identity refused or unchecked, a
 * run past run_bound, any alert -- answers "degraded": [why...], says why
 * on stderr, and returns RI_DEGRADED (2). */
int ri_sweep(ri *r, const struct ri_sweep_opts *o, json_t **ans, ri_err *err);

/* run bound 1: the sweep's run lock on a node, as a look finds it (issue
 * 40 point 6). */
struct ri_run_lock {
	char path[4200];
	bool held;                      /* another process holds it */
	bool recorded;                  /* the holder's record: pid, run_id, started_at */
	long pid;
	char run_id[RI_ID_LEN + 1];
	ri_ms started_at;
	bool stale;                     /* held past run_bound from the recorded start,
	                                 * or with no start recorded: no run can start */
};
/* The lock's path for node (NULL: "local"): beside the journal, or on
 * PostgreSQL beside this host's findings register. */
void ri_run_lock_path(const struct ri_config *c, const char *node, char *out, size_t n);
/* ri-startcheck: look at the lock at path (held? by whom, since when?) at
 * now, holding it no longer than a look.  0, or -1 with why. */
int ri_run_lock_inspect(const struct ri_config *c, const char *path, ri_ms now, struct ri_run_lock *l,
    char *why, size_t n);

/* The journal could not even be opened: record the outage in the
 * register, which is a separate file for exactly this (reconcile 1,
 * Invariant 4.4-4.5), and answer journal-unavailable. */
int ri_sweep_outage(const char *config_path, json_t **ans, ri_err *err);

#endif
