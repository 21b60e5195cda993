/* startcheck.h -- ri-startcheck's checks: may this instance start?
 * (Instance start 1-8, Allowance 11, Capability requirement 11) */
#ifndef RI_STARTCHECK_H
#define RI_STARTCHECK_H

#include <stdbool.h>
#include <jansson.h>

struct ri;

struct ri_startcheck {
	json_t *kinds;                  /* each bound kind: its five conditions and job budget */
	json_t *caps;                   /* each capability: {check, pass, message} */
	json_t *warnings;               /* strings */
	bool ok;                        /* every condition and capability holds */
	bool integrity_failed;          /* the journal or the register failed verification */
	bool keyed;                     /* the integrity key loaded: findings rows verifiable */
	struct ri *full;                /* the journal opened read-only (NULL: it could not be) */
};

/* Every check, over r (opened RI_CONFIG_ONLY from config, the file the
 * journal is then opened read-only from).  Returns RI_OK when the instance
 * may start, RI_INTEGRITY when verification failed, else RI_CHECK_FAILED;
 * *rep holds what was found until ri_startcheck_free. */
int ri_startcheck(struct ri *r, const char *config, struct ri_startcheck *rep);
void ri_startcheck_free(struct ri_startcheck *rep);

#endif
