/*
 * bindings.h -- bindings are history (issue 41, the lifecycle ruling).
 *
 * Whatever a record is judged by -- its kind's service identity, commit
 * fence, repeatable, outcome vocabulary, retention period, completion
 * bound, pairing datum, and the instance's bounds -- is the binding in
 * force when the record was written, never today's config.  A writer
 * records each change of a kind's bindings in the journal, authenticated,
 * the first time it meets it and before its own record of that kind:
 * audit.bound, every kind's in one substrate scope ("audit", "bindings:",
 * a handful of records over an instance's life), payload {kind, bindings,
 * instance}.  A record of kind K at seq S is judged by the newest
 * audit.bound of K below S; one below every audit.bound of K (a journal
 * from before this) by the config, as before.
 *
 * So an auditor needs no copy of today's config (ri-audit --journal), a
 * rotated service identity does not make yesterday's recovered outcomes
 * false, and retention has one reading: a record's retention end is its
 * recorded_at plus the period bound when it was written -- in Open, read,
 * the sweep's edges and the audit alike (journal 8-9: the sweep derives its
 * edge from the bound period, never from the record's own field).
 */
#ifndef RI_BINDINGS_H
#define RI_BINDINGS_H

#include "protocol/handle.h"

/* The binding a kind has under this config, as audit.bound records it. */
json_t *ri_bindings_json(const struct ri_config *c, const struct ri_kind *k);
/* The founding bindings ri-init seals into the genesis seal (seq 1):
 * {"bindings": {kind: the audit.bound payload of the kind}}, so an instance
 * whose bindings never change never writes an audit.bound. */
json_t *ri_bindings_genesis(const struct ri_config *c);

/*
 * A writer about to append a record of kind k: a->bound gets the audit.bound
 * payload its append must carry (store.h ri_append.bound: the change lands
 * in the record's own transaction, just before it, or not at all -- a
 * refusal still writes nothing), or NULL when the kind's newest audit.bound
 * says the same as the config.  Store code (a failed read: nothing of the
 * kind may be written under bindings the journal does not hold).  Once the
 * append landed, ri_bindings_landed(r, bound, record seq) keeps the
 * history in step (the caller still owns bound).
 */
int ri_bindings_due(struct ri *r, const struct ri_kind *k, struct ri_append *a);
void ri_bindings_landed(struct ri *r, json_t *bound, int64_t seq);
/*
 * The append of a record of kind k (NULL: none bound) with its bindings
 * decided as above and judged again by the store in the append's own
 * transaction (ri_append.bindings_guard): a change another writer
 * recorded since this one read the history is read and the decision made
 * anew, so no record lands judged by bindings it was not written under.
 * The store's code; *unread when the bindings could not be read (nothing
 * issued).  a->bound is the helper's own.
 */
int ri_bindings_append(struct ri *r, const struct ri_kind *k, struct ri_append *a, struct ri_appended *ap,
    bool *unread);

/*
 * The binding of kind at seq: the newest audit.bound of the kind below
 * seq, else the config's kind -- NULL when neither knows it (an unbound
 * kind).  Store code.  The kind is the instance's to keep.
 */
/* The range reads the first ri_bindings_due or ri_bindings_at will make (none once loaded),
 * into q: how many -- for the caller to announce them (store.h read_ahead). */
size_t ri_bindings_ahead(struct ri *r, struct ri_query q[2]);
int ri_bindings_at(struct ri *r, const char *kind, int64_t seq, const struct ri_kind **out);

/* A record the caller met in order (ri-audit's traversal): an audit.bound
 * the history had not loaded joins it. */
void ri_bindings_feed(struct ri *r, const struct ri_record *rec);

/* The journal's bound kinds (every kind an audit.bound names), and the
 * instance bounds of the newest audit.bound (NULL: none): what ri-audit
 * --journal judges by without a config.  Store code. */
int ri_bindings_kinds(struct ri *r, char ***kinds, size_t *n);
int ri_bindings_instance(struct ri *r, json_t **instance);

void ri_bindings_free(struct ri *r);

/*
 * ri-audit --journal FILE for an outside auditor, who is handed a journal,
 * a witness and a public key but no config: the config the audit judges
 * by, built from the bindings the journal records (its genesis seal's and
 * its audit.bound records) -- every kind it ever bound, the instance bounds
 * of the newest binding; no key, no probe, no findings register unless
 * given.  RI_CONFIG when the journal records no bindings (it was made
 * before they were recorded: give the config).
 */
int ri_config_from_journal(const char *journal, const char *witness, const char *findings,
    struct ri_config **out, ri_err *err);

#endif
