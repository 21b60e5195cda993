/*
 * audit.c -- Generation acceptance (Checks 1.1-8.1): an auditor clears,
 * from the records alone, that every consequential act is accounted for.
 *
 * One streaming pass over the journal in sequence order.  Each row is
 * judged on its own by the traversal (Check 8.1); each intent's invocation
 * is read through the invocation index and judged whole (Checks 1, 2, 3, 5,
 * 6); each record naming an invocation is paired with its intent by
 * read_record(intent_event_id) (Check 1.2).  Memory holds the open intents
 * (for the intents key), the actor registry and the outage spans -- never
 * the journal.  This file drives the pass and records each verdict; the
 * invocations and the records naming one are judged in judge.c
 * (audit_int.h: what the two share).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "audit/audit_int.h"
#include "protocol/bindings.h"
#include "store/findings.h"
#include "store/heads.h"
#include "protocol/instance.h"
#include "util/integrity.h"
#include "util/nc.h"
#include "protocol/operator.h"
#include "protocol/probe.h"
#include "util/progress.h"
#include "protocol/proto.h"
#include "store/witness.h"

#define MAX_FAILURES 1000

static const char *const check_ids[] = {
	"1.1", "2.1", "2.2", "2.3", "2.5", "3.1", "3.5", "4.1", "5.1", "6.1", "6.3", "6.4", "6.5",
	"7.1", "8.1.1", "8.1.2", "8.1.3", "8.1.4", "8.1.5", "8.1.6", "8.1.7", "8.1.8", "8.1.9", NULL
};

static const char *const check_names[] = {
	"every outcome follows its intent, attested under the actor it names",
	"no two standing closings on one invocation (supersession read transitively)",
	"no two intents carry one invocation id",
	"no two intents open at once on one act (the intents key)",
	"every outcome has exactly one of the three outcome shapes",
	"every aged intent closed within the compensation window (less exemptions)",
	"report-only kinds: every aged intent surfaced as closure-at-risk in time",
	"the five conditions of instance start hold for every kind",
	"every service-identity record names an intent attested by another actor",
	"every recovered outcome is corroborated by the store (probe)",
	"every standing sweep or operator abandonment: the store holds no such act (probe)",
	"every sweep abandonment belongs to a kind with a commit fence",
	"every escalation's store candidates match store records of the intent (probe)",
	"purged intents are excluded from every check",
	"traversal: contiguous sequence",
	"traversal: every chain link",
	"traversal: every MAC under the integrity key",
	"traversal: every retained payload matches its digest",
	"traversal: payloads purged only after their retention ended",
	"traversal: every record's actor registered and active at its recorded_at",
	"traversal: recorded_at never goes backwards",
	"traversal: every record's header binds its own ids and shape",
	"traversal: seals verify, and the head is not older than the expected head",
};

static json_t *
check(struct audit *a, const char *id)
{
	return json_object_get(a->checks, id);
}

void
fail(struct audit *a, const char *id, const char *inv, const char *ev1, const char *ev2,
    const char *fmt, ...)
{
	json_t *c = check(a, id), *fs = json_object_get(c, "failures"), *evs = json_array();
	char msg[1024];
	va_list ap;

	json_object_set_new(c, "status", json_string("fail"));
	if (json_array_size(fs) >= MAX_FAILURES) {
		json_object_set_new(c, "truncated", json_true());
		json_decref(evs);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (ev1 != NULL && *ev1)
		json_array_append_new(evs, json_string(ev1));
	if (ev2 != NULL && *ev2)
		json_array_append_new(evs, json_string(ev2));
	json_t *f = json_pack("{s:o, s:o, s:s}", "event_ids", evs,
	    "invocation_id", inv ? json_string(inv) : json_null(), "message", msg);
	/* the act, so a person reads which one (the row being judged names it) */
	if (a->cur != NULL && a->cur->act_key != NULL && a->cur->act_key[0] != '\0' &&
	    (inv == NULL || streq(inv, a->cur->invocation_id)))
		json_object_update_new(f, json_pack("{s:s, s:s}", "kind", a->cur->kind, "act_key",
		    a->cur->act_key));
	json_array_append_new(fs, f);
}

/*
 * INTERFACE (third wave), ri-audit(1): a check whose read could not
 * complete -- refused, timed out, failed -- is "incomplete", never a
 * pass, and the audit exits 1.  A failure found stands beside it (fail
 * outranks incomplete); why is kept in the check's "incomplete".
 */
void
incomplete(struct audit *a, const char *id, const char *fmt, ...)
{
	json_t *c = check(a, id), *why = json_object_get(c, "incomplete");
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (!RI_NC(RI_NC_AUDIT_PASSES_UNREAD) &&
	    strcmp(json_string_value(json_object_get(c, "status")), "pass") == 0)
		json_object_set_new(c, "status", json_string("incomplete"));
	if (why == NULL) {
		why = json_array();
		json_object_set_new(c, "incomplete", why);
	}
	if (json_array_size(why) < 20)
		json_array_append_new(why, json_string(msg));
}

static void
not_applicable(struct audit *a, const char *id, const char *why)
{
	json_t *c = check(a, id);

	if (strcmp(json_string_value(json_object_get(c, "status")), "pass") == 0) {
		json_object_set_new(c, "status", json_string("not-applicable"));
		json_object_set_new(c, "note", json_string(why));
	}
}

void
note(struct audit *a, const char *id, const char *what)
{
	json_t *c = check(a, id), *n = json_object_get(c, "notes");
	json_t *cnt = json_object_get(n, what);

	json_object_set_new(n, what, json_integer(cnt ? json_integer_value(cnt) + 1 : 1));
}

/* ---- spans of outages (Check 3.3-3.4) ---- */

static int
load_span(const struct ri_finding_row *f, void *arg)
{
	struct audit *a = arg;

	/* a row that fails its MAC (forged, altered, or written where no key
	 * was at hand) is never evidence of an outage */
	if (!f->verified) {
		if (f->keyless)
			note(a, "8.1.3", "start-gate refusals recorded where the integrity key could not be read:"
			    " unauthenticated, never evidence");
		else if (a->r->key == NULL)
			note(a, "3.1", "findings register not verified (no integrity key): no outage span is evidence");
		else if (a->forged_findings++ < 20)
			fail(a, "8.1.3", f->invocation_id, NULL, NULL,
			    "findings register row %lld (%s) fails its MAC under the register's key: not evidence",
			    (long long)f->id, f->finding);
		return 0;
	}
	if (strcmp(f->scope, "instance") != 0 || (strcmp(f->finding, "journal-unavailable") != 0 &&
	    strcmp(f->finding, "store-unavailable") != 0))
		return 0;
	a->spans = realloc(a->spans, (a->n_spans + 1) * sizeof *a->spans);
	if (a->spans == NULL)
		abort();
	struct span *s = &a->spans[a->n_spans++];
	s->finding = ri_strdup(f->finding);
	s->kind = f->kind ? ri_strdup(f->kind) : NULL;
	s->start = f->first_seen_at;
	/* a span is evidence only as far as a run saw it: an outage still
	 * open ends at its last sighting too, never at the audit's now, so one
	 * stale span cannot exempt every later intent (Check 3.3-3.4) */
	s->end = f->last_seen_at != RI_NONE ? f->last_seen_at : f->first_seen_at;
	return 0;
}

/* The register is there and cannot be read: its spans (Check 3.3) and its
 * closure-at-risk findings (Check 3.5) are evidence the audit lacks. */
static void
register_unread(struct audit *a, const char *why)
{
	incomplete(a, "3.1", "the findings register could not be read: %s", why);
	incomplete(a, "3.5", "the findings register could not be read: %s", why);
}

/* The register's findings, for the report's timeline, each with when it
 * closed: an instance finding as the register holds it, an act finding
 * when a closing that needs no one stands on its invocation -- what
 * ri-findings reads (issue 44, point 10: the report showed a resolved
 * escalation as open). */
struct finding_ctx {
	json_t *arr;
	struct ri *r;
};

static int
finding_row(const struct ri_finding_row *f, void *arg)
{
	struct finding_ctx *x = arg;
	ri_ms closed_at = f->closed_at;

	if (strcmp(f->scope, "act") == 0 && f->invocation_id != NULL && x->r->st != NULL) {
		struct ri_inv inv;
		struct ri_standing sd;
		closed_at = RI_NONE;
		if (ri_inv_read(x->r, f->invocation_id, &inv) == RI_ST_OK) {
			ri_standing(inv.closings, inv.n_closings, &sd);
			if (!ri_inv_settled(&inv, &sd, &closed_at))
				closed_at = RI_NONE;
			ri_inv_free(&inv);
		}
	}
	json_array_append_new(x->arr, json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "finding",
	    f->finding, "scope", f->scope, "kind", f->kind ? json_string(f->kind) : json_null(),
	    "act_key", f->act_key ? json_string(f->act_key) : json_null(), "invocation_id",
	    f->invocation_id ? json_string(f->invocation_id) : json_null(), "first_seen_at",
	    f->first_seen_at != RI_NONE ? ri_json_instant(f->first_seen_at) : json_null(),
	    "last_seen_at", f->last_seen_at != RI_NONE ? ri_json_instant(f->last_seen_at) : json_null(),
	    "closed_at", closed_at != RI_NONE ? ri_json_instant(closed_at) : json_null()));
	return 0;
}

/* ---- what a record says (judge.c reads it too) ---- */

/* The binding of a record's kind when it was written: bindings are history
 * (issue 41) -- the audit judges no record by today's config.  NULL: a
 * kind never bound. */
const struct ri_kind *
bound(struct audit *a, const struct ri_record *rec)
{
	const struct ri_kind *k = NULL;

	if (ri_bindings_at(a->r, rec->kind, rec->seq, &k) != RI_ST_OK)
		k = ri_config_kind(a->c, rec->kind);
	return k;
}

/* Is actor a service identity: a bound kind's, or registered --service? */
bool
service_actor(struct audit *a, const char *actor)
{
	json_t *e = json_object_get(a->actors, actor);

	for (size_t i = 0; i < a->c->n_kinds; i++)
		if (a->c->kinds[i].service_actor != NULL && strcmp(a->c->kinds[i].service_actor, actor) == 0)
			return true;
	return e != NULL && json_is_true(json_object_get(e, "service"));
}

const char *
pstr(const struct ri_record *rec, const char *field)
{
	json_t *v = rec->payload ? json_object_get(rec->payload, field) : NULL;

	return json_is_string(v) ? json_string_value(v) : NULL;
}

bool
streq(const char *x, const char *y)
{
	return x != NULL && y != NULL && strcmp(x, y) == 0;
}

/* ---- the stream ---- */

/* The traversal's verdicts on one record: Check 8.1.1 (a gap, a head not
 * the last row), Check 8.1.2 (the header or the link), Check 8.1.3 (the
 * MAC), Check 8.1.4 (the digest), Check 8.1.5 (a payload gone early),
 * Check 8.1.8 (the shape). */
static void
traversal(struct audit *a, const struct ri_record *rec, unsigned problems)
{
	char seq[32];

	if (problems == 0)
		return;
	snprintf(seq, sizeof seq, "seq %lld", (long long)rec->seq);
	if (problems & RI_P_GAP)
		fail(a, "8.1.1", rec->invocation_id, rec->event_id, NULL, "%s follows seq %lld: rows are missing",
		    seq, (long long)a->last_seq);
	if (problems & RI_P_LINK)
		fail(a, "8.1.2", rec->invocation_id, rec->event_id, NULL,
		    "%s: the header or chain link does not recompute (altered, moved, copied, or a row before it deleted)", seq);
	if (problems & RI_P_MAC)
		fail(a, "8.1.3", rec->invocation_id, rec->event_id, NULL, "%s fails its MAC", seq);
	if (problems & RI_P_DIGEST)
		fail(a, "8.1.4", rec->invocation_id, rec->event_id, NULL, "%s: the payload does not match its digest", seq);
	if (problems & RI_P_PURGED_EARLY)
		fail(a, "8.1.5", rec->invocation_id, rec->event_id, NULL, "%s: the payload is gone before its retention ended", seq);
	if (problems & RI_P_SHAPE)
		fail(a, "8.1.8", rec->invocation_id, rec->event_id, NULL, "%s is malformed", seq);
	if (problems & RI_P_HEAD)
		fail(a, "8.1.1", NULL, NULL, NULL, "the journal's authenticated head is not its last row (seq %lld):"
		    " the tail was truncated or extended", (long long)rec->seq);
}

/* Check 8.1.6: every record's actor registered, and not revoked, when it
 * was recorded (the substrate's own records, by the journal itself) */
static void
actors(struct audit *a, const struct ri_record *rec)
{
	const char *who = pstr(rec, "actor_ref");
	json_t *e;

	if (strcmp(rec->action_ref, "audit.actor_registered") == 0 && who != NULL) {
		json_object_set_new(a->actors, who, json_pack("{s:I, s:b}", "registered",
		    (json_int_t)rec->recorded_at, "service", streq(pstr(rec, "type"), "service")));
	} else if (strcmp(rec->action_ref, "audit.actor_revoked") == 0 && who != NULL &&
	    (e = json_object_get(a->actors, who)) != NULL) {
		json_object_set_new(e, "revoked", json_integer(rec->recorded_at));
	}
	if (strncmp(rec->action_ref, "audit.", 6) == 0) {
		if (strcmp(rec->actor_ref, "audit") != 0)
			fail(a, "8.1.6", NULL, rec->event_id, NULL, "a substrate record attested by %s", rec->actor_ref);
		else if (strcmp(rec->action_ref, "audit.restored") == 0)
			json_object_set_new(a->restores, rec->event_id, json_true());
		return;
	}
	/* issue 39: a restored intent is the substrate's, on the authority of
	 * the accepted restore it names (an earlier audit.restored) -- and
	 * nothing else of a kind is */
	if (strcmp(rec->actor_ref, RI_SUBSTRATE_ACTOR) == 0) {
		const char *by = rec->payload != NULL ?
		    json_string_value(json_object_get(json_object_get(rec->payload, "restored"), "restore_event_id")) :
		    NULL;
		if (rec->role != RI_ROLE_INTENT || by == NULL || json_object_get(a->restores, by) == NULL)
			fail(a, "8.1.6", rec->invocation_id, rec->event_id, NULL, "a %s record attested by the substrate"
			    " that no accepted restore accounts for", rec->action_ref);
		return;
	}
	e = json_object_get(a->actors, rec->actor_ref);
	json_t *rv = e ? json_object_get(e, "revoked") : NULL;
	if (e == NULL)
		fail(a, "8.1.6", rec->invocation_id, rec->event_id, NULL, "actor %s was never registered",
		    rec->actor_ref);
	else if (rv != NULL && json_integer_value(rv) <= rec->recorded_at)
		fail(a, "8.1.6", rec->invocation_id, rec->event_id, NULL, "actor %s was revoked before this record",
		    rec->actor_ref);
}

static void
binds(struct audit *a, const struct ri_record *rec)
{
	char why[512];
	int role;

	/* Check 8.1.8 with the function ri-read fails closed on */
	if (!ri_record_legal(rec, why, sizeof why)) {
		fail(a, "8.1.8", rec->invocation_id, rec->event_id, NULL, "%s", why);
		return;
	}
	if (strncmp(rec->action_ref, "audit.", 6) == 0)
		return;
	/* Primitive policy 4: every record the composition writes names its
	 * invocation; one of the service identity's that names none is a write
	 * outside this composition (Check 5.2) */
	if (rec->invocation_id == NULL) {
		fail(a, "8.1.8", NULL, rec->event_id, NULL, "a %s record naming no invocation id", rec->action_ref);
		if (service_actor(a, rec->actor_ref))
			fail(a, "5.1", NULL, rec->event_id, NULL,
			    "a service-identity record naming no invocation: a write outside this composition");
	}
	/* the role fixed at the append, against the kind's binding of the
	 * record's own time (bindings are history, issue 41): a disagreement
	 * is a record its vocabulary did not hold (journal 4, Binding 2),
	 * reported, never silently re-read */
	const struct ri_kind *bk = bound(a, rec);
	if (bk != NULL && (ri_vocab_kind_role(bk, rec->action_ref, &role, why, sizeof why) != RI_OK ||
	    role != rec->role))
		fail(a, "8.1.8", rec->invocation_id, rec->event_id, NULL,
		    "appended as %s, which the binding of kind %s in force then does not read it as",
		    ri_role_name(rec->role), rec->kind);
}

/* A seal that verified: the records before it are sealed. */
static void
sealed_at(struct audit *a, const struct ri_record *rec, int64_t seq)
{
	a->sealed_seq = seq;
	a->seals++;
	a->seal_rec_seq = rec->seq;
	memcpy(a->seal_rec_hash, rec->hash, 32);
	a->tail = 0;
	a->tail_from = 0;
	a->tail_oldest = RI_NONE;
}

/* A seal over shards (docs/SHARDS.md): it signs (instance, S, the RFC 6962
 * root of every shard's head); each head it names is the newest record of
 * that shard before it -- the seal was appended under every shard's lock. */
static void
seal_shards(struct audit *a, const struct ri_record *rec, const unsigned char sig[crypto_sign_BYTES])
{
	const unsigned char *inst = a->r->st->ops->instance_id(a->r->st);
	json_t *jn = json_object_get(rec->payload, "shards"), *heads = json_object_get(rec->payload, "heads");
	json_int_t n = json_is_integer(jn) ? json_integer_value(jn) : 0;
	struct ri_shard_head *v;
	unsigned char root[RI_HASH_LEN], msg[RI_SEAL4_MSG_LEN];
	bool stale = false;

	if (n < 2 || n > RI_SHARDS_MAX || !json_is_array(heads) || json_array_size(heads) != (size_t)n) {
		fail(a, "8.1.9", NULL, rec->event_id, NULL, "a malformed seal");
		return;
	}
	v = ri_xcalloc((size_t)n, sizeof *v);
	for (json_int_t s = 0; s < n; s++) {
		json_t *e = json_array_get(heads, (size_t)s);
		const char *hx = json_string_value(json_array_get(e, 1));
		size_t got;
		unsigned char mine[RI_HASH_LEN];
		if (!json_is_array(e) || !json_is_integer(json_array_get(e, 0)) || hx == NULL ||
		    sodium_hex2bin(v[s].hash, RI_HASH_LEN, hx, strlen(hx), NULL, &got, NULL) != 0 || got != RI_HASH_LEN) {
			free(v);
			fail(a, "8.1.9", NULL, rec->event_id, NULL, "a malformed seal");
			return;
		}
		v[s].last_seq = json_integer_value(json_array_get(e, 0));
		if (a->shard_last[s].last_seq > 0)
			memcpy(mine, a->shard_last[s].hash, RI_HASH_LEN);
		else if (s == 0)
			memcpy(mine, a->r->st->ops->genesis(a->r->st), RI_HASH_LEN);
		else
			ri_genesis_shard(inst, (int)s, mine);
		/* negative control: the seal's heads taken as they say */
		stale = stale || (!RI_NC(RI_NC_SEAL_HEADS_UNCHECKED) && (v[s].last_seq != a->shard_last[s].last_seq ||
		    sodium_memcmp(v[s].hash, mine, RI_HASH_LEN) != 0));
	}
	ri_shards_root(v, (int)n, root);
	free(v);
	ri_seal4_message(inst, (int)n, root, msg);
	if (crypto_sign_verify_detached(sig, msg, sizeof msg, a->pk) != 0)
		fail(a, "8.1.9", NULL, rec->event_id, NULL, "the seal's signature does not verify (forged, or another key)");
	else if (stale)
		fail(a, "8.1.9", NULL, rec->event_id, NULL,
		    "the seal signs shard heads the journal no longer holds as sealed (rewritten behind the seal)");
	else
		sealed_at(a, rec, rec->seq - 1);
}

/* Check 8.1.9: every seal verifies under the public key (and, at the
 * end, the journal still holds the expected head) */
static void
seals(struct audit *a, const struct ri_record *rec)
{
	const char *ih = pstr(rec, "instance_id"), *hh = pstr(rec, "head_hash"), *sh = pstr(rec, "signature");
	json_t *sq = json_object_get(rec->payload, "seq");
	unsigned char h[32], sig[crypto_sign_BYTES], msg[RI_SEAL_MSG_LEN];
	size_t n;

	if (!a->have_pk) {
		note(a, "8.1.9", "seal not verified: no public key");
		return;
	}
	if (hh == NULL || sh == NULL || ih == NULL || !json_is_integer(sq) ||
	    sodium_hex2bin(h, sizeof h, hh, strlen(hh), NULL, &n, NULL) != 0 || n != sizeof h ||
	    sodium_hex2bin(sig, sizeof sig, sh, strlen(sh), NULL, &n, NULL) != 0 || n != sizeof sig) {
		fail(a, "8.1.9", NULL, rec->event_id, NULL, "a malformed seal");
		return;
	}
	if (json_object_get(rec->payload, "shards") != NULL) {
		seal_shards(a, rec, sig);
		return;
	}
	ri_seal_message(a->r->st->ops->instance_id(a->r->st), json_integer_value(sq), h, msg);
	if (crypto_sign_verify_detached(sig, msg, sizeof msg, a->pk) != 0)
		fail(a, "8.1.9", NULL, rec->event_id, NULL, "the seal's signature does not verify (forged, or another key)");
	else if (json_integer_value(sq) != rec->seq - 1 || sodium_memcmp(h, a->last_hash, sizeof h) != 0)
		fail(a, "8.1.9", NULL, rec->event_id, NULL,
		    "the seal signs seq %lld, which the journal no longer holds as sealed (rewritten behind the seal)",
		    (long long)json_integer_value(sq));
	else
		sealed_at(a, rec, json_integer_value(sq));
}

/* The journal against its witness: the record at the witnessed seq is the
 * one the witness names (a journal behind it is judged at the end). */
static void
witness_record(struct audit *a, const struct ri_record *rec)
{
	if (!a->have_witness || rec->seq != a->witness.seq)
		return;
	a->witness_seen = true;
	if (sodium_memcmp(rec->hash, a->witness.hash, 32) != 0)
		fail(a, "8.1.9", NULL, rec->event_id, NULL,
		    "seq %lld is not the record the witness names: the journal was rewritten behind its seal,"
		    " or is another journal", (long long)rec->seq);
}

static void
state_problem(const char *check, int64_t seq, const char *msg, void *arg)
{
	struct audit *a = arg;

	(void)seq;
	fail(a, check, NULL, NULL, NULL, "%s", msg);
}

/*
 * What is not a record -- the schema, the tree of scope heads against the
 * records, the open-intents accumulator, leases, marks, actors
 * (audit_state) -- depends on nothing the traversal judges, and has
 * always been read in a snapshot of its own: so it runs in a second
 * thread, on a handle of its own, while the traversal runs (issue 15: a
 * quarter of an audit's time).  What it finds is kept, and judged in its
 * order once the traversal is done, as if it had run then.  Where no
 * second handle opens (or no thread starts, or the command is not
 * RI_THREADED), it runs after the traversal on the one handle, as before.
 */
struct state_run {
	struct ri_store *st;
	pthread_t tid;
	bool started;
	int rc;                         /* audit_state's own answer */
	char why[512];                  /* ... and the store's word, when not OK */
	struct kept { char check[16]; int64_t seq; char *msg; } *v;
	size_t n, cap;
};

static void
state_keep(const char *check, int64_t seq, const char *msg, void *arg)
{
	struct state_run *sr = arg;

	if (sr->n == sr->cap) {
		sr->cap = sr->cap ? 2 * sr->cap : 16;
		if ((sr->v = realloc(sr->v, sr->cap * sizeof *sr->v)) == NULL)
			abort();
	}
	snprintf(sr->v[sr->n].check, sizeof sr->v[sr->n].check, "%s", check);
	sr->v[sr->n].seq = seq;
	sr->v[sr->n].msg = ri_strdup(msg);
	sr->n++;
}

static void *
state_thread(void *arg)
{
	struct state_run *sr = arg;

	if ((sr->rc = sr->st->ops->audit_state(sr->st, state_keep, sr)) != RI_ST_OK)
		snprintf(sr->why, sizeof sr->why, "%s", sr->st->ops->error(sr->st)->msg);
	return NULL;
}

static void
state_begin(struct audit *a, struct state_run *sr)
{
	ri_err e;

	memset(sr, 0, sizeof *sr);
	if (!(a->r->flags & RI_THREADED) || ri_instance_store(a->r, &sr->st, &e) != RI_OK)
		return;
	if (pthread_create(&sr->tid, NULL, state_thread, sr) != 0) {
		sr->st->ops->close(sr->st);
		sr->st = NULL;
		return;
	}
	sr->started = true;
}

static void state_problem(const char *check, int64_t seq, const char *msg, void *arg);

/* The state read that did not complete (Check 8.1; issue 40 point 1): what
 * it would have judged -- the schema, the tree of scope heads against the
 * records, the MACed side tables, the actor registry -- is incomplete. */
static void
state_unread(struct audit *a, const char *why)
{
	for (const char *const *id = (const char *const[]){ "8.1.1", "8.1.3", "8.1.6", "8.1.8", NULL }; *id; id++)
		incomplete(a, *id, "the state beside the records could not be read: %s", why);
}

static void
state_end(struct audit *a, struct state_run *sr)
{
	if (!sr->started) {
		if (a->r->st->ops->audit_state(a->r->st, state_problem, a) != RI_ST_OK)
			state_unread(a, a->r->st->ops->error(a->r->st)->msg);
		return;
	}
	(void)pthread_join(sr->tid, NULL);
	for (size_t i = 0; i < sr->n; i++) {
		state_problem(sr->v[i].check, sr->v[i].seq, sr->v[i].msg, a);
		free(sr->v[i].msg);
	}
	free(sr->v);
	if (sr->rc != RI_ST_OK)
		state_unread(a, sr->why);
	sr->st->ops->close(sr->st);
}

static int
each_record(const struct ri_record *rec, unsigned problems, void *arg)
{
	struct audit *a = arg;

	a->cur = rec;
	if (problems == 0)
		ri_bindings_feed(a->r, rec);
	traversal(a, rec, problems);
	if (problems & RI_P_HEAD) {
		a->cur = NULL;
		return 0;       /* the synthetic head row: nothing more to judge */
	}
	a->records++;
	ri_progress_tick(&a->prog, a->records);
	witness_record(a, rec);
	if (a->tail++ == 0) {
		a->tail_from = rec->seq;
		a->tail_oldest = rec->recorded_at;
	}
	/* Check 8.1.7, in its shard's chain: a record is stamped after its
	 * seq and after its shard's previous record, never after another
	 * shard's, which may commit later (docs/POSTGRESQL.md, Shards) */
	int sh = rec->shard >= 0 && rec->shard < RI_SHARDS_MAX ? rec->shard : 0;
	if (rec->recorded_at < a->last_recorded_at[sh])
		fail(a, "8.1.7", rec->invocation_id, rec->event_id, NULL,
		    "recorded_at goes backwards at seq %lld", (long long)rec->seq);
	a->last_recorded_at[sh] = rec->recorded_at;
	if (a->o->expect_seq == rec->seq) {
		a->expect_seen = true;
		if (sodium_memcmp(rec->hash, a->o->expect_hash, 32) != 0)
			fail(a, "8.1.9", NULL, rec->event_id, NULL,
			    "seq %lld does not hold the expected head hash: the journal was rewritten behind it",
			    (long long)rec->seq);
	}
	if (rec->payload != NULL) {
		actors(a, rec);
		binds(a, rec);
		if (strcmp(rec->action_ref, "audit.sealed") == 0)
			seals(a, rec);
	}
	bool waited = rec->invocation_id != NULL && pending_row(a, rec, problems);
	if (rec->invocation_id != NULL && !(problems & RI_P_SHAPE)) {
		/* the open-intents index as a rebuild would make it */
		if (rec->role == RI_ROLE_INTENT && !rec->purged && json_object_get(a->open_set, rec->invocation_id) == NULL)
			json_object_set_new(a->open_set, rec->invocation_id, json_pack("{s:I, s:s}", "seq",
			    (json_int_t)rec->seq, "event_id", rec->event_id));
		else if (ri_role_closing(rec->role) || rec->purged)
			json_object_del(a->open_set, rec->invocation_id);
	}
	if (rec->invocation_id != NULL && !(problems & (RI_P_SHAPE | RI_P_GAP))) {
		const struct ri_kind *k = bound(a, rec);
		char actkey[1024];
		snprintf(actkey, sizeof actkey, "%s\x1f%s", rec->kind, rec->act_key);
		if (rec->role == RI_ROLE_INTENT) {
			/* Check 2.3: the intents key (standing.h's reading: open from
			 * the intent until its first closing), streamed over the
			 * open-intent state; the retention drop keeps an intent whose
			 * retention ended out of it, on either side */
			json_t *open = json_object_get(a->open_by_act, actkey);
			bool retained = ri_intent_retained(a->c, rec, a->now);
			if (retained && open != NULL && json_array_size(open) > 0 && k != NULL &&
			    k->service_actor != NULL)
				fail(a, "2.3", rec->invocation_id, rec->event_id, NULL,
				    "opened while invocation %s was open on the same act",
				    json_string_value(json_array_get(open, 0)));
			if (open == NULL) {
				open = json_array();
				json_object_set_new(a->open_by_act, actkey, open);
			}
			if (retained)
				json_array_append_new(open, json_string(rec->invocation_id));
			json_object_set_new(a->inv_act, rec->invocation_id, json_string(actkey));
			memo_put(a, rec);
			if (!waited)
				pending_intent(a, rec);
		} else {
			if (ri_role_closing(rec->role)) {
				json_t *ak = json_object_get(a->inv_act, rec->invocation_id);
				json_t *open = ak ? json_object_get(a->open_by_act, json_string_value(ak)) : NULL;
				size_t i;
				json_t *v;
				json_array_foreach(open, i, v) {
					if (streq(json_string_value(v), rec->invocation_id)) {
						json_array_remove(open, i);
						break;
					}
				}
				if (open != NULL && json_array_size(open) == 0)
					json_object_del(a->open_by_act, json_string_value(ak));
				if (ak != NULL)
					json_object_del(a->inv_act, rec->invocation_id);
			}
			if (rec->payload != NULL)
				judge_named(a, rec);
		}
	}
	a->last_seq = rec->seq;
	memcpy(a->last_hash, rec->hash, 32);
	if (rec->shard >= 0 && rec->shard < RI_SHARDS_MAX) {
		a->shard_last[rec->shard].last_seq = rec->seq;
		memcpy(a->shard_last[rec->shard].hash, rec->hash, 32);
	}
	a->cur = NULL;
	return 0;
}

/* The derived open-intents index against the records: a row deleted,
 * added or altered shows even to an auditor without the key (with it, the
 * accumulator's MAC already said so: state_problem). */
static void
derived_index(struct audit *a)
{
	struct ri_open_intent *oi = NULL;
	size_t n = 0;
	json_t *rows = json_object(), *v;
	const char *inv;
	int st;

	if ((st = a->r->st->ops->open_intents(a->r->st, NULL, NULL, RI_NONE, &oi, &n)) != RI_ST_OK) {
		/* never silently: an index that fails its check is a finding, one
		 * that cannot be read leaves the comparison undone */
		if (st == RI_ST_INTEGRITY)
			fail(a, "8.1.1", NULL, NULL, NULL, "the open-intents index: %s", a->r->st->ops->error(a->r->st)->msg);
		else
			incomplete(a, "8.1.1", "the open-intents index could not be read: %s",
			    a->r->st->ops->error(a->r->st)->msg);
		json_decref(rows);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *want = json_object_get(a->open_set, oi[i].invocation_id);
		json_object_set_new(rows, oi[i].invocation_id, json_true());
		if (want == NULL)
			fail(a, "8.1.1", oi[i].invocation_id, oi[i].event_id, NULL,
			    "the open-intents index holds an intent the records do not leave open (an added or stale row)");
		else if (json_integer_value(json_object_get(want, "seq")) != oi[i].seq ||
		    !streq(json_string_value(json_object_get(want, "event_id")), oi[i].event_id))
			fail(a, "8.1.1", oi[i].invocation_id, oi[i].event_id, NULL,
			    "the open-intents index's row for this invocation is not its intent (an altered row)");
	}
	json_object_foreach(a->open_set, inv, v)
		if (json_object_get(rows, inv) == NULL)
			fail(a, "8.1.1", inv, json_string_value(json_object_get(v, "event_id")), NULL,
			    "an open intent is missing from the open-intents index: the sweep would never see it"
			    " (a deleted row; ri-sweep --rebuild)");
	ri_open_intents_free(oi, n);
	json_decref(rows);
}

/* The actor registry's rows against its records: a row that says active
 * while the records revoked the actor (an older row replayed) shows even
 * without the key (with it, the row's MAC and its bound registry seq
 * already said so). */
static void
registry_rows(struct audit *a)
{
	struct ri_actor *v = NULL;
	size_t n = 0;
	int st;

	if ((st = a->r->st->ops->actor_list(a->r->st, &v, &n)) != RI_ST_OK) {
		if (st == RI_ST_INTEGRITY)
			fail(a, "8.1.6", NULL, NULL, NULL, "the actor registry: %s", a->r->st->ops->error(a->r->st)->msg);
		else
			incomplete(a, "8.1.6", "the actor registry could not be read: %s",
			    a->r->st->ops->error(a->r->st)->msg);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_object_get(a->actors, v[i].actor_ref);
		json_t *rv = e ? json_object_get(e, "revoked") : NULL;
		if (e == NULL)
			fail(a, "8.1.6", NULL, NULL, NULL, "actor %s has a registry row but no registration record",
			    v[i].actor_ref);
		else if (rv != NULL && v[i].revoked_at == RI_NONE)
			fail(a, "8.1.6", NULL, NULL, NULL, "actor %s's registry row says active, but the records revoked it"
			    " (an older row replayed)", v[i].actor_ref);
	}
	ri_actors_free(v, n);
}

static void
conditions(struct audit *a)
{
	/* Check 4.1: recomputed from the config */
	for (size_t i = 0; i < a->c->n_kinds; i++) {
		struct ri_condition cond[5];
		ri_conditions(a->c, &a->c->kinds[i], cond);
		for (int n = 0; n < 5; n++)
			if (!cond[n].pass)
				fail(a, "4.1", NULL, NULL, NULL, "kind %s: condition %d (%s) fails: %s",
				    a->c->kinds[i].name, cond[n].number, cond[n].rule, cond[n].arithmetic);
	}
}

/* What is judged once the traversal has reached the journal's end: the
 * derived index and the registry rows against the records, the journal
 * against its witness, the seals an outside auditor checks, the expected
 * head. */
static void
judge_end(struct audit *a)
{
	const struct ri_audit_opts *o = a->o;
	ri_err e;

	derived_index(a);
	registry_rows(a);
	if (a->have_witness && a->last_seq < a->witness.seq)
		fail(a, "8.1.9", NULL, NULL, NULL,
		    "the journal ends at seq %lld, behind its witness (seq %lld): rolled back or restored"
		    " (ri(7): restoring a journal)", (long long)a->last_seq, (long long)a->witness.seq);
	if (o->copy && a->w != NULL) {
		/* a past state of the witnessed history: its head is a line of
		 * the witness (or, where that line cannot be verified or was lost,
		 * its newest seal is) */
		bool found = false;
		if (a->last_seq > 0 && ri_witness_find(a->w, a->last_seq, a->last_hash, &found, &e) != RI_OK)
			fail(a, "8.1.9", NULL, NULL, NULL, "%s", e.msg);
		else if (found)
			note(a, "8.1.9", "the copy's head is a line of the witness");
		else if (a->seal_rec_seq == 0)
			fail(a, "8.1.9", NULL, NULL, NULL, "the copy holds no seal that verifies");
		else if (ri_witness_find(a->w, a->seal_rec_seq, a->seal_rec_hash, &found, &e) != RI_OK)
			fail(a, "8.1.9", NULL, NULL, NULL, "%s", e.msg);
		else if (!found)
			fail(a, "8.1.9", NULL, NULL, NULL,
			    "the copy's newest seal (seq %lld) is not in the witness: it is not a past state of this"
			    " instance's witnessed history", (long long)a->seal_rec_seq);
		else
			note(a, "8.1.9", "the copy's newest seal is a line of the witness");
	}
	/* seals an outside auditor can check: a journal without one, or whose
	 * newest seal is too old, is not vouched for (the genesis seal means
	 * every journal ri-init made has one) */
	if (o->public_key != NULL) {
		/* default: the compensation window -- a healthy instance sweeps,
		 * and so seals, well within it (Instance start 5) */
		ri_ms bound = o->max_unsealed != RI_NONE ? o->max_unsealed : a->c->compensation_window;
		if (a->seals == 0)
			fail(a, "8.1.9", NULL, NULL, NULL, "the journal holds no seal that verifies under the public key");
		else if (a->tail > 0 && a->tail_oldest != RI_NONE && a->now - a->tail_oldest > bound)
			fail(a, "8.1.9", NULL, NULL, NULL,
			    "%lld records after the newest seal (from seq %lld), the oldest recorded %lld s ago,"
			    " past the bound of %lld s (--max-unsealed): the seals were stripped, or sealing stopped",
			    (long long)a->tail, (long long)a->tail_from, (long long)((a->now - a->tail_oldest) / 1000),
			    (long long)(bound / 1000));
	}
	if (o->expect_seq > 0 && !a->expect_seen)
		fail(a, "8.1.9", NULL, NULL, NULL, "the journal ends before the expected head seq %lld: truncated",
		    (long long)o->expect_seq);
}

int
ri_audit(ri *r, const struct ri_audit_opts *o, json_t **ans, ri_err *err)
{
	struct audit a = { .r = r, .c = r->cfg, .o = o, .checks = json_object(), .actors = json_object(),
		.open_by_act = json_object(), .inv_act = json_object(), .restores = json_object(), .latency = json_object(),
		.needs = json_array(), .open_set = json_object() };
	json_t *findings = json_array();
	unsigned char hh0[32];
	int64_t total = 0;
	ri_err e;
	int rc, st;

	*ans = NULL;
	if (o->probe)
		a.probers = ri_prober_new(a.c);
	if ((rc = ri_now(a.c, &a.now, err)) != RI_OK)
		goto out;
	for (size_t i = 0; check_ids[i] != NULL; i++)
		json_object_set_new(a.checks, check_ids[i], json_pack("{s:s, s:s, s:[], s:{}}", "status", "pass",
		    "name", check_names[i], "failures", "notes"));
	/* the public key: given, or the instance's own */
	{
		char path[4200];
		const char *pkf = o->public_key;
		if (pkf == NULL) {
			snprintf(path, sizeof path, "%s.pub", a.c->seal_key_file);
			pkf = path;
		}
		a.have_pk = ri_seal_pub_load(pkf, a.pk, a.pk_instance, &a.pk_has_instance, &e) == RI_OK;
		if (!a.have_pk && o->public_key != NULL) {
			rc = ri_fail(err, RI_CONFIG, "%s", e.msg);
			goto out;
		}
		/* the instance's own, there and unreadable (a FIFO, a bad file):
		 * the seals go unverified -- incomplete, not a pass */
		if (!a.have_pk && access(pkf, F_OK) == 0)
			incomplete(&a, "8.1.9", "%s", e.msg);
	}
	memcpy(a.last_hash, r->st->ops->genesis(r->st), RI_HASH_LEN);
	a.tail_oldest = RI_NONE;
	/* the public key names the instance it seals: another instance's key
	 * fails, however well its signatures verify */
	if (a.have_pk && !a.pk_has_instance)
		fail(&a, "8.1.9", NULL, NULL, NULL, "the public key names no instance; it cannot vouch for this journal");
	else if (a.have_pk && sodium_memcmp(a.pk_instance, r->st->ops->instance_id(r->st), RI_INSTANCE_LEN) != 0)
		fail(&a, "8.1.9", NULL, NULL, NULL, "the public key is another instance's: it cannot vouch for this journal");
	/* the witness: its highest line (the live journal is judged against
	 * it), or -- for a copy -- every line (issue 39) */
	if (a.c->witness == NULL) {
		note(&a, "8.1.9", "no witness configured: a rollback is not checked");
	} else if (ri_witness_open(a.c->witness, r->st->ops->instance_id(r->st), r->key, r->keylen,
	    a.have_pk ? a.pk : NULL, &a.w, &e) != RI_OK) {
		fail(&a, "8.1.9", NULL, NULL, NULL, "%s", e.msg);
	} else if (!o->copy) {
		if (ri_witness_newest(a.w, &a.witness, &e) != RI_OK) {
			fail(&a, "8.1.9", NULL, NULL, NULL, "%s", e.msg);
		} else {
			a.have_witness = true;
			/* without the integrity key an append's line cannot be
			 * verified: it is a claim the journal must reach -- which can
			 * only fail it, never pass it */
			if (!a.witness.verified)
				note(&a, "8.1.9", "the witness's highest line is MACed under the integrity key: without"
				    " it, the line is a claim the journal must reach, not verified");
		}
	}
	/* issue 41 point 5: on PostgreSQL the instance's one register, in
	 * the journal's database -- whichever host audits reads the same */
	const char *regpath = o->findings ? o->findings : ri_findings_location(a.c);
	if (ri_findings_open(regpath, true, &a.reg, &e) == RI_OK) {
		a.have_register = true;
		if (ri_findings_each(a.reg, false, NULL, load_span, &a, &e) != RI_OK)
			register_unread(&a, e.msg);
		/* issue 40 point 7: the keyless exception is bounded; past the
		 * bound every such row failed above, and the bound is named */
		int64_t keyless = ri_findings_keyless(a.reg);
		if (keyless > RI_FINDINGS_KEYLESS_MAX && r->key != NULL)
			fail(&a, "8.1.3", NULL, NULL, NULL, "%lld unauthenticated start-refused rows in the findings"
			    " register, past the bound of %d a key outage leaves: none is excused as a keyless refusal",
			    (long long)keyless, RI_FINDINGS_KEYLESS_MAX);
	} else {
		a.reg = NULL;
		/* none at all is no register (3.5 not applicable); one that is
		 * there and cannot be read leaves its checks undone */
		if (access(regpath, F_OK) == 0)
			register_unread(&a, e.msg);
	}
	if (r->key == NULL)
		not_applicable(&a, "8.1.3", "no integrity key: the chain and the seals are verified, the MACs are not");
	if (!o->probe) {
		not_applicable(&a, "6.1", "run with --probe to ask each kind's store");
		not_applicable(&a, "6.3", "run with --probe to ask each kind's store");
		not_applicable(&a, "6.5", "run with --probe to ask each kind's store");
	}
	conditions(&a);
	if (o->progress && r->st->ops->head(r->st, &total, hh0) != RI_ST_OK)
		total = 0;
	ri_progress_begin(&a.prog, o->progress, "records", total);
	/* what is not a record: the schema, the tree of scope heads against
	 * the records, the open-intents accumulator, leases, marks, actors --
	 * beside the traversal */
	struct state_run sr;
	memo_new(&a);
	pending_begin(&a);
	state_begin(&a, &sr);
	/* bindings are history (issue 41): the journal's, loaded before the
	 * traversal; one written since joins as the traversal meets it */
	{
		char **ks = NULL;
		size_t nk = 0;
		if (ri_bindings_kinds(r, &ks, &nk) == RI_ST_OK)
			ri_strings_free(ks, nk);
	}
	st = r->st->ops->traverse(r->st, each_record, &a);
	pending_end(&a, st == RI_ST_OK);
	ri_progress_end(&a.prog, a.records);
	state_end(&a, &sr);
	if (st == RI_ST_OK) {
		judge_end(&a);
	} else {
		/* the traversal stopped before the journal's end: nothing it
		 * feeds is a pass (INTERFACE third wave; issue 40 point 1) --
		 * only the config's own arithmetic (Check 4.1) stands whole */
		const char *msg = r->st->ops->error(r->st)->msg;
		if (st == RI_ST_INTEGRITY)
			fail(&a, "8.1.1", NULL, NULL, NULL, "the traversal stopped after seq %lld: %s",
			    (long long)a.last_seq, msg);
		for (size_t i = 0; check_ids[i] != NULL; i++)
			if (strcmp(check_ids[i], "4.1") != 0)
				incomplete(&a, check_ids[i], "the traversal stopped after seq %lld: %s",
				    (long long)a.last_seq, msg);
	}
	if (!a.have_register)
		not_applicable(&a, "3.5", "no findings register");
	/* Check 6.2: a check the probe could never answer is not applicable,
	 * not passed */
	for (const char *const *id = (const char *const[]){ "6.1", "6.3", "6.5", NULL }; *id; id++) {
		json_t *n = json_object_get(check(&a, *id), "notes");
		if (json_object_get(n, "probe unavailable (not applicable)") != NULL &&
		    json_object_get(n, "judged by the probe") == NULL)
			not_applicable(&a, *id, "the store was unavailable to every probe (Check 6.2)");
	}
	if (a.excluded > 0) {
		char msg[96];
		snprintf(msg, sizeof msg, "%lld intents excluded: payload purged (Check 7.1-7.2)", (long long)a.excluded);
		json_object_set_new(check(&a, "7.1"), "note", json_string(msg));
	}
	json_t *list = json_array();
	bool any_fail = false;
	for (size_t i = 0; check_ids[i] != NULL; i++) {
		json_t *c = json_deep_copy(check(&a, check_ids[i]));
		const char *status = json_string_value(json_object_get(c, "status"));
		json_object_set_new(c, "check", json_string(check_ids[i]));
		if (json_object_size(json_object_get(c, "notes")) == 0)
			json_object_del(c, "notes");
		/* a check not completed fails the audit as a failed one does */
		any_fail = any_fail || strcmp(status, "fail") == 0 || strcmp(status, "incomplete") == 0;
		json_array_append_new(list, c);
	}
	char hh[65];
	ri_hex(a.last_hash, 32, hh);
	*ans = json_pack("{s:I, s:{s:I, s:s}, s:o}", "records", (json_int_t)a.records, "head", "seq",
	    (json_int_t)a.last_seq, "hash", hh, "checks", list);
	if (a.sealed_seq > 0 || a.seals > 0)
		json_object_set_new(*ans, "sealed_seq", json_integer(a.sealed_seq));
	/* the figures of the report (ri-audit(1), --html): the tally, closure
	 * latency per kind, the outage spans and findings, and the acts that
	 * still need an operator */
	json_t *tally = json_pack("{s:I, s:I, s:I, s:I}", "pass", (json_int_t)0, "fail", (json_int_t)0,
	    "not-applicable", (json_int_t)0, "incomplete", (json_int_t)0);
	size_t ci;
	json_t *cv;
	json_array_foreach(list, ci, cv)
		bump(tally, json_string_value(json_object_get(cv, "status")), 1);
	json_object_set_new(*ans, "tally", tally);
	json_t *lat = json_array();
	const char *lk;
	json_t *lv;
	json_object_foreach(a.latency, lk, lv)
		json_array_append(lat, lv);
	json_object_set_new(*ans, "latency", lat);
	json_t *outages = json_array();
	for (size_t i = 0; i < a.n_spans; i++)
		json_array_append_new(outages, json_pack("{s:s, s:o, s:o, s:o}", "finding", a.spans[i].finding,
		    "kind", a.spans[i].kind ? json_string(a.spans[i].kind) : json_null(), "start",
		    ri_json_instant(a.spans[i].start), "end", ri_json_instant(a.spans[i].end)));
	json_object_set_new(*ans, "outages", outages);
	if (a.reg != NULL) {
		struct finding_ctx fx = { findings, r };
		ri_findings_each(a.reg, false, NULL, finding_row, &fx, NULL);
	}
	json_object_set(*ans, "findings", findings);
	json_object_set(*ans, "needs_operator", a.needs);
	json_object_set_new(*ans, "audited_at", ri_json_instant(a.now));
	if (a.have_pk)
		json_object_set_new(*ans, "unsealed", a.tail == 0 ? json_pack("{s:i}", "records", 0) :
		    json_pack("{s:I, s:I, s:o}", "records", (json_int_t)a.tail, "from_seq", (json_int_t)a.tail_from,
		    "oldest_recorded_at", ri_json_instant(a.tail_oldest)));
	rc = any_fail ? ri_fail(err, RI_CHECK_FAILED, "one or more checks failed or could not complete") : RI_OK;
out:
	for (size_t i = 0; i < a.n_spans; i++) {
		free(a.spans[i].finding);
		free(a.spans[i].kind);
	}
	free(a.spans);
	ri_prober_free(a.probers);
	ri_findings_close(a.reg);
	memo_free(&a);
	json_decref(a.checks);
	json_decref(a.actors);
	json_decref(a.open_by_act);
	json_decref(a.inv_act);
	json_decref(a.restores);
	json_decref(a.latency);
	json_decref(a.needs);
	json_decref(findings);
	json_decref(a.open_set);
	ri_witness_line_clear(&a.witness);
	ri_witness_close(a.w);
	return rc;
}
