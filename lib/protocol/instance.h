/* instance.h -- struct ri: what every command opens first. */
#ifndef RI_INSTANCE_H
#define RI_INSTANCE_H

#include "protocol/handle.h"

/* An instance, RI_CONFIG_ONLY, whose config is built from the bindings the
 * journal at `journal` records (bindings.h: ri-audit for an outside
 * auditor handed no config). */
int ri_instance_from_journal(const char *journal, const char *witness, const char *findings, unsigned flags,
    ri **out, ri_err *err);
/* Open the key and the journal of an instance opened RI_CONFIG_ONLY (after,
 * say, pointing cfg->journal at a copy an auditor was handed). */
int ri_instance_attach(struct ri *r, unsigned flags, ri_err *err);
/* Load the integrity key of an instance opened RI_CONFIG_ONLY (for the
 * findings register's MACs, when the journal itself cannot be opened). */
int ri_instance_key(struct ri *r, ri_err *err);

#endif
