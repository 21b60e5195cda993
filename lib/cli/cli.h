/* cli.h -- what every cmd/ri-*.c shares: the program name, err(3)-style
 * messages, common options, the request on stdin, the answer on stdout. */
#ifndef RI_CLI_H
#define RI_CLI_H

#include <getopt.h>
#include "ri.h"
#include "util/util.h"                 /* ri_progname, ri_local */

/* A command's first statement: its name for messages, and jansson's
 * allocator (mem.h) -- so no JSON value may exist before it. */
void ri_cli_init(int argc, char **argv);
/* "ri-open: message" on stderr, then exit(code). */
_Noreturn void ri_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ri_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* For a command cron or a service manager runs (ri-sweep): from now on
 * every line ri_warnx and ri_die write starts with the instant, RFC 3339
 * -- the config's clock seam when c is given, else the system clock --
 * "2026-11-29T10:00:33.000Z ri-sweep: ..." (issue 44, point 3). */
struct ri_config;
void ri_cli_stamp(const struct ri_config *c);

/* Options every command takes: -c/--config FILE, -h/--help, -V/--version. */
#define RI_COMMON_SHORTOPTS "c:hV"
#define RI_COMMON_LONGOPTS \
	{ "config", required_argument, NULL, 'c' }, \
	{ "help", no_argument, NULL, 'h' }, \
	{ "version", no_argument, NULL, 'V' }
/* Handle -c/-h/-V; returns true when ch was one of them. */
bool ri_cli_common(int ch, const char *arg, const char **config, const char *usage);
_Noreturn void ri_usage(const char *usage);

/* The request: exactly one JSON object on stdin, read only when asked --
 * with no shorthand flags, or with "-" among the arguments (INTERFACE,
 * second wave); otherwise {}.  A terminal on stdin when nothing else gives
 * the request is a usage error naming the fix; RI_MALFORMED on anything
 * that is not one JSON object of at most max bytes. */
int ri_cli_request(bool flags_given, bool dash, size_t max, json_t **req, ri_err *err);
/* A shorthand flag fills a request field; a differing stdin value is a
 * usage error (RI_USAGE). */
int ri_cli_flag(json_t *req, const char *field, json_t *value, ri_err *err);

/* Print ans (if any) as one compact line on stdout and, unless code is 0,
 * err->msg on stderr; return code for exit(). */
int ri_cli_finish(int code, json_t *ans, const ri_err *err);
void ri_cli_print(json_t *ans);
/* ri-run's finish: the answer, if any, as one line on descriptor fd (none
 * when fd < 0 -- standard output is the job's), then, unless code is 0,
 * err->msg as one line on stderr; return code. */
int ri_cli_finish_to(int fd, int code, json_t *ans, const ri_err *err);
/* Print a refusal object and release it. */
void ri_cli_print_refusal(json_t *refusal);

/* A protocol command: flags, the request on stdin, one library call, the
 * answer on stdout, the exit code.  Every cmd/ri-*.c that takes a request
 * is this and nothing else. */
struct ri_shorthand {
	const char *flag;               /* "act-key" for --act-key */
	const char *field;              /* "act_key" */
	bool json;                      /* the value is JSON (--intent-data '{...}') */
	bool many;                      /* repeatable: the values gather in an array */
};

/* ri_cmd.features */
#define RI_CMD_WAIT 0x01u               /* --wait SECS and -n bound the take (open step 2.2) */

struct ri_cmd {
	const char *usage;
	const struct ri_shorthand *shorthands;  /* NULL-terminated, or NULL */
	unsigned open_flags;                    /* RI_WRITER, RI_READONLY */
	/* a journal that cannot be opened is answered by call itself, on its
	 * own position (ri_no_journal) */
	int (*call)(ri *r, json_t *req, json_t **ans, ri_err *err);
	/* A call whose every answer carries its position (Action wiring 1,
	 * Invariant 8: ri-close, ri-refuse run after the commit): any failure
	 * before or around the call -- a usage error, an unreadable or changed
	 * config, a malformed request -- is answered on that position.  Given
	 * the code so far (and the request, NULL when none was read), it sets
	 * *ans and returns the code to exit with.  NULL for the others. */
	int (*positioned)(int code, json_t *req, json_t **ans, ri_err *err);
	unsigned features;                      /* RI_CMD_WAIT */
	/* After the shorthands are merged and the journal attached, before
	 * call: complete the request (ri-resolve fills its ids), given the
	 * arguments other than "-".  NULL: any such argument is a usage error.
	 * A code other than RI_OK ends the command with *ans, if set. */
	int (*fill)(ri *r, json_t *req, int argc, char **argv, json_t **ans, ri_err *err);
	/* --text: the success answer for people, printed by this instead of
	 * the JSON line (a refusal prints nothing on stdout then: its line on
	 * stderr says why).  NULL: no --text. */
	void (*text)(const json_t *ans);
};

/* --wait SECS: a non-negative number of seconds (fractions allowed) as ms;
 * -1 when not a number. */
ri_ms ri_cli_wait(const char *arg);
/* Bound the take of r's store to wait_ms (open step 2.2: a wait shorter
 * than the holder's remaining lease is lawful); RI_NONE leaves it at the
 * holder's remaining lease. */
void ri_cli_set_wait(ri *r, ri_ms wait_ms);

int ri_cmd_main(const struct ri_cmd *cmd, int argc, char **argv);

/* ri-seal and ri-backup: OP over the instance, given the one operand
 * (NULL when operands is 0).  A journal that fails verification is never
 * sealed or copied: the register records why (AMD-03) and the answer is
 * journal-unavailable with "cause":"integrity" (15). */
typedef int ri_seal_op(ri *r, const char *operand, json_t **ans, ri_err *err);
int ri_seal_main(const char *usage, int operands, ri_seal_op *op, int argc, char **argv);

#endif
