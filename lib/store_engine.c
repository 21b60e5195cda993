/*
 * store_engine.c -- what every backend of store.h shares: the protocol
 * above and each backend (store_sqlite.c, store_pg.c) call this file,
 * never one backend's.
 */
#include <stdlib.h>
#include <string.h>

#include "store.h"

/* ---- what a caller of store.h frees --------------------------------------- */

void
ri_record_clear(struct ri_record *r)
{
	free(r->action_ref);
	free(r->kind);
	free(r->act_key);
	free(r->invocation_id);
	free(r->actor_ref);
	json_decref(r->payload);
	memset(r, 0, sizeof *r);
}

void
ri_records_clear(struct ri_records *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		ri_record_clear(&rs->v[i]);
	free(rs->v);
	memset(rs, 0, sizeof *rs);
}

void
ri_open_intents_free(struct ri_open_intent *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].kind);
		free(v[i].act_key);
		free(v[i].invocation_id);
		free(v[i].event_id);
	}
	free(v);
}

void
ri_actors_free(struct ri_actor *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].actor_ref);
	free(v);
}

void
ri_strings_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}
