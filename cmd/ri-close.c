/* ri-close -- Close: write the act's outcome under the section Open took,
 * or adopt the one another writer landed (ri-close(1)). */
#include "cli/cli.h"

static const struct ri_shorthand shorthands[] = {
	{ "kind", "kind", false, false }, { "act-key", "act_key", false, false },
	{ "invocation-id", "invocation_id", false, false }, { "intent-event-id", "intent_event_id", false, false },
	{ "actor", "actor_ref", false, false }, { "outcome", "outcome_action_ref", false, false },
	{ "outcome-data", "outcome_data", true, false },
	{ NULL, NULL, false, false } };

static const struct ri_cmd cmd = {
	"ri-close [-c config] [--kind K --act-key KEY --invocation-id ID --intent-event-id EV"
	" --actor A --outcome REF --outcome-data JSON] [-]",
	shorthands, RI_WRITER, ri_close, ri_close_positioned, 0, NULL, NULL };

int
main(int argc, char **argv)
{
	return ri_cmd_main(&cmd, argc, argv);
}
