/* test_mem.c -- the size classes (lib/util/mem.c, issue 15).  SQLite's
 * allocator in a single-threaded command: every size class and the large
 * blocks through sqlite3_malloc/realloc/free, each block aligned, as large
 * as asked, its own (no two live blocks overlap), its contents kept by a
 * realloc; a freed block reused for the next of its class; then a real
 * journal-shaped database written and read back through it.  jansson's
 * allocator in every command: JSON values of every class and larger, made
 * and freed by two threads at once, each freeing the other's too, their
 * contents intact; json_dumps' text through ri_json_dumps, freed with
 * free().  A sanitizer build keeps malloc (the installs answer false),
 * and this test then checks only that. */
#include <pthread.h>
#include <sqlite3.h>
#include <time.h>

#include "testlib.h"
#include "util/mem.h"
#include "store/sqlite/store_sqlite.h"
#include "util/util.h"

#define LIVE 4000

static unsigned char *blk[LIVE];
static int want[LIVE];

static void
fill(int i)
{
	memset(blk[i], (unsigned char)(i * 7 + 1), (size_t)want[i]);
}

static void
check_block(int i)
{
	for (int k = 0; k < want[i]; k++)
		CHECK(blk[i][k] == (unsigned char)(i * 7 + 1), "block %d (%d bytes): byte %d overwritten", i, want[i], k);
}

static void
blocks(bool ours)
{
	const char *s = getenv("TEST_MEM_SEED");

	tl_seed(s != NULL && *s != '\0' ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)getpid());
	printf("# seed %llu (TEST_MEM_SEED)\n", (unsigned long long)*tl_rng());

	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < LIVE; i++) {
			/* mostly small, every class edge, some large */
			int n = (int)(tl_rnd() % 100 < 95 ? tl_rnd() % 4200 : 4096 + tl_rnd() % 20000);
			if (i < 64)
				n = 16 * (i + 1) + (int)(tl_rnd() % 3) - 1;
			if (n == 0)
				n = 1;  /* sqlite3_malloc(0) is NULL by its contract */
			if (blk[i] != NULL) {
				check_block(i);
				sqlite3_free(blk[i]);
			}
			want[i] = n;
			blk[i] = sqlite3_malloc(n);
			CHECK(blk[i] != NULL, "sqlite3_malloc(%d)", n);
			/* SQLite's contract: 8-byte alignment */
			CHECK(((uintptr_t)blk[i] & 7) == 0, "block of %d bytes not 8-byte aligned", n);
			CHECK(sqlite3_msize(blk[i]) >= (sqlite3_uint64)(n > 0 ? n : 1), "msize %llu < %d",
			    (unsigned long long)sqlite3_msize(blk[i]), n);
			fill(i);
		}
		for (int i = 0; i < LIVE; i++)
			check_block(i);
		/* realloc keeps the contents, growing across classes and to large */
		for (int i = 0; i < LIVE; i += 3) {
			int n = want[i] * 2 + 1;
			unsigned char *q = sqlite3_realloc(blk[i], n);
			CHECK(q != NULL, "sqlite3_realloc to %d", n);
			blk[i] = q;
			check_block(i);
			want[i] = n;
			fill(i);
		}
		for (int i = 1; i < LIVE; i += 3) {
			int n = want[i] / 3;
			unsigned char *q = sqlite3_realloc(blk[i], n);
			CHECK(q != NULL || n == 0, "sqlite3_realloc down to %d", n);
			if (n == 0) {
				blk[i] = NULL;  /* sqlite3_realloc(p, 0) frees */
				continue;
			}
			blk[i] = q;
			want[i] = n;
			check_block(i);
		}
		for (int i = 0; i < LIVE; i++)
			if (blk[i] != NULL)
				check_block(i);
	}
	for (int i = 0; i < LIVE; i++) {
		sqlite3_free(blk[i]);
		blk[i] = NULL;
	}
	/* a freed block of a class is the next one of that class */
	void *a = sqlite3_malloc(100), *b;
	sqlite3_free(a);
	b = sqlite3_malloc(120);
	CHECK(a == b || !ours, "a freed 100-byte block is reused for 120 bytes (one class)");
	sqlite3_free(b);
	PASS("SQLite's size classes: aligned, large enough, disjoint, realloc keeps contents, freed blocks reused");
}

static void
database(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	sqlite3 *db;
	sqlite3_stmt *st;
	int n = 0;

	tl_tmpdir(dir, "mem");
	snprintf(path, sizeof path, "%s/t.db", dir);
	CHECK(sqlite3_open(path, &db) == SQLITE_OK, "open");
	CHECK(sqlite3_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT, b BLOB);"
	    "CREATE INDEX t_v ON t(v); BEGIN;", NULL, NULL, NULL) == SQLITE_OK, "schema: %s", sqlite3_errmsg(db));
	CHECK(sqlite3_prepare_v2(db, "INSERT INTO t(v, b) VALUES (printf('v%08d', ?1), zeroblob(?1 % 9000))", -1, &st,
	    NULL) == SQLITE_OK, "prepare");
	for (int i = 0; i < 5000; i++) {
		sqlite3_bind_int(st, 1, i);
		CHECK(sqlite3_step(st) == SQLITE_DONE, "insert %d: %s", i, sqlite3_errmsg(db));
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	CHECK(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK, "commit");
	CHECK(sqlite3_prepare_v2(db, "SELECT count(*), sum(length(b)) FROM t WHERE v >= 'v00001000'", -1, &st, NULL) ==
	    SQLITE_OK, "prepare select");
	CHECK(sqlite3_step(st) == SQLITE_ROW, "select");
	n = sqlite3_column_int(st, 0);
	long long sum = sqlite3_column_int64(st, 1), expect = 0;
	for (int i = 1000; i < 5000; i++)
		expect += i % 9000;
	CHECK(n == 4000 && sum == expect, "read back %d rows, %lld bytes (want 4000, %lld)", n, sum, expect);
	sqlite3_finalize(st);
	CHECK(sqlite3_exec(db, "PRAGMA integrity_check", NULL, NULL, NULL) == SQLITE_OK, "integrity_check");
	CHECK(sqlite3_close(db) == SQLITE_OK, "close");
	PASS("a WAL database written and read back through the size classes, integrity_check clean");
}

/* JSON values of every class and larger, by one thread: a string of n
 * bytes, an object of k keys, an array holding both; each checked after
 * all the others were made, then half handed to the other thread to free */
#define JLIVE 3000
#define JHALF (JLIVE / 2)

struct jthread {
	int id;
	json_t *v[JLIVE];
	json_t **give;                  /* the other thread's half, freed here */
	pthread_barrier_t *bar;
	int bad;
};

static size_t
jlen(int id, int i)
{
	return (size_t)((i * 37 + id * 11) % 5000);   /* 0 .. 4999: every class, and larger */
}

static json_t *
jmake(int id, int i)
{
	size_t n = jlen(id, i);
	char *text = malloc(n + 1), key[32];
	json_t *o = json_object(), *a = json_array();

	memset(text, 'a' + (i + id) % 26, n);
	text[n] = '\0';
	for (int k = 0; k < i % 9; k++) {
		snprintf(key, sizeof key, "k%d-%d", id, k);
		json_object_set_new(o, key, json_integer(i * 100 + k));
	}
	json_array_append_new(a, json_string(text));
	json_array_append_new(a, o);
	free(text);
	return a;
}

static bool
jok(int id, int i, const json_t *a)
{
	size_t n = jlen(id, i);
	const char *t = json_string_value(json_array_get(a, 0));
	json_t *o = json_array_get(a, 1);
	char key[32];

	if (t == NULL || strlen(t) != n || json_object_size(o) != (size_t)(i % 9))
		return false;
	for (size_t k = 0; k < n; k++)
		if (t[k] != 'a' + (i + id) % 26)
			return false;
	for (int k = 0; k < i % 9; k++) {
		snprintf(key, sizeof key, "k%d-%d", id, k);
		if (json_integer_value(json_object_get(o, key)) != i * 100 + k)
			return false;
	}
	return true;
}

static void *
jrun(void *arg)
{
	struct jthread *t = arg;

	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < JLIVE; i++)
			t->v[i] = jmake(t->id, i);
		for (int i = 0; i < JLIVE; i++)
			t->bad += !jok(t->id, i, t->v[i]);
		pthread_barrier_wait(t->bar);
		/* my first half is the other thread's to free; I free its */
		for (int i = 0; i < JHALF; i++) {
			json_decref(t->give[i]);
			json_decref(t->v[JHALF + i]);
		}
		pthread_barrier_wait(t->bar);
	}
	return NULL;
}

static void
json_blocks(bool ours)
{
	pthread_barrier_t bar;
	static struct jthread t[2];
	pthread_t tid[2];
	json_malloc_t m;
	json_free_t f;
	json_t *v, *back;
	char *text;

	json_get_alloc_funcs(&m, &f);
	CHECK((m != malloc && f != free) == ours, "jansson's allocator %s the size classes, and should%s be",
	    m != malloc ? "is" : "is not", ours ? "" : " not");
	pthread_barrier_init(&bar, NULL, 2);
	for (int k = 0; k < 2; k++) {
		t[k].id = k;
		t[k].bar = &bar;
		t[k].give = t[1 - k].v;
	}
	for (int k = 0; k < 2; k++)
		CHECK(pthread_create(&tid[k], NULL, jrun, &t[k]) == 0, "pthread_create");
	for (int k = 0; k < 2; k++)
		pthread_join(tid[k], NULL);
	pthread_barrier_destroy(&bar);
	CHECK(t[0].bad == 0 && t[1].bad == 0, "JSON values altered while both threads allocated: %d, %d",
	    t[0].bad, t[1].bad);
	/* json_dumps' text, freed with free() by every caller of ri_json_dumps */
	v = jmake(0, 4321);
	text = ri_json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	CHECK(text != NULL, "ri_json_dumps");
	back = json_loads(text, 0, NULL);
	CHECK(back != NULL && json_equal(back, v), "ri_json_dumps' text reads back as the value");
	free(text);
	json_decref(back);
	json_decref(v);
	PASS("jansson's size classes: two threads making and freeing each other's values, contents intact;"
	    " ri_json_dumps' text freed with free()");
}

int
main(void)
{
	sqlite3_mem_methods m;
	const char *e = getenv("RI_MALLOC");
	bool want_ours = !(e != NULL && strcmp(e, "system") == 0), ours;

#if defined(__SANITIZE_ADDRESS__)
	want_ours = false;
#endif
	/* what every command does first (ri_cli_init), then at its journal's
	 * open (ri_instance_open) */
	CHECK(ri_json_mem_install() == want_ours, "the JSON install answers %s", want_ours ? "true" : "false");
	ri_sqlite_process_init(false);
	CHECK(sqlite3_config(SQLITE_CONFIG_GETMALLOC, &m) == SQLITE_OK, "SQLITE_CONFIG_GETMALLOC");
	/* the size classes round 100 up to 128; SQLite's own allocator to 104 */
	ours = m.xRoundup(100) == 128;
	CHECK(ours == want_ours, "the size classes %s installed, and should%s be", ours ? "are" : "are not",
	    want_ours ? "" : " not");
	printf("# SQLite's and jansson's allocator: %s\n", ours ? "the size classes (lib/util/mem.c)" : "malloc");
	blocks(ours);
	database();
	json_blocks(ours);
	return 0;
}
