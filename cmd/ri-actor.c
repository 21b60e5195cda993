/* ri-actor -- register, revoke and list the actors of Actor Identity.
 * The credential is printed (or written to a 0600 file) once; the journal
 * keeps only a keyed BLAKE2b hash of it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "cli/cli.h"
#include "protocol/instance.h"

static const char usage[] =
	"ri-actor [-c config] add NAME [--service] [--credential-file FILE]\n"
	"       ri-actor [-c config] revoke NAME\n"
	"       ri-actor [-c config] list";

static int
store_code(struct ri *r, int st, ri_err *err)
{
	const char *msg = r->st->ops->error(r->st)->msg;

	switch (st) {
	case RI_ST_EXISTS:
		ri_cli_print_refusal(json_pack("{s:s, s:s}", "refused", "invalid-request", "cause", "actor-exists"));
		return ri_fail(err, RI_INVALID_REQUEST, "%s", msg);
	case RI_ST_INVALID_REQUEST:
		ri_cli_print_refusal(json_pack("{s:s, s:s}", "refused", "invalid-request", "cause", "malformed"));
		return ri_fail(err, RI_INVALID_REQUEST, "%s", msg);
	case RI_ST_NOT_KNOWN:
		ri_cli_print_refusal(json_pack("{s:s}", "refused", "not-known"));
		return ri_fail(err, RI_NOT_KNOWN, "%s", msg);
	case RI_ST_STEP2:
	case RI_ST_STEP3:
	case RI_ST_READONLY:
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "%s", msg);
	default:
		return ri_store_code(r, st, err);
	}
}

static int
add(struct ri *r, const char *name, bool service, const char *file, json_t **ans, ri_err *err)
{
	char cred[128];
	int fd = -1, st;

	if (file != NULL) {
		/* claim the file first: a refusal then leaves no actor behind */
		fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return ri_fail(err, errno == EEXIST ? RI_USAGE : RI_CONFIG, "%s: %s", file,
			    errno == EEXIST ? "already exists; refusing to overwrite" : strerror(errno));
	}
	if ((st = r->st->ops->actor_add(r->st, name, service, cred)) != RI_ST_OK) {
		if (fd >= 0) {
			close(fd);
			unlink(file);
		}
		return store_code(r, st, err);
	}
	if (fd >= 0) {
		size_t n = strlen(cred);
		cred[n] = '\n';
		bool ok = fchmod(fd, 0600) == 0 && write(fd, cred, n + 1) == (ssize_t)(n + 1) && fsync(fd) == 0;
		cred[n] = '\0';
		close(fd);
		if (!ok) {
			sodium_memzero(cred, sizeof cred);
			return ri_fail(err, RI_CONFIG, "%s: %s (actor %s was added; revoke it)", file,
			    strerror(errno), name);
		}
		*ans = json_pack("{s:s}", "actor_ref", name);
	} else {
		*ans = json_pack("{s:s, s:s}", "actor_ref", name, "credential", cred);
	}
	sodium_memzero(cred, sizeof cred);
	return RI_OK;
}

static int
list(struct ri *r, ri_err *err)
{
	struct ri_actor *v;
	size_t n;
	int st;

	if ((st = r->st->ops->actor_list(r->st, &v, &n)) != RI_ST_OK)
		return store_code(r, st, err);
	for (size_t i = 0; i < n; i++) {
		json_t *j = json_pack("{s:s, s:s, s:o, s:o}", "actor_ref", v[i].actor_ref,
		    "type", v[i].service ? "service" : "human",
		    "created_at", ri_json_instant(v[i].created_at),
		    "revoked_at", v[i].revoked_at == RI_NONE ? json_null() : ri_json_instant(v[i].revoked_at));
		ri_cli_print(j);
		json_decref(j);
	}
	ri_actors_free(v, n);
	return RI_OK;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS,
		{ "service", no_argument, NULL, 's' },
		{ "credential-file", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 } };
	const char *config = NULL, *file = NULL, *verb;
	bool service = false;
	struct ri *r;
	json_t *ans = NULL;
	ri_err err = { 0 };
	int ch, rc;

	ri_cli_init(argc, argv);
	while ((ch = getopt_long(argc, argv, RI_COMMON_SHORTOPTS "sf:", longopts, NULL)) != -1) {
		if (ri_cli_common(ch, optarg, &config, usage))
			continue;
		if (ch == 's')
			service = true;
		else if (ch == 'f')
			file = optarg;
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		ri_usage(usage);
	verb = argv[0];
	if (!((strcmp(verb, "add") == 0 && argc == 2) || (strcmp(verb, "revoke") == 0 && argc == 2) ||
	    (strcmp(verb, "list") == 0 && argc == 1)))
		ri_usage(usage);
	if ((service || file) && strcmp(verb, "add") != 0)
		ri_usage(usage);
	if ((rc = ri_instance_open(config, strcmp(verb, "list") == 0 ? RI_READONLY : 0, &r, &err)) != RI_OK)
		ri_die(rc, "%s", err.msg);
	if (strcmp(verb, "add") == 0) {
		rc = add(r, argv[1], service, file, &ans, &err);
	} else if (strcmp(verb, "revoke") == 0) {
		int st = r->st->ops->actor_revoke(r->st, argv[1]);
		rc = st == RI_ST_OK ? RI_OK : store_code(r, st, &err);
		if (rc == RI_OK)
			ans = json_pack("{s:s, s:b}", "actor_ref", argv[1], "revoked", 1);
	} else {
		rc = list(r, &err);
	}
	ri_instance_close(r);
	return ri_cli_finish(rc, ans, &err);
}
