/* seal.h -- ri-seal, ri-backup and the genesis seal: the signed head over
 * every record verified since the previous seal (ri-seal(1)). */
#ifndef RI_SEAL_H
#define RI_SEAL_H

#include "ri.h"

/* ri-seal: verify every record since the previous seal, append a seal over
 * the current head (audit.sealed) and its line to the witness.  A failed
 * verification answers journal-unavailable with "cause":"integrity"
 * (RI_JOURNAL_UNAVAILABLE) and appends nothing. */
int ri_seal(ri *r, json_t **ans, ri_err *err);
/* ri-init: the genesis seal, carrying the founding bindings of every kind
 * (bindings.h: {"bindings": {kind: audit.bound payload}}). */
int ri_seal_genesis(ri *r, json_t **ans, ri_err *err);
/* Surface a verification failure in the findings register: an instance
 * finding journal-unavailable with {"why", "cause":"integrity"}. */
int ri_seal_surface(ri *r, const char *why);
/* ri-backup: seal, then a consistent online copy into the new file dest. */
int ri_backup(ri *r, const char *dest, json_t **ans, ri_err *err);

#endif
