/* ri-sweep -- one run of the sweep: close what dead invocations left open,
 * from what the store re-derives (ri-sweep(1)).  Run it at every restart
 * and on the reconciliation cadence, from cron or a systemd timer. */
#include <unistd.h>

#include "cli/cli.h"
#include "protocol/instance.h"
#include "protocol/proto.h"
#include "protocol/sweep.h"

static const char usage[] = "ri-sweep [-c config] [--node NAME] [-q | --quiet] [--rebuild]";

/* --rebuild: the derived state again from a verified traversal (the
 * open-intents index and its accumulator, the tree of scope heads); it
 * refuses on any verification failure (ri-sweep(1)). */
static int
rebuild(ri *r, json_t **ans, ri_err *err)
{
	int st = r->st->ops->rebuild(r->st, ans);

	if (st == RI_ST_OK)
		return RI_OK;
	if (st == RI_ST_INTEGRITY) {
		*ans = ri_refusal_unavailable(true);
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "not rebuilt: %s", r->st->ops->error(r->st)->msg);
	}
	return ri_store_code(r, st, err);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS,
		{ "node", required_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "rebuild", no_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 } };
	bool do_rebuild = false;
	struct ri_sweep_opts o = { 0 };
	const char *config = NULL;
	json_t *ans = NULL;
	ri_err err = { 0 };
	ri *r;
	int ch, rc;

	ri_cli_init(argc, argv);
	/* run by cron or a timer: every line on stderr says when (issue 44,
	 * point 3) -- the system clock until the config is read */
	ri_cli_stamp(NULL);
	while ((ch = getopt_long(argc, argv, RI_COMMON_SHORTOPTS "q", longopts, NULL)) != -1) {
		if (ri_cli_common(ch, optarg, &config, usage))
			continue;
		if (ch == 'n')
			o.node = optarg;
		else if (ch == 'q')
			o.quiet = true;
		else if (ch == 'R')
			do_rebuild = true;
	}
	if (optind != argc)
		ri_usage(usage);
	o.progress = !o.quiet;
	if ((rc = ri_instance_open(config, RI_WRITER | RI_SWEEPER | RI_SCHEMA_FULL, &r, &err)) != RI_OK) {
		/* reconcile 1: an unreachable journal is journal-unavailable, and
		 * the register still records the outage */
		if (rc == RI_JOURNAL_UNAVAILABLE || rc == RI_INTEGRITY)
			rc = ri_sweep_outage(config, &ans, &err);
		if (ans == NULL)
			ri_die(rc, "%s", err.msg);
		return ri_cli_finish(rc, ans, &err);
	}
	ri_cli_stamp(r->cfg);
	rc = do_rebuild ? rebuild(r, &ans, &err) : ri_sweep(r, &o, &ans, &err);
	/* --quiet: a clean run says nothing -- cron mails, and a person reads,
	 * only a run that failed, was degraded, alerted or escalated (exit 3:
	 * an act needs an operator) */
	if (o.quiet && rc == RI_OK && json_object_get(ans, "alert") == NULL &&
	    json_integer_value(json_object_get(ans, "escalated")) == 0) {
		json_decref(ans);
	} else {
		rc = ri_cli_finish(rc, ans, &err);
	}
	ri_cli_stamp(NULL);             /* the config's clock goes with r */
	ri_instance_close(r);
	return rc;
}
