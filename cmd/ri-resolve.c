/* ri-resolve -- Resolve: an operator closes an act the sweep could not,
 * under the operator's own credential (ri-resolve(1)). */
#include "cli.h"

static const struct ri_shorthand shorthands[] = {
	{ "kind", "kind", false }, { "act-key", "act_key", false },
	{ "invocation-id", "invocation_id", false }, { "intent-event-id", "intent_event_id", false },
	{ "actor", "actor_ref", false }, { "disposition", "disposition", true },
	{ NULL, NULL, false } };

static const struct ri_cmd cmd = {
	"ri-resolve [-c config] [--kind K --act-key KEY --invocation-id ID --intent-event-id EV"
	" --actor A --disposition JSON] < request.json",
	shorthands, RI_WRITER, ri_resolve, NULL };

int
main(int argc, char **argv)
{
	return ri_cmd_main(&cmd, argc, argv);
}
