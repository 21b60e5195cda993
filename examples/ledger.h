/* ledger.h -- what the disclosure-ledger example's three programs share: the
 * store's schema and a few helpers.  Header-only (static inline) because the
 * top-level Makefile builds each examples/NAME.c into its own program; this
 * file is an example adopter's code and uses nothing from lib/.
 *
 * The store is the adopter's own SQLite database, not ri's journal.  The
 * probe reads it; only ledger-disclose (and the test helper ledger-admin)
 * writes it. */
#ifndef LEDGER_H
#define LEDGER_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* One row per disclosure made.  pairing_datum is the nonce ri-run minted for
 * the invocation (RI_PAIRING_DATUM); it is what the probe joins on.  It is
 * indexed but deliberately not UNIQUE: a duplicate is a state the probe must
 * be able to see and report (undecidable), not one the schema hides. */
#define LEDGER_SCHEMA                                                     \
	"CREATE TABLE IF NOT EXISTS disclosures("                         \
	" id INTEGER PRIMARY KEY,"                                        \
	" disclosure_id TEXT UNIQUE,"                                     \
	" subject TEXT,"                                                  \
	" recipient TEXT,"                                                \
	" scope TEXT,"                                                    \
	" pairing_datum TEXT,"                                            \
	" invocation_id TEXT,"                                            \
	" fencing_token INTEGER,"                                         \
	" disclosed_at TEXT);"                                            \
	"CREATE INDEX IF NOT EXISTS disclosures_pairing"                  \
	" ON disclosures(pairing_datum);"                                 \
	"CREATE TABLE IF NOT EXISTS fences("                              \
	" act TEXT PRIMARY KEY,"                                          \
	" token INTEGER);"

/* "dsc-" + 16 lowercase hex + NUL */
#define LEDGER_ID_LEN 21
/* 2026-11-29T22:40:00.123Z + NUL */
#define LEDGER_STAMP_LEN 25

/* A fresh disclosure id from the kernel's randomness; -1 if none could be
 * read (the caller must not write a row without an id). */
static inline int ledger_mint_id(char out[LEDGER_ID_LEN])
{
	unsigned char b[8];
	size_t got = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (got < sizeof b) {
		ssize_t n = read(fd, b + got, sizeof b - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return -1;
		}
		got += (size_t)n;
	}
	close(fd);
	snprintf(out, LEDGER_ID_LEN, "dsc-%02x%02x%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
	return 0;
}

/* The wall-clock instant, RFC 3339 UTC with milliseconds.  Informational
 * only: the probe never pairs on it (Invariant 3.4). */
static inline void ledger_stamp(char out[LEDGER_STAMP_LEN])
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(out, LEDGER_STAMP_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, LEDGER_STAMP_LEN - n, ".%03uZ",
		 (unsigned)(ts.tv_nsec / 1000000) % 1000u);
}

/* Sleep ms milliseconds, resuming after signals that do not end us. */
static inline void ledger_sleep_ms(long ms)
{
	struct timespec left = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&left, &left) < 0 && errno == EINTR)
		;
}

/* A non-negative decimal integer option value; -1 if it is not one. */
static inline long long ledger_parse_count(const char *s)
{
	long long v = 0;

	if (s == NULL || *s == '\0')
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

#endif
