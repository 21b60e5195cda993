/* close.c -- the Close, Refuse and Yield contracts: the invocation's own
 * writes after the bound commit, under the section Open took.  Nothing is
 * kept between Open and Close (close 2): every input comes in the request. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/bindings.h"
#include "util/fault.h"
#include "protocol/gate.h"
#include "util/nc.h"
#include "protocol/proto.h"
#include "protocol/settle.h"

struct inv_req {
	struct ri_req in;               /* the request */
	const struct ri_kind *k;
	char cred_buf[256];
};

static void
release(struct ri *r, const struct inv_req *q)
{
	(void)r->st->ops->release(r->st, q->in.kind, q->in.act_key, q->in.invocation_id);
}

static int
bind_kind(struct ri *r, struct inv_req *q, json_t **ans, json_t *refusal, int code, ri_err *err)
{
	if ((q->k = ri_config_kind(r->cfg, q->in.kind)) != NULL) {
		json_decref(refusal);
		return RI_OK;
	}
	return ri_refuse_with(ans, refusal, err, code, "kind \"%s\" is not bound in %s", q->in.kind,
	    r->cfg->path);
}

/* remaining((kind, act key), invocation id), as a gate: true when the
 * writer may issue a journal write (journal write bound 1). */
static bool
standing_to_write(struct ri *r, const struct inv_req *q, ri_ms *left)
{
	return r->st->ops->remaining(r->st, q->in.kind, q->in.act_key, q->in.invocation_id, left) == RI_ST_OK &&
	    *left != RI_NONE && r->cfg->journal_write_bound <= *left;
}

/* The re-read under the section: the invocation's records, its intent
 * checked against the request, and the closing that stands.  A re-read
 * is for what changed since the first read (a sweep that closed the act
 * meanwhile): never through the snapshot that first read (issue 43). */
static int
reread(struct ri *r, const struct inv_req *q, struct ri_inv *inv, struct ri_standing *sd,
    char *why, size_t n)
{
	/* negative control: the re-read through step 1's snapshot (on
	 * PostgreSQL, resolve.bats' late ri-close that finds the sweep's outcome) */
	if (r->st->ops->settle != NULL && !RI_NC(RI_NC_REREAD_IN_SNAPSHOT))
		r->st->ops->settle(r->st);
	if (r->st->ops->read_ahead != NULL) {
		/* issue 43: the re-read's page and the kind's bindings (the
		 * write's), in the fresh snapshot's first round trip */
		struct ri_query aq[3];
		size_t n_q = 0;
		ri_inv_query(q->in.invocation_id, &aq[n_q++]);
		n_q += ri_bindings_ahead(r, &aq[n_q]);
		r->st->ops->read_ahead(r->st, &(struct ri_ahead){ .q = aq, .nq = n_q });
	}
	int st = ri_inv_read(r, q->in.invocation_id, inv);

	if (st != RI_ST_OK) {
		snprintf(why, n, "%s", r->st->ops->error(r->st)->msg);
		return st;
	}
	if (inv->intent == NULL || strcmp(inv->intent->event_id, q->in.intent_event_id) != 0 ||
	    strcmp(inv->intent->kind, q->in.kind) != 0 || strcmp(inv->intent->act_key, q->in.act_key) != 0) {
		snprintf(why, n, "no intent %s of (%s, %s) names invocation %s", q->in.intent_event_id,
		    q->in.kind, q->in.act_key, q->in.invocation_id);
		ri_inv_free(inv);
		return RI_ST_NOT_KNOWN;
	}
	ri_standing(inv->closings, inv->n_closings, sd);
	if (sd->malformed != NULL) {
		/* the closings issue's ruling: fail closed on a void supersedes */
		snprintf(why, n, "journal integrity: closing %s names no earlier closing of invocation %s",
		    sd->malformed->rec->event_id, q->in.invocation_id);
		ri_inv_free(inv);
		return RI_ST_INTEGRITY;
	}
	return RI_ST_OK;
}

/*
 * close 1, Check 2: only the intent's actor closes or refuses it.  Before
 * anything touches the section: the intent the request names (by its
 * intent_event_id, which must be the intent of that invocation and act),
 * the caller's credential authenticated without appending, the caller the
 * intent's actor_ref.  Anything else is refused on the position's arm with
 * nothing written and the section untouched -- a made-up event id or
 * another actor's credential must not release the live holder's section.
 */
static int
authorise(struct ri *r, const struct inv_req *q, json_t **ans, json_t *refusal, int code,
    ri_err *err)
{
	const char *cause;
	char why[700];

	if (ri_caller_is_actor(r, q->in.kind, q->in.act_key, q->in.invocation_id, q->in.intent_event_id,
	    q->in.actor_ref, q->in.credential, &cause, why, sizeof why) == RI_ST_OK) {
		json_decref(refusal);
		return RI_OK;
	}
	json_object_set_new(refusal, "cause", json_string(cause));
	return ri_refuse_with(ans, refusal, err, code, "recording-failure(%s): %s; nothing written,"
	    " the section untouched", code == RI_RF_OUTCOME ? "outcome" : "refusal", why);
}

/* The cause a failure outside the protocol's own arms carries. */
static const char *
cause_of(int code)
{
	switch (code) {
	case RI_USAGE: return "usage";
	case RI_MALFORMED: return "malformed";
	case RI_CONFIG: return "config";
	case RI_INVALID_CREDENTIAL: return RI_CAUSE_CREDENTIAL;
	case RI_NOT_KNOWN: return RI_CAUSE_NOT_KNOWN;
	case RI_JOURNAL_UNAVAILABLE: return RI_CAUSE_UNAVAILABLE;
	case RI_INTEGRITY: return RI_CAUSE_INTEGRITY;
	default: return ri_code_name(code);
	}
}

/* Action wiring 1, Invariant 8: the caller has committed, so every answer
 * carries the position, whatever failed -- the request, the config, the
 * caller -- and a caller on position outcome never re-runs (Invariant 8.4). */
static int
position(int code, const char *pos, int pos_code, json_t *refusal, json_t **ans, ri_err *err)
{
	char msg[sizeof err->msg];

	snprintf(msg, sizeof msg, "%s", err->msg[0] ? err->msg : ri_code_name(code));
	json_object_set_new(refusal, "cause", json_string(cause_of(code)));
	json_decref(*ans);
	*ans = refusal;
	return ri_fail(err, pos_code, "recording-failure(%s), cause %s: %s -- %s", pos, cause_of(code), msg,
	    pos_code == RI_RF_OUTCOME ? "the act may exist; its record is the sweep's; never re-run" :
	    "the sweep records the attempt; never re-run");
}

int
ri_close_positioned(int code, json_t *req, json_t **ans, ri_err *err)
{
	(void)req;
	if (code == RI_OK || code == RI_RF_OUTCOME)
		return code;
	return position(code, "outcome", RI_RF_OUTCOME, ri_refusal_rf("outcome"), ans, err);
}

int
ri_refuse_positioned(int code, json_t *req, json_t **ans, ri_err *err)
{
	json_t *refusal, *cc = json_object_get(req, "constituent_code");

	if (code == RI_OK || code == RI_ALREADY_ACCOUNTED || code == RI_RF_REFUSAL)
		return code;
	refusal = ri_refusal_rf("refusal");
	/* the second slot tells the caller why, when the request carried it */
	if (json_is_string(cc) || json_is_integer(cc))
		json_object_set(refusal, "constituent_code", cc);
	return position(code, "refusal", RI_RF_REFUSAL, refusal, ans, err);
}

/* ---- Close ---- */

/*
 * close step 3 and its retries (Primitive policy 27-33, close steps
 * 3.1-3.8): only under the section, only after re-running step 2, never
 * past the gate, at most counted(n) attempts where declared.
 */
static int
close_write(struct ri *r, struct inv_req *q, json_t **ans, ri_err *err)
{
	json_t *payload = json_pack("{s:s, s:s, s:s, s:s, s:O}", "invocation_id", q->in.invocation_id,
	    "intent_event_id", q->in.intent_event_id, "kind", q->in.kind, "act_key", q->in.act_key,
	    "data", q->in.outcome_data);
	struct ri_fence fence = { .holder = q->in.invocation_id };
	struct ri_append a = { .action_ref = q->in.outcome_action_ref, .act_key = q->in.act_key,
		.invocation_id = q->in.invocation_id, .actor_ref = q->in.actor_ref, .credential = q->in.credential,
		.data = payload, .fence = &fence, .fault_tag = "close.outcome" };
	/* Primitive policy 29, 37: step-2, step-3 and a lost reply read back
	 * empty are retried under the section */
	struct ri_settle w = { .k = q->k, .a = &a, .fence = &fence, .retry = RI_RETRY_STEP23 | RI_RETRY_LOST };
	char why[600];
	int64_t attempts = 0, mono0 = ri_mono_ms();
	ri_ms left, left0 = RI_NONE;
	int st, rc;

	for (;;) {
		struct ri_inv inv;
		struct ri_standing sd;

		/* close step 1 (and before every retry: retry terminus 1-2);
		 * retries also spend the lease in real time, which bounds them
		 * where the seam clock is frozen (the env clock) */
		bool standing = standing_to_write(r, q, &left);
		if (left0 == RI_NONE)
			left0 = left;
		if (standing && attempts > 0 && left0 - (ri_mono_ms() - mono0) < r->cfg->journal_write_bound)
			standing = false;
		if (!standing) {
			/* close steps 1.2, 3.5, 3.7, act section 10: no standing, no write */
			release(r, q);
			rc = ri_refuse_with(ans, ri_refusal_rf("outcome"), err, RI_RF_OUTCOME,
			    "recording-failure(outcome): the lease is gone or shorter than journal_write_bound;"
			    " nothing written; the act's record is the sweep's -- never re-run");
			goto out;
		}
		if (attempts == 0)
			ri_fault("close.after_remaining");
		/* close step 2: re-read under the section, under every fence (2.5) */
		st = reread(r, q, &inv, &sd, why, sizeof why);
		if (st != RI_ST_OK) {
			/* close step 2.4: a failed re-read writes nothing */
			release(r, q);
			rc = ri_refuse_with(ans, ri_refusal_rf_st("outcome", st), err, RI_RF_OUTCOME,
			    "recording-failure(outcome): the re-read failed: %s", why);
			goto out;
		}
		if (!RI_NC(RI_NC_NO_CLOSE_REREAD) && sd.standing != NULL) {
			const struct ri_closing *c = sd.standing;
			if (c->type == RI_C_OUTCOME) {
				/* close step 2.2: adopt the outcome that stands.  landed_by
				 * (2.2d-e, the closings issue's reading): operator for
				 * resolved_by, sweep for recovery without it, invocation
				 * for a record of the invocation's own shape */
				*ans = json_pack("{s:s, s:s}", "outcome_event_id", c->rec->event_id, "landed_by",
				    c->resolved_by ? "operator" : c->recovery ? "sweep" : "invocation");
				ri_inv_free(&inv);
				release(r, q);
				rc = RI_OK;
				goto out;
			}
			/* close step 2.3: never adopt an abandonment or escalation */
			char ev2[RI_ID_LEN + 1];
			const char *as = c->type == RI_C_REFUSED ? "refused" :
			    c->type == RI_C_ABANDONED ? "abandoned" : "escalated";
			snprintf(ev2, sizeof ev2, "%s", c->rec->event_id);
			ri_inv_free(&inv);
			release(r, q);
			rc = ri_refuse_with(ans, ri_refusal_rf("outcome"), err, RI_RF_OUTCOME,
			    "recording-failure(outcome): %s already closed this invocation as %s; the correction"
			    " is an operator's (ri-resolve)", ev2, as);
			goto out;
		}
		ri_inv_free(&inv);
		ri_fault("close.after_reread");
		attempts++;
		w.left = left;
		enum ri_settled settled = write_settle(r, &w, err);
		if (settled == RI_SETTLE_NO_NOW) {
			release(r, q);
			rc = w.rc;
			goto out;
		}
		if (settled == RI_SETTLE_UNREAD) {
			release(r, q);
			rc = ri_refuse_with(ans, ri_refusal_rf_st("outcome", w.st), err, RI_RF_OUTCOME,
			    "recording-failure(outcome): the kind's bindings could not be read: %s; nothing written;"
			    " the act's record is the sweep's -- never re-run", r->st->ops->error(r->st)->msg);
			goto out;
		}
		snprintf(why, sizeof why, "%s", w.why);
		if (settled == RI_SETTLE_LANDED) {
			/* close step 4, close step 4.3: landed by the invocation;
			 * Primitive policy 28: read back after step-4 or a
			 * retention-source invalid-request, success with a hard
			 * alert; 36: read back after a lost reply, adopted */
			*ans = json_pack("{s:s, s:s}", "outcome_event_id", w.ev, "landed_by", "invocation");
			write_settle_alert(*ans, "outcome", &w);
			release(r, q);
			rc = RI_OK;
			goto out;
		}
		if (settled == RI_SETTLE_NOT_LANDED) {
			release(r, q);
			if (w.st == RI_ST_INVALID_CREDENTIAL) {
				/* close step 3.8, Primitive policy 31 */
				rc = ri_refuse_with(ans, ri_refusal_rf("outcome"), err, RI_RF_OUTCOME,
				    "recording-failure(outcome): invalid-credential: %s", why);
			} else if (w.st == RI_ST_STEP4 || w.st == RI_ST_INVALID_REQUEST) {
				/* close step 3.3, Primitive policy 40: escalated as outcome-unrecordable */
				rc = ri_refuse_with(ans, ri_refusal_rf("outcome"), err, RI_RF_OUTCOME,
				    "recording-failure(outcome): %s", why);
				ri_alert(*ans, "the outcome could not be recorded (%s); the sweep escalates it", why);
			} else {
				/* journal fence 3: fenced out; an integrity failure */
				rc = ri_refuse_with(ans, ri_refusal_rf_st("outcome", w.st), err, RI_RF_OUTCOME,
				    "recording-failure(outcome): %s", why);
			}
			goto out;
		}
		/* RI_SETTLE_RETRY: Primitive policy 29 (step-2, step-3), 37 (a
		 * lost reply read back empty) */
		/* close step 3.6: counted(n) bounds the attempts */
		if (q->k->retry_counted > 0 && attempts >= q->k->retry_counted) {
			release(r, q);
			rc = ri_refuse_with(ans, ri_refusal_rf("outcome"), err, RI_RF_OUTCOME,
			    "recording-failure(outcome): %lld attempts failed (%s)", (long long)attempts, why);
			goto out;
		}
		if (r->st->ops->settle != NULL)
			r->st->ops->settle(r->st);      /* the retry reads past the nap (issue 43) */
		ri_sleep_ms(attempts < 8 ? 5 * attempts : 50);
	}
out:
	json_decref(payload);
	json_decref(a.bound);
	return rc;
}

static int
close_call(ri *r, json_t *req, json_t **ans, ri_err *err)
{
	struct inv_req q = { 0 };
	int rc;

	*ans = NULL;
	if ((rc = ri_req_parse(req, ri_close_fields, &q.in, err)) != RI_OK ||
	    (rc = ri_no_journal(r, "outcome", NULL, ans, err)) != RI_OK)
		return rc;
	if ((rc = bind_kind(r, &q, ans, ri_refusal_rf("outcome"), RI_RF_OUTCOME, err)) != RI_OK)
		return rc;
	if ((rc = ri_caller_credential(r->cfg, q.in.credential, q.cred_buf, sizeof q.cred_buf, &q.in.credential,
	    err)) != RI_OK)
		return rc;
	if (q.in.credential == NULL)
		q.in.credential = "";      /* refused as invalid-credential below */
	/* issue 43: the reads authorise and the write's gate make -- the
	 * intent, the caller's registry row, the lease row -- announced, to
	 * go in one round trip */
	if (r->st->ops->read_ahead != NULL)
		r->st->ops->read_ahead(r->st, &(struct ri_ahead){ .event_id = q.in.intent_event_id,
		    .actor_ref = q.in.actor_ref, .lease_kind = q.in.kind, .lease_act_key = q.in.act_key });
	/* close 1, Check 2: the intent's actor, before the section is touched */
	if ((rc = authorise(r, &q, ans, ri_refusal_rf("outcome"), RI_RF_OUTCOME, err)) != RI_OK)
		return rc;
	if (!ri_is_outcome_ref(q.k, q.in.outcome_action_ref)) {
		/* not in the kind's vocabulary: a non-retention invalid-request,
		 * which lands recording-failure(outcome) (close step 3.3) */
		release(r, &q);
		rc = ri_refuse_with(ans, ri_refusal_rf("outcome"), err, RI_RF_OUTCOME,
		    "recording-failure(outcome): \"%s\" is not an outcome of kind %s", q.in.outcome_action_ref,
		    q.in.kind);
		ri_alert(*ans, "outcome ref %s is outside the vocabulary; the sweep escalates the act",
		    q.in.outcome_action_ref);
		return rc;
	}
	return close_write(r, &q, ans, err);
}

int
ri_close(ri *r, json_t *req, json_t **ans, ri_err *err)
{
	return ri_close_positioned(close_call(r, req, ans, err), req, ans, err);
}

/* ---- Refuse ---- */

static json_t *
rf_refusal(const struct inv_req *q, int st)
{
	return ri_cause_integrity(json_pack("{s:s, s:s, s:O}", "refused", "recording-failure", "position",
	    "refusal", "constituent_code", q->in.constituent_code), st == RI_ST_INTEGRITY);
}

static int
refuse_call(ri *r, json_t *req, json_t **ans, ri_err *err)
{
	struct inv_req q = { 0 };
	struct ri_inv inv;
	struct ri_standing sd;
	char why[600], ref[160];
	ri_ms left;
	int rc, st;

	*ans = NULL;
	if ((rc = ri_req_parse(req, ri_refuse_fields, &q.in, err)) != RI_OK ||
	    (rc = ri_no_journal(r, "refusal", q.in.constituent_code, ans, err)) != RI_OK)
		return rc;
	if ((rc = bind_kind(r, &q, ans, rf_refusal(&q, 0), RI_RF_REFUSAL, err)) != RI_OK)
		return rc;
	if ((rc = ri_caller_credential(r->cfg, q.in.credential, q.cred_buf, sizeof q.cred_buf, &q.in.credential,
	    err)) != RI_OK)
		return rc;
	if (q.in.credential == NULL)
		q.in.credential = "";
	/* refuse step 1: standing before any read (refuse steps 1.1-1.4;
	 * refuse steps 1.2a-1.2b: no lease, nothing written; refuse step 0.2:
	 * a pair no Open returned holds no lease either) */
	if (!standing_to_write(r, &q, &left))
		return ri_refuse_with(ans, rf_refusal(&q, 0), err, RI_RF_REFUSAL,
		    "recording-failure(refusal): the lease is gone or shorter than journal_write_bound;"
		    " nothing written; the sweep records the attempt -- never re-run");
	/* close 1, Check 2: the intent's actor, before the section is touched
	 * (remaining is a query, not a touch) */
	if ((rc = authorise(r, &q, ans, rf_refusal(&q, 0), RI_RF_REFUSAL, err)) != RI_OK)
		return rc;
	/* refuse step 2: re-read under the section */
	st = reread(r, &q, &inv, &sd, why, sizeof why);
	if (st != RI_ST_OK) {
		release(r, &q);
		return ri_refuse_with(ans, rf_refusal(&q, st), err, RI_RF_REFUSAL,
		    "recording-failure(refusal): the re-read failed: %s", why);
	}
	if (sd.standing != NULL) {
		/* refuse steps 2.2-2.4: already-accounted, nothing appended */
		json_t *j = json_pack("{s:s, s:s}", "refused", "already-accounted", "closing_event_id",
		    sd.standing->rec->event_id);
		ri_inv_free(&inv);
		release(r, &q);
		return ri_refuse_with(ans, j, err, RI_ALREADY_ACCOUNTED,
		    "already-accounted: %s already closed this invocation", json_string_value(
		    json_object_get(j, "closing_event_id")));
	}
	ri_inv_free(&inv);
	ri_fault("refuse.after_reread");
	/* refuse step 3.1 */
	json_t *payload = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O}", "invocation_id", q.in.invocation_id,
	    "intent_event_id", q.in.intent_event_id, "kind", q.in.kind, "act_key", q.in.act_key,
	    "reason", q.in.reason, "constituent_code", q.in.constituent_code);
	struct ri_fence fence = { .holder = q.in.invocation_id };
	struct ri_append a = { .action_ref = ri_action_ref(q.k, "refused", ref, sizeof ref),
		.act_key = q.in.act_key, .invocation_id = q.in.invocation_id, .actor_ref = q.in.actor_ref,
		.credential = q.in.credential, .data = payload, .fence = &fence, .fault_tag = "refuse.refusal" };
	/* refuse steps 3.3-3.6: read back, never retry */
	struct ri_settle w = { .k = q.k, .a = &a, .fence = &fence, .left = left };
	enum ri_settled settled = write_settle(r, &w, err);
	json_decref(payload);
	if (settled == RI_SETTLE_NO_NOW) {
		release(r, &q);
		return w.rc;
	}
	if (settled == RI_SETTLE_UNREAD) {
		release(r, &q);
		return ri_refuse_with(ans, rf_refusal(&q, w.st), err, RI_RF_REFUSAL,
		    "recording-failure(refusal): the kind's bindings could not be read: %s",
		    r->st->ops->error(r->st)->msg);
	}
	release(r, &q);
	if (settled == RI_SETTLE_LANDED) {
		/* refuse step 3.9: the store took the invocation out of the open
		 * intents in the refusal's own transaction; refuse step 3.10;
		 * refuse steps 3.3-3.4: read back after step-4 or a
		 * retention-source invalid-request, with a hard alert; refuse
		 * step 3.6: one read-back after a lost reply, after the bound */
		*ans = json_pack("{s:s}", "refusal_event_id", w.ev);
		write_settle_alert(*ans, "refusal", &w);
		return RI_OK;
	}
	/* refuse steps 3.5, 3.7, 3.8; journal fence 3 */
	return ri_refuse_with(ans, rf_refusal(&q, w.st), err, RI_RF_REFUSAL,
	    "recording-failure(refusal): %s; the intent stays open and the sweep records the attempt"
	    " -- never re-run", w.why);
}

int
ri_refuse(ri *r, json_t *req, json_t **ans, ri_err *err)
{
	return ri_refuse_positioned(refuse_call(r, req, ans, err), req, ans, err);
}

/* ---- Yield ---- */

/*
 * yield 1-4: release without writing; the intent stays open for the sweep.
 * Only the intent's actor may yield (close 1, Check 2): the caller names
 * itself and authenticates like every writer, or nothing is released
 * (invalid-credential, 10) -- a bare (kind, act key, invocation id) must
 * not free a running invocation's section.
 */
int
ri_yield(ri *r, json_t *req, json_t **ans, ri_err *err)
{
	struct inv_req q = { 0 };
	const char *cause;
	char why[700];
	int rc, st;

	*ans = NULL;
	if ((rc = ri_req_parse(req, ri_yield_fields, &q.in, err)) != RI_OK)
		return rc;
	if ((rc = ri_caller_credential(r->cfg, q.in.credential, q.cred_buf, sizeof q.cred_buf, &q.in.credential,
	    err)) != RI_OK)
		return rc;
	if (q.in.actor_ref == NULL || q.in.credential == NULL)
		return ri_refuse_with(ans, ri_refusal("invalid-credential"), err, RI_INVALID_CREDENTIAL,
		    "invalid-credential: ri-yield needs the intent's actor_ref and its credential (request,"
		    " $RI_CREDENTIAL or $RI_CREDENTIAL_FILE); nothing released");
	if (r->st == NULL)
		return ri_no_journal(r, "yield", NULL, ans, err);
	st = ri_caller_is_actor(r, q.in.kind, q.in.act_key, q.in.invocation_id, q.in.intent_event_id, q.in.actor_ref,
	    q.in.credential, &cause, why, sizeof why);
	if (st == RI_ST_UNAVAILABLE || st == RI_ST_INTEGRITY) {
		/* who the caller is cannot be decided: nothing is released, and
		 * the section frees at its lease's end, as with no journal */
		*ans = json_pack("{s:b}", "ok", 1);
		ri_alert(*ans, "nothing released: %s; the section frees at its lease's end", why);
		return RI_OK;
	}
	if (st != RI_ST_OK)
		return ri_refuse_with(ans, ri_refusal("invalid-credential"), err, RI_INVALID_CREDENTIAL,
		    "invalid-credential (%s): %s; nothing released", cause, why);
	st = r->st->ops->release(r->st, q.in.kind, q.in.act_key, q.in.invocation_id);
	*ans = json_pack("{s:b}", "ok", 1);
	if (st != RI_ST_OK && st != RI_ST_NOT_HELD)
		ri_alert(*ans, "the release did not land (%s); the section frees at its lease's end",
		    r->st->ops->error(r->st)->msg);
	return RI_OK;
}

/* ri-run's own Yield (commit 8c): the process that Open answered releases
 * the grant it holds -- it proved who it is at the intent's write. */
void
ri_yield_held(ri *r, const char *kind, const char *act_key, const char *invocation_id)
{
	if (r->st != NULL)
		(void)r->st->ops->release(r->st, kind, act_key, invocation_id);
}
