/* ri-refuse -- Refuse: record that the bound commit refused on a
 * pre-commit arm, closing the intent (ri-refuse(1)). */
#include "cli/cli.h"

static const struct ri_shorthand shorthands[] = {
	{ "kind", "kind", false, false }, { "act-key", "act_key", false, false },
	{ "invocation-id", "invocation_id", false, false }, { "intent-event-id", "intent_event_id", false, false },
	{ "actor", "actor_ref", false, false }, { "reason", "reason", false, false },
	{ "constituent-code", "constituent_code", false, false },
	{ NULL, NULL, false, false } };

static const struct ri_cmd cmd = {
	"ri-refuse [-c config] [--kind K --act-key KEY --invocation-id ID --intent-event-id EV"
	" --actor A --reason TEXT --constituent-code CODE] [-]",
	shorthands, RI_WRITER, ri_refuse, ri_refuse_positioned, 0, NULL, NULL };

int
main(int argc, char **argv)
{
	return ri_cmd_main(&cmd, argc, argv);
}
