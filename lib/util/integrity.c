/* integrity.c -- header encoding, chain hash, MAC, payload digest, key. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>
#include <sodium.h>

#include "util/integrity.h"
#include "util/sha256.h"

static void
put_u64(ri_sha256_state *st, uint64_t v)
{
	unsigned char b[8];

	for (int i = 7; i >= 0; i--) {
		b[i] = (unsigned char)(v & 0xff);
		v >>= 8;
	}
	ri_sha256_update(st, b, sizeof b);
}

/* Length-prefixed, with a presence byte, so "" and "absent" differ and no
 * field can bleed into the next. */
static void
put_str(ri_sha256_state *st, const char *s)
{
	unsigned char present = s != NULL;

	ri_sha256_update(st, &present, 1);
	if (s == NULL)
		return;
	put_u64(st, strlen(s));
	ri_sha256_update(st, (const unsigned char *)s, strlen(s));
}

void
ri_genesis(const unsigned char instance_id[RI_INSTANCE_LEN], unsigned char out[RI_HASH_LEN])
{
	ri_genesis_shard(instance_id, 0, out);
}

void
ri_genesis_v3(const unsigned char instance_id[RI_INSTANCE_LEN], unsigned char out[RI_HASH_LEN])
{
	ri_sha256_state st;
	static const char tag[] = "ri journal genesis";
	unsigned char fmt = 3;

	ri_sha256_init(&st);
	ri_sha256_update(&st, (const unsigned char *)tag, sizeof tag);
	ri_sha256_update(&st, &fmt, 1);
	ri_sha256_update(&st, instance_id, RI_INSTANCE_LEN);
	ri_sha256_final(&st, out);
}

void
ri_payload_digest(const unsigned char salt[RI_SALT_LEN], const char *payload, size_t n,
    unsigned char out[RI_HASH_LEN])
{
	ri_sha256_state st;

	ri_sha256_init(&st);
	ri_sha256_update(&st, salt, RI_SALT_LEN);
	ri_sha256_update(&st, (const unsigned char *)payload, n);
	ri_sha256_final(&st, out);
}

void
ri_genesis_shard(const unsigned char instance_id[RI_INSTANCE_LEN], int shard, unsigned char out[RI_HASH_LEN])
{
	ri_sha256_state st;
	static const char tag[] = "ri journal genesis";
	unsigned char fmt = 4;

	ri_sha256_init(&st);
	ri_sha256_update(&st, (const unsigned char *)tag, sizeof tag);
	ri_sha256_update(&st, &fmt, 1);
	ri_sha256_update(&st, instance_id, RI_INSTANCE_LEN);
	put_u64(&st, (uint64_t)shard);
	ri_sha256_final(&st, out);
}

void
ri_record_hash(const unsigned char prev[RI_HASH_LEN], const struct ri_header *h,
    unsigned char out[RI_HASH_LEN])
{
	ri_record_hash_fmt(RI_FORMAT, prev, h, out);
}

void
ri_record_hash_fmt(int fmt, const unsigned char prev[RI_HASH_LEN], const struct ri_header *h,
    unsigned char out[RI_HASH_LEN])
{
	ri_sha256_state st;
	unsigned char f = (unsigned char)fmt;

	ri_sha256_init(&st);
	ri_sha256_update(&st, prev, RI_HASH_LEN);
	ri_sha256_update(&st, &f, 1);
	ri_sha256_update(&st, h->instance_id, RI_INSTANCE_LEN);
	/* format 4: a record moved to another shard no longer hashes */
	if (fmt >= 4)
		put_u64(&st, (uint64_t)h->shard);
	put_u64(&st, (uint64_t)h->seq);
	put_str(&st, h->event_id);
	put_str(&st, h->action_ref);
	put_str(&st, h->kind);
	put_str(&st, h->act_key);
	put_str(&st, h->invocation_id);
	put_str(&st, h->actor_ref);
	put_str(&st, h->attestation_id);
	put_u64(&st, (uint64_t)h->recorded_at);
	put_u64(&st, (uint64_t)h->retention_until);
	put_u64(&st, (uint64_t)h->role);
	put_u64(&st, (uint64_t)h->act_prev);
	put_u64(&st, (uint64_t)h->inv_prev);
	ri_sha256_update(&st, h->payload_digest, RI_HASH_LEN);
	ri_sha256_final(&st, out);
}

/*
 * The instance's integrity key, its HMAC states computed once (issue 15):
 * every record, head, lease and tree check MACs under that one key, and a
 * MAC of a 32-byte hash is then two compressions instead of four.  The
 * key is named by its buffer, which the instance owns from its load to
 * its free (instance.c registers it after ri_key_load and forgets it
 * before sodium_free), so another key -- a test's, the findings key --
 * never matches it.
 */
static struct {
	const unsigned char *key;
	size_t keylen;
	ri_hmac_key st;
} instance_key;

void
ri_mac_key_use(const unsigned char *key, size_t keylen)
{
	ri_hmac_key_wipe(&instance_key.st);
	instance_key.key = key;
	instance_key.keylen = keylen;
	if (key != NULL)
		ri_hmac_key_init(&instance_key.st, key, keylen);
}

void
ri_mac_init(ri_hmac_state *st, const unsigned char *key, size_t keylen)
{
	if (key != NULL && key == instance_key.key && keylen == instance_key.keylen)
		ri_hmac_init(st, &instance_key.st);
	else
		ri_hmac_init_raw(st, key, keylen);
}

void
ri_mac(const unsigned char *key, size_t keylen, const void *msg, size_t n,
    unsigned char out[RI_HASH_LEN])
{
	ri_hmac_state st;

	ri_mac_init(&st, key, keylen);
	ri_hmac_update(&st, msg, n);
	ri_hmac_final(&st, out);
}

bool
ri_mac_ok(const unsigned char *key, size_t keylen, const void *msg, size_t n,
    const unsigned char *mac, size_t maclen)
{
	unsigned char want[RI_HASH_LEN];

	if (mac == NULL || maclen != RI_HASH_LEN)
		return false;
	ri_mac(key, keylen, msg, n, want);
	return ri_eq32(want, mac);
}

int
ri_key_load(const char *path, unsigned char **key, size_t *len, ri_err *err)
{
	char why[1024];
	int fd;
	ssize_t n;
	unsigned char *buf;

	/* the start gate (Instance start 3): a private regular file the
	 * caller owns, or one shared with a dedicated group (ri_key_open),
	 * opened so that a FIFO never blocks */
	if ((fd = ri_key_open(path, why, sizeof why)) < 0)
		return ri_fail(err, RI_CONFIG, "integrity key %s", why);
	buf = sodium_malloc(RI_KEY_MAX + 1);
	if (buf == NULL)
		abort();
	n = read(fd, buf, RI_KEY_MAX + 1);
	close(fd);
	if (n < RI_KEY_MIN || n > RI_KEY_MAX) {
		sodium_free(buf);
		return ri_fail(err, RI_CONFIG, "integrity key %s: must hold %d to %d bytes, holds %s%zd",
		    path, RI_KEY_MIN, RI_KEY_MAX, n > RI_KEY_MAX ? "more than " : "",
		    n > RI_KEY_MAX ? (ssize_t)RI_KEY_MAX : n);
	}
	*key = buf;
	*len = (size_t)n;
	return RI_OK;
}

void
ri_hex(const unsigned char *b, size_t n, char *out)
{
	sodium_bin2hex(out, 2 * n + 1, b, n);
}

void
ri_seal_message(const unsigned char instance_id[RI_INSTANCE_LEN], int64_t seq,
    const unsigned char head[RI_HASH_LEN], unsigned char out[RI_SEAL_MSG_LEN])
{
	uint64_t v = (uint64_t)seq;

	memcpy(out, "ri seal\0", 8);
	memcpy(out + 8, instance_id, RI_INSTANCE_LEN);
	for (int i = 7; i >= 0; i--, v >>= 8)
		out[8 + RI_INSTANCE_LEN + i] = (unsigned char)(v & 0xff);
	memcpy(out + 8 + RI_INSTANCE_LEN + 8, head, RI_HASH_LEN);
}

void
ri_seal4_message(const unsigned char instance_id[RI_INSTANCE_LEN], int shards,
    const unsigned char root[RI_HASH_LEN], unsigned char out[RI_SEAL4_MSG_LEN])
{
	memcpy(out, "ri seal4", 8);
	memcpy(out + 8, instance_id, RI_INSTANCE_LEN);
	for (int i = 0; i < 4; i++)
		out[8 + RI_INSTANCE_LEN + i] = (unsigned char)((uint32_t)shards >> (24 - 8 * i));
	memcpy(out + 8 + RI_INSTANCE_LEN + 4, root, RI_HASH_LEN);
}

int
ri_seal_key_load(const char *path, unsigned char *key, size_t len, ri_err *err)
{
	size_t n, got;
	char why[1024], *text;
	int rc = RI_OK;

	/* the secret key signs: the start gate's private file (Instance
	 * start 3); a public key is anyone's to read */
	if (len == 64)
		text = ri_key_read(path, 4096, &n, why, sizeof why);
	else
		text = ri_slurp_why(path, 4096, &n, why, sizeof why);
	if (text == NULL)
		return ri_fail(err, RI_CONFIG, "seal key %s", why);
	if (sodium_hex2bin(key, len, text, n, " \r\n", &got, NULL) != 0 || got != len)
		rc = ri_fail(err, RI_CONFIG, "seal key %s: expected %zu bytes in hex", path, len);
	sodium_memzero(text, n);
	free(text);
	return rc;
}

void
ri_seal_pub_text(const unsigned char pk[32], const unsigned char instance[RI_INSTANCE_LEN], char *out, size_t n)
{
	char ph[65], ih[2 * RI_INSTANCE_LEN + 1];

	ri_hex(pk, 32, ph);
	ri_hex(instance, RI_INSTANCE_LEN, ih);
	snprintf(out, n, "%s\ninstance_id %s\n", ph, ih);
}

int
ri_seal_pub_load(const char *path, unsigned char pk[32], unsigned char instance[RI_INSTANCE_LEN],
    bool *has_instance, ri_err *err)
{
	size_t n, got;
	char why[512], *text = ri_slurp_why(path, 4096, &n, why, sizeof why), *nl, *inst;
	int rc = RI_OK;

	*has_instance = false;
	if (text == NULL)
		return ri_fail(err, RI_CONFIG, "seal public key %s", why);
	nl = strchr(text, '\n');
	if (sodium_hex2bin(pk, 32, text, nl ? (size_t)(nl - text) : n, " \r", &got, NULL) != 0 || got != 32) {
		free(text);
		return ri_fail(err, RI_CONFIG, "seal public key %s: expected 32 bytes in hex on its first line", path);
	}
	if (nl != NULL && (inst = strstr(nl + 1, "instance_id ")) == nl + 1) {
		inst += strlen("instance_id ");
		char *end = strchr(inst, '\n');
		if (sodium_hex2bin(instance, RI_INSTANCE_LEN, inst, end ? (size_t)(end - inst) : strlen(inst), " \r",
		    &got, NULL) != 0 || got != RI_INSTANCE_LEN)
			rc = ri_fail(err, RI_CONFIG, "seal public key %s: a malformed instance_id line", path);
		else
			*has_instance = true;
	}
	free(text);
	return rc;
}
