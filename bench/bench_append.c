/*
 * bench_append.c -- the cost of one append (record_action) on a small
 * journal and on a journal of 10^5 records.
 *
 * Target: "the cost per append at 10^5 is no more than the first 1,000's"
 * (an append is O(log n): three authenticated heads, an indexed max(seq)
 * per scope, one INSERT, one fsync'd commit).  A ratio up to 1.2 is
 * allowed as noise.
 *
 * Every append is the real one -- the same transaction, the same fsync
 * (synchronous=FULL), the same chain and MAC -- including the fill from
 * 1,000 to 10^5: nothing is bulk-loaded around the store.
 *
 * Environment: RI_BIN (ri-init, ri-actor), TMPDIR, and for a quick run
 * RI_BENCH_TOTAL (default 100000) and RI_BENCH_SAMPLE (default 1000).
 * Exit 0 on PASS, 1 on FAIL.
 */
#include <time.h>

#include "../tests/unit/testlib.h"
#include "instance.h"
#include "store.h"

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static long
env_long(const char *name, long dflt)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (v == NULL || *v == '\0')
		return dflt;
	n = strtol(v, &end, 10);
	CHECK(*end == '\0' && n > 0, "%s=%s: expected a positive integer", name, v);
	return n;
}

/* The i-th append of a realistic stream: an intent, then its closing, over
 * 1,000 acts, each invocation its own -- so the three heads and the
 * derived index of open intents all move. */
static void
one(ri *r, const char *cred, long i, double *ms)
{
	char inv[48], key[32], data[96];
	struct ri_appended out;
	long pair = i / 2;
	int rc;

	snprintf(inv, sizeof inv, "inv_%010ld", pair);
	snprintf(key, sizeof key, "subject-%ld", pair % 1000);
	snprintf(data, sizeof data, "{\"amount\":%ld,\"pairing_datum\":\"n-%ld\"}", i, pair);
	json_t *j = json_loads(data, 0, NULL);
	struct ri_append a = {
		.action_ref = i % 2 ? "ledger.disclosed" : "ledger.intended",
		.act_key = key, .invocation_id = inv, .actor_ref = "alice",
		.credential = cred, .data = j,
	};
	double t = now_ms();
	rc = r->st->ops->record_action(r->st, &a, &out);
	double el = now_ms() - t;
	json_decref(j);
	CHECK(rc == RI_ST_OK, "append %ld: %d %s", i, rc, r->st->ops->error(r->st)->msg);
	if (ms != NULL)
		*ms = el;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stats {
	double mean, median, p99, max;
};

static struct stats
stats_of(double *v, long n)
{
	struct stats s = { 0 };

	for (long i = 0; i < n; i++)
		s.mean += v[i];
	s.mean /= (double)n;
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	s.median = v[n / 2];
	s.p99 = v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
	s.max = v[n - 1];
	return s;
}

int
main(void)
{
	struct tl_instance ti;
	struct tl_cfg cfg = { .clock = "system" };
	long total = env_long("RI_BENCH_TOTAL", 100000), sample = env_long("RI_BENCH_SAMPLE", 1000);
	double *v = calloc((size_t)sample, sizeof *v);
	int64_t seq;
	unsigned char h[32];
	long i = 0;

	tl_init();
	CHECK(v != NULL && total > 2 * sample, "RI_BENCH_TOTAL must exceed twice RI_BENCH_SAMPLE");
	tl_instance(&ti, "bench-append", &cfg);
	ri *r = NULL;
	ri_err err = { 0 };
	CHECK(ri_instance_open(ti.config, 0, &r, &err) == RI_OK, "open: %s", err.msg);
	CHECK(r->st->ops->head(r->st, &seq, h) == RI_ST_OK, "head");
	long base = (long)seq;         /* the actor's own record */

	/* 1. the first 1,000 appends */
	double t0 = now_ms();
	for (long k = 0; k < sample; k++, i++)
		one(r, ti.cred, i, &v[k]);
	double first_wall = now_ms() - t0;
	struct stats a = stats_of(v, sample);

	/* 2. fill to 10^5 records with the real append */
	long fill = total - sample - base - i;
	t0 = now_ms();
	for (long k = 0; k < fill; k++, i++)
		one(r, ti.cred, i, NULL);
	double fill_wall = now_ms() - t0;
	CHECK(r->st->ops->head(r->st, &seq, h) == RI_ST_OK, "head");
	long at = (long)seq;

	/* 3. another 1,000 at 10^5 */
	t0 = now_ms();
	for (long k = 0; k < sample; k++, i++)
		one(r, ti.cred, i, &v[k]);
	double last_wall = now_ms() - t0;
	struct stats b = stats_of(v, sample);
	CHECK(r->st->ops->head(r->st, &seq, h) == RI_ST_OK && seq == total, "the journal holds %lld records",
	    (long long)seq);
	ri_instance_close(r);

	double ratio = b.mean / a.mean;
	printf("bench_append: per-append cost, %ld appends each, fsync per append (synchronous=FULL)\n", sample);
	printf("  %-28s %10s %10s %10s %10s %10s\n", "phase", "records", "mean ms", "median ms", "p99 ms",
	    "wall s");
	printf("  %-28s %10ld %10.3f %10.3f %10.3f %10.2f\n", "first 1,000 (journal empty)", base + sample,
	    a.mean, a.median, a.p99, first_wall / 1000.0);
	printf("  %-28s %10ld %10.3f %10s %10s %10.2f\n", "fill (real appends)", at,
	    fill > 0 ? fill_wall / (double)fill : 0.0, "-", "-", fill_wall / 1000.0);
	printf("  %-28s %10lld %10.3f %10.3f %10.3f %10.2f\n", "1,000 more at 10^5", (long long)seq,
	    b.mean, b.median, b.p99, last_wall / 1000.0);
	printf("  ratio (mean at 10^5 / mean of the first 1,000): %.3f   (median ratio %.3f)\n", ratio,
	    b.median / a.median);
	printf("  target: the cost per append at 10^5 is no more than the first 1,000's (ratio <= 1.2 as noise)\n");
	printf("%s\n", ratio <= 1.2 ? "PASS" : "FAIL");
	free(v);
	return ratio <= 1.2 ? 0 : 1;
}
