/* ri-resolve -- Resolve: an operator closes an act the sweep could not,
 * under the operator's own credential (ri-resolve(1)).  With only the act
 * named, the invocation that needs an operator is found (operator.h). */
#include "cli.h"
#include "operator.h"

static const struct ri_shorthand shorthands[] = {
	{ "kind", "kind", false, false }, { "act-key", "act_key", false, false },
	{ "invocation-id", "invocation_id", false, false },
	{ "intent-event-id", "intent_event_id", false, false },
	{ "actor", "actor_ref", false, false }, { "disposition", "disposition", true, false },
	{ "abandon", "_abandon", false, false }, { "outcome", "_outcome", false, false },
	{ "outcome-data", "_outcome_data", true, false }, { "escalate", "_escalate", false, true },
	{ NULL, NULL, false, false } };

static const struct ri_cmd cmd = {
	"ri-resolve [-c config] --kind K --act-key KEY [--invocation-id ID [--intent-event-id EV]]\n"
	"                  --actor A  --abandon CAUSE | --outcome REF [--outcome-data JSON] |\n"
	"                  --escalate CAND [CAND...] | --disposition JSON        [-]",
	shorthands, RI_WRITER, ri_resolve, NULL, 0, ri_resolve_fill, NULL };

int
main(int argc, char **argv)
{
	return ri_cmd_main(&cmd, argc, argv);
}
