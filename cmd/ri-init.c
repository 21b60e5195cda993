/* ri-init -- create an instance: integrity key, seal key pair, journal,
 * findings register and witness, each where the config says, and the
 * genesis seal.  Never overwrites.  --accept-restore records a restored
 * journal (ri(7): restoring a journal). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "audit/audit.h"
#include "protocol/seal.h"
#include "cli/cli.h"
#include "store/findings.h"
#include "protocol/instance.h"
#include "util/integrity.h"
#include "protocol/migrate.h"
#include "protocol/restore.h"
#include "store/pg/store_pg.h"
#include "store/sqlite/store_sqlite.h"
#include "store/witness.h"

static const char usage[] =
	"ri-init [-c config] [--accept-restore --why TEXT [--expect-head HEAD] [--all-unreconciled] | --migrate]\n"
	"       ri-init --example-config";

/* examples/ri.json.example, as the build found it */
static const char example_config[] =
#include "example_config.h"
	;

static char *created[8];
static size_t n_created;

/* What this run made goes again; a SQLite file (the journal, the
 * findings register) with its sidecars, which are the SQLite backend's
 * business (ri_sqlite_unlink) -- for any other file there are none. */
static void
undo(void)
{
	while (n_created > 0)
		ri_sqlite_unlink(created[--n_created]);
}

static int
write_new(const char *path, mode_t mode, const void *buf, size_t n, ri_err *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);

	if (fd < 0)
		return ri_fail(err, errno == EEXIST ? RI_USAGE : RI_CONFIG, "%s: %s", path,
		    errno == EEXIST ? "already exists; refusing to overwrite" : strerror(errno));
	created[n_created++] = (char *)path;
	if (fchmod(fd, mode) != 0 || write(fd, buf, n) != (ssize_t)n || fsync(fd) != 0) {
		int e = errno;
		close(fd);
		return ri_fail(err, RI_CONFIG, "%s: %s", path, strerror(e));
	}
	close(fd);
	return RI_OK;
}

/* Can path be made?  A directory to make it in, that the caller may
 * write (checked before anything is made: issue 40 point 11). */
static int
creatable(const char *path, ri_err *err)
{
	const char *slash = strrchr(path, '/');
	char dir[4200];
	struct stat sb;

	snprintf(dir, sizeof dir, "%.*s", slash ? (slash == path ? 1 : (int)(slash - path)) : 1, slash ? path : ".");
	if (stat(dir, &sb) != 0)
		return ri_fail(err, RI_CONFIG, "%s: cannot be made: %s: %s", path, dir, strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return ri_fail(err, RI_CONFIG, "%s: cannot be made: %s is not a directory", path, dir);
	if (access(dir, W_OK | X_OK) != 0)
		return ri_fail(err, RI_CONFIG, "%s: cannot be made in %s: %s", path, dir, strerror(errno));
	return RI_OK;
}

/* --accept-restore: the journal at the config's path is a restored copy
 * (behind its witness); verify it, name what it lost from the witness,
 * hold those acts back until their stores are asked again, seal (restore.h,
 * ri(7) "restoring a journal"). */
static int
accept_restore(const char *config, const struct ri_restore_opts *o)
{
	json_t *ans = NULL;
	ri_err err = { 0 };
	ri *r;
	int rc;

	if ((rc = ri_instance_open(config, RI_CONFIG_ONLY, &r, &err)) != RI_OK)
		ri_die(rc, "%s", err.msg);
	/* a witness lost with the journal: with what the operator trusts in
	 * hand, a new one is started (its lines the next epoch's) */
	if (r->cfg->witness != NULL && !ri_witness_is_pg(r->cfg->witness) && access(r->cfg->witness, F_OK) != 0) {
		if (!o->expect && !o->all_unreconciled)
			ri_die(RI_USAGE, "the witness %s is gone: nothing names what the restore lost -- give"
			    " --expect-head with the newest head you trust (a published seal line), or"
			    " --all-unreconciled to hold back every act the journal names until its store is asked"
			    " again", r->cfg->witness);
		if ((rc = ri_witness_create(r->cfg->witness, &err)) != RI_OK) {
			ri_instance_close(r);
			ri_die(rc, "%s", err.msg);
		}
	}
	if ((rc = ri_instance_attach(r, RI_NO_WITNESS | RI_RESTORING | RI_SCHEMA_FULL, &err)) != RI_OK) {
		ri_instance_close(r);
		ri_die(rc, "%s", err.msg);
	}
	rc = ri_accept_restore(r, o, &ans, &err);
	ri_instance_close(r);
	return ri_cli_finish(rc, ans, &err);
}

/* --migrate: the journal of the previous format made this release's, its
 * history kept as written (migrate.h; docs/SHARDS.md). */
static int
migrate(const char *config)
{
	json_t *ans = NULL;
	ri_err err = { 0 };
	ri *r;
	int rc;

	if ((rc = ri_instance_open(config, RI_CONFIG_ONLY, &r, &err)) != RI_OK)
		ri_die(rc, "%s", err.msg);
	rc = ri_migrate(r, &ans, &err);
	ri_instance_close(r);
	return ri_cli_finish(rc, ans, &err);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS,
		{ "example-config", no_argument, NULL, 'E' },
		{ "accept-restore", no_argument, NULL, 'A' },
		{ "why", required_argument, NULL, 'w' },
		{ "expect-head", required_argument, NULL, 'e' },
		{ "all-unreconciled", no_argument, NULL, 'U' },
		{ "migrate", no_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 } };
	struct ri_restore_opts ro = { 0 };
	const char *config = NULL, *why = NULL;
	bool restore = false, migrating = false;
	struct ri *r;
	ri_err err = { 0 };
	unsigned char key[32], pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
	unsigned char inst[RI_INSTANCE_LEN];
	char pktext[256], skhex[2 * sizeof sk + 2], pubpath[4096], insthex[33];
	int ch, rc;
	bool pg_made = false, witness_made = false;

	ri_cli_init(argc, argv);
	while ((ch = getopt_long(argc, argv, RI_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		if (ch == 'E') {
			/* a working ri.json to edit (ri.json(5)); touches no file */
			fputs(example_config, stdout);
			return fflush(stdout) == 0 ? RI_OK : RI_INTERNAL;
		}
		if (ri_cli_common(ch, optarg, &config, usage))
			continue;
		if (ch == 'A')
			restore = true;
		else if (ch == 'w')
			why = optarg;
		else if (ch == 'e') {
			if (!ri_head_parse(optarg, &ro.expect_seq, ro.expect_hash))
				ri_die(RI_USAGE, "--expect-head: expected SEQ:HASH or a seal line as ri-seal published it");
			ro.expect = true;
		} else if (ch == 'U')
			ro.all_unreconciled = true;
		else if (ch == 'M')
			migrating = true;
	}
	if (optind != argc || ((why != NULL || ro.expect || ro.all_unreconciled) && !restore) ||
	    (migrating && restore))
		ri_usage(usage);
	if (migrating)
		return migrate(config);
	if (restore) {
		if (why == NULL || *why == '\0')
			ri_die(RI_USAGE, "--accept-restore needs --why TEXT: who restored the journal, and why, is recorded");
		ro.why = why;
		return accept_restore(config, &ro);
	}
	if ((rc = ri_instance_open(config, RI_CONFIG_ONLY, &r, &err)) != RI_OK)
		ri_die(rc, "%s", err.msg);
	const struct ri_config *c = r->cfg;
	snprintf(pubpath, sizeof pubpath, "%s.pub", c->seal_key_file);
	/* refuse before creating anything, so a refusal leaves no debris:
	 * nothing there already, and somewhere to make each (issue 40 point 11) */
	const char *paths[] = { c->integrity_key_file, c->seal_key_file, pubpath, c->journal,
		ri_findings_location(c), c->witness };
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		if (paths[i] == NULL || ri_journal_is_pg(paths[i]))
			continue;       /* a database is checked when it is connected to */
		if (access(paths[i], F_OK) == 0)
			ri_die(RI_USAGE, "%s already exists; refusing to overwrite", paths[i]);
		if ((rc = creatable(paths[i], &err)) != RI_OK)
			ri_die(rc, "%s", err.msg);
	}

	/* then the files, and the journal last of what can fail on its own: a
	 * step that fails removes everything made before it -- the files, and
	 * what the schema made in a PostgreSQL database -- so a corrected
	 * retry starts from nothing */
	randombytes_buf(key, sizeof key);
	crypto_sign_keypair(pk, sk);
	ri_hex(sk, sizeof sk, skhex);
	snprintf(skhex + 2 * sizeof sk, sizeof skhex - 2 * sizeof sk, "\n");
	if ((rc = write_new(c->integrity_key_file, 0600, key, sizeof key, &err)) != RI_OK ||
	    (rc = write_new(c->seal_key_file, 0600, skhex, strlen(skhex), &err)) != RI_OK)
		goto fail;
	/* on PostgreSQL the register is a table of the journal's schema
	 * (issue 41 point 5), made by ri_pg_create below and removed with it
	 * by undo; else its own file */
	if (!ri_journal_is_pg(ri_findings_location(c))) {
		if ((rc = ri_findings_create(c->findings, &err)) != RI_OK)
			goto fail;
		created[n_created++] = c->findings;
	}
	if (c->witness != NULL) {
		if ((rc = ri_witness_create(c->witness, &err)) != RI_OK)
			goto fail;
		witness_made = true;
	}
	if (ri_journal_is_pg(c->journal)) {
		/* the schema, in an empty database only (refuses a non-empty one) */
		if ((rc = ri_pg_create(c, key, sizeof key, insthex, &err)) != RI_OK)
			goto fail;
		pg_made = true;
	} else {
		if ((rc = ri_sqlite_create(c, key, sizeof key, insthex, &err)) != RI_OK)
			goto fail;
		created[n_created++] = c->journal;
	}
	/* the public key names the instance it seals: ri-audit --public-key
	 * refuses another instance's key */
	sodium_hex2bin(inst, sizeof inst, insthex, strlen(insthex), NULL, NULL, NULL);
	ri_seal_pub_text(pk, inst, pktext, sizeof pktext);
	if ((rc = write_new(pubpath, 0644, pktext, strlen(pktext), &err)) != RI_OK)
		goto fail;
	sodium_memzero(key, sizeof key);
	sodium_memzero(sk, sizeof sk);
	sodium_memzero(skhex, sizeof skhex);
	/* the genesis seal: a journal always ends at or after a seal, and the
	 * witness's first line is it */
	json_t *sealed = NULL;
	if ((rc = ri_instance_attach(r, RI_NO_WITNESS | RI_SCHEMA_FULL, &err)) != RI_OK ||
	    (rc = ri_seal_genesis(r, &sealed, &err)) != RI_OK) {
		json_decref(sealed);
		if (r->st != NULL) {
			r->st->ops->close(r->st);
			r->st = NULL;
		}
		goto fail;
	}
	/* a URI named without its password (issue 40 point 9) */
	char journal[4096], findings[4096], witness[4096];
	json_t *ans = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:{s:O, s:O}}",
	    "journal", ri_redact(c->journal, journal, sizeof journal),
	    "findings", ri_redact(ri_findings_location(c), findings, sizeof findings),
	    "integrity_key_file", c->integrity_key_file,
	    "seal_key_file", c->seal_key_file, "seal_public_key_file", pubpath, "instance_id", insthex,
	    "witness", c->witness ? json_string(ri_redact(c->witness, witness, sizeof witness)) : json_null(),
	    "genesis_seal", "seq", json_object_get(sealed, "seq"), "hash", json_object_get(sealed, "hash"));
	json_decref(sealed);
	rc = ri_cli_finish(RI_OK, ans, NULL);
	ri_instance_close(r);
	return rc;
fail:
	undo();
	if (witness_made) {
		ri_err e2;
		if (ri_witness_remove(c->witness, &e2) != RI_OK)
			ri_warnx("%s", e2.msg);
	}
	if (pg_made) {
		ri_err e2;
		if (ri_pg_drop(c, &e2) != RI_OK)
			ri_warnx("%s", e2.msg);
	}
	sodium_memzero(key, sizeof key);
	sodium_memzero(sk, sizeof sk);
	ri_instance_close(r);
	ri_die(rc, "%s", err.msg);
}
