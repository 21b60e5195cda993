/* ri-findings -- list the findings register as JSON lines; an act
 * finding stands while its act needs someone (ri-findings(1)). */
#include "cli.h"
#include "instance.h"
#include "operator.h"

static const char usage[] = "ri-findings [-c config] [--open] [--kind KIND]";

int
main(int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS,
		{ "open", no_argument, NULL, 'o' },
		{ "kind", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 } };
	const char *config = NULL, *kind = NULL;
	bool open_only = false, warn;
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
	}
	if (optind != argc)
		ri_usage(usage);
	if ((rc = ri_instance_open(config, RI_CONFIG_ONLY, &r, &err)) != RI_OK)
		ri_die(rc, "%s", err.msg);
	/* the register is its own file, readable through a journal outage */
	(void)ri_instance_attach(r, RI_READONLY, &jerr);
	rc = ri_findings_list(r, open_only, kind, &warn, &err);
	if (warn)
		ri_warnx("act findings as the register holds them -- the journal cannot be read: %s", jerr.msg);
	ri_instance_close(r);
	return ri_cli_finish(rc, NULL, &err);
}
