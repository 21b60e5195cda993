/*
 * proto.h -- what the protocol's actions share: strict request parsing,
 * the invocation read (an invocation's verified records, classified by the
 * vocabulary -- journal 4), the section titled "Which closing stands", the
 * positioned refusals, and the lost-reply wait.
 */
#ifndef RI_PROTO_H
#define RI_PROTO_H

#include "util/clock.h"
#include "protocol/handle.h"
#include "protocol/standing.h"

/* ---- requests ---- */

enum ri_ftype { RI_F_STR, RI_F_OBJ, RI_F_CODE, RI_F_IGNORE, RI_F_ANY };

/*
 * What a request says: every field some command reads from its request, as
 * the command's field table binds it.  One struct for all six so that their
 * tables are plain data, with nothing of a call in them (issue 42).
 */
struct ri_req {
	const char *kind, *act_key, *invocation_id, *intent_event_id, *event_id, *actor_ref, *credential;
	const char *outcome_action_ref, *reason;
	json_t *intent_data, *outcome_data, *constituent_code, *disposition;
};

struct ri_field {
	const char *name;
	enum ri_ftype type;
	bool required;
	size_t at;              /* offsetof(struct ri_req, ...): a const char * for
	                         * STR, a json_t * for OBJ/CODE (CODE: a string or an
	                         * integer)/ANY; unused for IGNORE */
};

/* The six requests' tables (requests.c), each ended by a NULL name. */
extern const struct ri_field ri_open_fields[], ri_close_fields[], ri_refuse_fields[],
    ri_yield_fields[], ri_resolve_fields[], ri_read_fields[];

/* Fill *out from req by fields (a field the request lacks is NULL).
 * RI_MALFORMED for a non-object, an unknown field, a wrong type or a
 * missing required field (INTERFACE: unknown fields are refused). */
int ri_req_parse(json_t *req, const struct ri_field *fields, struct ri_req *out, ri_err *err);

/* ---- the vocabulary ---- */

bool ri_is_outcome_ref(const struct ri_kind *k, const char *action_ref);
/* "<kind>.<suffix>" into buf */
const char *ri_action_ref(const struct ri_kind *k, const char *suffix, char *buf, size_t n);

/* ---- one invocation's records ---- */

/* Read and classify every record naming inv_id (verified, through the
 * filtered range read -- Primitive policy 35, 38).  Store code. */
int ri_inv_read(struct ri *r, const char *inv_id, struct ri_inv *out);
/* The same, inside ri-audit's traversal, whose snapshot verified every row. */
int ri_inv_read_trusted(struct ri *r, const char *inv_id, struct ri_inv *out);
void ri_inv_free(struct ri_inv *inv);

/*
 * An act's invocations (kind, act_key), each classified and its standing
 * read (standing.h), oldest first: every record of the act's scope, newest
 * first through the range read, until max_intents intents were read (0:
 * all) -- an entry is whole once its intent is reached, so entries whose
 * intent lies beyond what was read are dropped.  With inv_id, only that
 * invocation.  Store code; a record of illegal shape, or a void supersedes,
 * is named in bad (and why) for the caller to fail closed on.
 */
struct ri_act_inv {
	char *inv_id;
	struct ri_inv inv;              /* records borrowed from ri_act.all */
	struct ri_standing sd;
};
struct ri_act {
	struct ri_records all;
	struct ri_act_inv *v;           /* ascending by intent seq */
	size_t n;
	size_t intents;                 /* intents read (may exceed n's retained ones) */
	bool truncated;                 /* max_intents stopped the read */
	const struct ri_record *bad;
	char why[256];
};
int ri_act_read(struct ri *r, const char *kind, const char *act_key, const char *inv_id,
    size_t max_intents, struct ri_act *out);
/* ri_inv_read's first range read (for a caller to announce it: store.h read_ahead). */
void ri_inv_query(const char *inv_id, struct ri_query *q);
/* ri_act_read's first range read (for a caller to announce it: store.h read_ahead). */
void ri_act_query(const char *kind, const char *act_key, const char *inv_id, size_t max_intents,
    struct ri_query *q);
void ri_act_free(struct ri_act *a);

/*
 * The retention drop (sequence high water 5, read invocation 1, Check 7.1;
 * the closings issue's ruling: in every reader): false once the intent's
 * payload is purged or its retention has ended -- at the record's own
 * retention_until when placed, else recorded_at + the kind's period.
 */
bool ri_intent_retained(const struct ri_config *c, const struct ri_record *intent, ri_ms now);

/*
 * The legal shape of a record the composition wrote (Primitive policy 2, 4,
 * 11; Check 8.1.8), shared by ri-read and ri-audit: its payload names the
 * invocation, kind and act key its header binds; a record naming an
 * invocation other than its intent carries intent_event_id.  False with why.
 */
bool ri_record_legal(const struct ri_record *rec, char *why, size_t n);

/* ---- answers ---- */

/* A record as ri-read shows it: event_id, seq, action_ref, actor_ref,
 * recorded_at, payload (null and "purged": true once destroyed). */
json_t *ri_record_json(const struct ri_record *rec);

json_t *ri_refusal(const char *code);
/* The refusal with "cause": "integrity" when integrity -- the journal failed
 * verification rather than being out of reach (INTERFACE 30); returned. */
json_t *ri_cause_integrity(json_t *refusal, bool integrity);
/* {"refused": "journal-unavailable"}, with that cause when integrity. */
json_t *ri_refusal_unavailable(bool integrity);
json_t *ri_refusal_rf(const char *position);
/* The same, with "cause": "integrity" when st is RI_ST_INTEGRITY. */
json_t *ri_refusal_rf_st(const char *position, int st);
/* Set err and *ans for a refusal; returns code. */
int ri_refuse_with(json_t **ans, json_t *refusal, ri_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
#ifdef __clang_analyzer__
/* it returns its code: said for the analyzer (make tidy; util.h) */
#define ri_refuse_with(ans, refusal, err, code, ...) \
	(ri_refuse_with((ans), (refusal), (err), (code), __VA_ARGS__), (code))
#endif
/* A hard alert: a success answer that carries "alert" and a stderr line. */
void ri_alert(json_t *ans, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- the lost reply ---- */

/* Primitive policy 34: block until journal_write_bound has elapsed since
 * the issue, as remaining reports (or, where the clock is frozen by the
 * env seam, as the monotonic clock reports). */
void ri_wait_write_bound(struct ri *r, const char *kind, const char *act_key,
    const char *holder, ri_ms remaining_at_issue, int64_t mono_at_issue);
/* Read back by invocation id (Primitive policy 35) the one record the
 * writer minted event_id for before its issue -- never another writer's
 * record of the same shape.  RI_ST_OK with *found set, or a store code. */
int ri_read_back(struct ri *r, const char *inv_id, const char *event_id, bool *found);

/*
 * The journal could not be opened at all (missing, unreadable, not a
 * journal): every command still answers on its own position's arm once its
 * request is checked -- a reader's or Open's journal-unavailable (15);
 * Close's, Refuse's and Resolve's recording-failure (by then the act's
 * existence is decided); Yield's ok.  Returns RI_OK when the journal is
 * open and the call may go on.
 */
int ri_no_journal(struct ri *r, const char *position, json_t *constituent_code,
    json_t **ans, ri_err *err);

/* The seam reading, as a code. */
int ri_seam_now(struct ri *r, ri_ms *now, ri_err *err);
/* Is the string non-empty and no longer than the reference length cap? */
bool ri_ref_ok(const struct ri *r, const char *s);

#endif
