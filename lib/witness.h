/*
 * witness.h -- the witness: an append-only file outside the journal (by
 * default beside the integrity key, where a journal-only attacker cannot
 * write) holding one line per seal:
 *
 *   {"instance_id":HEX,"seq":N,"hash":HEX,"signature":HEX}
 *
 * seq and hash name the audit.sealed record itself; the signature is the
 * seal key's Ed25519 signature over ri_seal_message(instance, seq, hash).
 * A line written by `ri-init --accept-restore` also carries
 * "restore":{"by","why","at","lost_seq","lost_hash"}.
 *
 * Every reader and writer compares the journal with the newest line: a
 * journal whose head is below it, or whose record at its seq has another
 * hash, was rolled back (or restored) and fails verification.  The newest
 * line is found by reading the file's tail: O(1) in its length.
 * Backend-independent: no SQLite here.
 */
#ifndef RI_WITNESS_H
#define RI_WITNESS_H

#include "integrity.h"

struct ri_witness_line {
	unsigned char instance_id[RI_INSTANCE_LEN];
	int64_t seq;
	unsigned char hash[RI_HASH_LEN];
	unsigned char sig[64];
	bool restore;                   /* an accepted restore */
};

/* Create an empty witness (mode 0600); refuses an existing file. */
int ri_witness_create(const char *path, ri_err *err);
/* Append one line (O_APPEND, one write, fsync'd).  restore: NULL, or the
 * restore's {by, why, at, lost_seq, lost_hash}. */
int ri_witness_append(const char *path, const struct ri_witness_line *l, json_t *restore, ri_err *err);
/* The newest complete line.  RI_INTEGRITY when the file is missing, empty
 * or its newest line malformed (the witness is part of what is verified);
 * RI_JOURNAL_UNAVAILABLE when it cannot be read. */
int ri_witness_newest(const char *path, struct ri_witness_line *out, ri_err *err);
/* Does any line name (seq, hash) for this instance?  (A copy is a past
 * state of the witnessed history.)  Scans the whole file. */
int ri_witness_find(const char *path, const unsigned char instance[RI_INSTANCE_LEN], int64_t seq,
    const unsigned char hash[RI_HASH_LEN], bool *found, ri_err *err);
/* Sign a line's (instance, seq, hash) with the seal secret key. */
void ri_witness_sign(struct ri_witness_line *l, const unsigned char sk[64]);
/* Does the line's signature verify under the seal public key? */
bool ri_witness_verify(const struct ri_witness_line *l, const unsigned char pk[32]);

#endif
