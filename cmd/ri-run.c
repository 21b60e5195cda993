/* ri-run -- wrap one command as an act: open, run it, close / refuse /
 * yield by how it ended (ri-run(1)).  Standard output is the job's:
 * ri-run writes its answer only where --answer-fd or --answer asks. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "protocol/instance.h"
#include "protocol/proto.h"
#include "protocol/run.h"
#include "util/util.h"

static const char usage[] =
	"ri-run [-c config] [-n | --wait SECS] --kind K --act-key KEY --actor A\n"
	"              [--intent-data JSON | --intent-data-file FILE|-] [--outcome REF]\n"
	"              [--outcome-stdout] [--pre-commit-exit N,N...] [--grace-ms MS]\n"
	"              [--answer-fd N | --answer FILE] -- CMD [ARGS...]";

/* ri-run's own exit codes (ri(7)): a job's declared pre-commit code
 * that is one of them would read as ri-run's -- 12 as act-in-flight, 21
 * as "never re-run" -- so it is refused (issue 44, point 10) */
static bool
own_code(long v)
{
	return (v >= 10 && v <= 23) || (v >= 64 && v <= 78) || v == 126 || v == 127;
}

static void
parse_codes(const char *s, struct ri_run_opts *o)
{
	char *end;

	while (*s) {
		long v = strtol(s, &end, 10);
		if (end == s || v < 1 || v > 255 || o->n_pre_commit == 64 || (*end != ',' && *end != '\0'))
			ri_die(RI_USAGE, "--pre-commit-exit: expected exit codes 1..255 separated by commas");
		if (own_code(v))
			ri_die(RI_USAGE, "--pre-commit-exit: %ld is one of ri-run's own exit codes (10-23,"
			    " 64-78, 126, 127): the caller could not tell it from ri-run's; choose another"
			    " code for the job's pre-commit arm", v);
		o->pre_commit[o->n_pre_commit++] = (int)v;
		s = *end == ',' ? end + 1 : end;
	}
}

/* --answer-fd N: an open descriptor, never the job's (0) nor stderr */
static int
answer_fd(const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (end == arg || *end != '\0' || errno != 0 || v < 1 || v == 2 || v > 1 << 20)
		ri_die(RI_USAGE, "--answer-fd: expected an open descriptor number other than 0 and 2");
	if (fcntl((int)v, F_GETFL) < 0)
		ri_die(RI_USAGE, "--answer-fd %ld: not an open descriptor (give it with %ld>FILE)", v, v);
	return (int)v;
}

/* --answer FILE: created (or truncated) now, before anything is opened,
 * so a path that cannot take the answer stops ri-run before the act; a
 * symbolic link is refused (a planted one would redirect the write) */
static int
answer_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0666);

	if (fd < 0)
		ri_die(RI_USAGE, "--answer %s: %s%s -- nothing was opened or written", path, strerror(errno),
		    errno == ELOOP ? " (a symbolic link: give the real path, or --answer-fd)" : "");
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

/* --intent-data-file FILE, or "-" for stdin: one JSON object of at most
 * max bytes (Open then holds it to the config's payload_cap), read before
 * anything is opened */
static json_t *
intent_data_file(const char *path, size_t max)
{
	bool big = false, dash = strcmp(path, "-") == 0;
	int fd = dash ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	json_error_t je;
	size_t len;
	char *text;
	json_t *v;

	if (fd < 0)
		ri_die(RI_USAGE, "--intent-data-file %s: %s -- nothing was opened or written", path, strerror(errno));
	text = ri_slurp_fd(fd, max, &len, &big);
	if (!dash)
		close(fd);
	if (text == NULL)
		ri_die(RI_USAGE, "--intent-data-file %s: %s -- nothing was opened or written", path, strerror(errno));
	v = big ? NULL : json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (big)
		ri_die(RI_MALFORMED, "--intent-data-file %s: more than %zu bytes -- nothing was opened or written",
		    path, max);
	if (v == NULL || !json_is_object(v))
		ri_die(RI_MALFORMED, "--intent-data-file %s: expected one JSON object%s%s -- nothing was"
		    " opened or written", dash ? "(stdin)" : path, v == NULL ? ": " : "", v == NULL ? je.text : "");
	return v;
}

/* --help: the usage, then the time each kind of the config (if one can be
 * read) gives its job (issue 44, point 7) */
static _Noreturn void
help(const char *config, int64_t grace_ms)
{
	char line[512], loc[512], g[32];
	ri_err err = { 0 };
	ri *r;

	printf("usage: %s\n", usage);
	if (ri_instance_open(config, RI_CONFIG_ONLY, &r, &err) == RI_OK) {
		ri_format_seconds(grace_ms, g, sizeof g);
		printf("\nThe time each kind gives its job before ri-run stops it (grace %s s):\n", g);
		for (size_t i = 0; i < r->cfg->n_kinds; i++) {
			ri_run_budget_text(r->cfg, &r->cfg->kinds[i], grace_ms, line, sizeof line);
			printf("  %s: %s\n", r->cfg->kinds[i].name, ri_local(line, loc, sizeof loc));
		}
		ri_instance_close(r);
	} else {
		printf("\n(no job budgets without a config: %s)\n", err.msg);
	}
	fflush(stdout);
	exit(RI_OK);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS,
		{ "kind", required_argument, NULL, 'k' },
		{ "act-key", required_argument, NULL, 'a' },
		{ "actor", required_argument, NULL, 'A' },
		{ "intent-data", required_argument, NULL, 'i' },
		{ "intent-data-file", required_argument, NULL, 'I' },
		{ "outcome", required_argument, NULL, 'o' },
		{ "pre-commit-exit", required_argument, NULL, 'p' },
		{ "grace-ms", required_argument, NULL, 'g' },
		{ "outcome-stdout", no_argument, NULL, 'S' },
		{ "wait", required_argument, NULL, 'w' },
		{ "no-wait", no_argument, NULL, 'n' },
		{ "answer-fd", required_argument, NULL, 'F' },
		{ "answer", required_argument, NULL, 'W' },
		{ NULL, 0, NULL, 0 } };
	struct ri_run_opts o = { .grace_ms = 1000 };
	const char *config = NULL, *data_file = NULL, *answer_path = NULL, *answer_fd_arg = NULL;
	char path[4096];
	ri_ms wait = RI_NONE;
	json_error_t je;
	json_t *ans = NULL;
	ri_err err = { 0 };
	ri *r;
	int ch, rc, code, out = -1;
	bool want_help = false;

	ri_cli_init(argc, argv);
	ri_run_hold_std(&o);
	while ((ch = getopt_long(argc, argv, "+" RI_COMMON_SHORTOPTS "n", longopts, NULL)) != -1) {
		if (ch == 'h') {
			want_help = true;       /* after -c and --grace-ms, wherever they come */
			continue;
		}
		if (ri_cli_common(ch, optarg, &config, usage))
			continue;
		switch (ch) {
		case 'k': o.kind = optarg; break;
		case 'a': o.act_key = optarg; break;
		case 'A': o.actor = optarg; break;
		case 'o': o.outcome = optarg; break;
		case 'p': parse_codes(optarg, &o); break;
		case 'S': o.outcome_stdout = true; break;
		case 'n': wait = 0; break;
		case 'I': data_file = optarg; break;
		case 'F': answer_fd_arg = optarg; break;
		case 'W': answer_path = optarg; break;
		case 'w':
			if ((wait = ri_cli_wait(optarg)) < 0)
				ri_die(RI_USAGE, "--wait: expected seconds, a non-negative number");
			break;
		case 'g': {
			char *end;
			o.grace_ms = strtol(optarg, &end, 10);
			if (end == optarg || *end != '\0' || o.grace_ms < 0)
				ri_die(RI_USAGE, "--grace-ms: expected milliseconds, a non-negative integer");
			break;
		}
		case 'i':
			json_decref(o.intent_data);
			if ((o.intent_data = json_loads(optarg, 0, &je)) == NULL || !json_is_object(o.intent_data))
				ri_die(RI_USAGE, "--intent-data: expected a JSON object");
			break;
		}
	}
	if (want_help)
		help(config, o.grace_ms);
	if (o.kind == NULL || o.act_key == NULL || o.actor == NULL || optind >= argc) {
		const char *missing = o.kind == NULL ? "--kind" : o.act_key == NULL ? "--act-key" :
		    o.actor == NULL ? "--actor" : NULL;
		if (missing != NULL)
			ri_warnx("%s is required", missing);
		else
			ri_warnx("no command: give it after --");
		ri_usage(usage);
	}
	if (o.intent_data != NULL && data_file != NULL)
		ri_die(RI_USAGE, "--intent-data and --intent-data-file: give one of them");
	if (answer_fd_arg != NULL && answer_path != NULL)
		ri_die(RI_USAGE, "--answer-fd and --answer: give one of them");
	o.argv = argv + optind;
	/* a command that cannot run never opens an act: 127, nothing written */
	if ((rc = ri_run_resolve(o.argv[0], path, sizeof path, &err)) != RI_OK)
		ri_die(rc, "%s", err.msg);
	o.path = path;
	if (data_file != NULL)
		o.intent_data = intent_data_file(data_file, RI_RUN_INTENT_FILE_MAX);
	if (answer_fd_arg != NULL)
		out = answer_fd(answer_fd_arg);
	else if (answer_path != NULL)
		out = answer_file(answer_path);
	struct ri_watchdog w;
	if ((rc = ri_watchdog_start(&w, &err)) != RI_OK)
		ri_die(rc, "%s", err.msg);
	if ((rc = ri_instance_open(config, RI_WRITER, &r, &err)) != RI_OK) {
		/* the journal cannot be opened: ri-run's position is Open's --
		 * journal-unavailable, and the command never runs */
		if (rc != RI_JOURNAL_UNAVAILABLE && rc != RI_INTEGRITY)
			ri_die(rc, "%s", err.msg);
		ans = ri_refusal_unavailable(rc == RI_INTEGRITY);
		json_decref(o.intent_data);
		ri_watchdog_end(&w);
		return ri_cli_finish_to(out, RI_JOURNAL_UNAVAILABLE, ans, &err);
	}
	ri_cli_set_wait(r, wait);
	rc = ri_run(r, &o, &w, &ans, &code, &err);
	ri_watchdog_end(&w);
	ri_instance_close(r);
	json_decref(o.intent_data);
	ri_cli_finish_to(out, rc, ans, &err);
	return code >= 0 ? code : rc;
}
