/* pq.c -- libpq, loaded once, at the first PostgreSQL journal or witness
 * opened (pq.h). */
#include <dlfcn.h>

#include "store/pg/pq.h"

struct ri_pq ri_pq;

bool
ri_pq_load(const char *what, ri_err *err)
{
	static const char *names[] = { "PQconnectdb", "PQfinish", "PQreset", "PQstatus", "PQerrorMessage",
		"PQexec", "PQexecParams", "PQresultStatus", "PQresultErrorMessage", "PQresultErrorField",
		"PQntuples", "PQgetvalue", "PQgetisnull", "PQcmdTuples", "PQclear", "PQsendQuery", "PQgetResult",
		"PQsendQueryParams", "PQenterPipelineMode", "PQexitPipelineMode", "PQpipelineSync", "PQconnectdbParams", "PQcopyResult" };
	void **slot[] = { (void **)&ri_pq.connectdb, (void **)&ri_pq.finish, (void **)&ri_pq.reset,
		(void **)&ri_pq.status, (void **)&ri_pq.errorMessage, (void **)&ri_pq.exec, (void **)&ri_pq.execParams,
		(void **)&ri_pq.resultStatus, (void **)&ri_pq.resultErrorMessage, (void **)&ri_pq.resultErrorField,
		(void **)&ri_pq.ntuples, (void **)&ri_pq.getvalue, (void **)&ri_pq.getisnull, (void **)&ri_pq.cmdTuples,
		(void **)&ri_pq.clear, (void **)&ri_pq.sendQuery, (void **)&ri_pq.getResult,
		(void **)&ri_pq.sendQueryParams, (void **)&ri_pq.enterPipelineMode, (void **)&ri_pq.exitPipelineMode,
		(void **)&ri_pq.pipelineSync, (void **)&ri_pq.connectdbParams,
		(void **)&ri_pq.copyResult };

	if (ri_pq.so != NULL)
		return true;
	if ((ri_pq.so = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL)) == NULL) {
		ri_fail(err, RI_JOURNAL_UNAVAILABLE, "%s (postgresql): cannot load libpq.so.5 (apt-get install"
		    " libpq5): %s", what, dlerror());
		return false;
	}
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if ((*slot[i] = dlsym(ri_pq.so, names[i])) == NULL) {
			ri_fail(err, RI_JOURNAL_UNAVAILABLE, "%s (postgresql): libpq.so.5 lacks %s", what, names[i]);
			dlclose(ri_pq.so);
			ri_pq.so = NULL;
			return false;
		}
	}
	return true;
}
