/* fault.h -- named fault points (faults.def), armed only by config
 * ("fault_injection": true) and $RI_FAULT.  The binaries users run are the
 * binaries the tests run; an unarmed point costs one branch. */
#ifndef RI_FAULT_H
#define RI_FAULT_H

#include "util/config.h"

enum ri_fault_action {
	RI_FA_NONE = 0,
	RI_FA_FAIL,             /* the write fails: step-2 before, step-4 after */
	RI_FA_FAIL3,            /* the write fails at its commit: step-3 */
	RI_FA_LOSE,             /* the reply is lost */
	RI_FA_NORETENTION       /* appended, but no retention placement */
};

/* Arm from $RI_FAULT when the config allows it; RI_CONFIG on a bad spec. */
int ri_fault_arm(const struct ri_config *c, ri_err *err);
/* Pass the point "name" (e.g. "close.after_reread" or "open.intent.after").
 * Dies (SIGKILL) or pauses in place; otherwise answers the action to take. */
enum ri_fault_action ri_fault(const char *name);
/* Every point name, for `ri-startcheck --fault-points` and the matrix. */
void ri_fault_list(void (*each)(const char *name, const char *kind, const char *what, void *), void *);

#endif
