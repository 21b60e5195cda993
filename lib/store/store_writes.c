/*
 * store_writes.c -- the engine's write path of an act: the append
 * (record_action, the substrate's records) and the critical-section
 * host's lease (take, remaining, release), each under its act's shard's
 * head (the lock order: the head, then the lease row).  Split from
 * store_engine.c when it passed 1,500 lines (issue 43 review); the
 * helpers both files use are declared in store_engine.h.
 */
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "util/integrity.h"
#include "util/nc.h"
#include "util/util.h"
#include "store/store_engine.h"

/* ---- the append ---------------------------------------------------------------- */

/* The open-intents index moves in the append's transaction, and its count
 * and accumulator in the journal head with it (heads.h). */
int
ri_eng_open_add(struct ri_st_core *c, struct ri_jhead *jh, const char *inv, int64_t seq, const char *kind,
    const char *act_key, const char *event_id, ri_ms recorded_at, bool first)
{
	unsigned char elem[RI_HASH_LEN];
	bool added = false;
	int rc = c->be->open_insert(c->bk, inv, seq, kind, act_key, event_id, recorded_at, first, &added);

	if (rc == RI_ST_OK && added) {
		ri_open_elem(inv, seq, kind, act_key, event_id, recorded_at, elem);
		ri_acc_xor(jh->open_acc, elem);
		jh->open_count++;
	}
	return rc;
}

/*
 * Append one record inside an open write transaction, under the journal
 * head jh the caller verified (and locked) in it (lh: the hash at
 * jh->last_seq).  The substrate stamps recorded_at (never earlier than the
 * record before it), mints the event and attestation ids, places retention
 * by the kind's fixed policy (journal 6), chains and MACs the record, moves
 * the heads of its act and invocation in the tree and the journal head
 * (one MAC over all of it).  A failure leaves the transaction to be rolled
 * back.
 */
int
ri_eng_append_locked(struct ri_st_core *c, struct ri_jhead *jh, const unsigned char lh[RI_HASH_LEN],
    const struct ri_append *a, int role, bool unplaced, ri_ms now, struct ri_appended *out)
{
	char kind[128], attestation[RI_ID_LEN + 1], *payload;
	struct scope act, inv;
	int64_t act_last = 0, inv_last = 0;
	unsigned char salt[RI_SALT_LEN], digest[RI_HASH_LEN], hash[RI_HASH_LEN], mac[RI_HASH_LEN];
	struct ri_header h;
	ri_ms recorded_at = now, retention;
	int rc;
	const char *act_key = a->act_key ? a->act_key : "";

	/* inside the critical section on both backends (SQLite's BEGIN
	 * IMMEDIATE, PostgreSQL's head row locked by write_head's round trip),
	 * held until COMMIT: a delay here stands for round trips under the
	 * lock (issue 43's measured ceiling, bench/09-pg-ceiling.sh); a die,
	 * for a host lost while holding it */
	ri_fault("append.section");
	if (ri_kind_of(a->action_ref, kind, sizeof kind) != 0)
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL, "malformed action ref");
	scope_make(&act, SCOPE_ACT, kind, act_key);
	if (a->invocation_id != NULL) {
		scope_make(&inv, SCOPE_INV, a->invocation_id, NULL);
		if (c->be->scopes_hint != NULL &&
		    (rc = c->be->scopes_hint(c->bk, act.key, kind, act_key, inv.key, a->invocation_id)) != RI_ST_OK)
			return rc;
	}
	/* a record lands in its act's shard, under that shard's head: never
	 * another's, whose tree would not prove its absence (docs/SHARDS.md) */
	if (ri_eng_shard(c, kind, act_key) != jh->shard)
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL, "a record of shard %d under shard %d's head",
		    ri_eng_shard(c, kind, act_key), jh->shard);
	if ((rc = ri_eng_scope_head(c, jh, &act, kind, act_key, &act_last)) != RI_ST_OK)
		return rc;
	if (a->invocation_id != NULL) {
		if ((rc = ri_eng_scope_head(c, jh, &inv, a->invocation_id, NULL, &inv_last)) != RI_ST_OK)
			return rc;
	}
	/* the seq: the shard's next with one shard; with more, the journal's
	 * allocator's, above every shard's (docs/SHARDS.md, one allocator) */
	int64_t seq = jh->last_seq + 1;
	ri_ms at = RI_NONE;
	if (c->shards > 1 && (rc = c->be->seq_next(c->bk, jh->shard, &seq, &at)) != RI_ST_OK)
		return rc;
	/* an allocator behind the shard's head (a sequence put back by a
	 * partial restore) would break the chain's seq order: refused, never
	 * written (step 2) */
	if (seq <= jh->last_seq)
		return ri_st_fail(c, RI_ST_STEP2, jh->last_seq, NULL, "the journal's sequence gave seq %lld, not above"
		    " shard %d's head (seq %lld): the allocator was put back (restore it above every record)",
		    (long long)seq, jh->shard, (long long)jh->last_seq);
	if (at != RI_NONE && at > recorded_at)
		recorded_at = at;
	if (seq > 1) {
		/* recorded_at never goes backwards, whatever the clock did: after
		 * the journal's record before this one, whichever shard's */
		ri_ms last_at;
		if ((rc = c->be->recorded_at_of(c->bk, seq - 1, &last_at)) != RI_ST_OK)
			return rc;
		if (last_at != RI_NONE && last_at > recorded_at)
			recorded_at = last_at;
	}
	if (strcmp(kind, "audit") == 0) {
		retention = INT64_MAX;          /* the substrate's own records are kept */
	} else {
		const struct ri_kind *k = ri_config_kind(c->cfg, kind);
		retention = k == NULL || unplaced ? RI_NONE : recorded_at + k->retention_period;
	}
	if (a->event_id != NULL)
		snprintf(out->event_id, sizeof out->event_id, "%s", a->event_id);
	else
		ri_mint_id("evt_", out->event_id);
	ri_mint_id("att_", attestation);
	payload = ri_json_canonical(a->data);
	randombytes_buf(salt, sizeof salt);
	ri_payload_digest(salt, payload, strlen(payload), digest);
	h = (struct ri_header){
		.instance_id = c->instance_id, .seq = seq, .event_id = out->event_id,
		.action_ref = a->action_ref, .kind = kind, .act_key = act_key,
		.invocation_id = a->invocation_id, .actor_ref = a->actor_ref,
		.attestation_id = attestation, .recorded_at = recorded_at,
		.retention_until = retention, .role = role, .act_prev = act_last,
		.inv_prev = a->invocation_id ? inv_last : 0, .payload_digest = digest, .shard = jh->shard,
	};
	/* the key never leaves the host: hash and MAC are computed here */
	ri_record_hash(lh, &h, hash);
	ri_mac(c->key, c->keylen, hash, RI_HASH_LEN, mac);
	rc = c->be->record_insert(c->bk, &h, payload, salt, hash, mac);
	free(payload);
	if (rc != RI_ST_OK)
		return rc;
	/* the heads of its scopes, then the journal's: one MAC binds them all */
	if ((rc = ri_eng_tree_put(c, jh, act.key, h.seq, hash)) != RI_ST_OK ||
	    (a->invocation_id && (rc = ri_eng_tree_put(c, jh, inv.key, h.seq, hash)) != RI_ST_OK))
		return rc == RI_ST_UNAVAILABLE ? ri_st_recode(c, RI_ST_STEP2) : rc;
	/* the derived index of open intents moves in the same transaction */
	if (role == RI_ROLE_INTENT && a->invocation_id != NULL)
		rc = ri_eng_open_add(c, jh, a->invocation_id, h.seq, kind, act_key, h.event_id, recorded_at, inv_last == 0);
	else if (ri_role_closing(role) && a->invocation_id != NULL)
		rc = c->be->open_remove(c->bk, jh, a->invocation_id);
	if (rc != RI_ST_OK)
		return rc == RI_ST_UNAVAILABLE ? ri_st_recode(c, RI_ST_STEP2) : rc;
	jh->last_seq = h.seq;
	if (strcmp(a->action_ref, "audit.sealed") == 0)
		jh->sealed_seq = h.seq;
	/* an accepted restore (ri-init --accept-restore) is a rollback: the
	 * fencing tokens granted in the lost stretch are unknown, so the grant
	 * counter jumps to the restore's instant in ms -- above every token
	 * granted before, short of more than one grant per ms on average */
	if (strcmp(a->action_ref, "audit.restored") == 0 && jh->grants < recorded_at)
		jh->grants = recorded_at;
	if ((rc = c->be->jhead_put(c->bk, jh, hash)) != RI_ST_OK)
		return rc == RI_ST_UNAVAILABLE ? ri_st_recode(c, RI_ST_STEP2) : rc;
	out->seq = h.seq;
	out->recorded_at = recorded_at;
	memcpy(out->hash, hash, RI_HASH_LEN);
	/* its witness line, added once the transaction commits (issue 39) */
	ri_st_witness_pend(c, &h, hash, a->data);
	return RI_ST_OK;
}

/* A substrate record (audit.*: actor "audit", no credential) inside the
 * caller's write transaction, under its head jh -- moved in this
 * transaction by what the caller did before (a purge's open_remove):
 * the append writes it through.  act_key: "" (the substrate's own act),
 * or the actor ref of a registry record (the actor's scope). */
int
ri_eng_append_substrate(struct ri_st_core *c, struct ri_jhead *jh, const unsigned char lh[RI_HASH_LEN],
    const char *action_ref, const char *act_key, json_t *data, ri_ms now, struct ri_appended *out)
{
	struct ri_append a = { .action_ref = action_ref, .act_key = act_key, .actor_ref = RI_SUBSTRATE_ACTOR,
		.data = data };

	return ri_eng_append_locked(c, jh, lh, &a, RI_ROLE_OTHER, false, now, out);
}

/*
 * record_action(action_ref, actor_ref, credential, data) -> event id, or
 * invalid-credential | invalid-request(cause) | recording-failure(step-2 |
 * step-3 | step-4) | a lost reply | fenced.  The fault points
 * "<tag>.before" and "<tag>.after" reach the arms nothing else reaches.
 * Step 2 is any failure before COMMIT (nothing landed).
 */
int
ri_eng_record_action(struct ri_store *st, const struct ri_append *a, struct ri_appended *out)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	const struct ri_config *cfg = c->cfg;
	char kind[128];
	enum ri_fault_action fa = RI_FA_NONE;
	struct ri_jhead jh;
	unsigned char lh[RI_HASH_LEN];
	ri_ms now;
	int rc, role;

	memset(out, 0, sizeof *out);
	ri_st_err_clear(&c->err);
	if ((rc = ri_append_request_judge(c, a, kind, sizeof kind, &role, out)) != RI_ST_OK ||
	    (rc = ri_append_fault_before(c, a, &fa)) != RI_ST_OK)
		return rc;
	if (c->be->append_ahead != NULL)
		c->be->append_ahead(c->bk, a, kind);
	/* the journal head, verified inside the write transaction: nothing is
	 * appended to a journal that fails verification */
	int64_t mono = ri_mono_ms();
	int shard = ri_eng_shard(c, kind, a->act_key ? a->act_key : "");
	/* with shards, a change of the kind's bindings (audit.bound) is the
	 * instance's, shard 0's: both heads, shard 0's first (the lock order:
	 * ascending, docs/SHARDS.md) */
	struct ri_jhead j0;
	unsigned char lh0[RI_HASH_LEN];
	bool both = shard != RI_SHARD_INSTANCE && a->bound != NULL;
	if ((rc = both ? ri_eng_write_head(c, RI_SHARD_INSTANCE, &j0, lh0, &now) :
	    ri_eng_write_head(c, shard, &jh, lh, &now)) != RI_ST_OK)
		return rc == RI_ST_UNAVAILABLE || rc == RI_ST_READONLY ? ri_st_recode(c, RI_ST_STEP2) : rc;
	if (both && (rc = c->be->head_also(c->bk, shard, &jh, lh)) != RI_ST_OK)
		goto fail;
	/* Check 8.1.6 judges the actor at the record's recorded_at, which never
	 * goes backwards (ri_eng_append_locked): the credential is judged at
	 * that instant too, or a host whose clock lags the revocation lands a
	 * revoked actor's record after it (issue 41, lifecycle: actors
	 * revoked) */
	/* the registry the credential is judged against is shard 0's: its
	 * head read first, so the stamp's floor holds it (shard_stamps) */
	struct ri_jhead jreg;
	unsigned char lreg[RI_HASH_LEN];
	const struct ri_jhead *reg = &jh;
	if (c->shards > 1 && jh.shard != RI_SHARD_INSTANCE) {
		if (both)
			reg = &j0;
		else if ((rc = c->be->jhead_get(c->bk, RI_SHARD_INSTANCE, &jreg, lreg)) != RI_ST_OK)
			goto fail;
		else
			reg = &jreg;
	}
	ri_ms at = now;         /* negative control: the host's clock */
	/* the record this one will follow: its shard's newest with one shard
	 * (or with shard_stamps); with more, the journal's, whichever shard's
	 * (as append_locked stamps it) */
	int64_t before = jh.last_seq;
	if (c->shards > 1 && !c->be->shard_stamps && !RI_NC(RI_NC_CRED_AT_NOW)) {
		struct scope all;
		unsigned char bh[RI_HASH_LEN];
		enum ri_hashed hashed;
		scope_make(&all, SCOPE_ALL, NULL, NULL);
		if ((rc = c->be->scope_newest(c->bk, &all, NULL, NULL, &before, bh, &hashed)) != RI_ST_OK)
			goto fail;
	}
	/* (with shard_stamps the floor is every head the write read -- the
	 * registry's too -- even when its own shard has no record yet) */
	if (!RI_NC(RI_NC_CRED_AT_NOW) && (before > 0 || c->be->shard_stamps)) {
		ri_ms last_at;
		if ((rc = c->be->recorded_at_of(c->bk, before, &last_at)) != RI_ST_OK)
			goto fail;
		if (last_at != RI_NONE && last_at > at)
			at = last_at;
	}
	if ((rc = ri_eng_check_credential(c, reg, a->actor_ref, a->credential, at, NULL)) != RI_ST_OK)
		goto fail;
	/* negative control: the fence is never checked */
	if (!RI_NC(RI_NC_NO_JOURNAL_FENCE) && a->fence != NULL && cfg->journal_fence &&
	    (rc = ri_eng_check_fence(c, kind, a->act_key ? a->act_key : "", a->fence, now)) != RI_ST_OK)
		goto fail;
	if (a->bindings_guard && c->be->bindings_guard != NULL) {
		if ((rc = c->be->bindings_guard(c->bk, a)) != RI_ST_OK)
			goto fail;
	} else if (a->bindings_guard) {
		/* bindings are history (issue 41): another writer may have
		 * recorded the kind's bindings since this one decided what its
		 * record needs -- judged under the head lock, so the decision and
		 * the record are one */
		struct scope bsc;
		int64_t blast = 0;
		scope_make(&bsc, SCOPE_ACT, "audit", "bindings:");
		/* the bindings scope is shard 0's; a writer of another shard
		 * reads its head in the write transaction (one writer on
		 * SQLite: exact) */
		if (shard != RI_SHARD_INSTANCE && !both &&
		    (rc = c->be->jhead_get(c->bk, RI_SHARD_INSTANCE, &j0, lh0)) != RI_ST_OK)
			goto fail;
		if ((rc = ri_eng_scope_head(c, shard != RI_SHARD_INSTANCE ? &j0 : &jh, &bsc, "audit", "bindings:",
		    &blast)) != RI_ST_OK || (rc = ri_append_bindings_judge(c, a, blast)) != RI_ST_OK)
			goto fail;
	}
	if (a->bound != NULL) {
		/* the kind's bindings changed: recorded in the same transaction,
		 * just before the first record they judge (bindings.h) */
		struct ri_appended bout;
		if ((rc = ri_eng_append_substrate(c, both ? &j0 : &jh, both ? lh0 : lh, "audit.bound", "bindings:", a->bound,
		    now, &bout)) != RI_ST_OK)
			goto fail;
		memcpy(both ? lh0 : lh, bout.hash, RI_HASH_LEN);
	}
	if ((rc = ri_eng_append_locked(c, &jh, lh, a, role, fa == RI_FA_NORETENTION, now, out)) != RI_ST_OK)
		goto fail;
	c->seen.mono = mono;
	if ((rc = c->be->append_commit != NULL ? c->be->append_commit(c->bk, a, out) : c->be->commit(c->bk)) != RI_ST_OK) {
		c->seen.valid = false;
		return rc;
	}
	c->seen.landed = c->seen.valid;
	return ri_append_landed(c, a, fa, kind, out);
fail:
	c->seen.valid = false;
	c->be->rollback(c->bk);
	if (rc == RI_ST_UNAVAILABLE)
		rc = RI_ST_STEP2;
	return rc;
}

int
ri_eng_substrate(struct ri_store *st, const char *action_ref, json_t *data, struct ri_appended *out)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_jhead jh;
	unsigned char lh[RI_HASH_LEN];
	ri_ms now;
	int rc;

	memset(out, 0, sizeof *out);
	if (strncmp(action_ref, "audit.", 6) != 0)
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL, "a substrate record is audit.*");
	if ((rc = ri_eng_write_head(c, RI_SHARD_INSTANCE, &jh, lh, &now)) != RI_ST_OK)
		return rc;
	if ((rc = ri_eng_append_substrate(c, &jh, lh, action_ref, "", data, now, out)) != RI_ST_OK) {
		c->be->rollback(c->bk);
		return rc;
	}
	return c->be->commit(c->bk);
}

/* The substrate's own records, n of them, in one transaction (store.h
 * ri_eng_append_substrate: a restore's, the sweep's audit.reconciled). */
/* The shard of the head an append is made under: its act's. */
static int
append_shard(const struct ri_st_core *c, const struct ri_append *a)
{
	char kind[128];

	if (ri_kind_of(a->action_ref, kind, sizeof kind) != 0)
		return RI_SHARD_INSTANCE;       /* refused by the append itself */
	return ri_eng_shard(c, kind, a->act_key != NULL ? a->act_key : "");
}

int
ri_eng_append_many(struct ri_store *st, const struct ri_append *v, size_t n, struct ri_appended *out)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_eng_heads hs;
	ri_ms now;
	int rc, role;

	if (c->key == NULL)
		return ri_st_fail(c, RI_ST_INVALID_REQUEST, 0, NULL, "appending needs the integrity key");
	/* one transaction: with shards a cut across them, each record under
	 * its own act's shard's head (a restore's records name many acts) */
	if ((rc = ri_eng_write_all(c, &hs, &now)) != RI_ST_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		int s = append_shard(c, &v[i]);
		memset(&out[i], 0, sizeof out[i]);
		if ((rc = ri_substrate_role(c, &v[i], &role)) != RI_ST_OK ||
		    (rc = ri_eng_append_locked(c, &hs.jh[s], hs.lh[s], &v[i], role, false, now, &out[i])) != RI_ST_OK) {
			c->be->rollback(c->bk);
			ri_eng_heads_free(&hs);
			return rc;
		}
		memcpy(hs.lh[s], out[i].hash, RI_HASH_LEN);
		/* an accepted restore moves every shard's grant counter past the
		 * tokens of the lost stretch, as append_locked moves its own */
		for (int k = 1; k < c->shards && strcmp(v[i].action_ref, "audit.restored") == 0; k++) {
			if (hs.jh[k].grants >= out[i].recorded_at)
				continue;
			hs.jh[k].grants = out[i].recorded_at;
			if ((rc = c->be->jhead_put(c->bk, &hs.jh[k], hs.lh[k])) != RI_ST_OK) {
				c->be->rollback(c->bk);
				ri_eng_heads_free(&hs);
				return rc;
			}
		}
	}
	ri_eng_heads_free(&hs);
	return c->be->commit(c->bk);
}

/* ---- the critical-section host (Lease) ---------------------------------------- */

/*
 * After a wake: still held by another, and unexpired?  Read in a plain
 * read transaction, so a waiter woken by others' commits re-checks without
 * taking the writers' queue; *left is then the holder's remaining lease.
 * false also when the read fails: the write path reads it again, and says
 * why.
 */
static bool
held_elsewhere(struct ri_st_core *c, const char *kind, const char *act_key, const char *holder, ri_ms *left)
{
	struct ri_lease_row l;
	bool began, exists, held = false;
	ri_ms now;

	if (c->be->wake_recheck == NULL || !c->be->wake_recheck(c->bk))
		return false;
	if (c->be->read_begin(c->bk, &began) != RI_ST_OK)
		return false;
	if (c->be->clock_now(c->bk, &now) == RI_ST_OK &&
	    ri_eng_lease_get(c, kind, act_key, false, &l, &exists) == RI_ST_OK &&
	    !ri_lease_free(exists ? &l : NULL, holder, now)) {
		held = true;
		*left = l.expires - now;
	}
	c->be->read_end(c->bk, began);
	return held;
}

static bool
wait_change(void *arg, int64_t ms)
{
	const struct ri_st_core *c = arg;

	return c->be->wait_change(c->bk, ms);
}

/*
 * The prologue of a lease write, take's and release's alike: a write
 * transaction holding the journal head (the lock order: the head row, then
 * the lease row) and the lease row read under its lock, each verified.  A
 * failure leaves no transaction open and answers integrity as itself,
 * anything else as the section's unavailability.
 */
static int
lease_locked(struct ri_st_core *c, const char *kind, const char *act_key, struct ri_jhead *jh,
    unsigned char lh[RI_HASH_LEN], ri_ms *now, struct ri_lease_row *l, bool *exists)
{
	int rc;

	/* defined on every path, a row absent too (clang's analyzer) */
	*exists = false;
	memset(l, 0, sizeof *l);
	if (c->be->lease_ahead != NULL)
		c->be->lease_ahead(c->bk, kind, act_key);
	/* the act's shard's head: its grant counter mints the act's tokens,
	 * which so only ever grow per act (docs/SHARDS.md, fencing tokens) */
	if ((rc = ri_eng_write_head(c, ri_eng_shard(c, kind, act_key), jh, lh, now)) != RI_ST_OK)
		return rc == RI_ST_INTEGRITY ? rc : ri_st_recode(c, RI_ST_UNAVAILABLE);
	if ((rc = ri_eng_lease_get(c, kind, act_key, true, l, exists)) != RI_ST_OK) {
		c->be->rollback(c->bk);
		return rc == RI_ST_INTEGRITY ? rc : ri_st_recode(c, RI_ST_UNAVAILABLE);
	}
	return RI_ST_OK;
}

/*
 * take((kind, act_key), holder, duration): granted when the section is
 * free, expired, or already this holder's (act section 14: re-entry by the
 * holder alone); otherwise wait -- never longer than the holder's
 * remaining lease as first observed (open step 2.2, reconcile step 2.2) --
 * and answer section-unavailable.  There is no try_take (act section 7).
 * Expiry is minted here; a holder's death frees nothing.  Every grant
 * mints a fencing token that only ever increases for its key: the row is
 * never deleted, so a token is never reused across crashes or restarts.
 * Lock order: the head row, then the lease row.
 */
static int
take_loop(struct ri_st_core *c, const struct ri_store *st, const char *kind, const char *act_key,
    const char *holder, ri_ms duration, struct ri_grant *g)
{
	struct ri_take_wait w = { .change = c->be->wait_change != NULL ? wait_change : NULL, .arg = c };
	int rc;

	for (;;) {
		struct ri_jhead jh;
		struct ri_lease_row l;
		unsigned char lh[RI_HASH_LEN];
		ri_ms now;
		bool exists;

		/* the journal head (whose grant counter mints the token) and the
		 * lease row, each verified: a forged or replayed row never grants */
		if ((rc = lease_locked(c, kind, act_key, &jh, lh, &now, &l, &exists)) != RI_ST_OK)
			return rc;
		if (ri_lease_free(exists ? &l : NULL, holder, now)) {
			/* the fencing token: the instance's grant counter, under the
			 * journal head's MAC -- it only ever increases, for every key,
			 * even should a lease row be deleted */
			jh.grants++;
			if (ri_eng_lease_put(c, kind, act_key, holder, now + duration, jh.grants) != RI_ST_OK ||
			    c->be->jhead_put(c->bk, &jh, lh) != RI_ST_OK) {
				c->be->rollback(c->bk);
				return ri_st_recode(c, RI_ST_UNAVAILABLE);
			}
			if (c->be->commit(c->bk) != RI_ST_OK)
				return ri_st_recode(c, RI_ST_UNAVAILABLE);
			g->expires_at = now + duration;
			g->token = jh.grants;
			ri_fault("lease.after_take");
			return RI_ST_OK;
		}
		c->be->rollback(c->bk);
		/* act section 11, open step 2.2: wait until the section may be
		 * free, then take it under the write lock */
		ri_ms left = l.expires - now;
		do {
			/* the look after the wait reads past it (issue 43) */
			if (c->be->settle != NULL)
				c->be->settle(c->bk);
			if ((rc = ri_take_wait(c, st, &w, kind, act_key, left)) != RI_ST_OK)
				return rc;
		} while (held_elsewhere(c, kind, act_key, holder, &left));
	}
}

int
ri_eng_take(struct ri_store *st, const char *kind, const char *act_key, const char *holder, ri_ms duration,
    struct ri_grant *g)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	int rc;

	if (c->be->lease_sync != NULL)
		c->be->lease_sync(c->bk, false);
	rc = take_loop(c, st, kind, act_key, holder, duration, g);
	if (c->be->lease_sync != NULL)
		c->be->lease_sync(c->bk, true);
	return rc;
}

/*
 * open step 5.3 right after the append that wrote the intent (issue 43:
 * no read of its own): the act's lease row as that append's fence check
 * read and verified it, under the head's lock, in the transaction that
 * committed.  No writer changes a lease row without that lock (the lock
 * order), and nothing of this handle has written since (ri_eng_write_head),
 * so the row stands as at the commit; the clock is the one the check
 * judged on, moved on by the host's monotonic time since before it was
 * read -- never behind the instance clock, so what is left is never
 * overstated (as snap_clock, query_pg.c).  Under the env clock seam the
 * instant is the process's, which stands still.  Used once.
 */
static bool
lease_landed(struct ri_st_core *c, const char *kind, const char *act_key, const char *holder, ri_ms *left)
{
	unsigned char scope[RI_SCOPE_LEN];
	struct ri_lease_seen *w = &c->seen;
	ri_ms now;

	if (!w->valid || !w->landed)
		return false;
	w->valid = false;
	ri_scope_act(kind, act_key, scope);
	if (memcmp(scope, w->scope, sizeof scope) != 0)
		return false;
	now = c->cfg->clock_env ? w->now : w->now + (ri_ms)(ri_mono_ms() - w->mono);
	*left = w->exists && w->l.held && strcmp(w->l.holder, holder) == 0 && w->l.expires > now ?
	    w->l.expires - now : RI_NONE;
	return true;
}

int
ri_eng_remaining(struct ri_store *st, const char *kind, const char *act_key, const char *holder, ri_ms *left)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	struct ri_lease_row l;
	bool exists, began;
	ri_ms now;
	int rc;

	*left = RI_NONE;
	if (lease_landed(c, kind, act_key, holder, left))
		return RI_ST_OK;
	if ((rc = c->be->read_begin(c->bk, &began)) != RI_ST_OK)
		return rc;
	if ((rc = c->be->clock_now(c->bk, &now)) == RI_ST_OK &&
	    (rc = ri_eng_lease_get(c, kind, act_key, false, &l, &exists)) == RI_ST_OK &&
	    exists && l.held && strcmp(l.holder, holder) == 0 && l.expires > now)
		*left = l.expires - now;
	c->be->read_end(c->bk, began);
	return rc;
}

/*
 * The release in one round trip where the backend offers it (issue 43):
 * the act's lease row as this handle's last append read and verified it,
 * under the head's lock, in the transaction that committed (c->seen, as
 * lease_landed), held by this holder -- freed only if it stands exactly
 * so still (holder, expiry, token, MAC: the row this holder's take wrote),
 * so a row another holder has taken since (a new token under a new MAC) is
 * never freed.  A row that stands so is this holder's, and release_locked
 * would free it the same.  *done false: not offered, or nothing matched --
 * release_locked decides, as ever.
 */
static int
release_seen(struct ri_st_core *c, const char *kind, const char *act_key, const char *holder, bool *done)
{
	const struct ri_lease_seen *w = &c->seen;
	unsigned char scope[RI_SCOPE_LEN], mac[RI_HASH_LEN];

	*done = false;
	if (c->be->lease_free_if == NULL || !w->valid || !w->landed || !w->exists || !w->l.held ||
	    strcmp(w->l.holder, holder) != 0)
		return RI_ST_OK;
	ri_scope_act(kind, act_key, scope);
	if (memcmp(scope, w->scope, sizeof scope) != 0)
		return RI_ST_OK;
	c->seen.valid = false;
	ri_lease_mac(c->key, c->keylen, c->instance_id, kind, act_key, NULL, 0, w->l.token, mac);
	return c->be->lease_free_if(c->bk, kind, act_key, &w->l, mac, done);
}

static int
release_locked(struct ri_st_core *c, const char *kind, const char *act_key, const char *holder)
{
	struct ri_jhead jh;
	struct ri_lease_row l;
	unsigned char lh[RI_HASH_LEN];
	bool exists, held;
	ri_ms now;
	int rc;

	if (release_seen(c, kind, act_key, holder, &held) != RI_ST_OK)
		return ri_st_recode(c, RI_ST_UNAVAILABLE);
	if (held)
		return RI_ST_OK;
	/* the head first, as every writer (the lock order), though a release
	 * does not move it */
	if ((rc = lease_locked(c, kind, act_key, &jh, lh, &now, &l, &exists)) != RI_ST_OK)
		return rc;
	held = exists && l.held && strcmp(l.holder, holder) == 0;
	if (held && (rc = ri_eng_lease_put(c, kind, act_key, NULL, 0, l.token)) != RI_ST_OK) {
		c->be->rollback(c->bk);
		return rc;
	}
	if (c->be->commit(c->bk) != RI_ST_OK)
		return ri_st_recode(c, RI_ST_UNAVAILABLE);
	return held ? RI_ST_OK : ri_st_fail(c, RI_ST_NOT_HELD, 0, NULL, "not held by %s", holder);
}

int
ri_eng_release(struct ri_store *st, const char *kind, const char *act_key, const char *holder)
{
	struct ri_st_core *c = RI_ENG_CORE(st);
	int rc;

	if (c->be->lease_sync != NULL)
		c->be->lease_sync(c->bk, false);
	rc = release_locked(c, kind, act_key, holder);
	if (c->be->lease_sync != NULL)
		c->be->lease_sync(c->bk, true);
	return rc;
}
