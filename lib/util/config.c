/* config.c -- ri.json(5): parse, validate and resolve the instance config;
 * the protocol's terms; the five conditions of instance start
 * (Instance start 1-8, Allowance 11). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/config.h"
#include "util/jsonfast.h"

#define PATHBUF 512             /* a JSON path in a message */
#define NAMELEN 64              /* kind and outcome names */
#define NUMBUF 24               /* ri_format_seconds of any ri_ms */

/* Every term is a small multiple of a sum of durations; capping each one
 * keeps the arithmetic of instance start far from overflow. */
#define DURATION_MAX ((ri_ms)365000 * 86400000)
/* Byte caps size buffers; a larger one is a typo, not a deployment. */
#define BYTES_MAX ((int64_t)1 << 30)

#define TIMES "\xc3\x97"        /* U+00D7 MULTIPLICATION SIGN */
#define GE "\xe2\x89\xa5"       /* U+2265 */
#define LE "\xe2\x89\xa4"       /* U+2264 */

/* journal 2, 3: the vocabulary a kind's outcomes may not shadow. */
static const char *const reserved_outcomes[] = {
	"intended", "refused", "recovery_intended", "abandoned", "escalated", NULL
};

static const char *const top_keys[] = {
	"journal", "findings", "integrity_key_file", "seal_key_file", "witness", "witness_publish", "clock",
	"fault_injection", "instance", "kinds", "shards", NULL
};

static const char *const instance_keys[] = {
	"clock_offset_allowance", "reconciliation_cadence", "run_bound",
	"closure_latency", "journal_write_bound", "read_bound",
	"compensation_window", "intent_candidates_cap", "read_cap",
	"reference_length_cap", "payload_cap", "journal_fence", NULL
};

static const char *const kind_keys[] = {
	"outcomes", "repeatable", "completion_bound", "commit_round_trip",
	"probe_round_trip", "retention_period", "commit_fence", "pairing_datum",
	"outcome_envelope", "retry_terminus", "probe", "probe_batch", "service_identity", NULL
};

static const char *const counted_keys[] = { "counted", NULL };
static const char *const identity_keys[] = { "actor_ref", "credential_file", NULL };

static const char *const fence_names[] = { "none", "declared", NULL };
static const char *const clock_names[] = { "system", "env", NULL };
/* Indexed by enum ri_pairing. */
static const char *const pairing_names[] = { "nonce", "now", "none", NULL };

static const struct {
	const char *key;
	size_t off;
	bool zero_ok;           /* a perfect clock needs no allowance */
} instance_durations[] = {
	{ "clock_offset_allowance", offsetof(struct ri_config, clock_offset_allowance), true },
	{ "reconciliation_cadence", offsetof(struct ri_config, reconciliation_cadence), false },
	{ "run_bound", offsetof(struct ri_config, run_bound), false },
	{ "closure_latency", offsetof(struct ri_config, closure_latency), false },
	{ "journal_write_bound", offsetof(struct ri_config, journal_write_bound), false },
	{ "read_bound", offsetof(struct ri_config, read_bound), false },
	{ "compensation_window", offsetof(struct ri_config, compensation_window), false },
};

static const struct {
	const char *key;
	size_t off;
	int64_t min, max;
} instance_counts[] = {
	{ "intent_candidates_cap", offsetof(struct ri_config, intent_candidates_cap), 1, INT32_MAX },
	{ "read_cap", offsetof(struct ri_config, read_cap), 1, INT32_MAX },
	{ "reference_length_cap", offsetof(struct ri_config, reference_length_cap), 8, BYTES_MAX },
	{ "payload_cap", offsetof(struct ri_config, payload_cap), 1024, BYTES_MAX },
};

static const struct {
	const char *key;
	size_t off;
} kind_durations[] = {
	{ "completion_bound", offsetof(struct ri_kind, completion_bound) },
	{ "commit_round_trip", offsetof(struct ri_kind, commit_round_trip) },
	{ "probe_round_trip", offsetof(struct ri_kind, probe_round_trip) },
	{ "retention_period", offsetof(struct ri_kind, retention_period) },
};

static bool
name_char(unsigned char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
	    (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
}

/* Kind and outcome names: they become action refs "<kind>.<outcome>",
 * so no '.', and nothing a shell or a log would mangle. */
static bool
plain_name(const char *s)
{
	size_t n;

	for (n = 0; s[n] != '\0'; n++)
		if (!name_char((unsigned char)s[n]))
			return false;
	return n > 0 && n <= NAMELEN;
}

static bool
in_list(const char *s, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcmp(s, *list) == 0)
			return true;
	return false;
}

/* parent.key, or parent["k e y"] when the key is not a plain name. */
static void
sub(char *dst, const char *parent, const char *key)
{
	json_t *s;
	char *q;

	if (plain_name(key)) {
		snprintf(dst, PATHBUF, "%.400s%s%s", parent, *parent ? "." : "", key);
		return;
	}
	s = json_string(key);
	q = s != NULL ? ri_json_dumps(s, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
	if (q != NULL && strlen(q) > 80)
		snprintf(dst, PATHBUF, "%.400s[%.76s...\"]", parent, q);
	else
		snprintf(dst, PATHBUF, "%.400s[%s]", parent, q != NULL ? q : "\"?\"");
	free(q);
	json_decref(s);
}

static void
idx(char *dst, const char *parent, size_t i)
{
	snprintf(dst, PATHBUF, "%.400s[%zu]", parent, i);
}

static int
check_keys(json_t *obj, const char *parent, const char *const *allowed, ri_err *err)
{
	const char *key;
	json_t *v;
	char p[PATHBUF];

	json_object_foreach(obj, key, v) {
		if (!in_list(key, allowed)) {
			sub(p, parent, key);
			return ri_fail(err, RI_CONFIG, "%s: unknown key", p);
		}
	}
	return RI_OK;
}

/* The member key of obj, its path in p; RI_CONFIG if required and absent. */
static int
member(json_t *obj, const char *parent, const char *key, bool required,
    char *p, json_t **v, ri_err *err)
{
	sub(p, parent, key);
	*v = json_object_get(obj, key);
	if (*v == NULL && required)
		return ri_fail(err, RI_CONFIG, "%s: missing required key", p);
	return RI_OK;
}

static int
want_string(json_t *v, const char *p, const char **out, ri_err *err)
{
	if (!json_is_string(v) || json_string_length(v) == 0 ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return ri_fail(err, RI_CONFIG, "%s: expected a non-empty string", p);
	*out = json_string_value(v);
	return RI_OK;
}

/* dir/rel, or rel when absolute; leading "./" dropped. */
static char *
join(const char *dir, const char *rel)
{
	size_t dl, rl;
	char *s;

	if (rel[0] == '/')
		return ri_strdup(rel);
	while (rel[0] == '.' && rel[1] == '/') {
		rel += 2;
		while (*rel == '/')
			rel++;
	}
	if (*rel == '\0' || strcmp(rel, ".") == 0)
		return ri_strdup(dir);
	dl = strlen(dir);
	rl = strlen(rel);
	if (dl > 0 && dir[dl - 1] == '/')
		dl--;
	s = ri_xmalloc(dl + 1 + rl + 1);
	memcpy(s, dir, dl);
	s[dl] = '/';
	memcpy(s + dl + 1, rel, rl + 1);
	return s;
}

/* The config file's directory, absolute: every relative path in the file
 * means the same file whatever the caller's working directory. */
static char *
config_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char cwd[PATH_MAX], *d, *r;

	if (slash == NULL)
		d = ri_strdup(".");
	else if (slash == path)
		d = ri_strdup("/");
	else {
		d = ri_xmalloc((size_t)(slash - path) + 1);
		memcpy(d, path, (size_t)(slash - path));
		d[slash - path] = '\0';
	}
	if ((r = realpath(d, NULL)) != NULL) {
		free(d);
		return r;
	}
	if (d[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
		return d;
	r = join(cwd, d);
	free(d);
	return r;
}

static int
want_path(json_t *v, const char *p, const char *dir, char **out, ri_err *err)
{
	const char *s;
	int rc;

	if ((rc = want_string(v, p, &s, err)) != RI_OK)
		return rc;
	*out = join(dir, s);
	return RI_OK;
}

/* A string with a unit ("250ms", "30s", "10m", "2h", "400d") or an integer
 * of milliseconds.  A bare numeric string is refused: "30" is ambiguous. */
static int
want_duration(json_t *v, const char *p, bool zero_ok, ri_ms *out, ri_err *err)
{
	const char *s;
	size_t n;
	ri_ms d;

	if (json_is_integer(v)) {
		d = json_integer_value(v);
		if (d < 0)
			goto bad;
	} else if (json_is_string(v)) {
		s = json_string_value(v);
		n = strlen(s);
		if (n != json_string_length(v) || n < 2 ||
		    s[n - 1] < 'a' || s[n - 1] > 'z' ||
		    ri_parse_duration(s, &d) != 0)
			goto bad;
	} else
		goto bad;
	if (d == 0 && !zero_ok)
		return ri_fail(err, RI_CONFIG, "%s: must be greater than zero", p);
	if (d > DURATION_MAX)
		return ri_fail(err, RI_CONFIG, "%s: must not exceed 365000d", p);
	*out = d;
	return RI_OK;
bad:
	return ri_fail(err, RI_CONFIG, "%s: expected a duration like \"30s\"", p);
}

static int
want_count(json_t *v, const char *p, int64_t min, int64_t max, int64_t *out, ri_err *err)
{
	json_int_t n;

	if (!json_is_integer(v) || (n = json_integer_value(v)) < 1)
		return ri_fail(err, RI_CONFIG, "%s: expected a positive integer", p);
	if (n < min)
		return ri_fail(err, RI_CONFIG, "%s: must be at least %lld", p, (long long)min);
	if (n > max)
		return ri_fail(err, RI_CONFIG, "%s: must not exceed %lld", p, (long long)max);
	*out = n;
	return RI_OK;
}

static int
want_bool(json_t *v, const char *p, bool *out, ri_err *err)
{
	if (!json_is_boolean(v))
		return ri_fail(err, RI_CONFIG, "%s: expected true or false", p);
	*out = json_is_true(v);
	return RI_OK;
}

/* One of names; expect is the message's list ("\"none\" or \"declared\""). */
static int
want_enum(json_t *v, const char *p, const char *const *names, const char *expect,
    int *out, ri_err *err)
{
	if (json_is_string(v) &&
	    strlen(json_string_value(v)) == json_string_length(v)) {
		for (int i = 0; names[i] != NULL; i++) {
			if (strcmp(json_string_value(v), names[i]) == 0) {
				*out = i;
				return RI_OK;
			}
		}
	}
	return ri_fail(err, RI_CONFIG, "%s: expected %s", p, expect);
}

static int
want_fence(json_t *v, const char *p, bool *out, ri_err *err)
{
	int i, rc;

	if ((rc = want_enum(v, p, fence_names, "\"none\" or \"declared\"", &i, err)) != RI_OK)
		return rc;
	*out = i == 1;
	return RI_OK;
}

static int
parse_instance(struct ri_config *c, json_t *o, ri_err *err)
{
	char p[PATHBUF];
	json_t *v;
	size_t i;
	int rc;

	if (!json_is_object(o))
		return ri_fail(err, RI_CONFIG, "instance: expected an object");
	if ((rc = check_keys(o, "instance", instance_keys, err)) != RI_OK)
		return rc;
	for (i = 0; i < sizeof instance_durations / sizeof instance_durations[0]; i++) {
		if ((rc = member(o, "instance", instance_durations[i].key, true, p, &v, err)) != RI_OK ||
		    (rc = want_duration(v, p, instance_durations[i].zero_ok,
		    (ri_ms *)(void *)((char *)c + instance_durations[i].off), err)) != RI_OK)
			return rc;
	}
	for (i = 0; i < sizeof instance_counts / sizeof instance_counts[0]; i++) {
		if ((rc = member(o, "instance", instance_counts[i].key, true, p, &v, err)) != RI_OK ||
		    (rc = want_count(v, p, instance_counts[i].min, instance_counts[i].max,
		    (int64_t *)(void *)((char *)c + instance_counts[i].off), err)) != RI_OK)
			return rc;
	}
	if ((rc = member(o, "instance", "journal_fence", false, p, &v, err)) != RI_OK)
		return rc;
	if (v != NULL && (rc = want_fence(v, p, &c->journal_fence, err)) != RI_OK)
		return rc;
	return RI_OK;
}

/* journal 2, 3: the outcomes enumerate <kind>.<outcome>; each is a plain,
 * unique name that no recorded or derived ref of the vocabulary takes. */
static int
parse_outcomes(struct ri_kind *k, json_t *a, const char *p, ri_err *err)
{
	char q[PATHBUF];
	const char *s;
	size_t i, j;

	if (!json_is_array(a) || json_array_size(a) == 0)
		return ri_fail(err, RI_CONFIG, "%s: expected a non-empty array of outcome names", p);
	k->n_outcomes = json_array_size(a);
	k->outcomes = ri_xcalloc(k->n_outcomes, sizeof *k->outcomes);
	for (i = 0; i < k->n_outcomes; i++) {
		idx(q, p, i);
		s = json_string_value(json_array_get(a, i));
		if (s == NULL || strlen(s) != json_string_length(json_array_get(a, i)) ||
		    !plain_name(s))
			return ri_fail(err, RI_CONFIG,
			    "%s: expected an outcome name of A-Z a-z 0-9 _ -, 1 to %d characters",
			    q, NAMELEN);
		if (in_list(s, reserved_outcomes))
			return ri_fail(err, RI_CONFIG,
			    "%s: \"%s\" is a reserved name", q, s);        /* journal 2, 3 */
		for (j = 0; j < i; j++)
			if (strcmp(k->outcomes[j], s) == 0)
				return ri_fail(err, RI_CONFIG,
				    "%s: duplicate outcome \"%s\"", q, s);
		k->outcomes[i] = ri_strdup(s);
	}
	return RI_OK;
}

/* "lease" (the default) or {"counted": N}; either way the lease stays the
 * terminus (retry terminus 3). */
static int
parse_retry(struct ri_kind *k, json_t *v, const char *p, ri_err *err)
{
	char q[PATHBUF];
	json_t *n;
	int rc;

	if (json_is_string(v) && strcmp(json_string_value(v), "lease") == 0 &&
	    json_string_length(v) == 5) {
		k->retry_counted = 0;
		return RI_OK;
	}
	if (!json_is_object(v))
		return ri_fail(err, RI_CONFIG,
		    "%s: expected \"lease\" or {\"counted\": N} with N >= 1", p);
	if ((rc = check_keys(v, p, counted_keys, err)) != RI_OK ||
	    (rc = member(v, p, "counted", true, q, &n, err)) != RI_OK)
		return rc;
	return want_count(n, q, 1, INT32_MAX, &k->retry_counted, err);
}

/* An argv run without a shell (a probe, witness_publish): a relative
 * argv[0] with a '/' means the config's directory; a bare name is left to
 * PATH.  *argv NULL-terminated, *n its length. */
static int
parse_argv(json_t *a, const char *p, const char *dir, char ***argv, size_t *n, ri_err *err)
{
	char q[PATHBUF];
	const char *s;
	size_t i;
	int rc;

	if (!json_is_array(a) || json_array_size(a) == 0)
		return ri_fail(err, RI_CONFIG, "%s: expected a non-empty array of strings", p);
	*n = json_array_size(a);
	*argv = ri_xcalloc(*n + 1, sizeof **argv);
	for (i = 0; i < *n; i++) {
		idx(q, p, i);
		if ((rc = want_string(json_array_get(a, i), q, &s, err)) != RI_OK)
			return rc;
		if (i == 0 && s[0] != '/' && strchr(s, '/') != NULL)
			(*argv)[i] = join(dir, s);
		else
			(*argv)[i] = ri_strdup(s);
	}
	return RI_OK;
}

static int
parse_probe(struct ri_kind *k, json_t *a, const char *p, const char *dir, ri_err *err)
{
	return parse_argv(a, p, dir, &k->probe, &k->n_probe, err);
}

/* null (report-only) or exactly {"actor_ref", "credential_file"}. */
static int
parse_identity(struct ri_kind *k, json_t *v, const char *p, const char *dir, ri_err *err)
{
	char q[PATHBUF];
	const char *s;
	json_t *m;
	int rc;

	if (json_is_null(v))
		return RI_OK;
	if (!json_is_object(v))
		return ri_fail(err, RI_CONFIG,
		    "%s: expected null or {\"actor_ref\": ..., \"credential_file\": ...}", p);
	if ((rc = check_keys(v, p, identity_keys, err)) != RI_OK ||
	    (rc = member(v, p, "actor_ref", true, q, &m, err)) != RI_OK ||
	    (rc = want_string(m, q, &s, err)) != RI_OK)
		return rc;
	k->service_actor = ri_strdup(s);
	if ((rc = member(v, p, "credential_file", true, q, &m, err)) != RI_OK)
		return rc;
	return want_path(m, q, dir, &k->service_credential_file, err);
}

static int
parse_kind(struct ri_kind *k, const char *name, json_t *o, const char *dir, ri_err *err)
{
	char kp[PATHBUF], p[PATHBUF];
	json_t *v;
	size_t i;
	int rc, e;

	sub(kp, "kinds", name);
	/* journal 5: "audit" is the composition's own vocabulary. */
	if (strcmp(name, "audit") == 0)
		return ri_fail(err, RI_CONFIG, "%s: \"audit\" may not be a kind", kp);
	if (!plain_name(name))
		return ri_fail(err, RI_CONFIG,
		    "%s: a kind name is A-Z a-z 0-9 _ -, 1 to %d characters", kp, NAMELEN);
	k->name = ri_strdup(name);
	if (!json_is_object(o))
		return ri_fail(err, RI_CONFIG, "%s: expected an object", kp);
	if ((rc = check_keys(o, kp, kind_keys, err)) != RI_OK)
		return rc;
	if ((rc = member(o, kp, "outcomes", true, p, &v, err)) != RI_OK ||
	    (rc = parse_outcomes(k, v, p, err)) != RI_OK)
		return rc;
	if ((rc = member(o, kp, "repeatable", true, p, &v, err)) != RI_OK ||
	    (rc = want_bool(v, p, &k->repeatable, err)) != RI_OK)
		return rc;
	for (i = 0; i < sizeof kind_durations / sizeof kind_durations[0]; i++) {
		if ((rc = member(o, kp, kind_durations[i].key, true, p, &v, err)) != RI_OK ||
		    (rc = want_duration(v, p, false,
		    (ri_ms *)(void *)((char *)k + kind_durations[i].off), err)) != RI_OK)
			return rc;
	}
	if ((rc = member(o, kp, "commit_fence", true, p, &v, err)) != RI_OK ||
	    (rc = want_fence(v, p, &k->commit_fence, err)) != RI_OK)
		return rc;
	if ((rc = member(o, kp, "pairing_datum", true, p, &v, err)) != RI_OK ||
	    (rc = want_enum(v, p, pairing_names, "\"nonce\", \"now\" or \"none\"", &e, err)) != RI_OK)
		return rc;
	k->pairing_datum = (enum ri_pairing)e;
	if ((rc = member(o, kp, "outcome_envelope", true, p, &v, err)) != RI_OK ||
	    (rc = want_count(v, p, 1, BYTES_MAX, &k->outcome_envelope, err)) != RI_OK)
		return rc;
	if ((rc = member(o, kp, "retry_terminus", false, p, &v, err)) != RI_OK ||
	    (v != NULL && (rc = parse_retry(k, v, p, err)) != RI_OK))
		return rc;
	if ((rc = member(o, kp, "probe", true, p, &v, err)) != RI_OK ||
	    (rc = parse_probe(k, v, p, dir, err)) != RI_OK)
		return rc;
	/* issue 15, target 4: optional, false when absent */
	if ((rc = member(o, kp, "probe_batch", false, p, &v, err)) != RI_OK ||
	    (v != NULL && (rc = want_bool(v, p, &k->probe_batch, err)) != RI_OK))
		return rc;
	if ((rc = member(o, kp, "service_identity", true, p, &v, err)) != RI_OK ||
	    (rc = parse_identity(k, v, p, dir, err)) != RI_OK)
		return rc;
	return RI_OK;
}

static int
parse_kinds(struct ri_config *c, json_t *o, ri_err *err)
{
	const char *name;
	json_t *v;
	size_t i = 0;
	int rc;

	if (!json_is_object(o))
		return ri_fail(err, RI_CONFIG, "kinds: expected an object");
	if (json_object_size(o) == 0)
		return ri_fail(err, RI_CONFIG, "kinds: expected at least one kind");
	c->n_kinds = json_object_size(o);
	c->kinds = ri_xcalloc(c->n_kinds, sizeof *c->kinds);
	json_object_foreach(o, name, v) {
		if ((rc = parse_kind(&c->kinds[i++], name, v, c->dir, err)) != RI_OK)
			return rc;
	}
	return RI_OK;
}

/* "journal" names a PostgreSQL database (a connection URI) rather than a
 * SQLite file: the multi-node backend (store_pg.c, issue 13). */
enum ri_backend_id
ri_journal_backend(const char *journal)
{
	if (journal != NULL && (strncmp(journal, "postgresql://", 13) == 0 ||
	    strncmp(journal, "postgres://", 11) == 0))
		return RI_BACKEND_PG;
	return RI_BACKEND_SQLITE;
}

bool
ri_backend_shared(enum ri_backend_id b)
{
	return b == RI_BACKEND_PG;
}

bool
ri_journal_is_pg(const char *journal)
{
	return ri_journal_backend(journal) == RI_BACKEND_PG;
}

static int
parse_top(struct ri_config *c, json_t *root, ri_err *err)
{
	const struct { const char *key; char **dst; } files[] = {
		{ "journal", &c->journal },
		{ "findings", &c->findings },
		{ "integrity_key_file", &c->integrity_key_file },
		{ "seal_key_file", &c->seal_key_file },
	};
	char p[PATHBUF];
	json_t *v;
	size_t i;
	int rc, e;

	if ((rc = check_keys(root, "", top_keys, err)) != RI_OK)
		return rc;
	for (i = 0; i < sizeof files / sizeof files[0]; i++) {
		if ((rc = member(root, "", files[i].key, true, p, &v, err)) != RI_OK)
			return rc;
		/* a PostgreSQL journal is a connection URI, not a path (issue 13) */
		if (files[i].dst == &c->journal && json_is_string(v) &&
		    ri_journal_is_pg(json_string_value(v))) {
			c->journal = ri_strdup(json_string_value(v));
			continue;
		}
		if ((rc = want_path(v, p, c->dir, files[i].dst, err)) != RI_OK)
			return rc;
	}
	/* the witness (INTERFACE, second wave): a path, default the integrity
	 * key's path + ".witness"; null disables it (ri-startcheck warns) */
	if ((rc = member(root, "", "witness", false, p, &v, err)) != RI_OK)
		return rc;
	if (v == NULL) {
		size_t n = strlen(c->integrity_key_file) + sizeof ".witness";
		c->witness = ri_xmalloc(n);
		snprintf(c->witness, n, "%s.witness", c->integrity_key_file);
	} else if (json_is_string(v) && ri_journal_is_pg(json_string_value(v))) {
		/* a PostgreSQL witness every host shares (issue 39) */
		c->witness = ri_strdup(json_string_value(v));
	} else if (!json_is_null(v) && (rc = want_path(v, p, c->dir, &c->witness, err)) != RI_OK) {
		return rc;
	}
	/* witness_publish (issue 39): a command that receives each seal's
	 * witness line on stdin, so heads leave the host (logger -t ri-seal) */
	if ((rc = member(root, "", "witness_publish", false, p, &v, err)) != RI_OK ||
	    (v != NULL && !json_is_null(v) &&
	    (rc = parse_argv(v, "witness_publish", c->dir, &c->witness_publish, &c->n_witness_publish, err)) != RI_OK))
		return rc;
	if ((rc = member(root, "", "clock", false, p, &v, err)) != RI_OK)
		return rc;
	if (v != NULL) {
		if ((rc = want_enum(v, p, clock_names, "\"system\" or \"env\"", &e, err)) != RI_OK)
			return rc;
		c->clock_env = e == 1;
	}
	if ((rc = member(root, "", "fault_injection", false, p, &v, err)) != RI_OK ||
	    (v != NULL && (rc = want_bool(v, p, &c->fault_injection, err)) != RI_OK))
		return rc;
	/* the journal's shard count, fixed at ri-init (docs/SHARDS.md): the
	 * journal's meta row is what every command reads after that */
	if ((rc = member(root, "", "shards", false, p, &v, err)) != RI_OK)
		return rc;
	if (v != NULL) {
		int64_t n;
		if ((rc = want_count(v, p, 1, 256, &n, err)) != RI_OK)
			return rc;
		c->shards = (int)n;
	}
	if ((rc = member(root, "", "instance", true, p, &v, err)) != RI_OK ||
	    (rc = parse_instance(c, v, err)) != RI_OK)
		return rc;
	if ((rc = member(root, "", "kinds", true, p, &v, err)) != RI_OK ||
	    (rc = parse_kinds(c, v, err)) != RI_OK)
		return rc;
	return RI_OK;
}

int
ri_config_from_json(json_t *root, const char *path, struct ri_config **out, ri_err *err)
{
	struct ri_config *c;
	int rc;

	*out = NULL;
	if (path == NULL)
		path = "ri.json";
	if (!json_is_object(root))
		return ri_fail(err, RI_CONFIG, "%s: expected a JSON object", path);
	c = ri_xcalloc(1, sizeof *c);
	c->path = ri_strdup(path);
	c->dir = config_dir(path);
	if ((rc = parse_top(c, root, err)) != RI_OK) {
		ri_config_free(c);
		return rc;
	}
	*out = c;
	return RI_OK;
}

#define CONFIG_MAX (1024 * 1024)

int
ri_config_load(const char *path, struct ri_config **out, ri_err *err)
{
	json_error_t je;
	json_t *root;
	char why[512];
	FILE *f;
	int fd, rc;

	*out = NULL;
	/* a regular file, or refused at once: a FIFO never hangs a command
	 * (issue 40 point 3), a directory is no config */
	if ((fd = ri_open_regular(path, O_RDONLY, 0, why, sizeof why)) < 0) {
		if (errno == ENOENT)
			return ri_fail(err, RI_CONFIG, "%s: %s -- no config: give -c FILE or set RI_CONFIG"
			    " (ri-init --example-config prints one to edit)", path, strerror(errno));
		return ri_fail(err, RI_CONFIG, "%s", why);
	}
	if ((f = fdopen(fd, "r")) == NULL) {
		int e = errno;
		close(fd);
		return ri_fail(err, RI_CONFIG, "%s: %s", path, strerror(e));
	}
	/* read whole and parsed by ri_json_parse (every command parses its
	 * config: issue 15); jansson parses again only what that refuses, so
	 * a bad config is answered with jansson's line and column, as ever.
	 * A config past CONFIG_MAX is streamed to jansson. */
	{
		size_t len = 0;
		bool too_big = false;
		char *text = ri_slurp_fd(fileno(f), CONFIG_MAX, &len, &too_big);

		/* (freed once, after either branch: ri_slurp_fd returns the
		 * bytes it read even when they are too many) */
		if (text == NULL || too_big) {
			rewind(f);
			root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
		} else if ((root = ri_json_parse(text, len)) == NULL) {
			root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
		}
		free(text);
	}
	fclose(f);
	if (root == NULL)
		return ri_fail(err, RI_CONFIG, "%s:%d:%d: %s", path, je.line, je.column, je.text);
	rc = ri_config_from_json(root, path, out, err);
	json_decref(root);
	return rc;
}

void
ri_kind_free(struct ri_kind *k)
{
	size_t i;

	free(k->name);
	for (i = 0; i < k->n_outcomes; i++)
		free(k->outcomes[i]);
	free(k->outcomes);
	for (i = 0; i < k->n_probe; i++)
		free(k->probe[i]);
	free(k->probe);
	free(k->service_actor);
	free(k->service_credential_file);
}

void
ri_config_free(struct ri_config *c)
{
	size_t i;

	if (c == NULL)
		return;
	free(c->path);
	free(c->dir);
	free(c->journal);
	free(c->findings);
	free(c->integrity_key_file);
	free(c->seal_key_file);
	free(c->witness);
	for (i = 0; i < c->n_witness_publish; i++)
		free(c->witness_publish[i]);
	free(c->witness_publish);
	for (i = 0; i < c->n_kinds; i++)
		ri_kind_free(&c->kinds[i]);
	free(c->kinds);
	free(c);
}

const struct ri_kind *
ri_config_kind(const struct ri_config *c, const char *name)
{
	size_t i;

	if (c == NULL || name == NULL)
		return NULL;
	for (i = 0; i < c->n_kinds; i++)
		if (strcmp(c->kinds[i].name, name) == 0)
			return &c->kinds[i];
	return NULL;
}

const char *
ri_config_path(const char *flag)
{
	const char *env;

	if (flag != NULL && *flag != '\0')
		return flag;
	if ((env = getenv("RI_CONFIG")) != NULL && *env != '\0')
		return env;
	return "ri.json";
}

/* Term sweep lease. */
ri_ms
ri_sweep_lease(const struct ri_config *c)
{
	return c->closure_latency + c->journal_write_bound;
}

/*
 * Term critical section duration: the longest lease this config can grant
 * -- a kind's completion bound (an invocation) or the sweep lease (a run,
 * an operator) -- plus the allowance.  No honest lease row ever expires
 * further ahead than this, so no take waits longer (act section 11).
 */
ri_ms
ri_longest_lease(const struct ri_config *c)
{
	ri_ms m = ri_sweep_lease(c);

	for (size_t i = 0; i < c->n_kinds; i++)
		if (c->kinds[i].completion_bound > m)
			m = c->kinds[i].completion_bound;
	return m + c->clock_offset_allowance;
}

/* Term settle bound. */
ri_ms
ri_settle_bound(const struct ri_config *c)
{
	return c->journal_write_bound + c->clock_offset_allowance;
}

/* Term at risk threshold: Invariant 4 rearranged (reconcile step 5.1). */
ri_ms
ri_at_risk_threshold(const struct ri_config *c)
{
	return c->compensation_window - 2 * c->run_bound -
	    c->reconciliation_cadence - c->clock_offset_allowance;
}

/* findings 2, Binding 6: the longest retention period of any kind. */
ri_ms
ri_longest_retention(const struct ri_config *c)
{
	ri_ms m = 0;
	size_t i;

	for (i = 0; i < c->n_kinds; i++)
		if (c->kinds[i].retention_period > m)
			m = c->kinds[i].retention_period;
	return m;
}

static const char *
secs(ri_ms d, char buf[NUMBUF])
{
	ri_format_seconds(d, buf, NUMBUF);
	return buf;
}

/* Instance start 4: compensation window EXCEEDS worst closure. */
static void
cond_worst_closure(const struct ri_config *c, const struct ri_kind *k, struct ri_condition *o)
{
	char b[6][NUMBUF];

	o->lhs = k->completion_bound + 2 * c->clock_offset_allowance +
	    2 * c->reconciliation_cadence + 3 * c->run_bound;
	o->rhs = c->compensation_window;
	o->pass = o->rhs > o->lhs;
	snprintf(o->arithmetic, sizeof o->arithmetic,
	    "%s + 2" TIMES "%s + 2" TIMES "%s + 3" TIMES "%s = %s s %s %s s",
	    secs(k->completion_bound, b[0]), secs(c->clock_offset_allowance, b[1]),
	    secs(c->reconciliation_cadence, b[2]), secs(c->run_bound, b[3]),
	    secs(o->lhs, b[4]), o->pass ? "<" : GE, secs(o->rhs, b[5]));
}

/* Instance start 5: retention period EXCEEDS window end. */
static void
cond_window_end(const struct ri_config *c, const struct ri_kind *k, struct ri_condition *o)
{
	char b[5][NUMBUF];

	o->lhs = k->completion_bound + c->clock_offset_allowance + c->compensation_window;
	o->rhs = k->retention_period;
	o->pass = o->rhs > o->lhs;
	snprintf(o->arithmetic, sizeof o->arithmetic, "%s + %s + %s = %s s %s %s s",
	    secs(k->completion_bound, b[0]), secs(c->clock_offset_allowance, b[1]),
	    secs(c->compensation_window, b[2]), secs(o->lhs, b[3]),
	    o->pass ? "<" : GE, secs(o->rhs, b[4]));
}

/* Instance start 6: completion bound EXCEEDS lease spend; Allowance 11:
 * either fence pulls the same terminus in, so one allowance, not two. */
static void
cond_lease_spend(const struct ri_config *c, const struct ri_kind *k, struct ri_condition *o)
{
	char b[6][NUMBUF], charge[NUMBUF + 8] = "";
	bool fenced = k->commit_fence || c->journal_fence;
	const char *why;

	if (k->commit_fence && c->journal_fence)
		why = "commit and journal fences declared, one allowance charged";
	else if (k->commit_fence)
		why = "commit fence declared, one allowance charged";
	else if (c->journal_fence)
		why = "journal fence declared, one allowance charged";
	else
		why = "neither fence is declared, so no allowance is charged";
	if (fenced)
		snprintf(charge, sizeof charge, " + %s", secs(c->clock_offset_allowance, b[5]));
	o->lhs = k->completion_bound;
	o->rhs = 2 * c->read_bound + 2 * c->journal_write_bound + k->commit_round_trip +
	    (fenced ? c->clock_offset_allowance : 0);
	o->pass = o->lhs > o->rhs;
	snprintf(o->arithmetic, sizeof o->arithmetic,
	    "%s s %s 2" TIMES "%s + 2" TIMES "%s + %s%s = %s s; %s",
	    secs(o->lhs, b[0]), o->pass ? ">" : LE, secs(c->read_bound, b[1]),
	    secs(c->journal_write_bound, b[2]), secs(k->commit_round_trip, b[3]),
	    charge, secs(o->rhs, b[4]), why);
}

/* Instance start 7: run floor MUST NOT EXCEED run bound; equality passes. */
static void
cond_run_floor(const struct ri_config *c, const struct ri_kind *k, struct ri_condition *o)
{
	char b[6][NUMBUF];
	ri_ms held = c->closure_latency + c->journal_write_bound;

	o->lhs = c->run_bound;
	o->rhs = (k->completion_bound > held ? k->completion_bound : held) + c->closure_latency;
	o->pass = o->rhs <= o->lhs;
	snprintf(o->arithmetic, sizeof o->arithmetic,
	    "%s s %s max(%s, %s + %s) + %s = %s s",
	    secs(o->lhs, b[0]), o->pass ? GE : "<", secs(k->completion_bound, b[1]),
	    secs(c->closure_latency, b[2]), secs(c->journal_write_bound, b[3]),
	    secs(c->closure_latency, b[4]), secs(o->rhs, b[5]));
}

/* Instance start 8: closure latency EXCEEDS closure spend. */
static void
cond_closure_spend(const struct ri_config *c, const struct ri_kind *k, struct ri_condition *o)
{
	char b[5][NUMBUF];

	o->lhs = c->closure_latency;
	o->rhs = c->read_bound + 2 * c->journal_write_bound + k->probe_round_trip;
	o->pass = o->lhs > o->rhs;
	snprintf(o->arithmetic, sizeof o->arithmetic, "%s s %s %s + 2" TIMES "%s + %s = %s s",
	    secs(o->lhs, b[0]), o->pass ? ">" : LE, secs(c->read_bound, b[1]),
	    secs(c->journal_write_bound, b[2]), secs(k->probe_round_trip, b[3]),
	    secs(o->rhs, b[4]));
}

/* Term conditions of instance start: condition n is Instance start n + 3.
 * lhs and rhs are the sides in the order the arithmetic prints them. */
void
ri_conditions(const struct ri_config *c, const struct ri_kind *k, struct ri_condition out[5])
{
	static const struct {
		const char *rule, *name;
		void (*eval)(const struct ri_config *, const struct ri_kind *, struct ri_condition *);
	} conds[5] = {
		{ "Instance start 4", "worst closure < compensation window", cond_worst_closure },
		{ "Instance start 5", "window end < retention period", cond_window_end },
		{ "Instance start 6", "completion bound > lease spend", cond_lease_spend },
		{ "Instance start 7", "run bound " GE " run floor", cond_run_floor },
		{ "Instance start 8", "closure latency > closure spend", cond_closure_spend },
	};

	for (int i = 0; i < 5; i++) {
		memset(&out[i], 0, sizeof out[i]);
		out[i].number = i + 1;
		out[i].rule = conds[i].rule;
		out[i].name = conds[i].name;
		conds[i].eval(c, k, &out[i]);
	}
}

/* Instance start 2, 3: every condition for every kind; the first failure
 * keeps the instance from starting. */
int
ri_conditions_hold(const struct ri_config *c, ri_err *err)
{
	struct ri_condition cs[5];
	size_t i;

	for (i = 0; i < c->n_kinds; i++) {
		ri_conditions(c, &c->kinds[i], cs);
		for (int j = 0; j < 5; j++)
			if (!cs[j].pass)
				return ri_fail(err, RI_CONFIG,
				    "kind %s: condition %d (%s) fails: %s",
				    c->kinds[i].name, cs[j].number, cs[j].rule,
				    cs[j].arithmetic);
	}
	return RI_OK;
}
