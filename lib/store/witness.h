/*
 * witness.h -- the witness: the journal's memory of how far it got, kept
 * outside the journal (by default beside the integrity key, where a
 * journal-only attacker cannot write), one line per append (issue 39;
 * docs/INTEGRITY.md 4):
 *
 *   {"epoch":E,"seq":N,"at":OFF,"instance_id":HEX,"hash":HEX,"event_id":E,
 *    "action_ref":R,"kind":K,"act_key":A[,"invocation_id":I]
 *    [,"intent_event_id":E][,"actor_ref":A][,"pairing_datum":P]
 *    [,"signature":HEX],"mac":HEX}
 *
 * seq and hash name the record the line witnesses; the names after them
 * say which act it touched, so a restore can name every act it lost and
 * the sweep can ask the act's store again (pairing datum).  "at" is the
 * byte offset at which the line begins: a genuine line replayed anywhere
 * else fails its MAC.  The MAC is HMAC-SHA-256 under a key derived from
 * the integrity key ("ri witness key") over every byte of the line before
 * ',"mac":'.  A seal's line (audit.sealed) also carries the seal key's
 * Ed25519 signature over ri_seal_message(instance, seq, hash), which an
 * auditor holding only the public key can check.  Lines of the second wave
 * ({"hash","instance_id","seq","signature"}, one per seal) are read as
 * signed lines.
 *
 * Freshness: the journal may not end below the witness's highest verified
 * line, and its record there must be the one the line names.  Readers take
 * the HIGHEST (epoch, seq) among the file's last lines (concurrent writers
 * may append out of order), never merely the last line, and verify the
 * line they rely on: one that does not verify is tampering.  The epoch
 * counts accepted restores: a restore re-uses the sequence numbers it
 * lost, so the lines of the journal's new history outrank the old ones by
 * their epoch (ri-init --accept-restore starts the next).  Appends are
 * serialized by flock(2) so each line knows its offset; a torn last line (a
 * crash mid-append) is never read and is cut by the next append.  An
 * intent's line is synced before Open answers: after a power loss it is
 * what names the act to a later restore (tla/Freshness.tla shows an act
 * run twice without it); a seal's line is synced too.  Other lines are not:
 * a closing's act is named by its intent's line already, and a line lost to
 * a crash leaves the witness behind the journal, which a reader tolerates.
 *
 * "witness" may also be a postgresql:// URI (a table every host of a
 * multi-host instance shares; witness_pg.c): the same lines, one a row.
 * Backend-independent: no SQLite here.
 */
#ifndef RI_WITNESS_H
#define RI_WITNESS_H

#include "util/integrity.h"

struct ri_witness_line {
	int64_t epoch;                  /* accepted restores before the line */
	int64_t seq;
	int64_t at;                     /* where the line begins: a file offset, or
	                                 * -1 for a row of a table */
	unsigned char instance_id[RI_INSTANCE_LEN];
	unsigned char hash[RI_HASH_LEN];
	bool has_sig;                   /* a seal's line */
	unsigned char sig[64];
	bool legacy;                    /* a second-wave line: signed, no MAC */
	bool verified;                  /* its MAC (or signature) verified */
	json_t *names;                  /* the parsed line (the act it names), owned */
	char *text;                     /* the line as written (no newline), owned */
};

void ri_witness_line_clear(struct ri_witness_line *l);
/* A name the line carries ("kind", "act_key", "invocation_id", ...), or NULL. */
const char *ri_witness_name(const struct ri_witness_line *l, const char *field);

/* What an append witnesses: the record, and the act it names. */
struct ri_witnessed {
	int64_t epoch;
	int64_t seq;
	unsigned char hash[RI_HASH_LEN];
	char event_id[RI_ID_LEN + 1];
	char *action_ref, *kind, *act_key, *invocation_id, *intent_event_id, *actor_ref, *pairing_datum;
	bool has_sig;
	unsigned char sig[64];
	bool sync;                      /* durable before the append answers (an intent's) */
};
void ri_witnessed_clear(struct ri_witnessed *w);

struct ri_witness;

/* Create an empty witness (mode 0600); refuses an existing file. */
int ri_witness_create(const char *where, ri_err *err);
/* Undo ri_witness_create (a failed ri-init, issue 40 point 11): the file
 * unlinked, or the table dropped. */
int ri_witness_remove(const char *where, ri_err *err);
/*
 * Open the witness at `where` for instance `instance`.  key: the integrity
 * key (NULL: a keyless reader, which can verify only signed lines, against
 * pk when given).  Nothing is read yet.  instance may be NULL: bound
 * later (ri_witness_bind), before any line is judged or added.
 */
int ri_witness_open(const char *where, const unsigned char instance[RI_INSTANCE_LEN], const unsigned char *key,
    size_t keylen, const unsigned char *pk, struct ri_witness **out, ri_err *err);
void ri_witness_bind(struct ri_witness *w, const unsigned char instance[RI_INSTANCE_LEN]);
void ri_witness_close(struct ri_witness *w);
/*
 * Read the newest line now and judge it later (issue 43): a store reads
 * its witness before the snapshot it judges its head in begins, and learns
 * the instance id -- which the judgement needs -- in that snapshot.  The
 * next ri_witness_newest judges the line read here (and reports this
 * read's failure, if it failed), once -- and, with recent, the recent lines
 * too, which the next ri_witness_recent judges instead of reading them (a
 * journal of shards: each shard's anchor from before the snapshot, so a
 * line another host adds after it never makes a shard look rolled back).
 * ri_witness_kept_seq: that line's
 * seq as written, not verified (a guess, to send the head's read with).
 */
void ri_witness_read_newest(struct ri_witness *w, bool recent);
bool ri_witness_kept_seq(const struct ri_witness *w, int64_t *seq);
/*
 * The highest line, verified.  RI_NOT_KNOWN when the witness holds no line
 * (a file ri-init has just made); RI_INTEGRITY when it is missing, a line
 * is malformed, the highest line fails its MAC or signature,
 * or it is another instance's; RI_JOURNAL_UNAVAILABLE when it cannot be
 * read.  A keyless reader without the line's means of verification gets
 * it with verified = false: a claim it may only fail closed on.
 */
int ri_witness_newest(struct ri_witness *w, struct ri_witness_line *out, ri_err *err);
/* Append the line for one record (a seal's carries its signature). */
int ri_witness_add(struct ri_witness *w, const struct ri_witnessed *what, ri_err *err);
/* Every line, in order, each verified (a keyless reader: each signed line
 * verified, the rest passed with verified = false); a line that fails is
 * RI_INTEGRITY naming it.  each() returns non-zero to stop. */
typedef int (*ri_witness_fn)(const struct ri_witness_line *l, void *arg);
int ri_witness_each(struct ri_witness *w, ri_witness_fn each, void *arg, ri_err *err);
/* The recent lines, each verified as ri_witness_each's, in no order: the
 * file's last 64 KiB, the table's newest RI_WITNESS_RECENT rows -- where
 * each shard's newest line is, for a journal of shards (docs/SHARDS.md). */
#define RI_WITNESS_RECENT 512
int ri_witness_recent(struct ri_witness *w, ri_witness_fn each, void *arg, ri_err *err);
/* Does a verified line name (seq, hash)?  (A copy is a past state of the
 * witnessed history.) */
int ri_witness_find(struct ri_witness *w, int64_t seq, const unsigned char hash[RI_HASH_LEN], bool *found,
    ri_err *err);
/* A head as an operator hands it over (ri-audit --expect-head, ri-init
 * --expect-head): SEQ:HASH, or a seal's line as witness_publish printed it
 * -- the line itself, after whatever prefix a logger put before its first
 * '{' (syslog's, journald's). */
bool ri_head_parse(const char *s, int64_t *seq, unsigned char hash[RI_HASH_LEN]);
/* Sign a seal's line: (instance, seq, hash) under the seal secret key. */
void ri_witness_sign(const unsigned char instance[RI_INSTANCE_LEN], struct ri_witnessed *what,
    const unsigned char sk[64]);
/* Does a signed line verify under the seal public key? */
bool ri_witness_sig_ok(const struct ri_witness_line *l, const unsigned char pk[32]);
/* Is `where` a PostgreSQL witness (shared by hosts)? */
bool ri_witness_is_pg(const char *where);

#endif
