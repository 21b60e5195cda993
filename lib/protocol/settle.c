/* settle.c -- one write and its settlement (settle.h): the rules every
 * writer's position shares, written once; each position's own arms
 * (which code, which alert) stay with its caller. */
#include <stdio.h>
#include <string.h>

#include "protocol/bindings.h"
#include "protocol/instance.h"
#include "protocol/proto.h"
#include "protocol/settle.h"

static enum ri_settled
landed(struct ri_settle *w, enum ri_settle_via via, const char *ev)
{
	w->via = via;
	snprintf(w->ev, sizeof w->ev, "%s", ev);
	return RI_SETTLE_LANDED;
}

void
write_settle_alert(json_t *ans, const char *what, const struct ri_settle *w)
{
	if (w->via == RI_VIA_STEP4 || w->via == RI_VIA_RETENTION)
		ri_alert(ans, "the %s landed but %s", what, w->via == RI_VIA_STEP4 ?
		    "its retention placement failed (step-4)" : "on no retention policy");
}

enum ri_settled
write_settle(struct ri *r, struct ri_settle *w, ri_err *err)
{
	int64_t mono;
	bool found, unread;

	w->retention = false;
	w->ev[0] = '\0';
	if ((w->rc = ri_seam_now(r, &w->fence->issue, err)) != RI_OK)
		return RI_SETTLE_NO_NOW;
	mono = ri_mono_ms();
	/* each attempt is its own record, its id minted before the issue so a
	 * read-back finds exactly it (resolve 24, Primitive policy 36) */
	w->a->event_id = ri_mint_id("evt_", w->mine);
	/* bindings are history (issue 41): a change of the kind's bindings
	 * lands with the record it judges, in its transaction, or not at all */
	w->st = ri_bindings_append(r, w->k, w->a, &w->ap, &unread);
	if (unread)
		return RI_SETTLE_UNREAD;
	snprintf(w->why, sizeof w->why, "%s", r->st->ops->error(r->st)->msg);
	switch (w->st) {
	case RI_ST_OK:
		return landed(w, RI_VIA_WRITE, w->ap.event_id);
	case RI_ST_STEP4:
	case RI_ST_INVALID_REQUEST:
		w->retention = w->st == RI_ST_STEP4 || strcmp(w->ap.cause, "retention") == 0;
		/* Primitive policy 20-25, 27: read back by invocation id, for
		 * step-4 and a retention-source invalid-request (and, where the
		 * position says so, any invalid-request); never retry after
		 * step-4 (26) */
		if ((w->retention || w->read_back_refused) &&
		    ri_read_back(r, w->a->invocation_id, w->mine, &found) == RI_ST_OK && found)
			return landed(w, w->st == RI_ST_STEP4 ? RI_VIA_STEP4 : w->retention ? RI_VIA_RETENTION :
			    RI_VIA_REFUSED, w->mine);
		return RI_SETTLE_NOT_LANDED;
	case RI_ST_LOST:
		/* Primitive policy 32-34: unknown; no blind retry; read back only
		 * after journal_write_bound has elapsed since the issue */
		ri_wait_write_bound(r, w->k->name, w->a->act_key, w->fence->holder, w->left, mono);
		/* Primitive policy 35-36: its own record, by the event id it
		 * minted -- never another writer's record of the invocation */
		if (ri_read_back(r, w->a->invocation_id, w->mine, &found) == RI_ST_OK && found)
			return landed(w, RI_VIA_LOST, w->mine);
		/* Primitive policy 37: found nothing -- may retry where the
		 * position allows */
		return w->retry & RI_RETRY_LOST ? RI_SETTLE_RETRY : RI_SETTLE_NOT_LANDED;
	case RI_ST_STEP2:
	case RI_ST_STEP3:
		/* Primitive policy 29 (outcome: retry under the section), 23
		 * (intent: recording-failure) */
		return w->retry & RI_RETRY_STEP23 ? RI_SETTLE_RETRY : RI_SETTLE_NOT_LANDED;
	default:
		/* journal fence 3: a fenced-out write; an integrity failure */
		return RI_SETTLE_NOT_LANDED;
	}
}
