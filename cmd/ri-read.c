/* ri-read -- Read Invocation: an act's invocations, newest first, each
 * with its records and state.  Takes no section, writes nothing
 * (ri-read(1)). */
#include "cli.h"

static const struct ri_shorthand shorthands[] = {
	{ "kind", "kind", false, false }, { "act-key", "act_key", false, false },
	{ "invocation-id", "invocation_id", false, false }, { "event-id", "event_id", false, false },
	{ NULL, NULL, false, false } };

static const struct ri_cmd cmd = {
	"ri-read [-c config] [--kind K --act-key KEY] [--invocation-id ID | --event-id EV] [-]",
	shorthands, RI_READONLY, ri_read_invocation, NULL, 0, NULL };

int
main(int argc, char **argv)
{
	return ri_cmd_main(&cmd, argc, argv);
}
