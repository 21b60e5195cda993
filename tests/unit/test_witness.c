/*
 * test_witness.c -- the witness (witness.h; issue 39), each rule at its
 * edge on a real file: every line verified where it is relied on (its MAC,
 * its offset, a seal's signature), the HIGHEST (epoch, seq) taken and never
 * merely the last line, a torn last line never read and cut by the next
 * append, a keyless reader's claims, and a head as an operator hands it
 * over (--expect-head).
 */
#include <fcntl.h>
#include <sodium.h>
#include <unistd.h>

#include "testlib.h"
#include "store/witness.h"

static unsigned char key[32], inst[RI_INSTANCE_LEN], pk[32], sk[64];
static char path[PATH_MAX];

static void
line(struct ri_witness *w, int64_t epoch, int64_t seq, bool sign)
{
	struct ri_witnessed what = { .epoch = epoch, .seq = seq };
	ri_err e;

	memset(what.hash, (int)(seq & 0xff), sizeof what.hash);
	snprintf(what.event_id, sizeof what.event_id, "evt_%032lld", (long long)seq);
	what.action_ref = ri_strdup(sign ? "audit.sealed" : "ledger.intended");
	what.kind = ri_strdup(sign ? "audit" : "ledger");
	what.act_key = ri_strdup(sign ? "" : "k");
	if (!sign) {
		what.invocation_id = ri_strdup("inv_1");
		what.pairing_datum = ri_strdup("pd-1");
	} else {
		ri_witness_sign(inst, &what, sk);
	}
	CHECK(ri_witness_add(w, &what, &e) == RI_OK, "add seq %lld: %s", (long long)seq, e.msg);
	ri_witnessed_clear(&what);
}

static int64_t
newest(struct ri_witness *w, int *rc)
{
	struct ri_witness_line l;
	ri_err e;
	int64_t s;

	*rc = ri_witness_newest(w, &l, &e);
	if (*rc != RI_OK)
		return -1;
	s = l.seq;
	ri_witness_line_clear(&l);
	return s;
}

static void
append_raw(const char *text)
{
	int fd = open(path, O_WRONLY | O_APPEND);

	CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text) && close(fd) == 0, "append raw");
}

/* the file's n-th line (1-based), into buf */
static void
nth_line(int n, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");

	CHECK(f != NULL, "open %s", path);
	for (int i = 0; i < n; i++)
		CHECK(fgets(buf, (int)cap, f) != NULL, "line %d", n);
	fclose(f);
}

static void
fresh(struct ri_witness **w, const char *tag)
{
	char dir[PATH_MAX];
	ri_err e;

	tl_tmpdir(dir, tag);
	tl_fmt(path, sizeof path, "%s/w", dir);
	CHECK(ri_witness_create(path, &e) == RI_OK, "create: %s", e.msg);
	CHECK(ri_witness_open(path, inst, key, sizeof key, pk, w, &e) == RI_OK, "open: %s", e.msg);
}

static void
highest_not_last(void)
{
	struct ri_witness *w;
	int rc;

	fresh(&w, "w-order");
	CHECK(newest(w, &rc) == -1 && rc == RI_NOT_KNOWN, "an empty witness holds no line (%d)", rc);
	line(w, 0, 1, true);
	line(w, 0, 2, false);
	CHECK(newest(w, &rc) == 2, "the newest of two in order");
	/* two writers committed 4 then 5 and wrote their lines 5 then 4 */
	line(w, 0, 5, false);
	line(w, 0, 4, false);
	CHECK(newest(w, &rc) == 5 && rc == RI_OK, "the highest seq, never merely the last line (%d)", rc);
	/* a restore's next epoch outranks every line of the last, whatever
	 * its seq */
	line(w, 1, 3, true);
	CHECK(newest(w, &rc) == 3, "epoch 1 seq 3 outranks epoch 0 seq 5");
	ri_witness_close(w);
	PASS("the witness: the highest (epoch, seq) is taken, never merely the last line");
}

static void
verified(void)
{
	struct ri_witness *w, *keyless;
	struct ri_witness_line l;
	char buf[4096], forged[4096];
	ri_err e;
	int rc;

	fresh(&w, "w-verify");
	line(w, 0, 1, true);
	line(w, 0, 2, false);
	line(w, 0, 3, false);
	/* a forged line (its MAC not under the key) claiming the highest seq */
	nth_line(3, buf, sizeof buf);
	snprintf(forged, sizeof forged, "%s", buf);
	char *m = strstr(forged, ",\"mac\":\"");
	CHECK(m != NULL, "a line carries its MAC: %s", buf);
	m[8] = m[8] == '0' ? '1' : '0';
	char *sq = strstr(forged, "\"seq\":3");
	CHECK(sq != NULL, "seq 3 in %s", forged);
	sq[6] = '9';
	append_raw(forged);
	rc = ri_witness_newest(w, &l, &e);
	CHECK(rc == RI_INTEGRITY && strstr(e.msg, "MAC") != NULL, "a forged highest line is tampering: %d %s", rc, e.msg);
	ri_witness_close(w);

	/* a genuine line replayed past the newest: its offset is not where it
	 * now stands */
	fresh(&w, "w-replay");
	line(w, 0, 1, true);
	line(w, 0, 2, false);
	line(w, 0, 7, false);
	nth_line(3, buf, sizeof buf);
	line(w, 0, 8, false);
	append_raw(buf);                        /* seq 7 again, after seq 8 */
	CHECK(newest(w, &rc) == 8 && rc == RI_OK, "an older genuine line replayed does not move the witness back");
	nth_line(4, buf, sizeof buf);
	append_raw(buf);                        /* seq 8 again: the highest, replayed */
	rc = ri_witness_newest(w, &l, &e);
	CHECK(rc == RI_INTEGRITY && strstr(e.msg, "not where it was written") != NULL,
	    "the highest line replayed elsewhere fails its offset: %d %s", rc, e.msg);

	/* a keyless reader: an append's line is a claim it cannot verify; a
	 * seal's line it verifies by its signature */
	CHECK(ri_witness_open(path, inst, NULL, 0, pk, &keyless, &e) == RI_OK, "keyless open: %s", e.msg);
	rc = ri_witness_newest(keyless, &l, &e);
	CHECK(rc == RI_OK && !l.verified && l.seq == 8, "keyless: the MACed highest line is an unverified claim");
	ri_witness_line_clear(&l);
	ri_witness_close(keyless);
	ri_witness_close(w);

	fresh(&w, "w-sig");
	line(w, 0, 1, true);
	CHECK(ri_witness_open(path, inst, NULL, 0, pk, &keyless, &e) == RI_OK, "keyless open: %s", e.msg);
	rc = ri_witness_newest(keyless, &l, &e);
	CHECK(rc == RI_OK && l.verified && l.has_sig, "keyless: a seal's line verifies by its signature");
	ri_witness_line_clear(&l);
	ri_witness_close(keyless);
	/* the signature under another key: not this instance's seal */
	unsigned char pk2[32], sk2[64];
	crypto_sign_keypair(pk2, sk2);
	CHECK(ri_witness_open(path, inst, key, sizeof key, pk2, &keyless, &e) == RI_OK, "open: %s", e.msg);
	rc = ri_witness_newest(keyless, &l, &e);
	CHECK(rc == RI_INTEGRITY && strstr(e.msg, "not signed by the seal key") != NULL,
	    "a seal's line under another seal key fails, MAC or no MAC: %d %s", rc, e.msg);
	ri_witness_close(keyless);
	/* another instance's witness */
	unsigned char other[RI_INSTANCE_LEN];
	randombytes_buf(other, sizeof other);
	CHECK(ri_witness_open(path, other, key, sizeof key, pk, &keyless, &e) == RI_OK, "open: %s", e.msg);
	rc = ri_witness_newest(keyless, &l, &e);
	CHECK(rc == RI_INTEGRITY && strstr(e.msg, "another instance") != NULL, "another instance's: %d %s", rc, e.msg);
	ri_witness_close(keyless);
	ri_witness_close(w);
	PASS("the witness: the line relied on verifies (its MAC, its offset, a seal's signature) or is tampering");
}

static void
torn(void)
{
	struct ri_witness *w;
	char buf[4096];
	int rc;

	fresh(&w, "w-torn");
	line(w, 0, 1, true);
	line(w, 0, 2, false);
	append_raw("{\"epoch\":0,\"seq\":99,\"at\":1");
	CHECK(newest(w, &rc) == 2 && rc == RI_OK, "a torn last line is never read");
	line(w, 0, 3, false);
	CHECK(newest(w, &rc) == 3 && rc == RI_OK, "the next append cut the torn line (%d)", rc);
	nth_line(3, buf, sizeof buf);
	CHECK(strncmp(buf, "{\"epoch\":0,\"seq\":3,", 19) == 0, "the third line is seq 3: %s", buf);
	/* garbage in the middle is a malformed line: tampering */
	append_raw("not a line\n");
	line(w, 0, 4, false);
	CHECK(newest(w, &rc) == -1 && rc == RI_INTEGRITY, "a malformed line among the last is tampering (%d)", rc);
	ri_witness_close(w);
	PASS("the witness: a torn last line is never read, and the next append cuts it");
}

static void
heads(void)
{
	int64_t seq = 0;
	unsigned char h[RI_HASH_LEN];
	char hex[65], text[512];

	memset(hex, 'a', 64);
	hex[64] = '\0';
	tl_fmt(text, sizeof text, "12:%s", hex);
	CHECK(ri_head_parse(text, &seq, h) && seq == 12 && h[0] == 0xaa, "SEQ:HASH");
	tl_fmt(text, sizeof text, "Dec 05 10:00:00 host ri-seal[7]: {\"epoch\":0,\"seq\":9,\"hash\":\"%s\",\"x\":1}", hex);
	CHECK(ri_head_parse(text, &seq, h) && seq == 9, "a published line after a logger's prefix");
	CHECK(!ri_head_parse("12", &seq, h), "no hash");
	CHECK(!ri_head_parse("0:aa", &seq, h), "seq 0, short hash");
	tl_fmt(text, sizeof text, "12:%s0", hex);
	CHECK(!ri_head_parse(text, &seq, h), "a hash too long");
	CHECK(!ri_head_parse("host: {\"seq\":3}", &seq, h), "a line without its hash");
	PASS("a head as an operator hands it over: SEQ:HASH, or a published seal line");
}

int
main(void)
{
	tl_owner = getpid();
	CHECK(sodium_init() >= 0, "sodium_init");
	randombytes_buf(key, sizeof key);
	randombytes_buf(inst, sizeof inst);
	crypto_sign_keypair(pk, sk);
	highest_not_last();
	verified();
	torn();
	heads();
	return 0;
}
