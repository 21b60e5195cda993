/* ledger-probe -- the disclosure ledger's probe, in ri's probe protocol.
 *
 *   ledger-probe --store FILE [--outcome NAME] [--batch [--pidlog FILE]]
 *                [--hang|--crash|--junk|--flood|--wrong-key|--two-lines [--at N]]
 *
 * stdin:  {"kind":"…","act_key":"…","intent":{…the intent's payload…}}
 *         where the payload is {"invocation_id","kind","act_key","data":{…}}
 *         and data.pairing_datum is the nonce ri-run minted for the act.
 * stdout: exactly one of
 *         {"answer":"committed","outcome_action_ref":"<kind>.<NAME>",
 *          "outcome_data":{"disclosure_id","recipient","subject"}}
 *         {"answer":"not-committed"}
 *         {"answer":"undecidable","candidates":["dsc-…", …]}
 *         {"answer":"unavailable"}
 *         and exit 0.  Malformed stdin or bad usage exits 2 with nothing on
 *         stdout, which the sweep reads as unavailable too.
 *
 * The rules it keeps (spec, Bindings: probe, pairing datum; Invariant 3):
 *  - It pairs the intent with the store's rows on the pairing datum, by
 *    equality, and on nothing else -- never on a time window (Invariant 3.4).
 *    disclosed_at is in the store for people, not for this join.
 *  - committed only when exactly one row carries the datum (probe 2); two or
 *    more are undecidable with their ids as candidates (probe 3).
 *  - outcome_data is only what the row itself holds (probe 6), so a recovered
 *    outcome reads like the one ledger-disclose would have replied.
 *  - Every failure to read the store -- no such file, no permission, not a
 *    database, no table, a busy or failing query -- is unavailable (probe 4),
 *    never not-committed (probe 5): an empty answer from a store we could
 *    not read would let the sweep abandon an act that happened.
 *  - With no pairing datum it never answers committed (pairing datum 6a): it
 *    can only say which rows look like the intent (payload match) --
 *    undecidable with those -- or not-committed when none does.
 *
 * The store is opened read-only: a probe must not be able to change what it
 * is asked about.
 *
 * --batch is the batch probe of a kind with "probe_batch": true (ri-sweep(1)):
 * one request a line on stdin, one answer a line on stdout -- the same
 * answer, with the request's "act_key" beside it -- until end of input.
 * Each line is answered from its own read of the store, as it stands when
 * the line is read: nothing is kept from one line to the next.
 *
 * Test knobs, applied after stdin is read so each isolates one misbehaviour:
 * --hang never answers (the sweep's probe_round_trip timeout), --crash dies
 * by SIGSEGV, --junk prints text that is not JSON, --flood prints a
 * committed-shaped answer padded to 10 MB (over any outcome envelope).
 * With --batch: --wrong-key names another act key, --two-lines writes its
 * answer twice, --at N misbehaves at the Nth request only, and --pidlog
 * FILE appends the process id to FILE at start (the tests count processes). */
#include <err.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ledger.h"

#define EX_BADUSAGE 2
#define EX_NOREPLY 1
/* Far above any intent payload a sane payload_cap admits; a request larger
 * than this is not one the sweep sent. */
#define REQUEST_CAP (8u << 20)
/* Well inside a probe round trip of about a second: a reader held up longer
 * than this reports unavailable and lets the next sweep try again. */
#define BUSY_TIMEOUT_MS 500
#define FLOOD_BYTES (10u << 20)

enum knob { KNOB_NONE, KNOB_HANG, KNOB_CRASH, KNOB_JUNK, KNOB_FLOOD, KNOB_WRONG_KEY, KNOB_TWO_LINES };

struct probe {
	const char *store, *outcome, *pidlog;
	enum knob knob;
	int batch;
	long at;                        /* --at: the knob's request, 0: every one */
	/* from the request */
	const char *kind;
	const char *datum;              /* NULL: pairing datum none */
	const char *subject, *recipient, *scope;   /* NULL: not in intent */
};

static void usage(void)
{
	fprintf(stderr, "usage: ledger-probe --store FILE [--outcome NAME]"
		" [--batch [--pidlog FILE]]\n"
		"       [--hang | --crash | --junk | --flood | --wrong-key | --two-lines [--at N]]  < request.json\n");
	exit(EX_BADUSAGE);
}

static void parse_args(int argc, char **argv, struct probe *p)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "outcome", required_argument, NULL, 'o' },
		{ "hang", no_argument, NULL, 'H' },
		{ "crash", no_argument, NULL, 'C' },
		{ "junk", no_argument, NULL, 'J' },
		{ "flood", no_argument, NULL, 'F' },
		{ "batch", no_argument, NULL, 'B' },
		{ "pidlog", required_argument, NULL, 'P' },
		{ "wrong-key", no_argument, NULL, 'W' },
		{ "two-lines", no_argument, NULL, 'T' },
		{ "at", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*p = (struct probe){ .outcome = "disclosed" };
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': p->store = optarg; break;
		case 'o': p->outcome = optarg; break;
		case 'H': p->knob = KNOB_HANG; break;
		case 'C': p->knob = KNOB_CRASH; break;
		case 'J': p->knob = KNOB_JUNK; break;
		case 'F': p->knob = KNOB_FLOOD; break;
		case 'B': p->batch = 1; break;
		case 'P': p->pidlog = optarg; break;
		case 'W': p->knob = KNOB_WRONG_KEY; break;
		case 'T': p->knob = KNOB_TWO_LINES; break;
		case 'A': p->at = strtol(optarg, NULL, 10);
			if (p->at < 1)
				usage();
			break;
		default: usage();
		}
	}
	if (optind != argc || p->store == NULL || *p->outcome == '\0' ||
	    strchr(p->outcome, '.') != NULL ||
	    (!p->batch && (p->pidlog || p->at || p->knob == KNOB_WRONG_KEY || p->knob == KNOB_TWO_LINES)))
		usage();
}

/* A string member, or NULL when absent or JSON null; *bad is set when the
 * member is there with some other type. */
static const char *member_text(const json_t *obj, const char *key, int *bad)
{
	const json_t *v = json_object_get(obj, key);

	if (v == NULL || json_is_null(v))
		return NULL;
	if (!json_is_string(v)) {
		*bad = 1;
		return NULL;
	}
	return json_string_value(v);
}

/* All of stdin, NUL-terminated, refusing more than REQUEST_CAP bytes: a
 * request is small, and one larger than this is not one the sweep sent. */
static char *slurp_stdin(size_t *len)
{
	size_t cap = 4096, n = 0, got;
	char *buf = malloc(cap), *grown;

	while (buf != NULL && (got = fread(buf + n, 1, cap - n - 1, stdin)) > 0) {
		n += got;
		if (n + 1 < cap)
			continue;
		if (cap >= REQUEST_CAP)
			errx(EX_BADUSAGE, "request is over %u bytes", REQUEST_CAP);
		if ((grown = realloc(buf, cap * 2)) == NULL)
			free(buf);
		buf = grown;
		cap *= 2;
	}
	if (buf == NULL)
		errx(EX_BADUSAGE, "out of memory reading the request");
	if (ferror(stdin))
		err(EX_BADUSAGE, "cannot read the request");
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* Check the request; exits 2 on anything the sweep would not send.  The
 * strings point into req, which the caller keeps. */
static void parse_request(const json_t *req, const json_error_t *e,
			  struct probe *p)
{
	const json_t *intent, *data;
	const char *act_key, *ikind, *ikey;
	int bad = 0;

	if (req == NULL)
		errx(EX_BADUSAGE, "request is not one JSON object: %s (line %d)",
		     e->text, e->line);
	if (!json_is_object(req))
		errx(EX_BADUSAGE, "request is not a JSON object");

	p->kind = member_text(req, "kind", &bad);
	act_key = member_text(req, "act_key", &bad);
	intent = json_object_get(req, "intent");
	if (bad || p->kind == NULL || *p->kind == '\0' || act_key == NULL ||
	    !json_is_object(intent))
		errx(EX_BADUSAGE, "request wants string kind and act_key and an"
		     " object intent");

	/* The payload repeats kind and act_key; a disagreement means the
	 * caller paired the wrong intent, and no answer about it is safe. */
	ikind = member_text(intent, "kind", &bad);
	ikey = member_text(intent, "act_key", &bad);
	if (bad || (ikind && strcmp(ikind, p->kind) != 0) ||
	    (ikey && strcmp(ikey, act_key) != 0))
		errx(EX_BADUSAGE, "intent's kind/act_key disagree with the"
		     " request's");

	data = json_object_get(intent, "data");
	if (data != NULL && !json_is_object(data))
		errx(EX_BADUSAGE, "intent.data is not an object");
	p->datum = member_text(data, "pairing_datum", &bad);
	p->subject = member_text(data, "subject", &bad);
	p->recipient = member_text(data, "recipient", &bad);
	p->scope = member_text(data, "scope", &bad);
	if (bad)
		errx(EX_BADUSAGE, "intent.data's pairing_datum, subject,"
		     " recipient and scope must be strings");
	if (p->datum != NULL && *p->datum == '\0')
		p->datum = NULL;        /* an empty datum pairs nothing */
}

static void emit(json_t *answer)
{
	if (answer == NULL)
		errx(EX_NOREPLY, "out of memory");
	/* Sorted keys put "answer" first in every shape. */
	if (json_dumpf(answer, stdout, JSON_COMPACT | JSON_SORT_KEYS) != 0 ||
	    putchar('\n') == EOF || fflush(stdout) != 0)
		err(EX_NOREPLY, "cannot write the answer");
	json_decref(answer);
}

static json_t *unavailable(const char *why, sqlite3 *db)
{
	warnx("store unavailable: %s%s%s", why, db ? ": " : "",
	      db ? sqlite3_errmsg(db) : "");
	return json_pack("{ss}", "answer", "unavailable");
}

/* A column as JSON: NULL for a failure (invalid UTF-8 in the store). */
static json_t *column(sqlite3_stmt *st, int i)
{
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return json_null();
	return json_string((const char *)sqlite3_column_text(st, i));
}

/* Rows carrying the pairing datum: 0 → not-committed, 1 → committed with
 * what the row holds, more → undecidable naming them all. */
static json_t *by_datum(sqlite3 *db, const struct probe *p)
{
	sqlite3_stmt *st = NULL;
	json_t *ids = json_array(), *first = NULL, *answer = NULL;
	int rc;

	/* pairing datum 2: the act's rows are the ones carrying its datum,
	 * by equality */
	if (sqlite3_prepare_v2(db, "SELECT disclosure_id, recipient, subject"
			       " FROM disclosures WHERE pairing_datum = ?"
			       " ORDER BY disclosure_id", -1, &st,
			       NULL) != SQLITE_OK) {
		answer = unavailable("cannot query disclosures", db);
		goto out;
	}
	sqlite3_bind_text(st, 1, p->datum, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *id = column(st, 0);
		if (id == NULL || json_array_append_new(ids, id) != 0) {
			answer = unavailable("a disclosure id is not text", NULL);
			goto out;
		}
		if (first == NULL && (first = json_pack("{soso}",
				"recipient", column(st, 1),
				"subject", column(st, 2))) == NULL) {
			answer = unavailable("a row is not text", NULL);
			goto out;
		}
	}
	if (rc != SQLITE_DONE) {
		answer = unavailable("query failed", db);
		goto out;
	}

	if (json_array_size(ids) == 0) {
		answer = json_pack("{ss}", "answer", "not-committed");
	} else if (json_array_size(ids) > 1) {
		answer = json_pack("{sssO}", "answer", "undecidable",
				   "candidates", ids);
	} else {
		json_object_set(first, "disclosure_id",
				json_array_get(ids, 0));
		answer = json_pack("{sssoso}", "answer", "committed",
				   "outcome_action_ref",
				   json_sprintf("%s.%s", p->kind, p->outcome),
				   "outcome_data", json_incref(first));
	}
out:
	sqlite3_finalize(st);
	json_decref(first);
	json_decref(ids);
	return answer;
}

/* Pairing datum none: the rows that look like the intent -- equal on each
 * of subject, recipient, scope the intent data carries (on all rows when it
 * carries none: then the store can rule nothing out).  Never committed. */
static json_t *by_payload(sqlite3 *db, const struct probe *p)
{
	const char *keys[] = { "subject", "recipient", "scope" };
	const char *vals[] = { p->subject, p->recipient, p->scope };
	char sql[256] = "SELECT disclosure_id FROM disclosures WHERE 1";
	size_t len = strlen(sql);
	sqlite3_stmt *st = NULL;
	json_t *ids = json_array(), *answer = NULL;
	int rc, n = 0;

	/* three fixed clauses at most: 256 bytes hold them all */
	for (size_t i = 0; i < 3; i++)
		if (vals[i] != NULL)
			len += (size_t)snprintf(sql + len, sizeof sql - len, " AND %s = ?", keys[i]);
	snprintf(sql + len, sizeof sql - len, " ORDER BY disclosure_id");
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		answer = unavailable("cannot query disclosures", db);
		goto out;
	}
	for (size_t i = 0; i < 3; i++)
		if (vals[i] != NULL)
			sqlite3_bind_text(st, ++n, vals[i], -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *id = column(st, 0);
		if (id == NULL || json_array_append_new(ids, id) != 0) {
			answer = unavailable("a disclosure id is not text", NULL);
			goto out;
		}
	}
	if (rc != SQLITE_DONE)
		answer = unavailable("query failed", db);
	else if (json_array_size(ids) == 0)
		answer = json_pack("{ss}", "answer", "not-committed");
	else
		answer = json_pack("{sssO}", "answer", "undecidable",
				   "candidates", ids);
out:
	sqlite3_finalize(st);
	json_decref(ids);
	return answer;
}

static json_t *probe(const struct probe *p)
{
	sqlite3 *db = NULL;
	json_t *answer;

	/* READONLY without CREATE: a missing store is an outage, not an
	 * empty ledger. */
	if (sqlite3_open_v2(p->store, &db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK) {
		answer = unavailable("cannot open the store", db);
		sqlite3_close(db);
		return answer;
	}
	sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
	/* One read transaction, so the answer is one snapshot of the store. */
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		answer = unavailable("cannot begin a read", db);
	else
		answer = p->datum ? by_datum(db, p) : by_payload(db, p);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
	return answer;
}

/* --flood: a well-shaped committed answer, 10 MB long.  Streamed, so the
 * test measures the sweep's envelope and not our memory. */
static void flood(const char *kind, const char *outcome)
{
	static char pad[65536];
	size_t left = FLOOD_BYTES;

	memset(pad, 'x', sizeof pad);
	printf("{\"answer\":\"committed\",\"outcome_action_ref\":\"%s.%s\","
	       "\"outcome_data\":{\"pad\":\"", kind, outcome);
	while (left > 0) {
		size_t n = left < sizeof pad ? left : sizeof pad;
		if (fwrite(pad, 1, n, stdout) != n)
			exit(EX_NOREPLY);
		left -= n;
	}
	printf("\"}}\n");
	exit(fflush(stdout) == 0 ? 0 : EX_NOREPLY);
}

/* The knobs act after stdin is drained (so the writer never sees a broken
 * pipe) and before the request is checked (so a test can feed anything). */
static void misbehave(const struct probe *p, const json_t *req)
{
	const char *kind = json_string_value(json_object_get(req, "kind"));

	switch (p->knob) {
	case KNOB_HANG:
		for (;;)
			pause();
	case KNOB_CRASH:
		/* Under ASan the default SEGV handler is replaced; a crash is
		 * what is wanted either way, so put the kernel's back. */
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
		abort();
	case KNOB_JUNK:
		fputs("this is not an answer\n", stdout);
		exit(0);
	case KNOB_FLOOD:
		flood(kind ? kind : "ledger", p->outcome);
		break;
	case KNOB_WRONG_KEY:
	case KNOB_TWO_LINES:
	case KNOB_NONE:
		break;
	}
}

/* --batch: one answer a line, naming its act key, till end of input. */
static void batch(struct probe *p)
{
	/* a line is read into a buffer of the request cap: one over it is
	 * refused when the cap is reached, not after it is read whole */
	char *line = malloc(REQUEST_CAP + 2), *text;
	size_t n;
	long nth = 0;
	FILE *log;

	if (p->pidlog != NULL) {
		if ((log = fopen(p->pidlog, "a")) == NULL ||
		    fprintf(log, "%ld\n", (long)getpid()) < 0 || fclose(log) != 0)
			err(EX_BADUSAGE, "%s", p->pidlog);
	}
	if (line == NULL)
		errx(EX_NOREPLY, "out of memory");
	while (fgets(line, REQUEST_CAP + 2, stdin) != NULL) {
		struct probe q = *p;
		json_error_t e;
		json_t *req, *answer;
		const char *key;

		n = strlen(line);
		if (n > REQUEST_CAP)
			errx(EX_BADUSAGE, "request is over %u bytes", REQUEST_CAP);
		nth++;
		if (p->at != 0 && nth != p->at)
			q.knob = KNOB_NONE;
		req = json_loadb(line, n, JSON_REJECT_DUPLICATES, &e);
		if (q.knob == KNOB_JUNK) {
			/* the junk line, and on: the sweep reads no further */
			fputs("this is not an answer\n", stdout);
			fflush(stdout);
			json_decref(req);
			continue;
		}
		misbehave(&q, req);
		parse_request(req, &e, &q);
		key = json_string_value(json_object_get(req, "act_key"));
		answer = probe(&q);
		if (answer == NULL || json_object_set_new(answer, "act_key",
		    json_string(q.knob == KNOB_WRONG_KEY ? "not-this-act" : key)) != 0)
			errx(EX_NOREPLY, "out of memory");
		if (q.knob == KNOB_TWO_LINES) {
			/* both in one write: the reader sees them together */
			if ((text = json_dumps(answer, JSON_COMPACT | JSON_SORT_KEYS)) == NULL ||
			    printf("%s\n%s\n", text, text) < 0 || fflush(stdout) != 0)
				err(EX_NOREPLY, "cannot write the answer");
			free(text);
			json_decref(answer);
		} else {
			emit(answer);
		}
		json_decref(req);
	}
	free(line);
	if (ferror(stdin))
		err(EX_BADUSAGE, "cannot read a request");
}

int main(int argc, char **argv)
{
	struct probe p;
	json_error_t e;
	json_t *req;
	size_t len;
	char *text;

	parse_args(argc, argv, &p);
	if (p.batch) {
		batch(&p);
		return 0;
	}
	text = slurp_stdin(&len);
	req = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
	free(text);
	misbehave(&p, req);
	parse_request(req, &e, &p);
	emit(probe(&p));
	json_decref(req);
	return 0;
}
