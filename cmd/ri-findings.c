/* ri-findings -- list the findings register as JSON lines (ri-findings(1)). */
#include "cli.h"
#include "findings.h"
#include "instance.h"

static const char usage[] = "ri-findings [-c config] [--open] [--kind KIND]";

static json_t *
instant_or_null(ri_ms t)
{
	return t == RI_NONE ? json_null() : ri_json_instant(t);
}

static json_t *
str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

struct seen {
	int64_t unverified, first;
};

static int
print_row(const struct ri_finding_row *f, void *arg)
{
	json_t *detail = f->detail ? json_loads(f->detail, 0, NULL) : NULL;
	struct seen *seen = arg;
	json_t *j = json_pack("{s:s, s:s, s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:b, s:o, s:s, s:o}",
	    "finding", f->finding, "scope", f->scope, "kind", str_or_null(f->kind),
	    "act_key", str_or_null(f->act_key), "invocation_id", str_or_null(f->invocation_id),
	    "first_seen", f->first_seen, "first_seen_at", instant_or_null(f->first_seen_at),
	    "last_seen", str_or_null(f->last_seen), "last_seen_at", instant_or_null(f->last_seen_at),
	    "closed", f->closed_at != RI_NONE, "closed_at", instant_or_null(f->closed_at),
	    "run_id", f->run_id, "detail", detail ? detail : json_object());

	/* every row says whether its MAC verifies under the register's key */
	json_object_set_new(j, "verified", json_boolean(f->verified));
	if (!f->verified && seen->unverified++ == 0)
		seen->first = f->id;
	ri_cli_print(j);
	json_decref(j);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS,
		{ "open", no_argument, NULL, 'o' },
		{ "kind", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 } };
	const char *config = NULL, *kind = NULL;
	bool open_only = false;
	struct ri_findings *f;
	ri_err err = { 0 };
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
	/* the register's rows are verified under a key derived from the
	 * integrity key: a row that fails is shown "verified": false, and the
	 * command fails closed (30) */
	if ((rc = ri_instance_key(r, &err)) == RI_OK &&
	    (rc = ri_findings_open(r->cfg->findings, true, &f, &err)) == RI_OK) {
		struct seen seen = { 0, 0 };
		rc = ri_findings_each(f, open_only, kind, print_row, &seen, &err);
		ri_findings_close(f);
		if (rc == RI_OK && seen.unverified > 0)
			rc = ri_fail(&err, RI_INTEGRITY, "findings register %s: %lld rows fail their MAC (first: row %lld):"
			    " forged or altered, never evidence", r->cfg->findings, (long long)seen.unverified,
			    (long long)seen.first);
	}
	ri_instance_close(r);
	return ri_cli_finish(rc, NULL, &err);
}
