/* store_common.c -- the verdicts every backend shares (store_common.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "util/clock.h"
#include "util/config.h"
#include "store/heads.h"
#include "util/jsonfast.h"
#include "util/nc.h"
#include "store/store_common.h"
#include "util/util.h"
#include "util/vocab.h"

void
ri_raw_header(const unsigned char instance[RI_INSTANCE_LEN], const struct ri_record *r,
    const struct ri_raw *w, struct ri_header *h)
{
	h->instance_id = instance;
	h->seq = r->seq;
	h->event_id = r->event_id;
	h->action_ref = r->action_ref;
	h->kind = r->kind;
	h->act_key = r->act_key;
	h->invocation_id = r->invocation_id;
	h->actor_ref = r->actor_ref;
	h->attestation_id = r->attestation_id;
	h->recorded_at = r->recorded_at;
	h->retention_until = r->retention_until;
	h->role = r->role;
	h->act_prev = w->act_prev;
	h->inv_prev = w->inv_prev;
	h->payload_digest = w->digest;
	h->shard = w->shard;
}

/*
 * Shape, payload digest, chain link, MAC.  A payload missing before its
 * retention ended is a destroyed record, not a purge.
 */
const char *
ri_raw_verify(const unsigned char instance[RI_INSTANCE_LEN], const unsigned char *key, size_t keylen,
    struct ri_record *r, struct ri_raw *w, const unsigned char prev[RI_HASH_LEN], ri_ms now, int fmt)
{
	struct ri_header h;
	unsigned char calc[RI_HASH_LEN];
	const char *why = NULL;

	(void)key;      /* unused only in the MAC check's negative control */
	(void)keylen;
	if (!w->shapes_ok) {
		why = "a malformed row";
	} else if (w->payload_text != NULL) {
		ri_payload_digest(w->salt, w->payload_text, strlen(w->payload_text), calc);
		if (!w->has_salt || !ri_eq32(calc, w->digest))
			why = "its payload does not match its digest (a changed payload)";
	} else if (w->has_salt) {
		why = "a payload without its salt";
	} else if (r->retention_until == RI_NONE || r->retention_until > now) {
		why = "its payload is gone before its retention ended";
	}
	if (why == NULL) {
		ri_raw_header(instance, r, w, &h);
		ri_record_hash_fmt(fmt, prev, &h, calc);
		if (!ri_eq32(calc, w->hash))
			why = "its header or chain link is wrong (altered, moved or copied, or a row before it deleted)";
		else if (!RI_NC(RI_NC_NO_MAC_CHECK) && key != NULL &&
		    !ri_mac_ok(key, keylen, w->hash, RI_HASH_LEN, w->mac, RI_HASH_LEN))
			why = "it fails its MAC (forged, or the wrong integrity key)";
	}
	if (why == NULL && w->payload_text != NULL) {
		/* ri_json_parse: what json_loads(JSON_REJECT_DUPLICATES) reads */
		r->payload = ri_json_parse(w->payload_text, strlen(w->payload_text));
		if (r->payload == NULL || !json_is_object(r->payload))
			why = "its payload is not a JSON object";
		r->payload_bytes = strlen(w->payload_text);
	}
	r->purged = w->payload_text == NULL;
	r->shard = w->shard;
	memcpy(r->hash, w->hash, RI_HASH_LEN);
	free(w->payload_text);
	w->payload_text = NULL;
	return why;
}

/* ---- payloads parsed once in a traversal (ri_payloads_begin) ---- */

#define PAYLOAD_SLOTS (2 * RI_PAYLOADS_MAX)     /* a power of two, at most half full */

struct ri_payloads {
	size_t n;
	struct { int64_t seq; json_t *v; bool verified; } slot[PAYLOAD_SLOTS];    /* v NULL: empty */
};

static size_t
payload_home(int64_t seq)
{
	return ((uint64_t)seq * 0x9e3779b97f4a7c15ull) >> 51 & (PAYLOAD_SLOTS - 1);
}

void
ri_payloads_begin(struct ri_st_core *c)
{
	ri_payloads_end(c);
	c->payloads = ri_xcalloc(1, sizeof *c->payloads);
}

void
ri_payloads_end(struct ri_st_core *c)
{
	if (c->payloads == NULL)
		return;
	for (size_t i = 0; i < PAYLOAD_SLOTS; i++)
		json_decref(c->payloads->slot[i].v);
	free(c->payloads);
	c->payloads = NULL;
}

/* linear probing; a removal shifts back the entries its slot displaced,
 * so a probe never stops early at a hole */
static size_t
payload_find(const struct ri_payloads *p, int64_t seq)
{
	size_t i = payload_home(seq);

	while (p->slot[i].v != NULL && p->slot[i].seq != seq)
		i = (i + 1) & (PAYLOAD_SLOTS - 1);
	return i;
}

void
ri_payloads_drop(struct ri_st_core *c, int64_t seq)
{
	struct ri_payloads *p = c->payloads;
	size_t i, j;

	if (p == NULL || p->slot[i = payload_find(p, seq)].v == NULL)
		return;
	json_decref(p->slot[i].v);
	p->slot[i].v = NULL;
	p->n--;
	for (j = (i + 1) & (PAYLOAD_SLOTS - 1); p->slot[j].v != NULL; j = (j + 1) & (PAYLOAD_SLOTS - 1)) {
		size_t h = payload_home(p->slot[j].seq);
		/* j's entry may move to the hole at i unless its home lies
		 * cyclically in (i, j] */
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			p->slot[i] = p->slot[j];
			p->slot[j].v = NULL;
			i = j;
		}
	}
}

bool
ri_payloads_verified(struct ri_st_core *c, int64_t seq)
{
	struct ri_payloads *p = c->payloads;
	size_t i;

	return p != NULL && p->slot[i = payload_find(p, seq)].v != NULL && p->slot[i].verified;
}

/* A row a verified read verified in a read session: kept with its parse. */
static void
payload_verified(struct ri_st_core *c, int64_t seq, json_t *v)
{
	struct ri_payloads *p = c->payloads;
	size_t i;

	if (p == NULL || v == NULL)
		return;
	if (p->slot[i = payload_find(p, seq)].v != NULL) {
		p->slot[i].verified = true;
		return;
	}
	if (p->n >= RI_PAYLOADS_MAX) {
		/* full: a session's pass has moved on; start again from here */
		for (size_t k = 0; k < PAYLOAD_SLOTS; k++) {
			json_decref(p->slot[k].v);
			p->slot[k].v = NULL;
		}
		p->n = 0;
		i = payload_find(p, seq);
	}
	p->slot[i].seq = seq;
	p->slot[i].v = json_incref(v);
	p->slot[i].verified = true;
	p->n++;
}

/* The row's payload (a new reference): the one already parsed in this
 * traversal, or parsed now and kept for the rest of it. */
static json_t *
payload_parse(struct ri_st_core *c, int64_t seq, const char *text)
{
	struct ri_payloads *p = c->payloads;
	json_t *v;
	size_t i;

	if (p != NULL && p->slot[i = payload_find(p, seq)].v != NULL)
		return json_incref(p->slot[i].v);
	v = ri_json_parse(text, strlen(text));
	if (p != NULL && v != NULL && p->n < RI_PAYLOADS_MAX) {
		p->slot[i].seq = seq;
		p->slot[i].v = json_incref(v);
		p->slot[i].verified = false;
		p->n++;
	}
	return v;
}

unsigned
ri_raw_problems(struct ri_st_core *c, struct ri_record *r, struct ri_raw *w, unsigned char prev[RI_HASH_LEN],
    ri_ms now)
{
	const unsigned char *instance = c->instance_id, *key = c->key;
	size_t keylen = c->keylen;
	unsigned problems = 0;
	unsigned char calc[RI_HASH_LEN];
	struct ri_header h;

	if (!w->shapes_ok) {
		problems |= RI_P_SHAPE;
	} else {
		ri_raw_header(instance, r, w, &h);
		ri_record_hash_fmt(ri_row_format(c, r->seq), prev, &h, calc);
		if (!ri_eq32(calc, w->hash))
			problems |= RI_P_LINK;
		if (key != NULL && !ri_mac_ok(key, keylen, w->hash, RI_HASH_LEN, w->mac, RI_HASH_LEN))
			problems |= RI_P_MAC;
		if (w->payload_text != NULL) {
			ri_payload_digest(w->salt, w->payload_text, strlen(w->payload_text), calc);
			if (!w->has_salt || !ri_eq32(calc, w->digest))
				problems |= RI_P_DIGEST;
			r->payload = payload_parse(c, r->seq, w->payload_text);
			if (r->payload == NULL || !json_is_object(r->payload))
				problems |= RI_P_SHAPE;
			r->payload_bytes = strlen(w->payload_text);
		} else if (w->has_salt || r->retention_until == RI_NONE || r->retention_until > now) {
			problems |= RI_P_PURGED_EARLY;
		}
		memcpy(prev, w->hash, RI_HASH_LEN);
	}
	r->purged = w->payload_text == NULL;
	r->shard = w->shard;
	memcpy(r->hash, w->hash, RI_HASH_LEN);
	free(w->payload_text);
	w->payload_text = NULL;
	return problems;
}

void
ri_raw_trusted(struct ri_st_core *c, struct ri_record *r, struct ri_raw *w)
{
	if (w->payload_text != NULL) {
		r->payload = payload_parse(c, r->seq, w->payload_text);
		r->payload_bytes = strlen(w->payload_text);
	}
	r->purged = w->payload_text == NULL;
	r->shard = w->shard;
	memcpy(r->hash, w->hash, RI_HASH_LEN);
	free(w->payload_text);
	w->payload_text = NULL;
}

bool
ri_lease_free(const struct ri_lease_row *l, const char *holder, ri_ms now)
{
	if (RI_NC(RI_NC_LEASE_IGNORES_HOLDER))
		return true;                    /* negative control: no exclusion at all */
	return l == NULL || !l->held || l->expires <= now || strcmp(l->holder, holder) == 0;
}

int
ri_take_wait(struct ri_st_core *c, const struct ri_store *st, struct ri_take_wait *w, const char *kind,
    const char *act_key, ri_ms left)
{
	int64_t mono = ri_mono_ms();
	int rc;

	if ((rc = ri_lease_cap_judge(c, kind, act_key, left)) != RI_ST_OK)
		return rc;
	if (w->backoff == 0) {
		/* open step 2.2: a bound below the holder's lease is lawful */
		w->bounded = st->take_bounded && st->take_wait < left;
		w->deadline = mono + (w->bounded ? st->take_wait : left);
		w->backoff = 1;
	}
	if (mono >= w->deadline)
		return ri_st_fail(c, RI_ST_SECTION_UNAVAILABLE, 0, NULL, "the section (%s, %s) is held; not granted within %s",
		    kind, act_key, w->bounded ? "the wait asked for (--wait, -n)" : "the holder's remaining lease");
	/* issue 15, target 4: on the event -- a commit, the holder's release
	 * among them -- or the first instant the answer can change */
	int64_t until = w->deadline - mono < left ? w->deadline - mono : left;
	if (w->change != NULL && w->change(w->arg, until > 0 ? until : 1))
		return RI_ST_OK;
	ri_sleep_ms(w->backoff < w->deadline - mono ? w->backoff : w->deadline - mono);
	if (w->backoff < 25)
		w->backoff *= 2;
	return RI_ST_OK;
}

int
ri_st_failv(struct ri_store_error *e, int code, int64_t seq, const char *event_id, const char *fmt, va_list ap)
{
	e->seq = seq;
	snprintf(e->event_id, sizeof e->event_id, "%s", event_id ? event_id : "");
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	if (code == RI_ST_INTEGRITY && !e->integrity) {
		e->integrity = true;
		snprintf(e->integrity_msg, sizeof e->integrity_msg, "%s", e->msg);
	}
	return code;
}

void
ri_st_err_clear(struct ri_store_error *e)
{
	bool integrity = e->integrity;
	char keep[sizeof e->integrity_msg];

	memcpy(keep, e->integrity_msg, sizeof keep);
	memset(e, 0, sizeof *e);
	e->integrity = integrity;
	memcpy(e->integrity_msg, keep, sizeof keep);
}

int
(ri_st_fail)(struct ri_st_core *c, int code, int64_t seq, const char *event_id, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = ri_st_failv(&c->err, code, seq, event_id, fmt, ap);
	va_end(ap);
	return code;
}

int
ri_st_recode(struct ri_st_core *c, int code)
{
	char msg[sizeof c->err.msg];

	snprintf(msg, sizeof msg, "%s", c->err.msg);
	return ri_st_fail(c, code, c->err.seq, c->err.event_id, "%s", msg);
}

int
ri_st_verify_row(struct ri_st_core *c, struct ri_record *r, struct ri_raw *w, const unsigned char prev[RI_HASH_LEN],
    ri_ms now)
{
	const char *why = ri_raw_verify(c->instance_id, c->key, c->keylen, r, w, prev, now, ri_row_format(c, r->seq));

	if (why != NULL)
		return ri_st_fail(c, RI_ST_INTEGRITY, r->seq, r->event_id,
		    "journal integrity: record seq %lld (%s) fails verification: %s", (long long)r->seq, r->event_id,
		    why);
	return RI_ST_OK;
}

/* ---- scopes --------------------------------------------------------------- */

void
scope_make(struct scope *sc, int type, const char *a, const char *b)
{
	sc->type = type;
	if (type == SCOPE_ACT)
		ri_scope_act(a, b, sc->key);
	else if (type == SCOPE_INV)
		ri_scope_inv(a, sc->key);
	else
		memset(sc->key, 0, sizeof sc->key);
}

const char *
scope_name(const struct scope *sc)
{
	return sc->type == SCOPE_ALL ? "the journal" : sc->type == SCOPE_ACT ? "the act" : "the invocation";
}

/* ---- a range read ---------------------------------------------------------- */

#define PAGE_DEFAULT 256
#define PAGE_MAX 4096

int
ri_walk_query(struct ri_st_core *c, const struct ri_query *q, struct scope *sc, struct ri_walk *wk)
{
	memset(wk, 0, sizeof *wk);
	wk->limit = q->limit ? q->limit : PAGE_DEFAULT;
	if (wk->limit > PAGE_MAX || q->from < 0 || (q->kind == NULL) != (q->act_key == NULL) ||
	    (q->kind != NULL && q->invocation_id != NULL) || q->action_ref != NULL)
		return ri_st_fail(c, RI_ST_INVALID_QUERY, 0, NULL,
		    "invalid range query (page size 1..%d; one filter: an invocation or an act)", PAGE_MAX);
	if (q->trusted) {
		/* a trusted read consults no scope head: its key is not needed */
		memset(sc->key, 0, sizeof sc->key);
		sc->type = q->invocation_id != NULL ? SCOPE_INV : q->kind != NULL ? SCOPE_ACT : SCOPE_ALL;
	} else if (q->invocation_id != NULL)
		scope_make(sc, SCOPE_INV, q->invocation_id, NULL);
	else if (q->kind != NULL)
		scope_make(sc, SCOPE_ACT, q->kind, q->act_key);
	else
		scope_make(sc, SCOPE_ALL, NULL, NULL);
	wk->sc = sc;
	wk->desc = q->descending;
	wk->trusted = q->trusted;
	return RI_ST_OK;
}

void
ri_walk_begin(struct ri_walk *wk, int64_t from, int64_t head)
{
	if (wk->desc && (from == 0 || from > head))
		from = head;
	/* ascending from 0 (a zeroed query) is the beginning: without this the
	 * first record's link (0) is not below `from` and an intact journal
	 * reads as a deleted row */
	if (!wk->desc && from < 1)
		from = 1;
	wk->from = from;
	wk->head = head;
	/* descending: from the head, or from a cursor that is the link of the
	 * last record of the previous page -- either way the first record
	 * must be exactly that seq */
	wk->expect_prev = wk->desc ? from : 0;
	wk->cap = 0;
}

int
ri_walk_peek(struct ri_st_core *c, struct ri_walk *wk, struct ri_records *out, int64_t seq, bool *full)
{
	*full = false;
	/* descending: once the scope's first record (link 0) is read, a
	 * further row is none of the scope's -- never "more" with a cursor of
	 * 0, which means the head again */
	if (wk->desc && out->n > 0 && wk->expect_prev == 0)
		return ri_st_fail(c, RI_ST_INTEGRITY, seq, NULL,
		    "journal integrity: a row (seq %lld) of %s lies below its first record", (long long)seq,
		    scope_name(wk->sc));
	if (out->n == wk->limit) {
		out->more = true;
		*full = true;
	}
	return RI_ST_OK;
}

/* The whole journal's seqs with gaps (store_common.h seq_gaps): a record
 * missing from a shard breaks its successor's link in that shard, or its
 * shard's head (docs/SHARDS.md, Check 8.1.1 per shard). */
static bool
walk_gapped(const struct ri_st_core *c, const struct ri_walk *wk)
{
	return wk->sc->type == SCOPE_ALL && c->seq_gaps;
}

int
ri_walk_take(struct ri_st_core *c, struct ri_walk *wk, struct ri_records *out, struct ri_record *r,
    struct ri_raw *w)
{
	unsigned char prev[RI_HASH_LEN];
	int64_t link = wk->sc->type == SCOPE_ACT ? w->act_prev : wk->sc->type == SCOPE_INV ? w->inv_prev : r->seq - 1;
	int rc = RI_ST_OK;

	if (wk->trusted) {
		ri_raw_trusted(c, r, w);
	} else if (walk_gapped(c, wk)) {
		/* only the first from the head must be the head itself */
		if (wk->desc && out->n == 0 && wk->from == wk->head && r->seq != wk->head)
			rc = ri_st_fail(c, RI_ST_INTEGRITY, wk->head, NULL,
			    "journal integrity: record seq %lld of %s is missing (deleted rows)", (long long)wk->head,
			    scope_name(wk->sc));
	} else if (!wk->desc) {
		/* ascending: nothing of the scope between from and the first, and
		 * each record links to the one before it */
		if (!(out->n == 0 ? link < wk->from : link == out->v[out->n - 1].seq))
			rc = ri_st_fail(c, RI_ST_INTEGRITY, r->seq, r->event_id,
			    "journal integrity: a record of %s before seq %lld (%s) is missing (deleted rows)",
			    scope_name(wk->sc), (long long)r->seq, r->event_id);
	} else if (r->seq != wk->expect_prev) {
		rc = ri_st_fail(c, RI_ST_INTEGRITY, wk->expect_prev, NULL,
		    "journal integrity: record seq %lld of %s is missing (deleted rows)", (long long)wk->expect_prev,
		    scope_name(wk->sc));
	}
	if (rc == RI_ST_OK && !wk->trusted) {
		if (ri_payloads_verified(c, r->seq)) {
			/* this row, verified in this same snapshot (a read session):
			 * its links were walked above; its parse is reused */
			ri_raw_trusted(c, r, w);
		} else if ((rc = wk->link_at(wk->backend, w->shard, r->seq, prev)) == RI_ST_OK &&
		    (rc = ri_st_verify_row(c, r, w, prev, wk->now)) == RI_ST_OK) {
			payload_verified(c, r->seq, r->payload);
		}
	}
	if (rc != RI_ST_OK) {
		free(w->payload_text);
		w->payload_text = NULL;
		ri_record_clear(r);
		return rc;
	}
	wk->expect_prev = link;
	r->inv_link = w->inv_prev;      /* verified with the row (unless trusted) */
	ri_push_record(out, &wk->cap, r);
	return RI_ST_OK;
}

int
ri_walk_end(struct ri_st_core *c, struct ri_walk *wk, struct ri_records *out)
{
	if (wk->desc) {
		if (walk_gapped(c, wk) && !out->more)
			wk->expect_prev = 0;    /* the read reached the journal's start */
		out->next = wk->expect_prev;    /* 0: the scope's first record was read */
		if (!wk->trusted && !out->more && wk->expect_prev != 0)
			return ri_st_fail(c, RI_ST_INTEGRITY, wk->expect_prev, NULL,
			    "journal integrity: record seq %lld of %s is missing (deleted rows)",
			    (long long)wk->expect_prev, scope_name(wk->sc));
		return RI_ST_OK;
	}
	out->next = out->n ? out->v[out->n - 1].seq + 1 : wk->from;
	/* the last page ends at the scope's authenticated head */
	if (!wk->trusted && !out->more && wk->head >= wk->from && (out->n == 0 || out->v[out->n - 1].seq != wk->head))
		return ri_st_fail(c, RI_ST_INTEGRITY, wk->head, NULL,
		    "journal integrity: %s's head is seq %lld but the read ended before it (deleted rows)",
		    scope_name(wk->sc), (long long)wk->head);
	return RI_ST_OK;
}

/* ---- the request an append is asked for --------------------------------- */

bool
ri_valid_ref(const char *v, int64_t cap)
{
	return v != NULL && *v != '\0' && (int64_t)strlen(v) <= cap;
}

bool
ri_valid_actor_name(const char *n, int64_t cap)
{
	if (!ri_valid_ref(n, cap) || strcmp(n, RI_SUBSTRATE_ACTOR) == 0)
		return false;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || *p == '_' || *p == '.' || *p == '@'))
			return false;
	return true;
}

int
ri_kind_of(const char *action_ref, char *out, size_t n)
{
	const char *dot = strchr(action_ref, '.');

	if (dot == NULL || dot == action_ref || (size_t)(dot - action_ref) >= n || dot[1] == '\0')
		return -1;
	memcpy(out, action_ref, (size_t)(dot - action_ref));
	out[dot - action_ref] = '\0';
	return 0;
}

int
ri_append_request_judge(struct ri_st_core *c, const struct ri_append *a, char *kind, size_t kindlen, int *role,
    struct ri_appended *out)
{
	const struct ri_config *cfg = c->cfg;
	char why[512];

	if (a->action_ref == NULL || ri_kind_of(a->action_ref, kind, kindlen) != 0 ||
	    a->data == NULL || !json_is_object(a->data) ||
	    (a->invocation_id != NULL && !ri_valid_ref(a->invocation_id, cfg->reference_length_cap)) ||
	    (a->act_key != NULL && (int64_t)strlen(a->act_key) > cfg->reference_length_cap) ||
	    (a->event_id != NULL && (strlen(a->event_id) != RI_ID_LEN || strncmp(a->event_id, "evt_", 4) != 0))) {
		snprintf(out->cause, sizeof out->cause, "malformed");
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL, "malformed record request");
	}
	/* one vocabulary: a writer appends only its kind's refs, and the role
	 * each gets is fixed here, from the binding in force, and stored under
	 * the MAC (journal 2-5; the closings issue's ruling) */
	if (ri_vocab_role(cfg, a->action_ref, role, why, sizeof why) != RI_OK) {
		snprintf(out->cause, sizeof out->cause, "vocabulary");
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL, "%s", why);
	}
	/* Actor Identity's input check */
	if (!ri_valid_ref(a->actor_ref, cfg->reference_length_cap) || a->credential == NULL ||
	    *a->credential == '\0') {
		snprintf(out->cause, sizeof out->cause, "malformed");
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL, "actor ref or credential empty or too long");
	}
	if ((int64_t)ri_envelope_size(a->action_ref, a->actor_ref, a->data) > cfg->payload_cap) {
		snprintf(out->cause, sizeof out->cause, "payload-cap");
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL, "the record exceeds payload_cap (%lld bytes)",
		    (long long)cfg->payload_cap);
	}
	return RI_ST_OK;
}

int
ri_append_bindings_judge(struct ri_st_core *c, const struct ri_append *a, int64_t last)
{
	/* negative control: a decision on stale bindings lands */
	if (!RI_NC(RI_NC_BINDINGS_UNGUARDED) && a->bindings_guard && last != a->bindings_seen)
		return ri_st_fail(c, RI_ST_STALE_BINDINGS, 0, NULL, "the kind's bindings were recorded anew"
		    " (seq %lld) since this writer read them (seq %lld)", (long long)last, (long long)a->bindings_seen);
	return RI_ST_OK;
}

int
ri_append_fault_before(struct ri_st_core *c, const struct ri_append *a, enum ri_fault_action *fa)
{
	char point[96];

	*fa = RI_FA_NONE;
	if (a->fault_tag == NULL)
		return RI_ST_OK;
	snprintf(point, sizeof point, "%s.before", a->fault_tag);
	*fa = ri_fault(point);
	if (*fa == RI_FA_FAIL)
		return ri_st_fail(c, RI_ST_STEP2, 0, NULL, "fault %s: the append did not land", point);
	if (*fa == RI_FA_FAIL3)
		return ri_st_fail(c, RI_ST_STEP3, 0, NULL, "fault %s: the commit did not land", point);
	if (*fa == RI_FA_LOSE)
		return ri_st_fail(c, RI_ST_LOST, 0, NULL, "fault %s: the reply was lost", point);
	return RI_ST_OK;
}

int
ri_substrate_role(struct ri_st_core *c, const struct ri_append *a, int *role)
{
	char kind[128], why[256];
	size_t n;

	if (a->action_ref == NULL || ri_kind_of(a->action_ref, kind, sizeof kind) != 0 || a->data == NULL ||
	    !json_is_object(a->data) || a->actor_ref == NULL || strcmp(a->actor_ref, RI_SUBSTRATE_ACTOR) != 0)
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL, "malformed substrate record");
	*role = RI_ROLE_OTHER;
	if (strcmp(kind, "audit") == 0)
		return RI_ST_OK;
	if (ri_vocab_role(c->cfg, a->action_ref, role, why, sizeof why) == RI_OK)
		return RI_ST_OK;
	n = strlen(a->action_ref);
	if (n > 9 && strcmp(a->action_ref + n - 9, ".intended") == 0) {
		*role = RI_ROLE_INTENT;
		return RI_ST_OK;
	}
	return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL, "%s", why);
}

int
ri_append_landed(struct ri_st_core *c, const struct ri_append *a, enum ri_fault_action fa, const char *kind,
    struct ri_appended *out)
{
	char point[96];

	if (a->fault_tag != NULL) {
		snprintf(point, sizeof point, "%s.after", a->fault_tag);
		enum ri_fault_action after = ri_fault(point);
		if (after == RI_FA_LOSE)
			return ri_st_fail(c, RI_ST_LOST, out->seq, out->event_id,
			    "fault %s: the record landed but the reply was lost", point);
		if (after == RI_FA_FAIL)
			return ri_st_fail(c, RI_ST_STEP4, out->seq, out->event_id,
			    "fault %s: appended; retention placement failed", point);
	}
	if (fa == RI_FA_NORETENTION) {
		/* the retention source: appended, but on no policy */
		snprintf(out->cause, sizeof out->cause, "retention");
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, out->seq, out->event_id,
		    "appended, but kind %s has no retention policy", kind);
	}
	return RI_ST_OK;
}

/* ---- the actor registry (Actor Identity) -------------------------------- */

void
ri_cred_hash(const struct ri_st_core *c, const char *cred, unsigned char out[32])
{
	crypto_generichash(out, 32, (const unsigned char *)cred, strlen(cred), c->cred_key, sizeof c->cred_key);
}

void
ri_credential_mint(const struct ri_st_core *c, const char *actor, char credential[128], struct ri_actor_row *row)
{
	unsigned char raw[32];

	randombytes_buf(raw, sizeof raw);
	memcpy(credential, "ri1_", 4);
	sodium_bin2hex(credential + 4, 128 - 4, raw, sizeof raw);
	sodium_memzero(raw, sizeof raw);
	ri_cred_hash(c, credential, row->cred_hash);
	ri_actor_row_mac(c, actor, row, row->mac);
}

void
ri_actor_row_mac(const struct ri_st_core *c, const char *actor, const struct ri_actor_row *row,
    unsigned char out[RI_HASH_LEN])
{
	ri_actor_mac(c->key, c->keylen, c->instance_id, actor, row->service, row->cred_hash, row->created, row->revoked,
	    row->reg_seq, out);
}

int
ri_actor_row_judge(struct ri_st_core *c, const char *actor, const struct ri_actor_row *row, bool present,
    int64_t last_seq)
{
	unsigned char calc[RI_HASH_LEN];

	if (c->key == NULL)
		return RI_ST_OK;
	if (row != NULL) {
		ri_actor_row_mac(c, actor, row, calc);
		if (sodium_memcmp(calc, row->mac, RI_HASH_LEN) != 0)
			return ri_st_fail(c, RI_ST_INTEGRITY, 0, NULL,
			    "journal integrity: actor %s fails its MAC (the registry was altered)", actor);
	}
	if (row != NULL && (!present || last_seq != row->reg_seq))
		return ri_st_fail(c, RI_ST_INTEGRITY, present ? last_seq : 0, NULL,
		    "journal integrity: actor %s's registry row is bound to seq %lld but its newest registry"
		    " record is seq %lld (an older row replayed)", actor, (long long)row->reg_seq,
		    (long long)(present ? last_seq : 0));
	if (row == NULL && present)
		return ri_st_fail(c, RI_ST_INTEGRITY, last_seq, NULL,
		    "journal integrity: actor %s has registry records (seq %lld) but no registry row (deleted)",
		    actor, (long long)last_seq);
	return RI_ST_OK;
}

int
ri_authenticate_request_judge(struct ri_st_core *c, const char *actor, const char *cred)
{
	if (!ri_valid_ref(actor, c->cfg->reference_length_cap) || cred == NULL || *cred == '\0')
		return ri_st_fail(c, RI_ST_INVALID_CREDENTIAL, 0, NULL, "no actor ref or no credential");
	if (c->key == NULL)
		return ri_st_fail(c, RI_ST_UNAVAILABLE, 0, NULL, "no integrity key: credentials cannot be checked");
	return RI_ST_OK;
}

int
ri_credential_judge(struct ri_st_core *c, const char *actor, const struct ri_actor_row *row, const char *cred,
    ri_ms now, struct ri_actor *who)
{
	unsigned char have[32];

	if (row == NULL)
		return ri_st_fail(c, RI_ST_INVALID_CREDENTIAL, 0, NULL, "actor %s is not registered", actor);
	ri_cred_hash(c, cred, have);
	if (sodium_memcmp(have, row->cred_hash, 32) != 0)
		return ri_st_fail(c, RI_ST_INVALID_CREDENTIAL, 0, NULL, "wrong credential for actor %s", actor);
	if (row->revoked != RI_NONE && row->revoked <= now)
		return ri_st_fail(c, RI_ST_INVALID_CREDENTIAL, 0, NULL, "actor %s is revoked", actor);
	if (who != NULL) {
		who->service = row->service != 0;
		who->created_at = row->created;
		who->revoked_at = row->revoked;
	}
	return RI_ST_OK;
}

/* ---- leases and the journal fence --------------------------------------- */

int
ri_lease_row_judge(struct ri_st_core *c, const char *kind, const char *act_key, const struct ri_lease_row *l)
{
	unsigned char calc[RI_HASH_LEN];

	if (c->key == NULL)
		return RI_ST_OK;
	ri_lease_mac(c->key, c->keylen, c->instance_id, kind, act_key, l->held ? l->holder : NULL, l->expires, l->token,
	    calc);
	if (sodium_memcmp(calc, l->mac, RI_HASH_LEN) != 0)
		return ri_st_fail(c, RI_ST_INTEGRITY, 0, NULL,
		    "journal integrity: the lease of (%s, %s) fails its MAC (altered, or an older row replayed)",
		    kind, act_key);
	return RI_ST_OK;
}

int
ri_lease_cap_judge(struct ri_st_core *c, const char *kind, const char *act_key, ri_ms left)
{
	/*
	 * act section 11, resolve 5, reconcile step 2.2: a take waits at most
	 * the holder's remaining lease -- and no honest holder's remaining
	 * exceeds the longest lease this config grants.  A row past that cap
	 * -- forged, or written by a host of the same instance run under a
	 * longer-leased config -- is an integrity failure, surfaced at once,
	 * never a wait (it would otherwise hold the act, and a hung sweep its
	 * run lock, for as long as it says).
	 *
	 * A holder the journal never named is NOT judged here, because it
	 * cannot be judged soundly: Open takes the section before it writes
	 * its intent (open step 2 before 4), so an inv_ holder legitimately
	 * has no intent for a moment -- and forever, if that Open died in
	 * between; a sweep run's and an operator's holders are never
	 * journaled at all.  The cap is what bounds a forged holder: the
	 * wait ends within one longest lease.
	 */
	if (!RI_NC(RI_NC_NO_LEASE_CAP) && left > ri_longest_lease(c->cfg))
		return ri_st_fail(c, RI_ST_INTEGRITY, 0, NULL,
		    "journal integrity: the lease row of (%s, %s) expires %lld ms ahead, beyond the"
		    " longest lease this config grants (%lld ms): the leases table was altered",
		    kind, act_key, (long long)left, (long long)ri_longest_lease(c->cfg));
	return RI_ST_OK;
}

/* The journal fence, judged inside the append's own transaction: only
 * the section's holder, with an allowance to spare and before its write's
 * terminus, appends -- so with the fence declared no invocation ever gets
 * a second closing (Invariant 2.1; journal fence 3). */
int
ri_fence_judge(struct ri_st_core *c, const struct ri_lease_row *l, const struct ri_fence *f, ri_ms now, ri_ms until)
{
	ri_ms a = c->cfg->clock_offset_allowance;

	if (RI_NC(RI_NC_FENCE_INSTANTS_BARE)) {
		/* negative control: the fence instants without the allowance (tla -buggy-skew) */
		until += a;
		a = 0;
	}
	if (l == NULL || !l->held || strcmp(l->holder, f->holder) != 0 || !(now < l->expires - a))
		return ri_st_fail(c, RI_ST_FENCED, 0, NULL,
		    "journal fence: %s no longer holds the section with an allowance to spare", f->holder);
	/* negative control: no per-write terminus (tla -buggy-perwrite) */
	if (!RI_NC(RI_NC_NO_WRITE_TERMINUS) && !(now < until))
		return ri_st_fail(c, RI_ST_FENCED, 0, NULL,
		    "journal fence: the write's terminus (issue + journal_write_bound - allowance) has passed");
	return RI_ST_OK;
}

/* ---- the journal head and its witness ---------------------------------- */

int
ri_jhead_judge(struct ri_st_core *c, const struct ri_jhead *h, const unsigned char mac[RI_HASH_LEN],
    const unsigned char *last_hash, int64_t rows)
{
	unsigned char want[RI_HASH_LEN];

	if (last_hash == NULL)
		return ri_st_fail(c, RI_ST_INTEGRITY, h->last_seq, NULL,
		    "journal integrity: the journal's newest record (seq %lld) is missing (deleted rows)",
		    (long long)h->last_seq);
	ri_jhead_mac(c->key, c->keylen, c->instance_id, c->shards, c->boundary, h, last_hash, want);
	if (sodium_memcmp(want, mac, RI_HASH_LEN) != 0)
		return ri_st_fail(c, RI_ST_INTEGRITY, h->last_seq, NULL,
		    "journal integrity: the journal head (seq %lld) fails its MAC", (long long)h->last_seq);
	if (rows != h->last_seq)
		return ri_st_fail(c, RI_ST_INTEGRITY, rows, NULL,
		    "journal integrity: the journal ends at seq %lld but its authenticated head is seq %lld"
		    " (the tail was truncated or extended)", (long long)rows, (long long)h->last_seq);
	return RI_ST_OK;
}

/* The shard of the record a witness line names (a line naming no act --
 * an older line -- is shard 0's, as every record of one shard is); -1,
 * none, for a reader without the key, which cannot route an act (its
 * audit compares the witnessed record itself). */
static int
line_shard(const struct ri_st_core *c, const char *kind, const char *act_key)
{
	if (c->shards > 1 && c->key == NULL)
		return -1;
	return kind != NULL ? ri_st_shard_of(c, kind, act_key != NULL ? act_key : "") : 0;
}

/* A recent verified line of the current epoch: its shard's anchor when it
 * is that shard's newest so far. */
static void
shard_anchor_set(struct ri_st_core *c, int shard, int64_t seq, const unsigned char hash[RI_HASH_LEN])
{
	if (c->shard_anchor == NULL || shard < 0 || shard >= c->shards || seq <= c->shard_anchor[shard].last_seq)
		return;
	c->shard_anchor[shard].last_seq = seq;
	memcpy(c->shard_anchor[shard].hash, hash, RI_HASH_LEN);
}

static int
shard_anchor_line(const struct ri_witness_line *l, void *arg)
{
	struct ri_st_core *c = arg;

	if (l->verified && l->epoch == c->witness_epoch)
		shard_anchor_set(c, line_shard(c, ri_witness_name(l, "kind"), ri_witness_name(l, "act_key")), l->seq,
		    l->hash);
	return 0;
}

/* The instance's witness opened, its instance not yet bound. */
static int
witness_open(struct ri_st_core *c, ri_err *err)
{
	const struct ri_config *cfg = c->cfg;
	unsigned char pk[32] = { 0 }, inst[RI_INSTANCE_LEN];
	char pub[4200];
	bool has_inst, has_pk = false;

	/* the seal public key, where it is beside the seal key: a seal's line
	 * (and a second-wave line) is verifiable by its signature */
	if (cfg->seal_key_file != NULL) {
		ri_err e;
		snprintf(pub, sizeof pub, "%s.pub", cfg->seal_key_file);
		has_pk = access(pub, R_OK) == 0 && ri_seal_pub_load(pub, pk, inst, &has_inst, &e) == RI_OK;
	}
	return ri_witness_open(cfg->witness, NULL, c->key, c->keylen, has_pk ? pk : NULL, &c->witness, err);
}

void
ri_st_witness_read(struct ri_st_core *c, unsigned flags, int64_t *guess)
{
	ri_err e;

	*guess = 0;
	if (c->cfg->witness == NULL || c->witness != NULL || witness_open(c, &e) != RI_OK)
		return;
	/* the recent lines too, for each shard's own anchor (attach), unless
	 * the config says one shard: lines added after this read name records
	 * the snapshot that follows holds -- read after it, they would make a
	 * shard look rolled back */
	ri_witness_read_newest(c->witness, c->cfg->shards != 1);
	if (!(flags & RI_NO_WITNESS))
		(void)ri_witness_kept_seq(c->witness, guess);
}

int
ri_st_witness_attach(struct ri_st_core *c, unsigned flags, ri_err *err)
{
	const struct ri_config *cfg = c->cfg;
	struct ri_witness_line wl = { 0 };     /* cleared below on RI_NOT_KNOWN too */
	int rc;

	if (cfg->witness == NULL)
		return RI_OK;
	/* opened and read already (ri_st_witness_read), or now */
	if (c->witness == NULL && (rc = witness_open(c, err)) != RI_OK)
		return rc;
	ri_witness_bind(c->witness, c->instance_id);
	rc = ri_witness_newest(c->witness, &wl, err);
	if (flags & RI_NO_WITNESS) {
		/* not compared with the journal (ri-init, ri-init --accept-restore):
		 * only the epoch its lines are written in is read -- the next one
		 * for a restore (witness.h) */
		if (rc == RI_OK || rc == RI_NOT_KNOWN) {
			c->witness_epoch = (rc == RI_OK ? wl.epoch : 0) + ((flags & RI_RESTORING) ? 1 : 0);
			ri_witness_line_clear(&wl);
			return RI_OK;
		}
		ri_witness_close(c->witness);
		c->witness = NULL;
		/* a missing witness is ri-init's to decide about */
		return access(cfg->witness, F_OK) != 0 && !ri_witness_is_pg(cfg->witness) ? RI_OK : rc;
	}
	if (rc != RI_OK) {
		if (rc == RI_NOT_KNOWN)
			rc = err->code = RI_INTEGRITY;
		if (strncmp(err->msg, "journal integrity: ", 19) != 0) {
			char msg[sizeof err->msg];
			snprintf(msg, sizeof msg, "%s", err->msg);
			ri_fail(err, RI_INTEGRITY, "journal integrity: %s", msg);
		}
		return rc;
	}
	c->anchored = true;
	c->anchor_seq = wl.seq;
	c->anchor_shard = line_shard(c, ri_witness_name(&wl, "kind"), ri_witness_name(&wl, "act_key"));
	c->witness_epoch = wl.epoch;
	memcpy(c->anchor_hash, wl.hash, RI_HASH_LEN);
	ri_witness_line_clear(&wl);
	/* with shards, each shard's own newest line among the recent ones, of
	 * the newest line's epoch (an older epoch's lines are a history an
	 * accepted restore left behind) */
	if (c->shards > 1 && c->key != NULL && !RI_NC(RI_NC_SHARD_ANCHORS)) {
		c->shard_anchor = ri_xcalloc((size_t)c->shards, sizeof *c->shard_anchor);
		if ((rc = ri_witness_recent(c->witness, shard_anchor_line, c, err)) != RI_OK) {
			if (strncmp(err->msg, "journal integrity: ", 19) != 0) {
				char msg[sizeof err->msg];
				snprintf(msg, sizeof msg, "%s", err->msg);
				ri_fail(err, RI_INTEGRITY, "journal integrity: %s", msg);
			}
			return rc == RI_JOURNAL_UNAVAILABLE ? rc : RI_INTEGRITY;
		}
	}
	return RI_OK;
}

void
ri_st_witness_detach(struct ri_st_core *c)
{
	ri_st_witness_discard(c);
	ri_witness_close(c->witness);
	c->witness = NULL;
	free(c->shard_anchor);
	c->shard_anchor = NULL;
}

static char *
dup_or_null(const char *s)
{
	return s != NULL ? ri_strdup(s) : NULL;
}

void
ri_st_witness_pend(struct ri_st_core *c, const struct ri_header *h, const unsigned char hash[RI_HASH_LEN],
    json_t *data)
{
	struct ri_witnessed *w;

	if (c->witness == NULL)
		return;
	if (c->n_pend == RI_WITNESS_PEND) {
		/* a long transaction: the newest line is what freshness needs */
		ri_witnessed_clear(&c->pend[0]);
		memmove(&c->pend[0], &c->pend[1], (RI_WITNESS_PEND - 1) * sizeof c->pend[0]);
		memset(&c->pend[RI_WITNESS_PEND - 1], 0, sizeof c->pend[0]);
		c->n_pend--;
	}
	w = &c->pend[c->n_pend++];
	w->epoch = c->witness_epoch;
	w->seq = h->seq;
	memcpy(w->hash, hash, RI_HASH_LEN);
	snprintf(w->event_id, sizeof w->event_id, "%s", h->event_id);
	w->action_ref = dup_or_null(h->action_ref);
	w->kind = dup_or_null(h->kind);
	w->act_key = dup_or_null(h->act_key);
	w->invocation_id = dup_or_null(h->invocation_id);
	w->actor_ref = dup_or_null(h->actor_ref);
	/* what names the act again after a restore: an intent's pairing datum
	 * (the probe's key into the store), a closing's intent */
	w->intent_event_id = dup_or_null(json_string_value(json_object_get(data, "intent_event_id")));
	if (h->role == RI_ROLE_INTENT) {
		w->pairing_datum = dup_or_null(json_string_value(json_object_get(json_object_get(data, "data"),
		    "pairing_datum")));
		/* an intent's line is synced before Open answers: it is what names
		 * the act to a restore after a power loss (tla/Freshness.tla,
		 * probe-powerloss); a closing's or a substrate record's need not
		 * be -- the intent's line names the act already */
		w->sync = true;
	}
}

void
ri_st_witness_sign(struct ri_st_core *c, const unsigned char sk[64])
{
	if (c->n_pend > 0)
		ri_witness_sign(c->instance_id, &c->pend[c->n_pend - 1], sk);
}

void
ri_st_witness_flush(struct ri_st_core *c)
{
	for (size_t i = 0; i < c->n_pend; i++) {
		ri_err e;
		struct ri_witnessed *w = &c->pend[i];
		/* negative control: only a seal's line is witnessed, as before */
		if (RI_NC(RI_NC_NO_APPEND_WITNESS) && !w->has_sig)
			continue;
		/* the intent committed, its line not yet written: a fail here is a
		 * line that could not be written (Open then refuses, open.c) */
		bool failed = w->sync && ri_fault("open.witness") == RI_FA_FAIL;
		if (failed)
			ri_fail(&e, RI_JOURNAL_UNAVAILABLE, "fault open.witness: the line was not written");
		if (failed || ri_witness_add(c->witness, w, &e) != RI_OK) {
			c->err.witness_missed = true;
			c->err.witness_missed_seq = w->seq;
			snprintf(c->err.witness_event_id, sizeof c->err.witness_event_id, "%s", w->event_id);
			snprintf(c->err.witness_msg, sizeof c->err.witness_msg, "record seq %lld landed, but its witness"
			    " line was not written: %.400s", (long long)w->seq, e.msg);
			continue;
		}
		if (!c->anchored || w->seq > c->anchor_seq) {
			c->anchored = true;
			c->anchor_seq = w->seq;
			c->anchor_shard = line_shard(c, w->kind, w->act_key);
			memcpy(c->anchor_hash, w->hash, RI_HASH_LEN);
		}
		shard_anchor_set(c, line_shard(c, w->kind, w->act_key), w->seq, w->hash);
	}
	ri_st_witness_discard(c);
}

void
ri_st_witness_discard(struct ri_st_core *c)
{
	for (size_t i = 0; i < c->n_pend; i++)
		ri_witnessed_clear(&c->pend[i]);
	c->n_pend = 0;
}

bool
ri_witness_wants(const struct ri_st_core *c, int shard, int64_t last_seq)
{
	if (RI_NC(RI_NC_NO_WITNESS_CHECK))
		return false;   /* negative control: the journal never compared with its witness */
	if (!c->anchored)
		return false;
	/* another shard's head: the anchor's record must stand all the same
	 * (negative control: the anchor's own shard alone is judged) */
	if (c->shards > 1 && shard != c->anchor_shard)
		return !RI_NC(RI_NC_ANCHOR_OWN_SHARD);
	return last_seq >= c->anchor_seq;
}

int64_t
ri_witness_shard_anchor(const struct ri_st_core *c, int shard)
{
	if (RI_NC(RI_NC_NO_WITNESS_CHECK) || c->shard_anchor == NULL || shard < 0 || shard >= c->shards)
		return 0;
	return c->shard_anchor[shard].last_seq;
}

int
ri_witness_shard_judge(struct ri_st_core *c, int shard, int64_t last_seq, const unsigned char *at)
{
	int64_t seq = ri_witness_shard_anchor(c, shard);

	if (seq == 0)
		return RI_ST_OK;
	if (last_seq < seq)
		return ri_st_fail(c, RI_ST_INTEGRITY, last_seq, NULL,
		    "journal integrity: shard %d's chain ends at seq %lld, behind its witness (seq %lld):"
		    " it was rolled back or restored (ri(7): restoring a journal)", shard, (long long)last_seq,
		    (long long)seq);
	if (at == NULL || sodium_memcmp(at, c->shard_anchor[shard].hash, RI_HASH_LEN) != 0)
		return ri_st_fail(c, RI_ST_INTEGRITY, seq, NULL,
		    "journal integrity: the record at seq %lld is not the one the witness names:"
		    " the journal was rewritten behind its seal, or is another journal", (long long)seq);
	return RI_ST_OK;
}

/*
 * With shards (docs/SHARDS.md, freshness): the anchor's own shard's head
 * is judged as the one head was -- not behind the line, the record there
 * the one it names; any other shard's head is judged by the anchor's
 * record alone (at: its hash, NULL when the journal holds none), so a
 * journal put back in time fails every read, whichever shard it reads.
 */
int
ri_witness_judge(struct ri_st_core *c, int shard, int64_t last_seq, const unsigned char *at)
{
	if (RI_NC(RI_NC_NO_WITNESS_CHECK) || !c->anchored)
		return RI_ST_OK;
	if (c->shards > 1 && shard != c->anchor_shard) {
		if (RI_NC(RI_NC_ANCHOR_OWN_SHARD))
			return RI_ST_OK;
		if (at == NULL)
			return ri_st_fail(c, RI_ST_INTEGRITY, c->anchor_seq, NULL,
			    "journal integrity: the journal does not hold seq %lld, which its witness names:"
			    " it was rolled back or restored (ri(7): restoring a journal)", (long long)c->anchor_seq);
		if (sodium_memcmp(at, c->anchor_hash, RI_HASH_LEN) != 0)
			return ri_st_fail(c, RI_ST_INTEGRITY, c->anchor_seq, NULL,
			    "journal integrity: the record at seq %lld is not the one the witness names:"
			    " the journal was rewritten behind its seal, or is another journal", (long long)c->anchor_seq);
		return RI_ST_OK;
	}
	if (last_seq < c->anchor_seq)
		return ri_st_fail(c, RI_ST_INTEGRITY, last_seq, NULL,
		    "journal integrity: the journal ends at seq %lld, behind its witness (seq %lld):"
		    " it was rolled back or restored (ri(7): restoring a journal)",
		    (long long)last_seq, (long long)c->anchor_seq);
	if (at != NULL ? sodium_memcmp(at, c->anchor_hash, RI_HASH_LEN) != 0 : c->anchor_seq > 0)
		return ri_st_fail(c, RI_ST_INTEGRITY, c->anchor_seq, NULL,
		    "journal integrity: the record at seq %lld is not the one the witness names:"
		    " the journal was rewritten behind its seal, or is another journal",
		    (long long)c->anchor_seq);
	return RI_ST_OK;
}

int
ri_scope_head_judge(struct ri_st_core *c, const struct scope *sc, int64_t rows, const unsigned char *newest,
    bool present, const struct ri_leaf *leaf, int64_t *last)
{
	if (!present) {
		if (rows != 0)
			return ri_st_fail(c, RI_ST_INTEGRITY, rows, NULL,
			    "journal integrity: %s has records (seq %lld) but no authenticated head", scope_name(sc),
			    (long long)rows);
		*last = 0;
		return RI_ST_OK;
	}
	if (rows != leaf->last_seq)
		return ri_st_fail(c, RI_ST_INTEGRITY, leaf->last_seq, NULL,
		    "journal integrity: %s ends at seq %lld but its authenticated head is seq %lld"
		    " (its records were deleted, moved or re-typed)", scope_name(sc), (long long)rows,
		    (long long)leaf->last_seq);
	if (newest == NULL || !ri_eq32(newest, leaf->hash))
		return ri_st_fail(c, RI_ST_INTEGRITY, leaf->last_seq, NULL,
		    "journal integrity: the newest record of %s (seq %lld) is not the one its head names",
		    scope_name(sc), (long long)leaf->last_seq);
	*last = leaf->last_seq;
	return RI_ST_OK;
}

/* ---- ri-audit's state check of the tree of scope heads ---------------------- */

void
ri_leaf_judge(struct ri_leaf_tally *t, const unsigned char key[RI_SCOPE_LEN], const struct ri_leaf *leaf,
    const char *kind, const char *act_key, const char *inv, const unsigned char *hash)
{
	struct scope act, iv;
	char msg[512];

	if (hash == NULL) {
		snprintf(msg, sizeof msg, "a scope's authenticated head names seq %lld, which the journal does not hold",
		    (long long)leaf->last_seq);
		t->each("8.1.1", leaf->last_seq, msg, t->arg);
		return;
	}
	scope_make(&act, SCOPE_ACT, kind, act_key);
	if (inv != NULL)
		scope_make(&iv, SCOPE_INV, inv, NULL);
	/* (rows past the head would be records the traversal fails: no index
	 * lookup per leaf is needed here) */
	if (memcmp(key, act.key, RI_SCOPE_LEN) == 0) {
		t->acts++;
	} else if (inv != NULL && memcmp(key, iv.key, RI_SCOPE_LEN) == 0) {
		t->invs++;
	} else {
		snprintf(msg, sizeof msg, "a head of the scope heads' tree names seq %lld, a record of another scope",
		    (long long)leaf->last_seq);
		t->each("8.1.1", leaf->last_seq, msg, t->arg);
	}
	if (memcmp(hash, leaf->hash, RI_HASH_LEN) != 0) {
		snprintf(msg, sizeof msg, "the head naming seq %lld binds another hash: the record was rewritten",
		    (long long)leaf->last_seq);
		t->each("8.1.1", leaf->last_seq, msg, t->arg);
	}
}

void
ri_leaf_tally_judge(const struct ri_leaf_tally *t, int64_t acts, int64_t invs)
{
	char msg[512];

	if (acts != t->acts || invs != t->invs) {
		snprintf(msg, sizeof msg, "%lld acts and %lld invocations have records, but the tree holds"
		    " %lld and %lld heads: a scope's head was deleted or its records hidden",
		    (long long)acts, (long long)invs, (long long)t->acts, (long long)t->invs);
		t->each("8.1.1", 0, msg, t->arg);
	}
}

static int
by_leaf_seq(const void *a, const void *b)
{
	const struct ri_leaf_item *x = a, *y = b;

	if (x->leaf.last_seq != y->leaf.last_seq)
		return x->leaf.last_seq < y->leaf.last_seq ? -1 : 1;
	return memcmp(x->key, y->key, RI_SCOPE_LEN);       /* an act's head and its invocation's */
}

static int
leaf_batch_flush(struct ri_leaf_batch *b)
{
	int rc = 0;

	if (b->n > 0)
		qsort(b->v, b->n, sizeof *b->v, by_leaf_seq);
	for (size_t i = 0; i < b->n && rc == 0; i++)
		rc = b->judge(b, b->v[i].key, &b->v[i].leaf);
	b->n = 0;
	return rc;
}

int
ri_leaf_batch_end(struct ri_leaf_batch *b)
{
	int rc = leaf_batch_flush(b);

	free(b->v);
	b->v = NULL;
	return rc;
}

int
ri_leaf_batch_walk(const struct ri_tree_io *io, const unsigned char root[RI_HASH_LEN], struct ri_leaf_batch *b,
    char *why, size_t n)
{
	int rc = ri_tree_walk(io, root, ri_leaf_batch_add, b, why, n);

	(void)ri_leaf_batch_end(b);
	return rc;
}

void
ri_leaf_batch_init(struct ri_leaf_batch *b, const struct ri_store *st, ri_state_fn each, void *arg,
    ri_leaf_judge_fn judge, void *ctx)
{
	*b = (struct ri_leaf_batch){ { each, arg, 0, 0 }, judge, ctx,
		st->leaf_batch ? st->leaf_batch : RI_LEAF_BATCH, 0, NULL };
}

int
ri_leaf_batch_add(const unsigned char key[RI_SCOPE_LEN], const struct ri_leaf *leaf, void *arg)
{
	struct ri_leaf_batch *b = arg;

	if (b->v == NULL && b->cap > 0 && (b->v = malloc(b->cap * sizeof *b->v)) == NULL)
		b->cap = 0;
	if (b->cap == 0)
		return b->judge(b, key, leaf);
	memcpy(b->v[b->n].key, key, RI_SCOPE_LEN);
	b->v[b->n].leaf = *leaf;
	if (++b->n < b->cap)
		return 0;
	return leaf_batch_flush(b);
}

/* ---- the open-intents index ------------------------------------------------ */

int
ri_st_shard_of(const struct ri_st_core *c, const char *kind, const char *act_key)
{
	unsigned char act[RI_SCOPE_LEN];

	/* (without the key no act is routed: a keyless reader judges no
	 * shard membership, callers check c->key) */
	if (c->shards <= 1 || c->key == NULL || strcmp(kind, "audit") == 0)
		return 0;
	ri_scope_act(kind, act_key, act);
	return ri_shard_of(c->shard_key, act, c->shards);
}

int
ri_jheads_newest(const struct ri_jhead *jh, int shards)
{
	int newest = 0;

	for (int s = 1; s < shards; s++)
		if (jh[s].last_seq > jh[newest].last_seq)
			newest = s;
	return newest;
}

void
ri_open_scan_begin(struct ri_open_scan *os, const struct ri_st_core *c)
{
	int n = c->shards > 1 ? c->shards : 1;

	os->c = c;
	os->acc = ri_xcalloc((size_t)n, sizeof *os->acc);
	os->count = ri_xcalloc((size_t)n, sizeof *os->count);
}

void
ri_open_scan_row(struct ri_open_scan *os, const char *inv, int64_t seq, const char *kind, const char *act_key,
    const char *event_id, ri_ms recorded_at)
{
	unsigned char elem[RI_HASH_LEN];
	int shard = ri_st_shard_of(os->c, kind, act_key);

	ri_open_elem(inv, seq, kind, act_key, event_id, recorded_at, elem);
	ri_acc_xor(os->acc[shard], elem);
	os->count[shard]++;
	if (os->out == NULL || (os->kind != NULL && strcmp(kind, os->kind) != 0) ||
	    (os->act_key != NULL && strcmp(act_key, os->act_key) != 0) ||
	    (os->aged_by != RI_NONE && recorded_at > os->aged_by))
		return;
	if (*os->n == os->cap) {
		os->cap = os->cap ? os->cap * 2 : 16;
		*os->out = realloc(*os->out, os->cap * sizeof **os->out);
		if (*os->out == NULL)
			abort();
	}
	struct ri_open_intent *o = &(*os->out)[(*os->n)++];
	o->seq = seq;
	o->kind = ri_strdup(kind);
	o->act_key = ri_strdup(act_key);
	o->invocation_id = ri_strdup(inv);
	o->event_id = ri_strdup(event_id);
	o->recorded_at = recorded_at;
}

static int
by_seq(const void *a, const void *b)
{
	const struct ri_open_intent *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int
ri_open_scan_end(struct ri_st_core *c, struct ri_open_scan *os, const struct ri_jhead *jh)
{
	int rc = RI_ST_OK;

	if (os->out != NULL && *os->n > 1)
		qsort(*os->out, *os->n, sizeof **os->out, by_seq);
	for (int s = 0; c->key != NULL && rc == RI_ST_OK && s < (c->shards > 1 ? c->shards : 1); s++)
		if (os->count[s] != jh[s].open_count || sodium_memcmp(os->acc[s], jh[s].open_acc, RI_HASH_LEN) != 0)
			rc = ri_st_fail(c, RI_ST_INTEGRITY, 0, NULL,
			    "journal integrity: the open-intents index (%lld rows%s) disagrees with its authenticated"
			    " accumulator (%lld open intents): a row was deleted, added or altered"
			    " (after investigating, ri-sweep --rebuild)", (long long)os->count[s],
			    c->shards > 1 ? " of a shard" : "", (long long)jh[s].open_count);
	free(os->acc);
	free(os->count);
	os->acc = NULL;
	os->count = NULL;
	return rc;
}

/* ---- seals that mean something --------------------------------------------- */

/* Does the tree hold scope sc's head at seq or later? */
static int
scope_covers(struct ri_st_core *c, struct ri_seal_walk *sw, const struct ri_jhead *jh, int type, const char *a,
    const char *b, int64_t seq)
{
	struct scope sc;
	struct ri_leaf leaf;
	bool present;
	int rc;

	scope_make(&sc, type, a, b);
	if ((rc = sw->tree_get(sw->backend, jh, sc.key, &present, &leaf)) != RI_ST_OK)
		return rc;
	if (!present || leaf.last_seq < seq)
		return ri_st_fail(c, RI_ST_INTEGRITY, seq, NULL,
		    "journal integrity: record seq %lld is newer than the head of %s (%lld)", (long long)seq,
		    scope_name(&sc), (long long)(present ? leaf.last_seq : 0));
	return RI_ST_OK;
}

void
ri_seal_walk_begin(struct ri_seal_walk *sw, const struct ri_st_core *c)
{
	sw->from = sw->expect;
	sw->prev = ri_xcalloc((size_t)c->shards, sizeof *sw->prev);
	sw->newest = ri_xcalloc((size_t)c->shards, sizeof *sw->newest);
	sw->floor = ri_xcalloc((size_t)c->shards, sizeof *sw->floor);
}

int
ri_seal_walk_row(struct ri_st_core *c, struct ri_seal_walk *sw, struct ri_record *r, struct ri_raw *w)
{
	int shard = w->shard, rc = RI_ST_OK;

	/* a gap may be an allocation that never committed (seq_gaps): each
	 * shard's chain is walked by its links */
	if (c->seq_gaps && r->seq > sw->expect)
		sw->expect = r->seq;
	if (r->seq != sw->expect)
		rc = ri_st_fail(c, RI_ST_INTEGRITY, sw->expect, NULL,
		    "journal integrity: record seq %lld is missing (deleted rows)", (long long)sw->expect);
	else if (shard < 0 || shard >= c->shards)
		rc = ri_st_fail(c, RI_ST_INTEGRITY, r->seq, r->event_id,
		    "journal integrity: record seq %lld names shard %d of %d", (long long)r->seq, shard, c->shards);
	/* a shard's first record since the seal links to the shard's record
	 * before it, read once; the rest to the one walked before them */
	else if (sw->newest[shard] == 0)
		rc = sw->link_at(sw->backend, shard, r->seq, sw->prev[shard]);
	if (rc != RI_ST_OK) {
		free(w->payload_text);
		w->payload_text = NULL;
		ri_record_clear(r);
		return rc;
	}
	const struct ri_jhead *jh = &sw->jh[shard];
	if ((rc = ri_st_verify_row(c, r, w, sw->prev[shard], sw->now)) == RI_ST_OK &&
	    ri_st_shard_of(c, r->kind, r->act_key) != shard)
		rc = ri_st_fail(c, RI_ST_INTEGRITY, r->seq, r->event_id,
		    "journal integrity: record seq %lld (%s) is in shard %d, not its act's", (long long)r->seq,
		    r->event_id, shard);
	if (rc == RI_ST_OK) {
		rc = scope_covers(c, sw, jh, SCOPE_ACT, r->kind, r->act_key, r->seq);
		if (rc == RI_ST_OK && r->invocation_id != NULL)
			rc = scope_covers(c, sw, jh, SCOPE_INV, r->invocation_id, NULL, r->seq);
	}
	/* the previous seal (the walk's first row, with shards): the heads it
	 * signed are each shard's floor */
	if (rc == RI_ST_OK && c->shards > 1 && r->seq == sw->from && strcmp(r->action_ref, "audit.sealed") == 0) {
		json_t *heads = json_object_get(r->payload, "heads");
		for (int s = 0; s < c->shards && (size_t)s < json_array_size(heads); s++)
			sw->floor[s] = json_integer_value(json_array_get(json_array_get(heads, (size_t)s), 0));
	}
	memcpy(sw->prev[shard], r->hash, RI_HASH_LEN);
	sw->newest[shard] = r->seq;
	ri_record_clear(r);
	sw->expect++;
	return rc;
}

int
ri_seal_walk_end(struct ri_st_core *c, struct ri_seal_walk *sw, int rc)
{
	int64_t head = sw->jh[ri_jheads_newest(sw->jh, c->shards)].last_seq;

	if (rc == RI_ST_OK && sw->expect - 1 != head)
		rc = ri_st_fail(c, RI_ST_INTEGRITY, head, NULL,
		    "journal integrity: the journal ends at seq %lld before its head (seq %lld)",
		    (long long)(sw->expect - 1), (long long)head);
	/* each shard's head names its newest record walked, or one before the
	 * walk began when the shard has none since -- and none is behind the
	 * head the previous seal signed for it (a shard put back in time) */
	for (int s = 0; s < c->shards && rc == RI_ST_OK; s++) {
		if (sw->newest[s] != 0 ? sw->jh[s].last_seq != sw->newest[s] : sw->jh[s].last_seq >= sw->from)
			rc = ri_st_fail(c, RI_ST_INTEGRITY, sw->jh[s].last_seq, NULL,
			    "journal integrity: shard %d's head names seq %lld, its records end at seq %lld", s,
			    (long long)sw->jh[s].last_seq, (long long)sw->newest[s]);
		else if (!RI_NC(RI_NC_SEAL_FLOOR_UNCHECKED) && sw->jh[s].last_seq < sw->floor[s])
			rc = ri_st_fail(c, RI_ST_INTEGRITY, sw->floor[s], NULL,
			    "journal integrity: shard %d's head (seq %lld) is behind the head the newest seal signed for it"
			    " (seq %lld): rolled back", s, (long long)sw->jh[s].last_seq, (long long)sw->floor[s]);
	}
	free(sw->prev);
	free(sw->newest);
	free(sw->floor);
	sw->prev = NULL;
	sw->newest = NULL;
	sw->floor = NULL;
	return rc;
}

/* ---- rebuild ------------------------------------------------------------ */

void
ri_rebuild_begin(struct ri_rebuild *rb, const struct ri_st_core *c)
{
	rb->open = json_object();
	rb->purged = json_object();
	rb->expect = 1;
	rb->prev = ri_xcalloc((size_t)c->shards, sizeof *rb->prev);
	rb->newest = ri_xcalloc((size_t)c->shards, sizeof *rb->newest);
	for (int s = 0; s < c->shards; s++)
		ri_core_shard_genesis(c, s, rb->prev[s]);
}

int
ri_rebuild_row(struct ri_st_core *c, struct ri_rebuild *rb, struct ri_record *r, struct ri_raw *w, ri_ms now)
{
	int rc;

	int shard = w->shard;

	if (c->seq_gaps && r->seq > rb->expect)
		rb->expect = r->seq;    /* a gap: as the seal's walk */
	if (r->seq != rb->expect || shard < 0 || shard >= c->shards) {
		free(w->payload_text);
		w->payload_text = NULL;
		ri_record_clear(r);
		return r->seq != rb->expect ? ri_st_fail(c, RI_ST_INTEGRITY, rb->expect, NULL,
		    "journal integrity: record seq %lld is missing (deleted rows)", (long long)rb->expect) :
		    ri_st_fail(c, RI_ST_INTEGRITY, r->seq, NULL, "journal integrity: record seq %lld names shard %d of %d",
		    (long long)r->seq, shard, c->shards);
	}
	if ((rc = ri_st_verify_row(c, r, w, rb->prev[shard], now)) != RI_ST_OK) {
		ri_record_clear(r);
		return rc;
	}
	if (ri_st_shard_of(c, r->kind, r->act_key) != shard) {
		ri_record_clear(r);
		return ri_st_fail(c, RI_ST_INTEGRITY, r->seq, NULL, "journal integrity: record seq %lld is in shard %d,"
		    " not its act's", (long long)r->seq, shard);
	}
	memcpy(rb->prev[shard], r->hash, RI_HASH_LEN);
	rb->newest[shard] = r->seq;
	if (r->invocation_id != NULL) {
		if (r->role == RI_ROLE_INTENT && json_object_get(rb->open, r->invocation_id) == NULL)
			json_object_set_new(rb->open, r->invocation_id, json_pack("{s:I, s:s, s:s, s:s, s:I}", "seq",
			    (json_int_t)r->seq, "kind", r->kind, "act_key", r->act_key, "event_id", r->event_id,
			    "recorded_at", (json_int_t)r->recorded_at));
		else if (ri_role_closing(r->role))
			json_object_del(rb->open, r->invocation_id);
		if (r->purged)
			json_object_set_new(rb->purged, r->invocation_id, json_true());
	}
	ri_record_clear(r);
	rb->expect++;
	return RI_ST_OK;
}

int
ri_rebuild_end(struct ri_st_core *c, struct ri_rebuild *rb, const struct ri_jhead *jh)
{
	const char *inv;
	json_t *v;

	for (int s = 0; s < c->shards; s++)
		if (rb->newest[s] != jh[s].last_seq)
			return ri_st_fail(c, RI_ST_INTEGRITY, jh[s].last_seq, NULL,
			    "journal integrity: the journal ends before its head");
	json_object_foreach(rb->purged, inv, v)
		json_object_del(rb->open, inv);
	return RI_ST_OK;
}

void
ri_rebuild_free(struct ri_rebuild *rb)
{
	json_decref(rb->open);
	json_decref(rb->purged);
	rb->open = rb->purged = NULL;
	free(rb->prev);
	free(rb->newest);
	rb->prev = NULL;
	rb->newest = NULL;
}

void
ri_push_record(struct ri_records *rs, size_t *cap, struct ri_record *r)
{
	if (rs->n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		rs->v = realloc(rs->v, *cap * sizeof *rs->v);
		if (rs->v == NULL)
			abort();
	}
	rs->v[rs->n++] = *r;
}
