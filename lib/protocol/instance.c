/* instance.c -- open an instance: config, start conditions, key, journal. */
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "protocol/bindings.h"
#include "util/fault.h"
#include "store/findings.h"
#include "protocol/gate.h"
#include "protocol/instance.h"
#include "util/integrity.h"
#include "store/sqlite/store_sqlite.h"

/* journal 1: an instance is one config and one journal, which every kind
 * of the config shares */
int
ri_instance_open(const char *config_path, unsigned flags, ri **out, ri_err *err)
{
	struct ri *r;
	int rc;

	*out = NULL;
	if (sodium_init() < 0)
		return ri_fail(err, RI_INTERNAL, "libsodium failed to initialise");
	ri_sqlite_process_init((flags & RI_THREADED) != 0);
	r = ri_xcalloc(1, sizeof *r);
	r->flags = flags;
	if ((rc = ri_config_load(ri_config_path(config_path), &r->cfg, err)) != RI_OK)
		goto fail;
	if ((rc = ri_fault_arm(r->cfg, err)) != RI_OK)
		goto fail;
	/* Instance start 3: a writer refuses to run on an instance whose
	 * conditions fail (and records why, once); readers and set-up tools
	 * still run. */
	if ((flags & RI_WRITER) && (rc = ri_gate_conditions(r->cfg, err)) != RI_OK)
		goto fail;
	if (flags & RI_CONFIG_ONLY) {
		*out = r;
		return RI_OK;
	}
	if ((rc = ri_instance_attach(r, flags, err)) != RI_OK)
		goto fail;
	*out = r;
	return RI_OK;
fail:
	ri_instance_close(r);
	return rc;
}

int
ri_instance_from_journal(const char *journal, const char *witness, const char *findings, unsigned flags, ri **out,
    ri_err *err)
{
	struct ri *r;
	int rc;

	*out = NULL;
	if (sodium_init() < 0)
		return ri_fail(err, RI_INTERNAL, "libsodium failed to initialise");
	ri_sqlite_process_init((flags & RI_THREADED) != 0);
	r = ri_xcalloc(1, sizeof *r);
	r->flags = flags | RI_CONFIG_ONLY;
	if ((rc = ri_config_from_journal(journal, witness, findings, &r->cfg, err)) != RI_OK) {
		ri_instance_close(r);
		return rc;
	}
	*out = r;
	return RI_OK;
}

int
ri_instance_attach(struct ri *r, unsigned flags, ri_err *err)
{
	int rc;

	r->flags = flags;
	if (!(flags & RI_NO_KEY) && r->key == NULL &&
	    (rc = ri_key_load(r->cfg->integrity_key_file, &r->key, &r->keylen, err)) != RI_OK) {
		if (flags & RI_WRITER)
			ri_gate_key_refused(r->cfg, err);
		return rc;
	}
	/* the findings register's rows are MACed under a key derived from it */
	if (r->key != NULL) {
		ri_findings_use_key(r->key, r->keylen);
		ri_mac_key_use(r->key, r->keylen);
	}
	if ((rc = ri_instance_store(r, &r->st, err)) != RI_OK)
		return rc;
	/* the rest of the start gate a writer shares with ri-startcheck */
	if ((flags & RI_WRITER) && (rc = ri_gate_journal(r, flags, err)) != RI_OK) {
		r->st->ops->close(r->st);
		r->st = NULL;
		return rc;
	}
	return RI_OK;
}

int
ri_instance_key(struct ri *r, ri_err *err)
{
	int rc;

	if (r->key == NULL && (rc = ri_key_load(r->cfg->integrity_key_file, &r->key, &r->keylen, err)) != RI_OK)
		return rc;
	ri_findings_use_key(r->key, r->keylen);
	ri_mac_key_use(r->key, r->keylen);
	return RI_OK;
}

void
ri_instance_close(ri *r)
{
	if (r == NULL)
		return;
	ri_bindings_free(r);
	if (r->st != NULL)
		r->st->ops->close(r->st);
	if (r->key != NULL) {
		ri_mac_key_use(NULL, 0);
		sodium_free(r->key);
	}
	ri_config_free(r->cfg);
	free(r);
}

const char *
ri_code_name(int code)
{
	switch (code) {
	case RI_OK: return "ok";
	case RI_CHECK_FAILED: return "check-failed";
	case RI_DEGRADED: return "degraded";
	case RI_INVALID_CREDENTIAL: return "invalid-credential";
	case RI_INVALID_REQUEST: return "invalid-request";
	case RI_ACT_IN_FLIGHT: return "act-in-flight";
	case RI_ACT_LANDED: return "act-landed";
	case RI_SECTION_UNAVAILABLE: return "section-unavailable";
	case RI_JOURNAL_UNAVAILABLE: return "journal-unavailable";
	case RI_ALREADY_ACCOUNTED: return "already-accounted";
	case RI_NOT_KNOWN: return "not-known";
	case RI_RF_INTENT: case RI_RF_OUTCOME: case RI_RF_REFUSAL: case RI_RF_RESOLUTION:
		return "recording-failure";
	case RI_INTEGRITY: return "integrity";
	case RI_USAGE: return "usage";
	case RI_MALFORMED: return "malformed";
	case RI_INTERNAL: return "internal";
	case RI_CONFIG: return "config";
	default: return "unknown";
	}
}

size_t
ri_request_max(const ri *r)
{
	return (size_t)r->cfg->payload_cap * 2 + 65536;
}

#ifndef RI_VERSION
#define RI_VERSION "unversioned"        /* a build outside the Makefile */
#endif

const char *
ri_version(void)
{
	return RI_VERSION;              /* the Makefile's VERSION */
}
