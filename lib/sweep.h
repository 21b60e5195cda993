/* sweep.h -- Reconcile: one run of the sweep (ri-sweep(1)). */
#ifndef RI_SWEEP_H
#define RI_SWEEP_H

#include "ri.h"

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

/* The journal could not even be opened: record the outage in the
 * register, which is a separate file for exactly this (reconcile 1,
 * Invariant 4.4-4.5), and answer journal-unavailable. */
int ri_sweep_outage(const char *config_path, json_t **ans, ri_err *err);

#endif
