/* ri-audit -- an auditor's pass over a journal: Checks 1.1-8.1 from the
 * records alone (ri-audit(1)).  Opens the journal read-only; never writes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "audit/audit.h"
#include "cli/cli.h"
#include "store/witness.h"
#include "util/config.h"
#include "protocol/instance.h"

static const char usage[] =
	"ri-audit [-c config] [--journal FILE] [--findings FILE] [--witness FILE] [--probe]\n"
	"                [--public-key FILE] [--max-unsealed DURATION] [--expect-head SEQ:HASH|LINE]\n"
	"                [--text] [--html FILE]";

static int
write_html(FILE *f, void *ans)
{
	return ri_audit_html(ans, f);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS,
		{ "probe", no_argument, NULL, 'p' },
		{ "public-key", required_argument, NULL, 'k' },
		{ "expect-head", required_argument, NULL, 'e' },
		{ "journal", required_argument, NULL, 'j' },
		{ "findings", required_argument, NULL, 'f' },
		{ "text", no_argument, NULL, 't' },
		{ "html", required_argument, NULL, 'H' },
		{ "witness", required_argument, NULL, 'w' },
		{ "max-unsealed", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 } };
	struct ri_audit_opts o = { .max_unsealed = RI_NONE };
	const char *config = NULL, *journal = NULL, *witness = NULL, *html = NULL;
	bool text = false, handed = false;
	json_t *ans = NULL;
	ri_err err = { 0 };
	ri *r;
	int ch, rc;

	ri_cli_init(argc, argv);
	while ((ch = getopt_long(argc, argv, RI_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		if (ri_cli_common(ch, optarg, &config, usage))
			continue;
		switch (ch) {
		case 'p': o.probe = true; break;
		case 'k': o.public_key = optarg; break;
		case 'j': journal = optarg; break;
		case 'f': o.findings = optarg; break;
		case 't': text = true; break;
		case 'H': html = optarg; break;
		case 'w': witness = optarg; break;
		case 'm':
			if (ri_parse_duration(optarg, &o.max_unsealed) != RI_OK || o.max_unsealed < 0)
				ri_die(RI_USAGE, "--max-unsealed: expected a duration like \"10m\"");
			break;
		case 'e':
			/* SEQ:HASH, or a seal's line as witness_publish printed it
			 * (issue 39), its logger's prefix and all */
			if (!ri_head_parse(optarg, &o.expect_seq, o.expect_hash))
				ri_die(RI_USAGE, "--expect-head: expected SEQ:HASH (a sequence number and 64 hex digits)"
				    " or a seal line as witness_publish printed it");
			break;
		}
	}
	if (optind != argc)
		ri_usage(usage);
	/* RI_THREADED: the state checks run beside the traversal (ri_audit) */
	if ((rc = ri_instance_open(config, RI_CONFIG_ONLY | RI_THREADED, &r, &err)) != RI_OK) {
		/* an outside auditor is handed a journal, a witness and a public
		 * key -- no config: the bindings the journal records are what its
		 * records are judged by (issue 41) */
		if (rc != RI_CONFIG || journal == NULL || config != NULL || getenv("RI_CONFIG") != NULL ||
		    access(ri_config_path(NULL), F_OK) == 0)
			ri_die(rc, "%s", err.msg);
		if ((rc = ri_instance_from_journal(journal, witness, o.findings, RI_THREADED, &r, &err)) != RI_OK)
			ri_die(rc, "%s", err.msg);
		handed = true;
	}
	if (journal != NULL) {
		/* a file other than the live journal is a copy: it is judged as a
		 * past state of the witnessed history, not against its newest line */
		char *a = realpath(journal, NULL), *b = realpath(r->cfg->journal, NULL);
		/* (one handed to an outside auditor, with no config, is a copy) */
		o.copy = handed || a == NULL || b == NULL || strcmp(a, b) != 0;
		free(a);
		free(b);
		free(r->cfg->journal);
		r->cfg->journal = ri_strdup(journal);
	}
	if (witness != NULL) {
		free(r->cfg->witness);
		r->cfg->witness = ri_strdup(witness);
	}
	/* --public-key: an outside auditor without the integrity key.  The
	 * journal is opened as it is (RI_INSPECT): what is wrong with it is
	 * reported, check by check */
	if ((rc = ri_instance_attach(r, RI_READONLY | RI_INSPECT | RI_SCHEMA_FULL | RI_THREADED | (o.public_key ? RI_NO_KEY : 0),
	    &err)) != RI_OK) {
		ri_instance_close(r);
		ri_die(rc, "%s", err.msg);
	}
	o.progress = true;      /* on stderr, when it is a terminal */
	rc = ri_audit(r, &o, &ans, &err);
	ri_instance_close(r);
	/* --html FILE: the same answer as one page; written whole into a
	 * file no one could plant, then renamed, so a reader never sees half
	 * a report and nothing is written through a link (issue 40 point 4) */
	if (html != NULL && ans != NULL && json_object_get(ans, "checks") != NULL) {
		char why[4400];
		if (ri_replace_file(html, write_html, ans, why, sizeof why) != 0) {
			json_decref(ans);
			ri_die(RI_CONFIG, "--html %s", why);
		}
	}
	if (text && ans != NULL) {
		ri_audit_text(ans, stdout);
		json_decref(ans);
		ans = NULL;
	}
	return ri_cli_finish(rc, ans, &err);
}
