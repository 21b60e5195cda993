/* open.c -- the Open contract (open steps 1.1-5.3): take the act's
 * critical section, size the records, refuse an act in flight or landed,
 * write the intent under the caller's credential, return holding the
 * section. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/bindings.h"
#include "util/fault.h"
#include "protocol/gate.h"
#include "store/findings.h"
#include "util/nc.h"
#include "protocol/proto.h"
#include "protocol/settle.h"
#include "protocol/restore.h"

struct open_req {
	struct ri_req in;               /* the request */
	const struct ri_kind *k;
	char inv[RI_ID_LEN + 1];
	char cred_buf[256];
};

static void
release(struct ri *r, struct open_req *o)
{
	/* act section 6: the not-held arm is discarded */
	(void)r->st->ops->release(r->st, o->in.kind, o->in.act_key, o->inv);
}

/*
 * Primitive policy 12-13, Invariant 6: the intent record, and the kind's
 * largest record -- an outcome carrying outcome_envelope bytes of data
 * with every field a writer may add (recovery, acting actor ref,
 * resolved_by, supersedes), or an escalation naming intent_candidates_cap
 * candidates of reference_length_cap each -- each as the substrate
 * measures a payload, with the longest actor ref that may write it.
 *
 * The largest records are measured with their placeholder strings empty,
 * and each placeholder's length then added: a string of n 'x' serializes
 * to n + 2 bytes and "" to 2, wherever it stands, so the sum is exactly
 * the size of the record built with the placeholders -- without
 * serializing some 8 KiB of 'x' at every Open (issue 15).
 */
static bool
fits(struct ri *r, struct open_req *o, json_t *intent_payload, char *why, size_t n)
{
	const struct ri_config *c = r->cfg;
	const struct ri_kind *k = o->k;
	char ref[160];
	size_t actor_len = (size_t)c->reference_length_cap;
	size_t data_len = k->outcome_envelope > 8 ? (size_t)k->outcome_envelope - 8 : 1;
	size_t cands_len = (size_t)c->intent_candidates_cap * (size_t)c->reference_length_cap;
	json_t *common = json_pack("{s:s, s:s, s:s, s:s, s:b, s:s, s:s, s:s}",
	    "invocation_id", o->inv, "intent_event_id", "evt_00000000000000000000000000000000",
	    "kind", k->name, "act_key", o->in.act_key, "recovery", 1, "acting_actor_ref", "",
	    "resolved_by", "", "supersedes", "evt_00000000000000000000000000000000");
	json_t *outcome = json_deep_copy(common), *esc = json_deep_copy(common), *cands = json_array();
	size_t intent_sz, outcome_sz = 0, esc_sz;
	bool ok;

	intent_sz = ri_envelope_size(ri_action_ref(k, "intended", ref, sizeof ref), o->in.actor_ref,
	    intent_payload);
	/* the envelope's actor_ref, acting_actor_ref and resolved_by: the
	 * longest actor ref each */
	json_object_set_new(outcome, "data", json_pack("{s:s}", "x", ""));
	for (size_t i = 0; i < k->n_outcomes; i++) {
		size_t sz = ri_envelope_size(ri_action_ref(k, k->outcomes[i], ref, sizeof ref), "", outcome) +
		    3 * actor_len + data_len;
		if (sz > outcome_sz)
			outcome_sz = sz;
	}
	for (int64_t i = 0; i < c->intent_candidates_cap; i++)
		json_array_append_new(cands, json_string(""));
	json_object_set_new(esc, "store_candidates", cands);
	json_object_set_new(esc, "cause", json_string("outcome-unrecordable"));
	esc_sz = ri_envelope_size(ri_action_ref(k, "escalated", ref, sizeof ref), "", esc) + 3 * actor_len +
	    cands_len;
	ok = (int64_t)intent_sz <= c->payload_cap && (int64_t)outcome_sz <= c->payload_cap &&
	    (int64_t)esc_sz <= c->payload_cap;
	if ((int64_t)intent_sz > c->payload_cap)
		snprintf(why, n, "the intent record would be %zu bytes; payload_cap is %lld",
		    intent_sz, (long long)c->payload_cap);
	else if (!ok)
		snprintf(why, n, "the kind's largest record (outcome %zu, escalation %zu bytes) would "
		    "exceed payload_cap %lld", outcome_sz, esc_sz, (long long)c->payload_cap); /* Invariant 6 */
	json_decref(common);
	json_decref(outcome);
	json_decref(esc);
	return ok;
}

/* open step 3.8c: a report-only deployment surfaces the old intent. */
static void
surface_aged(struct ri *r, struct open_req *o, const char *old_inv, ri_ms now, json_t *ans)
{
	struct ri_findings *f;
	ri_err e;
	char by[64];

	snprintf(by, sizeof by, "open:%s", o->inv);
	if (ri_findings_open(ri_findings_location(r->cfg), false, &f, &e) == RI_OK) {
		json_t *detail = json_pack("{s:s, s:s}", "rule", "open step 3.8c", "next_invocation_id", o->inv);
		if (ri_findings_act(f, RI_F_CLOSURE_AT_RISK, o->in.kind, o->in.act_key, old_inv, by, now,
		    detail, &e) != RI_OK)
			ri_alert(ans, "could not surface aged intent %s: %s", old_inv, e.msg);
		json_decref(detail);
		ri_findings_close(f);
	} else {
		ri_alert(ans, "could not surface aged intent %s: %s", old_inv, e.msg);
	}
	ri_diag("aged intent %s left open for an operator", old_inv);      /* open step 3.8 */
}

/*
 * Replay mismatch (the durable receipt store's rule, INTERFACE amendment):
 * does the standing intent's data differ from this caller's, the pairing
 * datum aside?  Then the caller learns it is not replaying the same act.
 */
static bool
replay_mismatch(const struct ri_record *intent, json_t *caller)
{
	json_t *had = intent->payload ? json_object_get(intent->payload, "data") : NULL;
	json_t *a, *b;
	bool differ;

	if (!json_is_object(had))
		return false;           /* purged: nothing to compare */
	a = json_deep_copy(had);
	b = json_deep_copy(caller);
	json_object_del(a, "pairing_datum");
	json_object_del(b, "pairing_datum");
	differ = !json_equal(a, b);
	json_decref(a);
	json_decref(b);
	return differ;
}

/*
 * One invocation of the act, as step 3 judges it: an open one (an intent no
 * closing names yet; sequence high water 5, the retention drop: not one
 * whose retention ended -- open invocations 7) refuses the Open or,
 * report-only, is surfaced.
 * RI_OK to go on, or the refusal (the section released).
 */
static int
judge(struct ri *r, struct open_req *o, const char *inv_id, const struct ri_inv *inv, ri_ms now,
    json_t **ans, json_t *aged, ri_err *err)
{
	if (inv->intent == NULL || inv->n_closings > 0 || strcmp(inv_id, o->inv) == 0 ||
	    !ri_intent_retained(r->cfg, inv->intent, now))
		return RI_OK;
	/* Primitive policy 15, 38: the one comparison, against the range
	 * read's recorded_at -- and the completion bound the intent was
	 * written under (bindings are history, issue 41) */
	const struct ri_kind *bk = NULL;
	if (ri_bindings_at(r, o->in.kind, inv->intent->seq, &bk) != RI_ST_OK || bk == NULL)
		bk = o->k;
	bool in_flight = ri_in_flight(r->cfg, bk, inv->intent->recorded_at, now);
	if (in_flight || o->k->service_actor != NULL) {
		/* open steps 3.4-3.7: with a service identity, never a second
		 * open intent on the act (open invocations 1) */
		release(r, o);
		return ri_refuse_with(ans, json_pack("{s:s, s:s, s:b}", "refused", "act-in-flight",
		    "invocation_id", inv_id, "replay_mismatch", replay_mismatch(inv->intent,
		    o->in.intent_data)), err, RI_ACT_IN_FLIGHT,
		    "act-in-flight: invocation %s of this act is %s", inv_id,
		    in_flight ? "live" : "awaiting the sweep");
	}
	/* open step 3.8: report-only -- proceed, leave it open, surface it */
	json_array_append_new(aged, json_string(inv_id));
	return RI_OK;
}

/* open step 3.13: release; journal-unavailable with nothing written */
static int
unavailable(struct ri *r, struct open_req *o, int st, json_t **ans, ri_err *err)
{
	release(r, o);
	return ri_refuse_with(ans, ri_refusal_unavailable(st == RI_ST_INTEGRITY), err, RI_JOURNAL_UNAVAILABLE,
	    "journal-unavailable: %s", r->st->ops->error(r->st)->msg);
}

static int
malformed(struct ri *r, struct open_req *o, const char *event_id, const char *why, json_t **ans, ri_err *err)
{
	/* a record of illegal shape in what step 3 decides from: fail closed,
	 * as a reader does */
	release(r, o);
	return ri_refuse_with(ans, ri_refusal_unavailable(true), err, RI_JOURNAL_UNAVAILABLE,
	    "journal integrity: record %s is malformed: %s", event_id, why);
}

/* precheck_repeatable's page of the act's records, newest first */
static void
repeatable_query(const struct open_req *o, struct ri_query *q)
{
	*q = (struct ri_query){ .from = 0, .limit = 64, .kind = o->in.kind, .act_key = o->in.act_key,
		.descending = true };
}

/*
 * open step 3 for a repeatable act (repeatable 1: no 3.9 landed check), in
 * O(the act's records since the newest seal + open intents), never the
 * act's whole history (a key used every night for years, issue 15):
 *
 *  - open step 3.1, the sequence high water: the newest seal.  A seal is
 *    appended only after every record since the previous one verified
 *    (INTEGRITY.md 5), and its seq is bound under the journal head's MAC;
 *    every ri-sweep run seals.  Each record of the act above it is read
 *    and verified here (chain link, MAC, digest, the act's authenticated
 *    head) and its shape checked, so a record tampered since the seal
 *    still fails the Open closed (3.13) before anything is written; below
 *    it, ri-audit re-verifies everything;
 *  - open step 3.2: the act's open invocations come from the journal's
 *    authenticated index of open intents, checked whole against the count
 *    and accumulator the journal head MACs (a deleted, added or altered row
 *    is an integrity failure) and moved in each append's own transaction --
 *    an intent enters it as it lands and leaves it with its invocation's
 *    first closing or its purge -- so every other invocation of the act,
 *    above or below the high water, is closed, and steps 3.4-3.8 never
 *    decide from a closed one;
 *  - open step 3.3: each invocation the index names is re-read under the
 *    section (verified records, not the index, decide), its records'
 *    shapes checked as ri_act_read checks an act's.
 */
static int
precheck_repeatable(struct ri *r, struct open_req *o, ri_ms now, json_t **ans, json_t *aged, ri_err *err)
{
	struct ri_open_intent *oi = NULL;
	struct ri_query q;
	unsigned char sh[32];
	int64_t sealed = 0;
	size_t n = 0;
	int rc = RI_OK, st;
	char why[256];

	repeatable_query(o, &q);
	if ((st = r->st->ops->sealed(r->st, &sealed, sh)) != RI_ST_OK)
		return unavailable(r, o, st, ans, err);
	for (;;) {
		struct ri_records page;
		bool below = false;
		if ((st = r->st->ops->range_read(r->st, &q, &page)) != RI_ST_OK)
			return unavailable(r, o, st, ans, err);
		for (size_t i = 0; i < page.n && rc == RI_OK && !below; i++) {
			if (page.v[i].seq <= sealed)
				below = true;
			else if (!ri_record_legal(&page.v[i], why, sizeof why))
				rc = malformed(r, o, page.v[i].event_id, why, ans, err);
		}
		bool more = page.more;
		q.from = page.next;
		ri_records_clear(&page);
		if (rc != RI_OK)
			return rc;
		if (below || !more)
			break;
		q.limit = q.limit < 256 ? q.limit * 2 : 512;
	}
	if ((st = r->st->ops->open_intents(r->st, o->in.kind, o->in.act_key, RI_NONE, &oi, &n)) != RI_ST_OK)
		return unavailable(r, o, st, ans, err);
	for (size_t i = 0; i < n && rc == RI_OK; i++) {
		struct ri_inv inv;
		if ((st = ri_inv_read(r, oi[i].invocation_id, &inv)) != RI_ST_OK) {
			rc = unavailable(r, o, st, ans, err);
			break;
		}
		for (size_t j = 0; j < inv.all.n && rc == RI_OK; j++)
			if (!ri_record_legal(&inv.all.v[j], why, sizeof why))
				rc = malformed(r, o, inv.all.v[j].event_id, why, ans, err);
		if (rc == RI_OK && (inv.intent == NULL || inv.intent->seq != oi[i].seq ||
		    strcmp(inv.intent->kind, o->in.kind) != 0 || strcmp(inv.intent->act_key, o->in.act_key) != 0)) {
			/* the index names an intent its invocation's records do not
			 * hold: the derived state is not the journal's */
			release(r, o);
			rc = ri_refuse_with(ans, ri_refusal_unavailable(true), err, RI_JOURNAL_UNAVAILABLE,
			    "journal integrity: the open-intents index names intent seq %lld of invocation %s,"
			    " which its records do not hold (after investigating, ri-sweep --rebuild)",
			    (long long)oi[i].seq, oi[i].invocation_id);
		}
		if (rc == RI_OK)
			rc = judge(r, o, oi[i].invocation_id, &inv, now, ans, aged, err);
		ri_inv_free(&inv);
	}
	ri_open_intents_free(oi, n);
	return rc;
}

/*
 * open step 3: re-read the journal for the act under the section, each
 * record verified, so a tampered or missing record fails closed (3.13) and
 * no local map decides (3.3).  A non-repeatable act reads every record of
 * the act (3.9a: its latest outcome; such an act's history ends at its
 * first outcome); a repeatable one reads its open invocations
 * (precheck_repeatable).  Each invocation's standing comes from the one
 * module that reads Which closing stands.  Answers RI_OK to proceed, or a
 * refusal.
 */
static int
precheck(struct ri *r, struct open_req *o, ri_ms now, json_t **ans, json_t *aged, ri_err *err)
{
	struct ri_act act;
	const struct ri_closing *landed = NULL;
	const struct ri_act_inv *landed_by = NULL;
	int rc = RI_OK, st;
	char *held = NULL;

	/* issue 39: an act a restore lost is held back until its store has
	 * been asked again (the sweep) or an operator has resolved it --
	 * whatever the journal now says of it, and whatever the binding (open
	 * step 3.8 does not proceed past it) */
	if ((st = ri_restore_held(r, o->in.kind, o->in.act_key, &held)) != RI_ST_OK)
		return unavailable(r, o, st, ans, err);
	if (held != NULL) {
		release(r, o);
		rc = ri_refuse_with(ans, json_pack("{s:s, s:s, s:s}", "refused", "act-in-flight", "invocation_id", held,
		    "cause", "restore"), err, RI_ACT_IN_FLIGHT, "act-in-flight: the act was lost by a restore and is"
		    " unreconciled (invocation %s): the sweep asks its store, or an operator resolves it"
		    " (ri(7): restoring a journal)", held);
		free(held);
		return rc;
	}
	if (o->k->repeatable)
		return precheck_repeatable(r, o, now, ans, aged, err);
	if ((st = ri_act_read(r, o->in.kind, o->in.act_key, NULL, 0, &act)) != RI_ST_OK)
		return unavailable(r, o, st, ans, err);
	if (act.bad != NULL) {
		rc = malformed(r, o, act.bad->event_id, act.why, ans, err);
		ri_act_free(&act);
		return rc;
	}
	for (size_t i = 0; i < act.n && rc == RI_OK; i++) {
		const struct ri_act_inv *e = &act.v[i];
		/* open step 3.9a: the act's latest outcome, by the stored role --
		 * the reading ri-read's state uses (journal 4) */
		if (e->sd.outcome != NULL && (landed == NULL || e->sd.outcome->rec->seq > landed->rec->seq)) {
			landed = e->sd.outcome;
			landed_by = e;
		}
		rc = judge(r, o, e->inv_id, &e->inv, now, ans, aged, err);
	}
	if (rc == RI_OK && landed != NULL) {
		/* open step 3.9 (repeatable 1: only for repeatable = no; a
		 * repeatable act returned above, from precheck_repeatable) */
		release(r, o);
		bool mismatch = landed_by->inv.intent != NULL && replay_mismatch(landed_by->inv.intent,
		    o->in.intent_data);
		rc = ri_refuse_with(ans, json_pack("{s:s, s:s, s:b}", "refused", "act-landed",
		    "outcome_event_id", landed->rec->event_id, "replay_mismatch", mismatch), err, RI_ACT_LANDED,
		    "act-landed: the non-repeatable act already has outcome %s", landed->rec->event_id);
	}
	ri_act_free(&act);
	return rc;
}

/*
 * The reads the precheck and the intent's write make under the section,
 * announced to the store (store.h read_ahead; issue 43, the round-trip
 * diet): the marker scope (ri_restore_held), the act's first page
 * (precheck, precheck_repeatable, with the open intents; the newest
 * seal's hash comes with the head), the lease row (write_intent's gate),
 * the kind's bindings (write_settle).  The reads are made, and verified,
 * exactly as without it.
 */
static void
announce(struct ri *r, const struct open_req *o)
{
	struct ri_query q[4];
	char key[600];
	size_t n = 0;

	if (r->st->ops->read_ahead == NULL)
		return;
	ri_restore_held_query(o->in.kind, o->in.act_key, key, sizeof key, &q[n++]);
	if (o->k->repeatable)
		repeatable_query(o, &q[n++]);
	else
		ri_act_query(o->in.kind, o->in.act_key, NULL, 0, &q[n++]);
	n += ri_bindings_ahead(r, &q[n]);
	struct ri_ahead ah = { .q = q, .nq = n, .lease_kind = o->in.kind, .lease_act_key = o->in.act_key,
		.open_intents = o->k->repeatable };
	r->st->ops->read_ahead(r->st, &ah);
}

/* The intent position's arms (Primitive policy 19-26, 32-38). */
static int
write_intent(struct ri *r, struct open_req *o, json_t *payload, char ev[RI_ID_LEN + 1],
    json_t *alerts_out, json_t **ans, ri_err *err)
{
	char ref[160];
	struct ri_fence fence = { .holder = o->inv };
	struct ri_append a = { .action_ref = ri_action_ref(o->k, "intended", ref, sizeof ref),
		.act_key = o->in.act_key, .invocation_id = o->inv, .actor_ref = o->in.actor_ref,
		.credential = o->in.credential, .data = payload, .fence = &fence, .fault_tag = "open.intent" };
	/* Primitive policy 20: read back before any invalid-request; 23: no
	 * retry of step-2 or step-3 at the intent */
	struct ri_settle w = { .k = o->k, .a = &a, .fence = &fence, .read_back_refused = true };

	/* open step 4.1-4.2, journal write bound 1: the gate */
	if (r->st->ops->remaining(r->st, o->in.kind, o->in.act_key, o->inv, &w.left) != RI_ST_OK ||
	    w.left == RI_NONE || r->cfg->journal_write_bound > w.left) {
		release(r, o);
		return ri_refuse_with(ans, ri_refusal("section-unavailable"), err, RI_SECTION_UNAVAILABLE,
		    "section-unavailable: less than journal_write_bound of the lease is left"); /* open step 4.2 */
	}
	switch (write_settle(r, &w, err)) {
	case RI_SETTLE_NO_NOW:
		release(r, o);
		return w.rc;
	case RI_SETTLE_UNREAD:
		release(r, o);
		return ri_refuse_with(ans, ri_refusal_rf_st("intent", w.st), err, RI_RF_INTENT,
		    "recording-failure(intent): the kind's bindings could not be read: %s",
		    r->st->ops->error(r->st)->msg);
	case RI_SETTLE_LANDED:
		snprintf(ev, RI_ID_LEN + 1, "%s", w.ev);
		/* Primitive policy 20-25, 36: read back and adopted, with a hard alert */
		if (w.via == RI_VIA_LOST)
			json_array_append_new(alerts_out, json_pack("{s:s}", "alert",
			    "the intent write's reply was lost; the intent was read back and adopted"));
		else if (w.via != RI_VIA_WRITE)
			json_array_append_new(alerts_out, json_pack("{s:s}", "alert", w.st == RI_ST_STEP4 ?
			    "the intent landed but its retention placement failed (recording-failure step-4)" :
			    "the intent landed with invalid-request (retention); read back by invocation id"));
		return RI_OK;
	default:
		break;
	}
	release(r, o);
	switch (w.st) {
	case RI_ST_INVALID_CREDENTIAL:
		/* Primitive policy 19, Invariant 1.2: passes through, nothing written */
		return ri_refuse_with(ans, ri_refusal("invalid-credential"), err, RI_INVALID_CREDENTIAL,
		    "invalid-credential: %s", w.why);
	case RI_ST_INVALID_REQUEST:
	case RI_ST_STEP4:
		/* Primitive policy 20-25: the read-back found nothing; never retry
		 * after step-4 (26) */
		if (w.st == RI_ST_STEP4)
			return ri_refuse_with(ans, ri_refusal_rf("intent"), err, RI_RF_INTENT,
			    "recording-failure(intent): step-4, and the read-back found nothing: %s", w.why);
		return ri_refuse_with(ans, json_pack("{s:s, s:s}", "refused", "invalid-request", "cause",
		    w.ap.cause[0] ? w.ap.cause : "malformed"), err, RI_INVALID_REQUEST, "invalid-request: %s", w.why);
	case RI_ST_LOST:
		/* Primitive policy 37: the read-back found nothing */
		return ri_refuse_with(ans, ri_refusal_rf("intent"), err, RI_RF_INTENT,
		    "recording-failure(intent): the reply was lost and the read-back found nothing");
	case RI_ST_INTEGRITY:
		return ri_refuse_with(ans, ri_refusal_unavailable(true), err, RI_JOURNAL_UNAVAILABLE, "%s", w.why);
	default:
		/* Primitive policy 23: step-2 and step-3; journal fence 3: a
		 * fenced-out write lands on the position's arm */
		return ri_refuse_with(ans, ri_refusal_rf("intent"), err, RI_RF_INTENT,
		    "recording-failure(intent): %s", w.why);
	}
}

int
ri_open(ri *r, json_t *req, json_t **ans, ri_err *err)
{
	struct open_req o = { 0 };
	struct ri_grant g;
	json_t *payload, *aged = json_array(), *alerts = json_array();
	char why[600], ev[RI_ID_LEN + 1];
	ri_ms now;
	int rc, st;

	*ans = NULL;
	if ((rc = ri_req_parse(req, ri_open_fields, &o.in, err)) != RI_OK ||
	    (rc = ri_no_journal(r, NULL, NULL, ans, err)) != RI_OK)
		goto out;
	/* no intent data is {} -- as ri-run has always read it */
	if (o.in.intent_data == NULL) {
		json_object_set_new(req, "intent_data", json_object());
		o.in.intent_data = json_object_get(req, "intent_data");
	}
	/* Binding 1: every act is read through its kind's binding; a kind the
	 * config does not bind opens nothing */
	if ((o.k = ri_config_kind(r->cfg, o.in.kind)) == NULL) {
		rc = ri_refuse_with(ans, json_pack("{s:s, s:s}", "refused", "invalid-request", "cause",
		    "unbound-kind"), err, RI_INVALID_REQUEST, "kind \"%s\" is not bound in %s", o.in.kind,
		    r->cfg->path);
		goto out;
	}
	if ((rc = ri_caller_credential(r->cfg, o.in.credential, o.cred_buf, sizeof o.cred_buf,
	    &o.in.credential, err)) != RI_OK)
		goto out;
	/* open step 1.1, Primitive policy 1, 7, 8: non-empty, under the cap,
	 * never inspected beyond that; step 1.5: nothing written */
	if (o.in.credential == NULL || *o.in.credential == '\0') {
		rc = ri_refuse_with(ans, json_pack("{s:s, s:s}", "refused", "invalid-request", "cause",
		    "malformed"), err, RI_INVALID_REQUEST, "no credential: set RI_CREDENTIAL_FILE (or"
		    " RI_CREDENTIAL), or give \"credential\" in the request");
		goto out;
	}
	if (!ri_ref_ok(r, o.in.act_key) || !ri_ref_ok(r, o.in.actor_ref)) {
		rc = ri_refuse_with(ans, json_pack("{s:s, s:s}", "refused", "invalid-request", "cause",
		    "malformed"), err, RI_INVALID_REQUEST,
		    "act_key and actor_ref must be non-empty and at most %lld bytes",
		    (long long)r->cfg->reference_length_cap);
		goto out;
	}
	/* open step 1.2: the service identity closes acts, never opens them */
	if (o.k->service_actor != NULL && strcmp(o.in.actor_ref, o.k->service_actor) == 0) {
		rc = ri_refuse_with(ans, json_pack("{s:s, s:s}", "refused", "invalid-request", "cause",
		    "service-identity"), err, RI_INVALID_REQUEST,
		    "%s is the kind's service identity, which may not open", o.in.actor_ref);
		goto out;
	}
	ri_mint_id("inv_", o.inv);
	/* the intent payload: intent data with invocation id, kind, act key */
	payload = json_pack("{s:s, s:s, s:s, s:O}", "invocation_id", o.inv, "kind", o.in.kind,
	    "act_key", o.in.act_key, "data", o.in.intent_data);
	/* open steps 1.3-1.4 */
	if (!fits(r, &o, payload, why, sizeof why)) {
		json_decref(payload);
		rc = ri_refuse_with(ans, json_pack("{s:s, s:s}", "refused", "invalid-request", "cause",
		    "payload-cap"), err, RI_INVALID_REQUEST, "invalid-request: %s", why);
		goto out;
	}
	/* the adopter's seam: read once (Primitive policy 15) */
	if ((rc = ri_seam_now(r, &now, err)) != RI_OK) {
		json_decref(payload);
		goto out;
	}
	/* open step 2: take((kind, act key), invocation id, completion bound) */
	st = r->st->ops->take(r->st, o.in.kind, o.in.act_key, o.inv, o.k->completion_bound, &g);
	if (st == RI_ST_INTEGRITY) {
		json_decref(payload);
		/* a journal head or lease row that fails verification is the
		 * journal's integrity failure, and act section 11: a lease row
		 * past the longest lease this config grants is surfaced, never
		 * waited on (INTERFACE 30: open -> 15) */
		rc = ri_refuse_with(ans, ri_refusal_unavailable(true), err, RI_JOURNAL_UNAVAILABLE, "%s",
		    r->st->ops->error(r->st)->msg);
		goto out;
	}
	if (st != RI_ST_OK) {
		json_decref(payload);
		/* act section 5: the host's unavailable arm is section-unavailable */
		rc = ri_refuse_with(ans, ri_refusal("section-unavailable"), err, RI_SECTION_UNAVAILABLE,
		    "section-unavailable: %s", r->st->ops->error(r->st)->msg);
		goto out;
	}
	ri_fault("open.after_take");
	announce(r, &o);
	if ((rc = precheck(r, &o, now, ans, aged, err)) != RI_OK) {
		json_decref(payload);
		goto out;
	}
	ri_fault("open.after_precheck");
	if ((rc = write_intent(r, &o, payload, ev, alerts, ans, err)) != RI_OK) {
		json_decref(payload);
		goto out;
	}
	json_decref(payload);
	/* issue 39: the intent's witness line is what names this act to a
	 * later restore; one that could not be written (and synced) leaves the
	 * act unprotected against a rollback -- so, as at open step 5.3, the
	 * caller must not commit, and the intent is the sweep's */
	const struct ri_store_error *se = r->st->ops->error(r->st);
	if (!RI_NC(RI_NC_INTENT_LINE_UNCHECKED) && se->witness_missed && strcmp(se->witness_event_id, ev) == 0) {
		release(r, &o);
		rc = ri_refuse_with(ans, json_pack("{s:s, s:s, s:s}", "refused", "section-unavailable",
		    "intent_event_id", ev, "alert", "the intent landed, but the witness could not record it"), err,
		    RI_SECTION_UNAVAILABLE, "section-unavailable: the intent %s landed but its witness line was not"
		    " written (%s); do not commit -- the sweep closes the intent", ev, se->witness_msg);
		goto out;
	}
	/* open step 5.3: Open MUST hold the section at return.  Without a
	 * journal fence an intent issued before the lease ran out can land
	 * after another invocation took the section; this caller must then
	 * never commit, and the orphaned intent is the sweep's, like any other */
	ri_ms left;
	if (!RI_NC(RI_NC_NO_OPEN_SECTION_CHECK) &&
	    (r->st->ops->remaining(r->st, o.in.kind, o.in.act_key, o.inv, &left) != RI_ST_OK || left == RI_NONE)) {
		rc = ri_refuse_with(ans, json_pack("{s:s, s:s}", "refused", "section-unavailable",
		    "intent_event_id", ev), err, RI_SECTION_UNAVAILABLE,
		    "section-unavailable: the intent %s landed after this invocation's section was gone;"
		    " do not commit -- the sweep closes the intent", ev);   /* open step 5.3 */
		goto out;
	}
	/* open step 5: return holding the section */
	*ans = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:I}", "kind", o.in.kind, "act_key", o.in.act_key,
	    "actor_ref", o.in.actor_ref, "invocation_id", o.inv, "intent_event_id", ev,
	    "lease_expires_at", ri_json_instant(g.expires_at), "fencing_token", (json_int_t)g.token);
	if (o.k->commit_fence)
		/* Allowance 7: the commit fence deadline carries the allowance */
		json_object_set_new(*ans, "commit_fence_deadline",
		    ri_json_instant(g.expires_at - r->cfg->clock_offset_allowance));
	size_t i;
	json_t *v;
	json_array_foreach(alerts, i, v)
		ri_alert(*ans, "%s", json_string_value(json_object_get(v, "alert")));
	json_array_foreach(aged, i, v) {
		/* open step 3.8 */
		ri_alert(*ans, "invocation %s of this act is aged and left open for an operator",
		    json_string_value(v));
		surface_aged(r, &o, json_string_value(v), now, *ans);
	}
	rc = RI_OK;
out:
	json_decref(aged);
	json_decref(alerts);
	return rc;
}
