/* ri-read -- Read Invocation: an act's invocations, newest first, each
 * with its records and state.  Takes no section, writes nothing
 * (ri-read(1)). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/util.h"

static const struct ri_shorthand shorthands[] = {
	{ "kind", "kind", false, false }, { "act-key", "act_key", false, false },
	{ "invocation-id", "invocation_id", false, false }, { "event-id", "event_id", false, false },
	{ NULL, NULL, false, false } };

static const char *
str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s != NULL ? s : "";
}

/* One record: seq, when, what, who -- and what a person asks of it: the
 * recovery, the resolver, the cause or reason, the data, cut to a line. */
static void
text_record(const json_t *rec, const char *indent)
{
	const json_t *p = json_object_get(rec, "payload");
	char *data = NULL, note[256] = "";

	if (json_is_true(json_object_get(rec, "purged"))) {
		snprintf(note, sizeof note, "  (payload purged by retention)");
	} else if (json_is_object(p)) {
		size_t o = 0;
		if (json_is_true(json_object_get(p, "recovery")))
			o += (size_t)snprintf(note + o, sizeof note - o, "  recovery by %s", str(p, "acting_actor_ref"));
		if (o < sizeof note && json_is_string(json_object_get(p, "resolved_by")))
			o += (size_t)snprintf(note + o, sizeof note - o, "  resolved by %s", str(p, "resolved_by"));
		if (o < sizeof note && json_is_string(json_object_get(p, "cause")))
			o += (size_t)snprintf(note + o, sizeof note - o, "  cause: %s", str(p, "cause"));
		if (o < sizeof note && json_is_string(json_object_get(p, "reason")))
			(void)snprintf(note + o, sizeof note - o, "  reason: %s", str(p, "reason"));
		if (json_object_size(json_object_get(p, "data")) > 0)
			data = ri_json_dumps(json_object_get(p, "data"), JSON_COMPACT | JSON_SORT_KEYS);
	}
	printf("%s%6lld  %s  %-22s %-20s %s%s", indent,
	    (long long)json_integer_value(json_object_get(rec, "seq")), str(rec, "recorded_at"),
	    str(rec, "action_ref"), str(rec, "actor_ref"), str(rec, "event_id"), note);
	if (data != NULL)
		printf("  data %.160s%s", data, strlen(data) > 160 ? "..." : "");
	putchar('\n');
	free(data);
}

/* --text: the act's invocations for people (ri-read(1)) */
static void
text(const json_t *ans)
{
	const json_t *invs = json_object_get(ans, "invocations"), *v, *rec = json_object_get(ans, "record");
	size_t i, j;

	if (json_is_object(rec)) {
		printf("record %s:\n", str(rec, "event_id"));
		text_record(rec, "  ");
	}
	if (json_array_size(invs) == 0)
		printf("no invocation\n");
	json_array_foreach(invs, i, v) {
		const json_t *r, *recs = json_object_get(v, "records");
		const json_t *first = json_array_get(recs, 0), *pl = json_object_get(first, "payload");
		printf("%s  %s %s  %s%s\n", str(v, "invocation_id"), json_is_object(pl) ? str(pl, "kind") : "",
		    json_is_object(pl) ? str(pl, "act_key") : "", str(v, "state"),
		    json_is_true(json_object_get(v, "binding_duplicate")) ? "  BINDING DUPLICATE" : "");
		json_array_foreach(recs, j, r)
			text_record(r, "  ");
		if (json_is_true(json_object_get(v, "more")))
			printf("  (more records: read_cap cut the list)\n");
	}
	if (json_is_true(json_object_get(ans, "binding_duplicate")))
		printf("the act is a binding duplicate: two intents stand open at once\n");
	if (json_is_true(json_object_get(ans, "more")))
		printf("(more invocations: read_cap cut the list)\n");
}

static const struct ri_cmd cmd = {
	"ri-read [-c config] [--kind K --act-key KEY] [--invocation-id ID | --event-id EV] [--text] [-]",
	shorthands, RI_READONLY, ri_read_invocation, NULL, 0, NULL, text };

int
main(int argc, char **argv)
{
	return ri_cmd_main(&cmd, argc, argv);
}
