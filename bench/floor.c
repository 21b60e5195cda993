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
 *   floor orphan N REQ ARGV...
 *                           the floor of one orphan's closure in a sweep
 *                           (issue 15, target 4), N times: run ARGV (no
 *                           shell, as the sweep runs a probe) with the
 *                           file REQ on its stdin and its stdout read to
 *                           the end, then two O_DSYNC appends of 4 KiB in
 *                           this process; prints the mean ms of each part
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
#include <sys/wait.h>
#include <time.h>
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

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* one run of argv, REQ on its stdin, its stdout read to the end */
static int
spawn(const char *req, char **argv)
{
	char buf[4096];
	int out[2], in, status;
	pid_t pid;

	if ((in = open(req, O_RDONLY | O_CLOEXEC)) < 0 || pipe(out) != 0)
		return -1;
	if ((pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		dup2(in, 0);
		dup2(out[1], 1);
		close(out[0]);
		close(out[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(in);
	close(out[1]);
	while (read(out[0], buf, sizeof buf) > 0)
		;
	close(out[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return 0;
}

static int
orphan(int n, const char *req, char **argv)
{
	static char block[4096];
	double probe = 0, appends = 0, t;
	char path[] = "/tmp/ri-floor-orphan.XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return 1;
	close(fd);
	memset(block, 'r', sizeof block);
	for (int i = 0; i < n; i++) {
		t = now_ms();
		if (spawn(req, argv) != 0) {
			fprintf(stderr, "floor: orphan: %s failed\n", argv[0]);
			unlink(path);
			return 1;
		}
		probe += now_ms() - t;
		t = now_ms();
		for (int k = 0; k < 2; k++)
			if ((fd = open(path, O_WRONLY | O_APPEND | O_DSYNC | O_CLOEXEC)) < 0 ||
			    write(fd, block, sizeof block) != (ssize_t)sizeof block || close(fd) != 0) {
				unlink(path);
				return 1;
			}
		appends += now_ms() - t;
	}
	unlink(path);
	printf("%.3f %.3f\n", probe / n, appends / n);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc >= 5 && strcmp(argv[1], "orphan") == 0)
		return orphan(atoi(argv[2]) > 0 ? atoi(argv[2]) : 1, argv[3], argv + 4);
	if (argc >= 3 && strcmp(argv[1], "append") == 0)
		return append(argv[2], argc >= 4 && strcmp(argv[3], "-") == 0);
	if (argc >= 3 && strcmp(argv[1], "evict") == 0) {
		int rc = 0;
		for (int i = 2; i < argc; i++)
			rc |= evict(argv[i]);
		return rc;
	}
	fprintf(stderr, "usage: floor append FILE [-] | floor evict FILE... | floor orphan N REQ ARGV...\n");
	return 2;
}
