/*
 * gate.h -- who may write, and under what.
 *
 * The start gate every writer shares with ri-startcheck, for what is cheap
 * to check at every call (Instance start 3, Binding 2-3): the five
 * conditions, the integrity and seal keys as private files the caller
 * owns, the binding of every kind that has open intents.  A refusal is
 * 78, recorded once per cause on the findings register.
 *
 * And the caller: its credential from the usual sources; the caller as
 * the intent's own actor (close 1, Check 2: only that actor closes,
 * refuses or yields); the caller's kind, human or service (Term caller
 * kind, Invariant 5.4, Sweep never 2) -- each decided by authenticating
 * without appending, before anything touches a section.
 */
#ifndef RI_GATE_H
#define RI_GATE_H

#include "protocol/handle.h"

/* Record a refusal of the start gate on the findings register, once per
 * (kind, cause) (Binding 3).  kind NULL: the instance's. */
void ri_gate_record(const struct ri_config *c, const char *kind, const char *cause,
    const char *rule, const char *msg);

/* Instance start 3: the five conditions, for every kind; RI_CONFIG,
 * recorded, naming the first failing condition. */
int ri_gate_conditions(const struct ri_config *c, ri_err *err);

/* The integrity key could not be loaded by a writer: record why. */
void ri_gate_key_refused(const struct ri_config *c, const ri_err *err);

/* Once the journal is open: the seal key is a private file the caller
 * owns; every kind with an open intent inside the longest retention is
 * bound (Binding 2, 6) -- unless flags carry RI_SWEEPER, whose run
 * answers Binding 2 itself (ri_gate_unbound).  RI_CONFIG, recorded. */
int ri_gate_journal(struct ri *r, unsigned flags, ri_err *err);

/* Binding 2, 6: the kinds this config does not bind that have an open
 * intent recorded inside the longest retention before now.  Store code. */
int ri_gate_unbound(struct ri *r, ri_ms now, char ***kinds, size_t *n);

/* The caller's credential: the request's, else $RI_CREDENTIAL, else the
 * file named by $RI_CREDENTIAL_FILE -- a private regular file the caller
 * owns, never a FIFO that would block (else RI_CONFIG, recorded).  *out
 * NULL when there is none. */
int ri_caller_credential(const struct ri_config *c, const char *from_request, char *buf,
    size_t n, const char **out, ri_err *err);

/* The refusal causes of the caller checks below. */
#define RI_CAUSE_ACTOR "actor"                          /* not the intent's actor */
#define RI_CAUSE_CREDENTIAL "invalid-credential"        /* the credential does not authenticate */
#define RI_CAUSE_NOT_KNOWN "not-known"                  /* no such intent of that invocation */
#define RI_CAUSE_INTEGRITY "integrity"
#define RI_CAUSE_UNAVAILABLE "journal-unavailable"

/*
 * close 1, Check 2: the authenticated caller is the intent's actor.  The
 * intent is read by intent_ev (read_record, which must answer the intent
 * of that invocation and act), or, intent_ev NULL, by the invocation id
 * through the filtered range read (Yield carries no event id); the
 * credential is authenticated without appending.  RI_OK, or a failure
 * with *cause one of the RI_CAUSE_* and why.  Touches no section.
 */
int ri_caller_is_actor(struct ri *r, const char *kind, const char *act_key, const char *inv,
    const char *intent_ev, const char *actor, const char *credential, const char **cause,
    char *why, size_t n);

/* Term caller kind: service where the actor is any kind's service
 * identity, or is registered as a service (who, from authenticate). */
bool ri_is_service_actor(const struct ri_config *c, const char *actor, const struct ri_actor *who);

#endif
