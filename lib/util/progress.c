/* progress.c -- the progress line (progress.h). */
#include <stdio.h>
#include <unistd.h>

#include "util/progress.h"
#include "util/util.h"

void
ri_progress_begin(struct ri_progress *p, bool on, const char *what, int64_t total)
{
	p->on = on && isatty(STDERR_FILENO);
	p->what = what;
	p->total = total;
	p->start_ms = p->last_ms = ri_mono_ms();
	p->drawn = false;
}

static void
draw(struct ri_progress *p, int64_t done, int64_t now)
{
	int64_t ms = now - p->start_ms;
	long long rate = ms > 0 ? (long long)(done * 1000 / ms) : (long long)done;

	if (p->total > 0)
		fprintf(stderr, "\r%s: %lld of %lld %s done (%lld %s/s, %lld.%01lld s)\033[K", ri_progname,
		    (long long)done, (long long)p->total, p->what, rate, p->what, (long long)(ms / 1000),
		    (long long)(ms % 1000 / 100));
	else
		fprintf(stderr, "\r%s: %lld %s done (%lld %s/s, %lld.%01lld s)\033[K", ri_progname,
		    (long long)done, p->what, rate, p->what, (long long)(ms / 1000),
		    (long long)(ms % 1000 / 100));
	fflush(stderr);
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
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->on = false;
}
