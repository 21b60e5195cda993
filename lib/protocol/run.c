/*
 * run.c -- ri-run: one shell command wrapped as an act.
 *
 *   open -> run CMD (no shell, its own process group, started by the
 *   watchdog) -> partition its end:
 *     exit 0                      committed: Close with what it wrote on
 *                                 descriptor 3 as outcome data
 *     a declared pre-commit exit  Refuse, then exit with CMD's own code (commit 3)
 *     anything else               unknown (commit 6-8): Yield, exit 21
 *
 * CMD is stopped -- TERM to the whole group, KILL after a grace -- at the
 * end of its budget (ri_run_budget), leaving Close the time its read and
 * write need; the watchdog then kills whatever of it is left, wherever it
 * went, so no process of the job outlives the invocation's standing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/fault.h"
#include "protocol/gate.h"
#include "protocol/proto.h"
#include "protocol/run.h"

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

/*
 * The watchdog: the job's parent, and a child subreaper.
 *
 * A small process forked before the journal is opened -- it never holds a
 * journal descriptor, and the fork copies few page tables (issue 15) --
 * in a process group of its own (a terminal's signal to ri-run's group
 * does not take it along; it ignores SIGINT, SIGTERM, SIGHUP, SIGQUIT).
 * It is a child subreaper (prctl(2) PR_SET_CHILD_SUBREAPER): every
 * process of the job whose parent dies becomes its child, not init's --
 * one that left the job's process group and session (setsid(2), a
 * daemon's double fork) among them -- so it can find them all.
 *
 * It talks with ri-run over a socket whose only other end is ri-run's.
 * ri-run asks it to start the job ('r': path, arguments, environment, and
 * the job's descriptors passed with SCM_RIGHTS); it answers the job's pid
 * and whether it could be executed ('s'), and the job's wait status when
 * it ends ('x').  When ri-run says it is done ('d'), or dies -- end of
 * file on the socket, by any signal, SIGKILL included -- the watchdog
 * kills the job's process group, then every process left under it, until
 * it has no child, and exits.  So nothing of the job, wherever it went,
 * outlives the job, nor ri-run: issue 40, point 10.
 */
struct wd_req {                 /* 'r', the fixed part */
	uint8_t fds;            /* bit t: target descriptor t (0-3) is passed */
	uint32_t argc, envc, len;       /* len: the strings' bytes that follow */
};

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

static bool
write_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p += k;
		n -= (size_t)k;
	}
	return true;
}

/* the errno of a failed execve, set by the vfork child in the memory it
 * shares with the watchdog (0: the job runs) */
static volatile int exec_errno;

/*
 * The job's first process, a vfork(2) child of the watchdog: until it
 * executes the command it makes system calls only -- no allocation, no
 * stdio.  It dies with the watchdog (the kernel's parent-death signal,
 * armed first), takes a process group of its own, puts the descriptors
 * ri-run passed at 0 to 3, and closes every other one.
 */
static _Noreturn void
job(const char *path, char *const argv[], char *const env[], const int src_in[4], const sigset_t *mask,
    pid_t parent)
{
	int src[4], top = src_in[3] >= 0 ? 4 : 3;

	(void)setpgid(0, 0);
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);     /* the watchdog died before the signal was armed */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	/* every source above 3 first, so no dup2 below closes a source not
	 * yet placed */
	for (int t = 0; t < 4; t++) {
		src[t] = src_in[t];
		if (src[t] >= 0 && src[t] < 4 && (src[t] = fcntl(src[t], F_DUPFD, 4)) < 0)
			_exit(127);
	}
	for (int t = 0; t < top; t++) {
		if (src[t] < 0)
			(void)close(t);         /* ri-run had none there either */
		else if (dup2(src[t], t) < 0)
			_exit(127);
	}
	close_from(top);
	(void)sigprocmask(SIG_SETMASK, mask, NULL);
	execve(path, argv, env);
	exec_errno = errno;
	_exit(127);
}

/* vfork the job (job above); its pid, or -1.  A function of its own:
 * nothing of the caller's frame lives across the vfork. */
static __attribute__((noinline)) pid_t
spawn_job(const char *path, char *const argv[], char *const env[], const int src[4], const sigset_t *mask)
{
	pid_t self = getpid(), pid;

	exec_errno = 0;
	/* vfork, deliberately: job() calls only async-signal-safe functions
	 * on its own frame, then execve or _exit -- the analyzer's rule is
	 * stricter than POSIX's (a function call at all) */
	if ((pid = vfork()) == 0)       /* NOLINT(clang-analyzer-security.insecureAPI.vfork) */
		job(path, argv, env, src, mask, self); /* NOLINT(clang-analyzer-unix.Vfork) */
	return pid;
}

/* The watchdog's children now, by /proc (each process's parent is field
 * 4 of its stat line): SIGKILL to each, and to its group when it leads
 * one.  Their own children then become the watchdog's, for the next
 * round. */
static void
kill_children(void)
{
	char path[64], line[512];
	pid_t self = getpid();
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char *end, *rp;
		long pid = strtol(de->d_name, &end, 10), ppid;
		int fd;
		ssize_t n;

		if (*end != '\0' || pid <= 0)
			continue;
		snprintf(path, sizeof path, "/proc/%ld/stat", pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, line, sizeof line - 1);
		close(fd);
		if (n <= 0)
			continue;
		line[n] = '\0';
		/* "pid (comm) state ppid ...": comm may hold anything, so from
		 * its last ')' */
		if ((rp = strrchr(line, ')')) == NULL || sscanf(rp + 1, " %*c %ld", &ppid) != 1 || ppid != self)
			continue;
		if (getpgid((pid_t)pid) == (pid_t)pid)
			(void)kill((pid_t)-pid, SIGKILL);
		(void)kill((pid_t)pid, SIGKILL);
	}
	closedir(d);
}

/* Kill the job's group, then everything left under the watchdog, until
 * no child is left (or, for a process the kernel will not let die, ~10 s;
 * whatever is left then goes to init) */
static void
kill_all(pid_t jobpid, int sfd)
{
	if (jobpid > 0)
		(void)kill(-jobpid, SIGKILL);
	for (int round = 0; round < 200; round++) {
		pid_t pid;
		int st;
		while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
			;
		if (pid < 0)
			return;         /* ECHILD: nothing is left */
		kill_children();
		struct pollfd p = { sfd, POLLIN, 0 };
		if (sfd < 0 || poll(&p, 1, 50) <= 0)
			continue;
		struct signalfd_siginfo si;
		while (read(sfd, &si, sizeof si) > 0)
			;
	}
}

/* Receive the 'r' request's fixed part, its descriptors and its strings,
 * and start the job; answer 's', its pid and exec errno.  The tag was read
 * with the descriptors (wd_recv). */
static pid_t
wd_start(int life, const int rfd[4], int nrfd, const sigset_t *mask)
{
	struct wd_req q;
	char *buf = NULL, *p, **argv = NULL, **env = NULL;
	int src[4] = { -1, -1, -1, -1 }, k = 0;
	pid_t pid = -1;
	int32_t reply[2] = { -1, ENOEXEC };

	if (!read_full(life, &q, sizeof q) || q.argc == 0 || q.argc > (1u << 20) || q.envc > (1u << 20) ||
	    q.len > (64u << 20))
		goto out;
	buf = ri_xmalloc((size_t)q.len + 1);
	argv = ri_xcalloc((size_t)q.argc + 1, sizeof *argv);
	env = ri_xcalloc((size_t)q.envc + 1, sizeof *env);
	if (!read_full(life, buf, q.len))
		goto out;
	buf[q.len] = '\0';
	/* path, then argc arguments, then envc entries, each NUL-ended */
	p = buf;
	const char *path = p;
	p += strlen(p) + 1;
	for (uint32_t i = 0; i < q.argc + q.envc; i++) {
		if (p >= buf + q.len)
			goto out;
		if (i < q.argc)
			argv[i] = p;
		else
			env[i - q.argc] = p;
		p += strlen(p) + 1;
	}
	for (int t = 0; t < 4; t++)
		if (q.fds & (1u << t))
			src[t] = k < nrfd ? rfd[k++] : -1;
	if (k != nrfd)
		goto out;
	if ((pid = spawn_job(path, argv, env, src, mask)) > 0) {
		reply[0] = (int32_t)pid;
		reply[1] = exec_errno;
	} else {
		reply[1] = errno;
	}
out:
	(void)write_full(life, "s", 1);
	(void)write_full(life, reply, sizeof reply);
	free(buf);
	free(argv);
	free(env);
	return pid;
}

/* One tag from ri-run, with the descriptors sent along (into rfd, at most
 * 4, close-on-exec here); false at end of file or an error. */
static bool
wd_recv(int life, char *tag, int rfd[4], int *nrfd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(4 * sizeof(int))];
	} cb;
	struct iovec iov = { tag, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb.b,
		.msg_controllen = sizeof cb.b };
	ssize_t n;

	*nrfd = 0;
	while ((n = recvmsg(life, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n != 1)
		return false;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < cnt; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
			if (*nrfd < 4)
				rfd[(*nrfd)++] = fd;
			else
				close(fd);
		}
	}
	return true;
}

static _Noreturn void
watchdog(int sock)
{
	sigset_t orig, chld;
	pid_t jobpid = 0;
	bool reported = false;
	int life, sfd, devnull;

	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	(void)setpgid(0, 0);
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* the socket above the standard descriptors, which become /dev/null:
	 * the watchdog holds nothing of ri-run's (a reader of ri-run's
	 * output sees its end when ri-run and the job have gone) */
	if ((life = fcntl(sock, F_DUPFD_CLOEXEC, 10)) < 0)
		_exit(1);
	for (int fd = 0; fd < life; fd++)
		(void)close(fd);
	close_from(life + 1);
	if ((devnull = open("/dev/null", O_RDWR)) == 0) {
		(void)dup2(devnull, 1);
		(void)dup2(devnull, 2);
	}
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	(void)sigprocmask(SIG_BLOCK, &chld, &orig);
	sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	for (;;) {
		struct pollfd p[2] = { { life, POLLIN, 0 }, { sfd, POLLIN, 0 } };
		int rfd[4], nrfd;
		char tag;

		/* without a signalfd, a look at the children every 100 ms */
		(void)poll(p, sfd >= 0 ? 2 : 1, sfd >= 0 ? -1 : 100);
		if (sfd >= 0 && (p[1].revents & POLLIN)) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) > 0)
				;
		}
		/* reap the job, and whatever of it became ours and ended */
		for (;;) {
			int st;
			pid_t pid = waitpid(-1, &st, WNOHANG);
			if (pid <= 0)
				break;
			if (pid == jobpid && !reported) {
				int32_t s32 = st;
				reported = true;
				if (!write_full(life, "x", 1) || !write_full(life, &s32, sizeof s32))
					break;
			}
		}
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (!wd_recv(life, &tag, rfd, &nrfd) || tag == 'd')
			break;
		if (tag == 'r' && jobpid == 0)
			jobpid = wd_start(life, rfd, nrfd, &orig);
		for (int i = 0; i < nrfd; i++)
			close(rfd[i]);
	}
	/* done, or ri-run died: nothing of the job outlives it */
	kill_all(jobpid, sfd);
	_exit(0);
}

int
ri_watchdog_start(struct ri_watchdog *w, ri_err *err)
{
	int sv[2];

	w->pid = -1;
	w->sock = -1;
	/* a watchdog gone answers EPIPE, and never kills ri-run */
	signal(SIGPIPE, SIG_IGN);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return ri_fail(err, RI_INTERNAL, "cannot make the watchdog's socket: %s -- nothing was"
		    " opened or written", strerror(errno));
	fflush(NULL);
	if ((w->pid = fork()) < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return ri_fail(err, RI_INTERNAL, "cannot fork the watchdog: %s -- nothing was opened or"
		    " written", strerror(e));
	}
	if (w->pid == 0) {
		close(sv[0]);
		watchdog(sv[1]);
	}
	close(sv[1]);
	w->sock = sv[0];
	return RI_OK;
}

void
ri_watchdog_end(struct ri_watchdog *w)
{
	if (w->sock < 0)
		return;
	if (write(w->sock, "d", 1) != 1)
		(void)kill(w->pid, SIGKILL);
	close(w->sock);
	w->sock = -1;
	while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/*
 * Ask the watchdog to start the job: path, argv, env, and the job's
 * descriptors 0-3 (want[t] < 0, or not open in ri-run: none there).  Its
 * pid, or -1 (the watchdog is gone); *e the errno of a failed execve
 * (the job then exits 127 at once).
 */
static pid_t
wd_spawn(struct ri_watchdog *w, const char *path, char *const argv[], char *const env[], const int want[4],
    int *e)
{
	struct wd_req q = { 0 };
	size_t off = 0;
	char *buf;
	int sendfds[4], n = 0;
	int32_t reply[2];
	char tag;

	*e = 0;
	q.len = (uint32_t)strlen(path) + 1;
	for (; argv[q.argc] != NULL; q.argc++)
		q.len += (uint32_t)strlen(argv[q.argc]) + 1;
	for (; env[q.envc] != NULL; q.envc++)
		q.len += (uint32_t)strlen(env[q.envc]) + 1;
	for (int t = 0; t < 4; t++) {
		if (want[t] >= 0 && fcntl(want[t], F_GETFD) >= 0) {
			q.fds |= (uint8_t)(1u << t);
			sendfds[n++] = want[t];
		}
	}
	buf = ri_xmalloc(q.len);
	memcpy(buf + off, path, strlen(path) + 1);
	off += strlen(path) + 1;
	for (uint32_t i = 0; i < q.argc; off += strlen(argv[i]) + 1, i++)
		memcpy(buf + off, argv[i], strlen(argv[i]) + 1);
	for (uint32_t i = 0; i < q.envc; off += strlen(env[i]) + 1, i++)
		memcpy(buf + off, env[i], strlen(env[i]) + 1);

	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(4 * sizeof(int))];
	} cb;
	struct iovec iov = { (char *)"r", 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (n > 0) {
		memset(&cb, 0, sizeof cb);
		m.msg_control = cb.b;
		m.msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
		memcpy(CMSG_DATA(c), sendfds, (size_t)n * sizeof(int));
	}
	ssize_t k;
	while ((k = sendmsg(w->sock, &m, 0)) < 0 && errno == EINTR)
		;
	bool ok = k == 1 && write_full(w->sock, &q, sizeof q) && write_full(w->sock, buf, q.len) &&
	    read_full(w->sock, &tag, 1) && tag == 's' && read_full(w->sock, reply, sizeof reply);
	free(buf);
	if (!ok || reply[0] <= 0) {
		*e = ok ? reply[1] : 0;
		return -1;
	}
	*e = reply[1];
	return (pid_t)reply[0];
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
	bool lost;              /* the watchdog went before the job's end was known */
	int exec_errno;         /* the command could not be executed */
	char *out;
	size_t len;
	bool too_big;
};

/* Run CMD until it ends or the stop instant arrives; capture its outcome
 * (descriptor 3, or stdout with --outcome-stdout) up to cap bytes and
 * drain the rest. */
static int
run_child(const struct ri_run_opts *o, struct ri_watchdog *w, const char *inv, const char *ev,
    const char *datum, const char *deadline, const char *token, int64_t budget, struct outcome *res)
{
	int fds[2] = { -1, -1 };
	pid_t pid;
	size_t cap = res->len;
	int64_t stop_at = ri_mono_ms() + budget, term_at = 0;
	bool done = false, eof = false, killed = false;
	size_t added;
	char **env;

	res->len = 0;
	res->out = ri_xmalloc(cap + 1);
	if (o->path == NULL || cloexec_pipe(fds) != 0)
		return -1;
	/* the job's 0-3: stdin, stdout (or the outcome pipe), stderr, and the
	 * outcome pipe as 3 (none with --outcome-stdout) */
	int want[4] = { STDIN_FILENO, o->outcome_stdout ? fds[1] : STDOUT_FILENO, STDERR_FILENO,
		o->outcome_stdout ? -1 : fds[1] };
	for (int t = 0; t <= 2; t++)
		if ((o->closed_std & (1u << t)) && want[t] == t)
			want[t] = -1;   /* closed for ri-run, closed for the job */
	env = job_env(o, inv, ev, datum, deadline, token, &added);
	pid = wd_spawn(w, o->path, o->argv, env, want, &res->exec_errno);
	job_env_free(env, added);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return -1;
	}
	(void)fcntl(fds[0], F_SETFL, O_NONBLOCK);
	/* every wait ends on its event -- output, EOF, the watchdog's word
	 * that the job ended -- or on the next instant this loop acts at (the
	 * stop instant, the end of the grace) */
	while (!done || (!eof && !res->stopped)) {
		struct pollfd p[2];
		nfds_t np = 0;
		int ix_out = -1, ix_wd = -1;
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
		if (!eof) {
			ix_out = (int)np;
			p[np++] = (struct pollfd){ fds[0], POLLIN, 0 };
		}
		if (!done) {
			ix_wd = (int)np;
			p[np++] = (struct pollfd){ w->sock, POLLIN, 0 };
		}
		if (poll(p, np, wait_ms > INT32_MAX ? INT32_MAX : (int)wait_ms) <= 0)
			continue;
		if (ix_out >= 0 && (p[ix_out].revents & (POLLIN | POLLHUP | POLLERR))) {
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
		}
		if (ix_wd >= 0 && (p[ix_wd].revents & (POLLIN | POLLHUP | POLLERR))) {
			/* 'x' and the job's wait status; end of file: the watchdog
			 * went (killed), and the job with it (its parent-death
			 * signal) -- an end nobody saw */
			char tag;
			int32_t st;
			if (read_full(w->sock, &tag, 1) && tag == 'x' && read_full(w->sock, &st, sizeof st))
				res->status = st;
			else
				res->lost = true;
			done = true;
		}
	}
	close(fds[0]);
	res->out[res->len] = '\0';
	/* nothing of the job outlives it: its group is stopped either way;
	 * then the watchdog is told ri-run saw it end, and kills whatever of
	 * the job is left under it, and goes */
	(void)kill(-pid, SIGKILL);
	ri_watchdog_end(w);
	return 0;
}

void
ri_run_hold_std(struct ri_run_opts *o)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		int n = open("/dev/null", O_RDWR);
		if (n >= 0 && n != fd) {
			(void)dup2(n, fd);
			(void)close(n);
		}
		o->closed_std |= 1u << fd;
	}
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
	/* the act runs for as long as it runs: what is read after it is read
	 * after it, on a clock read after it (issue 43) */
	if (r->st->ops->settle != NULL)
		r->st->ops->settle(r->st);
	if (run_child(o, w, json_string_value(json_object_get(opened, "invocation_id")),
	    json_string_value(json_object_get(opened, "intent_event_id")), datum, deadline, token,
	    stop - now, &res) != 0) {
		/* nothing was started: the act did not happen, but the intent
		 * stands; the sweep will find it not-committed */
		rc = yield_unknown(r, opened, ans, err, "could not start the command");
		goto out;
	}
	ri_fault("run.after_act");
	if (res.lost) {
		rc = yield_unknown(r, opened, ans, err, "the watchdog was killed while the command ran, and the"
		    " command with it");
		goto out;
	}
	if (res.exec_errno != 0) {
		char why[300];
		snprintf(why, sizeof why, "the command could not be executed: %s", strerror(res.exec_errno));
		rc = yield_unknown(r, opened, ans, err, why);
		goto out;
	}
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
		 * caller gets the constituent's own code; only a declared one
		 * (commit 9) */
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
	/* exit 0: committed (commit 4: Close); what it wrote on fd 3 (or
	 * stdout, with --outcome-stdout) is the outcome data -- nothing is {} */
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
