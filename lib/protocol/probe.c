/*
 * probe.c -- run a kind's probe: spawn its argv (no shell), one JSON
 * request on stdin, one JSON answer on stdout, a probe_round_trip timeout
 * and an output cap.  Anything but exactly one of the four shapes is
 * unavailable -- never not-committed (probe 4, probe 5).
 */
#define _GNU_SOURCE     /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/nc.h"
#include "protocol/probe.h"
#include "protocol/proto.h"

void
ri_probe_clear(struct ri_probe *p)
{
	free(p->outcome_action_ref);
	json_decref(p->outcome_data);
	json_decref(p->candidates);
	memset(p, 0, sizeof *p);
}

static int
unavailable(struct ri_probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
vsay(struct ri_probe *p, const char *fmt, va_list ap)
{
	ri_probe_clear(p);
	p->answer = RI_PROBE_UNAVAILABLE;
	vsnprintf(p->why, sizeof p->why, fmt, ap);
}

static int
unavailable(struct ri_probe *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(p, fmt, ap);
	va_end(ap);
	return 0;
}

/* Every member of o is one of the first n keys. */
/* unavailable, for an output that is not an answer: -1 */
static int
malformed(struct ri_probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
malformed(struct ri_probe *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(p, fmt, ap);
	va_end(ap);
	return -1;
}

static bool
only_keys(json_t *o, const char *const *keys, size_t n)
{
	const char *k;
	json_t *v;

	json_object_foreach(o, k, v) {
		size_t i = 0;
		while (i < n && strcmp(keys[i], k) != 0)
			i++;
		if (i == n)
			return false;
	}
	return true;
}

/*
 * The four shapes of ri.json(5)'s probe answer, exactly.  A batch probe's line (act_key
 * not NULL) is one of them with "act_key" beside: the request's, so an
 * answer can never be taken for another act's (ri-sweep(1), batch probe).
 */
static int
parse_answer(const struct ri_config *c, const struct ri_kind *k, const char *act_key, const char *text,
    size_t len, struct ri_probe *p)
{
	/* the last name is act_key, a batch line's alone */
	static const char *const committed_keys[] = { "answer", "outcome_action_ref", "outcome_data", "act_key",
		NULL };
	static const char *const plain_keys[] = { "answer", "act_key", NULL };
	static const char *const undecidable_keys[] = { "answer", "candidates", "act_key", NULL };
	size_t batch = act_key != NULL;
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je), *a;
	const char *ans;
	size_t i;

	memset(p, 0, sizeof *p);
	if (j == NULL || !json_is_object(j)) {
		json_decref(j);
		return malformed(p, "the probe's output is not one JSON object");
	}
	/* probe 1 per line: an answer is about the act asked, or no answer */
	if (!RI_NC(RI_NC_BATCH_ANSWER_UNKEYED) && act_key != NULL) {
		json_t *key = json_object_get(j, "act_key");
		if (!json_is_string(key) || strcmp(json_string_value(key), act_key) != 0) {
			json_decref(j);
			return malformed(p, "the batch probe's line does not name act_key %s", act_key);
		}
	}
	a = json_object_get(j, "answer");
	ans = json_is_string(a) ? json_string_value(a) : "";
	if (strcmp(ans, "committed") == 0 && only_keys(j, committed_keys, 3 + batch)) {
		json_t *ref = json_object_get(j, "outcome_action_ref"), *data = json_object_get(j, "outcome_data");
		if (!json_is_string(ref) || !ri_is_outcome_ref(k, json_string_value(ref)) || !json_is_object(data)) {
			json_decref(j);
			return malformed(p, "committed needs an outcome_action_ref of kind %s and an outcome_data object",
			    k->name);
		}
		p->answer = RI_PROBE_COMMITTED;
		p->outcome_action_ref = ri_strdup(json_string_value(ref));
		p->outcome_data = json_incref(data);
	} else if (strcmp(ans, "not-committed") == 0 && only_keys(j, plain_keys, 1 + batch)) {
		p->answer = RI_PROBE_NOT_COMMITTED;
	} else if (strcmp(ans, "unavailable") == 0 && only_keys(j, plain_keys, 1 + batch)) {
		p->answer = RI_PROBE_UNAVAILABLE;
		snprintf(p->why, sizeof p->why, "the probe answered unavailable");
	} else if (strcmp(ans, "undecidable") == 0 && only_keys(j, undecidable_keys, 2 + batch)) {
		json_t *cands = json_object_get(j, "candidates"), *v;
		/* probe 3: undecidable only where records match -- at least one
		 * candidate; an empty list is no answer, so unavailable (probe 4) */
		if (!json_is_array(cands) || json_array_size(cands) == 0) {
			json_decref(j);
			return malformed(p, "undecidable needs a non-empty candidates array");
		}
		json_array_foreach(cands, i, v) {
			if (!json_is_string(v) || json_string_length(v) == 0 ||
			    (int64_t)json_string_length(v) > c->reference_length_cap) {
				json_decref(j);
				return malformed(p, "candidate %zu is not a reference under reference_length_cap", i);
			}
		}
		p->answer = RI_PROBE_UNDECIDABLE;
		p->candidates = json_incref(cands);
	} else {
		json_decref(j);
		return malformed(p, "the probe's answer is none of the four shapes");
	}
	json_decref(j);
	return 0;
}

int
ri_probe_parse(const struct ri_config *c, const struct ri_kind *k, const char *text, size_t len,
    struct ri_probe *p)
{
	(void)parse_answer(c, k, NULL, text, len, p);
	return 0;
}

int
ri_probe_parse_line(const struct ri_config *c, const struct ri_kind *k, const char *act_key, const char *text,
    size_t len, struct ri_probe *p)
{
	return parse_answer(c, k, act_key, text, len, p);
}

/* pairing datum 6a: with no datum, committed cannot be trusted -- a probe
 * run's answer and a batch line's alike */
static void
datum_guard(const struct ri_kind *k, struct ri_probe *p)
{
	if (RI_NC(RI_NC_NO_DATUM_GUARD))
		return;         /* negative control: committed trusted with no datum */
	if (p->answer == RI_PROBE_COMMITTED && k->pairing_datum == RI_PAIR_NONE)
		/* pairing datum 6a */
		unavailable(p, "the probe answered committed for a kind whose pairing datum is none");
}

/*
 * The probe's environment: ours without what is the journal's alone (the
 * probe reads the store; it gets nothing of the journal's).
 */
static char **
probe_env(void)
{
	static const char *const drop[] = { "RI_CREDENTIAL=", "RI_CREDENTIAL_FILE=", "RI_FAULT=", NULL };
	size_t kept;

	return ri_env_without(drop, 0, &kept);
}

/*
 * Spawn the probe: its own process group, the two pipes as its stdin and
 * stdout.  posix_spawn, not fork: the sweep's pages are not copied for a
 * child that only execs, nor write-faulted back afterwards (issue 15: the
 * copy and the faults were a sixth of a sweep's own time an orphan).  A
 * probe that cannot be executed is an error here, as its exit 127 was.
 */
static int
probe_spawn(const struct ri_kind *k, int in_fd, int out_fd, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char **env = probe_env();
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0);
	rc = posix_spawnp(pid, k->probe[0], &fa, &at, k->probe, env);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	return rc;
}

/*
 * The probe started with a pipe to its stdin and one from its stdout, both
 * ours non-blocking and close-on-exec (only the ends dup2'd reach it), in
 * its own process group so a kill reaches all it started.  -1 with why set
 * when it cannot be.
 */
static int
spawn_piped(const struct ri_kind *k, pid_t *pid, int *in, int *out, char *why, size_t n)
{
	int to[2], from[2], rc;

	if (pipe2(to, O_CLOEXEC) != 0) {
		snprintf(why, n, "pipe: %s", strerror(errno));
		return -1;
	}
	if (pipe2(from, O_CLOEXEC) != 0) {
		snprintf(why, n, "pipe: %s", strerror(errno));
		close(to[0]);
		close(to[1]);
		return -1;
	}
	fflush(NULL);
	rc = probe_spawn(k, to[0], from[1], pid);
	close(to[0]);
	close(from[1]);
	if (rc != 0) {
		snprintf(why, n, "the probe %s could not be run: %s", k->probe[0], strerror(rc));
		close(to[1]);
		close(from[0]);
		return -1;
	}
	(void)setpgid(*pid, *pid);
	(void)fcntl(to[1], F_SETFL, O_NONBLOCK);
	(void)fcntl(from[0], F_SETFL, O_NONBLOCK);
	signal(SIGPIPE, SIG_IGN);
	*in = to[1];
	*out = from[0];
	return 0;
}

/*
 * Sweep never 1: the probe is the only adopter code the sweep runs.  The
 * probe's whole process group is killed at the timeout.
 */
int
ri_probe_run(const struct ri_config *c, const struct ri_kind *k, const char *act_key,
    json_t *intent_payload, struct ri_probe *p)
{
	json_t *req = json_pack("{s:s, s:s, s:O}", "kind", k->name, "act_key", act_key,
	    "intent", intent_payload);
	char *in = ri_json_canonical(req), *out;
	size_t in_len = strlen(in), in_off = 0, out_len = 0;
	size_t cap = (size_t)c->payload_cap + 4096;
	int to_probe, from_probe, status = 0;
	char why[256];
	pid_t pid;
	int64_t deadline = ri_mono_ms() + k->probe_round_trip;
	bool done = false, eof = false, over = false, timed_out = false;

	json_decref(req);
	memset(p, 0, sizeof *p);
	if (spawn_piped(k, &pid, &to_probe, &from_probe, why, sizeof why) != 0) {
		free(in);
		return unavailable(p, "%s", why);
	}
	out = ri_xmalloc(cap + 1);
	int xfd = ri_exit_fd(pid);
	/* every wait ends on an event -- output, input taken, the exit -- or
	 * on the deadline; the 20 ms poll is only the fallback with no pidfd */
	while (!eof || !done) {
		struct pollfd fds[3];
		nfds_t nfds = 0;
		int ix_out = -1, ix_in = -1, ix_exit = -1;
		int64_t left = deadline - ri_mono_ms();

		if (left <= 0) {
			timed_out = true;
			break;
		}
		if (!eof) {
			ix_out = (int)nfds;
			fds[nfds++] = (struct pollfd){ from_probe, POLLIN, 0 };
		}
		if (to_probe >= 0) {
			ix_in = (int)nfds;
			fds[nfds++] = (struct pollfd){ to_probe, POLLOUT, 0 };
		}
		if (!done && xfd >= 0) {
			ix_exit = (int)nfds;
			fds[nfds++] = (struct pollfd){ xfd, POLLIN, 0 };
		}
		int wait_ms = left > INT32_MAX ? INT32_MAX : (int)left;
		if (xfd < 0 && !done && wait_ms > 20)
			wait_ms = 20;
		if (poll(fds, nfds, wait_ms) < 0 && errno != EINTR)
			break;
		if (ix_out >= 0 && (fds[ix_out].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t n = read(from_probe, out + out_len, cap - out_len);
			if (n == 0) {
				eof = true;
			} else if (n > 0) {
				out_len += (size_t)n;
				if (out_len == cap) {
					over = true;
					break;
				}
			}
		}
		if (ix_in >= 0 && (fds[ix_in].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n = write(to_probe, in + in_off, in_len - in_off);
			if (n > 0)
				in_off += (size_t)n;
			if (n < 0 || in_off == in_len) {
				close(to_probe);
				to_probe = -1;
			}
		}
		if (!done && (xfd < 0 || (ix_exit >= 0 && fds[ix_exit].revents != 0)) &&
		    waitpid(pid, &status, WNOHANG) == pid)
			done = true;
	}
	if (xfd >= 0)
		close(xfd);
	if (to_probe >= 0)
		close(to_probe);
	close(from_probe);
	if (!done) {
		(void)kill(-pid, SIGKILL);
		(void)waitpid(pid, &status, 0);
	}
	(void)kill(-pid, SIGKILL);
	free(in);
	out[out_len] = '\0';
	if (timed_out)
		unavailable(p, "the probe did not answer within probe_round_trip");
	else if (over)
		unavailable(p, "the probe's output exceeds %zu bytes", cap);
	else if (!WIFEXITED(status))
		unavailable(p, "the probe died by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	else if (WEXITSTATUS(status) != 0)
		unavailable(p, "the probe exited %d", WEXITSTATUS(status));
	else
		ri_probe_parse(c, k, out, out_len, p);
	free(out);
	datum_guard(k, p);
	return 0;
}

/* ---- the batch probe ("probe_batch": true) ----------------------------- */

/*
 * One probe process a kind, kept for the run: a request is a line, its
 * answer is a line (ri-sweep(1), "The batch probe"; issue 15, target 4).
 * The same fail-closed rules as a probe run, a line at a time (probe 1,
 * 4, 5): no line within probe_round_trip of the request, a line over the
 * envelope, a line that is not one of the four shapes naming the act asked,
 * output before the question or past the answer, the probe's end -- each
 * is unavailable for that act, and the probe's whole group is killed: a
 * stream that said something unasked is never read again, and the next
 * act is put to a fresh process.
 */
struct batch {
	pid_t pid;                      /* 0: none running */
	int in, out, xfd;               /* its stdin, its stdout, its pidfd (-1: none) */
	char *buf;                      /* what it wrote, up to cap */
	size_t len;
};

struct ri_prober {
	const struct ri_config *c;
	struct batch *b;                /* one a kind, c->kinds order */
};

/* none running: no process, no descriptors, no buffer */
static void
batch_clear(struct batch *b)
{
	*b = (struct batch){ .pid = 0, .in = -1, .out = -1, .xfd = -1, .buf = NULL, .len = 0 };
}

struct ri_prober *
ri_prober_new(const struct ri_config *c)
{
	struct ri_prober *pr = ri_xcalloc(1, sizeof *pr);

	pr->c = c;
	pr->b = ri_xcalloc(c->n_kinds ? c->n_kinds : 1, sizeof *pr->b);
	for (size_t i = 0; i < (c->n_kinds ? c->n_kinds : 1); i++)
		batch_clear(&pr->b[i]);
	return pr;
}

static void
batch_kill(struct batch *b)
{
	if (b->pid <= 0)
		return;
	if (b->in >= 0)
		close(b->in);
	close(b->out);
	if (b->xfd >= 0)
		close(b->xfd);
	(void)kill(-b->pid, SIGKILL);
	while (waitpid(b->pid, NULL, 0) < 0 && errno == EINTR)
		;
	free(b->buf);
	batch_clear(b);
}

/* The run is over: end of input tells the probe so; it has one round trip
 * to exit before its group is killed, as at any end. */
static void
batch_end(struct batch *b, ri_ms round_trip)
{
	int64_t deadline = ri_mono_ms() + round_trip;

	if (b->pid <= 0)
		return;
	close(b->in);
	b->in = -1;
	for (;;) {
		int64_t left = deadline - ri_mono_ms();
		if (waitpid(b->pid, NULL, WNOHANG) != 0 || left <= 0)
			break;
		if (b->xfd >= 0) {
			struct pollfd f = { b->xfd, POLLIN, 0 };
			(void)poll(&f, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		} else {
			(void)poll(NULL, 0, left < 20 ? (int)left : 20);
		}
	}
	batch_kill(b);
}

void
ri_prober_free(struct ri_prober *pr)
{
	if (pr == NULL)
		return;
	for (size_t i = 0; i < pr->c->n_kinds; i++)
		batch_end(&pr->b[i], pr->c->kinds[i].probe_round_trip);
	free(pr->b);
	free(pr);
}

static int
batch_start(struct batch *b, const struct ri_kind *k, size_t cap, char *why, size_t n)
{
	if (spawn_piped(k, &b->pid, &b->in, &b->out, why, n) != 0) {
		batch_clear(b);
		return -1;
	}
	b->xfd = ri_exit_fd(b->pid);
	b->buf = ri_xmalloc(cap + 1);
	b->len = 0;
	return 0;
}

/* Anything the probe wrote, or its end, before it was asked (b->len is 0
 * between requests: an answer's line is consumed whole, any failure kills). */
static bool
batch_unasked(struct batch *b)
{
	struct pollfd f = { b->out, POLLIN, 0 };

	if (RI_NC(RI_NC_BATCH_EXTRA_LINES))
		return false;   /* negative control: what came unasked is never seen */
	return poll(&f, 1, 0) > 0 && f.revents != 0;
}

/* Send the request line and read one line back, by the deadline.  0 with
 * the line in b->buf[0 .. *line_len) (its newline the last byte read);
 * -1 with why. */
static int
batch_exchange(struct batch *b, const char *req, size_t req_len, size_t cap, int64_t deadline,
    size_t *line_len, char *why, size_t n)
{
	size_t off = 0;

	for (;;) {
		struct pollfd fds[2];
		nfds_t nfds = 0;
		int64_t left = deadline - ri_mono_ms();
		char *nl;

		if (left <= 0) {
			snprintf(why, n, "the batch probe did not answer within probe_round_trip");
			return -1;
		}
		fds[nfds++] = (struct pollfd){ b->out, POLLIN, 0 };
		if (off < req_len)
			fds[nfds++] = (struct pollfd){ b->in, POLLOUT, 0 };
		if (poll(fds, nfds, left > INT32_MAX ? INT32_MAX : (int)left) < 0 && errno != EINTR) {
			snprintf(why, n, "poll: %s", strerror(errno));
			return -1;
		}
		if (nfds > 1 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = write(b->in, req + off, req_len - off);
			if (w < 0 && errno != EAGAIN && errno != EINTR) {
				snprintf(why, n, "the batch probe stopped reading its requests");
				return -1;
			}
			if (w > 0)
				off += (size_t)w;
		}
		if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t r = read(b->out, b->buf + b->len, cap - b->len);
			if (r == 0) {
				snprintf(why, n, "the batch probe ended without answering");
				return -1;
			}
			if (r > 0)
				b->len += (size_t)r;
			if ((nl = memchr(b->buf, '\n', b->len)) != NULL) {
				*line_len = (size_t)(nl - b->buf) + 1;
				/* a line before the whole request was taken, or more
				 * than the one line: not an answer to this request */
				if (off < req_len || (*line_len != b->len && !RI_NC(RI_NC_BATCH_EXTRA_LINES))) {
					snprintf(why, n, "the batch probe wrote %s", off < req_len ?
					    "an answer before taking the whole request" : "more than one line");
					return -1;
				}
				return 0;
			}
			if (b->len == cap) {
				snprintf(why, n, "the batch probe's line exceeds %zu bytes", cap);
				return -1;
			}
		}
	}
}

int
ri_probe_ask(struct ri_prober *pr, const struct ri_kind *k, const char *act_key, json_t *intent_payload,
    struct ri_probe *p)
{
	const struct ri_config *c = pr->c;
	struct batch *b;
	size_t cap = (size_t)c->payload_cap + 4096, req_len, line_len = 0;
	int64_t deadline = ri_mono_ms() + k->probe_round_trip;
	char why[sizeof p->why];
	char *req;
	int rc;

	if (!k->probe_batch)
		return ri_probe_run(c, k, act_key, intent_payload, p);
	b = &pr->b[k - c->kinds];
	memset(p, 0, sizeof *p);
	if (b->pid > 0 && batch_unasked(b))
		batch_kill(b);
	if (b->pid <= 0 && batch_start(b, k, cap, why, sizeof why) != 0)
		return unavailable(p, "%s", why);
	json_t *j = json_pack("{s:s, s:s, s:O}", "kind", k->name, "act_key", act_key, "intent", intent_payload);
	char *line = ri_json_canonical(j);
	json_decref(j);
	req_len = strlen(line) + 1;
	req = ri_xmalloc(req_len + 1);
	memcpy(req, line, req_len - 1);
	req[req_len - 1] = '\n';
	req[req_len] = '\0';
	free(line);
	rc = batch_exchange(b, req, req_len, cap, deadline, &line_len, why, sizeof why);
	free(req);
	if (rc != 0) {
		batch_kill(b);
		return unavailable(p, "%s", why);
	}
	b->len = 0;
	if (ri_probe_parse_line(c, k, act_key, b->buf, line_len - 1, p) != 0)
		batch_kill(b);          /* not an answer: the stream is not read again */
	datum_guard(k, p);
	return 0;
}

const char *
ri_probe_name(enum ri_probe_answer a)
{
	static const char *names[] = { "committed", "not-committed", "undecidable", "unavailable" };
	return names[a];
}
