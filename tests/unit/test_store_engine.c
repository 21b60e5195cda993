/*
 * test_store_engine.c -- what the engine (store_engine.h) guards below
 * every store.h caller, on journals made by the real ri-init: no caller of
 * record_action can name the head its record goes under, so these cases
 * call the engine's append itself, inside a write transaction of the
 * store's own backend.
 *
 * Both backends ($RI_TEST_PG_HOST: PostgreSQL, tests/pg/run).
 */
#include <sodium.h>

#include "testlib.h"
#include "protocol/instance.h"
#include "store/heads.h"
#include "store/store.h"
#include "store/store_common.h"
#include "store/store_engine.h"
#include "util/vocab.h"

#define T0 1767225600000LL              /* 2026-01-01T00:00:00Z */

static int64_t
head(ri *r)
{
	int64_t seq = -1;
	unsigned char h[32];

	CHECK(r->st->ops->head(r->st, &seq, h) == RI_ST_OK, "head: %s", r->st->ops->error(r->st)->msg);
	return seq;
}

/* One intent of act (ledger, act_key) under shard s's head, in a write
 * transaction of every head (a cut's, store_engine.h ri_eng_write_all),
 * committed when it landed; the engine's answer. */
static int
append_under(ri *r, int s, const char *act_key, const char *inv, struct ri_appended *out)
{
	struct ri_st_core *c = RI_ENG_CORE(r->st);
	struct ri_eng_heads hs;
	json_t *data = json_pack("{s:{s:s}}", "data", "nonce", inv);
	struct ri_append a = { .action_ref = "ledger.intended", .act_key = act_key, .invocation_id = inv,
		.actor_ref = "alice", .data = data };
	ri_ms now;
	int rc;

	CHECK(ri_eng_write_all(c, &hs, &now) == RI_ST_OK, "every head locked: %s", c->err.msg);
	rc = ri_eng_append_locked(c, &hs.jh[s], hs.lh[s], &a, RI_ROLE_INTENT, false, now, out);
	if (rc == RI_ST_OK) {
		CHECK(c->be->commit(c->bk) == RI_ST_OK, "commit: %s", c->err.msg);
		ri_st_witness_flush(c);
	} else {
		c->be->rollback(c->bk);
		ri_st_witness_discard(c);
	}
	ri_eng_heads_free(&hs);
	json_decref(data);
	return rc;
}

/* docs/SHARDS.md: a record lands in its act's shard, under that shard's
 * head -- never another's, whose tree would not prove the act's absence
 * and whose chain a reader of the act never walks. */
static void
shard_guard(void)
{
	struct tl_instance ti;
	struct tl_cfg cfg = { .shards = 4 };
	struct ri_appended out;
	struct ri_record rec;
	ri_err err = { 0 };
	ri *r = NULL;
	int rc;

	tl_now(T0);
	tl_instance(&ti, "shard-guard", &cfg);
	CHECK(ri_instance_open(ti.config, 0, &r, &err) == RI_OK, "open: %s", err.msg);
	struct ri_st_core *c = RI_ENG_CORE(r->st);
	CHECK(c->shards == 4 && ri_store_shards(r->st) == 4, "the journal has 4 shards, not %d", c->shards);
	/* an act of a shard other than 0, so neither head is shard 0's by default */
	char key[16] = "";
	int own = 0;
	for (int i = 0; own == 0 && i < 64; i++) {
		snprintf(key, sizeof key, "k%d", i);
		own = ri_eng_shard(c, "ledger", key);
	}
	CHECK(own != 0, "an act outside shard 0 among 64 keys");
	int64_t h = head(r);

	for (int s = 0; s < 4; s++) {
		if (s == own)
			continue;
		rc = append_under(r, s, key, "inv_wrong", &out);
		char want[96];
		tl_fmt(want, sizeof want, "a record of shard %d under shard %d's head", own, s);
		CHECK(rc == RI_ST_INVALID_REQUEST && strstr(c->err.msg, want) != NULL,
		    "under shard %d's head: %d %s", s, rc, c->err.msg);
		ri_st_err_clear(&c->err);
		CHECK(head(r) == h, "nothing landed under shard %d's head", s);
	}
	rc = append_under(r, own, key, "inv_own", &out);
	CHECK(rc == RI_ST_OK, "under its own shard's head: %d %s", rc, c->err.msg);
	CHECK(head(r) == h + 1 && out.seq == h + 1, "seq %lld after head %lld", (long long)out.seq, (long long)h);
	CHECK(r->st->ops->read_record(r->st, out.event_id, &rec) == RI_ST_OK && rec.shard == own,
	    "read back in shard %d: %s", own, c->err.msg);
	ri_record_clear(&rec);
	ri_instance_close(r);
	PASS("the append's shard guard: a record under another shard's head is refused (invalid-request, both"
	    " shards named) and nothing lands; under its act's own it lands there");
}

int
main(void)
{
	tl_init();
	CHECK(sodium_init() >= 0, "sodium_init");
	unsetenv("RI_FAULT");
	shard_guard();
	printf("test_store_engine: all passed\n");
	return 0;
}
