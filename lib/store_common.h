/*
 * store_common.h -- what every backend of store.h judges the same way:
 * one stored record row against the hash of its predecessor.  The row is
 * decoded by the backend (each checks its own storage types); the verdict
 * -- shape, payload digest, chain link, MAC, purge legality -- is made
 * here, once, so a check is never written twice (docs/INTEGRITY.md).
 */
#ifndef RI_STORE_COMMON_H
#define RI_STORE_COMMON_H

#include <stdarg.h>

#include "integrity.h"
#include "store.h"

/* A row's stored integrity columns, beside the record they belong to. */
struct ri_raw {
	unsigned char digest[RI_HASH_LEN], hash[RI_HASH_LEN], mac[RI_HASH_LEN];
	unsigned char salt[RI_SALT_LEN];
	bool has_salt, shapes_ok;       /* shapes_ok: every column decoded exactly */
	int64_t act_prev, inv_prev;
	char *payload_text;             /* owned; NULL once purged */
};

/* The header the chain hash covers, as the row states it. */
void ri_raw_header(const unsigned char instance[RI_INSTANCE_LEN], const struct ri_record *r,
    const struct ri_raw *w, struct ri_header *h);
/*
 * Verify one row against its predecessor's hash (key NULL: chain only).
 * NULL when it verifies, else why it does not.  Either way the payload
 * text is consumed: on success r owns the parsed payload.
 */
const char *ri_raw_verify(const unsigned char instance[RI_INSTANCE_LEN], const unsigned char *key,
    size_t keylen, struct ri_record *r, struct ri_raw *w, const unsigned char prev[RI_HASH_LEN], ri_ms now);
/* The traversal's judgement (Check 8.1): every problem of the row, the
 * payload parsed when it is there; prev moves to the row's hash when the
 * row has one.  Consumes the payload text. */
unsigned ri_raw_problems(const unsigned char instance[RI_INSTANCE_LEN], const unsigned char *key,
    size_t keylen, struct ri_record *r, struct ri_raw *w, unsigned char prev[RI_HASH_LEN], ri_ms now);
/* A row its caller verified already in the same snapshot: parsed only. */
void ri_raw_trusted(struct ri_record *r, struct ri_raw *w);

/* A backend's failure: e says what (and names the record), the code comes
 * back.  The first integrity failure stays for the handle's life: a run
 * that met one fails closed at its end (AMD-03); ri_st_err_clear starts
 * a new operation's error and keeps it. */
int ri_st_failv(struct ri_store_error *e, int code, int64_t seq, const char *event_id, const char *fmt,
    va_list ap) __attribute__((format(printf, 5, 0)));
void ri_st_err_clear(struct ri_store_error *e);

/*
 * open step 2.2: the monotonic deadline of a take that found the section
 * held with `left` ms of the holder's lease to run -- that lease, or the
 * caller's shorter bound (--wait, -n; *bounded set then) -- and the words
 * for a take refused at it.
 */
int64_t ri_take_deadline(const struct ri_store *st, int64_t mono, ri_ms left, bool *bounded);
#define RI_TAKE_UNTIL(bounded) ((bounded) ? "the wait asked for (--wait, -n)" : "the holder's remaining lease")

#endif
