/* ri-yield -- Yield: release the act's section without writing; the
 * intent stays open for the sweep (ri-yield(1)). */
#include "cli.h"

static const struct ri_shorthand shorthands[] = {
	{ "kind", "kind", false }, { "act-key", "act_key", false },
	{ "invocation-id", "invocation_id", false }, { "actor", "actor_ref", false },
	{ NULL, NULL, false } };

static const struct ri_cmd cmd = {
	"ri-yield [-c config] [--kind K --act-key KEY --invocation-id ID --actor A] < request.json",
	shorthands, RI_WRITER, ri_yield, NULL };

int
main(int argc, char **argv)
{
	return ri_cmd_main(&cmd, argc, argv);
}
