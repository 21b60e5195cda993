/*
 * resolve.c -- the Resolve contract (resolve 1-28): the human-attested
 * close.  An operator closes an intent the sweep cannot -- report-only,
 * or an escalation investigated -- under the operator's own credential,
 * naming in supersedes whatever closing it corrects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/bindings.h"
#include "util/fault.h"
#include "protocol/gate.h"
#include "util/nc.h"
#include "protocol/proto.h"
#include "protocol/settle.h"

struct resolve_req {
	struct ri_req in;               /* the request */
	const struct ri_kind *k;
	char op_run[RI_ID_LEN + 1];
	char cred_buf[256];
};

enum disposition { D_OUTCOME, D_ABANDONED, D_ESCALATED };

static int
invalid(json_t **ans, ri_err *err, const char *cause, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
invalid(json_t **ans, ri_err *err, const char *cause, const char *fmt, ...)
{
	va_list ap;

	*ans = json_pack("{s:s, s:s}", "refused", "invalid-request", "cause", cause);
	err->code = RI_INVALID_REQUEST;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return RI_INVALID_REQUEST;
}

/* resolve 1, 27-28: exactly one disposition, well formed. */
static int
parse_disposition(struct ri *r, struct resolve_req *q, enum disposition *d, json_t **body,
    json_t **ans, ri_err *err)
{
	const char *key;
	json_t *v, *x;
	size_t i;

	if (json_object_size(q->in.disposition) != 1)
		return invalid(ans, err, "malformed", "disposition must be exactly one of outcome, abandoned, escalated");
	json_object_foreach(q->in.disposition, key, v) {
		*body = v;
		if (strcmp(key, "outcome") == 0) {
			json_t *ref = json_object_get(v, "outcome_action_ref"), *data = json_object_get(v, "outcome_data");
			if (!json_is_object(v) || json_object_size(v) != 2 || !json_is_string(ref) ||
			    !json_is_object(data) || !ri_is_outcome_ref(q->k, json_string_value(ref)))
				return invalid(ans, err, "malformed", "outcome needs outcome_action_ref (an outcome of kind %s)"
				    " and an outcome_data object, and nothing else", q->in.kind);
			*d = D_OUTCOME;
		} else if (strcmp(key, "abandoned") == 0) {
			if (!json_is_object(v) || json_object_size(v) != 1 || !json_is_string(json_object_get(v, "cause")))
				return invalid(ans, err, "malformed", "abandoned needs exactly {\"cause\": string}");
			*d = D_ABANDONED;
		} else if (strcmp(key, "escalated") == 0) {
			json_t *c = json_object_get(v, "candidates");
			if (!json_is_object(v) || json_object_size(v) != 1 || !json_is_array(c))
				return invalid(ans, err, "malformed", "escalated needs exactly {\"candidates\": [...]}");
			json_array_foreach(c, i, x)
				if (!ri_ref_ok(r, json_string_value(x)))
					return invalid(ans, err, "malformed", "candidate %zu is not a reference under"
					    " reference_length_cap", i);
			if ((int64_t)json_array_size(c) > r->cfg->intent_candidates_cap)
				return invalid(ans, err, "candidates-over-cap", "%zu candidates exceed intent_candidates_cap %lld",
				    json_array_size(c), (long long)r->cfg->intent_candidates_cap);
			*d = D_ESCALATED;
		} else {
			return invalid(ans, err, "malformed", "unknown disposition \"%s\"", key);
		}
	}
	return RI_OK;
}

/*
 * Resolve is the human-attested close (Invariant 5.4, Term caller kind): a
 * service identity -- any kind's service actor, by name, or an actor the
 * registry holds as a service, once its credential authenticates (Actor
 * Identity's check alone: nothing appended, no attestation minted) -- is
 * refused invalid-request(caller-kind) before the take, nothing written.
 * Whether a credential is valid is still decided at the write and nowhere
 * earlier (resolve 2-3): a caller that does not authenticate here goes on,
 * and the write refuses it.
 */
static int
caller_kind(struct ri *r, struct resolve_req *q, json_t **ans, ri_err *err)
{
	struct ri_actor who;
	bool service;

	/* negative control: no caller is a service identity */
	service = !RI_NC(RI_NC_NO_CALLER_KIND) && (ri_is_service_actor(r->cfg, q->in.actor_ref, NULL) ||
	    (r->st->ops->authenticate(r->st, q->in.actor_ref, q->in.credential, &who) == RI_ST_OK &&
	    ri_is_service_actor(r->cfg, q->in.actor_ref, &who)));
	if (service)
		return invalid(ans, err, "caller-kind", "%s is a service identity: Resolve is for human"
		    " operators; nothing written", q->in.actor_ref);
	return RI_OK;
}

#define RI_CONTINUE (-1)

/*
 * The standing closing is this very resolution: written by this operator
 * (resolve 21: resolved_by), with the same disposition -- the same outcome
 * ref and data, the same cause, the same candidates.  Then the answer is
 * its closing_event_id, once the credential authenticates (10 otherwise:
 * a stranger learns nothing a reader could not), and RI_OK; any other
 * case is RI_CONTINUE.
 */
static int
landed_before(struct ri *r, struct resolve_req *q, const struct ri_standing *sd, enum disposition d,
    json_t *body, json_t **ans, ri_err *err)
{
	const struct ri_closing *c = sd->standing;
	const json_t *p;
	struct ri_actor who;
	bool same;

	if (sd->duplicate || c == NULL || !c->resolved_by || c->rec->payload == NULL)
		return RI_CONTINUE;
	p = c->rec->payload;
	const char *by = json_string_value(json_object_get(p, "resolved_by"));
	if (by == NULL || strcmp(by, q->in.actor_ref) != 0)
		return RI_CONTINUE;
	switch (d) {
	case D_OUTCOME:
		same = c->type == RI_C_OUTCOME && strcmp(c->rec->action_ref,
		    json_string_value(json_object_get(body, "outcome_action_ref"))) == 0 &&
		    json_equal(json_object_get(p, "data"), json_object_get(body, "outcome_data"));
		break;
	case D_ABANDONED:
		same = c->type == RI_C_ABANDONED &&
		    json_equal(json_object_get(p, "cause"), json_object_get(body, "cause"));
		break;
	default:
		same = c->type == RI_C_ESCALATED &&
		    json_equal(json_object_get(p, "store_candidates"), json_object_get(body, "candidates"));
		break;
	}
	if (!same)
		return RI_CONTINUE;
	if (r->st->ops->authenticate(r->st, q->in.actor_ref, q->in.credential, &who) != RI_ST_OK)
		return ri_refuse_with(ans, ri_refusal("invalid-credential"), err, RI_INVALID_CREDENTIAL,
		    "invalid-credential: %s; nothing appended", r->st->ops->error(r->st)->msg);
	*ans = json_pack("{s:s}", "closing_event_id", c->rec->event_id);
	return RI_OK;
}

int
ri_resolve(ri *r, json_t *req, json_t **ans, ri_err *err)
{
	struct resolve_req q = { 0 };
	enum disposition d = D_OUTCOME;
	json_t *body = NULL, *payload = NULL;
	struct ri_grant g;
	struct ri_inv inv;
	struct ri_standing sd;
	struct ri_record intent;
	char ref[160];
	ri_ms now, left;
	int rc, st;
	bool have_inv = false, have_intent = false;

	*ans = NULL;
	memset(&intent, 0, sizeof intent);
	if ((rc = ri_req_parse(req, ri_resolve_fields, &q.in, err)) != RI_OK ||
	    (rc = ri_no_journal(r, "resolution", NULL, ans, err)) != RI_OK)
		return rc;
	if ((q.k = ri_config_kind(r->cfg, q.in.kind)) == NULL)
		return invalid(ans, err, "malformed", "kind \"%s\" is not bound", q.in.kind);
	if ((rc = parse_disposition(r, &q, &d, &body, ans, err)) != RI_OK)
		return rc;
	/* resolve 2: the credential is validated at the closing write and
	 * nowhere earlier */
	if ((rc = ri_caller_credential(r->cfg, q.in.credential, q.cred_buf, sizeof q.cred_buf,
	    &q.in.credential, err)) != RI_OK)
		return rc;
	if (q.in.credential == NULL)
		q.in.credential = "";
	if ((rc = caller_kind(r, &q, ans, err)) != RI_OK)
		return rc;
	/* resolve 19: now and the operator run id, at the operator's seam */
	if ((rc = ri_seam_now(r, &now, err)) != RI_OK)
		return rc;
	ri_mint_id("opr_", q.op_run);
	/* resolve 4-6: the sweep lease, held by the operator run id */
	if ((st = r->st->ops->take(r->st, q.in.kind, q.in.act_key, q.op_run, ri_sweep_lease(r->cfg), &g)) ==
	    RI_ST_INTEGRITY)
		/* act section 11: a lease row past the longest lease is surfaced,
		 * never waited on (INTERFACE 30: resolve -> 23) */
		return ri_refuse_with(ans, ri_refusal_rf_st("resolution", st), err, RI_RF_RESOLUTION,
		    "recording-failure(resolution): %s; nothing appended", r->st->ops->error(r->st)->msg);
	if (st != RI_ST_OK) {
		*ans = ri_refusal("section-unavailable");
		return ri_fail(err, RI_SECTION_UNAVAILABLE, "section-unavailable: %s", r->st->ops->error(r->st)->msg);
	}
	ri_fault("resolve.after_take");
	/* resolve 8: re-read under the section */
	if ((st = ri_inv_read(r, q.in.invocation_id, &inv)) != RI_ST_OK) {
		rc = ri_refuse_with(ans, ri_refusal_rf_st("resolution", st), err, RI_RF_RESOLUTION,
		    "recording-failure(resolution): the re-read failed: %s", r->st->ops->error(r->st)->msg);
		goto out;
	}
	have_inv = true;
	ri_standing(inv.closings, inv.n_closings, &sd);
	if (sd.malformed != NULL) {
		/* the closings issue's ruling: a void supersedes fails closed */
		rc = ri_refuse_with(ans, ri_refusal_rf_st("resolution", RI_ST_INTEGRITY), err, RI_RF_RESOLUTION,
		    "recording-failure(resolution): journal integrity: closing %s names no earlier closing of"
		    " this invocation", sd.malformed->rec->event_id);
		goto out;
	}
	/* INTERFACE, third wave: a resolution that already landed -- this
	 * operator's, the same disposition, still standing -- is answered
	 * again with its own closing, exit 0: the command is retry-safe (a
	 * reply lost, a script re-run) and writes nothing more */
	if ((rc = landed_before(r, &q, &sd, d, body, ans, err)) != RI_CONTINUE)
		goto out;
	/* resolve 9: an outcome or a refusal that STANDS already accounts for
	 * it -- read from the standing chain head, never from a closing a
	 * later one superseded (resolve 15a, 16a; issue 41 point 3) -- unless
	 * two chains stand, which an operator must be able to resolve (journal
	 * fence none 4, the closings issue's ruling) */
	const struct ri_closing *accounted = NULL;
	if (!RI_NC(RI_NC_RESOLVE_READS_SUPERSEDED)) {
		accounted = !sd.duplicate && sd.standing != NULL &&
		    (sd.standing->type == RI_C_OUTCOME || sd.standing->type == RI_C_REFUSED) ? sd.standing : NULL;
	} else {
		/* negative control: every closing read, superseded ones too */
		for (size_t i = 0; i < inv.n_closings && !sd.duplicate && accounted == NULL; i++)
			if (inv.closings[i].type == RI_C_OUTCOME || inv.closings[i].type == RI_C_REFUSED)
				accounted = &inv.closings[i];
	}
	if (accounted != NULL) {
		rc = ri_refuse_with(ans, json_pack("{s:s, s:s}", "refused", "already-accounted",
		    "closing_event_id", accounted->rec->event_id), err, RI_ALREADY_ACCOUNTED,
		    "already-accounted: %s closes this invocation", accounted->rec->event_id);
		goto out;
	}
	/* resolve 10-12: read_record(intent event id) -- never from the range
	 * read, so a lawfully purged intent answers purged, not not-known */
	st = r->st->ops->read_record(r->st, q.in.intent_event_id, &intent);
	if (st == RI_ST_OK || st == RI_ST_PURGED)
		have_intent = true;
	if (st == RI_ST_NOT_KNOWN || (have_intent && (intent.role != RI_ROLE_INTENT ||
	    intent.invocation_id == NULL || strcmp(intent.invocation_id, q.in.invocation_id) != 0 ||
	    strcmp(intent.kind, q.in.kind) != 0 || strcmp(intent.act_key, q.in.act_key) != 0))) {
		rc = ri_refuse_with(ans, ri_refusal("not-known"), err, RI_NOT_KNOWN,
		    "not-known: no intent %s of invocation %s on (%s, %s)", q.in.intent_event_id, q.in.invocation_id,
		    q.in.kind, q.in.act_key);
		goto out;
	}
	if (st == RI_ST_PURGED) {
		rc = invalid(ans, err, "purged", "the intent's payload was destroyed by retention");
		goto out;
	}
	if (st != RI_ST_OK) {
		/* Capability requirement 9-10: an unreachable journal is never
		 * not-known */
		rc = ri_refuse_with(ans, ri_refusal_rf_st("resolution", st), err, RI_RF_RESOLUTION,
		    "recording-failure(resolution): %s", r->st->ops->error(r->st)->msg);
		goto out;
	}
	if (!sd.duplicate && sd.standing != NULL && sd.standing->type == RI_C_ABANDONED && d != D_OUTCOME) {
		/* resolve 16-17 */
		rc = invalid(ans, err, "already-abandoned", "an abandonment stands (%s); only an outcome may"
		    " supersede it", sd.standing->rec->event_id);
		goto out;
	}
	/* resolve 18-19: abandoned only for an aged intent, by the operator's now */
	/* negative control: no too-young guard at the operator's seam (tla -buggy-opclock) */
	if (d == D_ABANDONED && !RI_NC(RI_NC_RESOLVE_NO_TOO_YOUNG) &&
	    ri_in_flight(r->cfg, q.k, intent.recorded_at, now)) {
		rc = invalid(ans, err, "too-young", "the intent is still in flight (examine edge not reached);"
		    " wait and re-issue unchanged");
		goto out;
	}
	ri_fault("resolve.after_reread");
	/* resolve 7: the gate */
	if (r->st->ops->remaining(r->st, q.in.kind, q.in.act_key, q.op_run, &left) != RI_ST_OK || left == RI_NONE ||
	    r->cfg->journal_write_bound > left) {
		rc = ri_refuse_with(ans, ri_refusal_rf_st("resolution", 0), err, RI_RF_RESOLUTION,
		    "recording-failure(resolution): the section's lease is too short to write; nothing appended");
		goto out;
	}
	/* resolve 13, 15, 21: recovery, resolved_by, acting actor ref;
	 * supersedes names the standing record; no recovery_intended */
	payload = json_pack("{s:s, s:s, s:s, s:s, s:b, s:s, s:s}", "invocation_id", q.in.invocation_id,
	    "intent_event_id", q.in.intent_event_id, "kind", q.in.kind, "act_key", q.in.act_key, "recovery", 1,
	    "resolved_by", q.in.actor_ref, "acting_actor_ref", intent.actor_ref);
	if (RI_NC(RI_NC_RESOLVE_NO_SUPERSEDES)) {
		/* negative control: resolved_by and no supersedes (tla -buggy-supersede) */
	} else if (sd.duplicate) {
		/* the ruling on resolving a duplicate: one closing naming every
		 * standing chain head, so one chain is left */
		json_t *heads = json_array();
		if (!RI_NC(RI_NC_RESOLVE_NAMES_ONE)) {
			for (size_t i = 0; i < inv.n_closings; i++)
				if (inv.closings[i].head)
					json_array_append_new(heads, json_string(inv.closings[i].rec->event_id));
		} else {
			/* negative control: only the standing head named (tla -buggy-resolveone) */
			json_array_append_new(heads, json_string(sd.standing->rec->event_id));
		}
		json_object_set_new(payload, "supersedes", heads);
	} else if (sd.standing != NULL) {
		json_object_set_new(payload, "supersedes", json_string(sd.standing->rec->event_id));
	}
	const char *action_ref;
	if (d == D_OUTCOME) {
		action_ref = json_string_value(json_object_get(body, "outcome_action_ref"));
		json_object_set(payload, "data", json_object_get(body, "outcome_data"));
	} else if (d == D_ABANDONED) {
		action_ref = ri_action_ref(q.k, "abandoned", ref, sizeof ref);
		json_object_set(payload, "cause", json_object_get(body, "cause"));
	} else {
		action_ref = ri_action_ref(q.k, "escalated", ref, sizeof ref);
		json_object_set(payload, "store_candidates", json_object_get(body, "candidates"));
		json_object_set_new(payload, "cause", json_string("undecidable"));
	}
	struct ri_fence fence = { .holder = q.op_run };
	struct ri_append a = { .action_ref = action_ref, .act_key = q.in.act_key, .invocation_id = q.in.invocation_id,
		.actor_ref = q.in.actor_ref, .credential = q.in.credential, .data = payload, .fence = &fence,
		.fault_tag = "resolve.closing" };
	/* resolve 23: any invalid-request is read back, not only a
	 * retention-source one; no retry (retry-safe for the operator) */
	struct ri_settle w = { .k = q.k, .a = &a, .fence = &fence, .left = left, .read_back_refused = true };
	switch (write_settle(r, &w, err)) {
	case RI_SETTLE_NO_NOW:
		rc = w.rc;
		goto out;
	case RI_SETTLE_UNREAD:
		rc = ri_refuse_with(ans, ri_refusal_rf_st("resolution", w.st), err, RI_RF_RESOLUTION,
		    "recording-failure(resolution): the kind's bindings could not be read: %s; nothing"
		    " appended", r->st->ops->error(r->st)->msg);
		goto out;
	case RI_SETTLE_LANDED:
		*ans = json_pack("{s:s}", "closing_event_id", w.ev);
		/* resolve 24-25: read back, success with a hard alert, no retry */
		write_settle_alert(*ans, "resolution", &w);
		if (w.via == RI_VIA_REFUSED)
			/* resolve 23, Primitive policy 27, 40: the substrate's own
			 * invalid-request at the closing write (the payload cap, say)
			 * is read back like the outcome position's */
			ri_alert(*ans, "the resolution landed although the substrate refused it: %s", w.why);
		/* resolve 24, 26 (RI_VIA_LOST): its own record, by the event id
		 * it minted -- never another writer's closing of the invocation */
		rc = RI_OK;
		goto out;
	default:
		break;
	}
	switch (w.st) {
	case RI_ST_INVALID_CREDENTIAL:
		/* resolve 3 */
		rc = ri_refuse_with(ans, ri_refusal("invalid-credential"), err, RI_INVALID_CREDENTIAL,
		    "invalid-credential: %s; nothing appended", w.why);
		break;
	case RI_ST_STEP4:
	case RI_ST_INVALID_REQUEST:
		if (w.retention) {
			rc = ri_refuse_with(ans, ri_refusal_rf_st("resolution", 0), err, RI_RF_RESOLUTION,
			    "recording-failure(resolution): %s, and the read-back found nothing", w.why);
			break;
		}
		/* resolve 23, Primitive policy 40: found nothing, it lands
		 * recording-failure(resolution) with a hard alert -- never an
		 * invalid-request the operator could not tell from resolve 27's */
		rc = ri_refuse_with(ans, ri_refusal_rf_st("resolution", 0), err, RI_RF_RESOLUTION,
		    "recording-failure(resolution): the substrate refused the closing record (%s); nothing"
		    " appended", w.why);
		ri_alert(*ans, "the resolution could not be recorded: %s", w.why);
		break;
	case RI_ST_LOST:
		/* resolve 26: a lost reply whose read-back is empty */
		rc = ri_refuse_with(ans, ri_refusal_rf_st("resolution", w.st), err, RI_RF_RESOLUTION,
		    "recording-failure(resolution): the reply was lost and the read-back found nothing;"
		    " nothing appended -- retry-safe");
		break;
	default:
		rc = ri_refuse_with(ans, ri_refusal_rf_st("resolution", w.st), err, RI_RF_RESOLUTION,
		    "recording-failure(resolution): %s; nothing appended -- retry-safe", w.why);
		break;
	}
out:
	/* resolve 22 (and every refusal after the take): release */
	(void)r->st->ops->release(r->st, q.in.kind, q.in.act_key, q.op_run);
	json_decref(payload);
	if (have_inv)
		ri_inv_free(&inv);
	if (have_intent)
		ri_record_clear(&intent);
	return rc;
}
