/* ri-open -- Open: take the act's critical section, write the intent,
 * answer what Close, Refuse and Yield need (ri-open(1)). */
#include "cli.h"

static const struct ri_shorthand shorthands[] = {
	{ "kind", "kind", false }, { "act-key", "act_key", false },
	{ "actor", "actor_ref", false }, { "intent-data", "intent_data", true },
	{ NULL, NULL, false } };

static const struct ri_cmd cmd = {
	"ri-open [-c config] [--kind K] [--act-key KEY] [--actor A] [--intent-data JSON] < request.json",
	shorthands, RI_WRITER, ri_open, NULL };

int
main(int argc, char **argv)
{
	return ri_cmd_main(&cmd, argc, argv);
}
