/* cli.c -- the same options parser and output helpers everywhere. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "instance.h"
#include "util.h"

const char *ri_progname = "ri";

void
ri_cli_init(int argc, char **argv)
{
	const char *p;

	if (argc > 0 && argv[0] != NULL) {
		p = strrchr(argv[0], '/');
		ri_progname = p ? p + 1 : argv[0];
	}
}

void
ri_warnx(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", ri_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void
ri_die(int code, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: ", ri_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

void
ri_usage(const char *usage)
{
	fprintf(stderr, "usage: %s\n", usage);
	exit(RI_USAGE);
}

bool
ri_cli_common(int ch, const char *arg, const char **config, const char *usage)
{
	switch (ch) {
	case 'c':
		*config = arg;
		return true;
	case 'h':
		printf("usage: %s\n", usage);
		exit(RI_OK);
	case 'V':
		printf("%s %s\n", ri_progname, ri_version());
		exit(RI_OK);
	case '?':
	case ':':
		ri_usage(usage);
	default:
		return false;
	}
}

int
ri_cli_request(bool flags_given, size_t max, json_t **req, ri_err *err)
{
	char *text;
	size_t len;
	bool big;
	json_error_t je;

	*req = NULL;
	if (flags_given && isatty(STDIN_FILENO)) {
		*req = json_object();
		return RI_OK;
	}
	if ((text = ri_slurp_fd(STDIN_FILENO, max, &len, &big)) == NULL)
		return ri_fail(err, RI_MALFORMED, "cannot read the request on stdin");
	if (big) {
		free(text);
		return ri_fail(err, RI_MALFORMED, "the request on stdin exceeds %zu bytes", max);
	}
	if (strspn(text, " \t\r\n") == len) {
		free(text);
		if (flags_given) {
			*req = json_object();
			return RI_OK;
		}
		return ri_fail(err, RI_MALFORMED, "expected one JSON object on stdin, got nothing");
	}
	*req = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (*req == NULL)
		return ri_fail(err, RI_MALFORMED, "stdin is not JSON: line %d column %d: %s",
		    je.line, je.column, je.text);
	if (!json_is_object(*req)) {
		json_decref(*req);
		*req = NULL;
		return ri_fail(err, RI_MALFORMED, "expected one JSON object on stdin");
	}
	return RI_OK;
}

int
ri_cli_flag(json_t *req, const char *field, json_t *value, ri_err *err)
{
	json_t *have = json_object_get(req, field);

	if (have != NULL && !json_equal(have, value)) {
		json_decref(value);
		return ri_fail(err, RI_USAGE, "--%s disagrees with the request's \"%s\"", field, field);
	}
	json_object_set_new(req, field, value);
	return RI_OK;
}

void
ri_cli_print(json_t *ans)
{
	char *s = json_dumps(ans, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));

	if (s != NULL) {
		fputs(s, stdout);
		fputc('\n', stdout);
		free(s);
	}
	fflush(stdout);
}

void
ri_cli_print_refusal(json_t *refusal)
{
	ri_cli_print(refusal);
	json_decref(refusal);
}

int
ri_cli_finish(int code, json_t *ans, const ri_err *err)
{
	if (ans != NULL)
		ri_cli_print(ans);
	if (code != RI_OK && err != NULL && err->msg[0] != '\0')
		ri_warnx("%s", err->msg);
	json_decref(ans);
	return code;
}

#define MAX_SHORTHANDS 16

/* A usage error: 64 with the usage line, or, for a positioned command,
 * its position's answer (Action wiring 1) -- only --help and --version
 * answer otherwise. */
static int
usage_error(const struct ri_cmd *cmd, ri_err *err)
{
	if (cmd->positioned == NULL)
		ri_usage(cmd->usage);
	return ri_fail(err, RI_USAGE, "usage: %s", cmd->usage);
}

int
ri_cmd_main(const struct ri_cmd *cmd, int argc, char **argv)
{
	struct option longopts[MAX_SHORTHANDS + 4] = { RI_COMMON_LONGOPTS };
	const char *config = NULL, *vals[MAX_SHORTHANDS] = { 0 };
	size_t n_sh = 0, base = 3;
	bool flags_given = false;
	json_t *req = NULL, *ans = NULL;
	ri_err err = { 0 };
	ri *r = NULL;
	int ch, rc;

	ri_cli_init(argc, argv);
	for (; cmd->shorthands != NULL && cmd->shorthands[n_sh].flag != NULL && n_sh < MAX_SHORTHANDS; n_sh++)
		longopts[base + n_sh] = (struct option){ cmd->shorthands[n_sh].flag, required_argument,
			NULL, 1000 + (int)n_sh };
	while ((ch = getopt_long(argc, argv, RI_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		if (ch >= 1000 && ch < 1000 + (int)n_sh) {
			vals[ch - 1000] = optarg;
			flags_given = true;
			continue;
		}
		if (ch == '?' || ch == ':') {
			rc = usage_error(cmd, &err);
			goto out;
		}
		ri_cli_common(ch, optarg, &config, cmd->usage);
	}
	if (optind != argc) {
		rc = usage_error(cmd, &err);
		goto out;
	}
	if ((rc = ri_instance_open(config, cmd->open_flags | RI_CONFIG_ONLY, &r, &err)) != RI_OK) {
		if (cmd->positioned == NULL)
			ri_die(rc, "%s", err.msg);
		goto out;
	}
	if ((rc = ri_cli_request(flags_given, ri_request_max(r), &req, &err)) != RI_OK)
		goto out;
	for (size_t i = 0; i < n_sh; i++) {
		json_t *v;
		json_error_t je;

		if (vals[i] == NULL)
			continue;
		if (cmd->shorthands[i].json) {
			if ((v = json_loads(vals[i], JSON_DECODE_ANY, &je)) == NULL) {
				rc = ri_fail(&err, RI_USAGE, "--%s: not JSON: %s", cmd->shorthands[i].flag, je.text);
				goto out;
			}
		} else {
			v = json_string(vals[i]);
		}
		if ((rc = ri_cli_flag(req, cmd->shorthands[i].field, v, &err)) != RI_OK) {
			ri_fail(&err, RI_USAGE, "--%s disagrees with the request's \"%s\"",
			    cmd->shorthands[i].flag, cmd->shorthands[i].field);
			goto out;
		}
	}
	if ((rc = ri_instance_attach(r, cmd->open_flags, &r->unopened)) != RI_OK) {
		/* a key or config problem is 78, with no refusal; a journal that
		 * cannot be opened is answered by the call itself, on its own
		 * position, once the request has been checked */
		if (rc != RI_JOURNAL_UNAVAILABLE && rc != RI_INTEGRITY) {
			err = r->unopened;
			goto out;
		}
	}
	rc = cmd->call(r, req, &ans, &err);
out:
	/* Action wiring 1, Invariant 8: after the commit, every answer carries
	 * its position -- whatever failed, and wherever */
	if (cmd->positioned != NULL)
		rc = cmd->positioned(rc, req, &ans, &err);
	json_decref(req);
	ri_instance_close(r);
	return ri_cli_finish(rc, ans, &err);
}
