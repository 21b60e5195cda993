/*
 * restore.h -- a journal put back in time, accepted (issue 39; ri(7)
 * "restoring a journal", docs/INTEGRITY.md 6).
 *
 * A restored journal is behind its witness, and every reader and writer
 * refuses it until `ri-init --accept-restore --why TEXT` accepts it.  The
 * acceptance names what the restore lost -- the witness's lines past the
 * restored head, each naming a record and its act -- and appends, in one
 * transaction, under the substrate's authority:
 *
 *  - audit.restored (scope ("audit", "restore:")): who, why, the restored
 *    head, the lost range, the acts held back, the substrate records to
 *    redo (an actor's registration or revocation lost with the rest);
 *  - for every lost invocation whose intent the restored journal does not
 *    hold, a restored intent: <kind>.intended under the substrate actor,
 *    its data the pairing datum the witness kept, "restored" naming the
 *    lost intent -- an open intent the sweep asks the act's store about,
 *    exactly as it asks about a crashed invocation's;
 *  - for every act with a lost invocation not closed for good (open,
 *    escalated, abandoned: an outcome or a refusal stands for ever), a
 *    marker audit.unreconciled in the act's own marker scope ("audit",
 *    "unreconciled:<kind>:<act_key>") listing those invocations.
 *
 * An act whose marker stands is unreconciled: Open refuses it (12,
 * act-in-flight, "cause":"restore") until every invocation the marker
 * lists has a closing written after the marker -- the sweep's recovered
 * outcome, abandonment or escalation, or an operator's Resolve.  The sweep
 * then appends audit.reconciled in the marker scope, so later Opens read
 * one record.  Then the witness's next epoch begins (witness.h) and the
 * restored head is sealed.
 */
#ifndef RI_RESTORE_H
#define RI_RESTORE_H

#include "protocol/instance.h"
#include "util/integrity.h"

struct ri_restore_opts {
	const char *why;
	/* --expect-head: the head the operator trusts (a published seal line) */
	bool expect;
	int64_t expect_seq;
	unsigned char expect_hash[RI_HASH_LEN];
	/* --all-unreconciled: no witness names what was lost, so every act the
	 * restored journal names that is not closed for good is held back */
	bool all_unreconciled;
};

int ri_accept_restore(ri *r, const struct ri_restore_opts *o, json_t **ans, ri_err *err);

/* The act's marker scope key: "unreconciled:<kind>:<act_key>" (no actor
 * name holds a ':'). */
void ri_marker_key(const char *kind, const char *act_key, char *buf, size_t n);

/*
 * Is the act held back by a restore?  *inv: the first invocation still
 * unreconciled (malloc'ed; NULL when not held).  Store code: a failed
 * read is never "not held".
 */
int ri_restore_held(struct ri *r, const char *kind, const char *act_key, char **inv);
/* The range read ri_restore_held makes first (the act's marker scope; key: its buffer, 600
 * bytes), for the caller to announce it (store.h read_ahead). */
void ri_restore_held_query(const char *kind, const char *act_key, char *key, size_t n, struct ri_query *q);

/*
 * The sweep's pass over the restores: every act a restore held back whose
 * invocations are all reconciled gets audit.reconciled; the rest are
 * counted in *outstanding and listed in list (kind, act_key, invocation).
 * Store code.
 */
int ri_restore_sweep(struct ri *r, size_t *outstanding, json_t *list);

#endif
