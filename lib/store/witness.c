/* witness.c -- the witness: one authenticated line per append, the highest
 * verified line read (witness.h; docs/INTEGRITY.md 4, issue 39). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "util/nc.h"
#include "store/witness.h"
#include "store/pg/witness_pg.h"

#define TAIL 65536              /* the highest line is among the file's last 64 KiB */
#define MAC_TAIL 74             /* ,"mac":"<64 hex>"} */
static const char seq_head[] = "{\"epoch\":";
static const char mac_head[] = ",\"mac\":\"";

struct ri_witness {
	char *where;
	unsigned char instance[RI_INSTANCE_LEN];
	bool bound;                             /* instance known (ri_witness_bind) */
	bool keyed;
	unsigned char key[RI_HASH_LEN];         /* HMAC(integrity key, "ri witness key") */
	bool has_pk;
	unsigned char pk[32];
	struct ri_witness_pg *pg;               /* a postgresql:// witness; NULL: a file */
	/* the newest line read ahead (ri_witness_read_newest), not judged
	 * yet: the read's outcome, and the line as read */
	bool kept;
	int kept_rc;
	ri_err kept_err;
	char *kept_text;
	size_t kept_len;
	int64_t kept_at;
	/* ... and the recent lines read with it (ri_witness_read_newest's
	 * recent), not judged yet: a journal snapshot begun after this read
	 * holds every record they name (issue 43, per-shard anchors) */
	bool recent_kept;
	int recent_rc;
	ri_err recent_err;
	struct kept_line { char *text; size_t len; int64_t at; } *recent;
	size_t nrecent, caprecent;
};

void
ri_witness_line_clear(struct ri_witness_line *l)
{
	json_decref(l->names);
	free(l->text);
	memset(l, 0, sizeof *l);
}

const char *
ri_witness_name(const struct ri_witness_line *l, const char *field)
{
	return l->names != NULL ? json_string_value(json_object_get(l->names, field)) : NULL;
}

void
ri_witnessed_clear(struct ri_witnessed *w)
{
	free(w->action_ref);
	free(w->kind);
	free(w->act_key);
	free(w->invocation_id);
	free(w->intent_event_id);
	free(w->actor_ref);
	free(w->pairing_datum);
	memset(w, 0, sizeof *w);
}

bool
ri_witness_is_pg(const char *where)
{
	return where != NULL && (strncmp(where, "postgresql://", 13) == 0 || strncmp(where, "postgres://", 11) == 0);
}

void
ri_witness_sign(const unsigned char instance[RI_INSTANCE_LEN], struct ri_witnessed *what, const unsigned char sk[64])
{
	unsigned char msg[RI_SEAL_MSG_LEN];

	ri_seal_message(instance, what->seq, what->hash, msg);
	crypto_sign_detached(what->sig, NULL, msg, sizeof msg, sk);
	what->has_sig = true;
}

bool
ri_witness_sig_ok(const struct ri_witness_line *l, const unsigned char pk[32])
{
	unsigned char msg[RI_SEAL_MSG_LEN];

	if (!l->has_sig)
		return false;
	ri_seal_message(l->instance_id, l->seq, l->hash, msg);
	return crypto_sign_verify_detached(l->sig, msg, sizeof msg, pk) == 0;
}

static bool
hex_field(json_t *o, const char *k, unsigned char *out, size_t n)
{
	const char *s = json_string_value(json_object_get(o, k));
	size_t got;

	return s != NULL && strlen(s) == 2 * n && sodium_hex2bin(out, n, s, strlen(s), NULL, &got, NULL) == 0 &&
	    got == n;
}

bool
ri_head_parse(const char *s, int64_t *seq, unsigned char hash[RI_HASH_LEN])
{
	const char *brace = strchr(s, '{'), *colon;
	size_t n;

	if (brace != NULL) {
		const char *end = strrchr(brace, '}');
		json_error_t je;
		json_t *j = end != NULL ? json_loadb(brace, (size_t)(end - brace + 1), 0, &je) : NULL, *js;
		bool ok = (js = json_object_get(j, "seq")) != NULL && json_is_integer(js) && json_integer_value(js) >= 1 &&
		    hex_field(j, "hash", hash, RI_HASH_LEN);
		if (ok)
			*seq = json_integer_value(js);
		json_decref(j);
		return ok;
	}
	char *e;
	long long v = strtoll(s, &e, 10);
	colon = strchr(s, ':');
	return v >= 1 && e == colon && colon != NULL && strlen(colon + 1) == 2 * RI_HASH_LEN &&
	    sodium_hex2bin(hash, RI_HASH_LEN, colon + 1, 2 * RI_HASH_LEN, NULL, &n, NULL) == 0 && n == RI_HASH_LEN &&
	    (*seq = v) >= 1;
}

/* ---- the file ------------------------------------------------------------- */

/* Open the witness file: a regular file, never through a symlink, and
 * never a FIFO that would block the reader (issue 40 point 3: O_NONBLOCK
 * until fstat has said what it is). */
static int
file_open(const char *path, int flags, int *fd, ri_err *err)
{
	if ((*fd = ri_open_regular(path, flags | O_NOFOLLOW, 0, NULL, 0)) >= 0)
		return RI_OK;
	if (errno == ENOENT)
		return ri_fail(err, RI_INTEGRITY, "witness %s is missing: the journal cannot be checked"
		    " against it (restore the witness, or run ri-init --accept-restore)", path);
	if (errno == ELOOP)
		return ri_fail(err, RI_INTEGRITY, "witness %s is a symbolic link: refused", path);
	if (errno == EINVAL)
		return ri_fail(err, RI_INTEGRITY, "witness %s: not a regular file", path);
	return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "witness %s: %s", path, strerror(errno));
}

int
ri_witness_remove(const char *where, ri_err *err)
{
	if (ri_witness_is_pg(where))
		return ri_witness_pg_drop(where, err);
	if (unlink(where) != 0 && errno != ENOENT)
		return ri_fail(err, RI_CONFIG, "witness %s: %s", where, strerror(errno));
	return RI_OK;
}

int
ri_witness_create(const char *where, ri_err *err)
{
	int fd;

	if (ri_witness_is_pg(where))
		return ri_witness_pg_create(where, err);
	fd = open(where, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return ri_fail(err, errno == EEXIST ? RI_USAGE : RI_CONFIG, "witness %s: %s", where,
		    errno == EEXIST ? "already exists; refusing to overwrite" : strerror(errno));
	if (fchmod(fd, 0600) != 0 || fsync(fd) != 0) {
		int e = errno;
		close(fd);
		return ri_fail(err, RI_CONFIG, "witness %s: %s", where, strerror(e));
	}
	close(fd);
	return RI_OK;
}

int
ri_witness_open(const char *where, const unsigned char instance[RI_INSTANCE_LEN], const unsigned char *key,
    size_t keylen, const unsigned char *pk, struct ri_witness **out, ri_err *err)
{
	struct ri_witness *w = ri_xcalloc(1, sizeof *w);
	int rc;

	w->where = ri_strdup(where);
	if (instance != NULL)
		ri_witness_bind(w, instance);
	if (key != NULL) {
		static const char tag[] = "ri witness key";
		ri_mac(key, keylen, tag, sizeof tag - 1, w->key);
		w->keyed = true;
	}
	if (pk != NULL) {
		memcpy(w->pk, pk, 32);
		w->has_pk = true;
	}
	if (ri_witness_is_pg(where) && (rc = ri_witness_pg_open(where, &w->pg, err)) != RI_OK) {
		ri_witness_close(w);
		return rc;
	}
	*out = w;
	return RI_OK;
}

static void
recent_drop(struct ri_witness *w)
{
	for (size_t i = 0; i < w->nrecent; i++)
		free(w->recent[i].text);
	free(w->recent);
	w->recent = NULL;
	w->nrecent = w->caprecent = 0;
	w->recent_kept = false;
}

static void
recent_push(struct ri_witness *w, const char *text, size_t len, int64_t at)
{
	if (w->nrecent == w->caprecent) {
		w->caprecent = w->caprecent ? 2 * w->caprecent : 64;
		struct kept_line *grown = realloc(w->recent, w->caprecent * sizeof *w->recent);
		if (grown == NULL)
			abort();        /* as ri_xmalloc */
		w->recent = grown;
	}
	struct kept_line *k = &w->recent[w->nrecent++];
	k->text = ri_xmalloc(len + 1);
	memcpy(k->text, text, len);
	k->text[len] = '\0';
	k->len = len;
	k->at = at;
}

void
ri_witness_bind(struct ri_witness *w, const unsigned char instance[RI_INSTANCE_LEN])
{
	memcpy(w->instance, instance, RI_INSTANCE_LEN);
	w->bound = true;
}

void
ri_witness_close(struct ri_witness *w)
{
	if (w == NULL)
		return;
	free(w->kept_text);
	recent_drop(w);
	ri_witness_pg_close(w->pg);
	sodium_memzero(w->key, sizeof w->key);
	free(w->where);
	free(w);
}

/*
 * Parse and verify one line (text, len: without its newline) found at
 * `at` (-1: a row).  RI_OK with *out filled (verified or, for a reader
 * without the means, not); RI_INTEGRITY naming what is wrong.
 */
static int
line_judge(struct ri_witness *w, const char *text, size_t len, int64_t at, struct ri_witness_line *out,
    ri_err *err)
{
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je), *seq, *jat, *ep;
	char where[64];

	memset(out, 0, sizeof *out);
	if (!w->bound) {
		json_decref(j);
		return ri_fail(err, RI_INTERNAL, "witness %s: judged before its instance was known", w->where);
	}
	if (at >= 0)
		snprintf(where, sizeof where, "its line at offset %lld", (long long)at);
	else
		snprintf(where, sizeof where, "a row");
	seq = json_object_get(j, "seq");
	ep = json_object_get(j, "epoch");
	if (!json_is_object(j) || !json_is_integer(seq) || json_integer_value(seq) < 1 ||
	    (ep != NULL && (!json_is_integer(ep) || json_integer_value(ep) < 0)) ||
	    !hex_field(j, "instance_id", out->instance_id, RI_INSTANCE_LEN) ||
	    !hex_field(j, "hash", out->hash, RI_HASH_LEN)) {
		json_decref(j);
		return ri_fail(err, RI_INTEGRITY, "witness %s: %s is malformed", w->where, where);
	}
	out->seq = json_integer_value(seq);
	out->epoch = ep != NULL ? json_integer_value(ep) : 0;
	out->at = at;
	if (json_object_get(j, "signature") != NULL) {
		if (!hex_field(j, "signature", out->sig, 64)) {
			json_decref(j);
			return ri_fail(err, RI_INTEGRITY, "witness %s: %s is malformed", w->where, where);
		}
		out->has_sig = true;
	}
	out->names = j;
	out->text = ri_xmalloc(len + 1);
	memcpy(out->text, text, len);
	out->text[len] = '\0';
	if (memcmp(out->instance_id, w->instance, RI_INSTANCE_LEN) != 0) {
		ri_witness_line_clear(out);
		return ri_fail(err, RI_INTEGRITY, "journal integrity: the witness %s is another instance's"
		    " (or the journal is)", w->where);
	}
	if (json_object_get(j, "mac") == NULL) {
		/* a second-wave line: one per seal, signed, no MAC, no offset */
		out->legacy = true;
		if (!out->has_sig) {
			ri_witness_line_clear(out);
			return ri_fail(err, RI_INTEGRITY, "witness %s: %s carries neither a MAC nor a signature:"
			    " forged", w->where, where);
		}
	} else {
		unsigned char mac[RI_HASH_LEN];
		/* the MAC covers every byte before ,"mac": -- the offset among
		 * them, so a genuine line replayed elsewhere fails it */
		jat = json_object_get(j, "at");
		if (len < MAC_TAIL + sizeof seq_head || memcmp(text, seq_head, sizeof seq_head - 1) != 0 ||
		    memcmp(text + len - MAC_TAIL, mac_head, sizeof mac_head - 1) != 0 || text[len - 1] != '}' ||
		    text[len - 2] != '"' || !hex_field(j, "mac", mac, RI_HASH_LEN) ||
		    (at >= 0 ? !json_is_integer(jat) : jat != NULL)) {
			ri_witness_line_clear(out);
			return ri_fail(err, RI_INTEGRITY, "witness %s: %s is malformed", w->where, where);
		}
		if (w->keyed) {
			if (!RI_NC(RI_NC_WITNESS_UNVERIFIED) &&
			    (!ri_mac_ok(w->key, sizeof w->key, text, len - MAC_TAIL, mac, sizeof mac) ||
			    (at >= 0 && json_integer_value(jat) != at))) {
				int64_t s = out->seq;
				ri_witness_line_clear(out);
				return ri_fail(err, RI_INTEGRITY, "journal integrity: the witness %s: %s (seq %lld)"
				    " fails its MAC or is not where it was written: forged, replayed, or under"
				    " another key", w->where, where, (long long)s);
			}
			out->verified = true;
			/* a seal's line is checked by its signature too, where the
			 * public key is at hand: a seal under another key is not ours */
			if (!out->has_sig || !w->has_pk)
				return RI_OK;
		}
	}
	if (out->has_sig && w->has_pk) {
		if (!ri_witness_sig_ok(out, w->pk)) {
			int64_t s = out->seq;
			ri_witness_line_clear(out);
			return ri_fail(err, RI_INTEGRITY, "journal integrity: the witness %s: %s (seq %lld) is not"
			    " signed by the seal key: forged", w->where, where, (long long)s);
		}
		out->verified = true;
	}
	/* a keyed reader relies on nothing it could not verify */
	if (w->keyed && !out->verified) {
		int64_t s = out->seq;
		ri_witness_line_clear(out);
		return ri_fail(err, RI_INTEGRITY, "journal integrity: the witness %s: %s (seq %lld) cannot be"
		    " verified (a second-wave line needs the seal public key beside the seal key)", w->where, where,
		    (long long)s);
	}
	return RI_OK;
}

/* A line's (epoch, seq), read without parsing it whole: a line of ours
 * begins {"epoch":E,"seq":N; a second-wave line (epoch 0) is parsed.
 * false: neither. */
static bool
digits(const char *s, size_t len, size_t *i, int64_t *v)
{
	size_t from = *i;

	*v = 0;
	for (; *i < len && s[*i] >= '0' && s[*i] <= '9' && *v < INT64_MAX / 10 - 9; (*i)++)
		*v = *v * 10 + (s[*i] - '0');
	return *i > from && *i - from < 19 && (s[from] != '0' || *i - from == 1);
}

static bool
line_order(const char *s, size_t len, int64_t *epoch, int64_t *seq)
{
	static const char mid[] = ",\"seq\":";

	if (len > sizeof seq_head && memcmp(s, seq_head, sizeof seq_head - 1) == 0) {
		size_t i = sizeof seq_head - 1;
		if (!digits(s, len, &i, epoch) || len - i < sizeof mid || memcmp(s + i, mid, sizeof mid - 1) != 0)
			return false;
		i += sizeof mid - 1;
		return digits(s, len, &i, seq) && *seq >= 1 && i < len && s[i] == ',';
	}
	json_error_t je;
	json_t *j = json_loadb(s, len, 0, &je), *jseq = json_object_get(j, "seq");
	bool ok = json_is_integer(jseq) && json_integer_value(jseq) >= 1 && json_object_get(j, "epoch") == NULL;
	*epoch = 0;
	*seq = ok ? json_integer_value(jseq) : 0;
	json_decref(j);
	return ok;
}

/* The file's last TAIL bytes (buf malloc'ed, n of them, from offset from
 * of a file of size bytes), read a complete line at a time from p. */
struct window {
	char *buf;
	ssize_t n, p;
	off_t from, size;
};

/* The window over the file: a first line the window cuts is not read. */
static int
file_window(struct ri_witness *w, struct window *wd, ri_err *err)
{
	struct stat sb;
	int fd, rc;

	wd->buf = NULL;
	if ((rc = file_open(w->where, O_RDONLY, &fd, err)) != RI_OK)
		return rc;
	if (fstat(fd, &sb) != 0) {
		close(fd);
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "witness %s: %s", w->where, strerror(errno));
	}
	wd->size = sb.st_size;
	wd->from = sb.st_size > TAIL ? sb.st_size - TAIL : 0;
	wd->buf = ri_xmalloc(TAIL + 1);
	wd->n = pread(fd, wd->buf, (size_t)(sb.st_size - wd->from), wd->from);
	close(fd);
	if (wd->n < 0) {
		free(wd->buf);
		wd->buf = NULL;
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "witness %s: %s", w->where, strerror(errno));
	}
	wd->p = 0;
	if (wd->from > 0) {
		while (wd->p < wd->n && wd->buf[wd->p] != '\n')
			wd->p++;
		wd->p++;
	}
	return RI_OK;
}

/* The window's next complete line (*at: its offset in the file); false at
 * the window's end -- a torn last line (a crash mid-append) was never
 * written, so it ends the window too. */
static bool
window_line(struct window *wd, const char **line, size_t *len, int64_t *at)
{
	ssize_t e = wd->p;

	if (wd->p >= wd->n)
		return false;
	while (e < wd->n && wd->buf[e] != '\n')
		e++;
	if (e >= wd->n)
		return false;           /* torn */
	*line = wd->buf + wd->p;
	*len = (size_t)(e - wd->p);
	*at = (int64_t)wd->from + wd->p;
	wd->p = e + 1;
	return true;
}

/* The highest complete line among the file's last TAIL bytes, as read
 * (malloc'ed, not judged), and where it begins. */
static int
file_tail(struct ri_witness *w, char **text, size_t *len, int64_t *at, ri_err *err)
{
	struct window wd;
	const char *line, *best_line = NULL;
	size_t line_len, best_len = 0;
	int64_t line_at, best_at = -1, lines = 0, best_epoch = -1, best = 0;
	int rc;

	if ((rc = file_window(w, &wd, err)) != RI_OK)
		return rc;
	/* complete lines only: a torn last line (a crash mid-append) was never
	 * written, and a first line cut by the window is not read */
	while (window_line(&wd, &line, &line_len, &line_at)) {
		int64_t ep, s;
		if (!line_order(line, line_len, &ep, &s)) {
			free(wd.buf);
			return ri_fail(err, RI_INTEGRITY, "journal integrity: the witness %s: its line at offset %lld"
			    " is malformed", w->where, (long long)line_at);
		}
		lines++;
		/* the highest (epoch, sequence), never merely the last line: an
		 * older line appended after it does not move the witness back
		 * (negative control: the last line, whatever it says) */
		if (RI_NC(RI_NC_WITNESS_LAST_LINE) || ep > best_epoch || (ep == best_epoch && s >= best)) {
			best_epoch = ep;
			best = s;
			best_line = line;
			best_at = line_at;
			best_len = line_len;
		}
	}
	if (lines == 0) {
		free(wd.buf);
		return ri_fail(err, wd.size == 0 ? RI_NOT_KNOWN : RI_INTEGRITY, "journal integrity: the witness %s"
		    " holds no line: the journal cannot be checked against it", w->where);
	}
	*len = best_len;
	*at = best_at;
	*text = ri_xmalloc(*len + 1);
	memcpy(*text, best_line, *len);
	(*text)[*len] = '\0';
	free(wd.buf);
	return RI_OK;
}

/* Every complete line of the file's last TAIL bytes, each judged. */
static int
file_recent(struct ri_witness *w, ri_witness_fn each, void *arg, ri_err *err)
{
	struct window wd;
	const char *line;
	size_t len;
	int64_t at;
	int rc;

	if ((rc = file_window(w, &wd, err)) != RI_OK)
		return rc;
	for (bool stop = false; rc == RI_OK && !stop && window_line(&wd, &line, &len, &at);) {
		struct ri_witness_line l;
		if ((rc = line_judge(w, line, len, at, &l, err)) == RI_OK) {
			stop = each(&l, arg) != 0;
			ri_witness_line_clear(&l);
		}
	}
	free(wd.buf);
	return rc;
}

/* Cut a torn last line (no newline: a crash mid-append), so the next line
 * begins a line of its own.  Under the append lock. */
static int
repair_tail(int fd, off_t *size)
{
	char c, chunk[4096];
	off_t end = *size;

	if (end == 0 || pread(fd, &c, 1, end - 1) != 1)
		return end == 0 ? 0 : -1;
	if (c == '\n')
		return 0;
	while (end > 0) {
		off_t from = end > (off_t)sizeof chunk ? end - (off_t)sizeof chunk : 0;
		ssize_t n = pread(fd, chunk, (size_t)(end - from), from);
		if (n <= 0)
			return -1;
		for (ssize_t i = n - 1; i >= 0; i--)
			if (chunk[i] == '\n') {
				*size = from + i + 1;
				return ftruncate(fd, *size);
			}
		end = from;
	}
	*size = 0;
	return ftruncate(fd, 0);
}

/* The line for one record, at offset `at` (-1: a row), MACed. */
static char *
line_text(struct ri_witness *w, const struct ri_witnessed *what, int64_t at, size_t *len)
{
	char ih[2 * RI_INSTANCE_LEN + 1], hh[2 * RI_HASH_LEN + 1], sh[2 * 64 + 1], mh[2 * RI_HASH_LEN + 1];
	unsigned char mac[RI_HASH_LEN];
	json_t *j = json_object();
	char *text;
	size_t n;

	ri_hex(w->instance, RI_INSTANCE_LEN, ih);
	ri_hex(what->hash, RI_HASH_LEN, hh);
	/* in this order (jansson keeps insertion order): epoch and seq first,
	 * so a reader orders the lines without parsing them */
	json_object_set_new(j, "epoch", json_integer(what->epoch));
	json_object_set_new(j, "seq", json_integer(what->seq));
	if (at >= 0)
		json_object_set_new(j, "at", json_integer(at));
	json_object_set_new(j, "instance_id", json_string(ih));
	json_object_set_new(j, "hash", json_string(hh));
	json_object_set_new(j, "event_id", json_string(what->event_id));
#define NAME(f) do { if (what->f != NULL) json_object_set_new(j, #f, json_string(what->f)); } while (0)
	NAME(action_ref);
	NAME(kind);
	NAME(act_key);
	NAME(invocation_id);
	NAME(intent_event_id);
	NAME(actor_ref);
	NAME(pairing_datum);
#undef NAME
	if (what->has_sig) {
		ri_hex(what->sig, 64, sh);
		json_object_set_new(j, "signature", json_string(sh));
	}
	text = ri_json_dumps(j, JSON_COMPACT);
	json_decref(j);
	n = strlen(text);
	/* drop the closing brace; the MAC covers what is left */
	text[--n] = '\0';
	ri_mac(w->key, sizeof w->key, text, n, mac);
	ri_hex(mac, RI_HASH_LEN, mh);
	text = realloc(text, n + MAC_TAIL + 2);
	if (text == NULL)
		abort();
	snprintf(text + n, MAC_TAIL + 2, "%s%s\"}", mac_head, mh);
	*len = n + MAC_TAIL;
	return text;
}

static int
file_add(struct ri_witness *w, const struct ri_witnessed *what, ri_err *err)
{
	struct stat sb;
	size_t len;
	char *text;
	int fd, rc;

	/* the file must exist: ri-init made it; a missing witness is never
	 * silently started again */
	if ((rc = file_open(w->where, O_RDWR | O_APPEND, &fd, err)) != RI_OK)
		return rc == RI_INTEGRITY ? ri_fail(err, RI_JOURNAL_UNAVAILABLE, "%s", err->msg) : rc;
	/* one appender at a time, so the line knows where it begins */
	if (flock(fd, LOCK_EX) != 0 || fstat(fd, &sb) != 0) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "witness %s: %s", w->where, strerror(errno));
		close(fd);
		return rc;
	}
	off_t size = sb.st_size;
	if (repair_tail(fd, &size) != 0) {
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "witness %s: %s", w->where, strerror(errno));
		close(fd);
		return rc;
	}
	text = line_text(w, what, (int64_t)size, &len);
	text[len] = '\n';
	/* an intent's line and a seal's are synced (witness.h); the rest are
	 * not: a line lost to a crash leaves the witness behind the journal */
	if (write(fd, text, len + 1) != (ssize_t)(len + 1) || ((what->has_sig || what->sync) && fdatasync(fd) != 0))
		rc = ri_fail(err, RI_JOURNAL_UNAVAILABLE, "witness %s: %s", w->where, strerror(errno));
	free(text);
	close(fd);                      /* and its lock with it */
	return rc;
}

static int
file_each(struct ri_witness *w, ri_witness_fn each, void *arg, ri_err *err)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int64_t at = 0;
	int fd, rc;
	FILE *f;

	if ((rc = file_open(w->where, O_RDONLY, &fd, err)) != RI_OK)
		return rc;
	if ((f = fdopen(fd, "r")) == NULL) {
		close(fd);
		return ri_fail(err, RI_JOURNAL_UNAVAILABLE, "witness %s: %s", w->where, strerror(errno));
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		struct ri_witness_line l;
		if (line[n - 1] != '\n')
			break;                  /* torn: never written */
		if ((rc = line_judge(w, line, (size_t)n - 1, at, &l, err)) != RI_OK)
			break;
		int stop = each(&l, arg);
		ri_witness_line_clear(&l);
		at += n;
		if (stop)
			break;
	}
	free(line);
	fclose(f);
	return rc;
}

/* ---- the witness, a file or a table -------------------------------------- */

/* The newest line as read, unjudged (*text malloc'ed on RI_OK): the
 * file's highest, or the table's. */
static int
newest_raw(struct ri_witness *w, char **text, size_t *len, int64_t *at, ri_err *err)
{
	int rc;

	*text = NULL;
	*len = 0;
	*at = -1;
	if (w->pg == NULL)
		return file_tail(w, text, len, at, err);
	rc = ri_witness_pg_newest(w->pg, text, err);
	if (rc == RI_OK && *text == NULL)
		rc = ri_fail(err, RI_NOT_KNOWN, "journal integrity: the witness %s holds no line: the journal"
		    " cannot be checked against it", w->where);
	if (rc == RI_OK)
		*len = strlen(*text);
	return rc;
}

static int
recent_text(const char *text, void *arg)
{
	struct ri_witness *w = arg;

	recent_push(w, text, strlen(text), -1);
	return 0;
}

/* The recent lines as read, unjudged: the file's complete lines among its
 * last TAIL bytes, or the table's newest RI_WITNESS_RECENT rows. */
static int
recent_raw(struct ri_witness *w, ri_err *err)
{
	struct window wd;
	const char *line;
	size_t len;
	int64_t at;
	int rc;

	if (w->pg != NULL)
		return ri_witness_pg_each(w->pg, RI_WITNESS_RECENT, recent_text, w, err);
	if ((rc = file_window(w, &wd, err)) != RI_OK)
		return rc;
	while (window_line(&wd, &line, &len, &at))
		recent_push(w, line, len, at);
	free(wd.buf);
	return RI_OK;
}

void
ri_witness_read_newest(struct ri_witness *w, bool recent)
{
	free(w->kept_text);
	w->kept_rc = newest_raw(w, &w->kept_text, &w->kept_len, &w->kept_at, &w->kept_err);
	w->kept = true;
	recent_drop(w);
	if (recent) {
		w->recent_rc = recent_raw(w, &w->recent_err);
		w->recent_kept = true;
	}
}

bool
ri_witness_kept_seq(const struct ri_witness *w, int64_t *seq)
{
	int64_t epoch;

	*seq = 0;
	return w->kept && w->kept_rc == RI_OK && line_order(w->kept_text, w->kept_len, &epoch, seq);
}

int
ri_witness_newest(struct ri_witness *w, struct ri_witness_line *out, ri_err *err)
{
	char *text;
	size_t len;
	int64_t at;
	int rc;

	memset(out, 0, sizeof *out);
	if (w->kept) {
		/* read ahead: judged now, once */
		rc = w->kept_rc;
		if (rc != RI_OK)
			*err = w->kept_err;
		text = w->kept_text;
		len = w->kept_len;
		at = w->kept_at;
		w->kept = false;
		w->kept_text = NULL;
	} else {
		rc = newest_raw(w, &text, &len, &at, err);
	}
	if (rc == RI_OK)
		rc = line_judge(w, text, len, at, out, err);
	free(text);
	return rc;
}

int
ri_witness_add(struct ri_witness *w, const struct ri_witnessed *what, ri_err *err)
{
	if (!w->keyed || !w->bound)
		return ri_fail(err, RI_INTERNAL, "witness %s: appending needs the integrity key and the instance",
		    w->where);
	if (w->pg == NULL)
		return file_add(w, what, err);
	size_t len;
	char *text = line_text(w, what, -1, &len);
	int rc = ri_witness_pg_add(w->pg, what->seq, text, err);
	free(text);
	return rc;
}

struct pg_each {
	struct ri_witness *w;
	ri_witness_fn each;
	void *arg;
	ri_err *err;
	int rc;
};

static int
pg_each_line(const char *text, void *arg)
{
	struct pg_each *pe = arg;
	struct ri_witness_line l;

	if ((pe->rc = line_judge(pe->w, text, strlen(text), -1, &l, pe->err)) != RI_OK)
		return 1;
	int stop = pe->each(&l, pe->arg);
	ri_witness_line_clear(&l);
	return stop;
}

int
ri_witness_each(struct ri_witness *w, ri_witness_fn each, void *arg, ri_err *err)
{
	if (w->pg == NULL)
		return file_each(w, each, arg, err);
	struct pg_each pe = { .w = w, .each = each, .arg = arg, .err = err, .rc = RI_OK };
	int rc = ri_witness_pg_each(w->pg, 0, pg_each_line, &pe, err);
	return rc != RI_OK ? rc : pe.rc;
}

int
ri_witness_recent(struct ri_witness *w, ri_witness_fn each, void *arg, ri_err *err)
{
	if (w->recent_kept) {
		/* read ahead (ri_witness_read_newest): judged now, once */
		int rc = w->recent_rc;
		if (rc != RI_OK)
			*err = w->recent_err;
		for (size_t i = 0; rc == RI_OK && i < w->nrecent; i++) {
			struct ri_witness_line l;
			if ((rc = line_judge(w, w->recent[i].text, w->recent[i].len, w->recent[i].at, &l, err)) != RI_OK)
				break;
			int stop = each(&l, arg);
			ri_witness_line_clear(&l);
			if (stop)
				break;
		}
		recent_drop(w);
		return rc;
	}
	if (w->pg == NULL)
		return file_recent(w, each, arg, err);
	struct pg_each pe = { .w = w, .each = each, .arg = arg, .err = err, .rc = RI_OK };
	int rc = ri_witness_pg_each(w->pg, RI_WITNESS_RECENT, pg_each_line, &pe, err);
	return rc != RI_OK ? rc : pe.rc;
}

struct find {
	int64_t seq;
	const unsigned char *hash;
	bool found;
};

static int
find_one(const struct ri_witness_line *l, void *arg)
{
	struct find *f = arg;

	if (l->verified && l->seq == f->seq && memcmp(l->hash, f->hash, RI_HASH_LEN) == 0) {
		f->found = true;
		return 1;
	}
	return 0;
}

int
ri_witness_find(struct ri_witness *w, int64_t seq, const unsigned char hash[RI_HASH_LEN], bool *found, ri_err *err)
{
	struct find f = { .seq = seq, .hash = hash };
	int rc = ri_witness_each(w, find_one, &f, err);

	*found = f.found;
	return rc;
}
