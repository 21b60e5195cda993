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
 * Method (issue 15, target 6): two journals, "small" (its first 1,000
 * appends, then measured as it grows by another 1,000) and "large"
 * (filled to 10^5, then measured as it grows by 1,000), measured in
 * blocks that alternate small / large in ABBA order, RI_BENCH_ROUNDS
 * rounds (default 5) of RI_BENCH_SAMPLE / rounds appends each, every
 * block on a freshly opened handle (so both start as a new command
 * does: cold page cache, the WAL as the last block left it).  The verdict
 * is the ratio of the median appends; the mean ratio, which also holds
 * the checkpoints (one every ~65 appends, each writing the pages those
 * appends dirtied -- more distinct pages in a larger journal) is printed
 * beside it, with the p99.
 *
 * Environment: RI_BIN (ri-init, ri-actor), TMPDIR, and for a quick run
 * RI_BENCH_TOTAL (default 100000), RI_BENCH_SAMPLE (default 1000) and
 * RI_BENCH_ROUNDS (default 5).  Exit 0 on PASS, 1 on FAIL.
 */
#include <time.h>

#include "../tests/unit/testlib.h"
#include "protocol/instance.h"
#include "store/store.h"

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

/* One measured block: n appends on a fresh handle; their times into v. */
static void
block(const struct tl_instance *ti, long *i, long n, double *v)
{
	ri *r = NULL;
	ri_err err = { 0 };

	CHECK(ri_instance_open(ti->config, 0, &r, &err) == RI_OK, "open: %s", err.msg);
	for (long k = 0; k < n; k++, (*i)++)
		one(r, ti->cred, *i, v ? &v[k] : NULL);
	ri_instance_close(r);
}

int
main(void)
{
	struct tl_instance small, large;
	struct tl_cfg cfg = { .clock = "system" };
	long total = env_long("RI_BENCH_TOTAL", 100000), sample = env_long("RI_BENCH_SAMPLE", 1000);
	long rounds = env_long("RI_BENCH_ROUNDS", 5);
	long per = sample / rounds;
	double *vs = calloc((size_t)sample, sizeof *vs), *vl = calloc((size_t)sample, sizeof *vl);
	long is = 0, il = 0, ns = 0, nl = 0;
	ri *r = NULL;
	ri_err err = { 0 };
	int64_t seq, at;
	unsigned char h[32];

	tl_init();
	CHECK(vs != NULL && vl != NULL && per > 0 && total > 2 * sample,
	    "RI_BENCH_TOTAL must exceed twice RI_BENCH_SAMPLE, which must hold RI_BENCH_ROUNDS blocks");
	tl_instance(&small, "bench-append-small", &cfg);
	tl_instance(&large, "bench-append-large", &cfg);
	/* the small journal's first 1,000, the large one's fill to 10^5 */
	double t0 = now_ms();
	block(&small, &is, sample, NULL);
	CHECK(ri_instance_open(large.config, 0, &r, &err) == RI_OK, "open: %s", err.msg);
	CHECK(r->st->ops->head(r->st, &seq, h) == RI_ST_OK, "head");
	long fill = total - sample - (long)seq;
	ri_instance_close(r);
	double t1 = now_ms();
	block(&large, &il, fill, NULL);
	double fill_wall = now_ms() - t1;
	(void)t0;
	CHECK(ri_instance_open(large.config, 0, &r, &err) == RI_OK, "open: %s", err.msg);
	CHECK(r->st->ops->head(r->st, &at, h) == RI_ST_OK, "head");
	ri_instance_close(r);
	/* the measured blocks, ABBA */
	for (long k = 0; k < rounds; k++) {
		bool small_first = k % 2 == 0;
		for (int side = 0; side < 2; side++) {
			if ((side == 0) == small_first) {
				block(&small, &is, per, vs + ns);
				ns += per;
			} else {
				block(&large, &il, per, vl + nl);
				nl += per;
			}
		}
	}
	CHECK(ri_instance_open(large.config, 0, &r, &err) == RI_OK, "open: %s", err.msg);
	CHECK(r->st->ops->head(r->st, &seq, h) == RI_ST_OK && seq == at + nl, "the large journal holds %lld records",
	    (long long)seq);
	ri_instance_close(r);
	struct stats a = stats_of(vs, ns), b = stats_of(vl, nl);

	double ratio = b.median / a.median;
	printf("bench_append: per-append cost, %ld appends on each journal in %ld ABBA rounds, fsync per append"
	    " (synchronous=FULL)\n", sample, rounds);
	printf("  %-30s %10s %10s %10s %10s\n", "journal", "records", "mean ms", "median ms", "p99 ms");
	printf("  %-30s %10ld %10.3f %10.3f %10.3f\n", "small (its second 1,000)", is + 2, a.mean, a.median, a.p99);
	printf("  %-30s %10lld %10.3f %10.3f %10.3f\n", "large (at 10^5)", (long long)seq, b.mean, b.median, b.p99);
	printf("  fill of the large journal: %ld real appends, %.3f ms each\n", fill,
	    fill > 0 ? fill_wall / (double)fill : 0.0);
	printf("  ratio (median at 10^5 / median at 10^3): %.3f   (mean ratio %.3f: the checkpoints included)\n",
	    ratio, b.mean / a.mean);
	printf("  target: the cost per append at 10^5 is no more than at 10^3 (median ratio <= 1.2 as noise)\n");
	printf("%s\n", ratio <= 1.2 ? "PASS" : "FAIL");
	free(vs);
	free(vl);
	return ratio <= 1.2 ? 0 : 1;
}
