/* ri-backup -- a consistent online copy of the journal (SQLite's backup
 * API, its WAL included) into a new file, after a seal, so the copy ends
 * with a witnessed seal (ri-backup(1)).  Never `cp` a live journal. */
#include "audit.h"
#include "cli.h"
#include "instance.h"

static const char usage[] = "ri-backup [-c config] DEST";

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
	if (optind != argc - 1)
		ri_usage(usage);
	if ((rc = ri_instance_open(config, 0, &r, &err)) != RI_OK) {
		if (rc == RI_INTEGRITY) {
			ans = json_pack("{s:s, s:s}", "refused", "journal-unavailable", "cause", "integrity");
			err.code = RI_JOURNAL_UNAVAILABLE;
			return ri_cli_finish(RI_JOURNAL_UNAVAILABLE, ans, &err);
		}
		ri_die(rc, "%s", err.msg);
	}
	rc = ri_backup(r, argv[optind], &ans, &err);
	if (rc != RI_OK && ans != NULL && json_object_get(ans, "cause") != NULL)
		(void)ri_seal_surface(r, r->st->ops->error(r->st)->msg);
	ri_instance_close(r);
	return ri_cli_finish(rc, ans, &err);
}
