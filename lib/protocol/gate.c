/* gate.c -- the writers' start gate and the caller checks (gate.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>

#include "util/clock.h"
#include "store/findings.h"
#include "protocol/gate.h"
#include "util/integrity.h"
#include "util/nc.h"
#include "protocol/proto.h"

/* The register's clock: the seam, or the system's when the seam cannot
 * be read (a refusal is recorded even then). */
static ri_ms
gate_now(const struct ri_config *c)
{
	struct timespec ts;
	ri_ms now;
	ri_err e;

	if (ri_now(c, &now, &e) == RI_OK)
		return now;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (ri_ms)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
ri_gate_record(const struct ri_config *c, const char *kind, const char *cause, const char *rule,
    const char *msg)
{
	struct ri_findings *f;
	ri_ms now = gate_now(c);
	ri_err e;

	/* Binding 3: the refusal lands on the compliance surface, with the
	 * reason; a register that cannot be written never hides the refusal
	 * itself, which the caller gets either way */
	if (ri_findings_open(ri_findings_location(c), false, &f, &e) != RI_OK) {
		ri_diag("could not record the refusal (%s): %s", cause, e.msg);
		return;
	}
	/* a refusal met before the instance loaded its key (the five
	 * conditions) is still MACed as evidence when the key can be read;
	 * when it cannot, the row stays unverified, as the audit will say */
	unsigned char *key = NULL;
	size_t keylen;
	if (ri_key_load(c->integrity_key_file, &key, &keylen, &e) == RI_OK) {
		ri_findings_use_key(key, keylen);
		sodium_free(key);
	}
	json_t *entry = json_pack("{s:s, s:s, s:o}", "rule", rule, "message", msg, "at",
	    ri_json_instant(now));
	if (ri_findings_refusal(f, kind, cause, "start-gate", now, entry, &e) != RI_OK)
		ri_diag("could not record the refusal (%s): %s", cause, e.msg);
	json_decref(entry);
	ri_findings_close(f);
}

int
ri_gate_conditions(const struct ri_config *c, ri_err *err)
{
	char cause[64];
	int rc;

	if ((rc = ri_conditions_hold(c, err)) == RI_OK)
		return RI_OK;
	for (size_t i = 0; i < c->n_kinds; i++) {
		struct ri_condition cond[5];

		ri_conditions(c, &c->kinds[i], cond);
		for (int j = 0; j < 5; j++) {
			if (cond[j].pass)
				continue;
			snprintf(cause, sizeof cause, "condition-%d", cond[j].number);
			ri_gate_record(c, c->kinds[i].name, cause, cond[j].rule, err->msg);
			return rc;
		}
	}
	ri_gate_record(c, NULL, "conditions", "Instance start 3", err->msg);
	return rc;
}

void
ri_gate_key_refused(const struct ri_config *c, const ri_err *err)
{
	ri_gate_record(c, NULL, "integrity-key", "Instance start 3", err->msg);
}

int
ri_gate_unbound(struct ri *r, ri_ms now, char ***kinds, size_t *n)
{
	char **all;
	size_t m;
	int st;

	*kinds = NULL;
	*n = 0;
	/* Binding 6: the pass is bounded by the longest retention; an intent
	 * older than that is no longer the instance's to answer for */
	if ((st = r->st->ops->open_kinds(r->st, now - ri_longest_retention(r->cfg), &all, &m)) != RI_ST_OK)
		return st;
	for (size_t i = 0; i < m; i++) {
		if (ri_config_kind(r->cfg, all[i]) != NULL)
			free(all[i]);
		else
			all[(*n)++] = all[i];
	}
	if (*n == 0)
		free(all);
	else
		*kinds = all;
	return RI_ST_OK;
}

int
ri_gate_journal(struct ri *r, unsigned flags, ri_err *err)
{
	char why[1024], **unbound;
	size_t n;
	int fd;

	/* Instance start 3 (the capability ri-startcheck names seal-key):
	 * the key that signs is a private file the caller owns, or one shared
	 * with a dedicated group (ri_key_open) */
	if ((fd = ri_key_open(r->cfg->seal_key_file, why, sizeof why)) < 0) {
		ri_fail(err, RI_CONFIG, "the instance must not start: seal key %s", why);
		ri_gate_record(r->cfg, NULL, "seal-key", "Instance start 3", err->msg);
		return RI_CONFIG;
	}
	close(fd);
	if (flags & RI_SWEEPER)
		return RI_OK;   /* the run answers Binding 2 itself (Binding 4-6) */
	/* Binding 2-3: a config that unbinds a kind with an open intent is
	 * refused, with the reason; an unreadable index is the call's own
	 * journal failure, met on its own position */
	if (ri_gate_unbound(r, gate_now(r->cfg), &unbound, &n) != RI_ST_OK || n == 0)
		return RI_OK;
	/* Binding 2 */
	ri_fail(err, RI_CONFIG, "the instance must not start: kind %s is not bound but has open intents:"
	    " bind it again until they are closed", unbound[0]);
	for (size_t i = 0; i < n; i++) {
		char msg[512];
		snprintf(msg, sizeof msg, "kind %s is not bound but has open intents", unbound[i]);
		ri_gate_record(r->cfg, unbound[i], "binding", "Binding 2-3", msg);
	}
	ri_strings_free(unbound, n);
	return RI_CONFIG;
}

int
ri_caller_credential(const struct ri_config *c, const char *from_request, char *buf, size_t n,
    const char **out, ri_err *err)
{
	const char *env, *file;
	char why[1024], *text;
	size_t len;

	*out = NULL;
	if (from_request != NULL) {
		*out = from_request;
		return RI_OK;
	}
	if ((env = getenv("RI_CREDENTIAL")) != NULL && *env != '\0') {
		*out = env;
		return RI_OK;
	}
	if ((file = getenv("RI_CREDENTIAL_FILE")) == NULL || *file == '\0')
		return RI_OK;
	/* a credential file is a key file: the start gate's private file */
	if ((text = ri_secret_read(file, n - 1, &len, why, sizeof why)) == NULL) {
		ri_fail(err, RI_CONFIG, "credential file (RI_CREDENTIAL_FILE) %s", why);
		ri_gate_record(c, NULL, "credential-file", "Instance start 3", err->msg);
		return RI_CONFIG;
	}
	snprintf(buf, n, "%s", text);
	sodium_memzero(text, len);
	free(text);
	*out = buf;
	return RI_OK;
}

/* The intent the caller names: by event id (read_record) or by invocation
 * id (the filtered range read); its actor into actor_out. */
static int
intent_actor(struct ri *r, const char *kind, const char *act_key, const char *inv,
    const char *intent_ev, char *actor_out, size_t n, char *why, size_t wn)
{
	struct ri_record rec;
	struct ri_inv iv;
	const struct ri_record *in = NULL;
	bool have_rec = false, have_inv = false;
	int st;

	if (intent_ev != NULL) {
		st = r->st->ops->read_record(r->st, intent_ev, &rec);
		if (st == RI_ST_OK || st == RI_ST_PURGED) {
			/* a purged intent keeps its header, and the actor in it */
			have_rec = true;
			in = &rec;
			st = RI_ST_OK;
		}
	} else if ((st = ri_inv_read(r, inv, &iv)) == RI_ST_OK) {
		have_inv = true;
		in = iv.intent;
	}
	if (st == RI_ST_OK && (in == NULL || in->role != RI_ROLE_INTENT || in->invocation_id == NULL ||
	    strcmp(in->invocation_id, inv) != 0 || strcmp(in->kind, kind) != 0 ||
	    strcmp(in->act_key, act_key) != 0))
		st = RI_ST_NOT_KNOWN;
	if (st == RI_ST_OK)
		snprintf(actor_out, n, "%s", in->actor_ref);
	else if (st == RI_ST_NOT_KNOWN)
		snprintf(why, wn, "no intent %s of (%s, %s) names invocation %s", intent_ev ? intent_ev : "",
		    kind, act_key, inv);
	else
		snprintf(why, wn, "the intent could not be read: %s", r->st->ops->error(r->st)->msg);
	if (have_rec)
		ri_record_clear(&rec);
	if (have_inv)
		ri_inv_free(&iv);
	return st;
}

int
ri_caller_is_actor(struct ri *r, const char *kind, const char *act_key, const char *inv,
    const char *intent_ev, const char *actor, const char *credential, const char **cause,
    char *why, size_t n)
{
	char owner[512];
	int st;

	*cause = NULL;
	st = intent_actor(r, kind, act_key, inv, intent_ev, owner, sizeof owner, why, n);
	if (st != RI_ST_OK) {
		*cause = st == RI_ST_NOT_KNOWN ? RI_CAUSE_NOT_KNOWN : st == RI_ST_INTEGRITY ?
		    RI_CAUSE_INTEGRITY : RI_CAUSE_UNAVAILABLE;
		return st;
	}
	/* Actor Identity, without appending: who the caller is */
	st = r->st->ops->authenticate(r->st, actor, credential, NULL);
	if (st != RI_ST_OK) {
		*cause = st == RI_ST_INVALID_CREDENTIAL ? RI_CAUSE_CREDENTIAL : st == RI_ST_INTEGRITY ?
		    RI_CAUSE_INTEGRITY : RI_CAUSE_UNAVAILABLE;
		snprintf(why, n, "%s", r->st->ops->error(r->st)->msg);
		return st;
	}
	/* close 1, Check 2: only the intent's actor closes, refuses or yields */
	if (!RI_NC(RI_NC_NO_ACTOR_CHECK) && strcmp(actor, owner) != 0) {
		*cause = RI_CAUSE_ACTOR;
		/* close 1 */
		snprintf(why, n, "%s is not the intent's actor (%s): only the intent's actor may close,"
		    " refuse or yield it", actor, owner);
		return RI_ST_INVALID_CREDENTIAL;
	}
	return RI_ST_OK;
}

bool
ri_is_service_actor(const struct ri_config *c, const char *actor, const struct ri_actor *who)
{
	if (who != NULL && who->service)
		return true;
	for (size_t i = 0; i < c->n_kinds; i++)
		if (c->kinds[i].service_actor != NULL && strcmp(c->kinds[i].service_actor, actor) == 0)
			return true;
	return false;
}
