/* ri-seal -- sign the journal's head with the seal key and append the
 * seal, so an auditor holding only the public key can verify the chain up
 * to it (ri-seal(1)).  ri-sweep seals after every run. */
#include "audit.h"
#include "cli.h"

static const char usage[] = "ri-seal [-c config]";

int
main(int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS, { NULL, 0, NULL, 0 } };
	const char *config = NULL;
	json_t *ans = NULL;
	ri_err err = { 0 };
	ri *r;
	int ch, rc;

	ri_cli_init(argc, argv);
	while ((ch = getopt_long(argc, argv, RI_COMMON_SHORTOPTS, longopts, NULL)) != -1)
		ri_cli_common(ch, optarg, &config, usage);
	if (optind != argc)
		ri_usage(usage);
	if ((rc = ri_instance_open(config, 0, &r, &err)) != RI_OK)
		ri_die(rc, "%s", err.msg);
	rc = ri_seal(r, &ans, &err);
	ri_instance_close(r);
	return ri_cli_finish(rc, ans, &err);
}
