/* witness_pg.c -- the witness as a PostgreSQL table (witness_pg.h). */
#include <stdlib.h>

#include "witness_pg.h"

struct ri_witness_pg {
	int unused;
};

int
ri_witness_pg_create(const char *uri, ri_err *err)
{
	(void)uri;
	return ri_fail(err, RI_CONFIG, "a postgresql:// witness is not supported yet");
}

int
ri_witness_pg_open(const char *uri, struct ri_witness_pg **out, ri_err *err)
{
	(void)uri;
	*out = NULL;
	return ri_fail(err, RI_CONFIG, "a postgresql:// witness is not supported yet");
}

void
ri_witness_pg_close(struct ri_witness_pg *p)
{
	free(p);
}

int
ri_witness_pg_newest(struct ri_witness_pg *p, char **text, ri_err *err)
{
	(void)p, (void)text;
	return ri_fail(err, RI_CONFIG, "a postgresql:// witness is not supported yet");
}

int
ri_witness_pg_add(struct ri_witness_pg *p, int64_t seq, const char *text, ri_err *err)
{
	(void)p, (void)seq, (void)text;
	return ri_fail(err, RI_CONFIG, "a postgresql:// witness is not supported yet");
}

int
ri_witness_pg_each(struct ri_witness_pg *p, int (*each)(const char *text, void *arg), void *arg, ri_err *err)
{
	(void)p, (void)each, (void)arg;
	return ri_fail(err, RI_CONFIG, "a postgresql:// witness is not supported yet");
}
