/*
 * standing.h -- the section titled "Which closing stands", once.
 *
 * Every surface asks this module and no other: ri-read's state and both
 * binding-duplicate fields, Open's non-repeatable check, Close's adopt
 * decision, Resolve, the sweep's duplicate scan, and every ri-audit check.
 *
 * The product's reading (the closings issue's rulings):
 *   - a closing supersedes exactly the closings it names in "supersedes"
 *     (a string, or an array of strings), and only earlier closings of the
 *     same invocation; a "supersedes" naming anything else is malformed and
 *     supersedes nothing (Which closing stands 2, 3, 8);
 *   - records linked by supersedes form chains; a chain's head is a closing
 *     no other closing names (Term standing closing); every record reachable
 *     from a head counts with it as one closing (4, 5);
 *   - a binding duplicate (the closings key) is two or more chain heads on
 *     one invocation id (6, journal fence none 1b);
 *   - among the heads, the lowest sequence number stands, and the state is
 *     projected from it (7, Term state projection).
 */
#ifndef RI_STANDING_H
#define RI_STANDING_H

#include "store/store.h"

enum ri_closing_type {
	RI_C_OUTCOME, RI_C_REFUSED, RI_C_ABANDONED, RI_C_ESCALATED
};

struct ri_closing {
	struct ri_record *rec;
	enum ri_closing_type type;      /* from the record's stored role */
	const char **names;             /* the event ids "supersedes" names (into rec->payload) */
	size_t n_names;
	bool names_malformed;           /* "supersedes" is neither a string nor an array of them */
	bool resolved_by;               /* written by an operator (resolve 21) */
	bool recovery;
	/* set by ri_standing */
	bool head;                      /* no other closing names it */
	bool malformed;                 /* its supersedes names no earlier closing of this invocation */
};

/* One invocation's records, classified by their stored roles. */
struct ri_inv {
	struct ri_records all;          /* every record of the invocation, ascending */
	struct ri_record *intent;       /* NULL when none */
	size_t n_intents;               /* > 1 is a duplicate invocation id (Check 2.2) */
	struct ri_record **recovery;    /* <kind>.recovery_intended records */
	size_t n_recovery;
	struct ri_closing *closings;
	size_t n_closings;
};

/* Classify one record into inv (the record must outlive inv). */
void ri_inv_add(struct ri_inv *inv, struct ri_record *rec);
/* Free what ri_inv_add allocated (not the records). */
void ri_inv_free_index(struct ri_inv *inv);

enum ri_state {
	RI_STATE_OPEN, RI_STATE_CLOSED, RI_STATE_REFUSED, RI_STATE_ABANDONED,
	RI_STATE_ESCALATED, RI_STATE_RESOLVED
};

struct ri_standing {
	const struct ri_closing *standing;      /* the lowest-seq head; NULL: none stands */
	size_t n_heads;                         /* chains on the invocation */
	bool duplicate;                         /* the closings key: two or more chains */
	enum ri_state state;
	const struct ri_closing *malformed;     /* the first closing with a void supersedes */
	const struct ri_closing *outcome;       /* the latest outcome record, standing or
	                                         * not (open step 3.9a) */
};

/* Which closing stands 1-8 and the state projection, over one invocation's
 * closings (ascending seq); marks each closing's head and malformed. */
void ri_standing(struct ri_closing *c, size_t n, struct ri_standing *out);
const char *ri_state_name(enum ri_state s);

/*
 * The intents key (Which closing stands 9-10, read invocation 8, reconcile
 * step 5.3, Check 2.3): over one act's retained intents, each open from its
 * intent's seq until the seq of the first closing naming it (INT64_MAX while
 * none does), were two open at once?  Sets *a and *b to the first pair found.
 */
struct ri_open_span {
	int64_t opened, closed;
};
bool ri_intents_key(const struct ri_open_span *v, size_t n, size_t *a, size_t *b);

#endif
