/* ri-yield -- Yield: release the act's section without writing; the
 * intent stays open for the sweep (ri-yield(1)). */
#include "cli/cli.h"

static const struct ri_shorthand shorthands[] = {
	{ "kind", "kind", false, false }, { "act-key", "act_key", false, false },
	{ "invocation-id", "invocation_id", false, false }, { "actor", "actor_ref", false, false },
	{ NULL, NULL, false, false } };

static const struct ri_cmd cmd = {
	"ri-yield [-c config] [--kind K --act-key KEY --invocation-id ID --actor A] [-]",
	shorthands, RI_WRITER, ri_yield, NULL, 0, NULL, NULL };

int
main(int argc, char **argv)
{
	return ri_cmd_main(&cmd, argc, argv);
}
