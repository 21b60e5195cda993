/* fault.c -- named fault points: die, fail, lose the reply, or pause. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/fault.h"

#define RI_MAX_ARMED 16

enum { ACT_DIE = 100, ACT_PAUSE, ACT_DELAY };

/* the longest delay: a section held a minute is no longer a round trip */
#define RI_MAX_DELAY_MS 60000

static struct armed {
	char point[64];
	int action;
	int nth;                /* fire on the nth pass (1 = first) */
	int seen;
	long delay_ms;          /* ACT_DELAY: held on every pass from the nth */
} armed[RI_MAX_ARMED];
static size_t n_armed;

static const struct known {
	const char *name, *kind, *what;
} known[] = {
#define RI_FAULT_WRITE(id, name, what) { name, "write", what },
#define RI_FAULT_STEP(id, name, what)  { name, "step", what },
#include "util/faults.def"
#undef RI_FAULT_WRITE
#undef RI_FAULT_STEP
};

void
ri_fault_list(void (*each)(const char *, const char *, const char *, void *), void *arg)
{
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		each(known[i].name, known[i].kind, known[i].what, arg);
}

static bool
known_point(const char *p)
{
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
		size_t n = strlen(known[i].name);
		if (strcmp(known[i].kind, "step") == 0) {
			if (strcmp(p, known[i].name) == 0)
				return true;
		} else if (strncmp(p, known[i].name, n) == 0 &&
		    (strcmp(p + n, ".before") == 0 || strcmp(p + n, ".after") == 0 ||
		    strcmp(p + n, ".locked") == 0)) {
			return true;
		}
	}
	return false;
}

/* "delay:<ms>", 0 to RI_MAX_DELAY_MS, digits only */
static int
parse_delay(const char *s, long *ms)
{
	char *end;

	if (strncmp(s, "delay:", 6) != 0 || s[6] < '0' || s[6] > '9')
		return -1;
	errno = 0;
	*ms = strtol(s + 6, &end, 10);
	if (errno != 0 || *end != '\0' || *ms > RI_MAX_DELAY_MS)
		return -1;
	return ACT_DELAY;
}

static int
parse_action(const char *s, long *delay_ms)
{
	static const struct { const char *n; int a; } acts[] = {
		{ "die", ACT_DIE }, { "pause", ACT_PAUSE }, { "fail", RI_FA_FAIL },
		{ "fail3", RI_FA_FAIL3 }, { "lose", RI_FA_LOSE },
		{ "noretention", RI_FA_NORETENTION },
	};
	*delay_ms = 0;
	for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
		if (strcmp(s, acts[i].n) == 0)
			return acts[i].a;
	return parse_delay(s, delay_ms);
}

int
ri_fault_arm(const struct ri_config *c, ri_err *err)
{
	const char *spec = getenv("RI_FAULT");
	char buf[1024], *save = NULL;

	n_armed = 0;
	if (spec == NULL || *spec == '\0')
		return RI_OK;
	if (!c->fault_injection)
		return ri_fail(err, RI_CONFIG,
		    "RI_FAULT is set but the config does not set \"fault_injection\": true");
	if (strlen(spec) >= sizeof buf)
		return ri_fail(err, RI_CONFIG, "RI_FAULT: too long");
	snprintf(buf, sizeof buf, "%s", spec);
	for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *at;
		struct armed *a;

		if (eq == NULL || n_armed == RI_MAX_ARMED)
			return ri_fail(err, RI_CONFIG, "RI_FAULT: expected point=action, got \"%s\"", tok);
		*eq++ = '\0';
		a = &armed[n_armed];
		a->nth = 1;
		if ((at = strchr(eq, '@')) != NULL) {
			*at++ = '\0';
			a->nth = atoi(at);
			if (a->nth < 1)
				return ri_fail(err, RI_CONFIG, "RI_FAULT: bad @count in \"%s\"", tok);
		}
		if (!known_point(tok))
			return ri_fail(err, RI_CONFIG, "RI_FAULT: unknown fault point \"%s\"", tok);
		if ((a->action = parse_action(eq, &a->delay_ms)) < 0)
			return ri_fail(err, RI_CONFIG, "RI_FAULT: unknown action \"%s\" (delay:<ms> takes 0 to %d)",
			    eq, RI_MAX_DELAY_MS);
		if (strlen(tok) >= sizeof a->point)
			return ri_fail(err, RI_CONFIG, "RI_FAULT: point name too long");
		snprintf(a->point, sizeof a->point, "%s", tok);
		a->seen = 0;
		n_armed++;
	}
	return RI_OK;
}

/* Block until the test writes to the FIFO $RI_FAULT_DIR/<point>. */
static void
pause_at(const char *point)
{
	const char *dir = getenv("RI_FAULT_DIR");
	char path[4096], ready[4200], c;
	int fd;

	if (dir == NULL)
		dir = ".";
	snprintf(path, sizeof path, "%s/%s", dir, point);
	/* announce the pause so the test knows the process reached the point */
	snprintf(ready, sizeof ready, "%s.reached", path);
	fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "fault point %s: cannot open %s\n", point, path);
		abort();
	}
	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
	close(fd);
}

/* Hold the point ms milliseconds, whatever signal wakes the sleep early. */
static void
delay_at(long ms)
{
	struct timespec left = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		;
}

enum ri_fault_action
ri_fault(const char *point)
{
	struct armed *fire = NULL;

	/* every arm on this point counts the pass, then the first due fires.
	 * A delay is a standing condition, not an event (issue 43's measured
	 * ceiling: every append's section held open as a round trip would):
	 * it holds on every pass from its nth, and leaves the events armed on
	 * the same point to fire as they would without it */
	for (size_t i = 0; i < n_armed; i++) {
		struct armed *a = &armed[i];

		if (strcmp(a->point, point) != 0)
			continue;
		++a->seen;
		if (a->action == ACT_DELAY) {
			if (a->seen >= a->nth && a->delay_ms > 0)
				delay_at(a->delay_ms);
		} else if (a->seen == a->nth && fire == NULL) {
			fire = a;
		}
	}
	if (fire != NULL) {
		struct armed *a = fire;
		switch (a->action) {
		case ACT_DIE:
			fflush(NULL);
			kill(getpid(), SIGKILL);
			abort();
		case ACT_PAUSE:
			pause_at(point);
			return RI_FA_NONE;
		default:
			return (enum ri_fault_action)a->action;
		}
	}
	return RI_FA_NONE;
}
