/*
 * sweep.c -- the Reconcile contract (reconcile 1-7, steps 1.1-5.8): the
 * second writer.  One run reads now once, enumerates the aged open intents
 * between the two edges, takes each act's section with the sweep lease,
 * re-reads, probes the store, and closes each act with only what it can
 * re-derive -- or writes nothing and says why.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>
#include <sodium.h>

#include "protocol/seal.h"
#include "protocol/bindings.h"
#include "util/fault.h"
#include "store/findings.h"
#include "protocol/gate.h"
#include "util/nc.h"
#include "protocol/probe.h"
#include "util/progress.h"
#include "protocol/proto.h"
#include "protocol/restore.h"
#include "protocol/settle.h"
#include "protocol/sweep.h"

enum verdict { V_CLOSED, V_ABANDONED, V_ESCALATED, V_REPORTED, V_SKIPPED, V_CLOSED_ALREADY };

enum landed { L_LANDED, L_SKIP, L_CREDENTIAL, L_UNRECORDABLE };

struct tally {
	int64_t examined, closed, abandoned, escalated, reported, skipped, closed_already;
	int64_t surfaced, unreached;
	int64_t unreconciled;           /* acts a restore lost, still held (issue 39) */
};

struct sweep {
	struct ri *r;
	const struct ri_config *c;
	ri_ms now;
	char run_id[RI_ID_LEN + 1];
	struct ri_findings *reg;
	json_t *alerts;
	struct tally t;
	char **seen;                    /* instance findings this run saw: "finding\tkind" */
	size_t n_seen;
	json_t *creds;                  /* kind -> its service identity's credential */
	json_t *refused;                /* kind -> why its service identity was refused
	                                 * (reconcile steps 3.18-3.19: nothing more is
	                                 * written under it this run) */
	bool lease_tampered;            /* a take met a lease row past the cap */
	bool binding_refused;           /* Binding 2: the run writes nothing */
	json_t *degraded;               /* why the run is degraded: alerts, and below */
	json_t *unreachable;            /* kind -> {"acts": n, "why": the probe's last word} */
	struct ri_prober *probers;      /* the run's probes: a batch probe lives the run */
};

/* The kind's binding when a record (kind, seq) was written: bindings are
 * history (issue 41) -- the edges are the record's own (journal 8-9:
 * derived from the bound period, never from today's config nor from the
 * record's retention_until).  fallback when nothing is known of it. */
static const struct ri_kind *
bound_at(struct sweep *s, const char *kind, int64_t seq, const struct ri_kind *fallback)
{
	const struct ri_kind *b = NULL;

	if (ri_bindings_at(s->r, kind, seq, &b) != RI_ST_OK || b == NULL)
		return fallback;
	return b;
}

/* Invariant 7.2, reconcile steps 1.2-1.3, 5.6: before the horizon edge of
 * the record's own binding */
static bool
before_horizon(struct sweep *s, const struct ri_kind *k, const struct ri_record *rec)
{
	return ri_before_horizon(s->c, bound_at(s, rec->kind, rec->seq, k), rec->recorded_at, s->now);
}

static void
alert(struct sweep *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
alert(struct sweep *s, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_array_append_new(s->alerts, json_string(msg));
	if (s->degraded != NULL)
		json_array_append_new(s->degraded, json_string(msg));
	ri_diag("%s", msg);
}

/* reconcile step 3.13-3.14: the probe could not reach the store; the act
 * is left for the next run, and the run is degraded -- said once per kind */
static void
store_unreachable(struct sweep *s, const struct ri_kind *k, const char *why)
{
	json_t *e = json_object_get(s->unreachable, k->name);

	if (e == NULL) {
		e = json_pack("{s:I, s:s}", "acts", (json_int_t)0, "why", why ? why : "unavailable");
		json_object_set_new(s->unreachable, k->name, e);
	}
	json_object_set_new(e, "acts", json_integer(json_integer_value(json_object_get(e, "acts")) + 1));
}

/* ---- the compliance surface ---- */

static void
instance_finding(struct sweep *s, enum ri_finding what, const char *kind, json_t *detail)
{
	char key[256];
	ri_err e;

	snprintf(key, sizeof key, "%s\t%s", ri_finding_name(what), kind ? kind : "");
	s->seen = realloc(s->seen, (s->n_seen + 1) * sizeof *s->seen);
	if (s->seen == NULL)
		abort();
	s->seen[s->n_seen++] = ri_strdup(key);
	/* findings 3: a failing surfacing never rejects the run */
	if (s->reg != NULL && ri_findings_instance(s->reg, what, kind, s->run_id, s->now, detail, &e) != RI_OK)
		alert(s, "could not surface %s: %s", ri_finding_name(what), e.msg);
	json_decref(detail);
}

static void
act_finding(struct sweep *s, enum ri_finding what, const char *kind, const char *act_key,
    const char *inv, json_t *detail)
{
	ri_err e;

	if (s->reg != NULL && ri_findings_act(s->reg, what, kind, act_key, inv, s->run_id, s->now,
	    detail, &e) != RI_OK)
		alert(s, "could not surface %s for %s: %s", ri_finding_name(what), inv, e.msg);
	json_decref(detail);
}

/* ---- the service identity ---- */

/*
 * reconcile steps 3.18-3.19, Term unreached: a refused service identity
 * stops the writes under it -- that kind's, and only that kind's (another
 * kind with its own valid identity is still closed) -- and is surfaced on
 * the compliance surface at once.
 */
static void
refuse_identity(struct sweep *s, const struct ri_kind *k, const char *why)
{
	if (json_object_get(s->refused, k->name) != NULL)
		return;
	json_object_set_new(s->refused, k->name, json_string(why));
	instance_finding(s, RI_F_SERVICE_CREDENTIAL, k->name, json_pack("{s:s, s:s, s:s}", "actor_ref",
	    k->service_actor, "why", why, "rule", "reconcile step 3.18"));
	alert(s, "the service identity %s of kind %s is refused (%s); the run writes nothing more for"
	    " kind %s", k->service_actor, k->name, why, k->name);
}

enum identity { ID_OK, ID_REFUSED, ID_UNAVAILABLE };

/*
 * Sweep never 2: the sweep writes only under a registered, active SERVICE
 * actor -- never under a human's credential, whatever the config names as
 * the kind's service_identity.  Decided once per kind per run, before the
 * kind's first take: the credential file is the start gate's private file
 * (never a FIFO that would block), the credential authenticates without
 * appending, the actor is registered as a service and not revoked.
 */
static enum identity
identity(struct sweep *s, const struct ri_kind *k)
{
	struct ri *r = s->r;
	struct ri_actor who;
	char why[1200], *text;
	size_t len;
	int st;

	if (json_object_get(s->refused, k->name) != NULL)
		return ID_REFUSED;
	if (json_object_get(s->creds, k->name) != NULL)
		return ID_OK;
	if ((text = ri_secret_read(k->service_credential_file, 4096, &len, why, sizeof why)) == NULL) {
		char msg[1300];
		snprintf(msg, sizeof msg, "the credential file cannot be used: %s", why);
		refuse_identity(s, k, msg);
		return ID_REFUSED;
	}
	st = r->st->ops->authenticate(r->st, k->service_actor, text, &who);
	if (st == RI_ST_UNAVAILABLE) {
		sodium_memzero(text, len);
		free(text);
		alert(s, "the service identity of kind %s cannot be checked: %s", k->name,
		    r->st->ops->error(r->st)->msg);
		return ID_UNAVAILABLE;
	}
	if (st != RI_ST_OK)
		snprintf(why, sizeof why, "%s: %s", st == RI_ST_INTEGRITY ? "integrity" : "invalid-credential",
		    r->st->ops->error(r->st)->msg);
	else if (!RI_NC(RI_NC_SWEEP_UNDER_HUMAN) && !who.service)
		/* Sweep never 2 */
		snprintf(why, sizeof why, "%s is registered as a human, not a service: the sweep never"
		    " writes under a human's credential", k->service_actor);
	else
		json_object_set_new(s->creds, k->name, json_string(text));
	sodium_memzero(text, len);
	free(text);
	if (json_object_get(s->creds, k->name) == NULL) {
		refuse_identity(s, k, why);
		return ID_REFUSED;
	}
	return ID_OK;
}

static const char *
credential(struct sweep *s, const struct ri_kind *k)
{
	return json_string_value(json_object_get(s->creds, k->name));
}

/* ---- one closing write, on the outcome position's arms ---- */

static enum landed
sweep_write(struct sweep *s, const struct ri_kind *k, const struct ri_record *intent,
    const char *action_ref, json_t *payload, const char *tag, char ev[RI_ID_LEN + 1])
{
	struct ri *r = s->r;
	const char *cred = credential(s, k);
	struct ri_fence fence = { .holder = s->run_id };
	struct ri_append a = { .action_ref = action_ref, .act_key = intent->act_key,
		.invocation_id = intent->invocation_id, .actor_ref = k->service_actor,
		.credential = cred ? cred : "", .data = payload, .fence = &fence, .fault_tag = tag };
	/* Primitive policy 29: step-2 and step-3 are retried under the section
	 * and the gate; a lost reply read back empty is not (the next run
	 * re-reads) */
	struct ri_settle w = { .k = k, .a = &a, .fence = &fence, .retry = RI_RETRY_STEP23 };
	ri_err e;

	for (int attempt = 0; attempt < 3; attempt++) {
		/* journal write bound 1: the gate before every write */
		if (r->st->ops->remaining(r->st, k->name, intent->act_key, s->run_id, &w.left) != RI_ST_OK ||
		    w.left == RI_NONE ||
		    /* negative control: the gate lets a write start with less
		     * than journal_write_bound of the lease left */
		    (!RI_NC(RI_NC_NO_WRITE_BOUND_GATE) && r->cfg->journal_write_bound > w.left))
			return L_SKIP;
		enum ri_settled settled = write_settle(r, &w, &e);
		if (settled == RI_SETTLE_NO_NOW)
			return L_SKIP;
		if (settled == RI_SETTLE_UNREAD) {
			alert(s, "the bindings of kind %s could not be read: %s; the act waits for the next run",
			    k->name, r->st->ops->error(r->st)->msg);
			return L_SKIP;
		}
		snprintf(ev, RI_ID_LEN + 1, "%s", w.mine);
		switch (settled) {
		case RI_SETTLE_LANDED:
			/* reconcile step 3.16: read back after step-4 or a
			 * retention-source invalid-request, never retry */
			if (w.via == RI_VIA_STEP4 || w.via == RI_VIA_RETENTION)
				alert(s, "%s for %s landed without its retention placement", action_ref,
				    intent->invocation_id);
			return L_LANDED;
		case RI_SETTLE_RETRY:
			if (r->st->ops->settle != NULL)
				r->st->ops->settle(r->st);      /* the retry reads past the nap (issue 43) */
			ri_sleep_ms(5 * (attempt + 1));
			continue;       /* retried only under the section and the gate */
		default:
			break;
		}
		if (w.st == RI_ST_INVALID_CREDENTIAL)
			return L_CREDENTIAL;
		if (w.st == RI_ST_INVALID_REQUEST && !w.retention)
			return L_UNRECORDABLE;
		/* a retention-source read-back that found nothing; a lost reply
		 * read back empty: never blind, the next run re-reads; journal
		 * fence 4: a fenced-out write is absorbed into skipped */
		return L_SKIP;
	}
	return L_SKIP;          /* reconcile step 3.17: left for the next run */
}

static json_t *
closing_payload(const struct ri_record *intent, json_t *extra)
{
	json_t *p = json_pack("{s:s, s:s, s:s, s:s, s:s}", "invocation_id", intent->invocation_id,
	    "intent_event_id", intent->event_id, "kind", intent->kind, "act_key", intent->act_key,
	    "acting_actor_ref", intent->actor_ref);

	json_object_update(p, extra);
	json_decref(extra);
	return p;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* reconcile steps 3.9-3.10: at most intent_candidates_cap references;
 * past the cap, the count and the range.  Never a choice (3.11). */
static json_t *
store_candidates(const struct ri_config *c, json_t *cands)
{
	size_t n = json_array_size(cands), i;
	const char **v = ri_xcalloc(n, sizeof *v);
	json_t *out, *x;

	json_array_foreach(cands, i, x)
		v[i] = json_string_value(x);
	qsort(v, n, sizeof *v, cmp_str);
	if ((int64_t)n <= c->intent_candidates_cap) {
		out = json_array();
		for (i = 0; i < n; i++)
			json_array_append_new(out, json_string(v[i]));
	} else {
		out = json_pack("{s:I, s:s, s:s}", "count", (json_int_t)n, "first", v[0], "last", v[n - 1]);
	}
	free(v);
	return out;
}

static enum verdict
escalate(struct sweep *s, const struct ri_kind *k, const struct ri_record *intent, const char *cause,
    json_t *cands, enum landed *how)
{
	char ref[160], ev[RI_ID_LEN + 1];
	json_t *extra = json_pack("{s:s}", "cause", cause);

	if (cands != NULL)
		json_object_set_new(extra, "store_candidates", store_candidates(s->c, cands));
	json_t *p = closing_payload(intent, extra);
	*how = sweep_write(s, k, intent, ri_action_ref(k, "escalated", ref, sizeof ref), p, "sweep.closing", ev);
	json_decref(p);
	if (*how != L_LANDED)
		return V_SKIPPED;
	/* reconcile step 3.8b: the operator's queue -- and one line for the
	 * person cron mails it to (issue 44, point 3) */
	act_finding(s, RI_F_ESCALATED, k->name, intent->act_key, intent->invocation_id,
	    json_pack("{s:s, s:s, s:O?}", "cause", cause, "escalated_event_id", ev, "candidates", cands));
	ri_diag("needs an operator: kind %s, act %s: invocation %s escalated (%s) -- see ri-resolve"
	    " --invocation-id %s --probe", k->name, intent->act_key, intent->invocation_id, cause,
	    intent->invocation_id);
	return V_ESCALATED;
}

/* reconcile step 3: probe the store and close on what it re-derived. */
static enum verdict
close_act(struct sweep *s, const struct ri_kind *k, const struct ri_record *intent, enum landed *how)
{
	struct ri_probe p;
	char ref[160], ev[RI_ID_LEN + 1];
	enum verdict v = V_SKIPPED;

	*how = L_LANDED;
	ri_probe_ask(s->probers, k, intent->act_key, intent->payload, &p);
	ri_fault("sweep.after_probe");
	/* negative control: a store outage read as "not committed" */
	if (RI_NC(RI_NC_PROBE_UNAVAILABLE_AS_NOT_COMMITTED) && p.answer == RI_PROBE_UNAVAILABLE)
		p.answer = RI_PROBE_NOT_COMMITTED;
	switch (p.answer) {
	case RI_PROBE_COMMITTED: {
		/* reconcile step 3.20, Term outcome envelope: an outcome that
		 * outgrew the kind's envelope cannot shrink; the escalation fits */
		if (!RI_NC(RI_NC_NO_ENVELOPE_CHECK)) {
			char *od = ri_json_canonical(p.outcome_data);
			bool outgrew = (int64_t)strlen(od) > k->outcome_envelope;
			free(od);
			if (outgrew) {
				alert(s, "the probe's outcome for %s outgrew outcome_envelope %lld; escalated as"
				    " outcome-unrecordable", intent->invocation_id, (long long)k->outcome_envelope);
				v = escalate(s, k, intent, "outcome-unrecordable", NULL, how);
				break;
			}
		}
		/* reconcile step 3.2, Invariant 5.1-5.3: recovery_intended first,
		 * then the outcome carrying only what the probe returned */
		/* the plan is the outcome it is about to write */
		json_t *plan = closing_payload(intent, json_pack("{s:s}", "plan", p.outcome_action_ref));
		*how = sweep_write(s, k, intent, ri_action_ref(k, "recovery_intended", ref, sizeof ref), plan,
		    "sweep.recovery_intended", ev);
		json_decref(plan);
		if (*how != L_LANDED)
			break;
		ri_fault("sweep.between_writes");
		json_t *out = closing_payload(intent, json_pack("{s:b, s:O}", "recovery", 1, "data",
		    p.outcome_data));
		*how = sweep_write(s, k, intent, p.outcome_action_ref, out, "sweep.closing", ev);
		json_decref(out);
		if (*how == L_LANDED)
			v = V_CLOSED;
		else if (*how == L_UNRECORDABLE)
			/* reconcile step 3.20: an outcome that cannot be recorded
			 * is escalated, and the escalation fits */
			v = escalate(s, k, intent, "outcome-unrecordable", NULL, how);
		break;
	}
	case RI_PROBE_NOT_COMMITTED:
		/* negative control: abandons with no commit fence (tla -buggy-fence) */
		if (k->commit_fence || RI_NC(RI_NC_ABANDON_UNFENCED)) {
			/* reconcile steps 3.4, 3.6; Allowance 12, commit 13 */
			if (!ri_past_abandon_edge(s->c, k, intent->recorded_at, s->now))
				break;
			json_t *ab = closing_payload(intent, json_pack("{s:s}", "cause", "not-committed"));
			*how = sweep_write(s, k, intent, ri_action_ref(k, "abandoned", ref, sizeof ref), ab,
			    "sweep.closing", ev);
			json_decref(ab);
			if (*how == L_LANDED)
				v = V_ABANDONED;
			else if (*how == L_UNRECORDABLE)
				v = escalate(s, k, intent, "outcome-unrecordable", NULL, how);
		} else {
			/* reconcile step 3.5, commit 14, Invariant 4.8-4.9:
			 * without a fence, not-committed is not final */
			v = escalate(s, k, intent, "not-observed", NULL, how);
		}
		break;
	case RI_PROBE_UNDECIDABLE:
		/* reconcile step 3.8, Invariant 3.5: name candidates, choose none */
		v = escalate(s, k, intent, "undecidable", p.candidates, how);
		break;
	case RI_PROBE_UNAVAILABLE:
		/* reconcile step 3.13-3.14, Invariant 5.10: nothing written */
		store_unreachable(s, k, p.why);
		instance_finding(s, RI_F_STORE_UNAVAILABLE, k->name, json_pack("{s:s, s:s}", "invocation_id",
		    intent->invocation_id, "why", p.why));
		break;
	}
	ri_probe_clear(&p);
	return v;
}

static enum verdict
report_only(struct sweep *s, const struct ri_kind *k, const struct ri_record *intent)
{
	struct ri_probe p;
	bool at_risk = ri_at_risk(s->c, intent->recorded_at, s->now);

	/* reconcile 2, service identity 1 (1a-1b): probe under the section,
	 * write nothing, report the result for an operator -- every run's, and with
	 * it whether step 5.1 finds the act at risk, so neither report
	 * overwrites the other (reconcile 2e) */
	ri_probe_ask(s->probers, k, intent->act_key, intent->payload, &p);
	if (p.answer == RI_PROBE_UNAVAILABLE)
		store_unreachable(s, k, p.why);
	if (p.answer == RI_PROBE_UNAVAILABLE)
		instance_finding(s, RI_F_STORE_UNAVAILABLE, k->name, json_pack("{s:s, s:s}", "invocation_id",
		    intent->invocation_id, "why", p.why));
	act_finding(s, RI_F_CLOSURE_AT_RISK, k->name, intent->act_key, intent->invocation_id,
	    json_pack("{s:s, s:s, s:s?, s:O?, s:O?, s:b}", "rule", at_risk ? "reconcile 2e; reconcile step 5.1" :
	    "reconcile 2e", "probe", ri_probe_name(p.answer), "outcome_action_ref", p.outcome_action_ref,
	    "outcome_data", p.outcome_data, "candidates", p.candidates, "at_risk", at_risk));
	ri_probe_clear(&p);
	return V_REPORTED;
}

/* reconcile steps 2-4 for one kept intent. */
static enum verdict
sweep_one(struct sweep *s, const struct ri_kind *k, const struct ri_open_intent *oi)
{
	struct ri *r = s->r;
	struct ri_grant g;
	struct ri_inv inv;
	struct ri_standing sd;
	enum verdict v;
	enum landed how = L_LANDED;
	ri_ms left;
	int st;

	/* reconcile steps 2.1-2.3, act section 11: the sweep lease; the take
	 * never waits past the holder's remaining lease */
	if ((st = r->st->ops->take(r->st, k->name, oi->act_key, s->run_id, ri_sweep_lease(s->c), &g)) != RI_ST_OK) {
		if (st == RI_ST_INTEGRITY) {
			/* act section 11: a lease row past the longest lease is
			 * surfaced and fails the run closed, never waited on */
			s->lease_tampered = true;
			alert(s, "%s", r->st->ops->error(r->st)->msg);
		}
		return V_SKIPPED;
	}
	ri_fault("sweep.after_take");
	/* reconcile step 2.4: re-read under the section -- open invocations
	 * and sweep closed ids come from this read, never from step 1 */
	st = ri_inv_read(r, oi->invocation_id, &inv);
	if (st != RI_ST_OK) {
		alert(s, "re-read of %s failed: %s", oi->invocation_id, r->st->ops->error(r->st)->msg);
		(void)r->st->ops->release(r->st, k->name, oi->act_key, s->run_id);
		return V_SKIPPED;
	}
	ri_fault("sweep.after_reread");
	ri_standing(inv.closings, inv.n_closings, &sd);
	/* sweep closed ids 1, reconcile steps 2.5-2.6: any closing naming
	 * the id -- by the invocation, another run or an operator -- and the
	 * run writes nothing: one writer per act (Invariant 2.2), two runs
	 * never both close it (Invariant 2.3) */
	if (!RI_NC(RI_NC_NO_SWEEP_REREAD) && (inv.n_closings > 0 || inv.intent == NULL)) {
		ri_inv_free(&inv);
		(void)r->st->ops->release(r->st, k->name, oi->act_key, s->run_id);
		return V_CLOSED_ALREADY;
	}
	/* reconcile step 2.7 */
	if (r->st->ops->remaining(r->st, k->name, oi->act_key, s->run_id, &left) != RI_ST_OK ||
	    left == RI_NONE || s->c->journal_write_bound > left) {
		ri_inv_free(&inv);
		(void)r->st->ops->release(r->st, k->name, oi->act_key, s->run_id);
		return V_SKIPPED;
	}
	if (inv.intent == NULL || inv.intent->purged) {
		ri_inv_free(&inv);
		(void)r->st->ops->release(r->st, k->name, oi->act_key, s->run_id);
		return V_SKIPPED;
	}
	if (k->service_actor == NULL) {
		v = report_only(s, k, inv.intent);
	} else {
		v = close_act(s, k, inv.intent, &how);
		if (how == L_CREDENTIAL) {
			/* reconcile steps 3.18-3.19: refused at the write (revoked
			 * since the run checked it): surfaced at once; nothing more
			 * is written under it until reconfigured */
			refuse_identity(s, k, "invalid-credential at the write");
			v = V_SKIPPED;
		}
	}
	ri_inv_free(&inv);
	/* reconcile step 4.4 */
	(void)r->st->ops->release(r->st, k->name, oi->act_key, s->run_id);
	return v;
}

static void
count(struct sweep *s, enum verdict v)
{
	switch (v) {
	case V_CLOSED: s->t.closed++; break;
	case V_ABANDONED: s->t.abandoned++; break;
	case V_ESCALATED: s->t.escalated++; break;
	case V_REPORTED: s->t.reported++; break;
	case V_SKIPPED: s->t.skipped++; break;
	case V_CLOSED_ALREADY: s->t.closed_already++; break;
	}
}

/* ---- step 5: the duplicate scan over the delta ---- */

/*
 * The scan is one ascending pass over the delta (sequence high water 1),
 * O(delta + closed invocations x log n) in time, and in memory O(the
 * invocations open at once) -- never O(delta) (issue 15: a first sweep of
 * an unmarked 10^6-record journal) nor a re-read of an act's history per
 * record (a hot key's 2,000 invocations in one delta cost 28x).
 */
struct scan {
	int64_t mark;                   /* the delta is (mark, head] */
	json_t *open;                   /* "kind\tact_key" -> { inv: [intent seq, reported] }:
	                                 * retained intents of the delta, of kinds with a
	                                 * service identity, whose invocation no closing
	                                 * of the delta names yet */
	json_t *before;                 /* "kind\tact_key" -> [inv, intent seq] of the
	                                 * act's open intents from before the delta (the
	                                 * authenticated index), read lazily */
	bool before_loaded;
	json_t *pending;                /* inv -> [last seq, alone]: invocations the pass
	                                 * read a record of and no closing yet (open:
	                                 * bounded as the open set is); alone: from its
	                                 * intent on, then only recovery records */
};

static void
act_id(const struct ri_record *rec, char *buf, size_t n)
{
	snprintf(buf, n, "%s\t%s", rec->kind, rec->act_key);
}

/* The closings key (reconcile step 5.2) over one invocation read whole,
 * through Which closing stands (standing.h): two or more chains, a second
 * intent, a void supersedes.  Without a journal fence a late append leaves
 * both closings (journal fence none 1a): each is surfaced here as a binding
 * duplicate, under the closings key alone (journal fence none 3, 5;
 * reconcile step 5.4) -- the scan runs whatever the fence
 * (reconcile step 5.7), over the delta (reconcile step 5.5). */
static void
judge_closings(struct sweep *s, const struct ri_kind *k, const char *inv_id, struct ri_inv *inv)
{
	struct ri_standing sd;

	ri_standing(inv->closings, inv->n_closings, &sd);
	if (inv->intent != NULL && ri_intent_retained(s->c, inv->intent, s->now)) {
		if (!RI_NC(RI_NC_NO_DUPLICATE_SCAN) && sd.duplicate)
			act_finding(s, RI_F_BINDING_DUPLICATE, k->name, inv->intent->act_key, inv_id,
			    json_pack("{s:s, s:I}", "key", "closings", "chains", (json_int_t)sd.n_heads));
		if (sd.malformed != NULL)
			alert(s, "closing %s of invocation %s names no earlier closing of it (malformed supersedes)",
			    sd.malformed->rec->event_id, inv_id);
		if (inv->n_intents > 1)
			act_finding(s, RI_F_BINDING_DUPLICATE, k->name, inv->intent->act_key, inv_id,
			    json_pack("{s:s, s:I}", "key", "invocation", "intents", (json_int_t)inv->n_intents));
	}
}

/*
 * The closings key for one invocation id, read.  Called for each closing
 * of the delta the pass did not judge alone; the invocation is judged
 * once, at its first closing in the delta (a later one finds that one
 * below it; a first closing judged alone was judged whole at the record
 * that links to it, scan_chain), so no set of the delta's invocations is
 * kept.  inv gets the invocation read, for the intents key.  False when
 * it was judged already or could not be read.
 */
static bool
scan_closings(struct sweep *s, struct scan *sc, const struct ri_kind *k, const struct ri_record *rec,
    struct ri_inv *inv)
{
	if (ri_inv_read(s->r, rec->invocation_id, inv) != RI_ST_OK)
		return false;
	for (size_t i = 0; i < inv->n_closings; i++)
		if (inv->closings[i].rec->seq > sc->mark && inv->closings[i].rec->seq < rec->seq &&
		    before_horizon(s, k, inv->closings[i].rec)) {
			ri_inv_free(inv);
			return false;   /* judged at that earlier closing */
		}
	judge_closings(s, k, rec->invocation_id, inv);
	return true;
}

/*
 * A closing judged alone, with no read of its invocation (issue 15: the
 * read was a third of a hot delta's scan).  An invocation whose intent
 * lies in the delta lies in it whole, and the pass reads the delta whole,
 * each row verified and linked to the one before (a gap is integrity).
 * So at the first closing of an invocation whose chain the pass read from
 * its intent -- one intent, then only recovery records -- the pass knows
 * all that precedes it; a closing naming no supersedes is then neither a
 * second chain, nor a second intent, nor malformed: judged, it reports
 * nothing.  What would follow it lies further in the delta: the judgement
 * waits for the first record that links to it (scan_chain).
 */
static bool
closing_alone(struct sweep *s, const struct ri_kind *k, struct ri_record *rec)
{
	struct ri_inv one;
	bool ok;

	if (!before_horizon(s, k, rec))
		return false;   /* reconcile step 5.6: no judgement at all */
	memset(&one, 0, sizeof one);
	ri_inv_add(&one, rec);
	ok = one.n_closings == 1 && one.closings[0].n_names == 0 && !one.closings[0].names_malformed;
	ri_inv_free_index(&one);
	return ok;
}

/* The same question asked of an invocation read whole: was its first
 * closing in the delta judged alone by the pass?  Then that closing, or
 * NULL. */
static const struct ri_record *
left_alone(struct sweep *s, struct scan *sc, const struct ri_kind *k, struct ri_inv *inv)
{
	size_t i;

	if (inv->all.n == 0 || inv->all.v[0].role != RI_ROLE_INTENT || inv->all.v[0].seq <= sc->mark)
		return NULL;    /* the pass did not read its chain from its intent */
	for (i = 1; i < inv->all.n && inv->all.v[i].role == RI_ROLE_RECOVERY; i++)
		;
	if (i == inv->all.n || !ri_role_closing(inv->all.v[i].role) || !closing_alone(s, k, &inv->all.v[i]))
		return NULL;
	return &inv->all.v[i];
}

/* Every record of the pass that names an invocation: the chains it
 * extends.  True when rec is a closing judged alone. */
static bool
scan_chain(struct sweep *s, struct scan *sc, const struct ri_kind *k, struct ri_record *rec)
{
	json_t *p = json_object_get(sc->pending, rec->invocation_id);
	bool linked = p != NULL && rec->inv_link == json_integer_value(json_array_get(p, 0));

	/* it follows a record of the delta that ends no chain pending: maybe
	 * a closing judged alone -- judged now, whole, as the read at that
	 * closing would have, once: at the record that links to it */
	struct ri_inv inv;
	if (!RI_NC(RI_NC_NO_DEFERRED_JUDGEMENT) && !linked && rec->inv_link > sc->mark &&
	    ri_inv_read(s->r, rec->invocation_id, &inv) == RI_ST_OK) {
		const struct ri_record *c = left_alone(s, sc, k, &inv);
		if (c != NULL && c->seq == rec->inv_link)
			judge_closings(s, k, rec->invocation_id, &inv);
		ri_inv_free(&inv);
	}
	if (ri_role_closing(rec->role)) {
		bool alone = linked && json_is_true(json_array_get(p, 1)) && closing_alone(s, k, rec);
		if (p != NULL)
			json_object_del(sc->pending, rec->invocation_id);
		return alone;
	}
	if (p == NULL) {
		/* alone from its intent on; a chain the pass meets later (an
		 * intent before the mark, its recovery record in the delta) is
		 * followed too, so its closing is read once, not twice */
		json_object_set_new(sc->pending, rec->invocation_id, json_pack("[I, b]", (json_int_t)rec->seq,
		    rec->role == RI_ROLE_INTENT && rec->inv_link == 0));
		return false;
	}
	json_array_set_new(p, 0, json_integer(rec->seq));
	if (!linked || rec->role != RI_ROLE_RECOVERY)
		json_array_set_new(p, 1, json_false());
	return false;
}

static void
intents_finding(struct sweep *s, const struct ri_kind *k, const char *act_key, const char *inv,
    const char *other)
{
	act_finding(s, RI_F_BINDING_DUPLICATE, k->name, act_key, inv,
	    json_pack("{s:s, s:s}", "key", "intents", "open_with", other));
}

/* The act's retained open intent from before the delta, if any (the
 * journal's authenticated index, read once per run; each intent's own
 * record read when first asked, for its retention). */
static const char *
open_before(struct sweep *s, struct scan *sc, const char *act)
{
	json_t *v;

	if (!sc->before_loaded) {
		struct ri_open_intent *oi = NULL;
		size_t n = 0;
		sc->before_loaded = true;
		if (s->r->st->ops->open_intents(s->r->st, NULL, NULL, RI_NONE, &oi, &n) == RI_ST_OK)
			for (size_t i = 0; i < n; i++) {
				char id[512];
				snprintf(id, sizeof id, "%s\t%s", oi[i].kind, oi[i].act_key);
				if (oi[i].seq <= sc->mark && json_object_get(sc->before, id) == NULL)
					json_object_set_new(sc->before, id, json_pack("[s, I]", oi[i].invocation_id,
					    (json_int_t)oi[i].seq));
			}
		ri_open_intents_free(oi, n);
	}
	if ((v = json_object_get(sc->before, act)) == NULL)
		return NULL;
	if (json_array_size(v) == 2) {
		/* first asked: is it retained (sequence high water 5)? */
		struct ri_inv o;
		bool yes = false;
		if (ri_inv_read(s->r, json_string_value(json_array_get(v, 0)), &o) == RI_ST_OK) {
			yes = o.intent != NULL && ri_intent_retained(s->c, o.intent, s->now);
			ri_inv_free(&o);
		}
		json_array_append_new(v, json_boolean(yes));
	}
	return json_is_true(json_array_get(v, 2)) ? json_string_value(json_array_get(v, 0)) : NULL;
}

/*
 * The intents key (reconcile step 5.3, Which closing stands 9-10): a
 * retained intent I of the delta, before the horizon, open at once with
 * another retained intent J of its act, where the kind declares a service
 * identity.  J is (a) an intent of the delta still open when I lands --
 * then each names the other; (b) an intent from before the delta still
 * open (the index); or (c) an intent from before the delta whose first
 * closing lands in the delta after I (scan_retro).
 */
static void
scan_intent(struct sweep *s, struct scan *sc, const struct ri_kind *k, const struct ri_record *rec)
{
	char act[512];
	json_t *members, *v;
	const char *inv, *other = NULL;
	bool report = before_horizon(s, k, rec);

	act_id(rec, act, sizeof act);
	if ((members = json_object_get(sc->open, act)) == NULL) {
		members = json_object();
		json_object_set_new(sc->open, act, members);
	}
	json_object_foreach(members, inv, v) {
		if (strcmp(inv, rec->invocation_id) == 0)
			continue;
		if (other == NULL)
			other = inv;
		/* J opened before I and is open at I: J was open at once with I */
		if (json_is_false(json_array_get(v, 2))) {
			json_array_set_new(v, 2, json_true());
			intents_finding(s, k, rec->act_key, inv, rec->invocation_id);
		}
	}
	if (other == NULL)
		other = open_before(s, sc, act);
	if (other != NULL && report)
		intents_finding(s, k, rec->act_key, rec->invocation_id, other);
	/* an intent over the horizon is no I, but is still a J (a later I's) */
	json_object_set_new(members, rec->invocation_id, json_pack("[I, b, b]", (json_int_t)rec->seq, 0,
	    other != NULL || !report));
}

/* (c): J's intent lies before the delta and its first closing C is in the
 * delta: every retained intent of the act in (mark, C) was open at once
 * with J.  Read once per such J (bounded by the invocations open at the
 * mark), over the act's records of the delta below C. */
static void
scan_retro(struct sweep *s, struct scan *sc, const struct ri_kind *k, const struct ri_record *c,
    const struct ri_inv *j)
{
	struct ri_query q = { .from = sc->mark + 1, .limit = 512, .kind = c->kind, .act_key = c->act_key };

	if (j->intent == NULL || j->intent->seq > sc->mark || j->n_closings == 0 ||
	    j->closings[0].rec->seq != c->seq || !ri_intent_retained(s->c, j->intent, s->now))
		return;
	for (;;) {
		struct ri_records page;
		bool past = false;
		if (s->r->st->ops->range_read(s->r->st, &q, &page) != RI_ST_OK)
			break;
		for (size_t i = 0; i < page.n && !past; i++) {
			struct ri_record *rec = &page.v[i];
			if (rec->seq >= c->seq) {
				past = true;
				break;
			}
			if (rec->role == RI_ROLE_INTENT && rec->invocation_id != NULL &&
			    strcmp(rec->invocation_id, c->invocation_id) != 0 &&
			    ri_intent_retained(s->c, rec, s->now) && before_horizon(s, k, rec))
				intents_finding(s, k, rec->act_key, rec->invocation_id, c->invocation_id);
		}
		bool more = page.more;
		q.from = page.next;
		ri_records_clear(&page);
		if (past || !more)
			break;
	}
}

/* A closing of the delta: its invocation leaves the open set (its first
 * closing ends its span) -- then the closings key is judged at once, the
 * invocation's first closing in the delta being this one; otherwise its
 * invocation is read (the closings key, and the intents key's case c). */
static void
scan_closing(struct sweep *s, struct scan *sc, const struct ri_kind *k, const struct ri_record *rec, bool alone)
{
	char act[512];
	json_t *members;
	struct ri_inv inv;

	act_id(rec, act, sizeof act);
	if ((members = json_object_get(sc->open, act)) != NULL &&
	    json_object_get(members, rec->invocation_id) != NULL) {
		json_object_del(members, rec->invocation_id);
		if (json_object_size(members) == 0)
			json_object_del(sc->open, act);
	}
	/* reconcile step 5.6: not over the horizon */
	if (!before_horizon(s, k, rec) || alone)
		return;         /* alone: its intent is in the delta, so no scan_retro */
	if (!scan_closings(s, sc, k, rec, &inv))
		return;
	if (k->service_actor != NULL)   /* journal fence none 6, Which closing stands 10 */
		scan_retro(s, sc, k, rec, &inv);
	ri_inv_free(&inv);
}

static int
duplicate_scan(struct sweep *s)
{
	struct ri *r = s->r;
	int64_t mark = 0, settled = 0;
	bool unsettled = false;
	struct scan sc = { .open = json_object(), .before = json_object(), .pending = json_object() };
	struct ri_query q;
	ri_ms settle = r->st->ops->mark_lag(r->st, ri_settle_bound(s->c));

	int st = RI_ST_OK;

	if (r->st->ops->mark_get(r->st, "sweep.duplicate_scan", &mark) != RI_ST_OK) {
		json_decref(sc.open);
		json_decref(sc.before);
		json_decref(sc.pending);
		return RI_ST_UNAVAILABLE;
	}
	sc.mark = mark;
	q = (struct ri_query){ .from = mark + 1, .limit = 1024 };
	/* one snapshot for the pass and the invocations it reads: a record
	 * the pass verified is not verified again by the read of its
	 * invocation (store.h read_session; issue 15: a hot key's 2,000
	 * invocations in the delta) */
	bool session = r->st->ops->read_session != NULL && r->st->ops->read_session(r->st, true) == RI_ST_OK;
	for (;;) {
		struct ri_records page;
		if ((st = r->st->ops->range_read(r->st, &q, &page)) != RI_ST_OK) {
			alert(s, "duplicate scan: %s", r->st->ops->error(r->st)->msg);
			break;
		}
		for (size_t i = 0; i < page.n; i++) {
			struct ri_record *rec = &page.v[i];
			const struct ri_kind *k = ri_config_kind(s->c, rec->kind);
			/* sequence high water 2: the mark advances only past records
			 * older than the settle bound (tla/DeltaRead.tla: a write in
			 * flight below a settled seq commits before it settles) --
			 * and never past the first that is not: with shards a later
			 * seq may be stamped earlier (docs/SHARDS.md; mark_lag) */
			if (RI_NC(RI_NC_MARK_UNSETTLED) || (!unsettled && rec->recorded_at + settle <= s->now))
				settled = rec->seq;
			else
				unsettled = true;
			if (k == NULL || rec->invocation_id == NULL)
				continue;
			bool alone = scan_chain(s, &sc, k, rec);
			if (ri_role_closing(rec->role))
				scan_closing(s, &sc, k, rec, alone);
			else if (rec->role == RI_ROLE_INTENT && k->service_actor != NULL &&
			    ri_intent_retained(s->c, rec, s->now))
				scan_intent(s, &sc, k, rec);
		}
		bool more = page.more;
		q.from = page.next;
		ri_records_clear(&page);
		if (!more)
			break;
	}
	if (session)
		(void)r->st->ops->read_session(r->st, false);
	json_decref(sc.open);
	json_decref(sc.before);
	json_decref(sc.pending);
	if (settled > mark && st == RI_ST_OK)
		(void)r->st->ops->mark_set(r->st, "sweep.duplicate_scan", settled);
	return st;
}

/* ---- the run ---- */

/*
 * Binding 2-3, shared with every writer's start gate: a config that
 * unbinds a kind with open intents (inside the longest retention, Binding
 * 6) is refused, and the refusal lands on the compliance surface with its
 * reason.  The run still does its read-only duty -- each such intent is
 * surfaced (Binding 4, reconcile step 1.6), never closed (Binding 5) --
 * but writes nothing at all.
 */
static void
binding_gate(struct sweep *s)
{
	char **unbound, msg[512];
	size_t n;

	if (ri_gate_unbound(s->r, s->now, &unbound, &n) != RI_ST_OK || n == 0)
		return;
	s->binding_refused = true;
	for (size_t i = 0; i < n; i++) {
		/* Binding 2 */
		snprintf(msg, sizeof msg, "kind %s is not bound but has open intents", unbound[i]);
		ri_gate_record(s->c, unbound[i], "binding", "Binding 2-3", msg);
		alert(s, "%s: the run writes nothing (bind it again until they are closed)", msg);
	}
	ri_strings_free(unbound, n);
}

/*
 * The acts this run leaves to an operator (ri-sweep(1), EXIT STATUS 3;
 * "needs_operator" in the tally): the ones it escalated, and the acts a
 * restore lost that the run could not reconcile (issue 39) -- INTERFACE,
 * third wave: "escalated or unreconciled".
 */
static int64_t
needs_operator(const struct sweep *s)
{
	return s->t.escalated + s->t.unreconciled;
}

static json_t *
tally_json(const struct sweep *s)
{
	json_t *t = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s}",
	    "examined", (json_int_t)s->t.examined, "closed", (json_int_t)s->t.closed,
	    "abandoned", (json_int_t)s->t.abandoned, "escalated", (json_int_t)s->t.escalated,
	    "reported", (json_int_t)s->t.reported, "skipped", (json_int_t)s->t.skipped,
	    "closed_already", (json_int_t)s->t.closed_already, "surfaced", (json_int_t)s->t.surfaced,
	    "unreached", (json_int_t)s->t.unreached, "needs_operator", (json_int_t)needs_operator(s),
	    "run_id", s->run_id);
	char at[RI_INSTANT_LEN];

	/* the run's instant: a line in a log says when (issue 44, point 3) */
	if (s->now > 0) {
		ri_format_instant(s->now, at);
		json_object_set_new(t, "at", json_string(at));
	}
	return t;
}

static void
finish(struct sweep *s, json_t **ans, bool looked)
{
	ri_err e;

	/* findings 10: only a run that could look closes what it did not see;
	 * a journal outage hides every other condition, it does not end them */
	if (looked && s->reg != NULL && ri_findings_close_unseen(s->reg, s->run_id, s->now,
	    (const char *const *)s->seen, s->n_seen, &e) != RI_OK)
		alert(s, "could not close unseen findings: %s", e.msg);
	*ans = tally_json(s);
	if (json_array_size(s->alerts) > 0) {
		char *joined = NULL;
		size_t i;
		json_t *v;
		json_array_foreach(s->alerts, i, v) {
			size_t n = (joined ? strlen(joined) : 0) + strlen(json_string_value(v)) + 3;
			char *nj = ri_xmalloc(n);
			snprintf(nj, n, "%s%s%s", joined ? joined : "", joined ? "; " : "", json_string_value(v));
			free(joined);
			joined = nj;
		}
		json_object_set_new(*ans, "alert", json_string(joined));
		free(joined);
	}
}

/*
 * A run that ended but could not do all it should is degraded (ri-sweep(1),
 * EXIT STATUS 2): every alert, every kind whose store its probe could not
 * reach, and a run past run_bound (run bound 1: the instance's start
 * conditions assume a run ends within it).  Said on stderr, and in the
 * answer's "degraded".
 */
static void
degraded(struct sweep *s, json_t *ans, int64_t started)
{
	const char *kind;
	json_t *e;
	char msg[1400], a[32], b[32];
	int64_t took = ri_mono_ms() - started;

	json_object_foreach(s->unreachable, kind, e) {
		/* reconcile step 3.13 */
		snprintf(msg, sizeof msg, "kind %s: the probe could not reach the store for %lld act%s, left for"
		    " the next run: %s", kind,
		    (long long)json_integer_value(json_object_get(e, "acts")),
		    json_integer_value(json_object_get(e, "acts")) == 1 ? "" : "s",
		    json_string_value(json_object_get(e, "why")));
		json_array_append_new(s->degraded, json_string(msg));
		ri_diag("degraded: %s", msg);
	}
	if (took > s->c->run_bound) {
		ri_format_seconds(took, a, sizeof a);
		ri_format_seconds(s->c->run_bound, b, sizeof b);
		/* run bound 1 */
		snprintf(msg, sizeof msg, "the run took %s s, past run_bound %s s: the start conditions"
		    " ri-startcheck certified no longer hold for this backlog", a, b);
		json_array_append_new(s->degraded, json_string(msg));
		ri_diag("degraded: %s", msg);
	}
	if (json_array_size(s->degraded) > 0)
		json_object_set(ans, "degraded", s->degraded);
}

/*
 * run bound 1: the next run never starts beside a run in flight on this
 * node.  The run lock is a file beside the journal (on PostgreSQL, which
 * is no local file, beside this host's findings register) that a run
 * holds with flock(2) while it runs, and in which it records itself once
 * it holds it -- {"pid", "run_id", "started_at"} -- leaving the record
 * there when it ends.  Whoever else holds the lock holds it under the
 * last run's record, or under none: so a lock held past run_bound from
 * the recorded start (or with no start recorded) is not a run in flight
 * but a stuck run or a neighbour stopping recovery, and is said (issue 40
 * point 6).  A run that took the lock a moment ago writes its record at
 * once, so a stale-looking record is looked at again, for a moment,
 * before it is believed -- as is any lock, so a look (ri-startcheck's)
 * never stops a run.
 */
#define LOCK_LOOKS 10                   /* looks at a held lock, LOCK_NAP ms apart */
#define LOCK_NAP 20

void
ri_run_lock_path(const struct ri_config *c, const char *node, char *out, size_t n)
{
	snprintf(out, n, "%s.sweep-%s.lock", ri_backend_shared(ri_journal_backend(c->journal)) ? c->findings :
	    c->journal,
	    node ? node : "local");
}

/* The holder's record, judged at now: l->recorded, pid, run_id,
 * started_at, and l->stale. */
static void
lock_judge(int fd, const struct ri_config *c, ri_ms now, struct ri_run_lock *l)
{
	char buf[512];
	ssize_t got = pread(fd, buf, sizeof buf - 1, 0);
	json_t *j = NULL, *v;

	l->recorded = false;
	l->pid = 0;
	l->run_id[0] = '\0';
	l->started_at = RI_NONE;
	if (got > 0) {
		buf[got] = '\0';
		j = json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL);
	}
	if (json_is_object(j) && json_is_integer(v = json_object_get(j, "started_at"))) {
		l->recorded = true;
		l->started_at = json_integer_value(v);
		l->pid = (long)json_integer_value(json_object_get(j, "pid"));
		snprintf(l->run_id, sizeof l->run_id, "%s", json_is_string(v = json_object_get(j, "run_id")) ?
		    json_string_value(v) : "");
	}
	json_decref(j);
	/* negative control: any holder is a run in flight */
	l->stale = !RI_NC(RI_NC_RUN_LOCK_UNAGED) && (!l->recorded || now - l->started_at > c->run_bound);
}

/* Take the lock (0 into *got) or find it held: the holder judged, looked
 * at again while it looks stale (LOCK_LOOKS).  -1 with errno on a lock
 * that cannot be tried at all. */
static int
lock_try(int fd, int op, const struct ri_config *c, ri_ms now, struct ri_run_lock *l)
{
	l->held = false;
	for (int look = 1;; look++) {
		if (flock(fd, op | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK)
			return -1;
		l->held = true;
		lock_judge(fd, c, now, l);
		if ((!l->stale && look >= 2) || look == LOCK_LOOKS)
			return 0;
		ri_sleep_ms(LOCK_NAP);
	}
}

int
ri_run_lock_inspect(const struct ri_config *c, const char *path, ri_ms now, struct ri_run_lock *l,
    char *why, size_t n)
{
	int fd, rc;

	memset(l, 0, sizeof *l);
	snprintf(l->path, sizeof l->path, "%s", path);
	if ((fd = ri_open_regular(path, O_RDONLY | O_NOFOLLOW, 0, why, n)) < 0)
		return -1;
	/* a shared lock, for a look: a run starting now meets it for a
	 * moment and looks again (lock_try) */
	if ((rc = lock_try(fd, LOCK_SH, c, now, l)) != 0)
		snprintf(why, n, "%s: %s", path, strerror(errno));
	close(fd);
	return rc;
}

static int
run_lock(struct sweep *s, const struct ri_sweep_opts *o, int *fd, struct ri_run_lock *l, ri_err *err)
{
	char why[4400], rec[256];
	int len;

	memset(l, 0, sizeof *l);
	ri_run_lock_path(s->c, o ? o->node : NULL, l->path, sizeof l->path);
	/* a regular file, never followed through a link (issue 40 point 3) */
	if ((*fd = ri_open_regular(l->path, O_RDWR | O_CREAT | O_NOFOLLOW, 0600, why, sizeof why)) < 0)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "run lock %s", why);
	if (lock_try(*fd, LOCK_EX, s->c, s->now, l) != 0) {
		int e = errno;
		close(*fd);
		*fd = -1;
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "run lock %s: %s", l->path, strerror(e));
	}
	if (l->held) {
		close(*fd);
		*fd = -1;
		return RI_OK;
	}
	/* held: this run's record, for whoever finds it held */
	len = snprintf(rec, sizeof rec, "{\"pid\":%ld,\"run_id\":\"%s\",\"started_at\":%lld}\n", (long)getpid(),
	    s->run_id, (long long)s->now);
	if (ftruncate(*fd, 0) != 0 || pwrite(*fd, rec, (size_t)len, 0) != (ssize_t)len)
		ri_diag("run lock %s: its record could not be written: %s", l->path, strerror(errno));
	return RI_OK;
}

/* The lock held by another: a run in flight does this run's work (not a
 * failure: Reconcile refuses only journal-unavailable); one held past
 * run_bound is a finding, an alert, and a degraded run (issue 40 point 6). */
static int
lock_held(struct sweep *s, const struct ri_sweep_opts *o, const struct ri_run_lock *l, json_t **ans, ri_err *err)
{
	char msg[2 * sizeof l->path + 512], since[RI_INSTANT_LEN], bound[32];
	ri_err e;

	if (!l->stale) {
		/* run bound 1 */
		*ans = tally_json(s);
		json_object_set_new(*ans, "not_started", json_string(
		    "another run is in flight on this node; it does this run's work"));
		if (o == NULL || !o->quiet)
			ri_diag("another run is in flight on this node; this one did not start");
		return RI_OK;
	}
	ri_format_seconds(s->c->run_bound, bound, sizeof bound);
	if (l->recorded) {
		ri_format_instant(l->started_at, since);
		snprintf(msg, sizeof msg, "the run lock %s has been held past run_bound (%s s): the run recorded in it"
		    " (%s, pid %ld) started at %s, and no run can start until the lock is released --"
		    " find its holder (fuser %s)", l->path, bound, l->run_id, l->pid, since, l->path);
	} else {
		snprintf(msg, sizeof msg, "the run lock %s is held by a process that recorded no start: not a run;"
		    " no run can start until the lock is released -- find its holder (fuser %s)",
		    l->path, l->path);
	}
	if (ri_findings_open(ri_findings_location(s->c), false, &s->reg, &e) != RI_OK)
		alert(s, "the findings register is unavailable: %s", e.msg);
	instance_finding(s, RI_F_RUN_LOCK_HELD, NULL, json_pack("{s:s, s:s, s:I, s:o, s:o, s:o}", "rule",
	    "run bound 1", "lock", l->path, "run_bound_ms", (json_int_t)s->c->run_bound,
	    "held_since", l->recorded ? ri_json_instant(l->started_at) : json_null(),
	    "holder_pid", l->recorded && l->pid > 0 ? json_integer(l->pid) : json_null(),
	    "holder_run_id", l->recorded && l->run_id[0] ? json_string(l->run_id) : json_null()));
	alert(s, "%s", msg);
	finish(s, ans, false);
	json_object_set_new(*ans, "not_started", json_string(msg));
	json_object_set(*ans, "degraded", s->degraded);
	return ri_fail(err, RI_DEGRADED, "the run did not start: %s", msg);
}

int
ri_sweep(ri *r, const struct ri_sweep_opts *o, json_t **ans, ri_err *err)
{
	struct sweep s = { .r = r, .c = r->cfg, .alerts = json_array(), .creds = json_object(),
		.refused = json_object(), .degraded = json_array(), .unreachable = json_object() };
	struct ri_progress prog;
	int64_t started = ri_mono_ms();
	struct ri_open_intent *oi = NULL;
	size_t n = 0;
	ri_err e;
	int rc = RI_OK, st;
	int64_t mono0 = ri_mono_ms();

	int lock = -1;
	struct ri_run_lock runlock;

	*ans = NULL;
	/* Primitive policy 18: now, once per run, at the sweep's own seam --
	 * before the lock, whose record says when this run started */
	if ((rc = ri_now(s.c, &s.now, err)) != RI_OK)
		goto out;
	ri_mint_id("run_", s.run_id);
	if ((rc = run_lock(&s, o, &lock, &runlock, err)) != RI_OK) {
		*ans = ri_refusal_unavailable(false);
		goto out;
	}
	if (runlock.held) {
		rc = lock_held(&s, o, &runlock, ans, err);
		goto out;
	}
	s.probers = ri_prober_new(s.c);
	if (ri_findings_open(ri_findings_location(s.c), false, &s.reg, &e) != RI_OK)
		alert(&s, "the findings register is unavailable: %s", e.msg);
	else if (ri_findings_run_begin(s.reg, s.run_id, s.now, &e) != RI_OK)
		alert(&s, "%s", e.msg);
	binding_gate(&s);

	/* reconcile step 1: every open intent from the journal, every kind */
	if ((st = r->st->ops->open_intents(r->st, NULL, NULL, RI_NONE, &oi, &n)) != RI_ST_OK) {
		/* reconcile 1, Invariant 4.4: write nothing; open or advance the
		 * instance finding; answer journal-unavailable */
		instance_finding(&s, RI_F_JOURNAL_UNAVAILABLE, NULL, json_pack("{s:s, s:s?}", "why",
		    r->st->ops->error(r->st)->msg, "cause", st == RI_ST_INTEGRITY ? "integrity" : NULL));
		rc = ri_refuse_with(ans, ri_refusal_unavailable(st == RI_ST_INTEGRITY), err, RI_JOURNAL_UNAVAILABLE,
		    "journal-unavailable: %s", r->st->ops->error(r->st)->msg);
		json_t *tmp = NULL;
		finish(&s, &tmp, false);
		json_decref(tmp);
		goto out;
	}
	ri_fault("sweep.after_enumerate");
	ri_progress_begin(&prog, o != NULL && o->progress, "acts", (int64_t)n);
	for (size_t i = 0; i < n; i++) {
		const struct ri_kind *k = ri_config_kind(s.c, oi[i].kind);
		ri_progress_tick(&prog, (int64_t)i);
		if (k == NULL) {
			/* Binding 4-6: surfaced once per run, never closed, within
			 * the longest retention */
			if (oi[i].recorded_at + ri_longest_retention(s.c) > s.now) {
				s.t.surfaced++;
				act_finding(&s, RI_F_UNBOUND_KIND, oi[i].kind, oi[i].act_key, oi[i].invocation_id,
				    json_pack("{s:s}", "intent_event_id", oi[i].event_id));
			}
			continue;
		}
		/* reconcile steps 1.2-1.3, Invariant 7.1-7.2: aged, and before
		 * the horizon edge -- applied comparisons that only exclude; each
		 * by the binding the intent was written under (issue 41: a
		 * retention shortened since does not strand it) */
		const struct ri_kind *bk = bound_at(&s, oi[i].kind, oi[i].seq, k);
		if (ri_in_flight(s.c, bk, oi[i].recorded_at, s.now) ||
		    !ri_before_horizon(s.c, bk, oi[i].recorded_at, s.now))
			continue;
		/* Binding 2: under a config that unbinds a kind with open
		 * intents the run writes nothing; Sweep never 2, reconcile steps
		 * 3.18-3.19: nothing under a refused service identity -- that
		 * kind's acts are unreached, outside the partition (Term
		 * unreached); every other kind goes on */
		if (s.binding_refused || (k->service_actor != NULL && identity(&s, k) == ID_REFUSED)) {
			s.t.unreached++;
			continue;
		}
		s.t.examined++;
		enum verdict v = sweep_one(&s, k, &oi[i]);
		count(&s, v);
		/* reconcile step 5.1: closure-at-risk for what is still unclosed
		 * (a reported act's finding already says so, beside its probe's
		 * answer -- reconcile 2e) */
		if (v == V_SKIPPED && ri_at_risk(s.c, oi[i].recorded_at, s.now))
			act_finding(&s, RI_F_CLOSURE_AT_RISK, k->name, oi[i].act_key, oi[i].invocation_id,
			    json_pack("{s:s}", "rule", "reconcile step 5.1"));
	}
	ri_progress_end(&prog, (int64_t)n);
	if (s.binding_refused) {
		/* Binding 2-3: nothing written -- no closing, no purge, no seal;
		 * the refusal is on the register with its reason */
		finish(&s, ans, false);
		rc = ri_fail(err, RI_CONFIG, "the instance must not start: a kind this config does not"
		    " bind has open intents; the run wrote nothing -- bind it again");
		goto out;
	}
	/* AMD-03: a record that fails verification in the delta fails the
	 * run closed -- after the closings it landed, which stand -- and so
	 * does any verification failure the run met (a re-read, a take, a
	 * lease row past the longest lease, act section 11): the store
	 * remembers the first */
	bool tampered = duplicate_scan(&s) == RI_ST_INTEGRITY || s.lease_tampered ||
	    r->st->ops->error(r->st)->integrity;
	/* issue 39: the acts a restore held back -- each whose lost
	 * invocations are all closed since (this run's closings among them) is
	 * released; the rest still need the store asked, or an operator */
	size_t unreconciled = 0;
	json_t *held = json_array();
	if (!tampered) {
		int hst = ri_restore_sweep(r, &unreconciled, held);
		if (hst == RI_ST_INTEGRITY)
			tampered = true;
		else if (hst != RI_ST_OK)
			alert(&s, "the restores' pass: %s", r->st->ops->error(r->st)->msg);
	}
	for (size_t i = 0; i < json_array_size(held); i++) {
		json_t *h = json_array_get(held, i);
		/* through ri_diag, so the line carries the run's instant like
		 * every other ri-sweep line (issue 44, point 3) */
		ri_diag("act (%s, %s) was lost by a restore and is unreconciled: invocation %s"
		    " waits for its store to be asked again, or for an operator (ri-resolve)",
		    json_string_value(json_object_get(h, "kind")), json_string_value(json_object_get(h, "act_key")),
		    json_string_value(json_object_get(h, "invocation_id")));
	}
	json_decref(held);
	/* retention: destroy payloads past their end (the chain still
	 * verifies).  The purge and the seal are the substrate's own records,
	 * never written under a service identity, so a refused identity stops
	 * neither (reconcile step 3.19 stops only the writes under it) */
	int64_t purged = 0;
	if (r->st->ops->purge(r->st, s.now, &purged) != RI_ST_OK)
		alert(&s, "retention purge: %s", r->st->ops->error(r->st)->msg);
	/* a seal at least once per run, so an auditor holding only the public
	 * key can verify the chain up to here */
	json_t *sealed = NULL;
	if (!tampered && ri_seal(r, &sealed, &e) != RI_OK) {
		alert(&s, "could not seal the journal: %s", e.msg);
		/* the seal's own verification of the records since the previous
		 * seal failed: never sealed, surfaced, exit 15 */
		tampered = tampered || r->st->ops->error(r->st)->integrity;
	}
	if (tampered)
		instance_finding(&s, RI_F_JOURNAL_UNAVAILABLE, NULL, json_pack("{s:s, s:s}", "why",
		    r->st->ops->error(r->st)->integrity_msg, "cause", "integrity"));
	/* run bound 1: ri-startcheck's closure arithmetic assumes a run ends
	 * within run_bound (compensation_window - 2 x run_bound - ...); a run
	 * that did not says so -- on the register and in its answer -- rather
	 * than silently overrunning (issue 15).  Its work stands. */
	int64_t elapsed = ri_mono_ms() - mono0;
	if (elapsed > s.c->run_bound) {
		alert(&s, "this run took %lld ms, past run_bound (%lld ms): the closure arithmetic"
		    " ri-startcheck certified does not hold for it -- raise run_bound or sweep more often",
		    (long long)elapsed, (long long)s.c->run_bound);
		instance_finding(&s, RI_F_RUN_OVERRUN, NULL, json_pack("{s:s, s:I, s:I}", "rule", "run bound 1",
		    "elapsed_ms", (json_int_t)elapsed, "run_bound_ms", (json_int_t)s.c->run_bound));
	}
	s.t.unreconciled = (int64_t)unreconciled;
	finish(&s, ans, true);
	if (purged > 0)
		json_object_set_new(*ans, "purged", json_integer(purged));
	if (unreconciled > 0)
		json_object_set_new(*ans, "unreconciled", json_integer((json_int_t)unreconciled));
	if (sealed != NULL)
		json_object_set(*ans, "sealed_seq", json_object_get(sealed, "sealed_seq"));
	json_decref(sealed);
	degraded(&s, *ans, started);
	if (rc == RI_OK && json_array_size(s.degraded) > 0)
		rc = ri_fail(err, RI_DEGRADED, "the run is degraded (%zu reason%s above): it closed what it"
		    " could; the rest waits for the next run or an operator", json_array_size(s.degraded),
		    json_array_size(s.degraded) == 1 ? "" : "s");
	/* a run that did its work but left acts to a person exits 3 (a
	 * degraded run's 2 says more, and stands) */
	if (rc == RI_OK && needs_operator(&s) > 0)
		rc = ri_fail(err, RI_NEEDS_OPERATOR, "%lld act%s need%s an operator (above): ri-findings --open"
		    " lists them, ri-runbook(7) says how to resolve them", (long long)needs_operator(&s),
		    needs_operator(&s) == 1 ? "" : "s", needs_operator(&s) == 1 ? "s" : "");
	if (tampered) {
		json_object_set_new(*ans, "refused", json_string("journal-unavailable"));
		json_object_set_new(*ans, "cause", json_string("integrity"));
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal integrity: %s",
		    r->st->ops->error(r->st)->integrity_msg);
	}
out:
	ri_prober_free(s.probers);
	ri_open_intents_free(oi, n);
	ri_findings_close(s.reg);
	for (size_t i = 0; i < s.n_seen; i++)
		free(s.seen[i]);
	free(s.seen);
	json_decref(s.alerts);
	json_decref(s.creds);
	json_decref(s.refused);
	json_decref(s.degraded);
	json_decref(s.unreachable);
	if (lock >= 0)
		close(lock);
	return rc;
}

int
ri_sweep_outage(const char *config_path, json_t **ans, ri_err *err)
{
	struct ri *r;
	struct sweep s = { .alerts = json_array(), .creds = json_object() };
	char why[1024];
	ri_err e;
	json_t *tmp = NULL;
	bool integrity = err->code == RI_INTEGRITY;

	snprintf(why, sizeof why, "%s", err->msg);
	*ans = NULL;
	if (ri_instance_open(config_path, RI_CONFIG_ONLY, &r, &e) != RI_OK) {
		json_decref(s.alerts);
		json_decref(s.creds);
		return err->code;
	}
	s.r = r;
	s.c = r->cfg;
	(void)ri_instance_key(r, &e);   /* the register's rows are MACed when the key is at hand */
	if (ri_now(s.c, &s.now, &e) == RI_OK) {
		ri_mint_id("run_", s.run_id);
		if (ri_findings_open(ri_findings_location(s.c), false, &s.reg, &e) == RI_OK &&
		    ri_findings_run_begin(s.reg, s.run_id, s.now, &e) == RI_OK) {
			instance_finding(&s, RI_F_JOURNAL_UNAVAILABLE, NULL, json_pack("{s:s, s:s?}", "why", why,
			    "cause", integrity ? "integrity" : NULL));
			finish(&s, &tmp, false);
			json_decref(tmp);
		} else {
			ri_diag("the findings register is unavailable too: %s", e.msg);
		}
	}
	ri_findings_close(s.reg);
	for (size_t i = 0; i < s.n_seen; i++)
		free(s.seen[i]);
	free(s.seen);
	json_decref(s.alerts);
	json_decref(s.creds);
	ri_instance_close(r);
	*ans = ri_refusal_unavailable(integrity);
	return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal-unavailable: %s", why);
}
