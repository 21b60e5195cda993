/*
 * pq.h -- libpq, loaded when a PostgreSQL journal or witness is opened,
 * not linked: linked, its two dozen dependencies (TLS, Kerberos, LDAP) are
 * loaded by every ri process at exec -- on one SQLite host too, where it
 * more than doubled a command's start-up.  The names below are the libpq
 * API (libpq-fe.h), resolved from libpq.so.5 once; the macros let the
 * PostgreSQL code call them by their own names.
 */
#ifndef RI_PQ_H
#define RI_PQ_H

#include <libpq-fe.h>

#include "util/util.h"

struct ri_pq {
	void *so;
	PGconn *(*connectdb)(const char *);
	PGconn *(*connectdbParams)(const char *const *, const char *const *, int);
	PGresult *(*copyResult)(const PGresult *, int);
	void (*finish)(PGconn *);
	void (*reset)(PGconn *);
	ConnStatusType (*status)(const PGconn *);
	char *(*errorMessage)(const PGconn *);
	PGresult *(*exec)(PGconn *, const char *);
	PGresult *(*execParams)(PGconn *, const char *, int, const Oid *, const char *const *, const int *,
	    const int *, int);
	ExecStatusType (*resultStatus)(const PGresult *);
	char *(*resultErrorMessage)(const PGresult *);
	char *(*resultErrorField)(const PGresult *, int);
	int (*ntuples)(const PGresult *);
	char *(*getvalue)(const PGresult *, int, int);
	int (*getisnull)(const PGresult *, int, int);
	char *(*cmdTuples)(PGresult *);
	void (*clear)(PGresult *);
	int (*sendQuery)(PGconn *, const char *);
	PGresult *(*getResult)(PGconn *);
	/* pipeline mode (libpq 14+): the journal's round trips (issue 42) */
	int (*sendQueryParams)(PGconn *, const char *, int, const Oid *, const char *const *, const int *,
	    const int *, int);
	int (*enterPipelineMode)(PGconn *);
	int (*exitPipelineMode)(PGconn *);
	int (*pipelineSync)(PGconn *);
};
extern struct ri_pq ri_pq;

/* Load libpq.so.5 (once); what: "journal" or "witness", for the message. */
bool ri_pq_load(const char *what, ri_err *err);

#define PQconnectdb ri_pq.connectdb
#define PQconnectdbParams ri_pq.connectdbParams
#define PQcopyResult ri_pq.copyResult
#define PQfinish ri_pq.finish
#define PQreset ri_pq.reset
#define PQstatus ri_pq.status
#define PQerrorMessage ri_pq.errorMessage
#define PQexec ri_pq.exec
#define PQexecParams ri_pq.execParams
#define PQresultStatus ri_pq.resultStatus
#define PQresultErrorMessage ri_pq.resultErrorMessage
#define PQresultErrorField ri_pq.resultErrorField
#define PQntuples ri_pq.ntuples
#define PQgetvalue ri_pq.getvalue
#define PQgetisnull ri_pq.getisnull
#define PQcmdTuples ri_pq.cmdTuples
#define PQsendQuery ri_pq.sendQuery
#define PQgetResult ri_pq.getResult
#define PQsendQueryParams ri_pq.sendQueryParams
#define PQenterPipelineMode ri_pq.enterPipelineMode
#define PQexitPipelineMode ri_pq.exitPipelineMode
#define PQpipelineSync ri_pq.pipelineSync
#define PQclear(r) do { if (ri_pq.clear != NULL) ri_pq.clear(r); } while (0)

#endif
