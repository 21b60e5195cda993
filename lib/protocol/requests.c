/*
 * requests.c -- the six requests as data: the fields each command accepts,
 * which it requires, and where each lands in struct ri_req (ri_req_parse,
 * proto.c; INTERFACE: unknown fields are refused).  Defined once, side by
 * side, for the commands' parsers and for tests/fuzz/fuzz_request.c alike,
 * so the fuzzer never tests a copy that has gone stale (issue 42).
 */
#include <stddef.h>

#include "protocol/proto.h"

/* The name is the member's: the two cannot drift apart. */
#define FIELD(member, type, required) { #member, type, required, offsetof(struct ri_req, member) }
#define IGNORED(name) { #name, RI_F_IGNORE, false, 0 }
#define END { NULL, 0, false, 0 }

/* An invocation named whole, and who names it: how Close, Refuse and
 * Resolve begin (the credential may come from the environment instead) */
#define INVOCATION_NAMED \
	FIELD(kind, RI_F_STR, true), FIELD(act_key, RI_F_STR, true), \
	FIELD(invocation_id, RI_F_STR, true), FIELD(intent_event_id, RI_F_STR, true), \
	FIELD(actor_ref, RI_F_STR, true), FIELD(credential, RI_F_STR, false)

/* Fields ri-open answers, which jq merges on through to Close/Refuse/Yield. */
#define OPEN_ANSWER_EXTRAS \
	IGNORED(lease_expires_at), IGNORED(fencing_token), IGNORED(commit_fence_deadline), IGNORED(alert)

/* ri-open (open.c); no intent_data is {}, as ri-run has always read it */
const struct ri_field ri_open_fields[] = {
	FIELD(kind, RI_F_STR, true),
	FIELD(act_key, RI_F_STR, true),
	FIELD(actor_ref, RI_F_STR, true),
	FIELD(credential, RI_F_STR, false),
	FIELD(intent_data, RI_F_OBJ, false),
	END };

/* ri-close (close.c) */
const struct ri_field ri_close_fields[] = {
	INVOCATION_NAMED,
	FIELD(outcome_action_ref, RI_F_STR, true),
	FIELD(outcome_data, RI_F_OBJ, true),
	OPEN_ANSWER_EXTRAS,
	END };

/* ri-refuse (close.c) */
const struct ri_field ri_refuse_fields[] = {
	INVOCATION_NAMED,
	FIELD(reason, RI_F_STR, true),
	FIELD(constituent_code, RI_F_CODE, true),
	OPEN_ANSWER_EXTRAS,
	END };

/* ri-yield (close.c); without actor_ref and a credential it releases
 * nothing and answers invalid-credential, after the parse (close 1) */
const struct ri_field ri_yield_fields[] = {
	FIELD(kind, RI_F_STR, true),
	FIELD(act_key, RI_F_STR, true),
	FIELD(invocation_id, RI_F_STR, true),
	FIELD(intent_event_id, RI_F_STR, false),
	FIELD(actor_ref, RI_F_STR, false),
	FIELD(credential, RI_F_STR, false),
	OPEN_ANSWER_EXTRAS,
	END };

/* ri-resolve (resolve.c) */
const struct ri_field ri_resolve_fields[] = {
	INVOCATION_NAMED,
	FIELD(disposition, RI_F_OBJ, true),
	END };

/* ri-read (read.c); which of them go together -- kind with act_key, or
 * invocation_id alone, or event_id -- ri_read_invocation checks */
const struct ri_field ri_read_fields[] = {
	FIELD(kind, RI_F_STR, false),
	FIELD(act_key, RI_F_STR, false),
	FIELD(invocation_id, RI_F_STR, false),
	FIELD(event_id, RI_F_STR, false),
	END };
