/* standing.c -- Which closing stands, chains, duplicates, the intents key. */
#include <stdlib.h>
#include <string.h>

#include "util/nc.h"
#include "protocol/standing.h"

static void *
grow(void *v, size_t n, size_t size)
{
	void *p = realloc(v, (n + 1) * size);

	if (p == NULL)
		abort();
	return p;
}

/* The names a closing's "supersedes" carries: a string, or a non-empty
 * array of strings (the form Resolve writes over a binding duplicate). */
static void
names_of(struct ri_closing *c)
{
	json_t *s = c->rec->payload ? json_object_get(c->rec->payload, "supersedes") : NULL, *v;
	size_t i;

	if (s == NULL)
		return;
	if (json_is_string(s)) {
		c->names = grow(NULL, 0, sizeof *c->names);
		c->names[c->n_names++] = json_string_value(s);
		return;
	}
	if (!json_is_array(s) || json_array_size(s) == 0) {
		c->names_malformed = true;
		return;
	}
	json_array_foreach(s, i, v) {
		if (!json_is_string(v)) {
			c->names_malformed = true;
			return;
		}
		c->names = grow(c->names, c->n_names, sizeof *c->names);
		c->names[c->n_names++] = json_string_value(v);
	}
}

void
ri_inv_add(struct ri_inv *inv, struct ri_record *rec)
{
	struct ri_closing *c;

	/* journal 4, the closings issue's ruling: the role stored with the
	 * record when it was appended, never today's binding */
	switch (rec->role) {
	case RI_ROLE_INTENT:
		if (inv->intent == NULL)
			inv->intent = rec;
		inv->n_intents++;
		return;
	case RI_ROLE_RECOVERY:
		inv->recovery = grow(inv->recovery, inv->n_recovery, sizeof *inv->recovery);
		inv->recovery[inv->n_recovery++] = rec;
		return;
	case RI_ROLE_OUTCOME:
	case RI_ROLE_REFUSED:
	case RI_ROLE_ABANDONED:
	case RI_ROLE_ESCALATED:
		break;
	default:
		return;
	}
	inv->closings = grow(inv->closings, inv->n_closings, sizeof *inv->closings);
	c = &inv->closings[inv->n_closings++];
	memset(c, 0, sizeof *c);
	c->rec = rec;
	c->type = rec->role == RI_ROLE_OUTCOME ? RI_C_OUTCOME : rec->role == RI_ROLE_REFUSED ? RI_C_REFUSED :
	    rec->role == RI_ROLE_ABANDONED ? RI_C_ABANDONED : RI_C_ESCALATED;
	if (rec->payload != NULL) {
		c->resolved_by = json_is_string(json_object_get(rec->payload, "resolved_by"));
		c->recovery = json_is_true(json_object_get(rec->payload, "recovery"));
		names_of(c);
	}
}

void
ri_inv_free_index(struct ri_inv *inv)
{
	for (size_t i = 0; i < inv->n_closings; i++)
		free(inv->closings[i].names);
	free(inv->closings);
	free(inv->recovery);
	inv->closings = NULL;
	inv->recovery = NULL;
	inv->n_closings = inv->n_recovery = 0;
}

/* The closing a name denotes: an EARLIER closing of this invocation. */
static struct ri_closing *
named(struct ri_closing *c, size_t n, size_t by, const char *name)
{
	for (size_t j = 0; j < n; j++)
		if (j != by && c[j].rec->seq < c[by].rec->seq && strcmp(c[j].rec->event_id, name) == 0)
			return &c[j];
	return NULL;
}

void
ri_standing(struct ri_closing *c, size_t n, struct ri_standing *out)
{
	memset(out, 0, sizeof *out);
	/* Which closing stands 2, 8: a name supersedes only an earlier
	 * closing of the same invocation; anything else voids the whole
	 * supersedes, which then supersedes nothing (the ruling) */
	for (size_t i = 0; i < n; i++) {
		c[i].head = true;
		c[i].malformed = c[i].names_malformed;
		for (size_t k = 0; k < c[i].n_names && !c[i].malformed && !RI_NC(RI_NC_NO_SUPERSEDES_CHECK); k++)
			if (named(c, n, i, c[i].names[k]) == NULL)
				c[i].malformed = true;
		if (c[i].malformed && out->malformed == NULL)
			out->malformed = &c[i];
	}
	/* Which closing stands 4-5: every name at once is the transitive
	 * reading -- a chain A <- B <- C leaves C its only head */
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < c[i].n_names && !c[i].malformed; k++) {
			struct ri_closing *d = named(c, n, i, c[i].names[k]);
			if (d != NULL)          /* NULL only under a negative control */
				d->head = false;
		}
	for (size_t i = 0; i < n; i++) {
		if (c[i].type == RI_C_OUTCOME)
			out->outcome = &c[i];           /* ascending: the latest wins */
		if (!c[i].head)
			continue;
		out->n_heads++;
		/* Which closing stands 7 */
		if (out->standing == NULL || c[i].rec->seq < out->standing->rec->seq)
			out->standing = &c[i];
	}
	/* Which closing stands 6, the ruling: two or more chains */
	out->duplicate = out->n_heads >= 2;
	if (RI_NC(RI_NC_DUPLICATE_ALONE)) {
		/* negative control: Which closing stands 6 read literally -- only heads
		 * that supersede nothing count (tla -buggy-alone) */
		size_t alone = 0;
		for (size_t i = 0; i < n; i++)
			if (c[i].head && (c[i].n_names == 0 || c[i].malformed))
				alone++;
		out->duplicate = alone >= 2;
	}
	if (RI_NC(RI_NC_PAIRWISE_SUPERSESSION)) {
		/* negative control: supersession read pairwise -- each (superseded,
		 * superseding) pair collapsed on its own, so a chain A <- B <- C
		 * counts as two closings (the reading Which closing stands 4 forbids) */
		size_t pairs = 0, alone = 0;
		for (size_t i = 0; i < n; i++) {
			if (c[i].n_names > 0 && !c[i].malformed)
				pairs++;
			else if (c[i].head)
				alone++;
		}
		out->duplicate = pairs + alone >= 2;
	}
	if (out->standing == NULL) {
		out->state = RI_STATE_OPEN;
		return;
	}
	/* the state projection */
	switch (out->standing->type) {
	case RI_C_OUTCOME:
		out->state = RI_STATE_CLOSED;
		break;
	case RI_C_REFUSED:
		out->state = RI_STATE_REFUSED;
		break;
	case RI_C_ABANDONED:
		out->state = out->standing->resolved_by ? RI_STATE_RESOLVED : RI_STATE_ABANDONED;
		break;
	case RI_C_ESCALATED:
		out->state = RI_STATE_ESCALATED;
		break;
	}
}

const char *
ri_state_name(enum ri_state s)
{
	static const char *names[] = { "open", "closed", "refused", "abandoned", "escalated", "resolved" };
	return names[s];
}

static int
by_opened(const void *x, const void *y)
{
	const struct ri_open_span *a = *(const struct ri_open_span *const *)x;
	const struct ri_open_span *b = *(const struct ri_open_span *const *)y;

	return (a->opened > b->opened) - (a->opened < b->opened);
}

bool
ri_intents_key(const struct ri_open_span *v, size_t n, size_t *a, size_t *b)
{
	const struct ri_open_span **p;
	const struct ri_open_span *longest = NULL;
	bool dup = false;

	if (n < 2)
		return false;
	p = malloc(n * sizeof *p);
	if (p == NULL)
		abort();
	for (size_t i = 0; i < n; i++)
		p[i] = &v[i];
	qsort(p, n, sizeof *p, by_opened);
	/* in order of opening, an intent opened before the longest-lived
	 * earlier one closed was open at once with it */
	for (size_t i = 0; i < n && !dup; i++) {
		if (longest != NULL && p[i]->opened < longest->closed) {
			*a = (size_t)(longest - v);
			*b = (size_t)(p[i] - v);
			dup = true;
		}
		if (longest == NULL || p[i]->closed > longest->closed)
			longest = p[i];
	}
	free(p);
	return dup;
}
