/* clock.h -- the one clock module.  Every seam reads it once where the
 * protocol says so; "clock": "env" reads $RI_NOW instead (a test seam). */
#ifndef RI_CLOCK_H
#define RI_CLOCK_H

#include "util/config.h"

/* The seam reading: system time, or $RI_NOW under "clock": "env".
 * RI_CONFIG when $RI_NOW is missing or malformed in env mode. */
int ri_now(const struct ri_config *c, ri_ms *out, ri_err *err);

/* The protocol's named edges (each an applied comparison, Allowance 3-6). */
ri_ms ri_examine_edge(const struct ri_config *c, const struct ri_kind *k, ri_ms recorded_at);
ri_ms ri_abandon_edge(const struct ri_config *c, const struct ri_kind *k, ri_ms recorded_at);
ri_ms ri_horizon_edge(const struct ri_config *c, const struct ri_kind *k, ri_ms recorded_at);
/* in-flight: examine edge EXCEEDS now; aged: it does not. */
bool ri_in_flight(const struct ri_config *c, const struct ri_kind *k, ri_ms recorded_at, ri_ms now);
/* the sweep keeps an intent only while now PRECEDES its horizon edge */
bool ri_before_horizon(const struct ri_config *c, const struct ri_kind *k, ri_ms recorded_at, ri_ms now);
bool ri_past_abandon_edge(const struct ri_config *c, const struct ri_kind *k, ri_ms recorded_at, ri_ms now);
/* closure-at-risk: at risk threshold DOES NOT EXCEED intent age */
bool ri_at_risk(const struct ri_config *c, ri_ms recorded_at, ri_ms now);

#endif
