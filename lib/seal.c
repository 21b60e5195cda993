/* seal.c -- seal the journal's head: an Ed25519 signature over (instance
 * id, seq, head hash), appended as audit.sealed (ri-seal(1)). */
#include <sodium.h>

#include "audit.h"
#include "instance.h"
#include "integrity.h"

int
ri_seal(ri *r, json_t **ans, ri_err *err)
{
	unsigned char sk[crypto_sign_SECRETKEYBYTES];
	struct ri_appended ap;
	int rc, st;

	*ans = NULL;
	if ((rc = ri_seal_key_load(r->cfg->seal_key_file, sk, sizeof sk, err)) != RI_OK)
		return rc;
	st = r->st->ops->seal(r->st, sk, &ap);
	sodium_memzero(sk, sizeof sk);
	if (st != RI_ST_OK)
		return ri_store_code(r, st, err);
	*ans = json_pack("{s:s, s:I, s:I}", "seal_event_id", ap.event_id, "sealed_seq",
	    (json_int_t)(ap.seq - 1), "seq", (json_int_t)ap.seq);
	return RI_OK;
}
