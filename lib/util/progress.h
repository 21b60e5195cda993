/* progress.h -- a progress line while long work runs (ri-audit's records,
 * ri-sweep's acts): redrawn at most every 200 ms, erased at the end.  The
 * library counts and words the line; it never prints: the CLI installs the
 * drawer (ri_progress_set), and only where stderr is a terminal, so the
 * line never reaches a log or a cron mail. */
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

/* line: the line to draw over the last one; NULL: erase it. */
typedef void ri_progress_fn(const char *line);
void ri_progress_set(ri_progress_fn *fn);

/* on: the caller asked (and a drawer is installed). */
void ri_progress_begin(struct ri_progress *p, bool on, const char *what, int64_t total);
void ri_progress_tick(struct ri_progress *p, int64_t done);
/* The last count, then the line is erased. */
void ri_progress_end(struct ri_progress *p, int64_t done);

#endif
