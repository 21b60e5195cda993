/* bindings.c -- bindings are history: each change recorded, each record
 * judged by the binding of its time (bindings.h; issue 41). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "protocol/bindings.h"
#include "util/nc.h"
#include "protocol/proto.h"

static const char scope[] = "bindings:";

struct bound {
	int64_t seq;
	struct ri_kind k;
	json_t *bindings, *instance;    /* as recorded */
};

struct ri_bindings {
	bool loaded;
	int64_t upto;                   /* the highest seq the history holds */
	int64_t scope_seen;             /* the bindings scope's newest record read (0: none) */
	struct bound *v;
	size_t n, cap;
};

static const char *const pairing_names[] = { "nonce", "now", "none" };

json_t *
ri_bindings_json(const struct ri_config *c, const struct ri_kind *k)
{
	json_t *outs = json_array();

	for (size_t i = 0; i < k->n_outcomes; i++)
		json_array_append_new(outs, json_string(k->outcomes[i]));
	json_t *b = json_pack("{s:o, s:b, s:I, s:I, s:I, s:I, s:b, s:s, s:I, s:I, s:s?}",
	    "outcomes", outs, "repeatable", k->repeatable, "completion_bound", (json_int_t)k->completion_bound,
	    "commit_round_trip", (json_int_t)k->commit_round_trip, "probe_round_trip", (json_int_t)k->probe_round_trip,
	    "retention_period", (json_int_t)k->retention_period, "commit_fence", k->commit_fence,
	    "pairing_datum", pairing_names[k->pairing_datum], "outcome_envelope", (json_int_t)k->outcome_envelope,
	    "retry_counted", (json_int_t)k->retry_counted, "service_identity", k->service_actor);
	if (k->service_actor == NULL)
		json_object_set_new(b, "service_identity", json_null());
	json_t *inst = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}",
	    "clock_offset_allowance", (json_int_t)c->clock_offset_allowance,
	    "reconciliation_cadence", (json_int_t)c->reconciliation_cadence, "run_bound", (json_int_t)c->run_bound,
	    "closure_latency", (json_int_t)c->closure_latency, "journal_write_bound", (json_int_t)c->journal_write_bound,
	    "read_bound", (json_int_t)c->read_bound, "compensation_window", (json_int_t)c->compensation_window,
	    "intent_candidates_cap", (json_int_t)c->intent_candidates_cap, "read_cap", (json_int_t)c->read_cap,
	    "reference_length_cap", (json_int_t)c->reference_length_cap, "payload_cap", (json_int_t)c->payload_cap,
	    "journal_fence", c->journal_fence);
	return json_pack("{s:s, s:o, s:o}", "kind", k->name, "bindings", b, "instance", inst);
}

json_t *
ri_bindings_genesis(const struct ri_config *c)
{
	json_t *all = json_object();

	for (size_t i = 0; i < c->n_kinds; i++)
		json_object_set_new(all, c->kinds[i].name, ri_bindings_json(c, &c->kinds[i]));
	return json_pack("{s:o}", "bindings", all);
}

static ri_ms
ms(json_t *o, const char *k)
{
	return (ri_ms)json_integer_value(json_object_get(o, k));
}

/* A kind as an audit.bound payload states it (false: malformed). */
static bool
decode(json_t *payload, struct ri_kind *k)
{
	json_t *b = json_object_get(payload, "bindings"), *outs = json_object_get(b, "outcomes"), *v;
	const char *name = json_string_value(json_object_get(payload, "kind"));
	const char *pd = json_string_value(json_object_get(b, "pairing_datum"));
	size_t i;

	memset(k, 0, sizeof *k);
	if (name == NULL || !json_is_object(b) || !json_is_array(outs) || pd == NULL)
		return false;
	k->name = ri_strdup(name);
	k->n_outcomes = json_array_size(outs);
	k->outcomes = ri_xcalloc(k->n_outcomes + 1, sizeof *k->outcomes);
	json_array_foreach(outs, i, v)
		k->outcomes[i] = ri_strdup(json_is_string(v) ? json_string_value(v) : "");
	k->repeatable = json_is_true(json_object_get(b, "repeatable"));
	k->completion_bound = ms(b, "completion_bound");
	k->commit_round_trip = ms(b, "commit_round_trip");
	k->probe_round_trip = ms(b, "probe_round_trip");
	k->retention_period = ms(b, "retention_period");
	k->commit_fence = json_is_true(json_object_get(b, "commit_fence"));
	k->pairing_datum = strcmp(pd, "now") == 0 ? RI_PAIR_NOW : strcmp(pd, "none") == 0 ? RI_PAIR_NONE : RI_PAIR_NONCE;
	k->outcome_envelope = ms(b, "outcome_envelope");
	k->retry_counted = ms(b, "retry_counted");
	if (json_is_string(json_object_get(b, "service_identity")))
		k->service_actor = ri_strdup(json_string_value(json_object_get(b, "service_identity")));
	return true;
}

static struct ri_bindings *
hist(struct ri *r)
{
	if (r->bindings == NULL)
		r->bindings = ri_xcalloc(1, sizeof *r->bindings);
	return r->bindings;
}

static void
add(struct ri_bindings *h, const struct ri_record *rec)
{
	struct bound b = { .seq = rec->seq };

	if (rec->seq <= h->upto || rec->payload == NULL || !decode(rec->payload, &b.k)) {
		if (b.k.name != NULL)
			ri_kind_free(&b.k);
		return;
	}
	b.bindings = json_incref(json_object_get(rec->payload, "bindings"));
	b.instance = json_incref(json_object_get(rec->payload, "instance"));
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 8;
		h->v = realloc(h->v, h->cap * sizeof *h->v);
		if (h->v == NULL)
			abort();
	}
	h->v[h->n++] = b;
	h->upto = rec->seq;
}

void
ri_bindings_feed(struct ri *r, const struct ri_record *rec)
{
	if (strcmp(rec->action_ref, "audit.bound") == 0 && strcmp(rec->act_key, scope) == 0 && rec->seq > 1)
		add(hist(r), rec);
}

/* The founding bindings in the genesis seal (seq 1), each at seq 1. */
static int
load_genesis(struct ri *r, struct ri_bindings *h)
{
	struct ri_query q = { .from = 1, .limit = 1 };
	struct ri_records rs;
	const char *kind;
	json_t *v;
	int st;

	if ((st = r->st->ops->range_read(r->st, &q, &rs)) != RI_ST_OK)
		return st;
	if (rs.n == 1 && rs.v[0].seq == 1 && strcmp(rs.v[0].action_ref, "audit.sealed") == 0 &&
	    json_is_object(json_object_get(rs.v[0].payload, "bindings"))) {
		json_object_foreach(json_object_get(rs.v[0].payload, "bindings"), kind, v) {
			struct ri_record rec = { .seq = 1, .payload = v };
			h->upto = 0;
			add(h, &rec);
		}
	}
	ri_records_clear(&rs);
	return RI_ST_OK;
}

/* Every audit.bound past what the history holds, in seq order. */
static int
load(struct ri *r)
{
	struct ri_bindings *h = hist(r);
	struct ri_query q = { .from = h->upto + 1, .limit = 64, .kind = "audit", .act_key = scope };
	int st;

	if (!h->loaded && h->upto == 0 && (st = load_genesis(r, h)) != RI_ST_OK)
		return st;
	q.from = h->upto + 1;
	for (;;) {
		struct ri_records page;
		if ((st = r->st->ops->range_read(r->st, &q, &page)) != RI_ST_OK)
			return st;
		for (size_t i = 0; i < page.n; i++) {
			if (page.v[i].seq > h->scope_seen)
				h->scope_seen = page.v[i].seq;
			if (strcmp(page.v[i].action_ref, "audit.bound") == 0)
				add(h, &page.v[i]);
		}
		bool more = page.more;
		q.from = page.next;
		ri_records_clear(&page);
		if (!more)
			break;
	}
	h->loaded = true;
	return RI_ST_OK;
}

size_t
ri_bindings_ahead(struct ri *r, struct ri_query q[2])
{
	struct ri_bindings *h = hist(r);
	size_t n = 0;

	if (h->loaded)
		return 0;
	if (h->upto == 0)
		q[n++] = (struct ri_query){ .from = 1, .limit = 1 };    /* load_genesis */
	/* load's first page: past the genesis seal, whose founding bindings
	 * stand at seq 1 (a journal whose genesis holds none reads from 1,
	 * a read not announced, which runs on its own) */
	q[n++] = (struct ri_query){ .from = h->upto > 0 ? h->upto + 1 : 2, .limit = 64, .kind = "audit",
		.act_key = scope };
	return n;
}

int
ri_bindings_at(struct ri *r, const char *kind, int64_t seq, const struct ri_kind **out)
{
	struct ri_bindings *h = hist(r);
	int st;

	*out = NULL;
	if (!h->loaded && (st = load(r)) != RI_ST_OK)
		return st;
	/* negative control: today's config judges every record */
	for (size_t i = h->n; i-- > 0 && !RI_NC(RI_NC_BINDINGS_TODAY);)
		if (h->v[i].seq < seq && strcmp(h->v[i].k.name, kind) == 0) {
			*out = &h->v[i].k;
			return RI_ST_OK;
		}
	*out = r->cfg != NULL ? ri_config_kind(r->cfg, kind) : NULL;
	return RI_ST_OK;
}

int
ri_bindings_due(struct ri *r, const struct ri_kind *k, struct ri_append *a)
{
	struct ri_bindings *h = hist(r);
	json_t *want, **bound = &a->bound;
	const struct bound *have = NULL;
	int st;

	*bound = NULL;
	if (!h->loaded && (st = load(r)) != RI_ST_OK)
		return st;
	/* the decision below holds only while the scope is as read: the
	 * store judges that under the append's head lock */
	a->bindings_guard = true;
	a->bindings_seen = h->scope_seen;
	want = ri_bindings_json(r->cfg, k);
	for (size_t i = h->n; i-- > 0 && have == NULL;)
		if (strcmp(h->v[i].k.name, k->name) == 0)
			have = &h->v[i];
	/* the instance's bounds judge the kind's records too (Check 3's
	 * window): a change of them is a change of the kind's binding */
	if (have != NULL && json_equal(have->bindings, json_object_get(want, "bindings")) &&
	    json_equal(have->instance, json_object_get(want, "instance"))) {
		json_decref(want);
		return RI_ST_OK;
	}
	*bound = want;
	return RI_ST_OK;
}

void
ri_bindings_landed(struct ri *r, json_t *bound, int64_t seq)
{
	/* what landed joins the history (a concurrent writer's record of the
	 * same change is read at the next load) */
	struct ri_record rec = { .seq = seq - 1, .action_ref = "audit.bound", .act_key = (char *)scope,
		.payload = bound };

	if (bound != NULL && seq > 1) {
		add(hist(r), &rec);
		if (rec.seq > hist(r)->scope_seen)
			hist(r)->scope_seen = rec.seq;
	}
}

int
ri_bindings_append(struct ri *r, const struct ri_kind *k, struct ri_append *a, struct ri_appended *ap,
    bool *unread)
{
	int st;

	for (int tries = 0;; tries++) {
		*unread = false;
		a->bound = NULL;
		if (k != NULL && (st = ri_bindings_due(r, k, a)) != RI_ST_OK) {
			*unread = true;
			return st;
		}
		st = r->st->ops->record_action(r->st, a, ap);
		if (st == RI_ST_OK)
			ri_bindings_landed(r, a->bound, ap->seq);
		json_decref(a->bound);
		a->bound = NULL;
		if (st != RI_ST_STALE_BINDINGS)
			return st;
		/* another writer recorded the kind's bindings since this one
		 * read them (nothing was written): read them again and decide
		 * anew -- bounded, as a writer rebinding without end is no
		 * lawful instance */
		if (tries == 3)
			return RI_ST_STEP2;
		hist(r)->loaded = false;
	}
}

int
ri_bindings_kinds(struct ri *r, char ***kinds, size_t *n)
{
	struct ri_bindings *h = hist(r);
	int st;

	*kinds = NULL;
	*n = 0;
	if (!h->loaded && (st = load(r)) != RI_ST_OK)
		return st;
	for (size_t i = 0; i < h->n; i++) {
		bool seen = false;
		for (size_t j = 0; j < *n && !seen; j++)
			seen = strcmp((*kinds)[j], h->v[i].k.name) == 0;
		if (seen)
			continue;
		*kinds = realloc(*kinds, (*n + 1) * sizeof **kinds);
		if (*kinds == NULL)
			abort();
		(*kinds)[(*n)++] = ri_strdup(h->v[i].k.name);
	}
	return RI_ST_OK;
}

int
ri_bindings_instance(struct ri *r, json_t **instance)
{
	struct ri_bindings *h = hist(r);
	int st;

	*instance = NULL;
	if (!h->loaded && (st = load(r)) != RI_ST_OK)
		return st;
	if (h->n > 0)
		*instance = json_incref(h->v[h->n - 1].instance);
	return RI_ST_OK;
}

void
ri_bindings_free(struct ri *r)
{
	struct ri_bindings *h = r->bindings;

	if (h == NULL)
		return;
	for (size_t i = 0; i < h->n; i++) {
		ri_kind_free(&h->v[i].k);
		json_decref(h->v[i].bindings);
		json_decref(h->v[i].instance);
	}
	free(h->v);
	free(h);
	r->bindings = NULL;
}

/* ---- a config from the journal's own bindings (ri-audit --journal) ---- */

static json_t *
config_kind(json_t *b)
{
	json_t *k = json_object(), *v;
	const char *key;
	json_int_t counted = json_integer_value(json_object_get(b, "retry_counted"));

	json_object_foreach(b, key, v) {
		if (strcmp(key, "retry_counted") == 0 || strcmp(key, "service_identity") == 0 ||
		    strcmp(key, "commit_fence") == 0)
			continue;
		json_object_set(k, key, v);
	}
	json_object_set_new(k, "commit_fence", json_string(json_is_true(json_object_get(b, "commit_fence")) ?
	    "declared" : "none"));
	json_object_set_new(k, "retry_terminus", counted > 0 ? json_pack("{s:I}", "counted", counted) :
	    json_string("lease"));
	/* no probe: Check 6 needs the adopter's store, which the auditor runs
	 * with the config (--probe) */
	json_object_set_new(k, "probe", json_pack("[s]", "/bin/false"));
	if (json_is_string(json_object_get(b, "service_identity")))
		json_object_set_new(k, "service_identity", json_pack("{s:O, s:s}", "actor_ref",
		    json_object_get(b, "service_identity"), "credential_file", "/nonexistent"));
	else
		json_object_set_new(k, "service_identity", json_null());
	return k;
}

static json_t *
config_root(const char *journal, const char *witness, const char *findings, json_t *instance, json_t *kinds)
{
	json_t *inst = json_deep_copy(instance);

	json_object_set_new(inst, "journal_fence", json_string(json_is_true(json_object_get(instance,
	    "journal_fence")) ? "declared" : "none"));
	return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "journal", journal, "findings",
	    findings != NULL ? findings : "/nonexistent/findings.db", "integrity_key_file", "/nonexistent/journal.key",
	    "seal_key_file", "/nonexistent/seal.key", "witness", witness != NULL ? json_string(witness) : json_null(),
	    "instance", inst, "kinds", kinds);
}

static int config_from_journal(const char *journal, const char *witness, const char *findings,
    struct ri_config **out, ri_err *err);

/* An absolute path (the config's directory resolves nothing here). */
static char *
absolute(const char *p)
{
	char cwd[4096], *out;

	if (p == NULL || p[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
		return p != NULL ? ri_strdup(p) : NULL;
	out = ri_xmalloc(strlen(cwd) + strlen(p) + 2);
	sprintf(out, "%s/%s", cwd, p);
	return out;
}

int
ri_config_from_journal(const char *journal_in, const char *witness_in, const char *findings_in,
    struct ri_config **out, ri_err *err)
{
	char *journal = absolute(journal_in), *witness = absolute(witness_in), *findings = absolute(findings_in);
	int rc = config_from_journal(journal, witness, findings, out, err);

	free(journal);
	free(witness);
	free(findings);
	return rc;
}

static int
config_from_journal(const char *journal, const char *witness, const char *findings,
    struct ri_config **out, ri_err *err)
{
	/* a bootstrap config, only to open the journal as it is */
	json_t *boot_inst = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}",
	    "clock_offset_allowance", (json_int_t)2000, "reconciliation_cadence", (json_int_t)60000, "run_bound",
	    (json_int_t)135000, "closure_latency", (json_int_t)12000, "journal_write_bound", (json_int_t)3000,
	    "read_bound", (json_int_t)2000, "compensation_window", (json_int_t)600000, "intent_candidates_cap",
	    (json_int_t)16, "read_cap", (json_int_t)20, "reference_length_cap", (json_int_t)256, "payload_cap",
	    (json_int_t)65536, "journal_fence", 0);
	json_t *boot_kind = json_pack("{s:{s:[s], s:b, s:I, s:I, s:I, s:I, s:b, s:s, s:I, s:I, s:n}}", "boot",
	    "outcomes", "done", "repeatable", 1, "completion_bound", (json_int_t)30000, "commit_round_trip",
	    (json_int_t)1000, "probe_round_trip", (json_int_t)1000, "retention_period", (json_int_t)34560000000LL,
	    "commit_fence", 0, "pairing_datum", "none", "outcome_envelope", (json_int_t)4096, "retry_counted",
	    (json_int_t)0, "service_identity");
	json_t *kinds = json_object(), *root, *inst = NULL;
	struct ri boot = { .flags = RI_READONLY | RI_INSPECT | RI_NO_KEY };
	char **names = NULL;
	size_t n = 0;
	int rc, st;

	*out = NULL;
	json_object_set_new(kinds, "boot", config_kind(json_object_get(boot_kind, "boot")));
	json_decref(boot_kind);
	root = config_root(journal, NULL, findings, boot_inst, kinds);
	json_decref(boot_inst);
	rc = ri_config_from_json(root, journal, &boot.cfg, err);
	json_decref(root);
	if (rc != RI_OK)
		return rc;
	if ((rc = ri_instance_store(&boot, &boot.st, err)) != RI_OK) {
		ri_config_free(boot.cfg);
		return rc;
	}
	if ((st = ri_bindings_kinds(&boot, &names, &n)) != RI_ST_OK || (st = ri_bindings_instance(&boot, &inst)) != RI_ST_OK) {
		rc = ri_fail(err, st == RI_ST_INTEGRITY ? RI_INTEGRITY : RI_JOURNAL_UNAVAILABLE,
		    "journal %s: its bindings cannot be read: %s", journal, boot.st->ops->error(boot.st)->msg);
		goto out;
	}
	if (n == 0 || inst == NULL) {
		rc = ri_fail(err, RI_CONFIG, "journal %s records no bindings (it was made before they were recorded):"
		    " give the instance's config (-c)", journal);
		goto out;
	}
	kinds = json_object();
	for (size_t i = 0; i < n; i++) {
		const struct ri_kind *k = NULL;
		json_t *b = NULL;
		(void)ri_bindings_at(&boot, names[i], INT64_MAX, &k);
		for (size_t j = boot.bindings->n; j-- > 0 && b == NULL;)
			if (strcmp(boot.bindings->v[j].k.name, names[i]) == 0)
				b = boot.bindings->v[j].bindings;
		if (b != NULL)
			json_object_set_new(kinds, names[i], config_kind(b));
	}
	root = config_root(journal, witness, findings, inst, kinds);
	rc = ri_config_from_json(root, journal, out, err);
	json_decref(root);
out:
	json_decref(inst);
	ri_strings_free(names, n);
	ri_bindings_free(&boot);
	boot.st->ops->close(boot.st);
	ri_config_free(boot.cfg);
	return rc;
}
