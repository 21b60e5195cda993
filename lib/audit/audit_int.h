/*
 * audit_int.h -- what ri-audit's files share: struct audit, the run's
 * state, and the functions one file lends the other.  audit.c drives the
 * run -- the traversal of every row, the registry, the seals, the witness,
 * the state read beside it, the report -- and records each verdict;
 * judge.c judges each invocation whole and pairs each record naming one
 * with its intent, as the traversal hands them over.  Private to
 * lib/audit/.
 */
#ifndef RI_AUDIT_INT_H
#define RI_AUDIT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sodium.h>

#include "audit/audit.h"
#include "store/heads.h"
#include "store/witness.h"
#include "util/progress.h"

struct intent_memo;                     /* judge.c */
struct pendings;                        /* judge.c */

struct span {
	char *finding, *kind;
	ri_ms start, end;
};

struct audit {
	struct ri *r;
	const struct ri_config *c;
	const struct ri_audit_opts *o;
	struct ri_prober *probers;      /* --probe: Check 6's probes, a batch probe kept for the run */
	ri_ms now;
	json_t *checks;                 /* id -> {status, failures, notes} */
	json_t *actors;                 /* actor -> {registered, revoked, service} */
	json_t *open_by_act;            /* "kind\x1f act" -> [inv ids] */
	json_t *inv_act;                /* inv id -> "kind\x1f act" */
	json_t *restores;               /* the accepted restores' event ids (audit.restored) */
	struct span *spans;
	size_t n_spans;
	bool have_register;
	struct ri_findings *reg;
	unsigned char pk[crypto_sign_PUBLICKEYBYTES];
	bool have_pk;
	unsigned char pk_instance[RI_INSTANCE_LEN];
	bool pk_has_instance;
	int64_t records, last_seq, excluded;
	/* each shard's newest recorded_at so far (Check 8.1.7 per shard: seqs
	 * of different shards commit, and are stamped, in any order) */
	ri_ms last_recorded_at[RI_SHARDS_MAX];
	unsigned char last_hash[32];
	/* each shard's newest record so far (seq 0: none yet; its hash is
	 * then the shard's genesis): what a seal over shards must name */
	struct ri_shard_head shard_last[RI_SHARDS_MAX];
	bool expect_seen;
	int64_t sealed_seq;
	/* the report's figures (ri-audit --html draws them from the answer) */
	const struct ri_record *cur;    /* the row being judged: names a failure's act */
	json_t *latency;                /* kind -> {buckets, closed, open, over_window, max_ms} */
	json_t *needs;                  /* [{kind, act_key, invocation_id, ...}] */
	struct ri_progress prog;
	/* the newest seal record that verified, and the unsealed tail after it */
	int64_t seals, seal_rec_seq;
	unsigned char seal_rec_hash[32];
	int64_t tail, tail_from;
	ri_ms tail_oldest;
	/* the witness, and its highest line (live journal) */
	struct ri_witness *w;
	bool have_witness, witness_seen;
	struct ri_witness_line witness;
	int64_t forged_findings;
	/* the open intents as the records say (the derived index is compared
	 * with it): invocation id -> {seq, event_id} */
	json_t *open_set;
	struct intent_memo *memo;       /* the traversal's recent intents (intent_of) */
	struct pendings *pending;       /* invocations waiting for their rows (pending_intent) */
};

/* ---- audit.c: the verdicts, and what a record says ---- */

void fail(struct audit *a, const char *id, const char *inv, const char *ev1, const char *ev2,
    const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void incomplete(struct audit *a, const char *id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void note(struct audit *a, const char *id, const char *what);
const struct ri_kind *bound(struct audit *a, const struct ri_record *rec);
bool service_actor(struct audit *a, const char *actor);
const char *pstr(const struct ri_record *rec, const char *field);
bool streq(const char *x, const char *y);

/* ---- judge.c: the invocations, judged as the traversal hands them over ---- */

void memo_new(struct audit *a);
void memo_put(struct audit *a, const struct ri_record *rec);
void memo_free(struct audit *a);
void bump(json_t *o, const char *field, int64_t by);
void pending_begin(struct audit *a);
bool pending_row(struct audit *a, const struct ri_record *rec, unsigned problems);
void pending_intent(struct audit *a, const struct ri_record *rec);
void pending_end(struct audit *a, bool judge);
void judge_named(struct audit *a, const struct ri_record *rec);

#endif
