/* cli.c -- the same options parser and output helpers everywhere. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "protocol/seal.h"
#include "cli/cli.h"
#include "util/clock.h"
#include "util/jsonfast.h"
#include "protocol/instance.h"
#include "util/mem.h"
#include "util/progress.h"
#include "protocol/proto.h"
#include "util/util.h"

static void warn_line(const char *msg);
static void progress_line(const char *line);

void
ri_cli_init(int argc, char **argv)
{
	const char *p;

	/* first: jansson's allocator before any JSON value exists (mem.h) */
	(void)ri_json_mem_install();
	/* the library's diagnostics print as the command's own lines */
	ri_diag_set(warn_line);
	/* the progress line only on a terminal: never in a log or a cron mail */
	if (isatty(STDERR_FILENO))
		ri_progress_set(progress_line);
	if (argc > 0 && argv[0] != NULL) {
		p = strrchr(argv[0], '/');
		ri_progname = p ? p + 1 : argv[0];
	}
}

/* The progress drawer (progress.h): over the last line, or erase it. */
static void
progress_line(const char *line)
{
	if (line != NULL)
		fprintf(stderr, "\r%s\033[K", line);
	else
		fputs("\r\033[K", stderr);
	fflush(stderr);
}

/* ri_cli_stamp: every line on stderr starts with the instant */
static bool stamping;
static const struct ri_config *stamp_cfg;

void
ri_cli_stamp(const struct ri_config *c)
{
	stamping = true;
	stamp_cfg = c;
}

/* The one printer of a line on stderr: ri_warnx, ri_die, and the
 * library's ri_diag (installed at ri_cli_init). */
static void
warn_line(const char *msg)
{
	char safe[4096], loc[4096], at[RI_INSTANT_LEN + 1] = "";

	if (stamping) {
		ri_ms now;
		ri_err e;
		struct timespec ts;
		if (stamp_cfg != NULL && ri_now(stamp_cfg, &now, &e) == RI_OK) {
			ri_format_instant(now, at);
		} else if (clock_gettime(CLOCK_REALTIME, &ts) == 0) {
			ri_format_instant((ri_ms)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, at);
		}
	}
	/* a journal URI's password never reaches a log (issue 40 point 9) */
	fprintf(stderr, "%s%s%s: %s\n", at, at[0] != '\0' ? " " : "", ri_progname,
	    ri_local(ri_redact(msg, safe, sizeof safe), loc, sizeof loc));
}

static void
vwarn_line(const char *fmt, va_list ap)
{
	char msg[4096];

	vsnprintf(msg, sizeof msg, fmt, ap);
	warn_line(msg);
}

void
ri_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn_line(fmt, ap);
	va_end(ap);
}

void
ri_die(int code, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	va_start(ap, fmt);
	vwarn_line(fmt, ap);
	va_end(ap);
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
ri_cli_request(bool flags_given, bool dash, size_t max, json_t **req, ri_err *err)
{
	char *text;
	size_t len;
	bool big;
	json_error_t je;

	*req = NULL;
	/* INTERFACE, second wave: flags read no stdin unless "-" asks, so a
	 * `while read k; do ri-read --kind K --act-key "$k"; done <keys` loop
	 * keeps its stdin */
	if (flags_given && !dash) {
		*req = json_object();
		return RI_OK;
	}
	if (!dash && isatty(STDIN_FILENO))
		return ri_fail(err, RI_USAGE, "stdin is a terminal: pipe the request in (or give \"-\" to"
		    " type it), or give its fields as flags (see --help)");
	if ((text = ri_slurp_fd(STDIN_FILENO, max, &len, &big)) == NULL)
		return ri_fail(err, RI_MALFORMED, "cannot read the request on stdin: %s", strerror(errno));
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
		return ri_fail(err, RI_MALFORMED, "expected one JSON object on stdin, got nothing: pass the"
		    " request on stdin, or give its fields as flags");
	}
	/* ri_json_parse reads what jansson would; jansson parses again only
	 * what that refuses, for its line and column */
	if ((*req = ri_json_parse(text, len)) == NULL)
		*req = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (*req == NULL)
		return ri_fail(err, RI_MALFORMED, "stdin is not JSON (line %d column %d: %s): pass one JSON"
		    " request object on stdin, or give its fields as flags (flags read no stdin without"
		    " \"-\")", je.line, je.column, je.text);
	if (!json_is_object(*req)) {
		json_decref(*req);
		*req = NULL;
		return ri_fail(err, RI_MALFORMED, "expected one JSON object on stdin, not another JSON value");
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
	char *s = ri_json_dumps(ans, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));

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

int
ri_cli_finish_to(int fd, int code, json_t *ans, const ri_err *err)
{
	char *s = NULL;

	if (fd >= 0 && ans != NULL &&
	    (s = ri_json_dumps(ans, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17))) != NULL) {
		size_t len = strlen(s), off = 0;
		s[len] = '\n';                  /* its NUL: the text is written by length */
		while (off <= len) {
			ssize_t n = write(fd, s + off, len + 1 - off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				ri_warnx("cannot write the answer to descriptor %d: %s", fd, strerror(errno));
				break;
			}
			off += (size_t)n;
		}
		free(s);
	}
	if (code != RI_OK && err != NULL && err->msg[0] != '\0')
		ri_warnx("%s", err->msg);
	json_decref(ans);
	return code;
}

#define MAX_SHORTHANDS 16
#define OPT_WAIT 900
#define OPT_NOWAIT 901
#define OPT_TEXT 902

ri_ms
ri_cli_wait(const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (end == arg || *end != '\0' || errno != 0 || !isfinite(v) || v < 0 || v > 86400.0 * 365)
		return -1;
	return (ri_ms)(v * 1000.0 + 0.5);
}

void
ri_cli_set_wait(ri *r, ri_ms wait_ms)
{
	if (r == NULL || r->st == NULL)
		return;
	r->st->take_bounded = wait_ms != RI_NONE;
	r->st->take_wait = wait_ms == RI_NONE ? 0 : wait_ms;
}

/* A usage error: 64 with the usage line, or, for a positioned command,
 * its position's answer (Action wiring 1) -- only --help and --version
 * answer otherwise. */
static int
usage_error(const struct ri_cmd *cmd, ri_err *err, const char *why)
{
	if (cmd->positioned == NULL) {
		if (why != NULL)
			ri_warnx("%s", why);
		ri_usage(cmd->usage);
	}
	if (why != NULL)
		return ri_fail(err, RI_USAGE, "%s; usage: %s", why, cmd->usage);
	return ri_fail(err, RI_USAGE, "usage: %s", cmd->usage);
}

/* A shorthand's value as JSON. */
static json_t *
shorthand_value(const struct ri_shorthand *sh, const char *arg, ri_err *err)
{
	json_error_t je;
	json_t *v;

	if (!sh->json)
		return json_string(arg);
	if ((v = json_loads(arg, JSON_DECODE_ANY, &je)) == NULL)
		ri_fail(err, RI_USAGE, "--%s: not JSON: %s", sh->flag, je.text);
	return v;
}

int
ri_cmd_main(const struct ri_cmd *cmd, int argc, char **argv)
{
	struct option longopts[MAX_SHORTHANDS + 7] = { RI_COMMON_LONGOPTS };
	const char *config = NULL;
	json_t *vals[MAX_SHORTHANDS] = { 0 };
	size_t n_sh = 0, base = 3;
	bool flags_given = false, dash = false, text = false;
	char **rest = NULL;
	int n_rest = 0;
	json_t *req = NULL, *ans = NULL;
	ri_err err = { 0 };
	ri_ms wait = RI_NONE;
	ri *r = NULL;
	int ch, rc;

	ri_cli_init(argc, argv);
	for (; cmd->shorthands != NULL && cmd->shorthands[n_sh].flag != NULL && n_sh < MAX_SHORTHANDS; n_sh++)
		longopts[base + n_sh] = (struct option){ cmd->shorthands[n_sh].flag, required_argument,
			NULL, 1000 + (int)n_sh };
	size_t at = base + n_sh;
	if (cmd->features & RI_CMD_WAIT) {
		longopts[at++] = (struct option){ "wait", required_argument, NULL, OPT_WAIT };
		longopts[at++] = (struct option){ "no-wait", no_argument, NULL, OPT_NOWAIT };
	}
	if (cmd->text != NULL)
		longopts[at++] = (struct option){ "text", no_argument, NULL, OPT_TEXT };
	while ((ch = getopt_long(argc, argv, (cmd->features & RI_CMD_WAIT) ? RI_COMMON_SHORTOPTS "n" :
	    RI_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		if (ch >= 1000 && ch < 1000 + (int)n_sh) {
			const struct ri_shorthand *sh = &cmd->shorthands[ch - 1000];
			json_t *v = shorthand_value(sh, optarg, &err);
			flags_given = true;
			if (v == NULL) {
				rc = RI_USAGE;
				goto out;
			}
			if (sh->many) {
				if (vals[ch - 1000] == NULL)
					vals[ch - 1000] = json_array();
				json_array_append_new(vals[ch - 1000], v);
			} else {
				json_decref(vals[ch - 1000]);
				vals[ch - 1000] = v;
			}
			continue;
		}
		if (ch == OPT_WAIT || ch == 'n') {
			if (ch == 'n')
				wait = 0;
			else if ((wait = ri_cli_wait(optarg)) < 0) {
				rc = usage_error(cmd, &err, "--wait: expected seconds, a non-negative number");
				goto out;
			}
			continue;
		}
		if (ch == OPT_NOWAIT) {
			wait = 0;
			continue;
		}
		if (ch == OPT_TEXT) {
			text = true;
			continue;
		}
		if (ch == '?' || ch == ':') {
			rc = usage_error(cmd, &err, NULL);
			goto out;
		}
		ri_cli_common(ch, optarg, &config, cmd->usage);
	}
	/* "-": read the request on stdin even with flags; anything else is
	 * the command's own (ri-resolve's candidates) or a usage error */
	rest = ri_xcalloc((size_t)argc + 1, sizeof *rest);
	for (int i = optind; i < argc; i++) {
		if (strcmp(argv[i], "-") == 0 && !dash)
			dash = true;
		else
			rest[n_rest++] = argv[i];
	}
	if (n_rest > 0 && cmd->fill == NULL) {
		rc = usage_error(cmd, &err, NULL);
		goto out;
	}
	if ((rc = ri_instance_open(config, cmd->open_flags | RI_CONFIG_ONLY, &r, &err)) != RI_OK) {
		if (cmd->positioned == NULL)
			ri_die(rc, "%s", err.msg);
		goto out;
	}
	if ((rc = ri_cli_request(flags_given, dash, ri_request_max(r), &req, &err)) != RI_OK)
		goto out;
	for (size_t i = 0; i < n_sh; i++) {
		if (vals[i] == NULL)
			continue;
		rc = ri_cli_flag(req, cmd->shorthands[i].field, vals[i], &err);
		vals[i] = NULL;
		if (rc != RI_OK) {
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
	ri_cli_set_wait(r, wait);
	if (cmd->fill != NULL && (rc = cmd->fill(r, req, n_rest, rest, &ans, &err)) != RI_OK)
		goto out;
	rc = cmd->call(r, req, &ans, &err);
	/* a request from flags alone that lacks a required field lacks a flag:
	 * a usage error naming it, as ri-run's (issue 44, point 10) -- from
	 * stdin it stays the malformed request it is (65) */
	if (rc == RI_MALFORMED && err.missing[0] != '\0' && flags_given && !dash) {
		const char *flag = err.missing;
		for (size_t i = 0; i < n_sh; i++)
			if (strcmp(cmd->shorthands[i].field, err.missing) == 0)
				flag = cmd->shorthands[i].flag;
		json_decref(ans);
		ans = NULL;
		rc = ri_fail(&err, RI_USAGE, "--%s is required (or give the whole request on stdin, with -)", flag);
	}
out:
	/* Action wiring 1, Invariant 8: after the commit, every answer carries
	 * its position -- whatever failed, and wherever */
	if (cmd->positioned != NULL)
		rc = cmd->positioned(rc, req, &ans, &err);
	for (size_t i = 0; i < n_sh; i++)
		json_decref(vals[i]);
	free(rest);
	json_decref(req);
	ri_instance_close(r);
	if (text) {
		/* --text: the answer for people, or nothing on stdout */
		if (rc == RI_OK && ans != NULL)
			cmd->text(ans);
		fflush(stdout);
		json_decref(ans);
		ans = NULL;
	}
	return ri_cli_finish(rc, ans, &err);
}

static int
integrity_refusal(json_t **ans, ri_err *err)
{
	*ans = ri_refusal_unavailable(true);
	err->code = RI_JOURNAL_UNAVAILABLE;
	return RI_JOURNAL_UNAVAILABLE;
}

int
ri_seal_main(const char *usage, int operands, ri_seal_op *op, int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS, { NULL, 0, NULL, 0 } };
	const char *config = NULL;
	json_t *ans = NULL;
	ri_err err = { 0 }, e2;
	ri *r;
	int ch, rc;

	ri_cli_init(argc, argv);
	while ((ch = getopt_long(argc, argv, RI_COMMON_SHORTOPTS, longopts, NULL)) != -1)
		ri_cli_common(ch, optarg, &config, usage);
	if (argc - optind != operands)
		ri_usage(usage);
	if ((rc = ri_instance_open(config, 0, &r, &err)) != RI_OK) {
		if (rc != RI_INTEGRITY)
			ri_die(rc, "%s", err.msg);
		if (ri_instance_open(config, RI_CONFIG_ONLY, &r, &e2) == RI_OK) {
			if (ri_instance_key(r, &e2) == RI_OK)
				(void)ri_seal_surface(r, err.msg);
			ri_instance_close(r);
		}
		rc = integrity_refusal(&ans, &err);
		return ri_cli_finish(rc, ans, &err);
	}
	rc = op(r, operands ? argv[optind] : NULL, &ans, &err);
	if (rc != RI_OK && ans != NULL && json_object_get(ans, "cause") != NULL)
		(void)ri_seal_surface(r, r->st->ops->error(r->st)->msg);
	ri_instance_close(r);
	return ri_cli_finish(rc, ans, &err);
}
