/*
 * vocab.h -- the vocabulary of a kind (journal 2-5) and the role it gives
 * each record.  The role is fixed when a record is appended, from the
 * binding in force then, and stored authenticated in the record's header;
 * every reader classifies a record by that stored role, never by today's
 * binding (the ruling of the closings issue: one vocabulary, read one way).
 */
#ifndef RI_VOCAB_H
#define RI_VOCAB_H

#include "util/config.h"

enum ri_role {
	RI_ROLE_OTHER = 0,          /* the substrate's own audit.* records */
	RI_ROLE_INTENT = 1,         /* <kind>.intended */
	RI_ROLE_RECOVERY = 2,       /* <kind>.recovery_intended: not a closing */
	RI_ROLE_OUTCOME = 3,        /* <kind>.<outcome>, an outcome bound when appended */
	RI_ROLE_REFUSED = 4,        /* <kind>.refused */
	RI_ROLE_ABANDONED = 5,      /* <kind>.abandoned */
	RI_ROLE_ESCALATED = 6       /* <kind>.escalated */
};
#define RI_ROLE_MAX RI_ROLE_ESCALATED

/* The four closing kinds count together (Invariant 2, WHY). */
static inline bool
ri_role_closing(int role)
{
	return role >= RI_ROLE_OUTCOME && role <= RI_ROLE_ESCALATED;
}

/*
 * The role of action_ref under the binding c, for an append: RI_OK with
 * *role set, or RI_INVALID_REQUEST with why filled -- an action ref outside
 * its kind's vocabulary, of a kind c does not bind, or of the substrate's
 * reserved audit.* prefix, is never appended by a writer.
 */
int ri_vocab_role(const struct ri_config *c, const char *action_ref, int *role, char *why, size_t n);
/* The same against one kind's binding (bindings are history, issue 41). */
int ri_vocab_kind_role(const struct ri_kind *k, const char *action_ref, int *role, char *why, size_t n);

/* Is a stored role consistent with its action ref's suffix?  (An outcome
 * role only says the suffix is none of the reserved ones; whether today's
 * binding still lists it is ri_vocab_role's question.) */
bool ri_vocab_role_fits(const char *action_ref, int role);

const char *ri_role_name(int role);

#endif
