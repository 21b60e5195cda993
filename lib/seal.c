/* seal.c -- seal the journal's head: verify every record since the
 * previous seal, sign (instance id, seq, head hash) with Ed25519, append
 * audit.sealed, and append the seal to the witness (ri-seal(1), ri(7));
 * back it up (ri-backup(1)); accept a restored copy (ri-init(1)). */
#include <pwd.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "audit.h"
#include "clock.h"
#include "findings.h"
#include "instance.h"
#include "integrity.h"
#include "witness.h"

/* Append the seal record (seq, hash) to the witness, unless the witness's
 * newest line is it already (an idle re-seal). */
static int
witness_seal(ri *r, const struct ri_appended *ap, const unsigned char sk[64], json_t *restore, bool *witnessed,
    ri_err *err)
{
	struct ri_witness_line l, newest;
	ri_err e;

	*witnessed = false;
	if (r->cfg->witness == NULL)
		return RI_OK;
	if (restore == NULL && ri_witness_newest(r->cfg->witness, &newest, &e) == RI_OK && newest.seq == ap->seq &&
	    memcmp(newest.hash, ap->hash, RI_HASH_LEN) == 0) {
		*witnessed = true;
		return RI_OK;
	}
	memset(&l, 0, sizeof l);
	memcpy(l.instance_id, r->st->ops->instance_id(r->st), RI_INSTANCE_LEN);
	l.seq = ap->seq;
	memcpy(l.hash, ap->hash, RI_HASH_LEN);
	ri_witness_sign(&l, sk);
	if (ri_witness_append(r->cfg->witness, &l, restore, err) != RI_OK)
		return err->code;
	*witnessed = true;
	return RI_OK;
}

static int
seal_with(ri *r, json_t *restore, json_t **ans, ri_err *err)
{
	unsigned char sk[crypto_sign_SECRETKEYBYTES];
	struct ri_appended ap;
	bool witnessed = false;
	int rc, st;

	*ans = NULL;
	if ((rc = ri_seal_key_load(r->cfg->seal_key_file, sk, sizeof sk, err)) != RI_OK)
		return rc;
	/* the store verifies every record since the previous seal first: a
	 * tampered head is never sealed (RI_ST_INTEGRITY, nothing appended) */
	st = r->st->ops->seal(r->st, sk, &ap);
	if (st != RI_ST_OK) {
		sodium_memzero(sk, sizeof sk);
		if (st == RI_ST_INTEGRITY)
			*ans = json_pack("{s:s, s:s}", "refused", "journal-unavailable", "cause", "integrity");
		rc = ri_store_code(r, st, err);
		return rc == RI_INTEGRITY ? ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal integrity: not sealed: %s",
		    r->st->ops->error(r->st)->msg) : rc;
	}
	rc = witness_seal(r, &ap, sk, restore, &witnessed, err);
	sodium_memzero(sk, sizeof sk);
	if (rc != RI_OK) {
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "%s", err->msg);
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "sealed at seq %lld, but the witness was not written: %s",
		    (long long)ap.seq, msg);
	}
	char hh[2 * RI_HASH_LEN + 1];
	ri_hex(ap.hash, RI_HASH_LEN, hh);
	*ans = json_pack("{s:s, s:I, s:I, s:s, s:b}", "seal_event_id", ap.event_id, "sealed_seq",
	    (json_int_t)(ap.seq - 1), "seq", (json_int_t)ap.seq, "hash", hh, "witnessed", witnessed);
	return RI_OK;
}

int
ri_seal(ri *r, json_t **ans, ri_err *err)
{
	return seal_with(r, NULL, ans, err);
}

int
ri_seal_surface(ri *r, const char *why)
{
	struct ri_findings *f;
	char run[RI_ID_LEN + 1];
	ri_err e;
	ri_ms now;
	int rc;

	if (ri_now(r->cfg, &now, &e) != RI_OK)
		return e.code;
	ri_mint_id("run_", run);
	if ((rc = ri_findings_open(r->cfg->findings, false, &f, &e)) != RI_OK)
		return rc;
	/* the register copies the detail; it stays ours to free */
	json_t *detail = json_pack("{s:s, s:s}", "why", why, "cause", "integrity");
	if ((rc = ri_findings_run_begin(f, run, now, &e)) == RI_OK)
		rc = ri_findings_instance(f, RI_F_JOURNAL_UNAVAILABLE, NULL, run, now, detail, &e);
	json_decref(detail);
	ri_findings_close(f);
	return rc;
}

int
ri_backup(ri *r, const char *dest, json_t **ans, ri_err *err)
{
	json_t *sealed = NULL;
	int rc, st;

	*ans = NULL;
	/* seal first, so the copy ends with a witnessed seal */
	if ((rc = ri_seal(r, &sealed, err)) != RI_OK) {
		*ans = sealed;
		return rc;
	}
	if ((st = r->st->ops->backup(r->st, dest)) != RI_ST_OK) {
		json_decref(sealed);
		if (st == RI_ST_EXISTS)
			return ri_fail(err, RI_USAGE, "%s", r->st->ops->error(r->st)->msg);
		return ri_store_code(r, st, err);
	}
	*ans = json_pack("{s:s, s:O, s:O, s:O}", "backup", dest, "sealed_seq", json_object_get(sealed, "seq"),
	    "hash", json_object_get(sealed, "hash"), "witnessed", json_object_get(sealed, "witnessed"));
	json_decref(sealed);
	return RI_OK;
}

/* Who runs this: the login name of the effective user. */
static const char *
who(void)
{
	struct passwd *pw = getpwuid(geteuid());

	return pw != NULL && pw->pw_name != NULL ? pw->pw_name : "unknown";
}

struct clean {
	int64_t problems;
	char first[512];
};

static int
count_problem(const struct ri_record *rec, unsigned problems, void *arg)
{
	struct clean *c = arg;

	if (problems != 0) {
		if (c->problems++ == 0)
			snprintf(c->first, sizeof c->first, "record seq %lld (%s) fails verification", (long long)rec->seq,
			    rec->event_id);
	}
	return 0;
}

int
ri_accept_restore(ri *r, const char *why, json_t **ans, ri_err *err)
{
	struct ri_witness_line w;
	struct clean c = { 0 };
	struct ri_appended ap;
	unsigned char head[RI_HASH_LEN], seal_hash[RI_HASH_LEN];
	int64_t seq, seal_seq;
	bool have_w = false, found = false;
	char hh[2 * RI_HASH_LEN + 1], now_text[RI_INSTANT_LEN];
	ri_err e;
	ri_ms now;
	int rc, st;

	*ans = NULL;
	if (why == NULL || *why == '\0' || strlen(why) > 1024)
		return ri_fail(err, RI_USAGE, "--accept-restore needs --why TEXT (1..1024 bytes)");
	if (r->cfg->witness == NULL)
		return ri_fail(err, RI_USAGE, "the witness is disabled (\"witness\": null): there is nothing to accept");
	if ((rc = ri_now(r->cfg, &now, err)) != RI_OK)
		return rc;
	/* the restored journal must verify whole */
	if ((st = r->st->ops->traverse(r->st, count_problem, &c)) != RI_ST_OK)
		return ri_store_code(r, st, err);
	if (c.problems > 0)
		return ri_fail(err, RI_INTEGRITY, "journal integrity: the restored journal does not verify (%lld records;"
		    " first: %s): restore another copy", (long long)c.problems, c.first);
	if ((st = r->st->ops->head(r->st, &seq, head)) != RI_ST_OK ||
	    (st = r->st->ops->sealed(r->st, &seal_seq, seal_hash)) != RI_ST_OK)
		return ri_store_code(r, st, err);
	if (ri_witness_newest(r->cfg->witness, &w, &e) == RI_OK)
		have_w = true;
	else if (e.code != RI_INTEGRITY)
		return ri_fail(err, e.code, "%s", e.msg);
	else if (access(r->cfg->witness, F_OK) != 0 && (rc = ri_witness_create(r->cfg->witness, err)) != RI_OK)
		/* no witness yet (one enabled on an instance that had none): the
		 * accepted head starts it */
		return rc;
	if (have_w && memcmp(w.instance_id, r->st->ops->instance_id(r->st), RI_INSTANCE_LEN) != 0)
		return ri_fail(err, RI_INTEGRITY, "journal integrity: the witness %s is another instance's", r->cfg->witness);
	/* nothing to accept: the journal is not behind its witness */
	if (have_w && seq >= w.seq) {
		struct ri_query q = { .from = w.seq, .limit = 1 };
		struct ri_records rs;
		if (r->st->ops->range_read(r->st, &q, &rs) == RI_ST_OK && rs.n == 1 &&
		    memcmp(rs.v[0].hash, w.hash, RI_HASH_LEN) == 0) {
			ri_records_clear(&rs);
			return ri_fail(err, RI_USAGE, "the journal agrees with its witness (seq %lld): nothing to accept",
			    (long long)w.seq);
		}
		ri_records_clear(&rs);
	}
	/* a past state of this instance's witnessed history: its newest seal
	 * is a line of the witness */
	if (seal_seq == 0)
		return ri_fail(err, RI_INTEGRITY, "journal integrity: the restored journal holds no seal");
	if (ri_witness_find(r->cfg->witness, r->st->ops->instance_id(r->st), seal_seq, seal_hash, &found,
	    &e) != RI_OK && e.code != RI_INTEGRITY)
		return ri_fail(err, e.code, "%s", e.msg);
	if (!found && have_w)
		return ri_fail(err, RI_INTEGRITY, "journal integrity: the restored journal's newest seal (seq %lld) is"
		    " not in the witness: it is not a copy of this instance's history", (long long)seal_seq);
	/* the journal records the rollback itself, then seals it, and the
	 * witness's new line carries who and why */
	ri_format_instant(now, now_text);
	ri_hex(have_w ? w.hash : head, RI_HASH_LEN, hh);
	json_t *data = json_pack("{s:s, s:s, s:I, s:s, s:I}", "by", who(), "why", why, "lost_seq",
	    (json_int_t)(have_w ? w.seq : 0), "lost_hash", have_w ? hh : "", "restored_seq", (json_int_t)seq);
	st = r->st->ops->substrate(r->st, "audit.restored", data, &ap);
	if (st != RI_ST_OK) {
		json_decref(data);
		return ri_store_code(r, st, err);
	}
	json_t *restore = json_pack("{s:s, s:s, s:s, s:O, s:O}", "by", who(), "why", why, "at", now_text,
	    "lost_seq", json_object_get(data, "lost_seq"), "lost_hash", json_object_get(data, "lost_hash"));
	json_decref(data);
	json_t *sealed = NULL;
	rc = seal_with(r, restore, &sealed, err);
	json_decref(restore);
	if (rc != RI_OK) {
		json_decref(sealed);
		return rc;
	}
	*ans = json_pack("{s:b, s:I, s:I, s:s, s:s, s:O}", "accepted_restore", 1, "restored_seq", (json_int_t)seq,
	    "lost_seq", (json_int_t)(have_w ? w.seq : 0), "by", who(), "why", why, "seal", sealed);
	json_decref(sealed);
	return RI_OK;
}
