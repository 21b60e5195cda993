/* operator.c -- what still needs an operator (operator.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/findings.h"
#include "protocol/instance.h"
#include "protocol/operator.h"
#include "protocol/probe.h"

const char *
ri_needs_operator(const struct ri_config *c, const struct ri_kind *k, const struct ri_inv *inv,
    const struct ri_standing *sd, ri_ms now)
{
	if (inv->intent == NULL)
		return NULL;
	if (sd->duplicate)
		return "binding-duplicate";
	if (sd->standing != NULL)
		return sd->standing->type == RI_C_ESCALATED ? "escalated" : NULL;
	if (inv->n_closings > 0)
		return NULL;
	/* no closing: open -- an operator's only once past the examine edge */
	if (k != NULL && ri_in_flight(c, k, inv->intent->recorded_at, now))
		return NULL;
	return "open";
}

bool
ri_inv_settled(const struct ri_inv *inv, const struct ri_standing *sd, ri_ms *closed_at)
{
	(void)inv;
	if (sd->duplicate || sd->standing == NULL || sd->standing->type == RI_C_ESCALATED)
		return false;
	*closed_at = sd->standing->rec->recorded_at;
	return true;
}

int
ri_act_pending(struct ri *r, const char *kind, const char *act_key, ri_ms now, json_t **out)
{
	const struct ri_kind *k = ri_config_kind(r->cfg, kind);
	struct ri_act act;
	int st;

	*out = NULL;
	if ((st = ri_act_read(r, kind, act_key, NULL, 0, &act)) != RI_ST_OK)
		return st;
	*out = json_array();
	for (size_t i = 0; i < act.n; i++) {
		const struct ri_act_inv *e = &act.v[i];
		const char *why;
		if (e->inv.intent == NULL || !ri_intent_retained(r->cfg, e->inv.intent, now) ||
		    (why = ri_needs_operator(r->cfg, k, &e->inv, &e->sd, now)) == NULL)
			continue;
		json_array_append_new(*out, json_pack("{s:s, s:s, s:s, s:s, s:o}", "invocation_id",
		    e->inv_id, "intent_event_id", e->inv.intent->event_id, "state",
		    ri_state_name(e->sd.state), "why", why, "recorded_at",
		    ri_json_instant(e->inv.intent->recorded_at)));
	}
	ri_act_free(&act);
	return RI_ST_OK;
}

/* The disposition the shorthand flags name, moved out of the request's
 * helper fields ("_abandon", "_outcome", "_outcome_data", "_escalate"). */
static int
disposition(json_t *req, int argc, char **argv, ri_err *err)
{
	json_t *ab = json_object_get(req, "_abandon"), *oc = json_object_get(req, "_outcome");
	json_t *od = json_object_get(req, "_outcome_data"), *es = json_object_get(req, "_escalate");
	json_t *d = NULL;
	int given = (ab != NULL) + (oc != NULL) + (es != NULL);

	if (given == 0 && od == NULL && argc == 0)
		return RI_OK;
	if (given != 1 || (od != NULL && oc == NULL) || (argc > 0 && es == NULL))
		return ri_fail(err, RI_USAGE, "give exactly one of --abandon CAUSE, --outcome REF"
		    " [--outcome-data JSON], --escalate CAND...");
	if (json_object_get(req, "disposition") != NULL)
		return ri_fail(err, RI_USAGE, "--abandon, --outcome and --escalate replace --disposition;"
		    " give one or the other");
	if (ab != NULL) {
		d = json_pack("{s:{s:O}}", "abandoned", "cause", ab);
	} else if (oc != NULL) {
		json_t *data = od != NULL ? json_incref(od) : json_object();
		d = json_pack("{s:{s:O, s:o}}", "outcome", "outcome_action_ref", oc, "outcome_data", data);
	} else {
		json_t *c = json_deep_copy(es);
		for (int i = 0; i < argc; i++)
			json_array_append_new(c, json_string(argv[i]));
		d = json_pack("{s:{s:o}}", "escalated", "candidates", c);
	}
	json_object_set_new(req, "disposition", d);
	return RI_OK;
}

/* Set req's field to v, or check that the request's own value agrees. */
static int
fill_field(json_t *req, const char *field, const char *flag, const char *v, ri_err *err)
{
	const char *have = json_string_value(json_object_get(req, field));

	if (have == NULL) {
		json_object_set_new(req, field, json_string(v));
		return RI_OK;
	}
	if (strcmp(have, v) != 0)
		return ri_fail(err, RI_USAGE, "--%s %s disagrees with the invocation's own (%s)", flag, have, v);
	return RI_OK;
}

/* --invocation-id ID: the kind, the act key and the intent's event id are
 * the invocation's own (issue 44, point 8) -- whatever state it is in,
 * so that a resolution that landed is answered again (ri_resolve) */
static int
fill_from_invocation(struct ri *r, json_t *req, json_t **ans, ri_err *err)
{
	const char *id = json_string_value(json_object_get(req, "invocation_id"));
	struct ri_inv inv;
	int st, rc;

	if (id == NULL)
		return RI_OK;           /* not a string: the call's malformed request */
	if ((st = ri_inv_read(r, id, &inv)) != RI_ST_OK)
		return ri_store_code(r, st, err);
	if (inv.intent == NULL) {
		ri_inv_free(&inv);
		*ans = ri_refusal("not-known");
		return ri_fail(err, RI_NOT_KNOWN, "not-known: the journal holds no intent of invocation %s", id);
	}
	if ((rc = fill_field(req, "kind", "kind", inv.intent->kind, err)) == RI_OK &&
	    (rc = fill_field(req, "act_key", "act-key", inv.intent->act_key, err)) == RI_OK)
		rc = fill_field(req, "intent_event_id", "intent-event-id", inv.intent->event_id, err);
	ri_inv_free(&inv);
	return rc;
}

/* The newest invocation of the act whose standing closing the actor wrote
 * as an operator: a resolution that landed, to be answered again when
 * the operator re-runs the same command (ri_resolve says whether it is
 * the same).  true, and req's ids set, when there is one. */
static bool
fill_resolved_by(struct ri *r, json_t *req, const char *kind, const char *act_key)
{
	const char *actor = json_string_value(json_object_get(req, "actor_ref"));
	struct ri_act act;
	bool found = false;

	if (actor == NULL || ri_act_read(r, kind, act_key, NULL, 0, &act) != RI_ST_OK)
		return false;
	for (size_t i = act.n; i-- > 0 && !found;) {
		const struct ri_act_inv *e = &act.v[i];
		const struct ri_closing *c = e->sd.standing;
		if (e->inv.intent == NULL || e->sd.duplicate || c == NULL || !c->resolved_by ||
		    strcmp(c->rec->actor_ref, actor) != 0)
			continue;
		json_object_set_new(req, "invocation_id", json_string(e->inv_id));
		json_object_set_new(req, "intent_event_id", json_string(e->inv.intent->event_id));
		found = true;
	}
	ri_act_free(&act);
	return found;
}

int
ri_resolve_fill(struct ri *r, json_t *req, int argc, char **argv, json_t **ans, ri_err *err)
{
	const char *kind, *act_key;
	json_t *list, *inv = json_object_get(req, "invocation_id");
	ri_ms now;
	int rc, st;

	if ((rc = disposition(req, argc, argv, err)) != RI_OK)
		return rc;
	json_object_del(req, "_abandon");
	json_object_del(req, "_outcome");
	json_object_del(req, "_outcome_data");
	json_object_del(req, "_escalate");
	if (inv != NULL && json_object_get(req, "intent_event_id") != NULL)
		return RI_OK;
	if (r->st == NULL)
		return RI_OK;           /* the call answers the outage on its position */
	if (inv != NULL)
		return fill_from_invocation(r, req, ans, err);
	kind = json_string_value(json_object_get(req, "kind"));
	act_key = json_string_value(json_object_get(req, "act_key"));
	/* without the invocation, the act names what needs resolving; anything
	 * short of that is the call's own malformed request */
	if (kind == NULL || act_key == NULL)
		return RI_OK;
	if ((rc = ri_seam_now(r, &now, err)) != RI_OK)
		return rc;
	if ((st = ri_act_pending(r, kind, act_key, now, &list)) != RI_ST_OK)
		return ri_store_code(r, st, err);
	if (json_array_size(list) == 1) {
		json_t *v = json_array_get(list, 0);
		json_object_set(req, "invocation_id", json_object_get(v, "invocation_id"));
		json_object_set(req, "intent_event_id", json_object_get(v, "intent_event_id"));
		json_decref(list);
		return RI_OK;
	}
	size_t n = json_array_size(list);
	/* nothing pending: this operator's own resolution, if one stands, is
	 * answered again (retry-safe, issue 44 point 8) */
	if (n == 0 && fill_resolved_by(r, req, kind, act_key)) {
		json_decref(list);
		return RI_OK;
	}
	*ans = json_pack("{s:o}", "needs_operator", list);
	if (n == 0)
		return ri_fail(err, RI_USAGE, "no invocation of (%s, %s) needs an operator: nothing to"
		    " resolve (give --invocation-id ID to name one)", kind, act_key);
	return ri_fail(err, RI_USAGE, "%zu invocations of (%s, %s) need an operator (listed on stdout):"
	    " give --invocation-id ID", n, kind, act_key);
}

struct list_ctx {
	struct ri *r;
	bool open_only;
	ri_list_emit *emit;
	void *emit_arg;
	struct ri_list_counts *counts;
	int64_t unverified, first;      /* rows whose MAC fails, the first one */
};

static json_t *
instant_or_null(ri_ms t)
{
	return t == RI_NONE ? json_null() : ri_json_instant(t);
}

static json_t *
str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static int
list_row(const struct ri_finding_row *f, void *arg)
{
	struct list_ctx *x = arg;
	ri_ms closed_at = f->closed_at;

	/* an act finding stands while its act needs someone */
	if (strcmp(f->scope, "act") == 0 && f->invocation_id != NULL && x->r->st != NULL) {
		struct ri_inv inv;
		struct ri_standing sd;
		if (ri_inv_read(x->r, f->invocation_id, &inv) == RI_ST_OK) {
			ri_standing(inv.closings, inv.n_closings, &sd);
			if (!ri_inv_settled(&inv, &sd, &closed_at))
				closed_at = RI_NONE;
			ri_inv_free(&inv);
		}
	}
	x->counts->named++;
	if (x->open_only && closed_at != RI_NONE)
		return 0;
	x->counts->shown++;
	json_t *detail = f->detail ? json_loads(f->detail, 0, NULL) : NULL;
	json_t *j = json_pack("{s:s, s:s, s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:b, s:o, s:s, s:o}",
	    "finding", f->finding, "scope", f->scope, "kind", str_or_null(f->kind),
	    "act_key", str_or_null(f->act_key), "invocation_id", str_or_null(f->invocation_id),
	    "first_seen", f->first_seen, "first_seen_at", instant_or_null(f->first_seen_at),
	    "last_seen", str_or_null(f->last_seen), "last_seen_at", instant_or_null(f->last_seen_at),
	    "closed", closed_at != RI_NONE, "closed_at", instant_or_null(closed_at),
	    "run_id", f->run_id, "detail", detail ? detail : json_object());
	/* every row says whether its MAC verifies under the register's key */
	json_object_set_new(j, "verified", json_boolean(f->verified));
	/* a keyless start-gate refusal is unverified but no sign of
	 * tampering (lib/store/findings.c row_keyless): it does not fail the listing */
	if (!f->verified && !f->keyless && x->unverified++ == 0)
		x->first = f->id;
	if (x->emit != NULL)
		x->emit(j, x->emit_arg);
	json_decref(j);
	return 0;
}

int
ri_findings_list(struct ri *r, bool open_only, const char *kind, ri_list_emit *emit, void *emit_arg,
    struct ri_list_counts *counts, bool *warn, ri_err *err)
{
	struct list_ctx x = { r, open_only, emit, emit_arg, counts, 0, 0 };
	struct ri_findings *f;
	int rc;

	*warn = r->st == NULL;
	/* the register's rows are verified under a key derived from the
	 * integrity key: a row that fails is shown "verified": false, and the
	 * listing fails closed (30) */
	if ((rc = ri_instance_key(r, err)) != RI_OK ||
	    (rc = ri_findings_open(ri_findings_location(r->cfg), true, &f, err)) != RI_OK)
		return rc;
	/* the register keeps act findings; which still stand is the journal's */
	memset(counts, 0, sizeof *counts);
	rc = ri_findings_each(f, false, kind, list_row, &x, err);
	int64_t keyless = ri_findings_keyless(f);
	char where[4096];
	ri_redact(ri_findings_location(r->cfg), where, sizeof where);
	ri_findings_close(f);
	/* issue 40 point 7: past its bound the keyless exception excuses none */
	if (keyless > RI_FINDINGS_KEYLESS_MAX)
		ri_diag("findings register %s: %lld unauthenticated start-refused rows, past the bound of %d a key"
		    " outage leaves: none is excused -- forged, or the key was unreadable for long; investigate",
		    where, (long long)keyless, RI_FINDINGS_KEYLESS_MAX);
	if (rc == RI_OK && x.unverified > 0)
		rc = ri_fail(err, RI_INTEGRITY, "findings register %s: %lld rows fail their MAC (first: row %lld):"
		    " written where the key could not be read, forged or altered -- never evidence", where, (long long)x.unverified,
		    (long long)x.first);
	return rc;
}

/* One disposition the store's answer supports: its name, why, and, when
 * the store's answer determines it whole, "with": the disposition as
 * ri-resolve takes it (--disposition JSON). */
static void
support(json_t *list, const char *name, json_t *with, const char *why)
{
	json_t *e = json_pack("{s:s, s:s}", "disposition", name, "why", why);

	if (with != NULL)
		json_object_set_new(e, "with", with);
	json_array_append_new(list, e);
}

int
ri_resolve_probe(struct ri *r, json_t *req, json_t **ans, ri_err *err)
{
	const char *kind = json_string_value(json_object_get(req, "kind"));
	const char *act_key = json_string_value(json_object_get(req, "act_key"));
	const char *id = json_string_value(json_object_get(req, "invocation_id"));
	const struct ri_kind *k;
	struct ri_inv inv;
	struct ri_standing sd;
	struct ri_probe p = { 0 };
	json_t *probe, *supports;
	const char *needs;
	ri_ms now;
	int st, rc;

	*ans = NULL;
	if (json_object_get(req, "disposition") != NULL)
		return ri_fail(err, RI_USAGE, "--probe writes nothing: give no disposition");
	if (kind == NULL || act_key == NULL || id == NULL)
		return ri_fail(err, RI_USAGE, "--probe: name the invocation (--invocation-id ID), or an act"
		    " with one invocation that needs an operator (--kind K --act-key KEY)");
	if ((k = ri_config_kind(r->cfg, kind)) == NULL)
		return ri_fail(err, RI_CONFIG, "kind %s is not bound: there is no probe to ask", kind);
	if (r->st == NULL)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "%s", r->unopened.msg);
	if ((rc = ri_seam_now(r, &now, err)) != RI_OK)
		return rc;
	if ((st = ri_inv_read(r, id, &inv)) != RI_ST_OK)
		return ri_store_code(r, st, err);
	if (inv.intent == NULL) {
		ri_inv_free(&inv);
		*ans = ri_refusal("not-known");
		return ri_fail(err, RI_NOT_KNOWN, "not-known: the journal holds no intent of invocation %s", id);
	}
	ri_standing(inv.closings, inv.n_closings, &sd);
	needs = ri_needs_operator(r->cfg, k, &inv, &sd, now);
	supports = json_array();
	if (inv.intent->payload == NULL) {
		/* resolve 10-12: a purged intent cannot be probed, nor resolved */
		probe = json_pack("{s:s, s:s}", "answer", "unavailable", "why",
		    "the intent's payload was destroyed by retention");
	} else {
		struct ri_prober *pr = ri_prober_new(r->cfg);
		(void)ri_probe_ask(pr, k, act_key, inv.intent->payload, &p);
		ri_prober_free(pr);
		probe = json_pack("{s:s}", "answer", ri_probe_name(p.answer));
		switch (p.answer) {
		case RI_PROBE_COMMITTED:
			json_object_set_new(probe, "outcome_action_ref", json_string(p.outcome_action_ref));
			json_object_set(probe, "outcome_data", p.outcome_data);
			support(supports, "outcome", json_pack("{s:{s:s, s:O}}", "outcome", "outcome_action_ref",
			    p.outcome_action_ref, "outcome_data", p.outcome_data),
			    "the store holds the act: record what it re-derived");
			break;
		case RI_PROBE_NOT_COMMITTED:
			if (ri_in_flight(r->cfg, k, inv.intent->recorded_at, now))
				break;  /* resolve 18-19: too young to abandon */
			support(supports, "abandoned", json_pack("{s:{s:s}}", "abandoned", "cause",
			    "the store holds no such act (ri-resolve --probe: not-committed)"),
			    k->commit_fence ? "the store holds no such act, and the commit fence keeps it from"
			    " landing later" : "the store holds no such act now; with no commit fence, abandon"
			    " only once you know the job can no longer write it");
			break;
		case RI_PROBE_UNDECIDABLE:
			json_object_set(probe, "candidates", p.candidates);
			support(supports, "outcome", NULL, "the store holds more than one candidate: once you"
			    " know which is the act, record it with --outcome and data naming it");
			support(supports, "escalated", json_pack("{s:{s:O}}", "escalated", "candidates",
			    p.candidates), "leave it to a later look, naming the candidates");
			break;
		default:
			json_object_set_new(probe, "why", json_string(p.why));
			break;  /* nothing is supported while the store cannot be read */
		}
	}
	*ans = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s?, s:o, s:o}", "kind", kind, "act_key", act_key,
	    "invocation_id", id, "intent_event_id", inv.intent->event_id, "state", ri_state_name(sd.state),
	    "needs_operator", needs, "probe", probe, "supports", supports);
	if (needs == NULL)
		json_object_set_new(*ans, "needs_operator", json_null());
	ri_probe_clear(&p);
	ri_inv_free(&inv);
	return RI_OK;
}
