/*
 * judge.c -- ri-audit's judgement of an invocation, from every record of
 * it, and of each record naming an invocation, against its intent read
 * back; the traversal (audit.c) hands each row over.  An invocation is
 * judged from the rows the stream carries once its last has passed, or
 * read again where the stream cannot stand in ("invocations judged from
 * the stream", below).  Memory holds the traversal's recent intents and
 * the invocations still waiting for their rows -- never the journal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit_int.h"
#include "store/findings.h"
#include "util/nc.h"
#include "protocol/operator.h"
#include "protocol/probe.h"
#include "protocol/proto.h"

/*
 * The traversal's recent intents, by event id, so that Check 1.2's
 * read_record(intent event id) of a closing that follows its intent --
 * nearly every closing -- is answered from the record the traversal
 * already verified in the same snapshot, not by another read of it (issue
 * 15).  Direct-mapped: an intent pushed out by a later one is read again,
 * as every intent was before.  A hit is exactly the row read_record would
 * return: event ids are unique, and the traversal saw this one.
 */
#define MEMO_SLOTS 16384                /* a power of two */

struct intent_memo {
	struct memo_slot {
		char event_id[RI_ID_LEN + 1];   /* "": empty */
		int64_t seq;
		bool purged;
		char *invocation_id, *kind, *act_key;
	} slot[MEMO_SLOTS];
};

/* FNV-1a of an id: the slot of the memo and of the waiting room */
static uint64_t
id_hash(const char *id)
{
	uint64_t h = 1469598103934665603ull;

	for (const char *p = id; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h;
}

static struct memo_slot *
memo_slot(struct intent_memo *m, const char *event_id)
{
	return &m->slot[id_hash(event_id) & (MEMO_SLOTS - 1)];
}

static void
memo_clear_slot(struct memo_slot *sl)
{
	free(sl->invocation_id);
	free(sl->kind);
	free(sl->act_key);
	memset(sl, 0, sizeof *sl);
}

/* The memo, for one traversal (ri_audit frees it: memo_free). */
void
memo_new(struct audit *a)
{
	a->memo = ri_xcalloc(1, sizeof *a->memo);
}

void
memo_put(struct audit *a, const struct ri_record *rec)
{
	struct memo_slot *sl;

	if (a->memo == NULL || rec->invocation_id == NULL)
		return;
	sl = memo_slot(a->memo, rec->event_id);
	memo_clear_slot(sl);
	snprintf(sl->event_id, sizeof sl->event_id, "%s", rec->event_id);
	sl->seq = rec->seq;
	sl->purged = rec->purged;
	sl->invocation_id = ri_strdup(rec->invocation_id);
	sl->kind = ri_strdup(rec->kind);
	sl->act_key = ri_strdup(rec->act_key);
}

void
memo_free(struct audit *a)
{
	if (a->memo == NULL)
		return;
	for (size_t i = 0; i < MEMO_SLOTS; i++)
		memo_clear_slot(&a->memo->slot[i]);
	free(a->memo);
	a->memo = NULL;
}

/* Closure latency buckets, as fractions of the compensation window: the
 * last bounded bucket ends at the window itself (Check 3.1's bound less
 * the allowance), and one more holds what closed later. */
static const int64_t latency_div[] = { 100, 10, 4, 2, 1 };
#define N_LATENCY (sizeof latency_div / sizeof latency_div[0] + 1)

static json_t *
latency_of(struct audit *a, const char *kind)
{
	json_t *l = json_object_get(a->latency, kind), *b;

	if (l != NULL)
		return l;
	b = json_array();
	for (size_t i = 0; i < N_LATENCY; i++) {
		json_t *le = i + 1 < N_LATENCY ? json_integer(a->c->compensation_window / latency_div[i]) :
		    json_null();
		json_array_append_new(b, json_pack("{s:o, s:I}", "le_ms", le, "count", (json_int_t)0));
	}
	l = json_pack("{s:s, s:I, s:o, s:I, s:I, s:I, s:I}", "kind", kind, "compensation_window_ms",
	    (json_int_t)a->c->compensation_window, "buckets", b, "closed", (json_int_t)0, "open",
	    (json_int_t)0, "over_window", (json_int_t)0, "max_ms", (json_int_t)0);
	json_object_set_new(a->latency, kind, l);
	return l;
}

void
bump(json_t *o, const char *field, int64_t by)
{
	json_object_set_new(o, field, json_integer(json_integer_value(json_object_get(o, field)) + by));
}

/* The first closing's latency (what Check 3.1 reads), or one more open. */
static void
count_latency(struct audit *a, const struct ri_inv *inv)
{
	json_t *l = latency_of(a, inv->intent->kind);
	const struct ri_record *first = inv->n_closings ? inv->closings[0].rec : NULL;

	if (first == NULL) {
		bump(l, "open", 1);
		return;
	}
	int64_t ms = first->recorded_at - inv->intent->recorded_at;
	size_t i = 0;
	while (i + 1 < N_LATENCY && ms > a->c->compensation_window / latency_div[i])
		i++;
	bump(json_array_get(json_object_get(l, "buckets"), i), "count", 1);
	bump(l, "closed", 1);
	if (ms > a->c->compensation_window)
		bump(l, "over_window", 1);
	if (ms > json_integer_value(json_object_get(l, "max_ms")))
		json_object_set_new(l, "max_ms", json_integer(ms));
}

/* Check 3.3: the intent's window overlaps a span of journal-unavailable,
 * or of store-unavailable for its kind -- and never the healthy gap
 * between two spans (3.4), since each span is judged alone. */
static bool
exempt_by_span(struct audit *a, const char *kind, ri_ms from, ri_ms to)
{
	for (size_t i = 0; i < a->n_spans; i++) {
		const struct span *s = &a->spans[i];
		if (strcmp(s->finding, "store-unavailable") == 0 && (s->kind == NULL || strcmp(s->kind, kind) != 0))
			continue;
		if (s->start <= to && s->end >= from)
			return true;
	}
	return false;
}

struct closure_at_risk {
	const char *inv;
	ri_ms first_seen_at;
	bool found;
};

static int
find_at_risk(const struct ri_finding_row *f, void *arg)
{
	struct closure_at_risk *c = arg;

	if (f->verified && strcmp(f->finding, "closure-at-risk") == 0 && f->invocation_id != NULL &&
	    strcmp(f->invocation_id, c->inv) == 0) {
		c->found = true;
		c->first_seen_at = f->first_seen_at;
		return 1;
	}
	return 0;
}

/* ---- the invocation, judged whole ---- */

/* Checks 1-3 quantify over intents inside the horizon, Check 7.1-7.2 and
 * the retention drop exclude the rest: an intent is judged until its
 * retention actually ends (the record's own retention_until, when placed),
 * so a violation does not stop failing before its payload can go. */
static bool
inside_horizon(struct audit *a, const struct ri_record *intent)
{
	return ri_intent_retained(a->c, intent, a->now);
}

/* Is actor the service identity of the binding rec was written under (a
 * kind never bound: any actor the registry calls a service)? */
static bool
is_service_at(struct audit *a, const struct ri_record *rec, const char *actor)
{
	const struct ri_kind *k = bound(a, rec);

	return k != NULL ? actor != NULL && k->service_actor != NULL && strcmp(actor, k->service_actor) == 0 :
	    service_actor(a, actor);
}

/* Is c named, in a valid supersedes, by a closing of type t? */
static bool
named_by(const struct ri_inv *inv, const struct ri_closing *c, enum ri_closing_type t)
{
	for (size_t j = 0; j < inv->n_closings; j++) {
		const struct ri_closing *d = &inv->closings[j];
		if (d->type != t || d->malformed)
			continue;
		for (size_t k = 0; k < d->n_names; k++)
			if (strcmp(d->names[k], c->rec->event_id) == 0)
				return true;
	}
	return false;
}

/* Check 2.5: exactly one of the three outcome shapes. */
static bool
outcome_shape(struct audit *a, const struct ri_kind *k, const struct ri_inv *inv, const struct ri_closing *c,
    char *why, size_t n)
{
	const struct ri_record *o = c->rec, *in = inv->intent;
	const char *resolved_by = pstr(o, "resolved_by");

	if (!c->recovery) {
		if (resolved_by != NULL || pstr(o, "acting_actor_ref") != NULL) {
			snprintf(why, n, "recovery absent, yet it carries resolved_by or acting_actor_ref");
			return false;
		}
		if (!streq(o->actor_ref, in->actor_ref)) {
			snprintf(why, n, "recovery absent but attested by %s, not the intent's actor %s",
			    o->actor_ref, in->actor_ref);
			return false;
		}
		return true;
	}
	if (resolved_by != NULL) {
		if (!streq(o->actor_ref, resolved_by)) {
			snprintf(why, n, "an operator's outcome attested by %s, not by resolved_by %s", o->actor_ref,
			    resolved_by);
			return false;
		}
		return true;
	}
	if (k != NULL ? k->service_actor == NULL || !streq(o->actor_ref, k->service_actor) :
	    !service_actor(a, o->actor_ref)) {
		snprintf(why, n, "a recovered outcome attested by %s, not by the service identity", o->actor_ref);
		return false;
	}
	for (size_t i = 0; i < inv->n_recovery; i++)
		if (inv->recovery[i]->seq < o->seq)
			return true;
	snprintf(why, n, "a recovered outcome with no recovery_intended before it (Invariant 5.1)");
	return false;
}

/* Does an undecidable answer's candidate name the operator's outcome data
 * (a candidate equal to the data, or to one of its top-level values)? */
static bool
candidate_names(json_t *cands, json_t *data)
{
	json_t *c, *v;
	const char *k;
	size_t i;

	json_array_foreach(cands, i, c) {
		if (json_equal(c, data))
			return true;
		json_object_foreach(data, k, v)
			if (json_equal(c, v))
				return true;
	}
	return false;
}

/*
 * Check 6: the store's word against what stands (the lifecycle issue's
 * ruling, issue 41 point 2).  6.1 every outcome whose recovery is true, the
 * operator's included; for an operator's, undecidable corroborates it when
 * a candidate names its data (the operator chose among what the store
 * offered).  6.3 every abandonment an outcome does not name, the
 * operator's included (the label says EVERY; the state projection's prose
 * that calls the operator's exempt is not a rule).  6.5 the escalations
 * that STAND: one an operator
 * superseded is judged through the closing that superseded it, since the
 * store may lawfully have been corrected since.
 */
static void
probe_checks(struct audit *a, const struct ri_kind *k, const struct ri_inv *inv,
    const struct ri_standing *sd)
{
	const struct ri_record *in = inv->intent;
	struct ri_probe p;
	bool probed = false;

	for (size_t i = 0; i < inv->n_closings; i++) {
		const struct ri_closing *c = &inv->closings[i];
		/* Check 6.3: an abandonment an outcome names is the corrected-false
		 * shape, not judged */
		bool superseded_by_outcome = named_by(inv, c, RI_C_OUTCOME);

		if (!((c->type == RI_C_OUTCOME && c->recovery) ||
		    (c->type == RI_C_ABANDONED && !superseded_by_outcome) ||
		    (c->type == RI_C_ESCALATED && c->head) ||
		    (c->type == RI_C_ESCALATED && RI_NC(RI_NC_AUDIT_JUDGES_SUPERSEDED))))  /* negative control: superseded ones too */
			continue;
		if (!probed) {
			/* the probe is today's config's (the store's reader, not a
			 * binding): a kind the config no longer names has none */
			const struct ri_kind *pk = ri_config_kind(a->c, in->kind);
			if (pk == NULL) {
				note(a, c->type == RI_C_OUTCOME ? "6.1" : c->type == RI_C_ABANDONED ? "6.3" : "6.5",
				    "no probe: the config no longer binds the kind (not applicable)");
				return;
			}
			ri_probe_ask(a->probers, pk, in->act_key, in->payload, &p);
			probed = true;
		}
		const char *id = c->type == RI_C_OUTCOME ? "6.1" : c->type == RI_C_ABANDONED ? "6.3" : "6.5";
		if (p.answer == RI_PROBE_UNAVAILABLE) {
			/* Check 6.2: unavailable is not applicable, never failed */
			note(a, id, "probe unavailable (not applicable)");
			continue;
		}
		note(a, id, "judged by the probe");
		if (c->type == RI_C_OUTCOME) {
			json_t *data = json_object_get(c->rec->payload, "data");
			bool committed = p.answer == RI_PROBE_COMMITTED && streq(p.outcome_action_ref, c->rec->action_ref) &&
			    json_equal(p.outcome_data, data);
			/* negative control: the operator's choice never counts */
			bool chosen = !RI_NC(RI_NC_AUDIT_NO_OPERATOR_CHOICE) && c->resolved_by &&
			    p.answer == RI_PROBE_UNDECIDABLE && candidate_names(p.candidates, data);
			if (!committed && !chosen)
				fail(a, "6.1", in->invocation_id, c->rec->event_id, NULL,
				    "the store does not corroborate the recovered outcome (probe: %s)",
				    ri_probe_name(p.answer));
			else if (chosen)
				note(a, "6.1", "an operator's outcome among the store's candidates (undecidable)");
		} else if (c->type == RI_C_ABANDONED) {
			if (!(p.answer == RI_PROBE_NOT_COMMITTED ||
			    (p.answer == RI_PROBE_UNDECIDABLE && k->pairing_datum == RI_PAIR_NONE)))
				fail(a, "6.3", in->invocation_id, c->rec->event_id, NULL,
				    "abandoned, but the store answers %s", ri_probe_name(p.answer));
		} else {
			json_t *cands = json_object_get(c->rec->payload, "store_candidates"), *v, *w;
			size_t x, y;
			if (!json_is_array(cands))
				continue;       /* past the cap: count and range, nothing to match */
			json_array_foreach(cands, x, v) {
				bool match = false;
				if (p.answer == RI_PROBE_UNDECIDABLE)
					json_array_foreach(p.candidates, y, w)
						match = match || json_equal(v, w);
				if (!match)
					fail(a, "6.5", in->invocation_id, c->rec->event_id, NULL,
					    "candidate %s matches no store record of the intent (probe: %s)",
					    json_string_value(v), ri_probe_name(p.answer));
			}
		}
	}
	(void)sd;
	if (probed)
		ri_probe_clear(&p);
}

/* Term caller kind: a service actor is any kind's service identity, or
 * an actor the registry's own records registered as a service. */
static bool
resolver_is_service(struct audit *a, const char *who)
{
	json_t *e;

	if (who == NULL)
		return false;
	for (size_t i = 0; i < a->c->n_kinds; i++)
		if (streq(a->c->kinds[i].service_actor, who))
			return true;
	return (e = json_object_get(a->actors, who)) != NULL && json_is_true(json_object_get(e, "service"));
}

/* One invocation, judged from every record of it (inv, freed here), at
 * the intent the stream met (intent_row). */
static void
judge_inv(struct audit *a, const struct ri_record *intent_row, struct ri_inv inv)
{
	/* the intent's own binding judges what is the intent's: its horizon,
	 * its examine edge, its window, its kind's report-only branch */
	const struct ri_kind *k = bound(a, intent_row);
	struct ri_standing sd;
	char why[512];

	const struct ri_record *in = inv.intent;
	if (in == NULL || strcmp(in->event_id, intent_row->event_id) != 0) {
		ri_inv_free(&inv);
		return;         /* a second intent of one id: judged at the first (2.2) */
	}
	/* Check 2.2 */
	if (inv.n_intents > 1)
		fail(a, "2.2", in->invocation_id, in->event_id, NULL, "%zu intents carry this invocation id",
		    inv.n_intents);
	/* Check 7.1-7.2: a destroyed intent is out of every check */
	if (in->purged) {
		a->excluded++;
		ri_inv_free(&inv);
		return;
	}
	bool horizon = inside_horizon(a, in);
	if (!horizon) {
		/* the retention drop: an intent whose retention ended is out of
		 * every check, purged or not (Check 7.1, the closings issue) */
		a->excluded++;
		ri_inv_free(&inv);
		return;
	}
	ri_standing(inv.closings, inv.n_closings, &sd);
	/* the service identity: the binding's of each record's time; for a
	 * kind never bound, any actor the registry calls a service */

	for (size_t i = 0; i < inv.n_closings; i++) {
		const struct ri_closing *c = &inv.closings[i];
		/* Check 1.1: follows its intent, under the actor it names */
		if (c->type == RI_C_OUTCOME) {
			const char *named = c->recovery ? pstr(c->rec, "acting_actor_ref") : c->rec->actor_ref;
			if (c->rec->seq < in->seq || !streq(named, in->actor_ref))
				fail(a, "1.1", in->invocation_id, in->event_id, c->rec->event_id,
				    "the outcome names actor %s but its intent was attested by %s",
				    named ? named : "(none)", in->actor_ref);
			/* Check 2.5-2.6, by the binding of the outcome's own time */
			if (!outcome_shape(a, bound(a, c->rec), &inv, c, why, sizeof why))
				fail(a, "2.5", in->invocation_id, c->rec->event_id, NULL, "matches no outcome shape: %s",
				    why);
		}
		/* Check 6.4, by the binding of the abandonment's own time (a kind
		 * never bound declares no fence to judge by) */
		const struct ri_kind *ck = bound(a, c->rec);
		if (ck != NULL && c->type == RI_C_ABANDONED && !c->resolved_by && !ck->commit_fence)
			fail(a, "6.4", in->invocation_id, c->rec->event_id, NULL,
			    "a sweep abandonment in kind %s, which declared no commit fence when it was written"
			    " (commit 14)", ck->name);
		/* the closings issue's ruling: a supersedes naming anything but an
		 * earlier closing of this invocation is malformed (Check 8.1.8) */
		if (c->malformed)
			fail(a, "8.1.8", in->invocation_id, c->rec->event_id, NULL,
			    "its supersedes names no earlier closing of this invocation");
	}
	/* Check 5.1: every service-identity record names an intent attested
	 * by another actor */
	for (size_t i = 0; i < inv.all.n; i++) {
		const struct ri_record *rec = &inv.all.v[i];
		if (rec != in && is_service_at(a, rec, rec->actor_ref) && streq(in->actor_ref, rec->actor_ref))
			fail(a, "5.1", in->invocation_id, rec->event_id, in->event_id,
			    "the service identity closed an intent it attested itself");
	}
	if (is_service_at(a, in, in->actor_ref))
		fail(a, "5.1", in->invocation_id, in->event_id, NULL,
		    "the service identity %s opened an intent (open step 1.2)", in->actor_ref);
	/* the report: what still needs an operator (operator.h's reading) */
	const char *needs = ri_needs_operator(a->c, k, &inv, &sd, a->now);
	if (needs != NULL)
		json_array_append_new(a->needs, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "kind",
		    in->kind, "act_key", in->act_key, "invocation_id", in->invocation_id, "intent_event_id",
		    in->event_id, "why", needs, "state", ri_state_name(sd.state), "recorded_at",
		    ri_json_instant(in->recorded_at)));
	/* Check 2.1, 2.4: the closings key, read through Which closing stands:
	 * two or more chains */
	if (sd.duplicate) {
		const char *h1 = NULL, *h2 = NULL;
		for (size_t i = 0; i < inv.n_closings; i++)
			if (inv.closings[i].head) {
				if (h1 == NULL)
					h1 = inv.closings[i].rec->event_id;
				else if (h2 == NULL)
					h2 = inv.closings[i].rec->event_id;
			}
		fail(a, "2.1", in->invocation_id, h1, h2, "%zu chains of closings stand on this invocation",
		    sd.n_heads);
	}
	/* Check 3.2: a kind the bindings no longer serve -- today's: the sweep
	 * can close none of its acts (Binding 4-5) -- is exempt from Check 3,
	 * and from nothing else */
	if (k == NULL || ri_config_kind(a->c, in->kind) == NULL) {
		note(a, "3.1", "exempt: unbound kind (Check 3.2)");
		ri_inv_free(&inv);
		return;
	}
	/* Term aged: an OPEN intent past its examine edge -- one its own
	 * invocation closed in time never was */
	count_latency(a, &inv);
	bool aged = !ri_in_flight(a->c, k, in->recorded_at, a->now);
	ri_ms edge = ri_examine_edge(a->c, k, in->recorded_at);
	const struct ri_record *first = inv.n_closings ? inv.closings[0].rec : NULL;
	bool became_aged = first ? first->recorded_at >= edge : aged;
	if (became_aged) {
		ri_ms due = in->recorded_at + a->c->compensation_window + a->c->clock_offset_allowance;
		if (k->service_actor != NULL) {
			/* Check 3.1 */
			bool late = first ? first->recorded_at > due : a->now > due;
			if (late) {
				if (exempt_by_span(a, k->name, in->recorded_at, in->recorded_at + a->c->compensation_window))
					note(a, "3.1", "exempt: window overlaps an outage span (Check 3.3)");
				else
					fail(a, "3.1", in->invocation_id, in->event_id, first ? first->event_id : NULL,
					    first ? "closed after the compensation window" :
					    "aged and unclosed past the compensation window");
			}
		} else if (a->now > due) {
			/* Check 3.5, Invariant 4.6: report-only -- every intent that
			 * aged was surfaced as closure-at-risk within the window */
			struct closure_at_risk car = { .inv = in->invocation_id };
			ri_err e;
			if (a->reg != NULL && ri_findings_each(a->reg, false, k->name, find_at_risk, &car, &e) != RI_OK) {
				incomplete(a, "3.5", "the findings register could not be read: %s", e.msg);
				ri_inv_free(&inv);
				return;
			}
			if (!car.found || car.first_seen_at > due)
				fail(a, "3.5", in->invocation_id, in->event_id, NULL,
				    car.found ? "surfaced as closure-at-risk only after the window" :
				    "never surfaced as closure-at-risk (report-only kind)");
		}
	}
	if (a->o->probe)
		probe_checks(a, k, &inv, &sd);
	ri_inv_free(&inv);
}

/* The invocation read from the journal, in the traversal's snapshot. */
static void
judge_invocation(struct audit *a, const struct ri_record *intent_row)
{
	const struct ri_record *cur = a->cur;
	struct ri_inv inv;

	int st;

	a->cur = intent_row;
	if ((st = ri_inv_read_trusted(a->r, intent_row->invocation_id, &inv)) == RI_ST_OK)
		judge_inv(a, intent_row, inv);
	else if (st == RI_ST_INTEGRITY || st == RI_ST_NOT_KNOWN)
		fail(a, "1.1", intent_row->invocation_id, intent_row->event_id, NULL,
		    "the invocation cannot be read: %s", a->r->st->ops->error(a->r->st)->msg);
	else
		/* a read refused or timed out judges nothing: what the whole
		 * invocation decides is incomplete, never passed */
		for (const char *const *id = (const char *const[]){ "1.1", "2.1", "2.2", "2.5", "3.1", "3.5", "5.1",
		    NULL }; *id; id++)
			incomplete(a, *id, "invocation %s could not be read: %s", intent_row->invocation_id,
			    a->r->st->ops->error(a->r->st)->msg);
	a->cur = cur;
}

/* ---- invocations judged from the stream ---- */

/*
 * An invocation is judged from every record of it.  Reading them again at
 * its intent (ri_inv_read_trusted) cost the audit a third of its time
 * (issue 15); instead, at the intent, the invocation index says where its
 * records lie (store.h inv_span: first, last, how many), the stream's own
 * rows of it are gathered as they pass, and it is judged once the last
 * has -- the same rows, in the same order, as the read returns, verified
 * by this traversal.  The read is still what judges it when the stream
 * cannot stand in for it, inside the traversal's snapshot: a row of the
 * invocation before its intent, a row of it too malformed to carry its
 * payload (RI_P_SHAPE), rows that disagree with the index, more than
 * PENDING_RECS rows, more than PENDING_MAX invocations or PENDING_BYTES
 * waiting (the oldest is read and judged).  An invocation still waiting
 * when the stream ends was promised rows by the index that no row of the
 * journal is: Check 8.1.1 fails, and it is judged from the rows there are.
 */
#define PENDING_MAX 4096
#define PENDING_SLOTS 8192              /* a power of two, above PENDING_MAX */
#define PENDING_RECS 64
/* what a gathered row holds, about: its parsed payload at 4x the text,
 * 1 KiB for jansson's values and the row's own (an ri-audit waiting on
 * 4,000 one-row invocations measured 3.3 KiB a row, 13 MiB above its
 * baseline) */
#define PENDING_BYTES (8u << 20)
#define ROW_BYTES(rec) (1024 + 4 * (rec)->payload_bytes)

struct pending {
	int64_t last, want;             /* the index's span: last seq, row count */
	struct ri_records got;          /* the stream's rows of it, ascending */
	size_t cap, bytes;
	struct pending *chain, *older, *newer;
};

struct pendings {
	struct pending *slot[PENDING_SLOTS];
	struct pending *oldest, *newest;
	size_t n, bytes;
};

static struct pending **
pending_at(struct pendings *ps, const char *inv)
{
	struct pending **pp;

	for (pp = &ps->slot[id_hash(inv) & (PENDING_SLOTS - 1)]; *pp != NULL; pp = &(*pp)->chain)
		if (strcmp((*pp)->got.v[0].invocation_id, inv) == 0)
			break;
	return pp;
}

/* A copy of a row the stream carried: never RI_P_SHAPE (pending_row reads
 * such an invocation instead), so each of its header strings is there. */
static void
pending_push(struct pendings *ps, struct pending *p, const struct ri_record *rec)
{
	struct ri_record *c;
	size_t bytes = ROW_BYTES(rec) + strlen(rec->invocation_id) + strlen(rec->action_ref) + strlen(rec->kind) +
	    strlen(rec->act_key) + strlen(rec->actor_ref);

	if (p->got.n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 2;
		if ((p->got.v = realloc(p->got.v, p->cap * sizeof *p->got.v)) == NULL)
			abort();
	}
	c = &p->got.v[p->got.n++];
	*c = *rec;
	c->action_ref = ri_strdup(rec->action_ref);
	c->kind = ri_strdup(rec->kind);
	c->act_key = ri_strdup(rec->act_key);
	c->invocation_id = ri_strdup(rec->invocation_id);
	c->actor_ref = ri_strdup(rec->actor_ref);
	c->payload = json_incref(rec->payload);
	p->bytes += bytes;
	ps->bytes += bytes;
}

/* Out of the table, and its rows handed to the caller (got). */
static struct ri_records
pending_take(struct pendings *ps, struct pending *p)
{
	struct pending **pp = pending_at(ps, p->got.v[0].invocation_id);
	struct ri_records got = p->got;

	*pp = p->chain;
	if (p->older != NULL)
		p->older->newer = p->newer;
	else
		ps->oldest = p->newer;
	if (p->newer != NULL)
		p->newer->older = p->older;
	else
		ps->newest = p->older;
	ps->n--;
	ps->bytes -= p->bytes;
	free(p);
	return got;
}

/* Judge a waiting invocation: from its gathered rows when they are all of
 * it (complete), else by reading it. */
static void
pending_judge(struct audit *a, struct pending *p, bool complete)
{
	const struct ri_record *cur = a->cur;
	struct ri_records got = pending_take(a->pending, p);
	struct ri_inv inv = { .all = got };

	if (RI_NC(RI_NC_AUDIT_JUDGES_PART))
		complete = true;        /* negative control: judge whatever rows were gathered */
	if (!complete) {
		judge_invocation(a, &got.v[0]);
		ri_records_clear(&got);
		return;
	}
	for (size_t i = 0; i < inv.all.n; i++)
		ri_inv_add(&inv, &inv.all.v[i]);
	a->cur = &inv.all.v[0];
	judge_inv(a, &inv.all.v[0], inv);
	a->cur = cur;
}

/* The waiting room, for one traversal: only where the store keeps the
 * invocation index (inv_span); without it each intent is read
 * (pending_intent). */
void
pending_begin(struct audit *a)
{
	if (a->r->st->ops->inv_span != NULL)
		a->pending = ri_xcalloc(1, sizeof *a->pending);
}

/* A row naming an invocation that waits: gathered, and the invocation
 * judged once it is whole.  False: none waits for it. */
bool
pending_row(struct audit *a, const struct ri_record *rec, unsigned problems)
{
	struct pending *p;

	if (a->pending == NULL || (p = *pending_at(a->pending, rec->invocation_id)) == NULL)
		return false;
	if (problems & RI_P_SHAPE) {
		pending_judge(a, p, false);
		return true;
	}
	pending_push(a->pending, p, rec);
	if (rec->seq >= p->last)
		pending_judge(a, p, rec->seq == p->last && (int64_t)p->got.n == p->want);
	else if (p->got.n >= PENDING_RECS)
		pending_judge(a, p, false);
	return true;
}

/* The intent of an invocation no row waits for: judged now if it is the
 * whole invocation, else waiting for the rest of it. */
void
pending_intent(struct audit *a, const struct ri_record *rec)
{
	struct pendings *ps = a->pending;
	struct pending *p, **pp;
	int64_t first, last, n;

	if (ps == NULL || a->r->st->ops->inv_span(a->r->st, rec->invocation_id, &first, &last, &n) != RI_ST_OK ||
	    first != rec->seq || n < 1) {
		judge_invocation(a, rec);
		return;
	}
	pp = pending_at(ps, rec->invocation_id);        /* the end of its chain: none waits */
	p = ri_xcalloc(1, sizeof *p);
	p->last = last;
	p->want = n;
	pending_push(ps, p, rec);
	*pp = p;
	p->older = ps->newest;
	if (ps->newest != NULL)
		ps->newest->newer = p;
	else
		ps->oldest = p;
	ps->newest = p;
	ps->n++;
	if (last == rec->seq) {
		pending_judge(a, p, n == 1);
		return;
	}
	while (ps->oldest != NULL && (ps->n > PENDING_MAX || ps->bytes > PENDING_BYTES))
		pending_judge(a, ps->oldest, false);
}

/* The end of the stream: what still waits was promised rows no row of the
 * journal is -- or, when the traversal failed, is dropped unjudged. */
void
pending_end(struct audit *a, bool judge)
{
	struct pending *p;

	if (a->pending == NULL)
		return;
	while ((p = a->pending->oldest) != NULL) {
		if (judge) {
			const struct ri_record *in = &p->got.v[0];
			a->cur = in;
			if (!RI_NC(RI_NC_AUDIT_WAITING_UNREPORTED))
				fail(a, "8.1.1", in->invocation_id, in->event_id, NULL,
				    "the invocation index names %lld rows of this invocation, up to seq %lld, and the"
				    " traversal carried %zu: the index was altered, or rows hidden", (long long)p->want,
				    (long long)p->last, p->got.n);
			a->cur = NULL;
			pending_judge(a, p, true);
		} else {
			struct ri_records got = pending_take(a->pending, p);
			ri_records_clear(&got);
		}
	}
	free(a->pending);
	a->pending = NULL;
}

/* ---- records naming an invocation: paired by read_record ---- */

/* read_record(event id) for an intent, answered from the traversal's own
 * snapshot, whose pass already verified the row: the record's header |
 * not-known | purged. */
static int
intent_of(struct audit *a, const char *iev, struct ri_record *out, bool *memo)
{
	struct memo_slot *sl = a->memo ? memo_slot(a->memo, iev) : NULL;
	int st;

	*memo = sl != NULL && strcmp(sl->event_id, iev) == 0;
	if (*memo) {
		/* the header fields judge_named compares, borrowed from the memo */
		memset(out, 0, sizeof *out);
		snprintf(out->event_id, sizeof out->event_id, "%s", sl->event_id);
		out->seq = sl->seq;
		out->role = RI_ROLE_INTENT;
		out->purged = sl->purged;
		out->invocation_id = sl->invocation_id;
		out->kind = sl->kind;
		out->act_key = sl->act_key;
		return sl->purged ? RI_ST_PURGED : RI_ST_OK;
	}
	st = a->r->st->ops->peek(a->r->st, iev, out);
	if (st == RI_ST_OK && out->purged)
		return RI_ST_PURGED;
	return st;
}

void
judge_named(struct audit *a, const struct ri_record *rec)
{
	const struct ri_kind *k = bound(a, rec);
	const char *iev = pstr(rec, "intent_event_id");
	struct ri_record in;
	bool service = k != NULL ? streq(rec->actor_ref, k->service_actor) : service_actor(a, rec->actor_ref);
	bool memo = false;
	int st;

	if (!ri_role_closing(rec->role) && rec->role != RI_ROLE_RECOVERY)
		return;
	/* Invariant 5.4, Term caller kind: Resolve is for human operators --
	 * a closing resolved by a service actor (as the registry stood when it
	 * landed) is a write outside this composition */
	if (ri_role_closing(rec->role) && resolver_is_service(a, pstr(rec, "resolved_by")))
		fail(a, "5.1", rec->invocation_id, rec->event_id, iev,
		    "a closing resolved by %s, a service identity: Resolve is for human operators"
		    " (Invariant 5.4)", pstr(rec, "resolved_by"));
	/* Check 1.2: decided by read_record(intent event id) answering
	 * Retained -- never by arithmetic or by the presence of an answer.
	 * The intent is earlier in the stream, already judged by the
	 * traversal, so its header is read in the same snapshot. */
	st = iev ? intent_of(a, iev, &in, &memo) : RI_ST_NOT_KNOWN;
	if (st == RI_ST_PURGED) {
		/* Checks 1.4, 5.3: purged, never absent */
		note(a, service ? "5.1" : "1.1", "purged intent (answered purged, excluded)");
		if (!memo)
			ri_record_clear(&in);
		return;
	}
	if (st != RI_ST_OK && st != RI_ST_NOT_KNOWN && st != RI_ST_INTEGRITY) {
		/* the intent's read was refused or timed out: not judged, never passed */
		incomplete(a, service ? "5.1" : "1.1", "the intent %s could not be read: %s", iev,
		    a->r->st->ops->error(a->r->st)->msg);
		return;
	}
	bool ok = st == RI_ST_OK && in.role == RI_ROLE_INTENT && streq(in.invocation_id, rec->invocation_id) &&
	    in.seq < rec->seq && streq(in.kind, rec->kind) && streq(in.act_key, rec->act_key);
	if (!ok) {
		bool outcome = rec->role == RI_ROLE_OUTCOME;
		if (outcome)
			fail(a, "1.1", rec->invocation_id, rec->event_id, iev,
			    "an outcome with no readable intent before it");
		if (service)
			/* Check 5.2: a write outside this composition */
			fail(a, "5.1", rec->invocation_id, rec->event_id, iev,
			    "a service-identity record naming no readable intent: a write outside this composition");
		else if (!outcome)
			fail(a, "1.1", rec->invocation_id, rec->event_id, iev,
			    "a %s record naming no readable intent", rec->action_ref);
	}
	if (st == RI_ST_OK && !memo)
		ri_record_clear(&in);
}
