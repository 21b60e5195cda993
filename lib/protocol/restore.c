/* restore.c -- a restored journal accepted, and the acts it lost held back
 * until their stores have been asked again (restore.h; issue 39). */
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "protocol/seal.h"
#include "util/clock.h"
#include "util/nc.h"
#include "protocol/proto.h"
#include "protocol/restore.h"
#include "util/vocab.h"
#include "store/witness.h"

#define FORK_TRIES 4096         /* witnessed heads tried against the restored journal */
#define ACTS_PER_RECORD 64      /* acts an audit.restored record lists (then another) */

static const char restore_scope[] = "restore:";

void
ri_marker_key(const char *kind, const char *act_key, char *buf, size_t n)
{
	snprintf(buf, n, "unreconciled:%s:%s", kind, act_key);
}

/* Who runs this: the login name of the effective user. */
static const char *
who(void)
{
	struct passwd *pw = getpwuid(geteuid());

	return pw != NULL && pw->pw_name != NULL ? pw->pw_name : "unknown";
}

/* ---- the restored journal -------------------------------------------------- */

struct clean {
	int64_t problems;
	char first[512];
	json_t *acts;                   /* --all-unreconciled: every act named, "kind\n act_key" */
};

static int
count_problem(const struct ri_record *rec, unsigned problems, void *arg)
{
	struct clean *c = arg;

	if (problems != 0) {
		if (c->problems++ == 0)
			snprintf(c->first, sizeof c->first, "record seq %lld (%s) fails verification", (long long)rec->seq,
			    rec->event_id);
	} else if (c->acts != NULL && rec->invocation_id != NULL && strcmp(rec->kind, "audit") != 0) {
		json_t *a = json_object_get(c->acts, rec->kind);
		if (a == NULL)
			json_object_set_new(c->acts, rec->kind, a = json_object());
		json_object_set_new(a, rec->act_key, json_true());
	}
	return 0;
}

/* The restored journal's record at seq: its hash (*held false when the
 * journal holds no such record). */
static int
hash_at(struct ri *r, int64_t seq, unsigned char hash[RI_HASH_LEN], bool *held)
{
	struct ri_query q = { .from = seq, .limit = 1 };
	struct ri_records rs;
	int st;

	*held = false;
	if ((st = r->st->ops->range_read(r->st, &q, &rs)) != RI_ST_OK)
		return st;
	if (rs.n == 1 && rs.v[0].seq == seq) {
		memcpy(hash, rs.v[0].hash, RI_HASH_LEN);
		*held = true;
	}
	ri_records_clear(&rs);
	return RI_ST_OK;
}

/* ---- the witness's lines ----------------------------------------------------- */

struct wl {
	int64_t epoch, seq;
	unsigned char hash[RI_HASH_LEN];
	size_t idx;                     /* its place in the file */
};

struct lines {
	struct wl *v;
	size_t n, cap;
};

static int
collect(const struct ri_witness_line *l, void *arg)
{
	struct lines *ls = arg;

	if (ls->n == ls->cap) {
		ls->cap = ls->cap ? ls->cap * 2 : 1024;
		ls->v = realloc(ls->v, ls->cap * sizeof *ls->v);
		if (ls->v == NULL)
			abort();
	}
	ls->v[ls->n] = (struct wl){ .epoch = l->epoch, .seq = l->seq, .idx = ls->n };
	memcpy(ls->v[ls->n].hash, l->hash, RI_HASH_LEN);
	ls->n++;
	return 0;
}

static int
by_rank_desc(const void *a, const void *b)
{
	const struct wl *x = a, *y = b;

	if (x->epoch != y->epoch)
		return x->epoch > y->epoch ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq > y->seq ? -1 : 1;
	return x->idx > y->idx ? -1 : x->idx < y->idx;
}

static bool
ranks_above(const struct ri_witness_line *l, int64_t epoch, int64_t seq)
{
	return l->epoch > epoch || (l->epoch == epoch && l->seq > seq);
}

/* The lines the restore lost, by act: kinds -> act_key -> invocation ->
 * {intent: the intent's names, lost: [refs]}; substrate lines in redo. */
struct lost {
	struct ri *r;
	int64_t fork_epoch, fork_seq;
	json_t *acts, *redo;
	int64_t lines, top_seq;
	int st;
};

static int
gather(const struct ri_witness_line *l, void *arg)
{
	struct lost *lo = arg;
	const char *kind = ri_witness_name(l, "kind"), *key = ri_witness_name(l, "act_key");
	const char *ref = ri_witness_name(l, "action_ref"), *inv = ri_witness_name(l, "invocation_id");
	unsigned char h[RI_HASH_LEN];
	bool held;

	if (!ranks_above(l, lo->fork_epoch, lo->fork_seq))
		return 0;
	/* a line past the fork whose record the restored journal holds (its
	 * own later records, their lines) was not lost */
	if ((lo->st = hash_at(lo->r, l->seq, h, &held)) != RI_ST_OK)
		return 1;
	if (held && memcmp(h, l->hash, RI_HASH_LEN) == 0)
		return 0;
	lo->lines++;
	if (l->seq > lo->top_seq)
		lo->top_seq = l->seq;
	if (kind == NULL || key == NULL || ref == NULL)
		return 0;               /* a second-wave line: a seal */
	if (strcmp(kind, "audit") == 0 || inv == NULL) {
		/* what an operator must do again: an actor registered or revoked
		 * (a lost revocation is an actor active again); seals, purges,
		 * backups and a restore's own records redo themselves */
		if (strncmp(ref, "audit.actor_", 12) == 0 && json_array_size(lo->redo) < 256)
			json_array_append_new(lo->redo, json_pack("{s:s, s:s, s:I}", "action_ref", ref, "act_key", key,
			    "seq", (json_int_t)l->seq));
		return 0;
	}
	json_t *k = json_object_get(lo->acts, kind);
	if (k == NULL)
		json_object_set_new(lo->acts, kind, k = json_object());
	json_t *a = json_object_get(k, key);
	if (a == NULL)
		json_object_set_new(k, key, a = json_object());
	json_t *e = json_object_get(a, inv);
	if (e == NULL)
		json_object_set_new(a, inv, e = json_pack("{s:[]}", "lost"));
	json_array_append_new(json_object_get(e, "lost"), json_string(ref));
	const char *iev = ri_witness_name(l, "intent_event_id");
	if (strcmp(ref + strlen(kind), ".intended") == 0) {
		json_t *in = json_object();
		json_object_set_new(in, "event_id", json_string(ri_witness_name(l, "event_id")));
		if (ri_witness_name(l, "pairing_datum") != NULL)
			json_object_set_new(in, "pairing_datum", json_string(ri_witness_name(l, "pairing_datum")));
		if (ri_witness_name(l, "actor_ref") != NULL)
			json_object_set_new(in, "actor_ref", json_string(ri_witness_name(l, "actor_ref")));
		json_object_set_new(in, "seq", json_integer(l->seq));
		json_object_set_new(e, "intent", in);
	} else if (iev != NULL && json_object_get(e, "intent_event_id") == NULL) {
		json_object_set_new(e, "intent_event_id", json_string(iev));
	}
	return 0;
}

/* ---- the plan: restored intents and markers ------------------------------------ */

struct plan {
	struct ri_append *v;
	size_t n, cap;
	json_t *keep;                   /* the payloads and strings the appends point into */
	json_t *held;                   /* [{kind, act_key, invocations}] for the answer */
	size_t restored_intents;
};

static struct ri_append *
plan_add(struct plan *p)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 16;
		p->v = realloc(p->v, p->cap * sizeof *p->v);
		if (p->v == NULL)
			abort();
	}
	memset(&p->v[p->n], 0, sizeof p->v[0]);
	return &p->v[p->n++];
}

/* a string the plan keeps alive until the appends are written */
static const char *
keep(struct plan *p, const char *s)
{
	json_t *j = json_string(s);

	json_array_append_new(p->keep, j);
	return json_string_value(j);
}

static const char *
mint(struct plan *p)
{
	char id[RI_ID_LEN + 1];

	return keep(p, ri_mint_id("evt_", id));
}

static int marker_of(struct ri *r, const char *kind, const char *act_key, struct ri_records *rs);
static int marker_left(struct ri *r, const struct ri_record *m, char **inv, size_t *left, json_t *pending);

/*
 * One act: each lost invocation judged against the restored journal.  An
 * invocation the journal does not hold gets a restored intent (when the
 * witness kept enough to name it); one closed for good (an outcome, a
 * refusal) is not held back; the rest are listed in the act's marker.
 */
static int
plan_act(struct ri *r, struct plan *p, const char *restore_ev, const char *kind, const char *key, json_t *invs)
{
	json_t *listed = json_array(), *e;
	const char *inv;
	char ref[160], marker[600];
	int st;

	if (RI_NC(RI_NC_RESTORE_FORGETS)) {
		/* negative control: the accept records nothing of the acts it lost --
		 * no restored intent, no marker (tla -buggy-restore-forgets) */
		json_decref(listed);
		return RI_ST_OK;
	}
	json_object_foreach(invs, inv, e) {
		struct ri_inv iv;
		struct ri_standing sd;
		const char *state;
		if ((st = ri_inv_read(r, inv, &iv)) != RI_ST_OK) {
			json_decref(listed);
			return st;
		}
		ri_standing(iv.closings, iv.n_closings, &sd);
		if (iv.intent == NULL) {
			/* the intent went with the restore: restore it from what the
			 * witness kept, so the sweep can ask the store */
			json_t *in = json_object_get(e, "intent"), *data = json_object();
			const char *lost_ev = in != NULL ? json_string_value(json_object_get(in, "event_id")) :
			    json_string_value(json_object_get(e, "intent_event_id"));
			if (json_object_get(in, "pairing_datum") != NULL)
				json_object_set(data, "pairing_datum", json_object_get(in, "pairing_datum"));
			json_t *restored = json_pack("{s:s, s:s*, s:o}", "restore_event_id", restore_ev,
			    "lost_event_id", lost_ev, "lost", json_deep_copy(json_object_get(e, "lost")));
			if (json_object_get(in, "actor_ref") != NULL)
				json_object_set(restored, "actor_ref", json_object_get(in, "actor_ref"));
			json_t *payload = json_pack("{s:s, s:s, s:s, s:o, s:o}", "invocation_id", inv, "kind", kind,
			    "act_key", key, "data", data, "restored", restored);
			json_array_append_new(p->keep, payload);
			struct ri_append *a = plan_add(p);
			snprintf(ref, sizeof ref, "%s.intended", kind);
			*a = (struct ri_append){ .event_id = mint(p), .action_ref = keep(p, ref), .act_key = keep(p, key),
				.invocation_id = keep(p, inv), .actor_ref = RI_SUBSTRATE_ACTOR, .data = payload };
			p->restored_intents++;
			state = "intent-lost";
		} else if (sd.state == RI_STATE_CLOSED || sd.state == RI_STATE_REFUSED) {
			/* an outcome or a refusal stands for good: nothing the
			 * restore lost can have moved it (resolve 9) */
			ri_inv_free(&iv);
			continue;
		} else {
			state = ri_state_name(sd.state);
		}
		ri_inv_free(&iv);
		json_t *item = json_pack("{s:s, s:s, s:O}", "invocation_id", inv, "state", state, "lost",
		    json_object_get(e, "lost") ? json_object_get(e, "lost") : json_null());
		json_array_append_new(listed, item);
	}
	/* an earlier restore's marker that still holds the act: its invocations
	 * not reconciled since stay held by the new one */
	struct ri_records rs;
	if ((st = marker_of(r, kind, key, &rs)) != RI_ST_OK) {
		json_decref(listed);
		return st;
	}
	/* negative control: the new marker lists only what this restore lost (tla -buggy-restore-drops-held) */
	if (!RI_NC(RI_NC_RESTORE_DROPS_HELD) && rs.n == 1 && strcmp(rs.v[0].action_ref, "audit.unreconciled") == 0) {
		size_t left;
		json_t *pending = json_array(), *e2;
		size_t i;
		if ((st = marker_left(r, &rs.v[0], NULL, &left, pending)) != RI_ST_OK) {
			json_decref(pending);
			json_decref(listed);
			ri_records_clear(&rs);
			return st;
		}
		json_array_foreach(pending, i, e2) {
			const char *id = json_string_value(json_object_get(e2, "invocation_id"));
			bool have = false;
			size_t j;
			json_t *x;
			json_array_foreach(listed, j, x)
				have = have || (id != NULL && strcmp(id, json_string_value(json_object_get(x, "invocation_id"))) == 0);
			if (!have)
				json_array_append(listed, e2);
		}
		json_decref(pending);
	}
	ri_records_clear(&rs);
	if (json_array_size(listed) == 0) {
		json_decref(listed);
		return RI_ST_OK;
	}
	ri_marker_key(kind, key, marker, sizeof marker);
	json_t *payload = json_pack("{s:s, s:s, s:s, s:O}", "kind", kind, "act_key", key, "restore_event_id",
	    restore_ev, "invocations", listed);
	json_array_append_new(p->keep, payload);
	struct ri_append *a = plan_add(p);
	*a = (struct ri_append){ .event_id = mint(p), .action_ref = "audit.unreconciled", .act_key = keep(p, marker),
		.actor_ref = RI_SUBSTRATE_ACTOR, .data = payload };
	json_array_append_new(p->held, json_pack("{s:s, s:s, s:o}", "kind", kind, "act_key", key, "invocations",
	    listed));
	return RI_ST_OK;
}

/* --all-unreconciled: every invocation of every act the restored journal
 * names, as if each had lost something (plan_act keeps those not closed
 * for good). */
static int
all_acts(struct ri *r, json_t *names, json_t *acts)
{
	const char *kind, *key;
	json_t *keys, *v;
	int st;

	json_object_foreach(names, kind, keys) {
		json_object_foreach(keys, key, v) {
			struct ri_act act;
			if ((st = ri_act_read(r, kind, key, NULL, 0, &act)) != RI_ST_OK)
				return st;
			json_t *k = json_object_get(acts, kind);
			if (k == NULL)
				json_object_set_new(acts, kind, k = json_object());
			json_t *a = json_object_get(k, key);
			if (a == NULL)
				json_object_set_new(k, key, a = json_object());
			for (size_t i = 0; i < act.n; i++)
				if (json_object_get(a, act.v[i].inv_id) == NULL)
					json_object_set_new(a, act.v[i].inv_id, json_pack("{s:[]}", "lost"));
			ri_act_free(&act);
		}
	}
	return RI_ST_OK;
}

/* ---- ri-init --accept-restore ------------------------------------------------- */

static int
witness_open(struct ri *r, struct ri_witness **w, ri_err *err)
{
	unsigned char pk[32] = { 0 }, inst[RI_INSTANCE_LEN];
	char pub[4200];
	bool has_inst, has_pk;
	ri_err e;

	snprintf(pub, sizeof pub, "%s.pub", r->cfg->seal_key_file);
	has_pk = access(pub, R_OK) == 0 && ri_seal_pub_load(pub, pk, inst, &has_inst, &e) == RI_OK;
	return ri_witness_open(r->cfg->witness, r->st->ops->instance_id(r->st), r->key, r->keylen,
	    has_pk ? pk : NULL, w, err);
}

int
ri_accept_restore(ri *r, const struct ri_restore_opts *o, json_t **ans, ri_err *err)
{
	struct clean c = { 0 };
	struct lines ls = { 0 };
	struct lost lo = { .r = r };
	struct plan p = { 0 };
	struct ri_witness *w = NULL;
	unsigned char head[RI_HASH_LEN], h[RI_HASH_LEN];
	char hh[2 * RI_HASH_LEN + 1], restore_ev[RI_ID_LEN + 1];
	int64_t seq;
	bool held, fork_found = false;
	ri_ms now;
	int rc = RI_OK, st;

	*ans = NULL;
	if (o->why == NULL || *o->why == '\0' || strlen(o->why) > 1024)
		return ri_fail(err, RI_USAGE, "--accept-restore needs --why TEXT (1..1024 bytes)");
	if (r->cfg->witness == NULL)
		return ri_fail(err, RI_USAGE, "the witness is disabled (\"witness\": null): there is nothing to accept");
	if ((rc = ri_now(r->cfg, &now, err)) != RI_OK)
		return rc;
	/* the restored journal must verify whole */
	if (o->all_unreconciled)
		c.acts = json_object();
	if ((st = r->st->ops->traverse(r->st, count_problem, &c)) != RI_ST_OK) {
		rc = ri_store_code(r, st, err);
		goto out;
	}
	if (c.problems > 0) {
		rc = ri_fail(err, RI_INTEGRITY, "journal integrity: the restored journal does not verify (%lld records;"
		    " first: %s): restore another copy", (long long)c.problems, c.first);
		goto out;
	}
	if ((st = r->st->ops->head(r->st, &seq, head)) != RI_ST_OK) {
		rc = ri_store_code(r, st, err);
		goto out;
	}
	/* every line of the witness, each verified: a tampered witness is no
	 * account of what was lost */
	if ((rc = witness_open(r, &w, err)) != RI_OK)
		goto out;
	if (access(r->cfg->witness, F_OK) == 0 || ri_witness_is_pg(r->cfg->witness)) {
		if ((rc = ri_witness_each(w, collect, &ls, err)) != RI_OK) {
			if (rc == RI_INTEGRITY)
				rc = ri_fail(err, RI_INTEGRITY, "%s: the witness is no account of what the restore lost;"
				    " investigate it before accepting anything", err->msg);
			goto out;
		}
	}
	lo.acts = json_object();
	lo.redo = json_array();
	lo.fork_epoch = -1;
	if (ls.n > 0) {
		qsort(ls.v, ls.n, sizeof *ls.v, by_rank_desc);
		/* nothing to accept: the journal holds the witness's highest line */
		if ((st = hash_at(r, ls.v[0].seq, h, &held)) != RI_ST_OK) {
			rc = ri_store_code(r, st, err);
			goto out;
		}
		if (held && memcmp(h, ls.v[0].hash, RI_HASH_LEN) == 0) {
			rc = ri_fail(err, RI_USAGE, "the journal agrees with its witness (seq %lld): nothing to accept",
			    (long long)ls.v[0].seq);
			goto out;
		}
		/* the fork: the highest witnessed record the restored journal
		 * holds -- it is a past state of this instance's history there */
		size_t tries = 0;
		for (size_t i = 0; i < ls.n && !fork_found && tries < FORK_TRIES; i++) {
			if (ls.v[i].seq > seq)
				continue;
			tries++;
			if ((st = hash_at(r, ls.v[i].seq, h, &held)) != RI_ST_OK) {
				rc = ri_store_code(r, st, err);
				goto out;
			}
			if (held && memcmp(h, ls.v[i].hash, RI_HASH_LEN) == 0) {
				fork_found = true;
				lo.fork_epoch = ls.v[i].epoch;
				lo.fork_seq = ls.v[i].seq;
			}
		}
		if (!fork_found) {
			rc = ri_fail(err, RI_INTEGRITY, "journal integrity: the restored journal holds no record its"
			    " witness names: it is not a copy of this instance's history");
			goto out;
		}
		/* what the restore lost: every line past the fork whose record
		 * the restored journal does not hold */
		if ((rc = ri_witness_each(w, gather, &lo, err)) != RI_OK)
			goto out;
		if (lo.st != RI_ST_OK) {
			rc = ri_store_code(r, lo.st, err);
			goto out;
		}
	} else if (!o->expect && !o->all_unreconciled) {
		/* no witness names what was lost: the operator says what to trust */
		rc = ri_fail(err, RI_USAGE, "the witness %s holds no line (lost with the journal?): nothing names what"
		    " the restore lost -- give --expect-head with the newest head you trust (a published seal"
		    " line), or --all-unreconciled to hold back every act the journal names until its store is"
		    " asked again", r->cfg->witness);
		goto out;
	}
	if (o->expect) {
		/* the head the operator trusts: held, nothing past it was lost
		 * that the journal does not say; beyond the journal, only
		 * --all-unreconciled names what to hold back */
		if ((st = hash_at(r, o->expect_seq, h, &held)) != RI_ST_OK) {
			rc = ri_store_code(r, st, err);
			goto out;
		}
		if (held && memcmp(h, o->expect_hash, RI_HASH_LEN) != 0) {
			rc = ri_fail(err, RI_INTEGRITY, "journal integrity: the restored journal's record at seq %lld is"
			    " not the expected head: it is not that history", (long long)o->expect_seq);
			goto out;
		}
		if (!held && !o->all_unreconciled) {
			rc = ri_fail(err, RI_USAGE, "the restored journal ends at seq %lld, before the expected head"
			    " (seq %lld): what lay between is lost and no witness line names it -- add"
			    " --all-unreconciled to hold back every act the journal names", (long long)seq,
			    (long long)o->expect_seq);
			goto out;
		}
		if (!held && o->expect_seq > lo.top_seq)
			lo.top_seq = o->expect_seq;
	}
	if (o->all_unreconciled && (st = all_acts(r, c.acts, lo.acts)) != RI_ST_OK) {
		rc = ri_store_code(r, st, err);
		goto out;
	}
	/* the records: audit.restored, restored intents, markers -- one
	 * transaction, so a crash leaves the journal as restored (and the
	 * witness ahead of it), and the retry starts again */
	p.keep = json_array();
	p.held = json_array();
	ri_mint_id("evt_", restore_ev);
	const char *kind, *key;
	json_t *keys, *invs;
	struct ri_append *ra = plan_add(&p);       /* audit.restored: first */
	json_object_foreach(lo.acts, kind, keys) {
		json_object_foreach(keys, key, invs) {
			if ((st = plan_act(r, &p, restore_ev, kind, key, invs)) != RI_ST_OK) {
				rc = ri_store_code(r, st, err);
				goto out;
			}
		}
	}
	ri_hex(head, RI_HASH_LEN, hh);
	json_t *restored = json_pack("{s:s, s:s, s:I, s:s, s:I, s:I, s:I, s:I, s:b, s:O, s:O}",
	    "by", who(), "why", o->why, "restored_seq", (json_int_t)seq, "restored_hash", hh,
	    "fork_seq", (json_int_t)(fork_found ? lo.fork_seq : seq), "lost_seq", (json_int_t)lo.top_seq,
	    "lost_records", (json_int_t)lo.lines, "restored_intents", (json_int_t)p.restored_intents,
	    "all_unreconciled", o->all_unreconciled, "redo", lo.redo, "acts", p.held);
	/* an act list past the payload cap is the markers' to carry */
	if ((int64_t)ri_envelope_size("audit.restored", RI_SUBSTRATE_ACTOR, restored) > r->cfg->payload_cap / 2)
		json_object_set_new(restored, "acts", json_integer((json_int_t)json_array_size(p.held)));
	json_array_append_new(p.keep, restored);
	p.v[0] = (struct ri_append){ .event_id = keep(&p, restore_ev), .action_ref = "audit.restored",
		.act_key = restore_scope, .actor_ref = RI_SUBSTRATE_ACTOR, .data = restored };
	(void)ra;
	struct ri_appended *out = ri_xcalloc(p.n, sizeof *out);
	st = r->st->ops->append_substrate(r->st, p.v, p.n, out);
	free(out);
	if (st != RI_ST_OK) {
		rc = ri_store_code(r, st, err);
		goto out;
	}
	/* the restored head sealed: the witness's new epoch starts with a
	 * signed line */
	json_t *sealed = NULL;
	if ((rc = ri_seal(r, &sealed, err)) != RI_OK) {
		json_decref(sealed);
		goto out;
	}
	*ans = json_pack("{s:b, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:O, s:O, s:o}", "accepted_restore", 1, "by", who(),
	    "why", o->why, "restored_seq", (json_int_t)seq, "lost_seq", (json_int_t)lo.top_seq, "lost_records",
	    (json_int_t)lo.lines, "unreconciled", (json_int_t)json_array_size(p.held), "restored_intents",
	    (json_int_t)p.restored_intents, "acts", p.held, "redo", lo.redo, "seal", sealed);
	if (json_array_size(lo.redo) > 0)
		ri_alert(*ans, "the restore lost %zu substrate record(s) (an actor's registration or revocation among"
		    " them?): see \"redo\" and do them again", json_array_size(lo.redo));
out:
	json_decref(c.acts);
	json_decref(lo.acts);
	json_decref(lo.redo);
	json_decref(p.keep);
	json_decref(p.held);
	free(p.v);
	free(ls.v);
	ri_witness_close(w);
	return rc;
}

/* ---- an act held back --------------------------------------------------------- */

void
ri_restore_held_query(const char *kind, const char *act_key, char *key, size_t n, struct ri_query *q)
{
	ri_marker_key(kind, act_key, key, n);
	*q = (struct ri_query){ .from = 0, .limit = 1, .kind = "audit", .act_key = key, .descending = true };
}

/* The newest record of the act's marker scope (NULL: none). */
static int
marker_of(struct ri *r, const char *kind, const char *act_key, struct ri_records *rs)
{
	char key[600];
	struct ri_query q;

	ri_restore_held_query(kind, act_key, key, sizeof key, &q);
	return r->st->ops->range_read(r->st, &q, rs);
}

/* The invocations a marker lists that no closing written after it has
 * reconciled: the first into *inv; *left counts them; pending (may be
 * NULL) gets each one's entry. */
static int
marker_left(struct ri *r, const struct ri_record *m, char **inv, size_t *left, json_t *pending)
{
	json_t *list = json_object_get(m->payload, "invocations"), *e;
	size_t i;
	int st;

	*left = 0;
	json_array_foreach(list, i, e) {
		const char *id = json_string_value(json_object_get(e, "invocation_id"));
		struct ri_inv iv;
		struct ri_standing sd;
		if (id == NULL)
			continue;
		if ((st = ri_inv_read(r, id, &iv)) != RI_ST_OK)
			return st;
		ri_standing(iv.closings, iv.n_closings, &sd);
		/* reconciled: a closing written since the marker stands -- the
		 * store asked again (the sweep), or an operator's judgement */
		bool done = sd.standing != NULL && sd.standing->rec->seq > m->seq;
		ri_inv_free(&iv);
		if (!done) {
			if ((*left)++ == 0 && inv != NULL)
				*inv = ri_strdup(id);
			if (pending != NULL)
				json_array_append(pending, e);
		}
	}
	return RI_ST_OK;
}

int
ri_restore_held(struct ri *r, const char *kind, const char *act_key, char **inv)
{
	struct ri_records rs;
	size_t left = 0;
	int st;

	*inv = NULL;
	if (RI_NC(RI_NC_NO_RESTORE_HOLD))
		return RI_ST_OK;        /* negative control: a restored act is never held back */
	if ((st = marker_of(r, kind, act_key, &rs)) != RI_ST_OK)
		return st;
	if (rs.n == 1 && strcmp(rs.v[0].action_ref, "audit.unreconciled") == 0)
		st = marker_left(r, &rs.v[0], inv, &left, NULL);
	ri_records_clear(&rs);
	return st;
}

/* ---- the sweep's pass ----------------------------------------------------------- */

int
ri_restore_sweep(struct ri *r, size_t *outstanding, json_t *list)
{
	struct ri_query q = { .from = 0, .limit = 64, .kind = "audit", .act_key = restore_scope };
	int64_t done_to = 0;
	int st;

	*outstanding = 0;
	if (r->st->ops->mark_get(r->st, "sweep.restores", &done_to) != RI_ST_OK)
		done_to = 0;
	q.from = done_to + 1;
	bool all_done = true;
	int64_t newest = done_to;
	for (;;) {
		struct ri_records page;
		if ((st = r->st->ops->range_read(r->st, &q, &page)) != RI_ST_OK)
			return st;
		for (size_t i = 0; i < page.n && st == RI_ST_OK; i++) {
			json_t *acts = json_object_get(page.v[i].payload, "acts"), *a;
			size_t j;
			newest = page.v[i].seq;
			if (!json_is_array(acts)) {
				/* the list lives in the markers alone: not sweepable here */
				all_done = false;
				continue;
			}
			json_array_foreach(acts, j, a) {
				const char *kind = json_string_value(json_object_get(a, "kind"));
				const char *key = json_string_value(json_object_get(a, "act_key"));
				struct ri_records rs;
				size_t left = 0;
				char *inv = NULL;
				if (kind == NULL || key == NULL)
					continue;
				if ((st = marker_of(r, kind, key, &rs)) != RI_ST_OK)
					break;
				if (rs.n == 1 && strcmp(rs.v[0].action_ref, "audit.unreconciled") == 0) {
					if ((st = marker_left(r, &rs.v[0], &inv, &left, NULL)) == RI_ST_OK && left == 0) {
						/* every lost invocation closed since: say so once, in
						 * the marker's scope, so Open reads one record */
						char mk[600];
						struct ri_appended ap;
						ri_marker_key(kind, key, mk, sizeof mk);
						json_t *data = json_pack("{s:s, s:s, s:s}", "kind", kind, "act_key", key,
						    "marker_event_id", rs.v[0].event_id);
						struct ri_append ra = { .action_ref = "audit.reconciled", .act_key = mk,
							.actor_ref = RI_SUBSTRATE_ACTOR, .data = data };
						st = r->st->ops->append_substrate(r->st, &ra, 1, &ap);
						json_decref(data);
					} else if (st == RI_ST_OK) {
						(*outstanding)++;
						all_done = false;
						if (list != NULL)
							json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:I}", "kind", kind,
							    "act_key", key, "invocation_id", inv, "unreconciled", (json_int_t)left));
					}
				}
				free(inv);
				ri_records_clear(&rs);
				if (st != RI_ST_OK)
					break;
			}
		}
		bool more = page.more;
		q.from = page.next;
		ri_records_clear(&page);
		if (st != RI_ST_OK)
			return st;
		if (!more)
			break;
	}
	/* every restore up to here reconciled: the next pass starts past it */
	if (all_done && newest > done_to)
		(void)r->st->ops->mark_set(r->st, "sweep.restores", newest);
	return RI_ST_OK;
}
