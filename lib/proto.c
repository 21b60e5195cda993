/* proto.c -- requests, the invocation read, answers, the lost-reply wait. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/* ---- requests ---- */

int
ri_req_parse(json_t *req, const struct ri_field *fields, ri_err *err)
{
	const char *key;
	json_t *v;

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
			if (f->required)
				return ri_fail(err, RI_MALFORMED, "the request lacks \"%s\"", f->name);
			continue;
		}
		switch (f->type) {
		case RI_F_STR:
			if (!json_is_string(v))
				return ri_fail(err, RI_MALFORMED, "\"%s\" must be a string", f->name);
			*(const char **)f->dest = json_string_value(v);
			break;
		case RI_F_CODE:
			if (!json_is_string(v) && !json_is_integer(v))
				return ri_fail(err, RI_MALFORMED, "\"%s\" must be a string or an integer", f->name);
			*(json_t **)f->dest = v;
			break;
		case RI_F_OBJ:
			if (!json_is_object(v))
				return ri_fail(err, RI_MALFORMED, "\"%s\" must be a JSON object", f->name);
			*(json_t **)f->dest = v;
			break;
		case RI_F_ANY:
			*(json_t **)f->dest = v;
			break;
		case RI_F_IGNORE:
			break;
		}
	}
	return RI_OK;
}

const char *
ri_req_credential(const char *from_request, char *buf, size_t n)
{
	const char *env, *file;
	char *text;
	size_t len;

	if (from_request != NULL)
		return from_request;
	if ((env = getenv("RI_CREDENTIAL")) != NULL && *env != '\0')
		return env;
	if ((file = getenv("RI_CREDENTIAL_FILE")) != NULL && *file != '\0' &&
	    (text = ri_slurp(file, n - 1, &len)) != NULL) {
		while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
			text[--len] = '\0';
		snprintf(buf, n, "%s", text);
		free(text);
		return buf;
	}
	return NULL;
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

static const char *
suffix_of(const char *action_ref)
{
	const char *dot = strchr(action_ref, '.');

	return dot ? dot + 1 : "";
}

/* ---- the invocation read ---- */

void
ri_inv_add(struct ri *r, struct ri_inv *inv, struct ri_record *rec)
{
	const char *sfx = suffix_of(rec->action_ref);
	const struct ri_kind *k = ri_config_kind(r->cfg, rec->kind);

	switch (rec->role) {
	case RI_ROLE_INTENT:
		if (inv->intent == NULL)
			inv->intent = rec;
		inv->n_intents++;
		return;
	case RI_ROLE_RECOVERY:
		inv->recovery = realloc(inv->recovery, (inv->n_recovery + 1) * sizeof *inv->recovery);
		if (inv->recovery == NULL)
			abort();
		inv->recovery[inv->n_recovery++] = rec;
		return;
	case RI_ROLE_CLOSING:
		break;
	default:
		return;
	}
	inv->closings = realloc(inv->closings, (inv->n_closings + 1) * sizeof *inv->closings);
	if (inv->closings == NULL)
		abort();
	struct ri_closing *c = &inv->closings[inv->n_closings++];
	memset(c, 0, sizeof *c);
	c->rec = rec;
	if (strcmp(sfx, "refused") == 0)
		c->type = RI_C_REFUSED;
	else if (strcmp(sfx, "abandoned") == 0)
		c->type = RI_C_ABANDONED;
	else if (strcmp(sfx, "escalated") == 0)
		c->type = RI_C_ESCALATED;
	else
		c->type = RI_C_OUTCOME;         /* journal 4: by the enumerated refs */
	(void)k;
	if (rec->payload != NULL) {
		json_t *s = json_object_get(rec->payload, "supersedes");
		c->supersedes = json_is_string(s) ? json_string_value(s) : NULL;
		c->resolved_by = json_is_string(json_object_get(rec->payload, "resolved_by"));
		c->recovery = json_is_true(json_object_get(rec->payload, "recovery"));
	}
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

static int
inv_read(struct ri *r, const char *inv_id, bool trusted, struct ri_inv *out)
{
	struct ri_query q = { .from = 1, .limit = 4096, .invocation_id = inv_id, .trusted = trusted };
	int rc;

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
		ri_inv_add(r, out, &out->all.v[i]);
	return RI_ST_OK;
}

void
ri_inv_free(struct ri_inv *inv)
{
	ri_records_clear(&inv->all);
	free(inv->recovery);
	free(inv->closings);
	memset(inv, 0, sizeof *inv);
}

/* ---- Which closing stands ---- */

static bool
named_by_another(const struct ri_closing *c, size_t n, size_t i)
{
	for (size_t j = 0; j < n; j++)
		if (j != i && c[j].supersedes != NULL && strcmp(c[j].supersedes, c[i].rec->event_id) == 0)
			return true;
	return false;
}

/*
 * Supersession is by name only (Which closing stands 2): a closing is
 * superseded exactly when another closing names it in supersedes; never by
 * resolved_by (3) nor by position (8).  Reading every name at once is the
 * transitive reading (4): a chain A <- B <- C leaves C alone unsuperseded,
 * and the chain counts as one closing (5).  Among the unsuperseded, the
 * lowest sequence stands (7).  The closings key needs two closings that
 * each supersede nothing and are superseded by nothing (6) -- so a
 * resolution naming one of two duplicates resolves the duplicate
 * (journal fence none 4).
 */
void
ri_standing(const struct ri_closing *c, size_t n, struct ri_standing *out)
{
	size_t roots_alone = 0;

	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < n; i++) {
		bool superseded = named_by_another(c, n, i);
		if (superseded)
			continue;
		out->unsuperseded++;
		if (c[i].supersedes == NULL)
			roots_alone++;
		if (out->standing == NULL || c[i].rec->seq < out->standing->rec->seq)
			out->standing = &c[i];
	}
	out->duplicate = roots_alone >= 2;
#ifdef RI_NC_PAIRWISE_SUPERSESSION
	/* negative control: supersession read pairwise -- each (superseded,
	 * superseding) pair collapsed on its own, so a chain A <- B <- C
	 * counts as two closings (the reading Which closing stands 4 forbids) */
	{
		size_t pairs = 0, alone = 0;
		for (size_t i = 0; i < n; i++) {
			if (c[i].supersedes != NULL)
				pairs++;
			else if (!named_by_another(c, n, i))
				alone++;
		}
		out->duplicate = pairs + alone >= 2;
	}
#endif
	if (out->standing == NULL) {
		out->state = RI_STATE_OPEN;
		return;
	}
	/* the state projection */
	switch (out->standing->type) {
	case RI_C_OUTCOME:
		out->state = RI_STATE_CLOSED;
		break;
	case RI_C_REFUSED:
		out->state = RI_STATE_REFUSED;
		break;
	case RI_C_ABANDONED:
		out->state = out->standing->resolved_by ? RI_STATE_RESOLVED : RI_STATE_ABANDONED;
		break;
	case RI_C_ESCALATED:
		out->state = RI_STATE_ESCALATED;
		break;
	}
}

const char *
ri_state_name(enum ri_state s)
{
	static const char *names[] = { "open", "closed", "refused", "abandoned", "escalated", "resolved" };
	return names[s];
}

/* ---- answers ---- */

json_t *
ri_refusal(const char *code)
{
	return json_pack("{s:s}", "refused", code);
}

json_t *
ri_refusal_rf(const char *position)
{
	return json_pack("{s:s, s:s}", "refused", "recording-failure", "position", position);
}

json_t *
ri_refusal_rf_st(const char *position, int st)
{
	json_t *j = ri_refusal_rf(position);

	/* INTERFACE 30: a writer lands a verification failure on its
	 * position's arm, saying why */
	if (st == RI_ST_INTEGRITY)
		json_object_set_new(j, "cause", json_string("integrity"));
	return j;
}

int
ri_refuse_with(json_t **ans, json_t *refusal, ri_err *err, int code, const char *fmt, ...)
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
	fprintf(stderr, "ri: ALERT: %s\n", msg);
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
		if (ri_mono_ms() - mono_at_issue >= jwb)
			return;
		if (remaining_at_issue != RI_NONE &&
		    r->st->ops->remaining(r->st, kind, act_key, holder, &left) == RI_ST_OK &&
		    (left == RI_NONE || remaining_at_issue - left >= jwb))
			return;
		ri_sleep_ms(jwb < 20 ? jwb : 20);
	}
}

int
ri_read_back(struct ri *r, const char *inv_id, const char *action_ref,
    char event_id[RI_ID_LEN + 1], bool *found)
{
	struct ri_inv inv;
	int rc;

	*found = false;
	if ((rc = ri_inv_read(r, inv_id, &inv)) != RI_ST_OK)
		return rc;
	for (size_t i = inv.all.n; i-- > 0;) {
		const struct ri_record *rec = &inv.all.v[i];
		if ((action_ref != NULL && strcmp(rec->action_ref, action_ref) == 0) ||
		    (action_ref == NULL && rec->role == RI_ROLE_CLOSING)) {
			snprintf(event_id, RI_ID_LEN + 1, "%s", rec->event_id);
			*found = true;
			break;
		}
	}
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
		*ans = json_pack("{s:s}", "refused", "journal-unavailable");
		if (rc == RI_INTEGRITY)
			json_object_set_new(*ans, "cause", json_string("integrity"));
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
