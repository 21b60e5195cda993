/*
 * ri-forge -- TEST-ONLY.  Never installed, never shipped.
 *
 * Appends ONE record through the real substrate (record_action), with no
 * journal fence and none of the protocol's rules: the record is validly
 * chained, MACed and attested, yet may break a protocol rule (an outcome
 * with no intent, a closing under the wrong actor, a second intent with
 * one invocation id, ...).  tests/audit.bats uses it to prove each of
 * ri-audit's checks fails on the journal that violates it.
 *
 *   ri-forge -c CONFIG --action-ref REF --actor A
 *            [--credential-file F] [--act-key K] [--invocation-id I]
 *            --data JSON
 *
 * JSON is the whole payload object.  --act-key and --invocation-id default
 * to the payload's own "act_key" and "invocation_id" (so the header binds
 * what the payload says).  The credential comes from --credential-file,
 * else $RI_CREDENTIAL.  Prints {"event_id","seq"}; exits with the store's
 * answer mapped to ri's codes (0 on success).
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/instance.h"

static const char usage[] =
	"usage: ri-forge -c CONFIG --action-ref REF --actor A [--credential-file F]\n"
	"                [--act-key K] [--invocation-id I] --data JSON\n";

static _Noreturn void
die(int code, const char *msg)
{
	fprintf(stderr, "ri-forge: %s\n", msg);
	exit(code);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "action-ref", required_argument, NULL, 'a' },
		{ "actor", required_argument, NULL, 'A' },
		{ "credential-file", required_argument, NULL, 'f' },
		{ "act-key", required_argument, NULL, 'k' },
		{ "invocation-id", required_argument, NULL, 'i' },
		{ "data", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 } };
	const char *config = NULL, *ref = NULL, *actor = NULL, *cfile = NULL;
	const char *act_key = NULL, *inv = NULL, *data_text = NULL;
	char *cred = NULL;
	json_error_t je;
	ri_err err = { 0 };
	ri *r;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "c:", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': config = optarg; break;
		case 'a': ref = optarg; break;
		case 'A': actor = optarg; break;
		case 'f': cfile = optarg; break;
		case 'k': act_key = optarg; break;
		case 'i': inv = optarg; break;
		case 'd': data_text = optarg; break;
		default: fputs(usage, stderr); return RI_USAGE;
		}
	}
	if (optind != argc || ref == NULL || actor == NULL || data_text == NULL) {
		fputs(usage, stderr);
		return RI_USAGE;
	}
	json_t *data = json_loads(data_text, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(data))
		die(RI_MALFORMED, "--data: not a JSON object");
	if (cfile != NULL) {
		size_t len;
		/* any file a test hands over, a pipe (<(...)) too: ri_slurp
		 * takes regular files only */
		int fd = open(cfile, O_RDONLY | O_CLOEXEC);
		bool big;
		if (fd < 0 || (cred = ri_slurp_fd(fd, 4096, &len, &big)) == NULL || big)
			die(RI_USAGE, "--credential-file: cannot read");
		close(fd);
		while (len > 0 && (cred[len - 1] == '\n' || cred[len - 1] == '\r'))
			cred[--len] = '\0';
	} else if (getenv("RI_CREDENTIAL") != NULL) {
		cred = ri_strdup(getenv("RI_CREDENTIAL"));
	} else {
		die(RI_USAGE, "no credential: --credential-file or $RI_CREDENTIAL");
	}
	if (act_key == NULL)
		act_key = json_is_string(json_object_get(data, "act_key")) ?
		    json_string_value(json_object_get(data, "act_key")) : "";
	if (inv == NULL && json_is_string(json_object_get(data, "invocation_id")))
		inv = json_string_value(json_object_get(data, "invocation_id"));

	if ((rc = ri_instance_open(config, 0, &r, &err)) != RI_OK)
		die(rc, err.msg);
	struct ri_append a = { .action_ref = ref, .act_key = act_key, .invocation_id = inv,
		.actor_ref = actor, .credential = cred, .data = data };
	struct ri_appended out;
	int st = r->st->ops->record_action(r->st, &a, &out);
	if (st == RI_ST_OK)
		printf("{\"event_id\":\"%s\",\"seq\":%lld}\n", out.event_id, (long long)out.seq);
	else
		fprintf(stderr, "ri-forge: record_action answered %d: %s\n", st,
		    r->st->ops->error(r->st)->msg);
	rc = st == RI_ST_OK ? RI_OK : st == RI_ST_INVALID_CREDENTIAL ? RI_INVALID_CREDENTIAL :
	    st == RI_ST_INVALID_REQUEST ? RI_INVALID_REQUEST : RI_INTERNAL;
	ri_instance_close(r);
	json_decref(data);
	free(cred);
	return rc;
}
