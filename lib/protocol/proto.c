/* proto.c -- requests, the invocation read, answers, the lost-reply wait. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/nc.h"
#include "protocol/proto.h"

/* ---- requests ---- */

int
ri_req_parse(json_t *req, const struct ri_field *fields, struct ri_req *out, ri_err *err)
{
	const char *key;
	json_t *v;

	memset(out, 0, sizeof *out);
	if (!json_is_object(req))
		return ri_fail(err, RI_MALFORMED, "the request must be a JSON object");
	json_object_foreach(req, key, v) {
		const struct ri_field *f = fields;
		while (f->name != NULL && strcmp(f->name, key) != 0)
			f++;
		if (f->name == NULL)
			return ri_fail(err, RI_MALFORMED, "unknown field \"%s\" in the request", key);
	}
	for (const struct ri_field *f = fields; f->name != NULL; f++) {
		v = json_object_get(req, f->name);
		if (v == NULL) {
			if (f->required) {
				snprintf(err->missing, sizeof err->missing, "%s", f->name);
				return ri_fail(err, RI_MALFORMED, "the request lacks \"%s\"", f->name);
			}
			continue;
		}
		void *dest = (char *)out + f->at;
		switch (f->type) {
		case RI_F_STR:
			if (!json_is_string(v))
				return ri_fail(err, RI_MALFORMED, "\"%s\" must be a string", f->name);
			*(const char **)dest = json_string_value(v);
			break;
		case RI_F_CODE:
			if (!json_is_string(v) && !json_is_integer(v))
				return ri_fail(err, RI_MALFORMED, "\"%s\" must be a string or an integer", f->name);
			*(json_t **)dest = v;
			break;
		case RI_F_OBJ:
			if (!json_is_object(v))
				return ri_fail(err, RI_MALFORMED, "\"%s\" must be a JSON object", f->name);
			*(json_t **)dest = v;
			break;
		case RI_F_ANY:
			*(json_t **)dest = v;
			break;
		case RI_F_IGNORE:
			break;
		}
	}
	return RI_OK;
}

bool
ri_ref_ok(const struct ri *r, const char *s)
{
	return s != NULL && *s != '\0' && (int64_t)strlen(s) <= r->cfg->reference_length_cap;
}

int
ri_seam_now(struct ri *r, ri_ms *now, ri_err *err)
{
	return ri_now(r->cfg, now, err);
}

/* ---- the vocabulary (journal 2-4) ---- */

bool
ri_is_outcome_ref(const struct ri_kind *k, const char *action_ref)
{
	size_t n = strlen(k->name);

	if (strncmp(action_ref, k->name, n) != 0 || action_ref[n] != '.')
		return false;
	for (size_t i = 0; i < k->n_outcomes; i++)
		if (strcmp(action_ref + n + 1, k->outcomes[i]) == 0)
			return true;
	return false;
}

const char *
ri_action_ref(const struct ri_kind *k, const char *suffix, char *buf, size_t n)
{
	snprintf(buf, n, "%s.%s", k->name, suffix);
	return buf;
}

static int inv_read(struct ri *r, const char *inv_id, bool trusted, struct ri_inv *out);

int
ri_inv_read(struct ri *r, const char *inv_id, struct ri_inv *out)
{
	return inv_read(r, inv_id, false, out);
}

int
ri_inv_read_trusted(struct ri *r, const char *inv_id, struct ri_inv *out)
{
	return inv_read(r, inv_id, true, out);
}

void
ri_inv_query(const char *inv_id, struct ri_query *q)
{
	*q = (struct ri_query){ .from = 1, .limit = 4096, .invocation_id = inv_id };
}

static int
inv_read(struct ri *r, const char *inv_id, bool trusted, struct ri_inv *out)
{
	struct ri_query q;
	int rc;

	ri_inv_query(inv_id, &q);
	q.trusted = trusted;

	memset(out, 0, sizeof *out);
	for (;;) {
		struct ri_records page;

		if ((rc = r->st->ops->range_read(r->st, &q, &page)) != RI_ST_OK) {
			ri_inv_free(out);
			return rc;
		}
		size_t base = out->all.n;
		out->all.v = realloc(out->all.v, (base + page.n + 1) * sizeof *out->all.v);
		if (out->all.v == NULL)
			abort();
		if (page.n > 0)
			memcpy(out->all.v + base, page.v, page.n * sizeof *page.v);
		out->all.n += page.n;
		free(page.v);
		q.from = page.next;
		if (!page.more)
			break;
	}
	for (size_t i = 0; i < out->all.n; i++)
		ri_inv_add(out, &out->all.v[i]);
	return RI_ST_OK;
}

void
ri_inv_free(struct ri_inv *inv)
{
	ri_inv_free_index(inv);
	ri_records_clear(&inv->all);
	memset(inv, 0, sizeof *inv);
}

/* The act's entry for invocation id: a hash lookup (index: inv id -> its
 * position in a->v), never a linear search over the act's invocations. */
static struct ri_act_inv *
act_entry(struct ri_act *a, json_t *index, const char *id)
{
	json_t *i = json_object_get(index, id);

	return i != NULL ? &a->v[json_integer_value(i)] : NULL;
}

void
ri_act_query(const char *kind, const char *act_key, const char *inv_id, size_t max_intents, struct ri_query *q)
{
	/* a bounded read (read_cap) reads a first page the size of what it
	 * needs -- an intent and a closing or two per invocation -- not 512
	 * verified records of a hot key; pages then double */
	size_t first = max_intents > 0 && max_intents < 128 ? 2 * max_intents + 4 : 512;

	*q = (struct ri_query){ .from = 0, .limit = first, .kind = kind, .act_key = act_key, .descending = true };
	if (inv_id != NULL)
		*q = (struct ri_query){ .from = 0, .limit = first, .invocation_id = inv_id, .descending = true };
}

int
ri_act_read(struct ri *r, const char *kind, const char *act_key, const char *inv_id,
    size_t max_intents, struct ri_act *out)
{
	/* a bounded read (read_cap) reads a first page the size of what it
	 * needs -- an intent and a closing or two per invocation -- not 512
	 * verified records of a hot key; pages then double */
	struct ri_query q;
	size_t cap = 0, cap_v = 0;
	json_t *index;
	int st;

	memset(out, 0, sizeof *out);
	ri_act_query(kind, act_key, inv_id, max_intents, &q);
	for (;;) {
		struct ri_records page;
		if ((st = r->st->ops->range_read(r->st, &q, &page)) != RI_ST_OK) {
			ri_act_free(out);
			return st;
		}
		for (size_t i = 0; i < page.n; i++) {
			if (out->all.n == cap) {
				cap = cap ? cap * 2 : 64;
				out->all.v = realloc(out->all.v, cap * sizeof *out->all.v);
				if (out->all.v == NULL)
					abort();
			}
			out->all.v[out->all.n++] = page.v[i];
			if (page.v[i].role == RI_ROLE_INTENT && page.v[i].invocation_id != NULL)
				out->intents++;
		}
		free(page.v);
		q.from = page.next;
		if (!page.more)
			break;
		if (max_intents > 0 && out->intents >= max_intents) {
			out->truncated = true;
			break;
		}
		if (q.limit < 512)
			q.limit = q.limit * 2 < 512 ? q.limit * 2 : 512;
	}
	/* group oldest first, so each invocation's records ascend */
	index = json_object();
	for (size_t i = out->all.n; i-- > 0;) {
		struct ri_record *rec = &out->all.v[i];
		struct ri_act_inv *e;
		if (rec->invocation_id == NULL || strcmp(rec->kind, kind) != 0 ||
		    strcmp(rec->act_key, act_key) != 0)
			continue;
		if ((e = act_entry(out, index, rec->invocation_id)) == NULL) {
			if (rec->role != RI_ROLE_INTENT)
				continue;       /* its intent lies beyond what was read */
			if (out->n == cap_v) {
				cap_v = cap_v ? cap_v * 2 : 16;
				out->v = realloc(out->v, cap_v * sizeof *out->v);
				if (out->v == NULL)
					abort();
			}
			json_object_set_new(index, rec->invocation_id, json_integer((json_int_t)out->n));
			e = &out->v[out->n++];
			/* out->v holds cap_v > out->n entries here; the analyzer loses
			 * that across the loop's iterations */
			memset(e, 0, sizeof *e);        /* NOLINT(clang-analyzer-core.NonNullParamChecker) */
			e->inv_id = ri_strdup(rec->invocation_id);
		}
		e->inv.all.v = realloc(e->inv.all.v, (e->inv.all.n + 1) * sizeof *e->inv.all.v);
		if (e->inv.all.v == NULL)
			abort();
		e->inv.all.v[e->inv.all.n++] = *rec;
	}
	json_decref(index);
	for (size_t i = 0; i < out->n; i++) {
		struct ri_act_inv *e = &out->v[i];
		for (size_t j = 0; j < e->inv.all.n; j++) {
			if (out->bad == NULL && !ri_record_legal(&e->inv.all.v[j], out->why, sizeof out->why))
				out->bad = &e->inv.all.v[j];
			ri_inv_add(&e->inv, &e->inv.all.v[j]);
		}
		ri_standing(e->inv.closings, e->inv.n_closings, &e->sd);
		if (out->bad == NULL && e->sd.malformed != NULL) {
			out->bad = e->sd.malformed->rec;
			snprintf(out->why, sizeof out->why, "its supersedes names no earlier closing of invocation %s",
			    e->inv_id);
		}
	}
	return RI_ST_OK;
}

void
ri_act_free(struct ri_act *a)
{
	for (size_t i = 0; i < a->n; i++) {
		ri_inv_free_index(&a->v[i].inv);
		free(a->v[i].inv.all.v);
		free(a->v[i].inv_id);
	}
	free(a->v);
	ri_records_clear(&a->all);
	memset(a, 0, sizeof *a);
}

bool
ri_intent_retained(const struct ri_config *c, const struct ri_record *intent, ri_ms now)
{
	const struct ri_kind *k = ri_config_kind(c, intent->kind);
	ri_ms end;

	if (intent->purged)
		return false;
	if (RI_NC(RI_NC_NO_RETENTION_DROP))
		return true;            /* negative control: only a purge drops an intent */
	if (intent->retention_until != RI_NONE)
		end = intent->retention_until;
	else if (k != NULL)
		end = intent->recorded_at + k->retention_period;
	else
		return true;            /* unplaced, unbound: nothing ends it */
	/* Term retention end: dropped once it PRECEDES now */
	return !(end < now);
}

static bool
pstr_is(const struct ri_record *rec, const char *field, const char *want)
{
	json_t *v = json_object_get(rec->payload, field);

	return json_is_string(v) && want != NULL && strcmp(json_string_value(v), want) == 0;
}

bool
ri_record_legal(const struct ri_record *rec, char *why, size_t n)
{
	size_t kl = strlen(rec->kind);

	if (strncmp(rec->action_ref, rec->kind, kl) != 0 || rec->action_ref[kl] != '.') {
		snprintf(why, n, "kind %s does not prefix action ref %s", rec->kind, rec->action_ref);
		return false;
	}
	if (rec->invocation_id == NULL || rec->payload == NULL)
		return true;
	/* Primitive policy 2, 4, 11: a record copied elsewhere does not agree */
	if (!pstr_is(rec, "invocation_id", rec->invocation_id) || !pstr_is(rec, "kind", rec->kind) ||
	    !pstr_is(rec, "act_key", rec->act_key)) {
		snprintf(why, n, "the payload's invocation id, kind or act key disagrees with the record's header");
		return false;
	}
	if (rec->role != RI_ROLE_INTENT && !json_is_string(json_object_get(rec->payload, "intent_event_id"))) {
		snprintf(why, n, "a %s record without intent_event_id", ri_role_name(rec->role));
		return false;
	}
	return true;
}

/* ---- answers ---- */

json_t *
ri_refusal(const char *code)
{
	return json_pack("{s:s}", "refused", code);
}

json_t *
ri_cause_integrity(json_t *refusal, bool integrity)
{
	if (integrity)
		json_object_set_new(refusal, "cause", json_string("integrity"));
	return refusal;
}

json_t *
ri_refusal_unavailable(bool integrity)
{
	return ri_cause_integrity(ri_refusal("journal-unavailable"), integrity);
}

json_t *
ri_refusal_rf(const char *position)
{
	return json_pack("{s:s, s:s}", "refused", "recording-failure", "position", position);
}

json_t *
ri_refusal_rf_st(const char *position, int st)
{
	/* INTERFACE 30: a writer lands a verification failure on its
	 * position's arm, saying why */
	return ri_cause_integrity(ri_refusal_rf(position), st == RI_ST_INTEGRITY);
}

int
(ri_refuse_with)(json_t **ans, json_t *refusal, ri_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	*ans = refusal;
	if (err != NULL) {
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return code;
}

void
ri_alert(json_t *ans, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* the command's own name, so a log or a cron mail says who */
	ri_diag("ALERT: %s", msg);
	json_t *have = json_object_get(ans, "alert");
	if (json_is_string(have)) {
		char both[2100];
		snprintf(both, sizeof both, "%s; %s", json_string_value(have), msg);
		json_object_set_new(ans, "alert", json_string(both));
	} else {
		json_object_set_new(ans, "alert", json_string(msg));
	}
}

/* ---- the lost reply ---- */

void
ri_wait_write_bound(struct ri *r, const char *kind, const char *act_key, const char *holder,
    ri_ms remaining_at_issue, int64_t mono_at_issue)
{
	ri_ms jwb = r->cfg->journal_write_bound, left;

	for (;;) {
		int64_t wait = jwb - (ri_mono_ms() - mono_at_issue);
		if (wait <= 0)
			return;
		if (remaining_at_issue != RI_NONE &&
		    r->st->ops->remaining(r->st, kind, act_key, holder, &left) == RI_ST_OK) {
			if (left == RI_NONE || remaining_at_issue - left >= jwb)
				return;
			/* the instant the lease says the bound has elapsed, when
			 * that comes before the monotonic one */
			if (jwb - (remaining_at_issue - left) < wait)
				wait = jwb - (remaining_at_issue - left);
		}
		/* sleep to the first instant either reading can be satisfied --
		 * a wait that ends on its deadline, not on 20 ms naps */
		if (r->st->ops->settle != NULL)
			r->st->ops->settle(r->st);      /* the next reading after the wait (issue 43) */
		ri_sleep_ms(wait > 0 ? wait : 1);
	}
}

int
ri_read_back(struct ri *r, const char *inv_id, const char *event_id, bool *found)
{
	struct ri_inv inv;
	int rc;

	*found = false;
	if ((rc = ri_inv_read(r, inv_id, &inv)) != RI_ST_OK)
		return rc;
	for (size_t i = 0; i < inv.all.n && !*found; i++)
		*found = strcmp(inv.all.v[i].event_id, event_id) == 0;
	ri_inv_free(&inv);
	return RI_ST_OK;
}

int
ri_no_journal(struct ri *r, const char *pos, json_t *constituent_code, json_t **ans, ri_err *err)
{
	int rc = r->unopened.code;

	if (r->st != NULL)
		return RI_OK;
	*err = r->unopened;
	if (pos == NULL) {
		*ans = ri_refusal_unavailable(rc == RI_INTEGRITY);
		return rc == RI_INTEGRITY && (r->flags & RI_READONLY) ? RI_INTEGRITY : RI_JOURNAL_UNAVAILABLE;
	}
	if (strcmp(pos, "yield") == 0) {
		*ans = json_pack("{s:b, s:s}", "ok", 1, "alert",
		    "the journal is unreachable; the section frees at its lease's end");
		return RI_OK;
	}
	*ans = ri_refusal_rf_st(pos, rc == RI_INTEGRITY ? RI_ST_INTEGRITY : RI_ST_UNAVAILABLE);
	if (strcmp(pos, "refusal") == 0)
		json_object_set(*ans, "constituent_code", constituent_code);
	err->code = strcmp(pos, "outcome") == 0 ? RI_RF_OUTCOME : strcmp(pos, "refusal") == 0 ?
	    RI_RF_REFUSAL : RI_RF_RESOLUTION;
	return err->code;
}
