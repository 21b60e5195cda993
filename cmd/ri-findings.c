/* ri-findings -- list the findings register as JSON lines (or text, or
 * just say whether anything is open); an act finding stands while its act
 * needs someone (ri-findings(1)). */
#include "cli.h"
#include "instance.h"
#include "operator.h"

static const char usage[] = "ri-findings [-c config] [--open] [--kind KIND] [--text | --check]";

int
main(int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS,
		{ "open", no_argument, NULL, 'o' },
		{ "kind", required_argument, NULL, 'k' },
		{ "text", no_argument, NULL, 't' },
		{ "check", no_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 } };
	const char *config = NULL, *kind = NULL;
	bool open_only = false, text = false, check = false, warn;
	struct ri_list_counts n = { 0 };
	ri_err err = { 0 }, jerr = { 0 };
	ri *r;
	int ch, rc;

	ri_cli_init(argc, argv);
	while ((ch = getopt_long(argc, argv, RI_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		if (ri_cli_common(ch, optarg, &config, usage))
			continue;
		if (ch == 'o')
			open_only = true;
		else if (ch == 'k')
			kind = optarg;
		else if (ch == 't')
			text = true;
		else if (ch == 'C')
			check = true;
	}
	if (optind != argc)
		ri_usage(usage);
	if (text && check) {
		ri_warnx("--text and --check: give one of them");
		ri_usage(usage);
	}
	if ((rc = ri_instance_open(config, RI_CONFIG_ONLY, &r, &err)) != RI_OK)
		ri_die(rc, "%s", err.msg);
	/* the register is its own file, readable through a journal outage */
	(void)ri_instance_attach(r, RI_READONLY, &jerr);
	/* --check: is anything open? (issue 41, point 6) -- printed nowhere */
	rc = ri_findings_list(r, open_only || check, kind, check ? RI_LIST_NONE : text ? RI_LIST_TEXT : RI_LIST_JSON,
	    &n, &warn, &err);
	if (warn)
		ri_warnx("act findings as the register holds them -- the journal cannot be read: %s", jerr.msg);
	/* a kind neither bound nor named by any finding is a typo, never "no
	 * findings" (issue 41, point 6) */
	if (rc == RI_OK && kind != NULL && n.named == 0 && ri_config_kind(r->cfg, kind) == NULL)
		rc = ri_fail(&err, RI_USAGE, "--kind %s: no such kind -- the config binds none by that name and"
		    " no finding names it", kind);
	if (rc == RI_OK && check && n.shown > 0)
		rc = ri_fail(&err, RI_CHECK_FAILED, "%zu finding%s open%s (ri-findings --open --text lists %s)",
		    n.shown, n.shown == 1 ? "" : "s", kind != NULL ? " for that kind" : "",
		    n.shown == 1 ? "it" : "them");
	ri_instance_close(r);
	return ri_cli_finish(rc, NULL, &err);
}
