/*
 * store.h -- the storage interface between the substrate (the protocol's
 * "Audit Trail": Event Log, Actor Identity, Tamper Evidence, Retention
 * Window), the critical-section host ("Lease"), and the protocol above.
 *
 * Nothing of SQLite crosses this line: the protocol holds a `struct
 * ri_store` and calls through its ops; store_sqlite.c is one backend, and a
 * PostgreSQL backend for the multi-node deployment is another behind the
 * same struct.
 *
 * Every record a read returns has been verified (chain link, MAC, payload
 * digest, the scope heads that make a deleted row visible).  A failure is
 * RI_ST_INTEGRITY naming the record -- never "absent".
 */
#ifndef RI_STORE_H
#define RI_STORE_H

#include "util/util.h"
#include "util/vocab.h"

/* The substrate's own actor: its records (audit.*, a restore's) are
 * attested by no registered actor. */
#define RI_SUBSTRATE_ACTOR "audit"

/* Answers of the substrate and the host. */
enum ri_st {
	RI_ST_OK = 0,
	RI_ST_NOT_KNOWN,            /* read_record: no such event id */
	RI_ST_PURGED,               /* read_record: payload destroyed by retention */
	RI_ST_INVALID_CREDENTIAL,   /* record_action */
	RI_ST_INVALID_REQUEST,      /* record_action: .cause says why */
	RI_ST_STEP2,                /* record_action: the append did not land */
	RI_ST_STEP3,                /* record_action: the commit did not land */
	RI_ST_STEP4,                /* record_action: appended; retention placement failed */
	RI_ST_LOST,                 /* record_action: the reply was lost; fate unknown */
	RI_ST_FENCED,               /* record_action: refused by the journal fence */
	RI_ST_UNAVAILABLE,          /* a read or the host could not reach the journal */
	RI_ST_INVALID_QUERY,        /* range read: the query itself is wrong */
	RI_ST_INTEGRITY,            /* verification failed: fail closed */
	RI_ST_SECTION_UNAVAILABLE,  /* take: not granted within the holder's lease */
	RI_ST_NOT_HELD,             /* release: the caller does not hold it */
	RI_ST_EXISTS,               /* actor_add: the name is taken */
	RI_ST_READONLY,             /* the journal is read-only */
	RI_ST_STALE_BINDINGS        /* record_action: the bindings scope moved since the
	                             * writer read it; nothing written, read and retry */
};

struct ri_record {
	int64_t seq;
	char event_id[RI_ID_LEN + 1];
	char *action_ref;
	char *kind;
	char *act_key;                  /* "" for substrate records */
	char *invocation_id;            /* NULL when the record names none */
	char *actor_ref;
	char attestation_id[RI_ID_LEN + 1];
	ri_ms recorded_at;
	ri_ms retention_until;          /* RI_NONE: unplaced (kept) */
	int role;                       /* enum ri_role, stored with the record */
	int64_t inv_link;               /* range reads only: the seq of the invocation's
	                                 * record before this one (0: none), verified with
	                                 * the row unless the read is trusted; every other
	                                 * read leaves 0 */
	json_t *payload;                /* NULL once purged */
	bool purged;
	unsigned char hash[32];
	size_t payload_bytes;           /* serialized payload size (0 once purged) */
	int shard;                      /* its chain's: its act's shard (docs/SHARDS.md) */
};

struct ri_records {
	struct ri_record *v;
	size_t n;
	bool more;                      /* page-complete signal: more beyond this page */
	int64_t next;                   /* cursor: the next seq to read from */
};

/* The journal fence (journal fence 1): a request-scoped deadline the
 * substrate checks inside the append's own transaction. */
struct ri_fence {
	const char *holder;             /* the writer's lease holder */
	ri_ms issue;                    /* the writer's seam reading at issue */
};

struct ri_append {
	const char *event_id;           /* minted by the writer before the issue, so a
	                                 * read-back after a lost reply finds exactly
	                                 * this record (resolve 24, Primitive policy 36) */
	const char *action_ref;
	const char *act_key;
	const char *invocation_id;      /* NULL for substrate records */
	const char *actor_ref;
	const char *credential;
	json_t *data;                   /* the record's payload object */
	const struct ri_fence *fence;   /* NULL: unfenced */
	const char *fault_tag;          /* "open.intent": names the fault points */
	json_t *bound;                  /* NULL, or an audit.bound payload appended just
	                                 * before the record, in its transaction: a change
	                                 * of the kind's bindings lands with the first
	                                 * record judged by it, or not at all (bindings.h) */
	bool bindings_guard;            /* the store checks, in the append's transaction,
	                                 * that the bindings scope's head is still */
	int64_t bindings_seen;          /* this seq (0: none), which the writer's decision
	                                 * on `bound` read -- else RI_ST_STALE_BINDINGS */
};

struct ri_appended {
	char event_id[RI_ID_LEN + 1];
	int64_t seq;
	unsigned char hash[32];         /* the record's chain hash */
	ri_ms recorded_at;
	char cause[64];                 /* invalid-request cause */
};

/* A range-read query: from seq `from` with no upper bound, at most `limit`
 * records, optionally filtered.  Filters are indexed (O(log n) per lookup). */
struct ri_query {
	int64_t from;                   /* first seq (1 = the beginning) */
	size_t limit;                   /* declared page size; 0 = the store's default */
	const char *invocation_id;      /* only records naming this invocation */
	const char *kind;               /* with act_key: only this act's records */
	const char *act_key;
	const char *action_ref;         /* only records of this action ref */
	bool descending;                /* newest first: from 0 (the head) or from the
	                                 * cursor a previous page returned */
	bool trusted;                   /* ri-audit only: every row was verified by the
	                                 * traversal in this same snapshot, so the rows
	                                 * are parsed, not verified again */
};

/* The reads a command is about to make (read_ahead, issue 43): range
 * reads as it will ask for them, the lease row it will read unlocked, the
 * open-intents index, a record by event id, an actor's
 * registry row.  A backend may send them ahead in
 * one round trip; each read, when made, is verified as ever. */
struct ri_ahead {
	const struct ri_query *q;
	size_t nq;
	const char *lease_kind, *lease_act_key;  /* NULL: no lease row */
	bool open_intents;
	const char *event_id;           /* read_record's (NULL: none) */
	const char *actor_ref;          /* authenticate's (NULL: none) */
};

struct ri_grant {
	ri_ms expires_at;               /* minted by the host */
	int64_t token;                  /* fencing token: only ever increases per key */
};

struct ri_open_intent {
	int64_t seq;
	char *kind, *act_key, *invocation_id, *event_id;
	ri_ms recorded_at;
};

struct ri_actor {
	char *actor_ref;
	bool service;
	ri_ms created_at;
	ri_ms revoked_at;               /* RI_NONE while active */
};

/* What the last failing call saw; an integrity failure names the record. */
struct ri_store_error {
	char msg[512];
	int64_t seq;                    /* 0 when no record is named */
	char event_id[RI_ID_LEN + 1];
	/* sticky for the store's life: some call failed verification, and
	 * what the first one said (the sweep surfaces it and exits 15) */
	bool integrity;
	char integrity_msg[512];
	/* sticky: a record landed but its witness line was not written (the
	 * witness is behind the journal: harmless, but that record is not
	 * protected against a rollback until the next line is written) */
	bool witness_missed;
	int64_t witness_missed_seq;     /* the newest record whose line is missing */
	char witness_event_id[RI_ID_LEN + 1];   /* its event id */
	char witness_msg[512];
};

/* What ri-audit's state check found wrong beside the records: check is the
 * audit check it fails ("8.1.1", "8.1.3", "8.1.8"), seq the record it names
 * or 0. */
typedef void (*ri_state_fn)(const char *check, int64_t seq, const char *msg, void *arg);

/* What the traversal found wrong with one row (Check 8.1). */
enum ri_problem {
	RI_P_GAP = 1 << 0,              /* seq does not follow the previous row */
	RI_P_LINK = 1 << 1,             /* hash does not recompute from the row before */
	RI_P_MAC = 1 << 2,              /* MAC does not verify under the key */
	RI_P_DIGEST = 1 << 3,           /* retained payload does not match its digest */
	RI_P_PURGED_EARLY = 1 << 4,     /* payload gone before its retention ended */
	RI_P_SHAPE = 1 << 5,            /* malformed row or payload */
	RI_P_HEAD = 1 << 6              /* the authenticated head disagrees (last row) */
};

/* One row as the traversal saw it: the record (payload parsed when it
 * verified) and its problems. */
typedef int (*ri_traverse_fn)(const struct ri_record *rec, unsigned problems, void *arg);

struct ri_store;

struct ri_store_ops {
	/* Audit Trail */
	int (*record_action)(struct ri_store *, const struct ri_append *, struct ri_appended *);
	int (*read_record)(struct ri_store *, const char *event_id, struct ri_record *);
	int (*range_read)(struct ri_store *, const struct ri_query *, struct ri_records *);
	/* the derived index of open intents (maintained in the append's
	 * transaction): kind = NULL for every kind, act_key = NULL for every act;
	 * only intents recorded at or before `aged_by` */
	int (*open_intents)(struct ri_store *, const char *kind, const char *act_key,
	    ri_ms aged_by, struct ri_open_intent **out, size_t *n);
	int (*purge)(struct ri_store *, ri_ms now, int64_t *purged);
	/* Actor Identity */
	int (*actor_add)(struct ri_store *, const char *actor_ref, bool service,
	    char credential_out[128]);
	int (*actor_revoke)(struct ri_store *, const char *actor_ref);
	int (*actor_list)(struct ri_store *, struct ri_actor **out, size_t *n);
	/* Actor Identity's credential check, and nothing else: no record, no
	 * attestation minted (close 1, Check 2, Invariant 5.1: who the caller
	 * is, decided before anything touches a section).  OK with the actor
	 * (actor_ref NULL: not copied) | INVALID_CREDENTIAL (unknown, wrong,
	 * revoked) | INTEGRITY (the registry row fails its MAC) | UNAVAILABLE. */
	int (*authenticate)(struct ri_store *, const char *actor_ref, const char *credential,
	    struct ri_actor *out);
	/* The distinct kinds of the open intents recorded after `since`
	 * (Binding 2, 6): ascending, each strdup'ed. */
	int (*open_kinds)(struct ri_store *, ri_ms since, char ***kinds, size_t *n);
	/* Lease: the critical-section host (act section 1-14) */
	int (*take)(struct ri_store *, const char *kind, const char *act_key,
	    const char *holder, ri_ms duration, struct ri_grant *);
	int (*remaining)(struct ri_store *, const char *kind, const char *act_key,
	    const char *holder, ri_ms *left);  /* RI_NONE when not held */
	int (*release)(struct ri_store *, const char *kind, const char *act_key,
	    const char *holder);
	/* marks: the sweep's sequence high water (named scalars) */
	int (*mark_get)(struct ri_store *, const char *name, int64_t *seq);
	int (*mark_set)(struct ri_store *, const char *name, int64_t seq);
	/* How long after its recorded_at a record must be before a reader's
	 * mark moves past its seq (sequence high water 2): the settle bound
	 * given, with one shard (commits in seq order); twice it with more,
	 * whose seqs commit in any order (docs/SHARDS.md, the delta and the
	 * mark; tla/DeltaRead.tla shard-seq-then-stamp). */
	ri_ms (*mark_lag)(struct ri_store *, ri_ms settle);
	/* Walk every row in seq order, verifying each independently, and
	 * report every problem (ri-audit); stops only on an unreadable journal
	 * or when each() returns non-zero. */
	int (*traverse)(struct ri_store *, ri_traverse_fn each, void *arg);
	/* ri-audit only, inside its traversal's snapshot (which verified every
	 * row): a record's header by event id, no payload -- NOT_KNOWN or OK,
	 * purged set when its payload was destroyed. */
	int (*peek)(struct ri_store *, const char *event_id, struct ri_record *);
	/* ri-audit only, inside its traversal's snapshot; optional (NULL: each
	 * invocation is read at its intent).  What the invocation index holds
	 * of one invocation: the first and last seq of its records (0 when
	 * none) and how many, so the traversal can judge an invocation from
	 * the rows it streams once it has passed the last of them (issue 15). */
	int (*inv_span)(struct ri_store *, const char *invocation_id, int64_t *first, int64_t *last, int64_t *n);
	/* Append audit.sealed: an Ed25519 signature (secret key sk, 64 bytes)
	 * over (instance id, head seq, head hash), in one transaction -- after
	 * verifying every record since the previous seal (never seal a tampered
	 * head: RI_ST_INTEGRITY, nothing appended).  A head that is a seal
	 * already answers that seal.  out names the seal record (seq, hash).
	 * extra (NULL: none): members added to the seal's payload -- the
	 * genesis seal carries the founding bindings (bindings.h). */
	int (*seal)(struct ri_store *, const unsigned char sk[64], json_t *extra, struct ri_appended *);
	/* Append one substrate record (audit.*) in its own transaction. */
	int (*substrate)(struct ri_store *, const char *action_ref, json_t *data, struct ri_appended *);
	/* Append n records on the substrate's own authority (actor "audit", no
	 * credential) in ONE transaction: a restore's records (restore.h),
	 * the sweep's audit.reconciled.  Each record's role comes from the
	 * vocabulary (a restored <kind>.intended is an intent).  out: n. */
	int (*append_substrate)(struct ri_store *, const struct ri_append *v, size_t n, struct ri_appended *out);
	/* A consistent online copy of the journal into a new file dest. */
	int (*backup)(struct ri_store *, const char *dest);
	/* Rebuild the derived state (the open-intents index and its
	 * accumulator, the tree of scope heads; leases and marks that fail
	 * their MAC are reset) from a verified traversal; refuses on any
	 * verification failure.  *report says what changed. */
	int (*rebuild)(struct ri_store *, json_t **report);
	/* ri-audit, keyed: verify what is not a record -- the schema, the tree
	 * of scope heads against the records, the open-intents accumulator,
	 * leases, marks, actors -- reporting each problem. */
	int (*audit_state)(struct ri_store *, ri_state_fn each, void *arg);
	/* Optional (NULL: not offered).  Hold one read snapshot across the
	 * reads that follow, until read_session(st, false): inside it a
	 * verified read passes over a record this snapshot has verified
	 * already, reusing the verification and the parse (the sweep's
	 * duplicate scan, whose invocation reads meet the records its pass
	 * just read).  No write may start inside a session. */
	int (*read_session)(struct ri_store *, bool on);
	/* Optional (NULL: nothing sent ahead).  The reads the caller is
	 * about to make, in the read snapshot the reads after it share (the
	 * command's, PostgreSQL's: issue 43) -- sent with its next round trip,
	 * so the reads answer from there instead of a round trip each.  A read
	 * is answered from them only when it is the very statement sent, in
	 * the same snapshot, and verified as ever; a write, a settle or the
	 * snapshot's age drops them.  Never fails the caller: a read not sent
	 * ahead runs on its own. */
	void (*read_ahead)(struct ri_store *, const struct ri_ahead *);
	/* Optional (NULL: nothing held between operations).  The caller is
	 * about to wait for the journal to change -- a nap before a retry, a
	 * wait on a bound, a lease or a child: a read snapshot the store holds
	 * across operations (PostgreSQL's, issue 43) ends, so the reads after
	 * the wait see what changed, on a clock read after it. */
	void (*settle)(struct ri_store *);
	/* The instance id (16 bytes). */
	const unsigned char *(*instance_id)(struct ri_store *);
	/* The hash the journal's first record links to: shard 0's genesis,
	 * or format 3's for a migrated journal (docs/SHARDS.md). */
	const unsigned char *(*genesis)(struct ri_store *);
	/* the current head: highest seq (0 when empty) and its hash */
	int (*head)(struct ri_store *, int64_t *seq, unsigned char hash[32]);
	/* the newest audit.sealed record (seq 0 when none) and its hash */
	int (*sealed)(struct ri_store *, int64_t *seq, unsigned char hash[32]);
	const struct ri_store_error *(*error)(struct ri_store *);
	void (*close)(struct ri_store *);
};

struct ri_store {
	const struct ri_store_ops *ops;
	/* open step 2.2: the caller may bound a take below the holder's
	 * remaining lease (ri-open, ri-run --wait SECS, -n): take answers
	 * SECTION_UNAVAILABLE once take_wait ms have passed.  Zero-initialised:
	 * unbounded (the holder's remaining lease, as always). */
	bool take_bounded;
	ri_ms take_wait;
	/* Check 8.1.1 (audit_state): the tree's leaves judged this many at a
	 * time, in the order of their records.  Zero-initialised: the default
	 * (RI_LEAF_BATCH; ri_leaf_batch_init, store_common.h); a test sets a
	 * few, to cross the batches' edges on a journal of a few records. */
	size_t leaf_batch;
};

void ri_record_clear(struct ri_record *r);
void ri_records_clear(struct ri_records *rs);
void ri_open_intents_free(struct ri_open_intent *v, size_t n);
void ri_actors_free(struct ri_actor *v, size_t n);
void ri_strings_free(char **v, size_t n);
/* The journal's shard count: its meta row's, fixed at ri-init and bound
 * by every head's MAC (docs/SHARDS.md) -- never the config's "shards". */
int ri_store_shards(struct ri_store *st);

#endif
