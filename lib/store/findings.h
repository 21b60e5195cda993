/*
 * findings.h -- the findings register (Composition state, findings 1-13):
 * its own SQLite file, so a journal outage can still be recorded -- or, on
 * a PostgreSQL journal, a table in the journal's database, the one
 * register every host writes and reads (issue 41 point 5).
 *
 * An act finding {finding, kind, act_key, invocation_id, first_seen,
 * run_id} deduplicates on (invocation id, finding) and has no span.  An
 * instance finding {finding, kind, first_seen, last_seen, run_id}
 * deduplicates on (finding, kind) while it stands; its first and last seen
 * are its span, and a recurrence opens a new record (findings 11).
 */
#ifndef RI_FINDINGS_H
#define RI_FINDINGS_H

#include "util/config.h"

enum ri_finding {
	RI_F_JOURNAL_UNAVAILABLE,       /* instance, no kind */
	RI_F_STORE_UNAVAILABLE,         /* instance, kind */
	RI_F_CLOSURE_AT_RISK,           /* act */
	RI_F_BINDING_DUPLICATE,         /* act */
	RI_F_UNBOUND_KIND,              /* act */
	/* Outside the five conditions: an operator's queue and alarms, which no
	 * surface reads (findings 6). */
	RI_F_ESCALATED,                 /* act: the sweep escalated it (reconcile step 3.8b) */
	RI_F_SERVICE_CREDENTIAL,        /* instance, kind: reconcile step 3.18 */
	RI_F_START_REFUSED,             /* instance, kind or none: a writer refused to start
	                                 * (Instance start 3, Binding 2-3) */
	RI_F_RUN_OVERRUN,               /* instance, no kind: a sweep run outlasted run_bound
	                                 * (run bound 1; issue 15) */
	RI_F_RUN_LOCK_HELD              /* instance, no kind: the run lock held past run_bound,
	                                 * so no run can start (run bound 1; issue 40) */
};

struct ri_finding_row {
	int64_t id;
	const char *finding, *scope, *kind, *act_key, *invocation_id;
	const char *first_seen, *last_seen, *run_id, *detail;
	ri_ms first_seen_at, last_seen_at, closed_at;   /* RI_NONE when absent */
	bool verified;                  /* its MAC verifies under the register's key */
	bool keyless;                   /* a start-gate refusal recorded where no key could
					 * be read: no MAC at all, never evidence, not tamper */
};

/* The register's rows are MACed under a key derived from the integrity key
 * (HMAC(key, "ri findings key")): a row an attacker wrote or altered never
 * verifies, and ri-audit takes only verified rows as evidence.  The key is
 * set once per process (ri_instance_attach calls this when it loads the
 * integrity key); without it rows are written unMACed and read unverified. */
void ri_findings_use_key(const unsigned char *key, size_t keylen);

struct ri_findings;

/* Where the instance's register is (issue 41 point 5, one findings
 * register per instance): on a PostgreSQL journal, the journal's own
 * database (the table "findings" its schema holds), which every host
 * shares; else the config's "findings" file.  What ri_findings_create and
 * ri_findings_open take as their path: a postgresql:// URI opens the
 * table. */
const char *ri_findings_location(const struct ri_config *c);

int ri_findings_create(const char *path, ri_err *err);
int ri_findings_open(const char *path, bool readonly, struct ri_findings **out, ri_err *err);
void ri_findings_close(struct ri_findings *f);
const char *ri_finding_name(enum ri_finding f);

/* Surface an act finding: one record per (invocation id, finding), set once
 * (findings 7, 8, 12).  `by` names the run (or action) that surfaced it. */
int ri_findings_act(struct ri_findings *f, enum ri_finding what, const char *kind,
    const char *act_key, const char *invocation_id, const char *by, ri_ms now,
    json_t *detail, ri_err *err);

/* A run of the sweep begins: recorded so "the previous run" is known. */
int ri_findings_run_begin(struct ri_findings *f, const char *run_id, ri_ms now, ri_err *err);
/* An instance finding seen by this run: advance the standing record's last
 * seen (findings 9), or open a new one (findings 7, 11).  kind may be NULL. */
int ri_findings_instance(struct ri_findings *f, enum ri_finding what, const char *kind,
    const char *run_id, ri_ms now, json_t *detail, ri_err *err);
/* A writer refused to start (Instance start 3, Binding 3): recorded once
 * per cause -- one standing start-refused record per kind (NULL: the
 * instance), its detail's "causes" gaining each cause the first time it
 * is seen; a cause already recorded writes nothing.  A sweep run that
 * starts closes the record (findings 10). */
int ri_findings_refusal(struct ri_findings *f, const char *kind, const char *cause,
    const char *by, ri_ms now, json_t *entry, ri_err *err);
/* Close every standing instance finding this run did not see, with last
 * seen left at the previous run (findings 10a).  `seen` lists
 * "finding\tkind" strings this run saw. */
int ri_findings_close_unseen(struct ri_findings *f, const char *run_id, ri_ms now,
    const char *const *seen, size_t n_seen, ri_err *err);
/* The keyless exception's bound (lib/store/findings.c row_keyless): past this
 * many MAC-less start-gate refusals in the register, none is excused. */
#define RI_FINDINGS_KEYLESS_MAX 64
/* How many rows are shaped as keyless refusals (-1: unreadable); counted
 * once per handle. */
int64_t ri_findings_keyless(struct ri_findings *f);
/* Every finding (open_only: standing instance findings and act findings),
 * optionally of one kind, in id order; a row's keyless is true only while
 * the register holds at most RI_FINDINGS_KEYLESS_MAX keyless refusals. */
int ri_findings_each(struct ri_findings *f, bool open_only, const char *kind,
    int (*each)(const struct ri_finding_row *, void *), void *arg, ri_err *err);

#endif
