/* ri-init -- create an instance: integrity key, seal key pair, journal and
 * findings register, each where the config says.  Never overwrites. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "cli.h"
#include "findings.h"
#include "instance.h"
#include "integrity.h"
#include "store_sqlite.h"

static const char usage[] = "ri-init [-c config] | ri-init --example-config";

/* examples/ri.json.example, as the build found it */
static const char example_config[] =
#include "example_config.h"
	;

static char *created[5];
static size_t n_created;

static void
undo(void)
{
	while (n_created > 0)
		unlink(created[--n_created]);
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

int
main(int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS,
		{ "example-config", no_argument, NULL, 'E' }, { NULL, 0, NULL, 0 } };
	const char *config = NULL;
	struct ri *r;
	ri_err err = { 0 };
	unsigned char key[32], pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
	char pkhex[2 * sizeof pk + 2], skhex[2 * sizeof sk + 2], pubpath[4096], inst[33];
	int ch, rc;

	ri_cli_init(argc, argv);
	while ((ch = getopt_long(argc, argv, RI_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		if (ch == 'E') {
			/* a working ri.json to edit (ri.json(5)); touches no file */
			fputs(example_config, stdout);
			return fflush(stdout) == 0 ? RI_OK : RI_INTERNAL;
		}
		ri_cli_common(ch, optarg, &config, usage);
	}
	if (optind != argc)
		ri_usage(usage);
	if ((rc = ri_instance_open(config, RI_CONFIG_ONLY, &r, &err)) != RI_OK)
		ri_die(rc, "%s", err.msg);
	const struct ri_config *c = r->cfg;
	snprintf(pubpath, sizeof pubpath, "%s.pub", c->seal_key_file);
	/* refuse before creating anything, so a refusal leaves no debris */
	const char *paths[] = { c->integrity_key_file, c->seal_key_file, pubpath, c->journal, c->findings };
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
		if (access(paths[i], F_OK) == 0)
			ri_die(RI_USAGE, "%s already exists; refusing to overwrite", paths[i]);

	randombytes_buf(key, sizeof key);
	crypto_sign_keypair(pk, sk);
	ri_hex(pk, sizeof pk, pkhex);
	ri_hex(sk, sizeof sk, skhex);
	strcat(pkhex, "\n");
	strcat(skhex, "\n");
	if ((rc = write_new(c->integrity_key_file, 0600, key, sizeof key, &err)) != RI_OK ||
	    (rc = write_new(c->seal_key_file, 0600, skhex, strlen(skhex), &err)) != RI_OK ||
	    (rc = write_new(pubpath, 0644, pkhex, strlen(pkhex), &err)) != RI_OK)
		goto fail;
	if ((rc = ri_sqlite_create(c, key, sizeof key, inst, &err)) != RI_OK)
		goto fail;
	created[n_created++] = c->journal;
	if ((rc = ri_findings_create(c->findings, &err)) != RI_OK)
		goto fail;
	sodium_memzero(key, sizeof key);
	sodium_memzero(sk, sizeof sk);
	sodium_memzero(skhex, sizeof skhex);
	json_t *ans = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "journal", c->journal,
	    "findings", c->findings, "integrity_key_file", c->integrity_key_file,
	    "seal_key_file", c->seal_key_file, "seal_public_key_file", pubpath, "instance_id", inst);
	rc = ri_cli_finish(RI_OK, ans, NULL);
	ri_instance_close(r);
	return rc;
fail:
	undo();
	sodium_memzero(key, sizeof key);
	sodium_memzero(sk, sizeof sk);
	ri_instance_close(r);
	ri_die(rc, "%s", err.msg);
}
