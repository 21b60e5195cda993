/*
 * ri-fill -- TEST AND BENCHMARK ONLY: fill a journal with N closed
 * invocations (an intent and an outcome each, distinct act keys) and M
 * open intents, through the real substrate (chained, MACed, verified),
 * so the benchmarks can compare a journal of 10^3 records with one of
 * 10^6.  With RI_UNSAFE_NOSYNC=1 (and "fault_injection": true in the
 * config) the fill skips fsync; nothing else does.
 *
 *   ri-fill -c CONFIG --actor A --credential-file F --closed N [--open M]
 *           [--prefix P] [--act-key K] [--window W] [--mark]
 *
 * --act-key K puts every closed invocation on the one act key K (a hot
 * repeatable key used for years: bench/06-history.sh); the open intents
 * keep their own keys.
 *
 * --window W lands each closed invocation's outcome W intents after its
 * own, so W invocations are open at once (as under load; the audit's
 * waiting room for invocations it judges from the stream overflows past
 * 4,096: tests/audit.bats).
 *
 * --mark sets the sweep's duplicate-scan mark to the last closed record,
 * through the store (the mark is MACed), as earlier cron sweeps of a live
 * instance would have left it.
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "protocol/instance.h"

static int64_t last_closed;

static int
append(struct ri *r, const char *ref, const char *key, const char *inv, const char *actor,
    const char *cred, json_t *data, char ev[RI_ID_LEN + 1])
{
	struct ri_append a = { .action_ref = ref, .act_key = key, .invocation_id = inv,
		.actor_ref = actor, .credential = cred, .data = data };
	struct ri_appended ap;
	int st = r->st->ops->record_action(r->st, &a, &ap);

	json_decref(data);
	if (st != RI_ST_OK)
		ri_die(RI_INTERNAL, "append %s: %s", ref, r->st->ops->error(r->st)->msg);
	snprintf(ev, RI_ID_LEN + 1, "%s", ap.event_id);
	if (strcmp(ref, "ledger.disclosed") == 0)
		last_closed = ap.seq;
	return 0;
}

static void
disclose(struct ri *r, const char *actor, const char *cred, const char *key, const char *inv, const char *ev)
{
	char ev2[RI_ID_LEN + 1];

	append(r, "ledger.disclosed", key, inv, actor, cred, json_pack("{s:s, s:s, s:s, s:s, s:{s:s}}",
	    "invocation_id", inv, "intent_event_id", ev, "kind", "ledger", "act_key", key,
	    "data", "disclosure_id", key), ev2);
}

/* any file a test hands over, a pipe (<(...)) too: ri_slurp takes
 * regular files only */
static char *
read_credential(const char *file, size_t *len)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	char *s = NULL;
	bool big = false;

	if (fd >= 0) {
		s = ri_slurp_fd(fd, 4096, len, &big);
		close(fd);
	}
	if (s != NULL && big) {
		free(s);
		s = NULL;
	}
	return s;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = { RI_COMMON_LONGOPTS,
		{ "actor", required_argument, NULL, 'a' },
		{ "credential-file", required_argument, NULL, 'f' },
		{ "closed", required_argument, NULL, 'n' },
		{ "open", required_argument, NULL, 'o' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "mark", no_argument, NULL, 'm' },
		{ "act-key", required_argument, NULL, 'k' },
		{ "window", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 } };
	bool mark = false;
	const char *config = NULL, *actor = "alice", *file = NULL, *prefix = "fill", *hot = NULL;
	long closed = 0, open = 0, window = 0;
	struct waiting { char key[64], inv[RI_ID_LEN + 1], ev[RI_ID_LEN + 1]; } *w = NULL;
	char *cred, key[64], inv[RI_ID_LEN + 1], ev[RI_ID_LEN + 1];
	size_t len;
	ri_err err;
	struct ri *r;
	int ch, rc;

	ri_cli_init(argc, argv);
	while ((ch = getopt_long(argc, argv, RI_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		if (ri_cli_common(ch, optarg, &config, "ri-fill -c CONFIG --closed N [--open M]"))
			continue;
		switch (ch) {
		case 'a': actor = optarg; break;
		case 'f': file = optarg; break;
		case 'n': closed = atol(optarg); break;
		case 'o': open = atol(optarg); break;
		case 'p': prefix = optarg; break;
		case 'm': mark = true; break;
		case 'k': hot = optarg; break;
		case 'w': window = atol(optarg); break;
		}
	}
	if (file == NULL || (cred = read_credential(file, &len)) == NULL)
		ri_die(RI_USAGE, "--credential-file: cannot read");
	while (len > 0 && (cred[len - 1] == '\n'))
		cred[--len] = '\0';
	if (window < 0 || (window > 0 && (w = calloc((size_t)window, sizeof *w)) == NULL))
		ri_die(RI_USAGE, "--window: a count of intents");
	if ((rc = ri_instance_open(config, 0, &r, &err)) != RI_OK)
		ri_die(rc, "%s", err.msg);
	for (long i = 0; i < closed + open; i++) {
		if (hot != NULL && i < closed)
			snprintf(key, sizeof key, "%s", hot);
		else
			snprintf(key, sizeof key, "%s-%ld", prefix, i);
		ri_mint_id("inv_", inv);
		append(r, "ledger.intended", key, inv, actor, cred, json_pack("{s:s, s:s, s:s, s:{s:s}}",
		    "invocation_id", inv, "kind", "ledger", "act_key", key, "data", "pairing_datum", key), ev);
		if (i >= closed)
			continue;
		if (window > 0) {
			/* the one W intents back closes now; this one waits in its slot */
			struct waiting *slot = &w[i % window];
			if (i >= window)
				disclose(r, actor, cred, slot->key, slot->inv, slot->ev);
			snprintf(slot->key, sizeof slot->key, "%s", key);
			snprintf(slot->inv, sizeof slot->inv, "%s", inv);
			snprintf(slot->ev, sizeof slot->ev, "%s", ev);
		} else {
			disclose(r, actor, cred, key, inv, ev);
		}
	}
	for (long i = closed > window ? closed - window : 0; window > 0 && i < closed; i++)
		disclose(r, actor, cred, w[i % window].key, w[i % window].inv, w[i % window].ev);
	free(w);
	if (mark && last_closed > 0 && r->st->ops->mark_set(r->st, "sweep.duplicate_scan", last_closed) != RI_ST_OK)
		ri_die(RI_INTERNAL, "mark: %s", r->st->ops->error(r->st)->msg);
	ri_instance_close(r);
	free(cred);
	printf("{\"closed\":%ld,\"open\":%ld}\n", closed, open);
	return 0;
}
