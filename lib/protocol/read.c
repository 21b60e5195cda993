/* read.c -- the Read Invocation contract (read invocation 1-14): the act's
 * invocations, newest first, each with its records and its state.  Takes
 * no section (13) and writes nothing (14). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/nc.h"
#include "protocol/proto.h"
#include "protocol/restore.h"

json_t *
ri_record_json(const struct ri_record *rec)
{
	json_t *j = json_pack("{s:s, s:I, s:s, s:s, s:o}", "event_id", rec->event_id,
	    "seq", (json_int_t)rec->seq, "action_ref", rec->action_ref, "actor_ref", rec->actor_ref,
	    "recorded_at", ri_json_instant(rec->recorded_at));

	if (rec->purged) {
		json_object_set_new(j, "payload", json_null());
		json_object_set_new(j, "purged", json_true());
	} else {
		json_object_set(j, "payload", rec->payload);
	}
	return j;
}

static json_t *
entry_json(const struct ri_config *c, const struct ri_act_inv *e)
{
	json_t *recs = json_array();
	size_t skip = 0, later = e->inv.n_recovery + e->inv.n_closings;
	bool more = false;

	/* read invocation 4-6: the intent, the recovery_intended records and the
	 * closings, superseded ones included; read invocation 5: the latter
	 * capped at the most recent read_cap */
	if ((int64_t)later > c->read_cap) {
		skip = later - (size_t)c->read_cap;
		more = true;
	}
	json_array_append_new(recs, ri_record_json(e->inv.intent));
	size_t seen = 0;
	for (size_t i = 0; i < e->inv.all.n; i++) {
		const struct ri_record *rec = &e->inv.all.v[i];
		if (rec->role != RI_ROLE_RECOVERY && !ri_role_closing(rec->role))
			continue;
		if (seen++ < skip)
			continue;
		json_array_append_new(recs, ri_record_json(rec));
	}
	/* read invocation 7, 10: the closings key and the state, from the one
	 * module that reads Which closing stands (journal fence none 1b: an
	 * invocation a late append left two closings on reads
	 * binding_duplicate) */
	bool dup = e->sd.duplicate;
	if (RI_NC(RI_NC_READ_NO_DUPLICATE))
		dup = false;            /* negative control: the entry never reports the closings key */
	return json_pack("{s:s, s:s, s:b, s:o, s:b}", "invocation_id", e->inv_id,
	    "state", ri_state_name(e->sd.state), "binding_duplicate", dup,
	    "records", recs, "more", more);
}

/* read invocation 11: the range read's unavailable arm is journal-
 * unavailable, never not-known (Action wiring 3); a verification failure
 * is 30 with "cause":"integrity" */
static int
unavailable(struct ri *r, int st, json_t **ans, ri_err *err)
{
	if (st == RI_ST_INTEGRITY)
		return ri_refuse_with(ans, ri_refusal_unavailable(true), err, RI_INTEGRITY, "%s",
		    r->st->ops->error(r->st)->msg);
	return ri_refuse_with(ans, ri_refusal_unavailable(false), err, RI_JOURNAL_UNAVAILABLE,
	    "journal-unavailable: %s", r->st->ops->error(r->st)->msg);
}

/* A reader fails closed on a record whose shape is not one the composition
 * writes (INTERFACE 30), with the function ri-audit's Check 8.1.8 uses. */
static int
illegal(json_t **ans, ri_err *err, const struct ri_record *rec, const char *why)
{
	return ri_refuse_with(ans, ri_refusal_unavailable(true), err, RI_INTEGRITY,
	    "journal integrity: record seq %lld (%s) is malformed: %s", (long long)rec->seq, rec->event_id, why);
}

/*
 * ri-read by invocation id alone, or by event id (INTERFACE, second wave):
 * the kind and act key come from the journal's own verified records -- the
 * invocation's, or the one record's -- so an auditor holding only the ids
 * ri-audit names needs nothing else.  A record naming no invocation (the
 * substrate's: seals, the actor registry) is answered alone.
 */
static int
locate(ri *r, const char **kind, const char **act_key, const char **inv_id, const char *event_id,
    json_t **record, char *kbuf, char *abuf, char *ibuf, json_t **ans, ri_err *err)
{
	struct ri_record rec;
	struct ri_inv inv;
	int st;

	*record = NULL;
	if (event_id != NULL) {
		memset(&rec, 0, sizeof rec);
		st = r->st->ops->read_record(r->st, event_id, &rec);
		if (st == RI_ST_NOT_KNOWN)
			return ri_refuse_with(ans, ri_refusal("not-known"), err, RI_NOT_KNOWN,
			    "not-known: no record %s in the journal", event_id);
		if (st != RI_ST_OK && st != RI_ST_PURGED)
			goto unavailable;
		if ((*kind != NULL && strcmp(*kind, rec.kind) != 0) ||
		    (*act_key != NULL && strcmp(*act_key, rec.act_key) != 0) ||
		    (*inv_id != NULL && (rec.invocation_id == NULL || strcmp(*inv_id, rec.invocation_id) != 0))) {
			ri_record_clear(&rec);
			return ri_refuse_with(ans, ri_refusal("not-known"), err, RI_NOT_KNOWN,
			    "not-known: record %s is not of the act or invocation named", event_id);
		}
		*record = ri_record_json(&rec);
		snprintf(kbuf, 256, "%s", rec.kind);
		snprintf(abuf, 4096, "%s", rec.act_key);
		*kind = kbuf;
		*act_key = abuf;
		if (rec.invocation_id != NULL) {
			snprintf(ibuf, RI_ID_LEN + 1, "%s", rec.invocation_id);
			*inv_id = ibuf;
		}
		ri_record_clear(&rec);
		return RI_OK;
	}
	if (*kind != NULL && *act_key != NULL)
		return RI_OK;
	if (*inv_id == NULL || *kind != NULL || *act_key != NULL)
		return ri_refuse_with(ans, NULL, err, RI_MALFORMED, "the request needs kind and act_key,"
		    " or invocation_id alone, or event_id (--kind K --act-key KEY | --invocation-id ID |"
		    " --event-id EV)");
	if ((st = ri_inv_read(r, *inv_id, &inv)) != RI_ST_OK)
		goto unavailable;
	const struct ri_record *any = inv.intent ? inv.intent : inv.all.n ? &inv.all.v[0] : NULL;
	if (any != NULL) {
		snprintf(kbuf, 256, "%s", any->kind);
		snprintf(abuf, 4096, "%s", any->act_key);
	}
	ri_inv_free(&inv);
	if (any == NULL)
		return ri_refuse_with(ans, ri_refusal("not-known"), err, RI_NOT_KNOWN,
		    "not-known: no record names invocation %s", *inv_id);
	*kind = kbuf;
	*act_key = abuf;
	return RI_OK;
unavailable:
	return unavailable(r, st, ans, err);
}

int
ri_read_invocation(ri *r, json_t *req, json_t **ans, ri_err *err)
{
	struct ri_req in;
	const char *kind, *act_key, *inv_id, *event_id;
	const struct ri_kind *k;
	struct ri_act act;
	char kbuf[256], abuf[4096], ibuf[RI_ID_LEN + 1];
	json_t *record = NULL;
	ri_ms now;
	int rc, st;

	*ans = NULL;
	if ((rc = ri_req_parse(req, ri_read_fields, &in, err)) != RI_OK)
		return rc;
	/* what the request names; locate() takes the rest from the journal */
	kind = in.kind;
	act_key = in.act_key;
	inv_id = in.invocation_id;
	event_id = in.event_id;
	if ((kind == NULL) != (act_key == NULL) && event_id == NULL) {
		snprintf(err->missing, sizeof err->missing, "%s", kind == NULL ? "kind" : "act_key");
		return ri_fail(err, RI_MALFORMED, "kind and act_key go together; or give invocation_id"
		    " alone, or event_id");
	}
	if ((rc = ri_no_journal(r, NULL, NULL, ans, err)) != RI_OK)
		return rc;
	if ((rc = locate(r, &kind, &act_key, &inv_id, event_id, &record, kbuf, abuf, ibuf, ans, err)) != RI_OK)
		return rc;
	if (record != NULL && inv_id == NULL) {
		/* a substrate record: no invocation to report */
		*ans = json_pack("{s:o, s:[], s:b, s:b}", "record", record, "invocations",
		    "binding_duplicate", 0, "more", 0);
		return RI_OK;
	}
	/* Read Invocation refuses only not-known and journal-unavailable: a
	 * kind no longer bound is read from the roles stored with its records
	 * (k NULL: no service identity to key the intents key on) */
	k = ri_config_kind(r->cfg, kind);
	/* read invocation 1: the reader's own seam */
	if ((rc = ri_seam_now(r, &now, err)) != RI_OK) {
		json_decref(record);
		return rc;
	}
	/* read invocation 2: read_cap entries, and one more tells "more" */
	if ((st = ri_act_read(r, kind, act_key, inv_id, (size_t)r->cfg->read_cap + 1, &act)) != RI_ST_OK) {
		json_decref(record);
		return unavailable(r, st, ans, err);
	}
	/* the legal shape of what is returned, as Check 8.1.8 reads it; a
	 * supersedes naming anything but an earlier closing of its invocation
	 * is malformed (the closings issue's ruling) -- fail closed */
	if (act.bad != NULL) {
		json_decref(record);
		rc = illegal(ans, err, act.bad, act.why);
		ri_act_free(&act);
		return rc;
	}
	/* Invariant 7.3, sequence high water 5, the retention drop: an intent
	 * purged or past its retention end is out of every reading; read
	 * invocation 12: no readable intent is not-known */
	json_t *invs = json_array();
	struct ri_open_span *spans = ri_xcalloc(act.n + 1, sizeof *spans);
	size_t n_spans = 0, shown = 0;
	bool more = act.truncated;
	for (size_t i = act.n; i-- > 0;) {
		const struct ri_act_inv *e = &act.v[i];
		if (e->inv.intent == NULL || !ri_intent_retained(r->cfg, e->inv.intent, now))
			continue;
		if ((int64_t)shown == r->cfg->read_cap) {
			more = true;
			break;
		}
		json_array_append_new(invs, entry_json(r->cfg, e));
		shown++;
		spans[n_spans].opened = e->inv.intent->seq;
		spans[n_spans].closed = e->inv.n_closings > 0 ? e->inv.closings[0].rec->seq : INT64_MAX;
		n_spans++;
	}
	/* read invocation 8-9, Which closing stands 9-10: the intents key,
	 * only where the kind declares a service identity */
	size_t da, db;
	bool act_dup = k != NULL && k->service_actor != NULL && ri_intents_key(spans, n_spans, &da, &db);
	free(spans);
	ri_act_free(&act);
	if (shown == 0) {
		json_decref(invs);
		json_decref(record);
		return ri_refuse_with(ans, ri_refusal("not-known"), err, RI_NOT_KNOWN,
		    "not-known: no readable intent for (%s, %s)%s%s", kind, act_key,
		    inv_id ? " with invocation " : "", inv_id ? inv_id : "");
	}
	/* issue 39: an act a restore lost, held back until its store is asked
	 * again -- said beside what the journal now holds of it */
	char *held = NULL;
	if ((st = ri_restore_held(r, kind, act_key, &held)) != RI_ST_OK) {
		json_decref(invs);
		json_decref(record);
		return unavailable(r, st, ans, err);
	}
	*ans = json_pack("{s:o, s:b, s:b}", "invocations", invs, "binding_duplicate", act_dup, "more", more);
	if (held != NULL)
		json_object_set_new(*ans, "unreconciled", json_pack("{s:s, s:s}", "invocation_id", held, "cause",
		    "restore"));
	free(held);
	if (record != NULL)
		json_object_set_new(*ans, "record", record);
	return RI_OK;
}
