/*
 * findings.h -- the findings register (Composition state, findings 1-13):
 * its own SQLite file, so a journal outage can still be recorded.
 *
 * An act finding {finding, kind, act_key, invocation_id, first_seen,
 * run_id} deduplicates on (invocation id, finding) and has no span.  An
 * instance finding {finding, kind, first_seen, last_seen, run_id}
 * deduplicates on (finding, kind) while it stands; its first and last seen
 * are its span, and a recurrence opens a new record (findings 11).
 */
#ifndef RI_FINDINGS_H
#define RI_FINDINGS_H

#include "config.h"

enum ri_finding {
	RI_F_JOURNAL_UNAVAILABLE,       /* instance, no kind */
	RI_F_STORE_UNAVAILABLE,         /* instance, kind */
	RI_F_CLOSURE_AT_RISK,           /* act */
	RI_F_BINDING_DUPLICATE,         /* act */
	RI_F_UNBOUND_KIND               /* act */
};

struct ri_findings;

int ri_findings_create(const char *path, ri_err *err);
int ri_findings_open(const char *path, bool readonly, struct ri_findings **out, ri_err *err);
void ri_findings_close(struct ri_findings *f);
const char *ri_finding_name(enum ri_finding f);

/* Surface an act finding: one record per (invocation id, finding), set once
 * (findings 7, 8, 12).  `by` names the run (or action) that surfaced it. */
int ri_findings_act(struct ri_findings *f, enum ri_finding what, const char *kind,
    const char *act_key, const char *invocation_id, const char *by, ri_ms now,
    json_t *detail, ri_err *err);

#endif
