/* audit.h -- ri-audit: Generation acceptance, Checks 1.1-8.1 (ri-audit(1)). */
#ifndef RI_AUDIT_H
#define RI_AUDIT_H

#include <stdio.h>
#include "ri.h"

struct ri_audit_opts {
	bool probe;                     /* run each kind's probe (Check 6) */
	const char *public_key;         /* verify seals with this key file */
	const char *findings;           /* another findings register */
	int64_t expect_seq;             /* --expect-head SEQ:HASH, 0 when absent */
	unsigned char expect_hash[32];
	bool progress;                  /* records done of total, on stderr (a terminal) */
	bool copy;                      /* --journal names a copy: verify it as a past
	                                 * state of the witnessed history */
	ri_ms max_unsealed;             /* --public-key: the unsealed tail's age bound
	                                 * (RI_NONE: the default, compensation_window) */
};

/* The report: {"records", "head": {seq, hash}, "checks": [{check, name,
 * status, failures: [{event_ids, invocation_id, message}], note?}]};
 * RI_CHECK_FAILED when any check fails. */
int ri_audit(ri *r, const struct ri_audit_opts *o, json_t **ans, ri_err *err);
/* The report for people (report.c), drawn from the answer alone: --text
 * ends with the tally and prints the head as SEQ:HASH; --html is one
 * self-contained XHTML page (inline SVG, no script, no network).  -1 on a
 * write error. */
void ri_audit_text(json_t *report, FILE *out);
int ri_audit_html(json_t *report, FILE *out);

/* ri-init --accept-restore: restore.h. */

#endif
