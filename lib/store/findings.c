/* findings.c -- the findings register: what its two backends share (the
 * register's key, a row's MAC, the keyless exception, a row handed to a
 * reader) and the choice between them -- its own SQLite file
 * (sqlite/findings_sqlite.c), or, on a PostgreSQL journal, a table in the
 * journal's database (pg/findings_pg.c), so one register serves every
 * host of the instance (issue 41 point 5). */
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>            /* the storage types a row's MAC is tagged with */

#include <sodium.h>

#include "store/findings_int.h"
#include "util/nc.h"
#include "util/sha256.h"

const char *
ri_findings_location(const struct ri_config *c)
{
	if (RI_NC(RI_NC_FINDINGS_PER_HOST))
		return c->findings;     /* negative control: each host keeps its own register on PostgreSQL */
	/* issue 41 point 5, one findings register per instance (findings
	 * 1-13): on PostgreSQL every host's sweeps write, and every audit
	 * reads, the register in the journal's own database */
	return ri_backend_shared(ri_journal_backend(c->journal)) ? c->journal : c->findings;
}

/* The register's key, derived from the integrity key (heads.h); set once
 * per process by whoever loaded that key (ri_instance_attach). */
static unsigned char fkey[RI_HASH_LEN];
static bool fkey_set;

void
ri_findings_use_key(const unsigned char *key, size_t keylen)
{
	if (key == NULL) {
		sodium_memzero(fkey, sizeof fkey);
		fkey_set = false;
		return;
	}
	ri_findings_key_derive(key, keylen, fkey);
	fkey_set = true;
}

bool
ri_findings_keyed(void)
{
	return fkey_set;
}

/* The MAC of a row (its columns but the mac), under the register's key:
 * every column with its storage type. */
void
ri_findings_row_mac(const struct ri_fcol *c, unsigned char out[RI_HASH_LEN])
{
	ri_hmac_state st;

	ri_hmac_init_raw(&st, fkey, sizeof fkey);
	ri_hmac_update(&st, (const unsigned char *)"ri finding", 11);
	for (int i = 0; i < RI_FINDINGS_NCOLS - 1; i++) {
		unsigned char tag = (unsigned char)c[i].type, b[8];
		if (c[i].type == SQLITE_INTEGER) {
			uint64_t v = (uint64_t)c[i].i;
			for (int k = 7; k >= 0; k--, v >>= 8)
				b[k] = (unsigned char)(v & 0xff);
			ri_hmac_update(&st, &tag, 1);
			ri_hmac_update(&st, b, 8);
			continue;
		}
		size_t n = c[i].type == SQLITE_NULL ? 0 : c[i].n;
		ri_hmac_update(&st, &tag, 1);
		for (int k = 7; k >= 0; k--)
			b[7 - k] = (unsigned char)((uint64_t)n >> (8 * k));
		ri_hmac_update(&st, b, 8);
		if (n > 0 && c[i].s != NULL)
			ri_hmac_update(&st, c[i].s, n);
	}
	ri_hmac_final(&st, out);
}

bool
ri_findings_row_verified(const struct ri_fcol *c)
{
	unsigned char want[RI_HASH_LEN];
	const struct ri_fcol *mac = &c[RI_FINDINGS_NCOLS - 1];

	if (!fkey_set || mac->type != SQLITE_BLOB || mac->n != RI_HASH_LEN || mac->s == NULL)
		return false;
	ri_findings_row_mac(c, want);
	return sodium_memcmp(want, mac->s, RI_HASH_LEN) == 0;
}

/* A start-gate refusal recorded where the key could not be read carries
 * no MAC at all (ruling, issue 11 follow-up): it is shown unverified and is
 * never evidence, but it is no sign of tampering either.  Stripping a MAC
 * gains a keyless writer nothing it lacks -- the register is unchained, it
 * may delete any row -- and the one finding so treated claims nothing about
 * an act. */
/*
 * The exception is for what a start gate writes, and only that (issue 40
 * point 7): an instance's start-refused row, by "start-gate", naming no act,
 * whose detail is its causes.  And it is bounded: a key outage leaves a
 * row per kind (and one for the instance) for each stretch the key could
 * not be read, never thousands -- past RI_FINDINGS_KEYLESS_MAX such rows in
 * the register, none is excused (ri_findings_each), and every surface
 * that reads the register fails as for forged rows, saying why.
 */
static bool
is_text(const struct ri_fcol *c, const char *want)
{
	return c->type == SQLITE_TEXT && c->s != NULL && c->n == strlen(want) && memcmp(c->s, want, c->n) == 0;
}

bool
ri_findings_row_keyless(const struct ri_fcol *c)
{
	json_t *d;
	bool causes;

	if (c[13].type != SQLITE_NULL || !is_text(&c[1], ri_finding_name(RI_F_START_REFUSED)) ||
	    !is_text(&c[2], "instance") || !is_text(&c[11], "start-gate") || c[12].type != SQLITE_TEXT ||
	    c[12].s == NULL || c[4].type != SQLITE_NULL || c[5].type != SQLITE_NULL)
		return false;
	d = json_loadb((const char *)c[12].s, c[12].n, 0, NULL);
	causes = json_is_object(d) && json_is_object(json_object_get(d, "causes"));
	json_decref(d);
	return causes;
}

/* A start refusal's detail, {"causes": {CAUSE: ENTRY, ...}} (findings 12:
 * one record per standing condition, each cause once): *detail (anything
 * but an object starts afresh) with cause added; false, nothing added,
 * when cause is on it already. */
bool
ri_findings_cause_add(json_t **detail, const char *cause, json_t *entry)
{
	json_t *causes;

	if (!json_is_object(*detail)) {
		json_decref(*detail);
		*detail = json_object();
	}
	if (!json_is_object(causes = json_object_get(*detail, "causes"))) {
		causes = json_object();
		json_object_set_new(*detail, "causes", causes);
	}
	if (json_object_get(causes, cause) != NULL)
		return false;
	json_object_set(causes, cause, entry);
	return true;
}

const char *
ri_finding_name(enum ri_finding f)
{
	static const char *names[] = { "journal-unavailable", "store-unavailable",
		"closure-at-risk", "binding-duplicate", "unbound-kind", "escalated",
		"service-credential-refused", "start-refused", "run-overrun", "run-lock-held" };
	return names[f];
}

/* the keyless exception holds up to its bound, and past it for none */
bool
ri_findings_excused(int64_t keyless)
{
	if (RI_NC(RI_NC_KEYLESS_UNBOUNDED))
		return true;    /* negative control: any number of keyless rows excused */
	return keyless >= 0 && keyless <= RI_FINDINGS_KEYLESS_MAX;
}

static char *
col_str(const struct ri_fcol *c)
{
	char *v;

	if (c->type == SQLITE_NULL || c->s == NULL)
		return NULL;
	v = ri_xmalloc(c->n + 1);
	memcpy(v, c->s, c->n);
	v[c->n] = '\0';
	return v;
}

static ri_ms
col_int(const struct ri_fcol *c)
{
	return c->type == SQLITE_INTEGER ? c->i : RI_NONE;
}

int
ri_findings_emit(const struct ri_fcol *c, bool excused, int (*each)(const struct ri_finding_row *, void *),
    void *arg)
{
	char *t[RI_FINDINGS_NCOLS] = { 0 };
	int rc;

	for (int i = 1; i < RI_FINDINGS_NCOLS - 1; i++)
		t[i] = col_str(&c[i]);
	struct ri_finding_row r = {
		.id = c[0].i, .finding = t[1], .scope = t[2], .kind = t[3], .act_key = t[4],
		.invocation_id = t[5], .first_seen = t[6], .first_seen_at = col_int(&c[7]), .last_seen = t[8],
		.last_seen_at = col_int(&c[9]), .closed_at = col_int(&c[10]), .run_id = t[11], .detail = t[12],
		.verified = ri_findings_row_verified(c) };
	r.keyless = excused && !r.verified && ri_findings_row_keyless(c);
	if (r.finding == NULL || r.scope == NULL || r.first_seen == NULL || r.run_id == NULL) {
		r.finding = r.finding ? r.finding : "";
		r.scope = r.scope ? r.scope : "";
		r.first_seen = r.first_seen ? r.first_seen : "";
		r.run_id = r.run_id ? r.run_id : "";
		r.verified = r.keyless = false;
	}
	rc = each(&r, arg);
	for (int i = 0; i < RI_FINDINGS_NCOLS; i++)
		free(t[i]);
	return rc;
}

int64_t
ri_findings_keyless(struct ri_findings *f)
{
	return f->pg != NULL ? ri_findings_pg_keyless(f->pg) : ri_findings_sq_keyless(f);
}

int
ri_findings_create(const char *path, ri_err *err)
{
	/* on PostgreSQL the register is made with the journal's schema
	 * (open_pg.c, ri_pg_create): nothing to make here */
	if (ri_journal_backend(path) == RI_BACKEND_PG)
		return RI_OK;
	return ri_findings_sq_create(path, err);
}

int
ri_findings_open(const char *path, bool readonly, struct ri_findings **out, ri_err *err)
{
	struct ri_findings_pg *pg;
	int rc;

	*out = NULL;
	if (ri_journal_backend(path) != RI_BACKEND_PG)
		return ri_findings_sq_open(path, readonly, out, err);
	/* issue 41 point 5: the one register of the instance, a table in
	 * the journal's database */
	if ((rc = ri_findings_pg_open(path, readonly, &pg, err)) != RI_OK)
		return rc;
	*out = ri_xcalloc(1, sizeof **out);
	(*out)->pg = pg;
	(*out)->keyless = -1;
	return RI_OK;
}

void
ri_findings_close(struct ri_findings *f)
{
	if (f == NULL)
		return;
	ri_findings_pg_close(f->pg);
	ri_findings_sq_close(f);
	free(f->path);
	free(f);
}

int
ri_findings_act(struct ri_findings *f, enum ri_finding what, const char *kind,
    const char *act_key, const char *invocation_id, const char *by, ri_ms now,
    json_t *detail, ri_err *err)
{
	char *d;
	int rc;

	if (f->pg == NULL)
		return ri_findings_sq_act(f, what, kind, act_key, invocation_id, by, now, detail, err);
	d = detail ? ri_json_canonical(detail) : NULL;
	rc = ri_findings_pg_act(f->pg, what, kind, act_key, invocation_id, by, now, d, err);
	free(d);
	return rc;
}

int
ri_findings_run_begin(struct ri_findings *f, const char *run_id, ri_ms now, ri_err *err)
{
	return f->pg != NULL ? ri_findings_pg_run_begin(f->pg, run_id, now, err) :
	    ri_findings_sq_run_begin(f, run_id, now, err);
}

int
ri_findings_instance(struct ri_findings *f, enum ri_finding what, const char *kind,
    const char *run_id, ri_ms now, json_t *detail, ri_err *err)
{
	char *d;
	int rc;

	if (f->pg == NULL)
		return ri_findings_sq_instance(f, what, kind, run_id, now, detail, err);
	d = detail ? ri_json_canonical(detail) : NULL;
	rc = ri_findings_pg_instance(f->pg, what, kind, run_id, now, d, err);
	free(d);
	return rc;
}

int
ri_findings_refusal(struct ri_findings *f, const char *kind, const char *cause, const char *by,
    ri_ms now, json_t *entry, ri_err *err)
{
	return f->pg != NULL ? ri_findings_pg_refusal(f->pg, kind, cause, by, now, entry, err) :
	    ri_findings_sq_refusal(f, kind, cause, by, now, entry, err);
}

int
ri_findings_close_unseen(struct ri_findings *f, const char *run_id, ri_ms now,
    const char *const *seen, size_t n_seen, ri_err *err)
{
	return f->pg != NULL ? ri_findings_pg_close_unseen(f->pg, now, seen, n_seen, err) :
	    ri_findings_sq_close_unseen(f, run_id, now, seen, n_seen, err);
}

int
ri_findings_each(struct ri_findings *f, bool open_only, const char *kind,
    int (*each)(const struct ri_finding_row *, void *), void *arg, ri_err *err)
{
	return f->pg != NULL ? ri_findings_pg_each(f->pg, open_only, kind, each, arg, err) :
	    ri_findings_sq_each(f, open_only, kind, each, arg, err);
}
