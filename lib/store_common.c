/* store_common.c -- the row verdicts every backend shares (store_common.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "store_common.h"

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
}

/*
 * Shape, payload digest, chain link, MAC.  A payload missing before its
 * retention ended is a destroyed record, not a purge.
 */
const char *
ri_raw_verify(const unsigned char instance[RI_INSTANCE_LEN], const unsigned char *key, size_t keylen,
    struct ri_record *r, struct ri_raw *w, const unsigned char prev[RI_HASH_LEN], ri_ms now)
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
		if (!w->has_salt || sodium_memcmp(calc, w->digest, RI_HASH_LEN) != 0)
			why = "its payload does not match its digest (a changed payload)";
	} else if (w->has_salt) {
		why = "a payload without its salt";
	} else if (r->retention_until == RI_NONE || r->retention_until > now) {
		why = "its payload is gone before its retention ended";
	}
	if (why == NULL) {
		ri_raw_header(instance, r, w, &h);
		ri_record_hash(prev, &h, calc);
		if (sodium_memcmp(calc, w->hash, RI_HASH_LEN) != 0)
			why = "its header or chain link is wrong (altered, moved or copied, or a row before it deleted)";
#ifndef RI_NC_NO_MAC_CHECK
		else if (key != NULL && !ri_mac_ok(key, keylen, w->hash, RI_HASH_LEN, w->mac, RI_HASH_LEN))
			why = "it fails its MAC (forged, or the wrong integrity key)";
#endif
	}
	if (why == NULL && w->payload_text != NULL) {
		json_error_t je;
		r->payload = json_loads(w->payload_text, JSON_REJECT_DUPLICATES, &je);
		if (r->payload == NULL || !json_is_object(r->payload))
			why = "its payload is not a JSON object";
		r->payload_bytes = strlen(w->payload_text);
	}
	r->purged = w->payload_text == NULL;
	memcpy(r->hash, w->hash, RI_HASH_LEN);
	free(w->payload_text);
	w->payload_text = NULL;
	return why;
}

unsigned
ri_raw_problems(const unsigned char instance[RI_INSTANCE_LEN], const unsigned char *key, size_t keylen,
    struct ri_record *r, struct ri_raw *w, unsigned char prev[RI_HASH_LEN], ri_ms now)
{
	unsigned problems = 0;
	unsigned char calc[RI_HASH_LEN];
	struct ri_header h;

	if (!w->shapes_ok) {
		problems |= RI_P_SHAPE;
	} else {
		ri_raw_header(instance, r, w, &h);
		ri_record_hash(prev, &h, calc);
		if (sodium_memcmp(calc, w->hash, RI_HASH_LEN) != 0)
			problems |= RI_P_LINK;
		if (key != NULL && !ri_mac_ok(key, keylen, w->hash, RI_HASH_LEN, w->mac, RI_HASH_LEN))
			problems |= RI_P_MAC;
		if (w->payload_text != NULL) {
			ri_payload_digest(w->salt, w->payload_text, strlen(w->payload_text), calc);
			if (!w->has_salt || sodium_memcmp(calc, w->digest, RI_HASH_LEN) != 0)
				problems |= RI_P_DIGEST;
			json_error_t je;
			r->payload = json_loads(w->payload_text, JSON_REJECT_DUPLICATES, &je);
			if (r->payload == NULL || !json_is_object(r->payload))
				problems |= RI_P_SHAPE;
			r->payload_bytes = strlen(w->payload_text);
		} else if (w->has_salt || r->retention_until == RI_NONE || r->retention_until > now) {
			problems |= RI_P_PURGED_EARLY;
		}
		memcpy(prev, w->hash, RI_HASH_LEN);
	}
	r->purged = w->payload_text == NULL;
	memcpy(r->hash, w->hash, RI_HASH_LEN);
	free(w->payload_text);
	w->payload_text = NULL;
	return problems;
}

void
ri_raw_trusted(struct ri_record *r, struct ri_raw *w)
{
	if (w->payload_text != NULL) {
		r->payload = json_loads(w->payload_text, JSON_REJECT_DUPLICATES, NULL);
		r->payload_bytes = strlen(w->payload_text);
	}
	r->purged = w->payload_text == NULL;
	memcpy(r->hash, w->hash, RI_HASH_LEN);
	free(w->payload_text);
	w->payload_text = NULL;
}

int64_t
ri_take_deadline(const struct ri_store *st, int64_t mono, ri_ms left, bool *bounded)
{
	/* open step 2.2: a bound below the holder's lease is lawful */
	*bounded = st->take_bounded && st->take_wait < left;
	return mono + (*bounded ? st->take_wait : left);
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
