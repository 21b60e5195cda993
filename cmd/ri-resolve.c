/* ri-resolve -- Resolve: an operator closes an act the sweep could not,
 * under the operator's own credential (ri-resolve(1)).  With only the act
 * named, the invocation that needs an operator is found; with only the
 * invocation named, its act (operator.h).  --probe asks the kind's probe
 * what the store holds, and writes nothing. */
#include <string.h>

#include "cli/cli.h"
#include "protocol/operator.h"

static const struct ri_shorthand shorthands[] = {
	{ "kind", "kind", false, false }, { "act-key", "act_key", false, false },
	{ "invocation-id", "invocation_id", false, false },
	{ "intent-event-id", "intent_event_id", false, false },
	{ "actor", "actor_ref", false, false }, { "disposition", "disposition", true, false },
	{ "abandon", "_abandon", false, false }, { "outcome", "_outcome", false, false },
	{ "outcome-data", "_outcome_data", true, false }, { "escalate", "_escalate", false, true },
	{ NULL, NULL, false, false } };

#define USAGE \
	"ri-resolve [-c config] --invocation-id ID | --kind K --act-key KEY [--invocation-id ID]\n" \
	"                  --actor A  --abandon CAUSE | --outcome REF [--outcome-data JSON] |\n" \
	"                  --escalate CAND [CAND...] | --disposition JSON        [-]\n" \
	"       ri-resolve [-c config] --probe --invocation-id ID | --kind K --act-key KEY"

static const struct ri_cmd cmd = {
	USAGE, shorthands, RI_WRITER, ri_resolve, NULL, 0, ri_resolve_fill, NULL };

/* --probe: read-only, no section, nothing written (issue 44, point 8) */
static const struct ri_cmd probe_cmd = {
	USAGE, shorthands, RI_READONLY, ri_resolve_probe, NULL, 0, ri_resolve_fill, NULL };

int
main(int argc, char **argv)
{
	/* --probe chooses the command: taken out of the arguments (up to
	 * "--", past which everything is an operand) */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--probe") != 0)
			continue;
		memmove(argv + i, argv + i + 1, (size_t)(argc - i) * sizeof *argv);
		return ri_cmd_main(&probe_cmd, argc - 1, argv);
	}
	return ri_cmd_main(&cmd, argc, argv);
}
