/* startcheck.c -- may this instance start? (startcheck.h)  The five
 * conditions of instance start for every kind (Instance start 1-8,
 * Allowance 11), with their arithmetic, then the capabilities the protocol
 * needs (Capability requirement 11): journal reachable and verifiable, keys
 * present and private, the findings register, each kind's service identity
 * and probe.  ri-startcheck prints what this finds. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "protocol/bindings.h"
#include "util/clock.h"
#include "util/fault.h"
#include "store/findings.h"
#include "protocol/instance.h"
#include "util/integrity.h"
#include "util/nc.h"
#include "protocol/run.h"
#include "protocol/startcheck.h"
#include "store/pg/store_pg.h"
#include "protocol/sweep.h"
#include "store/witness.h"
#include "store/pg/witness_pg.h"

static void
cap(struct ri_startcheck *rep, bool pass, const char *check, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
cap(struct ri_startcheck *rep, bool pass, const char *check, const char *fmt, ...)
{
	char msg[16384], safe[16384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* a journal URI is named without its password (issue 40 point 9) */
	json_array_append_new(rep->caps, json_pack("{s:s, s:b, s:s}", "check", check,
	    "pass", pass, "message", ri_redact(msg, safe, sizeof safe)));
	if (!pass)
		rep->ok = false;
}

/* The very check every writer makes at its start gate (Instance start 3):
 * opened O_NONBLOCK|O_NOFOLLOW, a regular file, 0600 or stricter, owned by
 * the caller -- so a FIFO never blocks this either; a key (key true) may
 * instead be shared with a dedicated group, 0640 (ri_key_open). */
static bool
private_file(const char *path, bool key, char *why, size_t n)
{
	struct stat sb;
	int fd;

	if ((fd = key ? ri_key_open(path, why, n) : ri_secret_open(path, why, n)) < 0)
		return false;
	if (fstat(fd, &sb) == 0)
		snprintf(why, n, "%s: present, mode %03o", path, (unsigned)(sb.st_mode & 0777));
	close(fd);
	return true;
}

/* "private", or the group a key is shared with -- whose every member can
 * write the journal, and forge it (issue 44, point 6) */
static const char *
sharing(const char *path, char *buf, size_t n)
{
	struct stat sb;
	struct group *g;

	if (stat(path, &sb) != 0 || (sb.st_mode & 077) == 0)
		return "private";
	if ((g = getgrgid(sb.st_gid)) != NULL)
		snprintf(buf, n, "shared with group %s (gid %u): each member can write the journal",
		    g->gr_name, (unsigned)sb.st_gid);
	else
		snprintf(buf, n, "shared with gid %u: each member can write the journal", (unsigned)sb.st_gid);
	return buf;
}

static void
check_keys(const struct ri_config *c, struct ri_startcheck *rep)
{
	unsigned char *key, sk[crypto_sign_SECRETKEYBYTES], pk[crypto_sign_PUBLICKEYBYTES];
	unsigned char derived[crypto_sign_PUBLICKEYBYTES];
	char why[1024], pubpath[4096], *text;
	size_t len;
	ri_err err;

	if (ri_key_load(c->integrity_key_file, &key, &len, &err) == RI_OK) {
		cap(rep, true, "integrity-key", "%s: %zu bytes, %s", c->integrity_key_file, len,
		    sharing(c->integrity_key_file, why, sizeof why));
		sodium_free(key);
	} else {
		cap(rep, false, "integrity-key", "%s", err.msg);
	}
	if (!private_file(c->seal_key_file, true, why, sizeof why)) {
		cap(rep, false, "seal-key", "%s", why);
		return;
	}
	snprintf(pubpath, sizeof pubpath, "%s.pub", c->seal_key_file);
	text = ri_slurp(c->seal_key_file, 4096, &len);
	bool sk_ok = text != NULL && sodium_hex2bin(sk, sizeof sk, text, len, "\n", &len, NULL) == 0 &&
	    len == sizeof sk;
	free(text);
	unsigned char inst[RI_INSTANCE_LEN];
	bool has_inst;
	bool pk_read = ri_seal_pub_load(pubpath, pk, inst, &has_inst, &err) == RI_OK;
	bool pk_ok = pk_read && has_inst;
	if (sk_ok)
		crypto_sign_ed25519_sk_to_pk(derived, sk);
	sodium_memzero(sk, sizeof sk);
	if (!sk_ok)
		cap(rep, false, "seal-key", "%s: not an Ed25519 secret key (hex)", c->seal_key_file);
	else if (!pk_read)
		cap(rep, false, "seal-key", "%s", err.msg);
	else if (!pk_ok)
		cap(rep, false, "seal-key", "%s: names no instance", pubpath);
	else if (sodium_memcmp(derived, pk, sizeof pk) != 0)
		cap(rep, false, "seal-key", "%s does not match %s", pubpath, c->seal_key_file);
	else
		cap(rep, true, "seal-key", "%s: %s; %s matches", c->seal_key_file,
		    sharing(c->seal_key_file, why, sizeof why), pubpath);
}

struct state_seen {
	int64_t n;
	char first[512];
};

static void
state_seen(const char *check, int64_t seq, const char *msg, void *arg)
{
	struct state_seen *ss = arg;

	(void)check;
	(void)seq;
	if (ss->n++ == 0)
		snprintf(ss->first, sizeof ss->first, "%s", msg);
}

/* Reachable and verifiable: the authenticated head stands, the newest
 * page of the chain verifies record by record, and so does the state
 * beside the records.  ri-audit walks every record. */
static void
check_journal(struct ri *r, struct ri_startcheck *rep)
{
	struct ri_store *st = r->st;
	struct ri_query q = { .from = 0, .limit = 64, .descending = true };
	struct ri_records rs;
	unsigned char h[32];
	char hex[65];
	int64_t seq;
	int rc;

	/* Capability requirement 11: without the range read, the instance
	 * must not start -- a capability failure */
	if ((rc = st->ops->head(st, &seq, h)) != RI_ST_OK ||
	    (rc = st->ops->range_read(st, &q, &rs)) != RI_ST_OK) {
		if (rc == RI_ST_INTEGRITY)
			rep->integrity_failed = true;
		cap(rep, false, "journal", "%s", st->ops->error(st)->msg);
		return;
	}
	ri_records_clear(&rs);
	/* Binding 2-3: a config that unbinds a kind with an open intent is
	 * refused, with the reason -- read through the index checked whole
	 * against its authenticated accumulator */
	struct ri_open_intent *oi;
	size_t n;
	if ((rc = st->ops->open_intents(st, NULL, NULL, RI_NONE, &oi, &n)) != RI_ST_OK) {
		if (rc == RI_ST_INTEGRITY)
			rep->integrity_failed = true;
		cap(rep, false, "journal", "%s", st->ops->error(st)->msg);
		return;
	} else {
		for (size_t i = 0; i < n; i++) {
			bool seen = false;
			for (size_t j = 0; j < i && !seen; j++)
				seen = strcmp(oi[j].kind, oi[i].kind) == 0;
			if (seen || ri_config_kind(r->cfg, oi[i].kind) != NULL)
				continue;
			size_t count = 0;
			for (size_t j = i; j < n; j++)
				count += strcmp(oi[j].kind, oi[i].kind) == 0;
			/* Binding 2 */
			cap(rep, false, "bindings", "kind %s is not bound but has %zu open intent%s: "
			    "bind it again until they are closed", oi[i].kind, count, count == 1 ? "" : "s");
		}
		ri_open_intents_free(oi, n);
	}
	/* what is not a record, whole: the tree of scope heads against the
	 * records (a head deleted, replayed, or a scope's rows hidden), the
	 * open-intents accumulator, leases, marks, actors (docs/INTEGRITY.md) */
	struct state_seen ss = { 0 };
	(void)st->ops->audit_state(st, state_seen, &ss);
	if (ss.n > 0) {
		rep->integrity_failed = true;
		cap(rep, false, "journal", "journal integrity: %s%s", ss.first,
		    ss.n > 1 ? " (and more: ri-audit names each)" : "");
		return;
	}
	ri_hex(h, sizeof h, hex);
	cap(rep, true, "journal", "%s: reachable; head seq %lld (%.16s...), the newest records and the"
	    " scope heads verify", r->cfg->journal, (long long)seq, hex);
	if (ri_journal_is_pg(r->cfg->journal)) {
		/* issue 13: the server, its version, and whether a commit it
		 * answers is durable -- refused when fsync or synchronous_commit
		 * is off (Instance start: a writer needs a durable journal) */
		json_t *info = NULL;
		bool durable = false;
		if (ri_pg_server_info(st, &info, &durable) != RI_ST_OK) {
			cap(rep, false, "journal-durable", "the server's settings cannot be read");
		} else {
			cap(rep, durable, "journal-durable", "PostgreSQL %s: fsync %s, synchronous_commit %s%s",
			    json_string_value(json_object_get(info, "server_version")),
			    json_string_value(json_object_get(info, "fsync")),
			    json_string_value(json_object_get(info, "synchronous_commit")),
			    durable ? "" : ": a commit is not durable; refused");
			/* issue 40 point 2: retention is decided by ri_clock(),
			 * fixed at ri-init -- in production the server's own */
			bool session = strcmp(json_string_value(json_object_get(info, "clock")), "session") == 0;
			if (!session)
				cap(rep, true, "journal-clock", "ri_clock() is the server's clock: no session can move it");
			else if (r->cfg->clock_env)
				cap(rep, true, "journal-clock", "ri_clock() reads each session's ri.clock (\"clock\": \"env\","
				    " a test seam: see the warning)");
			else
				cap(rep, false, "journal-clock", "ri_clock() reads each session's ri.clock: the instance was"
				    " made under \"clock\": \"env\", so any role that may UPDATE records can set it and purge"
				    " every payload -- make the instance again under \"clock\": \"system\"");
		}
		json_decref(info);
	} else if (access(r->cfg->journal, W_OK) != 0) {
		cap(rep, false, "journal-writable", "%s: %s", r->cfg->journal, strerror(errno));
	}
}

/* The witness: present, its highest line verified (its MAC under the
 * integrity key) and naming this instance; the journal's agreement with it
 * was checked by every read above (a journal behind it fails "journal"). */
static void
check_witness(struct ri *r, struct ri_startcheck *rep)
{
	const struct ri_config *c = r->cfg;
	struct ri_witness *w = NULL;
	struct ri_witness_line l = { 0 };
	unsigned char pk[32] = { 0 }, inst[RI_INSTANCE_LEN];
	char pubpath[4200];
	bool has_inst, has_pk;
	ri_err err;

	if (c->witness == NULL) {
		json_array_append_new(rep->warnings, json_string(
		    "\"witness\": null: no witness outside the journal -- a journal rolled back (a restored copy,"
		    " a deleted WAL) is not detected"));
		return;
	}
	snprintf(pubpath, sizeof pubpath, "%s.pub", c->seal_key_file);
	has_pk = ri_seal_pub_load(pubpath, pk, inst, &has_inst, &err) == RI_OK;
	if (r->st == NULL) {
		/* a witness is missing evidence only beside a journal: before
		 * ri-init made either, it is a file yet to create */
		if (!ri_witness_is_pg(c->witness) && access(c->witness, F_OK) != 0 && access(c->journal, F_OK) != 0)
			cap(rep, false, "witness", "witness %s: not created yet (ri-init creates it with the journal)",
			    c->witness);
		else
			cap(rep, false, "witness", "witness %s: not checked (the journal could not be opened)", c->witness);
		return;
	}
	const unsigned char *instance = r->st->ops->instance_id(r->st);
	if (ri_witness_open(c->witness, instance, r->key, r->keylen, has_pk ? pk : NULL, &w, &err) != RI_OK ||
	    ri_witness_newest(w, &l, &err) != RI_OK) {
		if (err.code == RI_INTEGRITY || err.code == RI_NOT_KNOWN)
			rep->integrity_failed = true;
		cap(rep, false, "witness", "%s", err.msg);
		ri_witness_close(w);
		return;
	}
	if (!l.verified) {
		rep->integrity_failed = true;
		cap(rep, false, "witness", "%s: its highest line (seq %lld) cannot be verified without the integrity"
		    " key", c->witness, (long long)l.seq);
	} else if (has_pk && has_inst && memcmp(inst, instance, RI_INSTANCE_LEN) != 0) {
		rep->integrity_failed = true;
		cap(rep, false, "seal-key", "%s is another instance's public key", pubpath);
	} else {
		cap(rep, true, "witness", "%s: highest line seq %lld (epoch %lld), verified", c->witness,
		    (long long)l.seq, (long long)l.epoch);
	}
	ri_witness_line_clear(&l);
	ri_witness_close(w);
}

/* witness-independent (issue 39): the hosts of a PostgreSQL journal share
 * one witness the journal's role cannot write, or a rollback of the shared
 * journal goes unseen by every host but the one whose local witness
 * happened to be ahead. */
static void
check_witness_independent(const struct ri_config *c, struct ri_startcheck *rep)
{
	char why[1024];
	ri_err err;
	int rc;

	if (!ri_journal_is_pg(c->journal))
		return;
	if (c->witness == NULL) {
		cap(rep, false, "witness-independent", "the journal is shared by hosts but has no witness: a rollback of"
		    " it is not detected -- set \"witness\" to a postgresql:// URI (docs/POSTGRESQL.md)");
		return;
	}
	if (!ri_witness_is_pg(c->witness)) {
		cap(rep, false, "witness-independent", "the witness %s is host-local, but the journal is shared by"
		    " hosts: a rollback of it is seen only by a host whose own witness is ahead -- set \"witness\" to a"
		    " postgresql:// URI every host shares, in a database the journal's role cannot write"
		    " (docs/POSTGRESQL.md)", c->witness);
		return;
	}
	rc = ri_witness_pg_independent(c->witness, c->journal, why, sizeof why, &err);
	if (rc == RI_OK || rc == RI_CHECK_FAILED)
		cap(rep, rc == RI_OK, "witness-independent", "%s", why);
	else
		cap(rep, false, "witness-independent", "not checked: %s", err.msg);
}

/* Bindings are history (issue 41): a binding that changed since the
 * journal recorded it is recorded by the next writer, and judges only what
 * is written from then on.  A shorter retention is said plainly: the
 * records written before keep the period they were written under. */
static void
check_bindings(struct ri *r, struct ri_startcheck *rep)
{
	char msg[512];

	if (r->st == NULL)
		return;
	for (size_t i = 0; i < r->cfg->n_kinds; i++) {
		const struct ri_kind *k = &r->cfg->kinds[i], *b = NULL;
		struct ri_append probe = { 0 };
		if (ri_bindings_at(r, k->name, INT64_MAX, &b) != RI_ST_OK || ri_bindings_due(r, k, &probe) != RI_ST_OK)
			continue;
		json_t *due = probe.bound;
		if (due != NULL && b != NULL && b != k && k->retention_period < b->retention_period) {
			snprintf(msg, sizeof msg, "kinds.%s.retention_period is shorter than the one the journal holds"
			    " (%lld s, now %lld s): it applies to new records only -- those written before keep the"
			    " period they were written under (bindings are history); the next writer records the change",
			    k->name, (long long)(b->retention_period / 1000), (long long)(k->retention_period / 1000));
			json_array_append_new(rep->warnings, json_string(msg));
		} else if (due != NULL && b != NULL && b != k) {
			snprintf(msg, sizeof msg, "the bindings of kind %s changed since the journal recorded them: the"
			    " next writer records the change, and it judges what is written from then on", k->name);
			json_array_append_new(rep->warnings, json_string(msg));
		}
		json_decref(due);
	}
}

/* "shards" is read by ri-init alone (docs/SHARDS.md): once the journal
 * exists its meta row's count is the one every command uses, whatever the
 * config says.  A config that says otherwise changes nothing, so it does
 * not stop the instance -- but it misleads whoever reads it (a count
 * raised for throughput that never took), so it is said. */
static void
check_shards(struct ri *r, struct ri_startcheck *rep)
{
	char msg[512];
	int have;

	if (r->st == NULL || r->cfg->shards == 0)
		return;
	have = ri_store_shards(r->st);
	if (have == r->cfg->shards)
		return;
	snprintf(msg, sizeof msg, "\"shards\": %d in the config, but the journal has %d shard%s, fixed at ri-init:"
	    " every command uses the journal's %d and the config's count changes nothing -- set \"shards\" to %d"
	    " or remove it", r->cfg->shards, have, have == 1 ? "" : "s", have, have);
	json_array_append_new(rep->warnings, json_string(msg));
}

static void
check_identities(struct ri *r, struct ri_startcheck *rep)
{
	const struct ri_config *c = r->cfg;
	struct ri_actor *actors = NULL;
	size_t n = 0;
	char why[1024];

	if (r->st != NULL && r->st->ops->actor_list(r->st, &actors, &n) != RI_ST_OK) {
		if (r->st->ops->error(r->st)->integrity)
			rep->integrity_failed = true;
		cap(rep, false, "actors", "%s", r->st->ops->error(r->st)->msg);
		n = 0;
	}
	for (size_t i = 0; i < c->n_kinds; i++) {
		const struct ri_kind *k = &c->kinds[i];
		char check[128];

		snprintf(check, sizeof check, "kinds.%s.service_identity", k->name);
		if (k->service_actor == NULL) {
			cap(rep, true, check, "none: a report-only kind; the sweep writes nothing for it");
			continue;
		}
		if (!private_file(k->service_credential_file, false, why, sizeof why)) {
			cap(rep, false, check, "%s", why);
			continue;
		}
		if (r->st == NULL)
			continue;
		const struct ri_actor *a = NULL;
		for (size_t j = 0; j < n; j++)
			if (strcmp(actors[j].actor_ref, k->service_actor) == 0)
				a = &actors[j];
		if (a == NULL)
			cap(rep, false, check, "%s is not a registered actor (ri-actor add %s --service)",
			    k->service_actor, k->service_actor);
		else if (!a->service)
			cap(rep, false, check, "%s is registered as a human, not a service", k->service_actor);
		else if (a->revoked_at != RI_NONE)
			cap(rep, false, check, "%s is revoked", k->service_actor);
		else
			cap(rep, true, check, "%s: a registered, active service actor; credential file private",
			    k->service_actor);
	}
	ri_actors_free(actors, n);
}

static bool
executable(const char *prog)
{
	char buf[4096];
	const char *path = getenv("PATH");

	if (strchr(prog, '/') != NULL)
		return access(prog, X_OK) == 0;
	if (path == NULL)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, prog);
		if (access(buf, X_OK) == 0)
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

static void
check_probes(const struct ri_config *c, struct ri_startcheck *rep)
{
	for (size_t i = 0; i < c->n_kinds; i++) {
		char check[128];

		snprintf(check, sizeof check, "kinds.%s.probe", c->kinds[i].name);
		if (executable(c->kinds[i].probe[0]))
			cap(rep, true, check, "%s: executable%s", c->kinds[i].probe[0],
			    c->kinds[i].probe_batch ? " (a batch probe: one process a run)" : "");
		else
			cap(rep, false, check, "%s: not found or not executable", c->kinds[i].probe[0]);
	}
}

struct unverified {
	int64_t n, first_id;
	char first[64];
};

static int
count_unverified(const struct ri_finding_row *f, void *arg)
{
	struct unverified *u = arg;

	/* the keyless exception, read as ri-findings and ri-audit read it
	 * (issue 40 point 7): a start-gate refusal written where the key could
	 * not be read is unverified, not forged -- within its bound */
	if (!f->verified && !f->keyless && u->n++ == 0) {
		u->first_id = f->id;
		snprintf(u->first, sizeof u->first, "%s", f->finding);
	}
	return 0;
}

static void
check_findings(const struct ri_config *c, struct ri_startcheck *rep)
{
	struct ri_findings *f;
	ri_err err;
	char where[4096];

	ri_redact(ri_findings_location(c), where, sizeof where);
	if (ri_findings_open(ri_findings_location(c), true, &f, &err) == RI_OK) {
		struct unverified u = { 0 };
		int rc = ri_findings_each(f, false, NULL, count_unverified, &u, &err);
		int64_t keyless = ri_findings_keyless(f);
		ri_findings_close(f);
		if (rc != RI_OK) {
			cap(rep, false, "findings", "%s", err.msg);
		} else if (u.n > 0 && rep->keyed) {
			char past[256] = "";
			if (keyless > RI_FINDINGS_KEYLESS_MAX)
				snprintf(past, sizeof past, "; its %lld unauthenticated start-refused rows are past the bound"
				    " of %d a key outage leaves, so none is excused", (long long)keyless,
				    RI_FINDINGS_KEYLESS_MAX);
			rep->integrity_failed = true;
			cap(rep, false, "findings", "%s: %lld rows fail their MAC (first: row %lld, %s): forged or"
			    " altered, never evidence%s", where, (long long)u.n, (long long)u.first_id, u.first, past);
		} else {
			cap(rep, true, "findings", "%s: reachable%s", where, rep->keyed ? "; every row verifies" : "");
		}
	} else {
		cap(rep, false, "findings", "%s", err.msg);
	}
}

/* Each node's sweep run lock beside the journal (or, on PostgreSQL, this
 * host's register): each(path, arg) for every one there; the pattern
 * ("DIR/journal.db.sweep-") into base.  -1 with errno when the directory
 * cannot be read. */
static int
each_run_lock(const struct ri_config *c, char *base, size_t bn, void (*each)(const char *, void *), void *arg)
{
	char dir[4200], prefix[4200], path[8500];
	const char *slash;
	struct dirent *d;
	DIR *dp;

	ri_run_lock_path(c, "", base, bn);      /* ".../journal.db.sweep-.lock" */
	base[strlen(base) - strlen(".lock")] = '\0';
	slash = strrchr(base, '/');
	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - base) : 1, slash ? base : ".");
	snprintf(prefix, sizeof prefix, "%s", slash ? slash + 1 : base);
	if ((dp = opendir(slash == base ? "/" : dir)) == NULL)
		return -1;
	while ((d = readdir(dp)) != NULL) {
		size_t nl = strlen(d->d_name), pl = strlen(prefix);
		if (nl <= pl + 5 || strncmp(d->d_name, prefix, pl) != 0 || strcmp(d->d_name + nl - 5, ".lock") != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, d->d_name);
		each(path, arg);
	}
	closedir(dp);
	return 0;
}

struct lock_look {
	const struct ri_config *c;
	struct ri_startcheck *rep;
	ri_ms now;
	size_t seen;
};

static void
look_at_lock(const char *path, void *arg)
{
	struct lock_look *x = arg;
	char why[8700], since[RI_INSTANT_LEN], bound[32];
	struct ri_run_lock l;

	x->seen++;
	ri_format_seconds(x->c->run_bound, bound, sizeof bound);
	if (ri_run_lock_inspect(x->c, path, x->now, &l, why, sizeof why) != 0) {
		cap(x->rep, false, "sweep-run-lock", "%s", why);
	} else if (!l.held) {
		cap(x->rep, true, "sweep-run-lock", "%s: free", path);
	} else if (!l.stale) {
		ri_format_instant(l.started_at, since);
		cap(x->rep, true, "sweep-run-lock", "%s: a run in flight since %s (pid %ld)", path, since, l.pid);
	} else if (l.recorded) {
		ri_format_instant(l.started_at, since);
		cap(x->rep, false, "sweep-run-lock", "%s: held past run_bound (%s s) -- the run recorded in it (pid %ld)"
		    " started at %s: no sweep run can start, so no crashed act is recovered (run bound 1);"
		    " find its holder (fuser %s)", path, bound, l.pid, since, path);
	} else {
		cap(x->rep, false, "sweep-run-lock", "%s: held by a process that recorded no start: no sweep run can"
		    " start, so no crashed act is recovered (run bound 1); find its holder (fuser %s)", path, path);
	}
}

/* run bound 1 (issue 40 point 6): every node's sweep run lock -- one held
 * past run_bound stops every run, and so the recovery of every crashed
 * act. */
static void
check_run_locks(const struct ri_config *c, struct ri_startcheck *rep)
{
	struct lock_look x = { c, rep, 0, 0 };
	char base[4200];
	ri_err e;

	if (ri_now(c, &x.now, &e) != RI_OK) {
		cap(rep, false, "sweep-run-lock", "%s", e.msg);
		return;
	}
	if (each_run_lock(c, base, sizeof base, look_at_lock, &x) != 0)
		cap(rep, false, "sweep-run-lock", "%s: %s", base, strerror(errno));
	else if (x.seen == 0)
		cap(rep, true, "sweep-run-lock", "%s*.lock: none yet (the first sweep run makes it)", base);
}

/*
 * files-private (issue 40 point 8; INTERFACE, third wave): nothing a
 * keyless writer could use is writable by others -- the config, the
 * journal and the register with their sidecars, the witness, the run
 * locks, the keys and the public key, each service credential file, each
 * probe's program, and the directory each is in (a directory others may
 * write lets them put a file of their own in the place of any of these).
 * A directory above those that others may write without the sticky bit
 * lets them rename the whole tree away.  Writable by others means the
 * world's write bit: a group the operator chose (a dedicated "ri" group)
 * is the operator's to grant.
 */
struct private_ctx {
	json_t *seen;                   /* paths looked at already */
	json_t *bad;                    /* "PATH: mode M, writable by others: chmod M' PATH" */
};

static void
private_one(struct private_ctx *x, const char *path, bool strict)
{
	struct stat sb;
	char line[9000];

	if (path == NULL || json_object_get(x->seen, path) != NULL)
		return;
	json_object_set_new(x->seen, path, json_true());
	if (stat(path, &sb) != 0)
		return;                 /* not there: nothing to write through */
	if ((sb.st_mode & S_IWOTH) && (strict || !S_ISDIR(sb.st_mode) || !(sb.st_mode & S_ISVTX))) {
		snprintf(line, sizeof line, "%s: mode %04o, writable by others: chmod %04o %s", path,
		    (unsigned)(sb.st_mode & 07777), (unsigned)(sb.st_mode & 07777 & ~(unsigned)S_IWOTH), path);
		json_array_append_new(x->bad, json_string(line));
	}
}

/* path, and the directories it lies in: the one that holds it, then every
 * one above (where only a non-sticky directory others may write fails) */
static void
private_path(struct private_ctx *x, const char *path)
{
	char *real, *slash;

	if (path == NULL || ri_journal_is_pg(path))
		return;
	private_one(x, path, true);
	if ((real = realpath(path, NULL)) == NULL)
		return;
	for (bool first = true; (slash = strrchr(real, '/')) != NULL; first = false) {
		*slash = '\0';
		const char *dir = *real ? real : "/";
		if (first)
			private_one(x, dir, true);
		else {
			/* above: a sticky directory (/tmp) keeps others from
			 * renaming what is not theirs */
			char key[4300];
			snprintf(key, sizeof key, "%s (above)", dir);
			if (json_object_get(x->seen, key) == NULL) {
				json_object_set_new(x->seen, key, json_true());
				private_one(x, dir, false);
			}
		}
		if (!*real)
			break;
	}
	free(real);
}

static void
private_sidecars(struct private_ctx *x, const char *db)
{
	static const char *const side[] = { "", "-wal", "-shm", "-journal" };
	char p[4300];

	if (db == NULL || ri_journal_is_pg(db))
		return;
	for (size_t i = 0; i < sizeof side / sizeof side[0]; i++) {
		snprintf(p, sizeof p, "%s%s", db, side[i]);
		private_path(x, p);
	}
}

static void
private_lock(const char *path, void *arg)
{
	private_path(arg, path);
}

static void
check_files_private(const struct ri_config *c, struct ri_startcheck *rep)
{
	struct private_ctx x = { json_object(), json_array() };
	char pub[4200], prog[4096], base[4200];

	private_path(&x, c->path);
	private_sidecars(&x, c->journal);
	private_sidecars(&x, ri_findings_location(c));
	private_path(&x, c->witness);
	(void)each_run_lock(c, base, sizeof base, private_lock, &x);
	private_path(&x, c->integrity_key_file);
	private_path(&x, c->seal_key_file);
	snprintf(pub, sizeof pub, "%s.pub", c->seal_key_file);
	private_path(&x, pub);
	for (size_t i = 0; i < c->n_kinds; i++) {
		private_path(&x, c->kinds[i].service_credential_file);
		if (c->kinds[i].probe != NULL && c->kinds[i].probe[0] != NULL &&
		    ri_which(c->kinds[i].probe[0], prog, sizeof prog))
			private_path(&x, prog);
	}
	if (RI_NC(RI_NC_FILES_PRIVATE_UNCHECKED))
		json_array_clear(x.bad);        /* negative control: every mode passes */
	if (json_array_size(x.bad) == 0) {
		cap(rep, true, "files-private", "%zu paths, none writable by others", json_object_size(x.seen));
	} else {
		char msg[16384] = "";
		size_t i, off = 0;
		json_t *v;
		json_array_foreach(x.bad, i, v) {
			int w = snprintf(msg + off, sizeof msg - off, "%s%s", i ? "; " : "", json_string_value(v));
			if (w < 0 || (size_t)w >= sizeof msg - off)
				break;
			off += (size_t)w;
		}
		cap(rep, false, "files-private", "%s -- a keyless writer could use %s", msg,
		    json_array_size(x.bad) == 1 ? "it" : "each");
	}
	json_decref(x.seen);
	json_decref(x.bad);
}

/* Instance start 2-3: every condition, then every capability */
int
ri_startcheck(struct ri *r, const char *config, struct ri_startcheck *rep)
{
	const struct ri_config *c = r->cfg;
	ri_err err = { 0 };

	memset(rep, 0, sizeof *rep);
	rep->ok = true;
	rep->kinds = json_array();
	rep->caps = json_array();
	rep->warnings = json_array();
	/* Instance start 2: every condition, for every bound kind */
	for (size_t i = 0; i < c->n_kinds; i++) {
		struct ri_condition cond[5];
		json_t *arr = json_array();

		ri_conditions(c, &c->kinds[i], cond);
		for (int n = 0; n < 5; n++) {
			json_array_append_new(arr, json_pack("{s:i, s:s, s:s, s:b, s:s}",
			    "number", cond[n].number, "rule", cond[n].rule, "name", cond[n].name,
			    "pass", cond[n].pass, "arithmetic", cond[n].arithmetic));
			if (!cond[n].pass)
				rep->ok = false;
		}
		/* the time ri-run gives a job of this kind (issue 44, point 7):
		 * not a condition, but what a job's author must know */
		char budget[512];
		ri_run_budget_text(c, &c->kinds[i], 1000, budget, sizeof budget);
		json_array_append_new(rep->kinds, json_pack("{s:s, s:o, s:{s:I, s:s}}", "kind", c->kinds[i].name,
		    "conditions", arr, "job_budget", "ms", (json_int_t)ri_run_budget(c, &c->kinds[i], 1000),
		    "arithmetic", budget));
		if (ri_run_budget(c, &c->kinds[i], 1000) <= 0) {
			char w[700];
			snprintf(w, sizeof w, "kind %s leaves a job no time under ri-run: %s -- raise"
			    " kinds.%s.completion_bound (ri-run refuses the kind, 78)", c->kinds[i].name, budget,
			    c->kinds[i].name);
			json_array_append_new(rep->warnings, json_string(w));
		}
	}
	if (c->clock_env)
		json_array_append_new(rep->warnings, json_string(
		    "\"clock\": \"env\": every seam reads $RI_NOW -- a test seam, not for production"));
	if (c->fault_injection)
		json_array_append_new(rep->warnings, json_string(
		    "\"fault_injection\": true: named fault points can kill or fail writes -- not for production"));
	if (c->journal_fence && c->journal_write_bound <= c->clock_offset_allowance)
		json_array_append_new(rep->warnings, json_string(
		    "journal_fence declared with journal_write_bound not above clock_offset_allowance: "
		    "every fenced write is refused"));      /* Allowance 13 */

	check_keys(c, rep);
	if (ri_instance_open(config, RI_READONLY | RI_SCHEMA_FULL, &rep->full, &err) == RI_OK) {
		rep->keyed = rep->full->key != NULL;
		check_journal(rep->full, rep);
	} else {
		if (err.code == RI_INTEGRITY)
			rep->integrity_failed = true;
		cap(rep, false, "journal", "%s", err.msg);
	}
	check_witness(rep->full ? rep->full : r, rep);
	check_witness_independent(c, rep);
	if (rep->full != NULL) {
		check_bindings(rep->full, rep);
		check_shards(rep->full, rep);
	}
	check_findings(c, rep);
	check_run_locks(c, rep);
	check_files_private(c, rep);
	check_identities(rep->full ? rep->full : r, rep);
	check_probes(c, rep);

	return rep->integrity_failed ? RI_INTEGRITY : rep->ok ? RI_OK : RI_CHECK_FAILED;
}

void
ri_startcheck_free(struct ri_startcheck *rep)
{
	json_decref(rep->kinds);
	json_decref(rep->caps);
	json_decref(rep->warnings);
	ri_instance_close(rep->full);
	rep->kinds = rep->caps = rep->warnings = NULL;
	rep->full = NULL;
}
