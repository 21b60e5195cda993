/* ri-open -- Open: take the act's critical section, write the intent,
 * answer what Close, Refuse and Yield need (ri-open(1)). */
#include "cli/cli.h"

static const struct ri_shorthand shorthands[] = {
	{ "kind", "kind", false, false }, { "act-key", "act_key", false, false },
	{ "actor", "actor_ref", false, false }, { "intent-data", "intent_data", true, false },
	{ NULL, NULL, false, false } };

static const struct ri_cmd cmd = {
	"ri-open [-c config] [-n | --wait SECS] [--kind K] [--act-key KEY] [--actor A]\n"
	"               [--intent-data JSON] [-]     (no flags, or -: the request on stdin)",
	shorthands, RI_WRITER, ri_open, NULL, RI_CMD_WAIT, NULL, NULL };

int
main(int argc, char **argv)
{
	return ri_cmd_main(&cmd, argc, argv);
}
