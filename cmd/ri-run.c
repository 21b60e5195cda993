/* ri-run -- wrap one command as an act: open, run it, close / refuse /
 * yield by how it ended (ri-run(1)). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "run.h"

static const char usage[] =
	"ri-run [-c config] [-n | --wait SECS] --kind K --act-key KEY --actor A\n"
	"              [--intent-data JSON] [--outcome REF] [--outcome-stdout]\n"
	"              [--pre-commit-exit N,N...] [--grace-ms MS] -- CMD [ARGS...]";

static void
parse_codes(const char *s, struct ri_run_opts *o)
{
	char *end;

	while (*s) {
		long v = strtol(s, &end, 10);
		if (end == s || v < 1 || v > 255 || o->n_pre_commit == 64 || (*end != ',' && *end != '\0'))
			ri_die(RI_USAGE, "--pre-commit-exit: expected exit codes 1..255 separated by commas");
		o->pre_commit[o->n_pre_commit++] = (int)v;
		s = *end == ',' ? end + 1 : end;
	}
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS,
		{ "kind", required_argument, NULL, 'k' },
		{ "act-key", required_argument, NULL, 'a' },
		{ "actor", required_argument, NULL, 'A' },
		{ "intent-data", required_argument, NULL, 'i' },
		{ "outcome", required_argument, NULL, 'o' },
		{ "pre-commit-exit", required_argument, NULL, 'p' },
		{ "grace-ms", required_argument, NULL, 'g' },
		{ "outcome-stdout", no_argument, NULL, 'S' },
		{ "wait", required_argument, NULL, 'w' },
		{ "no-wait", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 } };
	struct ri_run_opts o = { .grace_ms = 1000 };
	const char *config = NULL;
	char path[4096];
	ri_ms wait = RI_NONE;
	json_error_t je;
	json_t *ans = NULL;
	ri_err err = { 0 };
	ri *r;
	int ch, rc, code;

	ri_cli_init(argc, argv);
	while ((ch = getopt_long(argc, argv, "+" RI_COMMON_SHORTOPTS "n", longopts, NULL)) != -1) {
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
			if ((o.intent_data = json_loads(optarg, 0, &je)) == NULL || !json_is_object(o.intent_data))
				ri_die(RI_USAGE, "--intent-data: expected a JSON object");
			break;
		}
	}
	if (o.kind == NULL || o.act_key == NULL || o.actor == NULL || optind >= argc)
		ri_usage(usage);
	o.argv = argv + optind;
	/* a command that cannot run never opens an act: 127, nothing written */
	if ((rc = ri_run_resolve(o.argv[0], path, sizeof path, &err)) != RI_OK)
		ri_die(rc, "%s", err.msg);
	o.path = path;
	struct ri_watchdog w;
	if ((rc = ri_watchdog_start(&w, &err)) != RI_OK)
		ri_die(rc, "%s", err.msg);
	if ((rc = ri_instance_open(config, RI_WRITER, &r, &err)) != RI_OK) {
		/* the journal cannot be opened: ri-run's position is Open's --
		 * journal-unavailable, and the command never runs */
		if (rc != RI_JOURNAL_UNAVAILABLE && rc != RI_INTEGRITY)
			ri_die(rc, "%s", err.msg);
		ans = json_pack("{s:s}", "refused", "journal-unavailable");
		if (rc == RI_INTEGRITY)
			json_object_set_new(ans, "cause", json_string("integrity"));
		json_decref(o.intent_data);
		ri_watchdog_end(&w);
		return ri_cli_finish(RI_JOURNAL_UNAVAILABLE, ans, &err);
	}
	ri_cli_set_wait(r, wait);
	rc = ri_run(r, &o, &w, &ans, &code, &err);
	ri_watchdog_end(&w);
	ri_instance_close(r);
	json_decref(o.intent_data);
	ri_cli_finish(rc, ans, &err);
	return code >= 0 ? code : rc;
}
