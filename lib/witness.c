/* witness.c -- the witness file: append a seal's line, read the newest. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "witness.h"

#define TAIL 65536              /* the newest line is within the file's last 64 KiB */

int
ri_witness_create(const char *path, ri_err *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return ri_fail(err, errno == EEXIST ? RI_USAGE : RI_CONFIG, "witness %s: %s", path,
		    errno == EEXIST ? "already exists; refusing to overwrite" : strerror(errno));
	if (fchmod(fd, 0600) != 0 || fsync(fd) != 0) {
		int e = errno;
		close(fd);
		return ri_fail(err, RI_CONFIG, "witness %s: %s", path, strerror(e));
	}
	close(fd);
	return RI_OK;
}

void
ri_witness_sign(struct ri_witness_line *l, const unsigned char sk[64])
{
	unsigned char msg[RI_SEAL_MSG_LEN];

	ri_seal_message(l->instance_id, l->seq, l->hash, msg);
	crypto_sign_detached(l->sig, NULL, msg, sizeof msg, sk);
}

bool
ri_witness_verify(const struct ri_witness_line *l, const unsigned char pk[32])
{
	unsigned char msg[RI_SEAL_MSG_LEN];

	ri_seal_message(l->instance_id, l->seq, l->hash, msg);
	return crypto_sign_verify_detached(l->sig, msg, sizeof msg, pk) == 0;
}

int
ri_witness_append(const char *path, const struct ri_witness_line *l, json_t *restore, ri_err *err)
{
	char ih[2 * RI_INSTANCE_LEN + 1], hh[2 * RI_HASH_LEN + 1], sh[2 * 64 + 1];
	json_t *j;
	char *text;
	int fd, rc = RI_OK;

	ri_hex(l->instance_id, RI_INSTANCE_LEN, ih);
	ri_hex(l->hash, RI_HASH_LEN, hh);
	ri_hex(l->sig, 64, sh);
	j = json_pack("{s:s, s:I, s:s, s:s}", "instance_id", ih, "seq", (json_int_t)l->seq, "hash", hh,
	    "signature", sh);
	if (restore != NULL)
		json_object_set(j, "restore", restore);
	text = ri_json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	size_t n = strlen(text);
	text = realloc(text, n + 2);
	if (text == NULL)
		abort();
	text[n++] = '\n';
	text[n] = '\0';
	/* the file must exist: ri-init made it; a missing witness is never
	 * silently started again */
	if ((fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW)) < 0) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "witness %s: %s", path, strerror(errno));
	} else {
		if (write(fd, text, n) != (ssize_t)n || fsync(fd) != 0)
			rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "witness %s: %s", path, strerror(errno));
		close(fd);
	}
	free(text);
	return rc;
}

static bool
hex_field(json_t *o, const char *k, unsigned char *out, size_t n)
{
	const char *s = json_string_value(json_object_get(o, k));
	size_t got;

	return s != NULL && strlen(s) == 2 * n && sodium_hex2bin(out, n, s, strlen(s), NULL, &got, NULL) == 0 &&
	    got == n;
}

static bool
parse_line(const char *s, size_t len, struct ri_witness_line *l)
{
	json_error_t je;
	json_t *j = json_loadb(s, len, JSON_REJECT_DUPLICATES, &je), *seq;
	bool ok;

	memset(l, 0, sizeof *l);
	seq = json_object_get(j, "seq");
	ok = json_is_object(j) && hex_field(j, "instance_id", l->instance_id, RI_INSTANCE_LEN) &&
	    hex_field(j, "hash", l->hash, RI_HASH_LEN) && hex_field(j, "signature", l->sig, 64) &&
	    json_is_integer(seq) && json_integer_value(seq) >= 1;
	if (ok) {
		l->seq = json_integer_value(seq);
		l->restore = json_object_get(j, "restore") != NULL;
	}
	json_decref(j);
	return ok;
}

int
ri_witness_newest(const char *path, struct ri_witness_line *out, ri_err *err)
{
	struct stat sb;
	char *buf;
	off_t from;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
		if (errno == ENOENT)
			return ri_fail(err, RI_INTEGRITY, "witness %s is missing: the journal cannot be checked"
			    " against it (restore the witness, or run ri-init --accept-restore)", path);
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "witness %s: %s", path, strerror(errno));
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return ri_fail(err, RI_INTEGRITY, "witness %s: not a regular file", path);
	}
	from = sb.st_size > TAIL ? sb.st_size - TAIL : 0;
	buf = ri_xmalloc(TAIL + 1);
	n = pread(fd, buf, (size_t)(sb.st_size - from), from);
	close(fd);
	if (n < 0) {
		free(buf);
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "witness %s: %s", path, strerror(errno));
	}
	/* the newest complete line: a torn last line (a crash mid-append) was
	 * never a witnessed seal */
	ssize_t end = n;
	while (end > 0 && buf[end - 1] != '\n')
		end--;
	if (end <= 0) {
		free(buf);
		return ri_fail(err, RI_INTEGRITY, "witness %s holds no line: the journal cannot be checked"
		    " against it", path);
	}
	ssize_t start = end - 1;
	while (start > 0 && buf[start - 1] != '\n')
		start--;
	if ((start == 0 && from > 0) || !parse_line(buf + start, (size_t)(end - 1 - start), out)) {
		free(buf);
		return ri_fail(err, RI_INTEGRITY, "witness %s: its newest line is malformed", path);
	}
	free(buf);
	return RI_OK;
}

int
ri_witness_find(const char *path, const unsigned char instance[RI_INSTANCE_LEN], int64_t seq,
    const unsigned char hash[RI_HASH_LEN], bool *found, ri_err *err)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	*found = false;
	if (f == NULL)
		return ri_fail(err, errno == ENOENT ? RI_INTEGRITY : RI_JOURNAL_UNAVAILABLE, "witness %s: %s", path,
		    strerror(errno));
	while ((n = getline(&line, &cap, f)) > 0) {
		struct ri_witness_line l;
		if (line[n - 1] != '\n' || !parse_line(line, (size_t)n - 1, &l))
			continue;
		if (l.seq == seq && memcmp(l.instance_id, instance, RI_INSTANCE_LEN) == 0 &&
		    memcmp(l.hash, hash, RI_HASH_LEN) == 0) {
			*found = true;
			break;
		}
	}
	free(line);
	fclose(f);
	return RI_OK;
}
