/* ri-findings -- list the findings register as JSON lines (or text, or
 * just say whether anything is open); an act finding stands while its act
 * needs someone (ri-findings(1)). */
#include <stdio.h>

#include "cli/cli.h"
#include "protocol/instance.h"
#include "protocol/operator.h"

static const char usage[] = "ri-findings [-c config] [--open] [--kind KIND] [--text | --check]";

/* The detail's most telling field, for a line of text. */
static const char *
detail_word(const json_t *detail, char *buf, size_t n)
{
	static const char *const keys[] = { "cause", "answer", "why", "key", "rule", NULL };

	for (size_t i = 0; keys[i] != NULL; i++) {
		json_t *v = json_object_get(detail, keys[i]);
		if (json_is_string(v)) {
			snprintf(buf, n, "%s: %s", keys[i], json_string_value(v));
			return buf;
		}
	}
	return "";
}

/* --text: one line a finding -- when, what, where, open or closed, why --
 * with the columns a person scans for (ri-findings(1)) */
static void
text_row(const json_t *j, void *arg)
{
	(void)arg;
	char why[512], state[64];
	const char *closed_at = json_string_value(json_object_get(j, "closed_at"));
	json_t *kind = json_object_get(j, "kind"), *act = json_object_get(j, "act_key"),
	    *inv = json_object_get(j, "invocation_id");

	if (closed_at != NULL)
		snprintf(state, sizeof state, "closed %s", closed_at);
	else
		snprintf(state, sizeof state, "OPEN");
	printf("%s  %-26s  %-6s  %s%s%s%s%s  %s%s\n",
	    json_string_value(json_object_get(j, "first_seen_at")),
	    json_string_value(json_object_get(j, "finding")), state,
	    json_is_string(kind) ? json_string_value(kind) : "(instance)",
	    json_is_string(act) ? " " : "", json_is_string(act) ? json_string_value(act) : "",
	    json_is_string(inv) ? " " : "", json_is_string(inv) ? json_string_value(inv) : "",
	    detail_word(json_object_get(j, "detail"), why, sizeof why),
	    json_is_true(json_object_get(j, "verified")) ? "" : "  UNVERIFIED (never evidence)");
}


/* the JSON line (schemas/ri-findings.line.json) */
static void
json_row(const json_t *j, void *arg)
{
	(void)arg;
	ri_cli_print((json_t *)j);
}


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
	rc = ri_findings_list(r, open_only || check, kind, check ? NULL : text ? text_row : json_row, NULL,
	    &n, &warn, &err);
	fflush(stdout);
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
