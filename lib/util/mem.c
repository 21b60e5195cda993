/* mem.c -- the size classes: SQLite's allocator in a single-threaded
 * command, and jansson's in every command (issue 15).
 *
 * A command makes some 1,800 small SQLite allocations -- the schema's
 * objects, which SQLite never takes from its lookaside, and each
 * statement's parse tree -- and glibc's malloc and free spent ~0.45 M
 * instructions on them, an eighth of an ri-open.  jansson allocates each
 * JSON value, key and string on its own: ~25 blocks a record in ri-audit,
 * where malloc's per-size caches (seven blocks each) overflow and free
 * takes its slow path: on its own allocator the audit takes 6-9% less
 * time (bench/04's journal, runs interleaved).  Here a block
 * of up to 4 KiB comes from one of sixteen size classes: a LIFO list of
 * the class's freed blocks, else carved from a 64 KiB chunk; a larger
 * block is malloc's.  A freed block stays in its class for the next block
 * of that size, and chunks go back only at exit, so the memory held is
 * the peak of each class -- a long run (the sweep, the audit) allocates
 * and frees the same shapes over and over.
 *
 * The lists and the chunk are each thread's own: no lock, and a block
 * freed by another thread than the one that carved it joins the freeing
 * thread's list (ri-audit's two threads share JSON values).  SQLite gets
 * them only in single-thread mode, which calls its allocator under no
 * mutex (ri_sqlite_process_init); jansson from the first statement of
 * every command (ri_cli_init), before any JSON value exists -- a value
 * made by malloc and freed here, or the reverse, corrupts both heaps.
 * So a string jansson returns to be freed (json_dumps) is copied to a
 * malloc'd one at the only call, ri_json_dumps.  A sanitizer build, and
 * RI_MALLOC=system (what tests/valgrind/run sets), keep malloc for every
 * block, so ASan and valgrind see each block on its own.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <sqlite3.h>

#include "util/mem.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define HDR 16                  /* keeps malloc's 16-byte alignment */
#define SMALL_MAX 4096
#define CHUNK (64 * 1024)
#define LARGE 0xff

static const int class_size[] = { 16, 32, 48, 64, 96, 128, 176, 256, 352, 512, 704, 1024, 1408, 2048, 2816, 4096 };
#define NCLASS (int)(sizeof class_size / sizeof class_size[0])

/* a block's header: its class, and for a large block its size */
struct hdr {
	int64_t size;
	int64_t cls;
};
_Static_assert(sizeof(struct hdr) == HDR, "the header keeps 16-byte alignment");

static unsigned char class_of[SMALL_MAX / 16 + 1];      /* (n + 15) / 16 -> class */
static _Thread_local void *free_list[NCLASS];            /* the next free block's user pointer */
static _Thread_local char *chunk;
static _Thread_local size_t chunk_left;

static struct hdr *
hdr_of(void *p)
{
	return (struct hdr *)((char *)p - HDR);
}

static void *
mem_malloc(int n)
{
	struct hdr *h;
	int c;

	if (n <= 0)
		n = 1;
	if (n > SMALL_MAX) {
		if ((h = malloc((size_t)n + HDR)) == NULL)
			return NULL;
		h->size = n;
		h->cls = LARGE;
		return (char *)h + HDR;
	}
	c = class_of[(n + 15) / 16];
	if (free_list[c] != NULL) {
		void *p = free_list[c];
		memcpy(&free_list[c], p, sizeof(void *));
		return p;
	}
	size_t need = (size_t)class_size[c] + HDR;
	if (chunk_left < need) {
		/* the old chunk's tail is left unused: at most one block's worth */
		if ((chunk = malloc(CHUNK)) == NULL) {
			chunk_left = 0;
			return NULL;
		}
		chunk_left = CHUNK;
	}
	h = (struct hdr *)chunk;
	chunk += need;
	chunk_left -= need;
	h->size = class_size[c];
	h->cls = c;
	return (char *)h + HDR;
}

static void
mem_free(void *p)
{
	struct hdr *h;

	if (p == NULL)
		return;
	h = hdr_of(p);
	if (h->cls == LARGE) {
		free(h);
		return;
	}
	memcpy(p, &free_list[h->cls], sizeof(void *));
	free_list[h->cls] = p;
}

static int
mem_size(void *p)
{
	return p == NULL ? 0 : (int)hdr_of(p)->size;
}

static void *
mem_realloc(void *p, int n)
{
	void *q;
	int old;

	if (p == NULL)
		return mem_malloc(n);
	old = mem_size(p);
	if (n <= old && hdr_of(p)->cls != LARGE)
		return p;
	if ((q = mem_malloc(n)) == NULL)
		return NULL;
	memcpy(q, p, (size_t)(old < n ? old : n));
	mem_free(p);
	return q;
}

static int
mem_roundup(int n)
{
	if (n <= 0)
		return 16;
	if (n <= SMALL_MAX)
		return class_size[class_of[(n + 15) / 16]];
	return (n + 7) & ~7;
}

static int
mem_init(void *arg)
{
	(void)arg;
	return SQLITE_OK;
}

static void
mem_shutdown(void *arg)
{
	(void)arg;
}

/* jansson's sizes are size_t: one past what a block can hold fails */
static void *
json_mem_malloc(size_t n)
{
	return n > (size_t)INT32_MAX - HDR ? NULL : mem_malloc((int)n);
}

/* The classes' table, and whether they are wanted: never under a
 * sanitizer or RI_MALLOC=system.  Called before a second thread exists. */
static bool
classes_ready(void)
{
	static int ready;       /* 0 unknown, 1 on, -1 off */
	const char *e;

	if (ready == 0) {
		e = getenv("RI_MALLOC");
		ready = SANITIZED || (e != NULL && strcmp(e, "system") == 0) ? -1 : 1;
		for (int i = 0, c = 0; ready == 1 && i <= SMALL_MAX / 16; i++) {
			while (class_size[c] < i * 16)
				c++;
			class_of[i] = (unsigned char)c;
		}
	}
	return ready == 1;
}

bool
ri_sqlite_mem_install(void)
{
	static const sqlite3_mem_methods m = {
		mem_malloc, mem_free, mem_realloc, mem_size, mem_roundup, mem_init, mem_shutdown, NULL
	};

	return classes_ready() && sqlite3_config(SQLITE_CONFIG_MALLOC, &m) == SQLITE_OK;
}

bool
ri_json_mem_install(void)
{
	static bool done;

	if (!classes_ready())
		return false;
	if (!done)
		json_set_alloc_funcs(json_mem_malloc, mem_free);
	done = true;
	return true;
}
