/* config.h -- the instance config, ri.json (ri.json(5)); and the five
 * conditions of instance start (Instance start 1-8, Allowance 11). */
#ifndef RI_CONFIG_H
#define RI_CONFIG_H

#include "util/util.h"

enum ri_pairing { RI_PAIR_NONCE, RI_PAIR_NOW, RI_PAIR_NONE };

struct ri_kind {
	char *name;
	char **outcomes;                /* bare names: "disclosed" */
	size_t n_outcomes;
	bool repeatable;
	ri_ms completion_bound;
	ri_ms commit_round_trip;
	ri_ms probe_round_trip;
	ri_ms retention_period;
	bool commit_fence;              /* commit_fence: "declared" */
	enum ri_pairing pairing_datum;
	int64_t outcome_envelope;       /* bytes */
	int64_t retry_counted;          /* 0: terminus is the lease; n: counted(n) */
	char **probe;                   /* argv, NULL-terminated; argv[0] resolved */
	size_t n_probe;
	bool probe_batch;               /* one probe process answers the run's acts, a line each */
	char *service_actor;            /* NULL: service identity none */
	char *service_credential_file;  /* resolved path */
};

struct ri_config {
	char *path;                     /* the file it came from */
	char *dir;                      /* its directory: relative paths resolve here */
	char *journal;
	char *findings;
	char *integrity_key_file;
	char *seal_key_file;
	char *witness;                  /* the witness file, or a postgresql:// URI; NULL:
	                                 * disabled ("witness": null) */
	char **witness_publish;         /* argv (NULL-terminated) fed each seal's line; NULL: none */
	size_t n_witness_publish;
	bool clock_env;                 /* "clock": "env" -- a test seam */
	bool fault_injection;           /* named fault points armed -- a test seam */
	ri_ms clock_offset_allowance;
	ri_ms reconciliation_cadence;
	ri_ms run_bound;
	ri_ms closure_latency;
	ri_ms journal_write_bound;
	ri_ms read_bound;
	ri_ms compensation_window;
	int64_t intent_candidates_cap;
	int64_t read_cap;
	int64_t reference_length_cap;
	int64_t payload_cap;
	bool journal_fence;             /* journal_fence: "declared" */
	int shards;                     /* "shards" (INTERFACE, third wave): the count
	                                 * ri-init gives a new journal, 1..256; 0: not
	                                 * given (the backend's default) */
	struct ri_kind *kinds;
	size_t n_kinds;
};

/* Load and validate.  Every error names its JSON path:
 *   kinds.ledger.completion_bound: expected a duration like "30s"
 * and returns RI_CONFIG.  Unknown keys are refused. */
int ri_config_load(const char *path, struct ri_config **out, ri_err *err);
int ri_config_from_json(json_t *root, const char *path, struct ri_config **out, ri_err *err);
void ri_config_free(struct ri_config *c);
const struct ri_kind *ri_config_kind(const struct ri_config *c, const char *name);
/* Free what a kind holds (not the struct itself). */
void ri_kind_free(struct ri_kind *k);
/* The config file to use: -c FILE, else $RI_CONFIG, else ./ri.json. */
const char *ri_config_path(const char *flag);

/* Terms of the protocol, computed once from the config. */
ri_ms ri_sweep_lease(const struct ri_config *c);            /* closure_latency + jwb */
/* The backend, as the journal's location names it: the one place that
 * decides.  A new backend is a value here, its prefix in
 * ri_journal_backend, its answer in ri_backend_shared, and its open in
 * instance.c's table. */
enum ri_backend_id {
	RI_BACKEND_SQLITE,      /* a path: one host's SQLite file (store_sqlite.c) */
	RI_BACKEND_PG,          /* a postgresql:// URI: the multi-node backend (store_pg.c, issue 13) */
	RI_BACKEND_COUNT
};
enum ri_backend_id ri_journal_backend(const char *journal);
/* A database several hosts share rather than a file of this host: the
 * findings register is a table in it (issue 41 point 5, findings.c), and
 * a host's run lock sits beside its own findings path (sweep.c). */
bool ri_backend_shared(enum ri_backend_id b);
bool ri_journal_is_pg(const char *journal);                /* RI_BACKEND_PG */
ri_ms ri_longest_lease(const struct ri_config *c);          /* the longest grant + allowance */
ri_ms ri_settle_bound(const struct ri_config *c);           /* jwb + allowance */
ri_ms ri_at_risk_threshold(const struct ri_config *c);
ri_ms ri_longest_retention(const struct ri_config *c);

/* The five conditions of instance start, for one kind. */
struct ri_condition {
	int number;                     /* 1..5 */
	const char *rule;               /* "Instance start 4" */
	const char *name;               /* "worst closure < compensation window" */
	bool pass;
	ri_ms lhs, rhs;                 /* the two sides compared */
	char arithmetic[256];           /* "30 + 2×2 + 2×60 + 3×135 = 559 s < 600 s" */
};
void ri_conditions(const struct ri_config *c, const struct ri_kind *k,
    struct ri_condition out[5]);
/* 0 when every condition holds for every kind; else RI_CONFIG with err
 * naming the first failed condition and kind (Instance start 3). */
int ri_conditions_hold(const struct ri_config *c, ri_err *err);

#endif
