/* ri-startcheck -- may this instance start?  The five conditions of
 * instance start for every kind, with their arithmetic, then the
 * capabilities the protocol needs: lib/protocol/startcheck.c checks, this prints. */
#include <stdio.h>

#include "cli/cli.h"
#include "util/fault.h"
#include "protocol/instance.h"
#include "protocol/startcheck.h"

static const char usage[] = "ri-startcheck [-c config] [--json] [--fault-points]";

static void
print_fault(const char *name, const char *kind, const char *what, void *arg)
{
	(void)arg;
	printf("%s\t%s\t%s\n", name, kind, what);
}

static void
print_text(const struct ri_config *c, json_t *kinds, const struct ri_startcheck *rep)
{
	size_t i, j;
	json_t *k, *cond, *v;

	printf("instance %s\n", c->path);
	char loc[2048];

	json_array_foreach(kinds, i, k) {
		printf("kind %s\n", json_string_value(json_object_get(k, "kind")));
		printf("  job budget under ri-run: %s\n", ri_local(json_string_value(json_object_get(
		    json_object_get(k, "job_budget"), "arithmetic")), loc, sizeof loc));
		/* the walkthrough's arithmetic, x and >= outside a UTF-8 locale */
		json_array_foreach(json_object_get(k, "conditions"), j, cond)
			printf("  condition %lld (%s): %s  %s\n",
			    (long long)json_integer_value(json_object_get(cond, "number")),
			    json_string_value(json_object_get(cond, "rule")),
			    ri_local(json_string_value(json_object_get(cond, "arithmetic")), loc, sizeof loc),
			    json_is_true(json_object_get(cond, "pass")) ? "holds" : "FAILS");
	}
	printf("capabilities\n");
	json_array_foreach(rep->caps, i, v)
		printf("  %-4s %s: %s\n", json_is_true(json_object_get(v, "pass")) ? "ok" : "FAIL",
		    json_string_value(json_object_get(v, "check")),
		    ri_local(json_string_value(json_object_get(v, "message")), loc, sizeof loc));
	json_array_foreach(rep->warnings, i, v)
		printf("warning: %s\n", ri_local(json_string_value(v), loc, sizeof loc));
	printf("%s\n", rep->ok ? "the instance may start" : "the instance must not start");
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS,
		{ "json", no_argument, NULL, 'j' },
		{ "fault-points", no_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 } };
	const char *config = NULL;
	bool as_json = false;
	struct ri *r;
	struct ri_startcheck rep;
	ri_err err = { 0 };
	int ch, rc;

	ri_cli_init(argc, argv);        /* before any JSON value (cli.h) */
	while ((ch = getopt_long(argc, argv, RI_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		if (ri_cli_common(ch, optarg, &config, usage))
			continue;
		if (ch == 'j') {
			as_json = true;
		} else if (ch == 'F') {
			ri_fault_list(print_fault, NULL);
			return RI_OK;
		}
	}
	if (optind != argc)
		ri_usage(usage);
	if ((rc = ri_instance_open(config, RI_CONFIG_ONLY, &r, &err)) != RI_OK)
		ri_die(rc, "%s", err.msg);
	rc = ri_startcheck(r, config, &rep);
	if (as_json) {
		json_t *ans = json_pack("{s:b, s:O, s:O, s:O}", "ok", rep.ok, "kinds", rep.kinds,
		    "capabilities", rep.caps, "warnings", rep.warnings);
		ri_cli_print(ans);
		json_decref(ans);
	} else {
		print_text(r->cfg, rep.kinds, &rep);
	}
	ri_startcheck_free(&rep);
	ri_instance_close(r);
	return rc;
}
