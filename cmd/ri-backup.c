/* ri-backup -- a consistent online copy of the journal (SQLite's backup
 * API, its WAL included) into a new file, after a seal, so the copy ends
 * with a witnessed seal (ri-backup(1)).  Never `cp` a live journal. */
#include "audit/audit.h"
#include "protocol/seal.h"
#include "cli/cli.h"

int
main(int argc, char **argv)
{
	return ri_seal_main("ri-backup [-c config] DEST", 1, ri_backup, argc, argv);
}
