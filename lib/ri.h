/*
 * ri.h -- the one public header of libri, Recoverable Invocation.
 *
 * Every function returns one of the codes below.  The codes ARE the exit
 * codes of ri(7): a command exits with the code its library call
 * returned, so the table is documented once, here and in ri(7).
 *
 * Requests and answers are JSON objects (jansson), because that is the
 * contract the commands speak; handles are opaque.
 */
#ifndef RI_H
#define RI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

enum ri_code {
	RI_OK = 0,
	RI_CHECK_FAILED = 1,          /* ri-audit / ri-startcheck found a failure */
	RI_DEGRADED = 2,              /* ri-sweep: the run ended, degraded (a store, an identity,
	                               * run_bound, an alert): stderr and "degraded" say why */
	RI_NEEDS_OPERATOR = 3,        /* ri-sweep: the run ended and left at least one act to an
	                               * operator (escalated): one line each on stderr */
	RI_INVALID_CREDENTIAL = 10,   /* invalid-credential */
	RI_INVALID_REQUEST = 11,      /* invalid-request ("cause") */
	RI_ACT_IN_FLIGHT = 12,        /* act-in-flight(invocation_id) */
	RI_ACT_LANDED = 13,           /* act-landed(outcome_event_id) */
	RI_SECTION_UNAVAILABLE = 14,  /* section-unavailable */
	RI_JOURNAL_UNAVAILABLE = 15,  /* journal-unavailable: nothing written */
	RI_ALREADY_ACCOUNTED = 16,    /* already-accounted(closing_event_id) */
	RI_NOT_KNOWN = 17,            /* not-known */
	RI_RF_INTENT = 20,            /* recording-failure(intent) */
	RI_RF_OUTCOME = 21,           /* recording-failure(outcome): never re-run */
	RI_RF_REFUSAL = 22,           /* recording-failure(refusal, constituent_code) */
	RI_RF_RESOLUTION = 23,        /* recording-failure(resolution) */
	RI_INTEGRITY = 30,            /* the journal failed verification */
	RI_USAGE = 64,
	RI_MALFORMED = 65,            /* not JSON, wrong types, unknown fields */
	RI_INTERNAL = 70,
	RI_CONFIG = 78                /* bad config, or the instance must not start */
};

/* What went wrong, for a human (msg) and for the caller (refusal). */
typedef struct ri_err {
	int code;
	char msg[1024];
	/* RI_MALFORMED because the request lacks this required field: the
	 * command whose request came from flags alone answers a usage error
	 * naming the flag instead (ri_cmd_main) */
	char missing[48];
} ri_err;

typedef int64_t ri_ms;          /* instants (ms since the epoch) and durations */
#define RI_NONE INT64_MIN       /* "none": no value (remaining, retention, ...) */

typedef struct ri ri;           /* one instance: config, journal, register, keys */

/* ri_instance_open flags */
#define RI_WRITER      0x01u    /* refuse unless the five conditions hold (Instance start 3) */
#define RI_READONLY    0x02u    /* open the journal read-only (readers, ri-audit) */
#define RI_CONFIG_ONLY 0x04u    /* parse the config; touch no file it names */
#define RI_NO_KEY      0x08u    /* no integrity key: chain-only verification */
#define RI_SWEEPER     0x10u    /* ri-sweep: the run answers Binding 2 itself (Binding 4-6) */
#define RI_NO_WITNESS  0x40u    /* do not compare the journal with its witness (an
                                 * append still adds its line, where one exists) */
#define RI_INSPECT     0x80u    /* open the journal as it is, to report on it (ri-audit): no
                                 * refusal at open for its schema or its witness */
#define RI_RESTORING   0x200u   /* with RI_NO_WITNESS: ri-init --accept-restore -- the
                                 * journal's lines start the witness's next epoch */
#define RI_SCHEMA_FULL 0x400u   /* check the journal's whole schema at open (PostgreSQL: its
                                 * catalog fingerprint; issue 43: ri-startcheck, ri-audit, the
                                 * sweep, ri-init -- other commands check its MACed version) */
#define RI_THREADED    0x100u   /* the command runs a second thread (ri-audit): SQLite keeps
                                 * its mutexes (ri_instance_open, before any file is opened) */

int  ri_instance_open(const char *config_path, unsigned flags, ri **out, ri_err *err);
void ri_instance_close(ri *r);

/* The protocol: each takes the request object of its command's page
 * (ri-open(1), ...; schemas/ri-open.request.json, ...) and answers
 * one object, a success or {"refused": ...}.  The return is its code. */
int ri_open(ri *r, json_t *req, json_t **ans, ri_err *err);
int ri_close(ri *r, json_t *req, json_t **ans, ri_err *err);
int ri_refuse(ri *r, json_t *req, json_t **ans, ri_err *err);
int ri_yield(ri *r, json_t *req, json_t **ans, ri_err *err);
/* Action wiring 1: a failure of ri-close (ri-refuse) before or around the
 * call, answered on position outcome (refusal): 21 (22) with a cause. */
int ri_close_positioned(int code, json_t *req, json_t **ans, ri_err *err);
int ri_refuse_positioned(int code, json_t *req, json_t **ans, ri_err *err);
/* ri-run's own Yield of the grant its Open holds (commit 8c). */
void ri_yield_held(ri *r, const char *kind, const char *act_key, const char *invocation_id);
int ri_resolve(ri *r, json_t *req, json_t **ans, ri_err *err);
int ri_read_invocation(ri *r, json_t *req, json_t **ans, ri_err *err);

/* The largest request a command reads on stdin for this instance. */
size_t ri_request_max(const ri *r);

const char *ri_code_name(int code);
const char *ri_version(void);

#endif
