/*
 * test_sha256.c -- lib/util/sha256.c against the standards and against
 * libsodium, on each path it has: the SHA extensions one (when this CPU
 * has them), ri's own code, and the portable one, which forwards to
 * libsodium (issue 42).  On the second the comparisons with libsodium
 * check what ri still does around it: carrying the state to libsodium's
 * and back, the buffering of small pieces, the HMAC construction, the
 * wipes; the standards' vectors check it independently of libsodium.
 *
 *   FIPS 180-4's examples (the NIST vectors): "", "abc", the 448- and
 *   896-bit messages, a million 'a' fed in pieces
 *   RFC 4231 section 4: HMAC-SHA-256 test cases 1-7
 *   libsodium's crypto_hash_sha256 and crypto_auth_hmacsha256 for every
 *   length 0..1100 of random data, in one piece and in pieces (single
 *   bytes, splits around the padding's edges 55/56/63/64/65, random
 *   sizes, ri's 1-, 8- and 32-byte fields), HMAC keys of random length
 *   0..200 and every length 0..200; finals and the key wipe leave zeros
 *   with both paths: hashes and HMACs begun on one path and finished on
 *   the other, and HMAC keys made on one and used on the other (the
 *   paths share one state)
 *   RI_SHA256_PORTABLE=1: the test runs itself again with it set; the
 *   path chosen there is the portable one, and it passes the standards'
 *   vectors
 *
 * The journal format depends on the digests being libsodium's, so any
 * difference is a failure.  TEST_SHA256_SEED=n repeats another run's data.
 */
#include <sodium.h>

#include "util/sha256.h"
#include "testlib.h"

#define MAXLEN 1100

/* the seeded generator of testlib.h: reproducible data and piece sizes */
#define rnd tl_rnd

static void
rnd_fill(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(rnd() >> 56);
}

static void
unhex(const char *hex, unsigned char *out, size_t n)
{
	CHECK(strlen(hex) == 2 * n, "a vector's length: %s", hex);
	for (size_t i = 0; i < n; i++) {
		unsigned int b;
		CHECK(sscanf(hex + 2 * i, "%2x", &b) == 1, "a vector's hex: %s", hex);
		out[i] = (unsigned char)b;
	}
}

static const char *
tohex(const unsigned char *p, size_t n)
{
	static char s[2 * 64 + 1];

	for (size_t i = 0; i < n && i < 64; i++)
		snprintf(s + 2 * i, 3, "%02x", p[i]);
	return s;
}

static void
check_digest(const unsigned char *got, const char *want, const char *what)
{
	unsigned char w[32];

	unhex(want, w, sizeof w);
	CHECK(memcmp(got, w, 32) == 0, "\"%s\": got %s, want %s", what,
	    tohex(got, 32), want);
}

/* FIPS 180-4's examples (NIST CSRC "SHA256.pdf", "SHA256_2.pdf", and the
 * million-'a' message of the SHA test suite) */
static void
nist_vectors(const char *path)
{
	static const struct { const char *msg, *digest; } v[] = {
		{ "",
		  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc",
		  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
		  "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
	};
	static const char million_a[] =
	    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
	static const size_t pieces[] = { 1000, 997, 64, 4096 };
	unsigned char out[32], a[4096];
	ri_sha256_state st;

	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		ri_sha256(v[i].msg, strlen(v[i].msg), out);
		check_digest(out, v[i].digest, v[i].msg);
	}
	ri_sha256(NULL, 0, out);
	check_digest(out, v[0].digest, "(NULL, 0)");

	memset(a, 'a', sizeof a);
	for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
		size_t left = 1000000;
		ri_sha256_init(&st);
		while (left > 0) {
			size_t k = left < pieces[i] ? left : pieces[i];
			ri_sha256_update(&st, a, k);
			left -= k;
		}
		ri_sha256_final(&st, out);
		check_digest(out, million_a, "a million 'a'");
	}
	PASS("%s: FIPS 180-4 examples: \"\", \"abc\", 448 and 896 bits, "
	    "a million 'a' in pieces of 1000, 997, 64 and 4096", path);
}

/* RFC 4231 section 4.2-4.8 */
struct hmac_case {
	const unsigned char *key;
	size_t keylen;
	const void *data;
	size_t datalen;
	const char *mac;
	size_t cmp;             /* case 5 is truncated to 128 bits */
};

static void
rfc4231(const char *path)
{
	static const char tc7[] = "This is a test using a larger than block-size "
	    "key and a larger than block-size data. The key needs to be hashed "
	    "before being used by the HMAC algorithm.";
	unsigned char k20b[20], kaa20[20], k25[25], k0c[20], kaa131[131];
	unsigned char dd50[50], cd50[50], out[32], w[32];
	struct hmac_case v[7];
	ri_hmac_state st;
	ri_hmac_key k;

	memset(k20b, 0x0b, sizeof k20b);
	memset(kaa20, 0xaa, sizeof kaa20);
	for (size_t i = 0; i < sizeof k25; i++)
		k25[i] = (unsigned char)(i + 1);
	memset(k0c, 0x0c, sizeof k0c);
	memset(kaa131, 0xaa, sizeof kaa131);
	memset(dd50, 0xdd, sizeof dd50);
	memset(cd50, 0xcd, sizeof cd50);
	v[0] = (struct hmac_case){ k20b, 20, "Hi There", 8,
	    "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", 32 };
	v[1] = (struct hmac_case){ (const unsigned char *)"Jefe", 4,
	    "what do ya want for nothing?", 28,
	    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", 32 };
	v[2] = (struct hmac_case){ kaa20, 20, dd50, 50,
	    "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe", 32 };
	v[3] = (struct hmac_case){ k25, 25, cd50, 50,
	    "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b", 32 };
	v[4] = (struct hmac_case){ k0c, 20, "Test With Truncation", 20,
	    "a3b6167473100ee06e0c796c2955552b", 16 };
	v[5] = (struct hmac_case){ kaa131, 131,
	    "Test Using Larger Than Block-Size Key - Hash Key First", 54,
	    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", 32 };
	v[6] = (struct hmac_case){ kaa131, 131, tc7, sizeof tc7 - 1,
	    "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2", 32 };

	for (size_t i = 0; i < 7; i++) {
		unhex(v[i].mac, w, v[i].cmp);
		ri_hmac_key_init(&k, v[i].key, v[i].keylen);
		ri_hmac_init(&st, &k);
		ri_hmac_update(&st, v[i].data, v[i].datalen);
		ri_hmac_final(&st, out);
		CHECK(memcmp(out, w, v[i].cmp) == 0, "RFC 4231 case %zu: got %s",
		    i + 1, tohex(out, v[i].cmp));
		ri_hmac_key_wipe(&k);
		ri_hmac_init_raw(&st, v[i].key, v[i].keylen);
		ri_hmac_update(&st, v[i].data, v[i].datalen);
		ri_hmac_final(&st, out);
		CHECK(memcmp(out, w, v[i].cmp) == 0, "RFC 4231 case %zu (raw): got %s",
		    i + 1, tohex(out, v[i].cmp));
	}
	PASS("%s: RFC 4231 HMAC-SHA-256 cases 1-7 (case 5 on its 128-bit prefix)",
	    path);
}

/* p[0..n) into st in the pieces of one of the ways below */
static void
feed(ri_sha256_state *st, ri_hmac_state *hs, const unsigned char *p,
    size_t n, int way)
{
	static const size_t edges[] = { 55, 56, 63, 64, 65 };
	static const size_t fields[] = { 1, 8, 32 };
	size_t off = 0, k, pieces = 0;

	while (off < n) {
		switch (way) {
		case 0:                 /* one piece */
			k = n;
			break;
		case 1:                 /* single bytes */
			k = 1;
			break;
		case 2: case 3: case 4: case 5: case 6:
			/* first piece ends at an edge of the padding, the rest
			 * in one piece -- or a block past the edge, then the rest */
			k = off == 0 ? edges[way - 2] : off < 128 ? 64 : n - off;
			break;
		case 7:                 /* ri's header fields, in turn */
			k = fields[pieces % 3];
			break;
		default:                /* random sizes, empty pieces among them */
			k = (size_t)(rnd() % 150);
			break;
		}
		pieces++;
		if (k > n - off)
			k = n - off;
		if (st != NULL)
			ri_sha256_update(st, p + off, k);
		else
			ri_hmac_update(hs, p + off, k);
		off += k;
	}
}

#define NWAYS 9

static int
all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return 0;
	return 1;
}

static void
differential(const char *path)
{
	static unsigned char data[MAXLEN + 16];
	unsigned char key[200], want[32], got[32];
	crypto_auth_hmacsha256_state ss;
	ri_sha256_state st;
	ri_hmac_state hs;
	ri_hmac_key k;
	size_t n, keylen;
	int way;

	for (n = 0; n <= MAXLEN; n++) {
		/* misaligned by up to 15 bytes: the loads must not care */
		const unsigned char *p = data + n % 16;
		size_t len = n;

		rnd_fill(data, sizeof data);
		crypto_hash_sha256(want, p, len);
		ri_sha256(p, len, got);
		CHECK(memcmp(got, want, 32) == 0, "%s: length %zu in one call", path, len);
		for (way = 0; way < NWAYS; way++) {
			ri_sha256_init(&st);
			feed(&st, NULL, p, len, way);
			ri_sha256_final(&st, got);
			CHECK(memcmp(got, want, 32) == 0, "%s: length %zu fed way %d",
			    path, len, way);
			CHECK(all_zero(&st, sizeof st), "%s: final left the state", path);
		}

		keylen = (size_t)(rnd() % (sizeof key + 1));
		rnd_fill(key, keylen);
		crypto_auth_hmacsha256_init(&ss, key, keylen);
		crypto_auth_hmacsha256_update(&ss, p, len);
		crypto_auth_hmacsha256_final(&ss, want);
		ri_hmac_key_init(&k, key, keylen);
		for (way = 0; way < NWAYS; way++) {
			/* the same key for every way: init must only copy it */
			ri_hmac_init(&hs, &k);
			feed(NULL, &hs, p, len, way);
			ri_hmac_final(&hs, got);
			CHECK(memcmp(got, want, 32) == 0,
			    "%s: HMAC, key %zu bytes, length %zu fed way %d",
			    path, keylen, len, way);
			CHECK(all_zero(&hs, sizeof hs), "%s: HMAC final left the state",
			    path);
		}
		ri_hmac_key_wipe(&k);
		CHECK(all_zero(&k, sizeof k), "%s: the key wipe left the key", path);
		ri_hmac_init_raw(&hs, key, keylen);
		feed(NULL, &hs, p, len, NWAYS - 1);
		ri_hmac_final(&hs, got);
		CHECK(memcmp(got, want, 32) == 0, "%s: HMAC (raw), key %zu bytes, length %zu",
		    path, keylen, len);
	}

	/* every key length, the block's edges among them, and no key at all */
	for (keylen = 0; keylen <= sizeof key; keylen++) {
		n = (keylen * 7) % 300;
		rnd_fill(key, keylen);
		rnd_fill(data, n);
		crypto_auth_hmacsha256_init(&ss, key, keylen);
		crypto_auth_hmacsha256_update(&ss, data, n);
		crypto_auth_hmacsha256_final(&ss, want);
		ri_hmac_init_raw(&hs, keylen == 0 ? NULL : key, keylen);
		ri_hmac_update(&hs, data, n);
		ri_hmac_final(&hs, got);
		CHECK(memcmp(got, want, 32) == 0, "%s: HMAC, key %zu bytes", path, keylen);
	}
	/* libsodium's one-shot form, its 32-byte key */
	rnd_fill(key, crypto_auth_hmacsha256_KEYBYTES);
	crypto_auth_hmacsha256(want, data, 100, key);
	ri_hmac_init_raw(&hs, key, crypto_auth_hmacsha256_KEYBYTES);
	ri_hmac_update(&hs, data, 100);
	ri_hmac_final(&hs, got);
	CHECK(memcmp(got, want, 32) == 0, "%s: crypto_auth_hmacsha256", path);

	PASS("%s: libsodium's digest and HMAC for every length 0..%d, in one call "
	    "and fed %d ways; HMAC keys of every length 0..%zu; finals and the "
	    "key wipe leave zeros", path, MAXLEN, NWAYS, sizeof key);
}

static void
all(const char *path)
{
	nist_vectors(path);
	rfc4231(path);
	differential(path);
}

/*
 * The paths share one state: a hash or an HMAC begun on one path and
 * finished on the other gives libsodium's answer, whichever path began
 * it, wherever in a block the switch falls -- as the instance key's HMAC
 * states, made once (integrity.c), must whatever path a test forces later.
 * Each hash is fed on one path, then the other, then finished on the
 * first: the state is carried to libsodium's and back both ways.
 */
static void
crossing(void)
{
	static unsigned char data[400];
	unsigned char key[100], want[32], got[32];
	crypto_auth_hmacsha256_state ss;
	ri_sha256_state st;
	ri_hmac_state hs;
	ri_hmac_key k;

	for (int first = 0; first < 2; first++) {
		const int second = !first;      /* 1: libsodium's path */

		for (size_t cut = 0; cut <= 200; cut++) {
			size_t n = cut + (cut * 7) % 150;

			rnd_fill(data, n);
			crypto_hash_sha256(want, data, n);
			ri_sha256_force_portable(first);
			ri_sha256_init(&st);
			ri_sha256_update(&st, data, cut);
			ri_sha256_force_portable(second);
			ri_sha256_update(&st, data + cut, n - cut);
			ri_sha256_force_portable(first);
			ri_sha256_final(&st, got);
			CHECK(memcmp(got, want, 32) == 0, "begun on %s: length %zu, switched at %zu",
			    first ? "libsodium" : "sha-ni", n, cut);
			CHECK(all_zero(&st, sizeof st), "crossing: final left the state");
		}
		for (size_t keylen = 0; keylen <= sizeof key; keylen++) {
			size_t n = (keylen * 11) % 200;

			rnd_fill(key, keylen);
			rnd_fill(data, n);
			crypto_auth_hmacsha256_init(&ss, key, keylen);
			crypto_auth_hmacsha256_update(&ss, data, n);
			crypto_auth_hmacsha256_final(&ss, want);
			/* a key made on one path, its MACs on the other */
			ri_sha256_force_portable(first);
			ri_hmac_key_init(&k, key, keylen);
			ri_sha256_force_portable(second);
			ri_hmac_init(&hs, &k);
			ri_hmac_update(&hs, data, n);
			ri_hmac_final(&hs, got);
			CHECK(memcmp(got, want, 32) == 0, "HMAC key made on %s, key %zu bytes, length %zu",
			    first ? "libsodium" : "sha-ni", keylen, n);
			ri_hmac_key_wipe(&k);
			/* a raw key's MAC switching mid-message and at the final */
			ri_sha256_force_portable(first);
			ri_hmac_init_raw(&hs, key, keylen);
			ri_hmac_update(&hs, data, n / 2);
			ri_sha256_force_portable(second);
			ri_hmac_update(&hs, data + n / 2, n - n / 2);
			ri_sha256_force_portable(first);
			ri_hmac_final(&hs, got);
			CHECK(memcmp(got, want, 32) == 0, "HMAC begun on %s, key %zu bytes, length %zu",
			    first ? "libsodium" : "sha-ni", keylen, n);
			CHECK(all_zero(&hs, sizeof hs), "crossing: HMAC final left the state");
		}
	}
	PASS("sha-ni <-> libsodium: hashes switched at every point 0..200 and HMACs "
	    "(keys 0..%zu bytes) begun on one path and finished on the other", sizeof key);
}

/* the run inside the run: RI_SHA256_PORTABLE=1 chose the portable path,
 * libsodium's, from the first use on, and it gives the standards' answers */
static int
env_child(void)
{
	unsigned char out[32];

	tl_init();
	CHECK(sodium_init() >= 0, "sodium_init");
	ri_sha256("abc", 3, out);
	check_digest(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	    "abc under RI_SHA256_PORTABLE=1");
	CHECK(!ri_sha256_accelerated(), "RI_SHA256_PORTABLE=1: the accelerated path was chosen");
	nist_vectors("RI_SHA256_PORTABLE=1");
	rfc4231("RI_SHA256_PORTABLE=1");
	return 0;
}

static void
env_portable(const char *self)
{
	char *argv[] = { "test_sha256", "--env-portable", NULL };
	pid_t pid;

	/* argv[0], not /proc/self/exe: under valgrind that is valgrind */
	if (strchr(self, '/') == NULL)
		self = "/proc/self/exe";
	fflush(NULL);
	CHECK((pid = fork()) >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		setenv("RI_SHA256_PORTABLE", "1", 1);
		execv(self, argv);
		fprintf(stderr, "exec %s: %s\n", self, strerror(errno));
		_exit(127);
	}
	CHECK(tl_wait(pid) == 0, "the RI_SHA256_PORTABLE=1 run failed");
	PASS("RI_SHA256_PORTABLE=1 chooses the portable path, libsodium's (a run of its own)");
}

int
main(int argc, char **argv)
{
	const char *s = getenv("TEST_SHA256_SEED");
	int accel;

	if (argc > 1 && strcmp(argv[1], "--env-portable") == 0)
		return env_child();
	tl_init();
	CHECK(sodium_init() >= 0, "sodium_init");
	tl_seed(s != NULL && *s != '\0' ? strtoull(s, NULL, 0) : 0x5eed5a256ULL);
	printf("# seed %llu (TEST_SHA256_SEED)\n", (unsigned long long)*tl_rng());

	ri_sha256_force_portable(0);
	accel = ri_sha256_accelerated();
	if (accel) {
		all("sha-ni");
		crossing();
	} else {
		printf("# this CPU has no SHA extensions (or SSE4.1): "
		    "the portable path (libsodium) only\n");
	}
	ri_sha256_force_portable(1);
	CHECK(!ri_sha256_accelerated(), "force_portable(1) left the accelerated path on");
	all("portable (libsodium)");
	env_portable(argv[0]);
	printf("# paths covered: %s\n", accel ? "sha-ni, portable (libsodium), crossings" :
	    "portable (libsodium)");
	return 0;
}
