/* read.c -- the Read Invocation contract (read invocation 1-15): the act's
 * invocations, newest first, each with its records and its state.  Takes
 * no section (13) and writes nothing (14). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

struct entry {
	char *inv_id;
	struct ri_inv inv;              /* records borrowed from the page set */
	int64_t first_close;            /* seq of its first closing, INT64_MAX if none */
};

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
entry_json(const struct ri_config *c, struct entry *e)
{
	struct ri_standing sd;
	json_t *recs = json_array();
	size_t skip = 0, later = e->inv.n_recovery + e->inv.n_closings;
	bool more = false;

	ri_standing(e->inv.closings, e->inv.n_closings, &sd);
	/* read invocation 4-6: the intent, the recovery_intended records and the
	 * closings, superseded ones included, the latter capped at read_cap */
	if ((int64_t)later > c->read_cap) {
		skip = later - (size_t)c->read_cap;
		more = true;
	}
	json_array_append_new(recs, ri_record_json(e->inv.intent));
	size_t seen = 0;
	for (size_t i = 0; i < e->inv.all.n; i++) {
		const struct ri_record *rec = &e->inv.all.v[i];
		if (rec->role != RI_ROLE_RECOVERY && rec->role != RI_ROLE_CLOSING)
			continue;
		if (seen++ < skip)
			continue;
		json_array_append_new(recs, ri_record_json(rec));
	}
	return json_pack("{s:s, s:s, s:b, s:o, s:b}", "invocation_id", e->inv_id,
	    "state", ri_state_name(sd.state), "binding_duplicate", sd.duplicate,
	    "records", recs, "more", more);
}

static void
entries_free(struct entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].inv.recovery);
		free(v[i].inv.closings);
		free(v[i].inv.all.v);
		free(v[i].inv_id);
	}
	free(v);
}

static struct entry *
find_entry(struct entry *v, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].inv_id, id) == 0)
			return &v[i];
	return NULL;
}

int
ri_read_invocation(ri *r, json_t *req, json_t **ans, ri_err *err)
{
	const char *kind, *act_key, *inv_id = NULL;
	const struct ri_field fields[] = {
		{ "kind", RI_F_STR, true, &kind },
		{ "act_key", RI_F_STR, true, &act_key },
		{ "invocation_id", RI_F_STR, false, &inv_id },
		{ NULL, 0, false, NULL } };
	const struct ri_kind *k;
	struct ri_records all = { 0 };
	struct entry *ents = NULL;
	size_t n_ents = 0, cap = 0, cap_recs = 0;
	bool more_invocations = false;
	ri_ms now;
	int rc, st = RI_ST_OK;

	*ans = NULL;
	if ((rc = ri_req_parse(req, fields, err)) != RI_OK ||
	    (rc = ri_no_journal(r, NULL, NULL, ans, err)) != RI_OK)
		return rc;
	if ((k = ri_config_kind(r->cfg, kind)) == NULL)
		return ri_refuse_with(ans, json_pack("{s:s, s:s}", "refused", "invalid-request", "cause",
		    "unbound-kind"), err, RI_INVALID_REQUEST, "kind \"%s\" is not bound", kind);
	/* read invocation 1: the reader's own seam */
	if ((rc = ri_seam_now(r, &now, err)) != RI_OK)
		return rc;
	(void)now;
	/* Newest first over the act's scope; an invocation's intent is its
	 * oldest record, so an entry is whole once its intent is reached. */
	struct ri_query q = { .from = 0, .limit = 512, .kind = kind, .act_key = act_key, .descending = true };
	if (inv_id != NULL)
		q = (struct ri_query){ .from = 0, .limit = 512, .invocation_id = inv_id, .descending = true };
	size_t intents = 0;
	for (;;) {
		struct ri_records page;
		if ((st = r->st->ops->range_read(r->st, &q, &page)) != RI_ST_OK)
			goto out;
		for (size_t i = 0; i < page.n; i++) {
			if (all.n == cap_recs) {
				cap_recs = cap_recs ? cap_recs * 2 : 64;
				all.v = realloc(all.v, cap_recs * sizeof *all.v);
				if (all.v == NULL)
					abort();
			}
			all.v[all.n++] = page.v[i];
			if (page.v[i].role == RI_ROLE_INTENT && page.v[i].invocation_id != NULL)
				intents++;
		}
		free(page.v);
		q.from = page.next;
		/* read invocation 2: read_cap entries, and one more tells "more" */
		if (!page.more || (int64_t)intents > r->cfg->read_cap)
			break;
	}
	/* group oldest-first so each entry's records ascend */
	for (size_t i = all.n; i-- > 0;) {
		struct ri_record *rec = &all.v[i];
		struct entry *e;
		if (rec->invocation_id == NULL || strcmp(rec->kind, kind) != 0 ||
		    strcmp(rec->act_key, act_key) != 0)
			continue;
		if ((e = find_entry(ents, n_ents, rec->invocation_id)) == NULL) {
			if (rec->role != RI_ROLE_INTENT)
				continue;       /* its intent lies beyond what was read */
			if (n_ents == cap) {
				cap = cap ? cap * 2 : 16;
				ents = realloc(ents, cap * sizeof *ents);
				if (ents == NULL)
					abort();
			}
			e = &ents[n_ents++];
			memset(e, 0, sizeof *e);
			e->inv_id = ri_strdup(rec->invocation_id);
		}
		e->inv.all.v = realloc(e->inv.all.v, (e->inv.all.n + 1) * sizeof *e->inv.all.v);
		if (e->inv.all.v == NULL)
			abort();
		e->inv.all.v[e->inv.all.n++] = *rec;    /* borrowed: freed with `all` */
	}
	for (size_t i = 0; i < n_ents; i++) {
		struct entry *e = &ents[i];
		e->first_close = INT64_MAX;
		for (size_t j = 0; j < e->inv.all.n; j++) {
			ri_inv_add(r, &e->inv, &e->inv.all.v[j]);
			if (e->inv.all.v[j].role == RI_ROLE_CLOSING && e->first_close == INT64_MAX)
				e->first_close = e->inv.all.v[j].seq;
		}
	}
	/* Invariant 7.3: an intent whose payload was destroyed is out of every
	 * reading; read invocation 12: no readable intent is not-known */
	json_t *invs = json_array();
	bool act_dup = false;
	size_t shown = 0;
	for (size_t i = n_ents; i-- > 0;) {
		struct entry *e = &ents[i];
		if (e->inv.intent == NULL || e->inv.intent->purged)
			continue;
		if ((int64_t)shown == r->cfg->read_cap) {
			more_invocations = true;
			break;
		}
		json_array_append_new(invs, entry_json(r->cfg, e));
		shown++;
		/* read invocation 8-9: the intents key -- two intents open at once
		 * on the act -- and only where the kind declares a service identity */
		for (size_t j = 0; j < n_ents && k->service_actor != NULL; j++) {
			struct entry *f = &ents[j];
			if (f == e || f->inv.intent == NULL || f->inv.intent->purged)
				continue;
			if (f->inv.intent->seq < e->first_close && e->inv.intent->seq < f->first_close)
				act_dup = true;
		}
	}
	if ((int64_t)intents > r->cfg->read_cap && !more_invocations && shown == (size_t)r->cfg->read_cap)
		more_invocations = true;
	if (shown == 0) {
		json_decref(invs);
		rc = ri_refuse_with(ans, ri_refusal("not-known"), err, RI_NOT_KNOWN,
		    "not-known: no readable intent for (%s, %s)%s%s", kind, act_key,
		    inv_id ? " with invocation " : "", inv_id ? inv_id : "");
		goto done;
	}
	*ans = json_pack("{s:o, s:b, s:b}", "invocations", invs, "binding_duplicate", act_dup,
	    "more", more_invocations);
	rc = RI_OK;
	goto done;
out:
	/* read invocation 11: the range read's unavailable arm is
	 * journal-unavailable, never not-known (Action wiring 3) */
	if (st == RI_ST_INTEGRITY)
		rc = ri_refuse_with(ans, json_pack("{s:s, s:s}", "refused", "journal-unavailable", "cause",
		    "integrity"), err, RI_INTEGRITY, "%s", r->st->ops->error(r->st)->msg);
	else
		rc = ri_refuse_with(ans, ri_refusal("journal-unavailable"), err, RI_JOURNAL_UNAVAILABLE,
		    "journal-unavailable: %s", r->st->ops->error(r->st)->msg);
done:
	entries_free(ents, n_ents);
	ri_records_clear(&all);
	return rc;
}
