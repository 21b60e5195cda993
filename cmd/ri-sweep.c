/* ri-sweep -- one run of the sweep: close what dead invocations left open,
 * from what the store re-derives (ri-sweep(1)).  Run it at every restart
 * and on the reconciliation cadence, from cron or a systemd timer. */
#include <unistd.h>

#include "cli.h"
#include "sweep.h"

static const char usage[] = "ri-sweep [-c config] [--node NAME] [--quiet]";

int
main(int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS,
		{ "node", required_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 } };
	struct ri_sweep_opts o = { 0 };
	const char *config = NULL;
	json_t *ans = NULL;
	ri_err err = { 0 };
	ri *r;
	int ch, rc;

	ri_cli_init(argc, argv);
	while ((ch = getopt_long(argc, argv, RI_COMMON_SHORTOPTS "q", longopts, NULL)) != -1) {
		if (ri_cli_common(ch, optarg, &config, usage))
			continue;
		if (ch == 'n')
			o.node = optarg;
		else if (ch == 'q')
			o.quiet = true;
	}
	if (optind != argc)
		ri_usage(usage);
	o.progress = !o.quiet;
	if ((rc = ri_instance_open(config, RI_WRITER | RI_SWEEPER, &r, &err)) != RI_OK) {
		/* reconcile 1: an unreachable journal is journal-unavailable, and
		 * the register still records the outage */
		if (rc == RI_JOURNAL_UNAVAILABLE || rc == RI_INTEGRITY)
			rc = ri_sweep_outage(config, &ans, &err);
		if (ans == NULL)
			ri_die(rc, "%s", err.msg);
		return ri_cli_finish(rc, ans, &err);
	}
	rc = ri_sweep(r, &o, &ans, &err);
	ri_instance_close(r);
	/* --quiet: a clean run says nothing -- cron mails, and a person reads,
	 * only a run that failed, was degraded, alerted or escalated */
	if (o.quiet && rc == RI_OK && json_object_get(ans, "alert") == NULL &&
	    json_integer_value(json_object_get(ans, "escalated")) == 0) {
		json_decref(ans);
		return RI_OK;
	}
	return ri_cli_finish(rc, ans, &err);
}
