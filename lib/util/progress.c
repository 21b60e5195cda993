/* progress.c -- the progress line (progress.h). */
#include <stdio.h>

#include "util/progress.h"
#include "util/util.h"

static ri_progress_fn *drawer;

void
ri_progress_set(ri_progress_fn *fn)
{
	drawer = fn;
}

void
ri_progress_begin(struct ri_progress *p, bool on, const char *what, int64_t total)
{
	p->on = on && drawer != NULL;
	p->what = what;
	p->total = total;
	p->start_ms = p->last_ms = ri_mono_ms();
	p->drawn = false;
}

static void
draw(struct ri_progress *p, int64_t done, int64_t now)
{
	char line[256];
	int64_t ms = now - p->start_ms;
	long long rate = ms > 0 ? (long long)(done * 1000 / ms) : (long long)done;

	if (p->total > 0)
		snprintf(line, sizeof line, "%s: %lld of %lld %s done (%lld %s/s, %lld.%01lld s)",
		    ri_progname, (long long)done, (long long)p->total, p->what, rate, p->what,
		    (long long)(ms / 1000), (long long)(ms % 1000 / 100));
	else
		snprintf(line, sizeof line, "%s: %lld %s done (%lld %s/s, %lld.%01lld s)",
		    ri_progname, (long long)done, p->what, rate, p->what, (long long)(ms / 1000),
		    (long long)(ms % 1000 / 100));
	drawer(line);
	p->drawn = true;
	p->last_ms = now;
}

void
ri_progress_tick(struct ri_progress *p, int64_t done)
{
	int64_t now;

	if (!p->on)
		return;
	now = ri_mono_ms();
	if (now - p->last_ms >= 200)
		draw(p, done, now);
}

void
ri_progress_end(struct ri_progress *p, int64_t done)
{
	if (!p->on)
		return;
	draw(p, done, ri_mono_ms());
	drawer(NULL);
	p->on = false;
}
