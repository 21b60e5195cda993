/* progress.h -- a progress line on stderr while long work runs (ri-audit's
 * records, ri-sweep's acts), only when stderr is a terminal: redrawn at
 * most every 200 ms, erased at the end, never in a log or a cron mail. */
#ifndef RI_PROGRESS_H
#define RI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct ri_progress {
	bool on;
	const char *what;               /* "records", "acts" */
	int64_t total;                  /* 0: unknown */
	int64_t start_ms, last_ms;
	bool drawn;
};

/* on: the caller asked (and stderr is a terminal -- checked here). */
void ri_progress_begin(struct ri_progress *p, bool on, const char *what, int64_t total);
void ri_progress_tick(struct ri_progress *p, int64_t done);
/* The last count, then the line is erased. */
void ri_progress_end(struct ri_progress *p, int64_t done);

#endif
