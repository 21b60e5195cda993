/* ri-seal -- verify every record since the previous seal, sign the
 * journal's head with the seal key, append the seal and its witness line,
 * so an auditor holding only the public key can verify the chain up to it
 * (ri-seal(1)).  ri-sweep seals after every run. */
#include "audit.h"
#include "cli.h"
#include "instance.h"

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
	if ((rc = ri_instance_open(config, 0, &r, &err)) != RI_OK) {
		/* a journal that fails verification is never sealed; the
		 * register records why (AMD-03) */
		ri_err e2;
		if (rc == RI_INTEGRITY && ri_instance_open(config, RI_CONFIG_ONLY, &r, &e2) == RI_OK) {
			if (ri_instance_key(r, &e2) == RI_OK)
				(void)ri_seal_surface(r, err.msg);
			ri_instance_close(r);
			ans = json_pack("{s:s, s:s}", "refused", "journal-unavailable", "cause", "integrity");
			err.code = RI_JOURNAL_UNAVAILABLE;
			return ri_cli_finish(RI_JOURNAL_UNAVAILABLE, ans, &err);
		}
		ri_die(rc, "%s", err.msg);
	}
	rc = ri_seal(r, &ans, &err);
	if (rc != RI_OK && ans != NULL && json_object_get(ans, "cause") != NULL)
		(void)ri_seal_surface(r, r->st->ops->error(r->st)->msg);
	ri_instance_close(r);
	return ri_cli_finish(rc, ans, &err);
}
