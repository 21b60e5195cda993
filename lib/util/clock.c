/* clock.c -- the seam clock and the protocol's edges. */
#include <stdlib.h>
#include <time.h>

#include "util/clock.h"

int
ri_now(const struct ri_config *c, ri_ms *out, ri_err *err)
{
	struct timespec ts;

	if (c != NULL && c->clock_env) {
		const char *s = getenv("RI_NOW");
		if (s == NULL || ri_parse_instant(s, out) != 0)
			return ri_fail(err, RI_CONFIG,
			    "\"clock\": \"env\" needs RI_NOW set to an RFC 3339 instant or integer ms");
		return RI_OK;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	*out = (ri_ms)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	return RI_OK;
}

/* Term examine edge: recorded_at + completion_bound + clock_offset_allowance. */
ri_ms
ri_examine_edge(const struct ri_config *c, const struct ri_kind *k, ri_ms recorded_at)
{
	return recorded_at + k->completion_bound + c->clock_offset_allowance;
}

/* Term abandon edge: the examine edge plus one further allowance. */
ri_ms
ri_abandon_edge(const struct ri_config *c, const struct ri_kind *k, ri_ms recorded_at)
{
	return ri_examine_edge(c, k, recorded_at) + c->clock_offset_allowance;
}

/* Term horizon edge: recorded_at + retention_period - clock_offset_allowance
 * (journal 8: from the kind's retention period, never the record's own). */
ri_ms
ri_horizon_edge(const struct ri_config *c, const struct ri_kind *k, ri_ms recorded_at)
{
	return recorded_at + k->retention_period - c->clock_offset_allowance;
}

bool
ri_in_flight(const struct ri_config *c, const struct ri_kind *k, ri_ms recorded_at, ri_ms now)
{
	return ri_examine_edge(c, k, recorded_at) > now;
}

bool
ri_before_horizon(const struct ri_config *c, const struct ri_kind *k, ri_ms recorded_at, ri_ms now)
{
	return now < ri_horizon_edge(c, k, recorded_at);
}

/* Allowance 12: never abandoned BEFORE the abandon edge; at the edge it is
 * no longer "before". */
bool
ri_past_abandon_edge(const struct ri_config *c, const struct ri_kind *k, ri_ms recorded_at, ri_ms now)
{
	return now >= ri_abandon_edge(c, k, recorded_at);
}

/* reconcile step 5.1: IF at risk threshold DOES NOT EXCEED intent age. */
bool
ri_at_risk(const struct ri_config *c, ri_ms recorded_at, ri_ms now)
{
	return !(ri_at_risk_threshold(c) > now - recorded_at);
}
