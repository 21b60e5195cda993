/* settle.h -- one closing or intent write and what its answer means
 * (Primitive policy 20-37): landed, read back, or not landed and why. */
#ifndef RI_SETTLE_H
#define RI_SETTLE_H

#include <stdbool.h>

#include "util/config.h"
#include "store/store.h"
#include "util/util.h"

/* What a write came to. */
enum ri_settled {
	RI_SETTLE_LANDED,       /* the record stands: .ev names it, .via says how */
	RI_SETTLE_NOT_LANDED,   /* nothing of the writer's stands: .st says why */
	RI_SETTLE_RETRY,        /* not landed, and .retry allows another attempt */
	RI_SETTLE_UNREAD,       /* the kind's bindings could not be read: nothing issued */
	RI_SETTLE_NO_NOW        /* the seam could not be read: nothing issued; .rc */
};

/* How a landed record was found. */
enum ri_settle_via {
	RI_VIA_WRITE,           /* the store answered it landed */
	RI_VIA_STEP4,           /* step-4 (retention placement failed), read back */
	RI_VIA_RETENTION,       /* a retention-source invalid-request, read back */
	RI_VIA_REFUSED,         /* another invalid-request, read back (.read_back_refused) */
	RI_VIA_LOST             /* a lost reply, read back after the bound */
};

/* ri_settle.retry: the answers another attempt may follow (the caller
 * re-checks its standing first and bounds the attempts) */
#define RI_RETRY_STEP23 0x01u   /* step-2, step-3 (Primitive policy 29) */
#define RI_RETRY_LOST 0x02u     /* a lost reply read back empty (Primitive policy 37) */

struct ri_settle {
	/* the write: a->event_id is set here, a fresh id each attempt; the
	 * fence's issue is read here, at the writer's seam */
	const struct ri_kind *k;
	struct ri_append *a;
	struct ri_fence *fence;
	ri_ms left;                     /* the lease left at the gate (remaining) */
	bool read_back_refused;         /* read back after any invalid-request, not
	                                 * only a retention-source one (Primitive
	                                 * policy 20: the intent; resolve 23) */
	unsigned retry;                 /* RI_RETRY_* */
	/* what it came to */
	int st;                         /* the store's answer to the last issue */
	int rc;                         /* RI_SETTLE_NO_NOW: the seam's code */
	bool retention;                 /* st is step-4 or a retention-source invalid-request */
	enum ri_settle_via via;
	struct ri_appended ap;
	char mine[RI_ID_LEN + 1];       /* the id minted for the last issue */
	char ev[RI_ID_LEN + 1];         /* RI_SETTLE_LANDED: the record's event id */
	char why[600];                  /* the store's message for st */
};

struct ri;
/* One issue of w->a and its settlement. */
enum ri_settled write_settle(struct ri *r, struct ri_settle *w, ri_err *err);
/* Primitive policy 28 (and refuse steps 3.3-3.4, resolve 24-25): a record
 * read back after step-4 or a retention-source invalid-request is a
 * success with a hard alert -- "the <what> landed but ..." on ans. */
void write_settle_alert(json_t *ans, const char *what, const struct ri_settle *w);

#endif
