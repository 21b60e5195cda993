/* ri-seal -- verify every record since the previous seal, sign the
 * journal's head with the seal key, append the seal and its witness line,
 * so an auditor holding only the public key can verify the chain up to it
 * (ri-seal(1)).  ri-sweep seals after every run. */
#include "audit/audit.h"
#include "protocol/seal.h"
#include "cli/cli.h"

static int
seal(ri *r, const char *operand, json_t **ans, ri_err *err)
{
	(void)operand;
	return ri_seal(r, ans, err);
}

int
main(int argc, char **argv)
{
	return ri_seal_main("ri-seal [-c config]", 0, seal, argc, argv);
}
