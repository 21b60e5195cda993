/*
 * proto.h -- what the protocol's actions share: strict request parsing,
 * the invocation read (an invocation's verified records, classified by the
 * vocabulary -- journal 4), the section titled "Which closing stands", the
 * positioned refusals, and the lost-reply wait.
 */
#ifndef RI_PROTO_H
#define RI_PROTO_H

#include "clock.h"
#include "instance.h"

/* ---- requests ---- */

enum ri_ftype { RI_F_STR, RI_F_OBJ, RI_F_CODE, RI_F_IGNORE, RI_F_ANY };

struct ri_field {
	const char *name;
	enum ri_ftype type;
	bool required;
	void *dest;             /* const char ** for STR/CODE (CODE: string or integer,
	                         * rendered), json_t ** for OBJ/ANY */
};

/* RI_MALFORMED for a non-object, an unknown field, a wrong type or a
 * missing required field (INTERFACE: unknown fields are refused). */
int ri_req_parse(json_t *req, const struct ri_field *fields, ri_err *err);
/* The credential: the request's, else $RI_CREDENTIAL, else the file named
 * by $RI_CREDENTIAL_FILE.  Never from argv, never printed. */
const char *ri_req_credential(const char *from_request, char *buf, size_t n);

/* ---- the vocabulary ---- */

enum ri_closing_type {
	RI_C_OUTCOME, RI_C_REFUSED, RI_C_ABANDONED, RI_C_ESCALATED
};

bool ri_is_outcome_ref(const struct ri_kind *k, const char *action_ref);
/* "<kind>.<suffix>" into buf */
const char *ri_action_ref(const struct ri_kind *k, const char *suffix, char *buf, size_t n);

/* ---- one invocation's records ---- */

struct ri_closing {
	struct ri_record *rec;
	enum ri_closing_type type;
	const char *supersedes;         /* event id it names, or NULL */
	bool resolved_by;               /* written by an operator (resolve 21) */
	bool recovery;
};

struct ri_inv {
	struct ri_records all;          /* every record of the invocation, ascending */
	struct ri_record *intent;       /* NULL when none */
	size_t n_intents;               /* > 1 is a duplicate invocation id (Check 2.2) */
	struct ri_record **recovery;    /* <kind>.recovery_intended records */
	size_t n_recovery;
	struct ri_closing *closings;
	size_t n_closings;
};

/* Read and classify every record naming inv_id (verified, through the
 * filtered range read -- Primitive policy 35, 38).  Store code. */
int ri_inv_read(struct ri *r, const char *inv_id, struct ri_inv *out);
/* The same, inside ri-audit's traversal, whose snapshot verified every row. */
int ri_inv_read_trusted(struct ri *r, const char *inv_id, struct ri_inv *out);
void ri_inv_free(struct ri_inv *inv);
/* Classify one record into inv (the records must stay alive). */
void ri_inv_add(struct ri *r, struct ri_inv *inv, struct ri_record *rec);

/* ---- Which closing stands ---- */

enum ri_state {
	RI_STATE_OPEN, RI_STATE_CLOSED, RI_STATE_REFUSED, RI_STATE_ABANDONED,
	RI_STATE_ESCALATED, RI_STATE_RESOLVED
};

struct ri_standing {
	const struct ri_closing *standing;      /* NULL: no closing stands */
	size_t unsuperseded;
	bool duplicate;                         /* the closings key */
	enum ri_state state;
};

/* Which closing stands 1-8 and the state projection, over one
 * invocation's closings. */
void ri_standing(const struct ri_closing *c, size_t n, struct ri_standing *out);
const char *ri_state_name(enum ri_state s);

/* ---- answers ---- */

/* A record as ri-read shows it: event_id, seq, action_ref, actor_ref,
 * recorded_at, payload (null and "purged": true once destroyed). */
json_t *ri_record_json(const struct ri_record *rec);

json_t *ri_refusal(const char *code);
json_t *ri_refusal_rf(const char *position);
/* The same, with "cause": "integrity" when st is RI_ST_INTEGRITY. */
json_t *ri_refusal_rf_st(const char *position, int st);
/* Set err and *ans for a refusal; returns code. */
int ri_refuse_with(json_t **ans, json_t *refusal, ri_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* A hard alert: a success answer that carries "alert" and a stderr line. */
void ri_alert(json_t *ans, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- the lost reply ---- */

/* Primitive policy 34: block until journal_write_bound has elapsed since
 * the issue, as remaining reports (or, where the clock is frozen by the
 * env seam, as the monotonic clock reports). */
void ri_wait_write_bound(struct ri *r, const char *kind, const char *act_key,
    const char *holder, ri_ms remaining_at_issue, int64_t mono_at_issue);
/* Read back by invocation id the record of action_ref (NULL: any closing
 * role); Primitive policy 35.  RI_ST_OK with *found set, or a store code. */
int ri_read_back(struct ri *r, const char *inv_id, const char *action_ref,
    char event_id[RI_ID_LEN + 1], bool *found);

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
