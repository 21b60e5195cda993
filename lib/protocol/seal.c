/* seal.c -- seal the journal's head: verify every record since the
 * previous seal, sign (instance id, seq, head hash) with Ed25519, append
 * audit.sealed, and append the seal to the witness (ri-seal(1), ri(7));
 * back it up (ri-backup(1)).  A restored copy is restore.c's. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>

#include "protocol/seal.h"
#include "protocol/bindings.h"
#include "util/clock.h"
#include "store/findings.h"
#include "protocol/instance.h"
#include "util/integrity.h"
#include "protocol/proto.h"
#include "store/witness.h"

#define PUBLISH_WAIT_MS 5000

/*
 * witness_publish (issue 39): hand the seal's witness line, as written, to
 * the operator's command on its stdin (logger -t ri-seal: syslog and
 * journald forwarding carry heads off the machine; ri-audit --expect-head
 * takes the line back as printed).  No shell; its stdout goes to our
 * stderr (ours is the answer's); bounded by PUBLISH_WAIT_MS.  NULL, or why
 * it failed.
 */
static const char *
publish(char *const *argv, const char *line, char *why, size_t n)
{
	int fds[2], status;
	pid_t pid;

	if (pipe(fds) != 0)
		return snprintf(why, n, "pipe: %s", strerror(errno)), why;
	if ((pid = fork()) < 0) {
		close(fds[0]);
		close(fds[1]);
		return snprintf(why, n, "fork: %s", strerror(errno)), why;
	}
	if (pid == 0) {
		dup2(fds[0], STDIN_FILENO);
		dup2(STDERR_FILENO, STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[0]);
	signal(SIGPIPE, SIG_IGN);
	size_t len = strlen(line);
	bool wrote = write(fds[1], line, len) == (ssize_t)len && write(fds[1], "\n", 1) == 1;
	close(fds[1]);
	for (int waited = 0;; waited += 10) {
		pid_t got = waitpid(pid, &status, WNOHANG);
		if (got == pid)
			break;
		if (got < 0 && errno != EINTR)
			return snprintf(why, n, "waitpid: %s", strerror(errno)), why;
		if (waited >= PUBLISH_WAIT_MS) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return snprintf(why, n, "%s did not finish within %d ms", argv[0], PUBLISH_WAIT_MS), why;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000000L }, NULL);
	}
	if (!wrote || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return snprintf(why, n, "%s %s (status %d)", argv[0], !wrote ? "did not read the line" : "failed",
		    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)), why;
	return NULL;
}

/* The seal's own witness line, as written, to witness_publish. */
static void
publish_seal(ri *r, const struct ri_appended *ap, json_t *ans)
{
	struct ri_witness *w = NULL;
	struct ri_witness_line l = { 0 };
	char why[512];
	const char *bad = NULL;
	ri_err e;

	if (r->cfg->witness_publish == NULL || r->cfg->witness == NULL)
		return;
	if (ri_witness_open(r->cfg->witness, r->st->ops->instance_id(r->st), r->key, r->keylen, NULL, &w, &e) != RI_OK ||
	    ri_witness_newest(w, &l, &e) != RI_OK)
		bad = e.msg;
	else if (l.seq != ap->seq || !l.has_sig)
		bad = "the seal's line is not the witness's highest";
	else
		bad = publish(r->cfg->witness_publish, l.text, why, sizeof why);
	if (bad != NULL)
		ri_alert(ans, "witness_publish: the seal at seq %lld was not published: %s", (long long)ap->seq, bad);
	else
		json_object_set_new(ans, "published", json_true());
	ri_witness_line_clear(&l);
	ri_witness_close(w);
}

static int
seal_with(ri *r, json_t *extra, json_t **ans, ri_err *err)
{
	unsigned char sk[crypto_sign_SECRETKEYBYTES];
	struct ri_appended ap;
	int rc, st;

	*ans = NULL;
	if ((rc = ri_seal_key_load(r->cfg->seal_key_file, sk, sizeof sk, err)) != RI_OK)
		return rc;
	/* the store verifies every record since the previous seal first: a
	 * tampered head is never sealed (RI_ST_INTEGRITY, nothing appended);
	 * the seal record's witness line, signed, is added at its commit */
	st = r->st->ops->seal(r->st, sk, extra, &ap);
	sodium_memzero(sk, sizeof sk);
	if (st != RI_ST_OK) {
		if (st == RI_ST_INTEGRITY)
			*ans = ri_refusal_unavailable(true);
		rc = ri_store_code(r, st, err);
		return rc == RI_INTEGRITY ? ri_fail(err, RI_JOURNAL_UNAVAILABLE, "journal integrity: not sealed: %s",
		    r->st->ops->error(r->st)->msg) : rc;
	}
	const struct ri_store_error *se = r->st->ops->error(r->st);
	if (r->cfg->witness != NULL && se->witness_missed && se->witness_missed_seq == ap.seq)
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "sealed at seq %lld, but the witness was not written: %s",
		    (long long)ap.seq, se->witness_msg);
	char hh[2 * RI_HASH_LEN + 1];
	ri_hex(ap.hash, RI_HASH_LEN, hh);
	*ans = json_pack("{s:s, s:I, s:I, s:s, s:b}", "seal_event_id", ap.event_id, "sealed_seq",
	    (json_int_t)(ap.seq - 1), "seq", (json_int_t)ap.seq, "hash", hh, "witnessed", r->cfg->witness != NULL);
	/* a new seal (not an idle one that answered the last) leaves the host */
	if (ap.recorded_at != 0)
		publish_seal(r, &ap, *ans);
	return RI_OK;
}

int
ri_seal(ri *r, json_t **ans, ri_err *err)
{
	return seal_with(r, NULL, ans, err);
}

int
ri_seal_genesis(ri *r, json_t **ans, ri_err *err)
{
	json_t *b = ri_bindings_genesis(r->cfg);
	int rc = seal_with(r, b, ans, err);

	json_decref(b);
	return rc;
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
	if ((rc = ri_findings_open(ri_findings_location(r->cfg), false, &f, &e)) != RI_OK)
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
	/* what was copied, recorded (issue 39): the journal (and its witness)
	 * say which head the copy holds, so a restore of it is recognised and
	 * what it lost named from the lines after it */
	struct ri_appended ap;
	json_t *data = json_pack("{s:s, s:O, s:O}", "to", dest, "seq", json_object_get(sealed, "seq"), "hash",
	    json_object_get(sealed, "hash"));
	if (r->st->ops->substrate(r->st, "audit.backed_up", data, &ap) == RI_ST_OK)
		json_object_set_new(*ans, "recorded_seq", json_integer(ap.seq));
	else
		ri_alert(*ans, "the copy is whole, but it was not recorded in the journal: %s",
		    r->st->ops->error(r->st)->msg);
	json_decref(data);
	json_decref(sealed);
	return RI_OK;
}
