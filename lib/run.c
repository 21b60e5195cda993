/*
 * run.c -- ri-run: one shell command wrapped as an act.
 *
 *   open -> run CMD (no shell, its own process group) -> partition its end:
 *     exit 0                      committed: Close with its stdout as outcome data
 *     a declared pre-commit exit  Refuse, then exit with CMD's own code (commit 3)
 *     anything else               unknown (commit 6-8): Yield, exit 21
 *
 * CMD is stopped -- TERM to the whole group, KILL after a grace -- when the
 * lease is about to end, leaving Close the time its read and write need,
 * so no process of the job outlives the invocation's standing.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault.h"
#include "gate.h"
#include "proto.h"
#include "run.h"

static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
	interrupted = sig;
}

/*
 * The job inherits no descriptor beyond stdin, stdout and stderr: every
 * other one -- the journal's, a spare end of a pipe, whatever ri-run
 * itself inherited -- is closed before the exec.
 */
static void
close_from(int low)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)low, ~0U, 0) == 0)
		return;
#endif
	long max = sysconf(_SC_OPEN_MAX);

	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = low; fd < max; fd++)
		(void)close(fd);
}

/* The job's environment, built before the vfork: ri-run's own, less the
 * journal credential (the caller's, not the job's) and what ri-run sets,
 * plus what the job is told (ri-run(1)).  *added: the entries from which
 * on this allocated (job_env_free). */
static char **
job_env(const struct ri_run_opts *o, const char *inv, const char *ev, const char *datum,
    const char *deadline, const char *token, size_t *added)
{
	static const char *const drop[] = { "RI_CREDENTIAL=", "RI_CREDENTIAL_FILE=", "RI_OUTCOME_FD=",
		"RI_INVOCATION_ID=", "RI_INTENT_EVENT_ID=", "RI_COMMIT_DEADLINE=", "RI_FENCING_TOKEN=",
		"RI_PAIRING_DATUM=", NULL };
	const char *const set[][2] = { { "RI_INVOCATION_ID", inv }, { "RI_INTENT_EVENT_ID", ev },
		{ "RI_COMMIT_DEADLINE", deadline }, { "RI_FENCING_TOKEN", token },
		{ "RI_PAIRING_DATUM", datum }, { "RI_OUTCOME_FD", o->outcome_stdout ? NULL : "3" } };
	size_t k;
	char **env = ri_env_without(drop, sizeof set / sizeof set[0], &k);

	*added = k;
	for (size_t j = 0; j < sizeof set / sizeof set[0]; j++) {
		if (set[j][1] == NULL)
			continue;
		size_t len = strlen(set[j][0]) + strlen(set[j][1]) + 2;
		env[k] = ri_xmalloc(len);
		snprintf(env[k++], len, "%s=%s", set[j][0], set[j][1]);
	}
	return env;
}

static void
job_env_free(char **env, size_t added)
{
	for (size_t i = added; env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

static void
say(const char *s)
{
	(void)!write(STDERR_FILENO, s, strlen(s));
}

/*
 * The job's first process, a vfork(2) child: it shares ri-run's memory
 * until it executes CMD (ri-run waits suspended meanwhile), so it only
 * makes system calls -- no allocation, no stdio -- and copies none of
 * ri-run's pages (issue 15: a fork copied the page tables of the whole
 * process, ~0.2 ms an act).  It tells the watchdog its process group
 * before it runs anything: nothing of the job runs unwatched.
 */
static _Noreturn void
child(const struct ri_run_opts *o, char **env, const sigset_t *mask, int out_fd, int lifeline, pid_t parent)
{
	char jw[1 + sizeof(int32_t)] = { 'j' };
	int32_t self;

	(void)setpgid(0, 0);
	/* the job dies with ri-run (ri-run(1)): its leader by the kernel's
	 * parent-death signal, its whole group by the watchdog */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);     /* ri-run died before the signal was armed */
	self = (int32_t)getpid();
	memcpy(jw + 1, &self, sizeof self);
	/* one write of 5 bytes, atomic on a pipe; no watchdog, no job */
	if (write(lifeline, jw, sizeof jw) != (ssize_t)sizeof jw)
		_exit(127);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	(void)sigprocmask(SIG_SETMASK, mask, NULL);
	if (o->outcome_stdout) {
		/* --outcome-stdout: stdout is the outcome, as before fd 3 */
		if (dup2(out_fd, STDOUT_FILENO) < 0)
			_exit(127);
		(void)fcntl(STDOUT_FILENO, F_SETFD, 0);
		close_from(STDERR_FILENO + 1);
	} else {
		/* stdout and stderr pass through; the outcome pipe becomes fd 3
		 * -- moved there first, so closing the rest above it keeps it */
		if (out_fd != RI_OUTCOME_FD && dup2(out_fd, RI_OUTCOME_FD) < 0)
			_exit(127);
		(void)fcntl(RI_OUTCOME_FD, F_SETFD, 0);
		close_from(RI_OUTCOME_FD + 1);
	}
	execve(o->path, o->argv, env);
	/* no strerror here: it may translate, and allocate */
	char num[16], *p = num + sizeof num;
	int e = errno;
	*--p = '\0';
	do
		*--p = (char)('0' + e % 10);
	while ((e /= 10) > 0 && p > num);
	say("ri-run: ");
	say(o->argv[0]);
	say(": cannot execute it (errno ");
	say(p);
	say(")\n");
	_exit(127);
}

/* vfork the job's first process (child); its pid, or -1.  A function of
 * its own: nothing of the caller's frame lives across the vfork. */
static __attribute__((noinline)) pid_t
spawn_job(const struct ri_run_opts *o, char **env, int out_fd, int lifeline, pid_t parent)
{
	sigset_t all, mask;
	pid_t pid;

	fflush(NULL);
	/* no handler of ri-run's runs in the child before it executes CMD */
	sigfillset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, &mask);
	/* vfork, deliberately: child() calls only async-signal-safe functions
	 * on its own frame, then execve or _exit -- the analyzer's rule is
	 * stricter than POSIX's (a function call at all) */
	if ((pid = vfork()) == 0)       /* NOLINT(clang-analyzer-security.insecureAPI.vfork) */
		child(o, env, &mask, out_fd, lifeline, parent); /* NOLINT(clang-analyzer-unix.Vfork) */
	(void)sigprocmask(SIG_SETMASK, &mask, NULL);
	return pid;
}

/*
 * The watchdog: a small process of its own group that outlives ri-run by
 * an instant.  It holds the read end of a lifeline whose only write end is
 * ri-run's.  Before the job runs anything, the job's first process writes
 * 'j' and its process group there; once the job has ended and its group
 * is stopped, ri-run writes 'd'.  End of file without 'd' means ri-run
 * died -- by any signal, SIGKILL included -- and the watchdog kills the
 * job's whole process group at once, long before the lease ends, so no
 * process of the job outlives the invocation's standing.  It runs
 * nothing; it is forked before the journal is opened, so it never held a
 * journal descriptor, and while ri-run is small, so the fork copies few
 * page tables and the watchdog shares few of the pages ri-run writes
 * later (issue 15).
 */
static bool
read_full(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n > 0) {
		ssize_t k = read(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p += k;
		n -= (size_t)k;
	}
	return true;
}

static _Noreturn void
watchdog(int lifeline)
{
	int32_t job = 0;
	char c;

	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	/* out of ri-run's group: a terminal's signal to ri-run's group does
	 * not take the watchdog with it */
	(void)setpgid(0, 0);
	if (lifeline != STDIN_FILENO && dup2(lifeline, STDIN_FILENO) < 0)
		_exit(1);
	(void)fcntl(STDIN_FILENO, F_SETFD, 0);
	close_from(STDIN_FILENO + 1);
	while (read_full(STDIN_FILENO, &c, 1)) {
		if (c == 'd')
			_exit(0);
		if (c != 'j' || !read_full(STDIN_FILENO, &job, sizeof job))
			break;
	}
	if (job > 0)
		(void)kill(-job, SIGKILL);
	_exit(0);
}

int
ri_watchdog_start(struct ri_watchdog *w, ri_err *err)
{
	int life[2];

	w->pid = -1;
	w->lifeline = -1;
	/* a watchdog gone answers EPIPE, and never kills ri-run */
	signal(SIGPIPE, SIG_IGN);
	if (pipe(life) != 0)
		return ri_fail(err, RI_INTERNAL, "cannot make the watchdog's lifeline: %s -- nothing was"
		    " opened or written", strerror(errno));
	(void)fcntl(life[1], F_SETFD, FD_CLOEXEC);
	fflush(NULL);
	if ((w->pid = fork()) < 0) {
		int e = errno;
		close(life[0]);
		close(life[1]);
		return ri_fail(err, RI_INTERNAL, "cannot fork the watchdog: %s -- nothing was opened or"
		    " written", strerror(e));
	}
	if (w->pid == 0) {
		close(life[1]);
		watchdog(life[0]);
	}
	close(life[0]);
	w->lifeline = life[1];
	return RI_OK;
}

void
ri_watchdog_end(struct ri_watchdog *w)
{
	if (w->lifeline < 0)
		return;
	if (write(w->lifeline, "d", 1) != 1)
		(void)kill(w->pid, SIGKILL);
	close(w->lifeline);
	w->lifeline = -1;
	while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static int
cloexec_pipe(int fds[2])
{
	if (pipe(fds) != 0)
		return -1;
	(void)fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	(void)fcntl(fds[1], F_SETFD, FD_CLOEXEC);
	return 0;
}

struct outcome {
	int status;             /* waitpid status */
	bool stopped;           /* ri-run stopped it (lease end or interrupt) */
	char *out;
	size_t len;
	bool too_big;
};

/* Run CMD until it ends or the stop instant arrives; capture stdout up to
 * cap bytes and drain the rest. */
/* Run CMD until it ends or the stop instant arrives; capture stdout up to
 * cap bytes and drain the rest. */
static int
run_child(const struct ri_run_opts *o, struct ri_watchdog *w, const char *inv, const char *ev,
    const char *datum, const char *deadline, const char *token, int64_t budget, struct outcome *res)
{
	int fds[2] = { -1, -1 };
	pid_t pid, self = getpid();
	size_t cap = res->len;
	int64_t stop_at = ri_mono_ms() + budget, term_at = 0;
	bool done = false, eof = false, killed = false;
	size_t added;
	char **env;

	res->len = 0;
	res->out = ri_xmalloc(cap + 1);
	if (o->path == NULL || cloexec_pipe(fds) != 0)
		return -1;
	env = job_env(o, inv, ev, datum, deadline, token, &added);
	pid = spawn_job(o, env, fds[1], w->lifeline, self);
	job_env_free(env, added);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return -1;
	}
	(void)fcntl(fds[0], F_SETFL, O_NONBLOCK);
	/* every wait ends on its event -- output, EOF, the job's exit (a
	 * pidfd) -- or on the next instant this loop acts at (the stop
	 * instant, the end of the grace); a nap only where the kernel has no
	 * pidfd (issue 15: a 10 ms nap after every job's EOF) */
	int xfd = ri_exit_fd(pid);
	while (!done || (!eof && !res->stopped)) {
		struct pollfd p[2];
		nfds_t np = 0;
		int ix_out = -1, ix_exit = -1;
		int64_t now = ri_mono_ms(), left = stop_at - now, wait_ms;

		/* at the stop instant (or when ri-run is interrupted): TERM to
		 * the whole group, then KILL after the grace */
		if (!res->stopped && (left <= 0 || interrupted)) {
			res->stopped = true;
			term_at = now;
			(void)kill(-pid, SIGTERM);
		}
		if (res->stopped && !killed && now - term_at >= o->grace_ms) {
			killed = true;
			(void)kill(-pid, SIGKILL);
		}
		if (!res->stopped)
			wait_ms = left;
		else if (!killed)
			wait_ms = term_at + o->grace_ms - now;
		else
			wait_ms = -1;
		if (wait_ms < 0 && !(killed && wait_ms == -1))
			wait_ms = 0;
		if (xfd < 0 && (wait_ms < 0 || wait_ms > 20))
			wait_ms = 20;
		if (!eof) {
			ix_out = (int)np;
			p[np++] = (struct pollfd){ fds[0], POLLIN, 0 };
		}
		if (!done && xfd >= 0) {
			ix_exit = (int)np;
			p[np++] = (struct pollfd){ xfd, POLLIN, 0 };
		}
		if (np > 0 && poll(p, np, wait_ms > INT32_MAX ? INT32_MAX : (int)wait_ms) > 0 && ix_out >= 0 &&
		    (p[ix_out].revents & (POLLIN | POLLHUP | POLLERR))) {
			char buf[8192];
			ssize_t n = read(fds[0], buf, sizeof buf);
			if (n == 0) {
				eof = true;
			} else if (n > 0) {
				size_t take = (size_t)n;
				if (res->len + take > cap) {
					res->too_big = true;
					take = cap - res->len;
				}
				memcpy(res->out + res->len, buf, take);
				res->len += take;
			}
		} else if (np == 0) {
			ri_sleep_ms(wait_ms);   /* no pidfd, output ended: the fallback */
		}
		(void)ix_exit;
		/* only this pid is reaped here, so its status is never lost */
		if (!done && waitpid(pid, &res->status, WNOHANG) == pid)
			done = true;
	}
	if (xfd >= 0)
		close(xfd);
	close(fds[0]);
	res->out[res->len] = '\0';
	/* nothing of the job outlives it: its group is stopped either way;
	 * then the watchdog is told ri-run saw it end, and goes */
	(void)kill(-pid, SIGKILL);
	ri_watchdog_end(w);
	return 0;
}

ri_ms
ri_run_budget(const struct ri_config *c, const struct ri_kind *k, int64_t grace_ms)
{
	return k->completion_bound - c->read_bound - 2 * c->journal_write_bound - c->clock_offset_allowance -
	    grace_ms;
}

void
ri_run_budget_text(const struct ri_config *c, const struct ri_kind *k, int64_t grace_ms, char *buf, size_t n)
{
	char b[6][32];

	ri_format_seconds(ri_run_budget(c, k, grace_ms), b[0], sizeof b[0]);
	ri_format_seconds(k->completion_bound, b[1], sizeof b[1]);
	ri_format_seconds(c->read_bound, b[2], sizeof b[2]);
	ri_format_seconds(c->journal_write_bound, b[3], sizeof b[3]);
	ri_format_seconds(c->clock_offset_allowance, b[4], sizeof b[4]);
	ri_format_seconds(grace_ms, b[5], sizeof b[5]);
	snprintf(buf, n, "%s s (kinds.%s.completion_bound %s s - read_bound %s s - 2\xc3\x97journal_write_bound"
	    " %s s - clock_offset_allowance %s s - grace %s s)", b[0], k->name, b[1], b[2], b[3], b[4], b[5]);
}

int
ri_run_resolve(const char *cmd, char *path, size_t n, ri_err *err)
{
	if (ri_which(cmd, path, n))
		return RI_OK;
	return ri_fail(err, 127, "%s: %s -- nothing was opened or written", cmd,
	    errno == EACCES ? "not executable" : "command not found");
}

static const char *
only_outcome(const struct ri_kind *k, char *buf, size_t n)
{
	return k->n_outcomes == 1 ? ri_action_ref(k, k->outcomes[0], buf, n) : NULL;
}

static char *
mint_datum(struct ri *r, const struct ri_kind *k, ri_err *err)
{
	char id[RI_ID_LEN + 1], t[RI_INSTANT_LEN];
	ri_ms now;

	switch (k->pairing_datum) {
	case RI_PAIR_NONCE:
		ri_mint_id("pd_", id);
		return ri_strdup(id);
	case RI_PAIR_NOW:
		if (ri_now(r->cfg, &now, err) != RI_OK)
			return NULL;
		ri_format_instant(now, t);
		return ri_strdup(t);
	default:
		return NULL;
	}
}

static int
yield_unknown(struct ri *r, json_t *opened, json_t **ans, ri_err *err, const char *why)
{
	/* commit 8: the unknown partition -- Yield, never Close or Refuse;
	 * this process holds the grant its own Open was given */
	ri_yield_held(r, json_string_value(json_object_get(opened, "kind")),
	    json_string_value(json_object_get(opened, "act_key")),
	    json_string_value(json_object_get(opened, "invocation_id")));
	*ans = ri_refusal_rf("outcome");
	return ri_fail(err, RI_RF_OUTCOME, "%s; yielded: the act may exist and its record is the "
	    "sweep's -- never re-run (recording-failure(outcome))", why);
}

int
ri_run(ri *r, const struct ri_run_opts *o, struct ri_watchdog *w, json_t **ans, int *exit_code, ri_err *err)
{
	const struct ri_kind *k = ri_config_kind(r->cfg, o->kind);
	json_t *intent_data = NULL, *req = NULL, *opened = NULL, *data = NULL;
	char ref[160], deadline[RI_INSTANT_LEN], token[32], cred_buf[256], *datum = NULL;
	const char *outcome = o->outcome, *cred;
	struct outcome res = { 0 };
	ri_ms expires, now;
	int rc;

	*ans = NULL;
	*exit_code = -1;
	if (k == NULL) {
		*ans = json_pack("{s:s, s:s}", "refused", "invalid-request", "cause", "unbound-kind");
		return ri_fail(err, RI_INVALID_REQUEST, "kind \"%s\" is not bound", o->kind);
	}
	if (outcome == NULL && (outcome = only_outcome(k, ref, sizeof ref)) == NULL)
		return ri_fail(err, RI_USAGE, "kind %s has several outcomes: --outcome is required", k->name);
	if (!ri_is_outcome_ref(k, outcome))
		return ri_fail(err, RI_USAGE, "--outcome %s is not an outcome of kind %s", outcome, k->name);
	/* a kind whose lease leaves the job no time would stop it at once and
	 * send the act to the sweep: refused before anything is written */
	if (ri_run_budget(r->cfg, k, o->grace_ms) <= 0) {
		char why[512];
		ri_run_budget_text(r->cfg, k, o->grace_ms, why, sizeof why);
		return ri_fail(err, RI_CONFIG, "kind %s leaves its job no time: %s -- raise"
		    " kinds.%s.completion_bound or lower --grace-ms; nothing was opened or written", k->name, why,
		    k->name);
	}
	intent_data = o->intent_data ? json_deep_copy(o->intent_data) : json_object();
	if (json_object_get(intent_data, "pairing_datum") != NULL && k->pairing_datum != RI_PAIR_NONE) {
		json_decref(intent_data);
		return ri_fail(err, RI_USAGE, "--intent-data may not carry pairing_datum: ri-run mints it");
	}
	if (k->pairing_datum != RI_PAIR_NONE) {
		if ((datum = mint_datum(r, k, err)) == NULL) {
			json_decref(intent_data);
			return err->code;
		}
		/* pairing datum 1: the intent data carries it */
		json_object_set_new(intent_data, "pairing_datum", json_string(datum));
	}
	if ((rc = ri_caller_credential(r->cfg, NULL, cred_buf, sizeof cred_buf, &cred, err)) != RI_OK) {
		json_decref(intent_data);
		free(datum);
		return rc;
	}
	req = json_pack("{s:s, s:s, s:s, s:o}", "kind", o->kind, "act_key", o->act_key,
	    "actor_ref", o->actor, "intent_data", intent_data);
	if (cred != NULL)
		json_object_set_new(req, "credential", json_string(cred));
	/* ri-run never runs the command when Open did not succeed */
	if ((rc = ri_open(r, req, &opened, err)) != RI_OK) {
		/* one line on stderr (issue 44, point 4): the mismatch leads it */
		if (json_is_true(json_object_get(opened, "replay_mismatch"))) {
			char was[sizeof err->msg];
			memcpy(was, err->msg, sizeof was);
			snprintf(err->msg, sizeof err->msg, "replay mismatch: the act's recorded intent data"
			    " differ from this run's (%.32s): %.900s", json_string_value(json_object_get(opened,
			    "refused")), was);
		}
		*ans = opened;
		opened = NULL;
		goto out;
	}
	ri_fault("run.after_open");
	ri_parse_instant(json_string_value(json_object_get(opened, "lease_expires_at")), &expires);
	if (ri_now(r->cfg, &now, err) != RI_OK) {
		rc = yield_unknown(r, opened, ans, err, "no clock reading");
		goto out;
	}
	/* stop the job while Close still has its read, its write and the
	 * allowance left (condition 3 charges the same) */
	ri_ms stop = expires - (k->completion_bound - ri_run_budget(r->cfg, k, o->grace_ms));
	if (k->commit_fence && expires - r->cfg->clock_offset_allowance < stop)
		stop = expires - r->cfg->clock_offset_allowance;
	ri_format_instant(stop, deadline);
	snprintf(token, sizeof token, "%lld",
	    (long long)json_integer_value(json_object_get(opened, "fencing_token")));
	res.len = (size_t)k->outcome_envelope;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);
	if (run_child(o, w, json_string_value(json_object_get(opened, "invocation_id")),
	    json_string_value(json_object_get(opened, "intent_event_id")), datum, deadline, token,
	    stop - now, &res) != 0) {
		/* nothing was started: the act did not happen, but the intent
		 * stands; the sweep will find it not-committed */
		rc = yield_unknown(r, opened, ans, err, "could not start the command");
		goto out;
	}
	ri_fault("run.after_act");
	if (res.stopped) {
		char why[640];
		if (interrupted) {
			snprintf(why, sizeof why, "ri-run was interrupted (signal %d) while the command ran",
			    (int)interrupted);
		} else {
			char budget[512];
			ri_run_budget_text(r->cfg, k, o->grace_ms, budget, sizeof budget);
			snprintf(why, sizeof why, "the command outran its budget of %s and was stopped", budget);
		}
		rc = yield_unknown(r, opened, ans, err, why);
		goto out;
	}
	if (WIFSIGNALED(res.status)) {
		char why[64];
		snprintf(why, sizeof why, "the command died by signal %d", WTERMSIG(res.status));
		rc = yield_unknown(r, opened, ans, err, why);
		goto out;
	}
	int code = WEXITSTATUS(res.status);
	for (size_t i = 0; i < o->n_pre_commit; i++) {
		if (code != o->pre_commit[i])
			continue;
		/* commit 2-3: a declared pre-commit arm is refused, and the
		 * caller gets the constituent's own code */
		json_t *rq = json_pack("{s:O, s:O, s:O, s:O, s:O, s:s, s:i}", "kind",
		    json_object_get(opened, "kind"), "act_key", json_object_get(opened, "act_key"),
		    "invocation_id", json_object_get(opened, "invocation_id"), "intent_event_id",
		    json_object_get(opened, "intent_event_id"), "actor_ref", json_object_get(opened, "actor_ref"),
		    "reason", "the command exited with a declared pre-commit code", "constituent_code", code);
		if (cred != NULL)
			json_object_set_new(rq, "credential", json_string(cred));
		rc = ri_refuse(r, rq, ans, err);
		json_decref(rq);
		if (rc == RI_OK) {
			*exit_code = code;
			ri_fail(err, code, "the command exited %d (declared pre-commit): refused", code);
		}
		goto out;
	}
	if (code != 0) {
		char why[64];
		snprintf(why, sizeof why, "the command exited %d, not a declared pre-commit code", code);
		rc = yield_unknown(r, opened, ans, err, why);
		goto out;
	}
	/* exit 0: committed; what it wrote on fd 3 (or stdout, with
	 * --outcome-stdout) is the outcome data -- nothing is {} */
	if (res.too_big) {
		rc = yield_unknown(r, opened, ans, err, o->outcome_stdout ?
		    "the command's output exceeds outcome_envelope" :
		    "the command's outcome (fd 3) exceeds outcome_envelope");
		goto out;
	}
	if (strspn(res.out, " \t\r\n") == res.len) {
		data = json_object();
	} else {
		json_error_t je;
		data = json_loadb(res.out, res.len, JSON_REJECT_DUPLICATES, &je);
		if (data == NULL || !json_is_object(data)) {
			rc = yield_unknown(r, opened, ans, err, o->outcome_stdout ?
			    "the command exited 0 but its output is not one JSON object" :
			    "the command exited 0 but what it wrote on fd 3 is not one JSON object");
			goto out;
		}
	}
	json_t *cq = json_pack("{s:O, s:O, s:O, s:O, s:O, s:s, s:O}", "kind", json_object_get(opened, "kind"),
	    "act_key", json_object_get(opened, "act_key"), "invocation_id",
	    json_object_get(opened, "invocation_id"), "intent_event_id",
	    json_object_get(opened, "intent_event_id"), "actor_ref", json_object_get(opened, "actor_ref"),
	    "outcome_action_ref", outcome, "outcome_data", data);
	if (cred != NULL)
		json_object_set_new(cq, "credential", json_string(cred));
	rc = ri_close(r, cq, ans, err);
	json_decref(cq);
out:
	if (*exit_code < 0)
		*exit_code = rc;
	json_decref(req);
	json_decref(opened);
	json_decref(data);
	free(datum);
	free(res.out);
	return rc;
}
