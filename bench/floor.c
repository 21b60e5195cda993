/*
 * floor.c -- BENCHMARK ONLY: the physical floor an Open + Close pair is
 * measured against (issue 15, target 1), and a page-cache evictor for the
 * cold-cache runs.  Built without libri, SQLite, libsodium or jansson:
 * the floor is a bare process start, not ours.
 *
 *   floor append FILE [-]   one O_DSYNC append of 4 KiB to FILE (created),
 *                           then one short JSON line on stdout, as ri-open
 *                           answers; with "-", stdin is read to its end
 *                           first, as ri-close reads its request
 *   floor evict FILE...     drop each FILE's clean pages from the page
 *                           cache (fdatasync, then POSIX_FADV_DONTNEED):
 *                           the next read of it comes from the disk --
 *                           no root needed, unlike drop_caches
 *
 * The pair's floor is then, in the shell shape of bench/01-pair.sh:
 *   o=$(floor append F); printf '%s' "$o" | floor append F - >/dev/null
 * two process starts, two synchronous appends, one pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
append(const char *path, int read_stdin)
{
	static char block[4096];
	char buf[4096];
	int fd;

	if (read_stdin)
		while (read(0, buf, sizeof buf) > 0)
			;
	memset(block, 'r', sizeof block);
	block[sizeof block - 1] = '\n';
	if ((fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_DSYNC | O_CLOEXEC, 0600)) < 0 ||
	    write(fd, block, sizeof block) != (ssize_t)sizeof block || close(fd) != 0) {
		fprintf(stderr, "floor: %s: %s\n", path, strerror(errno));
		return 1;
	}
	printf("{\"floor\":\"appended\",\"bytes\":%zu}\n", sizeof block);
	return 0;
}

static int
evict(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0) {
		fprintf(stderr, "floor: %s: %s\n", path, strerror(errno));
		return 1;
	}
	(void)fdatasync(fd);    /* only clean pages can be dropped */
	rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	if (rc != 0) {
		fprintf(stderr, "floor: evict %s: %s\n", path, strerror(rc));
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "append") == 0)
		return append(argv[2], argc >= 4 && strcmp(argv[3], "-") == 0);
	if (argc >= 3 && strcmp(argv[1], "evict") == 0) {
		int rc = 0;
		for (int i = 2; i < argc; i++)
			rc |= evict(argv[i]);
		return rc;
	}
	fprintf(stderr, "usage: floor append FILE [-] | floor evict FILE...\n");
	return 2;
}
