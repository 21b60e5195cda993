/*
 * operator.h -- what still needs an operator, read once for every surface
 * that asks: ri-resolve's shorthand (which invocation to resolve),
 * ri-findings (is an act finding still open?), ri-audit's report (the acts
 * that still need someone).  Read through "Which closing stands"
 * (standing.h), never from the findings register alone.
 */
#ifndef RI_OPERATOR_H
#define RI_OPERATOR_H

#include "protocol/proto.h"

/*
 * Does this invocation need an operator?  The reason, or NULL:
 *   "binding-duplicate"  two or more chains stand (resolve writes one over all)
 *   "escalated"          the standing closing is an escalation (resolve 1)
 *   "open"               aged and unclosed: report-only (open step 3.8d), or
 *                        left open by the sweep (a store or identity outage)
 * An intent still in flight, or one whose standing closing is an outcome,
 * refusal or abandonment, needs no one.  k may be NULL (a kind no longer
 * bound: "open" is then judged aged by the retention drop alone).
 */
const char *ri_needs_operator(const struct ri_config *c, const struct ri_kind *k,
    const struct ri_inv *inv, const struct ri_standing *sd, ri_ms now);

/* Is an act finding on this invocation settled: a closing stands that is
 * not an escalation, on one chain?  *closed_at is its recorded_at. */
bool ri_inv_settled(const struct ri_inv *inv, const struct ri_standing *sd, ri_ms *closed_at);

/*
 * The invocations of (kind, act_key) that need an operator, oldest first:
 * a JSON array of {invocation_id, intent_event_id, state, why,
 * recorded_at}.  A store code (RI_ST_*).
 */
int ri_act_pending(struct ri *r, const char *kind, const char *act_key, ri_ms now, json_t **out);

/*
 * ri-findings: the register, one JSON object per line, each act finding's
 * "closed" and "closed_at" read from the journal -- an act finding closes
 * when a closing stands on its invocation that needs no one (an outcome, a
 * refusal, an abandonment), at that closing's recorded_at; the register
 * itself keeps every finding (findings 1-2).  open_only: standing instance
 * findings and act findings whose act still needs someone.  Without a
 * journal to read (r->st NULL), act findings are as the register holds
 * them, and *warn says so.
 */
/* Each row the filters keep, as the JSON object of
 * schemas/ri-findings.line.json, is handed to emit (the CLI prints it as a
 * JSON line or as text); NULL for none (--check: the counts alone). */
typedef void ri_list_emit(const json_t *row, void *arg);
struct ri_list_counts {
	size_t named;           /* rows naming the kind asked for (all rows without one) */
	size_t shown;           /* rows the filters kept: open ones, with open_only */
};
int ri_findings_list(struct ri *r, bool open_only, const char *kind, ri_list_emit *emit, void *emit_arg,
    struct ri_list_counts *counts, bool *warn, ri_err *err);

/* ri-resolve's shorthand (struct ri_cmd.fill): --abandon CAUSE |
 * --outcome REF [--outcome-data JSON] | --escalate CAND... become the
 * disposition; missing ids are filled when exactly one invocation of the
 * act needs an operator -- else the candidates are listed and the call is
 * a usage error (64). */
int ri_resolve_fill(struct ri *r, json_t *req, int argc, char **argv, json_t **ans, ri_err *err);

/*
 * ri-resolve --probe (issue 44, point 8): what the kind's probe answers now
 * for the invocation req names (filled as for a resolution), and which
 * dispositions that answer supports, each as --disposition takes it.
 * Takes no section, writes nothing, asks for no credential.
 */
int ri_resolve_probe(struct ri *r, json_t *req, json_t **ans, ri_err *err);

#endif
